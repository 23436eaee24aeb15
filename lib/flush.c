/*
 * flush.c -- writing filling tablets to on-disk tablets (DESIGN.md
 * section 3, "Flush and merge"), and ts_flush.
 *
 * A flush moves one filling tree to disk in four steps, each leaving a
 * state that recovery turns into exactly the rows inserted so far:
 *
 *   1. freeze  (table mutex)  the tree is marked frozen in a commit: new
 *              rows of its period go to a new tree from now on, so the
 *              frozen one is immutable;
 *   2. write   (no mutex)     its rows, in key order, become a tablet file:
 *              temporary name, fsync, rename, fsync of the directory;
 *              when the table was queried lately, its blocks go into
 *              the room the block cache has to spare, as its least
 *              recent entries (readers likely want the newest rows
 *              next, and the tree they read them from is about to go;
 *              blocks readers use are never pushed out for them);
 *   3. publish (desc_mu)      a DESCRIPTOR naming the tablet, with the
 *              tree's born LSN as its source, is written and synced; then
 *              (table mutex, briefly) it replaces the old one and a commit
 *              drops the tree.  Between the two, readers and recovery see
 *              both and skip the tree (its born is a source);
 *   4. release (table mutex)  log segments wholly before the oldest
 *              remaining tree are released; the log's preparer deletes
 *              their files (and syncs the directory) and unmaps them
 *              after, off the flushing thread and outside every lock
 *              (log.c, "Dropping released segments"); a purge waits
 *              for that.
 *
 * A crash before 3 leaves a frozen tree and at most an orphaned
 * temporary file; the next flush writes the tree again.  flush_mu keeps
 * flushes one at a time, so the tablet ids they reserve do not collide.
 *
 * The descriptor of step 3 also takes the log's tombstones (deletes),
 * dropping the spent ones into change records (docs/corrections.md
 * sections 3 and 4); a flush with no tree to write but tombstones in the
 * log does steps 3 and 4 for them alone (publish_tombs).
 *
 * ts_flush flushes on request (the trees asked for, and the older trees
 * of periods that meet theirs: freeze says why); ts__flush_due, run by the database's
 * maintenance scheduler (maint.c), flushes the trees due by size, age or the
 * end of their period, or every tree once the log holds an eighth of
 * log_cap (TS_LOG_PACE_DEN), where inserts begin to slow.
 * A background flush that fails is tried again with backoff (backoff.h),
 * not on every pass: a flush that cannot succeed must not spin.  An
 * insert that finds the log past three quarters of log_cap while the
 * flushes work waits for them to release it (ts__log_stall): a writer
 * faster than the flushes goes at their pace.  Should the log still reach
 * log_cap (flushes failing, or a wait of TS_LOG_STALL_MAX_NS not enough),
 * ts__log_cap_check makes inserts fail with the flushes' cause instead of
 * filling the disk.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api.h"
#include "avl.h"
#include "backoff.h"
#include "descriptor_format.h"
#include "error.h"
#include "flush.h"
#include "fsutil.h"
#include "handle.h"
#include "held.h"
#include "merge.h"
#include "period.h"
#include "row.h"
#include "tabledesc.h"
#include "tablet.h"
#include "tablets.h"

/* Which trees a flush takes. */
typedef int (*choose_fn)(const ts_table *t, const ts__root *r, const void *arg);

/* What one frozen tree becomes. */
struct job {
	ts__root root;
	uint64_t id;
	uint64_t hi;   /* the newest version of its rows (tree_hi) */
};

/*
 * The newest version of tree r's rows, its tablet's hi: the commit that
 * last added rows to it.  Every row of r lies before it, and a tree of
 * r's period begun after r froze begins after it -- which the freezing
 * commit would not give across a roll-over: yesterday's 4-hour tree
 * frozen after midnight beside the day tree that yesterday's late rows
 * began meanwhile, whose rows are newer (docs/corrections.md section 1).
 * The writer knows it (r->last) for every tree it added rows to since it
 * opened the table; for a tree recovered from the log it is the commit
 * of the batch holding the tree's root node, since every insert writes
 * the root anew (avl.c) -- found by walking the commits back from the
 * head (they are all after the tree's first batch, so still in the log).
 * t->mu is held.
 */
static int tree_hi(ts_table *t, const ts__root *r, uint64_t *hi)
{
	TS_ASSERT_HELD(&t->mu);
	ts__commit c;
	if (r->last) {
		*hi = r->last;
		return 0;
	}
	for (uint64_t lsn = ts__log_head(t->log); lsn > r->root; lsn = c.prev_lsn) {
		int rc = ts__log_read_commit(t->log, lsn, &c);
		if (rc < 0)
			return rc;
		if (c.batch_lsn < r->root) {
			*hi = lsn;
			return 0;
		}
	}
	return ts__fail(TS_ECORRUPT, "no commit holds the root node %llu of the tree born at %llu",
	                (unsigned long long)r->root, (unsigned long long)r->born);
}

