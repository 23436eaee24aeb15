/*
 * test_misuse.c -- the library API under misuse (issue 24 item 6): every
 * public function given a NULL handle, a NULL required argument or a
 * count that contradicts its array returns TS_EINVAL with a message; a
 * table or database closed while another thread is inside a call on it
 * waits for that call (or, with cursors open, is refused with TS_EBUSY);
 * a handle closed twice is detected, not undefined.
 *
 * The "inside a call" tests hold a thread inside ts_insert without any
 * timing: the database clock is a callback, and ts_insert reads the clock
 * under the table's writer lock, so the callback, when called from the
 * inserting thread, blocks until the test lets it go.  The test sees the
 * closing thread reach its wait by a condition (calls on the handle fail
 * with TS_ECLOSED once the close began), never by sleeping.
 */
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cmocka.h>

#include "error.h"
#include "handle.h"
#include "support.h"

#define NOW INT64_C(1795262400000000000) /* 2026-11-21T12:00:00Z */

/* The clock: blocks the thread named in `held` until released. */
static struct {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	pthread_t held;
	int holding, inside, release;
} gate = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};

static int64_t gate_clock(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&gate.mu);
	if (gate.holding && pthread_equal(gate.held, pthread_self())) {
		gate.inside = 1;
		pthread_cond_broadcast(&gate.cv);
		while (!gate.release)
			pthread_cond_wait(&gate.cv, &gate.mu);
	}
	pthread_mutex_unlock(&gate.mu);
	return NOW;
}

struct env {
	char *dir;
	ts_db *db;
	ts_table *t;
};

static int setup(void **state)
{
	struct env *e = calloc(1, sizeof *e);
	ts_options o;
	e->dir = ts_test_tmpdir();
	ts_options_init(&o);
	o.flags = TS_OPEN_CREATE;
	o.sync = TS_SYNC_NONE;
	o.clock = gate_clock;
	if (ts_open(e->dir, &o, &e->db) < 0)
		fail_msg("open: %s", ts_errmsg(NULL));
	ts_test_create_m(e->db, 0);
	assert_int_equal(ts_table_open(e->db, "m", &e->t), 0);
	gate.holding = gate.inside = gate.release = 0;
	*state = e;
	return 0;
}

static int teardown(void **state)
{
	struct env *e = *state;
	if (e->t)
		ts_table_close(e->t);
	if (e->db)
		assert_int_equal(ts_close(e->db), 0);
	ts_test_rmdir(e->dir);
	free(e);
	return 0;
}

/* ---- NULLs and contradictions ---- */

struct args {
	struct env *e;
	ts_cursor *cur;
	ts_schema *schema;
};

typedef int call_fn(struct args *a);

struct misuse {
	const char *what;
	call_fn *call;
};

static const ts_value one_value[1] = {{TS_INT64, {.i = 1}}};
static const ts_column m_cols[2] = {{"host", TS_STRING, {TS_NONE, {0}}},
                                    {"ts", TS_TIMESTAMP, {TS_NONE, {0}}}};
static const char *const m_key[2] = {"host", "ts"};

#define CASE(name, expr) \
	static int name(struct args *a) { (void)a; return (expr); }

