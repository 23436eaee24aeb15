/*
 * support_table.c -- a table "m" under a test's clock, a sorted model of
 * the rows inserted into it, and checks of its counters and tablet files
 * (support.h).  Shared by the flush, merge and crash tests.
 */
#include <dirent.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "buf.h"
#include "descriptor_format.h"
#include "handle.h"
#include "log.h"
#include "maint.h"
#include "snapshot.h"
#include "support.h"
#include "tablet.h"

/* The test's clock; the maintenance thread reads it too. */
static int64_t env_clock(void *arg)
{
	return __atomic_load_n((int64_t *)arg, __ATOMIC_RELAXED);
}

void ts_test_env_set_now(ts_test_env *e, int64_t now)
{
	__atomic_store_n(&e->now, now, __ATOMIC_RELAXED);
}

void ts_test_env_open(ts_test_env *e)
{
	ts_options o;
	ts_options_init(&o);
	o.flags = TS_OPEN_CREATE | e->flags;
	o.sync = TS_SYNC_NONE;
	o.clock = env_clock;
	o.clock_arg = &e->now;
	if (e->flush_size)
		o.flush_size = e->flush_size;
	if (e->merge_delay)
		o.merge_delay = e->merge_delay;
	if (e->merge_max_size)
		o.merge_max_size = e->merge_max_size;
	if (e->log_cap)
		o.log_cap = e->log_cap;
	if (e->log_segment_size)
		o.log_segment_size = e->log_segment_size;
	o.merge_slice_rows = e->merge_slice_rows;
	o.merge_rollover_spread = e->merge_rollover_spread;
	o.maint_busy_window = e->maint_busy_window;
	o.maint_busy_share = e->maint_busy_share;
	if (e->flush_threads)
		o.flush_threads = e->flush_threads;
	if (e->block_cache_size)
		o.block_cache_size = e->block_cache_size < 0 ? 0 : e->block_cache_size;
	o.log = e->log;
	o.log_arg = e->log_arg;
	if (ts_open(e->dir, &o, &e->db) < 0)
		fail_msg("open: %s", ts_errmsg(NULL));
	if (e->hold_maintenance)
		ts__maint_hold(e->db, 1);
	if (ts_table_open(e->db, "m", &e->t) < 0) {
		ts_test_create_m(e->db, e->ttl);
		assert_int_equal(ts_table_open(e->db, "m", &e->t), 0);
	}
}

ts_test_env *ts_test_env_new(int64_t now, unsigned flags)
{
	ts_test_env *e = calloc(1, sizeof *e);
	assert_non_null(e);
	e->dir = ts_test_tmpdir();
	e->now = now;
	e->flags = flags;
	ts_test_env_open(e);
	return e;
}

ts_test_env *ts_test_env_new_held(int64_t now)
{
	ts_test_env *e = ts_test_env_new(now, TS_OPEN_NOMERGE);
	ts__maint_hold(e->db, 1);
	e->hold_maintenance = 1;
	return e;
}

uint32_t ts_test_desc_version(const ts_test_env *e)
{
	char path[4300];
	unsigned char h[TS_DESC_HEADER_SIZE];
	snprintf(path, sizeof path, "%s/m/" TS_DESC_FILE, e->dir);
	FILE *f = fopen(path, "rb");
	assert_non_null(f);
	assert_int_equal(fread(h, 1, sizeof h, f), sizeof h);
	fclose(f);
	return ts__load_u32(h + TS_DESC_OFF_VERSION);
}

int ts_test_env_teardown(void **state)
{
	ts_test_env *e = *state;
	if (e->db)
		ts_test_env_close(e);
	ts_test_rmdir(e->dir);
	free(e);
	return 0;
}

void ts_test_env_close(ts_test_env *e)
{
	ts_table_close(e->t);
	assert_int_equal(ts_close(e->db), 0);
	e->t = NULL;
	e->db = NULL;
}

void ts_test_env_reopen(ts_test_env *e)
{
	ts_test_env_close(e);
	ts_test_env_open(e);
}

