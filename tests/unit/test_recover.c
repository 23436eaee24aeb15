/*
 * test_recover.c -- opening a table whose log's newest commit is
 * well-formed (magic, length, sequence, CRC-32C all right) but names a
 * filling tablet whose tree is not: the findings of tests/fuzz/fuzz_log.
 *
 * The CRC only proves that a batch's bytes are the ones written; a tree
 * reaching outside the log, or into itself, comes from a writer's bug or
 * a file made by hand.  Before table.c verified the trees on open, the
 * first read of such a tree dereferenced a NULL or stray pointer (the
 * writer's and the read-only handles' alike) or walked a cycle.  Now the
 * open fails with TS_ECORRUPT naming the commit, for writers and readers.
 *
 * Each test builds table "m" with two batches in its log (one filling
 * tablet), closes it, rewrites a field of the newest batch -- a root or a
 * node of its tree, all written by that batch -- recomputes the batch's
 * CRC-32C, and opens it again.  A root's period is not checked (rows are
 * read whatever period holds them), but must not make a flush overflow.
 */
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "avl.h"
#include "crc32c.h"
#include "descriptor.h"
#include "log.h"
#include "support.h"

#define SEC INT64_C(1000000000)
#define NOW (INT64_C(1795000000) * SEC)

static int setup(void **state)
{
	ts_test_env *e = ts_test_env_new(NOW, 0);
	test_row rows[10];
	for (int b = 0; b < 2; b++) {
		for (int i = 0; i < 5; i++) {
			snprintf(rows[i].host, sizeof rows[i].host, "h%d", i % 2);
			rows[i].ts = NOW - 100 * SEC + (b * 5 + i) * SEC;
			rows[i].batch = b;
			rows[i].v = i;
		}
		assert_int_equal(ts_test_insert_m(e->t, rows, 5), 0);
	}
	ts_test_env_close(e);
	*state = e;
	return 0;
}

/* The newest commit of e's log and its segment file, open read-write. */
struct head {
	int fd;
	ts__commit c;
	ts__root root;       /* its only root */
	uint64_t size;       /* of the commit record */
};

static void head_open(const ts_test_env *e, struct head *h)
{
	char dir[512], path[600];
	ts__log *log;
	snprintf(dir, sizeof dir, "%s/m/log", e->dir);
	snprintf(path, sizeof path, "%s/0000000000000000.seg", dir);
	assert_int_equal(ts__log_open_verify(dir, &log), 0);
	ts__log_walk w = {0};
	ts__log_walk_commits(log, &w);
	assert_int_equal(w.commits, 2);
	assert_int_equal(ts__log_read_commit(log, w.last, &h->c), 0);
	assert_int_equal(h->c.nroots, 1);
	ts__commit_root(&h->c, 0, &h->root);
	h->c.roots = NULL; /* points into the mapping closed now */
	ts__log_close(log, 0);
	h->size = TS_COMMIT_SIZE((uint64_t)h->c.nroots);
	h->fd = open(path, O_RDWR);
	assert_true(h->fd >= 0);
}

static void put_u64(const struct head *h, uint64_t lsn, uint64_t v)
{
	assert_int_equal(pwrite(h->fd, &v, 8, (off_t)(TS_SEG_HEADER + lsn)), 8);
}

static uint64_t get_u64(const struct head *h, uint64_t lsn)
{
	uint64_t v;
	assert_int_equal(pread(h->fd, &v, 8, (off_t)(TS_SEG_HEADER + lsn)), 8);
	return v;
}

/* Recompute the batch's CRC (it lies in one segment here) and close. */
static void head_close(struct head *h)
{
	uint64_t from = h->c.batch_lsn, to = h->c.lsn + h->size - TS_COMMIT_TRAILER;
	unsigned char *p = malloc(to - from);
	assert_int_equal(pread(h->fd, p, to - from, (off_t)(TS_SEG_HEADER + from)),
	                 (ssize_t)(to - from));
	uint32_t crc = ts__crc32c(0, p, to - from);
	assert_int_equal(pwrite(h->fd, &crc, 4, (off_t)(TS_SEG_HEADER + to)), 4);
	free(p);
	close(h->fd);
}

/* Both a writer's and a read-only open of e's table fail as damaged,
 * naming the commit at lsn; and a check of the database finds it too. */
static void expect_damaged(ts_test_env *e, uint64_t lsn, const char *why)
{
	char want[128];
	ts_db *db;
	ts_table *t;
	snprintf(want, sizeof want, "log commit at %" PRIu64 ": ", lsn);
	for (int ro = 0; ro < 2; ro++) {
		ts_options o;
		ts_options_init(&o);
		o.flags = ro ? TS_OPEN_READONLY : 0;
		o.sync = TS_SYNC_NONE;
		assert_int_equal(ts_open(e->dir, &o, &db), 0);
		assert_int_equal(ts_table_open(db, "m", &t), TS_ECORRUPT);
		assert_null(t);
		assert_non_null(strstr(ts_errmsg(NULL), want));
		assert_non_null(strstr(ts_errmsg(NULL), why));
		if (!ro)
			assert_int_equal(ts_check(db, "m", NULL), TS_ECORRUPT);
		assert_int_equal(ts_close(db), 0);
	}
}

