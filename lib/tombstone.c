/*
 * tombstone.c -- tombstones (tombstone.h): the box test, the log record
 * and its chain, the DESCRIPTOR record, selecting the tombstones that
 * may hide rows of one source (by a pass over a list, or through an
 * index by key), and the views of the tombstones in force that tablet
 * sets cache for snapshots.
 *
 * The box test compares whole encoded keys, as a range does (range.c):
 * the bounds a delete was given (a prefix, bounds on leading columns)
 * became byte bounds on the whole key when ts_delete built its range
 * with the code queries use, so a tombstone hides exactly the rows a
 * query with the same selection returns.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "key.h"
#include "tslimits.h"
#include "tombstone.h"

static int above_lo(const ts__tomb *t, const void *k, size_t len)
{
	if (!(t->flags & TS_TOMB_LO))
		return 1;
	int c = ts__key_cmp(k, len, t->lo, t->lolen);
	return c > 0 || (c == 0 && !(t->flags & TS_TOMB_LO_STRICT));
}

static int below_hi(const ts__tomb *t, const void *k, size_t len)
{
	if (!(t->flags & TS_TOMB_HI))
		return 1;
	int c = ts__key_cmp(k, len, t->hi, t->hilen);
	return c < 0 || (c == 0 && !(t->flags & TS_TOMB_HI_STRICT));
}

int ts__tomb_covers(const ts__tomb *t, const void *key, size_t klen)
{
	int64_t ts = ts__key_ts(key, klen);
	return ts >= t->tmin && ts <= t->tmax && above_lo(t, key, klen) && below_hi(t, key, klen);
}

int ts__tomb_passed(const ts__tomb *t, const void *key, size_t klen, int desc)
{
	return desc ? !above_lo(t, key, klen) : !below_hi(t, key, klen);
}

int ts__tomb_meets(const ts__tomb *t, const void *first, size_t flen, const void *last,
                   size_t llen, int64_t min_ts, int64_t max_ts)
{
	if (max_ts < t->tmin || min_ts > t->tmax)
		return 0;
	if (last && !above_lo(t, last, llen))
		return 0;
	if (first && !below_hi(t, first, flen))
		return 0;
	return 1;
}

int ts__tomb_copy(ts__tomb *dst, const ts__tomb *src)
{
	*dst = *src;
	dst->mem = NULL;
	dst->lo = dst->hi = NULL;
	size_t n = (size_t)src->lolen + src->hilen;
	if (!(dst->mem = malloc(n ? n : 1)))
		return ts__fail(TS_ENOMEM, "out of memory");
	if (src->lolen)
		memcpy(dst->mem, src->lo, src->lolen);
	if (src->hilen)
		memcpy(dst->mem + src->lolen, src->hi, src->hilen);
	dst->lo = dst->mem;
	dst->hi = dst->mem + src->lolen;
	return 0;
}

void ts__tomb_free(ts__tomb *t)
{
	free(t->mem);
	t->mem = NULL;
}

void ts__tombs_free(ts__tomb *t, int n)
{
	for (int i = 0; t && i < n; i++)
		ts__tomb_free(&t[i]);
	free(t);
}

/* ---- the log record ---- */

size_t ts__tomb_log_size(const ts__tomb *t)
{
	return TS_TOMB_FIXED + (size_t)t->lolen + t->hilen;
}

void ts__tomb_log_write(unsigned char *p, const ts__tomb *t, ts__lsn prev, ts__lsn batch)
{
	ts__store_u32(p + TS_TOMB_OFF_MAGIC, TS_TOMB_MAGIC);
	ts__store_u32(p + TS_TOMB_OFF_LEN, (uint32_t)ts__tomb_log_size(t));
	ts__store_u64(p + TS_TOMB_OFF_PREV, prev);
	ts__store_u64(p + TS_TOMB_OFF_BATCH, batch);
	ts__store_u64(p + TS_TOMB_OFF_TMIN, (uint64_t)t->tmin);
	ts__store_u64(p + TS_TOMB_OFF_TMAX, (uint64_t)t->tmax);
	ts__store_u32(p + TS_TOMB_OFF_FLAGS, t->flags);
	ts__store_u32(p + TS_TOMB_OFF_LOLEN, t->lolen);
	ts__store_u32(p + TS_TOMB_OFF_HILEN, t->hilen);
	ts__store_u32(p + TS_TOMB_OFF_ZERO, 0);
	if (t->lolen)
		memcpy(p + TS_TOMB_FIXED, t->lo, t->lolen);
	if (t->hilen)
		memcpy(p + TS_TOMB_FIXED + t->lolen, t->hi, t->hilen);
}

