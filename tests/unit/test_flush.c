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

#include "descriptor.h"
#include "snapshot.h"
#include "support.h"
#include "tablet.h"

#define NOW INT64_C(1795262400000000000) /* 2026-11-21T12:00:00Z */
#define SEC INT64_C(1000000000)
#define DAY (86400 * SEC)

static uint64_t rng = 0x9E3779B97F4A7C15u;
static uint64_t rnd(void) { return ts_test_xorshift(&rng); }

static int setup(void **state)
{
	*state = ts_test_env_new(NOW, 0);
	return 0;
}

/* n fresh rows, ts within the span before NOW; keys are distinct by
 * construction (the ns part of ts numbers the row). */
static void insert_rows(ts_test_env *e, ts_test_model *m, int n, int64_t span, int64_t batch)
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
	ts_test_model_add(m, r, (size_t)n);
	free(r);
}

static void flush_everything_round_trip(void **state)
{
	ts_test_env *e = *state;
	ts_test_model m = {0};
	char tabdir[4200];
	for (int b = 1; b <= 20; b++) /* 4-hour, day and week periods */
		insert_rows(e, &m, 200, 20 * DAY, b);
	int64_t filling = ts_test_stat(e->t, "filling_tablets");
	assert_true(filling >= 3);
	assert_int_equal(ts_flush(e->t, INT64_MAX), 0);
	assert_int_equal(ts_test_stat(e->t, "filling_tablets"), 0);
	assert_int_equal(ts_test_stat(e->t, "tablets"), filling);
	assert_int_equal(ts_test_stat(e->t, "tablet_rows"), (int64_t)m.n);
	snprintf(tabdir, sizeof tabdir, "%s/m/tablets", e->dir);
	assert_int_equal(ts_test_count_files(tabdir, ".tab"), filling);
	ts_test_expect_model(e->t, &m, INT64_MIN);
	ts_test_check_tablets(e->t);
	ts_test_env_close(e);
	ts_test_env_open(e);
	ts_test_expect_model(e->t, &m, INT64_MIN);
	assert_int_equal(ts_test_stat(e->t, "filling_tablets"), 0);
	assert_int_equal(ts_flush(e->t, INT64_MAX), 0); /* nothing left: no-op */
	assert_int_equal(ts_test_stat(e->t, "tablets"), filling);
	free(m.rows);
}

static void flush_only_older_than_before(void **state)
{
	ts_test_env *e = *state;
	ts_test_model m = {0};
	insert_rows(e, &m, 100, 2 * 3600 * SEC, 1); /* the current 4-hour period */
	insert_rows(e, &m, 100, 3 * DAY, 2);         /* and older ones */
	int64_t filling = ts_test_stat(e->t, "filling_tablets");
	assert_int_equal(ts_flush(e->t, NOW - 2 * DAY), 0);
	int64_t tablets = ts_test_stat(e->t, "tablets");
	assert_true(tablets >= 1);
	assert_int_equal(ts_test_stat(e->t, "filling_tablets"), filling - tablets);
	assert_true(ts_test_stat(e->t, "filling_tablets") >= 1); /* today's stays */
	ts_test_expect_model(e->t, &m, INT64_MIN);
	free(m.rows);
}

static void flush_keeps_keys_unique(void **state)
{
	ts_test_env *e = *state;
	ts_test_model m = {0};
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
	ts_test_model_add(&m, &again, 1);
	/* the newest row on disk too: inserts newer than every tablet skip
	 * the tablets, and its ts is no newer */
	test_row newest = m.rows[0];
	for (size_t i = 1; i < m.n; i++)
		if (m.rows[i].ts > newest.ts)
			newest = m.rows[i];
	assert_int_equal(ts_flush(e->t, INT64_MAX), 0);
	assert_int_equal(ts_test_insert_m(e->t, &newest, 1), TS_EDUPKEY);
	ts_test_expect_model(e->t, &m, INT64_MIN);
	free(m.rows);
}

