/*
 * corrections.c -- the corrections workload of tsstore-bench (issue 28's
 * Done-when figures): what deletes and replacing writes cost the reads,
 * how long a delete takes, and how fast `changes` answers.
 *
 * The rows: c->hosts hosts every 10 s for CR_SPAN_FULL_NS (a day; --quick
 * CR_SPAN_QUICK_NS), the reference rows of bench_stream.  The same rows
 * go into three tables, each in a database of its own (so that each has
 * its own block cache of c->block_cache_mb, as the query workloads' table
 * has): TS_OPEN_NOMERGE, sync none, loaded in batches of c->batch with a
 * ts_flush(INT64_MAX) every CR_FLUSH_BATCHES batches (and none by size or
 * age, so that the three tables get the same tablets), then
 * ts_flush(INT64_MAX) and ts_merge until nothing qualifies:
 *   base      append-only, never corrected: today's path, the baseline of
 *             every comparison;
 *   deletes   measured first untouched ("deletes_0pct": a table with 0 %
 *             deletes, on identical data), then after a delete that
 *             covers no row (a host that does not exist: a tombstone in
 *             force that hides nothing, "tombstone_empty", no target), then
 *             after 1 % of its rows were deleted ("deleted_1pct"):
 *             CR_SLOTS slots of the span per host, and hosts x CR_SLOTS /
 *             100 (host, slot) pieces deleted by one ts_delete each (prefix
 *             host, [slot start, slot end)), spread over hosts and slots,
 *             then ts_flush; the tombstones are in force, nothing merged;
 *   replaces  after 1 % of its rows (every row whose index hashes to 0
 *             mod 100) were written again with v0 + 1 through
 *             ts_insert_policy(TS_ON_DUPLICATE_REPLACE), then ts_flush: the
 *             newer rows in tablets beside the merged ones, not merged
 *             ("replaced_1pct").
 * Each comparison measures, read by read, the base table and the other
 * one in turns (the order swapped every pass), an untimed pass first and
 * then c->repeat timed passes (at least CR_REPEAT_FULL without --quick:
 * the targets are a few percent, the shared machine's noise more), and
 * reports the best pass of each:
 *   scan     every row, ascending (ts_query with no bounds); rows/s;
 *   range    CR_RANGES_* 1-host queries of span / CR_SLOTS (an hour of a
 *            day), random hosts and starts on the 10 s grid; queries/s;
 *   latest   ts_latest_open of every host in a shuffled order, CR_LATEST_*
 *            times; lookups/s.
 * Every pass is checked: the scan's rows and the sum of v0 (with the
 * deleted rows left out and the replaced ones' + 1), the ranges' rows,
 * each host's newest ts; a wrong answer is an error, not a result.
 * Results carry the point "case":NAME, so --compare pairs the baseline
 * (engine tsstore) only with the table measured beside it; the targets:
 * 0 % deletes >= 0.98 of the baseline, 1 % deleted or replaced >= 0.90.
 *
 * Then, on the base table (after its comparisons):
 *   changes  ts_changes_open(since 0, depth 1, resolution 0) -- which
 *            windows of which host the whole day's load touched -- and the
 *            cursor drained, CR_CHANGES times; median and max ms; at least
 *            one row per host (a host missed is an error); target: the
 *            median under 1 ms;
 *   delete   CR_DELETES_* ts_delete calls, each a distinct host's whole
 *            span (one host's day out of the hosts), timed alone; median
 *            and max ms, sync none as every table here; its deleted count
 *            must be the host's rows when it is known, and
 *            ts_latest_open of the host must then find nothing; target:
 *            the median under 10 ms.
 *
 * Until issue 28 is built, ts_delete, ts_insert_policy and
 * ts_changes_open answer TS_ENOTSUP: each figure that needs one prints
 *   {"workload":"corrections","engine":"tsstore","figure":F,"status":"not built","call":C}
 * instead of its results, no failure; the figures that need nothing new
 * (the baseline, 0 % deletes) are measured.  Any other failure is an
 * "error" line and tsstore-bench exits with 1.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

#define NS_PER_SEC INT64_C(1000000000)
#define CR_SPAN_FULL_NS (86400 * NS_PER_SEC) /* a day */
#define CR_SPAN_QUICK_NS (1800 * NS_PER_SEC) /* half an hour */
#define CR_SLOTS 24                          /* an hour of a day */
#define CR_RANGES_FULL 10000
#define CR_RANGES_QUICK 1000
#define CR_LATEST_FULL 100
#define CR_REPEAT_FULL 5 /* timed passes at least, without --quick */
#define CR_LATEST_QUICK 2
#define CR_DELETES_FULL 15
#define CR_DELETES_QUICK 5
#define CR_CHANGES 25
#define CR_FLUSH_BATCHES 400 /* a load flushes every 400 batches (204 800 rows) */
#define CR_SEED UINT64_C(0x2C0EEC7105EED5A1)
#define CR_HOST_STRIDE 37 /* pieces deleted: host k * 37 mod hosts, slot k mod 24 */
#define VALUE_COLUMN 2    /* v0 */
#define MS_PER_NS 1e-6
/* The policy replace (issue 28 adds TS_ON_DUPLICATE_REPLACE = 2). */
#ifdef TS_ON_DUPLICATE_REPLACE
#define CR_REPLACE TS_ON_DUPLICATE_REPLACE
#else
#define CR_REPLACE 2
#endif

