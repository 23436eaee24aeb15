/*
 * rollup_route.c -- aggregates answered from rollups (docs/rollups.md
 * section 3): ts_aggregate_open over a table T that has a rollup fit for
 * the request reads the rollup's rows for the windows it holds exactly,
 * and T's rows for the others, when that costs less than T's rows alone
 * (a cost model over both tables' blocks: T's blocks that lie inside one
 * window are answered from their statistics, so a month of raw rows at
 * one-hour windows costs a footer entry per host-hour, not its rows).
 *
 * A rollup R of T -- built on T, or on a rollup of T (1m -> 1h -> 1d),
 * CHAIN_MAX links at most -- fits a request (every E, group G, prefix P,
 * functions F) when its every divides E, its group is at least G and at least P's
 * length, and its columns give F (count from X_count, sum from X_sum,
 * min, max, mean from X_sum and X_count, first and last from X_first and
 * X_last when its group is G).  Of those the coarsest answers:
 *
 *   - the whole E-windows of [from, to) that begin at or after R's own
 *     expiry, and that no commit of T after R's watermark W touched
 *     (ts_changes_open(T, since W) at resolution E, depth G: reported
 *     windows are over-reported, never missed), from R's rows combined
 *     over E and over the groups beyond G.  For R2 built on R1 built on
 *     T, the windows that commits of T after W1 (R1's watermark on T)
 *     or commits of R1 after W2 (R2's on R1) touched are left out: R1's
 *     row of any other window is exact, and R2's was combined from R1's
 *     rows as they still are; and so on down a longer chain;
 *   - every other window -- the range's cut edges, windows R no longer
 *     keeps, windows changed since W -- from T's rows, as without
 *     rollups.
 *
 * The pieces are disjoint in (group, window), so the answer is their
 * union, in an aggregate's order (group key, then window): T's pieces --
 * a few windows per group -- are gathered and sorted, and merged with
 * R's windows as an aggregate over R streams them.  Anything that keeps
 * the route from working -- no rollup fits, a watermark is 0, too many
 * windows changed since (RAW_WINDOWS_MAX), an error -- answers from T's rows
 * alone: the route is an optimisation, never a different answer for a
 * window inside T's TTL (sums of doubles aside, in their last bits, as
 * block summaries already differ).  Windows that began before T's TTL
 * horizon but are still in R are answered from R: that is what the
 * rollup is kept for.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "cursor.h"
#include "error.h"
#include "descriptor_format.h"
#include "handle.h"
#include "lifetime.h"
#include "log.h"
#include "period.h"
#include "rollupdef.h"
#include "schema.h"
#include "snapshot.h"
#include "tabledesc.h"

/* More raw windows than this (changed since the watermark) and the
 * rollup is not used: each costs an aggregate of its own. */
#define RAW_WINDOWS_MAX 1024

/* How output spec k is made from the rollup's aggregate columns. */
struct part {
	ts_aggfn fn;      /* the request's */
	int a, b;         /* indexes into the rollup specs (b: mean's count) */
};

/* Rollups of rollups followed at most this deep (1m -> 1h -> 1d is 3). */
#define CHAIN_MAX 4

/* The route chosen: the rollup, its specs, how to assemble.  The rollup
 * r is built on link[nlinks - 1], which is built on link[nlinks - 2] ...
 * on link[0] = t; since[i] is the watermark of the rollup built on
 * link[i] (the version of link[i] through which it is exact).  r and
 * link[1..nlinks) are held. */
struct route {
	struct ts_table *r;
	uint64_t watermark;
	struct ts_table *link[CHAIN_MAX];
	uint64_t since[CHAIN_MAX];
	int nlinks;
	int64_t every;
	int group;
	ts_aggspec *rspecs;
	int nrspecs;
	struct part *parts;
};

int ts__route_force = 0;

