/*
 * backoff.h -- a table's failing background work retried with backoff
 * and reported once per cause, and the database's log function
 * (backoff.c).
 */
#ifndef TS_BACKOFF_H
#define TS_BACKOFF_H

#include "handle.h"
#include "retry.h"

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

#endif