static int by_hi(const void *a, const void *b)
{
	const struct job *x = a, *y = b;
	return x->hi < y->hi ? -1 : x->hi > y->hi;
}

/* Whether the periods of trees a and b intersect (one holds the other:
 * a period that grew since one of them began), so that they may hold
 * rows of the same keys. */
static int periods_meet(const ts__root *a, const ts__root *b)
{
	return a->period_start < ts__period_end(b->period_start, b->period_len) &&
	       b->period_start < ts__period_end(a->period_start, a->period_len);
}

/* Freeze the trees choose picks, with every tree begun before one of
 * them took its last rows whose period meets its own: begun before it
 * (yesterday's 4-hour tree beside the day tree that yesterday's late rows
 * began after midnight: flushing the newer alone would leave on disk rows
 * newer than the older tree's, with the older tree still in the log --
 * invariant V, docs/corrections.md), or begun after it and before its
 * last rows (a week's tree beside a day tree that still took rows: once
 * the day is in the week's period, the week's tree could grow over the
 * day's tablet, which filling.c cannot see any more).
 * List every frozen tree (earlier ones included) in jobs, oldest version
 * first: a flush publishes its tablets in that order and stops at the
 * first that fails, so the tablets on disk are always older than every
 * tree still in the log that may hold their keys.  t->mu is held. */
static int freeze(ts_table *t, choose_fn choose, const void *arg, struct job **jobs, int *njobs)
{
	TS_ASSERT_HELD(&t->mu);
	ts__filling *f = &t->fill;
	int changed = 0, n = 0, rc = 0;
	for (int i = 0; i < f->n; i++)
		if (f->work[i].rows && !(f->work[i].flags & TS_ROOT_FROZEN) &&
		    choose(t, &f->work[i], arg)) {
			f->work[i].flags |= TS_ROOT_FROZEN;
			changed = 1;
		}
	for (int more = changed; more;) {
		more = 0;
		for (int i = 0; i < f->n; i++)
			for (int j = 0; (f->work[i].flags & TS_ROOT_FROZEN) && j < f->n; j++)
				if (f->work[j].rows && !(f->work[j].flags & TS_ROOT_FROZEN) &&
				    f->work[j].born < ts__filling_hi_bound(f, &f->work[i]) &&
				    periods_meet(&f->work[i], &f->work[j])) {
					f->work[j].flags |= TS_ROOT_FROZEN;
					more = 1;
				}
	}
	if (changed && (rc = ts__filling_begin(f)) == 0)
		rc = ts__filling_commit(f, 0, ts_now(t->db));
	if (rc < 0) {
		ts__filling_abort(f);
		return rc;
	}
	*jobs = calloc((size_t)f->n + 1, sizeof **jobs);
	if (!*jobs)
		return ts__fail(TS_ENOMEM, "out of memory");
	for (int i = 0; i < f->n; i++)
		if (f->work[i].flags & TS_ROOT_FROZEN) {
			(*jobs)[n].root = f->work[i];
			if ((rc = tree_hi(t, &f->work[i], &(*jobs)[n].hi)) < 0)
				return rc;
			n++;
		}
	qsort(*jobs, (size_t)n, sizeof **jobs, by_hi);
	for (int i = 0; i < n; i++)
		(*jobs)[i].id = ts__table_reserve_id(t);
	*njobs = n;
	return 0;
}

/* Add the row record at lsn to w, translated to schema s if it was
 * written under an older version; hi, the tree's, is every block's
 * (docs/tablet-format.md section 4.1). */
static int add_row(ts_table *t, const ts__schema *const *versions, int nversions,
                   const ts__schema *s, uint64_t lsn, uint64_t hi, ts__tablet_writer *w,
                   ts_buf *scratch, ts_buf *enc)
{
	ts_value vals[TS_COLUMNS_MAX];
	size_t len;
	uint32_t version;
	const unsigned char *row = ts__rowrec_row(t->log, lsn, &len, &version);
	if (version == s->version)
		return ts__tablet_writer_add_hi(w, row, len, hi);
	if (version < 1 || (int)version > nversions)
		return ts__fail(TS_ECORRUPT, "row at %llu has unknown schema version %u",
		                (unsigned long long)lsn, version);
	int rc = ts__row_decode(versions[version - 1], s, row, len, vals, scratch);
	enc->len = 0;
	if (rc == 0)
		rc = ts__row_encode(s, vals, enc);
	return rc < 0 ? rc : ts__tablet_writer_add_hi(w, enc->data, enc->len, hi);
}

