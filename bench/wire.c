/*
 * wire.c -- the HTTP ingest workloads of issue 26: the TSBS cpu-only
 * file of ../shared/data (a prefix with --quick) written over loopback
 * HTTP by the same loader (ingest.c's bench_ingest_send: 2 connections,
 * one request in flight on each, every request encoded before the clock
 * starts) into real servers started here on temporary directories and
 * free loopback ports:
 *
 *   ingest_http   influx line protocol, POST /write, 512 lines a request:
 *                 tsstored (--listen http:...), VictoriaMetrics and
 *                 InfluxDB 1.x (influxd with a config file of our own);
 *                 rows/s
 *   remote_write  Prometheus remote write 1.0, POST /api/v1/write: every
 *                 field of every line a sample (metric name
 *                 measurement_field, e.g. cpu_usage_user; labels the ten
 *                 tags; the line's timestamp in ms), one series of one
 *                 sample each, 5120 samples a request (the 512 lines x
 *                 10 fields of a line protocol request), protobuf packed
 *                 by protoc-c's code from wire/remote.proto and
 *                 snappy-compressed, with Prometheus' headers:
 *                 tsstored and VictoriaMetrics; samples/s; and the
 *                 ceilings: decoding alone, as tsstored decodes and as
 *                 it did before the decoding view (decode_ceiling), and
 *                 the library's insert of the mapped rows alone
 *                 (store_ceiling)
 *
 * Each engine runs --repeat times on a fresh server and directory, the
 * engines taking turns in an order that alternates (forward on even
 * runs, backward on odd ones), so that a noisy spell of the shared
 * machine and a warm page cache favour no one.  Each figure is the
 * median of the runs, with the runs' min and max in params ("runs",
 * "min", "max"): rate, p50 and p99 request latency, peak RSS (VmHWM),
 * the server's CPU time (user + system) per row or sample.  The targets
 * (tsstored >= 2x VictoriaMetrics and >= 5x InfluxDB in rows/s, peak RSS
 * < 256 MB; >= 2x VictoriaMetrics in samples/s) and the --compare ratio
 * lines are on the medians.  After each tsstored run, the tables its
 * load created and the disk its directory takes are reported too.
 * tsstored runs with its defaults, or --log-segment-size as the bench
 * was given it (each table made by the load keeps its own segments
 * mapped: ten tables for remote write).
 */
#include <dirent.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <protobuf-c/protobuf-c.h>
#include <snappy-c.h>

#include "bench.h"
#include "remote.pb-c.h"
#include "wire/pbmem.h"
#include "wire/promwrite.h"

typedef Tsstore__Remote__Label Label;
typedef Tsstore__Remote__Sample Sample;
typedef Tsstore__Remote__TimeSeries Series;
typedef Tsstore__Remote__WriteRequest WriteRequest;

#define WIRE_RUNS_MAX 32
#define WIRE_SAMPLES (BENCH_INGEST_BATCH * BENCH_TSBS_FIELDS) /* per remote write */
#define WIRE_LABELS (1 + BENCH_TSBS_TAGS)                    /* __name__, the tags */
#define INFLUX_DB BENCH_INFLUX_DB
#define INFLUXD "/usr/bin/influxd"
#define VICTORIA "/usr/bin/victoria-metrics"

/* One run of one engine. */
struct run {
	double rate, p50_us, p99_us, rss_mb;
	double cpu_us; /* the server's CPU time (user + system) per item, µs */
};

/* An engine: how it starts, where its requests go. */
struct engine {
	const char *name;
	int (*start)(const char *dir, int port, pid_t *pid);
	bench_batch *batches; /* encoded for it (shared with another engine when equal) */
	size_t nb;
	int owns;             /* batches are this engine's to free */
	struct run runs[WIRE_RUNS_MAX];
	int nruns;
	double tables, disk_mb; /* tsstored: after its last run */
	double stored;          /* tsstored: rows its last run stored (/metrics) */
};

/* Copy s[0..n) to *p and move *p past it. */
static void put(char **p, const void *s, size_t n)
{
	memcpy(*p, s, n);
	*p += n;
}

/* ---- the servers ---- */

/* --log-segment-size for tsstored (NULL: its default). */
static const char *segment_size;

/* Each start_* starts its server on dir and 127.0.0.1:port, ready to
 * take writes; *pid receives its pid.  0, or -1 (said on stderr). */
static int start_tsstored(const char *dir, int port, pid_t *pid)
{
	char exe[4096], listen[64];
	bench_daemon_path(exe, sizeof exe);
	snprintf(listen, sizeof listen, "http:127.0.0.1:%d", port);
	char *argv[] = {exe, "-d", (char *)dir, "--listen", listen, "--log-segment-size",
	                (char *)segment_size, NULL};
	if (!segment_size)
		argv[5] = NULL;
	return (*pid = bench_server_start(argv, port)) > 0 ? 0 : -1;
}

