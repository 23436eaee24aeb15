/*
 * filling.c -- routing rows to the filling tablet of their period, the
 * uniqueness check across filling tablets, and batch commit/abort.
 *
 * Uniqueness, cheapest proof first: inserting into the tablet of the
 * row's period finds an equal key on the way down for free; other filling
 * tablets whose period also holds ts (a period that has since grown, say
 * yesterday's 4-hour tablet beside yesterday's day tablet) are skipped
 * when ts lies outside their [min_ts, max_ts], and searched otherwise.
 */
#include <stdlib.h>
#include <string.h>

#include "avl.h"
#include "error.h"
#include "filling.h"
#include "tslimits.h"
#include "period.h"

static int grow(ts__filling *f, int need)
{
	if (need <= f->cap)
		return 0;
	int cap = f->cap ? f->cap * 2 : 8;
	while (cap < need)
		cap *= 2;
	ts__root *w = realloc(f->work, (size_t)cap * sizeof *w);
	if (w)
		f->work = w;
	ts__root *c = w ? realloc(f->committed, (size_t)cap * sizeof *c) : NULL;
	if (c)
		f->committed = c;
	if (!w || !c)
		return ts__fail(TS_ENOMEM, "out of memory");
	f->cap = cap;
	return 0;
}

/* The writer's list of the chain's tombstones past its cut and at or
 * after floor (the flushed position: records before it are the
 * DESCRIPTOR's, and their segments may be gone), oldest first, from the
 * commit at head. */
static int load_chain(ts__filling *f, uint64_t floor, uint64_t head)
{
	ts__tomb *v = NULL;
	int n = 0, cap = 0;
	int rc = ts__tomb_chain(f->log, f->tomb.root, f->tomb.since, floor, head, &v, &n, &cap);
	if (rc < 0) {
		free(v);
		return rc;
	}
	for (int i = 0; i < n / 2; i++) { /* newest first to oldest first */
		ts__tomb x = v[i];
		v[i] = v[n - 1 - i];
		v[n - 1 - i] = x;
	}
	free(f->lt);
	f->lt = v;
	f->nlt = n;
	f->caplt = cap;
	return 0;
}

int ts__filling_init(ts__filling *f, ts__log *log, uint64_t floor, int64_t now)
{
	ts__commit c;
	memset(f, 0, sizeof *f);
	f->log = log;
	uint64_t head = ts__log_head(log);
	if (!head)
		return 0;
	int rc = ts__log_read_commit(log, head, &c);
	if (rc == 0)
		rc = grow(f, (int)c.nroots);
	/* The head commit's time bounds when every tree began from above:
	 * a tree's age (flush_age) goes on from there across a reopen
	 * instead of starting again at the open.  The commit's time may be
	 * later than now (a clock set back): then now. */
	int64_t created = rc == 0 && c.time < now ? c.time : now;
	for (uint32_t i = 0; rc == 0 && i < c.nroots; i++) {
		ts__commit_root(&c, i, &f->work[i]);
		f->work[i].created = created;
	}
	if (rc == 0 && c.has_tombs) {
		ts__commit_root(&c, c.nroots, &f->tomb);
		f->tomb_committed = f->tomb;
		rc = load_chain(f, floor, head);
	}
	if (rc < 0)
		return rc;
	f->n = f->ncommitted = (int)c.nroots;
	f->open_head = head;
	if (f->n)
		memcpy(f->committed, f->work, (size_t)f->n * sizeof *f->work);
	return 0;
}

void ts__filling_free(ts__filling *f)
{
	free(f->lt);
	free(f->work);
	free(f->committed);
	memset(f, 0, sizeof *f);
}

int ts__filling_begin(ts__filling *f)
{
	return ts__log_begin(f->log, &f->batch);
}

/* The working (not frozen) tablet for a period, or NULL. */
static ts__root *tablet_of(ts__filling *f, int64_t start, int64_t len)
{
	for (int i = 0; i < f->n; i++)
		if (f->work[i].period_start == start && f->work[i].period_len == len &&
		    !(f->work[i].flags & TS_ROOT_FROZEN))
			return &f->work[i];
	return NULL;
}

/* A new working tablet for a period, its first row at row_lsn. */
static int tablet_new(ts__filling *f, int64_t start, int64_t len, uint64_t row_lsn,
                      int64_t now, ts__root **out)
{
	if (f->n >= TS_FILLING_MAX)
		return ts__fail(TS_ETOOBIG, "more than %d periods are filling; flush the table",
		                TS_FILLING_MAX);
	int rc = grow(f, f->n + 1);
	if (rc < 0)
		return rc;
	ts__root *r = *out = &f->work[f->n++];
	memset(r, 0, sizeof *r);
	r->period_start = start;
	r->period_len = len;
	r->min_ts = INT64_MAX;
	r->max_ts = INT64_MIN;
	r->born = row_lsn;
	r->since = f->batch;
	r->created = now;
	return 0;
}

