/*
 * test_flush.c -- filling tablets written to on-disk tablets: every row
 * still read exactly once after a flush, a partial flush, a reopen, and a
 * flush of a period still being inserted into; uniqueness across filling
 * and on-disk tablets; rows of older schema versions translated; tablet
 * files that pass a full check; log segments released once flushed.
 */
#include <dirent.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "snapshot.h"
#include "support.h"
#include "tablet.h"

#define NOW INT64_C(1795262400000000000) /* 2026-11-21T12:00:00Z */
#define SEC INT64_C(1000000000)
#define DAY (86400 * SEC)

/* The test's clock; the maintenance thread reads it too. */
static int64_t fixed_clock(void *arg) { return __atomic_load_n((int64_t *)arg, __ATOMIC_RELAXED); }

static uint64_t rng = 0x9E3779B97F4A7C15u;
static uint64_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

struct env {
	char *dir;
	ts_db *db;
	ts_table *t;
	int64_t now;
	int64_t flush_size; /* 0: the default */
};

static void set_now(struct env *e, int64_t now)
{
	__atomic_store_n(&e->now, now, __ATOMIC_RELAXED);
}

static void env_open(struct env *e)
{
	ts_options o;
	ts_options_init(&o);
	o.flags = TS_OPEN_CREATE;
	o.sync = TS_SYNC_NONE;
	o.clock = fixed_clock;
	o.clock_arg = &e->now;
	if (e->flush_size)
		o.flush_size = e->flush_size;
	if (ts_open(e->dir, &o, &e->db) < 0)
		fail_msg("open: %s", ts_errmsg(NULL));
	if (ts_table_open(e->db, "m", &e->t) < 0) {
		ts_test_create_m(e->db, 0);
		assert_int_equal(ts_table_open(e->db, "m", &e->t), 0);
	}
}

static void env_close(struct env *e)
{
	ts_table_close(e->t);
	assert_int_equal(ts_close(e->db), 0);
}

static int setup(void **state)
{
	struct env *e = calloc(1, sizeof *e);
	e->dir = ts_test_tmpdir();
	e->now = NOW;
	env_open(e);
	*state = e;
	return 0;
}

static int teardown(void **state)
{
	struct env *e = *state;
	env_close(e);
	ts_test_rmdir(e->dir);
	free(e);
	return 0;
}

/* The rows inserted so far, kept sorted. */
struct model {
	test_row *rows;
	size_t n, cap;
};

static void model_add(struct model *m, const test_row *r, size_t n)
{
	if (m->n + n > m->cap) {
		m->cap = (m->n + n) * 2;
		m->rows = realloc(m->rows, m->cap * sizeof *m->rows);
	}
	memcpy(m->rows + m->n, r, n * sizeof *r);
	m->n += n;
	qsort(m->rows, m->n, sizeof *m->rows, ts_test_row_cmp);
}

static void expect_model(ts_table *t, const struct model *m)
{
	test_row *got;
	long n = ts_test_read_m(t, &got);
	if (n < 0)
		fail_msg("read: %s", ts_errmsg(NULL));
	assert_int_equal(n, (long)m->n);
	for (long i = 0; i < n; i++)
		if (memcmp(&got[i], &m->rows[i], sizeof got[i]) != 0)
			fail_msg("row %ld: got %s/%lld, want %s/%lld", i, got[i].host,
			         (long long)got[i].ts, m->rows[i].host, (long long)m->rows[i].ts);
	free(got);
}

/* n fresh rows, ts within the span before NOW; keys are distinct by
 * construction (the ns part of ts numbers the row). */
static void insert_rows(struct env *e, struct model *m, int n, int64_t span, int64_t batch)
{
	test_row *r = calloc((size_t)n, sizeof *r);
	assert_true(batch < 100000 && n < 10000);
	for (int i = 0; i < n; i++) {
		snprintf(r[i].host, sizeof r[i].host, "h%02d", (int)(rnd() % 30));
		r[i].ts = NOW - SEC - (int64_t)(rnd() % (uint64_t)(span / SEC)) * SEC + batch * 10000 + i;
		r[i].batch = batch;
		r[i].v = i;
	}
	if (ts_test_insert_m(e->t, r, (size_t)n) != 0)
		fail_msg("insert: %s", ts_errmsg(NULL));
	model_add(m, r, (size_t)n);
	free(r);
}