static int start_victoria(const char *dir, int port, pid_t *pid)
{
	char data[4200], addr[64];
	snprintf(data, sizeof data, "-storageDataPath=%s", dir);
	snprintf(addr, sizeof addr, "-httpListenAddr=127.0.0.1:%d", port);
	char *argv[] = {VICTORIA, data, addr, "-loggerLevel=ERROR", NULL};
	if (access(argv[0], X_OK) != 0) {
		fprintf(stderr, "wire: %s is not installed (make bench installs it)\n", argv[0]);
		return -1;
	}
	return (*pid = bench_server_start(argv, port)) > 0 ? 0 : -1;
}

/* influxd's configuration: everything under dir, HTTP on port, its RPC
 * (backup) service on another free loopback port, nothing phoned home,
 * no background services that would compete with the load; the WAL as
 * shipped (wal-fsync-delay 0: each write is fsync'd before its answer,
 * InfluxDB 1.x has no setting that answers before that). */
static int influx_config(const char *dir, int port, char *path, size_t size)
{
	int rpc = bench_free_port();
	snprintf(path, size, "%s/influxdb.conf", dir);
	FILE *f = fopen(path, "w");
	if (!f || rpc < 0) {
		if (f)
			fclose(f);
		return -1;
	}
	fprintf(f,
	        "reporting-disabled = true\n"
	        "bind-address = \"127.0.0.1:%d\"\n"
	        "[meta]\n  dir = \"%s/meta\"\n  logging-enabled = false\n"
	        "[data]\n  dir = \"%s/data\"\n  wal-dir = \"%s/wal\"\n"
	        "  query-log-enabled = false\n"
	        "[retention]\n  enabled = false\n"
	        "[shard-precreation]\n  enabled = false\n"
	        "[monitor]\n  store-enabled = false\n"
	        "[continuous_queries]\n  enabled = false\n"
	        "[http]\n  enabled = true\n  bind-address = \"127.0.0.1:%d\"\n"
	        "  log-enabled = false\n"
	        "[logging]\n  level = \"error\"\n",
	        rpc, dir, dir, dir, port);
	return fclose(f) == 0 ? 0 : -1;
}

static int start_influx(const char *dir, int port, pid_t *pid)
{
	static const char create[] =
		"POST /query?q=CREATE+DATABASE+" INFLUX_DB " HTTP/1.1\r\nHost: 127.0.0.1\r\n"
		"Content-Length: 0\r\nConnection: close\r\n\r\n";
	char conf[4200];
	if (access(INFLUXD, X_OK) != 0) {
		fprintf(stderr, "wire: %s is not installed (make bench installs it)\n", INFLUXD);
		return -1;
	}
	if (influx_config(dir, port, conf, sizeof conf) < 0)
		return -1;
	char *argv[] = {INFLUXD, "-config", conf, NULL};
	if ((*pid = bench_server_start(argv, port)) < 0)
		return -1;
	if (bench_http_call(port, create, sizeof create - 1) < 0) {
		fprintf(stderr, "wire: influxd did not create the database\n");
		return -1;
	}
	return 0;
}

/* ---- the requests ---- */

/* rows[0..n) as one line protocol request to target. */
static void encode_lines(const bench_tsbs_row *rows, size_t n, const char *target, bench_batch *b)
{
	size_t body = 0;
	for (size_t i = 0; i < n; i++)
		body += rows[i].len + 1;
	char *p = b->body = malloc(body + 256);
	p += sprintf(p, "POST %s HTTP/1.1\r\nHost: 127.0.0.1\r\n"
	             "Content-Type: text/plain; charset=utf-8\r\nContent-Length: %zu\r\n\r\n",
	             target, body);
	for (size_t i = 0; i < n; i++) {
		put(&p, rows[i].line, rows[i].len);
		*p++ = '\n';
	}
	b->len = (size_t)(p - b->body);
}

/* The tags in the order Prometheus sends labels: by name, bytes
 * ("__name__" first, '_' sorting before the lower-case letters). */
static int tag_order[BENCH_TSBS_TAGS];

/* qsort: tag indexes by their names. */
static int cmp_tag(const void *a, const void *b)
{
	return strcmp(bench_tsbs_tags[*(const int *)a], bench_tsbs_tags[*(const int *)b]);
}

/* Everything one WriteRequest points to, reused for every request. */
struct rw_arena {
	char names[BENCH_TSBS_FIELDS][128]; /* measurement_field */
	Series series[WIRE_SAMPLES], *pseries[WIRE_SAMPLES];
	Sample samples[WIRE_SAMPLES], *psamples[WIRE_SAMPLES];
	Label labels[WIRE_SAMPLES][WIRE_LABELS];
	Label *plabels[WIRE_SAMPLES][WIRE_LABELS];
};

/* s[0..n) as protobuf bytes, not copied. */
static ProtobufCBinaryData bytes(const char *s, size_t n)
{
	return (ProtobufCBinaryData){.len = n, .data = (uint8_t *)s};
}

