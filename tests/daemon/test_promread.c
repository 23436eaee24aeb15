/*
 * test_promread.c -- Prometheus remote read from tsstored
 * (POST /api/v1/read, daemon/promread.c, tsstore-http(7) PROMETHEUS
 * REMOTE READ), end to end: a real daemon with an HTTP listener, series
 * written with remote write (POST /api/v1/write), then ReadRequests that
 * the test packs itself with the messages protoc-c generates from
 * wire/remote.proto, compressed with snappy, as Prometheus sends them.
 * Each response is snappy-decoded and unpacked by the same generated
 * code and printed as text ("q1 {labels} ts=value ..." per series, the
 * values with 17 digits), compared exactly.
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
#include <cmocka.h>

#include <snappy-c.h>
#include <tsstore.h>

#include "remote.pb-c.h"
#include "support_client.h"
#include "support_prom.h"

#define WAIT TSD_TEST_TIMEOUT_MS

/* ---- Writing ---- */

/* POST body[0..n) to path with remote read's headers; returns the
 * status, the response body in *out (malloc'ed), its length in *outlen,
 * and in *ctype and *cenc the Content-Type and Content-Encoding
 * (malloc'ed, "" when none). */
static int post(struct tsd_test_conn *c, const char *path, const char *body, size_t n,
                char **out, size_t *outlen, char **ctype, char **cenc)
{
	struct tsd_test_response r;
	int status = prom_post(c, path, PROM_READ_HEADERS, body, n, &r);
	*ctype = tsd_test_response_header(&r, "Content-Type");
	*cenc = tsd_test_response_header(&r, "Content-Encoding");
	*out = r.body;
	*outlen = r.len;
	r.body = NULL;
	tsd_test_response_free(&r);
	return status;
}

static void write_series(struct tsd_test_http *f, const struct tseries *series, int n)
{
	size_t len, olen;
	char *body = write_body(series, n, &len), *got, *ct, *ce;
	assert_int_equal(post(f->http, "/api/v1/write", body, len, &got, &olen, &ct, &ce), 204);
	free(got);
	free(ct);
	free(ce);
	free(body);
}

/* POST line protocol lines to /write (204). */
static void lp_write(struct tsd_test_http *f, const char *lines)
{
	struct tsd_test_response r;
	assert_int_equal(tsd_test_post(f->http, "/write", "", lines, strlen(lines)), 0);
	assert_int_equal(tsd_test_read_http(f->http, WAIT, 0, &r), TSD_TEST_LINE);
	assert_true(strncmp(r.head, "HTTP/1.1 204 No Content\r\n", 25) == 0);
	tsd_test_response_free(&r);
}

/* ---- Reading ---- */

/* A query: its range and matchers, each "TYPE name value" with TYPE one
 * of = != =~ !~ (NULL-terminated). */
struct tquery {
	int64_t start, end;
	const char *const *matchers;
};

static int matcher_type(const char *t)
{
	return strcmp(t, "=") == 0 ? 0 : strcmp(t, "!=") == 0 ? 1 : strcmp(t, "=~") == 0 ? 2 : 3;
}

/* The remote read body of queries[0..n), accepting types[0..ntypes). */
static char *read_body(const struct tquery *queries, int n, const int *types, int ntypes,
                       size_t *len)
{
	Tsstore__Remote__ReadRequest rr = TSSTORE__REMOTE__READ_REQUEST__INIT;
	Tsstore__Remote__Query q[8], *qp[8];
	Tsstore__Remote__LabelMatcher m[8][8], *mp[8][8];
	Tsstore__Remote__ReadRequest__ResponseType acc[4];
	assert_true(n <= 8 && ntypes <= 4);
	rr.n_queries = (size_t)n;
	rr.queries = qp;
	for (int i = 0; i < ntypes; i++)
		acc[i] = (Tsstore__Remote__ReadRequest__ResponseType)types[i];
	rr.n_accepted_response_types = (size_t)ntypes;
	rr.accepted_response_types = acc;
	for (int i = 0; i < n; i++) {
		Tsstore__Remote__Query init = TSSTORE__REMOTE__QUERY__INIT;
		int k = 0;
		q[i] = init;
		qp[i] = &q[i];
		q[i].start_timestamp_ms = queries[i].start;
		q[i].end_timestamp_ms = queries[i].end;
		for (; queries[i].matchers[3 * k]; k++) {
			Tsstore__Remote__LabelMatcher minit = TSSTORE__REMOTE__LABEL_MATCHER__INIT;
			const char *const *t = &queries[i].matchers[3 * k];
			assert_true(k < 8);
			m[i][k] = minit;
			m[i][k].type = (Tsstore__Remote__LabelMatcher__Type)matcher_type(t[0]);
			m[i][k].name.data = (uint8_t *)t[1];
			m[i][k].name.len = strlen(t[1]);
			m[i][k].value.data = (uint8_t *)t[2];
			m[i][k].value.len = strlen(t[2]);
			mp[i][k] = &m[i][k];
		}
		q[i].n_matchers = (size_t)k;
		q[i].matchers = mp[i];
	}
	return packed_snappy(&rr.base, len);
}

