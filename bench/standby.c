/*
 * standby.c -- the standby workload (issue 33's benchmark, docs/standby.md):
 * what a warm spare costs the primary's ingest, and how far behind it
 * falls.
 *
 * The same rows as the ingest workload's (the TSBS cpu-only file of
 * ../shared/data, JSON-lines inserts of BENCH_INGEST_BATCH rows over
 * BENCH_INGEST_CLIENTS connections, encoded before the clock starts;
 * --quick: its first BENCH_INGEST_QUICK_ROWS rows, else the whole file
 * STANDBY_PASSES times, each pass 12 h later than the one before) go into
 * a fresh tsstored twice per run:
 *
 *   alone         the primary with no follower;
 *   with standby  the primary and a second tsstored --follow of it,
 *                 started (and caught up with the empty table) before
 *                 the clock starts.
 *
 * Both primaries run with tsstored's defaults (sync "interval"), the
 * follower asynchronously (no sync=replica): the inserts never wait for
 * it.  The two take turns, the order swapped at each run, so that a
 * noisy spell of the shared machine hits both alike; each figure is the
 * median of the runs.
 *
 * While the load runs, a thread asks the standby for its stats every
 * STANDBY_SAMPLE_MS and keeps "standby"."lag_seconds" (docs/standby.md
 * section 2.1: how long the standby has lacked commits a heartbeat
 * announced; the primary sends a table's heartbeat at least every
 * TSD_FOLLOW_BUSY_HEARTBEAT while its frames flow).  After the load,
 * catch_up_s is how long until the standby's table has the primary's
 * last commit (the "version" of both tables' stats equal), which is what
 * a lag of 0 means.
 *
 * Reported: rows/s alone and with the standby and their ratio (target
 * >= 0.8), the lag's maximum and p99 over every sample of every run
 * (target: under 1 s), catch_up_s (median and maximum), and the CPU
 * seconds each daemon spent during the load.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"
#include "client.h"

#define STANDBY_PASSES 1          /* the whole file this often, full run */
#define STANDBY_SAMPLE_MS 20      /* the lag sampled this often */
#define STANDBY_READY_S 20.0      /* the standby's first catch-up, at most */
#define STANDBY_CATCH_UP_S 60.0   /* catching up after the load, at most */
#define STANDBY_RUNS_MAX 64
#define STANDBY_FILE_SPAN_NS (INT64_C(12) * 3600 * 1000000000) /* the file's 12 h */

/* One run of one side. */
struct standby_run {
	double rows_per_s;
	double primary_cpu_s, standby_cpu_s; /* during the load */
	double catch_up_s;                   /* with a standby: after the load */
	double *lag;                         /* with a standby: the samples of */
	double *age;                         /* lag_seconds and of the commit age */
	size_t nlag, caplag;
};

/* The lag sampler's state, shared with its thread. */
struct sampler {
	int port;
	int stop;                 /* atomic */
	struct standby_run *run;
	int failed;
};

/* Ask tsstored on c for line (a JSON request) and return its ok answer
 * (json_decref it), or NULL, without a message: the standby answers
 * ENOENT until its table arrives (the callers say what failed). */
static json_t *ask(struct jconn *c, const char *line)
{
	struct jbuf req = {.p = (char *)line, .len = strlen(line), .cap = strlen(line)};
	json_t *reply = NULL;
	char why[512];
	if (jconn_call(c, &req, NULL, NULL, &reply, why, sizeof why) != 0) {
		json_decref(reply);
		return NULL;
	}
	return reply;
}

/* The "version" of table cpu at c (-1: none yet, or the connection
 * failed) and, when at is not NULL, its "commit_time_ns". */
static int64_t version_of(struct jconn *c, int64_t *at)
{
	json_t *r = ask(c, "{\"op\":\"stats\",\"table\":\"" BENCH_TABLE "\"}");
	json_t *v = json_object_get(r, "version"), *t = json_object_get(r, "commit_time_ns");
	int64_t n = json_is_integer(v) ? (int64_t)json_integer_value(v) : -1;
	if (at)
		*at = json_is_integer(t) ? (int64_t)json_integer_value(t) : -1;
	json_decref(r);
	return n;
}

