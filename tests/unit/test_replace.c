/*
 * test_replace.c -- the duplicate policy replace (docs/corrections.md
 * section 2) and ts_insert_policy: the newest write of a key wins inside
 * one filling tree (older snapshots keep the old row), across a tree and
 * a tablet, across tablets before and after merges, across a roll-over
 * (late rows into the day tree beside yesterday's 4-hour tree), in
 * queries either way, latest and aggregates -- whose block summaries must
 * not be used over a block another source shadows -- after a reopen and
 * a process crash (recovery from the log) and through a read-only handle;
 * duplicate checks under reject/ignore afterwards; the DESCRIPTOR's
 * format 5, written only when a table needs it; ts_check throughout; and
 * random differential loops against in-memory models.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "buf.h"
#include "crc32c.h"
#include "descriptor.h"
#include "descriptor_format.h"
#include "maint.h"
#include "merge.h"
#include "support.h"

#define NOW INT64_C(1795262400000000000) /* 2026-11-21T12:00:00Z */
#define SEC INT64_C(1000000000)
#define HOUR (3600 * SEC)
#define DAY (24 * HOUR)

#define REJECT TS_ON_DUPLICATE_REJECT
#define IGNORE TS_ON_DUPLICATE_IGNORE
#define REPLACE TS_ON_DUPLICATE_REPLACE
#define TABLE TS_ON_DUPLICATE_TABLE

/* Merges and flushes happen when a test says so. */
static int setup(void **state)
{
	*state = ts_test_env_new_held(NOW);
	return 0;
}

/* ts_insert_policy of rows[0..n) under policy; *ignored (may be NULL). */
static int put_rows(ts_table *t, int policy, const test_row *rows, size_t n, size_t *ignored)
{
	ts_value *vals = ts_test_values_m(rows, n);
	size_t ign = 0;
	uint64_t version = 0;
	int rc = ts_insert_policy(t, 0, policy, vals, n, &ign, &version);
	if (ignored)
		*ignored = ign;
	free(vals);
	return rc;
}

/* One row under policy; must succeed. */
static void put(ts_test_env *e, int policy, const char *host, int64_t ts, int64_t v)
{
	test_row r = ts_test_row(host, ts, v);
	size_t ignored = 99;
	if (put_rows(e->t, policy, &r, 1, &ignored) != 0)
		fail_msg("insert %s@%" PRId64 ": %s", host, ts, ts_errmsg(NULL));
	assert_int_equal(ignored, 0);
}

static void read_value(const ts_value *v, test_row *r)
{
	memset(r, 0, sizeof *r);
	memcpy(r->host, v[0].v.s.ptr, v[0].v.s.len < 15 ? v[0].v.s.len : 15);
	r->ts = v[1].v.i;
	r->batch = v[2].v.i;
	r->v = v[3].v.i;
}

/* Every row of a query of the whole table (desc: descending), through
 * the public API; *out malloc'ed.  Returns the count. */
static long query_all(ts_table *t, int desc, test_row **out)
{
	ts_cursor *c;
	const ts_value *v;
	size_t n = 0, cap = 64;
	*out = malloc(cap * sizeof **out);
	assert_non_null(*out);
	ts_query q = {.desc = desc};
	assert_int_equal(ts_query_open(t, &q, &c), 0);
	int rc;
	while ((rc = ts_cursor_next(c, &v, NULL)) == 0 && v) {
		if (n == cap)
			assert_non_null(*out = realloc(*out, (cap *= 2) * sizeof **out));
		read_value(v, &(*out)[n++]);
	}
	assert_int_equal(rc, 0);
	ts_cursor_close(c);
	return (long)n;
}

/* A query of t, both ways, gives exactly want[0..n) (sorted by key). */
static void expect_rows(ts_table *t, const test_row *want, size_t n)
{
	for (int desc = 0; desc < 2; desc++) {
		test_row *got;
		long k = query_all(t, desc, &got);
		if (k != (long)n)
			fail_msg("%s query: %ld rows, want %zu", desc ? "desc" : "asc", k, n);
		for (size_t i = 0; i < n; i++) {
			const test_row *w = &want[desc ? n - 1 - i : i];
			if (strcmp(got[i].host, w->host) || got[i].ts != w->ts || got[i].v != w->v)
				fail_msg("%s query row %zu: %s@%" PRId64 "=%" PRId64 ", want %s@%" PRId64
				         "=%" PRId64, desc ? "desc" : "asc", i, got[i].host, got[i].ts,
				         got[i].v, w->host, w->ts, w->v);
		}
		free(got);
	}
}

/* latest of host: 1 and *r, or 0 when none. */
static int latest(ts_table *t, const char *host, test_row *r)
{
	ts_cursor *c;
	const ts_value *v;
	ts_value p = ts_string(host);
	assert_int_equal(ts_latest_open(t, &p, 1, &c), 0);
	assert_int_equal(ts_cursor_next(c, &v, NULL), 0);
	if (v)
		read_value(v, r);
	ts_cursor_close(c);
	return v != NULL;
}

/* sum(v) and count of host's rows in [from, to), one window. */
static void agg_host(ts_table *t, const char *host, int64_t from, int64_t to, int64_t *sum,
                     int64_t *count)
{
	ts_cursor *c;
	const ts_value *v;
	ts_value p = ts_string(host);
	ts_aggspec specs[2] = {{3, TS_AGG_SUM}, {3, TS_AGG_COUNT}};
	ts_aggregate a = {.prefix = &p, .nprefix = 1, .from = from, .to = to, .every = to - from,
	                  .group = 1, .specs = specs, .nspecs = 2};
	int n;
	*sum = *count = 0;
	assert_int_equal(ts_aggregate_open(t, &a, &c), 0);
	while (ts_cursor_next(c, &v, &n) == 0 && v) {
		assert_int_equal(n, 4);
		*sum += v[2].v.i;
		*count += v[3].v.i;
	}
	ts_cursor_close(c);
}

static void check_ok(ts_test_env *e, const char *when)
{
	if (ts_check(e->db, NULL, NULL) != 0)
		fail_msg("ts_check %s: %s", when, ts_errmsg(NULL));
}

/* ---- one tree ---- */

