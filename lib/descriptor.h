/*
 * descriptor.h -- a table's DESCRIPTOR: its schema versions, TTL,
 * duplicate policy, on-disk tablets, the log position flushed through,
 * and (format 5) the tombstones flushes moved out of the log.
 *
 * The descriptor is the table's root of truth: it is only ever replaced
 * whole (fsutil.h's stage + commit), so a crash leaves either the old or
 * the new one; a damaged one is reported with TS_ECORRUPT and never half
 * read.  The in-memory ts__descriptor is owned by its table; schemas are
 * shared between successive descriptors of the same table, which is why
 * they are reference-free and immutable and freed only with the table.
 */
#ifndef TS_DESCRIPTOR_H
#define TS_DESCRIPTOR_H

#include "schema.h"
#include "tombstone.h"

/* One on-disk tablet (filled in by the tablet module). */
typedef struct ts__tablet_meta {
	uint64_t id;
	uint32_t schema_version;
	int64_t period_start, period_end; /* the period it belongs to */
	int64_t min_ts, max_ts;           /* its rows' timespan */
	uint64_t rows, bytes;
	uint64_t source;                  /* flushed from the filling tree
	                                   * named born (log.h); 0 = merged */
	/* The versions its rows were committed in (docs/corrections.md
	 * section 1): flushed from tree T, [T's born, the commit that last
	 * added rows to T]; merged, [min lo, max hi] of the inputs; written
	 * before versions existed, [0, 0].  Format version 4 records them. */
	uint64_t lo, hi;
} ts__tablet_meta;

typedef struct ts__descriptor {
	uint64_t generation;     /* bumped by every write */
	int64_t ttl;             /* ns, 0 = forever */
	uint64_t flushed_lsn;    /* log position whose commits are all on disk */
	uint64_t next_tablet_id;
	/* The expiry horizon: rows with ts below it passed the TTL at some
	 * moment (the highest now - TTL applied so far) and stay expired even
	 * if the TTL is lengthened later.  Only when horizon_set (calloc'ed
	 * descriptors have none); format version 2 records it. */
	int64_t horizon;
	int horizon_set;
	/* The duplicate policy (TS_ON_DUPLICATE_*; calloc'ed descriptors
	 * reject); format version 3 records it. */
	ts_on_duplicate on_duplicate;
	/* Format version 5 (docs/corrections.md): TS_DESC_REPLACED,
	 * TS_DESC_TOMBSTONES_LOGGED; and the tombstones moved here from the
	 * log by flushes (tombstone.h), oldest version first, each owning its
	 * bounds. */
	unsigned flags;
	int ntombs;
	ts__tomb *tombs;
	/* Format version 6 (docs/corrections.md section 4, "Change
	 * records"): the deletes whose tombstones left (a flush found them
	 * spent, a purge dropped them), kept so that ts_changes_open still
	 * reports them -- each a tombstone's version, ts range and key box
	 * (no key box: a purge erased it), oldest version first, at most
	 * ts__chrecs_max; and the changes horizon: the newest version of the
	 * records dropped past that bound (0: none), with the union of their
	 * ts ranges [ch_tmin, ch_tmax]. */
	int nchrecs;
	ts__tomb *chrecs;
	uint64_t ch_horizon;
	int64_t ch_tmin, ch_tmax;
	int nschemas;            /* schemas[v - 1] is version v */
	ts__schema **schemas;
	int ntablets;
	ts__tablet_meta *tablets;
	struct ts__descriptor *next_retired;
} ts__descriptor;

/* Whether a source of versions [alo, ahi] is newer than one of [blo,
 * bhi] that may share a key with it: by lo, ties (only sources with lo 0,
 * which hold rows written before versions existed) by hi.  Readers and
 * merges resolve equal keys by it. */
static inline int ts__newer(uint64_t alo, uint64_t ahi, uint64_t blo, uint64_t bhi)
{
	return alo != blo ? alo > blo : ahi > bhi;
}

/* Whether one of tablets[0..n) was flushed from the filling tree born at
 * born: readers, recovery and check then skip that tree. */
static inline int ts__tablets_hold_tree(const ts__tablet_meta *tablets, int n, uint64_t born)
{
	for (int i = 0; i < n; i++)
		if (tablets[i].source == born)
			return 1;
	return 0;
}

/* Add a copy of tomb to d's tombstones unless d has one of its version
 * (kept in version order).  Returns 0 or TS_ENOMEM. */
int ts__descriptor_add_tomb(ts__descriptor *d, const ts__tomb *tomb);

/* Remove d's tombstone i. */
void ts__descriptor_drop_tomb(ts__descriptor *d, int i);

/* The most change records a descriptor keeps (TS_CHANGE_RECORDS_MAX;
 * a variable so that tests can lower it). */
extern int ts__chrecs_max;

/*
 * Remove d's tombstone i and keep its change record: its version, ts
 * range and -- unless erase_keys -- its key box (a purge keeps none:
 * the bounds are key bytes of the rows it erases).  Past ts__chrecs_max
 * records, or TS_CHANGE_RECORDS_KEY_BYTES of key bounds in them, the
 * oldest are dropped, raising the changes horizon to their version and
 * widening [ch_tmin, ch_tmax] to their ts ranges.  Returns
 * 0 or TS_ENOMEM (d unchanged but for the tombstone kept).
 */
int ts__descriptor_retire_tomb(ts__descriptor *d, int i, int erase_keys);

/* Erase the key box of every change record of d whose key range meets
 * box's, whatever their times (a purge's range: after it no live file
 * holds those key bytes; NULL: none); they then report every prefix of
 * their time range. */
void ts__descriptor_erase_chrec_keys(ts__descriptor *d, const ts__tomb *box);

/* The newest schema. */
static inline const ts__schema *ts__desc_schema(const ts__descriptor *d)
{
	return d->schemas[d->nschemas - 1];
}

/* Raise d's horizon to expiry when that is higher (INT64_MIN: no-op). */
static inline void ts__descriptor_raise_horizon(ts__descriptor *d, int64_t expiry)
{
	if (expiry != INT64_MIN && (!d->horizon_set || expiry > d->horizon)) {
		d->horizon = expiry;
		d->horizon_set = 1;
	}
}

/* Serialise d (header + body) into b.  Returns 0, TS_ENOMEM, or TS_ETOOBIG
 * when the file would exceed TS_DESCRIPTOR_MAX (b is then left as it was). */
int ts__descriptor_encode(const ts__descriptor *d, ts_buf *b);

/* Parse p[0..n).  Returns 0, TS_ECORRUPT (message says what is wrong,
 * e.g. which schema version breaks from the one before and at which
 * column), TS_EVERSION, TS_ENOMEM.  On success *out owns its schemas. */
int ts__descriptor_decode(const void *p, size_t n, ts__descriptor **out);

/* Read dir/DESCRIPTOR.  Errors of decode plus TS_ENOENT, TS_EIO. */
int ts__descriptor_read(const char *dir, ts__descriptor **out);

/* Write d atomically to dir/DESCRIPTOR (fsutil.h).  Errors: those of
 * encode (TS_ETOOBIG: nothing is written), TS_ENOSPC, TS_EIO (when the
 * final sync of dir fails, DESCRIPTOR already holds d), ... */
int ts__descriptor_write(const char *dir, const ts__descriptor *d);

/* Free d and, if owns_schemas, its schemas. */
void ts__descriptor_free(ts__descriptor *d, int owns_schemas);

/* A shallow copy sharing d's schemas, with room for one more schema
 * (its tombstones are copied). */
int ts__descriptor_clone(const ts__descriptor *d, ts__descriptor **out);

#endif
