/*
 * main.c -- tsstore-bench: named workloads, each printing one JSON object
 * per result; --compare adds the ratios of tsstore against the peers
 * measured in the same run, and whether each Done-when target is met.
 * BENCHMARKS.md explains each workload and records the figures;
 * bench/README.md says how to run them.
 *
 *   tsstore-bench [--quick] [--compare] [--rows N] [--hosts H]
 *                 [--batch B] [--repeat R] [--no-peers] [--workload NAME]...
 *                 [--device-mb N] [--rate ROWS_PER_SEC] [--seconds S]
 *                 [--flush-size BYTES] [--merge-delay SECONDS]
 *                 [--query-rows N] [--block-cache-mb N] [--tsbs FILE]
 *                 [--log-segment-size SIZE] [--rollup-days D]
 *                 [--sustained-rows N] [--rollup-rows N]
 *   tsstore-bench [--tsbs FILE] --print-queries|--print-promql TYPE|all N SEED
 *
 * Workloads: absorb and absorb_readers (here), device (device.c), flush
 * and bytes_per_row (flush.c), latency (latency.c), and the query
 * workloads scan, range, latest, aggregate and cold_scan (query.c; "query"
 * names all five), ingest (ingest.c: tsstored against VictoriaMetrics),
 * ingest_http and remote_write (wire.c: line protocol over HTTP into
 * tsstored, VictoriaMetrics and InfluxDB 1.x; Prometheus remote write into
 * tsstored and VictoriaMetrics; medians of the runs, not the best),
 * first_row (firstrow.c: first-row latency against the number of tablets),
 * tsbs (tsbs.c: TSBS queries against SQLite), absorb_sweep (sweep.c:
 * absorb against batch size and against row size) and tsbs_queries
 * (tsbsquery.c: the TSBS query types' latency over HTTP, InfluxDB 1.x,
 * VictoriaMetrics' PromQL and tsstored's /query) and corrections
 * (corrections.c: issue 28's figures, deletes and replacements against
 * an append-only table) and rollups (rollups.c: issue 29's figures, an
 * aggregate answered from a rollup against the raw rows, and the ingest
 * with a rollup kept against without) and standby (standby.c: issue
 * 33's figures, ingest into tsstored with a standby following against
 * without, and the standby's lag) and sustained (sustained.c: issue
 * 32's target 4, a library ingest longer than the log holds into
 * tsstore, LMDB and RocksDB, and its throughput over time).
 * --print-queries and
 * --print-promql print the TSBS queries (tsbsgen.c) instead.  Each engine runs R
 * times (default 3, 1 with --quick), taking turns with the others; the
 * best run is reported.  The exit status is 1 when a query workload
 * could not run its tsstore side or answered wrong.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench.h"
#include "snapshot.h"

/* Defaults of the command line. */
#define ROWS_FULL 2000000
#define ROWS_QUICK 100000
/* sustained: more rows than the log holds (issue 32, target 4) */
#define SUSTAINED_ROWS_FULL 50000000
#define SUSTAINED_ROWS_QUICK 1000000
/* rollups' ingest: long enough that the rollup's runs during the load,
 * not the tail after it, are what is measured (2 M rows: one run, after) */
#define ROLLUP_ROWS_FULL 10000000
#define ROLLUP_ROWS_QUICK 100000
#define REPEAT_FULL 3
#define DEVICE_BYTES_FULL ((size_t)1 << 30)
#define DEVICE_BYTES_QUICK ((size_t)128 << 20)
#define LATENCY_RATE 200000.0          /* rows/s offered */
#define LATENCY_SECONDS_FULL 120.0
#define LATENCY_SECONDS_QUICK 20.0
#define LATENCY_FLUSH_SIZE (INT64_C(8) << 20)
#define LATENCY_MERGE_DELAY_S 5.0
/* query workloads: rows of this much time, hosts * span / 10 s of them */
#define QUERY_SPAN_FULL_NS (INT64_C(86400) * 1000000000)  /* one day */
#define QUERY_SPAN_QUICK_NS (INT64_C(7200) * 1000000000)  /* two hours */
/* The query workloads' block cache: room for the day's decompressed
 * blocks, as LMDB has the page cache for its whole file. */