/* The cost model of the choice between a rollup and the raw rows, in
 * nanoseconds of the machine the figures were measured on (bench
 * workload rollups, docs/rollups.md section 3): what an aggregate pays
 * per row it reads and folds, per block it answers from the block's
 * statistics, and per ts_changes_open of the route's links.  Both paths
 * yield the same windows, so what a window of the answer costs is left
 * out. */
#define COST_ROW 55.0
#define COST_BLOCK 25.0
#define COST_CHANGES 20000.0
/* Blocks of one tablet looked at, at most: the others in proportion. */
#define COST_SAMPLE 256u

/* What an aggregate at windows of every over [from, to) of t costs,
 * estimated from its blocks (a sample of each tablet's) and its filling
 * tablets' rows: a block lying inside one window costs COST_BLOCK when
 * summaries may answer it, any other COST_ROW a row, in proportion to
 * its overlap. */
static double est_cost(struct ts_table *t, int64_t from, int64_t to, int64_t every,
                       int summaries)
{
	ts__snapshot s;
	double cost = 0;
	if (from >= to)
		return 0;
	if (ts__snapshot_take(t, &s) < 0) {
		ts__clear_error();
		return 0;
	}
	for (int i = 0; i < s.ntablets; i++) {
		const ts__tablet_meta *m = &s.metas[i];
		const ts__tablet *tab = s.tablets[i];
		if (m->max_ts < from || m->min_ts >= to || !tab || !tab->nblocks)
			continue;
		uint32_t step = tab->nblocks / COST_SAMPLE + 1;
		double c = 0;
		for (uint32_t b = 0; b < tab->nblocks; b += step) {
			const ts__tablet_block *k = &tab->blocks[b];
			if (k->max_ts < from || k->min_ts >= to)
				continue;
			if (summaries && k->min_ts >= from && k->max_ts < to &&
			    ts__floor_multiple(k->min_ts, every) == ts__floor_multiple(k->max_ts, every)) {
				c += COST_BLOCK;
				continue;
			}
			int64_t lo = k->min_ts > from ? k->min_ts : from;
			int64_t hi = k->max_ts < to - 1 ? k->max_ts : to - 1;
			double part = (double)k->rows * ((double)(hi - lo) + 1) /
			              ((double)(k->max_ts - k->min_ts) + 1);
			c += COST_ROW * part;
		}
		cost += c * step;
	}
	for (uint32_t i = 0; i < s.nroots; i++) {
		const ts__root *r = &s.roots[i];
		int64_t lo = r->min_ts > from ? r->min_ts : from;
		int64_t hi = r->max_ts < to - 1 ? r->max_ts : to - 1;
		if (r->rows && lo <= hi) {
			double part = (double)r->rows * ((double)(hi - lo) + 1) /
			              ((double)(r->max_ts - r->min_ts) + 1);
			cost += COST_ROW * part;
		}
	}
	ts__snapshot_release(&s);
	return cost;
}

/* Whether the route rt pays for req over t: always when the range
 * reaches past t's TTL (history only the rollup keeps) or when
 * ts__route_force is set; otherwise when the cost model (est_cost) says
 * the rollup's rows over the whole windows, the raw edges and the
 * changes cost less than t's rows over the range -- blocks of t lying
 * inside one window are answered from their statistics (not when first
 * or last is asked, nor when t may hold replaced rows), so t's rows may
 * cost less than a rollup's whose blocks span several windows. */
static int pays(struct ts_table *t, const struct route *rt, const ts_aggregate *req)
{
	if (ts__route_force)
		return 1;
	int summaries = 1, replaced = 0;
	for (int k = 0; k < req->nspecs; k++)
		if (req->specs[k].fn == TS_AGG_FIRST || req->specs[k].fn == TS_AGG_LAST)
			summaries = 0;
	int64_t expiry = INT64_MIN, e = req->every;
	if (ts__table_lock(t) == 0) {
		replaced = (t->desc->flags & TS_DESC_REPLACED) != 0;
		expiry = ts__table_expiry(t, ts_now(t->db));
		ts__table_unlock(t);
	}
	ts__clear_error();
	if (req->from < expiry)
		return 1;
	int64_t first = ts__floor_multiple(req->from, e), last = ts__floor_multiple(req->to, e);
	if (first < req->from)
		first += e;
	if (first >= last)
		return 0;
	int raw_summaries = summaries && !replaced;
	double raw = est_cost(t, req->from, req->to, e, raw_summaries);
	double route = est_cost(rt->r, first, last, e, summaries);
	route += est_cost(t, req->from, first, e, raw_summaries);
	route += est_cost(t, last, req->to, e, raw_summaries);
	route += COST_CHANGES * rt->nlinks;
	return route < raw;
}

