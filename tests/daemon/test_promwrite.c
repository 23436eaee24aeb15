/*
 * test_promwrite.c -- Prometheus remote write into tsstored
 * (POST /api/v1/write, daemon/promwrite.c, tsstore-http(7)), end to end:
 * a real daemon with an HTTP listener on a free loopback port, sent
 * WriteRequests that the test builds itself with the messages protoc-c
 * generates from wire/remote.proto, packed by protobuf-c and
 * compressed with snappy, as Prometheus sends them; what was stored is
 * read back through the JSON protocol (schema, query, stats) and
 * compared exactly.
 *
 * Each test starts its own daemon; the teardown kills it and removes its
 * directory.  TSD_TEST_FILTER=PATTERN runs only the tests whose names
 * match; TSD_TEST_VERBOSE=1 sends the daemon's log to stderr.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <cmocka.h>

#include <jansson.h>
#include <snappy-c.h>
#include <tsstore.h>

#include "remote.pb-c.h"
#include "support_client.h"
#include "support_prom.h"

#define WAIT TSD_TEST_TIMEOUT_MS

/* ---- Talking to the daemon ---- */

/* POST body[0..n) to /api/v1/write with remote write's headers; returns
 * the status, the response body in *out (malloc'ed, "" when none). */
static int post(struct tsd_test_conn *c, const char *body, size_t n, char **out)
{
	struct tsd_test_response r;
	int status = prom_post(c, "/api/v1/write", PROM_WRITE_HEADERS, body, n, &r);
	*out = r.body;
	r.body = NULL;
	tsd_test_response_free(&r);
	return status;
}

/* POST series[0..n) and assert the status and response body. */
static void write_expect(struct tsd_test_http *f, const struct tseries *series, int n, int status,
                         const char *response)
{
	size_t len;
	char *body = write_body(series, n, &len), *got = NULL;
	int st = post(f->http, body, len, &got);
	assert_string_equal(got, response);
	assert_int_equal(st, status);
	free(got);
	free(body);
}

/* {"error": msg} as the daemon sends it. */
static char *error_body(const char *msg)
{
	json_t *m = json_string(msg);
	char *text = json_dumps(m, JSON_ENCODE_ANY), *body = tsd_test_fmt("{\"error\":%s}\n", text);
	free(text);
	json_decref(m);
	return body;
}

/* The JSON response to request (one line) over the JSON protocol. */
static char *call(struct tsd_test_http *f, const char *request)
{
	char *text = tsd_test_call(f->json, request);
	assert_non_null(text);
	return text;
}

static void expect_call(struct tsd_test_http *f, const char *request, const char *want)
{
	char *text = call(f, request);
	assert_string_equal(text, want);
	free(text);
}

/* The counter at path "a.b.c" of the stats op's object. */
static json_int_t stat_at(struct tsd_test_http *f, const char *path)
{
	char *text = call(f, "{\"op\":\"stats\"}"), key[64];
	json_t *st = json_loads(text, 0, NULL), *v = st;
	assert_non_null(st);
	for (const char *p = path; v && *p;) {
		size_t n = strcspn(p, ".");
		snprintf(key, sizeof key, "%.*s", (int)n, p);
		v = json_object_get(v, key);
		p += n + (p[n] == '.');
	}
	assert_true(json_is_integer(v));
	json_int_t x = json_integer_value(v);
	json_decref(st);
	free(text);
	return x;
}

/* ---- Fixtures ---- */

/* Connect again over HTTP and TCP (after a restart).  Returns 0 or -1. */
static int connect_both(struct tsd_test_http *f)
{
	return (f->http = tsd_test_connect(f->d, TSD_TEST_HTTP)) &&
	       (f->json = tsd_test_connect(f->d, TSD_TEST_TCP)) ? 0 : -1;
}

static int teardown(void **state)
{
	tsd_test_http_down(*state);
	*state = NULL;
	return 0;
}

static int setup_args(void **state, const char *const *args)
{
	return (*state = tsd_test_http_up(args, 1)) ? 0 : -1;
}

