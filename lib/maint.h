/*
 * maint.h -- the maintenance scheduler, the one owner of a database's
 * background work (maint.c): quarantine of damaged tablets, flushes, TTL
 * expiry and merges, as jobs of one queue across every table, run by one
 * thread under one budget that yields to inserts and reads.
 */
#ifndef TS_MAINT_H
#define TS_MAINT_H

#include <pthread.h>
#include <stdint.h>

struct ts_db;
struct ts_table;

/* The scheduler's state, one per writable database (ts_db.maint). */
typedef struct ts__maint {
	pthread_t thread;
	int running;
	pthread_mutex_t mu;      /* guards stop, wake, held, busy */
	pthread_cond_t cv;       /* wakes the thread: close, a tree at flush_size,
	                          * a damaged tablet */
	pthread_cond_t idle_cv;  /* a pass ended (ts__maint_hold) */
	int stop;                /* atomic reads outside mu: ts_close asked */
	int wake, held, busy;    /* work was signalled; ts__maint_hold; a pass runs */
	/* The clock of the backoff of failing jobs (retry.h): monotonic ns;
	 * tests replace it to count retries without waiting. */
	int64_t (*clock)(void);
	/* Atomic: monotonic ns of the last foreground work -- a committed
	 * insert, a snapshot taken for a read, a block a read loaded -- which
	 * background merges yield to (ts__maint_foreground). */
	int64_t fg_mono;
	/* Atomics since the database opened: passes, merges the scheduler
	 * made, and the time they slept to keep within the budget. */
	uint64_t passes, merges;
	int64_t throttled_ns;
} ts__maint;

/* Initialise m (no thread yet) / free what it holds (thread stopped). */
void ts__maint_init(ts__maint *m);
void ts__maint_destroy(ts__maint *m);

/* Start the scheduler's thread for db (writable databases); stop it and
 * wait for it (a merge in progress gives up at its next slice). */
int ts__maint_start(struct ts_db *db);
void ts__maint_stop(struct ts_db *db);

/* Whether ts_close has asked the scheduler to stop. */
int ts__maint_stopping(struct ts_db *db);

/* Wake the scheduler: a tree reached flush_size, a tablet was found
 * damaged.  Cheap; safe from any thread. */
void ts__maint_wake(struct ts_db *db);

/* For tests that run maintenance steps themselves and count what each
 * did: hold (1) the scheduler between passes -- returns once no pass is
 * running, and none starts until released (0). */
void ts__maint_hold(struct ts_db *db, int hold);

/* Note foreground work now (an insert committed, a read took a snapshot
 * or loaded a block): merges yield to it for maint_busy_window. */
static inline void ts__maint_foreground(ts__maint *m, int64_t mono_now)
{
	__atomic_store_n(&m->fg_mono, mono_now, __ATOMIC_RELAXED);
}

/*
 * One pass over every open table of db, jobs in priority order: every
 * table's quarantine, due flushes and expiry; then the smallest due merge
 * of any table, if one is.  The thread runs a pass every second, when
 * woken, and at once after a pass that merged (so the flushes due meanwhile
 * go before the next merge); tests call it directly.  Returns 0 or the
 * first error (every job is still tried; failing jobs back off, retry.h).
 */
int ts__maint_pass(struct ts_db *db);

/* ts_merge for t: merge until LittleTable's rule finds nothing, running
 * every table's due flushes between slices but never sleeping (the user
 * asked for it).  *merged gets the count.  Returns 0 or an error. */
int ts__maint_merge_now(struct ts_table *t, int *merged);

#endif
