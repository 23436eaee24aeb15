/*
 * delete.c -- ts_delete and ts_purge (docs/corrections.md section 3):
 * committing a tombstone like an insert batch, and erasing what
 * tombstones hide from every live file.
 *
 * A delete builds its range with the code ts_query_open uses
 * (ts__range_of_query), so it hides exactly the rows a query of the same
 * selection returns, and commits it as a batch holding one tombstone
 * record (tombstone.h): O(1) in the rows it hides, atomic, published by
 * one release store like any commit, following the sync mode and the
 * prefix rule as inserts do.  The first delete of a table first writes a
 * DESCRIPTOR flagged TS_DESC_TOMBSTONES_LOGGED (format 5), so that builds
 * that know no tombstones refuse the table before reading its log.
 * Deletes hold desc_mu, so that ts_purge, which holds it while it writes
 * the descriptor that may clear that flag, never clears it under a
 * tombstone it does not know.
 *
 * *deleted is exact: the rows are counted on a snapshot taken under the
 * writer's lock, just before the commit, where on-disk blocks lying
 * wholly in the range count as their statistics say; a count that would
 * look at more than COUNT_BUDGET rows (a large range of filling rows, or
 * of blocks the range cuts) is given up (TS_COUNT_UNKNOWN), so that the
 * delete stays short and inserts wait for it little.
 *
 * A purge erases: (1) every filling tree is flushed (flushes leave out
 * the rows tombstones hide, and a tree holds one row per key), (2) in a
 * table that may hold replaced rows, every group of tablets whose
 * timespans meet the range's (and each other's) is merged whole, which
 * keeps the newest row of each key; then every on-disk tablet one of the
 * purged tombstones applies to is rewritten alone without them
 * (merge.c), (3) a
 * commit moves the log to a new segment and a DESCRIPTOR drops the
 * purged tombstones and releases every older segment (flush.c).  Each
 * step leaves a valid table that reads the same: a crash between them
 * leaves the tombstones in force and the purge half done, which reads
 * as before it; ts_purge again finishes it.
 */
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "cursor.h"
#include "descriptor_format.h"
#include "error.h"
#include "flush.h"
#include "handle.h"
#include "merge.h"
#include "rollacc.h"
#include "scan.h"
#include "snapshot.h"
#include "tabledesc.h"
#include "tombstone.h"

/* The tombstone of range r (pointing into it). */
static void tomb_of_range(const ts__range *r, ts__tomb *t)
{
	memset(t, 0, sizeof *t);
	t->tmin = r->tmin;
	t->tmax = r->tmax;
	if (r->has_lo) {
		t->flags |= TS_TOMB_LO | (r->lo_strict ? TS_TOMB_LO_STRICT : 0);
		t->lo = r->lo.data;
		t->lolen = (uint32_t)r->lo.len;
	}
	if (r->has_hi) {
		t->flags |= TS_TOMB_HI | (r->hi_strict ? TS_TOMB_HI_STRICT : 0);
		t->hi = r->hi.data;
		t->hilen = (uint32_t)r->hi.len;
	}
}

/* Build r from q in t's current schema (t->desc: desc_mu is held).
 * Returns 0 or the errors of ts__range_of_query, TS_EINVAL for what a
 * delete may not have. */
static int range_of(ts_table *t, const ts_query *q, ts__range *r, const char *fn)
{
	if (!q)
		return 0;
	if (q->desc || q->limit || q->columns || q->ncolumns || q->after || q->nafter)
		return ts__fail(TS_EINVAL, "%s: desc, limit, columns and after must be 0", fn);
	int rc = ts__range_of_query(r, ts__desc_schema(t->desc), q, INT64_MIN);
	return rc < 0 ? ts__context(rc, "%s", fn) : 0;
}

/* Make the descriptor say that the log may hold tombstones and that the
 * table has taken a delete; desc_mu is held. */
static int flag_logged(ts_table *t)
{
	ts__descriptor *d;
	const unsigned want = TS_DESC_TOMBSTONES_LOGGED | TS_DESC_DELETED;
	if ((t->desc->flags & want) == want)
		return 0;
	int rc = ts__descriptor_clone(t->desc, &d);
	if (rc < 0)
		return rc;
	d->flags |= want;
	return ts__table_install_descriptor(t, d);
}

/* Rows looked at, at most, to count what a delete covers: past them the
 * count is not cheap (it holds the writer's lock), and is given up. */
#define COUNT_BUDGET 65536

/*
 * The rows of q visible now (past the TTL left out): a scan of a
 * snapshot taken under the writer's lock (t->mu is held: no commit comes
 * between it and the delete's), where blocks of on-disk tablets lying
 * wholly inside the range and met by no tombstone count as their
 * statistics say, without being read.  *n becomes TS_COUNT_UNKNOWN when
 * that would look at more than COUNT_BUDGET rows.  Returns 0 or an
 * error of the scan.
 */