/* A second row of a key replaces the first in the tree: across batches
 * and within one batch (the later row wins); nothing is ignored, the row
 * count does not grow, rows_replaced counts them; a cursor opened before
 * the replacement keeps reading the old row (the versioned tree keeps its
 * old node). */
static void replace_in_one_tree(void **state)
{
	ts_test_env *e = *state;
	assert_int_equal(ts_test_desc_version(e), 1);
	assert_int_equal(ts_alter_on_duplicate(e->t, REPLACE), 0);
	assert_int_equal(ts_test_desc_version(e), TS_DESC_VERSION_CORRECTIONS);
	ts_schema *s;
	assert_int_equal(ts_table_schema(e->t, &s), 0);
	assert_int_equal(s->on_duplicate, REPLACE);
	ts_schema_free(s);
	put(e, TABLE, "a", NOW - 10 * SEC, 1);
	put(e, TABLE, "b", NOW - 10 * SEC, 1);
	/* a cursor on the snapshot before */
	ts_cursor *old;
	const ts_value *v;
	assert_int_equal(ts_query_open(e->t, &(ts_query){0}, &old), 0);
	put(e, TABLE, "a", NOW - 10 * SEC, 2);
	test_row batch[3] = {ts_test_row("c", NOW - 5 * SEC, 7), ts_test_row("c", NOW - 5 * SEC, 8),
	                     ts_test_row("b", NOW - 10 * SEC, 3)};
	size_t ignored = 99;
	assert_int_equal(put_rows(e->t, TABLE, batch, 3, &ignored), 0);
	assert_int_equal(ignored, 0);
	test_row want[3] = {ts_test_row("a", NOW - 10 * SEC, 2), ts_test_row("b", NOW - 10 * SEC, 3),
	                    ts_test_row("c", NOW - 5 * SEC, 8)};
	expect_rows(e->t, want, 3);
	/* the old snapshot: a=1, b=1, no c */
	test_row r;
	assert_int_equal(ts_cursor_next(old, &v, NULL), 0);
	read_value(v, &r);
	assert_string_equal(r.host, "a");
	assert_int_equal(r.v, 1);
	assert_int_equal(ts_cursor_next(old, &v, NULL), 0);
	read_value(v, &r);
	assert_string_equal(r.host, "b");
	assert_int_equal(r.v, 1);
	assert_int_equal(ts_cursor_next(old, &v, NULL), 0);
	assert_null(v);
	ts_cursor_close(old);
	assert_int_equal(ts_test_stat(e->t, "rows_replaced"), 3); /* a, c (in batch), b */
	assert_int_equal(ts_test_stat(e->t, "rows_ignored_duplicates"), 0);
	assert_int_equal(ts_test_stat(e->t, "filling_rows"), 3);
	assert_int_equal(latest(e->t, "a", &r), 1);
	assert_int_equal(r.v, 2);
	check_ok(e, "after replacing in a tree");
	/* the log replays the same */
	ts_test_env_reopen(e);
	expect_rows(e->t, want, 3);
	check_ok(e, "after reopen");
	assert_int_equal(ts_flush(e->t, INT64_MAX), 0);
	expect_rows(e->t, want, 3);
	assert_int_equal(ts_test_stat(e->t, "tablet_rows"), 3);
	check_ok(e, "after flush");
}

/* ---- tree, tablets, merges ---- */

/* A replaced row on disk is shadowed by the tree's, then by a newer
 * tablet's; a merge keeps the newest and drops the rest; a batch under
 * replace on a reject table marks it (format 5) once. */
static void replace_across_tree_tablets_and_merges(void **state)
{
	ts_test_env *e = *state;
	for (int i = 0; i < 20; i++) {
		put(e, TABLE, "a", NOW - 100 * SEC + i * SEC, i);
		put(e, TABLE, "b", NOW - 100 * SEC + i * SEC, 100 + i);
	}
	assert_int_equal(ts_flush(e->t, INT64_MAX), 0); /* tablet 1 */
	uint32_t before = ts_test_desc_version(e);
	assert_true(before == TS_DESC_VERSION_INTERVALS);
	/* a reject table refuses the key; ignore skips it, writing nothing */
	test_row dup = ts_test_row("a", NOW - 100 * SEC, 55);
	size_t ignored = 0;
	assert_int_equal(put_rows(e->t, TABLE, &dup, 1, &ignored), TS_EDUPKEY);
	assert_int_equal(put_rows(e->t, IGNORE, &dup, 1, &ignored), 0);
	assert_int_equal(ignored, 1);
	assert_int_equal(ts_test_desc_version(e), before);
	/* replace: over the tablet's row */
	put(e, REPLACE, "a", NOW - 100 * SEC, 1000);
	assert_int_equal(ts_test_desc_version(e), TS_DESC_VERSION_CORRECTIONS);
	uint64_t gen = (uint64_t)ts_test_stat(e->t, "descriptor_generation");
	put(e, REPLACE, "a", NOW - 99 * SEC, 1001);
	assert_int_equal(ts_test_stat(e->t, "descriptor_generation"), (int64_t)gen); /* once */
	assert_int_equal(ts_test_stat(e->t, "rows_replaced"), 0); /* on disk: not looked for */
	test_row want[40];
	for (int i = 0; i < 20; i++) {
		want[i] = ts_test_row("a", NOW - 100 * SEC + i * SEC, i);
		want[20 + i] = ts_test_row("b", NOW - 100 * SEC + i * SEC, 100 + i);
	}
	want[0].v = 1000;
	want[1].v = 1001;
	expect_rows(e->t, want, 40);
	check_ok(e, "tree over tablet");
	/* under reject again, the key is a key */
	assert_int_equal(put_rows(e->t, REJECT, &dup, 1, &ignored), TS_EDUPKEY);
	assert_int_equal(put_rows(e->t, IGNORE, &dup, 1, &ignored), 0);
	assert_int_equal(ignored, 1);
	assert_int_equal(ts_flush(e->t, INT64_MAX), 0); /* tablet 2 */
	expect_rows(e->t, want, 40);
	/* and a third, replacing tablet 2's row and tablet 1's */
	put(e, REPLACE, "a", NOW - 100 * SEC, 2000);
	put(e, REPLACE, "b", NOW - 81 * SEC, 2019);
	want[0].v = 2000;
	want[39].v = 2019;
	expect_rows(e->t, want, 40);
	assert_int_equal(ts_flush(e->t, INT64_MAX), 0); /* tablet 3 */
	assert_int_equal(ts_test_stat(e->t, "tablets"), 3);
	expect_rows(e->t, want, 40);
	check_ok(e, "three tablets");
	test_row r;
	assert_int_equal(latest(e->t, "b", &r), 1);
	assert_int_equal(r.ts, NOW - 81 * SEC);
	assert_int_equal(r.v, 2019);
	/* the rule merges tablets 2 (2 rows) and 3 (2 rows), which share
	 * a@-100: 3 rows out; then tablet 1 (40 rows) and that one (3 rows) do
	 * not pair */
	int merged = 0;
	assert_int_equal(ts_test_stat(e->t, "tablet_rows"), 44);
	assert_int_equal(ts_merge(e->t, &merged), 0);
	assert_int_equal(merged, 1);
	assert_int_equal(ts_test_stat(e->t, "tablets"), 2);
	assert_int_equal(ts_test_stat(e->t, "tablet_rows"), 43); /* the shadowed one dropped */
	expect_rows(e->t, want, 40);
	assert_int_equal(latest(e->t, "b", &r), 1);
	assert_int_equal(r.v, 2019);
	check_ok(e, "after merge");
	ts_test_check_tablets(e->t);
	/* the policy set to reject again keeps format 5 (the flag stays) */
	assert_int_equal(ts_alter_on_duplicate(e->t, REJECT), 0);
	assert_int_equal(ts_test_desc_version(e), TS_DESC_VERSION_CORRECTIONS);
	ts_test_env_reopen(e);
	expect_rows(e->t, want, 40);
}

