/*
 * query.c -- the query workloads of tsstore-bench: reads from on-disk
 * tablets against LMDB, and an aggregate against the same aggregate
 * computed from a scan.
 *
 * One set of rows serves every part, so that all five figures are about
 * the same data: c->query_rows reference rows (by default one day of the
 * hosts' reports) are loaded into a fresh tsstore table (TS_OPEN_NOMERGE,
 * the default flush_size, so trees flush during the load as in a live
 * table), then ts_flush(t, INT64_MAX) writes what is left and ts_merge
 * merges by LittleTable's rule until nothing qualifies: every row is in
 * on-disk tablets.  When a part needs it, LMDB (bench_peer_lmdb, MDB_NOSYNC)
 * is loaded with the same rows as (host, ts) keys and 80-byte values.
 *
 *   scan       every row, ascending, warm page cache (an untimed pass
 *              first): ts_query with no bounds against an LMDB cursor
 *              walking MDB_FIRST, MDB_NEXT, ...  rows/s.
 *   range      RANGE_QUERIES_* 1-host 1-hour queries (host and start drawn
 *              at random, the same list for both): ts_query with prefix
 *              (host) and [from, from + 1 h), against MDB_SET_RANGE to
 *              (host, from) then MDB_NEXT while the key is below
 *              (host, from + 1 h), one read transaction per query
 *              (mdb_txn_renew / mdb_txn_reset, LMDB's cheapest).
 *              queries/s and the mean latency.
 *   latest     the newest row of every host, hosts in a shuffled order,
 *              LATEST_PASSES_* times: ts_latest_open(prefix host) against
 *              MDB_SET_RANGE to the host's key successor (host, 0x00 0x02)
 *              then MDB_PREV (MDB_LAST when that runs off the end).
 *              lookups/s and the mean latency.
 *   aggregate  count, mean and max of v0 per host and per hour over the
 *              day [from, from + 1 d) (from: the first row's hour):
 *              ts_aggregate_open (every 1 h, group 1) against "tsstore_scan",
 *              ts_query over the same box projecting (host, ts, v0), with
 *              the windows accumulated here.  Rows covered per second.
 *   cold_scan  the table's handles closed, the page cache evicted
 *              (bench_drop_caches: drop_caches, else fadvise of every
 *              tablet file), the table reopened (off the clock), then the
 *              scan of `scan`; tablet file bytes per second against the
 *              device's sequential read bandwidth measured in the same
 *              run (device.c).  Done last: it leaves the cache cold.
 *              Then, off the clock, its CPU ceiling (ceiling.c): the
 *              tablets' stored LZO blocks, held in memory, decompressed
 *              on one thread and on every core; the all-cores rate of
 *              compressed bytes against the device is the best ratio a
 *              scan that must decompress every block could reach here.
 *
 * Every timed pass is checked against what the rows say it must return
 * (row counts and sums of a value, the latest ts of each host, the
 * aggregate's totals against the scan's), so a fast wrong answer is an
 * error, not a result.  Engines take turns c->repeat times; each reports
 * its best pass.  A tsstore call that fails (TS_ENOTSUP until the query
 * engine lands) is reported on stderr with ts_errmsg; that part's tsstore
 * results and target are left out, the other parts still run, and
 * bench_workload_query returns -1 so that tsstore-bench exits with 1.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench.h"
#include "tablet_format.h"

#define NS_PER_SEC INT64_C(1000000000)
#define HOUR_NS (3600 * NS_PER_SEC)
#define RANGE_NS HOUR_NS               /* a range query's span */
#define AGG_EVERY_NS HOUR_NS           /* aggregate windows */
#define AGG_SPAN_NS (24 * HOUR_NS)     /* the aggregate's time range */
#define VALUE_COLUMN 2                 /* v0: scans add it up, aggregates use it */
#define RANGE_QUERIES_FULL 10000
#define RANGE_QUERIES_QUICK 1000
#define LATEST_PASSES_FULL 10          /* lookups of every host */
#define LATEST_PASSES_QUICK 2
#define QUERY_SEED UINT64_C(0x5DEECE66D2545F49)
#define MEAN_TOLERANCE 1e-9            /* relative, on the sum of the means */

/* Done-when targets of the query issue. */
#define SCAN_TARGET 1.0    /* tsstore rows/s over LMDB's, at least */
#define RANGE_TARGET 1.0   /* tsstore queries/s over LMDB's, at least */
#define LATEST_TARGET 1.0  /* tsstore lookups/s over LMDB's, at least */
#define AGG_TARGET 10.0    /* scan-and-accumulate time over aggregate time, at least */
#define COLD_TARGET 0.70   /* cold scan tablet MB/s over device read MB/s, at least */

/* What a pass returned: rows and the sum of one value over them. */
struct tally {
	int64_t rows;
	uint64_t sum; /* wraps: a checksum of values and timestamps */
};

/* What an aggregate pass returned: output rows and the sums of their
 * count, mean and max. */
struct agg_tally {
	int64_t groups, count, max_sum;
	double mean_sum;
};

/* One range query: host index, [from, to). */
struct range {
	size_t host;
	int64_t from, to;
};

/* The state of one run of the query workloads. */
struct qrun {
	const bench_config *c;
	bench_rows r;
	bench_loaded ts;        /* tsstore, every row in on-disk tablets */
	char *lmdb_dir;
	void *lmdb;             /* bench_lmdb, or NULL when not built or skipped */
	int merges;             /* merged: ts_merge's; in service: the scheduler's */
	int64_t tablets, tablet_bytes;
	int64_t filling;        /* in service: filling trees a read visits too */
	double load_seconds;    /* in service: the load's wall time */
	int failed;             /* a tsstore call failed or answered wrong */
	struct range *ranges;
	size_t nranges;
	size_t *order;          /* latest: hosts in a shuffled order */
	int64_t *last_ts;       /* latest: each host's newest ts, INT64_MIN: none */
	int passes;             /* latest: lookups of every host */
	int64_t agg_from, agg_to;
};

