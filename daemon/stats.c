/*
 * stats.c -- the daemon's own counters, reported by the "stats" op and,
 * in Prometheus text exposition format 0.0.4, by GET /metrics (http.c
 * adds the tables' counters there).
 *
 * Connections, requests and errors are counted where they happen: on the
 * loop thread (connections, finished requests) and on worker threads
 * (rows), so every counter is updated with relaxed atomic adds and read
 * the same way; a report is a set of counters each exact, not one instant.
 *
 * Latency per op is kept as a log-linear histogram: 4 buckets per power
 * of two of nanoseconds, so a percentile is known within 19%, in 256
 * counters per op whatever the number of requests.  The engine's own
 * counters (flush and merge backlog, stall time, write amplification)
 * come from ts_table_stats, per table (request.c).  Each histogram also
 * keeps the sum of its latencies, which Prometheus' histograms report;
 * its buckets are given to Prometheus at every second power of two of
 * nanoseconds (about 1 us, 4 us, ... 17 s), edges of ours, so each
 * cumulative count is exact.  HTTP requests are counted apart, by route
 * and status code (the op counters are those of the JSON-lines protocol).
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "tsd.h"

#define SUB_BITS 2
#define NBUCKETS (64 << SUB_BITS)
#define NCODES 32 /* -TS_E* codes are 1..21; one slot more for EAUTH */
#define CODE_AUTH (NCODES - 1)
/* HTTP status codes counted: 100 to 599, one slot each. */
#define STATUS_MIN 100
#define NSTATUS 500
/* Prometheus buckets: le = 2^PROM_LE_FIRST ns, then every 2^PROM_LE_STEP
 * times more, PROM_LE_COUNT of them (1.024 us to 17.2 s). */
#define PROM_LE_FIRST 10
#define PROM_LE_STEP 2
#define PROM_LE_COUNT 13

static const char *const op_names[TSD_NOPS] = {
	[TSD_OP_PING] = "ping",
	[TSD_OP_TABLES] = "tables",
	[TSD_OP_CREATE] = "create",
	[TSD_OP_SCHEMA] = "schema",
	[TSD_OP_ALTER] = "alter",
	[TSD_OP_DROP] = "drop",
	[TSD_OP_INSERT] = "insert",
	[TSD_OP_QUERY] = "query",
	[TSD_OP_LATEST] = "latest",
	[TSD_OP_AGGREGATE] = "aggregate",
	[TSD_OP_FLUSH] = "flush",
	[TSD_OP_STATS] = "stats",
	[TSD_OP_CHECK] = "check",
	[TSD_OP_SNAPSHOT] = "snapshot",
	[TSD_OP_AUTH] = "auth",
	[TSD_OP_DELETE] = "delete",
	[TSD_OP_PURGE] = "purge",
	[TSD_OP_CHANGES] = "changes",
	[TSD_OP_CREATE_ROLLUP] = "create_rollup",
	[TSD_OP_ROLLUPS] = "rollups",
	[TSD_OP_FOLLOW] = "follow",
	[TSD_OP_PROMOTE] = "promote",
};

static struct {
	uint64_t connections_accepted;
	uint64_t connections_open;
	uint64_t rows_in, rows_out;
	uint64_t request_memory, request_memory_peak, reads_paused_now, read_pauses;
	uint64_t connections_refused, connections_timed_out;
	uint64_t requests[TSD_NOPS];
	uint64_t errors[NCODES];
	uint64_t latency[TSD_NOPS][NBUCKETS];
	uint64_t latency_sum_ns[TSD_NOPS];
	uint64_t bytes_in, bytes_out;
	uint64_t http_requests[TSD_HTTP_NROUTES][NSTATUS];
	uint64_t http_latency[TSD_HTTP_NROUTES][NBUCKETS];
	uint64_t http_latency_sum_ns[TSD_HTTP_NROUTES];
} counters;

