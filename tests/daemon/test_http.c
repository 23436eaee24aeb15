/*
 * test_http.c -- tsstored's HTTP listener end to end (tsstore-http(7)):
 * a real daemon with --listen http:127.0.0.1:PORT on a free loopback
 * port, spoken to in raw HTTP/1.1 over a socket, so that every byte of
 * the requests is the test's (pipelining, chunking, gzip made with zlib
 * here, malformed and oversized requests) and every response is checked
 * whole.
 *
 * Responses are compared as text, status line and headers byte for
 * byte, but for the Date header (the time of day), which read_response
 * leaves out after checking that it is there.
 *
 * Each test starts its own daemon (its limits given as arguments); the
 * teardown kills it and removes its directory.  TSD_TEST_FILTER=PATTERN
 * runs only the tests whose names match (http_gzip, http_auth, ...); TSD_TEST_VERBOSE=1 sends the
 * daemon's log to stderr.
 */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include <jansson.h>
#include <tsstore.h>
#include <zlib.h>

#include "support_client.h"
#include "support_http.h"

#define WAIT TSD_TEST_TIMEOUT_MS
#define VERSION_HEADER "X-Tsstore-Version: " TS_VERSION_STRING "\r\n"

struct fixture {
	struct tsd_test_daemon *d;
	struct tsd_test_conn *c;          /* over HTTP */
};

/* Read one response from c (tsd_test_read_http; none of its body for
 * a HEAD, head): every line of the head ends CRLF, and every response
 * but a 100 is dated.  Returns TSD_TEST_LINE, or the failure of
 * tsd_test_read_http. */
static int read_response(struct tsd_test_conn *c, int head, struct tsd_test_response *r)
{
	int rc = tsd_test_read_http(c, WAIT, head, r);
	if (rc == TSD_TEST_LINE) {
		assert_false(r->bare_lf);
		if (r->status != 100)
			assert_true(r->dated);
	}
	return rc;
}

/* Send request (exact bytes) on c and read its response. */
static void call(struct tsd_test_conn *c, const char *request, struct tsd_test_response *r)
{
	assert_int_equal(tsd_test_send(c, request, strlen(request)), 0);
	assert_int_equal(read_response(c, strncmp(request, "HEAD ", 5) == 0, r), TSD_TEST_LINE);
}

/* Assert the next response on c is head and body exactly. */
static void expect_next(struct tsd_test_conn *c, const char *head, const char *body)
{
	struct tsd_test_response r;
	assert_int_equal(read_response(c, 0, &r), TSD_TEST_LINE);
	assert_string_equal(r.head, head);
	assert_string_equal(r.body, body);
	tsd_test_response_free(&r);
}

/* Send request and assert its response is head and body exactly. */
static void expect(struct tsd_test_conn *c, const char *request, const char *head,
                   const char *body)
{
	struct tsd_test_response r;
	call(c, request, &r);
	assert_string_equal(r.head, head);
	assert_string_equal(r.body, body);
	tsd_test_response_free(&r);
}

/* The head of a JSON response of status (reason) with a body of len
 * bytes; closes: with "Connection: close". */
static char *json_head(const char *status, size_t len, int closes)
{
	return tsd_test_fmt("HTTP/1.1 %s\r\n" VERSION_HEADER "Content-Type: application/json\r\n"
	           "Content-Length: %zu\r\n%s\r\n", status, len, closes ? "Connection: close\r\n" : "");
}

/* Send request and assert the response is the error {"error": msg}
 * with status (e.g. "404 Not Found"), and extra headers (e.g. "Allow:
 * ...\r\n", or ""). */
static void expect_error(struct tsd_test_conn *c, const char *request, const char *status,
                         const char *extra, int closes, const char *msg)
{
	json_t *m = json_string(msg);
	char *text = json_dumps(m, JSON_ENCODE_ANY);
	char *body = tsd_test_fmt("{\"error\":%s}\n", text);
	char *head = tsd_test_fmt("HTTP/1.1 %s\r\n" VERSION_HEADER "Content-Type: application/json\r\n"
	                 "Content-Length: %zu\r\n%s%s\r\n", status, strlen(body), extra,
	                 closes ? "Connection: close\r\n" : "");
	expect(c, request, head, body);
	free(head);
	free(body);
	free(text);
	json_decref(m);
}

/* The daemon closes c: the next read sees the end of the stream. */
static void expect_eof(struct tsd_test_conn *c)
{
	char *line = NULL;
	assert_int_equal(tsd_test_read_line(c, WAIT, &line, NULL), TSD_TEST_EOF);
}

static const char ping_head[] = "HTTP/1.1 204 No Content\r\n" VERSION_HEADER "\r\n";
static const char ping[] = "GET /ping HTTP/1.1\r\nHost: t\r\n\r\n";

/* ---- Reading back (the JSON-lines protocol, over the unix socket) ---- */

/* The rows the JSON-lines request req (a query) returns, as one JSON
 * array (the caller decrefs it); asserts the ok line's count agrees. */
static json_t *query_rows(struct tsd_test_daemon *d, const char *req)
{
	struct tsd_test_conn *u = tsd_test_connect(d, TSD_TEST_UNIX);
	json_t *lines = NULL, *line, *rows = json_array();
	size_t i;
	assert_non_null(u);
	assert_int_equal(tsd_test_send_line(u, req), 0);
	assert_int_equal(tsd_test_read_response(u, WAIT, &lines, NULL), 0);
	json_array_foreach(lines, i, line)
		if (json_object_get(line, "rows"))
			json_array_extend(rows, json_object_get(line, "rows"));
	line = json_array_get(lines, json_array_size(lines) - 1);
	assert_true(json_is_true(json_object_get(line, "ok")));
	assert_int_equal(json_integer_value(json_object_get(line, "count")), json_array_size(rows));
	json_decref(lines);
	tsd_test_close(u);
	return rows;
}

/* Assert the query req returns n rows, want as compact JSON. */
static void expect_rows(struct tsd_test_daemon *d, const char *req, size_t n, const char *want)
{
	json_t *rows = query_rows(d, req);
	char *got = json_dumps(rows, JSON_COMPACT);
	assert_int_equal(json_array_size(rows), n);
	assert_string_equal(got, want);
	free(got);
	json_decref(rows);
}

/* Assert table holds n rows. */
static void expect_count(struct tsd_test_daemon *d, const char *table, size_t n)
{
	char *req = tsd_test_fmt("{\"op\":\"query\",\"table\":\"%s\"}", table);
	json_t *rows = query_rows(d, req);
	assert_int_equal(json_array_size(rows), n);
	json_decref(rows);
	free(req);
}

/* ---- Fixtures ---- */

static int teardown(void **state)
{
	struct fixture *f = *state;
	if (!f)
		return 0;
	tsd_test_close(f->c);
	tsd_test_daemon_free(f->d);
	free(f);
	*state = NULL;
	return 0;
}

/* A daemon with an HTTP listener and args (with "TOKEN" replaced by the
 * path of a file holding s3cret), and an HTTP connection to it. */
static int start_fixture(void **state, const char *const *args)
{
	const char *argv[TSD_TEST_ARGS_MAX + 1] = {NULL};
	char token[TSD_TEST_PATH_MAX];
	struct fixture *f = calloc(1, sizeof *f);
	FILE *tf;
	if (!f)
		return -1;
	*state = f;
	if (!(f->d = tsd_test_daemon_new()))
		goto fail;
	f->d->http = 1;
	snprintf(token, sizeof token, "%s/token", f->d->dir);
	for (int i = 0; args && args[i] && i < TSD_TEST_ARGS_MAX; i++)
		argv[i] = strcmp(args[i], "TOKEN") == 0 ? token : args[i];
	if (!(tf = fopen(token, "w")))
		goto fail;
	fputs("s3cret\n", tf);
	fclose(tf);
	if (tsd_test_daemon_start(f->d, argv) < 0 || !(f->c = tsd_test_connect(f->d, TSD_TEST_HTTP)))
		goto fail;
	return 0;
fail:
	if (f->d)
		tsd_test_daemon_dump_log(f->d);
	teardown(state);
	return -1;
}

static int setup(void **state) { return start_fixture(state, NULL); }

static int setup_limits(void **state)
{
	static const char *const args[] = {"--http-max-body", "1k", "--http-max-header", "2k", NULL};
	return start_fixture(state, args);
}

static int setup_idle(void **state)
{
	static const char *const args[] = {"--idle-timeout", "1s", NULL};
	return start_fixture(state, args);
}