/* The standby's lag_seconds, or -1. */
static double lag_of(struct jconn *c)
{
	json_t *r = ask(c, "{\"op\":\"stats\"}");
	json_t *l = json_object_get(json_object_get(r, "standby"), "lag_seconds");
	double s = json_is_number(l) ? json_number_value(l) : -1;
	json_decref(r);
	return s;
}

static void *sample_main(void *arg)
{
	struct sampler *s = arg;
	struct jconn *c = bench_tsstored_connect(s->port);
	struct standby_run *r = s->run;
	if (!c) {
		s->failed = 1;
		return NULL;
	}
	while (!__atomic_load_n(&s->stop, __ATOMIC_RELAXED)) {
		int64_t at = -1;
		double lag = lag_of(c);
		if (lag < 0 || version_of(c, &at) < 0 || at < 0) {
			s->failed = 1;
			break;
		}
		if (r->nlag == r->caplag) {
			size_t cap = r->caplag ? 2 * r->caplag : 1024;
			double *p = realloc(r->lag, cap * sizeof *p), *q = p ? realloc(r->age, cap * sizeof *q) : NULL;
			if (p)
				r->lag = p;
			if (!q) {
				s->failed = 1;
				break;
			}
			r->age = q;
			r->caplag = cap;
		}
		r->lag[r->nlag] = lag;
		/* the standby's newest commit's age: under a steady load the
		 * primary commits every few ms, so this bounds the lag from above
		 * on the bench's own clock (the daemons' is the same machine's) */
		r->age[r->nlag++] = at ? (double)(bench_wall_ns() - at) / 1e9 : 0;
		struct timespec nap = {0, STANDBY_SAMPLE_MS * 1000000L};
		nanosleep(&nap, NULL);
	}
	jconn_close(c);
	return NULL;
}

/* Wait until the standby at c serves table cpu at version want; 0 with
 * the seconds it took in *took, or -1 after limit_s. */
static int await_version(struct jconn *c, int64_t want, double limit_s, double *took)
{
	double t0 = bench_seconds();
	for (;;) {
		int64_t v = version_of(c, NULL);
		*took = bench_seconds() - t0;
		if (v >= want)
			return 0;
		if (*took > limit_s)
			return -1;
		usleep(2000);
	}
}

/* One side's run: a primary (and with_standby, its follower) on fresh
 * directories, every batch sent, the figures into *out.  0, or -1 after
 * a message. */
static int run_side(bench_batch *b, size_t nb, size_t nrows, int with_standby,
                    struct standby_run *out)
{
	char exe[4096], listen_p[64], listen_s[64], follow[64];
	char *pdir = bench_tmpdir(), *sdir = with_standby ? bench_tmpdir() : NULL;
	int pport = bench_free_port(), sport = with_standby ? bench_free_port() : -1, rc = -1;
	pid_t spid = -1;
	struct jconn *pc = NULL, *sc = NULL;
	struct sampler smp = {.port = sport, .run = out};
	pthread_t th;
	int sampling = 0;
	double took;
	bench_send s;
	bench_daemon_path(exe, sizeof exe);
	snprintf(listen_p, sizeof listen_p, "tcp:127.0.0.1:%d", pport);
	snprintf(listen_s, sizeof listen_s, "tcp:127.0.0.1:%d", sport);
	snprintf(follow, sizeof follow, "tcp:127.0.0.1:%d", pport);
	/* follow is an admin op: loopback clients get it without a token */
	char *pargv[] = {exe, "-d", pdir, "--listen", listen_p, "--loopback-access", "admin", NULL};
	char *sargv[] = {exe, "-d", sdir, "--listen", listen_s, "--follow", follow, NULL};
	pid_t ppid = bench_server_start(pargv, pport);
	if (ppid < 0 || !(pc = bench_tsstored_connect(pport)) || bench_tsstored_create_cpu(pc) < 0) {
		fprintf(stderr, "standby: the primary did not start or create the table\n");
		goto out;
	}
	if (with_standby) {
		if ((spid = bench_server_start(sargv, sport)) < 0 ||
		    !(sc = bench_tsstored_connect(sport)) ||
		    await_version(sc, 0, STANDBY_READY_S, &took) < 0) {
			fprintf(stderr, "standby: the standby did not start or receive the table\n");
			goto out;
		}
		if (pthread_create(&th, NULL, sample_main, &smp) != 0)
			goto out;
		sampling = 1;
	}
	double scpu0 = with_standby ? bench_server_cpu_seconds(spid) : 0;
	if (bench_ingest_send(b, nb, pport, 0, ppid, &s) < 0) {
		fprintf(stderr, "standby: the load failed\n");
		goto out;
	}
	out->rows_per_s = (double)nrows / s.seconds;
	out->primary_cpu_s = s.cpu_s;
	if (with_standby) {
		out->standby_cpu_s = bench_server_cpu_seconds(spid) - scpu0;
		__atomic_store_n(&smp.stop, 1, __ATOMIC_RELAXED);
		pthread_join(th, NULL);
		sampling = 0;
		int64_t want = version_of(pc, NULL);
		if (smp.failed || want < 0 ||
		    await_version(sc, want, STANDBY_CATCH_UP_S, &out->catch_up_s) < 0) {
			fprintf(stderr, "standby: the lag could not be sampled, or the standby did not "
			        "catch up within %.0f s\n", STANDBY_CATCH_UP_S);
			goto out;
		}
	}
	rc = 0;
out:
	if (sampling) {
		__atomic_store_n(&smp.stop, 1, __ATOMIC_RELAXED);
		pthread_join(th, NULL);
	}
	jconn_close(sc);
	jconn_close(pc);
	if (spid > 0)
		bench_server_stop(spid);
	if (ppid > 0)
		bench_server_stop(ppid);
	if (sdir)
		bench_rmdir(sdir);
	bench_rmdir(pdir);
	return rc;
}