/* Whether a tombstone of tombs[0..n) hides the tree row at lsn. */
static int row_deleted(ts_table *t, const ts__tomb *tombs, int n, uint64_t lsn)
{
	const unsigned char *key;
	size_t klen;
	ts__rowrec_key(t->log, lsn, &key, &klen);
	for (int i = 0; i < n; i++)
		if (lsn < tombs[i].version && ts__tomb_covers(&tombs[i], key, klen))
			return 1;
	return 0;
}

/*
 * The flush's walk of a tree, a chunk of rows at a time.  The in-order
 * walk chases pointers through the log, a new cache line at every step
 * (avl.c, "iteration"), and inside a flush it cost more than alone: the
 * encoding, copying and compression between two steps evicted what the
 * walk's own prefetches had brought in (BENCHMARKS.md, "Flush on one
 * core and on two": the walk was 29 % of a flush, about 0.35 s against
 * 0.21 s for the same walk alone).  So the flush takes WALK_CHUNK rows
 * from the walk with nothing in between, then adds them, asking for the
 * record ROW_AHEAD rows ahead of the one it adds -- its address known by
 * then -- so that its two first cache lines are there when it is copied.
 */
#define WALK_CHUNK 256
#define ROW_AHEAD 8

struct walk {
	ts__avl_iter it;
	uint64_t lsn[WALK_CHUNK];
	int n, at;
};

static void walk_init(struct walk *wk, ts__log *log, uint64_t root)
{
	ts__avl_iter_init(&wk->it, log, root, 0);
	wk->n = wk->at = 0;
}

/* The next row's LSN, or 0 at the end. */
static uint64_t walk_next(struct walk *wk, ts__log *log)
{
	if (wk->at == wk->n) {
		uint64_t lsn;
		wk->n = wk->at = 0;
		while (wk->n < WALK_CHUNK && (lsn = ts__avl_iter_next(&wk->it)) != 0)
			wk->lsn[wk->n++] = lsn;
		for (int i = 0; i < wk->n && i < ROW_AHEAD; i++)
			__builtin_prefetch(ts__log_ptr(log, wk->lsn[i]));
		if (wk->n == 0)
			return 0;
	}
	if (wk->at + ROW_AHEAD < wk->n) {
		const char *p = ts__log_ptr(log, wk->lsn[wk->at + ROW_AHEAD]);
		__builtin_prefetch(p);
		__builtin_prefetch(p + 64);
	}
	return wk->lsn[wk->at++];
}

/* A table being read: open tablet id, just written, and hand it to the
 * table's open tablets (ts__table_tablet_adopt), so that the first
 * reader after the publish does not pay for the open.  Best effort: on
 * failure the first reader opens it and reports what it finds. */
static void adopt_written(ts_table *t, uint64_t id)
{
	ts__tablet *tab;
	if (ts__table_tablet_open_file(t, id, &tab) == 0)
		ts__table_tablet_adopt(t, id, tab);
	ts__clear_error();
}

/* Write the tree of job j as a tablet of schema s, leaving out the rows
 * tombs[0..ntombs) hide; fills *m (m->rows 0 and no file when every row
 * was deleted). */
static int write_tablet(ts_table *t, const struct job *j, const ts__schema *const *versions,
                        int nversions, const ts__tomb *tombs, int ntombs, ts__tablet_meta *m)
{
	const ts__schema *s = versions[nversions - 1];
	char dir[TS_PATH_MAX];
	ts__tablet_writer *w = NULL;
	ts_buf scratch, enc;
	struct walk wk; /* 2 KiB */
	uint64_t lsn;
	int rc = ts__path(dir, "%s/tablets", t->dir);
	memset(m, 0, sizeof *m);
	m->id = j->id;
	m->schema_version = s->version;
	m->period_start = j->root.period_start;
	m->period_end = ts__period_end(j->root.period_start, j->root.period_len);
	m->source = j->root.born;
	m->lo = j->root.born;
	m->hi = j->hi;
	if (rc == 0)
		rc = ts__tablet_writer_open(dir, j->id, s, m->period_start, m->period_end, &w);
	if (rc < 0)
		return rc;
	ts__tablet_writer_threads(w, (int)t->db->opts.flush_threads);
	if (t->rollup)
		ts__tablet_writer_hourly(w);
	/* a table being read: its newest rows, which its readers likely want
	 * next, into the cache's spare room (readers' blocks are never
	 * pushed out for them); a table only written keeps its memory */
	int read = ts__table_read_within(t, TS_FLUSH_CACHE_READ_WINDOW);
	if (read)
		ts__tablet_writer_warm(w, &t->db->bcache, ts__table_tablet_serial(t, j->id), 1);
	ts__buf_init(&scratch);
	ts__buf_init(&enc);
	uint64_t added = 0;
	walk_init(&wk, t->log, j->root.root);
	while (rc == 0 && (lsn = walk_next(&wk, t->log)) != 0)
		if (!(ntombs && row_deleted(t, tombs, ntombs, lsn)) &&
		    (rc = add_row(t, versions, nversions, s, lsn, j->hi, w, &scratch, &enc)) == 0)
			added++;
	ts__buf_free(&scratch);
	ts__buf_free(&enc);
	if (rc < 0 || added == 0)
		ts__tablet_writer_abort(w);
	else
		rc = ts__tablet_writer_finish(w, &m->rows, &m->bytes, &m->min_ts, &m->max_ts);
	if (rc < 0 || added == 0) /* no tablet to open under the serial */
		ts__table_tablet_unreserve(t, j->id);
	else if (read)
		adopt_written(t, j->id);
	return rc;
}

