/*
 * query.c -- range queries and the latest row (DESIGN.md section 2), and
 * the ts_cursor calls every kind of cursor shares.
 *
 * A query turns its box -- prefix, lower and upper bounds on leading key
 * columns, a resume key, a time interval, the TTL -- into one byte range
 * of encoded keys and an inclusive ts interval (scan.h), then reads the
 * merged streams of a snapshot taken at open.  Rows are decoded into the
 * snapshot's current schema, so tablets of older schema versions read
 * like new ones.  The limit is honoured exactly: after the limit-th row
 * the cursor looks for one more qualifying row to say whether the result
 * was cut (`more`).
 *
 * A range whose keys all share a stem (every key column but ts fixed:
 * one series) decodes the stem once; each row then only has its key
 * compared with the stem and its ts read (ts__row_decode_stem), and the
 * cursor keeps that ts, not a copy of the key, for ts_cursor_resume,
 * which encodes the key from the stem when asked.  The copy cannot be
 * avoided otherwise: the key lies in the stream's block, which the next
 * row may release.  The rows after the first of a version whose values
 * are a run of 8-byte columns then cost a key check and the values'
 * loads (ts__row_decode_stem_fixed).
 *
 * latest finds the newest row of a prefix by visiting the streams newest
 * first (by the greatest ts each can hold) and stopping as soon as no
 * stream left can hold a newer row: normally the filling tree of the
 * current period answers alone.  When the prefix fixes every key column
 * but ts, the last row in key order of a stream is its newest, so each
 * stream visited costs one seek.  In a snapshot with replaced rows (the table may
 * hold replaced rows) several streams may hold the newest key: the newest
 * stream's row of it wins (the greatest vlo, scan.h), so that a replaced
 * row is never the answer.
 */
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "cursor.h"
#include "error.h"
#include "key.h"
#include "lifetime.h"

/* ---- shared by the cursors ---- */

/*
 * Cursor memory.  A cursor is about 1.5 KiB, past the sizes malloc keeps
 * per thread, so that each calloc and free went to the arena (its lock,
 * the block split or coalesced): most of the 900 instructions that the
 * allocator took of a latest lookup of 5 000.  A table keeps the memory of the cursor closed last
 * (spare_cursor, taken and given back with one atomic exchange each) for
 * the next one: cursors up to CURSOR_SPARE bytes are all allocated at
 * that size, so any of them fits any kind.  ts__table_free frees it.
 */
#define CURSOR_SPARE (sizeof(struct ts_cursor) + 512)

static struct ts_cursor *cursor_alloc(ts_table *t, size_t size)
{
	struct ts_cursor *c = NULL;
	if (size > CURSOR_SPARE)
		return calloc(1, size);
	if (__atomic_load_n(&t->spare_cursor, __ATOMIC_RELAXED))
		c = __atomic_exchange_n(&t->spare_cursor, NULL, __ATOMIC_ACQUIRE);
	if (!c)
		return calloc(1, CURSOR_SPARE);
	memset(c, 0, size);
	return c;
}

static void cursor_free(ts_table *t, struct ts_cursor *c)
{
	if (c->size <= CURSOR_SPARE)
		c = __atomic_exchange_n(&t->spare_cursor, c, __ATOMIC_ACQ_REL);
	free(c);
}

void ts__cursor_spare_free(ts_table *t)
{
	free(t->spare_cursor);
	t->spare_cursor = NULL;
}

