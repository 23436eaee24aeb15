/*
 * flush.c -- the on-disk tablet workloads of tsstore-bench.
 *
 * flush: load the reference rows into a fresh table that never flushes or
 * merges by itself (TS_OPEN_NOMERGE, flush_size and flush_age out of
 * reach), then time ts_flush(table, INT64_MAX) -- with the default
 * flush_threads (the online CPUs: blocks compressed beside the walk) and,
 * in turns with it, with flush_threads 1 (engine "tsstore_1_thread").  The rate is tablet file
 * bytes written per second, set against the device's sequential write
 * bandwidth measured in the same run (device.c); Done-when (1) asks for at
 * least FLUSH_TARGET of it.
 *
 * Beside it, off the clock, what the machine's cores allow (ceiling.c):
 * before each flush, the in-order walk of the filling trees the flush is
 * about to make; after the first, the blocks of the tablets it wrote,
 * read back decompressed and compressed again with LZO1X-1 on one thread
 * and on every core.  The flush's CPU bound is its tablet bytes over
 * (walk + one thread's compression) / cores: the rate if those two were
 * spread perfectly over every core and writing cost nothing -- an upper
 * bound, not a prediction -- set against the device as the target is.
 * Its one-core form, tablet bytes over (walk + one thread's compression),
 * is what issue 32 sets each flush against.
 *
 * bytes_per_row: the same load and flush, then ts_merge until LittleTable's
 * rule finds nothing more to merge; the bytes of the tablet files per row
 * stored.  That leaves one tablet per period, so it is measured a second
 * time ("tsstore_merged") the way a live table gets there: trees flushed
 * at 16 MB during the load, then merged.  The peers load the same rows
 * and settle (RocksDB: flush the memtable and compact the whole key
 * range; LMDB: nothing), and report the bytes of their data files per
 * row.  Done-when (2) asks that tsstore's be no more than RocksDB's (LZ4).
 */
#include <stdio.h>
#include <stdlib.h>

#include "bench.h"
#include "tablet_format.h"

#define FLUSH_TARGET 0.60        /* flush MB/s over device MB/s, at least */
#define BYTES_TARGET 1.0         /* tsstore bytes/row over RocksDB's, at most */
/* bytes_per_row's second tsstore figure: trees flushed at the default
 * flush_size during the load, then merged */
#define MERGED_FLUSH_SIZE (INT64_C(16) << 20)

static void die(const char *what)
{
	fprintf(stderr, "tsstore-bench: %s: %s\n", what, ts_errmsg(NULL));
	exit(1);
}

static void flush_all(bench_loaded *l)
{
	if (ts_flush(l->t, INT64_MAX) < 0)
		die("flush");
}

/* ---- flush ---- */

struct flush_run {
	double seconds;
	double walk;          /* the in-order walk of the filling trees, s */
	double cpu;           /* CPU seconds the process spent meanwhile */
	int64_t tablet_bytes; /* of the .tab files written */
	int64_t row_bytes;    /* the rows' bytes, as the filling tablets held them */
	int64_t rows;
};

/* Walk the filling trees of l's table in key order, timed; *seconds. */
static void walk_once(const bench_rows *r, bench_loaded *l, double *seconds)
{
	bench_walk w;
	int rc = bench_walk_filling(l->t, &w);
	if (rc < 0)
		die("walk of the filling trees");
	if (w.rows != r->n)
		fprintf(stderr, "tsstore-bench: warning: the walk visited %llu rows, %zu inserted\n",
		        (unsigned long long)w.rows, r->n);
	*seconds = w.seconds;
}

/* One load and timed flush into *f; when blocks is not NULL, the blocks
 * of the tablets written are read back into it (off the clock). */
