/*
 * test_versions.c -- versions (docs/corrections.md section 1): a table's
 * version (the LSN of its newest commit) as inserts, ts_table_version and
 * the stat "version" give it, growing with each commit and surviving a
 * reopen; the version interval [lo, hi] of each tablet, as a flush and a
 * merge record it in the DESCRIPTOR; merges taking their runs in version
 * order where min_ts order would differ; descriptors written without
 * intervals (format version 3 here) read as before; and ts_check finding
 * forged breaches of invariant V.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "buf.h"
#include "descriptor.h"
#include "descriptor_format.h"
#include "flush.h"
#include "maint.h"
#include "merge.h"
#include "snapshot.h"
#include "support.h"

#define NOW INT64_C(1795262400000000000) /* 2026-11-21T12:00:00Z */
#define SEC INT64_C(1000000000)
#define HOUR (3600 * SEC)

/* Merges and flushes happen when a test says so. */
static int setup(void **state)
{
	*state = ts_test_env_new_held(NOW);
	return 0;
}

/* Insert n rows of host h at ts from, from + 1 s, ... (batch b) into e's
 * table and the model m (may be NULL); returns the version the insert
 * answered, after checking it against ts_table_version and the stat. */
static uint64_t insert(ts_test_env *e, ts_test_model *m, const char *h, int n, int64_t from,
                       int64_t b)
{
	ts_value *vals = calloc((size_t)n * 4, sizeof *vals);
	test_row *rows = calloc((size_t)n, sizeof *rows);
	uint64_t version = 0, now = 0;
	size_t ignored = 1;
	assert_non_null(vals);
	assert_non_null(rows);
	for (int i = 0; i < n; i++) {
		snprintf(rows[i].host, sizeof rows[i].host, "%s", h);
		rows[i].ts = from + i * SEC;
		rows[i].batch = b;
		rows[i].v = i;
		vals[4 * i] = ts_string(rows[i].host);
		vals[4 * i + 1] = ts_timestamp(rows[i].ts);
		vals[4 * i + 2] = ts_int64(b);
		vals[4 * i + 3] = ts_int64(i);
	}
	if (ts_insert_versioned(e->t, 0, vals, (size_t)n, &ignored, &version) != 0)
		fail_msg("insert: %s", ts_errmsg(NULL));
	assert_int_equal(ignored, 0);
	assert_int_equal(ts_table_version(e->t, &now), 0);
	assert_int_equal(now, version);
	assert_int_equal(ts_test_stat(e->t, "version"), (int64_t)version);
	if (m)
		ts_test_model_add(m, rows, (size_t)n);
	free(vals);
	free(rows);
	return version;
}

static uint64_t version_of(ts_test_env *e)
{
	uint64_t v = 0;
	assert_int_equal(ts_table_version(e->t, &v), 0);
	return v;
}

/* The descriptor's tablets (a copy), oldest version first as merges
 * order them: by hi, then id. */
static int by_hi(const void *a, const void *b)
{
	const ts__tablet_meta *x = a, *y = b;
	if (x->hi != y->hi)
		return x->hi < y->hi ? -1 : 1;
	return x->id < y->id ? -1 : x->id > y->id;
}

static int tablets(ts_test_env *e, ts__tablet_meta **out)
{
	ts__snapshot s;
	assert_int_equal(ts__snapshot_take(e->t, &s), 0);
	int n = s.ntablets;
	*out = malloc((size_t)(n ? n : 1) * sizeof **out);
	assert_non_null(*out);
	memcpy(*out, s.metas, (size_t)n * sizeof **out);
	ts__snapshot_release(&s);
	qsort(*out, (size_t)n, sizeof **out, by_hi);
	return n;
}

/* The born LSN of the one filling tree holding rows now. */
static uint64_t tree_born(ts_test_env *e)
{
	ts__snapshot s;
	assert_int_equal(ts__snapshot_take(e->t, &s), 0);
	assert_int_equal(s.nroots, 1);
	uint64_t born = s.roots[0].born;
	ts__snapshot_release(&s);
	return born;
}

/* ---- the table's version ---- */

/* 0 before any commit; each batch's commit is greater than the last;
 * a batch of duplicates alone answers the version then; a flush commits
 * (freeze, then drop) and so moves it; a reopen keeps it. */
