/*
 * readahead.c -- the read-ahead of long scans (readahead.h): a stream's
 * blocks read early, and the database's helper threads that decompress
 * them.
 *
 * A block read ahead (ts__rablock) moves QUEUED -> BUSY -> DONE, or
 * FAILED when it does not check or decompress (or QUEUED -> TAKEN when
 * its stream comes to it first): a helper takes a queued block
 * (ts__readahead_issue queued it), decompresses it without the pool's
 * mutex, and marks it.  Helpers take the newest queued block first: the
 * blocks a stream wants next are the oldest, which it decompresses
 * itself when the helper is behind, so the helper works on the blocks
 * the stream will come to last, and the two rarely hold the same block
 * (which the stream would decompress again).  The stream owns its blocks
 * throughout, but for one case: a block it lets go of while a helper
 * holds it (BUSY) is marked orphan, and the helper frees it when done.
 * ts__readahead_take takes a DONE block's rows, and decompresses a
 * QUEUED block (unqueued) or a BUSY one (into a block of its own, the
 * helper's orphaned) itself: the stream never waits.
 */
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "readahead.h"
#include "tablet_format.h"
#include "thread.h"

/* A block read ahead: queued for a helper, being decompressed by one,
 * decompressed, failing to, or taken back by its stream (no helper will
 * touch it); or its read failed (never queued). */
enum { RA_QUEUED, RA_BUSY, RA_DONE, RA_FAILED, RA_TAKEN, RA_UNREAD };

struct ts__rablock {
	ts__rablock *next;        /* the pool's queue */
	uint32_t block, stored, raw;
	int state;                /* RA_*, under the pool's mu */
	int orphan;               /* let go of while BUSY: the helper frees it */
	unsigned char *file;      /* its header and stored bytes, as read */
	ts__cblock *cb;           /* DONE: its rows, decompressed and located */
	int rc;                   /* UNREAD: the read's error, and its message */
	char *msg;
};

static void rablock_free(ts__rablock *rb)
{
	if (!rb)
		return;
	free(rb->file);
	free(rb->msg);
	ts__cblock_put(NULL, rb->cb); /* private: never offered to a cache */
	free(rb);
}

/* Check and decompress rb's stored bytes into a new private block for
 * the tablet of serial, its rows located; NULL when it does not check,
 * decompress or locate, or memory is short.  Reads rb's bytes only, so
 * a helper and the stream may run it on the same block at once. */
static ts__cblock *decode(const ts__rablock *rb, uint64_t serial)
{
	const char *why;
	ts__cblock *cb = ts__cblock_new(serial, rb->block);
	if (cb && (ts__tablet_block_decode(rb->file, rb->stored, rb->raw, &cb->raw, &why) < 0 ||
	           ts__tablet_block_locate(cb) < 0)) {
		ts__cblock_put(NULL, cb);
		cb = NULL;
	}
	return cb;
}

/* ---- the helpers ---- */

static void *helper_main(void *arg)
{
	ts__rapool *p = arg;
	pthread_mutex_lock(&p->mu);
	for (;;) {
		if (p->stop)
			break;
		ts__rablock *rb = p->head; /* the newest */
		if (!rb) {
			pthread_cond_wait(&p->queued, &p->mu);
			continue;
		}
		p->head = rb->next;
		rb->next = NULL;
		rb->state = RA_BUSY;
		pthread_mutex_unlock(&p->mu);
		/* serial 0: the stream sets the block's when it takes it */
		ts__cblock *cb = decode(rb, 0);
		if (cb)
			__atomic_add_fetch(&p->by_helper, 1, __ATOMIC_RELAXED);
		pthread_mutex_lock(&p->mu);
		if (rb->orphan) {
			ts__cblock_put(NULL, cb);
			rablock_free(rb);
			continue;
		}
		rb->cb = cb;
		rb->state = cb ? RA_DONE : RA_FAILED;
	}
	pthread_mutex_unlock(&p->mu);
	return NULL;
}

void ts__rapool_init(ts__rapool *p, int helpers)
{
	memset(p, 0, sizeof *p);
	pthread_mutex_init(&p->mu, NULL);
	pthread_cond_init(&p->queued, NULL);
	p->helpers = helpers < 0                          ? 0
	             : helpers > TS_FLUSH_THREADS_MAX - 1 ? TS_FLUSH_THREADS_MAX - 1
	                                                  : helpers;
}

/* Start the helpers, once; p->mu held.  Not an error when none starts:
 * the streams then decompress every block they read ahead themselves. */
static void start(ts__rapool *p)
{
	p->started = 1;
	while (p->nthreads < p->helpers &&
	       ts__thread_start(&p->thread[p->nthreads], helper_main, p) == 0)
		p->nthreads++;
}

void ts__rapool_destroy(ts__rapool *p)
{
	pthread_mutex_lock(&p->mu);
	p->stop = 1;
	pthread_cond_broadcast(&p->queued);
	pthread_mutex_unlock(&p->mu);
	for (int i = 0; i < p->nthreads; i++)
		pthread_join(p->thread[i], NULL);
	/* nothing is queued: every stream let go of its blocks */
	pthread_cond_destroy(&p->queued);
	pthread_mutex_destroy(&p->mu);
	memset(p, 0, sizeof *p);
}

