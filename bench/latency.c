/*
 * latency.c -- the latency workload: insert latency under a sustained,
 * paced load, with background merges off and on (Done-when (3): SILK's
 * claim that merges need not disturb the clients' tail latency).
 *
 * Open loop: batch k of c->batch reference rows is due k * batch / rate
 * seconds after the start, whatever became of the batches before it.  The
 * writer makes the batch's rows (off the clock), sleeps until it is due,
 * calls ts_insert and records how long the call took.  A call that
 * overruns makes later batches start late; that lateness is recorded too
 * ("response": from when a batch was due to when its call returned), so a
 * stall cannot hide behind the schedule (coordinated omission).  The rows
 * come from a bench_stream: the same reference rows as the other
 * workloads, as many as the run needs, never all in memory.
 *
 * The load runs twice, each on a fresh table, for c->latency_seconds:
 * merges off (TS_OPEN_NOMERGE), then merges on; both with a small
 * flush_size, a short flush_age and a short merge_delay, so that flushes
 * (and, in the second run, merges) happen all along.  Per second of the
 * schedule it prints p50, p99 and max of the call latencies and the page
 * faults the inserting thread took inside its calls (the log's pages it
 * was first to write: the segment preparer is there to spare it those);
 * then per run
 * the p99 of the whole run, the median and the max of the per-second
 * p99s, the table's counters, and the ratio Done-when (3) judges: the max
 * per-second p99 with merges on over the whole-run p99 with merges off.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "bench.h"

#define LATENCY_TARGET 2.0 /* max per-second p99 (merges on) over p99 (off), at most */
#define NS_PER_SEC INT64_C(1000000000)
#define FLUSH_AGE_NS (10 * NS_PER_SEC) /* trees of past periods flush soon */

/* The counters reported as results (every counter also goes on the
 * stats line): those whose names hold one of these words, whatever the
 * library version names them. */
static const char *const counter_words[] = {
	"flush", "merge", "stall", "throttl", "backlog", "write_amplification", "tablets",
};

/* One run of the paced load. */
struct run {
	const char *engine; /* tsstore_merge_off or tsstore_merge_on */
	int merge;
	size_t nbatches;
	double interval;    /* ns between batches */
	int64_t *call;      /* ns each ts_insert took */
	int64_t *faults;    /* page faults (minor and major) the writer took in each */
	int64_t *response;  /* ns from when each batch was due to its return */
	size_t behind;      /* batches that started more than an interval late */
	double seconds;     /* wall time of the whole load */
	double cpu;         /* process CPU seconds during the load */
	double others;      /* CPU seconds other processes took meanwhile */
	int64_t *second_p99; /* per-second p99s, sorted; nsec of them */
	size_t nsec;
};

static void die(const char *what)
{
	fprintf(stderr, "tsstore-bench: latency: %s: %s\n", what, ts_errmsg(NULL));
	exit(1);
}

static void sleep_until(int64_t ns)
{
	struct timespec t = {(time_t)(ns / NS_PER_SEC), (long)(ns % NS_PER_SEC)};
	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &t, NULL) != 0)
		;
}

static ts_table *open_table(const bench_config *c, int merge, const char *dir, ts_db **db)
{
	ts_options o;
	ts_options_init(&o);
	o.flags = TS_OPEN_CREATE | (merge ? 0 : TS_OPEN_NOMERGE);
	o.sync = TS_SYNC_NONE;
	o.flush_size = c->latency_flush_size;
	o.flush_age = FLUSH_AGE_NS;
	o.merge_delay = c->latency_merge_delay;
	return bench_table_open(dir, &o, db);
}

/* Insert run->nbatches batches on schedule, recording each call. */
static void paced_load(const bench_config *c, ts_table *t, struct run *run)
{
	bench_stream s;
	ts_value *rows = malloc(c->batch * BENCH_COLUMNS * sizeof *rows);
	if (!rows)
		die("out of memory");
	bench_stream_init(&s, run->nbatches * c->batch, c->hosts, bench_wall_ns());
	double cpu0 = bench_cpu_seconds(), all0 = bench_machine_cpu_seconds();
	int64_t t0 = bench_now_ns();
	for (size_t k = 0; k < run->nbatches; k++) {
		for (size_t i = 0; i < c->batch; i++)
			bench_stream_next(&s, &rows[i * BENCH_COLUMNS], NULL);
		int64_t due = t0 + (int64_t)((double)k * run->interval);
		sleep_until(due);
		struct rusage u0, u1;
		getrusage(RUSAGE_THREAD, &u0); /* outside the timed call */
		int64_t start = bench_now_ns();
		if (ts_insert(t, rows, c->batch) < 0)
			die("insert");
		int64_t end = bench_now_ns();
		getrusage(RUSAGE_THREAD, &u1);
		run->faults[k] = (u1.ru_minflt - u0.ru_minflt) + (u1.ru_majflt - u0.ru_majflt);
		run->call[k] = end - start;
		run->response[k] = end - due;
		run->behind += start - due > (int64_t)run->interval;
	}
	run->seconds = (double)(bench_now_ns() - t0) / (double)NS_PER_SEC;
	run->cpu = bench_cpu_seconds() - cpu0;
	run->others = bench_machine_cpu_seconds() - all0 - run->cpu;
	bench_stream_free(&s);
	free(rows);
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return x < y ? -1 : x > y;
}

