/*
 * tslimits.h -- every internal limit and default of libtsstore, named once.
 *
 * (Not limits.h: with -iquote lib, glibc's <limits.h> reached this file
 * through gcc's #include_next, so the system header went unread and the
 * dependency files missed tsstore.h -- objects went stale when it
 * changed.)
 *
 * The limits of the data model that users see (name length, columns, key
 * columns, value size) are in tsstore.h; this header holds the rest, so a
 * number that bounds memory, files or time is never written twice.
 */
#ifndef TS_LIMITS_H
#define TS_LIMITS_H

#include "tsstore.h"

#define TS_NS_PER_SEC INT64_C(1000000000)
#define TS_NS_PER_MIN (60 * TS_NS_PER_SEC)
#define TS_NS_PER_HOUR (60 * TS_NS_PER_MIN)
#define TS_NS_PER_DAY (24 * TS_NS_PER_HOUR)

/* Longest message kept by ts__fail. */
#define TS_ERRMSG_MAX 1024

/* Longest path the library builds (database dir + table + file). */
#define TS_PATH_MAX 4096

/* Defaults of ts_options (DESIGN.md sections 2 and 3). */
#define TS_DEFAULT_SYNC_INTERVAL TS_NS_PER_SEC
#define TS_DEFAULT_MAX_FUTURE TS_NS_PER_DAY
#define TS_DEFAULT_FLUSH_SIZE (INT64_C(16) << 20)
#define TS_DEFAULT_FLUSH_AGE (10 * TS_NS_PER_MIN)
#define TS_DEFAULT_MERGE_MAX_SIZE (INT64_C(128) << 20)
#define TS_DEFAULT_MERGE_DELAY (90 * TS_NS_PER_SEC)
/* The default block cache (ts_options_init, bcache.c's
 * ts__bcache_default_size): a sixteenth of the memory the process may
 * use -- physical memory, or its cgroup's limit when lower -- and never
 * less than 64 MiB (the default before it was sized) nor more than
 * 4 GiB (one database's cache beside a process's other work). */
#define TS_BLOCK_CACHE_MEMORY_DIVISOR 16
#define TS_BLOCK_CACHE_DEFAULT_MIN (INT64_C(64) << 20)
#define TS_BLOCK_CACHE_DEFAULT_MAX (INT64_C(4) << 30)
/* Bytes of a table's log not yet flushed past which inserts are refused
 * (TS_ENOSPC naming the cause) rather than the disk filling; from an
 * eighth of it on (TS_LOG_PACE_DEN), every filling tree is flushed and
 * inserts slow down (flush.c, ts__log_cap_check, ts__log_stall). */
#define TS_DEFAULT_LOG_CAP (INT64_C(8) << 30)
/* From this share of log_cap on (TS_LOG_STALL_NUM / TS_LOG_STALL_DEN),
 * an insert waits for the flushes to release the log, in steps of
 * TS_LOG_STALL_STEP_NS, at most TS_LOG_STALL_MAX_NS a call, while they
 * do not fail (flush.c, ts__log_stall): a writer faster than the
 * flushes is slowed to their pace instead of reaching the cap. */
#define TS_LOG_STALL_NUM 3
#define TS_LOG_STALL_DEN 4
#define TS_LOG_STALL_STEP_NS (INT64_C(1) * 1000000)
#define TS_LOG_STALL_MAX_NS (INT64_C(10) * 1000000000)
/* Before the wall, a slope (flush.c, ts__log_stall): from log_cap /
 * TS_LOG_PACE_DEN on, each row an insert stores owes a pause that grows
 * in proportion to the log past that point, up to TS_LOG_PACE_ROW_NS a
 * row at three quarters of the cap (at most some 60,000 rows a second
 * there); the writer sleeps its debt once it reaches
 * TS_LOG_STALL_STEP_NS.  A writer faster than the flushes slows as the
 * log grows, to their pace, instead of running into the wall at full
 * speed and waiting there for a whole flush of gigabytes of log, seconds
 * at a time (BENCHMARKS.md, "Sustained ingest", 2026-11-27: batches of
 * up to 10 s before, under 1.2 s after). */
