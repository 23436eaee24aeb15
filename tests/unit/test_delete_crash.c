/*
 * test_delete_crash.c -- deletes and purges under SIGKILL (the pattern of
 * test_crash.c): a child runs numbered operations -- op o inserts batch o
 * (ROWS rows at ts base + o s), except that every third op deletes the
 * batch inserted two ops before it -- with flushes, merges and purges
 * between them, in sync mode commit, and reports each acknowledged op
 * through a pipe; the parent kills it at a random moment, checks the
 * database with ts_check on a read-only handle before any writer
 * recovers it, reopens it, and requires the table to hold exactly what
 * ops 1..k leave, k the last acknowledged op or the one after it (a
 * delete kept by a crash keeps every commit before it; a purge cut
 * anywhere reads as before or after it), and ts_check to pass again.
 * The same database carries on across iterations.  In the replacing
 * variant the table's policy is replace and op o with o % 3 == 2 stores
 * batch o's values under batch o - 1's keys (which the delete of op
 * o + 1 then hides): purges then merge groups of tablets that share
 * replaced keys (docs/corrections.md section 3).
 *
 * TSSTORE_CRASH_ITERATIONS sets the iterations per variant (default 30).
 */
#include <errno.h>
#include <inttypes.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "support.h"

#define NOW INT64_C(1795262400000000000)
#define SEC INT64_C(1000000000)
#define BASE (NOW - 86400 * SEC)
#define ROWS 8

static uint64_t rng = 0x2545F4914F6CDD1Du;
static uint64_t rnd(void) { return ts_test_xorshift(&rng); }

static int iterations(void)
{
	const char *s = getenv("TSSTORE_CRASH_ITERATIONS");
	int n = s ? atoi(s) : 0;
	return n > 0 ? n : 30;
}

static int64_t fixed_clock(void *arg) { (void)arg; return NOW; }

/* After op o: flush when o % flush_every == 0, and likewise merge and
 * purge (0: never). */
static int flush_every, merge_every, purge_every;
/* The replacing variant (above). */
static int replacing;

static int open_db(const char *dir, unsigned flags, ts_db **db, ts_table **t)
{
	ts_options o;
	ts_options_init(&o);
	o.flags = flags | TS_OPEN_NOMERGE;
	o.sync = TS_SYNC_COMMIT;
	o.clock = fixed_clock;
	if (ts_open(dir, &o, db) < 0)
		return -1;
	if (ts_table_open(*db, "m", t) < 0) {
		if (flags & TS_OPEN_READONLY)
			return -1;
		ts_test_create_m(*db, 0);
		if (ts_table_open(*db, "m", t) < 0)
			return -1;
		if (replacing && ts_alter_on_duplicate(*t, TS_ON_DUPLICATE_REPLACE) < 0)
			return -1;
	}
	return 0;
}

/* Whether batch b is in the table once ops 1..k have run. */
static int survives(int64_t b, int64_t k)
{
	if (b > k || b % 3 == 0)
		return 0;
	return !(b % 3 == 1 && b + 2 <= k);
}

static int delete_batch(ts_table *t, int64_t b)
{
	ts_query q = {.from = BASE + b * SEC, .to = BASE + b * SEC, .has_from = 1, .has_to = 1,
	              .to_inclusive = 1};
	return ts_delete(t, &q, NULL, NULL);
}

/* Where the child works and the ops done before it starts. */
struct child_arg {
	const char *dir;
	int64_t done;
};

static void child(void *arg, int fd)
{
	const char *dir = ((struct child_arg *)arg)->dir;
	int64_t done = ((struct child_arg *)arg)->done;
	ts_db *db;
	ts_table *t;
	test_row r[ROWS];
	if (open_db(dir, TS_OPEN_CREATE, &db, &t) < 0) {
		fprintf(stderr, "child: open: %s\n", ts_errmsg(NULL));
		_exit(20);
	}
	if (write(fd, &done, sizeof done) != sizeof done) /* the rig's go */
		_exit(23);
	for (int64_t o = done + 1;; o++) {
		int rc;
		if (o % 3 == 0) {
			rc = delete_batch(t, o - 2);
		} else {
			ts_test_batch_rows(r, ROWS, BASE, o);
			if (replacing && o % 3 == 2) /* batch o's values, batch o - 1's keys */
				for (int i = 0; i < ROWS; i++)
					r[i].ts = BASE + (o - 1) * SEC;
			rc = ts_test_insert_m(t, r, ROWS);
		}
		if (rc != 0) {
			fprintf(stderr, "child: op %lld: %s\n", (long long)o, ts_errmsg(NULL));
			_exit(22);
		}
		if (write(fd, &o, sizeof o) != sizeof o)
			_exit(23);
		if (flush_every && o % flush_every == 0 && ts_flush(t, INT64_MAX) < 0)
			_exit(24);
		if (merge_every && o % merge_every == 0 && ts_merge(t, NULL) < 0)
			_exit(25);
		if (purge_every && o % purge_every == 0 && ts_purge(t, NULL, NULL) < 0) {
			fprintf(stderr, "child: purge after op %lld: %s\n", (long long)o, ts_errmsg(NULL));
			_exit(26);
		}
	}
}