/* Whether another filling tablet than self already has key. */
static int found_elsewhere(ts__filling *f, const ts__root *self, const unsigned char *key,
                           size_t klen, int64_t ts, uint64_t *row)
{
	for (int i = 0; i < f->n; i++) {
		const ts__root *r = &f->work[i];
		if (r == self || ts < r->min_ts || ts > r->max_ts)
			continue;
		if (ts__avl_find(f->log, r->root, key, klen, row) &&
		    !(f->hidden && f->hidden(f->hidden_arg, key, klen, *row)))
			return 1;
	}
	return 0;
}

uint64_t ts__filling_hi_bound(const ts__filling *f, const ts__root *r)
{
	return r->last ? r->last : f->open_head;
}

/* Whether self taking a row at ts would make it overlap, in time and
 * versions, another tree: one that took rows after self began (begun
 * after it, or begun before it and still taking rows since) whose
 * timespan meets self's grown by ts.  Periods only grow as the clock
 * moves on, so this happens when a period grows over another tree --
 * last week's tree taking the rows of a day whose own day tree took rows
 * after the week's tree began, once that day is older than the recent
 * days: the two would hold rows of the same keys with neither newer than
 * the other (invariant V, docs/corrections.md).  At one clock reading
 * the timespans of trees of meeting periods do not meet (a row's period
 * is the coarser the older it is), so a tree begun in the batch in
 * progress is not asked: the batch it would be made again in would
 * begin it again. */
static int newer_tree_meets(const ts__filling *f, const ts__root *self, int64_t ts)
{
	if (self->born >= f->batch)
		return 0;
	int64_t lo = ts < self->min_ts ? ts : self->min_ts;
	int64_t hi = ts > self->max_ts ? ts : self->max_ts;
	for (int i = 0; i < f->n; i++) {
		const ts__root *r = &f->work[i];
		if (r != self && r->rows && ts__filling_hi_bound(f, r) > self->born &&
		    r->min_ts <= hi && lo <= r->max_ts)
			return 1;
	}
	return 0;
}

int ts__filling_insert(ts__filling *f, const unsigned char *key, size_t klen,
                       int64_t ts, int64_t now, uint64_t row_lsn, size_t rowbytes,
                       int replace, uint64_t *dup_row)
{
	int64_t start, len;
	ts__period_of(ts, now, &start, &len);
	ts__root *r = tablet_of(f, start, len);
	int rc;
	if (replace)
		*dup_row = 0;
	/* Looked for before a new tablet is made, so that a duplicate leaves
	 * the working roots as they were: a batch that skips it goes on.
	 * Under replace, only to say whether the row replaced one: it goes
	 * in its period's tablet, newer than the other tablets' rows. */
	if (f->n > (r != NULL) && found_elsewhere(f, r, key, klen, ts, dup_row) && !replace)
		return TS_EDUPKEY;
	if (r && f->n > 1 && newer_tree_meets(f, r, ts)) {
		/* this tree takes no more rows: the period's next tree, born
		 * now, does (as for a deleted key below) */
		if (r->last == TS_ROOT_LAST_BATCH) {
			f->refreeze = r->born;
			return TS_FILLING_REFREEZE;
		}
		/* found_elsewhere passed over it, its own insert being the
		 * search: a key it holds is a duplicate all the same */
		uint64_t row;
		if (ts >= r->min_ts && ts <= r->max_ts && ts__avl_find(f->log, r->root, key, klen, &row) &&
		    !(f->hidden && f->hidden(f->hidden_arg, key, klen, row))) {
			*dup_row = row;
			if (!replace)
				return TS_EDUPKEY;
		}
		r->flags |= TS_ROOT_FROZEN;
		r = NULL;
	}
	if (!r && (rc = tablet_new(f, start, len, row_lsn, now, &r)) < 0)
		return rc;
	ts__avl_ins ins = {.log = f->log, .batch = f->batch, .key = key, .klen = klen,
	                   .row = row_lsn, .replace = replace};
	rc = ts__avl_insert(&ins, &r->root);
	f->nodes_written += ins.copied;
	if (rc == TS_EDUPKEY && f->hidden && f->hidden(f->hidden_arg, key, klen, ins.found)) {
		/* the key's row here is deleted: this tree keeps it, hidden by
		 * its tombstone, and takes no more rows; the new row begins the
		 * period's next tree (born after the tombstone).  A tree that
		 * took rows of this batch already would end newer than the new
		 * tree begins (invariant V): the batch is made again with the
		 * tree frozen from its start. */
		if (r->last == TS_ROOT_LAST_BATCH) {
			f->refreeze = r->born;
			return TS_FILLING_REFREEZE;
		}
		r->flags |= TS_ROOT_FROZEN;
		if ((rc = tablet_new(f, start, len, row_lsn, now, &r)) < 0)
			return rc;
		ins = (ts__avl_ins){.log = f->log, .batch = f->batch, .key = key, .klen = klen,
		                    .row = row_lsn};
		rc = ts__avl_insert(&ins, &r->root);
		f->nodes_written += ins.copied;
	}
	if (rc == TS_EDUPKEY)
		*dup_row = ins.found;
	else if (rc == 0 && ins.found && /* replaced in place: a deleted row is not named */
	         !(f->hidden && f->hidden(f->hidden_arg, key, klen, ins.found)))
		*dup_row = ins.found;
	if (rc < 0)
		return rc;
	if (!ins.found) /* a replaced node keeps the count */
		r->rows++;
	r->last = TS_ROOT_LAST_BATCH; /* the commit's LSN once it lands */
	r->bytes += rowbytes + TS_ROWREC_HEADER + TS_NODE_SIZE;
	if (ts < r->min_ts)
		r->min_ts = ts;
	if (ts > r->max_ts)
		r->max_ts = ts;
	return 0;
}