#define TS_LOG_PACE_DEN 8
#define TS_LOG_PACE_ROW_NS INT64_C(16000)
/* ts_options.log_segment_size: TS_SEG_DATA (log_format.h), 64 MiB. */

/* Background work that failed (retry.h): tried again after TS_RETRY_MIN,
 * doubling per failure in a row up to TS_RETRY_MAX; the last failure's
 * message is kept, this long at most. */
#define TS_RETRY_MIN TS_NS_PER_SEC
#define TS_RETRY_MAX (64 * TS_NS_PER_SEC)
#define TS_RETRY_CAUSE_MAX 256

/* Merging (merge.c).  Flushes remembered for merge_delay (the oldest is
 * forgotten early when more come); tablets found damaged and waiting for
 * quarantine. */
#define TS_MERGE_RECENT_MAX 64
#define TS_DAMAGED_MAX 64

/* A flush puts its blocks in the block cache's spare room when the
 * table was queried within this many ns (flush.c): a table being read
 * likely has its newest rows read next; one only written does not. */
#define TS_FLUSH_CACHE_READ_WINDOW (INT64_C(600) * 1000000000)

/* The defaults of the scheduler's settings (ts_options, maint.c): the
 * spread of the pseudo-random delay given to roll-over merges so that
 * periods of many tables do not all merge at once; rows a merge writes
 * between looks at flushes, stop requests and the foreground; how recent
 * foreground work makes a merge yield, and the share of the time (in
 * percent) a merge may take then (SILK: clients first). */
#define TS_DEFAULT_MERGE_ROLLOVER_SPREAD (30 * TS_NS_PER_MIN)
#define TS_DEFAULT_MERGE_SLICE_ROWS 4096
#define TS_DEFAULT_MAINT_BUSY_WINDOW (100 * INT64_C(1000000))
#define TS_DEFAULT_MAINT_BUSY_SHARE 50

/* Rollups (rollup.c): the scheduler's thread runs a rollup whose source
 * is receiving rows once per window of `every` (at most
 * TS_ROLLUP_PACE_MAX apart), in the first pass TS_ROLLUP_PACE_GRACE
 * after a window of the database clock closes, so that a window is
 * recomputed about once rather than at every pass; a source quiet for a
 * pass is rolled up at once. */
#define TS_ROLLUP_PACE_MAX TS_NS_PER_HOUR
#define TS_ROLLUP_PACE_GRACE TS_NS_PER_SEC

/* A paced run persists its watermark (the rollup's log synced, ROLLUP
 * written) at most this often (monotonic ns); between, the watermark
 * moves in memory only, and a crash recomputes from the one persisted. */
#define TS_ROLLUP_PERSIST_EVERY (10 * TS_NS_PER_SEC)

/* A paced rollup run rolls up only what the source's own syncs (the
 * interval syncer, a commit's sync, an explicit pass, a close) and
 * flushes made durable, from its accumulators, without a snapshot or a sync; when
 * that is not possible it waits for them at most this long (monotonic
 * ns: twice the default sync interval), then syncs the source itself and
 * reads at a snapshot as an explicit pass does (docs/rollups.md section
 * 2, "Durable without a sync"). */
#define TS_ROLLUP_DURABLE_WAIT (2 * TS_NS_PER_SEC)

/* A rollup run reads the source at a snapshot at most this old
 * (monotonic ns): between two spans, or two parts of a long span, an
 * older one is released and a newer one taken (and the source's log
 * synced through it), so that a long run does not keep the log segments
 * and tablets the first snapshot named -- deleted by flushes and merges
 * meanwhile -- on disk until it ends (docs/rollups.md section 2). */
#define TS_ROLLUP_RESNAP_EVERY TS_NS_PER_SEC

/* Largest DESCRIPTOR file accepted on read; guards against reading a
 * damaged length field into a huge allocation. */
#define TS_DESCRIPTOR_MAX (64u << 20)

