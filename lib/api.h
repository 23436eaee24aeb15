/*
 * api.h -- the public entry points' implementations, behind api.c.
 *
 * api.c is the gate of every public call that takes a handle: it checks
 * the arguments (NULL handles, NULL required pointers, counts that
 * contradict their arrays: TS_EINVAL naming the function), counts the
 * call in flight on its database and table (so that ts_table_close and
 * ts_close wait for it, and refuse new calls once they began), and calls
 * the implementation declared here, which may then rely on its
 * arguments.  Counting calls in and out is lifetime.c's (lifetime.h).
 *
 * Each module that implements a public call includes this header, so
 * api.c includes none of theirs: only lifetime.h and error.h, which sit
 * below every module that includes api.h -- the library's modules
 * depend one way (lib/README.md).
 */
#ifndef TS_API_H
#define TS_API_H

#include "tsstore.h"

int ts__create(ts_db *db, const char *name, const ts_schema *schema);
int ts__create_keyed(ts_db *db, const char *name, const ts_column *columns, int ncolumns,
                     const char *const *key_names, int nkey, int64_t ttl,
                     ts_on_duplicate on_duplicate);
/* ts__create_keyed of a derived table (table.c, for rollup.c): file
 * (bytes[0..n)) is written in its directory before the directory is
 * renamed into place, and table source must exist at that moment
 * (TS_ENOENT otherwise). */
int ts__create_derived(ts_db *db, const char *name, const ts_column *columns, int ncolumns,
                       const char *const *key_names, int nkey, int64_t ttl,
                       ts_on_duplicate on_duplicate, const char *file, const void *bytes,
                       size_t n, const char *source);
int ts__drop(ts_db *db, const char *name);
int ts__sync(ts_db *db);
int ts__tables(ts_db *db, char ***out, int *n);
int ts__check(ts_db *db, const char *table, const ts_check_opts *opts);
int ts__backup(ts_db *db, const char *dest, int incremental);
int ts__epoch_get(ts_db *db, ts_epoch *out);
int ts__epoch_raise(ts_db *db, ts_epoch *out);
int ts__epoch_adopt(ts_db *db, const ts_epoch *e);
int ts__epoch_fence(ts_db *db, uint64_t newer);
int ts__epoch_fenced_by(ts_db *db, uint64_t *out);
int ts__ship_open(ts_table *t, uint64_t lsn, const uint64_t *tablets, int ntablets,
                  ts_ship **out);
int ts__ship_next(ts_ship *s, ts_frame *f);
ts_db *ts__ship_db(const ts_ship *s);
int ts__ship_heartbeat(ts_ship *s, ts_frame *f);
void ts__ship_close(ts_ship *s);
int ts__standby_open(const char *dir, ts_standby **out);
int ts__standby_apply(ts_standby *sb, const char *table, const ts_frame *f);
int ts__standby_state(ts_standby *sb, ts_standby_table **out, int *n);
void ts__standby_state_free(ts_standby_table *tables, int n);
int ts__standby_adopt(ts_standby *sb, const ts_epoch *e);
int ts__standby_sync(ts_standby *sb);
int ts__standby_close(ts_standby *sb);
int ts__table_schema(ts_table *t, ts_schema **out);
int ts__alter_add(ts_table *t, const ts_column *column);
int ts__alter_widen(ts_table *t, const char *column);
int ts__alter_ttl(ts_table *t, int64_t ttl);
int ts__alter_on_duplicate(ts_table *t, ts_on_duplicate policy);
/* Under on_duplicate (a ts_on_duplicate, or TS_ON_DUPLICATE_TABLE: the
 * table's policy), *ignored receives the rows the policy skipped;
 * *table_version the table's version once the batch is committed: its
 * commit's LSN. */
int ts__insert(ts_table *t, uint32_t version, int on_duplicate, const ts_value *rows,
               size_t nrows, size_t *ignored, uint64_t *table_version);
int ts__query_open(ts_table *t, const ts_query *q, ts_cursor **out);
int ts__latest_open(ts_table *t, const ts_value *prefix, int nprefix, ts_cursor **out);
/* ts_aggregate_open_flags (aggregate.c): from a rollup when one fits
 * (rollup_route.c) unless flags has TS_AGG_NO_ROLLUP; _raw: from the
 * table's own rows, always (the rollups' maintenance, the routed
 * cursor's raw windows). */
