/*
 * support_client.c -- a real tsstored for the daemon tests, and a small
 * client for its protocol (support_client.h).
 *
 * A daemon's life: tsd_test_daemon_new makes its directory (pid -1);
 * tsd_test_daemon_start forks and execs TSSTORED_PATH and waits until
 * both listeners accept (pid > 0); tsd_test_daemon_stop (SIGTERM) or
 * tsd_test_daemon_kill (SIGKILL) reaps it (pid -1 again), after which it
 * may be started again on the same database; tsd_test_daemon_free kills
 * whatever still runs and removes the directory.  The child asks for
 * SIGKILL when the test process dies (PR_SET_PDEATHSIG), so no daemon
 * outlives a test program that crashed or was killed.
 *
 * The TCP port is found by binding port 0 and closing the socket; another
 * process can take it before the daemon binds, so a daemon that exits at
 * once with the "address already in use" message is started again on a
 * new port.
 *
 * tsd_test_admin runs the admin command built beside the daemon (its path
 * is TSSTORED_PATH without the final 'd'), e.g. `tsstore -d DATA check`
 * on the files a killed daemon left.
 *
 * A connection is a blocking socket with SOCK_CLOEXEC (a daemon started
 * later must not inherit the test's connections, or closing them would
 * not be seen as EOF).  Reads wait in poll(2) with a timeout, so a daemon
 * that stops answering fails a test instead of hanging it; connects and
 * sends, which a daemon that stops accepting or reading would block, are
 * bounded by TSD_TEST_STALL_MS (SO_SNDTIMEO), a backstop far beyond any
 * wait a passing test makes.
 */
#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <ftw.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>

#include "support_client.h"

#ifndef TSSTORED_PATH
#error "TSSTORED_PATH must name the daemon to test"
#endif

/* Times a start is retried when the chosen port was taken meanwhile. */
#define START_ATTEMPTS 5

static int64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

char *tsd_test_fmt(const char *f, ...)
{
	va_list ap;
	char *s = NULL;
	va_start(ap, f);
	if (vasprintf(&s, f, ap) < 0)
		s = NULL;
	va_end(ap);
	if (!s) {
		fprintf(stderr, "tsd_test_fmt: out of memory\n");
		abort();
	}
	return s;
}

void tsd_test_sleep_ms(int ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000};
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/* ---- The daemon ---- */

struct tsd_test_daemon *tsd_test_daemon_new(void)
{
	struct tsd_test_daemon *d = calloc(1, sizeof *d);
	if (!d)
		return NULL;
	d->pid = -1;
	snprintf(d->dir, sizeof d->dir, "/tmp/tsd-test-XXXXXX");
	if (!mkdtemp(d->dir)) {
		free(d);
		return NULL;
	}
	snprintf(d->data, sizeof d->data, "%s/data", d->dir);
	snprintf(d->sock, sizeof d->sock, "%s/sock", d->dir);
	snprintf(d->log, sizeof d->log, "%s/log", d->dir);
	return d;
}

/* A TCP port on 127.0.0.1 that was free a moment ago, or -1. */
static int free_port(void)
{
	struct sockaddr_in sa = {.sin_family = AF_INET};
	socklen_t len = sizeof sa;
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), port = -1;
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd >= 0 && bind(fd, (struct sockaddr *)&sa, sizeof sa) == 0 &&
	    getsockname(fd, (struct sockaddr *)&sa, &len) == 0)
		port = ntohs(sa.sin_port);
	if (fd >= 0)
		close(fd);
	return port;
}

/* In the child: stderr to the log, die with the parent, exec. */
static void exec_daemon(const struct tsd_test_daemon *d, char **argv, pid_t parent)
{
	int fd = open(d->log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	if (fd >= 0 && !getenv("TSD_TEST_VERBOSE")) {
		dup2(fd, STDOUT_FILENO);
		dup2(fd, STDERR_FILENO);
	}
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != parent) /* the test died before prctl */
		_exit(127);
	signal(SIGPIPE, SIG_DFL);
	execv(argv[0], argv);
	_exit(127);
}

