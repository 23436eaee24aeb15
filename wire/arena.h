/*
 * arena.h -- bump allocation in chunks, freed whole (arena.c): memory
 * made of many small pieces that all die together, such as an unpacked
 * protobuf message (pbmem.c) or the labels of a remote read answer
 * (daemon/promread.c).  Pieces are aligned for any struct (or, asked, to 8 bytes); an optional
 * bound refuses to grow past it, so that what an input costs is capped.
 */
#ifndef TSSTORE_WIRE_ARENA_H
#define TSSTORE_WIRE_ARENA_H

#include <stddef.h>
#include <stdint.h>

struct arena_chunk;

/* An arena: zero but for chunk and limit (ARENA_INIT) is empty. */
struct arena {
	struct arena_chunk *head;   /* the chunk being filled */
	size_t chunk;               /* the size of a chunk */
	size_t total;               /* the bytes of all chunks */
	size_t limit;               /* the most total may reach (SIZE_MAX: no bound) */
	int over;                   /* the limit refused an allocation */
};

/* An empty arena of chunks of chunk bytes, growing to limit bytes at
 * the most. */
#define ARENA_INIT(chunk, limit) ((struct arena){NULL, (chunk), 0, (limit), 0})

/*
 * arena_take -- n bytes of a (aligned for any struct), until
 * arena_clear.  A piece larger than a quarter chunk gets a chunk of its
 * own, behind the one being filled, so that it never wastes the rest of
 * a chunk.  Returns NULL when out of memory, or when a new chunk would
 * pass the limit (over is then set).
 */
void *arena_take(struct arena *a, size_t n);

/* The alignment of arena_take_small's pieces: enough for pointers,
 * sizes, int64 and double (x86-64 and the other LP64 targets). */
#define ARENA_SMALL_ALIGN ((size_t)8)

/*
 * arena_take_small -- arena_take for pieces that need no more than
 * ARENA_SMALL_ALIGN: rounded up to a multiple of 8 instead of
 * max_align_t's 16, which saves a sixth of the memory of an unpacked
 * remote write message (pieces of 8 to 56 bytes: labels, their bytes).
 */
void *arena_take_small(struct arena *a, size_t n);

/* arena_clear -- free every chunk of a; a is then empty (its chunk size
 * and limit kept), and may be used again. */
void arena_clear(struct arena *a);

#endif /* TSSTORE_WIRE_ARENA_H */
