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
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