int ts__cursor_open(ts_table *t, size_t size,
                    int (*next)(struct ts_cursor *, const ts_value **, int *),
                    void (*destroy)(struct ts_cursor *),
                    int (*setup)(struct ts_cursor *, const void *), const void *arg,
                    ts_cursor **out)
{
	*out = NULL;
	struct ts_cursor *c = cursor_alloc(t, size);
	if (!c)
		return ts__fail(TS_ENOMEM, "out of memory");
	c->table = t;
	c->size = size;
	c->next = next;
	c->destroy = destroy;
	ts__range_init(&c->range);
	ts__buf_init_in(&c->scratch, c->scratch_mem, sizeof c->scratch_mem);
	ts__buf_init_in(&c->stem_scratch, c->stem_mem, sizeof c->stem_mem);
	ts__buf_init_in(&c->last_key, c->last_key_mem, sizeof c->last_key_mem);
	ts__buf_init(&c->resume_scratch);
	int rc = ts__scan_begin(&c->scan, t);
	/* vals, then room for the stem's values (decode_stem) */
	const ts__schema *s = rc == 0 ? c->scan.snap.schema : NULL;
	size_t nvals = s ? (size_t)(s->ncols + s->nkey) : 0;
	if (s && nvals <= TS__CURSOR_VALS)
		c->vals = c->vals_mem;
	else if (s && !(c->vals = malloc(nvals * sizeof *c->vals)))
		rc = ts__fail(TS_ENOMEM, "out of memory");
	if (rc == 0)
		rc = setup(c, arg);
	ts__table_hold(t, 1); /* the cursor outlives its table handle */
	if (rc < 0) {
		ts_cursor_close(c);
		return rc;
	}
	*out = c;
	return 0;
}

/* Decode the range's stem into c->stem, once: stem_state 1, or -1 when
 * the range has none (or its stem does not decode, which a range built
 * here never makes: then rows decode their keys in full). */
static void decode_stem(struct ts_cursor *c)
{
	const ts__schema *s = c->scan.snap.schema;
	const ts__range *r = &c->range;
	size_t used;
	c->stem_state = -1;
	c->stem.vals = c->vals + s->ncols;
	if (r->has_stem && !r->empty &&
	    ts__key_decode(s, r->stem.data, r->stem.len, s->nkey - 1, c->stem.vals,
	                   &c->stem_scratch, &used) == 0 &&
	    used == r->stem.len) {
		c->stem.data = r->stem.data;
		c->stem.len = r->stem.len;
		c->stem_state = 1;
	}
}

int ts__cursor_decode(struct ts_cursor *c, uint32_t version, const void *row, size_t len,
                      const void *key, size_t klen)
{
	const ts__snapshot *s = &c->scan.snap;
	int typed = c->typed_version == version && version != 0;
	c->typed_version = 0; /* until a decode below sets every fixed column's type */
	if (c->want)
		return ts__snapshot_decode_values(s, version, row, len, c->vals, c->want, c->nwant);
	if (c->stem_state == 0)
		decode_stem(c);
	if (c->stem_state > 0) {
		/* a row of the version decoded last: its schema is known good */
		const ts__schema *from = typed ? s->versions[version - 1]
		                               : ts__snapshot_version_schema(s, version);
		int rc = from ? ts__row_decode_stem_values(from, s->schema, row, len, key, klen, &c->stem,
		                                           c->vals, typed, typed && c->stem_vals)
		              : TS_ECORRUPT;
		c->row_in_stem = c->stem_vals = rc == 0;
		if (rc == 0)
			c->typed_version = version;
		if (rc <= 0)
			return rc;
	}
	c->stem_vals = 0;
	int rc = ts__snapshot_decode(s, version, row, len, c->vals, &c->scratch);
	if (rc == 0)
		c->typed_version = version;
	return rc;
}

int ts__bound_encode(const ts__schema *s, const ts_value *vals, int n, const char *what,
                     ts_buf *out)
{
	ts_value v[TS_KEY_COLUMNS_MAX];
	out->len = 0;
	if (n < 0 || n > s->nkey)
		return ts__fail(TS_EINVAL, "%s: %d values given, the key has %d columns", what, n,
		                s->nkey);
	if (n > 0 && !vals)
		return ts__fail(TS_EINVAL, "%s: %d values given but no array", what, n);
	for (int i = 0; i < n; i++) {
		if (vals[i].type == TS_NONE)
			return ts__fail(TS_EINVAL, "%s: value %d (column \"%s\") is missing", what, i,
			                s->cols[s->key[i]].name);
		int rc = ts__value_check(s, s->key[i], &vals[i], &v[i]);
		if (rc < 0)
			return ts__fail(rc, "%s: %s", what, ts_errmsg(NULL));
	}
	return ts__key_encode(s, v, n, out);
}