/* Fork and exec the daemon with its listeners and args. */
static int spawn(struct tsd_test_daemon *d, const char *const *args)
{
	char unix_addr[TSD_TEST_PATH_MAX + 8], tcp_addr[64], http_addr[64];
	char *argv[10 + TSD_TEST_ARGS_MAX] = {TSSTORED_PATH, "-d", d->data, "--listen", unix_addr,
	                                     "--listen", tcp_addr};
	int argc = 7;
	pid_t parent = getpid();
	snprintf(unix_addr, sizeof unix_addr, "unix:%s", d->sock);
	snprintf(tcp_addr, sizeof tcp_addr, "tcp:127.0.0.1:%d", d->port);
	snprintf(http_addr, sizeof http_addr, "http:127.0.0.1:%d", d->http_port);
	if (d->http) {
		argv[argc++] = "--listen";
		argv[argc++] = http_addr;
	}
	for (int i = 0; args && args[i]; i++) {
		if (i == TSD_TEST_ARGS_MAX)
			return -1;
		argv[argc++] = (char *)args[i];
	}
	argv[argc] = NULL;
	if ((d->pid = fork()) < 0)
		return -1;
	if (d->pid == 0)
		exec_daemon(d, argv, parent);
	return 0;
}

/* Whether a connection over transport is accepted right now. */
static int accepts(const struct tsd_test_daemon *d, enum tsd_test_transport transport)
{
	struct tsd_test_conn *c = tsd_test_connect(d, transport);
	int ok = c != NULL;
	tsd_test_close(c);
	return ok;
}

/* Whether the log's last lines say the TCP port was taken. */
static int lost_port_race(const struct tsd_test_daemon *d)
{
	char line[512];
	int taken = 0;
	FILE *f = fopen(d->log, "r");
	if (!f)
		return 0;
	while (fgets(line, sizeof line, f))
		taken = strstr(line, "address already in use") != NULL;
	fclose(f);
	return taken;
}

/* Wait until every listener accepts.  Each is probed until it accepts
 * once and not again, so the daemon counts exactly one accepted
 * connection a listener (tests compare that counter).  Returns 0; 1 when
 * the daemon exited having lost the port; -1 for any other failure. */
static int wait_ready(struct tsd_test_daemon *d)
{
	int64_t deadline = now_ms() + TSD_TEST_TIMEOUT_MS;
	int status, unix_ok = 0, tcp_ok = 0, http_ok = !d->http;
	while (now_ms() < deadline) {
		if (waitpid(d->pid, &status, WNOHANG) == d->pid) {
			d->pid = -1;
			return lost_port_race(d) ? 1 : -1;
		}
		unix_ok = unix_ok || accepts(d, TSD_TEST_UNIX);
		tcp_ok = tcp_ok || accepts(d, TSD_TEST_TCP);
		http_ok = http_ok || accepts(d, TSD_TEST_HTTP);
		if (unix_ok && tcp_ok && http_ok)
			return 0;
		tsd_test_sleep_ms(5);
	}
	tsd_test_daemon_kill(d);
	return -1;
}

int tsd_test_daemon_start(struct tsd_test_daemon *d, const char *const *args)
{
	int rc = -1;
	if (d->pid > 0)
		return -1;
	for (int attempt = 0; attempt < START_ATTEMPTS; attempt++) {
		if ((d->port = free_port()) < 0 || (d->http && (d->http_port = free_port()) < 0) ||
		    spawn(d, args) < 0)
			return -1;
		if ((rc = wait_ready(d)) <= 0)
			break;
	}
	return rc == 0 ? 0 : -1;
}

/* Reap the daemon within timeout_ms.  Returns the wait status, or -1. */
static int reap(struct tsd_test_daemon *d, int timeout_ms)
{
	int64_t deadline = now_ms() + timeout_ms;
	int status;
	do {
		pid_t p = waitpid(d->pid, &status, WNOHANG);
		if (p == d->pid) {
			d->pid = -1;
			return status;
		}
		if (p < 0 && errno != EINTR) {
			d->pid = -1; /* not our child any more */
			return -1;
		}
		tsd_test_sleep_ms(5);
	} while (now_ms() < deadline);
	return -1;
}

