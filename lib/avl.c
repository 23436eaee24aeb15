/*
 * avl.c -- insert, find, iterate and check versioned AVL trees in the
 * log.  See avl.h for the copying rule.
 *
 * Insertion is recursive (the height is bounded by 1.44 log2 n, well
 * under TS_AVL_MAX_HEIGHT); on the way back up each path node is made
 * writable (copied if published), gets its new child, and is rebalanced.
 * AVL insertion rotates only nodes on the insertion path, all of which
 * are writable by then, so no off-path node is ever modified.
 */
#include <assert.h>
#include <string.h>

#include "avl.h"
#include "error.h"
#include "key.h"

#define HEIGHT_MASK UINT64_C(0xff)

void ts__rowrec_key(ts__log *log, uint64_t lsn, const unsigned char **key, size_t *klen)
{
	size_t len;
	uint32_t version;
	const unsigned char *row = ts__rowrec_row(log, lsn, &len, &version);
	ts_reader r;
	const void *k;
	ts__reader_init(&r, row, len);
	ts__get_bytes(&r, &k, klen);
	*key = k;
}

static int height(ts__log *log, uint64_t n)
{
	return n ? (int)(ts__node_at(log, n)->row_h & HEIGHT_MASK) : 0;
}

static void set_height(ts__node *n, int h)
{
	n->row_h = (n->row_h & ~HEIGHT_MASK) | (uint64_t)h;
}

/* Compare key with node n's key. */
static int cmp_node(ts__log *log, const unsigned char *key, size_t klen, uint64_t kpfx,
                    const ts__node *n)
{
	if (kpfx != n->kpfx)
		return kpfx < n->kpfx ? -1 : 1;
	const unsigned char *nk;
	size_t nklen;
	ts__rowrec_key(log, ts__node_row(n), &nk, &nklen);
	return ts__key_cmp(key + 8, klen - 8, nk + 8, nklen - 8);
}

/* Node *n made writable: copied to the tail unless created by this batch. */
static ts__node *writable(ts__avl_ins *ins, uint64_t *n)
{
	if (*n >= ins->batch)
		return ts__node_at(ins->log, *n);
	uint64_t lsn;
	void *p;
	int rc = ts__log_alloc(ins->log, sizeof(ts__node), &lsn, &p);
	if (rc < 0) {
		ins->err = rc;
		return NULL;
	}
	memcpy(p, ts__node_at(ins->log, *n), sizeof(ts__node));
	ins->copied++;
	*n = lsn;
	return p;
}

static void update_height(ts__log *log, ts__node *n)
{
	int hl = height(log, n->left), hr = height(log, n->right);
	set_height(n, 1 + (hl > hr ? hl : hr));
}

/* Rotations on writable nodes; return the new subtree root. */
static uint64_t rotate_right(ts__log *log, uint64_t n)
{
	ts__node *N = ts__node_at(log, n);
	uint64_t l = N->left;
	ts__node *L = ts__node_at(log, l);
	N->left = L->right;
	L->right = n;
	update_height(log, N);
	update_height(log, L);
	return l;
}

static uint64_t rotate_left(ts__log *log, uint64_t n)
{
	ts__node *N = ts__node_at(log, n);
	uint64_t r = N->right;
	ts__node *R = ts__node_at(log, r);
	N->right = R->left;
	R->left = n;
	update_height(log, N);
	update_height(log, R);
	return r;
}

/* Restore balance at writable node n whose child on the insertion path
 * changed; every node rotated here is on that path. */
static uint64_t rebalance(ts__avl_ins *ins, uint64_t n)
{
	ts__log *log = ins->log;
	ts__node *N = ts__node_at(log, n);
	int hl = height(log, N->left), hr = height(log, N->right);
	if (hl > hr + 1) {
		ts__node *L = ts__node_at(log, N->left);
		assert(N->left >= ins->batch);
		if (height(log, L->left) < height(log, L->right))
			N->left = rotate_left(log, N->left);
		return rotate_right(log, n);
	}
	if (hr > hl + 1) {
		ts__node *R = ts__node_at(log, N->right);
		assert(N->right >= ins->batch);
		if (height(log, R->right) < height(log, R->left))
			N->right = rotate_right(log, N->right);
		return rotate_left(log, n);
	}
	set_height(N, 1 + (hl > hr ? hl : hr));
	return n;
}

static uint64_t new_leaf(ts__avl_ins *ins, uint64_t kpfx)
{
	uint64_t lsn;
	void *p;
	int rc = ts__log_alloc(ins->log, sizeof(ts__node), &lsn, &p);
	if (rc < 0) {
		ins->err = rc;
		return 0;
	}
	ts__node *n = p;
	n->kpfx = kpfx;
	n->left = n->right = 0;
	n->row_h = ins->row << 8 | 1;
	ins->copied++;
	return lsn;
}