/* Done-when targets of issue 28. */
#define ZERO_TARGET 0.98      /* 0 % deletes: reads/s over today's, at least */
#define ONE_PCT_TARGET 0.90   /* 1 % deleted or replaced: over today's, at least */
#define DELETE_TARGET_MS 10.0 /* one host's day deleted, median */
#define CHANGES_TARGET_MS 1.0 /* changes over the day of every host, median */

/* What a pass returned: rows and a wrapping sum. */
struct tally {
	int64_t rows;
	uint64_t sum;
};

/* One range query: host index, [from, to). */
struct range {
	size_t host;
	int64_t from, to;
};

/* One table of the workload, in a database of its own. */
struct ctable {
	const char *name;
	char *dir;
	ts_db *db;
	ts_table *t;
};

/* The best pass of each read, seconds. */
struct reads {
	double scan, range, latest;
};

/* The state of the workload. */
struct crun {
	const bench_config *c;
	size_t hosts, steps, n;   /* n = hosts * steps rows */
	int64_t start, span, slot; /* ts of the first row; span; span / CR_SLOTS */
	char (*host)[BENCH_HOST_MAX];
	struct ctable base, deletes, replaces;
	unsigned char *deleted;   /* hosts x CR_SLOTS: piece deleted from `deletes` */
	struct range *ranges;
	size_t nranges;
	size_t *order;            /* latest: hosts in a shuffled order */
	int passes;               /* latest: lookups of every host */
	int repeat;               /* timed passes of each read and table */
	int failed;
};

/* ---- the rows ---- */

static void stream_start(const struct crun *r, bench_stream *s)
{
	bench_stream_init(s, r->n, r->hosts, r->start + r->span);
}

/* Whether row i of the stream is one of the 1 % replaced. */
static int replaced(size_t i)
{
	uint64_t h = (uint64_t)i * UINT64_C(0x9E3779B97F4A7C15);
	return (h >> 32) % 100 == 0;
}

static size_t slot_of(const struct crun *r, int64_t ts)
{
	return (size_t)((ts - r->start) / r->slot);
}

/* Whether (host h, ts) lies in a piece deleted from `deletes`. */
static int is_deleted(const struct crun *r, size_t h, int64_t ts)
{
	return r->deleted[h * CR_SLOTS + slot_of(r, ts)];
}

/* ---- the tables ---- */

static void table_open(struct crun *r, struct ctable *t, const char *name)
{
	ts_options o;
	ts_options_init(&o);
	o.flags = TS_OPEN_CREATE | TS_OPEN_NOMERGE;
	o.sync = TS_SYNC_NONE;
	o.block_cache_size = (int64_t)r->c->block_cache_mb << 20;
	o.flush_size = BENCH_NEVER_FLUSH_SIZE; /* table_load flushes */
	o.flush_age = BENCH_NEVER_FLUSH_AGE;
	t->name = name;
	t->dir = bench_tmpdir();
	t->t = bench_table_open(t->dir, &o, &t->db);
}

