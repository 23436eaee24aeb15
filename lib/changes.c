/*
 * changes.c -- ts_changes_open, BTrDB's ComputeDiff (docs/corrections.md
 * section 4): the (key prefix, time window) pairs that commits with
 * versions in (since, until] may have touched, computed from what every
 * source of the snapshot knows of its versions, never from the rows'
 * values:
 *
 *   - an on-disk tablet whose hi <= since (or whose lo > until) is
 *     skipped whole, from its DESCRIPTOR record;
 *   - in the others, a block is changed when its hi (the newest version
 *     of its rows, tablet format 3, docs/tablet-format.md 4.1) is above
 *     since -- so after a merge of an old and a new tablet only the
 *     blocks that took new rows are reported; every block of a tablet of
 *     an older format is changed (it is as new as the tablet);
 *   - a changed block names its prefix from its first and last keys
 *     (one prefix when they share the first depth key columns, the usual
 *     block of one series); a block whose keys span several prefixes is
 *     read (decompressed, its keys walked: the one case that touches row
 *     bytes, and only the keys), since a prefix between its first and
 *     last would otherwise be missed;
 *   - a filling tree is searched by version: every insert copies the
 *     path from the root to its new leaf (avl.h), so a node created at
 *     or before since heads a subtree no later commit touched, and is
 *     skipped whole.  Series by series (a key but its ts), the first and
 *     last new rows are found by searches that skip such subtrees (with
 *     a resolution, the first new row of each window): O(series x
 *     windows x log n), whatever the tree's rows;
 *   - deletes committed in (since, until] -- tombstones in force, and
 *     the change records the DESCRIPTOR keeps of those that left --
 *     report their time range under their one prefix, or as a wildcard
 *     row (the leading columns their box fixes, TS_NONE -- every value --
 *     for the others) when their key box spans several; below the changes
 *     horizon, the wildcard of every prefix over the time range of the
 *     records dropped (changes_from_deletes).
 *
 * Each changed unit -- a block, the part of a block of one prefix, a
 * tree's series (from its first to its last new row) or window of a
 * series -- gives its prefix and ts span.  With a resolution, spans are
 * widened to whole windows; without, a source's consecutive changed units
 * of one prefix make one span (a tablet's blocks of one series through
 * the day are one window, not one per block; a tree's series of one
 * prefix likewise).  The spans are then
 * sorted by prefix and start, and those of a prefix that overlap or
 * touch joined; the cursor cuts them into windows as it returns them, so
 * a fine resolution over a long span costs no memory.
 *
 * The answer over-reports, never misses: every row committed in
 * (since, until] lies in a source whose hi is at least its commit, in a
 * block whose hi is at least that source's, or in a tree under nodes
 * newer than since; every row a delete in (since, until] hid lies in its
 * box, kept as a tombstone, a change record or under the horizon; a unit
 * reported covers more than the changed rows (the whole block's span,
 * all of its series; a series' span from its first to its last new row;
 * a delete's every prefix) but never less.
 */
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "avl.h"
#include "cursor.h"
#include "error.h"
#include "key.h"
#include "range.h"
#include "row.h"
#include "tablet.h"
#include "tablet_format.h"
#include "tablets.h"
#include "tombstone.h"

/* One reported span: a prefix (bytes in the cursor's pfx) of `known`
 * leading key columns -- the depth asked for, or fewer: a wildcard row,
 * whose other depth columns are every value (TS_NONE) -- and [from, to). */
struct span {
	size_t off;
	uint32_t len;
	int known;
	int64_t from, to;
};

typedef struct changes_cursor {
	struct ts_cursor base;
	const ts__schema *schema;
	int depth;
	int64_t res;               /* window width; 0: spans */
	uint64_t since, until;
	ts_buf pfx;                /* the prefixes' encoded bytes */
	struct span *spans;
	size_t n, cap;
	/* the span being built from a source's consecutive changed units */
	int open;
	struct span cur;
	ts__key_head cur_head;     /* cur's prefix's head, when head_len is cur's */
	size_t head_off;
	uint32_t head_len;         /* UINT32_MAX: none */
	ts_buf raw;                /* a block read for its keys */
	ts_buf bound;              /* a tree search's bound */
	/* returning */
	size_t at;                 /* spans[at] is being returned */
	int64_t wfrom;             /* its next window's start */
	size_t decoded;            /* offset + 1 of the prefix in out, 0: none */
	ts_value *out;             /* depth prefix values, from, to */
	ts_buf scratch;
} changes_cursor;