/* A gathered row: values, strings copied. */
struct grow {
	ts_value *v;
	char **own;
};

/* The route's answer: the raw pieces (the cut edges, the windows
 * changed since the watermarks), gathered and sorted -- a few windows per
 * group at most -- merged with the rollup's windows, streamed from an
 * aggregate over the rollup as they come (in the same order: group key,
 * then window). */
typedef struct route_cursor {
	struct ts_cursor base;
	int width;                /* group + 1 + nspecs */
	int group, nspecs;
	struct grow *rows;        /* the raw pieces, sorted */
	size_t nrows, cap, next;
	ts_cursor *roll;          /* the rollup's windows; NULL once ended */
	struct part *parts;       /* how out is made from roll's rows */
	struct touched *tw;       /* the windows left to the raw rows, sorted */
	size_t ntw;
	ts_value *out;            /* roll's current row, assembled */
	int have;                 /* out holds a row not returned yet */
	char *key;                /* scratch: a group's key */
	size_t keycap;
} route_cursor;

static int column_of(const ts_schema *s, const char *name)
{
	for (int i = 0; i < s->ncolumns; i++)
		if (strcmp(s->columns[i].name, name) == 0)
			return i;
	return -1;
}

/* The index of rollup column X_FN in rs, or -1. */
static int rcol(const ts_schema *rs, const char *x, ts_aggfn fn)
{
	char name[2 * TS_NAME_MAX + 8];
	snprintf(name, sizeof name, "%s_%s", x, ts_aggfn_name(fn));
	return column_of(rs, name);
}

/* Whether rollup r (held, definition d, schema rs) fits req over t's
 * schema ts; when it does, fill rt's specs and parts. */
static int fits(const ts__rollup_def *d, const ts_schema *rs, const ts_schema *ts,
                const ts_aggregate *req, struct route *rt)
{
	if (req->every % d->every != 0 || req->group > d->group || req->nprefix > d->group || req->nspecs < 1)
		return 0;
	ts_aggspec *sp = calloc((size_t)req->nspecs * 2, sizeof *sp);
	struct part *pt = calloc((size_t)req->nspecs, sizeof *pt);
	int n = 0, ok = sp && pt;
	for (int k = 0; ok && k < req->nspecs; k++) {
		int c = req->specs[k].column;
		ts_aggfn fn = req->specs[k].fn;
		if (c < 0 || c >= ts->ncolumns) {
			ok = 0;
			break;
		}
		const char *x = ts->columns[c].name;
		pt[k].fn = fn;
		pt[k].b = -1;
		switch (fn) {
		case TS_AGG_COUNT:
		case TS_AGG_SUM:
			sp[n] = (ts_aggspec){rcol(rs, x, fn), TS_AGG_SUM};
			break;
		case TS_AGG_MIN:
		case TS_AGG_MAX:
			sp[n] = (ts_aggspec){rcol(rs, x, fn), fn};
			break;
		case TS_AGG_FIRST:
		case TS_AGG_LAST:
			sp[n] = (ts_aggspec){d->group == req->group ? rcol(rs, x, fn) : -1, fn};
			break;
		case TS_AGG_MEAN:
			sp[n] = (ts_aggspec){rcol(rs, x, TS_AGG_SUM), TS_AGG_SUM};
			sp[n + 1] = (ts_aggspec){rcol(rs, x, TS_AGG_COUNT), TS_AGG_SUM};
			pt[k].b = n + 1;
			ok = sp[n + 1].column >= 0;
			break;
		default:
			ok = 0;
		}
		pt[k].a = n;
		ok = ok && sp[n].column >= 0;
		n += pt[k].b >= 0 ? 2 : 1;
	}
	if (!ok) {
		free(sp);
		free(pt);
		return 0;
	}
	rt->rspecs = sp;
	rt->nrspecs = n;
	rt->parts = pt;
	rt->every = d->every;
	rt->group = d->group;
	return 1;
}