static int setup(void **state) { return setup_args(state, NULL); }

static int setup_ttl(void **state)
{
	static const char *const args[] = {"--ingest-default-ttl", "1h", NULL};
	return setup_args(state, args);
}

static int setup_small_body(void **state)
{
	static const char *const args[] = {"--http-max-body", "1k", NULL};
	return setup_args(state, args);
}

/* ---- The tests ---- */

/* 2026-11-22T00:00:00Z in ms, and steps of 15 s from it. */
#define T0 INT64_C(1795305600000)

static const char *const api_a[] = {"__name__", "http_requests_total", "job", "api",
                                    "instance", "a:9090", NULL};
static const char *const api_b[] = {"instance", "b:9090", "__name__", "http_requests_total",
                                    "job", "api", "code", "500", NULL};
static const int64_t ms3[] = {T0, T0 + 15000, T0 + 30000};
static const double va[] = {0.1, 1e300, -2.5};
/* Not -0.0: protobuf-c packs a proto3 double equal to 0 as absent, so
 * this encoder cannot send its sign (Prometheus's Go encoder can). */
static const double vb[] = {3, 0.30000000000000004, 1.7976931348623157e308};

static void test_series(void **state)
{
	struct tsd_test_http *f = *state;
	/* A label with an empty value is no label; "value" and "ts" are
	 * renamed; a metric name's dots and dashes become '_'. */
	static const char *const odd[] = {"__name__", "node.cpu-seconds", "value", "v", "ts", "t",
	                                  "empty", "", NULL};
	/* A metric without labels: its key is ts alone. */
	static const char *const bare[] = {"__name__", "scalar", NULL};
	static const int64_t ms1[] = {T0};
	static const double nan1[] = {NAN};
	const struct tseries series[] = {
		{api_a, 3, ms3, va},
		{api_b, 3, ms3, vb},
		{odd, 1, ms1, nan1},
		{bare, 1, ms1, va},
	};
	write_expect(f, series, 4, 204, "");
	/* the key: the labels of all its series in the first request, sorted */
	expect_call(f, "{\"op\":\"schema\",\"table\":\"http_requests_total\"}",
	            "{\"ok\":true,\"columns\":[{\"name\":\"code\",\"type\":\"string\",\"default\":\"\"},"
	            "{\"name\":\"instance\",\"type\":\"string\",\"default\":\"\"},"
	            "{\"name\":\"job\",\"type\":\"string\",\"default\":\"\"},"
	            "{\"name\":\"ts\",\"type\":\"timestamp\"},"
	            "{\"name\":\"value\",\"type\":\"double\",\"default\":\"NaN\"}],"
	            "\"key\":[\"code\",\"instance\",\"job\",\"ts\"],\"ttl\":\"0s\",\"version\":1,"
	            "\"on_duplicate\":\"ignore\"}\n");
	/* series a has no code: "" (Prometheus's empty label); ts in ns */
	expect_call(f, "{\"op\":\"query\",\"table\":\"http_requests_total\"}",
	            "{\"rows\":[[\"\",\"a:9090\",\"api\",1795305600000000000,0.1],"
	            "[\"\",\"a:9090\",\"api\",1795305615000000000,1e+300],"
	            "[\"\",\"a:9090\",\"api\",1795305630000000000,-2.5],"
	            "[\"500\",\"b:9090\",\"api\",1795305600000000000,3],"
	            "[\"500\",\"b:9090\",\"api\",1795305615000000000,0.30000000000000004],"
	            "[\"500\",\"b:9090\",\"api\",1795305630000000000,1.7976931348623157e+308]]}\n"
	            "{\"ok\":true,\"count\":6,\"more\":false}\n");
	expect_call(f, "{\"op\":\"schema\",\"table\":\"node_cpu_seconds\"}",
	            "{\"ok\":true,\"columns\":[{\"name\":\"_ts\",\"type\":\"string\",\"default\":\"\"},"
	            "{\"name\":\"_value\",\"type\":\"string\",\"default\":\"\"},"
	            "{\"name\":\"ts\",\"type\":\"timestamp\"},"
	            "{\"name\":\"value\",\"type\":\"double\",\"default\":\"NaN\"}],"
	            "\"key\":[\"_ts\",\"_value\",\"ts\"],\"ttl\":\"0s\",\"version\":1,"
	            "\"on_duplicate\":\"ignore\"}\n");
	expect_call(f, "{\"op\":\"query\",\"table\":\"node_cpu_seconds\"}",
	            "{\"rows\":[[\"t\",\"v\",1795305600000000000,\"NaN\"]]}\n"
	            "{\"ok\":true,\"count\":1,\"more\":false}\n");
	expect_call(f, "{\"op\":\"schema\",\"table\":\"scalar\"}",
	            "{\"ok\":true,\"columns\":[{\"name\":\"ts\",\"type\":\"timestamp\"},"
	            "{\"name\":\"value\",\"type\":\"double\",\"default\":\"NaN\"}],"
	            "\"key\":[\"ts\"],\"ttl\":\"0s\",\"version\":1,"
	            "\"on_duplicate\":\"ignore\"}\n");
	expect_call(f, "{\"op\":\"query\",\"table\":\"scalar\"}",
	            "{\"rows\":[[1795305600000000000,0.1]]}\n"
	            "{\"ok\":true,\"count\":1,\"more\":false}\n");
	assert_int_equal(stat_at(f, "ingest.rows_stored"), 8);
	assert_int_equal(stat_at(f, "ingest.rows_missing_tags"), 3);
	assert_int_equal(stat_at(f, "ingest.tables_created"), 3);
}

