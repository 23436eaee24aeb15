/*
 * test_query_diff.c -- the query engine checked against SQLite.
 *
 * Each case builds one table twice: in tsstore and in an in-memory SQLite
 * database that serves as the oracle.  Five key shapes: (host string, ts);
 * (a int32, b int64, ts); (s string, d double, ts), declared out of
 * column order; (b blob, ts), with NUL and 0xff bytes; and (ts) alone.
 * Besides the key, every shape has int32, int64, double, timestamp and
 * string columns.
 *
 * Five phases load the table: batches of random sizes whose rows arrive
 * out of order and late, spread over eight days so that they land in
 * 4-hour, day and week periods; ts_flush with random horizons and
 * ts_merge between batches, so that each answer comes from filling trees,
 * flushed tablets and merged tablets at once.  Between phases a column is
 * widened from int32 to int64, columns are added with defaults (SQLite:
 * ALTER TABLE ADD COLUMN ... DEFAULT), the TTL is lowered, the injected
 * clock moves on (sometimes exactly onto a row's expiry) and the database
 * is reopened.  TTL and clock only ever move so that expired rows stay
 * expired.  A few batches carry one bad row (a duplicate key, inside the
 * batch or against a stored row; an expired or a future ts): tsstore must
 * refuse the whole batch, and SQLite's transaction is rolled back.
 *
 * After each phase, random requests run on both sides and their answers
 * are compared exactly (value types included): ts_query with a prefix,
 * lower and upper key bounds of any length, inclusive or exclusive, a
 * time range, either direction, a projection, a random `after`, and
 * limits paged through with ts_cursor_resume until ts_cursor_more says 0;
 * ts_latest_open; ts_aggregate_open with every function (the doubles'
 * sum and mean to a relative 1e-9, since the order of summation differs;
 * everything else exact).  A cursor opened before an insert, a flush and
 * a merge must not see them.  The counters rows_scanned and rows_returned
 * must add up, and malformed requests must fail with the documented code.
 *
 * The writer's block cache is the default in some cases, a few blocks
 * (evictions) or none in others; the reader's is small or none.
 *
 * Reproducing: each case prints its seed, and a mismatch prints the seed,
 * the request (as ts_value constructors) and the first differing rows.
 * TSSTORE_DIFF_SEED=<n> replaces the base seed, TSSTORE_DIFF_SCALE=<k>
 * runs k times as many requests per phase, TSSTORE_DIFF_TRACE=1 prints
 * each request before it runs (to find the one that crashed).
 */
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sqlite3.h>
#include <cmocka.h>

#include "support.h"

#define NOW0 INT64_C(1795262400000000000) /* 2026-11-21T12:00:00Z, a Saturday */
#define SEC INT64_C(1000000000)
#define MINUTE (60 * SEC)
#define HOUR (60 * MINUTE)
#define DAY (24 * HOUR)
#define WEEK (7 * DAY)
#define MAX_FUTURE DAY          /* the default of ts_options */
#define DATA_SPAN (7 * DAY + 12 * HOUR) /* rows reach this far back */

#define MAXCOLS 12
#define MAXKEY 4
#define KEYBYTES 512 /* longest key string or blob of the generators */
#define PHASES 5
#define BATCHES 20      /* per phase */
#define PLAIN_QUERIES 110 /* per phase, ts_query only (exact counters) */
#define MIXED_QUERIES 110 /* per phase, queries, latest and aggregates */

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

/* ---- randomness ---- */

static uint64_t rng = 1;
static uint64_t rnd(void) { return ts_test_xorshift(&rng); }
static uint64_t below(uint64_t n) { return n ? rnd() % n : 0; }
static int chance(int percent) { return below(100) < (uint64_t)percent; }

static uint64_t base_seed(void)
{
	const char *s = getenv("TSSTORE_DIFF_SEED");
	return s && *s ? strtoull(s, NULL, 0) : UINT64_C(0x5EED0F7E57D1FF5);
}

static int env_int(const char *name, int dflt)
{
	const char *s = getenv(name);
	return s && *s ? atoi(s) : dflt;
}

/* ---- value domains ---- */

/* How a column's values are drawn. */
enum gen {
	G_HOST,    /* key strings: a dozen, some prefixes of others */
	G_KEY32,   /* key int32: small values and the extremes */
	G_KEY64,   /* key int64: a few values, the extremes among them */
	G_KEYDBL,  /* key double: quarters of either sign */
	G_KEYBLOB, /* key blob: short byte strings with 0x00 and 0xff */
	G_TS,      /* the ts key */
	G_I32,     /* int32 anywhere in its range (wider once widened) */
	G_I64,     /* int64 with |v| < 2^40, so sums fit */
	G_DQ,      /* double: quarters of either sign (exact sums) */
	G_DPOS,    /* double: positive tenths (inexact sums) */
	G_TSV,     /* timestamp value with |v| < 2^40, so sums fit */
	G_STR,     /* string value */
	G_BLOB,    /* blob value */
};

typedef struct bytes {
	const char *p;
	size_t n;
} bytes;

#define LONG_HOST(c) c c c c c c c c c c /* x10 */
static const char *const hosts[] = {
	"", "h", "h0", "h1", "h10", "h1a", "h2", "h\xc3\xa9", "web-01", "web-02", "db", "~z",
	"h1" LONG_HOST("0123456789"), /* long keys: 102 and 302 bytes */
	"web-02" LONG_HOST("abcdefghij") LONG_HOST("abcdefghij") LONG_HOST("klmnopqrst") "zz",
};
static const bytes blobs[] = {
	{"", 0}, {"\0", 1}, {"\0\0", 2}, {"\0\1", 2}, {"\1", 1}, {"a", 1},
	{"a\0", 2}, {"a\0b", 3}, {"ab", 2}, {"\xff", 1}, {"\xff\0", 2}, {"\xff\xff", 2},
};
static const char *const words[] = {
	"", "a", "ok", "warn", "error", "lorem ipsum dolor", "\xc3\xbc" "n\xc3\xaf" "code",
	"x\ty", "zz", "n/a", "none", "0",
};
static const int64_t key32[] = {INT32_MIN, -1000, -7, -1, 0, 1, 2, 3, 42, 65536, INT32_MAX};
static const int64_t key32_wide[] = {-(INT64_C(1) << 40), INT64_C(3000000000), INT64_C(1) << 33};
static const int64_t key64[] = {INT64_MIN, -(INT64_C(1) << 40), -1, 0, 1, INT64_C(1) << 32,
                                INT64_MAX};
static const double keydbl[] = {-1048576.5, -3.25, -1, -0.25, 0, 0.25, 0.5, 1, 2, 3.75,
                                12345.5, 1048576};

/* ---- shapes ---- */

#define NODFLT {TS_NONE, {.i = 0}}
#define DI32(x) {TS_INT32, {.i = (x)}}
#define DI64(x) {TS_INT64, {.i = (x)}}
#define DTS(x) {TS_TIMESTAMP, {.i = (x)}}
#define DDBL(x) {TS_DOUBLE, {.d = (x)}}
#define DSTR(x) {TS_STRING, {.s = {(x), sizeof(x) - 1}}}

struct coldef {
	const char *name;
	ts_type type;
	enum gen gen;
	ts_value dflt; /* TS_NONE: the type's zero */
};

enum change_kind { CH_END = 0, CH_WIDEN, CH_ADD, CH_TTL, CH_REOPEN };

/* A change made before a phase loads. */
struct change {
	int phase;
	enum change_kind kind;
	struct coldef col; /* CH_ADD; CH_WIDEN names the column */
	int64_t ttl;       /* CH_TTL */
};

struct shape {
	const char *name;
	int ncols;
	struct coldef cols[MAXCOLS];
	int nkey;
	const char *key[MAXKEY];
	int64_t ttl;
	struct change changes[8];
};

static const struct shape shape_host = {
	"host_ts", 7,
	{{"host", TS_STRING, G_HOST, NODFLT}, {"ts", TS_TIMESTAMP, G_TS, NODFLT},
	 {"cnt", TS_INT32, G_I32, DI32(5)}, {"bytes", TS_INT64, G_I64, NODFLT},
	 {"load", TS_DOUBLE, G_DPOS, NODFLT}, {"seen", TS_TIMESTAMP, G_TSV, NODFLT},
	 {"note", TS_STRING, G_STR, DSTR("n/a")}},
	2, {"host", "ts"}, 8 * DAY,
	{{.phase = 1, .kind = CH_WIDEN, .col = {.name = "cnt"}},
	 {.phase = 2, .kind = CH_ADD, .col = {"extra", TS_INT64, G_I64, DI64(7)}},
	 {.phase = 2, .kind = CH_REOPEN},
	 {.phase = 3, .kind = CH_ADD, .col = {"tag", TS_STRING, G_STR, DSTR("none")}},
	 {.phase = 3, .kind = CH_TTL, .ttl = 6 * DAY}},
};

static const struct shape shape_ints = {
	"int32_int64_ts", 8,
	{{"a", TS_INT32, G_KEY32, NODFLT}, {"b", TS_INT64, G_KEY64, NODFLT},
	 {"ts", TS_TIMESTAMP, G_TS, NODFLT}, {"v32", TS_INT32, G_I32, NODFLT},
	 {"v64", TS_INT64, G_I64, DI64(-1)}, {"d", TS_DOUBLE, G_DQ, NODFLT},
	 {"at", TS_TIMESTAMP, G_TSV, NODFLT}, {"s", TS_STRING, G_STR, NODFLT}},
	3, {"a", "b", "ts"}, 0,
	{{.phase = 1, .kind = CH_WIDEN, .col = {.name = "a"}},
	 {.phase = 2, .kind = CH_ADD, .col = {"x", TS_DOUBLE, G_DQ, DDBL(2.5)}},
	 {.phase = 3, .kind = CH_TTL, .ttl = 6 * DAY},
	 {.phase = 3, .kind = CH_WIDEN, .col = {.name = "v32"}},
	 {.phase = 4, .kind = CH_REOPEN}},
};

static const struct shape shape_strdbl = {
	"string_double_ts", 8,
	{{"label", TS_STRING, G_STR, DSTR("-")}, {"d", TS_DOUBLE, G_KEYDBL, NODFLT},
	 {"n", TS_INT32, G_I32, NODFLT}, {"s", TS_STRING, G_HOST, NODFLT},
	 {"ts", TS_TIMESTAMP, G_TS, NODFLT}, {"m", TS_INT64, G_I64, DI64(-1)},
	 {"f", TS_DOUBLE, G_DQ, DDBL(0.5)}, {"t", TS_TIMESTAMP, G_TSV, DTS(1000)}},
	3, {"s", "d", "ts"}, 7 * DAY,
	{{.phase = 1, .kind = CH_ADD, .col = {"k", TS_INT32, G_I32, DI32(-3)}},
	 {.phase = 2, .kind = CH_WIDEN, .col = {.name = "k"}},
	 {.phase = 3, .kind = CH_REOPEN},
	 {.phase = 3, .kind = CH_TTL, .ttl = 6 * DAY + 12 * HOUR},
	 {.phase = 4, .kind = CH_WIDEN, .col = {.name = "n"}}},
};

