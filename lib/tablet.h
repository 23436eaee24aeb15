/*
 * tablet.h -- immutable on-disk tablets: rows sorted by primary key in
 * LZO-compressed, checksummed blocks, with a footer indexing the blocks
 * (last key, timespan, per-column count/sum/min/max) and a Bloom filter of
 * key stems (docs/tablet-format.md).
 *
 * Writing: ts__tablet_writer_open, _add for every row in strictly
 * increasing key order, then _finish (file written, fsynced, renamed into
 * place, directory fsynced) or _abort (nothing left behind).
 *
 * Reading: ts__tablet_open validates the header, trailer and footer and
 * keeps the footer in memory; blocks are read (pread, CRC, decompress) on
 * demand, so damage in a block is reported when that block is read and
 * ts__tablet_check reads them all.  Nothing here ever trusts a length
 * from the file before checking it against the file's size and limits.
 */
#ifndef TS_TABLET_H
#define TS_TABLET_H

#include <stdint.h>

#include "buf.h"
#include "key.h"
#include "schema.h"

/* The most bytes LZO1X-1 can make of n input bytes (LZO's documented
 * worst case): room for compressing a block. */
static inline size_t ts__lzo_bound(size_t n) { return n + n / 16 + 64 + 3; }

/* Statistics of one numeric column over a block. */
typedef struct ts__colstat {
	uint64_t count;       /* values counted (doubles: not NaN) */
	__int128 isum;        /* int32, int64, timestamp columns */
	double dsum;          /* double columns */
	ts_value min, max;    /* of the column's type; TS_NONE when count == 0 */
} ts__colstat;

/* One block as the footer indexes it. */
typedef struct ts__tablet_block {
	uint64_t offset;      /* of its block header in the file */
	uint32_t stored, raw; /* bytes after the block header; uncompressed */
	uint32_t rows;
	int64_t min_ts, max_ts;
	const unsigned char *first_key; /* into the footer; NULL in format 1 */
	const unsigned char *last_key;
	uint32_t first_klen, last_klen;
	const unsigned char *stats;    /* nstat * TS_STAT_SIZE bytes, see ts__tablet_stat */
	/* the newest version of the block's rows: the greatest hi of the
	 * sources its rows came from (docs/tablet-format.md section 4.1);
	 * 0 when not known -- a format before 3, or rows of tablets written
	 * before versions existed */
	uint64_t hi;
} ts__tablet_block;

typedef struct ts__tablet {
	int fd;
	char *path;
	uint64_t id, size;
	uint32_t format;             /* file format version */
	uint64_t serial;             /* process-unique: names its cached blocks */
	uint32_t schema_version;
	uint64_t rows;
	int64_t min_ts, max_ts;
	int64_t period_start, period_end;
	const unsigned char *first_key, *last_key;
	uint32_t first_klen, last_klen;
	uint32_t nblocks;
	ts__tablet_block *blocks;
	/* the first 16 bytes of each block's last key (zero-padded), side
	 * by side, so that a binary search over the blocks mostly compares
	 * these and touches a few cache lines instead of two per probe */
	ts__key_head *heads;
	uint32_t nstat;
	uint16_t *stat_cols;         /* column index (in its schema) of each */
	unsigned char *stat_types;   /* ts_type of each */
	/* The latest blocks: those of the greatest max_ts, in block order
	 * (so in key order), nlate of them; every other block's max_ts is
	 * at most late_floor (INT64_MIN when every block is one).  Built at
	 * open from the block index (ts__tablet_may_hold_since). */
	uint32_t *late;
	ts__key_head *late_heads;    /* heads of their last keys, side by side */
	uint32_t nlate;
	int64_t late_floor;
	uint32_t bloom_bits;         /* 0 = no filter */
	uint8_t bloom_k;
	const unsigned char *bloom;
	unsigned char *footer;       /* the raw footer the pointers above use */
} ts__tablet;

/* ---- writing ---- */

typedef struct ts__tablet_writer ts__tablet_writer;

/*
 * Start tablet id of schema s (whose version every row added must have)
 * in directory dir, for the period [period_start, period_end).  The file
 * is dir/.tmp-<id>.tab until finished.  Returns 0, TS_EIO, TS_ENOSPC,
 * TS_ENOMEM.
 */
int ts__tablet_writer_open(const char *dir, uint64_t id, const ts__schema *s,
                           int64_t period_start, int64_t period_end,
                           ts__tablet_writer **out);

/* Let w compress its blocks on threads threads, its own included (1,
 * the default: none beside it; at most TS_FLUSH_THREADS_MAX): from its
 * second block on, up to threads - 1 helper threads compress and
 * checksum blocks while the caller adds rows, and the caller writes them
 * in order (tablet_write.c).  The file is byte for byte the same.  Call
 * before the first row. */
