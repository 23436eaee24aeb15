/*
 * test_query.c -- the query engine through the public API, case by case:
 * bound semantics at their edges, limits with exact `more` and resume
 * loops in both directions, seeks that read no row outside the box,
 * projection and schema translation, bad requests with their exact
 * errors, snapshot isolation across inserts, flushes and merges, damaged
 * tablets, latest (ties, TTL, how little it reads) and aggregates (exact
 * against a plain scan, answered from block statistics where they can
 * be).  test_query_diff.c compares random queries with SQLite; this file
 * pins down the cases one by one.
 */
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "crc32c.h"
#include "cursor.h"
#include "support.h"
#include "tablet.h"
#include "tablet_format.h"

#define NOW INT64_C(1795262400000000000) /* 2026-11-21T12:00:00Z */
#define SEC INT64_C(1000000000)
#define HOUR (3600 * SEC)
#define DAY (24 * HOUR)
#define START (NOW - 12 * HOUR)          /* the rows of load() begin here */

static int setup(void **state)
{
	*state = ts_test_env_new(NOW, TS_OPEN_NOMERGE);
	return 0;
}

/* v of host h at step i: varied, signed, deterministic. */
static int64_t value_of(int h, long i)
{
	return (int64_t)((i * 7919 + h * 104729) % 2001) - 1000;
}

/* Hosts h00..h(nhosts-1), each a row every step ns from START, n rows
 * each; inserted time-major in batches of 500. */
static void load(ts_table *t, int nhosts, long n, int64_t step)
{
	size_t cap = 500, k = 0;
	test_row *rows = calloc(cap, sizeof *rows);
	assert_non_null(rows);
	for (long i = 0; i < n; i++)
		for (int h = 0; h < nhosts; h++) {
			snprintf(rows[k].host, sizeof rows[k].host, "h%02d", h);
			rows[k].ts = START + i * step;
			rows[k].batch = i;
			rows[k].v = value_of(h, i);
			if (++k == cap || (i == n - 1 && h == nhosts - 1)) {
				if (ts_test_insert_m(t, rows, k) < 0)
					fail_msg("insert: %s", ts_errmsg(NULL));
				k = 0;
			}
		}
	free(rows);
}

/* Every row of a cursor as test rows (columns of "m"); *more receives
 * ts_cursor_more. */
static long drain(ts_cursor *c, test_row **out, int *more)
{
	const ts_value *r;
	int n;
	long count = 0;
	test_row *rows = NULL;
	while (ts_cursor_next(c, &r, &n) == 0 && r) {
		rows = realloc(rows, (size_t)(count + 1) * sizeof *rows);
		assert_non_null(rows);
		memset(&rows[count], 0, sizeof *rows); /* rows compare as bytes */
		assert_int_equal(n, 4);
		assert_int_equal(r[0].type, TS_STRING);
		snprintf(rows[count].host, sizeof rows[count].host, "%.*s", (int)r[0].v.s.len,
		         (const char *)r[0].v.s.ptr);
		rows[count].ts = r[1].v.i;
		rows[count].batch = r[2].v.i;
		rows[count].v = r[3].v.i;
		count++;
	}
	if (more)
		*more = ts_cursor_more(c);
	*out = rows;
	return count;
}

static long run(ts_table *t, const ts_query *q, test_row **out, int *more)
{
	ts_cursor *c;
	if (ts_query_open(t, q, &c) < 0)
		fail_msg("query: %s", ts_errmsg(NULL));
	long n = drain(c, out, more);
	ts_cursor_close(c);
	return n;
}

/* Rows of the load() model: host h, step i. */
static void expect_row(const test_row *r, int h, long i, int64_t step)
{
	char host[16];
	snprintf(host, sizeof host, "h%02d", h);
	assert_string_equal(r->host, host);
	assert_int_equal(r->ts, START + i * step);
	assert_int_equal(r->v, value_of(h, i));
}

/* ---- bounds ---- */

static void check_bounds(ts_table *t)
{
	ts_query q;
	test_row *rows;
	ts_value h1 = ts_string("h01"), h2 = ts_string("h02");
	ts_value key[2] = {ts_string("h01"), ts_timestamp(START + 10 * SEC)};

	/* upper inclusive on a partial key takes every row of h01 */
	memset(&q, 0, sizeof q);
	q.upper = &h1;
	q.nupper = 1;
	assert_int_equal(run(t, &q, &rows, NULL), 2 * 50);
	expect_row(&rows[99], 1, 49, 10 * SEC);
	free(rows);
	/* ... exclusive takes none of it */
	q.upper_exclusive = 1;
	assert_int_equal(run(t, &q, &rows, NULL), 50);
	free(rows);
	/* lower exclusive on a partial key skips all of h01 */
	memset(&q, 0, sizeof q);
	q.lower = &h1;
	q.nlower = 1;
	q.lower_exclusive = 1;
	assert_int_equal(run(t, &q, &rows, NULL), 50);
	expect_row(&rows[0], 2, 0, 10 * SEC);
	free(rows);
	/* full-key bounds, both exclusive, descending */
	memset(&q, 0, sizeof q);
	q.lower = key;
	q.nlower = 2;
	q.lower_exclusive = 1;
	q.upper = &h2;
	q.nupper = 1;
	q.upper_exclusive = 1;
	q.desc = 1;
	assert_int_equal(run(t, &q, &rows, NULL), 48);
	expect_row(&rows[0], 1, 49, 10 * SEC);
	expect_row(&rows[47], 1, 2, 10 * SEC);
	free(rows);
	/* lower above upper: nothing */
	memset(&q, 0, sizeof q);
	q.lower = &h2;
	q.nlower = 1;
	q.upper = &h1;
	q.nupper = 1;
	assert_int_equal(run(t, &q, &rows, NULL), 0);
	free(rows);
	/* time: [from, to) and [from, to] */
	memset(&q, 0, sizeof q);
	q.prefix = &h2;
	q.nprefix = 1;
	q.has_from = q.has_to = 1;
	q.from = START + 100 * SEC;
	q.to = START + 200 * SEC;
	assert_int_equal(run(t, &q, &rows, NULL), 10);
	expect_row(&rows[0], 2, 10, 10 * SEC);
	free(rows);
	q.to_inclusive = 1;
	assert_int_equal(run(t, &q, &rows, NULL), 11);
	expect_row(&rows[10], 2, 20, 10 * SEC);
	free(rows);
	/* a full-key prefix is one row */
	memset(&q, 0, sizeof q);
	q.prefix = key;
	q.nprefix = 2;
	assert_int_equal(run(t, &q, &rows, NULL), 1);
	expect_row(&rows[0], 1, 1, 10 * SEC);
	free(rows);
}

