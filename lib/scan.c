/*
 * scan.c -- the per-tree and per-tablet streams of a snapshot over a
 * range (range.c), and their merge (scan.h).
 *
 * A tablet stream keeps one decompressed block and an array locating its
 * rows, so that it can seek by binary search and walk either way (through
 * the block's seek index, bcache.h, which reads the keys' compact words
 * rather than a row per probe).  Blocks
 * are read only when some row of theirs can be in the range: the block
 * index (last keys, timespans) decides the rest (block_verdict).  A
 * stream that has loaded a few blocks and then misses the block cache is
 * a long scan: it reads its next blocks ahead, to be decompressed on
 * another core (ra_fill, readahead.h).  The merge is a binary
 * heap of the streams ordered by their current key; in a table that never
 * replaced a row every key lives in exactly one stream of a snapshot, so
 * no two heads are ever equal.  Once one stream is left (a one-series
 * range over a merged table, mostly), the merge takes its rows inside
 * the loaded block itself (plain_next) and leaves the stream's general
 * step for the rest.
 *
 * Shadowing snapshots (snapshot.h: the table may hold replaced rows) are
 * resolved here, apart from the path above, which they leave as it was:
 * the heap breaks ties of keys by the newer stream (greater vlo), and
 * once the top is chosen the other streams' rows of its key are skipped
 * (resolve_top).  An aggregate's streams hand up the rows of a loaded
 * block that share their group as one item, a run (make_run), where
 * nothing can hide or shadow them.  Block summaries, which hide their rows' keys, are only
 * handed up for a block that no other source of the snapshot can share a
 * key with (overlapped): a block that another source may share a key
 * with is read and resolved row by row.
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "avl.h"
#include "error.h"
#include "handle.h"
#include "key.h"
#include "period.h"
#include "row.h"
#include "scan.h"
#include "tablets.h"

/* ---- streams ---- */

static int time_misses(const ts__range *r, int64_t min_ts, int64_t max_ts)
{
	return max_ts < r->tmin || min_ts > r->tmax;
}

/* Select the snapshot's tombstones that may hide rows of the source in
 * the stream's range: newer than vmin, meeting its keys and times and
 * the range's -- O(log T + those met) through the set's index, with no
 * allocation when they are few.  Returns 0 or TS_ENOMEM. */
static int select_tombs(ts__src *src, uint64_t vmin, const void *first, size_t flen,
                        const void *last, size_t llen, int64_t min_ts, int64_t max_ts)
{
	const ts__snapshot *s = src->snap;
	/* only what the read asks for: the range's bounds narrow the span
	 * (a bound passed for a span's end is conservative either way) */
	const ts__range *r = src->range;
	if (r->has_lo && (!first || ts__key_cmp(r->lo.data, r->lo.len, first, flen) > 0))
		first = r->lo.data, flen = r->lo.len;
	if (r->has_hi && (!last || ts__key_cmp(r->hi.data, r->hi.len, last, llen) < 0))
		last = r->hi.data, llen = r->hi.len;
	min_ts = r->tmin > min_ts ? r->tmin : min_ts;
	max_ts = r->tmax < max_ts ? r->tmax : max_ts;
	if (!s->tindex) { /* none indexed (a snapshot not taken by ts__snapshot_take) */
		src->tombs = src->tomb_mem;
		if (2 * s->ntombs > (int)(sizeof src->tomb_mem / sizeof *src->tomb_mem) &&
		    !(src->tombs = malloc(2 * (size_t)s->ntombs * sizeof *src->tombs))) {
			src->tombs = NULL;
			return ts__fail(TS_ENOMEM, "out of memory");
		}
		src->ntombs = ts__tombs_select(s->tombs, s->ntombs, vmin, first, flen, last, llen,
		                               min_ts, max_ts, src->tombs);
		src->btombs = src->tombs + src->ntombs;
		return 0;
	}
	/* half of tomb_mem for the selection, half for a block's (btombs) */
	int room = (int)(sizeof src->tomb_mem / sizeof *src->tomb_mem) / 2;
	src->tombs = src->tomb_mem;
	int n = ts__tombs_select_index(s->tindex, vmin, first, flen, last, llen, min_ts, max_ts,
	                               src->tombs, room);
	if (n > room) {
		if (!(src->tombs = malloc(2 * (size_t)n * sizeof *src->tombs))) {
			src->tombs = NULL;
			return ts__fail(TS_ENOMEM, "out of memory");
		}
		n = ts__tombs_select_index(s->tindex, vmin, first, flen, last, llen, min_ts, max_ts,
		                           src->tombs, n);
	}
	src->ntombs = n;
	src->btombs = src->tombs + n;
	return 0;
}

/* Whether one of v[0..*n) hides the current row of src (a tree's row
 * record at lsn; 0: a tablet's).  The stream's keys only grow (shrink,
 * descending): a tombstone whose keys the row is past can hide no later
 * row, and leaves v -- so many tombstones over distinct keys cost a
 * stream about one test per row each, not one per row and tombstone. */
static int hidden(const ts__src *src, const ts__tomb **v, int *n, uint64_t lsn)
{
	int k = 0, hit = 0;
	for (int i = 0; i < *n; i++) {
		const ts__tomb *t = v[i];
		if (ts__tomb_passed(t, src->key, src->klen, src->desc))
			continue;
		v[k++] = t;
		hit = hit || ((!lsn || lsn < t->version) && ts__tomb_covers(t, src->key, src->klen));
	}
	*n = k;
	return hit;
}

static void free_tombs(ts__src *src)
{
	if (src->tombs != src->tomb_mem)
		free(src->tombs);
	src->tombs = src->btombs = NULL;
	src->ntombs = src->nbtombs = 0;
}

/* Whether tablet tab certainly holds no row of range r, from what its
 * footer says: its timespan, key span, latest blocks (a range of recent
 * rows only), Bloom filter. */
static int tablet_misses(const ts__tablet *tab, const ts__range *r)
{
	return time_misses(r, tab->min_ts, tab->max_ts) ||
	       !ts__range_above_lo(r, tab->last_key, tab->last_klen) ||
	       !ts__range_below_hi(r, tab->first_key, tab->first_klen) ||
	       (r->tmin > tab->late_floor &&
	        !ts__tablet_may_hold_since(tab, r->has_lo ? r->lo.data : NULL, r->lo.len,
	                                   r->has_hi ? r->hi.data : NULL, r->hi.len, r->tmin)) ||
	       (r->has_stem && !ts__tablet_may_contain(tab, r->stem.data, r->stem.len));
}

