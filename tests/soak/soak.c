/*
 * soak.c -- tsstored under many connections for a long time (issue 9):
 * `make soak SOAK_SECONDS=600`.  Not part of `make check` (which only
 * builds it, so that it keeps compiling).
 *
 * It starts a real tsstored on a fresh temporary directory
 * (tests/daemon/support_client.c), creates --tables tables m0, m1, ...
 * (host string, ts timestamp, seq int64, v double; key host, ts) and runs
 * for --seconds:
 *   - --inserters connections, inserter i writing to table m<i % tables>
 *     the hosts w<i>h0 .. w<i>h<HOSTS-1>: batch b holds TICKS timestamps
 *     of every host (tick-major), row seq = b * BATCH + tick * HOSTS + h,
 *     v = seq / 2, ts the wall clock (strictly increasing per inserter).
 *     So host h's rows, in key order, have seq h, h + HOSTS, h + 2 HOSTS,
 *     ... with no gap: every check below rests on that.
 *   - --readers connections doing, at random, a "recent" query (a host's
 *     newest RECENT rows, descending), a time-window query of a table's
 *     last second, a latest, and an aggregate (count/min/max of seq per
 *     10 s window of a host).  Each answer is checked: read-your-writes
 *     (the newest row is at least the last row of the batch acknowledged
 *     before the request was sent, and at most one sent by then), rows of
 *     a host contiguous, v = seq / 2, in every aggregate window
 *     count = (max - min) / HOSTS + 1.
 * Connections alternate between the unix socket and TCP.  Every
 * --report seconds it prints one JSON line: elapsed time, rows
 * acknowledged (total and in the interval), requests, errors by code,
 * the daemon's VmRSS and RssAnon (/proc/PID/status), and p50 / p99 / max
 * latency of inserts and of reads over the interval.
 *
 * At the end the connections finish their requests and close, tsstored
 * gets SIGTERM (it must exit 0), is started again on the same directory,
 * and every host's rows are read back: they must be exactly the
 * acknowledged batches (rows lost and extra rows both 0); then the check
 * op must find no damage.  A final JSON line sums it up; the exit status
 * is 0 only when nothing was lost or extra, no request failed, no answer
 * was wrong and the daemon neither crashed nor exited badly.  (A daemon
 * that dies under the load is started again all the same, to count what
 * it lost; the batches whose answers it took along may be there or not.)
 * On failure the directory is kept and named (its log holds the daemon's
 * stderr).
 *
 * Beside that load, an alter racer (issue 24 item 1, --alter-writers N
 * connections, default 2; 0 turns it off) runs round after round of
 * tests/daemon/alter_race.h on tables ar0, ar1, ...: its writers insert
 * self-describing rows while it makes 24 alters (adds and widens), and
 * every value of the table is then checked and the table dropped; a
 * wrong value, a failed request or a row count off fails the soak.
 *
 * Inserters are paced (--rate batches a second each, default 50; 0 runs
 * them flat out) and latency is measured from the moment a request is
 * sent, so an interval in which the daemon falls behind the pace shows as
 * fewer rows rather than as longer waits; readers run flat out.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "alter_race.h"
#include "support_client.h"

#define SEC INT64_C(1000000000)
#define NO_SEQ LONG_MIN

enum {
	HOSTS = 4,               /* hosts per inserter */
	TICKS = 16,              /* timestamps per batch */
	BATCH = HOSTS * TICKS,   /* rows per insert */
	RECENT = 200,            /* rows of a "recent" query */
	WINDOW_LIMIT = 2000,     /* rows of a time-window query */
	TIMEOUT_MS = 60000,      /* longest wait for one response */
	CODES_MAX = 32,          /* distinct error codes counted */
	FIRST_ERRORS = 8,        /* error messages kept and printed */
	TABLES_MAX = 64,
};

/* Read kinds, for the counters. */
enum { R_RECENT, R_WINDOW, R_LATEST, R_AGGREGATE, R_KINDS };
static const char *const kind_names[R_KINDS] = {"recent", "window", "latest", "aggregate"};

static struct {
	double seconds, report, rate;
	int inserters, readers, tables;
	const char *sync;
	int alter_writers;
} opt = {600, 10, 50, 16, 8, 4, "interval", 2};

/* The alter racer's rounds, rows checked and failed rounds. */
static struct {
	pthread_t thread;
	long rounds, rows, refused, failed;
} alters;

/* Latency samples of one interval, in microseconds. */
struct samples {
	pthread_mutex_t mu;
	int64_t *v;
	size_t n, cap;
};

struct inserter {
	pthread_t thread;
	int index;
	atomic_long sent, acked; /* batches sent, acknowledged (0, 1, ...) */
	int in_doubt;            /* the last batch sent has no answer */
	int64_t last_ts;
};

struct reader {
	pthread_t thread;
	int index;
	uint64_t rng;
};

