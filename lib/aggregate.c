/*
 * aggregate.c -- windowed statistics per group (DESIGN.md section 2,
 * "aggregate"; BTrDB's precomputed summaries).
 *
 * The rows of the box (prefix, [from, to), TTL) arrive in key order from
 * a scan, so a group -- the first `group` key columns -- is contiguous:
 * the cursor gathers one group at a time into its windows, then yields
 * the group's windows in time order and moves on.  Memory is one group's
 * windows, never the result.  A window holds one accumulator per
 * distinct column the specs read (aggacc.h: it keeps every function's
 * state, so count(v) and max(v) fold v once).  The rows of a series come
 * in time order, so a new window nearly always starts after every other
 * and is appended; only when one does not are the windows indexed by
 * start (a small hash table) and looked up from then on.
 *
 * A tablet block whose rows all share one group and one window, and lie
 * wholly inside the box, arrives as its footer statistics instead of its
 * rows (scan.h), so most blocks of a large aggregate are never read, let
 * alone decompressed.  Statistics cannot give first and last, nor a sum
 * over ts, so a request for those reads every row.  Without them, the
 * rows of a loaded block that share their group arrive together, as a
 * run (scan.c, make_run), folded in one loop that reads each row's ts
 * and the spec columns from its fixed area (add_run), into the window's
 * accumulators copied out (run_fold), instead of one merge step, key
 * and decode a row: windows shorter than a block -- a minute of
 * 10-second points -- cost about a third of the instructions.  A
 * filling tree's rows, handed up one by one, are folded from their
 * fixed area too (add_row).  Columns a tablet's
 * schema version lacks count as their default in each of its rows, as
 * they read.
 *
 * Definitions: count counts values (a NaN double is no value); sum is
 * exact over integers (an int64 overflow is TS_ERANGE) and over doubles
 * is summed in block order, so it may differ in the last bits from a
 * row-by-row sum; min and max ignore NaN; mean is sum / count; first and
 * last are the values of the rows with the least and the greatest ts,
 * ties going to the least and the greatest key.
 */
#include <assert.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "aggacc.h"
#include "cursor.h"
#include "error.h"
#include "key.h"
#include "period.h"
#include "snapshot.h"
#include "tablets.h"

/* One column's state in one window: ts__agg_acc (aggacc.h). */
typedef ts__agg_acc acc;

typedef struct window {
	int64_t start;
	uint32_t slot;            /* its place in the hash table, once indexed */
} window;

/* How a run's rows (add_run), written under one schema version, hold
 * accumulator j's column: in the fixed area at off (4 bytes when is32),
 * or, a column added since, as its default. */
struct run_col {
	int off, is32;
	ts_value dflt;
	ts_type type;
	ts_type vtype;            /* the value's: type, or the default's */
};

/* A window's accumulator while a run folds rows into it (add_run): its
 * fields copied out when the run reaches the window and back when it
 * leaves (the window array may move meanwhile), folded with the
 * arithmetic of acc_add_value in the same order, so the result is the
 * same to the bit. */
struct run_fold {
	uint64_t count;
	__int128 isum;
	double dsum;
	ts_value min, max;
	int overflow;
};

typedef struct agg_cursor {
	struct ts_cursor base;
	ts__summary_rule rule;    /* the snapshot's schema, group and every */
	int nspecs;
	ts_aggspec *specs;
	/* One accumulator per distinct column the specs read (an
	 * accumulator holds every function's state, aggacc.h): count(v) and
	 * max(v) fold v once. */
	int nacc;
	int *acol;                /* [nacc]: the column of accumulator j */
	int *spec_acc;            /* [nspecs]: the accumulator of spec k */
	struct run_col *rcols;    /* [nacc]: how rows of version rcols_version
	                           * hold the columns (run_cols) */
	uint32_t rcols_version;
	int rcols_state;          /* 0 unset, 1 all fixed or default, 2 not */
	size_t rcols_fixed;       /* that version's fixed area, bytes */
	struct run_fold *rfold;   /* [nacc]: add_run's window, copied out */
	/* the group being gathered */
	ts_buf gkey;
	int have_group;
	window *win;
	acc *accs;                /* nacc per window */
	size_t nwin, capwin;
	size_t last_win;          /* the window of the last row added */
	int unsorted;             /* a window was made before one made earlier */
	uint32_t *slots;          /* window index + 1, 0 = free (when indexed) */
	uint32_t nslots;          /* power of two */
	int indexed;              /* slots hold every window (window_accs) */
	/* yielding it */
	size_t *order, emit;
	int emitting, ended, pending;
	const ts__src *item;
	ts_value *out;
	ts_buf gscratch;
	int *want;                /* the spec columns, when none is in the key */
	int summaries;            /* blocks may be handed up as statistics */
} agg_cursor;