static int count_covered(ts_table *t, const ts_query *q, uint64_t *n)
{
	ts__scan sc;
	ts__range r;
	const ts__src *src;
	uint64_t scanned = 0, summarised, rows = 0;
	*n = TS_COUNT_UNKNOWN;
	int rc = ts__scan_begin(&sc, t), more = 0;
	if (rc < 0)
		return rc;
	ts__range_init(&r);
	ts__summary_rule rule = {sc.snap.schema, 0, INT64_MAX, 0}; /* no runs: rows counted one by one */
	rc = ts__range_of_query(&r, sc.snap.schema, q, sc.snap.expiry);
	if (rc == 0)
		rc = ts__scan_start(&sc, &r, 0, &rule);
	while (rc == 0 && (more = ts__scan_next(&sc, &src)) == 1) {
		rows += src->summary ? src->tab->blocks[src->block].rows : 1;
		if (rows % 1024 == 0 &&
		    (ts__scan_counts(&sc, &scanned, &summarised), scanned > COUNT_BUDGET))
			break;
	}
	if (rc == 0 && more < 0)
		rc = more;
	ts__scan_counts(&sc, &scanned, &summarised);
	if (rc == 0 && scanned <= COUNT_BUDGET)
		*n = rows;
	ts__scan_close(&sc);
	ts__range_free(&r);
	return rc;
}

/*
 * Narrow tomb's ts interval to the timespans of the sources it can hide
 * rows of: the tablets and trees of a snapshot taken now (t->mu is held:
 * no commit comes between it and the delete's) whose timespans meet its
 * own.  Every row it will ever hide is older than its version, hence in
 * one of them, so it hides the same rows; but its box says when they
 * lay, which ts_changes_open reports once flushes and merges have left
 * the rows out (a delete of a host for all time reports the hours the
 * host had, not all of time).  When no source meets it, it hides
 * nothing: its range becomes one instant of it (its start, else its end,
 * else 0), which hides nothing either.  Left as it is when the snapshot
 * cannot be taken.
 */
static void narrow_tomb(ts_table *t, ts__tomb *tomb)
{
	ts__snapshot s;
	if (ts__snapshot_take(t, &s) < 0) {
		ts__clear_error();
		return;
	}
	int64_t min = INT64_MAX, max = INT64_MIN;
	for (int i = 0; i < s.ntablets; i++)
		if (s.metas[i].min_ts <= tomb->tmax && s.metas[i].max_ts >= tomb->tmin) {
			min = s.metas[i].min_ts < min ? s.metas[i].min_ts : min;
			max = s.metas[i].max_ts > max ? s.metas[i].max_ts : max;
		}
	for (uint32_t i = 0; i < s.nroots; i++)
		if (s.roots[i].root && s.roots[i].min_ts <= tomb->tmax &&
		    s.roots[i].max_ts >= tomb->tmin) {
			min = s.roots[i].min_ts < min ? s.roots[i].min_ts : min;
			max = s.roots[i].max_ts > max ? s.roots[i].max_ts : max;
		}
	if (min <= max) {
		tomb->tmin = min > tomb->tmin ? min : tomb->tmin;
		tomb->tmax = max < tomb->tmax ? max : tomb->tmax;
	} else {
		/* no source: it hides nothing, now or ever (later rows are
		 * newer), and neither does one instant of its range, which
		 * ts_changes_open can report once it has left (a bounded
		 * window, not all of time) */
		int64_t at = tomb->tmin != INT64_MIN ? tomb->tmin : tomb->tmax != INT64_MAX ? tomb->tmax : 0;
		tomb->tmin = tomb->tmax = at;
	}
	ts__snapshot_release(&s);
}

/* Commit tomb as a batch of its own; t->mu is held. */
static int commit_tomb(ts_table *t, const ts__tomb *tomb, uint64_t *version)
{
	int rc = ts__log_cap_check(t);
	if (rc == 0 && (rc = ts__filling_begin(&t->fill)) == 0) {
		if ((rc = ts__filling_tombstone(&t->fill, tomb)) == 0)
			rc = ts__filling_commit(&t->fill, 0, ts_now(t->db));
		else
			ts__filling_abort(&t->fill);
	}
	if (rc < 0)
		return rc;
	*version = ts__log_head(t->log);
	/* committed: the writer's list learns it (a failure here is only the
	 * writer's view for duplicate checks; readers walk the log) */
	if ((rc = ts__filling_note_tomb(&t->fill, *version)) < 0)
		return ts__context(rc, "the delete is committed");
	return 0;
}

