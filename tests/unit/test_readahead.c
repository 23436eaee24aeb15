/*
 * test_readahead.c -- a long scan's read-ahead (lib/readahead.c, its use
 * in lib/scan.c), through the public API on a table of one tablet of
 * many blocks, mostly with no block cache (every block a stream loads is
 * read from the file): a full scan, either way, returns exactly the rows and
 * reads ahead every block but the first TS_SCAN_READAHEAD_AFTER + 1;
 * the helper thread decompresses blocks queued to it; a scan over a
 * time range reads ahead exactly the blocks it loads, none it skips; a
 * block the cache held when the stream looked ahead, evicted before its
 * turn, is read then, in order; a short range reads none ahead, and neither does a database with
 * flush_threads 1; a cursor closed in the middle of a scan leaves
 * nothing behind (the sanitizer build checks the leak); a damaged block
 * the read-ahead read is reported by the scan, when it comes to it, with
 * the block named, after exactly the rows before it.
 */
#include <dirent.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cmocka.h>

#include "bcache.h"
#include "handle.h"
#include "support.h"
#include "tablet.h"
#include "tablet_format.h"
#include "tslimits.h"

#define NOW INT64_C(1795262400000000000) /* 2026-11-21T12:00:00Z */
#define SEC INT64_C(1000000000)
#define HOUR (3600 * SEC)
#define START (NOW - 12 * HOUR)
#define HOSTS 20
#define STEPS 4000                       /* rows per host, a second apart */
#define AHEAD_AFTER 3                    /* blocks loaded before a stream reads ahead */

static int64_t value_of(int h, long i)
{
	return (int64_t)((i * 7919 + h * 104729) % 2001) - 1000;
}

/* A table "m" of HOSTS x STEPS rows flushed into one tablet, opened with
 * a block cache of cache bytes (-1: none) and flush_threads threads (0:
 * the default). */
static ts_test_env *env_new_cache(int64_t flush_threads, int64_t cache)
{
	ts_test_env *e = calloc(1, sizeof *e);
	assert_non_null(e);
	e->dir = ts_test_tmpdir();
	e->now = NOW;
	e->flags = TS_OPEN_NOMERGE;
	e->block_cache_size = cache;
	e->flush_threads = flush_threads;
	ts_test_env_open(e);
	test_row *rows = calloc(HOSTS, sizeof *rows);
	assert_non_null(rows);
	for (long i = 0; i < STEPS; i++) {
		for (int h = 0; h < HOSTS; h++) {
			snprintf(rows[h].host, sizeof rows[h].host, "h%02d", h);
			rows[h].ts = START + i * SEC;
			rows[h].batch = i;
			rows[h].v = value_of(h, i);
		}
		assert_int_equal(ts_test_insert_m(e->t, rows, HOSTS), 0);
	}
	free(rows);
	assert_int_equal(ts_flush(e->t, INT64_MAX), 0);
	ts_test_env_reopen(e); /* the scans read the tablet, not the log */
	return e;
}

/* The same with no block cache: every block a stream loads is read. */
static ts_test_env *env_new(int64_t flush_threads)
{
	return env_new_cache(flush_threads, -1);
}

/* The table's one tablet, opened apart (its blocks' offsets and spans). */
static ts__tablet *the_tablet(const ts_test_env *e)
{
	char *tdir = ts_test_path(e->dir, "m/tablets"), *path = NULL;
	DIR *d = opendir(tdir);
	assert_non_null(d);
	for (struct dirent *de; (de = readdir(d));) {
		size_t n = strlen(de->d_name), s = strlen(TS_TABLET_SUFFIX);
		if (n > s && de->d_name[0] != '.' && strcmp(de->d_name + n - s, TS_TABLET_SUFFIX) == 0) {
			assert_null(path); /* one tablet */
			path = ts_test_path(tdir, de->d_name);
		}
	}
	closedir(d);
	assert_non_null(path);
	ts__tablet *tab;
	assert_int_equal(ts__tablet_open(path, strtoull(strrchr(path, '/') + 1, NULL, 16), &tab), 0);
	free(path);
	free(tdir);
	assert_true(tab->nblocks > 20);
	return tab;
}