#define QUERY_BLOCK_CACHE_MB 1024

static const char *const workloads[] = {"absorb", "absorb_readers", "device", "flush",
                                        "bytes_per_row", "latency", "query", "scan",
                                        "range", "latest", "aggregate", "cold_scan", "ingest",
                                        "ingest_http", "remote_write",
                                        "fuse_cat", "sql", "absorb_sweep", "first_row", "tsbs",
                                        "tsbs_queries", "corrections", "rollups", "standby",
                                        "sustained"};
#define NWORKLOADS (sizeof workloads / sizeof workloads[0])

int bench_wanted(const bench_config *c, const char *name)
{
	if (c->nonly == 0)
		return 1;
	for (int i = 0; i < c->nonly; i++)
		if (strcmp(c->only[i], name) == 0)
			return 1;
	return 0;
}

/* ---- tsstore ---- */

/* A fresh table, sync none, otherwise the library's defaults, which
 * flush 16 MB trees as the load goes (and release their log segments);
 * in_memory: nothing flushes during the load (flush_size and flush_age
 * out of reach), so every row stays in the filling tablets and the log
 * grows by about 650 bytes a row (the row and its path-copied nodes). */
static ts_table *open_tsstore(const char *dir, int in_memory, ts_db **db)
{
	ts_options o;
	ts_options_init(&o);
	o.flags = TS_OPEN_CREATE;
	o.sync = TS_SYNC_NONE;
	if (in_memory) {
		o.flush_size = BENCH_NEVER_FLUSH_SIZE;
		o.flush_age = BENCH_NEVER_FLUSH_AGE;
	}
	return bench_table_open(dir, &o, db);
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
	double t0 = bench_seconds(), c0 = thread_cpu_seconds();
	bench_table_load(t, r);
	if (per_cpu)
		*per_cpu = (double)r->n / (thread_cpu_seconds() - c0);
	return (double)r->n / (bench_seconds() - t0);
}

static double absorb_tsstore(const bench_rows *r, ts_table *t)
{
	return absorb_tsstore_cpu(r, t, NULL);
}

static void params(char *buf, size_t size, const bench_config *c, const char *extra)
{
	snprintf(buf, size, "\"rows\":%zu,\"hosts\":%zu,\"batch\":%zu%s%s", c->rows, c->hosts,
	         c->batch, extra ? "," : "", extra ? extra : "");
}

static double absorb_tsstore_fresh(const bench_rows *r, int in_memory)
{
	char *dir = bench_tmpdir();
	ts_db *db;
	ts_table *t = open_tsstore(dir, in_memory, &db);
	double rate = absorb_tsstore(r, t);
	ts_table_close(t);
	ts_close(db);
	bench_rmdir(dir);
	return rate;
}

static double max2(double a, double b) { return a > b ? a : b; }

/* The engines take turns, c->repeat times each, so that a noisy spell of
 * the shared machine hits them alike; each reports its best run. */
/* A peer whose absorb run takes longer runs once: its figure is several
 * times tsstore's either way, and the repeats would cost minutes. */
#define SLOW_PEER_S 5.0