/* Series k of the request: field f of row r, as a sample of its own. */
static void rw_series(struct rw_arena *a, size_t k, const bench_tsbs_row *r, int f)
{
	Series *s = &a->series[k];
	*s = (Series)TSSTORE__REMOTE__TIME_SERIES__INIT;
	a->samples[k] = (Sample)TSSTORE__REMOTE__SAMPLE__INIT;
	a->samples[k].value = (double)r->field[f];
	a->samples[k].timestamp = r->ts / 1000000; /* ms */
	a->psamples[k] = &a->samples[k];
	for (int l = 0; l < WIRE_LABELS; l++) {
		Label *lb = &a->labels[k][l];
		*lb = (Label)TSSTORE__REMOTE__LABEL__INIT;
		if (l == 0) {
			lb->name = bytes("__name__", 8);
			lb->value = bytes(a->names[f], strlen(a->names[f]));
		} else {
			int t = tag_order[l - 1];
			lb->name = bytes(bench_tsbs_tags[t], strlen(bench_tsbs_tags[t]));
			lb->value = bytes(r->tag[t], r->taglen[t]);
		}
		a->plabels[k][l] = lb;
	}
	s->n_labels = WIRE_LABELS;
	s->labels = a->plabels[k];
	s->n_samples = 1;
	s->samples = &a->psamples[k];
	a->pseries[k] = s;
}

/* rows[0..n) as one remote write request: packed, snappy'd, headed. */
static int encode_remote(struct rw_arena *a, const bench_tsbs_row *rows, size_t n,
                         bench_batch *b)
{
	WriteRequest w = TSSTORE__REMOTE__WRITE_REQUEST__INIT;
	size_t k = 0;
	for (size_t i = 0; i < n; i++)
		for (int f = 0; f < BENCH_TSBS_FIELDS; f++)
			rw_series(a, k++, &rows[i], f);
	w.n_timeseries = k;
	w.timeseries = a->pseries;
	size_t raw = tsstore__remote__write_request__get_packed_size(&w);
	size_t zlen = snappy_max_compressed_length(raw);
	uint8_t *packed = malloc(raw);
	char *z = malloc(zlen), *p;
	int rc = -1;
	if (!packed || !z)
		goto out;
	tsstore__remote__write_request__pack(&w, packed);
	if (snappy_compress((const char *)packed, raw, z, &zlen) != SNAPPY_OK)
		goto out;
	if (!(p = b->body = malloc(zlen + 512)))
		goto out;
	p += sprintf(p, "POST /api/v1/write HTTP/1.1\r\nHost: 127.0.0.1\r\n"
	             "User-Agent: tsstore-bench\r\nContent-Encoding: snappy\r\n"
	             "Content-Type: application/x-protobuf\r\n"
	             "X-Prometheus-Remote-Write-Version: 0.1.0\r\nContent-Length: %zu\r\n\r\n",
	             zlen);
	put(&p, z, zlen);
	b->len = (size_t)(p - b->body);
	rc = 0;
out:
	free(packed);
	free(z);
	return rc;
}

/* The requests of rows[0..n): line protocol to target, or (target NULL)
 * remote write.  NULL when out of memory. */
static bench_batch *make_requests(const bench_tsbs_row *rows, size_t n, const char *target,
                                  size_t *nb)
{
	struct rw_arena *a = target ? NULL : calloc(1, sizeof *a);
	bench_batch *b = calloc(n / BENCH_INGEST_BATCH + 2, sizeof *b);
	*nb = 0;
	if (!b || (!target && !a))
		goto fail;
	for (int f = 0; a && f < BENCH_TSBS_FIELDS; f++) {
		size_t m = (size_t)(memchr(rows[0].line, ',', rows[0].len) ?
		                    (const char *)memchr(rows[0].line, ',', rows[0].len) - rows[0].line : 3);
		snprintf(a->names[f], sizeof a->names[f], "%.*s_%s", (int)m, rows[0].line,
		         bench_tsbs_fields[f]);
	}
	for (size_t i = 0; i < n; i += BENCH_INGEST_BATCH) {
		size_t m = n - i < BENCH_INGEST_BATCH ? n - i : BENCH_INGEST_BATCH;
		if (target)
			encode_lines(rows + i, m, target, &b[*nb]);
		else if (encode_remote(a, rows + i, m, &b[*nb]) < 0)
			goto fail;
		++*nb;
	}
	free(a);
	return b;
fail:
	free(a);
	bench_batches_free(b, *nb);
	return NULL;
}

/* ---- runs ---- */

/* The tables (directories) under dir. */
static int count_tables(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;
	while (d && (e = readdir(d))) {
		char path[4400];
		struct stat st;
		snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
		if (e->d_name[0] != '.' && stat(path, &st) == 0 && S_ISDIR(st.st_mode))
			n++;
	}
	if (d)
		closedir(d);
	return n;
}

/* The disk space the files under dir take (du: allocated blocks, not
 * the files' lengths), MB; -1 when du fails. */