void ts_test_model_add(ts_test_model *m, const test_row *r, size_t n)
{
	if (m->n + n > m->cap) {
		m->cap = (m->n + n) * 2;
		m->rows = realloc(m->rows, m->cap * sizeof *m->rows);
		assert_non_null(m->rows);
	}
	memcpy(m->rows + m->n, r, n * sizeof *r);
	m->n += n;
	qsort(m->rows, m->n, sizeof *m->rows, ts_test_row_cmp);
}

void ts_test_expect_model(ts_table *t, const ts_test_model *m, int64_t min_ts)
{
	test_row *got;
	long n = ts_test_read_m(t, &got), j = 0;
	if (n < 0)
		fail_msg("read: %s", ts_errmsg(NULL));
	for (size_t i = 0; i < m->n; i++) {
		if (m->rows[i].ts < min_ts)
			continue;
		if (j >= n)
			fail_msg("row %ld: missing %s/%lld", j, m->rows[i].host, (long long)m->rows[i].ts);
		if (memcmp(&got[j], &m->rows[i], sizeof got[j]) != 0)
			fail_msg("row %ld: got %s/%lld, want %s/%lld", j, got[j].host,
			         (long long)got[j].ts, m->rows[i].host, (long long)m->rows[i].ts);
		j++;
	}
	assert_int_equal(n, j);
	free(got);
}

int64_t ts_test_stat(ts_table *t, const char *name)
{
	ts_stat st[TS_STATS_MAX];
	int n;
	assert_int_equal(ts_table_stats(t, st, TS_STATS_MAX, &n), 0);
	for (int i = 0; i < n; i++)
		if (strcmp(st[i].name, name) == 0)
			return st[i].value;
	fail_msg("no stat %s", name);
	return -1;
}

int ts_test_log_settle(ts_table *t)
{
	for (int i = 0; i < 10000; i++) {
		if (!ts__log_drops_pending(t->log))
			return 1;
		usleep(1000);
	}
	return 0;
}

void ts_test_check_tablets(ts_table *t)
{
	ts__snapshot s;
	assert_int_equal(ts__snapshot_take(t, &s), 0);
	for (int i = 0; i < s.ntablets; i++) {
		const ts__tablet *tab = s.tablets[i];
		assert_int_equal(ts__tablet_check(tab, s.versions[tab->schema_version - 1]), 0);
		assert_int_equal(tab->rows, s.metas[i].rows);
		assert_int_equal(tab->min_ts, s.metas[i].min_ts);
		assert_int_equal(tab->max_ts, s.metas[i].max_ts);
	}
	ts__snapshot_release(&s);
}

int ts_test_count_files(const char *dir, const char *suffix)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;
	if (!d)
		return 0;
	while ((e = readdir(d)))
		if (strlen(e->d_name) > strlen(suffix) &&
		    strcmp(e->d_name + strlen(e->d_name) - strlen(suffix), suffix) == 0)
			n++;
	closedir(d);
	return n;
}

int ts_test_sum_fifth(const ts_value *v, int n, void *arg)
{
	int64_t *acc = arg;
	if (n != 5)
		return TS_ECORRUPT;
	acc[0]++;
	acc[1] += v[4].v.i;
	return 0;
}

void ts_test_expect_copy_m(const char *dir, unsigned flags, ts_table *want)
{
	ts_options o;
	ts_db *db = NULL;
	ts_table *t = NULL;
	test_row *w = NULL, *got = NULL;
	ts_options_init(&o);
	o.sync = TS_SYNC_NONE;
	o.flags = flags;
	if (ts_open(dir, &o, &db) < 0)
		fail_msg("open %s: %s", dir, ts_errmsg(NULL));
	assert_int_equal(ts_table_open(db, "m", &t), 0);
	long nw = ts_test_read_m(want, &w), ng = ts_test_read_m(t, &got);
	assert_true(nw > 0);
	assert_int_equal(ng, nw);
	assert_memory_equal(got, w, (size_t)nw * sizeof *w);
	ts_table_close(t);
	if (ts_check(db, NULL, NULL) < 0)
		fail_msg("check %s: %s", dir, ts_errmsg(NULL));
	assert_int_equal(ts_close(db), 0);
	free(w);
	free(got);
}