static void route_free(struct route *rt)
{
	if (rt->r)
		ts__table_unhold(rt->r, 0);
	for (int j = 1; j < rt->nlinks; j++)
		ts__table_unhold(rt->link[j], 0);
	free(rt->rspecs);
	free(rt->parts);
	memset(rt, 0, sizeof *rt);
}

/* The rollup x's chain down to t: chain[0] = x, chain[i + 1] the source
 * of chain[i], the last a rollup of t itself, all among the n tables of
 * all.  Returns the chain's length, or 0 when x is not built on t within
 * CHAIN_MAX links (or its source is not loaded). */
static int chain_of(struct ts_table *t, struct ts_table *x, struct ts_table *const *all, int n,
                    struct ts_table **chain)
{
	int k = 0;
	for (;;) {
		chain[k++] = x;
		const char *src = x->rollup->def.source;
		if (strcmp(src, t->name) == 0)
			return k;
		if (k == CHAIN_MAX)
			return 0;
		x = NULL;
		for (int j = 0; j < n && !x; j++)
			if (strcmp(all[j]->name, src) == 0)
				x = all[j];
		if (!x)
			return 0;
	}
}

/* The coarsest loaded rollup of t -- built on t directly or through
 * other rollups -- that fits req, its chain held, in *rt.  Returns 1, or
 * 0 when none does. */
static int choose(struct ts_table *t, const ts_aggregate *req, struct route *rt)
{
	ts_db *db = t->db;
	struct ts_table *all[64];
	int n = 0;
	memset(rt, 0, sizeof *rt);
	pthread_mutex_lock(&db->mu);
	for (struct ts_table *x = db->tables; x && n < 64; x = x->next)
		if (x->rollup && !ts__table_dropped(x)) {
			ts__table_hold(x, 0);
			all[n++] = x;
		}
	pthread_mutex_unlock(&db->mu);
	if (n == 0)
		return 0;
	ts_schema *ts = NULL;
	int found = ts__table_schema(t, &ts) == 0;
	for (int i = 0; found && i < n; i++) {
		ts__rollup *r = all[i]->rollup;
		struct ts_table *chain[CHAIN_MAX];
		struct route c;
		ts_schema *rs;
		int k;
		memset(&c, 0, sizeof c);
		if (req->every % r->def.every != 0 || (rt->r && r->def.every <= rt->every))
			continue; /* the coarsest answers */
		if ((k = chain_of(t, all[i], all, n, chain)) == 0)
			continue;
		/* the watermarks, t's rollup's first: none may be 0 */
		uint64_t w[CHAIN_MAX];
		int ok = 1;
		for (int j = 0; j < k; j++) {
			ts__rollup *cr = chain[k - 1 - j]->rollup;
			if (ts__db_readonly(db))
				ts__rollup_reload_watermark(chain[k - 1 - j]->dir, cr);
			pthread_mutex_lock(&cr->mu);
			w[j] = cr->def.watermark;
			pthread_mutex_unlock(&cr->mu);
			ok = ok && w[j] != 0;
		}
		if (!ok || ts__table_schema(all[i], &rs) < 0)
			continue;
		if (fits(&r->def, rs, ts, req, &c)) {
			route_free(rt);
			*rt = c;
			rt->r = all[i];
			rt->watermark = w[k - 1];
			rt->nlinks = k;
			rt->link[0] = t;
			for (int j = 0; j < k; j++) {
				rt->since[j] = w[j];
				if (j > 0) /* link[j], a rollup between t and r: held */
					rt->link[j] = chain[k - j];
				ts__table_hold(chain[k - 1 - j], 0);
			}
		}
		ts_schema_free(rs);
	}
	ts_schema_free(ts);
	for (int i = 0; i < n; i++)
		ts__table_unhold(all[i], 0);
	ts__clear_error();
	return rt->r != NULL;
}

