/*
 * tsbs.c -- the tsbs workload (issue 8): four queries of the TSBS
 * cpu-only set over the TSBS file of ../shared/data, tsstore against
 * SQLite, on the same rows, in the same run.
 *
 * The rows: the whole file (bench_tsbs_load), 100 hosts every 10 s for
 * 12 hours, 432,000 rows, also with --quick (which runs each query fewer
 * times; loading both engines takes about 3 s).  tsstore gets them in a
 * table "cpu" keyed (hostname, ts), the other nine tags as string
 * columns, the ten fields as int64 (the layout of the ingest workload),
 * loaded with no flush on the way, then ts_flush and ts_merge: on-disk
 * tablets (one: the rows lie in one day).  The
 * table runs on a clock frozen a day after the last row, so the rows lie
 * in the day periods of "yesterday" whenever the bench runs.  Its block
 * cache is c->block_cache_mb (room for every block).  SQLite gets the
 * same rows in an in-memory database (all its pages in memory too):
 *
 *   CREATE TABLE cpu (hostname TEXT, region TEXT, ... ts INTEGER,
 *       usage_user INTEGER, ..., PRIMARY KEY (hostname, ts)) WITHOUT ROWID
 *
 * The queries, as TSBS defines them (each run qd->runs times, with random
 * hosts and times drawn once: the same list for both engines):
 *
 *   lastpoint             the newest row of every host.  tsstore:
 *                         ts_latest_open per host; SQLite: per host,
 *                         SELECT * ... WHERE hostname = ? ORDER BY ts DESC
 *                         LIMIT 1.  Both walk the host list (TSBS's
 *                         DISTINCT ON needs it too).
 *   single-groupby-1-1-1  max(usage_user) per minute, 1 host, 1 hour.
 *                         tsstore: ts_aggregate_open, prefix host, every
 *                         1 min, group 0.
 *   cpu-max-all-1         max of each of the 10 fields per hour, 1 host,
 *                         8 hours (TSBS's definition: 1-hour windows over
 *                         an 8-hour range).  ts_aggregate_open, every 1 h.
 *   double-groupby-1      mean(usage_user) per host per hour, every host,
 *                         12 hours.  ts_aggregate_open, group 1, every 1 h.
 *
 * Start times are drawn on the rows' 10 s grid so that the range lies in
 * the rows (at their start when the range is as long as the rows or
 * longer: double-groupby-1's 12 hours cover the whole file, so its runs
 * are all alike, as in TSBS with a 12-hour data set).  Each answer is
 * boiled down to its row count, a hash of its integers and strings in
 * order, and the sum of its doubles (the means); every run of every query
 * is compared between the engines (the sums of means to a relative
 * MEAN_TOLERANCE), and a difference is an error: a "mismatch" line, no
 * tsstore results for that query, and exit status 1.
 * One untimed pass of each engine warms the caches, then c->repeat timed
 * passes, turn about; each engine's best pass is reported: mean latency
 * per query and queries per second.  With --no-peers tsstore runs alone
 * and its answers go unchecked.
 */
#ifdef HAVE_SQLITE
#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "tablet_format.h"

#define NS_PER_SEC INT64_C(1000000000)
#define MINUTE_NS (60 * NS_PER_SEC)
#define HOUR_NS (3600 * NS_PER_SEC)
#define DAY_NS (24 * HOUR_NS)
#define TSBS_STEP_NS (10 * NS_PER_SEC) /* the file's hosts report every 10 s */
#define TSBS_COLUMNS (BENCH_TSBS_TAGS + 1 + BENCH_TSBS_FIELDS)
#define TSBS_TS_COLUMN BENCH_TSBS_TAGS  /* the column "ts"; the fields follow */
#define MEAN_TOLERANCE 1e-9             /* relative, on the sum of the means */
#define TSBS_SEED UINT64_C(0xD1B54A32D192ED03)
#define SQL_MAX 2048

/* One query of the set. */
struct qdef {
	const char *name;       /* TSBS's */
	const char *metric;     /* the metrics' prefix */
	int per_host;           /* one random host (1) or every host (0) */
	int64_t span, every;    /* range and windows; 0 for lastpoint */
	int group;              /* ts_aggregate.group */
	int nfields;            /* the aggregate: max of the first nfields fields, or */
	ts_aggfn fn;            /* fn of usage_user when nfields is 0 */
	int runs_full, runs_quick;
};