CASE(type_parse_name, ts_type_parse(NULL, &(ts_type){0}))
CASE(type_parse_out, ts_type_parse("int32", NULL))
CASE(time_parse_text, ts_time_parse(NULL, &(int64_t){0}))
CASE(time_parse_out, ts_time_parse("0", NULL))
CASE(time_format_buf, ts_time_format(0, NULL, TS_TIME_BUFSZ))
CASE(duration_parse_text, ts_duration_parse(NULL, &(int64_t){0}))
CASE(duration_parse_out, ts_duration_parse("1s", NULL))
CASE(duration_format_buf, ts_duration_format(0, NULL, TS_DURATION_BUFSZ))
CASE(sync_mode_parse_text, ts_sync_mode_parse(NULL, &(ts_sync_mode){0}))
CASE(sync_mode_parse_out, ts_sync_mode_parse("none", NULL))
CASE(aggfn_parse_name, ts_aggfn_parse(NULL, &(ts_aggfn){0}))
CASE(aggfn_parse_out, ts_aggfn_parse("sum", NULL))
CASE(on_duplicate_parse_text, ts_on_duplicate_parse(NULL, &(ts_on_duplicate){0}))
CASE(on_duplicate_parse_out, ts_on_duplicate_parse("ignore", NULL))
CASE(open_path, ts_open(NULL, NULL, &(ts_db *){NULL}))
CASE(open_out, ts_open(a->e->dir, NULL, NULL))
CASE(sync_db, ts_sync(NULL))
CASE(tables_db, ts_tables(NULL, &(char **){NULL}, NULL))
CASE(tables_out, ts_tables(a->e->db, NULL, NULL))
CASE(create_db, ts_create(NULL, "x", a->schema))
CASE(create_name, ts_create(a->e->db, NULL, a->schema))
CASE(create_schema, ts_create(a->e->db, "x", NULL))
CASE(create_columns, ts_create(a->e->db, "x",
                               &(ts_schema){.ncolumns = 2, .nkey = 1, .key = (const int[]){1}}))
CASE(create_key, ts_create(a->e->db, "x", &(ts_schema){.ncolumns = 2, .columns = m_cols, .nkey = 1}))
CASE(create_keyed_db, ts_create_keyed(NULL, "x", m_cols, 2, m_key, 2, 0))
CASE(create_keyed_columns, ts_create_keyed(a->e->db, "x", NULL, 2, m_key, 2, 0))
CASE(create_keyed_key, ts_create_keyed(a->e->db, "x", m_cols, 2, NULL, 2, 0))
CASE(create_keyed_ncolumns, ts_create_keyed(a->e->db, "x", m_cols, -1, m_key, 2, 0))
CASE(create_keyed_v2_db, ts_create_keyed_v2(NULL, "x", m_cols, 2, m_key, 2, 0,
                                            TS_ON_DUPLICATE_IGNORE))
CASE(create_keyed_v2_key, ts_create_keyed_v2(a->e->db, "x", m_cols, 2, NULL, 2, 0,
                                             TS_ON_DUPLICATE_IGNORE))
CASE(create_keyed_v2_policy, ts_create_keyed_v2(a->e->db, "x", m_cols, 2, m_key, 2, 0,
                                                (ts_on_duplicate)9))
CASE(create_policy, ts_create(a->e->db, "x", &(ts_schema){.ncolumns = 2, .columns = m_cols,
                              .nkey = 2, .key = (const int[]){0, 1}, .on_duplicate = 9}))
