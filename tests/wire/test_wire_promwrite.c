/*
 * test_wire_promwrite.c -- remote write bodies decoded (wire/promwrite.c):
 * WriteRequests written here byte by byte in protobuf's wire form (so the
 * test does not lean on the code generated from remote.proto), snappy-
 * compressed, and the exact series, labels and samples expected; then
 * each way a body can be refused, with its code and message.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <snappy-c.h>

#include "test_proto.h"
#include "wire/promwrite.h"

/* ---- Protobuf by hand ---- */

/* A Label message. */
static void label(struct bytes *series, const char *name, const char *value)
{
	struct bytes l = {0};
	if (*name)
		field_bytes(&l, 1, name, strlen(name));
	if (*value)
		field_bytes(&l, 2, value, strlen(value));
	field_msg(series, 1, &l);
}

/* A Sample message: value (field 1, fixed64) and timestamp (2, varint). */
static void sample(struct bytes *series, double v, int64_t ms)
{
	struct bytes s = {0};
	unsigned char f = 1 << 3 | 1;
	uint64_t bits;
	memcpy(&bits, &v, 8);
	put_bytes(&s, &f, 1);
	for (int i = 0; i < 8; i++) {
		unsigned char c = (unsigned char)(bits >> (8 * i));
		put_bytes(&s, &c, 1);
	}
	varint(&s, 2 << 3 | 0);
	varint(&s, (uint64_t)ms);
	field_msg(series, 2, &s);
}

/* Decode the request req (uncompressed) with max_decoded; returns the code. */
static int decode(const struct bytes *req, size_t max_decoded, struct pw_request *out,
                  char *err)
{
	size_t len;
	char *body = snappy(req, &len);
	int rc = pw_decode(body, len, max_decoded, out, err, PW_ERR_MAX);
	free(body);
	return rc;
}

static void assert_label(const struct pw_label *l, const char *name, const char *value)
{
	assert_int_equal(l->name_len, strlen(name));
	assert_memory_equal(l->name, name, l->name_len);
	assert_int_equal(l->value_len, strlen(value));
	assert_memory_equal(l->value, value, l->value_len);
}

/* ---- Tests ---- */

/* Two series; labels and samples in the order sent, values exact. */
static void wire_promwrite_two_series(void **state)
{
	struct bytes s1 = {0}, s2 = {0}, req = {0};
	struct pw_request r;
	char err[PW_ERR_MAX] = "";
	label(&s1, "__name__", "up");
	label(&s1, "job", "node");
	sample(&s1, 1.0, 1700000000000);
	sample(&s1, -0.25, 1700000015000);
	label(&s2, "__name__", "temp");
	sample(&s2, 21.5, -5);
	field_bytes(&req, 1, s1.p, s1.n);
	field_bytes(&req, 1, s2.p, s2.n);
	assert_int_equal(decode(&req, 1 << 20, &r, err), 0);
	assert_string_equal(err, "");
	assert_int_equal(r.decoded_len, req.n);
	assert_int_equal(r.nseries, 2);
	assert_int_equal(r.samples, 3);
	assert_int_equal(r.series[0].nlabels, 2);
	assert_label(&r.series[0].labels[0], "__name__", "up");
	assert_label(&r.series[0].labels[1], "job", "node");
	assert_int_equal(r.series[0].nsamples, 2);
	assert_true(r.series[0].samples[0].value == 1.0);
	assert_int_equal(r.series[0].samples[0].timestamp_ms, 1700000000000);
	assert_true(r.series[0].samples[1].value == -0.25);
	assert_int_equal(r.series[0].samples[1].timestamp_ms, 1700000015000);
	assert_int_equal(r.series[1].nlabels, 1);
	assert_label(&r.series[1].labels[0], "__name__", "temp");
	assert_int_equal(r.series[1].nsamples, 1);
	assert_true(r.series[1].samples[0].value == 21.5);
	assert_int_equal(r.series[1].samples[0].timestamp_ms, -5);
	pw_request_free(&r);
	assert_null(r.mem_);
	pw_request_free(&r); /* a freed request frees nothing */
	free(s1.p);
	free(s2.p);
	free(req.p);
}

/* An empty message is a request of no series; unknown fields (metadata,
 * exemplars) are skipped; an empty label is kept as sent. */
