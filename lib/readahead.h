/*
 * readahead.h -- a long scan's blocks read before it needs them and
 * decompressed on another core.
 *
 * A cold scan that reads a block, then decompresses it, then reads the
 * next, keeps one core busy and the device and the other cores idle.
 * Once a tablet stream (scan.c) has loaded a few blocks in a row it
 * reads the next ones early -- their stored bytes, one pread each, in
 * the order it will want them -- and queues them to the database's
 * read-ahead helpers, which check (CRC) and decompress them and locate
 * their rows, off the reading thread.  When the stream comes to a block
 * a helper has finished, it takes the block as if it had read it; a
 * block still queued it takes back and decompresses itself; a block a
 * helper is still decompressing it decompresses again itself, into a
 * block of its own, from the same stored bytes (the helper's copy is
 * then dropped): it never waits for a helper, so a helper that gets no
 * core costs a scan nothing but its reads made early.
 *
 * Bounded memory: a stream has at most TS_SCAN_READAHEAD_BLOCKS blocks
 * ahead (tslimits.h), each its stored bytes and, once decompressed, its
 * rows.  The blocks go through the block cache as the stream's own
 * reads do (scan.c offers each to the cache when it takes it), so the
 * read-ahead evicts nothing a read of the same blocks would not.
 *
 * Errors.  Only the reading thread calls the file system (a read made
 * early is still made by the stream, once, in its order); a helper only
 * computes.  A read ahead that fails is the scan's failure when it comes
 * to the block, with the read's message, as if it had read the block
 * then (a failure of a block the scan never reaches, its cursor closed
 * first, is nobody's).  A block that does not check or decompress is
 * not taken: the stream reads it again the usual way, and that read
 * reports the damage, naming the block.
 *
 * The helpers: ts_options.flush_threads - 1 of them per database (the
 * cores a flush may use for compression serve a scan for decompression),
 * started at the first read-ahead and stopped by ts_close.  None with
 * flush_threads 1: then no stream reads ahead.
 */
#ifndef TS_READAHEAD_H
#define TS_READAHEAD_H

#include <pthread.h>
#include <stdint.h>

#include "bcache.h"
#include "tablet.h"
#include "tslimits.h"

/* One block read ahead, from its read to its being taken. */
typedef struct ts__rablock ts__rablock;

/* The database's read-ahead helpers and their queue.  Everything but
 * the threads' own work is under mu. */
typedef struct ts__rapool {
	pthread_mutex_t mu;
	pthread_cond_t queued;    /* helpers wait: a block queued, or stop */
	ts__rablock *head;        /* queued blocks, newest first */
	int helpers;              /* to start (flush_threads - 1) */
	int started;              /* 1 once the start was tried */
	int nthreads, stop;
	pthread_t thread[TS_FLUSH_THREADS_MAX - 1];
	/* counters (atomic): blocks read ahead; of them, those a helper
	 * decompressed (taken by their stream, or dropped), and those the
	 * stream decompressed itself (still queued, or a helper's) */
	uint64_t issued, by_helper, by_stream;
} ts__rapool;

/* A stream's blocks read ahead, in the order it will want them. */
typedef struct ts__readahead {
	ts__rablock *blk[TS_SCAN_READAHEAD_BLOCKS];
	int n;
	long next;                /* the next block to consider reading */
} ts__readahead;

/* A pool of `helpers` threads (0: reads ahead never), started only when
 * a stream first reads ahead. */
void ts__rapool_init(ts__rapool *p, int helpers);

/* Stop and join the helpers.  Every stream has let go of its blocks. */
void ts__rapool_destroy(ts__rapool *p);

/* Whether streams of this database read ahead (it has helpers). */
static inline int ts__rapool_enabled(const ts__rapool *p)
{
	return p->helpers > 0;
}

/* A stream's read-ahead, reading nothing yet, whose first block to
 * consider is next; NULL when out of memory (the stream then reads as
 * before). */
ts__readahead *ts__readahead_new(long next);

/* Let go of ra's blocks (a helper drops the one it holds once done) and
 * free ra.  NULL allowed. */
void ts__readahead_free(ts__rapool *p, ts__readahead *ra);

/* Whether ra has room for another block. */
static inline int ts__readahead_room(const ts__readahead *ra)
{
	return ra->n < TS_SCAN_READAHEAD_BLOCKS;
}

/* Read block b of tab now (its stored bytes) and queue it for a helper.
 * A failed read is not reported now (the error is cleared) but kept for
 * ts__readahead_take.  Returns 1 when b was queued, 0 when not (memory
 * is short, ra is full, or the read failed). */
int ts__readahead_issue(ts__rapool *p, ts__readahead *ra, const ts__tablet *tab, uint32_t b);

/* The stream loaded block b otherwise (another reader had cached it
 * meanwhile): drop b, if read ahead, and the blocks before it. */
void ts__readahead_passed(ts__rapool *p, ts__readahead *ra, uint32_t b);

/* *out receives block b of the tablet of serial, decompressed with its
 * rows located (a private block, referenced once, for the caller), when
 * ra read it ahead; the blocks ra read before b, which the stream passed
 * by, are dropped.  *out is NULL when b was not read ahead, or does not
 * check or decompress (or memory is short): the caller reads it the
 * usual way.  Returns 0, or the error of b's read ahead (TS_EIO,
 * TS_ECORRUPT for a short file), said now. */
int ts__readahead_take(ts__rapool *p, ts__readahead *ra, uint64_t serial, uint32_t b,
                       ts__cblock **out);

#endif /* TS_READAHEAD_H */
