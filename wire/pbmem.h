/*
 * pbmem.h -- a snappy-compressed protobuf message unpacked under a byte
 * bound (pbmem.c): what Prometheus remote write (promwrite.c) and remote
 * read (promread.c) share.  The body is snappy-decoded (at most
 * max_decoded bytes), then unpacked by protobuf-c into an arena that
 * refuses to grow past factor times the decoded length plus slack, so
 * that no body costs more than that; the arena then holds the message
 * and whatever its caller lays out of it, and is freed whole.
 */
#ifndef TSSTORE_WIRE_PBMEM_H
#define TSSTORE_WIRE_PBMEM_H

#include <stddef.h>

#include <protobuf-c/protobuf-c.h>

#include "arena.h"

/* What pbmem_unpack can fail with: the values of the same errors in
 * promwrite.h's enum pw_error and promread.h's enum pr_error, which
 * pass them on as they are. */
enum pbmem_error {
	PBMEM_ENOTSNAPPY = -1, /* not snappy block format (its length prefix is bad) */
	PBMEM_EDAMAGED = -2,   /* snappy, but the compressed data is damaged */
	PBMEM_ETOOBIG = -3,    /* longer than max_decoded once decoded */
	PBMEM_EPROTO = -4,     /* the decoded bytes are not the message */
	PBMEM_EUNPACK = -5,    /* unpacking would take more than the bound */
	PBMEM_ENOMEM = -6,     /* out of memory */
};

/* The memory of one unpacked message: an arena bounded by factor times
 * the decoded length plus slack (arena.over is set once the bound
 * refused an allocation: pbmem_alloc then returned NULL). */
struct pbmem {
	struct arena arena;
};

/*
 * pbmem_unpack -- snappy-decode body[0..len) and unpack it as a message
 * of desc.
 * max_decoded: the most bytes the body may take decoded (PBMEM_ETOOBIG);
 * factor, slack: the arena's bound, factor * decoded length + slack
 * (PBMEM_EUNPACK past it).
 * what: the message named in the error of PBMEM_EPROTO ("a remote write
 * WriteRequest").
 * *msg: receives the message, *mem its memory (free both with
 * pbmem_free); NULL on failure.
 * *decoded_len: the decoded length, set as soon as the snappy header
 * could be read (on failure too).
 * err: when not NULL, errsize bytes for a message saying what was wrong
 * (set on failure only).
 * Returns 0 or a negative pbmem_error.
 */
int pbmem_unpack(const void *body, size_t len, size_t max_decoded, size_t factor, size_t slack,
                 const ProtobufCMessageDescriptor *desc, const char *what, ProtobufCMessage **msg,
                 struct pbmem **mem, size_t *decoded_len, char *err, size_t errsize);

/*
 * pbmem_unpack_in -- unpack data[0..len) as a message of desc into m's
 * arena, by protobuf-c as pbmem_unpack does: for a field that a decoding
 * view (wire/remote_view.proto) declares bytes where the message has an
 * embedded message, which protobuf-c would have unpacked the same way.
 * Returns the message, freed with m; NULL when the bytes are not a
 * message of desc, or when the arena refused (m->arena.over set), or
 * out of memory.
 */
ProtobufCMessage *pbmem_unpack_in(struct pbmem *m, const ProtobufCMessageDescriptor *desc,
                                  size_t len, const void *data);

/* pbmem_alloc -- n bytes more of m's arena (arena_take), freed with it;
 * NULL when out of memory or over the bound (m->arena.over then set). */
void *pbmem_alloc(struct pbmem *m, size_t n);

/* pbmem_free -- release m and all its arena holds; m may be NULL. */
void pbmem_free(struct pbmem *m);

/* Process-wide allocator settings for a process that decodes message
 * after message (pbmem_keep_memory): blocks up to PBMEM_MMAP_THRESHOLD
 * come from the heap rather than mmap, and up to PBMEM_TRIM_THRESHOLD of
 * free memory stays at the top of each heap. */
#define PBMEM_MMAP_THRESHOLD ((size_t)32 << 20)
#define PBMEM_TRIM_THRESHOLD ((size_t)64 << 20)

/*
 * pbmem_keep_memory -- set glibc's malloc so that the memory of one
 * message is there for the next: with its defaults, the arena of a
 * message (megabytes in 256 KiB chunks) and its decoded body are given
 * back to the kernel when freed (the heap trimmed by madvise or brk, or
 * a block unmapped), and the next message faults every page in again --
 * a remote write request of 5,120 samples then spent a quarter of its
 * CPU in the kernel (BENCHMARKS.md, issue 26).  Call once, early (the
 * daemon's main, the bench's decoding ceiling).  What stays mapped is
 * bounded by each heap's high-water mark, blocks past
 * PBMEM_MMAP_THRESHOLD are still mapped and unmapped alone, and free
 * memory past PBMEM_TRIM_THRESHOLD at a heap's top is still given back.
 * Does nothing where the allocator is not glibc's.
 */
void pbmem_keep_memory(void);

/* pbmem_fail -- write the message of fmt to err[0..errsize) (when err is
 * not NULL and errsize not 0), and return code: the decoders' way to
 * fail with a message. */
int pbmem_fail(char *err, size_t errsize, int code, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

#endif /* TSSTORE_WIRE_PBMEM_H */
