/*
 * rows.c -- the reference workload's rows, timing, result printing and
 * the --compare summary of tsstore-bench.
 *
 * Rows come from a bench_stream: row i is host i % H at ts start + (i / H)
 * * 10 s with ten pseudo-random values below 100 000 from one xorshift
 * sequence, so bench_rows_make (all rows in memory, for the peers too) and
 * a stream (the latency workload, rows made as they are inserted) yield the
 * very same rows.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"

#define VALUE_RANGE 100000           /* values are in [0, VALUE_RANGE) */
#define XORSHIFT_SEED UINT64_C(0x9E3779B97F4A7C15)

void bench_encode_key(unsigned char *k, uint8_t *klen, const char *host, int64_t ts)
{
	size_t n = strlen(host);
	uint64_t u = (uint64_t)ts ^ (UINT64_C(1) << 63);
	memcpy(k, host, n);
	k[n] = 0x00;
	k[n + 1] = 0x01;
	for (int i = 0; i < 8; i++)
		k[n + 2 + i] = (unsigned char)(u >> (56 - 8 * i));
	*klen = (uint8_t)(n + 10);
}

void bench_stream_init(bench_stream *s, size_t n, size_t hosts, int64_t now)
{
	size_t steps = (n + hosts - 1) / hosts;
	memset(s, 0, sizeof *s);
	s->hosts = hosts;
	s->x = XORSHIFT_SEED;
	s->start_ns = (now - (int64_t)steps * BENCH_STEP_NS) / BENCH_STEP_NS * BENCH_STEP_NS;
	s->host = calloc(hosts, sizeof *s->host);
	if (!s->host) {
		fprintf(stderr, "tsstore-bench: out of memory for %zu hosts\n", hosts);
		exit(1);
	}
	for (size_t h = 0; h < hosts; h++)
		snprintf(s->host[h], sizeof s->host[h], "host_%u", (unsigned)(h % 1000000000u));
}

void bench_stream_next(bench_stream *s, ts_value *v, int64_t *values)
{
	size_t i = s->next++;
	v[0] = ts_string(s->host[i % s->hosts]);
	v[1] = ts_timestamp(s->start_ns + (int64_t)(i / s->hosts) * BENCH_STEP_NS);
	for (int c = 0; c < BENCH_VALUES; c++) {
		v[2 + c] = ts_int64((int64_t)(bench_xorshift(&s->x) % VALUE_RANGE));
		if (values)
			values[c] = v[2 + c].v.i;
	}
}

void bench_stream_free(bench_stream *s)
{
	free(s->host);
	memset(s, 0, sizeof *s);
}

void bench_rows_make(bench_rows *r, size_t n, size_t hosts, size_t batch, int64_t now)
{
	bench_stream s;
	memset(r, 0, sizeof *r);
	bench_stream_init(&s, n, hosts, now);
	r->n = n;
	r->hosts = hosts;
	r->batch = batch;
	r->start_ns = s.start_ns;
	r->host = s.host; /* the rows' strings point here: r owns it now */
	r->vals = calloc(n * BENCH_COLUMNS, sizeof *r->vals);
	r->key = calloc(n, sizeof *r->key);
	r->klen = calloc(n, sizeof *r->klen);
	r->value = calloc(n, sizeof *r->value);
	if (!r->vals || !r->key || !r->klen || !r->value) {
		fprintf(stderr, "tsstore-bench: out of memory for %zu rows\n", n);
		exit(1);
	}
	for (size_t i = 0; i < n; i++) {
		ts_value *v = &r->vals[i * BENCH_COLUMNS];
		bench_stream_next(&s, v, r->value[i]);
		bench_encode_key(r->key[i], &r->klen[i], r->host[i % hosts], v[1].v.i);
	}
}

void bench_rows_free(bench_rows *r)
{
	free(r->host);
	free(r->vals);
	free(r->key);
	free(r->klen);
	free(r->value);
	memset(r, 0, sizeof *r);
}

void *bench_calloc(size_t n, size_t size, const char *workload)
{
	void *p = calloc(n ? n : 1, size);
	if (!p) {
		fprintf(stderr, "tsstore-bench: %s: out of memory\n", workload);
		exit(1);
	}
	return p;
}

int bench_cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

