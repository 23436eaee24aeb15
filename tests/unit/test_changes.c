/*
 * test_changes.c -- ts_changes_open (docs/corrections.md section 4): the
 * (prefix, window) pairs commits in (since, until] touched, with exact
 * expectations over filling trees, flushed tablets, merged tablets (only
 * the blocks that took new rows: the block's hi of tablet format 3),
 * reopens and roll-overs; tablets of format 2 (written before blocks
 * carried their hi) and tablets without versions still answered;
 * deletes (their tombstones while in force) and purge (which keeps the
 * blocks' hi); the
 * "never misses" property over random histories against a model; and
 * the time of the answer over a day of 1000 hosts (printed).
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cmocka.h>

#include "buf.h"
#include "descriptor.h"
#include "maint.h"
#include "merge.h"
#include "snapshot.h"
#include "support.h"
#include "tablet.h"
#include "tablet_format.h"

#define NOW INT64_C(1795262400000000000) /* 2026-11-21T12:00:00Z */
#define SEC INT64_C(1000000000)
#define MIN (60 * SEC)
#define HOUR (3600 * SEC)
#define DAY0 (NOW - 12 * HOUR)           /* 2026-11-21T00:00:00Z */

/* Merges and flushes happen when a test says so. */
static int setup(void **state)
{
	*state = ts_test_env_new_held(NOW);
	return 0;
}

/* Insert n rows of host h at ts from, from + step, ... into e's table
 * and the model (may be NULL); returns the version the insert answered. */
static uint64_t insert_step(ts_test_env *e, ts_test_model *m, const char *h, int n, int64_t from,
                            int64_t step)
{
	ts_value *vals = calloc((size_t)n * 4, sizeof *vals);
	test_row *rows = calloc((size_t)n, sizeof *rows);
	uint64_t version = 0;
	size_t ignored = 1;
	assert_non_null(vals);
	assert_non_null(rows);
	for (int i = 0; i < n; i++) {
		snprintf(rows[i].host, sizeof rows[i].host, "%s", h);
		rows[i].ts = from + i * step;
		rows[i].v = i;
		vals[4 * i] = ts_string(rows[i].host);
		vals[4 * i + 1] = ts_timestamp(rows[i].ts);
		vals[4 * i + 2] = ts_int64(0);
		vals[4 * i + 3] = ts_int64(i);
	}
	if (ts_insert_versioned(e->t, 0, vals, (size_t)n, &ignored, &version) != 0)
		fail_msg("insert: %s", ts_errmsg(NULL));
	if (m)
		ts_test_model_add(m, rows, (size_t)n);
	free(vals);
	free(rows);
	return version;
}

static uint64_t insert(ts_test_env *e, const char *h, int n, int64_t from)
{
	return insert_step(e, NULL, h, n, from, SEC);
}

/* A time as the expectations spell it: HH:MM:SS of 2026-11-21, with
 * "+" when a nanosecond past the second (an exclusive end after a row),
 * and "d-1 " / "d+1 " before it on another day. */
static void put_time(ts_buf *b, int64_t ts)
{
	char s[48];
	int64_t rel = ts - DAY0, sec = rel / SEC, ns = rel % SEC;
	if (ns < 0) {
		ns += SEC;
		sec--;
	}
	int64_t day = sec >= 0 ? sec / 86400 : -((-sec + 86399) / 86400), in = sec - day * 86400;
	int k = 0;
	if (day)
		k = snprintf(s, sizeof s, "d%+lld ", (long long)day);
	snprintf(s + k, sizeof s - (size_t)k, "%02d:%02d:%02d%s", (int)(in / 3600),
	         (int)(in / 60 % 60), (int)(in % 60), ns ? "+" : "");
	ts__put(b, s, strlen(s));
}

/* The answer of ts_changes_open as text: one "prefix from to" per row
 * (prefix values joined by "/", "*" at depth 0 and for the wildcard's
 * TS_NONE values), rows joined by "; ".  Checks the order (prefix, then
 * from) and, with a resolution, that windows are aligned and resolution
 * wide.  Returns a malloc'ed string. */
static char *changes(ts_table *t, uint64_t since, uint64_t until, int depth, int64_t res)
{
	ts_changes_spec spec = {since, until, res, depth};
	ts_cursor *c;
	const ts_value *row;
	int n, rows = 0;
	ts_buf b;
	ts__buf_init(&b);
	if (ts_changes_open(t, &spec, &c) != 0)
		fail_msg("ts_changes_open: %s", ts_errmsg(NULL));
	while (ts_cursor_next(c, &row, &n) == 0 && row) {
		assert_int_equal(n, depth + 2);
		if (rows++)
			ts__put(&b, "; ", 2);
		for (int i = 0; i < depth; i++) {
			char v[64];
			if (row[i].type == TS_NONE)
				snprintf(v, sizeof v, "%s*", i ? "/" : "");
			else if (row[i].type == TS_STRING)
				snprintf(v, sizeof v, "%s%.*s", i ? "/" : "", (int)row[i].v.s.len,
				         (const char *)row[i].v.s.ptr);
			else
				snprintf(v, sizeof v, "%s%lld", i ? "/" : "", (long long)row[i].v.i);
			ts__put(&b, v, strlen(v));
		}
		if (!depth)
			ts__put(&b, "*", 1);
		assert_int_equal(row[depth].type, TS_TIMESTAMP);
		assert_int_equal(row[depth + 1].type, TS_TIMESTAMP);
		assert_true(row[depth].v.i < row[depth + 1].v.i);
		if (res) {
			assert_int_equal(row[depth + 1].v.i - row[depth].v.i, res);
			assert_int_equal(((row[depth].v.i % res) + res) % res, 0);
		}
		ts__put(&b, " ", 1);
		put_time(&b, row[depth].v.i);
		ts__put(&b, " ", 1);
		put_time(&b, row[depth + 1].v.i);
	}
	assert_int_equal(ts_cursor_next(c, &row, &n), 0);
	assert_null(row);
	ts_cursor_close(c);
	ts__put(&b, "", 1);
	return (char *)b.data;
}

#define EXPECT(t, since, until, depth, res, want) \
	do { \
		char *got_ = changes((t), (since), (until), (depth), (res)); \
		if (strcmp(got_, (want)) != 0) \
			fail_msg("changes(since %" PRIu64 ", until %" PRIu64 ", depth %d, res %lld):\n" \
			         "  got  %s\n  want %s", (uint64_t)(since), (uint64_t)(until), (depth), \
			         (long long)(res), got_, (want)); \
		free(got_); \
	} while (0)

/* ---- the contract's edges ---- */

static void arguments_checked(void **state)
{
	ts_test_env *e = *state;
	ts_changes_spec spec = {0, 0, 0, 0};
	ts_cursor *c = (ts_cursor *)1;
	assert_int_equal(ts_changes_open(e->t, NULL, &c), TS_EINVAL);
	assert_null(c);
	assert_int_equal(ts_changes_open(e->t, &spec, NULL), TS_EINVAL);
	spec.depth = 2; /* (host, ts): depth 0 or 1 */
	assert_int_equal(ts_changes_open(e->t, &spec, &c), TS_EINVAL);
	spec.depth = -1;
	assert_int_equal(ts_changes_open(e->t, &spec, &c), TS_EINVAL);
	spec.depth = 1;
	spec.resolution = -1;
	assert_int_equal(ts_changes_open(e->t, &spec, &c), TS_EINVAL);
	spec.resolution = 0;
	spec.since = 10;
	spec.until = 9;
	assert_int_equal(ts_changes_open(e->t, &spec, &c), TS_EINVAL);
	/* an empty table, and an empty interval, answer nothing */
	EXPECT(e->t, 0, 0, 1, 0, "");
	uint64_t v1 = insert(e, "a", 10, NOW - 3 * HOUR);
	EXPECT(e->t, v1, 0, 1, 0, "");
	EXPECT(e->t, v1, v1, 1, 0, "");
	EXPECT(e->t, v1 + 1000, 0, 1, 0, ""); /* a version not reached yet */
}

