/*
 * pbmem.c -- a snappy-compressed protobuf message unpacked under a byte
 * bound: the step remote write (promwrite.c) and remote read
 * (promread.c) share before each lays its message out.
 *
 * Nothing of the wire format is written by hand: the body is decoded
 * with libsnappy's C API into a buffer of its own (at most max_decoded
 * bytes), then unpacked by protobuf-c (protobuf_c_message_unpack, which
 * the generated *__unpack functions call), which copies out the bytes it
 * keeps, so the buffer is freed once unpacked.
 *
 * Memory: protobuf-c allocates each element apart, so an arena
 * (arena.h) gets them instead of malloc; it refuses to grow past factor
 * times the decoded body plus slack, which bounds what any body can
 * cost.  Nothing is freed before pbmem_free frees the whole arena.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <snappy-c.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif

#include "pbmem.h"

/* The arena's chunks: large, as a message is unpacked whole into it. */
#define ARENA_CHUNK ((size_t)256 << 10)

void pbmem_keep_memory(void)
{
#ifdef __GLIBC__
	/* Setting either turns off glibc's own adjustment of both. */
	mallopt(M_MMAP_THRESHOLD, (int)PBMEM_MMAP_THRESHOLD);
	mallopt(M_TRIM_THRESHOLD, (int)PBMEM_TRIM_THRESHOLD);
#endif
}

void *pbmem_alloc(struct pbmem *m, size_t n)
{
	return arena_take(&m->arena, n);
}

/* protobuf-c's allocator over the arena: its pieces are its message
 * structs (pointers, integers, doubles), their arrays and the bytes of
 * bytes fields, none needing more than 8-byte alignment. */
static void *pb_alloc(void *m, size_t n)
{
	return arena_take_small(&((struct pbmem *)m)->arena, n);
}

static void pb_free(void *m, void *p)
{
	(void)m;
	(void)p; /* freed whole by pbmem_free */
}

ProtobufCMessage *pbmem_unpack_in(struct pbmem *m, const ProtobufCMessageDescriptor *desc,
                                  size_t len, const void *data)
{
	ProtobufCAllocator alloc = {.alloc = pb_alloc, .free = pb_free, .allocator_data = m};
	return protobuf_c_message_unpack(desc, &alloc, len, data);
}

void pbmem_free(struct pbmem *m)
{
	if (!m)
		return;
	arena_clear(&m->arena);
	free(m);
}

int pbmem_fail(char *err, size_t errsize, int code, const char *fmt, ...)
{
	va_list ap;
	if (err && errsize) {
		va_start(ap, fmt);
		vsnprintf(err, errsize, fmt, ap);
		va_end(ap);
	}
	return code;
}

int pbmem_unpack(const void *body, size_t len, size_t max_decoded, size_t factor, size_t slack,
                 const ProtobufCMessageDescriptor *desc, const char *what, ProtobufCMessage **msg,
                 struct pbmem **mem, size_t *decoded_len, char *err, size_t errsize)
{
	ProtobufCAllocator alloc = {.alloc = pb_alloc, .free = pb_free};
	struct pbmem *m = NULL;
	char *dec = NULL;
	size_t n;
	int rc = 0;
	*msg = NULL;
	*mem = NULL;
	if (snappy_uncompressed_length(body, len, &n) != SNAPPY_OK)
		return pbmem_fail(err, errsize, PBMEM_ENOTSNAPPY, "snappy: not snappy-compressed data "
		                  "(block format): its length prefix is bad");
	*decoded_len = n;
	if (n > max_decoded)
		return pbmem_fail(err, errsize, PBMEM_ETOOBIG, "%zu bytes once decoded from snappy, "
		                  "more than the %zu allowed", n, max_decoded);
	if (!(m = calloc(1, sizeof *m)) || !(dec = malloc(n ? n : 1))) {
		rc = pbmem_fail(err, errsize, PBMEM_ENOMEM, "out of memory for the decoded body");
		goto out;
	}
	m->arena = ARENA_INIT(ARENA_CHUNK, n > (SIZE_MAX - slack) / factor ? SIZE_MAX
	                                   : n * factor + slack);
	if (snappy_uncompress(body, len, dec, &n) != SNAPPY_OK) {
		rc = pbmem_fail(err, errsize, PBMEM_EDAMAGED, "snappy: the compressed data is damaged");
		goto out;
	}
	alloc.allocator_data = m;
	if (!(*msg = protobuf_c_message_unpack(desc, &alloc, n, (const uint8_t *)dec))) {
		if (m->arena.over)
			rc = pbmem_fail(err, errsize, PBMEM_EUNPACK, "protobuf: the message (%zu bytes) "
			                "would take more than %zu bytes unpacked", n, m->arena.limit);
		else
			rc = pbmem_fail(err, errsize, PBMEM_EPROTO, "protobuf: the %zu bytes decoded from "
			                "snappy are not %s", n, what);
		goto out;
	}
	*mem = m;
	m = NULL;
out:
	free(dec);
	pbmem_free(m);
	return rc;
}
