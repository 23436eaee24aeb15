/*
 * epoch_format.h -- the constants of the EPOCH file, mirroring
 * docs/epoch-format.md (the byte table is there).
 */
#ifndef TS_EPOCH_FORMAT_H
#define TS_EPOCH_FORMAT_H

#define TS_EPOCH_FILE "EPOCH"
#define TS_EPOCH_MAGIC "TSEPOCH1"       /* 8 bytes, no NUL */
#define TS_EPOCH_MAGIC_SIZE 8
#define TS_EPOCH_VERSION 1              /* the only format so far */

#define TS_EPOCH_OFF_MAGIC 0
#define TS_EPOCH_OFF_VERSION 8          /* u32 format version */
#define TS_EPOCH_OFF_RESERVED 12        /* u32, 0 */
#define TS_EPOCH_OFF_LINEAGE 16         /* TS_LINEAGE_SIZE random bytes */
#define TS_EPOCH_OFF_EPOCH 32           /* u64 epoch, 1 or more */
#define TS_EPOCH_OFF_CRC 40             /* u32 CRC-32C of bytes 0..40 */
#define TS_EPOCH_OFF_PAD 44             /* u32, 0 */
#define TS_EPOCH_SIZE 48

#endif