/* Where recovery must start once the tree of job j (NULL: none) is on
 * disk: the oldest batch of any other tree.  t->mu is held. */
static uint64_t oldest_kept(const ts_table *t, const struct job *j)
{
	TS_ASSERT_HELD(&t->mu);
	uint64_t oldest = ts__log_next_batch(t->log);
	for (int i = 0; i < t->fill.n; i++)
		if ((!j || t->fill.work[i].born != j->root.born) && t->fill.work[i].since < oldest)
			oldest = t->fill.work[i].since;
	return oldest;
}

/* Copy the tombstones of the log's chain into d, the descriptor that
 * advances the flushed position past their records (tombstone.h); *cut
 * receives the chain's newest record, which the commit after d names as
 * its cut (0: none moved).  t->mu is held.  Returns 0 or TS_ENOMEM. */
static int move_tombs(ts_table *t, ts__descriptor *d, uint64_t *cut)
{
	TS_ASSERT_HELD(&t->mu);
	*cut = 0;
	for (int i = 0; i < t->fill.nlt; i++) {
		int rc = ts__descriptor_add_tomb(d, &t->fill.lt[i]);
		if (rc < 0)
			return rc;
		*cut = t->fill.lt[i].lsn;
	}
	return 0;
}

/* Drop from d the tombstones no source they apply to may hold rows of
 * any more (docs/corrections.md section 3): no tablet of d whose hi is
 * older than the tombstone meets its box in time, and no tree of the log
 * but job j's (NULL: none) holds a row older than it in that time.  A
 * tree or tablet they do not apply to never needs them.  Each leaves its
 * change record (section 4).  t->mu is held.  Returns 0 or TS_ENOMEM. */
static int prune_tombs(ts_table *t, ts__descriptor *d, const struct job *j)
{
	TS_ASSERT_HELD(&t->mu);
	for (int i = 0; i < d->ntombs;) {
		const ts__tomb *x = &d->tombs[i];
		int needed = 0;
		for (int k = 0; k < d->ntablets && !needed; k++)
			needed = d->tablets[k].hi < x->version &&
			         ts__tomb_meets(x, NULL, 0, NULL, 0, d->tablets[k].min_ts,
			                        d->tablets[k].max_ts);
		for (int k = 0; k < t->fill.n && !needed; k++) {
			const ts__root *r = &t->fill.work[k];
			needed = (!j || r->born != j->root.born) && r->rows && r->born < x->version &&
			         ts__tomb_meets(x, NULL, 0, NULL, 0, r->min_ts, r->max_ts);
		}
		if (needed) {
			i++;
			continue;
		}
		int rc = ts__descriptor_retire_tomb(d, i, 0);
		if (rc < 0)
			return rc;
	}
	return 0;
}

/* Make d the descriptor that takes the log's tombstones once job j's
 * tree (NULL: none) is on disk: its flushed position past what the log
 * then keeps, the chain's tombstones moved in (*cut: the chain's newest
 * record, 0: none) and the spent ones pruned into change records.  t->mu
 * is held.  Returns 0 or TS_ENOMEM. */
static int take_tombs(ts_table *t, ts__descriptor *d, const struct job *j, uint64_t *cut)
{
	TS_ASSERT_HELD(&t->mu);
	d->flushed_lsn = oldest_kept(t, j);
	int rc = move_tombs(t, d, cut);
	return rc < 0 ? rc : prune_tombs(t, d, j);
}

/* Install d (written), cut the log's chain of tombstones at cut, and
 * commit: the log below the flushed position is released and the
 * tombstones are read from the descriptor.  t->mu is held. */
