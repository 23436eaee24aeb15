/*
 * test_fault.c -- failing file-system calls, one at a time, all along a
 * workload: every public call reports the failure as a TS_E* code with a
 * message, the handle keeps serving reads, and after a restart nothing
 * acknowledged is lost and ts_check finds nothing wrong.
 *
 * How faults are injected (fault.h, fault.c).  This program is linked
 * with -Wl,--wrap=SYM for each file-system call libtsstore makes (open,
 * read, pread, pwrite, fsync, msync, rename, renameat2, link, unlink,
 * rmdir, mkdir, ftruncate, fallocate, mmap, sync_file_range, stat, lstat,
 * fstat, access, opendir: the Makefile's FAULT_WRAP, checked against
 * `nm -u libtsstore.a` at link time), so the library's calls reach the
 * counting wrappers of fault.c.  A dry run of a workload counts the calls
 * of a chosen set that one scope of threads makes; the workload then runs
 * again for every n from 1 to that count, with the n-th call failing
 * (-1 and errno ENOSPC or EIO, the real call not made).  Scope: either
 * the test's thread -- the library's own threads (segment preparer,
 * maintenance) are then not counted, so the n-th call is the same call
 * in every run -- or those other threads (the segment preparer's calls,
 * also a fixed sequence).  In a sticky run every call of the set from
 * the n-th on fails, a disk that stays full; the test then frees the
 * space and the same handle must work again.  The syncs themselves are
 * skipped (fault_skip_syncs; TSSTORE_FAULT_SYNC=1 makes them): no power
 * is lost here, and the library cannot tell.
 *
 * The test is linked with the library of 1 MiB log segments the Makefile
 * builds for test_crash_segments (SMALLSEG), so that a workload of a few
 * thousand rows crosses segments.
 *
 * The workloads, in sync mode commit under a fixed clock, no background
 * merges:
 *   - "main": ts_open, ts_create, ts_table_open, batches of ROWS rows
 *     with a ts_flush after the 3rd and the 5th, ts_alter_add of a column
 *     after the 6th, two more, ts_flush, ts_merge (three tablets of one
 *     period into one), ts_backup (then ts_backup_incremental into the
 *     copy), ts_create and ts_drop of a second
 *     table, two more batches, ts_close;
 *   - "rollover": batches of BIG_ROWS rows with long keys, flushed every
 *     third: the log crosses two segment boundaries (the segment
 *     preparer at work) and flushes release segments;
 *   - "background": the same batches with a small flush_size and no
 *     ts_flush: the maintenance thread flushes beside the inserts.
 * The sweeps: the main workload's calls that change files, with ENOSPC
 * and with EIO, and its other calls (reads, stats, listings) with EIO;
 * the roll-over workload's likewise; the segment preparer's calls and the
 * maintenance thread's (scope: other threads; a failure there must reach
 * no public call, and the flush is retried on the next pass); and a disk
 * that stays full from the n-th call on.
 * After a failure the workload goes on as a client would: it opens the
 * database, creates or opens the table again if that failed, and carries
 * on with the next step; a failed batch is not retried.
 *
 * What a failed insert may leave (DESIGN.md section 2): a batch is
 * atomic, so a batch whose ts_insert returned an error is wholly there
 * or wholly absent, never in part.  It may be there: in TS_SYNC_COMMIT
 * mode a batch that was committed but whose msync failed returns TS_EIO
 * "committed but not yet durable", and stays visible.  So the rules are:
 *   - every public call returns 0 or TS_EIO / TS_ENOSPC with a non-empty
 *     ts_errmsg; an error with no failure injected, or (one failure
 *     injected) a second failing call, fails the test: errors do not
 *     stick;
 *   - after each failed call a query on the same handle returns every
 *     row of every acknowledged batch, exactly, each failed batch whole
 *     or not at all, in key order, and nothing else; a failed batch that
 *     was absent never appears later, one that was there never goes;
 *   - ts_backup either returns 0 and the copy opens, passes ts_check and
 *     holds exactly the batches the handle showed when it began, or it
 *     leaves no temporary directory (and dest only when just the final
 *     sync of its parent failed: a complete copy, checked the same way);
 *   - a dropped table (ts_drop returned 0) is gone after the restart;
 *   - after ts_close (whatever it returned) the files pass ts_check as
 *     left (read-only open, no recovery), and a read-write reopen without
 *     faults (the "restart") returns exactly the batches the handle
 *     showed last -- the acknowledged ones and, whole, any failed one it
 *     showed: no data is really lost here, so a batch seen must not
 *     vanish and a batch not seen must not come back; then ts_check
 *     passes again and the table takes a new batch, a flush and a merge;
 *   - a failure that no public call reports ("absorbed") must be one of
 *     the few whose result nothing depends on (see absorbable[]).
 * The fault_*_is_* / fault_*_keeps_* tests each fail one chosen call in
 * one operation: the bugs these sweeps found, one test each.
 *
 * Run time: make check takes every n of the main workload for ENOSPC,
 * and samples the rest (every 3rd to 5th n; the segment preparer: every
 * n): some 570 runs, about 11 s of CPU.  TSSTORE_FAULT_FULL=1 takes
 * every n everywhere: some 1400 runs, about 45 s of CPU.  TSSTORE_FAULT_VERBOSE=1 prints
 * each workload's calls and what became of each fault point;
 * TSSTORE_FAULT_ONLY=PATTERN runs the matching tests, TSSTORE_FAULT_N=n
 * the n-th point of each sweep only, and TSSTORE_FAULT_BACKTRACE=1
 * prints where each failed call was made (addr2line -e test_fault).
 */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
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

#include "fault.h"
#include "log_format.h"
#include "support.h"

#define SEC INT64_C(1000000000)
#define HOUR (3600 * SEC)
/* 2026-11-21T14:00:00Z: two hours into a 4-hour period, so every row of
 * the workloads (the hour before) falls in the same period. */
#define NOW (INT64_C(1795262400000000000) + 2 * HOUR)
#define ROWS 6              /* rows per batch, main workload */
#define BIG_ROWS 800        /* rows per batch, roll-over workload */
#define BIG_PAD 240         /* and the length of their hosts' padding */
#define HOST_MAX 272
#define NBATCH 10           /* batches of a workload */
#define AFTER_FREE (NBATCH + 1) /* inserted once the disk has room again */
#define AFTER_RESTART (NBATCH + 2) /* inserted after the restart */
#define MAXB (NBATCH + 3)
#define X_DEFAULT 7         /* the default of the added column x */
#define V_BATCH 100000      /* v = batch * V_BATCH + row */

static int verbose;

static int env_flag(const char *name)
{
	const char *s = getenv(name);
	return s && *s && strcmp(s, "0") != 0;
}

static int64_t fixed_clock(void *arg)
{
	(void)arg;
	return NOW;
}

/* flush_size: 0 for the default.  Flushes compress on three threads
 * whatever the machine: the roll-over and background workloads' flushes
 * of several blocks then go through the writer's pool (tablet_write.c),
 * whose blocks' writes must fail as cleanly as the serial writer's. */
static void open_options(ts_options *o, unsigned flags, int64_t flush_size)
{
	ts_options_init(o);
	o->flags = flags | TS_OPEN_NOMERGE;
	o->sync = TS_SYNC_COMMIT;
	o->clock = fixed_clock;
	o->flush_threads = 3;
	if (flush_size)
		o->flush_size = flush_size;
}

/* Row i of batch b: keys and values all derived from (b, i); the host
 * name is padded to pad more bytes. */
static void gen_row(int b, int i, int pad, char host[HOST_MAX], int64_t *ts, int64_t *v)
{
	snprintf(host, HOST_MAX, "h%d-%.*s", (b * 7 + i) % 3, pad,
	         "................................................................"
	         "................................................................"
	         "................................................................"
	         "................................................................");
	*ts = NOW - HOUR + (int64_t)b * 10 * SEC + (int64_t)i * 1000;
	*v = (int64_t)b * V_BATCH + i;
}

/* ---- one run of a workload ---- */

struct run {
	char *root;                /* temporary directory holding db/ and bk/ */
	char db[512], bk[512];
	int rows, pad;             /* per batch; host padding (gen_row) */
	int64_t flush_size;        /* option of the workload's ts_open, 0: default */
	int attempted[MAXB];       /* ts_insert was called for the batch */
	int acked[MAXB];           /* ... and returned 0 */
	int ncols[MAXB];           /* values per row it was given (4 or 5) */
	uint64_t seen;             /* batches in the last read of the handle */
	uint64_t seen_attempted;   /* batches attempted by then */
	int have_seen;
	int errors;                /* public calls that failed */
	int first_rc;              /* the first one's code, step and message */
	char first_step[32], first_msg[256];
	int sticky;                /* a disk that stays full: calls go on failing */
	int backup_ok;             /* ts_backup returned 0 */
	uint64_t backup_want;      /* batches the copy must hold */
	int scratch_created, scratch_dropped; /* ts_create, ts_drop returned 0 */
	int64_t log_tail;          /* log_tail_lsn before ts_close */
	int settle;                /* let the preparer finish its drops before
	                            * ts_close: a sweep of this thread's calls */
	long calls_at_finish;      /* calls counted when the workload ended */
	int leftovers;             /* temporary files as the run left them */
};

