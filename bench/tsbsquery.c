/*
 * tsbsquery.c -- the tsbs_queries workload (issue 27): the latency of
 * each TSBS cpu-only query type, asked over loopback HTTP of real
 * servers holding the same TSBS file:
 *
 *   influxdb         InfluxDB 1.x, GET /query?db=bench&epoch=ns&q=...:
 *                    every type, in TSBS's InfluxQL (tsbsgen.c)
 *   victoriametrics  GET /api/v1/query_range?query=...&start&end&step:
 *                    the types with a PromQL equivalent (single-groupby,
 *                    cpu-max-all, double-groupby; tsbsgen.c), loaded
 *                    through its /write (VictoriaMetrics maps the line
 *                    protocol to cpu_usage_user{hostname=...,...} and
 *                    so on); run with its defaults, its rollup result
 *                    cache on, as TSBS runs it
 *   tsstored         /query as InfluxDB's, once it answers /query: it is
 *                    asked first (SHOW DATABASES); a 404 prints a
 *                    "not yet" line instead of its results, and is no
 *                    failure
 *
 * Each engine in turn: a fresh server on a fresh directory, the file
 * (its first BENCH_INGEST_QUICK_ROWS lines with --quick) written through
 * /write as ingest_http writes it (bench_ingest_send), the load checked
 * (InfluxDB and tsstored: count(usage_user) equals the lines;
 * VictoriaMetrics: /internal/force_flush, then the sum of
 * count_over_time over the whole range, polled until it equals them),
 * then per type one untimed query, then the timed ones, one at a time on
 * one keep-alive connection: QUERIES_FULL of each type (QUERIES_QUICK),
 * or fewer when a type's queries have taken TYPE_BUDGET_FULL_S seconds
 * (TYPE_BUDGET_QUICK_S), never fewer than QUERIES_MIN.  Every engine is
 * asked the same queries (one seed, tsbsgen.c, over the loaded rows'
 * hosts and range).  A query's latency runs from its request's first
 * byte sent to its answer's last byte read; an answer other than 200, or
 * one reporting an error (InfluxQL: an "error" member; PromQL: a status
 * other than success) fails the engine's run.
 *
 * Reported per engine and type: median_us and p99_us (the nearest-rank
 * 99th percentile), with the query's type, its language, the queries
 * timed, the rows loaded and the answers' mean size in params.  With
 * --compare and tsstored's results, the ratios tsstored/influxdb and
 * tsstored/victoriametrics per type and metric, and the targets of
 * issue 27: tsstored's median and p99 <= 0.5x InfluxDB's, and <=
 * VictoriaMetrics' for the types with a PromQL equivalent.
 *
 * With TSSTORE_BENCH_LATENCIES=FILE in the environment, every timed
 * query is also appended to FILE as "engine type index µs" (a tail is
 * then seen query by query, where p99 says only how large it is).
 */
#ifdef HAVE_WIRE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "bench.h"

#define QUERIES_FULL 200
#define QUERIES_QUICK 20
#define QUERIES_MIN 5
#define TYPE_BUDGET_FULL_S 60.0
#define TYPE_BUDGET_QUICK_S 10.0
#define QUERY_TIMEOUT_S 120        /* one answer, at most */
#define LOAD_VISIBLE_TIMEOUT_S 60.0 /* VictoriaMetrics: until the rows are searchable */
#define TSBSQ_SEED UINT64_C(27)
#define PATH_MAX_LEN (4 * BENCH_TSBSQ_MAX + 256)
#define NENGINES 3
#define TSSTORED 2 /* its index in engines[] */

/* The engines, in the order they run; tsstored last, so that the peers'
 * figures stand whatever becomes of it. */
static const char *const engines[NENGINES] = {"influxdb", "victoriametrics", "tsstored"};

/* One keep-alive HTTP connection and the answer last read on it. */
struct conn {
	int fd, port;
	char *buf;            /* headers and body of the last answer */
	size_t have, cap;     /* bytes in buf, its size */
	size_t body, body_len; /* where the (de-chunked) body lies in buf */
	int status;
};

