/*
 * http.c -- tsstored's HTTP/1.1 listener (tsstore-http(7)): requests
 * parsed with http_parser (Debian's libhttp-parser-dev), routed,
 * authenticated, and answered on the worker threads.
 *
 * server.c owns the connection as for the JSON-lines protocol: reading,
 * the memory budget, the queue of requests answered in order, writing,
 * timeouts and shutdown.  It hands the bytes it reads to tsd_http_feed,
 * which runs the parser over them; the parser's callbacks keep what a
 * request needs (the URL, the few headers read, the body) and, once the
 * request is received whole, give it to the server's queue
 * (sink->request) as a struct tsd_http_req.  What can be decided from
 * the request line and headers is decided on the loop thread at the end
 * of the headers: the route (404), the method (405), the access its
 * route needs (access.c: the token, or loopback-access; 401),
 * the content coding (415), the declared body size (413); a request so
 * refused keeps the connection (its body is read and dropped) unless it
 * is too large.  A malformed request (400), headers past http-max-header
 * (431) or a body past http-max-body (413) end the connection: its
 * error response is queued after the requests before it, and nothing
 * more is parsed.
 *
 * Everything else runs in tsd_http_step on a worker: gzip decoding
 * (zlib, bounded by http-max-body: 413 past it), GET /metrics (which
 * opens every table for its counters) and the write endpoints.  Each
 * response is written whole in one step, with Content-Length; errors
 * are {"error":"..."} with the status.  /write and /api/v2/write give
 * the decoded body to the line protocol ingest (ingest.c) and answer as
 * InfluxDB 1.x does (do_lines); /api/v1/write gives it to Prometheus
 * remote write (promwrite.c, do_write), which snappy-decodes it;
 * /api/v1/read to Prometheus remote read (promread.c, do_read), whose
 * answer is a snappy-compressed protobuf message and whose errors are
 * plain text, as Prometheus's own remote read answers them.
 *
 * Memory: the parser holds the URL and three header values (bounded by
 * http-max-header, which http_parser enforces on the request line and
 * headers together), and the body as it arrives (bounded by
 * http-max-body, and counted in max-request-memory through
 * tsd_http_held; the body then moves to the request, counted through
 * tsd_http_size).
 */
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <http_parser.h>
#include <zlib.h>

#include "graphite.h"
#include "influxq.h"
#include "ingest.h"
#include "promread.h"
#include "promwrite.h"
#include "tsd.h"
#include "value.h"

/* The headers the daemon reads; any other is skipped. */
enum header {
	H_OTHER,
	H_AUTHORIZATION,
	H_CONTENT_ENCODING,
	H_EXPECT,
	NHEADERS
};

static const char *const header_names[NHEADERS] = {
	[H_AUTHORIZATION] = "authorization",
	[H_CONTENT_ENCODING] = "content-encoding",
	[H_EXPECT] = "expect",
};

/* Longest header name compared (longer ones are none of ours). */
#define FIELD_MAX 32

struct tsd_http_req {
	enum tsd_http_route route;
	int head;           /* HEAD: the response has no body */
	int post;           /* the method is POST */
	int status;         /* decided before the step (an error), or 0 */
	char msg[TSD_MESSAGE_MAX];
	int closes;         /* the connection closes after the response */
	int http10;         /* an HTTP/1.0 request kept alive: say so */
	int gzip;           /* Content-Encoding: gzip */
	char *body;         /* as received (still gzip-encoded) */
	size_t body_len;
	size_t max_body;    /* http-max-body when it was received */
	char *query;        /* the URL's query, NUL-terminated, or NULL */
	int answered;       /* the status sent, for the counters */
	/* A write under sync=replica, committed, waiting for a standby to
	 * hold its commits (replica_step): the answer it then gives. */
	struct {
		int on;
		int status;                        /* 204, or the write's error */
		char *msg;                         /* that error's message */
		struct tsd_ingest_commit *commits; /* n of them */
		int n;                             /* of them not yet acknowledged */
		int64_t until;                     /* monotonic ns: replica-timeout */
	} replica;
};

struct tsd_http_conn {
	http_parser p;
	struct tsd_config *cfg;
	enum tsd_peer peer; /* its listener's: what it may do without the token */
	const char *client; /* for the log (server.c's), or NULL */
	const struct tsd_http_sink *sink; /* during tsd_http_feed */
	int in_message;
	struct jbuf url;
	char field[FIELD_MAX];
	size_t field_len;
	int field_long;     /* the name is longer than FIELD_MAX */
	int in_value;       /* the last callback was a header value */
	enum header cur;    /* the header whose value comes */
	struct jbuf values[NHEADERS];
	struct tsd_http_req *req; /* made at the end of the headers */
	struct jbuf body;
	size_t body_len;    /* bytes received, kept or not */
	int discard;        /* the request is refused: drop its body */
	int fatal;          /* an error status decided in a callback: 413 */
	char fatal_msg[TSD_MESSAGE_MAX];
	int stop;           /* parse no further */
};

static const char *reason(int status)
{
	switch (status) {
	case 100: return "Continue";
	case 200: return "OK";
	case 204: return "No Content";
	case 400: return "Bad Request";
	case 401: return "Unauthorized";
	case 404: return "Not Found";
	case 405: return "Method Not Allowed";
	case 408: return "Request Timeout";
	case 413: return "Content Too Large";
	case 415: return "Unsupported Media Type";
	case 431: return "Request Header Fields Too Large";
	case 500: return "Internal Server Error";
	case 501: return "Not Implemented";
	case 503: return "Service Unavailable";
	case 505: return "HTTP Version Not Supported";
	default: return "Unknown";
	}
}

/* ---- Requests ---- */

static struct tsd_http_req *req_new(void)
{
	return calloc(1, sizeof(struct tsd_http_req));
}

void tsd_http_free(struct tsd_http_req *h)
{
	if (!h)
		return;
	free(h->body);
	free(h->query);
	free(h->replica.msg);
	free(h->replica.commits);
	free(h);
}

int tsd_http_closes(const struct tsd_http_req *h) { return h->closes; }

int tsd_http_waits(const struct tsd_http_req *h) { return h->replica.on; }

size_t tsd_http_size(const struct tsd_http_req *h)
{
	return h->body_len + (h->query ? strlen(h->query) : 0);
}

void tsd_http_count(const struct tsd_http_req *h, int64_t ns)
{
	tsd_stats_http(h->route, h->answered, ns);
}

