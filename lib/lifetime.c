/*
 * lifetime.c -- how long database and table handles live: the public
 * calls counted in and out of them, the holds of cursors and of the
 * library's own threads, and the release of a table's resources once
 * nothing uses it.
 *
 * api.c counts every public call that takes a handle from
 * ts__db_enter / ts__table_enter to the matching _leave: the last
 * ts_table_close of a table waits until no call is inside it, ts_close
 * until no call is inside the database, and both make later calls fail
 * with TS_ECLOSED.  A cursor, and a thread of the library, hold the table
 * instead (ts__table_hold), which no close waits for.  A dropped table's
 * resources -- log mappings, filling trees, open tablets, descriptors --
 * are released by whichever of its last handle, call or hold goes last
 * (ts__table_take_release decides, once); its object stays on db->dead
 * until ts_close frees it (ts__table_free).  life_mu guards the counts
 * of calls; holds are atomic (see ts__table_hold).
 * Opening and closing handles themselves are in table.c (ts_table_open,
 * ts_table_close) and db.c (ts_open, ts_close).
 */
#include <assert.h>
#include <stdlib.h>

#include "buf.h"
#include "cursor.h"
#include "error.h"
#include "handle.h"
#include "lifetime.h"
#include "rollacc.h"
#include "tablet.h"
#include "tablets.h"

/* ---- a table's resources ---- */

void ts__table_release(struct ts_table *t)
{
	ts__filling_free(&t->fill);
	ts__rollacc_free(t->acc);
	t->acc = NULL;
	ts__log_close(t->log, 1);
	t->log = NULL;
	ts__tablet_set_put(t, t->tablet_set);
	t->tablet_set = NULL;
	for (int i = 0; i < t->nopen; i++)
		ts__tablet_close(t->open_tablets[i].tab);
	free(t->open_tablets);
	t->open_tablets = NULL;
	t->nopen = t->capopen = 0;
	free(t->warm);
	t->warm = NULL;
	t->nwarm = t->capwarm = 0;
	ts__buf_free(&t->scratch);
	ts__buf_free(&t->lookup);
	ts__descriptor_free(t->desc, 1);
	t->desc = NULL;
	while (t->retired) {
		ts__descriptor *d = t->retired;
		t->retired = d->next_retired;
		ts__descriptor_free(d, 1);
	}
}

void ts__table_free(struct ts_table *t)
{
	if (!t)
		return;
	if (!t->released)
		ts__table_release(t);
	ts__cursor_spare_free(t);
	pthread_mutex_destroy(&t->tablets_mu);
	pthread_mutex_destroy(&t->flush_mu);
	pthread_mutex_destroy(&t->merge_mu);
	pthread_mutex_destroy(&t->desc_mu);
	pthread_mutex_destroy(&t->schema_mu);
	pthread_mutex_destroy(&t->mu);
	for (int i = 0; i < t->ndamaged; i++)
		free(t->damaged_why[i]);
	ts__rollup_free(t->rollup);
	free(t->dir);
	free(t);
}

/* ---- calls and holds ---- */

int ts__table_take_release(struct ts_table *t)
{
	if (t->released || !__atomic_load_n(&t->dropped, __ATOMIC_SEQ_CST) || t->refs > 0 ||
	    t->calls > 0 || __atomic_load_n(&t->holds, __ATOMIC_SEQ_CST) > 0)
		return 0;
	t->released = 1;
	return 1;
}

/* Release a dropped table that nothing uses any more, then unlock
 * life_mu (held on entry).  The release is counted as a call on the
 * database until it is done, so that a ts_close in another thread, which
 * waits for the calls, never frees the table (or the block cache its
 * tablets return blocks to) while the release still runs. */
static void release_unlock(struct ts_table *t)
{
	ts_db *db = t->db;
	int release = ts__table_take_release(t);
	if (release)
		db->calls++;
	pthread_mutex_unlock(&db->life_mu);
	if (release) {
		ts__table_release(t);
		ts__db_leave(db);
	}
}

int ts__db_enter(ts_db *db, const char *fn)
{
	int rc = 0;
	if (!db)
		return ts__fail(TS_EINVAL, "%s: db is NULL", fn);
	pthread_mutex_lock(&db->life_mu);
	if (db->closing)
		rc = ts__fail(TS_ECLOSED, "%s: the database is closing", fn);
	else
		db->calls++;
	pthread_mutex_unlock(&db->life_mu);
	return rc;
}

void ts__db_leave(ts_db *db)
{
	pthread_mutex_lock(&db->life_mu);
	assert(db->calls > 0);
	if (--db->calls == 0)
		pthread_cond_broadcast(&db->life_cv);
	pthread_mutex_unlock(&db->life_mu);
}

int ts__table_enter(struct ts_table *t, const char *fn)
{
	int rc = 0;
	if (!t)
		return ts__fail(TS_EINVAL, "%s: table is NULL", fn);
	ts_db *db = t->db;
	pthread_mutex_lock(&db->life_mu);
	if (db->closing)
		rc = ts__fail(TS_ECLOSED, "%s: the database is closing", fn);
	else if (t->refs <= 0)
		rc = ts__fail(TS_ECLOSED, "%s: table \"%s\" is not open (closed)", fn, t->name);
	else {
		t->calls++;
		db->calls++;
	}
	pthread_mutex_unlock(&db->life_mu);
	return rc;
}

void ts__table_leave(struct ts_table *t)
{
	ts_db *db = t->db;
	pthread_mutex_lock(&db->life_mu);
	assert(t->calls > 0 && db->calls > 0);
	t->calls--;
	db->calls--;
	if (t->calls == 0 || db->calls == 0)
		pthread_cond_broadcast(&db->life_cv);
	release_unlock(t);
}

/*
 * Holds are counted without life_mu (a cursor's open and close took it
 * twice: a fifth of a latest lookup's lock round trips).  A hold is
 * taken only by a caller inside a call on t, holding t already, or
 * holding db->mu with t among db->tables -- so never on a table whose
 * resources went, and never while ts_close waits (cursors are counted
 * before the call that opens them leaves, which begin_close waits for).
 * An unhold takes life_mu only when the table is dropped: the drop
 * stores dropped before it reads holds (unlink_table), the unhold
 * subtracts before it reads dropped, both sequentially consistent, so
 * that of the two at least one sees the other and the last of them
 * releases (ts__table_take_release decides, once).  A cursor's count
 * on the database goes last: once it is 0 ts_close may free the table.
 */
void ts__table_hold(struct ts_table *t, int cursor)
{
	__atomic_add_fetch(&t->holds, 1, __ATOMIC_SEQ_CST);
	if (cursor)
		__atomic_add_fetch(&t->db->cursors, 1, __ATOMIC_RELAXED);
}

void ts__table_unhold(struct ts_table *t, int cursor)
{
	ts_db *db = t->db;
	int left = __atomic_sub_fetch(&t->holds, 1, __ATOMIC_SEQ_CST);
	assert(left >= 0);
	(void)left;
	if (!__atomic_load_n(&t->dropped, __ATOMIC_SEQ_CST)) {
		if (cursor)
			__atomic_sub_fetch(&db->cursors, 1, __ATOMIC_RELEASE);
		return;
	}
	pthread_mutex_lock(&db->life_mu);
	if (cursor)
		__atomic_sub_fetch(&db->cursors, 1, __ATOMIC_RELEASE);
	release_unlock(t);
}
