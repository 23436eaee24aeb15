/*
 * test_schema.c -- schema building and validation below the public API:
 * the row layout, value checks and conversions, UTF-8 validation, the
 * public copy, the size limit of defaults, and the encode/decode of schema
 * records (including names with a NUL inside and defaults written before
 * the limit).
 */
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "error.h"
#include "schema.h"

#define COL(n, t) {n, t, {TS_NONE, {0}}}

static ts__schema *metrics_schema(void)
{
	ts_column cols[] = {COL("host", TS_STRING), COL("cpu", TS_INT32), COL("ts", TS_TIMESTAMP),
	                    COL("user", TS_DOUBLE), COL("n", TS_INT32), COL("tag", TS_STRING),
	                    COL("big", TS_INT64), COL("raw", TS_BLOB)};
	const char *key[] = {"host", "cpu", "ts"};
	ts__schema *s;
	assert_int_equal(ts__schema_build(cols, 8, key, 3, &s), 0);
	return s;
}

static void schema_layout(void **state)
{
	(void)state;
	ts__schema *s = metrics_schema();
	assert_int_equal(s->nkey, 3);
	assert_int_equal(s->key[0], 0);
	assert_int_equal(s->key[2], 2);
	assert_int_equal(s->ts_col, 2);
	assert_int_equal(s->cols[0].key_pos, 0);
	assert_int_equal(s->cols[0].fixed_off, -1);
	assert_int_equal(s->cols[3].fixed_off, 0);  /* user: 8 */
	assert_int_equal(s->cols[4].fixed_off, 8);  /* n: 4 */
	assert_int_equal(s->cols[6].fixed_off, 12); /* big: 8 */
	assert_int_equal(s->fixed_size, 20);
	assert_int_equal(s->nvar, 2);
	assert_int_equal(s->var_cols[0], 5);
	assert_int_equal(s->var_cols[1], 7);
	assert_int_equal(s->cols[7].var_idx, 1);
	ts__schema_free(s);
}

static void schema_value_check_conversions(void **state)
{
	(void)state;
	ts__schema *s = metrics_schema();
	ts_value out, in;
	/* int64 into int32 when in range */
	in = ts_int64(-5);
	assert_int_equal(ts__value_check(s, 1, &in, &out), 0);
	assert_int_equal(out.type, TS_INT32);
	assert_int_equal(out.v.i, -5);
	in = ts_int64(INT64_C(1) << 31);
	assert_int_equal(ts__value_check(s, 1, &in, &out), TS_ERANGE);
	assert_non_null(strstr(ts_errmsg(NULL), "\"cpu\""));
	/* integers into double */
	in = ts_int64(3);
	assert_int_equal(ts__value_check(s, 3, &in, &out), 0);
	assert_int_equal(out.type, TS_DOUBLE);
	assert_true(out.v.d == 3.0);
	/* wrong types */
	in = ts_double(1.5);
	assert_int_equal(ts__value_check(s, 4, &in, &out), TS_ETYPE);
	assert_non_null(strstr(ts_errmsg(NULL), "expected int32, got double"));
	in = ts_int64(1);
	assert_int_equal(ts__value_check(s, 5, &in, &out), TS_ETYPE);
	in = ts_blob("x", 1);
	assert_int_equal(ts__value_check(s, 5, &in, &out), TS_ETYPE);
	/* strings are accepted for blobs, bad UTF-8 is not a string */
	in = ts_string("abc");
	assert_int_equal(ts__value_check(s, 7, &in, &out), 0);
	assert_int_equal(out.type, TS_BLOB);
	in = ts_stringn("\xff", 1);
	assert_int_equal(ts__value_check(s, 5, &in, &out), TS_EINVAL);
	/* missing values take the default */
	in = ts_none();
	assert_int_equal(ts__value_check(s, 6, &in, &out), 0);
	assert_int_equal(out.type, TS_INT64);
	assert_int_equal(out.v.i, 0);
	ts__schema_free(s);
}

