/*
 * test_delete.c -- deletes and purge (docs/corrections.md section 3):
 * ts_delete by key prefix, key range and time range, hiding rows of
 * filling trees and of on-disk tablets, across flush, merge, reopen and
 * in a read-only handle; rows inserted afterwards into the range
 * surviving (and a deleted key inserted again); latest falling back to
 * the next live row; aggregates not using a block summary a tombstone
 * may cover; a snapshot opened before a delete still seeing the rows;
 * the DESCRIPTOR's format version that makes older builds refuse the
 * table; ts_check; ts_purge leaving no byte of a deleted row in any file
 * under the database directory (and a control finding them before).
 * Each expectation is exact: reads are compared row for row with a model
 * that applies the same deletes.
 */
#include <dirent.h>
#include <fcntl.h>
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "descriptor.h"
#include "descriptor_format.h"
#include "maint.h"
#include "snapshot.h"
#include "support.h"

#define NOW INT64_C(1795262400000000000) /* 2026-11-21T12:00:00Z */
#define SEC INT64_C(1000000000)
#define MIN (60 * SEC)
#define HOUR (3600 * SEC)

/* Merges and flushes happen when a test says so. */
static int setup(void **state)
{
	*state = ts_test_env_new_held(NOW);
	return 0;
}

/* ---- the model ---- */

/* Insert n rows of host h at ts from, from + step, ... (batch b, v = b *
 * 1000 + i) into the table and the model. */
static void insert(ts_test_env *e, ts_test_model *m, const char *h, int n, int64_t from,
                   int64_t step, int64_t b)
{
	test_row *rows = calloc((size_t)n, sizeof *rows);
	assert_non_null(rows);
	for (int i = 0; i < n; i++) {
		snprintf(rows[i].host, sizeof rows[i].host, "%s", h);
		rows[i].ts = from + i * step;
		rows[i].batch = b;
		rows[i].v = b * 1000 + i;
	}
	if (ts_test_insert_m(e->t, rows, (size_t)n) != 0)
		fail_msg("insert: %s", ts_errmsg(NULL));
	if (m)
		ts_test_model_add(m, rows, (size_t)n);
	free(rows);
}

/* What a delete selects, in the model's terms: host in [lo, hi] (NULL:
 * unbounded; prefix: host == lo == hi), ts in [from, to). */
typedef struct box {
	const char *lo, *hi;
	int lo_excl, hi_excl;
	int64_t from, to;
} box;

static int in_box(const box *b, const test_row *r)
{
	if (b->lo) {
		int c = strcmp(r->host, b->lo);
		if (c < 0 || (c == 0 && b->lo_excl))
			return 0;
	}
	if (b->hi) {
		int c = strcmp(r->host, b->hi);
		if (c > 0 || (c == 0 && b->hi_excl))
			return 0;
	}
	return r->ts >= b->from && r->ts < b->to;
}

/* Delete b from the table (as a query's lower/upper bounds on host and
 * from/to) and from the model; returns the delete's version. */
static uint64_t delete_box(ts_test_env *e, ts_test_model *m, const box *b)
{
	ts_value lo = ts_string(b->lo ? b->lo : ""), hi = ts_string(b->hi ? b->hi : "");
	ts_query q = {0};
	uint64_t deleted = 0, version = 0, head = 0;
	if (b->lo) {
		q.lower = &lo;
		q.nlower = 1;
		q.lower_exclusive = b->lo_excl;
	}
	if (b->hi) {
		q.upper = &hi;
		q.nupper = 1;
		q.upper_exclusive = b->hi_excl;
	}
	q.from = b->from;
	q.to = b->to;
	q.has_from = b->from != INT64_MIN;
	q.has_to = b->to != INT64_MAX;
	if (ts_delete(e->t, &q, &deleted, &version) != 0)
		fail_msg("delete: %s", ts_errmsg(NULL));
	assert_int_equal(ts_table_version(e->t, &head), 0);
	assert_int_equal(version, head);
	size_t k = 0;
	for (size_t i = 0; m && i < m->n; i++)
		if (!in_box(b, &m->rows[i]))
			m->rows[k++] = m->rows[i];
	if (m) { /* the count is exact (small tables: always cheap) */
		if (deleted != m->n - k)
			fail_msg("delete counted %" PRIu64 " rows, the model %zu", deleted, m->n - k);
		m->n = k;
	}
	return version;
}

/* Every read path agrees with the model: the snapshot read, a query
 * (ascending and descending), and the count aggregate. */
static void expect(ts_test_env *e, const ts_test_model *m)
{
	ts_test_expect_model(e->t, m, INT64_MIN);
	for (int desc = 0; desc <= 1; desc++) {
		ts_query q = {0};
		ts_cursor *c;
		const ts_value *row;
		int n;
		size_t i = 0;
		q.desc = desc;
		assert_int_equal(ts_query_open(e->t, &q, &c), 0);
		while (ts_cursor_next(c, &row, &n) == 0 && row) {
			assert_true(i < m->n);
			const test_row *w = &m->rows[desc ? m->n - 1 - i : i];
			assert_int_equal(row[0].v.s.len, strlen(w->host));
			assert_memory_equal(row[0].v.s.ptr, w->host, strlen(w->host));
			assert_int_equal(row[1].v.i, w->ts);
			assert_int_equal(row[3].v.i, w->v);
			i++;
		}
		assert_int_equal(i, m->n);
		ts_cursor_close(c);
	}
	/* count and sum of v per host over one window: block summaries
	 * where no tombstone may cover the block */
	ts_aggspec specs[2] = {{3, TS_AGG_COUNT}, {3, TS_AGG_SUM}};
	ts_aggregate a = {.from = NOW - 100 * HOUR, .to = NOW + HOUR, .every = 200 * HOUR,
	                  .group = 1, .specs = specs, .nspecs = 2};
	ts_cursor *c;
	const ts_value *row;
	int n;
	size_t i = 0;
	assert_int_equal(ts_aggregate_open(e->t, &a, &c), 0);
	while (ts_cursor_next(c, &row, &n) == 0 && row) {
		int64_t count = 0, sum = 0;
		size_t j = i;
		for (; j < m->n && strcmp(m->rows[j].host, m->rows[i].host) == 0; j++) {
			count++;
			sum += m->rows[j].v;
		}
		assert_true(i < m->n);
		assert_int_equal(row[0].v.s.len, strlen(m->rows[i].host));
		assert_memory_equal(row[0].v.s.ptr, m->rows[i].host, strlen(m->rows[i].host));
		assert_int_equal(row[2].v.i, count);
		assert_int_equal(row[3].v.i, sum);
		i = j;
	}
	assert_int_equal(i, m->n);
	ts_cursor_close(c);
}

static void check_ok(ts_test_env *e)
{
	if (ts_check(e->db, NULL, NULL) != 0)
		fail_msg("check: %s", ts_errmsg(NULL));
}

/* The table still holds m after a restart and after a flush of all it
 * holds in memory, and passes ts_check. */
static void expect_after_restart_and_flush(ts_test_env *e, const ts_test_model *m)
{
	ts_test_env_reopen(e);
	expect(e, m);
	assert_int_equal(ts_flush(e->t, INT64_MAX), 0);
	expect(e, m);
	check_ok(e);
}

/* ---- deletes ---- */

