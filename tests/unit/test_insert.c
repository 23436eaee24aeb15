/*
 * test_insert.c -- the write path: random batches checked against a
 * sorted-array model (duplicates inside a batch and against stored rows,
 * out-of-order and late timestamps across 4-hour, day and week periods),
 * batch atomicity, ts defaults, max_future and TTL, snapshots that stay
 * unchanged while later batches commit, and readers -- a thread and a
 * process -- that always see a consistent prefix of the commits.
 */
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "avl.h"
#include "snapshot.h"
#include "support.h"

#define NOW INT64_C(1795262400000000000) /* 2026-11-21T12:00:00Z */
#define SEC INT64_C(1000000000)
#define DAY (86400 * SEC)

static int64_t fixed_clock(void *arg) { return *(int64_t *)arg; }

static uint64_t rng = 0x2545F4914F6CDD1Du;
static uint64_t rnd(void) { return ts_test_xorshift(&rng); }

struct env {
	char *dir;
	ts_db *db;
	ts_table *t;
	int64_t now;
	ts_options opts;
};

static void env_open(struct env *e, ts_sync_mode sync)
{
	ts_options_init(&e->opts);
	e->opts.flags = TS_OPEN_CREATE;
	e->opts.sync = sync;
	e->opts.clock = fixed_clock;
	e->opts.clock_arg = &e->now;
	if (ts_open(e->dir, &e->opts, &e->db) < 0)
		fail_msg("open: %s", ts_errmsg(NULL));
	if (ts_table_open(e->db, "m", &e->t) < 0) {
		ts_test_create_m(e->db, 0);
		assert_int_equal(ts_table_open(e->db, "m", &e->t), 0);
	}
}

static void env_close(struct env *e)
{
	ts_table_close(e->t);
	assert_int_equal(ts_close(e->db), 0);
	e->t = NULL;
	e->db = NULL;
}

static int setup(void **state)
{
	struct env *e = calloc(1, sizeof *e);
	e->dir = ts_test_tmpdir();
	e->now = NOW;
	env_open(e, TS_SYNC_NONE);
	*state = e;
	return 0;
}

static int teardown(void **state)
{
	struct env *e = *state;
	if (e->db)
		env_close(e);
	ts_test_rmdir(e->dir);
	free(e);
	return 0;
}

/* ---- the model ---- */

struct model {
	test_row *rows;
	size_t n, cap;
};

static int model_has(const struct model *m, const test_row *r)
{
	for (size_t i = 0; i < m->n; i++)
		if (ts_test_row_cmp(&m->rows[i], r) == 0)
			return 1;
	return 0;
}

static void model_add(struct model *m, const test_row *r, size_t n)
{
	if (m->n + n > m->cap) {
		m->cap = (m->n + n) * 2;
		m->rows = realloc(m->rows, m->cap * sizeof *m->rows);
	}
	memcpy(m->rows + m->n, r, n * sizeof *r);
	m->n += n;
}

static void assert_table_equals_model(ts_table *t, struct model *m)
{
	test_row *got;
	long n = ts_test_read_m(t, &got);
	if (m->n)
		qsort(m->rows, m->n, sizeof *m->rows, ts_test_row_cmp);
	assert_int_equal(n, (long)m->n);
	for (long i = 0; i < n; i++)
		if (memcmp(&got[i], &m->rows[i], sizeof got[i]) != 0)
			fail_msg("row %ld: got %s/%lld/%lld, want %s/%lld/%lld", i, got[i].host,
			         (long long)got[i].ts, (long long)got[i].v, m->rows[i].host,
			         (long long)m->rows[i].ts, (long long)m->rows[i].v);
	free(got);
}

/* A random row: 20 hosts; ts anywhere in the last 20 days, to the minute
 * (so 4-hour, day and week periods all fill); or a copy of a stored key. */
static void random_row(const struct model *m, test_row *r, int64_t batch)
{
	memset(r, 0, sizeof *r);
	if (m->n && rnd() % 10 == 0) {
		*r = m->rows[rnd() % m->n];
	} else {
		snprintf(r->host, sizeof r->host, "h%02d", (int)(rnd() % 20));
		r->ts = NOW - (int64_t)(rnd() % (20 * 1440)) * 60 * SEC;
	}
	r->batch = batch;
	r->v = (int64_t)rnd();
}

/* The index of the first row that must be rejected as a duplicate, or -1. */
static long first_duplicate(const struct model *m, const test_row *b, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (model_has(m, &b[i]))
			return (long)i;
		for (size_t j = 0; j < i; j++)
			if (ts_test_row_cmp(&b[i], &b[j]) == 0)
				return (long)i;
	}
	return -1;
}

