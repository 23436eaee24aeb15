/*
 * test_bcache.c -- the block cache (lib/bcache.c): hits and misses,
 * least-recently-used eviction within the byte bound, a block evicted
 * while a reader holds it staying readable until let go, a second copy
 * of a cached block staying private, a zero-sized cache keeping nothing,
 * the hash table growing past its first size, and a long scan's blocks
 * (TS_BCACHE_SPARE) taking only spare room, as the least recent entries,
 * and fitted blocks charged for their bytes, not their buffers' room.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "bcache.h"
#include "tsstore.h"

/* The bytes the cache charges for a block like filled(.., len). */
static size_t charge(size_t len);

/* A block of serial s, number n, holding len bytes of value n. */
static ts__cblock *filled(uint64_t s, uint32_t n, size_t len)
{
	ts__cblock *b = ts__cblock_new(s, n);
	assert_non_null(b);
	assert_int_equal(ts__buf_reserve(&b->raw, len), 0);
	memset(b->raw.data, (int)(n & 0xFF), len);
	b->raw.len = len;
	return b;
}

static size_t charge(size_t len)
{
	ts__bcache none;
	assert_int_equal(ts__bcache_init(&none, 0), 0);
	ts__cblock *b = filled(1, 0, len);
	ts__bcache_put(&none, b, TS_BCACHE_EVICT); /* sets b->bytes, keeps nothing */
	size_t bytes = b->bytes;
	ts__cblock_put(&none, b);
	ts__bcache_free(&none);
	return bytes;
}

static void bcache_hits_and_lru(void **state)
{
	(void)state;
	ts__bcache c;
	assert_int_equal(ts__bcache_init(&c, 4 * charge(12 << 10) + 100), 0);
	assert_null(ts__bcache_get(&c, 1, 0));
	/* four 12 kB blocks fit (with their overhead), a fifth evicts the
	 * least recently used */
	for (uint32_t n = 0; n < 4; n++) {
		ts__cblock *b = filled(1, n, 12 << 10);
		assert_int_equal(ts__bcache_put(&c, b, TS_BCACHE_EVICT), 1);
		ts__cblock_put(&c, b);
	}
	ts__cblock *b0 = ts__bcache_get(&c, 1, 0); /* 0 is now the most recent */
	assert_non_null(b0);
	assert_int_equal(b0->raw.data[100], 0);
	ts__cblock_put(&c, b0);
	ts__cblock *b4 = filled(1, 4, 12 << 10);
	assert_int_equal(ts__bcache_put(&c, b4, TS_BCACHE_EVICT), 1);
	ts__cblock_put(&c, b4);
	assert_true(c.used <= c.cap);
	assert_null(ts__bcache_get(&c, 1, 1)); /* the least recent went */
	ts__cblock *again = ts__bcache_get(&c, 1, 0);
	assert_non_null(again);
	ts__cblock_put(&c, again);
	assert_null(ts__bcache_get(&c, 2, 0)); /* another tablet's block 0 */
	assert_int_equal(c.hits, 2);
	assert_int_equal(c.misses, 3);
	ts__bcache_free(&c);
}

static void bcache_evicted_while_held(void **state)
{
	(void)state;
	ts__bcache c;
	assert_int_equal(ts__bcache_init(&c, 4 * charge(12 << 10) + 100), 0);
	ts__cblock *held = filled(7, 0, 12 << 10);
	assert_int_equal(ts__bcache_put(&c, held, TS_BCACHE_EVICT), 1);
	/* fill the cache until block 0 is evicted; the reader still holds it */
	for (uint32_t n = 1; n < 8; n++) {
		ts__cblock *b = filled(7, n, 12 << 10);
		ts__bcache_put(&c, b, TS_BCACHE_EVICT);
		ts__cblock_put(&c, b);
	}
	assert_null(ts__bcache_get(&c, 7, 0));
	assert_int_equal(held->cached, 0);
	assert_int_equal(held->refs, 1);
	assert_int_equal(held->raw.data[(12 << 10) - 1], 0); /* still readable */
	ts__cblock_put(&c, held);                             /* freed now (ASan checks) */
	ts__bcache_free(&c);
}

static void bcache_duplicate_and_oversized_stay_private(void **state)
{
	(void)state;
	ts__bcache c;
	assert_int_equal(ts__bcache_init(&c, 4 * charge(16 << 10) - 1), 0);
	ts__cblock *a = filled(3, 9, 1000), *b = filled(3, 9, 1000);
	assert_int_equal(ts__bcache_put(&c, a, TS_BCACHE_EVICT), 1);
	assert_int_equal(ts__bcache_put(&c, b, TS_BCACHE_EVICT), 0); /* the same block again */
	assert_int_equal(b->cached, 0);
	ts__cblock *big = filled(3, 10, 16 << 10); /* more than a quarter */
	assert_int_equal(ts__bcache_put(&c, big, TS_BCACHE_EVICT), 0);
	ts__cblock_put(&c, big);
	ts__cblock_put(&c, b);
	ts__cblock_put(&c, a);
	ts__bcache_free(&c);

	assert_int_equal(ts__bcache_init(&c, 0), 0); /* no cache at all */
	a = filled(3, 1, 10);
	assert_int_equal(ts__bcache_put(&c, a, TS_BCACHE_EVICT), 0);
	assert_null(ts__bcache_get(&c, 3, 1));
	ts__cblock_put(&c, a);
	ts__bcache_free(&c);
}