/* Host h, step i: the row the table must hold there. */
static void expect_row(const ts_value *r, int n, int h, long i)
{
	char host[16];
	snprintf(host, sizeof host, "h%02d", h);
	assert_int_equal(n, 4);
	assert_int_equal(r[0].v.s.len, strlen(host));
	assert_memory_equal(r[0].v.s.ptr, host, strlen(host));
	assert_int_equal(r[1].v.i, START + i * SEC);
	assert_int_equal(r[2].v.i, i);
	assert_int_equal(r[3].v.i, value_of(h, i));
}

/* The next row of c must be host h, step i. */
static void next_is(ts_cursor *c, int h, long i)
{
	const ts_value *r;
	int n;
	if (ts_cursor_next(c, &r, &n) < 0)
		fail_msg("row h%02d/%ld: %s", h, i, ts_errmsg(NULL));
	assert_non_null(r);
	expect_row(r, n, h, i);
}

static void at_end(ts_cursor *c)
{
	const ts_value *r;
	int n;
	assert_int_equal(ts_cursor_next(c, &r, &n), 0);
	assert_null(r);
}

/* Scan steps [from, to) of every host, ascending or descending, checking
 * every row. */
static void scan(ts_table *t, long from, long to, int desc)
{
	ts_query q;
	ts_cursor *c;
	memset(&q, 0, sizeof q);
	q.desc = desc;
	if (from > 0 || to < STEPS) {
		q.from = START + from * SEC;
		q.to = START + to * SEC;
		q.has_from = q.has_to = 1;
	}
	assert_int_equal(ts_query_open(t, &q, &c), 0);
	for (int k = 0; k < HOSTS; k++)
		for (long j = from; j < to; j++)
			next_is(c, desc ? HOSTS - 1 - k : k, desc ? to - 1 - (j - from) : j);
	at_end(c);
	ts_cursor_close(c);
}

static void readahead_full_scan_both_ways(void **state)
{
	(void)state;
	ts_test_env *e = env_new(2);
	ts__tablet *tab = the_tablet(e);
	scan(e->t, 0, STEPS, 0);
	assert_int_equal(ts_test_stat(e->t, "blocks_read_ahead"), tab->nblocks - AHEAD_AFTER);
	scan(e->t, 0, STEPS, 1);
	assert_int_equal(ts_test_stat(e->t, "blocks_read_ahead"), 2 * (tab->nblocks - AHEAD_AFTER));
	assert_true(ts_test_stat(e->t, "blocks_read_ahead_by_helpers") <=
	            2 * (int64_t)(tab->nblocks - AHEAD_AFTER));
	ts__tablet_close(tab);
	ts_test_env_close(e);
	ts_test_env_teardown((void **)&e);
}

/* The helper decompresses what a stream queues: a scan that stops
 * reading after its first read-ahead (4 blocks queued) finds them all
 * decompressed by the helper, given time. */
static void readahead_helper_decompresses(void **state)
{
	(void)state;
	ts_test_env *e = env_new(2);
	ts__tablet *tab = the_tablet(e);
	ts_query q;
	ts_cursor *c;
	memset(&q, 0, sizeof q);
	assert_int_equal(ts_query_open(e->t, &q, &c), 0);
	/* the rows of the blocks before block AHEAD_AFTER - 1 and its first
	 * (the stream looks one row ahead, no further): loading that block
	 * queued the next TS_SCAN_READAHEAD_BLOCKS */
	long rows = 1;
	for (int b = 0; b < AHEAD_AFTER - 1; b++)
		rows += tab->blocks[b].rows;
	assert_true(tab->blocks[AHEAD_AFTER - 1].rows > 2);
	for (long k = 0; k < rows; k++)
		next_is(c, (int)(k / STEPS), k % STEPS);
	assert_int_equal(ts_test_stat(e->t, "blocks_read_ahead"), TS_SCAN_READAHEAD_BLOCKS);
	for (int waited = 0; ts_test_stat(e->t, "blocks_read_ahead_by_helpers") <
	                     TS_SCAN_READAHEAD_BLOCKS && waited < 10000; waited++)
		nanosleep(&(struct timespec){0, 1000000}, NULL);
	assert_int_equal(ts_test_stat(e->t, "blocks_read_ahead_by_helpers"), TS_SCAN_READAHEAD_BLOCKS);
	for (long k = rows; k < (long)HOSTS * STEPS; k++)
		next_is(c, (int)(k / STEPS), k % STEPS);
	at_end(c);
	ts_cursor_close(c);
	ts__tablet_close(tab);
	ts_test_env_close(e);
	ts_test_env_teardown((void **)&e);
}

