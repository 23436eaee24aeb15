/*
 * test_rollup.c -- rollups (lib/rollup.c, lib/rollupdef.c;
 * docs/rollups.md): ts_create_rollup's schema and refusals, the rollup
 * read-only to clients, the source not dropped under it, and the
 * maintenance -- driven here by ts__maint_pass with the scheduler's
 * thread held -- keeping every rollup row equal to ts_aggregate_open
 * over the source for its group and window: after inserts, late and
 * out-of-order rows across window and period boundaries, replacements,
 * flushes, reopens, a crash between the rows and the watermark, a
 * process killed mid-maintenance, rollups of rollups, and a random
 * differential loop of all of them.
 *
 * The source "src" is keyed (region, host, ts) with columns v int64,
 * d double, n int32 and a string s; windows of a minute, rollups of an
 * hour of those.
 */
#include <math.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>
#include <sqlite3.h>

#include "api.h"
#include "handle.h"
#include "log.h"
#include "maint.h"
#include "merge.h"
#include "rollacc.h"
#include "rollupdef.h"
#include "support.h"

#define NOW INT64_C(1795262400000000000) /* 2026-11-21T12:00:00Z */
#define SEC INT64_C(1000000000)
#define MIN (60 * SEC)
#define HOUR (3600 * SEC)
#define DAY (24 * HOUR)

/* Columns of src. */
enum { C_REGION, C_HOST, C_TS, C_V, C_D, C_N, C_S, NCOLS };

static uint64_t rng = 0x2545F4914F6CDD1Du;

static int64_t fixed_clock(void *arg)
{
	(void)arg;
	return NOW;
}

static void create_src(ts_db *db, const char *name, int64_t ttl)
{
	ts_column cols[NCOLS] = {
		{"region", TS_STRING, {0}}, {"host", TS_STRING, {0}}, {"ts", TS_TIMESTAMP, {0}},
		{"v", TS_INT64, {0}},       {"d", TS_DOUBLE, {0}},    {"n", TS_INT32, {0}},
		{"s", TS_STRING, {0}},
	};
	const char *key[] = {"region", "host", "ts"};
	if (ts_create_keyed(db, name, cols, NCOLS, key, 3, ttl) < 0)
		fail_msg("create %s: %s", name, ts_errmsg(NULL));
}

/* One row of src. */
typedef struct srow {
	char region[16], host[16]; /* (room for any int: -Wformat-truncation) */
	int64_t ts, v;
	double d;
	int32_t n;
} srow;

static void random_row(srow *r, int64_t from, int64_t span)
{
	snprintf(r->region, sizeof r->region, "r%d", (int)(ts_test_xorshift(&rng) % 2));
	snprintf(r->host, sizeof r->host, "h%d", (int)(ts_test_xorshift(&rng) % 4));
	r->ts = from + (int64_t)(ts_test_xorshift(&rng) % (uint64_t)span);
	r->v = (int64_t)(ts_test_xorshift(&rng) % 2001) - 1000;
	uint64_t x = ts_test_xorshift(&rng);
	r->d = x % 17 == 0 ? NAN : (double)(int64_t)(x % 100001) / 8.0 - 5000.0;
	r->n = (int32_t)(ts_test_xorshift(&rng) % 200) - 100;
}

/* Insert rows[0..n) into t under policy (TS_ON_DUPLICATE_TABLE: the
 * table's); returns the library's code. */
static int insert_policy(ts_table *t, const srow *rows, size_t n, int policy)
{
	ts_value *v = calloc(n * NCOLS, sizeof *v);
	assert_non_null(v);
	for (size_t i = 0; i < n; i++) {
		ts_value *r = v + i * NCOLS;
		r[C_REGION] = ts_string(rows[i].region);
		r[C_HOST] = ts_string(rows[i].host);
		r[C_TS] = ts_timestamp(rows[i].ts);
		r[C_V] = ts_int64(rows[i].v);
		r[C_D] = ts_double(rows[i].d);
		r[C_N] = ts_int32(rows[i].n);
		r[C_S] = ts_string("x");
	}
	size_t ignored;
	int rc = ts_insert_policy(t, 0, policy, v, n, &ignored, NULL);
	free(v);
	return rc;
}

static void insert_ok(ts_table *t, const srow *rows, size_t n)
{
	if (insert_policy(t, rows, n, TS_ON_DUPLICATE_IGNORE) < 0)
		fail_msg("insert: %s", ts_errmsg(NULL));
}

/* n random rows with ts in [from, from + span). */
static void insert_random(ts_table *t, int n, int64_t from, int64_t span)
{
	srow *r = calloc((size_t)n, sizeof *r);
	assert_non_null(r);
	for (int i = 0; i < n; i++)
		random_row(&r[i], from, span);
	insert_ok(t, r, (size_t)n);
	free(r);
}

static void pass(ts_db *db)
{
	if (ts__maint_pass(db) < 0)
		fail_msg("maintenance pass: %s", ts_errmsg(NULL));
}

/* Create rollup name with the given specs (asserting success). */
static void rollup(ts_db *db, const char *name, const char *source, int64_t every, int group,
                   const ts_aggspec *specs, int nspecs, int64_t ttl)
{
	ts_rollup_spec rs = {source, every, group, specs, nspecs, ttl};
	if (ts_create_rollup(db, name, &rs) < 0)
		fail_msg("create rollup %s: %s", name, ts_errmsg(NULL));
}

static int create_rollup_rc(ts_db *db, const char *name, const char *source, int64_t every,
                            int group, const ts_aggspec *specs, int nspecs, int64_t ttl)
{
	ts_rollup_spec rs = {source, every, group, specs, nspecs, ttl};
	return ts_create_rollup(db, name, &rs);
}

static int same_value(const ts_value *a, const ts_value *b)
{
	if (a->type != b->type)
		return 0;
	if (a->type == TS_DOUBLE) {
		if (isnan(a->v.d) || isnan(b->v.d))
			return isnan(a->v.d) && isnan(b->v.d);
		double m = fabs(a->v.d) > fabs(b->v.d) ? fabs(a->v.d) : fabs(b->v.d);
		return fabs(a->v.d - b->v.d) <= 1e-9 * (m > 1 ? m : 1);
	}
	if (a->type == TS_STRING || a->type == TS_BLOB)
		return a->v.s.len == b->v.s.len && memcmp(a->v.s.ptr, b->v.s.ptr, a->v.s.len) == 0;
	return a->v.i == b->v.i;
}

static void describe(const ts_value *v, int n, char *out, size_t size)
{
	size_t len = 0;
	out[0] = 0;
	for (int i = 0; i < n && len < size; i++) {
		if (v[i].type == TS_STRING)
			len += (size_t)snprintf(out + len, size - len, "%.*s ", (int)v[i].v.s.len,
			                        (const char *)v[i].v.s.ptr);
		else if (v[i].type == TS_DOUBLE)
			len += (size_t)snprintf(out + len, size - len, "%g ", v[i].v.d);
		else
			len += (size_t)snprintf(out + len, size - len, "%lld ", (long long)v[i].v.i);
	}
}

/* Whether a and b are the same value to the bit (NaN equal to NaN). */
static int same_bits(const ts_value *a, const ts_value *b)
{
	if (a->type == TS_DOUBLE && b->type == TS_DOUBLE)
		return (isnan(a->v.d) && isnan(b->v.d)) || memcmp(&a->v.d, &b->v.d, sizeof a->v.d) == 0;
	return same_value(a, b);
}

/* The rows of cursor got equal those of cursor want, row for row --
 * exact: to the bit (same_bits), else as same_value; fails naming what,
 * the row, the column and both rows.  Returns the number of rows. */
static long same_rows(ts_cursor *got, ts_cursor *want, const char *what, int exact)
{
	for (long rows = 0;; rows++) {
		const ts_value *x, *y;
		int nx, ny;
		char wx[512] = "(end)", wy[512] = "(end)";
		assert_int_equal(ts_cursor_next(got, &x, &nx), 0);
		assert_int_equal(ts_cursor_next(want, &y, &ny), 0);
		if (x)
			describe(x, nx, wx, sizeof wx);
		if (y)
			describe(y, ny, wy, sizeof wy);
		if (!x && !y)
			return rows;
		if (!x || !y || nx != ny)
			fail_msg("%s row %ld: got %s, want %s", what, rows, wx, wy);
		for (int i = 0; i < nx; i++)
			if (!(exact ? same_bits(&x[i], &y[i]) : same_value(&x[i], &y[i])))
				fail_msg("%s row %ld column %d: got %s, want %s", what, rows, i, wx, wy);
	}
}

/* The rollup's every row equals the row of ts_aggregate_open over
 * source (every, group, specs: the rollup's value columns in order),
 * and the other way round.  Returns the number of rows. */
static long expect_exact(ts_db *db, const char *name, const char *source, int64_t every,
                         int group, const ts_aggspec *specs, int nspecs)
{
	ts_table *r, *s;
	ts_cursor *a, *q;
	assert_int_equal(ts_table_open(db, name, &r), 0);
	assert_int_equal(ts_table_open(db, source, &s), 0);
	ts_aggregate req = {.from = 0, .to = INT64_MAX, .every = every, .group = group,
	                    .specs = specs, .nspecs = nspecs};
	ts_query all = {0};
	if (ts_aggregate_open_flags(s, &req, TS_AGG_NO_ROLLUP, &a) < 0 || ts_query_open(r, &all, &q) < 0)
		fail_msg("open: %s", ts_errmsg(NULL));
	long rows = same_rows(q, a, name, 0);
	ts_cursor_close(a);
	ts_cursor_close(q);
	ts_table_close(r);
	ts_table_close(s);
	return rows;
}

static int64_t stat_of(ts_db *db, const char *table, const char *name)
{
	ts_table *t;
	assert_int_equal(ts_table_open(db, table, &t), 0);
	int64_t v = ts_test_stat(t, name);
	ts_table_close(t);
	return v;
}

static uint64_t version_of(ts_db *db, const char *table)
{
	ts_table *t;
	uint64_t v;
	assert_int_equal(ts_table_open(db, table, &t), 0);
	assert_int_equal(ts_table_version(t, &v), 0);
	ts_table_close(t);
	return v;
}

/* A database with "src" (besides the env's "m"), the scheduler held. */
static ts_test_env *env(void **state)
{
	ts_test_env *e = calloc(1, sizeof *e);
	assert_non_null(e);
	e->dir = ts_test_tmpdir();
	e->now = NOW;
	e->hold_maintenance = 1;
	ts_test_env_open(e);
	create_src(e->db, "src", 0);
	/* a paced run that cannot roll up through the durable version syncs
	 * the source at once (TS_SYNC_NONE: nothing else would); the test of
	 * the wait sets its own */
	ts__rollup_durable_wait = 0;
	*state = e;
	return e;
}

static ts_table *open_table(ts_db *db, const char *name)
{
	ts_table *t;
	if (ts_table_open(db, name, &t) < 0)
		fail_msg("open %s: %s", name, ts_errmsg(NULL));
	return t;
}

/* The 1-minute rollup of most tests, and what it equals over src. */
static const ts_aggspec SPECS_1M[] = {
	{C_V, TS_AGG_COUNT}, {C_V, TS_AGG_SUM}, {C_V, TS_AGG_MEAN}, {C_D, TS_AGG_MAX},
	{C_D, TS_AGG_MEAN},  {C_N, TS_AGG_MIN}, {C_V, TS_AGG_FIRST}, {C_V, TS_AGG_LAST},
};
/* v_count v_sum d_max d_sum d_count n_min v_first v_last */
static const ts_aggspec EQ_1M[] = {
	{C_V, TS_AGG_COUNT}, {C_V, TS_AGG_SUM}, {C_D, TS_AGG_MAX}, {C_D, TS_AGG_SUM},
	{C_D, TS_AGG_COUNT}, {C_N, TS_AGG_MIN}, {C_V, TS_AGG_FIRST}, {C_V, TS_AGG_LAST},
};
#define N_1M 8

static void rollup_1m(ts_db *db)
{
	rollup(db, "r1m", "src", MIN, 2, SPECS_1M, N_1M, 0);
}

static long exact_1m(ts_db *db)
{
	return expect_exact(db, "r1m", "src", MIN, 2, EQ_1M, N_1M);
}

/* ---- creating ---- */

static void create_makes_the_schema(void **state)
{
	ts_test_env *e = env(state);
	rollup_1m(e->db);
	ts_table *r = open_table(e->db, "r1m");
	ts_schema *s;
	assert_int_equal(ts_table_schema(r, &s), 0);
	static const char *names[] = {"region", "host",    "ts",      "v_count", "v_sum",  "d_max",
	                              "d_sum",  "d_count", "n_min",   "v_first", "v_last"};
	static const ts_type types[] = {TS_STRING, TS_STRING, TS_TIMESTAMP, TS_INT64,
	                                TS_INT64,  TS_DOUBLE, TS_DOUBLE,    TS_INT64,
	                                TS_INT32,  TS_INT64,  TS_INT64};
	assert_int_equal(s->ncolumns, 11);
	for (int i = 0; i < 11; i++) {
		assert_string_equal(s->columns[i].name, names[i]);
		assert_int_equal(s->columns[i].type, types[i]);
	}
	assert_int_equal(s->nkey, 3);
	assert_int_equal(s->key[0], 0);
	assert_int_equal(s->key[1], 1);
	assert_int_equal(s->key[2], 2);
	assert_int_equal(s->ttl, 0);
	assert_int_equal(s->on_duplicate, TS_ON_DUPLICATE_REPLACE);
	ts_schema_free(s);

	ts_rollup_state *st;
	assert_int_equal(ts_rollup_info(r, &st), 0);
	assert_string_equal(st->source, "src");
	assert_int_equal(st->from_rollup, 0);
	assert_int_equal(st->every, MIN);
	assert_int_equal(st->group, 2);
	assert_int_equal(st->nfns, N_1M);
	for (int i = 0; i < N_1M; i++) {
		assert_string_equal(st->fns[i].column, i == 3 || i == 4 ? "d" : i == 5 ? "n" : "v");
		assert_int_equal(st->fns[i].fn, SPECS_1M[i].fn);
	}
	assert_int_equal(st->watermark, 0);
	assert_int_equal(st->lag_ns, 0);
	assert_int_equal(st->last_error, 0);
	ts_rollup_state_free(st);
	assert_int_equal(ts_test_stat(r, "rollup_every_ns"), MIN);
	assert_int_equal(ts_test_stat(r, "rollup_group"), 2);
	assert_int_equal(ts_test_stat(r, "rollup_watermark"), 0);
	/* the source is no rollup; its stats have no rollup_* */
	ts_table *src = open_table(e->db, "src");
	assert_int_equal(ts_rollup_info(src, &st), TS_ENOENT);
	assert_null(st);
	ts_stat stats[TS_STATS_MAX];
	int n;
	assert_int_equal(ts_table_stats(src, stats, TS_STATS_MAX, &n), 0);
	for (int i = 0; i < n; i++)
		assert_true(strncmp(stats[i].name, "rollup_", 7) != 0);
	assert_int_equal(ts_table_stats(r, stats, TS_STATS_MAX, &n), 0);
	assert_true(n < TS_STATS_MAX);
	ts_table_close(src);
	ts_table_close(r);

	char **list;
	assert_int_equal(ts_rollups(e->db, "src", &list, &n), 0);
	assert_int_equal(n, 1);
	assert_string_equal(list[0], "r1m");
	assert_null(list[1]);
	ts_free_names(list);
	assert_int_equal(ts_rollups(e->db, "m", &list, &n), 0);
	assert_int_equal(n, 0);
	assert_null(list[0]);
	ts_free_names(list);
	assert_int_equal(ts_check(e->db, NULL, NULL), 0);
}

static void create_refuses(void **state)
{
	ts_test_env *e = env(state);
	ts_db *db = e->db;
	ts_aggspec ok[] = {{C_V, TS_AGG_SUM}};
	ts_aggspec bad_fn[] = {{C_V, (ts_aggfn)0}};
	ts_aggspec bad_fn2[] = {{C_V, (ts_aggfn)99}};
	ts_aggspec str[] = {{C_S, TS_AGG_MAX}};
	ts_aggspec nocol[] = {{NCOLS, TS_AGG_MAX}};
	ts_aggspec neg[] = {{-1, TS_AGG_MAX}};
	assert_int_equal(create_rollup_rc(db, "r", "src", 0, 1, ok, 1, 0), TS_EINVAL);
	assert_int_equal(create_rollup_rc(db, "r", "src", -MIN, 1, ok, 1, 0), TS_EINVAL);
	assert_int_equal(create_rollup_rc(db, "r", "src", MIN, 3, ok, 1, 0), TS_EINVAL);
	assert_non_null(strstr(ts_errmsg(NULL), "group 3"));
	assert_int_equal(create_rollup_rc(db, "r", "src", MIN, -1, ok, 1, 0), TS_EINVAL);
	assert_int_equal(create_rollup_rc(db, "r", "src", MIN, 1, ok, 0, 0), TS_EINVAL);
	assert_int_equal(create_rollup_rc(db, "r", "src", MIN, 1, bad_fn, 1, 0), TS_EINVAL);
	assert_int_equal(create_rollup_rc(db, "r", "src", MIN, 1, bad_fn2, 1, 0), TS_EINVAL);
	assert_int_equal(create_rollup_rc(db, "r", "src", MIN, 1, str, 1, 0), TS_ETYPE);
	assert_non_null(strstr(ts_errmsg(NULL), "\"s\" is a string"));
	assert_int_equal(create_rollup_rc(db, "r", "src", MIN, 1, nocol, 1, 0), TS_ENOENT);
	assert_int_equal(create_rollup_rc(db, "r", "src", MIN, 1, neg, 1, 0), TS_ENOENT);
	assert_int_equal(create_rollup_rc(db, "r", "nosuch", MIN, 1, ok, 1, 0), TS_ENOENT);
	assert_int_equal(create_rollup_rc(db, "r", "bad name", MIN, 1, ok, 1, 0), TS_EINVAL);
	assert_int_equal(create_rollup_rc(db, "1r", "src", MIN, 1, ok, 1, 0), TS_EINVAL);
	assert_int_equal(create_rollup_rc(db, "LOCK", "src", MIN, 1, ok, 1, 0), TS_EINVAL);
	assert_int_equal(create_rollup_rc(db, "m", "src", MIN, 1, ok, 1, 0), TS_EEXIST);
	assert_int_equal(create_rollup_rc(db, "r", "src", MIN, 1, ok, 1, -1), TS_ERANGE);
	assert_int_equal(create_rollup_rc(db, "r", "src", MIN, 1, NULL, 1, 0), TS_EINVAL);
	ts_rollup_spec nosrc = {NULL, MIN, 1, ok, 1, 0};
	assert_int_equal(ts_create_rollup(db, "r", &nosrc), TS_EINVAL);
	assert_int_equal(ts_create_rollup(db, "r", NULL), TS_EINVAL);
	assert_int_equal(ts_create_rollup(NULL, "r", &nosrc), TS_EINVAL);
	/* a value column's name that a key column has */
	ts_column cols[] = {{"v_sum", TS_STRING, {0}}, {"ts", TS_TIMESTAMP, {0}}, {"v", TS_INT64, {0}}};
	const char *key[] = {"v_sum", "ts"};
	assert_int_equal(ts_create_keyed(db, "clash", cols, 3, key, 2, 0), 0);
	ts_aggspec v[] = {{2, TS_AGG_SUM}};
	assert_int_equal(create_rollup_rc(db, "r", "clash", MIN, 1, v, 1, 0), TS_ESCHEMA);
	/* a name too long with its function */
	ts_column lcols[] = {{"ts", TS_TIMESTAMP, {0}},
	                     {"a_column_name_of_sixty_characters_xxxxxxxxxxxxxxxxxxxxxxxxxxxx",
	                      TS_INT64, {0}}};
	const char *lkey[] = {"ts"};
	assert_int_equal(ts_create_keyed(db, "long", lcols, 2, lkey, 1, 0), 0);
	ts_aggspec lv[] = {{1, TS_AGG_COUNT}};
	assert_int_equal(create_rollup_rc(db, "r", "long", MIN, 0, lv, 1, 0), TS_ESCHEMA);
	/* nothing was left behind */
	ts_table *t;
	assert_int_equal(ts_table_open(db, "r", &t), TS_ENOENT);
	/* rollups of a rollup that do not combine */
	rollup_1m(db);
	ts_aggspec rsum[] = {{4, TS_AGG_SUM}};     /* r1m's v_sum */
	ts_aggspec rmax_of_sum[] = {{4, TS_AGG_MAX}};
	ts_aggspec rkey[] = {{2, TS_AGG_MAX}};     /* ts: no function of r1m's */
	ts_aggspec rfirst[] = {{9, TS_AGG_FIRST}}; /* v_first */
	ts_aggspec rmean[] = {{4, TS_AGG_MEAN}};
	ts_aggspec rmean_max[] = {{5, TS_AGG_MEAN}}; /* d_max */
	assert_int_equal(create_rollup_rc(db, "r", "r1m", 90 * SEC, 1, rsum, 1, 0), TS_EINVAL);
	assert_non_null(strstr(ts_errmsg(NULL), "multiple"));
	assert_int_equal(create_rollup_rc(db, "r", "r1m", HOUR, 1, rmax_of_sum, 1, 0), TS_EINVAL);
	assert_int_equal(create_rollup_rc(db, "r", "r1m", HOUR, 1, rkey, 1, 0), TS_EINVAL);
	assert_int_equal(create_rollup_rc(db, "r", "r1m", HOUR, 1, rfirst, 1, 0), TS_EINVAL);
	assert_int_equal(create_rollup_rc(db, "r", "r1m", HOUR, 1, rmean_max, 1, 0), TS_EINVAL);
	assert_int_equal(create_rollup_rc(db, "r", "r1m", HOUR, 2, rfirst, 1, 0), 0);
	assert_int_equal(create_rollup_rc(db, "r2", "r1m", HOUR, 1, rmean, 1, 0), 0);
	ts_aggspec g1[] = {{C_V, TS_AGG_SUM}};
	rollup(db, "g1", "src", MIN, 1, g1, 1, 0);
	ts_aggspec g1sum[] = {{2, TS_AGG_SUM}}; /* g1's v_sum */
	assert_int_equal(create_rollup_rc(db, "r3", "g1", HOUR, 2, g1sum, 1, 0), TS_EINVAL);
	assert_non_null(strstr(ts_errmsg(NULL), "group 2"));
	assert_int_equal(ts_check(db, NULL, NULL), 0);
}

