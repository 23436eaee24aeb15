/*
 * rollup.c -- rollups: tables derived from a source table at a coarser
 * resolution, created by ts_create_rollup and kept exact by the store
 * (docs/rollups.md; issue 29).
 *
 * A rollup is an ordinary table (key: the source's first `group` key
 * columns, then ts, the window's start; one value column per function,
 * mean kept as sum and count) under the duplicate policy replace, with a
 * definition beside it (<rollup>/ROLLUP, rollupdef.c) whose watermark W
 * is the source version through which its rows are exact.  Its
 * maintenance is a job of the scheduler (maint.c, before the pass's
 * flushes and merges; in the scheduler's thread paced by its windows,
 * paced_due): a run takes one snapshot of the source (commit S), syncs
 * the source's log through it (every row read is durable before a
 * rollup row counts it), reads what ts_changes_open reports for (W, S]
 * into memory (read_changes; its cursor closed) -- or, when every commit
 * since W was folded by the accumulators at insert (rollacc.c), the
 * windows they list as touched (harvest_changes) -- and recomputes those
 * windows -- each span of consecutive windows of a group, in parts of at
 * most SPAN_WINDOWS_MAX, by one aggregate (ts__aggregate_span), each
 * window's row written with replace, or the rollup's row of a window
 * left empty deleted (only a delete in the source empties one) -- then
 * W = S: in memory, and persisted (the rollup's log synced first, then
 * ROLLUP written) by every explicit run and a paced one at most every
 * TS_ROLLUP_PERSIST_EVERY.  A crash anywhere recomputes the same windows
 * again from the persisted W: the writes are idempotent, and W never
 * claims rows that are not durable.  A paced run due because a window
 * of the clock closed may stop short of S: the clock's open windows
 * opened since W are left for the next run, W becoming the commit before
 * their first rows (ts__rollacc_take's defer; docs/rollups.md section 2,
 * "Accumulated at insert").
 *
 * A paced run forces no sync when it need not (unsynced): through D, the
 * source's durable commit as its own syncs left it, when the
 * accumulators hold the row of every window commits in (W, D] touched --
 * written without a snapshot, nothing of the source read -- else it
 * waits for those syncs up to ts__rollup_durable_wait, then takes S and
 * syncs as above (docs/rollups.md section 2, "Durable without a sync").
 *
 * The aggregate does not hold S for the whole run: before a span (or a
 * part of one) whose snapshot is TS_ROLLUP_RESNAP_EVERY old, the run
 * releases it and takes a newer one S_k, synced through as S was
 * (refresh) -- else a long run kept every log segment flushes deleted
 * meanwhile, and every tablet merges retired, on disk until it ended.
 * Reading at S_k >= S is exact: every row through S is visible there,
 * so a window unchanged after S reads as at S; a window changed in
 * (S, S_k] (a row, a delete) is read as of S_k and, changes reporting it
 * after S, recomputed again by the next run from W = S
 * (docs/rollups.md section 2, "A newer snapshot during the run").
 *
 * Nothing else writes a rollup: client inserts and deletes are refused
 * (TS_EREADONLY), as are alters of its schema and policy; a source is
 * not dropped while rollups are built from it (TS_EBUSY).  A rollup of a
 * rollup reads its source's rows with the combine functions: count and
 * sum are summed, min and max of the stored min and max, first and last
 * of the stored first and last (which needs the same groups).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "api.h"
#include "backoff.h"
#include "cursor.h"
#include "descriptor.h"
#include "descriptor_format.h"
#include "error.h"
#include "fsutil.h"
#include "handle.h"
#include "merge.h"
#include "names.h"
#include "period.h"
#include "rollacc.h"
#include "rollupdef.h"
#include "schema.h"
#include "tabledesc.h"

/* Windows recomputed between two calls of the scheduler's yield
 * (due flushes, the budget, a close). */
#define WINDOWS_PER_SLICE 64

/* Most windows aggregated by one read of the source: a longer span (a
 * catch-up of a month of one group) is read in parts, between which the
 * run may move to a newer snapshot (refresh), and the aggregate's memory
 * is that of this many windows. */
#define SPAN_WINDOWS_MAX 1024

int64_t ts__rollup_resnap_every = TS_ROLLUP_RESNAP_EVERY;

/* Returned by maintain when the database closes mid-way: nothing failed,
 * the watermark stays, the windows are recomputed after the restart. */
#define STOPPED 1

/* ---- what the source's columns are ---- */

/* The index of column name in s, or -1. */
static int column_index(const ts_schema *s, const char *name)
{
	for (int i = 0; i < s->ncolumns; i++)
		if (strcmp(s->columns[i].name, name) == 0)
			return i;
	return -1;
}

/* For value column c of a rollup: the source's column that feeds it and
 * the function the aggregate over the source applies to it -- c's own
 * over a table, the combine function over a rollup (count and sum are
 * summed).  Returns the column index, or -1 when the source lacks it. */
static int source_spec(const ts__rollup_def *d, const ts_schema *src, const ts__rollup_col *c,
                       ts_aggspec *out)
{
	char name[TS_NAME_MAX + 32];
	int i;
	if (d->flags & TS_ROLLUP_FROM_ROLLUP) {
		if (ts__rollup_col_name(c, name, sizeof name) < 0)
			return -1;
		i = column_index(src, name);
		out->fn = c->fn == TS_AGG_COUNT ? TS_AGG_SUM : c->fn;
	} else {
		i = column_index(src, c->column);
		out->fn = c->fn;
	}
	out->column = i;
	return i;
}

/* The type of value column c fed by a source column of type t. */
static ts_type value_type(ts_aggfn fn, ts_type t)
{
	if (fn == TS_AGG_COUNT)
		return TS_INT64;
	if (fn == TS_AGG_SUM)
		return t == TS_DOUBLE ? TS_DOUBLE : TS_INT64;
	return t;
}

/* ---- creating ---- */

/* What a rollup is made of: its definition, value columns, schema. */
struct plan {
	ts__rollup_def def;
	ts__rollup_col *cols;
	int ncols;
	ts_column *columns;          /* key, ts, values */
	char (*names)[TS_NAME_MAX + 1];
	const char *key[TS_KEY_COLUMNS_MAX];
	int nkey, ncolumns;
};

static void plan_free(struct plan *p)
{
	ts__rollup_def_free(&p->def);
	free(p->cols);
	free(p->columns);
	free(p->names);
}

/* A spec over a source that is a rollup: the base column and function it
 * asks for, from what the source's column holds (column X_F holds F of
 * X; mean needs X_sum and X_count). */
static int combine_spec(const ts__rollup_def *sd, const ts_schema *src, const ts_aggspec *sp,
                        ts__rollup_fn *out)
{
	ts__rollup_col *cols;
	int n, rc = ts__rollup_columns(sd, &cols, &n);
	if (rc < 0)
		return rc;
	const char *name = src->columns[sp->column].name;
	const ts__rollup_col *holds = NULL;
	char cname[TS_NAME_MAX + 32];
	for (int i = 0; i < n && !holds; i++)
		if (ts__rollup_col_name(&cols[i], cname, sizeof cname) == 0 && strcmp(cname, name) == 0)
			holds = &cols[i];
	ts__clear_error();
	rc = 0;
	if (!holds) {
		rc = ts__fail(TS_EINVAL, "column \"%s\" of rollup \"%s\" holds no function (a rollup "
		              "of a rollup reads its value columns)", name, sd->source);
	} else if (sp->fn == TS_AGG_MEAN) {
		int sum = 0, count = 0;
		for (int i = 0; i < n; i++)
			if (strcmp(cols[i].column, holds->column) == 0) {
				sum |= cols[i].fn == TS_AGG_SUM;
				count |= cols[i].fn == TS_AGG_COUNT;
			}
		if ((holds->fn != TS_AGG_SUM && holds->fn != TS_AGG_COUNT) || !sum || !count)
			rc = ts__fail(TS_EINVAL, "column \"%s\": mean of a rollup needs the column's "
			              "sum and count (\"%s_sum\", \"%s_count\")", name, holds->column,
			              holds->column);
	} else if (sp->fn != holds->fn) {
		rc = ts__fail(TS_EINVAL, "column \"%s\" holds the %s of \"%s\": a rollup of a rollup "
		              "combines it by %s only (or mean, from sum and count)", name,
		              ts_aggfn_name(holds->fn), holds->column, ts_aggfn_name(holds->fn));
	}
	if (rc == 0) {
		snprintf(out->column, sizeof out->column, "%s", holds->column);
		out->fn = sp->fn;
	}
	free(cols);
	return rc;
}

