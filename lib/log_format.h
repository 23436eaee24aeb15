/*
 * log_format.h -- constants of the append-only log, mirroring
 * docs/log-format.md (the byte tables are there).
 *
 * A table's log is a sequence of fixed-size segment files
 * <table>/log/<16 hex digits>.seg.  Each starts with a header page; the
 * rest is data.  Log positions (LSNs) number the data bytes only:
 * lsn = segment * TS_SEG_DATA + offset in the data area, so the log is one
 * contiguous address space although its segments are separate files.
 * Every record is 8-byte aligned; a record never straddles two segments.
 */
#ifndef TS_LOG_FORMAT_H
#define TS_LOG_FORMAT_H

#include <stdint.h>

/* Segments. */
/* The header page: 4096 bytes on every machine, whatever its page size
 * (a format constant; docs/log-format.md section 1.1).  The data area
 * begins at this file offset, which mmap cannot take as an offset on a
 * machine of larger pages: segments are mapped from file offset 0. */
#define TS_SEG_HEADER 4096
/* Test builds only may choose smaller segments (test_crash_segments uses
 * 1 MiB, so that kills land in rollovers); files of different sizes are
 * refused on open (the header records the data size). */
#ifndef TS_SEG_DATA_SHIFT
#define TS_SEG_DATA_SHIFT 26
#endif
#define TS_SEG_DATA (UINT64_C(1) << TS_SEG_DATA_SHIFT) /* 64 MiB of data: the default */
/* Data sizes a segment may have (ts_options.log_segment_size, recorded in
 * each segment's header): powers of two from 1 MiB to 64 MiB. */
#define TS_SEG_SHIFT_MIN 20
#define TS_SEG_SHIFT_MAX 26
#define TS_SEG_FILE_SIZE (TS_SEG_HEADER + TS_SEG_DATA)
#define TS_SEG_MAGIC "TSLOGSG1"         /* 8 bytes */
/* Segment format versions.  Version 1 segments hold 64 MiB of data, and
 * are written so still, byte for byte; segments of any other size are
 * version 2, which builds that knew only 64 MiB segments refuse
 * (TS_EVERSION) instead of extending them to 64 MiB.  Readers accept
 * both; a version 1 header naming another data size is damage. */
#define TS_SEG_VERSION_64MIB 1
#define TS_SEG_VERSION_SIZED 2
#define TS_SEG_V1_SHIFT 26              /* the data size of version 1 */

/* Segment header page. */
#define TS_SEGH_OFF_MAGIC 0             /* 8  magic */
#define TS_SEGH_OFF_VERSION 8           /* u32 format version */
#define TS_SEGH_OFF_HEADER_SIZE 12      /* u32 TS_SEG_HEADER */
#define TS_SEGH_OFF_SEGNO 16            /* u64 segment number */
#define TS_SEGH_OFF_DATA_SIZE 24        /* u64 TS_SEG_DATA */
#define TS_SEGH_OFF_CRC 32              /* u32 CRC-32C of bytes 0..32 */
#define TS_SEGH_OFF_CLEAN 36            /* u32 1 = writer closed cleanly */
#define TS_SEGH_FIXED 32                /* bytes covered by the CRC */

/* Batch header: starts every batch. */
#define TS_BATCH_MAGIC 0x48425354u      /* "TSBH" little-endian */
#define TS_BATCH_HEADER_SIZE 16         /* u32 magic, u32 flags, u64 body_len */

/* Row record: u32 row length, u16 schema version, u16 flags, row bytes,
 * zero padding to 8. */
#define TS_ROWREC_HEADER 8

/* AVL node: u64 key bytes 0..8, u64 key bytes 8..16, u64 last 8 key
 * bytes, u64 left, u64 right, u64 row<<8 | short key length<<2 | balance. */
#define TS_NODE_SIZE 48

