/*
 * test_proto.h -- what the remote write and read tests
 * (test_wire_promwrite.c, test_wire_promread.c) share: protobuf's wire
 * form written by hand, byte by byte, so that the requests they decode
 * do not lean on the code generated from remote.proto, and the snappy
 * block compression of a request into a body.
 */
#ifndef TSSTORE_TESTS_WIRE_TEST_PROTO_H
#define TSSTORE_TESTS_WIRE_TEST_PROTO_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <snappy-c.h>

/* A growing byte string (zeroed: empty; the test frees p). */
struct bytes {
	unsigned char *p;
	size_t n, cap;
};

/* Append p[0..n) to b. */
static inline void put_bytes(struct bytes *b, const void *p, size_t n)
{
	if (b->n + n > b->cap) {
		b->cap = (b->n + n) * 2 + 64;
		b->p = realloc(b->p, b->cap);
		assert_non_null(b->p);
	}
	if (n)
		memcpy(b->p + b->n, p, n);
	b->n += n;
}

/* Append v as a varint. */
static inline void varint(struct bytes *b, uint64_t v)
{
	unsigned char c;
	do {
		c = (unsigned char)(v & 0x7f);
		v >>= 7;
		if (v)
			c |= 0x80;
		put_bytes(b, &c, 1);
	} while (v);
}

/* Field num of wire type 2 (length-delimited) holding p[0..n). */
static inline void field_bytes(struct bytes *b, int num, const void *p, size_t n)
{
	varint(b, (uint64_t)num << 3 | 2);
	varint(b, n);
	put_bytes(b, p, n);
}

/* A length-delimited field holding the message inner (freed). */
static inline void field_msg(struct bytes *b, int num, struct bytes *inner)
{
	field_bytes(b, num, inner->p, inner->n);
	free(inner->p);
	memset(inner, 0, sizeof *inner);
}

/* A length-delimited field holding the string s. */
static inline void field_str(struct bytes *b, int num, const char *s)
{
	field_bytes(b, num, s, strlen(s));
}

/* A varint field (wire type 0) holding v. */
static inline void field_int(struct bytes *b, int num, int64_t v)
{
	varint(b, (uint64_t)num << 3);
	varint(b, (uint64_t)v);
}

/* b snappy-compressed; the result is malloc'ed, *len bytes. */
static inline char *snappy(const struct bytes *b, size_t *len)
{
	*len = snappy_max_compressed_length(b->n);
	char *out = malloc(*len);
	assert_non_null(out);
	assert_int_equal(snappy_compress((const char *)b->p, b->n, out, len), SNAPPY_OK);
	return out;
}

#endif /* TSSTORE_TESTS_WIRE_TEST_PROTO_H */