static void acc_reset(acc *a)
{
	memset(a, 0, sizeof *a);
}

static uint32_t hash_start(int64_t start)
{
	uint64_t h = (uint64_t)start * 0x9E3779B97F4A7C15u;
	return (uint32_t)(h >> 32);
}

/* Index every window made so far in a hash table of at least
 * 2 * (nwin + 1) slots (a fresh one when it must grow). */
static int index_windows(agg_cursor *c)
{
	uint32_t n = c->nslots ? c->nslots : 64;
	while ((c->nwin + 1) * 2 > n)
		n *= 2;
	if (n != c->nslots) {
		uint32_t *s = calloc(n, sizeof *s);
		if (!s)
			return ts__fail(TS_ENOMEM, "out of memory");
		free(c->slots);
		c->slots = s;
		c->nslots = n;
	} else if (c->indexed) {
		memset(c->slots, 0, n * sizeof *c->slots);
	}
	for (size_t i = 0; i < c->nwin; i++) {
		uint32_t j = hash_start(c->win[i].start) & (n - 1);
		while (c->slots[j])
			j = (j + 1) & (n - 1);
		c->slots[j] = (uint32_t)i + 1;
		c->win[i].slot = j;
	}
	c->indexed = 1;
	return 0;
}

/* Room for one more window: c->win, c->accs and c->order grown
 * together.  The first allocation holds the windows the range's span
 * can make when that is at most WINDOWS_FIRST_MAX (else 32), so that a
 * group of many short windows does not grow them six times. */
#define WINDOWS_FIRST_MAX 1024
static int room_for_window(agg_cursor *c)
{
	if (c->nwin < c->capwin)
		return 0;
	size_t cap = 2 * c->capwin;
	if (!c->capwin) {
		const ts__range *r = &c->base.range;
		uint64_t span = (uint64_t)r->tmax - (uint64_t)r->tmin;
		uint64_t every = (uint64_t)c->rule.every;
		cap = r->tmax >= r->tmin && every && span / every < WINDOWS_FIRST_MAX
		      ? (size_t)(span / every) + 2 : 32;
	}
	window *w = realloc(c->win, cap * sizeof *w);
	if (w)
		c->win = w;
	acc *a = realloc(c->accs, cap * (size_t)(c->nacc ? c->nacc : 1) * sizeof *a);
	if (a)
		c->accs = a;
	size_t *o = realloc(c->order, cap * sizeof *o);
	if (o)
		c->order = o;
	if (!w || !a || !o)
		return ts__fail(TS_ENOMEM, "out of memory");
	c->capwin = cap;
	return 0;
}

/* The accumulators of the window starting at start, made if new.  Rows
 * of a series come in time order: most are of the window of the row
 * before, which is tried first, and a new window is then after every
 * other, so it is appended without a lookup.  Only when a window comes
 * before one made earlier are the windows indexed by start (a hash
 * table, index_windows) and looked up from then on. */
static int window_accs(agg_cursor *c, int64_t start, acc **out)
{
	uint32_t j = 0;
	if (c->nwin && c->win[c->last_win].start == start) {
		*out = &c->accs[c->last_win * (size_t)c->nacc];
		return 0;
	}
	int in_order = c->nwin == 0 || start > c->win[c->nwin - 1].start;
	if (!in_order && !c->indexed && index_windows(c) < 0)
		return TS_ENOMEM;
	if (c->indexed) {
		if ((c->nwin + 1) * 2 > c->nslots && index_windows(c) < 0)
			return TS_ENOMEM;
		uint32_t mask = c->nslots - 1;
		for (j = hash_start(start) & mask; c->slots[j]; j = (j + 1) & mask)
			if (c->win[c->slots[j] - 1].start == start) {
				c->last_win = c->slots[j] - 1;
				*out = &c->accs[c->last_win * (size_t)c->nacc];
				return 0;
			}
	}
	if (room_for_window(c) < 0)
		return TS_ENOMEM;
	if (!in_order)
		c->unsorted = 1;
	c->win[c->nwin].start = start;
	c->win[c->nwin].slot = j;
	if (c->indexed)
		c->slots[j] = (uint32_t)c->nwin + 1;
	c->last_win = c->nwin;
	*out = &c->accs[c->nwin * (size_t)c->nacc];
	for (int k = 0; k < c->nacc; k++)
		acc_reset(&(*out)[k]);
	c->nwin++;
	return 0;
}

