/*
 * test_jrows.c -- the fast path for insert rows (common/jrows.c) against
 * the slow one (jansson, then jrows_from_json), on the same inputs.
 *
 * Parity is the whole contract of jrows_parse: every input gets the same
 * code from both; on success the same values, on a value error the same
 * message (malformed JSON is reported in each parser's own words).  The
 * inputs are generated from a seed: rows as arrays and objects, values of
 * every type in good and bad forms (escapes, surrogates, raw UTF-8,
 * boundary and oversized numbers, timestamps as integers and text,
 * base64), wrong widths, unknown and duplicate keys, then a share of them
 * damaged byte by byte.  TSSTORE_JROWS_CASES sets how many (default
 * 20000); a failure prints the seed's input.
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

#include "jrows.h"
#include "json.h"
#include "value.h"

static const ts_column columns[] = {
	{.name = "host", .type = TS_STRING},
	{.name = "ts", .type = TS_TIMESTAMP},
	{.name = "i", .type = TS_INT32},
	{.name = "l", .type = TS_INT64},
	{.name = "d", .type = TS_DOUBLE},
	{.name = "b", .type = TS_BLOB},
};
#define NCOLS 6
static const int key[] = {0, 1};
static const ts_schema schema = {.ncolumns = NCOLS, .columns = columns, .nkey = 2, .key = key};

/* ---- generating inputs ---- */

static uint64_t rng = 88172645463325252ull;

static unsigned rnd(unsigned n)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (unsigned)(rng % n);
}

static void pick(struct jbuf *b, const char *const *choices, unsigned n)
{
	jbuf_puts(b, choices[rnd(n)]);
}

#define PICK(b, ...) do { \
	static const char *const c_[] = {__VA_ARGS__}; \
	pick(b, c_, sizeof c_ / sizeof c_[0]); \
} while (0)

/* A value, usually of the column's type, sometimes not. */
static void gen_value(struct jbuf *b, int col)
{
	if (rnd(8) == 0) {
		PICK(b, "null", "true", "false", "{}", "[]", "[1,2]", "{\"a\":1}", "{\"a\":1,\"a\":2}",
		     "\"x\"", "1", "-2.5", "[[[]]]");
		return;
	}
	switch (columns[col].type) {
	case TS_STRING:
		PICK(b, "\"host_1\"", "\"\"", "\"a\\\"b\\\\c\\/d\"", "\"tab\\there\\nnl\"",
		     "\"\\u00e9t\\u00E9\"", "\"\\ud83d\\ude00\"", "\"\\ud83d\"", "\"\\ude00\"",
		     "\"caf\xc3\xa9\"", "\"bad\xc3\"", "\"\xed\xa0\x80\"", "\"nul\\u0000in\"",
		     "\"\\x\"", "\"ctl\x01\"", "\"\\u12\"", "\"\xf0\x9f\x98\x80\"");
		break;
	case TS_TIMESTAMP:
		PICK(b, "1795392000000000000", "0", "-1", "\"2026-11-23T00:00:00Z\"",
		     "\"2026-11-23T00:00:00.5+02:00\"", "\"2026-13-01T00:00:00Z\"", "\"17\"", "\"\"",
		     "9223372036854775807", "9223372036854775808", "1.5", "\"2026-11-23\"");
		break;
	case TS_INT32:
		PICK(b, "7", "-7", "2147483647", "2147483648", "-2147483648", "-2147483649", "0",
		     "-0", "1e3", "007", "1.", "--1", "99999999999999999999");
		break;
	case TS_INT64:
		PICK(b, "9223372036854775807", "-9223372036854775808", "9223372036854775808",
		     "42", "4.2", "1E2", "-", "+1");
		break;
	case TS_DOUBLE:
		PICK(b, "1.5", "-0.0", "1e308", "1e400", "1e-400", "3", "-12345678901234567",
		     "0.1e-2", "2.", ".5", "1e", "NaN", "Infinity", "\"NaN\"", "\"-Infinity\"",
		     "\"inf\"", "\"+INF\"", "\"-nan\"", "\"1.5\"", "\"\"", "\"nan\\u0000\"",
		     "\"Inf \"", "\"\\u004eaN\"", "-0", "-0e0");
		break;
	case TS_BLOB:
		PICK(b, "\"aGVsbG8=\"", "\"\"", "\"AA==\"", "\"AAA\"", "\"A===\"", "\"@@@@\"",
		     "\"aGVsbG8\"", "\"YWJj\"", "\"\\u0041\\u0041==\"");
		break;
	default:
		break;
	}
}