static const struct qdef queries[] = {
	{.name = "lastpoint", .metric = "lastpoint", .runs_full = 500, .runs_quick = 50},
	{.name = "single-groupby-1-1-1", .metric = "single_groupby_1_1_1", .per_host = 1,
	 .span = HOUR_NS, .every = MINUTE_NS, .fn = TS_AGG_MAX, .runs_full = 5000,
	 .runs_quick = 500},
	{.name = "cpu-max-all-1", .metric = "cpu_max_all_1", .per_host = 1, .span = 8 * HOUR_NS,
	 .every = HOUR_NS, .nfields = BENCH_TSBS_FIELDS, .fn = TS_AGG_MAX, .runs_full = 1000,
	 .runs_quick = 200},
	{.name = "double-groupby-1", .metric = "double_groupby_1", .span = 12 * HOUR_NS,
	 .every = HOUR_NS, .group = 1, .fn = TS_AGG_MEAN, .runs_full = 10, .runs_quick = 3},
};
#define NQUERIES (sizeof queries / sizeof queries[0])

/* One run of a query: a host (per_host) and [from, to). */
struct inst {
	size_t host;
	int64_t from, to;
};

/* An answer boiled down. */
struct answer {
	int64_t rows;
	uint64_t hash;
	double dsum;
};

/* The state of the workload. */
struct trun {
	const bench_config *c;
	bench_tsbs_row *rows;
	size_t n;
	char *text;
	const char **host;      /* distinct hostnames, sorted */
	size_t *hostlen, nhosts;
	int64_t first_ts, end_ts; /* the rows' first ts, the last ts + 10 s */
	int64_t now;            /* the table's frozen clock */
	bench_loaded ts;
	int merges;
	int64_t tablets, tablet_bytes;
	sqlite3 *db;
	int failed;
};

static void sql_die(struct trun *t, const char *what)
{
	fprintf(stderr, "tsstore-bench: tsbs: sqlite: %s: %s\n", what,
	        t->db ? sqlite3_errmsg(t->db) : "no database");
	exit(1); /* the bench itself is wrong */
}

/* ---- answers ---- */

static void mix(uint64_t *h, uint64_t v)
{
	*h = (*h ^ v) * UINT64_C(0x100000001B3);
	*h ^= *h >> 29;
}

static void mix_bytes(uint64_t *h, const void *p, size_t n)
{
	const unsigned char *b = p;
	mix(h, n);
	for (size_t i = 0; i < n; i++)
		mix(h, b[i]);
}

static void answer_ts_row(struct answer *a, const ts_value *row, int n)
{
	a->rows++;
	for (int i = 0; i < n; i++) {
		if (row[i].type == TS_STRING || row[i].type == TS_BLOB)
			mix_bytes(&a->hash, row[i].v.s.ptr, row[i].v.s.len);
		else if (row[i].type == TS_DOUBLE)
			a->dsum += row[i].v.d;
		else
			mix(&a->hash, (uint64_t)row[i].v.i);
	}
}

static void answer_sql_row(struct answer *a, sqlite3_stmt *st)
{
	int n = sqlite3_column_count(st);
	a->rows++;
	for (int i = 0; i < n; i++) {
		switch (sqlite3_column_type(st, i)) {
		case SQLITE_TEXT:
			mix_bytes(&a->hash, sqlite3_column_text(st, i), (size_t)sqlite3_column_bytes(st, i));
			break;
		case SQLITE_FLOAT:
			a->dsum += sqlite3_column_double(st, i);
			break;
		case SQLITE_INTEGER:
			mix(&a->hash, (uint64_t)sqlite3_column_int64(st, i));
			break;
		default:
			mix(&a->hash, UINT64_C(0xDEAD)); /* NULL or blob: never in a right answer */
		}
	}
}

