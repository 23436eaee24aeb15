/*
 * scan.h -- the read path under every query: a snapshot's filling trees
 * and on-disk tablets as sorted streams of the rows inside a key range x
 * a time range (range.h), merged into one stream in key order, either
 * direction.
 *
 * What the streams skip without reading a row: trees and tablets whose
 * timespan or key span misses the range; tablets whose Bloom filter rules
 * out the range's stem; tablets none of whose latest blocks (tablet.h)
 * meets a range of rows newer than the rest of its blocks (latest, past
 * the best row found); blocks whose timespan misses it (so a query over
 * one hour of a day-long tablet decompresses about one block in 24 per
 * key); and, for aggregates, blocks whose rows all fall in one group and
 * one window, which are handed up as their footer statistics instead
 * (BTrDB's precomputed summaries).
 *
 * Deletes (tombstone.h): with tombstones in force, each stream selects
 * when it opens the tombstones that may hide its rows (newer than the
 * tablet's hi or the tree's born, meeting its keys and times) and, per
 * tablet block, those meeting the block; a row one of them hides (a
 * tree's by its row record's LSN) is skipped, and a block one of them
 * meets is never handed up as its summary.  With no tombstone, nothing
 * of this runs.
 */
#ifndef TS_SCAN_H
#define TS_SCAN_H

#include "avl.h"
#include "bcache.h"
#include "range.h"
#include "readahead.h"
#include "snapshot.h"
#include "tablet.h"
#include "tombstone.h"

/* Aggregates: hand up blocks whose rows share their first `group` key
 * columns and one window of `every` ns as statistics; with runs, also
 * hand up the rows of a loaded block that share their group as one item,
 * a run (scan.c, make_run), for the aggregate to fold in one loop. */
typedef struct ts__summary_rule {
	const ts__schema *schema; /* the key's columns */
	int group;
	int64_t every;
	int runs;
} ts__summary_rule;

/* One stream: a tree or a tablet of the snapshot. */
typedef struct ts__src {
	const ts__snapshot *snap;
	const ts__range *range;
	int desc;
	const ts__summary_rule *rule;
	int64_t min_ts, max_ts;   /* bounds of its rows' ts */
	uint64_t vlo;             /* how new it is: a tree's born, a tablet's
	                           * lo (docs/corrections.md section 1); among
	                           * sources that may share a key the greater
	                           * is the newer (invariant V) */
	uint64_t vhi;             /* a tablet's hi (a tree's born): breaks a
	                           * tie of vlo 0, a merge's output that took
	                           * in a tablet written before versions
	                           * against such a tablet, which is older */
	int done;
	/* the current item: a row, or (summary) block `block` of tab, or
	 * (run) rows run_lo .. run_hi - 1 of cb, the first of them the
	 * current row, none checked against the range's ts interval */
	const unsigned char *key, *row;
	size_t klen, rowlen;
	uint32_t version;         /* schema version of row */
	int summary;
	uint32_t block;
	int run;
	long run_lo, run_hi;
	/* a tree (and it, last) */
	uint64_t root;
	int started;
	/* a tablet */
	const ts__tablet *tab;
	long blk;                 /* block whose rows cb holds, -1 none */
	long nextb;               /* the next block to consider */
	int seek_pending;         /* the first block loaded is sought */
	ts__cblock *cb;           /* the block being read */
	int cb_private;           /* cb was never offered to the cache */
	int time_inside;          /* every row of cb is in the ts interval */
	uint32_t blocks_read;     /* blocks it read from the file */
	uint32_t loaded;          /* blocks it loaded, read or cached */
	ts__readahead *ra;        /* its read-ahead, once a long scan */
	long pos;                 /* next row (descending: next to return) */
	long stop;                /* rows from pos up to stop (excluded) are in
	                           * the key range; the range ends inside cb
	                           * when stop is inside it (0..nrows-1) */
	int far_lazy;             /* > 0: the range may end inside cb but stop
	                           * is not located yet; this many more rows are
	                           * judged one by one before it is */
	uint64_t scanned;         /* rows whose key it looked at */
	uint64_t summarised;      /* rows it handed up as summaries */
	/* The tombstones that may hide its rows (tombstone.h): none unless
	 * tombstones are in force; tomb_mem holds a few, more are
	 * allocated.  A tree's row is hidden by those newer than its row
	 * record (row_lsn), a tablet's by all of them. */
	const ts__tomb **tombs;
	int ntombs;
	const ts__tomb *tomb_mem[8];
	/* a tablet's: those of tombs meeting the loaded block (most blocks
	 * meet none, and their rows are tested against nothing); room for
	 * ntombs after tombs' own */
	const ts__tomb **btombs;
	int nbtombs;
	uint64_t row_lsn;         /* a tree's current row record */
	uint64_t hidden;          /* rows tombstones hid */
	/* a tree's iterator: last, and left uninitialised until the tree is
	 * first read, since it is most of the struct's size */
	ts__avl_iter it;
} ts__src;

