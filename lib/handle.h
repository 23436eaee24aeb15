/*
 * handle.h -- the database and table handles as every layer of the
 * library sees them: the structs behind ts_db and ts_table, the
 * scheduler's state they hold, and the small inline helpers every layer
 * needs (clocks, expiry, waking the scheduler).
 *
 * A ts_db owns the database directory: the write lock, the options, the
 * clock, and one ts_table object per table opened so far.  ts_table_open
 * hands out counted references to that object, so every user of a table
 * in the process shares its descriptor, its log and filling tablets.
 * Locks: db->mu guards the table list; table->mu guards the table's
 * descriptor and serialises its writers.
 *
 * Header only, and below every module that works on a handle: it
 * includes only the headers of the handles' parts (block cache,
 * descriptor, filling tablets, limits, log, retry state), so that the
 * modules above it -- tablets.h, tabledesc.h, flush.h, merge.h,
 * maint.h, ... -- depend one way (lib/README.md).  The functions on a
 * handle are declared by the module that implements them.
 */
#ifndef TS_HANDLE_H
#define TS_HANDLE_H

#include <pthread.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "bcache.h"
#include "descriptor.h"
#include "epoch_format.h"
#include "filling.h"
#include "held.h"
#include "tslimits.h"
#include "log.h"
#include "readahead.h"
#include "retry.h"
#include "rollupdef.h"

struct ts_db;
struct ts_table;
struct ts__merge_yield;

/* The scheduler's state, one per writable database (ts_db.maint). */
typedef struct ts__maint {
	pthread_t thread;
	int running;
	pthread_mutex_t mu;      /* guards stop, wake, held, busy */
	pthread_cond_t cv;       /* wakes the thread: close, a tree at flush_size,
	                          * a damaged tablet */
	pthread_cond_t idle_cv;  /* a pass ended (ts__maint_hold) */
	int stop;                /* atomic reads outside mu: ts_close asked */
	int wake, held, busy;    /* work was signalled; ts__maint_hold; a pass runs */
	/* The clock of the backoff of failing jobs (retry.h): monotonic ns;
	 * tests replace it to count retries without waiting. */
	int64_t (*clock)(void);
	/* Atomic: monotonic ns of the last foreground work -- a committed
	 * insert, a snapshot taken for a read, a block a read loaded -- which
	 * background merges yield to (ts__maint_foreground). */
	int64_t fg_mono;
	/* Atomics since the database opened: passes, merges the scheduler
	 * made, and the time they slept to keep within the budget. */
	uint64_t passes, merges;
	int64_t throttled_ns;
	int rollups_loaded;      /* the first pass loaded every rollup */
	int rollups_wanted;      /* bits, atomic: TS_ROLLUPS_FULL, a source's
	                          * accumulators filled: its rollups run at
	                          * the thread's next pass or between two
	                          * slices of its merge (rollacc.h
	                          * TS_ROLLACC_RUN_CLOSED); TS_ROLLUPS_ALL,
	                          * every rollup behind runs there as an
	                          * explicit pass runs it
	                          * (ts__maint_rollups_now) */
	/* The rollup job (rollup.c, above the scheduler: set by ts_open) --
	 * ts__rollups_load and ts__rollup_due of api.h; NULL: none. */
	int (*rollups_load)(struct ts_db *db);
	int (*rollup_due)(struct ts_table *t, const struct ts__merge_yield *y, int mode);
} ts__maint;

/* rollup_due's modes: a pass of the scheduler's thread (runs paced), an
 * explicit pass (every rollup behind runs), between two slices of a job
 * (only rollups whose source's accumulators filled: rollacc.h; every
 * rollup behind runs there as explicit when TS_ROLLUPS_ALL was asked). */
