/*
 * tablet_write.c -- writing an on-disk tablet file
 * (docs/tablet-format.md): the tablet writer, from ts__tablet_writer_open
 * to ts__tablet_writer_finish, which makes the file durable under its
 * final name (or ts__tablet_writer_abort, which removes it).
 *
 * The writer streams: rows accumulate in a raw block until the next row
 * would take it past TS_TABLET_BLOCK (or TS_TABLET_INDEX_SHARE times its
 * index entry, in wide tables: block_ends); the block is then compressed
 * (LZO1X-1, or stored raw when that is no smaller), checksummed and
 * written, and its index entry -- last key, timespan, per-column
 * statistics, the newest version of its rows -- is appended to the
 * footer being built.  The format is known only at the end: a tablet
 * none of whose rows came with a version is written in format 2, as
 * before versions existed (its entries then lose their hi field, whose
 * places the writer noted), any other in format 3 (the header, written
 * first as 2, is written again).  Distinct key
 * stems arrive consecutively (rows come in key order, and the stem is a
 * key prefix), so counting them for the Bloom filter needs only the
 * previous stem.
 *
 * Compression may run beside the rows' encoding (ts__tablet_writer_threads,
 * for flushes: ts_options.flush_threads): a cut block then goes, with its
 * index entry already appended (its offset and stored size to be filled
 * in), into a small ring of slots; helper threads -- the pool -- take the
 * queued ones, compress and checksum them, and the writing thread writes
 * each in block order once it is compressed, filling in its entry then.
 * The helpers run under SCHED_IDLE, on a core nothing else wants.  When
 * the ring is full the writing thread compresses a queued block itself,
 * or, when every unwritten block is in a helper's hands, the next one
 * into a slot of its own (the helper's copy is dropped): it never waits
 * for a helper, so the flush is never much slower than one core, and a
 * helper that gets no core costs nothing.  Every byte written is the
 * same as without the pool, and only the writing thread calls the file
 * system: an error fails the writer as before, and the pool is stopped
 * and joined when the writer is finished or aborted.
 *
 * A flush or merge of a table being read offers every block it writes to
 * the block cache's spare room, and a merge the blocks it is asked to keep (ts__tablet_writer_warm,
 * _keep: its inputs had them cached, and readers should not find them
 * cold after the swap): the block is copied, its rows located, into the
 * cache by the thread that compresses it -- with a pool, mostly a
 * helper, off the writing thread.  An aborted writer takes its blocks
 * out of the cache again.
 *
 * Apart from the reader (tablet.c) because the two share only the
 * format: the writer's state is its own struct ts__tablet_writer, and
 * what it shares with the reader and the checker -- the Bloom filter's
 * hashing, the statistics' arithmetic -- is tablet_int.h's.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <lzo1x.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bcache.h"
#include "crc32c.h"
#include "error.h"
#include "fsutil.h"
#include "key.h"
#include "period.h"
#include "tslimits.h"
#include "row.h"
#include "tablet.h"
#include "tablet_format.h"
#include "tablet_int.h"
#include "thread.h"

/* ---- writing ---- */

static void stat_put(ts_buf *b, const ts__colstat *st, int type)
{
	ts__put_u64(b, st->count);
	if (type == TS_DOUBLE) {
		uint64_t u;
		memcpy(&u, &st->dsum, 8);
		ts__put_u64(b, u);
		ts__put_u64(b, 0);
	} else {
		ts__put_u64(b, (uint64_t)st->isum);
		ts__put_u64(b, (uint64_t)(st->isum >> 64));
	}
	ts__put_u64(b, value_bits(&st->min));
	ts__put_u64(b, value_bits(&st->max));
}

/* How the current block is kept (ts__tablet_writer_keep): not, in the
 * cache's spare room (its rows came from blocks cached but unused), or
 * as the most recent entry (from blocks readers used). */
enum { KEEP_NOT, KEEP_SPARE, KEEP_USED };

/* A block between its cut and its write (the pipeline above). */
enum slot_state {
	SLOT_FREE,   /* unused */
	SLOT_QUEUED, /* encoded, waiting for a thread to compress it */
	SLOT_BUSY,   /* being compressed */
	SLOT_DONE,   /* compressed: h and its stored bytes are ready */
	SLOT_ORPHAN, /* written from the writing thread's own copy while a
	              * helper still compresses it: the helper frees it */
};

struct slot {
	ts_buf raw, stored;
	unsigned char h[TS_BLKH_SIZE]; /* its block header, once compressed */
	const unsigned char *data;     /* what follows h: raw or stored's data */
	size_t entry;                  /* where its index entry lies in index */
	uint64_t seq;                  /* its place in the file: the nth block */
	enum slot_state state;
	uint32_t block;                /* its number in the tablet */
	int keep;                      /* KEEP_*: to be cached once packed */
};

