/*
 * test_buf.c -- byte buffers and readers (lib/buf.h): buffers that start
 * in the caller's storage stay there while they fit, move to the heap
 * with their bytes when they outgrow it and never write past it; the
 * fixed-width and varint fields round-trip; a reader that runs past its
 * end flags it and yields zeros; a buffer that cannot grow says
 * TS_ENOMEM, keeps its bytes and stays failed.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "buf.h"
#include "tsstore.h"

/* Storage of 16 bytes between guard bytes that must stay untouched. */
struct guarded {
	unsigned char before[8];
	unsigned char mem[16];
	unsigned char after[8];
};

static void assert_guards(const struct guarded *g)
{
	for (int i = 0; i < 8; i++) {
		assert_int_equal(g->before[i], 0xA5);
		assert_int_equal(g->after[i], 0xA5);
	}
}

static void buf_lent_storage_until_outgrown(void **state)
{
	(void)state;
	struct guarded g;
	memset(&g, 0xA5, sizeof g);
	ts_buf b;
	ts__buf_init_in(&b, g.mem, sizeof g.mem);
	assert_ptr_equal(b.data, g.mem);
	assert_int_equal(b.len, 0);

	/* 16 bytes fit exactly: no allocation */
	for (int i = 0; i < 16; i++)
		ts__put_u8(&b, (uint8_t)i);
	assert_ptr_equal(b.data, g.mem);
	assert_int_equal(b.len, 16);
	assert_int_equal(b.oom, 0);
	assert_guards(&g);

	/* the 17th byte moves the buffer to the heap, bytes and all */
	ts__put_u8(&b, 16);
	assert_ptr_not_equal(b.data, g.mem);
	assert_int_equal(b.len, 17);
	assert_true(b.cap >= 17);
	for (int i = 0; i < 17; i++)
		assert_int_equal(b.data[i], i);
	assert_guards(&g);
	/* and the storage it left is as it was */
	for (int i = 0; i < 16; i++)
		assert_int_equal(g.mem[i], i);

	/* it keeps growing like any heap buffer */
	unsigned char big[1000];
	memset(big, 0x3C, sizeof big);
	ts__put(&b, big, sizeof big);
	assert_int_equal(b.len, 1017);
	assert_int_equal(b.data[16], 16);
	assert_int_equal(b.data[1016], 0x3C);
	ts__buf_free(&b); /* frees the heap copy (ASan checks the rest) */
	assert_null(b.data);
	assert_int_equal(b.len, 0);
}

static void buf_lent_storage_reused_and_freed(void **state)
{
	(void)state;
	unsigned char mem[8];
	ts_buf b;
	ts__buf_init_in(&b, mem, sizeof mem);
	/* reset and refilled within the storage: still no allocation */
	for (int round = 0; round < 3; round++) {
		b.len = 0;
		ts__put_u64(&b, UINT64_C(0x0102030405060708) + (uint64_t)round);
		assert_ptr_equal(b.data, mem);
		assert_int_equal(b.len, 8);
	}
	ts_reader r;
	ts__reader_init(&r, b.data, b.len);
	assert_int_equal(ts__get_u64(&r), UINT64_C(0x0102030405060708) + 2);
	assert_int_equal(r.bad, 0);
	/* freeing a buffer still in the caller's storage frees nothing (a
	 * free of this stack array would abort under ASan) */
	ts__buf_free(&b);
	assert_null(b.data);
	/* after free it is an ordinary empty buffer */
	ts__put_u32(&b, 7);
	assert_non_null(b.data);
	assert_ptr_not_equal(b.data, mem);
	ts__buf_free(&b);
}

