/*
 * tombstone.h -- deletes: the tombstone records, their two encodings (a
 * record in the log, a record in the DESCRIPTOR), the test of whether
 * one hides a row, and the lists of them a snapshot, a flush or a merge
 * keeps (docs/corrections.md section 3).
 *
 * A tombstone is {version, a range of encoded keys with the strictness
 * of each bound, an inclusive ts interval}: every row inside the box is
 * deleted for the sources it applies to -- a tree's row when the row's
 * LSN is below the version, an on-disk tablet wholesale when its hi is
 * below it.  The version is the LSN of the commit record of the delete's
 * batch (ts_insert_versioned's semantics).
 *
 * Where tombstones live.  ts_delete commits one through the log like an
 * insert batch: the batch holds one tombstone record, and the commit
 * names, after the trees, one more root entry flagged TS_ROOT_TOMBSTONES
 * whose `root` is the newest tombstone record of the log and whose
 * `since` is the newest one already carried by the DESCRIPTOR (records at
 * or before it are not read).  Each record names the previous one, so
 * every snapshot -- a read-only handle in another process too -- finds
 * the tombstones in force by walking that chain, lock-free, and recovery
 * has them for free.  A flush moves the chain into the DESCRIPTOR
 * (format 5's tombstone list) in the same step that advances the flushed
 * position past them.  The DESCRIPTOR is written as format 5 as soon as
 * the log may hold tombstones (TS_DESC_TOMBSTONES_LOGGED), so builds
 * that do not know them refuse the table (TS_EVERSION) instead of taking
 * the chain's root entry for a tree.
 *
 * Everything here is a pure function of its arguments but the readers of
 * the log (ts__tomb_log_read), which the callers run under a pin of the
 * log (snapshots) or the writer's lock.
 */
#ifndef TS_TOMBSTONE_H
#define TS_TOMBSTONE_H

#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "key.h"
#include "log.h"

/* flags: which key bounds there are, and whether each is strict. */
#define TS_TOMB_LO 1u         /* key >= lo (> lo when TS_TOMB_LO_STRICT) */
#define TS_TOMB_LO_STRICT 2u
#define TS_TOMB_HI 4u         /* key <= hi (< hi when TS_TOMB_HI_STRICT) */
#define TS_TOMB_HI_STRICT 8u
#define TS_TOMB_FLAGS_ALL 15u

typedef struct ts__tomb {
	uint64_t version;        /* the LSN of the delete's commit record */
	int64_t tmin, tmax;      /* ts in [tmin, tmax] */
	uint32_t flags;          /* TS_TOMB_* */
	uint32_t lolen, hilen;
	const unsigned char *lo, *hi; /* encoded key bounds (when flagged) */
	uint64_t lsn;            /* its record in the log; 0 = the DESCRIPTOR's */
	unsigned char *mem;      /* owned copy of lo and hi, or NULL (borrowed) */
} ts__tomb;

/* Whether t hides a row whose key is key[0..klen) (the ts its last 8
 * bytes) -- the box only; the caller decides by version whether t
 * applies to the row's source. */
int ts__tomb_covers(const ts__tomb *t, const void *key, size_t klen);

/* Whether t's box may meet the rows whose keys lie in [first, last]
 * (either may be NULL: unbounded) and whose ts lie in [min_ts, max_ts]. */
int ts__tomb_meets(const ts__tomb *t, const void *first, size_t flen, const void *last,
                   size_t llen, int64_t min_ts, int64_t max_ts);

/* Whether key[0..klen) lies past t's keys in a stream's direction:
 * above its upper bound (ascending, desc 0) or below its lower bound
 * (descending); then no later key of the stream can be in t's box. */
int ts__tomb_passed(const ts__tomb *t, const void *key, size_t klen, int desc);