static double disk_mb(const char *dir)
{
	char cmd[4200];
	double kb = -1;
	snprintf(cmd, sizeof cmd, "du -sk '%s' 2>/dev/null", dir);
	FILE *f = popen(cmd, "r");
	if (f && fscanf(f, "%lf", &kb) != 1)
		kb = -1;
	if (f)
		pclose(f);
	return kb < 0 ? -1 : kb * 1024 / 1e6;
}

/* tsstored's tsstore_ingest_rows_stored_total (a sample counts as a
 * row), from its /metrics; -1 when it cannot be read. */
static double rows_stored(int port)
{
	static const char name[] = "\ntsstore_ingest_rows_stored_total ";
	size_t cap = (size_t)1 << 20;
	char *buf = malloc(cap), *p;
	double v = -1;
	if (buf && bench_http_get(port, "/metrics", buf, cap) == 0 && (p = strstr(buf, name)))
		v = strtod(p + sizeof name - 1, NULL);
	free(buf);
	return v;
}

/* One run of e on a fresh server: items (rows or samples) sent in e's
 * requests.  Returns 0 or -1. */
static int run_once(const char *workload, struct engine *e, size_t items)
{
	char *dir = bench_tmpdir();
	int port = bench_free_port(), rc = -1;
	pid_t pid = -1;
	bench_send s;
	if (e->start(dir, port, &pid) < 0) {
		fprintf(stderr, "%s: %s did not start\n", workload, e->name);
		goto out;
	}
	if (bench_ingest_send(e->batches, e->nb, port, 1, pid, &s) < 0) {
		fprintf(stderr, "%s: %s failed\n", workload, e->name);
		goto out;
	}
	if (strcmp(e->name, "tsstored") == 0) {
		e->tables = count_tables(dir);
		e->disk_mb = disk_mb(dir);
		/* every row or sample answered 204 must have been stored */
		if ((e->stored = rows_stored(port)) != (double)items) {
			fprintf(stderr, "%s: tsstored stored %.0f of the %zu rows sent\n", workload,
			        e->stored, items);
			goto out;
		}
	}
	e->runs[e->nruns++] = (struct run){.rate = (double)items / s.seconds, .p50_us = s.p50_us,
	                                   .p99_us = s.p99_us, .rss_mb = s.rss_mb,
	                                   .cpu_us = s.cpu_s * 1e6 / (double)items};
	rc = 0;
out:
	if (pid > 0)
		bench_server_stop(pid);
	bench_rmdir(dir);
	return rc;
}

/* The median, min and max of field off of e's runs. */
static double summary(const struct engine *e, size_t off, double *min, double *max)
{
	double v[WIRE_RUNS_MAX];
	for (int i = 0; i < e->nruns; i++)
		v[i] = *(const double *)((const char *)&e->runs[i] + off);
	double m = bench_median(v, (size_t)e->nruns);
	*min = v[0];
	*max = v[e->nruns - 1];
	return m;
}

/* Print the median of field off of e's runs as metric, with base and the
 * runs' spread in params; returns the median. */
static double report_one(const char *workload, const struct engine *e, const char *base,
                         const char *metric, size_t off, const char *unit)
{
	char params[512];
	double min, max, med = summary(e, off, &min, &max);
	snprintf(params, sizeof params, "%s,\"runs\":%d,\"min\":%.6g,\"max\":%.6g", base, e->nruns,
	         min, max);
	bench_result(workload, e->name, metric, med, unit, params);
	return med;
}

/* Print e's medians; returns the median rate (0 when it never ran). */
static double report(const char *workload, const struct engine *e, const char *what,
                     size_t items, double *rss)
{
	char base[256], metric[64];
	if (e->nruns == 0)
		return 0;
	snprintf(base, sizeof base, "\"%s\":%zu,\"%s_per_request\":%d,\"clients\":%d%s%s%s", what,
	         items, what, strcmp(what, "rows") ? WIRE_SAMPLES : BENCH_INGEST_BATCH,
	         BENCH_INGEST_CLIENTS, segment_size && !strcmp(e->name, "tsstored") ?
	         ",\"log_segment_size\":\"" : "", segment_size && !strcmp(e->name, "tsstored") ?
	         segment_size : "", segment_size && !strcmp(e->name, "tsstored") ? "\"" : "");
	snprintf(metric, sizeof metric, "%s_per_s", what);
	double rate = report_one(workload, e, base, metric, offsetof(struct run, rate),
	                         strcmp(what, "rows") ? "samples/s" : "rows/s");
	report_one(workload, e, base, "insert_p50_us", offsetof(struct run, p50_us), "us");
	report_one(workload, e, base, "insert_p99_us", offsetof(struct run, p99_us), "us");
	*rss = report_one(workload, e, base, "peak_rss_mb", offsetof(struct run, rss_mb), "MB");
	snprintf(metric, sizeof metric, "cpu_us_per_%s", strcmp(what, "rows") ? "sample" : "row");
	report_one(workload, e, base, metric, offsetof(struct run, cpu_us), "us");
	if (strcmp(e->name, "tsstored") == 0) {
		bench_result(workload, e->name, "tables", e->tables, "tables", base);
		bench_result(workload, e->name, "disk_mb", e->disk_mb, "MB", base);
		bench_result(workload, e->name, "rows_stored", e->stored, "rows", base);
	}
	return rate;
}

