/*
 * test_crc32c.c -- CRC-32C: the standard check value, the hardware and
 * table implementations agree on every length and alignment, and
 * extending a checksum piecewise equals one pass.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "crc32c.h"

static void crc32c_check_value(void **state)
{
	(void)state;
	assert_int_equal(ts__crc32c(0, "123456789", 9), 0xE3069283u);
	assert_int_equal(ts__crc32c_sw(0, "123456789", 9), 0xE3069283u);
	assert_int_equal(ts__crc32c(0, "", 0), 0);
	/* 32 zero bytes: RFC 3720 B.4 */
	unsigned char zeros[32] = {0};
	assert_int_equal(ts__crc32c(0, zeros, 32), 0x8A9136AAu);
}

static void crc32c_hw_matches_sw(void **state)
{
	(void)state;
	unsigned char buf[1100];
	for (size_t i = 0; i < sizeof buf; i++)
		buf[i] = (unsigned char)(i * 131 + 7);
	for (size_t off = 0; off < 8; off++)
		for (size_t n = 0; n + off <= sizeof buf; n += 13)
			assert_int_equal(ts__crc32c(0, buf + off, n), ts__crc32c_sw(0, buf + off, n));
}

/* Long buffers take the three-stream path of the hardware version: every
 * length around its 12 KiB rounds, continued from a non-zero crc. */
static void crc32c_long_buffers_match_sw(void **state)
{
	(void)state;
	static unsigned char buf[40000];
	uint64_t x = 0x9E3779B97F4A7C15u;
	for (size_t i = 0; i < sizeof buf; i++) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		buf[i] = (unsigned char)x;
	}
	static const size_t lens[] = {12287, 12288, 12289, 24575, 24576, 24583, 36864, 39999};
	for (size_t i = 0; i < sizeof lens / sizeof *lens; i++)
		for (size_t off = 0; off < 2; off++) {
			assert_int_equal(ts__crc32c(0, buf + off, lens[i]), ts__crc32c_sw(0, buf + off, lens[i]));
			assert_int_equal(ts__crc32c(0xdeadbeef, buf + off, lens[i]),
			                 ts__crc32c_sw(0xdeadbeef, buf + off, lens[i]));
		}
}

static void crc32c_piecewise(void **state)
{
	(void)state;
	const char *s = "the quick brown fox jumps over the lazy dog";
	size_t n = strlen(s);
	uint32_t whole = ts__crc32c(0, s, n);
	for (size_t cut = 0; cut <= n; cut++)
		assert_int_equal(ts__crc32c(ts__crc32c(0, s, cut), s + cut, n - cut), whole);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(crc32c_check_value),
		cmocka_unit_test(crc32c_hw_matches_sw),
		cmocka_unit_test(crc32c_long_buffers_match_sw),
		cmocka_unit_test(crc32c_piecewise),
	};
	return cmocka_run_group_tests_name("crc32c", tests, NULL, NULL);
}
