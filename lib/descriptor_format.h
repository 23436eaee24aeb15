/*
 * descriptor_format.h -- the constants of the DESCRIPTOR file, mirroring
 * docs/descriptor-format.md (the byte tables are there).
 */
#ifndef TS_DESCRIPTOR_FORMAT_H
#define TS_DESCRIPTOR_FORMAT_H

#define TS_DESC_FILE "DESCRIPTOR"
#define TS_DESC_MAGIC "TSDESCR1"      /* 8 bytes, no NUL */
#define TS_DESC_MAGIC_SIZE 8
/* Format versions: each writer writes the oldest one that holds what the
 * descriptor has, so that older builds keep reading every table that
 * uses nothing newer. */
#define TS_DESC_VERSION 4             /* newest: written when a tablet has
                                       * a version interval other than
                                       * [0, 0] (docs/corrections.md) */
#define TS_DESC_VERSION_POLICY 3      /* written when the duplicate policy
                                       * is not reject (and no tablet has
                                       * an interval) */
#define TS_DESC_VERSION_HORIZON 2     /* written when the descriptor has an
                                       * expiry horizon (and rejects) */
#define TS_DESC_VERSION_MIN 1         /* oldest read, and written when it has
                                       * neither */

/* The body tail of versions 3 and 4: the horizon (this value when there
 * is none), then one byte, the duplicate policy (TS_ON_DUPLICATE_*). */
#define TS_DESC_NO_HORIZON INT64_MIN
#define TS_DESC_POLICY_MAX 1          /* highest policy value a reader takes */

/* Header: offsets and sizes. */
#define TS_DESC_OFF_MAGIC 0
#define TS_DESC_OFF_VERSION 8         /* u32 format version */
#define TS_DESC_OFF_BODY_LEN 12       /* u32 bytes of the body */
#define TS_DESC_OFF_BODY_CRC 16       /* u32 CRC-32C of the body */
#define TS_DESC_OFF_HEADER_CRC 20     /* u32 CRC-32C of bytes 0..20 */
#define TS_DESC_HEADER_SIZE 24

#endif
