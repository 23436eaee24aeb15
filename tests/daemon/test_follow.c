/*
 * test_follow.c -- the "follow" op through a real tsstored
 * (docs/standby.md section 2, docs/protocol.md): the answer line (ok,
 * stream binary, the lineage and epoch), then frames whose every byte
 * checks (ts_frame_decode) and whose contents are the primary's files:
 * each tablet and the DESCRIPTOR byte for byte, each log frame the
 * segment's bytes at its LSN, log frames reaching the newest commit the
 * heartbeat names; heartbeats once caught up, and between the log frames
 * of a steady stream of commits; new commits as log frames as they are
 * made.  A follow of another lineage or of a newer epoch is
 * refused with EINVAL and the connection stays usable; a stopping
 * daemon ends the stream and exits promptly.
 */
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include <tsstore.h>

#include "support_client.h"

#define T0 INT64_C(1795262400000000000) /* 2026-11-21T12:00:00Z */

static struct tsd_test_daemon *daemon_;

static int setup(void **state)
{
	(void)state;
	daemon_ = tsd_test_daemon_up(0, NULL);
	return daemon_ ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	tsd_test_daemon_free(daemon_);
	daemon_ = NULL;
	return 0;
}

static void call_ok(struct tsd_test_conn *c, const char *request)
{
	char *r = tsd_test_call(c, request);
	if (!r || !strstr(r, "\"ok\":true"))
		fail_msg("%s: %s", request, r ? r : "(no answer)");
	free(r);
}

static void insert(struct tsd_test_conn *c, int from, int n)
{
	size_t cap = (size_t)n * 64 + 128, len = 0;
	char *req = malloc(cap);
	len += (size_t)snprintf(req + len, cap - len, "{\"op\":\"insert\",\"table\":\"m\",\"rows\":[");
	for (int i = 0; i < n; i++)
		len += (size_t)snprintf(req + len, cap - len, "%s[\"h%d\",%" PRId64 ",%d]",
		                        i ? "," : "", (from + i) % 7,
		                        T0 + (int64_t)(from + i) * 1000000000, from + i);
	snprintf(req + len, cap - len, "]}");
	call_ok(c, req);
	free(req);
}

/* The file at DATA/m/rel, whole. */
static void *primary_file(const char *rel, size_t *n)
{
	char *path = tsd_test_fmt("%s/m/%s", daemon_->data, rel);
	struct stat st;
	int fd = open(path, O_RDONLY);
	if (fd < 0 || fstat(fd, &st) < 0)
		fail_msg("open %s", path);
	void *p = malloc((size_t)st.st_size + 1);
	assert_int_equal(pread(fd, p, (size_t)st.st_size, 0), st.st_size);
	close(fd);
	free(path);
	*n = (size_t)st.st_size;
	return p;
}

/* What the test saw of the stream. */
struct seen {
	unsigned shift;
	uint64_t head;           /* the last heartbeat's */
	uint64_t log_end;        /* the end of the last log frame */
	int tablets, descriptors, logs, heartbeats;
	unsigned char *tab;      /* the tablet being received */
	size_t tab_n;
};

