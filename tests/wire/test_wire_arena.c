/*
 * test_wire_arena.c -- the arena of the wire decoders (wire/arena.c):
 * where arena_take and arena_take_small cut their pieces (exact offsets
 * within a chunk), the chunk of its own a large piece gets, the bound,
 * and an arena used again after arena_clear; and pbmem_keep_memory's
 * allocator settings leaving decoding as it was (wire/pbmem.c).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <snappy-c.h>

#include "wire/arena.h"
#include "wire/pbmem.h"
#include "wire/promwrite.h"

#define CHUNK 1024

static uintptr_t addr(const void *p)
{
	return (uintptr_t)p;
}

/* arena_take rounds to max_align_t's alignment (not its size, 32 bytes
 * on x86-64), arena_take_small to 8 bytes: pieces of one chunk follow
 * each other at exactly those offsets. */
static void wire_arena_alignment(void **state)
{
	struct arena a = ARENA_INIT(CHUNK, SIZE_MAX);
	const size_t big = _Alignof(max_align_t);
	char *p = arena_take(&a, 1);
	assert_non_null(p);
	assert_int_equal(addr(p) % big, 0);
	char *q = arena_take(&a, 1);
	assert_int_equal(addr(q) - addr(p), big);
	char *s1 = arena_take_small(&a, 1);
	assert_int_equal(addr(s1) - addr(q), big);
	char *s2 = arena_take_small(&a, 13);
	assert_int_equal(addr(s2) - addr(s1), ARENA_SMALL_ALIGN);
	char *s3 = arena_take_small(&a, 8);
	assert_int_equal(addr(s3) - addr(s2), 16); /* 13 rounded up to 16 */
	char *s4 = arena_take_small(&a, 0);
	assert_int_equal(addr(s4) - addr(s3), 8);
	char *s5 = arena_take_small(&a, 8);
	assert_int_equal(addr(s5), addr(s4)); /* s4 took nothing */
	/* after a small piece, arena_take starts at the next multiple of
	 * max_align_t: s5 ended 8 bytes past one */
	char *t = arena_take(&a, 24);
	assert_int_equal(addr(t) % big, 0);
	assert_int_equal(addr(t) - addr(s5), big == 16 ? 16 : big);
	char *s6 = arena_take_small(&a, 1);
	assert_int_equal(addr(s6) - addr(t), (24 + big - 1) / big * big); /* 24 rounded up */
	memset(p, 1, 1);
	memset(t, 2, 24);
	assert_int_equal(a.total, CHUNK);
	arena_clear(&a);
	assert_null(a.head);
	assert_int_equal(a.total, 0);
}

/* A piece above a quarter chunk is a chunk of its own, and the chunk
 * being filled goes on being filled; the bound refuses past limit. */
static void wire_arena_chunks_and_bound(void **state)
{
	struct arena a = ARENA_INIT(CHUNK, 3 * CHUNK);
	char *p = arena_take_small(&a, 8);
	char *fill = arena_take_small(&a, CHUNK - 16); /* fits: the same chunk */
	assert_int_equal(addr(fill) - addr(p), 8);
	char *big = arena_take_small(&a, CHUNK / 4 + 8); /* does not fit: its own */
	char *q = arena_take_small(&a, 8);               /* the last 8 bytes of the first */
	assert_non_null(big);
	assert_int_equal(addr(q) - addr(fill), CHUNK - 16);
	assert_int_equal(a.total, CHUNK + CHUNK / 4 + 8);
	char *r = arena_take_small(&a, 8);               /* a new chunk */
	assert_non_null(r);
	assert_int_equal(a.total, 2 * CHUNK + CHUNK / 4 + 8);
	assert_null(arena_take_small(&a, 2 * CHUNK)); /* would pass 3 chunks */
	assert_int_equal(a.over, 1);
	arena_clear(&a);
	assert_int_equal(a.over, 0);
	/* used again: the same sizes, the same offsets */
	p = arena_take_small(&a, 8);
	q = arena_take_small(&a, 8);
	assert_int_equal(addr(q) - addr(p), 8);
	arena_clear(&a);
}

/* One remote write body: a series of two labels and one sample. */
static size_t body(char *out, size_t size)
{
	static const char msg[] =
		"\x0a\x25"                         /* WriteRequest.timeseries, 37 bytes */
		"\x0a\x0e\x0a\x08__name__\x12\x02up" /* Label __name__=up (16) */
		"\x0a\x08\x0a\x01j\x12\x03job"     /* Label j=job (10) */
		"\x12\x09\x09\x00\x00\x00\x00\x00\x00\xf0\x3f"; /* Sample value 1.0 (11) */
	size_t n = size;
	assert_int_equal(snappy_compress(msg, sizeof msg - 1, out, &n), SNAPPY_OK);
	return n;
}

/* After pbmem_keep_memory, bodies decode as before, again and again. */
static void wire_arena_keep_memory(void **state)
{
	char buf[256];
	size_t n = body(buf, sizeof buf);
	pbmem_keep_memory();
	for (int i = 0; i < 3; i++) {
		struct pw_request r;
		char err[PW_ERR_MAX] = "";
		assert_int_equal(pw_decode(buf, n, 1 << 20, &r, err, sizeof err), 0);
		assert_string_equal(err, "");
		assert_int_equal(r.nseries, 1);
		assert_int_equal(r.samples, 1);
		assert_int_equal(r.series[0].nlabels, 2);
		assert_int_equal(r.series[0].labels[0].name_len, 8);
		assert_memory_equal(r.series[0].labels[0].name, "__name__", 8);
		assert_int_equal(r.series[0].labels[0].value_len, 2);
		assert_memory_equal(r.series[0].labels[0].value, "up", 2);
		assert_memory_equal(r.series[0].labels[1].name, "j", 1);
		assert_memory_equal(r.series[0].labels[1].value, "job", 3);
		assert_true(r.series[0].samples[0].value == 1.0);
		assert_int_equal(r.series[0].samples[0].timestamp_ms, 0);
		pw_request_free(&r);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(wire_arena_alignment),
		cmocka_unit_test(wire_arena_chunks_and_bound),
		cmocka_unit_test(wire_arena_keep_memory),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