static void workload_absorb(const bench_config *c, const bench_rows *r)
{
	/* the peers of DESIGN.md section 8 that this build has */
	const bench_peer *peers[] = {&bench_peer_hash, &bench_peer_rbtree, &bench_peer_lmdb,
	                             &bench_peer_sqlite, &bench_peer_rocksdb};
	enum { NPEERS = sizeof peers / sizeof peers[0] };
	char p[256];
	double ts = 0, in_memory = 0, peer[NPEERS] = {0};
	params(p, sizeof p, c, "\"sync\":\"none\"");
	for (int i = 0; i < c->repeat; i++) {
		ts = max2(ts, absorb_tsstore_fresh(r, 0));
		in_memory = max2(in_memory, absorb_tsstore_fresh(r, 1));
		for (int k = 0; k < NPEERS && !c->skip_peers; k++)
			if (peers[k]->name && (i == 0 || (double)r->n / peer[k] < SLOW_PEER_S))
				peer[k] = max2(peer[k], bench_peer_absorb(peers[k], r));
	}
	bench_result("absorb", "tsstore", "rows_per_sec", ts, "rows/s", p);
	bench_result("absorb", "tsstore_in_memory", "rows_per_sec", in_memory, "rows/s", p);
	for (int k = 0; k < NPEERS && !c->skip_peers; k++)
		if (peers[k]->name)
			bench_result("absorb", peers[k]->name, "rows_per_sec", peer[k], "rows/s", p);
	if (c->skip_peers)
		return;
	bench_target("absorb", "tsstore rows/s / hash table rows/s", ts / peer[0], ">=", 0.5);
	if (bench_peer_lmdb.name)
		bench_target("absorb", "tsstore rows/s / LMDB rows/s", ts / peer[2], ">=", 4.0);
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
	char *dir = bench_tmpdir();
	ts_db *db;
	ts_table *t = open_tsstore(dir, 0, &db);
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
	bench_rmdir(dir);
	return rate;
}

static void workload_absorb_readers(const bench_config *c, const bench_rows *r)
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
	/* Done-when: a drop of less than 20 % with two readers (a machine of
	 * two cores gives the writer at most two thirds of one then) */
	if (best[0] > 0)
		bench_target("absorb_readers", "rows/s with 2 readers / rows/s with none", best[2] / best[0],
		             ">=", 0.8);
}

static void usage(void)
{
	fprintf(stderr,
	        "usage: tsstore-bench [--quick] [--compare] [--rows N] [--hosts H] [--batch B]\n"
	        "                     [--repeat R] [--no-peers] [--device-mb N] [--rate ROWS_PER_SEC]\n"
	        "                     [--seconds S] [--flush-size BYTES] [--merge-delay SECONDS]\n"
	        "                     [--query-rows N] [--block-cache-mb N] [--tsbs FILE]\n"
	        "                     [--log-segment-size SIZE] [--rollup-days D] [--sustained-rows N]\n"
	        "                     [--rollup-rows N]\n"
	        "                     [--in-service [--in-service-wait SECONDS]]\n"
	        "                     [--print-queries|--print-promql TYPE|all N SEED]\n"
	        "                     [--workload absorb|absorb_readers|device|flush|bytes_per_row|"
	        "latency|\n"
	        "                                 query|scan|range|latest|aggregate|cold_scan|ingest|ingest_http|\n"
	        "                                 remote_write|fuse_cat|sql|\n"
	        "                                 absorb_sweep|first_row|tsbs|tsbs_queries|corrections|\n"
	        "                                 rollups|standby|sustained]...\n"
	        "environment: TSSTORE_BENCH_LATENCIES=FILE appends each tsbs_queries query's\n"
	        "latency to FILE (\"engine type index us\")\n");
	exit(2);
}

static int known_workload(const char *name)
{
	for (size_t i = 0; i < NWORKLOADS; i++)
		if (strcmp(workloads[i], name) == 0)
			return 1;
	return 0;
}