static void ws(struct jbuf *b)
{
	if (rnd(6) == 0)
		PICK(b, " ", "\t", "\n ", "\r\n");
}

static void gen_array_row(struct jbuf *b)
{
	int n = NCOLS + (rnd(10) == 0 ? (int)rnd(3) - 1 : 0);
	jbuf_putc(b, '[');
	for (int j = 0; j < n; j++) {
		if (j)
			jbuf_putc(b, ',');
		ws(b);
		gen_value(b, j % NCOLS);
	}
	jbuf_putc(b, ']');
}

static void gen_object_row(struct jbuf *b)
{
	int n = (int)rnd(NCOLS + 1);
	jbuf_putc(b, '{');
	for (int k = 0; k < n; k++) {
		int j = (int)rnd(NCOLS);
		if (k)
			jbuf_putc(b, ',');
		ws(b);
		if (rnd(15) == 0)
			PICK(b, "\"nope\"", "\"h\\u006fst\"", "\"x\\u0000\"");
		else
			jbuf_printf(b, "\"%s\"", columns[j].name);
		jbuf_putc(b, ':');
		ws(b);
		gen_value(b, j);
	}
	jbuf_putc(b, '}');
}

static void gen_rows(struct jbuf *b)
{
	int n = (int)rnd(5);
	if (rnd(40) == 0) {
		PICK(b, "{}", "\"rows\"", "3", "null", "");
		return;
	}
	jbuf_putc(b, '[');
	for (int i = 0; i < n; i++) {
		if (i)
			jbuf_putc(b, ',');
		ws(b);
		unsigned shape = rnd(12);
		if (shape < 7)
			gen_array_row(b);
		else if (shape < 11)
			gen_object_row(b);
		else
			PICK(b, "1", "\"r\"", "null", "true");
	}
	ws(b);
	jbuf_putc(b, ']');
}

/* Damage one byte of b: delete, replace or insert, or cut the text. */
static void damage(struct jbuf *b)
{
	static const char set[] = "[]{},:\"\\ 0a-.eE\x80";
	if (b->len == 0)
		return;
	size_t at = rnd((unsigned)b->len);
	switch (rnd(4)) {
	case 0:
		memmove(b->p + at, b->p + at + 1, b->len - at - 1);
		b->len--;
		break;
	case 1:
		b->p[at] = set[rnd(sizeof set - 1)];
		break;
	case 2:
		jbuf_putc(b, ' ');
		memmove(b->p + at + 1, b->p + at, b->len - at - 1);
		b->p[at] = set[rnd(sizeof set - 1)];
		break;
	default:
		b->len = at;
		break;
	}
}

/* ---- comparing ---- */

static int same_value(const ts_value *a, const ts_value *b)
{
	if (a->type != b->type)
		return 0;
	switch (a->type) {
	case TS_NONE:
		return 1;
	case TS_DOUBLE:
		return memcmp(&a->v.d, &b->v.d, sizeof a->v.d) == 0;
	case TS_STRING:
	case TS_BLOB:
		return a->v.s.len == b->v.s.len && memcmp(a->v.s.ptr, b->v.s.ptr, a->v.s.len) == 0;
	default:
		return a->v.i == b->v.i;
	}
}

/* Run both parsers on text[0..len); 0 when they agree, else print why. */
static int compare(const char *text, size_t len)
{
	char fast_why[1024] = "", slow_why[1024] = "", *copy = malloc(len + 1);
	ts_value *fast = NULL, *slow = NULL;
	size_t nfast = 0, nslow = 0;
	json_error_t err;
	int agree = 1, slow_rc;
	memcpy(copy, text, len);
	copy[len] = '\0';
	int fast_rc = jrows_parse(copy, len, &schema, &fast, &nfast, fast_why, sizeof fast_why);
	/* A raw NUL is malformed JSON (jansson takes it for an end of input;
	 * the daemon refuses such lines before either parser sees them). */
	json_t *j = memchr(text, '\0', len) ? NULL : json_loadb(text, len, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &err);
	if (!j || !json_is_array(j))
		slow_rc = TS_EPROTO;
	else
		slow_rc = jrows_from_json(j, &schema, &slow, &nslow, slow_why, sizeof slow_why);
	if (fast_rc != slow_rc)
		agree = 0;
	else if (fast_rc < 0 && fast_rc != TS_EPROTO && strcmp(fast_why, slow_why) != 0)
		agree = 0;
	else if (fast_rc == 0 && nfast != nslow)
		agree = 0;
	for (size_t i = 0; agree && fast_rc == 0 && i < nfast * NCOLS; i++)
		agree = same_value(&fast[i], &slow[i]);
	if (!agree)
		fprintf(stderr, "input: %.*s\nfast: %s (%s)\nslow: %s (%s%s)\n", (int)len, text,
		        ts_errname(fast_rc), fast_why, ts_errname(slow_rc), slow_why,
		        j ? "" : err.text);
	for (size_t i = 0; i < nslow * NCOLS; i++)
		val_free(&slow[i]);
	free(slow);
	free(fast);
	free(copy);
	json_decref(j);
	return agree ? 0 : -1;
}