/* ---- a stream's blocks ---- */

ts__readahead *ts__readahead_new(long next)
{
	ts__readahead *ra = calloc(1, sizeof *ra);
	if (ra)
		ra->next = next;
	return ra;
}

/* Unqueue rb, QUEUED; p->mu held. */
static void unqueue(ts__rapool *p, ts__rablock *rb)
{
	ts__rablock **pp = &p->head;
	while (*pp != rb)
		pp = &(*pp)->next;
	*pp = rb->next;
	rb->next = NULL;
}

/* Let go of rb: freed, or orphaned when a helper holds it; p->mu held. */
static void let_go(ts__rapool *p, ts__rablock *rb)
{
	if (rb->state == RA_BUSY) {
		rb->orphan = 1;
		return;
	}
	if (rb->state == RA_QUEUED)
		unqueue(p, rb);
	rablock_free(rb);
}

void ts__readahead_free(ts__rapool *p, ts__readahead *ra)
{
	if (!ra)
		return;
	pthread_mutex_lock(&p->mu);
	for (int i = 0; i < ra->n; i++)
		let_go(p, ra->blk[i]);
	pthread_mutex_unlock(&p->mu);
	free(ra);
}

int ts__readahead_issue(ts__rapool *p, ts__readahead *ra, const ts__tablet *tab, uint32_t b)
{
	const ts__tablet_block *e = &tab->blocks[b];
	ts__rablock *rb = NULL;
	if (!ts__readahead_room(ra) || !(rb = calloc(1, sizeof *rb)) ||
	    !(rb->file = malloc((size_t)TS_BLKH_SIZE + e->stored))) {
		rablock_free(rb); /* memory is short: the stream reads it itself */
		return 0;
	}
	rb->block = b;
	rb->stored = e->stored;
	rb->raw = e->raw;
	ra->blk[ra->n++] = rb;
	if ((rb->rc = ts__tablet_read_stored(tab, b, rb->file)) < 0) {
		/* the read's failure is the scan's when it comes to b, as if
		 * it had read b then; its message is kept for that */
		rb->state = RA_UNREAD;
		rb->msg = strdup(ts_errmsg(NULL));
		ts__clear_error();
		return 0;
	}
	rb->state = RA_QUEUED;
	pthread_mutex_lock(&p->mu);
	if (!p->started)
		start(p);
	rb->next = p->head;
	p->head = rb;
	__atomic_add_fetch(&p->issued, 1, __ATOMIC_RELAXED);
	pthread_cond_signal(&p->queued);
	pthread_mutex_unlock(&p->mu);
	return 1;
}

/* Drop ra->blk[0..k) and close the gap. */
static void drop_first(ts__rapool *p, ts__readahead *ra, int k)
{
	if (k == 0)
		return;
	pthread_mutex_lock(&p->mu);
	for (int i = 0; i < k; i++)
		let_go(p, ra->blk[i]);
	pthread_mutex_unlock(&p->mu);
	memmove(ra->blk, ra->blk + k, (size_t)(ra->n - k) * sizeof *ra->blk);
	ra->n -= k;
}

void ts__readahead_passed(ts__rapool *p, ts__readahead *ra, uint32_t b)
{
	for (int k = 0; k < ra->n; k++)
		if (ra->blk[k]->block == b) {
			drop_first(p, ra, k + 1);
			return;
		}
}

int ts__readahead_take(ts__rapool *p, ts__readahead *ra, uint64_t serial, uint32_t b,
                       ts__cblock **out)
{
	int k = 0;
	*out = NULL;
	while (k < ra->n && ra->blk[k]->block != b)
		k++;
	if (k == ra->n)
		return 0; /* not read ahead: those before may yet be wanted */
	drop_first(p, ra, k);
	ts__rablock *rb = ra->blk[0];
	ts__cblock *cb = NULL;
	int state;
	pthread_mutex_lock(&p->mu);
	if ((state = rb->state) == RA_DONE) {
		cb = rb->cb;
		rb->cb = NULL;
		cb->serial = serial;
	} else if (state == RA_QUEUED) {
		unqueue(p, rb);
		rb->state = RA_TAKEN;
	}
	pthread_mutex_unlock(&p->mu);
	if (state == RA_UNREAD) {
		int rc = rb->msg ? ts__fail(rb->rc, "%s", rb->msg) : ts__fail(rb->rc, "read block %u", b);
		drop_first(p, ra, 1);
		return rc;
	}
	/* still queued, or a helper's (which goes on reading rb's bytes
	 * alongside: decode only reads them); a FAILED block would fail
	 * again, and the caller's own read says why */
	if (!cb && state != RA_FAILED && (cb = decode(rb, serial)))
		__atomic_add_fetch(&p->by_stream, 1, __ATOMIC_RELAXED);
	drop_first(p, ra, 1);
	*out = cb;
	return 0;
}
