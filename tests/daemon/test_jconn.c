/*
 * test_jconn.c -- the daemon client's timeouts (common/jconn.c) against
 * listeners that fail the way a hung or overloaded daemon does: one that
 * lets connections queue and never accepts (the kernel completes a unix
 * connect into the backlog, so the client's request goes out and no
 * answer ever comes), one whose backlog is full (the connect itself
 * waits), one that accepts and never reads (the send waits), and one
 * that answers slowly but steadily, whose stream must not be cut.
 *
 * The same on TCP (tcp:127.0.0.1:PORT), and the addresses and token
 * files that are refused before any connect (common/client.c).
 *
 * These listeners are not a mock of tsstored: they are the failures
 * being tested.  Every wait is bounded by the timeout under test; an
 * alarm is the backstop should the code under test hang after all.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "client.h"
#include "jconn.h"

#define MS INT64_C(1000000)
/* The backstop: no test here takes a tenth of it. */
#define ALARM_SECONDS 120

struct listener {
	char dir[64];
	char path[96];
	int fd;
};

/* A unix socket listening with the given backlog, never accepting. */
static void listener_open(struct listener *l, int backlog)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	snprintf(l->dir, sizeof l->dir, "/tmp/jconn-test-XXXXXX");
	assert_non_null(mkdtemp(l->dir));
	snprintf(l->path, sizeof l->path, "%s/sock", l->dir);
	snprintf(sa.sun_path, sizeof sa.sun_path, "%s", l->path);
	l->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(l->fd >= 0);
	assert_int_equal(bind(l->fd, (struct sockaddr *)&sa, sizeof sa), 0);
	assert_int_equal(listen(l->fd, backlog), 0);
}

static void listener_close(struct listener *l)
{
	close(l->fd);
	unlink(l->path);
	rmdir(l->dir);
}

static int64_t now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

static void ping_request(struct jbuf *req)
{
	jbuf_puts(req, "{\"op\":\"ping\"}");
}

/* Connected, the request sent, no answer: the call fails once the
 * timeout has passed with nothing read, saying so. */
static void jconn_no_answer_times_out(void **state)
{
	struct listener l;
	struct jconn *c;
	struct jbuf req = {0};
	char why[256], want[256];
	json_t *reply = NULL;
	(void)state;
	listener_open(&l, 8);
	assert_int_equal(jconn_connect(l.path, 200 * MS, &c, why, sizeof why), 0);
	ping_request(&req);
	int64_t start = now_ns();
	assert_int_equal(jconn_call(c, &req, NULL, NULL, &reply, why, sizeof why), TS_EIO);
	assert_true(now_ns() - start >= 200 * MS);
	snprintf(want, sizeof want, "no answer from %s within 200ms", l.path);
	assert_string_equal(why, want);
	assert_null(reply);
	jconn_close(c);
	jbuf_free(&req);
	listener_close(&l);
}

/* A listener whose backlog is full: the connect waits, then fails. */
static void jconn_connect_times_out(void **state)
{
	struct listener l;
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	struct jconn *c = NULL;
	char why[256], want[256];
	int held;
	(void)state;
	listener_open(&l, 0);
	/* Backlog 0 queues one connection; it holds the only place. */
	snprintf(sa.sun_path, sizeof sa.sun_path, "%s", l.path);
	held = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_int_equal(connect(held, (struct sockaddr *)&sa, sizeof sa), 0);
	assert_int_equal(jconn_connect(l.path, 100 * MS, &c, why, sizeof why), -1);
	assert_null(c);
	snprintf(want, sizeof want, "no answer from %s within 100ms", l.path);
	assert_string_equal(why, want);
	close(held);
	listener_close(&l);
}

/* Connected, and the request is bigger than the socket's buffers, which
 * nobody empties: the send waits, then fails. */
static void jconn_send_times_out(void **state)
{
	struct listener l;
	struct jconn *c;
	struct jbuf req = {0};
	char why[256], want[256];
	(void)state;
	listener_open(&l, 8);
	assert_int_equal(jconn_connect(l.path, 100 * MS, &c, why, sizeof why), 0);
	jbuf_puts(&req, "{\"op\":\"ping\",\"pad\":\"");
	assert_int_equal(jbuf_reserve(&req, 16 << 20), 0);
	memset(req.p + req.len, 'x', 16 << 20);
	req.len += 16 << 20;
	jbuf_puts(&req, "\"}");
	assert_int_equal(jconn_send(c, &req, why, sizeof why), -1);
	snprintf(want, sizeof want, "no answer from %s within 100ms", l.path);
	assert_string_equal(why, want);
	jconn_close(c);
	jbuf_free(&req);
	listener_close(&l);
}