/* Clients do not write a rollup; its source is not dropped under it. */
static void rollups_are_read_only(void **state)
{
	ts_test_env *e = env(state);
	rollup_1m(e->db);
	ts_table *r = open_table(e->db, "r1m");
	ts_value row[11];
	for (int i = 0; i < 11; i++)
		row[i] = ts_int64(1);
	row[0] = ts_string("r0");
	row[1] = ts_string("h0");
	row[2] = ts_timestamp(NOW);
	row[5] = row[6] = ts_double(1);
	row[8] = ts_int32(1);
	assert_int_equal(ts_insert(r, row, 1), TS_EREADONLY);
	assert_non_null(strstr(ts_errmsg(NULL), "\"r1m\" is a rollup of \"src\""));
	assert_int_equal(ts_insert_policy(r, 0, TS_ON_DUPLICATE_REPLACE, row, 1, NULL, NULL),
	                 TS_EREADONLY);
	ts_query all = {0};
	assert_int_equal(ts_delete(r, &all, NULL, NULL), TS_EREADONLY);
	ts_column c = {"extra", TS_INT64, {0}};
	assert_int_equal(ts_alter_add(r, &c), TS_EREADONLY);
	assert_int_equal(ts_alter_widen(r, "n_min"), TS_EREADONLY);
	assert_int_equal(ts_alter_on_duplicate(r, TS_ON_DUPLICATE_REJECT), TS_EREADONLY);
	assert_int_equal(ts_alter_ttl(r, 30 * DAY), 0);
	assert_int_equal(ts_test_count_rows(r), 0);
	ts_table_close(r);

	assert_int_equal(ts_drop(e->db, "src"), TS_EBUSY);
	assert_non_null(strstr(ts_errmsg(NULL), "rollup (\"r1m\")"));
	ts_aggspec rmean[] = {{4, TS_AGG_MEAN}};
	rollup(e->db, "r1h", "r1m", HOUR, 1, rmean, 1, 0);
	assert_int_equal(ts_drop(e->db, "r1m"), TS_EBUSY);
	assert_non_null(strstr(ts_errmsg(NULL), "\"r1h\""));
	assert_int_equal(ts_drop(e->db, "r1h"), 0);
	assert_int_equal(ts_drop(e->db, "r1m"), 0);
	assert_int_equal(ts_drop(e->db, "src"), 0);
	assert_int_equal(ts_check(e->db, NULL, NULL), 0);
}

/* ---- maintenance ---- */

static void maintained_after_inserts(void **state)
{
	ts_test_env *e = env(state);
	rollup_1m(e->db);
	ts_table *src = open_table(e->db, "src");
	srow rows[] = {
		{"r0", "h0", NOW - 10 * MIN + 5 * SEC, 7, 1.5, 3},
		{"r0", "h0", NOW - 10 * MIN + 59 * SEC, -2, NAN, 9},
		{"r0", "h0", NOW - 9 * MIN, 4, 2.5, -1},
		{"r0", "h1", NOW - 10 * MIN + 1, 100, -3, 0},
		{"r1", "h0", NOW - 1, 5, 0.25, 5},
	};
	insert_ok(src, rows, 5);
	pass(e->db);
	assert_int_equal(exact_1m(e->db), 4);
	/* the rows, exactly */
	ts_table *r = open_table(e->db, "r1m");
	ts_cursor *c;
	ts_query all = {0};
	const ts_value *v;
	int n;
	assert_int_equal(ts_query_open(r, &all, &c), 0);
	assert_int_equal(ts_cursor_next(c, &v, &n), 0);
	assert_int_equal(n, 11);
	assert_int_equal(v[2].v.i, NOW - 10 * MIN);
	assert_int_equal(v[3].v.i, 2);     /* v_count */
	assert_int_equal(v[4].v.i, 5);     /* v_sum */
	assert_true(v[5].v.d == 1.5);      /* d_max: NaN ignored */
	assert_true(v[6].v.d == 1.5);      /* d_sum */
	assert_int_equal(v[7].v.i, 1);     /* d_count: NaN is no value */
	assert_int_equal(v[8].type, TS_INT32);
	assert_int_equal(v[8].v.i, 3);     /* n_min */
	assert_int_equal(v[9].v.i, 7);     /* v_first */
	assert_int_equal(v[10].v.i, -2);   /* v_last */
	ts_cursor_close(c);
	/* the watermark: the source's version, durable */
	uint64_t ver = version_of(e->db, "src");
	assert_int_equal(ts_test_stat(r, "rollup_watermark"), (int64_t)ver);
	assert_int_equal(ts_test_stat(r, "rollup_source_version"), (int64_t)ver);
	assert_int_equal(ts_test_stat(r, "rollup_lag_versions"), 0);
	assert_int_equal(ts_test_stat(r, "rollup_lag_ns"), 0);
	assert_int_equal(ts_test_stat(r, "rollup_windows_recomputed"), 4);
	assert_int_equal(ts_test_stat(r, "rollup_runs"), 1);
	/* an idle pass recomputes nothing */
	pass(e->db);
	assert_int_equal(ts_test_stat(r, "rollup_windows_recomputed"), 4);
	assert_int_equal(ts_test_stat(r, "rollup_runs"), 1);
	/* a new row recomputes its window only */
	srow late = {"r0", "h1", NOW - 10 * MIN + 30 * SEC, 1, 1, 1};
	insert_ok(src, &late, 1);
	pass(e->db);
	assert_int_equal(ts_test_stat(r, "rollup_windows_recomputed"), 5);
	assert_int_equal(exact_1m(e->db), 4);
	ts_table_close(r);
	ts_table_close(src);
	assert_int_equal(ts_check(e->db, NULL, NULL), 0);
}

/* Late and out-of-order rows, across window and 4-hour period
 * boundaries, flushed or still filling; replacements in the source. */
static void late_rows_and_replacements(void **state)
{
	ts_test_env *e = env(state);
	rollup_1m(e->db);
	ts_aggspec g0[] = {{C_V, TS_AGG_SUM}, {C_D, TS_AGG_MIN}, {C_N, TS_AGG_MAX}};
	rollup(e->db, "r0", "src", 7 * MIN, 0, g0, 3, 0);
	ts_table *src = open_table(e->db, "src");
	insert_random(src, 300, NOW - 2 * HOUR, 2 * HOUR);
	pass(e->db);
	exact_1m(e->db);
	expect_exact(e->db, "r0", "src", 7 * MIN, 0, g0, 3);
	/* late rows into the previous 4-hour period and out of order, some
	 * flushed to tablets first */
	insert_random(src, 200, NOW - 5 * HOUR, 4 * HOUR);
	assert_int_equal(ts_flush(src, INT64_MAX), 0);
	insert_random(src, 50, NOW - 6 * HOUR, 6 * HOUR);
	pass(e->db);
	exact_1m(e->db);
	expect_exact(e->db, "r0", "src", 7 * MIN, 0, g0, 3);
	/* replacements of flushed and filling rows */
	ts_cursor *c;
	ts_query all = {.limit = 40};
	assert_int_equal(ts_query_open(src, &all, &c), 0);
	srow rep[40];
	int k = 0;
	const ts_value *v;
	int n;
	while (ts_cursor_next(c, &v, &n) == 0 && v && k < 40) {
		snprintf(rep[k].region, sizeof rep[k].region, "%.*s", (int)v[0].v.s.len,
		         (const char *)v[0].v.s.ptr);
		snprintf(rep[k].host, sizeof rep[k].host, "%.*s", (int)v[1].v.s.len,
		         (const char *)v[1].v.s.ptr);
		rep[k].ts = v[2].v.i;
		rep[k].v = 1000000 + k;
		rep[k].d = -1e6;
		rep[k].n = 1000;
		k++;
	}
	ts_cursor_close(c);
	assert_int_equal(k, 40);
	assert_int_equal(insert_policy(src, rep, 40, TS_ON_DUPLICATE_REPLACE), 0);
	pass(e->db);
	exact_1m(e->db);
	expect_exact(e->db, "r0", "src", 7 * MIN, 0, g0, 3);
	ts_table_close(src);
	assert_int_equal(ts_check(e->db, NULL, NULL), 0);
}

/* The ROLLUP file's bytes. */
static void *read_rollup_file(const char *dir, const char *table, size_t *n)
{
	char path[512];
	snprintf(path, sizeof path, "%s/%s/ROLLUP", dir, table);
	FILE *f = fopen(path, "rb");
	assert_non_null(f);
	void *p = malloc(1 << 16);
	assert_non_null(p);
	*n = fread(p, 1, 1 << 16, f);
	fclose(f);
	return p;
}

static void write_rollup_file(const char *dir, const char *table, const void *p, size_t n)
{
	char path[512];
	snprintf(path, sizeof path, "%s/%s/ROLLUP", dir, table);
	FILE *f = fopen(path, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(p, 1, n, f), n);
	fclose(f);
}

/* The watermark survives a reopen; rows written but the watermark not
 * (a crash between the two) are recomputed, idempotently. */
static void reopen_and_crash_before_watermark(void **state)
{
	ts_test_env *e = env(state);
	rollup_1m(e->db);
	ts_table *src = open_table(e->db, "src");
	insert_random(src, 200, NOW - HOUR, HOUR);
	ts_table_close(src);
	pass(e->db);
	int64_t w = stat_of(e->db, "r1m", "rollup_watermark");
	assert_true(w > 0);
	ts_test_env_reopen(e);
	assert_int_equal(stat_of(e->db, "r1m", "rollup_watermark"), w);
	assert_int_equal(stat_of(e->db, "r1m", "rollup_windows_recomputed"), 0);
	pass(e->db); /* nothing new */
	assert_int_equal(stat_of(e->db, "r1m", "rollup_windows_recomputed"), 0);
	long windows = exact_1m(e->db);

	/* a read-only handle beside the writer sees the watermark it moves */
	ts_options ro;
	ts_options_init(&ro);
	ro.flags = TS_OPEN_READONLY;
	ro.clock = fixed_clock;
	ts_db *rdb;
	assert_int_equal(ts_open(e->dir, &ro, &rdb), 0);
	ts_table *rr = open_table(rdb, "r1m");
	assert_int_equal(ts_test_stat(rr, "rollup_watermark"), w);
	ts_rollup_state *st;

	/* the crash: rows of the next run in the rollup, its watermark not */
	size_t n;
	void *old = read_rollup_file(e->dir, "r1m", &n);
	src = open_table(e->db, "src");
	insert_random(src, 100, NOW - 2 * HOUR, 2 * HOUR);
	ts_table_close(src);
	pass(e->db);
	assert_true(stat_of(e->db, "r1m", "rollup_watermark") > w);
	assert_int_equal(ts_test_stat(rr, "rollup_watermark"),
	                 stat_of(e->db, "r1m", "rollup_watermark"));
	assert_int_equal(ts_rollup_info(rr, &st), 0);
	assert_int_equal(st->watermark, (uint64_t)stat_of(e->db, "r1m", "rollup_watermark"));
	ts_rollup_state_free(st);
	ts_table_close(rr);
	assert_int_equal(ts_close(rdb), 0);
	long after = exact_1m(e->db);
	ts_test_env_close(e);
	write_rollup_file(e->dir, "r1m", old, n);
	free(old);
	ts_test_env_open(e);
	assert_int_equal(stat_of(e->db, "r1m", "rollup_watermark"), w);
	pass(e->db);
	assert_true(stat_of(e->db, "r1m", "rollup_windows_recomputed") > 0);
	assert_int_equal(exact_1m(e->db), after);
	assert_true(after >= windows);
	/* a brand-new rollup over the history catches up from version 0 */
	ts_aggspec s[] = {{C_D, TS_AGG_MEAN}};
	rollup(e->db, "late", "src", HOUR, 1, s, 1, 0);
	pass(e->db);
	ts_aggspec eq[] = {{C_D, TS_AGG_SUM}, {C_D, TS_AGG_COUNT}};
	assert_true(expect_exact(e->db, "late", "src", HOUR, 1, eq, 2) > 0);
	assert_int_equal(ts_check(e->db, NULL, NULL), 0);
}

/* A source whose version went below the watermark (a restore from a
 * backup taken before the rollup's copy) makes the rollup start over. */
static void source_behind_the_watermark_resets(void **state)
{
	ts_test_env *e = env(state);
	rollup_1m(e->db);
	ts_table *src = open_table(e->db, "src");
	insert_random(src, 100, NOW - HOUR, HOUR);
	ts_table_close(src);
	pass(e->db);
	long rows = exact_1m(e->db);
	ts_test_env_close(e);
	char dir[512];
	snprintf(dir, sizeof dir, "%s/r1m", e->dir);
	ts__rollup_def d;
	assert_int_equal(ts__rollup_read(dir, &d), 0);
	d.watermark = UINT64_C(1) << 60;
	assert_int_equal(ts__rollup_write(dir, &d), 0);
	ts__rollup_def_free(&d);
	ts_test_env_open(e);
	pass(e->db); /* loads r1m */
	pass(e->db);
	assert_int_equal(stat_of(e->db, "r1m", "rollup_resets"), 1);
	assert_int_equal(stat_of(e->db, "r1m", "rollup_windows_recomputed"), rows);
	assert_int_equal(stat_of(e->db, "r1m", "rollup_watermark"), (int64_t)version_of(e->db, "src"));
	assert_int_equal(exact_1m(e->db), rows);
}

static char logged[2048];

static void keep_log(void *arg, const char *msg)
{
	(void)arg;
	snprintf(logged, sizeof logged, "%s", msg);
}

static void count_problems(void *arg, const char *table, const char *file, const char *what)
{
	(void)table;
	if (strstr(file, "ROLLUP") && strstr(what, "does not exist"))
		++*(int *)arg;
}

/* A source gone (removed by hand: the library refuses to drop it): the
 * run fails, is reported once and backs off, and ts_check says why. */
static void failing_run_backs_off(void **state)
{
	ts_test_env *e = env(state);
	rollup_1m(e->db);
	ts_test_env_close(e);
	char from[512], to[512];
	snprintf(from, sizeof from, "%s/src", e->dir);
	snprintf(to, sizeof to, "%s/.gone", e->dir);
	assert_int_equal(rename(from, to), 0);
	e->log = keep_log;
	ts_test_env_open(e);
	logged[0] = 0;
	/* the first pass loads r1m and runs it */
	assert_int_equal(ts__maint_pass(e->db), TS_ENOENT);
	assert_int_equal(stat_of(e->db, "r1m", "rollup_failures"), 1);
	assert_int_equal(stat_of(e->db, "r1m", "rollup_last_error"), TS_ENOENT);
	assert_non_null(strstr(logged, "\"r1m\""));
	assert_non_null(strstr(logged, "rollup"));
	assert_non_null(strstr(logged, "src"));
	pass(e->db); /* in backoff: not tried again */
	assert_int_equal(stat_of(e->db, "r1m", "rollup_failures"), 1);
	ts_table *r = open_table(e->db, "r1m");
	ts_rollup_state *st;
	assert_int_equal(ts_rollup_info(r, &st), 0);
	assert_int_equal(st->last_error, TS_ENOENT);
	assert_int_equal(st->failures, 1);
	ts_rollup_state_free(st);
	ts_table_close(r);
	int problems = 0;
	ts_check_opts co = {.problem = count_problems, .arg = &problems};
	assert_int_equal(ts_check(e->db, "r1m", &co), TS_ECORRUPT);
	assert_int_equal(problems, 1);
	e->log = NULL;
}

/* A backup holds the rollup, its definition and a watermark it can
 * stand by: the copy opens, checks, and is exact after a pass. */
static void backup_copies_rollups(void **state)
{
	ts_test_env *e = env(state);
	rollup_1m(e->db);
	ts_table *src = open_table(e->db, "src");
	insert_random(src, 100, NOW - HOUR, HOUR);
	pass(e->db);
	insert_random(src, 100, NOW - 2 * HOUR, 2 * HOUR);
	ts_table_close(src);
	char dest[512];
	snprintf(dest, sizeof dest, "%s.copy", e->dir);
	assert_int_equal(ts_backup(e->db, dest), 0);
	ts_options o;
	ts_options_init(&o);
	o.sync = TS_SYNC_NONE;
	o.clock = fixed_clock;
	ts_db *copy;
	assert_int_equal(ts_open(dest, &o, &copy), 0);
	ts__maint_hold(copy, 1);
	assert_int_equal(ts_check(copy, NULL, NULL), 0);
	pass(copy);
	pass(copy);
	assert_true(exact_1m(copy) > 0);
	assert_int_equal(ts_close(copy), 0);
	char *d = strdup(dest);
	ts_test_rmdir(d);
}

/* A rollup of a rollup (1m -> 1h) equals the aggregate over the raw
 * source at 1 h. */