static void delete_prefix_in_tree(void **state)
{
	ts_test_env *e = *state;
	ts_test_model m = {0};
	insert(e, &m, "a", 10, NOW - HOUR, SEC, 1);
	insert(e, &m, "b", 10, NOW - HOUR, SEC, 2);
	insert(e, &m, "c", 10, NOW - HOUR, SEC, 3);
	ts_value p = ts_string("b");
	ts_query q = {.prefix = &p, .nprefix = 1};
	uint64_t deleted = 0, version = 0;
	assert_int_equal(ts_delete(e->t, &q, &deleted, &version), 0);
	assert_int_equal(deleted, 10);
	assert_true(version > 0);
	size_t k = 0;
	for (size_t i = 0; i < m.n; i++)
		if (strcmp(m.rows[i].host, "b") != 0)
			m.rows[k++] = m.rows[i];
	m.n = k;
	assert_int_equal(m.n, 20);
	expect(e, &m);
	assert_int_equal(ts_test_count_rows(e->t), 20);
	check_ok(e);
	/* rows inserted afterwards into the range survive, the deleted keys
	 * too (in a new tree of the period) */
	insert(e, &m, "b", 5, NOW - HOUR, SEC, 4);
	expect(e, &m);
	/* and a key inserted again is a duplicate again */
	test_row dup = {"b", NOW - HOUR, 9, 9};
	assert_int_equal(ts_test_insert_m(e->t, &dup, 1), TS_EDUPKEY);
	check_ok(e);
	expect_after_restart_and_flush(e, &m);
	free(m.rows);
}

/* A batch inserting a new key of a tree, then a deleted key of the same
 * tree: the tree must not take rows of the batch that begins the next
 * tree (invariant V, which ts_check verifies once it is flushed), so the
 * batch is made again with the tree frozen first. */
static void reinsert_in_same_batch_keeps_v(void **state)
{
	ts_test_env *e = *state;
	ts_test_model m = {0};
	insert(e, &m, "a", 10, NOW - HOUR, SEC, 1);
	box b = {"a", "a", 0, 0, NOW - HOUR + 5 * SEC, NOW - HOUR + 6 * SEC};
	delete_box(e, &m, &b);
	test_row rows[3] = {{"a", NOW - HOUR + 20 * SEC, 2, 2000},
	                    {"a", NOW - HOUR + 5 * SEC, 2, 2001},
	                    {"b", NOW - HOUR, 2, 2002}};
	assert_int_equal(ts_test_insert_m(e->t, rows, 3), 0);
	ts_test_model_add(&m, rows, 3);
	assert_int_equal(ts_test_stat(e->t, "filling_tablets"), 2);
	expect(e, &m);
	check_ok(e);
	/* the deleted key is live again: a duplicate now */
	assert_int_equal(ts_test_insert_m(e->t, &rows[1], 1), TS_EDUPKEY);
	assert_int_equal(ts_flush(e->t, INT64_MAX), 0);
	expect(e, &m);
	check_ok(e);
	ts_test_env_reopen(e);
	expect(e, &m);
	free(m.rows);
}

static void delete_time_range_in_tablets(void **state)
{
	ts_test_env *e = *state;
	ts_test_model m = {0};
	insert(e, &m, "a", 60, NOW - 2 * HOUR, MIN, 1);
	insert(e, &m, "b", 60, NOW - 2 * HOUR, MIN, 2);
	assert_int_equal(ts_flush(e->t, INT64_MAX), 0);
	box b = {"a", "a", 0, 0, NOW - 2 * HOUR + 10 * MIN, NOW - 2 * HOUR + 20 * MIN};
	delete_box(e, &m, &b);
	assert_int_equal(m.n, 110);
	expect(e, &m);
	check_ok(e);
	/* a time range over every host */
	box all = {NULL, NULL, 0, 0, NOW - 2 * HOUR + 50 * MIN, INT64_MAX};
	delete_box(e, &m, &all);
	assert_int_equal(m.n, 90);
	expect(e, &m);
	ts_test_env_reopen(e);
	expect(e, &m);
	/* rows inserted after the delete, in its range, survive it */
	insert(e, &m, "a", 5, NOW - 2 * HOUR + 55 * MIN, SEC, 3);
	expect(e, &m);
	assert_int_equal(ts_flush(e->t, INT64_MAX), 0);
	expect(e, &m);
	int merged = 0;
	assert_int_equal(ts_merge(e->t, &merged), 0);
	expect(e, &m);
	check_ok(e);
	ts_test_env_reopen(e);
	expect(e, &m);
	free(m.rows);
}

/* One tree holds rows older and newer than a delete over them all: only
 * the older are hidden (by row LSN), in reads and through the flush. */
static void tree_rows_newer_than_delete_survive(void **state)
{
	ts_test_env *e = *state;
	ts_test_model m = {0};
	insert(e, &m, "a", 10, NOW - HOUR, SEC, 1);
	insert(e, &m, "b", 10, NOW - HOUR, SEC, 2);
	box b = {"a", "b", 0, 0, NOW - HOUR, NOW - HOUR + 30 * SEC};
	delete_box(e, &m, &b);
	insert(e, &m, "a", 10, NOW - HOUR + 10 * SEC, SEC, 3); /* the same tree, newer */
	assert_int_equal(m.n, 10);
	assert_int_equal(ts_test_stat(e->t, "filling_tablets"), 1);
	expect(e, &m);
	expect_after_restart_and_flush(e, &m);
	free(m.rows);
}

/* A merge of a tablet older than a delete with one newer: the output's
 * hi is newer than the tombstone, so the merge drops what it hides in
 * the older input, and keeps the newer input's rows in its box. */
static void merge_applies_tombstones_by_input(void **state)
{
	ts_test_env *e = *state;
	ts_test_model m = {0};
	int merged = 0;
	insert(e, &m, "a", 30, NOW - HOUR, SEC, 1);
	insert(e, &m, "b", 30, NOW - HOUR, SEC, 2);
	assert_int_equal(ts_flush(e->t, INT64_MAX), 0);
	box b = {"a", "b", 0, 0, NOW - HOUR + 10 * SEC, NOW - HOUR + 100 * SEC};
	delete_box(e, &m, &b);
	insert(e, &m, "a", 30, NOW - HOUR + 40 * SEC, SEC, 3); /* in the box, newer */
	insert(e, &m, "b", 20, NOW - HOUR + 40 * SEC, SEC, 4);
	assert_int_equal(ts_flush(e->t, INT64_MAX), 0);
	expect(e, &m);
	assert_int_equal(ts_test_stat(e->t, "tablets"), 2);
	assert_int_equal(ts_merge(e->t, &merged), 0);
	assert_int_equal(merged, 1);
	assert_int_equal(ts_test_stat(e->t, "tablets"), 1);
	expect(e, &m);
	check_ok(e);
	ts_test_env_reopen(e);
	expect(e, &m);
	free(m.rows);
}

static void delete_key_ranges(void **state)
{
	ts_test_env *e = *state;
	ts_test_model m = {0};
	const char *hosts[] = {"h1", "h2", "h3", "h4", "h5"};
	for (int i = 0; i < 5; i++)
		insert(e, &m, hosts[i], 20, NOW - HOUR, SEC, i + 1);
	assert_int_equal(ts_flush(e->t, INT64_MAX), 0);
	for (int i = 0; i < 5; i++)
		insert(e, &m, hosts[i], 20, NOW - HOUR + 100 * SEC, SEC, 10 + i);
	box b1 = {"h2", "h3", 1, 0, INT64_MIN, INT64_MAX}; /* (h2, h3] */
	delete_box(e, &m, &b1);
	expect(e, &m);
	box b2 = {"h4", "h5", 0, 1, NOW - HOUR + 10 * SEC, NOW - HOUR + 110 * SEC}; /* [h4, h5) */
	delete_box(e, &m, &b2);
	expect(e, &m);
	box b3 = {NULL, "h1", 0, 0, NOW - HOUR + 115 * SEC, INT64_MAX};
	delete_box(e, &m, &b3);
	expect(e, &m);
	check_ok(e);
	assert_int_equal(ts_flush(e->t, INT64_MAX), 0);
	expect(e, &m);
	int merged = 0;
	assert_int_equal(ts_merge(e->t, &merged), 0);
	expect(e, &m);
	check_ok(e);
	free(m.rows);
}

