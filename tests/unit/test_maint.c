/*
 * test_maint.c -- the maintenance scheduler (lib/maint.c): the smallest
 * due merge of any table goes first, one merge per pass; background
 * merges keep to the budget while the foreground -- inserts and reads
 * alike -- is busy and take all the time when it is idle; a merge the
 * user asks for never sleeps; the scheduler's settings are options (0:
 * the default), checked at open and shown in every table's stats; the
 * roll-over spread is a setting that moves when a grown period merges;
 * the library's threads never inherit a real-time policy.
 *
 * The scheduler's thread is held in every test: each calls a pass
 * itself and counts what it did.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <dirent.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <cmocka.h>

#include "handle.h"
#include "maint.h"
#include "merge.h"
#include "support.h"
#include "tabledesc.h"

#define NOW INT64_C(1795262400000000000) /* 2026-11-21T12:00:00Z */
#define SEC INT64_C(1000000000)
#define MIN (60 * SEC)
#define HOUR (3600 * SEC)
#define DAY (24 * HOUR)

static uint64_t rng = 0x9E3779B97F4A7C15u;

/* n rows of batch b, ts in [from, from + span), into t. */
static void insert_rows(ts_table *t, int n, int64_t from, int64_t span, int64_t b)
{
	test_row *r = calloc((size_t)n, sizeof *r);
	assert_non_null(r);
	for (int i = 0; i < n; i++) {
		snprintf(r[i].host, sizeof r[i].host, "h%03d", (int)(ts_test_xorshift(&rng) % 500));
		r[i].ts = from + (int64_t)(ts_test_xorshift(&rng) % (uint64_t)(span / SEC)) * SEC +
		          b * 100000 + i;
		r[i].batch = b;
		r[i].v = i;
	}
	if (ts_test_insert_m(t, r, (size_t)n) != 0)
		fail_msg("insert: %s", ts_errmsg(NULL));
	free(r);
}

/* k flushed tablets of n rows each in t, all in the 4-hour period
 * before NOW. */
static void tablets(ts_table *t, int k, int n, int64_t *batch)
{
	for (int i = 0; i < k; i++) {
		insert_rows(t, n, NOW - 3 * HOUR, HOUR, ++*batch);
		assert_int_equal(ts_flush(t, INT64_MAX), 0);
	}
}

/* An env that merges (no TS_OPEN_NOMERGE) but whose thread is held, with
 * merge_delay delay (0: the default). */
static ts_test_env *env_delayed(int64_t delay, int64_t slice_rows, int64_t window,
                                int64_t share)
{
	ts_test_env *e = calloc(1, sizeof *e);
	assert_non_null(e);
	e->dir = ts_test_tmpdir();
	e->now = NOW;
	e->merge_delay = delay;
	e->hold_maintenance = 1;
	e->merge_slice_rows = slice_rows;
	e->maint_busy_window = window;
	e->maint_busy_share = share;
	ts_test_env_open(e);
	return e;
}

/* The same with merge_delay 1 ns: the clock is moved past it before each
 * pass. */
static ts_test_env *env_with(int64_t slice_rows, int64_t window, int64_t share)
{
	return env_delayed(1, slice_rows, window, share);
}

/* The foreground was last busy long ago (longer than any window here). */
static void foreground_idle(ts_db *db)
{
	__atomic_store_n(&db->maint.fg_mono, ts__mono_ns() - 10 * DAY, __ATOMIC_RELAXED);
}

/* Two tables with a due merge each, "b"'s smaller: the first pass makes
 * b's merge (one merge per pass), the second m's, the third none. */