/* Check spec against the source (schema src, and definition sd when the
 * source is a rollup) and make the rollup's plan.  Returns 0, TS_EINVAL,
 * TS_ENOENT, TS_ETYPE, TS_ESCHEMA or TS_ENOMEM. */
static int make_plan(const char *name, const ts_rollup_spec *spec, const ts_schema *src,
                     const ts__rollup_def *sd, struct plan *p)
{
	int rc;
	memset(p, 0, sizeof *p);
	if (spec->every <= 0)
		return ts__fail(TS_EINVAL, "rollup \"%s\": every must be positive (%" PRId64 ")", name,
		                spec->every);
	if (spec->group < 0 || spec->group >= src->nkey)
		return ts__fail(TS_EINVAL, "rollup \"%s\": group %d: table \"%s\" has %d key columns "
		                "before ts (0 to %d allowed)", name, spec->group, spec->source,
		                src->nkey - 1, src->nkey - 1);
	if (spec->nspecs < 1 || spec->nspecs > TS_COLUMNS_MAX)
		return ts__fail(TS_EINVAL, "rollup \"%s\": %d functions (want 1 to %d)", name,
		                spec->nspecs, TS_COLUMNS_MAX);
	if (sd && spec->every % sd->every != 0)
		return ts__fail(TS_EINVAL, "rollup \"%s\": every %" PRId64 " ns is not a multiple of "
		                "the every of rollup \"%s\" (%" PRId64 " ns)", name, spec->every,
		                spec->source, sd->every);
	if (sd && spec->group > sd->group)
		return ts__fail(TS_EINVAL, "rollup \"%s\": group %d exceeds that of rollup \"%s\" (%d)",
		                name, spec->group, spec->source, sd->group);
	snprintf(p->def.source, sizeof p->def.source, "%s", spec->source);
	p->def.flags = sd ? TS_ROLLUP_FROM_ROLLUP : 0;
	p->def.every = spec->every;
	p->def.group = spec->group;
	if (!(p->def.fns = calloc((size_t)spec->nspecs, sizeof *p->def.fns)))
		return ts__fail(TS_ENOMEM, "out of memory");
	p->def.nfns = spec->nspecs;
	for (int i = 0; i < spec->nspecs; i++) {
		const ts_aggspec *sp = &spec->specs[i];
		if (sp->column < 0 || sp->column >= src->ncolumns)
			return ts__fail(TS_ENOENT, "rollup \"%s\": no column %d in \"%s\" (it has %d)", name,
			                sp->column, spec->source, src->ncolumns);
		const ts_column *c = &src->columns[sp->column];
		if ((int)sp->fn < TS_AGG_COUNT || (int)sp->fn > TS_AGG_LAST)
			return ts__fail(TS_EINVAL, "rollup \"%s\": column \"%s\": bad aggregate function %d",
			                name, c->name, (int)sp->fn);
		if (!ts__type_is_numeric(c->type))
			return ts__fail(TS_ETYPE, "rollup \"%s\": column \"%s\" is a %s: rollups aggregate "
			                "numbers", name, c->name, ts_type_name(c->type));
		if (sd && (sp->fn == TS_AGG_FIRST || sp->fn == TS_AGG_LAST) && spec->group != sd->group)
			return ts__fail(TS_EINVAL, "rollup \"%s\": %s of a rollup needs its group (%d): "
			                "the windows of several groups do not say which row came first",
			                name, ts_aggfn_name(sp->fn), sd->group);
		if (sd) {
			if ((rc = combine_spec(sd, src, sp, &p->def.fns[i])) < 0)
				return ts__context(rc, "rollup \"%s\"", name);
		} else {
			snprintf(p->def.fns[i].column, sizeof p->def.fns[i].column, "%s", c->name);
			p->def.fns[i].fn = sp->fn;
		}
	}
	if ((rc = ts__rollup_columns(&p->def, &p->cols, &p->ncols)) < 0)
		return rc;
	p->nkey = spec->group + 1;
	p->ncolumns = p->nkey + p->ncols;
	if (!(p->columns = calloc((size_t)p->ncolumns, sizeof *p->columns)) ||
	    !(p->names = calloc((size_t)p->ncols, sizeof *p->names)))
		return ts__fail(TS_ENOMEM, "out of memory");
	for (int k = 0; k < spec->group; k++) {
		const ts_column *c = &src->columns[src->key[k]];
		p->columns[k] = (ts_column){c->name, c->type, ts_none()};
		p->key[k] = c->name;
	}
	p->columns[spec->group] = (ts_column){"ts", TS_TIMESTAMP, ts_none()};
	p->key[spec->group] = "ts";
	for (int j = 0; j < p->ncols; j++) {
		ts_aggspec a;
		if ((rc = ts__rollup_col_name(&p->cols[j], p->names[j], sizeof p->names[j])) < 0)
			return ts__context(rc, "rollup \"%s\"", name);
		if (source_spec(&p->def, src, &p->cols[j], &a) < 0)
			return ts__fail(TS_EINVAL, "rollup \"%s\": rollup \"%s\" has no column for the %s of "
			                "\"%s\"", name, spec->source, ts_aggfn_name(p->cols[j].fn),
			                p->cols[j].column);
		p->columns[p->nkey + j] = (ts_column){p->names[j],
		                                      value_type(p->cols[j].fn, src->columns[a.column].type),
		                                      ts_none()};
	}
	return 0;
}

/* The source's schema and, when it is a rollup, a copy of its
 * definition (*sd_out set to sd, else NULL). */
static int read_source(ts_db *db, const char *source, ts_schema **schema,
                       ts__rollup_def *sd, ts__rollup_def **sd_out)
{
	ts_table *src;
	int rc = ts_table_open(db, source, &src);
	*schema = NULL;
	*sd_out = NULL;
	if (rc < 0)
		return rc;
	rc = ts__table_schema(src, schema);
	if (rc == 0 && src->rollup) {
		pthread_mutex_lock(&src->rollup->mu);
		*sd = src->rollup->def;
		sd->fns = malloc((size_t)sd->nfns * sizeof *sd->fns);
		if (sd->fns)
			memcpy(sd->fns, src->rollup->def.fns, (size_t)sd->nfns * sizeof *sd->fns);
		pthread_mutex_unlock(&src->rollup->mu);
		if (!sd->fns)
			rc = ts__fail(TS_ENOMEM, "out of memory");
		else
			*sd_out = sd;
	}
	ts_table_close(src);
	return rc;
}

static void accumulate(ts_table *t);

