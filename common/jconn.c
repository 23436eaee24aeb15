/*
 * jconn.c -- a client connection to tsstored: request lines out,
 * response lines in, each parsed with jansson.
 *
 * Lines are read whole into a buffer that grows as a line needs (a rows
 * line is at most about 256 KiB, the daemon's chunk), so a query of any
 * size streams one line at a time.  One connection serves one request at
 * a time: the SQLite module opens one per cursor (a join runs cursors
 * side by side) and one for inserts; the admin command one per run.  The
 * daemon's error lines carry the library's code name ("EDUPKEY"), mapped
 * back to its TS_E* code with ts_errname.
 *
 * No wait is unbounded unless the caller asks: the timeout given at
 * connect bounds the connect (a listener whose backlog is full), each
 * send's progress (a daemon that reads nothing) and the wait for each
 * next byte of a response (a daemon that accepts and never answers).  It
 * is the socket's SO_SNDTIMEO and SO_RCVTIMEO, which the kernel applies
 * to a blocking unix connect, send and read alike; as it bounds the gap
 * between bytes, not the whole response, a long stream of rows is never
 * cut.  A timed-out connection is left in no known state: the caller
 * closes it.
 *
 * An address is "unix:PATH", a bare PATH (a unix socket: the admin
 * command's -s SOCKET of old), or "tcp:HOST:PORT" (HOST a name, an IPv4
 * address or an IPv6 one in brackets), as in tsstored's --listen.  TCP
 * connects try each address the name resolves to, each connect bounded
 * by the timeout as a unix one is (Linux applies SO_SNDTIMEO to a
 * blocking TCP connect too).  Authentication (the token) is client.c's.
 */
#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include <tsstore.h>

#include "jconn.h"

#define READ_CHUNK (64 * 1024)
#define NS_PER_SEC INT64_C(1000000000)

struct jconn {
	int fd;
	char *buf;
	size_t at, len, cap;
	int64_t timeout;            /* ns; 0: none */
	int tcp;                    /* connected over TCP, not a unix socket */
	const char *auth_hint;      /* said after an EAUTH error, or NULL */
	char path[JCONN_ADDRESS_MAX + 1]; /* the address, for messages */
};

/* A wait that timed out: EAGAIN from a socket with a timeout set. */
static int timed_out(const struct jconn *c, int err)
{
	return c->timeout > 0 && (err == EAGAIN || err == EWOULDBLOCK);
}

/* "no answer from PATH within 30s" in why. */
static void no_answer(const struct jconn *c, char *why, size_t whysz)
{
	char dur[TS_DURATION_BUFSZ];
	if (ts_duration_format(c->timeout, dur, sizeof dur) < 0)
		snprintf(dur, sizeof dur, "%" PRId64 "ns", c->timeout);
	snprintf(why, whysz, "no answer from %s within %s", c->path, dur);
}

/* Bound every blocking connect, send and read of fd by timeout ns. */
static int set_timeout(int fd, int64_t timeout)
{
	struct timeval tv = {.tv_sec = (time_t)(timeout / NS_PER_SEC),
	                     .tv_usec = (suseconds_t)(timeout % NS_PER_SEC / 1000)};
	if (timeout <= 0)
		return 0;
	if (tv.tv_sec == 0 && tv.tv_usec == 0)
		tv.tv_usec = 1; /* {0, 0} would mean no limit at all */
	if (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv) < 0 ||
	    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv) < 0)
		return -1;
	return 0;
}

/* A new connection's state for the address addr; NULL without memory. */
static struct jconn *conn_new(const char *addr, int64_t timeout)
{
	struct jconn *c = calloc(1, sizeof *c);
	if (!c)
		return NULL;
	c->fd = -1;
	c->timeout = timeout;
	snprintf(c->path, sizeof c->path, "%s", addr);
	return c;
}

/* connect(2) that resumes after a signal; -1 with errno set. */
static int connect_fd(int fd, const struct sockaddr *sa, socklen_t len)
{
	int rc;
	while ((rc = connect(fd, sa, len)) < 0 && errno == EINTR)
		;
	return rc;
}

/* Connect c to the unix socket at path. */
static int connect_unix(struct jconn *c, const char *path, char *why, size_t whysz)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	if (strlen(path) >= sizeof sa.sun_path) {
		snprintf(why, whysz, "%s: socket path too long", path);
		return -1;
	}
	memcpy(sa.sun_path, path, strlen(path) + 1);
	c->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (c->fd < 0 || set_timeout(c->fd, c->timeout) < 0 ||
	    connect_fd(c->fd, (struct sockaddr *)&sa, sizeof sa) < 0) {
		if (timed_out(c, errno))
			no_answer(c, why, whysz);
		else
			snprintf(why, whysz, "%s: %s", path, strerror(errno));
		return -1;
	}
	return 0;
}