static void versions_grow_and_survive_reopen(void **state)
{
	ts_test_env *e = *state;
	assert_int_equal(version_of(e), 0);
	assert_int_equal(ts_test_stat(e->t, "version"), 0);
	uint64_t v1 = insert(e, NULL, "a", 3, NOW - HOUR, 1);
	assert_true(v1 > 0);
	uint64_t v2 = insert(e, NULL, "b", 3, NOW - HOUR, 2);
	assert_true(v2 > v1);
	/* under ignore, a batch of duplicates alone commits nothing */
	assert_int_equal(ts_alter_on_duplicate(e->t, TS_ON_DUPLICATE_IGNORE), 0);
	ts_value dup[4] = {ts_string("a"), ts_timestamp(NOW - HOUR), ts_int64(1), ts_int64(0)};
	size_t ignored = 0;
	uint64_t v = 0;
	assert_int_equal(ts_insert_versioned(e->t, 0, dup, 1, &ignored, &v), 0);
	assert_int_equal(ignored, 1);
	assert_int_equal(v, v2);
	assert_int_equal(ts_insert_versioned(e->t, 0, dup, 0, NULL, &v), 0); /* no rows */
	assert_int_equal(v, v2);
	/* NULL out-parameters are allowed; a bad insert answers 0 */
	assert_int_equal(ts_insert_versioned(e->t, 0, dup, 1, NULL, NULL), 0);
	ts_value bad[4] = {ts_int64(1), ts_timestamp(NOW - HOUR), ts_int64(1), ts_int64(0)};
	v = 7;
	assert_int_equal(ts_insert_versioned(e->t, 0, bad, 1, NULL, &v), TS_ETYPE);
	assert_int_equal(v, 0);
	assert_int_equal(ts_table_version(e->t, NULL), TS_EINVAL);
	assert_int_equal(version_of(e), v2);
	ts_test_env_reopen(e);
	assert_int_equal(version_of(e), v2);
	uint64_t v3 = insert(e, NULL, "c", 3, NOW - HOUR, 3);
	assert_true(v3 > v2);
	assert_int_equal(ts_flush(e->t, INT64_MAX), 0);
	uint64_t flushed = version_of(e);
	assert_true(flushed > v3);
	ts_test_env_reopen(e); /* the log is all released: its head commit stays */
	assert_int_equal(version_of(e), flushed);
	assert_true(insert(e, NULL, "d", 1, NOW - HOUR, 4) > flushed);
	/* a read-only handle sees the writer's version */
	ts_test_env_close(e);
	e->flags |= TS_OPEN_READONLY;
	ts_test_env_open(e);
	assert_true(version_of(e) > flushed);
	assert_int_equal(ts_test_stat(e->t, "version"), (int64_t)version_of(e));
}

/* ---- the intervals of tablets ---- */

/* A flushed tablet covers [its tree's born, the commit that last added
 * rows to the tree]: not the freezing commit, which comes after (and
 * after which a tree of the same period is born); the source is the
 * born; the DESCRIPTOR is format version 4 from then on. */
static void flush_records_tree_interval(void **state)
{
	ts_test_env *e = *state;
	uint64_t v1 = insert(e, NULL, "a", 5, NOW - 3 * HOUR, 1);
	uint64_t born = tree_born(e);
	assert_true(born > 0 && born < v1);
	uint64_t v2 = insert(e, NULL, "b", 5, NOW - 3 * HOUR, 2);
	assert_int_equal(tree_born(e), born);
	assert_int_equal(ts_flush(e->t, INT64_MAX), 0);
	ts__tablet_meta *t;
	assert_int_equal(tablets(e, &t), 1);
	assert_int_equal(t[0].lo, born);
	assert_int_equal(t[0].hi, v2);
	assert_int_equal(t[0].source, born);
	assert_true(version_of(e) > v2); /* the flush's own commits */
	free(t);
	/* a new tree of the period is born after the tablet's hi */
	uint64_t v3 = insert(e, NULL, "c", 5, NOW - 3 * HOUR, 3);
	uint64_t born2 = tree_born(e);
	assert_true(born2 > v2 && born2 < v3);
	/* the same after a reopen: the tree's last commit is found in the log */
	ts_test_env_reopen(e);
	assert_int_equal(ts_flush(e->t, INT64_MAX), 0);
	assert_int_equal(tablets(e, &t), 2);
	assert_int_equal(t[1].lo, born2);
	assert_int_equal(t[1].hi, v3);
	free(t);
	ts_test_env_close(e);
	ts_buf b;
	char dir[4200];
	snprintf(dir, sizeof dir, "%s/m", e->dir);
	ts__descriptor *d;
	assert_int_equal(ts__descriptor_read(dir, &d), 0);
	assert_int_equal(d->ntablets, 2);
	ts__buf_init(&b);
	assert_int_equal(ts__descriptor_encode(d, &b), 0);
	assert_int_equal(ts__load_u32(b.data + TS_DESC_OFF_VERSION), 4);
	ts__buf_free(&b);
	ts__descriptor_free(d, 1);
	ts_test_env_open(e);
	assert_int_equal(ts_check(e->db, NULL, NULL), 0);
}

/* Trees of two periods flushed together: each tablet gets its own tree's
 * interval, and they are published oldest version first (ids in that
 * order). */
static void flush_of_two_trees(void **state)
{
	ts_test_env *e = *state;
	uint64_t a1 = insert(e, NULL, "a", 3, NOW - 6 * HOUR, 1); /* 04-08 */
	uint64_t b1 = insert(e, NULL, "b", 3, NOW - 2 * HOUR, 2); /* 08-12 */
	uint64_t a2 = insert(e, NULL, "a", 3, NOW - 5 * HOUR, 3); /* 04-08 again */
	assert_int_equal(ts_flush(e->t, INT64_MAX), 0);
	ts__tablet_meta *t;
	assert_int_equal(tablets(e, &t), 2);
	assert_int_equal(t[0].hi, b1); /* 08-12's tree last took rows at b1 */
	assert_true(t[0].lo > a1 && t[0].lo < b1);
	assert_true(t[0].min_ts >= NOW - 4 * HOUR);
	assert_int_equal(t[1].hi, a2);
	assert_true(t[1].lo < a1);
	assert_true(t[0].id < t[1].id);
	free(t);
	/* the intervals overlap, the timespans do not: V holds */
	assert_int_equal(ts_check(e->db, NULL, NULL), 0);
}

