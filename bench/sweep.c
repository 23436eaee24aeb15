/*
 * sweep.c -- absorb_sweep: insert throughput against batch size and
 * against row size (issue 8), tsstore against the hash table and LMDB.
 *
 * absorb_batch: the reference rows (DESIGN.md section 8, bench_rows_make)
 * in batches of 1, 4, ... 4096 rows, durability none.  A batch of one row
 * costs tsstore a commit and LMDB a write transaction per row, so small
 * batches get fewer rows: a point inserts min(max rows, per-batch rows x
 * batch) rows, the same rows for every engine (params say how many).
 *
 * absorb_rowsize: rows of about 32 B to 64 kB, as tsstore encodes them
 * (key-length varint, key, fixed area, variable area; docs/row-format.md),
 * in batches of SWEEP_ROWSIZE_BATCH.  Every row has the reference key
 * (host string, ts); the rest is what a table would hold at that size:
 * int64 columns for the small rows (2 for 32 B, 14 for 128 B), one blob
 * column for the large ones, its bytes taken at pseudo-random 8-byte
 * aligned offsets of a pool of pseudo-random bytes (so that neither an
 * engine nor a flush's compression sees repeated rows).  The peers get
 * the same encoded key and, as value, the same int64s or blob bytes.  A
 * point inserts min(max rows, byte budget / row bytes) rows, so large
 * rows neither take long nor fill the memory or the disk.  A batch of 512
 * rows of 64 kB is 32 MiB, within tsstore's limits (a blob up to
 * TS_VALUE_MAX, 16 MiB; a row up to TS_ROW_MAX, 32 MiB; each row is a log
 * record of its own, and tsstore.h bounds neither a batch's rows nor its
 * bytes), so every size uses the reference batch.  The table's options
 * are the absorb workload's (sync none, the library's defaults: trees of
 * 16 MB flush during the larger runs, as they would in use).
 *
 * Every point runs each engine c->repeat times, the engines taking turns
 * (as the absorb workload does), and reports each engine's best run; the
 * rows are made before the clock starts, and only the inserts are timed
 * (not opening, closing or removing the scratch directory).  Results are
 * bench_result_point lines, so that --compare pairs tsstore with each
 * peer at the same point only.  bench/plot-sweep.sh draws them.
 */
#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

#define SWEEP_ENGINES 3 /* tsstore, hash, lmdb */
/* absorb_batch: rows of a point at most per-batch rows x batch size, and
 * at most the max rows (--rows caps both) */
#define SWEEP_BATCH_ROWS_FULL 600000
#define SWEEP_BATCH_ROWS_QUICK 60000
#define SWEEP_BATCH_PER_BATCH_FULL 150000
#define SWEEP_BATCH_PER_BATCH_QUICK 6000
/* absorb_rowsize */
#define SWEEP_ROWSIZE_BATCH 512
#define SWEEP_ROWSIZE_ROWS_FULL 400000
#define SWEEP_ROWSIZE_ROWS_QUICK 60000
#define SWEEP_ROWSIZE_BYTES_FULL ((size_t)256 << 20)
#define SWEEP_ROWSIZE_BYTES_QUICK ((size_t)24 << 20)
#define SWEEP_INT_ROW_MAX 128              /* larger rows are a blob */
#define SWEEP_NOMINAL_KEY 18               /* "host_NNN", 0x00 0x01, ts */
#define SWEEP_POOL ((size_t)4 << 20)       /* blob bytes come from here */
#define SWEEP_INTS_MAX 16
#define SWEEP_SEED UINT64_C(0x2545F4914F6CDD1D)

static const size_t batch_sizes[] = {1, 4, 16, 64, 256, 512, 1024, 4096};
static const size_t row_sizes[] = {32, 128, 1024, 4096, 16384, 65536};
#define NBATCH (sizeof batch_sizes / sizeof batch_sizes[0])
#define NROWSIZE (sizeof row_sizes / sizeof row_sizes[0])

/* A row's shape: the key (host, ts), nint int64 columns v0.., then a blob
 * column "payload" of blob bytes when blob > 0. */
typedef struct shape {
	int nint;
	size_t blob;
} shape;