int ts__range_prefix(ts__range *r, const ts__schema *s, const ts_value *prefix, int n,
                     int64_t tmin, int64_t tmax)
{
	ts_buf p;
	unsigned char mem[TS__SHORT_KEY];
	ts__buf_init_in(&p, mem, sizeof mem);
	int rc = ts__bound_encode(s, prefix, n, "prefix", &p);
	ts__range_time(r, tmin, tmax);
	/* every column but ts fixed: the key bounds made of the ts interval
	 * below are tighter than those of the prefix */
	if (rc == 0 && n > 0 && n != s->nkey - 1) {
		ts__range_lower_cols(r, p.data, p.len, 0);
		ts__range_upper_cols(r, p.data, p.len, 0);
	}
	if (rc == 0 && n >= s->nkey - 1 && !r->empty) {
		/* the stem is fixed: the ts interval is a key interval */
		size_t stem = n == s->nkey ? p.len - 8 : p.len;
		ts__put(&r->stem, p.data, stem);
		r->has_stem = 1;
		if (n == s->nkey - 1) {
			ts__key_put_ts(&p, r->tmin);
			ts__range_lower(r, p.data, p.len, 0);
			p.len = stem;
			ts__key_put_ts(&p, r->tmax);
			ts__range_upper(r, p.data, p.len, 0);
		}
	}
	if (rc == 0 && (p.oom || ts__range_oom(r)))
		rc = ts__fail(TS_ENOMEM, "out of memory");
	ts__buf_free(&p);
	return rc;
}

/* Note the key of the row being returned, for ts_cursor_resume. */
static int keep_key(struct ts_cursor *c, const void *key, size_t len)
{
	c->last_in_stem = 0;
	c->last_key.len = 0;
	ts__put(&c->last_key, key, len);
	return c->last_key.oom ? ts__fail(TS_ENOMEM, "out of memory") : 0;
}

/* keep_key for the row just decoded: when it went through the stem, its
 * ts alone (the key is the stem and the ts: ts__cursor_resume makes it). */
static int keep_row_key(struct ts_cursor *c, const void *key, size_t len)
{
	if (!c->row_in_stem)
		return keep_key(c, key, len);
	c->last_in_stem = 1;
	c->last_ts = ts__key_ts(key, len);
	return 0;
}

static void count_read(ts_table *t, uint64_t scanned, uint64_t returned)
{
	__atomic_add_fetch(&t->rows_scanned, scanned, __ATOMIC_RELAXED);
	__atomic_add_fetch(&t->rows_returned, returned, __ATOMIC_RELAXED);
}

/* ---- ts_query ---- */

typedef struct query_cursor {
	struct ts_cursor base;
	uint64_t limit, returned;
	int ended;
	int desc;
	int nproj;
	int *proj;                /* NULL: every column */
	ts_value *out;            /* the projected row */
} query_cursor;

static int query_next(struct ts_cursor *base, const ts_value **row, int *n)
{
	query_cursor *q = (query_cursor *)base;
	const ts__src *src;
	if (q->ended)
		return 0;
	int rc = ts__scan_next(&base->scan, &src);
	if (rc <= 0) {
		q->ended = 1;
		return rc;
	}
	if (q->limit && q->returned == q->limit) { /* one row more: cut */
		q->ended = 1;
		base->more = 1;
		return 0;
	}
	/* the row after one decoded through the stem in its version: the
	 * ts and the values alone (types and the stem's values are in
	 * place); keep_row_key's stem case */
	if (base->stem_vals && base->typed_version == src->version && src->version != 0 &&
	    ts__row_decode_stem_fixed(base->scan.snap.versions[src->version - 1],
	                              base->scan.snap.schema, src->row, src->rowlen, src->key,
	                              src->klen, &base->stem, base->vals) == 0) {
		base->last_in_stem = 1;
		base->last_ts = ts__key_ts(src->key, src->klen);
	} else if ((rc = ts__cursor_decode(base, src->version, src->row, src->rowlen, src->key,
	                                   src->klen)) < 0 ||
	           (rc = keep_row_key(base, src->key, src->klen)) < 0)
		return rc;
	q->returned++;
	if (!q->proj) {
		*row = base->vals;
		*n = base->scan.snap.schema->ncols;
		return 0;
	}
	for (int i = 0; i < q->nproj; i++)
		q->out[i] = base->vals[q->proj[i]];
	*row = q->out;
	*n = q->nproj;
	return 0;
}