/* A stream over tree i (tablet 0) or on-disk tablet i (tablet 1) of s.
 * Returns 0 when it may hold rows of the range, 1 when it certainly
 * holds none (nothing to free then), TS_ENOMEM (nothing to free). */
int ts__src_init(ts__src *src, const ts__snapshot *s, int tablet, int i,
                 const ts__range *r, int desc, const ts__summary_rule *rule);
void ts__src_free(ts__src *src);

/* Advance to the next item in range.  Returns 1, 0 at the end, or
 * TS_ECORRUPT / TS_EIO / TS_ENOMEM (damage is reported to the table). */
int ts__src_next(ts__src *src);

/* The merge of every stream of a snapshot.  When the snapshot may
 * hold replaced rows, equal keys of several streams come out once, from the
 * newest stream (greatest vlo): the others' rows of that key are skipped,
 * in either direction. */
typedef struct ts__scan {
	ts__snapshot snap;
	const ts__range *range;
	int desc;
	ts__src *src;
	int nsrc;
	int *heap, nheap;
	int last;                 /* stream of the item returned last, or -1 */
	/* the stream that comes next after the heap's top (the first of
	 * its children), -1 when there is none, RUNNER_UNKNOWN when the heap
	 * changed since: while the top keeps coming before it, the heap
	 * needs no reordering and a row costs one key comparison */
	int runner;
	/* bytes every key of the range begins with (its stem, when it has
	 * one and no block is summarised), which the merge's comparisons
	 * pass over: every row in the heap is in the range */
	size_t skip;
	uint64_t stopped_scanned, stopped_summarised; /* counts of streams closed by a stop */
} ts__scan;

/* Take a snapshot of t (first, so that ranges can be built in its
 * schema).  Returns 0 or the errors of ts__snapshot_take; on failure
 * there is nothing to close. */
int ts__scan_begin(ts__scan *sc, ts_table *t);

/* Open the streams of range r (which must outlive the scan) and read
 * their first items.  rule may be NULL.  Returns 0 or an error of
 * ts__src_next (close the scan either way). */
int ts__scan_start(ts__scan *sc, const ts__range *r, int desc, const ts__summary_rule *rule);

/* The next item, in key order: *out points at its stream, whose item
 * fields stay valid until the next call.  Returns 1, 0 at the end, or an
 * error of ts__src_next. */
int ts__scan_next(ts__scan *sc, const ts__src **out);

/* Rows looked at and rows summarised, over all streams so far. */
void ts__scan_counts(const ts__scan *sc, uint64_t *scanned, uint64_t *summarised);

/* Close the streams but keep the snapshot (and the counts), so that
 * ts__scan_start can run the same or another range over it again. */
void ts__scan_stop(ts__scan *sc);

/* Close the streams and release the snapshot.  Safe after a failed
 * open and twice. */
void ts__scan_close(ts__scan *sc);

#endif
