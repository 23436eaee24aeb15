/*
 * crc32c.h -- CRC-32C (Castagnoli), the checksum of every log commit,
 * tablet block, footer and descriptor.
 */
#ifndef TS_CRC32C_H
#define TS_CRC32C_H

#include <stddef.h>
#include <stdint.h>

/* Extend crc (0 to start) over buf[0..len). */
uint32_t ts__crc32c(uint32_t crc, const void *buf, size_t len);

/* The portable table-driven implementation (what ts__crc32c uses when the
 * CPU lacks SSE4.2); exposed so tests can compare the two. */
uint32_t ts__crc32c_sw(uint32_t crc, const void *buf, size_t len);

#endif
