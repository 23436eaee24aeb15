/*
 * test_daemon_crash.c -- the prefix guarantee of tsstored under SIGKILL
 * (DESIGN.md section 2, Durability).
 *
 * A real tsstored serves a database in one sync mode; CLIENTS connections
 * (over the unix socket and TCP in turn) each insert numbered batches of
 * ROWS rows into a table of their own, t<i> -- one request at a time,
 * except the last client, which keeps PIPELINE batches in flight, so
 * that kills also find requests received but not yet run -- and record
 * the last batch sent and the last acknowledged (an exact
 * {"ok":true,"inserted":ROWS} line).  Every few batches a client asks for
 * a flush of its table, and the daemon runs with --merge-delay 0, so
 * tablets are written, merged and their log segments retired while the
 * kill can land.  Then the daemon is SIGKILLed: after a random delay, or
 * (one iteration in two) a moment after some flush was sent, so that
 * kills land inside flushes too.  Then, per iteration:
 *   1. `tsstore check -d` on the files as the crash left them must find
 *      no damage (a torn tail after the newest commit is not damage);
 *   2. tsstored starts again on the same directory (recovery);
 *   3. per client, t<i> holds exactly batches 1..k, each complete (rows
 *      k = ROWS .. ROWS * (k + 1) - 1 in key order, each carrying its
 *      batch number), with acked <= k <= sent; the total is counted by an
 *      aggregate, and the rows themselves are read from a few batches
 *      before the previous iteration's k (all of them every FULL_EVERY
 *      iterations and in the last one), so a run of many iterations does
 *      not read a growing table again and again;
 *   4. the check op through the daemon finds no damage.
 * The next iteration carries on from there on the same database, so
 * recovery runs on logs and tablets of every shape; the last one ends
 * with SIGTERM, which must exit 0.
 *
 * Both modes must keep every acknowledged batch: `commit` because each
 * insert is synced before its response; `interval` (the default) because
 * the daemon answers an insert only after ts_insert has returned, and
 * ts_insert has by then written its rows and its commit record into the
 * log's MAP_SHARED mapping (lib/log.c) and published the commit in
 * log/HEAD (also MAP_SHARED): the pages belong to the file in the page
 * cache, which the death of the process does not discard.  (Only a power
 * loss can take the unsynced interval; this test cannot simulate one.)
 *
 * TSSTORE_CRASH_ITERATIONS sets the iterations per mode (default
 * ITERATIONS; `make crash-test N=1000` runs long); TSSTORE_CRASH_SEED
 * fixes the random choices (the kill moments still depend on timing).
 */
#include <inttypes.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include <jansson.h>

#include "support_client.h"

#define T0 INT64_C(1735689600000000000) /* 2025-01-01T00:00:00Z, every row's ts */
#define WAIT TSD_TEST_TIMEOUT_MS

enum {
	CLIENTS = 3,
	ROWS = 20,          /* rows per batch */
	FLUSH_EVERY = 6,    /* a client flushes its table every this many batches */
	PIPELINE = 4,       /* the last client's batches in flight */
	ITERATIONS = 20,    /* per mode, unless TSSTORE_CRASH_ITERATIONS */
	FULL_EVERY = 8,     /* read every row of a table every this many iterations */
	MARGIN = 4,         /* batches before the last verified k read again */
	KILL_DELAY_US = 80000, /* the random kill comes within this after progress */
};

/* One client connection inserting into t<index>. */
struct client {
	pthread_t thread;
	const struct tsd_test_daemon *d;
	int index;
	long stored;            /* batches 1..stored verified before this run */
	int depth;              /* batches sent ahead of their answers, at most */
	atomic_long sent;       /* last batch number sent */
	atomic_long acked;      /* last batch number acknowledged */
	atomic_int flushing;    /* a flush request is waiting for its answer */
	int eof;                /* ended at the daemon's death, as expected */
	char error[512];        /* what else went wrong, or empty */
	atomic_int ended;       /* the thread set eof and error and is ending */
};

/* What a run of one mode saw, printed at its end. */
struct tally {
	long kills, kills_in_flush, batches_acked, lost_unacked, kept_unacked, check_ms_max;
};

static uint64_t rng;

static uint64_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static int iterations(void)
{
	const char *s = getenv("TSSTORE_CRASH_ITERATIONS");
	int n = s ? atoi(s) : 0;
	return n > 0 ? n : ITERATIONS;
}