/* Rows of one shape: r holds the peers' keys and values (r.vbytes, or
 * r.value for the reference rows) and tsstore's values, ncols a row. */
typedef struct sweep_rows {
	bench_rows r;
	shape sh;
	int ncols;
	int64_t *ints;           /* n * nint, the int64 columns' values */
	unsigned char *pool;     /* blob bytes */
	double row_bytes;        /* mean row as tsstore encodes it */
	double peer_bytes;       /* mean key + value the peers store */
} sweep_rows;

static size_t varint_len(size_t n)
{
	size_t len = 1;
	for (; n >= 0x80; n >>= 7)
		len++;
	return len;
}

static size_t min_size(size_t a, size_t b) { return a < b ? a : b; }
static double max2(double a, double b) { return a > b ? a : b; }

/* The shape whose encoded row is about target bytes with a key of
 * SWEEP_NOMINAL_KEY bytes: the nearest number of int64 columns up to
 * SWEEP_INT_ROW_MAX, beyond it a blob making the row exactly target. */
static shape shape_of(size_t target)
{
	shape sh = {0, 0};
	assert(target > 1 + SWEEP_NOMINAL_KEY + 8);
	size_t rest = target - 1 - SWEEP_NOMINAL_KEY; /* after the key */
	if (target <= SWEEP_INT_ROW_MAX) {
		sh.nint = (int)((rest + 4) / 8);
		if (sh.nint < 1)
			sh.nint = 1;
		return sh;
	}
	sh.blob = rest - varint_len(rest);
	if (varint_len(sh.blob) + sh.blob != rest)
		sh.blob = rest - varint_len(sh.blob);
	return sh;
}

static void describe(const shape *sh, char *buf, size_t size)
{
	if (sh->blob)
		snprintf(buf, size, "host string, ts, a blob of %zu bytes", sh->blob);
	else
		snprintf(buf, size, "host string, ts, %d int64", sh->nint);
}

/* n rows of shape sh for hosts hosts, ts-major, ending before now: the
 * keys of the reference rows, the values pseudo-random. */
static void rows_make(sweep_rows *w, size_t n, size_t hosts, size_t batch, shape sh)
{
	bench_stream s;
	uint64_t x = SWEEP_SEED;
	size_t key_total = 0;
	memset(w, 0, sizeof *w);
	bench_stream_init(&s, n, hosts, bench_wall_ns());
	w->sh = sh;
	w->ncols = 2 + sh.nint + (sh.blob > 0);
	bench_rows *r = &w->r;
	r->n = n;
	r->hosts = hosts;
	r->batch = batch;
	r->start_ns = s.start_ns;
	r->host = s.host; /* r owns the host names now */
	r->vals = bench_calloc(n * (size_t)w->ncols, sizeof *r->vals, "absorb_sweep");
	r->key = bench_calloc(n, sizeof *r->key, "absorb_sweep");
	r->klen = bench_calloc(n, sizeof *r->klen, "absorb_sweep");
	r->vbytes = bench_calloc(n, sizeof *r->vbytes, "absorb_sweep");
	r->vlen = sh.blob ? sh.blob : (size_t)sh.nint * 8;
	w->ints = bench_calloc(n * (size_t)sh.nint, sizeof *w->ints, "absorb_sweep");
	if (sh.blob) {
		w->pool = bench_calloc(SWEEP_POOL + sh.blob, 1, "absorb_sweep");
		for (size_t i = 0; i < SWEEP_POOL + sh.blob; i += 8) {
			uint64_t v = bench_xorshift(&x);
			memcpy(w->pool + i, &v, min_size(8, SWEEP_POOL + sh.blob - i));
		}
	}
	for (size_t i = 0; i < n; i++) {
		ts_value *v = &r->vals[i * (size_t)w->ncols];
		const char *host = r->host[i % hosts];
		int64_t ts = s.start_ns + (int64_t)(i / hosts) * BENCH_STEP_NS;
		v[0] = ts_string(host);
		v[1] = ts_timestamp(ts);
		bench_encode_key(r->key[i], &r->klen[i], host, ts);
		key_total += r->klen[i];
		int64_t *ints = &w->ints[i * (size_t)sh.nint];
		for (int c = 0; c < sh.nint; c++) {
			ints[c] = (int64_t)(bench_xorshift(&x) % 100000);
			v[2 + c] = ts_int64(ints[c]);
		}
		if (sh.blob) {
			const unsigned char *p = w->pool + bench_xorshift(&x) % (SWEEP_POOL / 8) * 8;
			v[2 + sh.nint] = ts_blob(p, sh.blob);
			r->vbytes[i] = p;
		} else {
			r->vbytes[i] = (const unsigned char *)ints;
		}
	}
	/* the key is shorter than 128 bytes: its length is one varint byte */
	w->peer_bytes = (double)key_total / (double)n + (double)r->vlen;
	w->row_bytes = w->peer_bytes + 1 + (sh.blob ? (double)varint_len(sh.blob) : 0);
}

