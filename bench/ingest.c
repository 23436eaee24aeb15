/*
 * ingest.c -- the daemon ingest workload (issue 6): the TSBS cpu-only
 * file of ../shared/data, ingested over loopback by tsstored (JSON lines,
 * TCP) and by VictoriaMetrics (influx line protocol over HTTP), in the
 * same run, with the same batches: 512 rows per request, 2 client
 * connections, each waiting for its response before sending the next.
 *
 * Both servers are real processes started here on temporary directories
 * and free loopback ports, and both acknowledge an insert once it is in
 * memory and on its way to disk (tsstored's default sync "interval",
 * VictoriaMetrics' buffering), so rows/s compare like with like.  Every
 * request is encoded before the clock starts: the clients only send and
 * wait.  Reported per engine: rows/s, p50 and p99 request latency, and
 * the server's peak RSS (VmHWM); the targets are tsstored >= 2x
 * VictoriaMetrics' rows/s and tsstored's peak RSS < 256 MB.
 *
 * tsstored is reached through the programs' one client
 * (common/client.c), as tsstore -s tcp:... reaches it; VictoriaMetrics
 * through a few lines of HTTP here.  The servers' start and stop, their
 * peak RSS and CPU time, and the loader (bench_ingest_send) are shared
 * with wire.c's HTTP workloads through bench.h.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"
#include "client.h"

#define INGEST_START_TIMEOUT_S 20.0

struct client {
	int port;
	int http;                 /* VictoriaMetrics: POST /write; else tsstored */
	bench_batch *batches;
	size_t first, n, step;    /* batches first, first+step, ... */
	int failed;
};

static void put(char **p, const char *s, size_t n)
{
	memcpy(*p, s, n);
	*p += n;
}

/* The insert request of rows[0..n) for tsstored. */
static void encode_json(const bench_tsbs_row *rows, size_t n, bench_batch *b)
{
	size_t cap = 64;
	for (size_t i = 0; i < n; i++)
		cap += rows[i].len + 64;
	char *p = b->body = malloc(cap);
	p += sprintf(p, "{\"op\":\"insert\",\"table\":\"cpu\",\"rows\":[");
	for (size_t i = 0; i < n; i++) {
		*p++ = i ? ',' : '[';
		if (i)
			*p++ = '[';
		for (int t = 0; t < BENCH_TSBS_TAGS; t++) {
			*p++ = '"';
			put(&p, rows[i].tag[t], rows[i].taglen[t]);
			put(&p, "\",", 2);
		}
		p += sprintf(p, "%lld", rows[i].ts);
		for (int f = 0; f < BENCH_TSBS_FIELDS; f++)
			p += sprintf(p, ",%lld", rows[i].field[f]);
		*p++ = ']';
	}
	put(&p, "]}", 2); /* jconn_send ends the line */
	b->len = (size_t)(p - b->body);
}

/* The same rows as an HTTP request of influx lines for VictoriaMetrics. */
static void encode_http(const bench_tsbs_row *rows, size_t n, bench_batch *b)
{
	size_t body = 0;
	for (size_t i = 0; i < n; i++)
		body += rows[i].len + 1;
	char *p = b->body = malloc(body + 256);
	p += sprintf(p, "POST /write HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: %zu\r\n\r\n", body);
	for (size_t i = 0; i < n; i++) {
		put(&p, rows[i].line, rows[i].len);
		*p++ = '\n';
	}
	b->len = (size_t)(p - b->body);
}

/* A server that stops answering fails the run instead of hanging it
 * (and `make check`, which runs the quick bench): every connect, send and
 * receive gives up after this long. */
#define INGEST_STALL_S 120
#define INGEST_STALL_NS (INGEST_STALL_S * INT64_C(1000000000))

struct jconn *bench_tsstored_connect(int port)
{
	char addr[64], why[512];
	struct jconn *c;
	snprintf(addr, sizeof addr, "tcp:127.0.0.1:%d", port);
	if (client_connect(addr, NULL, INGEST_STALL_NS, &c, why, sizeof why) < 0) {
		fprintf(stderr, "ingest: %s\n", why);
		return NULL;
	}
	return c;
}