/* The maximum and p99 of the samples of every run (age: the commit
 * ages, else lag_seconds).  0, or -1 when out of memory. */
static int pooled(const struct standby_run *with, int runs, int age, double *max, double *p99)
{
	size_t n = 0;
	for (int r = 0; r < runs; r++)
		n += with[r].nlag;
	double *v = malloc((n ? n : 1) * sizeof *v);
	*max = *p99 = 0;
	if (!v)
		return -1;
	n = 0;
	for (int r = 0; r < runs; r++)
		for (size_t i = 0; i < with[r].nlag; i++)
			v[n++] = age ? with[r].age[i] : with[r].lag[i];
	if (n) {
		qsort(v, n, sizeof *v, bench_cmp_double);
		*max = v[n - 1];
		*p99 = v[n * 99 / 100];
	}
	free(v);
	return 0;
}

/* The rows of passes passes over the file: pass k is the file 12 h * k
 * later.  NULL when out of memory. */
static bench_batch *make_load(const bench_tsbs_row *rows, size_t n, int passes, size_t *nb)
{
	bench_tsbs_row *shifted = malloc(n * sizeof *shifted);
	bench_batch *all = NULL;
	*nb = 0;
	for (int k = 0; shifted && k < passes; k++) {
		size_t got = 0;
		for (size_t i = 0; i < n; i++) {
			shifted[i] = rows[i];
			shifted[i].ts += k * STANDBY_FILE_SPAN_NS;
		}
		bench_batch *b = bench_json_batches(shifted, n, &got);
		bench_batch *p = b ? realloc(all, (*nb + got + 1) * sizeof *p) : NULL;
		if (!p) {
			bench_batches_free(b, got);
			bench_batches_free(all, *nb);
			all = NULL;
			break;
		}
		all = p;
		memcpy(all + *nb, b, got * sizeof *b);
		free(b); /* its bodies now belong to all */
		*nb += got;
	}
	free(shifted);
	return all;
}

