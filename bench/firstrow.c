/*
 * firstrow.c -- the first_row workload (issue 8): how long a 1-host query
 * takes to return its first row, against the number of on-disk tablets
 * in the period it reads.  LittleTable (SIGMOD 2017, section 5) reports
 * that first-row latency grows with the number of tablets a query must
 * open; this measures tsstore's curve.  There is no peer and no target.
 *
 * The rows: one hour of the reference workload (c->hosts hosts every
 * 10 s; --quick: FR_HOSTS_QUICK hosts), lying at the start of the 4-hour
 * period that holds now.  The tables run on a clock frozen at that
 * period's start (ts_options.clock), so every row is in that one period
 * whenever the bench runs, and no period ends during it.
 *
 * For each N of fr_tablets (1, 2, ... 64) the same rows go into a fresh
 * table (TS_OPEN_NOMERGE, no flush by size or age) as N slices of time,
 * each slice inserted in ts order and then flushed (ts_flush): N on-disk
 * tablets of one period, each holding every host for 1/N of the hour, as
 * a period looks after N flushes with no merge yet.  Inserting slice by
 * slice in ts order keeps the load cheap: every row is newer than every
 * flushed tablet, so the uniqueness check never reads one.  The table's
 * "tablets" counter must then say N.
 *
 * The queries: FR_QUERIES_* of them, each a random host and a time range
 * that starts in the first slice and ends in the last one (random within
 * the thinnest slice, an N = 64 slice), so that whatever N, every tablet
 * overlaps the range and holds rows of the host: the query must open and
 * seek all N.  Each query is timed from ts_query_open through the first
 * ts_cursor_next (the first-row latency); ts_cursor_close is timed apart.
 * The first row must be the host's row at the range's start, else the
 * run fails.  One untimed pass warms the block cache (c->block_cache_mb,
 * room for every block), then c->repeat timed passes; the pass with the
 * least mean is reported (mean and p99 of first-row latency, mean close).
 * After the largest N, ts_merge merges that table's tablets (LittleTable's
 * rule merges equal tablets into one) and the queries run again, for
 * contrast.
 *
 * Results are bench_result_point lines with the point "tablets":N, so
 * --compare pairs nothing across tablet counts.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "tablet_format.h"

#define FR_HOUR_NS (INT64_C(3600) * 1000000000)
#define FR_SPAN_NS FR_HOUR_NS          /* the rows' time span */
#define FR_PERIOD_NS (4 * FR_HOUR_NS)  /* the periods of today (lib/period.h) */
#define FR_HOSTS_QUICK 100
#define FR_QUERIES_FULL 5000
#define FR_QUERIES_QUICK 500
#define FR_SEED UINT64_C(0x9FB21C651E98DF25)

static const int fr_tablets[] = {1, 2, 4, 8, 16, 32, 64};
#define FR_NCOUNTS (sizeof fr_tablets / sizeof fr_tablets[0])
#define FR_TABLETS_MAX 64 /* the last of fr_tablets: its slices are the thinnest */

/* One query: the host's index and [from, to). */
struct fr_query {
	size_t host;
	int64_t from, to;
};

/* What one timed pass measured, in ns. */
struct fr_pass {
	double mean, p99, close_mean;
};

/* The state of the workload. */
struct fr_run {
	const bench_config *c;
	bench_rows r;
	size_t steps;           /* ts values of the rows */
	int64_t now;            /* the tables' frozen clock */
	struct fr_query *q;
	size_t nq;
	int64_t *first_ns, *close_ns, *sorted; /* per query of a pass */
	int failed;
};

/* Report a wrong answer of call; returns -1. */
static int fr_wrong(struct fr_run *f, const char *call)
{
	printf("{\"workload\":\"first_row\",\"engine\":\"tsstore\",\"error\":\"mismatch\","
	       "\"call\":\"%s\"}\n", call);
	fflush(stdout);
	f->failed = 1;
	return -1;
}

/* Rows [from, to) of f->r into t in batches of r.batch. */
static int insert_rows(struct fr_run *f, ts_table *t, size_t from, size_t to)
{
	for (size_t i = from; i < to; i += f->r.batch) {
		size_t n = to - i < f->r.batch ? to - i : f->r.batch;
		int rc = ts_insert(t, &f->r.vals[i * BENCH_COLUMNS], n);
		if (rc < 0)
			return bench_tsstore_failed("first_row", "ts_insert", rc, &f->failed);
	}
	return 0;
}

/* A fresh table in l holding the rows as n time slices, each inserted
 * then flushed: n tablets.  Returns 0, or -1 (reported; l is then still
 * to be unloaded). */
