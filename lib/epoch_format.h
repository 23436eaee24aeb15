/*
 * epoch_format.h -- the constants of the EPOCH file, mirroring
 * docs/epoch-format.md (the byte table is there), and what the file
 * holds decoded: a header of no module of lib/ (handle.h keeps a
 * database's EPOCH in the handle without depending on epoch.c).
 */
#ifndef TS_EPOCH_FORMAT_H
#define TS_EPOCH_FORMAT_H

#include <stdint.h>

#include "tsstore.h"

/* What EPOCH holds: a ts_epoch's lineage and epoch, and the fence (0, or
 * a newer epoch of the lineage known to exist: ts_epoch_fence). */
typedef struct ts__epoch_file {
	uint8_t lineage[TS_LINEAGE_SIZE];
	uint64_t epoch;
	uint64_t fenced_by;
} ts__epoch_file;

#define TS_EPOCH_FILE "EPOCH"
#define TS_EPOCH_MAGIC "TSEPOCH1"       /* 8 bytes, no NUL */
#define TS_EPOCH_MAGIC_SIZE 8
#define TS_EPOCH_VERSION 1              /* not fenced: 48 bytes */
#define TS_EPOCH_VERSION_FENCED 2       /* fenced: 56 bytes, fenced_by at 40 */

#define TS_EPOCH_OFF_MAGIC 0
#define TS_EPOCH_OFF_VERSION 8          /* u32 format version */
#define TS_EPOCH_OFF_RESERVED 12        /* u32, 0 */
#define TS_EPOCH_OFF_LINEAGE 16         /* TS_LINEAGE_SIZE random bytes */
#define TS_EPOCH_OFF_EPOCH 32           /* u64 epoch, 1 or more */
#define TS_EPOCH_OFF_CRC 40             /* version 1: u32 CRC-32C of bytes 0..40 */
#define TS_EPOCH_OFF_PAD 44             /* version 1: u32, 0 */
#define TS_EPOCH_SIZE 48                /* version 1 */

/* Version 2 (a fenced database): the same first 40 bytes, then */
#define TS_EPOCH_OFF_FENCED_BY 40       /* u64, above the epoch */
#define TS_EPOCH_OFF_CRC2 48            /* u32 CRC-32C of bytes 0..48 */
#define TS_EPOCH_OFF_PAD2 52            /* u32, 0 */
#define TS_EPOCH_SIZE_FENCED 56
#define TS_EPOCH_SIZE_MAX TS_EPOCH_SIZE_FENCED

#endif
