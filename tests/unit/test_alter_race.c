/*
 * test_alter_race.c -- one schema per batch (issue 24 item 1): rows built
 * for a schema version are read under exactly that version by
 * ts_insert_at, however alters race the insert.
 *
 * The first tests are deterministic: a batch built for version 1 and
 * inserted after an add and a widen is stored as version 1's rows read
 * under the new schema (before ts_insert_at, ts_insert read such a batch
 * with the new width: past the caller's array and shifted onto the wrong
 * columns).  The stress test runs writer threads, each inserting
 * self-describing rows (tests/daemon/alter_model.h) with the schema it
 * last read -- often stale on purpose -- while a racer thread makes every
 * alter of the model and a flush; the racer waits for every writer to
 * commit a batch between two alters, so alters and inserts interleave
 * however the threads are scheduled.  Afterwards every stored value is
 * checked.  TS_ALTER_RACE_ROUNDS multiplies the writers' work (the soak
 * runs the long form through the daemon).
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "../daemon/alter_model.h"
#include "support.h"

#define NOW INT64_C(1795262400000000000) /* 2026-11-21T12:00:00Z */
#define SEC INT64_C(1000000000)

enum { WRITERS = 4, BATCH = 32, REFETCH = 3, AHEAD = 4 };

static int64_t fixed_clock(void *arg) { return *(int64_t *)arg; }

struct env {
	char *dir;
	ts_db *db;
	ts_table *t;
	int64_t now;
	struct am_model m;
};

static void create_ar(struct env *e)
{
	ts_column cols[7];
	char bufs[7][AM_STR_MAX];
	const char *key[] = {"host", "ts"};
	for (int i = 0; i < 7; i++) {
		cols[i] = (ts_column){e->m.name[i], e->m.type[1][i], ts_none()};
		if (i >= AM_FIXED)
			cols[i].dflt = am_default(&e->m, 1, i, bufs[i]);
	}
	if (ts_create_keyed(e->db, AM_TABLE, cols, 7, key, 2, 0) < 0)
		fail_msg("create: %s", ts_errmsg(NULL));
	assert_int_equal(ts_table_open(e->db, AM_TABLE, &e->t), 0);
}

static int setup(void **state)
{
	struct env *e = calloc(1, sizeof *e);
	ts_options o;
	e->dir = ts_test_tmpdir();
	e->now = NOW;
	am_init(&e->m);
	ts_options_init(&o);
	o.flags = TS_OPEN_CREATE | TS_OPEN_NOMERGE;
	o.sync = TS_SYNC_NONE;
	o.clock = fixed_clock;
	o.clock_arg = &e->now;
	if (ts_open(e->dir, &o, &e->db) < 0)
		fail_msg("open: %s", ts_errmsg(NULL));
	create_ar(e);
	*state = e;
	return 0;
}

static int teardown(void **state)
{
	struct env *e = *state;
	ts_table_close(e->t);
	assert_int_equal(ts_close(e->db), 0);
	ts_test_rmdir(e->dir);
	free(e);
	return 0;
}

/* Alter k of the model. */
static int alter(struct env *e, int k)
{
	char buf[AM_STR_MAX];
	if (e->m.widen[k] >= 0)
		return ts_alter_widen(e->t, e->m.name[e->m.widen[k]]);
	ts_column c = am_added(&e->m, k, buf);
	return ts_alter_add(e->t, &c);
}

/* Every row of the table checked against the model at version cur;
 * returns the number of rows. */
static long check_all(struct env *e, int cur)
{
	ts_query q = {0};
	ts_cursor *cur_ = NULL;
	const ts_value *row;
	int n;
	long rows = 0;
	char why[256];
	assert_int_equal(ts_query_open(e->t, &q, &cur_), 0);
	while (ts_cursor_next(cur_, &row, &n) == 0 && row) {
		if (am_check_row(&e->m, cur, row, n, why, sizeof why) < 0)
			fail_msg("row %ld: %s", rows, why);
		rows++;
	}
	ts_cursor_close(cur_);
	return rows;
}

/* A batch built for version 1 on the stack, inserted after an add and a
 * widen: read with version 1's width, the new column defaulted.  (With
 * ts_insert, the library read 8 values per row from this 7-value array:
 * a stack-buffer-overflow under ASan, and row 1 shifted by one column.) */