static void forget_windows(agg_cursor *c)
{
	if (c->indexed)
		for (size_t i = 0; i < c->nwin; i++)
			c->slots[c->win[i].slot] = 0;
	c->indexed = 0;
	c->nwin = 0;
	c->unsorted = 0;
}

static int64_t window_start(const agg_cursor *c, int64_t ts)
{
	return ts__floor_multiple(ts, c->rule.every);
}

/* Fold a value's min/max into a. */
static void fold_minmax(acc *a, const ts_value *min, const ts_value *max, int isdouble)
{
	int first = a->count == 0;
	if (isdouble) {
		if (first || min->v.d < a->min.v.d)
			a->min = *min;
		if (first || max->v.d > a->max.v.d)
			a->max = *max;
	} else {
		if (first || min->v.i < a->min.v.i)
			a->min = *min;
		if (first || max->v.i > a->max.v.i)
			a->max = *max;
	}
}

static inline void acc_add_value(ts__agg_acc *a, const ts_value *v);

void ts__agg_acc_add(ts__agg_acc *a, const ts_value *v, int64_t ts)
{
	if (!a->has_first || ts < a->first_ts) { /* ties: the least key came first */
		a->first = *v;
		a->first_ts = ts;
	}
	if (!a->has_first || ts >= a->last_ts) { /* ties: the greatest key comes last */
		a->last = *v;
		a->last_ts = ts;
	}
	a->has_first = 1;
	acc_add_value(a, v);
}

/* ts__agg_acc_add but for first and last. */
static inline void acc_add_value(ts__agg_acc *a, const ts_value *v)
{
	if (v->type == TS_DOUBLE) {
		if (isnan(v->v.d))
			return;
		fold_minmax(a, v, v, 1);
		a->dsum += v->v.d;
	} else {
		fold_minmax(a, v, v, 0);
		a->overflow |= __builtin_add_overflow(a->isum, v->v.i, &a->isum);
	}
	a->count++;
}

/* Fold row[0..len) of schema version `version`, whose key is
 * key[0..klen) and whose ts is ts, into its window. */
static int add_row_at(agg_cursor *c, uint32_t version, const void *row, size_t len,
                      const void *key, size_t klen, int64_t ts)
{
	acc *a;
	int rc = window_accs(c, window_start(c, ts), &a);
	if (rc == 0)
		rc = ts__cursor_decode(&c->base, version, row, len, key, klen);
	if (rc < 0)
		return rc;
	for (int j = 0; j < c->nacc; j++, a++)
		ts__agg_acc_add(a, &c->base.vals[c->acol[j]], ts);
	return 0;
}

/* add_run's rows one by one as add_row takes them: for a column a run's
 * schema version keeps elsewhere than in the fixed area. */
static int add_run_rows(agg_cursor *c, const ts__src *src)
{
	const ts__cblock *cb = src->cb;
	const ts__range *r = src->range;
	for (long i = src->run_lo; i < src->run_hi; i++) {
		const unsigned char *row = cb->raw.data + cb->rows[i].off;
		size_t len = cb->rows[i].len, klen;
		const void *key;
		int rc = ts__row_key(row, len, &key, &klen);
		if (rc < 0)
			return ts__table_damaged(src->snap->table, src->tab->id, rc);
		int64_t ts = ts__key_ts(key, klen);
		if (ts < r->tmin || ts > r->tmax)
			continue;
		if ((rc = add_row_at(c, src->version, row, len, key, klen, ts)) < 0)
			return rc == TS_ECORRUPT ? ts__table_damaged(src->snap->table, src->tab->id, rc)
			                         : rc;
	}
	return 0;
}

/* Row i of a run's block: its key and its fixed area (fixed_size bytes);
 * 0, or -1 when the row is malformed.  A key shorter than 128 bytes (one
 * byte of length) is read in place, any other through the reader. */
static inline int run_row(const ts__cblock *cb, long i, size_t fixed_size, const void **key,
                          size_t *klen, const unsigned char **fixed)
{
	const unsigned char *row = cb->raw.data + cb->rows[i].off;
	size_t len = cb->rows[i].len;
	if (len > 0 && row[0] < 0x80 && row[0] >= 8 && (size_t)row[0] + 1 + fixed_size <= len) {
		*key = row + 1;
		*klen = row[0];
		*fixed = row + 1 + row[0];
		return 0;
	}
	ts_reader rd;
	ts__reader_init(&rd, row, len);
	ts__get_bytes(&rd, key, klen);
	*fixed = ts__get_raw(&rd, fixed_size);
	return rd.bad || *klen < 8 ? -1 : 0;
}