static void wire_promwrite_empty_and_unknown(void **state)
{
	struct bytes req = {0}, s = {0};
	struct pw_request r;
	assert_int_equal(decode(&req, 1 << 20, &r, NULL), 0);
	assert_int_equal(r.nseries, 0);
	assert_int_equal(r.samples, 0);
	pw_request_free(&r);
	label(&s, "__name__", "m");
	label(&s, "", "");
	field_bytes(&s, 3, "exemplar", 8);   /* TimeSeries.exemplars */
	sample(&s, 2.0, 7);
	field_bytes(&req, 1, s.p, s.n);
	field_bytes(&req, 3, "metadata", 8); /* WriteRequest.metadata */
	assert_int_equal(decode(&req, 1 << 20, &r, NULL), 0);
	assert_int_equal(r.nseries, 1);
	assert_int_equal(r.series[0].nlabels, 2);
	assert_label(&r.series[0].labels[1], "", "");
	assert_int_equal(r.series[0].nsamples, 1);
	assert_int_equal(r.series[0].samples[0].timestamp_ms, 7);
	pw_request_free(&r);
	free(s.p);
	free(req.p);
}

/* The worst case of memory per byte on the wire: 200,000 empty labels
 * (2 bytes each) are still decoded, under PW_UNPACK_FACTOR. */
static void wire_promwrite_many_empty_labels(void **state)
{
	struct bytes s = {0}, req = {0};
	struct pw_request r;
	for (int i = 0; i < 200000; i++)
		field_bytes(&s, 1, "", 0);
	sample(&s, 1.0, 1);
	field_bytes(&req, 1, s.p, s.n);
	assert_int_equal(decode(&req, 1 << 20, &r, NULL), 0);
	assert_int_equal(r.series[0].nlabels, 200000);
	assert_int_equal(r.series[0].labels[199999].name_len, 0);
	pw_request_free(&r);
	free(s.p);
	free(req.p);
}

/* Series that repeat labels: at the same position as the previous
 * series (taken from it), elsewhere (from the label cache), and two
 * labels of one length and one last 8 bytes (one cache slot): every
 * label exactly as sent, a repeated one decoded once. */
static void wire_promwrite_shared_labels(void **state)
{
	static const char *const want[][3][2] = {
		{{"__name__", "cpu_a"}, {"host", "h1"}, {"region", "eu"}},
		{{"__name__", "cpu_b"}, {"host", "h1"}, {"region", "eu"}},
		{{"__name__", "cpu_a"}, {"host", "h2"}, {"region", "eu"}},
		{{"region", "eu"}, {"__name__", "cpu_b"}, {"host", "h1"}},
		{{"a", "0123456789"}, {"__name__", "m"}, {"", ""}},
		{{"b", "0123456789"}, {"__name__", "m"}, {"", ""}},
		{{"a", "0123456789"}, {"__name__", "m"}, {"", ""}},
	};
	size_t ns = sizeof want / sizeof want[0];
	struct bytes s = {0}, req = {0};
	struct pw_request r;
	for (size_t i = 0; i < ns; i++) {
		s.n = 0;
		for (int k = 0; k < 3; k++)
			label(&s, want[i][k][0], want[i][k][1]);
		sample(&s, (double)i, (int64_t)i);
		field_bytes(&req, 1, s.p, s.n);
	}
	assert_int_equal(decode(&req, 1 << 20, &r, NULL), 0);
	assert_int_equal(r.nseries, ns);
	for (size_t i = 0; i < ns; i++) {
		assert_int_equal(r.series[i].nlabels, 3);
		for (int k = 0; k < 3; k++)
			assert_label(&r.series[i].labels[k], want[i][k][0], want[i][k][1]);
		assert_int_equal(r.series[i].samples[0].timestamp_ms, (int64_t)i);
	}
	/* decoded once: series 2's host and region are series 1's, series
	 * 4's labels those of series 2 and 1 */
	assert_ptr_equal(r.series[1].labels[1].value, r.series[0].labels[1].value);
	assert_ptr_equal(r.series[1].labels[2].name, r.series[0].labels[2].name);
	assert_ptr_equal(r.series[3].labels[0].value, r.series[0].labels[2].value);
	assert_ptr_equal(r.series[3].labels[1].value, r.series[1].labels[0].value);
	/* a and b share a slot (one length, one last 8 bytes): b took it,
	 * and series 7's a was unpacked again -- as a, not as b */
	assert_ptr_not_equal(r.series[6].labels[0].name, r.series[4].labels[0].name);
	assert_ptr_equal(r.series[6].labels[1].value, r.series[5].labels[1].value);
	pw_request_free(&r);
	free(s.p);
	free(req.p);
}