static void flush_once(const bench_rows *r, struct flush_run *f, bench_blocks *blocks)
{
	bench_loaded l;
	bench_settle();
	bench_table_load_fresh(r, BENCH_NEVER_FLUSH_SIZE, &l);
	f->row_bytes = bench_table_stat(l.t, "filling_bytes");
	walk_once(r, &l, &f->walk);
	double t0 = bench_seconds(), c0 = bench_cpu_seconds();
	flush_all(&l);
	f->seconds = bench_seconds() - t0;
	f->cpu = bench_cpu_seconds() - c0;
	f->tablet_bytes = bench_dir_bytes(l.dir, TS_TABLET_SUFFIX);
	f->rows = bench_table_stat(l.t, "tablet_rows");
	int64_t stat = bench_table_stat(l.t, "flushed_bytes");
	if (stat >= 0 && stat != f->tablet_bytes)
		fprintf(stderr, "tsstore-bench: warning: flushed_bytes %lld, tablet files %lld bytes\n",
		        (long long)stat, (long long)f->tablet_bytes);
	if (blocks && bench_blocks_raw(l.t, blocks) < 0)
		die("reading the tablets' blocks back");
	bench_table_unload(&l);
}

static void params(char *buf, size_t size, const bench_config *c, const char *extra)
{
	snprintf(buf, size, "\"rows\":%zu,\"hosts\":%zu,\"batch\":%zu,\"sync\":\"none\"%s%s",
	         c->rows, c->hosts, c->batch, extra ? "," : "", extra ? extra : "");
}

/* Compress the flush's blocks on one thread (*one) and on every core
 * (*all).  Exits when that fails. */
static void flush_lzo(const bench_config *c, const bench_blocks *b, bench_lzo *one,
                      bench_lzo *all)
{
	int rc = bench_lzo_run(b, 1, 1, c->repeat, one);
	if (rc == 0)
		rc = bench_lzo_run(b, 1, bench_cpus(), c->repeat, all);
	if (rc < 0) {
		fprintf(stderr, "tsstore-bench: flush: LZO1X-1 over the blocks: %s\n", ts_errname(rc));
		exit(1);
	}
}

/* The flush's CPU bound against the device: tablet bytes over (walk +
 * one thread's compression) / cores.  Returns the one thread's
 * compression seconds. */
static double flush_ceiling(const bench_config *c, const struct flush_run *best, double walk,
                          const bench_blocks *b, double device)
{
	bench_lzo one, all;
	char p[512], extra[320], what[160];
	int cpus = bench_cpus();
	flush_lzo(c, b, &one, &all);
	double bound = (double)best->tablet_bytes / BENCH_MB / ((walk + one.seconds) / cpus);
	snprintf(extra, sizeof extra,
	         "\"blocks\":%zu,\"raw_bytes\":%llu,\"compressed_bytes\":%llu,\"tablet_bytes\":%lld,"
	         "\"cpus\":%d,\"threads\":%d,\"device_mb_per_sec\":%.1f", b->n,
	         (unsigned long long)one.in, (unsigned long long)one.out,
	         (long long)best->tablet_bytes, cpus, all.threads, device);
	params(p, sizeof p, c, extra);
	bench_result("flush", "tsstore", "tree_walk_seconds", walk, "s", p);
	bench_result("flush", "lzo1x_1", "compress_1_thread_mb_per_sec",
	             (double)one.out / BENCH_MB / one.seconds, "MB/s", p);
	bench_result("flush", "lzo1x_1", "compress_all_cores_mb_per_sec",
	             (double)all.out / BENCH_MB / all.seconds, "MB/s", p);
	bench_result("flush", "ceiling", "flush_cpu_bound_mb_per_sec", bound, "MB/s", p);
	bench_result("flush", "ceiling", "flush_cpu_bound_over_device", bound / device, "ratio", p);
	snprintf(what, sizeof what,
	         "flush CPU bound (walk + LZO1X-1 on %d cores) / device sequential write", cpus);
	bench_ceiling("flush", what, bound / device, ">=", FLUSH_TARGET);
	return one.seconds;
}

/* The results of the best flush with flush_threads 1 (engine
 * "tsstore_1_thread"), and each flush's rate over the one-core ceiling. */