/* Longest encoded primary key, bytes.  Keys are compared on every lookup
 * and repeated in block indexes, so they are kept small; a string or blob
 * key column whose encoding would pass this is rejected with TS_ETOOBIG. */
#define TS_KEY_MAX 4096

/* Most schema versions one table keeps (each alter adds one). */
#define TS_SCHEMA_VERSIONS_MAX 65535

/* Segment slots of a log: at most this many segments are live (mapped)
 * at once, 256 GiB of log; a table whose unflushed log grows past it gets
 * TS_ENOSPC until it is flushed. */
#define TS_LOG_RING 4096

/* Most filling tablets (open periods) one table may have; each commit
 * record names them all. */
#define TS_FILLING_MAX 1024

/* Longest encoded row, bytes: a row must fit in a log segment with room
 * to spare. */
#define TS_ROW_MAX (32u << 20)

/* Raw bytes of rows an on-disk tablet block holds before it is cut (one
 * row larger than this makes a block of its own). */
#define TS_TABLET_BLOCK (64u << 10)

/* A block holding this many raw bytes is cut early where the key's stem
 * or the ts's TS_TABLET_BLOCK_ALIGN window changes, so that blocks tend to
 * lie in one series and one hour: aggregates answer such blocks from
 * their statistics (docs/tablet-format.md). */
#define TS_TABLET_BLOCK_ALIGN_MIN (4u << 10)
#define TS_TABLET_BLOCK_ALIGN TS_NS_PER_HOUR

/* A block is at least this many times the size of its index entry in the
 * footer before it is cut early, and may grow to this many times it before
 * it must be cut: the entry of a wide table (40 bytes of statistics per
 * numeric column, two keys) can be larger than TS_TABLET_BLOCK_ALIGN_MIN
 * and even TS_TABLET_BLOCK, and without this rule a footer of such a table
 * grew to ten times its data and passed TS_TABLET_FOOTER_MAX in flushes
 * and merges of ordinary size.  With it the block index is at most about
 * 1/TS_TABLET_INDEX_SHARE of a tablet's raw rows, whatever the schema. */
#define TS_TABLET_INDEX_SHARE 4

/* An open tablet keeps the index of its latest blocks, those of the
 * greatest max_ts (tablet.h, late): at least this many, or one block in
 * TS_TABLET_LATE_SHARE of a large tablet, so that a read asking only for
 * rows newer than the most of them (latest, after the newest row of its
 * key was found elsewhere) is answered from a few hot entries. */
#define TS_TABLET_LATE_MIN 32
#define TS_TABLET_LATE_SHARE 64

/* Bytes a tablet writer writes between starting writeback of them (and
 * waiting for the previous ones): bounds the dirty pages of flushes and
 * merges (tablet_write.c, pace_writeback). */
#define TS_TABLET_SYNC_BYTES (1u << 20)

/* Most threads that compress one tablet writer's blocks, the writing
 * thread included (ts_options.flush_threads; tablet_write.c): more would
 * only wait on the one thread that writes the file in block order. */
#define TS_FLUSH_THREADS_MAX 8

/* Blocks a tablet writer keeps in flight per compressing thread: encoded
 * and waiting, being compressed, or compressed and waiting for their turn
 * to be written (tablet_write.c), each about 130 kB with its compressed
 * copy.  Enough that a helper that lost its core for a moment holds only
 * one of several blocks, which the writing thread then compresses again
 * itself only once the others are written. */
#define TS_TABLET_BLOCKS_PER_THREAD 4

/* Blocks a tablet stream reads ahead of the one it reads rows from,
 * and how many blocks it loads before it starts to (readahead.h): a
 * range query of a block or two never reads ahead, a scan keeps this
 * many blocks in flight -- read, and queued to or decompressed by a
 * helper -- each its stored bytes and its rows (about 100 kB). */
#define TS_SCAN_READAHEAD_BLOCKS 4
#define TS_SCAN_READAHEAD_AFTER 2

/* Largest tablet footer, raw or stored, bytes: bounds what a damaged
 * trailer can make a reader allocate. */
#define TS_TABLET_FOOTER_MAX (256u << 20)

#endif
