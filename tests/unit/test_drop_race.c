/*
 * test_drop_race.c -- calls racing ts_drop (issue 24 item 9): inserts,
 * queries, alters, flushes and merges on a table that another thread
 * drops get TS_ECLOSED "table ... was dropped" (or succeed, when they
 * came first), never TS_EIO or another error, never a crash; and once
 * the drop returned and the handles are closed, nothing of the table is
 * left in the database directory.
 *
 * Each round (5 of them, up to a second each here) creates table d,
 * starts one thread per kind of call, waits until every thread has made
 * a successful call (a condition, not a time), drops the table, and
 * joins them: each runs until its first failure, which the drop
 * guarantees.  Flushes need rows to write, so
 * the flusher's calls come after inserts; the merger merges what the
 * flushes left.
 */
#include <dirent.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "support.h"

#define NOW INT64_C(1795262400000000000) /* 2026-11-21T12:00:00Z */

enum { ROUNDS = 5, KINDS = 6 };

static const char *const kind_names[KINDS] = {"insert", "query", "alter", "flush", "merge",
                                              "stats"};

static int64_t fixed_clock(void *arg) { (void)arg; return NOW; }

struct round {
	ts_table *t;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int started;                 /* threads that made a successful call */
	int rc[KINDS];
	char msg[KINDS][256];
	long ok[KINDS];
};

struct racer {
	struct round *r;
	int kind;
	pthread_t th;
};

static int insert_some(ts_table *t, long i)
{
	ts_value row[4] = {ts_string("h"), ts_timestamp(NOW - 1000000000 + i), ts_int64(i), ts_int64(i)};
	return ts_insert_at(t, 1, row, 1); /* the alterer adds columns */
}

static int query_all(ts_table *t)
{
	ts_cursor *c;
	const ts_value *row;
	int rc = ts_query_open(t, &(ts_query){0}, &c);
	while (rc == 0 && (rc = ts_cursor_next(c, &row, NULL)) == 0 && row)
		;
	ts_cursor_close(c);
	return rc;
}

static int one_call(ts_table *t, int kind, long i)
{
	char name[32];
	ts_stat st[TS_STATS_MAX];
	int n;
	switch (kind) {
	case 0: return insert_some(t, i);
	case 1: return query_all(t);
	case 2:
		if (i % 2 || i > 16) /* a few columns only */
			return ts_alter_ttl(t, 0);
		snprintf(name, sizeof name, "c%ld", i);
		return ts_alter_add(t, &(ts_column){name, TS_INT64, {TS_NONE, {0}}});
	case 3: return ts_flush(t, INT64_MAX);
	case 4: return ts_merge(t, NULL);
	default: return ts_table_stats(t, st, TS_STATS_MAX, &n);
	}
}

static void *racer_main(void *arg)
{
	struct racer *x = arg;
	struct round *r = x->r;
	int rc;
	for (long i = 0;; i++) {
		if (x->kind == 3 && (rc = insert_some(r->t, 1000000 + i)) < 0)
			break; /* a flush needs rows */
		if ((rc = one_call(r->t, x->kind, i)) < 0)
			break;
		if (r->ok[x->kind]++ == 0) {
			pthread_mutex_lock(&r->mu);
			r->started++;
			pthread_cond_broadcast(&r->cv);
			pthread_mutex_unlock(&r->mu);
		}
	}
	r->rc[x->kind] = rc;
	snprintf(r->msg[x->kind], sizeof r->msg[x->kind], "%s", ts_errmsg(NULL));
	if (r->ok[x->kind] == 0) { /* failed at once: the drop must not wait for it */
		pthread_mutex_lock(&r->mu);
		r->started++;
		pthread_cond_broadcast(&r->cv);
		pthread_mutex_unlock(&r->mu);
	}
	return NULL;
}

/* The entries of dir that belong to table d: d itself, .dropped-d-*,
 * .tmp-d-*. */
static int leftovers(const char *dir, char *first, size_t size)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;
	assert_non_null(d);
	while ((e = readdir(d)))
		if (strcmp(e->d_name, "d") == 0 || strncmp(e->d_name, ".dropped-d-", 11) == 0 ||
		    strncmp(e->d_name, ".tmp-d-", 7) == 0) {
			if (n++ == 0)
				snprintf(first, size, "%s", e->d_name);
		}
	closedir(d);
	return n;
}

static void drop_race_round(ts_db *db, const char *dir, int round)
{
	static const ts_column cols[4] = {{"host", TS_STRING, {TS_NONE, {0}}},
	                                  {"ts", TS_TIMESTAMP, {TS_NONE, {0}}},
	                                  {"batch", TS_INT64, {TS_NONE, {0}}},
	                                  {"v", TS_INT64, {TS_NONE, {0}}}};
	static const char *const key[2] = {"host", "ts"};
	struct round r = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};
	struct racer x[KINDS];
	char left[256];
	assert_int_equal(ts_create_keyed(db, "d", cols, 4, key, 2, 0), 0);
	assert_int_equal(ts_table_open(db, "d", &r.t), 0);
	for (int k = 0; k < KINDS; k++) {
		x[k] = (struct racer){.r = &r, .kind = k};
		assert_int_equal(pthread_create(&x[k].th, NULL, racer_main, &x[k]), 0);
	}
	pthread_mutex_lock(&r.mu);
	while (r.started < KINDS)
		pthread_cond_wait(&r.cv, &r.mu);
	pthread_mutex_unlock(&r.mu);
	int drc = ts_drop(db, "d");
	char dmsg[256];
	snprintf(dmsg, sizeof dmsg, "%s", ts_errmsg(NULL));
	for (int k = 0; k < KINDS; k++)
		pthread_join(x[k].th, NULL);
	ts_table_close(r.t);
	if (drc != 0)
		fail_msg("round %d: drop: %s (%s)", round, ts_errname(drc), dmsg);
	for (int k = 0; k < KINDS; k++) {
		if (r.ok[k] == 0)
			fail_msg("round %d: %s never succeeded: %s", round, kind_names[k], r.msg[k]);
		if (r.rc[k] != TS_ECLOSED || (!strstr(r.msg[k], "table \"d\" was dropped") &&
		                              !strstr(r.msg[k], "table \"d\" is being dropped")))
			fail_msg("round %d: %s racing the drop: %s (%s), want ECLOSED: table \"d\" "
			         "was (is being) dropped", round, kind_names[k], ts_errname(r.rc[k]), r.msg[k]);
	}
	if (leftovers(dir, left, sizeof left))
		fail_msg("round %d: %s left behind", round, left);
}

static void drop_race_calls(void **state)
{
	(void)state;
	char *dir = ts_test_tmpdir();
	ts_options o;
	ts_db *db;
	ts_options_init(&o);
	o.flags = TS_OPEN_CREATE;
	o.sync = TS_SYNC_NONE;
	o.clock = fixed_clock;
	o.flush_size = 4096; /* the maintainer flushes too */
	o.merge_delay = 0;
	assert_int_equal(ts_open(dir, &o, &db), 0);
	for (int i = 0; i < ROUNDS; i++)
		drop_race_round(db, dir, i);
	assert_int_equal(ts_close(db), 0);
	ts_test_rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(drop_race_calls),
	};
	return cmocka_run_group_tests_name("drop_race", tests, NULL, NULL);
}