/* Insert below n; returns the new subtree root (n itself on failure). */
static uint64_t insert(ts__avl_ins *ins, uint64_t n, uint64_t kpfx)
{
	if (!n)
		return new_leaf(ins, kpfx);
	ts__node *N = ts__node_at(ins->log, n);
	int c = cmp_node(ins->log, ins->key, ins->klen, kpfx, N);
	if (c == 0) {
		ins->found = ts__node_row(N);
		return n;
	}
	uint64_t child = insert(ins, c < 0 ? N->left : N->right, kpfx);
	if (ins->found || ins->err || !(N = writable(ins, &n)))
		return n;
	if (c < 0)
		N->left = child;
	else
		N->right = child;
	return rebalance(ins, n);
}

int ts__avl_insert(ts__avl_ins *ins, uint64_t *root)
{
	assert(ins->klen >= 8);
	ins->found = 0;
	ins->err = 0;
	uint64_t r = insert(ins, *root, ts__kpfx(ins->key));
	if (ins->err)
		return ins->err;
	if (ins->found)
		return TS_EDUPKEY;
	*root = r;
	return 0;
}

int ts__avl_find(ts__log *log, uint64_t root, const unsigned char *key,
                 size_t klen, uint64_t *row)
{
	uint64_t kpfx = ts__kpfx(key);
	while (root) {
		const ts__node *N = ts__node_at(log, root);
		int c = cmp_node(log, key, klen, kpfx, N);
		if (c == 0) {
			*row = ts__node_row(N);
			return 1;
		}
		root = c < 0 ? N->left : N->right;
	}
	return 0;
}

/* ---- iteration ---- */

static void push_spine(ts__avl_iter *it, uint64_t n)
{
	while (n && it->depth < TS_AVL_MAX_HEIGHT) {
		it->stack[it->depth++] = n;
		const ts__node *N = ts__node_at(it->log, n);
		n = it->desc ? N->right : N->left;
	}
}

void ts__avl_iter_init(ts__avl_iter *it, ts__log *log, uint64_t root, int desc)
{
	it->log = log;
	it->desc = desc;
	it->depth = 0;
	push_spine(it, root);
}

uint64_t ts__avl_iter_next(ts__avl_iter *it)
{
	if (it->depth == 0)
		return 0;
	uint64_t n = it->stack[--it->depth];
	const ts__node *N = ts__node_at(it->log, n);
	push_spine(it, it->desc ? N->left : N->right);
	return ts__node_row(N);
}

/* Compare a seek key with node n's full key. */
static int cmp_seek(ts__log *log, const unsigned char *key, size_t klen, uint64_t n)
{
	const unsigned char *nk;
	size_t nklen;
	ts__rowrec_key(log, ts__node_row(ts__node_at(log, n)), &nk, &nklen);
	return ts__key_cmp(key, klen, nk, nklen);
}

void ts__avl_iter_seek(ts__avl_iter *it, ts__log *log, uint64_t root, int desc,
                       const unsigned char *key, size_t klen, int exclusive)
{
	it->log = log;
	it->desc = desc;
	it->depth = 0;
	/* Keep on the stack exactly the nodes still to visit: those at or
	 * after the seek position, as an in-order walk would hold them. */
	while (root && it->depth < TS_AVL_MAX_HEIGHT) {
		const ts__node *N = ts__node_at(log, root);
		int c = cmp_seek(log, key, klen, root);
		int keep = desc ? (exclusive ? c > 0 : c >= 0) : (exclusive ? c < 0 : c <= 0);
		if (keep) {
			it->stack[it->depth++] = root;
			root = desc ? N->right : N->left;
		} else {
			root = desc ? N->left : N->right;
		}
	}
}

/* ---- checking ---- */

static long check(ts__log *log, uint64_t n, const unsigned char **lo, size_t *lolen, int *h)
{
	if (!n) {
		*h = 0;
		return 0;
	}
	const ts__node *N = ts__node_at(log, n);
	const unsigned char *key;
	size_t klen;
	int hl, hr;
	if (!N)
		return ts__fail(TS_ECORRUPT, "tree node at %llu is outside the log",
		                (unsigned long long)n), -1;
	long cl = check(log, N->left, lo, lolen, &hl);
	if (cl < 0)
		return -1;
	ts__rowrec_key(log, ts__node_row(N), &key, &klen);
	if (klen < 8 || ts__kpfx(key) != N->kpfx || (*lo && ts__key_cmp(*lo, *lolen, key, klen) >= 0))
		return ts__fail(TS_ECORRUPT, "tree node at %llu is out of order",
		                (unsigned long long)n), -1;
	*lo = key;
	*lolen = klen;
	long cr = check(log, N->right, lo, lolen, &hr);
	if (cr < 0)
		return -1;
	*h = 1 + (hl > hr ? hl : hr);
	if ((N->row_h & HEIGHT_MASK) != (uint64_t)*h || hl - hr > 1 || hr - hl > 1)
		return ts__fail(TS_ECORRUPT, "tree node at %llu is unbalanced",
		                (unsigned long long)n), -1;
	return cl + cr + 1;
}

long ts__avl_check(ts__log *log, uint64_t root)
{
	const unsigned char *lo = NULL;
	size_t lolen = 0;
	int h;
	return check(log, root, &lo, &lolen, &h);
}