static int part_wanted(const bench_config *c, const char *part)
{
	return bench_wanted(c, "query") || bench_wanted(c, part);
}

static void die(const char *what)
{
	fprintf(stderr, "tsstore-bench: query: %s: %s\n", what, ts_errmsg(NULL));
	exit(1);
}

/* Report a failed tsstore call of part, on stderr with ts_errmsg and as
 * a JSON line; returns -1. */
static int tsstore_failed(struct qrun *q, const char *part, const char *call, int rc)
{
	return bench_tsstore_failed(part, call, rc, &q->failed);
}

/* Check what engine returned in part against what it must; returns 0, or
 * -1 (reported) when they differ. */
static int check(struct qrun *q, const char *part, const char *engine, const struct tally *got,
                 const struct tally *want)
{
	if (got->rows == want->rows && got->sum == want->sum)
		return 0;
	fprintf(stderr, "tsstore-bench: %s: %s returned %lld rows (sum %llu), expected %lld (sum %llu)\n",
	        part, engine, (long long)got->rows, (unsigned long long)got->sum,
	        (long long)want->rows, (unsigned long long)want->sum);
	q->failed = 1;
	return -1;
}

/* The lesser of two times in seconds, <= 0 meaning none yet. */
static double min_positive(double best, double s)
{
	return s > 0 && (best <= 0 || s < best) ? s : best;
}

/* The params of every result: the rows and the tablets, then extra.  In
 * service they also say the state, the filling trees and the tablets a
 * full read visited (on-disk tablets and trees, as the part began), and
 * the load's time. */
static void params(char *buf, size_t size, const struct qrun *q, const char *extra)
{
	char state[160] = "";
	if (q->c->in_service)
		snprintf(state, sizeof state,
		         ",\"state\":\"in_service\",\"filling_tablets\":%lld,\"tablets_visited\":%lld,"
		         "\"load_seconds\":%.2f,\"wait_seconds\":%.1f",
		         (long long)q->filling, (long long)(q->tablets + q->filling), q->load_seconds,
		         q->c->in_service_wait);
	snprintf(buf, size,
	         "\"rows\":%zu,\"hosts\":%zu,\"batch\":%zu,\"tablets\":%lld,\"tablet_bytes\":%lld,"
	         "\"merges\":%d,\"block_cache_mb\":%lld%s%s%s",
	         q->r.n, q->r.hosts, q->r.batch, (long long)q->tablets, (long long)q->tablet_bytes,
	         q->merges, (long long)(q->ts.opts.block_cache_size >> 20), state, extra ? "," : "",
	         extra ? extra : "");
}

/* ---- tsstore ---- */

/* Read cur to its end, adding rows and the int64 value of column col to
 * *t; closes cur.  Returns 0, or -1 (reported) on failure. */
static int tsstore_drain(struct qrun *q, const char *part, ts_cursor *cur, int col,
                         struct tally *t)
{
	const ts_value *row;
	int n, rc;
	while ((rc = ts_cursor_next(cur, &row, &n)) == 0 && row) {
		t->rows++;
		t->sum += (uint64_t)row[col].v.i;
	}
	if (rc < 0)
		tsstore_failed(q, part, "ts_cursor_next", rc);
	ts_cursor_close(cur);
	return rc < 0 ? -1 : 0;
}

/* Run query qq to its end; adds to *t.  Returns 0 or -1 (reported). */
static int tsstore_run(struct qrun *q, const char *part, const ts_query *qq, int col,
                       struct tally *t)
{
	ts_cursor *cur = NULL;
	int rc = ts_query_open(q->ts.t, qq, &cur);
	if (rc < 0)
		return tsstore_failed(q, part, "ts_query_open", rc);
	return tsstore_drain(q, part, cur, col, t);
}

/* A full scan; returns seconds, or -1 (reported). */
static double tsstore_scan(struct qrun *q, const char *part, struct tally *t)
{
	ts_query qq;
	memset(&qq, 0, sizeof qq);
	double t0 = bench_seconds();
	if (tsstore_run(q, part, &qq, VALUE_COLUMN, t) < 0)
		return -1;
	return bench_seconds() - t0;
}

/* Every range query; returns seconds, or -1 (reported). */
static double tsstore_ranges(struct qrun *q, struct tally *t)
{
	double t0 = bench_seconds();
	for (size_t i = 0; i < q->nranges; i++) {
		const struct range *g = &q->ranges[i];
		ts_value prefix = ts_string(q->r.host[g->host]);
		ts_query qq;
		memset(&qq, 0, sizeof qq);
		qq.prefix = &prefix;
		qq.nprefix = 1;
		qq.from = g->from;
		qq.to = g->to;
		qq.has_from = qq.has_to = 1;
		if (tsstore_run(q, "range", &qq, VALUE_COLUMN, t) < 0)
			return -1;
	}
	return bench_seconds() - t0;
}

/* The newest row of every host, q->passes times; adds the rows and their
 * ts to *t.  Returns seconds, or -1 (reported). */
static double tsstore_latest(struct qrun *q, struct tally *t)
{
	double t0 = bench_seconds();
	for (int p = 0; p < q->passes; p++)
		for (size_t i = 0; i < q->r.hosts; i++) {
			ts_value prefix = ts_string(q->r.host[q->order[i]]);
			ts_cursor *cur = NULL;
			int rc = ts_latest_open(q->ts.t, &prefix, 1, &cur);
			if (rc < 0)
				return tsstore_failed(q, "latest", "ts_latest_open", rc);
			if (tsstore_drain(q, "latest", cur, 1, t) < 0)
				return -1;
		}
	return bench_seconds() - t0;
}

/* ---- aggregate ---- */

/* An aggregate's output row: host, window, count, mean, max. */
static int agg_row_ok(const ts_value *row, int n)
{
	return n == 5 && row[0].type == TS_STRING && row[1].type == TS_TIMESTAMP &&
	       row[2].type == TS_INT64 && row[3].type == TS_DOUBLE && row[4].type == TS_INT64;
}

