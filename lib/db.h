/*
 * db.h -- the database and table handles as the rest of the library sees
 * them.
 *
 * A ts_db owns the database directory: the write lock, the options, the
 * clock, and one ts_table object per table opened so far.  ts_table_open
 * hands out counted references to that object, so every user of a table
 * in the process shares its descriptor (and, later, its log and filling
 * tablets).  Locks: db->mu guards the table list; table->mu guards the
 * table's descriptor and serialises its writers.
 */
#ifndef TS_DB_H
#define TS_DB_H

#include <pthread.h>
#include <sys/types.h>

#include "descriptor.h"
#include "filling.h"
#include "log.h"

struct ts_table {
	ts_db *db;
	char name[TS_NAME_MAX + 1];
	char *dir;               /* <db>/<name> */
	pthread_mutex_t mu;
	pthread_mutex_t schema_mu; /* readers copying desc->schemas; swaps hold it */
	int refs;                /* handles out, guarded by db->mu */
	int dropped;             /* set by ts_drop; handles fail with TS_ECLOSED */
	ts__descriptor *desc;    /* current descriptor, guarded by mu */
	ts__descriptor *retired; /* read-only: replaced descriptors whose schemas
	                          * snapshots may still use; freed with the table */
	ino_t desc_ino;          /* read-only handles: detect a replaced file */
	ts__log *log;            /* the table's log (read-only in read-only dbs) */
	ts__filling fill;        /* writable dbs: the filling tablets */
	ts_buf scratch;          /* writer: row encoding */
	ts_buf lookup;           /* writer: blocks read by uniqueness checks */
	uint64_t rows_rejected;  /* counters, guarded by mu */
	uint64_t flushes, flushed_rows, flushed_bytes;
	pthread_mutex_t flush_mu; /* one flush at a time; taken before mu */
	pthread_mutex_t tablets_mu; /* the open tablets below */
	struct ts__open_tablet *open_tablets;
	int nopen, capopen;
	struct ts_table *next;
};

/* An on-disk tablet opened by some reader or writer of the table.  Until
 * merges and TTL remove tablets, a tablet once opened stays open until
 * the table is freed, so snapshots may keep plain pointers to it. */
struct ts__open_tablet {
	uint64_t id;
	struct ts__tablet *tab;
};

struct ts_db {
	char *path;
	int lock_fd;             /* -1 when read-only */
	ts_options opts;
	int64_t frozen_now;      /* from TSSTORE_NOW, or INT64_MIN */
	pthread_mutex_t mu;
	struct ts_table *tables;
	pthread_t syncer;        /* TS_SYNC_INTERVAL: the background syncer */
	int syncer_running, stopping;
	pthread_cond_t stop_cv;  /* wakes the syncer early at close */
	pthread_t maintainer;    /* writable dbs: flushes (and later merges) */
	int maintainer_running;
	pthread_mutex_t maint_mu;
	pthread_cond_t maint_cv; /* wakes it: close, or a tree reached flush_size */
	int maint_stop, maint_wake;
};

/* The open tablet described by m (opened on first use).  Returns 0,
 * or the errors of ts__tablet_open. */
int ts__table_tablet(struct ts_table *t, const ts__tablet_meta *m, struct ts__tablet **out);

/* Write d as t's new descriptor and swap it in; t->mu is held.  On
 * failure d is freed and the table is unchanged. */
int ts__table_install_descriptor(struct ts_table *t, ts__descriptor *d);

/* Flush the table's filling trees that are due: flush_size reached,
 * flush_age old, or their period ended while they filled (flush.c).
 * Returns 0 or the errors of ts_flush. */
int ts__flush_due(struct ts_table *t);

/* Whether a filling tree reached flush_size; t->mu is held. */
int ts__flush_wanted(const struct ts_table *t);

/* One maintenance pass: flush what is due in every open table.  The
 * maintenance thread runs it every second and when woken; tests call it
 * directly.  Returns 0 or the first error (every table is still tried). */
int ts__db_maintain(ts_db *db);

/* Wake the maintenance thread (a tree reached flush_size). */
void ts__db_wake(ts_db *db);

/* Free a table object (when its last reference goes or the db closes). */
void ts__table_free(struct ts_table *t);

/* Take the table's mutex and check it was not dropped; in read-only
 * handles, reload the descriptor if another process replaced it.
 * Returns 0 (locked) or TS_ECLOSED / a reload error (not locked). */
int ts__table_lock(struct ts_table *t);
void ts__table_unlock(struct ts_table *t);

static inline int ts__db_readonly(const ts_db *db)
{
	return (db->opts.flags & TS_OPEN_READONLY) != 0;
}

#endif