/* A standby's link (link.c): set by its thread, read by reports. */
static struct {
	const char *primary;    /* "tcp:HOST:PORT"; NULL: this tsstored is a primary */
	uint64_t connected;     /* 1 while a follow stream runs */
	uint64_t lag_lsn, lag_ns;
	uint64_t connects, frames, tablet_bytes, log_bytes;
} standby;

static const char *const route_paths[TSD_HTTP_NROUTES] = {
	[TSD_HTTP_NOROUTE] = "",
	[TSD_HTTP_PING] = "/ping",
	[TSD_HTTP_HEALTH] = "/health",
	[TSD_HTTP_METRICS] = "/metrics",
	[TSD_HTTP_WRITE] = "/write",
	[TSD_HTTP_WRITE_V2] = "/api/v2/write",
	[TSD_HTTP_PROM_WRITE] = "/api/v1/write",
	[TSD_HTTP_PROM_READ] = "/api/v1/read",
	[TSD_HTTP_QUERY] = "/query",
};

const char *tsd_http_route_path(enum tsd_http_route route)
{
	return route >= 0 && route < TSD_HTTP_NROUTES ? route_paths[route] : "";
}

const char *tsd_op_name(enum tsd_op op)
{
	return op > TSD_OP_NONE && op < TSD_NOPS ? op_names[op] : NULL;
}

enum tsd_op tsd_op_parse(const char *name)
{
	for (int op = TSD_OP_NONE + 1; op < TSD_NOPS; op++)
		if (strcmp(op_names[op], name) == 0)
			return (enum tsd_op)op;
	return TSD_OP_NONE;
}

const char *tsd_errname(int code)
{
	return code == TSD_EAUTH ? "EAUTH" : code == TSD_EREPLICA ? "EREPLICA" : ts_errname(code);
}

static void add(uint64_t *counter, uint64_t n)
{
	__atomic_fetch_add(counter, n, __ATOMIC_RELAXED);
}

static uint64_t get(const uint64_t *counter)
{
	return __atomic_load_n(counter, __ATOMIC_RELAXED);
}

void tsd_stats_connection(int opened)
{
	if (opened) {
		add(&counters.connections_accepted, 1);
		add(&counters.connections_open, 1);
	} else {
		__atomic_fetch_sub(&counters.connections_open, 1, __ATOMIC_RELAXED);
	}
}

/* The histogram bucket of ns: the power of two, then SUB_BITS bits
 * below the leading one. */
static int bucket_of(int64_t ns)
{
	uint64_t v = ns > 0 ? (uint64_t)ns : 1;
	int log = 63 - __builtin_clzll(v);
	if (log < SUB_BITS)
		return (int)v;
	return (log - SUB_BITS + 1) << SUB_BITS | (int)((v >> (log - SUB_BITS)) & ((1 << SUB_BITS) - 1));
}

/* The middle of bucket b, in ns. */
static double bucket_mid(int b)
{
	if (b < (1 << SUB_BITS))
		return b;
	int log = (b >> SUB_BITS) + SUB_BITS - 1;
	double lo = (double)((1ull << log) | ((uint64_t)(b & ((1 << SUB_BITS) - 1)) << (log - SUB_BITS)));
	return lo + (double)(1ull << (log - SUB_BITS)) / 2;
}

static int code_slot(int code)
{
	if (code == TSD_EAUTH)
		return CODE_AUTH;
	return -code > 0 && -code < CODE_AUTH ? -code : 0;
}

void tsd_stats_request(enum tsd_op op, int code, int64_t ns)
{
	add(&counters.requests[op], 1);
	if (code)
		add(&counters.errors[code_slot(code)], 1);
	add(&counters.latency[op][bucket_of(ns)], 1);
	add(&counters.latency_sum_ns[op], ns > 0 ? (uint64_t)ns : 0);
}

