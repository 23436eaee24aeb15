/*
 * maint.c -- the maintenance scheduler: the one owner of a database's
 * background work.
 *
 * Everything a writable database does on its own is a job of this
 * scheduler, run by its one thread: moving damaged tablets to quarantine
 * (quarantine.c), flushing filling tablets that are due (flush.c), deleting
 * tablets past the TTL and merging tablets by LittleTable's rule
 * (merge.c), recomputing the windows of rollups their sources changed
 * (rollup.c).  Those modules do one job when asked and know nothing of
 * the others or of the other tables; this one decides what runs when,
 * across every table of the database:
 *
 *   1. quarantine, so that no flush or merge trips over a damaged tablet;
 *   2. rollups, in slices of windows that yield as merges do (below),
 *      before the pass's flushes, so that they read the rows that came
 *      since their last run from the filling trees rather than from
 *      tablets just written, and before the merges that would only
 *      make their reads wait; the first pass loads every rollup of the
 *      database, so that none depends on being opened.  The thread's
 *      passes run a rollup paced by its windows (rollup.c: about once
 *      per window while its source receives rows); a pass asked for
 *      (ts__maint_pass) runs every rollup that is behind;
 *   3. flushes, which inserts wait for at the log's cap and memory
 *      (the yields between a rollup's slices run those inserts asked
 *      for), and which are cheap;
 *   4. expiry, which only drops tablets;
 *   5. merges, the smallest due merge of any table first: small merges
 *      cut the tablets a read must visit soonest, and cost least.  After
 *      each merge the pass starts over at 1.
 *
 * A merge works in slices of merge_slice_rows rows and calls back here
 * between them (ts__merge_yield): the callback runs any flush of any
 * table that fell due meanwhile -- so a flush never waits behind a merge
 * although one thread does both -- and applies the budget.  The budget is
 * SILK's (USENIX ATC 2019) rule that clients come first, as one duty
 * cycle for the database: while foreground work ran within the last
 * maint_busy_window (a committed insert, a read taking a snapshot or
 * loading a block: ts__maint_foreground, but never the scheduler's own
 * jobs' reads and writes), a background merge sleeps after
 * each slice so that it takes at most maint_busy_share percent of the
 * time -- of the CPU and the disk alike, since the slice's time is both;
 * when the foreground is idle, merges take all of it.  Flushes are never
 * throttled: holding them back would only make inserts wait.  A merge the
 * user asks for (ts_merge) runs the due flushes between slices but never
 * sleeps.
 *
 * Failing jobs are retried with backoff and logged once per cause
 * (retry.h); the scheduler goes on with the other jobs.  The thread runs a
 * pass every second and whenever woken (an insert found a tree at
 * flush_size; a reader found a damaged tablet), and stops at ts_close: a
 * merge in progress gives up at its next slice and is made again later.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "api.h"
#include "backoff.h"
#include "error.h"
#include "flush.h"
#include "handle.h"
#include "lifetime.h"
#include "maint.h"
#include "merge.h"
#include "quarantine.h"
#include "thread.h"

_Thread_local int ts__maint_in_pass;

void ts__maint_init(ts__maint *m)
{
	pthread_mutex_init(&m->mu, NULL);
	pthread_cond_init(&m->cv, NULL);
	pthread_cond_init(&m->idle_cv, NULL);
	m->clock = ts__mono_ns;
}

void ts__maint_destroy(ts__maint *m)
{
	pthread_cond_destroy(&m->cv);
	pthread_cond_destroy(&m->idle_cv);
	pthread_mutex_destroy(&m->mu);
}

int ts__maint_stopping(ts_db *db)
{
	return __atomic_load_n(&db->maint.stop, __ATOMIC_RELAXED);
}

/* ---- the tables a pass looks at ---- */

/* The open tables of db that are not dropped, each held (ts__table_hold)
 * until table_list_put.  Returns 0 or TS_ENOMEM. */
