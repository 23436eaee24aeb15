/*
 * api.c -- the gate of the public calls that take a handle (api.h):
 * arguments checked, the call counted in flight, the implementation
 * called.
 *
 * Every check here is one the caller can get wrong without any other
 * fault: a NULL handle, a NULL out-pointer, a count with a NULL array
 * (a bound of nlower values with no lower[]) or a negative count.  Each
 * is TS_EINVAL with a message naming the function and the argument.
 * Values behind valid pointers are checked by the implementations.
 *
 * A call on a table is counted on the table and on its database from
 * ts__table_enter to ts__table_leave: the last ts_table_close of a table
 * waits until no call is inside it, ts_close until no call is inside the
 * database, and both make later calls fail with TS_ECLOSED -- so no call
 * ever runs on a freed handle while the close is in progress.  (A call
 * made after ts_close returned, on the freed handle, is the one misuse
 * no library can catch.)
 */
#include <stddef.h>

#include "api.h"
#include "error.h"
#include "lifetime.h"

#define NEED(cond, fn, what) \
	do { if (!(cond)) return ts__fail(TS_EINVAL, "%s: %s", fn, what); } while (0)

/* A count n with its array p: p set when n > 0 (a negative count is the
 * implementation's to report, as for any bad count). */
static int counted(const void *p, int n, const char *fn, const char *what)
{
	if (n > 0 && !p)
		return ts__fail(TS_EINVAL, "%s: %d %s but the array is NULL", fn, n, what);
	return 0;
}

/* ---- databases ---- */

int ts_sync(ts_db *db)
{
	int rc = ts__db_enter(db, "ts_sync");
	if (rc == 0) {
		rc = ts__sync(db);
		ts__db_leave(db);
	}
	return rc;
}

int ts_tables(ts_db *db, char ***out, int *n)
{
	NEED(out, "ts_tables", "out is NULL");
	*out = NULL;
	int rc = ts__db_enter(db, "ts_tables");
	if (rc == 0) {
		rc = ts__tables(db, out, n);
		ts__db_leave(db);
	}
	return rc;
}

int ts_create(ts_db *db, const char *name, const ts_schema *schema)
{
	int rc;
	NEED(name, "ts_create", "name is NULL");
	NEED(schema, "ts_create", "schema is NULL");
	if ((rc = counted(schema->columns, schema->ncolumns, "ts_create", "columns")) < 0 ||
	    (rc = counted(schema->key, schema->nkey, "ts_create", "key columns")) < 0 ||
	    (rc = ts__db_enter(db, "ts_create")) < 0)
		return rc;
	rc = ts__create(db, name, schema);
	ts__db_leave(db);
	return rc;
}

static int create_keyed(ts_db *db, const char *name, const ts_column *columns, int ncolumns,
                        const char *const *key_names, int nkey, int64_t ttl,
                        ts_on_duplicate on_duplicate, const char *fn)
{
	int rc;
	NEED(name, fn, "name is NULL");
	NEED(ncolumns >= 0 && nkey >= 0, fn, "negative count of columns or key names");
	if ((rc = counted(columns, ncolumns, fn, "columns")) < 0 ||
	    (rc = counted(key_names, nkey, fn, "key names")) < 0 ||
	    (rc = ts__db_enter(db, fn)) < 0)
		return rc;
	rc = ts__create_keyed(db, name, columns, ncolumns, key_names, nkey, ttl, on_duplicate);
	ts__db_leave(db);
	return rc;
}

int ts_create_keyed(ts_db *db, const char *name, const ts_column *columns, int ncolumns,
                    const char *const *key_names, int nkey, int64_t ttl)
{
	return create_keyed(db, name, columns, ncolumns, key_names, nkey, ttl,
	                    TS_ON_DUPLICATE_REJECT, "ts_create_keyed");
}

int ts_create_keyed_v2(ts_db *db, const char *name, const ts_column *columns, int ncolumns,
                       const char *const *key_names, int nkey, int64_t ttl,
                       ts_on_duplicate on_duplicate)
{
	return create_keyed(db, name, columns, ncolumns, key_names, nkey, ttl, on_duplicate,
	                    "ts_create_keyed_v2");
}

