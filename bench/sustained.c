/*
 * sustained.c -- the sustained workload: issue 32's target 4, a library
 * ingest longer than the log holds, so that flushes and merges run all
 * through it.
 *
 * The reference rows (1000 hosts every 10 s, ts-major, ten int64 values,
 * batches of 512), --sustained-rows of them (50 M; --quick 1 M), made as
 * they are inserted from a bench_stream (50 M rows made up front would
 * take some 12 GB), into each engine in the same process, one after the
 * other:
 *   tsstore   the library's defaults (flushes of flush_size trees, the
 *             scheduler's merges, its block cache), sync none;
 *   lmdb      MDB_NOSYNC, its map large enough for the rows;
 *   rocksdb   LZ4, WAL on, no sync;
 *   hash      the in-memory hash table, on the first --rows rows only (it
 *             holds everything in memory): the reference for the
 *             inserting thread's CPU-time rate.
 * Each engine's run is timed around its insert calls alone (making the
 * rows is the same for every engine and left out).  Per engine:
 * rows_per_sec (wall time of the whole load), rows_per_thread_cpu_sec
 * (the inserting thread's CPU time), the slowest second's rate
 * (min_second_rows_per_sec) and the longest time one batch took
 * (max_batch_ms), and one line per second of the load, metric
 * "rows_in_second", point "second" -- the throughput over time, which
 * bench/plot-sustained.sh plots.  tsstore also reports its flushes and
 * merges during the load, the time its inserts waited for the flushes
 * (log_stalls, log_stall_ns: the wall at three quarters of log_cap;
 * log_paced_ns: the slope before it), and a line per second of its
 * unflushed log, metric "log_bytes_at_second" (sampled as each second
 * of its insert calls ends): what the writer waits for, over time.
 *
 * Targets (--compare): tsstore/LMDB rows/s >= 4, tsstore/RocksDB rows/s
 * >= 10, tsstore's inserting thread's rows per CPU second over the hash
 * table's >= 0.5.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench.h"

#define SECONDS_MAX 100000   /* seconds of one engine's load recorded, at most */

/* One engine's load: what it inserts into, and what it measured. */
struct run {
	const char *engine;
	double seconds, cpu_seconds;  /* in its insert calls alone: wall, the thread's CPU */
	double max_batch;             /* seconds of the slowest batch */
	size_t rows;
	uint64_t *in_second;          /* rows inserted in second i of the time spent
	                               * in insert calls */
	int64_t *log_bytes;           /* tsstore: its unflushed log as second i ended */
	size_t nseconds;
};