int tsd_test_daemon_stop(struct tsd_test_daemon *d, int timeout_ms)
{
	int status;
	if (d->pid <= 0)
		return -1;
	kill(d->pid, SIGTERM);
	if ((status = reap(d, timeout_ms)) == -1) {
		tsd_test_daemon_kill(d);
		return -1;
	}
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

void tsd_test_daemon_kill(struct tsd_test_daemon *d)
{
	if (!d || d->pid <= 0)
		return;
	kill(d->pid, SIGKILL);
	while (waitpid(d->pid, NULL, 0) < 0 && errno == EINTR)
		;
	d->pid = -1;
}

int tsd_test_daemon_alive(struct tsd_test_daemon *d)
{
	int status;
	if (d->pid <= 0)
		return 0;
	if (waitpid(d->pid, &status, WNOHANG) == d->pid) {
		d->pid = -1;
		return 0;
	}
	return 1;
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	return flag == FTW_DP ? rmdir(path) : unlink(path);
}

void tsd_test_daemon_free(struct tsd_test_daemon *d)
{
	if (!d)
		return;
	tsd_test_daemon_kill(d);
	nftw(d->dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
	free(d);
}

long tsd_test_daemon_status_kb(const struct tsd_test_daemon *d, const char *name)
{
	char path[64], line[256];
	size_t n = strlen(name);
	long kb = -1;
	FILE *f;
	snprintf(path, sizeof path, "/proc/%d/status", (int)d->pid);
	if (!(f = fopen(path, "r")))
		return -1;
	while (kb < 0 && fgets(line, sizeof line, f))
		if (strncmp(line, name, n) == 0 && line[n] == ':')
			kb = strtol(line + n + 1, NULL, 10);
	fclose(f);
	return kb;
}

void tsd_test_daemon_dump_log(const struct tsd_test_daemon *d)
{
	char line[1024];
	FILE *f = fopen(d->log, "r");
	if (!f)
		return;
	fprintf(stderr, "---- %s\n", d->log);
	while (fgets(line, sizeof line, f))
		fputs(line, stderr);
	fclose(f);
}

struct tsd_test_daemon *tsd_test_daemon_up(int http, const char *const *args)
{
	struct tsd_test_daemon *d = tsd_test_daemon_new();
	if (!d)
		return NULL;
	d->http = http;
	if (tsd_test_daemon_start(d, args) < 0) {
		tsd_test_daemon_dump_log(d);
		tsd_test_daemon_free(d);
		return NULL;
	}
	return d;
}

/* The admin command's path: TSSTORED_PATH without its final 'd'. */
static void admin_path(char *out, size_t size)
{
	snprintf(out, size, "%.*s", (int)strlen(TSSTORED_PATH) - 1, TSSTORED_PATH);
}

int tsd_test_admin(const char *const *args, const char *out)
{
	char path[TSD_TEST_PATH_MAX];
	char *argv[2 + TSD_TEST_ARGS_MAX] = {path};
	int argc = 1, status, fd;
	pid_t pid;
	admin_path(path, sizeof path);
	for (int i = 0; args && args[i]; i++) {
		if (i == TSD_TEST_ARGS_MAX)
			return -1;
		argv[argc++] = (char *)args[i];
	}
	argv[argc] = NULL;
	if ((pid = fork()) < 0)
		return -1;
	if (pid == 0) {
		if ((fd = open(out, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644)) >= 0) {
			dup2(fd, STDOUT_FILENO);
			dup2(fd, STDERR_FILENO);
		}
		signal(SIGPIPE, SIG_DFL);
		execv(argv[0], argv);
		_exit(127);
	}
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* ---- Connections ---- */

/* A new socket whose connect and sends give up after TSD_TEST_STALL_MS. */
static int bounded_socket(int domain)
{
	struct timeval tv = {.tv_sec = TSD_TEST_STALL_MS / 1000};
	int fd = socket(domain, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd >= 0 && setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv) < 0) {
		close(fd);
		fd = -1;
	}
	return fd;
}

static int connect_unix(const struct tsd_test_daemon *d)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int fd = bounded_socket(AF_UNIX);
	snprintf(sa.sun_path, sizeof sa.sun_path, "%s", d->sock);
	if (fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0) {
		close(fd);
		fd = -1;
	}
	return fd;
}

static int connect_tcp(const struct tsd_test_daemon *d, int port)
{
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
	int fd = bounded_socket(AF_INET), one = 1;
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0) {
		close(fd);
		return -1;
	}
	if (fd >= 0)
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
	return fd;
}