int ts__delete(ts_table *t, const ts_query *q, uint64_t *deleted, uint64_t *table_version)
{
	ts__range r;
	ts__tomb tomb;
	*deleted = 0;
	*table_version = 0;
	if (ts__db_readonly(t->db))
		return ts__fail(TS_EREADONLY, "database %s is open read-only", t->db->path);
	int rc = ts__rollup_refuse(t); /* only its maintenance writes a rollup */
	if (rc < 0)
		return rc;
	ts__range_init(&r);
	rc = ts__table_desc_begin(t);
	if (rc < 0) {
		ts__range_free(&r);
		return rc;
	}
	if ((rc = range_of(t, q, &r, "ts_delete")) == 0 && !r.empty)
		rc = flag_logged(t);
	if (rc == 0 && (rc = ts__table_lock(t)) == 0) {
		if (r.empty) { /* nothing to hide: no commit */
			*table_version = t->log ? ts__log_head(t->log) : 0;
		} else {
			tomb_of_range(&r, &tomb);
			narrow_tomb(t, &tomb);
			uint64_t n = TS_COUNT_UNKNOWN;
			if (count_covered(t, q, &n) < 0)
				n = TS_COUNT_UNKNOWN; /* the count only: the delete goes on */
			/* the rollups' accumulated windows may hold deleted rows:
			 * forgotten, under t->mu before the commit (rollacc.c) */
			ts__rollacc_reset(t);
			if ((rc = commit_tomb(t, &tomb, table_version)) == 0)
				*deleted = n;
		}
		if (rc == 0 && !r.empty && t->db->opts.sync == TS_SYNC_COMMIT &&
		    (rc = ts__log_sync(t->log)) < 0)
			rc = ts__context(rc, "the delete is committed but not yet durable");
		ts__table_unlock(t);
	}
	ts__table_desc_end(t);
	ts__range_free(&r);
	return rc < 0 ? ts__context(rc, "table \"%s\"", t->name) : 0;
}

/* The tombstones in force for t's writer (its descriptor's and its log
 * chain's), at most as new as `upto`, whose box meets r's, copied into
 * *out.  Returns 0 or TS_ENOMEM. */
static int purged(ts_table *t, const ts__range *r, uint64_t upto, ts__tomb **out, int *n)
{
	ts__tomb all, *v = NULL;
	int k = 0, nv = 0, rc = ts__table_lock(t);
	*out = NULL;
	*n = 0;
	if (rc < 0)
		return rc;
	rc = ts__table_tombs(t, &v, &nv);
	ts__table_unlock(t);
	if (rc < 0)
		return rc;
	tomb_of_range(r, &all);
	for (int i = 0; i < nv; i++) {
		ts__tomb *x = &v[i];
		/* boxes meet: each one's lower bound is below the other's upper */
		if (x->version <= upto &&
		    ts__tomb_meets(&all, x->flags & TS_TOMB_LO ? x->lo : NULL, x->lolen,
		                   x->flags & TS_TOMB_HI ? x->hi : NULL, x->hilen, x->tmin, x->tmax))
			v[k++] = *x;
		else
			ts__tomb_free(x);
	}
	*out = v;
	*n = k;
	return 0;
}

/* Attempts at the last step while inserts keep trees in the old
 * segments. */
#define SETTLE_ATTEMPTS 4

int ts__purge(ts_table *t, const ts_query *q, uint64_t *table_version)
{
	ts__range r;
	ts__tomb *gone = NULL;
	int ngone = 0, rewritten = 0, clean = 0;
	uint64_t upto = 0;
	*table_version = 0;
	if (ts__db_readonly(t->db))
		return ts__fail(TS_EREADONLY, "database %s is open read-only", t->db->path);
	ts__range_init(&r);
	int rc = ts__table_desc_begin(t);
	if (rc == 0) {
		rc = range_of(t, q, &r, "ts_purge");
		ts__table_desc_end(t);
	}
	if (rc == 0 && (rc = ts__table_lock(t)) == 0) {
		upto = ts__log_head(t->log); /* every delete to purge is committed */
		ts__table_unlock(t);
	}
	/* (1) every tree older than upto on disk, the log's tombstones in
	 * the descriptor */
	if (rc == 0)
		rc = ts__flush(t, INT64_MAX);
	if (rc == 0 && !r.empty)
		rc = purged(t, &r, upto, &gone, &ngone);
	/* (2) the tablets they apply to, and the groups of tablets that may
	 * hold replaced rows of the range */
	if (rc == 0 && !r.empty) {
		ts__tomb box;
		tomb_of_range(&r, &box);
		rc = ts__merge_purge(t, &box, gone, ngone, &rewritten);
	}
	/* (3) the log, and the tombstones (their change records without
	 * keys, and the records of the range erased of theirs) */
	ts__tomb box;
	tomb_of_range(&r, &box);
	for (int i = 0; rc == 0 && !clean && i < SETTLE_ATTEMPTS; i++)
		if ((rc = ts__flush_settle(t, gone, ngone, r.empty ? NULL : &box, &clean)) == 0 &&
		    !clean)
			rc = ts__flush(t, INT64_MAX);
	ts__tombs_free(gone, ngone);
	ts__range_free(&r);
	if (rc == 0 && (rc = ts__table_lock(t)) == 0) {
		*table_version = ts__log_head(t->log);
		ts__table_unlock(t);
	}
	return rc < 0 ? ts__context(rc, "purge of table \"%s\"", t->name) : 0;
}