static void query_destroy(struct ts_cursor *base)
{
	query_cursor *q = (query_cursor *)base;
	uint64_t scanned, summarised;
	ts__scan_counts(&base->scan, &scanned, &summarised);
	count_read(base->table, scanned, q->returned);
	free(q->proj);
	free(q->out);
}

static int query_rewind(struct ts_cursor *base)
{
	query_cursor *q = (query_cursor *)base;
	q->returned = 0;
	q->ended = 0;
	base->more = 0;
	base->last_key.len = 0;
	base->last_in_stem = 0;
	ts__scan_stop(&base->scan);
	return ts__scan_start(&base->scan, &base->range, q->desc, NULL);
}

/* The bounds of q other than its prefix and time. */
static int query_bounds(ts__range *r, const ts__schema *s, const ts_query *q)
{
	ts_buf b;
	unsigned char mem[TS__SHORT_KEY];
	int rc = 0;
	ts__buf_init_in(&b, mem, sizeof mem);
	if (q->lower && (rc = ts__bound_encode(s, q->lower, q->nlower, "lower", &b)) == 0)
		ts__range_lower_cols(r, b.data, b.len, q->lower_exclusive);
	if (rc == 0 && q->upper && (rc = ts__bound_encode(s, q->upper, q->nupper, "upper", &b)) == 0)
		ts__range_upper_cols(r, b.data, b.len, q->upper_exclusive);
	if (rc == 0 && q->after) {
		if (q->nafter != s->nkey)
			rc = ts__fail(TS_EINVAL, "after: a resume key needs all %d key columns, got %d",
			              s->nkey, q->nafter);
		else if ((rc = ts__bound_encode(s, q->after, q->nafter, "after", &b)) == 0 && !q->desc)
			ts__range_lower(r, b.data, b.len, 1);
		else if (rc == 0)
			ts__range_upper(r, b.data, b.len, 1);
	}
	if (rc == 0 && ts__range_oom(r))
		rc = ts__fail(TS_ENOMEM, "out of memory");
	ts__buf_free(&b);
	return rc;
}

static int query_setup(struct ts_cursor *base, const void *arg)
{
	query_cursor *c = (query_cursor *)base;
	const ts_query *q = arg;
	const ts__snapshot *s = &base->scan.snap;
	const ts__schema *schema = s->schema;
	c->limit = q->limit;
	c->desc = q->desc;
	base->rewind = query_rewind;
	if (q->columns) {
		if (q->ncolumns < 1 || q->ncolumns > TS_COLUMNS_MAX)
			return ts__fail(TS_EINVAL, "columns: %d columns projected", q->ncolumns);
		if (!(c->proj = malloc((size_t)q->ncolumns * sizeof *c->proj)) ||
		    !(c->out = malloc((size_t)q->ncolumns * sizeof *c->out)))
			return ts__fail(TS_ENOMEM, "out of memory");
		int keys = 0;
		for (int i = 0; i < q->ncolumns; i++) {
			if (q->columns[i] < 0 || q->columns[i] >= schema->ncols)
				return ts__fail(TS_ENOENT, "columns: no column %d (the table has %d)",
				                q->columns[i], schema->ncols);
			c->proj[i] = q->columns[i];
			keys |= schema->cols[q->columns[i]].key_pos >= 0 && q->columns[i] != schema->ts_col;
		}
		c->nproj = q->ncolumns;
		if (!keys) { /* decode only what is projected (ts comes from the key's end) */
			base->want = c->proj;
			base->nwant = c->nproj;
		}
	}
	int rc = ts__range_of_query(&base->range, schema, q, s->expiry);
	if (rc == 0)
		rc = ts__scan_start(&base->scan, &base->range, q->desc, NULL);
	return rc;
}