/* The q-quantile (nearest rank) of v[0..n), which this sorts. */
static int64_t quantile(int64_t *v, size_t n, double q)
{
	if (n == 0)
		return 0;
	qsort(v, n, sizeof *v, cmp_i64);
	size_t rank = (size_t)ceil(q * (double)n);
	return v[rank ? rank - 1 : 0];
}

static void params(char *buf, size_t size, const bench_config *c, const char *extra)
{
	snprintf(buf, size,
	         "\"rate\":%.0f,\"seconds\":%.0f,\"hosts\":%zu,\"batch\":%zu,\"flush_size\":%lld,"
	         "\"merge_delay_s\":%.1f,\"sync\":\"none\"%s%s",
	         c->latency_rate, c->latency_seconds, c->hosts, c->batch,
	         (long long)c->latency_flush_size, (double)c->latency_merge_delay / (double)NS_PER_SEC,
	         extra ? "," : "", extra ? extra : "");
}

/* Print the per-second timeline; fills p99[s] for each second s and
 * returns how many seconds there are. */
static size_t timeline(const bench_config *c, const struct run *run, int64_t *p99)
{
	size_t nsec = 0, k = 0;
	int64_t *slice = malloc(run->nbatches * sizeof *slice);
	char p[320], extra[64];
	if (!slice)
		die("out of memory");
	while (k < run->nbatches) {
		size_t n = 0;
		int64_t faults = 0;
		double end = (double)(nsec + 1) * (double)NS_PER_SEC;
		for (; k < run->nbatches && (double)k * run->interval < end; k++) {
			slice[n++] = run->call[k];
			faults += run->faults[k];
		}
		snprintf(extra, sizeof extra, "\"second\":%zu,\"batches\":%zu", nsec, n);
		params(p, sizeof p, c, extra);
		p99[nsec] = quantile(slice, n, 0.99);
		bench_result("latency", run->engine, "p50_ns", (double)quantile(slice, n, 0.50), "ns", p);
		bench_result("latency", run->engine, "p99_ns", (double)p99[nsec], "ns", p);
		bench_result("latency", run->engine, "max_ns", n ? (double)slice[n - 1] : 0, "ns", p);
		bench_result("latency", run->engine, "page_faults", (double)faults, "count", p);
		nsec++;
	}
	free(slice);
	return nsec;
}

/* What the whole run comes to. */
struct summary {
	int64_t p50_all, p99_all, max_all;
	int64_t max_second_p99, median_second_p99;
	int64_t p99_response;
};

/* Print the timeline and fill *sum and run->second_p99; sorts run->call
 * and run->response. */
static void summarise(const bench_config *c, struct run *run, struct summary *sum)
{
	int64_t *p99 = malloc((run->nbatches + 1) * sizeof *p99);
	if (!p99)
		die("out of memory");
	size_t nsec = timeline(c, run, p99); /* while run->call is in batch order */
	sum->median_second_p99 = quantile(p99, nsec, 0.50);
	sum->max_second_p99 = p99[nsec ? nsec - 1 : 0]; /* quantile sorted them */
	sum->p99_all = quantile(run->call, run->nbatches, 0.99);
	sum->p50_all = quantile(run->call, run->nbatches, 0.50);
	sum->max_all = run->call[run->nbatches - 1];
	sum->p99_response = quantile(run->response, run->nbatches, 0.99);
	run->second_p99 = p99;
	run->nsec = nsec;
}

/* Seconds of run whose p99 passed bound. */
static size_t seconds_over(const struct run *run, double bound)
{
	size_t n = 0;
	for (size_t i = 0; i < run->nsec; i++)
		n += (double)run->second_p99[i] > bound;
	return n;
}