/* Whether the bounds' lengths agree with the flags: a bound present has
 * 1 to TS_KEY_MAX bytes (a whole key, or leading columns of one), an
 * absent one none and no strictness. */
static int bounds_sound(uint32_t flags, uint32_t lolen, uint32_t hilen)
{
	if (flags & ~TS_TOMB_FLAGS_ALL)
		return 0;
	if (!(flags & TS_TOMB_LO) ? lolen != 0 || (flags & TS_TOMB_LO_STRICT)
	                          : lolen == 0 || lolen > TS_KEY_MAX)
		return 0;
	if (!(flags & TS_TOMB_HI) ? hilen != 0 || (flags & TS_TOMB_HI_STRICT)
	                          : hilen == 0 || hilen > TS_KEY_MAX)
		return 0;
	return 1;
}

#define BAD(why)                                                                              \
	return ts__fail(TS_ECORRUPT, "tombstone record at %" PRIu64 ": %s", lsn, why)

int ts__tomb_log_read(ts__log *log, ts__lsn lsn, ts__lsn floor, ts__lsn commit, ts__tomb *out,
                      ts__lsn *prev)
{
	uint64_t seg = ts__log_seg_size(log), left = seg - (lsn & (seg - 1));
	memset(out, 0, sizeof *out);
	if (lsn % 8 || lsn < floor || lsn >= commit)
		BAD("outside the log the commit names");
	if (left < TS_TOMB_FIXED)
		BAD("crosses the end of its segment");
	const unsigned char *p = ts__log_ptr(log, lsn);
	if (!p)
		BAD("its segment is gone");
	uint32_t len = ts__load_u32(p + TS_TOMB_OFF_LEN);
	out->flags = ts__load_u32(p + TS_TOMB_OFF_FLAGS);
	out->lolen = ts__load_u32(p + TS_TOMB_OFF_LOLEN);
	out->hilen = ts__load_u32(p + TS_TOMB_OFF_HILEN);
	if (ts__load_u32(p + TS_TOMB_OFF_MAGIC) != TS_TOMB_MAGIC)
		BAD("bad magic");
	if (!bounds_sound(out->flags, out->lolen, out->hilen) ||
	    len != TS_TOMB_FIXED + (uint64_t)out->lolen + out->hilen || len > left ||
	    ts__load_u32(p + TS_TOMB_OFF_ZERO) != 0)
		BAD("malformed");
	out->tmin = (int64_t)ts__load_u64(p + TS_TOMB_OFF_TMIN);
	out->tmax = (int64_t)ts__load_u64(p + TS_TOMB_OFF_TMAX);
	out->lo = out->lolen ? p + TS_TOMB_FIXED : NULL;
	out->hi = out->hilen ? p + TS_TOMB_FIXED + out->lolen : NULL;
	out->lsn = lsn;
	*prev = ts__load_u64(p + TS_TOMB_OFF_PREV);
	if (*prev >= lsn)
		BAD("the previous record of the chain is not before it");
	/* the version: the commit record ending the batch it names */
	ts__lsn batch = ts__load_u64(p + TS_TOMB_OFF_BATCH);
	const unsigned char *h = batch >= floor && batch < lsn && batch % 8 == 0
	                         ? ts__log_ptr(log, batch) : NULL;
	if (!h || ts__load_u32(h) != TS_BATCH_MAGIC)
		BAD("it names no batch before it");
	uint64_t body = ts__load_u64(h + 8);
	if (body > commit || batch + TS_BATCH_HEADER_SIZE + body > commit ||
	    batch + TS_BATCH_HEADER_SIZE + body <= lsn)
		BAD("its batch does not end between it and the commit naming it");
	out->version = batch + TS_BATCH_HEADER_SIZE + body;
	return 0;
}