/* ts_aggregate_open over the day; returns seconds, or -1 (reported). */
static double tsstore_aggregate(struct qrun *q, struct agg_tally *a)
{
	static const ts_aggspec specs[] = {
		{VALUE_COLUMN, TS_AGG_COUNT}, {VALUE_COLUMN, TS_AGG_MEAN}, {VALUE_COLUMN, TS_AGG_MAX}};
	ts_aggregate req = {NULL, 0, q->agg_from, q->agg_to, AGG_EVERY_NS, 1, specs, 3};
	ts_cursor *cur = NULL;
	const ts_value *row;
	int n, rc;
	double t0 = bench_seconds();
	if ((rc = ts_aggregate_open(q->ts.t, &req, &cur)) < 0)
		return tsstore_failed(q, "aggregate", "ts_aggregate_open", rc);
	while ((rc = ts_cursor_next(cur, &row, &n)) == 0 && row) {
		if (!agg_row_ok(row, n)) {
			ts_cursor_close(cur);
			fprintf(stderr, "tsstore-bench: aggregate: an output row of %d values is not "
			                "(string, timestamp, int64, double, int64)\n", n);
			q->failed = 1;
			return -1;
		}
		a->groups++;
		a->count += row[2].v.i;
		a->mean_sum += row[3].v.d;
		a->max_sum += row[4].v.i;
	}
	if (rc < 0)
		tsstore_failed(q, "aggregate", "ts_cursor_next", rc);
	ts_cursor_close(cur);
	return rc < 0 ? -1 : bench_seconds() - t0;
}

/* One (host, window) group being accumulated by the scan. */
struct group {
	char host[BENCH_HOST_MAX];
	size_t hlen;
	int64_t window, count, sum, max;
};

static void group_emit(struct group *g, struct agg_tally *a)
{
	if (!g->count)
		return;
	a->groups++;
	a->count += g->count;
	a->mean_sum += (double)g->sum / (double)g->count;
	a->max_sum += g->max;
}

/* Add one row (host, ts, v) to the current group, closing it first when
 * the row starts another. */
static void group_add(struct group *g, const ts_value *row, struct agg_tally *a)
{
	size_t hlen = row[0].v.s.len;
	int64_t ts = row[1].v.i, v = row[2].v.i;
	int64_t window = (ts >= 0 ? ts : ts - AGG_EVERY_NS + 1) / AGG_EVERY_NS * AGG_EVERY_NS;
	if (!g->count || window != g->window || hlen != g->hlen ||
	    memcmp(g->host, row[0].v.s.ptr, hlen) != 0) {
		group_emit(g, a);
		g->hlen = hlen < sizeof g->host ? hlen : sizeof g->host;
		memcpy(g->host, row[0].v.s.ptr, g->hlen);
		g->window = window;
		g->count = g->sum = 0;
		g->max = v;
	}
	g->count++;
	g->sum += v;
	g->max = v > g->max ? v : g->max;
}

/* The same aggregate from ts_query rows; returns seconds, or -1. */
static double tsstore_scan_aggregate(struct qrun *q, struct agg_tally *a)
{
	static const int cols[] = {0, 1, VALUE_COLUMN};
	struct group g = {{0}, 0, 0, 0, 0, 0};
	ts_query qq;
	ts_cursor *cur = NULL;
	const ts_value *row;
	int n, rc;
	memset(&qq, 0, sizeof qq);
	qq.from = q->agg_from;
	qq.to = q->agg_to;
	qq.has_from = qq.has_to = 1;
	qq.columns = cols;
	qq.ncolumns = 3;
	double t0 = bench_seconds();
	if ((rc = ts_query_open(q->ts.t, &qq, &cur)) < 0)
		return tsstore_failed(q, "aggregate", "ts_query_open", rc);
	while ((rc = ts_cursor_next(cur, &row, &n)) == 0 && row)
		group_add(&g, row, a);
	group_emit(&g, a);
	if (rc < 0)
		tsstore_failed(q, "aggregate", "ts_cursor_next", rc);
	ts_cursor_close(cur);
	return rc < 0 ? -1 : bench_seconds() - t0;
}

/* Check an aggregate's answer: its counts must add up to rows, and when
 * ref is not NULL (the scan's answer) it must match ref.  Returns 0, or
 * -1 (reported). */
static int agg_check(struct qrun *q, const char *engine, const struct agg_tally *got,
                     int64_t rows, const struct agg_tally *ref)
{
	double diff = ref ? got->mean_sum - ref->mean_sum : 0;
	double scale = ref && ref->mean_sum > 1 ? ref->mean_sum : 1;
	diff = diff < 0 ? -diff : diff;
	if (got->count == rows &&
	    (!ref || (got->groups == ref->groups && got->count == ref->count &&
	              got->max_sum == ref->max_sum && diff <= MEAN_TOLERANCE * scale)))
		return 0;
	fprintf(stderr, "tsstore-bench: aggregate: %s returned %lld groups (counts adding up to %lld, "
	                "sum of means %.6f, sum of maxima %lld); expected %lld rows", engine,
	        (long long)got->groups, (long long)got->count, got->mean_sum,
	        (long long)got->max_sum, (long long)rows);
	if (ref)
		fprintf(stderr, "; the scan: %lld groups (%lld, %.6f, %lld)", (long long)ref->groups,
		        (long long)ref->count, ref->mean_sum, (long long)ref->max_sum);
	fprintf(stderr, "\n");
	q->failed = 1;
	return -1;
}

/* ---- LMDB ---- */

#ifdef HAVE_LMDB
/* LMDB's default order: memcmp, then the shorter key first. */
static int key_cmp(const MDB_val *a, const unsigned char *b, size_t blen)
{
	size_t n = a->mv_size < blen ? a->mv_size : blen;
	int d = memcmp(a->mv_data, b, n);
	return d ? d : (a->mv_size > blen) - (a->mv_size < blen);
}

static int64_t first_value(const MDB_val *v)
{
	int64_t x;
	memcpy(&x, v->mv_data, sizeof x);
	return x;
}