/* A time range: the stream skips the blocks outside it, and reads ahead
 * exactly the blocks it loads. */
static void readahead_follows_the_blocks_a_scan_loads(void **state)
{
	(void)state;
	ts_test_env *e = env_new(2);
	ts__tablet *tab = the_tablet(e);
	long from = STEPS / 3, to = STEPS / 2;
	int64_t loaded = 0;
	for (uint32_t b = 0; b < tab->nblocks; b++)
		loaded += tab->blocks[b].max_ts >= START + from * SEC &&
		          tab->blocks[b].min_ts < START + to * SEC;
	assert_true(loaded < (int64_t)tab->nblocks / 2 && loaded > 2 * AHEAD_AFTER);
	scan(e->t, from, to, 0);
	assert_int_equal(ts_test_stat(e->t, "blocks_read_ahead"), loaded - AHEAD_AFTER);
	scan(e->t, from, to, 1);
	assert_int_equal(ts_test_stat(e->t, "blocks_read_ahead"), 2 * (loaded - AHEAD_AFTER));
	ts__tablet_close(tab);
	ts_test_env_close(e);
	ts_test_env_teardown((void **)&e);
}

/* A block the cache held when the stream looked ahead is not read
 * ahead; evicted before the stream comes to it, it is read then, and the
 * blocks read ahead after it are taken in their turn, not in its. */
static void readahead_block_evicted_before_its_turn(void **state)
{
	(void)state;
	ts_test_env *e = env_new_cache(2, 0); /* the default cache */
	ts__tablet *tab = the_tablet(e);
	const uint32_t held = AHEAD_AFTER + 1; /* the second block to read ahead */
	long at = 1, first = 1;                /* its second row; block 2's first */
	for (uint32_t b = 0; b < held; b++) {
		at += tab->blocks[b].rows;
		first += b < AHEAD_AFTER - 1 ? tab->blocks[b].rows : 0;
	}
	char host[16];
	snprintf(host, sizeof host, "h%02d", (int)(at / STEPS));
	ts_value h = ts_string(host);
	ts_query q;
	ts_cursor *c;
	memset(&q, 0, sizeof q);
	q.prefix = &h;
	q.nprefix = 1;
	q.from = START + (at % STEPS) * SEC;
	q.to = q.from + SEC;
	q.has_from = q.has_to = 1;
	assert_int_equal(ts_query_open(e->t, &q, &c), 0);
	next_is(c, (int)(at / STEPS), at % STEPS);
	at_end(c);
	ts_cursor_close(c);
	assert_int_equal(ts_test_stat(e->t, "block_cache_misses"), 1); /* `held`, now cached */
	/* a full scan to the first row of block AHEAD_AFTER - 1: it reads
	 * ahead the next blocks but `held` */
	memset(&q, 0, sizeof q);
	assert_int_equal(ts_query_open(e->t, &q, &c), 0);
	for (long k = 0; k < first; k++)
		next_is(c, (int)(k / STEPS), k % STEPS);
	assert_int_equal(ts_test_stat(e->t, "blocks_read_ahead"), TS_SCAN_READAHEAD_BLOCKS);
	/* the cache loses every block of the tablet, `held` with them */
	ts__bcache *bc = &e->db->bcache;
	assert_non_null(bc->head);
	ts__bcache_forget(bc, bc->head->serial, tab->nblocks);
	for (long k = first; k < (long)HOSTS * STEPS; k++)
		next_is(c, (int)(k / STEPS), k % STEPS);
	at_end(c);
	ts_cursor_close(c);
	assert_int_equal(ts_test_stat(e->t, "blocks_read_ahead"), tab->nblocks - AHEAD_AFTER - 1);
	assert_int_equal(ts_test_stat(e->t, "block_cache_misses"), 1 + tab->nblocks);
	ts__tablet_close(tab);
	ts_test_env_close(e);
	ts_test_env_teardown((void **)&e);
}