/* Bounds on rows in a filling tree, then the same on an on-disk tablet. */
static void query_bounds(void **state)
{
	ts_test_env *e = *state;
	load(e->t, 3, 50, 10 * SEC);
	check_bounds(e->t);
	assert_int_equal(ts_flush(e->t, INT64_MAX), 0);
	assert_int_equal(ts_test_stat(e->t, "filling_rows"), 0);
	check_bounds(e->t);
}

/* ---- limits ---- */

/* Page through the whole table limit rows at a time, each direction, and
 * get exactly the full result; more is 0 exactly when nothing is left. */
static void page_through(ts_table *t, uint64_t limit, int desc, long total)
{
	ts_query q;
	test_row *all, *page;
	memset(&q, 0, sizeof q);
	q.desc = desc;
	assert_int_equal(run(t, &q, &all, NULL), total);
	q.limit = limit;
	long seen = 0;
	for (;;) {
		ts_cursor *c;
		int more;
		const ts_value *key;
		int nkey;
		assert_int_equal(ts_query_open(t, &q, &c), 0);
		long n = drain(c, &page, &more);
		assert_true(n <= (long)limit);
		assert_memory_equal(page, all + seen, (size_t)n * sizeof *page);
		seen += n;
		assert_int_equal(more, seen < total);
		if (!more) {
			ts_cursor_close(c);
			free(page);
			break;
		}
		assert_int_equal(n, (long)limit);
		assert_int_equal(ts_cursor_resume(c, &key, &nkey), 0);
		assert_int_equal(nkey, 2);
		static char host[16];
		static ts_value after[2];
		snprintf(host, sizeof host, "%.*s", (int)key[0].v.s.len, (const char *)key[0].v.s.ptr);
		after[0] = ts_string(host);
		after[1] = key[1];
		assert_int_equal(after[1].v.i, page[n - 1].ts);
		q.after = after;
		q.nafter = 2;
		ts_cursor_close(c);
		free(page);
	}
	assert_int_equal(seen, total);
	free(all);
}

/* A query of one series (every key column but ts fixed) decodes the
 * series' key once and each row's ts alone, and keeps only the ts of the
 * last row for ts_cursor_resume: exact rows and resume keys (after every
 * row and at each page's end), in pages, both directions, over a tablet
 * and a tree, for a host whose key holds escaped NULs ("a\0b", between
 * "a" and "a\0c"). */
static void query_one_series_paged(void **state)
{
	ts_test_env *e = *state;
	static const char *hosts[3] = {"a", "a\0b", "a\0c"};
	static const size_t hlen[3] = {1, 3, 3};
	ts_value rows[3 * 30 * 4];
	for (int half = 0; half < 2; half++) { /* steps 0-14 flushed, 15-29 in a tree */
		size_t k = 0;
		for (long i = half * 15; i < half * 15 + 15; i++)
			for (int h = 0; h < 3; h++, k += 4) {
				rows[k] = (ts_value){TS_STRING, {.s = {hosts[h], hlen[h]}}};
				rows[k + 1] = ts_timestamp(START + i * 10 * SEC);
				rows[k + 2] = ts_int64(h);
				rows[k + 3] = ts_int64(value_of(h, i));
			}
		assert_int_equal(ts_insert(e->t, rows, k / 4), 0);
		if (half == 0)
			assert_int_equal(ts_flush(e->t, INT64_MAX), 0);
	}
	ts_value prefix = {TS_STRING, {.s = {hosts[1], hlen[1]}}}, after[2];
	for (int desc = 0; desc < 2; desc++) {
		ts_query q = {.prefix = &prefix, .nprefix = 1, .has_from = 1, .has_to = 1,
		              .from = START + 50 * SEC, .to = START + 250 * SEC, .limit = 4,
		              .desc = desc};
		long seen = 0;
		for (int more = 1; more;) {
			ts_cursor *c;
			const ts_value *r, *key;
			int n, nkey;
			assert_int_equal(ts_query_open(e->t, &q, &c), 0);
			while (ts_cursor_next(c, &r, &n) == 0 && r) {
				long i = desc ? 24 - seen : 5 + seen; /* steps 5..24 */
				assert_int_equal(n, 4);
				assert_int_equal(r[0].type, TS_STRING);
				assert_int_equal(r[0].v.s.len, 3);
				assert_memory_equal(r[0].v.s.ptr, "a\0b", 3);
				assert_int_equal(r[1].type, TS_TIMESTAMP);
				assert_int_equal(r[1].v.i, START + i * 10 * SEC);
				assert_int_equal(r[2].v.i, 1);
				assert_int_equal(r[3].v.i, value_of(1, i));
				/* asked after every row too: the rows after an
				 * answer keep their keys for the next */
				assert_int_equal(ts_cursor_resume(c, &key, &nkey), 0);
				assert_int_equal(key[1].v.i, START + i * 10 * SEC);
				seen++;
			}
			more = ts_cursor_more(c);
			assert_int_equal(more, seen < 20);
			assert_int_equal(ts_cursor_resume(c, &key, &nkey), 0);
			assert_int_equal(nkey, 2);
			assert_int_equal(key[0].v.s.len, 3);
			assert_memory_equal(key[0].v.s.ptr, "a\0b", 3);
			assert_int_equal(key[1].v.i, START + (desc ? 25 - seen : 4 + seen) * 10 * SEC);
			after[0] = prefix;
			after[1] = key[1];
			q.after = after;
			q.nafter = 2;
			ts_cursor_close(c);
		}
		assert_int_equal(seen, 20);
	}
}