struct tsd_test_conn *tsd_test_connect(const struct tsd_test_daemon *d,
                                       enum tsd_test_transport transport)
{
	struct tsd_test_conn *c = calloc(1, sizeof *c);
	if (!c)
		return NULL;
	c->fd = transport == TSD_TEST_TCP ? connect_tcp(d, d->port)
	        : transport == TSD_TEST_HTTP ? connect_tcp(d, d->http_port) : connect_unix(d);
	if (c->fd < 0) {
		free(c);
		return NULL;
	}
	return c;
}

void tsd_test_close(struct tsd_test_conn *c)
{
	if (!c)
		return;
	close(c->fd);
	free(c->buf);
	free(c);
}

int tsd_test_send(struct tsd_test_conn *c, const void *p, size_t n)
{
	const char *s = p;
	while (n) {
		ssize_t k = send(c->fd, s, n, MSG_NOSIGNAL);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return -1;
		s += k;
		n -= (size_t)k;
	}
	return 0;
}

int tsd_test_send_line(struct tsd_test_conn *c, const char *line)
{
	size_t n = strlen(line);
	char *p = malloc(n + 1);
	int rc;
	if (!p)
		return -1;
	memcpy(p, line, n);
	p[n] = '\n';
	rc = tsd_test_send(c, p, n + 1);
	free(p);
	return rc;
}

/* Make room to read at least 64 KiB more.  Returns 0 or -1. */
static int make_room(struct tsd_test_conn *c)
{
	size_t want = 64 << 10;
	if (c->start) {
		memmove(c->buf, c->buf + c->start, c->len - c->start);
		c->len -= c->start;
		c->start = 0;
	}
	if (c->cap - c->len < want) {
		size_t cap = c->cap ? c->cap * 2 : 2 * want;
		char *p = realloc(c->buf, cap);
		if (!p)
			return -1;
		c->buf = p;
		c->cap = cap;
	}
	return 0;
}

/* Wait up to timeout_ms for bytes and append them.  Returns
 * TSD_TEST_LINE when some arrived, or EOF / TIMEOUT / ERROR. */
static int fill(struct tsd_test_conn *c, int timeout_ms)
{
	struct pollfd pfd = {.fd = c->fd, .events = POLLIN};
	ssize_t k;
	int rc;
	if (make_room(c) < 0)
		return TSD_TEST_ERROR;
	while ((rc = poll(&pfd, 1, timeout_ms)) < 0 && errno == EINTR)
		;
	if (rc == 0)
		return TSD_TEST_TIMEOUT;
	while ((k = read(c->fd, c->buf + c->len, c->cap - c->len)) < 0 && errno == EINTR)
		;
	if (k < 0)
		return errno == ECONNRESET ? TSD_TEST_EOF : TSD_TEST_ERROR;
	if (k == 0)
		return TSD_TEST_EOF;
	c->len += (size_t)k;
	return TSD_TEST_LINE;
}