static void insert_random_against_model(void **state)
{
	struct env *e = *state;
	struct model m = {0};
	test_row batch[40];
	int rejected = 0;
	for (int b = 1; b <= 400; b++) {
		size_t n = 1 + rnd() % 40;
		for (size_t i = 0; i < n; i++)
			random_row(&m, &batch[i], b);
		long dup = first_duplicate(&m, batch, n);
		int rc = ts_test_insert_m(e->t, batch, n);
		if (dup < 0) {
			if (rc != 0)
				fail_msg("batch %d: %s", b, ts_errmsg(NULL));
			model_add(&m, batch, n);
		} else {
			char want[32];
			assert_int_equal(rc, TS_EDUPKEY);
			snprintf(want, sizeof want, "row %ld: duplicate key (\"", dup);
			if (strncmp(ts_errmsg(NULL), want, strlen(want)) != 0)
				fail_msg("batch %d: message \"%s\", want prefix \"%s\"", b, ts_errmsg(NULL), want);
			rejected++;
		}
		if (b % 50 == 0)
			assert_table_equals_model(e->t, &m);
	}
	assert_true(rejected > 20);
	/* every tree is a valid AVL tree; the periods are the expected kinds */
	ts__snapshot s;
	assert_int_equal(ts__snapshot_take(e->t, &s), 0);
	int kinds[3] = {0};
	for (uint32_t i = 0; i < s.nroots; i++) {
		assert_int_equal(ts__avl_check(e->t->log, s.roots[i].root), (long)s.roots[i].rows);
		kinds[s.roots[i].period_len == 4 * 3600 * SEC ? 0 : s.roots[i].period_len == DAY ? 1 : 2]++;
	}
	assert_int_equal(kinds[0], 3); /* 00-04, 04-08, 08-12 of today */
	assert_int_equal(kinds[1], 6); /* the six days before */
	assert_true(kinds[2] >= 2);
	ts__snapshot_release(&s);
	/* and all of it survives a reopen */
	env_close(e);
	env_open(e, TS_SYNC_NONE);
	assert_table_equals_model(e->t, &m);
	free(m.rows);
}

static void insert_defaults_and_time_limits(void **state)
{
	struct env *e = *state;
	ts_value row[4] = {ts_string("a"), ts_none(), ts_none(), ts_int64(5)};
	test_row *got;
	assert_int_equal(ts_insert(e->t, row, 1), 0);
	assert_int_equal(ts_test_read_m(e->t, &got), 1);
	assert_int_equal(got[0].ts, NOW);   /* ts defaults to now */
	assert_int_equal(got[0].batch, 0);  /* int64 default */
	free(got);
	/* max_future: one day ahead is fine, one ns more is not */
	row[1] = ts_timestamp(NOW + DAY);
	assert_int_equal(ts_insert(e->t, row, 1), 0);
	row[1] = ts_timestamp(NOW + DAY + 1);
	assert_int_equal(ts_insert(e->t, row, 1), TS_EFUTURE);
	assert_non_null(strstr(ts_errmsg(NULL), "row 0: ts 2026-11-22T12:00:00.000000001Z is more than max_future"));
	/* TTL */
	assert_int_equal(ts_alter_ttl(e->t, 7 * DAY), 0);
	row[1] = ts_timestamp(NOW - 7 * DAY - 1);
	assert_int_equal(ts_insert(e->t, row, 1), TS_EEXPIRED);
	row[1] = ts_timestamp(NOW - 7 * DAY);
	assert_int_equal(ts_insert(e->t, row, 1), 0);
}

/* The counters of the filling tablets and the writer, in this process and
 * after a reopen (where the filling tablets come from the recovered log). */
