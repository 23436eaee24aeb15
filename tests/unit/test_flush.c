/*
 * test_flush.c -- filling tablets written to on-disk tablets: every row
 * still read exactly once after a flush, a partial flush, a reopen, and a
 * flush of a period still being inserted into; uniqueness across filling
 * and on-disk tablets; rows of older schema versions translated; tablet
 * files that pass a full check; log segments released once flushed.
 */
#include <dirent.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "descriptor.h"
#include "handle.h"
#include "log.h"
#include "maint.h"
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
	/* the log's preparer deletes the released files after the flush,
	 * off the flushing thread: within a second, untouched */
	int after = before;
	for (int ms = 0; ms < 10000 && after > 2; ms += 10) {
		usleep(10000);
		after = ts_test_count_files(logdir, ".seg");
	}
	assert_true(after <= 2); /* the tail's segment and the one prepared */
	assert_int_equal(ts__log_drop_released(e->t->log), 0); /* nothing left */
	assert_int_equal(ts_test_count_files(logdir, ".seg"), after);
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
	assert_int_equal(ts__log_drop_released(e->t->log), 0); /* the preparer's work, now */
	int kept = ts_test_deleted_mappings(logdir);
	assert_true(kept >= 1); /* the snapshot's trees are in them */
	for (uint32_t i = 0; i < s.nroots; i++)
		assert_int_equal(ts__snapshot_scan(&s, i, count_rows, acc), 0);
	assert_int_equal(acc[0], (int64_t)m.n);
	ts__snapshot_release(&s);
	assert_int_equal(ts_test_deleted_mappings(logdir), 0);
	/* with no snapshot held, the next flush unmaps at once */
	for (int b = 401; b <= 800 && ts_test_count_files(logdir, ".seg") < 3; b++)
		insert_rows(e, &m, 5000, 3 * DAY, b);
	assert_int_equal(ts_flush(e->t, INT64_MAX), 0);
	assert_int_equal(ts__log_drop_released(e->t->log), 0);
	assert_int_equal(ts_test_deleted_mappings(logdir), 0);
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
	assert_int_equal(ts__maint_pass(e->db), 0);
	assert_int_equal(ts_test_stat(e->t, "tablets"), 1);
	assert_int_equal(ts_test_stat(e->t, "filling_tablets"), 0);
	insert_rows(e, &m, 10, 3600 * SEC, 2);       /* small: stays */
	assert_int_equal(ts__maint_pass(e->db), 0);
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
	assert_int_equal(ts__maint_pass(e->db), 0);
	assert_int_equal(ts_test_stat(e->t, "tablets"), 0);
	ts_test_env_set_now(e, NOW + SEC);                       /* 12:00:01: the period ended */
	assert_int_equal(ts__maint_pass(e->db), 0);
	assert_int_equal(ts_test_stat(e->t, "tablets"), 1);
	r.ts += SEC;                                 /* a late row for 10:00 */
	assert_int_equal(ts_test_insert_m(e->t, &r, 1), 0);
	ts_test_model_add(&m, &r, 1);
	assert_int_equal(ts__maint_pass(e->db), 0);
	assert_int_equal(ts_test_stat(e->t, "tablets"), 1);
	assert_int_equal(ts_test_stat(e->t, "filling_tablets"), 1);
	ts_test_env_set_now(e, NOW + SEC + 10 * 60 * SEC);       /* flush_age later */
	assert_int_equal(ts__maint_pass(e->db), 0);
	assert_int_equal(ts_test_stat(e->t, "tablets"), 2);
	assert_int_equal(ts_test_stat(e->t, "filling_tablets"), 0);
	ts_test_expect_model(e->t, &m, INT64_MIN);
	free(m.rows);
}

/* A tree found in the log when the table is opened again keeps its age:
 * it counts from the newest commit's time, not from the open, so a
 * writer reopened every few minutes still flushes it at flush_age (it
 * used to start counting again at each open). */