static void flush_while_the_period_fills(void **state)
{
	ts_test_env *e = *state;
	ts_test_model m = {0};
	insert_rows(e, &m, 100, 3600 * SEC, 1);
	assert_int_equal(ts_flush(e->t, INT64_MAX), 0);
	insert_rows(e, &m, 100, 3600 * SEC, 2); /* same period: a new tree */
	ts_test_expect_model(e->t, &m, INT64_MIN);
	assert_int_equal(ts_flush(e->t, INT64_MAX), 0);
	insert_rows(e, &m, 100, 3600 * SEC, 3);
	assert_int_equal(ts_test_stat(e->t, "tablets"), 2);
	assert_int_equal(ts_test_stat(e->t, "filling_tablets"), 1);
	ts_test_expect_model(e->t, &m, INT64_MIN);
	ts_test_check_tablets(e->t);
	ts_test_env_close(e);
	ts_test_env_open(e);
	ts_test_expect_model(e->t, &m, INT64_MIN);
	free(m.rows);
}

/* Rows of schema version 1 flushed after an alter are translated. */
static void flush_translates_old_versions(void **state)
{
	ts_test_env *e = *state;
	ts_test_model m = {0};
	insert_rows(e, &m, 40, 3600 * SEC, 1);
	ts_column extra = {"extra", TS_INT64, {TS_INT64, {.i = 5}}};
	assert_int_equal(ts_alter_add(e->t, &extra), 0);
	ts_value row[5] = {ts_string("zz"), ts_timestamp(NOW - SEC), ts_int64(0), ts_int64(0),
	                   ts_int64(100)};
	assert_int_equal(ts_insert(e->t, row, 1), 0);
	assert_int_equal(ts_flush(e->t, INT64_MAX), 0);
	ts_test_check_tablets(e->t);
	ts__snapshot s;
	int64_t acc[2] = {0, 0};
	assert_int_equal(ts__snapshot_take(e->t, &s), 0);
	assert_int_equal(s.nroots, 0);
	assert_int_equal(s.ntablets, 1);
	assert_int_equal(s.tablets[0]->schema_version, 2);
	assert_int_equal(ts__snapshot_scan_tablet(&s, 0, ts_test_sum_fifth, acc), 0);
	ts__snapshot_release(&s);
	assert_int_equal(acc[0], 41);
	assert_int_equal(acc[1], 40 * 5 + 100); /* the default, and the value */
	free(m.rows);
}

static void flush_releases_the_log(void **state)
{
	ts_test_env *e = *state;
	ts_test_model m = {0};
	char logdir[4200];
	snprintf(logdir, sizeof logdir, "%s/m/log", e->dir);
	/* batches of rows and their path copies until the log has three
	 * segment files (the last may be one prepared ahead of the tail) */
	int before = 0;
	for (int b = 1; b <= 400 && before < 3; b++) {
		insert_rows(e, &m, 5000, 3 * DAY, b);
		before = ts_test_count_files(logdir, ".seg");
	}
	assert_true(before >= 3);
	assert_int_equal(ts_flush(e->t, INT64_MAX), 0);
	int after = ts_test_count_files(logdir, ".seg");
	assert_true(after <= 2); /* the tail's segment and the one prepared */
	ts_test_expect_model(e->t, &m, INT64_MIN);
	ts_test_env_close(e);
	ts_test_env_open(e);
	ts_test_expect_model(e->t, &m, INT64_MIN);
	insert_rows(e, &m, 10, DAY, 401);
	ts_test_expect_model(e->t, &m, INT64_MIN);
	free(m.rows);
}

static int count_rows(const ts_value *v, int n, void *arg)
{
	(void)v;
	(void)n;
	((int64_t *)arg)[0]++;
	return 0;
}

/* Mappings of this process of deleted files under dir. */
static int deleted_mappings(const char *dir)
{
	char line[8192];
	int n = 0;
	FILE *f = fopen("/proc/self/maps", "r");
	assert_non_null(f);
	while (fgets(line, sizeof line, f))
		if (strstr(line, dir) && strstr(line, "(deleted)"))
			n++;
	fclose(f);
	return n;
}

/* The segments a flush released stay mapped while a snapshot taken before
 * may read them, and no longer: a long-running writer kept every segment
 * it ever wrote mapped, and the disk blocks of the deleted files with
 * them. */