/* Prometheus resends a whole batch it had no answer for, also across a
 * restart of tsstored: nothing doubles, nothing is lost. */
static void test_retry(void **state)
{
	struct tsd_test_http *f = *state;
	static const char *const rows =
		"{\"rows\":[[\"\",\"a:9090\",\"api\",1795305600000000000,0.1],"
		"[\"\",\"a:9090\",\"api\",1795305615000000000,1e+300],"
		"[\"\",\"a:9090\",\"api\",1795305630000000000,-2.5],"
		"[\"500\",\"b:9090\",\"api\",1795305600000000000,3],"
		"[\"500\",\"b:9090\",\"api\",1795305615000000000,0.30000000000000004],"
		"[\"500\",\"b:9090\",\"api\",1795305630000000000,1.7976931348623157e+308]]}\n"
		"{\"ok\":true,\"count\":6,\"more\":false}\n";
	const struct tseries series[] = {{api_a, 3, ms3, va}, {api_b, 3, ms3, vb}};
	const char *query = "{\"op\":\"query\",\"table\":\"http_requests_total\"}";
	/* part of the batch arrived, and its answer was lost */
	const struct tseries part[] = {{api_a, 2, ms3, va}, {api_b, 1, ms3, vb}};
	write_expect(f, part, 2, 204, "");
	write_expect(f, series, 2, 204, "");
	write_expect(f, series, 2, 204, "");
	expect_call(f, query, rows);
	assert_int_equal(stat_at(f, "ingest.rows_stored"), 6);
	assert_int_equal(stat_at(f, "ingest.duplicates_ignored"), 9);
	tsd_test_close(f->http);
	tsd_test_close(f->json);
	f->http = f->json = NULL;
	assert_int_equal(tsd_test_daemon_stop(f->d, WAIT), 0);
	assert_int_equal(tsd_test_daemon_start(f->d, NULL), 0);
	assert_int_equal(connect_both(f), 0);
	write_expect(f, series, 2, 204, "");
	expect_call(f, query, rows);
	assert_int_equal(stat_at(f, "ingest.rows_stored"), 0);
	assert_int_equal(stat_at(f, "ingest.duplicates_ignored"), 6);
}

/* A label the table's key lacks refuses its series alone (400 naming
 * it), counted by reason; the other series of the request are stored. */