/* ---- building the spans ---- */

/* The start of ts's window: the multiple of res at or below it (the
 * lowest timestamp when that is below INT64_MIN). */
static int64_t align_down(int64_t ts, int64_t res)
{
	int64_t q = ts / res, r = ts % res;
	if (r < 0) {
		if (q <= INT64_MIN / res)
			return INT64_MIN;
		q--;
	}
	return q * res;
}

/* The window end after ts: align_down(ts) + res, INT64_MAX if past it. */
static int64_t align_up(int64_t ts, int64_t res)
{
	int64_t d = align_down(ts, res);
	return d > INT64_MAX - res ? INT64_MAX : d + res;
}

static int push(changes_cursor *c, const struct span *s)
{
	if (c->n == c->cap) {
		size_t cap = c->cap ? c->cap * 2 : 256;
		struct span *p = realloc(c->spans, cap * sizeof *p);
		if (!p)
			return ts__fail(TS_ENOMEM, "out of memory");
		c->spans = p;
		c->cap = cap;
	}
	c->spans[c->n++] = *s;
	return 0;
}

/* End the span being built: the source's next changed unit, if any, is
 * not adjacent to it (an unchanged one lies between, or the source
 * ended). */
static int run_break(changes_cursor *c)
{
	if (!c->open)
		return 0;
	c->open = 0;
	return push(c, &c->cur);
}

/* Whether s's prefix is p[0..n), of `known` columns. */
static int same_prefix(const changes_cursor *c, const struct span *s, const void *p, size_t n,
                       int known)
{
	return s->known == known && s->len == n &&
	       (n == 0 || memcmp(c->pfx.data + s->off, p, n) == 0);
}

/*
 * A changed unit of a source: its rows all have the prefix p[0..n) of
 * `known` leading key columns (fewer than the depth: a wildcard unit, any
 * values of the others) and ts in [min_ts, max_ts].  It joins the span
 * being built when of the same prefix (without resolution: always; with:
 * when their windows meet).
 */
static int unit_k(changes_cursor *c, const void *p, size_t n, int known, int64_t min_ts,
                  int64_t max_ts)
{
	int64_t from = min_ts, to = max_ts == INT64_MAX ? INT64_MAX : max_ts + 1;
	if (c->res) {
		from = align_down(min_ts, c->res);
		to = align_up(max_ts, c->res);
	}
	if (c->open && same_prefix(c, &c->cur, p, n, known)) {
		if (!c->res || (from <= c->cur.to && to >= c->cur.from)) {
			c->cur.from = from < c->cur.from ? from : c->cur.from;
			c->cur.to = to > c->cur.to ? to : c->cur.to;
			return 0;
		}
		int rc = push(c, &c->cur);
		if (rc < 0)
			return rc;
		c->cur.from = from; /* same prefix: its bytes are stored */
		c->cur.to = to;
		return 0;
	}
	int rc = run_break(c);
	if (rc < 0)
		return rc;
	const struct span *last = c->n ? &c->spans[c->n - 1] : NULL;
	if (last && same_prefix(c, last, p, n, known)) {
		c->cur.off = last->off;
	} else {
		c->cur.off = c->pfx.len;
		ts__put(&c->pfx, p, n);
		if (c->pfx.oom)
			return ts__fail(TS_ENOMEM, "out of memory");
	}
	c->cur.len = (uint32_t)n;
	c->cur.known = known;
	c->cur.from = from;
	c->cur.to = to;
	c->open = 1;
	return 0;
}

/* A changed unit of the full depth-column prefix p[0..n). */
static int unit(changes_cursor *c, const void *p, size_t n, int64_t min_ts, int64_t max_ts)
{
	return unit_k(c, p, n, c->depth, min_ts, max_ts);
}

/* The bytes of key[0..klen)'s first depth columns: *n. */
static int prefix_of(const changes_cursor *c, const void *key, size_t klen, size_t *n)
{
	long len = ts__key_prefix_len(c->schema, key, klen, c->depth);
	if (len < 0)
		return ts__fail(TS_ECORRUPT, "table \"%s\": a malformed key", c->base.table->name);
	*n = (size_t)len;
	return 0;
}