static int create_table(ts_db *db, const char *name)
{
	ts_column cols[] = {
		{"host", TS_STRING, {TS_NONE, {0}}}, {"ts", TS_TIMESTAMP, {TS_NONE, {0}}},
		{"batch", TS_INT64, {TS_NONE, {0}}}, {"v", TS_INT64, {TS_NONE, {0}}},
	};
	const char *key[] = {"host", "ts"};
	return ts_create_keyed(db, name, cols, 4, key, 2, 0);
}

static uint64_t bit(int b) { return UINT64_C(1) << b; }

static uint64_t attempted_mask(const struct run *r)
{
	uint64_t m = 0;
	for (int b = 1; b < MAXB; b++)
		if (r->attempted[b])
			m |= bit(b);
	return m;
}

/* Check one row against gen_row and the previous row's key; b, i: its
 * batch and index. */
static void check_row(const struct run *r, const ts_value *row, int n, const char *when,
                      char prev[HOST_MAX], int64_t *prev_ts, int *b, int *i)
{
	char host[HOST_MAX], got[HOST_MAX];
	int64_t ts, v;
	if (n != 4 && n != 5)
		fail_msg("%s: a row of %d values", when, n);
	*b = (int)row[2].v.i;
	*i = (int)(row[3].v.i - row[2].v.i * V_BATCH);
	if (*b < 1 || *b >= MAXB || *i < 0 || *i >= r->rows)
		fail_msg("%s: a row of no batch (batch %" PRId64 ", v %" PRId64 ")", when,
		         row[2].v.i, row[3].v.i);
	gen_row(*b, *i, r->pad, host, &ts, &v);
	if (row[0].v.s.len >= sizeof got)
		fail_msg("%s: batch %d row %d: host too long", when, *b, *i);
	memcpy(got, row[0].v.s.ptr, row[0].v.s.len);
	got[row[0].v.s.len] = '\0';
	if (strcmp(got, host) != 0 || row[1].v.i != ts)
		fail_msg("%s: batch %d row %d has key (%s, %" PRId64 ")", when, *b, *i, got, row[1].v.i);
	if (n == 5 && row[4].v.i != (r->ncols[*b] == 5 ? v + 1 : X_DEFAULT))
		fail_msg("%s: batch %d row %d: x = %" PRId64, when, *b, *i, row[4].v.i);
	int order = strcmp(prev, got);
	if (order > 0 || (order == 0 && *prev_ts >= ts))
		fail_msg("%s: rows out of key order at batch %d row %d", when, *b, *i);
	strcpy(prev, got);
	*prev_ts = ts;
}

/* Every row of t through ts_query, each checked (check_row), every batch
 * whole or absent, no batch never inserted, every acknowledged one.
 * *mask receives the batches present (bit b).  Returns 0, or the error
 * of the query (the batches are then not checked). */
static int read_batches(const struct run *r, ts_table *t, const char *when, uint64_t *mask)
{
	ts_query q;
	ts_cursor *c = NULL;
	const ts_value *row;
	int n, rc, count[MAXB] = {0};
	char prev[HOST_MAX] = "";
	int64_t prev_ts = INT64_MIN;
	memset(&q, 0, sizeof q);
	if ((rc = ts_query_open(t, &q, &c)) != 0)
		return rc;
	while ((rc = ts_cursor_next(c, &row, &n)) == 0 && row) {
		int b, i;
		check_row(r, row, n, when, prev, &prev_ts, &b, &i);
		count[b]++;
	}
	ts_cursor_close(c);
	if (rc != 0)
		return rc;
	*mask = 0;
	for (int b = 1; b < MAXB; b++) {
		if (count[b] != 0 && count[b] != r->rows)
			fail_msg("%s: batch %d has %d of its %d rows", when, b, count[b], r->rows);
		if (count[b] && !r->attempted[b])
			fail_msg("%s: batch %d was never inserted", when, b);
		if (!count[b] && r->acked[b])
			fail_msg("%s: acknowledged batch %d is missing", when, b);
		if (count[b])
			*mask |= bit(b);
	}
	return 0;
}

/* Note a read of the handle: a batch once there stays; one attempted
 * before the previous read and absent then stays absent. */
static void note_seen(struct run *r, uint64_t mask, const char *when)
{
	if (r->have_seen) {
		uint64_t gone = r->seen & ~mask, back = mask & ~r->seen & r->seen_attempted;
		if (gone || back)
			fail_msg("%s: batches changed since the last read (gone %#" PRIx64
			         ", appeared %#" PRIx64 ")", when, gone, back);
	}
	r->seen = mask;
	r->seen_attempted = attempted_mask(r);
	r->have_seen = 1;
}

static void after(struct run *r, ts_table *t, const char *step, int rc);

/* A read of the handle as a step of the workload: a failure injected in
 * it is reported like any other, and the read made again. */
static void reread(struct run *r, ts_table *t, const char *step)
{
	uint64_t mask = 0;
	fault_step(step);
	int rc = read_batches(r, t, step, &mask);
	if (rc != 0)
		after(r, t, step, rc); /* reads again */
	else
		note_seen(r, mask, step);
}

/* Check what public call step returned: 0, or an injected failure
 * reported as TS_EIO or TS_ENOSPC with a message -- and then the handle
 * t (if any) must still serve every row it should. */
static void after(struct run *r, ts_table *t, const char *step, int rc)
{
	const char *msg = ts_errmsg(NULL);
	uint64_t mask = 0;
	if (rc == 0)
		return;
	if (fault_failed() == 0)
		fail_msg("%s: %s with no failure injected: %s", step, ts_errname(rc), msg);
	if (r->errors++ == 0) {
		r->first_rc = rc;
		snprintf(r->first_step, sizeof r->first_step, "%s", step);
		snprintf(r->first_msg, sizeof r->first_msg, "%s", msg);
	} else if (!r->sticky) {
		fail_msg("%s: %s (%s), although the one failure injected (%s in %s) was "
		         "already reported by %s: %s", step, ts_errname(rc), msg,
		         fault_failed_call(), fault_failed_step(), r->first_step, r->first_msg);
	}
	if (rc != TS_EIO && rc != TS_ENOSPC)
		fail_msg("%s: %s (%s) for a failed %s", step, ts_errname(rc), msg, fault_failed_call());
	if (!msg || !*msg)
		fail_msg("%s: %s with an empty ts_errmsg", step, ts_errname(rc));
	if (!t)
		return;
	if ((rc = read_batches(r, t, step, &mask)) != 0)
		fail_msg("%s: the handle no longer serves reads: %s: %s", step, ts_errname(rc),
		         ts_errmsg(NULL));
	note_seen(r, mask, step);
}

static ts_db *open_db(struct run *r)
{
	ts_options o;
	ts_db *db = NULL;
	open_options(&o, TS_OPEN_CREATE, r->flush_size);
	for (int k = 0; k < 3 && !db; k++) {
		fault_step("open");
		after(r, NULL, "open", ts_open(r->db, &o, &db));
	}
	if (!db)
		fail_msg("open: %s", ts_errmsg(NULL));
	return db;
}

/* Open table m, creating it when it is not there. */
static ts_table *open_table(struct run *r, ts_db *db)
{
	ts_table *t = NULL;
	for (int k = 0; k < 6 && !t; k++) {
		fault_step("table open");
		int rc = ts_table_open(db, "m", &t);
		if (rc == TS_ENOENT) {
			fault_step("create");
			after(r, NULL, "create", create_table(db, "m"));
		} else {
			after(r, NULL, "table open", rc);
		}
	}
	if (!t)
		fail_msg("table open: %s", ts_errmsg(NULL));
	return t;
}

static const char *const insert_steps[MAXB] = {
	"insert 0", "insert 1", "insert 2", "insert 3", "insert 4", "insert 5", "insert 6",
	"insert 7", "insert 8", "insert 9", "insert 10", "insert 11", "insert 12",
};