/* ---- filling trees ---- */

/* Three commits into one filling tree: a at 09:00 (v1), b at 10:00
 * (v2), a again at 11:00 (v3), ten rows a second apart each. */
static void three_commits(ts_test_env *e, uint64_t *v)
{
	v[1] = insert(e, "a", 10, NOW - 3 * HOUR);
	v[2] = insert(e, "b", 10, NOW - 2 * HOUR);
	v[3] = insert(e, "a", 10, NOW - 1 * HOUR);
	assert_true(v[1] < v[2] && v[2] < v[3]);
}

static void trees(void **state)
{
	ts_test_env *e = *state;
	uint64_t v[4];
	three_commits(e, v);
	/* since 0: everything; a's rows are one run in key order (no older
	 * row between them), so one span without a resolution */
	EXPECT(e->t, 0, 0, 1, 0, "a 09:00:00 11:00:09+; b 10:00:00 10:00:09+");
	EXPECT(e->t, 0, 0, 1, HOUR, "a 09:00:00 10:00:00; a 11:00:00 12:00:00; b 10:00:00 11:00:00");
	/* since v1: a's 09:00 rows are older, and break a's run */
	EXPECT(e->t, v[1], 0, 1, 0, "a 11:00:00 11:00:09+; b 10:00:00 10:00:09+");
	EXPECT(e->t, v[2], 0, 1, 0, "a 11:00:00 11:00:09+");
	EXPECT(e->t, v[3], 0, 1, 0, "");
	/* until */
	EXPECT(e->t, v[1], v[2], 1, 0, "b 10:00:00 10:00:09+");
	EXPECT(e->t, 0, v[1], 1, 0, "a 09:00:00 09:00:09+");
	EXPECT(e->t, 0, v[2], 1, HOUR, "a 09:00:00 10:00:00; b 10:00:00 11:00:00");
	/* depth 0: the whole table; b's rows and a's new ones are adjacent
	 * in key order, one run */
	EXPECT(e->t, v[1], 0, 0, 0, "* 10:00:00 11:00:09+");
	EXPECT(e->t, v[1], 0, 0, HOUR, "* 10:00:00 11:00:00; * 11:00:00 12:00:00");
	EXPECT(e->t, v[2], 0, 0, 10 * MIN, "* 11:00:00 11:10:00");
	/* a since between two commits (not a version of the table): the
	 * trees holding batches it may cut are taken whole */
	EXPECT(e->t, v[2] + 1, 0, 1, 0, "a 09:00:00 11:00:09+; b 10:00:00 10:00:09+");
}

/* ---- flushed and merged tablets ---- */

static void flushed(void **state)
{
	ts_test_env *e = *state;
	uint64_t v[4];
	three_commits(e, v);
	assert_int_equal(ts_flush(e->t, INT64_MAX), 0);
	/* one tablet of one block holding both hosts: its hi is v3, so every
	 * since below v3 reports the block, read for its prefixes */
	EXPECT(e->t, v[2], 0, 1, 0, "a 09:00:00 11:00:09+; b 10:00:00 10:00:09+");
	EXPECT(e->t, v[2], 0, 1, HOUR,
	       "a 09:00:00 10:00:00; a 11:00:00 12:00:00; b 10:00:00 11:00:00");
	EXPECT(e->t, v[2], 0, 0, 0, "* 09:00:00 11:00:09+");
	EXPECT(e->t, v[3], 0, 1, 0, "");
	/* until below the tablet's lo: skipped */
	uint64_t v4 = insert(e, "c", 10, NOW - 30 * MIN);
	EXPECT(e->t, v[3], 0, 1, 0, "c 11:30:00 11:30:09+");
	EXPECT(e->t, v[3], v4, 1, 0, "c 11:30:00 11:30:09+");
	assert_int_equal(ts_check(e->db, NULL, NULL), 0);
}

/* Rows enough (about 8 KiB) for a host's hour to make blocks of its own. */
#define BLOCK_ROWS 300

/* A block of host a at 09:00 and one of b at 10:00, each inserted and
 * flushed alone, then merged into one tablet; *v1 and *v2 get the
 * versions the two inserts answered. */
static void insert_merged_pair(ts_test_env *e, uint64_t *v1, uint64_t *v2)
{
	int merged = 0;
	*v1 = insert(e, "a", BLOCK_ROWS, NOW - 3 * HOUR);
	assert_int_equal(ts_flush(e->t, INT64_MAX), 0);
	*v2 = insert(e, "b", BLOCK_ROWS, NOW - 2 * HOUR);
	assert_int_equal(ts_flush(e->t, INT64_MAX), 0);
	assert_int_equal(ts_merge(e->t, &merged), 0);
	assert_int_equal(merged, 1);
}

/*
 * After a merge of an old tablet and a new one, only the blocks holding
 * the new tablet's rows are reported: each block carries the newest
 * version of its rows.  (With the blocks' hi ignored, a's blocks would
 * be reported too, as of the merged tablet's hi.)
 */
static void merged_reports_new_blocks_only(void **state)
{
	ts_test_env *e = *state;
	int merged = 0;
	uint64_t v1, v2;
	insert_merged_pair(e, &v1, &v2);
	ts__snapshot s;
	assert_int_equal(ts__snapshot_take(e->t, &s), 0);
	assert_int_equal(s.ntablets, 1);
	const ts__tablet *tab = s.tablets[0];
	assert_int_equal(tab->format, TS_TABLET_VERSION);
	assert_true(tab->nblocks >= 2);
	assert_int_equal(tab->blocks[0].hi, v1);
	assert_int_equal(tab->blocks[tab->nblocks - 1].hi, v2);
	ts__snapshot_release(&s);
	EXPECT(e->t, v1, 0, 1, 0, "b 10:00:00 10:04:59+");
	EXPECT(e->t, 0, v1, 1, 0, "a 09:00:00 09:04:59+; b 10:00:00 10:04:59+"); /* lo <= v1 */
	EXPECT(e->t, 0, 0, 1, 0, "a 09:00:00 09:04:59+; b 10:00:00 10:04:59+");
	EXPECT(e->t, v2, 0, 1, 0, "");
	/* merged again with a third tablet, the first rows keep their own hi */
	uint64_t v3 = insert(e, "c", BLOCK_ROWS, NOW - 1 * HOUR);
	assert_int_equal(ts_flush(e->t, INT64_MAX), 0);
	uint64_t v4 = insert(e, "d", 2 * BLOCK_ROWS, NOW - 4 * HOUR + 10 * MIN);
	assert_int_equal(ts_flush(e->t, INT64_MAX), 0);
	assert_int_equal(ts_merge(e->t, &merged), 0);
	assert_int_equal(ts__snapshot_take(e->t, &s), 0);
	assert_int_equal(s.ntablets, 1);
	ts__snapshot_release(&s);
	EXPECT(e->t, v1, 0, 1, 0, "b 10:00:00 10:04:59+; c 11:00:00 11:04:59+; d 08:10:00 08:19:59+");
	/* until cannot cut blocks (they record their newest version, not
	 * their oldest): d's, newer than v3, over-report */
	EXPECT(e->t, v2, v3, 1, HOUR, "c 11:00:00 12:00:00; d 08:00:00 09:00:00");
	EXPECT(e->t, v3, 0, 1, HOUR, "d 08:00:00 09:00:00");
	EXPECT(e->t, v4, 0, 1, 0, "");
	assert_int_equal(ts_check(e->db, NULL, NULL), 0);
}

/* Blocks of several hosts each (small series) are read for their keys:
 * no host between a block's first and last is missed. */