static struct tsd_test_daemon *daemon_;
static struct inserter *inserters;
static struct reader *readers;
static atomic_int stopping;
static atomic_long n_inserts, n_reads[R_KINDS];
static struct samples insert_lat = {.mu = PTHREAD_MUTEX_INITIALIZER},
                      read_lat = {.mu = PTHREAD_MUTEX_INITIALIZER};

/* Errors by code: the daemon's codes, and EOF, TIMEOUT, IO (the
 * connection), WRONG (an answer that fails its check). */
static struct {
	pthread_mutex_t mu;
	char code[CODES_MAX][24];
	long count[CODES_MAX];
	int ncodes;
	long total;
	char first[FIRST_ERRORS][512];
	int nfirst;
} errs = {.mu = PTHREAD_MUTEX_INITIALIZER};

/* ---- Small helpers ---- */

static int64_t mono_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static int64_t wall_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * SEC + ts.tv_nsec;
}

static uint64_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static void error_add(const char *code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void error_add(const char *code, const char *fmt, ...)
{
	va_list ap;
	int i;
	pthread_mutex_lock(&errs.mu);
	for (i = 0; i < errs.ncodes && strcmp(errs.code[i], code) != 0; i++)
		;
	if (i == errs.ncodes && i < CODES_MAX)
		snprintf(errs.code[errs.ncodes++], sizeof errs.code[0], "%s", code);
	if (i < CODES_MAX)
		errs.count[i]++;
	errs.total++;
	if (errs.nfirst < FIRST_ERRORS) {
		va_start(ap, fmt);
		vsnprintf(errs.first[errs.nfirst++], sizeof errs.first[0], fmt, ap);
		va_end(ap);
	}
	pthread_mutex_unlock(&errs.mu);
}

static void sample_add(struct samples *s, int64_t us)
{
	pthread_mutex_lock(&s->mu);
	if (s->n == s->cap) {
		size_t cap = s->cap ? 2 * s->cap : 4096;
		int64_t *v = realloc(s->v, cap * sizeof *v);
		if (v) {
			s->v = v;
			s->cap = cap;
		}
	}
	if (s->n < s->cap)
		s->v[s->n++] = us;
	pthread_mutex_unlock(&s->mu);
}

/* The samples of the interval, sorted, into *out (the caller frees it);
 * the collection starts afresh. */
static size_t samples_take(struct samples *s, int64_t **out)
{
	size_t n;
	pthread_mutex_lock(&s->mu);
	*out = s->v;
	n = s->n;
	s->v = NULL;
	s->n = s->cap = 0;
	pthread_mutex_unlock(&s->mu);
	return n;
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return (x > y) - (x < y);
}

/* Percentile q (0..100) of sorted v[0..n), in ms; -1 when empty. */
static double pct_ms(const int64_t *v, size_t n, int q)
{
	size_t i = n * (size_t)q / 100;
	return n ? (double)v[i < n ? i : n - 1] / 1000.0 : -1;
}

/* ---- Requests ---- */

/* The daemon's answer to req on c, as an array of parsed lines in
 * *lines; reports and counts a failure (kind names it in the message).
 * Returns 0, 1 for an error line (counted under its code), -1 when the
 * connection is unusable (counted). */
static int call(struct tsd_test_conn *c, const char *req, json_t **lines, struct samples *lat)
{
	int64_t start = mono_us();
	int rc = tsd_test_send_line(c, req) < 0 ? TSD_TEST_EOF
	       : tsd_test_read_response(c, TIMEOUT_MS, lines, NULL);
	json_t *last, *err;
	if (rc < 0) {
		error_add(rc == TSD_TEST_EOF ? "EOF" : rc == TSD_TEST_TIMEOUT ? "TIMEOUT" : "IO",
		          "%.100s: %s", req, rc == TSD_TEST_EOF ? "connection closed"
		          : rc == TSD_TEST_TIMEOUT ? "no answer in time" : "unreadable answer");
		return -1;
	}
	sample_add(lat, mono_us() - start);
	last = json_array_get(*lines, json_array_size(*lines) - 1);
	if (json_is_true(json_object_get(last, "ok")))
		return 0;
	err = json_object_get(last, "error");
	error_add(json_string_value(json_object_get(err, "code")) ? json_string_value(
	              json_object_get(err, "code")) : "?", "%.100s: %.300s", req,
	          json_string_value(json_object_get(err, "message")) ? json_string_value(
	              json_object_get(err, "message")) : "?");
	json_decref(*lines);
	*lines = NULL;
	return 1;
}

static int table_of(int inserter) { return inserter % opt.tables; }

/* ---- Inserters ---- */

/* Batch b of inserter w as an insert request into buf. */
static void batch_request(struct inserter *w, long b, char *buf, size_t size)
{
	size_t len = (size_t)snprintf(buf, size, "{\"op\":\"insert\",\"table\":\"m%d\",\"rows\":[",
	                              table_of(w->index));
	for (int tick = 0; tick < TICKS; tick++) {
		int64_t ts = wall_ns();
		w->last_ts = ts > w->last_ts ? ts : w->last_ts + 1000;
		for (int h = 0; h < HOSTS; h++) {
			long seq = b * BATCH + tick * HOSTS + h;
			len += (size_t)snprintf(buf + len, size - len, "%s[\"w%dh%d\",%" PRId64 ",%ld,%.1f]",
			                        tick || h ? "," : "", w->index, h, w->last_ts, seq, seq / 2.0);
		}
	}
	snprintf(buf + len, size - len, "]}");
}

static void *inserter_main(void *arg)
{
	struct inserter *w = arg;
	struct tsd_test_conn *c = tsd_test_connect(daemon_, w->index % 2 ? TSD_TEST_TCP : TSD_TEST_UNIX);
	size_t size = 128 + (size_t)BATCH * 96;
	char *req = malloc(size), want[64];
	snprintf(want, sizeof want, "%d", BATCH);
	if (!c || !req)
		error_add("IO", "inserter %d: cannot connect", w->index);
	for (int64_t due = mono_us(); c && req && !atomic_load(&stopping);) {
		long b = atomic_load(&w->acked);
		json_t *lines = NULL;
		int rc;
		if (opt.rate > 0) { /* paced: batch n is due at start + n / rate */
			int64_t now = mono_us();
			if (now < due) {
				struct timespec ts = {0, (long)(due - now < 100000 ? due - now : 100000) * 1000};
				nanosleep(&ts, NULL);
				continue;
			}
			due += (int64_t)(1e6 / opt.rate);
		}
		batch_request(w, b, req, size);
		atomic_store(&w->sent, b + 1);
		if ((rc = call(c, req, &lines, &insert_lat)) < 0) {
			w->in_doubt = 1; /* its fate is unknown: stop here */
			break;
		}
		if (rc == 0) {
			json_t *n = json_object_get(json_array_get(lines, 0), "inserted");
			if (json_integer_value(n) != BATCH)
				error_add("WRONG", "inserter %d batch %ld: inserted %lld", w->index, b,
				          (long long)json_integer_value(n));
			atomic_store(&w->acked, b + 1);
			atomic_fetch_add(&n_inserts, 1);
		} /* an error line: the batch is not stored; send it again */
		json_decref(lines);
	}
	free(req);
	tsd_test_close(c);
	return NULL;
}

/* ---- Readers ---- */

/* Check that rows (of host h of inserter i) are contiguous: each seq
 * step from the one before (-HOSTS descending, +HOSTS ascending), each of
 * host h, v = seq / 2.  *prev carries the seq across lines (NO_SEQ at
 * first: any); *count counts every row, right or wrong.  Returns 0, or -1
 * with why describing the first wrong row. */
static int check_host_rows(json_t *rows, int i, int h, int step, long *prev, long *count,
                           char *why, size_t size)
{
	char host[32];
	json_t *row;
	size_t j;
	int rc = 0;
	snprintf(host, sizeof host, "w%dh%d", i, h);
	json_array_foreach(rows, j, row) {
		long seq = (long)json_integer_value(json_array_get(row, 2));
		const char *name = json_string_value(json_array_get(row, 0));
		if (rc == 0 && (!name || strcmp(name, host) != 0 || seq % HOSTS != h ||
		                json_number_value(json_array_get(row, 3)) != seq / 2.0 ||
		                (*prev != NO_SEQ && seq != *prev + step))) {
			char *s = json_dumps(row, JSON_COMPACT);
			snprintf(why, size, "row %s after seq %ld of %s", s ? s : "?", *prev, host);
			free(s);
			rc = -1;
		}
		*prev = seq;
		(*count)++;
	}
	return rc;
}

/* The newest seq of host h of inserter i that must be visible now: the
 * last row of the last batch acknowledged (-1 when none). */
static long newest_due(int i, int h)
{
	long acked = atomic_load(&inserters[i].acked);
	return acked ? (acked - 1) * BATCH + (TICKS - 1) * HOSTS + h : -1;
}

/* The newest seq host h of inserter i may have: in the last batch sent. */
static long newest_possible(int i, int h)
{
	return atomic_load(&inserters[i].sent) * BATCH - HOSTS + h;
}

/* A host's newest RECENT rows, descending: contiguous, starting at
 * least at the newest acknowledged row. */
static void read_recent(struct tsd_test_conn *c, int i, int h, int *dead)
{
	char req[256], why[512];
	long due = newest_due(i, h), prev = NO_SEQ, count = 0, first = -1;
	json_t *lines = NULL, *line;
	size_t k;
	int rc;
	snprintf(req, sizeof req, "{\"op\":\"query\",\"table\":\"m%d\",\"prefix\":[\"w%dh%d\"],"
	         "\"desc\":true,\"limit\":%d}", table_of(i), i, h, RECENT);
	if ((rc = call(c, req, &lines, &read_lat)) != 0) {
		*dead = rc < 0;
		return;
	}
	json_array_foreach(lines, k, line) {
		json_t *rows = json_object_get(line, "rows");
		if (first < 0 && json_array_size(rows))
			first = (long)json_integer_value(json_array_get(json_array_get(rows, 0), 2));
		if (check_host_rows(rows, i, h, -HOSTS, &prev, &count, why, sizeof why) < 0) {
			error_add("WRONG", "%s: %s", req, why);
			break;
		}
	}
	if (count > RECENT || (count < RECENT && count && prev != h) || first < due ||
	    (count && first > newest_possible(i, h)))
		error_add("WRONG", "%s: %ld rows, newest seq %ld, oldest %ld; seq %ld was acknowledged",
		          req, count, first, prev, due);
	json_decref(lines);
}

/* Every host's rows of a table in the last second. */
static void read_window(struct tsd_test_conn *c, int t, int *dead)
{
	char req[256];
	json_t *lines = NULL, *line, *row;
	size_t k, j;
	long count = 0;
	int rc;
	snprintf(req, sizeof req, "{\"op\":\"query\",\"table\":\"m%d\",\"from\":%" PRId64
	         ",\"limit\":%d}", t, wall_ns() - SEC, WINDOW_LIMIT);
	if ((rc = call(c, req, &lines, &read_lat)) != 0) {
		*dead = rc < 0;
		return;
	}
	json_array_foreach(lines, k, line)
		json_array_foreach(json_object_get(line, "rows"), j, row) {
			long seq = (long)json_integer_value(json_array_get(row, 2));
			if (json_number_value(json_array_get(row, 3)) != seq / 2.0)
				error_add("WRONG", "%s: row with seq %ld has v %g", req, seq,
				          json_number_value(json_array_get(row, 3)));
			count++;
		}
	if (count > WINDOW_LIMIT)
		error_add("WRONG", "%s: %ld rows", req, count);
	json_decref(lines);
}

static void read_latest(struct tsd_test_conn *c, int i, int h, int *dead)
{
	char req[256];
	long due = newest_due(i, h), seq;
	json_t *lines = NULL, *row;
	int rc;
	snprintf(req, sizeof req, "{\"op\":\"latest\",\"table\":\"m%d\",\"prefix\":[\"w%dh%d\"]}",
	         table_of(i), i, h);
	if ((rc = call(c, req, &lines, &read_lat)) != 0) {
		*dead = rc < 0;
		return;
	}
	row = json_object_get(json_array_get(lines, 0), "row");
	seq = json_is_array(row) ? (long)json_integer_value(json_array_get(row, 2)) : -1;
	if ((json_is_array(row) && (seq % HOSTS != h ||
	                            json_number_value(json_array_get(row, 3)) != seq / 2.0)) ||
	    seq < due || (json_is_array(row) && seq > newest_possible(i, h)))
		error_add("WRONG", "%s: newest seq %ld; seq %ld was acknowledged", req, seq, due);
	json_decref(lines);
}

/* count, min, max of a host's seq per 10 s window of the last minute:
 * count = (max - min) / HOSTS + 1 in every window. */
static void read_aggregate(struct tsd_test_conn *c, int i, int h, int *dead)
{
	char req[384];
	int64_t now = wall_ns();
	json_t *lines = NULL, *line, *row;
	size_t k, j;
	int rc;
	snprintf(req, sizeof req, "{\"op\":\"aggregate\",\"table\":\"m%d\",\"prefix\":[\"w%dh%d\"],"
	         "\"from\":%" PRId64 ",\"to\":%" PRId64 ",\"every\":\"10s\",\"group\":1,"
	         "\"columns\":{\"seq\":[\"count\",\"min\",\"max\"]}}", table_of(i), i, h,
	         now - 60 * SEC, now + SEC);
	if ((rc = call(c, req, &lines, &read_lat)) != 0) {
		*dead = rc < 0;
		return;
	}
	json_array_foreach(lines, k, line)
		json_array_foreach(json_object_get(line, "rows"), j, row) {
			/* [host, window, count, min, max] */
			long n = (long)json_integer_value(json_array_get(row, 2));
			long lo = (long)json_integer_value(json_array_get(row, 3));
			long hi = (long)json_integer_value(json_array_get(row, 4));
			if (json_array_size(row) != 5 || n != (hi - lo) / HOSTS + 1 || lo % HOSTS != h) {
				char *s = json_dumps(row, JSON_COMPACT);
				error_add("WRONG", "%s: window %s", req, s ? s : "?");
				free(s);
			}
		}
	json_decref(lines);
}

static void *reader_main(void *arg)
{
	struct reader *r = arg;
	struct tsd_test_conn *c = tsd_test_connect(daemon_, r->index % 2 ? TSD_TEST_TCP : TSD_TEST_UNIX);
	int dead = !c;
	if (!c)
		error_add("IO", "reader %d: cannot connect", r->index);
	while (!dead && !atomic_load(&stopping)) {
		uint64_t x = rnd(&r->rng);
		int i = (int)(x % (uint64_t)opt.inserters), h = (int)((x >> 16) % HOSTS);
		int kind = (int)((x >> 24) % 100);
		kind = kind < 45 ? R_RECENT : kind < 60 ? R_WINDOW : kind < 85 ? R_LATEST : R_AGGREGATE;
		switch (kind) {
		case R_RECENT: read_recent(c, i, h, &dead); break;
		case R_WINDOW: read_window(c, table_of(i), &dead); break;
		case R_LATEST: read_latest(c, i, h, &dead); break;
		default: read_aggregate(c, i, h, &dead); break;
		}
		atomic_fetch_add(&n_reads[kind], 1);
	}
	tsd_test_close(c);
	return NULL;
}

/* ---- Reports ---- */

/* What the reports gather for the summary. */
static struct {
	long rss_start, rss_max, rss_end, anon_start, anon_max, anon_end;
	double p99_first, p99_worst, p99_worst_at, p99_last;
	double rp99_first, rp99_worst, rp99_worst_at, rp99_last;
	int reports;
} sum = {.rss_start = -1, .anon_start = -1};

static long rows_acked(void)
{
	long n = 0;
	for (int i = 0; i < opt.inserters; i++)
		n += atomic_load(&inserters[i].acked) * BATCH;
	return n;
}

static void print_errors(void)
{
	pthread_mutex_lock(&errs.mu);
	printf("{");
	for (int i = 0; i < errs.ncodes; i++)
		printf("%s\"%s\":%ld", i ? "," : "", errs.code[i], errs.count[i]);
	printf("}");
	pthread_mutex_unlock(&errs.mu);
}

static void track_p99(double p99, double at, double *first, double *worst, double *worst_at,
                      double *last)
{
	if (p99 < 0)
		return;
	if (*first <= 0)
		*first = p99;
	if (p99 > *worst) {
		*worst = p99;
		*worst_at = at;
	}
	*last = p99;
}

/* One line: the interval since the last report, ending at elapsed s. */
static void report(double elapsed, long *rows_before, long *reads_before)
{
	int64_t *iv, *rv;
	size_t ni = samples_take(&insert_lat, &iv), nr = samples_take(&read_lat, &rv);
	long rss = tsd_test_daemon_status_kb(daemon_, "VmRSS");
	long anon = tsd_test_daemon_status_kb(daemon_, "RssAnon");
	long rows = rows_acked(), reads = 0;
	for (int k = 0; k < R_KINDS; k++)
		reads += atomic_load(&n_reads[k]);
	qsort(iv, ni, sizeof *iv, cmp_i64);
	qsort(rv, nr, sizeof *rv, cmp_i64);
	printf("{\"elapsed_s\":%.1f,\"rows_acked\":%ld,\"rows_interval\":%ld,\"inserts_interval\":%zu,"
	       "\"reads_interval\":%ld,\"errors\":", elapsed, rows, rows - *rows_before, ni,
	       reads - *reads_before);
	print_errors();
	printf(",\"rss_kb\":%ld,\"rss_anon_kb\":%ld,"
	       "\"insert_ms\":{\"p50\":%.2f,\"p99\":%.2f,\"max\":%.2f},"
	       "\"read_ms\":{\"p50\":%.2f,\"p99\":%.2f,\"max\":%.2f}}\n", rss, anon,
	       pct_ms(iv, ni, 50), pct_ms(iv, ni, 99), pct_ms(iv, ni, 100),
	       pct_ms(rv, nr, 50), pct_ms(rv, nr, 99), pct_ms(rv, nr, 100));
	fflush(stdout);
	if (rss > sum.rss_max)
		sum.rss_max = rss;
	if (anon > sum.anon_max)
		sum.anon_max = anon;
	if (rss >= 0) {
		sum.rss_end = rss;
		sum.anon_end = anon;
	}
	track_p99(pct_ms(iv, ni, 99), elapsed, &sum.p99_first, &sum.p99_worst, &sum.p99_worst_at,
	          &sum.p99_last);
	track_p99(pct_ms(rv, nr, 99), elapsed, &sum.rp99_first, &sum.rp99_worst, &sum.rp99_worst_at,
	          &sum.rp99_last);
	sum.reports++;
	*rows_before = rows;
	*reads_before = reads;
	free(iv);
	free(rv);
}

/* Run the load for opt.seconds, reporting.  Returns 0, or -1 when the
 * daemon died under it. */
static int run_load(void)
{
	int64_t start = mono_us(), next = start + (int64_t)(opt.report * 1e6);
	int64_t end = start + (int64_t)(opt.seconds * 1e6);
	long rows_before = 0, reads_before = 0;
	int died = 0;
	for (;;) {
		int64_t now = mono_us(), wake = next < end ? next : end;
		if (!tsd_test_daemon_alive(daemon_)) {
			died = 1;
			break;
		}
		if (now >= end)
			break;
		if (now < wake) {
			struct timespec ts = {0, (long)(wake - now < 200000 ? wake - now : 200000) * 1000};
			nanosleep(&ts, NULL);
			continue;
		}
		report((double)(now - start) / 1e6, &rows_before, &reads_before);
		next += (int64_t)(opt.report * 1e6);
	}
	report((double)(mono_us() - start) / 1e6, &rows_before, &reads_before);
	return died ? -1 : 0;
}

/* ---- The end: every acknowledged row, and nothing else ---- */

struct tally {
	long stored, lost, extra, wrong;
};

/* Read host h of inserter i back on c: its rows must be exactly those
 * of its acknowledged batches (and perhaps one batch in doubt). */
static void verify_host(struct tsd_test_conn *c, int i, int h, struct tally *t)
{
	char req[256], why[512] = "";
	long acked = atomic_load(&inserters[i].acked) * TICKS, prev = h - HOSTS, count = 0;
	long doubt = inserters[i].in_doubt ? TICKS : 0;
	int done = 0, bad = 0;
	snprintf(req, sizeof req, "{\"op\":\"query\",\"table\":\"m%d\",\"prefix\":[\"w%dh%d\"]}",
	         table_of(i), i, h);
	if (tsd_test_send_line(c, req) < 0)
		bad = 1;
	while (!bad && !done) {
		char *text = NULL;
		size_t len;
		json_t *obj;
		if (tsd_test_read_line(c, TIMEOUT_MS, &text, &len) != TSD_TEST_LINE) {
			snprintf(why, sizeof why, "no complete answer");
			bad = 1;
			break;
		}
		obj = json_loadb(text, len, 0, NULL);
		if (json_object_get(obj, "ok")) {
			done = 1;
			if (!json_is_true(json_object_get(obj, "ok")) ||
			    json_integer_value(json_object_get(obj, "count")) != count)
				snprintf(why, sizeof why, "last line %.300s", text);
		} else if (!why[0]) {
			check_host_rows(json_object_get(obj, "rows"), i, h, HOSTS, &prev, &count, why,
			                sizeof why);
		} else { /* past a wrong row: count the rest */
			count += (long)json_array_size(json_object_get(obj, "rows"));
		}
		json_decref(obj);
		free(text);
	}
	if (why[0] || bad)
		error_add("WRONG", "read back %s: %s", req, why);
	t->stored += count;
	t->wrong += why[0] || bad;
	if (count < acked)
		t->lost += acked - count;
	if (count > acked + doubt)
		t->extra += count - acked - doubt;
}

struct verifier {
	pthread_t thread;
	int first; /* inserters first, first + step, ... */
	int step;
	struct tally t;
};

static void *verifier_main(void *arg)
{
	struct verifier *v = arg;
	struct tsd_test_conn *c = tsd_test_connect(daemon_, TSD_TEST_UNIX);
	if (!c) {
		error_add("IO", "cannot connect to read back");
		v->t.wrong++;
		return NULL;
	}
	for (int i = v->first; i < opt.inserters; i += v->step)
		for (int h = 0; h < HOSTS; h++)
			verify_host(c, i, h, &v->t);
	tsd_test_close(c);
	return NULL;
}

/* Read every host back, two connections at a time. */
static struct tally verify_all(void)
{
	struct verifier v[2];
	struct tally t = {0};
	for (int k = 0; k < 2; k++) {
		v[k] = (struct verifier){.first = k, .step = 2};
		pthread_create(&v[k].thread, NULL, verifier_main, &v[k]);
	}
	for (int k = 0; k < 2; k++) {
		pthread_join(v[k].thread, NULL);
		t.stored += v[k].t.stored;
		t.lost += v[k].t.lost;
		t.extra += v[k].t.extra;
		t.wrong += v[k].t.wrong;
	}
	return t;
}

/* The check op's count of problems, or -1 when it did not run. */
static long check_problems(void)
{
	struct tsd_test_conn *c = tsd_test_connect(daemon_, TSD_TEST_UNIX);
	json_t *lines = NULL, *last;
	long n = -1;
	if (c && tsd_test_send_line(c, "{\"op\":\"check\"}") == 0 &&
	    tsd_test_read_response(c, 30 * 60 * 1000, &lines, NULL) == 0) {
		last = json_array_get(lines, json_array_size(lines) - 1);
		if (json_is_true(json_object_get(last, "ok")))
			n = (long)json_integer_value(json_object_get(last, "count"));
		if (n != 0) {
			char *s = json_dumps(last, JSON_COMPACT);
			fprintf(stderr, "soak: check: %.2000s\n", s ? s : "?");
			free(s);
		}
	}
	json_decref(lines);
	tsd_test_close(c);
	return n;
}

/* ---- Set-up ---- */

static int create_tables(void)
{
	struct tsd_test_conn *c = tsd_test_connect(daemon_, TSD_TEST_UNIX);
	int rc = c ? 0 : -1;
	for (int t = 0; rc == 0 && t < opt.tables; t++) {
		char req[512], *got;
		snprintf(req, sizeof req, "{\"op\":\"create\",\"table\":\"m%d\",\"columns\":["
		         "{\"name\":\"host\",\"type\":\"string\"},{\"name\":\"ts\",\"type\":\"timestamp\"},"
		         "{\"name\":\"seq\",\"type\":\"int64\"},{\"name\":\"v\",\"type\":\"double\"}],"
		         "\"key\":[\"host\",\"ts\"]}", t);
		got = tsd_test_call(c, req);
		if (!got || strcmp(got, "{\"ok\":true}\n") != 0) {
			fprintf(stderr, "soak: create m%d: %s", t, got ? got : "no answer\n");
			rc = -1;
		}
		free(got);
	}
	tsd_test_close(c);
	return rc;
}

static void usage(void)
{
	fprintf(stderr, "usage: soak [--seconds S] [--report S] [--inserters N] [--rate BATCHES/S]\n"
	                "            [--readers N] [--tables N] [--sync none|interval|commit]\n"
	                "            [--alter-writers N]\n");
	exit(2);
}

static void parse_args(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"seconds", 1, NULL, 's'}, {"report", 1, NULL, 'r'}, {"inserters", 1, NULL, 'i'},
		{"readers", 1, NULL, 'q'}, {"tables", 1, NULL, 't'}, {"sync", 1, NULL, 'y'},
		{"rate", 1, NULL, 'a'}, {"alter-writers", 1, NULL, 'w'},
		{NULL, 0, NULL, 0},
	};
	int ch;
	while ((ch = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (ch) {
		case 's': opt.seconds = atof(optarg); break;
		case 'r': opt.report = atof(optarg); break;
		case 'i': opt.inserters = atoi(optarg); break;
		case 'q': opt.readers = atoi(optarg); break;
		case 't': opt.tables = atoi(optarg); break;
		case 'y': opt.sync = optarg; break;
		case 'a': opt.rate = atof(optarg); break;
		case 'w': opt.alter_writers = atoi(optarg); break;
		default: usage();
		}
	}
	if (optind != argc || opt.seconds <= 0 || opt.report <= 0 || opt.inserters < 1 ||
	    opt.readers < 0 || opt.rate < 0 || opt.tables < 1 || opt.tables > TABLES_MAX ||
	    opt.alter_writers < 0 || opt.alter_writers > AR_WRITERS_MAX)
		usage();
}