static void rows_free(sweep_rows *w)
{
	free(w->r.vbytes);
	w->r.vbytes = NULL;
	bench_rows_free(&w->r);
	free(w->ints);
	free(w->pool);
	memset(w, 0, sizeof *w);
}

/* The reference rows, the peers' values in r.value. */
static void rows_make_reference(sweep_rows *w, size_t n, size_t hosts)
{
	memset(w, 0, sizeof *w);
	bench_rows_make(&w->r, n, hosts, 1, bench_wall_ns());
	w->sh = (shape){BENCH_VALUES, 0};
	w->ncols = BENCH_COLUMNS;
}

/* ---- tsstore ---- */

static void die(const char *what)
{
	fprintf(stderr, "tsstore-bench: absorb_sweep: %s: %s\n", what, ts_errmsg(NULL));
	exit(1);
}

/* Open a fresh database in dir, as the absorb workload does (sync none,
 * the library's defaults otherwise), with table BENCH_TABLE of shape sh
 * (for the reference shape, the reference table). */
static ts_table *open_shape(const char *dir, const shape *sh, ts_db **db)
{
	char names[SWEEP_INTS_MAX][16];
	ts_column cols[2 + SWEEP_INTS_MAX + 1] = {{"host", TS_STRING, {TS_NONE, {0}}},
	                                         {"ts", TS_TIMESTAMP, {TS_NONE, {0}}}};
	const char *key[] = {"host", "ts"};
	int ncols = 2;
	ts_options o;
	ts_table *t;
	assert(sh->nint <= SWEEP_INTS_MAX);
	for (int i = 0; i < sh->nint; i++) {
		snprintf(names[i], sizeof names[i], "v%d", i);
		cols[ncols++] = (ts_column){names[i], TS_INT64, {TS_NONE, {0}}};
	}
	if (sh->blob)
		cols[ncols++] = (ts_column){"payload", TS_BLOB, {TS_NONE, {0}}};
	ts_options_init(&o);
	o.flags = TS_OPEN_CREATE;
	o.sync = TS_SYNC_NONE;
	if (ts_open(dir, &o, db) < 0)
		die("open");
	if (ts_create_keyed(*db, BENCH_TABLE, cols, ncols, key, 2, 0) < 0 ||
	    ts_table_open(*db, BENCH_TABLE, &t) < 0)
		die("create table");
	return t;
}

/* One run: every row of w into a fresh table; rows per second. */
static double run_tsstore(const sweep_rows *w)
{
	const bench_rows *r = &w->r;
	char *dir = bench_tmpdir();
	ts_db *db;
	ts_table *t = open_shape(dir, &w->sh, &db);
	double t0 = bench_seconds();
	for (size_t i = 0; i < r->n; i += r->batch) {
		size_t n = min_size(r->n - i, r->batch);
		if (ts_insert(t, &r->vals[i * (size_t)w->ncols], n) < 0)
			die("insert");
	}
	double rate = (double)r->n / (bench_seconds() - t0);
	ts_table_close(t);
	ts_close(db);
	bench_rmdir(dir);
	return rate;
}

/* ---- the peers ---- */

/* Each engine's best rows/s over c->repeat turns: best[0] tsstore, [1]
 * the hash table, [2] LMDB (0 when it did not run); returns the engines
 * that ran. */