/* Read one frame (and check its bytes against the primary's files). */
static int read_frame(struct tsd_test_conn *c, struct seen *s, int timeout_ms)
{
	char *h = NULL, *rest = NULL, *payload = NULL, table[TS_NAME_MAX + 1];
	int rc = tsd_test_read_bytes(c, 4, timeout_ms, &h);
	if (rc != TSD_TEST_LINE)
		return rc;
	size_t nlen = (unsigned char)h[2] | (size_t)(unsigned char)h[3] << 8;
	assert_int_equal(tsd_test_read_bytes(c, 24 + nlen, 5000, &rest), TSD_TEST_LINE);
	uint32_t length;
	memcpy(&length, rest + nlen + 16, 4);
	assert_true(length <= TS_FRAME_PAYLOAD_MAX);
	if (length)
		assert_int_equal(tsd_test_read_bytes(c, length, 5000, &payload), TSD_TEST_LINE);
	unsigned char *wire = malloc(28 + nlen + length);
	memcpy(wire, h, 4);
	memcpy(wire + 4, rest, 24 + nlen);
	if (length)
		memcpy(wire + 28 + nlen, payload, length);
	ts_frame f;
	size_t used = 0;
	assert_int_equal(ts_frame_decode(wire, 28 + nlen + length, &f, table, &used), 1);
	assert_int_equal(used, 28 + nlen + length);
	assert_string_equal(table, "m");
	size_t n;
	void *p;
	switch (f.type) {
	case TS_FRAME_HEARTBEAT:
		memcpy(&s->head, f.payload, 8);
		memcpy(&s->shift, (const char *)f.payload + 16, 4);
		s->heartbeats++;
		break;
	case TS_FRAME_TABLET: {
		char *rel = tsd_test_fmt("tablets/%016" PRIx64 ".tab", f.id);
		assert_int_equal(f.offset, s->tab_n);
		s->tab = realloc(s->tab, s->tab_n + f.length);
		memcpy(s->tab + s->tab_n, f.payload, f.length);
		s->tab_n += f.length;
		if (f.flags & TS_FRAME_LAST) {
			p = primary_file(rel, &n);
			assert_int_equal(n, s->tab_n);
			assert_memory_equal(p, s->tab, n);
			free(p);
			s->tab_n = 0;
			s->tablets++;
		}
		free(rel);
		break;
	}
	case TS_FRAME_DESCRIPTOR:
		p = primary_file("DESCRIPTOR", &n);
		assert_int_equal(n, f.length);
		assert_memory_equal(p, f.payload, n);
		free(p);
		s->descriptors++;
		break;
	case TS_FRAME_LOG: {
		assert_true(s->shift > 0);
		char *rel = tsd_test_fmt("log/%016" PRIx64 ".seg", f.offset >> s->shift);
		p = primary_file(rel, &n);
		size_t off = 4096 + (size_t)(f.offset & ((UINT64_C(1) << s->shift) - 1));
		assert_true(off + f.length <= n);
		assert_memory_equal((char *)p + off, f.payload, f.length);
		free(p);
		free(rel);
		s->log_end = f.offset + f.length;
		s->logs++;
		break;
	}
	default:
		fail_msg("frame of type %d", f.type);
	}
	free(wire);
	free(h);
	free(rest);
	free(payload);
	return f.type;
}

/* Frames until caught up: a heartbeat after others, naming the end of
 * the log frames received, no tablet half received, and then 300 ms
 * without a frame (a table's heartbeat also follows its frames every
 * TSD_FOLLOW_BUSY_HEARTBEAT while they flow: one may come between a
 * tablet and its descriptor; a caught-up stream sends one a second). */
static void read_until_caught_up(struct tsd_test_conn *c, struct seen *s)
{
	int others = 0;
	for (;;) {
		int type = read_frame(c, s, 5000);
		if (type < 0)
			fail_msg("no frame: %d", type);
		if (type == TS_FRAME_HEARTBEAT && others && s->head == s->log_end && !s->tab_n) {
			type = read_frame(c, s, 300);
			if (type == TSD_TEST_TIMEOUT)
				return;
			if (type < 0)
				fail_msg("no frame: %d", type);
		}
		others += type != TS_FRAME_HEARTBEAT;
	}
}