int ts_drop(ts_db *db, const char *name)
{
	NEED(name, "ts_drop", "name is NULL");
	int rc = ts__db_enter(db, "ts_drop");
	if (rc == 0) {
		rc = ts__drop(db, name);
		ts__db_leave(db);
	}
	return rc;
}

int ts_check(ts_db *db, const char *table, const ts_check_opts *opts)
{
	int rc = ts__db_enter(db, "ts_check");
	if (rc == 0) {
		rc = ts__check(db, table, opts);
		ts__db_leave(db);
	}
	return rc;
}

static int backup(ts_db *db, const char *dest, int incremental, const char *fn)
{
	NEED(dest, fn, "dest is NULL");
	int rc = ts__db_enter(db, fn);
	if (rc == 0) {
		rc = ts__backup(db, dest, incremental);
		ts__db_leave(db);
	}
	return rc;
}

int ts_backup(ts_db *db, const char *dest)
{
	return backup(db, dest, 0, "ts_backup");
}

int ts_backup_incremental(ts_db *db, const char *dest)
{
	return backup(db, dest, 1, "ts_backup_incremental");
}

int ts_epoch_get(ts_db *db, ts_epoch *out)
{
	NEED(out, "ts_epoch_get", "out is NULL");
	int rc = ts__db_enter(db, "ts_epoch_get");
	if (rc == 0) {
		rc = ts__epoch_get(db, out);
		ts__db_leave(db);
	}
	return rc;
}

int ts_epoch_adopt(ts_db *db, const ts_epoch *e)
{
	NEED(e, "ts_epoch_adopt", "e is NULL");
	int rc = ts__db_enter(db, "ts_epoch_adopt");
	if (rc == 0) {
		rc = ts__epoch_adopt(db, e);
		ts__db_leave(db);
	}
	return rc;
}

int ts_epoch_fence(ts_db *db, uint64_t newer)
{
	int rc = ts__db_enter(db, "ts_epoch_fence");
	if (rc == 0) {
		rc = ts__epoch_fence(db, newer);
		ts__db_leave(db);
	}
	return rc;
}

int ts_epoch_fenced_by(ts_db *db, uint64_t *out)
{
	NEED(out, "ts_epoch_fenced_by", "out is NULL");
	int rc = ts__db_enter(db, "ts_epoch_fenced_by");
	if (rc == 0) {
		rc = ts__epoch_fenced_by(db, out);
		ts__db_leave(db);
	}
	return rc;
}

int ts_epoch_raise(ts_db *db, ts_epoch *out)
{
	int rc = ts__db_enter(db, "ts_epoch_raise");
	if (rc == 0) {
		rc = ts__epoch_raise(db, out);
		ts__db_leave(db);
	}
	return rc;
}

/* ---- shipping a table to a standby ---- */

int ts_ship_open(ts_table *t, uint64_t lsn, const uint64_t *tablets, int ntablets, ts_ship **out)
{
	int rc;
	NEED(out, "ts_ship_open", "out is NULL");
	*out = NULL;
	if ((rc = counted(tablets, ntablets, "ts_ship_open", "tablets")) < 0 ||
	    (rc = ts__table_enter(t, "ts_ship_open")) < 0)
		return rc;
	rc = ts__ship_open(t, lsn, tablets, ntablets, out);
	ts__table_leave(t);
	return rc;
}

/* The ship's db, or NULL (the gate then says the handle is NULL). */
static ts_db *ship_db(ts_ship *s)
{
	return s ? ts__ship_db(s) : NULL;
}

int ts_ship_next(ts_ship *s, ts_frame *f)
{
	NEED(s, "ts_ship_next", "ship is NULL");
	NEED(f, "ts_ship_next", "frame is NULL");
	int rc = ts__db_enter(ship_db(s), "ts_ship_next");
	if (rc == 0) {
		rc = ts__ship_next(s, f);
		ts__db_leave(ship_db(s));
	}
	return rc;
}

