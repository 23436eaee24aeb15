/*
 * test_duplicates.c -- a table's duplicate policy (ts_on_duplicate):
 * reject, the default, fails a batch holding a key the table has or the
 * batch repeats, and stores nothing; ignore keeps the first row of each
 * key and stores the rest of the batch as one batch.  Checked against the
 * filling tablets, flushed and merged tablets, a filling tablet of a
 * period that has since grown, across a reopen and a process crash
 * (recovery replays the same rows), through alters both ways, with the
 * counter rows_ignored_duplicates, the DESCRIPTOR's format version, and
 * the create calls that set the policy.
 */
#include <fcntl.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "support.h"

#define NOW INT64_C(1795262400000000000) /* 2026-11-21T12:00:00Z */
#define SEC INT64_C(1000000000)
#define DAY (86400 * SEC)

/* A fresh env whose maintenance thread is held, so that only the test
 * flushes and merges. */
static int setup(void **state)
{
	ts_test_env *e = calloc(1, sizeof *e);
	assert_non_null(e);
	e->dir = ts_test_tmpdir();
	e->now = NOW;
	e->hold_maintenance = 1;
	ts_test_env_open(e);
	*state = e;
	return 0;
}

/* ts_insert_counted of rows[0..n) into "m"; *ignored gets its count. */
static int insert_counted(ts_table *t, const test_row *rows, size_t n, size_t *ignored)
{
	ts_value *vals = ts_test_values_m(rows, n);
	*ignored = 12345;
	int rc = ts_insert_counted(t, 0, vals, n, ignored);
	free(vals);
	return rc;
}

static void set_policy(ts_table *t, ts_on_duplicate p)
{
	assert_int_equal(ts_alter_on_duplicate(t, p), 0);
}

static ts_on_duplicate policy_of(ts_table *t)
{
	ts_schema *s;
	assert_int_equal(ts_table_schema(t, &s), 0);
	ts_on_duplicate p = s->on_duplicate;
	ts_schema_free(s);
	return p;
}

/* The table holds exactly want[0..n) (any order). */
static void expect_rows(ts_table *t, const test_row *want, size_t n)
{
	test_row *got, *sorted = malloc((n + 1) * sizeof *sorted);
	assert_non_null(sorted);
	if (n) { /* want may be NULL when the table must be empty */
		memcpy(sorted, want, n * sizeof *want);
		qsort(sorted, n, sizeof *sorted, ts_test_row_cmp);
	}
	long k = ts_test_read_m(t, &got);
	assert_int_equal(k, (long)n);
	for (size_t i = 0; i < n; i++) {
		assert_string_equal(got[i].host, sorted[i].host);
		assert_int_equal(got[i].ts, sorted[i].ts);
		assert_int_equal(got[i].v, sorted[i].v);
	}
	free(got);
	free(sorted);
}

/* The u32 at offset off of table m's DESCRIPTOR (8: the format version)
 * or the u64 at 24 (the generation). */
