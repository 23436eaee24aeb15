/*
 * insert.c -- ts_insert and ts_insert_at (api.c checks their arguments):
 * one atomic batch into a table's filling tablets.
 *
 * Under the table's mutex (the single writer), each row is checked and
 * converted (types, ts defaulting to now, max_future, TTL), encoded, its
 * row record appended to the log, checked against the on-disk tablets
 * whose timespan covers its ts, and inserted into the AVL tree of its
 * period; then one commit record publishes every root at once.  The first
 * bad row aborts the whole batch: the log tail and the working roots go
 * back to the last commit, so nothing of the batch is ever visible.
 *
 * Duplicates: a row whose key is in an on-disk tablet, a filling tablet
 * or an earlier row of the batch (the filling insert finds the last two
 * in the working roots) is a duplicate.  Under the table's policy reject
 * it fails the batch (TS_EDUPKEY); under ignore it is skipped: its row
 * record, the last thing the batch appended (the AVL insert allocates
 * nothing before it finds an equal key), is given back to the log, so
 * the batch commits as if the row had never been in it, and replaying
 * the log after a crash gives the same rows.  The policy is read from
 * t->desc under t->mu, which an alter needs to swap it, so one batch
 * applies one policy.  Checks of types and times come first: a bad row
 * fails the batch whether or not it is a duplicate.
 *
 * Under the policy replace (the table's, or the batch's: ts_insert_policy)
 * a row is stored whatever the table holds: the AVL insert replaces the
 * node of an equal key in its period's tree (older roots keep the old
 * node), and a row of another tree or of an on-disk tablet is shadowed by
 * the new one, which lies in a newer source (docs/corrections.md section
 * 2: readers and merges resolve equal keys newest source first).  So no
 * tablet is asked: the other filling trees are (they are in memory and
 * skipped by timespan) only to count rows_replaced, which therefore
 * counts the rows that replaced a row still in the log.  Before the
 * first such batch of a table not yet marked, the DESCRIPTOR is marked
 * (TS_DESC_REPLACED), so that every snapshot that can see two rows of a
 * key knows to resolve them.
 *
 * Schema versions: the caller says which version its rows were built for
 * (ts_insert_at; ts_insert means the current one), and the version is
 * looked up under the same mutex that alters need to swap the descriptor
 * in, so a batch is read with exactly one schema however alters race it.
 * A row of an older version is taken as that version's row would read
 * under the current schema -- alters only append columns and widen int32
 * -- so its values are checked against the old columns (an int32 range
 * stays an int32 range) and the columns appended since take their
 * defaults.  Rows are encoded in the current version only.
 */
#include <assert.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "avl.h"
#include "descriptor_format.h"
#include "error.h"
#include "flush.h"
#include "handle.h"
#include "held.h"
#include "key.h"
#include "rollacc.h"
#include "tslimits.h"
#include "row.h"
#include "tabledesc.h"
#include "tablet.h"
#include "tablets.h"

/* Check and convert the values in[0..v->ncols) of a row of version v into
 * out[0..s->ncols), a row of the current version s; ts defaults to now.
 * Returns 0 or an error naming the column. */
static int check_row(const ts__schema *s, const ts__schema *v, const ts_value *in,
                     ts_value *out, int64_t now)
{
	assert(v->ncols <= s->ncols && v->ts_col == s->ts_col);
	for (int c = 0; c < v->ncols; c++) {
		int rc = ts__value_check(v, c, &in[c], &out[c]);
		if (rc < 0)
			return rc;
		if (v->cols[c].type != s->cols[c].type) { /* int32 widened since */
			assert(v->cols[c].type == TS_INT32 && s->cols[c].type == TS_INT64);
			out[c].type = TS_INT64;
		}
	}
	for (int c = v->ncols; c < s->ncols; c++)
		out[c] = s->cols[c].dflt; /* appended since */
	if (in[s->ts_col].type == TS_NONE) {
		out[s->ts_col].type = TS_TIMESTAMP;
		out[s->ts_col].v.i = now;
	}
	return 0;
}