static int setup_max_connections(void **state)
{
	static const char *const args[] = {"--max-connections", "2", NULL};
	return start_fixture(state, args);
}

static int setup_token(void **state)
{
	static const char *const args[] = {"--token", "TOKEN", NULL};
	return start_fixture(state, args);
}

static int setup_read(void **state)
{
	static const char *const args[] = {"--loopback-access", "read", NULL};
	return start_fixture(state, args);
}

static int setup_none(void **state)
{
	static const char *const args[] = {"--loopback-access", "none", NULL};
	return start_fixture(state, args);
}

static int setup_token_write(void **state)
{
	static const char *const args[] = {"--token", "TOKEN", "--loopback-access", "write", NULL};
	return start_fixture(state, args);
}

/* ---- The endpoints ---- */

static void test_ping(void **state)
{
	struct fixture *f = *state;
	expect(f->c, ping, ping_head, "");
	/* empty header values (tests/fuzz/http/ub-empty-header-value) */
	expect(f->c, "GET /ping HTTP/1.1\r\nExpect:\r\nContent-Encoding: \r\nAuthorization:\r\n\r\n",
	       ping_head, "");
	/* HEAD too, as InfluxDB clients send it */
	expect(f->c, "HEAD /ping HTTP/1.1\r\nHost: t\r\n\r\n", ping_head, "");
}

static void test_health(void **state)
{
	struct fixture *f = *state;
	char *head = json_head("200 OK", 18, 0);
	expect(f->c, "GET /health HTTP/1.1\r\nHost: t\r\n\r\n", head, "{\"status\":\"pass\"}\n");
	/* HEAD: the same head, no body */
	expect(f->c, "HEAD /health HTTP/1.1\r\nHost: t\r\n\r\n", head, "");
	free(head);
}

