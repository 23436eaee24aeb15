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
#include <time.h>

#include "bcache.h"
#include "descriptor.h"
#include "filling.h"
#include "limits.h"
#include "log.h"
#include "maint.h"
#include "retry.h"

/*
 * The on-disk tablets of one descriptor, opened, with what a snapshot
 * needs of that descriptor besides: built by the first snapshot taken
 * after the descriptor is swapped in, then shared by every later
 * snapshot until the next swap, so that taking a snapshot costs one
 * reference instead of a copy of the descriptor's tablets and a
 * reference on each (ts__table_tablet_set).  Immutable once built.
 */
typedef struct ts__tablet_set {
	int refs;                    /* atomic: the table's, while current,
	                              * and each snapshot's */
	int ntablets;
	ts__tablet_meta *metas;      /* the descriptor's tablets */
	struct ts__tablet **tablets; /* open, one reference each */
	int *newest;                 /* indexes into tablets, greatest max_ts first */
	int nversions;
	const ts__schema **versions; /* versions[v - 1]: the table's, immutable */
	int64_t ttl;
	int64_t horizon;             /* the descriptor's expiry horizon */
	int horizon_set;
	uint64_t flushed_lsn;
} ts__tablet_set;

struct ts_table {
	ts_db *db;
	char name[TS_NAME_MAX + 1];
	char *dir;               /* <db>/<name> */
	pthread_mutex_t mu;
	pthread_mutex_t schema_mu; /* readers copying desc->schemas; swaps hold it */
	int refs;                /* handles out, guarded by db->mu and db->life_mu */
	int dropped;             /* set by ts_drop; handles fail with TS_ECLOSED */
	int dropping;            /* atomic: ts_drop waits for the file writers;
	                          * calls fail with TS_ECLOSED meanwhile */
	/* db->life_mu (api.h): public calls inside the table; holds of
	 * cursors and library threads; whether a dropped table's resources
	 * were released (its object stays, on db->dead, until ts_close) */
	int calls, holds, released;
	ts__descriptor *desc;    /* current descriptor, guarded by mu */
	/* schema_mu: the tablet set of desc once a snapshot built it (the
	 * table holds a reference), and the swaps of desc so far, which
	 * tell a set built meanwhile that it is stale */
	ts__tablet_set *tablet_set;
	uint64_t desc_swaps;
	ts__descriptor *retired; /* read-only: replaced descriptors whose schemas
	                          * snapshots may still use; freed with the table */
	ino_t desc_ino;          /* read-only handles: detect a replaced file */
	ts__log *log;            /* the table's log (read-only in read-only dbs) */
	ts__filling fill;        /* writable dbs: the filling tablets */
	ts_buf scratch;          /* writer: row encoding */
	ts_buf lookup;           /* writer: blocks read by uniqueness checks */
	/* writer (mu): the greatest ts of the descriptor's tablets, as of
	 * descriptor generation tablets_ts_gen (0: not yet known) */
	int64_t tablets_max_ts;
	uint64_t tablets_ts_gen;
	uint64_t rows_rejected;  /* counters, guarded by mu */
	uint64_t flushes, flushed_rows, flushed_bytes;
	uint64_t merges, merged_in_bytes, merged_out_bytes, merged_rows_expired;
	uint64_t expired_tablets, quarantined; /* atomics */
	uint64_t rows_scanned, rows_returned; /* atomics: queries and latest */
	uint64_t agg_rows_scanned, agg_rows_summarised; /* atomics: aggregates */
	uint64_t next_id;        /* tablet ids reserved so far (mu) */
	struct ts__recent_flush {
		uint64_t id;
		int64_t at;      /* database clock */
	} recent[TS_MERGE_RECENT_MAX]; /* tablets flushed lately (mu) */
	int nrecent;
	/* Atomics of the scheduler (maint.c): monotonic ns of the moment a
	 * tree reached flush_size and was not yet being flushed (0 = none);
	 * time merges slept yielding to the foreground; time due flushes
	 * waited, in all and at most. */
	int64_t flush_wanted_mono;
	int64_t merge_throttled_ns, flush_wait_ns, flush_wait_max_ns;
	/* mu: failing background work, retried with backoff (retry.h), and
	 * inserts refused because the log reached log_cap */
	ts__retry flush_retry, merge_retry, expire_retry;
	uint64_t log_cap_refusals;
	pthread_mutex_t merge_mu; /* one merge at a time; taken before flush_mu */
	pthread_mutex_t flush_mu; /* one flush at a time; taken before desc_mu */
	pthread_mutex_t desc_mu;  /* one descriptor writer at a time; before mu */
	pthread_mutex_t tablets_mu; /* the open and damaged tablets below */
	struct ts__open_tablet *open_tablets;
	int nopen, capopen;
	uint64_t damaged[TS_DAMAGED_MAX]; /* ids found damaged, to quarantine */
	int ndamaged;
	uint64_t damage_reports; /* times a reader found a damaged tablet */
	struct ts_table *next;
};

/* An on-disk tablet opened by some reader or writer of the table,
 * counted: a tablet a merge replaced (retired) is closed when its last
 * user lets go; its file is already unlinked, and the open descriptor
 * keeps its bytes readable until then. */