int ts__src_init(ts__src *src, const ts__snapshot *s, int tablet, int i,
                 const ts__range *r, int desc, const ts__summary_rule *rule)
{
	if (tablet && tablet_misses(s->tablets[i], r))
		return 1; /* before the stream is cleared: latest asks many */
	memset(src, 0, offsetof(ts__src, it));
	src->snap = s;
	src->range = r;
	src->desc = desc;
	src->blk = -1;
	if (!tablet) {
		const ts__root *root = &s->roots[i];
		if (!root->root || !root->rows || time_misses(r, root->min_ts, root->max_ts))
			return 1;
		src->root = root->root;
		src->min_ts = root->min_ts;
		src->max_ts = root->max_ts;
		src->vlo = src->vhi = root->born;
		if (s->ntombs && select_tombs(src, root->born, NULL, 0, NULL, 0, root->min_ts,
		                              root->max_ts) < 0)
			return TS_ENOMEM;
		return 0;
	}
	const ts__tablet *tab = s->tablets[i];
	src->tab = tab;
	src->rule = desc ? NULL : rule;
	src->version = tab->schema_version;
	src->min_ts = tab->min_ts;
	src->max_ts = tab->max_ts;
	src->vlo = s->metas[i].lo;
	src->vhi = s->metas[i].hi;
	src->blk = -1;
	src->seek_pending = 1;
	if (s->ntombs &&
	    select_tombs(src, s->metas[i].hi, tab->first_key, tab->first_klen, tab->last_key,
	                 tab->last_klen, tab->min_ts, tab->max_ts) < 0)
		return TS_ENOMEM;
	if (!desc)
		src->nextb = r->has_lo ? ts__tablet_block_for(tab, r->lo.data, r->lo.len) : 0;
	else if (!r->has_hi ||
	         (src->nextb = ts__tablet_block_for(tab, r->hi.data, r->hi.len)) >= (long)tab->nblocks)
		src->nextb = (long)tab->nblocks - 1;
	if (src->nextb >= 0 && src->nextb < (long)tab->nblocks) /* for src_prefetch */
		__builtin_prefetch(&tab->blocks[src->nextb]);
	return 0;
}

void ts__src_free(ts__src *src)
{
	if (src->tab) {
		ts__readahead_free(&src->snap->table->db->rapool, src->ra);
		ts__cblock_put(&src->snap->table->db->bcache, src->cb);
	}
	free_tombs(src);
	memset(src, 0, offsetof(ts__src, it));
}

static int set_row(ts__src *src, const void *row, size_t len)
{
	const void *k;
	src->row = row;
	src->rowlen = len;
	if (ts__row_key(row, len, &k, &src->klen) < 0 || src->klen < 8)
		return ts__fail(TS_ECORRUPT, "table \"%s\": a row has a malformed key",
		                src->snap->table->name);
	src->key = k;
	src->scanned++;
	return 0;
}

/* Where the current row stands: PAST the far end of the range (the
 * stream is done), IN it, or OUT of the time interval (skip it). */
enum { PAST, IN, OUT };

static int judge(const ts__src *src)
{
	const ts__range *r = src->range;
	if (src->desc ? !ts__range_above_lo(r, src->key, src->klen)
	              : !ts__range_below_hi(r, src->key, src->klen))
		return PAST;
	int64_t ts = ts__key_ts(src->key, src->klen);
	return ts >= r->tmin && ts <= r->tmax ? IN : OUT;
}

static int tree_next(ts__src *src)
{
	const ts__range *r = src->range;
	ts__log *log = src->snap->table->log;
	if (!src->started) {
		src->started = 1;
		if (!src->desc && r->has_lo)
			ts__avl_iter_seek(&src->it, log, src->root, 0, r->lo.data, r->lo.len, r->lo_strict);
		else if (src->desc && r->has_hi)
			ts__avl_iter_seek(&src->it, log, src->root, 1, r->hi.data, r->hi.len, r->hi_strict);
		else
			ts__avl_iter_init(&src->it, log, src->root, src->desc);
	}
	for (;;) {
		uint64_t lsn = ts__avl_iter_next(&src->it);
		size_t len;
		if (!lsn)
			return 0;
		const unsigned char *row = ts__rowrec_row(log, lsn, &len, &src->version);
		int rc = set_row(src, row, len);
		if (rc < 0)
			return rc;
		if ((rc = judge(src)) == PAST)
			return 0;
		if (rc == IN && src->ntombs && hidden(src, src->tombs, &src->ntombs, lsn)) {
			src->hidden++;
			continue;
		}
		if (rc == IN) {
			src->row_lsn = lsn;
			return 1;
		}
	}
}

/*
 * The series of a loaded block, found on first use rather than when the
 * block is read, so that scans, which never seek, never pay for them.
 * Readers sharing a cached block may race to find them: the first to
 * publish wins and the others free theirs.  NULL when memory is short or
 * a key is malformed (the caller's plain search then reports that).
 */
static const ts__series *series_of(ts__cblock *b)
{
	ts__series *s = __atomic_load_n(&b->series, __ATOMIC_ACQUIRE), *none = NULL;
	if (s)
		return s;
	if (!(s = malloc(sizeof *s + b->nrows * sizeof *s->start)))
		return NULL;
	s->n = 0;
	const void *prev = NULL, *key;
	size_t plen = 0, klen;
	for (size_t i = 0; i < b->nrows; i++) {
		if (ts__row_key(b->raw.data + b->rows[i].off, b->rows[i].len, &key, &klen) < 0) {
			free(s);
			return NULL;
		}
		if (!prev || klen != plen || memcmp(key, prev, klen - 8) != 0)
			s->start[s->n++] = (uint32_t)i;
		prev = key;
		plen = klen;
	}
	ts__series *fit = realloc(s, sizeof *s + s->n * sizeof *s->start);
	s = fit ? fit : s;
	if (!__atomic_compare_exchange_n(&b->series, &none, s, 0, __ATOMIC_ACQ_REL,
	                                 __ATOMIC_ACQUIRE)) {
		free(s);
		s = none;
	}
	return s;
}

/* What a stream does with block b: END, the range ends before it (and
 * the stream with it); SKIP it, none of its rows is in range; hand it up
 * as its SUMMARY; or LOAD it.  Decided from the block index alone, so
 * that next_block and the read-ahead (ra_fill) agree. */