static void fold_load(struct run_fold *f, const acc *a)
{
	f->count = a->count;
	f->isum = a->isum;
	f->dsum = a->dsum;
	f->min = a->min;
	f->max = a->max;
	f->overflow = a->overflow;
}

static void fold_store(const struct run_fold *f, acc *a)
{
	a->count = f->count;
	a->isum = f->isum;
	a->dsum = f->dsum;
	a->min = f->min;
	a->max = f->max;
	a->overflow = f->overflow;
}

/* Set c->rcols for rows of schema version `version` (kept while the
 * next rows are of the same version).  Returns 1 when every column
 * accumulated lies in those rows' fixed area or is a default there, 0
 * when one does not (the rows are then decoded one by one), or
 * TS_ECORRUPT for a version the snapshot does not know. */
static int run_cols(agg_cursor *c, uint32_t version)
{
	if (c->rcols_state && c->rcols_version == version)
		return c->rcols_state == 1;
	const ts__snapshot *s = &c->base.scan.snap;
	const ts__schema *from = ts__snapshot_version_schema(s, version);
	if (!from)
		return TS_ECORRUPT;
	c->rcols_version = version;
	c->rcols_fixed = (size_t)from->fixed_size;
	c->rcols_state = 1;
	for (int j = 0; j < c->nacc; j++) {
		int col = c->acol[j];
		struct run_col *p = &c->rcols[j];
		p->type = s->schema->cols[col].type;
		p->off = -1;
		p->is32 = 0;
		p->dflt = s->schema->cols[col].dflt;
		if (col < from->ncols) {
			if (from->cols[col].fixed_off < 0)
				c->rcols_state = 2; /* not a fixed column there */
			p->off = from->cols[col].fixed_off;
			p->is32 = from->cols[col].type == TS_INT32;
		}
		p->vtype = p->off >= 0 ? p->type : p->dflt.type;
	}
	return c->rcols_state == 1;
}

/* Fold the accumulated columns of a row whose fixed area is at fixed
 * (c->rcols' version) into f[0..nacc): acc_add_value, without first or
 * last (make_run gives runs only to aggregates without them).  Always
 * inlined: it is add_run's loop body, a call a row otherwise. */
static inline __attribute__((always_inline)) void fold_fixed(const agg_cursor *c,
                                                             struct run_fold *f,
                                                             const unsigned char *fixed)
{
	for (int j = 0; j < c->nacc; j++) {
		const struct run_col *p = &c->rcols[j];
		struct run_fold *a = &f[j];
		int64_t x = p->off < 0 ? p->dflt.v.i
		            : p->is32 ? (int32_t)ts__load_u32(fixed + p->off)
		                      : (int64_t)ts__load_u64(fixed + p->off);
		if (p->vtype == TS_DOUBLE) {
			double d;
			memcpy(&d, &x, sizeof d);
			if (isnan(d))
				continue;
			if (a->count == 0 || d < a->min.v.d) {
				a->min = p->dflt;
				a->min.type = p->vtype;
				a->min.v.d = d;
			}
			if (a->count == 0 || d > a->max.v.d) {
				a->max = p->dflt;
				a->max.type = p->vtype;
				a->max.v.d = d;
			}
			a->dsum += d;
		} else {
			if (a->count == 0 || x < a->min.v.i) {
				a->min = p->dflt;
				a->min.type = p->vtype;
				a->min.v.i = x;
			}
			if (a->count == 0 || x > a->max.v.i) {
				a->max = p->dflt;
				a->max.type = p->vtype;
				a->max.v.i = x;
			}
			a->overflow |= __builtin_add_overflow(a->isum, x, &a->isum);
		}
		a->count++;
	}
}

/* The rows of a run (scan.c, make_run) in the range's ts interval, as
 * add_row would take them one by one, each read only as far as the
 * fixed area: the spec columns (c->want) are never in the key, and those
 * of a variable-length type are never numeric. */