/* Run every engine c->repeat times (at most WIRE_RUNS_MAX), the order
 * alternating; returns -1 when tsstored (engine 0) failed. */
static int run_all(const bench_config *c, const char *workload, struct engine *e, int ne,
                   size_t items)
{
	int failed = 0, runs = c->repeat < WIRE_RUNS_MAX ? c->repeat : WIRE_RUNS_MAX;
	for (int r = 0; r < runs; r++)
		for (int k = 0; k < ne; k++) {
			int i = r % 2 ? ne - 1 - k : k;
			if (e[i].batches && run_once(workload, &e[i], items) < 0 && i == 0)
				failed = 1;
		}
	return failed ? -1 : 0;
}

/* Read the TSBS file (its quick prefix with --quick) into *rows and
 * *text (free both); NULL after an error line. */
static const bench_tsbs_row *load(const bench_config *c, const char *workload, size_t *n,
                                  bench_tsbs_row **rows, char **text)
{
	segment_size = c->log_segment_size;
	*rows = bench_tsbs_load(c->tsbs_path, c->quick ? BENCH_INGEST_QUICK_ROWS : SIZE_MAX, n, text);
	if (!*rows || *n == 0) {
		fprintf(stderr, "%s: cannot read %s\n", workload, c->tsbs_path);
		bench_error(workload, "tsstored", "bench_tsbs_load", TS_EIO);
		return NULL;
	}
	for (int t = 0; t < BENCH_TSBS_TAGS; t++)
		tag_order[t] = t;
	qsort(tag_order, BENCH_TSBS_TAGS, sizeof *tag_order, cmp_tag);
	return *rows;
}

/* Free the requests the engines own. */
static void free_engines(struct engine *e, int ne)
{
	for (int i = 0; i < ne; i++)
		if (e[i].owns)
			bench_batches_free(e[i].batches, e[i].nb);
}

/* --compare: tsstored's median over each peer's, metric by metric, in the
 * form of the ratio lines of bench_compare (which pairs "tsstore" alone). */
static void ratios(const char *workload, const struct engine *e, int ne, const char *rate)
{
	static const struct { const char *metric; size_t off; } m[] = {
		{NULL, offsetof(struct run, rate)},
		{"insert_p50_us", offsetof(struct run, p50_us)},
		{"insert_p99_us", offsetof(struct run, p99_us)},
		{"peak_rss_mb", offsetof(struct run, rss_mb)},
	};
	double lo, hi;
	for (int i = 1; e[0].nruns && i < ne; i++)
		for (size_t k = 0; e[i].nruns && k < sizeof m / sizeof m[0]; k++) {
			double a = summary(&e[0], m[k].off, &lo, &hi), b = summary(&e[i], m[k].off, &lo, &hi);
			if (b > 0)
				printf("{\"workload\":\"%s\",\"metric\":\"%s\",\"ratio\":\"tsstored/%s\","
				       "\"value\":%.3f}\n", workload, m[k].metric ? m[k].metric : rate,
				       e[i].name, a / b);
		}
}

int bench_workload_ingest_http(const bench_config *c)
{
	struct engine e[3] = {{.name = "tsstored", .start = start_tsstored},
	                      {.name = "victoriametrics", .start = start_victoria},
	                      {.name = "influxdb", .start = start_influx}};
	int ne = c->skip_peers ? 1 : 3, rc = -1, failed = 1;
	size_t n = 0;
	bench_tsbs_row *rows = NULL;
	char *text = NULL;
	double rate[3], rss[3];
	if (!load(c, "ingest_http", &n, &rows, &text))
		goto out;
	/* the same bytes for all three; InfluxDB needs its database named */
	e[0].batches = make_requests(rows, n, "/write", &e[0].nb);
	e[0].owns = 1;
	e[1].batches = e[0].batches;
	e[1].nb = e[0].nb;
	if (ne > 2) {
		e[2].batches = make_requests(rows, n, "/write?db=" INFLUX_DB, &e[2].nb);
		e[2].owns = 1;
	}
	if (!e[0].batches)
		goto out;
	failed = run_all(c, "ingest_http", e, ne, n) < 0;
	for (int i = 0; i < ne; i++)
		rate[i] = report("ingest_http", &e[i], "rows", n, &rss[i]);
	if (c->compare)
		ratios("ingest_http", e, ne, "rows_per_s");
	if (rate[0] > 0 && ne > 1 && rate[1] > 0)
		bench_target("ingest_http", "tsstored rows/s over VictoriaMetrics' (line protocol, HTTP)",
		             rate[0] / rate[1], ">=", 2.0);
	if (rate[0] > 0 && ne > 2 && rate[2] > 0)
		bench_target("ingest_http", "tsstored rows/s over InfluxDB 1.x's (line protocol, HTTP)",
		             rate[0] / rate[2], ">=", 5.0);
	if (rate[0] > 0)
		bench_target("ingest_http", "tsstored peak RSS, MB (line protocol, HTTP)", rss[0], "<=",
		             256.0);
	rc = rate[0] > 0 && !failed ? 0 : -1;
out:
	if (rc < 0 && rows)
		bench_error("ingest_http", "tsstored", "POST /write", TS_EIO);
	free_engines(e, ne);
	free(rows);
	free(text);
	return rc;
}