/* The line of text that starts with prefix, or fail. */
static char *line_of(const char *text, const char *prefix)
{
	size_t n = strlen(prefix);
	for (const char *p = text; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
		if (strncmp(p, prefix, n) == 0)
			return strndup(p, strcspn(p, "\n"));
	fail_msg("no line starting with \"%s\" in the metrics", prefix);
	return NULL;
}

static void expect_line(const char *text, const char *prefix, const char *want)
{
	char *got = line_of(text, prefix);
	assert_string_equal(got, want);
	free(got);
}

static void test_metrics(void **state)
{
	struct fixture *f = *state;
	struct tsd_test_conn *u = tsd_test_connect(f->d, TSD_TEST_UNIX);
	struct tsd_test_response r;
	char *got;
	assert_non_null(u);
	static const char create[] =
		"{\"op\":\"create\",\"table\":\"m\",\"columns\":[{\"name\":\"host\","
		"\"type\":\"string\"},{\"name\":\"ts\",\"type\":\"timestamp\"},"
		"{\"name\":\"v\",\"type\":\"double\"}],\"key\":[\"host\",\"ts\"]}";
	static const char insert[] =
		"{\"op\":\"insert\",\"table\":\"m\",\"rows\":[[\"a\",1735689600000000000,1],"
		"[\"b\",1735689600000000000,2],[\"c\",1735689600000000000,3]]}";
	static const char scrape[] = "GET /metrics HTTP/1.1\r\nHost: t\r\n\r\n";
	got = tsd_test_call(u, create);
	assert_string_equal(got, "{\"ok\":true}\n");
	free(got);
	got = tsd_test_drop_version(tsd_test_call(u, insert));
	assert_string_equal(got, "{\"ok\":true,\"inserted\":3}\n");
	free(got);
	tsd_test_close(u);
	expect(f->c, ping, ping_head, "");
	call(f->c, scrape, &r);
	assert_int_equal(r.status, 200);
	assert_non_null(strstr(r.head, "Content-Type: text/plain; version=0.0.4; charset=utf-8\r\n"));
	/* the format: every line a comment "# HELP|TYPE name ..." or a sample
	 * "name{labels} value" or "name value", each name HELP'd once, before
	 * its TYPE, and the body ends with a newline */
	assert_true(r.len > 0 && r.body[r.len - 1] == '\n');
	int samples = 0;
	for (char *p = r.body, *nl; *p; p = nl + 1) {
		nl = strchr(p, '\n');
		assert_non_null(nl);
		*nl = '\0';
		if (strncmp(p, "# HELP ", 7) == 0) {
			char name[128], help[160], type[160];
			assert_int_equal(sscanf(p + 7, "%127s", name), 1);
			assert_true(strncmp(name, "tsstore_", 8) == 0);
			snprintf(help, sizeof help, "# HELP %s ", name);
			/* HELP'd once: no second HELP line for it further on */
			assert_null(strstr(nl + 1, help));
			snprintf(type, sizeof type, "# TYPE %s ", name);
			assert_true(strncmp(nl + 1, type, strlen(type)) == 0);
		} else if (strncmp(p, "# TYPE ", 7) == 0) {
			char name[128], type[32];
			assert_int_equal(sscanf(p + 7, "%127s %31s", name, type), 2);
			assert_true(strcmp(type, "counter") == 0 || strcmp(type, "gauge") == 0 ||
			            strcmp(type, "histogram") == 0);
		} else {
			char *sp = strrchr(p, ' '), *end;
			assert_non_null(sp);
			assert_true(strncmp(p, "tsstore_", 8) == 0);
			strtod(sp + 1, &end);
			assert_true(end > sp + 1 && *end == '\0');
			samples++;
		}
		*nl = '\n';
	}
	assert_true(samples > 50);
	expect_line(r.body, "# TYPE tsstore_table_rows ", "# TYPE tsstore_table_rows gauge");
	expect_line(r.body, "tsstore_table_rows{", "tsstore_table_rows{table=\"m\"} 3");
	expect_line(r.body, "tsstore_table_tablets{", "tsstore_table_tablets{table=\"m\"} 0");
	expect_line(r.body, "tsstore_table_filling_tablets{",
	            "tsstore_table_filling_tablets{table=\"m\"} 1");
	expect_line(r.body, "tsstore_table_tablets_quarantined_total{",
	            "tsstore_table_tablets_quarantined_total{table=\"m\"} 0");
	expect_line(r.body, "tsstore_table_rows_inserted_total{",
	            "tsstore_table_rows_inserted_total{table=\"m\"} 3");
	expect_line(r.body, "tsstore_rows_in_total ", "tsstore_rows_in_total 3");
	expect_line(r.body, "tsstore_requests_total{op=\"insert\"}",
	            "tsstore_requests_total{op=\"insert\"} 1");
	expect_line(r.body, "tsstore_requests_total{op=\"create\"}",
	            "tsstore_requests_total{op=\"create\"} 1");
	expect_line(r.body, "tsstore_requests_total{op=\"query\"}",
	            "tsstore_requests_total{op=\"query\"} 0");
	expect_line(r.body, "# TYPE tsstore_request_duration_seconds ",
	            "# TYPE tsstore_request_duration_seconds histogram");
	expect_line(r.body, "tsstore_request_duration_seconds_bucket{op=\"insert\",le=\"+Inf\"}",
	            "tsstore_request_duration_seconds_bucket{op=\"insert\",le=\"+Inf\"} 1");
	expect_line(r.body, "tsstore_request_duration_seconds_count{op=\"insert\"}",
	            "tsstore_request_duration_seconds_count{op=\"insert\"} 1");
	expect_line(r.body, "tsstore_request_duration_seconds_bucket{op=\"insert\",le=\"17.",
	            "tsstore_request_duration_seconds_bucket{op=\"insert\",le=\"17.179869184\"} 1");
	expect_line(r.body, "tsstore_http_requests_total{",
	            "tsstore_http_requests_total{path=\"/ping\",code=\"204\"} 1");
	expect_line(r.body, "tsstore_connections_open ", "tsstore_connections_open 1");
	/* the stats op has the HTTP counters too */
	u = tsd_test_connect(f->d, TSD_TEST_UNIX);
	assert_non_null(u);
	got = tsd_test_call(u, "{\"op\":\"stats\"}");
	assert_non_null(got);
	json_t *st = json_loads(got, 0, NULL);
	assert_non_null(st);
	char *http = json_dumps(json_object_get(st, "http_requests"), JSON_COMPACT);
	assert_string_equal(http, "{\"/ping\":{\"204\":1},\"/metrics\":{\"200\":1}}");
	assert_true(json_integer_value(json_object_get(st, "bytes_in")) > 0);
	assert_true(json_integer_value(json_object_get(st, "bytes_out")) > 0);
	free(http);
	json_decref(st);
	free(got);
	tsd_test_close(u);
	expect_line(r.body, "tsstore_connections_accepted_total ",
	            "tsstore_connections_accepted_total 5"); /* 3 readiness probes, u, f->c */
	/* every byte the daemon read: the two lines, the ping, the scrape */
	char *bytes = tsd_test_fmt("tsstore_received_bytes_total %zu",
	                  strlen(create) + 1 + strlen(insert) + 1 + strlen(ping) + strlen(scrape));
	expect_line(r.body, "tsstore_received_bytes_total ", bytes);
	free(bytes);
	/* no query ran: no histogram samples for it */
	assert_null(strstr(r.body, "tsstore_request_duration_seconds_count{op=\"query\"}"));
	tsd_test_response_free(&r);
	/* the scrape itself is counted by the next one */
	call(f->c, "GET /metrics HTTP/1.1\r\nHost: t\r\n\r\n", &r);
	expect_line(r.body, "tsstore_http_requests_total{path=\"/metrics\"",
	            "tsstore_http_requests_total{path=\"/metrics\",code=\"200\"} 1");
	expect_line(r.body, "tsstore_http_request_duration_seconds_count{path=\"/metrics\"}",
	            "tsstore_http_request_duration_seconds_count{path=\"/metrics\"} 1");
	tsd_test_response_free(&r);
}

/* The line protocol endpoints store (204); remote write wants snappy. */
static void test_write_endpoints(void **state)
{
	struct fixture *f = *state;
	expect(f->c, "POST /write?db=x HTTP/1.1\r\nHost: t\r\nContent-Length: 10\r\n\r\ncpu v=1 5\n",
	       ping_head, "");
	/* an empty body stores nothing, and is no error */
	expect(f->c, "POST /api/v2/write?bucket=b&org=o HTTP/1.1\r\nHost: t\r\n"
	       "Content-Length: 0\r\n\r\n", ping_head, "");
	expect(f->c, "POST /api/v2/write?bucket=b&org=o HTTP/1.1\r\nHost: t\r\n"
	       "Content-Length: 10\r\n\r\ncpu v=2 6\n", ping_head, "");
	/* remote write takes snappy (test_promwrite.c tests it whole) */
	expect_error(f->c, "POST /api/v1/write HTTP/1.1\r\nHost: t\r\nContent-Length: 3\r\n\r\nabc",
	             "400 Bad Request", "", 0,
	             "snappy: the compressed body is damaged; nothing was stored");
	expect(f->c, ping, ping_head, "");
}

static void test_not_found_method(void **state)
{
	struct fixture *f = *state;
	expect_error(f->c, "GET /nope?x=1 HTTP/1.1\r\nHost: t\r\n\r\n", "404 Not Found", "", 0,
	             "no such path: /nope (tsstore-http(7) lists the endpoints)");
	expect_error(f->c, "GET / HTTP/1.1\r\nHost: t\r\n\r\n", "404 Not Found", "", 0,
	             "no such path: / (tsstore-http(7) lists the endpoints)");
	/* a refused request's body is read and dropped: the connection goes on */
	expect_error(f->c, "POST /ping HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\n\r\nhello",
	             "405 Method Not Allowed", "Allow: GET, HEAD\r\n", 0,
	             "POST /ping: the method is not allowed (GET or HEAD)");
	expect_error(f->c, "GET /write HTTP/1.1\r\nHost: t\r\n\r\n", "405 Method Not Allowed",
	             "Allow: POST\r\n", 0, "GET /write: the method is not allowed (POST)");
	expect_error(f->c, "DELETE /metrics HTTP/1.1\r\nHost: t\r\n\r\n", "405 Method Not Allowed",
	             "Allow: GET, HEAD\r\n", 0,
	             "DELETE /metrics: the method is not allowed (GET or HEAD)");
	expect_error(f->c, "POST /write HTTP/1.1\r\nHost: t\r\nContent-Encoding: br\r\n"
	             "Content-Length: 2\r\n\r\nxx", "415 Unsupported Media Type", "", 0,
	             "Content-Encoding \"br\" is not supported (gzip or identity)");
	expect(f->c, ping, ping_head, "");
}

/* ---- Connections ---- */

static void test_keep_alive(void **state)
{
	struct fixture *f = *state;
	char *head = json_head("200 OK", 18, 0);
	expect(f->c, ping, ping_head, "");
	expect(f->c, "GET /health HTTP/1.1\r\nHost: t\r\n\r\n", head, "{\"status\":\"pass\"}\n");
	free(head);
	/* HTTP/1.0 asking for keep-alive is told it is kept */
	expect(f->c, "GET /ping HTTP/1.0\r\nConnection: keep-alive\r\n\r\n",
	       "HTTP/1.1 204 No Content\r\n" VERSION_HEADER "Connection: keep-alive\r\n\r\n", "");
	/* "Connection: close": answered, then closed */
	expect(f->c, "GET /ping HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n",
	       "HTTP/1.1 204 No Content\r\n" VERSION_HEADER "Connection: close\r\n\r\n", "");
	expect_eof(f->c);
	/* HTTP/1.0 without keep-alive closes too */
	tsd_test_close(f->c);
	assert_non_null(f->c = tsd_test_connect(f->d, TSD_TEST_HTTP));
	expect(f->c, "GET /ping HTTP/1.0\r\n\r\n",
	       "HTTP/1.1 204 No Content\r\n" VERSION_HEADER "Connection: close\r\n\r\n", "");
	expect_eof(f->c);
}

static void test_pipelining(void **state)
{
	struct fixture *f = *state;
	static const char reqs[] =
		"GET /ping HTTP/1.1\r\nHost: t\r\n\r\n"
		"GET /health HTTP/1.1\r\nHost: t\r\n\r\n"
		"POST /write HTTP/1.1\r\nHost: t\r\nContent-Length: 8\r\n\r\nm v=1 1\nGET /nope HTTP/1.1\r\n\r\n"
		"GET /ping HTTP/1.1\r\nHost: t\r\n\r\n";
	const char *w404 = "{\"error\":\"no such path: /nope (tsstore-http(7) lists the endpoints)\"}\n";
	char *h200 = json_head("200 OK", 18, 0);
	char *h404 = json_head("404 Not Found", strlen(w404), 0);
	/* many rounds in one write each, answered in order */
	for (int round = 0; round < 20; round++) {
		assert_int_equal(tsd_test_send(f->c, reqs, sizeof reqs - 1), 0);
		expect_next(f->c, ping_head, "");
		expect_next(f->c, h200, "{\"status\":\"pass\"}\n");
		expect_next(f->c, ping_head, ""); /* the write: stored, then ignored */
		expect_next(f->c, h404, w404);
		expect_next(f->c, ping_head, "");
	}
	/* more than the 1024 requests a connection may have waiting, in one
	 * write: parsing pauses and goes on as they run */
	size_t n = 3000, len = strlen(ping);
	char *many = malloc(n * len);
	assert_non_null(many);
	for (size_t i = 0; i < n; i++)
		memcpy(many + i * len, ping, len);
	assert_int_equal(tsd_test_send(f->c, many, n * len), 0);
	for (size_t i = 0; i < n; i++)
		expect_next(f->c, ping_head, "");
	free(many);
	/* and a byte at a time */
	for (size_t i = 0; i < sizeof reqs - 1; i++)
		assert_int_equal(tsd_test_send(f->c, reqs + i, 1), 0);
	expect_next(f->c, ping_head, "");
	expect_next(f->c, h200, "{\"status\":\"pass\"}\n");
	expect_next(f->c, ping_head, "");
	expect_next(f->c, h404, w404);
	expect_next(f->c, ping_head, "");
	free(h200);
	free(h404);
}

static void test_chunked(void **state)
{
	struct fixture *f = *state;
	/* lines cut across chunks, a chunk extension and a trailer */
	expect(f->c, "POST /write HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n"
	       "5\r\ncpu v\r\n7;ext=1\r\n=1 100\n\r\n10\r\ncpu v=2 200\ncpu \r\n8\r\nv=3 300\n\r\n"
	       "0\r\nTrailer: x\r\n\r\n", ping_head, "");
	expect_rows(f->d, "{\"op\":\"query\",\"table\":\"cpu\"}", 3,
	            "[[100,1],[200,2],[300,3]]");
	/* a bad chunk size: 400, and the connection closes */
	expect_error(f->c, "POST /write HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n"
	             "zz\r\n", "400 Bad Request", "", 1,
	             "malformed request: invalid character in chunk size header");
	expect_eof(f->c);
}

/* in[0..n) gzip-compressed (malloc'ed; *out_len bytes). */
static char *gzip(const char *in, size_t n, size_t *out_len)
{
	z_stream z;
	size_t cap = n + n / 10 + 64;
	char *out = malloc(cap);
	assert_non_null(out);
	memset(&z, 0, sizeof z);
	assert_int_equal(deflateInit2(&z, 6, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY), Z_OK);
	z.next_in = (unsigned char *)in;
	z.avail_in = (unsigned)n;
	z.next_out = (unsigned char *)out;
	z.avail_out = (unsigned)cap;
	assert_int_equal(deflate(&z, Z_FINISH), Z_STREAM_END);
	*out_len = cap - z.avail_out;
	deflateEnd(&z);
	return out;
}

/* POST path with the headers extra and body[0..n). */
static void post(struct tsd_test_conn *c, const char *path, const char *extra, const char *body,
                 size_t n)
{
	assert_int_equal(tsd_test_post(c, path, extra, body, n), 0);
}

static void expect_json_error(struct tsd_test_conn *c, const char *status, int closes,
                              const char *msg)
{
	char *body = tsd_test_fmt("{\"error\":\"%s\"}\n", msg), *head = json_head(status, strlen(body), closes);
	expect_next(c, head, body);
	free(head);
	free(body);
}

static void test_gzip(void **state)
{
	struct fixture *f = *state;
	size_t n = 100000, zlen, two_len;
	char *text = malloc(n + 1), *z, *two;
	assert_non_null(text);
	/* 5000 lines of 20 bytes: "gz,h=a v=1 00000017\n" */
	for (size_t i = 0; i < n / 20; i++)
		snprintf(text + i * 20, 21, "gz,h=a v=%zu %08zu\n", i % 10, i);
	z = gzip(text, n, &zlen);
	assert_true(zlen < n / 5);
	post(f->c, "/api/v2/write", "Content-Encoding: gzip\r\n", z, zlen);
	expect_next(f->c, ping_head, "");
	expect_rows(f->d, "{\"op\":\"query\",\"table\":\"gz\",\"ge\":[\"a\",4998]}", 2,
	            "[[\"a\",4998,8],[\"a\",4999,9]]");
	/* two gzip members one after the other decode as one body */
	two = malloc(2 * zlen);
	assert_non_null(two);
	memcpy(two, z, zlen);
	memcpy(two + zlen, z, zlen);
	two_len = 2 * zlen;
	/* (the same lines again: ignored, the table unchanged) */
	post(f->c, "/write", "Content-Encoding: GZIP\r\n", two, two_len);
	expect_next(f->c, ping_head, "");
	expect_rows(f->d, "{\"op\":\"query\",\"table\":\"gz\",\"ge\":[\"a\",4998]}", 2,
	            "[[\"a\",4998,8],[\"a\",4999,9]]");
	expect_count(f->d, "gz", 5000);
	/* not gzip: 400, and the connection goes on (the body was read) */
	post(f->c, "/write", "Content-Encoding: gzip\r\n", text, 100);
	expect_json_error(f->c, "400 Bad Request", 0, "gzip: incorrect header check");
	/* cut short */
	post(f->c, "/write", "Content-Encoding: gzip\r\n", z, zlen / 2);
	expect_json_error(f->c, "400 Bad Request", 0,
	                  "gzip: the body ends in the middle of the compressed stream");
	expect(f->c, ping, ping_head, "");
	free(two);
	free(z);
	free(text);
}

/* 100-continue: answered at once, before the body is sent. */
static void test_expect_continue(void **state)
{
	struct fixture *f = *state;
	struct tsd_test_response r;
	static const char head[] = "POST /write HTTP/1.1\r\nHost: t\r\nContent-Length: 6\r\n"
	                           "Expect: 100-continue\r\n\r\n";
	assert_int_equal(tsd_test_send(f->c, head, sizeof head - 1), 0);
	assert_int_equal(read_response(f->c, 1, &r), TSD_TEST_LINE);
	assert_string_equal(r.head, "HTTP/1.1 100 Continue\r\n\r\n");
	tsd_test_response_free(&r);
	assert_int_equal(tsd_test_send(f->c, "e v=1\n", 6), 0);
	expect_next(f->c, ping_head, "");
	expect_count(f->d, "e", 1);
	/* refused before its body: answered at once, and closed (the body
	 * the client holds back is never read) */
	expect_error(f->c, "POST /nope HTTP/1.1\r\nHost: t\r\nContent-Length: 4\r\n"
	             "Expect: 100-continue\r\n\r\n", "404 Not Found", "", 1,
	             "no such path: /nope (tsstore-http(7) lists the endpoints)");
	expect_eof(f->c);
}

/* ---- Hostile requests ---- */

static void test_bad_request_closes(void **state)
{
	struct fixture *f = *state;
	static const char reqs[] = "GET /ping HTTP/1.1\r\nHost: t\r\n\r\nHELLO THERE\r\n\r\n"
	                           "GET /ping HTTP/1.1\r\nHost: t\r\n\r\n";
	assert_int_equal(tsd_test_send(f->c, reqs, sizeof reqs - 1), 0);
	expect_next(f->c, ping_head, "");
	expect_json_error(f->c, "400 Bad Request", 1, "malformed request: invalid HTTP method");
	expect_eof(f->c);
	tsd_test_close(f->c);
	assert_non_null(f->c = tsd_test_connect(f->d, TSD_TEST_HTTP));
	expect_error(f->c, "GET /ping HTTP/9.9\r\n\r\n", "505 HTTP Version Not Supported", "", 1,
	             "HTTP/9.9 is not supported (HTTP/1.1 is)");
	expect_eof(f->c);
	tsd_test_close(f->c);
	assert_non_null(f->c = tsd_test_connect(f->d, TSD_TEST_HTTP));
	expect_error(f->c, "POST /write HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab",
	             "400 Bad Request", "", 1,
	             "malformed request: unexpected content-length header");
	expect_eof(f->c);
}

static void test_header_too_large(void **state)
{
	struct fixture *f = *state;
	char big[3000], *req;
	memset(big, 'x', sizeof big - 1);
	big[sizeof big - 1] = '\0';
	/* within http-max-header (2k): fine */
	expect(f->c, "GET /ping HTTP/1.1\r\nX-A: 0123456789012345678901234567890123456789\r\n\r\n",
	       ping_head, "");
	req = tsd_test_fmt("GET /ping HTTP/1.1\r\nHost: t\r\nX-Big: %s\r\n\r\n", big);
	expect_error(f->c, req, "431 Request Header Fields Too Large", "", 1,
	             "the request line and headers are larger than http-max-header (2048 bytes)");
	expect_eof(f->c);
	free(req);
	/* a URL too long is the same */
	tsd_test_close(f->c);
	assert_non_null(f->c = tsd_test_connect(f->d, TSD_TEST_HTTP));
	req = tsd_test_fmt("GET /ping?%s HTTP/1.1\r\n\r\n", big);
	expect_error(f->c, req, "431 Request Header Fields Too Large", "", 1,
	             "the request line and headers are larger than http-max-header (2048 bytes)");
	expect_eof(f->c);
	free(req);
}

static void test_body_too_large(void **state)
{
	struct fixture *f = *state;
	char body[1500], *z;
	size_t zlen;
	memset(body, 'y', sizeof body);
	/* 1024 bytes is http-max-body: fine (93 lines of 11 bytes and a
	 * blank line) */
	char lines[1025];
	for (int i = 0; i < 93; i++)
		snprintf(lines + i * 11, 12, "m v=1 %04d\n", i);
	lines[1023] = '\n';
	post(f->c, "/write", "", lines, 1024);
	expect_next(f->c, ping_head, "");
	expect_count(f->d, "m", 93);
	/* gzip that decodes past it: 413, the connection goes on */
	z = gzip(body, sizeof body, &zlen);
	post(f->c, "/write", "Content-Encoding: gzip\r\n", z, zlen);
	expect_json_error(f->c, "413 Content Too Large", 0,
	                  "the body is larger than http-max-body (1024 bytes) once decoded from gzip");
	free(z);
	/* a Content-Length past it: 413 without reading the body, and close */
	expect_error(f->c, "POST /write HTTP/1.1\r\nHost: t\r\nContent-Length: 1025\r\n\r\n",
	             "413 Content Too Large", "", 1,
	             "the body (Content-Length 1025) is larger than http-max-body (1024 bytes)");
	expect_eof(f->c);
	/* chunks that add up past it: the same */
	tsd_test_close(f->c);
	assert_non_null(f->c = tsd_test_connect(f->d, TSD_TEST_HTTP));
	static const char chunked[] = "POST /write HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n";
	assert_int_equal(tsd_test_send(f->c, chunked, sizeof chunked - 1), 0);
	for (int i = 0; i < 3; i++) {
		char *chunk = tsd_test_fmt("200\r\n%.512s\r\n", body);
		assert_int_equal(tsd_test_send(f->c, chunk, strlen(chunk)), 0);
		free(chunk);
	}
	expect_json_error(f->c, "413 Content Too Large", 1,
	                  "the body is larger than http-max-body (1024 bytes)");
	expect_eof(f->c);
}

static void test_slow_request(void **state)
{
	struct fixture *f = *state;
	struct timespec t0, t1;
	static const char part[] = "GET /ping HTTP/1.1\r\nHo";
	/* a keep-alive connection idle between requests is closed silently */
	expect(f->c, ping, ping_head, "");
	clock_gettime(CLOCK_MONOTONIC, &t0);
	expect_eof(f->c);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	assert_true(t1.tv_sec - t0.tv_sec <= 3);
	/* a request not finished within idle-timeout (1 s) from its first
	 * byte is answered 408 and closed, even while bytes keep coming */
	tsd_test_close(f->c);
	assert_non_null(f->c = tsd_test_connect(f->d, TSD_TEST_HTTP));
	assert_int_equal(tsd_test_send(f->c, part, sizeof part - 1), 0);
	for (int i = 0; i < 4; i++) {
		tsd_test_sleep_ms(300);
		if (tsd_test_send(f->c, "s", 1) < 0)
			break;
	}
	expect_json_error(f->c, "408 Request Timeout", 1,
	                  "the request was not received whole within idle-timeout (1000 ms); "
	                  "closing the connection");
	expect_eof(f->c);
}

/* Beyond max-connections (2): 503, then the connection closes.  The
 * readiness probes of the start may still count for a moment, so new
 * connections are opened until one is refused. */
static void test_max_connections(void **state)
{
	struct fixture *f = *state;
	struct tsd_test_conn *c[8] = {NULL};
	struct tsd_test_response r;
	int refused = 0;
	for (int i = 0; i < 8 && !refused; i++) {
		assert_non_null(c[i] = tsd_test_connect(f->d, TSD_TEST_HTTP));
		assert_int_equal(tsd_test_send(c[i], ping, strlen(ping)), 0);
		assert_int_equal(read_response(c[i], 0, &r), TSD_TEST_LINE);
		if (r.status == 503) {
			char *head = json_head("503 Service Unavailable", 33, 1);
			assert_string_equal(r.head, head);
			assert_string_equal(r.body, "{\"error\":\"too many connections\"}\n");
			expect_eof(c[i]);
			free(head);
			refused = 1;
		} else {
			assert_string_equal(r.head, ping_head);
		}
		tsd_test_response_free(&r);
	}
	assert_true(refused);
	for (int i = 0; i < 8; i++)
		tsd_test_close(c[i]);
}

/* The memory budget counts a body being received. */
static void test_body_memory(void **state)
{
	struct fixture *f = *state;
	struct tsd_test_conn *u = tsd_test_connect(f->d, TSD_TEST_UNIX);
	char *body = malloc(300001), *got;
	json_t *stats;
	assert_non_null(u);
	assert_non_null(body);
	/* 30000 lines of 20 bytes */
	for (int i = 0; i < 15000; i++)
		snprintf(body + i * 20, 21, "mem v=1 %011d\n", i);
	static const char head[] = "POST /write HTTP/1.1\r\nHost: t\r\nContent-Length: 600000\r\n\r\n";
	assert_int_equal(tsd_test_send(f->c, head, sizeof head - 1), 0);
	assert_int_equal(tsd_test_send(f->c, body, 300000), 0);
	/* the daemon has read what was sent when memory is at least that */
	long mem = 0;
	for (int i = 0; i < 200 && mem < 300000; i++) {
		got = tsd_test_call(u, "{\"op\":\"stats\"}");
		assert_non_null(got);
		stats = json_loads(got, 0, NULL);
		mem = (long)json_integer_value(json_object_get(stats, "request_memory"));
		json_decref(stats);
		free(got);
		if (mem < 300000)
			tsd_test_sleep_ms(10);
	}
	assert_true(mem >= 300000 && mem < 1200000);
	for (int i = 0; i < 15000; i++)
		snprintf(body + i * 20, 21, "mem v=1 %011d\n", 15000 + i);
	assert_int_equal(tsd_test_send(f->c, body, 300000), 0);
	expect_next(f->c, ping_head, "");
	expect_count(f->d, "mem", 30000);
	/* all of it given back */
	got = tsd_test_call(u, "{\"op\":\"stats\"}");
	stats = json_loads(got, 0, NULL);
	assert_true(json_integer_value(json_object_get(stats, "request_memory")) < 300000);
	json_decref(stats);
	free(got);
	free(body);
	tsd_test_close(u);
}

/* ---- Line protocol, end to end ---- */

/* POST body[0..n) to path as chunks of at most size bytes. */
static void post_chunked(struct tsd_test_conn *c, const char *path, const char *body, size_t n,
                         size_t size)
{
	char *head = tsd_test_fmt("POST %s HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n", path);
	assert_int_equal(tsd_test_send(c, head, strlen(head)), 0);
	free(head);
	for (size_t o = 0; o < n; o += size) {
		size_t k = n - o < size ? n - o : size;
		char *sz = tsd_test_fmt("%zx\r\n", k);
		assert_int_equal(tsd_test_send(c, sz, strlen(sz)), 0);
		assert_int_equal(tsd_test_send(c, body + o, k), 0);
		assert_int_equal(tsd_test_send(c, "\r\n", 2), 0);
		free(sz);
	}
	assert_int_equal(tsd_test_send(c, "0\r\n\r\n", 5), 0);
}

/* The row of rows whose hostname (column 2) is host and ts (column 10)
 * is ts, as compact JSON (malloc'ed), or NULL. */
static char *tsbs_row(json_t *rows, const char *host, json_int_t ts)
{
	size_t i;
	json_t *row;
	json_array_foreach(rows, i, row)
		if (strcmp(json_string_value(json_array_get(row, 2)), host) == 0 &&
		    json_integer_value(json_array_get(row, 10)) == ts)
			return json_dumps(row, JSON_COMPACT);
	return NULL;
}

/* The first 2,000 lines of the TSBS cpu-only file (20 instants 10 s
 * apart of 100 hosts): 700 plain, 700 gzip-encoded, 600 chunked, each
 * answered 204; every row read back, with exact values for three; then
 * the whole batch again, as a collector retries it: 204, and the table
 * is the same. */
static void test_write_tsbs(void **state)
{
	struct fixture *f = *state;
	char cmd[TSD_TEST_PATH_MAX + 32], *line = NULL, *body, *z, *got, *before;
	size_t cap = 0, len = 0, cut[4] = {0}, zlen, i;
	ssize_t n;
	int lines = 0, per_host[100] = {0};
	json_t *rows, *row;
	if (access(TSBS_DATA, R_OK) != 0) {
		print_message("skipped: no %s\n", TSBS_DATA);
		skip();
	}
	snprintf(cmd, sizeof cmd, "gzip -dc %s", TSBS_DATA);
	FILE *p = popen(cmd, "r");
	assert_non_null(p);
	assert_non_null(body = malloc(4 << 20));
	for (; lines < 2000 && (n = getline(&line, &cap, p)) > 0; lines++) {
		memcpy(body + len, line, (size_t)n);
		len += (size_t)n;
		if (lines + 1 == 700 || lines + 1 == 1400)
			cut[(lines + 1) / 700] = len;
	}
	free(line);
	pclose(p);
	assert_int_equal(lines, 2000);
	cut[3] = len;
	post(f->c, "/write?db=tsbs", "", body, cut[1]);
	expect_next(f->c, ping_head, "");
	z = gzip(body + cut[1], cut[2] - cut[1], &zlen);
	post(f->c, "/write?db=tsbs&precision=ns", "Content-Encoding: gzip\r\n", z, zlen);
	expect_next(f->c, ping_head, "");
	free(z);
	post_chunked(f->c, "/write?db=tsbs", body + cut[2], cut[3] - cut[2], 4000);
	expect_next(f->c, ping_head, "");
	rows = query_rows(f->d, "{\"op\":\"query\",\"table\":\"cpu\"}");
	assert_int_equal(json_array_size(rows), 2000);
	json_array_foreach(rows, i, row) {
		int h = -1;
		assert_int_equal(json_array_size(row), 21);
		assert_int_equal(sscanf(json_string_value(json_array_get(row, 2)), "host_%d", &h), 1);
		assert_true(h >= 0 && h < 100);
		per_host[h]++;
	}
	for (int h = 0; h < 100; h++)
		assert_int_equal(per_host[h], 20);
	/* lines 1, 1001 and 2000 of the file */
	got = tsbs_row(rows, "host_0", 1795132800000000000);
	assert_string_equal(got, "[\"x64\",\"us-west-2b\",\"host_0\",\"Ubuntu16.10\",\"17\",\"us-west-2\","
	                    "\"17\",\"test\",\"0\",\"CHI\",1795132800000000000,99,52,58,94,82,14,46,0,50,38]");
	free(got);
	got = tsbs_row(rows, "host_0", 1795132900000000000);
	assert_string_equal(got, "[\"x64\",\"us-west-2b\",\"host_0\",\"Ubuntu16.10\",\"17\",\"us-west-2\","
	                    "\"17\",\"test\",\"0\",\"CHI\",1795132900000000000,98,47,60,93,88,13,42,6,48,37]");
	free(got);
	got = tsbs_row(rows, "host_99", 1795132990000000000);
	assert_string_equal(got, "[\"x86\",\"eu-west-1c\",\"host_99\",\"Ubuntu16.10\",\"46\",\"eu-west-1\","
	                    "\"3\",\"production\",\"0\",\"SF\",1795132990000000000,67,10,1,5,68,31,14,21,0,20]");
	free(got);
	before = json_dumps(rows, JSON_COMPACT);
	json_decref(rows);
	/* the retried batch, whole: idempotent */
	post(f->c, "/write?db=tsbs", "", body, len);
	expect_next(f->c, ping_head, "");
	rows = query_rows(f->d, "{\"op\":\"query\",\"table\":\"cpu\"}");
	got = json_dumps(rows, JSON_COMPACT);
	assert_int_equal(json_array_size(rows), 2000);
	assert_string_equal(got, before);
	free(got);
	free(before);
	json_decref(rows);
	free(body);
}

/* A bad line among good ones: 400 naming it (InfluxDB's partial write),
 * the good lines stored; the same batch again: the same answer, and the
 * rows unchanged. */
static void test_write_partial(void **state)
{
	struct fixture *f = *state;
	static const char body[] = "m,h=a v=1 1\nm,h=a v= 2\nm,h=a v=3 3\n";
	for (int round = 0; round < 2; round++) {
		post(f->c, "/write?db=x", "", body, sizeof body - 1);
		expect_json_error(f->c, "400 Bad Request", 0,
		                  "line 2: unable to parse 'm,h=a v= 2': field \\\"v\\\" has no value");
		expect_rows(f->d, "{\"op\":\"query\",\"table\":\"m\"}", 2, "[[\"a\",1,1],[\"a\",3,3]]");
	}
	/* the connection goes on */
	expect(f->c, ping, ping_head, "");
}

/* A field whose type conflicts with its column: that line refused, as
 * InfluxDB does; the others stored. */
static void test_write_type_conflict(void **state)
{
	struct fixture *f = *state;
	static const char first[] = "t,h=a v=1i 1\n", second[] = "t,h=a v=2i 2\nt,h=a v=2.5 3\n";
	post(f->c, "/api/v2/write?bucket=b&org=o", "", first, sizeof first - 1);
	expect_next(f->c, ping_head, "");
	post(f->c, "/api/v2/write?bucket=b&org=o", "", second, sizeof second - 1);
	expect_json_error(f->c, "400 Bad Request", 0,
	                  "line 2: table \\\"t\\\": field \\\"v\\\" is float, but column \\\"v\\\" is int64");
	expect_rows(f->d, "{\"op\":\"query\",\"table\":\"t\"}", 2, "[[\"a\",1,1],[\"a\",2,2]]");
}

/* The precision parameter: InfluxDB 1.x's names on /write, 2.x's on
 * /api/v2/write; another is 400 and nothing is stored. */
static void test_write_precision(void **state)
{
	struct fixture *f = *state;
	post(f->c, "/write?db=x&precision=s", "", "p,u=s v=1 1700000000\n", 21);
	expect_next(f->c, ping_head, "");
	post(f->c, "/write?db=x&precision=ms", "", "p,u=ms v=2 1700000000001\n", 25);
	expect_next(f->c, ping_head, "");
	post(f->c, "/write?db=x&precision=u", "", "p,u=u v=3 1700000000000002\n", 27);
	expect_next(f->c, ping_head, "");
	post(f->c, "/write?db=x&precision=m", "", "p,u=m v=4 28333333\n", 19);
	expect_next(f->c, ping_head, "");
	post(f->c, "/api/v2/write?bucket=b&precision=us", "", "p,u=v2us v=5 1700000000000003\n", 30);
	expect_next(f->c, ping_head, "");
	post(f->c, "/api/v2/write?bucket=b&precision=s", "", "p,u=v2s v=6 1700000001\n", 23);
	expect_next(f->c, ping_head, "");
	post(f->c, "/write?db=x&precision=", "", "p,u=ns v=7 1700000000000000004\n", 31);
	expect_next(f->c, ping_head, "");
	expect_rows(f->d, "{\"op\":\"query\",\"table\":\"p\"}", 7,
	            "[[\"m\",1699999980000000000,4],[\"ms\",1700000000001000000,2],"
	            "[\"ns\",1700000000000000004,7],[\"s\",1700000000000000000,1],"
	            "[\"u\",1700000000000002000,3],[\"v2s\",1700000001000000000,6],"
	            "[\"v2us\",1700000000000003000,5]]");
	post(f->c, "/write?db=x&precision=x", "", "p,u=x v=8 1\n", 12);
	expect_json_error(f->c, "400 Bad Request", 0,
	                  "precision \\\"x\\\" is not valid (ns, n, us, u, ms, s, m or h)");
	/* 1.x's names are not 2.x's */
	post(f->c, "/api/v2/write?bucket=b&precision=h", "", "p,u=x v=8 1\n", 12);
	expect_json_error(f->c, "400 Bad Request", 0,
	                  "precision \\\"h\\\" is not valid (ns, us, ms or s)");
	post(f->c, "/api/v2/write?bucket=b&precision=nanoseconds-please", "", "p,u=x v=8 1\n", 12);
	expect_json_error(f->c, "400 Bad Request", 0,
	                  "precision \\\"...\\\" is not valid (ns, us, ms or s)");
	expect_count(f->d, "p", 7);
}

/* /metrics counts what the line protocol did, tsstore_ingest_*. */
static void test_write_metrics(void **state)
{
	struct fixture *f = *state;
	static const char body[] = "k,h=a v=1 1\nk,h=a v=1 1\nk,h=b v=x 1\nk,h=b w=1 2\nq v=1 1\n";
	struct tsd_test_response r;
	post(f->c, "/write?db=x", "", body, sizeof body - 1);
	expect_json_error(f->c, "400 Bad Request", 0,
	                  "line 3: unable to parse 'k,h=b v=x 1': field \\\"v\\\": invalid value \\\"x\\\"");
	/* a new field on a later request: a column added */
	post(f->c, "/write?db=x", "", "k,h=a z=1 5\n", 12);
	expect_next(f->c, ping_head, "");
	call(f->c, "GET /metrics HTTP/1.1\r\nHost: t\r\n\r\n", &r);
	assert_int_equal(r.status, 200);
	expect_line(r.body, "# HELP tsstore_ingest_rows_stored_total ",
	            "# HELP tsstore_ingest_rows_stored_total Rows stored from line protocol.");
	expect_line(r.body, "# TYPE tsstore_ingest_rows_stored_total ",
	            "# TYPE tsstore_ingest_rows_stored_total counter");
	expect_line(r.body, "tsstore_ingest_requests_total ", "tsstore_ingest_requests_total 2");
	expect_line(r.body, "tsstore_ingest_rows_stored_total ", "tsstore_ingest_rows_stored_total 4");
	expect_line(r.body, "tsstore_ingest_duplicates_ignored_total ",
	            "tsstore_ingest_duplicates_ignored_total 1");
	expect_line(r.body, "tsstore_ingest_lines_rejected_total{reason=\"syntax\"}",
	            "tsstore_ingest_lines_rejected_total{reason=\"syntax\"} 1");
	expect_line(r.body, "tsstore_ingest_lines_rejected_total{reason=\"type\"}",
	            "tsstore_ingest_lines_rejected_total{reason=\"type\"} 0");
	expect_line(r.body, "tsstore_ingest_lines_rejected_total{reason=\"store\"}",
	            "tsstore_ingest_lines_rejected_total{reason=\"store\"} 0");
	expect_line(r.body, "tsstore_ingest_tables_created_total ",
	            "tsstore_ingest_tables_created_total 2");
	expect_line(r.body, "tsstore_ingest_columns_added_total ",
	            "tsstore_ingest_columns_added_total 1");
	expect_line(r.body, "tsstore_ingest_rows_missing_tags_total ",
	            "tsstore_ingest_rows_missing_tags_total 0");
	expect_line(r.body, "tsstore_http_requests_total{path=\"/write\",code=\"400\"}",
	            "tsstore_http_requests_total{path=\"/write\",code=\"400\"} 1");
	tsd_test_response_free(&r);
}

/* ---- Authentication ---- */

/* The 401 message for method path, which needs level need, from a
 * client on a loopback listener (daemon/access.c): token says whether
 * the daemon has one, loopback is loopback-access. */
static char *refusal(const char *what, const char *need, int token, const char *loopback)
{
	return tsd_test_fmt("%s is a %s operation: %s; loopback-access is %s", what, need,
	                    token ? "send the token (\"Authorization: Token <token>\", or Bearer, "
	                            "or the query parameter p)"
	                          : "start tsstored with a token (--token FILE) and send it "
	                            "(\"Authorization: Token <token>\")", loopback);
}

static const char unauthorized[] = "WWW-Authenticate: Token realm=\"tsstored\"\r\n";

/* expect_error of a 401 with the message refusal() makes (freed here). */
static void expect_refusal(struct tsd_test_conn *c, const char *request, char *msg)
{
	expect_error(c, request, "401 Unauthorized", unauthorized, 0, msg);
	free(msg);
}

/* With a token (and so loopback-access none): every endpoint but /ping
 * and /health needs it, each way it can be sent; a wrong one is 401. */
static void test_auth(void **state)
{
	struct fixture *f = *state;
	struct tsd_test_response r;
	char *required = refusal("POST /write", "write", 1, "none");
	char *health = json_head("200 OK", 18, 0);
	/* /ping and /health need no token */
	expect(f->c, ping, ping_head, "");
	expect(f->c, "GET /health HTTP/1.1\r\n\r\n", health, "{\"status\":\"pass\"}\n");
	free(health);
	expect_error(f->c, "GET /metrics HTTP/1.1\r\n\r\n", "401 Unauthorized",
	             "WWW-Authenticate: Token realm=\"tsstored\"\r\n", 0,
	             "GET /metrics is a read operation: send the token (\"Authorization: Token "
	             "<token>\", or Bearer, or the query parameter p); loopback-access is none");
	expect_error(f->c, "POST /write HTTP/1.1\r\nContent-Length: 2\r\n\r\nab", "401 Unauthorized",
	             "WWW-Authenticate: Token realm=\"tsstored\"\r\n", 0, required);
	expect_error(f->c, "GET /metrics HTTP/1.1\r\nAuthorization: Token s3cre\r\n\r\n",
	             "401 Unauthorized", "WWW-Authenticate: Token realm=\"tsstored\"\r\n", 0,
	             "wrong token");
	expect_error(f->c, "GET /metrics HTTP/1.1\r\nAuthorization: Basic czNjcmV0\r\n\r\n",
	             "401 Unauthorized", "WWW-Authenticate: Token realm=\"tsstored\"\r\n", 0,
	             "wrong token");
	/* Basic: the password must be the token ("me:s3cre", no colon, not base64) */
	expect_error(f->c, "GET /metrics HTTP/1.1\r\nAuthorization: Basic bWU6czNjcmU=\r\n\r\n",
	             "401 Unauthorized", "WWW-Authenticate: Token realm=\"tsstored\"\r\n", 0,
	             "wrong token");
	expect_error(f->c, "GET /metrics HTTP/1.1\r\nAuthorization: Basic czNjcmV0Og==\r\n\r\n",
	             "401 Unauthorized", "WWW-Authenticate: Token realm=\"tsstored\"\r\n", 0,
	             "wrong token");
	expect_error(f->c, "GET /metrics HTTP/1.1\r\nAuthorization: Basic bWU6czNjcmV0!\r\n\r\n",
	             "401 Unauthorized", "WWW-Authenticate: Token realm=\"tsstored\"\r\n", 0,
	             "wrong token");
	expect_error(f->c, "GET /metrics?u=me&p=wrong HTTP/1.1\r\n\r\n",
	             "401 Unauthorized", "WWW-Authenticate: Token realm=\"tsstored\"\r\n", 0,
	             "wrong token");
	/* the token, each way */
	const char *ok[] = {
		"GET /metrics HTTP/1.1\r\nAuthorization: Token s3cret\r\n\r\n",
		"GET /metrics HTTP/1.1\r\nauthorization: bearer  s3cret \r\n\r\n",
		"GET /metrics?u=me&p=s3cret HTTP/1.1\r\n\r\n",
		"GET /metrics?db=x&p=s3%63ret HTTP/1.1\r\n\r\n",
		/* "me:s3cret" and ":s3cret": influx -username me -password s3cret */
		"GET /metrics HTTP/1.1\r\nAuthorization: Basic bWU6czNjcmV0\r\n\r\n",
		"GET /metrics HTTP/1.1\r\nauthorization: basic  OnMzY3JldA== \r\n\r\n",
	};
	for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
		call(f->c, ok[i], &r);
		assert_int_equal(r.status, 200);
		tsd_test_response_free(&r);
	}
	/* /api/v2/write: InfluxDB 2.x clients send "Authorization: Token" */
	expect_refusal(f->c, "POST /api/v2/write?bucket=b&org=o HTTP/1.1\r\nContent-Length: 8\r\n\r\n"
	               "a v=1 1\n", refusal("POST /api/v2/write", "write", 1, "none"));
	expect_error(f->c, "POST /api/v2/write?bucket=b&org=o HTTP/1.1\r\nAuthorization: Token x\r\n"
	             "Content-Length: 8\r\n\r\na v=1 1\n", "401 Unauthorized",
	             "WWW-Authenticate: Token realm=\"tsstored\"\r\n", 0, "wrong token");
	post(f->c, "/api/v2/write?bucket=b&org=o", "Authorization: Token s3cret\r\n", "a v=1 1\n", 8);
	expect_next(f->c, ping_head, "");
	/* and 1.x clients u and p */
	post(f->c, "/write?db=x&u=me&p=s3cret", "", "a v=2 2\n", 8);
	expect_next(f->c, ping_head, "");
	expect_rows(f->d, "{\"op\":\"query\",\"table\":\"a\"}", 2, "[[1,1],[2,2]]");
	free(required);
}