/* What one engine did with one type. */
struct result {
	double *lat;          /* seconds, n of them */
	size_t n;
	double bytes;         /* the answers' sizes, summed */
};

/* ---- HTTP ---- */

static int conn_open(struct conn *c)
{
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)c->port)};
	struct timeval stall = {.tv_sec = QUERY_TIMEOUT_S};
	int one = 1;
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if ((c->fd = socket(AF_INET, SOCK_STREAM, 0)) < 0)
		return -1;
	setsockopt(c->fd, SOL_SOCKET, SO_RCVTIMEO, &stall, sizeof stall);
	setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
	if (connect(c->fd, (struct sockaddr *)&sa, sizeof sa) < 0) {
		close(c->fd);
		c->fd = -1;
		return -1;
	}
	return 0;
}

static void conn_close(struct conn *c)
{
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
}

/* Read more into c->buf (growing it); bytes read, 0 at EOF, -1. */
static ssize_t conn_fill(struct conn *c)
{
	if (c->have + 65536 > c->cap) {
		size_t cap = c->cap ? c->cap * 2 : 1 << 20;
		char *b = realloc(c->buf, cap + 1);
		if (!b)
			return -1;
		c->buf = b;
		c->cap = cap;
	}
	return recv(c->fd, c->buf + c->have, c->cap - c->have, 0);
}

/* The value of header name in the header block h, or NULL. */
static const char *header(const char *h, const char *name)
{
	size_t n = strlen(name);
	for (const char *p = strstr(h, "\r\n"); p && p[2] != '\r'; p = strstr(p + 2, "\r\n"))
		if (strncasecmp(p + 2, name, n) == 0 && p[2 + n] == ':')
			return p + 3 + n + strspn(p + 3 + n, " ");
	return NULL;
}

/* De-chunk the body at c->buf + c->body in place, reading until its last
 * chunk; 0 or -1. */
static int read_chunked(struct conn *c)
{
	size_t in = c->body, out = c->body;
	for (;;) {
		char *eol;
		while (!(eol = memmem(c->buf + in, c->have - in, "\r\n", 2))) {
			ssize_t r = conn_fill(c);
			if (r <= 0)
				return -1;
			c->have += (size_t)r;
		}
		/* offsets, not pointers: filling may move the buffer */
		size_t data = (size_t)(eol - c->buf) + 2;
		unsigned long size = strtoul(c->buf + in, NULL, 16);
		size_t need = data + size + 2;
		while (c->have < need) {
			ssize_t r = conn_fill(c);
			if (r <= 0)
				return -1;
			c->have += (size_t)r;
		}
		memmove(c->buf + out, c->buf + data, size);
		out += size;
		in = need;
		if (size == 0)
			break;
	}
	c->body_len = out - c->body;
	c->have = in; /* nothing is pipelined: what follows is not ours */
	return 0;
}

/* GET path on c (reconnecting when the server closed it), the whole
 * answer read: c->status, the body at c->buf + c->body, c->body_len
 * bytes, NUL-terminated.  0, or -1 when no answer came. */