enum { BLOCK_END, BLOCK_SKIP, BLOCK_SUMMARY, BLOCK_LOAD };

static int block_verdict(const ts__src *src, uint32_t b);

/* The read-ahead (readahead.h): after loading block b, read the blocks
 * the stream will load next -- LOAD by block_verdict, not cached -- until
 * it has TS_SCAN_READAHEAD_BLOCKS ahead, and queue them to the helpers.
 * ra->next moves on past every block considered, so that each is looked
 * at once however many a time range makes the stream skip. */
static void ra_fill(ts__src *src, uint32_t b)
{
	ts_db *db = src->snap->table->db;
	const ts__tablet *tab = src->tab;
	ts__readahead *ra = src->ra;
	long step = src->desc ? -1 : 1;
	if (src->desc ? ra->next > (long)b - 1 : ra->next < (long)b + 1)
		ra->next = (long)b + step;
	for (; ts__readahead_room(ra) && ra->next >= 0 && ra->next < (long)tab->nblocks;
	     ra->next += step) {
		int v = block_verdict(src, (uint32_t)ra->next), used;
		if (v == BLOCK_END) {
			ra->next = src->desc ? -1 : (long)tab->nblocks; /* nothing more */
			break;
		}
		if (v != BLOCK_LOAD)
			continue;
		ts__cblock *cb = ts__bcache_peek(&db->bcache, tab->serial, (uint32_t)ra->next, &used);
		if (cb) {
			ts__cblock_put(&db->bcache, cb);
			continue;
		}
		ts__readahead_issue(&db->rapool, ra, tab, (uint32_t)ra->next);
	}
}

/* Blocks a stream reads through the cache like any reader; past them it
 * is a long scan, which only fills the room the cache has to spare, so as
 * not to push everything else out (bcache.h). */
#define CACHED_BLOCKS_PER_STREAM 8

/* Block b read from the file, decompressed and located, into the
 * stream's own block cb (reusing the buffers of the one it holds when it
 * is the only reader of it).  Returns 0 or an error. */
static int read_block(ts__src *src, uint32_t b, ts__cblock **out)
{
	ts__bcache *bc = &src->snap->table->db->bcache;
	const ts__tablet *tab = src->tab;
	ts__cblock *cb;
	if (src->cb && src->cb_private && ts__cblock_sole(src->cb)) { /* reuse its buffers */
		cb = src->cb;
		cb->serial = tab->serial;
		cb->block = b;
	} else {
		ts__cblock_put(bc, src->cb);
		src->cb = NULL;
		if (!(cb = ts__cblock_new(tab->serial, b)))
			return ts__fail(TS_ENOMEM, "out of memory");
	}
	src->cb = cb;
	src->cb_private = 1;
	int rc = ts__tablet_read_block(tab, b, &cb->raw);
	if (rc == 0)
		rc = ts__tablet_block_locate(cb);
	if (rc < 0) {
		cb->nrows = 0;
		return rc;
	}
	*out = cb;
	return 0;
}

/* Make block b of the tablet the stream's current block: from the cache,
 * from the read-ahead, or read, decompressed and located (and offered to
 * the cache). */
static int load_block(ts__src *src, uint32_t b)
{
	ts_db *db = src->snap->table->db;
	ts__bcache *bc = &db->bcache;
	const ts__tablet *tab = src->tab;
	ts__maint_foreground(&db->maint, ts__mono_coarse_ns()); /* a long scan is foreground work */
	ts__cblock *cb = ts__bcache_get(bc, tab->serial, b);
	src->loaded++;
	if (cb) {
		ts__cblock_put(bc, src->cb);
		src->cb = cb;
		src->cb_private = 0;
		if (src->ra) {
			ts__readahead_passed(&db->rapool, src->ra, b);
			ra_fill(src, b);
		}
		return 0;
	}
	int rc = src->ra ? ts__readahead_take(&db->rapool, src->ra, tab->serial, b, &cb) : 0;
	if (rc < 0)
		return rc;
	if (cb) {
		ts__cblock_put(bc, src->cb);
		src->cb = cb;
		src->cb_private = 1;
	} else if ((rc = read_block(src, b, &cb)) < 0) {
		return rc;
	}
	int how = src->blocks_read++ < CACHED_BLOCKS_PER_STREAM ? TS_BCACHE_EVICT : TS_BCACHE_SPARE;
	/* charged for its rows only; but a long scan keeps the capacity of
	 * a buffer the full cache will not take, for the next block */
	if (how == TS_BCACHE_EVICT || ts__bcache_has_room(bc, ts__cblock_fitted_bytes(cb)))
		ts__cblock_fit(cb);
	if (ts__bcache_put(bc, cb, how))
		src->cb_private = 0;
	/* a stream that loaded a few blocks and then missed the cache is a
	 * long scan: from now on it reads ahead */
	if (!src->ra && src->loaded > TS_SCAN_READAHEAD_AFTER && ts__rapool_enabled(&db->rapool))
		src->ra = ts__readahead_new((long)b);
	if (src->ra)
		ra_fill(src, b);
	return 0;
}

static int tab_row(ts__src *src, long i)
{
	const ts__cblock *cb = src->cb;
	return set_row(src, cb->raw.data + cb->rows[i].off, cb->rows[i].len);
}

/* Predicates on the current row, monotone over a block in key order:
 * true for a leading run of its rows. */
static int below_lo(const ts__src *src)
{
	return !ts__range_above_lo(src->range, src->key, src->klen);
}

static int within_hi(const ts__src *src)
{
	return ts__range_below_hi(src->range, src->key, src->klen);
}

/* When every key of the range shares one stem: narrow [*lo, *hi) to the
 * rows of the loaded block in that series, or to the empty place where
 * they would be -- rows of the series before it are below the whole
 * range, those after it above.  Returns 0 or an error. */
static int narrow_to_series(ts__src *src, const ts__series *ser, long *lo, long *hi)
{
	const ts__range *r = src->range;
	long a = 0, b = (long)ser->n, found = -1;
	while (a < b) { /* the first series whose stem is after the range's */
		long mid = a + (b - a) / 2;
		int rc = tab_row(src, ser->start[mid]);
		if (rc < 0)
			return rc;
		src->scanned--; /* a probe, not a row looked at */
		int c = ts__key_cmp(src->key, src->klen - 8, r->stem.data, r->stem.len);
		if (c == 0)
			found = mid;
		if (c <= 0)
			a = mid + 1;
		else
			b = mid;
	}
	long end = a < (long)ser->n ? (long)ser->start[a] : (long)src->cb->nrows;
	*lo = found >= 0 ? (long)ser->start[found] : end;
	*hi = end;
	return 0;
}