static void blocks_of_many_prefixes(void **state)
{
	ts_test_env *e = *state;
	uint64_t v0 = insert(e, "a0", 1, NOW - 5 * HOUR);
	for (int h = 1; h <= 40; h++) {
		char name[8];
		snprintf(name, sizeof name, "a%02d", h);
		insert(e, name, 3, NOW - 3 * HOUR + h * MIN);
	}
	assert_int_equal(ts_flush(e->t, INT64_MAX), 0);
	char *got = changes(e->t, v0, 0, 1, 0);
	for (int h = 1; h <= 40; h++) {
		char want[64];
		snprintf(want, sizeof want, "a%02d 09:%02d:00 09:%02d:02+", h, h, h);
		if (!strstr(got, want))
			fail_msg("%s missing from %s", want, got);
	}
	free(got);
}

/* A reopen (trees recovered from the log) answers as before it. */
static void reopen(void **state)
{
	ts_test_env *e = *state;
	uint64_t v[4];
	three_commits(e, v);
	ts_test_env_reopen(e);
	EXPECT(e->t, v[1], 0, 1, 0, "a 11:00:00 11:00:09+; b 10:00:00 10:00:09+");
	EXPECT(e->t, v[2], 0, 1, 0, "a 11:00:00 11:00:09+");
	assert_int_equal(ts_flush(e->t, INT64_MAX), 0);
	ts_test_env_reopen(e);
	EXPECT(e->t, v[3], 0, 1, 0, "");
	EXPECT(e->t, v[2], 0, 1, 0, "a 09:00:00 11:00:09+; b 10:00:00 10:00:09+");
}

/* Across a roll-over: yesterday's 4-hour tablets and a late row that
 * began yesterday's day tree after midnight; merged into the day. */
static void roll_over(void **state)
{
	ts_test_env *e = *state;
	int merged = 0;
	uint64_t v1 = insert(e, "a", BLOCK_ROWS, NOW - 10 * HOUR); /* 02:00, 00-04 */
	uint64_t v2 = insert(e, "b", BLOCK_ROWS, NOW - 6 * HOUR);  /* 06:00, 04-08 */
	assert_int_equal(ts_flush(e->t, INT64_MAX), 0);
	ts_test_env_set_now(e, NOW + 24 * HOUR); /* tomorrow */
	uint64_t v3 = insert(e, "a", 5, NOW - 9 * HOUR); /* late: 03:00 yesterday */
	EXPECT(e->t, v2, 0, 1, 0, "a 03:00:00 03:00:04+");
	assert_int_equal(ts_flush(e->t, INT64_MAX), 0);
	EXPECT(e->t, v2, 0, 1, 0, "a 03:00:00 03:00:04+");
	assert_int_equal(ts_merge(e->t, &merged), 0);
	assert_true(merged >= 1);
	/* one day tablet; the late rows begin a block (another hour than
	 * a's 02:00 rows), which b's rows fill: b over-reports */
	EXPECT(e->t, v2, 0, 1, 0, "a 03:00:00 03:00:04+; b 06:00:00 06:04:59+");
	EXPECT(e->t, v1, 0, 1, 0, "a 03:00:00 03:00:04+; b 06:00:00 06:04:59+");
	EXPECT(e->t, 0, 0, 1, 0, "a 02:00:00 03:00:04+; b 06:00:00 06:04:59+");
	EXPECT(e->t, v3, 0, 1, 0, "");
	assert_int_equal(ts_check(e->db, NULL, NULL), 0);
}

/* ---- depth 2 ---- */

static void depth_two(void **state)
{
	ts_test_env *e = *state;
	ts_column cols[] = {
		{"host", TS_STRING, {TS_NONE, {0}}}, {"cpu", TS_INT64, {TS_NONE, {0}}},
		{"ts", TS_TIMESTAMP, {TS_NONE, {0}}}, {"v", TS_DOUBLE, {TS_NONE, {0}}},
	};
	const char *key[] = {"host", "cpu", "ts"};
	ts_table *t;
	uint64_t v[4];
	assert_int_equal(ts_create_keyed(e->db, "c", cols, 4, key, 3, 0), 0);
	assert_int_equal(ts_table_open(e->db, "c", &t), 0);
	for (int k = 1; k <= 3; k++) {
		ts_value vals[4 * 8];
		for (int i = 0; i < 8; i++) {
			vals[4 * i] = ts_string(i < 4 ? "x" : "y");
			vals[4 * i + 1] = ts_int64(i % 4);
			vals[4 * i + 2] = ts_timestamp(NOW - (4 - k) * HOUR + i * SEC);
			vals[4 * i + 3] = ts_double(k);
		}
		/* commit k: x's cpus 0..3 and y's, at 09:00 / 10:00 / 11:00; only
		 * y's cpu 3 at 11:00 in the third */
		size_t ignored;
		int n = k == 3 ? 1 : 8;
		if (ts_insert_versioned(t, 0, k == 3 ? vals + 4 * 7 : vals, (size_t)n, &ignored, &v[k]))
			fail_msg("insert: %s", ts_errmsg(NULL));
	}
	EXPECT(t, v[2], 0, 2, 0, "y/3 11:00:07 11:00:07+");
	EXPECT(t, v[1], 0, 2, HOUR,
	       "x/0 10:00:00 11:00:00; x/1 10:00:00 11:00:00; x/2 10:00:00 11:00:00; "
	       "x/3 10:00:00 11:00:00; y/0 10:00:00 11:00:00; y/1 10:00:00 11:00:00; "
	       "y/2 10:00:00 11:00:00; y/3 10:00:00 11:00:00; y/3 11:00:00 12:00:00");
	EXPECT(t, v[1], 0, 1, HOUR,
	       "x 10:00:00 11:00:00; y 10:00:00 11:00:00; y 11:00:00 12:00:00");
	assert_int_equal(ts_flush(t, INT64_MAX), 0);
	EXPECT(t, v[2], 0, 1, 0, "x 09:00:00 10:00:03+; y 09:00:04 11:00:07+");
	EXPECT(t, v[3], 0, 2, 0, "");
	/* a delete of host x names x at depth 1; at depth 2, x with every
	 * cpu (a wildcard row naming the column it fixes), sorted before x's
	 * own cpus; a delete of x's cpus 1 and 2 at 09:00 names x with every
	 * cpu too (its range spans two) */
	ts_value px = ts_string("x"), lo[2] = {ts_string("x"), ts_int64(1)},
	         hi[2] = {ts_string("x"), ts_int64(2)};
	ts_query q = {.prefix = &px, .nprefix = 1, .from = NOW - 2 * HOUR, .has_from = 1};
	uint64_t deleted, d1, d2;
	assert_int_equal(ts_delete(t, &q, &deleted, &d1), 0);
	/* (its time range narrowed to the tablet's, which holds y's 11:00) */
	EXPECT(t, v[3], 0, 1, 0, "x 10:00:00 11:00:07+");
	EXPECT(t, v[3], 0, 2, 0, "x/* 10:00:00 11:00:07+");
	EXPECT(t, v[3], 0, 2, HOUR, "x/* 10:00:00 11:00:00; x/* 11:00:00 12:00:00");
	q = (ts_query){.lower = lo, .nlower = 2, .upper = hi, .nupper = 2, .to = NOW - 2 * HOUR,
	               .has_to = 1};
	assert_int_equal(ts_delete(t, &q, &deleted, &d2), 0);
	EXPECT(t, d1, 0, 2, 0, "x/* 09:00:00 10:00:00");
	/* (the tablet's blocks, one per series, took rows after v1: whole) */
	EXPECT(t, v[1], 0, 2, 0, "x/* 09:00:00 11:00:07+; x/0 09:00:00 10:00:00+; "
	                         "x/1 09:00:01 10:00:01+; x/2 09:00:02 10:00:02+; "
	                         "x/3 09:00:03 10:00:03+; y/0 09:00:04 10:00:04+; "
	                         "y/1 09:00:05 10:00:05+; y/2 09:00:06 10:00:06+; "
	                         "y/3 09:00:07 11:00:07+");
	/* a delete of every host's 11:00: every prefix */
	q = (ts_query){.from = NOW - HOUR, .has_from = 1};
	uint64_t d3;
	assert_int_equal(ts_delete(t, &q, &deleted, &d3), 0);
	EXPECT(t, d2, 0, 2, 0, "*/* 11:00:00 11:00:07+");
	EXPECT(t, d2, 0, 1, 0, "* 11:00:00 11:00:07+");
	assert_int_equal(ts_check(e->db, NULL, NULL), 0);
	ts_table_close(t);
}

