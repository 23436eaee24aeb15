/*
 * db.h -- the functions on database and table handles that the rest of
 * the library calls (the handles themselves are in handle.h).
 */
#ifndef TS_DB_H
#define TS_DB_H

#include "handle.h"
#include "maint.h" /* for the tests, until they include it themselves */

/* Flush the table's filling trees that are due: flush_size reached,
 * flush_age old, or their period ended while they filled (flush.c).
 * Returns 0 or the errors of ts_flush. */
int ts__flush_due(struct ts_table *t);

/* Whether a filling tree reached flush_size; t->mu is held. */
int ts__flush_wanted(const struct ts_table *t);

/* Pass one line to opts.log (stderr when NULL). */
void ts__db_log(ts_db *db, const char *line);

/* Report a failure of background work through ts__db_log:
 * "table \"t\": what failed, retrying with backoff: msg". */
void ts__db_report(ts_db *db, const char *table, const char *what, const char *msg);

/* Whether the background work of r may be tried now (not in backoff).
 * The caller holds the mutex that makes that work one at a time
 * (flush_mu, merge_mu) from this check through ts__table_retry_done, so
 * that one failure is never tried twice.  Takes t->mu. */
int ts__table_retry_due(struct ts_table *t, const ts__retry *r);

/* Background work of t (what: "flush", "merge", "expiry") ended with rc:
 * record it in r (under t->mu) and report a new cause.
 * Returns rc. */
int ts__table_retry_done(struct ts_table *t, ts__retry *r, const char *what, int rc);

/* Whether an insert may append to t's log: TS_ENOSPC naming the cause
 * when its unflushed part reached log_cap.  t->mu is held (flush.c). */
int ts__log_cap_check(struct ts_table *t);


#endif