static int check_time(const ts_table *t, int64_t ts, int64_t now)
{
	char a[TS_TIME_BUFSZ], b[TS_TIME_BUFSZ];
	const ts_options *o = &t->db->opts;
	if (now <= INT64_MAX - o->max_future && ts > now + o->max_future) {
		ts_time_format(ts, a, sizeof a);
		ts_time_format(now, b, sizeof b);
		return ts__fail(TS_EFUTURE, "ts %s is more than max_future ahead of now (%s)", a, b);
	}
	int64_t expiry = ts__table_expiry(t, now); /* the TTL, or the horizon */
	if (ts < expiry) {
		ts_time_format(ts, a, sizeof a);
		ts_time_format(expiry, b, sizeof b);
		if (expiry != ts__expiry(t->desc->ttl, now))
			return ts__fail(TS_EEXPIRED, "ts %s is below the table's expiry horizon %s: rows "
			                "before it passed an earlier TTL and stay expired", a, b);
		return ts__fail(TS_EEXPIRED, "ts %s is older than the table's TTL", a);
	}
	return 0;
}

/* Append the encoded row in t->scratch as a row record. */
static int append_row(ts_table *t, uint32_t version, uint64_t *lsn)
{
	unsigned char *p;
	uint64_t seg_size = ts__log_seg_size(t->log), row_max = ts__row_max(seg_size);
	if (t->scratch.len > row_max && row_max < TS_ROW_MAX)
		return ts__fail(TS_ETOOBIG, "row of %zu bytes exceeds the largest a table with %" PRIu64
		                " MiB log segments can hold (%" PRIu64 " bytes)", t->scratch.len,
		                seg_size >> 20, row_max);
	if (t->scratch.len > TS_ROW_MAX)
		return ts__fail(TS_ETOOBIG, "row of %zu bytes exceeds the limit of %u",
		                t->scratch.len, TS_ROW_MAX);
	int rc = ts__log_alloc(t->log, TS_ROWREC_HEADER + t->scratch.len, lsn, (void **)&p);
	if (rc < 0)
		return rc;
	ts__store_u32(p, (uint32_t)t->scratch.len);
	p[4] = (unsigned char)version;
	p[5] = (unsigned char)(version >> 8);
	p[6] = p[7] = 0;
	memcpy(p + TS_ROWREC_HEADER, t->scratch.data, t->scratch.len);
	return 0;
}

static int duplicate(ts_table *t, const ts__schema *s, uint64_t dup_row)
{
	const unsigned char *key;
	size_t klen;
	char desc[512];
	ts__rowrec_key(t->log, dup_row, &key, &klen);
	ts__key_describe(s, key, klen, desc, sizeof desc);
	return ts__fail(TS_EDUPKEY, "duplicate key %s", desc);
}

/* The greatest ts of the on-disk tablets (INT64_MIN: none), found again
 * when the descriptor changes. */
static int64_t tablets_max_ts(ts_table *t)
{
	const ts__descriptor *d = t->desc;
	if (t->tablets_ts_gen != d->generation) {
		int64_t max = INT64_MIN;
		for (int i = 0; i < d->ntablets; i++)
			if (d->tablets[i].max_ts > max)
				max = d->tablets[i].max_ts;
		t->tablets_max_ts = max;
		t->tablets_ts_gen = d->generation;
	}
	return t->tablets_max_ts;
}

/* Whether a tombstone in force for the writer (its descriptor's, its log
 * chain's) newer than `older` hides key: a row of a tree whose record is
 * at `older`, or of a tablet whose hi is `older`, is then deleted, and
 * its key may be inserted again.  t->mu is held. */
static int key_deleted(const ts_table *t, const unsigned char *key, size_t klen, uint64_t older)
{
	const ts__descriptor *d = t->desc;
	for (int i = 0; i < d->ntombs; i++)
		if (older < d->tombs[i].version && ts__tomb_covers(&d->tombs[i], key, klen))
			return 1;
	for (int i = 0; i < t->fill.nlt; i++)
		if (older < t->fill.lt[i].version && ts__tomb_covers(&t->fill.lt[i], key, klen))
			return 1;
	return 0;
}

/* ts__filling's hidden callback (filling.h). */
static int tree_row_deleted(void *arg, const unsigned char *key, size_t klen, uint64_t row_lsn)
{
	return key_deleted(arg, key, klen, row_lsn);
}