/* A merge's output covers the union of its inputs' intervals. */
static void merge_interval_is_union(void **state)
{
	ts_test_env *e = *state;
	ts_test_model m = {0};
	uint64_t lo = 0, hi = 0;
	for (int b = 1; b <= 3; b++) {
		insert(e, &m, "h", 20, NOW - 3 * HOUR + b * 60 * SEC, b);
		if (b == 1)
			lo = tree_born(e);
		hi = insert(e, &m, "g", 20, NOW - 3 * HOUR + b * 60 * SEC, b);
		assert_int_equal(ts_flush(e->t, INT64_MAX), 0);
	}
	ts__tablet_meta *t;
	assert_int_equal(tablets(e, &t), 3);
	assert_int_equal(t[0].lo, lo);
	assert_int_equal(t[2].hi, hi);
	free(t);
	int merged = 0;
	assert_int_equal(ts_merge(e->t, &merged), 0);
	assert_int_equal(merged, 1);
	assert_int_equal(tablets(e, &t), 1);
	assert_int_equal(t[0].lo, lo);
	assert_int_equal(t[0].hi, hi);
	assert_int_equal(t[0].source, 0);
	free(t);
	ts_test_expect_model(e->t, &m, INT64_MIN);
	assert_int_equal(ts_check(e->db, NULL, NULL), 0);
	ts_test_env_reopen(e);
	assert_int_equal(tablets(e, &t), 1);
	assert_int_equal(t[0].lo, lo);
	assert_int_equal(t[0].hi, hi);
	free(t);
	free(m.rows);
}

/*
 * Where min_ts order and version order differ.  Tablets of one period,
 * in flush (version) order: A, 2000 rows of 09:00-09:33; B, 100 rows of
 * 10:00; C, 100 late rows of 08:00 (the smallest min_ts, the newest
 * version).  In min_ts order (C, A, B) LittleTable's rule would merge
 * C with A (100 <= 2 * 2000) and then B: C and A around B, whose versions
 * the output would then claim.  In version order (A, B, C) A is too large
 * for B (2000 > 2 * 100), so the run is B, C, consecutive: the output
 * covers [B.lo, C.hi], A keeps its own interval, and they are disjoint.
 */
static void merge_runs_in_version_order(void **state)
{
	ts_test_env *e = *state;
	ts_test_model m = {0};
	for (int i = 0; i < 4; i++)
		insert(e, &m, "a", 500, NOW - 3 * HOUR + i * 500 * SEC, 1 + i);
	assert_int_equal(ts_flush(e->t, INT64_MAX), 0);
	insert(e, &m, "b", 100, NOW - 2 * HOUR, 5);
	assert_int_equal(ts_flush(e->t, INT64_MAX), 0);
	insert(e, &m, "c", 100, NOW - 4 * HOUR, 6);
	assert_int_equal(ts_flush(e->t, INT64_MAX), 0);
	ts__tablet_meta *t;
	assert_int_equal(tablets(e, &t), 3);
	ts__tablet_meta a = t[0], b = t[1], c = t[2];
	free(t);
	assert_true(c.min_ts < a.min_ts && a.min_ts < b.min_ts); /* min_ts order: C, A, B */
	assert_true(a.hi < b.lo && b.hi < c.lo);                  /* versions: A, B, C */
	assert_true(a.bytes > 2 * b.bytes && b.bytes <= 2 * c.bytes && c.bytes <= 2 * a.bytes);
	int merged = 0;
	assert_int_equal(ts_merge(e->t, &merged), 0);
	assert_int_equal(merged, 1);
	assert_int_equal(tablets(e, &t), 2);
	assert_int_equal(t[0].id, a.id); /* A untouched */
	assert_int_equal(t[0].lo, a.lo);
	assert_int_equal(t[0].hi, a.hi);
	assert_int_equal(t[1].lo, b.lo); /* B and C merged */
	assert_int_equal(t[1].hi, c.hi);
	assert_int_equal(t[1].rows, 200);
	assert_true(t[0].hi < t[1].lo);
	free(t);
	ts_test_expect_model(e->t, &m, INT64_MIN);
	assert_int_equal(ts_check(e->db, NULL, NULL), 0);
	free(m.rows);
}

/*
 * Trees of two of today's 4-hour periods fill side by side, so their
 * tablets interleave in versions: D (08-12, many rows) is flushed by size
 * while A (04-08, one row) fills on; A takes a row after D's flush, so
 * D's interval lies inside A's; then B (08-12 again) and A are flushed.
 * Tomorrow the three share the day period.  In version order (D, A, B)
 * the rule picks A and B (D is too large for A); their union would hold
 * D's versions and share D's time (08-12), so the group grows to take D
 * in: one merge of all three -- or none, when that passes merge_max_size.
 */