/* An option with a value; returns 2 (the arguments it took), or 0. */
static int parse_valued(bench_config *c, const char *a, const char *v)
{
	if (strcmp(a, "--repeat") == 0)
		c->repeat = atoi(v);
	else if (strcmp(a, "--rows") == 0)
		c->rows = strtoul(v, NULL, 10);
	else if (strcmp(a, "--hosts") == 0)
		c->hosts = strtoul(v, NULL, 10);
	else if (strcmp(a, "--batch") == 0)
		c->batch = strtoul(v, NULL, 10);
	else if (strcmp(a, "--device-mb") == 0)
		c->device_bytes = strtoul(v, NULL, 10) << 20;
	else if (strcmp(a, "--rate") == 0)
		c->latency_rate = strtod(v, NULL);
	else if (strcmp(a, "--seconds") == 0)
		c->latency_seconds = strtod(v, NULL);
	else if (strcmp(a, "--flush-size") == 0)
		c->latency_flush_size = strtoll(v, NULL, 10);
	else if (strcmp(a, "--merge-delay") == 0)
		c->latency_merge_delay = (int64_t)(strtod(v, NULL) * 1e9);
	else if (strcmp(a, "--query-rows") == 0)
		c->query_rows = strtoul(v, NULL, 10);
	else if (strcmp(a, "--tsbs") == 0)
		c->tsbs_path = v;
	else if (strcmp(a, "--log-segment-size") == 0)
		c->log_segment_size = v;
	else if (strcmp(a, "--rollup-days") == 0)
		c->rollup_days = atoi(v);
	else if (strcmp(a, "--sustained-rows") == 0)
		c->sustained_rows = strtoul(v, NULL, 10);
	else if (strcmp(a, "--rollup-rows") == 0)
		c->rollup_rows = strtoul(v, NULL, 10);
	else if (strcmp(a, "--in-service-wait") == 0)
		c->in_service_wait = strtod(v, NULL);
	else if (strcmp(a, "--block-cache-mb") == 0)
		c->block_cache_mb = strtol(v, NULL, 10);
	else if (strcmp(a, "--workload") == 0 && c->nonly < BENCH_WORKLOADS_MAX && known_workload(v))
		c->only[c->nonly++] = v;
	else
		return 0;
	return 2;
}

/* One option with its value v (NULL if none follows); returns how many
 * arguments it took, or 0 when it is not an option we know. */
static int parse_option(bench_config *c, const char *a, const char *v)
{
	if (strcmp(a, "--quick") == 0)
		c->quick = 1;
	else if (strcmp(a, "--compare") == 0)
		c->compare = 1;
	else if (strcmp(a, "--no-peers") == 0)
		c->skip_peers = 1;
	else if (strcmp(a, "--in-service") == 0)
		c->in_service = 1;
	else
		return v ? parse_valued(c, a, v) : 0;
	return 1;
}

/* Options left at zero take their defaults, full or --quick. */
static void set_defaults(bench_config *c)
{
	if (!c->rows)
		c->rows = c->quick ? ROWS_QUICK : ROWS_FULL;
	if (!c->repeat)
		c->repeat = c->quick ? 1 : REPEAT_FULL;
	if (!c->device_bytes)
		c->device_bytes = c->quick ? DEVICE_BYTES_QUICK : DEVICE_BYTES_FULL;
	if (c->latency_rate == 0)
		c->latency_rate = LATENCY_RATE;
	if (c->latency_seconds == 0)
		c->latency_seconds = c->quick ? LATENCY_SECONDS_QUICK : LATENCY_SECONDS_FULL;
	if (!c->latency_flush_size)
		c->latency_flush_size = LATENCY_FLUSH_SIZE;
	if (c->latency_merge_delay < 0)
		c->latency_merge_delay = (int64_t)(LATENCY_MERGE_DELAY_S * 1e9);
	if (c->block_cache_mb < 0 && !c->in_service)
		c->block_cache_mb = QUERY_BLOCK_CACHE_MB;
	if (!c->sustained_rows)
		c->sustained_rows = c->quick ? SUSTAINED_ROWS_QUICK : SUSTAINED_ROWS_FULL;
	if (!c->rollup_rows)
		c->rollup_rows = c->quick ? ROLLUP_ROWS_QUICK : ROLLUP_ROWS_FULL;
	if (!c->query_rows)
		c->query_rows = c->hosts *
		                (size_t)((c->quick ? QUERY_SPAN_QUICK_NS : QUERY_SPAN_FULL_NS) /
		                         BENCH_STEP_NS);
}

/* --print-queries or --print-promql TYPE N SEED at argv[i]: 4 (the
 * arguments it took), or 0. */
static int parse_print(bench_config *c, int argc, char **argv, int i)
{
	int promql = strcmp(argv[i], "--print-promql") == 0;
	char *end;
	if ((!promql && strcmp(argv[i], "--print-queries") != 0) || i + 3 >= argc)
		return 0;
	c->print_type = argv[i + 1];
	c->print_n = strtoul(argv[i + 2], &end, 10);
	if (*end)
		usage();
	c->print_seed = strtoull(argv[i + 3], &end, 0);
	if (*end)
		usage();
	c->print_promql = promql;
	return 4;
}