enum { TS_ROLLUP_PACED = 0, TS_ROLLUP_EXPLICIT = 1, TS_ROLLUP_IF_FULL = 2 };
/* maint.rollups_wanted's bits. */
enum { TS_ROLLUPS_FULL = 1, TS_ROLLUPS_ALL = 2 };

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
	int *newest;                 /* indexes into tablets, greatest max_ts first
	                              * (of equal ones, the most rows first) */
	int nversions;
	const ts__schema **versions; /* versions[v - 1]: the table's, immutable */
	int64_t ttl;
	int64_t horizon;             /* the descriptor's expiry horizon */
	int horizon_set;
	uint64_t flushed_lsn;
	unsigned flags;              /* the descriptor's TS_DESC_* flags */
	int ntombs;                  /* the descriptor's tombstones (copies) */
	ts__tomb *tombs;
	int nchrecs;                 /* its change records (copies) and changes */
	ts__tomb *chrecs;            /* horizon (descriptor.h), which only */
	uint64_t ch_horizon;         /* ts_changes_open reads */
	int64_t ch_tmin, ch_tmax;
	/* the table's schema_mu: the tombstones in force of the last chain a
	 * snapshot of this set read, with them (tombstone.h; snapshot.c) --
	 * a cache, one reference held */
	ts__tomb_view *tview;
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
	/* db->life_mu (lifetime.h): public calls inside the table; whether
	 * a dropped table's resources were released (its object stays, on
	 * db->dead, until ts_close).  Atomic: holds of cursors and library
	 * threads (ts__table_hold). */
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
	uint64_t incarnation;    /* the table directory's identity at open
	                          * (ts__table_incarnation): read-only handles
	                          * see a drop and re-create by it */
	ts__log *log;            /* the table's log (read-only in read-only dbs) */
	ts__rollup *rollup;      /* a rollup's definition and maintenance state
	                          * (rollup.c), NULL for other tables: read
	                          * from <table>/ROLLUP at load */
	ts__filling fill;        /* writable dbs: the filling tablets */
	struct ts__rollacc *acc; /* writer (mu): its rollups' accumulators at
	                          * insert (rollacc.c), NULL until one registers */
	ts_buf scratch;          /* writer: row encoding */
	ts_buf lookup;           /* writer: blocks read by uniqueness checks */
	/* writer (mu): the greatest ts of the descriptor's tablets, as of
	 * descriptor generation tablets_ts_gen (0: not yet known) */
	int64_t tablets_max_ts;
	uint64_t tablets_ts_gen;
	uint64_t rows_rejected;  /* counters, guarded by mu */
	uint64_t rows_ignored_duplicates; /* rows the policy ignore skipped */
	uint64_t rows_replaced;  /* rows stored over a row of a filling tablet */
	uint64_t flushes, flushed_rows, flushed_bytes;
	uint64_t merges, merged_in_bytes, merged_out_bytes, merged_rows_expired;
	uint64_t expired_tablets, quarantined; /* atomics */
	uint64_t rows_scanned, rows_returned; /* atomics: queries and latest */
	uint64_t agg_rows_scanned, agg_rows_summarised; /* atomics: aggregates */
	int64_t read_mono;       /* atomic: ts__mono_coarse_ns of the last query,
	                          * latest or aggregate opened, to the second
	                          * (ts__table_note_read) */
	void *spare_cursor;      /* atomic: a closed cursor's memory, for the
	                          * next cursor opened (query.c) */
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
	/* mu: failing background work, retried with backoff (retry.h),
	 * inserts refused because the log reached log_cap, inserts that
	 * waited for flushes to release it (ts__log_stall) and how long, the
	 * time inserts slept on the slope before it, and the pause owed but
	 * not yet slept */
	ts__retry flush_retry, merge_retry, expire_retry;
	uint64_t log_cap_refusals, log_stalls;
	int64_t log_stall_ns, log_paced_ns, log_pace_debt_ns;
	pthread_mutex_t merge_mu; /* one merge at a time; taken before flush_mu */
	pthread_mutex_t flush_mu; /* one flush at a time; taken before desc_mu */
	pthread_mutex_t desc_mu;  /* one descriptor writer at a time; before mu */
	pthread_mutex_t tablets_mu; /* the open and damaged tablets below */
	struct ts__open_tablet *open_tablets;
	int nopen, capopen;
	/* tablets written but not yet opened and the block cache serials
	 * they will be opened with (ts__table_tablet_serial) */
	struct ts__warm_tablet { uint64_t id, serial; } *warm;
	int nwarm, capwarm;
	uint64_t damaged[TS_DAMAGED_MAX]; /* ids found damaged, to quarantine */
	char *damaged_why[TS_DAMAGED_MAX]; /* the first reader's message for
	                          * each (malloc'ed; NULL when out of memory),
	                          * logged by the quarantine */
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
	ts__maint maint;         /* writable dbs: the background work (maint.c) */
	ts__bcache bcache;       /* decompressed tablet blocks, for readers */
	ts__rapool rapool;       /* decompresses blocks scans read ahead */
	/* Handle lifetimes (lifetime.h): life_mu guards the counts below and the
	 * tables' calls, holds, released and (with mu) refs; life_cv is
	 * signalled when a count of calls reaches 0. */
	pthread_mutex_t life_mu;
	pthread_cond_t life_cv;
	int closing;             /* 1: ts_close waits for the calls inside (new
	                          * calls fail with TS_ECLOSED, but for
	                          * ts_table_close, which is let in: ts_close
	                          * may yet return TS_EBUSY); 2: it frees */
	long calls, cursors;     /* public calls inside the db (life_mu); open
	                          * cursors (atomic: ts__table_hold) */
	struct ts_table *dead;   /* dropped tables' objects, freed by ts_close */
	pthread_mutex_t epoch_mu; /* guards epoch (epoch.c) */
	ts__epoch_file epoch;    /* read-write handles: <db>/EPOCH's contents */
};