/* Split "HOST:PORT" (HOST maybe "[v6]") into host and port; -1 when it is
 * not of that form. */
static int split_host_port(const char *hp, char *host, size_t hostsz, const char **port)
{
	const char *colon = strrchr(hp, ':');
	size_t n;
	if (!colon || !colon[1])
		return -1;
	*port = colon + 1;
	n = (size_t)(colon - hp);
	if (n >= 2 && hp[0] == '[' && hp[n - 1] == ']') {
		hp++;
		n -= 2;
	}
	if (n == 0 || n >= hostsz)
		return -1;
	memcpy(host, hp, n);
	host[n] = '\0';
	return 0;
}

/* Connect c to "HOST:PORT" over TCP: each address HOST resolves to, in
 * turn, until one accepts. */
static int connect_tcp(struct jconn *c, const char *hp, char *why, size_t whysz)
{
	struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *ai = NULL;
	char host[JCONN_ADDRESS_MAX + 1];
	const char *port;
	int rc = -1, err, one = 1;
	if (split_host_port(hp, host, sizeof host, &port) < 0) {
		snprintf(why, whysz, "%s: want tcp:HOST:PORT", c->path);
		return -1;
	}
	if ((err = getaddrinfo(host, port, &hints, &ai)) != 0) {
		snprintf(why, whysz, "%s: %s", c->path, gai_strerror(err));
		return -1;
	}
	for (struct addrinfo *a = ai; a && rc < 0; a = a->ai_next) {
		if (c->fd >= 0)
			close(c->fd);
		c->fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
		rc = c->fd < 0 || set_timeout(c->fd, c->timeout) < 0
		     ? -1 : connect_fd(c->fd, a->ai_addr, a->ai_addrlen);
		err = errno;
	}
	freeaddrinfo(ai);
	if (rc < 0 && timed_out(c, err))
		no_answer(c, why, whysz);
	else if (rc < 0)
		snprintf(why, whysz, "%s: %s", c->path, strerror(err));
	else /* request lines are small and each waits for its answer */
		setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
	return rc;
}

int jconn_connect(const char *addr, int64_t timeout, struct jconn **out, char *why,
                  size_t whysz)
{
	struct jconn *c = NULL;
	int rc = -1;
	*out = NULL;
	assert(timeout >= 0);
	if (strlen(addr) > JCONN_ADDRESS_MAX) {
		snprintf(why, whysz, "%.64s...: address too long", addr);
		goto out;
	}
	if (!(c = conn_new(addr, timeout))) {
		snprintf(why, whysz, "out of memory");
		goto out;
	}
	if (strncmp(addr, "tcp:", 4) == 0) {
		c->tcp = 1;
		rc = connect_tcp(c, addr + 4, why, whysz);
	} else {
		if (strncmp(addr, "unix:", 5) == 0)
			addr += 5;
		snprintf(c->path, sizeof c->path, "%s", addr);
		rc = connect_unix(c, addr, why, whysz);
	}
out:
	if (rc < 0)
		jconn_close(c);
	else
		*out = c;
	return rc;
}

int jconn_is_tcp(const struct jconn *c)
{
	return c->tcp;
}