static void table_close(struct ctable *t)
{
	if (!t->dir)
		return;
	ts_table_close(t->t);
	ts_close(t->db);
	bench_rmdir(t->dir);
	memset(t, 0, sizeof *t);
}

/* Report a failed call; returns -1. */
static int failed(struct crun *r, const char *call, int rc)
{
	return bench_tsstore_failed("corrections", call, rc, &r->failed);
}

/* A figure whose call is not built yet: said, not failed.  Returns -1. */
static int not_built(const char *figure, const char *call)
{
	printf("{\"workload\":\"corrections\",\"engine\":\"tsstore\",\"figure\":\"%s\","
	       "\"status\":\"not built\",\"call\":\"%s\"}\n", figure, call);
	fflush(stdout);
	fprintf(stderr, "tsstore-bench: corrections: %s: %s is not built yet: %s\n", figure, call,
	        ts_errmsg(NULL));
	return -1;
}

/* Every row into t, flushed and merged.  Returns 0 or -1 (reported). */
static int table_load(struct crun *r, struct ctable *t)
{
	bench_stream s;
	size_t b = r->c->batch;
	ts_value *v = bench_calloc(b * BENCH_COLUMNS, sizeof *v, "corrections");
	int rc = 0, merges = 0;
	stream_start(r, &s);
	for (size_t i = 0; i < r->n && rc == 0; i += b) {
		size_t k = r->n - i < b ? r->n - i : b;
		for (size_t j = 0; j < k; j++)
			bench_stream_next(&s, &v[j * BENCH_COLUMNS], NULL);
		rc = ts_insert(t->t, v, k);
		if (rc == 0 && (i / b + 1) % CR_FLUSH_BATCHES == 0)
			rc = ts_flush(t->t, INT64_MAX);
	}
	bench_stream_free(&s);
	free(v);
	if (rc < 0)
		return failed(r, "ts_insert", rc);
	if ((rc = ts_flush(t->t, INT64_MAX)) < 0)
		return failed(r, "ts_flush", rc);
	if ((rc = ts_merge(t->t, &merges)) < 0)
		return failed(r, "ts_merge", rc);
	return 0;
}

/* ---- reads ---- */

static int drain(struct crun *r, ts_cursor *cur, int col, struct tally *t)
{
	const ts_value *row;
	int n, rc;
	while ((rc = ts_cursor_next(cur, &row, &n)) == 0 && row) {
		t->rows++;
		t->sum += (uint64_t)row[col].v.i;
	}
	ts_cursor_close(cur);
	return rc < 0 ? failed(r, "ts_cursor_next", rc) : 0;
}

/* Run q and drain its value column into y; 0, or -1 (said) on failure. */
static int query_drain(struct crun *r, ts_table *t, const ts_query *q, struct tally *y)
{
	ts_cursor *cur = NULL;
	int rc = ts_query_open(t, q, &cur);
	if (rc < 0)
		return failed(r, "ts_query_open", rc);
	return drain(r, cur, VALUE_COLUMN, y);
}

static double read_scan(struct crun *r, ts_table *t, struct tally *y)
{
	ts_query q;
	memset(&q, 0, sizeof q);
	double t0 = bench_seconds();
	if (query_drain(r, t, &q, y) < 0)
		return -1;
	return bench_seconds() - t0;
}

static double read_ranges(struct crun *r, ts_table *t, struct tally *y)
{
	double t0 = bench_seconds();
	for (size_t i = 0; i < r->nranges; i++) {
		const struct range *g = &r->ranges[i];
		ts_value prefix = ts_string(r->host[g->host]);
		ts_query q;
		memset(&q, 0, sizeof q);
		q.prefix = &prefix;
		q.nprefix = 1;
		q.from = g->from;
		q.to = g->to;
		q.has_from = q.has_to = 1;
		if (query_drain(r, t, &q, y) < 0)
			return -1;
	}
	return bench_seconds() - t0;
}