static uint64_t descriptor_field(const ts_test_env *e, int off)
{
	char path[4096];
	unsigned char b[8] = {0};
	snprintf(path, sizeof path, "%s/m/DESCRIPTOR", e->dir);
	int fd = open(path, O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(pread(fd, b, off == 8 ? 4 : 8, off), off == 8 ? 4 : 8);
	close(fd);
	uint64_t v = 0;
	for (int i = 7; i >= 0; i--)
		v = v << 8 | b[i];
	return v;
}

/* ---- tests ---- */

/* The names and their parse. */
static void dup_policy_names(void **state)
{
	(void)state;
	ts_on_duplicate p = TS_ON_DUPLICATE_IGNORE;
	assert_string_equal(ts_on_duplicate_name(TS_ON_DUPLICATE_REJECT), "reject");
	assert_string_equal(ts_on_duplicate_name(TS_ON_DUPLICATE_IGNORE), "ignore");
	assert_string_equal(ts_on_duplicate_name(TS_ON_DUPLICATE_REPLACE), "replace");
	assert_string_equal(ts_on_duplicate_name((ts_on_duplicate)7), "?");
	assert_int_equal(ts_on_duplicate_parse("reject", &p), 0);
	assert_int_equal(p, TS_ON_DUPLICATE_REJECT);
	assert_int_equal(ts_on_duplicate_parse("ignore", &p), 0);
	assert_int_equal(p, TS_ON_DUPLICATE_IGNORE);
	assert_int_equal(ts_on_duplicate_parse("replace", &p), 0);
	assert_int_equal(p, TS_ON_DUPLICATE_REPLACE);
	p = TS_ON_DUPLICATE_IGNORE;
	assert_int_equal(ts_on_duplicate_parse("overwrite", &p), TS_EINVAL);
	assert_string_equal(ts_errmsg(NULL), "unknown duplicate policy \"overwrite\" (want reject, "
	                    "ignore or replace)");
	assert_int_equal(p, TS_ON_DUPLICATE_IGNORE); /* unchanged */
	assert_int_equal(ts_on_duplicate_parse(NULL, &p), TS_EINVAL);
	assert_int_equal(ts_on_duplicate_parse("ignore", NULL), TS_EINVAL);
}

/* Reject is the default and behaves as before: a duplicate in the batch
 * or of a stored row fails the whole batch, which stores nothing. */
static void dup_reject_unchanged(void **state)
{
	ts_test_env *e = *state;
	size_t ignored;
	test_row a[3] = {ts_test_row("a", NOW, 1), ts_test_row("b", NOW, 2), ts_test_row("a", NOW, 3)};
	assert_int_equal(policy_of(e->t), TS_ON_DUPLICATE_REJECT);
	assert_int_equal(descriptor_field(e, 8), 1);
	assert_int_equal(insert_counted(e->t, a, 3, &ignored), TS_EDUPKEY);
	assert_int_equal(ignored, 0);
	assert_string_equal(ts_errmsg(NULL),
	                    "row 2: duplicate key (\"a\", 2026-11-21T12:00:00Z)");
	expect_rows(e->t, NULL, 0);
	assert_int_equal(insert_counted(e->t, a, 2, &ignored), 0);
	assert_int_equal(ignored, 0);
	test_row b[2] = {ts_test_row("c", NOW, 4), ts_test_row("b", NOW, 5)};
	assert_int_equal(ts_test_insert_m(e->t, b, 2), TS_EDUPKEY);
	expect_rows(e->t, a, 2);
	assert_int_equal(ts_test_stat(e->t, "rows_rejected"), 5);
	assert_int_equal(ts_test_stat(e->t, "rows_ignored_duplicates"), 0);
	assert_int_equal(ts_test_stat(e->t, "rows_inserted"), 2);
}

/* Within one batch: the first row of a key is stored, later ones skipped. */
static void dup_ignore_within_batch(void **state)
{
	ts_test_env *e = *state;
	size_t ignored;
	set_policy(e->t, TS_ON_DUPLICATE_IGNORE);
	assert_int_equal(policy_of(e->t), TS_ON_DUPLICATE_IGNORE);
	test_row a[5] = {ts_test_row("a", NOW, 1), ts_test_row("b", NOW, 2), ts_test_row("a", NOW, 3),
	                 ts_test_row("a", NOW, 4), ts_test_row("b", NOW - SEC, 5)};
	assert_int_equal(insert_counted(e->t, a, 5, &ignored), 0);
	assert_int_equal(ignored, 2);
	test_row want[3] = {a[0], a[1], a[4]};
	expect_rows(e->t, want, 3);
	assert_int_equal(ts_test_stat(e->t, "rows_ignored_duplicates"), 2);
	assert_int_equal(ts_test_stat(e->t, "rows_inserted"), 3);
	assert_int_equal(ts_test_stat(e->t, "batches_committed"), 1);
	assert_int_equal(ts_test_stat(e->t, "rows_rejected"), 0);
	/* ts_insert and ts_insert_at skip the same way, and say nothing */
	test_row b[2] = {ts_test_row("a", NOW, 9), ts_test_row("c", NOW, 6)};
	assert_int_equal(ts_test_insert_m(e->t, b, 2), 0);
	test_row want2[4] = {a[0], a[1], a[4], b[1]};
	expect_rows(e->t, want2, 4);
	assert_int_equal(ts_test_stat(e->t, "rows_ignored_duplicates"), 3);
}

/* Against the filling tablets: stored rows keep their values, and a
 * batch that is all duplicates writes nothing to the log. */
static void dup_ignore_against_filling(void **state)
{
	ts_test_env *e = *state;
	size_t ignored;
	set_policy(e->t, TS_ON_DUPLICATE_IGNORE);
	test_row a[3] = {ts_test_row("a", NOW, 1), ts_test_row("b", NOW, 2), ts_test_row("c", NOW - DAY, 3)};
	assert_int_equal(insert_counted(e->t, a, 3, &ignored), 0);
	assert_int_equal(ignored, 0);
	int64_t tail = ts_test_stat(e->t, "log_tail_lsn");
	test_row retry[3] = {ts_test_row("a", NOW, 10), ts_test_row("b", NOW, 20), ts_test_row("c", NOW - DAY, 30)};
	assert_int_equal(insert_counted(e->t, retry, 3, &ignored), 0);
	assert_int_equal(ignored, 3);
	assert_int_equal(ts_test_stat(e->t, "log_tail_lsn"), tail);
	assert_int_equal(ts_test_stat(e->t, "batches_committed"), 1);
	expect_rows(e->t, a, 3);
	test_row mixed[4] = {ts_test_row("d", NOW, 4), ts_test_row("a", NOW, 11), ts_test_row("c", NOW - DAY, 31),
	                     ts_test_row("e", NOW - DAY, 5)};
	assert_int_equal(insert_counted(e->t, mixed, 4, &ignored), 0);
	assert_int_equal(ignored, 2);
	test_row want[5] = {a[0], a[1], a[2], mixed[0], mixed[3]};
	expect_rows(e->t, want, 5);
	assert_int_equal(ts_test_stat(e->t, "rows_ignored_duplicates"), 5);
	assert_int_equal(ts_test_stat(e->t, "batches_committed"), 2);
	assert_int_equal(ts_test_stat(e->t, "rows_inserted"), 5);
	assert_int_equal(ts_check(e->db, NULL, NULL), 0);
	/* the skipped rows took no log: table n, given the same batches
	 * without them, has the same log tail */
	ts_table *n;
	assert_int_equal(ts_test_create_like_m(e->db, "n", 0), 0);
	assert_int_equal(ts_table_open(e->db, "n", &n), 0);
	set_policy(n, TS_ON_DUPLICATE_IGNORE);
	test_row fresh[2] = {mixed[0], mixed[3]};
	assert_int_equal(insert_counted(n, a, 3, &ignored), 0);
	assert_int_equal(insert_counted(n, fresh, 2, &ignored), 0);
	assert_int_equal(ignored, 0);
	assert_int_equal(ts_test_stat(n, "log_tail_lsn"), ts_test_stat(e->t, "log_tail_lsn"));
	ts_table_close(n);
}

/* A duplicate of a row in a filling tablet of an earlier, shorter period
 * (yesterday's 4-hour tablet, now that yesterday is a day period): no
 * empty tablet is left for the day period. */
static void dup_ignore_grown_period(void **state)
{
	ts_test_env *e = *state;
	size_t ignored;
	set_policy(e->t, TS_ON_DUPLICATE_IGNORE);
	test_row a[1] = {ts_test_row("a", NOW, 1)};
	assert_int_equal(insert_counted(e->t, a, 1, &ignored), 0);
	ts_test_env_set_now(e, NOW + DAY);
	assert_int_equal(ts_test_stat(e->t, "filling_tablets"), 1);
	test_row dup[1] = {ts_test_row("a", NOW, 2)};
	assert_int_equal(insert_counted(e->t, dup, 1, &ignored), 0);
	assert_int_equal(ignored, 1);
	assert_int_equal(ts_test_stat(e->t, "filling_tablets"), 1);
	/* the duplicate's period (yesterday, a day now) gets no tablet, and
	 * the next row's (today's 4 hours) the only new one */
	test_row today[2] = {ts_test_row("a", NOW, 3), ts_test_row("b", NOW + DAY, 4)};
	assert_int_equal(insert_counted(e->t, today, 2, &ignored), 0);
	assert_int_equal(ignored, 1);
	assert_int_equal(ts_test_stat(e->t, "filling_tablets"), 2);
	test_row both[2] = {ts_test_row("a", NOW, 5), ts_test_row("b", NOW, 6)};
	assert_int_equal(insert_counted(e->t, both, 2, &ignored), 0);
	assert_int_equal(ignored, 1);
	assert_int_equal(ts_test_stat(e->t, "filling_tablets"), 3); /* b's day tablet */
	test_row want[3] = {a[0], today[1], both[1]};
	expect_rows(e->t, want, 3);
	assert_int_equal(ts_flush(e->t, INT64_MAX), 0);
	assert_int_equal(ts_test_stat(e->t, "tablets"), 3);
	expect_rows(e->t, want, 3);
	assert_int_equal(ts_check(e->db, NULL, NULL), 0);
}

/* Against on-disk tablets: flushed, then merged. */
static void dup_ignore_against_tablets(void **state)
{
	ts_test_env *e = *state;
	size_t ignored;
	int merged = 0;
	set_policy(e->t, TS_ON_DUPLICATE_IGNORE);
	test_row a[2] = {ts_test_row("a", NOW - 3600 * SEC, 1), ts_test_row("b", NOW - 3600 * SEC, 2)};
	test_row b[2] = {ts_test_row("a", NOW - 1800 * SEC, 3), ts_test_row("b", NOW - 1800 * SEC, 4)};
	assert_int_equal(insert_counted(e->t, a, 2, &ignored), 0);
	assert_int_equal(ts_flush(e->t, INT64_MAX), 0);
	assert_int_equal(insert_counted(e->t, b, 2, &ignored), 0);
	assert_int_equal(ts_flush(e->t, INT64_MAX), 0);
	assert_int_equal(ts_test_stat(e->t, "filling_rows"), 0);
	assert_int_equal(ts_test_stat(e->t, "tablets"), 2);
	/* each flushed tablet: retried batches store nothing */
	test_row ra[2] = {ts_test_row("a", NOW - 3600 * SEC, 10), ts_test_row("b", NOW - 3600 * SEC, 20)};
	test_row rb[3] = {ts_test_row("b", NOW - 1800 * SEC, 40), ts_test_row("c", NOW - 1800 * SEC, 5),
	                  ts_test_row("a", NOW - 1800 * SEC, 30)};
	assert_int_equal(insert_counted(e->t, ra, 2, &ignored), 0);
	assert_int_equal(ignored, 2);
	assert_int_equal(insert_counted(e->t, rb, 3, &ignored), 0);
	assert_int_equal(ignored, 2);
	test_row want[5] = {a[0], a[1], b[0], b[1], rb[1]};
	expect_rows(e->t, want, 5);
	assert_int_equal(ts_flush(e->t, INT64_MAX), 0);
	assert_int_equal(ts_merge(e->t, &merged), 0);
	assert_true(merged >= 1);
	assert_int_equal(ts_test_stat(e->t, "tablets"), 1);
	/* the merged tablet */
	assert_int_equal(insert_counted(e->t, ra, 2, &ignored), 0);
	assert_int_equal(ignored, 2);
	assert_int_equal(insert_counted(e->t, rb, 3, &ignored), 0);
	assert_int_equal(ignored, 3);
	test_row fresh[2] = {ts_test_row("c", NOW - 3600 * SEC, 6), ts_test_row("c", NOW - 1800 * SEC, 50)};
	assert_int_equal(insert_counted(e->t, fresh, 2, &ignored), 0);
	assert_int_equal(ignored, 1);
	test_row want2[6] = {a[0], a[1], b[0], b[1], rb[1], fresh[0]};
	expect_rows(e->t, want2, 6);
	assert_int_equal(ts_test_stat(e->t, "rows_ignored_duplicates"), 10);
	assert_int_equal(ts_check(e->db, NULL, NULL), 0);
}

/* The policy is the table's, in its DESCRIPTOR: it survives a reopen,
 * and the rows read back are those stored. */
static void dup_ignore_reopen(void **state)
{
	ts_test_env *e = *state;
	size_t ignored;
	set_policy(e->t, TS_ON_DUPLICATE_IGNORE);
	test_row a[3] = {ts_test_row("a", NOW, 1), ts_test_row("a", NOW, 2), ts_test_row("b", NOW, 3)};
	assert_int_equal(insert_counted(e->t, a, 3, &ignored), 0);
	assert_int_equal(ignored, 1);
	ts_test_env_close(e);
	ts_test_env_open(e);
	assert_int_equal(policy_of(e->t), TS_ON_DUPLICATE_IGNORE);
	test_row want[2] = {a[0], a[2]};
	expect_rows(e->t, want, 2);
	assert_int_equal(ts_test_stat(e->t, "rows_ignored_duplicates"), 0); /* since this open */
	assert_int_equal(insert_counted(e->t, a, 3, &ignored), 0);
	assert_int_equal(ignored, 3);
	assert_int_equal(ts_test_stat(e->t, "rows_ignored_duplicates"), 3);
	expect_rows(e->t, want, 2);
}

/* A process crash after batches with skipped rows: recovery replays the
 * log to exactly the rows the batches stored, and the table goes on. */
static void dup_ignore_crash_recovery(void **state)
{
	ts_test_env *e = *state;
	size_t ignored;
	test_row first[3] = {ts_test_row("a", NOW, 1), ts_test_row("b", NOW, 2), ts_test_row("c", NOW - DAY, 3)};
	test_row second[4] = {ts_test_row("a", NOW, 10), ts_test_row("d", NOW, 4), ts_test_row("d", NOW, 40),
	                      ts_test_row("c", NOW - DAY, 30)};
	set_policy(e->t, TS_ON_DUPLICATE_IGNORE);
	ts_test_env_close(e);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		ts_test_env_open(e);
		int ok = insert_counted(e->t, first, 3, &ignored) == 0 && ignored == 0 &&
		         insert_counted(e->t, first, 3, &ignored) == 0 && ignored == 3 &&
		         insert_counted(e->t, second, 4, &ignored) == 0 && ignored == 3;
		_exit(ok ? 0 : 1); /* no close: the log is left as a crash leaves it */
	}
	ts_test_wait_exit0(pid);
	ts_test_env_open(e);
	assert_int_equal(ts_test_stat(e->t, "log_opened_clean"), 0);
	assert_int_equal(ts_test_stat(e->t, "log_recovered_commits"), 2);
	test_row want[4] = {first[0], first[1], first[2], second[1]};
	expect_rows(e->t, want, 4);
	assert_int_equal(ts_check(e->db, NULL, NULL), 0);
	assert_int_equal(insert_counted(e->t, second, 4, &ignored), 0);
	assert_int_equal(ignored, 4);
	test_row more[1] = {ts_test_row("e", NOW, 5)};
	assert_int_equal(insert_counted(e->t, more, 1, &ignored), 0);
	assert_int_equal(ignored, 0);
	test_row want2[5] = {first[0], first[1], first[2], second[1], more[0]};
	expect_rows(e->t, want2, 5);
}