int ts_ship_heartbeat(ts_ship *s, ts_frame *f)
{
	NEED(s, "ts_ship_heartbeat", "ship is NULL");
	NEED(f, "ts_ship_heartbeat", "frame is NULL");
	int rc = ts__db_enter(ship_db(s), "ts_ship_heartbeat");
	if (rc == 0) {
		rc = ts__ship_heartbeat(s, f);
		ts__db_leave(ship_db(s));
	}
	return rc;
}

void ts_ship_close(ts_ship *s)
{
	if (s)
		ts__ship_close(s);
}

/* ---- the standby (one thread at a time: no call is counted) ---- */

int ts_standby_open(const char *dir, ts_standby **out)
{
	NEED(out, "ts_standby_open", "out is NULL");
	*out = NULL;
	NEED(dir && *dir, "ts_standby_open", "empty directory");
	return ts__standby_open(dir, out);
}

int ts_standby_apply(ts_standby *sb, const char *table, const ts_frame *f)
{
	NEED(sb, "ts_standby_apply", "standby is NULL");
	NEED(table, "ts_standby_apply", "table is NULL");
	NEED(f, "ts_standby_apply", "frame is NULL");
	return ts__standby_apply(sb, table, f);
}

int ts_standby_state(ts_standby *sb, ts_standby_table **out, int *n)
{
	NEED(out, "ts_standby_state", "out is NULL");
	*out = NULL;
	NEED(sb, "ts_standby_state", "standby is NULL");
	NEED(n, "ts_standby_state", "n is NULL");
	return ts__standby_state(sb, out, n);
}

void ts_standby_state_free(ts_standby_table *tables, int n)
{
	ts__standby_state_free(tables, n);
}

int ts_standby_adopt(ts_standby *sb, const ts_epoch *e)
{
	NEED(sb, "ts_standby_adopt", "standby is NULL");
	NEED(e, "ts_standby_adopt", "e is NULL");
	return ts__standby_adopt(sb, e);
}

int ts_standby_sync(ts_standby *sb)
{
	NEED(sb, "ts_standby_sync", "standby is NULL");
	return ts__standby_sync(sb);
}

int ts_standby_close(ts_standby *sb)
{
	return sb ? ts__standby_close(sb) : 0;
}

/* ---- tables ---- */

int ts_table_schema(ts_table *t, ts_schema **out)
{
	NEED(out, "ts_table_schema", "out is NULL");
	*out = NULL;
	int rc = ts__table_enter(t, "ts_table_schema");
	if (rc == 0) {
		rc = ts__table_schema(t, out);
		ts__table_leave(t);
	}
	return rc;
}

int ts_alter_add(ts_table *t, const ts_column *column)
{
	NEED(column, "ts_alter_add", "column is NULL");
	int rc = ts__table_enter(t, "ts_alter_add");
	if (rc == 0) {
		rc = ts__alter_add(t, column);
		ts__table_leave(t);
	}
	return rc;
}

int ts_alter_widen(ts_table *t, const char *column)
{
	NEED(column, "ts_alter_widen", "column is NULL");
	int rc = ts__table_enter(t, "ts_alter_widen");
	if (rc == 0) {
		rc = ts__alter_widen(t, column);
		ts__table_leave(t);
	}
	return rc;
}

int ts_alter_ttl(ts_table *t, int64_t ttl)
{
	int rc = ts__table_enter(t, "ts_alter_ttl");
	if (rc == 0) {
		rc = ts__alter_ttl(t, ttl);
		ts__table_leave(t);
	}
	return rc;
}

int ts_alter_on_duplicate(ts_table *t, ts_on_duplicate policy)
{
	int rc = ts__table_enter(t, "ts_alter_on_duplicate");
	if (rc == 0) {
		rc = ts__alter_on_duplicate(t, policy);
		ts__table_leave(t);
	}
	return rc;
}

