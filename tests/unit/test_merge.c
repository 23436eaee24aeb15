/*
 * test_merge.c -- what happens to on-disk tablets after their flush:
 * LittleTable's merge rule on sizes (exact picks, and the logarithmic
 * bounds of its appendix on random sequences); merges that keep every
 * row exactly once, translate old schema versions and drop rows past the
 * TTL; the merge delay and the roll-over of periods under an injected
 * clock; TTL expiry of whole tablets; quarantine of damaged tablets; and
 * readers, in this process and another, that keep reading correctly
 * while tablets are merged and deleted under them.
 */
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "bcache.h"
#include "handle.h"
#include "maint.h"
#include "merge.h"
#include "period.h"
#include "snapshot.h"
#include "support.h"
#include "tablet.h"
#include "tablet_format.h"

#define NOW INT64_C(1795262400000000000) /* 2026-11-21T12:00:00Z, a Saturday */
#define SEC INT64_C(1000000000)
#define HOUR (3600 * SEC)
#define DAY (24 * HOUR)

static uint64_t rng = 0x2545F4914F6CDD1Du;
static uint64_t rnd(void) { return ts_test_xorshift(&rng); }

/* The tests merge and expire when they say so, and count what each
 * step did: the maintenance thread (which expires, and takes the merge
 * lock to do it) is held, so that no step of theirs meets it. */
static int setup(void **state)
{
	*state = ts_test_env_new_held(NOW);
	return 0;
}

/* n rows with ts in [from, from + span), distinct by construction (the
 * ns part numbers the batch and row), inserted and added to m. */
static void insert_span(ts_test_env *e, ts_test_model *m, int n, int64_t from, int64_t span,
                        int64_t batch)
{
	test_row *r = calloc((size_t)n, sizeof *r);
	assert_true(n < 10000 && batch < 100000);
	for (int i = 0; i < n; i++) {
		snprintf(r[i].host, sizeof r[i].host, "h%02d", (int)(rnd() % 20));
		r[i].ts = from + (int64_t)(rnd() % (uint64_t)(span / SEC)) * SEC + batch * 10000 + i;
		r[i].batch = batch;
		r[i].v = (int64_t)rnd() % 1000;
	}
	if (ts_test_insert_m(e->t, r, (size_t)n) != 0)
		fail_msg("insert: %s", ts_errmsg(NULL));
	ts_test_model_add(m, r, (size_t)n);
	free(r);
}

static void tablets_dir(const ts_test_env *e, char *out, size_t size)
{
	snprintf(out, size, "%s/m/tablets", e->dir);
}

/* The descriptor's tablets, copied. */
static int tablet_metas(ts_test_env *e, ts__tablet_meta **out)
{
	ts__snapshot s;
	assert_int_equal(ts__snapshot_take(e->t, &s), 0);
	int n = s.ntablets;
	*out = malloc((size_t)(n ? n : 1) * sizeof **out);
	memcpy(*out, s.metas, (size_t)n * sizeof **out);
	ts__snapshot_release(&s);
	return n;
}

/* ---- the rule on sizes ---- */

static void merge_pick_exact(void **state)
{
	(void)state;
	int first = -1;
	uint64_t a[] = {100, 40};
	assert_int_equal(ts__merge_pick(a, 2, 1000, &first), 0); /* 100 > 2 * 40 */
	uint64_t b[] = {100, 50};
	assert_int_equal(ts__merge_pick(b, 2, 1000, &first), 2);
	assert_int_equal(first, 0);
	uint64_t c[] = {10, 100, 50, 30};
	assert_int_equal(ts__merge_pick(c, 4, 1000, &first), 4); /* and the newer ones */
	assert_int_equal(first, 0);
	assert_int_equal(ts__merge_pick(c, 4, 170, &first), 3);  /* up to the maximum */
	assert_int_equal(first, 0);
	uint64_t d[] = {1000, 10, 6, 2};
	assert_int_equal(ts__merge_pick(d, 4, 5000, &first), 3);
	assert_int_equal(first, 1);
	assert_int_equal(ts__merge_pick(d, 4, 17, &first), 2);    /* 10 + 6, not + 2 */
	assert_int_equal(first, 1);
	uint64_t f[] = {60, 60};
	assert_int_equal(ts__merge_pick(f, 2, 100, &first), 0);   /* would pass max */
	assert_int_equal(ts__merge_pick(f, 1, 1000, &first), 0);
	assert_int_equal(ts__merge_pick(f, 0, 1000, &first), 0);
}

/* Apply the rule to sizes[0..*n) until it finds nothing; returns bytes
 * written by the merges. */
static uint64_t settle(uint64_t *sizes, int *n, uint64_t max)
{
	uint64_t written = 0;
	int first, k;
	while ((k = ts__merge_pick(sizes, *n, max, &first)) > 0) {
		uint64_t sum = 0;
		for (int i = first; i < first + k; i++)
			sum += sizes[i];
		sizes[first] = sum;
		memmove(sizes + first + 1, sizes + first + k, (size_t)(*n - first - k) * sizeof *sizes);
		*n -= k - 1;
		written += sum;
	}
	return written;
}

/* Random flush sizes, appended one at a time and settled each time, as
 * the merger does: every adjacent pair then more than halves (or could
 * not merge under max), so a period holds at most 1 + log2(total/min)
 * tablets below max, and each byte is rewritten O(log) times. */