static void query_limit_resume(void **state)
{
	ts_test_env *e = *state;
	load(e->t, 4, 30, 10 * SEC);
	assert_int_equal(ts_flush(e->t, INT64_MAX), 0);
	/* as many rows again in the tree, their keys between those on disk */
	test_row between[120];
	for (int i = 0; i < 120; i++) {
		snprintf(between[i].host, sizeof between[i].host, "h%02d", i % 4);
		between[i].ts = START + (i / 4) * 10 * SEC + 5 * SEC;
		between[i].batch = between[i].v = i;
	}
	assert_int_equal(ts_test_insert_m(e->t, between, 120), 0);
	for (int desc = 0; desc < 2; desc++) {
		page_through(e->t, 7, desc, 240);
		page_through(e->t, 240, desc, 240); /* exactly all: more is 0 */
		page_through(e->t, 1, desc, 240);
	}
	/* a cursor with no row has no resume key */
	ts_query q;
	ts_cursor *c;
	const ts_value *key;
	int nkey;
	memset(&q, 0, sizeof q);
	q.has_from = 1;
	q.from = NOW;
	assert_int_equal(ts_query_open(e->t, &q, &c), 0);
	assert_int_equal(ts_cursor_next(c, &key, &nkey), 0);
	assert_null(key);
	assert_int_equal(ts_cursor_resume(c, &key, &nkey), TS_ENOENT);
	assert_int_equal(ts_cursor_more(c), 0);
	ts_cursor_close(c);
}

/* Bounds of no values at all, the daemon's "ge": [] (found by
 * tests/fuzz/fuzz_request: comparing a key with the empty bound passed
 * memcmp a NULL pointer): every key passes them, so with `after` the
 * rows are those after it, from the tree and from a tablet. */
static void query_empty_bounds_with_after(void **state)
{
	ts_test_env *e = *state;
	ts_value none[1] = {ts_int64(0)}, after[2] = {ts_string("h00"), ts_timestamp(START + 4 * SEC)};
	load(e->t, 2, 10, SEC);
	for (int flushed = 0; flushed < 2; flushed++) {
		for (int desc = 0; desc < 2; desc++) {
			ts_query q;
			test_row *rows;
			memset(&q, 0, sizeof q);
			q.lower = q.upper = none; /* zero values of them */
			q.after = after;
			q.nafter = 2;
			q.desc = desc;
			long n = run(e->t, &q, &rows, NULL);
			assert_int_equal(n, desc ? 4 : 15);
			assert_string_equal(rows[0].host, "h00");
			assert_int_equal(rows[0].ts, START + (desc ? 3 : 5) * SEC);
			assert_string_equal(rows[n - 1].host, desc ? "h00" : "h01");
			assert_int_equal(rows[n - 1].ts, START + (desc ? 0 : 9) * SEC);
			free(rows);
		}
		assert_int_equal(ts_flush(e->t, INT64_MAX), 0);
	}
}

/* ---- how much is read ---- */

/* A one-host, one-hour query reads the hour's rows and at most the one
 * after them: the prefix and the hour become one key interval. */
static void query_prefix_hour_reads_only_the_hour(void **state)
{
	ts_test_env *e = *state;
	load(e->t, 8, 12 * 360, 10 * SEC); /* 12 hours */
	for (int pass = 0; pass < 2; pass++) {
		ts_value h = ts_string("h05");
		ts_query q;
		test_row *rows;
		memset(&q, 0, sizeof q);
		q.prefix = &h;
		q.nprefix = 1;
		q.has_from = q.has_to = 1;
		q.from = START + 3 * HOUR;
		q.to = START + 4 * HOUR;
		for (q.desc = 0; q.desc < 2; q.desc++) {
			int64_t scanned = ts_test_stat(e->t, "rows_scanned");
			int64_t returned = ts_test_stat(e->t, "rows_returned");
			assert_int_equal(run(e->t, &q, &rows, NULL), 360);
			expect_row(&rows[q.desc ? 359 : 0], 5, 3 * 360, 10 * SEC);
			expect_row(&rows[q.desc ? 0 : 359], 5, 4 * 360 - 1, 10 * SEC);
			free(rows);
			assert_int_equal(ts_test_stat(e->t, "rows_returned") - returned, 360);
			assert_true(ts_test_stat(e->t, "rows_scanned") - scanned <= 361);
		}
		assert_int_equal(ts_flush(e->t, INT64_MAX), 0); /* again, from tablets */
	}
}

/* ---- projection and schema ---- */

static void query_projection_and_schema(void **state)
{
	ts_test_env *e = *state;
	load(e->t, 2, 10, SEC);
	assert_int_equal(ts_flush(e->t, INT64_MAX), 0);
	ts_column extra = {"w", TS_DOUBLE, {TS_DOUBLE, {.d = 2.5}}};
	assert_int_equal(ts_alter_add(e->t, &extra), 0);
	ts_value row[5] = {ts_string("h00"), ts_timestamp(START + 100 * SEC), ts_int64(1),
	                   ts_int64(2), ts_double(-1.0)};
	assert_int_equal(ts_insert(e->t, row, 1), 0);
	int cols[3] = {4, 1, 3};
	ts_query q;
	ts_cursor *c;
	const ts_value *r;
	int n, count = 0;
	memset(&q, 0, sizeof q);
	q.columns = cols;
	q.ncolumns = 3;
	q.prefix = row;
	q.nprefix = 1;
	assert_int_equal(ts_query_open(e->t, &q, &c), 0);
	while (ts_cursor_next(c, &r, &n) == 0 && r) {
		assert_int_equal(n, 3);
		assert_int_equal(r[0].type, TS_DOUBLE);
		assert_int_equal(r[1].type, TS_TIMESTAMP);
		assert_int_equal(r[2].type, TS_INT64);
		if (count < 10) { /* old rows: the default */
			assert_true(r[0].v.d == 2.5);
			assert_int_equal(r[1].v.i, START + count * SEC);
		} else {
			assert_true(r[0].v.d == -1.0);
			assert_int_equal(r[1].v.i, START + 100 * SEC); /* ts, from the key's end */
			assert_int_equal(r[2].v.i, 2);
		}
		count++;
	}
	assert_int_equal(count, 11);
	ts_cursor_close(c);
}