static void rollup_of_a_rollup(void **state)
{
	ts_test_env *e = env(state);
	rollup_1m(e->db);
	/* r1m's columns: 3 v_count, 4 v_sum, 5 d_max, 6 d_sum, 7 d_count,
	 * 8 n_min, 9 v_first, 10 v_last */
	ts_aggspec h[] = {{3, TS_AGG_COUNT}, {4, TS_AGG_SUM}, {5, TS_AGG_MAX},
	                  {6, TS_AGG_MEAN},  {8, TS_AGG_MIN}, {9, TS_AGG_FIRST}, {10, TS_AGG_LAST}};
	rollup(e->db, "r1h", "r1m", HOUR, 2, h, 7, 0);
	ts_aggspec d[] = {{5, TS_AGG_MAX}, {3, TS_AGG_COUNT}, {4, TS_AGG_MEAN}};
	rollup(e->db, "r1d", "r1h", DAY, 0, d, 3, 0);
	ts_table *r = open_table(e->db, "r1h");
	ts_schema *s;
	assert_int_equal(ts_table_schema(r, &s), 0);
	static const char *names[] = {"region", "host",    "ts",    "v_count", "v_sum", "d_max",
	                              "d_sum",  "d_count", "n_min", "v_first", "v_last"};
	assert_int_equal(s->ncolumns, 11);
	for (int i = 0; i < 11; i++)
		assert_string_equal(s->columns[i].name, names[i]);
	ts_schema_free(s);
	ts_rollup_state *st;
	assert_int_equal(ts_rollup_info(r, &st), 0);
	assert_int_equal(st->from_rollup, 1);
	assert_string_equal(st->fns[3].column, "d");
	assert_int_equal(st->fns[3].fn, TS_AGG_MEAN);
	ts_rollup_state_free(st);
	ts_table_close(r);
	ts_table *src = open_table(e->db, "src");
	for (int round = 0; round < 3; round++) {
		insert_random(src, 300, NOW - 30 * HOUR, 30 * HOUR);
		for (int i = 0; i < 3; i++) /* the chain catches up a link per pass at worst */
			pass(e->db);
		exact_1m(e->db);
		expect_exact(e->db, "r1h", "src", HOUR, 2, EQ_1M, N_1M);
		ts_aggspec deq[] = {{C_D, TS_AGG_MAX}, {C_V, TS_AGG_COUNT}, {C_V, TS_AGG_SUM},
		                    {C_V, TS_AGG_COUNT}};
		/* r1d: d_max, v_count, v_sum (v_count once) */
		expect_exact(e->db, "r1d", "src", DAY, 0, deq, 3);
	}
	ts_table_close(src);
	assert_int_equal(ts_check(e->db, NULL, NULL), 0);
}

/* The scheduler's own thread maintains rollups (every second, here not
 * held), the rollup not opened by anyone since the database opened. */
static void maintained_by_the_thread(void **state)
{
	ts_test_env *e = env(state);
	rollup_1m(e->db);
	ts_test_env_close(e);
	e->hold_maintenance = 0;
	ts_test_env_open(e);
	ts_table *src = open_table(e->db, "src");
	insert_random(src, 200, NOW - HOUR, HOUR);
	uint64_t v;
	assert_int_equal(ts_table_version(src, &v), 0);
	ts_table_close(src);
	/* passes woken until two ran after the inserts (the first loads the
	 * rollups), before anything here opens r1m */
	uint64_t p0 = __atomic_load_n(&e->db->maint.passes, __ATOMIC_RELAXED);
	for (int i = 0; i < 1000 && __atomic_load_n(&e->db->maint.passes, __ATOMIC_RELAXED) < p0 + 3;
	     i++) {
		ts__maint_wake(e->db);
		usleep(10000);
	}
	int64_t w = stat_of(e->db, "r1m", "rollup_watermark");
	assert_int_equal(w, (int64_t)v);
	ts__maint_hold(e->db, 1);
	assert_true(exact_1m(e->db) > 0);
	ts__maint_hold(e->db, 0);
}

/* The durable version of a table: the newest commit a sync covered
 * (or the recovery found), never one only committed. */
static uint64_t durable_of(ts_table *t)
{
	pthread_mutex_lock(&t->mu);
	uint64_t d = ts__log_durable_head(t->log);
	pthread_mutex_unlock(&t->mu);
	return d;
}

static void durable_version_is_synced_only(void **state)
{
	ts_test_env *e = env(state); /* TS_SYNC_NONE: nothing syncs by itself */
	ts_table *src = open_table(e->db, "src");
	assert_int_equal(durable_of(src), 0);
	insert_random(src, 10, NOW - HOUR, HOUR);
	uint64_t v1, v2;
	assert_int_equal(ts_table_version(src, &v1), 0);
	assert_int_equal(durable_of(src), 0);
	assert_int_equal(ts_sync(e->db), 0);
	assert_int_equal(durable_of(src), v1);
	insert_random(src, 10, NOW - HOUR, HOUR);
	assert_int_equal(ts_table_version(src, &v2), 0);
	assert_true(v2 > v1);
	assert_int_equal(durable_of(src), v1);
	/* a rollup's run syncs its source and takes the newest commit */
	rollup_1m(e->db);
	pass(e->db);
	assert_int_equal(durable_of(src), v2);
	assert_int_equal(stat_of(e->db, "r1m", "rollup_watermark"), (int64_t)v2);
	ts_table_close(src);
	/* what a recovery found is durable as far as the log can tell */
	ts_test_env_reopen(e);
	src = open_table(e->db, "src");
	assert_int_equal(durable_of(src), v2);
	ts_table_close(src);
}

/* The watermark r1m's ROLLUP file holds. */
static uint64_t persisted_watermark(ts_test_env *e)
{
	char dir[4096];
	ts__rollup_def d;
	snprintf(dir, sizeof dir, "%s/r1m", e->dir);
	assert_int_equal(ts__rollup_read(dir, &d), 0);
	uint64_t w = d.watermark;
	ts__rollup_def_free(&d);
	return w;
}

/* The scheduler's thread runs a rollup paced by its windows: the first
 * time, once a window of the clock closed (plus a second), or when the
 * source was quiet since the last look -- not at every pass while rows
 * come in; an explicit pass runs it whenever it is behind.  A paced run
 * within TS_ROLLUP_PERSIST_EVERY of the last persisted watermark moves
 * it in memory only; an explicit one persists it. */
static void paced_by_windows(void **state)
{
	ts_test_env *e = env(state);
	rollup_1m(e->db);
	ts_table *src = open_table(e->db, "src"), *r = open_table(e->db, "r1m");
	ts_test_env_set_now(e, NOW + 10 * SEC);
	uint64_t v[4];
	for (int i = 0; i < 4; i++) {
		insert_random(src, 20, NOW - HOUR, HOUR);
		assert_int_equal(ts_table_version(src, &v[i]), 0);
		/* 0: the first run; 1, 2: rows came since the last look, and no
		 * window closed; 3: the clock passed a window's end and a second */
		if (i == 3)
			ts_test_env_set_now(e, NOW + MIN + SEC);
		assert_int_equal(ts__rollup_due(r, NULL, 0), 0);
		/* 3: through v[3], or -- windows opened since v[0] left for
		 * the next run (deferred_open_windows) -- before the first of
		 * them */
		int64_t wm = ts_test_stat(r, "rollup_watermark");
		if (i < 3)
			assert_int_equal(wm, (int64_t)v[0]);
		else
			assert_true(wm > (int64_t)v[0] && wm <= (int64_t)v[3]);
		assert_int_equal(ts_test_stat(r, "rollup_runs"), i == 3 ? 2 : 1);
	}
	/* behind, then quiet since the last look: at once */
	insert_random(src, 20, NOW - HOUR, HOUR);
	assert_int_equal(ts__rollup_due(r, NULL, 0), 0);
	assert_int_equal(ts_test_stat(r, "rollup_runs"), 2);
	assert_true(ts_test_stat(r, "rollup_lag_versions") > 0);
	assert_int_equal(ts__rollup_due(r, NULL, 0), 0);
	assert_int_equal(ts_test_stat(r, "rollup_runs"), 3);
	assert_int_equal(ts_test_stat(r, "rollup_lag_versions"), 0);
	assert_true(exact_1m(e->db) > 0);
	assert_int_equal(persisted_watermark(e), v[0]); /* the first run's: paced since */
	/* forced: whenever behind */
	insert_random(src, 20, NOW - HOUR, HOUR);
	assert_int_equal(ts__rollup_due(r, NULL, 1), 0);
	assert_int_equal(ts_test_stat(r, "rollup_runs"), 4);
	assert_int_equal(ts_test_stat(r, "rollup_watermark"), (int64_t)version_of(e->db, "src"));
	assert_int_equal(persisted_watermark(e), version_of(e->db, "src"));
	assert_true(exact_1m(e->db) > 0);
	ts_table_close(r);
	ts_table_close(src);
}

/* ---- the aggregate of spans (ts__aggregate_span) ---- */

/* Aggregates of many random boxes (40 per every, group and set of
 * functions) over src, each equal to the aggregate of its box alone;
 * adds the rows to *rows and the boxes without rows to *empty. */
static void check_spans(ts_table *src, long *rows, long *empty)
{
	const ts_aggspec all[] = {
		{C_V, TS_AGG_COUNT}, {C_V, TS_AGG_SUM}, {C_D, TS_AGG_SUM}, {C_D, TS_AGG_MIN},
		{C_D, TS_AGG_MAX},   {C_N, TS_AGG_MIN}, {C_V, TS_AGG_FIRST}, {C_D, TS_AGG_LAST},
		{C_D, TS_AGG_MEAN},
	};
	const ts_aggspec stats[] = { /* blocks may be answered from statistics */
		{C_V, TS_AGG_SUM}, {C_V, TS_AGG_COUNT}, {C_D, TS_AGG_SUM}, {C_D, TS_AGG_COUNT},
		{C_D, TS_AGG_MAX},
	};
	const int64_t everies[] = {MIN, HOUR, 4 * HOUR};
	ts_value host[] = {ts_string("r0"), ts_string("h1"), ts_timestamp(0)};
	for (int set = 0; set < 2; set++)
		for (int k = 0; k < 3; k++)
			for (int g = 0; g <= 2; g++) {
				ts_aggregate req = {.every = everies[k], .group = g,
				                    .specs = set ? stats : all, .nspecs = set ? 5 : 9};
				ts_cursor *c, *r;
				const ts_value *v;
				int n;
				assert_int_equal(ts__aggregate_open_spans(src, &req, &c), 0);
				assert_int_equal(ts__cursor_next(c, &v, &n), 0); /* no box yet */
				assert_null(v);
				for (int i = 0; i < 40; i++) {
					char reg[8], hst[8];
					snprintf(reg, sizeof reg, "r%d", (int)(ts_test_xorshift(&rng) % 2));
					snprintf(hst, sizeof hst, "h%d", (int)(ts_test_xorshift(&rng) % 4));
					ts_value prefix[] = {ts_string(reg), ts_string(hst)};
					req.prefix = prefix;
					req.nprefix = (int)(ts_test_xorshift(&rng) % (uint64_t)(g + 1));
					req.from = NOW - 13 * HOUR +
					           (int64_t)(ts_test_xorshift(&rng) % (uint64_t)(14 * HOUR));
					req.to = req.from + 1 +
					         (int64_t)(ts_test_xorshift(&rng) % (uint64_t)(6 * HOUR));
					if (i % 2 == 0) { /* boxes of whole windows, as the maintenance asks */
						req.from = req.from - req.from % req.every;
						req.to = req.from + req.every * (1 + i % 5);
					}
					assert_int_equal(ts__aggregate_span(c, prefix, req.nprefix, req.from,
					                                    req.to), 0);
					if (i % 7 == 3) { /* a box left half read: the next drops the rest */
						assert_int_equal(ts__cursor_next(c, &v, &n), 0);
						continue;
					}
					assert_int_equal(ts__aggregate_open_raw(src, &req, &r), 0);
					long got = same_rows(c, r, "span", 1);
					ts_cursor_close(r);
					*rows += got;
					*empty += got == 0;
				}
				assert_int_equal(ts__aggregate_span(c, NULL, 0, NOW, NOW), TS_EINVAL);
				assert_int_equal(ts__aggregate_span(c, host, g + 1, NOW, NOW + 1), TS_EINVAL);
				ts_cursor_close(c);
			}
}

/* One aggregate of many boxes equals an aggregate of each box, to the
 * bit: doubles and NaN, boxes with no rows, boxes across tablets, trees
 * and 4-hour periods, with block statistics (no first or last, before
 * any replacement) and without, over replaced rows and deleted ones. */
static void spans_equal_separate_aggregates(void **state)
{
	ts_test_env *e = env(state);
	ts_table *src = open_table(e->db, "src");
	long rows = 0, empty = 0;
	insert_random(src, 600, NOW - 12 * HOUR, 12 * HOUR);
	assert_int_equal(ts_flush(src, INT64_MAX), 0);
	insert_random(src, 600, NOW - 12 * HOUR, 12 * HOUR);
	check_spans(src, &rows, &empty);
	assert_true(ts_test_stat(src, "aggregate_rows_summarised") > 0);
	srow rep[40];
	for (int round = 0; round < 2; round++) {
		assert_int_equal(ts_flush(src, INT64_MAX), 0);
		for (int i = 0; i < 40; i++)
			random_row(&rep[i], NOW - 12 * HOUR, 12 * HOUR);
		insert_ok(src, rep, 40);
		for (int i = 0; i < 40; i++)
			rep[i].v += 1000;
		assert_int_equal(insert_policy(src, rep, 40, TS_ON_DUPLICATE_REPLACE), 0);
		insert_random(src, 300, NOW - 12 * HOUR, 12 * HOUR);
	}
	ts_value host[] = {ts_string("r0"), ts_string("h1")};
	ts_query del = {.prefix = host, .nprefix = 2, .from = NOW - 7 * HOUR,
	                .to = NOW - 6 * HOUR, .has_from = 1, .has_to = 1};
	assert_int_equal(ts_delete(src, &del, NULL, NULL), 0);
	insert_random(src, 300, NOW - 12 * HOUR, 12 * HOUR); /* filling, beside the delete */
	check_spans(src, &rows, &empty);
	/* not vacuous: rows, and boxes without any */
	assert_true(rows > 1000);
	assert_true(empty > 10);
	ts_table_close(src);
}

/* The hook of rows_read_are_durable: once, a row committed between the
 * run's sync of the source and its read, in a window the run recomputes. */
static uint64_t late_version;

static void insert_after_sync(struct ts_table *src)
{
	srow row = {"r1", "h3", NOW - 30 * MIN + 2 * SEC, 77, 7.5, 7};
	if (late_version)
		return;
	insert_ok(src, &row, 1);
	assert_int_equal(ts_table_version(src, &late_version), 0);
}

/* The v_count of window start of (r1, h3) in r1m, 0 when it has none. */
static int64_t count_r1_h3(ts_db *db, int64_t start)
{
	ts_table *r = open_table(db, "r1m");
	ts_value key[] = {ts_string("r1"), ts_string("h3"), ts_timestamp(start)};
	ts_query q = {.prefix = key, .nprefix = 3};
	ts_cursor *c;
	const ts_value *v;
	int n;
	int64_t count = 0;
	assert_int_equal(ts_query_open(r, &q, &c), 0);
	assert_int_equal(ts_cursor_next(c, &v, &n), 0);
	if (v)
		count = v[3].v.i;
	ts_cursor_close(c);
	ts_table_close(r);
	return count;
}

/* A rollup row never counts a source row that a power loss could still
 * take back: rows committed after the run synced the source are not
 * read by that run (they are not durable, and the watermark stays below
 * them), and the next run, which makes them durable, counts them.
 * Reading at a snapshot newer than the sync (the first design) fails
 * here: the window counts the row while the watermark and the durable
 * version are below it. */
static void rows_read_are_durable(void **state)
{
	ts_test_env *e = env(state); /* TS_SYNC_NONE: nothing syncs by itself */
	rollup_1m(e->db);
	ts_table *src = open_table(e->db, "src");
	insert_random(src, 50, NOW - HOUR, 20 * MIN);
	srow first = {"r1", "h3", NOW - 30 * MIN + SEC, 5, 0.5, 5}; /* the window changes */
	insert_ok(src, &first, 1);
	late_version = 0;
	ts__rollup_after_sync = insert_after_sync;
	ts__rollup_resnap_every = INT64_MAX; /* this is about the run's first snapshot */
	pass(e->db);
	ts__rollup_resnap_every = TS_ROLLUP_RESNAP_EVERY;
	ts__rollup_after_sync = NULL;
	assert_true(late_version > 0);
	int64_t w = stat_of(e->db, "r1m", "rollup_watermark");
	assert_true((uint64_t)w < late_version);
	assert_true(durable_of(src) < late_version);
	/* the window is recomputed without the row: nothing durable holds it */
	assert_int_equal(count_r1_h3(e->db, NOW - 30 * MIN), 1);
	/* what the run read is durable, and the rollup exact as of it */
	assert_true(durable_of(src) >= (uint64_t)w);
	/* the next run makes it durable and counts it */
	pass(e->db);
	assert_int_equal(stat_of(e->db, "r1m", "rollup_watermark"), (int64_t)late_version);
	assert_true(durable_of(src) >= late_version);
	assert_int_equal(count_r1_h3(e->db, NOW - 30 * MIN), 2);
	assert_true(exact_1m(e->db) > 0);
	ts_table_close(src);
}

/* n random rows of region into t, with ts in [from, from + span). */
static void insert_region(ts_table *t, const char *region, int n, int64_t from, int64_t span)
{
	srow *r = calloc((size_t)n, sizeof *r);
	assert_non_null(r);
	for (int i = 0; i < n; i++) {
		random_row(&r[i], from, span);
		snprintf(r[i].region, sizeof r[i].region, "%s", region);
	}
	insert_ok(t, r, (size_t)n);
	free(r);
}

/* The yield of run_releases_the_source_log's run: what it found, and the
 * load it makes between the run's slices. */
static struct {
	ts_table *src;
	char logdir[4200];
	int yields, batches;
	int held_at_yield;      /* deleted segments mapped at a yield: at most */
	int held_after_flush;   /* the same right after its flush: at least */
} churn;

/* At each slice of the run: count the source's log segments deleted but
 * mapped; then rows pour in (region r9's, each batch in 10 minutes of
 * its own from -90 h: neither the spans nor the next batches read their
 * blocks) until a flush deletes a segment the run's snapshot holds.  At the 1st, a delete of (r0, h0)'s
 * rows of [-3 h, -140 min), which the run has read; at the 2nd, of
 * region r0's (a wildcard), which empties the windows there of r0's h2
 * and h3, read after it; at the 3rd, rows in [-140 min, -20 min): in
 * windows read after it and others. */
static int churn_yield(void *arg, struct ts_table *t)
{
	(void)arg;
	(void)t;
	int held = ts_test_deleted_mappings(churn.logdir);
	if (held > churn.held_at_yield)
		churn.held_at_yield = held;
	churn.yields++;
	for (int i = 0; i < 100 && (held = ts_test_deleted_mappings(churn.logdir)) == 0; i++) {
		insert_region(churn.src, "r9", 25000, NOW - 90 * HOUR + churn.batches++ * 10 * MIN,
		              10 * MIN);
		assert_int_equal(ts_flush(churn.src, INT64_MAX), 0);
	}
	if (churn.yields == 3)
		insert_random(churn.src, 50, NOW - 140 * MIN, 120 * MIN);
	if (churn.held_after_flush < 0 || held < churn.held_after_flush)
		churn.held_after_flush = held;
	ts_value key[] = {ts_string("r0"), ts_string("h0")};
	ts_query q = {.prefix = key, .nprefix = churn.yields == 1 ? 2 : 1, .from = NOW - 3 * HOUR,
	              .to = NOW - 3 * HOUR + 40 * MIN, .has_from = 1, .has_to = 1};
	if (churn.yields == 1 || churn.yields == 2)
		assert_int_equal(ts_delete(churn.src, &q, NULL, NULL), 0);
	return 0;
}