/* Run the child from op done + 1, kill it after a random pause; returns
 * the last op it acknowledged (done if none). */
static int64_t run_and_kill(const char *dir, int64_t done)
{
	struct child_arg c = {dir, done};
	return ts_test_run_and_kill(child, &c, (long)(rnd() % 300000000), done);
}

/* Whether rows[0..n) (sorted) are exactly what ops 1..k leave. */
static int holds(const test_row *rows, long n, int64_t k)
{
	long at = 0;
	test_row *want = calloc((size_t)(k + 1) * ROWS, sizeof *want);
	assert_non_null(want);
	for (int64_t b = 1; b <= k; b++)
		if (replacing && b % 3 == 1 && b + 2 > k) { /* replaced by b + 1 once it ran */
			ts_test_batch_rows(want + at, ROWS, BASE, b + 1 <= k ? b + 1 : b);
			for (int i = 0; i < ROWS; i++)
				want[at + i].ts = BASE + b * SEC;
			at += ROWS;
		} else if (!replacing && survives(b, k)) {
			ts_test_batch_rows(want + at, ROWS, BASE, b);
			at += ROWS;
		}
	qsort(want, (size_t)at, sizeof *want, ts_test_row_cmp);
	int same = at == n;
	for (long i = 0; same && i < n; i++)
		same = strcmp(rows[i].host, want[i].host) == 0 && rows[i].ts == want[i].ts &&
		       rows[i].batch == want[i].batch && rows[i].v == want[i].v;
	free(want);
	return same;
}

/* The rows of table m as a query of all of it returns them (in key
 * order: sorted), into *out; their number.  (ts_test_read_m reads each
 * source as stored, replaced rows too.) */
static long read_query(ts_table *t, test_row **out)
{
	ts_query q = {0};
	ts_cursor *c;
	const ts_value *row;
	int n;
	long at = 0, cap = 64;
	test_row *rows = malloc((size_t)cap * sizeof *rows);
	assert_non_null(rows);
	assert_int_equal(ts_query_open(t, &q, &c), 0);
	while (ts_cursor_next(c, &row, &n) == 0 && row) {
		if (at == cap) {
			rows = realloc(rows, (size_t)(cap *= 2) * sizeof *rows);
			assert_non_null(rows);
		}
		memset(&rows[at], 0, sizeof rows[at]);
		snprintf(rows[at].host, sizeof rows[at].host, "%.*s", (int)row[0].v.s.len,
		         (const char *)row[0].v.s.ptr);
		rows[at].ts = row[1].v.i;
		rows[at].batch = row[2].v.i;
		rows[at++].v = row[3].v.i;
	}
	ts_cursor_close(c);
	*out = rows;
	return at;
}

/* Check read-only, then reopen and find k; returns it. */
static int64_t verify(const char *dir, int64_t acked)
{
	ts_db *db;
	ts_table *t;
	test_row *rows;
	if (acked > 0) { /* what an operator sees before any writer recovers */
		if (open_db(dir, TS_OPEN_READONLY, &db, &t) < 0)
			fail_msg("read-only open: %s", ts_errmsg(NULL));
		ts_test_check_clean(db, "m", "before recovery");
		ts_table_close(t);
		ts_close(db);
	}
	if (open_db(dir, TS_OPEN_CREATE, &db, &t) < 0)
		fail_msg("reopen: %s", ts_errmsg(NULL));
	long n = replacing ? read_query(t, &rows) : ts_test_read_m(t, &rows);
	assert_true(n >= 0);
	int64_t k = holds(rows, n, acked) ? acked : holds(rows, n, acked + 1) ? acked + 1 : -1;
	assert_int_equal(ts_test_count_rows(t), n);
	free(rows);
	ts_test_check_clean(db, "m", "after recovery");
	ts_table_close(t);
	ts_close(db);
	if (k < 0)
		fail_msg("the table holds %ld rows: not what ops 1..%lld or 1..%lld leave", n,
		         (long long)acked, (long long)acked + 1);
	return k;
}

static void crash_loop(void)
{
	char *dir = ts_test_tmpdir();
	int64_t k = 0;
	int n = iterations();
	for (int i = 0; i < n; i++)
		k = verify(dir, run_and_kill(dir, k));
	print_message("crash: %d kills survived, %lld ops done\n", n, (long long)k);
	assert_true(k > 0);
	ts_test_rmdir(dir);
}

static void crash_during_deletes(void **state)
{
	(void)state;
	flush_every = 0, merge_every = 0, purge_every = 0;
	crash_loop();
}

static void crash_during_deletes_and_flushes(void **state)
{
	(void)state;
	flush_every = 5, merge_every = 11, purge_every = 0;
	crash_loop();
}

static void crash_during_purges(void **state)
{
	(void)state;
	flush_every = 7, merge_every = 0, purge_every = 4;
	crash_loop();
}

static void crash_during_purges_of_replaced_rows(void **state)
{
	(void)state;
	replacing = 1;
	flush_every = 2, merge_every = 0, purge_every = 5;
	crash_loop();
	replacing = 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(crash_during_deletes),
		cmocka_unit_test(crash_during_deletes_and_flushes),
		cmocka_unit_test(crash_during_purges),
		cmocka_unit_test(crash_during_purges_of_replaced_rows),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
