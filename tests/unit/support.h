/*
 * support.h -- helpers shared by the unit tests: temporary directories,
 * and a table of test metrics rows read back through snapshots.
 */
#ifndef TS_TEST_SUPPORT_H
#define TS_TEST_SUPPORT_H

#include <stdint.h>

#include "tsstore.h"

/* mkdtemp under /tmp; aborts the test on failure.  Returns a malloc'ed
 * path; ts_test_rmdir removes the tree and frees it. */
char *ts_test_tmpdir(void);
void ts_test_rmdir(char *dir);

/* One row of the test table "m": host string, ts timestamp, batch int64,
 * v int64 -- key (host, ts). */
typedef struct test_row {
	char host[16];
	int64_t ts, batch, v;
} test_row;

/* Create table "m" in db (asserting success). */
void ts_test_create_m(ts_db *db, int64_t ttl);

/* Insert rows[0..n) into an open "m"; returns ts_insert's result. */
int ts_test_insert_m(ts_table *t, const test_row *rows, size_t n);

/* Read every row of a fresh snapshot of t (filling and on-disk
 * tablets), sorted by (host, ts).
 * *out is malloc'ed; returns the count, or a negative error. */
long ts_test_read_m(ts_table *t, test_row **out);

/* Order of test rows by key. */
int ts_test_row_cmp(const void *a, const void *b);

#endif