CASE(drop_db, ts_drop(NULL, "m"))
CASE(drop_name, ts_drop(a->e->db, NULL))
CASE(table_open_db, ts_table_open(NULL, "m", &(ts_table *){NULL}))
CASE(table_open_name, ts_table_open(a->e->db, NULL, &(ts_table *){NULL}))
CASE(table_open_out, ts_table_open(a->e->db, "m", NULL))
CASE(table_schema_table, ts_table_schema(NULL, &(ts_schema *){NULL}))
CASE(table_schema_out, ts_table_schema(a->e->t, NULL))
CASE(alter_add_table, ts_alter_add(NULL, &m_cols[0]))
CASE(alter_add_column, ts_alter_add(a->e->t, NULL))
CASE(alter_widen_table, ts_alter_widen(NULL, "n"))
CASE(alter_widen_column, ts_alter_widen(a->e->t, NULL))
CASE(alter_ttl_table, ts_alter_ttl(NULL, 1))
CASE(alter_on_duplicate_table, ts_alter_on_duplicate(NULL, TS_ON_DUPLICATE_IGNORE))
CASE(alter_on_duplicate_policy, ts_alter_on_duplicate(a->e->t, (ts_on_duplicate)-3))
CASE(insert_table, ts_insert(NULL, one_value, 1))
CASE(insert_rows, ts_insert(a->e->t, NULL, 1))
CASE(insert_at_table, ts_insert_at(NULL, 1, one_value, 1))
CASE(insert_at_rows, ts_insert_at(a->e->t, 1, NULL, 1))
CASE(insert_counted_table, ts_insert_counted(NULL, 1, one_value, 1, &(size_t){0}))
CASE(insert_counted_rows, ts_insert_counted(a->e->t, 1, NULL, 1, &(size_t){0}))
CASE(query_table, ts_query_open(NULL, &(ts_query){0}, &(ts_cursor *){NULL}))
CASE(query_q, ts_query_open(a->e->t, NULL, &(ts_cursor *){NULL}))
CASE(query_out, ts_query_open(a->e->t, &(ts_query){0}, NULL))
CASE(query_prefix, ts_query_open(a->e->t, &(ts_query){.nprefix = 1}, &(ts_cursor *){NULL}))
CASE(query_lower, ts_query_open(a->e->t, &(ts_query){.nlower = 1}, &(ts_cursor *){NULL}))
CASE(query_upper, ts_query_open(a->e->t, &(ts_query){.nupper = 1}, &(ts_cursor *){NULL}))
CASE(query_columns, ts_query_open(a->e->t, &(ts_query){.ncolumns = 1}, &(ts_cursor *){NULL}))
CASE(query_after, ts_query_open(a->e->t, &(ts_query){.nafter = 2}, &(ts_cursor *){NULL}))
CASE(latest_table, ts_latest_open(NULL, NULL, 0, &(ts_cursor *){NULL}))
CASE(latest_prefix, ts_latest_open(a->e->t, NULL, 1, &(ts_cursor *){NULL}))
CASE(latest_out, ts_latest_open(a->e->t, NULL, 0, NULL))
CASE(aggregate_table, ts_aggregate_open(NULL, &(ts_aggregate){.from = 0, .to = 1, .every = 1},
                                        &(ts_cursor *){NULL}))
CASE(aggregate_req, ts_aggregate_open(a->e->t, NULL, &(ts_cursor *){NULL}))
CASE(aggregate_out, ts_aggregate_open(a->e->t, &(ts_aggregate){.from = 0, .to = 1, .every = 1}, NULL))
CASE(aggregate_specs, ts_aggregate_open(a->e->t, &(ts_aggregate){.to = 1, .every = 1, .nspecs = 1},
                                        &(ts_cursor *){NULL}))
CASE(aggregate_prefix, ts_aggregate_open(a->e->t, &(ts_aggregate){.to = 1, .every = 1, .nprefix = 1},
                                         &(ts_cursor *){NULL}))