void tsd_stats_http(enum tsd_http_route route, int status, int64_t ns)
{
	if (route < 0 || route >= TSD_HTTP_NROUTES)
		route = TSD_HTTP_NOROUTE;
	if (status >= STATUS_MIN && status < STATUS_MIN + NSTATUS)
		add(&counters.http_requests[route][status - STATUS_MIN], 1);
	add(&counters.http_latency[route][bucket_of(ns)], 1);
	add(&counters.http_latency_sum_ns[route], ns > 0 ? (uint64_t)ns : 0);
}

void tsd_stats_bytes(uint64_t in, uint64_t out)
{
	if (in)
		add(&counters.bytes_in, in);
	if (out)
		add(&counters.bytes_out, out);
}

void tsd_stats_rows(uint64_t in, uint64_t out)
{
	if (in)
		add(&counters.rows_in, in);
	if (out)
		add(&counters.rows_out, out);
}

void tsd_stats_memory(size_t used, int paused)
{
	__atomic_store_n(&counters.request_memory, (uint64_t)used, __ATOMIC_RELAXED);
	__atomic_store_n(&counters.reads_paused_now, (uint64_t)paused, __ATOMIC_RELAXED);
	/* Only the loop thread writes these: a plain max is enough. */
	if (used > get(&counters.request_memory_peak))
		__atomic_store_n(&counters.request_memory_peak, (uint64_t)used, __ATOMIC_RELAXED);
}

void tsd_stats_standby_start(const char *primary)
{
	standby.primary = primary;
}

void tsd_stats_standby_connected(int yes)
{
	__atomic_store_n(&standby.connected, yes ? 1 : 0, __ATOMIC_RELAXED);
	if (yes)
		add(&standby.connects, 1);
}

void tsd_stats_standby_frame(int type, uint64_t bytes)
{
	add(&standby.frames, 1);
	if (type == TS_FRAME_TABLET)
		add(&standby.tablet_bytes, bytes);
	else if (type == TS_FRAME_LOG)
		add(&standby.log_bytes, bytes);
}

void tsd_stats_standby_lag(uint64_t lsn, int64_t ns)
{
	__atomic_store_n(&standby.lag_lsn, lsn, __ATOMIC_RELAXED);
	__atomic_store_n(&standby.lag_ns, (uint64_t)(ns > 0 ? ns : 0), __ATOMIC_RELAXED);
}

void tsd_stats_pause(void) { add(&counters.read_pauses, 1); }
void tsd_stats_refused(void) { add(&counters.connections_refused, 1); }
void tsd_stats_timeout(void) { add(&counters.connections_timed_out, 1); }

/* The p-th percentile (0 < p < 1) of op's latency in µs, or -1 when no
 * request was timed. */
static double percentile(enum tsd_op op, double p)
{
	uint64_t total = 0, seen = 0;
	for (int b = 0; b < NBUCKETS; b++)
		total += get(&counters.latency[op][b]);
	if (total == 0)
		return -1;
	uint64_t rank = (uint64_t)(p * (double)total);
	for (int b = 0; b < NBUCKETS; b++) {
		seen += get(&counters.latency[op][b]);
		if (seen > rank)
			return bucket_mid(b) / 1000.0;
	}
	return bucket_mid(NBUCKETS - 1) / 1000.0;
}

static void put_object_start(struct jbuf *b, const char *name)
{
	jbuf_printf(b, ",\"%s\":{", name);
}