static void snapshot_before_delete_sees_rows(void **state)
{
	ts_test_env *e = *state;
	ts_test_model m = {0};
	insert(e, &m, "a", 10, NOW - HOUR, SEC, 1);
	assert_int_equal(ts_flush(e->t, INT64_MAX), 0);
	insert(e, &m, "a", 10, NOW - HOUR + 10 * SEC, SEC, 2);
	ts_query all = {0};
	ts_cursor *before;
	assert_int_equal(ts_query_open(e->t, &all, &before), 0);
	box b = {"a", "a", 0, 0, INT64_MIN, INT64_MAX};
	delete_box(e, &m, &b);
	assert_int_equal(ts_test_count_rows(e->t), 0);
	const ts_value *row;
	int n, rows = 0;
	while (ts_cursor_next(before, &row, &n) == 0 && row)
		rows++;
	assert_int_equal(rows, 20);
	ts_cursor_close(before);
	expect(e, &m);
	free(m.rows);
}

/* Room for rand_key's keys. */
#define RAND_KEY_MAX 20

/* A random encoded-ish key: 0, 7, 15, 16 or 17 bytes of one shared
 * filler, then 1 to 3 bytes over a small alphabet with a 0 in it, so
 * that bounds often meet, equal or nest, and keys tie in the index's
 * 16-byte heads (the filler), or differ from each other in the padding
 * (a 0 byte against none) or just past it. */
static size_t rand_key(unsigned *seed, unsigned char *k)
{
	static const size_t fill[] = {0, 0, 7, 15, 16, 17};
	size_t f = fill[rand_r(seed) % 6], n = f + 1 + (size_t)(rand_r(seed) % 3);
	memset(k, 'p', f);
	for (size_t i = f; i < n; i++)
		k[i] = (unsigned char)"\0abc"[rand_r(seed) % 4];
	return n;
}

static int ptr_order(const void *a, const void *b)
{
	uintptr_t x = (uintptr_t)*(const void *const *)a, y = (uintptr_t)*(const void *const *)b;
	return (x > y) - (x < y);
}

/* The index by key selects exactly what the pass over the list selects
 * (in another order), over random boxes and reads; with too little room
 * it says how many there are. */
static void tomb_index_selects_as_list(void **state)
{
	(void)state;
	unsigned seed = 28;
	for (int round = 0; round < 200; round++) {
		int n = rand_r(&seed) % 40;
		ts__tomb v[40];
		unsigned char bounds[40][2][RAND_KEY_MAX];
		memset(v, 0, sizeof v);
		for (int i = 0; i < n; i++) {
			v[i].version = 1 + (uint64_t)(rand_r(&seed) % 10);
			v[i].tmin = rand_r(&seed) % 10;
			v[i].tmax = v[i].tmin + rand_r(&seed) % 10;
			v[i].flags = (uint32_t)(rand_r(&seed) % 16);
			v[i].lolen = v[i].flags & TS_TOMB_LO ? (uint32_t)rand_key(&seed, bounds[i][0]) : 0;
			v[i].hilen = v[i].flags & TS_TOMB_HI ? (uint32_t)rand_key(&seed, bounds[i][1]) : 0;
			if (!(v[i].flags & TS_TOMB_LO))
				v[i].flags &= ~TS_TOMB_LO_STRICT;
			if (!(v[i].flags & TS_TOMB_HI))
				v[i].flags &= ~TS_TOMB_HI_STRICT;
			v[i].lo = bounds[i][0];
			v[i].hi = bounds[i][1];
		}
		ts__tomb_index x;
		assert_int_equal(ts__tomb_index_build(&x, v, n), 0);
		for (int q = 0; q < 50; q++) {
			unsigned char f[RAND_KEY_MAX], l[RAND_KEY_MAX];
			size_t flen = rand_key(&seed, f), llen = rand_key(&seed, l);
			int nof = rand_r(&seed) % 5 == 0, nol = rand_r(&seed) % 5 == 0;
			uint64_t vmin = (uint64_t)(rand_r(&seed) % 10);
			int64_t mn = rand_r(&seed) % 20, mx = mn + rand_r(&seed) % 10;
			const ts__tomb *a[40], *b[40], *few[2];
			int na = ts__tombs_select(v, n, vmin, nof ? NULL : f, flen, nol ? NULL : l, llen, mn,
			                          mx, a);
			int nb = ts__tombs_select_index(&x, vmin, nof ? NULL : f, flen, nol ? NULL : l, llen,
			                                mn, mx, b, 40);
			assert_int_equal(nb, na);
			qsort(a, (size_t)na, sizeof *a, ptr_order);
			qsort(b, (size_t)nb, sizeof *b, ptr_order);
			assert_memory_equal(a, b, (size_t)na * sizeof *a);
			assert_int_equal(ts__tombs_select_index(&x, vmin, nof ? NULL : f, flen,
			                                        nol ? NULL : l, llen, mn, mx, few, 2),
			                 na);
		}
		ts__tomb_index_free(&x);
	}
}

/* Snapshots of an unchanged chain and descriptor share one view of the
 * tombstones (no walk, no copy); a delete, or a flush's descriptor,
 * makes a new one that holds every tombstone in force. */
static void snapshots_share_tombstone_view(void **state)
{
	ts_test_env *e = *state;
	ts_test_model m = {0};
	insert(e, &m, "a", 10, NOW - HOUR, SEC, 1);
	insert(e, &m, "b", 10, NOW - HOUR, SEC, 1);
	assert_int_equal(ts_flush(e->t, INT64_MAX), 0); /* rows in a tablet */
	ts__snapshot s1, s2, s3;
	assert_int_equal(ts__snapshot_take(e->t, &s1), 0);
	assert_null(s1.tview);
	assert_int_equal(s1.ntombs, 0);
	ts__snapshot_release(&s1);
	box b = {"a", "a", 0, 0, NOW - HOUR, NOW - HOUR + 2 * SEC};
	delete_box(e, &m, &b);
	assert_int_equal(ts__snapshot_take(e->t, &s1), 0);
	assert_int_equal(ts__snapshot_take(e->t, &s2), 0);
	assert_non_null(s1.tview);
	assert_ptr_equal(s1.tview, s2.tview);
	assert_int_equal(s1.ntombs, 1);
	box c = {"b", "b", 0, 0, NOW - HOUR, NOW - HOUR + 2 * SEC};
	delete_box(e, &m, &c);
	assert_int_equal(ts__snapshot_take(e->t, &s3), 0);
	assert_ptr_not_equal(s3.tview, s1.tview);
	assert_int_equal(s3.ntombs, 2);
	ts__snapshot_release(&s1);
	ts__snapshot_release(&s2);
	ts__snapshot_release(&s3);
	expect(e, &m);
	insert(e, &m, "c", 10, NOW - HOUR, SEC, 1);
	assert_int_equal(ts_flush(e->t, INT64_MAX), 0); /* the chain moves into the descriptor */
	assert_int_equal(ts__snapshot_take(e->t, &s1), 0);
	assert_int_equal(s1.ntombs, 2);
	ts__snapshot_release(&s1);
	expect(e, &m);
	free(m.rows);
}

/* Runs of hidden rows in a tablet are skipped by binary search (scan.c
 * skip_hidden_run): a box over several hosts, one host's newest rows and
 * another's oldest; every read both ways, and latest of each host,
 * answer as the model, the runs ending at series boundaries, at a
 * tombstone's time bound and at a block's end. */
