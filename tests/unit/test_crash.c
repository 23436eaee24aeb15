/*
 * test_crash.c -- the prefix guarantee under SIGKILL.
 *
 * A child process inserts numbered batches (sync mode commit) into a
 * database and reports each acknowledged batch number through a pipe; the
 * parent kills it at a random moment, reopens the database, and checks
 * that the table holds exactly batches 1..k, each complete, with k at
 * least the last acknowledged batch.  The same database carries on across
 * iterations, so recovery runs on logs of every shape.  Variants then
 * overwrite the log past its last commit with garbage, or truncate the
 * segment there, before reopening; and one flushes every few batches, so
 * that kills land inside flushes too, and another merges as well, and
 * both check every tablet file.  After every kill, ts_check runs twice:
 * on a read-only handle before any writer has recovered the log (what an
 * operator sees after a crash), and after the reopen; neither may report
 * a problem.
 *
 * The same file builds a second program, test_crash_segments, over a
 * library with 1 MiB log segments (TS_SEG_DATA_SHIFT=20, see the
 * Makefile), where the log rolls over to a new segment every hundred
 * batches or so, so kills land in rollovers and in the segment
 * preparer's work; it runs the loop in each durability mode.  A SIGKILL
 * leaves the page cache, and the log is a shared mapping, so in every
 * mode each acknowledged batch must survive it (the modes differ only
 * after a power loss, which a process kill cannot simulate).
 *
 * Both programs run a variant again as on a machine of larger pages
 * (ts__log_force_page_size; docs/log-format.md section 1.1): the garbage
 * tail with 16 KiB and 64 KiB pages, where recovery zeroes the tail's
 * larger page and punches out the rest from its end, and the rollovers
 * with 64 KiB pages, where the tail often lands in a 1 MiB segment's
 * last, partial page.
 *
 * TSSTORE_CRASH_ITERATIONS sets the iterations per variant (default 50;
 * `make crash-test N=1000` runs long).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "log.h"
#include "snapshot.h"
#include "tablet.h"
#include "support.h"

#define NOW INT64_C(1795262400000000000)
#define SEC INT64_C(1000000000)
#define ROWS 16

static uint64_t rng = 0x9E3779B97F4A7C15u;
static uint64_t rnd(void) { return ts_test_xorshift(&rng); }

static int iterations(void)
{
	const char *s = getenv("TSSTORE_CRASH_ITERATIONS");
	int n = s ? atoi(s) : 0;
	return n > 0 ? n : 50;
}

static int64_t fixed_clock(void *arg) { (void)arg; return NOW; }

/* The child flushes after every flush_every-th batch and merges after
 * every merge_every-th (0: never), in durability mode sync_mode. */
static int flush_every, merge_every;
static ts_sync_mode sync_mode = TS_SYNC_COMMIT;

static int open_db(const char *dir, ts_db **db, ts_table **t)
{
	ts_options o;
	ts_options_init(&o);
	o.flags = TS_OPEN_CREATE;
	o.sync = sync_mode;
	o.clock = fixed_clock;
	if (ts_open(dir, &o, db) < 0)
		return -1;
	if (ts_table_open(*db, "m", t) < 0) {
		ts_test_create_m(*db, 0);
		if (ts_table_open(*db, "m", t) < 0)
			return -1;
	}
	return 0;
}

/* Batches 1..k each complete, nothing else: returns k, or -1. */
static long check_prefix(const test_row *rows, long n)
{
	return ts_test_check_batches(rows, n, ROWS, NOW - 86400 * SEC);
}