/* ---- bad requests ---- */

static void expect_query_error(ts_table *t, const ts_query *q, int code, const char *msg)
{
	ts_cursor *c = (ts_cursor *)&c;
	assert_int_equal(ts_query_open(t, q, &c), code);
	assert_null(c);
	if (!strstr(ts_errmsg(NULL), msg))
		fail_msg("message \"%s\" lacks \"%s\"", ts_errmsg(NULL), msg);
}

static void query_errors(void **state)
{
	ts_test_env *e = *state;
	ts_query q;
	ts_value three[3] = {ts_string("a"), ts_timestamp(1), ts_int64(1)};
	ts_value wrong = ts_int64(5), none = ts_none();
	int bad_col = 9;
	memset(&q, 0, sizeof q);
	q.prefix = three;
	q.nprefix = 3;
	expect_query_error(e->t, &q, TS_EINVAL, "prefix: 3 values given, the key has 2");
	q.nprefix = 1;
	q.prefix = &wrong;
	expect_query_error(e->t, &q, TS_ETYPE, "prefix:");
	q.prefix = &none;
	expect_query_error(e->t, &q, TS_EINVAL, "prefix: value 0 (column \"host\") is missing");
	memset(&q, 0, sizeof q);
	q.lower = three;
	q.nlower = -1;
	expect_query_error(e->t, &q, TS_EINVAL, "lower:");
	memset(&q, 0, sizeof q);
	q.after = three;
	q.nafter = 1;
	expect_query_error(e->t, &q, TS_EINVAL, "needs all 2 key columns");
	memset(&q, 0, sizeof q);
	q.columns = &bad_col;
	q.ncolumns = 1;
	expect_query_error(e->t, &q, TS_ENOENT, "no column 9");
	q.ncolumns = 0;
	expect_query_error(e->t, &q, TS_EINVAL, "0 columns");
	expect_query_error(e->t, NULL, TS_EINVAL, "no query");

	ts_aggspec spec = {0, TS_AGG_SUM};
	ts_aggregate a = {NULL, 0, START, NOW, HOUR, 1, &spec, 1};
	ts_cursor *c = (ts_cursor *)&c;
	assert_int_equal(ts_aggregate_open(e->t, &a, &c), TS_ETYPE); /* host is a string */
	assert_null(c);
	spec.column = 3;
	a.every = 0;
	assert_int_equal(ts_aggregate_open(e->t, &a, &c), TS_EINVAL);
	a.every = HOUR;
	a.group = 2;
	assert_int_equal(ts_aggregate_open(e->t, &a, &c), TS_EINVAL);
	a.group = 1;
	a.to = a.from;
	assert_int_equal(ts_aggregate_open(e->t, &a, &c), TS_EINVAL);
	a.to = NOW;
	spec.column = 4;
	assert_int_equal(ts_aggregate_open(e->t, &a, &c), TS_ENOENT);
	spec.column = 3;
	spec.fn = (ts_aggfn)99;
	assert_int_equal(ts_aggregate_open(e->t, &a, &c), TS_EINVAL);
	assert_int_equal(ts_latest_open(e->t, three, 3, &c), TS_EINVAL);
	assert_null(c);
}

/* ---- snapshots ---- */

/* A cursor reads the table as it was at open, whatever is inserted,
 * flushed and merged meanwhile. */
/* After load(e->t, 4, 200, SEC): the same steps again, one ns later (new
 * keys between the old), then everything flushed and merged, so that the
 * files an older snapshot reads have been replaced. */
static void insert_between_and_merge(ts_test_env *e)
{
	size_t k = 0;
	test_row *more = calloc(800, sizeof *more);
	assert_non_null(more);
	for (long i = 0; i < 200; i++)
		for (int h = 0; h < 4; h++, k++) {
			snprintf(more[k].host, sizeof more[k].host, "h%02d", h);
			more[k].ts = START + i * SEC + 1;
		}
	assert_int_equal(ts_test_insert_m(e->t, more, k), 0);
	free(more);
	assert_int_equal(ts_flush(e->t, INT64_MAX), 0);
	int merged = 0;
	assert_int_equal(ts_merge(e->t, &merged), 0);
	assert_true(merged > 0);
}

static void query_snapshot_isolation(void **state)
{
	ts_test_env *e = *state;
	load(e->t, 4, 200, SEC);
	assert_int_equal(ts_flush(e->t, START + 100 * SEC), 0);
	ts_query q;
	ts_cursor *c;
	const ts_value *r;
	int n;
	long count = 0;
	memset(&q, 0, sizeof q);
	assert_int_equal(ts_query_open(e->t, &q, &c), 0);
	while (count < 100 && ts_cursor_next(c, &r, &n) == 0 && r)
		count++;
	insert_between_and_merge(e);
	while (ts_cursor_next(c, &r, &n) == 0 && r) {
		assert_int_equal((r[1].v.i - START) % SEC, 0); /* an old row */
		count++;
	}
	assert_int_equal(count, 800);
	ts_cursor_close(c);
	test_row *rows;
	assert_int_equal(run(e->t, &q, &rows, NULL), 1600);
	free(rows);
}