static int64_t stat_of(ts_table *t, const char *name)
{
	ts_stat st[TS_STATS_MAX];
	int n;
	assert_int_equal(ts_table_stats(t, st, TS_STATS_MAX, &n), 0);
	for (int i = 0; i < n; i++)
		if (strcmp(st[i].name, name) == 0)
			return st[i].value;
	fail_msg("no stat %s", name);
	return -1;
}

/* Every tablet of t opens and passes a full check with its schema. */
static void check_tablets(ts_table *t)
{
	ts__snapshot s;
	assert_int_equal(ts__snapshot_take(t, &s), 0);
	for (int i = 0; i < s.ntablets; i++) {
		const ts__tablet *tab = s.tablets[i];
		assert_int_equal(ts__tablet_check(tab, s.versions[tab->schema_version - 1]), 0);
		assert_int_equal(tab->rows, s.metas[i].rows);
	}
	ts__snapshot_release(&s);
}

static int count_files(const char *dir, const char *suffix)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;
	assert_non_null(d);
	while ((e = readdir(d)))
		if (strlen(e->d_name) > strlen(suffix) &&
		    strcmp(e->d_name + strlen(e->d_name) - strlen(suffix), suffix) == 0)
			n++;
	closedir(d);
	return n;
}

static void flush_everything_round_trip(void **state)
{
	struct env *e = *state;
	struct model m = {0};
	char tabdir[4200];
	for (int b = 1; b <= 20; b++) /* 4-hour, day and week periods */
		insert_rows(e, &m, 200, 20 * DAY, b);
	int64_t filling = stat_of(e->t, "filling_tablets");
	assert_true(filling >= 3);
	assert_int_equal(ts_flush(e->t, INT64_MAX), 0);
	assert_int_equal(stat_of(e->t, "filling_tablets"), 0);
	assert_int_equal(stat_of(e->t, "tablets"), filling);
	assert_int_equal(stat_of(e->t, "tablet_rows"), (int64_t)m.n);
	snprintf(tabdir, sizeof tabdir, "%s/m/tablets", e->dir);
	assert_int_equal(count_files(tabdir, ".tab"), filling);
	expect_model(e->t, &m);
	check_tablets(e->t);
	env_close(e);
	env_open(e);
	expect_model(e->t, &m);
	assert_int_equal(stat_of(e->t, "filling_tablets"), 0);
	assert_int_equal(ts_flush(e->t, INT64_MAX), 0); /* nothing left: no-op */
	assert_int_equal(stat_of(e->t, "tablets"), filling);
	free(m.rows);
}

static void flush_only_older_than_before(void **state)
{
	struct env *e = *state;
	struct model m = {0};
	insert_rows(e, &m, 100, 2 * 3600 * SEC, 1); /* the current 4-hour period */
	insert_rows(e, &m, 100, 3 * DAY, 2);         /* and older ones */
	int64_t filling = stat_of(e->t, "filling_tablets");
	assert_int_equal(ts_flush(e->t, NOW - 2 * DAY), 0);
	int64_t tablets = stat_of(e->t, "tablets");
	assert_true(tablets >= 1);
	assert_int_equal(stat_of(e->t, "filling_tablets"), filling - tablets);
	assert_true(stat_of(e->t, "filling_tablets") >= 1); /* today's stays */
	expect_model(e->t, &m);
	free(m.rows);
}