static int table_list(ts_db *db, struct ts_table ***out, int *n)
{
	struct ts_table **list = NULL;
	int count = 0;
	pthread_mutex_lock(&db->mu);
	for (struct ts_table *t = db->tables; t; t = t->next)
		count++;
	if (count && (list = malloc((size_t)count * sizeof *list))) {
		count = 0;
		for (struct ts_table *t = db->tables; t; t = t->next)
			if (!__atomic_load_n(&t->dropped, __ATOMIC_RELAXED)) {
				ts__table_hold(t, 0);
				list[count++] = t;
			}
	}
	pthread_mutex_unlock(&db->mu);
	if (count && !list)
		return ts__fail(TS_ENOMEM, "out of memory");
	*out = list;
	*n = count;
	return 0;
}

static void table_list_put(struct ts_table **list, int n)
{
	for (int i = 0; i < n; i++)
		ts__table_unhold(list[i], 0);
	free(list);
}

/* Keep the first error of a pass in *rc. */
static void keep(int *rc, int r)
{
	if (r < 0 && *rc == 0)
		*rc = r;
}

/* ---- flushes ---- */

/* Flush what is due in every open table: every tree due by size, age or
 * period end when all is set, else only in tables where an insert found
 * a tree at flush_size (cheap enough to do between every two slices of a
 * merge).  Returns 0 or the first error. */
static int flush_due(ts_db *db, int all)
{
	struct ts_table **list;
	int n, rc = table_list(db, &list, &n);
	if (rc < 0)
		return rc;
	for (int i = 0; i < n; i++)
		if (all || __atomic_load_n(&list[i]->flush_wanted_mono, __ATOMIC_RELAXED))
			keep(&rc, ts__flush_due(list[i]));
	table_list_put(list, n);
	return rc;
}

/* ---- between a merge's slices ---- */

/* What a merge's yield callback needs to know of the merge. */
struct slices {
	ts_db *db;
	int background;    /* chosen by the scheduler: keeps to the budget */
	int64_t start;     /* monotonic ns: this slice began */
	int64_t swept;     /* every table's due flushes were last run */
};

/* The sleep after a slice of `worked` ns that keeps a merge within a
 * share of `share` percent of the time. */
static int64_t budget_nap(int64_t worked, int64_t share)
{
	return share >= 100 ? 0 : worked * (100 - share) / share;
}

/* Set while a rollup runs on this thread: its own slices run no rollup.
 * Set in the scheduler's thread for its life. */
static __thread int in_rollup, in_scheduler;

static int yield_slice(void *arg, struct ts_table *t);

/* Run the rollups of db whose run is due (rollup.c; mode: TS_ROLLUP_*),
 * in slices within the budget; 0 or the first error. */
static int run_rollups(ts_db *db, struct ts_table **list, int n, int mode)
{
	int rc = 0;
	in_rollup = 1;
	for (int i = 0; i < n && !ts__maint_stopping(db); i++)
		if (list[i]->rollup) {
			struct slices s = {db, 1, ts__mono_ns(), ts__mono_ns()};
			ts__merge_yield y = {yield_slice, &s};
			keep(&rc, db->maint.rollup_due(list[i], &y, mode));
		}
	in_rollup = 0;
	return rc;
}

/* Between two slices of a job: when every rollup behind was asked for
 * (ts__maint_rollups_now), they run as an explicit pass runs them; and
 * when a source's accumulators filled
 * (rows arriving faster than the clock closes their windows), its
 * rollups run now, so that a long merge does not leave the windows
 * piling up until the set is dropped and the rollup reads them back
 * from tablets: those rollups only (TS_ROLLUP_IF_FULL).  Not from a
 * rollup's own slices, and only in the scheduler's thread (a merge a
 * client asked for, ts_merge, runs in the client's: a rollup's runs stay
 * in one thread at a time).  A rollup's failure is its own (kept in its
 * retry state, rollup.c), not the job's it ran beside. */
static void rollups_wanted(ts_db *db)
{
	int want;
	if (in_rollup || !in_scheduler || !db->maint.rollup_due ||
	    !(want = __atomic_exchange_n(&db->maint.rollups_wanted, 0, __ATOMIC_RELAXED)))
		return;
	struct ts_table **list;
	int n;
	if (table_list(db, &list, &n) == 0) {
		run_rollups(db, list, n, want & TS_ROLLUPS_ALL ? TS_ROLLUP_EXPLICIT : TS_ROLLUP_IF_FULL);
		table_list_put(list, n);
	}
	ts__clear_error();
}