static void merge_pick_logarithmic_bounds(void **state)
{
	(void)state;
	enum { FLUSHES = 3000 };
	static uint64_t sizes[FLUSHES];
	for (int trial = 0; trial < 20; trial++) {
		uint64_t max = trial % 2 ? UINT64_MAX / 4 : 4000000, total = 0, written = 0;
		uint64_t lo = 1000 + rnd() % 1000, spread = 1 + rnd() % 20000;
		int n = 0;
		for (int f = 0; f < FLUSHES; f++) {
			sizes[n++] = lo + rnd() % spread;
			total += sizes[n - 1];
			written += settle(sizes, &n, max);
			int below = 0;
			for (int i = 0; i + 1 < n; i++) {
				int ok = sizes[i] > 2 * sizes[i + 1] || sizes[i] + sizes[i + 1] > max;
				if (!ok)
					fail_msg("trial %d flush %d: tablets %d, %d: %llu then %llu", trial, f, i,
					         i + 1, (unsigned long long)sizes[i],
					         (unsigned long long)sizes[i + 1]);
				below += sizes[i] + sizes[i + 1] <= max;
			}
			if (n > ts__merge_bound(sizes, n, max)) /* settled is never behind */
				fail_msg("trial %d flush %d: %d tablets settled, bound %d", trial, f, n,
				         ts__merge_bound(sizes, n, max));
			double bound = 1 + log2((double)total / (double)lo);
			if (max > total && n > bound)
				fail_msg("trial %d: %d tablets for %llu bytes (bound %.1f)", trial, n,
				         (unsigned long long)total, bound);
			(void)below;
		}
		/* each byte written once by its flush, then at most
		 * log2(flushes) + 2 times by merges */
		double amp = (double)written / (double)total;
		if (amp > log2((double)FLUSHES) + 2)
			fail_msg("trial %d: write amplification %.2f", trial, amp);
		if (max < total) { /* with a maximum: tablets near it stop merging */
			int big = 0;
			for (int i = 0; i < n; i++)
				big += sizes[i] > max / 3;
			assert_true(n <= big + 2 + (int)log2((double)max / (double)lo) * 2);
		}
	}
}

/* ---- merging ---- */

/* Many flushes into one 4-hour period, then ts_merge: every row once,
 * far fewer tablets, files on disk as the descriptor says; and again
 * after a reopen. */
static void merge_round_trip(void **state)
{
	ts_test_env *e = *state;
	ts_test_model m = {0};
	char dir[4200];
	tablets_dir(e, dir, sizeof dir);
	for (int b = 1; b <= 24; b++) {
		insert_span(e, &m, 50 + (int)(rnd() % 400), NOW - 2 * HOUR, HOUR, b);
		assert_int_equal(ts_flush(e->t, INT64_MAX), 0);
	}
	assert_int_equal(ts_test_stat(e->t, "tablets"), 24);
	/* all within merge_delay, but 24 tablets of a period are more than
	 * LittleTable's rule leaves (ts__merge_bound): due at once */
	assert_true(ts_test_stat(e->t, "merge_backlog_tablets") >= 2);
	int merged = 0;
	assert_int_equal(ts_merge(e->t, &merged), 0);
	assert_true(merged >= 1);
	int64_t tablets = ts_test_stat(e->t, "tablets");
	assert_true(tablets >= 1 && tablets <= 5);
	assert_int_equal(ts_test_stat(e->t, "merges"), merged);
	assert_int_equal(ts_test_stat(e->t, "tablet_rows"), (int64_t)m.n);
	assert_int_equal(ts_test_count_files(dir, ".tab"), tablets);
	assert_true(ts_test_stat(e->t, "write_amplification_milli") > 1000);
	ts_test_expect_model(e->t, &m, INT64_MIN);
	ts_test_check_tablets(e->t);
	assert_int_equal(ts_merge(e->t, &merged), 0); /* settled: nothing more */
	assert_int_equal(merged, 0);
	ts_test_env_reopen(e);
	ts_test_expect_model(e->t, &m, INT64_MIN);
	assert_int_equal(ts_test_stat(e->t, "tablets"), tablets);
	free(m.rows);
}

/* Keys stay unique across merged tablets. */
static void merge_keeps_keys_unique(void **state)
{
	ts_test_env *e = *state;
	ts_test_model m = {0};
	for (int b = 1; b <= 4; b++) {
		insert_span(e, &m, 100, NOW - 3 * HOUR, 2 * HOUR, b);
		assert_int_equal(ts_flush(e->t, INT64_MAX), 0);
	}
	assert_int_equal(ts_merge(e->t, NULL), 0);
	test_row again = m.rows[m.n / 2];
	assert_int_equal(ts_test_insert_m(e->t, &again, 1), TS_EDUPKEY);
	again.ts++;
	assert_int_equal(ts_test_insert_m(e->t, &again, 1), 0);
	ts_test_model_add(&m, &again, 1);
	ts_test_expect_model(e->t, &m, INT64_MIN);
	free(m.rows);
}

/* Tablets of schema versions 1 and 2 merge into one of version 2. */
static void merge_translates_old_versions(void **state)
{
	ts_test_env *e = *state;
	ts_test_model m = {0};
	insert_span(e, &m, 60, NOW - 2 * HOUR, HOUR, 1);
	assert_int_equal(ts_flush(e->t, INT64_MAX), 0);
	ts_column extra = {"extra", TS_INT64, {TS_INT64, {.i = 7}}};
	assert_int_equal(ts_alter_add(e->t, &extra), 0);
	for (int i = 0; i < 40; i++) {
		ts_value row[5] = {ts_string("zz"), ts_timestamp(NOW - HOUR + i), ts_int64(0),
		                   ts_int64(0), ts_int64(1000)};
		assert_int_equal(ts_insert(e->t, row, 1), 0);
	}
	assert_int_equal(ts_flush(e->t, INT64_MAX), 0);
	int merged;
	assert_int_equal(ts_merge(e->t, &merged), 0);
	assert_int_equal(merged, 1);
	ts__snapshot s;
	int64_t acc[2] = {0, 0};
	assert_int_equal(ts__snapshot_take(e->t, &s), 0);
	assert_int_equal(s.ntablets, 1);
	assert_int_equal(s.tablets[0]->schema_version, 2);
	assert_int_equal(ts__snapshot_scan_tablet(&s, 0, ts_test_sum_fifth, acc), 0);
	ts__snapshot_release(&s);
	assert_int_equal(acc[0], 100);
	assert_int_equal(acc[1], 60 * 7 + 40 * 1000);
	ts_test_check_tablets(e->t);
	free(m.rows);
}