int ts__filling_commit(ts__filling *f, uint64_t rows, int64_t now)
{
	int with_tombs = f->tomb.root != 0, rc = 0;
	if (with_tombs && (rc = grow(f, f->n + 1)) == 0)
		f->work[f->n] = f->tomb; /* after the trees, not one of them */
	if (rc == 0)
		rc = ts__log_commit(f->log, f->work, (uint32_t)(f->n + with_tombs), rows, now);
	if (rc < 0) {
		ts__filling_abort(f);
		return rc;
	}
	for (int i = 0; i < f->n; i++)
		if (f->work[i].last == TS_ROOT_LAST_BATCH)
			f->work[i].last = ts__log_head(f->log);
	if (f->n)
		memcpy(f->committed, f->work, (size_t)f->n * sizeof *f->work);
	f->ncommitted = f->n;
	f->tomb_committed = f->tomb;
	f->rows += rows;
	f->batches++;
	return 0;
}

void ts__filling_abort(ts__filling *f)
{
	ts__log_abort(f->log);
	f->tomb = f->tomb_committed;
	f->n = f->ncommitted;
	if (f->n)
		memcpy(f->work, f->committed, (size_t)f->n * sizeof *f->work);
}

static int drop_from(ts__root *r, int *n, uint64_t born)
{
	for (int i = 0; i < *n; i++)
		if (r[i].born == born) {
			memmove(&r[i], &r[i + 1], (size_t)(*n - i - 1) * sizeof *r);
			(*n)--;
			return 1;
		}
	return 0;
}

int ts__filling_drop(ts__filling *f, uint64_t born)
{
	int a = drop_from(f->work, &f->n, born);
	int b = drop_from(f->committed, &f->ncommitted, born);
	return a || b;
}

int ts__filling_tombstone(ts__filling *f, const ts__tomb *tomb)
{
	ts__lsn lsn;
	unsigned char *p;
	if (f->nlt == f->caplt) { /* room in f->lt now: noting it cannot fail */
		int c = f->caplt ? 2 * f->caplt : 8;
		ts__tomb *g = realloc(f->lt, (size_t)c * sizeof *g);
		if (!g)
			return ts__fail(TS_ENOMEM, "out of memory");
		f->lt = g;
		f->caplt = c;
	}
	int rc = ts__log_alloc(f->log, ts__tomb_log_size(tomb), &lsn, (void **)&p);
	if (rc < 0)
		return rc;
	ts__tomb_log_write(p, tomb, f->tomb.root, f->batch);
	if (!f->tomb.root) {
		memset(&f->tomb, 0, sizeof f->tomb);
		f->tomb.flags = TS_ROOT_TOMBSTONES;
		f->tomb.min_ts = INT64_MAX;
		f->tomb.max_ts = INT64_MIN;
	}
	f->tomb.root = lsn;
	f->tomb.rows++;
	f->tomb.bytes += ts__tomb_log_size(tomb);
	if (tomb->tmin < f->tomb.min_ts)
		f->tomb.min_ts = tomb->tmin;
	if (tomb->tmax > f->tomb.max_ts)
		f->tomb.max_ts = tomb->tmax;
	return 0;
}

/* After the commit of a delete: its tombstone joins the writer's list. */
int ts__filling_note_tomb(ts__filling *f, uint64_t head)
{
	ts__lsn prev;
	if (f->nlt == f->caplt) /* ts__filling_tombstone made room */
		return ts__fail(TS_ENOMEM, "out of memory");
	int rc = ts__tomb_log_read(f->log, f->tomb.root, 0, head + 1, &f->lt[f->nlt], &prev);
	if (rc == 0)
		f->nlt++;
	return rc;
}

void ts__filling_cut_tombs(ts__filling *f, uint64_t cut)
{
	int k = 0;
	for (int i = 0; i < f->nlt; i++)
		if (f->lt[i].lsn > cut)
			f->lt[k++] = f->lt[i];
	f->nlt = k;
	if (!f->tomb.root)
		return;
	if (f->tomb.root <= cut) { /* every record is the DESCRIPTOR's */
		memset(&f->tomb, 0, sizeof f->tomb);
	} else {
		f->tomb.since = cut > f->tomb.since ? cut : f->tomb.since;
		f->tomb.rows = (uint64_t)k;
	}
}

int ts__filling_freeze(ts__filling *f, uint64_t born)
{
	for (int i = 0; i < f->n; i++)
		if (f->work[i].born == born) {
			f->work[i].flags |= TS_ROOT_FROZEN;
			return 1;
		}
	return 0;
}