/* ---- the touched windows ---- */

/* A (group, window) changed since the watermark: the group's values
 * serialised (type, then bytes or integer) and the window's start. */
struct touched {
	char *key;
	size_t len;
	int64_t start;
	ts_value *vals;   /* the group's values (pointing into key's copy) */
};

static size_t group_key(const ts_value *v, int n, char *out, size_t room)
{
	size_t len = 0;
	for (int i = 0; i < n; i++) {
		size_t need = 1 + (v[i].type == TS_STRING || v[i].type == TS_BLOB ? 8 + v[i].v.s.len : 8);
		if (out && len + need <= room) {
			out[len] = (char)v[i].type;
			if (v[i].type == TS_STRING || v[i].type == TS_BLOB) {
				uint64_t l = v[i].v.s.len;
				memcpy(out + len + 1, &l, 8);
				memcpy(out + len + 9, v[i].v.s.ptr, v[i].v.s.len);
			} else {
				memcpy(out + len + 1, &v[i].v, 8);
			}
		}
		len += need;
	}
	return len;
}

static int cmp_touched(const void *a, const void *b)
{
	const struct touched *x = a, *y = b;
	size_t n = x->len < y->len ? x->len : y->len;
	int c = n ? memcmp(x->key, y->key, n) : 0;
	if (c)
		return c;
	if (x->len != y->len)
		return x->len < y->len ? -1 : 1;
	return (x->start > y->start) - (x->start < y->start);
}

/* Append to *tw (*ntw of *captw) the windows of [first, last) that
 * commits of src after version since touched: ts_changes_open(src, since) at
 * resolution e and depth g.  Returns 0; TS_ENOTSUP past RAW_WINDOWS_MAX
 * windows in all; or the failure. */
static int touched_since(struct ts_table *src, uint64_t since, int64_t e, int g, int64_t first,
                         int64_t last, struct touched **tw, size_t *ntw, size_t *captw)
{
	ts_changes_spec cs = {.since = since, .resolution = e, .depth = g};
	ts_cursor *ch;
	int rc = ts__changes_open(src, &cs, &ch);
	if (rc < 0)
		return rc;
	for (const ts_value *v; rc == 0;) {
		int n;
		if ((rc = ts__cursor_next(ch, &v, &n)) < 0 || !v)
			break;
		int fixed = 0;
		while (fixed < g && v[fixed].type != TS_NONE)
			fixed++;
		if (fixed < g) {
			/* a wildcard row (a delete of several groups): which
			 * groups' windows it emptied is not known here */
			rc = TS_ENOTSUP;
			break;
		}
		int64_t from = v[g].v.i, to = v[g + 1].v.i;
		if (from < first)
			from = first;
		if (to > last)
			to = last;
		for (int64_t s = from; rc == 0 && s < to; s += e) {
			if (*ntw == RAW_WINDOWS_MAX) {
				rc = TS_ENOTSUP; /* too many changed since: the raw rows */
				break;
			}
			if (*ntw == *captw) {
				size_t cap = *captw ? 2 * *captw : 16;
				struct touched *x = realloc(*tw, cap * sizeof *x);
				if (!x) {
					rc = ts__fail(TS_ENOMEM, "out of memory");
					break;
				}
				*tw = x;
				*captw = cap;
			}
			size_t len = group_key(v, g, NULL, 0);
			struct touched *x = &(*tw)[*ntw];
			x->len = len;
			x->start = s;
			x->key = malloc(len + 1);
			x->vals = malloc((size_t)(g + 1) * sizeof *x->vals);
			if (!x->key || !x->vals) {
				free(x->key);
				free(x->vals);
				rc = ts__fail(TS_ENOMEM, "out of memory");
				break;
			}
			group_key(v, g, x->key, len);
			/* the values again, their strings pointing into key */
			for (int i = 0, at = 0; i < g; i++) {
				x->vals[i] = v[i];
				at += 1;
				if (v[i].type == TS_STRING || v[i].type == TS_BLOB) {
					x->vals[i].v.s.ptr = x->key + at + 8;
					at += 8 + (int)v[i].v.s.len;
				} else {
					at += 8;
				}
			}
			++*ntw;
		}
	}
	ts_cursor_close(ch);
	return rc;
}