/* The first 8 bytes after the host in a key: its ts. */
static int64_t key_ts(const MDB_val *k)
{
	const unsigned char *p = (const unsigned char *)k->mv_data + k->mv_size - 8;
	uint64_t u = 0;
	for (int i = 0; i < 8; i++)
		u = u << 8 | p[i];
	return (int64_t)(u ^ (UINT64_C(1) << 63));
}

/* A read transaction and a cursor in it, reset (renew before use). */
struct lmdb_reader {
	MDB_txn *txn;
	MDB_cursor *cur;
};

static void reader_open(const bench_lmdb *l, struct lmdb_reader *rd)
{
	rd->txn = NULL;
	rd->cur = NULL;
	if (mdb_txn_begin(l->env, NULL, MDB_RDONLY, &rd->txn) ||
	    mdb_cursor_open(rd->txn, l->dbi, &rd->cur)) {
		fprintf(stderr, "tsstore-bench: lmdb: read transaction failed\n");
		exit(1);
	}
	mdb_txn_reset(rd->txn);
}

static void reader_renew(struct lmdb_reader *rd)
{
	if (mdb_txn_renew(rd->txn) || mdb_cursor_renew(rd->txn, rd->cur)) {
		fprintf(stderr, "tsstore-bench: lmdb: renewing a read transaction failed\n");
		exit(1);
	}
}

static void reader_close(struct lmdb_reader *rd)
{
	mdb_cursor_close(rd->cur);
	mdb_txn_abort(rd->txn);
}

static double lmdb_scan(const struct qrun *q, struct tally *t)
{
	struct lmdb_reader rd;
	MDB_val k, v;
	reader_open(q->lmdb, &rd);
	double t0 = bench_seconds();
	reader_renew(&rd);
	for (int rc = mdb_cursor_get(rd.cur, &k, &v, MDB_FIRST); rc == 0;
	     rc = mdb_cursor_get(rd.cur, &k, &v, MDB_NEXT)) {
		t->rows++;
		t->sum += (uint64_t)first_value(&v);
	}
	mdb_txn_reset(rd.txn);
	double s = bench_seconds() - t0;
	reader_close(&rd);
	return s;
}

static double lmdb_ranges(const struct qrun *q, struct tally *t)
{
	struct lmdb_reader rd;
	unsigned char lo[BENCH_KEY_MAX], hi[BENCH_KEY_MAX];
	uint8_t lolen, hilen;
	MDB_val k, v;
	reader_open(q->lmdb, &rd);
	double t0 = bench_seconds();
	for (size_t i = 0; i < q->nranges; i++) {
		const struct range *g = &q->ranges[i];
		bench_encode_key(lo, &lolen, q->r.host[g->host], g->from);
		bench_encode_key(hi, &hilen, q->r.host[g->host], g->to);
		reader_renew(&rd);
		k.mv_size = lolen;
		k.mv_data = lo;
		for (int rc = mdb_cursor_get(rd.cur, &k, &v, MDB_SET_RANGE);
		     rc == 0 && key_cmp(&k, hi, hilen) < 0;
		     rc = mdb_cursor_get(rd.cur, &k, &v, MDB_NEXT)) {
			t->rows++;
			t->sum += (uint64_t)first_value(&v);
		}
		mdb_txn_reset(rd.txn);
	}
	double s = bench_seconds() - t0;
	reader_close(&rd);
	return s;
}

/* The newest key of host: the key before host's successor, host 0x00
 * 0x02 (every key of host starts with host 0x00 0x01).  Adds its ts to
 * *t when it is host's. */
static void lmdb_latest_one(struct lmdb_reader *rd, const char *host, struct tally *t)
{
	unsigned char succ[BENCH_KEY_MAX];
	size_t n = strlen(host);
	MDB_val k = {n + 2, succ}, v;
	memcpy(succ, host, n);
	succ[n] = 0x00;
	succ[n + 1] = 0x02;
	int rc = mdb_cursor_get(rd->cur, &k, &v, MDB_SET_RANGE);
	rc = mdb_cursor_get(rd->cur, &k, &v, rc == 0 ? MDB_PREV : MDB_LAST);
	if (rc == 0 && k.mv_size == n + 10 && memcmp(k.mv_data, host, n) == 0 &&
	    ((const unsigned char *)k.mv_data)[n] == 0x00) {
		t->rows++;
		t->sum += (uint64_t)key_ts(&k);
	}
}

static double lmdb_latest(const struct qrun *q, struct tally *t)
{
	struct lmdb_reader rd;
	reader_open(q->lmdb, &rd);
	double t0 = bench_seconds();
	for (int p = 0; p < q->passes; p++)
		for (size_t i = 0; i < q->r.hosts; i++) {
			reader_renew(&rd);
			lmdb_latest_one(&rd, q->r.host[q->order[i]], t);
			mdb_txn_reset(rd.txn);
		}
	double s = bench_seconds() - t0;
	reader_close(&rd);
	return s;
}
#else
static double lmdb_scan(const struct qrun *q, struct tally *t)
{
	(void)q;
	(void)t;
	return -1;
}

static double lmdb_ranges(const struct qrun *q, struct tally *t)
{
	(void)q;
	(void)t;
	return -1;
}

static double lmdb_latest(const struct qrun *q, struct tally *t)
{
	(void)q;
	(void)t;
	return -1;
}
#endif

/* ---- what the answers must be ---- */

/* Row i's ts. */
static int64_t row_ts(const bench_rows *r, size_t i)
{
	return r->vals[i * BENCH_COLUMNS + 1].v.i;
}

static void want_scan(const bench_rows *r, struct tally *w)
{
	w->rows = (int64_t)r->n;
	w->sum = 0;
	for (size_t i = 0; i < r->n; i++)
		w->sum += (uint64_t)r->value[i][0];
}

/* Rows of host h with ts in [from, to): row k * hosts + h has ts
 * start + k * step. */