static void smallest_merge_of_any_table_goes_first(void **state)
{
	ts_test_env *e = env_with(0, 0, 0);
	*state = e;
	ts_table *b;
	int64_t batch = 0;
	assert_int_equal(ts_test_create_like_m(e->db, "b", 0), 0);
	assert_int_equal(ts_table_open(e->db, "b", &b), 0);
	tablets(e->t, 2, 400, &batch);
	tablets(b, 2, 40, &batch);
	ts_test_env_set_now(e, NOW + SEC);
	assert_true(ts__merge_next(b) > 0);
	assert_true(ts__merge_next(b) < ts__merge_next(e->t));
	assert_int_equal(ts__maint_pass(e->db), 0);
	assert_int_equal(ts_test_stat(b, "tablets"), 1);
	assert_int_equal(ts_test_stat(b, "merges"), 1);
	assert_int_equal(ts_test_stat(e->t, "tablets"), 2);
	assert_int_equal(ts_test_stat(e->t, "maint_merges"), 1);
	assert_int_equal(ts__maint_pass(e->db), 0);
	assert_int_equal(ts_test_stat(e->t, "tablets"), 1);
	assert_int_equal(ts_test_stat(e->t, "merges"), 1);
	assert_int_equal(ts__maint_pass(e->db), 0);
	assert_int_equal(ts_test_stat(e->t, "maint_merges"), 2);
	assert_int_equal(ts__merge_next(e->t), 0);
	assert_int_equal(ts__merge_next(b), 0);
	assert_int_equal(ts_test_count_rows(b), 80);
	assert_int_equal(ts_test_count_rows(e->t), 800);
	ts_table_close(b);
}

/* Within one table too: of two periods' due merges the smaller first,
 * although the larger is in the older period. */
static void smallest_merge_within_a_table_goes_first(void **state)
{
	ts_test_env *e = env_with(0, 0, 0);
	*state = e;
	int64_t batch = 0;
	for (int i = 0; i < 2; i++) { /* two tablets of 300 rows, 8-12 hours ago */
		insert_rows(e->t, 300, NOW - 11 * HOUR, HOUR, ++batch);
		assert_int_equal(ts_flush(e->t, INT64_MAX), 0);
	}
	tablets(e->t, 2, 30, &batch); /* two of 30 rows, in the last period */
	ts_test_env_set_now(e, NOW + SEC);
	assert_int_equal(ts_test_stat(e->t, "tablets"), 4);
	int64_t small = ts__merge_next(e->t);
	assert_true(small > 0);
	assert_int_equal(ts__maint_pass(e->db), 0);
	assert_int_equal(ts_test_stat(e->t, "tablets"), 3);
	assert_int_equal(ts_test_stat(e->t, "merged_in_bytes"), small);
	assert_true(ts__merge_next(e->t) > small);
}

/* With the foreground idle a background merge never sleeps; after a read
 * (a snapshot taken) within the window it sleeps after its slices, and
 * so after an insert. */
static void merges_yield_to_reads_and_inserts_only(void **state)
{
	ts_test_env *e = env_with(64, 10 * DAY, 50); /* a window no test outlasts */
	*state = e;
	int64_t batch = 0;
	tablets(e->t, 2, 2000, &batch);
	ts_test_env_set_now(e, NOW + SEC);
	foreground_idle(e->db);
	assert_int_equal(ts__maint_pass(e->db), 0);
	assert_int_equal(ts_test_stat(e->t, "merges"), 1);
	assert_int_equal(ts_test_stat(e->t, "merge_throttled_ns"), 0);
	assert_int_equal(ts_test_stat(e->t, "maint_throttled_ns"), 0);

	tablets(e->t, 2, 2000, &batch); /* the merged tablet and these: rule */
	ts_test_env_set_now(e, NOW + 2 * SEC);
	foreground_idle(e->db);
	ts_cursor *c;
	ts_query q = {0};
	assert_int_equal(ts_query_open(e->t, &q, &c), 0); /* a read: foreground */
	ts_cursor_close(c);
	assert_int_equal(ts__maint_pass(e->db), 0);
	assert_int_equal(ts_test_stat(e->t, "merges"), 2);
	int64_t slept = ts_test_stat(e->t, "merge_throttled_ns");
	assert_true(slept > 0);
	assert_int_equal(ts_test_stat(e->t, "maint_throttled_ns"), slept);

	tablets(e->t, 2, 2000, &batch); /* an insert is foreground too */
	ts_test_env_set_now(e, NOW + 3 * SEC);
	assert_true(ts__merge_next(e->t) > 0);
	assert_int_equal(ts__maint_pass(e->db), 0);
	assert_int_equal(ts_test_stat(e->t, "merges"), 3);
	assert_true(ts_test_stat(e->t, "merge_throttled_ns") > slept);
	assert_int_equal(ts_test_count_rows(e->t), 12000);
}