static int answers_equal(const struct answer *a, const struct answer *b)
{
	double scale = fabs(b->dsum) > 1 ? fabs(b->dsum) : 1;
	return a->rows == b->rows && a->hash == b->hash &&
	       fabs(a->dsum - b->dsum) <= MEAN_TOLERANCE * scale;
}

/* ---- loading ---- */

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The distinct hostnames (NUL-terminated copies), sorted as both engines
 * order them (bytewise: no hostname holds a NUL). */
static void find_hosts(struct trun *t)
{
	const char **all = bench_calloc(t->n, sizeof *all, "tsbs");
	for (size_t i = 0; i < t->n; i++) {
		char *h = bench_calloc(1, t->rows[i].taglen[0] + 1, "tsbs");
		memcpy(h, t->rows[i].tag[0], t->rows[i].taglen[0]);
		all[i] = h;
	}
	qsort(all, t->n, sizeof *all, cmp_str);
	t->host = bench_calloc(t->n, sizeof *t->host, "tsbs");
	for (size_t i = 0; i < t->n; i++)
		if (t->nhosts == 0 || strcmp(all[i], t->host[t->nhosts - 1]) != 0)
			t->host[t->nhosts++] = all[i];
		else
			free((void *)all[i]);
	free(all);
	t->hostlen = bench_calloc(t->nhosts, sizeof *t->hostlen, "tsbs");
	for (size_t h = 0; h < t->nhosts; h++)
		t->hostlen[h] = strlen(t->host[h]);
}

/* The table's schema: the tags, ts, the fields. */
static void tsstore_create(struct trun *t)
{
	ts_column cols[TSBS_COLUMNS];
	const char *key[] = {"hostname", "ts"};
	int rc;
	for (int i = 0; i < BENCH_TSBS_TAGS; i++)
		cols[i] = (ts_column){bench_tsbs_tags[i], TS_STRING, {TS_NONE, {0}}};
	cols[TSBS_TS_COLUMN] = (ts_column){"ts", TS_TIMESTAMP, {TS_NONE, {0}}};
	for (int i = 0; i < BENCH_TSBS_FIELDS; i++)
		cols[TSBS_TS_COLUMN + 1 + i] =
			(ts_column){bench_tsbs_fields[i], TS_INT64, {TS_NONE, {0}}};
	if ((rc = ts_open(t->ts.dir, &t->ts.opts, &t->ts.db)) < 0 ||
	    (rc = ts_create_keyed(t->ts.db, BENCH_TABLE, cols, TSBS_COLUMNS, key, 2, 0)) < 0 ||
	    (rc = ts_table_open(t->ts.db, BENCH_TABLE, &t->ts.t)) < 0) {
		fprintf(stderr, "tsstore-bench: tsbs: creating the table: %s\n", ts_errmsg(NULL));
		exit(1);
	}
}

/* Rows [i, i + n) as tsstore values into v. */
static void tsstore_values(const struct trun *t, size_t i, size_t n, ts_value *v)
{
	for (size_t k = 0; k < n; k++, v += TSBS_COLUMNS) {
		const bench_tsbs_row *r = &t->rows[i + k];
		for (int c = 0; c < BENCH_TSBS_TAGS; c++)
			v[c] = ts_stringn(r->tag[c], r->taglen[c]);
		v[TSBS_TS_COLUMN] = ts_timestamp(r->ts);
		for (int c = 0; c < BENCH_TSBS_FIELDS; c++)
			v[TSBS_TS_COLUMN + 1 + c] = ts_int64(r->field[c]);
	}
}

/* Every row into a fresh table, flushed and merged.  Returns 0, or -1
 * (reported). */