/* Late rows across a roll-over: yesterday's row in yesterday's 4-hour
 * tree is replaced, after midnight, in yesterday's day tree (a newer
 * tree of the same key's time). */
static void replace_across_rollover(void **state)
{
	ts_test_env *e = *state;
	assert_int_equal(ts_alter_on_duplicate(e->t, REPLACE), 0);
	put(e, TABLE, "a", NOW - HOUR, 1);             /* 11:00, the 08-12 tree */
	put(e, TABLE, "a", NOW - HOUR + SEC, 2);
	ts_test_env_set_now(e, NOW + 14 * HOUR);       /* 02:00 the next day */
	put(e, TABLE, "a", NOW - HOUR, 10);            /* yesterday's day tree */
	put(e, TABLE, "b", NOW - HOUR, 5);
	assert_int_equal(ts_test_stat(e->t, "filling_tablets"), 2);
	test_row want[3] = {ts_test_row("a", NOW - HOUR, 10), ts_test_row("a", NOW - HOUR + SEC, 2),
	                    ts_test_row("b", NOW - HOUR, 5)};
	expect_rows(e->t, want, 3);
	test_row r;
	assert_int_equal(latest(e->t, "a", &r), 1);
	assert_int_equal(r.ts, NOW - HOUR + SEC);
	assert_int_equal(r.v, 2);
	put(e, TABLE, "a", NOW - HOUR + SEC, 20);
	want[1].v = 20;
	assert_int_equal(latest(e->t, "a", &r), 1);
	assert_int_equal(r.v, 20);
	expect_rows(e->t, want, 3);
	check_ok(e, "two trees");
	ts_test_env_reopen(e);
	expect_rows(e->t, want, 3);
	assert_int_equal(ts_flush(e->t, INT64_MAX), 0);
	expect_rows(e->t, want, 3);
	assert_int_equal(ts_merge(e->t, NULL), 0);
	expect_rows(e->t, want, 3);
	assert_int_equal(latest(e->t, "a", &r), 1);
	assert_int_equal(r.v, 20);
	check_ok(e, "after roll-over flush and merge");
}

/* latest visits the streams by the newest ts each may hold: the tree
 * (its newest row another host's) first, whose newest row of a is a
 * replacement at :32; then a tablet whose newest row of a is the older
 * version of that key (not better); then the tablet holding a at :37,
 * the answer.  (Found by random_against_model: a stream whose newest row
 * did not beat the best ended the search.) */
static void latest_past_a_shadowed_row(void **state)
{
	ts_test_env *e = *state;
	assert_int_equal(ts_alter_on_duplicate(e->t, REPLACE), 0);
	put(e, TABLE, "a", NOW - 100 * SEC + 10 * SEC, 1);
	put(e, TABLE, "a", NOW - 100 * SEC + 37 * SEC, 1);
	assert_int_equal(ts_flush(e->t, INT64_MAX), 0);
	put(e, TABLE, "a", NOW - 100 * SEC + 32 * SEC, 2);
	put(e, TABLE, "z", NOW - 100 * SEC + 39 * SEC, 2);
	assert_int_equal(ts_flush(e->t, INT64_MAX), 0);
	put(e, TABLE, "a", NOW - 100 * SEC + 32 * SEC, 3);
	put(e, TABLE, "z", NOW - 100 * SEC + 39 * SEC, 3);
	test_row r;
	assert_int_equal(latest(e->t, "a", &r), 1);
	assert_int_equal(r.ts, NOW - 100 * SEC + 37 * SEC);
	assert_int_equal(r.v, 1);
	assert_int_equal(latest(e->t, "z", &r), 1);
	assert_int_equal(r.v, 3);
	test_row want[4] = {ts_test_row("a", NOW - 90 * SEC, 1), ts_test_row("a", NOW - 68 * SEC, 3),
	                    ts_test_row("a", NOW - 63 * SEC, 1), ts_test_row("z", NOW - 61 * SEC, 3)};
	expect_rows(e->t, want, 4);
}

/* A process crash after replacing batches (the first of a reject table
 * marking it): recovery replays the log to the newest rows, over a
 * tablet too, and the mark is in the DESCRIPTOR. */