/* The most tablets the rule leaves in a period: those above max / 2, and
 * floor(log2(bytes / smallest)) + 2 of the others. */
static void merge_bound_exact(void **state)
{
	(void)state;
	static const uint64_t equal[] = {100, 100, 100, 100, 100};
	static const uint64_t halving[] = {400, 200, 100, 50};
	static const uint64_t one_full[] = {800, 100};
	static const uint64_t all_full[] = {600, 600};
	assert_int_equal(ts__merge_bound(equal, 1, 1000), 2);
	assert_int_equal(ts__merge_bound(equal, 3, 1000), 3);
	assert_int_equal(ts__merge_bound(equal, 4, 1000), 4);
	assert_int_equal(ts__merge_bound(equal, 5, 1000), 4); /* five: behind */
	assert_int_equal(ts__merge_bound(halving, 4, 1000), 5); /* 750 / 50: 3 + 2 */
	assert_int_equal(ts__merge_bound(one_full, 2, 1000), 3);
	assert_int_equal(ts__merge_bound(all_full, 2, 1000), 2);
	assert_int_equal(ts__merge_bound(equal, 0, 1000), 0);
}

/* A period behind the rule merges within merge_delay: five equal
 * tablets flushed at one instant are one more than ts__merge_bound
 * allows, and merge at once; three wait (merge_waits_after_flush). */
static void merge_behind_does_not_wait(void **state)
{
	ts_test_env *e = *state;
	ts_test_model m = {0};
	for (int b = 1; b <= 4; b++) {
		insert_span(e, &m, 100, NOW - 2 * HOUR, HOUR, b);
		assert_int_equal(ts_flush(e->t, INT64_MAX), 0);
	}
	assert_int_equal(ts__merge_due(e->t, NULL), 0); /* four: within the bound */
	insert_span(e, &m, 100, NOW - 2 * HOUR, HOUR, 5);
	assert_int_equal(ts_flush(e->t, INT64_MAX), 0);
	assert_int_equal(ts_test_stat(e->t, "merge_backlog_tablets"), 5);
	assert_int_equal(ts__merge_due(e->t, NULL), 1);
	assert_int_equal(ts_test_stat(e->t, "tablets"), 1);
	assert_int_equal(ts__merge_due(e->t, NULL), 0);
	ts_test_expect_model(e->t, &m, INT64_MIN);
	ts_test_check_tablets(e->t);
	free(m.rows);
}

/* The background merger waits merge_delay after a tablet's flush. */
static void merge_waits_after_flush(void **state)
{
	ts_test_env *e = *state;
	ts_test_model m = {0};
	for (int b = 1; b <= 3; b++) {
		insert_span(e, &m, 100, NOW - 2 * HOUR, HOUR, b);
		assert_int_equal(ts_flush(e->t, INT64_MAX), 0);
	}
	assert_int_equal(ts__merge_due(e->t, NULL), 0);
	assert_int_equal(ts_test_stat(e->t, "merge_backlog_tablets"), 0);
	ts_test_env_set_now(e, NOW + 89 * SEC);
	assert_int_equal(ts__merge_due(e->t, NULL), 0);
	ts_test_env_set_now(e, NOW + 90 * SEC); /* the default merge_delay */
	assert_int_equal(ts_test_stat(e->t, "merge_backlog_tablets"), 3);
	assert_int_equal(ts__merge_due(e->t, NULL), 1);
	assert_int_equal(ts_test_stat(e->t, "tablets"), 1);
	assert_int_equal(ts__merge_due(e->t, NULL), 0);
	ts_test_expect_model(e->t, &m, INT64_MIN);
	free(m.rows);
}

/* Different periods never merge; when yesterday's 4-hour periods join
 * their day, and that day its week, they do, once the pseudo-random
 * roll-over delay has passed. */
void dbg_dump(ts_table *t);
static void merge_periods_roll_over(void **state)
{
	ts_test_env *e = *state;
	ts_test_model m = {0};
	int64_t today = NOW - 12 * HOUR;
	for (int p = 0; p < 3; p++) { /* 00-04, 04-08, 08-12 today */
		insert_span(e, &m, 80, today + p * 4 * HOUR, 4 * HOUR, p + 1);
		assert_int_equal(ts_flush(e->t, INT64_MAX), 0);
	}
	ts_test_env_set_now(e, NOW + HOUR); /* well after merge_delay, same day */
	assert_int_equal(ts__merge_due(e->t, NULL), 0);
	assert_int_equal(ts_test_stat(e->t, "tablets"), 3);
	/* the next day: one day period now, merged after at most the spread */
	ts_test_env_set_now(e, today + DAY + TS_DEFAULT_MERGE_ROLLOVER_SPREAD);
	assert_int_equal(ts__merge_due(e->t, NULL), 1);
	ts__tablet_meta *t;
	assert_int_equal(tablet_metas(e, &t), 1);
	assert_int_equal(t[0].period_start, today);
	assert_int_equal(t[0].period_end, today + DAY);
	free(t);
	/* a day of last week and another day of that week join the week */
	insert_span(e, &m, 200, today + DAY + 2 * HOUR, HOUR, 10); /* the next day */
	ts_test_env_set_now(e, today + DAY + 4 * HOUR);
	assert_int_equal(ts_flush(e->t, INT64_MAX), 0);
	ts_test_env_set_now(e, today + 2 * DAY + TS_DEFAULT_MERGE_ROLLOVER_SPREAD);
	assert_int_equal(ts__merge_due(e->t, NULL), 0); /* two day periods */
	int64_t week = ts__floor_div(today, 7 * DAY) * 7 * DAY;
	assert_true(week + 7 * DAY > today + DAY); /* both days in one week */
	ts_test_env_set_now(e, today + 8 * DAY + TS_DEFAULT_MERGE_ROLLOVER_SPREAD);
	assert_int_equal(ts__merge_due(e->t, NULL), 1);
	assert_int_equal(tablet_metas(e, &t), 1);
	assert_int_equal(t[0].period_start, week);
	assert_int_equal(t[0].period_end, week + 7 * DAY);
	free(t);
	ts_test_expect_model(e->t, &m, INT64_MIN);
	ts_test_check_tablets(e->t);
	free(m.rows);
}

