/*
 * ceiling.c -- what this machine's cores allow a flush and a cold scan,
 * measured in the same run as the targets that set them against the
 * device (flush.c, query.c), so that a target out of reach is shown to be
 * out of reach rather than said to be.
 *
 * Two pieces of CPU work bound those targets whatever the I/O does:
 *
 *   the tree walk   a flush visits every row of its filling trees in key
 *                   order (ts__avl_iter_next over the log, the row record
 *                   found by ts__rowrec_row), as lib/flush.c's
 *                   write_tablet does; bench_walk_filling times that walk
 *                   alone, no row decoded or copied, one thread.
 *   LZO1X-1         a flush compresses every block (lzo1x_1_compress), a
 *                   cold scan decompresses every block it reads
 *                   (lzo1x_decompress_safe).  bench_lzo_run times exactly
 *                   that over a set of blocks held in memory, with the
 *                   blocks dealt round-robin to `threads` threads, each
 *                   with its own work memory and output buffer; no I/O,
 *                   no row encoding or decoding.
 *
 * The block sets come from the table's on-disk tablets through a
 * snapshot: bench_blocks_raw reads each block back decompressed
 * (ts__tablet_read_block: the bytes a flush compressed),
 * bench_blocks_stored reads each LZO block's stored bytes as they lie in
 * the file (what a cold scan decompresses).  Both hold every block in
 * memory at once, in one allocation: the day's tablets of the query
 * workloads come to about 400 MB stored, the flush's 2 M rows to about
 * 200 MB raw, which this bench's machine (24 GB) holds easily; the
 * threads then write into buffers of one block each.
 */
#include <assert.h>
#include <lzo/lzo1x.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "avl.h"
#include "bench.h"
#include "snapshot.h"
#include "tablet.h"
#include "tablet_format.h"

int bench_cpus(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);
	return n < 1 ? 1 : (int)n;
}

/* ---- the tree walk ---- */

/* Visit every row of tree root in key order, adding to *w. */
static void walk_tree(ts__log *log, uint64_t root, bench_walk *w)
{
	ts__avl_iter it;
	uint64_t lsn;
	ts__avl_iter_init(&it, log, root, 0);
	while ((lsn = ts__avl_iter_next(&it)) != 0) {
		size_t len;
		uint32_t version;
		ts__rowrec_row(log, lsn, &len, &version);
		w->rows++;
		w->bytes += len;
	}
}

int bench_walk_filling(ts_table *t, bench_walk *w)
{
	ts__snapshot snap;
	int rc = ts__snapshot_take(t, &snap);
	memset(w, 0, sizeof *w);
	if (rc < 0)
		return rc;
	double t0 = bench_seconds();
	for (uint32_t i = 0; i < snap.nroots; i++)
		walk_tree(snap.table->log, snap.roots[i].root, w);
	w->seconds = bench_seconds() - t0;
	ts__snapshot_release(&snap);
	return 0;
}

/* ---- block sets ---- */

void bench_blocks_free(bench_blocks *b)
{
	free(b->bytes);
	free(b->off);
	free(b->raw);
	memset(b, 0, sizeof *b);
}

/* Room for n blocks of size bytes in all.  Returns 0 or TS_ENOMEM. */
static int blocks_alloc(bench_blocks *b, size_t n, size_t size)
{
	memset(b, 0, sizeof *b);
	b->bytes = malloc(size ? size : 1);
	b->off = calloc(n + 1, sizeof *b->off);
	b->raw = calloc(n ? n : 1, sizeof *b->raw);
	if (b->bytes && b->off && b->raw)
		return 0;
	bench_blocks_free(b);
	return TS_ENOMEM;
}

/* Append len bytes as the next block, raw bytes once decompressed. */
static void blocks_add(bench_blocks *b, const void *p, size_t len, size_t raw)
{
	memcpy(b->bytes + b->off[b->n], p, len);
	b->raw[b->n] = raw;
	b->max_raw = raw > b->max_raw ? raw : b->max_raw;
	b->off[b->n + 1] = b->off[b->n] + len;
	b->n++;
}