/* Insert batch b with as many values per row as t's schema has now. */
static void insert_batch(struct run *r, ts_table *t, int b)
{
	ts_value *vals = calloc((size_t)r->rows * 5, sizeof *vals);
	char (*hosts)[HOST_MAX] = calloc((size_t)r->rows, sizeof *hosts);
	ts_schema *s = NULL;
	assert_true(vals && hosts);
	assert_int_equal(ts_table_schema(t, &s), 0);
	int nc = s->ncolumns;
	ts_schema_free(s);
	assert_true(nc == 4 || nc == 5);
	for (int i = 0; i < r->rows; i++) {
		int64_t ts, v;
		gen_row(b, i, r->pad, hosts[i], &ts, &v);
		ts_value *row = vals + (size_t)i * (size_t)nc;
		row[0] = ts_string(hosts[i]);
		row[1] = ts_timestamp(ts);
		row[2] = ts_int64(b);
		row[3] = ts_int64(v);
		if (nc == 5)
			row[4] = ts_int64(v + 1);
	}
	r->attempted[b] = 1;
	r->ncols[b] = nc;
	fault_step(insert_steps[b]);
	int rc = ts_insert(t, vals, (size_t)r->rows);
	if (rc == 0)
		r->acked[b] = 1;
	free(vals);
	free(hosts);
	after(r, t, insert_steps[b], rc);
}

static void flush(struct run *r, ts_table *t, const char *step)
{
	fault_step(step);
	after(r, t, step, ts_flush(t, INT64_MAX));
}

static void alter(struct run *r, ts_table *t)
{
	ts_column x = {"x", TS_INT64, {TS_INT64, {X_DEFAULT}}};
	fault_step("alter");
	after(r, t, "alter", ts_alter_add(t, &x));
}

static void merge(struct run *r, ts_table *t)
{
	int merged = -1;
	fault_step("merge");
	int rc = ts_merge(t, &merged);
	after(r, t, "merge", rc);
	if (rc == 0 && !r->errors)
		assert_int_equal(merged, 1); /* the three tablets of the period, into one */
}

static void backup(struct run *r, ts_db *db, ts_table *t)
{
	reread(r, t, "read before backup");
	r->backup_want = r->seen;
	fault_step("backup");
	int rc = ts_backup(db, r->bk);
	r->backup_ok = rc == 0;
	after(r, t, "backup", rc);
	if (rc != 0)
		return;
	/* brought up to date at once: the same batches, whether the earlier
	 * copy or the new one is there after a fault (never neither) */
	fault_step("incremental backup");
	rc = ts_backup_incremental(db, r->bk);
	after(r, t, "incremental backup", rc);
}

static void scratch(struct run *r, ts_db *db, ts_table *t)
{
	fault_step("create scratch");
	int rc = create_table(db, "scratch");
	r->scratch_created = rc == 0;
	after(r, t, "create scratch", rc);
	if (rc != 0)
		return;
	fault_step("drop scratch");
	rc = ts_drop(db, "scratch");
	r->scratch_dropped = rc == 0;
	after(r, t, "drop scratch", rc);
}

/* The end of every workload.  In a sticky run the disk gets room again
 * first: the same handle must then take a batch and a flush. */
static void finish(struct run *r, ts_db *db, ts_table *t)
{
	r->calls_at_finish = fault_count();
	if (r->sticky) {
		fault_stop();
		r->sticky = 0;
		insert_batch(r, t, AFTER_FREE);
		if (!r->acked[AFTER_FREE])
			fail_msg("disk full, then room again: insert: %s", ts_errmsg(NULL));
		if (ts_flush(t, INT64_MAX) != 0)
			fail_msg("disk full, then room again: flush: %s", ts_errmsg(NULL));
	}
	reread(r, t, "read before close");
	r->log_tail = ts_test_stat(t, "log_tail_lsn");
	/* The preparer deletes the segments the flushes released, and syncs
	 * their directory, in the background; what it has not come to, the
	 * table's close does on this thread -- a call or two more or fewer
	 * from run to run (an fsync in close: a dry run of 185 calls, then
	 * runs of 183, and the sweep's count of fault points was off). */
	if (r->settle && !ts_test_log_settle(t))
		fail_msg("the log's preparer did not delete the released segments within 10 s");
	fault_step("close");
	ts_table_close(t);
	after(r, NULL, "close", ts_close(db));
}

static void workload_main(struct run *r)
{
	r->rows = ROWS;
	ts_db *db = open_db(r);
	ts_table *t = open_table(r, db);
	int b = 1;
	for (; b <= 3; b++)
		insert_batch(r, t, b);
	flush(r, t, "flush 1");
	for (; b <= 5; b++)
		insert_batch(r, t, b);
	flush(r, t, "flush 2");
	insert_batch(r, t, b++);
	alter(r, t);
	for (; b <= 8; b++)
		insert_batch(r, t, b);
	flush(r, t, "flush 3");
	merge(r, t);
	backup(r, db, t);
	scratch(r, db, t);
	for (; b <= NBATCH; b++)
		insert_batch(r, t, b);
	finish(r, db, t);
}

static const char *const flush_steps[] = {"flush 0", "flush 1", "flush 2", "flush 3", "flush 4"};

static void workload_rollover(struct run *r)
{
	r->rows = BIG_ROWS;
	r->pad = BIG_PAD;
	ts_db *db = open_db(r);
	ts_table *t = open_table(r, db);
	for (int b = 1; b <= NBATCH; b++) {
		insert_batch(r, t, b);
		if (b % 3 == 0)
			flush(r, t, flush_steps[b / 3]);
	}
	finish(r, db, t);
}

/* Inserts only: the maintenance thread flushes each tree as it reaches
 * flush_size, beside the inserts. */
static void workload_background(struct run *r)
{
	r->rows = BIG_ROWS;
	r->pad = BIG_PAD;
	r->flush_size = 256 << 10;
	ts_db *db = open_db(r);
	ts_table *t = open_table(r, db);
	for (int b = 1; b <= NBATCH; b++)
		insert_batch(r, t, b);
	finish(r, db, t);
}

/* ---- after the run, without faults ---- */

static int problems;

static void count_problem(void *arg, const char *table, const char *file, const char *what)
{
	(void)arg;
	fprintf(stderr, "  check: %s: %s: %s\n", table, file, what);
	problems++;
}

/* ts_check of the database at dir: nothing to report. */
static void check_db(const char *dir, unsigned flags, const char *when)
{
	ts_options o;
	ts_db *db;
	ts_check_opts co = {count_problem, NULL, NULL};
	open_options(&o, flags, 0);
	if (ts_open(dir, &o, &db) != 0)
		fail_msg("%s: open %s: %s", when, dir, ts_errmsg(NULL));
	problems = 0;
	int rc = ts_check(db, NULL, &co);
	if (rc != 0 || problems)
		fail_msg("%s: ts_check: %s, %d problems: %s", when, ts_errname(rc), problems,
		         ts_errmsg(NULL));
	assert_int_equal(ts_close(db), 0);
}

/* The copy holds exactly the batches visible when ts_backup began. */
static void check_backup(const struct run *r)
{
	char tmp[600];
	struct stat st;
	snprintf(tmp, sizeof tmp, "%s.tmp-%ld", r->bk, (long)getpid());
	if (lstat(tmp, &st) == 0)
		fail_msg("backup: %s was left behind (backup returned %d)", tmp, r->backup_ok);
	if (lstat(r->bk, &st) != 0) {
		if (r->backup_ok)
			fail_msg("backup: returned 0 but %s is missing", r->bk);
		return;
	}
	ts_options o;
	ts_db *db;
	ts_table *t;
	uint64_t mask;
	open_options(&o, TS_OPEN_READONLY, 0);
	if (ts_open(r->bk, &o, &db) != 0 || ts_table_open(db, "m", &t) != 0)
		fail_msg("backup: open the copy: %s", ts_errmsg(NULL));
	struct run copy = *r; /* the acknowledged batches of then */
	for (int b = 1; b < MAXB; b++)
		copy.acked[b] = r->acked[b] && (r->backup_want & bit(b));
	assert_int_equal(read_batches(&copy, t, "backup copy", &mask), 0);
	if (mask != r->backup_want)
		fail_msg("backup: the copy holds batches %#" PRIx64 ", not %#" PRIx64, mask,
		         r->backup_want);
	ts_table_close(t);
	assert_int_equal(ts_close(db), 0);
	check_db(r->bk, TS_OPEN_READONLY, "backup copy");
}

/* Temporary files in the tree at dir (*.tmp*, .tmp-*, .dropped-*): what
 * an operation that failed left for the next open to remove. */
static int leftovers(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;
	if (!d)
		return 0;
	while ((e = readdir(d))) {
		char path[1024];
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
		if (strstr(e->d_name, ".tmp") || !strncmp(e->d_name, ".dropped-", 9)) {
			if (verbose)
				printf("    left: %s\n", path);
			n++;
		}
		if (e->d_type == DT_DIR)
			n += leftovers(path);
	}
	closedir(d);
	return n;
}

/* The restart: ts_check as left; exactly the batches the handle showed
 * last; the dropped table gone; ts_check after the writer's open; a new
 * batch, flush and merge. */