/* ---- on-disk tablets ---- */

/* Whether the first len (<= 16) bytes of a key of head h are those of
 * the prefix of head p (zero past len). */
static int head_begins(ts__key_head h, ts__key_head p, size_t len)
{
	uint64_t x = h.hi ^ p.hi, y = h.lo ^ p.lo;
	if (len == 0)
		return 1;
	if (len <= 8)
		return (x >> (64 - 8 * len)) == 0;
	return x == 0 && (len == 16 || (y >> (64 - 8 * (len - 8))) == 0);
}

/* Whether block i of tab's last key has the prefix of the span being
 * built.  Each key column's encoding delimits itself (a fixed 8 bytes,
 * or escaped and terminated: key.h), so a key whose first bytes are a
 * whole depth-column prefix has exactly that prefix: compared, with no
 * column parsed -- from the block's head (tablet.h) when the prefix fits
 * in its 16 bytes, without touching the key's bytes (a cache miss a
 * block), else by memcmp. */
static int last_in_open_span(changes_cursor *c, const ts__tablet *tab, uint32_t i)
{
	const ts__tablet_block *b = &tab->blocks[i];
	size_t len = c->cur.len;
	if (!c->open || c->cur.known != c->depth || b->last_klen < len)
		return 0;
	if (len > 16)
		return memcmp(b->last_key, c->pfx.data + c->cur.off, len) == 0;
	if (c->head_len != len || c->head_off != c->cur.off) {
		c->cur_head = ts__key_head_of(c->pfx.data + c->cur.off, len);
		c->head_off = c->cur.off;
		c->head_len = (uint32_t)len;
	}
	return head_begins(tab->heads[i], c->cur_head, len);
}

/* Block i of tab spans several prefixes: read its keys, one unit per
 * run of rows of one prefix. */
static int block_by_rows(changes_cursor *c, const ts__tablet *tab, uint32_t i)
{
	ts_reader r;
	const void *row, *key;
	size_t len, klen, n = 0;
	int rc = ts__tablet_read_block(tab, i, &c->raw);
	if (rc < 0)
		return rc;
	ts__reader_init(&r, c->raw.data, c->raw.len);
	while ((rc = ts__tablet_block_next(&r, &row, &len)) == 1) {
		int64_t ts;
		if ((rc = ts__row_key(row, len, &key, &klen)) < 0 || klen < 8)
			return rc < 0 ? rc : ts__fail(TS_ECORRUPT, "tablet %s: a short key", tab->path);
		if ((rc = prefix_of(c, key, klen, &n)) < 0)
			return rc;
		ts = ts__key_ts(key, klen);
		if ((rc = unit(c, key, n, ts, ts)) < 0)
			return rc;
	}
	return rc;
}

/* The changed blocks of on-disk tablet k of the snapshot. */
static int scan_tablet(changes_cursor *c, const ts__snapshot *s, int k)
{
	const ts__tablet_meta *m = &s->metas[k];
	const ts__tablet *tab = s->tablets[k];
	int rc = 0;
	/* hi 0: written before versions existed, as new as anything we
	 * know of (so reported whatever since is) */
	if ((m->hi && m->hi <= c->since) || m->lo > c->until)
		return 0;
	int by_block = m->hi && tab->format >= TS_TABLET_VERSION_BLOCK_HI;
	for (uint32_t i = 0; rc == 0 && i < tab->nblocks; i++) {
		const ts__tablet_block *b = &tab->blocks[i];
		if (by_block && b->hi && b->hi <= c->since) {
			rc = run_break(c);
			continue;
		}
		/* the first key, or in format 1 a key before it (the previous
		 * block's last): equal prefixes there and in the last key hold
		 * every key between */
		const void *first = b->first_key ? (const void *)b->first_key
		                    : i ? (const void *)tab->blocks[i - 1].last_key
		                        : (const void *)tab->first_key;
		size_t flen = b->first_key ? b->first_klen
		              : i ? tab->blocks[i - 1].last_klen : tab->first_klen;
		size_t nf = 0;
		/* The next block of the series before it (a series' day is
		 * 24 blocks of an hour), without parsing a key: a span is open
		 * only when block i - 1 gave its last unit, whose prefix is
		 * that of block i - 1's last key; when block i's last key has
		 * it too, so has every key between (the keys of one prefix
		 * are one interval of the key order), block i's first among
		 * them -- one key's bytes touched, not two. */
		if (last_in_open_span(c, tab, i)) {
			rc = unit(c, c->pfx.data + c->cur.off, c->cur.len, b->min_ts, b->max_ts);
			continue;
		}
		/* a block of a new series: its first key's prefix parsed, and
		 * the last key tested against its bytes (the same rule) */
		if ((rc = prefix_of(c, first, flen, &nf)) < 0)
			break;
		if (b->last_klen >= nf && (nf == 0 || memcmp(first, b->last_key, nf) == 0))
			rc = unit(c, first, nf, b->min_ts, b->max_ts);
		else
			rc = block_by_rows(c, tab, i);
	}
	if (rc < 0)
		return ts__table_damaged(c->base.table, tab->id, rc);
	return run_break(c);
}

