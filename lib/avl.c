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
#include <inttypes.h>
#include <string.h>

#include "avl.h"
#include "error.h"
#include "key.h"

#define BAL_MASK UINT64_C(0x3)
#define LEN_SHIFT 2
enum { EVEN = 0, LEFT_TALL = 1, RIGHT_TALL = 2 };

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

static int bal(const ts__node *n) { return (int)(n->row_b & BAL_MASK); }
static unsigned node_short_len(const ts__node *n) { return (unsigned)(n->row_b & 0xff) >> LEN_SHIFT; }

static void set_bal(ts__node *n, int b)
{
	n->row_b = (n->row_b & ~BAL_MASK) | (uint64_t)b;
}

/*
 * The descent.  A node holds its key's first 16 bytes (zero-padded), its
 * last 8 (the ts) and, when the key is at most TS_NODE_SHORT bytes, its
 * length; two such keys of equal length compare completely within the
 * nodes.  Longer keys compare their first 16 bytes in the node, and ties
 * read the row -- except that the nearest ancestors bounding the search
 * on each side are tracked: once both share the probe's key up to its ts
 * (its "stem", self-delimiting), every node between them does too (keys
 * are sorted and the stem is a prefix), and the ts decides.  Every
 * shortcut decides exactly what a full comparison of the keys would.
 */
enum { SAME_LO = 1, SAME_HI = 2 };

struct probe {
	const unsigned char *key;
	size_t klen;
	unsigned short_len; /* klen when <= TS_NODE_SHORT, else 0 */
	uint64_t kpfx, kpfx2, kts;
};

static int cmp_u64(uint64_t a, uint64_t b) { return a < b ? -1 : a > b; }

/* Compare the probe with node N; *same says whether N shares its stem. */
static int cmp_node(ts__log *log, const struct probe *p, const ts__node *N, unsigned bounds,
                    int *same)
{
	*same = 0;
	if (p->kpfx != N->kpfx)
		return cmp_u64(p->kpfx, N->kpfx);
	if (p->short_len && p->short_len == node_short_len(N)) {
		if (p->kpfx2 != N->kpfx2)
			return cmp_u64(p->kpfx2, N->kpfx2);
		*same = 1; /* 16 bytes cover the stem */
		return cmp_u64(p->kts, N->kts);
	}
	if (bounds == (SAME_LO | SAME_HI)) {
		*same = 1;
		return cmp_u64(p->kts, N->kts);
	}
	/* Bytes 8..16, zero-padded, order any two keys as their bytes do
	 * (a shorter key pads with zeros, and sorts first).  Past the test
	 * above, keys of equal length are longer than TS_NODE_SHORT, whose
	 * stems hold those bytes: when they differ, so do the stems. */
	if (p->kpfx2 != N->kpfx2)
		return cmp_u64(p->kpfx2, N->kpfx2);
	const unsigned char *nk;
	size_t nklen;
	ts__rowrec_key(log, ts__node_row(N), &nk, &nklen);
	/* One pass finds where the keys first differ, past the 8 bytes kpfx
	 * covered: that decides the order as ts__key_cmp would, and whether
	 * N shares the stem (all but the last 8 bytes). */
	const unsigned char *x = p->key, *y = nk;
	size_t n = p->klen < nklen ? p->klen : nklen, i = 8;
	while (i + 8 <= n && ts__load_be64(x + i) == ts__load_be64(y + i))
		i += 8;
	while (i < n && x[i] == y[i])
		i++;
	*same = nklen == p->klen && i >= p->klen - 8;
	if (i < n)
		return x[i] < y[i] ? -1 : 1;
	return (p->klen > nklen) - (p->klen < nklen);
}

/* The bounds below N after comparing c with it. */
static unsigned narrow(unsigned bounds, int c, int same)
{
	if (c < 0)
		return (bounds & SAME_LO) | (same ? SAME_HI : 0);
	return (bounds & SAME_HI) | (same ? SAME_LO : 0);
}