/* The default (no token, loopback-access write): the writes and
 * /metrics need nothing; credentials are ignored, there being no token
 * to check them against. */
static void test_access_default(void **state)
{
	struct fixture *f = *state;
	struct tsd_test_response r;
	post(f->c, "/write?db=x", "", "a v=1 1\n", 8);
	expect_next(f->c, ping_head, "");
	post(f->c, "/api/v2/write?bucket=b&org=o", "Authorization: Token anything\r\n", "a v=2 2\n", 8);
	expect_next(f->c, ping_head, "");
	post(f->c, "/write?db=x&u=me&p=whatever", "", "a v=3 3\n", 8);
	expect_next(f->c, ping_head, "");
	call(f->c, "GET /metrics HTTP/1.1\r\n\r\n", &r);
	assert_int_equal(r.status, 200);
	tsd_test_response_free(&r);
	expect_rows(f->d, "{\"op\":\"query\",\"table\":\"a\"}", 3, "[[1,1],[2,2],[3,3]]");
}

/* --loopback-access read: /metrics, not the writes (401, the connection
 * kept, the body read and dropped). */
static void test_access_read(void **state)
{
	struct fixture *f = *state;
	struct tsd_test_response r;
	expect(f->c, ping, ping_head, "");
	call(f->c, "GET /metrics HTTP/1.1\r\n\r\n", &r);
	assert_int_equal(r.status, 200);
	tsd_test_response_free(&r);
	expect_error(f->c, "POST /write?db=x HTTP/1.1\r\nContent-Length: 8\r\n\r\na v=1 1\n",
	             "401 Unauthorized", "WWW-Authenticate: Token realm=\"tsstored\"\r\n", 0,
	             "POST /write is a write operation: start tsstored with a token (--token FILE) "
	             "and send it (\"Authorization: Token <token>\"); loopback-access is read");
	expect_refusal(f->c, "POST /api/v2/write HTTP/1.1\r\nContent-Length: 8\r\n\r\na v=1 1\n",
	               refusal("POST /api/v2/write", "write", 0, "read"));
	expect_refusal(f->c, "POST /api/v1/write HTTP/1.1\r\nContent-Length: 0\r\n\r\n",
	               refusal("POST /api/v1/write", "write", 0, "read"));
	expect(f->c, ping, ping_head, "");
	struct tsd_test_conn *u = tsd_test_connect(f->d, TSD_TEST_UNIX);
	char *got = tsd_test_call(u, "{\"op\":\"tables\"}");
	assert_string_equal(got, "{\"ok\":true,\"tables\":[]}\n"); /* nothing was written */
	free(got);
	tsd_test_close(u);
}