/* ---- filling trees ---- */

/* A bound on keys for the searches below: key[0..klen) (NULL: none),
 * its first 16 bytes zero-padded as two big-endian words (the nodes'
 * kpfx and kpfx2: when they differ, so do the keys, the same way), and
 * whether the bound itself is excluded. */
struct bound {
	const unsigned char *key;
	size_t klen;
	uint64_t h1, h2;
	int exclusive;
};

static void bound_set(struct bound *b, const ts_buf *k, int exclusive)
{
	unsigned char head[16] = {0};
	memcpy(head, k->data, k->len < 16 ? k->len : 16);
	b->key = k->data;
	b->klen = k->len;
	b->h1 = ts__load_be64(head);
	b->h2 = ts__load_be64(head + 8);
	b->exclusive = exclusive;
}

/* The bound against node N's key: <0, 0, >0.  Most nodes are decided by
 * their first 16 bytes, without reading the row. */
static int bound_cmp(ts__log *log, const struct bound *b, const ts__node *N)
{
	const unsigned char *nk;
	size_t nklen;
	if (b->h1 != N->kpfx)
		return b->h1 < N->kpfx ? -1 : 1;
	if (b->h2 != N->kpfx2)
		return b->h2 < N->kpfx2 ? -1 : 1;
	ts__rowrec_key(log, ts__node_row(N), &nk, &nklen);
	return ts__key_cmp(b->key, b->klen, nk, nklen);
}

static const struct bound no_bound;

/* Whether row (a row record's LSN) is one of the changes asked about. */
static int is_new(const changes_cursor *c, uint64_t row, uint64_t since)
{
	return row > since && row <= c->until;
}

/* The node at n when its subtree may hold a row committed after since
 * (a node at or before since heads a subtree no later commit touched),
 * else NULL; NULL with *deep set past TS_AVL_MAX_HEIGHT (a damaged log). */
static const ts__node *new_subtree(ts__log *log, uint64_t n, uint64_t since, int depth, int *deep)
{
	if (!n || n <= since)
		return NULL;
	if (depth > TS_AVL_MAX_HEIGHT) {
		*deep = 1;
		return NULL;
	}
	return ts__node_at(log, n);
}

/*
 * The first row committed in (since, until] after bound b (at or after
 * it unless exclusive) in the subtree at node n, or 0.  A node at or
 * before since heads a subtree no later commit touched (every insert
 * copies the path to its leaf): it is skipped whole, so the search
 * visits the paths to new rows, not the tree.  *deep is set (and 0
 * returned) past TS_AVL_MAX_HEIGHT: a damaged log.
 */
static uint64_t first_new(const changes_cursor *c, ts__log *log, uint64_t n, uint64_t since,
                          const struct bound *b, int depth, int *deep)
{
	const ts__node *N = new_subtree(log, n, since, depth, deep);
	if (!N)
		return 0;
	if (b->key) {
		int d = bound_cmp(log, b, N);
		if (b->exclusive ? d >= 0 : d > 0) /* N is not after the bound */
			return first_new(c, log, N->right, since, b, depth + 1, deep);
	}
	uint64_t r = first_new(c, log, N->left, since, b, depth + 1, deep);
	if (r || *deep)
		return r;
	if (is_new(c, ts__node_row(N), since))
		return ts__node_row(N);
	return first_new(c, log, N->right, since, &no_bound, depth + 1, deep);
}