/* Rounds of the insert/alter race on fresh tables until the load stops. */
static void *alter_racer_main(void *arg)
{
	static struct ar_run r;
	(void)arg;
	while (!atomic_load(&stopping)) {
		memset(&r, 0, sizeof r);
		r.d = daemon_;
		r.writers = opt.alter_writers;
		r.rounds = 8;
		snprintf(r.table, sizeof r.table, "ar%ld", alters.rounds);
		if (ar_run(&r) < 0 || ar_drop(&r) < 0) {
			alters.failed++;
			error_add("ALTER_RACE", "%s: %s", r.table, r.error);
		}
		alters.rounds++;
		alters.rows += r.rows;
		alters.refused += r.refused;
	}
	return NULL;
}

/* Start the workers, run, stop them. */
static int load(void)
{
	int rc, i;
	inserters = calloc((size_t)opt.inserters, sizeof *inserters);
	readers = calloc((size_t)opt.readers + 1, sizeof *readers);
	if (!inserters || !readers)
		return -1;
	for (i = 0; i < opt.inserters; i++) {
		inserters[i].index = i;
		pthread_create(&inserters[i].thread, NULL, inserter_main, &inserters[i]);
	}
	for (i = 0; i < opt.readers; i++) {
		readers[i] = (struct reader){.index = i, .rng = 0x9E3779B97F4A7C15u * (uint64_t)(i + 1)};
		pthread_create(&readers[i].thread, NULL, reader_main, &readers[i]);
	}
	if (opt.alter_writers)
		pthread_create(&alters.thread, NULL, alter_racer_main, NULL);
	rc = run_load();
	atomic_store(&stopping, 1);
	if (opt.alter_writers)
		pthread_join(alters.thread, NULL);
	for (i = 0; i < opt.inserters; i++)
		pthread_join(inserters[i].thread, NULL);
	for (i = 0; i < opt.readers; i++)
		pthread_join(readers[i].thread, NULL);
	return rc;
}