static void child(void *arg, int fd)
{
	const char *dir = arg;
	ts_db *db;
	ts_table *t;
	test_row r[ROWS], *rows;
	if (open_db(dir, &db, &t) < 0) {
		fprintf(stderr, "child: open: %s\n", ts_errmsg(NULL));
		_exit(20);
	}
	long k = ts_test_read_m(t, &rows);
	free(rows);
	if (k < 0 || k % ROWS)
		_exit(21);
	int64_t ready = k / ROWS; /* the batches it holds: the rig's go */
	if (write(fd, &ready, sizeof ready) != sizeof ready)
		_exit(23);
	for (int64_t b = k / ROWS + 1;; b++) {
		ts_test_batch_rows(r, ROWS, NOW - 86400 * SEC, b);
		if (ts_test_insert_m(t, r, ROWS) != 0) {
			fprintf(stderr, "child: batch %lld: %s\n", (long long)b, ts_errmsg(NULL));
			_exit(22);
		}
		if (write(fd, &b, sizeof b) != sizeof b)
			_exit(23);
		/* Without a sync per batch the child would write a hundred
		 * thousand batches before the kill, and the checks would read
		 * them all, many times over; pace it like the commit mode. */
		if (sync_mode != TS_SYNC_COMMIT)
			nanosleep(&(struct timespec){0, 50000}, NULL);
		if (flush_every && b % flush_every == 0 && ts_flush(t, INT64_MAX) < 0) {
			fprintf(stderr, "child: flush after batch %lld: %s\n", (long long)b, ts_errmsg(NULL));
			_exit(24);
		}
		if (merge_every && b % merge_every == 0 && ts_merge(t, NULL) < 0) {
			fprintf(stderr, "child: merge after batch %lld: %s\n", (long long)b, ts_errmsg(NULL));
			_exit(25);
		}
	}
}

/* Run the child, kill it after a random pause; returns the last batch it
 * acknowledged (0 if none). */
static int64_t run_and_kill(const char *dir)
{
	return ts_test_run_and_kill(child, (void *)dir, (long)(rnd() % 400000000), 0);
}

/* What an operator sees after the crash, before any writer recovers. */
static void check_before_recovery(const char *dir)
{
	ts_options o;
	ts_db *db;
	ts_options_init(&o);
	o.flags = TS_OPEN_READONLY;
	o.clock = fixed_clock;
	if (ts_open(dir, &o, &db) < 0)
		fail_msg("read-only open: %s", ts_errmsg(NULL));
	ts_test_check_clean(db, "m", "before recovery");
	ts_close(db);
}

/* Reopen and verify; returns k. */
static long verify(const char *dir, int64_t acked)
{
	ts_db *db;
	ts_table *t;
	test_row *rows;
	if (open_db(dir, &db, &t) < 0)
		fail_msg("reopen: %s", ts_errmsg(NULL));
	long n = ts_test_read_m(t, &rows);
	long k = n < 0 ? -1 : check_prefix(rows, n);
	free(rows);
	ts_test_check_clean(db, "m", "after recovery");
	ts_table_close(t);
	ts_close(db);
	if (k < 0)
		fail_msg("not a prefix of the batches (%ld rows)", n);
	if (k < acked)
		fail_msg("lost acknowledged batches: holds %ld, %lld acknowledged", k, (long long)acked);
	return k;
}

/* Where the valid log ends: the segment file and the offset in it. */
static void log_end(const char *dir, char seg[512], off_t *off)
{
	char logdir[256];
	ts__log *log;
	snprintf(logdir, sizeof logdir, "%s/m/log", dir);
	assert_int_equal(ts__log_open(logdir, 1, 0, 0, &log), 0);
	uint64_t tail = ts__log_tail(log);
	ts__log_close(log, 0);
	snprintf(seg, 512, "%s/%016" PRIx64 ".seg", logdir, tail >> TS_SEG_DATA_SHIFT);
	*off = TS_SEG_HEADER + (off_t)(tail & (TS_SEG_DATA - 1));
}

