/*
 * maint.h -- the maintenance scheduler, the one owner of a database's
 * background work (maint.c): quarantine of damaged tablets, flushes, TTL
 * expiry and merges, as jobs of one queue across every table, run by one
 * thread under one budget that yields to inserts and reads.  Its state,
 * ts__maint, is part of the database handle (handle.h), as are
 * ts__maint_wake and ts__maint_foreground, which the modules under the
 * scheduler call without depending on it.
 */
#ifndef TS_MAINT_H
#define TS_MAINT_H

#include "handle.h"

/* Initialise m (no thread yet) / free what it holds (thread stopped). */
void ts__maint_init(ts__maint *m);
void ts__maint_destroy(ts__maint *m);

/* Start the scheduler's thread for db (writable databases); stop it and
 * wait for it (a merge in progress gives up at its next slice). */
int ts__maint_start(struct ts_db *db);
void ts__maint_stop(struct ts_db *db);

/* Whether ts_close has asked the scheduler to stop. */
int ts__maint_stopping(struct ts_db *db);

/* For tests that run maintenance steps themselves and count what each
 * did: hold (1) the scheduler between passes -- returns once no pass is
 * running, and none starts until released (0). */
void ts__maint_hold(struct ts_db *db, int hold);

/* Ask the scheduler's thread to run every rollup behind as an explicit
 * pass runs it (through the source's head, synced), at its next pass or
 * between two slices of the merge it is making -- not after that merge:
 * a benchmark's catch-up after a load waits for the rollups' own work
 * only.  Returns at once; ts_rollup_info tells when they caught up. */
void ts__maint_rollups_now(struct ts_db *db);

/*
 * One pass over every open table of db, jobs in priority order: every
 * table's quarantine; every rollup's windows changed since its watermark
 * (the first pass loads every rollup); every table's due flushes and
 * expiry; then
 * the smallest due merge of any table, if one is.  Rollups run here
 * whenever behind, where the thread's passes pace them (rollup.c).  The
 * thread runs a pass every second, when
 * woken, and at once after a pass that merged (so the flushes due meanwhile
 * go before the next merge); tests call it directly.  Returns 0 or the
 * first error (every job is still tried; failing jobs back off, retry.h).
 */
int ts__maint_pass(struct ts_db *db);

#endif