int main(int argc, char **argv)
{
	const char *args[] = {"--sync", NULL, NULL};
	int died, stop_status = -1, restarted = 0, ok;
	long problems = -1, acked, errors;
	double verify_s = 0;
	struct tally t = {0};
	parse_args(argc, argv);
	args[1] = opt.sync;
	signal(SIGPIPE, SIG_IGN);
	if (!(daemon_ = tsd_test_daemon_new()) || tsd_test_daemon_start(daemon_, args) < 0 ||
	    create_tables() < 0) {
		if (daemon_)
			tsd_test_daemon_dump_log(daemon_);
		fprintf(stderr, "soak: tsstored did not start\n");
		tsd_test_daemon_free(daemon_);
		return 1;
	}
	sum.rss_start = tsd_test_daemon_status_kb(daemon_, "VmRSS");
	sum.anon_start = tsd_test_daemon_status_kb(daemon_, "RssAnon");
	fprintf(stderr, "soak: tsstored pid %d on %s for %.0f s: %d inserters into %d tables "
	        "(%g batches of %d rows a second each; 0: unpaced), %d readers, sync %s\n",
	        (int)daemon_->pid, daemon_->dir, opt.seconds, opt.inserters, opt.tables, opt.rate,
	        BATCH, opt.readers, opt.sync);
	died = load() < 0;
	acked = rows_acked();
	if (!died)
		stop_status = tsd_test_daemon_stop(daemon_, 10 * 60 * 1000);
	if (tsd_test_daemon_start(daemon_, args) == 0) { /* after a crash too: what was lost? */
		int64_t start = mono_us();
		restarted = 1;
		t = verify_all();
		verify_s = (double)(mono_us() - start) / 1e6;
		problems = check_problems();
		if (tsd_test_daemon_stop(daemon_, 10 * 60 * 1000) != 0)
			stop_status = -1;
	}
	pthread_mutex_lock(&errs.mu);
	errors = errs.total;
	pthread_mutex_unlock(&errs.mu);
	ok = !died && stop_status == 0 && restarted && t.lost == 0 && t.extra == 0 && t.wrong == 0 &&
	     problems == 0 && errors == 0 && t.stored == acked && alters.failed == 0;
	printf("{\"summary\":true,\"ok\":%s,\"seconds\":%.0f,\"inserters\":%d,\"readers\":%d,"
	       "\"tables\":%d,\"rate\":%g,\"sync\":\"%s\",\"rows_acked\":%ld,\"rows_stored\":%ld,\"rows_lost\":%ld,"
	       "\"rows_extra\":%ld,\"hosts_wrong\":%ld,\"inserts\":%ld,\"reads\":{",
	       ok ? "true" : "false", opt.seconds, opt.inserters, opt.readers, opt.tables, opt.rate,
	       opt.sync,
	       acked, t.stored, t.lost, t.extra, t.wrong, (long)atomic_load(&n_inserts));
	for (int k = 0; k < R_KINDS; k++)
		printf("%s\"%s\":%ld", k ? "," : "", kind_names[k], (long)atomic_load(&n_reads[k]));
	printf("},\"errors_total\":%ld,\"errors\":", errors);
	print_errors();
	printf(",\"alter_race\":{\"rounds\":%ld,\"rows_checked\":%ld,\"stale_refused\":%ld,"
	       "\"failed\":%ld}", alters.rounds, alters.rows, alters.refused, alters.failed);
	printf(",\"daemon_died\":%s,\"sigterm_exit\":%d,\"check_problems\":%ld,\"verify_s\":%.1f,"
	       "\"rss_kb\":{\"start\":%ld,\"max\":%ld,\"end\":%ld},"
	       "\"rss_anon_kb\":{\"start\":%ld,\"max\":%ld,\"end\":%ld},"
	       "\"insert_p99_ms\":{\"first\":%.2f,\"worst\":%.2f,\"worst_at_s\":%.0f,\"last\":%.2f},"
	       "\"read_p99_ms\":{\"first\":%.2f,\"worst\":%.2f,\"worst_at_s\":%.0f,\"last\":%.2f}}\n",
	       died ? "true" : "false", stop_status, problems, verify_s, sum.rss_start, sum.rss_max,
	       sum.rss_end, sum.anon_start, sum.anon_max, sum.anon_end, sum.p99_first, sum.p99_worst,
	       sum.p99_worst_at, sum.p99_last, sum.rp99_first, sum.rp99_worst, sum.rp99_worst_at,
	       sum.rp99_last);
	for (int k = 0; k < errs.nfirst; k++)
		fprintf(stderr, "soak: error: %s\n", errs.first[k]);
	if (!ok) {
		tsd_test_daemon_kill(daemon_);
		fprintf(stderr, "soak: FAILED; kept %s (tsstored's stderr in its log)\n", daemon_->dir);
		free(daemon_);
		return 1;
	}
	tsd_test_daemon_free(daemon_);
	return 0;
}