/* Rows of 60 KiB in a table of 1 MiB log segments, each batch a
 * duplicate of the last batch's row, a new row and a duplicate of it:
 * skipped row records that had moved the tail into a new segment are
 * given back there too, and recovery after a crash replays exactly the
 * rows stored. */
#define BIG 60000
static int insert_big(ts_table *t, int i, const char *pad, size_t *ignored)
{
	ts_value rows[9];
	char k[3][16];
	int key[3] = {i - 1, i, i};
	size_t n = 0;
	for (int j = i == 0 ? 1 : 0; j < 3; j++) {
		snprintf(k[j], sizeof k[j], "k%03d", key[j]);
		rows[3 * n] = ts_string(k[j]);
		rows[3 * n + 1] = ts_timestamp(NOW + key[j]);
		rows[3 * n + 2] = ts_stringn(pad, BIG - (size_t)j); /* a duplicate's differs */
		n++;
	}
	return ts_insert_counted(t, 0, rows, n, ignored);
}

static void dup_ignore_across_segments(void **state)
{
	ts_test_env *e = *state;
	ts_column cols[2] = {{.name = "k", .type = TS_STRING}, {.name = "pad", .type = TS_STRING}};
	const char *key[2] = {"k", "ts"};
	char *pad = malloc(BIG);
	ts_table *t;
	size_t ignored, total = 0;
	int rounds = 40;
	assert_non_null(pad);
	memset(pad, 'x', BIG);
	ts_test_env_close(e);
	e->log_segment_size = 1 << 20;
	ts_test_env_open(e);
	assert_int_equal(ts_create_keyed_v2(e->db, "big", cols, 2, key, 2, 0,
	                                    TS_ON_DUPLICATE_IGNORE), 0);
	ts_test_env_close(e);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		int ok = 1;
		ts_test_env_open(e);
		ok = ts_table_open(e->db, "big", &t) == 0;
		for (int i = 0; ok && i < rounds; i++) {
			ok = insert_big(t, i, pad, &ignored) == 0 && ignored == (i == 0 ? 1u : 2u);
			total += ignored;
		}
		ok = ok && ts_test_stat(t, "rows_ignored_duplicates") == (int64_t)total;
		_exit(ok ? 0 : 1); /* a crash: no close */
	}
	ts_test_wait_exit0(pid);
	ts_test_env_open(e);
	assert_int_equal(ts_table_open(e->db, "big", &t), 0);
	assert_int_equal(ts_test_stat(t, "log_recovered_commits"), rounds);
	assert_true(ts_test_stat(t, "log_tail_lsn") > 2 * (1 << 20)); /* segments crossed */
	ts_cursor *cur;
	const ts_value *row;
	int n, got = 0;
	assert_int_equal(ts_query_open(t, &(ts_query){0}, &cur), 0);
	while (ts_cursor_next(cur, &row, &n) == 0 && row) {
		char want[16];
		snprintf(want, sizeof want, "k%03d", got);
		assert_int_equal(n, 3);
		assert_int_equal(row[0].v.s.len, strlen(want));
		assert_memory_equal(row[0].v.s.ptr, want, strlen(want));
		assert_int_equal(row[1].v.i, NOW + got);
		assert_int_equal(row[2].v.s.len, BIG - 1); /* the first row of its key */
		got++;
	}
	ts_cursor_close(cur);
	assert_int_equal(got, rounds);
	assert_int_equal(ts_check(e->db, NULL, NULL), 0);
	assert_int_equal(insert_big(t, rounds - 1, pad, &ignored), 0);
	assert_int_equal(ignored, 3);
	ts_table_close(t);
	free(pad);
}