static void garbage_after_end(const char *dir)
{
	char seg[512], junk[4096];
	off_t off;
	log_end(dir, seg, &off);
	int fd = open(seg, O_WRONLY);
	if (fd < 0) /* the tail may sit at a segment boundary */
		return;
	for (size_t i = 0; i < sizeof junk; i++)
		junk[i] = (char)rnd();
	size_t n = 1 + rnd() % sizeof junk;
	assert_int_equal(pwrite(fd, junk, n, off + (off_t)(rnd() % 64)), (ssize_t)n);
	close(fd);
}

static void truncate_after_end(const char *dir)
{
	char seg[512];
	off_t off;
	log_end(dir, seg, &off);
	if (truncate(seg, off + (off_t)(rnd() % 4096)) < 0)
		assert_int_equal(errno, ENOENT);
}

/* damage: what happens to the files between the kill and the reopen;
 * NULL, or check_tablets, which only reads. */
static void check_tablets(const char *dir);
static long crash_loop(void (*damage)(const char *dir))
{
	char *dir = ts_test_tmpdir();
	long k = 0;
	int n = iterations();
	for (int i = 0; i < n; i++) {
		int64_t acked = run_and_kill(dir);
		if (!damage || damage == check_tablets)
			check_before_recovery(dir);
		if (damage)
			damage(dir);
		long now_k = verify(dir, acked);
		assert_true(now_k >= k); /* acknowledged batches never disappear */
		k = now_k;
	}
	print_message("crash: %d kills survived, %ld batches stored\n", n, k);
	assert_true(k > 0);
	ts_test_rmdir(dir);
	return k;
}

/* Every tablet the reopened table names passes a full check. */
static int tablets_seen;
static void check_tablets(const char *dir)
{
	ts_db *db;
	ts_table *t;
	ts__snapshot s;
	if (open_db(dir, &db, &t) < 0)
		fail_msg("reopen: %s", ts_errmsg(NULL));
	assert_int_equal(ts__snapshot_take(t, &s), 0);
	tablets_seen = s.ntablets;
	for (int i = 0; i < s.ntablets; i++) {
		const ts__tablet *tab = s.tablets[i];
		if (ts__tablet_check(tab, s.versions[tab->schema_version - 1]) < 0)
			fail_msg("%s", ts_errmsg(NULL));
	}
	ts__snapshot_release(&s);
	ts_table_close(t);
	ts_close(db);
	/* what the killed flush or merge left is gone: only named tablets */
	char tabdir[512];
	snprintf(tabdir, sizeof tabdir, "%s/m/tablets", dir);
	assert_int_equal(ts_test_count_files(tabdir, ".tab"), tablets_seen);
}

static void crash_sigkill_keeps_prefix(void **state) { (void)state; crash_loop(NULL); }
static void crash_garbage_tail_keeps_prefix(void **state) { (void)state; crash_loop(garbage_after_end); }
static void crash_truncated_tail_keeps_prefix(void **state) { (void)state; crash_loop(truncate_after_end); }
static void crash_during_flushes_keeps_prefix(void **state)
{
	(void)state;
	flush_every = 40;
	long k = crash_loop(check_tablets);
	flush_every = 0;
	print_message("crash: %d tablets at the last check\n", tablets_seen);
	/* a tablet per 40 batches (no merge is due yet), less those whose
	 * flush was killed: the kills met many flushes */
	assert_true(tablets_seen >= k / 40 / 2 && tablets_seen > 5);
}

/* Kills land in merges too (each merge rewrites what many flushes wrote,
 * so they are long), and in the deletions after them. */
static void crash_during_merges_keeps_prefix(void **state)
{
	(void)state;
	flush_every = 10;
	merge_every = 50;
	long k = crash_loop(check_tablets);
	flush_every = merge_every = 0;
	print_message("crash: %d tablets at the last check\n", tablets_seen);
	/* a flush per 10 batches, and merges took at least half of them
	 * away (on a fast machine, all but a few) */
	assert_true(tablets_seen > 0 && tablets_seen < k / 10 / 2);
}