static void flush_unmaps_released_segments_after_the_last_snapshot(void **state)
{
	ts_test_env *e = *state;
	ts_test_model m = {0};
	ts__snapshot s;
	char logdir[4200];
	int64_t acc[2] = {0, 0};
	snprintf(logdir, sizeof logdir, "%s/m/log/", e->dir);
	for (int b = 1; b <= 400 && ts_test_count_files(logdir, ".seg") < 3; b++)
		insert_rows(e, &m, 5000, 3 * DAY, b);
	assert_int_equal(ts__snapshot_take(e->t, &s), 0);
	assert_int_equal(ts_flush(e->t, INT64_MAX), 0);
	int kept = deleted_mappings(logdir);
	assert_true(kept >= 1); /* the snapshot's trees are in them */
	for (uint32_t i = 0; i < s.nroots; i++)
		assert_int_equal(ts__snapshot_scan(&s, i, count_rows, acc), 0);
	assert_int_equal(acc[0], (int64_t)m.n);
	ts__snapshot_release(&s);
	assert_int_equal(deleted_mappings(logdir), 0);
	/* with no snapshot held, the next flush unmaps at once */
	for (int b = 401; b <= 800 && ts_test_count_files(logdir, ".seg") < 3; b++)
		insert_rows(e, &m, 5000, 3 * DAY, b);
	assert_int_equal(ts_flush(e->t, INT64_MAX), 0);
	assert_int_equal(deleted_mappings(logdir), 0);
	ts_test_expect_model(e->t, &m, INT64_MIN);
	free(m.rows);
}

/* What a crash leaves in the tablets directory goes at the next open. */
static void flush_leftovers_removed_on_open(void **state)
{
	ts_test_env *e = *state;
	ts_test_model m = {0};
	char tabdir[4200], path[4300];
	insert_rows(e, &m, 30, 3600 * SEC, 1); /* one period: one tablet */
	assert_int_equal(ts_flush(e->t, INT64_MAX), 0);
	snprintf(tabdir, sizeof tabdir, "%s/m/tablets", e->dir);
	assert_int_equal(ts_test_count_files(tabdir, ".tab"), 1);
	ts_test_env_close(e);
	snprintf(path, sizeof path, "%s/.tmp-0000000000000002.tab", tabdir);
	fclose(fopen(path, "w"));
	snprintf(path, sizeof path, "%s/00000000000000ff.tab", tabdir); /* never named */
	fclose(fopen(path, "w"));
	assert_int_equal(ts_test_count_files(tabdir, ".tab"), 3);
	ts_test_env_open(e);
	assert_int_equal(ts_test_count_files(tabdir, ".tab"), 1);
	ts_test_expect_model(e->t, &m, INT64_MIN);
	free(m.rows);
}

/* The maintenance pass flushes a tree that reached flush_size. */
static void maintain_flushes_by_size(void **state)
{
	ts_test_env *e = *state;
	ts_test_model m = {0};
	ts_test_env_close(e);
	e->flush_size = 64 << 10;
	ts_test_env_open(e);
	insert_rows(e, &m, 2000, 3600 * SEC, 1);     /* well over 64 kB: due */
	assert_int_equal(ts__db_maintain(e->db), 0);
	assert_int_equal(ts_test_stat(e->t, "tablets"), 1);
	assert_int_equal(ts_test_stat(e->t, "filling_tablets"), 0);
	insert_rows(e, &m, 10, 3600 * SEC, 2);       /* small: stays */
	assert_int_equal(ts__db_maintain(e->db), 0);
	assert_int_equal(ts_test_stat(e->t, "tablets"), 1);
	assert_int_equal(ts_test_stat(e->t, "filling_tablets"), 1);
	ts_test_expect_model(e->t, &m, INT64_MIN);
	free(m.rows);
}

/* A period that ends while its tree fills is flushed (roll-over); a tree
 * of late rows, begun after its period ended, waits for flush_age. */