static void restart(struct run *r)
{
	ts_options o;
	ts_db *db;
	ts_table *t;
	uint64_t mask;
	r->leftovers = leftovers(r->db);
	check_db(r->db, TS_OPEN_READONLY, "as left");
	open_options(&o, 0, 0);
	if (ts_open(r->db, &o, &db) != 0)
		fail_msg("restart: open: %s", ts_errmsg(NULL));
	if (ts_table_open(db, "m", &t) != 0)
		fail_msg("restart: table open: %s", ts_errmsg(NULL));
	assert_int_equal(read_batches(r, t, "restart", &mask), 0);
	if (mask != r->seen)
		fail_msg("restart: batches %#" PRIx64 ", but the handle showed %#" PRIx64
		         " before ts_close", mask, r->seen);
	ts_table *s = NULL;
	int rc = ts_table_open(db, "scratch", &s);
	if (rc != TS_ENOENT && (rc != 0 || r->scratch_dropped))
		fail_msg("restart: table scratch (created %d, dropped %d): %s: %s",
		         r->scratch_created, r->scratch_dropped, ts_errname(rc), ts_errmsg(NULL));
	ts_table_close(s);
	insert_batch(r, t, AFTER_RESTART);
	assert_true(r->acked[AFTER_RESTART]);
	assert_int_equal(ts_flush(t, INT64_MAX), 0);
	assert_int_equal(ts_merge(t, NULL), 0);
	assert_int_equal(read_batches(r, t, "restart, then insert", &mask), 0);
	assert_int_equal(mask, r->seen | bit(AFTER_RESTART));
	ts_table_close(t);
	assert_int_equal(ts_close(db), 0);
	check_db(r->db, 0, "restart");
	if (leftovers(r->db))
		fail_msg("restart: temporary files outlived a read-write open");
}

/* ---- sweeps ---- */

typedef void (*workload_fn)(struct run *);

struct sweep {
	const char *name;
	workload_fn work;
	unsigned mask;
	enum fault_scope scope;
	int err, sticky;
	int loose;                 /* the calls' order depends on timing */
	long points, reported, absorbed, leftovers, first;
	struct {
		const char *call, *step;
		int n;
	} quiet[64];               /* distinct absorbed (call, step) pairs */
	int nquiet;
};

/*
 * The failures a public call may absorb (it returns 0): "call@step",
 * the step without its number.  Each is a call whose result nothing
 * depends on -- deleting files no descriptor names any more, and syncing
 * their directory (the next open removes what stays); the clean-close
 * flag of the log; the writer's HEAD file, which readers, recovery and
 * ts_backup only use as a hint (without it, a backup copies the whole
 * log), and the machine's boot id it is read against (unknown, HEAD is
 * believed only as far as it was synced); stat-like checks whose failure only sends the code down its
 * slower, still correct path; the count of quarantine/'s files, a counter
 * (tablets_quarantined), not data; allocating log blocks ahead of need.  Any other absorbed failure -- a write, a
 * sync, a rename, an allocation -- would be data acknowledged on a
 * failure, and fails the sweep.
 */
static const char *const absorbable[] = {
	"unlink@merge", "open@merge", "fsync@merge",   /* the inputs' deletion */
	"msync@close",                                 /* the clean flag */
	"open@backup", "fstat@backup", "mmap@backup", "pread@backup", /* HEAD */
	"read@backup", "read@table open", /* the boot id HEAD is read against */
	/* the same, and an earlier copy's tablet that cannot be read (it is
	 * taken from the database instead) */
	"open@incremental backup", "fstat@incremental backup", "mmap@incremental backup",
	"pread@incremental backup", "read@incremental backup",
	"open@table open",                             /* HEAD, in recovery */
	"stat@table open",                             /* DESCRIPTOR's inode */
	"opendir@table open",                          /* the quarantine/ count, a counter */
	"lstat@create", "lstat@create scratch",        /* "exists already?" */
	"access@insert",                               /* "segment made yet?" */
	/* allocating log blocks ahead of the tail (a warming, or more than
	 * the record needs, retried for the record alone): the log stores
	 * only into blocks whose allocation succeeded (its window stops at
	 * them), so a failure there only allocates less ahead */
	"fallocate@insert",
};

static int may_absorb(const char *call, const char *step)
{
	char what[64];
	size_t n = strlen(step);
	while (n && (step[n - 1] == ' ' || (step[n - 1] >= '0' && step[n - 1] <= '9')))
		n--;
	snprintf(what, sizeof what, "%s@%.*s", call, (int)n, step);
	for (size_t i = 0; i < sizeof absorbable / sizeof *absorbable; i++)
		if (!strcmp(what, absorbable[i]))
			return 1;
	return 0;
}

static void note_absorbed(struct sweep *s, const char *call, const char *step)
{
	if (s->scope == FAULT_THIS_THREAD && !may_absorb(call, step))
		fail_msg("%s: a failed %s in %s was absorbed: no public call reported it",
		         s->name, call, step);
	s->absorbed++;
	for (int i = 0; i < s->nquiet; i++)
		if (!strcmp(s->quiet[i].call, call) && !strcmp(s->quiet[i].step, step)) {
			s->quiet[i].n++;
			return;
		}
	if (s->nquiet < 64) {
		s->quiet[s->nquiet].call = call;
		s->quiet[s->nquiet].step = step;
		s->quiet[s->nquiet++].n = 1;
	}
}

/* One run: the workload with call n failing (0: none), then the checks.
 * Returns the number of calls counted. */
static long run_once(struct sweep *s, long n, struct run *out)
{
	struct run r;
	memset(&r, 0, sizeof r);
	r.root = ts_test_tmpdir();
	r.sticky = s->sticky && n > 0;
	r.settle = s->scope == FAULT_THIS_THREAD;
	snprintf(r.db, sizeof r.db, "%s/db", r.root);
	snprintf(r.bk, sizeof r.bk, "%s/bk", r.root);
	fault_start(s->mask, s->scope, n, s->err, s->sticky);
	s->work(&r);
	long calls = fault_stop();
	const char *call = fault_failed_call(), *step = fault_failed_step();
	if (n > 0 && n <= calls) {
		s->points++;
		if (!call && !s->loose)
			fail_msg("%s n=%ld: no call failed", s->name, n);
		if (!call) {
			s->points--; /* this run made fewer calls */
			call = step = "(none)";
		}
		if (r.errors)
			s->reported++;
		else
			note_absorbed(s, call, step);
		if (verbose)
			printf("  %s n=%ld: %s in %s -> %s%s%s\n", s->name, n, call, step,
			       r.errors ? ts_errname(r.first_rc) : "0", r.errors ? " from " : "",
			       r.errors ? r.first_step : "");
	}
	if (n == 0 && verbose)
		for (long i = 1; i <= calls && fault_trace_call(i); i++)
			printf("  %s call %ld: %s in %s\n", s->name, i, fault_trace_call(i),
			       fault_trace_step(i));
	check_backup(&r);
	restart(&r);
	s->leftovers += r.leftovers > 0;
	ts_test_rmdir(r.root);
	if (out)
		*out = r;
	return calls;
}