/* ---- tests ---- */

static void jrows_generated_inputs_agree(void **state)
{
	const char *env = getenv("TSSTORE_JROWS_CASES");
	long cases = env ? atol(env) : 20000, failures = 0;
	struct jbuf b = {0};
	for (long c = 0; c < cases && failures < 5; c++) {
		b.len = 0;
		gen_rows(&b);
		if (rnd(4) == 0)
			damage(&b);
		assert_false(b.failed);
		if (compare(b.p, b.len) < 0)
			failures++;
	}
	jbuf_free(&b);
	assert_int_equal(failures, 0);
}

static void parse_ok(const char *text, ts_value **vals, size_t *n, char *buf)
{
	char why[512];
	strcpy(buf, text);
	assert_int_equal(jrows_parse(buf, strlen(buf), &schema, vals, n, why, sizeof why), 0);
}

static void jrows_values_point_into_the_text(void **state)
{
	char buf[256];
	ts_value *v;
	size_t n;
	parse_ok("[[\"a\\nb\", 5, 1, 2, 0.5, \"aGk=\"], {\"d\": 2, \"host\": \"\\u00e9\"}]", &v, &n, buf);
	assert_int_equal(n, 2);
	assert_int_equal(v[0].type, TS_STRING);
	assert_int_equal(v[0].v.s.len, 3);
	assert_memory_equal(v[0].v.s.ptr, "a\nb", 3);
	assert_true((const char *)v[0].v.s.ptr >= buf && (const char *)v[0].v.s.ptr < buf + sizeof buf);
	assert_int_equal(v[1].type, TS_TIMESTAMP);
	assert_int_equal(v[1].v.i, 5);
	assert_int_equal(v[5].type, TS_BLOB);
	assert_int_equal(v[5].v.s.len, 2);
	assert_memory_equal(v[5].v.s.ptr, "hi", 2);
	assert_int_equal(v[NCOLS + 0].v.s.len, 2);
	assert_memory_equal(v[NCOLS + 0].v.s.ptr, "\xc3\xa9", 2);
	assert_int_equal(v[NCOLS + 1].type, TS_NONE); /* ts not given: now */
	assert_int_equal(v[NCOLS + 4].type, TS_DOUBLE);
	assert_true(v[NCOLS + 4].v.d == 2.0);
	free(v);
}

static void jrows_errors_name_row_and_column(void **state)
{
	char buf[256], why[512];
	ts_value *v;
	size_t n;
	strcpy(buf, "[[\"a\",1,1,1,1,\"\"],[\"b\",2,\"x\",1,1,\"\"]]");
	assert_int_equal(jrows_parse(buf, strlen(buf), &schema, &v, &n, why, sizeof why), TS_ETYPE);
	assert_string_equal(why, "row 1, column \"i\": expected int32, got a JSON string");
	assert_null(v);
	/* A width error wins over a value error of the same row. */
	strcpy(buf, "[[\"a\",\"bad\",1]]");
	assert_int_equal(jrows_parse(buf, strlen(buf), &schema, &v, &n, why, sizeof why), TS_EINVAL);
	assert_string_equal(why, "row 0: 3 values, the table has 6 columns");
	/* Malformed JSON after a bad value is still malformed. */
	strcpy(buf, "[[\"a\",\"bad\",1,1,1,\"\"],[1,]]");
	assert_int_equal(jrows_parse(buf, strlen(buf), &schema, &v, &n, why, sizeof why), TS_EPROTO);
}

static void jrows_deep_nesting_is_refused(void **state)
{
	size_t depth = 100000, len = 2 * depth + 32;
	char *text = malloc(len + 1), why[512];
	ts_value *v;
	size_t n;
	size_t at = 0;
	at += (size_t)sprintf(text, "[[\"a\",1,");
	memset(text + at, '[', depth);
	at += depth;
	memset(text + at, ']', depth);
	at += depth;
	at += (size_t)sprintf(text + at, ",1,1,\"\"]]");
	assert_int_equal(jrows_parse(text, at, &schema, &v, &n, why, sizeof why), TS_EPROTO);
	assert_non_null(strstr(why, "depth"));
	free(text);
}