/* The response body (snappy, ReadResponse) as text: per query "qN:"
 * then per series " {name=value,...}" and " ms:value" per sample. */
static char *response_text(const char *body, size_t len)
{
	size_t n;
	assert_int_equal(snappy_uncompressed_length(body, len, &n), SNAPPY_OK);
	char *raw = malloc(n ? n : 1);
	assert_non_null(raw);
	assert_int_equal(snappy_uncompress(body, len, raw, &n), SNAPPY_OK);
	Tsstore__Remote__ReadResponse *rr =
		tsstore__remote__read_response__unpack(NULL, n, (const uint8_t *)raw);
	assert_non_null(rr);
	free(raw);
	char *text = NULL;
	size_t tlen = 0;
	FILE *f = open_memstream(&text, &tlen);
	for (size_t q = 0; q < rr->n_results; q++) {
		const Tsstore__Remote__QueryResult *res = rr->results[q];
		fprintf(f, "q%zu:", q + 1);
		for (size_t s = 0; s < res->n_timeseries; s++) {
			const Tsstore__Remote__TimeSeries *ts = res->timeseries[s];
			fprintf(f, " {");
			for (size_t l = 0; l < ts->n_labels; l++)
				fprintf(f, "%s%.*s=%.*s", l ? "," : "", (int)ts->labels[l]->name.len,
				        (const char *)ts->labels[l]->name.data, (int)ts->labels[l]->value.len,
				        (const char *)ts->labels[l]->value.data);
			fprintf(f, "}");
			for (size_t k = 0; k < ts->n_samples; k++) {
				double v = ts->samples[k]->value;
				uint64_t bits;
				memcpy(&bits, &v, sizeof bits);
				if (isnan(v))
					fprintf(f, " %lld:nan(%016llx)", (long long)ts->samples[k]->timestamp,
					        (unsigned long long)bits);
				else
					fprintf(f, " %lld:%.17g", (long long)ts->samples[k]->timestamp, v);
			}
		}
		fprintf(f, "\n");
	}
	fclose(f);
	tsstore__remote__read_response__free_unpacked(rr, NULL);
	return text;
}

/* Read queries[0..n) and assert the status and the response's text
 * (for 200) or body (else). */
static void read_expect(struct tsd_test_http *f, const struct tquery *queries, int n, int status,
                        const char *want)
{
	size_t len, olen;
	char *body = read_body(queries, n, NULL, 0, &len), *got, *ct, *ce;
	int st = post(f->http, "/api/v1/read", body, len, &got, &olen, &ct, &ce);
	if (st == 200) {
		char *text = response_text(got, olen);
		assert_string_equal(text, want);
		assert_string_equal(ct, "application/x-protobuf");
		assert_string_equal(ce, "snappy");
		free(text);
	} else {
		assert_string_equal(got, want);
		assert_string_equal(ct, "text/plain; charset=utf-8");
	}
	assert_int_equal(st, status);
	free(got);
	free(ct);
	free(ce);
	free(body);
}

/* ---- Fixtures ---- */

static int teardown(void **state)
{
	tsd_test_http_down(*state);
	*state = NULL;
	return 0;
}

static int setup_args(void **state, const char *const *args)
{
	return (*state = tsd_test_http_up(args, 0)) ? 0 : -1;
}

static int setup(void **state) { return setup_args(state, NULL); }

static int setup_limit(void **state)
{
	static const char *const args[] = {"--remote-read-max-samples", "4", NULL};
	return setup_args(state, args);
}

/* ---- The data ---- */

/* 2026-11-22T00:00:00Z in ms. */
#define T0 INT64_C(1795305600000)

static const char *const s_a[] = {"__name__", "http_requests_total", "job", "api",
                                  "instance", "a:9090", "code", "200", NULL};
static const char *const s_b[] = {"__name__", "http_requests_total", "job", "api",
                                  "instance", "b:9090", NULL};
