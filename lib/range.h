/*
 * range.h -- what a read asks for: a range of encoded keys and of
 * timestamps, built from a query's bounds before any stream is opened.
 *
 * A range is a pair of bounds on encoded keys (key.h), each inclusive or
 * strict, plus an inclusive ts interval with the TTL folded in.  Every
 * user-level bound (a prefix, a bound on fewer columns than the key, a
 * resume key) becomes such a byte bound: see ts__range_* below.
 *
 * A range is kept apart from the streams that read it (scan.h): the
 * cursors build and narrow ranges (query.c's ts__range_prefix, which
 * aggregate.c uses too) before a stream exists, and the streams only
 * test keys against one (ts__range_above_lo, ts__range_below_hi).
 */
#ifndef TS_RANGE_H
#define TS_RANGE_H

#include <stddef.h>
#include <stdint.h>

#include "buf.h"

/* Room for a key kept beside the buffer that holds it: most keys are
 * shorter (a host name or two and a ts), longer ones go to the heap. */
#define TS__SHORT_KEY 64

/* A range is initialised in place and never copied (its buffers start in
 * its own arrays). */
typedef struct ts__range {
	ts_buf lo, hi;            /* encoded key bounds */
	int has_lo, lo_strict;    /* k >= lo (k > lo when strict) */
	int has_hi, hi_strict;    /* k <= hi (k < hi when strict) */
	int empty;                /* nothing can match */
	int64_t tmin, tmax;       /* ts in [tmin, tmax] */
	ts_buf stem;              /* when every key in range shares it: the key
	                           * but its ts (Bloom filters apply) */
	int has_stem;
	/* where lo, hi and stem start: most keys fit (ts__buf_init_in) */
	unsigned char lo_mem[TS__SHORT_KEY], hi_mem[TS__SHORT_KEY], stem_mem[TS__SHORT_KEY];
} ts__range;

/* Everything, no bound. */
void ts__range_init(ts__range *r);
void ts__range_free(ts__range *r);

/* Narrow to keys >= key (> key when strict); to keys <= key (< key). */
void ts__range_lower(ts__range *r, const void *key, size_t len, int strict);
void ts__range_upper(ts__range *r, const void *key, size_t len, int strict);

/* Narrow to keys whose first columns, encoded as p[0..len), compare
 * >= p (> p when strict): the semantics of a lower bound on leading
 * columns.  ts__range_upper_cols likewise for <= / <. */
void ts__range_lower_cols(ts__range *r, const void *p, size_t len, int strict);
void ts__range_upper_cols(ts__range *r, const void *p, size_t len, int strict);

/* Narrow to ts in [tmin, tmax]. */
void ts__range_time(ts__range *r, int64_t tmin, int64_t tmax);

/* Narrow to ts >= tmin; when the stem is set (every key of the range
 * shares it, so keys order as their ts), the lower key bound too, to the
 * stem's key at tmin: a stream then sees from block and tablet key spans
 * alone that it holds no such row.  Returns 0 or TS_ENOMEM. */
int ts__range_since(ts__range *r, int64_t tmin);

/* Whether key k passes the lower / upper bound. */
int ts__range_above_lo(const ts__range *r, const void *k, size_t len);
int ts__range_below_hi(const ts__range *r, const void *k, size_t len);

/* Allocation failed while building r. */
static inline int ts__range_oom(const ts__range *r)
{
	return r->lo.oom || r->hi.oom || r->stem.oom;
}

/* The smallest byte string greater than every string starting with
 * p[0..len): p with its trailing 0xFF bytes dropped and the last byte
 * left incremented, in place.  Returns 0, or -1 when p is all 0xFF (no
 * such string). */
int ts__key_successor(ts_buf *p);

#endif