static int load_sliced(struct fr_run *f, int n, bench_loaded *l)
{
	memset(l, 0, sizeof *l);
	ts_options_init(&l->opts);
	l->opts.flags = TS_OPEN_CREATE | TS_OPEN_NOMERGE;
	l->opts.sync = TS_SYNC_NONE;
	l->opts.flush_size = BENCH_NEVER_FLUSH_SIZE;
	l->opts.flush_age = BENCH_NEVER_FLUSH_AGE;
	l->opts.clock = bench_frozen_clock;
	l->opts.clock_arg = &f->now;
	l->opts.block_cache_size = (int64_t)f->c->block_cache_mb << 20;
	l->dir = bench_tmpdir();
	l->t = bench_table_open(l->dir, &l->opts, &l->db);
	for (int k = 0; k < n; k++) {
		size_t s0 = f->steps * (size_t)k / (size_t)n, s1 = f->steps * (size_t)(k + 1) / (size_t)n;
		int rc;
		if (insert_rows(f, l->t, s0 * f->r.hosts, s1 * f->r.hosts) < 0)
			return -1;
		if ((rc = ts_flush(l->t, INT64_MAX)) < 0)
			return bench_tsstore_failed("first_row", "ts_flush", rc, &f->failed);
	}
	int64_t tablets = bench_table_stat(l->t, "tablets");
	if (tablets != n) {
		fprintf(stderr, "tsstore-bench: first_row: %lld tablets after %d flushes\n",
		        (long long)tablets, n);
		return fr_wrong(f, "ts_flush");
	}
	return 0;
}

/* Random hosts; from in the first FR_TABLETS_MAX-th of the steps, to in
 * the last, both on the rows' 10 s grid. */
static void make_queries(struct fr_run *f)
{
	uint64_t x = FR_SEED;
	size_t edge = f->steps / FR_TABLETS_MAX;
	f->nq = f->c->quick ? FR_QUERIES_QUICK : FR_QUERIES_FULL;
	f->q = bench_calloc(f->nq, sizeof *f->q, "first_row");
	for (size_t i = 0; i < f->nq; i++) {
		struct fr_query *g = &f->q[i];
		g->host = (size_t)(bench_xorshift(&x) % f->r.hosts);
		g->from = f->r.start_ns + (int64_t)(bench_xorshift(&x) % edge) * BENCH_STEP_NS;
		g->to = f->r.start_ns +
		        (int64_t)(f->steps - bench_xorshift(&x) % edge) * BENCH_STEP_NS;
	}
}

/* Whether row (n values) is the first row query g must return: its
 * host's row at g->from. */
static int first_row_ok(const struct fr_run *f, const struct fr_query *g, const ts_value *row,
                        int n)
{
	const char *host = f->r.host[g->host];
	size_t len = strlen(host);
	return row && n == BENCH_COLUMNS && row[0].type == TS_STRING && row[0].v.s.len == len &&
	       memcmp(row[0].v.s.ptr, host, len) == 0 && row[1].type == TS_TIMESTAMP &&
	       row[1].v.i == g->from;
}

/* Query g on t: first-row and close times into f's arrays at i.
 * Returns 0, or -1 (reported). */
static int one_query(struct fr_run *f, ts_table *t, size_t i)
{
	const struct fr_query *g = &f->q[i];
	ts_value prefix = ts_string(f->r.host[g->host]);
	ts_query qq;
	ts_cursor *cur = NULL;
	const ts_value *row = NULL;
	int n = 0;
	memset(&qq, 0, sizeof qq);
	qq.prefix = &prefix;
	qq.nprefix = 1;
	qq.from = g->from;
	qq.to = g->to;
	qq.has_from = qq.has_to = 1;
	const char *call = "ts_query_open";
	int64_t t0 = bench_now_ns();
	int rc = ts_query_open(t, &qq, &cur);
	if (rc == 0) {
		call = "ts_cursor_next";
		rc = ts_cursor_next(cur, &row, &n);
	}
	int64_t t1 = bench_now_ns();
	int ok = rc == 0 && first_row_ok(f, g, row, n);
	ts_cursor_close(cur);
	f->first_ns[i] = t1 - t0;
	f->close_ns[i] = bench_now_ns() - t1;
	if (rc < 0)
		return bench_tsstore_failed("first_row", call, rc, &f->failed);
	if (!ok) {
		fprintf(stderr, "tsstore-bench: first_row: query %zu (%s from %lld) did not return "
		                "that row first\n", i, f->r.host[g->host], (long long)g->from);
		return fr_wrong(f, "ts_cursor_next");
	}
	return 0;
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return x < y ? -1 : x > y;
}

/* Every query once on t; *p receives the pass's figures.  Returns 0, or
 * -1 (reported). */
