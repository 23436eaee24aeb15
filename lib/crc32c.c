/*
 * crc32c.c -- CRC-32C with the SSE4.2 instruction when the CPU has it and
 * a table-driven (slicing-by-8) fallback otherwise.
 *
 * The polynomial is Castagnoli's (reflected 0x82F63B78), the one iSCSI,
 * ext4 and LevelDB use; its hardware instruction makes checksumming every
 * commit cheap.  The choice of implementation is made once, on first use,
 * and both give identical results (tests/unit/test_crc32c.c checks them
 * against each other and against the standard check value).
 */
#include <pthread.h>
#include <string.h>

#include "crc32c.h"

#define POLY 0x82F63B78u

static uint32_t table[8][256];
static int have_hw;
static pthread_once_t init_once = PTHREAD_ONCE_INIT;

static void init(void)
{
	for (uint32_t n = 0; n < 256; n++) {
		uint32_t c = n;
		for (int k = 0; k < 8; k++)
			c = c & 1 ? (c >> 1) ^ POLY : c >> 1;
		table[0][n] = c;
	}
	for (uint32_t n = 0; n < 256; n++)
		for (int k = 1; k < 8; k++)
			table[k][n] = (table[k - 1][n] >> 8) ^ table[0][table[k - 1][n] & 0xff];
#if defined(__x86_64__)
	have_hw = __builtin_cpu_supports("sse4.2");
#endif
}

uint32_t ts__crc32c_sw(uint32_t crc, const void *buf, size_t len)
{
	const unsigned char *p = buf;
	pthread_once(&init_once, init);
	crc = ~crc;
	while (len >= 8) {
		uint64_t w;
		memcpy(&w, p, 8);
		w ^= crc;
		crc = table[7][w & 0xff] ^ table[6][(w >> 8) & 0xff] ^
		      table[5][(w >> 16) & 0xff] ^ table[4][(w >> 24) & 0xff] ^
		      table[3][(w >> 32) & 0xff] ^ table[2][(w >> 40) & 0xff] ^
		      table[1][(w >> 48) & 0xff] ^ table[0][w >> 56];
		p += 8;
		len -= 8;
	}
	while (len--)
		crc = (crc >> 8) ^ table[0][(crc ^ *p++) & 0xff];
	return ~crc;
}

#if defined(__x86_64__)
__attribute__((target("sse4.2")))
static uint32_t crc32c_hw(uint32_t crc, const void *buf, size_t len)
{
	const unsigned char *p = buf;
	uint64_t c = ~crc;
	while (len >= 8) {
		uint64_t w;
		memcpy(&w, p, 8);
		c = __builtin_ia32_crc32di(c, w);
		p += 8;
		len -= 8;
	}
	uint32_t c32 = (uint32_t)c;
	while (len--)
		c32 = __builtin_ia32_crc32qi(c32, *p++);
	return ~c32;
}
#endif

uint32_t ts__crc32c(uint32_t crc, const void *buf, size_t len)
{
	pthread_once(&init_once, init);
#if defined(__x86_64__)
	if (have_hw)
		return crc32c_hw(crc, buf, len);
#endif
	return ts__crc32c_sw(crc, buf, len);
}
