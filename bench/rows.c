/*
 * rows.c -- the reference workload's rows, timing and result printing
 * for tsstore-bench.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench.h"

#define STEP_NS INT64_C(10000000000) /* every host reports every 10 s */

static void encode_key(unsigned char *k, uint8_t *klen, const char *host, int64_t ts)
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

void bench_rows_make(bench_rows *r, size_t n, size_t hosts, size_t batch, int64_t now)
{
	const size_t w = 2 + BENCH_VALUES;
	memset(r, 0, sizeof *r);
	r->n = n;
	r->hosts = hosts;
	r->batch = batch;
	r->host = calloc(hosts, sizeof *r->host);
	r->vals = calloc(n * w, sizeof *r->vals);
	r->key = calloc(n, sizeof *r->key);
	r->klen = calloc(n, sizeof *r->klen);
	r->value = calloc(n, sizeof *r->value);
	if (!r->host || !r->vals || !r->key || !r->klen || !r->value) {
		fprintf(stderr, "tsstore-bench: out of memory for %zu rows\n", n);
		exit(1);
	}
	size_t steps = (n + hosts - 1) / hosts;
	r->start_ns = (now - (int64_t)steps * STEP_NS) / STEP_NS * STEP_NS;
	for (size_t h = 0; h < hosts; h++)
		snprintf(r->host[h], sizeof r->host[h], "host_%u", (unsigned)(h % 1000000000u));
	uint64_t x = 0x9E3779B97F4A7C15u;
	for (size_t i = 0; i < n; i++) {
		size_t h = i % hosts;
		int64_t ts = r->start_ns + (int64_t)(i / hosts) * STEP_NS;
		ts_value *v = &r->vals[i * w];
		v[0] = ts_string(r->host[h]);
		v[1] = ts_timestamp(ts);
		for (int c = 0; c < BENCH_VALUES; c++) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			r->value[i][c] = (int64_t)(x % 100000);
			v[2 + c] = ts_int64(r->value[i][c]);
		}
		encode_key(r->key[i], &r->klen[i], r->host[h], ts);
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

double bench_seconds(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

#define RESULTS_MAX 256

static struct result {
	char workload[48], engine[32], metric[48];
	double value;
} results[RESULTS_MAX];
static int nresults;

void bench_result(const char *workload, const char *engine, const char *metric,
                  double value, const char *unit, const char *params)
{
	printf("{\"workload\":\"%s\",\"engine\":\"%s\",\"metric\":\"%s\",\"value\":%.6g,"
	       "\"unit\":\"%s\",\"params\":{%s}}\n",
	       workload, engine, metric, value, unit, params ? params : "");
	fflush(stdout);
	if (nresults < RESULTS_MAX) {
		struct result *r = &results[nresults++];
		snprintf(r->workload, sizeof r->workload, "%s", workload);
		snprintf(r->engine, sizeof r->engine, "%s", engine);
		snprintf(r->metric, sizeof r->metric, "%s", metric);
		r->value = value;
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
			    strcmp(b->metric, a->metric) != 0 || b->value == 0)
				continue;
			printf("{\"workload\":\"%s\",\"metric\":\"%s\",\"ratio\":\"tsstore/%s\","
			       "\"value\":%.3f}\n", a->workload, a->metric, b->engine, a->value / b->value);
		}
	}
}