static int insert(ts_table *t, uint32_t version, int on_duplicate, const ts_value *rows,
                  size_t nrows, size_t *ignored, uint64_t *table_version, const char *fn)
{
	size_t skipped = 0;
	uint64_t v = 0;
	if (ignored)
		*ignored = 0;
	if (table_version)
		*table_version = 0;
	NEED(rows || nrows == 0, fn, "rows is NULL");
	int rc = ts__table_enter(t, fn);
	if (rc == 0) {
		rc = ts__insert(t, version, on_duplicate, rows, nrows, &skipped, &v);
		ts__table_leave(t);
	}
	if (rc == 0 && ignored)
		*ignored = skipped;
	if (rc == 0 && table_version)
		*table_version = v;
	return rc;
}

int ts_insert(ts_table *t, const ts_value *rows, size_t nrows)
{
	return insert(t, 0, TS_ON_DUPLICATE_TABLE, rows, nrows, NULL, NULL, "ts_insert");
}

int ts_insert_at(ts_table *t, uint32_t version, const ts_value *rows, size_t nrows)
{
	return insert(t, version, TS_ON_DUPLICATE_TABLE, rows, nrows, NULL, NULL, "ts_insert_at");
}

int ts_insert_counted(ts_table *t, uint32_t version, const ts_value *rows, size_t nrows,
                      size_t *ignored)
{
	return insert(t, version, TS_ON_DUPLICATE_TABLE, rows, nrows, ignored, NULL,
	              "ts_insert_counted");
}

int ts_insert_versioned(ts_table *t, uint32_t version, const ts_value *rows, size_t nrows,
                        size_t *ignored, uint64_t *table_version)
{
	return insert(t, version, TS_ON_DUPLICATE_TABLE, rows, nrows, ignored, table_version,
	              "ts_insert_versioned");
}

int ts_table_version(ts_table *t, uint64_t *version)
{
	int rc;
	NEED(version, "ts_table_version", "version is NULL");
	*version = 0;
	if ((rc = ts__table_enter(t, "ts_table_version")) < 0)
		return rc;
	rc = ts__table_version(t, version);
	ts__table_leave(t);
	return rc;
}

int ts_flush(ts_table *t, int64_t before)
{
	int rc = ts__table_enter(t, "ts_flush");
	if (rc == 0) {
		rc = ts__flush(t, before);
		ts__table_leave(t);
	}
	return rc;
}

int ts_merge(ts_table *t, int *merged)
{
	if (merged)
		*merged = 0;
	int rc = ts__table_enter(t, "ts_merge");
	if (rc == 0) {
		rc = ts__maint_merge_now(t, merged);
		ts__table_leave(t);
	}
	return rc;
}

int ts_table_stats(ts_table *t, ts_stat *out, int room, int *n)
{
	int rc;
	NEED(n, "ts_table_stats", "n is NULL");
	*n = 0;
	NEED(room >= 0, "ts_table_stats", "negative room");
	if ((rc = counted(out, room, "ts_table_stats", "entries of room")) < 0 ||
	    (rc = ts__table_enter(t, "ts_table_stats")) < 0)
		return rc;
	rc = ts__table_stats(t, out, room, n);
	ts__table_leave(t);
	return rc;
}

/* ---- queries and cursors ---- */

static int check_query(const ts_query *q)
{
	int rc;
	NEED(q, "ts_query_open", "no query (q is NULL)");
	if ((rc = counted(q->prefix, q->nprefix, "ts_query_open", "prefix values")) < 0 ||
	    (rc = counted(q->lower, q->nlower, "ts_query_open", "lower bound values")) < 0 ||
	    (rc = counted(q->upper, q->nupper, "ts_query_open", "upper bound values")) < 0 ||
	    (rc = counted(q->columns, q->ncolumns, "ts_query_open", "projected columns")) < 0 ||
	    (rc = counted(q->after, q->nafter, "ts_query_open", "after values")) < 0)
		return rc;
	return 0;
}