int ts__create_rollup(ts_db *db, const char *name, const ts_rollup_spec *spec)
{
	ts_schema *src = NULL;
	ts__rollup_def sd;
	ts__rollup_def *sdp = NULL;
	struct plan p;
	const char *kind;
	int rc;
	memset(&p, 0, sizeof p);
	if (ts__db_readonly(db))
		return ts__fail(TS_EREADONLY, "database %s is open read-only", db->path);
	if (!ts_name_valid(name))
		return ts__fail(TS_EINVAL, "invalid table name \"%.80s\" (want "
		                "[A-Za-z_][A-Za-z0-9_]{0,63})", name);
	if (ts__name_reserved(name, &kind))
		return ts__fail(TS_EINVAL, "%s is reserved: the database keeps %s of that name", name,
		                kind);
	if (!ts_name_valid(spec->source))
		return ts__fail(TS_EINVAL, "rollup \"%s\": invalid source table name \"%.80s\"", name,
		                spec->source);
	if (spec->ttl < 0)
		return ts__fail(TS_ERANGE, "rollup \"%s\": ttl %" PRId64 " must not be negative", name,
		                spec->ttl);
	if ((rc = read_source(db, spec->source, &src, &sd, &sdp)) < 0)
		return ts__context(rc, "rollup \"%s\"", name);
	unsigned char *bytes = NULL;
	size_t n = 0;
	if ((rc = make_plan(name, spec, src, sdp, &p)) == 0 &&
	    (rc = ts__rollup_encode(&p.def, &bytes, &n)) == 0)
		rc = ts__create_derived(db, name, p.columns, p.ncolumns, p.key, p.nkey, spec->ttl,
		                        TS_ON_DUPLICATE_REPLACE, TS_ROLLUP_FILE, bytes, n, spec->source);
	free(bytes);
	plan_free(&p);
	if (sdp)
		ts__rollup_def_free(sdp);
	ts_schema_free(src);
	/* Loaded now, so that the scheduler maintains it from the next pass
	 * (it serves loaded tables: docs/scheduler.md), and its source's
	 * inserts accumulated from now on (rollacc.c). */
	ts_table *t;
	if (rc == 0 && (rc = ts_table_open(db, name, &t)) == 0) {
		accumulate(t);
		ts_table_close(t);
	}
	return rc;
}

int ts__rollup_refuse(ts_table *t)
{
	if (t->rollup && !ts__rollup_writing)
		return ts__fail(TS_EREADONLY, "table \"%s\" is a rollup of \"%s\": only its "
		                "maintenance writes it", t->name, t->rollup->def.source);
	return 0;
}

/* ---- reading the definition and state ---- */

int ts__rollup_info(ts_table *t, ts_rollup_state **out)
{
	ts__rollup *r = t->rollup;
	*out = NULL;
	if (!r)
		return ts__fail(TS_ENOENT, "table \"%s\" is not a rollup", t->name);
	ts_rollup_state *s = calloc(1, sizeof *s);
	ts_rollup_column *fns = s ? calloc((size_t)r->def.nfns, sizeof *fns) : NULL;
	char *names = fns ? calloc((size_t)r->def.nfns + 1, TS_NAME_MAX + 1) : NULL;
	if (!names) {
		free(s);
		free(fns);
		return ts__fail(TS_ENOMEM, "out of memory");
	}
	/* one allocation of names: the source's first, then the columns' */
	s->source = names;
	if (ts__db_readonly(t->db))
		ts__rollup_reload_watermark(t->dir, r);
	int64_t now = ts_now(t->db);
	pthread_mutex_lock(&r->mu);
	snprintf(names, TS_NAME_MAX + 1, "%s", r->def.source);
	for (int i = 0; i < r->def.nfns; i++) {
		char *c = names + (size_t)(i + 1) * (TS_NAME_MAX + 1);
		snprintf(c, TS_NAME_MAX + 1, "%s", r->def.fns[i].column);
		fns[i].column = c;
		fns[i].fn = r->def.fns[i].fn;
	}
	s->from_rollup = (r->def.flags & TS_ROLLUP_FROM_ROLLUP) != 0;
	s->every = r->def.every;
	s->group = r->def.group;
	s->nfns = r->def.nfns;
	s->fns = fns;
	s->watermark = r->def.watermark;
	s->source_version = r->source_version;
	s->lag_ns = r->behind_since && now > r->behind_since ? now - r->behind_since : 0;
	s->windows_recomputed = r->windows_recomputed;
	s->windows_deleted = r->windows_deleted;
	pthread_mutex_unlock(&r->mu);
	pthread_mutex_lock(&t->mu);
	s->last_error = r->retry.last_rc;
	s->failures = r->retry.total;
	pthread_mutex_unlock(&t->mu);
	*out = s;
	return 0;
}

void ts_rollup_state_free(ts_rollup_state *s)
{
	if (!s)
		return;
	free((void *)s->source);
	free((void *)s->fns);
	free(s);
}

int ts__rollups(ts_db *db, const char *source, char ***names, int *n)
{
	int count;
	if (!ts_name_valid(source))
		return ts__fail(TS_EINVAL, "invalid table name \"%.80s\"", source);
	int rc = ts__rollups_of(db->path, source, names, &count);
	if (n)
		*n = rc == 0 ? count : 0;
	return rc;
}

/* ---- maintenance ---- */

/* Sync t's log and return its newest durable commit in *d: the
 * range under the writer's lock, the msync without it (inserts go on),
 * the result under it again (as the syncer does). */
static int sync_durable(struct ts_table *t, uint64_t *d)
{
	uint64_t from = 0, to = 0, head = 0;
	int rc = ts__table_lock(t);
	if (rc < 0)
		return rc;
	ts__log_sync_range(t->log, &from, &to, &head);
	ts__table_unlock(t);
	if (from < to && (rc = ts__log_sync_pages(t->log, from, to)) < 0)
		return rc;
	if ((rc = ts__table_lock(t)) < 0)
		return rc;
	if (from < to)
		ts__log_sync_done(t->log, to, head);
	*d = ts__log_durable_head(t->log);
	ts__table_unlock(t);
	return 0;
}

/* The version through which t's commits are durable without a sync
 * (into *d): the newest commit its log's syncs covered, or the one before
 * its flushed position when that is newer -- every commit below it is on
 * disk, its rows in tablets and its tombstones in the DESCRIPTOR, both
 * synced before the descriptor was installed (flush.c) -- never past
 * its head (the flushed position lies beyond the last commit it covers:
 * a watermark past the head would read as a source gone back). */
static int durable_head(struct ts_table *t, uint64_t *d)
{
	int rc = ts__table_lock(t);
	if (rc < 0)
		return rc;
	uint64_t head = ts__log_head(t->log);
	*d = ts__log_durable_head(t->log);
	if (t->desc->flushed_lsn > *d + 1)
		*d = t->desc->flushed_lsn - 1;
	if (*d > head)
		*d = head;
	ts__table_unlock(t);
	return 0;
}

/* One maintenance run's state. */
struct run {
	struct ts_table *t, *src;
	const ts__rollup_def *def;
	ts_aggspec *specs;
	int nspecs;
	int64_t src_expiry, expiry;   /* windows beginning before either are kept */
	ts_cursor *agg;               /* the source's aggregate of spans, at the
	                               * run's snapshot (ts__aggregate_span):
	                               * the first, S, or a newer one (refresh) */
	uint64_t v;                   /* S: the version the run rolls up to */
	int64_t taken;                /* monotonic ns: agg's snapshot was taken */
	int reset;                    /* the run starts over */
	int read_had;                 /* windows may have emptied: read the
	                               * rollup's windows of each span */
	ts__rollacc_harvest *acc;     /* windows accumulated at insert, closed
	                               * by S: written without reading the
	                               * source (rollacc.c) */
	uint64_t recomputed, deleted, skipped, accumulated;
	/* rows recomputed, inserted ROWS_PER_BATCH at a time: their strings
	 * copied into strings, where they point (at their offsets there
	 * until the batch is written: the buffer moves as it grows) */
	ts_value *rows;
	ts_buf strings;
	size_t nrows;
	int width;
};