static int conn_get(struct conn *c, const char *path)
{
	char req[PATH_MAX_LEN + 128];
	int n = snprintf(req, sizeof req, "GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", path);
	if (n < 0 || (size_t)n >= sizeof req)
		return -1;
	for (int attempt = 0; attempt < 2; attempt++) {
		if (c->fd < 0 && conn_open(c) < 0)
			return -1;
		if (send(c->fd, req, (size_t)n, MSG_NOSIGNAL) == n) {
			c->have = 0;
			char *eoh = NULL;
			ssize_t r = 1;
			while (!eoh && (r = conn_fill(c)) > 0) {
				c->have += (size_t)r;
				c->buf[c->have] = '\0';
				eoh = strstr(c->buf, "\r\n\r\n");
			}
			if (eoh)
				goto answer;
		}
		conn_close(c); /* a kept-alive connection the server closed: once more */
	}
	return -1;
answer:;
	char *eoh = strstr(c->buf, "\r\n\r\n");
	const char *te, *cl, *conn;
	eoh[2] = '\0'; /* the header block ends with its last CRLF */
	c->status = c->have > 12 ? atoi(c->buf + 9) : 0;
	te = header(c->buf, "Transfer-Encoding");
	cl = header(c->buf, "Content-Length");
	conn = header(c->buf, "Connection");
	int closing = conn && strncasecmp(conn, "close", 5) == 0;
	c->body = (size_t)(eoh - c->buf) + 4;
	eoh[2] = '\r';
	if (te && strncasecmp(te, "chunked", 7) == 0) {
		if (read_chunked(c) < 0)
			return -1;
	} else if (cl) {
		size_t len = strtoul(cl, NULL, 10);
		while (c->have < c->body + len) {
			ssize_t r = conn_fill(c);
			if (r <= 0)
				return -1;
			c->have += (size_t)r;
		}
		c->body_len = len;
	} else {
		ssize_t r;
		while ((r = conn_fill(c)) > 0)
			c->have += (size_t)r;
		c->body_len = c->have - c->body;
		closing = 1;
	}
	c->buf[c->body + c->body_len] = '\0';
	if (closing)
		conn_close(c);
	return 0;
}

/* s percent-encoded (every byte but the unreserved ones) at *p. */
static void put_encoded(char **p, const char *s)
{
	static const char hex[] = "0123456789ABCDEF";
	for (; *s; s++) {
		unsigned char b = (unsigned char)*s;
		if ((b >= 'a' && b <= 'z') || (b >= 'A' && b <= 'Z') || (b >= '0' && b <= '9') ||
		    b == '-' || b == '_' || b == '.' || b == '~') {
			*(*p)++ = (char)b;
		} else {
			*(*p)++ = '%';
			*(*p)++ = hex[b >> 4];
			*(*p)++ = hex[b & 15];
		}
	}
	**p = '\0';
}

/* The request path of q for engine (promql: VictoriaMetrics). */
static void query_path(const bench_tsbsq *q, int promql, char *path)
{
	char *p = path;
	if (promql) {
		p += sprintf(p, "/api/v1/query_range?query=");
		put_encoded(&p, q->promql);
		sprintf(p, "&start=%lld&end=%lld&step=%lld", (long long)q->start_s, (long long)q->end_s,
		        (long long)q->step_s);
	} else {
		p += sprintf(p, "/query?db=%s&epoch=ns&q=", BENCH_INFLUX_DB);
		put_encoded(&p, q->influxql);
	}
}

/* Whether c's answer is a success: 200, and no error inside. */
static int answer_ok(const struct conn *c, int promql)
{
	const char *body = c->buf + c->body;
	if (c->status != 200)
		return 0;
	if (promql)
		return strstr(body, "\"status\":\"success\"") != NULL;
	return strstr(body, "\"error\":") == NULL;
}

/* ---- the load ---- */

/* InfluxQL engines: count(usage_user) over everything, as loaded. */
static int influx_count(struct conn *c, size_t *count)
{
	char path[256], *p = path;
	p += sprintf(p, "/query?db=%s&q=", BENCH_INFLUX_DB);
	put_encoded(&p, "SELECT count(usage_user) FROM cpu");
	if (conn_get(c, path) < 0 || c->status != 200)
		return -1;
	const char *v = strstr(c->buf + c->body, "\"values\":[[");
	if (!v || !(v = strchr(v, ',')))
		return -1;
	*count = strtoul(v + 1, NULL, 10);
	return 0;
}