CASE(changes_table, ts_changes_open(NULL, &(ts_changes_spec){0}, &(ts_cursor *){NULL}))
CASE(changes_spec, ts_changes_open(a->e->t, NULL, &(ts_cursor *){NULL}))
CASE(changes_out, ts_changes_open(a->e->t, &(ts_changes_spec){0}, NULL))
CASE(cursor_next_cur, ts_cursor_next(NULL, &(const ts_value *){NULL}, NULL))
CASE(cursor_next_row, ts_cursor_next(a->cur, NULL, NULL))
CASE(cursor_rewind_cur, ts_cursor_rewind(NULL))
CASE(cursor_resume_cur, ts_cursor_resume(NULL, &(const ts_value *){NULL}, &(int){0}))
CASE(cursor_resume_key, ts_cursor_resume(a->cur, NULL, &(int){0}))
CASE(cursor_resume_nkey, ts_cursor_resume(a->cur, &(const ts_value *){NULL}, NULL))
CASE(flush_table, ts_flush(NULL, INT64_MAX))
CASE(merge_table, ts_merge(NULL, NULL))
CASE(stats_table, ts_table_stats(NULL, (ts_stat[1]){{0}}, 1, &(int){0}))
CASE(stats_out, ts_table_stats(a->e->t, NULL, 1, &(int){0}))
CASE(stats_n, ts_table_stats(a->e->t, (ts_stat[1]){{0}}, 1, NULL))
CASE(stats_room, ts_table_stats(a->e->t, (ts_stat[1]){{0}}, -1, &(int){0}))
CASE(check_db, ts_check(NULL, NULL, NULL))
CASE(backup_db, ts_backup(NULL, "x"))
CASE(backup_dest, ts_backup(a->e->db, NULL))
CASE(backup_incremental_db, ts_backup_incremental(NULL, "x"))
CASE(backup_incremental_dest, ts_backup_incremental(a->e->db, NULL))
CASE(epoch_get_db, ts_epoch_get(NULL, &(ts_epoch){{0}, 0}))
CASE(epoch_get_out, ts_epoch_get(a->e->db, NULL))
CASE(epoch_raise_db, ts_epoch_raise(NULL, NULL))
CASE(epoch_adopt_db, ts_epoch_adopt(NULL, &(ts_epoch){{0}, 1}))
CASE(epoch_adopt_e, ts_epoch_adopt(a->e->db, NULL))
CASE(epoch_fence_db, ts_epoch_fence(NULL, 2))
CASE(epoch_fenced_by_db, ts_epoch_fenced_by(NULL, &(uint64_t){0}))
CASE(epoch_fenced_by_out, ts_epoch_fenced_by(a->e->db, NULL))
CASE(ship_open_table, ts_ship_open(NULL, 0, NULL, 0, &(ts_ship *){NULL}))
CASE(ship_open_out, ts_ship_open(a->e->t, 0, NULL, 0, NULL))
CASE(ship_open_tablets, ts_ship_open(a->e->t, 0, NULL, 1, &(ts_ship *){NULL}))
CASE(ship_next_ship, ts_ship_next(NULL, &(ts_frame){0}))
CASE(ship_heartbeat_ship, ts_ship_heartbeat(NULL, &(ts_frame){0}))
CASE(frame_header_table, ts_frame_header(NULL, &(ts_frame){0}, (char[64]){0}, 64, &(size_t){0}))
CASE(frame_header_frame, ts_frame_header("m", NULL, (char[64]){0}, 64, &(size_t){0}))
CASE(frame_decode_in, ts_frame_decode(NULL, 0, &(ts_frame){0}, (char[80]){0}, &(size_t){0}))
CASE(frame_decode_table, ts_frame_decode("x", 1, &(ts_frame){0}, NULL, &(size_t){0}))
CASE(standby_open_dir, ts_standby_open(NULL, &(ts_standby *){NULL}))
CASE(standby_open_out, ts_standby_open("x", NULL))
CASE(standby_apply_standby, ts_standby_apply(NULL, "m", &(ts_frame){0}))
CASE(standby_state_standby, ts_standby_state(NULL, &(ts_standby_table *){NULL}, &(int){0}))
CASE(standby_sync_standby, ts_standby_sync(NULL))
CASE(standby_adopt_standby, ts_standby_adopt(NULL, &(ts_epoch){{0}, 1}))