int bench_workload_standby(const bench_config *c)
{
	char *text = NULL, params[160];
	size_t n = 0, nb = 0;
	int passes = c->quick ? 1 : STANDBY_PASSES, runs = c->repeat, rc = -1;
	struct standby_run alone[STANDBY_RUNS_MAX], with[STANDBY_RUNS_MAX];
	bench_batch *b = NULL;
	bench_tsbs_row *rows =
		bench_tsbs_load(c->tsbs_path, c->quick ? BENCH_INGEST_QUICK_ROWS : SIZE_MAX, &n, &text);
	memset(alone, 0, sizeof alone);
	memset(with, 0, sizeof with);
	if (runs > STANDBY_RUNS_MAX)
		runs = STANDBY_RUNS_MAX;
	if (!rows || n == 0 || !(b = make_load(rows, n, passes, &nb))) {
		fprintf(stderr, "standby: cannot read %s\n", c->tsbs_path);
		bench_error("standby", "tsstored", "bench_tsbs_load", TS_EIO);
		goto out;
	}
	size_t nrows = n * (size_t)passes;
	for (int r = 0; r < runs; r++) {
		/* the order swapped at each run */
		for (int k = 0; k < 2; k++) {
			int side = (k + r) % 2;
			if (run_side(b, nb, nrows, side, side ? &with[r] : &alone[r]) < 0) {
				bench_error("standby", side ? "tsstored_with_standby" : "tsstored", "run",
				            TS_EIO);
				goto out;
			}
		}
		fprintf(stderr, "standby: run %d: %.0f rows/s alone, %.0f with a standby (%.3f); "
		        "CPU s primary %.2f / %.2f, standby %.2f; %zu lag samples; caught up %.3f s "
		        "after the load\n", r + 1, alone[r].rows_per_s, with[r].rows_per_s,
		        with[r].rows_per_s / alone[r].rows_per_s, alone[r].primary_cpu_s,
		        with[r].primary_cpu_s, with[r].standby_cpu_s, with[r].nlag, with[r].catch_up_s);
	}
	double ra[STANDBY_RUNS_MAX], rw[STANDBY_RUNS_MAX], cu[STANDBY_RUNS_MAX], cmax = 0;
	double ca[STANDBY_RUNS_MAX], cw[STANDBY_RUNS_MAX], cs[STANDBY_RUNS_MAX];
	size_t nlag = 0;
	for (int r = 0; r < runs; r++) {
		ra[r] = alone[r].rows_per_s;
		rw[r] = with[r].rows_per_s;
		cu[r] = with[r].catch_up_s;
		ca[r] = alone[r].primary_cpu_s;
		cw[r] = with[r].primary_cpu_s;
		cs[r] = with[r].standby_cpu_s;
		cmax = cu[r] > cmax ? cu[r] : cmax;
		nlag += with[r].nlag;
	}
	double lag_max, lag_p99, age_max, age_p99;
	if (pooled(with, runs, 0, &lag_max, &lag_p99) < 0 || pooled(with, runs, 1, &age_max, &age_p99) < 0)
		goto out;
	snprintf(params, sizeof params, "\"rows\":%zu,\"batch\":%d,\"clients\":%d,\"runs\":%d,"
	         "\"sync\":\"interval\",\"lag_samples\":%zu", nrows, BENCH_INGEST_BATCH,
	         BENCH_INGEST_CLIENTS, runs, nlag);
	size_t nr = (size_t)runs;
	double alone_rate = bench_median(ra, nr), with_rate = bench_median(rw, nr);
	bench_result("standby", "tsstored", "rows_per_s", alone_rate, "rows/s", params);
	bench_result("standby", "tsstored_with_standby", "rows_per_s", with_rate, "rows/s", params);
	bench_result("standby", "tsstored", "primary_cpu_s", bench_median(ca, nr), "s", params);
	bench_result("standby", "tsstored_with_standby", "primary_cpu_s", bench_median(cw, nr), "s",
	             params);
	bench_result("standby", "standby", "standby_cpu_s", bench_median(cs, nr), "s", params);
	bench_result("standby", "standby", "lag_max_s", lag_max, "s", params);
	bench_result("standby", "standby", "lag_p99_s", lag_p99, "s", params);
	bench_result("standby", "standby", "commit_age_max_s", age_max, "s", params);
	bench_result("standby", "standby", "commit_age_p99_s", age_p99, "s", params);
	bench_result("standby", "standby", "catch_up_median_s", bench_median(cu, nr), "s", params);
	bench_result("standby", "standby", "catch_up_max_s", cmax, "s", params);
	bench_target("standby", "rows/s with a standby / alone (asynchronous)",
	             with_rate / alone_rate, ">=", 0.8);
	bench_target("standby", "the standby's lag during the load, max s", lag_max, "<=", 1.0);
	rc = 0;
out:
	for (int r = 0; r < STANDBY_RUNS_MAX; r++) {
		free(with[r].lag);
		free(with[r].age);
	}
	bench_batches_free(b, nb);
	free(rows);
	free(text);
	return rc;
}