static void follow_streams_the_primary(void **state)
{
	(void)state;
	struct tsd_test_conn *c = tsd_test_connect(daemon_, TSD_TEST_UNIX);
	struct tsd_test_conn *f = tsd_test_connect(daemon_, TSD_TEST_UNIX);
	struct seen s = {0};
	char *line = NULL;
	assert_non_null(c);
	assert_non_null(f);
	call_ok(c, "{\"op\":\"create\",\"table\":\"m\",\"columns\":[{\"name\":\"host\",\"type\":"
	           "\"string\"},{\"name\":\"ts\",\"type\":\"timestamp\"},{\"name\":\"v\","
	           "\"type\":\"int64\"}],\"key\":[\"host\",\"ts\"]}");
	insert(c, 0, 500);
	call_ok(c, "{\"op\":\"flush\"}");
	insert(c, 500, 500);

	assert_int_equal(tsd_test_send_line(f, "{\"op\":\"follow\",\"id\":1}"), 0);
	assert_int_equal(tsd_test_read_line(f, 5000, &line, NULL), TSD_TEST_LINE);
	json_t *j = json_loads(line, 0, NULL);
	assert_non_null(j);
	assert_true(json_is_true(json_object_get(j, "ok")));
	assert_int_equal(json_integer_value(json_object_get(j, "id")), 1);
	assert_string_equal(json_string_value(json_object_get(j, "stream")), "binary");
	assert_int_equal(strlen(json_string_value(json_object_get(j, "lineage"))), 32);
	assert_int_equal(json_integer_value(json_object_get(j, "epoch")), 1);
	json_decref(j);
	free(line);

	assert_int_equal(read_frame(f, &s, 5000), TS_FRAME_HEARTBEAT);
	read_until_caught_up(f, &s);
	assert_int_equal(s.tablets, 1);
	assert_int_equal(s.descriptors, 1);
	assert_true(s.logs >= 1);
	assert_int_equal(s.log_end, s.head); /* every commit, and no byte past them */

	/* a new commit arrives as log frames */
	int logs = s.logs;
	insert(c, 1000, 10);
	read_until_caught_up(f, &s);
	assert_true(s.logs > logs);
	assert_int_equal(s.log_end, s.head);
	assert_int_equal(s.descriptors, 1);

	/* a steady stream of commits: the table's heartbeats come between
	 * its log frames (at least every TSD_FOLLOW_BUSY_HEARTBEAT, 100 ms),
	 * each naming at least what was sent before it, so that a standby
	 * knows its lag under load and not only once the primary is quiet;
	 * 40 commits 25 ms apart, about 1 s: no quiet second */
	int beats = s.heartbeats, between = 0;
	logs = s.logs;
	for (int i = 0; i < 40; i++) {
		insert(c, 1010 + i, 1);
		struct timespec nap = {0, 25 * 1000000L};
		nanosleep(&nap, NULL);
	}
	for (;;) {
		int type = read_frame(f, &s, 5000);
		assert_true(type > 0);
		if (type != TS_FRAME_HEARTBEAT)
			continue;
		assert_true(s.head >= s.log_end);
		if (s.head == s.log_end && s.logs > logs + 30)
			break; /* the last commit's */
		between++;
	}
	assert_true(s.heartbeats > beats);
	assert_in_range(between, 3, 40);
	read_until_caught_up(f, &s);

	/* a flush: its tablet and the descriptor */
	call_ok(c, "{\"op\":\"flush\"}");
	read_until_caught_up(f, &s);
	assert_int_equal(s.tablets, 2);
	assert_int_equal(s.descriptors, 2);

	/* refusals keep the connection */
	char *r = tsd_test_call(c, "{\"op\":\"follow\",\"lineage\":\"00000000000000000000000000000000\"}");
	assert_non_null(r);
	assert_non_null(strstr(r, "\"code\":\"EINVAL\""));
	assert_non_null(strstr(r, "the standby is of lineage 0000"));
	free(r);
	r = tsd_test_call(c, "{\"op\":\"follow\",\"epoch\":2}");
	assert_non_null(strstr(r, "this database is a stale member of its lineage"));
	free(r);
	r = tsd_test_call(c, "{\"op\":\"follow\",\"tables\":[]}");
	assert_non_null(strstr(r, "\"code\":\"EPROTO\""));
	free(r);
	call_ok(c, "{\"op\":\"ping\"}");

	/* stopping ends the stream: the daemon exits 0 at once */
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	assert_int_equal(tsd_test_daemon_stop(daemon_, 10000), 0);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	assert_true(t1.tv_sec - t0.tv_sec < 5);
	free(s.tab);
	tsd_test_close(f);
	tsd_test_close(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(follow_streams_the_primary, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