#define M(name) {#name, name}
static const struct misuse misuses[] = {
	M(type_parse_name), M(type_parse_out), M(time_parse_text), M(time_parse_out),
	M(time_format_buf), M(duration_parse_text), M(duration_parse_out), M(duration_format_buf),
	M(sync_mode_parse_text), M(sync_mode_parse_out), M(aggfn_parse_name), M(aggfn_parse_out),
	M(on_duplicate_parse_text), M(on_duplicate_parse_out), M(create_keyed_v2_db),
	M(create_keyed_v2_key), M(create_keyed_v2_policy), M(create_policy),
	M(alter_on_duplicate_table), M(alter_on_duplicate_policy), M(insert_counted_table),
	M(insert_counted_rows),
	M(open_path), M(open_out), M(sync_db), M(tables_db), M(tables_out), M(create_db),
	M(create_name), M(create_schema), M(create_columns), M(create_key), M(create_keyed_db),
	M(create_keyed_columns), M(create_keyed_key), M(create_keyed_ncolumns), M(drop_db),
	M(drop_name), M(table_open_db), M(table_open_name), M(table_open_out),
	M(table_schema_table), M(table_schema_out), M(alter_add_table), M(alter_add_column),
	M(alter_widen_table), M(alter_widen_column), M(alter_ttl_table), M(insert_table),
	M(insert_rows), M(insert_at_table), M(insert_at_rows), M(query_table), M(query_q),
	M(query_out), M(query_prefix), M(query_lower), M(query_upper), M(query_columns),
	M(query_after), M(latest_table), M(latest_prefix), M(latest_out), M(aggregate_table),
	M(aggregate_req), M(aggregate_out), M(aggregate_specs), M(aggregate_prefix),
	M(cursor_next_cur), M(cursor_next_row), M(cursor_rewind_cur), M(cursor_resume_cur),
	M(cursor_resume_key), M(cursor_resume_nkey), M(flush_table), M(merge_table),
	M(stats_table), M(stats_out), M(stats_n), M(stats_room), M(check_db), M(backup_db),
	M(backup_dest), M(backup_incremental_db), M(backup_incremental_dest), M(changes_table), M(changes_spec), M(changes_out),
	M(epoch_get_db), M(epoch_get_out), M(epoch_raise_db), M(epoch_adopt_db), M(epoch_adopt_e), M(epoch_fence_db), M(epoch_fenced_by_db),
	M(epoch_fenced_by_out), M(ship_open_table), M(ship_open_out),
	M(ship_open_tablets), M(ship_next_ship), M(ship_heartbeat_ship), M(frame_header_table),
	M(frame_header_frame), M(frame_decode_in), M(frame_decode_table), M(standby_open_dir),
	M(standby_open_out), M(standby_apply_standby), M(standby_state_standby),
	M(standby_sync_standby), M(standby_adopt_standby),
};

/* Every entry: TS_EINVAL and a message of its own (not the one left by
 * the call before), and nothing changed: no table x was made. */
static void misuse_null_arguments(void **state)
{
	struct env *e = *state;
	struct args a = {.e = e};
	char **names = NULL;
	int n = -1;
	assert_int_equal(ts_table_schema(e->t, &a.schema), 0);
	assert_int_equal(ts_query_open(e->t, &(ts_query){0}, &a.cur), 0);
	for (size_t i = 0; i < sizeof misuses / sizeof *misuses; i++) {
		assert_int_equal(ts_type_parse("sentinel", &(ts_type){0}), TS_EINVAL);
		int rc = misuses[i].call(&a);
		if (rc != TS_EINVAL)
			fail_msg("%s: got %d (%s), want TS_EINVAL", misuses[i].what, rc, ts_errmsg(NULL));
		if (!ts_errmsg(NULL)[0] || strstr(ts_errmsg(NULL), "sentinel"))
			fail_msg("%s: no message of its own (\"%s\")", misuses[i].what, ts_errmsg(NULL));
	}
	ts_cursor_close(a.cur);
	ts_schema_free(a.schema);
	assert_int_equal(ts_tables(e->db, &names, &n), 0);
	assert_int_equal(n, 1);
	assert_string_equal(names[0], "m");
	ts_free_names(names);
}