/* VictoriaMetrics: samples of cpu_usage_user searchable over the scope. */
static int victoria_count(struct conn *c, const bench_tsbsq_scope *s, size_t *count)
{
	char path[512], q[128], *p = path;
	long long span = (s->end_ns - s->start_ns) / 1000000000 + 1;
	snprintf(q, sizeof q, "sum(count_over_time(cpu_usage_user[%llds]))", span);
	p += sprintf(p, "/api/v1/query?query=");
	put_encoded(&p, q);
	sprintf(p, "&time=%lld", (long long)(s->end_ns / 1000000000));
	if (conn_get(c, path) < 0 || c->status != 200)
		return -1;
	const char *v = strstr(c->buf + c->body, "\"value\":[");
	/* "value":[TIME,"COUNT"] */
	*count = v && (v = strchr(v + 9, '"')) ? strtoul(v + 1, NULL, 10) : 0;
	return 0;
}

/* Write the rows into engine at port and wait until they are all
 * searchable; 0 or -1 (said on stderr). */
static int load(const char *engine, int port, pid_t pid, bench_batch *b, size_t nb,
                size_t rows, const bench_tsbsq_scope *s)
{
	struct conn c = {.fd = -1, .port = port};
	bench_send sent;
	size_t count = 0;
	int rc = -1;
	if (bench_ingest_send(b, nb, port, 1, pid, &sent) < 0)
		goto out;
	if (strcmp(engine, "victoriametrics") == 0) {
		conn_get(&c, "/internal/force_flush");
		for (double t0 = bench_seconds(); bench_seconds() - t0 < LOAD_VISIBLE_TIMEOUT_S;
		     usleep(200000))
			if (victoria_count(&c, s, &count) == 0 && count == rows)
				break;
	} else if (influx_count(&c, &count) < 0) {
		count = 0;
	}
	rc = count == rows ? 0 : -1;
	if (rc < 0)
		fprintf(stderr, "tsbs_queries: %s holds %zu of the %zu rows written\n", engine, count,
		        rows);
out:
	conn_close(&c);
	free(c.buf);
	return rc;
}

/* ---- the queries ---- */

/* The file TSSTORE_BENCH_LATENCIES names, opened to append, or NULL
 * (unset, or not writable). */
static FILE *latency_file(void)
{
	const char *path = getenv("TSSTORE_BENCH_LATENCIES");
	return path && *path ? fopen(path, "a") : NULL;
}

/* Run the queries of type on c (promql: its PromQL), timed, into r;
 * 0, or -1 when an answer failed (said on stderr). */
static int run_type(const bench_config *cf, struct conn *c, const bench_tsbsq_scope *s,
                    int type, int promql, const char *engine, struct result *r)
{
	size_t max = cf->quick ? QUERIES_QUICK : QUERIES_FULL;
	double budget = cf->quick ? TYPE_BUDGET_QUICK_S : TYPE_BUDGET_FULL_S, spent = 0;
	static char path[PATH_MAX_LEN];
	uint64_t state;
	bench_tsbsq q;
	bench_tsbsq_seed(&state, type, TSBSQ_SEED);
	r->lat = bench_calloc(max, sizeof *r->lat, "tsbs_queries");
	for (size_t i = 0; i <= max && (i <= QUERIES_MIN || spent < budget); i++) {
		bench_tsbsq_make(s, type, &state, &q);
		query_path(&q, promql, path);
		double t0 = bench_seconds();
		int got = conn_get(c, path);
		double t = bench_seconds() - t0;
		if (got < 0 || !answer_ok(c, promql)) {
			fprintf(stderr, "tsbs_queries: %s: %s: %s: answered %d: %.300s\n", engine,
			        bench_tsbsq_name(type), promql ? q.promql : q.influxql, got < 0 ? -1 : c->status,
			        got < 0 ? "" : c->buf + c->body);
			return -1;
		}
		if (i == 0)
			continue; /* the untimed first query of the type */
		r->lat[r->n++] = t;
		r->bytes += (double)c->body_len;
		spent += t;
	}
	FILE *lat = latency_file(); /* written after the queries: no I/O between them */
	for (size_t i = 0; lat && i < r->n; i++)
		fprintf(lat, "%s %s %zu %.0f\n", engine, bench_tsbsq_name(type), i, r->lat[i] * 1e6);
	if (lat)
		fclose(lat);
	return 0;
}

