/*
 * lifetime.h -- handle lifetimes (lifetime.c): public calls counted in
 * and out of a database or table, holds that keep a table's object
 * alive without a handle, and the release of a table's resources.
 */
#ifndef TS_LIFETIME_H
#define TS_LIFETIME_H

#include "handle.h"

/* Enter a call on db: TS_EINVAL when db is NULL, TS_ECLOSED once
 * ts_close began; on 0 the call is counted until ts__db_leave.  fn names
 * the public function in the message. */
int ts__db_enter(ts_db *db, const char *fn);
void ts__db_leave(ts_db *db);

/* Enter a call on table t: as ts__db_enter, plus TS_ECLOSED when the
 * handle is not open (closed as often as it was opened). */
int ts__table_enter(ts_table *t, const char *fn);
void ts__table_leave(ts_table *t);

/* Keep t's object (and, for a dropped table, its files' mappings) alive
 * without a handle: a cursor (cursor = 1, counted for ts_close's
 * TS_EBUSY) or a thread of the library.  ts_table_close does not wait
 * for holds; the last of handles, calls and holds of a dropped table
 * releases its resources. */
void ts__table_hold(ts_table *t, int cursor);
void ts__table_unhold(ts_table *t, int cursor);

/* Whether a dropped table is left by every handle, call and hold, so that
 * its resources can go (once: released is set); life_mu is held. */
int ts__table_take_release(struct ts_table *t);

/* Free what the table holds besides its object: log mappings, filling
 * trees, open tablets, descriptors.  Once no handle, call or hold is
 * left on a dropped table (ts__table_take_release), or when the db
 * closes. */
void ts__table_release(struct ts_table *t);

/* Free a table object (when the db closes): its resources, if not yet
 * released, and the object. */
void ts__table_free(struct ts_table *t);

#endif