int ts__tomb_chain(ts__log *log, ts__lsn root, ts__lsn since, ts__lsn floor, ts__lsn commit,
                   ts__tomb **v, int *n, int *cap)
{
	ts__lsn prev;
	for (ts__lsn at = root; at && at > since && at >= floor; at = prev) {
		if (*n == *cap) {
			int c = *cap ? *cap * 2 : 8;
			ts__tomb *g = realloc(*v, (size_t)c * sizeof *g);
			if (!g)
				return ts__fail(TS_ENOMEM, "out of memory");
			*v = g;
			*cap = c;
		}
		int rc = ts__tomb_log_read(log, at, floor, commit, &(*v)[*n], &prev);
		if (rc < 0)
			return rc;
		if (*n > 0 && (*v)[*n].version >= (*v)[*n - 1].version)
			return ts__fail(TS_ECORRUPT, "tombstone record at %" PRIu64 ": its version is not "
			                "older than the next one's", at);
		commit = (*v)[*n].version; /* the older ones end before */
		(*n)++;
	}
	return 0;
}

/* ---- the DESCRIPTOR record ---- */

void ts__tomb_encode(ts_buf *b, const ts__tomb *t)
{
	ts_buf rec;
	ts__buf_init(&rec);
	ts__put_u64(&rec, t->version);
	ts__put_u64(&rec, (uint64_t)t->tmin);
	ts__put_u64(&rec, (uint64_t)t->tmax);
	ts__put_u32(&rec, t->flags);
	ts__put_u32(&rec, t->lolen);
	ts__put_u32(&rec, t->hilen);
	if (t->lolen)
		ts__put(&rec, t->lo, t->lolen);
	if (t->hilen)
		ts__put(&rec, t->hi, t->hilen);
	b->oom |= rec.oom;
	ts__put_bytes(b, rec.data, rec.len);
	ts__buf_free(&rec);
}

int ts__tomb_decode(ts_reader *r, int i, ts__tomb *out)
{
	const void *p;
	size_t len;
	ts_reader rec;
	ts__tomb t;
	memset(out, 0, sizeof *out);
	memset(&t, 0, sizeof t);
	ts__get_bytes(r, &p, &len);
	if (r->bad)
		return ts__fail(TS_ECORRUPT, "tombstone record %d is truncated", i);
	ts__reader_init(&rec, p, len);
	t.version = ts__get_u64(&rec);
	t.tmin = (int64_t)ts__get_u64(&rec);
	t.tmax = (int64_t)ts__get_u64(&rec);
	t.flags = ts__get_u32(&rec);
	t.lolen = ts__get_u32(&rec);
	t.hilen = ts__get_u32(&rec);
	if (rec.bad || !bounds_sound(t.flags, t.lolen, t.hilen) ||
	    ts__reader_left(&rec) != (size_t)t.lolen + t.hilen || t.version == 0)
		return ts__fail(TS_ECORRUPT, "tombstone record %d is malformed", i);
	t.lo = t.lolen ? ts__get_raw(&rec, t.lolen) : NULL;
	t.hi = t.hilen ? ts__get_raw(&rec, t.hilen) : NULL;
	return ts__tomb_copy(out, &t);
}

/* ---- lists ---- */

int ts__tombs_have(const ts__tomb *v, int n, uint64_t version)
{
	for (int i = 0; i < n; i++)
		if (v[i].version == version)
			return 1;
	return 0;
}

int ts__tombs_select(const ts__tomb *v, int n, uint64_t vmin, const void *first, size_t flen,
                     const void *last, size_t llen, int64_t min_ts, int64_t max_ts,
                     const ts__tomb **out)
{
	int k = 0;
	for (int i = 0; i < n; i++)
		if (v[i].version > vmin && ts__tomb_meets(&v[i], first, flen, last, llen, min_ts, max_ts))
			out[k++] = &v[i];
	return k;
}

/* ---- the index by key ---- */

/* Order of lower bounds: none first, then by key (strictness ignored:
 * the walk tests each candidate exactly). */
static int lo_order(const void *a, const void *b)
{
	const ts__tomb *x = *(const ts__tomb *const *)a, *y = *(const ts__tomb *const *)b;
	int hx = (x->flags & TS_TOMB_LO) != 0, hy = (y->flags & TS_TOMB_LO) != 0;
	if (!hx || !hy)
		return hx - hy;
	return ts__key_cmp(x->lo, x->lolen, y->lo, y->lolen);
}

/* The bit of bucket a (a key head's first word) in an index's set. */
static unsigned bucket_bit(uint64_t a)
{
	return (unsigned)((a * UINT64_C(0x9E3779B97F4A7C15)) >> 52) % TS_TOMB_BUCKET_BITS;
}

