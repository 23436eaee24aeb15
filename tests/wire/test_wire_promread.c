/*
 * test_wire_promread.c -- remote read bodies (wire/promread.c): ReadRequests
 * written here byte by byte in protobuf's wire form, snappy-compressed,
 * and the exact queries and matchers expected; each way a body can be
 * refused, with its code and message; the ReadResponse encoder against
 * bytes worked out by hand, and read back by the code protoc-c generates
 * from remote.proto (every field as written, NaN bits, negative times,
 * within the size pr_series_bound allows).
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <snappy-c.h>

#include "remote.pb-c.h"
#include "test_proto.h"
#include "wire/promread.h"

/* ---- Protobuf by hand ---- */

static void matcher(struct bytes *q, int type, const char *name, const char *value)
{
	struct bytes m = {0};
	field_int(&m, 1, type);
	field_str(&m, 2, name);
	field_str(&m, 3, value);
	field_msg(q, 3, &m);
}

/* b's bytes snappy-compressed (malloc'ed); b is freed. */
static char *compress(struct bytes *b, size_t *len)
{
	char *out = snappy(b, len);
	free(b->p);
	memset(b, 0, sizeof *b);
	return out;
}

/* The request as text: per query "[start,end] TYPE name value; ...". */
static void render(const struct pr_request *r, char *out, size_t size)
{
	static const char *const ops[] = {"=", "!=", "=~", "!~"};
	size_t n = 0;
	out[0] = '\0';
	for (size_t i = 0; i < r->nqueries; i++) {
		const struct pr_query *q = &r->queries[i];
		n += (size_t)snprintf(out + n, size - n, "[%lld,%lld]", (long long)q->start_ms,
		                      (long long)q->end_ms);
		for (size_t k = 0; k < q->nmatchers; k++) {
			const struct pr_matcher *m = &q->matchers[k];
			n += (size_t)snprintf(out + n, size - n, " %.*s%s\"%.*s\"", (int)m->name_len,
			                      m->name, ops[m->type], (int)m->value_len, m->value);
		}
		n += (size_t)snprintf(out + n, size - n, "\n");
	}
}

/* ---- Decoding ---- */

/* Two queries, every matcher type, hints and unknown fields skipped,
 * accepted types naming SAMPLES after STREAMED_XOR_CHUNKS. */
static void wire_promread_two_queries(void **state)
{
	struct bytes req = {0}, q = {0}, hints = {0};
	struct pr_request r;
	char text[512], err[PR_ERR_MAX];
	size_t len;
	(void)state;
	field_int(&q, 1, 1795305600000);
	field_int(&q, 2, 1795305660000);
	matcher(&q, 0, "__name__", "up");
	matcher(&q, 1, "job", "");
	matcher(&q, 2, "instance", "a.*|b");
	matcher(&q, 3, "le", "+Inf");
	field_int(&hints, 1, 15000);
	field_str(&hints, 2, "rate");
	field_msg(&q, 4, &hints);
	field_int(&q, 9, 7); /* a field remote.proto does not know */
	field_msg(&req, 1, &q);
	field_int(&q, 1, -5);
	field_int(&q, 2, -1); /* negative times: 10-byte varints */
	field_msg(&req, 1, &q);
	/* accepted_response_types, packed: [1, 0] */
	put_bytes(&req, "\x12\x02\x01\x00", 4);
	char *body = compress(&req, &len);
	assert_int_equal(pr_decode(body, len, 1 << 20, &r, err, sizeof err), 0);
	render(&r, text, sizeof text);
	assert_string_equal(text, "[1795305600000,1795305660000] __name__=\"up\" job!=\"\" "
	                    "instance=~\"a.*|b\" le!~\"+Inf\"\n[-5,-1]\n");
	assert_int_equal(r.nqueries, 2);
	assert_int_equal(r.queries[1].nmatchers, 0);
	pr_request_free(&r);
	assert_null(r.queries);
	pr_request_free(&r); /* a second free is harmless */
	free(body);
}

/* The empty body is a request of no query; so is a request naming no
 * response type, or SAMPLES alone; queries may have no matcher. */