static void interleaved_periods(ts_test_env *e, ts__tablet_meta *t)
{
	e->flush_size = 16 * 1024;
	ts_test_env_reopen(e);
	insert(e, NULL, "a", 1, NOW - 7 * HOUR, 1);         /* 05:00, tree A */
	for (int i = 0; i < 10; i++)                        /* 09:00.., tree D */
		insert(e, NULL, "d", 100, NOW - 3 * HOUR + i * 100 * SEC, 2 + i);
	assert_int_equal(ts__flush_due(e->t), 0);
	assert_int_equal(ts_test_stat(e->t, "tablets"), 1); /* D alone */
	insert(e, NULL, "a", 1, NOW - 7 * HOUR + 60 * SEC, 20);
	insert(e, NULL, "b", 1, NOW - 2 * HOUR, 21);         /* 10:00, tree B */
	assert_int_equal(ts_flush(e->t, INT64_MAX), 0);
	ts__tablet_meta *all;
	assert_int_equal(tablets(e, &all), 3);
	memcpy(t, all, 3 * sizeof *t);
	free(all);
	assert_true(t[0].rows == 1000 && t[1].rows == 2 && t[2].rows == 1); /* D, A, B */
	assert_true(t[1].lo < t[0].lo && t[0].hi < t[1].hi && t[1].hi < t[2].lo);
	assert_int_equal(ts_check(e->db, NULL, NULL), 0);
	ts_test_env_set_now(e, NOW + 24 * HOUR); /* tomorrow: one day period */
}

static void merge_grows_group_over_interleaved_periods(void **state)
{
	ts_test_env *e = *state;
	ts__tablet_meta t[3], *out;
	interleaved_periods(e, t);
	int merged = 0;
	assert_int_equal(ts_merge(e->t, &merged), 0);
	assert_int_equal(merged, 1);
	assert_int_equal(tablets(e, &out), 1);
	assert_int_equal(out[0].rows, 1003);
	assert_int_equal(out[0].lo, t[1].lo);
	assert_int_equal(out[0].hi, t[2].hi);
	free(out);
	assert_int_equal(ts_check(e->db, NULL, NULL), 0);
}

static void merge_skips_group_that_cannot_grow(void **state)
{
	ts_test_env *e = *state;
	ts__tablet_meta t[3], *out;
	interleaved_periods(e, t);
	e->merge_max_size = (int64_t)(t[1].bytes + t[2].bytes + t[0].bytes / 2);
	ts_test_env_reopen(e);
	int merged = 1;
	assert_int_equal(ts_merge(e->t, &merged), 0);
	assert_int_equal(merged, 0);
	assert_int_equal(tablets(e, &out), 3);
	free(out);
	assert_int_equal(ts_check(e->db, NULL, NULL), 0);
}

/* A flush of the trees before an instant takes with them the older trees
 * of periods that meet theirs: yesterday's 20-24 tree, still filling after
 * midnight, is flushed with the day tree that a late row of yesterday
 * began, though its rows are after the instant -- else the day tree's
 * newer rows would be on disk with the older tree still in the log. */
static void flush_takes_older_trees_of_meeting_periods(void **state)
{
	ts_test_env *e = *state;
	ts_test_env_set_now(e, NOW + 11 * HOUR);       /* 23:00 */
	insert(e, NULL, "a", 3, NOW + 10 * HOUR, 1);    /* 22:00: a 4-hour tree */
	ts_test_env_set_now(e, NOW + 12 * HOUR + 60 * SEC); /* 00:01 the next day */
	insert(e, NULL, "b", 3, NOW - 2 * HOUR, 2);     /* 10:00 that day: the day tree */
	assert_int_equal(ts_test_stat(e->t, "filling_tablets"), 2);
	assert_int_equal(ts_flush(e->t, NOW), 0);        /* the day tree's rows only */
	assert_int_equal(ts_test_stat(e->t, "filling_tablets"), 0);
	assert_int_equal(ts_test_stat(e->t, "tablets"), 2);
	assert_int_equal(ts_check(e->db, NULL, NULL), 0);
	/* a tree of a period that does not meet stays */
	insert(e, NULL, "c", 3, NOW + 12 * HOUR, 3);    /* 00:00, today's 00-04 */
	insert(e, NULL, "d", 3, NOW - 2 * HOUR + SEC * 10, 4); /* yesterday's day */
	assert_int_equal(ts_flush(e->t, NOW), 0);
	assert_int_equal(ts_test_stat(e->t, "filling_tablets"), 1);
	assert_int_equal(ts_check(e->db, NULL, NULL), 0);
}

static void check_ok(ts_test_env *e, int step, const char *what);

/* The v of the row of host h at ts (a query), or -1 when there is none. */
static int64_t value_at(ts_test_env *e, const char *h, int64_t ts)
{
	ts_value key[] = {ts_string(h), ts_timestamp(ts)};
	ts_query q = {.prefix = key, .nprefix = 2};
	ts_cursor *c;
	const ts_value *v;
	int n;
	int64_t x = -1;
	assert_int_equal(ts_query_open(e->t, &q, &c), 0);
	assert_int_equal(ts_cursor_next(c, &v, &n), 0);
	if (v)
		x = v[3].v.i;
	ts_cursor_close(c);
	return x;
}

/* A period that grows over a newer tree: last week's tree (begun first,
 * holding an older day) and a day tree begun after it; once the clock
 * makes that day older than the recent days, its rows go to the week's
 * period -- not into the week's tree, which would then hold rows newer
 * than the day tree's under the same keys while begun before it (neither
 * newer: invariant V), but into the period's next tree.  The replaced
 * rows read new, before and after the flush, and check finds nothing.
 * A tree that takes no more rows for this reason is still searched for
 * the row's key (a duplicate under reject). */