static int64_t mono_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static void sleep_us(long us)
{
	struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
	while (nanosleep(&ts, &ts) < 0)
		;
}

/* ---- The clients ---- */

/* Batch b of t<i>: rows [k, T0, b] for k in [b * ROWS, (b + 1) * ROWS). */
static char *batch_request(int i, long b)
{
	size_t cap = 64 + (size_t)ROWS * 64, len;
	char *req = malloc(cap);
	if (!req)
		return NULL;
	len = (size_t)snprintf(req, cap, "{\"op\":\"insert\",\"table\":\"t%d\",\"rows\":[", i);
	for (int j = 0; j < ROWS; j++)
		len += (size_t)snprintf(req + len, cap - len, "%s[%ld,%" PRId64 ",%ld]", j ? "," : "",
		                        b * ROWS + j, T0, b);
	snprintf(req + len, cap - len, "]}");
	return req;
}

/* Read the next response on c; it must be want.  Returns 0; 1 when the
 * daemon is gone (EOF or a reset); -1 otherwise (recorded in cl->error,
 * what names the request). */
static int client_read(struct client *cl, struct tsd_test_conn *c, const char *what,
                       const char *want)
{
	char *got = NULL;
	int rc = tsd_test_read_response(c, WAIT, NULL, &got);
	rc = rc == 0 ? (strcmp(tsd_test_drop_version(got), want) == 0 ? 0 : -1) :
	     rc == TSD_TEST_EOF ? 1 : -1;
	if (rc < 0)
		snprintf(cl->error, sizeof cl->error, "%.80s: got %.300s", what, got ? got : "no response");
	free(got);
	return rc;
}

/* Flush t<i> once every batch sent is answered.  0, 1 or -1 as
 * client_read; flushing stays 1 when the daemon died during the flush. */
static int client_flush(struct client *cl, struct tsd_test_conn *c, const char *want)
{
	char req[64];
	int rc = 0;
	while (rc == 0 && atomic_load(&cl->acked) < atomic_load(&cl->sent))
		if ((rc = client_read(cl, c, "insert", want)) == 0)
			atomic_fetch_add(&cl->acked, 1);
	if (rc != 0)
		return rc;
	snprintf(req, sizeof req, "{\"op\":\"flush\",\"table\":\"t%d\"}", cl->index);
	atomic_store(&cl->flushing, 1);
	if (tsd_test_send_line(c, req) < 0)
		return 1;
	if ((rc = client_read(cl, c, req, "{\"ok\":true}\n")) == 0)
		atomic_store(&cl->flushing, 0);
	return rc;
}

/* Insert batches stored + 1, stored + 2, ... into t<i>, up to depth of
 * them waiting for their answers (responses come in request order), and
 * flush now and then, until the daemon dies. */
static void *client_main(void *arg)
{
	struct client *cl = arg;
	struct tsd_test_conn *c = tsd_test_connect(cl->d, cl->index % 2 ? TSD_TEST_TCP : TSD_TEST_UNIX);
	char *want = tsd_test_fmt("{\"ok\":true,\"inserted\":%d}\n", ROWS), *req;
	int rc = c && want ? 0 : -1;
	if (rc < 0)
		snprintf(cl->error, sizeof cl->error, "cannot connect");
	for (long b = cl->stored + 1; rc == 0; b++) {
		if (b % FLUSH_EVERY == cl->index % FLUSH_EVERY && (rc = client_flush(cl, c, want)) != 0)
			break;
		if (!(req = batch_request(cl->index, b))) {
			snprintf(cl->error, sizeof cl->error, "out of memory");
			rc = -1;
			break;
		}
		atomic_store(&cl->sent, b);
		rc = tsd_test_send_line(c, req) < 0 ? 1 : 0;
		free(req);
		if (rc == 0 && b - atomic_load(&cl->acked) >= cl->depth &&
		    (rc = client_read(cl, c, "insert", want)) == 0)
			atomic_fetch_add(&cl->acked, 1);
	}
	cl->eof = rc == 1;
	atomic_store(&cl->ended, 1);
	free(want);
	tsd_test_close(c);
	return NULL;
}

/* ---- Killing ---- */

/* Wait until every client has had a batch acknowledged in this run (at
 * most 10 s).  Returns 1 when they all did. */