/* The tablets of t's one period, oldest version first: their sizes. */
static int period_sizes(ts_table *t, uint64_t *sizes, int room)
{
	int n = 0;
	assert_int_equal(ts__table_lock(t), 0);
	for (int i = 0; i < t->desc->ntablets && n < room; i++)
		sizes[n++] = t->desc->tablets[i].bytes;
	ts__table_unlock(t);
	return n;
}

/* A sustained load: a batch and a flush every "second" of a clock that
 * never reaches the default merge_delay (90 s), the scheduler's pass
 * after each, the foreground always busy.  The merges still happen --
 * LittleTable's rule, not the delay, decides once a period holds more
 * tablets than the rule leaves (ts__merge_bound) -- each sleeping for
 * the budget (they yield to the inserts) and each finishing within its
 * pass (never starved): after every pass the period holds at most
 * floor(log2(flushes)) + 2 tablets (at most 7 here, where the delay
 * would leave 64), 64 flushes leave 4 after 19 merges, and every row is
 * there. */
static void merges_keep_up_with_a_sustained_load(void **state)
{
	ts_test_env *e = env_delayed(0, 64, 0, 0); /* merge_delay 90 s, window 100 ms */
	*state = e;
	int64_t batch = 0, merges = 0;
	uint64_t sizes[128];
	for (int f = 1; f <= 64; f++) {
		insert_rows(e->t, 400, NOW - 3 * HOUR, HOUR, ++batch);
		assert_int_equal(ts_flush(e->t, INT64_MAX), 0);
		ts_test_env_set_now(e, NOW + f * SEC);
		assert_int_equal(ts__maint_pass(e->db), 0);
		int n = period_sizes(e->t, sizes, 128), bound = 2;
		while ((1 << bound) <= 4 * f) /* floor(log2(f)) + 2 */
			bound++;
		int rule = ts__merge_bound(sizes, n, (uint64_t)e->db->opts.merge_max_size);
		if (n > bound || n > rule)
			fail_msg("flush %d: %d tablets; the rule leaves %d, floor(log2(%d)) + 2 is %d", f,
			         n, rule, f, bound);
		merges = ts_test_stat(e->t, "maint_merges");
	}
	assert_int_equal(ts_test_stat(e->t, "tablets"), 4);
	assert_int_equal(merges, 19);
	assert_true(ts_test_stat(e->t, "maint_throttled_ns") > 0);
	assert_int_equal(ts_test_count_rows(e->t), 64 * 400);
	ts_test_check_tablets(e->t);
}

/* A share of 100 percent: merges never sleep, however busy. */
static void full_share_never_sleeps(void **state)
{
	ts_test_env *e = env_with(64, 10 * DAY, 100);
	*state = e;
	int64_t batch = 0;
	tablets(e->t, 2, 2000, &batch); /* the inserts make the foreground busy */
	ts_test_env_set_now(e, NOW + SEC);
	assert_int_equal(ts__maint_pass(e->db), 0);
	assert_int_equal(ts_test_stat(e->t, "merges"), 1);
	assert_int_equal(ts_test_stat(e->t, "merge_throttled_ns"), 0);
}

/* ts_merge is the user's: it never sleeps, however busy the foreground. */
static void asked_merge_never_sleeps(void **state)
{
	ts_test_env *e = env_with(64, 10 * DAY, 1);
	*state = e;
	int64_t batch = 0;
	int merged;
	tablets(e->t, 3, 2000, &batch);
	assert_int_equal(ts_merge(e->t, &merged), 0);
	assert_true(merged >= 1);
	assert_int_equal(ts_test_stat(e->t, "tablets"), 1);
	assert_int_equal(ts_test_stat(e->t, "merge_throttled_ns"), 0);
}

/* The settings in effect are in every table's stats: the defaults, then
 * each one set. */