static void insert_stats_count_rows_batches_and_tablets(void **state)
{
	struct env *e = *state;
	ts_value rows[3][4] = {
		{ts_string("a"), ts_timestamp(NOW - SEC), ts_int64(1), ts_int64(1)},
		{ts_string("b"), ts_timestamp(NOW - SEC), ts_int64(1), ts_int64(2)},
		{ts_string("a"), ts_timestamp(NOW - 3 * DAY), ts_int64(1), ts_int64(3)},
	};
	assert_int_equal(ts_test_stat(e->t, "filling_tablets"), 0);
	assert_int_equal(ts_insert(e->t, &rows[0][0], 2), 0);
	assert_int_equal(ts_insert(e->t, &rows[2][0], 1), 0);
	assert_int_equal(ts_insert(e->t, &rows[0][0], 2), TS_EDUPKEY);
	assert_int_equal(ts_test_stat(e->t, "filling_tablets"), 2); /* a 4-hour and a day period */
	assert_int_equal(ts_test_stat(e->t, "filling_rows"), 3);
	assert_int_equal(ts_test_stat(e->t, "rows_inserted"), 3);
	assert_int_equal(ts_test_stat(e->t, "batches_committed"), 2);
	assert_int_equal(ts_test_stat(e->t, "rows_rejected"), 2);
	assert_true(ts_test_stat(e->t, "log_nodes_written") >= 3);
	assert_true(ts_test_stat(e->t, "filling_bytes") > 3 * TS_NODE_SIZE);
	env_close(e);
	env_open(e, TS_SYNC_NONE);
	assert_int_equal(ts_test_stat(e->t, "filling_tablets"), 2);
	assert_int_equal(ts_test_stat(e->t, "filling_rows"), 3);
	assert_int_equal(ts_test_stat(e->t, "rows_inserted"), 0);
	assert_int_equal(ts_test_stat(e->t, "log_recovered_commits"), 2);
	assert_int_equal(ts_test_stat(e->t, "log_opened_clean"), 1);
}

static void insert_batch_is_atomic(void **state)
{
	struct env *e = *state;
	test_row *got;
	ts_value rows[3][4] = {
		{ts_string("a"), ts_timestamp(NOW - SEC), ts_int64(1), ts_int64(1)},
		{ts_string("b"), ts_timestamp(NOW - SEC), ts_int64(1), ts_int64(2)},
		{ts_string("c"), ts_timestamp(NOW - SEC), ts_double(1.5), ts_int64(3)},
	};
	assert_int_equal(ts_insert(e->t, &rows[0][0], 3), TS_ETYPE);
	assert_string_equal(ts_errmsg(NULL), "row 2: column \"batch\": expected int64, got double");
	assert_int_equal(ts_test_read_m(e->t, &got), 0);
	free(got);
	rows[2][2] = ts_int64(1);
	assert_int_equal(ts_insert(e->t, &rows[0][0], 3), 0);
	assert_int_equal(ts_test_read_m(e->t, &got), 3);
	free(got);
	/* a duplicate inside one batch */
	rows[1][0] = ts_string("z");
	rows[2][0] = ts_string("z");
	assert_int_equal(ts_insert(e->t, &rows[1][0], 2), TS_EDUPKEY);
	assert_string_equal(ts_errmsg(NULL),
	                    "row 1: duplicate key (\"z\", 2026-11-21T11:59:59Z)");
	assert_int_equal(ts_test_read_m(e->t, &got), 3);
	free(got);
}

struct scan_copy {
	test_row rows[64];
	int n;
};

static int copy_row(const ts_value *v, int n, void *arg)
{
	struct scan_copy *c = arg;
	(void)n;
	test_row *r = &c->rows[c->n++];
	memset(r, 0, sizeof *r);
	memcpy(r->host, v[0].v.s.ptr, v[0].v.s.len);
	r->ts = v[1].v.i;
	r->v = v[3].v.i;
	return 0;
}

static void insert_snapshot_unchanged_by_later_commits(void **state)
{
	struct env *e = *state;
	test_row r[8];
	for (int i = 0; i < 8; i++) {
		memset(&r[i], 0, sizeof r[i]);
		snprintf(r[i].host, sizeof r[i].host, "h%d", i);
		r[i].ts = NOW - 10 * SEC;
		r[i].v = i;
	}
	assert_int_equal(ts_test_insert_m(e->t, r, 8), 0);
	ts__snapshot s;
	struct scan_copy before = {.n = 0}, after = {.n = 0};
	assert_int_equal(ts__snapshot_take(e->t, &s), 0);
	assert_int_equal(ts__snapshot_scan(&s, 0, copy_row, &before), 0);
	for (int b = 0; b < 30; b++) { /* interleaved keys: copies the paths */
		for (int i = 0; i < 8; i++)
			r[i].ts = NOW - 9 * SEC + b;
		assert_int_equal(ts_test_insert_m(e->t, r, 8), 0);
	}
	assert_int_equal(ts__snapshot_scan(&s, 0, copy_row, &after), 0);
	assert_int_equal(before.n, 8);
	assert_int_equal(after.n, 8);
	assert_memory_equal(before.rows, after.rows, sizeof before.rows[0] * 8);
	ts__snapshot_release(&s);
	test_row *got;
	assert_int_equal(ts_test_read_m(e->t, &got), 8 * 31);
	free(got);
}

/* ---- concurrent readers ---- */

#define RB_BATCHES 300
#define RB_ROWS 32