/* A label whose bytes are no Label message refuses the body, as the full
 * decoding would: after labels met before, and in the first series. */
static void wire_promwrite_bad_label(void **state)
{
	static const struct { const char *bytes; size_t len; } bad[] = {
		{"\x0a\x05" "ab", 4},        /* name: 5 bytes said, 2 follow */
		{"\x0f", 1},                /* field 1 of wire type 7 */
		{"\x12\x01x\x08", 4},      /* value, then a varint's tag and no varint */
	};
	char err[PW_ERR_MAX], want[PW_ERR_MAX];
	for (size_t b = 0; b < sizeof bad / sizeof bad[0]; b++)
		for (int first = 0; first < 2; first++) {
			struct bytes s1 = {0}, s2 = {0}, req = {0};
			struct pw_request r;
			label(&s1, "__name__", "up");
			label(&s1, "job", "node");
			sample(&s1, 1.0, 1);
			label(&s2, "__name__", "up");
			label(&s2, "job", "node");
			field_bytes(&s2, 1, bad[b].bytes, bad[b].len);
			sample(&s2, 2.0, 2);
			if (!first)
				field_bytes(&req, 1, s1.p, s1.n);
			field_bytes(&req, 1, s2.p, s2.n);
			assert_int_equal(decode(&req, 1 << 20, &r, err), PW_EPROTO);
			snprintf(want, sizeof want, "protobuf: the %zu bytes decoded from snappy are not a "
			         "remote write WriteRequest (a label is no Label message)", req.n);
			assert_string_equal(err, want);
			assert_int_equal(r.decoded_len, req.n);
			assert_null(r.mem_);
			assert_null(r.series);
			free(s1.p);
			free(s2.p);
			free(req.p);
		}
}

/* Each refusal: its code, decoded_len when known, its message. */
static void wire_promwrite_refusals(void **state)
{
	struct pw_request r;
	char err[PW_ERR_MAX];
	struct bytes req = {0}, s = {0};
	/* a length prefix running off the end */
	assert_int_equal(pw_decode("\xff\xff", 2, 1 << 20, &r, err, sizeof err), PW_ENOTSNAPPY);
	assert_string_equal(err, "snappy: not snappy-compressed data (block format): its length "
	                    "prefix is bad");
	assert_int_equal(r.decoded_len, 0);
	assert_null(r.series);
	/* a good prefix (5 bytes), then a copy reaching before the start */
	assert_int_equal(pw_decode("\x05\x01\x09", 3, 1 << 20, &r, err, sizeof err), PW_EDAMAGED);
	assert_string_equal(err, "snappy: the compressed data is damaged");
	assert_int_equal(r.decoded_len, 5);
	/* more than max_decoded once decoded */
	label(&s, "__name__", "a_rather_long_metric_name");
	field_bytes(&req, 1, s.p, s.n);
	assert_int_equal(decode(&req, 10, &r, err), PW_ETOOBIG);
	snprintf((char *)s.p, s.cap, "%zu bytes once decoded from snappy, more than the 10 allowed",
	         req.n);
	assert_string_equal(err, (char *)s.p);
	assert_int_equal(r.decoded_len, req.n);
	/* snappy, but not protobuf: field 1 says 5 bytes, 1 follows */
	req.n = 0;
	put_bytes(&req, "\x0a\x05x", 3);
	assert_int_equal(decode(&req, 1 << 20, &r, err), PW_EPROTO);
	assert_string_equal(err, "protobuf: the 3 bytes decoded from snappy are not a remote write "
	                    "WriteRequest");
	assert_int_equal(r.decoded_len, 3);
	assert_null(r.mem_);
	/* err may be NULL */
	assert_int_equal(pw_decode("", 0, 1 << 20, &r, NULL, 0), PW_ENOTSNAPPY);
	assert_string_equal(pw_strerror(PW_EPROTO), "not a WriteRequest");
	assert_string_equal(pw_strerror(1), "unknown error");
	free(s.p);
	free(req.p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(wire_promwrite_two_series),
		cmocka_unit_test(wire_promwrite_empty_and_unknown),
		cmocka_unit_test(wire_promwrite_many_empty_labels),
		cmocka_unit_test(wire_promwrite_refusals),
		cmocka_unit_test(wire_promwrite_shared_labels),
		cmocka_unit_test(wire_promwrite_bad_label),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