static const char *const s_c[] = {"__name__", "http_requests_total", "job", "web",
                                  "instance", "a:9090", "code", "500", NULL};
static const char *const s_up1[] = {"__name__", "up", "job", "api", "instance", "a:9090", NULL};
static const char *const s_up2[] = {"__name__", "up", "job", "web", "instance", "a:9090", NULL};
static const char *const s_lone[] = {"__name__", "lone", NULL};
static const int64_t ms3[] = {T0, T0 + 15000, T0 + 30000};
static const double va[] = {0.1, 1e300, -2.5};
static const double vb[] = {3, 0.30000000000000004, 1.7976931348623157e308};
static const double vc[] = {-1e-300, 4, 5};
static const double one[] = {1};
static const double zero[] = {0};

static void load(struct tsd_test_http *f)
{
	/* Prometheus's staleness marker: a NaN whose bits must come back */
	static const uint64_t stale_bits = UINT64_C(0x7ff0000000000002);
	static double stale[1];
	memcpy(&stale[0], &stale_bits, sizeof stale[0]);
	const struct tseries series[] = {
		{s_a, 3, ms3, va},
		{s_b, 3, ms3, vb},
		{s_c, 3, ms3, vc},
		{s_up1, 1, ms3, one},
		{s_up2, 1, ms3 + 1, zero},
		{s_lone, 1, ms3 + 2, stale},
	};
	write_series(f, series, 6);
}

#define A "{__name__=http_requests_total,code=200,instance=a:9090,job=api} " \
	"1795305600000:0.10000000000000001 1795305615000:1.0000000000000001e+300 1795305630000:-2.5"
#define B "{__name__=http_requests_total,instance=b:9090,job=api} " \
	"1795305600000:3 1795305615000:0.30000000000000004 1795305630000:1.7976931348623157e+308"
#define C "{__name__=http_requests_total,code=500,instance=a:9090,job=web} " \
	"1795305600000:-1e-300 1795305615000:4 1795305630000:5"
#define UP1 "{__name__=up,instance=a:9090,job=api} 1795305600000:1"
#define UP2 "{__name__=up,instance=a:9090,job=web} 1795305615000:0"

/* The whole range of the data. */
#define ALL T0 - 60000, T0 + 60000

/* ---- The tests ---- */

/* __name__ = X: the table's series in key order (a missing label is ""
 * in its key column, so B, without code, comes first), every sample
 * exact. */
static void test_equal(void **state)
{
	struct tsd_test_http *f = *state;
	static const char *const m1[] = {"=", "__name__", "http_requests_total", NULL};
	static const char *const m2[] = {"=", "__name__", "http_requests_total", "=", "job", "api",
	                                 NULL};
	static const char *const m3[] = {"=", "job", "api", "=", "__name__", "http_requests_total",
	                                 "=", "instance", "b:9090", NULL};
	static const char *const m4[] = {"=", "__name__", "lone", NULL};
	load(f);
	read_expect(f, (struct tquery[]){{ALL, m1}}, 1, 200, "q1: " B " " A " " C "\n");
	read_expect(f, (struct tquery[]){{ALL, m2}}, 1, 200, "q1: " B " " A "\n");
	read_expect(f, (struct tquery[]){{ALL, m3}}, 1, 200, "q1: " B "\n");
	/* no label but the name; the staleness marker's bits */
	read_expect(f, (struct tquery[]){{ALL, m4}}, 1, 200,
	            "q1: {__name__=lone} 1795305630000:nan(7ff0000000000002)\n");
}