static const struct shape shape_blob = {
	"blob_ts", 6,
	{{"b", TS_BLOB, G_KEYBLOB, NODFLT}, {"ts", TS_TIMESTAMP, G_TS, NODFLT},
	 {"i", TS_INT32, G_I32, NODFLT}, {"x", TS_DOUBLE, G_DPOS, NODFLT},
	 {"s", TS_STRING, G_STR, NODFLT}, {"p", TS_BLOB, G_BLOB, NODFLT}},
	2, {"b", "ts"}, 0,
	{{.phase = 1, .kind = CH_ADD, .col = {"y", TS_INT64, G_I64, DI64(11)}},
	 {.phase = 2, .kind = CH_WIDEN, .col = {.name = "i"}},
	 {.phase = 3, .kind = CH_ADD, .col = {"z", TS_TIMESTAMP, G_TSV, DTS(123456789)}},
	 {.phase = 4, .kind = CH_REOPEN}},
};

static const struct shape shape_tsonly = {
	"ts_only", 4,
	{{"ts", TS_TIMESTAMP, G_TS, NODFLT}, {"v", TS_INT64, G_I64, NODFLT},
	 {"d", TS_DOUBLE, G_DQ, NODFLT}, {"msg", TS_STRING, G_STR, NODFLT}},
	1, {"ts"}, 6 * DAY,
	{{.phase = 1, .kind = CH_REOPEN},
	 {.phase = 2, .kind = CH_ADD, .col = {"w", TS_INT32, G_I32, NODFLT}},
	 {.phase = 3, .kind = CH_WIDEN, .col = {.name = "w"}},
	 {.phase = 3, .kind = CH_TTL, .ttl = 5 * DAY}},
};

/* ---- the two tables ---- */

struct col {
	char name[TS_NAME_MAX + 1];
	ts_type type;
	enum gen gen;
	ts_value dflt; /* effective default, of the column's type */
};

typedef struct diff {
	const struct shape *sh;
	uint64_t seed;
	char *dir;
	ts_db *db;
	ts_table *t;
	ts_db *ro_db;  /* a read-only handle on the same directory */
	ts_table *ro_t;
	ts_table *qt;  /* where requests go: t, or now and then ro_t */
	int64_t now; /* the clock; set_now moves it */
	int64_t cache, ro_cache; /* block cache sizes, -1: the default */
	sqlite3 *sq;
	sqlite3_stmt *ins, *pick;
	int ncols, nkey, tscol;
	struct col cols[MAXCOLS];
	int key[MAXKEY]; /* column index of each key column */
	int64_t ttl;
	int64_t nrows; /* rows committed to SQLite: rowids 1..nrows */
	int phase;
	long nreq;       /* requests so far, for messages */
	char what[8192]; /* the request being checked, for messages */
	int trace;
	int64_t returned; /* rows the ts_query cursors returned */
	long batches, flushes, merges, mixed_phases, rejected;
	int64_t summarised; /* aggregate rows answered from block statistics */
	long overflows;     /* int64 sums seen to overflow */
} diff;

static int64_t diff_clock(void *arg)
{
	return __atomic_load_n((int64_t *)arg, __ATOMIC_RELAXED);
}

static void set_now(diff *d, int64_t now)
{
	__atomic_store_n(&d->now, now, __ATOMIC_RELAXED);
}

static int is_int(ts_type t) { return t == TS_INT32 || t == TS_INT64 || t == TS_TIMESTAMP; }
static int is_bytes(ts_type t) { return t == TS_STRING || t == TS_BLOB; }
static int is_numeric(ts_type t) { return is_int(t) || t == TS_DOUBLE; }

static int key_pos(const diff *d, int c)
{
	for (int k = 0; k < d->nkey; k++)
		if (d->key[k] == c)
			return k;
	return -1;
}

static const char *key_name(const diff *d, int k) { return d->cols[d->key[k]].name; }

static ts_value typed_int(ts_type type, int64_t i)
{
	ts_value v;
	v.type = type;
	v.v.i = i;
	return v;
}

/* The value a TS_NONE default stands for. */
static ts_value effective_default(const struct coldef *c)
{
	if (c->dflt.type != TS_NONE)
		return c->dflt;
	switch (c->type) {
	case TS_DOUBLE: return ts_double(0);
	case TS_STRING: return ts_stringn("", 0);
	case TS_BLOB: return ts_blob("", 0);
	default: return typed_int(c->type, 0);
	}
}

/* ---- rows held in memory: both sides' answers ---- */

/* Rows of w values.  String and blob bytes live in bytes; a value's
 * v.s.ptr holds the offset there (vbytes resolves it), so the arrays can
 * grow while rows are added. */
typedef struct rowset {
	int w;
	size_t n, cap;
	ts_value *v;
	unsigned char *bytes;
	size_t blen, bcap;
} rowset;

static void rs_init(rowset *rs, int w)
{
	memset(rs, 0, sizeof *rs);
	rs->w = w;
}

static void rs_free(rowset *rs)
{
	free(rs->v);
	free(rs->bytes);
	rs_init(rs, rs->w);
}

static ts_value *rs_row(const rowset *rs, size_t i) { return rs->v + i * (size_t)rs->w; }

static size_t rs_add_row(rowset *rs)
{
	if (rs->n == rs->cap) {
		rs->cap = rs->cap ? 2 * rs->cap : 64;
		rs->v = realloc(rs->v, rs->cap * (size_t)rs->w * sizeof *rs->v);
		assert_non_null(rs->v);
	}
	memset(rs_row(rs, rs->n), 0, (size_t)rs->w * sizeof *rs->v);
	return rs->n++;
}

/* Value c of row r becomes v (whose pointer, if any, is real). */
static void rs_put(rowset *rs, size_t r, int c, const ts_value *v)
{
	ts_value x = *v;
	if (is_bytes(x.type)) {
		size_t n = x.v.s.len;
		if (rs->blen + n > rs->bcap) {
			rs->bcap = 2 * (rs->blen + n) + 256;
			rs->bytes = realloc(rs->bytes, rs->bcap);
			assert_non_null(rs->bytes);
		}
		if (n)
			memcpy(rs->bytes + rs->blen, x.v.s.ptr, n);
		x.v.s.ptr = (const void *)(uintptr_t)rs->blen;
		rs->blen += n;
	}
	rs_row(rs, r)[c] = x;
}

/* The bytes of a string or blob value: in rs, or real when rs is NULL. */
static const unsigned char *vbytes(const rowset *rs, const ts_value *v)
{
	if (v->v.s.len == 0)
		return (const unsigned char *)"";
	return rs ? rs->bytes + (uintptr_t)v->v.s.ptr : v->v.s.ptr;
}

/* A value of rs with its pointer made real. */
static ts_value rs_value(const rowset *rs, const ts_value *v)
{
	ts_value x = *v;
	if (is_bytes(x.type))
		x.v.s.ptr = vbytes(rs, v);
	return x;
}

static int value_eq(const rowset *ra, const ts_value *a, const rowset *rb, const ts_value *b,
                    int approx)
{
	if (a->type != b->type)
		return 0;
	switch (a->type) {
	case TS_DOUBLE:
		if (a->v.d == b->v.d)
			return 1;
		return approx && fabs(a->v.d - b->v.d) <= 1e-9 * fmax(fabs(a->v.d), fabs(b->v.d));
	case TS_STRING:
	case TS_BLOB:
		return a->v.s.len == b->v.s.len &&
		       memcmp(vbytes(ra, a), vbytes(rb, b), a->v.s.len) == 0;
	case TS_NONE:
		return 1;
	default:
		return a->v.i == b->v.i;
	}
}

/* ---- text for messages ---- */

typedef struct text {
	char *p;
	size_t size, n;
} text;

__attribute__((format(printf, 2, 3)))
static void tx_add(text *t, const char *fmt, ...)
{
	va_list ap;
	if (t->n + 1 >= t->size)
		return;
	va_start(ap, fmt);
	int k = vsnprintf(t->p + t->n, t->size - t->n, fmt, ap);
	va_end(ap);
	if (k > 0)
		t->n = t->n + (size_t)k < t->size ? t->n + (size_t)k : t->size - 1;
}

/* v as the C expression that makes it: ts_int32(5), ts_blob("\000\377", 2). */
static void tx_value(text *t, const rowset *rs, const ts_value *v)
{
	switch (v->type) {
	case TS_NONE: tx_add(t, "ts_none()"); return;
	case TS_INT32: tx_add(t, "ts_int32(%" PRId64 ")", v->v.i); return;
	case TS_INT64: tx_add(t, "ts_int64(%" PRId64 ")", v->v.i); return;
	case TS_TIMESTAMP: tx_add(t, "ts_timestamp(%" PRId64 ")", v->v.i); return;
	case TS_DOUBLE: tx_add(t, "ts_double(%.17g)", v->v.d); return;
	case TS_STRING:
	case TS_BLOB: break;
	default: tx_add(t, "<type %d>", (int)v->type); return;
	}
	const unsigned char *p = vbytes(rs, v);
	tx_add(t, "%s(\"", v->type == TS_STRING ? "ts_stringn" : "ts_blob");
	for (size_t i = 0; i < v->v.s.len && i < 64; i++)
		if (p[i] >= 0x20 && p[i] < 0x7f && p[i] != '"' && p[i] != '\\')
			tx_add(t, "%c", p[i]);
		else
			tx_add(t, "\\%03o", p[i]);
	tx_add(t, "\", %zu)", v->v.s.len);
}

static void tx_values(text *t, const rowset *rs, const ts_value *v, int n)
{
	tx_add(t, "{");
	for (int i = 0; i < n; i++) {
		tx_add(t, "%s", i ? ", " : "");
		tx_value(t, rs, &v[i]);
	}
	tx_add(t, "}");
}

static text what_text(diff *d)
{
	text t = {d->what, sizeof d->what, 0};
	d->what[0] = '\0';
	return t;
}

static void trace(diff *d)
{
	d->nreq++;
	if (d->trace)
		fprintf(stderr, "[%s #%ld] %s\n", d->sh->name, d->nreq, d->what);
}

__attribute__((format(printf, 2, 3)))
static void mismatch(diff *d, const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr,
	        "\nMISMATCH: case %s, phase %d, request #%ld, case seed 0x%016" PRIx64
	        " (rerun with TSSTORE_DIFF_SEED=0x%" PRIx64 ")\n  now=%" PRId64 " ttl=%" PRId64
	        "%s\n  request: %s\n  ",
	        d->sh->name, d->phase, d->nreq, d->seed, base_seed(), d->now, d->ttl,
	        d->qt == d->ro_t ? ", through a read-only handle" : "", d->what);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n");
	fail_msg("%s: request #%ld disagrees with SQLite (details above)", d->sh->name, d->nreq);
}

/* got must equal want's rows [off, off + n), compared on got's width;
 * approx (may be NULL) marks the values compared to a relative 1e-9. */
