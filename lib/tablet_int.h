/*
 * tablet_int.h -- what the three files of on-disk tablets share:
 * tablet.c (the reader, and what is common), tablet_write.c (the writer)
 * and tablet_check.c (the checker).  No other file includes it: the rest
 * of the library sees tablets through tablet.h alone.
 *
 * The Bloom filter's hashing and a block's statistics are computed the
 * same way by the writer, which stores them, the reader, which tests a
 * key, and the checker, which recomputes them; they are static inline
 * here (they were tablet.c's statics, and run per row or per key), with
 * the two functions of tablet.c the others call.
 *
 * It extends tablet.h, which must be included before it (ts__colstat,
 * ts__tablet), and includes no header of the library itself: tablet.c
 * includes it, so its including tablet.h would be a cycle in the include
 * graph (scripts/include-graph.sh).
 */
#ifndef TS_TABLET_INT_H
#define TS_TABLET_INT_H

#ifndef TS_TABLET_H
#error "tablet_int.h extends tablet.h: include tablet.h first"
#endif

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* The Bloom filter's two hashes of a stem (FNV-1a, then a 64-bit mix). */
static inline uint64_t stem_hash(const unsigned char *p, size_t n)
{
	uint64_t h = 0xcbf29ce484222325u;
	for (size_t i = 0; i < n; i++)
		h = (h ^ p[i]) * 0x100000001b3u;
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdu;
	h ^= h >> 33;
	h *= 0xc4ceb9fe1a85ec53u;
	return h ^ (h >> 33);
}

/* The bits of a stem whose hash is h, in a filter of nbits: bit i is
 * (h1 + i * h2) mod nbits (docs/tablet-format.md), stepped here with two
 * divisions in all instead of one per bit. */
typedef struct bloom_walk {
	uint64_t bit, step, nbits;
} bloom_walk;

static inline bloom_walk bloom_start(uint64_t h, uint32_t nbits)
{
	uint32_t h1 = (uint32_t)h, h2 = (uint32_t)(h >> 32) | 1;
	return (bloom_walk){h1 % nbits, h2 % nbits, nbits};
}

static inline uint32_t bloom_next(bloom_walk *w)
{
	uint32_t bit = (uint32_t)w->bit;
	w->bit += w->step;
	if (w->bit >= w->nbits)
		w->bit -= w->nbits;
	return bit;
}

static inline int is_stat_type(int type)
{
	return type == TS_INT32 || type == TS_INT64 || type == TS_TIMESTAMP || type == TS_DOUBLE;
}

static inline void stat_reset(ts__colstat *st)
{
	memset(st, 0, sizeof *st);
	st->min.type = st->max.type = TS_NONE;
}

static inline void stat_add(ts__colstat *st, const ts_value *v)
{
	if (v->type == TS_DOUBLE) {
		double d = v->v.d;
		if (d != d) /* NaN: not counted */
			return;
		st->dsum += d;
		if (!st->count || d < st->min.v.d)
			st->min = *v;
		if (!st->count || d > st->max.v.d)
			st->max = *v;
	} else {
		st->isum += v->v.i;
		if (!st->count || v->v.i < st->min.v.i)
			st->min = *v;
		if (!st->count || v->v.i > st->max.v.i)
			st->max = *v;
	}
	st->count++;
}

static inline uint64_t value_bits(const ts_value *v)
{
	uint64_t u = 0;
	if (v->type == TS_DOUBLE)
		memcpy(&u, &v->v.d, 8);
	else if (v->type != TS_NONE)
		u = (uint64_t)v->v.i;
	return u;
}

/* ---- tablet.c ---- */

/* Initialise the LZO library once per process.  Returns 0, or TS_EIO
 * when it refuses (a build against a mismatched library). */
int ts__tablet_lzo_ready(void);

/* Fail with TS_ECORRUPT: tablet t's part (e.g. "footer", "block 3") is
 * damaged, for the reason why.  Returns TS_ECORRUPT. */
int ts__tablet_damaged(const ts__tablet *t, const char *part, const char *why);

#endif /* TS_TABLET_INT_H */