/* --loopback-access none: /ping and /health only. */
static void test_access_none(void **state)
{
	struct fixture *f = *state;
	struct tsd_test_response r;
	char *health = json_head("200 OK", 18, 0);
	expect(f->c, ping, ping_head, "");
	expect(f->c, "GET /health HTTP/1.1\r\n\r\n", health, "{\"status\":\"pass\"}\n");
	free(health);
	call(f->c, "HEAD /metrics HTTP/1.1\r\n\r\n", &r); /* no body: the status says */
	assert_int_equal(r.status, 401);
	tsd_test_response_free(&r);
	expect_refusal(f->c, "GET /metrics HTTP/1.1\r\n\r\n", refusal("GET /metrics", "read", 0, "none"));
}

/* A token and --loopback-access write: collectors write without it;
 * a wrong one is still refused. */
static void test_access_token_write(void **state)
{
	struct fixture *f = *state;
	post(f->c, "/write", "", "a v=1 1\n", 8);
	expect_next(f->c, ping_head, "");
	expect_error(f->c, "POST /write HTTP/1.1\r\nAuthorization: Token s3cre\r\nContent-Length: 8"
	             "\r\n\r\na v=2 2\n", "401 Unauthorized", unauthorized, 0, "wrong token");
	post(f->c, "/write", "Authorization: Bearer s3cret\r\n", "a v=3 3\n", 8);
	expect_next(f->c, ping_head, "");
	expect_rows(f->d, "{\"op\":\"query\",\"table\":\"a\"}", 2, "[[1,1],[3,3]]");
}