/* A roll-over merge becomes due at some instant after the period grew,
 * within the spread. */
static void merge_rollover_delay_spreads(void **state)
{
	ts_test_env *e = *state;
	ts_test_model m = {0};
	int64_t today = NOW - 12 * HOUR;
	insert_span(e, &m, 40, today, 4 * HOUR, 1);
	assert_int_equal(ts_flush(e->t, INT64_MAX), 0);
	insert_span(e, &m, 40, today + 4 * HOUR, 4 * HOUR, 2);
	assert_int_equal(ts_flush(e->t, INT64_MAX), 0);
	int64_t lo = today + DAY, hi = today + DAY + TS_DEFAULT_MERGE_ROLLOVER_SPREAD;
	ts_test_env_set_now(e, hi);
	assert_int_equal(ts_test_stat(e->t, "merge_backlog_tablets"), 2);
	ts_test_env_set_now(e, lo);
	assert_int_equal(ts_test_stat(e->t, "merge_backlog_tablets"), 0);
	while (hi - lo > SEC) { /* find the instant it becomes due */
		int64_t mid = lo + (hi - lo) / 2;
		ts_test_env_set_now(e, mid);
		if (ts_test_stat(e->t, "merge_backlog_tablets") == 2)
			hi = mid;
		else
			lo = mid;
	}
	assert_true(hi > today + DAY && hi <= today + DAY + TS_DEFAULT_MERGE_ROLLOVER_SPREAD);
	free(m.rows);
}

/* A merge drops rows past the TTL; a merge of expired rows only leaves
 * no tablet at all. */
static void merge_drops_expired_rows(void **state)
{
	ts_test_env *e = *state;
	ts_test_model m = {0};
	for (int b = 1; b <= 3; b++) {
		insert_span(e, &m, 100, NOW - 10 * HOUR, 8 * HOUR, b); /* 02:00-10:00 */
		assert_int_equal(ts_flush(e->t, INT64_MAX), 0);
	}
	assert_int_equal(ts_alter_ttl(e->t, 6 * HOUR), 0); /* keep from 06:00 */
	int64_t keep = NOW - 6 * HOUR;
	ts_test_expect_model(e->t, &m, keep); /* filtered on read */
	uint64_t expired = 0;
	for (size_t i = 0; i < m.n; i++)
		expired += m.rows[i].ts < keep;
	assert_int_equal(ts_merge(e->t, NULL), 0);
	assert_int_equal(ts_test_stat(e->t, "merged_rows_expired"), (int64_t)expired);
	assert_int_equal(ts_test_stat(e->t, "tablet_rows"), (int64_t)(m.n - expired));
	ts_test_expect_model(e->t, &m, keep);
	ts_test_check_tablets(e->t);
	free(m.rows);
}

/* ---- TTL ---- */

static void expire_deletes_old_tablets(void **state)
{
	ts_test_env *e = *state;
	ts_test_model m = {0};
	char dir[4200];
	tablets_dir(e, dir, sizeof dir);
	for (int d = 5; d >= 1; d--) { /* one tablet a day, 5 days back */
		insert_span(e, &m, 50, NOW - d * DAY, HOUR, d);
		assert_int_equal(ts_flush(e->t, INT64_MAX), 0);
	}
	assert_int_equal(ts_test_stat(e->t, "tablets"), 5);
	assert_int_equal(ts_alter_ttl(e->t, 2 * DAY + 2 * HOUR), 0);
	int64_t keep = NOW - 2 * DAY - 2 * HOUR;
	ts_test_expect_model(e->t, &m, keep);
	assert_int_equal(ts__maint_pass(e->db), 0);
	assert_int_equal(ts_test_stat(e->t, "tablets"), 2);
	assert_int_equal(ts_test_stat(e->t, "tablets_expired"), 3);
	assert_int_equal(ts_test_count_files(dir, ".tab"), 2);
	ts_test_expect_model(e->t, &m, keep);
	ts_test_env_set_now(e, NOW + DAY); /* time passes: one more goes */
	keep += DAY;
	ts_test_expect_model(e->t, &m, keep);
	assert_int_equal(ts__maint_pass(e->db), 0);
	assert_int_equal(ts_test_stat(e->t, "tablets"), 1);
	assert_int_equal(ts_test_count_files(dir, ".tab"), 1);
	ts_test_env_reopen(e);
	ts_test_expect_model(e->t, &m, keep);
	free(m.rows);
}

/* ---- damage ---- */

/* Flip one byte of tablet file name at offset off (from the end when
 * negative). */