/* Sort r's latencies; its median and nearest-rank p99, µs. */
static void percentiles(struct result *r, double *median, double *p99)
{
	size_t rank;
	*median = bench_median(r->lat, r->n) * 1e6;
	rank = (size_t)((double)r->n * 0.99 + 0.999999);
	*p99 = r->lat[(rank ? rank : 1) - 1] * 1e6;
}

/* Whether tsstored at port answers /query at all: 1 yes, 0 a 404. */
static int answers_query(int port)
{
	struct conn c = {.fd = -1, .port = port};
	int yes = conn_get(&c, "/query?q=SHOW+DATABASES") == 0 && c.status != 404;
	conn_close(&c);
	free(c.buf);
	return yes;
}

/* One engine's whole run: start, load, every type; res[type] filled (n
 * 0 for a type it was not asked).  0, 1 when tsstored has no /query
 * yet, 2 when a peer did not start (not installed: said on stderr), or
 * -1. */
static int run_engine(const bench_config *cf, int e, bench_batch *b, size_t nb, size_t rows,
                      const bench_tsbsq_scope *s, struct result *res)
{
	const char *engine = engines[e];
	char *dir = bench_tmpdir();
	int port = bench_free_port(), promql = strcmp(engine, "victoriametrics") == 0, rc = -1;
	pid_t pid = -1;
	struct conn c = {.fd = -1, .port = port};
	if (bench_wire_start(engine, dir, port, &pid) < 0) {
		fprintf(stderr, "tsbs_queries: %s did not start\n", engine);
		rc = e == TSSTORED ? -1 : 2; /* a peer not installed is skipped */
		goto out;
	}
	if (strcmp(engine, "tsstored") == 0 && !answers_query(port)) {
		fprintf(stderr, "tsbs_queries: tsstored answers GET /query with 404: not yet\n");
		rc = 1;
		goto out;
	}
	if (load(engine, port, pid, b, nb, rows, s) < 0)
		goto out;
	for (int t = 0; t < BENCH_TSBSQ_TYPES; t++)
		if ((!promql || bench_tsbsq_has_promql(t)) &&
		    run_type(cf, &c, s, t, promql, engine, &res[t]) < 0)
			goto out;
	rc = 0;
out:
	conn_close(&c);
	free(c.buf);
	if (pid > 0)
		bench_server_stop(pid);
	bench_rmdir(dir);
	return rc;
}

/* Print the results of engine e; medians and p99s into med[], p99[]. */
static void report(int e, struct result *res, size_t rows, double *med, double *p99)
{
	for (int t = 0; t < BENCH_TSBSQ_TYPES; t++) {
		char params[256];
		if (!res[t].n)
			continue;
		percentiles(&res[t], &med[t], &p99[t]);
		snprintf(params, sizeof params,
		         "\"query\":\"%s\",\"language\":\"%s\",\"queries\":%zu,\"rows\":%zu,"
		         "\"mean_bytes\":%.0f", bench_tsbsq_name(t),
		         strcmp(engines[e], "victoriametrics") ? "influxql" : "promql", res[t].n, rows,
		         res[t].bytes / (double)res[t].n);
		bench_result("tsbs_queries", engines[e], "median_us", med[t], "us", params);
		bench_result("tsbs_queries", engines[e], "p99_us", p99[t], "us", params);
	}
}

/* --compare: tsstored over each peer, type by type, and the
 * targets of issue 27. */