int bench_tsstored_call(struct jconn *c, const char *body, size_t len, json_t **reply)
{
	struct jbuf req = {.p = (char *)body, .len = len, .cap = len};
	char why[512];
	if (jconn_call(c, &req, NULL, NULL, reply, why, sizeof why) != 0) {
		fprintf(stderr, "ingest: tsstored: %s\n", why);
		return -1;
	}
	return 0;
}

static int connect_port(int port)
{
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
	struct timeval stall = {.tv_sec = INGEST_STALL_S};
	int fd = socket(AF_INET, SOCK_STREAM, 0), one = 1;
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd < 0)
		return -1;
	if (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &stall, sizeof stall) < 0 ||
	    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &stall, sizeof stall) < 0) {
		close(fd);
		return -1;
	}
	if (connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0) {
		close(fd);
		return -1;
	}
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
	return fd;
}

int bench_free_port(void)
{
	struct sockaddr_in sa = {.sin_family = AF_INET};
	socklen_t len = sizeof sa;
	int fd = socket(AF_INET, SOCK_STREAM, 0), port = -1;
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd >= 0 && bind(fd, (struct sockaddr *)&sa, sizeof sa) == 0 &&
	    getsockname(fd, (struct sockaddr *)&sa, &len) == 0)
		port = ntohs(sa.sin_port);
	if (fd >= 0)
		close(fd);
	return port;
}

static int send_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
		if (w <= 0)
			return -1;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/* Read one HTTP response with its body.  buf keeps what was read past
 * it.  Returns 0 when it reports success. */
static int read_response(int fd, char *buf, size_t *have, size_t cap)
{
	for (;;) {
		char *end = memmem(buf, *have, "\r\n\r\n", 4);
		if (end) {
			size_t used = (size_t)(end - buf) + 4, body;
			char *cl = memmem(buf, used, "Content-Length:", 15);
			int ok = *have >= 12 && buf[9] == '2';
			body = cl ? strtoul(cl + 15, NULL, 10) : 0;
			if (*have < used + body)
				goto more;
			used += body;
			memmove(buf, buf + used, *have - used);
			*have -= used;
			return ok ? 0 : -1;
		}
	more:;
		ssize_t r = recv(fd, buf + *have, cap - *have, 0);
		if (r <= 0)
			return -1;
		*have += (size_t)r;
	}
}

int bench_http_call(int port, const char *req, size_t len)
{
	char buf[1 << 16];
	size_t have = 0;
	int fd = connect_port(port), rc = -1;
	if (fd < 0)
		return -1;
	if (send_all(fd, req, len) == 0)
		rc = read_response(fd, buf, &have, sizeof buf);
	if (rc < 0)
		fprintf(stderr, "http: request failed: %.*s\n", (int)have, buf);
	close(fd);
	return rc;
}

int bench_http_get(int port, const char *path, char *buf, size_t cap)
{
	char req[512];
	size_t have = 0;
	ssize_t r;
	int fd = connect_port(port), n;
	n = snprintf(req, sizeof req, "GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\n"
	             "Connection: close\r\n\r\n", path);
	if (fd < 0 || cap == 0)
		goto fail;
	if (n < 0 || (size_t)n >= sizeof req || send_all(fd, req, (size_t)n) < 0)
		goto fail;
	while (have + 1 < cap && (r = recv(fd, buf + have, cap - 1 - have, 0)) > 0)
		have += (size_t)r;
	buf[have] = '\0';
	close(fd);
	return have >= 12 && buf[9] == '2' ? 0 : -1;
fail:
	if (fd >= 0)
		close(fd);
	return -1;
}

/* A tsstored client's share of the batches, through the one client. */
static void tsstored_run(struct client *c)
{
	struct jconn *conn = bench_tsstored_connect(c->port);
	c->failed = !conn;
	for (size_t i = c->first; i < c->n && !c->failed; i += c->step) {
		double t0 = bench_seconds();
		if (bench_tsstored_call(conn, c->batches[i].body, c->batches[i].len, NULL) < 0) {
			fprintf(stderr, "ingest: request %zu failed\n", i);
			c->failed = 1;
		}
		c->batches[i].seconds = bench_seconds() - t0;
	}
	jconn_close(conn);
}