/*
 * The full decoding, as tsstored decoded before the decoding view
 * (wire/remote_view.proto): every label unpacked by protobuf-c as a
 * message of its own, then laid out as promwrite.h's arrays.  Kept to
 * report the ceiling it set beside the view's.  Returns 0 or -1.
 */
static int decode_full(const char *body, size_t len)
{
	ProtobufCMessage *msg;
	struct pbmem *m;
	size_t n, nl = 0;
	if (pbmem_unpack(body, len, SIZE_MAX, PW_UNPACK_FACTOR, PW_UNPACK_SLACK,
	                 &tsstore__remote__write_request__descriptor, "a WriteRequest", &msg, &m, &n,
	                 NULL, 0) < 0)
		return -1;
	const WriteRequest *wr = (const WriteRequest *)msg;
	struct pw_series *series = pbmem_alloc(m, wr->n_timeseries * sizeof *series + 1);
	for (size_t i = 0; series && i < wr->n_timeseries; i++) {
		const Series *ts = wr->timeseries[i];
		struct pw_label *l = pbmem_alloc(m, ts->n_labels * sizeof *l + 1);
		struct pw_sample *s = pbmem_alloc(m, ts->n_samples * sizeof *s + 1);
		if (!l || !s)
			break;
		for (size_t k = 0; k < ts->n_labels; k++, nl++)
			l[k] = (struct pw_label){(const char *)ts->labels[k]->name.data,
			                         ts->labels[k]->name.len,
			                         (const char *)ts->labels[k]->value.data,
			                         ts->labels[k]->value.len};
		for (size_t k = 0; k < ts->n_samples; k++)
			s[k] = (struct pw_sample){ts->samples[k]->value, ts->samples[k]->timestamp};
		series[i] = (struct pw_series){l, ts->n_labels, s, ts->n_samples};
	}
	int rc = series && nl ? 0 : -1;
	pbmem_free(m);
	return rc;
}

/*
 * The ceiling of remote write on this machine: decoding alone, as
 * tsstored decodes (wire/promwrite.c: snappy, then protobuf-c's unpack of
 * the decoding view and of each distinct label, into an arena, with the
 * allocator set as tsstored sets it: pbmem_keep_memory) -- or, full, as
 * it decoded before (decode_full) -- every request body of the load, on
 * one thread, the best of three passes, times the cores online: what a
 * server that did nothing but decode could take.  The issue forbids a
 * hand-written protobuf decoder, so no tsstored can pass this.  Returns
 * samples/s, 0 on a failure; *cpu_us the CPU time of one core a sample
 * in the best pass.
 */
static double decode_ceiling(const bench_batch *b, size_t nb, size_t samples, int full,
                             double *cpu_us)
{
	double best = 0, best_cpu = 0;
	long cores = sysconf(_SC_NPROCESSORS_ONLN);
	pbmem_keep_memory(); /* as tsstored's main does */
	for (int pass = 0; pass < 3; pass++) {
		double t0 = bench_seconds(), c0 = bench_cpu_seconds();
		for (size_t i = 0; i < nb; i++) {
			const char *body = strstr(b[i].body, "\r\n\r\n");
			size_t len = body ? b[i].len - (size_t)(body + 4 - b[i].body) : 0;
			struct pw_request r;
			if (!body)
				return 0;
			if (full) {
				if (decode_full(body + 4, len) < 0)
					return 0;
				continue;
			}
			if (pw_decode(body + 4, len, SIZE_MAX, &r, NULL, 0) < 0)
				return 0;
			pw_request_free(&r);
		}
		double t = bench_seconds() - t0, c = bench_cpu_seconds() - c0;
		if (best == 0 || t < best)
			best = t, best_cpu = c;
	}
	*cpu_us = best_cpu / (double)samples * 1e6;
	return best > 0 ? (double)samples / best * (double)(cores > 0 ? cores : 1) : 0;
}

/*
 * The storage ceiling the mapping sets: the library's insert of the rows
 * tsstored makes of the load (daemon/promwrite.c, tsstore-http(7)): a
 * table per metric, cpu_usage_user ... cpu_usage_guest_nice, each keyed
 * by the ten tags as string columns (sorted by name) and ts, with one
 * double column value; duplicate policy ignore, as tsstored creates
 * them.  In-process, no HTTP and no decoding: as many threads as cores,
 * thread k taking every cores-th request's lines and inserting, as a
 * request's rows, 512 rows into each of the ten tables.  What a server
 * that decoded for free could take.
 */