/* Record an error status for h (the first one wins). */
static void req_fail(struct tsd_http_req *h, int status, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void req_fail(struct tsd_http_req *h, int status, const char *fmt, ...)
{
	va_list ap;
	if (h->status)
		return;
	h->status = status;
	va_start(ap, fmt);
	vsnprintf(h->msg, sizeof h->msg, fmt, ap);
	va_end(ap);
}

struct tsd_request *tsd_http_error(int status, const char *msg)
{
	struct tsd_http_req *h = req_new();
	if (!h)
		return NULL;
	req_fail(h, status, "%s", msg);
	h->closes = 1;
	return tsd_request_http(h);
}

/* ---- Responses ---- */

/* The response: status line, headers, and body[0..len) (not for HEAD);
 * content_type NULL for a response without a body (204). */
static void respond(struct tsd_http_req *h, struct jbuf *out, int status,
                    const char *content_type, const char *body, size_t len)
{
	char date[64];
	time_t now = time(NULL);
	struct tm tm;
	h->answered = status;
	gmtime_r(&now, &tm);
	strftime(date, sizeof date, "%a, %d %b %Y %H:%M:%S GMT", &tm);
	jbuf_printf(out, "HTTP/1.1 %d %s\r\nDate: %s\r\nX-Tsstore-Version: %s\r\n", status,
	            reason(status), date, ts_version());
	if (content_type)
		jbuf_printf(out, "Content-Type: %s\r\nContent-Length: %zu\r\n", content_type, len);
	if (status == 200 && h->route == TSD_HTTP_PROM_READ)
		jbuf_puts(out, "Content-Encoding: snappy\r\n");
	if (status == 405)
		jbuf_puts(out, h->route == TSD_HTTP_PING || h->route == TSD_HTTP_HEALTH ||
		               h->route == TSD_HTTP_METRICS ? "Allow: GET, HEAD\r\n"
		               : h->route == TSD_HTTP_QUERY ? "Allow: GET, HEAD, POST\r\n"
		               : "Allow: POST\r\n");
	if (status == 401)
		jbuf_puts(out, "WWW-Authenticate: Token realm=\"tsstored\"\r\n");
	if (h->closes)
		jbuf_puts(out, "Connection: close\r\n");
	else if (h->http10)
		jbuf_puts(out, "Connection: keep-alive\r\n");
	jbuf_puts(out, "\r\n");
	if (content_type && !h->head && len)
		jbuf_put(out, body, len);
}

/* An error response: {"error": msg}; on /api/v1/read, msg as plain
 * text (Prometheus logs the body of a failed read as it is). */
static void respond_error(struct tsd_http_req *h, struct jbuf *out, int status, const char *msg)
{
	struct jbuf b = {0};
	if (h->route == TSD_HTTP_PROM_READ) {
		jbuf_puts(&b, msg);
		jbuf_putc(&b, '\n');
		if (b.failed)
			status = 500;
		respond(h, out, status, "text/plain; charset=utf-8", b.failed ? "" : b.p,
		        b.failed ? 0 : b.len);
		jbuf_free(&b);
		return;
	}
	jbuf_puts(&b, "{\"error\":");
	jbuf_string(&b, msg, strlen(msg));
	jbuf_puts(&b, "}\n");
	if (b.failed) {
		jbuf_free(&b);
		status = 500;
		jbuf_puts(&b, "{\"error\":\"out of memory for the response\"}\n");
	}
	respond(h, out, status, "application/json", b.p, b.len);
	jbuf_free(&b);
}

char *tsd_http_refusal(size_t *len)
{
	struct tsd_http_req h = {.closes = 1};
	struct jbuf out = {0};
	respond_error(&h, &out, 503, "too many connections");
	if (out.failed) {
		jbuf_free(&out);
		return NULL;
	}
	*len = out.len;
	return out.p;
}

/* ---- Handlers (worker threads) ---- */

static long query_param(const char *query, const char *name, char *out, size_t size);

/* Escape a Prometheus label value: backslash, double quote, newline. */
static void prom_label(struct jbuf *b, const char *s)
{
	for (; *s; s++) {
		if (*s == '\\' || *s == '"')
			jbuf_putc(b, '\\');
		if (*s == '\n') {
			jbuf_puts(b, "\\n");
			continue;
		}
		jbuf_putc(b, *s);
	}
}

/* A table's counter by name, or 0 when it has none such. */
static int64_t stat_of(const ts_stat *st, int n, const char *name)
{
	for (int i = 0; i < n; i++)
		if (strcmp(st[i].name, name) == 0)
			return st[i].value;
	return 0;
}

/* The per-table families of /metrics: each a sum of ts_table_stats
 * counters (names NULL-terminated). */
static const struct table_metric {
	const char *name, *type, *help;
	const char *sum[3];
} table_metrics[] = {
	{"tsstore_table_rows", "gauge",
	 "Rows stored in the table, on-disk tablets and filling tablets (before expiry).",
	 {"tablet_rows", "filling_rows", NULL}},
	{"tsstore_table_bytes", "gauge",
	 "Bytes of the table's tablets, on disk and filling.",
	 {"tablet_bytes", "filling_bytes", NULL}},
	{"tsstore_table_tablets", "gauge", "On-disk tablets of the table.", {"tablets", NULL}},
	{"tsstore_table_filling_tablets", "gauge",
	 "Filling tablets of the table (the flush backlog, in tablets).", {"filling_tablets", NULL}},
	{"tsstore_table_log_bytes", "gauge",
	 "Bytes of the table's log not yet flushed to tablets (the flush backlog).",
	 {"log_bytes", NULL}},
	{"tsstore_table_merge_backlog_tablets", "gauge",
	 "Tablets of the table that the merge rule would merge now.", {"merge_backlog_tablets", NULL}},
	{"tsstore_table_tablets_quarantined_total", "counter",
	 "Tablets of the table moved to quarantine since it was opened.",
	 {"tablets_quarantined", NULL}},
	{"tsstore_table_rows_inserted_total", "counter",
	 "Rows inserted into the table since it was opened.", {"rows_inserted", NULL}},
	{"tsstore_table_rows_rejected_total", "counter",
	 "Rows refused by the table since it was opened.", {"rows_rejected", NULL}},
	{"tsstore_table_flushes_total", "counter",
	 "Flushes of the table since it was opened.", {"flushes", NULL}},
	{"tsstore_table_merges_total", "counter",
	 "Merges of the table since it was opened.", {"merges", NULL}},
	{"tsstore_table_flush_failures_total", "counter",
	 "Failed flushes of the table (retried with backoff).", {"flush_failures", NULL}},
	{"tsstore_table_merge_failures_total", "counter",
	 "Failed merges of the table (retried with backoff).", {"merge_failures", NULL}},
};

#define NTABLE_METRICS (sizeof table_metrics / sizeof table_metrics[0])

/* The families of the rollups (docs/rollups.md section 2, "Lag"), one
 * sample per rollup (a table whose counters hold rollup_every_ns),
 * labelled with the table and its source: the counter scaled (ns to
 * seconds for the lag). */
static const struct rollup_metric {
	const char *name, *type, *help, *stat;
	double scale;
} rollup_metrics[] = {
	{"tsstore_rollup_lag_seconds", "gauge",
	 "How long the rollup has been behind its source's durable rows (0: caught up).",
	 "rollup_lag_ns", 1e-9},
	{"tsstore_rollup_watermark", "gauge",
	 "The source version through which the rollup is exact (0: nothing yet).",
	 "rollup_watermark", 1},
	{"tsstore_rollup_source_version", "gauge",
	 "The source's version when the maintenance last looked.", "rollup_source_version", 1},
	{"tsstore_rollup_lag_versions", "gauge",
	 "Source version minus watermark (log bytes of the source not yet rolled up).",
	 "rollup_lag_versions", 1},
	{"tsstore_rollup_runs_total", "counter",
	 "Maintenance runs of the rollup since the database opened.", "rollup_runs", 1},
	{"tsstore_rollup_windows_recomputed_total", "counter",
	 "Windows of the rollup recomputed since the database opened.",
	 "rollup_windows_recomputed", 1},
	{"tsstore_rollup_windows_deleted_total", "counter",
	 "Windows that left the rollup (their source rows all deleted).",
	 "rollup_windows_deleted", 1},
	{"tsstore_rollup_windows_skipped_total", "counter",
	 "Changed windows not recomputed: they begin before the source's or the rollup's expiry.",
	 "rollup_windows_skipped", 1},
	{"tsstore_rollup_resets_total", "counter",
	 "Times the rollup recomputed every window (its source's version went below its watermark).",
	 "rollup_resets", 1},
	{"tsstore_rollup_failures_total", "counter",
	 "Failed maintenance runs of the rollup (retried with backoff).", "rollup_failures", 1},
};

#define NROLLUP_METRICS (sizeof rollup_metrics / sizeof rollup_metrics[0])

/* Whether a table's counters st[0..n) are a rollup's. */
static int is_rollup_stats(const ts_stat *st, int n)
{
	for (int i = 0; i < n; i++)
		if (strcmp(st[i].name, "rollup_every_ns") == 0)
			return 1;
	return 0;
}

/* The rollup families of /metrics over the tables names[0..n) whose
 * counters stats[i] (nstats[i] < 0: left out) and sources[i] (NULL: not a
 * rollup) were read. */
static void prom_rollups(struct jbuf *b, char **names, int n, ts_stat (*stats)[TS_STATS_MAX],
                         const int *nstats, char **sources)
{
	for (size_t m = 0; m < NROLLUP_METRICS; m++) {
		const struct rollup_metric *rm = &rollup_metrics[m];
		jbuf_printf(b, "# HELP %s %s\n# TYPE %s %s\n", rm->name, rm->help, rm->name, rm->type);
		for (int i = 0; i < n; i++) {
			int64_t v;
			if (nstats[i] < 0 || !sources[i])
				continue;
			v = stat_of(stats[i], nstats[i], rm->stat);
			jbuf_printf(b, "%s{table=\"", rm->name);
			prom_label(b, names[i]);
			jbuf_puts(b, "\",source=\"");
			prom_label(b, sources[i]);
			if (rm->scale == 1)
				jbuf_printf(b, "\"} %lld\n", (long long)v);
			else
				jbuf_printf(b, "\"} %.9g\n", (double)v * rm->scale);
		}
	}
}

/* A counter family of one sample: HELP, TYPE, value. */
static void prom_counter(struct jbuf *b, const char *name, const char *help, uint64_t v)
{
	jbuf_printf(b, "# HELP %s %s\n# TYPE %s counter\n%s %llu\n", name, help, name, name,
	            (unsigned long long)v);
}

/* The line protocol ingest's counters (ingest.h), tsstore_ingest_*. */
static void prom_ingest(struct jbuf *b, struct tsd_ingest *in)
{
	struct tsd_ingest_stats st;
	static const char rej[] = "tsstore_ingest_lines_rejected_total";
	if (!in)
		return;
	tsd_ingest_stats_get(in, &st);
	prom_counter(b, "tsstore_ingest_requests_total",
	             "Line protocol write requests (POST /write, /api/v2/write).", st.requests);
	prom_counter(b, "tsstore_ingest_rows_stored_total",
	             "Rows stored from line protocol.", st.rows_stored);
	prom_counter(b, "tsstore_ingest_duplicates_ignored_total",
	             "Line protocol points whose key the table held already, ignored "
	             "(duplicate policy ignore).", st.duplicates_ignored);
	jbuf_printf(b, "# HELP %s Line protocol lines refused, by reason.\n# TYPE %s counter\n",
	            rej, rej);
	for (int r = 0; r < TSD_REJECT_NREASONS; r++)
		jbuf_printf(b, "%s{reason=\"%s\"} %llu\n", rej,
		            tsd_ingest_reason_name((enum tsd_ingest_reason)r),
		            (unsigned long long)st.lines_rejected[r]);
	prom_counter(b, "tsstore_ingest_rows_missing_tags_total",
	             "Line protocol rows stored with a key column left empty (a tag missing).",
	             st.rows_missing_tags);
	prom_counter(b, "tsstore_ingest_tables_created_total",
	             "Tables created by line protocol writes.", st.tables_created);
	prom_counter(b, "tsstore_ingest_columns_added_total",
	             "Columns added to tables by line protocol writes.", st.columns_added);
}

/* One gauge, its HELP and TYPE lines first. */
static void prom_gauge(struct jbuf *b, const char *name, const char *help, uint64_t v)
{
	jbuf_printf(b, "# HELP %s %s\n# TYPE %s gauge\n%s %llu\n", name, help, name, name,
	            (unsigned long long)v);
}

/* The /query window cache's counters (influxq.h), tsstore_query_cache_*. */
static void prom_query_cache(struct jbuf *b)
{
	struct tsd_iql_cache_stats st;
	tsd_influxq_cache_stats(&st);
	prom_counter(b, "tsstore_query_cache_hits_total",
	             "/query aggregates that answered windows from the window cache.", st.hits);
	prom_counter(b, "tsstore_query_cache_misses_total",
	             "/query aggregates the window cache could serve no window of.", st.misses);
	prom_counter(b, "tsstore_query_cache_invalidations_total",
	             "Window cache entries dropped because their table changed.", st.invalidations);
	prom_counter(b, "tsstore_query_cache_evictions_total",
	             "Window cache entries evicted for room (least recently used first).",
	             st.evictions);
	prom_counter(b, "tsstore_query_cache_stores_total",
	             "Window cache entries made or extended.", st.stores);
	prom_gauge(b, "tsstore_query_cache_bytes", "Bytes the window cache holds now.", st.bytes);
	prom_gauge(b, "tsstore_query_cache_entries", "Entries the window cache holds now.",
	           st.entries);
	prom_gauge(b, "tsstore_query_cache_budget_bytes",
	           "The window cache's budget (query-cache-size; 0: off).", st.budget);
}

/* GET /metrics: the daemon's counters, then each table's. */
static void do_metrics(struct tsd_http_req *h, const struct tsd_context *ctx, struct jbuf *out)
{
	struct jbuf b = {0};
	char **names = NULL;
	int ntables = 0, rc;
	ts_stat (*stats)[TS_STATS_MAX] = NULL;
	int *nstats = NULL;
	char **sources = NULL; /* a rollup's source, else NULL */
	tsd_stats_prometheus(&b);
	prom_ingest(&b, ctx->ingest);
	prom_query_cache(&b);
	if (ctx->graphite)
		tsd_graphite_prometheus(ctx->graphite, &b);
	if ((rc = ts_tables(tsd_db(ctx), &names, NULL)) < 0) {
		jbuf_free(&b);
		respond_error(h, out, 500, ts_strerror(rc));
		return;
	}
	while (names[ntables])
		ntables++;
	if (ntables && (!(stats = calloc((size_t)ntables, sizeof *stats)) ||
	                !(nstats = calloc((size_t)ntables, sizeof *nstats)) ||
	                !(sources = calloc((size_t)ntables, sizeof *sources)))) {
		jbuf_fail(&b);
		ntables = 0;
	}
	for (int i = 0; i < ntables; i++) {
		ts_table *t;
		nstats[i] = -1; /* dropped meanwhile, or damaged: left out */
		if (ts_table_open(tsd_db(ctx), names[i], &t) < 0)
			continue;
		if (ts_table_stats(t, stats[i], TS_STATS_MAX, &nstats[i]) < 0)
			nstats[i] = -1;
		if (nstats[i] >= 0 && is_rollup_stats(stats[i], nstats[i])) {
			ts_rollup_state *rs;
			if (ts_rollup_info(t, &rs) == 0) {
				if (!(sources[i] = strdup(rs->source)))
					jbuf_fail(&b);
				ts_rollup_state_free(rs);
			}
		}
		ts_table_close(t);
	}
	for (size_t m = 0; m < NTABLE_METRICS; m++) {
		const struct table_metric *tm = &table_metrics[m];
		jbuf_printf(&b, "# HELP %s %s\n# TYPE %s %s\n", tm->name, tm->help, tm->name, tm->type);
		for (int i = 0; i < ntables; i++) {
			int64_t v = 0;
			if (nstats[i] < 0)
				continue;
			for (int k = 0; tm->sum[k]; k++)
				v += stat_of(stats[i], nstats[i], tm->sum[k]);
			jbuf_printf(&b, "%s{table=\"", tm->name);
			prom_label(&b, names[i]);
			jbuf_printf(&b, "\"} %lld\n", (long long)v);
		}
	}
	prom_rollups(&b, names, ntables, stats, nstats, sources);
	for (int i = 0; sources && i < ntables; i++)
		free(sources[i]);
	free(sources);
	free(stats);
	free(nstats);
	ts_free_names(names);
	if (b.failed)
		respond_error(h, out, 500, "out of memory for the metrics");
	else
		respond(h, out, 200, "text/plain; version=0.0.4; charset=utf-8", b.p, b.len);
	jbuf_free(&b);
}

/* The body as sent: gunzipped into *dec (malloc'ed) when it is
 * gzip-encoded, at most h->max_body bytes.  Returns 0, or -1 after
 * recording the error (413 or 400) in h. */
static int decode_body(struct tsd_http_req *h, char **dec, size_t *len)
{
	z_stream z;
	size_t cap = 0, n = 0;
	char *p = NULL;
	int zrc = Z_OK;
	*dec = NULL;
	*len = 0;
	if (!h->gzip) {
		*dec = h->body;
		*len = h->body_len;
		h->body = NULL;
		return 0;
	}
	memset(&z, 0, sizeof z);
	if (inflateInit2(&z, 16 + MAX_WBITS) != Z_OK) {
		req_fail(h, 500, "gzip: cannot start the decoder");
		return -1;
	}
	z.next_in = (unsigned char *)h->body;
	z.avail_in = (unsigned)h->body_len; /* bounded by http-max-body */
	for (;;) {
		if (n == cap) {
			size_t more = cap ? cap : (h->body_len * 4 > 4096 ? h->body_len * 4 : 4096);
			char *q;
			if (cap == h->max_body + 1) {
				req_fail(h, 413, "the body is larger than http-max-body (%zu bytes) once "
				         "decoded from gzip", h->max_body);
				break;
			}
			/* one byte past the limit tells a body past it */
			if (cap + more > h->max_body + 1)
				more = h->max_body + 1 - cap;
			if (!(q = realloc(p, cap + more))) {
				req_fail(h, 500, "out of memory for the decoded body");
				break;
			}
			p = q;
			cap += more;
		}
		z.next_out = (unsigned char *)p + n;
		z.avail_out = (unsigned)(cap - n);
		zrc = inflate(&z, Z_NO_FLUSH);
		n = cap - z.avail_out;
		if (zrc == Z_STREAM_END && z.avail_in) {
			inflateReset(&z); /* concatenated gzip members */
			continue;
		}
		if (zrc == Z_STREAM_END)
			break;
		if (zrc == Z_BUF_ERROR && z.avail_in == 0) {
			req_fail(h, 400, "gzip: the body ends in the middle of the compressed stream");
			break;
		}
		if (zrc != Z_OK && zrc != Z_BUF_ERROR) {
			req_fail(h, 400, "gzip: %s", z.msg ? z.msg : "the body is not valid gzip data");
			break;
		}
	}
	inflateEnd(&z);
	if (h->status) {
		free(p);
		return -1;
	}
	if (n > h->max_body) {
		free(p);
		req_fail(h, 413, "the body is larger than http-max-body (%zu bytes) once decoded "
		         "from gzip", h->max_body);
		return -1;
	}
	*dec = p;
	*len = n;
	return 0;
}

/* The HTTP status of a storage failure of the ingest: 503 for what is
 * expected to pass (a full disk, memory, a database or table closing or
 * busy: the client retries the batch later, and the rows a retry repeats
 * are ignored), 500 for the rest (an I/O error, a damaged file). */
static int storage_status(int code)
{
	switch (code) {
	case TS_ENOSPC:
	case TS_ENOMEM:
	case TS_EREADONLY:
	case TS_ECLOSED:
	case TS_EBUSY:
		return 503;
	default:
		return 500;
	}
}

/* The timestamp precision of a write request: the query parameter
 * precision, "" or absent meaning ns.  /write takes InfluxDB 1.x's
 * names (n, u, ms, s, m, h) and ns, us; /api/v2/write takes 2.x's (ns,
 * us, ms, s).  Returns 0, or -1 after recording a 400 in h. */
static int write_precision(struct tsd_http_req *h, enum lp_precision *prec)
{
	char text[16];
	long n = query_param(h->query, "precision", text, sizeof text);
	int ok;
	*prec = LP_NS;
	if (n == -1 || n == 0)
		return 0;
	if (h->route == TSD_HTTP_WRITE_V2)
		ok = n > 0 && (strcmp(text, "ns") == 0 || strcmp(text, "us") == 0 ||
		               strcmp(text, "ms") == 0 || strcmp(text, "s") == 0);
	else
		ok = n > 0;
	if (!ok || lp_precision_parse(text, prec) < 0) {
		req_fail(h, 400, "precision \"%s\" is not valid (%s)", n > 0 ? text : "...",
		         h->route == TSD_HTTP_WRITE_V2 ? "ns, us, ms or s" : "ns, n, us, u, ms, s, m or h");
		return -1;
	}
	return 0;
}

/* Give a write's answer (status 204, or 400 with msg: the good lines
 * stored), once a standby holds its commits under sync=replica: then
 * the request waits (replica_step) with what it will answer; else at
 * once.  A write of more tables than its result could list
 * (TSD_INGEST_COMMITS_MAX) cannot be followed: 503 at once. */
static void answer_write(struct tsd_http_req *h, const struct tsd_context *ctx, struct jbuf *out,
                         const struct tsd_ingest_result *res, int status, const char *msg)
{
	if (ctx->cfg->sync_replica && res->commits_over) {
		char m[TSD_MESSAGE_MAX];
		snprintf(m, sizeof m, "sync=replica: the write committed to more than %d tables, "
		         "which cannot be followed to a standby; the points are committed here, but "
		         "not known to be on a standby", TSD_INGEST_COMMITS_MAX);
		respond_error(h, out, 503, m);
		return;
	}
	if (ctx->cfg->sync_replica && res->ncommits) {
		size_t n = (size_t)res->ncommits;
		h->replica.commits = malloc(n * sizeof *h->replica.commits);
		h->replica.msg = msg ? strdup(msg) : NULL;
		if (!h->replica.commits || (msg && !h->replica.msg)) {
			respond_error(h, out, 500, "out of memory");
			return;
		}
		memcpy(h->replica.commits, res->commits, n * sizeof *h->replica.commits);
		h->replica.n = res->ncommits;
		h->replica.status = status;
		h->replica.until = tsd_mono_ns() + ctx->cfg->replica_timeout;
		h->replica.on = 1;
		tsd_replica_committed(); /* a follow step ships it at once */
		return;
	}
	if (status == 204)
		respond(h, out, 204, NULL, NULL, 0);
	else
		respond_error(h, out, status, msg);
}

/* A step of a write waiting under sync=replica: its answer once a
 * standby acknowledged every table's commit, 503 after replica-timeout
 * (the points are committed here, but not known to be on a standby),
 * else nothing after waiting up to TSD_REPLICA_WAIT for an ack. */
static void replica_step(struct tsd_http_req *h, struct jbuf *out)
{
	int streams = 0;
	char msg[TSD_MESSAGE_MAX];
	while (h->replica.n > 0) {
		const struct tsd_ingest_commit *c = &h->replica.commits[h->replica.n - 1];
		if (!tsd_replica_acked(c->table, c->version, TSD_REPLICA_WAIT, &streams))
			break;
		h->replica.n--; /* this table's commit is on a standby */
	}
	if (h->replica.n == 0) {
		h->replica.on = 0;
		if (h->replica.status == 204)
			respond(h, out, 204, NULL, NULL, 0);
		else
			respond_error(h, out, h->replica.status, h->replica.msg);
		return;
	}
	if (tsd_mono_ns() < h->replica.until)
		return;
	const struct tsd_ingest_commit *c = &h->replica.commits[h->replica.n - 1];
	tsd_replica_timed_out(msg, sizeof msg, streams, c->table, c->version, "the points are");
	h->replica.on = 0;
	respond_error(h, out, 503, msg);
}

/* POST /write and /api/v2/write: the line protocol body into the
 * tables (ingest.c), answered as InfluxDB 1.x does: 204 when every line
 * was stored (or ignored as a duplicate), 400 naming the first refused
 * line when some were (the others stored: the partial write), 5xx
 * (storage_status) when storing failed. */
static void do_lines(struct tsd_http_req *h, const struct tsd_context *ctx, struct jbuf *out)
{
	struct tsd_ingest_result res;
	enum lp_precision prec;
	char *body;
	size_t len;
	int rc;
	if (write_precision(h, &prec) < 0 || decode_body(h, &body, &len) < 0) {
		respond_error(h, out, h->status, h->msg);
		return;
	}
	if (!ctx->ingest) {
		free(body);
		respond_error(h, out, 503, "the line protocol ingest is not open");
		return;
	}
	/* An empty body may come as NULL: the reader's pointer arithmetic
	 * wants a real one (NULL + 0 is undefined; fuzz_http found it). */
	rc = tsd_ingest_lines(ctx->ingest, body ? body : "", len, prec, &res);
	free(body);
	if (rc == 0)
		answer_write(h, ctx, out, &res, 204, NULL);
	else if (rc == TS_EINVAL)
		answer_write(h, ctx, out, &res, 400, res.error);
	else
		respond_error(h, out, storage_status(rc), res.error[0] ? res.error : ts_strerror(rc));
}

/* POST /api/v1/write: Prometheus remote write (promwrite.c) of the body
 * (gunzipped first when so sent; promwrite.c snappy-decodes it): 204,
 * 400 (undecodable, or series refused), 413, or 5xx (storage_status)
 * when storing failed. */
static void do_write(struct tsd_http_req *h, const struct tsd_context *ctx, struct jbuf *out)
{
	struct tsd_ingest_result res;
	char *body;
	size_t len;
	int status;
	if (decode_body(h, &body, &len) < 0) {
		respond_error(h, out, h->status, h->msg);
		return;
	}
	if (!ctx->ingest) {
		free(body);
		respond_error(h, out, 503, "this daemon has no ingest state");
		return;
	}
	/* An empty body may come as NULL (see do_lines). */
	status = tsd_prom_write(ctx->ingest, body ? body : "", len, h->max_body, &res);
	free(body);
	if (status == 204 || status == 400)
		answer_write(h, ctx, out, &res, status, status == 204 ? NULL : res.error);
	else
		respond_error(h, out, status == 500 ? storage_status(res.code) : status, res.error);
}

/* POST /api/v1/read: Prometheus remote read (promread.c) of the body
 * (gunzipped first when so sent; promread.c snappy-decodes it): 200
 * with the snappy-compressed ReadResponse, 400 (undecodable, a bad
 * matcher, over remote-read-max-samples), 413, or 5xx (storage_status)
 * when reading failed. */
static void do_read(struct tsd_http_req *h, const struct tsd_context *ctx, struct jbuf *out)
{
	struct tsd_prom_read_result res;
	char *body, *resp;
	size_t len, resp_len;
	int status, max;
	if (decode_body(h, &body, &len) < 0) {
		respond_error(h, out, h->status, h->msg);
		return;
	}
	max = __atomic_load_n(&ctx->cfg->remote_read_max_samples, __ATOMIC_RELAXED);
	/* An empty body may come as NULL (see do_lines). */
	status = tsd_prom_read(tsd_db(ctx), body ? body : "", len, h->max_body, (size_t)max, &resp,
	                       &resp_len, &res);
	free(body);
	if (status == 200)
		respond(h, out, 200, "application/x-protobuf", resp, resp_len);
	else
		respond_error(h, out, status == 500 ? storage_status(res.code) : status, res.error);
	free(resp);
}

/* GET|POST /query: InfluxQL (influxq.c), the q in the URL or in a form
 * body; 200 with the results (statement errors inside them), 400 for a
 * parse error or no q. */
static void do_query(struct tsd_http_req *h, const struct tsd_context *ctx, struct jbuf *out)
{
	struct jbuf b = {0};
	char *body;
	size_t len;
	struct timespec now;
	int status;
	if (decode_body(h, &body, &len) < 0) {
		respond_error(h, out, h->status, h->msg);
		return;
	}
	clock_gettime(CLOCK_REALTIME, &now);
	status = tsd_influxq(tsd_db(ctx), h->query, body, len, !h->post,
	                     (int64_t)now.tv_sec * 1000000000 + now.tv_nsec, &b);
	free(body);
	if (b.failed)
		respond_error(h, out, 500, "out of memory for the response");
	else
		respond(h, out, status, "application/json", b.p, b.len);
	jbuf_free(&b);
}

void tsd_http_step(struct tsd_http_req *h, const struct tsd_context *ctx, struct jbuf *out)
{
	static const char health[] = "{\"status\":\"pass\"}\n";
	if (h->replica.on) {
		replica_step(h, out);
	} else if (h->status) {
		respond_error(h, out, h->status, h->msg);
	} else {
		switch (h->route) {
		case TSD_HTTP_PING:
			respond(h, out, 204, NULL, NULL, 0);
			break;
		case TSD_HTTP_HEALTH:
			respond(h, out, 200, "application/json", health, sizeof health - 1);
			break;
		case TSD_HTTP_METRICS:
			do_metrics(h, ctx, out);
			break;
		case TSD_HTTP_WRITE:
		case TSD_HTTP_WRITE_V2:
			do_lines(h, ctx, out);
			break;
		case TSD_HTTP_PROM_WRITE:
			do_write(h, ctx, out);
			break;
		case TSD_HTTP_PROM_READ:
			do_read(h, ctx, out);
			break;
		case TSD_HTTP_QUERY:
			do_query(h, ctx, out);
			break;
		default:
			respond_error(h, out, 404, "no such path");
			break;
		}
	}
	if (out->failed) {
		/* Nothing half-written goes out: the connection is cut. */
		jbuf_free(out);
		h->closes = 1;
		h->answered = 500;
		static const char oom[] = "HTTP/1.1 500 Internal Server Error\r\nContent-Length: 0\r\n"
		                          "Connection: close\r\n\r\n";
		jbuf_put(out, oom, sizeof oom - 1);
	}
	free(h->body);
	h->body = NULL;
}

/* ---- Parsing (the loop thread) ---- */

/* The value of query parameter name in query ("a=1&p=x"), percent- and
 * '+'-decoded into out (size bytes).  Returns its length, -1 when
 * absent, or -2 when longer than out. */
static long query_param(const char *query, const char *name, char *out, size_t size)
{
	size_t nlen = strlen(name);
	for (const char *p = query; p && *p; p = strchr(p, '&') ? strchr(p, '&') + 1 : NULL) {
		if (strncmp(p, name, nlen) != 0 || p[nlen] != '=')
			continue;
		size_t n = 0;
		for (const char *v = p + nlen + 1; *v && *v != '&'; v++) {
			int c = (unsigned char)*v;
			unsigned hi, lo;
			if (c == '+')
				c = ' ';
			else if (c == '%' && sscanf(v + 1, "%1x%1x", &hi, &lo) == 2) {
				c = (int)(hi << 4 | lo);
				v += 2;
			}
			if (n + 1 >= size)
				return -2;
			out[n++] = (char)c;
		}
		out[n] = '\0';
		return (long)n;
	}
	return -1;
}

/* Whether the base64 credentials b64[0..len) of "Authorization: Basic"
 * are "USER:TOKEN" with the daemon's token (the user is ignored): what
 * InfluxDB 1.x clients (the influx shell, Telegraf) send for a username
 * and password, as InfluxDB 2.x's 1.x API takes a token. */
static int basic_authorized(struct tsd_config *cfg, const char *b64, size_t len)
{
	ts_value cred;
	char why[64];
	const char *p, *colon;
	int ok;
	if (len > 4 * (TSD_TOKEN_MAX + 256) / 3 + 4 || val_base64(b64, len, &cred, why, sizeof why) < 0)
		return 0;
	p = cred.v.s.ptr;
	colon = memchr(p, ':', cred.v.s.len);
	ok = colon && tsd_token_check(cfg, colon + 1, cred.v.s.len - (size_t)(colon + 1 - p));
	val_free(&cred);
	return ok;
}

/* Whether the request carries the daemon's token: "Authorization:
 * Token T" or "Bearer T", "Basic" with the token as the password, or the
 * query parameter p (InfluxDB 1.x clients send u and p).  *given:
 * whether it carried any credential at all.  Only asked when the daemon
 * has a token. */
static int authorized(struct tsd_http_conn *c, const char *query, int *given)
{
	const struct jbuf *a = &c->values[H_AUTHORIZATION];
	char tok[TSD_TOKEN_MAX + 2];
	long n;
	*given = 1;
	if (a->len) {
		const char *v = a->p;
		size_t len = a->len, scheme;
		int basic = 0;
		if (len > 6 && strncasecmp(v, "Token ", 6) == 0)
			scheme = 6;
		else if (len > 7 && strncasecmp(v, "Bearer ", 7) == 0)
			scheme = 7;
		else if (len > 6 && strncasecmp(v, "Basic ", 6) == 0)
			scheme = 6, basic = 1;
		else
			return 0; /* a scheme we do not take */
		while (scheme < len && v[scheme] == ' ')
			scheme++;
		while (len > scheme && (v[len - 1] == ' ' || v[len - 1] == '\t'))
			len--;
		if (basic)
			return basic_authorized(c->cfg, v + scheme, len - scheme);
		return tsd_token_check(c->cfg, v + scheme, len - scheme);
	}
	if (query && (n = query_param(query, "p", tok, sizeof tok)) >= 0)
		return tsd_token_check(c->cfg, tok, (size_t)n);
	*given = 0;
	return 0;
}

/* Whether the request may run: its route's level (access.c) against
 * what the client has.  A daemon without a token ignores credentials
 * (the level is loopback-access); with one, a credential that is not
 * the token is refused ("wrong token") even where loopback-access would
 * do, so that a misconfigured client hears of it.  A standby answers
 * the ingest routes 503 naming its primary.  Returns 0, or -1 after
 * recording the 401 or 503 in h. */
static int allowed(struct tsd_http_conn *c, struct tsd_http_req *h, const char *method,
                   const char *path)
{
	enum tsd_access need = tsd_access_route(h->route);
	int authed = 0, given = 0;
	char what[64], msg[TSD_MESSAGE_MAX];
	if (need == TSD_ACCESS_NONE)
		return 0;
	const char *client = c->client ? c->client : "a client";
	if (tsd_token_set(c->cfg) && !(authed = authorized(c, h->query, &given)) && given) {
		tsd_access_log(TSD_LOG_AUTH, "%s: %s %s: authentication failed: wrong token (401)",
		               client, method, path);
		req_fail(h, 401, "wrong token");
		return -1;
	}
	snprintf(what, sizeof what, "%s %s", method, path);
	if (tsd_access_granted(c->cfg, c->peer, authed) >= need) {
		/* 503: a client retries, and succeeds once the primary is
		 * back in its place (tsstore-http(7)) */
		if (!tsd_write_refusal(TSD_OP_NONE, h->route, what, msg, sizeof msg))
			return 0;
		req_fail(h, 503, "%s", msg);
		return -1;
	}
	tsd_access_refusal(c->cfg, c->peer, 1, what, need, msg, sizeof msg);
	tsd_access_log(TSD_LOG_ACCESS, "%s: refused (401): %s", client, msg);
	req_fail(h, 401, "%s", msg);
	return -1;
}

static const struct {
	const char *path;
	enum tsd_http_route route;
	int post;     /* 1: POST; 0: GET and HEAD; 2: GET, HEAD and POST */
} routes[] = {
	{"/ping", TSD_HTTP_PING, 0},
	{"/health", TSD_HTTP_HEALTH, 0},
	{"/metrics", TSD_HTTP_METRICS, 0},
	{"/write", TSD_HTTP_WRITE, 1},
	{"/api/v2/write", TSD_HTTP_WRITE_V2, 1},
	{"/api/v1/write", TSD_HTTP_PROM_WRITE, 1},
	{"/api/v1/read", TSD_HTTP_PROM_READ, 1},
	{"/query", TSD_HTTP_QUERY, 2},
};

/* NUL-terminate b's text (not counted in its len); 0, or -1 when out of
 * memory. */
static int terminate(struct jbuf *b)
{
	jbuf_putc(b, '\0');
	if (b->failed)
		return -1;
	b->len--;
	return 0;
}

/* Trim the spaces around a header value (terminated) in place; returns
 * its start. */
static const char *trimmed(struct jbuf *b)
{
	if (!b->p || b->failed)
		return "";
	while (b->len && (b->p[b->len - 1] == ' ' || b->p[b->len - 1] == '\t'))
		b->len--;
	b->p[b->len] = '\0';
	const char *p = b->p;
	while (*p == ' ' || *p == '\t')
		p++;
	return p;
}

/* Stop parsing with an error that ends the connection: status and the
 * message of its response (parse_error queues it).  Returns -1. */
static int fatal(struct tsd_http_conn *c, int status, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int fatal(struct tsd_http_conn *c, int status, const char *fmt, ...)
{
	va_list ap;
	c->fatal = status;
	va_start(ap, fmt);
	vsnprintf(c->fatal_msg, sizeof c->fatal_msg, fmt, ap);
	va_end(ap);
	return -1;
}

/* The request target of h: its query kept, its path routed (404), the
 * method checked (405), its access (401, allowed).  Returns 0, or -1 when out of
 * memory. */
static int route_request(struct tsd_http_conn *c, struct tsd_http_req *h)
{
	http_parser *p = &c->p;
	struct http_parser_url u;
	const char *path = "";
	size_t plen = 0;
	int route = -1;
	http_parser_url_init(&u);
	if (http_parser_parse_url(c->url.p, c->url.len, p->method == HTTP_CONNECT, &u) != 0) {
		req_fail(h, 400, "the request target is not a valid URL");
		return 0;
	}
	if (u.field_set & (1 << UF_PATH)) {
		path = c->url.p + u.field_data[UF_PATH].off;
		plen = u.field_data[UF_PATH].len;
	}
	if ((u.field_set & (1 << UF_QUERY)) &&
	    !(h->query = strndup(c->url.p + u.field_data[UF_QUERY].off, u.field_data[UF_QUERY].len)))
		return fatal(c, 500, "out of memory for a request");
	for (size_t i = 0; i < sizeof routes / sizeof routes[0]; i++)
		if (strlen(routes[i].path) == plen && memcmp(routes[i].path, path, plen) == 0)
			route = (int)i;
	if (route < 0) {
		req_fail(h, 404, "no such path: %.*s (tsstore-http(7) lists the endpoints)",
		         plen > 200 ? 200 : (int)plen, path);
		return 0;
	}
	h->route = routes[route].route;
	h->head = p->method == HTTP_HEAD && routes[route].post != 1;
	h->post = p->method == HTTP_POST;
	if (routes[route].post == 1 ? p->method != HTTP_POST
	    : p->method != HTTP_GET && p->method != HTTP_HEAD &&
	      (routes[route].post == 0 || p->method != HTTP_POST))
		req_fail(h, 405, "%s %s: the method is not allowed (%s)", http_method_str(p->method),
		         routes[route].path, routes[route].post == 1 ? "POST"
		         : routes[route].post ? "GET, HEAD or POST" : "GET or HEAD");
	else
		allowed(c, h, http_method_str(p->method), routes[route].path);
	return 0;
}

/* The end of the headers: make the request and decide what can be
 * decided now, in this order: the version (505), the route, method and
 * access (route_request), the content coding (415), the declared size
 * (413); then answer "Expect: 100-continue".  Returns 0, or -1 when the
 * request ends the connection (the parser stops; c->fatal says why). */
static int decide(struct tsd_http_conn *c)
{
	http_parser *p = &c->p;
	struct tsd_http_req *h = req_new();
	const char *enc;
	int nomem = 0;
	if (!(c->req = h))
		return fatal(c, 500, "out of memory for a request");
	h->max_body = c->cfg->http_max_body;
	if (p->http_major != 1)
		return fatal(c, 505, "HTTP/%u.%u is not supported (HTTP/1.1 is)", p->http_major,
		             p->http_minor);
	h->http10 = p->http_minor == 0;
	for (int i = 0; i < NHEADERS; i++)
		nomem |= terminate(&c->values[i]);
	if (terminate(&c->url) < 0 || nomem || route_request(c, h) < 0)
		return c->fatal ? -1 : fatal(c, 500, "out of memory for a request");
	enc = trimmed(&c->values[H_CONTENT_ENCODING]);
	if (!h->status && *enc) {
		if (strcasecmp(enc, "gzip") == 0 || strcasecmp(enc, "x-gzip") == 0)
			h->gzip = 1;
		else if (strcasecmp(enc, "snappy") == 0 &&
		         (h->route == TSD_HTTP_PROM_WRITE || h->route == TSD_HTTP_PROM_READ))
			; /* remote write's and read's own coding: promwrite.c and
			   * promread.c decode every such body */
		else if (strcasecmp(enc, "identity") != 0)
			req_fail(h, 415, "Content-Encoding \"%.64s\" is not supported (gzip or identity%s)",
			         enc, h->route == TSD_HTTP_PROM_WRITE || h->route == TSD_HTTP_PROM_READ
			         ? ", or snappy" : "");
	}
	if (p->content_length != ULLONG_MAX && p->content_length > c->cfg->http_max_body)
		return fatal(c, 413, "the body (Content-Length %llu) is larger than http-max-body "
		             "(%zu bytes)", (unsigned long long)p->content_length, c->cfg->http_max_body);
	c->discard = h->status != 0;
	if (strcasecmp(trimmed(&c->values[H_EXPECT]), "100-continue") == 0) {
		static const char cont[] = "HTTP/1.1 100 Continue\r\n\r\n";
		/* Refused: answered now, before the body the client holds
		 * back, and the connection closes (the body is never read). */
		if (h->status)
			return fatal(c, h->status, "%s", h->msg);
		c->sink->interim(c->sink->arg, cont, sizeof cont - 1);
	}
	return 0;
}

static int on_message_begin(http_parser *p)
{
	struct tsd_http_conn *c = p->data;
	c->in_message = 1;
	c->url.len = 0;
	c->field_len = 0;
	c->field_long = 0;
	c->in_value = 0;
	c->cur = H_OTHER;
	for (int i = 0; i < NHEADERS; i++)
		c->values[i].len = 0;
	c->body_len = 0;
	c->discard = 0;
	c->sink->begin(c->sink->arg);
	return 0;
}

/* Append at[0..len) to b; nothing for 0 bytes (the parser may call
 * with none, and b may hold no buffer yet). */
static void keep(struct jbuf *b, const char *at, size_t len)
{
	if (len)
		jbuf_put(b, at, len);
}

static int on_url(http_parser *p, const char *at, size_t len)
{
	struct tsd_http_conn *c = p->data;
	keep(&c->url, at, len);
	return 0;
}

static int on_header_field(http_parser *p, const char *at, size_t len)
{
	struct tsd_http_conn *c = p->data;
	if (c->in_value) {
		c->in_value = 0;
		c->field_len = 0;
		c->field_long = 0;
	}
	if (c->field_len + len > FIELD_MAX)
		c->field_long = 1;
	else {
		memcpy(c->field + c->field_len, at, len);
		c->field_len += len;
	}
	return 0;
}

static int on_header_value(http_parser *p, const char *at, size_t len)
{
	struct tsd_http_conn *c = p->data;
	if (!c->in_value) {
		c->in_value = 1;
		c->cur = H_OTHER;
		for (int i = 1; !c->field_long && i < NHEADERS; i++)
			if (strlen(header_names[i]) == c->field_len &&
			    strncasecmp(header_names[i], c->field, c->field_len) == 0)
				c->cur = (enum header)i;
		/* a header given twice: the last one counts */
		c->values[c->cur].len = 0;
	}
	if (c->cur != H_OTHER)
		keep(&c->values[c->cur], at, len);
	return 0;
}

static int on_headers_complete(http_parser *p)
{
	struct tsd_http_conn *c = p->data;
	return decide(c) < 0 ? -1 : 0;
}

static int on_body(http_parser *p, const char *at, size_t len)
{
	struct tsd_http_conn *c = p->data;
	if (c->body_len + len > c->cfg->http_max_body)
		return fatal(c, 413, "the body is larger than http-max-body (%zu bytes)",
		             c->cfg->http_max_body);
	c->body_len += len;
	if (!c->discard)
		keep(&c->body, at, len);
	if (c->body.failed)
		return fatal(c, 500, "out of memory for the body");
	return 0;
}

/* Give back what the parser held for the request just ended, so that
 * a connection between requests holds nothing (tsd_http_held 0). */
static void release(struct tsd_http_conn *c)
{
	jbuf_free(&c->body);
	jbuf_free(&c->url);
	for (int i = 0; i < NHEADERS; i++)
		jbuf_free(&c->values[i]);
}

static int on_message_complete(http_parser *p)
{
	struct tsd_http_conn *c = p->data;
	struct tsd_http_req *h = c->req;
	struct tsd_request *r;
	c->req = NULL;
	c->in_message = 0;
	if (!http_should_keep_alive(p) || p->upgrade) {
		h->closes = 1; /* the last request of the connection */
		c->stop = 1;
	}
	if (!c->discard) {
		h->body = c->body.p; /* taken over */
		h->body_len = c->body.len;
		memset(&c->body, 0, sizeof c->body);
	}
	release(c);
	if (!(r = tsd_request_http(h)) || c->sink->request(c->sink->arg, r) < 0) {
		c->stop = 1;
		http_parser_pause(p, 1);
		return 0;
	}
	if (c->stop || !c->sink->room(c->sink->arg))
		http_parser_pause(p, 1);
	return 0;
}

static const http_parser_settings settings = {
	.on_message_begin = on_message_begin,
	.on_url = on_url,
	.on_header_field = on_header_field,
	.on_header_value = on_header_value,
	.on_headers_complete = on_headers_complete,
	.on_body = on_body,
	.on_message_complete = on_message_complete,
};

void tsd_http_configure(const struct tsd_config *cfg)
{
	http_parser_set_max_header_size((uint32_t)cfg->http_max_header);
}

void tsd_http_conn_set_client(struct tsd_http_conn *h, const char *client)
{
	h->client = client;
}

struct tsd_http_conn *tsd_http_conn_new(struct tsd_config *cfg, enum tsd_peer peer)
{
	struct tsd_http_conn *c = calloc(1, sizeof *c);
	if (!c)
		return NULL;
	http_parser_init(&c->p, HTTP_REQUEST);
	c->p.data = c;
	c->cfg = cfg;
	c->peer = peer;
	return c;
}

void tsd_http_conn_free(struct tsd_http_conn *c)
{
	if (!c)
		return;
	tsd_http_free(c->req);
	jbuf_free(&c->url);
	for (int i = 0; i < NHEADERS; i++)
		jbuf_free(&c->values[i]);
	jbuf_free(&c->body);
	free(c);
}

size_t tsd_http_held(const struct tsd_http_conn *c)
{
	size_t n = c->url.cap + c->body.cap;
	for (int i = 0; i < NHEADERS; i++)
		n += c->values[i].cap;
	return n;
}

int tsd_http_partial(const struct tsd_http_conn *c)
{
	return c->in_message;
}

/* A request that cannot be parsed: its error response closes. */
static void parse_error(struct tsd_http_conn *c, enum http_errno e)
{
	struct tsd_http_req *h = c->req ? c->req : req_new();
	struct tsd_request *r;
	c->req = NULL;
	c->in_message = 0;
	c->stop = 1;
	release(c);
	if (!h)
		return;
	/* over any status decided at the end of the headers */
	h->status = 0;
	if (c->fatal)
		req_fail(h, c->fatal, "%s", c->fatal_msg);
	else if (e == HPE_HEADER_OVERFLOW)
		req_fail(h, 431, "the request line and headers are larger than http-max-header "
		         "(%zu bytes)", c->cfg->http_max_header);
	else
		req_fail(h, 400, "malformed request: %s", http_errno_description(e));
	c->fatal = 0;
	h->closes = 1;
	free(h->body);
	h->body = NULL;
	h->body_len = 0;
	if ((r = tsd_request_http(h)))
		c->sink->request(c->sink->arg, r);
}

size_t tsd_http_feed(struct tsd_http_conn *c, const char *p, size_t n,
                     const struct tsd_http_sink *sink, int *stop)
{
	size_t used;
	enum http_errno e;
	*stop = c->stop;
	if (c->stop)
		return n;
	c->sink = sink;
	http_parser_pause(&c->p, 0);
	used = http_parser_execute(&c->p, &settings, p, n);
	e = HTTP_PARSER_ERRNO(&c->p);
	if (e != HPE_OK && e != HPE_PAUSED) {
		parse_error(c, e);
		used = n;
	} else if (e == HPE_OK && c->p.upgrade) {
		c->stop = 1; /* answered; the other protocol is not spoken */
		used = n;
	}
	c->sink = NULL;
	*stop = c->stop;
	return c->stop ? n : used;
}