static void write_numbered_batches(ts_table *t, int from, int to)
{
	test_row r[RB_ROWS];
	for (int b = from; b <= to; b++) {
		for (int i = 0; i < RB_ROWS; i++) {
			memset(&r[i], 0, sizeof r[i]);
			snprintf(r[i].host, sizeof r[i].host, "h%02d", i);
			r[i].ts = NOW - 3600 * SEC + b * SEC;
			r[i].batch = b;
			r[i].v = b * 100 + i;
		}
		if (ts_test_insert_m(t, r, RB_ROWS) != 0)
			fail_msg("batch %d: %s", b, ts_errmsg(NULL));
	}
}

/* Whether rows hold exactly batches 1..k, each complete; returns k or -1. */
static long prefix_of_batches(const test_row *rows, long n)
{
	static int count[RB_BATCHES + 2];
	long k = 0;
	memset(count, 0, sizeof count);
	for (long i = 0; i < n; i++) {
		if (rows[i].batch < 1 || rows[i].batch > RB_BATCHES)
			return -1;
		count[rows[i].batch]++;
		if (rows[i].batch > k)
			k = rows[i].batch;
	}
	for (long b = 1; b <= k; b++)
		if (count[b] != RB_ROWS)
			return -1;
	return k;
}

struct reader {
	ts_table *t;
	int stop; /* __atomic: the writer sets it, the reader polls it */
	int scans, bad;
	long last_k;
};

static void *reader_main(void *arg)
{
	struct reader *r = arg;
	while (!__atomic_load_n(&r->stop, __ATOMIC_RELAXED)) {
		test_row *rows;
		long n = ts_test_read_m(r->t, &rows);
		long k = n < 0 ? -1 : prefix_of_batches(rows, n);
		if (k < 0 || k < r->last_k)
			r->bad++;
		else
			r->last_k = k;
		r->scans++;
		free(rows);
	}
	return NULL;
}

static void insert_reader_thread_sees_prefixes(void **state)
{
	struct env *e = *state;
	struct reader r = {.t = e->t};
	pthread_t th;
	assert_int_equal(pthread_create(&th, NULL, reader_main, &r), 0);
	write_numbered_batches(e->t, 1, RB_BATCHES);
	__atomic_store_n(&r.stop, 1, __ATOMIC_RELAXED);
	pthread_join(th, NULL);
	assert_int_equal(r.bad, 0);
	assert_true(r.scans > 1);
	test_row *rows;
	long n = ts_test_read_m(e->t, &rows);
	assert_int_equal(prefix_of_batches(rows, n), RB_BATCHES);
	free(rows);
}

/* A read-only process scans while this one writes.  Halfway, the writer
 * waits until the reader has seen some batches, so that however the two
 * are scheduled the reader sees the table grow at least twice. */
static void insert_reader_process_sees_prefixes(void **state)
{
	struct env *e = *state;
	int seen[2];
	assert_int_equal(pipe(seen), 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		ts_options o;
		ts_db *db;
		ts_table *t;
		ts_options_init(&o);
		o.flags = TS_OPEN_READONLY;
		close(seen[0]);
		if (ts_open(e->dir, &o, &db) < 0 || ts_table_open(db, "m", &t) < 0)
			_exit(10);
		long last = 0, moved = 0;
		while (last < RB_BATCHES) {
			test_row *rows;
			long n = ts_test_read_m(t, &rows);
			long k = n < 0 ? -1 : prefix_of_batches(rows, n);
			free(rows);
			if (k < last)
				_exit(11);
			if (k > 0 && last == 0 && write(seen[1], "k", 1) != 1)
				_exit(13);
			moved += k > last;
			last = k;
		}
		_exit(moved > 1 ? 0 : 12);
	}
	close(seen[1]);
	write_numbered_batches(e->t, 1, RB_BATCHES / 2);
	char c;
	assert_int_equal(read(seen[0], &c, 1), 1); /* 0: the reader died */
	write_numbered_batches(e->t, RB_BATCHES / 2 + 1, RB_BATCHES);
	close(seen[0]);
	int status;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(insert_random_against_model, setup, teardown),
		cmocka_unit_test_setup_teardown(insert_defaults_and_time_limits, setup, teardown),
		cmocka_unit_test_setup_teardown(insert_batch_is_atomic, setup, teardown),
		cmocka_unit_test_setup_teardown(insert_stats_count_rows_batches_and_tablets, setup, teardown),
		cmocka_unit_test_setup_teardown(insert_snapshot_unchanged_by_later_commits, setup, teardown),
		cmocka_unit_test_setup_teardown(insert_reader_thread_sees_prefixes, setup, teardown),
		cmocka_unit_test_setup_teardown(insert_reader_process_sees_prefixes, setup, teardown),
	};
	return cmocka_run_group_tests_name("insert", tests, NULL, NULL);
}
