/*
 * snapshot.h -- a consistent, lock-free view of a table's filling tablets.
 *
 * A snapshot is the newest published commit: its record in the log names
 * the root of every filling tablet, and the trees under those roots never
 * change.  Taking one is an acquire load of the log head plus a copy of
 * the roots; holding one blocks nobody.  The schema versions needed to
 * decode its rows, and the on-disk tablets, are captured with it, as
 * one reference to the descriptor's tablet set (tablets.h) -- the
 * descriptor after the commit, since a flush writes the descriptor
 * before the commit that drops the flushed tree: a tree whose born is a
 * tablet's source is then left out, so no row is seen twice or missed.
 */
#ifndef TS_SNAPSHOT_H
#define TS_SNAPSHOT_H

#include "handle.h"
#include "row.h"

typedef struct ts__snapshot {
	ts_table *table;
	uint64_t commit;          /* LSN of the commit record, 0 = empty */
	uint64_t seq;
	uint32_t nroots;
	ts__root *roots;
	int64_t expiry;           /* rows with ts below it are past the TTL */
	const ts__schema *schema; /* the current schema when taken */
	int nversions;
	const ts__schema *const *versions; /* versions[v - 1] */
	int ntablets;             /* on-disk tablets, as the descriptor named them */
	const ts__tablet_meta *metas;
	struct ts__tablet *const *tablets; /* open, owned by the table */
	ts__tablet_set *set;      /* holds metas, tablets and versions (referenced) */
	int pinned;               /* holds a pin of the table's log */
	/* The tombstones in force (tombstone.h): the log's chain as the
	 * commit names it, then the descriptor's, each version once (copies
	 * in tview).  0: no row is deleted, and no read tests one. */
	int ntombs;
	ts__tomb *tombs;
	/* The view that holds them (tombstone.h, referenced; NULL when none
	 * is in force), and its index by key, which the streams select
	 * theirs through (scan.c). */
	ts__tomb_view *tview;
	const ts__tomb_index *tindex;
	/* Sources may hold the same key (the table may hold replaced rows,
	 * TS_DESC_REPLACED; docs/corrections.md section 2): readers resolve
	 * equal keys newest source first (ts__src.vlo).  0: every key lives
	 * in one source, and reads run the code they ran before corrections
	 * existed. */
	int replaced;
} ts__snapshot;

/* Take a snapshot of t.  Returns 0, TS_ECORRUPT, TS_ENOMEM, TS_ECLOSED. */
int ts__snapshot_take(ts_table *t, ts__snapshot *out);
void ts__snapshot_release(ts__snapshot *s);

/* Call fn for every row of root i of the snapshot in key order, decoded
 * into the snapshot's schema (vals valid only during the call), leaving
 * out rows past the TTL as of the snapshot's taking.  Stops
 * when fn returns non-zero and returns that value; 0 at the end;
 * TS_ECORRUPT for a damaged row. */
typedef int (*ts__row_fn)(const ts_value *vals, int n, void *arg);
int ts__snapshot_scan(const ts__snapshot *s, uint32_t i, ts__row_fn fn, void *arg);

/* Call fn for every row of on-disk tablet i, in key order, decoded into
 * the snapshot's schema; as ts__snapshot_scan. */
int ts__snapshot_scan_tablet(const ts__snapshot *s, int i, ts__row_fn fn, void *arg);

/* Decode the row record at lsn into vals (the snapshot's schema). */
int ts__snapshot_row(const ts__snapshot *s, uint64_t lsn, ts_value *vals, ts_buf *scratch);

/* The schema rows of schema version `version` were written in, or NULL
 * (TS_ECORRUPT noted: a version the snapshot does not know). */
const ts__schema *ts__snapshot_version_schema(const ts__snapshot *s, uint32_t version);
/* Decode row[0..len), written under schema version `version`, into vals
 * in the snapshot's schema.  Returns 0, TS_ECORRUPT (an unknown version,
 * a malformed row) or TS_ENOMEM. */
int ts__snapshot_decode(const ts__snapshot *s, uint32_t version, const void *row, size_t len,
                        ts_value *vals, ts_buf *scratch);
/* The same for columns want[0..nwant), none in the key, only
 * (ts__row_decode_values). */
int ts__snapshot_decode_values(const ts__snapshot *s, uint32_t version, const void *row,
                               size_t len, ts_value *vals, const int *want, int nwant);

#endif