/* A rewound cursor gives again exactly the rows of its snapshot, from
 * the first, although rows were inserted, flushed and merged since; its
 * limit counts again.  Only query cursors rewind. */
static void query_rewind_same_snapshot(void **state)
{
	ts_test_env *e = *state;
	load(e->t, 4, 200, SEC);
	assert_int_equal(ts_flush(e->t, START + 100 * SEC), 0);
	ts_query q;
	ts_cursor *c;
	test_row *first, *again, *limited;
	int more;
	ts_value prefix = ts_string("h01");
	memset(&q, 0, sizeof q);
	q.prefix = &prefix;
	q.nprefix = 1;
	assert_int_equal(ts_query_open(e->t, &q, &c), 0);
	assert_int_equal(drain(c, &first, &more), 200);
	insert_between_and_merge(e);
	for (int round = 0; round < 2; round++) {
		assert_int_equal(ts_cursor_rewind(c), 0);
		assert_int_equal(drain(c, &again, &more), 200);
		assert_int_equal(more, 0);
		assert_memory_equal(again, first, 200 * sizeof *first);
		free(again);
	}
	ts_cursor_close(c);

	/* with a limit, in a new snapshot that holds the new rows: the same
	 * first rows, and `more`, after a rewind */
	q.limit = 7;
	assert_int_equal(ts_query_open(e->t, &q, &c), 0);
	assert_int_equal(drain(c, &limited, &more), 7);
	assert_int_equal(more, 1);
	free(limited);
	assert_int_equal(ts_cursor_rewind(c), 0);
	assert_int_equal(drain(c, &limited, &more), 7);
	assert_int_equal(more, 1);
	assert_string_equal(limited[0].host, "h01");
	assert_int_equal(limited[0].ts, START);
	assert_int_equal(limited[1].ts, START + 1);
	free(limited);
	ts_cursor_close(c);
	free(first);

	assert_int_equal(ts_latest_open(e->t, NULL, 0, &c), 0);
	assert_int_equal(ts_cursor_rewind(c), TS_ENOTSUP);
	ts_cursor_close(c);
}

/* ---- damage ---- */

static void query_damaged_tablet(void **state)
{
	ts_test_env *e = *state;
	load(e->t, 2, 100, SEC);
	assert_int_equal(ts_flush(e->t, INT64_MAX), 0);
	ts_test_env_close(e);
	char path[512], dir[400];
	snprintf(dir, sizeof dir, "%s/m/tablets", e->dir);
	assert_int_equal(ts_test_count_files(dir, ".tab"), 1);
	/* the tablet is tablet 1 (ids start at 1) */
	snprintf(path, sizeof path, "%s/%016x.tab", dir, 1);
	int fd = open(path, O_RDWR);
	assert_true(fd >= 0);
	unsigned char b;
	off_t off = TS_TABH_SIZE + TS_BLKH_SIZE + 5; /* inside block 0's stored bytes */
	assert_int_equal(pread(fd, &b, 1, off), 1);
	b ^= 0x40;
	assert_int_equal(pwrite(fd, &b, 1, off), 1);
	close(fd);
	e->flags |= TS_OPEN_NOMERGE;
	ts_test_env_open(e);
	ts_query q;
	ts_cursor *c;
	const ts_value *r;
	int n;
	memset(&q, 0, sizeof q);
	int rc = ts_query_open(e->t, &q, &c);
	if (rc == 0) {
		assert_int_equal(ts_cursor_next(c, &r, &n), TS_ECORRUPT);
		assert_null(r);
		assert_int_equal(ts_cursor_next(c, &r, &n), TS_ECORRUPT); /* sticky */
		ts_cursor_close(c);
	} else {
		assert_int_equal(rc, TS_ECORRUPT);
	}
	assert_true(strstr(ts_errmsg(NULL), "checksum") != NULL);
	assert_true(ts_test_stat(e->t, "tablets_damaged_reports") >= 1);
}

/* ---- latest ---- */

static int64_t latest_ts(ts_table *t, const ts_value *prefix, int n, char *host)
{
	ts_cursor *c;
	const ts_value *r;
	int nv;
	assert_int_equal(ts_latest_open(t, prefix, n, &c), 0);
	assert_int_equal(ts_cursor_next(c, &r, &nv), 0);
	int64_t ts = INT64_MIN;
	if (r) {
		ts = r[1].v.i;
		if (host)
			snprintf(host, 16, "%.*s", (int)r[0].v.s.len, (const char *)r[0].v.s.ptr);
		assert_int_equal(ts_cursor_next(c, &r, &nv), 0);
		assert_null(r); /* one row at most */
	}
	ts_cursor_close(c);
	return ts;
}

static void latest_rows(void **state)
{
	ts_test_env *e = *state;
	char host[16];
	ts_value none = ts_string("nobody");
	assert_int_equal(latest_ts(e->t, NULL, 0, NULL), INT64_MIN); /* empty table */
	/* yesterday's rows on disk in several tablets, today's in the tree */
	load(e->t, 6, 6 * 360, 10 * SEC);
	assert_int_equal(ts_flush(e->t, START + 2 * HOUR), 0);
	assert_int_equal(ts_flush(e->t, START + 4 * HOUR), 0);
	for (int h = 0; h < 6; h++) {
		char name[16];
		snprintf(name, sizeof name, "h%02d", h);
		ts_value p = ts_string(name);
		int64_t scanned = ts_test_stat(e->t, "rows_scanned");
		assert_int_equal(latest_ts(e->t, &p, 1, NULL), START + (6 * 360 - 1) * 10 * SEC);
		/* the newest stream answers alone, with one row */
		assert_int_equal(ts_test_stat(e->t, "rows_scanned") - scanned, 1);
	}
	assert_int_equal(latest_ts(e->t, &none, 1, NULL), INT64_MIN);
	/* a short key's strings, and the row of a table of few columns,
	 * decode into the cursor's own storage */
	ts_value p1 = ts_string("h01");
	ts_cursor *c;
	const ts_value *r;
	int nv;
	assert_int_equal(ts_latest_open(e->t, &p1, 1, &c), 0);
	assert_int_equal(ts_cursor_next(c, &r, &nv), 0);
	assert_non_null(r);
	assert_memory_equal(r[0].v.s.ptr, "h01", 3);
	assert_ptr_equal(c->scratch.data, c->scratch_mem);
	assert_ptr_equal(r, c->vals_mem);
	ts_cursor_close(c);
	/* no prefix: the newest ts, the greatest key among equals */
	assert_int_equal(latest_ts(e->t, NULL, 0, host), START + (6 * 360 - 1) * 10 * SEC);
	assert_string_equal(host, "h05");
	/* a host whose newest row is on disk only */
	test_row old = {"h99", START + HOUR, 0, 0};
	assert_int_equal(ts_test_insert_m(e->t, &old, 1), 0);
	assert_int_equal(ts_flush(e->t, START + 2 * HOUR), 0);
	ts_value p99 = ts_string("h99");
	assert_int_equal(latest_ts(e->t, &p99, 1, NULL), START + HOUR);
	/* past the TTL it is gone */
	assert_int_equal(ts_alter_ttl(e->t, NOW - START - HOUR - 1), 0);
	assert_int_equal(latest_ts(e->t, &p99, 1, NULL), INT64_MIN);
}