static void alter_race_stale_batch_translated(void **state)
{
	struct env *e = *state;
	ts_schema *s = NULL;
	ts_value rows[2][7];
	char bufs[2][AM_COLS_MAX][AM_STR_MAX];
	assert_int_equal(ts_table_schema(e->t, &s), 0);
	assert_int_equal(s->version, 1);
	assert_int_equal(s->ncolumns, 7);
	for (int r = 0; r < 2; r++)
		am_row(&e->m, 1, r, NOW - r * SEC, rows[r], bufs[r]);
	for (int k = 1; k <= 3; k++) /* add c7, add c8, widen c3 */
		assert_int_equal(alter(e, k), 0);
	assert_int_equal(e->m.widen[3], 3);
	assert_int_equal(ts_insert_at(e->t, s->version, &rows[0][0], 2), 0);
	assert_int_equal(check_all(e, 4), 2);
	ts_schema_free(s);
}

/* The versions ts_insert_at takes, and what it checks. */
static void alter_race_versions_checked(void **state)
{
	struct env *e = *state;
	ts_value row[AM_COLS_MAX];
	char bufs[AM_COLS_MAX][AM_STR_MAX];
	for (int k = 1; k <= 3; k++)
		assert_int_equal(alter(e, k), 0);
	am_row(&e->m, 4, 1, NOW, row, bufs);
	/* no version 5 yet */
	assert_int_equal(ts_insert_at(e->t, 5, row, 1), TS_ESCHEMA);
	assert_string_equal(ts_errmsg(NULL), "table \"ar\": no schema version 5 (the current one is 4)");
	/* 0 is the current version, as ts_insert */
	assert_int_equal(ts_insert_at(e->t, 0, row, 1), 0);
	am_row(&e->m, 4, 2, NOW, row, bufs);
	assert_int_equal(ts_insert(e->t, row, 1), 0);
	/* c3 is int64 now, but a row of version 1 still holds an int32 */
	am_row(&e->m, 1, 3, NOW, row, bufs);
	row[3] = ts_int64(INT64_C(1) << 40);
	assert_int_equal(ts_insert_at(e->t, 1, row, 1), TS_ERANGE);
	assert_string_equal(ts_errmsg(NULL), "row 0: column \"c3\": 1099511627776 does not fit in int32");
	am_row(&e->m, 4, 3, NOW, row, bufs);
	assert_int_equal(ts_insert_at(e->t, 4, row, 1), 0);
	assert_int_equal(check_all(e, 4), 3);
}

/* ---- the stress test ---- */

struct race {
	struct env *e;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	long batches;          /* committed by all writers */
	int alters;            /* alters made so far */
	int alters_done;       /* the racer finished */
	int failed;            /* a writer gave up */
	int rounds;            /* batches each writer makes at least */
};

struct writer {
	struct race *r;
	pthread_t th;
	int index;
	long rows, stale;      /* rows stored; batches built for an old version */
	char error[300];
};

static void batch_done(struct race *r)
{
	pthread_mutex_lock(&r->mu);
	r->batches++;
	pthread_cond_broadcast(&r->cv);
	pthread_mutex_unlock(&r->mu);
}

/* Whether the racer finished; first, while it has not, wait until batch
 * b is at most AHEAD batches per alter ahead of it, which bounds the
 * test's work however slowly alters go (each fsyncs). */
static int racer_finished(struct race *r, long b)
{
	pthread_mutex_lock(&r->mu);
	while (!r->alters_done && !r->failed && b >= (long)(r->alters + 1) * AHEAD)
		pthread_cond_wait(&r->cv, &r->mu);
	int done = r->alters_done;
	pthread_mutex_unlock(&r->mu);
	return done;
}