int ts_query_open(ts_table *t, const ts_query *q, ts_cursor **out)
{
	int rc;
	NEED(out, "ts_query_open", "out is NULL");
	*out = NULL;
	if ((rc = check_query(q)) < 0 || (rc = ts__table_enter(t, "ts_query_open")) < 0)
		return rc;
	ts__table_note_read(t);
	rc = ts__query_open(t, q, out);
	ts__table_leave(t);
	return rc;
}

int ts_latest_open(ts_table *t, const ts_value *prefix, int nprefix, ts_cursor **out)
{
	int rc;
	NEED(out, "ts_latest_open", "out is NULL");
	*out = NULL;
	if ((rc = counted(prefix, nprefix, "ts_latest_open", "prefix values")) < 0 ||
	    (rc = ts__table_enter(t, "ts_latest_open")) < 0)
		return rc;
	ts__table_note_read(t);
	rc = ts__latest_open(t, prefix, nprefix, out);
	ts__table_leave(t);
	return rc;
}

static int aggregate_open(ts_table *t, const ts_aggregate *req, unsigned flags,
                          ts_cursor **out, const char *fn)
{
	int rc;
	NEED(out, fn, "out is NULL");
	*out = NULL;
	NEED(req, fn, "no aggregate request (req is NULL)");
	if ((rc = counted(req->prefix, req->nprefix, fn, "prefix values")) < 0 ||
	    (rc = counted(req->specs, req->nspecs, fn, "specs")) < 0 ||
	    (rc = ts__table_enter(t, fn)) < 0)
		return rc;
	ts__table_note_read(t);
	rc = ts__aggregate_open(t, req, flags, out);
	ts__table_leave(t);
	return rc;
}

int ts_aggregate_open(ts_table *t, const ts_aggregate *req, ts_cursor **out)
{
	return aggregate_open(t, req, 0, out, "ts_aggregate_open");
}

int ts_aggregate_open_flags(ts_table *t, const ts_aggregate *req, unsigned flags,
                            ts_cursor **out)
{
	if (flags & ~(unsigned)TS_AGG_NO_ROLLUP) {
		if (out)
			*out = NULL;
		return ts__fail(TS_EINVAL, "ts_aggregate_open_flags: unknown flags 0x%x", flags);
	}
	return aggregate_open(t, req, flags, out, "ts_aggregate_open_flags");
}

/* A cursor holds its table (ts__table_hold), so its calls need no
 * counting: the table outlives it. */
int ts_cursor_next(ts_cursor *c, const ts_value **row, int *n)
{
	if (n)
		*n = 0;
	NEED(row, "ts_cursor_next", "row is NULL");
	*row = NULL;
	NEED(c, "ts_cursor_next", "cursor is NULL");
	return ts__cursor_next(c, row, n);
}

int ts_cursor_rewind(ts_cursor *c)
{
	NEED(c, "ts_cursor_rewind", "cursor is NULL");
	return ts__cursor_rewind(c);
}

int ts_cursor_more(const ts_cursor *c)
{
	if (!c) {
		ts__fail(TS_EINVAL, "ts_cursor_more: cursor is NULL");
		return 0;
	}
	return ts__cursor_more(c);
}

int ts_cursor_resume(const ts_cursor *c, const ts_value **key, int *nkey)
{
	NEED(key && nkey, "ts_cursor_resume", "key or nkey is NULL");
	*key = NULL;
	*nkey = 0;
	NEED(c, "ts_cursor_resume", "cursor is NULL");
	return ts__cursor_resume(c, key, nkey);
}

/* ------------------------------------------------------------------ */
/* Corrections (issue 28, docs/corrections.md): ts_insert_policy
 * (insert.c), ts_delete and ts_purge (delete.c), ts_changes_open
 * (changes.c). */

int ts_insert_policy(ts_table *t, uint32_t version, int on_duplicate, const ts_value *rows,
                     size_t nrows, size_t *ignored, uint64_t *table_version)
{
	if (on_duplicate != TS_ON_DUPLICATE_TABLE && (on_duplicate < TS_ON_DUPLICATE_REJECT ||
	                                              on_duplicate > TS_ON_DUPLICATE_REPLACE)) {
		if (ignored)
			*ignored = 0;
		if (table_version)
			*table_version = 0;
		return ts__fail(TS_EINVAL, "ts_insert_policy: unknown duplicate policy %d (want a "
		                "ts_on_duplicate or TS_ON_DUPLICATE_TABLE)", on_duplicate);
	}
	return insert(t, version, on_duplicate, rows, nrows, ignored, table_version,
	              "ts_insert_policy");
}

