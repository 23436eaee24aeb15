/*
 * tablet_format.h -- constants of the on-disk tablet file, mirroring
 * docs/tablet-format.md (the byte tables are there).
 *
 *   header | block ... block | footer | trailer
 *
 * A tablet is immutable once renamed into <table>/tablets/.  Every part
 * carries its own CRC-32C, so damage anywhere is found where it is read:
 * the header and trailer at open, the footer at open, a block when read.
 */
#ifndef TS_TABLET_FORMAT_H
#define TS_TABLET_FORMAT_H

#define TS_TABLET_SUFFIX ".tab"        /* <table>/tablets/<16 hex id>.tab */
#define TS_TABLET_VERSION 3     /* newest written and read: 2 added each
                                 * block's first key, 3 each block's hi */
#define TS_TABLET_VERSION_UNVERSIONED 2 /* written when no row carries a
                                 * version (every source's hi was 0) */
#define TS_TABLET_VERSION_BLOCK_HI 3 /* the first with a block's hi */
#define TS_TABLET_VERSION_MIN 1 /* oldest read */

/* Header, at offset 0. */
#define TS_TABH_SIZE 32
#define TS_TABH_MAGIC "TSTABLT1"        /* 8 bytes */
#define TS_TABH_OFF_MAGIC 0
#define TS_TABH_OFF_VERSION 8           /* u32 TS_TABLET_VERSION */
#define TS_TABH_OFF_SIZE 12             /* u32 TS_TABH_SIZE */
#define TS_TABH_OFF_ID 16               /* u64 tablet id */
#define TS_TABH_OFF_SCHEMA 24           /* u32 schema version of every row */
#define TS_TABH_OFF_CRC 28              /* u32 CRC-32C of bytes 0..28 */

/* Block header: precedes each block's stored bytes. */
#define TS_BLKH_SIZE 16
#define TS_BLKH_OFF_STORED 0            /* u32 stored (compressed) length */
#define TS_BLKH_OFF_RAW 4               /* u32 raw length */
#define TS_BLKH_OFF_CODEC 8             /* u8 codec, then 3 zero bytes */
#define TS_BLKH_OFF_CRC 12              /* u32 CRC-32C of bytes 0..12 then the stored bytes */

/* Codecs of blocks and the footer. */
#define TS_CODEC_RAW 0
#define TS_CODEC_LZO1X 1                /* LZO1X-1 */

/* Per statistics column, per block entry of the footer. */
#define TS_STAT_SIZE 40                 /* u64 count, i128/f64 sum, min, max */

/* Trailer: the last TS_TABT_SIZE bytes of the file. */
#define TS_TABT_SIZE 40
#define TS_TABT_MAGIC "TSTABEND"        /* 8 bytes */
#define TS_TABT_OFF_FOOTER 0            /* u64 footer offset */
#define TS_TABT_OFF_STORED 8            /* u32 footer stored length */
#define TS_TABT_OFF_RAW 12              /* u32 footer raw length */
#define TS_TABT_OFF_FOOTER_CRC 16       /* u32 CRC-32C of the stored footer */
#define TS_TABT_OFF_CODEC 20            /* u8 footer codec, then 3 zero bytes */
#define TS_TABT_OFF_CRC 24              /* u32 CRC-32C of bytes 0..24 */
#define TS_TABT_OFF_ZERO 28             /* u32 zero */
#define TS_TABT_OFF_MAGIC 32            /* 8 magic */

/* Bloom filter of key stems (the key without its ts). */
#define TS_BLOOM_BITS_PER_STEM 10
#define TS_BLOOM_HASHES 7

#endif