/* A clock that counts the reads made by one thread (the maintenance
 * thread reads it too, on its own schedule). */
struct counted_clock {
	pthread_t reader;
	int64_t now;
	int reads;
};

static int64_t counting_clock(void *arg)
{
	struct counted_clock *k = arg;
	if (pthread_equal(pthread_self(), k->reader))
		k->reads++;
	return k->now;
}

/* A snapshot of a table without a TTL does not read the database clock
 * (latest pays it per lookup otherwise); with a TTL it must. */
static void latest_reads_clock_only_for_ttl(void **state)
{
	(void)state;
	struct counted_clock k = {pthread_self(), NOW, 0};
	char *dir = ts_test_tmpdir();
	ts_options o;
	ts_options_init(&o);
	o.flags = TS_OPEN_CREATE | TS_OPEN_NOMERGE;
	o.sync = TS_SYNC_NONE;
	o.clock = counting_clock;
	o.clock_arg = &k;
	ts_db *db;
	ts_table *t;
	assert_int_equal(ts_open(dir, &o, &db), 0);
	ts_test_create_m(db, 0);
	assert_int_equal(ts_table_open(db, "m", &t), 0);
	load(t, 2, 100, 10 * SEC);
	assert_int_equal(ts_flush(t, START + 500 * SEC), 0); /* on disk and in the tree */
	ts_value p = ts_string("h01");
	k.reads = 0;
	assert_int_equal(latest_ts(t, &p, 1, NULL), START + 99 * 10 * SEC);
	assert_int_equal(k.reads, 0);
	assert_int_equal(ts_alter_ttl(t, 2 * DAY), 0);
	k.reads = 0;
	assert_int_equal(latest_ts(t, &p, 1, NULL), START + 99 * 10 * SEC);
	assert_true(k.reads >= 1);
	ts_table_close(t);
	ts_close(db);
	ts_test_rmdir(dir);
}

/* ---- aggregates ---- */

struct expect {
	int64_t count, sum, min, max, first, last;
};

/* What hour window w of host h must give, from the load() model. */
static struct expect expected(int h, int w, long per_hour)
{
	struct expect x = {0, 0, INT64_MAX, INT64_MIN, 0, 0};
	for (long i = w * per_hour; i < (w + 1) * per_hour; i++) {
		int64_t v = value_of(h, i);
		x.first = x.count ? x.first : v;
		x.last = v;
		x.count++;
		x.sum += v;
		x.min = v < x.min ? v : x.min;
		x.max = v > x.max ? v : x.max;
	}
	return x;
}

static void check_hourly(ts_table *t, int hosts, int hours, long per_hour, int with_ends)
{
	ts_aggspec specs[7] = {{3, TS_AGG_COUNT}, {3, TS_AGG_SUM}, {3, TS_AGG_MIN},
	                       {3, TS_AGG_MAX},   {3, TS_AGG_MEAN}, {3, TS_AGG_FIRST},
	                       {3, TS_AGG_LAST}};
	ts_aggregate a = {NULL, 0, START, START + hours * HOUR, HOUR, 1, specs, with_ends ? 7 : 5};
	ts_cursor *c;
	const ts_value *r;
	int n, rows = 0;
	assert_int_equal(ts_aggregate_open(t, &a, &c), 0);
	while (ts_cursor_next(c, &r, &n) == 0 && r) {
		int h = rows / hours, w = rows % hours;
		char host[16];
		struct expect x = expected(h, w, per_hour);
		snprintf(host, sizeof host, "h%02d", h);
		assert_int_equal(n, 2 + a.nspecs);
		assert_int_equal(r[0].type, TS_STRING);
		assert_memory_equal(r[0].v.s.ptr, host, 3);
		assert_int_equal(r[1].type, TS_TIMESTAMP);
		assert_int_equal(r[1].v.i, START + w * HOUR);
		assert_int_equal(r[2].v.i, x.count);
		assert_int_equal(r[3].type, TS_INT64);
		assert_int_equal(r[3].v.i, x.sum);
		assert_int_equal(r[4].v.i, x.min);
		assert_int_equal(r[5].v.i, x.max);
		assert_int_equal(r[6].type, TS_DOUBLE);
		assert_true(r[6].v.d == (double)x.sum / (double)x.count);
		if (with_ends) {
			assert_int_equal(r[7].v.i, x.first);
			assert_int_equal(r[8].v.i, x.last);
		}
		rows++;
	}
	assert_int_equal(rows, hosts * hours);
	ts_cursor_close(c);
}

/* Hourly aggregates per host are exact from the tree, and from tablets,
 * where most blocks answer from their statistics -- except for first and
 * last, which read every row. */