static int install_and_commit(ts_table *t, ts__descriptor *d, uint64_t cut, uint64_t drop_born)
{
	TS_ASSERT_HELD(&t->mu);
	ts__table_swap_descriptor(t, d);
	ts__filling_cut_tombs(&t->fill, cut);
	if (drop_born)
		ts__filling_drop(&t->fill, drop_born);
	int rc = ts__filling_begin(&t->fill);
	return rc < 0 ? rc : ts__filling_commit(&t->fill, 0, ts_now(t->db));
}

/* Every row of job j's tree was deleted: no tablet; a commit drops the
 * tree (the descriptor is unchanged, its flushed position too, so a
 * crash before the commit leaves the tree in the log, and after it
 * recovery simply finds it gone). */
static int publish_empty(ts_table *t, const struct job *j)
{
	pthread_mutex_lock(&t->mu);
	ts__filling_drop(&t->fill, j->root.born);
	t->flushes++;
	int rc = ts__filling_begin(&t->fill);
	if (rc == 0)
		rc = ts__filling_commit(&t->fill, 0, ts_now(t->db));
	pthread_mutex_unlock(&t->mu);
	return rc;
}

/* Name the tablet in a new descriptor, then drop its tree.  The file is
 * written and synced under desc_mu alone, so inserts go on meanwhile;
 * trees they begin start after the flushed LSN computed before. */
static int publish(ts_table *t, const struct job *j, const ts__tablet_meta *m)
{
	ts__descriptor *d = NULL;
	int rc = ts__table_desc_begin(t);
	if (rc < 0)
		return rc;
	if ((rc = ts__descriptor_clone(t->desc, &d)) < 0)
		goto out;
	d->tablets[d->ntablets++] = *m;
	if (d->next_tablet_id <= m->id)
		d->next_tablet_id = m->id + 1;
	pthread_mutex_lock(&t->mu);
	uint64_t cut = 0;
	rc = take_tombs(t, d, j, &cut);
	pthread_mutex_unlock(&t->mu);
	if (rc < 0) {
		ts__descriptor_free(d, 0);
		goto out;
	}
	if ((rc = ts__table_write_descriptor(t, d)) < 0)
		goto out;
	pthread_mutex_lock(&t->mu);
	ts__merge_note_flush(t, m->id, ts_now(t->db));
	t->flushes++;
	t->flushed_rows += m->rows;
	t->flushed_bytes += m->bytes;
	/* The tree is on disk whether or not this commit lands: readers and
	 * recovery skip a tree whose born is a tablet's source. */
	rc = install_and_commit(t, d, cut, j->root.born);
	pthread_mutex_unlock(&t->mu);
out:
	ts__table_desc_end(t);
	return rc;
}

/*
 * A flush with no tree to write while the log holds tombstones (deletes
 * alone since the last flush): move them into a new descriptor as
 * publish does -- pruning the spent ones into change records, advancing
 * the flushed position past their records -- then a commit that cuts
 * the chain there, so that the log they held is released and they are
 * read from the descriptor, not the log, by every later snapshot.  A
 * crash before the commit leaves the old commit naming the chain: its
 * walk stops at the new flushed position (tombstone.h), below which the
 * records are the descriptor's.  desc_mu is taken here; t->mu is not
 * held.
 */
static int publish_tombs(ts_table *t)
{
	ts__descriptor *d = NULL;
	uint64_t cut = 0;
	int rc = ts__table_desc_begin(t);
	if (rc < 0)
		return rc;
	if ((rc = ts__descriptor_clone(t->desc, &d)) < 0)
		goto out;
	pthread_mutex_lock(&t->mu);
	if (!t->fill.nlt) { /* a purge or another flush moved them meanwhile */
		pthread_mutex_unlock(&t->mu);
		ts__descriptor_free(d, 0);
		goto out;
	}
	rc = take_tombs(t, d, NULL, &cut);
	pthread_mutex_unlock(&t->mu);
	if (rc < 0) {
		ts__descriptor_free(d, 0);
		goto out;
	}
	if ((rc = ts__table_write_descriptor(t, d)) < 0)
		goto out;
	pthread_mutex_lock(&t->mu);
	rc = install_and_commit(t, d, cut, 0);
	pthread_mutex_unlock(&t->mu);
out:
	ts__table_desc_end(t);
	return rc;
}

/* Copy the schema versions (immutable, owned by the table). t->mu held. */
static int copy_versions(ts_table *t, const ts__schema ***out, int *n)
{
	TS_ASSERT_HELD(&t->mu);
	*n = t->desc->nschemas;
	*out = malloc((size_t)*n * sizeof **out);
	if (!*out)
		return ts__fail(TS_ENOMEM, "out of memory");
	memcpy(*out, t->desc->schemas, (size_t)*n * sizeof **out);
	return 0;
}