static void a_reopened_tree_keeps_its_age(void **state)
{
	ts_test_env *e = *state;
	ts_test_model m = {0};
	ts_test_env_set_now(e, NOW);                             /* 12:00, period 12:00-16:00 */
	test_row r = {.host = "h1", .ts = NOW, .batch = 1, .v = 1};
	assert_int_equal(ts_test_insert_m(e->t, &r, 1), 0);
	ts_test_model_add(&m, &r, 1);
	ts_test_env_set_now(e, NOW + 9 * 60 * SEC);              /* 9 minutes on: not due */
	ts_test_env_reopen(e);
	assert_int_equal(ts__maint_pass(e->db), 0);
	assert_int_equal(ts_test_stat(e->t, "tablets"), 0);
	ts_test_env_set_now(e, NOW + 10 * 60 * SEC);             /* flush_age after the commit */
	assert_int_equal(ts__maint_pass(e->db), 0);
	assert_int_equal(ts_test_stat(e->t, "tablets"), 1);
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

/* ---- failing flushes: backoff, once-per-cause logging, the log cap ---- */

/* The maintenance clock of the backoff, moved by the tests. */
static int64_t mono_now;
static int64_t test_mono(void)
{
	return __atomic_load_n(&mono_now, __ATOMIC_RELAXED);
}

static void advance_mono(int64_t ns)
{
	__atomic_add_fetch(&mono_now, ns, __ATOMIC_RELAXED);
}

/* Messages the library logged (ts_options.log). */
static int nlogged;
static char last_logged[2048];
static void count_log(void *arg, const char *msg)
{
	(void)arg;
	__atomic_add_fetch(&nlogged, 1, __ATOMIC_RELAXED);
	snprintf(last_logged, sizeof last_logged, "%s", msg);
}

/* Make every flush of table m fail: its tablets directory becomes a file
 * (a flush then cannot create its tablet), or is put back. */
static void break_tablets(ts_test_env *e, int broken)
{
	char dir[4200], aside[4300];
	snprintf(dir, sizeof dir, "%s/m/tablets", e->dir);
	snprintf(aside, sizeof aside, "%s/m/tablets.aside", e->dir);
	if (broken) {
		assert_int_equal(rename(dir, aside), 0);
		FILE *f = fopen(dir, "w");
		assert_non_null(f);
		fclose(f);
	} else {
		assert_int_equal(unlink(dir), 0);
		assert_int_equal(rename(aside, dir), 0);
	}
}

/* Run maintenance passes until flush_failures reaches want (another pass,
 * or the maintenance thread, may be trying the flush meanwhile), then
 * 50 more passes: each failure is counted once, and no pass retries
 * before the backoff has passed on the test's clock. */
static void expect_failures(ts_test_env *e, int64_t want)
{
	for (int i = 0; i < 100000 && ts_test_stat(e->t, "flush_failures") < want; i++)
		ts__maint_pass(e->db);
	assert_int_equal(ts_test_stat(e->t, "flush_failures"), want);
	for (int i = 0; i < 50; i++)
		ts__maint_pass(e->db);
	assert_int_equal(ts_test_stat(e->t, "flush_failures"), want);
}

static void reopen_for_failures(ts_test_env *e, int64_t log_cap)
{
	ts_test_env_close(e);
	e->log = count_log;
	e->log_cap = log_cap;
	nlogged = 0;
	last_logged[0] = '\0';
	mono_now = 1000 * SEC;
	ts_test_env_open(e);
	e->db->maint.clock = test_mono;
}

/* A flush that keeps failing is tried again after 1 s, 2 s, 4 s ... up to
 * 64 s of the maintenance clock, never on every pass (it used to be: 100%
 * CPU); it is logged once, counted in stats with its error, and the rows
 * stay readable; once the cause is gone the next try succeeds. */
static void maintain_backs_off_a_failing_flush(void **state)
{
	ts_test_env *e = *state;
	ts_test_model m = {0};
	reopen_for_failures(e, 0);
	insert_rows(e, &m, 100, 3600 * SEC, 1);
	break_tablets(e, 1);
	ts_test_env_set_now(e, NOW + 11 * 60 * SEC); /* flush_age passed: due */
	expect_failures(e, 1);
	assert_int_equal(ts_test_stat(e->t, "flush_last_error"), TS_ENOENT); /* ENOTDIR */
	advance_mono(SEC - 1);                        /* not yet */
	expect_failures(e, 1);
	advance_mono(1);                              /* 1 s after the first */
	expect_failures(e, 2);
	advance_mono(SEC);                            /* the delay is 2 s now */
	expect_failures(e, 2);
	advance_mono(SEC);
	expect_failures(e, 3);
	int64_t total = 3;
	for (int64_t d = 4 * SEC; d <= 64 * SEC; d *= 2) { /* 4, 8, 16, 32, 64 s */
		advance_mono(d - 1);
		expect_failures(e, total);
		advance_mono(1);
		expect_failures(e, ++total);
	}
	advance_mono(64 * SEC);                       /* capped at 64 s */
	expect_failures(e, ++total);
	assert_int_equal(nlogged, 1);                 /* one cause, logged once */
	assert_non_null(strstr(last_logged, "table \"m\": flush failed, retrying with backoff: "));
	assert_non_null(strstr(last_logged, "tablets"));
	ts_test_expect_model(e->t, &m, INT64_MIN);    /* still readable */
	break_tablets(e, 0);
	advance_mono(64 * SEC);
	for (int i = 0; i < 100000 && ts_test_stat(e->t, "filling_tablets") > 0; i++)
		ts__maint_pass(e->db);
	assert_int_equal(ts_test_stat(e->t, "filling_tablets"), 0);
	assert_int_equal(ts_test_stat(e->t, "flush_failures"), total);
	assert_int_equal(ts_test_stat(e->t, "flush_last_error"), 0);
	assert_int_equal(nlogged, 1);
	ts_test_expect_model(e->t, &m, INT64_MIN);
	free(m.rows);
}

/* While flushes fail the log reaches log_cap: inserts then fail with
 * TS_ENOSPC naming the cap and the flushes' cause (they used to go on
 * until the disk was full); once a flush succeeds they go on. */
static void insert_refused_at_the_log_cap(void **state)
{
	ts_test_env *e = *state;
	ts_test_model m = {0};
	reopen_for_failures(e, 1 << 20);
	break_tablets(e, 1);
	int rc = 0, b;
	for (b = 1; b < 1000 && rc == 0; b++) {
		test_row r[100];
		memset(r, 0, sizeof r);
		for (int i = 0; i < 100; i++) {
			snprintf(r[i].host, sizeof r[i].host, "h%02d", i % 30);
			r[i].ts = NOW - 3600 * SEC + b * 1000 + i;
			r[i].batch = b;
			r[i].v = i;
		}
		if ((rc = ts_test_insert_m(e->t, r, 100)) == 0)
			ts_test_model_add(&m, r, 100);
		ts__maint_pass(e->db);
	}
	assert_int_equal(rc, TS_ENOSPC);
	if (!strstr(ts_errmsg(NULL), "the log of table \"m\" is at its cap of 1 MiB because flushes "
	                              "fail: ") || !strstr(ts_errmsg(NULL), "tablets"))
		fail_msg("message: %s", ts_errmsg(NULL));
	assert_true(ts_test_stat(e->t, "log_bytes") >= 1 << 20);
	assert_int_equal(ts_test_stat(e->t, "log_cap_refusals"), 1);
	assert_true(ts_test_stat(e->t, "flush_failures") >= 1);
	ts_test_expect_model(e->t, &m, INT64_MIN);
	break_tablets(e, 0);
	assert_int_equal(ts_flush(e->t, INT64_MAX), 0);
	assert_true(ts_test_stat(e->t, "log_bytes") < 1 << 20);
	insert_rows(e, &m, 100, 3600 * SEC, 5000 % 100000);
	ts_test_expect_model(e->t, &m, INT64_MIN);
	free(m.rows);
}

/* Holds a table's flush_mu for 300 ms, as a flush slower than the
 * writer would: no other flush can run meanwhile. */
struct slow_flush {
	ts_table *t;
	int holding; /* atomic */
};

static void *hold_flushes(void *arg)
{
	struct slow_flush *f = arg;
	pthread_mutex_lock(&f->t->flush_mu);
	__atomic_store_n(&f->holding, 1, __ATOMIC_RELEASE);
	struct timespec nap = {0, 300 * 1000000L};
	nanosleep(&nap, NULL);
	pthread_mutex_unlock(&f->t->flush_mu);
	return NULL;
}

/* Reopen e's table with log_cap cap, and hold its flushes for 300 ms on
 * thread *th (hold_flushes), returning once they are held. */
static void reopen_holding_flushes(ts_test_env *e, int64_t cap, struct slow_flush *f,
                                   pthread_t *th)
{
	memset(f, 0, sizeof *f);
	ts_test_env_close(e);
	e->log_cap = cap;
	ts_test_env_open(e);
	f->t = e->t;
	assert_int_equal(pthread_create(th, NULL, hold_flushes, f), 0);
	while (!__atomic_load_n(&f->holding, __ATOMIC_ACQUIRE))
		sched_yield();
}

/* A writer faster than the flushes: inserts into a log capped at 1 MiB
 * while no flush can run for 300 ms.  The insert that finds the log past
 * three quarters of the cap waits for the flushes to release it
 * (log_stalls, log_stall_ns) instead of failing at the cap with
 * TS_ENOSPC, as it did: every batch is stored. */
static void fast_writer_waits_for_flushes(void **state)
{
	ts_test_env *e = *state;
	ts_test_model m = {0};
	static struct slow_flush f; /* outlives a failed assertion's longjmp */
	pthread_t th;
	reopen_holding_flushes(e, 1 << 20, &f, &th);
	for (int b = 1; b <= 60; b++) /* about 4 MiB of log: past the cap */
		insert_rows(e, &m, 100, 3600 * SEC, b);
	assert_int_equal(pthread_join(th, NULL), 0);
	assert_int_equal(ts_test_stat(e->t, "log_cap_refusals"), 0);
	assert_true(ts_test_stat(e->t, "log_stalls") >= 1);
	assert_true(ts_test_stat(e->t, "log_stall_ns") > 0);
	assert_true(ts_test_stat(e->t, "flushes") >= 1);
	ts_test_expect_model(e->t, &m, INT64_MIN);
	free(m.rows);
}

/* The slope before the wall: inserts into a log capped at 1 MiB while
 * no flush can run for 300 ms.  Batches that begin below an eighth of
 * the cap sleep nothing; past it each row owes a pause in proportion to
 * the log past that point (at most TS_LOG_PACE_ROW_NS a row), slept a
 * millisecond at a time -- before the log reaches the wall at three
 * quarters of the cap, where inserts used to run at full speed and then
 * wait there for the whole flush. */
static void fast_writer_slows_before_the_wall(void **state)
{
	ts_test_env *e = *state;
	ts_test_model m = {0};
	static struct slow_flush f; /* outlives a failed assertion's longjmp */
	pthread_t th;
	int64_t cap = 1 << 20, paced = 0, rows = 0;
	reopen_holding_flushes(e, cap, &f, &th);
	for (int b = 1; ts_test_stat(e->t, "log_bytes") < cap / 4 * 3; b++) {
		assert_true(b < 5000); /* the flushes held: the log grows */
		int64_t before = ts_test_stat(e->t, "log_bytes");
		insert_rows(e, &m, 20, 3600 * SEC, b);
		paced = ts_test_stat(e->t, "log_paced_ns");
		if (before <= cap / TS_LOG_PACE_DEN)
			assert_int_equal(paced, 0);      /* below the slope: at full speed */
		else
			rows += 20;
		assert_int_equal(ts_test_stat(e->t, "log_stalls"), 0); /* not at the wall yet */
	}
	/* every row past the slope owed at most TS_LOG_PACE_ROW_NS, and
	 * together at least a step of TS_LOG_STALL_STEP_NS was slept */
	assert_true(paced >= TS_LOG_STALL_STEP_NS);
	assert_true(paced <= rows * TS_LOG_PACE_ROW_NS + 300 * 1000000L);
	assert_int_equal(pthread_join(th, NULL), 0);
	assert_int_equal(ts_test_stat(e->t, "log_cap_refusals"), 0);
	ts_test_expect_model(e->t, &m, INT64_MIN);
	free(m.rows);
}

/* From an eighth of log_cap on, where inserts begin to slow, every
 * tree is due whatever its size and age: trees of the last two days,
 * far short of flush_size, none of whose periods ended while it filled,
 * are flushed by the next pass.  They used to hold the log until half
 * of the cap, while the slope slowed the writer. */
static void every_tree_flushed_from_an_eighth_of_the_cap(void **state)
{
	ts_test_env *e = *state;
	ts_test_model m = {0};
	int64_t cap = 1 << 20;
	ts_test_env_close(e);
	e->log_cap = cap;
	ts_test_env_open(e);
	ts__maint_pass(e->db);
	assert_int_equal(ts_test_stat(e->t, "flushes"), 0);
	for (int b = 1; ts_test_stat(e->t, "log_bytes") <= cap / TS_LOG_PACE_DEN; b++)
		insert_rows(e, &m, 20, 2 * DAY, b);
	assert_true(ts_test_stat(e->t, "log_bytes") < cap / 2);
	ts__maint_pass(e->db); /* (the thread's own may have come first) */
	assert_int_equal(ts_test_stat(e->t, "filling_tablets"), 0);
	assert_true(ts_test_stat(e->t, "flushes") >= 1);
	ts_test_expect_model(e->t, &m, INT64_MIN);
	free(m.rows);
}

/* A table of 1000 int32 columns, one row per series: each block's index
 * entry (40 bytes of statistics per column) is ten times the row, and the
 * footer of a flush of 56 MB of rows passed TS_TABLET_FOOTER_MAX (ETOOBIG,
 * forever).  Blocks now grow with their entry. */
static void flush_wide_table_footer_fits(void **state)
{
	ts_test_env *e = *state;
	enum { NCOL = 1000, NROW = 14000, BATCH = 50 };
	static ts_column cols[NCOL + 2];
	static char names[NCOL][16];
	const char *key[] = {"host", "ts"};
	ts_table *t;
	ts_test_env_close(e);
	e->flush_size = INT64_C(1) << 30; /* one tablet of all the rows */
	ts_test_env_open(e);
	cols[0] = (ts_column){"host", TS_STRING, {TS_NONE, {0}}};
	cols[1] = (ts_column){"ts", TS_TIMESTAMP, {TS_NONE, {0}}};
	for (int c = 0; c < NCOL; c++) {
		snprintf(names[c], sizeof names[c], "c%d", c);
		cols[c + 2] = (ts_column){names[c], TS_INT32, {TS_NONE, {0}}};
	}
	assert_int_equal(ts_create_keyed(e->db, "wide", cols, NCOL + 2, key, 2, 0), 0);
	assert_int_equal(ts_table_open(e->db, "wide", &t), 0);
	ts_value *v = calloc((size_t)BATCH * (NCOL + 2), sizeof *v);
	char hosts[BATCH][16];
	assert_non_null(v);
	for (int r = 0; r < NROW; r += BATCH) {
		for (int i = 0; i < BATCH; i++) {
			ts_value *row = v + (size_t)i * (NCOL + 2);
			snprintf(hosts[i], sizeof hosts[i], "h%06d", r + i);
			row[0] = ts_string(hosts[i]);
			row[1] = ts_timestamp(NOW - 3600 * SEC);
			for (int c = 0; c < NCOL; c++)
				row[c + 2] = ts_int32((r + i) * 7 + c);
		}
		if (ts_insert(t, v, BATCH) != 0)
			fail_msg("insert: %s", ts_errmsg(NULL));
	}
	free(v);
	if (ts_flush(t, INT64_MAX) != 0)
		fail_msg("flush: %s", ts_errmsg(NULL));
	assert_int_equal(ts_test_stat(t, "tablets"), 1);
	assert_int_equal(ts_test_stat(t, "tablet_rows"), NROW);
	ts_cursor *cur;
	const ts_value *row;
	int64_t n = 0;
	assert_int_equal(ts_query_open(t, &(ts_query){0}, &cur), 0);
	while (ts_cursor_next(cur, &row, NULL) == 0 && row) {
		char want[16];
		snprintf(want, sizeof want, "h%06d", (int)n);
		assert_int_equal(row[0].v.s.len, 7);
		assert_memory_equal(row[0].v.s.ptr, want, 7);
		assert_int_equal(row[NCOL + 1].v.i, n * 7 + NCOL - 1);
		n++;
	}
	ts_cursor_close(cur);
	assert_int_equal(n, NROW);
	ts_table_close(t);
}

/* A table created under log_segment_size 1 MiB writes 1 MiB segments
 * (the 64 MiB default made a nearly full disk refuse every first insert);
 * its rows survive a reopen, a check and a backup; reopened under another
 * size, its log keeps the size it began with. */
static void log_segment_size_chosen_at_open(void **state)
{
	ts_test_env *e = *state;
	ts_test_model m = {0};
	char logdir[4200], seg[4300], bk[4300];
	struct stat st;
	ts_test_env_close(e);
	e->log_segment_size = 1 << 20;
	ts_test_env_open(e);                 /* m has no segment yet: it takes 1 MiB */
	for (int b = 1; b <= 12; b++)
		insert_rows(e, &m, 2000, 3600 * SEC, b);
	snprintf(logdir, sizeof logdir, "%s/m/log", e->dir);
	int nseg = ts_test_count_files(logdir, ".seg");
	assert_true(nseg >= 4);              /* about 4.5 MiB of log */
	snprintf(seg, sizeof seg, "%s/0000000000000002.seg", logdir);
	assert_int_equal(stat(seg, &st), 0);
	assert_int_equal(st.st_size, 4096 + (1 << 20));
	assert_true(ts_test_stat(e->t, "log_bytes") > 4 << 20);
	ts_test_env_close(e);
	e->log_segment_size = 4 << 20;       /* the log keeps its 1 MiB */
	ts_test_env_open(e);
	ts_test_expect_model(e->t, &m, INT64_MIN);
	for (int b = 13; b <= 16; b++)
		insert_rows(e, &m, 2000, 3600 * SEC, b);
	assert_true(ts_test_count_files(logdir, ".seg") > nseg);
	snprintf(seg, sizeof seg, "%s/%016llx.seg", logdir, /* the tail's, made after the reopen */
	         (unsigned long long)ts_test_stat(e->t, "log_tail_lsn") >> 20);
	assert_int_equal(stat(seg, &st), 0);
	assert_int_equal(st.st_size, 4096 + (1 << 20));
	ts_test_expect_model(e->t, &m, INT64_MIN);
	assert_int_equal(ts_check(e->db, NULL, NULL), 0);
	char *out = ts_test_tmpdir();
	snprintf(bk, sizeof bk, "%s/copy", out);
	assert_int_equal(ts_backup(e->db, bk), 0);
	ts_test_env_close(e);
	char *orig = e->dir;
	e->dir = bk;                          /* the copy, with its 1 MiB segments */
	ts_test_env_open(e);
	ts_test_expect_model(e->t, &m, INT64_MIN);
	assert_int_equal(ts_flush(e->t, INT64_MAX), 0);
	ts_test_expect_model(e->t, &m, INT64_MIN);
	ts_test_env_close(e);
	e->dir = orig;
	ts_test_rmdir(out);
	ts_test_env_open(e);
	free(m.rows);
}

/* A flush whose blocks are compressed on 1, 2 or 3 threads (flush_threads)
 * writes the same tablet files, byte for byte, from the same rows. */
static void flush_threads_write_the_same_tablets(void **state)
{
	ts_test_env *e[3] = {*state, ts_test_env_new_held(NOW), ts_test_env_new_held(NOW)};
	ts_test_model m[3] = {{0}};
	char cmd[9000];
	for (int k = 0; k < 3; k++) {
		ts_test_env_close(e[k]);
		e[k]->flush_threads = k + 1;
		ts_test_env_open(e[k]);
		assert_int_equal(ts_test_stat(e[k]->t, "setting_flush_threads"), k + 1);
		rng = 0x9E3779B97F4A7C15u;
		for (int b = 1; b <= 20; b++) /* about 60 blocks, three periods */
			insert_rows(e[k], &m[k], 5000, 3 * DAY, b);
		assert_int_equal(ts_flush(e[k]->t, INT64_MAX), 0);
		assert_true(ts_test_stat(e[k]->t, "tablets") >= 2);
		ts_test_expect_model(e[k]->t, &m[k], INT64_MIN);
		ts_test_check_tablets(e[k]->t);
		free(m[k].rows);
	}
	for (int k = 1; k < 3; k++) {
		snprintf(cmd, sizeof cmd, "diff -r '%s/m/tablets' '%s/m/tablets'", e[0]->dir, e[k]->dir);
		assert_int_equal(system(cmd), 0);
		void *st = e[k];
		ts_test_env_teardown(&st);
	}
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
	T(a_reopened_tree_keeps_its_age),
		T(flush_periods_at_the_int64_ends),
		T(maintain_backs_off_a_failing_flush),
		T(insert_refused_at_the_log_cap),
		T(fast_writer_waits_for_flushes),
		T(fast_writer_slows_before_the_wall),
		T(every_tree_flushed_from_an_eighth_of_the_cap),
		T(flush_wide_table_footer_fits),
		T(log_segment_size_chosen_at_open),
		T(flush_threads_write_the_same_tablets),
	};
#undef T
	return cmocka_run_group_tests_name("flush", tests, NULL, NULL);
}