/* Blocks over the snapshot's tablets, their raw and stored bytes, and
 * the most stored bytes of one block (the footer does not say which
 * blocks are LZO's: their headers do). */
struct census {
	size_t n, raw, stored, most;
};

static void blocks_count(const ts__snapshot *s, struct census *c)
{
	memset(c, 0, sizeof *c);
	for (int i = 0; i < s->ntablets; i++)
		for (uint32_t k = 0; k < s->tablets[i]->nblocks; k++) {
			const ts__tablet_block *blk = &s->tablets[i]->blocks[k];
			c->n++;
			c->raw += blk->raw;
			c->stored += blk->stored;
			c->most = blk->stored > c->most ? blk->stored : c->most;
		}
}

static int read_raw(const ts__snapshot *s, bench_blocks *b)
{
	struct census c;
	ts_buf buf;
	int rc;
	blocks_count(s, &c);
	if ((rc = blocks_alloc(b, c.n, c.raw)) < 0)
		return rc;
	ts__buf_init(&buf);
	for (int i = 0; rc == 0 && i < s->ntablets; i++)
		for (uint32_t k = 0; rc == 0 && k < s->tablets[i]->nblocks; k++)
			if ((rc = ts__tablet_read_block(s->tablets[i], k, &buf)) == 0) {
				assert(buf.len == s->tablets[i]->blocks[k].raw); /* as counted */
				blocks_add(b, buf.data, buf.len, buf.len);
			}
	ts__buf_free(&buf);
	return rc;
}

/* Fill b with read from a snapshot of t; b is left empty on failure. */
static int blocks_of(ts_table *t, bench_blocks *b,
                     int (*read)(const ts__snapshot *, bench_blocks *))
{
	ts__snapshot snap;
	int rc = ts__snapshot_take(t, &snap);
	memset(b, 0, sizeof *b);
	if (rc < 0)
		return rc;
	rc = read(&snap, b);
	ts__snapshot_release(&snap);
	if (rc < 0)
		bench_blocks_free(b);
	return rc;
}

int bench_blocks_raw(ts_table *t, bench_blocks *b) { return blocks_of(t, b, read_raw); }

/* Read n bytes at off of tablet tab into p.  Returns 0 or TS_EIO. */
static int read_at(const ts__tablet *tab, void *p, size_t n, uint64_t off)
{
	ssize_t k = pread(tab->fd, p, n, (off_t)off);
	return k == (ssize_t)n ? 0 : TS_EIO;
}

/* Add block k of tab to b when its codec is LZO1X (else count it in
 * b->skipped); scratch holds TS_BLKH_SIZE + the block's stored bytes. */
static int add_stored(const ts__tablet *tab, uint32_t k, bench_blocks *b, unsigned char *scratch)
{
	const ts__tablet_block *blk = &tab->blocks[k];
	int rc = read_at(tab, scratch, TS_BLKH_SIZE + (size_t)blk->stored, blk->offset);
	if (rc < 0)
		return rc;
	if (scratch[TS_BLKH_OFF_CODEC] == TS_CODEC_LZO1X)
		blocks_add(b, scratch + TS_BLKH_SIZE, blk->stored, blk->raw);
	else
		b->skipped++;
	return 0;
}

static int read_stored(const ts__snapshot *s, bench_blocks *b)
{
	struct census c;
	unsigned char *scratch = NULL;
	int rc;
	blocks_count(s, &c);
	if ((rc = blocks_alloc(b, c.n, c.stored)) == 0 && !(scratch = malloc(TS_BLKH_SIZE + c.most)))
		rc = TS_ENOMEM;
	for (int i = 0; rc == 0 && i < s->ntablets; i++)
		for (uint32_t k = 0; rc == 0 && k < s->tablets[i]->nblocks; k++)
			rc = add_stored(s->tablets[i], k, b, scratch);
	free(scratch);
	return rc;
}