/* Alter from reject to ignore and back: each insert applies the policy
 * current when it runs; the DESCRIPTOR is format version 3 only while
 * the policy is ignore, and setting the same policy writes nothing. */
static void dup_alter_both_ways(void **state)
{
	ts_test_env *e = *state;
	size_t ignored;
	test_row a[2] = {ts_test_row("a", NOW, 1), ts_test_row("b", NOW, 2)};
	test_row dup[2] = {ts_test_row("c", NOW, 3), ts_test_row("a", NOW, 4)};
	assert_int_equal(ts_test_insert_m(e->t, a, 2), 0);
	assert_int_equal(ts_test_insert_m(e->t, dup, 2), TS_EDUPKEY);
	uint64_t gen = descriptor_field(e, 24);
	set_policy(e->t, TS_ON_DUPLICATE_REJECT); /* already: nothing written */
	assert_int_equal(descriptor_field(e, 24), gen);
	set_policy(e->t, TS_ON_DUPLICATE_IGNORE);
	assert_int_equal(descriptor_field(e, 24), gen + 1);
	assert_int_equal(descriptor_field(e, 8), 3);
	assert_int_equal(ts_test_stat(e->t, "on_duplicate_policy"), TS_ON_DUPLICATE_IGNORE);
	ts_stat all[TS_STATS_MAX + 1];
	int n;
	assert_int_equal(ts_table_stats(e->t, all, TS_STATS_MAX + 1, &n), 0);
	assert_true(n < TS_STATS_MAX); /* TS_STATS_MAX entries still suffice */
	ts_schema *s;
	assert_int_equal(ts_table_schema(e->t, &s), 0);
	assert_int_equal(s->on_duplicate, TS_ON_DUPLICATE_IGNORE);
	assert_int_equal(s->version, 1); /* no new schema version */
	ts_schema_free(s);
	assert_int_equal(insert_counted(e->t, dup, 2, &ignored), 0);
	assert_int_equal(ignored, 1);
	set_policy(e->t, TS_ON_DUPLICATE_REJECT);
	assert_int_equal(descriptor_field(e, 8), 1);
	assert_int_equal(policy_of(e->t), TS_ON_DUPLICATE_REJECT);
	assert_int_equal(ts_test_stat(e->t, "on_duplicate_policy"), TS_ON_DUPLICATE_REJECT);
	test_row again[2] = {ts_test_row("d", NOW, 5), ts_test_row("b", NOW, 6)};
	assert_int_equal(insert_counted(e->t, again, 2, &ignored), TS_EDUPKEY);
	assert_string_equal(ts_errmsg(NULL),
	                    "row 1: duplicate key (\"b\", 2026-11-21T12:00:00Z)");
	test_row want[3] = {a[0], a[1], dup[0]};
	expect_rows(e->t, want, 3);
	assert_int_equal(ts_test_stat(e->t, "rows_ignored_duplicates"), 1);
	assert_int_equal(ts_alter_on_duplicate(e->t, (ts_on_duplicate)3), TS_EINVAL);
	assert_int_equal(policy_of(e->t), TS_ON_DUPLICATE_REJECT);
	/* the policy outlives a TTL change, and the TTL's horizon the policy */
	set_policy(e->t, TS_ON_DUPLICATE_IGNORE);
	assert_int_equal(ts_alter_ttl(e->t, DAY), 0);
	assert_int_equal(ts_alter_ttl(e->t, 0), 0); /* lengthened: a horizon */
	assert_int_equal(descriptor_field(e, 8), 3);
	set_policy(e->t, TS_ON_DUPLICATE_REJECT);
	assert_int_equal(descriptor_field(e, 8), 2);
	set_policy(e->t, TS_ON_DUPLICATE_IGNORE);
	ts_test_env_close(e);
	ts_test_env_open(e);
	assert_int_equal(policy_of(e->t), TS_ON_DUPLICATE_IGNORE);
	test_row old[1] = {ts_test_row("z", NOW - 2 * DAY, 7)};
	assert_int_equal(ts_test_insert_m(e->t, old, 1), TS_EEXPIRED); /* horizon kept */
}