struct ts__open_tablet {
	uint64_t id;
	struct ts__tablet *tab;
	int refs, retired;
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
	ts__maint maint;         /* writable dbs: the background work (maint.h) */
	ts__bcache bcache;       /* decompressed tablet blocks, for readers */
	/* Handle lifetimes (api.h): life_mu guards the counts below and the
	 * tables' calls, holds, released and (with mu) refs; life_cv is
	 * signalled when a count of calls reaches 0. */
	pthread_mutex_t life_mu;
	pthread_cond_t life_cv;
	int closing;             /* 1: ts_close waits for the calls inside (new
	                          * calls fail with TS_ECLOSED, but for
	                          * ts_table_close, which is let in: ts_close
	                          * may yet return TS_EBUSY); 2: it frees */
	long calls, cursors;     /* public calls inside the db; open cursors */
	struct ts_table *dead;   /* dropped tables' objects, freed by ts_close */
};

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

/* Tablet id left the descriptor: close it once unused. */
void ts__table_tablet_retire(struct ts_table *t, uint64_t id);

/* A reader found tablet id damaged (rc is the error it got): when rc is
 * TS_ECORRUPT, count it and, in a writable database, note the id for
 * ts__table_quarantine_due and wake the maintenance thread.  Returns rc. */
int ts__table_damaged(struct ts_table *t, uint64_t id, int rc);

/* Writers: move every tablet noted damaged to <table>/quarantine/ and
 * out of the descriptor.  Takes t->mu.  Returns 0 or the first error. */
int ts__table_quarantine_due(struct ts_table *t);

/*
 * Changing the descriptor.  Writers of it (flush, merge, expiry,
 * quarantine, alter) hold desc_mu from reading t->desc to swapping in its
 * successor, so t->desc may be read under desc_mu alone; the file is
 * written and synced without t->mu, and only the swap takes it -- so an
 * insert never waits for a descriptor's fsync (which on ext4 may wait for
 * the data of a whole merge).
 */

/* Take desc_mu and check t was not dropped.  Returns 0 (desc_mu held) or
 * TS_ECLOSED. */
int ts__table_desc_begin(struct ts_table *t);
void ts__table_desc_end(struct ts_table *t);

/* Write d as t's next descriptor (generation bumped); desc_mu is held.
 * On failure d is freed (with a schema it added) and t is unchanged. */
int ts__table_write_descriptor(struct ts_table *t, ts__descriptor *d);

/* Make the written d current; desc_mu and t->mu are held. */
void ts__table_swap_descriptor(struct ts_table *t, ts__descriptor *d);

/* Write d, then swap it in under t->mu; desc_mu is held, t->mu is not. */
int ts__table_install_descriptor(struct ts_table *t, ts__descriptor *d);

/* Install a descriptor naming t's tablets without gone[0..ngone) and
 * with *add if add is not NULL; desc_mu is held, t->mu is not.  Returns
 * 0, TS_EBUSY when some tablet of gone is no longer named (nothing
 * changes), or the errors of ts__table_install_descriptor. */
int ts__table_replace_tablets(struct ts_table *t, const uint64_t *gone, int ngone,
                              const ts__tablet_meta *add);

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

/* Reserve a tablet id; t->mu is held. */
static inline uint64_t ts__table_reserve_id(struct ts_table *t)
{
	if (t->next_id < t->desc->next_tablet_id)
		t->next_id = t->desc->next_tablet_id;
	return t->next_id++;
}

/* Free a table object (when the db closes): its resources, if not yet
 * released, and the object. */
void ts__table_free(struct ts_table *t);

/* Take the table's mutex and check it was not dropped; in read-only
 * handles, reload the descriptor if another process replaced it.
 * Returns 0 (locked) or TS_ECLOSED / a reload error (not locked). */
int ts__table_lock(struct ts_table *t);
void ts__table_unlock(struct ts_table *t);

/* Monotonic clock, ns: for measuring, never for timestamps. */
static inline int64_t ts__mono_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

/* The first instant rows with ts < it are past a TTL of ttl ns (0:
 * forever, INT64_MIN returned). */
static inline int64_t ts__expiry(int64_t ttl, int64_t now)
{
	return ttl > 0 && now > INT64_MIN + ttl ? now - ttl : INT64_MIN;
}

/* The first instant rows with ts < it are expired: past a TTL of ttl at
 * now, or below the descriptor's expiry horizon (horizon_set), whichever
 * is higher -- so that a row once expired stays expired when the TTL is
 * lengthened (INT64_MIN: nothing is). */
static inline int64_t ts__expiry_at(int64_t ttl, int horizon_set, int64_t horizon, int64_t now)
{
	int64_t e = ts__expiry(ttl, now);
	return horizon_set && horizon > e ? horizon : e;
}

/* The first instant rows with ts < it are expired in t (ts__expiry_at);
 * t->mu, desc_mu or schema_mu is held. */
static inline int64_t ts__table_expiry(const struct ts_table *t, int64_t now)
{
	return ts__expiry_at(t->desc->ttl, t->desc->horizon_set, t->desc->horizon, now);
}

static inline int ts__db_readonly(const ts_db *db)
{
	return (db->opts.flags & TS_OPEN_READONLY) != 0;
}

#endif