static double read_latest(struct crun *r, ts_table *t, struct tally *y)
{
	double t0 = bench_seconds();
	for (int p = 0; p < r->passes; p++)
		for (size_t i = 0; i < r->hosts; i++) {
			ts_value prefix = ts_string(r->host[r->order[i]]);
			ts_cursor *cur = NULL;
			int rc = ts_latest_open(t, &prefix, 1, &cur);
			if (rc < 0)
				return failed(r, "ts_latest_open", rc);
			if (drain(r, cur, 1, y) < 0)
				return -1;
		}
	return bench_seconds() - t0;
}

/* ---- what the answers must be ---- */

/* What a table in state (deletes applied, replacements applied) must
 * answer to the scan, the ranges and latest. */
struct wants {
	struct tally scan, range, latest;
};

static void want(const struct crun *r, int with_deletes, int with_replaces, struct wants *w)
{
	bench_stream s;
	ts_value v[BENCH_COLUMNS];
	int64_t *newest = bench_calloc(r->hosts, sizeof *newest, "corrections");
	memset(w, 0, sizeof *w);
	for (size_t h = 0; h < r->hosts; h++)
		newest[h] = INT64_MIN;
	stream_start(r, &s);
	for (size_t i = 0; i < r->n; i++) {
		bench_stream_next(&s, v, NULL);
		size_t h = i % r->hosts;
		if (with_deletes && is_deleted(r, h, v[1].v.i))
			continue;
		w->scan.rows++;
		w->scan.sum += (uint64_t)v[VALUE_COLUMN].v.i + (uint64_t)(with_replaces && replaced(i));
		newest[h] = v[1].v.i;
	}
	bench_stream_free(&s);
	for (size_t i = 0; i < r->nranges; i++) {
		const struct range *g = &r->ranges[i];
		for (int64_t ts = g->from; ts < g->to; ts += BENCH_STEP_NS)
			w->range.rows += !(with_deletes && is_deleted(r, g->host, ts));
	}
	for (size_t h = 0; h < r->hosts; h++)
		if (newest[h] != INT64_MIN) {
			w->latest.rows += r->passes;
			w->latest.sum += (uint64_t)r->passes * (uint64_t)newest[h];
		}
	free(newest);
}

static int check(struct crun *r, const char *table, const char *read, const struct tally *got,
                 const struct tally *w, int with_sum)
{
	if (got->rows == w->rows && (!with_sum || got->sum == w->sum))
		return 0;
	fprintf(stderr, "tsstore-bench: corrections: %s of %s returned %lld rows (sum %llu), "
	                "expected %lld (sum %llu)\n", read, table, (long long)got->rows,
	        (unsigned long long)got->sum, (long long)w->rows, (unsigned long long)w->sum);
	printf("{\"workload\":\"corrections\",\"engine\":\"tsstore\",\"error\":\"mismatch\","
	       "\"call\":\"%s\"}\n", read);
	fflush(stdout);
	r->failed = 1;
	return -1;
}

static double best(double b, double s)
{
	return s > 0 && (b <= 0 || s < b) ? s : b;
}

enum { READ_SCAN, READ_RANGE, READ_LATEST, NREADS };
static const char *const read_names[NREADS] = {"scan", "range", "latest"};

/* One read of kind k on t, checked against w; returns its seconds, or -1
 * (reported). */
static double read_one(struct crun *r, const struct ctable *t, int k, const struct wants *w)
{
	struct tally y = {0, 0};
	const struct tally *want_k = k == READ_SCAN ? &w->scan : k == READ_RANGE ? &w->range
	                                                                          : &w->latest;
	double s = k == READ_SCAN    ? read_scan(r, t->t, &y)
	           : k == READ_RANGE ? read_ranges(r, t->t, &y)
	                             : read_latest(r, t->t, &y);
	if (s < 0 || check(r, t->name, read_names[k], &y, want_k, k != READ_RANGE) < 0)
		return -1;
	return s;
}