static int clients_going(struct client *cl)
{
	int64_t deadline = mono_us() + (int64_t)WAIT * 1000;
	while (mono_us() < deadline) {
		int all = 1;
		for (int i = 0; i < CLIENTS; i++)
			all &= atomic_load(&cl[i].acked) > cl[i].stored || atomic_load(&cl[i].ended);
		if (all)
			return 1;
		sleep_us(500);
	}
	return 0;
}

/* Whether some client waits for a flush now. */
static int flush_in_flight(struct client *cl)
{
	for (int i = 0; i < CLIENTS; i++)
		if (atomic_load(&cl[i].flushing))
			return 1;
	return 0;
}

/* SIGKILL the daemon at a random moment of the clients' run: after a
 * random delay, or a random moment (up to 3 ms) after a flush was sent. */
static void kill_at_random(struct tsd_test_daemon *d, struct client *cl)
{
	if (rnd() % 2) {
		int64_t deadline = mono_us() + 2000000;
		while (!flush_in_flight(cl) && mono_us() < deadline)
			sleep_us(100);
		sleep_us((long)(rnd() % 3000));
	} else {
		sleep_us((long)(rnd() % KILL_DELAY_US));
	}
	tsd_test_daemon_kill(d);
}

/* ---- Verifying ---- */

/* Check one "rows" line of t<i>: each row [k, T0, k / ROWS] with k the
 * next expected.  Returns 0 or -1 with why set. */
static int check_rows(json_t *rows, long *next, char *why, size_t size)
{
	json_t *row;
	size_t j;
	json_array_foreach(rows, j, row) {
		json_int_t k = json_integer_value(json_array_get(row, 0));
		if (json_array_size(row) != 3 || k != *next ||
		    json_integer_value(json_array_get(row, 1)) != T0 ||
		    json_integer_value(json_array_get(row, 2)) != k / ROWS) {
			char *s = json_dumps(row, JSON_COMPACT);
			snprintf(why, size, "row %s where [%ld,%" PRId64 ",%ld] was due", s ? s : "?",
			         *next, T0, *next / ROWS);
			free(s);
			return -1;
		}
		(*next)++;
	}
	return 0;
}

/* Read the response to a query of t<i> line by line, checking that its
 * rows are k = first, first + 1, ...  Returns the number of rows, or -1
 * with why set. */
static long read_rows(struct tsd_test_conn *c, long first, char *why, size_t size)
{
	long next = first;
	for (;;) {
		char *line = NULL;
		size_t len;
		json_t *obj, *ok;
		int rc = tsd_test_read_line(c, WAIT, &line, &len);
		if (rc != TSD_TEST_LINE) {
			snprintf(why, size, "no response to the query (%d)", rc);
			return -1;
		}
		obj = json_loadb(line, len, 0, NULL);
		ok = json_object_get(obj, "ok");
		if (!obj || (!ok && check_rows(json_object_get(obj, "rows"), &next, why, size) < 0) ||
		    (ok && (!json_is_true(ok) ||
		            json_integer_value(json_object_get(obj, "count")) != next - first))) {
			if (ok || !obj)
				snprintf(why, size, "query response line %.300s", line);
			json_decref(obj);
			free(line);
			return -1;
		}
		json_decref(obj);
		free(line);
		if (ok)
			return next - first;
	}
}

/* The number of rows of t<i>, by an aggregate count over every row's
 * window.  Returns it, or -1 with why set. */
static long count_rows(struct tsd_test_conn *c, int i, char *why, size_t size)
{
	char *req = tsd_test_fmt("{\"op\":\"aggregate\",\"table\":\"t%d\",\"from\":%" PRId64 ",\"to\":%" PRId64
	                ",\"every\":\"1s\",\"columns\":{\"b\":[\"count\"]}}", i, T0, T0 + 1);
	json_t *lines = NULL, *first, *last;
	long n = -1;
	if (req && tsd_test_send_line(c, req) == 0 &&
	    tsd_test_read_response(c, WAIT, &lines, NULL) == 0) {
		first = json_array_get(lines, 0);
		last = json_array_get(lines, json_array_size(lines) - 1);
		if (json_is_true(json_object_get(last, "ok")) && json_array_size(lines) == 1)
			n = 0; /* no window has rows */
		else if (json_is_true(json_object_get(last, "ok")) && json_array_size(lines) == 2 &&
		         json_array_size(json_object_get(first, "rows")) == 1)
			n = (long)json_integer_value(
				json_array_get(json_array_get(json_object_get(first, "rows"), 0), 1));
	}
	if (n < 0) {
		char *s = lines ? json_dumps(lines, JSON_COMPACT) : NULL;
		snprintf(why, size, "aggregate count of t%d: %.300s", i, s ? s : "no response");
		free(s);
	}
	json_decref(lines);
	free(req);
	return n;
}