/* Rows of recomputed windows written in one batch (one commit). */
#define ROWS_PER_BATCH 1024

static void drop_rows(struct run *u)
{
	u->nrows = 0;
	u->strings.len = 0;
}

static int is_bytes(const ts_value *v)
{
	return v->type == TS_STRING || v->type == TS_BLOB;
}

/* Copy from[0..n) to to[0..n), the bytes of strings and blobs appended
 * to mem and their pointers replaced by offsets into it (mem may move as
 * it grows: resolve_values makes them pointers again once it is whole).
 * Returns 0 or TS_ENOMEM. */
static int stash_values(ts_value *to, const ts_value *from, size_t n, ts_buf *mem)
{
	for (size_t i = 0; i < n; i++) {
		to[i] = from[i];
		if (is_bytes(&from[i])) {
			to[i].v.s.ptr = (const void *)(uintptr_t)mem->len;
			ts__put(mem, from[i].v.s.ptr, from[i].v.s.len);
		}
	}
	return mem->oom ? ts__fail(TS_ENOMEM, "out of memory") : 0;
}

/* The offsets stash_values left in v[0..n) as pointers into mem. */
static void resolve_values(ts_value *v, size_t n, const ts_buf *mem)
{
	for (size_t i = 0; i < n; i++)
		if (is_bytes(&v[i]))
			v[i].v.s.ptr = mem->data + (uintptr_t)v[i].v.s.ptr;
}

/* Insert rows[0..n) (width values each) into the rollup, with replace:
 * one commit. */
static int insert_rows(struct run *u, const ts_value *rows, size_t n)
{
	size_t ignored;
	uint64_t version;
	ts__rollup_writing = 1;
	int rc = ts__insert(u->t, 0, TS_ON_DUPLICATE_REPLACE, rows, n, &ignored, &version);
	ts__rollup_writing = 0;
	if (rc == 0)
		u->recomputed += n;
	return rc;
}

/* Insert the rows gathered, with replace. */
static int write_rows(struct run *u)
{
	if (u->nrows == 0)
		return 0;
	resolve_values(u->rows, u->nrows * (size_t)u->width, &u->strings);
	int rc = insert_rows(u, u->rows, u->nrows);
	drop_rows(u);
	return rc;
}

/* Gather row (width values, the aggregate cursor's) for the next batch. */
static int gather_row(struct run *u, const ts_value *row)
{
	size_t w = (size_t)u->width;
	if (!u->rows && !(u->rows = calloc(ROWS_PER_BATCH * w, sizeof *u->rows)))
		return ts__fail(TS_ENOMEM, "out of memory");
	int rc = stash_values(u->rows + u->nrows * w, row, w, &u->strings);
	if (rc < 0)
		return rc;
	u->nrows++;
	return u->nrows == ROWS_PER_BATCH ? write_rows(u) : 0;
}

/* Delete the rollup's row of window start of group prefix: its source
 * rows are all gone (deleted). */
static int delete_window(struct run *u, const ts_value *prefix, int64_t start)
{
	ts_value key[TS_KEY_COLUMNS_MAX];
	int g = u->def->group;
	uint64_t deleted, version;
	memcpy(key, prefix, (size_t)g * sizeof *key);
	key[g] = ts_timestamp(start);
	ts_query range = {.prefix = key, .nprefix = g + 1};
	ts__rollup_writing = 1;
	int rc = ts__delete(u->t, &range, &deleted, &version);
	ts__rollup_writing = 0;
	if (rc == 0)
		u->deleted++;
	return rc;
}

/* The starts of the rollup's windows of group prefix in [s0, s1),
 * ascending, into *out (malloc'ed), *n of them. */
static int rollup_windows(struct run *u, const ts_value *prefix, int64_t s0, int64_t s1,
                          int64_t **out, size_t *n)
{
	ts_query q = {.prefix = prefix, .nprefix = u->def->group, .from = s0, .to = s1,
	              .has_from = 1, .has_to = 1, .columns = &u->def->group, .ncolumns = 1};
	ts_cursor *c;
	size_t cap = 0;
	*out = NULL;
	*n = 0;
	int rc = ts__query_open(u->t, &q, &c);
	for (const ts_value *v; rc == 0;) {
		int nv;
		if ((rc = ts__cursor_next(c, &v, &nv)) < 0 || !v)
			break;
		if (*n == cap) {
			int64_t *x = realloc(*out, (cap = cap ? 2 * cap : 16) * sizeof *x);
			if (!x) {
				rc = ts__fail(TS_ENOMEM, "out of memory");
				break;
			}
			*out = x;
		}
		(*out)[(*n)++] = v[0].v.i;
	}
	if (c)
		ts_cursor_close(c);
	if (rc < 0) {
		free(*out);
		*out = NULL;
		*n = 0;
	}
	return rc;
}

static int refresh(struct run *u);

/* Recompute the windows of [s0, s1) (multiples of every) of group
 * prefix, by one aggregate over the source at the run's current
 * snapshot: each window it yields is written (with replace), and each
 * window the rollup holds that it does not yield is deleted. */
static int span_part(struct run *u, const ts_value *prefix, int64_t s0, int64_t s1,
                     const ts__merge_yield *y, uint64_t *done)
{
	int64_t *had = NULL;
	size_t nhad = 0, h = 0;
	int rc = u->read_had ? rollup_windows(u, prefix, s0, s1, &had, &nhad) : 0;
	if (rc < 0)
		return rc;
	ts_cursor *c = u->agg;
	int g = u->def->group;
	rc = ts__aggregate_span(c, prefix, g, s0, s1);
	for (const ts_value *row; rc == 0;) {
		int n;
		if ((rc = ts__cursor_next(c, &row, &n)) < 0)
			break;
		int64_t w = row ? row[g].v.i : INT64_MAX;
		for (; rc == 0 && h < nhad && had[h] < w; h++)
			rc = delete_window(u, prefix, had[h]); /* no rows left in it */
		if (rc < 0 || !row)
			break;
		if (h < nhad && had[h] == w)
			h++;
		rc = gather_row(u, row);
		if (rc == 0 && y && ++*done % WINDOWS_PER_SLICE == 0 && y->fn(y->arg, u->t) == TS_ECLOSED)
			rc = STOPPED;
	}
	free(had);
	return rc;
}

/* Recompute the windows of [s0, s1) (multiples of every) of group
 * prefix, in parts of at most SPAN_WINDOWS_MAX windows, each read at a
 * snapshot no older than ts__rollup_resnap_every (refresh).  Windows
 * that begin before the source's expiry (as of that snapshot) or the
 * rollup's are left as they are. */