static void want_range(const bench_rows *r, const struct range *g, struct tally *w)
{
	int64_t k0 = (g->from - r->start_ns + BENCH_STEP_NS - 1) / BENCH_STEP_NS;
	k0 = k0 < 0 ? 0 : k0;
	for (size_t i = (size_t)k0 * r->hosts + g->host; i < r->n && row_ts(r, i) < g->to;
	     i += r->hosts) {
		w->rows++;
		w->sum += (uint64_t)r->value[i][0];
	}
}

static void want_ranges(const struct qrun *q, struct tally *w)
{
	memset(w, 0, sizeof *w);
	for (size_t i = 0; i < q->nranges; i++)
		want_range(&q->r, &q->ranges[i], w);
}

static void want_latest(const struct qrun *q, struct tally *w)
{
	memset(w, 0, sizeof *w);
	for (size_t h = 0; h < q->r.hosts; h++)
		if (q->last_ts[h] != INT64_MIN) {
			w->rows += q->passes;
			w->sum += (uint64_t)q->passes * (uint64_t)q->last_ts[h];
		}
}

static int64_t want_agg_rows(const struct qrun *q)
{
	int64_t n = 0;
	for (size_t i = 0; i < q->r.n; i++)
		n += row_ts(&q->r, i) >= q->agg_from && row_ts(&q->r, i) < q->agg_to;
	return n;
}

/* ---- set-up ---- */

/* The range queries: random hosts, random starts on the rows' 10 s grid
 * such that the hour lies within the rows where it can. */
static void make_ranges(struct qrun *q)
{
	uint64_t x = QUERY_SEED;
	size_t steps = (q->r.n + q->r.hosts - 1) / q->r.hosts;
	int64_t span = (int64_t)steps * BENCH_STEP_NS;
	size_t starts = span > RANGE_NS ? (size_t)((span - RANGE_NS) / BENCH_STEP_NS) + 1 : 1;
	q->nranges = q->c->quick ? RANGE_QUERIES_QUICK : RANGE_QUERIES_FULL;
	q->ranges = bench_calloc(q->nranges, sizeof *q->ranges, "query");
	for (size_t i = 0; i < q->nranges; i++) {
		struct range *g = &q->ranges[i];
		g->host = (size_t)(bench_xorshift(&x) % q->r.hosts);
		g->from = q->r.start_ns + (int64_t)(bench_xorshift(&x) % starts) * BENCH_STEP_NS;
		g->to = g->from + RANGE_NS;
	}
}

/* Hosts in a shuffled order (Fisher-Yates), and each host's newest ts. */
static void make_latest(struct qrun *q)
{
	uint64_t x = QUERY_SEED ^ 1;
	size_t hosts = q->r.hosts;
	q->passes = q->c->quick ? LATEST_PASSES_QUICK : LATEST_PASSES_FULL;
	q->order = bench_calloc(hosts, sizeof *q->order, "query");
	q->last_ts = bench_calloc(hosts, sizeof *q->last_ts, "query");
	for (size_t h = 0; h < hosts; h++) {
		q->order[h] = h;
		q->last_ts[h] = INT64_MIN;
	}
	for (size_t h = hosts - 1; h > 0; h--) {
		size_t j = (size_t)(bench_xorshift(&x) % (h + 1)), tmp = q->order[h];
		q->order[h] = q->order[j];
		q->order[j] = tmp;
	}
	for (size_t i = q->r.n > hosts ? q->r.n - hosts : 0; i < q->r.n; i++)
		q->last_ts[i % hosts] = row_ts(&q->r, i);
}

static int64_t default_flush_size(void)
{
	ts_options o;
	ts_options_init(&o);
	return o.flush_size;
}

/* What the table holds now: its tablets, their bytes, the filling trees
 * and (in service) the merges the scheduler made. */
static void note_tablets(struct qrun *q)
{
	q->tablets = bench_table_stat(q->ts.t, "tablets");
	q->tablet_bytes = bench_dir_bytes(q->ts.dir, TS_TABLET_SUFFIX);
	q->filling = bench_table_stat(q->ts.t, "filling_tablets");
	if (q->c->in_service)
		q->merges = (int)bench_table_stat(q->ts.t, "maint_merges");
}

/* tsstore: load with flushes of the default size, flush the rest, merge. */
static void load_tsstore(struct qrun *q)
{
	bench_table_load_fresh(&q->r, default_flush_size(), &q->ts);
	if (ts_flush(q->ts.t, INT64_MAX) < 0)
		die("ts_flush");
	if (ts_merge(q->ts.t, &q->merges) < 0)
		die("ts_merge");
	/* reopen with the block cache asked for */
	ts_table_close(q->ts.t);
	ts_close(q->ts.db);
	q->ts.t = NULL;
	q->ts.db = NULL;
	q->ts.opts.block_cache_size = (int64_t)q->c->block_cache_mb << 20;
	bench_table_reopen(&q->ts);
	note_tablets(q);
	int64_t rows = bench_table_stat(q->ts.t, "tablet_rows");
	if (rows >= 0 && rows != (int64_t)q->r.n)
		fprintf(stderr, "tsstore-bench: query: warning: %lld rows in tablets, %zu inserted\n",
		        (long long)rows, q->r.n);
}

/* tsstore in service: the rows inserted as a user would, with the
 * library's defaults (merges in the background, the default block cache
 * unless --block-cache-mb, flushes by the default flush_size and
 * flush_age) and sync none; no ts_flush, no ts_merge: the queries find
 * the tablets and trees the scheduler left, at once or after
 * --in-service-wait seconds. */
static void load_in_service(struct qrun *q)
{
	bench_loaded *l = &q->ts;
	ts_options_init(&l->opts);
	l->opts.flags = TS_OPEN_CREATE;
	l->opts.sync = TS_SYNC_NONE;
	if (q->c->block_cache_mb >= 0)
		l->opts.block_cache_size = (int64_t)q->c->block_cache_mb << 20;
	l->dir = bench_tmpdir();
	l->t = bench_table_open(l->dir, &l->opts, &l->db);
	double t0 = bench_seconds();
	bench_table_load(l->t, &q->r);
	q->load_seconds = bench_seconds() - t0;
	if (q->c->in_service_wait > 0) { /* the scheduler goes on meanwhile */
		double s = q->c->in_service_wait;
		struct timespec z = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
		nanosleep(&z, NULL);
	}
	note_tablets(q);
}