/* The newest segment file of the log. */
static uint64_t last_segment(const char *dir)
{
	char logdir[256];
	uint64_t *segs, last;
	size_t n;
	snprintf(logdir, sizeof logdir, "%s/m/log", dir);
	assert_int_equal(ts__log_segments(logdir, &segs, &n), 0);
	assert_true(n > 0);
	last = segs[n - 1];
	free(segs);
	return last;
}

/* Kills in each durability mode, the log rolling over to a new 1 MiB
 * segment every hundred batches or so and flushes releasing the old
 * ones. */
static void crash_rollovers(ts_sync_mode mode)
{
	char *dir = ts_test_tmpdir();
	long k = 0;
	int n = iterations();
	sync_mode = mode;
	flush_every = 200;
	for (int i = 0; i < n; i++) {
		int64_t acked = run_and_kill(dir);
		check_before_recovery(dir);
		check_tablets(dir);
		long now_k = verify(dir, acked);
		assert_true(now_k >= k);
		k = now_k;
	}
	uint64_t seg = last_segment(dir);
	print_message("crash: %d kills survived, %ld batches stored, log at segment %" PRIu64 "\n",
	              n, k, seg);
	assert_true(seg >= (uint64_t)n / 5); /* the kills met many rollovers */
	sync_mode = TS_SYNC_COMMIT;
	flush_every = 0;
	ts_test_rmdir(dir);
}

static void crash_rollover_sync_none_keeps_acked(void **state) { (void)state; crash_rollovers(TS_SYNC_NONE); }
static void crash_rollover_sync_interval_keeps_acked(void **state) { (void)state; crash_rollovers(TS_SYNC_INTERVAL); }
static void crash_rollover_sync_commit_keeps_acked(void **state) { (void)state; crash_rollovers(TS_SYNC_COMMIT); }

/* Force the page size of the logs opened from now on (the killed
 * children's too, forked after): honoured, as it is larger than the
 * machine's (or the machine's own). */
static void force_pages(size_t size)
{
	size_t real = (size_t)sysconf(_SC_PAGESIZE);
	assert_int_equal(ts__log_force_page_size(size), size > real ? size : real);
}

static void crash_garbage_tail_16k_pages_keeps_prefix(void **state)
{
	(void)state;
	force_pages(16384);
	crash_loop(garbage_after_end);
	force_pages(0);
}

static void crash_garbage_tail_64k_pages_keeps_prefix(void **state)
{
	(void)state;
	force_pages(65536);
	crash_loop(garbage_after_end);
	force_pages(0);
}

static void crash_rollover_64k_pages_keeps_acked(void **state)
{
	(void)state;
	force_pages(65536);
	crash_rollovers(TS_SYNC_COMMIT);
	force_pages(0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(crash_sigkill_keeps_prefix),
		cmocka_unit_test(crash_garbage_tail_keeps_prefix),
		cmocka_unit_test(crash_truncated_tail_keeps_prefix),
		cmocka_unit_test(crash_during_flushes_keeps_prefix),
		cmocka_unit_test(crash_during_merges_keeps_prefix),
		cmocka_unit_test(crash_garbage_tail_16k_pages_keeps_prefix),
		cmocka_unit_test(crash_garbage_tail_64k_pages_keeps_prefix),
	};
	const struct CMUnitTest segment_tests[] = {
		cmocka_unit_test(crash_rollover_sync_none_keeps_acked),
		cmocka_unit_test(crash_rollover_sync_interval_keeps_acked),
		cmocka_unit_test(crash_rollover_sync_commit_keeps_acked),
		cmocka_unit_test(crash_rollover_64k_pages_keeps_acked),
	};
	/* test_crash_segments: the library of 1 MiB segments */
	if (TS_SEG_DATA_SHIFT < 26)
		return cmocka_run_group_tests_name("crash_segments", segment_tests, NULL, NULL);
	return cmocka_run_group_tests_name("crash", tests, NULL, NULL);
}