static void replace_crash_recovery(void **state)
{
	ts_test_env *e = *state;
	put(e, TABLE, "a", NOW - 10 * SEC, 1);
	put(e, TABLE, "b", NOW - 10 * SEC, 1);
	assert_int_equal(ts_flush(e->t, INT64_MAX), 0);
	ts_test_env_close(e);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		ts_test_env_open(e);
		test_row b1[2] = {ts_test_row("a", NOW - 10 * SEC, 2), ts_test_row("c", NOW - 5 * SEC, 2)};
		test_row b2[3] = {ts_test_row("c", NOW - 5 * SEC, 3), ts_test_row("c", NOW - 5 * SEC, 4),
		                  ts_test_row("b", NOW - 10 * SEC, 4)};
		size_t ignored;
		int ok = put_rows(e->t, REPLACE, b1, 2, &ignored) == 0 &&
		         put_rows(e->t, REPLACE, b2, 3, &ignored) == 0;
		_exit(ok ? 0 : 1); /* no close: the log is left as a crash leaves it */
	}
	ts_test_wait_exit0(pid);
	ts_test_env_open(e);
	assert_int_equal(ts_test_stat(e->t, "log_opened_clean"), 0);
	assert_int_equal(ts_test_desc_version(e), TS_DESC_VERSION_CORRECTIONS);
	test_row want[3] = {ts_test_row("a", NOW - 10 * SEC, 2), ts_test_row("b", NOW - 10 * SEC, 4),
	                    ts_test_row("c", NOW - 5 * SEC, 4)};
	expect_rows(e->t, want, 3);
	check_ok(e, "after the crash");
	assert_int_equal(ts_flush(e->t, INT64_MAX), 0);
	assert_int_equal(ts_merge(e->t, NULL), 0);
	expect_rows(e->t, want, 3);
}

/* ---- aggregates ---- */

/* A tablet block that would be answered by its summary (one host, one
 * window) while a newer tablet replaces one of its rows: the aggregate
 * reads and resolves it (the sum holds the new value only), from a tree
 * or a tablet, and after the merge.  A block that no other source can
 * share a key with is still summarised in a table that replaces. */
static void aggregate_does_not_summarise_shadowed_block(void **state)
{
	ts_test_env *e = *state;
	assert_int_equal(ts_alter_on_duplicate(e->t, REPLACE), 0);
	for (int i = 0; i < 10; i++) /* a's tablet, one block */
		put(e, TABLE, "a", NOW - 3 * HOUR + i * SEC, 1);
	assert_int_equal(ts_flush(e->t, INT64_MAX), 0);
	for (int i = 0; i < 10; i++) /* z's, the same time, other keys */
		put(e, TABLE, "z", NOW - 3 * HOUR + i * SEC, 1);
	assert_int_equal(ts_flush(e->t, INT64_MAX), 0);
	int64_t sum, count, from = NOW - DAY, to = NOW + HOUR;
	int64_t summarised = ts_test_stat(e->t, "aggregate_rows_summarised");
	agg_host(e->t, "a", from, to, &sum, &count);
	assert_int_equal(sum, 10);
	assert_int_equal(count, 10);
	assert_true(ts_test_stat(e->t, "aggregate_rows_summarised") > summarised); /* the summary */
	/* a newer tablet replaces one row of a's block */
	put(e, TABLE, "a", NOW - 3 * HOUR + 4 * SEC, 100);
	assert_int_equal(ts_flush(e->t, INT64_MAX), 0);
	agg_host(e->t, "a", from, to, &sum, &count);
	assert_int_equal(sum, 109);
	assert_int_equal(count, 10);
	/* the same from a tree over the tablet */
	put(e, TABLE, "a", NOW - 3 * HOUR + 5 * SEC, 1000);
	agg_host(e->t, "a", from, to, &sum, &count);
	assert_int_equal(sum, 1108);
	assert_int_equal(count, 10);
	assert_int_equal(ts_flush(e->t, INT64_MAX), 0);
	int merged = 0;
	assert_int_equal(ts_merge(e->t, &merged), 0);
	assert_int_equal(ts_test_stat(e->t, "tablets"), 1);
	agg_host(e->t, "a", from, to, &sum, &count);
	assert_int_equal(sum, 1108);
	assert_int_equal(count, 10);
	check_ok(e, "aggregates");
}

/* The guard is precise where it is cheap to be: b's block stays
 * summarised beside a tablet of a and c whose key span holds b (its Bloom
 * filter rules b out) and beside a tree replacing rows of a and c (an
 * AVL seek finds none of b's span), until a row of b is replaced. */
static void aggregate_guard_spares_unshadowed_blocks(void **state)
{
	ts_test_env *e = *state;
	int64_t sum, count, from = NOW - DAY, to = NOW + HOUR, before;
	assert_int_equal(ts_alter_on_duplicate(e->t, REPLACE), 0);
	for (int i = 0; i < 10; i++)
		put(e, TABLE, "b", NOW - 3 * HOUR + i * SEC, 1);
	assert_int_equal(ts_flush(e->t, INT64_MAX), 0);
	for (int i = 0; i < 10; i++) {
		put(e, TABLE, "a", NOW - 3 * HOUR + i * SEC, 1);
		put(e, TABLE, "c", NOW - 3 * HOUR + i * SEC, 1);
	}
	assert_int_equal(ts_flush(e->t, INT64_MAX), 0);
	before = ts_test_stat(e->t, "aggregate_rows_summarised");
	agg_host(e->t, "b", from, to, &sum, &count);
	assert_int_equal(sum, 10);
	assert_int_equal(ts_test_stat(e->t, "aggregate_rows_summarised"), before + 10);
	put(e, TABLE, "a", NOW - 3 * HOUR + 2 * SEC, 5);
	put(e, TABLE, "c", NOW - 3 * HOUR + 2 * SEC, 5);
	before = ts_test_stat(e->t, "aggregate_rows_summarised");
	agg_host(e->t, "b", from, to, &sum, &count);
	assert_int_equal(sum, 10);
	assert_int_equal(ts_test_stat(e->t, "aggregate_rows_summarised"), before + 10);
	agg_host(e->t, "c", from, to, &sum, &count);
	assert_int_equal(sum, 14);
	assert_int_equal(count, 10);
	put(e, TABLE, "b", NOW - 3 * HOUR + 2 * SEC, 5);
	before = ts_test_stat(e->t, "aggregate_rows_summarised");
	agg_host(e->t, "b", from, to, &sum, &count);
	assert_int_equal(sum, 14);
	assert_int_equal(count, 10);
	assert_int_equal(ts_test_stat(e->t, "aggregate_rows_summarised"), before);
	check_ok(e, "guard");
}