static void flush_serial(const bench_config *c, const struct flush_run *best,
                         const struct flush_run *one, double walk, double one_core_sec,
                         double device)
{
	char p[256], extra[64];
	double mbps = (double)one->tablet_bytes / BENCH_MB / one->seconds;
	double ceiling = (double)best->tablet_bytes / BENCH_MB / (walk + one_core_sec);
	snprintf(extra, sizeof extra, "\"device_mb_per_sec\":%.1f", device);
	params(p, sizeof p, c, extra);
	bench_result("flush", "tsstore_1_thread", "flush_mb_per_sec", mbps, "MB/s", p);
	bench_result("flush", "tsstore_1_thread", "flush_seconds", one->seconds, "s", p);
	bench_result("flush", "tsstore_1_thread", "flush_cpu_busy", one->cpu / one->seconds,
	             "cores", p);
	bench_result("flush", "ceiling", "flush_one_core_bound_mb_per_sec", ceiling, "MB/s", p);
	bench_result("flush", "tsstore_1_thread", "flush_over_one_core_bound", mbps / ceiling,
	             "ratio", p);
	bench_result("flush", "tsstore", "flush_over_one_core_bound",
	             (double)best->tablet_bytes / BENCH_MB / best->seconds / ceiling, "ratio", p);
}

void bench_workload_flush(const bench_config *c, const bench_rows *r)
{
	double device = bench_device_write_mbps(c), walk = 0;
	struct flush_run best = {0}, one = {0}, f;
	bench_blocks blocks;
	char p[256], extra[64];
	for (int i = 0; i < c->repeat; i++)
		for (int k = 0; k < 2; k++) { /* the two settings in turns, the first swapped */
			int serial = (i + k) % 2;
			struct flush_run *b = serial ? &one : &best;
			bench_flush_threads = serial ? 1 : 0;
			flush_once(r, &f, i == 0 && k == 0 ? &blocks : NULL);
			walk = !walk || f.walk < walk ? f.walk : walk;
			if (!b->seconds || f.tablet_bytes / f.seconds > b->tablet_bytes / b->seconds)
				*b = f;
		}
	bench_flush_threads = 0;
	double mbps = (double)best.tablet_bytes / BENCH_MB / best.seconds;
	snprintf(extra, sizeof extra, "\"device_mb_per_sec\":%.1f", device);
	params(p, sizeof p, c, extra);
	bench_result("flush", "tsstore", "flush_mb_per_sec", mbps, "MB/s", p);
	bench_result("flush", "tsstore", "flush_rows_per_sec", (double)best.rows / best.seconds,
	             "rows/s", p);
	bench_result("flush", "tsstore", "flush_row_mb_per_sec",
	             (double)best.row_bytes / BENCH_MB / best.seconds, "MB/s", p);
	bench_result("flush", "tsstore", "tablet_bytes", (double)best.tablet_bytes, "bytes", p);
	bench_result("flush", "tsstore", "flush_seconds", best.seconds, "s", p);
	/* near 1: the flush is bound by a core, not by the device */
	bench_result("flush", "tsstore", "flush_cpu_busy", best.cpu / best.seconds, "cores", p);
	bench_result("flush", "tsstore", "flush_over_device", mbps / device, "ratio", p);
	bench_target("flush", "flush MB/s / device sequential write MB/s", mbps / device, ">=",
	             FLUSH_TARGET);
	double one_core = flush_ceiling(c, &best, walk, &blocks, device);
	flush_serial(c, &best, &one, walk, one_core, device);
	bench_blocks_free(&blocks);
}

/* ---- bytes per row ---- */

/* tsstore's tablet bytes per row after a load that flushes trees of
 * flush_size bytes as it goes, a flush of the rest, and ts_merge. */