static void params(char *buf, size_t size, const struct crun *r, const char *extra)
{
	snprintf(buf, size,
	         "\"rows\":%zu,\"hosts\":%zu,\"span_s\":%lld,\"batch\":%zu,\"passes\":%d,"
	         "\"block_cache_mb\":%ld,\"sync\":\"none\"%s%s",
	         r->n, r->hosts, (long long)(r->span / NS_PER_SEC), r->c->batch, r->repeat,
	         r->c->block_cache_mb, extra ? "," : "", extra ? extra : "");
}

/* The base table and x in turns, c->repeat times; the best of each
 * reported under the point "case":name, and the targets (goal > 0) of x
 * over the base.  Returns 0 or -1 (reported). */
static int compare(struct crun *r, struct ctable *x, const char *name, const struct wants *wx,
                   const char *what, double goal)
{
	struct wants wb;
	struct reads b = {0, 0, 0}, o = {0, 0, 0};
	char point[64], p[512], extra[256];
	want(r, 0, 0, &wb);
	/* per read, the two tables in turns, the first pass untimed (it warms
	 * the caches), the order swapped every pass */
	for (int k = 0; k < NREADS; k++) {
		double bt = 0, ot = 0;
		for (int i = 0; i <= r->repeat; i++) {
			double s1, s2;
			if (i % 2) {
				s2 = read_one(r, x, k, wx);
				s1 = s2 < 0 ? -1 : read_one(r, &r->base, k, &wb);
			} else {
				s1 = read_one(r, &r->base, k, &wb);
				s2 = s1 < 0 ? -1 : read_one(r, x, k, wx);
			}
			if (s1 < 0 || s2 < 0)
				return -1;
			if (i > 0) {
				bt = best(bt, s1);
				ot = best(ot, s2);
			}
		}
		*(k == READ_SCAN ? &b.scan : k == READ_RANGE ? &b.range : &b.latest) = bt;
		*(k == READ_SCAN ? &o.scan : k == READ_RANGE ? &o.range : &o.latest) = ot;
	}
	snprintf(point, sizeof point, "\"case\":\"%s\"", name);
	snprintf(extra, sizeof extra, "%s,\"ranges\":%zu,\"range_s\":%lld,\"latest_passes\":%d,"
	         "\"deleted_rows\":%lld,\"tablets\":%lld,\"tablets_%s\":%lld", point, r->nranges,
	         (long long)(r->slot / NS_PER_SEC), r->passes,
	         (long long)((int64_t)r->n - wx->scan.rows),
	         (long long)bench_table_stat(r->base.t, "tablets"), name,
	         (long long)bench_table_stat(x->t, "tablets"));
	params(p, sizeof p, r, extra);
	const char *engines[2] = {"tsstore", name};
	const struct reads *rs[2] = {&b, &o};
	const int64_t rows[2] = {wb.scan.rows, wx->scan.rows};
	for (int k = 0; k < 2; k++) {
		bench_result_point("corrections", point, engines[k], "scan_rows_per_sec",
		                   (double)rows[k] / rs[k]->scan, "rows/s", p);
		bench_result_point("corrections", point, engines[k], "range_queries_per_sec",
		                   (double)r->nranges / rs[k]->range, "queries/s", p);
		bench_result_point("corrections", point, engines[k], "latest_lookups_per_sec",
		                   (double)r->passes * (double)r->hosts / rs[k]->latest, "lookups/s", p);
	}
	if (goal > 0) {
		char t[160];
		/* per second of the same work: the time of the base over x's */
		snprintf(t, sizeof t, "scan time today / with %s", what);
		bench_target("corrections", t, b.scan / o.scan, ">=", goal);
		snprintf(t, sizeof t, "range time today / with %s", what);
		bench_target("corrections", t, b.range / o.range, ">=", goal);
		snprintf(t, sizeof t, "latest time today / with %s", what);
		bench_target("corrections", t, b.latest / o.latest, ">=", goal);
	}
	return 0;
}

/* ---- corrections ---- */

/* A delete of prefix host (NULL: a host that does not exist) x [from,
 * to); *ns its time.  Returns 0, TS_ENOTSUP, or -1 (reported). */
