/*
 * fuzz_prom.h -- what the remote write and read targets (fuzz_promwrite,
 * fuzz_promread) share: the framing of their input (a flag byte: bit 0,
 * the rest is the message itself, snappy-compressed here so that
 * mutations reach the protobuf decoder; bit 1, a max_decoded of 64 bytes
 * instead of 1 MiB), the reference decoding their oracle compares with
 * (libsnappy, then protobuf-c with its default allocator, directly), and
 * the comparison of bytes.
 *
 * Shared by programs of tests/fuzz/ only (static functions, one copy
 * each).
 */
#ifndef TS_FUZZ_PROM_H
#define TS_FUZZ_PROM_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <protobuf-c/protobuf-c.h>
#include <snappy-c.h>

#include "wire/pbmem.h"

/* A body to decode, framed out of the fuzzer's input. */
struct prom_input {
	const char *body;
	size_t len;
	size_t max;                 /* max_decoded */
	char *packed;               /* the body when the target compressed it (freed by the caller) */
};

/* Frame data[0..size) as a body (see above); 0 when size is 0 (no body). */
static int prom_input(const unsigned char *data, size_t size, struct prom_input *in)
{
	memset(in, 0, sizeof *in);
	if (size == 0)
		return 0;
	in->body = (const char *)data + 1;
	in->len = size - 1;
	in->max = data[0] & 2 ? 64 : (size_t)1 << 20;
	if (data[0] & 1) {
		size_t cap = snappy_max_compressed_length(in->len);
		if (!(in->packed = malloc(cap)) ||
		    snappy_compress(in->body, in->len, in->packed, &cap) != SNAPPY_OK)
			abort();
		in->body = in->packed;
		in->len = cap;
	}
	return 1;
}

/* The code the decoder must give in->body, as far as snappy and protobuf
 * say (a pbmem_error, the same in promwrite.h and promread.h), and the
 * reference decoding *msg (a message of desc, when it decodes; freed
 * with protobuf_c_message_free_unpacked(*msg, NULL)); *n the decoded
 * length. */
static int prom_expected(const struct prom_input *in, const ProtobufCMessageDescriptor *desc,
                         ProtobufCMessage **msg, size_t *n)
{
	char *buf;
	int rc = PBMEM_EDAMAGED;
	*msg = NULL;
	if (snappy_uncompressed_length(in->body, in->len, n) != SNAPPY_OK)
		return PBMEM_ENOTSNAPPY;
	if (*n > in->max)
		return PBMEM_ETOOBIG;
	if (!(buf = malloc(*n ? *n : 1)))
		abort();
	if (snappy_uncompress(in->body, in->len, buf, n) == SNAPPY_OK) {
		*msg = protobuf_c_message_unpack(desc, NULL, *n, (const uint8_t *)buf);
		rc = *msg ? 0 : PBMEM_EPROTO;
	}
	free(buf); /* protobuf-c's default unpack copies the bytes it keeps */
	return rc;
}

/* Whether p[0..n) are b's bytes. */
static int same_bytes(const char *p, size_t n, const ProtobufCBinaryData *b)
{
	return n == b->len && (n == 0 || memcmp(p, b->data, n) == 0);
}

#endif /* TS_FUZZ_PROM_H */
