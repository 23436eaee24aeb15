/*
 * support.h -- helpers shared by the unit tests: temporary directories,
 * and a table of test metrics rows read back through snapshots.
 */
#ifndef TS_TEST_SUPPORT_H
#define TS_TEST_SUPPORT_H

#include <stdint.h>
#include <sys/types.h>

#include "tsstore.h"

/* mkdtemp under /tmp; aborts the test on failure.  Returns a malloc'ed
 * path; ts_test_rmdir removes the tree and frees it. */
char *ts_test_tmpdir(void);
void ts_test_rmdir(char *dir);
/* "dir/name", malloc'ed (aborts the test when out of memory). */
char *ts_test_path(const char *dir, const char *name);

/* XOR the byte of file path at offset off (from the end when negative)
 * with mask: damage for the checks to find. */
void ts_test_flip(const char *path, long off, unsigned char mask);
/* The mappings of this process of deleted files under dir (log segments
 * a snapshot still holds after a flush released them). */
int ts_test_deleted_mappings(const char *dir);

/* One row of the test table "m": host string, ts timestamp, batch int64,
 * v int64 -- key (host, ts). */
typedef struct test_row {
	char host[16];
	int64_t ts, batch, v;
} test_row;

/* Create table "m" in db (asserting success). */
void ts_test_create_m(ts_db *db, int64_t ttl);

/* The same schema under another name; returns ts_create_keyed's result. */
int ts_test_create_like_m(ts_db *db, const char *name, int64_t ttl);

/* A row of "m": host, ts and v; batch 0. */
test_row ts_test_row(const char *host, int64_t ts, int64_t v);

/* rows[0..n) as the values of a "m" insert (4 a row; malloc'ed, one more
 * than needed so that n may be 0; free it). */
ts_value *ts_test_values_m(const test_row *rows, size_t n);

/* Insert rows[0..n) into an open "m"; returns ts_insert's result. */
int ts_test_insert_m(ts_table *t, const test_row *rows, size_t n);

/* Read every row of a fresh snapshot of t (filling and on-disk
 * tablets), sorted by (host, ts) -- each source's rows as stored, so in a
 * table with replaced rows (TS_ON_DUPLICATE_REPLACE) the shadowed ones
 * too: read such a table through ts_query_open.
 * *out is malloc'ed; returns the count, or a negative error. */
long ts_test_read_m(ts_table *t, test_row **out);

/* The number of rows a query of the whole table returns (through the
 * public API: expired rows are not counted). */
int64_t ts_test_count_rows(ts_table *t);

/* The same, for a table of m's schema with columns appended (ts_alter_add):
 * those are left out. */
long ts_test_read_m_wide(ts_table *t, test_row **out);

/* Numbered batches, the crash tests' way of checking the prefix property:
 * batch b (from 1) is per_batch rows, host h00.., ts = base + b seconds,
 * batch = b, v = b * 1000 + i.  ts_test_batch_rows fills r[0..per_batch)
 * with batch b; ts_test_check_batches returns k when rows (sorted by key,
 * as ts_test_read_m gives them) are exactly batches 1..k, each whole, or
 * -1 for anything else. */
void ts_test_batch_rows(test_row *r, int per_batch, int64_t base, int64_t b);
long ts_test_check_batches(const test_row *rows, long n, int per_batch, int64_t base);

/* Order of test rows by key. */
int ts_test_row_cmp(const void *a, const void *b);

/* The next number of a xorshift64 sequence (state never 0): the tests'
 * reproducible randomness. */
static inline uint64_t ts_test_xorshift(uint64_t *state)
{
	*state ^= *state << 13;
	*state ^= *state >> 7;
	*state ^= *state << 17;
	return *state;
}

/* ---- support_table.c ---- */

/* A database holding table "m" (created with ttl on first open), opened
 * with sync none, a clock read from now, and the options set here (0:
 * the default). */