static int yield_slice(void *arg, struct ts_table *t)
{
	struct slices *s = arg;
	ts_db *db = s->db;
	int all = ts__mono_ns() - s->swept >= TS_NS_PER_SEC;
	int rc = flush_due(db, all);
	if (rc < 0)
		return rc;
	/* the rollups' time is not the job's: s->start moves past it, so the
	 * job's nap below is for its own work */
	int64_t before = ts__mono_ns();
	rollups_wanted(db);
	s->start += ts__mono_ns() - before;
	if (all)
		s->swept = ts__mono_ns();
	if (!s->background)
		return 0;
	if (ts__maint_stopping(db))
		return TS_ECLOSED; /* not an error: the merge is simply not made */
	int64_t now = ts__mono_ns();
	if (now - __atomic_load_n(&db->maint.fg_mono, __ATOMIC_RELAXED) < db->opts.maint_busy_window) {
		int64_t nap = budget_nap(now - s->start, db->opts.maint_busy_share);
		struct timespec ts = {(time_t)(nap / TS_NS_PER_SEC), (long)(nap % TS_NS_PER_SEC)};
		if (nap > 0) {
			nanosleep(&ts, NULL);
			int64_t slept = ts__mono_ns() - now;
			__atomic_add_fetch(&t->merge_throttled_ns, slept, __ATOMIC_RELAXED);
			__atomic_add_fetch(&db->maint.throttled_ns, slept, __ATOMIC_RELAXED);
		}
	}
	s->start = ts__mono_ns();
	return 0;
}

int ts__maint_merge_now(struct ts_table *t, int *merged)
{
	struct slices s = {t->db, 0, ts__mono_ns(), ts__mono_ns()};
	ts__merge_yield y = {yield_slice, &s};
	return ts__merge(t, merged, &y);
}

/* ---- a pass ---- */

/* The table of list[0..n) whose next merge is smallest, or NULL. */
static struct ts_table *smallest_merge(struct ts_table **list, int n, int *rc)
{
	struct ts_table *best = NULL;
	int64_t best_bytes = 0;
	for (int i = 0; i < n; i++) {
		int64_t bytes = ts__merge_next(list[i]);
		if (bytes < 0)
			keep(rc, (int)bytes);
		else if (bytes > 0 && (!best || bytes < best_bytes)) {
			best = list[i];
			best_bytes = bytes;
		}
	}
	return best;
}

/* A pass; *merged: whether it made a merge.  explicit: asked for
 * (ts__maint_pass), not the thread's: every rollup behind runs, unpaced. */
static int pass(ts_db *db, int *merged, int explicit)
{
	struct ts_table **list;
	int n, rc = table_list(db, &list, &n);
	*merged = 0;
	if (rc < 0)
		return rc;
	__atomic_add_fetch(&db->maint.passes, 1, __ATOMIC_RELAXED);
	if (!db->maint.rollups_loaded && db->maint.rollups_load) {
		/* Rollups are jobs whether or not anyone opened them: loaded at
		 * the first pass (rollup.c). */
		db->maint.rollups_loaded = 1;
		int r = db->maint.rollups_load(db);
		if (r < 0 && r != TS_ECLOSED) {
			char msg[TS_ERRMSG_MAX + 64];
			snprintf(msg, sizeof msg, "loading the rollups: %s", ts_errmsg(NULL));
			ts__db_log(db, msg);
		}
		table_list_put(list, n);
		if ((rc = table_list(db, &list, &n)) < 0)
			return rc;
	}
	for (int i = 0; i < n; i++)
		keep(&rc, ts__table_quarantine_due(list[i]));
	/* Rollups, in slices of windows that run the flushes falling due and
	 * keep to the budget as merges do (rollup.c); before this pass's
	 * other flushes, so that they read the rows that came since the last
	 * run from the trees, not from tablets just written (decompressed
	 * again). */
	if (db->maint.rollup_due) {
		int want = __atomic_exchange_n(&db->maint.rollups_wanted, 0, __ATOMIC_RELAXED);
		keep(&rc, run_rollups(db, list, n, explicit || (want & TS_ROLLUPS_ALL)
		                                   ? TS_ROLLUP_EXPLICIT : TS_ROLLUP_PACED));
	}
	for (int i = 0; i < n; i++) {
		keep(&rc, ts__flush_due(list[i]));
		keep(&rc, ts__expire_due(list[i]));
	}
	struct ts_table *t = NULL;
	if (!(db->opts.flags & TS_OPEN_NOMERGE) && !ts__maint_stopping(db) &&
	    (t = smallest_merge(list, n, &rc)) != NULL) {
		struct slices s = {db, 1, ts__mono_ns(), ts__mono_ns()};
		ts__merge_yield y = {yield_slice, &s};
		int r = ts__merge_due(t, &y);
		keep(&rc, r);
		if (r == 1) {
			*merged = 1;
			__atomic_add_fetch(&db->maint.merges, 1, __ATOMIC_RELAXED);
		}
	}
	table_list_put(list, n);
	return rc;
}