static int add_run(agg_cursor *c, const ts__src *src)
{
	const ts__cblock *cb = src->cb;
	const ts__range *r = src->range;
	const ts__snapshot *s = &c->base.scan.snap;
	struct run_fold *f = c->rfold;
	int rc = run_cols(c, src->version);
	if (rc < 0)
		return ts__table_damaged(s->table, src->tab->id, rc);
	if (rc == 0)
		return add_run_rows(c, src);
	int64_t wlo = 1, whi = 0; /* the window of the row before: [wlo, whi) */
	acc *wa = NULL;
	rc = 0;
	for (long i = src->run_lo; i < src->run_hi; i++) {
		const void *key;
		size_t klen;
		const unsigned char *fixed;
		if (run_row(cb, i, c->rcols_fixed, &key, &klen, &fixed) < 0) {
			rc = ts__table_damaged(s->table, src->tab->id,
			                       ts__fail(TS_ECORRUPT, "table \"%s\": a malformed row",
			                                s->table->name));
			break;
		}
		int64_t ts = ts__key_ts(key, klen);
		if (ts < r->tmin || ts > r->tmax)
			continue;
		if (ts < wlo || ts >= whi) { /* rows come in ts order: seldom */
			int64_t start = window_start(c, ts);
			for (int j = 0; wa && j < c->nacc; j++)
				fold_store(&f[j], &wa[j]);
			if ((rc = window_accs(c, start, &wa)) < 0) {
				wa = NULL;
				break;
			}
			for (int j = 0; j < c->nacc; j++)
				fold_load(&f[j], &wa[j]);
			wlo = start;
			whi = start > INT64_MAX - c->rule.every ? INT64_MAX : start + c->rule.every;
		}
		fold_fixed(c, f, fixed);
	}
	for (int j = 0; wa && j < c->nacc; j++)
		fold_store(&f[j], &wa[j]);
	return rc;
}

/* A row handed up alone (a filling tree's, or one a merge step chose).
 * When the aggregate asks neither first nor last nor a key column, and
 * its columns lie in the row's fixed area, it is folded from there as a
 * run's rows are; else decoded. */
static int add_row(agg_cursor *c, const ts__src *src)
{
	int64_t ts = ts__key_ts(src->key, src->klen);
	const unsigned char *row = src->row, *key = src->key;
	if (c->summaries && c->want && run_cols(c, src->version) == 1 && key > row &&
	    key + src->klen <= row + src->rowlen &&
	    c->rcols_fixed <= (size_t)(row + src->rowlen - (key + src->klen))) {
		acc *a;
		int rc = window_accs(c, window_start(c, ts), &a);
		if (rc < 0)
			return rc;
		for (int j = 0; j < c->nacc; j++)
			fold_load(&c->rfold[j], &a[j]);
		fold_fixed(c, c->rfold, key + src->klen);
		for (int j = 0; j < c->nacc; j++)
			fold_store(&c->rfold[j], &a[j]);
		return 0;
	}
	return add_row_at(c, src->version, src->row, src->rowlen, src->key, src->klen, ts);
}

/* The statistics of column col over block b of tab, in the snapshot's
 * schema: the footer's, or those of the column's default when the
 * tablet's schema version predates the column. */
static void block_stat(const agg_cursor *c, const ts__tablet *tab, uint32_t b, int col,
                       ts__colstat *st)
{
	const ts__col *column = &c->rule.schema->cols[col];
	for (uint32_t j = 0; j < tab->nstat; j++)
		if (tab->stat_cols[j] == col) {
			ts__tablet_stat(tab, b, j, st);
			st->min.type = st->max.type = column->type; /* int32 widened */
			return;
		}
	uint64_t rows = tab->blocks[b].rows;
	memset(st, 0, sizeof *st);
	st->min = st->max = column->dflt;
	if (column->type == TS_DOUBLE) {
		if (!isnan(column->dflt.v.d)) {
			st->count = rows;
			st->dsum = column->dflt.v.d * (double)rows;
		}
	} else {
		st->count = rows;
		st->isum = (__int128)column->dflt.v.i * (__int128)rows;
	}
}

static int add_summary(agg_cursor *c, const ts__src *src)
{
	const ts__tablet *tab = src->tab;
	acc *a;
	int rc = window_accs(c, window_start(c, tab->blocks[src->block].min_ts), &a);
	if (rc < 0)
		return rc;
	for (int j = 0; j < c->nacc; j++, a++) {
		ts__colstat st;
		block_stat(c, tab, src->block, c->acol[j], &st);
		if (st.count == 0)
			continue;
		int isdouble = c->rule.schema->cols[c->acol[j]].type == TS_DOUBLE;
		fold_minmax(a, &st.min, &st.max, isdouble);
		a->count += st.count;
		a->overflow |= __builtin_add_overflow(a->isum, st.isum, &a->isum);
		a->dsum += st.dsum;
	}
	return 0;
}