static int load_tsstore(struct trun *t)
{
	size_t batch = t->c->batch;
	ts_value *v = bench_calloc(batch * TSBS_COLUMNS, sizeof *v, "tsbs");
	int rc = 0;
	ts_options_init(&t->ts.opts);
	t->ts.opts.flags = TS_OPEN_CREATE | TS_OPEN_NOMERGE;
	t->ts.opts.sync = TS_SYNC_NONE;
	t->ts.opts.flush_size = BENCH_NEVER_FLUSH_SIZE;
	t->ts.opts.flush_age = BENCH_NEVER_FLUSH_AGE;
	t->ts.opts.clock = bench_frozen_clock;
	t->ts.opts.clock_arg = &t->now;
	t->ts.opts.block_cache_size = (int64_t)t->c->block_cache_mb << 20;
	t->ts.dir = bench_tmpdir();
	tsstore_create(t);
	for (size_t i = 0; rc == 0 && i < t->n; i += batch) {
		size_t n = t->n - i < batch ? t->n - i : batch;
		tsstore_values(t, i, n, v);
		if ((rc = ts_insert(t->ts.t, v, n)) < 0)
			bench_tsstore_failed("tsbs", "ts_insert", rc, &t->failed);
	}
	free(v);
	if (rc == 0 && (rc = ts_flush(t->ts.t, INT64_MAX)) < 0)
		bench_tsstore_failed("tsbs", "ts_flush", rc, &t->failed);
	if (rc == 0 && (rc = ts_merge(t->ts.t, &t->merges)) < 0)
		bench_tsstore_failed("tsbs", "ts_merge", rc, &t->failed);
	t->tablets = bench_table_stat(t->ts.t, "tablets");
	t->tablet_bytes = bench_dir_bytes(t->ts.dir, TS_TABLET_SUFFIX);
	return rc < 0 ? -1 : 0;
}

static void sql_exec(struct trun *t, const char *sql)
{
	char *err = NULL;
	if (sqlite3_exec(t->db, sql, NULL, NULL, &err) != SQLITE_OK) {
		fprintf(stderr, "tsstore-bench: tsbs: sqlite: %s: %s\n", sql, err ? err : "");
		sqlite3_free(err);
		exit(1);
	}
}

static void load_sqlite(struct trun *t)
{
	char sql[SQL_MAX], *p = sql;
	sqlite3_stmt *ins = NULL;
	if (sqlite3_open(":memory:", &t->db) != SQLITE_OK)
		sql_die(t, "open");
	p += sprintf(p, "CREATE TABLE cpu (");
	for (int i = 0; i < BENCH_TSBS_TAGS; i++)
		p += sprintf(p, "%s TEXT, ", bench_tsbs_tags[i]);
	p += sprintf(p, "ts INTEGER");
	for (int i = 0; i < BENCH_TSBS_FIELDS; i++)
		p += sprintf(p, ", %s INTEGER", bench_tsbs_fields[i]);
	sprintf(p, ", PRIMARY KEY (hostname, ts)) WITHOUT ROWID");
	sql_exec(t, sql);
	p = sql + sprintf(sql, "INSERT INTO cpu VALUES (?");
	for (int i = 1; i < TSBS_COLUMNS; i++)
		p += sprintf(p, ", ?");
	sprintf(p, ")");
	if (sqlite3_prepare_v2(t->db, sql, -1, &ins, NULL) != SQLITE_OK)
		sql_die(t, "prepare insert");
	sql_exec(t, "BEGIN");
	for (size_t i = 0; i < t->n; i++) {
		const bench_tsbs_row *r = &t->rows[i];
		for (int c = 0; c < BENCH_TSBS_TAGS; c++)
			sqlite3_bind_text(ins, c + 1, r->tag[c], (int)r->taglen[c], SQLITE_STATIC);
		sqlite3_bind_int64(ins, TSBS_TS_COLUMN + 1, r->ts);
		for (int c = 0; c < BENCH_TSBS_FIELDS; c++)
			sqlite3_bind_int64(ins, TSBS_TS_COLUMN + 2 + c, r->field[c]);
		if (sqlite3_step(ins) != SQLITE_DONE)
			sql_die(t, "insert");
		sqlite3_reset(ins);
	}
	sql_exec(t, "COMMIT");
	sqlite3_finalize(ins);
}

/* ---- the queries ---- */

/* The runs of qd: random hosts, random starts on the 10 s grid such that
 * [from, from + span) lies in the rows where it can. */