typedef struct ts_test_env {
	char *dir;
	ts_db *db;
	ts_table *t;
	int64_t now;              /* the clock; ts_test_env_set_now moves it */
	unsigned flags;           /* TS_OPEN_* besides TS_OPEN_CREATE */
	int64_t flush_size, merge_delay, merge_max_size, ttl;
	int64_t log_cap;          /* 0: the default */
	int64_t log_segment_size; /* 0: the default */
	int64_t merge_slice_rows, merge_rollover_spread; /* the scheduler's */
	int64_t maint_busy_window, maint_busy_share;    /* settings; 0: default */
	int64_t flush_threads;    /* 0: the default */
	int64_t block_cache_size; /* 0: the default, -1: no cache */
	void (*log)(void *arg, const char *msg); /* ts_options.log */
	void *log_arg;
	int hold_maintenance;     /* the maintenance thread held at every open */
} ts_test_env;

void ts_test_env_open(ts_test_env *e);

/* A new env in a fresh temporary directory, opened with the clock at now
 * and flags; ts_test_env_teardown (a cmocka teardown taking it as the
 * state) closes it if open and removes everything. */
ts_test_env *ts_test_env_new(int64_t now, unsigned flags);
int ts_test_env_teardown(void **state);
void ts_test_env_close(ts_test_env *e);
/* ts_test_env_new(now, TS_OPEN_NOMERGE) with the maintenance thread held
 * (now and at every reopen): merges and flushes happen when a test says so. */
ts_test_env *ts_test_env_new_held(int64_t now);
/* The format version in the header of e's table's DESCRIPTOR file. */
uint32_t ts_test_desc_version(const ts_test_env *e);
/* Close and open again (a restart of the process, the log recovered). */
void ts_test_env_reopen(ts_test_env *e);
void ts_test_env_set_now(ts_test_env *e, int64_t now);

/* Database dir (a copy of want's: a standby, a backup), opened with
 * flags (TS_OPEN_READONLY beside its writer; else read-write, its
 * recovery run) and sync none, holds in its table "m" exactly want's
 * rows, and passes ts_check. */
void ts_test_expect_copy_m(const char *dir, unsigned flags, ts_table *want);

/* The rows inserted so far, kept sorted by key. */
typedef struct ts_test_model {
	test_row *rows;
	size_t n, cap;
} ts_test_model;

void ts_test_model_add(ts_test_model *m, const test_row *r, size_t n);

/* A fresh read of t holds exactly the model's rows with ts >= min_ts. */
void ts_test_expect_model(ts_table *t, const ts_test_model *m, int64_t min_ts);

/* The value of stat name of t (fails the test if there is none). */
int64_t ts_test_stat(ts_table *t, const char *name);

/* Wait (up to 10 s) until the segments t's flushes released are deleted
 * and their directory synced by the log's preparer, so that closing t
 * makes the same file calls however the preparer was scheduled; returns
 * 1 when settled.  test_fault's sweeps count one thread's calls. */
int ts_test_log_settle(ts_table *t);

/* Every tablet of t opens, passes a full check, and agrees with the
 * descriptor's rows and timespan. */
void ts_test_check_tablets(ts_table *t);

/* A snapshot scan callback for "m" with a fifth int64 column added:
 * acc[0] counts rows, acc[1] sums the fifth column; TS_ECORRUPT for rows
 * of another width.  arg is int64_t acc[2]. */
int ts_test_sum_fifth(const ts_value *v, int n, void *arg);

/* Files in dir whose names end in suffix (0 when dir is missing). */
int ts_test_count_files(const char *dir, const char *suffix);

/* The crash tests' rig: fork a child that runs child(arg, fd) -- it must
 * never return: once its database is open it writes the step it starts
 * after (an int64_t) to fd, then each step it has done as the library
 * acknowledges it -- wait for that first write, sleep pause_ns, kill it
 * with SIGKILL (the test fails if it ended on its own), and return the
 * last step it wrote, or last when it wrote none.  (Waiting for the open
 * keeps a loaded machine from killing every child before its table
 * exists: the pause is then spent on steps, as the test means.) */
int64_t ts_test_run_and_kill(void (*child)(void *arg, int fd), void *arg, long pause_ns,
                             int64_t last);

/* Wait for child pid, which must exit with status 0. */
void ts_test_wait_exit0(pid_t pid);

/* ts_check of table in db finds nothing to report (each problem is
 * printed); fails the test, naming when, otherwise. */
void ts_test_check_clean(ts_db *db, const char *table, const char *when);

#endif