static int flush_locked(ts_table *t, choose_fn choose, const void *arg)
{
	struct job *jobs = NULL;
	const ts__schema **versions = NULL;
	ts__tomb *tombs = NULL;
	int njobs = 0, nversions = 0, ntombs = 0;
	int rc = ts__table_lock(t);
	if (rc < 0)
		return rc;
	rc = freeze(t, choose, arg, &jobs, &njobs);
	if (rc == 0)
		rc = copy_versions(t, &versions, &nversions);
	if (rc == 0 && njobs)
		rc = ts__table_tombs(t, &tombs, &ntombs); /* every one that may hide a
		                                           * frozen row is committed */
	int tombs_only = rc == 0 && !njobs && t->fill.nlt;
	ts__table_unlock(t);
	if (tombs_only) {
		free(versions);
		free(jobs);
		if ((rc = publish_tombs(t)) == 0 && (rc = ts__table_lock(t)) == 0) {
			rc = ts__log_release(t->log, t->desc->flushed_lsn);
			ts__table_unlock(t);
		}
		return rc;
	}
	for (int i = 0; rc == 0 && i < njobs; i++) {
		ts__tablet_meta m;
		if ((rc = write_tablet(t, &jobs[i], versions, nversions, tombs, ntombs, &m)) < 0)
			break;
		rc = m.rows ? publish(t, &jobs[i], &m) : publish_empty(t, &jobs[i]);
		if (rc < 0 && m.rows) /* its serial and open tablet, if any, go (a reader reopens it) */
			ts__table_tablet_retire(t, m.id);
	}
	ts__tombs_free(tombs, ntombs);
	if (rc == 0 && njobs && (rc = ts__table_lock(t)) == 0) {
		rc = ts__log_release(t->log, t->desc->flushed_lsn);
		ts__table_unlock(t);
	}
	free(jobs);
	free(versions);
	return rc;
}

int ts__flush_settle(ts_table *t, const ts__tomb *drop, int ndrop, const ts__tomb *box,
                     int *clean)
{
	ts__descriptor *d = NULL;
	uint64_t cut = 0, fresh = 0;
	*clean = 0;
	pthread_mutex_lock(&t->flush_mu);
	int rc = ts__table_desc_begin(t);
	if (rc < 0) {
		pthread_mutex_unlock(&t->flush_mu);
		return rc;
	}
	if ((rc = ts__descriptor_clone(t->desc, &d)) < 0)
		goto out;
	pthread_mutex_lock(&t->mu);
	/* a commit whose records begin the next segment: the flushed position
	 * may then pass every byte of the segments before */
	if ((rc = ts__filling_begin(&t->fill)) == 0) {
		if ((rc = ts__log_next_segment(t->log)) == 0)
			rc = ts__filling_commit(&t->fill, 0, ts_now(t->db)); /* aborts on failure */
		else
			ts__filling_abort(&t->fill);
	}
	if (rc == 0) {
		uint64_t shift_size = ts__log_seg_size(t->log);
		fresh = ts__log_head(t->log) & ~(shift_size - 1);
		d->flushed_lsn = oldest_kept(t, NULL);
		rc = move_tombs(t, d, &cut);
	}
	pthread_mutex_unlock(&t->mu);
	/* the purged tombstones leave change records without their key
	 * bounds, and the records whose keys meet the purge's lose theirs:
	 * key bytes of the erased rows (docs/corrections.md section 4) */
	for (int i = 0; rc == 0 && i < d->ntombs;)
		if (ts__tombs_have(drop, ndrop, d->tombs[i].version))
			rc = ts__descriptor_retire_tomb(d, i, 1);
		else
			i++;
	if (rc == 0)
		ts__descriptor_erase_chrec_keys(d, box);
	if (rc < 0) {
		ts__descriptor_free(d, 0);
		goto out;
	}
	uint64_t flushed = d->flushed_lsn;
	if ((rc = ts__table_write_descriptor(t, d)) < 0)
		goto out;
	pthread_mutex_lock(&t->mu);
	ts__table_swap_descriptor(t, d);
	ts__filling_cut_tombs(&t->fill, cut);
	if ((rc = ts__filling_begin(&t->fill)) == 0)
		rc = ts__filling_commit(&t->fill, 0, ts_now(t->db));
	if (rc == 0)
		rc = ts__log_release(t->log, flushed);
	int spent = rc == 0 && t->desc->ntombs == 0 && t->fill.tomb.root == 0 &&
	            (t->desc->flags & TS_DESC_TOMBSTONES_LOGGED);
	pthread_mutex_unlock(&t->mu);
	if (rc == 0) /* the purge's promise: the older segment files gone, now */
		rc = ts__log_drop_released(t->log);
	/* No tombstone left, and no commit names one since the one above:
	 * the log holds no tombstone any more (deletes take desc_mu,
	 * delete.c, so none comes in meanwhile); TS_DESC_DELETED stays, and
	 * with it format 5.  Never before that commit: a build that knows
	 * no tombstones would take the root of the chain for a tree. */
	if (spent && (rc = ts__descriptor_clone(t->desc, &d)) == 0) {
		d->flags &= ~TS_DESC_TOMBSTONES_LOGGED;
		rc = ts__table_install_descriptor(t, d);
	}
	*clean = rc == 0 && flushed >= fresh;
out:
	ts__table_desc_end(t);
	pthread_mutex_unlock(&t->flush_mu);
	return rc;
}