static void period_growing_over_a_newer_tree(void **state)
{
	ts_test_env *e = *state;
	int64_t week_start = NOW - 9 * 24 * HOUR - 12 * HOUR; /* 11-12 00:00 */
	int64_t day = NOW - 6 * 24 * HOUR;                     /* 11-15 12:00 */
	insert(e, NULL, "a", 3, week_start, 1);                /* the week's tree */
	insert(e, NULL, "b", 3, day, 2);                       /* 11-15's day tree */
	assert_int_equal(ts_test_stat(e->t, "filling_tablets"), 2);
	ts_test_env_set_now(e, NOW + 2 * 24 * HOUR); /* 11-15 is in the week's period now */
	/* one batch: a row the week's tree may take, then one it may not --
	 * the batch is made again with the week's tree frozen from its start */
	ts_value row[] = {ts_string("a"), ts_timestamp(week_start + HOUR), ts_int64(3), ts_int64(50),
	                  ts_string("b"), ts_timestamp(day), ts_int64(3), ts_int64(100)};
	size_t ignored = 0;
	uint64_t version = 0;
	assert_int_equal(ts_insert_policy(e->t, 0, TS_ON_DUPLICATE_REPLACE, row, 2, &ignored,
	                                  &version), 0);
	assert_int_equal(value_at(e, "b", day), 100);
	assert_int_equal(value_at(e, "a", week_start + HOUR), 50);
	assert_int_equal(ts_test_stat(e->t, "filling_tablets"), 3); /* the week's next tree */
	insert(e, NULL, "a", 1, week_start + 3 * HOUR, 4); /* into that one too */
	assert_int_equal(ts_test_stat(e->t, "filling_tablets"), 3);
	/* Reopened, the trees' last commits are not known: the day tree may
	 * have taken rows after the week's next tree began, whose timespan
	 * meets its own, so that tree takes no more rows -- and a key it
	 * holds is a duplicate all the same (it used to go unsearched) */
	ts_test_env_reopen(e);
	ts_value again[] = {ts_string("a"), ts_timestamp(week_start + 3 * HOUR), ts_int64(5),
	                    ts_int64(7)};
	assert_int_equal(ts_insert(e->t, again, 1), TS_EDUPKEY);
	assert_int_equal(value_at(e, "a", week_start + 3 * HOUR), 0);
	assert_int_equal(ts_flush(e->t, INT64_MAX), 0);
	check_ok(e, 0, "flushed");
	assert_int_equal(value_at(e, "b", day), 100);
	assert_int_equal(value_at(e, "a", week_start + HOUR), 50);
	assert_int_equal(value_at(e, "b", day + SEC), 1);
	int merged;
	assert_int_equal(ts_merge(e->t, &merged), 0);
	check_ok(e, 1, "merged");
	assert_int_equal(value_at(e, "b", day), 100);
}

/* A week's tree begun while a day tree of its week (not yet in its
 * period) still took rows: when the day tree is flushed, the week's tree
 * goes with it, since once the day is in the week's period the week's
 * tree would take its rows and grow over the day's tablet, the two
 * overlapping in versions (neither newer: invariant V).  The flush is
 * the scheduler's, taking the day tree alone by size. */
static void flush_takes_trees_begun_before_the_last_rows(void **state)
{
	ts_test_env *e = *state;
	int64_t week_start = NOW - 9 * 24 * HOUR - 12 * HOUR; /* 11-12 00:00 */
	int64_t day = NOW - 6 * 24 * HOUR;                     /* 11-15 12:00 */
	e->flush_size = 4096;
	ts_test_env_reopen(e);
	insert(e, NULL, "b", 1, day, 1);            /* the day tree begins */
	insert(e, NULL, "a", 1, week_start, 2);     /* the week's tree begins after it */
	insert(e, NULL, "b", 100, day + SEC, 3);    /* the day tree's rows after that */
	assert_int_equal(ts_test_stat(e->t, "filling_tablets"), 2);
	assert_int_equal(ts__flush_due(e->t), 0);   /* the day tree is due (size) */
	assert_int_equal(ts_test_stat(e->t, "filling_tablets"), 0);
	ts_test_env_set_now(e, NOW + 2 * 24 * HOUR); /* 11-15 is in the week's period now */
	ts_value row[] = {ts_string("b"), ts_timestamp(day + SEC), ts_int64(4), ts_int64(999)};
	size_t ignored = 0;
	uint64_t version = 0;
	assert_int_equal(ts_insert_policy(e->t, 0, TS_ON_DUPLICATE_REPLACE, row, 1, &ignored,
	                                  &version), 0);
	assert_int_equal(value_at(e, "b", day + SEC), 999);
	assert_int_equal(ts_flush(e->t, INT64_MAX), 0);
	check_ok(e, 0, "flushed");
	assert_int_equal(value_at(e, "b", day + SEC), 999);
	int merged;
	assert_int_equal(ts_merge(e->t, &merged), 0);
	check_ok(e, 1, "merged");
	assert_int_equal(value_at(e, "b", day + SEC), 999);
	assert_int_equal(value_at(e, "b", day + 2 * SEC), 1);
}

/* ---- descriptors without intervals ---- */

static void table_dir(const ts_test_env *e, char *out, size_t size)
{
	snprintf(out, size, "%s/m", e->dir);
}

/* Rewrite e's (closed) table's DESCRIPTOR through fn. */
static void forge(ts_test_env *e, void (*fn)(ts__descriptor *d, void *arg), void *arg)
{
	char dir[4200];
	ts__descriptor *d;
	table_dir(e, dir, sizeof dir);
	assert_int_equal(ts__descriptor_read(dir, &d), 0);
	fn(d, arg);
	assert_int_equal(ts__descriptor_write(dir, d), 0);
	ts__descriptor_free(d, 1);
}