/* ---- deletes ---- */

/* Delete the rows of host h (NULL: every host) with ts in [from, to]
 * (INT64_MIN / INT64_MAX: unbounded); returns the delete's version. */
static uint64_t delete_rows(ts_table *t, const char *h, int64_t from, int64_t to)
{
	ts_value prefix[1] = {ts_string(h ? h : "")};
	ts_query q;
	memset(&q, 0, sizeof q);
	if (h) {
		q.prefix = prefix;
		q.nprefix = 1;
	}
	q.has_from = from != INT64_MIN;
	q.from = from;
	q.has_to = to != INT64_MAX;
	q.to = to;
	q.to_inclusive = 1;
	uint64_t deleted, version = 0;
	if (ts_delete(t, &q, &deleted, &version) != 0)
		fail_msg("ts_delete: %s", ts_errmsg(NULL));
	return version;
}

/* Whether the tombstone of version v is in force for t. */
static int tomb_in_force(ts_table *t, uint64_t v);

/*
 * A delete is a change, reported by its box alone, by version like any
 * commit: a delete of a prefix names that prefix over its own time
 * range; a delete of several prefixes names the wildcard (TS_NONE
 * prefix values, "*" here), whatever source still holds their rows --
 * so a flush that left a prefix's rows out changes nothing (limit (b) of
 * the tombstone-only design); and once the tombstone has left (a flush
 * found it spent), its change record in the DESCRIPTOR answers the same,
 * across a reopen (limit (a)).  A purge erases the records' key bounds:
 * then every delete it met is the wildcard.
 */
static void deletes(void **state)
{
	ts_test_env *e = *state;
	uint64_t v[4];
	three_commits(e, v);
	assert_int_equal(ts_flush(e->t, INT64_MAX), 0);
	uint64_t v4 = insert(e, "c", 10, NOW - 30 * MIN);
	uint64_t d1 = delete_rows(e->t, "a", NOW - 3 * HOUR, NOW - 3 * HOUR + 5 * SEC);
	assert_true(d1 > v4);
	EXPECT(e->t, v4, 0, 1, 0, "a 09:00:00 09:00:05+");
	EXPECT(e->t, v4, 0, 0, 0, "* 09:00:00 09:00:05+");
	EXPECT(e->t, v4, 0, 1, HOUR, "a 09:00:00 10:00:00");
	EXPECT(e->t, 0, v4, 1, 0, "a 09:00:00 11:00:09+; b 10:00:00 10:00:09+; c 11:30:00 11:30:09+");
	EXPECT(e->t, d1, 0, 1, 0, "");
	/* everything, for all time (narrowed by ts_delete to the sources'
	 * times): every prefix */
	uint64_t d2 = delete_rows(e->t, NULL, INT64_MIN, INT64_MAX);
	EXPECT(e->t, d1, 0, 1, 0, "* 09:00:00 11:30:09+");
	EXPECT(e->t, d1, 0, 0, 0, "* 09:00:00 11:30:09+");
	EXPECT(e->t, d1, d2, 0, HOUR, "* 09:00:00 10:00:00; * 10:00:00 11:00:00; * 11:00:00 12:00:00");
	EXPECT(e->t, v4, d1, 1, 0, "a 09:00:00 09:00:05+");
	EXPECT(e->t, d2, 0, 1, 0, "");
	uint64_t v5 = insert(e, "d", 10, NOW - 20 * MIN);
	EXPECT(e->t, d2, 0, 1, 0, "d 11:40:00 11:40:09+");
	EXPECT(e->t, d1, v5, 1, 0, "* 09:00:00 11:30:09+; d 11:40:00 11:40:09+");
	/* a flush leaves c's deleted rows out: the delete still names every
	 * prefix, c's among them (before, only those a source still held) */
	assert_int_equal(ts_flush(e->t, INT64_MAX), 0);
	/* (d's rows share a tablet with c's, born before d1: until cannot
	 * cut its block, an over-report) */
	EXPECT(e->t, v4, d1, 1, 0, "a 09:00:00 09:00:05+; d 11:40:00 11:40:09+");
	EXPECT(e->t, d1, d2, 1, 0, "* 09:00:00 11:30:09+; d 11:40:00 11:40:09+");
	EXPECT(e->t, d1, d2, 0, 0, "* 09:00:00 11:30:09+; * 11:40:00 11:40:09+");
	/* a merge of the two tablets leaves no source the deletes apply to:
	 * the next flush finds them spent and keeps their change records */
	int merged = 0;
	assert_int_equal(ts_merge(e->t, &merged), 0);
	assert_int_equal(merged, 1);
	uint64_t v6 = insert(e, "e", 10, NOW - 10 * MIN);
	assert_int_equal(ts_flush(e->t, INT64_MAX), 0);
	assert_false(tomb_in_force(e->t, d1));
	assert_false(tomb_in_force(e->t, d2));
	assert_int_equal(ts_test_stat(e->t, "changes_records"), 2);
	assert_int_equal(ts_test_stat(e->t, "changes_horizon"), 0);
	EXPECT(e->t, v4, d1, 1, 0, "a 09:00:00 09:00:05+; d 11:40:00 11:40:09+");
	EXPECT(e->t, d1, d2, 1, 0, "* 09:00:00 11:30:09+; d 11:40:00 11:40:09+");
	EXPECT(e->t, v5, 0, 1, 0, "e 11:50:00 11:50:09+");
	ts_test_env_reopen(e);
	EXPECT(e->t, v4, d2, 1, 0, "* 09:00:00 11:30:09+; a 09:00:00 09:00:05+; "
	                           "d 11:40:00 11:40:09+");
	EXPECT(e->t, v4, d2, 0, HOUR, "* 09:00:00 10:00:00; * 10:00:00 11:00:00; "
	                              "* 11:00:00 12:00:00");
	assert_int_equal(ts_check(e->db, NULL, NULL), 0);
	/* a purge of a's rows erases the key bounds of the records its range
	 * meets (both: d2's box is every key): d1 names every prefix now */
	ts_value pa = ts_string("a");
	ts_query qa = {.prefix = &pa, .nprefix = 1};
	assert_int_equal(ts_purge(e->t, &qa, NULL), 0);
	assert_int_equal(ts_test_stat(e->t, "changes_records"), 2);
	EXPECT(e->t, v4, d1, 1, 0, "* 09:00:00 09:00:05+; d 11:40:00 11:40:09+");
	EXPECT(e->t, v5, v6, 1, 0, "e 11:50:00 11:50:09+");
	assert_int_equal(ts_check(e->db, NULL, NULL), 0);
	(void)v;
}

/*
 * The records are bounded (TS_CHANGE_RECORDS_MAX; lowered to 2 here):
 * the oldest go, and the changes horizon becomes the newest version
 * among them; a since below it reports the wildcard over the time range
 * of the records dropped, never missing one of them; a since at or
 * above it is answered by the records and tombstones as before.  The
 * horizon is persisted, the stat says it, and ts_check verifies it.
 */