int ts__range_of_query(ts__range *r, const ts__schema *s, const ts_query *q, int64_t expiry)
{
	int64_t tmin = q->has_from ? q->from : INT64_MIN, tmax = INT64_MAX;
	if (q->has_to && !q->to_inclusive && q->to == INT64_MIN)
		r->empty = 1;
	else if (q->has_to)
		tmax = q->to_inclusive ? q->to : q->to - 1;
	if (expiry > tmin)
		tmin = expiry;
	int rc = ts__range_prefix(r, s, q->prefix, q->nprefix, tmin, tmax);
	return rc < 0 ? rc : query_bounds(r, s, q);
}

int ts__query_open(ts_table *table, const ts_query *q, ts_cursor **out)
{
	*out = NULL;
	if (!q)
		return ts__fail(TS_EINVAL, "no query");
	return ts__cursor_open(table, sizeof(query_cursor), query_next, query_destroy, query_setup,
	                       q, out);
}

/* ---- ts_latest ---- */

typedef struct latest_cursor {
	struct ts_cursor base;
	/* the answer, where it lies: in the log, which the snapshot pins,
	 * or in the tablet block held */
	const unsigned char *row;
	size_t rowlen;
	const void *key;          /* the answer's key, in row */
	size_t klen;
	ts__cblock *held;
	uint32_t version;
	uint64_t vlo, vhi;        /* of the stream the answer came from */
	int found, done;
} latest_cursor;

static int latest_next(struct ts_cursor *base, const ts_value **row, int *n)
{
	latest_cursor *l = (latest_cursor *)base;
	if (!l->found || l->done)
		return 0;
	l->done = 1;
	int rc = ts__cursor_decode(base, l->version, l->row, l->rowlen, l->key, l->klen);
	if (rc < 0)
		return rc;
	*row = base->vals;
	*n = base->scan.snap.schema->ncols;
	return 0;
}

static void latest_destroy(struct ts_cursor *base)
{
	ts__cblock_put(&base->table->db->bcache, ((latest_cursor *)base)->held);
}

/* The row of src is the best so far: point at it, holding its block.
 * last: src is read no further, and its reference to the block moves to
 * the cursor (one atomic add and subtract fewer than a second one). */
static void latest_hold(latest_cursor *l, ts__src *src, int last)
{
	ts__cblock *cb = src->tab ? src->cb : NULL;
	if (cb && last)
		src->cb = NULL; /* ts__src_free puts no block */
	else if (cb)
		ts__cblock_ref(cb);
	ts__cblock_put(&l->base.table->db->bcache, l->held);
	l->held = cb;
	l->row = src->row;
	l->rowlen = src->rowlen;
	l->key = src->key;
	l->klen = src->klen;
	l->version = src->version;
	l->vlo = src->vlo;
	l->vhi = src->vhi;
	l->found = 1;
}

/* A stream of the snapshot, for visiting by the newest ts it may hold. */
struct candidate {
	int tablet, i;
	int64_t max_ts;
};

/* Roots kept on the stack; a snapshot with more allocates. */
#define LATEST_STACK_ROOTS 32

static int newer_root(const void *a, const void *b, void *roots)
{
	const ts__root *rs = roots;
	int64_t x = rs[*(const int *)a].max_ts, y = rs[*(const int *)b].max_ts;
	return (x < y) - (x > y);
}

/* The indexes of the snapshot's roots into order[], newest first: the
 * few of a usual snapshot by insertion (glibc's qsort allocates), many
 * by qsort. */