static void test_new_label(void **state)
{
	struct tsd_test_http *f = *state;
	static const char *const zoned[] = {"__name__", "http_requests_total", "job", "api",
	                                    "instance", "c:9090", "zone", "eu", NULL};
	static const char *const c2[] = {"__name__", "http_requests_total", "job", "api",
	                                 "instance", "c:9090", NULL};
	static const int64_t ms1[] = {T0};
	static const double one[] = {1};
	const struct tseries first[] = {{api_a, 1, ms3, va}};
	const struct tseries later[] = {{c2, 1, ms1, one}, {zoned, 3, ms3, vb}, {zoned, 1, ms1, one}};
	write_expect(f, first, 1, 204, "");
	char *err = error_body("series 2: table \"http_requests_total\": label \"zone\" is not a "
	                       "string key column of the table");
	write_expect(f, later, 3, 400, err);
	free(err);
	expect_call(f, "{\"op\":\"query\",\"table\":\"http_requests_total\"}",
	            "{\"rows\":[[\"a:9090\",\"api\",1795305600000000000,0.1],"
	            "[\"c:9090\",\"api\",1795305600000000000,1]]}\n"
	            "{\"ok\":true,\"count\":2,\"more\":false}\n");
	assert_int_equal(stat_at(f, "ingest.rejected.tag"), 4);
	assert_int_equal(stat_at(f, "ingest.rows_stored"), 2);
	/* a series without a metric name */
	static const char *const noname[] = {"job", "api", NULL};
	const struct tseries nn[] = {{noname, 1, ms1, one}};
	err = error_body("series 1: no metric name (label \"__name__\")");
	write_expect(f, nn, 1, 400, err);
	free(err);
	assert_int_equal(stat_at(f, "ingest.rejected.syntax"), 1);
}

/* Series repeating the label names of the one before take the mapped
 * names daemon/promwrite.c remembered for them (its name memo): the
 * same rows as mapping each anew; a series with as many labels but
 * another name is mapped and checked again (refused here for a name
 * given twice in another case), and an empty value is still no label. */
static void test_label_memo(void **state)
{
	struct tsd_test_http *f = *state;
	static const char *const s1[] = {"__name__", "m", "job", "a", "instance", "x", NULL};
	static const char *const s2[] = {"__name__", "m", "job", "b", "instance", "y", NULL};
	static const char *const s3[] = {"__name__", "m", "job", "c", "Job", "z", NULL};
	static const char *const s4[] = {"__name__", "m", "job", "d", "instance", "w", NULL};
	static const char *const s5[] = {"__name__", "m", "job", "", "instance", "v", NULL};
	static const int64_t ms1[] = {T0};
	static const double one[] = {1};
	const struct tseries series[] = {
		{s1, 1, ms1, one}, {s2, 1, ms1, one}, {s3, 1, ms1, one}, {s4, 1, ms1, one},
		{s5, 1, ms1, one},
	};
	char *err = error_body("series 3: label \"Job\" given twice (as mapped)");
	write_expect(f, series, 5, 400, err);
	free(err);
	expect_call(f, "{\"op\":\"query\",\"table\":\"m\"}",
	            "{\"rows\":[[\"v\",\"\",1795305600000000000,1],"
	            "[\"w\",\"d\",1795305600000000000,1],"
	            "[\"x\",\"a\",1795305600000000000,1],"
	            "[\"y\",\"b\",1795305600000000000,1]]}\n"
	            "{\"ok\":true,\"count\":4,\"more\":false}\n");
	assert_int_equal(stat_at(f, "ingest.rows_stored"), 4);
	assert_int_equal(stat_at(f, "ingest.rows_missing_tags"), 1);
	assert_int_equal(stat_at(f, "ingest.rejected.duplicate"), 1);
	/* an empty label name, twice: the second series compares its names
	 * with the memo's, the empty one NULL (UB in memcmp even for 0 bytes;
	 * fuzz_http's ub-empty-label-name-memcmp, under SANITIZE=1) */
	static const char *const s6[] = {"__name__", "m", "", "e", NULL};
	const struct tseries empty_names[] = {{s6, 1, ms1, one}, {s6, 1, ms1, one}};
	err = error_body("series 1: table \"m\": label \"_\" is not a string key column of the "
	                 "table");
	write_expect(f, empty_names, 2, 400, err);
	free(err);
}

