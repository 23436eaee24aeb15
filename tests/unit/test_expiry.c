/*
 * test_expiry.c -- expired stays expired (issue 24, item 8): once a row
 * has passed the TTL it is never returned again, even when the TTL is
 * lengthened later, whether maintenance deleted its tablet, merged it,
 * or did nothing yet; across a reopen and in read-only handles too.  The
 * DESCRIPTOR keeps the expiry horizon (docs/descriptor-format.md).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "descriptor_format.h"
#include "maint.h"
#include "support.h"

#define NOW INT64_C(1795262400000000000) /* 2026-11-21T12:00:00Z */
#define SEC INT64_C(1000000000)
#define MIN (60 * SEC)
#define HOUR (60 * MIN)
#define DAY (24 * HOUR)

static int setup(void **state)
{
	ts_test_env *e = ts_test_env_new(NOW, 0);
	ts_test_env_close(e);
	ts_test_rmdir(e->dir);
	e->dir = ts_test_tmpdir();
	e->ttl = 6 * HOUR;
	ts_test_env_open(e);
	*state = e;
	return 0;
}

/* Rows: "h1" every minute from NOW - 50 min to NOW - 1 min (period
 * 08:00-12:00), and "old" at NOW - 5 h (period 04:00-08:00). */
static void load(ts_test_env *e)
{
	test_row r[51];
	memset(r, 0, sizeof r);
	for (int i = 0; i < 50; i++) {
		snprintf(r[i].host, sizeof r[i].host, "h1");
		r[i].ts = NOW - (50 - i) * MIN;
		r[i].v = i;
	}
	snprintf(r[50].host, sizeof r[50].host, "old");
	r[50].ts = NOW - 5 * HOUR;
	assert_int_equal(ts_test_insert_m(e->t, r, 51), 0);
}

/* The ts of the newest row of host, or 0 when none is returned. */
static int64_t latest(ts_table *t, const char *host)
{
	ts_cursor *c;
	const ts_value *row;
	ts_value prefix = ts_string(host);
	int64_t ts = 0;
	assert_int_equal(ts_latest_open(t, &prefix, 1, &c), 0);
	assert_int_equal(ts_cursor_next(c, &row, NULL), 0);
	if (row)
		ts = row[1].v.i;
	ts_cursor_close(c);
	return ts;
}

/* count(v) over all rows, one window of a day. */
static int64_t aggregate_count(ts_table *t)
{
	ts_cursor *c;
	const ts_value *row;
	ts_aggspec spec = {3, TS_AGG_COUNT};
	ts_aggregate a = {NULL, 0, NOW - DAY, NOW + DAY, 2 * DAY, 0, &spec, 1};
	int64_t n = 0;
	assert_int_equal(ts_aggregate_open(t, &a, &c), 0);
	while (ts_cursor_next(c, &row, NULL) == 0 && row)
		n += row[1].v.i;
	ts_cursor_close(c);
	return n;
}

/* What t must show once the clock reached NOW + 30 min with a TTL of 1 h
 * and the TTL was then made 1 day: rows before NOW - 30 min stay gone. */
static void expect_horizon(ts_table *t)
{
	assert_int_equal(ts_test_count_rows(t), 30);
	assert_int_equal(aggregate_count(t), 30);
	assert_int_equal(latest(t, "h1"), NOW - MIN);
	assert_int_equal(latest(t, "old"), 0);
}

static int64_t later_clock(void *arg)
{
	(void)arg;
	return NOW + 30 * MIN;
}

static void check_everywhere(ts_test_env *e)
{
	ts_options o;
	ts_db *ro;
	ts_table *t;
	expect_horizon(e->t);
	test_row r = {.host = "h2", .ts = NOW - 40 * MIN, .v = 1};
	assert_int_equal(ts_test_insert_m(e->t, &r, 1), TS_EEXPIRED);
	if (!strstr(ts_errmsg(NULL), "ts 2026-11-21T11:20:00Z is below the table's expiry horizon "
	                             "2026-11-21T11:30:00Z: rows before it passed an earlier TTL and "
	                             "stay expired"))
		fail_msg("message: %s", ts_errmsg(NULL));
	r.ts = NOW - 20 * MIN; /* above the horizon: taken */
	assert_int_equal(ts_test_insert_m(e->t, &r, 1), 0);
	ts_options_init(&o);
	o.flags = TS_OPEN_READONLY;
	o.clock = later_clock;
	assert_int_equal(ts_open(e->dir, &o, &ro), 0); /* another handle, beside the writer */
	assert_int_equal(ts_table_open(ro, "m", &t), 0);
	assert_int_equal(ts_test_count_rows(t), 31);
	ts_table_close(t);
	ts_close(ro);
	ts_test_env_close(e); /* reopen: the horizon is in the DESCRIPTOR */
	ts_test_env_open(e);
	assert_int_equal(ts_test_count_rows(e->t), 31);
	assert_int_equal(latest(e->t, "old"), 0);
	assert_int_equal(ts_flush(e->t, INT64_MAX), 0);
	int merged;
	assert_int_equal(ts_merge(e->t, &merged), 0);
	assert_int_equal(ts_test_count_rows(e->t), 31);
}