static void probe_init(struct probe *p, const unsigned char *key, size_t klen)
{
	unsigned char second[8] = {0};
	if (klen > 8)
		memcpy(second, key + 8, klen - 8 < 8 ? klen - 8 : 8);
	p->key = key;
	p->klen = klen;
	p->short_len = klen <= TS_NODE_SHORT ? (unsigned)klen : 0;
	p->kpfx = ts__kpfx(key);
	p->kpfx2 = ts__load_be64(second);
	p->kts = ts__load_be64(key + klen - 8);
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

/*
 * Writable node N at *n whose left subtree just grew one taller:
 * rebalance; returns whether the subtree at *n grew.  A node rotated
 * here is on the insertion path (the side that grew), hence writable.
 */
static int grew_left(ts__avl_ins *ins, uint64_t *n, ts__node *N)
{
	if (bal(N) != LEFT_TALL) {
		int grew = bal(N) == EVEN;
		set_bal(N, grew ? LEFT_TALL : EVEN);
		return grew;
	}
	uint64_t l = N->left;
	ts__node *L = ts__node_at(ins->log, l);
	assert(l >= ins->batch && bal(L) != EVEN);
	if (bal(L) == LEFT_TALL) { /* single right rotation */
		N->left = L->right;
		L->right = *n;
		set_bal(N, EVEN);
		set_bal(L, EVEN);
		*n = l;
		return 0;
	}
	uint64_t lr = L->right; /* double rotation: lr comes up */
	ts__node *LR = ts__node_at(ins->log, lr);
	assert(lr >= ins->batch);
	L->right = LR->left;
	N->left = LR->right;
	LR->left = l;
	LR->right = *n;
	set_bal(L, bal(LR) == RIGHT_TALL ? LEFT_TALL : EVEN);
	set_bal(N, bal(LR) == LEFT_TALL ? RIGHT_TALL : EVEN);
	set_bal(LR, EVEN);
	*n = lr;
	return 0;
}

/* The mirror image of grew_left. */
static int grew_right(ts__avl_ins *ins, uint64_t *n, ts__node *N)
{
	if (bal(N) != RIGHT_TALL) {
		int grew = bal(N) == EVEN;
		set_bal(N, grew ? RIGHT_TALL : EVEN);
		return grew;
	}
	uint64_t r = N->right;
	ts__node *R = ts__node_at(ins->log, r);
	assert(r >= ins->batch && bal(R) != EVEN);
	if (bal(R) == RIGHT_TALL) { /* single left rotation */
		N->right = R->left;
		R->left = *n;
		set_bal(N, EVEN);
		set_bal(R, EVEN);
		*n = r;
		return 0;
	}
	uint64_t rl = R->left; /* double rotation: rl comes up */
	ts__node *RL = ts__node_at(ins->log, rl);
	assert(rl >= ins->batch);
	R->left = RL->right;
	N->right = RL->left;
	RL->right = r;
	RL->left = *n;
	set_bal(R, bal(RL) == LEFT_TALL ? RIGHT_TALL : EVEN);
	set_bal(N, bal(RL) == RIGHT_TALL ? LEFT_TALL : EVEN);
	set_bal(RL, EVEN);
	*n = rl;
	return 0;
}

static uint64_t new_leaf(ts__avl_ins *ins, const struct probe *p)
{
	uint64_t lsn;
	void *mem;
	int rc = ts__log_alloc(ins->log, sizeof(ts__node), &lsn, &mem);
	if (rc < 0) {
		ins->err = rc;
		return 0;
	}
	ts__node *n = mem;
	n->kpfx = p->kpfx;
	n->kpfx2 = p->kpfx2;
	n->kts = p->kts;
	n->left = n->right = 0;
	n->row_b = ins->row << 8 | p->short_len << LEN_SHIFT | EVEN;
	ins->copied++;
	return lsn;
}

/* Insert below *n, which then names the new subtree root; returns whether
 * that subtree grew taller. */
static int insert(ts__avl_ins *ins, const struct probe *p, uint64_t *n, unsigned bounds)
{
	if (!*n) {
		*n = new_leaf(ins, p);
		return *n != 0;
	}
	const ts__node *N = ts__node_at(ins->log, *n);
	int same, c = cmp_node(ins->log, p, N, bounds, &same);
	if (c == 0) {
		ins->found = ts__node_row(N);
		if (ins->replace) { /* same key, same place: only the row changes */
			ts__node *W = writable(ins, n);
			if (W)
				W->row_b = ins->row << 8 | (W->row_b & 0xff);
		}
		return 0;
	}
	uint64_t child = c < 0 ? N->left : N->right, old = child;
	int grew = insert(ins, p, &child, narrow(bounds, c, same));
	if ((ins->found && !ins->replace) || ins->err || (child == old && !grew))
		return 0; /* failed, or changed in place below: nothing to do here */
	ts__node *W = writable(ins, n);
	if (!W)
		return 0;
	if (c < 0) {
		W->left = child;
		return grew ? grew_left(ins, n, W) : 0;
	}
	W->right = child;
	return grew ? grew_right(ins, n, W) : 0;
}

int ts__avl_insert(ts__avl_ins *ins, uint64_t *root)
{
	struct probe p;
	assert(ins->klen >= 8);
	probe_init(&p, ins->key, ins->klen);
	ins->found = 0;
	ins->err = 0;
	uint64_t r = *root;
	insert(ins, &p, &r, 0);
	if (ins->err)
		return ins->err;
	if (ins->found && !ins->replace)
		return TS_EDUPKEY;
	*root = r;
	return 0;
}

int ts__avl_find(ts__log *log, uint64_t root, const unsigned char *key,
                 size_t klen, uint64_t *row)
{
	struct probe p;
	unsigned bounds = 0;
	probe_init(&p, key, klen);
	while (root) {
		const ts__node *N = ts__node_at(log, root);
		int same, c = cmp_node(log, &p, N, bounds, &same);
		if (c == 0) {
			*row = ts__node_row(N);
			return 1;
		}
		bounds = narrow(bounds, c, same);
		root = c < 0 ? N->left : N->right;
	}
	return 0;
}

/* ---- iteration ---- */

/*
 * A tree's nodes and rows lie in the log in insertion order, so an
 * in-order walk touches a new cache line (often a new page) at every
 * step, and most of its time is the wait for memory.  The walk therefore
 * asks for what it will need before it needs it: each node's other
 * child as the node is pushed, and once a step is taken the row records
 * of the next two nodes to be returned and the first node below the next
 * one's other child.
 */
static void prefetch_node(ts__log *log, uint64_t n)
{
	if (n)
		__builtin_prefetch(ts__node_at(log, n));
}

static void push_spine(ts__avl_iter *it, uint64_t n)
{
	while (n && it->depth < TS_AVL_MAX_HEIGHT) {
		it->stack[it->depth++] = n;
		const ts__node *N = ts__node_at(it->log, n);
		prefetch_node(it->log, it->desc ? N->left : N->right);
		n = it->desc ? N->right : N->left;
	}
}

static void prefetch_ahead(const ts__avl_iter *it)
{
	for (int i = it->depth - 1; i >= 0 && i >= it->depth - 2; i--)
		__builtin_prefetch(ts__log_ptr(it->log, ts__node_row(ts__node_at(it->log, it->stack[i]))));
	if (it->depth == 0)
		return;
	/* the next node's other child was asked for when it was pushed; the
	 * first step down from that child, for the step after the next */
	const ts__node *T = ts__node_at(it->log, it->stack[it->depth - 1]);
	uint64_t c = it->desc ? T->left : T->right;
	if (c) {
		const ts__node *C = ts__node_at(it->log, c);
		prefetch_node(it->log, it->desc ? C->right : C->left);
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
	prefetch_ahead(it);
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

/* The bounds a checked tree must keep to: every record in [lo, hi). */
struct span {
	uint64_t lo, hi;
	uint64_t seg_data; /* the log's segment size */
};

/* Whether a record of n bytes at lsn lies inside the span and inside one
 * segment, 8-aligned -- what a tree read from a damaged log may not do. */
static int in_span(const struct span *sp, uint64_t lsn, uint64_t n)
{
	return lsn % 8 == 0 && lsn >= sp->lo && lsn < sp->hi &&
	       (lsn & (sp->seg_data - 1)) + n <= sp->seg_data;
}

/* The key of the row record at lsn, checked to lie in the span before a
 * byte of it is read.  Returns 0 or -1. */
static int span_key(ts__log *log, const struct span *sp, uint64_t lsn,
                    const unsigned char **key, size_t *klen)
{
	const unsigned char *p;
	if (!in_span(sp, lsn, TS_ROWREC_HEADER) || !(p = ts__log_ptr(log, lsn)) ||
	    !in_span(sp, lsn, TS_ROWREC_HEADER + (uint64_t)ts__load_u32(p)))
		return -1;
	ts__rowrec_key(log, lsn, key, klen);
	return *key ? 0 : -1;
}

static long check(ts__log *log, const struct span *sp, uint64_t n, int depth,
                  const unsigned char **lo, size_t *lolen, int *h)
{
	if (!n) {
		*h = 0;
		return 0;
	}
	const ts__node *N = in_span(sp, n, TS_NODE_SIZE) ? ts__node_at(log, n) : NULL;
	const unsigned char *key;
	size_t klen;
	int hl, hr;
	if (!N)
		return ts__fail(TS_ECORRUPT, "tree node at %llu is outside the log",
		                (unsigned long long)n), -1;
	if (depth >= TS_AVL_MAX_HEIGHT)
		return ts__fail(TS_ECORRUPT, "tree node at %llu is deeper than a tree can grow",
		                (unsigned long long)n), -1;
	long cl = check(log, sp, N->left, depth + 1, lo, lolen, &hl);
	if (cl < 0)
		return -1;
	if (span_key(log, sp, ts__node_row(N), &key, &klen) < 0)
		return ts__fail(TS_ECORRUPT, "tree node at %llu names a row outside the log",
		                (unsigned long long)n), -1;
	struct probe p;
	if (klen >= 8)
		probe_init(&p, key, klen);
	if (klen < 8 || p.kpfx != N->kpfx || p.kpfx2 != N->kpfx2 || p.kts != N->kts ||
	    p.short_len != node_short_len(N) || (*lo && ts__key_cmp(*lo, *lolen, key, klen) >= 0))
		return ts__fail(TS_ECORRUPT, "tree node at %llu is out of order",
		                (unsigned long long)n), -1;
	*lo = key;
	*lolen = klen;
	long cr = check(log, sp, N->right, depth + 1, lo, lolen, &hr);
	if (cr < 0)
		return -1;
	*h = 1 + (hl > hr ? hl : hr);
	int want = hl == hr ? EVEN : hl == hr + 1 ? LEFT_TALL : hr == hl + 1 ? RIGHT_TALL : -1;
	if (bal(N) != want)
		return ts__fail(TS_ECORRUPT, "tree node at %llu is unbalanced",
		                (unsigned long long)n), -1;
	return cl + cr + 1;
}

long ts__avl_verify(ts__log *log, uint64_t root, uint64_t lo, uint64_t hi)
{
	const unsigned char *first = NULL;
	size_t firstlen = 0;
	struct span sp = {lo, hi, ts__log_seg_size(log)};
	int h;
	return check(log, &sp, root, 0, &first, &firstlen, &h);
}

long ts__avl_verify_root(ts__log *log, const ts__root *r, uint64_t flushed_lsn,
                         uint64_t commit_lsn)
{
	if (r->since < flushed_lsn || r->since >= commit_lsn)
		return ts__fail(TS_ECORRUPT, "filling tablet born at %" PRIu64 " begins at %" PRIu64
		                ", outside the log from the flushed position %" PRIu64,
		                r->born, r->since, flushed_lsn);
	if (!ts__log_batch_at(log, r->since))
		return ts__fail(TS_ECORRUPT, "filling tablet born at %" PRIu64 " begins at %" PRIu64
		                ", where no batch begins", r->born, r->since);
	long n = ts__avl_verify(log, r->root, r->since, commit_lsn);
	if (n < 0)
		return ts__context(TS_ECORRUPT, "filling tablet born at %" PRIu64, r->born);
	return n;
}

long ts__avl_check(ts__log *log, uint64_t root)
{
	return ts__avl_verify(log, root, 0, UINT64_MAX);
}
