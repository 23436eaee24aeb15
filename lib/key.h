/*
 * key.h -- the order-preserving ("memcomparable") encoding of primary keys.
 *
 * Two encoded keys compare with one memcmp in exactly the order of their
 * typed values, column by column; a key prefix (the first n columns) is a
 * byte prefix of the full key; the ts column, always last, is the last 8
 * bytes.  docs/key-format.md has the byte tables.
 */
#ifndef TS_KEY_H
#define TS_KEY_H

#include <string.h>

#include "buf.h"
#include "schema.h"

/* Canonical double in keys: -0.0 becomes +0.0 and every NaN the positive
 * quiet NaN, which sorts after +infinity. */
double ts__key_canonical_double(double d);

/* Append the encoding of one value (by its own type) to b. */
void ts__key_put(ts_buf *b, const ts_value *v);

/*
 * Append the encoding of the first n key columns, vals[0..n) in key order
 * and already of the columns' types (see ts__value_check), to b.
 * Returns 0, TS_ETOOBIG when the key passes TS_KEY_MAX, TS_ENOMEM.
 */
int ts__key_encode(const ts__schema *s, const ts_value *vals, int n, ts_buf *b);

/*
 * Decode the first n columns of key[0..len) into vals[0..n).  Strings and
 * blobs without NUL bytes point into key; others are unescaped into
 * scratch, which is reset first and must live as long as vals.
 * *used (may be NULL) receives the bytes consumed.
 * Returns 0, TS_ECORRUPT for a malformed key, TS_ENOMEM.
 */
int ts__key_decode(const ts__schema *s, const void *key, size_t len, int n,
                   ts_value *vals, ts_buf *scratch, size_t *used);

/* Bytes taken by the first n columns of a valid key, or -1 if malformed
 * (a length's sentinel, no message recorded: scans ask it of every block
 * and the caller decides whether malformed is an error, error.h). */
long ts__key_prefix_len(const ts__schema *s, const void *key, size_t len, int n);

/* The ts of a full encoded key (its last 8 bytes). */
static inline int64_t ts__key_ts(const void *key, size_t len)
{
	return (int64_t)(ts__load_be64((const unsigned char *)key + len - 8) ^
	                 (UINT64_C(1) << 63));
}

/* Append ts encoded as a key's last column: ts__key_put of a timestamp
 * without the type's dispatch (a range's bounds, a resume key). */
static inline void ts__key_put_ts(ts_buf *b, int64_t ts)
{
	unsigned char f[8];
	ts__store_be64(f, (uint64_t)ts ^ (UINT64_C(1) << 63));
	ts__put(b, f, 8);
}

/* Describe a full key for messages: ("n1", 7, 2026-11-21T10:00:00Z).
 * Strings are quoted with escapes, blobs hex, doubles %.17g. */
void ts__key_describe(const ts__schema *s, const void *key, size_t len,
                      char *buf, size_t size);

/* The leading 16 bytes of a key, zero-padded, as two big-endian words.
 * When two keys' heads differ, the keys compare the same way
 * (ts__key_cmp): the padding is 0, below every byte, and a key shorter
 * than 16 bytes that agrees with a longer one up to its end is a prefix
 * of it, so first.  Kept side by side in arrays (a tablet's blocks, a
 * tombstone index), heads let a search compare a few cache lines of
 * words instead of reaching into each key's bytes. */
typedef struct ts__key_head {
	uint64_t hi, lo;
} ts__key_head;

/* The head of key[0..len) (NULL when len is 0). */
static inline ts__key_head ts__key_head_of(const void *key, size_t len)
{
	if (len >= 16) /* the usual key: no copy to pad */
		return (ts__key_head){ts__load_be64(key), ts__load_be64((const unsigned char *)key + 8)};
	unsigned char b[16] = {0};
	if (len)
		memcpy(b, key, len);
	return (ts__key_head){ts__load_be64(b), ts__load_be64(b + 8)};
}

/* The order of two keys of heads x and y when the heads decide it; 0:
 * they tie, and the keys must be compared. */
static inline int ts__key_head_cmp(ts__key_head x, ts__key_head y)
{
	if (x.hi != y.hi)
		return x.hi < y.hi ? -1 : 1;
	return (x.lo > y.lo) - (x.lo < y.lo);
}

/* Compare two encoded keys (or prefixes): <0, 0, >0 as memcmp, with a
 * shorter prefix first.  An empty one may be NULL (an empty bound's
 * buffer), which memcmp must not be given even for 0 bytes. */
static inline int ts__key_cmp(const void *a, size_t alen, const void *b, size_t blen)
{
	/* keys are short (tens of bytes): eight bytes at a time, big-endian,
	 * beats a call to memcmp */
	const unsigned char *x = a, *y = b;
	size_t n = alen < blen ? alen : blen;
	for (; n >= 8; n -= 8, x += 8, y += 8) {
		uint64_t u = ts__load_be64(x), v = ts__load_be64(y);
		if (u != v)
			return u < v ? -1 : 1;
	}
	for (; n > 0; n--, x++, y++)
		if (*x != *y)
			return *x < *y ? -1 : 1;
	return (alen > blen) - (alen < blen);
}

#endif