static void *client_run(void *arg)
{
	struct client *c = arg;
	char buf[1 << 16];
	size_t have = 0;
	int fd;
	if (!c->http) {
		tsstored_run(c);
		return NULL;
	}
	if ((fd = connect_port(c->port)) < 0) {
		c->failed = 1;
		return NULL;
	}
	for (size_t i = c->first; i < c->n && !c->failed; i += c->step) {
		double t0 = bench_seconds();
		if (send_all(fd, c->batches[i].body, c->batches[i].len) < 0 ||
		    read_response(fd, buf, &have, sizeof buf) < 0) {
			if (!c->failed)
				fprintf(stderr, "ingest: request %zu failed: %.*s\n", i, (int)have, buf);
			c->failed = 1;
		}
		c->batches[i].seconds = bench_seconds() - t0;
	}
	close(fd);
	return NULL;
}

/* The peak RSS (VmHWM) of process pid in MB, or -1. */
double bench_peak_rss_mb(pid_t pid)
{
	char path[64], line[256];
	double kb = -1;
	snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
	FILE *f = fopen(path, "r");
	while (f && fgets(line, sizeof line, f))
		if (strncmp(line, "VmHWM:", 6) == 0)
			kb = strtod(line + 6, NULL);
	if (f)
		fclose(f);
	return kb < 0 ? -1 : kb / 1024;
}

double bench_server_cpu_seconds(pid_t pid)
{
	char path[64], buf[1024], *p;
	unsigned long long ut, st;
	FILE *f;
	snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
	if (!(f = fopen(path, "r")))
		return -1;
	size_t n = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	buf[n] = '\0';
	/* after "pid (comm) ": state, then fields 4..13; utime and stime are
	 * fields 14 and 15 */
	if (!(p = strrchr(buf, ')')) ||
	    sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut, &st) != 2)
		return -1;
	return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

/* Start argv and wait until port accepts; the pid, or -1. */
pid_t bench_server_start(char *const argv[], int port)
{
	pid_t pid = fork();
	if (pid == 0) {
		int null = open("/dev/null", O_WRONLY);
		dup2(null, 1);
		dup2(null, 2);
		execv(argv[0], argv);
		_exit(127);
	}
	for (double t0 = bench_seconds(); pid > 0 && bench_seconds() - t0 < INGEST_START_TIMEOUT_S;) {
		int fd = connect_port(port), status;
		if (fd >= 0) {
			close(fd);
			return pid;
		}
		if (waitpid(pid, &status, WNOHANG) == pid)
			return -1;
		usleep(20000);
	}
	if (pid > 0) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
	}
	return -1;
}

void bench_server_stop(pid_t pid)
{
	kill(pid, SIGTERM);
	waitpid(pid, NULL, 0);
}

int bench_ingest_send(bench_batch *b, size_t nb, int port, int http, pid_t pid, bench_send *out)
{
	struct client c[BENCH_INGEST_CLIENTS];
	pthread_t th[BENCH_INGEST_CLIENTS];
	double t0 = bench_seconds(), *lat = malloc((nb ? nb : 1) * sizeof *lat);
	double cpu0 = bench_server_cpu_seconds(pid);
	int failed = 0;
	for (int i = 0; i < BENCH_INGEST_CLIENTS; i++) {
		c[i] = (struct client){.port = port, .http = http, .batches = b, .first = (size_t)i,
		                       .n = nb, .step = BENCH_INGEST_CLIENTS};
		pthread_create(&th[i], NULL, client_run, &c[i]);
	}
	for (int i = 0; i < BENCH_INGEST_CLIENTS; i++) {
		pthread_join(th[i], NULL);
		failed |= c[i].failed;
	}
	out->seconds = bench_seconds() - t0;
	out->rss_mb = bench_peak_rss_mb(pid);
	out->cpu_s = bench_server_cpu_seconds(pid) - cpu0;
	if (failed || !lat || !nb) {
		free(lat);
		return -1;
	}
	for (size_t i = 0; i < nb; i++)
		lat[i] = b[i].seconds;
	qsort(lat, nb, sizeof *lat, bench_cmp_double);
	out->p50_us = lat[nb / 2] * 1e6;
	out->p99_us = lat[nb * 99 / 100] * 1e6;
	free(lat);
	return 0;
}

