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

static uint64_t base_seed(void)
{
	const char *s = getenv("TSSTORE_DIFF_SEED");
	return s && *s ? strtoull(s, NULL, 0) : UINT64_C(0x5EED0F7E57D1FF5);
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

/* ---- what both SQLite differential tests run: diff_support.h ---- */

#define SQ_BINDS (8 * MAXKEY)
#include "diff_support.h"

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
