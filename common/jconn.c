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
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <tsstore.h>

#include "jconn.h"

#define READ_CHUNK (64 * 1024)

struct jconn {
	int fd;
	char *buf;
	size_t at, len, cap;
};

int jconn_connect(const char *path, struct jconn **out, char *why, size_t whysz)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	struct jconn *c;
	*out = NULL;
	if (strncmp(path, "unix:", 5) == 0)
		path += 5;
	if (strlen(path) >= sizeof sa.sun_path) {
		snprintf(why, whysz, "%s: socket path too long", path);
		return -1;
	}
	memcpy(sa.sun_path, path, strlen(path) + 1);
	if (!(c = calloc(1, sizeof *c))) {
		snprintf(why, whysz, "out of memory");
		return -1;
	}
	c->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (c->fd < 0 || connect(c->fd, (struct sockaddr *)&sa, sizeof sa) < 0) {
		snprintf(why, whysz, "%s: %s", path, strerror(errno));
		jconn_close(c);
		return -1;
	}
	*out = c;
	return 0;
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

static int send_all(int fd, const char *p, size_t n)
{
	while (n > 0) {
		ssize_t k = send(fd, p, n, MSG_NOSIGNAL);
		if (k < 0 && errno == EINTR)
			continue;
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
		snprintf(why, whysz, "sending to tsstored: %s", strerror(errno));
		return -1;
	}
	return 0;
}

/* The next raw line, NUL-terminated in place.  Returns 0 or -1. */
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
			if (!p)
				return -1;
			c->buf = p;
			c->cap = cap;
		}
		ssize_t k = read(c->fd, c->buf + c->len, c->cap - c->len);
		if (k < 0 && errno == EINTR)
			continue;
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
		snprintf(why, whysz, "tsstored closed the connection");
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
	if (json_is_false(ok))
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