/* The batches t<i> holds: exactly 1..k, each whole, the rows from batch
 * `from` on read one by one.  Returns k, or -1 with why set. */
static long stored_batches(struct tsd_test_conn *c, int i, long from, char *why, size_t size)
{
	char *req = tsd_test_fmt("{\"op\":\"query\",\"table\":\"t%d\",\"ge\":[%ld]}", i, from * ROWS);
	long n = -1, total;
	if (req && tsd_test_send_line(c, req) == 0)
		n = read_rows(c, from * ROWS, why, size);
	else
		snprintf(why, size, "cannot send the query");
	free(req);
	if (n < 0)
		return -1;
	if (n % ROWS) {
		snprintf(why, size, "t%d: %ld rows from batch %ld on: a batch is incomplete", i, n, from);
		return -1;
	}
	if ((total = count_rows(c, i, why, size)) < 0)
		return -1;
	if (total != (from - 1) * ROWS + n) {
		snprintf(why, size, "t%d: %ld rows, but %ld from batch %ld on and %ld before it", i,
		         total, n, from, (from - 1) * ROWS);
		return -1;
	}
	return total / ROWS;
}

/* `tsstore check -d` on the database as it is; fails the test on damage. */
static void check_files(const struct tsd_test_daemon *d, struct tally *t)
{
	char out[TSD_TEST_PATH_MAX];
	const char *const args[] = {"-d", d->data, "check", NULL};
	int64_t start = mono_us();
	int status;
	snprintf(out, sizeof out, "%s/check.out", d->dir);
	unlink(out);
	status = tsd_test_admin(args, out);
	if ((mono_us() - start) / 1000 > t->check_ms_max)
		t->check_ms_max = (long)((mono_us() - start) / 1000);
	if (status != 0) {
		char line[1024];
		FILE *f = fopen(out, "r");
		while (f && fgets(line, sizeof line, f))
			fputs(line, stderr);
		if (f)
			fclose(f);
		fail_msg("tsstore check -d after the kill exited with %d", status);
	}
}

/* The check op through the restarted daemon finds nothing. */
static void check_op(struct tsd_test_conn *c)
{
	char *got = tsd_test_call(c, "{\"op\":\"check\"}");
	if (!got)
		fail_msg("no response to check");
	assert_string_equal(got, "{\"ok\":true,\"count\":0,\"problems\":[]}\n");
	free(got);
}

/* ---- The test ---- */

static void create_tables(struct tsd_test_conn *c)
{
	for (int i = 0; i < CLIENTS; i++) {
		char *req = tsd_test_fmt("{\"op\":\"create\",\"table\":\"t%d\",\"columns\":["
		                "{\"name\":\"k\",\"type\":\"int64\"},{\"name\":\"ts\",\"type\":\"timestamp\"},"
		                "{\"name\":\"b\",\"type\":\"int64\"}],\"key\":[\"k\",\"ts\"]}", i);
		char *got = req ? tsd_test_call(c, req) : NULL;
		assert_non_null(got);
		assert_string_equal(got, "{\"ok\":true}\n");
		free(got);
		free(req);
	}
}

/* Start the clients, kill the daemon under them, wait for them. */
static void run_clients(struct tsd_test_daemon *d, struct client *cl, const long *stored,
                        struct tally *t)
{
	int i, going;
	for (i = 0; i < CLIENTS; i++) {
		cl[i] = (struct client){.d = d, .index = i, .stored = stored[i],
		                        .depth = i == CLIENTS - 1 ? PIPELINE : 1};
		atomic_store(&cl[i].sent, stored[i]);
		atomic_store(&cl[i].acked, stored[i]);
		assert_int_equal(pthread_create(&cl[i].thread, NULL, client_main, &cl[i]), 0);
	}
	going = clients_going(cl);
	kill_at_random(d, cl);
	for (i = 0; i < CLIENTS; i++)
		pthread_join(cl[i].thread, NULL);
	t->kills++;
	t->kills_in_flush += flush_in_flight(cl);
	for (i = 0; i < CLIENTS; i++)
		if (cl[i].error[0] || !cl[i].eof)
			fail_msg("client %d: %s", i, cl[i].error[0] ? cl[i].error : "did not end at the kill");
	if (!going)
		fail_msg("the clients did not get going");
}