static void flip(const ts_test_env *e, uint64_t id, long off)
{
	char path[4300];
	snprintf(path, sizeof path, "%s/m/tablets/%016" PRIx64 ".tab", e->dir, id);
	ts_test_flip(path, off, 0x10);
}

/* Two tablets; the damaged one (whose rows are model b's) is reported by
 * reads, then quarantined by the maintenance pass, after which reads see
 * the other tablet's rows. */
static void damage_case(ts_test_env *e, long off)
{
	ts_test_model a = {0}, b = {0};
	char qdir[4200];
	insert_span(e, &a, 200, NOW - 3 * DAY, HOUR, 1);
	assert_int_equal(ts_flush(e->t, INT64_MAX), 0);
	insert_span(e, &b, 200, NOW - 2 * HOUR, HOUR, 2);
	assert_int_equal(ts_flush(e->t, INT64_MAX), 0);
	ts__tablet_meta *t;
	assert_int_equal(tablet_metas(e, &t), 2);
	uint64_t bad = t[0].min_ts > t[1].min_ts ? t[0].id : t[1].id;
	free(t);
	ts_test_env_close(e);
	flip(e, bad, off);
	ts_test_env_open(e);
	test_row *got;
	assert_int_equal(ts_test_read_m(e->t, &got), TS_ECORRUPT);
	char name[32];
	snprintf(name, sizeof name, "%016" PRIx64 ".tab", bad);
	assert_non_null(strstr(ts_errmsg(NULL), name));
	assert_true(ts_test_stat(e->t, "tablets_damaged_reports") >= 1);
	assert_int_equal(ts__maint_pass(e->db), 0);
	assert_int_equal(ts_test_stat(e->t, "tablets_quarantined"), 1);
	assert_int_equal(ts_test_stat(e->t, "tablets"), 1);
	ts_test_expect_model(e->t, &a, INT64_MIN);
	snprintf(qdir, sizeof qdir, "%s/m/quarantine", e->dir);
	assert_int_equal(ts_test_count_files(qdir, ".tab"), 1);
	ts_test_env_reopen(e); /* the writer's open does not delete what is quarantined */
	assert_int_equal(ts_test_count_files(qdir, ".tab"), 1);
	ts_test_expect_model(e->t, &a, INT64_MIN);
	free(a.rows);
	free(b.rows);
}

static void damage_trailer_quarantined(void **state)
{
	damage_case(*state, -1); /* the trailer's magic */
}

static void damage_footer_quarantined(void **state)
{
	damage_case(*state, -(long)TS_TABT_SIZE - 5); /* inside the footer */
}

static void damage_header_quarantined(void **state)
{
	damage_case(*state, TS_TABH_OFF_ID);
}

static void damage_block_quarantined(void **state)
{
	damage_case(*state, TS_TABH_SIZE + TS_BLKH_SIZE + 3); /* first block's bytes */
}

/* A merge that meets a damaged input fails, and does not lose the rest. */
static void damage_found_by_merge(void **state)
{
	ts_test_env *e = *state;
	ts_test_model m = {0};
	for (int b = 1; b <= 3; b++) {
		insert_span(e, &m, 200, NOW - 2 * HOUR, HOUR, b);
		assert_int_equal(ts_flush(e->t, INT64_MAX), 0);
	}
	ts__tablet_meta *t;
	assert_int_equal(tablet_metas(e, &t), 3);
	uint64_t bad = t[1].id;
	free(t);
	ts_test_env_close(e);
	flip(e, bad, TS_TABH_SIZE + TS_BLKH_SIZE + 3);
	ts_test_env_open(e);
	assert_int_equal(ts_merge(e->t, NULL), TS_ECORRUPT);
	assert_int_equal(ts__maint_pass(e->db), 0); /* if the thread has not yet */
	assert_int_equal(ts_test_stat(e->t, "tablets_quarantined"), 1);
	assert_int_equal(ts_test_stat(e->t, "tablets"), 2);
	assert_int_equal(ts_merge(e->t, NULL), 0);
	assert_int_equal(ts_test_stat(e->t, "tablet_rows"), 400);
	ts_test_check_tablets(e->t);
	free(m.rows);
}

/* ---- readers across merges and deletions ---- */

static int count_rows(const ts_value *v, int n, void *arg)
{
	(void)v;
	if (n != 4)
		return TS_ECORRUPT;
	++*(int64_t *)arg;
	return 0;
}

/* A snapshot taken before a merge reads the merged-away tablets to the
 * end, though their files are gone. */
static void reader_snapshot_reads_retired_tablets(void **state)
{
	ts_test_env *e = *state;
	ts_test_model m = {0};
	char dir[4200];
	tablets_dir(e, dir, sizeof dir);
	for (int b = 1; b <= 6; b++) {
		insert_span(e, &m, 300, NOW - 2 * HOUR, HOUR, b);
		assert_int_equal(ts_flush(e->t, INT64_MAX), 0);
	}
	ts__snapshot s;
	int64_t rows = 0;
	assert_int_equal(ts__snapshot_take(e->t, &s), 0);
	assert_int_equal(s.ntablets, 6);
	assert_int_equal(ts_merge(e->t, NULL), 0);
	assert_true(ts_test_count_files(dir, ".tab") < 6);
	for (int i = 0; i < s.ntablets; i++)
		assert_int_equal(ts__snapshot_scan_tablet(&s, i, count_rows, &rows), 0);
	ts__snapshot_release(&s);
	assert_int_equal(rows, (int64_t)m.n);
	free(m.rows);
}

/* The rows of host h, read through a query; each is checked against
 * what hot_tablets wrote. */