long jconn_peer_pid(const struct jconn *c)
{
	struct ucred cred;
	socklen_t len = sizeof cred;
	if (c->tcp || getsockopt(c->fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0 ||
	    len != sizeof cred || cred.pid <= 0)
		return -1;
	return (long)cred.pid;
}

void jconn_set_auth_hint(struct jconn *c, const char *hint)
{
	c->auth_hint = hint;
}

const char *jconn_address(const struct jconn *c)
{
	return c->path;
}

void jconn_close(struct jconn *c)
{
	if (!c)
		return;
	if (c->fd >= 0)
		close(c->fd);
	free(c->buf);
	free(c);
}

int jconn_closed(const struct jconn *c)
{
	struct pollfd p = {.fd = c->fd, .events = POLLIN};
	if (c->fd < 0)
		return 1;
	/* Readable: the end of the stream, or a line nobody asked for
	 * before it; either way no answer to a next request could be told
	 * from it. */
	return poll(&p, 1, 0) > 0;
}

/* Send n bytes.  Returns 0, or -1 with errno set (EAGAIN: timed out). */
static int send_all(int fd, const char *p, size_t n)
{
	while (n > 0) {
		ssize_t k = send(fd, p, n, MSG_NOSIGNAL);
		if (k < 0 && errno == EINTR)
			continue;
		if (k == 0)
			errno = EPIPE;
		if (k <= 0)
			return -1;
		p += k;
		n -= (size_t)k;
	}
	return 0;
}

int jconn_send(struct jconn *c, const struct jbuf *req, char *why, size_t whysz)
{
	if (req->failed) {
		snprintf(why, whysz, "out of memory");
		return -1;
	}
	if (send_all(c->fd, req->p, req->len) < 0 || send_all(c->fd, "\n", 1) < 0) {
		if (timed_out(c, errno))
			no_answer(c, why, whysz);
		else
			snprintf(why, whysz, "sending to tsstored: %s", strerror(errno));
		return -1;
	}
	return 0;
}

/* The next raw line, NUL-terminated in place.  Returns 0, or -1 with
 * errno set: 0 when the daemon closed the connection, EAGAIN when the
 * timeout passed with no byte from it. */
static int read_line(struct jconn *c, char **line, size_t *n)
{
	for (;;) {
		char *nl = c->len > c->at ? memchr(c->buf + c->at, '\n', c->len - c->at) : NULL;
		if (nl) {
			*line = c->buf + c->at;
			*n = (size_t)(nl - *line);
			*nl = '\0';
			c->at += *n + 1;
			return 0;
		}
		if (c->at > 0) {
			memmove(c->buf, c->buf + c->at, c->len - c->at);
			c->len -= c->at;
			c->at = 0;
		}
		if (c->cap - c->len < READ_CHUNK) {
			size_t cap = c->cap ? c->cap * 2 : 2 * READ_CHUNK;
			char *p = realloc(c->buf, cap);
			if (!p) {
				errno = ENOMEM;
				return -1;
			}
			c->buf = p;
			c->cap = cap;
		}
		ssize_t k = read(c->fd, c->buf + c->len, c->cap - c->len);
		if (k < 0 && errno == EINTR)
			continue;
		if (k == 0)
			errno = 0;
		if (k <= 0)
			return -1;
		c->len += (size_t)k;
	}
}

/* The TS_E* code named name ("EDUPKEY"), or TS_EIO. */
static int code_of(const char *name)
{
	for (int code = -1; name && code > -100; code--)
		if (strcmp(ts_errname(code), name) == 0)
			return code;
	return TS_EIO;
}

int jconn_next(struct jconn *c, json_t **line, char *why, size_t whysz)
{
	char *text;
	size_t n;
	json_error_t err;
	*line = NULL;
	if (read_line(c, &text, &n) < 0) {
		if (timed_out(c, errno))
			no_answer(c, why, whysz);
		else if (errno == 0)
			snprintf(why, whysz, "tsstored closed the connection");
		else
			snprintf(why, whysz, "reading from tsstored: %s", strerror(errno));
		return TS_EIO;
	}
	json_t *j = json_loadb(text, n, JSON_ALLOW_NUL, &err), *ok = json_object_get(j, "ok");
	if (!ok && json_is_array(json_object_get(j, "rows"))) {
		*line = j;
		return 1;
	}
	if (json_is_true(ok)) {
		*line = j;
		return 0;
	}
	json_t *e = json_object_get(j, "error");
	const char *msg = json_string_value(json_object_get(e, "message"));
	int code = json_is_false(ok) ? code_of(json_string_value(json_object_get(e, "code"))) : TS_EIO;
	const char *name = json_string_value(json_object_get(e, "code"));
	if (json_is_false(ok) && name && strcmp(name, "EAUTH") == 0)
		snprintf(why, whysz, "%s: %s%s%s%s", c->path, msg ? msg : "authentication refused",
		         c->auth_hint ? " (" : "", c->auth_hint ? c->auth_hint : "",
		         c->auth_hint ? ")" : "");
	else if (json_is_false(ok))
		snprintf(why, whysz, "%s", msg ? msg : "tsstored reported an error");
	else
		snprintf(why, whysz, "unexpected response from tsstored: %.80s", text);
	json_decref(j);
	return code;
}

int jconn_call(struct jconn *c, const struct jbuf *req, int (*on_rows)(void *arg, json_t *rows),
               void *arg, json_t **reply, char *why, size_t whysz)
{
	json_t *line;
	int rc;
	if (reply)
		*reply = NULL;
	if (jconn_send(c, req, why, whysz) < 0)
		return req->failed ? TS_ENOMEM : TS_EIO;
	while ((rc = jconn_next(c, &line, why, whysz)) == 1) {
		int stop = on_rows ? on_rows(arg, json_object_get(line, "rows")) : 0;
		json_decref(line);
		if (stop)
			return 1;
	}
	if (rc < 0)
		return rc;
	if (reply)
		*reply = line;
	else
		json_decref(line);
	return 0;
}