static void settings_show_in_stats(void **state)
{
	ts_test_env *e = env_with(0, 0, 0);
	*state = e;
	assert_int_equal(ts_test_stat(e->t, "setting_merge_slice_rows"), 4096);
	assert_int_equal(ts_test_stat(e->t, "setting_merge_rollover_spread_ns"), 30 * MIN);
	assert_int_equal(ts_test_stat(e->t, "setting_maint_busy_window_ns"), 100 * 1000000);
	assert_int_equal(ts_test_stat(e->t, "setting_maint_busy_share_percent"), 50);
	assert_int_equal(ts_test_stat(e->t, "setting_merge_delay_ns"), 1);
	assert_int_equal(ts_test_stat(e->t, "setting_flush_size"), 16 << 20);
	assert_int_equal(ts_test_stat(e->t, "setting_merges_enabled"), 1);
	ts_test_env_close(e);
	e->merge_slice_rows = 100;
	e->merge_rollover_spread = 5 * MIN;
	e->maint_busy_window = 2 * SEC;
	e->maint_busy_share = 20;
	e->flags = TS_OPEN_NOMERGE;
	ts_test_env_open(e);
	assert_int_equal(ts_test_stat(e->t, "setting_merge_slice_rows"), 100);
	assert_int_equal(ts_test_stat(e->t, "setting_merge_rollover_spread_ns"), 5 * MIN);
	assert_int_equal(ts_test_stat(e->t, "setting_maint_busy_window_ns"), 2 * SEC);
	assert_int_equal(ts_test_stat(e->t, "setting_maint_busy_share_percent"), 20);
	assert_int_equal(ts_test_stat(e->t, "setting_merges_enabled"), 0);
}

/* Out-of-range settings are refused at open, naming the setting. */
static void bad_settings_refused(void **state)
{
	(void)state;
	char *dir = ts_test_tmpdir();
	ts_db *db;
	struct {
		int which;
		int64_t value;
		const char *named;
	} bad[] = {
		{0, -1, "merge_slice_rows"}, {1, -1, "merge_rollover_spread"},
		{2, -5, "maint_busy_window"}, {3, 101, "maint_busy_share 101"},
		{3, -1, "maint_busy_share -1"}, {4, -1, "flush_threads -1"},
		{4, 9, "flush_threads 9"},
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		ts_options o;
		ts_options_init(&o);
		o.flags = TS_OPEN_CREATE;
		int64_t *f[] = {&o.merge_slice_rows, &o.merge_rollover_spread, &o.maint_busy_window,
		                &o.maint_busy_share, &o.flush_threads};
		*f[bad[i].which] = bad[i].value;
		assert_int_equal(ts_open(dir, &o, &db), TS_EINVAL);
		assert_non_null(strstr(ts_errmsg(NULL), bad[i].named));
	}
	ts_test_rmdir(dir);
}

/* The roll-over spread is a setting: at 1 ns a grown period merges as
 * soon as it grew; at the default it may wait up to 30 minutes. */
static void rollover_spread_is_a_setting(void **state)
{
	ts_test_env *e = calloc(1, sizeof *e);
	assert_non_null(e);
	*state = e;
	e->dir = ts_test_tmpdir();
	e->now = NOW;
	e->merge_delay = 1;
	e->hold_maintenance = 1;
	e->merge_rollover_spread = 1;
	ts_test_env_open(e);
	int64_t today = NOW - 12 * HOUR, batch = 0;
	for (int p = 0; p < 3; p++) { /* 00-04, 04-08, 08-12 today */
		insert_rows(e->t, 50, today + p * 4 * HOUR, 4 * HOUR, ++batch);
		assert_int_equal(ts_flush(e->t, INT64_MAX), 0);
	}
	ts_test_env_set_now(e, NOW + HOUR);
	assert_int_equal(ts__merge_next(e->t), 0); /* three periods */
	ts_test_env_set_now(e, today + DAY); /* the day grew: at once */
	assert_true(ts__merge_next(e->t) > 0);
	assert_int_equal(ts__maint_pass(e->db), 0);
	assert_int_equal(ts_test_stat(e->t, "tablets"), 1);
}

/* TS_STATS_MAX entries always suffice (the header promises it), with
 * room to spare for the counters still to come. */