/* The role, and a standby's link (docs/standby.md). */
static void standby_json(struct jbuf *b)
{
	enum tsd_role role = tsd_role_now(NULL);
	if (role != TSD_ROLE_STANDBY) {
		jbuf_printf(b, ",\"role\":\"%s\"", role == TSD_ROLE_FENCED ? "fenced" : "primary");
		if (standby.primary) /* promoted */
			jbuf_printf(b, ",\"promoted_from\":\"%s\"", standby.primary);
		return;
	}
	jbuf_printf(b, ",\"role\":\"standby\",\"standby\":{\"primary\":\"%s\",\"connected\":%s"
	            ",\"lag_lsn\":%" PRIu64 ",\"lag_seconds\":%.3f,\"connects\":%" PRIu64
	            ",\"frames\":%" PRIu64 ",\"tablet_bytes\":%" PRIu64 ",\"log_bytes\":%" PRIu64 "}",
	            standby.primary, get(&standby.connected) ? "true" : "false",
	            get(&standby.lag_lsn), (double)get(&standby.lag_ns) / 1e9, get(&standby.connects),
	            get(&standby.frames), get(&standby.tablet_bytes), get(&standby.log_bytes));
}

void tsd_stats_json(struct jbuf *b)
{
	int first;
	standby_json(b);
	jbuf_printf(b, ",\"connections\":%llu,\"connections_accepted\":%llu",
	            (unsigned long long)get(&counters.connections_open),
	            (unsigned long long)get(&counters.connections_accepted));
	jbuf_printf(b, ",\"connections_refused\":%llu,\"connections_timed_out\":%llu",
	            (unsigned long long)get(&counters.connections_refused),
	            (unsigned long long)get(&counters.connections_timed_out));
	jbuf_printf(b, ",\"request_memory\":%llu,\"request_memory_peak\":%llu"
	            ",\"connections_paused\":%llu,\"read_pauses\":%llu",
	            (unsigned long long)get(&counters.request_memory),
	            (unsigned long long)get(&counters.request_memory_peak),
	            (unsigned long long)get(&counters.reads_paused_now),
	            (unsigned long long)get(&counters.read_pauses));
	jbuf_printf(b, ",\"rows_in\":%llu,\"rows_out\":%llu",
	            (unsigned long long)get(&counters.rows_in),
	            (unsigned long long)get(&counters.rows_out));
	jbuf_printf(b, ",\"bytes_in\":%llu,\"bytes_out\":%llu",
	            (unsigned long long)get(&counters.bytes_in),
	            (unsigned long long)get(&counters.bytes_out));
	put_object_start(b, "http_requests");
	first = 1;
	for (int r = 0; r < TSD_HTTP_NROUTES; r++) {
		int open = 0;
		for (int st = 0; st < NSTATUS; st++) {
			uint64_t n = get(&counters.http_requests[r][st]);
			if (n == 0)
				continue;
			if (!open)
				jbuf_printf(b, "%s\"%s\":{", first ? "" : ",", r ? route_paths[r] : "other");
			jbuf_printf(b, "%s\"%d\":%llu", open ? "," : "", st + STATUS_MIN,
			            (unsigned long long)n);
			first = 0;
			open = 1;
		}
		if (open)
			jbuf_putc(b, '}');
	}
	jbuf_putc(b, '}');
	put_object_start(b, "requests");
	first = 1;
	for (int op = 0; op < TSD_NOPS; op++) {
		uint64_t n = get(&counters.requests[op]);
		if (n == 0)
			continue;
		jbuf_printf(b, "%s\"%s\":%llu", first ? "" : ",",
		            op ? op_names[op] : "invalid", (unsigned long long)n);
		first = 0;
	}
	jbuf_putc(b, '}');
	put_object_start(b, "errors");
	first = 1;
	for (int slot = 1; slot < NCODES; slot++) {
		uint64_t n = get(&counters.errors[slot]);
		if (n == 0)
			continue;
		jbuf_printf(b, "%s\"%s\":%llu", first ? "" : ",",
		            tsd_errname(slot == CODE_AUTH ? TSD_EAUTH : -slot), (unsigned long long)n);
		first = 0;
	}
	jbuf_putc(b, '}');
	put_object_start(b, "latency_us");
	first = 1;
	for (int op = 1; op < TSD_NOPS; op++) {
		double p50 = percentile((enum tsd_op)op, 0.50);
		if (p50 < 0)
			continue;
		jbuf_printf(b, "%s\"%s\":{\"p50\":%.1f,\"p99\":%.1f}", first ? "" : ",",
		            op_names[op], p50, percentile((enum tsd_op)op, 0.99));
		first = 0;
	}
	jbuf_putc(b, '}');
}