static struct inst *make_insts(const struct trun *t, const struct qdef *qd, size_t k, int *runs)
{
	uint64_t x = TSBS_SEED + k;
	int64_t room = t->end_ts - t->first_ts - qd->span;
	uint64_t starts = room > 0 ? (uint64_t)(room / TSBS_STEP_NS) + 1 : 1;
	*runs = t->c->quick ? qd->runs_quick : qd->runs_full;
	struct inst *in = bench_calloc((size_t)*runs, sizeof *in, "tsbs");
	for (int i = 0; i < *runs; i++) {
		in[i].host = qd->per_host ? (size_t)(bench_xorshift(&x) % t->nhosts) : 0;
		in[i].from = t->first_ts + (int64_t)(bench_xorshift(&x) % starts) * TSBS_STEP_NS;
		in[i].to = in[i].from + qd->span;
	}
	return in;
}

/* Read cur to its end into a; closes cur.  Returns 0, or -1 (reported). */
static int tsstore_drain(struct trun *t, ts_cursor *cur, struct answer *a)
{
	const ts_value *row;
	int n, rc;
	while ((rc = ts_cursor_next(cur, &row, &n)) == 0 && row)
		answer_ts_row(a, row, n);
	ts_cursor_close(cur);
	return rc < 0 ? bench_tsstore_failed("tsbs", "ts_cursor_next", rc, &t->failed) : 0;
}

static int tsstore_lastpoint(struct trun *t, struct answer *a)
{
	for (size_t h = 0; h < t->nhosts; h++) {
		ts_value prefix = ts_stringn(t->host[h], t->hostlen[h]);
		ts_cursor *cur = NULL;
		int rc = ts_latest_open(t->ts.t, &prefix, 1, &cur);
		if (rc < 0)
			return bench_tsstore_failed("tsbs", "ts_latest_open", rc, &t->failed);
		if (tsstore_drain(t, cur, a) < 0)
			return -1;
	}
	return 0;
}

static int tsstore_aggregate(struct trun *t, const struct qdef *qd, const struct inst *in,
                        struct answer *a)
{
	ts_aggspec specs[BENCH_TSBS_FIELDS];
	ts_value prefix = ts_stringn(t->host[in->host], t->hostlen[in->host]);
	int nspecs = qd->nfields ? qd->nfields : 1;
	ts_cursor *cur = NULL;
	for (int i = 0; i < nspecs; i++)
		specs[i] = (ts_aggspec){TSBS_TS_COLUMN + 1 + i, qd->fn};
	ts_aggregate req = {qd->per_host ? &prefix : NULL, qd->per_host, in->from, in->to, qd->every,
	                    qd->group, specs, nspecs};
	int rc = ts_aggregate_open(t->ts.t, &req, &cur);
	if (rc < 0)
		return bench_tsstore_failed("tsbs", "ts_aggregate_open", rc, &t->failed);
	return tsstore_drain(t, cur, a);
}

static int tsstore_one(struct trun *t, const struct qdef *qd, const struct inst *in,
                       struct answer *a)
{
	return qd->span ? tsstore_aggregate(t, qd, in, a) : tsstore_lastpoint(t, a);
}

/* qd's statement, as TSBS writes it for SQL engines. */
static sqlite3_stmt *sql_prepare(struct trun *t, const struct qdef *qd)
{
	char sql[SQL_MAX], *p = sql;
	sqlite3_stmt *st = NULL;
	if (!qd->span) {
		p += sprintf(p, "SELECT * FROM cpu WHERE hostname = ?1 ORDER BY ts DESC LIMIT 1");
	} else {
		p += sprintf(p, "SELECT %sts / %lld * %lld AS w", qd->group ? "hostname, " : "",
		             (long long)qd->every, (long long)qd->every);
		for (int i = 0; i < (qd->nfields ? qd->nfields : 1); i++)
			p += sprintf(p, ", %s(%s)", qd->fn == TS_AGG_MEAN ? "avg" : "max",
			             bench_tsbs_fields[i]);
		p += sprintf(p, " FROM cpu WHERE %sts >= ?2 AND ts < ?3 GROUP BY %s ORDER BY %s",
		             qd->per_host ? "hostname = ?1 AND " : "", qd->group ? "hostname, w" : "w",
		             qd->group ? "hostname, w" : "w");
	}
	if (sqlite3_prepare_v2(t->db, sql, -1, &st, NULL) != SQLITE_OK)
		sql_die(t, sql);
	return st;
}

