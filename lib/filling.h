/*
 * filling.h -- a table's filling tablets: one versioned AVL tree per
 * period, all in the table's one log, so the log order is the insertion
 * order (DESIGN.md section 3).
 *
 * The writer keeps two arrays of ts__root: `work`, the roots as the batch
 * in progress has changed them, and `committed`, the roots of the last
 * commit.  ts__filling_commit writes `work` into a commit record and
 * copies it to `committed`; ts__filling_abort copies `committed` back, so
 * a failed batch leaves no trace.  All calls need the table's mutex.
 * Deletes add to a batch a tombstone record (ts__filling_tombstone):
 * the tombstone root, which every commit names after the trees
 * (tombstone.h), is kept beside the roots the same way.
 */
#ifndef TS_FILLING_H
#define TS_FILLING_H

#include "log.h"
#include "tombstone.h"

typedef struct ts__filling {
	ts__log *log;
	int n, cap;
	ts__root *work;
	int ncommitted;
	ts__root *committed;
	uint64_t batch;          /* LSN of the batch in progress */
	uint64_t nodes_written;  /* counters */
	uint64_t rows, batches;
	/* The tombstone root (tombstone.h) as the batch in progress has it
	 * and as last committed; root 0 = none (then no commit names one).
	 * Every commit names it after the trees. */
	ts__root tomb, tomb_committed;
	/* The tombstones of the committed chain past its cut, oldest first,
	 * borrowed from the log (their records stay mapped: they lie past the
	 * flushed position until a flush moves them into the DESCRIPTOR). */
	ts__tomb *lt;
	int nlt, caplt;
	/* When not NULL: whether a row found in a tree (its key, its row
	 * record's LSN) is hidden by a tombstone, so that inserting its key
	 * again is no duplicate (insert.c sets it for the batch). */
	int (*hidden)(void *arg, const unsigned char *key, size_t klen, uint64_t row_lsn);
	void *hidden_arg;
	uint64_t refreeze;       /* TS_FILLING_REFREEZE's tree */
	/* The log's head when the trees were recovered: no tree recovered
	 * then took rows after it (their last is 0: see ts__filling_hi_bound). */
	uint64_t open_head;
} ts__filling;

/* Set up from the log's newest commit (after recovery); the trees count
 * as created at that commit's time (now, if that is later); the
 * tombstones of its chain at or after floor (the DESCRIPTOR's flushed
 * position) are read.  Returns 0, TS_ECORRUPT or TS_ENOMEM. */
int ts__filling_init(ts__filling *f, ts__log *log, uint64_t floor, int64_t now);
void ts__filling_free(ts__filling *f);

/* Start a batch.  Returns 0 or a log error. */
int ts__filling_begin(ts__filling *f);

/*
 * Insert the row record at row_lsn, whose key is key[0..klen) and whose ts
 * is ts, into the filling tablet of its period as of now, after checking
 * that no filling tablet whose period holds ts has the key already.
 * rowbytes counts toward the tablet's size.  Returns 0, TS_EDUPKEY (then
 * *dup_row names the existing row, and nothing changed: no record was
 * allocated and no tablet made, so the batch may go on without the row),
 * TS_ETOOBIG (too many periods) or a log error.
 * With replace (the policy replace) an existing key is no error: the row
 * goes in the tablet of its period all the same -- replacing the node of
 * its key there (the tablet's row count unchanged), or shadowing the row
 * of another filling tablet (docs/corrections.md section 2) -- and
 * *dup_row names the row it replaced, 0 when no filling tablet had the
 * key alive (*dup_row is set either way; a row f->hidden says is deleted
 * is replaced in place like any, and not named).
 */
int ts__filling_insert(ts__filling *f, const unsigned char *key, size_t klen,
                       int64_t ts, int64_t now, uint64_t row_lsn, size_t rowbytes,
                       int replace, uint64_t *dup_row);
/* (A key found in a tree whose row f->hidden says is deleted is no
 * duplicate: when that tree is its period's working one, it is frozen
 * in the batch and the row goes to a new tree of the period, so that the
 * tree holding the deleted row stays as its tombstone applies to it.
 * When that tree already took rows of the batch, nothing is inserted and
 * TS_FILLING_REFREEZE is returned with f->refreeze naming the tree: the
 * caller aborts the batch, freezes the tree (ts__filling_freeze) and
 * makes the batch again.) */
#define TS_FILLING_REFREEZE 2

/* Mark the tree named born frozen in the working roots (the batch about
 * to begin commits it).  Returns whether it was there. */
int ts__filling_freeze(ts__filling *f, uint64_t born);

/* ts__root.last of a tree the batch in progress added rows to. */
#define TS_ROOT_LAST_BATCH UINT64_MAX

/* An upper bound of the newest version of tree r's rows: its last
 * commit, TS_ROOT_LAST_BATCH for the batch in progress, or for a tree
 * that took no rows since the trees were recovered, the log's head then
 * (flush.c finds the exact one in the log when it needs it).  Two trees
 * whose versions may overlap -- one began before the other's bound --
 * must not come to hold rows of meeting timespans (invariant V,
 * docs/corrections.md section 1). */
uint64_t ts__filling_hi_bound(const ts__filling *f, const ts__root *r);

/* Write the commit record and publish it; the trees the batch added rows
 * to get its LSN as their last.  Returns 0 or a log error (the
 * batch is then aborted). */
int ts__filling_commit(ts__filling *f, uint64_t rows, int64_t now);

/* Forget the batch in progress. */
void ts__filling_abort(ts__filling *f);

/* Append a tombstone record of tomb (its bounds, its ts interval) to the
 * batch in progress and name it in the tombstone root.  Returns 0 or a
 * log error. */
int ts__filling_tombstone(ts__filling *f, const ts__tomb *tomb);

/* After the commit of a delete (head): its tombstone, the chain's newest
 * record, joins f->lt (ts__filling_tombstone made room for it).  Returns
 * 0, or TS_ECORRUPT when the record just written does not read back. */
int ts__filling_note_tomb(ts__filling *f, uint64_t head);

/* The tombstones at or before the chain record cut are in the DESCRIPTOR
 * now: the next commit's root no longer names them, and they leave the
 * writer's list. */
void ts__filling_cut_tombs(ts__filling *f, uint64_t cut);

/* Forget the tree named born (on disk now) in both the working and the
 * committed roots; the next commit no longer names it.  Returns whether
 * it was there. */
int ts__filling_drop(ts__filling *f, uint64_t born);

#endif