static int check_range(const ts_query *q, const char *fn)
{
	int rc;
	if (!q)
		return 0;
	if ((rc = counted(q->prefix, q->nprefix, fn, "prefix values")) < 0 ||
	    (rc = counted(q->lower, q->nlower, fn, "lower bound values")) < 0 ||
	    (rc = counted(q->upper, q->nupper, fn, "upper bound values")) < 0)
		return rc;
	return 0;
}

int ts_delete(ts_table *t, const ts_query *range, uint64_t *deleted, uint64_t *table_version)
{
	uint64_t d, v;
	int rc;
	if (deleted)
		*deleted = 0;
	if (table_version)
		*table_version = 0;
	NEED(range, "ts_delete", "no range (range is NULL)");
	if ((rc = check_range(range, "ts_delete")) < 0 ||
	    (rc = ts__table_enter(t, "ts_delete")) < 0)
		return rc;
	rc = ts__delete(t, range, &d, &v);
	ts__table_leave(t);
	if (rc == 0 && deleted)
		*deleted = d;
	if (rc == 0 && table_version)
		*table_version = v;
	return rc;
}

int ts_purge(ts_table *t, const ts_query *range, uint64_t *table_version)
{
	uint64_t v;
	int rc;
	if (table_version)
		*table_version = 0;
	if ((rc = check_range(range, "ts_purge")) < 0 || (rc = ts__table_enter(t, "ts_purge")) < 0)
		return rc;
	rc = ts__purge(t, range, &v);
	ts__table_leave(t);
	if (rc == 0 && table_version)
		*table_version = v;
	return rc;
}

int ts_changes_open(ts_table *t, const ts_changes_spec *spec, ts_cursor **out)
{
	int rc;
	NEED(out, "ts_changes_open", "out is NULL");
	*out = NULL;
	NEED(spec, "ts_changes_open", "no spec (spec is NULL)");
	if ((rc = ts__table_enter(t, "ts_changes_open")) < 0)
		return rc;
	rc = ts__changes_open(t, spec, out);
	ts__table_leave(t);
	return rc;
}

/* ------------------------------------------------------------------ */
/* Rollups (issue 29, docs/rollups.md). */

int ts_create_rollup(ts_db *db, const char *name, const ts_rollup_spec *spec)
{
	int rc;
	NEED(name, "ts_create_rollup", "name is NULL");
	NEED(spec, "ts_create_rollup", "spec is NULL");
	NEED(spec->source, "ts_create_rollup", "spec->source is NULL");
	if ((rc = counted(spec->specs, spec->nspecs, "ts_create_rollup", "specs")) < 0 ||
	    (rc = ts__db_enter(db, "ts_create_rollup")) < 0)
		return rc;
	rc = ts__create_rollup(db, name, spec);
	ts__db_leave(db);
	return rc;
}

int ts_rollup_info(ts_table *t, ts_rollup_state **out)
{
	NEED(out, "ts_rollup_info", "out is NULL");
	*out = NULL;
	int rc = ts__table_enter(t, "ts_rollup_info");
	if (rc == 0) {
		rc = ts__rollup_info(t, out);
		ts__table_leave(t);
	}
	return rc;
}

int ts_rollups(ts_db *db, const char *source, char ***names, int *n)
{
	NEED(source, "ts_rollups", "source is NULL");
	NEED(names, "ts_rollups", "names is NULL");
	*names = NULL;
	if (n)
		*n = 0;
	int rc = ts__db_enter(db, "ts_rollups");
	if (rc == 0) {
		rc = ts__rollups(db, source, names, n);
		ts__db_leave(db);
	}
	return rc;
}