static long read_host(ts_table *t, int h, int batches, int per)
{
	char host[16];
	snprintf(host, sizeof host, "h%02d", h);
	ts_value prefix = ts_stringn(host, strlen(host));
	ts_query q = {.prefix = &prefix, .nprefix = 1};
	ts_cursor *c;
	const ts_value *r;
	int n;
	long rows = 0;
	assert_int_equal(ts_query_open(t, &q, &c), 0);
	while (ts_cursor_next(c, &r, &n) == 0 && r) {
		int64_t i = rows % per, b = rows / per + 1;
		assert_int_equal(r[1].v.i, NOW - DAY / 2 + (b * per + i) * SEC);
		assert_int_equal(r[2].v.i, b);
		assert_int_equal(r[3].v.i, h * 100000 + b * per + i);
		rows++;
	}
	ts_cursor_close(c);
	assert_int_equal(rows, (long)batches * per);
	return rows;
}

/* several tablets written before any is opened: each keeps its reserved
 * serial (ts__table_tablet_serial) until a reader opens it */
enum { HOT_HOSTS = 20, HOT_PER = 1000, HOT_BATCHES = 6 };

/* HOT_BATCHES tablets, each of every host's next HOT_PER seconds. */
static void hot_tablets(ts_test_env *e)
{
	test_row *r = calloc(HOT_HOSTS * HOT_PER, sizeof *r);
	assert_non_null(r);
	for (int b = 1; b <= HOT_BATCHES; b++) {
		for (int h = 0; h < HOT_HOSTS; h++)
			for (int i = 0; i < HOT_PER; i++) {
				test_row *x = &r[h * HOT_PER + i];
				snprintf(x->host, sizeof x->host, "h%02d", h);
				x->ts = NOW - DAY / 2 + ((int64_t)b * HOT_PER + i) * SEC;
				x->batch = b;
				x->v = h * 100000 + b * HOT_PER + i;
			}
		assert_int_equal(ts_test_insert_m(e->t, r, HOT_HOSTS * HOT_PER), 0);
		assert_int_equal(ts_flush(e->t, INT64_MAX), 0);
	}
	free(r);
	assert_int_equal(ts_test_stat(e->t, "tablets"), HOT_BATCHES);
}

/* Reading host h misses the block cache exactly when (miss) says. */
static void read_host_misses(ts_table *t, int h, int miss)
{
	int64_t misses = ts_test_stat(t, "block_cache_misses");
	read_host(t, h, HOT_BATCHES, HOT_PER);
	if (miss)
		assert_true(ts_test_stat(t, "block_cache_misses") > misses);
	else
		assert_int_equal(ts_test_stat(t, "block_cache_misses"), misses);
}

/* A flush of a table being read puts its blocks in the cache's spare
 * room and opens its tablet for the readers: every host reads with no
 * miss.  A merge of those inputs keeps
 * every output block cached: as a used entry where its rows came from
 * blocks readers used (host 3's), in spare room elsewhere. */
static void flushed_and_merged_blocks_cached(void **state)
{
	ts_test_env *e = *state;
	read_host(e->t, 0, 0, HOT_PER); /* the table is read (no rows yet) */
	hot_tablets(e);
	/* each flush's tablet is open already (ts__table_tablet_adopt),
	 * unused, its serial reservation taken */
	assert_int_equal(e->t->nopen, HOT_BATCHES);
	for (int i = 0; i < e->t->nopen; i++)
		assert_int_equal(e->t->open_tablets[i].refs, 0);
	assert_int_equal(e->t->nwarm, 0);
	read_host_misses(e->t, 3, 0);
	read_host_misses(e->t, 3, 0); /* now used */
	int merged = 0;
	assert_int_equal(ts_merge(e->t, &merged), 0);
	assert_int_equal(ts_test_stat(e->t, "tablets"), 1);
	ts__snapshot s;
	assert_int_equal(ts__snapshot_take(e->t, &s), 0);
	assert_int_equal(s.ntablets, 1);
	const ts__tablet *tab = s.tablets[0];
	int used_blocks = 0;
	for (uint32_t b = 0; b < tab->nblocks; b++) {
		int used;
		ts__cblock *cb = ts__bcache_peek(&e->db->bcache, tab->serial, b, &used);
		assert_non_null(cb);
		used_blocks += used;
		ts__cblock_put(&e->db->bcache, cb);
	}
	print_message("%d of %u output blocks used\n", used_blocks, tab->nblocks);
	assert_true(used_blocks >= 1 && used_blocks <= 5 && tab->nblocks > 20);
	ts__snapshot_release(&s);
	read_host_misses(e->t, 3, 0);
	read_host_misses(e->t, 15, 0);
	ts_test_check_tablets(e->t);
}

/* The flushes of a table nobody reads leave the cache alone (host 3
 * misses) and their tablets unopened.  A merge of a table not read lately keeps cached what
 * readers had cached and nothing else: host 3, read before the merge,
 * reads with no miss after it, host 15 misses; the inputs' entries leave
 * the cache with them. */
static void merge_keeps_cached_blocks_cached(void **state)
{
	ts_test_env *e = *state;
	hot_tablets(e);
	assert_int_equal(ts_test_stat(e->t, "block_cache_bytes"), 0);
	assert_int_equal(e->t->nopen, 0); /* nor opened */
	read_host_misses(e->t, 3, 1);
	read_host_misses(e->t, 3, 0);
	e->t->read_mono = 0; /* as if those reads were long ago */
	int64_t bytes = ts_test_stat(e->t, "block_cache_bytes");
	int merged = 0;
	assert_int_equal(ts_merge(e->t, &merged), 0);
	assert_int_equal(ts_test_stat(e->t, "tablets"), 1);
	/* the inputs' entries went with them; the output's kept ones came */
	int64_t kept = ts_test_stat(e->t, "block_cache_bytes");
	assert_true(kept > 0 && kept < bytes);
	read_host_misses(e->t, 3, 0);
	read_host_misses(e->t, 15, 1); /* never read: not kept */
	ts_test_check_tablets(e->t);
}