/* The ts of bound k when it is a key of the range's stem, else 0 (*ts
 * untouched). */
static int stem_bound_ts(const ts__range *r, const ts_buf *k, int64_t *ts)
{
	if (k->len != r->stem.len + 8 || memcmp(k->data, r->stem.data, r->stem.len) != 0)
		return 0;
	*ts = ts__key_ts(k->data, k->len);
	return 1;
}

/* Inside one series keys order as their ts: whether the block's timespan
 * alone says that pred holds for every row of the range's series in the
 * block (within_hi) or for none (below_lo). */
static int series_decided(const ts__src *src, int (*pred)(const ts__src *))
{
	const ts__range *r = src->range;
	const ts__tablet_block *blk = &src->tab->blocks[src->blk];
	int64_t t;
	if (pred == within_hi)
		return r->has_hi && stem_bound_ts(r, &r->hi, &t) &&
		       (blk->max_ts < t || (blk->max_ts == t && !r->hi_strict));
	return r->has_lo && stem_bound_ts(r, &r->lo, &t) &&
	       (blk->min_ts > t || (blk->min_ts == t && !r->lo_strict));
}

/* The index of the first row of the loaded block for which pred is false
 * (nrows when there is none): when the block's timespan decides pred for
 * the range's series, the series' edge (the newest row of a series, for
 * latest, costs a probe or two); else by binary search. */