static void recover_sound_log_reopens(void **state)
{
	ts_test_env *e = *state;
	struct head h;
	test_row *rows;
	head_open(e, &h);
	head_close(&h); /* the same CRC again: nothing changes */
	ts_test_env_open(e);
	assert_int_equal(ts_test_read_m(e->t, &rows), 10);
	assert_int_equal(rows[0].batch, 0);
	assert_int_equal(rows[9].batch, 1);
	free(rows);
	assert_int_equal(ts_check(e->db, "m", NULL), 0);
}

/* The fuzzer's first finding: a root in a segment that does not exist
 * (a NULL node, read by the read-only open's first query). */
static void recover_root_outside_log(void **state)
{
	ts_test_env *e = *state;
	struct head h;
	head_open(e, &h);
	put_u64(&h, h.c.lsn + TS_COMMIT_FIXED + 16, UINT64_C(1) << 40);
	head_close(&h);
	expect_damaged(e, h.c.lsn, "is outside the log");
}

/* A root inside the segment but past the commit: bytes never written. */
static void recover_root_after_commit(void **state)
{
	ts_test_env *e = *state;
	struct head h;
	head_open(e, &h);
	put_u64(&h, h.c.lsn + TS_COMMIT_FIXED + 16, h.c.lsn + h.size);
	head_close(&h);
	expect_damaged(e, h.c.lsn, "is outside the log");
}

/* The root node as its own left child. */
static void recover_tree_cycle(void **state)
{
	ts_test_env *e = *state;
	struct head h;
	head_open(e, &h);
	assert_true(h.root.root >= h.c.batch_lsn); /* written by this batch */
	put_u64(&h, h.root.root + offsetof(ts__node, left), h.root.root);
	head_close(&h);
	expect_damaged(e, h.c.lsn, "tree node at");
}

/* The root node naming a row record far outside the log. */
static void recover_row_outside_log(void **state)
{
	ts_test_env *e = *state;
	struct head h;
	head_open(e, &h);
	uint64_t lsn = h.root.root + offsetof(ts__node, row_b);
	put_u64(&h, lsn, (UINT64_C(1) << 40) << 8 | (get_u64(&h, lsn) & 0xff));
	head_close(&h);
	expect_damaged(e, h.c.lsn, "names a row outside the log");
}

/* A tree said to begin at its own commit record (after every node of it). */
static void recover_tree_begun_after_commit(void **state)
{
	ts_test_env *e = *state;
	struct head h;
	head_open(e, &h);
	put_u64(&h, h.c.lsn + TS_COMMIT_FIXED + 64, h.c.lsn);
	head_close(&h);
	expect_damaged(e, h.c.lsn, "outside the log");
}

/* A tree said to begin inside a batch (at its first row record): found by
 * fuzz_log's idempotency oracle.  The open took it, and the next flush
 * made it the descriptor's flushed position, from which the next
 * recovery found no batch: every later commit was lost. */
static void recover_tree_begun_inside_batch(void **state)
{
	ts_test_env *e = *state;
	struct head h;
	head_open(e, &h);
	assert_int_equal(h.root.since, 0);
	put_u64(&h, h.c.lsn + TS_COMMIT_FIXED + 64, TS_BATCH_HEADER_SIZE);
	head_close(&h);
	expect_damaged(e, h.c.lsn, "where no batch begins");
}

/* A root whose period ends past INT64_MAX (its fields are not checked:
 * any period holding the rows is sound): a flush used to overflow
 * computing the tablet's period end; it ends at INT64_MAX. */
static void recover_period_past_int64_flushes(void **state)
{
	ts_test_env *e = *state;
	struct head h;
	test_row *rows;
	char dir[600];
	ts__descriptor *d;
	head_open(e, &h);
	put_u64(&h, h.c.lsn + TS_COMMIT_FIXED + 8, (uint64_t)INT64_MAX);
	head_close(&h);
	ts_test_env_open(e);
	assert_int_equal(ts_flush(e->t, INT64_MAX), 0);
	assert_int_equal(ts_test_read_m(e->t, &rows), 10);
	free(rows);
	snprintf(dir, sizeof dir, "%s/m", e->dir);
	assert_int_equal(ts__descriptor_read(dir, &d), 0);
	assert_int_equal(d->ntablets, 1);
	assert_int_equal(d->tablets[0].period_start, h.root.period_start);
	assert_int_equal(d->tablets[0].period_end, INT64_MAX);
	ts__descriptor_free(d, 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(recover_sound_log_reopens, setup, ts_test_env_teardown),
		cmocka_unit_test_setup_teardown(recover_root_outside_log, setup, ts_test_env_teardown),
		cmocka_unit_test_setup_teardown(recover_root_after_commit, setup, ts_test_env_teardown),
		cmocka_unit_test_setup_teardown(recover_tree_cycle, setup, ts_test_env_teardown),
		cmocka_unit_test_setup_teardown(recover_row_outside_log, setup, ts_test_env_teardown),
		cmocka_unit_test_setup_teardown(recover_tree_begun_after_commit, setup,
		                                ts_test_env_teardown),
		cmocka_unit_test_setup_teardown(recover_tree_begun_inside_batch, setup,
		                                ts_test_env_teardown),
		cmocka_unit_test_setup_teardown(recover_period_past_int64_flushes, setup,
		                                ts_test_env_teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
