/*
 * rollacc.h -- rollups' accumulators at insert (rollacc.c; docs/rollups.md
 * section 2, "Accumulated at insert").
 */
#ifndef TS_ROLLACC_H
#define TS_ROLLACC_H

#include <stddef.h>
#include <stdint.h>

#include "rollupdef.h"
#include "tsstore.h"

struct ts_table;
typedef struct ts__rollacc ts__rollacc;
typedef struct ts__rollacc_harvest ts__rollacc_harvest;

/* The writer's side; t->mu is held, t->acc not NULL.  _stage: a row the
 * batch stored (vals in the current schema, valid until the insert
 * returns); _unstage: the batch is made again or abandoned; _apply: the
 * batch committed at version, its staged rows folded (1 when a set
 * reached ts__rollacc_run_closed closed windows with it, else 0); _reset: a delete
 * (or anything else than an insert) changes the table: every window and
 * group held is forgotten, and each set starts again from the table's
 * greatest ts, as if registered now. */
void ts__rollacc_stage(struct ts_table *t, const ts_value *vals);
void ts__rollacc_unstage(struct ts_table *t);
int ts__rollacc_apply(struct ts_table *t, uint64_t version);
void ts__rollacc_reset(struct ts_table *t);
void ts__rollacc_free(ts__rollacc *a);
/* A set holding ts__rollacc_run_closed closed windows (TS_ROLLACC_RUN_CLOSED;
 * tests lower it), and twice as many as its groups, makes its rollup's
 * run due at once, whatever the clock (rows arriving faster than their
 * windows close on the clock: a backfill, a bulk load); _apply returns 1
 * when a set does -- and each time it holds that many more -- and the
 * writer wakes the scheduler (docs/rollups.md section 2, "Runs that keep
 * up with a bulk load"). */
#define TS_ROLLACC_RUN_CLOSED (1u << 16)
extern size_t ts__rollacc_run_closed;
/* Whether src's set of rollup name holds that many closed windows
 * (t->mu not held). */
int ts__rollacc_full(struct ts_table *src, const char *name);

/* The maintenance's side (rollup.c), t->mu not held: the windows of
 * rollup `name` (definition d, specs over the source's columns), at
 * version v (the run's snapshot S) from watermark w, taken out of src's
 * accumulators into *out: as rollup rows, those whose rows all arrived
 * in order and whose last row was committed <= v (a copy of the open
 * window when so); and the windows that commits in (w, v] touched
 * (over-reported: a window still receiving rows counts).  The rollup's
 * accumulators are registered first when src has none for it (from then
 * on its inserts are folded).  With defer, when the harvest is exact
 * (_exact), the windows starting at `start` (the clock's window) opened
 * since w -- a group's open window whose first row came after w -- are
 * left for the next run, unless a window received rows both before and
 * after the first row of one of them: the harvest is at *upto, the
 * commit before that first row (or v when there are none), which the
 * run's watermark becomes; *upto is left as it is otherwise.  *out is NULL when the rollup is not
 * accumulated, or v is 0 (registering only).  With whole_only, nothing
 * is taken unless the harvest would be whole (ts__rollacc_whole: every
 * window touched in (w, v] clean and with its last row by v), and 1 is
 * returned then (*upto may have moved).  Returns 0, 1, or TS_ENOMEM (the
 * run then reads every window from the source). */
int ts__rollacc_take(struct ts_table *src, const char *name, const ts__rollup_def *d,
                     const ts_aggspec *specs, int nspecs, uint64_t w, uint64_t v, int defer,
                     int64_t start, int whole_only, ts__rollacc_harvest **out, uint64_t *upto);

/* The run that took a harvest at v did not move the watermark to v
 * (failed, or the database closes): the windows it took are no longer
 * in the accumulators, so the next harvest from the same watermark may
 * not list them -- changes must (its harvests are not exact until the
 * watermark reaches v). */
void ts__rollacc_untake(struct ts_table *src, const char *name, uint64_t v);

/* Whether h lists every window that commits in (w, v] touched: every such
 * commit was folded (none before the accumulators' registration, no
 * delete or lost fold since w).  Then the run needs no changes. */
int ts__rollacc_exact(const ts__rollacc_harvest *h);

/* Whether h is exact and holds the row of every window it lists as
 * touched: a run writes them all from h, reading nothing of the source
 * (so it needs no snapshot of it, and no sync: docs/rollups.md section
 * 2, "Durable without a sync"). */
int ts__rollacc_whole(const ts__rollacc_harvest *h);

/* The groups of h with windows touched (in no order: a run writes its
 * rows in any, with replace): group i's g values, its touched windows' starts
 * (*n, ascending) in *starts; valid until h is freed. */
size_t ts__rollacc_groups(const ts__rollacc_harvest *h);
const ts_value *ts__rollacc_group(const ts__rollacc_harvest *h, size_t i,
                                  const int64_t **starts, size_t *n);

/* Every harvested row (group values, window start, one value per spec:
 * the rollup's row), group after group, a group's windows ascending:
 * *n of them, valid until h is freed. */
const ts_value *ts__rollacc_rows(const ts__rollacc_harvest *h, size_t *n);

/* The first harvested row (group values, window start, one value per
 * spec) of group prefix whose window starts at or after from, or NULL. */
const ts_value *ts__rollacc_next(const ts__rollacc_harvest *h, const ts_value *prefix,
                                 int64_t from);
void ts__rollacc_harvest_free(ts__rollacc_harvest *h);

/* 1; tests and measurements set it to 0: runs then take nothing (every
 * window read from the source, as before the accumulators). */
extern int ts__rollacc_enabled;
/* 1; tests and measurements set it to 0: no harvest is exact (every run
 * reads changes, as before the runs took the windows from the harvest). */
extern int ts__rollacc_skip_changes;

#endif