static void sql_drain(struct trun *t, sqlite3_stmt *st, struct answer *a)
{
	int rc;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW)
		answer_sql_row(a, st);
	if (rc != SQLITE_DONE)
		sql_die(t, "step");
	sqlite3_reset(st);
}

static void sql_one(struct trun *t, sqlite3_stmt *st, const struct qdef *qd,
                    const struct inst *in, struct answer *a)
{
	if (!qd->span) {
		for (size_t h = 0; h < t->nhosts; h++) {
			sqlite3_bind_text(st, 1, t->host[h], (int)t->hostlen[h], SQLITE_STATIC);
			sql_drain(t, st, a);
		}
		return;
	}
	if (qd->per_host)
		sqlite3_bind_text(st, 1, t->host[in->host], (int)t->hostlen[in->host], SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, in->from);
	sqlite3_bind_int64(st, 3, in->to);
	sql_drain(t, st, a);
}

/* One pass of every run of qd through tsstore, answers into a[].
 * Returns seconds, or -1 (reported). */
static double tsstore_pass(struct trun *t, const struct qdef *qd, const struct inst *in, int runs,
                      struct answer *a)
{
	memset(a, 0, (size_t)runs * sizeof *a);
	double t0 = bench_seconds();
	for (int i = 0; i < runs; i++)
		if (tsstore_one(t, qd, &in[i], &a[i]) < 0)
			return -1;
	return bench_seconds() - t0;
}

static double sql_pass(struct trun *t, sqlite3_stmt *st, const struct qdef *qd,
                       const struct inst *in, int runs, struct answer *a)
{
	memset(a, 0, (size_t)runs * sizeof *a);
	double t0 = bench_seconds();
	for (int i = 0; i < runs; i++)
		sql_one(t, st, qd, &in[i], &a[i]);
	return bench_seconds() - t0;
}

/* Whether tsstore's answers ta equal SQLite's sa, run by run; reports the
 * first difference.  Returns 0 or -1. */
static int compare(struct trun *t, const struct qdef *qd, const struct inst *in, int runs,
                   const struct answer *ta, const struct answer *sa)
{
	for (int i = 0; i < runs; i++) {
		if (answers_equal(&ta[i], &sa[i]))
			continue;
		fprintf(stderr, "tsstore-bench: tsbs: %s run %d (host %s, from %lld): tsstore returned "
		                "%lld rows (hash %016llx, sum of means %.9g), sqlite %lld rows (hash "
		                "%016llx, sum of means %.9g)\n",
		        qd->name, i, qd->per_host ? t->host[in[i].host] : "all", (long long)in[i].from,
		        (long long)ta[i].rows, (unsigned long long)ta[i].hash, ta[i].dsum,
		        (long long)sa[i].rows, (unsigned long long)sa[i].hash, sa[i].dsum);
		printf("{\"workload\":\"tsbs\",\"engine\":\"tsstore\",\"error\":\"mismatch\","
		       "\"call\":\"%s\"}\n", qd->name);
		fflush(stdout);
		t->failed = 1;
		return -1;
	}
	return 0;
}

static double min_positive(double best, double s)
{
	return s > 0 && (best <= 0 || s < best) ? s : best;
}

static void report(const struct trun *t, const struct qdef *qd, int runs, int64_t rows_returned,
                   double ts_s, double sql_s)
{
	char params[512], metric[64];
	snprintf(params, sizeof params,
	         "\"query\":\"%s\",\"rows\":%zu,\"hosts\":%zu,\"queries\":%d,\"rows_returned\":%lld,"
	         "\"repeat\":%d,\"tablets\":%lld,\"tablet_bytes\":%lld,\"merges\":%d,"
	         "\"block_cache_mb\":%ld,\"sqlite\":\"in-memory\"",
	         qd->name, t->n, t->nhosts, runs, (long long)rows_returned, t->c->repeat,
	         (long long)t->tablets, (long long)t->tablet_bytes, t->merges, t->c->block_cache_mb);
	static const char *const engines[2] = {"tsstore", "sqlite"};
	double secs[2] = {ts_s, sql_s};
	for (int e = 0; e < 2; e++) {
		if (secs[e] <= 0)
			continue;
		snprintf(metric, sizeof metric, "%s_mean_us", qd->metric);
		bench_result("tsbs", engines[e], metric, secs[e] / runs * 1e6, "us", params);
		snprintf(metric, sizeof metric, "%s_queries_per_sec", qd->metric);
		bench_result("tsbs", engines[e], metric, runs / secs[e], "queries/s", params);
	}
}