/* A run lasting while rows pour in and flushes delete the source's log
 * segments does not keep them on disk until it ends: it moves to a newer
 * snapshot between spans (here at each: ts__rollup_resnap_every 0), so
 * the segments deleted at one slice are unmapped by the next.  The run
 * holding its first snapshot throughout (the first build) failed here:
 * every segment deleted during the run stayed mapped.  Reading past S
 * is exact: W becomes S, and the next run recomputes what came after
 * (rows, a host's delete, a region's); a span longer than
 * SPAN_WINDOWS_MAX is read in parts, each at its own snapshot. */
static void run_releases_the_source_log(void **state)
{
	ts_test_env *e = calloc(1, sizeof *e);
	assert_non_null(e);
	e->dir = ts_test_tmpdir();
	e->now = NOW;
	e->hold_maintenance = 1;
	e->log_segment_size = 1 << 20;
	ts_test_env_open(e);
	*state = e;
	create_src(e->db, "src", 0);
	rollup_1m(e->db);
	ts_table *src = open_table(e->db, "src");
	/* 8 groups, a row in every other minute of [-3 h, -20 min): 640
	 * spans of one window each */
	srow *rows = calloc(640, sizeof *rows);
	assert_non_null(rows);
	for (int i = 0; i < 640; i++) {
		snprintf(rows[i].region, sizeof rows[i].region, "r%d", i % 2);
		snprintf(rows[i].host, sizeof rows[i].host, "h%d", i / 2 % 4);
		rows[i].ts = NOW - 3 * HOUR + (int64_t)(i / 8) * 2 * MIN + SEC;
		rows[i].v = i;
		rows[i].d = i / 2.0;
		rows[i].n = i % 100;
	}
	insert_ok(src, rows, 640);
	free(rows);
	uint64_t s = version_of(e->db, "src");
	churn.src = src;
	snprintf(churn.logdir, sizeof churn.logdir, "%s/src/log/", e->dir);
	churn.yields = churn.batches = churn.held_at_yield = 0;
	churn.held_after_flush = -1;
	ts_table *r = open_table(e->db, "r1m");
	ts__merge_yield y = {churn_yield, NULL};
	ts__rollup_resnap_every = 0;
	ts__rollacc_enabled = 0; /* the run reads every window from the source */
	assert_int_equal(ts__rollup_due(r, &y, 1), 0);
	assert_true(churn.held_after_flush >= 1); /* the run's snapshot held them then */
	assert_int_equal(churn.held_at_yield, 0); /* and let go of them by the next slice */
	assert_int_equal(ts_test_deleted_mappings(churn.logdir), 0);
	assert_int_equal(churn.yields, (640 - 40) / 64); /* a slice: 64 windows written */
	assert_int_equal(stat_of(e->db, "r1m", "rollup_watermark"), (int64_t)s);
	/* read after the region's delete: h2's and h3's 20 windows each of
	 * [-3 h, -140 min) were empty, and not written */
	assert_int_equal(stat_of(e->db, "r1m", "rollup_windows_recomputed"), 640 - 40);
	assert_int_equal(stat_of(e->db, "r1m", "rollup_windows_deleted"), 0);
	pass(e->db); /* what came after S */
	assert_int_equal(stat_of(e->db, "r1m", "rollup_watermark"),
	                 (int64_t)version_of(e->db, "src"));
	/* read before the deletes: h0's and h1's of [-3 h, -140 min) leave now */
	assert_int_equal(stat_of(e->db, "r1m", "rollup_windows_deleted"), 40);
	assert_true(exact_1m(e->db) > 640);
	/* one group's 1,500 consecutive minutes: a span of two parts */
	srow *span = calloc(1500, sizeof *span);
	assert_non_null(span);
	for (int i = 0; i < 1500; i++)
		span[i] = (srow){"r1", "h2", NOW - 40 * HOUR + (int64_t)i * MIN + 7 * SEC, i, i, i};
	insert_ok(src, span, 1500);
	free(span);
	int64_t before = stat_of(e->db, "r1m", "rollup_windows_recomputed");
	pass(e->db);
	assert_int_equal(stat_of(e->db, "r1m", "rollup_windows_recomputed") - before, 1500);
	assert_true(exact_1m(e->db) > 640 + 1500);
	ts__rollup_resnap_every = TS_ROLLUP_RESNAP_EVERY;
	ts__rollacc_enabled = 1;
	ts_table_close(r);
	ts_table_close(src);
}

/* A window whose source rows are all deleted leaves the rollup; one that
 * keeps rows is recomputed.  ts_purge of the source changes nothing. */
static void deleted_window_leaves(void **state)
{
	ts_test_env *e = env(state);
	rollup_1m(e->db);
	ts_table *src = open_table(e->db, "src");
	srow rows[] = {{"r0", "h0", NOW - 10 * MIN, 1, 1, 1}, {"r0", "h0", NOW - 5 * MIN, 2, 2, 2}};
	insert_ok(src, rows, 2);
	pass(e->db);
	assert_int_equal(exact_1m(e->db), 2);
	ts_value prefix[] = {ts_string("r0"), ts_string("h0")};
	ts_query q = {.prefix = prefix, .nprefix = 2, .from = NOW - 10 * MIN,
	              .to = NOW - 10 * MIN + 1, .has_from = 1, .has_to = 1};
	assert_int_equal(ts_delete(src, &q, NULL, NULL), 0);
	pass(e->db);
	assert_int_equal(exact_1m(e->db), 1);
	assert_int_equal(stat_of(e->db, "r1m", "rollup_windows_deleted"), 1);
	srow more = {"r0", "h0", NOW - 5 * MIN + SEC, 5, 5, 5};
	insert_ok(src, &more, 1);
	q.from = NOW - 5 * MIN;
	q.to = NOW - 5 * MIN + 1;
	assert_int_equal(ts_delete(src, &q, NULL, NULL), 0); /* one of the window's two rows */
	pass(e->db);
	assert_int_equal(exact_1m(e->db), 1);
	assert_int_equal(stat_of(e->db, "r1m", "rollup_windows_deleted"), 1);
	assert_int_equal(ts_purge(src, NULL, NULL), 0);
	pass(e->db);
	assert_int_equal(exact_1m(e->db), 1);
	ts_table_close(src);
	/* the rollup's own rows may be purged of what its maintenance deleted */
	ts_table *r = open_table(e->db, "r1m");
	assert_int_equal(ts_purge(r, NULL, NULL), 0);
	ts_table_close(r);
	assert_int_equal(exact_1m(e->db), 1);
	assert_int_equal(ts_check(e->db, NULL, NULL), 0);
}

/* A delete of several groups (a region's hosts) reaches changes as a
 * wildcard row (the region, then TS_NONE for host): the rollup's
 * windows of every host of the region in its range are recomputed,
 * emptied ones leave -- also once the rows are flushed, merged and
 * purged away, when no source holds a hidden row any more. */
static int same_with_and_without(ts_table *t, const ts_aggregate *req, char *source);

static void wildcard_delete_recomputes_groups(void **state)
{
	ts_test_env *e = env(state);
	rollup_1m(e->db);
	ts_table *src = open_table(e->db, "src");
	srow rows[] = {{"r0", "h0", NOW - 10 * MIN, 1, 1, 1}, {"r0", "h1", NOW - 10 * MIN, 2, 2, 2},
	               {"r0", "h1", NOW - 10 * MIN + SEC, 3, 3, 3}, {"r1", "h0", NOW - 10 * MIN, 4, 4, 4},
	               {"r0", "h0", NOW - 5 * MIN, 5, 5, 5}, {"r0", "h1", NOW - 5 * MIN, 6, 6, 6}};
	insert_ok(src, rows, 6);
	pass(e->db);
	assert_int_equal(exact_1m(e->db), 5);
	assert_int_equal(ts_flush(src, INT64_MAX), 0);
	int merged;
	assert_int_equal(ts_merge(src, &merged), 0);
	/* region r0's minute at -10: h0's window empties, h1's loses a row */
	ts_value region[] = {ts_string("r0")};
	ts_query q = {.prefix = region, .nprefix = 1, .from = NOW - 10 * MIN,
	              .to = NOW - 10 * MIN + 1, .has_from = 1, .has_to = 1};
	assert_int_equal(ts_delete(src, &q, NULL, NULL), 0);
	ts_cursor *c;
	ts_changes_spec cs = {.since = (uint64_t)stat_of(e->db, "r1m", "rollup_watermark"),
	                      .resolution = MIN, .depth = 2};
	assert_int_equal(ts_changes_open(src, &cs, &c), 0);
	const ts_value *v;
	int n;
	assert_int_equal(ts_cursor_next(c, &v, &n), 0);
	assert_non_null(v);
	assert_int_equal(v[0].type, TS_STRING);
	assert_int_equal(v[1].type, TS_NONE); /* the wildcard this test is about */
	ts_cursor_close(c);
	/* an aggregate meanwhile: the wildcard says not which groups' windows
	 * the rollup holds stale, so the raw rows answer */
	char source[TS_NAME_MAX + 1];
	ts_aggspec sum[] = {{C_V, TS_AGG_SUM}};
	ts_value h0[] = {ts_string("r0"), ts_string("h0")};
	ts_aggregate req = {.prefix = h0, .nprefix = 2, .from = NOW - HOUR, .to = NOW,
	                    .every = HOUR, .group = 2, .specs = sum, .nspecs = 1};
	int force = ts__route_force;
	ts__route_force = 1;
	assert_false(same_with_and_without(src, &req, source));
	ts__route_force = force;
	/* purged first: no source holds a hidden row when the pass runs */
	assert_int_equal(ts_purge(src, NULL, NULL), 0);
	pass(e->db);
	assert_int_equal(exact_1m(e->db), 4);
	assert_int_equal(stat_of(e->db, "r1m", "rollup_windows_deleted"), 1);
	ts_table_close(src);
	assert_int_equal(ts_check(e->db, NULL, NULL), 0);
}

/* Windows that begin before the source's TTL horizon are kept as they
 * were computed; the rollup keeps them past the source's TTL. */
static void rollup_outlives_the_source_ttl(void **state)
{
	ts_test_env *e = env(state);
	create_src(e->db, "short", 2 * HOUR);
	ts_aggspec s[] = {{C_V, TS_AGG_SUM}, {C_V, TS_AGG_COUNT}};
	rollup(e->db, "keep", "short", MIN, 1, s, 2, 0);
	ts_table *src = open_table(e->db, "short");
	insert_random(src, 100, NOW - HOUR, HOUR);
	pass(e->db);
	long before = expect_exact(e->db, "keep", "short", MIN, 1, s, 2);
	assert_true(before > 0);
	ts_test_env_set_now(e, NOW + 3 * HOUR); /* every source row expired */
	insert_random(src, 10, NOW + 3 * HOUR - 10 * MIN, 10 * MIN);
	pass(e->db);
	ts_table *k = open_table(e->db, "keep");
	assert_true(ts_test_count_rows(k) > before);
	ts_table_close(k);
	/* the history the source lost is answered from the rollup */
	ts_aggregate req = {.from = NOW - 2 * HOUR, .to = NOW + 4 * HOUR, .every = HOUR,
	                    .group = 0, .specs = s, .nspecs = 2};
	ts_cursor *a, *b;
	assert_int_equal(ts_aggregate_open(src, &req, &a), 0);
	assert_int_equal(ts_aggregate_open_flags(src, &req, TS_AGG_NO_ROLLUP, &b), 0);
	assert_string_equal(ts_cursor_source(a), "keep");
	const ts_value *v;
	int n, rows = 0, raw = 0;
	int64_t count = 0;
	while (ts_cursor_next(a, &v, &n) == 0 && v) {
		rows++;
		count += v[2].v.i;
	}
	while (ts_cursor_next(b, &v, &n) == 0 && v)
		raw++;
	assert_int_equal(count, 110);
	assert_true(rows > raw);
	ts_cursor_close(a);
	ts_cursor_close(b);
	ts_table_close(src);
}

/* ts_check reads ROLLUP: a damaged file is a problem, and the table
 * does not open. */
static void check_reads_the_definition(void **state)
{
	ts_test_env *e = env(state);
	rollup_1m(e->db);
	assert_int_equal(ts_check(e->db, NULL, NULL), 0);
	ts_test_env_close(e);
	size_t n;
	unsigned char *p = read_rollup_file(e->dir, "r1m", &n);
	p[20] ^= 1;
	write_rollup_file(e->dir, "r1m", p, n);
	ts_test_env_open(e);
	assert_int_equal(ts_check(e->db, "r1m", NULL), TS_ECORRUPT);
	assert_non_null(strstr(ts_errmsg(NULL), "r1m/ROLLUP"));
	assert_non_null(strstr(ts_errmsg(NULL), "checksum"));
	ts_table *t;
	assert_int_equal(ts_table_open(e->db, "r1m", &t), TS_ECORRUPT);
	p[20] ^= 1;
	uint32_t version = 9;
	memcpy(p + 8, &version, 4);
	ts_test_env_close(e);
	write_rollup_file(e->dir, "r1m", p, n);
	ts_test_env_open(e);
	assert_int_equal(ts_table_open(e->db, "r1m", &t), TS_EVERSION);
	free(p);
}

static long expect_sqlite(ts_db *db);

/* ---- a process killed mid-maintenance ---- */

/* The child: keeps inserting random rows and running passes until
 * killed. */
static void crash_child(const char *dir, uint64_t seed)
{
	ts_options o;
	ts_options_init(&o);
	o.sync = TS_SYNC_NONE;
	o.clock = fixed_clock;
	ts_db *db;
	if (ts_open(dir, &o, &db) < 0)
		_exit(2);
	ts__maint_hold(db, 1);
	ts_table *src;
	if (ts_table_open(db, "src", &src) < 0)
		_exit(3);
	rng = seed;
	for (;;) {
		insert_random(src, 50, NOW - 3 * HOUR, 3 * HOUR);
		if (ts__maint_pass(db) < 0)
			_exit(4);
	}
}

static void killed_mid_maintenance(void **state)
{
	ts_test_env *e = env(state);
	rollup_1m(e->db);
	ts_aggspec h[] = {{3, TS_AGG_COUNT}, {4, TS_AGG_SUM}, {5, TS_AGG_MAX}};
	rollup(e->db, "r1h", "r1m", HOUR, 1, h, 3, 0);
	ts_test_env_close(e);
	for (int round = 0; round < 4; round++) {
		pid_t pid = fork();
		assert_true(pid >= 0);
		if (pid == 0)
			crash_child(e->dir, 0x1234567u + (uint64_t)round);
		usleep(150000 + 50000 * round);
		kill(pid, SIGKILL);
		int status;
		assert_int_equal(waitpid(pid, &status, 0), pid);
		assert_true(WIFSIGNALED(status));
		ts_test_env_open(e);
		for (int i = 0; i < 3; i++)
			pass(e->db);
		assert_int_equal(expect_sqlite(e->db), exact_1m(e->db));
		ts_aggspec eq[] = {{C_V, TS_AGG_COUNT}, {C_V, TS_AGG_SUM}, {C_D, TS_AGG_MAX}};
		expect_exact(e->db, "r1h", "src", HOUR, 1, eq, 3);
		assert_int_equal(ts_check(e->db, NULL, NULL), 0);
		ts_test_env_close(e);
	}
	ts_test_env_open(e);
}

/* ---- aggregates answered from rollups ---- */

/* The aggregate req over t with and without rollups gives the same rows;
 * returns whether a rollup answered (its name in *source). */
static int same_with_and_without(ts_table *t, const ts_aggregate *req, char *source)
{
	ts_cursor *a, *b;
	if (ts_aggregate_open(t, req, &a) < 0 ||
	    ts_aggregate_open_flags(t, req, TS_AGG_NO_ROLLUP, &b) < 0)
		fail_msg("aggregate: %s", ts_errmsg(NULL));
	const char *src = ts_cursor_source(a);
	snprintf(source, TS_NAME_MAX + 1, "%s", src ? src : "");
	assert_null(ts_cursor_source(b));
	char what[128];
	snprintf(what, sizeof what, "every %lld group %d from %s (got: routed, want: raw)",
	         (long long)req->every, req->group, src ? src : "-");
	same_rows(a, b, what, 0);
	ts_cursor_close(a);
	ts_cursor_close(b);
	return source[0] != 0;
}