int bench_blocks_stored(ts_table *t, bench_blocks *b) { return blocks_of(t, b, read_stored); }

/* ---- LZO over a block set, on threads ---- */

/* One thread's share: blocks first, first + step, ... */
struct lzo_share {
	const bench_blocks *b;
	int compress;
	size_t first, step;
	unsigned char *out, *wrkmem; /* its own, allocated before the clock */
	uint64_t in, out_bytes;
	int failed;
};

static void *lzo_main(void *arg)
{
	struct lzo_share *w = arg;
	const bench_blocks *b = w->b;
	for (size_t i = w->first; i < b->n && !w->failed; i += w->step) {
		const unsigned char *p = b->bytes + b->off[i];
		lzo_uint len = b->off[i + 1] - b->off[i], got = b->raw[i];
		if (w->compress)
			w->failed = lzo1x_1_compress(p, len, w->out, &got, w->wrkmem) != LZO_E_OK;
		else
			w->failed = lzo1x_decompress_safe(p, len, w->out, &got, NULL) != LZO_E_OK ||
			            got != b->raw[i];
		w->in += len;
		w->out_bytes += got;
	}
	return NULL;
}

/* Give each of n shares its buffers, faulted in.  Returns 0 or TS_ENOMEM. */
static int shares_init(struct lzo_share *w, int n, const bench_blocks *b, int compress)
{
	size_t room = ts__lzo_bound(b->max_raw);
	for (int k = 0; k < n; k++) {
		w[k] = (struct lzo_share){.b = b, .compress = compress, .first = (size_t)k,
		                          .step = (size_t)n};
		w[k].out = malloc(room);
		w[k].wrkmem = compress ? malloc(LZO1X_1_MEM_COMPRESS) : NULL;
		if (!w[k].out || (compress && !w[k].wrkmem))
			return TS_ENOMEM;
		memset(w[k].out, 0, room);
		if (compress)
			memset(w[k].wrkmem, 0, LZO1X_1_MEM_COMPRESS);
	}
	return 0;
}

static void shares_free(struct lzo_share *w, int n)
{
	for (int k = 0; k < n; k++) {
		free(w[k].out);
		free(w[k].wrkmem);
	}
}

/* One timed pass of n threads; sums what they did into *run. */
static int lzo_pass(struct lzo_share *w, int n, bench_lzo *run)
{
	pthread_t th[BENCH_THREADS_MAX];
	int started = 0, failed = 0;
	double t0 = bench_seconds();
	for (; started < n; started++)
		if (pthread_create(&th[started], NULL, lzo_main, &w[started]) != 0)
			break;
	for (int k = 0; k < started; k++)
		pthread_join(th[k], NULL);
	run->seconds = bench_seconds() - t0;
	run->in = run->out = 0;
	for (int k = 0; k < n; k++) {
		failed |= w[k].failed || k >= started;
		run->in += w[k].in;
		run->out += w[k].out_bytes;
	}
	return failed ? TS_EIO : 0;
}

int bench_lzo_run(const bench_blocks *b, int compress, int threads, int passes, bench_lzo *best)
{
	struct lzo_share w[BENCH_THREADS_MAX];
	int n = threads < 1 ? 1 : threads > BENCH_THREADS_MAX ? BENCH_THREADS_MAX : threads;
	int rc = lzo_init() == LZO_E_OK ? 0 : TS_EIO;
	memset(best, 0, sizeof *best);
	memset(w, 0, sizeof w);
	if (rc == 0)
		rc = shares_init(w, n, b, compress);
	for (int p = 0; rc == 0 && p < passes; p++) {
		bench_lzo run;
		for (int k = 0; k < n; k++)
			w[k].in = w[k].out_bytes = 0;
		if ((rc = lzo_pass(w, n, &run)) == 0 && (!best->seconds || run.seconds < best->seconds))
			*best = run;
	}
	best->threads = n;
	shares_free(w, n);
	return rc;
}
