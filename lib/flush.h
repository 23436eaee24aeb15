/*
 * flush.h -- the flushes other modules ask for (flush.c): the scheduler's
 * due flushes, and the insert path's checks of flush_size and log_cap.
 * ts_flush's implementation, ts__flush, is declared with the public
 * calls' (api.h).
 */
#ifndef TS_FLUSH_H
#define TS_FLUSH_H

#include "handle.h"

/* Flush the table's filling trees that are due: flush_size reached,
 * flush_age old, or their period ended while they filled (flush.c).
 * Returns 0 or the errors of ts_flush. */
int ts__flush_due(struct ts_table *t);

/* Whether a filling tree reached flush_size; t->mu is held. */
int ts__flush_wanted(const struct ts_table *t);

/* Whether an insert may append to t's log: TS_ENOSPC naming the cause
 * when its unflushed part reached log_cap.  t->mu is held (flush.c). */
int ts__log_cap_check(struct ts_table *t);

/* Before an insert of nrows rows, t->mu held, while the flushes do not
 * fail and the maintenance thread runs, is not held and is not the
 * caller (TS_LOG_STALL_* and TS_LOG_PACE_*, tslimits.h): past log_cap /
 * TS_LOG_PACE_DEN of unflushed log, the rows owe a pause in proportion
 * to the log past that point, slept (t->mu let go) once the debt reaches
 * TS_LOG_STALL_STEP_NS, counted in log_paced_ns; and while it holds three
 * quarters of log_cap, wait for the flushes to release it, t->mu let go,
 * in steps of TS_LOG_STALL_STEP_NS, at most TS_LOG_STALL_MAX_NS; counted
 * in log_stalls and log_stall_ns.  Returns 0 with t->mu held, or the
 * error of ts__table_lock (the table dropped meanwhile) with it let go. */
int ts__log_stall(struct ts_table *t, size_t nrows);

/*
 * ts_purge's last step (flush.c): under flush_mu and desc_mu, a commit
 * that moves the log's tail to the start of a new segment; then a
 * DESCRIPTOR that carries the log's tombstones, drops those of the
 * versions in drop[0..ndrop) (their rows are gone from every source),
 * keeping their change records without key bounds and erasing those of
 * the records whose key range meets box's (the purge's range; NULL: none), and
 * advances the flushed position as far as the trees allow; then the
 * segments before it are deleted.  *clean says whether that position
 * reached the new segment (no tree of inserts made meanwhile held the
 * older segments back), so that no file of the log holds a byte written
 * before the purge began.  Returns 0 or an error of the descriptor's
 * writing, the log's or of releasing segments.
 */
int ts__flush_settle(struct ts_table *t, const ts__tomb *drop, int ndrop, const ts__tomb *box,
                     int *clean);

#endif