static void aggregates_answered_from_rollups(void **state)
{
	ts_test_env *e = env(state);
	ts__route_force = 1; /* whatever the cost: the route is what is tested */
	rollup_1m(e->db);
	ts_aggspec g1[] = {{C_V, TS_AGG_SUM}, {C_V, TS_AGG_COUNT}, {C_D, TS_AGG_MAX}};
	rollup(e->db, "r5m", "src", 5 * MIN, 1, g1, 3, 0);
	/* the chain 1m -> 1h -> 1d (r1m's columns: 3 v_count, 4 v_sum,
	 * 5 d_max, 6 d_sum, 7 d_count, 8 n_min, 9 v_first, 10 v_last) */
	ts_aggspec h[] = {{3, TS_AGG_COUNT}, {4, TS_AGG_SUM}, {5, TS_AGG_MAX},
	                  {6, TS_AGG_MEAN},  {8, TS_AGG_MIN}, {9, TS_AGG_FIRST}, {10, TS_AGG_LAST}};
	rollup(e->db, "r1h", "r1m", HOUR, 2, h, 7, 0);
	ts_aggspec d[] = {{5, TS_AGG_MAX}, {3, TS_AGG_COUNT}, {4, TS_AGG_MEAN}};
	rollup(e->db, "r1d", "r1h", DAY, 0, d, 3, 0); /* d_max v_count v_sum */
	ts_table *src = open_table(e->db, "src");
	ts_table *r1m = open_table(e->db, "r1m"), *r1h = open_table(e->db, "r1h");
	insert_random(src, 2000, NOW - 10 * HOUR, 10 * HOUR);
	assert_int_equal(ts_flush(src, INT64_MAX), 0);
	insert_random(src, 500, NOW - 10 * HOUR, 10 * HOUR);
	for (int i = 0; i < 3; i++) /* the chain catches up a link per pass at worst */
		pass(e->db);
	char source[TS_NAME_MAX + 1];
	/* exact cases: the coarsest that fits answers */
	ts_aggspec sum[] = {{C_V, TS_AGG_SUM}};
	ts_aggregate req = {.from = NOW - 10 * HOUR + 17 * SEC, .to = NOW - 3 * MIN, .every = HOUR,
	                    .group = 1, .specs = sum, .nspecs = 1};
	assert_true(same_with_and_without(src, &req, source));
	assert_string_equal(source, "r1h"); /* through r1m */
	req.every = 10 * MIN;
	assert_true(same_with_and_without(src, &req, source));
	assert_string_equal(source, "r5m");
	req.group = 2; /* r5m keeps one key column: r1m */
	assert_true(same_with_and_without(src, &req, source));
	assert_string_equal(source, "r1m");
	req.every = DAY;
	req.group = 0;
	req.from = NOW - DAY; /* the whole day of the rows, and more */
	req.to = NOW + DAY;
	assert_true(same_with_and_without(src, &req, source));
	assert_string_equal(source, "r1d"); /* through r1h and r1m */
	req.from = NOW - 10 * HOUR + 17 * SEC;
	req.to = NOW - 3 * MIN;
	req.group = 1;
	req.every = 7 * MIN; /* not a multiple of 5 min: r1m */
	assert_true(same_with_and_without(src, &req, source));
	assert_string_equal(source, "r1m");
	req.every = 90 * SEC; /* no rollup divides it */
	assert_false(same_with_and_without(src, &req, source));
	ts_aggspec first[] = {{C_V, TS_AGG_FIRST}};
	req.every = HOUR;
	req.specs = first;
	req.group = 1; /* first needs the rollup's group */
	assert_false(same_with_and_without(src, &req, source));
	req.group = 2;
	assert_true(same_with_and_without(src, &req, source));
	ts_aggspec n_max[] = {{C_N, TS_AGG_MAX}}; /* no rollup has it */
	req.specs = n_max;
	assert_false(same_with_and_without(src, &req, source));
	/* rows committed after the watermark: their windows from the rows */
	insert_random(src, 100, NOW - 10 * HOUR, 10 * HOUR);
	/* random requests, before and after the next pass */
	ts_aggspec pool[] = {{C_V, TS_AGG_COUNT}, {C_V, TS_AGG_SUM}, {C_V, TS_AGG_MEAN},
	                     {C_D, TS_AGG_MAX},   {C_D, TS_AGG_MEAN}, {C_N, TS_AGG_MIN},
	                     {C_V, TS_AGG_FIRST}, {C_V, TS_AGG_LAST}, {C_D, TS_AGG_MIN}};
	static const int64_t everies[] = {MIN, 2 * MIN, 5 * MIN, 15 * MIN, HOUR, 3 * HOUR, DAY};
	int routed = 0, chained = 0;
	for (int i = 0; i < 400; i++) {
		if (i == 100) { /* r1m caught up, r1h and r1d behind it */
			assert_int_equal(ts__rollup_due(r1m, NULL, 1), 0);
		} else if (i == 200) {
			pass(e->db);
		} else if (i == 300) { /* r1m and r1h caught up, r1d behind */
			insert_random(src, 100, NOW - 10 * HOUR, 10 * HOUR);
			assert_int_equal(ts__rollup_due(r1m, NULL, 1), 0);
			assert_int_equal(ts__rollup_due(r1h, NULL, 1), 0);
		}
		ts_aggspec specs[4];
		int n = 1 + (int)(ts_test_xorshift(&rng) % 4);
		for (int k = 0; k < n; k++)
			specs[k] = pool[ts_test_xorshift(&rng) % 9];
		ts_value prefix[2] = {ts_string(ts_test_xorshift(&rng) % 2 ? "r0" : "r1"),
		                      ts_string(ts_test_xorshift(&rng) % 2 ? "h1" : "h2")};
		int64_t from = NOW - 11 * HOUR + (int64_t)(ts_test_xorshift(&rng) % (11 * 3600)) * SEC;
		int64_t len = 1 + (int64_t)(ts_test_xorshift(&rng) % (12 * 3600)) * SEC;
		ts_aggregate r = {.prefix = prefix, .nprefix = (int)(ts_test_xorshift(&rng) % 3),
		                  .from = from, .to = from + len,
		                  .every = everies[ts_test_xorshift(&rng) % 7],
		                  .group = (int)(ts_test_xorshift(&rng) % 3), .specs = specs,
		                  .nspecs = n};
		routed += same_with_and_without(src, &r, source);
		chained += strcmp(source, "r1h") == 0 || strcmp(source, "r1d") == 0;
	}
	print_message("  %d of 400 random aggregates answered from a rollup, %d through a "
	              "rollup of a rollup\n", routed, chained);
	assert_true(routed > 50);
	assert_true(chained > 20);
	/* as the cost model chooses: an hour of a few hundred rows costs less
	 * read raw than the route's changes, gathering and edges */
	ts__route_force = 0;
	req.specs = sum;
	req.group = 1;
	req.from = NOW - 5 * HOUR;
	req.to = NOW - 4 * HOUR;
	assert_false(same_with_and_without(src, &req, source));
	/* first and last cannot come from statistics: 10 hours of every
	 * row against r1h's 80 */
	req.specs = first;
	req.group = 2;
	req.from = NOW - 10 * HOUR;
	req.to = NOW;
	assert_true(same_with_and_without(src, &req, source));
	assert_string_equal(source, "r1h");
	ts_table_close(r1m);
	ts_table_close(r1h);
	ts_table_close(src);
}

/* ---- SQLite's GROUP BY: an oracle that shares no code ---- */

static void sql_exec(sqlite3 *q, const char *sql)
{
	char *err = NULL;
	if (sqlite3_exec(q, sql, NULL, NULL, &err) != SQLITE_OK)
		fail_msg("sqlite: %s: %s", sql, err ? err : "?");
}

/* r1m's rows equal SQLite's GROUP BY region, host, minute over every row
 * of src (read through a query: replaced rows resolved), NaN stored as
 * NULL, which count, max and total leave out as the aggregates leave
 * NaN out; first and last are the values of the rows of the least and
 * greatest ts (SQLite's bare column beside min() and max()). */