static void load_lmdb(struct qrun *q)
{
	q->lmdb_dir = bench_tmpdir();
	if (!(q->lmdb = bench_peer_lmdb.open(q->lmdb_dir)))
		exit(1);
	bench_peer_load(&bench_peer_lmdb, q->lmdb, &q->r);
}

static void setup(struct qrun *q, const bench_config *c)
{
	memset(q, 0, sizeof *q);
	q->c = c;
	bench_rows_make(&q->r, c->query_rows, c->hosts, c->batch, bench_wall_ns());
	int peers = part_wanted(c, "scan") || part_wanted(c, "range") || part_wanted(c, "latest");
	peers = peers && !c->skip_peers && bench_peer_lmdb.name;
	if (c->in_service) { /* LMDB first: the queries follow tsstore's load */
		if (peers)
			load_lmdb(q);
		load_in_service(q);
	} else {
		load_tsstore(q);
		if (peers)
			load_lmdb(q);
	}
	make_ranges(q);
	make_latest(q);
	q->agg_from = q->r.start_ns / AGG_EVERY_NS * AGG_EVERY_NS;
	q->agg_to = q->agg_from + AGG_SPAN_NS;
}

static void teardown(struct qrun *q)
{
	bench_table_unload(&q->ts);
	if (q->lmdb) {
		bench_peer_lmdb.close(q->lmdb);
		bench_rmdir(q->lmdb_dir);
	}
	bench_rows_free(&q->r);
	free(q->ranges);
	free(q->order);
	free(q->last_ts);
}

/* ---- the parts ---- */

/* Report a rate for tsstore and LMDB (<= 0: not measured), the ratio as
 * a target. */
static void report_pair(const struct qrun *q, const char *part, const char *metric,
                        const char *unit, double ts, double lmdb, const char *extra,
                        const char *what, double goal)
{
	char p[512];
	params(p, sizeof p, q, extra);
	if (ts > 0)
		bench_result(part, "tsstore", metric, ts, unit, p);
	if (lmdb > 0)
		bench_result(part, "lmdb", metric, lmdb, unit, p);
	if (what && ts > 0 && lmdb > 0)
		bench_target(part, what, ts / lmdb, ">=", goal);
}

static void part_scan(struct qrun *q)
{
	struct tally want, got;
	double ts = 0, lmdb = 0;
	int ts_ok = 1;
	want_scan(&q->r, &want);
	/* untimed passes: warm the caches, check the answers */
	got = (struct tally){0, 0};
	ts_ok = tsstore_scan(q, "scan", &got) >= 0 && check(q, "scan", "tsstore", &got, &want) == 0;
	got = (struct tally){0, 0};
	if (q->lmdb && (lmdb_scan(q, &got) < 0 || check(q, "scan", "lmdb", &got, &want) < 0))
		exit(1); /* the bench itself is wrong */
	for (int i = 0; i < q->c->repeat; i++) {
		got = (struct tally){0, 0};
		if (ts_ok) {
			double s = tsstore_scan(q, "scan", &got);
			ts_ok = s > 0 && check(q, "scan", "tsstore", &got, &want) == 0;
			ts = min_positive(ts, ts_ok ? s : 0);
		}
		got = (struct tally){0, 0};
		if (q->lmdb)
			lmdb = min_positive(lmdb, lmdb_scan(q, &got));
	}
	double n = (double)want.rows;
	report_pair(q, "scan", "rows_per_sec", "rows/s", ts_ok && ts > 0 ? n / ts : 0,
	            lmdb > 0 ? n / lmdb : 0, "\"cache\":\"warm\"",
	            "tsstore scan rows/s / LMDB cursor scan rows/s", SCAN_TARGET);
}

/* Run tsstore's and LMDB's side of a part c->repeat times, taking turns,
 * each answer checked against want; *ts and *lmdb receive the best
 * times (0: none).  Returns whether tsstore answered right every time. */
static int best_of(struct qrun *q, const char *part, const struct tally *want,
                   double (*tsfn)(struct qrun *, struct tally *),
                   double (*lmdbfn)(const struct qrun *, struct tally *), double *ts,
                   double *lmdb)
{
	int ts_ok = 1;
	*ts = *lmdb = 0;
	for (int i = 0; i < q->c->repeat; i++) {
		struct tally got = {0, 0};
		if (ts_ok) {
			double s = tsfn(q, &got);
			ts_ok = s > 0 && check(q, part, "tsstore", &got, want) == 0;
			*ts = min_positive(*ts, ts_ok ? s : 0);
		}
		got = (struct tally){0, 0};
		if (q->lmdb) {
			double s = lmdbfn(q, &got);
			if (check(q, part, "lmdb", &got, want) < 0)
				exit(1); /* the bench itself is wrong */
			*lmdb = min_positive(*lmdb, s);
		}
	}
	return ts_ok;
}

static void part_range(struct qrun *q)
{
	struct tally want;
	double ts, lmdb;
	char extra[160];
	want_ranges(q, &want);
	int ts_ok = best_of(q, "range", &want, tsstore_ranges, lmdb_ranges, &ts, &lmdb);
	double n = (double)q->nranges;
	snprintf(extra, sizeof extra, "\"queries\":%zu,\"span_s\":%lld,\"rows_returned\":%lld",
	         q->nranges, (long long)(RANGE_NS / NS_PER_SEC), (long long)want.rows);
	report_pair(q, "range", "queries_per_sec", "queries/s", ts_ok && ts > 0 ? n / ts : 0,
	            lmdb > 0 ? n / lmdb : 0, extra,
	            "tsstore 1-host 1-hour queries/s / LMDB queries/s", RANGE_TARGET);
	report_pair(q, "range", "mean_latency_us", "us", ts_ok && ts > 0 ? ts / n * 1e6 : 0,
	            lmdb > 0 ? lmdb / n * 1e6 : 0, extra, NULL, 0);
}