/* ---- gathering rows ---- */

static int keep_row(route_cursor *c, const ts_value *v)
{
	if (c->nrows == c->cap) {
		size_t cap = c->cap ? 2 * c->cap : 64;
		struct grow *g = realloc(c->rows, cap * sizeof *g);
		if (!g)
			return ts__fail(TS_ENOMEM, "out of memory");
		c->rows = g;
		c->cap = cap;
	}
	struct grow *g = &c->rows[c->nrows];
	size_t w = (size_t)c->width;
	g->v = malloc(w * sizeof *g->v);
	g->own = calloc(w, sizeof *g->own);
	if (!g->v || !g->own) {
		free(g->v);
		free(g->own);
		return ts__fail(TS_ENOMEM, "out of memory");
	}
	for (size_t i = 0; i < w; i++) {
		g->v[i] = v[i];
		if (v[i].type == TS_STRING || v[i].type == TS_BLOB) {
			if (!(g->own[i] = malloc(v[i].v.s.len + 1))) {
				for (size_t j = 0; j < i; j++)
					free(g->own[j]);
				free(g->v);
				free(g->own);
				return ts__fail(TS_ENOMEM, "out of memory");
			}
			memcpy(g->own[i], v[i].v.s.ptr, v[i].v.s.len);
			g->v[i].v.s.ptr = g->own[i];
		}
	}
	c->nrows++;
	return 0;
}

/* Every row of the raw aggregate of t over [from, to) with prefix. */
static int gather_raw(route_cursor *c, struct ts_table *t, const ts_aggregate *req,
                      const ts_value *prefix, int nprefix, int64_t from, int64_t to)
{
	if (from >= to)
		return 0;
	ts_aggregate q = *req;
	q.prefix = prefix;
	q.nprefix = nprefix;
	q.from = from;
	q.to = to;
	ts_cursor *a;
	int rc = ts__aggregate_open_raw(t, &q, &a);
	for (const ts_value *v; rc == 0;) {
		int n;
		if ((rc = ts__cursor_next(a, &v, &n)) < 0 || !v)
			break;
		rc = keep_row(c, v);
	}
	if (a)
		ts_cursor_close(a);
	return rc;
}

/* The rollup's next window that is not left to the raw rows, assembled
 * into the request's specs in c->out.  Returns 1, 0 at the end (roll is
 * closed), or the failure. */
static int roll_next(route_cursor *c)
{
	int g = c->group;
	for (;;) {
		const ts_value *v;
		int n, rc = ts__cursor_next(c->roll, &v, &n);
		if (rc < 0)
			return rc;
		if (!v) {
			ts_cursor_close(c->roll);
			c->roll = NULL;
			return 0;
		}
		if (c->ntw) {
			size_t len = group_key(v, g, NULL, 0);
			if (len > c->keycap) {
				char *k = realloc(c->key, len);
				if (!k)
					return ts__fail(TS_ENOMEM, "out of memory");
				c->key = k;
				c->keycap = len;
			}
			group_key(v, g, c->key, c->keycap);
			struct touched probe = {c->key, len, v[g].v.i, NULL};
			if (bsearch(&probe, c->tw, c->ntw, sizeof *c->tw, cmp_touched))
				continue; /* answered from the raw rows */
		}
		memcpy(c->out, v, (size_t)(g + 1) * sizeof *c->out);
		for (int k = 0; k < c->nspecs; k++) {
			const struct part *p = &c->parts[k];
			ts_value *o = &c->out[g + 1 + k];
			*o = v[g + 1 + p->a];
			if (p->fn == TS_AGG_MEAN) {
				const ts_value *s = &v[g + 1 + p->a], *cn = &v[g + 1 + p->b];
				double sum = s->type == TS_DOUBLE ? s->v.d : (double)s->v.i;
				*o = ts_double(cn->v.i == 0 ? NAN : sum / (double)cn->v.i);
			}
		}
		return 1;
	}
}