static double thread_cpu(void)
{
	struct timespec t;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* The rows of one batch for both sides: tsstore's values and the peers'
 * keys and values. */
struct batch {
	bench_rows peer;   /* n = the batch's rows, key, klen, value */
	ts_value *vals;    /* batch * BENCH_COLUMNS */
};

static void batch_init(struct batch *b, size_t batch)
{
	memset(b, 0, sizeof *b);
	b->peer.batch = batch;
	b->peer.key = bench_calloc(batch, sizeof *b->peer.key, "sustained");
	b->peer.klen = bench_calloc(batch, sizeof *b->peer.klen, "sustained");
	b->peer.value = bench_calloc(batch, sizeof *b->peer.value, "sustained");
	b->vals = bench_calloc(batch * BENCH_COLUMNS, sizeof *b->vals, "sustained");
}

static void batch_free(struct batch *b)
{
	free(b->peer.key);
	free(b->peer.klen);
	free(b->peer.value);
	free(b->vals);
}

/* The next up to b->peer.batch rows of s (left: rows still to make). */
static size_t batch_fill(struct batch *b, bench_stream *s, size_t left)
{
	size_t n = left < b->peer.batch ? left : b->peer.batch;
	for (size_t i = 0; i < n; i++) {
		ts_value *v = &b->vals[i * BENCH_COLUMNS];
		bench_stream_next(s, v, b->peer.value[i]);
		bench_encode_key(b->peer.key[i], &b->peer.klen[i], (const char *)v[0].v.s.ptr, v[1].v.i);
	}
	b->peer.n = n;
	return n;
}

/* Insert rows rows of a fresh stream, batch by batch, into the tsstore
 * table t (peer NULL) or peer handle h, timing each call. */
static void load(const bench_config *c, size_t rows, ts_table *t, const bench_peer *peer,
                 void *h, struct run *run)
{
	bench_stream s;
	struct batch b;
	size_t done = 0;
	bench_stream_init(&s, rows, c->hosts, bench_wall_ns());
	batch_init(&b, c->batch);
	run->rows = rows;
	run->in_second = bench_calloc(SECONDS_MAX, sizeof *run->in_second, "sustained");
	if (t)
		run->log_bytes = bench_calloc(SECONDS_MAX, sizeof *run->log_bytes, "sustained");
	while (done < rows) {
		size_t n = batch_fill(&b, &s, rows - done);
		double t0 = bench_seconds(), c0 = thread_cpu();
		int rc = t ? ts_insert(t, b.vals, n) : peer->put_batch(h, &b.peer, 0, n);
		double t1 = bench_seconds();
		run->cpu_seconds += thread_cpu() - c0;
		if (rc < 0) {
			fprintf(stderr, "tsstore-bench: sustained: %s: insert failed at row %zu: %s\n",
			        run->engine, done, t ? ts_errmsg(NULL) : "");
			exit(1);
		}
		run->seconds += t1 - t0;
		if (t1 - t0 > run->max_batch)
			run->max_batch = t1 - t0;
		/* by the time spent inserting, so the rows' making is left out */
		size_t sec = (size_t)run->seconds;
		if (t && sec > 0 && sec - 1 < SECONDS_MAX && sec + 1 > run->nseconds)
			run->log_bytes[sec - 1] = bench_table_stat(t, "log_bytes"); /* second
			                                                              * sec - 1 ended */
		if (sec < SECONDS_MAX) {
			run->in_second[sec] += n;
			if (sec + 1 > run->nseconds)
				run->nseconds = sec + 1;
		}
		done += n;
	}
	batch_free(&b);
	bench_stream_free(&s);
}

/* Report run: its figures, and the per-second timeline (params naming a
 * "second": not compared). */
static void report(const struct run *run, const char *params)
{
	char p[640];
	double slowest = 0;
	bench_result("sustained", run->engine, "rows_per_sec", (double)run->rows / run->seconds,
	             "rows/s", params);
	bench_result("sustained", run->engine, "rows_per_thread_cpu_sec",
	             (double)run->rows / run->cpu_seconds, "rows/s", params);
	bench_result("sustained", run->engine, "max_batch_ms", run->max_batch * 1e3, "ms", params);
	/* the last second is partial: not the slowest, unless it is the only one */
	size_t whole = run->nseconds > 1 ? run->nseconds - 1 : run->nseconds;
	for (size_t i = 0; i < whole; i++)
		if (i == 0 || (double)run->in_second[i] < slowest)
			slowest = (double)run->in_second[i];
	bench_result("sustained", run->engine, "min_second_rows_per_sec", slowest, "rows/s", params);
	for (size_t i = 0; i < run->nseconds; i++) {
		snprintf(p, sizeof p, "\"second\":%zu,%s", i, params);
		bench_result("sustained", run->engine, "rows_in_second", (double)run->in_second[i],
		             "rows", p);
		if (run->log_bytes && i + 1 < run->nseconds)
			bench_result("sustained", run->engine, "log_bytes_at_second",
			             (double)run->log_bytes[i], "bytes", p);
	}
}

static void run_tsstore(const bench_config *c, size_t rows, struct run *run, char *extra,
                        size_t size)
{
	char *dir = bench_tmpdir();
	ts_options o;
	ts_db *db;
	ts_options_init(&o);
	o.flags = TS_OPEN_CREATE;
	o.sync = TS_SYNC_NONE;
	ts_table *t = bench_table_open(dir, &o, &db);
	bench_settle();
	load(c, rows, t, NULL, NULL, run);
	snprintf(extra, size, ",\"flushes\":%lld,\"merges\":%lld,\"tablets\":%lld,"
	         "\"log_stalls\":%lld,\"log_stall_ns\":%lld,\"log_paced_ns\":%lld",
	         (long long)bench_table_stat(t, "flushes"), (long long)bench_table_stat(t, "merges"),
	         (long long)bench_table_stat(t, "tablets"), (long long)bench_table_stat(t, "log_stalls"),
	         (long long)bench_table_stat(t, "log_stall_ns"),
	         (long long)bench_table_stat(t, "log_paced_ns"));
	ts_table_close(t);
	ts_close(db);
	bench_rmdir(dir);
}

static void run_peer(const bench_config *c, size_t rows, const bench_peer *peer,
                     struct run *run)
{
	char *dir = bench_tmpdir();
	void *h = peer->open(dir);
	if (!h)
		exit(1);
	bench_settle();
	load(c, rows, NULL, peer, h, run);
	peer->close(h);
	bench_rmdir(dir);
}

void bench_workload_sustained(const bench_config *c)
{
	size_t rows = c->sustained_rows;
	size_t hash_rows = c->rows < rows ? c->rows : rows;
	struct run ts = {.engine = "tsstore"}, lmdb = {.engine = "lmdb"},
	           rocks = {.engine = "rocksdb"}, hash = {.engine = "hash"};
	char p[512], extra[256] = "", hp[256];
	/* LMDB's map: room for the rows at half-full pages */
	bench_lmdb_map_bytes = rows * 256 > bench_lmdb_map_bytes ? rows * 256
	                                                          : bench_lmdb_map_bytes;
	run_tsstore(c, rows, &ts, extra, sizeof extra);
	snprintf(p, sizeof p, "\"rows\":%zu,\"hosts\":%zu,\"batch\":%zu,\"sync\":\"none\"%s", rows,
	         c->hosts, c->batch, extra);
	report(&ts, p);
	snprintf(p, sizeof p, "\"rows\":%zu,\"hosts\":%zu,\"batch\":%zu,\"sync\":\"none\"", rows,
	         c->hosts, c->batch);
	if (!c->skip_peers && bench_peer_lmdb.name) {
		run_peer(c, rows, &bench_peer_lmdb, &lmdb);
		report(&lmdb, p);
	}
	if (!c->skip_peers && bench_peer_rocksdb.name) {
		run_peer(c, rows, &bench_peer_rocksdb, &rocks);
		report(&rocks, p);
	}
	if (!c->skip_peers) {
		run_peer(c, hash_rows, &bench_peer_hash, &hash);
		snprintf(hp, sizeof hp, "\"rows\":%zu,\"hosts\":%zu,\"batch\":%zu", hash_rows, c->hosts,
		         c->batch);
		report(&hash, hp);
	}
	if (!c->skip_peers && lmdb.rows)
		bench_target("sustained", "tsstore rows/s / LMDB rows/s",
		             (lmdb.seconds / (double)lmdb.rows) / (ts.seconds / (double)ts.rows), ">=",
		             4.0);
	if (!c->skip_peers && rocks.rows)
		bench_target("sustained", "tsstore rows/s / RocksDB rows/s",
		             (rocks.seconds / (double)rocks.rows) / (ts.seconds / (double)ts.rows), ">=",
		             10.0);
	if (!c->skip_peers)
		bench_target("sustained",
		             "tsstore inserting thread rows/CPU s / hash table rows/CPU s",
		             (hash.cpu_seconds / (double)hash.rows) / (ts.cpu_seconds / (double)ts.rows),
		             ">=", 0.5);
	free(ts.in_second);
	free(ts.log_bytes);
	free(lmdb.in_second);
	free(rocks.in_second);
	free(hash.in_second);
}