static void clear_intervals(ts__descriptor *d, void *arg)
{
	(void)arg;
	for (int i = 0; i < d->ntablets; i++)
		d->tablets[i].lo = d->tablets[i].hi = 0;
}

/* A table whose tablets have no intervals (as written before versions
 * existed; its policy ignore makes it format version 3) opens and reads
 * the same; its tablets merge first, as the oldest; new flushes make it
 * version 4; the check passes throughout. */
static void descriptor_v3_still_reads(void **state)
{
	ts_test_env *e = *state;
	ts_test_model m = {0};
	assert_int_equal(ts_alter_on_duplicate(e->t, TS_ON_DUPLICATE_IGNORE), 0);
	insert(e, &m, "a", 50, NOW - 3 * HOUR, 1);
	assert_int_equal(ts_flush(e->t, INT64_MAX), 0);
	insert(e, &m, "b", 50, NOW - 3 * HOUR, 2);
	assert_int_equal(ts_flush(e->t, INT64_MAX), 0);
	insert(e, &m, "c", 10, NOW - 3 * HOUR, 3); /* left in the log */
	assert_int_equal(ts_test_desc_version(e), 4);
	ts_test_env_close(e);
	forge(e, clear_intervals, NULL);
	assert_int_equal(ts_test_desc_version(e), 3);
	ts_test_env_open(e);
	ts_test_expect_model(e->t, &m, INT64_MIN);
	assert_int_equal(ts_check(e->db, NULL, NULL), 0);
	ts__tablet_meta *t;
	assert_int_equal(tablets(e, &t), 2);
	assert_int_equal(t[0].hi, 0);
	assert_int_equal(t[1].lo, 0);
	uint64_t first = t[0].id, second = t[1].id;
	assert_true(first < second);
	free(t);
	/* a third tablet, with versions: the legacy ones stay first */
	insert(e, &m, "d", 10, NOW - 3 * HOUR, 4);
	assert_int_equal(ts_flush(e->t, INT64_MAX), 0);
	assert_int_equal(ts_test_desc_version(e), 4);
	assert_int_equal(tablets(e, &t), 3);
	assert_int_equal(t[0].id, first);
	assert_int_equal(t[1].id, second);
	assert_true(t[2].lo > 0);
	uint64_t hi = t[2].hi;
	free(t);
	assert_int_equal(ts_merge(e->t, NULL), 0);
	assert_int_equal(tablets(e, &t), 1);
	assert_int_equal(t[0].lo, 0); /* legacy rows: from version 0 */
	assert_int_equal(t[0].hi, hi);
	free(t);
	ts_test_expect_model(e->t, &m, INT64_MIN);
	assert_int_equal(ts_check(e->db, NULL, NULL), 0);
	free(m.rows);
}

/* ---- ts_check and invariant V ---- */

struct problems {
	int n;
	char what[8][512];
	char file[8][256];
};

static void on_problem(void *arg, const char *table, const char *file, const char *what)
{
	struct problems *p = arg;
	(void)table;
	if (p->n < 8) {
		snprintf(p->what[p->n], sizeof p->what[0], "%s", what);
		snprintf(p->file[p->n], sizeof p->file[0], "%s", file);
	}
	p->n++;
}

static void overlap_first_two(ts__descriptor *d, void *arg)
{
	(void)arg;
	ts__tablet_meta *x = &d->tablets[0], *y = &d->tablets[1];
	if (x->hi > y->hi) {
		ts__tablet_meta *s = x;
		x = y;
		y = s;
	}
	y->lo = x->hi; /* [x.lo, x.hi] and [x.hi, y.hi] share x.hi */
}

/* Two tablets of one period whose time spans meet, their intervals
 * forged to overlap: the check reports the DESCRIPTOR, naming both. */
static void check_finds_overlapping_tablets(void **state)
{
	ts_test_env *e = *state;
	insert(e, NULL, "a", 10, NOW - 3 * HOUR, 1);
	assert_int_equal(ts_flush(e->t, INT64_MAX), 0);
	insert(e, NULL, "b", 10, NOW - 3 * HOUR, 2);
	assert_int_equal(ts_flush(e->t, INT64_MAX), 0);
	assert_int_equal(ts_check(e->db, NULL, NULL), 0);
	ts__tablet_meta *t;
	assert_int_equal(tablets(e, &t), 2);
	char want[512];
	snprintf(want, sizeof want, "tablets %" PRIu64 " and %" PRIu64 " overlap in versions "
	         "([%" PRIu64 ", %" PRIu64 "] and [%" PRIu64 ", %" PRIu64 "]) and in time: neither "
	         "is newer (invariant V)", t[0].id, t[1].id, t[0].lo, t[0].hi, t[0].hi, t[1].hi);
	free(t);
	ts_test_env_close(e);
	forge(e, overlap_first_two, NULL);
	ts_test_env_open(e);
	struct problems p = {0};
	ts_check_opts o = {.problem = on_problem, .arg = &p};
	assert_int_equal(ts_check(e->db, NULL, &o), TS_ECORRUPT);
	assert_int_equal(p.n, 1);
	assert_string_equal(p.file[0], "m/DESCRIPTOR");
	assert_string_equal(p.what[0], want);
}

/* Tablets of different periods may overlap in versions (trees of two
 * periods fill side by side): not a problem. */
