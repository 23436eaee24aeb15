/*
 * buf.c -- the byte buffers and readers declared in buf.h.
 *
 * Buffers grow by doubling; an allocation failure sets the sticky oom flag
 * and turns every later put into a no-op (ts__buf_reserve, the one call
 * that returns a code, returns TS_ENOMEM with a message).  Readers never read
 * outside their range: a short read sets the sticky bad flag and yields
 * zeros.
 */
#include <stdlib.h>

#include "buf.h"
#include "error.h"

void ts__buf_init(ts_buf *b)
{
	b->data = NULL;
	b->len = b->cap = 0;
	b->oom = 0;
	b->lent = 0;
}

void ts__buf_init_in(ts_buf *b, void *mem, size_t cap)
{
	ts__buf_init(b);
	b->data = mem;
	b->cap = cap;
	b->lent = 1;
}

void ts__buf_free(ts_buf *b)
{
	if (!b->lent)
		free(b->data);
	ts__buf_init(b);
}

int ts__buf_reserve(ts_buf *b, size_t n)
{
	if (b->oom)
		return ts__fail(TS_ENOMEM, "out of memory (a buffer failed to grow before)");
	if (b->cap - b->len >= n)
		return 0;
	size_t cap = b->cap ? b->cap : 64;
	while (cap - b->len < n) {
		if (cap > SIZE_MAX / 2)
			goto fail;
		cap *= 2;
	}
	unsigned char *d = b->lent ? malloc(cap) : realloc(b->data, cap);
	if (!d)
		goto fail;
	if (b->lent && b->len)
		memcpy(d, b->data, b->len);
	b->data = d;
	b->cap = cap;
	b->lent = 0;
	return 0;
fail:
	b->oom = 1;
	return ts__fail(TS_ENOMEM, "out of memory growing a buffer of %zu bytes by %zu", b->len, n);
}

void ts__put_slow(ts_buf *b, const void *p, size_t n)
{
	if (n == 0 || ts__buf_reserve(b, n) < 0)
		return;
	memcpy(b->data + b->len, p, n);
	b->len += n;
}

void ts__put_u8(ts_buf *b, uint8_t v) { ts__put(b, &v, 1); }
void ts__put_u16(ts_buf *b, uint16_t v) { ts__put(b, &v, 2); }
void ts__put_u32(ts_buf *b, uint32_t v) { ts__put(b, &v, 4); }
void ts__put_u64(ts_buf *b, uint64_t v) { ts__put(b, &v, 8); }

void ts__put_varint(ts_buf *b, uint64_t v)
{
	unsigned char tmp[10];
	size_t n = 0;
	while (v >= 0x80) {
		tmp[n++] = (unsigned char)(v | 0x80);
		v >>= 7;
	}
	tmp[n++] = (unsigned char)v;
	ts__put(b, tmp, n);
}

void ts__put_bytes(ts_buf *b, const void *p, size_t n)
{
	ts__put_varint(b, n);
	ts__put(b, p, n);
}

uint8_t ts__get_u8(ts_reader *r)
{
	const unsigned char *p = ts__get_raw(r, 1);
	return p ? *p : 0;
}

uint16_t ts__get_u16(ts_reader *r)
{
	uint16_t v = 0;
	const void *p = ts__get_raw(r, 2);
	if (p)
		memcpy(&v, p, 2);
	return v;
}

uint32_t ts__get_u32(ts_reader *r)
{
	const void *p = ts__get_raw(r, 4);
	return p ? ts__load_u32(p) : 0;
}

uint64_t ts__get_u64(ts_reader *r)
{
	const void *p = ts__get_raw(r, 8);
	return p ? ts__load_u64(p) : 0;
}

uint64_t ts__get_varint_slow(ts_reader *r)
{
	uint64_t v = 0;
	for (int shift = 0; shift < 64; shift += 7) {
		const unsigned char *p = ts__get_raw(r, 1);
		if (!p)
			return 0;
		if (shift == 63 && *p > 1)
			break; /* more than 64 bits */
		v |= (uint64_t)(*p & 0x7f) << shift;
		if (!(*p & 0x80))
			return v;
	}
	r->bad = 1;
	return 0;
}