#define STORE_COLS (BENCH_TSBS_TAGS + 2) /* the tags, ts, value */
#define STORE_THREADS_MAX 16

struct store_worker {
	ts_table **tables;                  /* one per field */
	const bench_tsbs_row *rows;
	size_t n;
	int k, nk;                          /* this thread, of nk */
	int rc;                             /* the first failure */
};

static void *store_main(void *arg)
{
	struct store_worker *w = arg;
	ts_value *v = malloc(BENCH_INGEST_BATCH * STORE_COLS * sizeof *v);
	if (!v) {
		w->rc = TS_ENOMEM;
		return NULL;
	}
	for (size_t b = (size_t)w->k * BENCH_INGEST_BATCH; b < w->n && !w->rc;
	     b += (size_t)w->nk * BENCH_INGEST_BATCH) {
		size_t m = w->n - b < BENCH_INGEST_BATCH ? w->n - b : BENCH_INGEST_BATCH;
		for (int f = 0; f < BENCH_TSBS_FIELDS && !w->rc; f++) {
			for (size_t i = 0; i < m; i++) {
				const bench_tsbs_row *r = &w->rows[b + i];
				ts_value *row = v + i * STORE_COLS;
				for (int t = 0; t < BENCH_TSBS_TAGS; t++)
					row[t] = ts_stringn(r->tag[tag_order[t]], r->taglen[tag_order[t]]);
				row[BENCH_TSBS_TAGS] = ts_timestamp(r->ts / 1000000 * 1000000); /* ms */
				row[BENCH_TSBS_TAGS + 1] = ts_double((double)r->field[f]);
			}
			w->rc = ts_insert(w->tables[f], v, m);
		}
	}
	free(v);
	return NULL;
}

/* Create the ten tables of the mapping in db, opened into t. */
static int store_tables(ts_db *db, const char (*names)[128], ts_table **t)
{
	ts_column cols[STORE_COLS];
	const char *keys[BENCH_TSBS_TAGS + 1];
	for (int i = 0; i < BENCH_TSBS_TAGS; i++) {
		cols[i] = (ts_column){.name = bench_tsbs_tags[tag_order[i]], .type = TS_STRING};
		keys[i] = cols[i].name;
	}
	cols[BENCH_TSBS_TAGS] = (ts_column){.name = "ts", .type = TS_TIMESTAMP};
	keys[BENCH_TSBS_TAGS] = "ts";
	cols[BENCH_TSBS_TAGS + 1] = (ts_column){.name = "value", .type = TS_DOUBLE,
	                                        .dflt = ts_double(NAN)};
	for (int f = 0; f < BENCH_TSBS_FIELDS; f++)
		if (ts_create_keyed_v2(db, names[f], cols, STORE_COLS, keys, BENCH_TSBS_TAGS + 1, 0,
		                       TS_ON_DUPLICATE_IGNORE) < 0 ||
		    ts_table_open(db, names[f], &t[f]) < 0)
			return -1;
	return 0;
}

/* Run the storage ceiling on rows[0..n); samples/s over all cores (0 on
 * a failure), *cpu_us the process's CPU time a sample (user + system:
 * the inserting threads and the library's own). */
static double store_ceiling(const bench_tsbs_row *rows, size_t n, double *cpu_us)
{
	char names[BENCH_TSBS_FIELDS][128];
	ts_table *t[BENCH_TSBS_FIELDS] = {NULL};
	struct store_worker w[STORE_THREADS_MAX];
	pthread_t th[STORE_THREADS_MAX];
	long cores = sysconf(_SC_NPROCESSORS_ONLN);
	int nk = cores < 1 ? 1 : cores > STORE_THREADS_MAX ? STORE_THREADS_MAX : (int)cores;
	int started = 0, rc = 0;
	double rate = 0;
	ts_db *db = NULL;
	ts_options o;
	char *dir = bench_tmpdir();
	size_t m = (size_t)(strchr(rows[0].line, ',') ? strchr(rows[0].line, ',') - rows[0].line : 3);
	for (int f = 0; f < BENCH_TSBS_FIELDS; f++)
		snprintf(names[f], sizeof names[f], "%.*s_%s", (int)m, rows[0].line,
		         bench_tsbs_fields[f]);
	ts_options_init(&o);
	o.flags |= TS_OPEN_CREATE;
	if (ts_open(dir, &o, &db) < 0 || store_tables(db, (const char (*)[128])names, t) < 0) {
		fprintf(stderr, "remote_write: storage ceiling: %s\n", ts_errmsg(NULL));
		goto out;
	}
	bench_settle();
	double t0 = bench_seconds(), c0 = bench_cpu_seconds();
	for (; started < nk; started++) {
		w[started] = (struct store_worker){t, rows, n, started, nk, 0};
		if (pthread_create(&th[started], NULL, store_main, &w[started]) != 0)
			break;
	}
	for (int i = 0; i < started; i++) {
		pthread_join(th[i], NULL);
		if (w[i].rc < 0 && !rc)
			rc = w[i].rc;
	}
	double wall = bench_seconds() - t0, cpu = bench_cpu_seconds() - c0;
	if (rc < 0 || started < nk)
		fprintf(stderr, "remote_write: storage ceiling: %s\n", ts_errmsg(NULL));
	else if (wall > 0) {
		rate = (double)(n * BENCH_TSBS_FIELDS) / wall;
		*cpu_us = cpu / (double)(n * BENCH_TSBS_FIELDS) * 1e6;
	}
out:
	for (int f = 0; f < BENCH_TSBS_FIELDS; f++)
		ts_table_close(t[f]);
	ts_close(db);
	bench_rmdir(dir);
	return rate;
}