static int delete_host(struct crun *r, ts_table *t, const char *host, int64_t from, int64_t to,
                       uint64_t *deleted, int64_t *ns)
{
	ts_value prefix = ts_string(host ? host : "host_none");
	ts_query q;
	memset(&q, 0, sizeof q);
	q.prefix = &prefix;
	q.nprefix = 1;
	q.from = from;
	q.to = to;
	q.has_from = q.has_to = 1;
	int64_t t0 = bench_now_ns();
	int rc = ts_delete(t, &q, deleted, NULL);
	*ns = bench_now_ns() - t0;
	if (rc == TS_ENOTSUP)
		return rc;
	return rc < 0 ? failed(r, "ts_delete", rc) : 0;
}

/* 1 % of the rows of `deletes`: hosts x CR_SLOTS / 100 pieces.  Returns
 * 0, TS_ENOTSUP (nothing deleted), or -1. */
static int delete_one_pct(struct crun *r)
{
	size_t pieces = r->hosts * CR_SLOTS / 100;
	for (size_t k = 0; k < pieces; k++) {
		size_t h = k * CR_HOST_STRIDE % r->hosts, s = k % CR_SLOTS;
		uint64_t deleted;
		int64_t ns;
		int64_t from = r->start + (int64_t)s * r->slot;
		int rc = delete_host(r, r->deletes.t, r->host[h], from, from + r->slot, &deleted, &ns);
		if (rc < 0)
			return rc;
		r->deleted[h * CR_SLOTS + s] = 1;
	}
	int rc = ts_flush(r->deletes.t, INT64_MAX);
	return rc < 0 ? failed(r, "ts_flush", rc) : 0;
}

/* 1 % of the rows of `replaces` written again with v0 + 1.  Returns 0,
 * TS_ENOTSUP, or -1. */
static int replace_one_pct(struct crun *r)
{
	bench_stream s;
	size_t b = r->c->batch, k = 0;
	ts_value *v = bench_calloc((b + 1) * BENCH_COLUMNS, sizeof *v, "corrections");
	int rc = 0;
	stream_start(r, &s);
	for (size_t i = 0; i < r->n && rc == 0; i++) {
		bench_stream_next(&s, &v[k * BENCH_COLUMNS], NULL);
		if (!replaced(i))
			continue;
		v[k * BENCH_COLUMNS + VALUE_COLUMN].v.i++;
		if (++k == b) {
			rc = ts_insert_policy(r->replaces.t, 0, CR_REPLACE, v, k, NULL, NULL);
			k = 0;
		}
	}
	if (rc == 0 && k > 0)
		rc = ts_insert_policy(r->replaces.t, 0, CR_REPLACE, v, k, NULL, NULL);
	bench_stream_free(&s);
	free(v);
	if (rc == TS_ENOTSUP)
		return rc;
	if (rc < 0)
		return failed(r, "ts_insert_policy", rc);
	rc = ts_flush(r->replaces.t, INT64_MAX);
	return rc < 0 ? failed(r, "ts_flush", rc) : 0;
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return x < y ? -1 : x > y;
}

/* ts_changes_open over the base table's whole history, per host, timed
 * with its cursor drained, CR_CHANGES times. */