/* !=, =~, !~, and matchers of labels a series lacks ("" for them). */
static void test_matchers(void **state)
{
	struct tsd_test_http *f = *state;
	static const char *const neq[] = {"=", "__name__", "http_requests_total",
	                                  "!=", "code", "200", NULL};
	static const char *const re[] = {"=", "__name__", "http_requests_total",
	                                 "=~", "instance", "a:.*", NULL};
	static const char *const re_anchored[] = {"=", "__name__", "http_requests_total",
	                                          "=~", "instance", "a", NULL};
	static const char *const nre[] = {"=", "__name__", "http_requests_total",
	                                  "!~", "job", "a.i|x", NULL};
	static const char *const empty[] = {"=", "__name__", "http_requests_total",
	                                    "=", "code", "", NULL};
	static const char *const nonempty[] = {"=", "__name__", "http_requests_total",
	                                       "=~", "code", ".+", NULL};
	static const char *const absent_ok[] = {"=", "__name__", "http_requests_total",
	                                        "=", "zone", "", "!~", "region", "e.*", NULL};
	static const char *const absent_no[] = {"=", "__name__", "http_requests_total",
	                                        "=~", "zone", ".+", NULL};
	static const char *const both[] = {"=", "__name__", "http_requests_total",
	                                   "=~", "code", "2..|5..", "!=", "job", "web", NULL};
	load(f);
	read_expect(f, (struct tquery[]){{ALL, neq}}, 1, 200, "q1: " B " " C "\n");
	read_expect(f, (struct tquery[]){{ALL, re}}, 1, 200, "q1: " A " " C "\n");
	read_expect(f, (struct tquery[]){{ALL, re_anchored}}, 1, 200, "q1:\n");
	read_expect(f, (struct tquery[]){{ALL, nre}}, 1, 200, "q1: " C "\n");
	read_expect(f, (struct tquery[]){{ALL, empty}}, 1, 200, "q1: " B "\n");
	read_expect(f, (struct tquery[]){{ALL, nonempty}}, 1, 200, "q1: " A " " C "\n");
	read_expect(f, (struct tquery[]){{ALL, absent_ok}}, 1, 200, "q1: " B " " A " " C "\n");
	read_expect(f, (struct tquery[]){{ALL, absent_no}}, 1, 200, "q1:\n");
	read_expect(f, (struct tquery[]){{ALL, both}}, 1, 200, "q1: " A "\n");
}

/* Matchers on __name__ other than =: over the tables of remote write's
 * shape, in name order. */
static void test_name_matchers(void **state)
{
	struct tsd_test_http *f = *state;
	static const char *const re[] = {"=~", "__name__", "http_.*|up", "=", "job", "web", NULL};
	static const char *const neq[] = {"!=", "__name__", "http_requests_total",
	                                  "=", "instance", "a:9090", NULL};
	static const char *const none[] = {"=", "job", "web", NULL};
	static const char *const nre[] = {"!~", "__name__", "up|lone", "=~", "code", "5.*", NULL};
	load(f);
	/* tables of another shape are never metrics: no column value, or
	 * one that is no double */
	lp_write(f, "other,job=web v=1 1795305600000000000\n"
	            "other2,job=web value=1i 1795305600000000000\n");
	read_expect(f, (struct tquery[]){{ALL, re}}, 1, 200, "q1: " C " " UP2 "\n");
	read_expect(f, (struct tquery[]){{ALL, neq}}, 1, 200, "q1: " UP1 " " UP2 "\n");
	read_expect(f, (struct tquery[]){{ALL, none}}, 1, 200, "q1: " C " " UP2 "\n");
	read_expect(f, (struct tquery[]){{ALL, nre}}, 1, 200, "q1: " C "\n");
}

/* The time range: both ends included, in ms. */
static void test_time_range(void **state)
{
	struct tsd_test_http *f = *state;
	static const char *const m[] = {"=", "__name__", "http_requests_total",
	                                "=", "instance", "b:9090", NULL};
	load(f);
	read_expect(f, (struct tquery[]){{T0 + 15000, T0 + 15000, m}}, 1, 200,
	            "q1: {__name__=http_requests_total,instance=b:9090,job=api} "
	            "1795305615000:0.30000000000000004\n");
	read_expect(f, (struct tquery[]){{T0 + 1, T0 + 30000, m}}, 1, 200,
	            "q1: {__name__=http_requests_total,instance=b:9090,job=api} "
	            "1795305615000:0.30000000000000004 1795305630000:1.7976931348623157e+308\n");
	read_expect(f, (struct tquery[]){{T0, T0 + 14999, m}}, 1, 200,
	            "q1: {__name__=http_requests_total,instance=b:9090,job=api} 1795305600000:3\n");
	read_expect(f, (struct tquery[]){{T0 + 30001, T0 + 90000, m}}, 1, 200, "q1:\n");
	read_expect(f, (struct tquery[]){{T0 + 30000, T0, m}}, 1, 200, "q1:\n");
}

/* Several queries in one request: one result each, in order; a metric
 * that does not exist gives an empty result. */
static void test_several(void **state)
{
	struct tsd_test_http *f = *state;
	static const char *const m1[] = {"=", "__name__", "up", NULL};
	static const char *const m2[] = {"=", "__name__", "no_such_metric", NULL};
	static const char *const m3[] = {"=", "__name__", "http_requests_total",
	                                 "=", "code", "500", NULL};
	load(f);
	read_expect(f, (struct tquery[]){{ALL, m1}, {ALL, m2}, {ALL, m3}, {T0, T0, m1}}, 4, 200,
	            "q1: " UP1 " " UP2 "\nq2:\nq3: " C "\nq4: " UP1 "\n");
	/* an empty database, an empty request */
	read_expect(f, NULL, 0, 200, "");
}