static void jrows_find_locates_rows(void **state)
{
	static const char req[] = "{\"op\":\"insert\", \"a\":\"],\\\"rows\\\":\", \"rows\" : [[1],[2]] ,\"id\":{\"rows\":1}}";
	size_t start, end;
	assert_int_equal(jrows_find(req, strlen(req), &start, &end), 1);
	assert_int_equal(end - start, strlen("[[1],[2]]"));
	assert_memory_equal(req + start, "[[1],[2]]", end - start);
	static const char twice[] = "{\"rows\":[],\"rows\":[]}";
	assert_int_equal(jrows_find(twice, strlen(twice), &start, &end), 0);
	static const char none[] = "{\"op\":\"ping\"}";
	assert_int_equal(jrows_find(none, strlen(none), &start, &end), 0);
	static const char broken[] = "{\"rows\":[1,2}";
	assert_int_equal(jrows_find(broken, strlen(broken), &start, &end), 0);
	static const char array[] = "[1]";
	assert_int_equal(jrows_find(array, strlen(array), &start, &end), 0);
}

/* A message quoting a client's bytes must still be valid JSON. */
static void json_string_replaces_invalid_utf8(void **state)
{
	struct jbuf b = {0};
	json_error_t err;
	jbuf_string(&b, "a\xd7\x94\xd7z\xc3\xa9\xed\xa0\x80\"\n", 12);
	assert_false(b.failed);
	assert_int_equal(b.len, strlen("\"a\xd7\x94\xef\xbf\xbdz\xc3\xa9\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\\\"\\n\""));
	assert_memory_equal(b.p, "\"a\xd7\x94\xef\xbf\xbdz\xc3\xa9\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\\\"\\n\"", b.len);
	json_t *j = json_loadb(b.p, b.len, JSON_DECODE_ANY, &err);
	assert_non_null(j);
	json_decref(j);
	jbuf_free(&b);
}

/* The doubles no JSON number spells, and -0.0, as written by jbuf_value
 * and read back by both parsers and by the text forms: the same bits. */