static void expect_rows(diff *d, const char *what, const rowset *got, const rowset *want,
                        size_t off, size_t n, const int *approx)
{
	size_t i = 0;
	int c = 0, bad = got->n != n;
	for (; i < got->n && i < n && !bad; i++)
		for (c = 0; c < got->w && !bad; c++)
			bad = !value_eq(got, rs_row(got, i) + c, want, rs_row(want, off + i) + c,
			                approx && approx[c]);
	if (!bad)
		return;
	if (i > 0 && got->n == n)
		i--; /* the loops moved past the row that differs */
	char buf[4096];
	text t = {buf, sizeof buf, 0};
	tx_add(&t, "%s: got %zu rows, want %zu; first difference at row %zu", what, got->n, n, i);
	if (i > 0) {
		tx_add(&t, "\n    both row %zu: ", i - 1);
		tx_values(&t, got, rs_row(got, i - 1), got->w);
	}
	tx_add(&t, "\n    got  row %zu: ", i);
	if (i < got->n)
		tx_values(&t, got, rs_row(got, i), got->w);
	else
		tx_add(&t, "(none)");
	tx_add(&t, "\n    want row %zu: ", i);
	if (i < n)
		tx_values(&t, want, rs_row(want, off + i), got->w);
	else
		tx_add(&t, "(none)");
	mismatch(d, "%s", buf);
}

/* ---- SQLite ---- */

static void sql_exec(diff *d, const char *sql)
{
	char *err = NULL;
	if (sqlite3_exec(d->sq, sql, NULL, NULL, &err) != SQLITE_OK)
		fail_msg("sqlite: %s: %s", sql, err ? err : "?");
}

static sqlite3_stmt *sql_prepare(diff *d, const char *sql)
{
	sqlite3_stmt *st = NULL;
	if (sqlite3_prepare_v2(d->sq, sql, -1, &st, NULL) != SQLITE_OK)
		fail_msg("sqlite: %s: %s", sql, sqlite3_errmsg(d->sq));
	return st;
}

static void sql_bind(diff *d, sqlite3_stmt *st, int i, const ts_value *v)
{
	int rc;
	switch (v->type) {
	case TS_DOUBLE:
		rc = sqlite3_bind_double(st, i, v->v.d);
		break;
	case TS_STRING:
		rc = sqlite3_bind_text(st, i, (const char *)vbytes(NULL, v), (int)v->v.s.len,
		                       SQLITE_TRANSIENT);
		break;
	case TS_BLOB:
		rc = sqlite3_bind_blob(st, i, vbytes(NULL, v), (int)v->v.s.len, SQLITE_TRANSIENT);
		break;
	default:
		rc = sqlite3_bind_int64(st, i, v->v.i);
		break;
	}
	if (rc != SQLITE_OK)
		fail_msg("sqlite bind: %s", sqlite3_errmsg(d->sq));
}

/* Column i of the current row of st, as a value of type into rs. */
static void sql_column(diff *d, sqlite3_stmt *st, int i, ts_type type, rowset *rs, size_t r)
{
	int have = sqlite3_column_type(st, i), want;
	ts_value v;
	v.type = type;
	switch (type) {
	case TS_DOUBLE:
		want = SQLITE_FLOAT;
		v.v.d = sqlite3_column_double(st, i);
		break;
	case TS_STRING:
	case TS_BLOB:
		want = type == TS_STRING ? SQLITE_TEXT : SQLITE_BLOB;
		v.v.s.ptr = sqlite3_column_blob(st, i);
		v.v.s.len = (size_t)sqlite3_column_bytes(st, i);
		break;
	default:
		want = SQLITE_INTEGER;
		v.v.i = sqlite3_column_int64(st, i);
		break;
	}
	if (have != want) /* a bug of this test, not of tsstore */
		fail_msg("oracle: column %d of \"%s\" has SQLite type %d, want %d", i,
		         sqlite3_sql(st), have, want);
	rs_put(rs, r, i, &v);
	(void)d;
}

static const char *sql_type(ts_type t)
{
	switch (t) {
	case TS_DOUBLE: return "REAL";
	case TS_STRING: return "TEXT";
	case TS_BLOB: return "BLOB";
	default: return "INT"; /* not INTEGER: PRIMARY KEY (ts) must not alias rowid */
	}
}

/* An SQL text with its parameters. */
typedef struct sqlbuf {
	char s[8192];
	text t;
	ts_value bind[8 * MAXKEY];
	int nbind;
} sqlbuf;

static void sq_init(sqlbuf *b)
{
	b->t = (text){b->s, sizeof b->s, 0};
	b->s[0] = '\0';
	b->nbind = 0;
}

static void sq_param(sqlbuf *b, const ts_value *v)
{
	assert_true(b->nbind < (int)COUNT(b->bind));
	b->bind[b->nbind++] = *v;
	tx_add(&b->t, "?");
}

/* Run b; its rows, with the given types, go to out (w columns). */
static void sql_rows(diff *d, const sqlbuf *b, const ts_type *types, int w, rowset *out)
{
	int rc;
	assert_true(b->t.n + 1 < b->t.size);
	sqlite3_stmt *st = sql_prepare(d, b->s);
	for (int i = 0; i < b->nbind; i++)
		sql_bind(d, st, i + 1, &b->bind[i]);
	rs_init(out, w);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		size_t r = rs_add_row(out);
		for (int c = 0; c < w; c++)
			sql_column(d, st, c, types[c], out, r);
	}
	if (rc != SQLITE_DONE)
		fail_msg("sqlite: %s: %s", b->s, sqlite3_errmsg(d->sq));
	sqlite3_finalize(st);
}

static void sq_names(sqlbuf *b, const diff *d, int from, int to, const char *suffix)
{
	for (int k = from; k < to; k++)
		tx_add(&b->t, "%s\"%s\"%s", k > from ? ", " : "", key_name(d, k), suffix);
}

/* AND (k0, ..., kn-1) op (v0, ..., vn-1) */
static void sq_keycmp(sqlbuf *b, const diff *d, const ts_value *v, int n, const char *op)
{
	tx_add(&b->t, " AND (");
	sq_names(b, d, 0, n, "");
	tx_add(&b->t, ") %s (", op);
	for (int k = 0; k < n; k++) {
		tx_add(&b->t, "%s", k ? ", " : "");
		sq_param(b, &v[k]);
	}
	tx_add(&b->t, ")");
}

static void sq_prefix(sqlbuf *b, const diff *d, const ts_value *v, int n)
{
	for (int k = 0; k < n; k++) {
		tx_add(&b->t, " AND \"%s\" = ", key_name(d, k));
		sq_param(b, &v[k]);
	}
}

/* Rows past the TTL are never returned. */
static void sq_ttl(sqlbuf *b, const diff *d)
{
	if (d->ttl > 0) {
		ts_value cut = ts_int64(d->now - d->ttl);
		tx_add(&b->t, " AND \"ts\" >= ");
		sq_param(b, &cut);
	}
}

static void sq_time(sqlbuf *b, const char *op, int64_t ts)
{
	ts_value v = ts_int64(ts);
	tx_add(&b->t, " AND \"ts\" %s ", op);
	sq_param(b, &v);
}

static void create_sql(diff *d)
{
	sqlbuf b;
	sq_init(&b);
	tx_add(&b.t, "CREATE TABLE t (");
	for (int c = 0; c < d->ncols; c++)
		tx_add(&b.t, "\"%s\" %s, ", d->cols[c].name, sql_type(d->cols[c].type));
	tx_add(&b.t, "PRIMARY KEY (");
	sq_names(&b, d, 0, d->nkey, "");
	tx_add(&b.t, "))");
	sql_exec(d, b.s);
	sql_exec(d, "CREATE INDEX t_ts ON t (\"ts\")");
}

/* The statements that depend on the columns: insert a row, read a row's
 * key by rowid. */
static void prepare_sql(diff *d)
{
	sqlbuf b;
	sqlite3_finalize(d->ins);
	sqlite3_finalize(d->pick);
	sq_init(&b);
	tx_add(&b.t, "INSERT INTO t VALUES (");
	for (int c = 0; c < d->ncols; c++)
		tx_add(&b.t, "%s?", c ? ", " : "");
	tx_add(&b.t, ")");
	d->ins = sql_prepare(d, b.s);
	sq_init(&b);
	tx_add(&b.t, "SELECT ");
	sq_names(&b, d, 0, d->nkey, "");
	tx_add(&b.t, " FROM t WHERE rowid = ?");
	d->pick = sql_prepare(d, b.s);
}

/* ---- keys held by requests ---- */

/* Up to nkey values whose bytes live inside the struct (do not copy it). */
typedef struct keyval {
	int n;
	ts_value v[MAXKEY];
	unsigned char b[MAXKEY][KEYBYTES];
} keyval;

static void kv_set(keyval *k, int i, const ts_value *v)
{
	k->v[i] = *v;
	if (is_bytes(v->type)) {
		assert_true(v->v.s.len <= KEYBYTES);
		memcpy(k->b[i], vbytes(NULL, v), v->v.s.len);
		k->v[i].v.s.ptr = k->b[i];
	}
}

/* The key of a random committed row, into k (n = nkey); 0 if none. */
static int pick_row(diff *d, keyval *k)
{
	if (d->nrows == 0)
		return 0;
	rowset rs;
	int64_t id = 1 + (int64_t)below((uint64_t)d->nrows);
	ts_type types[MAXKEY];
	for (int i = 0; i < d->nkey; i++)
		types[i] = d->cols[d->key[i]].type;
	sqlite3_reset(d->pick);
	sqlite3_bind_int64(d->pick, 1, id);
	if (sqlite3_step(d->pick) != SQLITE_ROW)
		fail_msg("oracle: no row %" PRId64 " of %" PRId64, id, d->nrows);
	rs_init(&rs, d->nkey);
	rs_add_row(&rs);
	for (int i = 0; i < d->nkey; i++)
		sql_column(d, d->pick, i, types[i], &rs, 0);
	sqlite3_reset(d->pick);
	k->n = d->nkey;
	for (int i = 0; i < d->nkey; i++) {
		ts_value v = rs_value(&rs, rs_row(&rs, 0) + i);
		kv_set(k, i, &v);
	}
	rs_free(&rs);
	return 1;
}

/* ---- generating rows ---- */

static int64_t gen_ts(diff *d)
{
	int64_t lo = d->now - DATA_SPAN, hi = d->now + 3 * HOUR, ts;
	keyval k;
	if (d->ttl > 0 && lo < d->now - d->ttl)
		lo = d->now - d->ttl;
	switch (below(10)) {
	case 0: case 1: case 2: case 3:
		return lo + (int64_t)below((uint64_t)(hi - lo + 1));
	case 4: case 5: case 6: /* on the minute: equal ts under different keys */
		ts = lo + (int64_t)below((uint64_t)(hi - lo + 1));
		ts -= ts % MINUTE;
		return ts < lo ? ts + MINUTE : ts;
	case 7: /* next to a stored row, or at the same instant */
		if (pick_row(d, &k)) {
			ts = k.v[d->nkey - 1].v.i + (chance(50) ? 0 : (int64_t)below(2001) - 1000);
			return ts < lo ? lo : ts > hi ? hi : ts;
		}
		return lo;
	default: /* late rows of the last hour */
		return d->now - (int64_t)below((uint64_t)HOUR);
	}
}