static int span(struct run *u, const ts_value *prefix, int64_t s0, int64_t s1,
                const ts__merge_yield *y, uint64_t *done)
{
	const ts__rollup_def *d = u->def;
	int rc = 0;
	while (rc == 0 && s0 < s1) {
		if (u->agg && (rc = refresh(u)) < 0)
			break;
		int64_t keep = u->src_expiry > u->expiry ? u->src_expiry : u->expiry;
		if (s0 < keep) {
			int64_t k = ts__floor_multiple(keep, d->every);
			if (k < keep)
				k = k > INT64_MAX - d->every ? INT64_MAX : k + d->every;
			if (k > s1)
				k = s1;
			u->skipped += (uint64_t)((k - s0) / d->every);
			s0 = k;
			if (s0 >= s1)
				break;
		}
		/* a window accumulated at insert is written from its
		 * accumulators (exact at S, rollacc.c); the windows before the
		 * next such are read from the source */
		const ts_value *acc = ts__rollacc_next(u->acc, prefix, s0);
		int64_t next = acc && acc[d->group].v.i < s1 ? acc[d->group].v.i : s1;
		if (next == s0) {
			if ((rc = gather_row(u, acc)) == 0)
				u->accumulated++;
			if (rc == 0 && y && ++*done % WINDOWS_PER_SLICE == 0 &&
			    y->fn(y->arg, u->t) == TS_ECLOSED)
				rc = STOPPED;
			s0 = s0 > INT64_MAX - d->every ? s1 : s0 + d->every;
			continue;
		}
		/* a run that began without a snapshot (its harvest whole at a
		 * durable version: maintain) reads none; should a window lack
		 * its row all the same, a snapshot synced through is taken, as
		 * a run from the start takes it, and the window looked at again
		 * (the source's expiry as of it) */
		if (!u->agg) {
			if ((rc = refresh(u)) < 0)
				break;
			continue;
		}
		/* s1 - s0 in uint64_t: it may exceed INT64_MAX (s0 negative);
		 * s0 plus the part's length stays below s1 */
		uint64_t len = (uint64_t)next - (uint64_t)s0, every = (uint64_t)d->every;
		int64_t e = len / every > SPAN_WINDOWS_MAX
		            ? (int64_t)((uint64_t)s0 + SPAN_WINDOWS_MAX * every) : next;
		rc = span_part(u, prefix, s0, e, y, done);
		s0 = e;
	}
	return rc;
}

/* A group's values, kept across a cursor's next rows (the rollup's
 * groups gathered by wildcard_span): strings copied into mem. */
struct held_prefix {
	ts_value v[TS_KEY_COLUMNS_MAX];
	ts_buf mem;
};

static int hold_prefix(struct held_prefix *p, const ts_value *v, int n)
{
	p->mem.len = 0;
	for (int i = 0; i < n; i++)
		if (is_bytes(&v[i]))
			ts__put(&p->mem, v[i].v.s.ptr, v[i].v.s.len);
	if (p->mem.oom)
		return ts__fail(TS_ENOMEM, "out of memory");
	size_t at = 0;
	for (int i = 0; i < n; i++) {
		p->v[i] = v[i];
		if (is_bytes(&v[i])) {
			p->v[i].v.s.ptr = p->mem.data + at;
			at += v[i].v.s.len;
		}
	}
	return 0;
}

/* Whether a[0..n) and b[0..n) are the same values. */
static int same_values(const ts_value *a, const ts_value *b, int n)
{
	for (int i = 0; i < n; i++) {
		if (a[i].type != b[i].type)
			return 0;
		if (is_bytes(&b[i])) {
			if (a[i].v.s.len != b[i].v.s.len ||
			    (b[i].v.s.len && memcmp(a[i].v.s.ptr, b[i].v.s.ptr, b[i].v.s.len) != 0))
				return 0;
		} else if (a[i].v.i != b[i].v.i) {
			return 0;
		}
	}
	return 1;
}

static int same_prefix(const struct held_prefix *p, const ts_value *v, int n)
{
	return same_values(p->v, v, n);
}

/* The number of leading values of a changes row's group that it fixes:
 * g, or fewer for a wildcard row (a delete of several groups: TS_NONE
 * for every value it does not fix). */
static int fixed_values(const ts_value *v, int g)
{
	int k = 0;
	while (k < g && v[k].type != TS_NONE)
		k++;
	return k;
}

/* Recompute [s0, s1) for a wildcard row whose first k group values are
 * fixed.  Only a delete reports one, and a delete only takes rows away:
 * the groups it can have changed are those the rollup holds windows of
 * in [s0, s1) (it was exact at the watermark; a group whose rows came
 * after it is reported by rows of its own).  Their keys are gathered
 * first, then each is recomputed as a span. */
static int wildcard_span(struct run *u, const ts_value *prefix, int k, int64_t s0, int64_t s1,
                         const ts__merge_yield *y, uint64_t *done)
{
	int g = u->def->group, cols[TS_KEY_COLUMNS_MAX];
	for (int i = 0; i < g; i++)
		cols[i] = i;
	ts_query q = {.prefix = prefix, .nprefix = k, .from = s0, .to = s1,
	              .has_from = 1, .has_to = 1, .columns = cols, .ncolumns = g};
	struct held_prefix *keys = NULL;
	size_t n = 0, cap = 0;
	ts_cursor *c;
	int rc = ts__query_open(u->t, &q, &c);
	for (const ts_value *v; rc == 0;) {
		int nv;
		if ((rc = ts__cursor_next(c, &v, &nv)) < 0 || !v)
			break;
		if (n && same_prefix(&keys[n - 1], v, g))
			continue;
		if (n == cap) {
			struct held_prefix *x = realloc(keys, (cap = cap ? 2 * cap : 8) * sizeof *x);
			if (!x) {
				rc = ts__fail(TS_ENOMEM, "out of memory");
				break;
			}
			keys = x;
		}
		ts__buf_init(&keys[n].mem);
		n++;
		rc = hold_prefix(&keys[n - 1], v, g);
	}
	if (c)
		ts_cursor_close(c);
	for (size_t i = 0; rc == 0 && i < n; i++)
		rc = span(u, keys[i].v, s0, s1, y, done);
	for (size_t i = 0; i < n; i++)
		ts__buf_free(&keys[i].mem);
	free(keys);
	return rc;
}

/* The aggregate specs over the source that make the rollup's value
 * columns, resolved by name in the source's current schema. */
static int resolve_specs(struct run *u)
{
	ts_schema *s;
	ts__rollup_col *cols;
	int n, rc = ts__table_schema(u->src, &s);
	if (rc < 0)
		return rc;
	if ((rc = ts__rollup_columns(u->def, &cols, &n)) == 0 &&
	    !(u->specs = malloc((size_t)n * sizeof *u->specs)))
		rc = ts__fail(TS_ENOMEM, "out of memory");
	for (int j = 0; rc == 0 && j < n; j++)
		if (source_spec(u->def, s, &cols[j], &u->specs[j]) < 0)
			rc = ts__fail(TS_ECORRUPT, "source \"%s\" has no column for the %s of \"%s\"",
			              u->def->source, ts_aggfn_name(cols[j].fn), cols[j].column);
	u->nspecs = n;
	u->width = u->def->group + 1 + n;
	free(cols);
	ts_schema_free(s);
	return rc;
}

/* Register t's accumulators at insert in its source, if not yet there
 * (rollacc.c): at its creation, and at each look of the maintenance (a
 * reopened database, a delete in the source), so that windows closing
 * before the next run are accumulated.  Best effort: a window not
 * accumulated is read from the source. */
static void accumulate(ts_table *t)
{
	ts_table *src;
	ts__rollacc_harvest *h = NULL;
	struct run u = {.t = t, .def = &t->rollup->def};
	if (ts__db_readonly(t->db) || ts_table_open(t->db, t->rollup->def.source, &src) < 0) {
		ts__clear_error();
		return;
	}
	u.src = src;
	if (resolve_specs(&u) < 0 ||
	    ts__rollacc_take(src, t->name, u.def, u.specs, u.nspecs, 0, 0, 0, 0, 0, &h, NULL) < 0)
		ts__clear_error();
	ts__rollacc_harvest_free(h); /* at version 0: nothing taken */
	free(u.specs);
	ts_table_close(src);
}