/* Report the ceilings of remote write on rows[0..n) (requests b[0..nb)):
 * decoding, full and by the view, and storage; beside tsstored's rate
 * and VictoriaMetrics' (vm; 0: not run). */
static void ceilings(const bench_batch *b, size_t nb, const bench_tsbs_row *rows, size_t n,
                     double tsstored, double vm)
{
	static const char *const what[3] = {"decode_full", "decode", "store"};
	char params[128], metric[64];
	size_t samples = n * BENCH_TSBS_FIELDS;
	snprintf(params, sizeof params, "\"samples\":%zu,\"cores\":%ld", samples,
	         sysconf(_SC_NPROCESSORS_ONLN));
	for (int i = 0; i < 3; i++) {
		double cpu = 0, c = i < 2 ? decode_ceiling(b, nb, samples, i == 0, &cpu)
		                          : store_ceiling(rows, n, &cpu);
		if (c <= 0)
			continue;
		snprintf(metric, sizeof metric, "%s_all_cores_samples_per_s", what[i]);
		bench_result("remote_write", "ceiling", metric, c, "samples/s", params);
		snprintf(metric, sizeof metric, "%s_cpu_us_per_sample", what[i]);
		bench_result("remote_write", "ceiling", metric, cpu, "us", params);
		if (vm > 0) {
			snprintf(metric, sizeof metric, "%s_all_cores_over_victoriametrics", what[i]);
			bench_result("remote_write", "ceiling", metric, c / vm, "ratio", params);
		}
		if (tsstored > 0) {
			snprintf(metric, sizeof metric, "tsstored_over_%s_ceiling", what[i]);
			bench_result("remote_write", "ceiling", metric, tsstored / c, "ratio", params);
		}
	}
}

int bench_workload_remote_write(const bench_config *c)
{
	struct engine e[2] = {{.name = "tsstored", .start = start_tsstored},
	                      {.name = "victoriametrics", .start = start_victoria}};
	int ne = c->skip_peers ? 1 : 2, rc = -1, failed = 1;
	size_t n = 0;
	bench_tsbs_row *rows = NULL;
	char *text = NULL;
	double rate[2], rss[2];
	if (!load(c, "remote_write", &n, &rows, &text))
		goto out;
	e[0].batches = make_requests(rows, n, NULL, &e[0].nb);
	e[0].owns = 1;
	e[1].batches = e[0].batches;
	e[1].nb = e[0].nb;
	if (!e[0].batches)
		goto out;
	failed = run_all(c, "remote_write", e, ne, n * BENCH_TSBS_FIELDS) < 0;
	for (int i = 0; i < ne; i++)
		rate[i] = report("remote_write", &e[i], "samples", n * BENCH_TSBS_FIELDS, &rss[i]);
	if (c->compare)
		ratios("remote_write", e, ne, "samples_per_s");
	if (rate[0] > 0 && ne > 1 && rate[1] > 0)
		bench_target("remote_write", "tsstored samples/s over VictoriaMetrics' (remote write)",
		             rate[0] / rate[1], ">=", 2.0);
	ceilings(e[0].batches, e[0].nb, rows, n, rate[0], ne > 1 ? rate[1] : 0);
	rc = rate[0] > 0 && !failed ? 0 : -1;
out:
	if (rc < 0 && rows)
		bench_error("remote_write", "tsstored", "POST /api/v1/write", TS_EIO);
	free_engines(e, ne);
	free(rows);
	free(text);
	return rc;
}

/* ---- what the query workload (tsbsquery.c) shares ---- */

int bench_wire_start(const char *engine, const char *dir, int port, pid_t *pid)
{
	if (strcmp(engine, "tsstored") == 0)
		return start_tsstored(dir, port, pid);
	if (strcmp(engine, "victoriametrics") == 0)
		return start_victoria(dir, port, pid);
	if (strcmp(engine, "influxdb") == 0)
		return start_influx(dir, port, pid);
	return -1;
}

bench_batch *bench_wire_lines(const bench_tsbs_row *rows, size_t n, const char *target, size_t *nb)
{
	return make_requests(rows, n, target, nb);
}