/* 70000 bytes of text: long string values. */
static const char *big_text(void)
{
	static char big[70000];
	if (!big[0])
		for (size_t i = 0; i < sizeof big; i++)
			big[i] = (char)('a' + (i * 7 + i / 26) % 26);
	return big;
}

/* A value of column c in its current type. */
static ts_value gen_value(diff *d, int c)
{
	const struct col *col = &d->cols[c];
	const bytes *b;
	int64_t i;
	switch (col->gen) {
	case G_HOST: return ts_string(hosts[below(COUNT(hosts))]);
	case G_KEY32:
		if (col->type == TS_INT64 && chance(25))
			return ts_int64(key32_wide[below(COUNT(key32_wide))]);
		return typed_int(col->type, key32[below(COUNT(key32))]);
	case G_KEY64: return ts_int64(key64[below(COUNT(key64))]);
	case G_KEYDBL: return ts_double(keydbl[below(COUNT(keydbl))]);
	case G_KEYBLOB:
	case G_BLOB:
		b = &blobs[below(COUNT(blobs))];
		return ts_blob(b->p, b->n);
	case G_TS: return ts_timestamp(gen_ts(d));
	case G_I32:
		if (col->type == TS_INT64 && chance(20))
			return ts_int64((int64_t)below(INT64_C(1) << 41) - (INT64_C(1) << 40));
		i = chance(70) ? (int64_t)below(201) - 100 : (int64_t)(int32_t)(uint32_t)rnd();
		return typed_int(col->type, i);
	case G_I64: return ts_int64((int64_t)below(INT64_C(1) << 41) - (INT64_C(1) << 40));
	case G_DQ: return ts_double((double)((int64_t)below(1 << 22) - (1 << 21)) / 4);
	case G_DPOS: return ts_double((double)below(1000000) / 10);
	case G_TSV:
		return ts_timestamp((int64_t)below(INT64_C(1) << 41) - (INT64_C(1) << 40));
	case G_STR:
		if (chance(1)) /* now and then a long value, rarely one past a tablet block */
			return ts_stringn(big_text(), chance(20) ? 70000 : 3000 + below(100));
		return ts_string(words[below(COUNT(words))]);
	}
	fail_msg("column %d: no generator", c);
	return ts_none();
}

/* How a stored value may be handed to ts_insert: another type that the
 * column accepts and converts. */
static ts_value input_form(const diff *d, int c, ts_value v)
{
	ts_type type = d->cols[c].type;
	if ((type == TS_INT32 || type == TS_TIMESTAMP) && chance(10))
		v.type = TS_INT64;
	else if (type == TS_INT64 && v.v.i >= INT32_MIN && v.v.i <= INT32_MAX && chance(5))
		v.type = TS_INT32;
	else if (type == TS_DOUBLE && v.v.d == floor(v.v.d) && fabs(v.v.d) < 1e15 && chance(10))
		v = ts_int64((int64_t)v.v.d);
	else if (type == TS_BLOB && chance(10))
		v.type = TS_STRING;
	return v;
}

/* One row: in[] for ts_insert, stored[] as the table will hold it. */
static void gen_row(diff *d, ts_value *in, ts_value *stored)
{
	for (int c = 0; c < d->ncols; c++) {
		if (c == d->tscol && chance(1)) { /* ts defaults to now */
			in[c] = ts_none();
			stored[c] = ts_timestamp(d->now);
		} else if (c != d->tscol && key_pos(d, c) < 0 && chance(8)) {
			in[c] = ts_none();
			stored[c] = d->cols[c].dflt;
		} else {
			stored[c] = gen_value(d, c);
			in[c] = input_form(d, c, stored[c]);
		}
	}
}

/* Insert stored[] into SQLite: SQLITE_DONE or SQLITE_CONSTRAINT. */
static int sql_insert(diff *d, const ts_value *stored)
{
	sqlite3_reset(d->ins);
	for (int c = 0; c < d->ncols; c++)
		sql_bind(d, d->ins, c + 1, &stored[c]);
	int rc = sqlite3_step(d->ins);
	sqlite3_reset(d->ins);
	if (rc != SQLITE_DONE && rc != SQLITE_CONSTRAINT)
		fail_msg("sqlite insert: %s", sqlite3_errmsg(d->sq));
	return rc;
}

/* Make row r of in[] bad; returns the error ts_insert must give. */
static int make_bad_row(diff *d, ts_value *in, int r, keyval *k)
{
	ts_value *row = in + (size_t)r * (size_t)d->ncols, stored[MAXCOLS];
	gen_row(d, row, stored);
	switch (below(4)) {
	case 0: /* a stored row's key, if it has not expired */
		if (pick_row(d, k) && (d->ttl == 0 || k->v[d->nkey - 1].v.i >= d->now - d->ttl)) {
			for (int i = 0; i < d->nkey; i++)
				row[d->key[i]] = k->v[i];
			return TS_EDUPKEY;
		}
		/* fall through */
	case 1: /* the key of another row of the batch */
		if (r > 0) {
			memcpy(row, in + below((uint64_t)r) * (size_t)d->ncols, (size_t)d->ncols * sizeof *row);
			return TS_EDUPKEY;
		}
		/* fall through */
	case 2:
		if (d->ttl > 0) {
			row[d->tscol] = ts_timestamp(d->now - d->ttl - 1 - (int64_t)below((uint64_t)DAY));
			return TS_EEXPIRED;
		}
		/* fall through */
	default:
		row[d->tscol] = ts_timestamp(d->now + MAX_FUTURE + 1 + (int64_t)below((uint64_t)HOUR));
		return TS_EFUTURE;
	}
}

/* A batch of nrows good rows (and, if allowed, sometimes one bad row that
 * must make tsstore refuse them all), into both tables. */
static void insert_batch(diff *d, int nrows, int allow_bad)
{
	size_t nc = (size_t)d->ncols;
	ts_value *in = calloc((size_t)(nrows + 1) * nc, sizeof *in), stored[MAXCOLS];
	keyval k;
	assert_non_null(in);
	sql_exec(d, "BEGIN");
	for (int r = 0; r < nrows; r++) {
		int tries = 0;
		do {
			if (++tries > 100)
				fail_msg("no fresh key in 100 tries");
			gen_row(d, in + (size_t)r * nc, stored);
		} while (sql_insert(d, stored) == SQLITE_CONSTRAINT);
	}
	int bad = allow_bad && ++d->batches % 8 == 0, want = 0;
	if (bad)
		want = make_bad_row(d, in, nrows, &k);
	int rc = ts_insert(d->t, in, (size_t)(nrows + bad));
	if (rc != want)
		fail_msg("%s phase %d: ts_insert of %d rows (%s) returned %s, want %s: %s", d->sh->name,
		         d->phase, nrows + bad, bad ? "one bad" : "all good", ts_errname(rc),
		         ts_errname(want), ts_errmsg(NULL));
	sql_exec(d, bad ? "ROLLBACK" : "COMMIT");
	if (bad)
		d->rejected++;
	else
		d->nrows += nrows;
	free(in);
}

/* ---- opening, and the changes between phases ---- */

static void open_db(diff *d, int with_table)
{
	ts_options o;
	ts_options_init(&o);
	o.flags = TS_OPEN_CREATE | TS_OPEN_NOMERGE; /* merges happen when the test says */
	o.sync = TS_SYNC_NONE;
	o.clock = diff_clock;
	o.clock_arg = &d->now;
	if (d->cache >= 0)
		o.block_cache_size = d->cache;
	if (ts_open(d->dir, &o, &d->db) < 0)
		fail_msg("open: %s", ts_errmsg(NULL));
	if (with_table && ts_table_open(d->db, "t", &d->t) < 0)
		fail_msg("table open: %s", ts_errmsg(NULL));
	d->qt = d->t;
}

/* A read-only handle beside the writer (DESIGN.md section 3, "Readers
 * in other processes"), on the same clock.  It stays open while the
 * writer flushes, merges, changes the schema and the TTL, and reopens. */
static void open_reader(diff *d)
{
	ts_options o;
	ts_options_init(&o);
	o.flags = TS_OPEN_READONLY;
	o.clock = diff_clock;
	o.clock_arg = &d->now;
	o.block_cache_size = d->ro_cache;
	if (ts_open(d->dir, &o, &d->ro_db) < 0 || ts_table_open(d->ro_db, "t", &d->ro_t) < 0)
		fail_msg("read-only open: %s", ts_errmsg(NULL));
}

static void close_reader(diff *d)
{
	ts_table_close(d->ro_t);
	ts_close(d->ro_db);
	d->ro_t = NULL;
	d->ro_db = NULL;
}

static void close_db(diff *d)
{
	ts_table_close(d->t);
	d->t = NULL;
	assert_int_equal(ts_close(d->db), 0);
	d->db = NULL;
}

static void diff_start(diff *d, const struct shape *sh, uint64_t salt)
{
	ts_column cols[MAXCOLS];
	d->sh = sh;
	/* block caches: the default (all blocks fit), a few blocks (evictions),
	 * none */
	d->cache = salt % 3 == 1 ? -1 : salt % 3 == 2 ? 128 << 10 : 0;
	d->ro_cache = salt % 2 ? 96 << 10 : 0;
	d->seed = base_seed() ^ (salt * UINT64_C(0x9E3779B97F4A7C15));
	rng = d->seed ? d->seed : 1;
	d->trace = env_int("TSSTORE_DIFF_TRACE", 0);
	print_message("%s: case seed 0x%016" PRIx64 " (base TSSTORE_DIFF_SEED=0x%" PRIx64 ")\n",
	              sh->name, d->seed, base_seed());
	set_now(d, NOW0 + (int64_t)below((uint64_t)DAY));
	d->ncols = sh->ncols;
	d->nkey = sh->nkey;
	d->ttl = sh->ttl;
	for (int c = 0; c < sh->ncols; c++) {
		const struct coldef *cd = &sh->cols[c];
		snprintf(d->cols[c].name, sizeof d->cols[c].name, "%s", cd->name);
		d->cols[c].type = cd->type;
		d->cols[c].gen = cd->gen;
		d->cols[c].dflt = effective_default(cd);
		cols[c] = (ts_column){cd->name, cd->type, cd->dflt};
		if (strcmp(cd->name, "ts") == 0)
			d->tscol = c;
		for (int k = 0; k < sh->nkey; k++)
			if (strcmp(sh->key[k], cd->name) == 0)
				d->key[k] = c;
	}
	d->dir = ts_test_tmpdir();
	open_db(d, 0);
	if (ts_create_keyed(d->db, "t", cols, sh->ncols, sh->key, sh->nkey, sh->ttl) < 0)
		fail_msg("create: %s", ts_errmsg(NULL));
	close_db(d);
	open_db(d, 1);
	assert_int_equal(sqlite3_open(":memory:", &d->sq), SQLITE_OK);
	create_sql(d);
	prepare_sql(d);
	open_reader(d); /* open throughout: it must follow every change */
}

