/*
 * avl.h -- versioned AVL trees whose nodes live in the log (Rusher, VLDB
 * 2007; DESIGN.md section 3, "Versioned AVL trees").
 *
 * A tree is named by the LSN of its root node.  Published nodes never
 * change: an insert copies the path from the root to the new leaf (and
 * only that path: AVL rebalancing after an insert touches path nodes
 * only), so every older root still names the tree it named.  Nodes
 * created by the batch in progress -- LSN >= the batch's start -- are not
 * visible to anyone yet and are updated in place, so a batch copies each
 * touched node at most once.
 *
 * A node is 48 bytes: the first 16 and the last 8 key bytes (the last
 * are the ts) as big-endian integers, so that most comparisons never touch
 * the row; the two children; and the row's LSN with, in its low byte, the
 * key's length when short and the AVL balance (which side is taller, if
 * either).  Balances rather than heights let an insert rebalance from the
 * path alone, never reading a sibling.
 */
#ifndef TS_AVL_H
#define TS_AVL_H

#include "buf.h"
#include "log.h"

typedef struct ts__node {
	uint64_t kpfx;  /* key bytes 0..8, big-endian */
	uint64_t kpfx2; /* key bytes 8..16, zero-padded, big-endian */
	uint64_t kts;   /* the last 8 key bytes (the encoded ts), big-endian */
	uint64_t left, right;
	uint64_t row_b; /* row LSN << 8 | short length << 2 | balance */
} ts__node;

_Static_assert(sizeof(ts__node) == TS_NODE_SIZE, "node layout");

/* Keys up to this long are compared within the nodes alone. */
#define TS_NODE_SHORT 24

static inline ts__node *ts__node_at(ts__log *log, uint64_t lsn)
{
	return (ts__node *)ts__log_ptr(log, lsn);
}
static inline uint64_t ts__node_row(const ts__node *n) { return n->row_b >> 8; }

/* The first 8 bytes of a key (at least 8 long) as a big-endian integer. */
static inline uint64_t ts__kpfx(const unsigned char *key)
{
	return ts__load_be64(key);
}

/* A row record: TS_ROWREC_HEADER bytes (u32 row length, u16 schema
 * version, u16 flags) then the row (row.h). */
static inline const unsigned char *ts__rowrec_row(ts__log *log, uint64_t lsn,
                                                  size_t *len, uint32_t *version)
{
	const unsigned char *p = ts__log_ptr(log, lsn);
	*len = ts__load_u32(p);
	*version = (uint32_t)p[4] | (uint32_t)p[5] << 8;
	return p + TS_ROWREC_HEADER;
}

/* The key of the row at row LSN lsn. */
void ts__rowrec_key(ts__log *log, uint64_t lsn, const unsigned char **key, size_t *klen);

/* One insert. */
typedef struct ts__avl_ins {
	ts__log *log;
	uint64_t batch;            /* nodes at or after this LSN are mutable */
	const unsigned char *key;  /* the new row's key */
	size_t klen;
	uint64_t row;              /* LSN of its row record */
	int replace;               /* an equal key's node takes row instead
	                            * (the policy replace) */
	uint64_t found;            /* out: row LSN of an equal key, else 0
	                            * (with replace, the row replaced) */
	uint64_t copied;           /* out: nodes written (copies + the leaf) */
	int err;                   /* out: a log allocation error */
} ts__avl_ins;

/*
 * Insert into the tree at root; *root receives the new root.  Returns 0,
 * TS_EDUPKEY (an equal key exists; ins->found names its row; the tree is
 * unchanged as seen from *root, though nodes of this batch may have been
 * written) or a log allocation error.  With ins->replace, an equal key is
 * no error: its node is made writable like any path node (copied when
 * published, so older roots keep the old row) and names ins->row; 0 is
 * returned with ins->found naming the row replaced.
 */
int ts__avl_insert(ts__avl_ins *ins, uint64_t *root);

/* Find key; *row receives the row LSN.  Returns 1 if found, else 0. */
int ts__avl_find(ts__log *log, uint64_t root, const unsigned char *key,
                 size_t klen, uint64_t *row);

/* In-order iteration over one tree version. */
#define TS_AVL_MAX_HEIGHT 64
typedef struct ts__avl_iter {
	ts__log *log;
	int desc;
	int depth;
	uint64_t stack[TS_AVL_MAX_HEIGHT];
} ts__avl_iter;

/* Position before the first row (last when desc). */
void ts__avl_iter_init(ts__avl_iter *it, ts__log *log, uint64_t root, int desc);

/* Position at the first key >= key (desc: the last key <= key); with
 * exclusive, strictly after (before) it.  Keys compare as ts__key_cmp,
 * so a prefix sorts before every key it starts. */
void ts__avl_iter_seek(ts__avl_iter *it, ts__log *log, uint64_t root, int desc,
                       const unsigned char *key, size_t klen, int exclusive);

/* The next row's LSN, or 0 at the end. */
uint64_t ts__avl_iter_next(ts__avl_iter *it);

/* Check the AVL and order invariants of a tree (tests, `check`):
 * returns the node count, or -1 (with a message) if broken.  Nodes and
 * row records must lie in mapped segments, each inside one, and the tree
 * no deeper than TS_AVL_MAX_HEIGHT, so a damaged log fails the check
 * instead of crashing it. */
long ts__avl_check(ts__log *log, uint64_t root);

/* ts__avl_check with every node and row record also required to lie in
 * the LSNs [lo, hi): for a tree begun at lo whose commit is at hi. */
long ts__avl_verify(ts__log *log, uint64_t root, uint64_t lo, uint64_t hi);

/* Verify root r of the commit at commit_lsn, in a table whose log was
 * flushed through flushed_lsn: the tree begins at a batch between the
 * two (a since inside a batch would become, at the next flush, a flushed
 * position no recovery can start from), and ts__avl_verify holds over
 * [since, commit_lsn).  Shared by the table's open and by ts_check.
 * Returns the node count, or TS_ECORRUPT with a message naming the tree. */
long ts__avl_verify_root(ts__log *log, const ts__root *r, uint64_t flushed_lsn,
                         uint64_t commit_lsn);

#endif