static void horizon(void **state)
{
	ts_test_env *e = *state;
	int saved = ts__chrecs_max;
	ts__chrecs_max = 2;
	uint64_t v1 = insert(e, "a", 10, NOW - 3 * HOUR);
	insert(e, "b", 10, NOW - 2 * HOUR);
	insert(e, "c", 10, NOW - 1 * HOUR);
	uint64_t v2 = insert(e, "d", 10, NOW - 30 * MIN);
	assert_int_equal(ts_flush(e->t, INT64_MAX), 0);
	uint64_t d1 = delete_rows(e->t, "a", NOW - 3 * HOUR, NOW - 3 * HOUR + 2 * SEC);
	uint64_t d2 = delete_rows(e->t, "b", NOW - 2 * HOUR, NOW - 2 * HOUR + 3 * SEC);
	uint64_t d3 = delete_rows(e->t, "c", NOW - 1 * HOUR, NOW - 1 * HOUR + 4 * SEC);
	assert_true(v2 < d1 && d1 < d2 && d2 < d3);
	EXPECT(e->t, v2, 0, 1, 0, "a 09:00:00 09:00:02+; b 10:00:00 10:00:03+; c 11:00:00 11:00:04+");
	/* a purge drops the three tombstones: three records, one too many */
	assert_int_equal(ts_purge(e->t, NULL, NULL), 0);
	ts__chrecs_max = saved;
	assert_int_equal(ts_test_stat(e->t, "changes_records"), 2);
	assert_int_equal(ts_test_stat(e->t, "changes_horizon"), (int64_t)d1);
	/* since below the horizon: d1's time range, every prefix (the purge
	 * erased the records' keys: every prefix for d2 and d3 as well) */
	EXPECT(e->t, v2, 0, 1, 0, "* 09:00:00 09:00:02+; * 10:00:00 10:00:03+; * 11:00:00 11:00:04+");
	/* (the rows the purge erased are in no block any more) */
	EXPECT(e->t, v1, d1, 1, 0, "* 09:00:00 09:00:02+; a 09:00:03 09:00:09+; "
	                           "b 10:00:04 10:00:09+; c 11:00:05 11:00:09+; d 11:30:00 11:30:09+");
	/* at the horizon: the records alone */
	EXPECT(e->t, d1, 0, 1, 0, "* 10:00:00 10:00:03+; * 11:00:00 11:00:04+");
	EXPECT(e->t, d2, 0, 0, 0, "* 11:00:00 11:00:04+");
	EXPECT(e->t, d3, 0, 1, 0, "");
	ts_test_env_reopen(e);
	assert_int_equal(ts_test_stat(e->t, "changes_horizon"), (int64_t)d1);
	EXPECT(e->t, d1 - 1, d1, 1, HOUR, "* 09:00:00 10:00:00");
	assert_int_equal(ts_check(e->db, NULL, NULL), 0);
}

/*
 * Purge rewrites a tablet as a one-input merge that keeps each row's
 * block hi: after it, changes since the rows' versions report what they
 * reported before (the purged delete by its change record), never the
 * whole rewritten tablet as new.
 */
static void purge_keeps_block_hi(void **state)
{
	ts_test_env *e = *state;
	uint64_t v1, v2;
	insert_merged_pair(e, &v1, &v2);
	uint64_t d = delete_rows(e->t, "b", NOW - 2 * HOUR, NOW - 2 * HOUR + 9 * SEC);
	EXPECT(e->t, v2, 0, 1, 0, "b 10:00:00 10:00:09+");
	EXPECT(e->t, v1, 0, 1, 0, "b 10:00:00 10:04:59+");
	uint64_t pv;
	assert_int_equal(ts_purge(e->t, NULL, &pv), 0);
	assert_true(pv > d);
	ts__snapshot s;
	assert_int_equal(ts__snapshot_take(e->t, &s), 0);
	assert_int_equal(s.ntablets, 1);
	assert_int_equal(s.ntombs, 0);
	const ts__tablet *tab = s.tablets[0];
	assert_int_equal(tab->blocks[0].hi, v1);
	assert_int_equal(tab->blocks[tab->nblocks - 1].hi, v2);
	ts__snapshot_release(&s);
	/* the purged delete is reported by its change record, without its
	 * key bounds (the purge erased them): every prefix */
	EXPECT(e->t, v2, 0, 1, 0, "* 10:00:00 10:00:09+");
	EXPECT(e->t, d, 0, 1, 0, "");
	EXPECT(e->t, v1, 0, 1, 0, "* 10:00:00 10:00:09+; b 10:00:10 10:04:59+");
	EXPECT(e->t, 0, 0, 1, 0, "* 10:00:00 10:00:09+; a 09:00:00 09:04:59+; b 10:00:10 10:04:59+");
	assert_int_equal(ts_check(e->db, NULL, NULL), 0);
}

/* ---- older tablets ---- */

/* Rewrite tablet id of e's table in format 2 (as builds before the
 * block's hi wrote it) and record its new size in the DESCRIPTOR. */
static void rewrite_format2(ts_test_env *e, uint64_t id)
{
	char dir[4200], path[4400], name[64];
	ts__descriptor *d;
	ts__tablet *tab;
	ts__tablet_writer *w;
	ts_buf raw;
	uint64_t bytes = 0;
	snprintf(dir, sizeof dir, "%s/m", e->dir);
	assert_int_equal(ts__descriptor_read(dir, &d), 0);
	assert_int_equal(ts__tablet_name(id, name, sizeof name), 0);
	snprintf(path, sizeof path, "%s/tablets/%s", dir, name);
	assert_int_equal(ts__tablet_open(path, id, &tab), 0);
	assert_int_equal(tab->format, 3);
	snprintf(path, sizeof path, "%s/tablets", dir);
	assert_int_equal(ts__tablet_writer_open(path, id, d->schemas[tab->schema_version - 1],
	                                        tab->period_start, tab->period_end, &w), 0);
	ts__buf_init(&raw);
	for (uint32_t i = 0; i < tab->nblocks; i++) {
		ts_reader r;
		const void *row;
		size_t len;
		assert_int_equal(ts__tablet_read_block(tab, i, &raw), 0);
		ts__reader_init(&r, raw.data, raw.len);
		while (ts__tablet_block_next(&r, &row, &len) == 1)
			assert_int_equal(ts__tablet_writer_add(w, row, len), 0);
	}
	ts__buf_free(&raw);
	ts__tablet_close(tab);
	assert_int_equal(ts__tablet_writer_finish(w, NULL, &bytes, NULL, NULL), 0);
	for (int i = 0; i < d->ntablets; i++)
		if (d->tablets[i].id == id)
			d->tablets[i].bytes = bytes;
	assert_int_equal(ts__descriptor_write(dir, d), 0);
	ts__descriptor_free(d, 1);
}

static uint64_t only_tablet(ts_test_env *e, uint32_t *format)
{
	ts__snapshot s;
	assert_int_equal(ts__snapshot_take(e->t, &s), 0);
	assert_int_equal(s.ntablets, 1);
	uint64_t id = s.metas[0].id;
	if (format)
		*format = s.tablets[0]->format;
	ts__snapshot_release(&s);
	return id;
}

/*
 * A merged tablet of format 2 reports every block as of its hi; ts_check
 * passes; merged with a new tablet, its rows take its hi as their
 * blocks', so the new rows alone are reported after.
 */
static void format2_tablets(void **state)
{
	ts_test_env *e = *state;
	uint32_t format;
	uint64_t v1 = insert(e, "a", BLOCK_ROWS, NOW - 3 * HOUR);
	assert_int_equal(ts_flush(e->t, INT64_MAX), 0);
	uint64_t v2 = insert(e, "b", BLOCK_ROWS, NOW - 2 * HOUR);
	assert_int_equal(ts_flush(e->t, INT64_MAX), 0);
	assert_int_equal(ts_merge(e->t, NULL), 0);
	uint64_t id = only_tablet(e, &format);
	assert_int_equal(format, 3);
	ts_test_env_close(e);
	rewrite_format2(e, id);
	ts_test_env_open(e);
	assert_int_equal(only_tablet(e, &format), id);
	assert_int_equal(format, 2);
	assert_int_equal(ts_check(e->db, NULL, NULL), 0);
	/* every block, as of the tablet's hi v2 */
	EXPECT(e->t, v1, 0, 1, 0, "a 09:00:00 09:04:59+; b 10:00:00 10:04:59+");
	EXPECT(e->t, v2, 0, 1, 0, "");
	uint64_t v3 = insert(e, "c", BLOCK_ROWS, NOW - 1 * HOUR);
	assert_int_equal(ts_flush(e->t, INT64_MAX), 0);
	assert_int_equal(ts_merge(e->t, NULL), 0);
	only_tablet(e, &format);
	assert_int_equal(format, 3);
	EXPECT(e->t, v2, 0, 1, 0, "c 11:00:00 11:04:59+");
	EXPECT(e->t, v1, 0, 1, 0, "a 09:00:00 09:04:59+; b 10:00:00 10:04:59+; c 11:00:00 11:04:59+");
	EXPECT(e->t, v3, 0, 1, 0, "");
	assert_int_equal(ts_check(e->db, NULL, NULL), 0);
}