static void sql_default(text *t, const ts_value *v)
{
	switch (v->type) {
	case TS_DOUBLE: tx_add(t, "%.17g", v->v.d); break;
	case TS_STRING: tx_add(t, "'%.*s'", (int)v->v.s.len, (const char *)vbytes(NULL, v)); break;
	case TS_BLOB:
		tx_add(t, "x'");
		for (size_t i = 0; i < v->v.s.len; i++)
			tx_add(t, "%02x", vbytes(NULL, v)[i]);
		tx_add(t, "'");
		break;
	default: tx_add(t, "%" PRId64, v->v.i); break;
	}
}

static void add_column(diff *d, const struct coldef *cd)
{
	ts_column col = {cd->name, cd->type, cd->dflt};
	struct col *c = &d->cols[d->ncols];
	sqlbuf b;
	if (ts_alter_add(d->t, &col) < 0)
		fail_msg("alter add %s: %s", cd->name, ts_errmsg(NULL));
	snprintf(c->name, sizeof c->name, "%s", cd->name);
	c->type = cd->type;
	c->gen = cd->gen;
	c->dflt = effective_default(cd);
	sq_init(&b);
	tx_add(&b.t, "ALTER TABLE t ADD COLUMN \"%s\" %s DEFAULT ", cd->name, sql_type(cd->type));
	sql_default(&b.t, &c->dflt);
	sql_exec(d, b.s);
	d->ncols++;
	prepare_sql(d);
}

static void widen_column(diff *d, const char *name)
{
	if (ts_alter_widen(d->t, name) < 0)
		fail_msg("alter widen %s: %s", name, ts_errmsg(NULL));
	for (int c = 0; c < d->ncols; c++)
		if (strcmp(d->cols[c].name, name) == 0) {
			assert_int_equal(d->cols[c].type, TS_INT32);
			d->cols[c].type = TS_INT64;
			d->cols[c].dflt.type = TS_INT64;
		}
}

/* The clock moves on: by up to 20 hours, or (half the time, with a TTL)
 * to exactly where a stored row is the oldest one kept. */
static void advance_clock(diff *d)
{
	int64_t next = d->now + (int64_t)below((uint64_t)(20 * HOUR));
	keyval k;
	if (d->ttl > 0 && chance(50) && pick_row(d, &k)) {
		int64_t edge = k.v[d->nkey - 1].v.i + d->ttl;
		if (edge > d->now && edge < d->now + 30 * HOUR)
			next = edge;
	}
	set_now(d, next);
}

static void apply_changes(diff *d)
{
	for (const struct change *ch = d->sh->changes; ch->kind != CH_END; ch++) {
		if (ch->phase != d->phase)
			continue;
		switch (ch->kind) {
		case CH_WIDEN: widen_column(d, ch->col.name); break;
		case CH_ADD: add_column(d, &ch->col); break;
		case CH_TTL:
			assert_true(d->ttl == 0 || ch->ttl < d->ttl); /* expired rows stay expired */
			assert_int_equal(ts_alter_ttl(d->t, ch->ttl), 0);
			d->ttl = ch->ttl;
			break;
		case CH_REOPEN:
			close_db(d);
			open_db(d, 1);
			break;
		default: break;
		}
	}
}

static void flush_some(diff *d)
{
	int64_t before = chance(30) ? INT64_MAX : d->now - (int64_t)below((uint64_t)(8 * DAY));
	if (ts_flush(d->t, before) < 0)
		fail_msg("flush: %s", ts_errmsg(NULL));
	d->flushes++;
}

static void merge_all(diff *d)
{
	int merged = 0;
	if (ts_merge(d->t, &merged) < 0)
		fail_msg("merge: %s", ts_errmsg(NULL));
	d->merges += merged;
}

static void load(diff *d, int nbatches)
{
	for (int i = 0; i < nbatches; i++) {
		insert_batch(d, 1 + (int)below(chance(20) ? 400 : 80), 1);
		if (chance(15))
			flush_some(d);
		if (chance(6))
			merge_all(d);
	}
}

/* ---- ts_query ---- */

enum paging { ALL_ROWS, ONE_PAGE, PAGES };

/* A random query and the values it points at (do not copy it). */
typedef struct qgen {
	ts_query q;
	keyval prefix, lower, upper, after;
	int cols[MAXCOLS];
	enum paging paging;
} qgen;

/* A key value near those stored: a stored row's, a random one, or one
 * nudged by the smallest step. */
static void gen_key(diff *d, keyval *k)
{
	if (!(chance(70) && pick_row(d, k))) {
		k->n = d->nkey;
		for (int i = 0; i < d->nkey; i++) {
			ts_value v = gen_value(d, d->key[i]);
			kv_set(k, i, &v);
		}
	}
	if (chance(15)) {
		ts_value *v = &k->v[below((uint64_t)d->nkey)];
		if (v->type == TS_DOUBLE)
			v->v.d += chance(50) ? 0.125 : -0.125;
		else if (v->type == TS_TIMESTAMP || (v->type == TS_INT64 && v->v.i > INT64_MIN &&
		                                     v->v.i < INT64_MAX))
			v->v.i += chance(50) ? 1 : -1;
		else if (v->type == TS_INT32 && v->v.i > INT32_MIN && v->v.i < INT32_MAX)
			v->v.i += chance(50) ? 1 : -1;
	}
}

/* A time for a time range: a stored row's ts, or any in the data. */
static int64_t gen_query_ts(diff *d)
{
	keyval k;
	if (chance(40) && pick_row(d, &k))
		return k.v[d->nkey - 1].v.i + (chance(70) ? 0 : chance(50) ? 1 : -1);
	int64_t lo = NOW0 - DATA_SPAN - HOUR, hi = d->now + 4 * HOUR;
	int64_t ts = lo + (int64_t)below((uint64_t)(hi - lo));
	return chance(30) ? ts - ts % HOUR : ts;
}

static const int64_t spans[] = {1, SEC, MINUTE, HOUR, 4 * HOUR, DAY, 3 * DAY};

static void gen_time_range(diff *d, ts_query *q)
{
	q->has_from = chance(45);
	q->has_to = chance(45);
	if (q->has_from)
		q->from = chance(3) ? INT64_MIN : gen_query_ts(d);
	if (q->has_to) {
		q->to = q->has_from && q->from > INT64_MIN && chance(70)
		            ? q->from + spans[below(COUNT(spans))]
		            : chance(3) ? INT64_MAX : gen_query_ts(d);
		q->to_inclusive = chance(30);
	}
}

static void gen_projection(diff *d, qgen *g)
{
	int n = 1 + (int)below((uint64_t)d->ncols), all[MAXCOLS];
	for (int c = 0; c < d->ncols; c++)
		all[c] = c;
	for (int i = 0; i < n; i++) { /* the first n of a shuffle */
		int j = i + (int)below((uint64_t)(d->ncols - i)), x = all[i];
		all[i] = all[j];
		all[j] = x;
		g->cols[i] = all[i];
	}
	g->q.columns = g->cols;
	g->q.ncolumns = n;
}

static void gen_query(diff *d, qgen *g)
{
	memset(g, 0, sizeof *g);
	ts_query *q = &g->q;
	if (chance(55)) {
		gen_key(d, &g->prefix);
		q->prefix = g->prefix.v;
		q->nprefix = chance(10) ? d->nkey : 1 + (int)below((uint64_t)d->nkey);
	}
	if (chance(35)) {
		gen_key(d, &g->lower);
		q->lower = g->lower.v;
		q->nlower = 1 + (int)below((uint64_t)d->nkey);
		q->lower_exclusive = chance(50);
	}
	if (chance(35)) {
		gen_key(d, &g->upper);
		q->upper = g->upper.v;
		q->nupper = 1 + (int)below((uint64_t)d->nkey);
		q->upper_exclusive = chance(50);
	}
	gen_time_range(d, q);
	q->desc = chance(40);
	if (chance(40))
		gen_projection(d, g);
	if (chance(8)) {
		gen_key(d, &g->after);
		q->after = g->after.v;
		q->nafter = d->nkey;
	}
	int p = (int)below(100);
	g->paging = p < 25 ? PAGES : p < 35 ? ONE_PAGE : ALL_ROWS;
}

static void tx_bound(text *t, const char *name, const ts_value *v, int n, const char *op)
{
	tx_add(t, " %s%s", name, op);
	tx_values(t, NULL, v, n);
}

static void describe_query(diff *d, const ts_query *q, const char *tag)
{
	text t = what_text(d);
	tx_add(&t, "ts_query%s {", tag);
	if (q->nprefix)
		tx_bound(&t, "prefix", q->prefix, q->nprefix, "=");
	if (q->lower)
		tx_bound(&t, "lower", q->lower, q->nlower, q->lower_exclusive ? ">" : ">=");
	if (q->upper)
		tx_bound(&t, "upper", q->upper, q->nupper, q->upper_exclusive ? "<" : "<=");
	if (q->has_from)
		tx_add(&t, " from=%" PRId64, q->from);
	if (q->has_to)
		tx_add(&t, " to%s%" PRId64, q->to_inclusive ? "<=" : "<", q->to);
	if (q->desc)
		tx_add(&t, " desc");
	if (q->limit)
		tx_add(&t, " limit=%" PRIu64, q->limit);
	if (q->columns) {
		tx_add(&t, " columns={");
		for (int i = 0; i < q->ncolumns; i++)
			tx_add(&t, "%s%d", i ? ", " : "", q->columns[i]);
		tx_add(&t, "}");
	}
	if (q->after)
		tx_bound(&t, "after", q->after, q->nafter, "=");
	tx_add(&t, " }");
}

static int projected(const diff *d, const ts_query *q, int i)
{
	return q->columns ? q->columns[i] : i;
}

/* SQLite's answer to q, ignoring its limit: the projected columns, then
 * the full key of each row. */
static void oracle_query(diff *d, const ts_query *q, rowset *out)
{
	int nproj = q->columns ? q->ncolumns : d->ncols;
	ts_type types[2 * MAXCOLS];
	sqlbuf b;
	sq_init(&b);
	tx_add(&b.t, "SELECT ");
	for (int i = 0; i < nproj; i++) {
		types[i] = d->cols[projected(d, q, i)].type;
		tx_add(&b.t, "\"%s\", ", d->cols[projected(d, q, i)].name);
	}
	for (int k = 0; k < d->nkey; k++)
		types[nproj + k] = d->cols[d->key[k]].type;
	sq_names(&b, d, 0, d->nkey, "");
	tx_add(&b.t, " FROM t WHERE 1");
	sq_prefix(&b, d, q->prefix, q->nprefix);
	if (q->lower)
		sq_keycmp(&b, d, q->lower, q->nlower, q->lower_exclusive ? ">" : ">=");
	if (q->upper)
		sq_keycmp(&b, d, q->upper, q->nupper, q->upper_exclusive ? "<" : "<=");
	if (q->has_from)
		sq_time(&b, ">=", q->from);
	if (q->has_to)
		sq_time(&b, q->to_inclusive ? "<=" : "<", q->to);
	sq_ttl(&b, d);
	if (q->after)
		sq_keycmp(&b, d, q->after, q->nafter, q->desc ? "<" : ">");
	tx_add(&b.t, " ORDER BY ");
	sq_names(&b, d, 0, d->nkey, q->desc ? " DESC" : "");
	sql_rows(d, &b, types, nproj + d->nkey, out);
}