static int cmp_window(const void *x, const void *y, void *arg)
{
	const window *w = arg;
	int64_t a = w[*(const size_t *)x].start, b = w[*(const size_t *)y].start;
	return (a > b) - (a < b);
}

/* Gather the next group.  Returns 1 when it has windows, 0 at the end. */
static int gather(agg_cursor *c)
{
	long glen = 0;
	forget_windows(c);
	c->have_group = 0;
	for (;;) {
		if (!c->pending) {
			int rc = ts__scan_next(&c->base.scan, &c->item);
			if (rc < 0)
				return rc;
			if (rc == 0) {
				c->ended = 1;
				break;
			}
			c->pending = 1;
		}
		const ts__src *it = c->item;
		/* A key that begins with the group's encoded columns is of the
		 * group (each column's encoding ends itself, key.h): most rows
		 * are, and are spared parsing their key. */
		if (c->have_group && c->rule.group > 0 && it->klen > c->gkey.len &&
		    memcmp(it->key, c->gkey.data, c->gkey.len) == 0)
			glen = (long)c->gkey.len;
		else if (c->rule.group > 0 &&
		    (glen = ts__key_prefix_len(c->rule.schema, it->key, it->klen, c->rule.group)) < 0)
			return ts__fail(TS_ECORRUPT, "table \"%s\": a malformed key",
			                c->base.scan.snap.table->name);
		if (c->have_group && glen > 0 &&
		    (c->gkey.len != (size_t)glen || memcmp(c->gkey.data, it->key, (size_t)glen) != 0))
			break; /* the next group begins */
		if (!c->have_group) {
			c->gkey.len = 0;
			ts__put(&c->gkey, it->key, (size_t)glen);
			if (c->gkey.oom)
				return ts__fail(TS_ENOMEM, "out of memory");
			c->have_group = 1;
		}
		int rc = it->summary ? add_summary(c, it) : it->run ? add_run(c, it) : add_row(c, it);
		if (rc < 0)
			return rc;
		c->pending = 0;
	}
	if (c->nwin == 0)
		return 0;
	for (size_t i = 0; i < c->nwin; i++)
		c->order[i] = i;
	if (c->unsorted) /* a series' rows come in time order: seldom */
		qsort_r(c->order, c->nwin, sizeof *c->order, cmp_window, c->win);
	c->emit = 0;
	return ts__key_decode(c->rule.schema, c->gkey.data, c->gkey.len, c->rule.group, c->out,
	                      &c->gscratch, NULL) < 0 ? TS_ECORRUPT : 1;
}

/* The value of spec k from its accumulator. */
static int result(agg_cursor *c, int k, const acc *a, ts_value *v)
{
	const ts__col *col = &c->rule.schema->cols[c->specs[k].column];
	return ts__agg_acc_result(c->specs[k].fn, col->type == TS_DOUBLE, col->name, a, v);
}

int ts__agg_acc_result(ts_aggfn fn, int isdouble, const char *colname, const ts__agg_acc *a,
                       ts_value *v)
{
	switch (fn) {
	case TS_AGG_COUNT:
		*v = ts_int64((int64_t)a->count);
		return 0;
	case TS_AGG_SUM:
		if (isdouble) {
			*v = ts_double(a->dsum);
			return 0;
		}
		if (a->overflow || a->isum > INT64_MAX || a->isum < INT64_MIN)
			return ts__fail(TS_ERANGE, "sum of column \"%s\" overflows int64", colname);
		*v = ts_int64((int64_t)a->isum);
		return 0;
	case TS_AGG_MEAN:
		*v = ts_double(a->count == 0 ? NAN
		                              : isdouble ? a->dsum / (double)a->count
		                                         : (double)a->isum / (double)a->count);
		return 0;
	case TS_AGG_MIN:
	case TS_AGG_MAX:
		if (a->count == 0) /* only NaN seen */
			*v = ts_double(NAN);
		else
			*v = fn == TS_AGG_MIN ? a->min : a->max;
		return 0;
	case TS_AGG_FIRST:
		*v = a->first;
		return 0;
	case TS_AGG_LAST:
		*v = a->last;
		return 0;
	}
	return ts__fail(TS_EINVAL, "bad aggregate function");
}