static void check_allows_overlap_across_periods(void **state)
{
	ts_test_env *e = *state;
	insert(e, NULL, "a", 10, NOW - 6 * HOUR, 1);
	assert_int_equal(ts_flush(e->t, INT64_MAX), 0);
	insert(e, NULL, "b", 10, NOW - 2 * HOUR, 2);
	assert_int_equal(ts_flush(e->t, INT64_MAX), 0);
	ts_test_env_close(e);
	forge(e, overlap_first_two, NULL);
	ts_test_env_open(e);
	assert_int_equal(ts_check(e->db, NULL, NULL), 0);
}

static void raise_hi(ts__descriptor *d, void *arg)
{
	d->tablets[0].hi = *(const uint64_t *)arg;
}

/* A tree of the log's snapshot born before the hi of a tablet whose time
 * it shares: the check reports it (in the log segment holding the head). */
static void check_finds_tree_older_than_tablet(void **state)
{
	ts_test_env *e = *state;
	insert(e, NULL, "a", 10, NOW - 3 * HOUR, 1);
	assert_int_equal(ts_flush(e->t, INT64_MAX), 0);
	insert(e, NULL, "b", 10, NOW - 3 * HOUR, 2);
	uint64_t born = tree_born(e);
	ts__tablet_meta *t;
	assert_int_equal(tablets(e, &t), 1);
	uint64_t id = t[0].id, lo = t[0].lo;
	free(t);
	assert_int_equal(ts_check(e->db, NULL, NULL), 0);
	ts_test_env_close(e);
	forge(e, raise_hi, &born);
	ts_test_env_open(e);
	struct problems p = {0};
	ts_check_opts o = {.problem = on_problem, .arg = &p};
	assert_int_equal(ts_check(e->db, NULL, &o), TS_ECORRUPT);
	assert_int_equal(p.n, 1);
	assert_non_null(strstr(p.file[0], "m/log/"));
	char want[512];
	snprintf(want, sizeof want, "filling tablet born at %" PRIu64 " is not newer than tablet %"
	         PRIu64 " (versions [%" PRIu64 ", %" PRIu64 "]), whose time it shares (invariant V)",
	         born, id, lo, born);
	assert_string_equal(p.what[0], want);
}

/* ---- random histories ---- */

static uint64_t rng = 0x9E3779B97F4A7C15u;

static void check_ok(ts_test_env *e, int step, const char *what)
{
	struct problems p = {0};
	ts_check_opts o = {.problem = on_problem, .arg = &p};
	if (ts_check(e->db, NULL, &o) != 0) {
		ts__snapshot s;
		if (ts__snapshot_take(e->t, &s) == 0) {
			for (int i = 0; i < s.ntablets; i++) {
				const ts__tablet_meta *t = &s.metas[i];
				print_message("tablet %llu period [%lld, %lld) ts [%lld, %lld] versions [%llu, %llu] source %llu\n",
				              (unsigned long long)t->id, (long long)((t->period_start - NOW) / HOUR),
				              (long long)((t->period_end - NOW) / HOUR), (long long)((t->min_ts - NOW) / HOUR),
				              (long long)((t->max_ts - NOW) / HOUR), (unsigned long long)t->lo,
				              (unsigned long long)t->hi, (unsigned long long)t->source);
			}
			for (uint32_t i = 0; i < s.nroots; i++)
				print_message("tree born %llu period %lld +%lld ts [%lld, %lld] flags %x\n",
				              (unsigned long long)s.roots[i].born,
				              (long long)((s.roots[i].period_start - NOW) / HOUR),
				              (long long)(s.roots[i].period_len / HOUR),
				              (long long)((s.roots[i].min_ts - NOW) / HOUR),
				              (long long)((s.roots[i].max_ts - NOW) / HOUR), s.roots[i].flags);
			ts__snapshot_release(&s);
		}
		fail_msg("step %d (%s): %d problems, first in %s: %s", step, what, p.n, p.file[0],
		         p.what[0]);
	}
}

/*
 * Random inserts (late rows up to three days back among them, a few up
 * to ten days, into a week's period), flushes of
 * every tree or of the trees before an instant, merges (ts_merge, and the
 * background's, delays honoured), the clock moving on by up to six hours
 * (so periods roll over: 4-hour trees and tablets join their day, days
 * their week) and reopens; with maintenance, also passes of the
 * maintenance scheduler under a small flush_size (flushes due by size, by
 * age and at the end of a period, beside merges).  After every step
 * ts_check finds nothing, so invariant V holds, and now and then the
 * table reads exactly the rows inserted.
 */