/* A merge of a table being read puts even the output blocks whose
 * inputs were not cached into spare room: host 15, never read, reads
 * with no miss after the merge (its readers could have cached the
 * inputs after the merge passed them). */
static void merge_of_a_read_table_caches_its_output(void **state)
{
	ts_test_env *e = *state;
	hot_tablets(e); /* not read yet: the flushes cached nothing */
	assert_int_equal(ts_test_stat(e->t, "block_cache_bytes"), 0);
	read_host_misses(e->t, 3, 1); /* read now */
	int merged = 0;
	assert_int_equal(ts_merge(e->t, &merged), 0);
	assert_int_equal(ts_test_stat(e->t, "tablets"), 1);
	read_host_misses(e->t, 15, 0);
	read_host_misses(e->t, 3, 0);
	ts_test_check_tablets(e->t);
}

/* A yield that notes a read of the table at the merge's first slice
 * boundary: the table is first read while it merges. */
static int read_at_first_slice(void *arg, ts_table *t)
{
	int *slices = arg;
	if ((*slices)++ == 0)
		ts__table_note_read(t);
	return 0;
}

/* A table first read during its merge: the output blocks the merge cut
 * before (not filled: the table was not being read yet) are read back
 * into the cache before the publish, so every host, host 0's first
 * blocks included, reads with no miss; and the output is among the
 * table's open tablets before any reader opens it. */
static void merge_read_midway_caches_its_whole_output(void **state)
{
	ts_test_env *e = *state;
	hot_tablets(e);
	assert_int_equal(ts_test_stat(e->t, "block_cache_bytes"), 0);
	int merged = 0, slices = 0;
	ts__merge_yield y = {read_at_first_slice, &slices};
	assert_int_equal(ts__merge(e->t, &merged, &y), 0);
	assert_int_equal(merged, 1);
	assert_true(slices > 1);
	assert_int_equal(ts_test_stat(e->t, "tablets"), 1);
	/* open already, under its reserved serial: no reader opened it */
	assert_int_equal(e->t->nopen, 1);
	assert_int_equal(e->t->open_tablets[0].id, e->t->desc->tablets[0].id);
	assert_int_equal(e->t->open_tablets[0].refs, 0);
	assert_int_equal(e->t->nwarm, 0);
	for (int h = 0; h < HOT_HOSTS; h++)
		read_host_misses(e->t, h, 0);
	ts_test_check_tablets(e->t);
}

/* A flush of a table being read that writes no tablet (every row
 * deleted) leaves no serial reserved (ts__table_tablet_unreserve) and
 * nothing cached. */
static void writes_of_nothing_reserve_nothing(void **state)
{
	ts_test_env *e = *state;
	ts_test_model m = {0};
	read_host(e->t, 0, 0, HOT_PER); /* the table is read */
	insert_span(e, &m, 200, NOW - 2 * HOUR, HOUR, 1);
	ts_query all = {0};
	uint64_t deleted = 0;
	assert_int_equal(ts_delete(e->t, &all, &deleted, NULL), 0);
	assert_int_equal(deleted, 200);
	assert_int_equal(ts_flush(e->t, INT64_MAX), 0);
	assert_int_equal(ts_test_stat(e->t, "tablets"), 0);
	assert_int_equal(e->t->nwarm, 0);
	assert_int_equal(ts_test_stat(e->t, "block_cache_bytes"), 0);
	free(m.rows);
}

/* Snapshots of one descriptor share its tablet set; a merge swaps in a
 * new one, and the merged-away tablets are closed when the last snapshot
 * of the old set lets go. */
static void reader_tablet_set_shared_then_released(void **state)
{
	ts_test_env *e = *state;
	ts_test_model m = {0};
	for (int b = 1; b <= 6; b++) {
		insert_span(e, &m, 300, NOW - 2 * HOUR, HOUR, b);
		assert_int_equal(ts_flush(e->t, INT64_MAX), 0);
	}
	ts__snapshot s1, s2, s3;
	assert_int_equal(ts__snapshot_take(e->t, &s1), 0);
	assert_int_equal(ts__snapshot_take(e->t, &s2), 0);
	assert_ptr_equal(s1.set, s2.set);
	assert_int_equal(s1.ntablets, 6);
	assert_int_equal(ts_merge(e->t, NULL), 0);
	assert_int_equal(ts__snapshot_take(e->t, &s3), 0);
	assert_ptr_not_equal(s3.set, s1.set);
	int n3 = s3.ntablets, kept = 0;
	assert_in_range(n3, 1, 5);
	for (int i = 0; i < n3; i++)
		for (int j = 0; j < 6; j++)
			kept += s3.metas[i].id == s1.metas[j].id;
	assert_int_equal(e->t->nopen, 6 + n3 - kept); /* the merged-away ones are held */
	ts__snapshot_release(&s1);
	assert_int_equal(e->t->nopen, 6 + n3 - kept);
	ts__snapshot_release(&s2);
	assert_int_equal(e->t->nopen, n3);
	ts__snapshot_release(&s3); /* the table's own reference keeps them open */
	assert_int_equal(e->t->nopen, n3);
	free(m.rows);
}

/* The child: open read-only and read the table over and over until the
 * parent closes the pipe; every read must be exactly the model (rows
 * from min_ts on).  Exit status: 0, or 1 on any difference. */