static int agg_next(struct ts_cursor *base, const ts_value **row, int *n)
{
	agg_cursor *c = (agg_cursor *)base;
	while (!c->emitting || c->emit == c->nwin) {
		c->emitting = 0;
		if (c->ended && !c->pending)
			return 0;
		int rc = gather(c);
		if (rc <= 0)
			return rc;
		c->emitting = 1;
	}
	size_t w = c->order[c->emit++];
	const acc *a = &c->accs[w * (size_t)c->nacc];
	c->out[c->rule.group] = ts_timestamp(c->win[w].start);
	for (int k = 0; k < c->nspecs; k++) {
		int rc = result(c, k, &a[c->spec_acc[k]], &c->out[c->rule.group + 1 + k]);
		if (rc < 0)
			return rc;
	}
	*row = c->out;
	*n = c->rule.group + 1 + c->nspecs;
	return 0;
}

static void agg_destroy(struct ts_cursor *base)
{
	agg_cursor *c = (agg_cursor *)base;
	uint64_t scanned, summarised;
	ts__scan_counts(&base->scan, &scanned, &summarised);
	__atomic_add_fetch(&base->table->agg_rows_scanned, scanned, __ATOMIC_RELAXED);
	__atomic_add_fetch(&base->table->agg_rows_summarised, summarised, __ATOMIC_RELAXED);
	ts__buf_free(&c->gkey);
	ts__buf_free(&c->gscratch);
	free(c->specs);
	free(c->acol);
	free(c->spec_acc);
	free(c->rcols);
	free(c->rfold);
	free(c->want);
	free(c->win);
	free(c->accs);
	free(c->slots);
	free(c->order);
	free(c->out);
}

/* Check req against the snapshot's schema. */
static int validate(const ts__schema *s, const ts_aggregate *req)
{
	if (req->every <= 0)
		return ts__fail(TS_EINVAL, "every must be positive");
	if (req->from >= req->to)
		return ts__fail(TS_EINVAL, "from must be before to");
	if (req->group < 0 || req->group >= s->nkey)
		return ts__fail(TS_EINVAL, "group: %d key columns asked, 0 to %d allowed", req->group,
		                s->nkey - 1);
	if (req->nspecs < 0 || req->nspecs > TS_COLUMNS_MAX || (req->nspecs && !req->specs))
		return ts__fail(TS_EINVAL, "bad number of aggregate columns: %d", req->nspecs);
	for (int k = 0; k < req->nspecs; k++) {
		int col = req->specs[k].column;
		if (col < 0 || col >= s->ncols)
			return ts__fail(TS_ENOENT, "no column %d (the table has %d)", col, s->ncols);
		if (!ts__type_is_numeric(s->cols[col].type))
			return ts__fail(TS_ETYPE, "column \"%s\" is a %s: aggregates need numbers",
			                s->cols[col].name, ts_type_name(s->cols[col].type));
		if (req->specs[k].fn < TS_AGG_COUNT || req->specs[k].fn > TS_AGG_LAST)
			return ts__fail(TS_EINVAL, "column \"%s\": bad aggregate function %d",
			                s->cols[col].name, (int)req->specs[k].fn);
	}
	return 0;
}

/* What agg_setup is given: the request, and whether the cursor is one of
 * spans (ts__aggregate_open_spans: no box until ts__aggregate_span). */
struct agg_args {
	const ts_aggregate *req;
	int spans;
};