/* Every row of cur into rs (rs->w values each). */
static void collect(diff *d, ts_cursor *cur, rowset *rs)
{
	const ts_value *row;
	int n;
	for (;;) {
		int rc = ts_cursor_next(cur, &row, &n);
		if (rc < 0)
			mismatch(d, "ts_cursor_next returned %s: %s", ts_errname(rc), ts_errmsg(NULL));
		if (!row) {
			if (ts_cursor_next(cur, &row, &n) != 0 || row)
				mismatch(d, "ts_cursor_next after the end did not stay at the end");
			return;
		}
		if (n != rs->w)
			mismatch(d, "row %zu has %d values, want %d", rs->n, n, rs->w);
		size_t r = rs_add_row(rs);
		for (int c = 0; c < n; c++)
			rs_put(rs, r, c, &row[c]);
	}
}

static ts_cursor *open_query(diff *d, const ts_query *q)
{
	ts_cursor *cur = NULL;
	int rc = ts_query_open(d->qt, q, &cur);
	if (rc < 0)
		mismatch(d, "ts_query_open returned %s: %s", ts_errname(rc), ts_errmsg(NULL));
	return cur;
}

/* The resume key of cur after it returned the rows of want up to (not
 * including) row end: that of row end - 1, or TS_ENOENT when end is 0.
 * It goes to *k. */
static void check_resume(diff *d, ts_cursor *cur, const rowset *want, int nproj, size_t end,
                         keyval *k)
{
	const ts_value *key = NULL;
	int n = -1, rc = ts_cursor_resume(cur, &key, &n);
	if (end == 0) {
		if (rc != TS_ENOENT)
			mismatch(d, "ts_cursor_resume with no row returned gave %s, want ENOENT",
			         ts_errname(rc));
		return;
	}
	if (rc != 0 || n != d->nkey)
		mismatch(d, "ts_cursor_resume returned %s with %d values", ts_errname(rc), n);
	const ts_value *w = rs_row(want, end - 1) + nproj;
	for (int i = 0; i < n; i++)
		if (!value_eq(NULL, &key[i], want, &w[i], 0)) {
			char buf[1024];
			text t = {buf, sizeof buf, 0};
			tx_add(&t, "ts_cursor_resume after row %zu: got ", end - 1);
			tx_values(&t, NULL, key, n);
			tx_add(&t, ", want ");
			tx_values(&t, want, w, n);
			mismatch(d, "%s", buf);
		}
	k->n = n;
	for (int i = 0; i < n; i++)
		kv_set(k, i, &key[i]);
}

/* The limit for a paged query: a few pages, sometimes ending exactly at
 * the end of the rows. */
static uint64_t pick_limit(const qgen *g, size_t n)
{
	if (g->paging == ONE_PAGE && n > 0 && chance(25))
		return n;
	if (g->paging == ONE_PAGE && chance(5))
		return UINT64_MAX;
	if (g->paging == ONE_PAGE)
		return 1 + below(n + 3);
	uint64_t pages = 1 + below(10);
	return n / pages + 1 + below(3);
}

static void run_query(diff *d, qgen *g)
{
	ts_query q = g->q;
	int nproj = q.columns ? q.ncolumns : d->ncols;
	keyval after[2];
	rowset want;
	describe_query(d, &q, "");
	trace(d);
	oracle_query(d, &q, &want);
	q.limit = g->paging == ALL_ROWS ? 0 : pick_limit(g, want.n);
	size_t off = 0;
	for (int page = 0;; page++) {
		rowset got;
		rs_init(&got, nproj);
		describe_query(d, &q, page ? " (a later page)" : "");
		ts_cursor *cur = open_query(d, &q);
		collect(d, cur, &got);
		size_t left = want.n - off, expect = q.limit && q.limit < left ? q.limit : left;
		expect_rows(d, "ts_query", &got, &want, off, expect, NULL);
		int more = ts_cursor_more(cur), want_more = expect < left;
		if (more != want_more)
			mismatch(d, "ts_cursor_more is %d after %zu of %zu rows, want %d", more,
			         off + expect, want.n, want_more);
		check_resume(d, cur, &want, nproj, off + expect, &after[page % 2]);
		ts_cursor_close(cur);
		if (d->qt == d->t)
			d->returned += (int64_t)got.n;
		off += got.n;
		rs_free(&got);
		if (!more || g->paging != PAGES)
			break;
		assert_true(page <= (int)want.n);
		q.after = after[page % 2].v;
		q.nafter = d->nkey;
	}
	rs_free(&want);
}

/* ---- ts_latest_open ---- */

static void run_latest(diff *d)
{
	keyval k;
	int n = chance(25) ? 0 : 1 + (int)below((uint64_t)d->nkey);
	ts_type types[MAXCOLS];
	rowset want, got;
	sqlbuf b;
	gen_key(d, &k);
	if (n == d->nkey && chance(50))
		n--;
	text t = what_text(d);
	tx_bound(&t, "ts_latest_open prefix", k.v, n, "=");
	trace(d);
	sq_init(&b);
	tx_add(&b.t, "SELECT ");
	for (int c = 0; c < d->ncols; c++) {
		types[c] = d->cols[c].type;
		tx_add(&b.t, "%s\"%s\"", c ? ", " : "", d->cols[c].name);
	}
	tx_add(&b.t, " FROM t WHERE 1");
	sq_prefix(&b, d, k.v, n);
	sq_ttl(&b, d);
	tx_add(&b.t, " ORDER BY \"ts\" DESC, ");
	sq_names(&b, d, 0, d->nkey, " DESC");
	tx_add(&b.t, " LIMIT 1");
	sql_rows(d, &b, types, d->ncols, &want);
	ts_cursor *cur = NULL;
	int rc = ts_latest_open(d->qt, n ? k.v : NULL, n, &cur);
	if (rc < 0)
		mismatch(d, "ts_latest_open returned %s: %s", ts_errname(rc), ts_errmsg(NULL));
	rs_init(&got, d->ncols);
	collect(d, cur, &got);
	ts_cursor_close(cur);
	expect_rows(d, "ts_latest_open", &got, &want, 0, want.n, NULL);
	rs_free(&got);
	rs_free(&want);
}

/* ---- ts_aggregate_open ---- */

typedef struct agen {
	ts_aggregate a;
	keyval prefix;
	ts_aggspec specs[6];
} agen;

static const int64_t everies[] = {1, 1000, SEC, 7 * SEC, MINUTE, 7 * MINUTE, HOUR,
                                  90 * MINUTE, 4 * HOUR, DAY, WEEK, 30 * DAY,
                                  INT64_C(1000000000000000000), INT64_C(1) << 62, INT64_MAX};
static const int64_t broad_everies[] = {HOUR, 4 * HOUR, DAY, WEEK, 30 * DAY};
static const int64_t agg_spans[] = {MINUTE, HOUR, 6 * HOUR, DAY, 3 * DAY, 9 * DAY};

/* Sums and means of the ts key and of int64 keys would overflow. */
static int summable(const diff *d, int c)
{
	return d->cols[c].gen != G_TS && d->cols[c].gen != G_KEY64;
}

static void gen_aggregate(diff *d, agen *g)
{
	int numeric[MAXCOLS], nnum = 0;
	memset(g, 0, sizeof *g);
	for (int c = 0; c < d->ncols; c++)
		if (is_numeric(d->cols[c].type))
			numeric[nnum++] = c;
	if (chance(60)) {
		gen_key(d, &g->prefix);
		g->a.prefix = g->prefix.v;
		g->a.nprefix = 1 + (int)below((uint64_t)d->nkey);
	}
	g->a.group = (int)below((uint64_t)d->nkey);
	/* broad: every row, wide windows and no first or last, so that
	 * whole tablet blocks can be answered from their statistics */
	int broad = chance(30);
	if (broad) {
		g->a.every = broad_everies[below(COUNT(broad_everies))];
		g->a.from = chance(20) ? INT64_MIN : NOW0 - 2 * WEEK + (int64_t)below(2);
		g->a.to = chance(20) ? INT64_MAX : d->now + 2 * DAY - (int64_t)below(2);
	} else {
		g->a.every = everies[below(COUNT(everies))];
		g->a.from = gen_query_ts(d);
		g->a.to = g->a.from + agg_spans[below(COUNT(agg_spans))] + (int64_t)below(1000);
	}
	if (g->a.every == 1 && g->a.to - g->a.from > 6 * HOUR) /* one window per row */
		g->a.to = g->a.from + 6 * HOUR;
	g->a.nspecs = chance(5) ? 0 : 1 + (int)below(COUNT(g->specs)); /* 0: the windows only */
	for (int i = 0; i < g->a.nspecs; i++) {
		ts_aggspec *s = &g->specs[i];
		s->column = numeric[below((uint64_t)nnum)];
		s->fn = (ts_aggfn)(TS_AGG_COUNT + (int)below(broad ? 5 : 7));
		if ((s->fn == TS_AGG_SUM || s->fn == TS_AGG_MEAN) && !summable(d, s->column))
			s->fn = chance(50) ? TS_AGG_MIN : broad ? TS_AGG_MAX : TS_AGG_LAST;
	}
	g->a.specs = g->specs;
}

static void describe_aggregate(diff *d, const ts_aggregate *a)
{
	text t = what_text(d);
	tx_add(&t, "ts_aggregate {");
	if (a->nprefix)
		tx_bound(&t, "prefix", a->prefix, a->nprefix, "=");
	tx_add(&t, " from=%" PRId64 " to=%" PRId64 " every=%" PRId64 " group=%d specs={", a->from,
	       a->to, a->every, a->group);
	for (int i = 0; i < a->nspecs; i++)
		tx_add(&t, "%s%s(%d \"%s\")", i ? ", " : "", ts_aggfn_name(a->specs[i].fn),
		       a->specs[i].column, d->cols[a->specs[i].column].name);
	tx_add(&t, "} }");
}

static ts_type agg_type(const diff *d, const ts_aggspec *s)
{
	ts_type ct = d->cols[s->column].type;
	switch (s->fn) {
	case TS_AGG_COUNT: return TS_INT64;
	case TS_AGG_SUM: return ct == TS_DOUBLE ? TS_DOUBLE : TS_INT64;
	case TS_AGG_MEAN: return TS_DOUBLE;
	default: return ct;
	}
}

/* first/last as window functions: the value at the least (greatest) ts
 * of the group-window, ties broken by the least (greatest) key. */
