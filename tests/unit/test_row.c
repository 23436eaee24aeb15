/*
 * test_row.c -- row encoding: round trips of random rows of every column
 * type, translation of old rows into later schema versions (appended
 * columns, widened int32), the exact bytes of a small row, rejection
 * of every truncation of an encoded row, and the decoding of projected
 * columns only (ts__row_decode_values) against the full decode.
 */
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "row.h"
#include "key.h"

static uint64_t rng_state = 88172645463325252u;

static uint64_t rnd(void)
{
	uint64_t x = rng_state;
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return rng_state = x;
}

/* Columns of every type; key (host, id, ts). */
static ts__schema *wide_schema(void)
{
	ts_column cols[] = {
		{"host", TS_STRING, {TS_NONE, {0}}},
		{"id", TS_INT32, {TS_NONE, {0}}},
		{"ts", TS_TIMESTAMP, {TS_NONE, {0}}},
		{"a", TS_INT32, {TS_NONE, {0}}},
		{"b", TS_INT64, {TS_NONE, {0}}},
		{"c", TS_DOUBLE, {TS_NONE, {0}}},
		{"note", TS_STRING, {TS_NONE, {0}}},
		{"t2", TS_TIMESTAMP, {TS_NONE, {0}}},
		{"raw", TS_BLOB, {TS_NONE, {0}}},
	};
	const char *key[] = {"host", "id", "ts"};
	ts__schema *s;
	assert_int_equal(ts__schema_build(cols, 9, key, 3, &s), 0);
	return s;
}

static void fill_random(const ts__schema *s, ts_value *v, unsigned char *store)
{
	for (int i = 0; i < s->ncols; i++) {
		ts_type t = s->cols[i].type;
		v[i].type = t;
		if (ts__type_is_var(t)) {
			size_t n = rnd() % 40;
			for (size_t j = 0; j < n; j++)
				store[j] = t == TS_BLOB ? (unsigned char)rnd() : (unsigned char)('a' + rnd() % 26);
			if (t == TS_BLOB && n > 2)
				store[1] = 0; /* NULs inside values */
			v[i].v.s.ptr = store;
			v[i].v.s.len = n;
			store += 64;
		} else if (t == TS_DOUBLE) {
			v[i].v.d = (double)(int64_t)rnd() / 1e9;
		} else if (t == TS_INT32) {
			v[i].v.i = (int32_t)rnd();
		} else {
			v[i].v.i = (int64_t)rnd();
		}
	}
}

static void assert_values_equal(const ts_value *a, const ts_value *b, int n)
{
	for (int i = 0; i < n; i++) {
		assert_int_equal(a[i].type, b[i].type);
		if (ts__type_is_var(a[i].type)) {
			assert_int_equal(a[i].v.s.len, b[i].v.s.len);
			if (a[i].v.s.len)
				assert_memory_equal(a[i].v.s.ptr, b[i].v.s.ptr, a[i].v.s.len);
		} else if (a[i].type == TS_DOUBLE) {
			assert_true(a[i].v.d == b[i].v.d);
		} else {
			assert_int_equal(a[i].v.i, b[i].v.i);
		}
	}
}

static void row_roundtrip_random(void **state)
{
	(void)state;
	ts__schema *s = wide_schema();
	unsigned char store[64 * 16];
	ts_value in[9], out[9];
	ts_buf b, scratch;
	ts__buf_init(&scratch);
	for (int i = 0; i < 5000; i++) {
		ts__buf_init(&b);
		fill_random(s, in, store);
		assert_int_equal(ts__row_encode(s, in, &b), 0);
		assert_int_equal(ts__row_decode(s, s, b.data, b.len, out, &scratch), 0);
		assert_values_equal(in, out, 9);
		const void *key;
		size_t klen;
		assert_int_equal(ts__row_key(b.data, b.len, &key, &klen), 0);
		assert_int_equal(ts__key_ts(key, klen), in[2].v.i);
		ts__buf_free(&b);
	}
	ts__buf_free(&scratch);
	ts__schema_free(s);
}

static void row_exact_bytes(void **state)
{
	(void)state;
	ts_column cols[] = {
		{"host", TS_STRING, {TS_NONE, {0}}},
		{"ts", TS_TIMESTAMP, {TS_NONE, {0}}},
		{"n", TS_INT32, {TS_NONE, {0}}},
		{"msg", TS_STRING, {TS_NONE, {0}}},
	};
	const char *key[] = {"host", "ts"};
	ts__schema *s;
	assert_int_equal(ts__schema_build(cols, 4, key, 2, &s), 0);
	ts_value v[] = {ts_string("h"), ts_timestamp(1), ts_int32(-2), ts_string("ok")};
	static const unsigned char want[] = {
		11, 'h', 0x00, 0x01, 0x80, 0, 0, 0, 0, 0, 0, 1, /* key */
		0xfe, 0xff, 0xff, 0xff,                         /* n = -2 */
		2, 'o', 'k',                                    /* msg */
	};
	ts_buf b;
	ts__buf_init(&b);
	assert_int_equal(ts__row_encode(s, v, &b), 0);
	assert_int_equal(b.len, sizeof want);
	assert_memory_equal(b.data, want, sizeof want);
	ts__buf_free(&b);
	ts__schema_free(s);
}