/* One engine's run: send every batch over BENCH_INGEST_CLIENTS connections;
 * report rows/s, latency and the server's peak RSS. */
static int run_engine(const char *engine, bench_batch *b, size_t nb, size_t nrows,
                      int port, int http, pid_t pid, double *rows_per_s, double *rss)
{
	bench_send s;
	int rc = bench_ingest_send(b, nb, port, http, pid, &s);
	*rss = s.rss_mb;
	if (rc < 0) {
		fprintf(stderr, "ingest: %s failed\n", engine);
		return -1;
	}
	*rows_per_s = (double)nrows / s.seconds;
	char params[128];
	snprintf(params, sizeof params, "\"rows\":%zu,\"batch\":%d,\"clients\":%d", nrows,
	         BENCH_INGEST_BATCH, BENCH_INGEST_CLIENTS);
	bench_result("ingest", engine, "rows_per_s", *rows_per_s, "rows/s", params);
	bench_result("ingest", engine, "insert_p50_us", s.p50_us, "us", params);
	bench_result("ingest", engine, "insert_p99_us", s.p99_us, "us", params);
	bench_result("ingest", engine, "peak_rss_mb", *rss, "MB", params);
	return 0;
}

/* The path of tsstored: beside this program. */
void bench_daemon_path(char *buf, size_t size)
{
	ssize_t n = readlink("/proc/self/exe", buf, size - 16);
	char *slash;
	buf[n > 0 ? n : 0] = '\0';
	slash = strrchr(buf, '/');
	strcpy(slash ? slash + 1 : buf, "tsstored");
}

typedef void encode_fn(const bench_tsbs_row *rows, size_t n, bench_batch *b);

/* rows[0..n) cut into requests of BENCH_INGEST_BATCH rows by encode; *nb
 * receives their number.  Free with free_batches. */
static bench_batch *make_batches(const bench_tsbs_row *rows, size_t n, encode_fn *encode,
                                  size_t *nb)
{
	bench_batch *b;
	*nb = (n + BENCH_INGEST_BATCH - 1) / BENCH_INGEST_BATCH;
	if (!(b = calloc(*nb + 1, sizeof *b)))
		return NULL;
	for (size_t i = 0; i < *nb; i++)
		encode(rows + i * BENCH_INGEST_BATCH, i + 1 < *nb ? BENCH_INGEST_BATCH : n - i * BENCH_INGEST_BATCH, &b[i]);
	return b;
}

bench_batch *bench_json_batches(const bench_tsbs_row *rows, size_t n, size_t *nb)
{
	return make_batches(rows, n, encode_json, nb);
}

int bench_tsstored_create_cpu(struct jconn *conn)
{
	/* The table: the ten tags as strings, ts, the ten fields. */
	char create[4096], *p = create;
	p += sprintf(p, "{\"op\":\"create\",\"table\":\"cpu\",\"key\":[\"hostname\",\"ts\"],"
	             "\"columns\":[");
	for (int t = 0; t < BENCH_TSBS_TAGS; t++)
		p += sprintf(p, "{\"name\":\"%s\",\"type\":\"string\"},", bench_tsbs_tags[t]);
	p += sprintf(p, "{\"name\":\"ts\",\"type\":\"timestamp\"}");
	for (int f = 0; f < BENCH_TSBS_FIELDS; f++)
		p += sprintf(p, ",{\"name\":\"%s\",\"type\":\"int64\"}", bench_tsbs_fields[f]);
	strcpy(p, "]}");
	return bench_tsstored_call(conn, create, strlen(create), NULL);
}

void bench_batches_free(bench_batch *b, size_t nb)
{
	for (size_t i = 0; b && i < nb; i++)
		free(b[i].body);
	free(b);
}

