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
#define TS_DESC_VERSION 6             /* newest: version 5's body, then the
                                       * changes horizon and the change
                                       * records (docs/corrections.md
                                       * section 4); written when a record
                                       * is kept or the horizon is set */
#define TS_DESC_VERSION_CHANGES 6
#define TS_DESC_VERSION_CORRECTIONS 5 /* version 4's body, then a flags
                                       * byte and the tombstones; written
                                       * when a flag is set or the list is
                                       * not empty */
#define TS_DESC_VERSION_MAX TS_DESC_VERSION
#define TS_DESC_VERSION_INTERVALS 4   /* written when a tablet has a version
                                       * interval other than [0, 0] (and
                                       * nothing of version 5 is needed) */
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
#define TS_DESC_POLICY_MAX 1          /* highest policy value a reader takes
                                       * in versions 3 and 4 */
#define TS_DESC_POLICY_MAX_V5 2       /* ... and in version 5 (replace) */

/* Version 5 appends to version 4's body: u8 flags, then u32 ntombstones
 * and that many tombstone records. */
#define TS_DESC_REPLACED 0x01u        /* flags: the table has held the policy
                                       * replace or taken a replacing batch:
                                       * its sources may share keys, which
                                       * readers resolve newest first.  Set
                                       * once, never cleared */
#define TS_DESC_TOMBSTONES_LOGGED 0x02u /* flags: the log may hold tombstone
                                       * records (tombstone.h): builds
                                       * that do not know them must
                                       * refuse the table */
#define TS_DESC_DELETED 0x04u         /* flags: the table has taken a delete.
                                       * Set with the first, never cleared
                                       * (TS_DESC_TOMBSTONES_LOGGED is, once
                                       * no tombstone is left): what a reader
                                       * saw may since have lost rows, so a
                                       * cache must not take an unchanged row
                                       * count for unchanged rows (the stat
                                       * "corrected") */
#define TS_DESC_FLAGS_KNOWN 0x07u     /* the flags a reader understands */

/* Version 6 appends to version 5's body: u64 changes horizon, i64 its
 * ts range's first and last, u32 nrecords and that many change records
 * (each laid out as a tombstone record). */
/* TS_CHANGE_RECORDS_MAX (tsstore.h, 4096): the most records it keeps;
 * and at most this many bytes of key bounds in them (the oldest go
 * first past either bound, into the horizon) */
#define TS_CHANGE_RECORDS_KEY_BYTES (1u << 20)

/* Header: offsets and sizes. */
#define TS_DESC_OFF_MAGIC 0
#define TS_DESC_OFF_VERSION 8         /* u32 format version */
#define TS_DESC_OFF_BODY_LEN 12       /* u32 bytes of the body */
#define TS_DESC_OFF_BODY_CRC 16       /* u32 CRC-32C of the body */
#define TS_DESC_OFF_HEADER_CRC 20     /* u32 CRC-32C of bytes 0..20 */
#define TS_DESC_HEADER_SIZE 24

#endif