static double seconds(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* The dry run, then every n from 1 (or s->first) to its count -- every
 * step-th in make check, every one with TSSTORE_FAULT_FULL. */
static void sweep(struct sweep *s, long step, struct run *dry)
{
	double t0 = seconds();
	struct run r;
	long calls = run_once(s, 0, &r);
	/* a sticky run has room again from its end on: no point after it */
	long last = s->sticky ? r.calls_at_finish : calls;
	if (verbose)
		printf("  %s: log tail at %" PRId64 " (segment size %" PRIu64 ")\n", s->name,
		       r.log_tail, (uint64_t)TS_SEG_DATA);
	if (dry)
		*dry = r;
	assert_true(calls > 0);
	if (env_flag("TSSTORE_FAULT_FULL")) {
		step = 1;
		if (!s->sticky) /* where a sticky sweep starts is no sample */
			s->first = 1;
	}
	const char *only = getenv("TSSTORE_FAULT_N"); /* one fault point, to debug it */
	for (long n = s->first ? s->first : 1; n <= last; n += step)
		if (!only || atol(only) == n)
			run_once(s, n, NULL);
	printf("  %s: %ld calls in the workload, %ld fault points tried in %.1f s: "
	       "%ld reported by a public call, %ld absorbed; %ld left temporary files\n",
	       s->name, calls, s->points, seconds() - t0, s->reported, s->absorbed, s->leftovers);
	for (int i = 0; s->scope == FAULT_THIS_THREAD && i < s->nquiet; i++)
		printf("    absorbed: %s in %s (x%d)\n", s->quiet[i].call, s->quiet[i].step,
		       s->quiet[i].n);
	fflush(stdout);
	if (!s->loose && !only)
		assert_int_equal(s->points, (last - (s->first ? s->first : 1)) / step + 1);
}

static void fault_main_enospc_every_mutating_call(void **state)
{
	(void)state;
	struct sweep s = {.name = "main ENOSPC/mutating", .work = workload_main,
	                  .mask = FAULT_MUTATING, .err = ENOSPC};
	sweep(&s, 1, NULL);
}

static void fault_main_eio_mutating_calls(void **state)
{
	(void)state;
	struct sweep s = {.name = "main EIO/mutating", .work = workload_main,
	                  .mask = FAULT_MUTATING, .err = EIO, .first = 2};
	sweep(&s, 4, NULL);
}

static void fault_main_eio_reading_calls(void **state)
{
	(void)state;
	struct sweep s = {.name = "main EIO/reading", .work = workload_main,
	                  .mask = FAULT_ALL & ~FAULT_MUTATING, .err = EIO};
	sweep(&s, 3, NULL);
}

static void fault_rollover_enospc_mutating_calls(void **state)
{
	(void)state;
	struct sweep s = {.name = "rollover ENOSPC/mutating", .work = workload_rollover,
	                  .mask = FAULT_MUTATING, .err = ENOSPC};
	struct run dry;
	sweep(&s, 3, &dry);
	/* the workload did cross segments: two roll-overs at least */
	assert_true((dry.log_tail >> TS_SEG_DATA_SHIFT) >= 2);
}

static void fault_rollover_eio_all_calls(void **state)
{
	(void)state;
	struct sweep s = {.name = "rollover EIO/all", .work = workload_rollover,
	                  .mask = FAULT_ALL, .err = EIO, .first = 3};
	sweep(&s, 5, NULL);
}

/* The segment preparer's calls: when it fails, the writer makes the
 * segment itself, and nothing is reported.  (Loose: ts_close may stop
 * the preparer before or after it takes up its last request.) */
static void fault_rollover_segment_preparer(void **state)
{
	(void)state;
	struct sweep e = {.name = "preparer EIO/all", .work = workload_rollover,
	                  .mask = FAULT_ALL, .scope = FAULT_OTHER_THREADS, .err = EIO, .loose = 1};
	struct sweep n = {.name = "preparer ENOSPC/mutating", .work = workload_rollover,
	                  .mask = FAULT_MUTATING, .scope = FAULT_OTHER_THREADS, .err = ENOSPC,
	                  .loose = 1};
	sweep(&e, 1, NULL);
	sweep(&n, 1, NULL);
	/* two segments made: access, open, fallocate, pwrite, fsync, rename,
	 * open and fsync of the directory, open, fstat, mmap -- each */
	assert_true(e.points >= 22);
	assert_int_equal(e.reported + n.reported, 0);
}

/* The maintenance thread's flushes (and the segment preparer), failing
 * beside the inserts: the flush is retried on its next pass, and no
 * insert fails.  Their calls interleave as the threads run, so the n-th
 * is not the same call in every run. */
static void fault_background_flush(void **state)
{
	(void)state;
	struct sweep e = {.name = "background EIO/all", .work = workload_background,
	                  .mask = FAULT_ALL, .scope = FAULT_OTHER_THREADS, .err = EIO, .loose = 1};
	struct sweep n = {.name = "background ENOSPC/mutating", .work = workload_background,
	                  .mask = FAULT_MUTATING, .scope = FAULT_OTHER_THREADS, .err = ENOSPC,
	                  .loose = 1};
	sweep(&e, 3, NULL);
	sweep(&n, 3, NULL);
	assert_int_equal(e.reported + n.reported, 0);
	assert_true(e.points + n.points > 10);
}

/* Every call that needs room fails from the n-th on, until the workload's
 * end; then there is room again, and the same handle must take a batch
 * and a flush (finish), and the restart checks hold. */
static void fault_disk_full_then_room_again(void **state)
{
	(void)state;
	struct sweep s = {.name = "disk full (sticky ENOSPC)", .work = workload_main,
	                  .mask = FAULT_SPACE, .err = ENOSPC, .sticky = 1};
	/* From the first insert on (before it, open and create would keep
	 * failing): count the calls of ts_open and the table's creation. */
	fault_start(s.mask, FAULT_THIS_THREAD, 0, 0, 0);
	struct run r;
	memset(&r, 0, sizeof r);
	r.rows = ROWS;
	r.root = ts_test_tmpdir();
	snprintf(r.db, sizeof r.db, "%s/db", r.root);
	ts_db *db = open_db(&r);
	ts_table *t = open_table(&r, db);
	s.first = fault_count() + 1;
	fault_stop();
	ts_table_close(t);
	assert_int_equal(ts_close(db), 0);
	ts_test_rmdir(r.root);
	sweep(&s, 4, NULL);
	assert_true(s.reported > 0);
}

/* ---- one call failing in one operation: the bugs the sweeps found ---- */

/* A fresh database with table m open, and what setup made of it. */
struct one {
	struct run r;
	ts_db *db;
	ts_table *t;
};

static void one_open(struct one *o, void (*setup)(struct one *))
{
	memset(o, 0, sizeof *o);
	o->r.rows = ROWS;
	o->r.root = ts_test_tmpdir();
	snprintf(o->r.db, sizeof o->r.db, "%s/db", o->r.root);
	snprintf(o->r.bk, sizeof o->r.bk, "%s/bk", o->r.root);
	o->db = open_db(&o->r);
	o->t = open_table(&o->r, o->db);
	if (setup)
		setup(o);
}

static void one_close(struct one *o)
{
	ts_table_close(o->t);
	if (o->db)
		assert_int_equal(ts_close(o->db), 0);
	ts_test_rmdir(o->r.root);
}

/*
 * Run action on a database made by setup, with the k-th call named call
 * (of the kinds in mask) that action makes failing with err: a dry run
 * finds which it is.  Returns what action returned; *o stays open.
 */
static int fail_in(struct one *o, void (*setup)(struct one *), int (*action)(struct one *),
                   unsigned mask, const char *call, int k, int err)
{
	long at = 0, seen = 0;
	one_open(o, setup);
	fault_start(mask, FAULT_THIS_THREAD, 0, 0, 0);
	assert_int_equal(action(o), 0);
	long calls = fault_stop();
	for (long i = 1; i <= calls && !at; i++)
		if (!strcmp(fault_trace_call(i), call) && ++seen == k)
			at = i;
	if (!at)
		fail_msg("the action makes no %d-th %s", k, call);
	one_close(o);
	one_open(o, setup);
	fault_start(mask, FAULT_THIS_THREAD, at, err, 0);
	int rc = action(o);
	fault_stop();
	assert_int_equal(fault_failed(), 1);
	return rc;
}

static void expect_error(int rc, int want, const char *words)
{
	if (rc != want || !strstr(ts_errmsg(NULL), words))
		fail_msg("got %s (%s), want %s with \"%s\"", ts_errname(rc), ts_errmsg(NULL),
		         ts_errname(want), words);
}

static void setup_batch(struct one *o)
{
	insert_batch(&o->r, o->t, 1);
}

static void setup_three_tablets(struct one *o)
{
	for (int b = 1; b <= 3; b++) {
		insert_batch(&o->r, o->t, b);
		assert_int_equal(ts_flush(o->t, INT64_MAX), 0);
	}
}

static int do_insert(struct one *o)
{
	insert_batch(&o->r, o->t, 2);
	return o->r.acked[2] ? 0 : o->r.first_rc;
}

static int do_flush(struct one *o) { return ts_flush(o->t, INT64_MAX); }
static int do_merge(struct one *o) { return ts_merge(o->t, NULL); }
static int do_alter(struct one *o) { return ts_alter_ttl(o->t, 3600 * SEC); }

static int do_tables(struct one *o)
{
	char **names;
	int n, rc = ts_tables(o->db, &names, &n);
	if (rc == 0) {
		assert_int_equal(n, 1);
		ts_free_names(names);
	}
	return rc;
}

/* Writes of a tablet returned -errno as if it were a TS_E* code: EIO
 * (-5) came out as TS_ENOENT, ENOSPC (-28) as an unknown code, with the
 * message of an older failure. */
static void fault_tablet_write_error_is_reported_as_such(void **state)
{
	(void)state;
	struct one o;
	for (int k = 1; k <= 3; k++) { /* the header, a block, the footer */
		int rc = fail_in(&o, setup_batch, do_flush, FAULT_BIT(FAULT_WRITE), "pwrite", k, EIO);
		expect_error(rc, TS_EIO, "Input/output error");
		one_close(&o);
		rc = fail_in(&o, setup_batch, do_flush, FAULT_BIT(FAULT_WRITE), "pwrite", k, ENOSPC);
		expect_error(rc, TS_ENOSPC, "No space left on device");
		assert_int_equal(ts_flush(o.t, INT64_MAX), 0); /* the tree is flushed again */
		one_close(&o);
	}
}

/* A log segment whose fstat failed was reported as damaged (TS_ECORRUPT,
 * "truncated"). */
static void fault_segment_stat_error_is_not_damage(void **state)
{
	(void)state;
	struct one o;
	int rc = fail_in(&o, NULL, do_insert, FAULT_BIT(FAULT_STAT), "fstat", 1, EIO);
	expect_error(rc, TS_EIO, "stat");
	insert_batch(&o.r, o.t, 3);
	assert_true(o.r.acked[3]);
	one_close(&o);
}

/* A flush's release of the log: the segment files it frees are deleted
 * (and unmapped) by the log's preparer, off the flushing thread -- with
 * every unlink of the calling thread failing, the flush succeeds, the
 * thread made no unlink at all, and the files go all the same.  (They
 * went from the flushing thread, under the table's mutex, before.) */
static void fault_release_off_the_flushing_thread(void **state)
{
	(void)state;
	struct one o;
	char logdir[700];
	uint64_t mask = 0;
	one_open(&o, NULL);
	o.r.rows = BIG_ROWS;
	o.r.pad = BIG_PAD;
	snprintf(logdir, sizeof logdir, "%s/m/log", o.r.db);
	int b = 1;
	for (; b <= NBATCH && ts_test_count_files(logdir, ".seg") < 3; b++)
		insert_batch(&o.r, o.t, b);
	int before = ts_test_count_files(logdir, ".seg");
	assert_true(before >= 3);
	fault_start(FAULT_BIT(FAULT_UNLINK), FAULT_THIS_THREAD, 1, EIO, 1);
	assert_int_equal(ts_flush(o.t, INT64_MAX), 0);
	assert_int_equal(fault_stop(), 0);
	assert_int_equal(fault_failed(), 0);
	int after = before;
	for (int ms = 0; ms < 10000 && after > 2; ms += 10) {
		usleep(10000);
		after = ts_test_count_files(logdir, ".seg");
	}
	assert_true(after <= 2); /* the tail's segment, and one prepared */
	assert_int_equal(read_batches(&o.r, o.t, "after the release", &mask), 0);
	for (int i = 1; i < b; i++)
		assert_true(mask & bit(i));
	one_close(&o);
}

/* A segment whose blocks could not be allocated (ENOSPC) was made sparse
 * instead, to meet the full disk later as a SIGBUS in the mapping. */
static void fault_segment_allocation_failure_is_reported(void **state)
{
	(void)state;
	struct one o;
	int rc = fail_in(&o, NULL, do_insert, FAULT_BIT(FAULT_FALLOCATE), "fallocate", 1, ENOSPC);
	expect_error(rc, TS_ENOSPC, "No space left on device");
	one_close(&o);
}

/* The sync of the table directory after the merge's DESCRIPTOR rename
 * failed: the merge deleted its output, which the DESCRIPTOR in place
 * named -- the rows of the merged tablets were gone after a restart. */
static void fault_merge_keeps_the_output_the_descriptor_names(void **state)
{
	(void)state;
	struct one o;
	/* fsyncs of a merge: output, tablets/, DESCRIPTOR.tmp, the table
	 * directory (the 4th), tablets/ after the inputs' deletion */
	int rc = fail_in(&o, setup_three_tablets, do_merge, FAULT_BIT(FAULT_FSYNC), "fsync", 4, EIO);
	expect_error(rc, TS_EIO, "fsync directory");
	uint64_t mask;
	assert_int_equal(read_batches(&o.r, o.t, "after the merge", &mask), 0);
	assert_int_equal(mask, bit(1) | bit(2) | bit(3));
	ts_table_close(o.t);
	o.t = NULL;
	assert_int_equal(ts_close(o.db), 0);
	o.db = NULL;
	o.r.seen = mask;
	restart(&o.r);
	one_close(&o);
}

/* A table whose DESCRIPTOR could not be stat'ed was left out of
 * ts_tables, and so out of ts_backup, which then succeeded. */
static void fault_table_listing_error_is_reported(void **state)
{
	(void)state;
	struct one o;
	int rc = fail_in(&o, NULL, do_tables, FAULT_BIT(FAULT_STAT), "stat", 1, EIO);
	expect_error(rc, TS_EIO, "DESCRIPTOR");
	one_close(&o);
}

static void setup_scratch(struct one *o)
{
	assert_int_equal(create_table(o->db, "scratch"), 0);
}

static int do_drop(struct one *o) { return ts_drop(o->db, "scratch"); }

/* ts_drop took a failed stat of the table's DESCRIPTOR for "no such
 * table" (TS_ENOENT). */
static void fault_drop_stat_error_is_not_enoent(void **state)
{
	(void)state;
	struct one o;
	int rc = fail_in(&o, setup_scratch, do_drop, FAULT_BIT(FAULT_STAT), "stat", 1, EIO);
	expect_error(rc, TS_EIO, "DESCRIPTOR");
	assert_int_equal(ts_drop(o.db, "scratch"), 0);
	one_close(&o);
}

/* A DESCRIPTOR.tmp whose rename failed stayed behind. */
static void fault_descriptor_rename_failure_leaves_no_tmp(void **state)
{
	(void)state;
	struct one o;
	char path[600];
	struct stat st;
	int rc = fail_in(&o, NULL, do_alter, FAULT_BIT(FAULT_RENAME), "rename", 1, EIO);
	expect_error(rc, TS_EIO, "rename");
	snprintf(path, sizeof path, "%s/m/DESCRIPTOR.tmp", o.r.db);
	assert_int_equal(lstat(path, &st), -1);
	one_close(&o);
}

/* ---- a nearly full disk (issue 24, item 10) ---- */

static int nlogged;
static char logged[1024];

static void catch_log(void *arg, const char *msg)
{
	(void)arg;
	nlogged++;
	snprintf(logged, sizeof logged, "%s", msg);
}

/* Insert row (h, NOW - i s) into t. */
static int insert_one(ts_table *t, int i)
{
	ts_value row[4] = {ts_string("h"), ts_timestamp(NOW - i * SEC), ts_int64(i), ts_int64(i)};
	return ts_insert(t, row, 1);
}

/* Each table's log needs a whole segment before its first row (1028 KiB
 * in this build, 64 MiB in others).  On a disk without that room, every
 * insert used to fail with a bare "No space left on device" and nothing
 * said why.  Now create refuses the table naming the need, an open says
 * it once, inserts name it, and reads go on. */
static void fault_near_full_disk_said_once(void **state)
{
	(void)state;
	char *root = ts_test_tmpdir(), dir[4200];
	ts_options o;
	ts_db *db;
	ts_table *m, *cpu;
	snprintf(dir, sizeof dir, "%s/db", root);
	open_options(&o, TS_OPEN_CREATE, 0);
	o.log = catch_log;
	nlogged = 0;
	assert_int_equal(ts_open(dir, &o, &db), 0);
	assert_int_equal(create_table(db, "m"), 0);
	assert_int_equal(ts_table_open(db, "m", &m), 0);
	assert_int_equal(insert_one(m, 1), 0);             /* m has its segment */
	fault_free_space(512 << 10);
	assert_int_equal(create_table(db, "cpu"), TS_ENOSPC);
	expect_error(TS_ENOSPC, TS_ENOSPC, "table \"cpu\": its log needs 1028 KiB for a new segment "
	             "and the disk has 512 KiB free; the table was not created");
	assert_int_equal(ts_table_open(db, "cpu", &cpu), TS_ENOENT);
	fault_free_space(-1);
	assert_int_equal(create_table(db, "cpu"), 0);
	ts_table_close(m);
	assert_int_equal(ts_close(db), 0);

	fault_free_space(512 << 10);                       /* the disk fills up */
	assert_int_equal(ts_open(dir, &o, &db), 0);
	assert_int_equal(ts_table_open(db, "m", &m), 0);   /* room in its segment */
	assert_int_equal(nlogged, 0);
	assert_int_equal(ts_table_open(db, "cpu", &cpu), 0);
	assert_int_equal(nlogged, 1);                      /* said once, at open */
	assert_string_equal(logged, "table \"cpu\": its log needs 1028 KiB for a new segment and "
	                            "the disk has 512 KiB free; inserts will fail until there is "
	                            "room (reads go on)");
	/* m's first insert since the open allocates blocks past its tail
	 * (recovery punched the rest of its segment out); then the disk is
	 * full, and what m has allocated still takes rows */
	assert_int_equal(insert_one(m, 2), 0);
	fault_start(FAULT_BIT(FAULT_FALLOCATE), FAULT_THIS_THREAD, 1, ENOSPC, 1);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(insert_one(cpu, i), TS_ENOSPC);
		expect_error(TS_ENOSPC, TS_ENOSPC, "the table's log needs 1028 KiB for a new segment "
		             "and the disk has 512 KiB free");
	}
	assert_int_equal(insert_one(m, 3), 0);             /* m still takes rows */
	fault_stop();
	assert_int_equal(ts_test_count_rows(m), 3);                   /* reads go on */
	assert_int_equal(ts_test_count_rows(cpu), 0);
	assert_int_equal(nlogged, 1);
	fault_free_space(-1);                              /* room again */
	assert_int_equal(insert_one(cpu, 1), 0);
	assert_int_equal(ts_test_count_rows(cpu), 1);
	ts_table_close(cpu);
	ts_table_close(m);
	assert_int_equal(ts_close(db), 0);
	ts_test_rmdir(root);
}