static void measure_changes(struct crun *r)
{
	int64_t ns[CR_CHANGES];
	int64_t rows = 0;
	ts_changes_spec spec = {0, 0, 0, 1};
	for (int i = 0; i < CR_CHANGES; i++) {
		ts_cursor *cur = NULL;
		const ts_value *row;
		int n, rc;
		rows = 0;
		int64_t t0 = bench_now_ns();
		rc = ts_changes_open(r->base.t, &spec, &cur);
		if (rc == TS_ENOTSUP) {
			not_built("changes_day", "ts_changes_open");
			return;
		}
		if (rc < 0) {
			failed(r, "ts_changes_open", rc);
			return;
		}
		while ((rc = ts_cursor_next(cur, &row, &n)) == 0 && row)
			rows++;
		ns[i] = bench_now_ns() - t0;
		ts_cursor_close(cur);
		if (rc < 0) {
			failed(r, "ts_cursor_next (changes)", rc);
			return;
		}
	}
	if (rows < (int64_t)r->hosts) {
		fprintf(stderr, "tsstore-bench: corrections: changes since 0 gave %lld windows for "
		                "%zu hosts: a host that changed is missing\n", (long long)rows, r->hosts);
		printf("{\"workload\":\"corrections\",\"engine\":\"tsstore\",\"error\":\"mismatch\","
		       "\"call\":\"ts_changes_open\"}\n");
		r->failed = 1;
		return;
	}
	qsort(ns, CR_CHANGES, sizeof *ns, cmp_i64);
	char p[512], extra[128];
	snprintf(extra, sizeof extra, "\"calls\":%d,\"windows\":%lld,\"depth\":1,\"resolution\":0",
	         CR_CHANGES, (long long)rows);
	params(p, sizeof p, r, extra);
	double median = (double)ns[CR_CHANGES / 2] * MS_PER_NS;
	bench_result("corrections", "tsstore", "changes_day_median_ms", median, "ms", p);
	bench_result("corrections", "tsstore", "changes_day_max_ms",
	             (double)ns[CR_CHANGES - 1] * MS_PER_NS, "ms", p);
	bench_target("corrections", "changes over a day of every host: median ms", median, "<=",
	             CHANGES_TARGET_MS);
}

/* One host's whole span deleted from the base table, for distinct hosts,
 * each timed alone. */
static void measure_delete(struct crun *r)
{
	int k = r->c->quick ? CR_DELETES_QUICK : CR_DELETES_FULL;
	int64_t ns[CR_DELETES_FULL];
	int counted = 0;
	if ((size_t)k > r->hosts)
		k = (int)r->hosts;
	for (int i = 0; i < k; i++) {
		size_t h = (size_t)i * r->hosts / (size_t)k;
		uint64_t deleted = 0;
		int rc = delete_host(r, r->base.t, r->host[h], r->start, r->start + r->span, &deleted,
		                     &ns[i]);
		if (rc == TS_ENOTSUP) {
			not_built("delete_host_day", "ts_delete");
			return;
		}
		if (rc < 0)
			return;
		ts_value prefix = ts_string(r->host[h]);
		ts_cursor *cur = NULL;
		const ts_value *row = NULL;
		if ((rc = ts_latest_open(r->base.t, &prefix, 1, &cur)) == 0)
			rc = ts_cursor_next(cur, &row, NULL);
		ts_cursor_close(cur);
		if (rc < 0) {
			failed(r, "ts_latest_open", rc);
			return;
		}
		if (row || (deleted != TS_COUNT_UNKNOWN && deleted != r->steps)) {
			fprintf(stderr, "tsstore-bench: corrections: the delete of %s's %zu rows said %llu "
			                "deleted%s\n", r->host[h], r->steps, (unsigned long long)deleted,
			        row ? ", and latest still finds a row" : "");
			printf("{\"workload\":\"corrections\",\"engine\":\"tsstore\",\"error\":\"mismatch\","
			       "\"call\":\"ts_delete\"}\n");
			r->failed = 1;
			return;
		}
		counted += deleted != TS_COUNT_UNKNOWN;
	}
	qsort(ns, (size_t)k, sizeof *ns, cmp_i64);
	char p[512], extra[128];
	snprintf(extra, sizeof extra, "\"deletes\":%d,\"rows_each\":%zu,\"counted\":%d", k, r->steps,
	         counted);
	params(p, sizeof p, r, extra);
	double median = (double)ns[k / 2] * MS_PER_NS;
	bench_result("corrections", "tsstore", "delete_host_day_median_ms", median, "ms", p);
	bench_result("corrections", "tsstore", "delete_host_day_max_ms",
	             (double)ns[k - 1] * MS_PER_NS, "ms", p);
	bench_target("corrections", "delete one host's day: median ms", median, "<=",
	             DELETE_TARGET_MS);
}

/* ---- set-up ---- */

