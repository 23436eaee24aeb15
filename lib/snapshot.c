/*
 * snapshot.c -- taking and reading snapshots of filling tablets.
 *
 * The only lock taken is the table's short schema lock, to copy the
 * pointers of its schema versions (which are immutable and live as long
 * as the table); the writer's mutex is never touched, so a snapshot is
 * taken and read while a batch is being inserted.
 */
#include <stdlib.h>
#include <string.h>

#include "avl.h"
#include "descriptor_format.h"
#include "error.h"
#include "handle.h"
#include "row.h"
#include "snapshot.h"
#include "tabledesc.h"
#include "tablet.h"
#include "tablets.h"

/* Reference the tablet set of the current descriptor (its tablets and
 * schema versions) and make room for nroots roots. */
static int capture(ts_table *t, ts__snapshot *s, uint32_t nroots)
{
	ts__tablet_set *set;
	int rc = ts__table_tablet_set(t, &set);
	if (rc < 0)
		return rc;
	s->set = set;
	s->metas = set->metas;
	s->tablets = set->tablets;
	s->ntablets = set->ntablets;
	s->versions = set->versions;
	s->nversions = set->nversions;
	s->schema = set->versions[set->nversions - 1];
	s->replaced = (set->flags & TS_DESC_REPLACED) != 0;
	/* only a TTL reads the clock: a table without one pays no clock read
	 * per snapshot (the horizon alone does not depend on now) */
	s->expiry = ts__expiry_at(set->ttl, set->horizon_set, set->horizon,
	                          set->ttl > 0 ? ts_now(t->db) : 0);
	if (ts__db_readonly(t->db)) /* the writer may have released segments */
		ts__log_forget(t->log, set->flushed_lsn);
	if (nroots && !(s->roots = malloc(nroots * sizeof *s->roots)))
		return ts__fail(TS_ENOMEM, "out of memory");
	return 0;
}

/* A merge may retire and unlink a tablet between our reading the
 * descriptor and opening it; the descriptor read again no longer names
 * it.  This many attempts, then the error stands. */
#define TAKE_ATTEMPTS 8

static int take(ts_table *t, ts__snapshot *s);

/* The tombstones in force for the snapshot: the chain the commit names
 * (past its cut, and past the descriptor's flushed position: records
 * before it were moved into the descriptor), then the descriptor's that
 * the chain does not hold already (a flush's descriptor is written before
 * the commit that cuts the chain) -- as a view (tombstone.h) the set
 * caches for the chain it last saw: snapshots of an unchanged chain and
 * descriptor share it, and neither walk the chain nor copy a tombstone.
 * Any commit naming the same root names the same records (a record never
 * changes once committed), so (root, cut) and the set identify the view. */
static int gather_tombs(ts_table *t, ts__snapshot *s, const ts__commit *c)
{
	ts__root r = {0};
	if (c->has_tombs)
		ts__commit_root(c, c->nroots, &r);
	if (!r.root)
		r.since = 0;
	if (!r.root && !s->set->ntombs)
		return 0;
	ts__tomb_view *v;
	pthread_mutex_lock(&t->schema_mu);
	if ((v = s->set->tview) && v->root == r.root && v->since == r.since)
		__atomic_add_fetch(&v->refs, 1, __ATOMIC_RELAXED);
	else
		v = NULL;
	pthread_mutex_unlock(&t->schema_mu);
	if (!v) {
		int rc = ts__tomb_view_build(t->log, r.root, r.since, s->set->flushed_lsn, c->lsn,
		                             s->set->tombs, s->set->ntombs, &v);
		if (rc < 0)
			return rc;
		__atomic_add_fetch(&v->refs, 1, __ATOMIC_RELAXED); /* the set's */
		pthread_mutex_lock(&t->schema_mu);
		ts__tomb_view *old = s->set->tview;
		s->set->tview = v;
		pthread_mutex_unlock(&t->schema_mu);
		ts__tomb_view_put(old);
	}
	s->tview = v;
	s->tombs = v->tombs;
	s->ntombs = v->ntombs;
	s->tindex = v->ntombs ? &v->index : NULL;
	return 0;
}

int ts__snapshot_take(ts_table *t, ts__snapshot *s)
{
	int rc;
	ts__maint_foreground(&t->db->maint, ts__mono_coarse_ns()); /* merges yield to reads */
	for (int attempt = 1;; attempt++)
		if ((rc = take(t, s)) != TS_ENOENT || attempt == TAKE_ATTEMPTS)
			return rc;
}

static int take(ts_table *t, ts__snapshot *s)
{
	ts__commit c;
	memset(s, 0, sizeof *s);
	memset(&c, 0, sizeof c);
	s->table = t;
	int rc = 0;
	if (!ts__db_readonly(t->db) && __atomic_load_n(&t->dropped, __ATOMIC_RELAXED))
		return ts__fail(TS_ECLOSED, "table \"%s\" was dropped", t->name);
	ts__log_pin(t->log); /* before the commit: no segment it names goes away */
	s->pinned = 1;
	s->commit = ts__log_head(t->log); /* first the commit, then the descriptor */
	if (ts__db_readonly(t->db)) { /* pick up the writer's descriptor changes */
		if ((rc = ts__table_lock(t)) < 0) {
			ts__snapshot_release(s);
			return rc;
		}
		ts__table_unlock(t);
	}
	/* the commit's record never changes once published: read it first,
	 * to know how many roots to make room for */
	if ((s->commit && (rc = ts__log_read_commit(t->log, s->commit, &c)) < 0) ||
	    (rc = capture(t, s, c.nroots)) < 0) {
		ts__snapshot_release(s);
		return rc;
	}
	s->seq = c.seq;
	if ((rc = gather_tombs(t, s, &c)) < 0) {
		ts__snapshot_release(s);
		return rc;
	}
	for (uint32_t i = 0; i < c.nroots; i++) {
		ts__commit_root(&c, i, &s->roots[s->nroots]);
		if (!ts__tablets_hold_tree(s->metas, s->ntablets, s->roots[s->nroots].born))
			s->nroots++;
	}
	return 0;
}