void ts__tablet_writer_threads(ts__tablet_writer *w, int threads);

/* Cut w's blocks at every change of series or hour once they hold their
 * index entry's share (TS_TABLET_INDEX_SHARE), not TS_TABLET_BLOCK_ALIGN_MIN:
 * for a rollup, whose rows are few an hour (60 a series at 1 minute:
 * about 2.4 KiB), so that coarser aggregates over it are answered whole
 * hours at a time from block statistics, as over raw rows
 * (docs/tablet-format.md).  Call before the first row. */
void ts__tablet_writer_hourly(ts__tablet_writer *w);

/* Let w put blocks in the block cache c as blocks of the tablet opened
 * with serial (ts__table_tablet_serial), as they are cut: every block
 * into the room the cache has to spare (all: the table is being read,
 * and its newest rows are likely read next), and the blocks it is asked
 * to keep (ts__tablet_writer_keep: a merge keeps cached what its inputs
 * had cached).  ts__tablet_writer_abort takes them out again.  serial 0
 * (none reserved): nothing is cached.  Call before the first row. */
struct ts__bcache;
void ts__tablet_writer_warm(ts__tablet_writer *w, struct ts__bcache *c, uint64_t serial,
                            int all);

/* Change ts__tablet_writer_warm's all for the blocks cut from now on (a
 * merge, which may run for minutes, asks again between slices whether
 * its table is being read). */
void ts__tablet_writer_fill(ts__tablet_writer *w, int all);

/* Keep the block the last row added went into (ts__tablet_writer_warm;
 * without it, nothing): as the cache's most recent entry when used (the
 * row came from a block readers used), else in spare room only. */
void ts__tablet_writer_keep(ts__tablet_writer *w, int used);

/* Add one encoded row (row.h) of the writer's schema; keys must strictly
 * increase.  Returns 0, TS_EINVAL (out of order), TS_ECORRUPT (the row does
 * not decode), TS_EIO, TS_ENOSPC, TS_ENOMEM. */
int ts__tablet_writer_add(ts__tablet_writer *w, const void *row, size_t len);

/* ts__tablet_writer_add for a row from a source whose newest version is
 * hi (a flushed tree's hi; a merge input's hi): its block's hi is the
 * greatest of its rows'.  A tablet any of whose rows had a non-zero hi
 * is written in format TS_TABLET_VERSION (blocks carry their hi), else
 * in TS_TABLET_VERSION_UNVERSIONED, as before versions existed
 * (docs/tablet-format.md). */
int ts__tablet_writer_add_hi(ts__tablet_writer *w, const void *row, size_t len, uint64_t hi);

/* Write the last block, footer and trailer; fsync; rename to
 * dir/<16 hex id>.tab; fsync dir.  *rows, *bytes, *min_ts, *max_ts
 * receive what the descriptor records (any may be NULL).  The writer is
 * freed whatever the result.  Returns 0, TS_EINVAL (no rows), TS_EIO,
 * TS_ENOSPC, TS_ENOMEM. */
int ts__tablet_writer_finish(ts__tablet_writer *w, uint64_t *rows, uint64_t *bytes,
                             int64_t *min_ts, int64_t *max_ts);

/* Remove the temporary file and free the writer.  NULL allowed. */
void ts__tablet_writer_abort(ts__tablet_writer *w);

/* The file name of tablet id: "<16 hex digits>.tab". */
int ts__tablet_name(uint64_t id, char *out, size_t size);

/* ---- reading ---- */

/* Open path (its id is checked against id) and validate header, trailer
 * and footer.  Returns 0, TS_ENOENT, TS_ECORRUPT (ts_errmsg names the file
 * and the part), TS_EVERSION, TS_EIO, TS_ENOMEM. */
int ts__tablet_open(const char *path, uint64_t id, ts__tablet **out);
void ts__tablet_close(ts__tablet *t);

/* Read block i into raw (replacing its contents): CRC, decompression and
 * length checked.  Returns 0, TS_ECORRUPT, TS_EIO, TS_ENOMEM. */
int ts__tablet_read_block(const ts__tablet *t, uint32_t i, ts_buf *raw);

/* Read block i as the file stores it -- its header and stored bytes,
 * TS_BLKH_SIZE + t->blocks[i].stored of them -- into buf, unchecked (a
 * read-ahead, readahead.c: ts__tablet_block_decode checks it later, on
 * another thread).  Returns 0, TS_ECORRUPT (the file is short), TS_EIO. */
int ts__tablet_read_stored(const ts__tablet *t, uint32_t i, unsigned char *buf);