static double tsstore_bytes_per_row(const bench_config *c, const bench_rows *r,
                                    const char *engine, int64_t flush_size)
{
	bench_loaded l;
	int merged = 0;
	char p[320], extra[192];
	bench_table_load_fresh(r, flush_size, &l);
	flush_all(&l);
	int64_t flushed = bench_table_stat(l.t, "tablets");
	if (ts_merge(l.t, &merged) < 0)
		die("merge");
	int64_t bytes = bench_dir_bytes(l.dir, TS_TABLET_SUFFIX);
	int64_t rows = bench_table_stat(l.t, "tablet_rows");
	snprintf(extra, sizeof extra,
	         "\"flush_size\":%lld,\"tablets_flushed\":%lld,\"merges\":%d,\"tablets\":%lld,"
	         "\"tablet_bytes\":%lld",
	         (long long)(flush_size == BENCH_NEVER_FLUSH_SIZE ? 0 : flush_size), (long long)flushed,
	         merged, (long long)bench_table_stat(l.t, "tablets"), (long long)bytes);
	params(p, sizeof p, c, extra);
	bench_table_unload(&l);
	if (rows != (int64_t)r->n)
		fprintf(stderr, "tsstore-bench: warning: %lld rows in tablets, %zu inserted\n",
		        (long long)rows, r->n);
	double per_row = (double)bytes / (double)r->n;
	bench_result("bytes_per_row", engine, "bytes_per_row", per_row, "bytes", p);
	return per_row;
}

/* A peer's data file bytes per row once it has settled. */
static double peer_bytes_per_row(const bench_config *c, const bench_peer *peer,
                                 const bench_rows *r)
{
	char *dir = bench_tmpdir(), p[256], extra[64];
	void *h = peer->open(dir);
	if (!h)
		exit(1);
	bench_peer_load(peer, h, r);
	if (peer->settle && peer->settle(h) < 0) {
		fprintf(stderr, "tsstore-bench: %s: settle failed\n", peer->name);
		exit(1);
	}
	peer->close(h);
	int64_t bytes = bench_dir_bytes(dir, peer->data_suffix);
	bench_rmdir(dir);
	snprintf(extra, sizeof extra, "\"data_bytes\":%lld", (long long)bytes);
	params(p, sizeof p, c, extra);
	double per_row = (double)bytes / (double)r->n;
	bench_result("bytes_per_row", peer->name, "bytes_per_row", per_row, "bytes", p);
	return per_row;
}

/* The encoded key and the 80 value bytes, with no overhead at all. */
static void raw_bytes_per_row(const bench_config *c, const bench_rows *r)
{
	char p[256];
	double sum = 0;
	for (size_t i = 0; i < r->n; i++)
		sum += r->klen[i] + BENCH_VALUES * 8;
	params(p, sizeof p, c, NULL);
	bench_result("bytes_per_row", "raw", "bytes_per_row", sum / (double)r->n, "bytes", p);
}

void bench_workload_bytes_per_row(const bench_config *c, const bench_rows *r)
{
	/* one flush of everything (each period one tablet, nothing to merge),
	 * and the way a live table gets there: flushes of flush_size, merged */
	double ts = tsstore_bytes_per_row(c, r, "tsstore", BENCH_NEVER_FLUSH_SIZE);
	double merged = tsstore_bytes_per_row(c, r, "tsstore_merged", MERGED_FLUSH_SIZE);
	raw_bytes_per_row(c, r);
	if (c->skip_peers)
		return;
	if (bench_peer_lmdb.name)
		peer_bytes_per_row(c, &bench_peer_lmdb, r);
	if (!bench_peer_rocksdb.name)
		return;
	double rocks = peer_bytes_per_row(c, &bench_peer_rocksdb, r);
	bench_target("bytes_per_row", "tsstore bytes/row / RocksDB (LZ4) bytes/row", ts / rocks,
	             "<=", BYTES_TARGET);
	bench_target("bytes_per_row", "tsstore_merged bytes/row / RocksDB (LZ4) bytes/row",
	             merged / rocks, "<=", BYTES_TARGET);
}