/* ---- the cursor ---- */

static int cmp_value(const ts_value *a, const ts_value *b)
{
	if (a->type == TS_STRING || a->type == TS_BLOB) {
		size_t n = a->v.s.len < b->v.s.len ? a->v.s.len : b->v.s.len;
		int c = n ? memcmp(a->v.s.ptr, b->v.s.ptr, n) : 0;
		return c ? c : (a->v.s.len > b->v.s.len) - (a->v.s.len < b->v.s.len);
	}
	if (a->type == TS_DOUBLE)
		return (a->v.d > b->v.d) - (a->v.d < b->v.d);
	return (a->v.i > b->v.i) - (a->v.i < b->v.i);
}

/* Rows a and b in the answer's order: the group's values, then the
 * window. */
static int cmp_vals(const ts_value *a, const ts_value *b, int g)
{
	for (int i = 0; i <= g; i++) {
		int c = cmp_value(&a[i], &b[i]);
		if (c)
			return c;
	}
	return 0;
}

static int cmp_rows(const void *x, const void *y, void *arg)
{
	const struct grow *a = x, *b = y;
	return cmp_vals(a->v, b->v, *(const int *)arg);
}

static int route_next(struct ts_cursor *base, const ts_value **row, int *n)
{
	route_cursor *c = (route_cursor *)base;
	if (!c->have && c->roll) {
		int rc = roll_next(c);
		if (rc < 0)
			return rc;
		c->have = rc;
	}
	if (c->have && (c->next == c->nrows || cmp_vals(c->out, c->rows[c->next].v, c->group) < 0)) {
		c->have = 0;
		*row = c->out;
	} else if (c->next < c->nrows) {
		*row = c->rows[c->next++].v;
	} else {
		return 0;
	}
	*n = c->width;
	return 0;
}

static void route_destroy(struct ts_cursor *base)
{
	route_cursor *c = (route_cursor *)base;
	for (size_t i = 0; i < c->nrows; i++) {
		for (int j = 0; j < c->width; j++)
			free(c->rows[i].own[j]);
		free(c->rows[i].v);
		free(c->rows[i].own);
	}
	free(c->rows);
	if (c->roll)
		ts_cursor_close(c->roll);
	for (size_t i = 0; i < c->ntw; i++) {
		free(c->tw[i].key);
		free(c->tw[i].vals);
	}
	free(c->tw);
	free(c->parts);
	free(c->out);
	free(c->key);
}

struct route_arg {
	const ts_aggregate *req;
	const struct route *rt;
};