static void maintain_flushes_at_period_end_and_age(void **state)
{
	ts_test_env *e = *state;
	ts_test_model m = {0};
	ts_test_env_set_now(e, NOW - 3600 * SEC);                /* 11:00, period 08:00-12:00 */
	test_row r = {.host = "h1", .ts = NOW - 2 * 3600 * SEC, .batch = 1, .v = 1};
	assert_int_equal(ts_test_insert_m(e->t, &r, 1), 0);
	ts_test_model_add(&m, &r, 1);
	assert_int_equal(ts__db_maintain(e->db), 0);
	assert_int_equal(ts_test_stat(e->t, "tablets"), 0);
	ts_test_env_set_now(e, NOW + SEC);                       /* 12:00:01: the period ended */
	assert_int_equal(ts__db_maintain(e->db), 0);
	assert_int_equal(ts_test_stat(e->t, "tablets"), 1);
	r.ts += SEC;                                 /* a late row for 10:00 */
	assert_int_equal(ts_test_insert_m(e->t, &r, 1), 0);
	ts_test_model_add(&m, &r, 1);
	assert_int_equal(ts__db_maintain(e->db), 0);
	assert_int_equal(ts_test_stat(e->t, "tablets"), 1);
	assert_int_equal(ts_test_stat(e->t, "filling_tablets"), 1);
	ts_test_env_set_now(e, NOW + SEC + 10 * 60 * SEC);       /* flush_age later */
	assert_int_equal(ts__db_maintain(e->db), 0);
	assert_int_equal(ts_test_stat(e->t, "tablets"), 2);
	assert_int_equal(ts_test_stat(e->t, "filling_tablets"), 0);
	ts_test_expect_model(e->t, &m, INT64_MIN);
	free(m.rows);
}

/* Rows at both ends of the int64 range: the first period begins below
 * INT64_MIN and starts at INT64_MIN (ts__period_of overflowed computing
 * it), the last one ends past INT64_MAX and ends there (the flush's
 * period end overflowed).  Findings of tests/fuzz/fuzz_tablet and
 * fuzz_log. */
static void flush_periods_at_the_int64_ends(void **state)
{
	ts_test_env *e = *state;
	test_row rows[2] = {{"a", INT64_MIN, 1, 1}, {"a", INT64_MAX - 2, 2, 2}};
	const int64_t hours4 = 4 * 3600 * SEC, week = 7 * DAY;
	ts_test_env_close(e); /* no merge: its delays are not made for 2262 */
	e->flags |= TS_OPEN_NOMERGE;
	ts_test_env_open(e);
	ts_test_env_set_now(e, INT64_MAX - SEC);
	assert_int_equal(ts_test_insert_m(e->t, rows, 2), 0);
	assert_int_equal(ts_flush(e->t, INT64_MAX), 0);
	ts__descriptor *d = NULL;
	char dir[4200];
	snprintf(dir, sizeof dir, "%s/m", e->dir);
	assert_int_equal(ts__descriptor_read(dir, &d), 0);
	assert_int_equal(d->ntablets, 2);
	for (int i = 0; i < 2; i++) {
		const ts__tablet_meta *m = &d->tablets[i];
		if (m->min_ts == INT64_MIN) {
			assert_int_equal(m->period_start, INT64_MIN);
			assert_int_equal(m->period_end, INT64_MIN + week);
		} else {
			assert_int_equal(m->min_ts, INT64_MAX - 2);
			assert_int_equal(m->period_start, INT64_MAX / hours4 * hours4);
			assert_int_equal(m->period_end, INT64_MAX);
		}
	}
	ts__descriptor_free(d, 1);
	ts_test_check_tablets(e->t);
	test_row *back;
	assert_int_equal(ts_test_read_m(e->t, &back), 2);
	assert_int_equal(back[0].ts, INT64_MIN);
	assert_int_equal(back[1].ts, INT64_MAX - 2);
	free(back);
}

int main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, setup, ts_test_env_teardown)
	const struct CMUnitTest tests[] = {
		T(flush_everything_round_trip),
		T(flush_only_older_than_before),
		T(flush_keeps_keys_unique),
		T(flush_while_the_period_fills),
		T(flush_translates_old_versions),
		T(flush_releases_the_log),
		T(flush_unmaps_released_segments_after_the_last_snapshot),
		T(flush_leftovers_removed_on_open),
		T(maintain_flushes_by_size),
		T(maintain_flushes_at_period_end_and_age),
		T(flush_periods_at_the_int64_ends),
	};
#undef T
	return cmocka_run_group_tests_name("flush", tests, NULL, NULL);
}