static void stats_fit_in_stats_max(void **state)
{
	ts_test_env *e = env_with(0, 0, 0);
	*state = e;
	ts_stat st[TS_STATS_MAX + 64];
	int n;
	assert_int_equal(ts_table_stats(e->t, st, TS_STATS_MAX + 64, &n), 0);
	assert_true(n > 60);
	assert_true(n <= TS_STATS_MAX - 32);
}

/* The scheduling policy of thread tid of this process (field 41 of its
 * stat), or -1. */
static int thread_policy(long tid)
{
	char path[64], buf[1024];
	snprintf(path, sizeof path, "/proc/self/task/%ld/stat", tid);
	FILE *f = fopen(path, "r");
	if (!f)
		return -1;
	size_t n = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	buf[n] = 0;
	char *p = strrchr(buf, ')'); /* past the name, which may hold spaces */
	int field = 2, policy = -1;
	for (p = p ? strtok(p + 1, " ") : NULL; p; p = strtok(NULL, " "))
		if (++field == 41)
			policy = atoi(p);
	return policy;
}

/*
 * A process run under a real-time policy (chrt) does not hand it down to
 * the library's threads (lib/thread.h): with the caller under SCHED_FIFO,
 * its threads left after an open, flushes and a scan (the scheduler and
 * the segment preparer at least) run under SCHED_OTHER while the caller
 * keeps its policy.
 * Skipped where SCHED_FIFO is not allowed.
 */
static void library_threads_never_realtime(void **state)
{
	struct sched_param fifo = {.sched_priority = 1}, other = {0};
	if (pthread_setschedparam(pthread_self(), SCHED_FIFO, &fifo) != 0)
		skip();
	ts_test_env *e = calloc(1, sizeof *e);
	assert_non_null(e);
	*state = e;
	e->dir = ts_test_tmpdir();
	e->now = NOW;
	e->flush_threads = 2;
	ts_test_env_open(e);
	int64_t batch = 0;
	tablets(e->t, 2, 3000, &batch); /* a flush's helpers */
	ts_cursor *cur;
	const ts_value *row;
	int rc, nthreads = 0, realtime = 0, self = 0;
	ts_query q;
	memset(&q, 0, sizeof q);
	assert_int_equal(ts_query_open(e->t, &q, &cur), 0); /* a long scan reads ahead */
	while ((rc = ts_cursor_next(cur, &row, NULL)) == 0 && row)
		;
	ts_cursor_close(cur);
	long me = (long)syscall(SYS_gettid);
	DIR *d = opendir("/proc/self/task");
	struct dirent *de;
	assert_non_null(d);
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		long tid = atol(de->d_name);
		int policy = thread_policy(tid);
		if (tid == me)
			self = policy;
		else if (policy == SCHED_FIFO || policy == SCHED_RR)
			realtime++;
		else
			nthreads++;
	}
	closedir(d);
	pthread_setschedparam(pthread_self(), SCHED_OTHER, &other);
	assert_int_equal(rc, 0);
	assert_int_equal(self, SCHED_FIFO);
	assert_int_equal(realtime, 0);
	assert_true(nthreads >= 2); /* the scheduler and the preparer at least */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(smallest_merge_of_any_table_goes_first, ts_test_env_teardown),
		cmocka_unit_test_teardown(smallest_merge_within_a_table_goes_first, ts_test_env_teardown),
		cmocka_unit_test_teardown(merges_yield_to_reads_and_inserts_only, ts_test_env_teardown),
		cmocka_unit_test_teardown(merges_keep_up_with_a_sustained_load, ts_test_env_teardown),
		cmocka_unit_test_teardown(full_share_never_sleeps, ts_test_env_teardown),
		cmocka_unit_test_teardown(asked_merge_never_sleeps, ts_test_env_teardown),
		cmocka_unit_test_teardown(settings_show_in_stats, ts_test_env_teardown),
		cmocka_unit_test(bad_settings_refused),
		cmocka_unit_test_teardown(rollover_spread_is_a_setting, ts_test_env_teardown),
		cmocka_unit_test_teardown(stats_fit_in_stats_max, ts_test_env_teardown),
		cmocka_unit_test_teardown(library_threads_never_realtime, ts_test_env_teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