/* The last row committed in (since, until] at or before bound b (which
 * is inclusive here), as first_new. */
static uint64_t last_new(const changes_cursor *c, ts__log *log, uint64_t n, uint64_t since,
                         const struct bound *b, int depth, int *deep)
{
	const ts__node *N = new_subtree(log, n, since, depth, deep);
	if (!N)
		return 0;
	if (b->key && bound_cmp(log, b, N) < 0) /* N is after the bound */
		return last_new(c, log, N->left, since, b, depth + 1, deep);
	uint64_t r = last_new(c, log, N->right, since, b, depth + 1, deep);
	if (r || *deep)
		return r;
	if (is_new(c, ts__node_row(N), since))
		return ts__node_row(N);
	return last_new(c, log, N->left, since, &no_bound, depth + 1, deep);
}

/* k = stem followed by the encoding of ts (key.h: big-endian, sign bit
 * flipped); UINT64_MAX's bytes for the stem's greatest key. */
static int stem_key(ts_buf *k, const unsigned char *key, size_t klen, uint64_t enc)
{
	unsigned char ts[8];
	ts__store_be64(ts, enc);
	k->len = 0;
	ts__put(k, key, klen - 8);
	ts__put(k, ts, 8);
	return k->oom ? ts__fail(TS_ENOMEM, "out of memory") : 0;
}

/*
 * The changes in the tree at root: series by series (a stem: the key
 * but its ts), the first new row found by search; without a resolution,
 * the series' last new row by another, and the span between them is the
 * series'; with one, each window of the series holding a new row, the
 * next found from the window's end.  So the cost is O(series x windows x
 * log n), whatever the rows: a tree of four hours of 1000 hosts is 2000
 * searches, not 240000 rows.
 */
static int scan_tree(changes_cursor *c, ts__log *log, uint64_t root, uint64_t since)
{
	struct bound b = no_bound, last;
	int deep = 0, rc = 0;
	uint64_t row;
	while (rc == 0 && (row = first_new(c, log, root, since, &b, 0, &deep)) != 0) {
		const unsigned char *key, *lk;
		size_t klen, lklen, n = 0;
		ts__rowrec_key(log, row, &key, &klen);
		if (klen < 8)
			return ts__fail(TS_ECORRUPT, "table \"%s\": a short key", c->base.table->name);
		if ((rc = prefix_of(c, key, klen, &n)) < 0)
			return rc;
		int64_t ts = ts__key_ts(key, klen), end = ts;
		if (!c->res) {
			if ((rc = stem_key(&c->bound, key, klen, UINT64_MAX)) < 0)
				return rc;
			bound_set(&last, &c->bound, 0);
			uint64_t at = last_new(c, log, root, since, &last, 0, &deep);
			if (at) {
				ts__rowrec_key(log, at, &lk, &lklen);
				end = ts__key_ts(lk, lklen);
			}
			bound_set(&b, &c->bound, 1); /* the next series */
		} else {
			int64_t w = align_up(ts, c->res);
			if (w == INT64_MAX) { /* the last window: the next series */
				rc = stem_key(&c->bound, key, klen, UINT64_MAX);
				bound_set(&b, &c->bound, 1);
			} else {
				rc = stem_key(&c->bound, key, klen, (uint64_t)w ^ (UINT64_C(1) << 63));
				bound_set(&b, &c->bound, 0);
			}
		}
		if (rc == 0)
			rc = unit(c, key, n, ts, end);
	}
	if (rc == 0 && deep)
		rc = ts__fail(TS_ECORRUPT, "table \"%s\": a filling tree deeper than %d",
		              c->base.table->name, TS_AVL_MAX_HEIGHT);
	return rc < 0 ? rc : run_break(c);
}

/*
 * The version below which the trees' nodes and rows are old.  A node or
 * row record at or before since belongs to a batch committed at or
 * before it when since is a commit (a version the table had); were it
 * not, a batch could straddle it, committed after since with records
 * before it: then every row of the trees that may hold such a batch
 * (those born at or before since) is taken as new.
 */
static uint64_t tree_since(const changes_cursor *c, const ts__snapshot *s)
{
	ts__commit cm;
	int straddled = 0;
	for (uint32_t i = 0; i < s->nroots; i++)
		straddled |= s->roots[i].born <= c->since;
	if (!straddled || c->since >= s->commit)
		return c->since;
	ts__log *log = s->table->log;
	if (ts__log_read_commit(log, c->since, &cm) == 0 && cm.lsn == c->since)
		return c->since;
	ts__clear_error();
	return 0;
}