/* The functions with no error code: NULL is harmless and documented. */
static void misuse_null_no_code(void **state)
{
	(void)state;
	ts_options_init(NULL);
	ts_table_close(NULL);
	ts_cursor_close(NULL);
	ts_schema_free(NULL);
	ts_free_names(NULL);
	assert_int_equal(ts_close(NULL), 0);
	assert_int_equal(ts_now(NULL), 0);
	assert_string_equal(ts_errmsg(NULL), "ts_now: db is NULL");
	assert_null(ts_table_name(NULL));
	assert_string_equal(ts_errmsg(NULL), "ts_table_name: table is NULL");
	assert_int_equal(ts_cursor_more(NULL), 0);
	assert_string_equal(ts_errmsg(NULL), "ts_cursor_more: cursor is NULL");
	ts_value v = ts_string(NULL);
	assert_int_equal(v.type, TS_STRING);
	assert_int_equal(v.v.s.len, 0);
	assert_int_equal(ts_name_valid(NULL), 0);
}

/* ---- closing under a call ---- */

struct inserter {
	ts_table *t;
	pthread_t th;
	int rc;
};

static void *insert_main(void *arg)
{
	struct inserter *in = arg;
	test_row r = {"held", NOW - 1000, 1, 1};
	in->rc = ts_test_insert_m(in->t, &r, 1);
	return NULL;
}

/* Start a thread inside ts_insert on t, held in the clock. */
static void hold_inside_insert(struct inserter *in, ts_table *t)
{
	in->t = t;
	pthread_mutex_lock(&gate.mu);
	gate.release = gate.inside = 0;
	assert_int_equal(pthread_create(&in->th, NULL, insert_main, in), 0);
	gate.held = in->th;
	gate.holding = 1;
	pthread_cond_broadcast(&gate.cv);
	pthread_mutex_unlock(&gate.mu);
	/* the thread may have read the clock before holding was set: then it
	 * does not block; a second insert would, but one suffices when it
	 * did, which the condition below waits for */
	pthread_mutex_lock(&gate.mu);
	while (!gate.inside)
		pthread_cond_wait(&gate.cv, &gate.mu);
	pthread_mutex_unlock(&gate.mu);
}

static void let_go(void)
{
	pthread_mutex_lock(&gate.mu);
	gate.release = 1;
	gate.holding = 0;
	pthread_cond_broadcast(&gate.cv);
	pthread_mutex_unlock(&gate.mu);
}

struct closer {
	struct env *e;
	int close_db;
	pthread_t th;
	int done, rc;
};

static void *close_main(void *arg)
{
	struct closer *c = arg;
	if (c->close_db) {
		c->rc = ts_close(c->e->db);
	} else {
		ts_table_close(c->e->t);
	}
	__atomic_store_n(&c->done, 1, __ATOMIC_SEQ_CST);
	return NULL;
}

static int64_t mono_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec;
}

/* Wait until probe() fails with TS_ECLOSED (the close began) or the
 * closer returned; a minute as a backstop only.  Returns 1 when the
 * closer returned, 0 when it is closing, -1 when neither happened.  The
 * message of the probe is kept in msg. */
static int wait_closing(struct closer *c, int (*probe)(struct env *), char *msg, size_t size)
{
	int64_t until = mono_s() + 60;
	for (;;) {
		if (__atomic_load_n(&c->done, __ATOMIC_SEQ_CST))
			return 1;
		if (probe(c->e) == TS_ECLOSED) {
			snprintf(msg, size, "%s", ts_errmsg(NULL));
			return __atomic_load_n(&c->done, __ATOMIC_SEQ_CST);
		}
		if (mono_s() > until)
			return -1;
		sched_yield();
	}
}

/* Whether the close of e->t began: its count of handles is 0.  (A call
 * on the handle would say so too, but would wait for the table's writer
 * lock, which the held insert has.) */
static int probe_table(struct env *e)
{
	pthread_mutex_lock(&e->db->life_mu);
	int refs = e->t->refs;
	pthread_mutex_unlock(&e->db->life_mu);
	if (refs > 0)
		return 0;
	ts__fail(TS_ECLOSED, "closing");
	return TS_ECLOSED;
}