/* Series whose labels are those of the series before but for the
 * metric name take its mapping whole (daemon/promwrite.c same_labels):
 * the same rows as mapping each anew; a metric name that is not valid
 * UTF-8 or is empty, or another label where __name__ was, is still
 * refused; the series after a refused one are mapped again. */
static void test_label_set(void **state)
{
	struct tsd_test_http *f = *state;
	static const char *const s1[] = {"__name__", "m1", "job", "a", "instance", "x", NULL};
	static const char *const s2[] = {"__name__", "m2", "job", "a", "instance", "x", NULL};
	static const char *const s3[] = {"__name__", "m2", "job", "b", "instance", "x", NULL};
	static const char *const bad[] = {"__name__", "m\xff", "job", "b", "instance", "x", NULL};
	static const char *const none[] = {"__name__", "", "job", "a", "instance", "x", NULL};
	static const char *const s5[] = {"job", "a", "__name__", "m1", "instance", "x", NULL};
	static const char *const zoned[] = {"job", "a", "zone", "eu", "instance", "x", NULL};
	static const int64_t t1[] = {T0}, t2[] = {T0 + 1000};
	static const double one[] = {1}, two[] = {2};
	/* each refused series follows one that passed: the one whose
	 * mapping it would take */
	const struct tseries series[] = {
		{s1, 1, t1, one}, {s2, 1, t1, one}, {s3, 1, t1, one}, {bad, 1, t1, one},
		{s2, 1, t2, two}, {none, 1, t1, one}, {s5, 1, t2, two}, {zoned, 1, t1, one},
	};
	char *err = error_body("series 4: a label name or value is not valid UTF-8");
	write_expect(f, series, 8, 400, err);
	free(err);
	expect_call(f, "{\"op\":\"query\",\"table\":\"m1\"}",
	            "{\"rows\":[[\"x\",\"a\",1795305600000000000,1],"
	            "[\"x\",\"a\",1795305601000000000,2]]}\n"
	            "{\"ok\":true,\"count\":2,\"more\":false}\n");
	expect_call(f, "{\"op\":\"query\",\"table\":\"m2\"}",
	            "{\"rows\":[[\"x\",\"a\",1795305600000000000,1],"
	            "[\"x\",\"a\",1795305601000000000,2],"
	            "[\"x\",\"b\",1795305600000000000,1]]}\n"
	            "{\"ok\":true,\"count\":3,\"more\":false}\n");
	assert_int_equal(stat_at(f, "ingest.rows_stored"), 5);
	assert_int_equal(stat_at(f, "ingest.rejected.syntax"), 2);
	assert_int_equal(stat_at(f, "ingest.tables_created"), 2);
}

/* Samples the table cannot take for their time are refused one by one
 * (reason time), the others of their series stored: older than the TTL
 * of the tables made (--ingest-default-ttl), more than max-future (one
 * day) ahead, or whose ns pass int64 (reason range). */
static void test_time(void **state)
{
	struct tsd_test_http *f = *state;
	static const char *const up[] = {"__name__", "up", "job", "node", NULL};
	struct timespec tv;
	clock_gettime(CLOCK_REALTIME, &tv); /* the daemon's clock */
	int64_t now_ms = (int64_t)tv.tv_sec * 1000 + tv.tv_nsec / 1000000;
	const int64_t ms[] = {now_ms - 7200000, now_ms - 60000, now_ms + 2 * 86400000LL,
	                      INT64_C(9223372036855), now_ms};
	const double v[] = {1, 2, 3, 4, 5};
	const struct tseries series[] = {{up, 5, ms, v}};
	char *msg = tsd_test_fmt("series 1: table \"up\": timestamp %lld ms is older than the table's TTL",
	                (long long)ms[0]), *err = error_body(msg);
	write_expect(f, series, 1, 400, err);
	free(err);
	free(msg);
	char *want = tsd_test_fmt("{\"rows\":[[\"node\",%lld,2],[\"node\",%lld,5]]}\n"
	                 "{\"ok\":true,\"count\":2,\"more\":false}\n",
	                 (long long)ms[1] * 1000000, (long long)ms[4] * 1000000);
	expect_call(f, "{\"op\":\"query\",\"table\":\"up\"}", want);
	free(want);
	assert_int_equal(stat_at(f, "ingest.rejected.time"), 2);
	assert_int_equal(stat_at(f, "ingest.rejected.range"), 1);
	assert_int_equal(stat_at(f, "ingest.rows_stored"), 2);
}