static void parse_args(int argc, char **argv, bench_config *c)
{
	for (int i = 1; i < argc;) {
		int took = parse_print(c, argc, argv, i);
		if (!took)
			took = parse_option(c, argv[i], i + 1 < argc ? argv[i + 1] : NULL);
		if (!took)
			usage();
		i += took;
	}
	set_defaults(c);
	if (!c->rows || !c->hosts || !c->batch || c->repeat < 1 || c->latency_rate <= 0 ||
	    c->latency_seconds <= 0 || c->latency_flush_size <= 0 || !c->query_rows)
		usage();
}

/* Whether any wanted workload inserts the rows made up front. */
static int wants_rows(const bench_config *c)
{
	return bench_wanted(c, "absorb") || bench_wanted(c, "absorb_readers") ||
	       bench_wanted(c, "flush") || bench_wanted(c, "bytes_per_row");
}

int main(int argc, char **argv)
{
	bench_config c = {.hosts = 1000, .batch = 512, .latency_merge_delay = -1, .block_cache_mb = -1,
	                  .tsbs_path = TSBS_DEFAULT_PATH};
	bench_rows r = {0};
	int failed = 0;
	parse_args(argc, argv, &c);
	if (c.print_type)
		return bench_tsbsq_print(c.tsbs_path, c.print_type, c.print_n, c.print_seed,
		                         c.print_promql) < 0 ? 1 : 0;
	if (wants_rows(&c))
		bench_rows_make(&r, c.rows, c.hosts, c.batch, bench_wall_ns());
	if (bench_wanted(&c, "absorb"))
		workload_absorb(&c, &r);
	if (bench_wanted(&c, "absorb_readers"))
		workload_absorb_readers(&c, &r);
	if (bench_wanted(&c, "device"))
		bench_workload_device(&c);
	if (bench_wanted(&c, "flush"))
		bench_workload_flush(&c, &r);
	if (bench_wanted(&c, "bytes_per_row"))
		bench_workload_bytes_per_row(&c, &r);
	bench_rows_free(&r); /* the query workloads make rows of their own */
	if (bench_wanted(&c, "absorb_sweep"))
		bench_workload_absorb_sweep(&c);
	if (bench_workload_query(&c) < 0)
		failed = 1;
	if (bench_wanted(&c, "latency"))
		bench_workload_latency(&c);
	if (bench_wanted(&c, "ingest"))
		bench_workload_ingest(&c);
#ifdef HAVE_WIRE
	if (bench_wanted(&c, "ingest_http") && bench_workload_ingest_http(&c) < 0)
		failed = 1;
	if (bench_wanted(&c, "remote_write") && bench_workload_remote_write(&c) < 0)
		failed = 1;
#endif
	if (bench_wanted(&c, "fuse_cat"))
		bench_workload_fuse(&c);
	if (bench_wanted(&c, "sql"))
		bench_workload_sql(&c);
	if (bench_wanted(&c, "first_row") && bench_workload_first_row(&c) < 0)
		failed = 1;
	if (bench_wanted(&c, "tsbs") && bench_workload_tsbs(&c) < 0)
		failed = 1;
	if (bench_wanted(&c, "corrections") && bench_workload_corrections(&c) < 0)
		failed = 1;
	if (bench_wanted(&c, "rollups") && bench_workload_rollups(&c) < 0)
		failed = 1;
	if (bench_wanted(&c, "standby") && bench_workload_standby(&c) < 0)
		failed = 1;
	if (bench_wanted(&c, "sustained"))
		bench_workload_sustained(&c);
#ifdef HAVE_WIRE
	if (bench_wanted(&c, "tsbs_queries") && bench_workload_tsbs_queries(&c) < 0)
		failed = 1;
#endif
	if (c.compare)
		bench_compare();
	return failed;
}