static long expect_sqlite(ts_db *db)
{
	sqlite3 *q;
	sqlite3_stmt *ins, *sel, *first, *last;
	assert_int_equal(sqlite3_open(":memory:", &q), SQLITE_OK);
	sql_exec(q, "CREATE TABLE s (region TEXT, host TEXT, ts INTEGER, v INTEGER, d REAL, n INTEGER)");
	sql_exec(q, "BEGIN");
	assert_int_equal(sqlite3_prepare_v2(q, "INSERT INTO s VALUES (?,?,?,?,?,?)", -1, &ins, NULL),
	                 SQLITE_OK);
	ts_table *src = open_table(db, "src");
	ts_cursor *c;
	ts_query all = {0};
	assert_int_equal(ts_query_open(src, &all, &c), 0);
	const ts_value *v;
	int n;
	while (ts_cursor_next(c, &v, &n) == 0 && v) {
		sqlite3_bind_text(ins, 1, v[C_REGION].v.s.ptr, (int)v[C_REGION].v.s.len, SQLITE_TRANSIENT);
		sqlite3_bind_text(ins, 2, v[C_HOST].v.s.ptr, (int)v[C_HOST].v.s.len, SQLITE_TRANSIENT);
		sqlite3_bind_int64(ins, 3, v[C_TS].v.i);
		sqlite3_bind_int64(ins, 4, v[C_V].v.i);
		if (isnan(v[C_D].v.d))
			sqlite3_bind_null(ins, 5);
		else
			sqlite3_bind_double(ins, 5, v[C_D].v.d);
		sqlite3_bind_int64(ins, 6, v[C_N].v.i);
		assert_int_equal(sqlite3_step(ins), SQLITE_DONE);
		sqlite3_reset(ins);
	}
	ts_cursor_close(c);
	ts_table_close(src);
	sqlite3_finalize(ins);
	sql_exec(q, "COMMIT");
#define W "ts - ts % 60000000000"
	assert_int_equal(sqlite3_prepare_v2(q, "SELECT region, host, " W " AS w, count(v), sum(v), "
	                 "max(d), total(d), count(d), min(n) FROM s GROUP BY 1, 2, 3 ORDER BY 1, 2, 3",
	                 -1, &sel, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_prepare_v2(q, "SELECT min(ts), v FROM s GROUP BY region, host, " W
	                 " ORDER BY region, host, " W, -1, &first, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_prepare_v2(q, "SELECT max(ts), v FROM s GROUP BY region, host, " W
	                 " ORDER BY region, host, " W, -1, &last, NULL), SQLITE_OK);
#undef W
	ts_table *r = open_table(db, "r1m");
	assert_int_equal(ts_query_open(r, &all, &c), 0);
	long rows = 0;
	for (;; rows++) {
		int more = sqlite3_step(sel) == SQLITE_ROW;
		assert_int_equal(ts_cursor_next(c, &v, &n), 0);
		if (!more || !v) {
			if (more || v)
				fail_msg("r1m row %ld: %s", rows, v ? "not in SQLite's GROUP BY" : "missing");
			break;
		}
		assert_int_equal(sqlite3_step(first), SQLITE_ROW);
		assert_int_equal(sqlite3_step(last), SQLITE_ROW);
		char want[512];
		snprintf(want, sizeof want, "%s %s %lld count %lld sum %lld", sqlite3_column_text(sel, 0),
		         sqlite3_column_text(sel, 1), (long long)sqlite3_column_int64(sel, 2),
		         (long long)sqlite3_column_int64(sel, 3), (long long)sqlite3_column_int64(sel, 4));
		int ok = v[0].v.s.len == (size_t)sqlite3_column_bytes(sel, 0) &&
		         memcmp(v[0].v.s.ptr, sqlite3_column_text(sel, 0), v[0].v.s.len) == 0 &&
		         v[1].v.s.len == (size_t)sqlite3_column_bytes(sel, 1) &&
		         memcmp(v[1].v.s.ptr, sqlite3_column_text(sel, 1), v[1].v.s.len) == 0 &&
		         v[2].v.i == sqlite3_column_int64(sel, 2) &&
		         v[3].v.i == sqlite3_column_int64(sel, 3) && /* v_count */
		         v[4].v.i == sqlite3_column_int64(sel, 4) && /* v_sum */
		         v[7].v.i == sqlite3_column_int64(sel, 7) && /* d_count */
		         v[8].v.i == sqlite3_column_int64(sel, 8) && /* n_min */
		         v[9].v.i == sqlite3_column_int64(first, 1) &&
		         v[10].v.i == sqlite3_column_int64(last, 1);
		ts_value dmax = sqlite3_column_type(sel, 5) == SQLITE_NULL
		                    ? ts_double(NAN) : ts_double(sqlite3_column_double(sel, 5));
		ts_value dsum = ts_double(sqlite3_column_double(sel, 6));
		ok = ok && same_value(&v[5], &dmax) && same_value(&v[6], &dsum);
		if (!ok) {
			char got[512];
			describe(v, n, got, sizeof got);
			fail_msg("r1m row %ld: %s; SQLite: %s", rows, got, want);
		}
	}
	ts_cursor_close(c);
	ts_table_close(r);
	sqlite3_finalize(sel);
	sqlite3_finalize(first);
	sqlite3_finalize(last);
	sqlite3_close(q);
	return rows;
}

/* ---- the random differential ---- */

static void random_differential(void **state)
{
	ts_test_env *e = env(state);
	rollup_1m(e->db);
	ts_aggspec g0[] = {{C_V, TS_AGG_SUM}, {C_D, TS_AGG_MEAN}, {C_N, TS_AGG_MIN}};
	ts_aggspec g0eq[] = {{C_V, TS_AGG_SUM}, {C_D, TS_AGG_SUM}, {C_D, TS_AGG_COUNT},
	                     {C_N, TS_AGG_MIN}};
	rollup(e->db, "g0", "src", 10 * MIN, 0, g0, 3, 0);
	ts_aggspec h[] = {{3, TS_AGG_COUNT}, {4, TS_AGG_SUM}, {5, TS_AGG_MAX}, {6, TS_AGG_MEAN},
	                  {8, TS_AGG_MIN}, {9, TS_AGG_FIRST}, {10, TS_AGG_LAST}};
	rollup(e->db, "r1h", "r1m", HOUR, 2, h, 7, 0);
	ts_table *src = open_table(e->db, "src");
	/* make rollup-diff: more steps and other seeds */
	const char *env_steps = getenv("TSSTORE_ROLLUP_DIFF_STEPS");
	const char *env_seed = getenv("TSSTORE_ROLLUP_DIFF_SEED");
	int steps = env_steps ? atoi(env_steps) : 60;
	if (env_seed)
		rng = strtoull(env_seed, NULL, 0) | 1;
	uint64_t skipped = ts__rollup_changes_skipped;
	for (int step = 0; step < steps; step++) {
		uint64_t x = ts_test_xorshift(&rng) % 100;
		if (x < 45) {
			/* mostly recent rows, some late ones days back, across periods */
			int64_t back = x < 10 ? 3 * DAY : x < 25 ? 9 * HOUR : HOUR;
			insert_random(src, 1 + (int)(ts_test_xorshift(&rng) % 60), e->now - back, back);
		} else if (x < 52) {
			/* a delete: a host's or a region's stretch of time, or a window */
			srow r;
			random_row(&r, e->now - 9 * HOUR, 9 * HOUR);
			ts_value prefix[] = {ts_string(r.region), ts_string(r.host)};
			int64_t len = x % 2 ? MIN : (int64_t)(ts_test_xorshift(&rng) % 120) * MIN;
			ts_query q = {.prefix = prefix, .nprefix = 1 + (int)(x % 2), .from = r.ts,
			              .to = r.ts + len + 1, .has_from = 1, .has_to = 1};
			if (ts_delete(src, &q, NULL, NULL) < 0)
				fail_msg("delete: %s", ts_errmsg(NULL));
		} else if (x < 60) {
			srow r[8];
			for (int i = 0; i < 8; i++)
				random_row(&r[i], e->now - 9 * HOUR, 9 * HOUR);
			assert_int_equal(insert_policy(src, r, 8, TS_ON_DUPLICATE_REPLACE), 0);
		} else if (x < 70) {
			assert_int_equal(ts_flush(src, INT64_MAX), 0);
		} else if (x < 75) {
			int merged;
			assert_int_equal(ts_merge(src, &merged), 0);
		} else if (x < 92) {
			pass(e->db);
		} else if (x < 96) {
			ts_table_close(src);
			ts_test_env_reopen(e);
			src = open_table(e->db, "src");
		} else {
			ts_test_env_set_now(e, e->now + (int64_t)(ts_test_xorshift(&rng) % 6) * HOUR);
		}
	}
	ts_table_close(src);
	for (int i = 0; i < 3; i++)
		pass(e->db);
	long rows = exact_1m(e->db);
	assert_true(rows > 100);
	assert_int_equal(expect_sqlite(e->db), rows);
	expect_exact(e->db, "g0", "src", 10 * MIN, 0, g0eq, 4);
	expect_exact(e->db, "r1h", "src", HOUR, 2, EQ_1M, N_1M);
	assert_int_equal(stat_of(e->db, "r1m", "rollup_failures"), 0);
	assert_int_equal(stat_of(e->db, "r1h", "rollup_failures"), 0);
	/* a host's last days deleted: its windows leave r1m, and r1h follows */
	int64_t before = stat_of(e->db, "r1m", "rollup_windows_deleted");
	src = open_table(e->db, "src");
	ts_value host[] = {ts_string("r0"), ts_string("h1")};
	ts_query q = {.prefix = host, .nprefix = 2, .from = e->now - 4 * DAY, .to = e->now + DAY,
	              .has_from = 1, .has_to = 1};
	assert_int_equal(ts_delete(src, &q, NULL, NULL), 0);
	ts_table_close(src);
	for (int i = 0; i < 3; i++)
		pass(e->db);
	assert_true(stat_of(e->db, "r1m", "rollup_windows_deleted") > before);
	assert_int_equal(expect_sqlite(e->db), exact_1m(e->db));
	expect_exact(e->db, "g0", "src", 10 * MIN, 0, g0eq, 4);
	expect_exact(e->db, "r1h", "src", HOUR, 2, EQ_1M, N_1M);
	assert_int_equal(ts_check(e->db, NULL, NULL), 0);
	/* (runs whose windows the accumulators listed, without changes) */
	print_message("  %llu runs without changes\n",
	              (unsigned long long)(ts__rollup_changes_skipped - skipped));
}

/* ---- windows accumulated at insert (rollacc.c) ---- */

/* A rollup without a sum of doubles: its every value is equal to the
 * bit whichever way a window was made. */
static const ts_aggspec SPECS_ACC[] = {
	{C_V, TS_AGG_COUNT}, {C_V, TS_AGG_SUM},   {C_V, TS_AGG_MEAN}, {C_D, TS_AGG_MAX},
	{C_D, TS_AGG_COUNT}, {C_N, TS_AGG_MIN},   {C_V, TS_AGG_FIRST}, {C_D, TS_AGG_LAST},
	{C_D, TS_AGG_MIN},   {C_V, TS_AGG_MAX},   {C_N, TS_AGG_MAX},  {C_D, TS_AGG_FIRST},
	{C_N, TS_AGG_LAST},  {C_V, TS_AGG_MIN},   {C_V, TS_AGG_LAST}, {C_N, TS_AGG_FIRST},
};
/* every function of every type the accumulators fold (int64, double
 * with NaN, int32): v_count v_sum d_max d_count n_min v_first d_last
 * d_min v_max n_max d_first n_last v_min v_last n_first */
static const ts_aggspec EQ_ACC[] = {
	{C_V, TS_AGG_COUNT}, {C_V, TS_AGG_SUM},   {C_D, TS_AGG_MAX},  {C_D, TS_AGG_COUNT},
	{C_N, TS_AGG_MIN},   {C_V, TS_AGG_FIRST}, {C_D, TS_AGG_LAST}, {C_D, TS_AGG_MIN},
	{C_V, TS_AGG_MAX},   {C_N, TS_AGG_MAX},   {C_D, TS_AGG_FIRST}, {C_N, TS_AGG_LAST},
	{C_V, TS_AGG_MIN},   {C_V, TS_AGG_LAST},  {C_N, TS_AGG_FIRST},
};

static uint64_t accumulated_of(ts_db *db, const char *name)
{
	ts_table *t = open_table(db, name);
	pthread_mutex_lock(&t->rollup->mu);
	uint64_t n = t->rollup->windows_accumulated;
	pthread_mutex_unlock(&t->rollup->mu);
	ts_table_close(t);
	return n;
}

/* Series i of the 8 (2 regions x 4 hosts) as a row at ts. */
static void series_row(srow *r, int i, int64_t ts)
{
	snprintf(r->region, sizeof r->region, "r%d", i / 4);
	snprintf(r->host, sizeof r->host, "h%d", i % 4);
	r->ts = ts;
	r->v = (int64_t)(ts_test_xorshift(&rng) % 2001) - 1000;
	uint64_t x = ts_test_xorshift(&rng);
	r->d = x % 17 == 0 ? NAN : (double)(int64_t)(x % 100001) / 8.0 - 5000.0;
	r->n = (int32_t)(ts_test_xorshift(&rng) % 200) - 100;
}

/* Rows arriving in order (a row of every series each 10 s), many windows
 * written from their accumulators, among late rows into windows passed
 * (before and after a run took them), replacements of rows of the open
 * and of closed windows, deletes of a recent window, flushes, reopens
 * (the accumulators are memory: registered again) and a row ahead of the
 * others left by an earlier process, paced runs before some passes (the
 * clock at the data's time: they may leave the open windows for the
 * pass, deferred_open_windows): after every pass the rollup equals the
 * raw aggregate.  Fails with the late rows' windows not made dirty,
 * with replacing rows not folded, with a delete not forgetting the
 * windows held, and with the bound of a registration ignored (the
 * window of the row ahead written without it).  r1m (a mean of doubles:
 * summed row by row in ts order by the accumulators, in block order by
 * the aggregate) is equal too, within the last bits. */
static void accumulated_windows_exact(void **state)
{
	ts_test_env *e = env(state);
	rollup(e->db, "racc", "src", MIN, 2, SPECS_ACC, 16, 0);
	rollup_1m(e->db);
	ts_table *src = open_table(e->db, "src");
	int64_t t0 = e->now - 6 * HOUR, at = t0;
	srow r[8];
	/* a row of series 0 twenty minutes ahead, from an earlier process */
	series_row(&r[0], 0, t0 + 20 * MIN + 5 * SEC);
	insert_ok(src, r, 1);
	ts_table_close(src);
	ts_test_env_reopen(e);
	pass(e->db);
	src = open_table(e->db, "src");
	long checks = 0, deferred = 0;
	uint64_t acc = 0, skipped0 = ts__rollup_changes_skipped;
	for (int step = 0; step < 1500; step++) {
		for (int i = 0; i < 8; i++)
			series_row(&r[i], i, at);
		insert_ok(src, r, 8);
		at += 10 * SEC;
		ts_test_env_set_now(e, at); /* the clock at the data's time */
		uint64_t x = ts_test_xorshift(&rng) % 100;
		int i = (int)(ts_test_xorshift(&rng) % 8);
		if (x < 6) { /* late: into a window passed, maybe taken already */
			series_row(&r[0], i, at - 10 * SEC - (int64_t)(ts_test_xorshift(&rng) % 600) * SEC);
			insert_ok(src, r, 1);
		} else if (x < 10) { /* a row replaced: of the open window or one passed */
			int64_t back = (int64_t)(ts_test_xorshift(&rng) % 12) * 10 * SEC;
			series_row(&r[0], i, at - 10 * SEC - back);
			assert_int_equal(insert_policy(src, r, 1, TS_ON_DUPLICATE_REPLACE), 0);
		} else if (x < 11) { /* a recent window of a series deleted */
			int64_t w = at - 10 * SEC - (int64_t)(ts_test_xorshift(&rng) % 3) * MIN;
			w -= w % MIN;
			series_row(&r[0], i, w);
			ts_value prefix[] = {ts_string(r[0].region), ts_string(r[0].host)};
			ts_query q = {.prefix = prefix, .nprefix = 2, .from = w, .to = w + MIN,
			              .has_from = 1, .has_to = 1};
			assert_int_equal(ts_delete(src, &q, NULL, NULL), 0);
		} else if (x < 14) {
			if (x % 2) { /* paced first: it may leave the open windows */
				ts_table *ra = open_table(e->db, "racc");
				uint64_t w0 = (uint64_t)ts_test_stat(ra, "rollup_watermark");
				assert_int_equal(ts__rollup_due(ra, NULL, 0), 0);
				uint64_t w1 = (uint64_t)ts_test_stat(ra, "rollup_watermark");
				deferred += w1 > w0 && w1 < version_of(e->db, "src");
				ts_table_close(ra);
			}
			pass(e->db);
			expect_exact(e->db, "racc", "src", MIN, 2, EQ_ACC, 15);
			checks++;
		} else if (x < 15) {
			acc += accumulated_of(e->db, "racc"); /* counters of the process */
			ts_table_close(src);
			ts_test_env_reopen(e);
			src = open_table(e->db, "src");
		} else if (x < 17) {
			assert_int_equal(ts_flush(src, INT64_MAX), 0);
		}
	}
	ts_table_close(src);
	pass(e->db);
	long rows = expect_exact(e->db, "racc", "src", MIN, 2, EQ_ACC, 15);
	assert_int_equal(exact_1m(e->db), rows);
	assert_true(checks > 20);
	/* many of the 8 x 250 windows came from their accumulators (not
	 * those a pass saw open, nor any after a reopen before a pass
	 * registered the rollup again, nor those of the row ahead) */
	acc += accumulated_of(e->db, "racc");
	/* runs of racc and r1m without changes (the windows listed by the
	 * accumulators), but not all of them: not after a reopen or a delete
	 * (changes then); each pass runs each of them once at most */
	uint64_t skipped = ts__rollup_changes_skipped - skipped0;
	print_message("  %llu of %ld windows of racc from their accumulators; %llu runs of racc "
	              "and r1m without changes in %ld passes\n", (unsigned long long)acc, rows,
	              (unsigned long long)skipped, checks + 1);
	assert_true(skipped > 20);
	assert_true(skipped < 2 * (uint64_t)(checks + 1));
	/* paced runs that left the open windows for the next (then exact) */
	print_message("  %ld paced runs left the open windows\n", deferred);
	assert_true(deferred > 0);
	assert_true(acc > (uint64_t)rows / 4);
	assert_true(acc < (uint64_t)rows);
	assert_int_equal(stat_of(e->db, "racc", "rollup_failures"), 0);
}

static int stop_at_once(void *arg, struct ts_table *t)
{
	(void)t;
	(*(int *)arg)++;
	return TS_ECLOSED;
}

/* A run that takes the windows from the accumulators (no changes) and
 * stops mid-way -- the database closing: its first yield -- leaves the
 * watermark where it was; what it took out of the accumulators is gone,
 * so the next run must not trust them for that watermark: it reads
 * changes, and the rollup is exact.  Fails with ts__rollacc_untake left
 * out (the windows of the stopped run, taken, are never written). */
static void stopped_run_reads_changes(void **state)
{
	ts_test_env *e = env(state);
	rollup(e->db, "racc", "src", MIN, 2, SPECS_ACC, 16, 0);
	ts_table *src = open_table(e->db, "src"), *r = open_table(e->db, "racc");
	int64_t at = e->now - 6 * HOUR;
	srow rows[8];
	for (int pass_no = 0; pass_no < 2; pass_no++) {
		for (int m = 0; m < 60; m++, at += 10 * SEC) /* 10 windows of 8 series */
			for (int i = 0; i < 8; i++) {
				series_row(&rows[i], i, at);
				if (i == 7)
					insert_ok(src, rows, 8);
			}
		if (pass_no == 0) { /* the first run: W reaches the registration */
			pass(e->db);
			expect_exact(e->db, "racc", "src", MIN, 2, EQ_ACC, 15);
			continue;
		}
		uint64_t w = (uint64_t)stat_of(e->db, "racc", "rollup_watermark");
		uint64_t skipped = ts__rollup_changes_skipped;
		int yields = 0;
		ts__merge_yield y = {stop_at_once, &yields};
		assert_int_equal(ts__rollup_due(r, &y, 1), 0);
		assert_int_equal(yields, 1);
		assert_int_equal(ts__rollup_changes_skipped, skipped + 1);
		assert_int_equal((uint64_t)stat_of(e->db, "racc", "rollup_watermark"), w);
		pass(e->db);
		assert_int_equal(ts__rollup_changes_skipped, skipped + 1); /* changes read */
		expect_exact(e->db, "racc", "src", MIN, 2, EQ_ACC, 15);
		/* and once the watermark is past the stopped run, no changes again */
		for (int i = 0; i < 8; i++)
			series_row(&rows[i], i, at + 90 * SEC);
		insert_ok(src, rows, 8);
		pass(e->db);
		assert_int_equal(ts__rollup_changes_skipped, skipped + 2);
		expect_exact(e->db, "racc", "src", MIN, 2, EQ_ACC, 15);
	}
	ts_table_close(r);
	ts_table_close(src);
}

/* The rollup's rows of window start (of any group). */
/* Over the rows of window start of rollup name: the sum of value column
 * col, or (col < 0) their number. */
static int64_t window_total(ts_db *db, const char *name, int64_t start, int col)
{
	ts_table *t = open_table(db, name);
	ts_query all = {0};
	ts_cursor *c;
	int64_t n = 0;
	assert_int_equal(ts_query_open(t, &all, &c), 0);
	const ts_value *v;
	int nv;
	while (ts_cursor_next(c, &v, &nv) == 0 && v)
		if (v[2].v.i == start)
			n += col < 0 ? 1 : v[col].v.i;
	ts_cursor_close(c);
	ts_table_close(t);
	return n;
}

static long rows_of_window(ts_db *db, const char *name, int64_t start)
{
	return (long)window_total(db, name, start, -1);
}

/* A run due because a window of the clock closed leaves the windows
 * opened since the watermark for the next: with the rows of every series
 * in each batch, the windows turn at one commit C, and the run writes the
 * closed windows only, its watermark C - 1; the next run (the source
 * quiet) writes the open ones, exact.  When the series' windows turn at
 * different commits -- a window of one with rows both before and after
 * the first row of another's open window -- nothing is left (the run goes
 * through S, as before).  Fails with the open windows written anyway
 * (watermark S), or with the windows that turn late left too. */
static void deferred_open_windows(void **state)
{
	ts_test_env *e = env(state);
	rollup(e->db, "racc", "src", MIN, 2, SPECS_ACC, 16, 0);
	ts_table *src = open_table(e->db, "src"), *r = open_table(e->db, "racc");
	int64_t m0 = NOW - NOW % MIN - 10 * MIN, at = m0;
	srow rows[8];
	for (int staggered = 0; staggered < 2; staggered++) {
		for (; at < m0 + 3 * MIN; at += 10 * SEC) { /* 3 windows of 8 series */
			for (int i = 0; i < 8; i++)
				series_row(&rows[i], i, at);
			insert_ok(src, rows, 8);
		}
		ts_test_env_set_now(e, at); /* the clock at the data's time */
		pass(e->db); /* W: the source's head, exact */
		expect_exact(e->db, "racc", "src", MIN, 2, EQ_ACC, 15);
		for (; at < m0 + 4 * MIN; at += 10 * SEC) { /* a window of rows */
			for (int i = 0; i < 8; i++)
				series_row(&rows[i], i, at);
			insert_ok(src, rows, 8);
		}
		/* the next window's first rows: of every series at once, or
		 * of half of them, the others' last rows of the window before
		 * after them */
		for (int i = 0; i < 8; i++)
			series_row(&rows[i], i, at + (staggered && i >= 4 ? -5 * SEC : 0));
		insert_ok(src, rows, staggered ? 4 : 8);
		uint64_t c = version_of(e->db, "src");
		if (staggered)
			insert_ok(src, rows + 4, 4);
		uint64_t head = version_of(e->db, "src");
		ts_test_env_set_now(e, at + 2 * SEC); /* the window closed, and a second */
		assert_int_equal(ts__rollup_due(r, NULL, 0), 0);
		assert_int_equal(ts_test_stat(r, "rollup_watermark"),
		                 (int64_t)(staggered ? head : c - 1));
		assert_int_equal(rows_of_window(e->db, "racc", at), staggered ? 4 : 0);
		assert_int_equal(rows_of_window(e->db, "racc", at - MIN), 8);
		assert_int_equal(ts__rollup_due(r, NULL, 0), 0); /* quiet: at once */
		assert_int_equal(ts_test_stat(r, "rollup_watermark"), (int64_t)head);
		assert_int_equal(rows_of_window(e->db, "racc", at), staggered ? 4 : 8);
		expect_exact(e->db, "racc", "src", MIN, 2, EQ_ACC, 15);
		m0 = at + MIN - at % MIN + MIN;
		at = m0;
	}
	assert_int_equal(stat_of(e->db, "racc", "rollup_failures"), 0);
	ts_table_close(r);
	ts_table_close(src);
}

/* The rows counted in window start of rollup name: the sum of its
 * v_count (the first value column). */
static int64_t count_of_window(ts_db *db, const char *name, int64_t start)
{
	return window_total(db, name, start, 3);
}

/* Insert a row of each of the 8 series at ts (one batch). */
static void batch_of_series(ts_table *src, int64_t ts)
{
	srow rows[8];
	for (int i = 0; i < 8; i++)
		series_row(&rows[i], i, ts);
	insert_ok(src, rows, 8);
}

/* A paced run rolls up only what the source's own syncs made durable,
 * and never syncs it itself to do so ("Durable without a sync"): with
 * the durable version D inside the window that just closed (rows of it
 * after D), the run cuts its harvest at the window's first commit and
 * writes the window as it was then (a row of each series), the durable
 * version unchanged and the lag showing the rest; once a sync (as the
 * interval syncer's) covers the window's turn the run writes the closed
 * window from the accumulators and the open one as of its first commit
 * (the sync's), and the source's durable version is still the sync's,
 * below its head; with nothing whole past W the run waits, and once it
 * waited ts__rollup_durable_wait it syncs the source itself and goes
 * through the head.  Fails with the harvest taken at the source's head
 * instead of D (the first run writes the whole window, and the
 * watermark passes the durable version), with the run syncing the source
 * (the durable version moves), with the open window written as it is
 * now at the cut (3 rows of each series counted, not 1), or without the
 * cut (the first run waits). */
static void paced_runs_roll_up_durable_rows(void **state)
{
	ts_test_env *e = env(state); /* TS_SYNC_NONE: nothing syncs by itself */
	rollup(e->db, "racc", "src", MIN, 2, SPECS_ACC, 16, 0);
	ts_table *src = open_table(e->db, "src"), *r = open_table(e->db, "racc");
	int64_t m0 = NOW - NOW % MIN - 10 * MIN, at = m0;
	for (; at < m0 + MIN; at += 10 * SEC) /* a window of 6 batches */
		batch_of_series(src, at);
	ts_test_env_set_now(e, at);
	pass(e->db); /* W: the head, synced; the rollup registered */
	int64_t w0 = ts_test_stat(r, "rollup_watermark");
	assert_int_equal(w0, (int64_t)version_of(e->db, "src"));
	uint64_t c1 = 0; /* the commit of window m0 + MIN's first rows */
	for (int k = 0; k < 3; k++, at += 10 * SEC) { /* window m0 + MIN: 3 batches */
		batch_of_series(src, at);
		if (k == 0)
			c1 = version_of(e->db, "src");
	}
	assert_int_equal(ts_sync(e->db), 0);
	uint64_t d1 = durable_of(src);
	for (int k = 0; k < 3; k++, at += 10 * SEC) /* 3 more, not durable */
		batch_of_series(src, at);
	batch_of_series(src, at); /* the next window's first rows */
	ts_test_env_set_now(e, at + 2 * SEC); /* m0 + MIN closed, and a second */
	ts__rollup_durable_wait = INT64_MAX; /* the run never syncs */
	uint64_t unsynced0 = ts__rollup_unsynced_runs;
	assert_int_equal(ts__rollup_due(r, NULL, 0), 0);
	/* D is inside m0 + MIN: the harvest is cut at the window's first
	 * commit, and writes the window as it was then */
	assert_int_equal(ts_test_stat(r, "rollup_watermark"), (int64_t)c1);
	assert_int_equal(durable_of(src), d1);
	assert_int_equal(count_of_window(e->db, "racc", m0 + MIN), 8);
	assert_int_equal(ts__rollup_unsynced_runs, unsynced0 + 1);
	ts_test_env_set_now(e, at + 3 * SEC);
	assert_true(ts_test_stat(r, "rollup_lag_ns") > 0);
	/* the source's own sync covers the turn; a batch after it is not
	 * durable, and the run leaves it so: the closed window whole, the
	 * open one as of its first commit, the sync's */
	uint64_t c = version_of(e->db, "src"); /* the open window's first rows */
	assert_int_equal(ts_sync(e->db), 0);
	uint64_t d2 = durable_of(src);
	assert_int_equal(d2, c);
	batch_of_series(src, at + 10 * SEC);
	assert_true(version_of(e->db, "src") > d2);
	assert_int_equal(ts__rollup_due(r, NULL, 0), 0); /* the same minute: not due */
	assert_int_equal(ts__rollup_unsynced_runs, unsynced0 + 1);
	assert_int_equal(ts__rollup_due(r, NULL, 0), 0); /* quiet since: due */
	assert_int_equal(ts__rollup_unsynced_runs, unsynced0 + 2);
	assert_int_equal(durable_of(src), d2);
	int64_t w1 = ts_test_stat(r, "rollup_watermark");
	assert_int_equal(w1, (int64_t)d2);
	assert_int_equal(count_of_window(e->db, "racc", m0 + MIN), 48);
	assert_int_equal(count_of_window(e->db, "racc", at), 8);
	/* nothing past D2 is whole: after the wait the run syncs the source
	 * itself, and goes through its head */
	at += 20 * SEC;
	batch_of_series(src, at + MIN); /* the open window closes */
	ts_test_env_set_now(e, at + MIN + 2 * SEC);
	uint64_t head = version_of(e->db, "src");
	ts__rollup_durable_wait = INT64_MAX;
	assert_int_equal(ts__rollup_due(r, NULL, 0), 0);
	assert_int_equal(ts_test_stat(r, "rollup_watermark"), w1); /* waits */
	assert_int_equal(durable_of(src), d2);
	ts__rollup_durable_wait = 0; /* waited long enough */
	assert_int_equal(ts__rollup_due(r, NULL, 0), 0);
	assert_true(durable_of(src) >= head);
	assert_int_equal(ts__rollup_unsynced_runs, unsynced0 + 2);
	assert_true(ts_test_stat(r, "rollup_watermark") > (int64_t)d2);
	assert_int_equal(count_of_window(e->db, "racc", at - 20 * SEC), 16);
	/* a flush makes what it wrote durable without a sync of the log:
	 * the next window closed, flushed, a batch after it */
	int64_t w2 = ts_test_stat(r, "rollup_watermark");
	uint64_t d3 = durable_of(src);
	at += 40 * SEC; /* the window whose first rows came at +20 s */
	for (int k = 3; k < 6; k++)
		batch_of_series(src, at + k * 10 * SEC);
	batch_of_series(src, at + MIN); /* the next window's first rows */
	uint64_t c2 = version_of(e->db, "src");
	assert_int_equal(ts_flush(src, INT64_MAX), 0);
	batch_of_series(src, at + MIN + 10 * SEC);
	ts_test_env_set_now(e, at + MIN + 2 * SEC);
	ts__rollup_durable_wait = INT64_MAX;
	assert_int_equal(ts__rollup_due(r, NULL, 0), 0);
	assert_int_equal(ts__rollup_unsynced_runs, unsynced0 + 3);
	assert_int_equal(durable_of(src), d3); /* the log not synced */
	assert_true(ts_test_stat(r, "rollup_watermark") > w2);
	assert_true((uint64_t)ts_test_stat(r, "rollup_watermark") < c2);
	assert_int_equal(count_of_window(e->db, "racc", at), 32);
	pass(e->db);
	expect_exact(e->db, "racc", "src", MIN, 2, EQ_ACC, 15);
	assert_int_equal(stat_of(e->db, "racc", "rollup_failures"), 0);
	ts_table_close(r);
	ts_table_close(src);
}

/* racc, a rollup of src every minute over 8 series, registered and run
 * once by an explicit pass (W the head: a batch 5 minutes before m0);
 * the clock stands 10 minutes after m0, 30 minutes before NOW's minute.
 * Returns m0; *src and *r opened. */
static int64_t rollup_run_once(ts_test_env *e, ts_table **src, ts_table **r)
{
	rollup(e->db, "racc", "src", MIN, 2, SPECS_ACC, 16, 0);
	*src = open_table(e->db, "src");
	*r = open_table(e->db, "racc");
	int64_t m0 = NOW - NOW % MIN - 30 * MIN;
	ts_test_env_set_now(e, m0 + 10 * MIN); /* and there it stays */
	batch_of_series(*src, m0 - 5 * MIN);
	pass(e->db);
	return m0;
}

/* A bulk load (rows hours ahead of the clock's minute, timestamp-major,
 * batches of 5 rows across the 8 series, so that a commit holds the last
 * rows of some series' windows and the first of others'): once the
 * source's set holds ts__rollacc_run_closed closed windows the writer
 * asks for a run (rollups_wanted), and the run is due with the clock
 * standing still; the durable version D lies inside window 2, and the
 * run cuts its harvest at window 2's first commit -- windows 0 and 1
 * whole, window 2 as of that commit (4 series' first rows) -- with no
 * sync and no read of the source, and an explicit pass then makes it
 * exact.  Fails without the trigger (not due: the watermark stays),
 * with an entry's state at its first commit not used for the cut (the
 * cut falls back through earlier windows: the watermark below window
 * 2's first commit), or with the entry written as it is now at the cut
 * (window 2 counted whole). */
static void bulk_load_cut_at_a_window_turn(void **state)
{
	ts_test_env *e = env(state); /* TS_SYNC_NONE: nothing syncs by itself */
	ts_table *src, *r;
	int64_t m0 = rollup_run_once(e, &src, &r);
	int64_t w0 = ts_test_stat(r, "rollup_watermark");
	assert_int_equal(w0, (int64_t)version_of(e->db, "src"));
	size_t run_closed = ts__rollacc_run_closed;
	int64_t wait = ts__rollup_durable_wait;
	ts__rollacc_run_closed = 16;
	ts__rollup_durable_wait = INT64_MAX; /* the run never syncs */
	enum { STEPS = 30, NROWS = 8 * STEPS, BATCH = 5, DURABLE = 125 };
	srow rows[NROWS];
	uint64_t commit[NROWS], d = 0;
	for (int k = 0; k < NROWS; k++) /* series k % 8 at step k / 8 */
		series_row(&rows[k], k % 8, m0 + (k / 8) * 10 * SEC);
	__atomic_store_n(&e->db->maint.rollups_wanted, 0, __ATOMIC_RELAXED);
	for (int b = 0; b < NROWS; b += BATCH) {
		insert_ok(src, rows + b, BATCH);
		for (int k = b; k < b + BATCH; k++)
			commit[k] = version_of(e->db, "src");
		if (b + BATCH == DURABLE) {
			assert_int_equal(ts_sync(e->db), 0);
			d = durable_of(src);
		}
	}
	/* windows 0-3 closed for every series: 32 entries, over 16 */
	assert_int_equal(__atomic_load_n(&e->db->maint.rollups_wanted, __ATOMIC_RELAXED), 1);
	uint64_t unsynced0 = ts__rollup_unsynced_runs;
	assert_int_equal(ts__rollup_due(r, NULL, 0), 0);
	assert_int_equal(ts__rollup_unsynced_runs, unsynced0 + 1);
	assert_int_equal(durable_of(src), d); /* not synced */
	/* row 96 (step 12, series 0) opens window 2, in the batch of row 95
	 * (step 11, series 7: window 1's last row) */
	int64_t w = ts_test_stat(r, "rollup_watermark");
	assert_true(w > w0);
	assert_int_equal(w, (int64_t)commit[96]);
	assert_true((uint64_t)w <= d);
	assert_int_equal(commit[95], commit[96]);
	for (int win = 0; win < 5; win++) {
		int64_t want = 0;
		for (int k = 0; k < NROWS; k++)
			if (k / 8 / 6 == win && commit[k] <= (uint64_t)w)
				want++;
		assert_int_equal(count_of_window(e->db, "racc", m0 + win * MIN), want);
	}
	assert_int_equal(count_of_window(e->db, "racc", m0 + 2 * MIN), 4);
	ts__rollacc_run_closed = run_closed;
	ts__rollup_durable_wait = wait;
	pass(e->db);
	expect_exact(e->db, "racc", "src", MIN, 2, EQ_ACC, 15);
	assert_int_equal(stat_of(e->db, "racc", "rollup_failures"), 0);
	ts_table_close(r);
	ts_table_close(src);
}

/* A pass, racc then equal to the raw aggregate, src and r closed. */
static void pass_exact_close(ts_test_env *e, ts_table *src, ts_table *r)
{
	pass(e->db);
	expect_exact(e->db, "racc", "src", MIN, 2, EQ_ACC, 15);
	ts_table_close(r);
	ts_table_close(src);
}

/* A window whose first commit holds two of its rows, the harvest cut
 * there: written with both (as of its first commit, not its first row).
 * Fails with the first state copied at a window's second row whatever
 * its commit. */
static void cut_at_a_first_commit_of_two_rows(void **state)
{
	ts_test_env *e = env(state); /* TS_SYNC_NONE: nothing syncs by itself */
	ts_table *src, *r;
	int64_t m0 = rollup_run_once(e, &src, &r);
	int64_t wait = ts__rollup_durable_wait;
	ts__rollup_durable_wait = INT64_MAX; /* the run never syncs */
	srow a[3], b, c;
	series_row(&a[0], 0, m0);                  /* window 0 */
	series_row(&a[1], 0, m0 + MIN);            /* window 1's first commit: */
	series_row(&a[2], 0, m0 + MIN + 10 * SEC); /* two of its rows */
	insert_ok(src, a, 3);
	uint64_t ca = version_of(e->db, "src");
	series_row(&b, 0, m0 + MIN + 20 * SEC);
	insert_ok(src, &b, 1);
	assert_int_equal(ts_sync(e->db), 0); /* D: b's commit */
	series_row(&c, 0, m0 + MIN + 30 * SEC);
	insert_ok(src, &c, 1); /* not durable */
	assert_int_equal(ts__rollup_due(r, NULL, 0), 0); /* looks: not quiet */
	assert_int_equal(ts__rollup_due(r, NULL, 0), 0); /* quiet since: due */
	assert_int_equal(ts_test_stat(r, "rollup_watermark"), (int64_t)ca);
	assert_int_equal(count_of_window(e->db, "racc", m0), 1);
	assert_int_equal(count_of_window(e->db, "racc", m0 + MIN), 2);
	ts__rollup_durable_wait = wait;
	pass_exact_close(e, src, r);
}

/* Live rows (every series each 10 s, the clock at the data's time) that
 * filled the set -- two windows of each series closed, the first run
 * coming with the clock's turn -- keep the turn's defer: the run leaves
 * the windows just opened for the next, W the commit before them.  Fails
 * with a filled set making the run due without its defer (W the head,
 * the open windows' first rows written). */
static void live_turn_keeps_its_defer_when_full(void **state)
{
	ts_test_env *e = env(state);
	rollup(e->db, "racc", "src", MIN, 2, SPECS_ACC, 16, 0);
	ts_table *src = open_table(e->db, "src"), *r = open_table(e->db, "racc");
	int64_t m0 = NOW - NOW % MIN - 10 * MIN, at = m0;
	for (; at < m0 + 3 * MIN; at += 10 * SEC)
		batch_of_series(src, at);
	ts_test_env_set_now(e, at);
	pass(e->db);
	size_t run_closed = ts__rollacc_run_closed;
	ts__rollacc_run_closed = 16; /* twice the groups */
	for (; at < m0 + 5 * MIN; at += 10 * SEC)
		batch_of_series(src, at);
	batch_of_series(src, at); /* the next window's first rows */
	uint64_t c = version_of(e->db, "src");
	assert_int_equal(ts_sync(e->db), 0); /* everything durable */
	ts_test_env_set_now(e, at + 2 * SEC);
	assert_int_equal(ts__rollup_due(r, NULL, 0), 0);
	ts__rollacc_run_closed = run_closed;
	assert_int_equal(ts_test_stat(r, "rollup_watermark"), (int64_t)(c - 1));
	assert_int_equal(rows_of_window(e->db, "racc", at), 0);
	assert_int_equal(count_of_window(e->db, "racc", at - MIN), 48);
	ts_table_close(r);
	ts_table_close(src);
}

/* Every function the accumulators fold, over every numeric type, at the
 * values' extremes -- int64 and int32 limits, timestamps below the
 * epoch, NaN of both signs, infinities, -0.0 beside 0.0, subnormals --
 * rows in order (folded at insert, not read again): the rollup equals
 * the raw aggregate to the bit (no flush: the aggregate folds the
 * filling tree's rows in ts order, as the accumulators do).  Fails with
 * a fold or a result that differs from ts__agg_acc's in any of them. */
static void accumulators_at_the_extremes(void **state)
{
	ts_test_env *e = env(state);
	enum { X_HOST, X_TS, X_I, X_D, X_T, X_N, XCOLS };
	ts_column cols[XCOLS] = {
		{"host", TS_STRING, {0}}, {"ts", TS_TIMESTAMP, {0}}, {"i", TS_INT64, {0}},
		{"d", TS_DOUBLE, {0}},    {"t", TS_TIMESTAMP, {0}},  {"n", TS_INT32, {0}},
	};
	const char *key[] = {"host", "ts"};
	assert_int_equal(ts_create_keyed(e->db, "ext", cols, XCOLS, key, 2, 0), 0);
	static const ts_aggspec specs[] = {
		{X_I, TS_AGG_COUNT}, {X_I, TS_AGG_MIN},  {X_I, TS_AGG_MAX},   {X_I, TS_AGG_FIRST},
		{X_I, TS_AGG_LAST},  {X_D, TS_AGG_COUNT}, {X_D, TS_AGG_SUM},  {X_D, TS_AGG_MIN},
		{X_D, TS_AGG_MAX},   {X_D, TS_AGG_FIRST}, {X_D, TS_AGG_LAST}, {X_T, TS_AGG_MIN},
		{X_T, TS_AGG_MAX},   {X_T, TS_AGG_FIRST}, {X_T, TS_AGG_LAST}, {X_N, TS_AGG_SUM},
		{X_N, TS_AGG_MIN},   {X_N, TS_AGG_MAX},   {X_N, TS_AGG_FIRST}, {X_N, TS_AGG_LAST},
	};
	enum { NSPECS = sizeof specs / sizeof *specs };
	rollup(e->db, "rext", "ext", MIN, 1, specs, NSPECS, 0);
	static const int64_t ints[] = {INT64_MIN, INT64_MAX, 0, -1, 1, INT64_MIN + 1};
	static const int32_t n32[] = {INT32_MIN, INT32_MAX, 0, -1, 7};
	const double dbl[] = {NAN, -NAN, INFINITY, -INFINITY, -0.0, 0.0, 1e308, -1e308, 5e-324,
	                      -5e-324, 1.5};
	static const int64_t stamps[] = {INT64_MIN, -1, 0, INT64_MAX, -86400 * SEC};
	ts_table *t = open_table(e->db, "ext");
	pass(e->db); /* registered: every row from here on is folded */
	int64_t t0 = NOW - NOW % MIN - 60 * MIN;
	char host[4][8];
	ts_value rows[4 * XCOLS];
	for (int step = 0; step < 120; step++) { /* 20 windows of 6 rows a host */
		for (int h = 0; h < 4; h++) {
			ts_value *r = &rows[h * XCOLS];
			snprintf(host[h], sizeof host[h], "h%d", h);
			uint64_t x = ts_test_xorshift(&rng);
			r[X_HOST] = ts_string(host[h]);
			r[X_TS] = ts_timestamp(t0 + step * 10 * SEC);
			r[X_I] = ts_int64(ints[x % 6]);
			r[X_D] = ts_double(dbl[(x >> 8) % 11]);
			r[X_T] = ts_timestamp(stamps[(x >> 16) % 5]);
			r[X_N] = ts_int32(n32[(x >> 24) % 5]);
		}
		/* a commit of 1-4 hosts' rows: windows straddle commits */
		int k = 1 + (int)(ts_test_xorshift(&rng) % 4);
		assert_int_equal(ts_insert(t, rows, (size_t)k), 0);
		if (k < 4)
			assert_int_equal(ts_insert(t, rows + k * XCOLS, (size_t)(4 - k)), 0);
	}
	uint64_t acc0 = accumulated_of(e->db, "rext");
	pass(e->db);
	assert_true(accumulated_of(e->db, "rext") >= acc0 + 4 * 19); /* the closed windows */
	ts_table *r, *src;
	ts_cursor *a, *q;
	r = open_table(e->db, "rext");
	src = open_table(e->db, "ext");
	ts_aggregate req = {.from = 0, .to = INT64_MAX, .every = MIN, .group = 1,
	                    .specs = specs, .nspecs = NSPECS};
	ts_query all = {0};
	assert_int_equal(ts_aggregate_open_flags(src, &req, TS_AGG_NO_ROLLUP, &a), 0);
	assert_int_equal(ts_query_open(r, &all, &q), 0);
	assert_int_equal(same_rows(q, a, "rext", 1), 4 * 20);
	ts_cursor_close(a);
	ts_cursor_close(q);
	ts_table_close(r);
	ts_table_close(src);
	ts_table_close(t);
}

/* A set that stays full -- a run took only the windows up to its cut, or
 * none (waiting for D) -- asks again each time it holds
 * ts__rollacc_run_closed more closed windows: fails with only the batch
 * that filled it asking (the next pass, which a long merge delays, the
 * only retry). */
static void full_set_asks_again(void **state)
{
	ts_test_env *e = env(state);
	ts_table *src, *r;
	int64_t m0 = rollup_run_once(e, &src, &r);
	size_t run_closed = ts__rollacc_run_closed;
	ts__rollacc_run_closed = 16; /* twice the 8 series */
	int *wanted = &e->db->maint.rollups_wanted;
	__atomic_store_n(wanted, 0, __ATOMIC_RELAXED);
	int asked = 0;
	/* step 0 closes the window rollup_run_once left open (8 closed);
	 * then 6 rows a window: 16 closed at step 6, 32 at step 18, 48 at
	 * step 30 */
	for (int step = 0; step < 40; step++) {
		batch_of_series(src, m0 + step * 10 * SEC);
		if (__atomic_exchange_n(wanted, 0, __ATOMIC_RELAXED) & TS_ROLLUPS_FULL) {
			asked++;
			assert_true(step == 6 || step == 18 || step == 30);
		}
	}
	assert_int_equal(asked, 3);
	ts__rollacc_run_closed = run_closed;
	pass_exact_close(e, src, r);
}

/* ts__maint_rollups_now: the scheduler's thread (running, not held)
 * runs every rollup behind as an explicit pass does -- synced through the
 * source's head -- where its own paced runs would not (sync none, the
 * durable wait endless: they take nothing past D).  Fails with the
 * request not heard (the watermark stays below the head). */
static void rollups_now_catches_up(void **state)
{
	ts_test_env *e = env(state); /* TS_SYNC_NONE: nothing syncs by itself */
	ts_table *src, *r;
	int64_t m0 = rollup_run_once(e, &src, &r);
	int64_t wait = ts__rollup_durable_wait;
	ts__rollup_durable_wait = INT64_MAX;
	for (int step = 0; step < 30; step++)
		batch_of_series(src, m0 + step * 10 * SEC);
	uint64_t head = version_of(e->db, "src");
	ts__maint_hold(e->db, 0);
	ts__maint_rollups_now(e->db);
	int64_t w = 0;
	for (int ms = 0; ms < 60000 && (uint64_t)w < head; ms++) { /* (sanitizers, load) */
		struct timespec t = {0, 1000000};
		nanosleep(&t, NULL);
		w = ts_test_stat(r, "rollup_watermark");
	}
	ts__maint_hold(e->db, 1);
	ts__rollup_durable_wait = wait;
	assert_int_equal(w, (int64_t)head);
	expect_exact(e->db, "racc", "src", MIN, 2, EQ_ACC, 15);
	ts_table_close(r);
	ts_table_close(src);
}

/* A model of rows and their commits for random_cuts_against_a_model. */
enum { MODEL_ROWS = 20000, MODEL_WINDOWS = 400 };
struct model_row {
	int series;
	int64_t ts, v;
	uint64_t commit;
};

/* After a run that moved racc's watermark from w0 to w: every window
 * whose rows were all committed by w, and every window a commit in
 * (w0, w] touched, holds the count and sum of its rows committed by w. */
static void model_check(ts_db *db, const struct model_row *m, int nm, uint64_t w0, uint64_t w,
                        int64_t m0)
{
	static int64_t cnt[8][MODEL_WINDOWS], sum[8][MODEL_WINDOWS];
	static int64_t rcnt[8][MODEL_WINDOWS], rsum[8][MODEL_WINDOWS];
	static uint64_t last[8][MODEL_WINDOWS];
	static int touched[8][MODEL_WINDOWS], held[8][MODEL_WINDOWS];
	memset(cnt, 0, sizeof cnt);
	memset(sum, 0, sizeof sum);
	memset(last, 0, sizeof last);
	memset(touched, 0, sizeof touched);
	memset(held, 0, sizeof held);
	for (int i = 0; i < nm; i++) {
		int s = m[i].series, k = (int)((m[i].ts - m0) / MIN);
		assert_true(k >= 0 && k < MODEL_WINDOWS);
		if (m[i].commit > w0 && m[i].commit <= w)
			touched[s][k] = 1;
		if (m[i].commit <= w) {
			cnt[s][k]++;
			sum[s][k] += m[i].v;
		}
		if (m[i].commit > last[s][k])
			last[s][k] = m[i].commit;
	}
	ts_table *t = open_table(db, "racc");
	ts_query all = {0};
	ts_cursor *c;
	assert_int_equal(ts_query_open(t, &all, &c), 0);
	const ts_value *v;
	int nv;
	while (ts_cursor_next(c, &v, &nv) == 0 && v) { /* region "rN", host "hN" */
		int s = (((const char *)v[0].v.s.ptr)[1] - '0') * 4 + (((const char *)v[1].v.s.ptr)[1] - '0');
		int k = (int)((v[2].v.i - m0) / MIN);
		held[s][k] = 1;
		rcnt[s][k] = v[3].v.i;
		rsum[s][k] = v[4].v.i;
	}
	ts_cursor_close(c);
	ts_table_close(t);
	for (int s = 0; s < 8; s++)
		for (int k = 0; k < MODEL_WINDOWS; k++)
			if ((cnt[s][k] && last[s][k] <= w) || touched[s][k])
				if (!held[s][k] || rcnt[s][k] != cnt[s][k] || rsum[s][k] != sum[s][k])
					fail_msg("series %d window %d, W %llu: rollup %s count %lld sum %lld, "
					         "want %lld %lld", s, k, (unsigned long long)w,
					         held[s][k] ? "holds" : "lacks", (long long)rcnt[s][k],
					         (long long)rsum[s][k], (long long)cnt[s][k], (long long)sum[s][k]);
}

/* Random loads -- batches of random series, of series in turn, of one
 * series; several rows of a window in one commit; bursts of late rows;
 * ignored duplicates; syncs at random -- with runs that never sync
 * (cut at the durable version or waiting), each checked against a model
 * (model_check) and W never past the durable version; explicit passes
 * now and then, exact after each.  TS_ROLLUP_SEED picks the seed (1). */
static void random_cuts_against_a_model(void **state)
{
	ts_test_env *e = env(state); /* TS_SYNC_NONE: nothing syncs by itself */
	rollup(e->db, "racc", "src", MIN, 2, SPECS_ACC, 16, 0);
	ts_table *src = open_table(e->db, "src"), *r = open_table(e->db, "racc");
	int64_t m0 = NOW - NOW % MIN - 600 * MIN;
	ts_test_env_set_now(e, m0 + 500 * MIN); /* and there it stays */
	pass(e->db); /* registers the accumulators: no rows yet */
	size_t run_closed = ts__rollacc_run_closed;
	int64_t wait = ts__rollup_durable_wait;
	ts__rollacc_run_closed = 1;
	ts__rollup_durable_wait = INT64_MAX;
	const char *seed = getenv("TS_ROLLUP_SEED");
	uint64_t x = (seed ? strtoull(seed, NULL, 10) : 1) * UINT64_C(0x9E3779B97F4A7C15) + 1;
	struct model_row *m = calloc(MODEL_ROWS, sizeof *m);
	assert_non_null(m);
	int nm = 0, moved = 0;
	int64_t hi[8];
	for (int s = 0; s < 8; s++)
		hi[s] = m0 + (int64_t)(ts_test_xorshift(&x) % 30) * SEC;
	int late = (int)(ts_test_xorshift(&x) % 6) * 4; /* % of rows late in a burst */
	for (int it = 0; it < 1500 && nm < MODEL_ROWS - 64; it++) {
		int n = 1 + (int)(ts_test_xorshift(&x) % 14), series[16];
		int first = (int)(ts_test_xorshift(&x) % 8), shape = (int)(ts_test_xorshift(&x) % 3);
		srow rows[16];
		for (int i = 0; i < n; i++) {
			int s = shape == 0 ? (int)(ts_test_xorshift(&x) % 8) : shape == 1 ? (first + i) % 8 : first;
			int64_t ts;
			if (it % 300 < 15 && (int)(ts_test_xorshift(&x) % 100) < late)
				ts = hi[s] - (int64_t)(ts_test_xorshift(&x) % 150) * SEC;
			else
				ts = hi[s] = hi[s] + (1 + (int64_t)(ts_test_xorshift(&x) % 25)) * SEC;
			series_row(&rows[i], s, ts < m0 ? m0 : ts);
			series[i] = s;
		}
		insert_ok(src, rows, (size_t)n);
		uint64_t v = version_of(e->db, "src");
		for (int i = 0; i < n; i++) { /* a duplicate of a row held (or of the batch) is ignored */
			int dup = 0;
			for (int j = 0; j < nm && !dup; j++)
				dup = m[j].series == series[i] && m[j].ts == rows[i].ts;
			if (!dup)
				m[nm++] = (struct model_row){series[i], rows[i].ts, rows[i].v, v};
		}
		if (ts_test_xorshift(&x) % 100 < 12)
			assert_int_equal(ts_sync(e->db), 0);
		if (ts_test_xorshift(&x) % 100 < 15) {
			int64_t w0 = ts_test_stat(r, "rollup_watermark");
			assert_int_equal(ts__rollup_due(r, NULL, 0), 0);
			int64_t w = ts_test_stat(r, "rollup_watermark");
			assert_true((uint64_t)w <= durable_of(src));
			moved += w != w0;
			model_check(e->db, m, nm, (uint64_t)w0, (uint64_t)w, m0);
		}
		if (it % 300 == 40) {
			int64_t w0 = ts_test_stat(r, "rollup_watermark");
			pass(e->db);
			model_check(e->db, m, nm, (uint64_t)w0, (uint64_t)ts_test_stat(r, "rollup_watermark"),
			            m0);
			expect_exact(e->db, "racc", "src", MIN, 2, EQ_ACC, 15);
		}
	}
	assert_true(moved > 10); /* the runs did cut */
	ts__rollacc_run_closed = run_closed;
	ts__rollup_durable_wait = wait;
	pass(e->db);
	expect_exact(e->db, "racc", "src", MIN, 2, EQ_ACC, 15);
	free(m);
	ts_table_close(r);
	ts_table_close(src);
}

/* A rollup's tablets cut their blocks at every hour (a series' hour of a
 * 1-minute rollup of one count is about 1.5 KiB, under the 4 KiB a raw
 * table's blocks hold first): an aggregate over it by the hour is
 * answered from block statistics, every row of it summarised (its
 * flushed tablets; merges cut blocks the same way, which the benchmark's
 * merged rollup shows: BENCHMARKS.md).  Fails with the rollup's flushes
 * cutting blocks as a raw table's. */
static void rollup_blocks_lie_in_one_hour(void **state)
{
	ts_test_env *e = env(state);
	ts_aggspec sp[] = {{C_V, TS_AGG_COUNT}};
	rollup(e->db, "rc", "src", MIN, 2, sp, 1, 0);
	ts_table *src = open_table(e->db, "src"), *r = open_table(e->db, "rc");
	int64_t h0 = NOW - NOW % HOUR - 8 * HOUR;
	for (int k = 0; k < 2; k++) { /* two tablets of 3 hours each */
		for (int64_t at = h0 + 3 * k * HOUR; at < h0 + 3 * (k + 1) * HOUR; at += 10 * SEC)
			batch_of_series(src, at);
		ts_test_env_set_now(e, h0 + 3 * (k + 1) * HOUR + MIN);
		pass(e->db);
		assert_int_equal(ts_flush(r, INT64_MAX), 0);
	}
	ts_aggspec sum[] = {{3, TS_AGG_SUM}}; /* of the count column */
	ts_aggregate q = {.from = h0, .to = h0 + 6 * HOUR, .every = HOUR, .group = 2, .specs = sum,
	                  .nspecs = 1};
	ts_cursor *c;
	assert_int_equal(ts_aggregate_open_flags(r, &q, TS_AGG_NO_ROLLUP, &c), 0);
	const ts_value *v;
	int n, windows = 0;
	int64_t total = 0;
	while (ts_cursor_next(c, &v, &n) == 0 && v) {
		windows++;
		total += v[3].v.i;
	}
	ts_cursor_close(c);
	assert_int_equal(windows, 8 * 6);
	assert_int_equal(total, 8 * 6 * 360);
	assert_int_equal(stat_of(e->db, "rc", "aggregate_rows_summarised"), 8 * 6 * 60);
	ts_table_close(r);
	ts_table_close(src);
}

/* Windows written from a whole harvest (write_harvest) that begin before
 * the source's TTL horizon are left as they are, as those read from the
 * source: 3 windows of 8 series in order, the clock moved on until the
 * first two begin before the horizon; the run writes the third only and
 * counts 16 skipped.  Fails with the horizon ignored there. */
static void harvest_skips_windows_past_the_ttl(void **state)
{
	ts_test_env *e = env(state);
	create_src(e->db, "short", 2 * HOUR);
	ts_aggspec sp[] = {{C_V, TS_AGG_SUM}, {C_V, TS_AGG_COUNT}};
	rollup(e->db, "keep", "short", MIN, 2, sp, 2, 0);
	pass(e->db); /* registers the accumulators: no rows yet */
	ts_table *src = open_table(e->db, "short");
	int64_t t0 = NOW - NOW % MIN - 10 * MIN;
	for (int64_t at = t0; at <= t0 + 3 * MIN; at += 20 * SEC)
		batch_of_series(src, at);
	ts_test_env_set_now(e, t0 + 2 * HOUR + 90 * SEC); /* horizon: t0 + 90 s */
	uint64_t skipped = ts__rollup_changes_skipped;
	pass(e->db);
	assert_int_equal(ts__rollup_changes_skipped, skipped + 1); /* from the harvest */
	assert_int_equal(rows_of_window(e->db, "keep", t0), 0);
	assert_int_equal(rows_of_window(e->db, "keep", t0 + MIN), 0);
	assert_int_equal(window_total(e->db, "keep", t0 + 2 * MIN, 4), 24);
	assert_int_equal(stat_of(e->db, "keep", "rollup_windows_skipped"), 16);
	ts_table_close(src);
}

/* ---- a measurement (TS_ROLLUP_BENCH=DAYS runs it and nothing else) ---- */

static double secs_since_on(clockid_t id, const struct timespec *t0)
{
	struct timespec t1;
	clock_gettime(id, &t1);
	return (double)(t1.tv_sec - t0->tv_sec) + (double)(t1.tv_nsec - t0->tv_nsec) / 1e9;
}

static double secs_since(const struct timespec *t0)
{
	return secs_since_on(CLOCK_MONOTONIC, t0);
}

/* 1000 series (10 regions x 100 hosts), RATE rows a minute (6) for DAYS
 * days, inserted a row of every series per batch, with a maintenance
 * pass every 10 minutes of data into a 1-minute rollup of v (sum, count,
 * max) and d (mean); then DAYS days at 1-hour windows per series from
 * the raw rows and from the rollup.  Prints the times.  With
 * TS_ROLLUP_BENCH_THREAD the scheduler's thread does the maintenance
 * beside the inserts instead (its clock the rows' time, so that its
 * windows close as the data's do), and the time includes waiting for the
 * rollup to catch up at the end; CPU is the process's then.  With
 * TS_ROLLUP_BENCH_LIVE the clock is the data's too, and after every batch
 * (10 s of data) the rollup is offered a run as the thread's pass would
 * (paced; with TS_ROLLUP_BENCH_UNPACED run whenever behind, as every pass
 * did before pacing), the passes every 10 minutes of data doing the
 * flushes and merges; a last pass catches up. */
static void measure(void **state)
{
	const char *arg = getenv("TS_ROLLUP_BENCH"), *rate_arg = getenv("TS_ROLLUP_BENCH_RATE");
	ts_test_env *e = env(state);
	int days = atoi(arg) > 0 ? atoi(arg) : 1;
	int rate = rate_arg && atoi(rate_arg) > 0 ? atoi(rate_arg) : 6; /* rows a minute */
	int threaded = getenv("TS_ROLLUP_BENCH_THREAD") != NULL;
	int live = !threaded && getenv("TS_ROLLUP_BENCH_LIVE") != NULL;
	int unpaced = getenv("TS_ROLLUP_BENCH_UNPACED") != NULL;
	clockid_t cpu_clock = threaded ? CLOCK_PROCESS_CPUTIME_ID : CLOCK_THREAD_CPUTIME_ID;
	ts_table_close(e->t);
	assert_int_equal(ts_close(e->db), 0);
	e->t = NULL;
	e->db = NULL;
	int64_t start = NOW - (int64_t)days * DAY;
	e->now = threaded || live ? start : NOW;
	e->hold_maintenance = !threaded;
	e->flags = getenv("TS_ROLLUP_BENCH_NOMERGE") ? TS_OPEN_NOMERGE : 0;
	ts_test_env_open(e);
	ts_aggspec sp[] = {{C_V, TS_AGG_SUM}, {C_V, TS_AGG_COUNT}, {C_V, TS_AGG_MAX},
	                   {C_D, TS_AGG_MEAN}};
	int with = getenv("TS_ROLLUP_BENCH_NONE") == NULL;
	/* TS_ROLLUP_BENCH_NOACC: every window read from the source, as
	 * before the accumulators at insert (rollacc.c) */
	ts__rollacc_enabled = getenv("TS_ROLLUP_BENCH_NOACC") == NULL;
	/* TS_ROLLUP_BENCH_CHANGES: every run reads changes, as before the
	 * runs took the windows to recompute from the accumulators */
	ts__rollacc_skip_changes = getenv("TS_ROLLUP_BENCH_CHANGES") == NULL;
	/* paced runs wait for durability as in a database (env() sets 0);
	 * TS_ROLLUP_BENCH_NOWAIT: a paced run that cannot roll up through
	 * the durable version syncs the source at once, as before */
	ts__rollup_durable_wait = getenv("TS_ROLLUP_BENCH_NOWAIT") ? 0 : TS_ROLLUP_DURABLE_WAIT;
	uint64_t skipped0 = ts__rollup_changes_skipped, unsynced0 = ts__rollup_unsynced_runs;
	if (with)
		rollup(e->db, "r1m", "src", MIN, 2, sp, 4, 0);
	ts_table *src = open_table(e->db, "src");
	srow *rows = calloc(1000, sizeof *rows);
	int64_t step = MIN / rate;
	assert_non_null(rows);
	struct timespec t0, c0;
	double maint = 0, maint_cpu = 0, offered_cpu = 0;
	ts_table *r1m = with && live ? open_table(e->db, "r1m") : NULL;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	clock_gettime(cpu_clock, &c0);
	for (int64_t m = 0; m < (int64_t)days * 1440 * rate; m++) {
		for (int i = 0; i < 1000; i++) {
			snprintf(rows[i].region, sizeof rows[i].region, "g%d", i / 100);
			snprintf(rows[i].host, sizeof rows[i].host, "h%03d", i % 100);
			rows[i].ts = start + m * step + i * 1000;
			rows[i].v = (int64_t)(ts_test_xorshift(&rng) % 1000);
			rows[i].d = (double)(ts_test_xorshift(&rng) % 10000) / 7;
			rows[i].n = 1;
		}
		insert_ok(src, rows, 1000);
		if (threaded || live)
			ts_test_env_set_now(e, start + (m + 1) * step);
		if (threaded)
			continue;
		if (r1m) { /* the thread's pass, for the rollup */
			struct timespec pc0;
			clock_gettime(CLOCK_THREAD_CPUTIME_ID, &pc0);
			ts__maint_in_pass = 1;
			assert_int_equal(ts__rollup_due(r1m, NULL, unpaced), 0);
			ts__maint_in_pass = 0;
			offered_cpu += secs_since_on(CLOCK_THREAD_CPUTIME_ID, &pc0);
		}
		if (m % (10 * rate) == 10 * rate - 1) { /* every 10 minutes of rows */
			struct timespec p0, pc0;
			clock_gettime(CLOCK_MONOTONIC, &p0);
			clock_gettime(CLOCK_THREAD_CPUTIME_ID, &pc0);
			pass(e->db);
			maint += secs_since(&p0);
			maint_cpu += secs_since_on(CLOCK_THREAD_CPUTIME_ID, &pc0);
		}
	}
	if (live) { /* caught up, in the time */
		struct timespec p0, pc0;
		clock_gettime(CLOCK_MONOTONIC, &p0);
		clock_gettime(CLOCK_THREAD_CPUTIME_ID, &pc0);
		pass(e->db);
		maint += secs_since(&p0);
		maint_cpu += secs_since_on(CLOCK_THREAD_CPUTIME_ID, &pc0);
	}
	if (r1m) {
		print_message("  live: %.2f s CPU in the rollup's runs between the passes (%s), "
		              "%lld runs in all, %llu without changes, %llu without a sync, "
		              "%lld windows written\n",
		              offered_cpu, unpaced ? "whenever behind" : "paced",
		              (long long)ts_test_stat(r1m, "rollup_runs"),
		              (unsigned long long)(ts__rollup_changes_skipped - skipped0),
		              (unsigned long long)(ts__rollup_unsynced_runs - unsynced0),
		              (long long)ts_test_stat(r1m, "rollup_windows_recomputed"));
		ts_table_close(r1m);
	}
	double ingest = secs_since(&t0);
	uint64_t version;
	assert_int_equal(ts_table_version(src, &version), 0);
	for (int i = 0; threaded && with && i < 60000; i++) { /* caught up, in the time */
		if (stat_of(e->db, "r1m", "rollup_watermark") >= (int64_t)version)
			break; /* (flushes commit after the inserts) */
		ts__maint_wake(e->db);
		usleep(1000);
	}
	double total = secs_since(&t0), cpu = secs_since_on(cpu_clock, &c0);
	if (threaded) {
		ts__maint_hold(e->db, 1);
		if (with && stat_of(e->db, "r1m", "rollup_watermark") < (int64_t)version)
			print_message("  not caught up: watermark %lld, version %llu, failures %lld, "
			              "last error %lld, runs %lld\n",
			              (long long)stat_of(e->db, "r1m", "rollup_watermark"),
			              (unsigned long long)version,
			              (long long)stat_of(e->db, "r1m", "rollup_failures"),
			              (long long)stat_of(e->db, "r1m", "rollup_last_error"),
			              (long long)stat_of(e->db, "r1m", "rollup_runs"));
		if (with)
			assert_true(stat_of(e->db, "r1m", "rollup_watermark") >= (int64_t)version);
	}
	double slept = (double)__atomic_load_n(&e->db->maint.throttled_ns, __ATOMIC_RELAXED) / 1e9;
	if (threaded)
		print_message("  %d day(s) of 1000 series, %d rows a minute, maintenance by the "
		              "thread: %.2f s in all, %.2f s of it waiting for the rollup at the end "
		              "(%.0f rows/s), %.2f s CPU of the process (%s rollup)\n", days, rate, total,
		              total - ingest, (double)days * 1440 * rate * 1000 / total, cpu,
		              with ? "with a 1-minute" : "no");
	else
		print_message("  %d day(s) of 1000 series, %d rows a minute: %.2f s in all (%.2f s "
		              "CPU), %.2f s of it maintenance passes (%.2f s CPU, %.2f s asleep: they "
		              "yield to the inserts) (%s rollup)\n", days, rate, total, cpu, maint,
		              maint_cpu, slept, with ? "with a 1-minute" : "no");
	free(rows);
	if (!with) {
		ts_table_close(src);
		return;
	}
	pass(e->db);
	ts_aggspec q[] = {{C_V, TS_AGG_SUM}, {C_D, TS_AGG_MEAN}};
	ts_aggregate req = {.from = start, .to = NOW, .every = HOUR, .group = 2, .specs = q,
	                    .nspecs = 2};
	for (int routed = 0; routed < 3; routed++) {
		ts_cursor *c;
		ts__route_force = routed == 2; /* 2: through the rollup, forced */
		clock_gettime(CLOCK_MONOTONIC, &t0);
		assert_int_equal(ts_aggregate_open_flags(src, &req, routed ? 0 : TS_AGG_NO_ROLLUP, &c),
		                 0);
		const ts_value *v;
		int n;
		long count = 0;
		while (ts_cursor_next(c, &v, &n) == 0 && v)
			count++;
		print_message("  %d day(s) at 1 h per series %s: %ld rows in %.3f s (source %s)\n",
		              days, routed == 2 ? "through the rollup" : routed ? "as chosen" : "raw",
		              count, secs_since(&t0),
		              ts_cursor_source(c) ? ts_cursor_source(c) : "raw rows");
		ts_cursor_close(c);
	}
	ts__route_force = 0;
	ts_table_close(src);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(create_makes_the_schema, ts_test_env_teardown),
		cmocka_unit_test_teardown(create_refuses, ts_test_env_teardown),
		cmocka_unit_test_teardown(rollups_are_read_only, ts_test_env_teardown),
		cmocka_unit_test_teardown(maintained_after_inserts, ts_test_env_teardown),
		cmocka_unit_test_teardown(late_rows_and_replacements, ts_test_env_teardown),
		cmocka_unit_test_teardown(reopen_and_crash_before_watermark, ts_test_env_teardown),
		cmocka_unit_test_teardown(source_behind_the_watermark_resets, ts_test_env_teardown),
		cmocka_unit_test_teardown(backup_copies_rollups, ts_test_env_teardown),
		cmocka_unit_test_teardown(failing_run_backs_off, ts_test_env_teardown),
		cmocka_unit_test_teardown(rollup_of_a_rollup, ts_test_env_teardown),
		cmocka_unit_test_teardown(maintained_by_the_thread, ts_test_env_teardown),
		cmocka_unit_test_teardown(durable_version_is_synced_only, ts_test_env_teardown),
		cmocka_unit_test_teardown(paced_by_windows, ts_test_env_teardown),
		cmocka_unit_test_teardown(spans_equal_separate_aggregates, ts_test_env_teardown),
		cmocka_unit_test_teardown(rows_read_are_durable, ts_test_env_teardown),
		cmocka_unit_test_teardown(paced_runs_roll_up_durable_rows, ts_test_env_teardown),
		cmocka_unit_test_teardown(run_releases_the_source_log, ts_test_env_teardown),
		cmocka_unit_test_teardown(deleted_window_leaves, ts_test_env_teardown),
		cmocka_unit_test_teardown(wildcard_delete_recomputes_groups, ts_test_env_teardown),
		cmocka_unit_test_teardown(rollup_outlives_the_source_ttl, ts_test_env_teardown),
		cmocka_unit_test_teardown(harvest_skips_windows_past_the_ttl, ts_test_env_teardown),
		cmocka_unit_test_teardown(check_reads_the_definition, ts_test_env_teardown),
		cmocka_unit_test_teardown(killed_mid_maintenance, ts_test_env_teardown),
		cmocka_unit_test_teardown(aggregates_answered_from_rollups, ts_test_env_teardown),
		cmocka_unit_test_teardown(random_differential, ts_test_env_teardown),
		cmocka_unit_test_teardown(accumulated_windows_exact, ts_test_env_teardown),
		cmocka_unit_test_teardown(accumulators_at_the_extremes, ts_test_env_teardown),
		cmocka_unit_test_teardown(stopped_run_reads_changes, ts_test_env_teardown),
		cmocka_unit_test_teardown(deferred_open_windows, ts_test_env_teardown),
		cmocka_unit_test_teardown(bulk_load_cut_at_a_window_turn, ts_test_env_teardown),
		cmocka_unit_test_teardown(full_set_asks_again, ts_test_env_teardown),
		cmocka_unit_test_teardown(rollups_now_catches_up, ts_test_env_teardown),
		cmocka_unit_test_teardown(cut_at_a_first_commit_of_two_rows, ts_test_env_teardown),
		cmocka_unit_test_teardown(live_turn_keeps_its_defer_when_full, ts_test_env_teardown),
		cmocka_unit_test_teardown(random_cuts_against_a_model, ts_test_env_teardown),
		cmocka_unit_test_teardown(rollup_blocks_lie_in_one_hour, ts_test_env_teardown),
	};
	/* The measurement is a program of its own run, not a test: a test
	 * skipped in every `make check` would count as a failure on CI. */
	const struct CMUnitTest measurement[] = {
		cmocka_unit_test_teardown(measure, ts_test_env_teardown),
	};
	if (getenv("TS_TEST_FILTER"))
		cmocka_set_test_filter(getenv("TS_TEST_FILTER"));
	if (getenv("TS_ROLLUP_BENCH"))
		return cmocka_run_group_tests(measurement, NULL, NULL);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