static void sorted_free(ts__tomb_sorted *x)
{
	free(x->by_lo);
	free(x->reach);
	free(x->lo_head);
	free(x->nohi);
	memset(x, 0, sizeof *x);
}

/* Sort v[0..n) into x (by_lo is handed over, n pointers, and then owned). */
static int sorted_build(ts__tomb_sorted *x, const ts__tomb **by_lo, int n)
{
	memset(x, 0, sizeof *x);
	x->by_lo = by_lo;
	if (!n)
		return 0;
	if (!(x->reach = malloc((size_t)n * sizeof *x->reach)) ||
	    !(x->lo_head = malloc(2 * (size_t)n * sizeof *x->lo_head)) ||
	    !(x->nohi = malloc((size_t)n * sizeof *x->nohi))) {
		sorted_free(x);
		return ts__fail(TS_ENOMEM, "out of memory");
	}
	x->reach_head = x->lo_head + n;
	x->n = n;
	qsort(x->by_lo, (size_t)n, sizeof *x->by_lo, lo_order);
	const ts__tomb *far = NULL;
	for (int i = 0; i < n; i++) {
		const ts__tomb *t = x->by_lo[i];
		if (t->flags & TS_TOMB_LO)
			x->lo_head[i] = ts__key_head_of(t->lo, t->lolen);
		else
			x->nolo = i + 1, x->lo_head[i] = (ts__key_head){0, 0};
		if (!(t->flags & TS_TOMB_HI))
			x->nohi[x->nnohi++] = i;
		else if (!far || ts__key_cmp(t->hi, t->hilen, far->hi, far->hilen) > 0)
			far = t;
		x->reach[i] = far;
		x->reach_head[i] = far ? ts__key_head_of(far->hi, far->hilen) : (ts__key_head){0, 0};
	}
	return 0;
}

/* Add t to out[0..room) as the *k-th selected. */
static void selected(const ts__tomb *t, const ts__tomb **out, int room, int *k)
{
	if (*k < room)
		out[*k] = t;
	++*k;
}

/* The selection of ts__tombs_select_index from one part; *k counts. */
static void sorted_select(const ts__tomb_sorted *x, uint64_t vmin, const void *first, size_t flen,
                          const void *last, size_t llen, int64_t min_ts, int64_t max_ts,
                          const ts__tomb **out, int room, int *k)
{
	/* p: how many have no lower bound above last, by the heads alone (a
	 * tie counted as not above: p may then take in a few whose bound
	 * is, which the walk tests and leaves -- it needs every candidate
	 * among by_lo[0..p), no more) */
	int p = x->n;
	if (last) {
		ts__key_head lh = ts__key_head_of(last, llen);
		int lo = x->nolo, hi = x->n;
		while (lo < hi) {
			int mid = lo + (hi - lo) / 2;
			if (ts__key_head_cmp(x->lo_head[mid], lh) <= 0)
				lo = mid + 1;
			else
				hi = mid;
		}
		p = lo;
	}
	ts__key_head fh = first ? ts__key_head_of(first, flen) : (ts__key_head){0, 0};
	/* the bounded ones down from p - 1, while an upper bound left may
	 * reach first; those without one are tested apart (one of them at
	 * by_lo[0] -- a delete of every key -- would otherwise keep every
	 * walk going to the bottom) */
	for (int i = p - 1; i >= 0; i--) {
		const ts__tomb *r = x->reach[i];
		if (first) {
			if (!r)
				break; /* by_lo[0..i] have no upper bound: tested below */
			int c = ts__key_head_cmp(x->reach_head[i], fh);
			if (c == 0)
				c = ts__key_cmp(r->hi, r->hilen, first, flen);
			if (c < 0)
				break; /* no upper bound of by_lo[0..i] reaches first */
		}
		const ts__tomb *t = x->by_lo[i];
		if ((t->flags & TS_TOMB_HI) && t->version > vmin &&
		    ts__tomb_meets(t, first, flen, last, llen, min_ts, max_ts))
			selected(t, out, room, k);
	}
	for (int j = 0; j < x->nnohi && x->nohi[j] < p; j++) {
		const ts__tomb *t = x->by_lo[x->nohi[j]];
		if (t->version > vmin && ts__tomb_meets(t, first, flen, last, llen, min_ts, max_ts))
			selected(t, out, room, k);
	}
}