static void clear_intervals(ts_test_env *e)
{
	char dir[4200];
	ts__descriptor *d;
	snprintf(dir, sizeof dir, "%s/m", e->dir);
	assert_int_equal(ts__descriptor_read(dir, &d), 0);
	for (int i = 0; i < d->ntablets; i++)
		d->tablets[i].lo = d->tablets[i].hi = 0;
	assert_int_equal(ts__descriptor_write(dir, d), 0);
	ts__descriptor_free(d, 1);
}

/* Tablets written before versions existed ([0, 0] in the DESCRIPTOR)
 * are as new as anything: reported whatever since is. */
static void unversioned_tablets(void **state)
{
	ts_test_env *e = *state;
	insert(e, "a", 10, NOW - 3 * HOUR);
	assert_int_equal(ts_flush(e->t, INT64_MAX), 0);
	ts_test_env_close(e);
	clear_intervals(e);
	ts_test_env_open(e);
	uint64_t v2 = insert(e, "b", 10, NOW - 2 * HOUR);
	insert(e, "c", 10, NOW - 1 * HOUR);
	EXPECT(e->t, v2, 0, 1, 0, "a 09:00:00 09:00:09+; c 11:00:00 11:00:09+");
	EXPECT(e->t, v2 - 1, 0, 1, 0,
	       "a 09:00:00 09:00:09+; b 10:00:00 10:00:09+; c 11:00:00 11:00:09+");
}

struct problems {
	int n;
	char what[512], file[256];
};

static void on_problem(void *arg, const char *table, const char *file, const char *what)
{
	struct problems *p = arg;
	(void)table;
	if (!p->n++) {
		snprintf(p->what, sizeof p->what, "%s", what);
		snprintf(p->file, sizeof p->file, "%s", file);
	}
}

/* ts_check reports a block whose hi lies outside its tablet's interval
 * (here the DESCRIPTOR forged to end before the tablet's rows). */
static void check_bounds_block_hi(void **state)
{
	ts_test_env *e = *state;
	char dir[4200], want[600];
	ts__descriptor *d;
	uint64_t v1 = insert(e, "a", 10, NOW - 3 * HOUR);
	assert_int_equal(ts_flush(e->t, INT64_MAX), 0);
	uint64_t id = only_tablet(e, NULL);
	assert_int_equal(ts_check(e->db, NULL, NULL), 0);
	ts_test_env_close(e);
	snprintf(dir, sizeof dir, "%s/m", e->dir);
	assert_int_equal(ts__descriptor_read(dir, &d), 0);
	uint64_t lo = d->tablets[0].lo;
	d->tablets[0].hi = lo;
	assert_int_equal(ts__descriptor_write(dir, d), 0);
	ts__descriptor_free(d, 1);
	ts_test_env_open(e);
	struct problems p = {0};
	ts_check_opts o = {.problem = on_problem, .arg = &p};
	assert_int_equal(ts_check(e->db, NULL, &o), TS_ECORRUPT);
	assert_int_equal(p.n, 1);
	snprintf(want, sizeof want, "m/tablets/%016" PRIx64 ".tab", id);
	assert_string_equal(p.file, want);
	snprintf(want, sizeof want, "block 0: newest version %" PRIu64 " outside the tablet's [%"
	         PRIu64 ", %" PRIu64 "] in the DESCRIPTOR", v1, lo, lo);
	assert_string_equal(p.what, want);
}

/* ts_check verifies the change records: a record whose time range ends
 * before it begins, one newer than the log's newest commit, more records
 * than are kept (the DESCRIPTOR forged each time). */
static void check_change_records(void **state)
{
	ts_test_env *e = *state;
	char dir[4200];
	ts__descriptor *d;
	insert(e, "a", 10, NOW - 3 * HOUR);
	uint64_t d1 = delete_rows(e->t, "a", NOW - 3 * HOUR, NOW - 3 * HOUR + 2 * SEC);
	assert_int_equal(ts_purge(e->t, NULL, NULL), 0);
	uint64_t head = 0;
	assert_int_equal(ts_table_version(e->t, &head), 0);
	assert_int_equal(ts_check(e->db, NULL, NULL), 0);
	snprintf(dir, sizeof dir, "%s/m", e->dir);
	for (int k = 0; k < 3; k++) {
		ts_test_env_close(e);
		assert_int_equal(ts__descriptor_read(dir, &d), 0);
		assert_int_equal(d->nchrecs, 1);
		assert_int_equal(d->chrecs[0].version, d1);
		ts__tomb saved = d->chrecs[0];
		if (k == 0)
			d->chrecs[0].tmin = d->chrecs[0].tmax + 1;
		else if (k == 1)
			d->chrecs[0].version = head + 8;
		assert_int_equal(ts__descriptor_write(dir, d), 0);
		ts_test_env_open(e);
		struct problems p = {0};
		ts_check_opts o = {.problem = on_problem, .arg = &p};
		int max = ts__chrecs_max;
		if (k == 2)
			ts__chrecs_max = 0;
		assert_int_equal(ts_check(e->db, NULL, &o), TS_ECORRUPT);
		ts__chrecs_max = max;
		assert_int_equal(p.n, 1);
		char want[300];
		if (k == 0)
			snprintf(want, sizeof want, "change record 0 (version %" PRIu64 "): its time range "
			         "ends before it begins", d1);
		else if (k == 1)
			snprintf(want, sizeof want, "the descriptor's change records reach version %" PRIu64
			         ", newer than the log's newest commit at %" PRIu64, head + 8, head);
		else
			snprintf(want, sizeof want, "1 change records, more than the 0 kept");
		if (!strstr(p.what, want))
			fail_msg("problem %s: %s, want %s", p.file, p.what, want);
		/* put it back */
		ts_test_env_close(e);
		d->chrecs[0] = saved;
		assert_int_equal(ts__descriptor_write(dir, d), 0);
		ts__descriptor_free(d, 1);
		ts_test_env_open(e);
		assert_int_equal(ts_check(e->db, NULL, NULL), 0);
	}
}

/* ---- never misses: random histories against a model ---- */

static uint64_t rng = 0x2545F4914F6CDD1Du;

struct vrow {
	int host;
	int64_t ts;
	uint64_t version;
	uint64_t deleted;  /* the version of the delete that hid it, 0: none */
};

static int tomb_in_force(ts_table *t, uint64_t v)
{
	ts__snapshot s;
	int in = 0;
	assert_int_equal(ts__snapshot_take(t, &s), 0);
	for (int i = 0; i < s.ntombs; i++)
		in |= s.tombs[i].version == v;
	ts__snapshot_release(&s);
	return in;
}

struct got {
	char host[16];
	int64_t from, to;
};

static struct got *collect(ts_table *t, uint64_t since, uint64_t until, int depth, int64_t res,
                           int *n)
{
	ts_changes_spec spec = {since, until, res, depth};
	ts_cursor *c;
	const ts_value *row;
	int k, cap = 64;
	struct got *g = malloc((size_t)cap * sizeof *g);
	assert_non_null(g);
	*n = 0;
	if (ts_changes_open(t, &spec, &c) != 0)
		fail_msg("ts_changes_open: %s", ts_errmsg(NULL));
	while (ts_cursor_next(c, &row, &k) == 0 && row) {
		if (*n == cap) {
			cap *= 2;
			g = realloc(g, (size_t)cap * sizeof *g);
			assert_non_null(g);
		}
		struct got *x = &g[(*n)++];
		if (depth && row[0].type == TS_NONE) /* the wildcard: every host */
			snprintf(x->host, sizeof x->host, "*");
		else
			snprintf(x->host, sizeof x->host, "%.*s", depth ? (int)row[0].v.s.len : 0,
			         depth ? (const char *)row[0].v.s.ptr : "");
		x->from = row[depth].v.i;
		x->to = row[depth + 1].v.i;
		if (*n > 1) { /* sorted by prefix, then window; disjoint */
			struct got *p = &g[*n - 2];
			int d = strcmp(p->host, x->host);
			assert_true(d < 0 || (d == 0 && p->to <= x->from));
		}
	}
	ts_cursor_close(c);
	return g;
}

