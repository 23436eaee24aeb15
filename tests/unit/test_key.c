/*
 * test_key.c -- the memcomparable key encoding: memcmp order equals typed
 * order for every type (property tests over thousands of random pairs,
 * biased towards edge values), decoding inverts encoding, prefixes are
 * byte prefixes, and malformed keys are rejected.
 */
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "key.h"
#include "schema.h"

#define PAIRS 20000

static uint64_t rng_state = 0x9E3779B97F4A7C15u;

static uint64_t rnd(void)
{
	uint64_t x = rng_state;
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return rng_state = x;
}

static int64_t rnd_int(void)
{
	static const int64_t edge[] = {0, 1, -1, INT64_MIN, INT64_MAX, INT64_MIN + 1,
	                               INT64_MAX - 1, INT32_MIN, INT32_MAX, 255, 256, -256};
	switch (rnd() % 4) {
	case 0: return edge[rnd() % (sizeof edge / sizeof edge[0])];
	case 1: return (int64_t)(rnd() % 2000) - 1000;
	default: return (int64_t)rnd();
	}
}

static double rnd_double(void)
{
	static const double edge[] = {0.0, -0.0, 1.0, -1.0, INFINITY, -INFINITY, NAN, -NAN,
	                              4.9e-324, -4.9e-324, 1.7976931348623157e308, 0.5};
	uint64_t bits;
	double d;
	switch (rnd() % 4) {
	case 0: return edge[rnd() % (sizeof edge / sizeof edge[0])];
	case 1: return (double)((int64_t)(rnd() % 200) - 100) / 4;
	default:
		bits = rnd();
		memcpy(&d, &bits, 8);
		return d;
	}
}

/* Short strings over an alphabet that stresses the escaping. */
static size_t rnd_bytes(unsigned char *out)
{
	static const unsigned char alphabet[] = {0x00, 0x01, 0xff, 'a', 'b', 0xfe};
	size_t n = rnd() % 7;
	for (size_t i = 0; i < n; i++)
		out[i] = alphabet[rnd() % sizeof alphabet];
	return n;
}

static int sign(long long x) { return (x > 0) - (x < 0); }

/* The typed order the encoding must reproduce. */
static int typed_cmp(const ts_value *a, const ts_value *b)
{
	if (a->type == TS_DOUBLE) {
		double x = a->v.d, y = b->v.d;
		if (isnan(x) || isnan(y))
			return isnan(x) - isnan(y);
		return (x > y) - (x < y);
	}
	if (ts__type_is_var(a->type)) {
		size_t n = a->v.s.len < b->v.s.len ? a->v.s.len : b->v.s.len;
		int c = n ? memcmp(a->v.s.ptr, b->v.s.ptr, n) : 0;
		return c ? sign(c) : sign((long long)a->v.s.len - (long long)b->v.s.len);
	}
	return (a->v.i > b->v.i) - (a->v.i < b->v.i);
}

static int encoded_cmp(const ts_value *a, const ts_value *b)
{
	ts_buf ea, eb;
	ts__buf_init(&ea);
	ts__buf_init(&eb);
	ts__key_put(&ea, a);
	ts__key_put(&eb, b);
	int c = sign(ts__key_cmp(ea.data, ea.len, eb.data, eb.len));
	ts__buf_free(&ea);
	ts__buf_free(&eb);
	return c;
}

static void random_value(ts_type t, ts_value *v, unsigned char *store)
{
	v->type = t;
	if (t == TS_DOUBLE)
		v->v.d = rnd_double();
	else if (ts__type_is_var(t)) {
		v->v.s.len = rnd_bytes(store);
		v->v.s.ptr = store;
	} else if (t == TS_INT32)
		v->v.i = (int32_t)rnd_int();
	else
		v->v.i = rnd_int();
}

static void check_type_order(ts_type t)
{
	unsigned char sa[8], sb[8];
	for (int i = 0; i < PAIRS; i++) {
		ts_value a, b;
		random_value(t, &a, sa);
		random_value(t, &b, sb);
		int want = typed_cmp(&a, &b), got = encoded_cmp(&a, &b);
		if (want != got)
			fail_msg("%s pair %d: typed %d, encoded %d", ts_type_name(t), i, want, got);
	}
}

