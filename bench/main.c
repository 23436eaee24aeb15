/*
 * main.c -- tsstore-bench: named workloads, each printing one JSON object
 * per result; --compare adds the ratios of tsstore against the peers
 * measured in the same run.  BENCHMARKS.md explains each workload and
 * records the figures.
 *
 *   tsstore-bench [--quick] [--compare] [--rows N] [--hosts H]
 *                 [--batch B] [--repeat R] [--no-peers] [--workload NAME]...
 *
 * Each engine runs R times (default 3, 1 with --quick), taking turns
 * with the others; the best run is reported.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench.h"
#include "snapshot.h"

struct config {
	size_t rows, hosts, batch;
	int repeat;               /* runs of each engine; the best is reported */
	int compare;
	const char *only[16];
	int nonly;
	int skip_peers;
};

static int wanted(const struct config *c, const char *name)
{
	if (c->nonly == 0)
		return 1;
	for (int i = 0; i < c->nonly; i++)
		if (strcmp(c->only[i], name) == 0)
			return 1;
	return 0;
}

static char *tmpdir(void)
{
	char *d = strdup("/tmp/tsstore-bench-XXXXXX");
	if (!d || !mkdtemp(d)) {
		perror("tsstore-bench: mkdtemp");
		exit(1);
	}
	return d;
}

static void rmdir_tree(char *d)
{
	char cmd[600];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", d);
	if (system(cmd) != 0)
		fprintf(stderr, "tsstore-bench: could not remove %s\n", d);
	free(d);
}

/* ---- tsstore ---- */

static ts_table *open_tsstore(const char *dir, ts_db **db)
{
	ts_options o;
	ts_table *t;
	ts_options_init(&o);
	o.flags = TS_OPEN_CREATE;
	o.sync = TS_SYNC_NONE;
	ts_column cols[2 + BENCH_VALUES] = {{"host", TS_STRING, {TS_NONE, {0}}},
	                                    {"ts", TS_TIMESTAMP, {TS_NONE, {0}}}};
	static const char *names[BENCH_VALUES] = {"v0", "v1", "v2", "v3", "v4",
	                                          "v5", "v6", "v7", "v8", "v9"};
	for (int i = 0; i < BENCH_VALUES; i++)
		cols[2 + i] = (ts_column){names[i], TS_INT64, {TS_NONE, {0}}};
	const char *key[] = {"host", "ts"};
	if (ts_open(dir, &o, db) < 0 || ts_create_keyed(*db, "cpu", cols, 2 + BENCH_VALUES, key, 2, 0) < 0 ||
	    ts_table_open(*db, "cpu", &t) < 0) {
		fprintf(stderr, "tsstore-bench: %s\n", ts_errmsg(NULL));
		exit(1);
	}
	return t;
}