static void schema_utf8(void **state)
{
	(void)state;
	struct { const char *s; size_t n; int ok; } cases[] = {
		{"", 0, 1}, {"plain", 5, 1}, {"a\0b", 3, 1},
		{"\xc3\xa9", 2, 1},            /* e acute */
		{"\xe2\x82\xac", 3, 1},        /* euro */
		{"\xf0\x9f\x98\x80", 4, 1},    /* emoji */
		{"\xc3", 1, 0},                /* truncated */
		{"\xc0\x80", 2, 0},            /* overlong NUL */
		{"\xe0\x80\xaf", 3, 0},        /* overlong */
		{"\xed\xa0\x80", 3, 0},        /* surrogate */
		{"\xf4\x90\x80\x80", 4, 0},    /* > U+10FFFF */
		{"\x80", 1, 0}, {"\xff", 1, 0}, {"\xf8\x88\x80\x80\x80", 5, 0},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
		if (ts__utf8_valid(cases[i].s, cases[i].n) != cases[i].ok)
			fail_msg("utf8 case %zu", i);
}

static void schema_export_copy(void **state)
{
	(void)state;
	ts_column cols[] = {COL("host", TS_STRING), {"zone", TS_STRING, {TS_STRING, {.s = {"e\0u", 3}}}},
	                    {"n", TS_INT32, {TS_INT64, {.i = 7}}}};
	const char *key[] = {"host", "ts"};
	ts__schema *s;
	ts_schema *pub;
	assert_int_equal(ts__schema_build(cols, 3, key, 2, &s), 0);
	assert_int_equal(ts__schema_export(s, 3600, &pub), 0);
	ts__schema_free(s); /* the copy stands alone */
	assert_int_equal(pub->ncolumns, 4);
	assert_string_equal(pub->columns[1].name, "ts"); /* implicit, after host */
	assert_string_equal(pub->columns[2].name, "zone");
	assert_int_equal(pub->columns[2].dflt.v.s.len, 3);
	assert_memory_equal(pub->columns[2].dflt.v.s.ptr, "e\0u", 3);
	assert_int_equal(pub->columns[3].dflt.type, TS_INT32);
	assert_int_equal(pub->columns[3].dflt.v.i, 7);
	assert_int_equal(pub->nkey, 2);
	assert_int_equal(pub->key[1], 1);
	assert_int_equal(pub->ttl, 3600);
	assert_int_equal(pub->version, 1);
	ts_schema_free(pub);
}

static void schema_record_roundtrip(void **state)
{
	(void)state;
	ts__schema *s = metrics_schema(), *back;
	ts_buf b;
	ts_reader r;
	ts__buf_init(&b);
	ts__schema_encode(s, &b);
	ts__reader_init(&r, b.data, b.len);
	assert_int_equal(ts__schema_decode(&r, &back), 0);
	assert_int_equal(ts__reader_left(&r), 0);
	assert_int_equal(back->ncols, s->ncols);
	assert_int_equal(back->fixed_size, s->fixed_size);
	for (int i = 0; i < s->ncols; i++) {
		assert_string_equal(back->cols[i].name, s->cols[i].name);
		assert_int_equal(back->cols[i].type, s->cols[i].type);
	}
	/* every truncation fails cleanly */
	for (size_t n = 0; n < b.len; n++) {
		ts__schema *x = NULL;
		ts__reader_init(&r, b.data, n);
		assert_int_equal(ts__schema_decode(&r, &x), TS_ECORRUPT);
		assert_null(x);
	}
	ts__buf_free(&b);
	ts__schema_free(back);
	ts__schema_free(s);
}

static void schema_widen_and_add_errors(void **state)
{
	(void)state;
	ts__schema *s = metrics_schema(), *x;
	ts_column dup = COL("HOST", TS_INT64);
	assert_int_equal(ts__schema_add(s, &dup, &x), TS_EEXIST);
	ts_column bad = COL("9x", TS_INT64);
	assert_int_equal(ts__schema_add(s, &bad, &x), TS_ESCHEMA);
	assert_int_equal(ts__schema_widen(s, "user", &x), TS_ESCHEMA);
	assert_int_equal(ts__schema_widen(s, "nope", &x), TS_ENOENT);
	/* widening a key column keeps the key layout */
	assert_int_equal(ts__schema_widen(s, "cpu", &x), 0);
	assert_int_equal(x->cols[1].type, TS_INT64);
	assert_int_equal(x->cols[1].key_pos, 1);
	assert_int_equal(x->version, 2);
	ts__schema_free(x);
	ts__schema_free(s);
}

/* Bytes for long defaults: TS_VALUE_MAX + 1 of them. */
static char *long_bytes(void)
{
	char *p = malloc((size_t)TS_VALUE_MAX + 1);
	assert_non_null(p);
	memset(p, 'x', (size_t)TS_VALUE_MAX + 1);
	return p;
}

static void assert_errmsg(const char *want)
{
	if (strcmp(ts_errmsg(NULL), want) != 0)
		fail_msg("message \"%s\", want \"%s\"", ts_errmsg(NULL), want);
}

static void schema_default_size_limit(void **state)
{
	(void)state;
	char *bytes = long_bytes();
	ts_column cols[] = {COL("host", TS_STRING),
	                    {"note", TS_STRING, ts_stringn(bytes, TS_COLUMN_DEFAULT_MAX)}};
	const char *key[] = {"host", "ts"};
	ts__schema *s, *x = (ts__schema *)&x;
	assert_int_equal(TS_COLUMN_DEFAULT_MAX, 65536);
	/* exactly the limit is accepted (columns: host, ts, note) */
	assert_int_equal(ts__schema_build(cols, 2, key, 2, &s), 0);
	assert_int_equal(s->cols[2].dflt.v.s.len, 65536);
	/* one byte more is an invalid schema naming the column */
	cols[1].dflt.v.s.len = 65537;
	assert_int_equal(ts__schema_build(cols, 2, key, 2, &x), TS_ESCHEMA);
	assert_null(x);
	assert_errmsg("column \"note\": default of 65537 bytes exceeds the limit of 65536");
	/* past TS_VALUE_MAX too it is the defaults' limit that is quoted */
	cols[1].dflt.v.s.len = (size_t)TS_VALUE_MAX + 1;
	assert_int_equal(ts__schema_build(cols, 2, key, 2, &x), TS_ESCHEMA);
	assert_errmsg("column \"note\": default of 16777217 bytes exceeds the limit of 65536");
	/* a blob default of a column added later */
	ts_column raw = {"raw", TS_BLOB, ts_blob(bytes, 65537)};
	x = (ts__schema *)&x;
	assert_int_equal(ts__schema_add(s, &raw, &x), TS_ESCHEMA);
	assert_null(x);
	assert_errmsg("column \"raw\": default of 65537 bytes exceeds the limit of 65536");
	/* a string default for a blob column counts the same */
	raw.dflt = ts_stringn(bytes, 65537);
	assert_int_equal(ts__schema_add(s, &raw, &x), TS_ESCHEMA);
	assert_errmsg("column \"raw\": default of 65537 bytes exceeds the limit of 65536");
	raw.dflt = ts_blob(bytes, 65536);
	assert_int_equal(ts__schema_add(s, &raw, &x), 0);
	assert_int_equal(x->cols[3].dflt.v.s.len, 65536);
	ts__schema_free(x);
	/* a wrong type is still reported as such, whatever its length */
	ts_column num = {"num", TS_INT64, ts_stringn(bytes, 65537)};
	assert_int_equal(ts__schema_add(s, &num, &x), TS_ESCHEMA);
	assert_errmsg("default: column \"num\": expected int64, got string");
	ts__schema_free(s);
	free(bytes);
}

/* Replace column i's default of s by n bytes of p, as a build without the
 * limit of defaults would have stored it. */
static void force_default(ts__schema *s, int i, const char *p, size_t n)
{
	ts__col *c = &s->cols[i];
	free(c->dflt_mem);
	assert_non_null(c->dflt_mem = malloc(n));
	memcpy(c->dflt_mem, p, n);
	c->dflt.v.s.ptr = c->dflt_mem;
	c->dflt.v.s.len = n;
}

/* Descriptors written before TS_COLUMN_DEFAULT_MAX existed stay readable:
 * a record may hold a default of up to TS_VALUE_MAX bytes. */
static void schema_record_accepts_old_long_default(void **state)
{
	(void)state;
	char *bytes = long_bytes();
	ts_column cols[] = {COL("host", TS_STRING), {"note", TS_STRING, ts_string("x")}};
	const char *key[] = {"host", "ts"};
	ts__schema *s, *back = NULL;
	ts_buf b;
	ts_reader r;
	assert_int_equal(ts__schema_build(cols, 2, key, 2, &s), 0);
	force_default(s, 2, bytes, TS_VALUE_MAX);
	ts__buf_init(&b);
	ts__schema_encode(s, &b);
	assert_false(b.oom);
	ts__reader_init(&r, b.data, b.len);
	assert_int_equal(ts__schema_decode(&r, &back), 0);
	assert_int_equal(back->cols[2].dflt.v.s.len, TS_VALUE_MAX);
	assert_memory_equal(back->cols[2].dflt.v.s.ptr, bytes, TS_VALUE_MAX);
	ts__schema_free(back);
	/* but not more than any value may hold */
	force_default(s, 2, bytes, (size_t)TS_VALUE_MAX + 1);
	b.len = 0;
	ts__schema_encode(s, &b);
	ts__reader_init(&r, b.data, b.len);
	back = (ts__schema *)&back;
	assert_int_equal(ts__schema_decode(&r, &back), TS_ECORRUPT);
	assert_null(back);
	assert_errmsg("schema record: column \"note\": default of 16777217 bytes exceeds the limit of 16777216");
	ts__buf_free(&b);
	ts__schema_free(s);
	free(bytes);
}

/* The schema record gives a name's length, so a NUL can sit inside it; it
 * must not cut the name down to a shorter, valid one. */
static void schema_record_rejects_nul_in_name(void **state)
{
	(void)state;
	ts__schema *s = metrics_schema(), *back = (ts__schema *)&back;
	ts_buf b;
	ts_reader r;
	ts__buf_init(&b);
	ts__schema_encode(s, &b);
	assert_false(b.oom);
	/* column 5, "tag": its length byte then the name */
	unsigned char *p = memmem(b.data, b.len, "\x03tag", 4);
	assert_non_null(p);
	p[2] = '\0'; /* "t\0g": would read as "t" */
	ts__reader_init(&r, b.data, b.len);
	assert_int_equal(ts__schema_decode(&r, &back), TS_ECORRUPT);
	assert_null(back);
	assert_errmsg("schema record: column 5: name contains a NUL byte");
	p[2] = 'a';
	p[3] = '\0'; /* a trailing NUL too */
	ts__reader_init(&r, b.data, b.len);
	assert_int_equal(ts__schema_decode(&r, &back), TS_ECORRUPT);
	assert_errmsg("schema record: column 5: name contains a NUL byte");
	p[3] = 'g';
	ts__reader_init(&r, b.data, b.len);
	assert_int_equal(ts__schema_decode(&r, &back), 0);
	assert_string_equal(back->cols[5].name, "tag");
	ts__schema_free(back);
	ts__buf_free(&b);
	ts__schema_free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(schema_layout),
		cmocka_unit_test(schema_value_check_conversions),
		cmocka_unit_test(schema_utf8),
		cmocka_unit_test(schema_export_copy),
		cmocka_unit_test(schema_record_roundtrip),
		cmocka_unit_test(schema_widen_and_add_errors),
		cmocka_unit_test(schema_default_size_limit),
		cmocka_unit_test(schema_record_accepts_old_long_default),
		cmocka_unit_test(schema_record_rejects_nul_in_name),
	};
	return cmocka_run_group_tests_name("schema", tests, NULL, NULL);
}