static int reader_child(const char *dir, const ts_test_model *m, int64_t min_ts, int go, int done)
{
	ts_options o;
	ts_db *db;
	ts_table *t;
	char c;
	ts_options_init(&o);
	o.flags = TS_OPEN_READONLY;
	setenv("TSSTORE_NOW", "2026-11-21T12:00:00Z", 1); /* NOW */
	if (ts_open(dir, &o, &db) < 0 || ts_table_open(db, "m", &t) < 0)
		return 1;
	fcntl(done, F_SETFL, O_NONBLOCK);
	size_t want = 0;
	for (size_t i = 0; i < m->n; i++)
		want += m->rows[i].ts >= min_ts;
	int reads = 0, last = 0;
	if (write(go, "g", 1) != 1)
		return 1;
	while (!last) {
		last = read(done, &c, 1) == 0; /* parent finished: one more read */
		test_row *got;
		long n = ts_test_read_m(t, &got);
		if (n != (long)want) {
			fprintf(stderr, "reader: read %d: %ld rows, want %zu (%s)\n", reads, n, want,
			        n < 0 ? ts_errmsg(NULL) : "");
			return 1;
		}
		for (size_t i = 0, j = 0; i < m->n; i++)
			if (m->rows[i].ts >= min_ts && memcmp(&got[j++], &m->rows[i], sizeof *got) != 0) {
				fprintf(stderr, "reader: read %d: row %zu differs\n", reads, j - 1);
				return 1;
			}
		free(got);
		reads++;
	}
	ts_table_close(t);
	ts_close(db);
	fprintf(stderr, "reader: %d reads\n", reads);
	return reads >= 2 ? 0 : 1;
}

static void reader_process_across_merges_and_expiry(void **state)
{
	ts_test_env *e = *state;
	ts_test_model m = {0};
	int go[2], done[2], status;
	for (int b = 1; b <= 40; b++) { /* old rows, expired below, and today's */
		insert_span(e, &m, 100, b % 4 ? NOW - 3 * HOUR : NOW - 4 * DAY, HOUR, b);
		assert_int_equal(ts_flush(e->t, INT64_MAX), 0);
	}
	assert_int_equal(ts_alter_ttl(e->t, 2 * DAY), 0);
	int64_t keep = NOW - 2 * DAY;
	assert_int_equal(pipe(go), 0);
	assert_int_equal(pipe(done), 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(go[0]);
		close(done[1]);
		_exit(reader_child(e->dir, &m, keep, go[1], done[0]));
	}
	close(go[1]);
	close(done[0]);
	char c;
	assert_int_equal(read(go[0], &c, 1), 1);
	int expired = ts__expire_due(e->t);
	int rc = 0;
	for (int i = 0; i < 6 && rc == 0; i++) { /* a few at a time, reads between */
		e->t->db->opts.merge_max_size = (int64_t)4000 << i;
		rc = ts_merge(e->t, NULL);
		usleep(20000);
	}
	close(done[1]); /* the reader stops before the test may fail */
	assert_int_equal(waitpid(pid, &status, 0), pid);
	close(go[0]);
	assert_int_equal(expired, 10);
	assert_int_equal(rc, 0);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	assert_true(ts_test_stat(e->t, "merges") >= 4);
	ts_test_expect_model(e->t, &m, keep);
	free(m.rows);
}

/* ts_merge refuses a read-only handle and a dropped table, and changes
 * nothing. */
static void merge_refused_read_only_and_dropped(void **state)
{
	ts_test_env *e = *state;
	ts_test_model m = {0};
	ts_options o;
	ts_db *ro;
	ts_table *rt;
	int merged = -1;
	for (int b = 1; b <= 2; b++) {
		insert_span(e, &m, 50, NOW - 2 * HOUR, HOUR, b);
		assert_int_equal(ts_flush(e->t, INT64_MAX), 0);
	}
	ts_options_init(&o);
	o.flags = TS_OPEN_READONLY;
	assert_int_equal(ts_open(e->dir, &o, &ro), 0);
	assert_int_equal(ts_table_open(ro, "m", &rt), 0);
	assert_int_equal(ts_merge(rt, &merged), TS_EREADONLY);
	assert_int_equal(merged, 0);
	assert_non_null(strstr(ts_errmsg(NULL), "read-only"));
	ts_table_close(rt);
	assert_int_equal(ts_close(ro), 0);
	assert_int_equal(ts_test_stat(e->t, "tablets"), 2);
	assert_int_equal(ts_drop(e->db, "m"), 0);
	assert_int_equal(ts_merge(e->t, &merged), TS_ECLOSED);
	assert_int_equal(merged, 0);
	free(m.rows);
}

int main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, setup, ts_test_env_teardown)
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(merge_pick_exact),
		cmocka_unit_test(merge_pick_logarithmic_bounds),
		T(merge_round_trip),
		T(merge_keeps_keys_unique),
		T(merge_translates_old_versions),
		cmocka_unit_test(merge_bound_exact),
		T(merge_behind_does_not_wait),
		T(merge_waits_after_flush),
		T(merge_periods_roll_over),
		T(merge_rollover_delay_spreads),
		T(merge_drops_expired_rows),
		T(expire_deletes_old_tablets),
		T(damage_trailer_quarantined),
		T(damage_footer_quarantined),
		T(damage_header_quarantined),
		T(damage_block_quarantined),
		T(damage_found_by_merge),
		T(reader_snapshot_reads_retired_tablets),
		T(flushed_and_merged_blocks_cached),
		T(merge_keeps_cached_blocks_cached),
		T(merge_of_a_read_table_caches_its_output),
		T(merge_read_midway_caches_its_whole_output),
		T(writes_of_nothing_reserve_nothing),
		T(reader_tablet_set_shared_then_released),
		T(reader_process_across_merges_and_expiry),
		T(merge_refused_read_only_and_dropped),
	};
#undef T
	return cmocka_run_group_tests_name("merge", tests, NULL, NULL);
}