static int probe_db(struct env *e)
{
	char **names = NULL;
	int rc = ts_tables(e->db, &names, NULL);
	ts_free_names(names);
	return rc;
}

/* The last ts_table_close of a table waits for a call inside it: before,
 * it returned at once (and a ts_close after it freed the table under the
 * insert). */
static void misuse_table_close_waits_for_insert(void **state)
{
	struct env *e = *state;
	struct inserter in;
	struct closer c = {.e = e};
	hold_inside_insert(&in, e->t);
	assert_int_equal(pthread_create(&c.th, NULL, close_main, &c), 0);
	char msg[256] = "";
	int state_ = wait_closing(&c, probe_table, msg, sizeof msg);
	let_go();
	pthread_join(in.th, NULL);
	pthread_join(c.th, NULL);
	e->t = NULL;
	if (state_ != 0)
		fail_msg("ts_table_close %s", state_ > 0 ? "returned while a thread was inside ts_insert"
		                                         : "neither waited nor returned");
	assert_int_equal(in.rc, 0);
	ts_stat st[TS_STATS_MAX];
	int n;
	assert_int_equal(ts_table_stats(in.t, st, TS_STATS_MAX, &n), TS_ECLOSED);
	assert_string_equal(ts_errmsg(NULL), "ts_table_stats: table \"m\" is not open (closed)");
	/* the row is there */
	test_row *rows;
	assert_int_equal(ts_table_open(e->db, "m", &e->t), 0);
	assert_int_equal(ts_test_read_m(e->t, &rows), 1);
	free(rows);
}

/* ts_close waits for a call inside one of its tables (before: it freed
 * the table under it, and the insert crashed when it went on). */
static void misuse_db_close_waits_for_insert(void **state)
{
	struct env *e = *state;
	struct inserter in;
	struct closer c = {.e = e, .close_db = 1};
	hold_inside_insert(&in, e->t);
	assert_int_equal(pthread_create(&c.th, NULL, close_main, &c), 0);
	char msg[256] = "";
	int state_ = wait_closing(&c, probe_db, msg, sizeof msg);
	if (state_ > 0)
		fail_msg("ts_close returned while a thread was inside ts_insert");
	let_go();
	pthread_join(in.th, NULL);
	pthread_join(c.th, NULL);
	if (state_ < 0)
		fail_msg("ts_close neither waited nor returned");
	assert_string_equal(msg, "ts_tables: the database is closing");
	assert_int_equal(in.rc, 0);
	assert_int_equal(c.rc, 0);
	e->t = NULL; /* closed with the db */
	e->db = NULL;
}

/* A ts_table_close while ts_close waits for a call still closes its
 * handle: ts_close may yet return TS_EBUSY (a call inside may open a
 * cursor) and leave the database open, with the handle's count right.
 * Before, the table close returned at once and did nothing. */
static void misuse_table_close_while_db_close_waits(void **state)
{
	struct env *e = *state;
	struct inserter in;
	struct closer c = {.e = e, .close_db = 1};
	ts_table *t2;
	assert_int_equal(ts_table_open(e->db, "m", &t2), 0);
	hold_inside_insert(&in, e->t);
	assert_int_equal(pthread_create(&c.th, NULL, close_main, &c), 0);
	char msg[256] = "";
	int state_ = wait_closing(&c, probe_db, msg, sizeof msg);
	ts_table_close(t2);
	pthread_mutex_lock(&e->db->life_mu);
	int refs = e->t->refs;
	pthread_mutex_unlock(&e->db->life_mu);
	let_go();
	pthread_join(in.th, NULL);
	pthread_join(c.th, NULL);
	e->t = NULL; /* closed with the db */
	e->db = NULL;
	if (state_ != 0)
		fail_msg("ts_close did not wait for the insert");
	assert_int_equal(refs, 1);
	assert_int_equal(in.rc, 0);
	assert_int_equal(c.rc, 0);
}