static double thread_cpu_seconds(void)
{
	struct timespec t;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* Insert every row; returns rows per second of wall time, and rows per
 * second of the inserting thread's CPU time in *per_cpu (if not NULL). */
static double absorb_tsstore_cpu(const bench_rows *r, ts_table *t, double *per_cpu)
{
	const size_t w = 2 + BENCH_VALUES;
	double t0 = bench_seconds(), c0 = thread_cpu_seconds();
	for (size_t i = 0; i < r->n; i += r->batch) {
		size_t n = r->n - i < r->batch ? r->n - i : r->batch;
		if (ts_insert(t, &r->vals[i * w], n) < 0) {
			fprintf(stderr, "tsstore-bench: insert: %s\n", ts_errmsg(NULL));
			exit(1);
		}
	}
	if (per_cpu)
		*per_cpu = (double)r->n / (thread_cpu_seconds() - c0);
	return (double)r->n / (bench_seconds() - t0);
}

static double absorb_tsstore(const bench_rows *r, ts_table *t)
{
	return absorb_tsstore_cpu(r, t, NULL);
}

static double absorb_peer(const bench_peer *p, const bench_rows *r)
{
	char *dir = tmpdir();
	void *h = p->open(dir);
	if (!h)
		exit(1);
	double t0 = bench_seconds();
	for (size_t i = 0; i < r->n; i += r->batch) {
		size_t to = r->n - i < r->batch ? r->n : i + r->batch;
		if (p->put_batch(h, r, i, to) < 0) {
			fprintf(stderr, "tsstore-bench: %s: insert failed\n", p->name);
			exit(1);
		}
	}
	double rate = (double)r->n / (bench_seconds() - t0);
	p->close(h);
	rmdir_tree(dir);
	return rate;
}

static void params(char *buf, size_t size, const struct config *c, const char *extra)
{
	snprintf(buf, size, "\"rows\":%zu,\"hosts\":%zu,\"batch\":%zu%s%s", c->rows, c->hosts,
	         c->batch, extra ? "," : "", extra ? extra : "");
}

static double absorb_tsstore_fresh(const bench_rows *r)
{
	char *dir = tmpdir();
	ts_db *db;
	ts_table *t = open_tsstore(dir, &db);
	double rate = absorb_tsstore(r, t);
	ts_table_close(t);
	ts_close(db);
	rmdir_tree(dir);
	return rate;
}

static double max2(double a, double b) { return a > b ? a : b; }

/* The engines take turns, c->repeat times each, so that a noisy spell of
 * the shared machine hits them alike; each reports its best run. */
static void workload_absorb(const struct config *c, const bench_rows *r)
{
	char p[256];
	double ts = 0, hash = 0, lmdb = 0;
	params(p, sizeof p, c, "\"sync\":\"none\"");
	for (int i = 0; i < c->repeat; i++) {
		ts = max2(ts, absorb_tsstore_fresh(r));
		if (c->skip_peers)
			continue;
		hash = max2(hash, absorb_peer(&bench_peer_hash, r));
		if (bench_peer_lmdb.name)
			lmdb = max2(lmdb, absorb_peer(&bench_peer_lmdb, r));
	}
	bench_result("absorb", "tsstore", "rows_per_sec", ts, "rows/s", p);
	if (c->skip_peers)
		return;
	bench_result("absorb", "hash", "rows_per_sec", hash, "rows/s", p);
	if (bench_peer_lmdb.name)
		bench_result("absorb", "lmdb", "rows_per_sec", lmdb, "rows/s", p);
}

/* ---- absorb with readers scanning ---- */

struct scanner {
	ts_table *t;
	volatile int stop;
	long scans, rows;
};

static int count_row(const ts_value *v, int n, void *arg)
{
	(void)v;
	(void)n;
	((struct scanner *)arg)->rows++;
	return 0;
}

static void *scan_main(void *arg)
{
	struct scanner *s = arg;
	while (!s->stop) {
		ts__snapshot snap;
		if (ts__snapshot_take(s->t, &snap) < 0)
			break;
		for (uint32_t i = 0; i < snap.nroots && !s->stop; i++)
			ts__snapshot_scan(&snap, i, count_row, s);
		ts__snapshot_release(&snap);
		s->scans++;
	}
	return NULL;
}

/* One absorb run with readers scanning threads; returns rows/s, sets
 * *per_cpu to rows per second of the writer's CPU time, and adds the rows
 * the readers scanned to *scanned. */
static double absorb_with_readers(const bench_rows *r, int readers, long *scanned, double *per_cpu)
{
	struct scanner s[2];
	pthread_t th[2];
	char *dir = tmpdir();
	ts_db *db;
	ts_table *t = open_tsstore(dir, &db);
	for (int i = 0; i < readers; i++) {
		s[i] = (struct scanner){.t = t};
		pthread_create(&th[i], NULL, scan_main, &s[i]);
	}
	double rate = absorb_tsstore_cpu(r, t, per_cpu);
	for (int i = 0; i < readers; i++) {
		s[i].stop = 1;
		pthread_join(th[i], NULL);
		*scanned += s[i].rows;
	}
	ts_table_close(t);
	ts_close(db);
	rmdir_tree(dir);
	return rate;
}

static void workload_absorb_readers(const struct config *c, const bench_rows *r)
{
	char p[256], extra[96];
	static const char *engine[3] = {"tsstore", "tsstore_1reader", "tsstore_2readers"};
	double best[3] = {0, 0, 0}, best_cpu[3] = {0, 0, 0};
	long scanned[3] = {0, 0, 0};
	for (int i = 0; i < c->repeat; i++)
		for (int k = 0; k < 3; k++) {
			double cpu;
			best[k] = max2(best[k], absorb_with_readers(r, k, &scanned[k], &cpu));
			best_cpu[k] = max2(best_cpu[k], cpu);
		}
	for (int k = 0; k < 3; k++) {
		snprintf(extra, sizeof extra, "\"sync\":\"none\",\"readers\":%d,\"rows_scanned\":%ld",
		         k, scanned[k] / c->repeat);
		params(p, sizeof p, c, extra);
		bench_result("absorb_readers", engine[k], "rows_per_sec", best[k], "rows/s", p);
		/* the writer's own CPU time: interference without the share of
		 * the cores the readers take */
		bench_result("absorb_readers", engine[k], "rows_per_writer_cpu_sec", best_cpu[k],
		             "rows/s", p);
	}
}

static void usage(void)
{
	fprintf(stderr, "usage: tsstore-bench [--quick] [--compare] [--rows N] [--hosts H] "
	                "[--batch B] [--repeat R] [--no-peers]\n"
	                "                     [--workload absorb|absorb_readers]...\n");
	exit(2);
}

static void parse_args(int argc, char **argv, struct config *c)
{
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (strcmp(a, "--quick") == 0) {
			c->rows = 100000;
			c->repeat = 1;
		}
		else if (strcmp(a, "--compare") == 0)
			c->compare = 1;
		else if (strcmp(a, "--repeat") == 0 && v && ++i)
			c->repeat = atoi(v);
		else if (strcmp(a, "--no-peers") == 0)
			c->skip_peers = 1;
		else if (strcmp(a, "--rows") == 0 && v && ++i)
			c->rows = strtoul(v, NULL, 10);
		else if (strcmp(a, "--hosts") == 0 && v && ++i)
			c->hosts = strtoul(v, NULL, 10);
		else if (strcmp(a, "--batch") == 0 && v && ++i)
			c->batch = strtoul(v, NULL, 10);
		else if (strcmp(a, "--workload") == 0 && v && ++i && c->nonly < 16)
			c->only[c->nonly++] = v;
		else
			usage();
	}
	if (!c->rows || !c->hosts || !c->batch || c->repeat < 1)
		usage();
}

int main(int argc, char **argv)
{
	struct config c = {.rows = 2000000, .hosts = 1000, .batch = 512, .repeat = 3};
	bench_rows r;
	parse_args(argc, argv, &c);
	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);
	bench_rows_make(&r, c.rows, c.hosts, c.batch, (int64_t)now.tv_sec * 1000000000);
	if (wanted(&c, "absorb"))
		workload_absorb(&c, &r);
	if (wanted(&c, "absorb_readers"))
		workload_absorb_readers(&c, &r);
	if (c.compare)
		bench_compare();
	bench_rows_free(&r);
	return 0;
}