static void aggregate_hourly_exact(void **state)
{
	ts_test_env *e = *state;
	const long per_hour = 720; /* a row every 5 s: blocks fill within the hour */
	load(e->t, 4, 6 * per_hour, 5 * SEC);
	check_hourly(e->t, 4, 6, per_hour, 1);
	assert_int_equal(ts_test_stat(e->t, "aggregate_rows_summarised"), 0);
	assert_int_equal(ts_flush(e->t, INT64_MAX), 0);
	check_hourly(e->t, 4, 6, per_hour, 0);
	int64_t summarised = ts_test_stat(e->t, "aggregate_rows_summarised");
	assert_true(summarised > 4 * 6 * per_hour / 2);
	check_hourly(e->t, 4, 6, per_hour, 1);
	assert_int_equal(ts_test_stat(e->t, "aggregate_rows_summarised"), summarised);
}

/* A column added after the tablets were written sums as its default. */
static void aggregate_added_column(void **state)
{
	ts_test_env *e = *state;
	load(e->t, 2, 2 * 720, 5 * SEC);
	assert_int_equal(ts_flush(e->t, INT64_MAX), 0);
	ts_column extra = {"w", TS_INT32, {TS_INT32, {.i = 7}}};
	assert_int_equal(ts_alter_add(e->t, &extra), 0);
	assert_int_equal(ts_alter_widen(e->t, "w"), 0);
	ts_aggspec specs[3] = {{4, TS_AGG_SUM}, {4, TS_AGG_MAX}, {4, TS_AGG_COUNT}};
	ts_aggregate a = {NULL, 0, START, START + 2 * HOUR, DAY, 0, specs, 3};
	ts_cursor *c;
	const ts_value *r;
	int n;
	assert_int_equal(ts_aggregate_open(e->t, &a, &c), 0);
	assert_int_equal(ts_cursor_next(c, &r, &n), 0);
	assert_non_null(r);
	assert_int_equal(n, 4); /* no group: window, then the values */
	assert_int_equal(r[0].v.i, START); /* START is midnight */
	assert_int_equal(r[1].v.i, 7 * 2 * 2 * 720);
	assert_int_equal(r[2].type, TS_INT64);
	assert_int_equal(r[2].v.i, 7);
	assert_int_equal(r[3].v.i, 2 * 2 * 720);
	assert_int_equal(ts_cursor_next(c, &r, &n), 0);
	assert_null(r);
	ts_cursor_close(c);
	assert_true(ts_test_stat(e->t, "aggregate_rows_summarised") > 0);
}

/* ---- aggregates at the edges (findings of tests/fuzz/fuzz_tablet) ---- */

/* The next row of an aggregate of count and sum, with no group. */
static void expect_window(ts_cursor *c, int64_t start, int64_t count, int64_t sum)
{
	const ts_value *r;
	int n;
	assert_int_equal(ts_cursor_next(c, &r, &n), 0);
	assert_non_null(r);
	assert_int_equal(n, 3);
	assert_int_equal(r[0].v.i, start);
	assert_int_equal(r[1].v.i, count);
	assert_int_equal(r[2].v.i, sum);
}

/* The first window of the int64 range begins below INT64_MIN: its start
 * was computed with a signed overflow (and so was the period of a row
 * inserted there).  It is reported as starting at INT64_MIN, from the
 * tree and from a tablet (by rows, and by block statistics). */
static void aggregate_window_at_int64_min(void **state)
{
	ts_test_env *e = *state;
	test_row rows[3] = {{"a", INT64_MIN, 0, 5}, {"a", INT64_MIN + 1, 1, 6},
	                    {"a", INT64_MIN + HOUR, 2, 7}};
	const int64_t second = INT64_MIN / HOUR * HOUR; /* rounds up: the next window */
	ts_aggspec specs[2] = {{3, TS_AGG_COUNT}, {3, TS_AGG_SUM}};
	ts_cursor *c;
	const ts_value *r;
	int n;
	assert_int_equal(ts_test_insert_m(e->t, rows, 3), 0);
	for (int flushed = 0; flushed < 2; flushed++) {
		ts_aggregate hourly = {NULL, 0, INT64_MIN, INT64_MIN + 2 * HOUR, HOUR, 0, specs, 2};
		assert_int_equal(ts_aggregate_open(e->t, &hourly, &c), 0);
		expect_window(c, INT64_MIN, 2, 11);
		expect_window(c, second, 1, 7);
		assert_int_equal(ts_cursor_next(c, &r, &n), 0);
		assert_null(r);
		ts_cursor_close(c);
		ts_aggregate daily = {NULL, 0, INT64_MIN, 0, DAY, 0, specs, 2};
		assert_int_equal(ts_aggregate_open(e->t, &daily, &c), 0);
		expect_window(c, INT64_MIN, 3, 18);
		assert_int_equal(ts_cursor_next(c, &r, &n), 0);
		assert_null(r);
		ts_cursor_close(c);
		assert_int_equal(ts_flush(e->t, INT64_MAX), 0);
	}
	assert_int_equal(ts_test_stat(e->t, "aggregate_rows_summarised"), 3);
}

/* Store the footer of tablet id at path raw, with the integer sum of
 * column col set to first in block 0, second in block 1, and (when
 * zero_rest) 0 in the others. */