/* A helper thread's own state. */
struct helper {
	struct pool *pool;
	pthread_t thread;
	void *wrkmem;
};

/* The pipeline's shared state: everything here but the helpers' work
 * memory is under mu. */
struct pool {
	pthread_mutex_t mu;
	pthread_cond_t queued; /* helpers wait: a block queued, or stop */
	int stop;
	int nhelpers;          /* started */
	struct helper helper[TS_FLUSH_THREADS_MAX - 1];
	int nslots;
	struct slot slot[TS_FLUSH_THREADS_MAX * TS_TABLET_BLOCKS_PER_THREAD];
	uint64_t next_seq;     /* the seq of the next block cut */
	uint64_t write_seq;    /* the seq of the next block to write */
	ts__bcache *bc;        /* the writer's (ts__tablet_writer_warm) */
	uint64_t serial;
};

struct ts__tablet_writer {
	int fd;
	char dir[TS_PATH_MAX], tmp[TS_PATH_MAX];
	const ts__schema *s;
	uint64_t id;
	int64_t period_start, period_end;
	void *wrkmem;
	ts_buf block, stored, index, first_key, last_key, bfirst, scratch;
	uint64_t *stems;            /* hashes of the distinct stems */
	size_t nstems, stems_cap;
	uint64_t offset, rows;
	uint64_t sync_started;      /* writeback started for [0, sync_started) */
	int64_t min_ts, max_ts;
	uint32_t nblocks, brows;
	int64_t bmin, bmax;
	uint64_t bhi;               /* the greatest hi of the block's rows */
	int versioned;              /* a row had a non-zero hi: format 3 */
	size_t *hi_at;              /* where each block's hi lies in index */
	size_t hi_cap;
	int nstat;
	uint16_t stat_cols[TS_COLUMNS_MAX];
	int stat_want[TS_COLUMNS_MAX]; /* the same, for ts__row_decode_values */
	int stat_keys;              /* a statistics column is in the key */
	ts__colstat st[TS_COLUMNS_MAX];
	ts_value vals[TS_COLUMNS_MAX];
	int threads;                /* wanted: ts__tablet_writer_threads */
	int hourly;                 /* ts__tablet_writer_hourly */
	int pool_tried;             /* the pool was started, or could not be */
	struct pool *pool;          /* NULL: one slot, compressed in place */
	struct slot one;            /* the slot of a writer without a pool */
	ts__bcache *bc;             /* ts__tablet_writer_warm: where kept */
	uint64_t serial;            /* blocks go, and under which serial */
	int bkeep;                  /* keep the current block: KEEP_* */
	int keep_all;               /* offer every block to spare room */
};

static void pool_stop(ts__tablet_writer *w);

static void slot_free(struct slot *b)
{
	ts__buf_free(&b->raw);
	ts__buf_free(&b->stored);
}

static void writer_free(ts__tablet_writer *w)
{
	pool_stop(w);
	slot_free(&w->one);
	if (w->fd >= 0)
		close(w->fd);
	free(w->wrkmem);
	free(w->stems);
	free(w->hi_at);
	ts__buf_free(&w->block);
	ts__buf_free(&w->stored);
	ts__buf_free(&w->index);
	ts__buf_free(&w->first_key);
	ts__buf_free(&w->last_key);
	ts__buf_free(&w->bfirst);
	ts__buf_free(&w->scratch);
	free(w);
}

/* The file header of format version. */
static void make_header(const ts__tablet_writer *w, uint32_t version, unsigned char *h)
{
	memset(h, 0, TS_TABH_SIZE);
	memcpy(h + TS_TABH_OFF_MAGIC, TS_TABH_MAGIC, 8);
	ts__store_u32(h + TS_TABH_OFF_VERSION, version);
	ts__store_u32(h + TS_TABH_OFF_SIZE, TS_TABH_SIZE);
	ts__store_u64(h + TS_TABH_OFF_ID, w->id);
	ts__store_u32(h + TS_TABH_OFF_SCHEMA, w->s->version);
	ts__store_u32(h + TS_TABH_OFF_CRC, ts__crc32c(0, h, TS_TABH_OFF_CRC));
}