static int agg_setup(struct ts_cursor *base, const void *arg)
{
	agg_cursor *c = (agg_cursor *)base;
	const struct agg_args *args = arg;
	ts_aggregate boxless;
	const ts_aggregate *req = args->req;
	const ts__snapshot *s = &base->scan.snap;
	if (args->spans) { /* the boxes come later */
		boxless = *req;
		boxless.from = 0;
		boxless.to = 1;
		req = &boxless;
	}
	int rc = validate(s->schema, req);
	if (rc < 0)
		return rc;
	c->rule.schema = s->schema;
	c->rule.group = req->group;
	c->rule.every = req->every;
	c->nspecs = req->nspecs;
	int summaries = 1;
	size_t nk = (size_t)(req->nspecs ? req->nspecs : 1);
	if (!(c->specs = malloc(nk * sizeof *c->specs)) ||
	    !(c->acol = malloc(nk * sizeof *c->acol)) ||
	    !(c->spec_acc = malloc(nk * sizeof *c->spec_acc)) ||
	    !(c->rcols = malloc(nk * sizeof *c->rcols)) ||
	    !(c->rfold = malloc(nk * sizeof *c->rfold)) ||
	    !(c->out = malloc((size_t)(req->group + 1 + req->nspecs) * sizeof *c->out)))
		return ts__fail(TS_ENOMEM, "out of memory");
	int keys = 0;
	for (int k = 0; k < req->nspecs; k++) {
		c->specs[k] = req->specs[k];
		int j = 0;
		while (j < c->nacc && c->acol[j] != req->specs[k].column)
			j++;
		if (j == c->nacc)
			c->acol[c->nacc++] = req->specs[k].column;
		c->spec_acc[k] = j;
		if (c->specs[k].fn == TS_AGG_FIRST || c->specs[k].fn == TS_AGG_LAST ||
		    c->specs[k].column == s->schema->ts_col)
			summaries = 0;
		keys |= s->schema->cols[c->specs[k].column].key_pos >= 0 &&
		        c->specs[k].column != s->schema->ts_col;
	}
	/* Rows read are decoded only as far as the specs' columns, when no
	 * spec needs a key column but ts unescaped (ts__row_decode_values). */
	if (!keys && req->nspecs > 0) {
		if (!(c->want = malloc((size_t)c->nacc * sizeof *c->want)))
			return ts__fail(TS_ENOMEM, "out of memory");
		memcpy(c->want, c->acol, (size_t)c->nacc * sizeof *c->want);
		base->want = c->want;
		base->nwant = c->nacc;
	}
	c->summaries = summaries;
	/* runs, given only with summaries (no first, no last), are read
	 * without decoding keys: not when a spec is of a key column */
	c->rule.runs = req->nspecs == 0 || c->want;
	if (args->spans) {
		c->ended = 1; /* no box yet: nothing to read */
		return 0;
	}
	int64_t tmin = req->from > s->expiry ? req->from : s->expiry;
	if ((rc = ts__range_prefix(&base->range, s->schema, req->prefix, req->nprefix, tmin,
	                           req->to - 1)) < 0)
		return rc;
	return ts__scan_start(&base->scan, &base->range, 0, summaries ? &c->rule : NULL);
}

int ts__aggregate_open_raw(ts_table *table, const ts_aggregate *req, ts_cursor **out)
{
	struct agg_args args = {req, 0};
	*out = NULL;
	if (!req)
		return ts__fail(TS_EINVAL, "no aggregate request");
	return ts__cursor_open(table, sizeof(agg_cursor), agg_next, agg_destroy, agg_setup, &args,
	                       out);
}

int ts__aggregate_open_spans(ts_table *table, const ts_aggregate *req, ts_cursor **out)
{
	struct agg_args args = {req, 1};
	*out = NULL;
	if (!req)
		return ts__fail(TS_EINVAL, "no aggregate request");
	return ts__cursor_open(table, sizeof(agg_cursor), agg_next, agg_destroy, agg_setup, &args,
	                       out);
}

int ts__aggregate_span(ts_cursor *base, const ts_value *prefix, int nprefix, int64_t from,
                       int64_t to)
{
	agg_cursor *c = (agg_cursor *)base;
	const ts__snapshot *s = &base->scan.snap;
	assert(base->next == agg_next);
	if (base->err < 0)
		return base->err;
	if (!s->table)
		return ts__fail(TS_ECLOSED, "the aggregate's snapshot was released by a failure");
	if (from >= to)
		return ts__fail(TS_EINVAL, "from must be before to");
	if (nprefix < 0 || nprefix > c->rule.group)
		return ts__fail(TS_EINVAL, "prefix of %d columns: at most the group's %d", nprefix,
		                c->rule.group);
	/* The windows of the last span are left: the next gather forgets
	 * them.  The box is rebuilt on the same snapshot. */
	ts__scan_stop(&base->scan);
	ts__range_free(&base->range);
	ts__range_init(&base->range);
	base->stem_state = 0; /* the new range's stem, if any, decoded on first use */
	c->have_group = 0;
	c->emitting = 0;
	c->pending = 0;
	c->ended = 0;
	c->item = NULL;
	int64_t tmin = from > s->expiry ? from : s->expiry;
	int rc = ts__range_prefix(&base->range, s->schema, prefix, nprefix, tmin, to - 1);
	if (rc == 0)
		rc = ts__scan_start(&base->scan, &base->range, 0, c->summaries ? &c->rule : NULL);
	if (rc < 0)
		c->ended = 1;
	return rc;
}

int ts__aggregate_open(ts_table *table, const ts_aggregate *req, unsigned flags,
                       ts_cursor **out)
{
	*out = NULL;
	if (!(flags & TS_AGG_NO_ROLLUP) && ts__aggregate_routed(table, req, out) == 1)
		return 0;
	return ts__aggregate_open_raw(table, req, out);
}