static int run_pass(struct fr_run *f, ts_table *t, struct fr_pass *p)
{
	double first = 0, close = 0;
	for (size_t i = 0; i < f->nq; i++) {
		if (one_query(f, t, i) < 0)
			return -1;
		first += (double)f->first_ns[i];
		close += (double)f->close_ns[i];
	}
	memcpy(f->sorted, f->first_ns, f->nq * sizeof *f->sorted);
	qsort(f->sorted, f->nq, sizeof *f->sorted, cmp_i64);
	p->mean = first / (double)f->nq;
	p->p99 = (double)f->sorted[f->nq * 99 / 100];
	p->close_mean = close / (double)f->nq;
	return 0;
}

/* A warm-up pass, then c->repeat timed ones; *best receives the one of
 * least mean.  Returns 0, or -1 (reported). */
static int measure(struct fr_run *f, ts_table *t, struct fr_pass *best)
{
	struct fr_pass p;
	if (run_pass(f, t, &p) < 0)
		return -1;
	for (int k = 0; k < f->c->repeat; k++) {
		if (run_pass(f, t, &p) < 0)
			return -1;
		if (k == 0 || p.mean < best->mean)
			*best = p;
	}
	return 0;
}

static void report(const struct fr_run *f, const bench_loaded *l, int64_t tablets, int merged_from,
                   const struct fr_pass *p)
{
	char point[64], params[512];
	if (merged_from)
		snprintf(point, sizeof point, "\"tablets\":%lld,\"merged_from\":%d", (long long)tablets,
		         merged_from);
	else
		snprintf(point, sizeof point, "\"tablets\":%lld", (long long)tablets);
	snprintf(params, sizeof params,
	         "%s,\"rows\":%zu,\"hosts\":%zu,\"span_s\":%lld,\"rows_per_tablet\":%lld,"
	         "\"tablet_bytes\":%lld,\"queries\":%zu,\"repeat\":%d,\"block_cache_mb\":%ld", point,
	         f->r.n, f->r.hosts, (long long)(FR_SPAN_NS / 1000000000),
	         (long long)f->r.n / (tablets > 0 ? tablets : 1),
	         (long long)bench_dir_bytes(l->dir, TS_TABLET_SUFFIX), f->nq, f->c->repeat,
	         f->c->block_cache_mb);
	bench_result_point("first_row", point, "tsstore", "first_row_mean_us", p->mean / 1e3, "us",
	                   params);
	bench_result_point("first_row", point, "tsstore", "first_row_p99_us", p->p99 / 1e3, "us",
	                   params);
	bench_result_point("first_row", point, "tsstore", "close_mean_us", p->close_mean / 1e3, "us",
	                   params);
}

/* The largest N's table merged: the queries again. */
static void run_merged(struct fr_run *f, bench_loaded *l, int from)
{
	struct fr_pass p;
	int merges = 0, rc = ts_merge(l->t, &merges);
	if (rc < 0) {
		bench_tsstore_failed("first_row", "ts_merge", rc, &f->failed);
		return;
	}
	if (measure(f, l->t, &p) == 0)
		report(f, l, bench_table_stat(l->t, "tablets"), from, &p);
}

static void setup(struct fr_run *f, const bench_config *c)
{
	size_t hosts = c->quick ? FR_HOSTS_QUICK : c->hosts;
	memset(f, 0, sizeof *f);
	f->c = c;
	f->steps = (size_t)(FR_SPAN_NS / BENCH_STEP_NS);
	/* the start of the 4-hour period holding now: the rows fill its
	 * first hour (at most 4 hours ahead of the frozen clock) */
	f->now = bench_wall_ns() / FR_PERIOD_NS * FR_PERIOD_NS;
	bench_rows_make(&f->r, hosts * f->steps, hosts, c->batch,
	                f->now + (int64_t)f->steps * BENCH_STEP_NS);
	make_queries(f);
	f->first_ns = bench_calloc(f->nq, sizeof *f->first_ns, "first_row");
	f->close_ns = bench_calloc(f->nq, sizeof *f->close_ns, "first_row");
	f->sorted = bench_calloc(f->nq, sizeof *f->sorted, "first_row");
}

int bench_workload_first_row(const bench_config *c)
{
	struct fr_run f;
	setup(&f, c);
	for (size_t k = 0; k < FR_NCOUNTS; k++) {
		bench_loaded l;
		struct fr_pass p;
		if (load_sliced(&f, fr_tablets[k], &l) == 0 && measure(&f, l.t, &p) == 0) {
			report(&f, &l, fr_tablets[k], 0, &p);
			if (k + 1 == FR_NCOUNTS)
				run_merged(&f, &l, fr_tablets[k]);
		}
		bench_table_unload(&l);
	}
	int failed = f.failed;
	bench_rows_free(&f.r);
	free(f.q);
	free(f.first_ns);
	free(f.close_ns);
	free(f.sorted);
	return failed ? -1 : 0;
}