static int older_than(const ts_table *t, const ts__root *r, const void *arg)
{
	(void)t;
	return r->min_ts < *(const int64_t *)arg;
}

int ts__flush(ts_table *t, int64_t before)
{
	if (ts__db_readonly(t->db))
		return ts__fail(TS_EREADONLY, "database %s is open read-only", t->db->path);
	pthread_mutex_lock(&t->flush_mu);
	int rc = flush_locked(t, older_than, &before);
	pthread_mutex_unlock(&t->flush_mu);
	if (rc == 0 && before == INT64_MAX) /* every tree is on disk: no backoff left */
		ts__table_retry_done(t, &t->flush_retry, "flush", 0);
	return rc < 0 ? ts__context(rc, "flush of table \"%s\"", t->name) : 0;
}

/* Bytes of t's log from its flushed position to its tail; t->mu held. */
static int64_t log_used(const ts_table *t)
{
	TS_ASSERT_HELD(&t->mu);
	return t->log ? (int64_t)(ts__log_tail(t->log) - t->desc->flushed_lsn) : 0;
}

/* log_cap, or less when the log's segment slots (TS_LOG_RING of them)
 * hold less: small segments fill the ring first. */
static int64_t log_cap(const ts_table *t)
{
	int64_t ring = (int64_t)(TS_LOG_RING - 2) * (int64_t)ts__log_seg_size(t->log);
	return t->db->opts.log_cap < ring ? t->db->opts.log_cap : ring;
}

/* Whether the log holds log_cap / TS_LOG_PACE_DEN, where inserts begin
 * to slow (ts__log_stall): then every tree is flushed, so that the log is
 * released whatever holds it (a tree of late rows that waits for its
 * age, at a high rate of inserts; yesterday's tree, short of flush_size,
 * when a load's rows pass midnight).  At half of log_cap, as it was,
 * such a tree held the log at the slope's steepest for as long as the
 * slowed writer took to fill half the cap; t->mu held. */
static int log_pressed(const ts_table *t)
{
	return t->log && log_used(t) >= log_cap(t) / TS_LOG_PACE_DEN;
}

/* Whether no flush can come from the maintenance thread while the
 * caller waits: it is not running, it is held (ts__maint_hold), or it is
 * the caller (a rollup's rows inserted by its pass). */
static int no_flusher(ts_db *db)
{
	pthread_mutex_lock(&db->maint.mu);
	int none = !db->maint.running || db->maint.held ||
	           pthread_equal(db->maint.thread, pthread_self());
	pthread_mutex_unlock(&db->maint.mu);
	return none;
}

/* The pause nrows rows owe on the slope before the wall: nothing below
 * log_cap / TS_LOG_PACE_DEN of unflushed log, then in proportion to the
 * log past that, up to TS_LOG_PACE_ROW_NS a row at the wall (three
 * quarters of log_cap); t->mu held. */
static int64_t pace_ns(const ts_table *t, size_t nrows)
{
	int64_t used = log_used(t), cap = log_cap(t);
	int64_t from = cap / TS_LOG_PACE_DEN, wall = cap / TS_LOG_STALL_DEN * TS_LOG_STALL_NUM;
	if (used <= from || wall <= from)
		return 0;
	if (used > wall)
		used = wall;
	return (int64_t)((double)nrows * (double)TS_LOG_PACE_ROW_NS * (double)(used - from) /
	                 (double)(wall - from));
}

/* Sleep ns, t->mu let go meanwhile; returns ts__table_lock's result. */
static int nap_unlocked(ts_table *t, int64_t ns)
{
	ts__table_unlock(t);
	struct timespec nap = {(time_t)(ns / 1000000000), (long)(ns % 1000000000)};
	nanosleep(&nap, NULL);
	return ts__table_lock(t);
}

/* Whether the flushes can release the log while an insert waits: they
 * do not fail, and the maintenance thread runs for others. */
static int flushes_work(ts_table *t)
{
	return t->log && !t->flush_retry.failures && !no_flusher(t->db);
}