static int run_tsstored(const bench_tsbs_row *rows, size_t n, double *rate, double *rss)
{
	char exe[4096], listen[64], *dir = bench_tmpdir();
	int port = bench_free_port(), rc = -1;
	size_t nb = 0;
	bench_batch *b = NULL;
	json_t *stats = NULL;
	bench_daemon_path(exe, sizeof exe);
	snprintf(listen, sizeof listen, "tcp:127.0.0.1:%d", port);
	char *argv[] = {exe, "-d", dir, "--listen", listen, NULL};
	pid_t pid = bench_server_start(argv, port);
	struct jconn *conn = pid > 0 ? bench_tsstored_connect(port) : NULL;
	if (!conn || bench_tsstored_create_cpu(conn) < 0) {
		fprintf(stderr, "ingest: tsstored did not start or create the table\n");
		goto out;
	}
	if ((b = make_batches(rows, n, encode_json, &nb)))
		rc = run_engine("tsstored", b, nb, n, port, 0, pid, rate, rss);
	/* The engine's counters after the run (stalls, flushes), for the
	 * record. */
	static const char stats_req[] = "{\"op\":\"stats\",\"table\":\"cpu\"}";
	if (rc == 0 && bench_tsstored_call(conn, stats_req, sizeof stats_req - 1, &stats) == 0) {
		char *text = json_dumps(stats, JSON_COMPACT);
		fprintf(stderr, "ingest: tsstored stats: %s\n", text ? text : "?");
		free(text);
	}
out:
	json_decref(stats);
	jconn_close(conn);
	if (pid > 0)
		bench_server_stop(pid);
	bench_batches_free(b, nb);
	bench_rmdir(dir);
	return rc;
}

static int run_victoria(const bench_tsbs_row *rows, size_t n, double *rate, double *rss)
{
	char data[4200], addr[64], *dir = bench_tmpdir();
	int port = bench_free_port(), rc = -1;
	size_t nb = 0;
	bench_batch *b = NULL;
	snprintf(data, sizeof data, "-storageDataPath=%s", dir);
	snprintf(addr, sizeof addr, "-httpListenAddr=127.0.0.1:%d", port);
	char *argv[] = {"/usr/bin/victoria-metrics", data, addr, "-loggerLevel=ERROR", NULL};
	if (access(argv[0], X_OK) != 0) {
		fprintf(stderr, "ingest: %s is not installed (make bench installs it)\n", argv[0]);
		goto out;
	}
	pid_t pid = bench_server_start(argv, port);
	if (pid < 0) {
		fprintf(stderr, "ingest: victoria-metrics did not start\n");
		goto out;
	}
	if ((b = make_batches(rows, n, encode_http, &nb)))
		rc = run_engine("victoriametrics", b, nb, n, port, 1, pid, rate, rss);
	bench_server_stop(pid);
out:
	bench_batches_free(b, nb);
	bench_rmdir(dir);
	return rc;
}

void bench_workload_ingest(const bench_config *c)
{
	char *text = NULL;
	size_t n = 0;
	double rate[2] = {0, 0}, rss[2] = {0, 0};
	bench_tsbs_row *rows =
		bench_tsbs_load(c->tsbs_path, c->quick ? BENCH_INGEST_QUICK_ROWS : SIZE_MAX, &n, &text);
	if (!rows || n == 0) {
		fprintf(stderr, "ingest: cannot read %s\n", c->tsbs_path);
		bench_error("ingest", "tsstored", "bench_tsbs_load", TS_EIO);
		goto out;
	}
	int ok = 1;
	for (int r = 0; r < c->repeat; r++) {
		double rt, rs;
		if (run_tsstored(rows, n, &rt, &rs) == 0) {
			rate[0] = rt > rate[0] ? rt : rate[0];
			rss[0] = rs > rss[0] ? rs : rss[0];
		} else {
			ok = 0;
		}
		if (!c->skip_peers && run_victoria(rows, n, &rt, &rs) == 0)
			rate[1] = rt > rate[1] ? rt : rate[1];
	}
	if (ok && rate[1] > 0)
		bench_target("ingest", "tsstored rows/s over VictoriaMetrics'", rate[0] / rate[1],
		             ">=", 2.0);
	if (ok)
		bench_target("ingest", "tsstored peak RSS, MB", rss[0], "<=", 256.0);
out:
	free(rows);
	free(text);
}