/* A range of a few blocks reads none ahead; nor does a database whose
 * flushes compress on one thread (no helper), whose scans are exact. */
static void readahead_none_for_short_ranges_or_one_thread(void **state)
{
	(void)state;
	ts_test_env *e = env_new(2);
	ts_value h = ts_string("h03");
	ts_query q;
	ts_cursor *c;
	memset(&q, 0, sizeof q);
	q.prefix = &h;
	q.nprefix = 1;
	q.from = START + 100 * SEC;
	q.to = START + 2000 * SEC;
	q.has_from = q.has_to = 1;
	assert_int_equal(ts_query_open(e->t, &q, &c), 0);
	for (long i = 100; i < 2000; i++)
		next_is(c, 3, i);
	at_end(c);
	ts_cursor_close(c);
	assert_int_equal(ts_test_stat(e->t, "blocks_read_ahead"), 0);
	ts_test_env_close(e);
	ts_test_env_teardown((void **)&e);

	e = env_new(1);
	scan(e->t, 0, STEPS, 0);
	scan(e->t, 0, STEPS, 1);
	assert_int_equal(ts_test_stat(e->t, "blocks_read_ahead"), 0);
	ts_test_env_close(e);
	ts_test_env_teardown((void **)&e);
}

/* Cursors closed in the middle of a long scan let go of the blocks read
 * ahead (those a helper holds are freed by it); the next scan is exact. */
static void readahead_cursor_closed_midway(void **state)
{
	(void)state;
	ts_test_env *e = env_new(2);
	for (long stop = 1; stop < (long)HOSTS * STEPS; stop = stop * 3 + 1001) {
		ts_query q;
		ts_cursor *c;
		memset(&q, 0, sizeof q);
		assert_int_equal(ts_query_open(e->t, &q, &c), 0);
		for (long k = 0; k < stop; k++)
			next_is(c, (int)(k / STEPS), k % STEPS);
		ts_cursor_close(c);
	}
	assert_true(ts_test_stat(e->t, "blocks_read_ahead") > 0);
	scan(e->t, 0, STEPS, 0);
	ts_test_env_close(e); /* joins the helper */
	ts_test_env_teardown((void **)&e);
}

/* A block damaged on disk, read ahead: the scan returns exactly the rows
 * before it, then TS_ECORRUPT naming the block -- reported by the
 * stream's own read when it comes to the block, as without read-ahead. */
static void readahead_damaged_block_reported_in_turn(void **state)
{
	(void)state;
	ts_test_env *e = env_new(2);
	ts__tablet *tab = the_tablet(e);
	const uint32_t bad = 10;
	long before = 0;
	for (uint32_t b = 0; b < bad; b++)
		before += tab->blocks[b].rows;
	ts_test_flip(tab->path, (long)(tab->blocks[bad].offset + TS_BLKH_SIZE + 7), 0x40);
	ts__tablet_close(tab);
	ts_query q;
	ts_cursor *c;
	const ts_value *r;
	int n;
	memset(&q, 0, sizeof q);
	assert_int_equal(ts_query_open(e->t, &q, &c), 0);
	for (long k = 0; k < before; k++)
		next_is(c, (int)(k / STEPS), k % STEPS);
	assert_int_equal(ts_cursor_next(c, &r, &n), TS_ECORRUPT);
	assert_non_null(strstr(ts_errmsg(NULL), "block 10"));
	assert_non_null(strstr(ts_errmsg(NULL), "checksum mismatch"));
	ts_cursor_close(c);
	assert_true(ts_test_stat(e->t, "blocks_read_ahead") >= bad - AHEAD_AFTER);
	ts_test_env_close(e);
	ts_test_env_teardown((void **)&e);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(readahead_full_scan_both_ways),
		cmocka_unit_test(readahead_helper_decompresses),
		cmocka_unit_test(readahead_follows_the_blocks_a_scan_loads),
		cmocka_unit_test(readahead_block_evicted_before_its_turn),
		cmocka_unit_test(readahead_none_for_short_ranges_or_one_thread),
		cmocka_unit_test(readahead_cursor_closed_midway),
		cmocka_unit_test(readahead_damaged_block_reported_in_turn),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