static void buf_fields_roundtrip(void **state)
{
	(void)state;
	static const uint64_t varints[] = {0, 1, 127, 128, 300, 16383, 16384, UINT32_MAX,
	                                   UINT64_C(1) << 63, UINT64_MAX};
	unsigned char mem[4];
	ts_buf b;
	ts__buf_init_in(&b, mem, sizeof mem); /* outgrown at once */
	ts__put_u8(&b, 0xAB);
	ts__put_u16(&b, 0xBEEF);
	ts__put_u32(&b, 0xDEADBEEF);
	ts__put_u64(&b, UINT64_C(0x1122334455667788));
	for (size_t i = 0; i < sizeof varints / sizeof *varints; i++)
		ts__put_varint(&b, varints[i]);
	ts__put_bytes(&b, "tsstore", 7);
	assert_int_equal(b.oom, 0);

	ts_reader r;
	ts__reader_init(&r, b.data, b.len);
	assert_int_equal(ts__get_u8(&r), 0xAB);
	assert_int_equal(ts__get_u16(&r), 0xBEEF);
	assert_int_equal(ts__get_u32(&r), 0xDEADBEEF);
	assert_int_equal(ts__get_u64(&r), UINT64_C(0x1122334455667788));
	for (size_t i = 0; i < sizeof varints / sizeof *varints; i++)
		assert_int_equal(ts__get_varint(&r), varints[i]);
	const void *p;
	size_t n;
	ts__get_bytes(&r, &p, &n);
	assert_int_equal(n, 7);
	assert_memory_equal(p, "tsstore", 7);
	assert_int_equal(r.bad, 0);
	assert_int_equal(ts__reader_left(&r), 0);

	/* past the end: zeros and the flag, which stays */
	assert_int_equal(ts__get_u32(&r), 0);
	assert_int_equal(r.bad, 1);
	assert_int_equal(ts__get_u8(&r), 0);
	assert_int_equal(r.bad, 1);
	ts__buf_free(&b);
}

static void buf_reader_short_fields(void **state)
{
	(void)state;
	/* a varint whose continuation bit runs off the end */
	const unsigned char cut[] = {0x80, 0x80};
	ts_reader r;
	ts__reader_init(&r, cut, sizeof cut);
	assert_int_equal(ts__get_varint(&r), 0);
	assert_int_equal(r.bad, 1);
	/* a length that claims more bytes than there are */
	const unsigned char lie[] = {5, 'a', 'b'};
	const void *p;
	size_t n;
	ts__reader_init(&r, lie, sizeof lie);
	ts__get_bytes(&r, &p, &n);
	assert_int_equal(r.bad, 1);
	/* a u64 with 7 bytes left */
	ts__reader_init(&r, lie, 3);
	assert_int_equal(ts__get_u64(&r), 0);
	assert_int_equal(r.bad, 1);
}

static void buf_reserve_too_big_is_enomem(void **state)
{
	(void)state;
	char want[100];
	ts_buf b;
	ts__buf_init(&b);
	ts__put(&b, "abc", 3);
	assert_int_equal(ts__buf_reserve(&b, SIZE_MAX), TS_ENOMEM);
	assert_int_equal(b.oom, 1);
	snprintf(want, sizeof want, "out of memory growing a buffer of 3 bytes by %zu", SIZE_MAX);
	assert_string_equal(ts_errmsg(NULL), want);
	assert_int_equal(b.len, 3);
	assert_memory_equal(b.data, "abc", 3);
	/* sticky: a later small reserve fails too, and puts change nothing */
	assert_int_equal(ts__buf_reserve(&b, 1), TS_ENOMEM);
	assert_string_equal(ts_errmsg(NULL), "out of memory (a buffer failed to grow before)");
	ts__put_u64(&b, 7);
	assert_int_equal(b.len, 3);
	ts__buf_free(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(buf_lent_storage_until_outgrown),
		cmocka_unit_test(buf_lent_storage_reused_and_freed),
		cmocka_unit_test(buf_fields_roundtrip),
		cmocka_unit_test(buf_reader_short_fields),
		cmocka_unit_test(buf_reserve_too_big_is_enomem),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