/* ts_close with a cursor open: TS_EBUSY, and the database stays usable. */
static void misuse_db_close_with_cursor(void **state)
{
	struct env *e = *state;
	test_row r = {"a", NOW - 1000, 1, 1};
	ts_cursor *cur;
	const ts_value *row;
	assert_int_equal(ts_test_insert_m(e->t, &r, 1), 0);
	assert_int_equal(ts_query_open(e->t, &(ts_query){0}, &cur), 0);
	assert_int_equal(ts_close(e->db), TS_EBUSY);
	assert_string_equal(ts_errmsg(NULL), "ts_close: 1 cursor is still open (close cursors first)");
	assert_int_equal(ts_cursor_next(cur, &row, NULL), 0);
	assert_non_null(row);
	ts_cursor_close(cur);
	assert_int_equal(ts_test_insert_m(e->t, &(test_row){"b", NOW - 1000, 1, 1}, 1), 0);
}

/* Closing a table handle more often than it was opened is detected: the
 * extra close changes nothing, and calls on the closed handle fail. */
static void misuse_double_close(void **state)
{
	struct env *e = *state;
	ts_table *t2;
	assert_int_equal(ts_table_open(e->db, "m", &t2), 0);
	assert_ptr_equal(t2, e->t); /* one table object, counted */
	ts_table_close(t2);
	ts_table_close(e->t);
	ts_table_close(e->t);
	assert_string_equal(ts_errmsg(NULL), "ts_table_close: table \"m\" is not open (closed twice?)");
	assert_int_equal(ts_insert(e->t, NULL, 0), TS_ECLOSED);
	assert_string_equal(ts_errmsg(NULL), "ts_insert: table \"m\" is not open (closed)");
	/* a dropped table too (its object was freed at the first close) */
	assert_int_equal(ts_table_open(e->db, "m", &e->t), 0);
	assert_int_equal(ts_drop(e->db, "m"), 0);
	ts_table_close(e->t);
	ts_table_close(e->t);
	assert_string_equal(ts_errmsg(NULL), "ts_table_close: table \"m\" is not open (closed twice?)");
	e->t = NULL;
}

/* A cursor outlives its table handle and the table's drop. */
static void misuse_cursor_outlives_drop(void **state)
{
	struct env *e = *state;
	ts_cursor *cur;
	const ts_value *row;
	assert_int_equal(ts_test_insert_m(e->t, &(test_row){"a", NOW - 1000, 1, 1}, 1), 0);
	assert_int_equal(ts_query_open(e->t, &(ts_query){0}, &cur), 0);
	ts_table_close(e->t);
	e->t = NULL;
	assert_int_equal(ts_drop(e->db, "m"), 0);
	assert_int_equal(ts_cursor_next(cur, &row, NULL), 0); /* its snapshot */
	assert_non_null(row);
	assert_int_equal(ts_cursor_next(cur, &row, NULL), 0);
	assert_null(row);
	ts_cursor_close(cur);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(misuse_null_arguments, setup, teardown),
		cmocka_unit_test_setup_teardown(misuse_null_no_code, setup, teardown),
		cmocka_unit_test_setup_teardown(misuse_table_close_waits_for_insert, setup, teardown),
		cmocka_unit_test_setup_teardown(misuse_db_close_waits_for_insert, setup, teardown),
		cmocka_unit_test_setup_teardown(misuse_table_close_while_db_close_waits, setup, teardown),
		cmocka_unit_test_setup_teardown(misuse_db_close_with_cursor, setup, teardown),
		cmocka_unit_test_setup_teardown(misuse_double_close, setup, teardown),
		cmocka_unit_test_setup_teardown(misuse_cursor_outlives_drop, setup, teardown),
	};
	if (getenv("TS_TEST_FILTER"))
		cmocka_set_test_filter(getenv("TS_TEST_FILTER"));
	return cmocka_run_group_tests_name("misuse", tests, NULL, NULL);
}