static void part_latest(struct qrun *q)
{
	struct tally want;
	double ts, lmdb;
	char extra[96];
	want_latest(q, &want);
	int ts_ok = best_of(q, "latest", &want, tsstore_latest, lmdb_latest, &ts, &lmdb);
	double n = (double)q->passes * (double)q->r.hosts;
	snprintf(extra, sizeof extra, "\"lookups\":%.0f,\"passes\":%d", n, q->passes);
	report_pair(q, "latest", "lookups_per_sec", "lookups/s", ts_ok && ts > 0 ? n / ts : 0,
	            lmdb > 0 ? n / lmdb : 0, extra,
	            "tsstore latest-row lookups/s / LMDB seek-for-previous lookups/s", LATEST_TARGET);
	report_pair(q, "latest", "mean_latency_us", "us", ts_ok && ts > 0 ? ts / n * 1e6 : 0,
	            lmdb > 0 ? lmdb / n * 1e6 : 0, extra, NULL, 0);
}

/* What one aggregate pass did inside the library: rows it read and rows
 * it took from block statistics (the table's counters; -1 when the
 * library has no such counter). */
struct agg_counts {
	int64_t read, summarised;
};

static void agg_counts(const struct qrun *q, struct agg_counts *n)
{
	n->read = bench_table_stat(q->ts.t, "aggregate_rows_scanned");
	n->summarised = bench_table_stat(q->ts.t, "aggregate_rows_summarised");
}

static void report_aggregate(const struct qrun *q, int64_t rows, int64_t groups,
                             const struct agg_counts *per_pass, double agg_s, double scan_s)
{
	char p[640], extra[384];
	snprintf(extra, sizeof extra,
	         "\"from\":%lld,\"to\":%lld,\"every_s\":%lld,\"group\":1,"
	         "\"specs\":\"count,mean,max(v0)\",\"rows_covered\":%lld,\"groups\":%lld,"
	         "\"aggregate_rows_read\":%lld,\"aggregate_rows_summarised\":%lld",
	         (long long)q->agg_from, (long long)q->agg_to, (long long)(AGG_EVERY_NS / NS_PER_SEC),
	         (long long)rows, (long long)groups, (long long)per_pass->read,
	         (long long)per_pass->summarised);
	params(p, sizeof p, q, extra);
	if (agg_s > 0) {
		bench_result("aggregate", "tsstore", "rows_per_sec", (double)rows / agg_s, "rows/s", p);
		bench_result("aggregate", "tsstore", "seconds", agg_s, "s", p);
	}
	if (scan_s > 0) {
		bench_result("aggregate", "tsstore_scan", "rows_per_sec", (double)rows / scan_s,
		             "rows/s", p);
		bench_result("aggregate", "tsstore_scan", "seconds", scan_s, "s", p);
	}
	if (agg_s > 0 && scan_s > 0)
		bench_target("aggregate", "ts_query scan-and-accumulate time / ts_aggregate_open time",
		             scan_s / agg_s, ">=", AGG_TARGET);
}

static void part_aggregate(struct qrun *q)
{
	struct agg_tally agg = {0, 0, 0, 0}, scan = {0, 0, 0, 0};
	struct agg_counts before, after, per_pass = {-1, -1};
	double agg_s = 0, scan_s = 0;
	int agg_ok = 1, scan_ok = 1, passes = 0;
	int64_t rows = want_agg_rows(q);
	agg_counts(q, &before);
	for (int i = 0; i < q->c->repeat && (agg_ok || scan_ok); i++) {
		if (scan_ok) {
			memset(&scan, 0, sizeof scan);
			double s = tsstore_scan_aggregate(q, &scan);
			scan_ok = s >= 0 && agg_check(q, "the scan", &scan, rows, NULL) == 0;
			scan_s = min_positive(scan_s, scan_ok ? s : 0);
		}
		if (agg_ok) {
			memset(&agg, 0, sizeof agg);
			double s = tsstore_aggregate(q, &agg);
			passes++;
			agg_ok = s >= 0 &&
			         agg_check(q, "ts_aggregate_open", &agg, rows, scan_ok ? &scan : NULL) == 0;
			agg_s = min_positive(agg_s, agg_ok ? s : 0);
		}
	}
	agg_counts(q, &after);
	if (before.read >= 0 && before.summarised >= 0 && passes > 0) {
		per_pass.read = (after.read - before.read) / passes;
		per_pass.summarised = (after.summarised - before.summarised) / passes;
	}
	report_aggregate(q, rows, scan_ok ? scan.groups : agg.groups, &per_pass,
	                 agg_ok ? agg_s : 0, scan_ok ? scan_s : 0);
}

/* Bytes this process made the kernel read from storage (/proc/self/io),
 * or -1 when the kernel does not say. */
static int64_t storage_read_bytes(void)
{
	FILE *f = fopen("/proc/self/io", "r");
	char line[128];
	long long v = -1;
	while (f && fgets(line, sizeof line, f))
		if (sscanf(line, "read_bytes: %lld", &v) == 1)
			break;
	if (f)
		fclose(f);
	return v;
}

/* One cold scan: close the table, evict, reopen, scan.  Returns seconds,
 * or -1 (reported); *how says how the cache was evicted, *read_bytes
 * what the scan read from storage, *cpu the CPU time (user + system) the
 * process spent in it, every thread's: the reading thread's and the
 * read-ahead helpers'; ahead[0] the blocks it read ahead, ahead[1] of them
 * those a helper decompressed (the handle is new: its counters are the
 * scan's). */