/* Whether an on-disk tablet holds key: a row newer than every tablet --
 * live data -- asks none; else only tablets whose timespan covers ts are
 * asked, and each asks its Bloom filter before reading a block.  Returns
 * 1, 0 or an error. */
static int on_disk(ts_table *t, const unsigned char *key, size_t klen, int64_t ts)
{
	const ts__descriptor *d = t->desc;
	if (ts > tablets_max_ts(t))
		return 0;
	for (int i = 0; i < d->ntablets; i++) {
		const ts__tablet_meta *m = &d->tablets[i];
		ts__tablet *tab;
		if (ts < m->min_ts || ts > m->max_ts)
			continue;
		int rc = ts__table_tablet(t, m, &tab);
		if (rc == 0) {
			rc = ts__table_damaged(t, m->id, ts__tablet_find(tab, key, klen, &t->lookup));
			ts__table_tablet_put(t, tab);
		}
		if (rc == 1 && t->fill.hidden && key_deleted(t, key, klen, m->hi))
			continue; /* its row there is deleted */
		if (rc != 0)
			return rc;
	}
	return 0;
}

/* A row whose key the table has: under the policy ignore, skipped (its
 * row record given back to the log: 1); under reject, TS_EDUPKEY naming
 * the key -- logged, the new row's, when it was found on disk, else that
 * of dup_row, the filling tablets' row. */
static int duplicate_row(ts_table *t, const ts__schema *s, int policy, uint64_t lsn,
                         const unsigned char *logged, size_t klen, uint64_t dup_row)
{
	char desc[512];
	if (policy == TS_ON_DUPLICATE_IGNORE) {
		ts__log_unalloc(t->log, lsn); /* the row record was the last one */
		return 1;
	}
	if (dup_row)
		return duplicate(t, s, dup_row);
	ts__key_describe(s, logged, klen, desc, sizeof desc);
	return ts__fail(TS_EDUPKEY, "duplicate key %s", desc);
}

/* insert_row's answers besides 0 (stored) and 1 (skipped): stored,
 * replacing a row of a filling tablet; and the batch must be made again
 * with a tree frozen from its start (filling.h, TS_FILLING_REFREEZE). */
#define INSERT_REPLACED 2
#define INSERT_REFREEZE 3

/* Check, encode, log and index one row under policy.  Returns 0
 * (stored), 1 (a duplicate the policy skips: nothing of it is left),
 * INSERT_REPLACED, INSERT_REFREEZE or an error. */
static int insert_row(ts_table *t, const ts__schema *s, const ts__schema *v, int policy,
                      const ts_value *in, ts_value *vals, int64_t now)
{
	const void *key;
	size_t klen;
	uint64_t lsn, dup = 0;
	int rc = check_row(s, v, in, vals, now);
	if (rc == 0)
		rc = check_time(t, vals[s->ts_col].v.i, now);
	t->scratch.len = 0;
	if (rc == 0)
		rc = ts__row_encode(s, vals, &t->scratch);
	if (rc == 0)
		rc = append_row(t, s->version, &lsn);
	if (rc == 0)
		rc = ts__row_key(t->scratch.data, t->scratch.len, &key, &klen);
	if (rc < 0)
		return rc;
	const unsigned char *logged = (const unsigned char *)ts__log_ptr(t->log, lsn) +
	                              TS_ROWREC_HEADER + ((const unsigned char *)key - t->scratch.data);
	if (policy == TS_ON_DUPLICATE_REPLACE) { /* no tablet asked: the row shadows */
		rc = ts__filling_insert(&t->fill, logged, klen, vals[s->ts_col].v.i, now, lsn,
		                        t->scratch.len, 1, &dup);
		if (rc == TS_FILLING_REFREEZE)
			return INSERT_REFREEZE;
		return rc < 0 ? rc : dup ? INSERT_REPLACED : 0;
	}
	if ((rc = on_disk(t, logged, klen, vals[s->ts_col].v.i)) == 0)
		rc = ts__filling_insert(&t->fill, logged, klen, vals[s->ts_col].v.i, now, lsn,
		                        t->scratch.len, 0, &dup);
	else if (rc == 1)
		dup = 0; /* on disk: no filling row to name */
	if (rc == 1 || rc == TS_EDUPKEY)
		return duplicate_row(t, s, policy, lsn, logged, klen, dup);
	return rc == TS_FILLING_REFREEZE ? INSERT_REFREEZE : rc;
}