static void bcache_grows(void **state)
{
	(void)state;
	ts__bcache c;
	assert_int_equal(ts__bcache_init(&c, 64 << 20), 0);
	for (uint32_t n = 0; n < 5000; n++) {
		ts__cblock *b = filled(ts__bcache_serial(), n, 16);
		assert_int_equal(ts__bcache_put(&c, b, TS_BCACHE_EVICT), 1);
		ts__cblock_put(&c, b);
	}
	assert_int_equal(c.count, 5000);
	assert_true(c.nbuckets >= 4096);
	ts__bcache_free(&c);
}

static void bcache_spare_room_only(void **state)
{
	(void)state;
	ts__bcache c;
	assert_int_equal(ts__bcache_init(&c, 4 * charge(12 << 10) + 100), 0);
	ts__cblock *b;
	for (uint32_t n = 0; n < 3; n++) { /* a reader's three blocks */
		b = filled(5, n, 12 << 10);
		assert_int_equal(ts__bcache_put(&c, b, TS_BCACHE_EVICT), 1);
		ts__cblock_put(&c, b);
	}
	/* a scan: its first block fits into the room left, the next would
	 * need an eviction and stays private */
	ts__cblock *s1 = filled(6, 0, 12 << 10), *s2 = filled(6, 1, 12 << 10);
	assert_int_equal(ts__bcache_put(&c, s1, TS_BCACHE_SPARE), 1);
	assert_int_equal(ts__bcache_put(&c, s2, TS_BCACHE_SPARE), 0);
	assert_int_equal(s2->cached, 0);
	ts__cblock_put(&c, s1);
	ts__cblock_put(&c, s2);
	for (uint32_t n = 0; n < 3; n++) {
		assert_non_null(b = ts__bcache_get(&c, 5, n));
		ts__cblock_put(&c, b);
	}
	/* the scan's block went in as the least recent: the next eviction
	 * takes it, not the reader's least recent block (5, 0) */
	assert_int_equal(c.tail->serial, 6);
	b = filled(5, 3, 12 << 10);
	assert_int_equal(ts__bcache_put(&c, b, TS_BCACHE_EVICT), 1);
	ts__cblock_put(&c, b);
	assert_null(ts__bcache_get(&c, 6, 0));
	for (uint32_t n = 0; n < 4; n++) {
		assert_non_null(b = ts__bcache_get(&c, 5, n));
		ts__cblock_put(&c, b);
	}
	assert_true(c.used <= c.cap);
	ts__bcache_free(&c);
}

/* A block whose buffers grew past what they hold is charged for its
 * capacity; fitted, for its bytes only, and so more of them fit. */
static void bcache_fitted_blocks_are_charged_their_bytes(void **state)
{
	(void)state;
	ts__bcache c;
	size_t one = sizeof(ts__cblock) + (10 << 10); /* no rows located */
	assert_int_equal(ts__bcache_init(&c, 4 * one + 100), 0);
	ts__cblock *b = filled(8, 0, 10 << 10);
	assert_int_equal(ts__buf_reserve(&b->raw, 100 << 10), 0); /* spare capacity */
	assert_true(b->raw.cap >= (110 << 10));
	assert_int_equal(ts__cblock_fitted_bytes(b), one);
	assert_true(ts__bcache_has_room(&c, ts__cblock_fitted_bytes(b)));
	ts__cblock_fit(b);
	assert_int_equal(b->raw.cap, 10 << 10);
	assert_int_equal(b->raw.data[(10 << 10) - 1], 0); /* contents kept */
	assert_int_equal(ts__bcache_put(&c, b, TS_BCACHE_SPARE), 1);
	assert_int_equal(b->bytes, one);
	ts__cblock_put(&c, b);
	for (uint32_t n = 1; n < 4; n++) {
		b = filled(8, n, 10 << 10);
		assert_int_equal(ts__buf_reserve(&b->raw, 100 << 10), 0);
		ts__cblock_fit(b);
		assert_int_equal(ts__bcache_put(&c, b, TS_BCACHE_SPARE), 1);
		ts__cblock_put(&c, b);
	}
	assert_false(ts__bcache_has_room(&c, one)); /* four fill it */
	b = filled(8, 9, 10 << 10);
	assert_int_equal(ts__bcache_put(&c, b, TS_BCACHE_SPARE), 0);
	ts__cblock_put(&c, b);
	ts__bcache_free(&c);
}

/* The default size: a sixteenth of the memory, within 64 MiB and 4 GiB;
 * the minimum when the memory is unknown; and the memory of this machine
 * is known (sysconf) and gives what ts_options_init sets. */
static void bcache_default_size_from_memory(void **state)
{
	(void)state;
	const int64_t mib = INT64_C(1) << 20, gib = INT64_C(1) << 30;
	assert_int_equal(ts__bcache_default_size(0), 64 * mib);
	assert_int_equal(ts__bcache_default_size(512 * mib), 64 * mib);
	assert_int_equal(ts__bcache_default_size(gib), 64 * mib);
	assert_int_equal(ts__bcache_default_size(2 * gib), 128 * mib);
	assert_int_equal(ts__bcache_default_size(24 * gib), 1536 * mib);
	assert_int_equal(ts__bcache_default_size(64 * gib), 4 * gib);
	assert_int_equal(ts__bcache_default_size(1024 * gib), 4 * gib);
	int64_t memory = ts__memory_limit();
	assert_true(memory >= 64 * mib);
	ts_options o;
	ts_options_init(&o);
	assert_int_equal(o.block_cache_size, ts__bcache_default_size(memory));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(bcache_hits_and_lru),
		cmocka_unit_test(bcache_evicted_while_held),
		cmocka_unit_test(bcache_duplicate_and_oversized_stay_private),
		cmocka_unit_test(bcache_grows),
		cmocka_unit_test(bcache_spare_room_only),
		cmocka_unit_test(bcache_fitted_blocks_are_charged_their_bytes),
		cmocka_unit_test(bcache_default_size_from_memory),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