static double cold_scan_once(struct qrun *q, const struct tally *want, const char **how,
                             int64_t *read_bytes, double *cpu, int64_t ahead[2])
{
	struct tally got = {0, 0};
	ts_table_close(q->ts.t);
	ts_close(q->ts.db);
	q->ts.t = NULL;
	q->ts.db = NULL;
	*how = bench_drop_caches(q->ts.dir, TS_TABLET_SUFFIX);
	bench_table_reopen(&q->ts);
	int64_t r0 = storage_read_bytes();
	double c0 = bench_cpu_seconds();
	double s = tsstore_scan(q, "cold_scan", &got);
	*cpu = bench_cpu_seconds() - c0;
	ahead[0] = bench_table_stat(q->ts.t, "blocks_read_ahead");
	ahead[1] = bench_table_stat(q->ts.t, "blocks_read_ahead_by_helpers");
	*read_bytes = r0 >= 0 ? storage_read_bytes() - r0 : -1;
	if (s < 0 || check(q, "cold_scan", "tsstore", &got, want) < 0)
		return -1;
	return s;
}

/* Decompress the tablets' stored LZO blocks on one thread (*one) and on
 * every core (*all); *blocks and *skipped receive how many blocks were
 * decompressed and how many were left out (stored raw).  Exits when
 * that fails: the cold scan has just read the same blocks. */
static void cold_lzo(struct qrun *q, bench_lzo *one, bench_lzo *all, size_t *blocks,
                     size_t *skipped)
{
	bench_blocks b;
	int rc = bench_blocks_stored(q->ts.t, &b);
	if (rc == 0)
		rc = bench_lzo_run(&b, 0, 1, q->c->repeat, one);
	if (rc == 0)
		rc = bench_lzo_run(&b, 0, bench_cpus(), q->c->repeat, all);
	*blocks = b.n;
	*skipped = b.skipped;
	bench_blocks_free(&b);
	if (rc < 0) {
		fprintf(stderr, "tsstore-bench: cold_scan: LZO1X-1 over the stored blocks: %s\n",
		        ts_errname(rc));
		exit(1);
	}
}

/* The cold scan's CPU ceiling: all-cores decompression of compressed
 * bytes against the device's sequential read. */
static void cold_ceiling(struct qrun *q, double device)
{
	bench_lzo one, all;
	size_t blocks, skipped;
	char p[640], extra[256], what[160];
	cold_lzo(q, &one, &all, &blocks, &skipped);
	double mbps = (double)all.in / BENCH_MB / all.seconds;
	snprintf(extra, sizeof extra,
	         "\"blocks\":%zu,\"stored_raw_blocks\":%zu,\"compressed_bytes\":%llu,"
	         "\"raw_bytes\":%llu,\"cpus\":%d,\"threads\":%d,\"device_read_mb_per_sec\":%.1f",
	         blocks, skipped, (unsigned long long)one.in, (unsigned long long)one.out,
	         bench_cpus(), all.threads, device);
	params(p, sizeof p, q, extra);
	bench_result("cold_scan", "lzo1x_1", "decompress_1_thread_mb_per_sec",
	             (double)one.in / BENCH_MB / one.seconds, "MB/s", p);
	bench_result("cold_scan", "lzo1x_1", "decompress_all_cores_mb_per_sec", mbps, "MB/s", p);
	bench_result("cold_scan", "ceiling", "decompress_over_device", mbps / device, "ratio", p);
	snprintf(what, sizeof what,
	         "cold scan CPU bound (LZO1X-1 decompression on %d cores) / device sequential read",
	         bench_cpus());
	bench_ceiling("cold_scan", what, mbps / device, ">=", COLD_TARGET);
}

static void part_cold_scan(struct qrun *q)
{
	struct tally want;
	const char *how = "";
	double best = 0, best_cpu = 0, device = bench_device_read_mbps(q->c);
	int64_t read_bytes = -1, ahead[2], best_ahead[2] = {-1, -1};
	char p[640], extra[320];
	want_scan(&q->r, &want);
	for (int i = 0; i < q->c->repeat; i++) {
		int64_t rb;
		double cpu;
		double s = cold_scan_once(q, &want, &how, &rb, &cpu, ahead);
		if (s < 0)
			return;
		if (best <= 0 || s < best) {
			best = s;
			best_cpu = cpu;
			best_ahead[0] = ahead[0];
			best_ahead[1] = ahead[1];
			read_bytes = rb;
		}
	}
	double mbps = (double)q->tablet_bytes / BENCH_MB / best;
	snprintf(extra, sizeof extra,
	         "\"cache\":\"cold\",\"cache_drop\":\"%s\",\"storage_read_bytes\":%lld,"
	         "\"device_read_mb_per_sec\":%.1f,\"blocks_read_ahead\":%lld,"
	         "\"blocks_read_ahead_by_helpers\":%lld",
	         how, (long long)read_bytes, device, (long long)best_ahead[0], (long long)best_ahead[1]);
	params(p, sizeof p, q, extra);
	bench_result("cold_scan", "tsstore", "tablet_mb_per_sec", mbps, "MB/s", p);
	bench_result("cold_scan", "tsstore", "rows_per_sec", (double)want.rows / best, "rows/s", p);
	bench_result("cold_scan", "tsstore", "over_device", mbps / device, "ratio", p);
	bench_result("cold_scan", "tsstore", "seconds", best, "s", p);
	bench_result("cold_scan", "tsstore", "cpu_seconds", best_cpu, "s", p);
	bench_target("cold_scan", "cold scan tablet MB/s / device sequential read MB/s",
	             mbps / device, ">=", COLD_TARGET);
	cold_ceiling(q, device);
}

int bench_workload_query(const bench_config *c)
{
	static const char *const parts[] = {"scan", "range", "latest", "aggregate", "cold_scan"};
	static void (*const run[])(struct qrun *) = {part_scan, part_range, part_latest,
	                                             part_aggregate, part_cold_scan};
	struct qrun q;
	int any = 0;
	for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++)
		any |= part_wanted(c, parts[i]);
	if (!any)
		return 0;
	if (part_wanted(c, "cold_scan"))
		bench_device_read_mbps(c); /* before the load: it evicts the cache */
	setup(&q, c);
	for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++)
		if (part_wanted(c, parts[i])) {
			if (c->in_service) /* the scheduler may have merged since */
				note_tablets(&q);
			run[i](&q);
		}
	int failed = q.failed;
	teardown(&q);
	return failed ? -1 : 0;
}