static void json_special_doubles_round_trip(void **state)
{
	static const struct {
		double d;
		const char *json, *text;
	} cases[] = {
		{NAN, "\"NaN\"", "NaN"},
		{INFINITY, "\"Infinity\"", "Infinity"},
		{-INFINITY, "\"-Infinity\"", "-Infinity"},
		{-0.0, "-0.0", "-0"},
		{0.0, "0", "0"},
		{-1.5e300, "-1.5e+300", "-1.5e+300"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct jbuf b = {0}, t = {0};
		ts_value in = ts_double(cases[i].d), *fast, parsed;
		char buf[128], why[256];
		size_t n;
		jbuf_value(&b, &in);
		jbuf_putc(&b, '\0');
		assert_string_equal(b.p, cases[i].json);
		val_text(&t, &in, 1);
		jbuf_putc(&t, '\0');
		assert_string_equal(t.p, cases[i].text);
		/* the fast parser, on a row */
		snprintf(buf, sizeof buf, "[[\"h\",1,1,1,%s,\"\"]]", cases[i].json);
		assert_int_equal(jrows_parse(buf, strlen(buf), &schema, &fast, &n, why, sizeof why), 0);
		assert_int_equal(fast[4].type, TS_DOUBLE);
		assert_memory_equal(&fast[4].v.d, &cases[i].d, sizeof(double));
		free(fast);
		/* the slow one */
		json_error_t err;
		json_t *j = json_loads(cases[i].json, JSON_DECODE_ANY, &err);
		assert_non_null(j);
		assert_int_equal(val_from_json(TS_DOUBLE, j, &parsed, why, sizeof why), 0);
		assert_memory_equal(&parsed.v.d, &cases[i].d, sizeof(double));
		json_decref(j);
		/* the text form */
		assert_int_equal(val_parse(TS_DOUBLE, t.p, &parsed, why, sizeof why), 0);
		assert_memory_equal(&parsed.v.d, &cases[i].d, sizeof(double));
		jbuf_free(&b);
		jbuf_free(&t);
	}
}

/* Any case and sign of the words, in JSON strings and in text; nothing
 * else is a double, and never silently the default. */
static void json_double_words(void **state)
{
	static const char *const yes[] = {"nan", "NAN", "-NaN", "+nan", "inf", "-INF", "+Inf",
	                                   "infinity", "-Infinity", "INFINITY"};
	static const char *const no[] = {"", "na", "nanx", "infinit", " inf", "inf ", "1.5", "--inf",
	                                 "+-nan", "null"};
	char why[256];
	ts_value v;
	double d;
	for (size_t i = 0; i < sizeof yes / sizeof yes[0]; i++) {
		const char *word = yes[i] + (yes[i][0] == '-' || yes[i][0] == '+');
		assert_int_equal(val_double_word(yes[i], strlen(yes[i]), &d), 1);
		assert_true(word[0] == 'n' || word[0] == 'N' ? isnan(d) : isinf(d));
		assert_int_equal(signbit(d) != 0, yes[i][0] == '-');
		assert_int_equal(val_double_from_json_string(yes[i], strlen(yes[i]), &v, why, sizeof why), 0);
		assert_memory_equal(&v.v.d, &d, sizeof d);
	}
	for (size_t i = 0; i < sizeof no / sizeof no[0]; i++) {
		assert_int_equal(val_double_word(no[i], strlen(no[i]), &d), 0);
		assert_int_equal(val_double_from_json_string(no[i], strlen(no[i]), &v, why, sizeof why),
		                 TS_ETYPE);
		assert_string_equal(why, "expected double, got a JSON string other than \"NaN\", "
		                         "\"Infinity\" or \"-Infinity\"");
	}
	assert_int_equal(val_double_word("nan\0", 4, &d), 0);
}

/* jbuf_int writes every int64 as printf's %lld does: the edges, each
 * power of ten and its neighbours, and random values of every length. */
/* A failed buffer takes no more bytes, whichever append is used and
 * however much room its memory still has (jbuf_put and jbuf_putc are
 * inline, with a fast path that must not bypass the failure). */
static void jbuf_failed_takes_nothing_more(void **state)
{
	struct jbuf b = {0};
	(void)state;
	jbuf_puts(&b, "[1");
	assert_true(b.cap > 16);
	jbuf_fail(&b);
	jbuf_putc(&b, ',');
	jbuf_put(&b, "2,3", 3);
	jbuf_puts(&b, "4");
	jbuf_int(&b, 5);
	jbuf_printf(&b, "%d", 6);
	assert_int_equal(jbuf_reserve(&b, 1), TS_ENOMEM);
	assert_true(b.failed);
	assert_int_equal(b.len, 2);
	assert_memory_equal(b.p, "[1", 2);
	jbuf_free(&b);
	assert_int_equal(b.len, 0);
	assert_false(b.failed);
	jbuf_putc(&b, 'x'); /* freed: empty and usable again */
	assert_int_equal(b.len, 1);
	jbuf_free(&b);
}

static void jbuf_int_matches_printf(void **state)
{
	struct jbuf b = {0};
	char want[32];
	int64_t v[84];
	size_t n = 0;
	(void)state;
	v[n++] = INT64_MAX;
	v[n++] = INT64_MIN;
	v[n++] = INT64_C(1795761524000000000); /* whole seconds in ns: written as */
	v[n++] = INT64_C(-42000000000);        /* seconds and nine zeros */
	v[n++] = INT64_C(1795761524000000001);
	for (int64_t p = 1; n + 6 <= sizeof v / sizeof v[0]; p *= 10) {
		v[n++] = p - 1, v[n++] = p, v[n++] = p + 1;
		v[n++] = -(p - 1), v[n++] = -p, v[n++] = -(p + 1);
		if (p > INT64_MAX / 10)
			break;
	}
	for (int i = 0; i < 200000 + (int)n; i++) {
		int64_t x = i < (int)n ? v[i]
		                       : (int64_t)(((uint64_t)rnd(1u << 31) << 33) ^
		                                   ((uint64_t)rnd(1u << 31) << 2) ^ rnd(4)) >> rnd(63);
		b.len = 0;
		jbuf_int(&b, x);
		snprintf(want, sizeof want, "%lld", (long long)x);
		assert_false(b.failed);
		assert_int_equal(b.len, strlen(want));
		assert_memory_equal(b.p, want, b.len);
	}
	jbuf_free(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(jbuf_int_matches_printf),
		cmocka_unit_test(jbuf_failed_takes_nothing_more),
		cmocka_unit_test(jrows_values_point_into_the_text),
		cmocka_unit_test(jrows_errors_name_row_and_column),
		cmocka_unit_test(jrows_deep_nesting_is_refused),
		cmocka_unit_test(jrows_find_locates_rows),
		cmocka_unit_test(jrows_generated_inputs_agree),
		cmocka_unit_test(json_string_replaces_invalid_utf8),
		cmocka_unit_test(json_special_doubles_round_trip),
		cmocka_unit_test(json_double_words),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