static void sq_first_last(sqlbuf *b, const diff *d, const ts_aggregate *a)
{
	for (int i = 0; i < a->nspecs; i++) {
		const ts_aggspec *s = &a->specs[i];
		const char *dir = s->fn == TS_AGG_LAST ? " DESC" : "";
		if (s->fn != TS_AGG_FIRST && s->fn != TS_AGG_LAST)
			continue;
		tx_add(&b->t, ", first_value(\"%s\") OVER (PARTITION BY ", d->cols[s->column].name);
		sq_names(b, d, 0, a->group, "");
		tx_add(&b->t, "%sw__ ORDER BY \"ts\"%s%s", a->group ? ", " : "", dir,
		       d->nkey > 1 ? ", " : "");
		sq_names(b, d, 0, d->nkey - 1, dir);
		tx_add(&b->t, ") AS v%d__", i);
	}
}

static void sq_agg_expr(sqlbuf *b, const diff *d, const ts_aggspec *s, int i)
{
	static const char *const fns[] = {"", "count", "sum", "min", "max", "avg"};
	const char *name = d->cols[s->column].name;
	if (s->fn == TS_AGG_FIRST || s->fn == TS_AGG_LAST)
		tx_add(&b->t, ", min(v%d__)", i);
	else
		tx_add(&b->t, ", %s(\"%s\")", fns[s->fn], name);
}

/* The group's key columns, then the window: "a", "b", w__ */
static void sq_group(sqlbuf *b, const diff *d, int group)
{
	sq_names(b, d, 0, group, "");
	tx_add(&b->t, "%sw__", group ? ", " : "");
}

static void oracle_aggregate(diff *d, const ts_aggregate *a, rowset *out, int *approx)
{
	ts_type types[MAXKEY + 1 + COUNT(((agen *)0)->specs)];
	int w = a->group + 1 + a->nspecs;
	int64_t e = a->every;
	sqlbuf b;
	for (int k = 0; k < a->group; k++)
		types[k] = d->cols[d->key[k]].type;
	types[a->group] = TS_TIMESTAMP;
	memset(approx, 0, (size_t)w * sizeof *approx);
	for (int i = 0; i < a->nspecs; i++) {
		types[a->group + 1 + i] = agg_type(d, &a->specs[i]);
		approx[a->group + 1 + i] = types[a->group + 1 + i] == TS_DOUBLE &&
		                           (a->specs[i].fn == TS_AGG_SUM || a->specs[i].fn == TS_AGG_MEAN);
	}
	sq_init(&b);
	tx_add(&b.t, "SELECT ");
	sq_group(&b, d, a->group);
	for (int i = 0; i < a->nspecs; i++)
		sq_agg_expr(&b, d, &a->specs[i], i);
	tx_add(&b.t, " FROM (SELECT *");
	sq_first_last(&b, d, a);
	/* floor(ts / every) * every: every ts of the test is positive */
	tx_add(&b.t, " FROM (SELECT *, \"ts\" - \"ts\" %% %" PRId64 " AS w__ FROM t WHERE 1", e);
	sq_prefix(&b, d, a->prefix, a->nprefix);
	sq_time(&b, ">=", a->from);
	sq_time(&b, "<", a->to);
	sq_ttl(&b, d);
	tx_add(&b.t, ")) GROUP BY ");
	sq_group(&b, d, a->group);
	tx_add(&b.t, " ORDER BY ");
	sq_group(&b, d, a->group);
	sql_rows(d, &b, types, w, out);
}

static void run_aggregate(diff *d)
{
	agen g;
	rowset want, got;
	int approx[MAXKEY + 1 + COUNT(g.specs)];
	gen_aggregate(d, &g);
	describe_aggregate(d, &g.a);
	trace(d);
	oracle_aggregate(d, &g.a, &want, approx);
	ts_cursor *cur = NULL;
	int rc = ts_aggregate_open(d->qt, &g.a, &cur);
	if (rc < 0)
		mismatch(d, "ts_aggregate_open returned %s: %s", ts_errname(rc), ts_errmsg(NULL));
	rs_init(&got, want.w);
	collect(d, cur, &got);
	ts_cursor_close(cur);
	expect_rows(d, "ts_aggregate_open", &got, &want, 0, want.n, approx);
	rs_free(&got);
	rs_free(&want);
}

/* ---- snapshots ---- */

/* A cursor opened before an insert, a flush and a merge reads the rows
 * of its snapshot only; a cursor opened afterwards sees the new rows. */
static void check_snapshot(diff *d)
{
	qgen g;
	rowset want, got;
	memset(&g, 0, sizeof g); /* every row, so that the new rows fall inside */
	g.q.desc = chance(50);
	if (chance(50))
		gen_projection(d, &g);
	int nproj = g.q.columns ? g.q.ncolumns : d->ncols;
	describe_query(d, &g.q, " (snapshot: insert, flush and merge while it is open)");
	trace(d);
	oracle_query(d, &g.q, &want);
	ts_cursor *cur = open_query(d, &g.q);
	rs_init(&got, nproj);
	const ts_value *row;
	int n;
	for (size_t i = below(want.n + 1); i > 0; i--) { /* read part of it */
		if (ts_cursor_next(cur, &row, &n) < 0 || !row || n != nproj)
			mismatch(d, "ts_cursor_next failed or ended early at row %zu", got.n);
		size_t r = rs_add_row(&got);
		for (int c = 0; c < n; c++)
			rs_put(&got, r, c, &row[c]);
	}
	insert_batch(d, 1 + (int)below(100), 0);
	if (chance(70))
		flush_some(d);
	if (chance(70))
		merge_all(d);
	collect(d, cur, &got);
	ts_cursor_close(cur);
	expect_rows(d, "snapshot", &got, &want, 0, want.n, NULL);
	rs_free(&got);
	rs_free(&want);
	g.paging = ALL_ROWS;
	run_query(d, &g); /* a new cursor sees the batch */
}

/* ---- counters ---- */

static void stats_pair(diff *d, int64_t *scanned, int64_t *returned)
{
	*scanned = ts_test_stat(d->t, "rows_scanned");
	*returned = ts_test_stat(d->t, "rows_returned");
	if (*scanned < *returned)
		fail_msg("%s: rows_scanned %" PRId64 " < rows_returned %" PRId64, d->sh->name,
		         *scanned, *returned);
}

/* Whether the answers now come from filling trees and tablets at once. */
static void note_mix(diff *d)
{
	if (ts_test_stat(d->t, "tablets") > 0 && ts_test_stat(d->t, "filling_rows") > 0)
		d->mixed_phases++;
}

static void query_phase(diff *d)
{
	int scale = env_int("TSSTORE_DIFF_SCALE", 1);
	int64_t s0, r0, s1, r1, s2, r2, sum0 = ts_test_stat(d->t, "aggregate_rows_summarised");
	qgen g;
	note_mix(d);
	stats_pair(d, &s0, &r0);
	d->returned = 0;
	for (int i = 0; i < PLAIN_QUERIES * scale; i++) {
		gen_query(d, &g);
		run_query(d, &g);
	}
	stats_pair(d, &s1, &r1);
	if (r1 - r0 != d->returned || s1 - s0 < r1 - r0)
		fail_msg("%s phase %d: ts_query returned %" PRId64 " rows; rows_returned grew by %" PRId64
		         ", rows_scanned by %" PRId64, d->sh->name, d->phase, d->returned, r1 - r0,
		         s1 - s0);
	for (int i = 0; i < MIXED_QUERIES * scale; i++) {
		int kind = (int)below(10);
		d->qt = chance(15) ? d->ro_t : d->t;
		if (kind < 2)
			run_latest(d);
		else if (kind < 6)
			run_aggregate(d);
		else {
			gen_query(d, &g);
			run_query(d, &g);
		}
	}
	d->qt = d->t;
	stats_pair(d, &s2, &r2);
	if (s2 < s1 || r2 < r1)
		fail_msg("%s phase %d: counters went back", d->sh->name, d->phase);
	d->summarised += ts_test_stat(d->t, "aggregate_rows_summarised") - sum0;
	check_snapshot(d);
}

/* ---- malformed requests ---- */

/* A value of the wrong type for key column k. */
static ts_value wrong_type(const diff *d, int k)
{
	ts_type t = d->cols[d->key[k]].type;
	if (is_bytes(t))
		return ts_int64(1);
	return k == d->nkey - 1 ? ts_double(1.5) : ts_string("x");
}

static void expect_error(diff *d, int rc, ts_cursor *cur, int want1, int want2)
{
	if (rc == want1 || rc == want2) {
		if (cur)
			mismatch(d, "a failed open left a cursor");
		return;
	}
	ts_cursor_close(cur);
	mismatch(d, "returned %s (%s), want %s%s%s", ts_errname(rc), rc ? ts_errmsg(NULL) : "",
	         ts_errname(want1), want2 != want1 ? " or " : "", want2 != want1 ? ts_errname(want2) : "");
}

static void bad_query(diff *d, const ts_query *q, const char *why, int want1, int want2)
{
	ts_cursor *cur = NULL;
	text t = what_text(d);
	tx_add(&t, "malformed ts_query: %s", why);
	trace(d);
	expect_error(d, ts_query_open(d->t, q, &cur), cur, want1, want2);
}

static void bad_latest(diff *d, const ts_value *prefix, int n, const char *why, int want)
{
	ts_cursor *cur = NULL;
	text t = what_text(d);
	tx_add(&t, "malformed ts_latest_open: %s", why);
	trace(d);
	expect_error(d, ts_latest_open(d->t, prefix, n, &cur), cur, want, want);
}

static void bad_aggregate(diff *d, const ts_aggregate *a, const char *why, int want1, int want2)
{
	ts_cursor *cur = NULL;
	text t = what_text(d);
	tx_add(&t, "malformed ts_aggregate: %s", why);
	trace(d);
	expect_error(d, ts_aggregate_open(d->t, a, &cur), cur, want1, want2);
}