/* The schema of version (0: the current one) for rows given to t; t->mu
 * is held. */
static int row_schema(ts_table *t, uint32_t version, const ts__schema **v)
{
	TS_ASSERT_HELD(&t->mu);
	const ts__descriptor *d = t->desc;
	uint32_t current = ts__desc_schema(d)->version;
	if (version == 0)
		version = current;
	if (version > current || version > (uint32_t)d->nschemas)
		return ts__fail(TS_ESCHEMA, "table \"%s\": no schema version %u (the current one is %u)",
		                t->name, version, current);
	*v = d->schemas[version - 1];
	assert((*v)->version == version);
	return 0;
}

/* Insert every row of the batch under policy and commit it; *skipped
 * counts the duplicates the policy skipped, *replaced the rows that
 * replaced a filling tablet's.  A batch made only of skipped rows changes
 * nothing, so it writes no commit. */
static int insert_batch(ts_table *t, const ts__schema *s, const ts__schema *v, int policy,
                        const ts_value *rows, size_t nrows, int64_t now, size_t *skipped,
                        size_t *replaced)
{
	TS_ASSERT_HELD(&t->mu);
	ts_value vals[TS_COLUMNS_MAX];
	/* with tombstones in force, a key found may be a deleted row's */
	int deletes = t->desc->ntombs || t->fill.nlt;
	t->fill.hidden = deletes ? tree_row_deleted : NULL;
	t->fill.hidden_arg = t;
	uint64_t *refrozen = NULL; /* trees frozen before the batch is made again */
	size_t nrefrozen = 0;
	int rc = ts__filling_begin(&t->fill);
	for (size_t i = 0; rc == 0 && i < nrows; i++) {
		if ((rc = insert_row(t, s, v, policy, rows + i * (size_t)v->ncols, vals, now)) < 0) {
			rc = ts__context(rc, "row %zu", i);
		} else if (rc == 1) {
			rc = 0, (*skipped)++;
		} else if (rc == INSERT_REPLACED) {
			rc = 0, (*replaced)++;
			if (t->acc)
				ts__rollacc_stage(t, vals);
		} else if (rc == INSERT_REFREEZE) { /* again, those trees frozen first */
			if (t->acc)
				ts__rollacc_unstage(t);
			ts__filling_abort(&t->fill);
			uint64_t *g = realloc(refrozen, (nrefrozen + 1) * sizeof *g);
			if (!g) {
				rc = ts__fail(TS_ENOMEM, "out of memory");
				break;
			}
			refrozen = g;
			refrozen[nrefrozen++] = t->fill.refreeze;
			for (size_t k = 0; k < nrefrozen; k++)
				ts__filling_freeze(&t->fill, refrozen[k]);
			*skipped = *replaced = 0;
			i = (size_t)-1;
			rc = ts__filling_begin(&t->fill);
		} else if (t->acc) {
			ts__rollacc_stage(t, vals);
		}
	}
	free(refrozen);
	if (rc == 0 && *skipped < nrows) {
		rc = ts__filling_commit(&t->fill, nrows - *skipped, now); /* aborts if it fails */
		/* folded before t->mu is let go: a snapshot that holds the
		 * commit, and then takes t->mu, finds it folded (rollacc.c) */
		if (t->acc && rc == 0) {
			if (ts__rollacc_apply(t, ts__log_head(t->log))) {
				/* a set filled: its rollup's run is due (rollacc.h) */
				__atomic_fetch_or(&t->db->maint.rollups_wanted, TS_ROLLUPS_FULL,
				                  __ATOMIC_RELAXED);
				ts__maint_wake(t->db);
			}
		} else if (t->acc)
			ts__rollacc_unstage(t);
		return rc;
	}
	if (t->acc)
		ts__rollacc_unstage(t);
	ts__filling_abort(&t->fill);
	return rc;
}