/* ---- handles and formats ---- */

/* A read-only handle of the database sees what the writer sees: shadowed
 * rows hidden, in a tree and on disk. */
static void read_only_handle_sees_the_same(void **state)
{
	ts_test_env *e = *state;
	put(e, TABLE, "a", NOW - 10 * SEC, 1);
	put(e, TABLE, "a", NOW - 9 * SEC, 2);
	assert_int_equal(ts_flush(e->t, INT64_MAX), 0);
	put(e, REPLACE, "a", NOW - 10 * SEC, 3);
	put(e, REPLACE, "a", NOW - 10 * SEC, 4);
	test_row want[2] = {ts_test_row("a", NOW - 10 * SEC, 4), ts_test_row("a", NOW - 9 * SEC, 2)};
	ts_options o;
	ts_options_init(&o);
	o.flags = TS_OPEN_READONLY;
	ts_db *ro;
	ts_table *rt;
	assert_int_equal(ts_open(e->dir, &o, &ro), 0);
	assert_int_equal(ts_table_open(ro, "m", &rt), 0);
	expect_rows(rt, want, 2);
	expect_rows(e->t, want, 2);
	put(e, REPLACE, "a", NOW - 9 * SEC, 5); /* seen by the reader's next snapshot */
	want[1].v = 5;
	expect_rows(rt, want, 2);
	test_row r;
	assert_int_equal(latest(rt, "a", &r), 1);
	assert_int_equal(r.v, 5);
	size_t ignored;
	assert_int_equal(put_rows(rt, REPLACE, want, 1, &ignored), TS_EREADONLY);
	ts_table_close(rt);
	ts_close(ro);
}

/* ts_insert_policy's arguments: an unknown policy is TS_EINVAL; TABLE is
 * the table's own; ignore and reject per batch leave the format alone. */
static void insert_policy_arguments(void **state)
{
	ts_test_env *e = *state;
	test_row r = ts_test_row("a", NOW, 1);
	size_t ignored = 7;
	assert_int_equal(put_rows(e->t, 3, &r, 1, &ignored), TS_EINVAL);
	assert_int_equal(ignored, 0);
	assert_int_equal(put_rows(e->t, -2, &r, 1, &ignored), TS_EINVAL);
	assert_int_equal(put_rows(e->t, TABLE, &r, 1, &ignored), 0);
	assert_int_equal(put_rows(e->t, TABLE, &r, 1, &ignored), TS_EDUPKEY);
	assert_int_equal(put_rows(e->t, IGNORE, &r, 1, &ignored), 0);
	assert_int_equal(ignored, 1);
	assert_int_equal(ts_test_desc_version(e), 1);
	r.v = 2;
	assert_int_equal(put_rows(e->t, REPLACE, &r, 1, &ignored), 0);
	assert_int_equal(ignored, 0);
	assert_int_equal(ts_test_stat(e->t, "rows_replaced"), 1);
	assert_int_equal(ts_test_desc_version(e), TS_DESC_VERSION_CORRECTIONS);
	/* the table's policy is still reject */
	ts_schema *s;
	assert_int_equal(ts_table_schema(e->t, &s), 0);
	assert_int_equal(s->on_duplicate, REJECT);
	ts_schema_free(s);
	assert_int_equal(put_rows(e->t, TABLE, &r, 1, &ignored), TS_EDUPKEY);
	/* an empty batch marks nothing */
	assert_int_equal(put_rows(e->t, REPLACE, NULL, 0, &ignored), 0);
	/* create with replace */
	assert_int_equal(ts_create_keyed_v2(e->db, "r", (ts_column[]){{"ts", TS_TIMESTAMP, {0}}},
	                                    1, (const char *[]){"ts"}, 1, 0, REPLACE), 0);
	ts_table *t2;
	assert_int_equal(ts_table_open(e->db, "r", &t2), 0);
	assert_int_equal(ts_table_schema(t2, &s), 0);
	assert_int_equal(s->on_duplicate, REPLACE);
	ts_schema_free(s);
	ts_table_close(t2);
	check_ok(e, "policies");
}

/* Rewrite dir/DESCRIPTOR: encode d, then let fix patch the body before
 * it is sealed again (checksums). */
static void write_patched(const char *dir, const ts__descriptor *d,
                          void (*fix)(unsigned char *body, size_t len))
{
	ts_buf b;
	char path[4300];
	ts__buf_init(&b);
	assert_int_equal(ts__descriptor_encode(d, &b), 0);
	unsigned char *body = b.data + TS_DESC_HEADER_SIZE;
	size_t len = b.len - TS_DESC_HEADER_SIZE;
	fix(body, len);
	ts__store_u32(b.data + TS_DESC_OFF_BODY_CRC, ts__crc32c(0, body, len));
	ts__store_u32(b.data + TS_DESC_OFF_HEADER_CRC, ts__crc32c(0, b.data, TS_DESC_OFF_HEADER_CRC));
	snprintf(path, sizeof path, "%s/" TS_DESC_FILE, dir);
	FILE *f = fopen(path, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(b.data, 1, b.len, f), b.len);
	fclose(f);
	ts__buf_free(&b);
}

struct problems {
	int n;
	char what[512], file[256]; /* the first */
};

static void on_problem(void *arg, const char *table, const char *file, const char *what)
{
	struct problems *p = arg;
	(void)table;
	if (p->n++ == 0) {
		snprintf(p->what, sizeof p->what, "%s", what);
		snprintf(p->file, sizeof p->file, "%s", file);
	}
}

static void one_tombstone(unsigned char *body, size_t len)
{
	ts__store_u32(body + len - 4, 1);
}

static void no_flag(unsigned char *body, size_t len)
{
	body[len - 5] = 0;
}

static void unknown_flag(unsigned char *body, size_t len)
{
	body[len - 5] |= 0x08;
}

/* Format 5 as read: a flag this build does not know is TS_EVERSION; a
 * tombstone count the body has no records for is damage; the policy replace without the flag is damage; a table
 * written as format 4 (intervals, no replacement) stays 4 when read and
 * flushed; older readers (TS_DESC_VERSION_INTERVALS) refuse 5 -- shown
 * by the header check's bounds, documented in descriptor-format.md;
 * ts_check reports such damage. */