static void wire_promread_empty(void **state)
{
	struct pr_request r;
	struct bytes b = {0};
	size_t len;
	(void)state;
	char *body = compress(&b, &len);
	assert_int_equal(pr_decode(body, len, 16, &r, NULL, 0), 0);
	assert_int_equal(r.nqueries, 0);
	assert_int_equal(r.decoded_len, 0);
	pr_request_free(&r);
	free(body);
	put_bytes(&b, "\x10\x00", 2); /* accepted_response_types, unpacked: SAMPLES */
	body = compress(&b, &len);
	assert_int_equal(pr_decode(body, len, 16, &r, NULL, 0), 0);
	assert_int_equal(r.decoded_len, 2);
	pr_request_free(&r);
	free(body);
	/* queries, none with a matcher (fuzz_promread's
	 * ub-no-matchers-null-offset) */
	put_bytes(&b, "\x0a\x02\x08\x01\x0a\x00", 6);
	body = compress(&b, &len);
	assert_int_equal(pr_decode(body, len, 16, &r, NULL, 0), 0);
	assert_int_equal(r.nqueries, 2);
	assert_int_equal(r.queries[0].start_ms, 1);
	assert_int_equal(r.queries[0].nmatchers, 0);
	assert_null(r.queries[0].matchers);
	assert_int_equal(r.queries[1].start_ms, 0);
	pr_request_free(&r);
	free(body);
}

/* Each refusal: its code, and the message. */
static void wire_promread_refusals(void **state)
{
	struct pr_request r;
	struct bytes b = {0}, q = {0};
	char err[PR_ERR_MAX];
	size_t len;
	char *body;
	(void)state;
	assert_int_equal(pr_decode("\xff\xff\xff", 3, 100, &r, err, sizeof err), PR_ENOTSNAPPY);
	assert_string_equal(err, "snappy: not snappy-compressed data (block format): its length "
	                    "prefix is bad");
	assert_int_equal(r.decoded_len, 0);
	assert_int_equal(pr_decode("\x05\x01\x10", 3, 100, &r, err, sizeof err), PR_EDAMAGED);
	assert_string_equal(err, "snappy: the compressed data is damaged");
	assert_int_equal(r.decoded_len, 5);
	/* too big once decoded */
	put_bytes(&b, "\x0a\x00\x0a\x00\x0a\x00", 6);
	body = compress(&b, &len);
	assert_int_equal(pr_decode(body, len, 5, &r, err, sizeof err), PR_ETOOBIG);
	assert_string_equal(err, "6 bytes once decoded from snappy, more than the 5 allowed");
	assert_int_equal(r.decoded_len, 6);
	assert_int_equal(pr_decode(body, len, 6, &r, err, sizeof err), 0);
	assert_int_equal(r.nqueries, 3);
	pr_request_free(&r);
	free(body);
	/* not protobuf: a field longer than the message */
	put_bytes(&b, "\x0a\x7f\x01", 3);
	body = compress(&b, &len);
	assert_int_equal(pr_decode(body, len, 100, &r, err, sizeof err), PR_EPROTO);
	assert_string_equal(err, "protobuf: the 3 bytes decoded from snappy are not a remote read "
	                    "ReadRequest");
	free(body);
	/* a matcher type that is none of the four */
	matcher(&q, 4, "job", "x");
	field_msg(&b, 1, &q);
	body = compress(&b, &len);
	assert_int_equal(pr_decode(body, len, 100, &r, err, sizeof err), PR_EMATCHER);
	assert_string_equal(err, "query 1: matcher 1 has type 4, not one of EQ (0), NEQ (1), RE (2), "
	                    "NRE (3)");
	assert_null(r.queries);
	free(body);
	/* streamed chunks only */
	put_bytes(&b, "\x10\x01", 2);
	body = compress(&b, &len);
	assert_int_equal(pr_decode(body, len, 100, &r, err, sizeof err), PR_ETYPES);
	assert_string_equal(err, "the request accepts none of the response types served (SAMPLES)");
	free(body);
	assert_string_equal(pr_strerror(PR_ETYPES), "no response type served");
	assert_string_equal(pr_strerror(42), "unknown error");
}

/* ---- Encoding ---- */

/* The response's bytes (uncompressed) from pr_encode's output. */
static unsigned char *uncompress(const char *z, size_t zlen, size_t *n)
{
	assert_int_equal(snappy_uncompressed_length(z, zlen, n), SNAPPY_OK);
	unsigned char *raw = malloc(*n ? *n : 1);
	assert_non_null(raw);
	assert_int_equal(snappy_uncompress(z, zlen, (char *)raw, n), SNAPPY_OK);
	return raw;
}