static int scan_trees(changes_cursor *c, const ts__snapshot *s)
{
	uint64_t since = tree_since(c, s);
	int rc = 0;
	for (uint32_t i = 0; rc == 0 && i < s->nroots; i++) {
		const ts__root *r = &s->roots[i];
		/* rows after born were committed after it; and none of the
		 * snapshot's trees holds a row committed after its commit */
		if (!r->root || r->born > c->until || s->commit <= c->since)
			continue;
		rc = scan_tree(c, s->table->log, r->root, since);
	}
	return rc;
}

/* ---- deletes ---- */

/*
 * A delete committed in (since, until] changed the rows it hid: all lie
 * in its box, {its key range} x [tmin, tmax], whose ts range ts_delete
 * narrowed to the timespans of the sources it could hide rows of (a
 * delete of a host for all time reports the times the table had rows,
 * not all of time).  Whether its tombstone is still in force or has
 * left (a flush found it spent, a purge dropped it: its change record in
 * the DESCRIPTOR, descriptor.h), it is reported from its box alone,
 * looking at no source and no row:
 *   - when every key of the box has one depth-d prefix (depth 0; a delete
 *     of a prefix at least d columns long; a key range within one
 *     prefix), under that prefix;
 *   - else as a wildcard row: the leading k < d columns every key of the
 *     box shares (the longest such k, perhaps none), TS_NONE for the
 *     others -- every value: the box does not say which prefixes held
 *     rows, and the rows are not looked for (once a flush or merge has
 *     left them out, no source could say).
 * So a delete is reported while its tombstone is in force, after it left,
 * after a purge (whose records keep no key box: every prefix), and -- past
 * the TS_CHANGE_RECORDS_MAX records a descriptor keeps -- by the changes
 * horizon: a since below it reports the wildcard over the time range of
 * the records dropped.  Exact (never misses), over-reporting prefixes
 * the box spans without rows.  A ts range ts_delete could not narrow (its
 * snapshot failed) keeps an unbounded side, reported as such: one row
 * (changes_next), not cut to the sources that happen to be left.
 */

/* Whether every key of t's box starts with the k-column prefix of its
 * lower bound: then *n is that prefix's length (0 for k 0). */
static int tomb_prefix(changes_cursor *c, const ts__tomb *t, int k, size_t *n)
{
	*n = 0;
	if (k == 0)
		return 1;
	if (!(t->flags & TS_TOMB_LO) || !(t->flags & TS_TOMB_HI))
		return 0;
	long len = ts__key_prefix_len(c->schema, t->lo, t->lolen, k);
	if (len <= 0)
		return 0; /* the bound is shorter than d columns */
	c->bound.len = 0;
	ts__put(&c->bound, t->lo, (size_t)len);
	if (c->bound.oom)
		return ts__fail(TS_ENOMEM, "out of memory");
	if (ts__key_successor(&c->bound) != 0)
		return 0; /* no successor: the prefix is unbounded above */
	/* keys >= lo >= P and below succ(P) all start with P */
	int d = ts__key_cmp(t->hi, t->hilen, c->bound.data, c->bound.len);
	if (d < 0 || (d == 0 && (t->flags & TS_TOMB_HI_STRICT))) {
		*n = (size_t)len;
		return 1;
	}
	return 0;
}

/* Report delete t (a tombstone in force or a change record) over
 * [from, to]: under the longest prefix of at most depth columns that
 * every key of its box shares -- its depth prefix, or a wildcard row
 * naming the columns it fixes (none: every prefix). */
static int report_delete(changes_cursor *c, const ts__tomb *t, int64_t from, int64_t to)
{
	size_t n = 0;
	int k = c->depth, rc = 0;
	if (from > to)
		return 0;
	for (; k > 0 && (rc = tomb_prefix(c, t, k, &n)) == 0; k--)
		;
	if (rc < 0)
		return rc;
	rc = unit_k(c, n ? (const void *)t->lo : "", n, k, from, to);
	return rc < 0 ? rc : run_break(c);
}