/* Build and insert batches with the schema read every REFETCH batches. */
static void *writer_main(void *arg)
{
	struct writer *w = arg;
	struct env *e = w->r->e;
	ts_value *rows = malloc((size_t)BATCH * AM_COLS_MAX * sizeof *rows);
	char (*bufs)[AM_COLS_MAX][AM_STR_MAX] = malloc((size_t)BATCH * sizeof *bufs);
	ts_schema *s = NULL;
	int64_t seq = 0;
	for (long b = 0; !w->error[0] && (!racer_finished(w->r, b) || b < w->r->rounds); b++) {
		if (b % REFETCH == 0) {
			ts_schema_free(s);
			if (ts_table_schema(e->t, &s) < 0) {
				snprintf(w->error, sizeof w->error, "schema: %s", ts_errmsg(NULL));
				break;
			}
		}
		int v = (int)s->version;
		/* exactly as many values per row as version v has */
		ts_value *p = realloc(rows, (size_t)BATCH * (size_t)e->m.ncols[v] * sizeof *rows);
		rows = p;
		for (int i = 0; i < BATCH; i++, seq++)
			am_row(&e->m, v, w->index, NOW - seq * 1000, rows + (size_t)i * e->m.ncols[v], bufs[i]);
		ts_schema *now_s = NULL;
		if (ts_table_schema(e->t, &now_s) == 0 && now_s->version != s->version)
			w->stale++;
		ts_schema_free(now_s);
		if (ts_insert_at(e->t, s->version, rows, BATCH) < 0)
			snprintf(w->error, sizeof w->error, "insert at version %d: %s", v, ts_errmsg(NULL));
		else
			w->rows += BATCH;
		batch_done(w->r);
	}
	if (w->error[0]) { /* the racer must not wait for this writer */
		pthread_mutex_lock(&w->r->mu);
		w->r->failed = 1;
		pthread_cond_broadcast(&w->r->cv);
		pthread_mutex_unlock(&w->r->mu);
	}
	ts_schema_free(s);
	free(rows);
	free(bufs);
	return NULL;
}

/* Every alter of the model, each after the writers committed WRITERS
 * more batches; a flush halfway, so that rows of old versions are also
 * read back from an on-disk tablet. */
static void racer(struct race *r)
{
	long seen = 0;
	for (int k = 1; k <= AM_ALTERS; k++) {
		pthread_mutex_lock(&r->mu);
		while (r->batches < seen + WRITERS && !r->failed)
			pthread_cond_wait(&r->cv, &r->mu);
		seen = r->batches;
		int failed = r->failed;
		pthread_mutex_unlock(&r->mu);
		if (failed)
			break;
		if (alter(r->e, k) < 0)
			fail_msg("alter %d: %s", k, ts_errmsg(NULL));
		pthread_mutex_lock(&r->mu);
		r->alters = k;
		pthread_cond_broadcast(&r->cv);
		pthread_mutex_unlock(&r->mu);
		if (k == AM_ALTERS / 2 && ts_flush(r->e->t, INT64_MAX) < 0)
			fail_msg("flush: %s", ts_errmsg(NULL));
	}
	pthread_mutex_lock(&r->mu);
	r->alters_done = 1;
	pthread_cond_broadcast(&r->cv);
	pthread_mutex_unlock(&r->mu);
}

static void alter_race_writers_and_racer(void **state)
{
	struct env *e = *state;
	struct race r = {.e = e, .rounds = 8};
	struct writer w[WRITERS];
	const char *env = getenv("TS_ALTER_RACE_ROUNDS");
	long total = 0, stale = 0;
	if (env && atoi(env) > 0)
		r.rounds *= atoi(env);
	pthread_mutex_init(&r.mu, NULL);
	pthread_cond_init(&r.cv, NULL);
	for (int i = 0; i < WRITERS; i++) {
		w[i] = (struct writer){.r = &r, .index = i};
		assert_int_equal(pthread_create(&w[i].th, NULL, writer_main, &w[i]), 0);
	}
	racer(&r);
	for (int i = 0; i < WRITERS; i++)
		pthread_join(w[i].th, NULL);
	for (int i = 0; i < WRITERS; i++) {
		if (w[i].error[0])
			fail_msg("writer %d: %s", i, w[i].error);
		total += w[i].rows;
		stale += w[i].stale;
	}
	assert_true(total >= (long)WRITERS * r.rounds * BATCH);
	assert_int_equal(check_all(e, AM_VERSIONS), total);
	assert_int_equal(ts_flush(e->t, INT64_MAX), 0); /* and from tablets */
	assert_int_equal(check_all(e, AM_VERSIONS), total);
	print_message("alter race: %ld rows, %ld batches built for an old version\n", total, stale);
	pthread_cond_destroy(&r.cv);
	pthread_mutex_destroy(&r.mu);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(alter_race_stale_batch_translated, setup, teardown),
		cmocka_unit_test_setup_teardown(alter_race_versions_checked, setup, teardown),
		cmocka_unit_test_setup_teardown(alter_race_writers_and_racer, setup, teardown),
	};
	return cmocka_run_group_tests_name("alter_race", tests, NULL, NULL);
}