/* A pass, its jobs' reads and writes marked as background work
 * (ts__maint_foreground). */
static int pass_in_background(ts_db *db, int *merged, int explicit)
{
	int was = ts__maint_in_pass;
	ts__maint_in_pass = 1;
	int rc = pass(db, merged, explicit);
	ts__maint_in_pass = was;
	return rc;
}

int ts__maint_pass(ts_db *db)
{
	int merged;
	return pass_in_background(db, &merged, 1);
}

/* ---- the thread ---- */

void ts__maint_rollups_now(ts_db *db)
{
	__atomic_fetch_or(&db->maint.rollups_wanted, TS_ROLLUPS_ALL, __ATOMIC_RELAXED);
	ts__maint_wake(db);
}

void ts__maint_hold(ts_db *db, int hold)
{
	ts__maint *m = &db->maint;
	pthread_mutex_lock(&m->mu);
	m->held = hold;
	while (hold && m->busy)
		pthread_cond_wait(&m->idle_cv, &m->mu);
	pthread_mutex_unlock(&m->mu);
}

/* A pass every second, when woken, and straight after a pass that made a
 * merge (so that merges go on back to back while any is due, each after
 * the flushes that fell due meanwhile).  Errors are kept in the tables'
 * retry state and tried again after their backoff; the thread goes on.
 * While held (ts__maint_hold) it starts no pass. */
static void *maint_main(void *arg)
{
	ts_db *db = arg;
	ts__maint *m = &db->maint;
	in_scheduler = 1;
	pthread_mutex_lock(&m->mu);
	while (!m->stop) {
		if (!m->wake || m->held) {
			struct timespec until;
			clock_gettime(CLOCK_REALTIME, &until);
			until.tv_sec += 1;
			pthread_cond_timedwait(&m->cv, &m->mu, &until);
		}
		if (m->stop)
			break;
		if (m->held)
			continue;
		m->wake = 0;
		m->busy = 1;
		pthread_mutex_unlock(&m->mu);
		int merged;
		pass_in_background(db, &merged, 0);
		pthread_mutex_lock(&m->mu);
		m->wake |= merged; /* more may be due: the next pass at once */
		m->busy = 0;
		pthread_cond_broadcast(&m->idle_cv);
	}
	pthread_mutex_unlock(&m->mu);
	return NULL;
}

int ts__maint_start(ts_db *db)
{
	int err = ts__thread_start(&db->maint.thread, maint_main, db);
	if (err)
		return ts__fail_errno(err, "start the maintenance thread");
	db->maint.running = 1;
	return 0;
}

void ts__maint_stop(ts_db *db)
{
	ts__maint *m = &db->maint;
	if (!m->running)
		return;
	pthread_mutex_lock(&m->mu);
	__atomic_store_n(&m->stop, 1, __ATOMIC_RELAXED);
	pthread_cond_signal(&m->cv);
	pthread_mutex_unlock(&m->mu);
	pthread_join(m->thread, NULL);
	m->running = 0;
}