/* Blocks of the file at path, in bytes. */
static long long allocated(const char *path)
{
	struct stat st;
	assert_int_equal(stat(path, &st), 0);
	return (long long)st.st_blocks * 512;
}

/* A table's log segment has its full size from the start, but its blocks
 * are allocated as rows arrive (a thousand small tables held 64 MiB of
 * disk each).  When the disk has no room for the next blocks, the insert
 * that needs them fails with ENOSPC and stores nothing -- never a SIGBUS
 * from a store into a hole -- and the next insert once there is room
 * stores its row. */
static void fault_log_blocks_allocated_as_it_fills(void **state)
{
	(void)state;
	char *root = ts_test_tmpdir(), dir[4200], seg[4300];
	ts_options o;
	ts_db *db;
	ts_table *m;
	snprintf(dir, sizeof dir, "%s/db", root);
	snprintf(seg, sizeof seg, "%s/m/log/0000000000000000.seg", dir);
	open_options(&o, TS_OPEN_CREATE, 0);
	assert_int_equal(ts_open(dir, &o, &db), 0);
	assert_int_equal(create_table(db, "m"), 0);
	assert_int_equal(ts_table_open(db, "m", &m), 0);
	assert_int_equal(insert_one(m, 0), 0);
	struct stat st;
	assert_int_equal(stat(seg, &st), 0);
	assert_int_equal(st.st_size, 4096 + (1 << 20));         /* its whole size */
	long long first = allocated(seg);
	assert_true(first >= 4096 + (64 << 10) && first <= 4096 + (64 << 10) + 8192);

	/* the disk fills up: the rows fit in the first 64 KiB, then one
	 * does not */
	fault_free_space(512 << 10);
	fault_start(FAULT_BIT(FAULT_FALLOCATE), FAULT_THIS_THREAD, 1, ENOSPC, 1);
	int i = 1, rc = 0;
	for (; i < 5000 && (rc = insert_one(m, i)) == 0; i++)
		;
	fault_stop();
	assert_int_equal(rc, TS_ENOSPC);
	assert_true(i > 50);                                     /* 64 KiB of rows first */
	expect_error(rc, TS_ENOSPC, "the table's log needs 4 KiB more in its segment and the "
	             "disk has 512 KiB free");
	assert_int_equal(allocated(seg), first);
	assert_int_equal(ts_test_count_rows(m), i);              /* nothing of the failed one */

	fault_free_space(-1);                                    /* room again */
	assert_int_equal(insert_one(m, i), 0);
	assert_int_equal(ts_test_count_rows(m), i + 1);
	assert_true(allocated(seg) >= first + (128 << 10));      /* twice as much added */
	ts_table_close(m);
	assert_int_equal(ts_close(db), 0);
	ts_test_rmdir(root);
}