int ts__log_stall(ts_table *t, size_t nrows)
{
	TS_ASSERT_HELD(&t->mu);
	int64_t start = 0, now;
	int rc = 0;
	/* the slope: the rows' pause, slept a step at a time */
	t->log_pace_debt_ns += t->log ? pace_ns(t, nrows) : 0;
	if (t->log_pace_debt_ns >= TS_LOG_STALL_STEP_NS) {
		int64_t owed = t->log_pace_debt_ns;
		t->log_pace_debt_ns = 0;
		if (flushes_work(t)) {
			if (owed > TS_LOG_STALL_MAX_NS)
				owed = TS_LOG_STALL_MAX_NS;
			now = ts__mono_ns();
			rc = nap_unlocked(t, owed);
			__atomic_add_fetch(&t->log_paced_ns, ts__mono_ns() - now, __ATOMIC_RELAXED);
			if (rc < 0)
				return rc; /* dropped meanwhile: unlocked */
		}
	}
	/* the wall */
	while (t->log && log_used(t) >= log_cap(t) / TS_LOG_STALL_DEN * TS_LOG_STALL_NUM &&
	       flushes_work(t)) {
		now = ts__mono_ns();
		if (!start) {
			start = now;
			t->log_stalls++;
			ts__maint_wake(t->db); /* log_pressed: every tree is due */
		} else if (now - start >= TS_LOG_STALL_MAX_NS) {
			break; /* the cap decides */
		}
		if ((rc = nap_unlocked(t, TS_LOG_STALL_STEP_NS)) < 0)
			break; /* dropped meanwhile: unlocked */
	}
	if (start)
		__atomic_add_fetch(&t->log_stall_ns, ts__mono_ns() - start, __ATOMIC_RELAXED);
	return rc;
}

int ts__log_cap_check(ts_table *t)
{
	TS_ASSERT_HELD(&t->mu);
	long long cap_mib = (long long)(log_cap(t) >> 20);
	if (log_used(t) < log_cap(t))
		return 0;
	t->log_cap_refusals++;
	if (t->flush_retry.failures)
		return ts__fail(TS_ENOSPC, "the log of table \"%s\" is at its cap of %lld MiB because "
		                "flushes fail: %s", t->name, cap_mib, t->flush_retry.cause);
	return ts__fail(TS_ENOSPC, "the log of table \"%s\" is at its cap of %lld MiB until "
	                "flushes catch up; try again", t->name, cap_mib);
}

/*
 * A tree is due when it reaches flush_size bytes, when it is flush_age
 * old, or when its period ended while it was filling (LittleTable's
 * roll-over: the period's rows are complete).  A tree begun after its
 * period ended -- late rows -- waits for size or age, so a trickle of
 * late rows does not make a tablet each.
 */
static int due(const ts_table *t, const ts__root *r, const void *arg)
{
	const ts_options *o = &t->db->opts;
	int64_t now = *(const int64_t *)arg, end = ts__period_end(r->period_start, r->period_len);
	return (int64_t)r->bytes >= o->flush_size || now - r->created >= o->flush_age ||
	       (r->created < end && end <= now) || log_pressed(t);
}

/* A tree that reached flush_size waited from the insert that noticed it
 * until now: the scheduler's stall time, counted in stats. */
static void count_wait(ts_table *t)
{
	int64_t since = __atomic_exchange_n(&t->flush_wanted_mono, 0, __ATOMIC_RELAXED);
	if (!since)
		return;
	int64_t waited = ts__mono_ns() - since, max;
	__atomic_add_fetch(&t->flush_wait_ns, waited, __ATOMIC_RELAXED);
	max = __atomic_load_n(&t->flush_wait_max_ns, __ATOMIC_RELAXED);
	while (waited > max && !__atomic_compare_exchange_n(&t->flush_wait_max_ns, &max, waited, 0,
	                                                    __ATOMIC_RELAXED, __ATOMIC_RELAXED))
		;
}

int ts__flush_due(ts_table *t)
{
	int64_t now = ts_now(t->db);
	int rc = 0;
	pthread_mutex_lock(&t->flush_mu);
	if (ts__table_retry_due(t, &t->flush_retry)) { /* else: failed lately, in backoff */
		count_wait(t);
		if ((rc = flush_locked(t, due, &now)) < 0)
			rc = ts__context(rc, "flush of table \"%s\"", t->name);
		ts__table_retry_done(t, &t->flush_retry, "flush", rc);
	}
	pthread_mutex_unlock(&t->flush_mu);
	return rc;
}

int ts__flush_wanted(const ts_table *t)
{
	TS_ASSERT_HELD(&t->mu);
	const ts__filling *f = &t->fill;
	if (log_pressed(t))
		return 1;
	for (int i = 0; i < f->n; i++)
		if ((int64_t)f->work[i].bytes >= t->db->opts.flush_size &&
		    !(f->work[i].flags & TS_ROOT_FROZEN))
			return 1;
	return 0;
}