int ts__tomb_index_build(ts__tomb_index *x, const ts__tomb *v, int n)
{
	memset(x, 0, sizeof *x);
	if (!n)
		return 0;
	const ts__tomb **narrow = malloc((size_t)n * sizeof *narrow);
	const ts__tomb **wide = malloc((size_t)n * sizeof *wide);
	int nn = 0, nw = 0;
	if (!narrow || !wide) {
		free(narrow);
		free(wide);
		return ts__fail(TS_ENOMEM, "out of memory");
	}
	for (int i = 0; i < n; i++) {
		const ts__tomb *t = &v[i];
		uint64_t a = 0;
		int one = (t->flags & TS_TOMB_LO) && (t->flags & TS_TOMB_HI) &&
		          (a = ts__key_head_of(t->lo, t->lolen).hi) == ts__key_head_of(t->hi, t->hilen).hi;
		if (one) {
			narrow[nn++] = t;
			unsigned bit = bucket_bit(a);
			x->buckets[bit / 64] |= UINT64_C(1) << (bit % 64);
		} else {
			wide[nw++] = t;
		}
	}
	int rc = sorted_build(&x->narrow, narrow, nn);
	if (rc < 0) {
		free(wide);
		return rc;
	}
	if ((rc = sorted_build(&x->wide, wide, nw)) < 0)
		sorted_free(&x->narrow);
	return rc;
}

void ts__tomb_index_free(ts__tomb_index *x)
{
	sorted_free(&x->narrow);
	sorted_free(&x->wide);
}

int ts__tombs_select_index(const ts__tomb_index *x, uint64_t vmin, const void *first, size_t flen,
                           const void *last, size_t llen, int64_t min_ts, int64_t max_ts,
                           const ts__tomb **out, int room)
{
	int k = 0;
	if (x->wide.n)
		sorted_select(&x->wide, vmin, first, flen, last, llen, min_ts, max_ts, out, room, &k);
	if (!x->narrow.n)
		return k;
	/* keys [first, last] of one bucket meet no narrow tombstone of
	 * another: every key of a box or a read begins with its bucket */
	if (first && last) {
		uint64_t a = ts__key_head_of(first, flen).hi;
		unsigned bit = bucket_bit(a);
		if (a == ts__key_head_of(last, llen).hi && !(x->buckets[bit / 64] >> (bit % 64) & 1))
			return k;
	}
	sorted_select(&x->narrow, vmin, first, flen, last, llen, min_ts, max_ts, out, room, &k);
	return k;
}

/* ---- views ---- */

int ts__tomb_view_build(ts__log *log, ts__lsn root, ts__lsn since, ts__lsn floor, ts__lsn commit,
                        const ts__tomb *set, int nset, ts__tomb_view **out)
{
	*out = NULL;
	ts__tomb *chain = NULL;
	int nchain = 0, cap = 0, rc = 0;
	if (root && (rc = ts__tomb_chain(log, root, since, floor, commit, &chain, &nchain, &cap)) < 0) {
		free(chain);
		return rc;
	}
	ts__tomb_view *v = calloc(1, sizeof *v);
	if (!v || !(v->tombs = calloc((size_t)(nchain + nset) + 1, sizeof *v->tombs))) {
		free(v);
		free(chain);
		return ts__fail(TS_ENOMEM, "out of memory");
	}
	v->refs = 1;
	v->root = root;
	v->since = since;
	for (int i = 0; rc == 0 && i < nchain; i++)
		if ((rc = ts__tomb_copy(&v->tombs[v->ntombs], &chain[i])) == 0)
			v->ntombs++;
	for (int i = 0; rc == 0 && i < nset; i++)
		if (!ts__tombs_have(chain, nchain, set[i].version) &&
		    (rc = ts__tomb_copy(&v->tombs[v->ntombs], &set[i])) == 0)
			v->ntombs++;
	free(chain);
	if (rc == 0)
		rc = ts__tomb_index_build(&v->index, v->tombs, v->ntombs);
	if (rc < 0) {
		v->refs = 1;
		ts__tomb_view_put(v);
		return rc;
	}
	*out = v;
	return 0;
}

void ts__tomb_view_put(ts__tomb_view *v)
{
	if (!v || __atomic_sub_fetch(&v->refs, 1, __ATOMIC_ACQ_REL) != 0)
		return;
	ts__tomb_index_free(&v->index);
	ts__tombs_free(v->tombs, v->ntombs);
	free(v);
}