/* Bodies and requests refused: 400 with the reason as plain text. */
static void test_bad(void **state)
{
	struct tsd_test_http *f = *state;
	static const char *const bad_re[] = {"=", "__name__", "up", "=~", "job", "a(", NULL};
	size_t len, olen;
	char *got, *ct, *ce, *body;
	load(f);
	assert_int_equal(post(f->http, "/api/v1/read", "\xff\xff\xff", 3, &got, &olen, &ct, &ce),
	                 400);
	assert_string_equal(got, "snappy: not snappy-compressed data (block format): its length "
	                    "prefix is bad\n");
	assert_string_equal(ct, "text/plain; charset=utf-8");
	free(got), free(ct), free(ce);
	body = snappy("\x0a\x7f\x01", 3, &len);
	assert_int_equal(post(f->http, "/api/v1/read", body, len, &got, &olen, &ct, &ce), 400);
	assert_string_equal(got, "protobuf: the 3 bytes decoded from snappy are not a remote read "
	                    "ReadRequest\n");
	free(got), free(ct), free(ce), free(body);
	read_expect(f, (struct tquery[]){{ALL, bad_re}}, 1, 400,
	            "query 1: the regular expression \"a(\" of label \"job\" is not one tsstored "
	            "takes: Unmatched ( or \\(\n");
	/* only streamed chunks accepted */
	static const char *const m[] = {"=", "__name__", "up", NULL};
	body = read_body((struct tquery[]){{ALL, m}}, 1, (const int[]){1}, 1, &len);
	assert_int_equal(post(f->http, "/api/v1/read", body, len, &got, &olen, &ct, &ce), 400);
	assert_string_equal(got, "the request accepts none of the response types served "
	                    "(SAMPLES)\n");
	free(got), free(ct), free(ce), free(body);
	/* both accepted: samples */
	body = read_body((struct tquery[]){{ALL, m}}, 1, (const int[]){1, 0}, 2, &len);
	assert_int_equal(post(f->http, "/api/v1/read", body, len, &got, &olen, &ct, &ce), 200);
	char *text = response_text(got, olen);
	assert_string_equal(text, "q1: " UP1 " " UP2 "\n");
	free(text), free(got), free(ct), free(ce), free(body);
	/* a matcher type that does not exist */
	body = snappy("\x0a\x06\x1a\x04\x08\x07\x12\x00", 8, &len);
	assert_int_equal(post(f->http, "/api/v1/read", body, len, &got, &olen, &ct, &ce), 400);
	assert_string_equal(got, "query 1: matcher 1 has type 7, not one of EQ (0), NEQ (1), RE "
	                    "(2), NRE (3)\n");
	free(got), free(ct), free(ce), free(body);
	/* GET is not the method */
	assert_int_equal(tsd_test_send(f->http, "GET /api/v1/read HTTP/1.1\r\nHost: t\r\n\r\n", 38),
	                 0);
	char *line;
	assert_int_equal(tsd_test_read_line(f->http, WAIT, &line, &len), TSD_TEST_LINE);
	assert_string_equal(line, "HTTP/1.1 405 Method Not Allowed\r");
	free(line);
}

/* remote-read-max-samples: 4 samples pass, 5 are refused as
 * Prometheus's server refuses them. */
static void test_limit(void **state)
{
	struct tsd_test_http *f = *state;
	static const char *const m4[] = {"=", "__name__", "http_requests_total",
	                                 "=", "instance", "a:9090", "=", "job", "api", NULL};
	static const char *const m1[] = {"=", "__name__", "up", "=", "job", "api", NULL};
	load(f);
	read_expect(f, (struct tquery[]){{ALL, m4}, {ALL, m1}}, 2, 200, "q1: " A "\nq2: " UP1 "\n");
	read_expect(f, (struct tquery[]){{ALL, m4}, {ALL, m1}, {ALL, m1}}, 3, 400,
	            "exceeded sample limit (4)\n");
}

/* A series the matchers refuse, longer than the rows passed over one
 * by one (SEEK_AFTER, 256): the read goes on after it, to the series
 * that follow. */