int ts__tablet_writer_open(const char *dir, uint64_t id, const ts__schema *s,
                           int64_t period_start, int64_t period_end,
                           ts__tablet_writer **out)
{
	unsigned char h[TS_TABH_SIZE] = {0};
	char name[64];
	int rc = ts__tablet_lzo_ready();
	*out = NULL;
	if (rc < 0)
		return rc;
	ts__tablet_writer *w = calloc(1, sizeof *w);
	if (!w)
		return ts__fail(TS_ENOMEM, "out of memory");
	w->fd = -1;
	w->s = s;
	w->id = id;
	w->period_start = period_start;
	w->period_end = period_end;
	w->min_ts = INT64_MAX;
	w->max_ts = INT64_MIN;
	for (int c = 0; c < s->ncols; c++)
		if (c != s->ts_col && is_stat_type(s->cols[c].type)) {
			w->stat_keys |= s->cols[c].key_pos >= 0;
			w->stat_want[w->nstat] = c;
			w->stat_cols[w->nstat++] = (uint16_t)c;
		}
	if (!(w->wrkmem = malloc(LZO1X_1_MEM_COMPRESS))) {
		writer_free(w);
		return ts__fail(TS_ENOMEM, "out of memory");
	}
	if ((rc = ts__tablet_name(id, name, sizeof name)) < 0 ||
	    (rc = ts__path(w->dir, "%s", dir)) < 0 || (rc = ts__path(w->tmp, "%s/.tmp-%s", dir, name)) < 0) {
		writer_free(w);
		return rc;
	}
	w->fd = open(w->tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (w->fd < 0) {
		rc = ts__fail_errno(errno, "create %s", w->tmp);
		writer_free(w);
		return rc;
	}
	make_header(w, TS_TABLET_VERSION_UNVERSIONED, h);
	if ((rc = ts__write_at(w->fd, h, sizeof h, 0, w->tmp)) < 0) {
		ts__tablet_writer_abort(w);
		return rc;
	}
	w->offset = TS_TABH_SIZE;
	for (int j = 0; j < w->nstat; j++)
		stat_reset(&w->st[j]);
	*out = w;
	return 0;
}

/* Compress p[0..n) into w->stored, or leave it raw when that is smaller;
 * returns the codec. */
static int compress(ts__tablet_writer *w, const unsigned char *p, size_t n)
{
	lzo_uint out = 0;
	w->stored.len = 0;
	if (ts__buf_reserve(&w->stored, ts__lzo_bound(n)) == 0 &&
	    lzo1x_1_compress(p, n, w->stored.data, &out, w->wrkmem) == LZO_E_OK && out < n) {
		w->stored.len = out;
		return TS_CODEC_LZO1X;
	}
	w->stored.len = 0;
	return TS_CODEC_RAW;
}

/*
 * Keep the dirty pages of a tablet being written few: every
 * TS_TABLET_SYNC_BYTES, start writeback of what was written since, and
 * wait for the writeback started the time before.  Without it a merge of
 * hundreds of megabytes leaves them all dirty until its fsync, and the
 * kernel then throttles whoever dirties pages next -- the inserting
 * thread, writing to the mapped log (SILK's point: background writes
 * must not stall the clients).  Failures here are not errors: the final
 * fsync reports any I/O error.
 */
static void pace_writeback(ts__tablet_writer *w)
{
	if (w->offset - w->sync_started < TS_TABLET_SYNC_BYTES)
		return;
	if (w->sync_started)
		sync_file_range(w->fd, 0, (off_t)w->sync_started,
		                SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE |
		                SYNC_FILE_RANGE_WAIT_AFTER);
	sync_file_range(w->fd, (off_t)w->sync_started, (off_t)(w->offset - w->sync_started),
	                SYNC_FILE_RANGE_WRITE);
	w->sync_started = w->offset;
}

/* arr (of *cap elements of size bytes) reallocated to twice *cap, or to
 * first when empty; *cap follows.  NULL (arr and *cap untouched) when
 * memory runs out. */
static void *grow(void *arr, size_t *cap, size_t size, size_t first)
{
	size_t n = *cap ? *cap * 2 : first;
	void *p = realloc(arr, n * size);
	if (p)
		*cap = n;
	return p;
}

/* Offer a copy of raw, block number block of the tablet of serial, its
 * rows located, to the block cache bc (a kept block, ts__tablet_writer_
 * keep): as the most recent entry (KEEP_USED) or into spare room.  Best
 * effort: without memory or room, or with a malformed row (which the
 * reader reports when it reads the block), it is simply not cached. */
static void keep_copy(ts__bcache *bc, uint64_t serial, uint32_t block, const ts_buf *raw,
                      int keep)
{
	if (keep == KEEP_NOT ||
	    (keep == KEEP_SPARE &&
	     !ts__bcache_has_room(bc, sizeof(ts__cblock) + raw->len + 32 * sizeof(ts__rowref))))
		return;
	ts__cblock *cb = ts__cblock_new(serial, block);
	if (!cb)
		return;
	ts__put(&cb->raw, raw->data, raw->len);
	if (!cb->raw.oom && ts__tablet_block_locate(cb) == 0) {
		ts__cblock_fit(cb);
		ts__bcache_put(bc, cb, keep == KEEP_USED ? TS_BCACHE_EVICT : TS_BCACHE_SPARE);
	}
	ts__cblock_put(bc, cb);
}

/* Compress b->raw with work memory wrkmem (LZO1X-1, or raw when that is
 * no smaller, as compress does) into b, and make its header: b->h and
 * b->data are then what the file holds for it.  Writes b alone and only
 * reads raw, so helpers run it on different blocks at once, and the
 * writing thread on a block a helper holds, into a slot of its own. */
static void pack(struct slot *b, const ts_buf *raw, void *wrkmem)
{
	lzo_uint out = 0;
	int codec = TS_CODEC_RAW;
	size_t n = raw->len;
	b->stored.len = 0;
	if (ts__buf_reserve(&b->stored, ts__lzo_bound(n)) == 0 &&
	    lzo1x_1_compress(raw->data, n, b->stored.data, &out, wrkmem) == LZO_E_OK && out < n) {
		b->stored.len = out;
		codec = TS_CODEC_LZO1X;
	}
	b->data = codec == TS_CODEC_RAW ? raw->data : b->stored.data;
	size_t stored = codec == TS_CODEC_RAW ? n : b->stored.len;
	memset(b->h, 0, sizeof b->h);
	ts__store_u32(b->h + TS_BLKH_OFF_STORED, (uint32_t)stored);
	ts__store_u32(b->h + TS_BLKH_OFF_RAW, (uint32_t)n);
	b->h[TS_BLKH_OFF_CODEC] = (unsigned char)codec;
	uint32_t crc = ts__crc32c(ts__crc32c(0, b->h, TS_BLKH_OFF_CRC), b->data, stored);
	ts__store_u32(b->h + TS_BLKH_OFF_CRC, crc);
}

/* pack, and the copy for the cache the slot asks for (keep_copy), on the
 * thread that packs it: a helper's, off the writing thread. */
static void pack_slot(struct pool *p, struct slot *b, void *wrkmem)
{
	pack(b, &b->raw, wrkmem);
	keep_copy(p->bc, p->serial, b->block, &b->raw, b->keep);
	b->keep = KEEP_NOT;
}

/* A helper: compress queued blocks, oldest first, until stopped.  It
 * runs under SCHED_IDLE, on a core nothing else wants: the inserting
 * thread and readers come first, and the writing thread compresses the
 * blocks a helper leaves (pool_drain). */
static void *helper_main(void *arg)
{
	struct helper *me = arg;
	struct pool *p = me->pool;
	struct sched_param sp = {0};
	pthread_setschedparam(pthread_self(), SCHED_IDLE, &sp); /* else as it is */
	pthread_mutex_lock(&p->mu);
	for (;;) {
		struct slot *b = NULL;
		for (int i = 0; i < p->nslots; i++)
			if (p->slot[i].state == SLOT_QUEUED && (!b || p->slot[i].seq < b->seq))
				b = &p->slot[i];
		if (p->stop)
			break;
		if (!b) {
			pthread_cond_wait(&p->queued, &p->mu);
			continue;
		}
		b->state = SLOT_BUSY;
		pthread_mutex_unlock(&p->mu);
		pack_slot(p, b, me->wrkmem);
		pthread_mutex_lock(&p->mu);
		b->state = b->state == SLOT_ORPHAN ? SLOT_FREE : SLOT_DONE;
	}
	pthread_mutex_unlock(&p->mu);
	return NULL;
}

/* Stop and join w's helpers and free the pool (nothing when it has none).
 * Blocks still in it are dropped: the writer failed, or wrote them all. */
static void pool_stop(ts__tablet_writer *w)
{
	struct pool *p = w->pool;
	if (!p)
		return;
	pthread_mutex_lock(&p->mu);
	p->stop = 1;
	pthread_cond_broadcast(&p->queued);
	pthread_mutex_unlock(&p->mu);
	for (int i = 0; i < p->nhelpers; i++) {
		pthread_join(p->helper[i].thread, NULL);
		free(p->helper[i].wrkmem);
	}
	for (int i = 0; i < p->nslots; i++)
		slot_free(&p->slot[i]);
	pthread_cond_destroy(&p->queued);
	pthread_mutex_destroy(&p->mu);
	free(p);
	w->pool = NULL;
}

/* Start w's pool of w->threads - 1 helpers, once.  Not an error when it
 * cannot (memory, threads): the writer then compresses every block
 * itself, as with one thread. */
static void pool_start(ts__tablet_writer *w)
{
	w->pool_tried = 1;
	if (w->threads <= 1)
		return;
	struct pool *p = calloc(1, sizeof *p);
	if (!p)
		return;
	if (pthread_mutex_init(&p->mu, NULL) != 0) {
		free(p);
		return;
	}
	pthread_cond_init(&p->queued, NULL);
	p->nslots = w->threads * TS_TABLET_BLOCKS_PER_THREAD;
	p->bc = w->bc;
	p->serial = w->serial;
	w->pool = p;
	for (int i = 0; i < w->threads - 1; i++) {
		struct helper *h = &p->helper[p->nhelpers];
		h->pool = p;
		if (!(h->wrkmem = malloc(LZO1X_1_MEM_COMPRESS)))
			break;
		if (ts__thread_start(&h->thread, helper_main, h) != 0) {
			free(h->wrkmem);
			break;
		}
		p->nhelpers++;
	}
	if (p->nhelpers == 0)
		pool_stop(w);
}

/* Write compressed block b at the end of the file and fill in its index
 * entry's offset and stored size (index entries begin with them). */
static int put_block(ts__tablet_writer *w, const struct slot *b)
{
	uint32_t stored = ts__load_u32(b->h + TS_BLKH_OFF_STORED);
	int rc = ts__write_at(w->fd, b->h, sizeof b->h, (long long)w->offset, w->tmp);
	if (rc == 0)
		rc = ts__write_at(w->fd, b->data, stored, (long long)(w->offset + TS_BLKH_SIZE),
		                  w->tmp);
	if (rc < 0)
		return rc;
	ts__store_u64(w->index.data + b->entry, w->offset);
	ts__store_u32(w->index.data + b->entry + 8, stored);
	w->offset += TS_BLKH_SIZE + stored;
	pace_writeback(w);
	return 0;
}

/* The pool's slot of block seq, or NULL.  p->mu held. */
static struct slot *slot_of(struct pool *p, uint64_t seq)
{
	for (int i = 0; i < p->nslots; i++)
		if (p->slot[i].state != SLOT_FREE && p->slot[i].state != SLOT_ORPHAN &&
		    p->slot[i].seq == seq)
			return &p->slot[i];
	return NULL;
}

/*
 * Write the pool's compressed blocks that are next in the file.  With
 * need_free, go on until a slot is free; with all, until every block
 * cut is written.  Meanwhile the writing thread compresses queued
 * blocks itself rather than wait; when every unwritten block is in a
 * helper's hands, it compresses the next one too, into its own slot, and
 * writes that (the helper's copy, the same bytes, is then dropped): a
 * helper that gets no core never holds the flush up.
 */
static int pool_drain(ts__tablet_writer *w, int need_free, int all)
{
	struct pool *p = w->pool;
	int rc = 0;
	pthread_mutex_lock(&p->mu);
	while (p->write_seq < p->next_seq) {
		struct slot *b = slot_of(p, p->write_seq);
		if (b->state == SLOT_DONE) {
			pthread_mutex_unlock(&p->mu);
			rc = put_block(w, b); /* b is the writer's while DONE */
			pthread_mutex_lock(&p->mu);
			if (rc < 0)
				break;
			b->state = SLOT_FREE;
			p->write_seq++;
			continue;
		}
		int used = 0;
		for (int i = 0; i < p->nslots; i++)
			used += p->slot[i].state != SLOT_FREE;
		if (!all && !(need_free && used == p->nslots))
			break;
		struct slot *q = b->state == SLOT_QUEUED ? b : NULL; /* the next first */
		for (int i = 0; !q && i < p->nslots; i++)
			if (p->slot[i].state == SLOT_QUEUED)
				q = &p->slot[i];
		if (!q) { /* b is a helper's */
			pthread_mutex_unlock(&p->mu);
			w->one.entry = b->entry;
			pack(&w->one, &b->raw, w->wrkmem);
			rc = put_block(w, &w->one);
			pthread_mutex_lock(&p->mu);
			if (rc < 0)
				break;
			b->state = b->state == SLOT_DONE ? SLOT_FREE : SLOT_ORPHAN;
			p->write_seq++;
			continue;
		}
		q->state = SLOT_BUSY;
		pthread_mutex_unlock(&p->mu);
		pack_slot(p, q, w->wrkmem);
		pthread_mutex_lock(&p->mu);
		q->state = SLOT_DONE;
	}
	pthread_mutex_unlock(&p->mu);
	return rc;
}

/* Append the current block's index entry, its offset and stored size
 * left for put_block to fill in; *at receives where it lies. */
static int index_block(ts__tablet_writer *w, size_t *at)
{
	ts_buf *x = &w->index;
	*at = x->len;
	ts__put_u64(x, 0);
	ts__put_u32(x, 0);
	ts__put_u32(x, (uint32_t)w->block.len);
	ts__put_u32(x, w->brows);
	ts__put_u64(x, (uint64_t)w->bmin);
	ts__put_u64(x, (uint64_t)w->bmax);
	ts__put_bytes(x, w->bfirst.data, w->bfirst.len);
	ts__put_bytes(x, w->last_key.data, w->last_key.len);
	if (w->nblocks == w->hi_cap) {
		size_t *hi = grow(w->hi_at, &w->hi_cap, sizeof *hi, 64);
		if (!hi)
			return ts__fail(TS_ENOMEM, "out of memory");
		w->hi_at = hi;
	}
	w->hi_at[w->nblocks] = x->len;
	ts__put_u64(x, w->bhi);
	for (int j = 0; j < w->nstat; j++) {
		stat_put(x, &w->st[j], w->s->cols[w->stat_cols[j]].type);
		stat_reset(&w->st[j]);
	}
	if (x->oom)
		return ts__fail(TS_ENOMEM, "out of memory");
	return 0;
}

/* Index the current block and hand it to be compressed, checksummed and
 * written: at once without a pool, else queued for the pool (written
 * when its turn comes; all: the writer's last, so everything cut is
 * written before returning). */
static int cut_block(ts__tablet_writer *w, int last)
{
	struct slot *b = &w->one;
	struct pool *p;
	int rc;
	if (!w->pool_tried && !last)
		pool_start(w);
	p = w->pool;
	if (p && (rc = pool_drain(w, 1, 0)) < 0)
		return rc;
	if (p) {
		pthread_mutex_lock(&p->mu);
		for (int i = 0; i < p->nslots; i++)
			if (p->slot[i].state == SLOT_FREE) {
				b = &p->slot[i];
				break;
			}
		pthread_mutex_unlock(&p->mu); /* only this thread makes a slot not free */
	}
	if ((rc = index_block(w, &b->entry)) < 0)
		return rc;
	int keep = w->bkeep == KEEP_NOT && w->keep_all ? KEEP_SPARE : w->bkeep;
	b->block = w->nblocks;
	w->bkeep = KEEP_NOT;
	/* the block's rows move to the slot; the slot's old buffer, emptied,
	 * takes the next block's */
	ts_buf t = b->raw;
	b->raw = w->block;
	w->block = t;
	w->block.len = 0;
	w->nblocks++;
	w->brows = 0;
	w->bhi = 0;
	if (!p) {
		pack(b, &b->raw, w->wrkmem);
		keep_copy(w->bc, w->serial, b->block, &b->raw, keep);
		return put_block(w, b);
	}
	pthread_mutex_lock(&p->mu);
	b->keep = keep;
	b->seq = p->next_seq++;
	b->state = SLOT_QUEUED;
	pthread_cond_signal(&p->queued);
	pthread_mutex_unlock(&p->mu);
	return pool_drain(w, 0, last);
}

void ts__tablet_writer_threads(ts__tablet_writer *w, int threads)
{
	w->threads = threads < 1 ? 1 : threads > TS_FLUSH_THREADS_MAX ? TS_FLUSH_THREADS_MAX
	                                                              : threads;
}

void ts__tablet_writer_warm(ts__tablet_writer *w, ts__bcache *c, uint64_t serial, int all)
{
	if (serial == 0)
		return; /* none was reserved */
	w->bc = c;
	w->serial = serial;
	w->keep_all = all;
}

void ts__tablet_writer_hourly(ts__tablet_writer *w)
{
	w->hourly = 1;
}

void ts__tablet_writer_fill(ts__tablet_writer *w, int all)
{
	w->keep_all = w->bc && all;
}

void ts__tablet_writer_keep(ts__tablet_writer *w, int used)
{
	int k = !w->bc ? KEEP_NOT : used ? KEEP_USED : KEEP_SPARE;
	if (k > w->bkeep)
		w->bkeep = k;
}

/* Whether key shares its stem (all but the ts) with the previous row. */
static int same_stem(const ts__tablet_writer *w, const unsigned char *key, size_t klen)
{
	return w->rows && w->last_key.len == klen && memcmp(w->last_key.data, key, klen - 8) == 0;
}

/* The bytes of the block's entry in the footer's index, when the row of
 * key (klen bytes) ends it: fixed fields, two keys, the statistics. */
static size_t entry_size(const ts__tablet_writer *w, size_t klen)
{
	return 40 + w->bfirst.len + klen + (size_t)TS_STAT_SIZE * (size_t)w->nstat;
}

/* Whether to cut the block before the row of key: it is full, or it is
 * big enough and the row starts another series or hour.  Both sizes grow
 * with the block's index entry (TS_TABLET_INDEX_SHARE), so that the
 * footer of a wide table stays a small share of its rows. */
static int block_ends(const ts__tablet_writer *w, const unsigned char *key, size_t klen,
                      size_t len, int same)
{
	size_t share = TS_TABLET_INDEX_SHARE * entry_size(w, klen);
	size_t full = share > TS_TABLET_BLOCK ? share : TS_TABLET_BLOCK;
	size_t align_min = share > TS_TABLET_BLOCK_ALIGN_MIN || w->hourly ? share
	                                                                  : TS_TABLET_BLOCK_ALIGN_MIN;
	if (w->block.len + len + 10 > full)
		return w->block.len > 0;
	if (w->block.len < align_min)
		return 0;
	int64_t last = ts__key_ts(w->last_key.data, w->last_key.len);
	return !same || ts__floor_div(last, TS_TABLET_BLOCK_ALIGN) !=
	                    ts__floor_div(ts__key_ts(key, klen), TS_TABLET_BLOCK_ALIGN);
}

static int remember_stem(ts__tablet_writer *w, const unsigned char *key, size_t klen, int same)
{
	size_t n = klen - 8;
	if (same)
		return 0; /* same stem as the previous row */
	if (w->nstems == w->stems_cap) {
		uint64_t *s = grow(w->stems, &w->stems_cap, sizeof *s, 1024);
		if (!s)
			return ts__fail(TS_ENOMEM, "out of memory");
		w->stems = s;
	}
	w->stems[w->nstems++] = stem_hash(key, n);
	return 0;
}

int ts__tablet_writer_add(ts__tablet_writer *w, const void *row, size_t len)
{
	return ts__tablet_writer_add_hi(w, row, len, 0);
}

int ts__tablet_writer_add_hi(ts__tablet_writer *w, const void *row, size_t len, uint64_t hi)
{
	const void *kp;
	size_t klen;
	int rc = ts__row_key(row, len, &kp, &klen);
	const unsigned char *key = kp;
	if (rc < 0 || klen < 8)
		return rc < 0 ? rc : ts__fail(TS_ECORRUPT, "row key of %zu bytes", klen);
	if (w->rows && ts__key_cmp(w->last_key.data, w->last_key.len, key, klen) >= 0)
		return ts__fail(TS_EINVAL, "tablet %016" PRIx64 ": rows out of key order", w->id);
	/* the statistics columns' values; unless one of them is in the key,
	 * the key is not decoded (nor its strings unescaped) */
	rc = w->stat_keys ? ts__row_decode(w->s, w->s, row, len, w->vals, &w->scratch)
	                  : ts__row_decode_values(w->s, w->s, row, len, w->vals, w->stat_want,
	                                          w->nstat);
	if (rc < 0)
		return rc;
	int same = same_stem(w, key, klen);
	if (block_ends(w, key, klen, len, same) && (rc = cut_block(w, 0)) < 0)
		return rc;
	if ((rc = remember_stem(w, key, klen, same)) < 0)
		return rc;
	int64_t ts = ts__key_ts(key, klen);
	for (int j = 0; j < w->nstat; j++)
		stat_add(&w->st[j], &w->vals[w->stat_cols[j]]);
	ts__put_bytes(&w->block, row, len);
	if (!w->rows)
		ts__put(&w->first_key, key, klen);
	if (!w->brows) {
		w->bfirst.len = 0;
		ts__put(&w->bfirst, key, klen);
	}
	w->last_key.len = 0;
	ts__put(&w->last_key, key, klen);
	if (w->block.oom || w->first_key.oom || w->last_key.oom || w->bfirst.oom)
		return ts__fail(TS_ENOMEM, "out of memory");
	w->bmin = w->brows ? (ts < w->bmin ? ts : w->bmin) : ts;
	w->bmax = w->brows ? (ts > w->bmax ? ts : w->bmax) : ts;
	if (hi > w->bhi)
		w->bhi = hi;
	w->versioned |= hi != 0;
	w->brows++;
	w->rows++;
	if (ts < w->min_ts)
		w->min_ts = ts;
	if (ts > w->max_ts)
		w->max_ts = ts;
	return 0;
}

/* The raw footer: fixed fields, statistics columns, keys, index, Bloom. */
static int build_footer(ts__tablet_writer *w, ts_buf *f)
{
	ts__put_u32(f, w->s->version);
	ts__put_u64(f, w->id);
	ts__put_u64(f, w->rows);
	ts__put_u64(f, (uint64_t)w->min_ts);
	ts__put_u64(f, (uint64_t)w->max_ts);
	ts__put_u64(f, (uint64_t)w->period_start);
	ts__put_u64(f, (uint64_t)w->period_end);
	ts__put_u32(f, w->nblocks);
	ts__put_u32(f, (uint32_t)w->nstat);
	for (int j = 0; j < w->nstat; j++) {
		ts__put_u16(f, w->stat_cols[j]);
		ts__put_u8(f, (uint8_t)w->s->cols[w->stat_cols[j]].type);
		ts__put_u8(f, 0);
	}
	ts__put_bytes(f, w->first_key.data, w->first_key.len);
	ts__put_bytes(f, w->last_key.data, w->last_key.len);
	if (w->versioned) {
		ts__put(f, w->index.data, w->index.len);
	} else { /* format 2: the entries without their hi */
		size_t from = 0;
		for (uint32_t i = 0; i < w->nblocks; i++) {
			ts__put(f, w->index.data + from, w->hi_at[i] - from);
			from = w->hi_at[i] + 8;
		}
		ts__put(f, w->index.data + from, w->index.len - from);
	}
	uint64_t nbits = (uint64_t)w->nstems * TS_BLOOM_BITS_PER_STEM;
	nbits = nbits < 64 ? 64 : (nbits + 7) & ~UINT64_C(7);
	if (nbits > UINT32_MAX - 7)
		return ts__fail(TS_ETOOBIG, "tablet %016" PRIx64 ": too many keys", w->id);
	ts__put_u32(f, (uint32_t)nbits);
	ts__put_u8(f, TS_BLOOM_HASHES);
	size_t at = f->len;
	if (ts__buf_reserve(f, nbits / 8) == 0) {
		memset(f->data + at, 0, nbits / 8);
		f->len += nbits / 8;
		for (size_t i = 0; i < w->nstems; i++) {
			bloom_walk bw = bloom_start(w->stems[i], (uint32_t)nbits);
			for (unsigned k = 0; k < TS_BLOOM_HASHES; k++) {
				uint32_t bit = bloom_next(&bw);
				f->data[at + bit / 8] |= (unsigned char)(1u << (bit % 8));
			}
		}
	}
	if (f->oom)
		return ts__fail(TS_ENOMEM, "out of memory");
	if (f->len > TS_TABLET_FOOTER_MAX)
		return ts__fail(TS_ETOOBIG, "tablet %016" PRIx64 ": footer of %zu bytes", w->id, f->len);
	return 0;
}

static int write_tail(ts__tablet_writer *w)
{
	unsigned char t[TS_TABT_SIZE] = {0};
	ts_buf f;
	ts__buf_init(&f);
	int rc = build_footer(w, &f);
	if (rc < 0) {
		ts__buf_free(&f);
		return rc;
	}
	int codec = compress(w, f.data, f.len);
	const unsigned char *data = codec == TS_CODEC_RAW ? f.data : w->stored.data;
	size_t stored = codec == TS_CODEC_RAW ? f.len : w->stored.len;
	ts__store_u64(t + TS_TABT_OFF_FOOTER, w->offset);
	ts__store_u32(t + TS_TABT_OFF_STORED, (uint32_t)stored);
	ts__store_u32(t + TS_TABT_OFF_RAW, (uint32_t)f.len);
	ts__store_u32(t + TS_TABT_OFF_FOOTER_CRC, ts__crc32c(0, data, stored));
	t[TS_TABT_OFF_CODEC] = (unsigned char)codec;
	ts__store_u32(t + TS_TABT_OFF_CRC, ts__crc32c(0, t, TS_TABT_OFF_CRC));
	memcpy(t + TS_TABT_OFF_MAGIC, TS_TABT_MAGIC, 8);
	rc = ts__write_at(w->fd, data, stored, (long long)w->offset, w->tmp);
	if (rc == 0)
		rc = ts__write_at(w->fd, t, sizeof t, (long long)(w->offset + stored), w->tmp);
	if (rc == 0 && w->versioned) { /* the header said 2 so far */
		unsigned char h[TS_TABH_SIZE];
		make_header(w, TS_TABLET_VERSION, h);
		rc = ts__write_at(w->fd, h, sizeof h, 0, w->tmp);
	}
	w->offset += stored + sizeof t;
	ts__buf_free(&f);
	return rc;
}

int ts__tablet_writer_finish(ts__tablet_writer *w, uint64_t *rows, uint64_t *bytes,
                             int64_t *min_ts, int64_t *max_ts)
{
	char name[64], path[TS_PATH_MAX];
	int rc = w->rows ? 0 : ts__fail(TS_EINVAL, "tablet %016" PRIx64 " has no rows", w->id);
	if (rc == 0 && w->block.len)
		rc = cut_block(w, 1);
	if (rc == 0 && w->pool)
		rc = pool_drain(w, 0, 1);
	pool_stop(w);
	if (rc == 0)
		rc = write_tail(w);
	if (rc == 0 && fsync(w->fd) < 0)
		rc = ts__fail_errno(errno, "fsync %s", w->tmp);
	if (rc == 0)
		rc = ts__tablet_name(w->id, name, sizeof name);
	if (rc == 0)
		rc = ts__path(path, "%s/%s", w->dir, name);
	if (rc == 0 && rename(w->tmp, path) < 0)
		rc = ts__fail_errno(errno, "rename %s", w->tmp);
	if (rc < 0) {
		ts__tablet_writer_abort(w);
		return rc;
	}
	if (rows)
		*rows = w->rows;
	if (bytes)
		*bytes = w->offset;
	if (min_ts)
		*min_ts = w->min_ts;
	if (max_ts)
		*max_ts = w->max_ts;
	rc = ts__fsync_dir(w->dir);
	writer_free(w);
	return rc;
}

void ts__tablet_writer_abort(ts__tablet_writer *w)
{
	if (!w)
		return;
	pool_stop(w); /* no helper caches a block after the forget */
	if (w->bc) /* the tablet will never be opened: no reader finds them */
		ts__bcache_forget(w->bc, w->serial, w->nblocks);
	unlink(w->tmp);
	writer_free(w);
}