/* The deletes committed in (since, until]: the snapshot's tombstones in
 * force, its tablet set's change records (the descriptor's), and the
 * changes horizon when since is below it. */
static int changes_from_deletes(changes_cursor *c, const ts__snapshot *s)
{
	const ts__tablet_set *set = s->set;
	int rc = 0;
	for (int i = 0; rc == 0 && i < s->ntombs; i++) {
		const ts__tomb *t = &s->tombs[i];
		if (t->version > c->since && t->version <= c->until)
			rc = report_delete(c, t, t->tmin, t->tmax);
	}
	for (int i = 0; rc == 0 && set && i < set->nchrecs; i++) {
		const ts__tomb *t = &set->chrecs[i];
		if (t->version > c->since && t->version <= c->until)
			rc = report_delete(c, t, t->tmin, t->tmax);
	}
	/* deletes whose records were dropped: versions at or below the
	 * horizon, any of them after since */
	if (rc == 0 && set && set->ch_horizon > c->since && set->ch_tmin <= set->ch_tmax) {
		rc = unit_k(c, "", 0, 0, set->ch_tmin, set->ch_tmax);
		if (rc == 0)
			rc = run_break(c);
	}
	return rc;
}

/* ---- sorting, joining ---- */

/* The order of the prefixes of x and y: by their bytes (memcomparable:
 * a wildcard row's fewer columns come before the prefixes they begin,
 * the wildcard of every prefix first of all), then by the columns they
 * name. */
static int prefix_cmp(const unsigned char *p, const struct span *x, const struct span *y)
{
	int d = ts__key_cmp(p + x->off, x->len, p + y->off, y->len);
	return d ? d : (x->known > y->known) - (x->known < y->known);
}

static int span_cmp(const void *a, const void *b, void *arg)
{
	const struct span *x = a, *y = b;
	int d = prefix_cmp(arg, x, y);
	if (d)
		return d;
	return x->from < y->from ? -1 : x->from > y->from;
}

/* The end of the run in order of v[i..n) that begins at i. */
static size_t run_end(const struct span *v, size_t i, size_t n, const void *pfx)
{
	while (++i < n && span_cmp(&v[i - 1], &v[i], (void *)pfx) <= 0)
		;
	return i;
}

/*
 * Sort the spans by prefix and start.  Each source gives its spans in
 * order (a tablet's blocks, a tree's series), so they come as a few runs
 * in order -- one per source, deletes' apart: merged run by run, O(n log
 * runs) comparisons where a sort of 3000 spans of a day's three tablets
 * took a fifth of a `changes`.  Without memory for the merge, qsort_r.
 */
static void sort_spans(changes_cursor *c)
{
	size_t n = c->n;
	if (run_end(c->spans, 0, n, c->pfx.data) >= n)
		return; /* one source, or in order already */
	struct span *buf = malloc(n * sizeof *buf), *src = c->spans, *dst = buf;
	if (!buf) {
		qsort_r(c->spans, n, sizeof *c->spans, span_cmp, c->pfx.data);
		return;
	}
	for (;;) {
		size_t runs = 0;
		for (size_t i = 0; i < n; runs++) { /* pairs of runs of src into dst */
			size_t mid = run_end(src, i, n, c->pfx.data);
			size_t end = mid < n ? run_end(src, mid, n, c->pfx.data) : n;
			size_t x = i, y = mid, o = i;
			while (x < mid && y < end)
				dst[o++] = span_cmp(&src[y], &src[x], c->pfx.data) < 0 ? src[y++] : src[x++];
			while (x < mid)
				dst[o++] = src[x++];
			while (y < end)
				dst[o++] = src[y++];
			i = end;
		}
		struct span *t = src;
		src = dst;
		dst = t;
		if (runs <= 1)
			break;
	}
	if (src != c->spans)
		memcpy(c->spans, src, n * sizeof *src);
	free(buf);
}

/* Sort the spans by prefix and start, and join those of a prefix that
 * overlap or touch. */
static void join(changes_cursor *c)
{
	sort_spans(c);
	size_t out = 0;
	for (size_t i = 0; i < c->n; i++) {
		struct span *s = &c->spans[i], *o = out ? &c->spans[out - 1] : NULL;
		if (o && prefix_cmp(c->pfx.data, o, s) == 0 && s->from <= o->to) {
			o->to = s->to > o->to ? s->to : o->to;
			continue;
		}
		c->spans[out++] = *s;
	}
	c->n = out;
}