static void hidden_runs_skipped(void **state)
{
	ts_test_env *e = *state;
	ts_test_model m = {0};
	const char *hosts[] = {"a", "b", "c", "d"};
	for (int h = 0; h < 4; h++)
		insert(e, &m, hosts[h], 200, NOW - HOUR, SEC, h + 1);
	assert_int_equal(ts_flush(e->t, INT64_MAX), 0);
	box wide = {"a", "c", 0, 0, NOW - HOUR + 50 * SEC, NOW - HOUR + 120 * SEC};
	box newest = {"b", "b", 0, 0, NOW - HOUR + 150 * SEC, INT64_MAX};
	box oldest = {"d", "d", 0, 0, INT64_MIN, NOW - HOUR + 30 * SEC};
	box all_c = {"c", "c", 0, 0, INT64_MIN, INT64_MAX};
	delete_box(e, &m, &wide);
	delete_box(e, &m, &newest);
	delete_box(e, &m, &oldest);
	expect(e, &m);
	int64_t want[] = {NOW - HOUR + 199 * SEC, NOW - HOUR + 149 * SEC, NOW - HOUR + 199 * SEC,
	                  NOW - HOUR + 199 * SEC};
	for (int round = 0; round < 2; round++) {
		for (int h = 0; h < 4; h++) {
			ts_value p = ts_string(hosts[h]);
			ts_cursor *c;
			const ts_value *row;
			int n;
			assert_int_equal(ts_latest_open(e->t, &p, 1, &c), 0);
			assert_int_equal(ts_cursor_next(c, &row, &n), 0);
			if (want[h] == INT64_MIN) {
				assert_null(row);
			} else {
				assert_non_null(row);
				assert_int_equal(row[1].v.i, want[h]);
			}
			ts_cursor_close(c);
		}
		delete_box(e, &m, &all_c);
		want[2] = INT64_MIN;
		expect(e, &m);
	}
	free(m.rows);
}

static void latest_falls_back(void **state)
{
	ts_test_env *e = *state;
	ts_test_model m = {0};
	insert(e, &m, "a", 10, NOW - HOUR, SEC, 1);
	assert_int_equal(ts_flush(e->t, INT64_MAX), 0);
	insert(e, &m, "a", 10, NOW - HOUR + 10 * SEC, SEC, 2);
	ts_value p = ts_string("a");
	for (int step = 0; step < 3; step++) {
		/* the newest row of a is deleted: latest answers the next one
		 * (in the tree, then in the tablet, then none) */
		int64_t from = step == 0 ? NOW - HOUR + 15 * SEC : step == 1 ? NOW - HOUR + 5 * SEC
		                                                 : INT64_MIN;
		box b = {"a", "a", 0, 0, from, INT64_MAX};
		delete_box(e, &m, &b);
		ts_cursor *c;
		const ts_value *row;
		int n;
		assert_int_equal(ts_latest_open(e->t, &p, 1, &c), 0);
		assert_int_equal(ts_cursor_next(c, &row, &n), 0);
		if (step < 2) {
			assert_non_null(row);
			assert_int_equal(row[1].v.i, from - SEC);
		} else {
			assert_null(row);
		}
		ts_cursor_close(c);
	}
	free(m.rows);
}

/* A tablet of many blocks, one host per block or so: the aggregate must
 * read the rows of the blocks a tombstone covers and may use the
 * summaries of the others. */
static void aggregates_skip_covered_summaries(void **state)
{
	ts_test_env *e = *state;
	ts_test_model m = {0};
	char h[16];
	for (int i = 0; i < 20; i++) {
		snprintf(h, sizeof h, "host%02d", i);
		insert(e, &m, h, 500, NOW - 3 * HOUR, SEC, i + 1);
	}
	assert_int_equal(ts_flush(e->t, INT64_MAX), 0);
	expect(e, &m);
	box b = {"host05", "host07", 0, 0, NOW - 3 * HOUR + 100 * SEC, NOW - 3 * HOUR + 200 * SEC};
	delete_box(e, &m, &b);
	expect(e, &m);
	/* a whole host: its blocks lie wholly in the box and are counted by
	 * their statistics (delete_box checks the count) */
	box whole = {"host12", "host12", 0, 0, INT64_MIN, INT64_MAX};
	delete_box(e, &m, &whole);
	expect(e, &m);
	free(m.rows);
}

static void readonly_handle_sees_deletes(void **state)
{
	ts_test_env *e = *state;
	ts_test_model m = {0};
	insert(e, &m, "a", 10, NOW - HOUR, SEC, 1);
	insert(e, &m, "b", 10, NOW - HOUR, SEC, 2);
	assert_int_equal(ts_flush(e->t, INT64_MAX), 0);
	insert(e, &m, "a", 10, NOW - HOUR + 10 * SEC, SEC, 3);
	ts_db *ro;
	ts_table *rt;
	ts_options o;
	ts_options_init(&o);
	o.flags = TS_OPEN_READONLY;
	assert_int_equal(ts_open(e->dir, &o, &ro), 0);
	assert_int_equal(ts_table_open(ro, "m", &rt), 0);
	assert_int_equal(ts_test_count_rows(rt), 30);
	ts_query everything = {0};
	assert_int_equal(ts_delete(rt, &everything, NULL, NULL), TS_EREADONLY);
	assert_int_equal(ts_purge(rt, NULL, NULL), TS_EREADONLY);
	box b = {"a", "a", 0, 0, NOW - HOUR + 5 * SEC, NOW - HOUR + 15 * SEC};
	delete_box(e, &m, &b);
	assert_int_equal(ts_test_count_rows(rt), 20);
	/* the flush moves the tombstone into the descriptor */
	assert_int_equal(ts_flush(e->t, INT64_MAX), 0);
	assert_int_equal(ts_test_count_rows(rt), 20);
	assert_int_equal(ts_test_count_rows(e->t), 20);
	ts_table_close(rt);
	assert_int_equal(ts_close(ro), 0);
	expect(e, &m);
	free(m.rows);
}

/* The DESCRIPTOR is format 5 from the first delete on: builds that know
 * no tombstones refuse the table rather than misread its log. */