static void check_bad_queries(diff *d, const keyval *k)
{
	int K = d->nkey, col;
	ts_value v[MAXKEY + 1];
	ts_query q;
	memcpy(v, k->v, sizeof k->v);
	v[K] = k->v[0];
	for (int i = 0; i < K; i++) {
		ts_value keep = v[i];
		v[i] = wrong_type(d, i);
		q = (ts_query){.prefix = v, .nprefix = i + 1};
		bad_query(d, &q, "prefix value of the wrong type", TS_ETYPE, TS_ETYPE);
		q = (ts_query){.lower = v, .nlower = i + 1};
		bad_query(d, &q, "lower bound value of the wrong type", TS_ETYPE, TS_ETYPE);
		q = (ts_query){.upper = v, .nupper = K, .upper_exclusive = 1};
		bad_query(d, &q, "upper bound value of the wrong type", TS_ETYPE, TS_ETYPE);
		q = (ts_query){.after = v, .nafter = K};
		bad_query(d, &q, "after value of the wrong type", TS_ETYPE, TS_ETYPE);
		v[i] = keep;
	}
	for (int i = 0; i < K; i++)
		if (d->cols[d->key[i]].type == TS_INT32) { /* not widened yet */
			ts_value keep = v[i];
			v[i] = ts_int64(INT64_C(1) << 40);
			q = (ts_query){.lower = v, .nlower = i + 1};
			bad_query(d, &q, "int32 key bound value out of range", TS_ERANGE, TS_ERANGE);
			v[i] = keep;
		}
	ts_value none[MAXKEY + 1];
	memcpy(none, v, sizeof none);
	none[K - 1] = ts_none();
	q = (ts_query){.lower = none, .nlower = K};
	bad_query(d, &q, "TS_NONE in the lower bound", TS_EINVAL, TS_EINVAL);
	q = (ts_query){.upper = none, .nupper = K};
	bad_query(d, &q, "TS_NONE in the upper bound", TS_EINVAL, TS_EINVAL);
	q = (ts_query){.prefix = v, .nprefix = K + 1};
	bad_query(d, &q, "nprefix = nkey + 1", TS_EINVAL, TS_EINVAL);
	q = (ts_query){.prefix = v, .nprefix = -1};
	bad_query(d, &q, "nprefix = -1", TS_EINVAL, TS_EINVAL);
	q = (ts_query){.prefix = NULL, .nprefix = 1};
	bad_query(d, &q, "prefix NULL with nprefix = 1", TS_EINVAL, TS_EINVAL);
	q = (ts_query){.lower = v, .nlower = K + 1};
	bad_query(d, &q, "nlower = nkey + 1", TS_EINVAL, TS_EINVAL);
	q = (ts_query){.upper = v, .nupper = -1};
	bad_query(d, &q, "nupper = -1", TS_EINVAL, TS_EINVAL);
	q = (ts_query){.after = v, .nafter = K + 1};
	bad_query(d, &q, "nafter = nkey + 1", TS_EINVAL, TS_EINVAL);
	if (K > 1) {
		q = (ts_query){.after = v, .nafter = K - 1};
		bad_query(d, &q, "after is not a full key", TS_EINVAL, TS_EINVAL);
	}
	col = d->ncols;
	q = (ts_query){.columns = &col, .ncolumns = 1};
	bad_query(d, &q, "projected column = ncolumns", TS_ENOENT, TS_ENOENT);
	col = -1;
	bad_query(d, &q, "projected column -1", TS_ENOENT, TS_ENOENT);
	col = 0;
	q = (ts_query){.columns = &col, .ncolumns = -1};
	bad_query(d, &q, "ncolumns = -1", TS_EINVAL, TS_EINVAL);
}

static void check_bad_latest(diff *d, const keyval *k)
{
	ts_value v[MAXKEY + 1];
	memcpy(v, k->v, sizeof k->v);
	v[d->nkey] = k->v[0];
	bad_latest(d, v, d->nkey + 1, "nprefix = nkey + 1", TS_EINVAL);
	bad_latest(d, v, -1, "nprefix = -1", TS_EINVAL);
	v[0] = wrong_type(d, 0);
	bad_latest(d, v, 1, "prefix value of the wrong type", TS_ETYPE);
}

static void check_bad_aggregates(diff *d, const keyval *k)
{
	int text_col = -1, num_col = -1;
	for (int c = 0; c < d->ncols; c++) {
		if (is_bytes(d->cols[c].type) && text_col < 0)
			text_col = c;
		if (is_numeric(d->cols[c].type) && c != d->tscol && num_col < 0)
			num_col = c;
	}
	assert_true(text_col >= 0 && num_col >= 0);
	ts_aggspec spec = {num_col, TS_AGG_SUM};
	ts_value wrong = wrong_type(d, 0), v[MAXKEY + 1];
	memcpy(v, k->v, sizeof k->v);
	v[d->nkey] = k->v[0];
	ts_aggregate good = {.from = NOW0 - DAY, .to = NOW0, .every = HOUR, .specs = &spec,
	                     .nspecs = 1}, a;
	a = good; a.every = 0;
	bad_aggregate(d, &a, "every = 0", TS_EINVAL, TS_EINVAL);
	a = good; a.every = -HOUR;
	bad_aggregate(d, &a, "every < 0", TS_EINVAL, TS_EINVAL);
	a = good; a.group = d->nkey;
	bad_aggregate(d, &a, "group = nkey", TS_EINVAL, TS_EINVAL);
	a = good; a.group = -1;
	bad_aggregate(d, &a, "group = -1", TS_EINVAL, TS_EINVAL);
	a = good; a.to = a.from;
	bad_aggregate(d, &a, "from = to", TS_EINVAL, TS_EINVAL);
	a = good; a.to = a.from - 1;
	bad_aggregate(d, &a, "from > to", TS_EINVAL, TS_EINVAL);
	a = good; a.prefix = v; a.nprefix = d->nkey + 1;
	bad_aggregate(d, &a, "nprefix = nkey + 1", TS_EINVAL, TS_EINVAL);
	a = good; a.prefix = &wrong; a.nprefix = 1; /* the header says EINVAL, ts_query ETYPE */
	bad_aggregate(d, &a, "prefix value of the wrong type", TS_ETYPE, TS_EINVAL);
	a = good; a.nspecs = -1;
	bad_aggregate(d, &a, "nspecs = -1", TS_EINVAL, TS_EINVAL);
	for (int fn = TS_AGG_COUNT; fn <= TS_AGG_LAST; fn++) {
		ts_aggspec s = {text_col, (ts_aggfn)fn};
		a = good; a.specs = &s;
		bad_aggregate(d, &a, "a function of a string or blob column", TS_ETYPE, TS_ETYPE);
	}
	ts_aggspec bad_fn = {num_col, (ts_aggfn)0}, bad_col = {d->ncols, TS_AGG_MIN},
	           neg_col = {-1, TS_AGG_COUNT};
	a = good; a.specs = &bad_fn;
	bad_aggregate(d, &a, "function 0", TS_EINVAL, TS_EINVAL);
	bad_fn.fn = (ts_aggfn)(TS_AGG_LAST + 1);
	bad_aggregate(d, &a, "function past the last", TS_EINVAL, TS_EINVAL);
	a = good; a.specs = &bad_col;
	bad_aggregate(d, &a, "column = ncolumns", TS_ENOENT, TS_ENOENT);
	a.specs = &neg_col;
	bad_aggregate(d, &a, "column -1", TS_ENOENT, TS_ENOENT);
}

/* An int64 sum that overflows: ts_cursor_next says TS_ERANGE, and again
 * on the next call.  Needs a key column holding INT64_MAX twice under one
 * prefix. */
static void check_sum_overflow(diff *d)
{
	int c = -1;
	for (int k = 0; k < d->nkey; k++)
		if (d->cols[d->key[k]].gen == G_KEY64)
			c = k;
	if (c < 0)
		return;
	keyval k;
	if (!pick_row(d, &k))
		return;
	k.v[c] = ts_int64(INT64_MAX);
	ts_aggspec spec = {d->key[c], TS_AGG_SUM};
	ts_aggregate a = {.prefix = k.v, .nprefix = c + 1, .from = INT64_MIN, .to = INT64_MAX,
	                  .every = INT64_MAX, .group = c, .specs = &spec, .nspecs = 1};
	rowset rows;
	int64_t n = 0;
	sqlbuf b;
	ts_type t = TS_INT64;
	sq_init(&b);
	tx_add(&b.t, "SELECT count(*) FROM t WHERE 1");
	sq_prefix(&b, d, k.v, c + 1);
	sq_ttl(&b, d);
	sql_rows(d, &b, &t, 1, &rows);
	n = rs_row(&rows, 0)[0].v.i;
	rs_free(&rows);
	describe_aggregate(d, &a);
	trace(d);
	ts_cursor *cur = NULL;
	const ts_value *row;
	int rc = ts_aggregate_open(d->t, &a, &cur), rc2;
	if (rc < 0)
		mismatch(d, "ts_aggregate_open returned %s: %s", ts_errname(rc), ts_errmsg(NULL));
	rc = ts_cursor_next(cur, &row, NULL);
	rc2 = ts_cursor_next(cur, &row, NULL);
	ts_cursor_close(cur);
	if (n >= 2 && (rc != TS_ERANGE || rc2 != TS_ERANGE))
		mismatch(d, "a sum of %" PRId64 " times INT64_MAX gave %s, then %s; want ERANGE twice",
		         n, ts_errname(rc), ts_errname(rc2));
	if (n == 1 && (rc != 0 || !row || row[c + 1].v.i != INT64_MAX))
		mismatch(d, "a sum of one INT64_MAX gave %s", ts_errname(rc));
	d->overflows += n >= 2;
}

static void check_errors(diff *d)
{
	keyval k;
	if (!pick_row(d, &k))
		fail_msg("no rows");
	check_bad_queries(d, &k);
	check_bad_latest(d, &k);
	check_bad_aggregates(d, &k);
	for (int i = 0; i < 8; i++)
		check_sum_overflow(d);
}

/* ---- cases ---- */

static int setup(void **state)
{
	diff *d = calloc(1, sizeof *d);
	assert_non_null(d);
	*state = d;
	return 0;
}

static int teardown(void **state)
{
	diff *d = *state;
	if (d->ro_t)
		close_reader(d);
	if (d->t)
		ts_table_close(d->t);
	if (d->db)
		ts_close(d->db);
	sqlite3_finalize(d->ins);
	sqlite3_finalize(d->pick);
	sqlite3_close_v2(d->sq);
	ts_test_rmdir(d->dir);
	free(d);
	return 0;
}

static void run_case(diff *d, const struct shape *sh, uint64_t salt)
{
	diff_start(d, sh, salt);
	for (d->phase = 0; d->phase < PHASES; d->phase++) {
		if (d->phase >= 2)
			advance_clock(d);
		apply_changes(d);
		load(d, BATCHES);
		query_phase(d);
		if (d->phase == 0) /* before any widening, and at the end */
			check_errors(d);
	}
	check_errors(d);
	print_message("%s: %" PRId64 " rows, %ld bad batches refused, %ld requests, %ld flushes, "
	              "%ld merges, %ld of %d phases read trees and tablets at once, %" PRId64
	              " aggregated rows answered from block statistics, %ld int64 sums overflowed\n",
	              sh->name, d->nrows, d->rejected, d->nreq, d->flushes, d->merges,
	              d->mixed_phases, PHASES, d->summarised, d->overflows);
	/* the test must have produced the states it claims to cover */
	assert_true(d->merges > 0);
	assert_true(d->summarised > 0);
	for (int k = 0; k < d->nkey; k++)
		if (d->cols[d->key[k]].gen == G_KEY64)
			assert_true(d->overflows > 0);
	assert_true(d->mixed_phases > 0);
	assert_true(d->rejected > 0);
}

static void query_diff_host_ts(void **state) { run_case(*state, &shape_host, 1); }
static void query_diff_int32_int64_ts(void **state) { run_case(*state, &shape_ints, 2); }
static void query_diff_string_double_ts(void **state) { run_case(*state, &shape_strdbl, 3); }
static void query_diff_blob_ts(void **state) { run_case(*state, &shape_blob, 4); }
static void query_diff_ts_only(void **state) { run_case(*state, &shape_tsonly, 5); }

int main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
	const struct CMUnitTest tests[] = {
		T(query_diff_host_ts),
		T(query_diff_int32_int64_ts),
		T(query_diff_string_double_ts),
		T(query_diff_blob_ts),
		T(query_diff_ts_only),
	};
#undef T
	return cmocka_run_group_tests_name("query_diff", tests, NULL, NULL);
}