/* Whether the log file path holds needle. */
static int log_has(const char *path, const char *needle)
{
	char line[1024];
	int found = 0;
	FILE *f = fopen(path, "r");
	if (!f)
		return 0;
	while (!found && fgets(line, sizeof line, f))
		found = strstr(line, needle) != NULL;
	fclose(f);
	return found;
}

static void put_conf(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	assert_true(fputs(text, f) >= 0);
	assert_int_equal(fclose(f), 0);
}

/* SIGHUP applies new http-max-body, http-max-header and token to the
 * requests that follow. */
static void test_reload(void **state)
{
	struct fixture *f = calloc(1, sizeof *f);
	struct tsd_test_daemon *d;
	char conf[TSD_TEST_PATH_MAX], tok[TSD_TEST_PATH_MAX], logf[TSD_TEST_PATH_MAX - 16];
	char body[1501], *text, *big;
	assert_non_null(f);
	*state = f; /* the teardown frees it, and the daemon */
	assert_non_null(d = f->d = tsd_test_daemon_new());
	d->http = 1;
	/* 75 lines of 20 bytes */
	for (int i = 0; i < 75; i++)
		snprintf(body + i * 20, 21, "r v=1 %013d\n", i);
	snprintf(conf, sizeof conf, "%s/conf", d->dir);
	snprintf(tok, sizeof tok, "%s/token", d->dir);
	snprintf(logf, sizeof logf, "%s/tsd.log", d->dir);
	put_conf(tok, "one\n");
	text = tsd_test_fmt("http-max-body = 1k\nhttp-max-header = 2k\ntoken = %s\nlog-file = %s\n", tok, logf);
	put_conf(conf, text);
	free(text);
	const char *args[] = {"--config", conf, NULL};
	assert_int_equal(tsd_test_daemon_start(d, args), 0);
	big = tsd_test_fmt("GET /ping HTTP/1.1\r\nX-Pad: %01500d\r\n\r\n", 0);
	assert_non_null(f->c = tsd_test_connect(d, TSD_TEST_HTTP));
	expect(f->c, big, ping_head, "");
	post(f->c, "/write", "Authorization: Token one\r\n", body, 1500);
	expect_json_error(f->c, "413 Content Too Large", 1,
	                  "the body (Content-Length 1500) is larger than http-max-body (1024 bytes)");
	tsd_test_close(f->c);
	f->c = NULL;
	/* the new limits and token */
	put_conf(tok, "two\n");
	text = tsd_test_fmt("http-max-body = 2k\nhttp-max-header = 1k\ntoken = %s\nlog-file = %s\n", tok, logf);
	put_conf(conf, text);
	free(text);
	assert_int_equal(kill(d->pid, SIGHUP), 0);
	for (int i = 0; i < 1000 && !log_has(logf, "tsstored: reloaded"); i++)
		tsd_test_sleep_ms(10);
	assert_true(log_has(logf, "tsstored: reload: http-max-body: 1024 -> 2048"));
	assert_true(log_has(logf, "tsstored: reload: http-max-header: 2048 -> 1024"));
	assert_non_null(f->c = tsd_test_connect(d, TSD_TEST_HTTP));
	post(f->c, "/write", "Authorization: Token one\r\n", body, 1500);
	expect_next(f->c, "HTTP/1.1 401 Unauthorized\r\n" VERSION_HEADER "Content-Type: application/json\r\n"
	            "Content-Length: 24\r\nWWW-Authenticate: Token realm=\"tsstored\"\r\n\r\n",
	            "{\"error\":\"wrong token\"}\n");
	post(f->c, "/write", "Authorization: Token two\r\n", body, 1500);
	expect_next(f->c, ping_head, "");
	expect_count(f->d, "r", 75);
	expect_error(f->c, big, "431 Request Header Fields Too Large", "", 1,
	             "the request line and headers are larger than http-max-header (1024 bytes)");
	expect_eof(f->c);
	free(big);
}

