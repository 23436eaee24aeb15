/*
 * descriptor_format.h -- the constants of the DESCRIPTOR file, mirroring
 * docs/descriptor-format.md (the byte tables are there).
 */
#ifndef TS_DESCRIPTOR_FORMAT_H
#define TS_DESCRIPTOR_FORMAT_H

#define TS_DESC_FILE "DESCRIPTOR"
#define TS_DESC_MAGIC "TSDESCR1"      /* 8 bytes, no NUL */
#define TS_DESC_MAGIC_SIZE 8
#define TS_DESC_VERSION 2             /* newest format version: written when the
                                       * descriptor has an expiry horizon */
#define TS_DESC_VERSION_MIN 1         /* oldest read, and written when it has none */

/* Header: offsets and sizes. */
#define TS_DESC_OFF_MAGIC 0
#define TS_DESC_OFF_VERSION 8         /* u32 format version */
#define TS_DESC_OFF_BODY_LEN 12       /* u32 bytes of the body */
#define TS_DESC_OFF_BODY_CRC 16       /* u32 CRC-32C of the body */
#define TS_DESC_OFF_HEADER_CRC 20     /* u32 CRC-32C of bytes 0..20 */
#define TS_DESC_HEADER_SIZE 24

#endif
