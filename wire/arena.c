/*
 * arena.c -- bump allocation in chunks (arena.h).
 *
 * The chunks form a list, the one being filled at its head; a piece is
 * cut from the head's free end, or a new chunk is made when it does not
 * fit.  A piece above a quarter chunk is a chunk of its own, put behind
 * the head so that the head goes on being filled.  Only whole chunks are
 * freed, by arena_clear.  total counts the chunks' sizes (without their
 * headers): what limit bounds.
 */
#include <stdlib.h>

#include "arena.h"

struct arena_chunk {
	struct arena_chunk *next;
	size_t used, cap;
	max_align_t data[];
};

/* n bytes of a at a multiple of align (a power of two, at most
 * _Alignof(max_align_t), which chunks start aligned for), n rounded up
 * to a multiple of align. */
static void *take(struct arena *a, size_t n, size_t align)
{
	struct arena_chunk *c = a->head;
	if (n > SIZE_MAX / 2)
		return NULL; /* rounding up below would wrap */
	n = (n + align - 1) & ~(align - 1);
	if (c) {
		size_t at = (c->used + align - 1) & ~(align - 1); /* after a smaller alignment */
		if (at <= c->cap && c->cap - at >= n) {
			c->used = at + n;
			return (char *)c->data + at;
		}
	}
	size_t cap = n > a->chunk / 4 ? n : a->chunk;
	if (cap > a->limit - a->total) {
		a->over = 1;
		return NULL;
	}
	if (!(c = malloc(sizeof *c + cap)))
		return NULL;
	a->total += cap;
	c->cap = cap;
	c->used = n;
	if (cap == n && a->head) { /* a big one: behind the chunk being filled */
		c->next = a->head->next;
		a->head->next = c;
	} else {
		c->next = a->head;
		a->head = c;
	}
	return c->data;
}

void *arena_take(struct arena *a, size_t n)
{
	/* its alignment, not its size: 16 and 32 bytes on x86-64 */
	return take(a, n, _Alignof(max_align_t));
}

void *arena_take_small(struct arena *a, size_t n)
{
	return take(a, n, ARENA_SMALL_ALIGN);
}

void arena_clear(struct arena *a)
{
	struct arena_chunk *c = a->head;
	while (c) {
		struct arena_chunk *next = c->next;
		free(c);
		c = next;
	}
	a->head = NULL;
	a->total = 0;
	a->over = 0;
}