static void flush_keeps_keys_unique(void **state)
{
	struct env *e = *state;
	struct model m = {0};
	insert_rows(e, &m, 50, DAY, 1);
	assert_int_equal(ts_flush(e->t, INT64_MAX), 0);
	test_row again = m.rows[17];
	again.v = 999;
	assert_int_equal(ts_test_insert_m(e->t, &again, 1), TS_EDUPKEY);
	char want[128];
	snprintf(want, sizeof want, "row 0: duplicate key (\"%s\", ", again.host);
	assert_non_null(strstr(ts_errmsg(NULL), want));
	again.ts += 1; /* a neighbour is fine */
	assert_int_equal(ts_test_insert_m(e->t, &again, 1), 0);
	model_add(&m, &again, 1);
	expect_model(e->t, &m);
	free(m.rows);
}

static void flush_while_the_period_fills(void **state)
{
	struct env *e = *state;
	struct model m = {0};
	insert_rows(e, &m, 100, 3600 * SEC, 1);
	assert_int_equal(ts_flush(e->t, INT64_MAX), 0);
	insert_rows(e, &m, 100, 3600 * SEC, 2); /* same period: a new tree */
	expect_model(e->t, &m);
	assert_int_equal(ts_flush(e->t, INT64_MAX), 0);
	insert_rows(e, &m, 100, 3600 * SEC, 3);
	assert_int_equal(stat_of(e->t, "tablets"), 2);
	assert_int_equal(stat_of(e->t, "filling_tablets"), 1);
	expect_model(e->t, &m);
	check_tablets(e->t);
	env_close(e);
	env_open(e);
	expect_model(e->t, &m);
	free(m.rows);
}

/* Rows of schema version 1 flushed after an alter are translated. */
static int count_extra(const ts_value *v, int n, void *arg)
{
	int64_t *acc = arg;
	if (n != 5)
		return TS_ECORRUPT;
	acc[0]++;
	acc[1] += v[4].v.i;
	return 0;
}

static void flush_translates_old_versions(void **state)
{
	struct env *e = *state;
	struct model m = {0};
	insert_rows(e, &m, 40, 3600 * SEC, 1);
	ts_column extra = {"extra", TS_INT64, {TS_INT64, {.i = 5}}};
	assert_int_equal(ts_alter_add(e->t, &extra), 0);
	ts_value row[5] = {ts_string("zz"), ts_timestamp(NOW - SEC), ts_int64(0), ts_int64(0),
	                   ts_int64(100)};
	assert_int_equal(ts_insert(e->t, row, 1), 0);
	assert_int_equal(ts_flush(e->t, INT64_MAX), 0);
	check_tablets(e->t);
	ts__snapshot s;
	int64_t acc[2] = {0, 0};
	assert_int_equal(ts__snapshot_take(e->t, &s), 0);
	assert_int_equal(s.nroots, 0);
	assert_int_equal(s.ntablets, 1);
	assert_int_equal(s.tablets[0]->schema_version, 2);
	assert_int_equal(ts__snapshot_scan_tablet(&s, 0, count_extra, acc), 0);
	ts__snapshot_release(&s);
	assert_int_equal(acc[0], 41);
	assert_int_equal(acc[1], 40 * 5 + 100); /* the default, and the value */
	free(m.rows);
}

static void flush_releases_the_log(void **state)
{
	struct env *e = *state;
	struct model m = {0};
	char logdir[4200];
	snprintf(logdir, sizeof logdir, "%s/m/log", e->dir);
	/* about 150 MB of log: rows and path copies */
	for (int b = 1; b <= 60; b++)
		insert_rows(e, &m, 5000, 3 * DAY, b);
	int before = count_files(logdir, ".seg");
	assert_true(before >= 3);
	assert_int_equal(ts_flush(e->t, INT64_MAX), 0);
	int after = count_files(logdir, ".seg");
	assert_true(after <= 2); /* the tail's segment and the one prepared */
	expect_model(e->t, &m);
	env_close(e);
	env_open(e);
	expect_model(e->t, &m);
	insert_rows(e, &m, 10, DAY, 61);
	expect_model(e->t, &m);
	free(m.rows);
}