/* The slow daemon: accepts, reads the request line, then writes LINES
 * rows lines GAP apart and the ok line.  It records the longest time it
 * actually took between two writes (a loaded machine may stretch a gap). */
#define LINES 8
#define GAP_MS 300
struct slow {
	struct listener *l;
	int64_t longest_gap;
};
static void *slow_daemon(void *arg)
{
	struct slow *sd = arg;
	char buf[256];
	int fd = accept(sd->l->fd, NULL, NULL);
	ssize_t k;
	while ((k = read(fd, buf, sizeof buf)) > 0 && !memchr(buf, '\n', (size_t)k))
		;
	int64_t last = now_ns();
	for (int i = 0; i <= LINES; i++) {
		struct timespec gap = {0, GAP_MS * 1000000L};
		if (i < LINES) {
			nanosleep(&gap, NULL);
			snprintf(buf, sizeof buf, "{\"rows\":[[%d]]}\n", i);
		} else {
			snprintf(buf, sizeof buf, "{\"ok\":true,\"count\":%d}\n", LINES);
		}
		int64_t t = now_ns();
		sd->longest_gap = t - last > sd->longest_gap ? t - last : sd->longest_gap;
		last = t;
		if (write(fd, buf, strlen(buf)) < 0)
			break;
	}
	close(fd);
	return NULL;
}

static int count_rows(void *arg, json_t *rows)
{
	int *n = arg;
	assert_int_equal(json_integer_value(json_array_get(json_array_get(rows, 0), 0)), *n);
	(*n)++;
	return 0;
}

/* The timeout is between lines, not for the whole answer: a stream
 * whose lines come GAP apart (a seventh of the timeout) but that lasts
 * longer than it is read whole.  The test holds on a loaded machine too:
 * should the daemon thread itself have been kept from writing for longer
 * than the timeout, being cut is then the right answer, and is what it
 * checks (near the timeout, either answer is). */
static void jconn_slow_stream_is_not_cut(void **state)
{
	struct listener l;
	struct slow sd = {.l = &l};
	struct jconn *c;
	struct jbuf req = {0};
	char why[256];
	json_t *reply = NULL;
	pthread_t daemon;
	int n = 0;
	(void)state;
	listener_open(&l, 8);
	assert_int_equal(pthread_create(&daemon, NULL, slow_daemon, &sd), 0);
	assert_int_equal(jconn_connect(l.path, 2000 * MS, &c, why, sizeof why), 0);
	ping_request(&req);
	int64_t start = now_ns();
	int rc = jconn_call(c, &req, count_rows, &n, &reply, why, sizeof why);
	int64_t took = now_ns() - start;
	jconn_close(c); /* the daemon thread's write fails if it was cut */
	pthread_join(daemon, NULL);
	if (sd.longest_gap < 1500 * MS) {
		assert_int_equal(rc, 0);
		assert_true(took > 2000 * MS); /* longer than the timeout */
		assert_int_equal(n, LINES);
		assert_int_equal(json_integer_value(json_object_get(reply, "count")), LINES);
	} else {
		/* Within half a second of the timeout either answer is right. */
		print_message("the daemon thread was held %.1f s between two lines (%s)\n",
		              (double)sd.longest_gap / 1e9, rc == 0 ? "not cut" : why);
		if (sd.longest_gap > 2500 * MS)
			assert_int_equal(rc, -1);
	}
	json_decref(reply);
	jbuf_free(&req);
	listener_close(&l);
}

/* No listener at all: the usual message, at once. */
static void jconn_no_listener(void **state)
{
	struct jconn *c;
	char why[256];
	(void)state;
	assert_int_equal(jconn_connect("/nonexistent/sock", 100 * MS, &c, why, sizeof why), -1);
	assert_string_equal(why, "/nonexistent/sock: No such file or directory");
}

/* A TCP listener on 127.0.0.1 (a port of the kernel's choice) that
 * never accepts; its address into addr. */
static int tcp_listener(char *addr, size_t addrsz)
{
	struct sockaddr_in sa = {.sin_family = AF_INET};
	socklen_t len = sizeof sa;
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_true(fd >= 0);
	assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof sa), 0);
	assert_int_equal(listen(fd, 8), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&sa, &len), 0);
	snprintf(addr, addrsz, "tcp:127.0.0.1:%d", ntohs(sa.sin_port));
	return fd;
}