static void descriptor_refuses_older_builds(void **state)
{
	ts_test_env *e = *state;
	ts_test_model m = {0};
	char path[4096];
	unsigned char h[24];
	insert(e, &m, "a", 10, NOW - HOUR, SEC, 1);
	snprintf(path, sizeof path, "%s/m/DESCRIPTOR", e->dir);
	int fd = open(path, O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(read(fd, h, sizeof h), 24);
	close(fd);
	assert_true(h[8] < TS_DESC_VERSION_CORRECTIONS);
	box b = {"a", "a", 0, 0, INT64_MIN, INT64_MAX};
	delete_box(e, &m, &b);
	fd = open(path, O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(read(fd, h, sizeof h), 24);
	close(fd);
	assert_int_equal(h[8], TS_DESC_VERSION_CORRECTIONS);
	/* after a purge no tombstone is left, but the table took a delete
	 * (TS_DESC_DELETED, which caches key on: stat "corrected"), and
	 * keeps its change record (docs/corrections.md section 4): format 6 */
	assert_int_equal(ts_test_stat(e->t, "corrected"), 1);
	assert_int_equal(ts_test_stat(e->t, "changes_records"), 0);
	assert_int_equal(ts_purge(e->t, NULL, NULL), 0);
	fd = open(path, O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(read(fd, h, sizeof h), 24);
	close(fd);
	assert_int_equal(h[8], TS_DESC_VERSION_CHANGES);
	assert_int_equal(ts_test_stat(e->t, "corrected"), 1);
	assert_int_equal(ts_test_stat(e->t, "changes_records"), 1);
	assert_int_equal(ts_test_stat(e->t, "changes_horizon"), 0);
	expect(e, &m);
	check_ok(e);
	free(m.rows);
}

static void delete_refuses_bad_ranges(void **state)
{
	ts_test_env *e = *state;
	ts_query q = {.desc = 1};
	uint64_t d = 7, v = 7;
	ts_query everything = {0};
	assert_int_equal(ts_delete(e->t, &everything, &d, &v), 0); /* an empty table */
	assert_int_equal(d, 0);
	assert_true(v > 0);
	assert_int_equal(ts_delete(e->t, &q, &d, &v), TS_EINVAL);
	assert_int_equal(d, 0);
	assert_int_equal(v, 0);
	q = (ts_query){.limit = 3};
	assert_int_equal(ts_delete(e->t, &q, &d, &v), TS_EINVAL);
	ts_value bad = ts_int64(3);
	q = (ts_query){.prefix = &bad, .nprefix = 1};
	assert_int_equal(ts_delete(e->t, &q, &d, &v), TS_ETYPE);
	assert_int_equal(ts_delete(e->t, NULL, &d, &v), TS_EINVAL);
	/* an empty range commits nothing */
	test_row r = {"a", NOW, 1, 1};
	assert_int_equal(ts_test_insert_m(e->t, &r, 1), 0);
	uint64_t head = 0;
	assert_int_equal(ts_table_version(e->t, &head), 0);
	q = (ts_query){.from = NOW, .to = NOW, .has_from = 1, .has_to = 1};
	assert_int_equal(ts_delete(e->t, &q, &d, &v), 0);
	assert_int_equal(v, head);
	assert_int_equal(d, 0);
	assert_int_equal(ts_test_count_rows(e->t), 1);
}

/* Problems ts_check reported, one line each. */
static void note_problem(void *arg, const char *table, const char *file, const char *what)
{
	(void)table;
	char *out = arg;
	size_t n = strlen(out);
	snprintf(out + n, 4096 - n, "%s: %s\n", file, what);
}

/* A tombstone leaves the descriptor once no source it applies to may
 * hold rows in its box: here the flush leaves out the rows it hides, so
 * the tablet's timespan misses it and the flush drops it. */
static void flush_drops_spent_tombstones(void **state)
{
	ts_test_env *e = *state;
	ts_test_model m = {0};
	char dir[4096];
	ts__descriptor *d;
	insert(e, &m, "a", 10, NOW - HOUR, SEC, 1);
	box b = {"a", "a", 0, 0, NOW - HOUR, NOW - HOUR + 5 * SEC}; /* the oldest five */
	delete_box(e, &m, &b);
	box b2 = {"a", "a", 0, 0, NOW - HOUR + 7 * SEC, NOW - HOUR + 8 * SEC}; /* inside */
	uint64_t v2 = delete_box(e, &m, &b2);
	assert_int_equal(ts_flush(e->t, INT64_MAX), 0);
	expect(e, &m);
	snprintf(dir, sizeof dir, "%s/m", e->dir);
	assert_int_equal(ts__descriptor_read(dir, &d), 0);
	assert_int_equal(d->ntombs, 1);
	assert_int_equal(d->tombs[0].version, v2);
	ts__descriptor_free(d, 1);
	ts_test_env_reopen(e);
	expect(e, &m);
	check_ok(e);
	free(m.rows);
}

/* A flush with no tree to write moves the log's tombstones into the
 * DESCRIPTOR all the same (a spent one into its change record), cuts
 * the chain, and releases the log they held: later snapshots read them
 * from the descriptor; reads, a reopen and check agree. */
static void flush_moves_tombstones_alone(void **state)
{
	ts_test_env *e = *state;
	ts_test_model m = {0};
	char dir[4096];
	ts__descriptor *d;
	insert(e, &m, "a", 10, NOW - HOUR, SEC, 1);
	insert(e, &m, "b", 10, NOW - HOUR, SEC, 2);
	assert_int_equal(ts_flush(e->t, INT64_MAX), 0);
	box b = {"a", "a", 0, 0, NOW - HOUR, NOW - HOUR + 5 * SEC};
	uint64_t v1 = delete_box(e, &m, &b);
	box far = {"b", "b", 0, 0, NOW + 100 * HOUR, NOW + 101 * HOUR}; /* no rows: spent */
	uint64_t v2 = delete_box(e, &m, &far);
	assert_int_equal(e->t->fill.nlt, 2);
	assert_true(e->t->fill.tomb.root != 0);
	int64_t used = ts_test_stat(e->t, "log_bytes");
	assert_int_equal(ts_flush(e->t, INT64_MAX), 0);
	assert_int_equal(e->t->fill.nlt, 0);
	assert_int_equal(e->t->fill.tomb.root, 0);
	/* the log from the tombstones on is released: only the commit that
	 * cut the chain is left */
	assert_true(ts_test_stat(e->t, "log_bytes") < used);
	assert_int_equal(ts_test_stat(e->t, "changes_records"), 1);
	snprintf(dir, sizeof dir, "%s/m", e->dir);
	assert_int_equal(ts__descriptor_read(dir, &d), 0);
	assert_int_equal(d->ntombs, 1);
	assert_int_equal(d->tombs[0].version, v1);
	assert_int_equal(d->nchrecs, 1);
	assert_int_equal(d->chrecs[0].version, v2);
	ts__descriptor_free(d, 1);
	expect(e, &m);
	check_ok(e);
	ts_test_env_reopen(e);
	expect(e, &m);
	check_ok(e);
	/* a flush with nothing to move writes nothing */
	uint64_t gen = (uint64_t)ts_test_stat(e->t, "descriptor_generation");
	assert_int_equal(ts_flush(e->t, INT64_MAX), 0);
	assert_int_equal((uint64_t)ts_test_stat(e->t, "descriptor_generation"), gen);
	free(m.rows);
}

static void check_finds_bad_tombstones(void **state)
{
	ts_test_env *e = *state;
	ts_test_model m = {0};
	char problems[4096] = "", dir[4096];
	ts_check_opts o = {.problem = note_problem, .arg = problems};
	insert(e, &m, "a", 10, NOW - HOUR, SEC, 1);
	box b = {"a", "a", 0, 0, NOW - HOUR + 3 * SEC, NOW - HOUR + 5 * SEC}; /* inside */
	uint64_t v = delete_box(e, &m, &b);
	assert_int_equal(ts_check(e->db, NULL, &o), 0);
	assert_string_equal(problems, "");
	assert_int_equal(ts_flush(e->t, INT64_MAX), 0); /* into the descriptor */
	assert_int_equal(ts_check(e->db, NULL, &o), 0);
	assert_string_equal(problems, "");
	ts_test_env_close(e);
	/* a tombstone newer than any commit */
	ts__descriptor *d;
	snprintf(dir, sizeof dir, "%s/m", e->dir);
	assert_int_equal(ts__descriptor_read(dir, &d), 0);
	assert_int_equal(d->ntombs, 1);
	assert_int_equal(d->tombs[0].version, v);
	ts__tomb t = d->tombs[0];
	t.version = v + (UINT64_C(1) << 40);
	assert_int_equal(ts__descriptor_add_tomb(d, &t), 0);
	assert_int_equal(ts__descriptor_write(dir, d), 0);
	ts__descriptor_free(d, 1);
	ts_test_env_open(e);
	assert_int_not_equal(ts_check(e->db, NULL, &o), 0);
	assert_non_null(strstr(problems, "is newer than the log's newest commit"));
	free(m.rows);
}

/* The LSN through which log/HEAD says the log is durable. */
static uint64_t synced_lsn(const char *dbdir)
{
	char path[4096];
	unsigned char h[32];
	snprintf(path, sizeof path, "%s/m/log/HEAD", dbdir);
	int fd = open(path, O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(pread(fd, h, sizeof h, 0), (ssize_t)sizeof h);
	close(fd);
	uint64_t v;
	memcpy(&v, h + 24, 8);
	return v;
}

/* A delete follows the durability mode: in TS_SYNC_COMMIT it is durable
 * when it returns; in TS_SYNC_NONE it waits for a sync like an insert. */
static void delete_follows_sync_mode(void **state)
{
	(void)state;
	for (int mode = 0; mode < 2; mode++) {
		char *dir = ts_test_tmpdir();
		ts_options o;
		ts_db *db;
		ts_table *t;
		ts_options_init(&o);
		o.flags = TS_OPEN_CREATE | TS_OPEN_NOMERGE;
		o.sync = mode ? TS_SYNC_COMMIT : TS_SYNC_NONE;
		assert_int_equal(ts_open(dir, &o, &db), 0);
		ts_test_create_m(db, 0);
		assert_int_equal(ts_table_open(db, "m", &t), 0);
		test_row r = {"a", NOW, 1, 1};
		assert_int_equal(ts_test_insert_m(t, &r, 1), 0);
		assert_int_equal(ts_sync(db), 0);
		ts_value p = ts_string("a");
		ts_query q = {.prefix = &p, .nprefix = 1};
		uint64_t version = 0;
		assert_int_equal(ts_delete(t, &q, NULL, &version), 0);
		if (mode)
			assert_true(synced_lsn(dir) > version);
		else
			assert_true(synced_lsn(dir) < version);
		assert_int_equal(ts_sync(db), 0);
		assert_true(synced_lsn(dir) > version);
		assert_int_equal(ts_test_count_rows(t), 0);
		ts_table_close(t);
		assert_int_equal(ts_close(db), 0);
		ts_test_rmdir(dir);
	}
}

/* Whether the model holds a row of key (host, ts). */
static int model_has(const ts_test_model *m, const char *host, int64_t ts)
{
	for (size_t i = 0; i < m->n; i++)
		if (m->rows[i].ts == ts && strcmp(m->rows[i].host, host) == 0)
			return 1;
	return 0;
}

/* Random histories of inserts over a small key space (so that deleted
 * keys are inserted again, and live ones refused as duplicates), deletes
 * of random boxes, flushes, merges, reopens and purges, every read path
 * compared with the model and ts_check run after every few steps. */
static void random_history(void **state)
{
	ts_test_env *e = *state;
	ts_test_model m = {0};
	uint64_t rng = 0x9E3779B97F4A7C15u;
	const char *hosts[] = {"h0", "h1", "h2", "h3", "h4"};
	int64_t grid = 10 * MIN, base = NOW - 9 * HOUR;
	for (int step = 0; step < 400; step++) {
		uint64_t r = ts_test_xorshift(&rng) % 100;
		if (r < 55) { /* a batch of 1..4 distinct keys */
			test_row rows[4];
			int n = 1 + (int)(ts_test_xorshift(&rng) % 4), k = 0, dup = 0;
			for (int i = 0; i < n; i++) {
				test_row x = {"", base + (int64_t)(ts_test_xorshift(&rng) % 54) * grid, step, i};
				snprintf(x.host, sizeof x.host, "%s", hosts[ts_test_xorshift(&rng) % 5]);
				int again = 0;
				for (int j = 0; j < k; j++)
					again |= rows[j].ts == x.ts && !strcmp(rows[j].host, x.host);
				if (again)
					continue;
				dup |= model_has(&m, x.host, x.ts);
				rows[k++] = x;
			}
			int rc = ts_test_insert_m(e->t, rows, (size_t)k);
			if (rc != (dup ? TS_EDUPKEY : 0))
				fail_msg("step %d: insert returned %s, want %s: %s", step, ts_errname(rc),
				         dup ? "EDUPKEY" : "0", ts_errmsg(NULL));
			if (!dup)
				ts_test_model_add(&m, rows, (size_t)k);
		} else if (r < 75) { /* a box */
			int a = (int)(ts_test_xorshift(&rng) % 5), z = (int)(ts_test_xorshift(&rng) % 5);
			int64_t t0 = base + (int64_t)(ts_test_xorshift(&rng) % 54) * grid;
			int64_t t1 = t0 + (int64_t)(1 + ts_test_xorshift(&rng) % 20) * grid;
			box b = {hosts[a < z ? a : z], hosts[a < z ? z : a], (int)(r & 1), (int)(r >> 1 & 1),
			         t0, t1};
			if (r % 7 == 0)
				b.lo = NULL;
			if (r % 11 == 0)
				b.from = INT64_MIN;
			delete_box(e, &m, &b);
		} else if (r < 85) {
			assert_int_equal(ts_flush(e->t, base + (int64_t)(ts_test_xorshift(&rng) % 60) * grid),
			                 0);
		} else if (r < 92) {
			int merged;
			assert_int_equal(ts_merge(e->t, &merged), 0);
		} else if (r < 96) {
			ts_test_env_reopen(e);
		} else {
			assert_int_equal(ts_purge(e->t, NULL, NULL), 0);
		}
		if (step % 10 == 0 || step == 399) {
			expect(e, &m);
			check_ok(e);
		}
	}
	free(m.rows);
}

/* ---- purge ---- */

/* Occurrences of the bytes of s in the files under dir (recursively). */
static long grep_tree(const char *dir, const char *s)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	long hits = 0;
	size_t len = strlen(s);
	if (!d)
		return 0;
	while ((de = readdir(d))) {
		char path[4096];
		struct stat st;
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
		if (lstat(path, &st) != 0)
			continue;
		if (S_ISDIR(st.st_mode)) {
			hits += grep_tree(path, s);
			continue;
		}
		if (!S_ISREG(st.st_mode))
			continue;
		FILE *f = fopen(path, "rb");
		assert_non_null(f);
		unsigned char *buf = malloc((size_t)st.st_size + 1);
		assert_non_null(buf);
		size_t n = fread(buf, 1, (size_t)st.st_size, f);
		fclose(f);
		for (size_t i = 0; i + len <= n; i++)
			if (memcmp(buf + i, s, len) == 0)
				hits++;
		free(buf);
	}
	closedir(d);
	return hits;
}

static void purge_leaves_no_bytes(void **state)
{
	ts_test_env *e = *state;
	ts_test_model m = {0};
	/* markers: host names found nowhere else (tablets compress, but a
	 * block keeps each distinct string whole) */
	insert(e, &m, "keepQ1", 50, NOW - 2 * HOUR, SEC, 1);
	insert(e, &m, "zapMarkX1", 50, NOW - 2 * HOUR, SEC, 2);
	assert_int_equal(ts_flush(e->t, INT64_MAX), 0);
	insert(e, &m, "zapMarkX2", 50, NOW - HOUR, SEC, 3);
	insert(e, &m, "keepQ2", 50, NOW - HOUR, SEC, 4);
	assert_int_equal(ts_flush(e->t, INT64_MAX), 0);
	insert(e, &m, "zapMarkX3", 50, NOW - HOUR + 100 * SEC, SEC, 5); /* in a tree */
	insert(e, &m, "keepQ3", 50, NOW - HOUR + 100 * SEC, SEC, 6);
	assert_true(grep_tree(e->dir, "zapMarkX1") > 0);
	assert_true(grep_tree(e->dir, "zapMarkX2") > 0);
	assert_true(grep_tree(e->dir, "zapMarkX3") > 0);
	box b = {"zapMarkX", "zapMarkX4", 0, 1, INT64_MIN, INT64_MAX};
	delete_box(e, &m, &b);
	expect(e, &m);
	/* the control: deleted, but the bytes are still in the files */
	assert_true(grep_tree(e->dir, "zapMarkX1") > 0);
	assert_true(grep_tree(e->dir, "zapMarkX3") > 0);
	uint64_t version = 0, head = 0;
	ts_value p = ts_string("zapMarkX2");
	ts_query q = {.prefix = &p, .nprefix = 1};
	assert_int_equal(ts_purge(e->t, &q, &version), 0);
	assert_int_equal(ts_table_version(e->t, &head), 0);
	assert_int_equal(version, head);
	assert_int_equal(grep_tree(e->dir, "zapMarkX1"), 0);
	assert_int_equal(grep_tree(e->dir, "zapMarkX2"), 0);
	assert_int_equal(grep_tree(e->dir, "zapMarkX3"), 0);
	assert_true(grep_tree(e->dir, "keepQ1") > 0);
	assert_true(grep_tree(e->dir, "keepQ3") > 0);
	expect(e, &m);
	check_ok(e);
	ts_test_env_reopen(e);
	expect(e, &m);
	check_ok(e);
	/* deletes and inserts go on */
	insert(e, &m, "zapMarkX1", 5, NOW - 10 * SEC, SEC, 7);
	box b2 = {"keepQ1", "keepQ1", 0, 0, INT64_MIN, INT64_MAX};
	delete_box(e, &m, &b2);
	expect(e, &m);
	assert_int_equal(ts_purge(e->t, NULL, NULL), 0);
	/* the deletes' change records are kept, without their key bounds */
	assert_int_equal(ts_test_stat(e->t, "changes_records"), 2);
	assert_int_equal(grep_tree(e->dir, "keepQ1"), 0);
	expect(e, &m);
	check_ok(e);
	free(m.rows);
}

/* ---- deletes and replacements together ---- */

/* Table "r": (host string, ts; note string), policy replace. */
static ts_table *open_r(ts_test_env *e)
{
	ts_column cols[] = {
		{"host", TS_STRING, {TS_NONE, {0}}},
		{"ts", TS_TIMESTAMP, {TS_NONE, {0}}},
		{"note", TS_STRING, {TS_NONE, {0}}},
	};
	const char *key[] = {"host", "ts"};
	ts_table *t;
	assert_int_equal(ts_create_keyed(e->db, "r", cols, 3, key, 2, 0), 0);
	assert_int_equal(ts_table_open(e->db, "r", &t), 0);
	assert_int_equal(ts_alter_on_duplicate(t, TS_ON_DUPLICATE_REPLACE), 0);
	return t;
}

/* Store (h, ts0 + i s, note) for i in [0, n) under replace. */
static void put_r(ts_table *t, const char *h, int64_t ts0, int n, const char *note)
{
	ts_value v[3 * 64];
	size_t ignored;
	uint64_t version;
	assert_true(n <= 64);
	for (int i = 0; i < n; i++) {
		v[3 * i] = ts_string(h);
		v[3 * i + 1] = ts_timestamp(ts0 + i * SEC);
		v[3 * i + 2] = ts_string(note);
	}
	if (ts_insert_policy(t, 0, TS_ON_DUPLICATE_REPLACE, v, (size_t)n, &ignored, &version) != 0)
		fail_msg("insert: %s", ts_errmsg(NULL));
}

/* Delete h's rows with ts in [from, to]; returns *deleted. */
static uint64_t del_r(ts_table *t, const char *h, int64_t from, int64_t to)
{
	ts_value p = ts_string(h);
	ts_query q = {.prefix = &p, .nprefix = 1, .has_from = 1, .from = from, .has_to = 1,
	              .to = to, .to_inclusive = 1};
	uint64_t deleted = 0, version = 0;
	if (ts_delete(t, &q, &deleted, &version) != 0)
		fail_msg("ts_delete: %s", ts_errmsg(NULL));
	return deleted;
}

/* The rows of h as "sec:note" joined by ","; latest's as *latest. */
static void read_r(ts_table *t, const char *h, char *out, size_t len, char *latest, size_t llen)
{
	ts_value p = ts_string(h);
	ts_query q = {.prefix = &p, .nprefix = 1};
	ts_cursor *c;
	const ts_value *row;
	int n;
	size_t at = 0;
	out[0] = 0;
	assert_int_equal(ts_query_open(t, &q, &c), 0);
	while (ts_cursor_next(c, &row, &n) == 0 && row)
		at += (size_t)snprintf(out + at, len - at, "%s%lld:%.*s", at ? "," : "",
		                       (long long)((row[1].v.i - (NOW - HOUR)) / SEC),
		                       (int)row[2].v.s.len, (const char *)row[2].v.s.ptr);
	ts_cursor_close(c);
	latest[0] = 0;
	assert_int_equal(ts_latest_open(t, &p, 1, &c), 0);
	assert_int_equal(ts_cursor_next(c, &row, &n), 0);
	if (row)
		snprintf(latest, llen, "%lld:%.*s", (long long)((row[1].v.i - (NOW - HOUR)) / SEC),
		         (int)row[2].v.s.len, (const char *)row[2].v.s.ptr);
	ts_cursor_close(c);
}

#define EXPECT_R(t, h, rows, last) \
	do { \
		char got_[4096], lat_[256]; \
		read_r((t), (h), got_, sizeof got_, lat_, sizeof lat_); \
		if (strcmp(got_, (rows)) || strcmp(lat_, (last))) \
			fail_msg("host %s: got %s (latest %s), want %s (latest %s)", (h), got_, lat_, \
			         (rows), (last)); \
	} while (0)

/*
 * Where deletes meet replacements (docs/corrections.md sections 2-3): a
 * tombstone newer than a replacing row hides it and every row it
 * replaced, in any source; a replacement after a delete is visible;
 * latest answers the newest live row over replaced and deleted ones; a
 * delete counts a key once however many sources hold copies of it.
 */
static void deletes_and_replacements(void **state)
{
	ts_test_env *e = *state;
	ts_table *t = open_r(e);
	int64_t t0 = NOW - HOUR;
	put_r(t, "a", t0, 4, "v1");                  /* a 0..3 in a tablet */
	assert_int_equal(ts_flush(t, INT64_MAX), 0);
	put_r(t, "a", t0 + 2 * SEC, 2, "v2");        /* 2, 3 replaced: another tablet */
	assert_int_equal(ts_flush(t, INT64_MAX), 0);
	put_r(t, "a", t0 + 3 * SEC, 1, "v3");        /* 3 again: the tree */
	EXPECT_R(t, "a", "0:v1,1:v1,2:v2,3:v3", "3:v3");
	/* the newest row of a deleted: every copy of its key hidden, latest
	 * falls back to 2's replacing row; counted once */
	assert_int_equal(del_r(t, "a", t0 + 3 * SEC, t0 + 3 * SEC), 1);
	EXPECT_R(t, "a", "0:v1,1:v1,2:v2", "2:v2");
	/* 1..3: three keys, five rows stored in three sources */
	assert_int_equal(del_r(t, "a", t0 + SEC, t0 + 3 * SEC), 2);
	EXPECT_R(t, "a", "0:v1", "0:v1");
	/* a replacement after the delete is visible, the others stay hidden */
	put_r(t, "a", t0 + 2 * SEC, 1, "v4");
	EXPECT_R(t, "a", "0:v1,2:v4", "2:v4");
	/* the same across flushes, merges and a reopen */
	assert_int_equal(ts_flush(t, INT64_MAX), 0);
	EXPECT_R(t, "a", "0:v1,2:v4", "2:v4");
	int merged;
	assert_int_equal(ts_merge(t, &merged), 0);
	EXPECT_R(t, "a", "0:v1,2:v4", "2:v4");
	/* a delete of keys replaced in several tablets counts each once */
	put_r(t, "b", t0, 10, "w1");
	assert_int_equal(ts_flush(t, INT64_MAX), 0);
	put_r(t, "b", t0, 10, "w2");
	assert_int_equal(ts_flush(t, INT64_MAX), 0);
	put_r(t, "b", t0 + 5 * SEC, 5, "w3");
	EXPECT_R(t, "b", "0:w2,1:w2,2:w2,3:w2,4:w2,5:w3,6:w3,7:w3,8:w3,9:w3", "9:w3");
	assert_int_equal(del_r(t, "b", INT64_MIN, INT64_MAX), 10);
	EXPECT_R(t, "b", "", "");
	ts_table_close(t);
	ts_test_env_close(e);
	ts_test_env_open(e);
	assert_int_equal(ts_table_open(e->db, "r", &t), 0);
	EXPECT_R(t, "a", "0:v1,2:v4", "2:v4");
	EXPECT_R(t, "b", "", "");
	assert_int_equal(ts_check(e->db, NULL, NULL), 0);
	ts_table_close(t);
}

/*
 * Purge removes replaced rows too: a row replaced by a row of another
 * tablet (or of the same tree, whose log records held it) leaves no byte
 * in the files, the replacing row stays; a table without tombstones is
 * purged too.
 */
static void purge_removes_replaced_rows(void **state)
{
	ts_test_env *e = *state;
	ts_table *t = open_r(e);
	int64_t t0 = NOW - HOUR;
	put_r(t, "a", t0, 3, "oldMarkT1");
	assert_int_equal(ts_flush(t, INT64_MAX), 0);
	put_r(t, "a", t0, 3, "newKeepT2");           /* another tablet */
	put_r(t, "b", t0, 3, "oldMarkL1");
	put_r(t, "b", t0, 3, "newKeepL2");           /* the same tree */
	assert_int_equal(ts_flush(t, INT64_MAX), 0);
	put_r(t, "c", t0 + 100 * SEC, 3, "oldMarkX1"); /* a third tablet */
	assert_int_equal(ts_flush(t, INT64_MAX), 0);
	put_r(t, "c", t0 + 100 * SEC, 3, "newKeepX2");
	assert_true(grep_tree(e->dir, "oldMarkT1") > 0);
	assert_true(grep_tree(e->dir, "oldMarkL1") > 0);
	assert_true(grep_tree(e->dir, "oldMarkX1") > 0);
	uint64_t version;
	assert_int_equal(ts_purge(t, NULL, &version), 0);
	assert_int_equal(grep_tree(e->dir, "oldMarkT1"), 0);
	assert_int_equal(grep_tree(e->dir, "oldMarkL1"), 0);
	assert_int_equal(grep_tree(e->dir, "oldMarkX1"), 0);
	assert_true(grep_tree(e->dir, "newKeepT2") > 0);
	assert_true(grep_tree(e->dir, "newKeepL2") > 0);
	assert_true(grep_tree(e->dir, "newKeepX2") > 0);
	EXPECT_R(t, "a", "0:newKeepT2,1:newKeepT2,2:newKeepT2", "2:newKeepT2");
	EXPECT_R(t, "b", "0:newKeepL2,1:newKeepL2,2:newKeepL2", "2:newKeepL2");
	EXPECT_R(t, "c", "100:newKeepX2,101:newKeepX2,102:newKeepX2", "102:newKeepX2");
	assert_int_equal(ts_check(e->db, NULL, NULL), 0);
	/* across periods: a row of a 4-hour tablet replaced, a day later,
	 * by a row of the day tablet of its day (the group takes the day's
	 * period); a delete in force too */
	put_r(t, "d", NOW - 10 * HOUR, 3, "oldMarkP1");     /* 02:00, period 00-04 */
	put_r(t, "e", NOW - 10 * HOUR, 3, "goneMarkE1");
	assert_int_equal(ts_flush(t, INT64_MAX), 0);
	ts_test_env_set_now(e, NOW + 24 * HOUR);
	put_r(t, "d", NOW - 10 * HOUR, 3, "newKeepP2"); /* yesterday: the day tree */
	assert_int_equal(del_r(t, "e", INT64_MIN, INT64_MAX), 3);
	assert_int_equal(ts_flush(t, INT64_MAX), 0);
	assert_true(grep_tree(e->dir, "oldMarkP1") > 0);
	assert_int_equal(ts_purge(t, NULL, &version), 0);
	assert_int_equal(grep_tree(e->dir, "oldMarkP1"), 0);
	EXPECT_R(t, "d", "-32400:newKeepP2,-32399:newKeepP2,-32398:newKeepP2", "-32398:newKeepP2");
	EXPECT_R(t, "e", "", "");
	assert_int_equal(grep_tree(e->dir, "goneMarkE1"), 0);
	assert_true(grep_tree(e->dir, "newKeepP2") > 0);
	assert_int_equal(ts_check(e->db, NULL, NULL), 0);
	ts_table_close(t);
	ts_test_env_close(e);
	ts_test_env_open(e);
	assert_int_equal(ts_table_open(e->db, "r", &t), 0);
	EXPECT_R(t, "d", "-32400:newKeepP2,-32399:newKeepP2,-32398:newKeepP2", "-32398:newKeepP2");
	assert_int_equal(ts_check(e->db, NULL, NULL), 0);
	ts_table_close(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(delete_prefix_in_tree, setup, ts_test_env_teardown),
		cmocka_unit_test_setup_teardown(reinsert_in_same_batch_keeps_v, setup,
		                                ts_test_env_teardown),
		cmocka_unit_test_setup_teardown(delete_time_range_in_tablets, setup,
		                                ts_test_env_teardown),
		cmocka_unit_test_setup_teardown(tree_rows_newer_than_delete_survive, setup,
		                                ts_test_env_teardown),
		cmocka_unit_test_setup_teardown(merge_applies_tombstones_by_input, setup,
		                                ts_test_env_teardown),
		cmocka_unit_test_setup_teardown(delete_key_ranges, setup, ts_test_env_teardown),
		cmocka_unit_test_setup_teardown(snapshot_before_delete_sees_rows, setup,
		                                ts_test_env_teardown),
		cmocka_unit_test_setup_teardown(latest_falls_back, setup, ts_test_env_teardown),
		cmocka_unit_test_setup_teardown(aggregates_skip_covered_summaries, setup,
		                                ts_test_env_teardown),
		cmocka_unit_test_setup_teardown(readonly_handle_sees_deletes, setup,
		                                ts_test_env_teardown),
		cmocka_unit_test_setup_teardown(descriptor_refuses_older_builds, setup,
		                                ts_test_env_teardown),
		cmocka_unit_test_setup_teardown(delete_refuses_bad_ranges, setup, ts_test_env_teardown),
		cmocka_unit_test(delete_follows_sync_mode),
		cmocka_unit_test_setup_teardown(random_history, setup, ts_test_env_teardown),
		cmocka_unit_test_setup_teardown(flush_drops_spent_tombstones, setup,
		                                ts_test_env_teardown),
		cmocka_unit_test_setup_teardown(check_finds_bad_tombstones, setup, ts_test_env_teardown),
		cmocka_unit_test_setup_teardown(flush_moves_tombstones_alone, setup, ts_test_env_teardown),
		cmocka_unit_test_setup_teardown(purge_leaves_no_bytes, setup, ts_test_env_teardown),
		cmocka_unit_test_setup_teardown(deletes_and_replacements, setup, ts_test_env_teardown),
		cmocka_unit_test(tomb_index_selects_as_list),
		cmocka_unit_test_setup_teardown(hidden_runs_skipped, setup, ts_test_env_teardown),
		cmocka_unit_test_setup_teardown(snapshots_share_tombstone_view, setup,
		                                ts_test_env_teardown),
		cmocka_unit_test_setup_teardown(purge_removes_replaced_rows, setup,
		                                ts_test_env_teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