/* ---- Prometheus text exposition format 0.0.4 ---- */

/* The HELP and TYPE lines of a family (help holds no '\\' nor '\n'). */
static void prom_family(struct jbuf *b, const char *name, const char *type, const char *help)
{
	jbuf_printf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* One sample without labels. */
static void prom_value(struct jbuf *b, const char *name, uint64_t v)
{
	jbuf_printf(b, "%s %" PRIu64 "\n", name, v);
}

/* A counter or gauge family of one sample. */
static void prom_single(struct jbuf *b, const char *name, const char *type, const char *help,
                        const uint64_t *counter)
{
	prom_family(b, name, type, help);
	prom_value(b, name, get(counter));
}

/* The samples of one labelled histogram: buckets at the edges
 * PROM_LE_*, +Inf, sum (seconds) and count; nothing when it is empty,
 * unless always. */
static void prom_histogram(struct jbuf *b, const char *name, const char *label,
                           const char *value, const uint64_t *hist, const uint64_t *sum,
                           int always)
{
	uint64_t total = 0, cum = 0;
	int next = 0;
	for (int i = 0; i < NBUCKETS; i++)
		total += get(&hist[i]);
	if (!total && !always)
		return;
	for (int k = 0; k < PROM_LE_COUNT; k++) {
		int shift = PROM_LE_FIRST + k * PROM_LE_STEP;
		/* the first bucket of 2^shift ns is bucket_of(2^shift) */
		int edge = bucket_of((int64_t)1 << shift);
		for (; next < edge; next++)
			cum += get(&hist[next]);
		jbuf_printf(b, "%s_bucket{%s=\"%s\",le=\"%.12g\"} %" PRIu64 "\n", name, label, value,
		            (double)((uint64_t)1 << shift) / 1e9, cum);
	}
	jbuf_printf(b, "%s_bucket{%s=\"%s\",le=\"+Inf\"} %" PRIu64 "\n", name, label, value, total);
	jbuf_printf(b, "%s_sum{%s=\"%s\"} %.9g\n", name, label, value, (double)get(sum) / 1e9);
	jbuf_printf(b, "%s_count{%s=\"%s\"} %" PRIu64 "\n", name, label, value, total);
}

void tsd_stats_prometheus(struct jbuf *b)
{
	prom_single(b, "tsstore_connections_open", "gauge",
	            "Connections open now, every listener.", &counters.connections_open);
	prom_single(b, "tsstore_connections_accepted_total", "counter",
	            "Connections accepted since the start.", &counters.connections_accepted);
	prom_single(b, "tsstore_connections_refused_total", "counter",
	            "Connections refused at max-connections.", &counters.connections_refused);
	prom_single(b, "tsstore_connections_timed_out_total", "counter",
	            "Connections closed by idle-timeout or line-stall-timeout.",
	            &counters.connections_timed_out);
	prom_single(b, "tsstore_received_bytes_total", "counter",
	            "Bytes received from clients, every listener.", &counters.bytes_in);
	prom_single(b, "tsstore_sent_bytes_total", "counter",
	            "Bytes sent to clients, every listener.", &counters.bytes_out);
	prom_single(b, "tsstore_request_memory_bytes", "gauge",
	            "Memory held for requests now (max-request-memory bounds it).",
	            &counters.request_memory);
	prom_single(b, "tsstore_request_memory_peak_bytes", "gauge",
	            "The most memory held for requests at once since the start.",
	            &counters.request_memory_peak);
	prom_single(b, "tsstore_connections_paused", "gauge",
	            "Connections not read now, waiting for request memory.",
	            &counters.reads_paused_now);
	prom_single(b, "tsstore_read_pauses_total", "counter",
	            "Times a connection paused for request memory.", &counters.read_pauses);
	prom_single(b, "tsstore_rows_in_total", "counter",
	            "Rows received by insert requests.", &counters.rows_in);
	prom_single(b, "tsstore_rows_out_total", "counter",
	            "Rows sent by query, latest and aggregate requests.", &counters.rows_out);

	if (standby.primary) {
		prom_single(b, "tsstore_standby_connected", "gauge",
		            "1 while this standby's follow stream from its primary runs, else 0.",
		            &standby.connected);
		prom_single(b, "tsstore_standby_lag_bytes", "gauge",
		            "Log bytes (LSN distance) the standby lacks of its primary's newest "
		            "commits, as of the primary's last heartbeat, summed over the tables.",
		            &standby.lag_lsn);
		prom_family(b, "tsstore_standby_lag_seconds", "gauge",
		            "How long the standby has lacked commits its primary announced "
		            "(0: it holds every one).");
		jbuf_printf(b, "tsstore_standby_lag_seconds %.3f\n", (double)get(&standby.lag_ns) / 1e9);
		prom_single(b, "tsstore_standby_connects_total", "counter",
		            "Follow streams this standby began since the start.", &standby.connects);
		prom_single(b, "tsstore_standby_frames_total", "counter",
		            "Frames this standby applied since the start.", &standby.frames);
		prom_single(b, "tsstore_standby_tablet_bytes_total", "counter",
		            "Tablet bytes this standby received since the start.", &standby.tablet_bytes);
		prom_single(b, "tsstore_standby_log_bytes_total", "counter",
		            "Log bytes this standby received since the start.", &standby.log_bytes);
	}

	prom_family(b, "tsstore_requests_total", "counter",
	            "Requests of the JSON-lines protocol finished, by op.");
	for (int op = 0; op < TSD_NOPS; op++) {
		uint64_t n = get(&counters.requests[op]);
		if (n || op)
			jbuf_printf(b, "tsstore_requests_total{op=\"%s\"} %" PRIu64 "\n",
			            op ? op_names[op] : "invalid", n);
	}
	prom_family(b, "tsstore_request_errors_total", "counter",
	            "Requests of the JSON-lines protocol answered with an error, by code.");
	for (int slot = 1; slot < NCODES; slot++) {
		uint64_t n = get(&counters.errors[slot]);
		if (n)
			jbuf_printf(b, "tsstore_request_errors_total{code=\"%s\"} %" PRIu64 "\n",
			            tsd_errname(slot == CODE_AUTH ? TSD_EAUTH : -slot), n);
	}
	prom_family(b, "tsstore_request_duration_seconds", "histogram",
	            "Time from the start of a JSON-lines request to its last response byte queued, by op.");
	for (int op = 1; op < TSD_NOPS; op++)
		prom_histogram(b, "tsstore_request_duration_seconds", "op", op_names[op],
		               counters.latency[op], &counters.latency_sum_ns[op], 0);

	prom_family(b, "tsstore_http_requests_total", "counter",
	            "HTTP requests answered, by path and status code.");
	for (int r = 0; r < TSD_HTTP_NROUTES; r++)
		for (int st = 0; st < NSTATUS; st++) {
			uint64_t n = get(&counters.http_requests[r][st]);
			if (n)
				jbuf_printf(b, "tsstore_http_requests_total{path=\"%s\",code=\"%d\"} %" PRIu64 "\n",
				            r ? route_paths[r] : "other", st + STATUS_MIN, n);
		}
	prom_family(b, "tsstore_http_request_duration_seconds", "histogram",
	            "Time from an HTTP request's last byte received to its response queued, by path.");
	for (int r = 0; r < TSD_HTTP_NROUTES; r++)
		prom_histogram(b, "tsstore_http_request_duration_seconds", "path",
		               r ? route_paths[r] : "other", counters.http_latency[r],
		               &counters.http_latency_sum_ns[r], 0);
}