/* What the body decodes to must be snappy, then a WriteRequest: a 400
 * otherwise, and nothing stored. */
static void test_bad_bodies(void **state)
{
	struct tsd_test_http *f = *state;
	char *got = NULL, *err, *body;
	size_t len;
	/* not snappy: the length prefix runs off the end */
	static const char bad_snappy[] = "\xff\xff\xff";
	err = error_body("snappy: the body is not snappy-compressed data (block format, as remote "
	                 "write sends); nothing was stored");
	assert_int_equal(post(f->http, bad_snappy, 3, &got), 400);
	assert_string_equal(got, err);
	free(got);
	/* a sane length, then a copy reaching before the start */
	assert_int_equal(post(f->http, "\x05\x01\x10", 3, &got), 400);
	free(err);
	err = error_body("snappy: the compressed body is damaged; nothing was stored");
	assert_string_equal(got, err);
	free(got);
	free(err);
	/* valid snappy, not protobuf: a field 1 (length-delimited) longer
	 * than what follows */
	body = snappy("\x0a\x7f\x01", 3, &len);
	assert_int_equal(post(f->http, body, len, &got), 400);
	free(body);
	err = error_body("protobuf: the body (3 bytes once decoded from snappy) is not a remote "
	                 "write WriteRequest; nothing was stored");
	assert_string_equal(got, err);
	free(got);
	free(err);
	/* valid snappy, a wire type protobuf has not (7) */
	body = snappy("\x0f", 1, &len);
	assert_int_equal(post(f->http, body, len, &got), 400);
	free(body);
	free(got);
	/* the empty request is a valid one, and stores nothing */
	body = snappy("", 0, &len);
	assert_int_equal(post(f->http, body, len, &got), 204);
	assert_string_equal(got, "");
	free(got);
	free(body);
	expect_call(f, "{\"op\":\"tables\"}", "{\"ok\":true,\"tables\":[]}\n");
	assert_int_equal(stat_at(f, "ingest.rows_stored"), 0);
}

/* A body whose decoded size passes http-max-body: 413, before decoding. */
static void test_too_large(void **state)
{
	struct tsd_test_http *f = *state;
	static char zeros[4096];
	char *got = NULL, *err;
	size_t len;
	char *body = snappy(zeros, sizeof zeros, &len);
	assert_true(len < 1024);
	assert_int_equal(post(f->http, body, len, &got), 413);
	err = error_body("the body is larger than http-max-body (1024 bytes) once decoded from "
	                 "snappy (4096 bytes)");
	assert_string_equal(got, err);
	free(err);
	free(got);
	free(body);
}

#define T(name, fn, setup) {"promwrite_" name, fn, setup, teardown, NULL}

int main(void)
{
	const struct CMUnitTest tests[] = {
		T("series", test_series, setup),
		T("retry", test_retry, setup),
		T("new_label", test_new_label, setup),
		T("label_memo", test_label_memo, setup),
		T("label_set", test_label_set, setup),
		T("time", test_time, setup_ttl),
		T("bad_bodies", test_bad_bodies, setup),
		T("too_large", test_too_large, setup_small_body),
	};
	const char *filter = getenv("TSD_TEST_FILTER");
	if (filter)
		cmocka_set_test_filter(filter);
	return cmocka_run_group_tests_name("promwrite", tests, NULL, NULL);
}