static int run_point(const bench_config *c, const sweep_rows *w, double best[SWEEP_ENGINES])
{
	int engines = c->skip_peers ? 1 : bench_peer_lmdb.name ? 3 : 2;
	memset(best, 0, SWEEP_ENGINES * sizeof *best);
	for (int i = 0; i < c->repeat; i++) {
		best[0] = max2(best[0], run_tsstore(w));
		if (engines > 1)
			best[1] = max2(best[1], bench_peer_absorb(&bench_peer_hash, &w->r));
		if (engines > 2)
			best[2] = max2(best[2], bench_peer_absorb(&bench_peer_lmdb, &w->r));
	}
	return engines;
}

static const char *const engine_names[SWEEP_ENGINES] = {"tsstore", "hash", "lmdb"};

/* ---- the two sweeps ---- */

static void sweep_batch(const bench_config *c)
{
	size_t max_rows = min_size(c->rows, c->quick ? SWEEP_BATCH_ROWS_QUICK : SWEEP_BATCH_ROWS_FULL);
	size_t per_batch = c->quick ? SWEEP_BATCH_PER_BATCH_QUICK : SWEEP_BATCH_PER_BATCH_FULL;
	sweep_rows w;
	rows_make_reference(&w, max_rows, c->hosts);
	for (size_t k = 0; k < NBATCH; k++) {
		char point[48], p[256];
		double best[SWEEP_ENGINES];
		/* a prefix of the rows: whole timestamps first, as the rows come */
		w.r.n = min_size(max_rows, per_batch * batch_sizes[k]);
		w.r.batch = batch_sizes[k];
		int engines = run_point(c, &w, best);
		snprintf(point, sizeof point, "\"batch\":%zu", batch_sizes[k]);
		snprintf(p, sizeof p, "\"batch\":%zu,\"rows\":%zu,\"hosts\":%zu,\"sync\":\"none\"",
		         batch_sizes[k], w.r.n, c->hosts);
		for (int e = 0; e < engines; e++)
			bench_result_point("absorb_batch", point, engine_names[e], "rows_per_sec",
			                   best[e], "rows/s", p);
	}
	rows_free(&w);
}

static void sweep_rowsize(const bench_config *c)
{
	size_t max_rows = min_size(c->rows,
	                           c->quick ? SWEEP_ROWSIZE_ROWS_QUICK : SWEEP_ROWSIZE_ROWS_FULL);
	size_t budget = c->quick ? SWEEP_ROWSIZE_BYTES_QUICK : SWEEP_ROWSIZE_BYTES_FULL;
	for (size_t k = 0; k < NROWSIZE; k++) {
		char point[48], p[512], what[96];
		double best[SWEEP_ENGINES];
		sweep_rows w;
		shape sh = shape_of(row_sizes[k]);
		size_t n = min_size(max_rows, budget / row_sizes[k]);
		rows_make(&w, n, c->hosts, SWEEP_ROWSIZE_BATCH, sh);
		int engines = run_point(c, &w, best);
		describe(&sh, what, sizeof what);
		snprintf(point, sizeof point, "\"row_size\":%zu", row_sizes[k]);
		snprintf(p, sizeof p,
		         "\"row_size\":%zu,\"row_bytes\":%.1f,\"peer_bytes\":%.1f,\"columns\":\"%s\","
		         "\"batch\":%d,\"rows\":%zu,\"hosts\":%zu,\"sync\":\"none\"",
		         row_sizes[k], w.row_bytes, w.peer_bytes, what, SWEEP_ROWSIZE_BATCH, n, c->hosts);
		for (int e = 0; e < engines; e++) {
			bench_result_point("absorb_rowsize", point, engine_names[e], "rows_per_sec",
			                   best[e], "rows/s", p);
			/* the same rows' bytes as tsstore encodes them, for every engine */
			bench_result_point("absorb_rowsize", point, engine_names[e], "MB_per_sec",
			                   best[e] * w.row_bytes / BENCH_MB, "MB/s", p);
		}
		rows_free(&w);
	}
}

void bench_workload_absorb_sweep(const bench_config *c)
{
	sweep_batch(c);
	sweep_rowsize(c);
}