/* ---- deletes and purge (docs/corrections.md section 3) ---- */

/* Three batches in three tablets, a fourth in the log. */
static void setup_for_delete(struct one *o)
{
	setup_three_tablets(o);
	insert_batch(&o->r, o->t, 4);
}

/* Delete batch 2 (its rows' ts), then purge the table.  *drc and *prc
 * receive what each returned. */
static int delete_then_purge(struct one *o, int *drc, int *prc)
{
	char host[HOST_MAX];
	int64_t first, last, v;
	gen_row(2, 0, o->r.pad, host, &first, &v);
	gen_row(2, o->r.rows - 1, o->r.pad, host, &last, &v);
	ts_query q = {.from = first, .to = last, .has_from = 1, .has_to = 1, .to_inclusive = 1};
	o->r.acked[2] = 0; /* deleted, or not if the delete failed */
	*drc = ts_delete(o->t, &q, NULL, NULL);
	*prc = ts_purge(o->t, NULL, NULL);
	return *drc ? *drc : *prc;
}

/*
 * Every call that changes a file, failing in turn (EIO, then ENOSPC)
 * in a delete and the purge after it: each returns 0 or the failure's
 * code with a message; batch 2 is gone exactly when the delete was
 * committed (it returned 0, or "committed but not yet durable"), the
 * other batches stay; a purge with the fault gone succeeds; ts_check
 * passes as left and after a restart, which shows the same batches.
 */
static void fault_delete_and_purge(void **state)
{
	(void)state;
	int errs[] = {EIO, ENOSPC}, drc, prc;
	long points = 0;
	for (int e = 0; e < 2; e++) {
		struct one o;
		one_open(&o, setup_for_delete);
		fault_start(FAULT_MUTATING, FAULT_THIS_THREAD, 0, 0, 0);
		assert_int_equal(delete_then_purge(&o, &drc, &prc), 0);
		long calls = fault_stop();
		one_close(&o);
		assert_true(calls > 10);
		for (long n = 1; n <= calls; n++, points++) {
			uint64_t mask;
			one_open(&o, setup_for_delete);
			fault_start(FAULT_MUTATING, FAULT_THIS_THREAD, n, errs[e], 0);
			delete_then_purge(&o, &drc, &prc);
			fault_stop();
			for (int k = 0; k < 2; k++) {
				int rc = k ? prc : drc;
				if (rc != 0 && ((rc != TS_EIO && rc != TS_ENOSPC) || !*ts_errmsg(NULL)))
					fail_msg("call %ld (%s): %s returned %s: %s", n, fault_trace_call(n),
					         k ? "purge" : "delete", ts_errname(rc), ts_errmsg(NULL));
			}
			assert_int_equal(read_batches(&o.r, o.t, "after the fault", &mask), 0);
			int deleted = !(mask & bit(2));
			if ((mask | bit(2)) != (bit(1) | bit(2) | bit(3) | bit(4)))
				fail_msg("call %ld (%s): batches %#" PRIx64, n, fault_trace_call(n), mask);
			if (drc == 0 && !deleted)
				fail_msg("call %ld (%s): the delete returned 0 but batch 2 is there", n,
				         fault_trace_call(n));
			if (ts_purge(o.t, NULL, NULL) != 0)
				fail_msg("call %ld (%s): purge again: %s", n, fault_trace_call(n),
				         ts_errmsg(NULL));
			assert_int_equal(read_batches(&o.r, o.t, "after the purge", &mask), 0);
			assert_int_equal(!(mask & bit(2)), deleted);
			ts_table_close(o.t);
			o.t = NULL;
			assert_int_equal(ts_close(o.db), 0);
			o.db = NULL;
			check_db(o.r.db, TS_OPEN_READONLY, "as left");
			o.r.seen = mask;
			restart(&o.r);
			one_close(&o);
		}
	}
	print_message("delete and purge: %ld failure points\n", points);
}

/* An epoch and its fence. */
struct fenced {
	uint64_t epoch, fenced_by;
};

static struct fenced epoch_of(ts_db *db)
{
	ts_epoch e = {{0}, 0};
	struct fenced f;
	assert_int_equal(ts_epoch_get(db, &e), 0);
	assert_int_equal(ts_epoch_fenced_by(db, &f.fenced_by), 0);
	f.epoch = e.epoch;
	return f;
}

/* The epoch and fence as the file says them, read by a read-only
 * handle. */
static struct fenced epoch_on_disk(const char *dir)
{
	ts_options o;
	ts_db *ro = NULL;
	open_options(&o, TS_OPEN_READONLY, 0);
	assert_int_equal(ts_open(dir, &o, &ro), 0);
	struct fenced f = epoch_of(ro);
	assert_int_equal(ts_close(ro), 0);
	return f;
}

static int do_raise(struct one *o) { return ts_epoch_raise(o->db, NULL); }
static int do_fence(struct one *o) { return ts_epoch_fence(o->db, 5); }

/* Every file-system call of a write of EPOCH (op: a raise, or a fence at
 * epoch 5) failing in turn, with EIO and with ENOSPC: the call fails
 * with TS_EIO or TS_ENOSPC and a message saying what (what), the state
 * the handle reports is the one in the file (the old, or the new when
 * only the directory's fsync failed), and the next raise moves both one
 * epoch further.  A sweep would not see a handle that said one thing
 * while the file said another. */