static void test_skip_long_series(void **state)
{
	struct tsd_test_http *f = *state;
	static const char *const s0[] = {"__name__", "long", "a", "0", "job", "take", NULL};
	static const char *const s1[] = {"__name__", "long", "a", "1", "job", "skip", NULL};
	static const char *const s2[] = {"__name__", "long", "a", "2", "job", "take", NULL};
	static const char *const m[] = {"=", "__name__", "long", "=~", "job", "t.*", NULL};
	static const double v8[] = {0, 1, 2, 3, 4, 5, 6, 7};
	int64_t ms8[8];
	for (int k = 0; k < 8; k++)
		ms8[k] = T0 + k;
	const struct tseries ends[] = {{s0, 2, ms8, v8}, {s2, 2, ms8 + 6, v8 + 6}};
	write_series(f, ends, 2);
	for (int b = 0; b < 40; b++) { /* 320 rows of s1 */
		for (int k = 0; k < 8; k++)
			ms8[k] = T0 + 8 * b + k;
		const struct tseries mid[] = {{s1, 8, ms8, v8}};
		write_series(f, mid, 1);
	}
	read_expect(f, (struct tquery[]){{ALL, m}}, 1, 200,
	            "q1: {__name__=long,a=0,job=take} 1795305600000:0 1795305600001:1"
	            " {__name__=long,a=2,job=take} 1795305600006:6 1795305600007:7\n");
}

/* RE2's syntax as Prometheus sends it: Perl classes, (?:...), . as one
 * UTF-8 character; what POSIX cannot do refused. */
static void test_regex(void **state)
{
	struct tsd_test_http *f = *state;
	static const char *const u1[] = {"__name__", "city", "name", "\xc3\xa9", NULL};
	static const char *const u2[] = {"__name__", "city", "name", "ab", NULL};
	static const char *const u3[] = {"__name__", "city", "name", "x7", NULL};
	static const char *const one_char[] = {"=", "__name__", "city", "=~", "name", ".", NULL};
	static const char *const two_chars[] = {"=", "__name__", "city", "=~", "name", "..", NULL};
	static const char *const digit[] = {"=", "__name__", "city", "=~", "name", "\\w\\d", NULL};
	static const char *const group[] = {"=", "__name__", "city", "!~", "name", "(?:a|x)\\w", NULL};
	static const char *const code[] = {"=", "__name__", "http_requests_total",
	                                   "=~", "code", "5\\d\\d", NULL};
	static const char *const flags[] = {"=", "__name__", "city", "=~", "name", "(?i)AB", NULL};
	load(f);
	const struct tseries series[] = {{u1, 1, ms3, one}, {u2, 1, ms3, one}, {u3, 1, ms3, one}};
	write_series(f, series, 3);
	read_expect(f, (struct tquery[]){{ALL, one_char}}, 1, 200,
	            "q1: {__name__=city,name=\xc3\xa9} 1795305600000:1\n");
	read_expect(f, (struct tquery[]){{ALL, two_chars}}, 1, 200,
	            "q1: {__name__=city,name=ab} 1795305600000:1 {__name__=city,name=x7} "
	            "1795305600000:1\n");
	read_expect(f, (struct tquery[]){{ALL, digit}}, 1, 200,
	            "q1: {__name__=city,name=x7} 1795305600000:1\n");
	read_expect(f, (struct tquery[]){{ALL, group}}, 1, 200,
	            "q1: {__name__=city,name=\xc3\xa9} 1795305600000:1\n");
	read_expect(f, (struct tquery[]){{ALL, code}}, 1, 200, "q1: " C "\n");
	read_expect(f, (struct tquery[]){{ALL, flags}}, 1, 400,
	            "query 1: the regular expression \"(?i)AB\" of label \"name\" is not one "
	            "tsstored takes: (?...) flags and named groups are not taken\n");
}

#define T(name, fn, setup) {"promread_" name, fn, setup, teardown, NULL}

int main(void)
{
	const struct CMUnitTest tests[] = {
		T("equal", test_equal, setup),
		T("matchers", test_matchers, setup),
		T("name_matchers", test_name_matchers, setup),
		T("time_range", test_time_range, setup),
		T("several", test_several, setup),
		T("bad", test_bad, setup),
		T("limit", test_limit, setup_limit),
		T("skip_long_series", test_skip_long_series, setup),
		T("regex", test_regex, setup),
	};
	const char *filter = getenv("TSD_TEST_FILTER");
	if (filter)
		cmocka_set_test_filter(filter);
	return cmocka_run_group_tests_name("promread", tests, NULL, NULL);
}