static void row_translate_schema_versions(void **state)
{
	(void)state;
	ts_column cols[] = {
		{"host", TS_STRING, {TS_NONE, {0}}},
		{"ts", TS_TIMESTAMP, {TS_NONE, {0}}},
		{"n", TS_INT32, {TS_NONE, {0}}},
	};
	const char *key[] = {"host", "ts"};
	ts__schema *v1, *v2, *v3;
	assert_int_equal(ts__schema_build(cols, 3, key, 2, &v1), 0);
	ts_column extra = {"zone", TS_STRING, {TS_STRING, {.s = {"eu", 2}}}};
	assert_int_equal(ts__schema_add(v1, &extra, &v2), 0);
	assert_int_equal(ts__schema_widen(v2, "n", &v3), 0);
	assert_int_equal(v3->version, 3);

	ts_value in[] = {ts_string("h1"), ts_timestamp(42), ts_int32(-7)};
	ts_value out[4];
	ts_buf b, scratch;
	ts__buf_init(&b);
	ts__buf_init(&scratch);
	assert_int_equal(ts__row_encode(v1, in, &b), 0);
	assert_int_equal(ts__row_decode(v1, v3, b.data, b.len, out, &scratch), 0);
	assert_int_equal(out[2].type, TS_INT64);
	assert_int_equal(out[2].v.i, -7);
	assert_int_equal(out[3].type, TS_STRING);
	assert_int_equal(out[3].v.s.len, 2);
	assert_memory_equal(out[3].v.s.ptr, "eu", 2);
	ts__buf_free(&b);

	/* a v3 row with a value beyond int32 */
	ts_value in3[] = {ts_string("h1"), ts_timestamp(43), ts_int64(INT64_C(1) << 40), ts_string("us")};
	ts__buf_init(&b);
	assert_int_equal(ts__row_encode(v3, in3, &b), 0);
	assert_int_equal(ts__row_decode(v3, v3, b.data, b.len, out, &scratch), 0);
	assert_int_equal(out[2].v.i, INT64_C(1) << 40);
	ts__buf_free(&b);
	ts__buf_free(&scratch);
	ts__schema_free(v1);
	ts__schema_free(v2);
	ts__schema_free(v3);
}

/* Random projections of non-key columns decode as the full decode does,
 * leave the key's values alone, and translate old rows; a row cut inside
 * its fixed part is refused. */
static void row_decode_values_projected(void **state)
{
	(void)state;
	ts__schema *s = wide_schema(), *s2;
	ts_column extra = {"zone", TS_STRING, {TS_STRING, {.s = {"eu", 2}}}};
	assert_int_equal(ts__schema_add(s, &extra, &s2), 0);
	int nonkey[] = {3, 4, 5, 6, 7, 8, 9}; /* a b c note t2 raw zone */
	unsigned char store[64 * 16];
	ts_value in[9], full[10], part[10];
	ts_buf b, scratch;
	ts__buf_init(&scratch);
	for (int i = 0; i < 2000; i++) {
		ts__buf_init(&b);
		fill_random(s, in, store);
		assert_int_equal(ts__row_encode(s, in, &b), 0);
		ts__schema *to = i % 2 ? s2 : s;
		int ncols = to->ncols;
		assert_int_equal(ts__row_decode(s, to, b.data, b.len, full, &scratch), 0);
		int want[7], n = 0;
		for (int k = 0; k < ncols - 3; k++)
			if (rnd() % 2)
				want[n++] = nonkey[k];
		memset(part, 0xA5, sizeof part);
		assert_int_equal(ts__row_decode_values(s, to, b.data, b.len, part, want, n), 0);
		for (int c = 0, k = 0; c < ncols; c++) {
			if (k < n && want[k] == c) {
				assert_values_equal(&full[c], &part[c], 1);
				k++;
			} else if (c < 3) { /* key columns */
				const unsigned char *p = (const unsigned char *)&part[c];
				for (size_t j = 0; j < sizeof part[c]; j++)
					assert_int_equal(p[j], 0xA5); /* untouched */
			}
		}
		/* cut inside the fixed part: refused */
		size_t klen = (size_t)b.data[0] + 1;
		assert_int_equal(ts__row_decode_values(s, to, b.data, klen + 3, part, want, n),
		                 TS_ECORRUPT);
		ts__buf_free(&b);
	}
	ts__buf_free(&scratch);
	ts__schema_free(s2);
	ts__schema_free(s);
}

static void row_rejects_truncation(void **state)
{
	(void)state;
	ts__schema *s = wide_schema();
	unsigned char store[64 * 16];
	ts_value in[9], out[9];
	ts_buf b, scratch;
	ts__buf_init(&b);
	ts__buf_init(&scratch);
	fill_random(s, in, store);
	assert_int_equal(ts__row_encode(s, in, &b), 0);
	for (size_t n = 0; n < b.len; n++)
		assert_int_equal(ts__row_decode(s, s, b.data, n, out, &scratch), TS_ECORRUPT);
	/* trailing garbage too */
	ts__put_u8(&b, 0);
	assert_int_equal(ts__row_decode(s, s, b.data, b.len, out, &scratch), TS_ECORRUPT);
	ts__buf_free(&b);
	ts__buf_free(&scratch);
	ts__schema_free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(row_roundtrip_random),
		cmocka_unit_test(row_exact_bytes),
		cmocka_unit_test(row_translate_schema_versions),
		cmocka_unit_test(row_rejects_truncation),
		cmocka_unit_test(row_decode_values_projected),
	};
	return cmocka_run_group_tests_name("row", tests, NULL, NULL);
}