static long first_not(ts__src *src, int (*pred)(const ts__src *))
{
	long lo = 0, hi = (long)src->cb->nrows;
	const ts__series *ser;
	if (src->range->has_stem && series_decided(src, pred) && (ser = series_of(src->cb))) {
		int rc = narrow_to_series(src, ser, &lo, &hi);
		return rc < 0 ? rc : pred == within_hi ? hi : lo;
	}
	/* the predicate is k < bound (or k == bound, eq_true); through the
	 * block's seek index, which reads no row but where words tie */
	const ts__range *r = src->range;
	const ts__seekix *x;
	if (pred == below_lo ? !r->has_lo : !r->has_hi)
		return pred == below_lo ? 0 : hi; /* no such bound: false, true for every row */
	if ((x = ts__cblock_seekix(&src->snap->table->db->bcache, src->cb))) {
		const ts_buf *bound = pred == below_lo ? &r->lo : &r->hi;
		int eq_true = pred == below_lo ? r->lo_strict : !r->hi_strict;
		return ts__seekix_first_not(x, src->cb, bound->data, bound->len, eq_true);
	}
	while (lo < hi) {
		long mid = lo + (hi - lo) / 2;
		int rc = tab_row(src, mid);
		if (rc < 0)
			return rc;
		src->scanned--; /* a probe, not a row looked at */
		if (pred(src))
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* A stream whose range ends inside a block judges this many rows one by
 * one before it locates the end by binary search: a reader that wants a
 * row or a few (latest, a small limit, a short range) never pays for the
 * search, a long one pays a few comparisons more. */
#define FAR_LAZY_ROWS 16

/* Place pos at the first row in range of the loaded block (ascending) or
 * the last (descending), skipping those before the near end of the
 * range when sought.  Unless the block ends first (far_in), the range's
 * far end is left to be found (far_lazy, far_end). */
static int bound_block(ts__src *src, int sought, int far_in)
{
	long n = (long)src->cb->nrows, k;
	src->pos = src->desc ? n - 1 : 0;
	src->stop = src->desc ? -1 : n;
	src->far_lazy = far_in ? 0 : FAR_LAZY_ROWS;
	if (sought) {
		if ((k = first_not(src, src->desc ? within_hi : below_lo)) < 0)
			return (int)k;
		src->pos = src->desc ? k - 1 : k;
	}
	return 0;
}

/* Row i, the current row, was just read while the far end of the range
 * is not located.  Returns 1 when row i lies past it (stop is placed at
 * i: the range ends inside the block), else 0; when row i used up the
 * rows judged one by one, stop is located by binary search and row i
 * made current again. */
static int far_end(ts__src *src, long i)
{
	if (src->desc ? below_lo(src) : !within_hi(src)) {
		src->stop = i;
		src->far_lazy = 0;
		return 1;
	}
	if (--src->far_lazy > 0)
		return 0;
	long k = first_not(src, src->desc ? below_lo : within_hi);
	if (k < 0)
		return (int)k;
	src->stop = src->desc ? k - 1 : k;
	int rc = tab_row(src, i);
	src->scanned--; /* counted when first read */
	return rc;
}

static int64_t window_of(int64_t ts, int64_t every)
{
	return ts__floor_div(ts, every);
}

/* A key no greater than the first row of block b, and no smaller than
 * any row before it: the first key itself (format 2, or block 0), else
 * the last key of the block before (*exact = 0). */
static const unsigned char *block_start(const ts__tablet *tab, uint32_t b, size_t *len,
                                        int *exact)
{
	*exact = 1;
	if (tab->blocks[b].first_key) {
		*len = tab->blocks[b].first_klen;
		return tab->blocks[b].first_key;
	}
	if (b == 0) {
		*len = tab->first_klen;
		return tab->first_key;
	}
	*exact = 0;
	*len = tab->blocks[b - 1].last_klen;
	return tab->blocks[b - 1].last_key;
}

/* In a snapshot with replaced rows: whether another source than src's tablet may
 * hold a key of block blk, whose rows lie from start (exact) or after it
 * to its last key.  Either way the block's summary would count a row
 * that is not the newest of its key, or hide that key from the merge,
 * which could then not skip another stream's older row of it: the block
 * must be read.  A tree may when its timespan meets the block's and its
 * first key from start on is not past the block (an AVL seek); a tablet
 * when its timespan and key span meet the block's and, for a block of
 * one series, its Bloom filter does not rule that series out.  Runs per
 * block considered for a summary only. */
static int overlapped(const ts__src *src, const ts__tablet_block *blk,
                      const unsigned char *start, size_t slen, int exact)
{
	const ts__snapshot *s = src->snap;
	ts__log *log = s->table->log;
	size_t stem = exact && slen == blk->last_klen &&
	              memcmp(start, blk->last_key, slen - 8) == 0 ? slen - 8 : 0;
	for (uint32_t i = 0; i < s->nroots; i++) {
		const ts__root *r = &s->roots[i];
		const unsigned char *k;
		size_t klen;
		ts__avl_iter it;
		uint64_t lsn;
		if (!r->root || !r->rows || r->max_ts < blk->min_ts || r->min_ts > blk->max_ts)
			continue;
		ts__avl_iter_seek(&it, log, r->root, 0, start, slen, !exact);
		if (!(lsn = ts__avl_iter_next(&it)))
			continue;
		ts__rowrec_key(log, lsn, &k, &klen);
		if (ts__key_cmp(k, klen, blk->last_key, blk->last_klen) <= 0)
			return 1;
	}
	for (int i = 0; i < s->ntablets; i++) {
		const ts__tablet *o = s->tablets[i];
		if (o == src->tab || o->max_ts < blk->min_ts || o->min_ts > blk->max_ts)
			continue;
		if (ts__key_cmp(o->last_key, o->last_klen, start, slen) < 0 ||
		    ts__key_cmp(o->first_key, o->first_klen, blk->last_key, blk->last_klen) > 0)
			continue;
		if (stem && !ts__tablet_may_contain(o, start, stem))
			continue;
		return 1;
	}
	return 0;
}

/* Whether block b can be handed up whole as its statistics. */
static int summarisable(const ts__src *src, uint32_t b)
{
	const ts__summary_rule *rule = src->rule;
	const ts__range *r = src->range;
	const ts__tablet *tab = src->tab;
	const ts__tablet_block *blk = &tab->blocks[b];
	size_t slen;
	int exact;
	const unsigned char *start = block_start(tab, b, &slen, &exact);
	if (blk->min_ts < r->tmin || blk->max_ts > r->tmax ||
	    window_of(blk->min_ts, rule->every) != window_of(blk->max_ts, rule->every))
		return 0;
	/* rows of b are start and after (exact), or after start */
	if (exact ? !ts__range_above_lo(r, start, slen)
	          : r->has_lo && ts__key_cmp(start, slen, r->lo.data, r->lo.len) < 0)
		return 0;
	if (!ts__range_below_hi(r, blk->last_key, blk->last_klen))
		return 0;
	if (rule->group > 0) {
		long a = ts__key_prefix_len(rule->schema, start, slen, rule->group);
		long z = ts__key_prefix_len(rule->schema, blk->last_key, blk->last_klen, rule->group);
		if (a < 0 || a != z || memcmp(start, blk->last_key, (size_t)a) != 0)
			return 0;
	}
	return !src->snap->replaced || !overlapped(src, blk, start, slen, exact);
}

/* Whether a tombstone of the stream may hide a row of block b: then its
 * summary may not stand for its rows (docs/corrections.md section 2). */
static int block_hidden(const ts__src *src, uint32_t b)
{
	if (!src->ntombs)
		return 0;
	const ts__tablet_block *blk = &src->tab->blocks[b];
	size_t slen;
	int exact;
	const unsigned char *start = block_start(src->tab, b, &slen, &exact);
	for (int i = 0; i < src->ntombs; i++)
		if (ts__tomb_meets(src->tombs[i], start, slen, blk->last_key, blk->last_klen,
		                   blk->min_ts, blk->max_ts))
			return 1;
	return 0;
}

static int block_verdict(const ts__src *src, uint32_t b)
{
	const ts__range *r = src->range;
	const ts__tablet_block *blk = &src->tab->blocks[b];
	/* ascending: rows of b start at its first key, or after the last
	 * key of b - 1 */
	size_t slen;
	int exact;
	const unsigned char *start = block_start(src->tab, b, &slen, &exact);
	if (src->desc ? !ts__range_above_lo(r, blk->last_key, blk->last_klen)
	              : exact ? !ts__range_below_hi(r, start, slen)
	                      : r->has_hi && ts__key_cmp(start, slen, r->hi.data, r->hi.len) >= 0)
		return BLOCK_END;
	if (time_misses(r, blk->min_ts, blk->max_ts))
		return BLOCK_SKIP;
	/* descending from the block holding hi: when its first key is past
	 * hi, none of its rows is in range (and those of the block before
	 * are all below hi) */
	if (src->desc && exact && !ts__range_below_hi(r, start, slen))
		return BLOCK_SKIP;
	if (src->rule && summarisable(src, b) && !block_hidden(src, b))
		return BLOCK_SUMMARY;
	return BLOCK_LOAD;
}

/* Move to the next block worth reading and read it, or hand it up as a
 * summary.  Returns 1 (rows loaded, pos set), 2 (a summary item), 0 at
 * the end, or an error. */
static int next_block(ts__src *src)
{
	const ts__range *r = src->range;
	const ts__tablet *tab = src->tab;
	for (;;) {
		long b = src->nextb;
		if (b < 0 || b >= (long)tab->nblocks)
			return 0;
		int verdict = block_verdict(src, (uint32_t)b);
		if (verdict == BLOCK_END)
			return 0;
		const ts__tablet_block *blk = &tab->blocks[b];
		size_t slen;
		int exact;
		const unsigned char *start = block_start(tab, (uint32_t)b, &slen, &exact);
		int sought = src->seek_pending;
		src->seek_pending = 0;
		src->nextb = b + (src->desc ? -1 : 1);
		src->blk = -1;
		if (verdict == BLOCK_SKIP)
			continue;
		if (verdict == BLOCK_SUMMARY) {
			src->summary = 1;
			src->block = (uint32_t)b;
			src->key = start;
			src->klen = slen;
			src->row = NULL;
			src->rowlen = 0;
			src->summarised += blk->rows;
			return 2;
		}
		int rc = load_block(src, (uint32_t)b);
		if (rc < 0)
			return ts__table_damaged(src->snap->table, tab->id, rc);
		src->blk = b;
		src->time_inside = blk->min_ts >= r->tmin && blk->max_ts <= r->tmax;
		src->nbtombs = 0;
		for (int i = 0; i < src->ntombs; i++)
			if (ts__tomb_meets(src->tombs[i], start, slen, blk->last_key, blk->last_klen,
			                   blk->min_ts, blk->max_ts))
				src->btombs[src->nbtombs++] = src->tombs[i];
		/* the near end was passed (or is sought here); the far end
		 * lies past the block when its far row is in range */
		int far_in = src->desc ? exact && ts__range_above_lo(r, start, slen)
		                       : ts__range_below_hi(r, blk->last_key, blk->last_klen);
		if ((rc = bound_block(src, sought && (src->desc ? r->has_hi : r->has_lo), far_in)) < 0)
			return rc;
		return 1;
	}
}

/* Whether row j of the loaded block is of the series key[0..klen) (all
 * but the ts: a series' rows lie together in key order, by ts) and in
 * t's box.  Returns 1, 0 or TS_ECORRUPT. */
static int in_run(const ts__src *src, long j, const ts__tomb *t, const unsigned char *key,
                  size_t klen)
{
	const ts__cblock *cb = src->cb;
	const void *k;
	size_t len;
	if (ts__row_key(cb->raw.data + cb->rows[j].off, cb->rows[j].len, &k, &len) < 0 || len < 8)
		return ts__fail(TS_ECORRUPT, "table \"%s\": a row has a malformed key",
		                src->snap->table->name);
	return len == klen && memcmp(k, key, klen - 8) == 0 && ts__tomb_covers(t, k, len);
}

/* The current row of a tablet stream was just hidden: skip, by binary
 * search, the rows after it in the stream's direction (up to stop) that
 * are of its series and in the box of a tombstone hiding it -- a
 * tablet's tombstones hide every row of their box, and within a series
 * the box holds one run of rows (its bounds and its timespan are
 * intervals of the series' keys), so they are hidden too.  A stream
 * (latest above all) whose series has a deleted hour then does not test
 * its rows one by one.  Rows past the range's end are skipped alike: the
 * next row read is judged as before.  Returns 0 or TS_ECORRUPT. */
static int skip_hidden_run(ts__src *src)
{
	const ts__tomb *t = NULL;
	for (int i = 0; i < src->nbtombs && !t; i++)
		if (ts__tomb_covers(src->btombs[i], src->key, src->klen))
			t = src->btombs[i];
	long step = src->desc ? -1 : 1, left = src->desc ? src->pos - src->stop : src->stop - src->pos;
	if (!t || left < 2)
		return 0;
	int rc = in_run(src, src->pos, t, src->key, src->klen);
	if (rc <= 0)
		return rc;
	/* rows pos .. pos + step * (lo - 1) are in the run; find the first
	 * offset not in it, in (lo, hi] (hi: left, the stop) */
	long lo = 1, hi = left;
	while (lo < hi) {
		long mid = lo + (hi - lo) / 2;
		if ((rc = in_run(src, src->pos + step * mid, t, src->key, src->klen)) < 0)
			return rc;
		if (rc)
			lo = mid + 1;
		else
			hi = mid;
	}
	src->hidden += (uint64_t)lo;
	src->pos += step * lo;
	return 0;
}

/* An aggregate's stream (rule->runs) hands up row i, the current row,
 * and the loaded block's rows after it in the key range as one item, a
 * run, which the aggregate folds in one loop instead of one merge step a
 * row.  Only when no row of them can be hidden or shadowed (ascending, no
 * tombstone meets the block, no replaced row in the snapshot) and they
 * share their first group key columns: rows of other streams falling
 * among them in key order are then of the same group too, so taking the
 * run ahead of them keeps each group's rows together, which is all an
 * aggregate without first and last needs (the rule is given only
 * without them).  The run's rows are not checked against the ts
 * interval: the aggregate does that.  Returns 0 (src->run set or not)
 * or an error. */
static int make_run(ts__src *src, long i)
{
	const ts__summary_rule *rule = src->rule;
	if (src->desc || src->nbtombs || src->snap->replaced)
		return 0;
	if (src->far_lazy > 0) { /* locate the far end now */
		long k = first_not(src, within_hi);
		if (k < 0)
			return (int)k;
		src->stop = k;
		src->far_lazy = 0;
		int rc = tab_row(src, i);
		src->scanned--; /* counted when first read */
		if (rc < 0)
			return rc;
	}
	long end = src->stop;
	if (end - i < 2)
		return 0;
	if (rule->group > 0 && !src->range->has_stem) { /* a stem holds every group column */
		const ts__cblock *cb = src->cb;
		const void *last;
		size_t llen;
		if (ts__row_key(cb->raw.data + cb->rows[end - 1].off, cb->rows[end - 1].len, &last,
		                &llen) < 0)
			return TS_ECORRUPT;
		long a = ts__key_prefix_len(rule->schema, src->key, src->klen, rule->group);
		long z = ts__key_prefix_len(rule->schema, last, llen, rule->group);
		if (a < 0 || z < 0)
			return ts__fail(TS_ECORRUPT, "table \"%s\": a row has a malformed key",
			                src->snap->table->name);
		if (a != z || memcmp(src->key, last, (size_t)a) != 0)
			return 0;
	}
	src->run = 1;
	src->run_lo = i;
	src->run_hi = end;
	src->scanned += (uint64_t)(end - i - 1);
	src->pos = end;
	return 0;
}

static int tablet_next(ts__src *src)
{
	const ts__range *r = src->range;
	src->summary = 0;
	src->run = 0;
	for (;;) {
		if (src->blk >= 0) {
			if (src->desc ? src->pos > src->stop : src->pos < src->stop) {
				long i = src->desc ? src->pos-- : src->pos++;
				int rc = tab_row(src, i);
				if (rc == 0 && src->far_lazy)
					rc = far_end(src, i);
				if (rc < 0)
					return ts__table_damaged(src->snap->table, src->tab->id, rc);
				if (rc == 1)
					return 0; /* the range ends inside this block */
				int64_t ts;
				if (!src->time_inside &&
				    ((ts = ts__key_ts(src->key, src->klen)) < r->tmin || ts > r->tmax))
					continue;
				if (src->nbtombs && hidden(src, src->btombs, &src->nbtombs, 0)) {
					src->hidden++;
					if ((rc = skip_hidden_run(src)) < 0)
						return ts__table_damaged(src->snap->table, src->tab->id, rc);
					continue;
				}
				if (src->rule && src->rule->runs && (rc = make_run(src, i)) < 0)
					return ts__table_damaged(src->snap->table, src->tab->id, rc);
				return 1;
			}
			if (src->stop >= 0 && src->stop < (long)src->cb->nrows)
				return 0; /* the range ends inside this block */
		}
		int rc = next_block(src);
		if (rc != 1)
			return rc < 0 ? rc : rc == 2;
	}
}

int ts__src_next(ts__src *src)
{
	int rc = src->done ? 0 : src->tab ? tablet_next(src) : tree_next(src);
	if (rc <= 0)
		src->done = 1;
	return rc;
}

/* Ask for the cache lines the first read of tablet stream src will wait
 * for while other work goes on: a 1-host query over a large tablet and a
 * small one (rows replaced beside a merged day) reads both, and each
 * read is a chain of cache misses, each waiting for the one before; the
 * second chain, started early, then overlaps the first.  Two steps, the
 * second (rows) once the first's lines have had time to arrive: its
 * first block's index entry and keys and its cache entry; then, from
 * that entry, the block's seek index and rows.  A hint only. */
static void src_prefetch(const ts__src *src, int rows)
{
	const ts__tablet *tab = src->tab;
	long b = src->nextb;
	if (!tab || !src->seek_pending || b < 0 || b >= (long)tab->nblocks)
		return;
	ts__bcache *bc = &src->snap->table->db->bcache;
	if (rows) {
		ts__bcache_prefetch_rows(bc, tab->serial, (uint32_t)b);
		return;
	}
	const ts__tablet_block *blk = &tab->blocks[b];
	if (blk->first_key)
		__builtin_prefetch(blk->first_key);
	__builtin_prefetch(blk->last_key);
	ts__bcache_prefetch(bc, tab->serial, (uint32_t)b);
}

/* ---- the merge ---- */

/* Whether stream a's item comes before stream b's: by key, and, with
 * shadow (a snapshot with replaced rows), equal keys by the newer stream. */
static inline int before_as(const ts__scan *sc, int a, int b, int shadow)
{
	const ts__src *x = &sc->src[a], *y = &sc->src[b];
	size_t k = sc->skip;
	int c = ts__key_cmp((const unsigned char *)x->key + k, x->klen - k,
	                    (const unsigned char *)y->key + k, y->klen - k);
	if (shadow && c == 0)
		return ts__newer(x->vlo, x->vhi, y->vlo, y->vhi);
	return sc->desc ? c > 0 : c < 0;
}

static int before(const ts__scan *sc, int a, int b)
{
	return before_as(sc, a, b, 0);
}

static inline void sift_down_as(ts__scan *sc, int i, int shadow)
{
	for (;;) {
		int l = 2 * i + 1, m = i;
		if (l < sc->nheap && before_as(sc, sc->heap[l], sc->heap[m], shadow))
			m = l;
		if (l + 1 < sc->nheap && before_as(sc, sc->heap[l + 1], sc->heap[m], shadow))
			m = l + 1;
		if (m == i)
			return;
		int t = sc->heap[i];
		sc->heap[i] = sc->heap[m];
		sc->heap[m] = t;
		i = m;
	}
}

static void sift_down(ts__scan *sc, int i)
{
	sift_down_as(sc, i, 0);
}

#define RUNNER_UNKNOWN (-2)

/* The stream that comes next after the heap's top, or -1. */
static int runner_up(const ts__scan *sc)
{
	if (sc->nheap < 2)
		return -1;
	if (sc->nheap == 2 || before(sc, sc->heap[1], sc->heap[2]))
		return sc->heap[1];
	return sc->heap[2];
}

int ts__scan_begin(ts__scan *sc, ts_table *t)
{
	memset(sc, 0, sizeof *sc);
	sc->last = -1;
	sc->runner = RUNNER_UNKNOWN;
	return ts__snapshot_take(t, &sc->snap);
}

int ts__scan_start(ts__scan *sc, const ts__range *r, int desc, const ts__summary_rule *rule)
{
	int rc = 0;
	sc->range = r;
	sc->desc = desc;
	/* (a summary item's key may be the key before its block's first,
	 * which need not share the stem) */
	sc->skip = !rule && r->has_stem && !r->empty ? r->stem.len : 0;
	const ts__snapshot *s = &sc->snap;
	int total = (int)s->nroots + s->ntablets;
	if (r->empty || total == 0)
		return 0;
	sc->src = malloc((size_t)total * sizeof *sc->src); /* ts__src_init clears each */
	sc->heap = malloc((size_t)total * sizeof *sc->heap);
	if (!sc->src || !sc->heap) {
		ts__scan_close(sc);
		return ts__fail(TS_ENOMEM, "out of memory");
	}
	/* every stream set up first, and each then read to its first row
	 * (below): a tablet stream's first block is known once it is set up,
	 * and the cache lines its first read will need are fetched while the
	 * streams before it read theirs, not one after another */
	for (int i = 0; i < total; i++) {
		int tablet = i >= (int)s->nroots, j = tablet ? i - (int)s->nroots : i;
		if (tablet && (s->tablets[j]->schema_version < 1 ||
		               (int)s->tablets[j]->schema_version > s->nversions)) {
			rc = ts__fail(TS_ECORRUPT, "tablet %s has unknown schema version %u",
			              s->tablets[j]->path, s->tablets[j]->schema_version);
			break;
		}
		ts__src *src = &sc->src[sc->nsrc];
		if ((rc = ts__src_init(src, s, tablet, j, r, desc, rule)) < 0)
			break;
		if (rc != 0) {
			rc = 0;
			continue;
		}
		sc->nsrc++;
	}
	for (int i = 0; rc == 0 && i < sc->nsrc; i++) {
		if (i == 0) {
			for (int k = 1; k < sc->nsrc; k++)
				src_prefetch(&sc->src[k], 0);
			for (int k = 1; k < sc->nsrc; k++) /* their entries are on the way */
				src_prefetch(&sc->src[k], 1);
		}
		if ((rc = ts__src_next(&sc->src[i])) < 0)
			break;
		if (rc == 1)
			sc->heap[sc->nheap++] = i;
		rc = 0;
	}
	if (rc < 0) {
		ts__scan_close(sc);
		return rc;
	}
	for (int i = sc->nheap / 2 - 1; i >= 0; i--)
		sift_down_as(sc, i, s->replaced);
	sc->runner = RUNNER_UNKNOWN;
	return 0;
}

/* ---- resolving equal keys (snapshots with replaced rows only) ---- */

/* Whether heap entries a and b hold rows (not summaries) of equal keys. */
static int same_row_key(const ts__scan *sc, int a, int b)
{
	const ts__src *x = &sc->src[a], *y = &sc->src[b];
	return !x->summary && !y->summary && x->klen == y->klen &&
	       memcmp(x->key, y->key, x->klen) == 0;
}

/* The heap's top holds the newest row of its key (ties go to the newer
 * stream) and the runner-up a row of the same key: advance every other
 * stream whose row has that key, so that only the top's is returned.
 * Returns 0 or an error of ts__src_next. */
static int resolve_top(ts__scan *sc)
{
	int w = sc->heap[0];
	/* take the winner out, skip the others' rows of its key, put it back
	 * on top (its key now comes before every other head) */
	sc->heap[0] = sc->heap[--sc->nheap];
	sift_down_as(sc, 0, 1);
	while (sc->nheap > 0 && same_row_key(sc, w, sc->heap[0])) {
		int rc = ts__src_next(&sc->src[sc->heap[0]]);
		if (rc < 0)
			return rc;
		if (rc == 0)
			sc->heap[0] = sc->heap[--sc->nheap];
		sift_down_as(sc, 0, 1);
	}
	int i = sc->nheap++;
	for (; i > 0; i = (i - 1) / 2) /* up to the root */
		sc->heap[i] = sc->heap[(i - 1) / 2];
	sc->heap[0] = w;
	return 0;
}

/* The stream that comes next after the heap's top in a snapshot
 * with replaced rows, or -1. */
static int runner_up_replaced(const ts__scan *sc)
{
	if (sc->nheap < 2)
		return -1;
	if (sc->nheap == 2 || before_as(sc, sc->heap[1], sc->heap[2], 1))
		return sc->heap[1];
	return sc->heap[2];
}

/* ts__scan_next of a snapshot with replaced rows: the runner-up trick of the other
 * path, with one key comparison per row telling both whether the heap
 * needs reordering and whether the top's key is shadowed elsewhere (only
 * the runner-up can have it too). */
static int next_replaced(ts__scan *sc, const ts__src **out)
{
	if (sc->last >= 0) {
		int rc = ts__src_next(&sc->src[sc->last]);
		sc->last = -1;
		if (rc < 0)
			return rc;
		if (rc == 0) {
			sc->heap[0] = sc->heap[--sc->nheap];
			sift_down_as(sc, 0, 1);
			sc->runner = RUNNER_UNKNOWN;
		}
	}
	if (sc->nheap == 0)
		return 0;
	for (;;) {
		if (sc->runner == RUNNER_UNKNOWN)
			sc->runner = runner_up_replaced(sc);
		if (sc->runner < 0)
			break;
		const ts__src *x = &sc->src[sc->heap[0]], *y = &sc->src[sc->runner];
		int c = ts__key_cmp(x->key, x->klen, y->key, y->klen);
		if (sc->desc ? c > 0 : c < 0)
			break; /* the top comes first and alone */
		if (c == 0 && ts__newer(x->vlo, x->vhi, y->vlo, y->vhi)) {
			if (!x->summary && !y->summary) {
				int rc = resolve_top(sc);
				if (rc < 0)
					return rc;
				sc->runner = RUNNER_UNKNOWN;
			}
			break;
		}
		sift_down_as(sc, 0, 1);
		sc->runner = RUNNER_UNKNOWN;
	}
	sc->last = sc->heap[0];
	*out = &sc->src[sc->last];
	return 1;
}

/*
 * The next row of tablet stream src when it is the plain step that
 * tablet_next would take: the row after the current one in the loaded
 * block, before the range's far end (located: not far_lazy), with no
 * tombstone meeting the block, no summary rule, and the row's ts inside
 * the range's interval.  Returns 1 with the row made current, else 0
 * with src untouched: tablet_next then decides (the block's end, the
 * far end's search, a hidden or skipped row, a malformed key).  A
 * one-series range spends most of its rows here, past four calls.
 */
static int plain_next(ts__src *src)
{
	if (!src->tab || src->blk < 0 || src->far_lazy || src->nbtombs || src->rule ||
	    (src->desc ? src->pos <= src->stop : src->pos >= src->stop))
		return 0;
	const ts__cblock *cb = src->cb;
	const unsigned char *row = cb->raw.data + cb->rows[src->pos].off;
	size_t len = cb->rows[src->pos].len, klen;
	const void *key;
	ts_reader r;
	ts__reader_init(&r, row, len);
	ts__get_bytes(&r, &key, &klen);
	if (r.bad || klen < 8)
		return 0;
	if (!src->time_inside) {
		int64_t ts = ts__key_ts(key, klen);
		if (ts < src->range->tmin || ts > src->range->tmax)
			return 0;
	}
	src->row = row;
	src->rowlen = len;
	src->key = key;
	src->klen = klen;
	src->scanned++;
	src->pos += src->desc ? -1 : 1;
	return 1;
}

int ts__scan_next(ts__scan *sc, const ts__src **out)
{
	*out = NULL;
	if (sc->snap.replaced)
		return next_replaced(sc, out);
	/* one stream left: no merge, and its usual step without the calls */
	if (sc->nheap == 1 && sc->last >= 0 && plain_next(&sc->src[sc->last])) {
		*out = &sc->src[sc->last];
		return 1;
	}
	if (sc->last >= 0) {
		int rc = ts__src_next(&sc->src[sc->last]);
		sc->last = -1;
		if (rc < 0)
			return rc;
		if (rc == 0)
			sc->heap[0] = sc->heap[--sc->nheap];
		if (rc == 1 && sc->runner == RUNNER_UNKNOWN)
			sc->runner = runner_up(sc);
		if (rc == 0 || (sc->runner >= 0 && !before(sc, sc->heap[0], sc->runner))) {
			sift_down(sc, 0);
			sc->runner = RUNNER_UNKNOWN;
		}
	}
	if (sc->nheap == 0)
		return 0;
	sc->last = sc->heap[0];
	*out = &sc->src[sc->last];
	return 1;
}

void ts__scan_counts(const ts__scan *sc, uint64_t *scanned, uint64_t *summarised)
{
	*scanned = sc->stopped_scanned;
	*summarised = sc->stopped_summarised;
	for (int i = 0; i < sc->nsrc; i++) {
		*scanned += sc->src[i].scanned;
		*summarised += sc->src[i].summarised;
	}
}

void ts__scan_stop(ts__scan *sc)
{
	uint64_t scanned, summarised;
	ts__scan_counts(sc, &scanned, &summarised);
	sc->stopped_scanned = scanned;
	sc->stopped_summarised = summarised;
	for (int i = 0; sc->src && i < sc->nsrc; i++)
		ts__src_free(&sc->src[i]);
	free(sc->src);
	free(sc->heap);
	sc->src = NULL;
	sc->heap = NULL;
	sc->nsrc = sc->nheap = 0;
	sc->last = -1;
	sc->runner = RUNNER_UNKNOWN;
}

void ts__scan_close(ts__scan *sc)
{
	ts__scan_stop(sc);
	if (sc->snap.table)
		ts__snapshot_release(&sc->snap);
}
