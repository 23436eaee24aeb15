/*
 * buf.h -- growable byte buffers for encoding and bounds-checked readers
 * for decoding the little-endian and varint fields of tsstore's formats.
 *
 * Both carry a sticky failure flag so that a format is written or read as
 * a straight sequence of calls and checked once at the end:
 *
 *     ts__put_u32(&b, n); ts__put_bytes(&b, name, len);
 *     if (b.oom) return TS_ENOMEM;
 *
 *     n = ts__get_u32(&r); ts__get_bytes(&r, &p, &len);
 *     if (r.bad) return TS_ECORRUPT;
 *
 * A reader that ran past its end returns zeros and sets bad; it never
 * reads outside [p, end).
 */
#ifndef TS_BUF_H
#define TS_BUF_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

typedef struct ts_buf {
	unsigned char *data;
	size_t len, cap;
	int oom;  /* an allocation failed; data holds what fitted before */
	int lent; /* data is the caller's storage (ts__buf_init_in), not freed */
} ts_buf;

typedef struct ts_reader {
	const unsigned char *p, *end;
	int bad; /* a read went past end or a varint was malformed */
} ts_reader;

void ts__buf_init(ts_buf *b);
/* A buffer that starts in the caller's storage mem[0..cap) -- an array
 * beside it or on the stack -- and moves to the heap only when it
 * outgrows it: short keys and rows cost no allocation.  mem must outlive
 * the buffer and not move (a struct holding both is not copied). */
void ts__buf_init_in(ts_buf *b, void *mem, size_t cap);
void ts__buf_free(ts_buf *b);
/* Make room for n more bytes.  Returns 0, or TS_ENOMEM with a message
 * (and sets oom) when the buffer cannot grow or oom was already set. */
int ts__buf_reserve(ts_buf *b, size_t n);
void ts__put_slow(ts_buf *b, const void *p, size_t n);
/* Append p[0..n): inline while the buffer has room (every row of a scan
 * copies its key), else growing it. */
static inline void ts__put(ts_buf *b, const void *p, size_t n)
{
	if (n && b->cap - b->len >= n && !b->oom) {
		memcpy(b->data + b->len, p, n);
		b->len += n;
	} else {
		ts__put_slow(b, p, n);
	}
}
void ts__put_u8(ts_buf *b, uint8_t v);
void ts__put_u16(ts_buf *b, uint16_t v);
void ts__put_u32(ts_buf *b, uint32_t v);
void ts__put_u64(ts_buf *b, uint64_t v);
void ts__put_varint(ts_buf *b, uint64_t v);
/* A varint length followed by the bytes. */
void ts__put_bytes(ts_buf *b, const void *p, size_t n);

static inline void ts__reader_init(ts_reader *r, const void *p, size_t n)
{
	r->p = p;
	r->end = r->p + n;
	r->bad = 0;
}
static inline size_t ts__reader_left(const ts_reader *r)
{
	return (size_t)(r->end - r->p);
}
uint8_t ts__get_u8(ts_reader *r);
uint16_t ts__get_u16(ts_reader *r);
uint32_t ts__get_u32(ts_reader *r);
uint64_t ts__get_u64(ts_reader *r);
uint64_t ts__get_varint_slow(ts_reader *r);
/* A varint: inline when it is one byte (every row's key length). */
static inline uint64_t ts__get_varint(ts_reader *r)
{
	if (!r->bad && r->p < r->end && *r->p < 0x80)
		return *r->p++;
	return ts__get_varint_slow(r);
}
/* Point *p at the next n bytes (NULL and bad when fewer are left). */
static inline const void *ts__get_raw(ts_reader *r, size_t n)
{
	if (r->bad || (size_t)(r->end - r->p) < n) {
		r->bad = 1;
		return NULL;
	}
	const void *p = r->p;
	r->p += n;
	return p;
}
/* A varint length then the bytes: *p and *n describe them in place. */
static inline void ts__get_bytes(ts_reader *r, const void **p, size_t *n)
{
	uint64_t len = ts__get_varint(r);
	*p = NULL;
	*n = 0;
	if (r->bad)
		return;
	if (len > (uint64_t)(r->end - r->p)) {
		r->bad = 1;
		return;
	}
	*p = ts__get_raw(r, (size_t)len);
	*n = (size_t)len;
}

/* Little-endian loads and stores on raw memory. */
static inline uint32_t ts__load_u32(const void *p)
{
	uint32_t v;
	memcpy(&v, p, 4);
	return v; /* the formats are little-endian, as is every target */
}
static inline uint64_t ts__load_u64(const void *p)
{
	uint64_t v;
	memcpy(&v, p, 8);
	return v;
}
static inline void ts__store_u32(void *p, uint32_t v) { memcpy(p, &v, 4); }
static inline void ts__store_u64(void *p, uint64_t v) { memcpy(p, &v, 8); }

/* FNV-1a over p[0..n), continuing from h (TS_FNV1A_BASIS to begin): a
 * small, stable hash of names and identities (the merge's roll-over
 * jitter, a table directory's incarnation); nothing adversarial. */
#define TS_FNV1A_BASIS UINT64_C(14695981039346656037)
static inline uint64_t ts__fnv1a(uint64_t h, const void *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		h = (h ^ ((const unsigned char *)p)[i]) * UINT64_C(1099511628211);
	return h;
}

/* Big-endian stores and loads, for memcomparable key fields: one load
 * and a byte swap (GCC did not turn the byte-at-a-time loop they were
 * into that, and key comparisons are on every read path). */
static inline uint64_t ts__be64(uint64_t v)
{
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	return __builtin_bswap64(v);
#else
	return v;
#endif
}
static inline void ts__store_be64(unsigned char *p, uint64_t v)
{
	v = ts__be64(v);
	memcpy(p, &v, 8);
}
static inline uint64_t ts__load_be64(const unsigned char *p)
{
	uint64_t v;
	memcpy(&v, p, 8);
	return ts__be64(v);
}

/* Bytes a varint of v takes (1..10). */
static inline size_t ts__varint_size(uint64_t v)
{
	size_t n = 1;
	while (v >= 0x80) {
		v >>= 7;
		n++;
	}
	return n;
}

#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "tsstore's formats assume a little-endian host; add byte swaps first"
#endif

#endif