/* The smallest response with a series, byte by byte (every value
 * written, 0.0 too: remote_answer.proto), and the bound on its size. */
static void wire_promread_encode_bytes(void **state)
{
	static const struct pr_label l[] = {{"a", 1, "b", 1}};
	static const struct pr_sample s[] = {{1, 0.0}};
	const struct pr_series series[] = {{l, 1, s, 1}};
	const struct pr_result res[] = {{series, 1}, {NULL, 0}};
	static const unsigned char want[] = {
		0x0a, 0x17,                         /* results: 23 bytes */
		0x0a, 0x15,                         /*  timeseries: 21 bytes */
		0x0a, 0x06,                         /*   labels: 6 bytes */
		0x0a, 0x01, 'a', 0x12, 0x01, 'b',   /*    name "a", value "b" */
		0x12, 0x0b,                         /*   samples: 11 bytes */
		0x09, 0, 0, 0, 0, 0, 0, 0, 0,       /*    value 0.0 */
		0x10, 0x01,                         /*    timestamp 1 */
		0x0a, 0x00,                         /* results: the empty one */
	};
	char *z;
	size_t zlen, n;
	(void)state;
	/* the bound: labels 11 + (11 + 1) + (11 + 1), a sample 11 + 20, the series' 11 */
	assert_int_equal(pr_series_bound(&series[0]), 11 + (11 + 12 + 12) + (11 + 20));
	assert_true(pr_series_bound(&series[0]) >= 23);  /* what it takes */
	assert_int_equal(pr_encode(res, 2, &z, &zlen), 0);
	unsigned char *raw = uncompress(z, zlen, &n);
	assert_int_equal(n, sizeof want);
	assert_memory_equal(raw, want, sizeof want);
	free(raw);
	free(z);
	/* no result at all: an empty message */
	assert_int_equal(pr_encode(NULL, 0, &z, &zlen), 0);
	raw = uncompress(z, zlen, &n);
	assert_int_equal(n, 0);
	free(raw);
	free(z);
}

/* Read back by protobuf-c: every label, time and value's bits. */
static void wire_promread_encode_roundtrip(void **state)
{
	static const uint64_t stale = UINT64_C(0x7ff0000000000002);
	double nan_stale;
	memcpy(&nan_stale, &stale, sizeof nan_stale);
	static const struct pr_label la[] = {{"__name__", 8, "up", 2}, {"job", 3, "api", 3}};
	static const struct pr_label lb[] = {{"__name__", 8, "x", 1}, {"long", 4,
		"0123456789012345678901234567890123456789012345678901234567890123456789"
		"0123456789012345678901234567890123456789012345678901234567890123456789", 140}};
	const struct pr_sample sa[] = {{1795305600000, 1}, {1795305615000, -0.0},
	                               {1795305630000, nan_stale}, {INT64_MAX, 1e300}};
	const struct pr_sample sb[] = {{-1, -2.5}, {INT64_MIN, INFINITY}};
	const struct pr_series series[] = {{la, 2, sa, 4}, {lb, 2, sb, 2}, {la, 1, NULL, 0}};
	const struct pr_result res[] = {{series, 2}, {series + 2, 1}};
	char *z;
	size_t zlen, n;
	(void)state;
	assert_int_equal(pr_encode(res, 2, &z, &zlen), 0);
	unsigned char *raw = uncompress(z, zlen, &n);
	assert_true(n <= pr_series_bound(&series[0]) + pr_series_bound(&series[1]) +
	                 pr_series_bound(&series[2]) + 2 * 11);
	Tsstore__Remote__ReadResponse *rr = tsstore__remote__read_response__unpack(NULL, n, raw);
	assert_non_null(rr);
	assert_int_equal(rr->n_results, 2);
	assert_int_equal(rr->results[0]->n_timeseries, 2);
	assert_int_equal(rr->results[1]->n_timeseries, 1);
	for (size_t q = 0; q < 2; q++)
		for (size_t i = 0; i < res[q].nseries; i++) {
			const Tsstore__Remote__TimeSeries *ts = rr->results[q]->timeseries[i];
			const struct pr_series *want = &res[q].series[i];
			assert_int_equal(ts->n_labels, want->nlabels);
			assert_int_equal(ts->n_samples, want->nsamples);
			for (size_t k = 0; k < want->nlabels; k++) {
				assert_int_equal(ts->labels[k]->name.len, want->labels[k].name_len);
				assert_memory_equal(ts->labels[k]->name.data, want->labels[k].name,
				                    want->labels[k].name_len);
				assert_int_equal(ts->labels[k]->value.len, want->labels[k].value_len);
				assert_memory_equal(ts->labels[k]->value.data, want->labels[k].value,
				                    want->labels[k].value_len);
			}
			for (size_t k = 0; k < want->nsamples; k++) {
				assert_int_equal(ts->samples[k]->timestamp, want->samples[k].timestamp_ms);
				assert_memory_equal(&ts->samples[k]->value, &want->samples[k].value,
				                    sizeof(double));
			}
		}
	tsstore__remote__read_response__free_unpacked(rr, NULL);
	free(raw);
	free(z);
}