/* Over TCP as over unix: connected into the backlog, the request sent,
 * no answer: the call fails once the timeout has passed, naming the
 * address. */
static void jconn_tcp_no_answer_times_out(void **state)
{
	struct jconn *c;
	struct jbuf req = {0};
	char addr[64], why[256], want[256];
	int fd = tcp_listener(addr, sizeof addr);
	(void)state;
	assert_int_equal(jconn_connect(addr, 200 * MS, &c, why, sizeof why), 0);
	assert_int_equal(jconn_is_tcp(c), 1);
	assert_string_equal(jconn_address(c), addr);
	ping_request(&req);
	int64_t start = now_ns();
	assert_int_equal(jconn_call(c, &req, NULL, NULL, NULL, why, sizeof why), TS_EIO);
	assert_true(now_ns() - start >= 200 * MS);
	snprintf(want, sizeof want, "no answer from %s within 200ms", addr);
	assert_string_equal(why, want);
	jconn_close(c);
	jbuf_free(&req);
	close(fd);
}

/* Addresses that are no address: refused before any connect. */
static void jconn_bad_tcp_address(void **state)
{
	static const char *const bad[] = {"tcp:localhost", "tcp::7400", "tcp:[]:7400", "tcp:host:"};
	struct jconn *c;
	char why[256], want[256];
	(void)state;
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		assert_int_equal(jconn_connect(bad[i], 100 * MS, &c, why, sizeof why), -1);
		assert_null(c);
		snprintf(want, sizeof want, "%s: want tcp:HOST:PORT", bad[i]);
		assert_string_equal(why, want);
	}
}

/* A unix socket named with and without "unix:" is the same socket, and
 * not TCP. */
static void jconn_unix_forms(void **state)
{
	struct listener l;
	struct jconn *c;
	char addr[128], why[256];
	(void)state;
	listener_open(&l, 8);
	snprintf(addr, sizeof addr, "unix:%s", l.path);
	assert_int_equal(jconn_connect(addr, 100 * MS, &c, why, sizeof why), 0);
	assert_int_equal(jconn_is_tcp(c), 0);
	assert_string_equal(jconn_address(c), l.path);
	jconn_close(c);
	listener_close(&l);
}

/* A token file that holds no token is the caller's error, said before
 * anything is sent; one that is missing too, and one others may read. */
static void client_bad_token_file(void **state)
{
	char dir[] = "/tmp/jconn-test-XXXXXX", path[64], addr[64], why[256], want[256];
	struct jconn *c;
	int fd = tcp_listener(addr, sizeof addr);
	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof path, "%s/token", dir);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs("\nsecond line\n", f);
	fclose(f);
	assert_int_equal(chmod(path, 0640), 0); /* the owner and a group may read a token file */
	assert_int_equal(client_connect(addr, path, 100 * MS, &c, why, sizeof why), -1);
	assert_null(c);
	snprintf(want, sizeof want, "token file %s: the first line must hold the token (1 to 4096 bytes)",
	         path);
	assert_string_equal(why, want);
	/* Others may read it: refused before it is read, naming the fix. */
	assert_int_equal(chmod(path, 0644), 0);
	assert_int_equal(client_connect(addr, path, 100 * MS, &c, why, sizeof why), -1);
	assert_null(c);
	snprintf(want, sizeof want, "token file %s: others may read it (mode 0644): refused; "
	         "chmod o-r %s", path, path);
	assert_string_equal(why, want);
	unlink(path);
	assert_int_equal(client_connect(addr, path, 100 * MS, &c, why, sizeof why), -1);
	snprintf(want, sizeof want, "token file %s: No such file or directory", path);
	assert_string_equal(why, want);
	rmdir(dir);
	close(fd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(jconn_no_answer_times_out),
		cmocka_unit_test(jconn_connect_times_out),
		cmocka_unit_test(jconn_send_times_out),
		cmocka_unit_test(jconn_slow_stream_is_not_cut),
		cmocka_unit_test(jconn_no_listener),
		cmocka_unit_test(jconn_tcp_no_answer_times_out),
		cmocka_unit_test(jconn_bad_tcp_address),
		cmocka_unit_test(jconn_unix_forms),
		cmocka_unit_test(client_bad_token_file),
	};
	alarm(ALARM_SECONDS);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