static void key_order_int32(void **state) { (void)state; check_type_order(TS_INT32); }
static void key_order_int64(void **state) { (void)state; check_type_order(TS_INT64); }
static void key_order_timestamp(void **state) { (void)state; check_type_order(TS_TIMESTAMP); }
static void key_order_double(void **state) { (void)state; check_type_order(TS_DOUBLE); }
static void key_order_string(void **state) { (void)state; check_type_order(TS_STRING); }
static void key_order_blob(void **state) { (void)state; check_type_order(TS_BLOB); }

/* A schema with key (s string, d double, i int32, ts). */
static ts__schema *composite_schema(void)
{
	ts_column cols[] = {
		{"s", TS_STRING, {TS_NONE, {0}}}, {"d", TS_DOUBLE, {TS_NONE, {0}}},
		{"i", TS_INT32, {TS_NONE, {0}}}, {"ts", TS_TIMESTAMP, {TS_NONE, {0}}},
	};
	const char *key[] = {"s", "d", "i", "ts"};
	ts__schema *s;
	assert_int_equal(ts__schema_build(cols, 4, key, 4, &s), 0);
	return s;
}

static int tuple_cmp(const ts_value *a, const ts_value *b, int n)
{
	for (int k = 0; k < n; k++) {
		int c = typed_cmp(&a[k], &b[k]);
		if (c)
			return c;
	}
	return 0;
}

static void random_tuple(ts_value *v, unsigned char *store)
{
	static const ts_type types[] = {TS_STRING, TS_DOUBLE, TS_INT32, TS_TIMESTAMP};
	for (int k = 0; k < 4; k++) {
		random_value(types[k], &v[k], store + 8 * k);
		/* small domains so that equal leading columns are common */
		if (k == 1)
			v[k].v.d = (double)(rnd() % 3);
		if (k == 2)
			v[k].v.i = (int64_t)(rnd() % 3) - 1;
	}
}

static void key_order_composite(void **state)
{
	(void)state;
	ts__schema *s = composite_schema();
	for (int i = 0; i < PAIRS; i++) {
		unsigned char sa[32], sb[32];
		ts_value a[4], b[4];
		ts_buf ea, eb;
		random_tuple(a, sa);
		random_tuple(b, sb);
		ts__buf_init(&ea);
		ts__buf_init(&eb);
		assert_int_equal(ts__key_encode(s, a, 4, &ea), 0);
		assert_int_equal(ts__key_encode(s, b, 4, &eb), 0);
		int got = sign(ts__key_cmp(ea.data, ea.len, eb.data, eb.len));
		if (got != tuple_cmp(a, b, 4))
			fail_msg("composite pair %d: typed %d encoded %d", i, tuple_cmp(a, b, 4), got);
		ts__buf_free(&ea);
		ts__buf_free(&eb);
	}
	ts__schema_free(s);
}

static void key_decode_roundtrip(void **state)
{
	(void)state;
	ts__schema *s = composite_schema();
	ts_buf scratch;
	ts__buf_init(&scratch);
	for (int i = 0; i < PAIRS / 4; i++) {
		unsigned char sa[32];
		ts_value a[4], back[4];
		ts_buf e;
		size_t used;
		random_tuple(a, sa);
		ts__buf_init(&e);
		assert_int_equal(ts__key_encode(s, a, 4, &e), 0);
		assert_int_equal(ts__key_decode(s, e.data, e.len, 4, back, &scratch, &used), 0);
		assert_int_equal(used, e.len);
		assert_int_equal(back[0].v.s.len, a[0].v.s.len);
		if (a[0].v.s.len)
			assert_memory_equal(back[0].v.s.ptr, a[0].v.s.ptr, a[0].v.s.len);
		assert_true(back[1].v.d == a[1].v.d);
		assert_int_equal(back[2].v.i, a[2].v.i);
		assert_int_equal(back[3].v.i, a[3].v.i);
		assert_int_equal(ts__key_ts(e.data, e.len), a[3].v.i);
		/* a prefix of n columns is a byte prefix of the key */
		for (int n = 0; n <= 4; n++) {
			ts_buf p;
			ts__buf_init(&p);
			assert_int_equal(ts__key_encode(s, a, n, &p), 0);
			assert_true(p.len <= e.len);
			assert_int_equal(ts__key_prefix_len(s, e.data, e.len, n), (long)p.len);
			if (p.len)
				assert_memory_equal(p.data, e.data, p.len);
			ts__buf_free(&p);
		}
		ts__buf_free(&e);
	}
	ts__buf_free(&scratch);
	ts__schema_free(s);
}