static void descriptor_v5(void **state)
{
	ts_test_env *e = *state;
	char dir[4200];
	ts__descriptor *d;
	put(e, TABLE, "a", NOW - 10 * SEC, 1);
	assert_int_equal(ts_flush(e->t, INT64_MAX), 0);
	assert_int_equal(ts_test_desc_version(e), TS_DESC_VERSION_INTERVALS);
	test_row want[1] = {ts_test_row("a", NOW - 10 * SEC, 1)};
	expect_rows(e->t, want, 1);
	put(e, TABLE, "a", NOW - 9 * SEC, 2);
	assert_int_equal(ts_flush(e->t, INT64_MAX), 0);
	assert_int_equal(ts_test_desc_version(e), TS_DESC_VERSION_INTERVALS); /* 4 stays 4 */
	assert_int_equal(ts_alter_on_duplicate(e->t, REPLACE), 0);
	ts_test_env_close(e);
	snprintf(dir, sizeof dir, "%s/m", e->dir);
	assert_int_equal(ts__descriptor_read(dir, &d), 0);
	assert_int_equal(d->flags, TS_DESC_REPLACED);
	assert_int_equal(d->on_duplicate, REPLACE);
	write_patched(dir, d, one_tombstone);
	ts__descriptor *x = NULL;
	assert_int_equal(ts__descriptor_read(dir, &x), TS_ECORRUPT);
	assert_non_null(strstr(ts_errmsg(NULL), "bad tombstone count 1"));
	write_patched(dir, d, unknown_flag);
	assert_int_equal(ts__descriptor_read(dir, &x), TS_EVERSION);
	assert_non_null(strstr(ts_errmsg(NULL), "unknown descriptor flags 0x09"));
	write_patched(dir, d, no_flag);
	assert_int_equal(ts__descriptor_read(dir, &x), TS_ECORRUPT);
	assert_non_null(strstr(ts_errmsg(NULL), "not marked"));
	/* the policy 2 in a format 4 file is damage */
	d->flags = 0;
	ts_buf b;
	ts__buf_init(&b);
	assert_int_equal(ts__descriptor_encode(d, &b), 0);
	assert_int_equal(ts__load_u32(b.data + TS_DESC_OFF_VERSION), TS_DESC_VERSION_INTERVALS);
	assert_int_equal(ts__descriptor_decode(b.data, b.len, &x), TS_ECORRUPT);
	assert_non_null(strstr(ts_errmsg(NULL), "unknown duplicate policy 2"));
	ts__buf_free(&b);
	d->flags = TS_DESC_REPLACED;
	assert_int_equal(ts__descriptor_write(dir, d), 0);
	ts_test_env_open(e);
	check_ok(e, "format 5");
	/* ts_check reports the damage (the file alone is read) */
	write_patched(dir, d, no_flag);
	struct problems p = {0};
	ts_check_opts o = {.problem = on_problem, .arg = &p};
	assert_int_equal(ts_check(e->db, NULL, &o), TS_ECORRUPT);
	assert_int_equal(p.n, 1);
	assert_string_equal(p.file, "m/DESCRIPTOR");
	assert_non_null(strstr(p.what, "the policy is replace but the table is not marked"));
	assert_int_equal(ts__descriptor_write(dir, d), 0);
	ts__descriptor_free(d, 1);
	check_ok(e, "format 5 again");
}

/* ---- differential ---- */

/* The model: rows sorted by key, one per key. */
struct model {
	test_row *rows;
	size_t n, cap;
};

static test_row *model_find(struct model *m, const test_row *r)
{
	return bsearch(r, m->rows, m->n, sizeof *r, ts_test_row_cmp);
}

static void model_put(struct model *m, const test_row *r)
{
	test_row *have = model_find(m, r);
	if (have) {
		*have = *r;
		return;
	}
	if (m->n == m->cap)
		assert_non_null(m->rows = realloc(m->rows, (m->cap = m->cap ? 2 * m->cap : 256) *
		                                               sizeof *m->rows));
	m->rows[m->n++] = *r;
	qsort(m->rows, m->n, sizeof *m->rows, ts_test_row_cmp);
}

static uint64_t rng = 777777; /* a sequence that caught latest's bug */

/* A query of host's rows with ts in [from, to), direction desc, read in
 * pages of `page` rows resumed after the last key, equals the model's. */
static void expect_range(ts_table *t, const struct model *m, const char *host, int64_t from,
                         int64_t to, int desc, uint64_t page, int step)
{
	test_row want[64 * 4];
	size_t n = 0, got = 0;
	for (size_t i = 0; i < m->n; i++)
		if (strcmp(m->rows[i].host, host) == 0 && m->rows[i].ts >= from && m->rows[i].ts < to) {
			assert_true(n < sizeof want / sizeof want[0]);
			want[n++] = m->rows[i];
		}
	ts_value prefix = ts_string(host), after[2];
	int resumed = 0;
	for (;;) {
		ts_query q = {.prefix = &prefix, .nprefix = 1, .from = from, .to = to, .has_from = 1,
		              .has_to = 1, .desc = desc, .limit = page, .after = resumed ? after : NULL,
		              .nafter = resumed ? 2 : 0};
		ts_cursor *c;
		const ts_value *v;
		char hbuf[16];
		uint64_t in_page = 0;
		assert_int_equal(ts_query_open(t, &q, &c), 0);
		while (ts_cursor_next(c, &v, NULL) == 0 && v) {
			test_row r;
			read_value(v, &r);
			const test_row *w = &want[desc ? n - 1 - got : got];
			if (got >= n || strcmp(r.host, w->host) || r.ts != w->ts || r.v != w->v)
				fail_msg("step %d: range %s [%" PRId64 ", %" PRId64 ") %s page %" PRIu64
				         ": row %zu is %s@%" PRId64 "=%" PRId64, step, host, from, to,
				         desc ? "desc" : "asc", page, got, r.host, r.ts, r.v);
			got++;
			in_page++;
		}
		int more = ts_cursor_more(c);
		if (more) {
			const ts_value *k;
			int nk;
			assert_int_equal(ts_cursor_resume(c, &k, &nk), 0);
			assert_int_equal(nk, 2);
			snprintf(hbuf, sizeof hbuf, "%.*s", (int)k[0].v.s.len, (const char *)k[0].v.s.ptr);
			after[1] = k[1];
		}
		ts_cursor_close(c);
		if (!more)
			break;
		after[0] = ts_string(host); /* the key's host is the prefix's */
		assert_string_equal(hbuf, host);
		resumed = 1;
	}
	if (got != n)
		fail_msg("step %d: range %s: %zu rows, want %zu", step, host, got, n);
}

