/*
 * tablets.h -- a table's open on-disk tablets, shared and counted, the
 * tablet sets snapshots take, and the tablets readers found damaged
 * (tablets.c).
 */
#ifndef TS_TABLETS_H
#define TS_TABLETS_H

#include <stdint.h>

#include "handle.h"

/* A counted reference to the open tablet described by m (opened on first
 * use).  Returns 0, or the errors of ts__tablet_open. */
int ts__table_tablet(struct ts_table *t, const ts__tablet_meta *m, struct ts__tablet **out);

/* References to the tablets of m[0..n) into out[0..n), under one taking
 * of the lock.  On failure the tablets before the one that failed are
 * held and the rest of out is NULL. */
int ts__table_tablets(struct ts_table *t, const ts__tablet_meta *m, int n,
                      struct ts__tablet **out);

/* Let go of a reference taken with ts__table_tablet(s).  NULL allowed. */
void ts__table_tablet_put(struct ts_table *t, struct ts__tablet *tab);
void ts__table_tablets_put(struct ts_table *t, struct ts__tablet *const *tabs, int n);

/* A reference to the tablet set of t's current descriptor (built, and
 * its tablets opened, when no snapshot has since the descriptor was
 * swapped in).  Returns 0, or the errors of ts__table_tablets and
 * TS_ENOMEM. */
int ts__table_tablet_set(struct ts_table *t, ts__tablet_set **out);

/* Let go of a reference to a tablet set.  NULL allowed. */
void ts__tablet_set_put(struct ts_table *t, ts__tablet_set *set);

/* t->desc is being replaced (tabledesc.c); schema_mu is held.  The set
 * of the old descriptor stops being t's current one, and a set being
 * built meanwhile will not become it.  Returns the table's reference to
 * the old set (NULL: none), to let go of once schema_mu is released. */
ts__tablet_set *ts__table_tablet_set_detach(struct ts_table *t);

/* Tablet id left the descriptor: close it once unused (and drop its
 * blocks from the block cache). */
void ts__table_tablet_retire(struct ts_table *t, uint64_t id);

/* The block cache serial tablet id, being written, will be opened with:
 * its writer puts blocks in the cache under it before the tablet is
 * open (a merge's output, merge.c; a flush's, flush.c).  The
 * reservation lasts until the tablet is first opened or retired.
 * Returns 0 (nothing to cache under) when out of memory. */
uint64_t ts__table_tablet_serial(struct ts_table *t, uint64_t id);

/* Drop id's reservation: its writer was aborted or failed, and the
 * tablet will never be opened (none: nothing). */
void ts__table_tablet_unreserve(struct ts_table *t, uint64_t id);

/* Make tab, tablet id opened by its writer before publishing it (a
 * merge's output), one of t's open tablets, under the serial reserved for
 * it, so that the first reader after the publish does not pay for the
 * open (a millisecond for a tablet of a thousand blocks).  t owns tab
 * from then on: unused until a tablet set takes it, closed when retired
 * (the publish failed) or when t closes.  tab is closed at once if t
 * has id open already or cannot grow its list. */
void ts__table_tablet_adopt(struct ts_table *t, uint64_t id, struct ts__tablet *tab);

/* Open tablet id of t's tablets directory privately (not one of its
 * open tablets): for its writer, before the publish, to warm the block
 * cache from and hand to ts__table_tablet_adopt.  Returns 0 or an error
 * of ts__tablet_open. */
int ts__table_tablet_open_file(struct ts_table *t, uint64_t id, struct ts__tablet **out);

/* A reader found tablet id damaged (rc is the error it got): when rc is
 * TS_ECORRUPT, count it and, in a writable database, note the id for
 * ts__table_quarantine_due and wake the maintenance thread.  Returns rc. */
int ts__table_damaged(struct ts_table *t, uint64_t id, int rc);

#endif