static void key_exact_bytes(void **state)
{
	(void)state;
	/* "a\0" then int64 -1 then ts 0 */
	ts__schema *s;
	ts_column cols[] = {{"h", TS_STRING, {TS_NONE, {0}}}, {"n", TS_INT64, {TS_NONE, {0}}}};
	const char *key[] = {"h", "n", "ts"};
	assert_int_equal(ts__schema_build(cols, 2, key, 3, &s), 0);
	ts_value v[3] = {ts_stringn("a\0", 2), ts_int64(-1), ts_timestamp(0)};
	static const unsigned char want[] = {
		'a', 0x00, 0xff, 0x00, 0x01,
		0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
		0x80, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	};
	ts_buf e;
	ts__buf_init(&e);
	assert_int_equal(ts__key_encode(s, v, 3, &e), 0);
	assert_int_equal(e.len, sizeof want);
	assert_memory_equal(e.data, want, sizeof want);
	ts__buf_free(&e);
	ts__schema_free(s);
}

static void key_double_canonical(void **state)
{
	(void)state;
	ts_value pz = ts_double(0.0), nz = ts_double(-0.0), n1 = ts_double(NAN),
	         n2 = ts_double(-NAN), inf = ts_double(INFINITY);
	assert_int_equal(encoded_cmp(&pz, &nz), 0);
	assert_int_equal(encoded_cmp(&n1, &n2), 0);
	assert_int_equal(encoded_cmp(&inf, &n1), -1);
	assert_true(signbit(ts__key_canonical_double(-0.0)) == 0);
}

static void key_rejects_malformed(void **state)
{
	(void)state;
	ts__schema *s = composite_schema();
	ts_value v[4];
	ts_buf scratch;
	ts__buf_init(&scratch);
	/* unterminated string */
	static const unsigned char k1[] = {'a', 'b'};
	assert_int_equal(ts__key_decode(s, k1, sizeof k1, 4, v, &scratch, NULL), TS_ECORRUPT);
	/* bad escape 0x00 0x02 */
	static const unsigned char k2[] = {'a', 0x00, 0x02};
	assert_int_equal(ts__key_decode(s, k2, sizeof k2, 1, v, &scratch, NULL), TS_ECORRUPT);
	/* string fine but the double is cut short */
	static const unsigned char k3[] = {'a', 0x00, 0x01, 0x80, 0x00};
	assert_int_equal(ts__key_decode(s, k3, sizeof k3, 2, v, &scratch, NULL), TS_ECORRUPT);
	assert_int_equal(ts__key_prefix_len(s, k3, sizeof k3, 2), -1);
	ts__buf_free(&scratch);
	ts__schema_free(s);
}

static void key_too_long(void **state)
{
	(void)state;
	ts__schema *s = composite_schema();
	char *big = malloc(5000);
	memset(big, 'x', 5000);
	ts_value v[4] = {ts_stringn(big, 5000), ts_double(0), ts_int32(0), ts_timestamp(0)};
	ts_buf e;
	ts__buf_init(&e);
	assert_int_equal(ts__key_encode(s, v, 4, &e), TS_ETOOBIG);
	ts__buf_free(&e);
	free(big);
	ts__schema_free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(key_order_int32),
		cmocka_unit_test(key_order_int64),
		cmocka_unit_test(key_order_timestamp),
		cmocka_unit_test(key_order_double),
		cmocka_unit_test(key_order_string),
		cmocka_unit_test(key_order_blob),
		cmocka_unit_test(key_order_composite),
		cmocka_unit_test(key_decode_roundtrip),
		cmocka_unit_test(key_exact_bytes),
		cmocka_unit_test(key_double_canonical),
		cmocka_unit_test(key_rejects_malformed),
		cmocka_unit_test(key_too_long),
	};
	return cmocka_run_group_tests_name("key", tests, NULL, NULL);
}