static void roots_newest_first(const ts__snapshot *s, int *order)
{
	int n = (int)s->nroots;
	if (n > LATEST_STACK_ROOTS) {
		for (int i = 0; i < n; i++)
			order[i] = i;
		qsort_r(order, (size_t)n, sizeof *order, newer_root, s->roots);
		return;
	}
	for (int i = 0; i < n; i++) {
		int j = i;
		for (; j > 0 && s->roots[order[j - 1]].max_ts < s->roots[i].max_ts; j--)
			order[j] = order[j - 1];
		order[j] = i;
	}
}

/* The next stream newest first, merging the roots in order[] with the
 * tablets in the order their set keeps (*r and *k: how far each went).
 * Returns 0 when none is left. */
static int next_candidate(const ts__snapshot *s, const int *order, int *r, int *k,
                          struct candidate *c)
{
	int have_root = *r < (int)s->nroots, have_tab = *k < s->ntablets;
	const ts__root *root = have_root ? &s->roots[order[*r]] : NULL;
	const ts__tablet *tab = have_tab ? s->tablets[s->set->newest[*k]] : NULL;
	if (!root && !tab)
		return 0;
	if (root && (!tab || root->max_ts >= tab->max_ts))
		*c = (struct candidate){0, order[(*r)++], root->max_ts};
	else
		*c = (struct candidate){1, s->set->newest[(*k)++], tab->max_ts};
	return 1;
}

/* Whether the row of src beats the best so far: a greater ts, or the
 * same ts and a greater key -- or, with replaced rows, the same key in a newer
 * stream (the best so far is an older version of it). */
static int beats(const latest_cursor *l, const ts__src *src, int64_t best_ts)
{
	if (!l->found)
		return 1;
	int64_t ts = ts__key_ts(src->key, src->klen);
	if (ts != best_ts)
		return ts > best_ts;
	int c = ts__key_cmp(src->key, src->klen, l->base.last_key.data, l->base.last_key.len);
	if (c == 0 && l->base.scan.snap.replaced)
		return ts__newer(src->vlo, src->vhi, l->vlo, l->vhi);
	return c > 0;
}

static int latest_find(latest_cursor *l, int stem_fixed)
{
	ts__range *r = &l->base.range;
	const ts__snapshot *s = &l->base.scan.snap;
	int rc = 0, ri = 0, ki = 0;
	int64_t best_ts = INT64_MIN;
	uint64_t scanned = 0;
	int stack[LATEST_STACK_ROOTS], *order = stack;
	struct candidate cand;
	if (s->nroots > LATEST_STACK_ROOTS && !(order = malloc(s->nroots * sizeof *order)))
		return ts__fail(TS_ENOMEM, "out of memory");
	roots_newest_first(s, order);
	while (rc == 0 && next_candidate(s, order, &ri, &ki, &cand)) {
		ts__src src;
		if (l->found && cand.max_ts < best_ts)
			break; /* no stream left holds a newer row */
		/* older rows cannot win; with the stem fixed the range's lower
		 * key moves to the best ts, so that a stream whose key spans
		 * say it holds no newer row of the stem stops without reading
		 * its rows below it (docs/corrections.md section 2, Reads) */
		if (l->found && r->tmin < best_ts && (rc = ts__range_since(r, best_ts)) < 0)
			break;
		if (r->empty)
			continue;
		if ((rc = ts__src_init(&src, s, cand.tablet, cand.i, r, 1, NULL)) != 0) {
			rc = rc < 0 ? rc : 0;
			continue;
		}
		while ((rc = ts__src_next(&src)) == 1) {
			if (beats(l, &src, best_ts)) {
				best_ts = ts__key_ts(src.key, src.klen);
				latest_hold(l, &src, stem_fixed);
				if ((rc = keep_key(&l->base, src.key, src.klen)) < 0)
					break;
			}
			if (stem_fixed)
				break; /* descending: the stream's newest came first */
		}
		if (rc == 1)
			rc = 0; /* left after the stream's newest: the next stream may beat it
			         * (a row that did not beat the best: the same key, shadowed) */
		scanned += src.scanned;
		ts__src_free(&src);
	}
	if (order != stack)
		free(order);
	count_read(l->base.table, scanned, l->found);
	return rc < 0 ? rc : 0;
}