/* Copy src into dst, owning its bounds.  Returns 0 or TS_ENOMEM. */
int ts__tomb_copy(ts__tomb *dst, const ts__tomb *src);
/* Free what dst owns. */
void ts__tomb_free(ts__tomb *t);
/* Free n tombstones and the array. */
void ts__tombs_free(ts__tomb *t, int n);

/* ---- the log record (docs/log-format.md section 3.5) ---- */

/* Bytes of t's log record (before the padding to 8). */
size_t ts__tomb_log_size(const ts__tomb *t);
/* Write t's record at p: prev is the previous tombstone record of the
 * chain (0: none), batch the LSN of the batch header of the delete. */
void ts__tomb_log_write(unsigned char *p, const ts__tomb *t, ts__lsn prev, ts__lsn batch);

/*
 * Read the tombstone record at lsn, which must lie in [floor, commit)
 * (floor: the DESCRIPTOR's flushed position; commit: the commit that
 * names the chain) and be well-formed; its version is read from the
 * header of the batch it names (the commit record that ends it).  The
 * bounds of *out point into the log (borrowed).  *prev receives the
 * previous record of the chain.  Returns 0 or TS_ECORRUPT naming lsn.
 */
int ts__tomb_log_read(ts__log *log, ts__lsn lsn, ts__lsn floor, ts__lsn commit, ts__tomb *out,
                      ts__lsn *prev);

/*
 * The tombstones of the chain named by a commit's tombstone root (root:
 * its newest record; since: records at or before it are the DESCRIPTOR's
 * and not read; floor and commit as above), newest first, appended to
 * (*v)[*n..) (grown with realloc, *cap its room) as borrowed records.
 * Returns 0, TS_ECORRUPT or TS_ENOMEM.
 */
int ts__tomb_chain(ts__log *log, ts__lsn root, ts__lsn since, ts__lsn floor, ts__lsn commit,
                   ts__tomb **v, int *n, int *cap);

/* ---- the DESCRIPTOR record (docs/descriptor-format.md section 6.1) ---- */

void ts__tomb_encode(ts_buf *b, const ts__tomb *t);
/* Decode one record from r into *out (owning its bounds).  Returns 0,
 * TS_ECORRUPT (message names the record i) or TS_ENOMEM. */
int ts__tomb_decode(ts_reader *r, int i, ts__tomb *out);

/* ---- lists ---- */

/* Whether v[0..n) holds a tombstone of version version. */
int ts__tombs_have(const ts__tomb *v, int n, uint64_t version);

/* The tombstones of v[0..n) that may hide rows of a source: those with
 * version > vmin (a tablet: its hi; a tree: its born, then decided per
 * row by LSN) whose box meets the keys
 * [first, last] and ts [min_ts, max_ts], as pointers into out[0..) (room
 * for n).  Returns how many. */
int ts__tombs_select(const ts__tomb *v, int n, uint64_t vmin, const void *first, size_t flen,
                     const void *last, size_t llen, int64_t min_ts, int64_t max_ts,
                     const ts__tomb **out);

/*
 * An index of a list of tombstones by key, so that a read of a few keys
 * looks at the tombstones around them only (docs/corrections.md section
 * 3, "Readers").  Built once per tablet set (the DESCRIPTOR's
 * tombstones, with the log's: a view, below); it borrows them.
 *
 * Keys are compared first by their heads (ts__key_head: the first 16 bytes
 * as two words), which order them as the keys do wherever they differ.
 * A tombstone whose lower and upper bounds have the same first 8 bytes
 * (its bucket: bytes every key of its box begins with) is
 * *narrow* -- the usual delete, of one series' or one host's rows;
 * the others (no bound, or bounds in two buckets) are *wide*.  A read
 * whose keys [first, last] are all in one bucket (a read of one series)
 * can meet only the narrow ones of its bucket and the wide ones: a set
 * of bits by bucket (hashed) says at once that no narrow one is of its
 * bucket, so that a read of a series no delete touched looks only at
 * the wide ones, usually none (a binary search over every tombstone, at
 * every stream a read opens, was 7 % of a latest lookup at 240 of them).
 *
 * Each part is sorted: by_lo holds its tombstones ordered by lower bound
 * (none first), reach[i] is, of by_lo[0..i] with an upper bound, the one
 * whose upper bound is the greatest (NULL: none has one).  The
 * tombstones meeting keys [first, last] lie among by_lo[0..p), p those
 * whose lower bound's head is not above last's (a binary search over
 * lo_head), and walking down from p - 1 can stop where reach (its head,
 * reach_head) says no upper bound left reaches first; those with no
 * upper bound (nohi) are tested on their own.
 */