/* Random batches under random policies (replace most), flushes, merges,
 * the clock moving on (roll-overs), reopens; after every step the table
 * reads as the model both ways, as do range queries of a host read in
 * pages (limit, resume), latest and aggregates of each host agree, and
 * now and then ts_check passes. */
static void random_against_model(void **state)
{
	ts_test_env *e = *state;
	struct model m = {0};
	const char *hosts[4] = {"h0", "h1", "h2", "h3"};
	int64_t base = NOW - 6 * HOUR;
	for (int step = 0; step < 800; step++) {
		uint64_t r = ts_test_xorshift(&rng) % 100;
		if (r < 60) {
			int policy = (int)(ts_test_xorshift(&rng) % 4); /* reject, ignore, replace x2 */
			policy = policy == 3 ? (int)REPLACE : policy;
			test_row batch[8];
			size_t n = 1 + ts_test_xorshift(&rng) % 8, ignored = 0;
			for (size_t i = 0; i < n; i++)
				batch[i] = ts_test_row(hosts[ts_test_xorshift(&rng) % 4],
				               base + (int64_t)(ts_test_xorshift(&rng) % 40) * SEC,
				               (int64_t)step * 100 + (int64_t)i);
			int rc = put_rows(e->t, policy, batch, n, &ignored);
			/* the model's answer */
			struct model copy = {0};
			int dup = 0;
			size_t skipped = 0;
			copy.rows = malloc((m.n + n + 1) * sizeof *copy.rows);
			assert_non_null(copy.rows);
			if (m.n)
				memcpy(copy.rows, m.rows, m.n * sizeof *m.rows);
			copy.n = m.n;
			copy.cap = m.n + n + 1;
			for (size_t i = 0; i < n; i++) {
				if (policy != REPLACE && model_find(&copy, &batch[i])) {
					dup = 1;
					skipped++;
					continue;
				}
				model_put(&copy, &batch[i]);
			}
			if (policy == REJECT && dup) {
				assert_int_equal(rc, TS_EDUPKEY);
				free(copy.rows);
			} else {
				if (rc != 0)
					fail_msg("step %d: insert: %s", step, ts_errmsg(NULL));
				assert_int_equal(ignored, policy == IGNORE ? skipped : 0);
				free(m.rows);
				m = copy;
			}
		} else if (r < 72) {
			assert_int_equal(ts_flush(e->t, INT64_MAX), 0);
		} else if (r < 80) {
			assert_int_equal(ts_merge(e->t, NULL), 0);
		} else if (r < 90) {
			ts_test_env_set_now(e, e->now + (int64_t)(ts_test_xorshift(&rng) % (uint64_t)(3 * HOUR)));
		} else {
			ts_test_env_reopen(e);
		}
		expect_rows(e->t, m.rows, m.n);
		for (int h = 0; h < 4; h++) {
			test_row got, want;
			memset(&want, 0, sizeof want);
			int have = 0;
			for (size_t i = 0; i < m.n; i++)
				if (strcmp(m.rows[i].host, hosts[h]) == 0)
					want = m.rows[i], have = 1; /* sorted: the last is the newest */
			assert_int_equal(latest(e->t, hosts[h], &got), have);
			if (have && (got.ts != want.ts || got.v != want.v))
				fail_msg("step %d: latest %s: %" PRId64 "=%" PRId64 ", want %" PRId64 "=%" PRId64,
				         step, hosts[h], got.ts, got.v, want.ts, want.v);
			int64_t sum = 0, count = 0, wsum = 0, wcount = 0;
			for (size_t i = 0; i < m.n; i++)
				if (strcmp(m.rows[i].host, hosts[h]) == 0)
					wsum += m.rows[i].v, wcount++;
			agg_host(e->t, hosts[h], base - DAY, base + DAY, &sum, &count);
			if (sum != wsum || count != wcount)
				fail_msg("step %d: aggregate %s: sum %" PRId64 " count %" PRId64 ", want %"
				         PRId64 " %" PRId64, step, hosts[h], sum, count, wsum, wcount);
		}
		for (int k = 0; k < 2; k++) {
			int64_t a = base + (int64_t)(ts_test_xorshift(&rng) % 41) * SEC;
			int64_t b = a + (int64_t)(1 + ts_test_xorshift(&rng) % 41) * SEC;
			expect_range(e->t, &m, hosts[ts_test_xorshift(&rng) % 4], a, b,
			             (int)(ts_test_xorshift(&rng) % 2), 1 + ts_test_xorshift(&rng) % 4,
			             step);
		}
		if (step % 20 == 19)
			check_ok(e, "random step");
	}
	check_ok(e, "random end");
	free(m.rows);
}

/* A dense model: slot (host, second) of a 48-hour span. */
#define AGG_HOSTS 4
#define AGG_SECONDS (48 * 3600)

struct dense {
	int64_t v[AGG_HOSTS][AGG_SECONDS];
	unsigned char has[AGG_HOSTS][AGG_SECONDS];
};

/* Aggregates per host and hour against the model, through blocks that
 * are summarised: batches of one host and one hour big enough to fill
 * blocks of their own (a block ends at a new series past 4 KiB), under
 * replace mostly, with flushes and merges; sums and counts per (host,
 * hour), the full query and latest must match after every step, and the
 * summaries must have been used (else the test proves nothing). */