static void compare(double med[][BENCH_TSBSQ_TYPES], double p99[][BENCH_TSBSQ_TYPES])
{
	static const double goal[2] = {0.5, 1.0}; /* over InfluxDB's, VictoriaMetrics' */
	for (int e = 0; e < 2; e++)
		for (int t = 0; t < BENCH_TSBSQ_TYPES; t++) {
			char what[160];
			if (med[e][t] <= 0 || med[TSSTORED][t] <= 0)
				continue;
			for (int m = 0; m < 2; m++) {
				double r = m ? p99[TSSTORED][t] / p99[e][t] : med[TSSTORED][t] / med[e][t];
				printf("{\"workload\":\"tsbs_queries\",\"query\":\"%s\",\"metric\":\"%s\","
				       "\"ratio\":\"tsstored/%s\",\"value\":%.3f}\n", bench_tsbsq_name(t),
				       m ? "p99_us" : "median_us", engines[e], r);
				snprintf(what, sizeof what, "tsstored %s / %s's, %s", m ? "p99" : "median",
				         engines[e], bench_tsbsq_name(t));
				bench_target("tsbs_queries", what, r, "<=", goal[e]);
			}
		}
}

int bench_workload_tsbs_queries(const bench_config *c)
{
	bench_tsbs_row *rows = NULL;
	char *text = NULL;
	size_t n = 0, nb = 0, nbi = 0;
	bench_batch *b = NULL, *bi = NULL;
	bench_tsbsq_scope s = {0};
	static struct result res[NENGINES][BENCH_TSBSQ_TYPES];
	static double med[NENGINES][BENCH_TSBSQ_TYPES], p99[NENGINES][BENCH_TSBSQ_TYPES];
	int rc = -1;
	rows = bench_tsbs_load(c->tsbs_path, c->quick ? BENCH_INGEST_QUICK_ROWS : SIZE_MAX, &n, &text);
	if (!rows || n == 0 || bench_tsbsq_scope_rows(rows, n, &s) < 0) {
		fprintf(stderr, "tsbs_queries: cannot read %s\n", c->tsbs_path);
		bench_error("tsbs_queries", "tsstored", "bench_tsbs_load", TS_EIO);
		goto out;
	}
	b = bench_wire_lines(rows, n, "/write", &nb);
	bi = bench_wire_lines(rows, n, "/write?db=" BENCH_INFLUX_DB, &nbi);
	if (!b || !bi)
		goto out;
	rc = 0;
	for (int e = c->skip_peers ? TSSTORED : 0; e < NENGINES; e++) {
		int r = run_engine(c, e, e == 1 ? b : bi, e == 1 ? nb : nbi, n, &s, res[e]);
		if (r == 1)
			printf("{\"workload\":\"tsbs_queries\",\"engine\":\"tsstored\",\"status\":\"not yet\","
			       "\"why\":\"GET /query answers 404\"}\n");
		else if (r < 0 && e == TSSTORED)
			rc = -1;
		if (r == 0)
			report(e, res[e], n, med[e], p99[e]);
		else if (r < 0 && e == TSSTORED)
			printf("{\"workload\":\"tsbs_queries\",\"engine\":\"%s\",\"error\":\"EIO\","
			       "\"call\":\"GET /query\"}\n", engines[e]);
		else if (r < 0) {
			/* a peer's failure (its answer or count lagging on a
			 * loaded machine: said on stderr above) is no error of
			 * tsstore's: reported, its figures left out */
			fprintf(stderr, "tsbs_queries: %s failed\n", engines[e]);
			printf("{\"workload\":\"tsbs_queries\",\"engine\":\"%s\",\"status\":\"failed\","
			       "\"call\":\"GET /query\"}\n", engines[e]);
		}
		fflush(stdout);
	}
	if (c->compare)
		compare(med, p99);
out:
	for (int e = 0; e < NENGINES; e++)
		for (int t = 0; t < BENCH_TSBSQ_TYPES; t++)
			free(res[e][t].lat);
	if (b)
		bench_batches_free(b, nb);
	if (bi)
		bench_batches_free(bi, nbi);
	bench_tsbsq_scope_free(&s);
	free(rows);
	free(text);
	return rc;
}
#endif