static void epoch_write_each_call(int (*op)(struct one *), const char *what)
{
	static const int errs[] = {EIO, ENOSPC};
	struct one o;
	long calls;
	one_open(&o, NULL);
	fault_start(FAULT_ALL, FAULT_THIS_THREAD, 0, 0, 0);
	assert_int_equal(op(&o), 0);
	calls = fault_stop();
	one_close(&o);
	assert_true(calls >= 6); /* open, write, fsync, rename, open of the directory, fsync */
	for (long at = 1; at <= calls; at++)
		for (int i = 0; i < 2; i++) {
			struct fenced got, disk;
			ts_epoch raised;
			one_open(&o, NULL);
			fault_start(FAULT_ALL, FAULT_THIS_THREAD, at, errs[i], 0);
			int rc = op(&o);
			fault_stop();
			/* ENOSPC is TS_ENOSPC but from the directory's sync
			 * (ts__fsync_dir: TS_EIO for every failure) */
			if (rc != TS_EIO && !(errs[i] == ENOSPC && rc == TS_ENOSPC))
				fail_msg("call %ld (%s) failed with %s: got %s (%s)", at, fault_failed_call(),
				         fault_errno_name(errs[i]), ts_errname(rc), ts_errmsg(NULL));
			assert_non_null(strstr(ts_errmsg(NULL), what));
			got = epoch_of(o.db);
			disk = epoch_on_disk(o.r.db);
			if (got.epoch != disk.epoch || got.fenced_by != disk.fenced_by ||
			    !((disk.epoch == 1 && disk.fenced_by == 0) ||
			      (op == do_raise && disk.epoch == 2 && disk.fenced_by == 0) ||
			      (op == do_fence && disk.epoch == 1 && disk.fenced_by == 5)))
				fail_msg("call %ld (%s) failed: the handle says epoch %llu fenced by %llu, "
				         "the file %llu fenced by %llu", at, fault_failed_call(),
				         (unsigned long long)got.epoch, (unsigned long long)got.fenced_by,
				         (unsigned long long)disk.epoch, (unsigned long long)disk.fenced_by);
			/* the next raise goes past the epoch and the fence alike */
			uint64_t next = (disk.fenced_by ? disk.fenced_by : disk.epoch) + 1;
			assert_int_equal(ts_epoch_raise(o.db, &raised), 0);
			assert_int_equal(raised.epoch, next);
			disk = epoch_on_disk(o.r.db);
			assert_int_equal(disk.epoch, next);
			assert_int_equal(disk.fenced_by, 0);
			one_close(&o);
		}
}

static void fault_epoch_raise_each_call(void **state)
{
	(void)state;
	epoch_write_each_call(do_raise, "raise the epoch");
}

static void fault_epoch_fence_each_call(void **state)
{
	(void)state;
	epoch_write_each_call(do_fence, "record the fence of epoch 5");
}

/* ---- the standby (standby.c) ---- */

/* The frames of a ship from nothing, kept (their payloads copied). */
struct frames {
	ts_frame f[512];
	int n;
};

static void frames_take(ts_table *t, struct frames *fr)
{
	ts_ship *s = NULL;
	ts_frame f;
	int rc;
	fr->n = 0;
	assert_int_equal(ts_ship_open(t, 0, NULL, 0, &s), 0);
	while ((rc = ts_ship_next(s, &f)) == 1) {
		assert_true(fr->n < 512);
		void *p = malloc(f.length ? f.length : 1);
		if (f.length)
			memcpy(p, f.payload, f.length);
		f.payload = p;
		fr->f[fr->n++] = f;
	}
	assert_int_equal(rc, 0);
	ts_ship_close(s);
}

static void frames_free(struct frames *fr)
{
	for (int i = 0; i < fr->n; i++)
		free((void *)fr->f[i].payload);
}

/* Open a standby in dir and apply the frames until one fails: 0, or the
 * failure.  The standby is closed either way. */
static int standby_run(const char *dir, const struct frames *fr)
{
	ts_standby *sb = NULL;
	int rc = ts_standby_open(dir, &sb);
	for (int i = 0; rc == 0 && i < fr->n; i++)
		rc = ts_standby_apply(sb, "m", &fr->f[i]);
	int crc = sb ? ts_standby_close(sb) : 0;
	return rc < 0 ? rc : crc;
}

/* The standby in dir resumed from what it says it holds, with no fault:
 * it then holds the primary's rows and passes ts_check. */
static void standby_finish_and_compare(const char *dir, ts_table *primary)
{
	ts_standby *sb = NULL;
	ts_standby_table *st = NULL;
	ts_ship *s = NULL;
	ts_frame f;
	int n = 0, rc;
	assert_int_equal(ts_standby_open(dir, &sb), 0);
	assert_int_equal(ts_standby_state(sb, &st, &n), 0);
	assert_true(n <= 1);
	assert_int_equal(ts_ship_open(primary, n ? st[0].lsn : 0, n ? st[0].tablets : NULL,
	                              n ? st[0].ntablets : 0, &s), 0);
	ts_standby_state_free(st, n);
	while ((rc = ts_ship_next(s, &f)) == 1)
		if (ts_standby_apply(sb, "m", &f) < 0)
			fail_msg("resume: %s", ts_errmsg(NULL));
	assert_int_equal(rc, 0);
	ts_ship_close(s);
	assert_int_equal(ts_standby_close(sb), 0);
	ts_test_expect_copy_m(dir, TS_OPEN_READONLY, primary);
}

/* Every file-system call of a standby applying a stream from nothing
 * (tablets, two descriptors, log bytes, HEAD) failing in turn
 * with EIO: the call that meets it fails with TS_EIO, and the standby
 * resumed from what it then says it holds ends up the primary. */
static void fault_standby_each_call(void **state)
{
	(void)state;
	/* (else HEAD's boot id is read from /proc, whose failure has a
	 * fallback: not a failure of the standby's; set before the primary
	 * writes its HEAD, which is believed only from the same boot) */
	setenv("TSSTORE_BOOT_ID", "fault-standby", 1);
	ts_test_env *e = ts_test_env_new_held(NOW);
	struct frames *fr = calloc(1, sizeof *fr);
	test_row r[100];
	for (int b = 1; b <= 30; b++) {
		ts_test_batch_rows(r, 100, NOW - HOUR, b);
		assert_int_equal(ts_test_insert_m(e->t, r, 100), 0);
		if (b == 10 || b == 20)
			assert_int_equal(ts_flush(e->t, INT64_MAX), 0);
	}
	frames_take(e->t, fr);
	char *root = ts_test_tmpdir(), dir[600];
	long calls;
	snprintf(dir, sizeof dir, "%s/dry", root);
	fault_start(FAULT_ALL, FAULT_THIS_THREAD, 0, 0, 0);
	assert_int_equal(standby_run(dir, fr), 0);
	calls = fault_stop();
	assert_true(calls >= 20);
	standby_finish_and_compare(dir, e->t);
	for (long at = 1; at <= calls; at++) {
		snprintf(dir, sizeof dir, "%s/at%ld", root, at);
		fault_start(FAULT_ALL, FAULT_THIS_THREAD, at, EIO, 0);
		int rc = standby_run(dir, fr);
		fault_stop();
		if (rc != TS_EIO)
			fail_msg("call %ld (%s) failed with EIO: got %s (%s)", at, fault_failed_call(),
			         ts_errname(rc), ts_errmsg(NULL));
		standby_finish_and_compare(dir, e->t);
	}
	unsetenv("TSSTORE_BOOT_ID");
	frames_free(fr);
	free(fr);
	ts_test_rmdir(root);
	void *st = e;
	ts_test_env_teardown(&st);
}

int main(void)
{
	verbose = env_flag("TSSTORE_FAULT_VERBOSE");
	fault_skip_syncs(!env_flag("TSSTORE_FAULT_SYNC"));
	/* the first ts_options_init of the process reads the memory limit
	 * (/proc, /sys: its failure falls back to the physical memory); made
	 * here, before any sweep counts the library's calls */
	ts_options warm;
	ts_options_init(&warm);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(fault_delete_and_purge),
		cmocka_unit_test(fault_epoch_raise_each_call),
		cmocka_unit_test(fault_epoch_fence_each_call),
		cmocka_unit_test(fault_standby_each_call),
		cmocka_unit_test(fault_tablet_write_error_is_reported_as_such),
		cmocka_unit_test(fault_segment_stat_error_is_not_damage),
		cmocka_unit_test(fault_release_off_the_flushing_thread),
		cmocka_unit_test(fault_log_blocks_allocated_as_it_fills),
		cmocka_unit_test(fault_segment_allocation_failure_is_reported),
		cmocka_unit_test(fault_near_full_disk_said_once),
		cmocka_unit_test(fault_merge_keeps_the_output_the_descriptor_names),
		cmocka_unit_test(fault_table_listing_error_is_reported),
		cmocka_unit_test(fault_drop_stat_error_is_not_enoent),
		cmocka_unit_test(fault_descriptor_rename_failure_leaves_no_tmp),
		cmocka_unit_test(fault_main_enospc_every_mutating_call),
		cmocka_unit_test(fault_main_eio_mutating_calls),
		cmocka_unit_test(fault_main_eio_reading_calls),
		cmocka_unit_test(fault_rollover_enospc_mutating_calls),
		cmocka_unit_test(fault_rollover_eio_all_calls),
		cmocka_unit_test(fault_rollover_segment_preparer),
		cmocka_unit_test(fault_background_flush),
		cmocka_unit_test(fault_disk_full_then_room_again),
	};
	const char *only = getenv("TSSTORE_FAULT_ONLY");
	if (only && *only)
		cmocka_set_test_filter(only);
	return cmocka_run_group_tests_name("fault", tests, NULL, NULL);
}