/* Delete the rows of hosts "h<lo>" to "h<hi>" (a key range of several
 * prefixes) with ts in [from, to]; returns the delete's version. */
static uint64_t delete_hosts(ts_table *t, int lo, int hi, int64_t from, int64_t to)
{
	char a[8], b[8];
	snprintf(a, sizeof a, "h%d", lo);
	snprintf(b, sizeof b, "h%d", hi);
	ts_value lower = ts_string(a), upper = ts_string(b);
	ts_query q = {.lower = &lower, .nlower = 1, .upper = &upper, .nupper = 1,
	              .from = from, .to = to, .has_from = 1, .has_to = 1, .to_inclusive = 1};
	uint64_t deleted, version = 0;
	if (ts_delete(t, &q, &deleted, &version) != 0)
		fail_msg("ts_delete: %s", ts_errmsg(NULL));
	return version;
}

/*
 * Random inserts into five hosts (late rows among them), deletes of a
 * host's time window or of several hosts', flushes, merges, purges of a
 * host or of the table, clock moves (roll-overs) and reopens, with at
 * most 4 change records kept (so that the horizon moves); now and then,
 * for random since and until (versions of the table, and numbers
 * between them), depth 0 or 1 and resolution 0, 10 min or 1 h, every
 * live row committed in (since, until] lies in a reported window of its
 * prefix (or of the wildcard), and so does every row hidden by a delete
 * in (since, until] -- whether its tombstone is in force, spent or
 * purged.  (A deleted row's insert is not required: a flush may have
 * left it out.)  Without the change records, or without the horizon,
 * it fails.
 */
static void never_misses(void **state)
{
	ts_test_env *e = *state;
	size_t nrows = 0, cap = 1024;
	struct vrow *rows = malloc(cap * sizeof *rows);
	uint64_t versions[2048];
	int nversions = 0, serial = 0, checks = 0;
	assert_non_null(rows);
	int saved = ts__chrecs_max;
	ts__chrecs_max = 4;
	for (int step = 0; step < 700; step++) {
		uint64_t r = ts_test_xorshift(&rng) % 100;
		if (r < 55) {
			char h[8];
			int host = (int)(ts_test_xorshift(&rng) % 5), n = 1 + (int)(ts_test_xorshift(&rng) % 30);
			int64_t back = (int64_t)(ts_test_xorshift(&rng) % (uint64_t)(r < 40 ? 4 * HOUR : 48 * HOUR));
			int64_t from = e->now - back - n * SEC - (serial++ % 1000000) * 1000;
			snprintf(h, sizeof h, "h%d", host);
			uint64_t v = insert(e, h, n, from);
			versions[nversions++] = v;
			for (int i = 0; i < n; i++) {
				if (nrows == cap) {
					cap *= 2;
					rows = realloc(rows, cap * sizeof *rows);
					assert_non_null(rows);
				}
				rows[nrows++] = (struct vrow){host, from + i * SEC, v, 0};
			}
		} else if (r < 67) {
			assert_int_equal(ts_flush(e->t, INT64_MAX), 0);
		} else if (r < 75) {
			assert_int_equal(ts_flush(e->t, e->now - (int64_t)(ts_test_xorshift(&rng) % (uint64_t)(48 * HOUR))), 0);
		} else if (r < 82) {
			assert_int_equal(ts_merge(e->t, NULL), 0);
		} else if (r < 85) { /* a purge of the table or of a host */
			char h[8];
			snprintf(h, sizeof h, "h%d", (int)(ts_test_xorshift(&rng) % 5));
			ts_value p = ts_string(h);
			ts_query q = {.prefix = &p, .nprefix = 1};
			uint64_t pv = 0;
			assert_int_equal(ts_purge(e->t, r == 82 ? NULL : &q, &pv), 0);
			versions[nversions++] = pv;
		} else if (r < 95) {
			ts_test_env_set_now(e, e->now + (int64_t)(ts_test_xorshift(&rng) % (uint64_t)(6 * HOUR)));
		} else if (r < 97) {
			ts_test_env_reopen(e);
		} else { /* a host's window of up to 2 h, up to 48 h back, or
			  * that of hosts host..host2 */
			int host = (int)(ts_test_xorshift(&rng) % 5), host2 = host;
			int64_t a = e->now - (int64_t)(ts_test_xorshift(&rng) % (uint64_t)(48 * HOUR));
			int64_t b = a + (int64_t)(ts_test_xorshift(&rng) % (uint64_t)(2 * HOUR));
			char h[8];
			snprintf(h, sizeof h, "h%d", host);
			uint64_t dv;
			if (r == 99) {
				host2 = host + (int)(ts_test_xorshift(&rng) % (uint64_t)(5 - host));
				dv = delete_hosts(e->t, host, host2, a, b);
			} else {
				dv = delete_rows(e->t, h, a, b);
			}
			versions[nversions++] = dv;
			for (size_t i = 0; i < nrows; i++)
				if (rows[i].host >= host && rows[i].host <= host2 && !rows[i].deleted &&
				    rows[i].ts >= a && rows[i].ts <= b)
					rows[i].deleted = dv;
		}
		if (step % 7 != 6 || !nversions)
			continue;
		for (int q = 0; q < 4; q++, checks++) {
			/* any version, a recent one (in the trees), or 0 */
			uint64_t pick = ts_test_xorshift(&rng) % 4, recent = nversions < 8 ? (uint64_t)nversions : 8;
			uint64_t since = pick == 0 ? 0
			                 : pick == 1 ? versions[ts_test_xorshift(&rng) % (uint64_t)nversions]
			                             : versions[nversions - 1 - (int)(ts_test_xorshift(&rng) % recent)];
			uint64_t until = 0;
			if (ts_test_xorshift(&rng) % 4 == 0)
				since += 1 + ts_test_xorshift(&rng) % 3000; /* between versions */
			if (ts_test_xorshift(&rng) % 3 == 0) {
				until = versions[ts_test_xorshift(&rng) % (uint64_t)nversions];
				if (until < since)
					until = since;
			}
			int depth = (int)(ts_test_xorshift(&rng) % 2), ng;
			static const int64_t res_of[] = {0, 10 * MIN, HOUR};
			int64_t res = res_of[ts_test_xorshift(&rng) % 3];
			struct got *g = collect(e->t, since, until, depth, res, &ng);
			for (size_t i = 0; i < nrows; i++) {
				const struct vrow *x = &rows[i];
				uint64_t v = x->deleted ? x->deleted : x->version;
				if (v <= since || (until && v > until))
					continue;
				char h[8];
				snprintf(h, sizeof h, "%s%d", depth ? "h" : "", x->host);
				if (!depth)
					h[0] = 0;
				int found = 0;
				for (int k = 0; k < ng && !found; k++)
					found = (strcmp(g[k].host, h) == 0 || strcmp(g[k].host, "*") == 0) &&
					        g[k].from <= x->ts && x->ts < g[k].to;
				if (!found)
					fail_msg("step %d: host h%d ts %" PRId64 " version %" PRIu64
					         " (deleted %" PRIu64 ") not reported for since %" PRIu64
					         " until %" PRIu64 " depth %d res %" PRId64, step, x->host, x->ts,
					         x->version, x->deleted, since, until, depth, res);
			}
			free(g);
		}
	}
	ts__chrecs_max = saved;
	assert_true(checks > 300);
	assert_true(ts_test_stat(e->t, "changes_horizon") > 0);
	assert_int_equal(ts_check(e->db, NULL, NULL), 0);
	free(rows);
}