/* Check and decompress a block read by ts__tablet_read_stored, whose
 * index entry gives stored and raw bytes, into out (replacing its
 * contents): what ts__tablet_read_block does after its read.  Touches
 * neither the tablet nor the thread's error message, so that any thread
 * may call it.  Returns 0, TS_ENOMEM, or TS_ECORRUPT with *why saying
 * what is wrong (the header disagrees with the index, the checksum, the
 * decompression). */
int ts__tablet_block_decode(const unsigned char *buf, uint32_t stored, uint32_t raw, ts_buf *out,
                            const char **why);

/* Locate the rows of b->raw, a decompressed block, in b->rows (its
 * series and seek index, found later, are dropped): for the block
 * cache, by readers (scan.c) and by writers keeping a block (the
 * flush's and merge's, tablet_write.c).  Returns 0, or TS_ECORRUPT
 * (said) for a malformed row, TS_ENOMEM. */
struct ts__cblock;
int ts__tablet_block_locate(struct ts__cblock *b);

/* Read the blocks of t that the block cache c does not hold, under
 * serial (the serial readers will find them by: ts__table_tablet_serial
 * for a tablet not yet published), into its spare room, in block order,
 * until it has none (TS_BCACHE_SPARE: nothing is evicted).  Every
 * between blocks, when not NULL, is called with arg after every
 * TS_WARM_YIELD_BLOCKS blocks read; a non-zero return stops the warming
 * and is returned.  Best effort otherwise: a block that cannot be read
 * or located (the reader reports it when it reads it) is skipped.
 * Returns 0 or between's value. */
#define TS_WARM_YIELD_BLOCKS 64
int ts__tablet_warm(const ts__tablet *t, struct ts__bcache *c, uint64_t serial,
                    int (*between)(void *arg), void *arg);

/* The next row of a raw block read from r: *row, *len.  Returns 1, 0 at
 * the end of the block, TS_ECORRUPT. */
int ts__tablet_block_next(ts_reader *r, const void **row, size_t *len);

/* Statistics j of block i. */
void ts__tablet_stat(const ts__tablet *t, uint32_t i, uint32_t j, ts__colstat *out);

/* Whether a key with this stem (the key without its 8 ts bytes) may be
 * in the tablet: 0 means certainly not. */
int ts__tablet_may_contain(const ts__tablet *t, const void *stem, size_t len);

/* Whether the tablet may hold a row whose key lies between lo and hi
 * (inclusive; either NULL: unbounded) and whose ts is at least tmin: 0
 * means certainly not.  Answered from the latest blocks alone (no block
 * read, a binary search over a few entries) when tmin is above
 * late_floor, since only they can hold such rows; else 1 (not known
 * here, unless tmin is past the tablet's max_ts).  Latest asks it of a
 * tablet beside the one that gave the newest row found so far: a small
 * tablet of corrections whose newest ts ties it is skipped without
 * opening a stream. */
int ts__tablet_may_hold_since(const ts__tablet *t, const void *lo, size_t lolen, const void *hi,
                              size_t hilen, int64_t tmin);

/* The first block whose last key is >= key (ts__key_cmp), or nblocks. */
uint32_t ts__tablet_block_for(const ts__tablet *t, const void *key, size_t klen);

/* Whether the tablet holds key: Bloom filter, then the one block that
 * could hold it (raw is scratch space).  Returns 1, 0, or a read error. */
int ts__tablet_find(const ts__tablet *t, const void *key, size_t klen, ts_buf *raw);

/* Read every block and verify checksums, row order (within and across
 * blocks), row counts, timespans, first and last keys and statistics
 * against the footer, decoding each row with schema s (the tablet's
 * version); then the footer's row count, timespan, first and last key
 * against the blocks.  Stops at the first failure.
 * Returns 0, TS_ECORRUPT (message says which block and what), TS_EIO,
 * TS_ENOMEM. */
int ts__tablet_check(const ts__tablet *t, const ts__schema *s);

/* How ts__tablet_verify reports. */
typedef struct ts__tablet_verifier {
	/* A failure: its code (TS_ECORRUPT, TS_EIO, ...), its message in
	 * ts_errmsg().  Return non-zero to stop there. */
	int (*problem)(void *arg, int code);
	/* Block i was read: the bytes of the file it spans (may be NULL). */
	void (*progress)(void *arg, uint64_t bytes);
	void *arg;
} ts__tablet_verifier;

/* The checks of ts__tablet_check, reporting every failure to v and going
 * on: a damaged block counts as what its index entry says, so the blocks
 * after it and the footer are still checked.  s may be NULL (no schema
 * known): rows are then not decoded nor statistics compared.
 * Returns 0 once every block was checked (problems went to v), the code
 * of the failure at which v->problem asked to stop, TS_EINVAL (s is not
 * the tablet's version) or TS_ENOMEM. */
int ts__tablet_verify(const ts__tablet *t, const ts__schema *s, const ts__tablet_verifier *v);

#endif