static void set_sums(const char *path, uint64_t id, int col, __int128 first, __int128 second,
                     int zero_rest)
{
	unsigned char tr[TS_TABT_SIZE];
	ts__tablet *t;
	int fd = open(path, O_RDWR);
	assert_true(fd >= 0);
	assert_int_equal(ts__tablet_open(path, id, &t), 0);
	assert_true(t->nblocks >= 2);
	assert_int_equal(pread(fd, tr, sizeof tr, (off_t)(t->size - TS_TABT_SIZE)), sizeof tr);
	uint64_t off = ts__load_u64(tr + TS_TABT_OFF_FOOTER);
	uint32_t len = ts__load_u32(tr + TS_TABT_OFF_RAW), j = 0;
	unsigned char *f = malloc(len);
	memcpy(f, t->footer, len);
	while (j < t->nstat && t->stat_cols[j] != col)
		j++;
	assert_true(j < t->nstat);
	for (uint32_t b = 0; b < (zero_rest ? t->nblocks : 2); b++) {
		unsigned char *st = f + (t->blocks[b].stats - t->footer) + (size_t)j * TS_STAT_SIZE;
		unsigned __int128 sum = (unsigned __int128)(b == 0 ? first : b == 1 ? second : 0);
		ts__store_u64(st + 8, (uint64_t)sum);
		ts__store_u64(st + 16, (uint64_t)(sum >> 64));
	}
	ts__store_u32(tr + TS_TABT_OFF_STORED, len);
	ts__store_u32(tr + TS_TABT_OFF_FOOTER_CRC, ts__crc32c(0, f, len));
	tr[TS_TABT_OFF_CODEC] = TS_CODEC_RAW;
	ts__store_u32(tr + TS_TABT_OFF_CRC, ts__crc32c(0, tr, TS_TABT_OFF_CRC));
	assert_int_equal(pwrite(fd, f, len, (off_t)off), (ssize_t)len);
	assert_int_equal(pwrite(fd, tr, sizeof tr, (off_t)(off + len)), sizeof tr);
	assert_int_equal(ftruncate(fd, (off_t)(off + len + sizeof tr)), 0);
	close(fd);
	free(f);
	ts__tablet_close(t);
}

#define INT128_MAX_ ((__int128)(~(unsigned __int128)0 >> 1))

/* Two hosts' rows flushed into tablet 1, whose sums of column 3 are then
 * set_sums(.., first, second, zero_rest); the table reopened. */
static void load_with_sums(ts_test_env *e, __int128 first, __int128 second, int zero_rest)
{
	char path[512];
	load(e->t, 2, 2 * 720, 5 * SEC);
	assert_int_equal(ts_flush(e->t, INT64_MAX), 0);
	ts_test_env_close(e);
	snprintf(path, sizeof path, "%s/m/tablets/%016x.tab", e->dir, 1);
	set_sums(path, 1, 3, first, second, zero_rest);
	ts_test_env_open(e);
}

/* Block statistics whose sums add up past __int128 (a footer no rows can
 * have; its checksum is right) make the sum out of range, as one past
 * int64 does: adding them overflowed. */
static void aggregate_summed_statistics_overflow(void **state)
{
	ts_test_env *e = *state;
	ts_aggspec specs[2] = {{3, TS_AGG_COUNT}, {3, TS_AGG_SUM}};
	ts_aggregate a = {NULL, 0, START, START + 2 * HOUR, DAY, 0, specs, 2};
	ts_cursor *c;
	const ts_value *r;
	int n;
	load_with_sums(e, INT128_MAX_, INT128_MAX_, 0);
	specs[1].fn = TS_AGG_COUNT; /* the counts are untouched */
	assert_int_equal(ts_aggregate_open(e->t, &a, &c), 0);
	assert_int_equal(ts_cursor_next(c, &r, &n), 0);
	assert_non_null(r);
	assert_int_equal(r[1].v.i, 2 * 2 * 720);
	ts_cursor_close(c);
	specs[1].fn = TS_AGG_SUM;
	assert_int_equal(ts_aggregate_open(e->t, &a, &c), 0);
	assert_int_equal(ts_cursor_next(c, &r, &n), TS_ERANGE);
	assert_non_null(strstr(ts_errmsg(NULL), "overflows"));
	ts_cursor_close(c);
	assert_true(ts_test_stat(e->t, "aggregate_rows_summarised") > 0);
}

/* Block statistics holding the least __int128, then a row read from the
 * tree in the same window: adding the row's value overflowed. */
static void aggregate_row_after_extreme_statistics(void **state)
{
	ts_test_env *e = *state;
	test_row late = {"h99", START + SEC, 0, -7};
	ts_aggspec specs[2] = {{3, TS_AGG_COUNT}, {3, TS_AGG_SUM}};
	ts_aggregate a = {NULL, 0, START, START + 2 * HOUR, DAY, 0, specs, 2};
	ts_cursor *c;
	const ts_value *r;
	int n;
	load_with_sums(e, -INT128_MAX_ - 1, 0, 1);
	assert_int_equal(ts_test_insert_m(e->t, &late, 1), 0); /* after every tablet key */
	specs[1].fn = TS_AGG_COUNT;
	assert_int_equal(ts_aggregate_open(e->t, &a, &c), 0);
	assert_int_equal(ts_cursor_next(c, &r, &n), 0);
	assert_non_null(r);
	assert_int_equal(r[1].v.i, 2 * 2 * 720 + 1);
	ts_cursor_close(c);
	specs[1].fn = TS_AGG_SUM;
	assert_int_equal(ts_aggregate_open(e->t, &a, &c), 0);
	assert_int_equal(ts_cursor_next(c, &r, &n), TS_ERANGE);
	ts_cursor_close(c);
	assert_true(ts_test_stat(e->t, "aggregate_rows_summarised") > 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, setup, ts_test_env_teardown)
		T(query_bounds),
		T(query_limit_resume),
		T(query_one_series_paged),
		T(query_empty_bounds_with_after),
		T(query_prefix_hour_reads_only_the_hour),
		T(query_projection_and_schema),
		T(query_errors),
		T(query_snapshot_isolation),
		T(query_rewind_same_snapshot),
		T(query_damaged_tablet),
		T(latest_rows),
		cmocka_unit_test(latest_reads_clock_only_for_ttl),
		T(aggregate_hourly_exact),
		T(aggregate_added_column),
		T(aggregate_window_at_int64_min),
		T(aggregate_summed_statistics_overflow),
		T(aggregate_row_after_extreme_statistics),
#undef T
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
