/*
 * crc32c.c -- CRC-32C with the SSE4.2 instruction when the CPU has it and
 * a table-driven (slicing-by-8) fallback otherwise; the hardware path
 * runs three streams in parallel and joins them (see "Shifting").
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

static uint32_t x_pow_8n(uint64_t n);
#if defined(__x86_64__)
#define STREAM 4096 /* bytes per stream per round of the hardware path */
static uint32_t shift1, shift2; /* x^(8 * STREAM), x^(8 * 2 * STREAM) */
#endif

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
	shift1 = x_pow_8n(STREAM);
	shift2 = x_pow_8n(2 * STREAM);
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

/*
 * Shifting a CRC register over zeros.  The raw register (without the
 * pre- and post-inversion) is linear: the register after A||B, started at
 * r, is shift(register after A, |B|) ^ (register of B started at 0), where
 * shift(r, n) multiplies r by x^(8n) modulo the polynomial.  That lets the
 * hardware path run three independent streams at once (the instruction's
 * latency is three times its throughput) and join them.
 */

/* a * b modulo POLY, both in the reflected representation (bit 31 is x^0). */
static uint32_t mul_mod(uint32_t a, uint32_t b)
{
	uint32_t prod = 0;
	for (uint32_t bit = UINT32_C(1) << 31; bit; bit >>= 1) {
		if (a & bit)
			prod ^= b;
		b = b & 1 ? (b >> 1) ^ POLY : b >> 1;
	}
	return prod;
}

/* x^(8n) modulo POLY, by square-and-multiply. */
static uint32_t x_pow_8n(uint64_t n)
{
	uint32_t result = UINT32_C(1) << 31; /* 1 */
	uint32_t sq = UINT32_C(1) << 23;      /* x^8 */
	for (; n; n >>= 1) {
		if (n & 1)
			result = mul_mod(result, sq);
		sq = mul_mod(sq, sq);
	}
	return result;
}

#if defined(__x86_64__)
__attribute__((target("sse4.2")))
static uint64_t crc_hw_raw(uint64_t c, const unsigned char *p, size_t len)
{
	for (; len >= 8; p += 8, len -= 8) {
		uint64_t w;
		memcpy(&w, p, 8);
		c = __builtin_ia32_crc32di(c, w);
	}
	while (len--)
		c = __builtin_ia32_crc32qi((uint32_t)c, *p++);
	return c;
}

__attribute__((target("sse4.2")))
static uint32_t crc32c_hw(uint32_t crc, const void *buf, size_t len)
{
	const unsigned char *p = buf;
	uint64_t c = ~crc & 0xffffffffu;
	while (len >= 3 * STREAM) {
		uint64_t a = c, b = 0, d = 0;
		for (size_t i = 0; i < STREAM; i += 8) {
			uint64_t wa, wb, wd;
			memcpy(&wa, p + i, 8);
			memcpy(&wb, p + STREAM + i, 8);
			memcpy(&wd, p + 2 * STREAM + i, 8);
			a = __builtin_ia32_crc32di(a, wa);
			b = __builtin_ia32_crc32di(b, wb);
			d = __builtin_ia32_crc32di(d, wd);
		}
		c = mul_mod(shift2, (uint32_t)a) ^ mul_mod(shift1, (uint32_t)b) ^ (uint32_t)d;
		p += 3 * STREAM;
		len -= 3 * STREAM;
	}
	return ~(uint32_t)crc_hw_raw(c, p, len);
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