void ts__snapshot_release(ts__snapshot *s)
{
	ts__tablet_set_put(s->table, s->set);
	if (s->pinned)
		ts__log_unpin(s->table->log);
	free(s->roots);
	ts__tomb_view_put(s->tview);
	memset(s, 0, sizeof *s);
}

const ts__schema *ts__snapshot_version_schema(const ts__snapshot *s, uint32_t version)
{
	if (version >= 1 && (int)version <= s->nversions)
		return s->versions[version - 1];
	ts__fail(TS_ECORRUPT, "table \"%s\": a row has unknown schema version %u", s->table->name,
	         version);
	return NULL;
}

int ts__snapshot_decode(const ts__snapshot *s, uint32_t version, const void *row, size_t len,
                        ts_value *vals, ts_buf *scratch)
{
	const ts__schema *from = ts__snapshot_version_schema(s, version);
	return from ? ts__row_decode(from, s->schema, row, len, vals, scratch) : TS_ECORRUPT;
}

int ts__snapshot_decode_values(const ts__snapshot *s, uint32_t version, const void *row,
                               size_t len, ts_value *vals, const int *want, int nwant)
{
	const ts__schema *from = ts__snapshot_version_schema(s, version);
	return from ? ts__row_decode_values(from, s->schema, row, len, vals, want, nwant)
	            : TS_ECORRUPT;
}

int ts__snapshot_row(const ts__snapshot *s, uint64_t lsn, ts_value *vals, ts_buf *scratch)
{
	size_t len;
	uint32_t version;
	const unsigned char *row = ts__rowrec_row(s->table->log, lsn, &len, &version);
	return ts__snapshot_decode(s, version, row, len, vals, scratch);
}

/* Whether a tombstone of s hides the row of a tree whose record is at
 * lsn (a malformed row is left to the decoding to report). */
static int tree_row_hidden(const ts__snapshot *s, uint64_t lsn)
{
	size_t len, klen;
	uint32_t version;
	const void *key;
	const unsigned char *row = ts__rowrec_row(s->table->log, lsn, &len, &version);
	if (ts__row_key(row, len, &key, &klen) < 0 || klen < 8)
		return 0;
	for (int i = 0; i < s->ntombs; i++)
		if (lsn < s->tombs[i].version && ts__tomb_covers(&s->tombs[i], key, klen))
			return 1;
	return 0;
}

/* Whether a tombstone of s hides row[0..len) of tablet i. */
static int tablet_row_hidden(const ts__snapshot *s, int i, const void *row, size_t len)
{
	size_t klen;
	const void *key;
	if (ts__row_key(row, len, &key, &klen) < 0 || klen < 8)
		return 0;
	for (int k = 0; k < s->ntombs; k++)
		if (s->metas[i].hi < s->tombs[k].version && ts__tomb_covers(&s->tombs[k], key, klen))
			return 1;
	return 0;
}

int ts__snapshot_scan(const ts__snapshot *s, uint32_t i, ts__row_fn fn, void *arg)
{
	ts_value vals[TS_COLUMNS_MAX];
	ts__avl_iter it;
	ts_buf scratch;
	uint64_t lsn;
	int rc = 0;
	ts__buf_init(&scratch);
	ts__avl_iter_init(&it, s->table->log, s->roots[i].root, 0);
	while (rc == 0 && (lsn = ts__avl_iter_next(&it)) != 0)
		if (!(s->ntombs && tree_row_hidden(s, lsn)) &&
		    (rc = ts__snapshot_row(s, lsn, vals, &scratch)) == 0 &&
		    vals[s->schema->ts_col].v.i >= s->expiry)
			rc = fn(vals, s->schema->ncols, arg);
	ts__buf_free(&scratch);
	return rc;
}

int ts__snapshot_scan_tablet(const ts__snapshot *s, int i, ts__row_fn fn, void *arg)
{
	const ts__tablet *tab = s->tablets[i];
	ts_value vals[TS_COLUMNS_MAX];
	ts_buf raw, scratch;
	ts_reader r;
	const void *row;
	size_t len;
	int rc = 0;
	uint32_t v = tab->schema_version;
	if (v < 1 || (int)v > s->nversions)
		return ts__fail(TS_ECORRUPT, "tablet %s has unknown schema version %u", tab->path, v);
	ts__buf_init(&raw);
	ts__buf_init(&scratch);
	for (uint32_t b = 0; rc == 0 && b < tab->nblocks; b++) {
		if ((rc = ts__tablet_read_block(tab, b, &raw)) < 0) {
			ts__table_damaged(s->table, tab->id, rc);
			break;
		}
		ts__reader_init(&r, raw.data, raw.len);
		while (rc == 0 && (rc = ts__tablet_block_next(&r, &row, &len)) == 1) {
			rc = 0;
			if (s->ntombs && tablet_row_hidden(s, i, row, len))
				continue;
			if ((rc = ts__row_decode(s->versions[v - 1], s->schema, row, len, vals,
			                         &scratch)) == 0 &&
			    vals[s->schema->ts_col].v.i >= s->expiry)
				rc = fn(vals, s->schema->ncols, arg);
		}
	}
	ts__buf_free(&raw);
	ts__buf_free(&scratch);
	return rc;
}