/* Reserve a tablet id; t->mu is held. */
static inline uint64_t ts__table_reserve_id(struct ts_table *t)
{
	TS_ASSERT_HELD(&t->mu);
	if (t->next_id < t->desc->next_tablet_id)
		t->next_id = t->desc->next_tablet_id;
	return t->next_id++;
}

/* Whether t was dropped: set under db->mu by ts_drop, or under t->mu
 * alone by a read-only handle that saw the drop. */
static inline int ts__table_dropped(const struct ts_table *t)
{
	return __atomic_load_n(&t->dropped, __ATOMIC_RELAXED);
}

/* Monotonic clock, ns: for measuring, never for timestamps. */
static inline int64_t ts__mono_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

/* The monotonic clock as of the kernel's last tick (a few ms behind
 * ts__mono_ns at most, never ahead): a load, where ts__mono_ns reads the
 * time-stamp counter -- for the marks every read makes
 * (ts__maint_foreground), which windows of tens of ms compare against;
 * three reads of the fine clock were 9 % of a latest lookup. */
static inline int64_t ts__mono_coarse_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC_COARSE, &t);
	return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

/* A query, latest or aggregate of t was opened now: note it (to the
 * second, so that readers seldom write the line), for the flush to
 * tell a table being read from one only written (flush.c). */
static inline void ts__table_note_read(struct ts_table *t)
{
	int64_t now = ts__mono_coarse_ns();
	if (now - __atomic_load_n(&t->read_mono, __ATOMIC_RELAXED) >= 1000000000)
		__atomic_store_n(&t->read_mono, now, __ATOMIC_RELAXED);
}

/* Whether t was read (ts__table_note_read) within the last window ns. */
static inline int ts__table_read_within(struct ts_table *t, int64_t window)
{
	int64_t last = __atomic_load_n(&t->read_mono, __ATOMIC_RELAXED);
	return last != 0 && ts__mono_coarse_ns() - last < window;
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

/* Take the writer's lock of database directory dir (docs/layout.md
 * section 2): *fd receives LOCK's descriptor (-1 when it could not be
 * opened; close it on failure too), which holds the flock until closed.
 * Returns 0, TS_ELOCKED (another writer holds it; the message names its
 * pid), or the error opening or writing LOCK.  ts_open's, and the
 * standby's (standby.c): one writer of a directory at a time. */
int ts__db_lock(const char *dir, int *fd);

/* The tables of database directory dir (as ts_tables lists them). */
int ts__dir_tables(const char *dir, char ***out, int *n);

/* Remove what an interrupted table creation (.tmp-*) or drop
 * (.dropped-*) left in database directory dir; the lock is held.
 * Returns 0 or a TS_E* code. */
int ts__db_remove_leftovers(const char *dir);

/* Whether db was opened read-only (TS_OPEN_READONLY). */
static inline int ts__db_readonly(const ts_db *db)
{
	return (db->opts.flags & TS_OPEN_READONLY) != 0;
}

/* Set on a thread while it runs a maintenance pass (maint.c): the
 * inserts and reads of its jobs -- a rollup's -- are background work. */
extern _Thread_local int ts__maint_in_pass;

/* Note foreground work now (an insert committed, a read took a snapshot
 * or loaded a block; mono_now: ts__mono_ns, or ts__mono_coarse_ns, which
 * is never ahead of it): merges and rollups yield to it for
 * maint_busy_window.  Not the maintenance's own: a rollup reading its
 * source and writing its rows would otherwise make itself yield. */
static inline void ts__maint_foreground(ts__maint *m, int64_t mono_now)
{
	/* stored only when it moved: readers on every core would otherwise
	 * write the one line at every block */
	if (!ts__maint_in_pass && __atomic_load_n(&m->fg_mono, __ATOMIC_RELAXED) != mono_now)
		__atomic_store_n(&m->fg_mono, mono_now, __ATOMIC_RELAXED);
}

/* Wake the scheduler (maint.c): a tree reached flush_size, a tablet was
 * found damaged.  Cheap; safe from any thread.  Inline here, touching
 * only the scheduler's state, so that the modules under the scheduler
 * need not include maint.h. */
static inline void ts__maint_wake(struct ts_db *db)
{
	pthread_mutex_lock(&db->maint.mu);
	db->maint.wake = 1;
	pthread_cond_signal(&db->maint.cv);
	pthread_mutex_unlock(&db->maint.mu);
}

#endif