static int route_setup(struct ts_cursor *base, const void *arg)
{
	route_cursor *c = (route_cursor *)base;
	const struct route_arg *ra = arg;
	const ts_aggregate *req = ra->req;
	const struct route *rt = ra->rt;
	struct ts_table *t = base->table;
	int64_t e = req->every;
	int g = req->group;
	c->width = req->group + 1 + req->nspecs;
	c->group = req->group;
	snprintf(base->source, sizeof base->source, "%s", rt->r->name);
	/* the whole windows of the range that the rollup still keeps */
	int64_t first = ts__floor_multiple(req->from, e), last = ts__floor_multiple(req->to, e);
	if (first < req->from)
		first += e;
	int rc = ts__table_lock(rt->r);
	if (rc < 0)
		return rc;
	int64_t kept = ts__table_expiry(rt->r, ts_now(t->db));
	ts__table_unlock(rt->r);
	if (kept > first && kept != INT64_MIN) {
		int64_t k = ts__floor_multiple(kept, e);
		first = k < kept ? k + e : k;
	}
	if (first >= last)
		return TS_ENOTSUP; /* no whole window the rollup keeps: the raw rows */
	/* the windows changed since the watermarks: commits of t after the
	 * first rollup's watermark, of each rollup of the chain after the
	 * watermark of the rollup built on it */
	struct touched *tw = NULL;
	size_t ntw = 0, captw = 0;
	for (int j = 0; rc == 0 && j < rt->nlinks; j++)
		rc = touched_since(rt->link[j], rt->since[j], e, g, first, last, &tw, &ntw, &captw);
	if (rc == 0 && ntw) {
		qsort(tw, ntw, sizeof *tw, cmp_touched);
		size_t k = 0; /* the same window from two links: once */
		for (size_t i = 0; i < ntw; i++)
			if (k > 0 && cmp_touched(&tw[k - 1], &tw[i]) == 0) {
				free(tw[i].key);
				free(tw[i].vals);
			} else {
				tw[k++] = tw[i];
			}
		ntw = k;
	}
	/* the touched windows that the request's prefix keeps: from the rows */
	for (size_t i = 0; rc == 0 && i < ntw; i++) {
		int np = req->nprefix < g ? req->nprefix : g, match = 1;
		for (int j = 0; j < np && match; j++)
			match = cmp_value(&tw[i].vals[j], &req->prefix[j]) == 0 &&
			        tw[i].vals[j].type == req->prefix[j].type;
		if (!match)
			continue;
		const ts_value *p = req->nprefix > g ? req->prefix : tw[i].vals;
		int pn = req->nprefix > g ? req->nprefix : g;
		rc = gather_raw(c, t, req, p, pn, tw[i].start, tw[i].start + e);
	}
	if (rc == 0)
		rc = gather_raw(c, t, req, req->prefix, req->nprefix, req->from, first);
	if (rc == 0)
		rc = gather_raw(c, t, req, req->prefix, req->nprefix, last, req->to);
	c->tw = tw; /* the cursor's now, freed with it */
	c->ntw = ntw;
	if (rc < 0)
		return rc;
	int gg = c->group;
	if (c->nrows > 1)
		qsort_r(c->rows, c->nrows, sizeof *c->rows, cmp_rows, &gg);
	/* the rollup's windows, streamed by route_next */
	ts_aggregate q = {.prefix = req->prefix, .nprefix = req->nprefix, .from = first, .to = last,
	                  .every = e, .group = g, .specs = rt->rspecs, .nspecs = rt->nrspecs};
	c->nspecs = req->nspecs;
	if (!(c->parts = malloc((size_t)req->nspecs * sizeof *c->parts)) ||
	    !(c->out = malloc((size_t)c->width * sizeof *c->out)))
		return ts__fail(TS_ENOMEM, "out of memory");
	memcpy(c->parts, rt->parts, (size_t)req->nspecs * sizeof *c->parts);
	return ts__aggregate_open_raw(rt->r, &q, &c->roll);
}

int ts__aggregate_routed(struct ts_table *t, const ts_aggregate *req, ts_cursor **out)
{
	struct route rt;
	*out = NULL;
	if (!req || req->every <= 0 || req->from >= req->to || req->group < 0 ||
	    (req->nprefix > 0 && !req->prefix) || (req->nspecs > 0 && !req->specs))
		return 0;
	for (int i = 0; i < req->nprefix; i++)
		if (req->prefix[i].type == TS_NONE)
			return 0;
	if (!choose(t, req, &rt))
		return 0;
	if (!pays(t, &rt, req)) {
		route_free(&rt);
		return 0;
	}
	struct route_arg ra = {req, &rt};
	int rc = ts__cursor_open(t, sizeof(route_cursor), route_next, route_destroy, route_setup,
	                         &ra, out);
	route_free(&rt);
	if (rc < 0) { /* not worth it (TS_ENOTSUP), or failed: the raw rows answer */
		*out = NULL;
		ts__clear_error();
		return 0;
	}
	return 1;
}