/* Query k of the set: a checked warm-up pass of each engine, then
 * c->repeat timed passes, turn about, each checked. */
static void run_query(struct trun *t, size_t k)
{
	const struct qdef *qd = &queries[k];
	int runs, ts_ok = 1, peer = !t->c->skip_peers;
	struct inst *in = make_insts(t, qd, k, &runs);
	struct answer *ta = bench_calloc((size_t)runs, sizeof *ta, "tsbs");
	struct answer *sa = bench_calloc((size_t)runs, sizeof *sa, "tsbs");
	sqlite3_stmt *st = peer ? sql_prepare(t, qd) : NULL;
	double ts_best = 0, sql_best = 0;
	int64_t rows_returned = 0;
	for (int pass = 0; pass <= t->c->repeat; pass++) { /* pass 0 warms */
		double s;
		if (ts_ok) {
			s = tsstore_pass(t, qd, in, runs, ta);
			ts_ok = s >= 0;
			ts_best = pass ? min_positive(ts_best, s) : ts_best;
		}
		if (peer) {
			s = sql_pass(t, st, qd, in, runs, sa);
			sql_best = pass ? min_positive(sql_best, s) : sql_best;
			if (ts_ok)
				ts_ok = compare(t, qd, in, runs, ta, sa) == 0;
		}
	}
	for (int i = 0; i < runs; i++)
		rows_returned += peer ? sa[i].rows : ta[i].rows;
	report(t, qd, runs, rows_returned, ts_ok ? ts_best : 0, sql_best);
	sqlite3_finalize(st);
	free(in);
	free(ta);
	free(sa);
}

/* ---- set-up ---- */

static int setup(struct trun *t, const bench_config *c)
{
	memset(t, 0, sizeof *t);
	t->c = c;
	t->rows = bench_tsbs_load(c->tsbs_path, SIZE_MAX, &t->n, &t->text);
	if (!t->rows || t->n == 0) {
		fprintf(stderr, "tsstore-bench: tsbs: cannot read %s\n", c->tsbs_path);
		bench_error("tsbs", "tsstore", "bench_tsbs_load", TS_EIO);
		return -1;
	}
	t->first_ts = INT64_MAX;
	t->end_ts = INT64_MIN;
	for (size_t i = 0; i < t->n; i++) {
		t->first_ts = t->rows[i].ts < t->first_ts ? t->rows[i].ts : t->first_ts;
		t->end_ts = t->rows[i].ts + TSBS_STEP_NS > t->end_ts ? t->rows[i].ts + TSBS_STEP_NS
		                                                     : t->end_ts;
	}
	t->now = t->end_ts + DAY_NS;
	find_hosts(t);
	if (load_tsstore(t) < 0)
		return -1;
	if (!c->skip_peers)
		load_sqlite(t);
	return 0;
}

static void teardown(struct trun *t)
{
	if (t->ts.dir)
		bench_table_unload(&t->ts);
	sqlite3_close(t->db);
	for (size_t h = 0; h < t->nhosts; h++)
		free((void *)t->host[h]);
	free(t->host);
	free(t->hostlen);
	free(t->rows);
	free(t->text);
}

int bench_workload_tsbs(const bench_config *c)
{
	struct trun t;
	if (setup(&t, c) == 0)
		for (size_t k = 0; k < NQUERIES; k++)
			run_query(&t, k);
	int failed = t.failed || !t.rows || t.n == 0;
	teardown(&t);
	return failed ? -1 : 0;
}
#else
#include <stdio.h>

#include "bench.h"

int bench_workload_tsbs(const bench_config *c)
{
	(void)c;
	fprintf(stderr, "tsstore-bench: tsbs: built without libsqlite3; no figures\n");
	return 0;
}
#endif