/* ---- the cursor ---- */

static int changes_next(struct ts_cursor *base, const ts_value **row, int *n)
{
	changes_cursor *c = (changes_cursor *)base;
	if (c->at >= c->n)
		return 0;
	const struct span *s = &c->spans[c->at];
	if (s->known < c->depth) { /* a wildcard row: decoded each time */
		int rc = s->known ? ts__key_decode(c->schema, c->pfx.data + s->off, s->len, s->known,
		                                   c->out, &c->scratch, NULL) : 0;
		if (rc < 0)
			return rc;
		for (int i = s->known; i < c->depth; i++)
			c->out[i] = ts_none();
		c->decoded = 0;
	} else if (c->depth > 0 && c->decoded != s->off + 1) { /* depth 0: no prefix, no bytes */
		int rc = ts__key_decode(c->schema, c->pfx.data + s->off, s->len, c->depth, c->out,
		                        &c->scratch, NULL);
		if (rc < 0)
			return rc;
		c->decoded = s->off + 1;
	}
	/* a span reaching the lowest or the highest timestamp (a delete
	 * whose time range could not be narrowed) is one row, uncut */
	int cut = c->res && s->from != INT64_MIN && s->to != INT64_MAX;
	int64_t from = cut ? c->wfrom : s->from;
	int64_t to = cut ? (from > INT64_MAX - c->res ? INT64_MAX : from + c->res) : s->to;
	c->out[c->depth] = ts_timestamp(from);
	c->out[c->depth + 1] = ts_timestamp(to);
	if (cut && to < s->to) {
		c->wfrom = to;
	} else if (++c->at < c->n) {
		c->wfrom = c->spans[c->at].from;
	}
	*row = c->out;
	*n = c->depth + 2;
	return 0;
}

static void changes_destroy(struct ts_cursor *base)
{
	changes_cursor *c = (changes_cursor *)base;
	free(c->spans);
	free(c->out);
	ts__buf_free(&c->pfx);
	ts__buf_free(&c->raw);
	ts__buf_free(&c->bound);
	ts__buf_free(&c->scratch);
}

static int changes_setup(struct ts_cursor *base, const void *arg)
{
	const ts_changes_spec *spec = arg;
	changes_cursor *c = (changes_cursor *)base;
	const ts__snapshot *s = &base->scan.snap;
	int rc = 0;
	ts__buf_init(&c->pfx);
	c->head_len = UINT32_MAX; /* no head yet */
	ts__buf_init(&c->raw);
	ts__buf_init(&c->bound);
	ts__buf_init(&c->scratch);
	c->schema = s->schema;
	if (spec->depth < 0 || spec->depth >= s->schema->nkey)
		return ts__fail(TS_EINVAL, "ts_changes_open: depth %d, the key has %d columns before ts",
		                spec->depth, s->schema->nkey - 1);
	if (spec->resolution < 0)
		return ts__fail(TS_EINVAL, "ts_changes_open: resolution %lld is negative",
		                (long long)spec->resolution);
	if (spec->until && spec->until < spec->since)
		return ts__fail(TS_EINVAL, "ts_changes_open: until %llu is below since %llu",
		                (unsigned long long)spec->until, (unsigned long long)spec->since);
	c->depth = spec->depth;
	c->res = spec->resolution;
	c->since = spec->since;
	c->until = spec->until ? spec->until : s->commit;
	if (!(c->out = malloc((size_t)(c->depth + 2) * sizeof *c->out)))
		return ts__fail(TS_ENOMEM, "out of memory");
	if (c->until <= c->since)
		return 0; /* no version in between */
	for (int k = 0; rc == 0 && k < s->ntablets; k++)
		rc = scan_tablet(c, s, k);
	if (rc == 0)
		rc = scan_trees(c, s);
	if (rc == 0)
		rc = changes_from_deletes(c, s);
	if (rc < 0)
		return rc;
	join(c);
	c->wfrom = c->n ? c->spans[0].from : 0;
	return 0;
}

int ts__changes_open(ts_table *t, const ts_changes_spec *spec, ts_cursor **out)
{
	return ts__cursor_open(t, sizeof(changes_cursor), changes_next, changes_destroy,
	                       changes_setup, spec, out);
}