int tsd_test_read_line(struct tsd_test_conn *c, int timeout_ms, char **line, size_t *len)
{
	int64_t deadline = now_ms() + timeout_ms;
	size_t scanned = 0;
	char *nl;
	*line = NULL;
	while (!(nl = c->len > c->start + scanned /* buf may still be NULL */
	                  ? memchr(c->buf + c->start + scanned, '\n', c->len - c->start - scanned)
	                  : NULL)) {
		int left = (int)(deadline - now_ms()), rc;
		scanned = c->len - c->start;
		if ((rc = fill(c, left > 0 ? left : 0)) != TSD_TEST_LINE)
			return rc;
	}
	size_t n = (size_t)(nl - (c->buf + c->start));
	if (!(*line = malloc(n + 1)))
		return TSD_TEST_ERROR;
	memcpy(*line, c->buf + c->start, n);
	(*line)[n] = '\0';
	if (len)
		*len = n;
	c->start += n + 1;
	return TSD_TEST_LINE;
}

int tsd_test_read_bytes(struct tsd_test_conn *c, size_t n, int timeout_ms, char **out)
{
	int64_t deadline = now_ms() + timeout_ms;
	*out = NULL;
	while (c->len - c->start < n) {
		int left = (int)(deadline - now_ms()), rc;
		if ((rc = fill(c, left > 0 ? left : 0)) != TSD_TEST_LINE)
			return rc;
	}
	if (!(*out = malloc(n + 1)))
		return TSD_TEST_ERROR;
	if (n)
		memcpy(*out, c->buf + c->start, n);
	(*out)[n] = '\0';
	c->start += n;
	return TSD_TEST_LINE;
}

/* Append line and '\n' to the growing text *p of *n bytes. */
static int append_text(char **p, size_t *n, const char *line, size_t len)
{
	char *q = realloc(*p, *n + len + 2);
	if (!q)
		return -1;
	memcpy(q + *n, line, len);
	q[*n + len] = '\n';
	q[*n + len + 1] = '\0';
	*p = q;
	*n += len + 1;
	return 0;
}

int tsd_test_read_response(struct tsd_test_conn *c, int timeout_ms, json_t **lines,
                           char **text)
{
	json_t *all = json_array(), *obj = NULL;
	char *buf = NULL, *line = NULL;
	size_t n = 0, len;
	int rc = TSD_TEST_ERROR, done = 0;
	while (all && !done) {
		if ((rc = tsd_test_read_line(c, timeout_ms, &line, &len)) != TSD_TEST_LINE)
			goto out;
		rc = TSD_TEST_ERROR;
		if (!(obj = json_loadb(line, len, JSON_ALLOW_NUL, NULL)) || !json_is_object(obj) ||
		    (text && append_text(&buf, &n, line, len) < 0))
			goto out;
		done = json_object_get(obj, "ok") != NULL;
		json_array_append_new(all, obj);
		obj = NULL;
		free(line);
		line = NULL;
	}
	rc = all ? 0 : TSD_TEST_ERROR;
out:
	json_decref(obj);
	free(line);
	if (rc == 0 && lines) {
		*lines = all;
		all = NULL;
	}
	if (rc == 0 && text) {
		*text = buf;
		buf = NULL;
	}
	json_decref(all);
	free(buf);
	return rc;
}

char *tsd_test_call(struct tsd_test_conn *c, const char *request)
{
	char *text = NULL;
	if (tsd_test_send_line(c, request) < 0 ||
	    tsd_test_read_response(c, TSD_TEST_TIMEOUT_MS, NULL, &text) < 0)
		return NULL;
	return text;
}

char *tsd_test_drop_version(char *text)
{
	static const char member[] = ",\"version\":";
	for (char *line = text; line && *line;) {
		char *end = strchr(line, '\n'), *v = strstr(line, member);
		char *ins = strstr(line, "\"inserted\":");
		if (!end)
			end = line + strlen(line);
		if (v && v < end && ins && ins < end) {
			char *digits = v + sizeof member - 1, *after = digits;
			while (*after >= '0' && *after <= '9')
				after++;
			memmove(v, after, strlen(after) + 1);
			end -= after - v;
		}
		line = *end ? end + 1 : end;
	}
	return text;
}