/* W = d: in memory only for a paced run within TS_ROLLUP_PERSIST_EVERY
 * of the last persisted W (the rows are in the rollup, and the router
 * and stats of this handle may take them; a crash recomputes from the
 * persisted W, which other handles read); else persisted, the rollup's
 * rows durable first.  Written under desc_mu, as every file of the
 * table, so that a drop waits for it. */
static int advance(struct ts_table *t, uint64_t d, int force)
{
	ts__rollup *r = t->rollup;
	uint64_t mine;
	int64_t mono = ts__mono_ns();
	if (!force && r->persisted_mono && mono - r->persisted_mono < TS_ROLLUP_PERSIST_EVERY) {
		pthread_mutex_lock(&r->mu);
		r->def.watermark = d;
		pthread_mutex_unlock(&r->mu);
		return 0;
	}
	int rc = sync_durable(t, &mine);
	if (rc < 0)
		return rc;
	pthread_mutex_lock(&t->desc_mu);
	if (ts__table_dropped(t) || __atomic_load_n(&t->dropping, __ATOMIC_SEQ_CST)) {
		pthread_mutex_unlock(&t->desc_mu);
		return ts__fail(TS_ECLOSED, "table \"%s\" was dropped", t->name);
	}
	ts__rollup_def next = r->def; /* fns are immutable: shared */
	next.watermark = d;
	rc = ts__rollup_write(t->dir, &next);
	if (rc == 0) {
		pthread_mutex_lock(&r->mu);
		r->def.watermark = d;
		pthread_mutex_unlock(&r->mu);
		r->persisted_mono = mono;
	}
	pthread_mutex_unlock(&t->desc_mu);
	return rc;
}


/* The changes of a run, read whole before any window is recomputed, so
 * that the changes cursor -- and the snapshot it holds -- is closed
 * before the long part of the run: the spans (a group's consecutive
 * windows joined), in the order changes gives them, each naming its
 * group; the groups' values, g of each in vals, strings and blobs at
 * offsets in mem (group_values resolves them).  24 bytes a span, and a
 * group's values once: less than the changes cursor holds itself. */
struct changed {
	ts_value *vals;
	size_t ngroups, capgroups;
	ts_buf mem;
	struct changed_span {
		size_t group;
		int64_t s0, s1;
	} *spans;
	size_t nspans, capspans;
};

static void changed_free(struct changed *c)
{
	free(c->vals);
	free(c->spans);
	ts__buf_free(&c->mem);
}

/* Group i's g values into out, their strings and blobs pointing into
 * c->mem (valid until c grows). */
static void group_values(const struct changed *c, size_t i, int g, ts_value *out)
{
	memcpy(out, c->vals + i * (size_t)g, (size_t)g * sizeof *out);
	resolve_values(out, (size_t)g, &c->mem);
}

/* Append the group of a changes row (its g leading values). */
static int add_group(struct changed *c, const ts_value *row, int g)
{
	if (c->ngroups == c->capgroups) {
		size_t cap = c->capgroups ? 2 * c->capgroups : 16;
		ts_value *x = realloc(c->vals, cap * (size_t)(g ? g : 1) * sizeof *x);
		if (!x)
			return ts__fail(TS_ENOMEM, "out of memory");
		c->vals = x;
		c->capgroups = cap;
	}
	int rc = stash_values(c->vals + c->ngroups * (size_t)g, row, (size_t)g, &c->mem);
	if (rc < 0)
		return rc;
	c->ngroups++;
	return 0;
}

/* Add windows [from, to) of the last group added to c, joined to the
 * last span when it is of that group (same) and overlaps or touches
 * them. */
static int add_span(struct changed *c, int same, int64_t from, int64_t to)
{
	struct changed_span *s = c->nspans ? &c->spans[c->nspans - 1] : NULL;
	if (same && s && from <= s->s1) {
		if (to > s->s1)
			s->s1 = to;
		return 0;
	}
	if (c->nspans == c->capspans) {
		size_t cap = c->capspans ? 2 * c->capspans : 16;
		struct changed_span *x = realloc(c->spans, cap * sizeof *x);
		if (!x)
			return ts__fail(TS_ENOMEM, "out of memory");
		c->spans = x;
		c->capspans = cap;
	}
	c->spans[c->nspans++] = (struct changed_span){c->ngroups - 1, from, to};
	return 0;
}

/* Read changes(source, (w, v], every, group) into *c, a group's
 * consecutive (overlapping or touching) windows joined into one span;
 * the cursor closed at return. */
static int read_changes(struct run *u, uint64_t w, uint64_t v, struct changed *c)
{
	const ts__rollup_def *d = u->def;
	ts_changes_spec cs = {.since = w, .until = v, .resolution = d->every, .depth = d->group};
	ts_cursor *ch;
	int g = d->group, rc = ts__changes_open(u->src, &cs, &ch);
	if (rc < 0)
		return rc;
	ts_value last[TS_KEY_COLUMNS_MAX];
	for (;;) {
		const ts_value *row;
		int n;
		if ((rc = ts__cursor_next(ch, &row, &n)) < 0 || !row)
			break;
		int64_t from = ts__floor_multiple(row[g].v.i, d->every);
		int64_t to = ts__floor_multiple(row[g + 1].v.i - 1, d->every);
		to = to > INT64_MAX - d->every ? INT64_MAX : to + d->every;
		int same = 0;
		if (c->ngroups) {
			group_values(c, c->ngroups - 1, g, last);
			same = same_values(last, row, g);
		}
		if ((!same && (rc = add_group(c, row, g)) < 0) ||
		    (rc = add_span(c, same, from, to)) < 0)
			break;
	}
	ts_cursor_close(ch);
	return rc;
}

/* The windows the harvest lists as touched in (w, v] into *c, as
 * read_changes would give them (a group's consecutive windows joined):
 * every commit since w was folded at insert (ts__rollacc_exact), so
 * changes would report the same windows or more. */
static int harvest_changes(struct run *u, struct changed *c)
{
	int g = u->def->group, rc = 0;
	int64_t every = u->def->every;
	for (size_t i = 0; rc == 0 && i < ts__rollacc_groups(u->acc); i++) {
		const int64_t *starts;
		size_t n;
		const ts_value *key = ts__rollacc_group(u->acc, i, &starts, &n);
		if ((rc = add_group(c, key, g)) < 0)
			break;
		for (size_t k = 0; rc == 0 && k < n; k++)
			rc = add_span(c, k > 0, starts[k],
			              starts[k] > INT64_MAX - every ? INT64_MAX : starts[k] + every);
	}
	return rc;
}

uint64_t ts__rollup_changes_skipped;

/* Write a whole harvest (ts__rollacc_whole) as it is: its rows are the
 * rollup's (group values, window start, one value per column), a group's
 * windows ascending, every window touched since w among them -- so no
 * spans, no lookup per window and no copy: ROWS_PER_BATCH at a time
 * straight from the harvest, the scheduler's yield between two batches.
 * A window that begins before the source's expiry or the rollup's is
 * left as it is (skipped), as span leaves it. */