static void print_summary(const bench_config *c, const struct run *run, const struct summary *sum)
{
	const char *e = run->engine;
	char p[320];
	params(p, sizeof p, c, NULL);
	bench_result("latency", e, "p50_all_ns", (double)sum->p50_all, "ns", p);
	bench_result("latency", e, "p99_all_ns", (double)sum->p99_all, "ns", p);
	bench_result("latency", e, "max_all_ns", (double)sum->max_all, "ns", p);
	bench_result("latency", e, "median_second_p99_ns", (double)sum->median_second_p99, "ns", p);
	bench_result("latency", e, "max_second_p99_ns", (double)sum->max_second_p99, "ns", p);
	/* how far the worst second strays from the run's own p99 */
	bench_result("latency", e, "max_second_p99_over_p99_all",
	             (double)sum->max_second_p99 / (double)sum->p99_all, "ratio", p);
	bench_result("latency", e, "p99_response_ns", (double)sum->p99_response, "ns", p);
	bench_result("latency", e, "batches_behind", (double)run->behind, "batches", p);
	bench_result("latency", e, "achieved_rows_per_sec",
	             (double)(run->nbatches * c->batch) / run->seconds, "rows/s", p);
	bench_result("latency", e, "cpu_cores_busy", run->cpu / run->seconds, "cores", p);
	/* a shared machine: how much the rest of it ran meanwhile */
	bench_result("latency", e, "other_cores_busy", run->others / run->seconds, "cores", p);
}

static int reported(const char *name)
{
	for (size_t i = 0; i < sizeof counter_words / sizeof counter_words[0]; i++)
		if (strstr(name, counter_words[i]))
			return 1;
	return 0;
}

static int ends_with(const char *s, const char *end)
{
	size_t n = strlen(s), k = strlen(end);
	return n >= k && strcmp(s + n - k, end) == 0;
}

static const char *unit_of(const char *name)
{
	if (ends_with(name, "_bytes"))
		return "bytes";
	if (ends_with(name, "_ns"))
		return "ns";
	return ends_with(name, "_milli") ? "thousandths" : "count";
}

/* The counters about flushes and merges as results, then every counter
 * on one line. */
static void report_counters(const bench_config *c, ts_table *t, const char *engine)
{
	ts_stat st[TS_STATS_MAX];
	char p[320];
	int n;
	if (ts_table_stats(t, st, TS_STATS_MAX, &n) < 0)
		die("stats");
	params(p, sizeof p, c, NULL);
	for (int i = 0; i < n; i++)
		if (reported(st[i].name))
			bench_result("latency", engine, st[i].name, (double)st[i].value, unit_of(st[i].name),
			             p);
	bench_table_stats_print(t, "latency", engine);
}

static void run_once(const bench_config *c, struct run *run, struct summary *sum)
{
	char *dir = bench_tmpdir();
	ts_db *db;
	run->interval = (double)c->batch / c->latency_rate * (double)NS_PER_SEC;
	run->nbatches = (size_t)(c->latency_seconds * (double)NS_PER_SEC / run->interval);
	if (run->nbatches == 0)
		die("no whole batch fits in the run");
	run->call = malloc(run->nbatches * sizeof *run->call);
	run->response = malloc(run->nbatches * sizeof *run->response);
	run->faults = malloc(run->nbatches * sizeof *run->faults);
	if (!run->call || !run->response || !run->faults)
		die("out of memory");
	bench_settle();
	ts_table *t = open_table(c, run->merge, dir, &db);
	paced_load(c, t, run);
	report_counters(c, t, run->engine);
	ts_table_close(t);
	ts_close(db);
	bench_rmdir(dir);
	summarise(c, run, sum);
	print_summary(c, run, sum);
	free(run->call);
	free(run->response);
	free(run->faults);
}

void bench_workload_latency(const bench_config *c)
{
	struct run off = {.engine = "tsstore_merge_off", .merge = 0};
	struct run on = {.engine = "tsstore_merge_on", .merge = 1};
	struct summary s_off, s_on;
	char p[320];
	run_once(c, &off, &s_off);
	run_once(c, &on, &s_on);
	params(p, sizeof p, c, NULL);
	double worst = (double)s_on.max_second_p99 / (double)s_off.p99_all;
	double bound = LATENCY_TARGET * (double)s_off.p99_all;
	bench_result("latency", "tsstore", "max_second_p99_on_over_p99_off", worst, "ratio", p);
	bench_result("latency", "tsstore", "median_second_p99_on_over_off",
	             (double)s_on.median_second_p99 / (double)s_off.median_second_p99, "ratio", p);
	bench_result("latency", "tsstore", "max_second_p99_on_over_off",
	             (double)s_on.max_second_p99 / (double)s_off.max_second_p99, "ratio", p);
	/* the seconds past the bound, in either run: merges' share of them */
	bench_result("latency", off.engine, "seconds_over_bound", (double)seconds_over(&off, bound),
	             "seconds", p);
	bench_result("latency", on.engine, "seconds_over_bound", (double)seconds_over(&on, bound),
	             "seconds", p);
	bench_target("latency", "max per-second p99 (merges on) / p99 (merges off)", worst, "<=",
	             LATENCY_TARGET);
	free(off.second_p99);
	free(on.second_p99);
}