/* What a crash leaves in the tablets directory goes at the next open. */
static void flush_leftovers_removed_on_open(void **state)
{
	struct env *e = *state;
	struct model m = {0};
	char tabdir[4200], path[4300];
	insert_rows(e, &m, 30, 3600 * SEC, 1); /* one period: one tablet */
	assert_int_equal(ts_flush(e->t, INT64_MAX), 0);
	snprintf(tabdir, sizeof tabdir, "%s/m/tablets", e->dir);
	assert_int_equal(count_files(tabdir, ".tab"), 1);
	env_close(e);
	snprintf(path, sizeof path, "%s/.tmp-0000000000000002.tab", tabdir);
	fclose(fopen(path, "w"));
	snprintf(path, sizeof path, "%s/00000000000000ff.tab", tabdir); /* never named */
	fclose(fopen(path, "w"));
	assert_int_equal(count_files(tabdir, ".tab"), 3);
	env_open(e);
	assert_int_equal(count_files(tabdir, ".tab"), 1);
	expect_model(e->t, &m);
	free(m.rows);
}

/* The maintenance pass flushes a tree that reached flush_size. */
static void maintain_flushes_by_size(void **state)
{
	struct env *e = *state;
	struct model m = {0};
	env_close(e);
	e->flush_size = 64 << 10;
	env_open(e);
	insert_rows(e, &m, 2000, 3600 * SEC, 1);     /* well over 64 kB: due */
	assert_int_equal(ts__db_maintain(e->db), 0);
	assert_int_equal(stat_of(e->t, "tablets"), 1);
	assert_int_equal(stat_of(e->t, "filling_tablets"), 0);
	insert_rows(e, &m, 10, 3600 * SEC, 2);       /* small: stays */
	assert_int_equal(ts__db_maintain(e->db), 0);
	assert_int_equal(stat_of(e->t, "tablets"), 1);
	assert_int_equal(stat_of(e->t, "filling_tablets"), 1);
	expect_model(e->t, &m);
	free(m.rows);
}

/* A period that ends while its tree fills is flushed (roll-over); a tree
 * of late rows, begun after its period ended, waits for flush_age. */
static void maintain_flushes_at_period_end_and_age(void **state)
{
	struct env *e = *state;
	struct model m = {0};
	set_now(e, NOW - 3600 * SEC);                /* 11:00, period 08:00-12:00 */
	test_row r = {.host = "h1", .ts = NOW - 2 * 3600 * SEC, .batch = 1, .v = 1};
	assert_int_equal(ts_test_insert_m(e->t, &r, 1), 0);
	model_add(&m, &r, 1);
	assert_int_equal(ts__db_maintain(e->db), 0);
	assert_int_equal(stat_of(e->t, "tablets"), 0);
	set_now(e, NOW + SEC);                       /* 12:00:01: the period ended */
	assert_int_equal(ts__db_maintain(e->db), 0);
	assert_int_equal(stat_of(e->t, "tablets"), 1);
	r.ts += SEC;                                 /* a late row for 10:00 */
	assert_int_equal(ts_test_insert_m(e->t, &r, 1), 0);
	model_add(&m, &r, 1);
	assert_int_equal(ts__db_maintain(e->db), 0);
	assert_int_equal(stat_of(e->t, "tablets"), 1);
	assert_int_equal(stat_of(e->t, "filling_tablets"), 1);
	set_now(e, NOW + SEC + 10 * 60 * SEC);       /* flush_age later */
	assert_int_equal(ts__db_maintain(e->db), 0);
	assert_int_equal(stat_of(e->t, "tablets"), 2);
	assert_int_equal(stat_of(e->t, "filling_tablets"), 0);
	expect_model(e->t, &m);
	free(m.rows);
}

int main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
	const struct CMUnitTest tests[] = {
		T(flush_everything_round_trip),
		T(flush_only_older_than_before),
		T(flush_keeps_keys_unique),
		T(flush_while_the_period_fills),
		T(flush_translates_old_versions),
		T(flush_releases_the_log),
		T(flush_leftovers_removed_on_open),
		T(maintain_flushes_by_size),
		T(maintain_flushes_at_period_end_and_age),
	};
#undef T
	return cmocka_run_group_tests_name("flush", tests, NULL, NULL);
}