static void random_history(ts_test_env *e, int steps, int maintenance, int calm)
{
	ts_test_model m = {0};
	int64_t serial = 0;
	if (maintenance) {
		e->flush_size = 32 * 1024;
		ts_test_env_reopen(e);
	}
	for (int step = 0; step < steps; step++) {
		uint64_t r = ts_test_xorshift(&rng) % 100;
		const char *what;
		/* calm: flushes and merges rare, the clock moving by up to a
		 * day -- trees live long enough for their days to age into a
		 * week's period with rows still in them */
		if (calm && r >= 50 && r < 86)
			r = r < 52 ? 50 : r < 54 ? 62 : r < 56 ? 72 : r < 58 ? 80 : r < 74 ? 86 : r - 74;
		if (r < 50) {
			char h[8];
			int n = 1 + (int)(ts_test_xorshift(&rng) % 20);
			/* mostly recent, some days late, and a few over a week
			 * late: the days older than the 7 recent ones are a
			 * week's period, whose tree may have begun before a
			 * day tree whose rows it would then meet */
			uint64_t span = (uint64_t)(r < 35 ? 4 * HOUR : r < 46 ? 72 * HOUR : 240 * HOUR);
			int64_t back = (int64_t)(ts_test_xorshift(&rng) % span);
			if (calm && r >= 20) /* around the week's boundary: 5 to 9 days */
				back = 120 * HOUR + (int64_t)(ts_test_xorshift(&rng) % (uint64_t)(96 * HOUR));
			snprintf(h, sizeof h, "h%d", (int)(ts_test_xorshift(&rng) % 5));
			/* distinct keys: the ns part numbers the row */
			insert(e, &m, h, n, e->now - back - n * SEC - (serial++ % 1000000) * 1000, step);
			what = "insert";
		} else if (r < 62) {
			if (maintenance) {
				assert_int_equal(ts__maint_pass(e->db), 0);
				what = "maintenance pass";
			} else {
				assert_int_equal(ts_flush(e->t, INT64_MAX), 0);
				what = "flush";
			}
		} else if (r < 72) {
			int64_t before = e->now - (int64_t)(ts_test_xorshift(&rng) % (uint64_t)(72 * HOUR));
			assert_int_equal(ts_flush(e->t, before), 0);
			what = "flush before";
		} else if (r < 80) {
			assert_int_equal(ts_merge(e->t, NULL), 0);
			what = "merge";
		} else if (r < 86) {
			assert_true(ts__merge_due(e->t, NULL) >= 0);
			what = "background merge";
		} else if (r < 97) {
			uint64_t jump = (uint64_t)((calm ? 24 : 6) * HOUR);
			ts_test_env_set_now(e, e->now + (int64_t)(ts_test_xorshift(&rng) % jump));
			what = "clock";
		} else {
			ts_test_env_reopen(e);
			what = "reopen";
		}
		check_ok(e, step, what);
		if (step % 50 == 49)
			ts_test_expect_model(e->t, &m, INT64_MIN);
	}
	assert_int_equal(ts_flush(e->t, INT64_MAX), 0);
	assert_int_equal(ts_merge(e->t, NULL), 0);
	check_ok(e, -1, "final merge");
	ts_test_expect_model(e->t, &m, INT64_MIN);
	free(m.rows);
}

/* Run three times (the sequence goes on from run to run). */
static void random_history_keeps_v(void **state)
{
	random_history(*state, 1500, 0, 0);
}

/* Trees kept for days, across the week boundary. */
static void calm_history_keeps_v(void **state)
{
	random_history(*state, 1500, 0, 1);
}

static void random_history_with_maintenance_keeps_v(void **state)
{
	random_history(*state, 1000, 1, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(versions_grow_and_survive_reopen, setup,
		                                ts_test_env_teardown),
		cmocka_unit_test_setup_teardown(flush_records_tree_interval, setup, ts_test_env_teardown),
		cmocka_unit_test_setup_teardown(flush_of_two_trees, setup, ts_test_env_teardown),
		cmocka_unit_test_setup_teardown(merge_interval_is_union, setup, ts_test_env_teardown),
		cmocka_unit_test_setup_teardown(merge_runs_in_version_order, setup, ts_test_env_teardown),
		cmocka_unit_test_setup_teardown(descriptor_v3_still_reads, setup, ts_test_env_teardown),
		cmocka_unit_test_setup_teardown(check_finds_overlapping_tablets, setup,
		                                ts_test_env_teardown),
		cmocka_unit_test_setup_teardown(check_allows_overlap_across_periods, setup,
		                                ts_test_env_teardown),
		cmocka_unit_test_setup_teardown(check_finds_tree_older_than_tablet, setup,
		                                ts_test_env_teardown),
		cmocka_unit_test_setup_teardown(merge_grows_group_over_interleaved_periods, setup,
		                                ts_test_env_teardown),
		cmocka_unit_test_setup_teardown(merge_skips_group_that_cannot_grow, setup,
		                                ts_test_env_teardown),
		cmocka_unit_test_setup_teardown(period_growing_over_a_newer_tree, setup,
		                                ts_test_env_teardown),
		cmocka_unit_test_setup_teardown(flush_takes_older_trees_of_meeting_periods, setup,
		                                ts_test_env_teardown),
		cmocka_unit_test_setup_teardown(flush_takes_trees_begun_before_the_last_rows, setup,
		                                ts_test_env_teardown),
		cmocka_unit_test_setup_teardown(random_history_keeps_v, setup, ts_test_env_teardown),
		cmocka_unit_test_setup_teardown(random_history_keeps_v, setup, ts_test_env_teardown),
		cmocka_unit_test_setup_teardown(random_history_keeps_v, setup, ts_test_env_teardown),
		cmocka_unit_test_setup_teardown(random_history_with_maintenance_keeps_v, setup,
		                                ts_test_env_teardown),
		cmocka_unit_test_setup_teardown(random_history_with_maintenance_keeps_v, setup,
		                                ts_test_env_teardown),
		cmocka_unit_test_setup_teardown(calm_history_keeps_v, setup, ts_test_env_teardown),
		cmocka_unit_test_setup_teardown(calm_history_keeps_v, setup, ts_test_env_teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