struct latest_args {
	const ts_value *prefix;
	int nprefix;
};

static int latest_setup(struct ts_cursor *base, const void *arg)
{
	const struct latest_args *a = arg;
	const ts__snapshot *s = &base->scan.snap;
	latest_cursor *l = (latest_cursor *)base;
	int rc = ts__range_prefix(&base->range, s->schema, a->prefix, a->nprefix, s->expiry,
	                          INT64_MAX);
	base->stem_state = -1; /* one row: decoding its key is cheaper than the stem */
	return rc < 0 ? rc : latest_find(l, a->nprefix >= s->schema->nkey - 1);
}

int ts__latest_open(ts_table *table, const ts_value *prefix, int nprefix, ts_cursor **out)
{
	struct latest_args a = {prefix, nprefix};
	return ts__cursor_open(table, sizeof(latest_cursor), latest_next, latest_destroy,
	                       latest_setup, &a, out);
}

/* ---- every cursor ---- */

int ts__cursor_next(ts_cursor *c, const ts_value **row, int *n)
{
	int dummy;
	*row = NULL;
	if (!n)
		n = &dummy;
	*n = 0;
	if (c->err)
		return c->err;
	int rc = c->next(c, row, n);
	if (rc < 0) {
		c->err = rc;
		*row = NULL;
		*n = 0;
	}
	return rc;
}

int ts__cursor_rewind(ts_cursor *c)
{
	if (!c->rewind)
		return ts__fail(TS_ENOTSUP, "only query cursors can be rewound");
	int rc = c->rewind(c);
	c->err = rc < 0 ? rc : 0;
	return rc;
}

int ts__cursor_more(const ts_cursor *c)
{
	return c->more;
}

int ts__cursor_resume(const ts_cursor *cur, const ts_value **key, int *nkey)
{
	/* Decoded on demand into the cursor's own buffers, which the caller
	 * cannot see change: logically const. */
	ts_cursor *c = (ts_cursor *)cur;
	*key = NULL;
	*nkey = 0;
	if (c->last_in_stem) { /* the stem and last_ts: encode the key now */
		c->last_key.len = 0;
		ts__put(&c->last_key, c->stem.data, c->stem.len);
		ts__key_put_ts(&c->last_key, c->last_ts);
		c->last_in_stem = 0;
		if (c->last_key.oom)
			return ts__fail(TS_ENOMEM, "out of memory");
	}
	if (c->last_key.len == 0)
		return ts__fail(TS_ENOENT, "no row was returned yet");
	const ts__schema *s = c->scan.snap.schema;
	if (!c->resume && !(c->resume = malloc(TS_KEY_COLUMNS_MAX * sizeof *c->resume)))
		return ts__fail(TS_ENOMEM, "out of memory");
	int rc = ts__key_decode(s, c->last_key.data, c->last_key.len, s->nkey, c->resume,
	                        &c->resume_scratch, NULL);
	if (rc < 0)
		return rc;
	*key = c->resume;
	*nkey = s->nkey;
	return 0;
}

const char *ts_cursor_source(const ts_cursor *c)
{
	if (!c) {
		ts__fail(TS_EINVAL, "ts_cursor_source: cursor is NULL");
		return NULL;
	}
	return c->source[0] ? c->source : NULL;
}

void ts_cursor_close(ts_cursor *c)
{
	if (!c)
		return;
	if (c->destroy)
		c->destroy(c);
	ts__scan_close(&c->scan);
	ts__range_free(&c->range);
	ts__buf_free(&c->scratch);
	ts__buf_free(&c->stem_scratch);
	if (c->vals != c->vals_mem)
		free(c->vals);
	free(c->resume);
	ts__buf_free(&c->last_key);
	ts__buf_free(&c->resume_scratch);
	ts_table *t = c->table;
	cursor_free(t, c);
	ts__table_unhold(t, 1);
}
