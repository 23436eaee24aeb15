/*
 * range.c -- building a range (range.h): the key bounds a query's
 * user-level bounds become, the ts interval, and the tests a stream
 * makes of a key against them.
 *
 * A bound on the leading columns becomes a byte bound on the whole
 * encoded key, so that both directions of a scan compare whole keys
 * only: "first columns >= p" is k >= p, "< p" is k < p, and "> p" and
 * "<= p" go through p's successor (ts__key_successor), the first byte
 * string past every key starting with p.  Narrowing keeps the tighter of
 * two bounds (the stricter of two equal ones) and marks the range empty
 * as soon as nothing can match.  The stem is set by the cursor that
 * builds the range (query.c), not here.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "buf.h"
#include "error.h"
#include "key.h"
#include "range.h"

void ts__range_init(ts__range *r)
{
	memset(r, 0, sizeof *r);
	ts__buf_init_in(&r->lo, r->lo_mem, sizeof r->lo_mem);
	ts__buf_init_in(&r->hi, r->hi_mem, sizeof r->hi_mem);
	ts__buf_init_in(&r->stem, r->stem_mem, sizeof r->stem_mem);
	r->tmin = INT64_MIN;
	r->tmax = INT64_MAX;
}

void ts__range_free(ts__range *r)
{
	ts__buf_free(&r->lo);
	ts__buf_free(&r->hi);
	ts__buf_free(&r->stem);
}

static void set_bound(ts_buf *b, const void *key, size_t len)
{
	b->len = 0;
	ts__put(b, key, len);
}

static void check_empty(ts__range *r)
{
	if (r->has_lo && r->has_hi) {
		int c = ts__key_cmp(r->lo.data, r->lo.len, r->hi.data, r->hi.len);
		if (c > 0 || (c == 0 && (r->lo_strict || r->hi_strict)))
			r->empty = 1;
	}
	if (r->tmin > r->tmax)
		r->empty = 1;
}

/* Narrow one end of r to key when key is tighter: sign 1 for the lower
 * end (a greater key is tighter), -1 for the upper. */
static void narrow(ts__range *r, ts_buf *bound, int *has, int *strict_now, const void *key,
                   size_t len, int strict, int sign)
{
	int c = *has ? sign * ts__key_cmp(key, len, bound->data, bound->len) : 1;
	if (c > 0) {
		set_bound(bound, key, len);
		*strict_now = strict;
		*has = 1;
	} else if (c == 0) {
		*strict_now |= strict;
	}
	check_empty(r);
}

void ts__range_lower(ts__range *r, const void *key, size_t len, int strict)
{
	narrow(r, &r->lo, &r->has_lo, &r->lo_strict, key, len, strict, 1);
}

void ts__range_upper(ts__range *r, const void *key, size_t len, int strict)
{
	narrow(r, &r->hi, &r->has_hi, &r->hi_strict, key, len, strict, -1);
}

int ts__key_successor(ts_buf *p)
{
	while (p->len > 0 && p->data[p->len - 1] == 0xFF)
		p->len--;
	if (p->len == 0)
		return -1;
	p->data[p->len - 1]++;
	return 0;
}

/*
 * Bounds on leading columns.  A prefix sorts before every key it starts
 * (ts__key_cmp), so "first columns >= p" is simply k >= p, and "first
 * columns < p" is k < p.  The other two need the keys starting with p
 * skipped or included whole: the successor of p is the first byte string
 * past all of them.  (Fields are self-delimiting, so no key's first
 * columns can be a proper prefix of p's encoding or the reverse.)
 */
/* The successor of p[0..len) into s (initialised here in mem, of
 * TS__SHORT_KEY bytes; free it).  Returns 0, -1 when there is none, or
 * TS_ENOMEM (noted in *oom). */
static int successor_of(const void *p, size_t len, ts_buf *s, unsigned char *mem, int *oom)
{
	ts__buf_init_in(s, mem, TS__SHORT_KEY);
	ts__put(s, p, len);
	if (s->oom)
		return *oom = 1, TS_ENOMEM;
	return ts__key_successor(s);
}

void ts__range_lower_cols(ts__range *r, const void *p, size_t len, int strict)
{
	ts_buf s;
	unsigned char mem[TS__SHORT_KEY];
	if (!strict) {
		ts__range_lower(r, p, len, 0);
		return;
	}
	int rc = successor_of(p, len, &s, mem, &r->lo.oom);
	if (rc == 0)
		ts__range_lower(r, s.data, s.len, 0);
	else if (rc == -1)
		r->empty = 1; /* nothing is past every key starting with p */
	ts__buf_free(&s);
}

void ts__range_upper_cols(ts__range *r, const void *p, size_t len, int strict)
{
	ts_buf s;
	unsigned char mem[TS__SHORT_KEY];
	if (strict) {
		ts__range_upper(r, p, len, 1);
		return;
	}
	if (successor_of(p, len, &s, mem, &r->hi.oom) == 0) /* none: no upper bound at all */
		ts__range_upper(r, s.data, s.len, 1);
	ts__buf_free(&s);
}

void ts__range_time(ts__range *r, int64_t tmin, int64_t tmax)
{
	if (tmin > r->tmin)
		r->tmin = tmin;
	if (tmax < r->tmax)
		r->tmax = tmax;
	check_empty(r);
}

int ts__range_since(ts__range *r, int64_t tmin)
{
	if (!r->has_stem || r->empty) {
		ts__range_time(r, tmin, INT64_MAX);
		return 0;
	}
	size_t n = r->stem.len;
	if (r->has_lo && r->lo.len == n + 8 && memcmp(r->lo.data, r->stem.data, n) == 0) {
		/* lo is a key of the stem (a latest's, ts__range_prefix): move
		 * its ts, in place, when tmin is past it */
		r->tmin = tmin > r->tmin ? tmin : r->tmin;
		if (ts__key_ts(r->lo.data, r->lo.len) < tmin) {
			ts__store_be64(r->lo.data + n, (uint64_t)tmin ^ (UINT64_C(1) << 63));
			r->lo_strict = 0;
		}
		check_empty(r);
		return 0;
	}
	ts__range_time(r, tmin, INT64_MAX);
	ts_buf k;
	unsigned char mem[TS__SHORT_KEY];
	ts__buf_init_in(&k, mem, sizeof mem);
	ts__put(&k, r->stem.data, n);
	ts__key_put_ts(&k, tmin);
	if (!k.oom)
		ts__range_lower(r, k.data, k.len, 0);
	int oom = k.oom || ts__range_oom(r);
	ts__buf_free(&k);
	return oom ? ts__fail(TS_ENOMEM, "out of memory") : 0;
}

int ts__range_above_lo(const ts__range *r, const void *k, size_t len)
{
	if (!r->has_lo)
		return 1;
	int c = ts__key_cmp(k, len, r->lo.data, r->lo.len);
	return c > 0 || (c == 0 && !r->lo_strict);
}

int ts__range_below_hi(const ts__range *r, const void *k, size_t len)
{
	if (!r->has_hi)
		return 1;
	int c = ts__key_cmp(k, len, r->hi.data, r->hi.len);
	return c < 0 || (c == 0 && !r->hi_strict);
}