/* ---- the time of an answer ---- */

static double ms_since(const struct timespec *a)
{
	struct timespec b;
	clock_gettime(CLOCK_MONOTONIC, &b);
	return (double)(b.tv_sec - a->tv_sec) * 1e3 + (double)(b.tv_nsec - a->tv_nsec) / 1e6;
}

/* Run changes since `since` over e's table `reps` times; the best time. */
static double time_changes(ts_test_env *e, uint64_t since, int depth, int64_t res, int *rows)
{
	double best = 1e9;
	for (int rep = 0; rep < 20; rep++) {
		struct timespec t0;
		ts_changes_spec spec = {since, 0, res, depth};
		ts_cursor *c;
		const ts_value *row;
		int n;
		clock_gettime(CLOCK_MONOTONIC, &t0);
		assert_int_equal(ts_changes_open(e->t, &spec, &c), 0);
		*rows = 0;
		while (ts_cursor_next(c, &row, &n) == 0 && row)
			++*rows;
		ts_cursor_close(c);
		double ms = ms_since(&t0);
		best = ms < best ? ms : best;
	}
	return best;
}

/*
 * A day of 1000 hosts, a row a minute each (1.44 million rows), flushed
 * and merged into yesterday's day tablet, then the last minute of rows
 * in the filling tree: the time of changes since the version before the
 * day (every host's day), since the day (the last minute), printed.
 */
static void day_of_1000_hosts(void **state)
{
	ts_test_env *e = *state;
	enum { HOSTS = 1000, PER_BATCH = 100 };
	int64_t day = DAY0 - 24 * HOUR; /* yesterday */
	ts_value *vals = calloc(HOSTS * 4, sizeof *vals);
	char (*names)[16] = calloc(HOSTS, sizeof *names);
	uint64_t v0 = 0, v1 = 0;
	size_t ignored;
	struct timespec t0;
	assert_non_null(vals);
	assert_non_null(names);
	assert_int_equal(ts_table_version(e->t, &v0), 0);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (int h = 0; h < HOSTS; h++)
		snprintf(names[h], sizeof names[h], "host%04d", h);
	for (int64_t m = 0; m < 1440; m++) {
		for (int h0 = 0; h0 < HOSTS; h0 += PER_BATCH) {
			for (int h = h0; h < h0 + PER_BATCH; h++) {
				ts_value *v = vals + 4 * (h - h0);
				v[0] = ts_string(names[h]);
				v[1] = ts_timestamp(day + m * MIN);
				v[2] = ts_int64(m);
				v[3] = ts_int64(h);
			}
			assert_int_equal(ts_insert_versioned(e->t, 0, vals, PER_BATCH, &ignored, &v1), 0);
		}
		if (m % 240 == 239)
			assert_int_equal(ts_flush(e->t, INT64_MAX), 0);
	}
	assert_int_equal(ts_flush(e->t, INT64_MAX), 0);
	assert_int_equal(ts_merge(e->t, NULL), 0);
	double load = ms_since(&t0);
	for (int h = 0; h < HOSTS; h++) { /* the last minute, in the filling tree */
		vals[4 * h] = ts_string(names[h]);
		vals[4 * h + 1] = ts_timestamp(NOW - MIN);
		vals[4 * h + 2] = ts_int64(0);
		vals[4 * h + 3] = ts_int64(h);
	}
	assert_int_equal(ts_insert_versioned(e->t, 0, vals, HOSTS, &ignored, NULL), 0);
	ts__snapshot s;
	uint32_t blocks = 0;
	assert_int_equal(ts__snapshot_take(e->t, &s), 0);
	for (int i = 0; i < s.ntablets; i++)
		blocks += s.tablets[i]->nblocks;
	int ntab = s.ntablets;
	ts__snapshot_release(&s);
	int rows_day, rows_hour, rows_min, rows_all;
	double day_ms = time_changes(e, v0, 1, 0, &rows_day);
	double hour_ms = time_changes(e, v0, 1, HOUR, &rows_hour);
	double all_ms = time_changes(e, v0, 0, 0, &rows_all);
	double min_ms = time_changes(e, v1, 1, 0, &rows_min);
	printf("changes over a day of %d hosts (%d tablets, %u blocks; loaded in %.0f ms):\n"
	       "  since before the day, depth 1, resolution 0:  %.3f ms, %d rows\n"
	       "  since before the day, depth 1, resolution 1h: %.3f ms, %d rows\n"
	       "  since before the day, depth 0:                %.3f ms, %d rows\n"
	       "  since the day (last minute, in the tree):     %.3f ms, %d rows\n",
	       HOSTS, ntab, blocks, load, day_ms, rows_day, hour_ms, rows_hour, all_ms, rows_all,
	       min_ms, rows_min);
	assert_int_equal(rows_day, 2 * HOSTS); /* the day, and the last minute */
	assert_int_equal(rows_min, HOSTS);
	/* today's morning, four hours in the filling tree (240000 rows) */
	for (int64_t m = 0; m < 240; m++)
		for (int h0 = 0; h0 < HOSTS; h0 += PER_BATCH) {
			for (int h = h0; h < h0 + PER_BATCH; h++) {
				ts_value *v = vals + 4 * (h - h0);
				v[0] = ts_string(names[h]);
				v[1] = ts_timestamp(DAY0 + 4 * HOUR + m * MIN);
				v[2] = ts_int64(m);
				v[3] = ts_int64(h);
			}
			assert_int_equal(ts_insert_versioned(e->t, 0, vals, PER_BATCH, &ignored, NULL), 0);
		}
	int rows_tree, rows_tree_hour;
	double tree_ms = time_changes(e, v1, 1, 0, &rows_tree);
	double tree_hour_ms = time_changes(e, v1, 1, HOUR, &rows_tree_hour);
	printf("  since the day, 4 hours of 1000 hosts in the tree, resolution 0:  %.3f ms, %d rows\n"
	       "  since the day, 4 hours of 1000 hosts in the tree, resolution 1h: %.3f ms, %d rows\n",
	       tree_ms, rows_tree, tree_hour_ms, rows_tree_hour);
	free(vals);
	free(names);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(arguments_checked, setup, ts_test_env_teardown),
		cmocka_unit_test_setup_teardown(trees, setup, ts_test_env_teardown),
		cmocka_unit_test_setup_teardown(flushed, setup, ts_test_env_teardown),
		cmocka_unit_test_setup_teardown(merged_reports_new_blocks_only, setup,
		                                ts_test_env_teardown),
		cmocka_unit_test_setup_teardown(blocks_of_many_prefixes, setup, ts_test_env_teardown),
		cmocka_unit_test_setup_teardown(reopen, setup, ts_test_env_teardown),
		cmocka_unit_test_setup_teardown(roll_over, setup, ts_test_env_teardown),
		cmocka_unit_test_setup_teardown(depth_two, setup, ts_test_env_teardown),
		cmocka_unit_test_setup_teardown(format2_tablets, setup, ts_test_env_teardown),
		cmocka_unit_test_setup_teardown(unversioned_tablets, setup, ts_test_env_teardown),
		cmocka_unit_test_setup_teardown(check_bounds_block_hi, setup, ts_test_env_teardown),
		cmocka_unit_test_setup_teardown(check_change_records, setup, ts_test_env_teardown),
		cmocka_unit_test_setup_teardown(deletes, setup, ts_test_env_teardown),
		cmocka_unit_test_setup_teardown(horizon, setup, ts_test_env_teardown),
		cmocka_unit_test_setup_teardown(purge_keeps_block_hi, setup, ts_test_env_teardown),
		cmocka_unit_test_setup_teardown(never_misses, setup, ts_test_env_teardown),
		cmocka_unit_test_setup_teardown(day_of_1000_hosts, setup, ts_test_env_teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