/* One part of an index (above). */
typedef struct ts__tomb_sorted {
	int n;
	int nolo;                /* by_lo[0..nolo) have no lower bound */
	int *nohi, nnohi;        /* the indexes in by_lo of those with no upper
	                          * bound, ascending */
	const ts__tomb **by_lo;
	const ts__tomb **reach;
	ts__key_head *lo_head, *reach_head;
} ts__tomb_sorted;

/* Bits of the narrow tombstones' buckets (hashed). */
#define TS_TOMB_BUCKET_BITS 4096

typedef struct ts__tomb_index {
	ts__tomb_sorted narrow, wide;
	uint64_t buckets[TS_TOMB_BUCKET_BITS / 64];
} ts__tomb_index;

/* Index v[0..n) into x (which borrows v).  Returns 0 or TS_ENOMEM. */
int ts__tomb_index_build(ts__tomb_index *x, const ts__tomb *v, int n);
void ts__tomb_index_free(ts__tomb_index *x);

/* ts__tombs_select over an index: the tombstones of x that
 * ts__tombs_select would select of the list, in another order, written
 * to out[0..room) -- returns how many there are, which may exceed room
 * (then out holds the first room of them). */
int ts__tombs_select_index(const ts__tomb_index *x, uint64_t vmin, const void *first, size_t flen,
                           const void *last, size_t llen, int64_t min_ts, int64_t max_ts,
                           const ts__tomb **out, int room);

/*
 * The tombstones in force as a snapshot sees them, with their index:
 * the log's chain from `root` (cut at `since`), newest first, then the
 * tablet set's (the DESCRIPTOR's) not already among them -- owned
 * copies.  They depend only on the chain's root and cut and on the set
 * (whose flushed position is the chain's floor), so the set caches one
 * (snapshot.c): snapshots of the same chain and descriptor share it, and
 * taking a snapshot walks no chain and copies no tombstone.  Reference
 * counted (atomic); immutable once built.
 */
typedef struct ts__tomb_view {
	int refs;
	ts__lsn root, since;     /* the chain's; root 0: the commit names none */
	int ntombs;
	ts__tomb *tombs;
	ts__tomb_index index;
} ts__tomb_view;

/* Build the view of the chain (root, since, floor, commit: as
 * ts__tomb_chain; root 0: none) and the set's tombstones set[0..nset),
 * one reference held by the caller.  Returns 0, TS_ECORRUPT or
 * TS_ENOMEM. */
int ts__tomb_view_build(ts__log *log, ts__lsn root, ts__lsn since, ts__lsn floor, ts__lsn commit,
                        const ts__tomb *set, int nset, ts__tomb_view **out);
/* Drop a reference (NULL: none); the last frees the view. */
void ts__tomb_view_put(ts__tomb_view *v);

/* Whether one of sel[0..n) hides the row key[0..klen) of LSN row_lsn
 * (0: a tablet's row, whose tablet the selection was made for). */
static inline int ts__tombs_hide(const ts__tomb *const *sel, int n, const void *key, size_t klen,
                                 uint64_t row_lsn)
{
	for (int i = 0; i < n; i++)
		if ((!row_lsn || row_lsn < sel[i]->version) && ts__tomb_covers(sel[i], key, klen))
			return 1;
	return 0;
}

#endif