/* ---- Regular expressions ---- */

/* pr_regex_posix of re: its translation, or "error: MESSAGE". */
static void regex_expect(const char *re, const char *want)
{
	char *out = NULL, err[PR_ERR_MAX], got[512];
	int rc = pr_regex_posix(re, strlen(re), &out, err, sizeof err);
	if (rc == 0)
		snprintf(got, sizeof got, "%s", out);
	else
		snprintf(got, sizeof got, "error: %s", err);
	assert_string_equal(got, want);
	assert_int_equal(rc, want[0] == 'e' && strncmp(want, "error: ", 7) == 0 ? PR_EREGEX : 0);
	free(out);
}

static void wire_promread_regex(void **state)
{
	(void)state;
	/* what both dialects share, copied */
	regex_expect("a|b", "^(a|b)$");
	regex_expect("(ab)+c*?x{2}y{1,}z{0,3}", "^((ab)+c*?x{2}y{1,}z{0,3})$");
	regex_expect("[a-z_][[:alnum:]]*[^]x]", "^([a-z_][[:alnum:]]*[^]x])$");
	regex_expect("", "^()$");
	/* RE2's own, translated */
	regex_expect("5\\d\\d", "^(5[0-9][0-9])$");
	regex_expect("\\D\\w\\W", "^([^0-9][0-9A-Za-z_][^0-9A-Za-z_])$");
	regex_expect("\\s\\S", "^([\t\n\f\r ][^\t\n\f\r ])$");
	regex_expect("[\\d.\\w-]", "^([0-9.0-9A-Za-z_-])$");
	regex_expect("[\\s\\.\\\\]", "^([\t\n\f\r .\\])$");
	regex_expect("(?:a|b)c", "^((a|b)c)$");
	regex_expect(".*", "^([^\n]*)$");
	regex_expect("\\.\\*\\(\\)\\/\\-\\n\\t", "^(\\.\\*\\(\\)/-\n\t)$");
	regex_expect("a{b}{,2}", "^(a\\{b\\}\\{,2\\})$");
	/* RE2's without a POSIX equal: refused */
	regex_expect("(?i)a", "error: (?...) flags and named groups are not taken");
	regex_expect("(?P<x>a)", "error: (?...) flags and named groups are not taken");
	regex_expect("\\bx", "error: \\b is not taken (RE2 has it, POSIX regular expressions have not)");
	regex_expect("\\pL", "error: \\p is not taken (RE2 has it, POSIX regular expressions have not)");
	regex_expect("[\\D]", "error: \\D inside [...] is not taken");
	regex_expect("[\\]]", "error: \\] inside [...] is not taken");
	regex_expect("[[.a.]]", "error: [.x.] and [=x=] inside [...] are not RE2");
	regex_expect("[a", "error: a [ without its ]");
	regex_expect("a\\", "error: a \\ at the end");
	char *out;
	assert_int_equal(pr_regex_posix("a\0b", 3, &out, NULL, 0), PR_EREGEX);
	assert_null(out);
	/* inside [...] too (fuzz_promread's oracle-nul-in-bracket) */
	assert_int_equal(pr_regex_posix("[t\0]", 4, &out, NULL, 0), PR_EREGEX);
	assert_null(out);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(wire_promread_two_queries),
		cmocka_unit_test(wire_promread_empty),
		cmocka_unit_test(wire_promread_refusals),
		cmocka_unit_test(wire_promread_encode_bytes),
		cmocka_unit_test(wire_promread_encode_roundtrip),
		cmocka_unit_test(wire_promread_regex),
	};
	return cmocka_run_group_tests_name("wire_promread", tests, NULL, NULL);
}