static int write_harvest(struct run *u, const ts__merge_yield *y)
{
	size_t n, width = (size_t)u->width, i = 0, j = 0;
	const ts_value *rows = ts__rollacc_rows(u->acc, &n);
	int64_t keep = u->src_expiry > u->expiry ? u->src_expiry : u->expiry;
	uint64_t done = 0;
	int g = u->def->group, rc = 0;
	while (rc == 0) {
		/* rows [i, j) make the next batch */
		if (j < n && j - i < ROWS_PER_BATCH && rows[j * width + (size_t)g].v.i >= keep) {
			j++;
			if (y && ++done % WINDOWS_PER_SLICE == 0 && y->fn(y->arg, u->t) == TS_ECLOSED)
				rc = STOPPED;
			continue;
		}
		if (j > i && (rc = insert_rows(u, rows + i * width, j - i)) < 0)
			break;
		u->accumulated += j - i;
		if (j == n)
			break;
		if (rows[j * width + (size_t)g].v.i < keep) { /* a window before the expiry */
			u->skipped++;
			j++;
		}
		i = j;
	}
	return rc;
}

/* Recompute the windows changes reports in (w, v] of the source -- or,
 * when every commit since w was folded at insert, that the harvest lists
 * -- each run of consecutive windows of a group (a span) by one
 * aggregate (in parts: span). */
static int recompute(struct run *u, uint64_t w, uint64_t v, const ts__merge_yield *y)
{
	struct changed ch;
	memset(&ch, 0, sizeof ch);
	ts__buf_init(&ch.mem);
	int g = u->def->group, rc;
	if (!u->reset && ts__rollacc_whole(u->acc)) {
		__atomic_add_fetch(&ts__rollup_changes_skipped, 1, __ATOMIC_RELAXED);
		return write_harvest(u, y);
	}
	if (!u->reset && ts__rollacc_exact(u->acc)) {
		rc = harvest_changes(u, &ch);
		__atomic_add_fetch(&ts__rollup_changes_skipped, 1, __ATOMIC_RELAXED);
	} else {
		rc = read_changes(u, w, v, &ch);
	}
	uint64_t done = 0;
	ts_value prefix[TS_KEY_COLUMNS_MAX];
	for (size_t i = 0; rc == 0 && i < ch.nspans; i++) {
		const struct changed_span *s = &ch.spans[i];
		group_values(&ch, s->group, g, prefix);
		int k = fixed_values(prefix, g);
		rc = k < g ? wildcard_span(u, prefix, k, s->s0, s->s1, y, &done)
		           : span(u, prefix, s->s0, s->s1, y, &done);
	}
	changed_free(&ch);
	return rc == 0 ? write_rows(u) : rc;
}

void (*ts__rollup_after_sync)(struct ts_table *src);

/* A snapshot of the source for the run to read at and its version: the
 * aggregate of spans is opened first (its snapshot, commit *v), then the
 * source's log is synced, so that every row the run reads is durable
 * before any rollup row counts it (docs/rollups.md section 2).  The
 * source's expiry of the snapshot raises u->src_expiry. */
static int snapshot_durable(struct run *u, uint64_t *v)
{
	ts_aggregate req = {.every = u->def->every, .group = u->def->group, .specs = u->specs,
	                    .nspecs = u->nspecs};
	uint64_t d;
	int rc = ts__aggregate_open_spans(u->src, &req, &u->agg);
	if (rc < 0)
		return rc;
	u->taken = ts__mono_ns();
	*v = u->agg->scan.snap.commit;
	if (u->agg->scan.snap.expiry > u->src_expiry)
		u->src_expiry = u->agg->scan.snap.expiry;
	if ((rc = sync_durable(u->src, &d)) < 0)
		return rc;
	if (d < *v)
		return ts__fail(TS_EIO, "source \"%s\": durable through version %" PRIu64 " after "
		                "its sync, below the version %" PRIu64 " read", u->def->source, d, *v);
	if (ts__rollup_after_sync)
		ts__rollup_after_sync(u->src);
	return 0;
}

/* Whether the run must read the rollup's windows of each span, to delete
 * those left empty: only a delete empties a window, so only when the
 * source has taken one (its descriptor says so from before the delete's
 * commit, which the snapshot taken before this may hold) or the run
 * starts over. */
static int windows_may_empty(struct ts_table *src, int reset, int *out)
{
	int rc = ts__table_lock(src);
	if (rc < 0)
		return rc;
	*out = reset || (src->desc->flags & TS_DESC_DELETED) != 0;
	ts__table_unlock(src);
	return 0;
}

/* Move the run to a newer snapshot of the source when its own is
 * ts__rollup_resnap_every old, or take its first when it has none (a
 * run begun without one: unsynced): the old one released first (with the
 * last snapshot of the source gone, the log segments flushes released
 * meanwhile are unmapped, and merged tablets closed: their disk space
 * returns), the new one taken and synced through as the first was.  It
 * is at S or later, and reading there is exact (docs/rollups.md
 * section 2): a row or delete committed after S that it sees is reported
 * by the changes after S, which the next run recomputes from W = S. */
static int refresh(struct run *u)
{
	if (u->agg && ts__mono_ns() - u->taken < ts__rollup_resnap_every)
		return 0;
	uint64_t v;
	if (u->agg)
		ts_cursor_close(u->agg);
	u->agg = NULL;
	int rc = snapshot_durable(u, &v);
	if (rc < 0)
		return rc;
	if (v < u->v)
		return ts__fail(TS_EIO, "source \"%s\": at version %" PRIu64 " during a run "
		                "from version %" PRIu64, u->def->source, v, u->v);
	/* a delete since the run began empties windows too: read the
	 * rollup's, so that what is written is exact at this snapshot */
	return u->read_had ? 0 : windows_may_empty(u->src, u->reset, &u->read_had);
}

uint64_t ts__rollup_unsynced_runs;
int64_t ts__rollup_durable_wait = TS_ROLLUP_DURABLE_WAIT;

/* A paced run without a sync (docs/rollups.md section 2, "Durable
 * without a sync"): the harvest at D, the source's durable commit as its
 * own syncs left it, taken when it is whole -- every window commits in
 * (w, D] touched written from the accumulators, nothing of the source
 * read, so that every row the run counts is durable with no snapshot and
 * no sync.  Returns 0 with *v = D and *upto the harvest's version (D, or
 * below with defer); 1 when D is not past w or the harvest at D would
 * not be whole (nothing taken: the run waits for the source's syncs, or
 * syncs it); or an error. */
static int unsynced(struct run *u, uint64_t w, int defer, int64_t start, uint64_t *v,
                    uint64_t *upto)
{
	uint64_t d;
	int rc = durable_head(u->src, &d);
	if (rc < 0 || d <= w)
		return rc < 0 ? rc : 1;
	*upto = d;
	rc = ts__rollacc_take(u->src, u->t->name, u->def, u->specs, u->nspecs, w, d, defer, start,
	                      1, &u->acc, upto);
	if (rc < 0) {
		ts__clear_error(); /* out of memory: a run with a snapshot reads the source */
		return 1;
	}
	if (rc == 0) {
		*v = d;
		__atomic_add_fetch(&ts__rollup_unsynced_runs, 1, __ATOMIC_RELAXED);
	}
	return rc;
}

/* paced_due: due because a window of the clock closed (the source still
 * receiving rows): the run may leave the windows opened since W for the
 * next (ts__rollacc_take's defer). */
#define DUE_WINDOW 2

/* Whether a paced run is due at database time now, the source at
 * version head: the first run, a source quiet since the last look (its
 * rows are all in: roll them up at once), a window of the clock closed
 * since the last run (the windows that received rows meanwhile are
 * recomputed about once, not at every pass), or a clock gone back.
 * Only the scheduler's thread calls it; r->mu is held. */
static int paced_due(ts__rollup *r, uint64_t head, int64_t now)
{
	int64_t pace = r->def.every < TS_ROLLUP_PACE_MAX ? r->def.every : TS_ROLLUP_PACE_MAX;
	int quiet = head == r->seen_head;
	r->seen_head = head;
	if (!r->last_run || quiet || now < r->last_run)
		return 1;
	return ts__floor_multiple(now - TS_ROLLUP_PACE_GRACE, pace) >
	       ts__floor_multiple(r->last_run - TS_ROLLUP_PACE_GRACE, pace) ? DUE_WINDOW : 0;
}