/* A test named "http_NAME", with its setup and the teardown. */
#define T(name, fn, setup) {"http_" name, fn, setup, teardown, NULL}

int main(void)
{
	const struct CMUnitTest tests[] = {
		T("ping", test_ping, setup),
		T("health", test_health, setup),
		T("metrics", test_metrics, setup),
		T("write_endpoints", test_write_endpoints, setup),
		T("not_found_method", test_not_found_method, setup),
		T("keep_alive", test_keep_alive, setup),
		T("pipelining", test_pipelining, setup),
		T("chunked", test_chunked, setup),
		T("gzip", test_gzip, setup),
		T("expect_continue", test_expect_continue, setup),
		T("bad_request_closes", test_bad_request_closes, setup),
		T("header_too_large", test_header_too_large, setup_limits),
		T("body_too_large", test_body_too_large, setup_limits),
		T("slow_request_408", test_slow_request, setup_idle),
		T("body_memory_budget", test_body_memory, setup),
		T("max_connections_503", test_max_connections, setup_max_connections),
		T("write_tsbs", test_write_tsbs, setup),
		T("write_partial", test_write_partial, setup),
		T("write_type_conflict", test_write_type_conflict, setup),
		T("write_precision", test_write_precision, setup),
		T("write_metrics", test_write_metrics, setup),
		T("auth", test_auth, setup_token),
		T("access_default", test_access_default, setup),
		T("access_read", test_access_read, setup_read),
		T("access_none", test_access_none, setup_none),
		T("access_token_write", test_access_token_write, setup_token_write),
		T("reload", test_reload, NULL), /* makes its own daemon, with a config file */
	};
	const char *filter = getenv("TSD_TEST_FILTER");
	if (filter)
		cmocka_set_test_filter(filter);
	return cmocka_run_group_tests_name("http", tests, NULL, NULL);
}