static void setup(struct crun *r, const bench_config *c)
{
	bench_stream s;
	uint64_t x = CR_SEED;
	memset(r, 0, sizeof *r);
	r->c = c;
	r->hosts = c->hosts;
	r->span = c->quick ? CR_SPAN_QUICK_NS : CR_SPAN_FULL_NS;
	r->steps = (size_t)(r->span / BENCH_STEP_NS);
	r->n = r->hosts * r->steps;
	r->slot = r->span / CR_SLOTS;
	stream_start(r, &s);
	r->start = s.start_ns;
	r->host = bench_calloc(r->hosts, sizeof *r->host, "corrections");
	memcpy(r->host, s.host, r->hosts * sizeof *r->host);
	bench_stream_free(&s);
	r->deleted = bench_calloc(r->hosts * CR_SLOTS, 1, "corrections");
	r->nranges = c->quick ? CR_RANGES_QUICK : CR_RANGES_FULL;
	r->ranges = bench_calloc(r->nranges, sizeof *r->ranges, "corrections");
	size_t starts = (size_t)((r->span - r->slot) / BENCH_STEP_NS) + 1;
	for (size_t i = 0; i < r->nranges; i++) {
		r->ranges[i].host = (size_t)(bench_xorshift(&x) % r->hosts);
		r->ranges[i].from = r->start + (int64_t)(bench_xorshift(&x) % starts) * BENCH_STEP_NS;
		r->ranges[i].to = r->ranges[i].from + r->slot;
	}
	r->passes = c->quick ? CR_LATEST_QUICK : CR_LATEST_FULL;
	r->repeat = c->quick || c->repeat >= CR_REPEAT_FULL ? c->repeat : CR_REPEAT_FULL;
	r->order = bench_calloc(r->hosts, sizeof *r->order, "corrections");
	for (size_t h = 0; h < r->hosts; h++)
		r->order[h] = h;
	for (size_t h = r->hosts - 1; h > 0; h--) {
		size_t j = (size_t)(bench_xorshift(&x) % (h + 1)), tmp = r->order[h];
		r->order[h] = r->order[j];
		r->order[j] = tmp;
	}
}

static void teardown(struct crun *r)
{
	table_close(&r->base);
	table_close(&r->deletes);
	table_close(&r->replaces);
	free(r->host);
	free(r->deleted);
	free(r->ranges);
	free(r->order);
}

int bench_workload_corrections(const bench_config *c)
{
	struct crun r;
	struct wants w;
	uint64_t none;
	int64_t ns;
	setup(&r, c);
	table_open(&r, &r.base, "base");
	table_open(&r, &r.deletes, "deletes");
	table_open(&r, &r.replaces, "replaces");
	if (table_load(&r, &r.base) < 0 || table_load(&r, &r.deletes) < 0 ||
	    table_load(&r, &r.replaces) < 0)
		goto out;
	/* 0 % deletes: the same rows in a table of its own */
	want(&r, 0, 0, &w);
	if (compare(&r, &r.deletes, "deletes_0pct", &w, "0% deletes", ZERO_TARGET) < 0)
		goto out;
	/* a tombstone in force that hides nothing */
	int rc = delete_host(&r, r.deletes.t, NULL, r.start, r.start + r.span, &none, &ns);
	if (rc == TS_ENOTSUP)
		not_built("tombstone_empty", "ts_delete");
	else if (rc < 0 || compare(&r, &r.deletes, "tombstone_empty", &w, NULL, 0) < 0)
		goto out;
	/* 1 % deleted */
	rc = rc == TS_ENOTSUP ? rc : delete_one_pct(&r);
	if (rc == TS_ENOTSUP)
		not_built("deleted_1pct", "ts_delete");
	else if (rc < 0)
		goto out;
	else {
		want(&r, 1, 0, &w);
		if (compare(&r, &r.deletes, "deleted_1pct", &w, "1% deleted", ONE_PCT_TARGET) < 0)
			goto out;
	}
	/* 1 % replaced */
	rc = replace_one_pct(&r);
	if (rc == TS_ENOTSUP)
		not_built("replaced_1pct", "ts_insert_policy");
	else if (rc < 0)
		goto out;
	else {
		want(&r, 0, 1, &w);
		if (compare(&r, &r.replaces, "replaced_1pct", &w, "1% replaced", ONE_PCT_TARGET) < 0)
			goto out;
	}
	measure_changes(&r);
	measure_delete(&r);
out:
	teardown(&r);
	return r.failed ? -1 : 0;
}