static int maintain(struct ts_table *t, const ts__merge_yield *y, int mode)
{
	int force = mode == TS_ROLLUP_EXPLICIT;
	ts__rollup *r = t->rollup;
	ts_db *db = t->db;
	ts_table *src;
	int rc = ts_table_open(db, r->def.source, &src);
	if (rc < 0)
		return rc;
	struct run u = {.t = t, .src = src, .def = &r->def, .src_expiry = INT64_MIN};
	ts__buf_init(&u.strings);
	uint64_t v = 0, w, head = 0;
	int reset = 0;
	if (!src->rollup != !(r->def.flags & TS_ROLLUP_FROM_ROLLUP)) {
		rc = ts__fail(TS_ECORRUPT, "source \"%s\" is %s rollup now", r->def.source,
		              src->rollup ? "a" : "no");
		goto out;
	}
	pthread_mutex_lock(&r->mu);
	w = r->def.watermark;
	pthread_mutex_unlock(&r->mu);
	if ((rc = ts__table_version(src, &head)) < 0)
		goto out;
	int64_t now = ts_now(db), start = ts__floor_multiple(now, r->def.every);
	/* the source's accumulators filled: rows arrive faster than the clock
	 * closes their windows (rollacc.h); due now, whatever the clock (a
	 * window of the clock that closed keeps its DUE_WINDOW: its defer) */
	int full = !force && head != w && ts__rollacc_full(src, t->name);
	if (mode == TS_ROLLUP_IF_FULL && !full)
		goto out;
	pthread_mutex_lock(&r->mu);
	int due = head == w ? 0 : force ? 1 : mode == TS_ROLLUP_IF_FULL ? 0 : paced_due(r, head, now);
	if (!due && full)
		due = 1;
	pthread_mutex_unlock(&r->mu);
	/* nothing committed past W (which is durable): nothing to read or
	 * sync; not due: the watermark stays, the lag shows it */
	if (due && (rc = resolve_specs(&u)) < 0)
		goto out;
	uint64_t upto = 0;
	int synced = due;
	if (due && !force && (rc = unsynced(&u, w, due == DUE_WINDOW, start, &v, &upto)) <= 0) {
		if (rc < 0)
			goto out;
		synced = 0; /* the harvest at D (or its cut) writes every window: v = D */
		if (full) /* keeping up with the inserts, as a flush does: a whole
		           * harvest is short work, written without the budget and
		           * without the flushes between its slices (they come
		           * after it) */
			y = NULL;
	} else if (due && !force) {
		/* wait for the source's own syncs, up to ts__rollup_durable_wait */
		int64_t mono = ts__mono_ns();
		rc = 0;
		pthread_mutex_lock(&r->mu);
		if (!r->durable_wait_since)
			r->durable_wait_since = mono;
		if (mono - r->durable_wait_since < ts__rollup_durable_wait)
			due = synced = 0;
		pthread_mutex_unlock(&r->mu);
	}
	pthread_mutex_lock(&r->mu);
	if (due) {
		r->last_run = now;
		r->durable_wait_since = 0;
	}
	pthread_mutex_unlock(&r->mu);
	if (!due) /* registered for the windows closing before it is */
		accumulate(t);
	if (synced && (rc = snapshot_durable(&u, &v)) < 0)
		goto out;
	/* after the snapshot: every batch through S is folded (rollacc.c) */
	if (synced)
		upto = v;
	if (synced && ts__rollacc_take(src, t->name, &r->def, u.specs, u.nspecs, w, v,
	                               due == DUE_WINDOW, start, 0, &u.acc, &upto) < 0)
		ts__clear_error(); /* out of memory: every window read from the source */
	if (!due)
		v = w;
	pthread_mutex_lock(&r->mu);
	r->source_version = head > v ? head : v;
	if (r->source_version > w && !r->behind_since)
		r->behind_since = now;
	pthread_mutex_unlock(&r->mu);
	/* the windows opened since W left for the next run: W moves to the
	 * commit before the first of them (read at S all the same) */
	if (due)
		v = upto;
	u.v = v;
	if (v == w)
		goto out;
	if (v < w) {
		/* The source went back (restored from an older backup): its next
		 * commits take versions the watermark claims.  Start over. */
		char msg[256];
		snprintf(msg, sizeof msg, "rollup \"%s\": source \"%s\" is at version %" PRIu64
		         ", below the watermark %" PRIu64 ": recomputing every window", t->name,
		         r->def.source, v, w);
		ts__db_log(db, msg);
		pthread_mutex_lock(&r->mu);
		r->resets++;
		pthread_mutex_unlock(&r->mu);
		w = 0;
		reset = 1;
	}
	u.reset = reset;
	if ((rc = windows_may_empty(src, reset, &u.read_had)) < 0 ||
	    (rc = ts__table_lock(src)) < 0)
		goto out;
	int64_t src_expiry = ts__table_expiry(src, now);
	if (src_expiry > u.src_expiry)
		u.src_expiry = src_expiry;
	ts__table_unlock(src);
	if ((rc = ts__table_lock(t)) < 0)
		goto out;
	u.expiry = ts__table_expiry(t, now);
	ts__table_unlock(t);
	rc = recompute(&u, w, v, y);
	pthread_mutex_lock(&r->mu);
	r->windows_recomputed += u.recomputed;
	r->windows_deleted += u.deleted;
	r->windows_skipped += u.skipped;
	r->windows_accumulated += u.accumulated;
	pthread_mutex_unlock(&r->mu);
	if (rc == 0 && (rc = advance(t, v, force)) == 0) {
		pthread_mutex_lock(&r->mu);
		r->passes++;
		r->behind_since = head > v ? now : 0;
		pthread_mutex_unlock(&r->mu);
	}
out:
	if (rc != 0 && u.acc) /* what it took is for the watermark it did not write */
		ts__rollacc_untake(src, t->name, u.v);
	if (u.agg)
		ts_cursor_close(u.agg);
	ts__rollacc_harvest_free(u.acc);
	free(u.rows);
	ts__buf_free(&u.strings);
	free(u.specs);
	ts_table_close(src);
	return rc;
}

int ts__rollups_load(ts_db *db)
{
	char **names, dir[TS_PATH_MAX], path[TS_PATH_MAX];
	int n, rc = ts__tables(db, &names, &n), first = 0;
	for (int i = 0; rc == 0 && i < n; i++) {
		ts_table *t;
		struct stat st;
		if (ts__path(dir, "%s/%s", db->path, names[i]) < 0 ||
		    ts__path(path, "%s/%s", dir, TS_ROLLUP_FILE) < 0 || stat(path, &st) < 0)
			continue;
		int r = ts_table_open(db, names[i], &t);
		if (r == 0)
			ts_table_close(t);
		else if (r != TS_ECLOSED && !first)
			first = r; /* a damaged rollup: its open said why; the others go on */
	}
	ts_free_names(names);
	return rc < 0 ? rc : first;
}

int ts__rollup_due(struct ts_table *t, const ts__merge_yield *y, int mode)
{
	ts__rollup *r = t->rollup;
	if (!r || ts__db_readonly(t->db) || !ts__table_retry_due(t, &r->retry))
		return 0;
	int rc = maintain(t, y, mode);
	if (rc == STOPPED)
		return 0;
	return ts__table_retry_done(t, &r->retry, "rollup", rc);
}
