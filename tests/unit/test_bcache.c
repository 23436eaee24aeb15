/*
 * test_bcache.c -- the block cache (lib/bcache.c): hits and misses,
 * least-recently-used eviction within the byte bound, a block evicted
 * while a reader holds it staying readable until let go, a closed
 * tablet's blocks forgotten (and only its), a second copy
 * of a cached block staying private, a zero-sized cache keeping nothing,
 * the hash table growing past its first size, and a long scan's blocks
 * (TS_BCACHE_SPARE) taking only spare room, as the least recent entries,
 * and fitted blocks charged for their bytes, not their buffers' room;
 * a hit on one of the most recent quarter leaving the list as it is; a
 * block's seek index (ts__seekix) finding every bound as a pass over the
 * rows does, on keys of every shape, and charged to the cache once; a
 * prefetch hint changing nothing.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "bcache.h"
#include "key.h"
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

/* Forgetting a closed tablet's blocks drops them all, and only them; a
 * reader holding one keeps it readable. */
static void bcache_forget_drops_a_tablets_blocks(void **state)
{
	(void)state;
	ts__bcache c;
	assert_int_equal(ts__bcache_init(&c, 1 << 20), 0);
	for (uint32_t n = 0; n < 4; n++)
		for (uint64_t s = 1; s <= 2; s++) {
			ts__cblock *b = filled(s, n, 1000);
			assert_int_equal(ts__bcache_put(&c, b, TS_BCACHE_EVICT), 1);
			ts__cblock_put(&c, b);
		}
	size_t used = c.used;
	ts__cblock *held = ts__bcache_get(&c, 1, 2);
	assert_non_null(held);
	ts__bcache_forget(&c, 1, 3); /* blocks 0..2: block 3 stays */
	assert_int_equal(c.count, 5);
	assert_int_equal(c.used, used - 3 * charge(1000));
	assert_null(ts__bcache_get(&c, 1, 0));
	assert_null(ts__bcache_get(&c, 1, 2));
	ts__cblock *b = ts__bcache_get(&c, 1, 3);
	assert_non_null(b);
	ts__cblock_put(&c, b);
	for (uint32_t n = 0; n < 4; n++) {
		assert_non_null(b = ts__bcache_get(&c, 2, n));
		ts__cblock_put(&c, b);
	}
	assert_int_equal(held->cached, 0);
	assert_int_equal(held->raw.data[999], 2); /* still readable */
	ts__cblock_put(&c, held);
	ts__bcache_forget(&c, 9, 100); /* nothing of its */
	assert_int_equal(c.count, 5);
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

/* Sixteen blocks: a hit on one made most recent fewer than count / 4
 * pushes ago moves nothing; on an older one it moves it to the head, and
 * the eviction then takes the least recent other. */
static void bcache_recent_hits_stay_put(void **state)
{
	(void)state;
	ts__bcache c;
	assert_int_equal(ts__bcache_init(&c, 16 * charge(1000) + 100), 0);
	ts__cblock *b;
	for (uint32_t n = 0; n < 16; n++) {
		b = filled(4, n, 1000);
		assert_int_equal(ts__bcache_put(&c, b, TS_BCACHE_EVICT), 1);
		ts__cblock_put(&c, b);
	}
	assert_int_equal(c.head->block, 15);
	assert_non_null(b = ts__bcache_get(&c, 4, 13)); /* 2 pushes ago of 16 / 4 */
	ts__cblock_put(&c, b);
	assert_int_equal(c.head->block, 15);
	assert_int_equal(c.head->next->block, 14);
	assert_non_null(b = ts__bcache_get(&c, 4, 12)); /* 3 */
	ts__cblock_put(&c, b);
	assert_int_equal(c.head->block, 15);
	assert_non_null(b = ts__bcache_get(&c, 4, 11)); /* 4: no longer among the quarter */
	ts__cblock_put(&c, b);
	assert_int_equal(c.head->block, 11);
	assert_non_null(b = ts__bcache_get(&c, 4, 0)); /* the least recent */
	ts__cblock_put(&c, b);
	assert_int_equal(c.head->block, 0);
	assert_int_equal(c.tail->block, 1);
	b = filled(4, 16, 1000); /* evicts 1, the least recent now */
	assert_int_equal(ts__bcache_put(&c, b, TS_BCACHE_EVICT), 1);
	ts__cblock_put(&c, b);
	assert_null(ts__bcache_get(&c, 4, 1));
	assert_non_null(b = ts__bcache_get(&c, 4, 0));
	ts__cblock_put(&c, b);
	assert_int_equal(c.hits, 5);
	ts__bcache_free(&c);
}

/* A block of the rows whose keys are keys[0..n) (in key order), each
 * row its key (varint length, bytes) and a few bytes of payload. */
static ts__cblock *block_of(const unsigned char (*keys)[24], const size_t *lens, size_t n)
{
	ts__cblock *b = ts__cblock_new(9, 0);
	assert_non_null(b);
	size_t *off = calloc(n + 1, sizeof *off);
	assert_non_null(off);
	for (size_t i = 0; i < n; i++) {
		off[i] = b->raw.len;
		ts__put_bytes(&b->raw, keys[i], lens[i]);
		ts__put(&b->raw, "payload", 7);
	}
	assert_false(b->raw.oom);
	b->rows = calloc(n ? n : 1, sizeof *b->rows);
	assert_non_null(b->rows);
	b->nrows = b->caprows = n;
	for (size_t i = 0; i < n; i++) {
		b->rows[i].off = (uint32_t)off[i];
		b->rows[i].len = (uint32_t)((i + 1 < n ? off[i + 1] : b->raw.len) - off[i]);
	}
	free(off);
	return b;
}

/* The first row whose key k fails k < bound (or k == bound, eq), by a
 * pass over every row. */
static long first_not_by_pass(const unsigned char (*keys)[24], const size_t *lens, size_t n,
                              const unsigned char *bound, size_t blen, int eq)
{
	for (size_t i = 0; i < n; i++) {
		int c = ts__key_cmp(keys[i], lens[i], bound, blen);
		if (!(c < 0 || (c == 0 && eq)))
			return (long)i;
	}
	return (long)n;
}

static int key_order(const void *a, const void *b)
{
	const unsigned char *x = a, *y = b;
	return ts__key_cmp(x + 1, x[0], y + 1, y[0]);
}

/* Blocks of keys of every shape -- a long shared prefix, keys of one
 * length and of many, zero bytes where the words are cut, keys that are
 * prefixes of others, one row, none -- and, for each, bounds on every
 * key, just below and above it, cut short and lengthened, before and
 * after them all, each strict and not: the seek index answers as the
 * pass does. */
static void seekix_first_not_matches_a_pass(void **state)
{
	(void)state;
	uint64_t x = 0x5EEC1DE5u;
	for (int shape = 0; shape < 40; shape++) {
		/* sorted entries: [0] = length, [1..] = key */
		unsigned char raw[64][25];
		size_t n = shape == 0 ? 0 : shape == 1 ? 1 : 2 + (size_t)(shape * 7) % 62;
		size_t prefix = (size_t)shape % 13; /* bytes shared by construction */
		for (size_t i = 0; i < n; i++) {
			memset(raw[i], 0, sizeof raw[i]);
			size_t len = shape % 3 == 0 ? 16 : 8 + (size_t)(x % 17);
			if (len < prefix + 1)
				len = prefix + 1 < 8 ? 8 : prefix + 1;
			raw[i][0] = (unsigned char)len;
			for (size_t j = 0; j < len; j++) {
				x ^= x << 13, x ^= x >> 7, x ^= x << 17;
				/* few distinct byte values: ties and zero bytes abound */
				raw[i][1 + j] = j < prefix ? (unsigned char)(0xA0 + j)
				                           : (unsigned char)((x >> 11) % (shape % 2 ? 3 : 200));
			}
		}
		qsort(raw, n, sizeof raw[0], key_order);
		unsigned char keys[64][24];
		size_t lens[64], m = 0;
		for (size_t i = 0; i < n; i++) { /* keys are unique within a block */
			if (m > 0 && ts__key_cmp(raw[i] + 1, raw[i][0], keys[m - 1], lens[m - 1]) == 0)
				continue;
			lens[m] = raw[i][0];
			memcpy(keys[m], raw[i] + 1, lens[m]);
			m++;
		}
		ts__cblock *b = block_of(keys, lens, m);
		ts__seekix *ix = ts__seekix_build(b);
		assert_non_null(ix);
		assert_int_equal(ix->n, m);
		for (size_t i = 0; i < m + 2; i++) {
			unsigned char bound[32];
			size_t base = i < m ? lens[i] : 0;
			if (i < m)
				memcpy(bound, keys[i], base);
			else /* before every key, after every key */
				memset(bound, i == m ? 0x00 : 0xFF, base = 20);
			for (int v = 0; v < 6; v++) {
				unsigned char bd[32];
				size_t blen = base;
				memcpy(bd, bound, base);
				if (v == 1 && blen > 0) /* just below */
					bd[blen - 1] = (unsigned char)(bd[blen - 1] - 1);
				if (v == 2 && blen > 0) /* just above */
					bd[blen - 1] = (unsigned char)(bd[blen - 1] + 1);
				if (v == 3 && blen > 0) /* cut short: below the key */
					blen = blen > 9 ? blen - 9 : blen - 1;
				if (v == 4) /* lengthened by a zero byte: just above */
					bd[blen++] = 0;
				if (v == 5) /* lengthened by 0xFF bytes */
					memset(bd + blen, 0xFF, 8), blen += 8;
				for (int eq = 0; eq < 2; eq++)
					assert_int_equal(ts__seekix_first_not(ix, b, bd, blen, eq),
					                 first_not_by_pass(keys, lens, m, bd, blen, eq));
			}
		}
		free(ix);
		ts__cblock_put(NULL, b);
	}
}

/* A key too short to be a row's (under 8 bytes): no index, the caller
 * searches the rows (and reports it). */
static void seekix_of_a_malformed_block(void **state)
{
	(void)state;
	unsigned char keys[2][24] = {"abcdefgh", "abc"};
	size_t lens[2] = {8, 3};
	ts__cblock *b = block_of(keys, lens, 2);
	assert_null(ts__seekix_build(b));
	ts__bcache c;
	assert_int_equal(ts__bcache_init(&c, 1 << 20), 0);
	assert_null(ts__cblock_seekix(&c, b));
	assert_null(b->seekix);
	ts__cblock_put(&c, b);
	ts__bcache_free(&c);
}

/* The index is built once, published in the block, and charged to the
 * cache while the block is cached: its header, a word a row, the prefix;
 * evicted, the charge goes with the block.  A private block's is not
 * charged to the cache.  A prefetch hint, of a cached block, a missing
 * one, or in a cache of nothing, changes nothing. */
static void seekix_charged_once(void **state)
{
	(void)state;
	unsigned char keys[3][24] = {"host_001\1\2\3\4\5\6\7\10", "host_001\1\2\3\4\5\6\7\11",
	                             "host_002\1\2\3\4\5\6\7\10"};
	size_t lens[3] = {16, 16, 16};
	ts__bcache c;
	assert_int_equal(ts__bcache_init(&c, 1 << 20), 0);
	ts__cblock *b = block_of(keys, lens, 3);
	assert_int_equal(ts__bcache_put(&c, b, TS_BCACHE_EVICT), 1);
	size_t used = c.used, bytes = b->bytes;
	ts__bcache_prefetch(&c, 9, 0);
	ts__bcache_prefetch(&c, 9, 1);
	ts__bcache_prefetch_rows(&c, 9, 0); /* no seek index yet */
	assert_int_equal(b->refs, 2);
	assert_int_equal(c.used, used);
	const ts__seekix *ix = ts__cblock_seekix(&c, b);
	assert_non_null(ix);
	assert_ptr_equal(ix, b->seekix);
	assert_int_equal(ix->plen, 7); /* "host_00" */
	assert_memory_equal(ix->prefix, "host_00", 7);
	size_t charge_ix = sizeof *ix + 3 * sizeof(uint64_t) + 7;
	assert_int_equal(c.used, used + charge_ix);
	assert_int_equal(b->bytes, bytes + charge_ix);
	ts__bcache_prefetch_rows(&c, 9, 0);
	ts__bcache_prefetch_rows(&c, 9, 7);
	assert_int_equal(b->refs, 2);
	assert_ptr_equal(ts__cblock_seekix(&c, b), ix); /* once */
	assert_int_equal(c.used, used + charge_ix);
	assert_int_equal(ts__seekix_first_not(ix, b, keys[1], 16, 0), 1);
	assert_int_equal(ts__seekix_first_not(ix, b, keys[1], 16, 1), 2);
	assert_int_equal(ts__seekix_first_not(ix, b, "host_003", 8, 0), 3);
	assert_int_equal(ts__seekix_first_not(ix, b, "host_00", 7, 1), 0);
	assert_int_equal(ts__seekix_first_not(ix, b, "host", 4, 1), 0);
	ts__cblock_put(&c, b);
	/* evicted: the whole charge goes */
	for (uint32_t n = 1; n < 200; n++) {
		ts__cblock *o = filled(10, n, 8 << 10);
		ts__bcache_put(&c, o, TS_BCACHE_EVICT);
		ts__cblock_put(&c, o);
	}
	assert_null(ts__bcache_get(&c, 9, 0));
	size_t sum = 0;
	for (ts__cblock *o = c.head; o; o = o->next)
		sum += o->bytes;
	assert_int_equal(c.used, sum);
	/* private */
	b = block_of(keys, lens, 3);
	used = c.used;
	assert_non_null(ts__cblock_seekix(&c, b));
	assert_int_equal(c.used, used);
	ts__cblock_put(&c, b);
	ts__bcache_free(&c);
	assert_int_equal(ts__bcache_init(&c, 0), 0);
	ts__bcache_prefetch(&c, 9, 0);
	ts__bcache_prefetch_rows(&c, 9, 0);
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
		cmocka_unit_test(bcache_forget_drops_a_tablets_blocks),
		cmocka_unit_test(bcache_duplicate_and_oversized_stay_private),
		cmocka_unit_test(bcache_grows),
		cmocka_unit_test(bcache_spare_room_only),
		cmocka_unit_test(bcache_fitted_blocks_are_charged_their_bytes),
		cmocka_unit_test(bcache_recent_hits_stay_put),
		cmocka_unit_test(seekix_first_not_matches_a_pass),
		cmocka_unit_test(seekix_of_a_malformed_block),
		cmocka_unit_test(seekix_charged_once),
		cmocka_unit_test(bcache_default_size_from_memory),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