int ts__aggregate_open(ts_table *t, const ts_aggregate *req, unsigned flags, ts_cursor **out);
int ts__aggregate_open_raw(ts_table *t, const ts_aggregate *req, ts_cursor **out);
/* An aggregate over many boxes of one snapshot (the rollups'
 * maintenance: one cursor per run, not per series).  _open_spans takes
 * t's snapshot and checks req's every, group and specs (its prefix and
 * range are not used); the cursor yields nothing until ts__aggregate_span
 * aims it at the box (prefix[0..nprefix), [from, to)) -- nprefix at most
 * req's group -- and then yields exactly what ts__aggregate_open_raw of
 * that box would have at the same snapshot; each call drops what is
 * left of the box before.  Returns 0 or the errors of
 * ts__aggregate_open_raw (TS_EINVAL for a bad box; after a failed span
 * the cursor is only closed). */
int ts__aggregate_open_spans(ts_table *t, const ts_aggregate *req, ts_cursor **out);
int ts__aggregate_span(ts_cursor *c, const ts_value *prefix, int nprefix, int64_t from,
                       int64_t to);
/* An aggregate of t answered from its coarsest fitting rollup and its
 * own rows (rollup_route.c): 1 with *out, or 0 when the raw rows alone
 * must answer (no rollup fits, too much changed since its watermark, an
 * error: the route never fails a request). */
int ts__aggregate_routed(ts_table *t, const ts_aggregate *req, ts_cursor **out);
/* Non-zero: a fitting rollup answers whatever the cost model says
 * (rollup_route.c; 0; tests and benchmarks set it to compare the paths). */
extern int ts__route_force;
int ts__changes_open(ts_table *t, const ts_changes_spec *spec, ts_cursor **out);
int ts__cursor_next(ts_cursor *c, const ts_value **row, int *n);
int ts__cursor_rewind(ts_cursor *c);
int ts__cursor_more(const ts_cursor *c);
int ts__cursor_resume(const ts_cursor *c, const ts_value **key, int *nkey);
int ts__flush(ts_table *t, int64_t before);
/* ts_delete and ts_purge (delete.c); range may be NULL: every row. */
int ts__delete(ts_table *t, const ts_query *range, uint64_t *deleted, uint64_t *table_version);
int ts__purge(ts_table *t, const ts_query *range, uint64_t *table_version);

/* ts_merge (maint.c), for t: merge until LittleTable's rule finds nothing, running
 * every table's due flushes between slices but never sleeping (the user
 * asked for it).  *merged gets the count.  Returns 0 or an error. */
int ts__maint_merge_now(struct ts_table *t, int *merged);

/* Rollups (rollup.c). */
int ts__create_rollup(ts_db *db, const char *name, const ts_rollup_spec *spec);
int ts__rollup_info(ts_table *t, ts_rollup_state **out);
int ts__rollups(ts_db *db, const char *source, char ***names, int *n);
/* TS_EREADONLY, naming the rollup and its source, when t is a rollup and
 * the calling thread is not its maintenance writing it; else 0.  Every
 * write of rows (inserts, deletes) asks it. */
int ts__rollup_refuse(ts_table *t);
/* The rollup job for t: when t is a rollup whose
 * source's durable version passed its watermark, recompute the windows
 * changed since and move the watermark; y is called between slices of
 * windows (a merge's yield: due flushes, the budget, a close).  Returns
 * 0 or the error, recorded for backoff (not tried again meanwhile). */
/* The scheduler's rollup job, which it reaches through ts__maint's
 * callbacks (set by ts_open: the scheduler is below rollup.c).
 * Load every rollup of db (at the scheduler's first pass): the scheduler
 * serves loaded tables, and a rollup must be maintained whether or not
 * anyone opened it since the database opened.  Returns 0 or the first
 * error (the other rollups are loaded regardless). */
int ts__rollups_load(ts_db *db);
struct ts__merge_yield;
/* Run t's maintenance when due (rollup.c), by mode (handle.h): always in
 * an explicit pass (TS_ROLLUP_EXPLICIT, 1), paced in the thread's
 * (TS_ROLLUP_PACED, 0: TS_ROLLUP_PACE_MAX, or its source's accumulators
 * filled), only when they filled between a job's slices
 * (TS_ROLLUP_IF_FULL). */
int ts__rollup_due(struct ts_table *t, const struct ts__merge_yield *y, int mode);

int ts__table_stats(ts_table *t, ts_stat *out, int room, int *n);
/* ts_table_version (stats.c): the LSN of the newest commit, 0 if none. */
int ts__table_version(ts_table *t, uint64_t *version);

#endif