/* The rows never left the filling tablets; no maintenance ran. */
static void expiry_survives_longer_ttl_in_filling(void **state)
{
	ts_test_env *e = *state;
	load(e);
	assert_int_equal(ts_alter_ttl(e->t, HOUR), 0);
	ts_test_env_set_now(e, NOW + 30 * MIN);
	assert_int_equal(ts_test_count_rows(e->t), 30);
	assert_int_equal(ts_alter_ttl(e->t, DAY), 0);
	check_everywhere(e);
}

/* The rows were flushed, and maintenance deleted the expired tablet
 * (the other is partly expired) before the TTL was lengthened. */
static void expiry_survives_longer_ttl_after_maintenance(void **state)
{
	ts_test_env *e = *state;
	load(e);
	assert_int_equal(ts_flush(e->t, INT64_MAX), 0);
	assert_int_equal(ts_test_stat(e->t, "tablets"), 2);
	assert_int_equal(ts_alter_ttl(e->t, HOUR), 0);
	ts_test_env_set_now(e, NOW + 30 * MIN);
	assert_int_equal(ts__maint_pass(e->db), 0);
	assert_int_equal(ts_test_stat(e->t, "tablets"), 1);
	assert_int_equal(ts_test_count_rows(e->t), 30);
	assert_int_equal(ts_alter_ttl(e->t, DAY), 0);
	check_everywhere(e);
}

/* The rows were flushed and no maintenance ran; the TTL goes to 0
 * (forever): what had expired still never comes back. */
static void expiry_survives_ttl_forever(void **state)
{
	ts_test_env *e = *state;
	load(e);
	assert_int_equal(ts_flush(e->t, INT64_MAX), 0);
	assert_int_equal(ts_alter_ttl(e->t, HOUR), 0);
	ts_test_env_set_now(e, NOW + 30 * MIN);
	assert_int_equal(ts_alter_ttl(e->t, 0), 0);
	expect_horizon(e->t);
	ts_test_env_close(e);
	ts_test_env_open(e);
	expect_horizon(e->t);
}

/* A clock that jumps a year ahead for a while (a bad NTP step, a VM
 * restored) while the descriptor is written for another reason than the
 * TTL (here an added column) leaves no horizon behind: once the clock is
 * back, every row shows and inserts are taken.  Only lengthening the TTL
 * keeps a horizon, and the file stays in the format older builds read. */
static void expiry_clock_jump_leaves_no_horizon(void **state)
{
	ts_test_env *e = *state;
	ts_column extra = {"extra", TS_INT64, {.type = TS_INT64}};
	load(e);
	ts_test_env_set_now(e, NOW + 365 * DAY);
	assert_int_equal(ts_alter_add(e->t, &extra), 0);
	ts_test_env_set_now(e, NOW);
	assert_int_equal(ts_test_count_rows(e->t), 51);
	test_row r = {.host = "h2", .ts = NOW - MIN, .v = 1};
	assert_int_equal(ts_test_insert_m(e->t, &r, 1), 0);
	assert_int_equal(ts_test_desc_version(e), 1);
	assert_int_equal(ts_alter_ttl(e->t, HOUR), 0); /* shorter: no horizon needed */
	assert_int_equal(ts_test_desc_version(e), 1);
	assert_int_equal(ts_alter_ttl(e->t, DAY), 0); /* longer: the horizon is kept */
	assert_int_equal(ts_test_desc_version(e), 2);
	assert_int_equal(ts_test_count_rows(e->t), 51); /* all within the hour */
	ts_test_env_close(e);
	ts_test_env_open(e);
	assert_int_equal(ts_test_count_rows(e->t), 51);
}

int main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, setup, ts_test_env_teardown)
	const struct CMUnitTest tests[] = {
		T(expiry_survives_longer_ttl_in_filling),
		T(expiry_survives_longer_ttl_after_maintenance),
		T(expiry_survives_ttl_forever),
		T(expiry_clock_jump_leaves_no_horizon),
	};
#undef T
	return cmocka_run_group_tests_name("expiry", tests, NULL, NULL);
}