double bench_median(double *v, size_t n)
{
	qsort(v, n, sizeof *v, bench_cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

double bench_seconds(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

double bench_cpu_seconds(void)
{
	struct rusage u;
	getrusage(RUSAGE_SELF, &u);
	return (double)u.ru_utime.tv_sec + (double)u.ru_stime.tv_sec +
	       ((double)u.ru_utime.tv_usec + (double)u.ru_stime.tv_usec) / 1e6;
}

double bench_machine_cpu_seconds(void)
{
	unsigned long long v[8] = {0}; /* user nice system idle iowait irq softirq steal */
	FILE *f = fopen("/proc/stat", "r");
	if (!f)
		return 0;
	int n = fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3],
	               &v[4], &v[5], &v[6], &v[7]);
	fclose(f);
	if (n < 4)
		return 0;
	unsigned long long busy = v[0] + v[1] + v[2] + v[5] + v[6] + v[7];
	return (double)busy / (double)sysconf(_SC_CLK_TCK);
}

int64_t bench_wall_ns(void)
{
	struct timespec t;
	const char *frozen = getenv("TSSTORE_NOW");
	int64_t ns;
	if (frozen && *frozen && ts_time_parse(frozen, &ns) == 0)
		return ns;
	clock_gettime(CLOCK_REALTIME, &t);
	return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

int64_t bench_now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

/* Results kept for --compare; the latency workload's per-second lines
 * are not kept (see bench_result). */
#define RESULTS_MAX 2048
#define TARGETS_MAX 256

static struct result {
	char workload[48], engine[32], metric[48];
	char point[48]; /* a sweep's point, "" for none (bench_result_point) */
	double value;
} results[RESULTS_MAX];
static int nresults;

static struct target {
	char workload[48], what[160], op[3];
	double value, goal;
	int ceiling; /* a ceiling of a target (bench_ceiling), not a target */
} targets[TARGETS_MAX];
static int ntargets;

void bench_result(const char *workload, const char *engine, const char *metric,
                  double value, const char *unit, const char *params)
{
	bench_result_point(workload, NULL, engine, metric, value, unit, params);
}

void bench_result_point(const char *workload, const char *point, const char *engine,
                        const char *metric, double value, const char *unit, const char *params)
{
	printf("{\"workload\":\"%s\",\"engine\":\"%s\",\"metric\":\"%s\",\"value\":%.6g,"
	       "\"unit\":\"%s\",\"params\":{%s}}\n",
	       workload, engine, metric, value, unit, params ? params : "");
	fflush(stdout);
	/* a timeline point (params naming a "second") is not compared */
	if (params && strstr(params, "\"second\":"))
		return;
	if (nresults == RESULTS_MAX) {
		fprintf(stderr, "tsstore-bench: more than %d results: %s %s %s left out of --compare\n",
		        RESULTS_MAX, workload, engine, metric);
	} else {
		struct result *r = &results[nresults++];
		snprintf(r->workload, sizeof r->workload, "%s", workload);
		snprintf(r->engine, sizeof r->engine, "%s", engine);
		snprintf(r->metric, sizeof r->metric, "%s", metric);
		snprintf(r->point, sizeof r->point, "%s", point ? point : "");
		r->value = value;
	}
}

void bench_error(const char *workload, const char *engine, const char *call, int code)
{
	printf("{\"workload\":\"%s\",\"engine\":\"%s\",\"error\":\"%s\",\"call\":\"%s\"}\n",
	       workload, engine, ts_errname(code), call);
	fflush(stdout);
}

int bench_tsstore_failed(const char *workload, const char *call, int rc, int *failed)
{
	fprintf(stderr, "tsstore-bench: %s: %s failed: %s: %s\n", workload, call, ts_errname(rc),
	        ts_errmsg(NULL));
	bench_error(workload, "tsstore", call, rc);
	*failed = 1;
	return -1;
}

/* Remember a target (ceiling 0) or the ceiling of one (ceiling 1). */
static void remember(const char *workload, const char *what, double value, const char *op,
                     double goal, int ceiling)
{
	if (ntargets == TARGETS_MAX) {
		fprintf(stderr, "tsstore-bench: more than %d targets: \"%s\" left out of --compare\n",
		        TARGETS_MAX, what);
		return;
	}
	struct target *t = &targets[ntargets++];
	snprintf(t->workload, sizeof t->workload, "%s", workload);
	snprintf(t->what, sizeof t->what, "%s", what);
	snprintf(t->op, sizeof t->op, "%s", op);
	t->value = value;
	t->goal = goal;
	t->ceiling = ceiling;
}

void bench_target(const char *workload, const char *what, double value, const char *op,
                  double goal)
{
	remember(workload, what, value, op, goal, 0);
}

void bench_ceiling(const char *workload, const char *what, double value, const char *op,
                   double goal)
{
	remember(workload, what, value, op, goal, 1);
}

/* A target says whether it is met; a ceiling, whether its target could
 * be met at all on this machine. */
static void compare_targets(void)
{
	for (int i = 0; i < ntargets; i++) {
		const struct target *t = &targets[i];
		int met = strcmp(t->op, "<=") == 0 ? t->value <= t->goal : t->value >= t->goal;
		printf("{\"workload\":\"%s\",\"%s\":\"%s\",\"value\":%.3f,\"goal\":\"%s %.3g\","
		       "\"%s\":%s}\n", t->workload, t->ceiling ? "ceiling" : "target", t->what,
		       t->value, t->op, t->goal, t->ceiling ? "reachable" : "met",
		       met ? "true" : "false");
	}
}

void bench_compare(void)
{
	for (int i = 0; i < nresults; i++) {
		const struct result *a = &results[i];
		if (strcmp(a->engine, "tsstore") != 0)
			continue;
		for (int j = 0; j < nresults; j++) {
			const struct result *b = &results[j];
			if (j == i || strcmp(b->workload, a->workload) != 0 ||
			    strcmp(b->metric, a->metric) != 0 || strcmp(b->point, a->point) != 0 ||
			    b->value == 0)
				continue;
			printf("{\"workload\":\"%s\",%s%s\"metric\":\"%s\",\"ratio\":\"tsstore/%s\","
			       "\"value\":%.3f}\n", a->workload, a->point, *a->point ? "," : "", a->metric,
			       b->engine, a->value / b->value);
		}
	}
	compare_targets();
}