static int insert_locked(ts_table *t, uint32_t version, int policy, const ts_value *rows,
                         size_t nrows, size_t *ignored, uint64_t *table_version)
{
	const ts__schema *s = ts__desc_schema(t->desc), *v = NULL;
	int64_t now = ts_now(t->db);
	size_t skipped = 0, replaced = 0;
	int rc = ts__log_cap_check(t); /* a log that flushes cannot release */
	if (rc < 0) {
		t->rows_rejected += nrows;
		return rc;
	}
	if ((rc = row_schema(t, version, &v)) < 0)
		return rc;
	if ((rc = insert_batch(t, s, v, policy, rows, nrows, now, &skipped, &replaced)) < 0) {
		t->rows_rejected += nrows;
		return rc;
	}
	t->rows_ignored_duplicates += skipped;
	t->rows_replaced += replaced;
	*ignored = skipped;
	*table_version = ts__log_head(t->log); /* this batch's commit, if it made one */
	int64_t mono = ts__mono_ns(), none = 0;
	ts__maint_foreground(&t->db->maint, mono); /* merges yield to inserts */
	if (ts__flush_wanted(t) &&
	    __atomic_compare_exchange_n(&t->flush_wanted_mono, &none, mono, 0, __ATOMIC_RELAXED,
	                                __ATOMIC_RELAXED))
		ts__maint_wake(t->db);
	/* Committed and visible; in commit mode it must also be durable, and
	 * if the sync fails the caller learns that a crash may lose it.  (A
	 * batch of duplicates alone syncs too: it may be the retry of one
	 * whose sync failed.) */
	if (t->db->opts.sync == TS_SYNC_COMMIT && (rc = ts__log_sync(t->log)) < 0)
		return ts__context(rc, "the batch is committed but not yet durable");
	return 0;
}

/* Mark t's descriptor TS_DESC_REPLACED (one descriptor write, the first
 * time); t->mu is not held (desc_mu comes before it). */
static int mark_replaced(ts_table *t)
{
	ts__descriptor *d;
	int rc = ts__table_desc_begin(t);
	if (rc < 0)
		return rc;
	if (t->desc->flags & TS_DESC_REPLACED) { /* another batch marked it meanwhile */
		ts__table_desc_end(t);
		return 0;
	}
	if ((rc = ts__descriptor_clone(t->desc, &d)) == 0) {
		d->flags |= TS_DESC_REPLACED;
		rc = ts__table_install_descriptor(t, d);
	}
	ts__table_desc_end(t);
	return rc < 0 ? ts__context(rc, "table \"%s\": marking it as holding replaced rows",
	                            t->name) : 0;
}

int ts__insert(ts_table *t, uint32_t version, int on_duplicate, const ts_value *rows,
               size_t nrows, size_t *ignored, uint64_t *table_version)
{
	*ignored = 0;
	*table_version = 0;
	if (ts__db_readonly(t->db))
		return ts__fail(TS_EREADONLY, "database %s is open read-only", t->db->path);
	int rc = ts__rollup_refuse(t);
	if (rc < 0 || (rc = ts__table_lock(t)) < 0)
		return rc;
	/* a writer faster than the flushes waits for them (flush.c) */
	if (nrows && (rc = ts__log_stall(t, nrows)) < 0)
		return rc;
	/* A replacing batch needs the mark before its commit (the flag is
	 * never cleared: once marked, this is not taken again); the policy
	 * is read again under the mutex taken anew. */
	int policy;
	for (;;) {
		policy = on_duplicate == TS_ON_DUPLICATE_TABLE ? (int)t->desc->on_duplicate
		                                              : on_duplicate;
		if (!nrows || policy != TS_ON_DUPLICATE_REPLACE || (t->desc->flags & TS_DESC_REPLACED))
			break;
		ts__table_unlock(t);
		if ((rc = mark_replaced(t)) < 0 || (rc = ts__table_lock(t)) < 0)
			return rc;
	}
	if (nrows)
		rc = insert_locked(t, version, policy, rows, nrows, ignored, table_version);
	else if (t->log)
		*table_version = ts__log_head(t->log);
	ts__table_unlock(t);
	return rc;
}