/* After the restart: each table holds batches 1..k with acked <= k <= sent. */
static void verify_tables(struct tsd_test_conn *c, const struct client *cl, long *stored,
                          int full, struct tally *t)
{
	char why[512];
	for (int i = 0; i < CLIENTS; i++) {
		long from = full || stored[i] <= MARGIN ? 1 : stored[i] - MARGIN;
		long k = stored_batches(c, i, from, why, sizeof why), acked = atomic_load(&cl[i].acked);
		long sent = atomic_load(&cl[i].sent);
		if (k < 0)
			fail_msg("%s", why);
		if (k < acked || k > sent)
			fail_msg("t%d holds batches 1..%ld; %ld were acknowledged, %ld sent", i, k, acked,
			         sent);
		t->batches_acked += acked - stored[i];
		t->lost_unacked += sent - k;
		t->kept_unacked += k - acked;
		stored[i] = k;
	}
}

/* Per test: the daemon and its directory, freed by teardown whatever
 * happened (TSSTORE_CRASH_KEEP=1 keeps the directory to look at). */
struct fixture {
	struct tsd_test_daemon *d;
	struct tsd_test_conn *c;
};

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof *f);
	if (!f || !(f->d = tsd_test_daemon_new())) {
		free(f);
		return -1;
	}
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	tsd_test_close(f->c);
	if (getenv("TSSTORE_CRASH_KEEP")) {
		tsd_test_daemon_kill(f->d);
		fprintf(stderr, "kept %s\n", f->d->dir);
		free(f->d);
	} else {
		tsd_test_daemon_free(f->d);
	}
	free(f);
	return 0;
}

static void crash_loop(struct fixture *f, const char *sync)
{
	/* The TCP clients flush too: an admin op (--loopback-access). */
	const char *const args[] = {"--sync", sync, "--merge-delay", "0s", "--loopback-access", "admin",
	                            NULL};
	static struct client cl[CLIENTS];
	long stored[CLIENTS] = {0};
	struct tally t = {0};
	int n = iterations();
	int64_t start = mono_us();
	if (tsd_test_daemon_start(f->d, args) < 0) {
		tsd_test_daemon_dump_log(f->d);
		fail_msg("tsstored did not start");
	}
	assert_non_null(f->c = tsd_test_connect(f->d, TSD_TEST_UNIX));
	create_tables(f->c);
	for (int it = 0; it < n; it++) {
		tsd_test_close(f->c);
		f->c = NULL;
		run_clients(f->d, cl, stored, &t);
		check_files(f->d, &t);
		if (tsd_test_daemon_start(f->d, args) < 0) {
			tsd_test_daemon_dump_log(f->d);
			fail_msg("iteration %d: tsstored did not start again after the kill", it);
		}
		assert_non_null(f->c = tsd_test_connect(f->d, TSD_TEST_UNIX));
		verify_tables(f->c, cl, stored, it % FULL_EVERY == FULL_EVERY - 1 || it == n - 1, &t);
		check_op(f->c);
	}
	tsd_test_close(f->c);
	f->c = NULL;
	assert_int_equal(tsd_test_daemon_stop(f->d, 60000), 0);
	print_message("sync %s: %d kills (%ld during a flush) in %.1f s; %ld batches acknowledged, "
	              "%ld sent and lost unanswered, %ld kept unanswered; tables end at batches "
	              "%ld, %ld, %ld; check -d took up to %ld ms\n", sync, n, t.kills_in_flush,
	              (double)(mono_us() - start) / 1e6, t.batches_acked, t.lost_unacked,
	              t.kept_unacked, stored[0],
	              stored[1], stored[2], t.check_ms_max);
}

static void test_crash_commit(void **state) { crash_loop(*state, "commit"); }
static void test_crash_interval(void **state) { crash_loop(*state, "interval"); }

int main(void)
{
	const struct CMUnitTest tests[] = {
		{"daemon_crash_sync_commit", test_crash_commit, setup, teardown, NULL},
		{"daemon_crash_sync_interval", test_crash_interval, setup, teardown, NULL},
	};
	const char *seed = getenv("TSSTORE_CRASH_SEED");
	rng = seed ? strtoull(seed, NULL, 0) : (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);
	if (!rng)
		rng = 1;
	fprintf(stderr, "TSSTORE_CRASH_SEED=%" PRIu64 "\n", rng);
	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests_name("daemon_crash", tests, NULL, NULL);
}