static void random_aggregates_against_model(void **state)
{
	ts_test_env *e = *state;
	static struct dense d;
	memset(&d, 0, sizeof d);
	int64_t base = NOW - 2 * DAY; /* a day boundary: 12:00 two days ago */
	uint64_t seed = 0x9E3779B97F4A7C15u;
	int64_t summarised0 = ts_test_stat(e->t, "aggregate_rows_summarised");
	assert_int_equal(ts_alter_on_duplicate(e->t, REPLACE), 0);
	for (int step = 0; step < 120; step++) {
		uint64_t r = ts_test_xorshift(&seed) % 100;
		if (r < 70) {
			int h = (int)(ts_test_xorshift(&seed) % AGG_HOSTS);
			int hour = (int)(ts_test_xorshift(&seed) % 48);
			int n = 150 + (int)(ts_test_xorshift(&seed) % 150);
			int start = (int)(ts_test_xorshift(&seed) % (3600 - (uint64_t)n));
			uint64_t pr = ts_test_xorshift(&seed) % 10;
			int policy = pr < 8 ? (int)REPLACE : pr < 9 ? (int)IGNORE : (int)REJECT;
			test_row *batch = calloc((size_t)n, sizeof *batch);
			char host[4];
			snprintf(host, sizeof host, "h%d", h);
			int dup = 0;
			for (int i = 0; i < n; i++) {
				int sec = hour * 3600 + start + i;
				batch[i] = ts_test_row(host, base + sec * SEC, step * 1000 + i);
				dup |= d.has[h][sec];
			}
			size_t ignored = 0;
			int rc = put_rows(e->t, policy, batch, (size_t)n, &ignored);
			if (policy == REJECT && dup) {
				assert_int_equal(rc, TS_EDUPKEY);
			} else {
				assert_int_equal(rc, 0);
				size_t skipped = 0;
				for (int i = 0; i < n; i++) {
					int sec = hour * 3600 + start + i;
					if (policy == IGNORE && d.has[h][sec]) {
						skipped++;
						continue;
					}
					d.v[h][sec] = batch[i].v;
					d.has[h][sec] = 1;
				}
				assert_int_equal(ignored, skipped);
			}
			free(batch);
		} else if (r < 85) {
			assert_int_equal(ts_flush(e->t, INT64_MAX), 0);
		} else if (r < 95) {
			assert_int_equal(ts_merge(e->t, NULL), 0);
		} else {
			ts_test_env_reopen(e);
		}
		for (int h = 0; h < AGG_HOSTS; h++) {
			char host[4];
			snprintf(host, sizeof host, "h%d", h);
			ts_cursor *c;
			const ts_value *v;
			ts_value p = ts_string(host);
			ts_aggspec specs[2] = {{3, TS_AGG_SUM}, {3, TS_AGG_COUNT}};
			ts_aggregate a = {.prefix = &p, .nprefix = 1, .from = base,
			                  .to = base + 48 * HOUR, .every = HOUR, .group = 1,
			                  .specs = specs, .nspecs = 2};
			int64_t want_sum[48] = {0}, want_count[48] = {0};
			for (int sec = 0; sec < AGG_SECONDS; sec++)
				if (d.has[h][sec]) {
					want_sum[sec / 3600] += d.v[h][sec];
					want_count[sec / 3600]++;
				}
			int next = 0;
			assert_int_equal(ts_aggregate_open(e->t, &a, &c), 0);
			while (ts_cursor_next(c, &v, NULL) == 0 && v) {
				int hour = (int)((v[1].v.i - base) / HOUR);
				for (; next < hour; next++)
					assert_int_equal(want_count[next], 0);
				if (v[2].v.i != want_sum[hour] || v[3].v.i != want_count[hour])
					fail_msg("step %d: %s hour %d: sum %" PRId64 " count %" PRId64
					         ", want %" PRId64 " %" PRId64, step, host, hour, v[2].v.i,
					         v[3].v.i, want_sum[hour], want_count[hour]);
				next = hour + 1;
			}
			for (; next < 48; next++)
				assert_int_equal(want_count[next], 0);
			ts_cursor_close(c);
			test_row got;
			int last = -1;
			for (int sec = 0; sec < AGG_SECONDS; sec++)
				if (d.has[h][sec])
					last = sec;
			assert_int_equal(latest(e->t, host, &got), last >= 0);
			if (last >= 0) {
				assert_int_equal(got.ts, base + last * SEC);
				assert_int_equal(got.v, d.v[h][last]);
			}
		}
		if (step % 10 == 9) { /* the full query, both ways */
			size_t n = 0;
			test_row *want = malloc(AGG_HOSTS * (size_t)AGG_SECONDS / 4 * sizeof *want);
			assert_non_null(want);
			for (int h = 0; h < AGG_HOSTS; h++)
				for (int sec = 0; sec < AGG_SECONDS; sec++)
					if (d.has[h][sec]) {
						char host[4];
						snprintf(host, sizeof host, "h%d", h);
						assert_true(n < AGG_HOSTS * (size_t)AGG_SECONDS / 4);
						want[n++] = ts_test_row(host, base + sec * SEC, d.v[h][sec]);
					}
			expect_rows(e->t, want, n);
			free(want);
			check_ok(e, "random aggregates");
		}
	}
	assert_true(ts_test_stat(e->t, "aggregate_rows_summarised") > summarised0);
	print_message("replace: %" PRId64 " rows summarised\n",
	              ts_test_stat(e->t, "aggregate_rows_summarised") - summarised0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(replace_in_one_tree, setup, ts_test_env_teardown),
		cmocka_unit_test_setup_teardown(replace_across_tree_tablets_and_merges, setup,
		                                ts_test_env_teardown),
		cmocka_unit_test_setup_teardown(replace_across_rollover, setup, ts_test_env_teardown),
		cmocka_unit_test_setup_teardown(latest_past_a_shadowed_row, setup, ts_test_env_teardown),
		cmocka_unit_test_setup_teardown(replace_crash_recovery, setup, ts_test_env_teardown),
		cmocka_unit_test_setup_teardown(aggregate_does_not_summarise_shadowed_block, setup,
		                                ts_test_env_teardown),
		cmocka_unit_test_setup_teardown(aggregate_guard_spares_unshadowed_blocks, setup,
		                                ts_test_env_teardown),
		cmocka_unit_test_setup_teardown(read_only_handle_sees_the_same, setup,
		                                ts_test_env_teardown),
		cmocka_unit_test_setup_teardown(insert_policy_arguments, setup, ts_test_env_teardown),
		cmocka_unit_test_setup_teardown(descriptor_v5, setup, ts_test_env_teardown),
		cmocka_unit_test_setup_teardown(random_against_model, setup, ts_test_env_teardown),
		cmocka_unit_test_setup_teardown(random_aggregates_against_model, setup,
		                                ts_test_env_teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