/* A failing row fails an ignore batch as any other: nothing stored, the
 * duplicates before it not counted. */
static void dup_ignore_batch_still_atomic(void **state)
{
	ts_test_env *e = *state;
	size_t ignored;
	set_policy(e->t, TS_ON_DUPLICATE_IGNORE);
	test_row a[1] = {ts_test_row("a", NOW, 1)};
	assert_int_equal(insert_counted(e->t, a, 1, &ignored), 0);
	test_row bad[3] = {ts_test_row("a", NOW, 2), ts_test_row("b", NOW, 3), ts_test_row("c", NOW + 2 * DAY, 4)};
	assert_int_equal(insert_counted(e->t, bad, 3, &ignored), TS_EFUTURE);
	assert_int_equal(ignored, 0);
	expect_rows(e->t, a, 1);
	assert_int_equal(ts_test_stat(e->t, "rows_ignored_duplicates"), 0);
	assert_int_equal(ts_test_stat(e->t, "rows_rejected"), 3);
	assert_int_equal(ts_test_stat(e->t, "batches_committed"), 1);
}

/* The create calls set the policy: ts_create_keyed_v2, ts_create with
 * ts_schema.on_duplicate (a schema read back makes a table like its
 * own), and nothing is created for an unknown policy. */
static void dup_create_sets_policy(void **state)
{
	ts_test_env *e = *state;
	ts_column cols[2] = {{.name = "host", .type = TS_STRING}, {.name = "v", .type = TS_INT64}};
	const char *key[2] = {"host", "ts"};
	ts_table *t;
	ts_schema *s, *s2;
	assert_int_equal(ts_create_keyed_v2(e->db, "i", cols, 2, key, 2, 0,
	                                    TS_ON_DUPLICATE_IGNORE), 0);
	assert_int_equal(ts_table_open(e->db, "i", &t), 0);
	assert_int_equal(policy_of(t), TS_ON_DUPLICATE_IGNORE);
	ts_value rows[6] = {ts_string("x"), ts_timestamp(NOW), ts_int64(1),
	                    ts_string("x"), ts_timestamp(NOW), ts_int64(2)};
	size_t ignored;
	assert_int_equal(ts_insert_counted(t, 0, rows, 2, &ignored), 0);
	assert_int_equal(ignored, 1);
	assert_int_equal(ts_test_count_rows(t), 1);
	assert_int_equal(ts_table_schema(t, &s), 0);
	ts_table_close(t);
	assert_int_equal(ts_create(e->db, "j", s), 0); /* like "i" */
	ts_schema_free(s);
	assert_int_equal(ts_table_open(e->db, "j", &t), 0);
	assert_int_equal(ts_table_schema(t, &s2), 0);
	assert_int_equal(s2->on_duplicate, TS_ON_DUPLICATE_IGNORE);
	assert_int_equal(s2->ncolumns, 3);
	ts_table_close(t);
	s2->on_duplicate = (ts_on_duplicate)5;
	assert_int_equal(ts_create(e->db, "k", s2), TS_EINVAL);
	assert_string_equal(ts_errmsg(NULL), "table \"k\": unknown duplicate policy 5 (want "
	                    "TS_ON_DUPLICATE_REJECT, TS_ON_DUPLICATE_IGNORE or "
	                    "TS_ON_DUPLICATE_REPLACE)");
	assert_int_equal(ts_table_open(e->db, "k", &t), TS_ENOENT);
	s2->on_duplicate = TS_ON_DUPLICATE_REJECT;
	assert_int_equal(ts_create(e->db, "k", s2), 0);
	ts_schema_free(s2);
	assert_int_equal(ts_table_open(e->db, "k", &t), 0);
	assert_int_equal(policy_of(t), TS_ON_DUPLICATE_REJECT);
	ts_table_close(t);
	assert_int_equal(ts_create_keyed_v2(e->db, "l", cols, 2, key, 2, 0,
	                                    (ts_on_duplicate)-1), TS_EINVAL);
	assert_int_equal(ts_create_keyed(e->db, "l", cols, 2, key, 2, 0), 0);
	assert_int_equal(ts_table_open(e->db, "l", &t), 0);
	assert_int_equal(policy_of(t), TS_ON_DUPLICATE_REJECT);
	ts_table_close(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(dup_policy_names),
		cmocka_unit_test_setup_teardown(dup_reject_unchanged, setup, ts_test_env_teardown),
		cmocka_unit_test_setup_teardown(dup_ignore_within_batch, setup, ts_test_env_teardown),
		cmocka_unit_test_setup_teardown(dup_ignore_against_filling, setup,
		                                ts_test_env_teardown),
		cmocka_unit_test_setup_teardown(dup_ignore_grown_period, setup, ts_test_env_teardown),
		cmocka_unit_test_setup_teardown(dup_ignore_against_tablets, setup,
		                                ts_test_env_teardown),
		cmocka_unit_test_setup_teardown(dup_ignore_reopen, setup, ts_test_env_teardown),
		cmocka_unit_test_setup_teardown(dup_ignore_crash_recovery, setup,
		                                ts_test_env_teardown),
		cmocka_unit_test_setup_teardown(dup_ignore_across_segments, setup,
		                                ts_test_env_teardown),
		cmocka_unit_test_setup_teardown(dup_alter_both_ways, setup, ts_test_env_teardown),
		cmocka_unit_test_setup_teardown(dup_ignore_batch_still_atomic, setup,
		                                ts_test_env_teardown),
		cmocka_unit_test_setup_teardown(dup_create_sets_policy, setup, ts_test_env_teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