/* Commit record: ends every batch. */
#define TS_COMMIT_MAGIC 0x4d435354u     /* "TSCM" little-endian */
#define TS_COMMIT_OFF_MAGIC 0           /* u32 */
#define TS_COMMIT_OFF_NROOTS 4          /* u32 filling tablets listed */
#define TS_COMMIT_OFF_SEQ 8             /* u64 commit number, 1, 2, ... */
#define TS_COMMIT_OFF_BATCH 16          /* u64 LSN of the batch header */
#define TS_COMMIT_OFF_PREV 24           /* u64 LSN of the previous commit record */
#define TS_COMMIT_OFF_TIME 32           /* i64 wall-clock time of the commit */
#define TS_COMMIT_OFF_ROWS 40           /* u64 rows in this batch */
#define TS_COMMIT_FIXED 48
#define TS_ROOT_SIZE 80                 /* per root: see ts__root */

/* Root entry (ts__root), at TS_COMMIT_FIXED + i * TS_ROOT_SIZE. */
#define TS_ROOT_OFF_PERIOD_START 0      /* i64 */
#define TS_ROOT_OFF_PERIOD_LEN 8        /* i64 */
#define TS_ROOT_OFF_ROOT 16             /* u64 LSN of the root node, 0 = empty */
#define TS_ROOT_OFF_ROWS 24             /* u64 */
#define TS_ROOT_OFF_BYTES 32            /* u64 */
#define TS_ROOT_OFF_MIN_TS 40           /* i64 */
#define TS_ROOT_OFF_MAX_TS 48           /* i64 */
#define TS_ROOT_OFF_BORN 56             /* u64 LSN of the tree's first row record */
#define TS_ROOT_OFF_SINCE 64            /* u64 LSN of the batch that began the tree */
#define TS_ROOT_OFF_FLAGS 72            /* u32 TS_ROOT_FROZEN */
#define TS_ROOT_OFF_ZERO 76             /* u32 0 */
#define TS_COMMIT_TRAILER 8             /* u32 CRC-32C, u32 record length */
#define TS_COMMIT_SIZE(n) (TS_COMMIT_FIXED + (n) * TS_ROOT_SIZE + TS_COMMIT_TRAILER)
/* Root flags: TS_ROOT_FROZEN (1, log.h); the tombstone root (last entry
 * of a commit, when present: tombstone.h) carries this one. */
#define TS_ROOT_TOMBSTONES 2u
/* Root entries a commit may hold: the trees and the tombstone root. */
#define TS_COMMIT_ROOTS_MAX (TS_FILLING_MAX + 1)

/* Tombstone record (docs/log-format.md section 3.5): u32 magic, u32
 * length, u64 previous record of the chain, u64 its batch header, i64
 * tmin, i64 tmax, u32 flags, u32 lo length, u32 hi length, u32 zero, then
 * the lo and hi key bytes; zero padding to 8. */
#define TS_TOMB_MAGIC 0x42545354u       /* "TSTB" little-endian */
#define TS_TOMB_OFF_MAGIC 0
#define TS_TOMB_OFF_LEN 4
#define TS_TOMB_OFF_PREV 8
#define TS_TOMB_OFF_BATCH 16
#define TS_TOMB_OFF_TMIN 24
#define TS_TOMB_OFF_TMAX 32
#define TS_TOMB_OFF_FLAGS 40
#define TS_TOMB_OFF_LOLEN 44
#define TS_TOMB_OFF_HILEN 48
#define TS_TOMB_OFF_ZERO 52
#define TS_TOMB_FIXED 56

/* Per-table shared head file <table>/log/HEAD (4096 bytes whatever the
 * machine's page size, mapped from offset 0; never synced): lets readers
 * in other processes find the newest commit. */
#define TS_HEAD_FILE "HEAD"
#define TS_HEAD_SIZE 4096
#define TS_HEAD_MAGIC "TSHEAD01"
#define TS_HEAD_OFF_MAGIC 0             /* 8 */
#define TS_HEAD_OFF_COMMIT 8            /* u64 LSN of the newest commit record, 0 = none */
#define TS_HEAD_OFF_PID 16              /* u64 writer pid */
#define TS_HEAD_OFF_SYNCED 24           /* u64 LSN the log was durable through when written */
#define TS_HEAD_OFF_BOOT 32             /* the writer's boot id (text, NUL-padded); all 0 = unknown */
#define TS_HEAD_BOOT_SIZE 40

#endif
