/*
 * influxq.c -- the InfluxQL executor of GET|POST /query: a q parsed by
 * wire/influxql.c (influxql.h), each statement run against the tables of
 * the daemon's one database, and the answer written in InfluxDB 1.x's
 * JSON ({"results":[{"statement_id":0,"series":[...]}]}).
 *
 * The tables are read as the line protocol ingest makes them
 * (docs/ingest-mapping.md): a measurement is a table; its key columns
 * before `ts` are the tags (strings, sorted by name); the other columns
 * are the fields (double: float, int64: integer, int32: boolean -- the
 * ingest makes int32 columns only from booleans --, string: string).  A
 * float field's NaN (what an absent field reads as) is null.
 *
 * How a SELECT runs (docs/influxql.md section 3):
 *   1. the WHERE splits at its top-level ANDs into the time range (time
 *      compared with now(), time strings, epoch integers and durations,
 *      +/- durations; time comparisons under an OR too, as InfluxDB
 *      1.6 takes them: without_time) and the rest, a condition on tags
 *      and fields;
 *   2. the table's series (its distinct tag value sets) are listed by a
 *      skip scan: one ts_query with limit 1 per series, each starting
 *      just past the previous series' tags (list_series), and kept in
 *      the series cache until the table's log moves;
 *   3. the conjuncts that name only tags pick the series; each picked
 *      series is read with ts_query over its full tag prefix and the time
 *      range, in time order (descending for ORDER BY time DESC, stopping
 *      once LIMIT + OFFSET rows passed: TSBS's lastpoint), the other
 *      conjuncts filtering its rows;
 *   4. rows fall into output series (the GROUP BY tags' values) and, for
 *      aggregates, windows (GROUP BY time(d, offset)), whose accumulators
 *      compute mean, min, max, sum, count, first, last, spread, stddev
 *      and percentile (and keep the fields and tags beside a selector at
 *      its point); windows of an hour and more of count, sum, min, max
 *      and mean come from ts_aggregate instead, whole blocks from their
 *      statistics (agg_series); fill() then completes the windows;
 *   5. output series sorted by their tags, SLIMIT/SOFFSET, the rows of
 *      each ordered, LIMIT/OFFSET, and the JSON written.
 * Aggregates with GROUP BY time() go through the window cache ("The
 * window cache" below, docs/influxql.md section 3.1): the whole windows
 * it holds for the query's shape and the table's state are served from
 * it, steps 3 and 4 read only the rest, and the whole windows computed
 * are kept for the next query.
 * A FROM of several measurements or a /regex/ runs these steps once per
 * table it names, in name order (run_select), as InfluxDB 1.6 does.
 * SHOW statements are answered from the schemas and the series lists.
 *
 * Everything a statement makes lives in its arena (struct xa), freed
 * whole when the statement is answered, with the tables it opened.  No
 * state outlives a request but the names CREATE DATABASE was given (SHOW
 * DATABASES lists them), the series cache and the window cache, each
 * under its mutex: requests run on several worker threads at once.
 */
#include <math.h>
#include <pthread.h>
#include <regex.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "influxq.h"
#include "ingest.h"
#include "json.h"
#include "wire/influxql.h"

#define ERR_MAX 512
/* The database SHOW DATABASES always lists. */
#define DEFAULT_DB "tsstore"
/* Names CREATE DATABASE remembers (for SHOW DATABASES), at most. */
#define CREATED_MAX 64

/* ---- Arena ---- */

struct xblock {
	struct xblock *next;
	size_t used, cap;
	char mem[];
};

/* A statement's memory: blocks freed together (xa_free). */
struct xa {
	struct xblock *head;
	int failed;
};

/* n zeroed bytes from the arena, or NULL (failed set). */
static void *xa_alloc(struct xa *a, size_t n)
{
	void *p;
	n = (n + 15) & ~(size_t)15;
	if (!a->head || a->head->cap - a->head->used < n) {
		size_t cap = n > 65536 ? n : 65536;
		struct xblock *b = malloc(sizeof *b + cap);
		if (!b) {
			a->failed = 1;
			return NULL;
		}
		b->used = 0;
		b->cap = cap;
		if (a->head && n > 65536) { /* a big one: keep the current block open */
			b->next = a->head->next;
			a->head->next = b;
			b->used = n;
			memset(b->mem, 0, n);
			return b->mem;
		}
		b->next = a->head;
		a->head = b;
	}
	p = a->head->mem + a->head->used;
	a->head->used += n;
	memset(p, 0, n);
	return p;
}

/* A NUL-terminated copy of s[0..n) in the arena, or NULL (failed set). */
static char *xa_strndup(struct xa *a, const char *s, size_t n)
{
	char *p = xa_alloc(a, n + 1);
	if (p) {
		memcpy(p, s, n);
		p[n] = '\0';
	}
	return p;
}

/* Free every block of the arena. */
static void xa_free(struct xa *a)
{
	while (a->head) {
		struct xblock *n = a->head->next;
		free(a->head);
		a->head = n;
	}
}

/* A growing array of pointers in the arena. */
struct vec {
	void **p;
	size_t n, cap;
};

/* Append x to v (grown in the arena).  Returns 0 or -1 (memory). */
static int vec_push(struct xa *a, struct vec *v, void *x)
{
	if (v->n == v->cap) {
		size_t cap = v->cap ? v->cap * 2 : 16;
		void **p = xa_alloc(a, cap * sizeof *p);
		if (!p)
			return -1;
		if (v->n)
			memcpy(p, v->p, v->n * sizeof *p);
		v->p = p;
		v->cap = cap;
	}
	v->p[v->n++] = x;
	return 0;
}

/* ---- Values ---- */

enum cell_kind { C_NULL, C_FLOAT, C_INT, C_BOOL, C_STRING };

/* A value of the output, or of a condition: null, a float, an integer,
 * a boolean or a string (not owned).  A float may carry its JSON text in
 * s and len (the window cache's: put_cell writes it as it is). */
struct cell {
	enum cell_kind kind;
	double f;
	int64_t i;
	const char *s;
	size_t len;
};

static struct cell cnull(void) { struct cell c = {C_NULL, 0, 0, NULL, 0}; return c; }
static struct cell cfloat(double f) { struct cell c = {C_FLOAT, f, 0, NULL, 0}; return c; }
static struct cell cint(int64_t i) { struct cell c = {C_INT, 0, i, NULL, 0}; return c; }
static struct cell cbool(int b) { struct cell c = {C_BOOL, 0, b != 0, NULL, 0}; return c; }
static struct cell cstr(const char *s, size_t n) { struct cell c = {C_STRING, 0, 0, s, n}; return c; }

static double num(struct cell c) { return c.kind == C_FLOAT ? c.f : (double)c.i; }
static int is_num(struct cell c) { return c.kind == C_FLOAT || c.kind == C_INT; }

/* InfluxDB's field types, from the column's type. */
enum ftype { F_NONE, F_FLOAT, F_INT, F_BOOL, F_STRING };

/* InfluxDB's name of a field type (SHOW FIELD KEYS). */
static const char *ftype_name(enum ftype t)
{
	switch (t) {
	case F_FLOAT: return "float";
	case F_INT: return "integer";
	case F_BOOL: return "boolean";
	case F_STRING: return "string";
	default: return "";
	}
}

/* The field type a column of type t holds (F_NONE: not a field: blobs). */
static enum ftype ftype_of(ts_type t)
{
	switch (t) {
	case TS_DOUBLE: return F_FLOAT;
	case TS_INT64: case TS_TIMESTAMP: return F_INT;
	case TS_INT32: return F_BOOL;
	case TS_STRING: return F_STRING;
	default: return F_NONE;
	}
}

/* A stored value as a field of type t reads (NaN: null). */
static struct cell cell_of(const ts_value *v, enum ftype t)
{
	switch (v->type) {
	case TS_DOUBLE:
		return isnan(v->v.d) ? cnull() : cfloat(v->v.d);
	case TS_INT32:
		return t == F_BOOL ? cbool(v->v.i != 0) : cint(v->v.i);
	case TS_INT64: case TS_TIMESTAMP:
		return cint(v->v.i);
	case TS_STRING: case TS_BLOB:
		return cstr(v->v.s.ptr, v->v.s.len);
	default:
		return cnull();
	}
}

/* ---- The statement's context ---- */

struct rx {
	const struct iql_expr *e;
	regex_t re;
	struct rx *next;
};

struct exec {
	ts_db *db;
	int64_t now;
	struct xa a;
	struct rx *rxs;     /* compiled regexes, by node */
	struct held *held;  /* tables and schemas the answer still names */
	char err[ERR_MAX];  /* the statement's error */
	int oom;
	struct qc_hold *qheld; /* window cache entries the answer still reads */
};

static int fail(struct exec *x, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Record the statement's error (the first one wins).  Returns -1. */
static int fail(struct exec *x, const char *fmt, ...)
{
	va_list ap;
	if (x->err[0])
		return -1;
	va_start(ap, fmt);
	vsnprintf(x->err, sizeof x->err, fmt, ap);
	va_end(ap);
	return -1;
}

/* Record running out of memory.  Returns -1. */
static int nomem(struct exec *x)
{
	x->oom = 1;
	return fail(x, "out of memory");
}

/* The compiled form of a regex node (POSIX extended syntax), or NULL
 * after the error. */
static regex_t *regex_of(struct exec *x, const struct iql_expr *e, const char *pat)
{
	struct rx *r;
	int rc;
	for (r = x->rxs; r; r = r->next)
		if (r->e == e)
			return &r->re;
	if (!(r = calloc(1, sizeof *r))) {
		nomem(x);
		return NULL;
	}
	if ((rc = regcomp(&r->re, pat, REG_EXTENDED | REG_NOSUB)) != 0) {
		char why[128];
		regerror(rc, &r->re, why, sizeof why);
		free(r);
		fail(x, "error parsing regexp: %s: `%s`", why, pat);
		return NULL;
	}
	r->e = e;
	r->next = x->rxs;
	x->rxs = r;
	return &r->re;
}

/* Whether re matches somewhere in s[0..n) (copied to be NUL-terminated). */
static int regex_match(regex_t *re, const char *s, size_t n)
{
	char buf[256];
	char *p = n < sizeof buf ? buf : malloc(n + 1);
	int m;
	if (!p)
		return 0;
	memcpy(p, s, n);
	p[n] = '\0';
	m = regexec(re, p, 0, NULL, 0) == 0;
	if (p != buf)
		free(p);
	return m;
}

/* A table and schema kept open until the statement is answered (the
 * output names its columns). */
struct held {
	ts_table *t;
	ts_schema *s;
	struct held *next;
};

/* Release what a statement held: its regexes, its tables and schemas,
 * its arena. */
static void qc_release_all(struct exec *x);

static void exec_clear(struct exec *x)
{
	qc_release_all(x);
	while (x->held) {
		struct held *n = x->held->next;
		if (x->held->s)
			ts_schema_free(x->held->s);
		ts_table_close(x->held->t);
		free(x->held);
		x->held = n;
	}
	while (x->rxs) {
		struct rx *n = x->rxs->next;
		regfree(&x->rxs->re);
		free(x->rxs);
		x->rxs = n;
	}
	xa_free(&x->a);
}

/* ---- Measurements and series ---- */

/* A table read as a measurement. */
struct meas {
	const char *name;   /* as the query wrote it (the output's name) */
	ts_table *t;
	ts_schema *s;
	int ntags;
	int tagcol[TS_KEY_COLUMNS_MAX];
	int tscol;
};

/* Hand m's table and schema to x, which closes them once the
 * statement's answer is written (exec_clear): the answer names the
 * schema's columns. */
static void meas_close(struct exec *x, struct meas *m)
{
	struct held *h;
	if (!m->t)
		return;
	if (!(h = malloc(sizeof *h))) {
		/* no room to defer: the names must not be used any more */
		nomem(x);
		if (m->s)
			ts_schema_free(m->s);
		ts_table_close(m->t);
	} else {
		h->t = m->t;
		h->s = m->s;
		h->next = x->held;
		x->held = h;
	}
	m->s = NULL;
	m->t = NULL;
}

/* Open the table of measurement name.  Returns 1, 0 when there is none,
 * or -1 after the error. */
static int meas_open(struct exec *x, const char *name, struct meas *m)
{
	char tname[TS_NAME_MAX + 1];
	int rc;
	memset(m, 0, sizeof *m);
	m->name = name;
	tsd_ingest_name(name, strlen(name), 0, tname);
	if ((rc = ts_table_open(x->db, tname, &m->t)) == TS_ENOENT)
		return 0;
	if (rc < 0)
		return fail(x, "%s: %s", name, ts_strerror(rc));
	if ((rc = ts_table_schema(m->t, &m->s)) < 0) {
		meas_close(x, m);
		return fail(x, "%s: %s", name, ts_strerror(rc));
	}
	m->ntags = m->s->nkey - 1;
	for (int i = 0; i < m->ntags; i++)
		m->tagcol[i] = m->s->key[i];
	m->tscol = m->s->key[m->s->nkey - 1];
	return 1;
}

/* The position among the tags of column c, or -1. */
static int tag_pos(const struct meas *m, int c)
{
	for (int i = 0; i < m->ntags; i++)
		if (m->tagcol[i] == c)
			return i;
	return -1;
}

/* The column named name (mapped as the ingest maps names), or -1. */
static int col_of(const struct meas *m, const char *name)
{
	char cname[TS_NAME_MAX + 1];
	tsd_ingest_name(name, strlen(name), 1, cname);
	for (int i = 0; i < m->s->ncolumns; i++)
		if (strcmp(m->s->columns[i].name, cname) == 0)
			return i;
	return -1;
}

/* Whether column c is a field (not a tag, not ts). */
static int is_field(const struct meas *m, int c)
{
	return c >= 0 && c != m->tscol && tag_pos(m, c) < 0 &&
	       ftype_of(m->s->columns[c].type) != F_NONE;
}

/* The distinct tag value sets of a table. */
struct slist {
	struct cell **tags; /* each ntags strings */
	size_t n;
};

/* Copy a stored key value into the arena as a string cell. */
static int key_cell(struct exec *x, const ts_value *v, struct cell *out)
{
	char buf[32];
	if (v->type == TS_STRING || v->type == TS_BLOB) {
		char *s = xa_strndup(&x->a, v->v.s.ptr, v->v.s.len);
		if (!s)
			return nomem(x);
		*out = cstr(s, v->v.s.len);
		return 0;
	}
	if (v->type == TS_DOUBLE)
		snprintf(buf, sizeof buf, "%.17g", v->v.d);
	else
		snprintf(buf, sizeof buf, "%lld", (long long)v->v.i);
	*out = cstr(xa_strndup(&x->a, buf, strlen(buf)), strlen(buf));
	return out->s ? 0 : nomem(x);
}

/* Back from a cell to the key value it came from (for prefixes). */
static ts_value key_value(const struct meas *m, int pos, struct cell c)
{
	ts_type t = m->s->columns[m->tagcol[pos]].type;
	if (t == TS_STRING)
		return ts_stringn(c.s, c.len);
	if (t == TS_BLOB)
		return ts_blob(c.s, c.len);
	if (t == TS_DOUBLE)
		return ts_double(strtod(c.s, NULL));
	ts_value v;
	v.type = t;
	v.v.i = strtoll(c.s, NULL, 10);
	return v;
}

/*
 * What a table's counters say now, read by the two caches below (the
 * series cache and the window cache) to tell whether the table changed
 * since they kept something of it: its incarnation (a drop and create),
 * its version (every committed batch, delete, purge), its descriptor's
 * generation (every flush, merge, expiry), its schema's version, its TTL,
 * its log's tail and its rows.
 */
struct table_state {
	int64_t incarnation, version, generation, schema, ttl, lsn, rows;
};

/* The state of table t now.  Returns 0, or -1 when it cannot be read
 * (then nothing is cached). */
static int table_state_of(ts_table *t, struct table_state *st)
{
	static const char *const names[] = {"table_incarnation", "version", "descriptor_generation",
	                                    "schema_version", "ttl_ns", "log_tail_lsn"};
	int64_t *fields[] = {&st->incarnation, &st->version, &st->generation,
	                     &st->schema, &st->ttl, &st->lsn};
	ts_stat stats[TS_STATS_MAX];
	int n = 0, found = 0, all = (1 << 7) - 1;
	memset(st, 0, sizeof *st);
	if (ts_table_stats(t, stats, TS_STATS_MAX, &n) < 0)
		return -1;
	for (int i = 0; i < n && i < TS_STATS_MAX; i++) {
		const char *k = stats[i].name;
		if (!strcmp(k, "tablet_rows") || !strcmp(k, "filling_rows"))
			st->rows += stats[i].value, found |= 1 << 6;
		for (int f = 0; f < 6; f++)
			if (!strcmp(k, names[f]))
				*fields[f] = stats[i].value, found |= 1 << f;
	}
	return found == all ? 0 : -1;
}

/* One tag's values a statement names its series by (select_one,
 * tag_values); a series whose tag is none of them is passed over. */
struct tagvals;
static int tagvals_has(const struct tagvals *vals, const char *s, size_t len);

/*
 * The series cache: the last series list of each table, with what the
 * table's counters said just before it was made (struct table_state).
 * New series come only with inserted rows, and every insert appends to
 * the table's log, moving log_tail_lsn; so while the log's tail, the rows
 * and the schema read the same, no row came since, and the list is
 * whole.  Rows that expire may leave series listed that have no rows any
 * more: a SELECT finds nothing for them, and InfluxDB too lists series
 * until their shard goes.
 */
struct cached {
	char name[TS_NAME_MAX + 1];
	struct table_state v;
	int ntags;
	size_t n;
	char *text;       /* every tag value, each NUL-terminated, series after series */
	size_t *lens;     /* n * ntags lengths */
};

#define SERIES_CACHE_TABLES 64
static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;
static struct cached cache[SERIES_CACHE_TABLES];
static unsigned cache_next; /* the entry a new table replaces */

/* The cached list of m when still valid (copied into the arena): 1, 0
 * when there is none, -1 when out of memory. */
static int cache_get(struct exec *x, const struct meas *m, const char *tname,
                     const struct table_state *v, const struct tagvals *named, int named_pos,
                     struct slist *out)
{
	int rc = 0;
	pthread_mutex_lock(&cache_lock);
	for (int i = 0; i < SERIES_CACHE_TABLES; i++) {
		struct cached *c = &cache[i];
		if (strcmp(c->name, tname) != 0 || c->ntags != m->ntags || c->v.lsn != v->lsn ||
		    c->v.rows != v->rows || c->v.schema != v->schema)
			continue;
		size_t total = 0, k = 0;
		for (size_t j = 0; j < c->n * (size_t)c->ntags; j++)
			total += c->lens[j] + 1;
		char *text = xa_alloc(&x->a, total + 1);
		out->tags = xa_alloc(&x->a, (c->n + 1) * sizeof *out->tags);
		if (!text || !out->tags) {
			rc = -1;
			break;
		}
		memcpy(text, c->text, total);
		out->n = 0;
		for (size_t j = 0; j < c->n; j++) {
			if (named) { /* only the series named: its tag's text is at p */
				const char *p = text;
				for (int t = 0; t < named_pos; t++)
					p += c->lens[k + (size_t)t] + 1;
				if (!tagvals_has(named, p, c->lens[k + (size_t)named_pos])) {
					for (int t = 0; t < c->ntags; t++, k++)
						text += c->lens[k] + 1;
					continue;
				}
			}
			struct cell *tags = xa_alloc(&x->a, (size_t)(c->ntags + 1) * sizeof *tags);
			if (!tags) {
				rc = -1;
				break;
			}
			for (int t = 0; t < c->ntags; t++, k++) {
				tags[t] = cstr(text, c->lens[k]);
				text += c->lens[k] + 1;
			}
			out->tags[out->n++] = tags;
		}
		rc = rc < 0 ? -1 : 1;
		break;
	}
	pthread_mutex_unlock(&cache_lock);
	return rc < 0 ? nomem(x) : rc;
}

/* Keep list (made after v was read) as tname's. */
static void cache_put(const char *tname, int ntags, const struct table_state *v,
                      const struct slist *list)
{
	size_t total = 0, k = 0, nl = list->n * (size_t)ntags;
	char *text, *p;
	size_t *lens;
	for (size_t j = 0; j < list->n; j++)
		for (int t = 0; t < ntags; t++)
			total += list->tags[j][t].len + 1;
	text = malloc(total + 1);
	lens = malloc((nl + 1) * sizeof *lens);
	if (!text || !lens) {
		free(text);
		free(lens);
		return;
	}
	p = text;
	for (size_t j = 0; j < list->n; j++)
		for (int t = 0; t < ntags; t++, k++) {
			lens[k] = list->tags[j][t].len;
			if (lens[k])
				memcpy(p, list->tags[j][t].s, lens[k]);
			p[lens[k]] = '\0';
			p += lens[k] + 1;
		}
	pthread_mutex_lock(&cache_lock);
	int slot = -1;
	for (int i = 0; i < SERIES_CACHE_TABLES && slot < 0; i++)
		if (strcmp(cache[i].name, tname) == 0)
			slot = i;
	if (slot < 0)
		slot = (int)(cache_next++ % SERIES_CACHE_TABLES);
	struct cached *c = &cache[slot];
	free(c->text);
	free(c->lens);
	snprintf(c->name, sizeof c->name, "%s", tname);
	c->v = *v;
	c->ntags = ntags;
	c->n = list->n;
	c->text = text;
	c->lens = lens;
	pthread_mutex_unlock(&cache_lock);
}

static int scan_series_list(struct exec *x, const struct meas *m, struct slist *out);

/*
 * list_series -- every distinct tag value set of m, in key order: the
 * series cache's list while the table's counters say it is whole, else
 * a skip scan (scan_series_list), then cached.  With named (not NULL),
 * the cache's list gives only the series whose tag at named_pos is one
 * of named's values (a skip scan gives every series: the caller passes
 * the others over itself).  Returns 0 or -1 after the error.
 */
static int list_series(struct exec *x, const struct meas *m, const struct tagvals *named,
                       int named_pos, struct slist *out)
{
	char tname[TS_NAME_MAX + 1];
	struct table_state v;
	int ok, rc;
	tsd_ingest_name(m->name, strlen(m->name), 0, tname);
	ok = m->ntags > 0 && table_state_of(m->t, &v) == 0 && v.lsn > 0;
	if (ok && (rc = cache_get(x, m, tname, &v, named, named_pos, out)) != 0)
		return rc < 0 ? -1 : 0;
	if (scan_series_list(x, m, out) < 0)
		return -1;
	if (ok)
		cache_put(tname, m->ntags, &v, out);
	return 0;
}

/*
 * scan_series_list -- every distinct tag value set of m, in key order,
 * by a skip scan: each ts_query asks for one row past the previous set.
 * Returns 0 or -1 after the error.
 */
static int scan_series_list(struct exec *x, const struct meas *m, struct slist *out)
{
	struct vec v = {0};
	ts_value prev[TS_KEY_COLUMNS_MAX];
	int have = 0;
	out->n = 0;
	out->tags = NULL;
	if (m->ntags == 0) {
		struct cell *none = xa_alloc(&x->a, sizeof *none);
		if (!none || vec_push(&x->a, &v, none) < 0)
			return nomem(x);
		out->tags = (struct cell **)v.p;
		out->n = 1;
		return 0;
	}
	for (;;) {
		ts_query q;
		ts_cursor *cur = NULL;
		const ts_value *row;
		struct cell *tags;
		int rc;
		memset(&q, 0, sizeof q);
		q.columns = m->tagcol;
		q.ncolumns = m->ntags;
		q.limit = 1;
		if (have) {
			q.lower = prev;
			q.nlower = m->ntags;
			q.lower_exclusive = 1;
		}
		if ((rc = ts_query_open(m->t, &q, &cur)) < 0)
			return fail(x, "%s: %s", m->name, ts_strerror(rc));
		rc = ts_cursor_next(cur, &row, NULL);
		if (rc < 0 || !row) {
			ts_cursor_close(cur);
			if (rc < 0)
				return fail(x, "%s: %s", m->name, ts_strerror(rc));
			break;
		}
		if (!(tags = xa_alloc(&x->a, (size_t)m->ntags * sizeof *tags))) {
			ts_cursor_close(cur);
			return nomem(x);
		}
		for (int i = 0; i < m->ntags; i++)
			if (key_cell(x, &row[i], &tags[i]) < 0) {
				ts_cursor_close(cur);
				return -1;
			}
		ts_cursor_close(cur);
		for (int i = 0; i < m->ntags; i++)
			prev[i] = key_value(m, i, tags[i]);
		have = 1;
		if (vec_push(&x->a, &v, tags) < 0)
			return nomem(x);
	}
	out->tags = (struct cell **)v.p;
	out->n = v.n;
	return 0;
}

/* ---- Conditions ---- */

/* What a condition sees: the series' tags, and a row's fields (NULL when
 * only tags are known). */
struct env {
	const struct meas *m;
	const struct cell *tags;
	const ts_value *row;
	const int *rowpos;  /* column -> position in row, -1 */
	const struct refmap *refs; /* the references' columns, resolved once; or NULL */
};

/* The column of each reference of a condition, resolved once per
 * statement rather than per row. */
struct refmap {
	const struct iql_expr **e;
	int *col;
	int n, cap;
};

/* Resolve the references of e into r.  Returns 0 or -1 (memory). */
static int refs_add(struct xa *a, const struct meas *m, const struct iql_expr *e, struct refmap *r)
{
	if (!e)
		return 0;
	if (e->kind == IQL_E_VARREF) {
		if (r->n == r->cap) {
			int cap = r->cap ? r->cap * 2 : 8;
			const struct iql_expr **ne = xa_alloc(a, (size_t)cap * sizeof *ne);
			int *nc = xa_alloc(a, (size_t)cap * sizeof *nc);
			if (!ne || !nc)
				return -1;
			if (r->n) {
				memcpy(ne, r->e, (size_t)r->n * sizeof *ne);
				memcpy(nc, r->col, (size_t)r->n * sizeof *nc);
			}
			r->e = ne;
			r->col = nc;
			r->cap = cap;
		}
		r->e[r->n] = e;
		r->col[r->n++] = col_of(m, e->name.s);
		return 0;
	}
	if (e->kind == IQL_E_BINARY || e->kind == IQL_E_PAREN)
		return refs_add(a, m, e->lhs, r) < 0 ? -1 : refs_add(a, m, e->rhs, r);
	return 0;
}

/* The column e refers to. */
static int ref_col(const struct env *v, const struct iql_expr *e)
{
	if (v->refs)
		for (int i = 0; i < v->refs->n; i++)
			if (v->refs->e[i] == e)
				return v->refs->col[i];
	return col_of(v->m, e->name.s);
}

/* Whether e refers only to tags (and literals). */
static int tags_only(const struct meas *m, const struct iql_expr *e)
{
	if (!e)
		return 1;
	if (e->kind == IQL_E_VARREF) {
		int c = col_of(m, e->name.s);
		return c >= 0 && tag_pos(m, c) >= 0;
	}
	if (e->kind == IQL_E_BINARY || e->kind == IQL_E_PAREN)
		return tags_only(m, e->lhs) && tags_only(m, e->rhs);
	if (e->kind == IQL_E_CALL)
		return 0;
	return 1;
}

/* Whether e mentions time. */
static int mentions_time(const struct iql_expr *e)
{
	if (!e)
		return 0;
	if (e->kind == IQL_E_VARREF)
		return strcmp(e->name.s, "time") == 0;
	if (e->kind == IQL_E_BINARY || e->kind == IQL_E_PAREN)
		return mentions_time(e->lhs) || mentions_time(e->rhs);
	return 0;
}

/* Whether op is a comparison (=, !=, <, <=, >, >=). */
static int cmp_op(enum iql_op op)
{
	return op == IQL_OP_EQ || op == IQL_OP_NEQ || op == IQL_OP_LT || op == IQL_OP_LTE ||
	       op == IQL_OP_GT || op == IQL_OP_GTE;
}

static struct cell eval(struct exec *x, const struct iql_expr *e, const struct env *v);

/* The comparison op given c, the sign of left - right. */
static int compare(enum iql_op op, int c)
{
	switch (op) {
	case IQL_OP_EQ: return c == 0;
	case IQL_OP_NEQ: return c != 0;
	case IQL_OP_LT: return c < 0;
	case IQL_OP_LTE: return c <= 0;
	case IQL_OP_GT: return c > 0;
	case IQL_OP_GTE: return c >= 0;
	default: return 0;
	}
}

/* A binary node: AND and OR short-circuit, comparisons give booleans
 * (false with a null side), regex matches need a string, arithmetic
 * needs numbers (integers stay integers but for /). */
static struct cell eval_binary(struct exec *x, const struct iql_expr *e, const struct env *v)
{
	struct cell l, r;
	if (e->op == IQL_OP_AND || e->op == IQL_OP_OR) {
		l = eval(x, e->lhs, v);
		int lt = l.kind == C_BOOL && l.i;
		if (e->op == IQL_OP_AND && !lt)
			return cbool(0);
		if (e->op == IQL_OP_OR && lt)
			return cbool(1);
		r = eval(x, e->rhs, v);
		return cbool(r.kind == C_BOOL && r.i);
	}
	l = eval(x, e->lhs, v);
	if (e->op == IQL_OP_EQREGEX || e->op == IQL_OP_NEQREGEX) {
		regex_t *re;
		if (e->rhs->kind != IQL_E_REGEX || !(re = regex_of(x, e->rhs, e->rhs->str)))
			return cbool(0);
		if (l.kind != C_STRING)
			return cbool(e->op == IQL_OP_NEQREGEX && l.kind == C_NULL ? 0 : 0);
		return cbool(regex_match(re, l.s, l.len) == (e->op == IQL_OP_EQREGEX));
	}
	r = eval(x, e->rhs, v);
	if (cmp_op(e->op)) {
		if (l.kind == C_NULL || r.kind == C_NULL)
			return cbool(0);
		if (is_num(l) && is_num(r)) {
			if (l.kind == C_INT && r.kind == C_INT)
				return cbool(compare(e->op, (l.i > r.i) - (l.i < r.i)));
			double a = num(l), b = num(r);
			return cbool(compare(e->op, (a > b) - (a < b)));
		}
		if (l.kind == C_STRING && r.kind == C_STRING) {
			size_t n = l.len < r.len ? l.len : r.len;
			int c = memcmp(l.s, r.s, n);
			if (c == 0)
				c = (l.len > r.len) - (l.len < r.len);
			return cbool(compare(e->op, c));
		}
		if (l.kind == C_BOOL && r.kind == C_BOOL &&
		    (e->op == IQL_OP_EQ || e->op == IQL_OP_NEQ))
			return cbool(compare(e->op, (int)(l.i - r.i)));
		return cbool(0);
	}
	if (!is_num(l) || !is_num(r))
		return cnull();
	if (l.kind == C_INT && r.kind == C_INT && e->op != IQL_OP_DIV) {
		switch (e->op) {
		case IQL_OP_ADD: return cint((int64_t)((uint64_t)l.i + (uint64_t)r.i));
		case IQL_OP_SUB: return cint((int64_t)((uint64_t)l.i - (uint64_t)r.i));
		case IQL_OP_MUL: return cint((int64_t)((uint64_t)l.i * (uint64_t)r.i));
		case IQL_OP_MOD: return r.i ? cint(l.i % r.i) : cnull();
		case IQL_OP_BITAND: return cint(l.i & r.i);
		case IQL_OP_BITOR: return cint(l.i | r.i);
		case IQL_OP_BITXOR: return cint(l.i ^ r.i);
		default: return cnull();
		}
	}
	switch (e->op) {
	case IQL_OP_ADD: return cfloat(num(l) + num(r));
	case IQL_OP_SUB: return cfloat(num(l) - num(r));
	case IQL_OP_MUL: return cfloat(num(l) * num(r));
	case IQL_OP_DIV: return num(r) == 0 ? cfloat(0) : cfloat(num(l) / num(r));
	default: return cnull();
	}
}

/* The value of e for v (a comparison gives a boolean; a reference to
 * what is not there, null). */
static struct cell eval(struct exec *x, const struct iql_expr *e, const struct env *v)
{
	switch (e->kind) {
	case IQL_E_INTEGER: return cint(e->i);
	case IQL_E_FLOAT: return cfloat(e->f);
	case IQL_E_STRING: return cstr(e->str, e->len);
	case IQL_E_DURATION: return cint(e->i);
	case IQL_E_BOOL: return cbool((int)e->i);
	case IQL_E_PAREN: return eval(x, e->lhs, v);
	case IQL_E_BINARY: return eval_binary(x, e, v);
	case IQL_E_CALL: return e->fn == IQL_FN_NOW ? cint(x->now) : cnull();
	case IQL_E_VARREF: {
		int c = ref_col(v, e), p;
		if (c < 0)
			return cnull();
		if ((p = tag_pos(v->m, c)) >= 0)
			return v->tags[p];
		if (!v->row || v->rowpos[c] < 0)
			return cnull();
		return cell_of(&v->row[v->rowpos[c]], ftype_of(v->m->s->columns[c].type));
	}
	default: return cnull();
	}
}

/* ---- The time range ---- */

/* ts in [from, to) */
struct trange {
	int64_t from, to;
	int has_from, has_to;
};

/* The instant a time operand stands for.  Returns 0 or -1. */
static int time_of(struct exec *x, const struct iql_expr *e, int64_t *out)
{
	int64_t l, r;
	switch (e->kind) {
	case IQL_E_PAREN: return time_of(x, e->lhs, out);
	case IQL_E_INTEGER: case IQL_E_DURATION: *out = e->i; return 0;
	case IQL_E_FLOAT: *out = (int64_t)e->f; return 0;
	case IQL_E_CALL:
		if (e->fn == IQL_FN_NOW) {
			*out = x->now;
			return 0;
		}
		return fail(x, "invalid time comparison: %s()", e->name.s);
	case IQL_E_STRING:
		if (!e->is_time)
			return fail(x, "invalid operation: time and *influxql.StringLiteral are not "
			            "compatible");
		*out = e->i;
		return 0;
	case IQL_E_BINARY:
		if (e->op != IQL_OP_ADD && e->op != IQL_OP_SUB)
			break;
		if (time_of(x, e->lhs, &l) < 0 || time_of(x, e->rhs, &r) < 0)
			return -1;
		*out = e->op == IQL_OP_ADD ? l + r : l - r;
		return 0;
	default:
		break;
	}
	return fail(x, "invalid time condition");
}

/* One `time OP x` into tr.  Returns 0 or -1. */
static int time_bound(struct exec *x, const struct iql_expr *e, struct trange *tr)
{
	enum iql_op op = e->op;
	const struct iql_expr *val;
	int64_t t;
	const struct iql_expr *l = e->lhs, *r = e->rhs;
	while (l->kind == IQL_E_PAREN)
		l = l->lhs;
	while (r->kind == IQL_E_PAREN)
		r = r->lhs;
	if (l->kind == IQL_E_VARREF && strcmp(l->name.s, "time") == 0 && !mentions_time(r))
		val = r;
	else if (r->kind == IQL_E_VARREF && strcmp(r->name.s, "time") == 0 && !mentions_time(l)) {
		val = l;
		op = op == IQL_OP_LT ? IQL_OP_GT : op == IQL_OP_GT ? IQL_OP_LT
		   : op == IQL_OP_LTE ? IQL_OP_GTE : op == IQL_OP_GTE ? IQL_OP_LTE : op;
	} else
		return fail(x, "invalid time condition");
	if (time_of(x, val, &t) < 0)
		return -1;
	switch (op) {
	case IQL_OP_GT: t = t == INT64_MAX ? t : t + 1; /* fall through */
	case IQL_OP_GTE:
		if (!tr->has_from || t > tr->from)
			tr->from = t;
		tr->has_from = 1;
		return 0;
	case IQL_OP_LTE: t = t == INT64_MAX ? t : t + 1; /* fall through */
	case IQL_OP_LT:
		if (!tr->has_to || t < tr->to)
			tr->to = t;
		tr->has_to = 1;
		return 0;
	case IQL_OP_EQ:
		if (!tr->has_from || t > tr->from)
			tr->from = t;
		if (!tr->has_to || t + 1 < tr->to)
			tr->to = t + 1;
		tr->has_from = tr->has_to = 1;
		return 0;
	default:
		return fail(x, "invalid time comparison operator");
	}
}

/*
 * without_time -- e with its time comparisons taken out into tr, as
 * InfluxDB 1.6 takes them out of a WHERE: under OR as under AND, the
 * ranges intersected (`time > 1s OR host = 'c'` reads as `host = 'c'`
 * after 1 s); an AND or OR one side of which was only time is its other
 * side.  *out is the rest, NULL when nothing is left.  Returns 0 or -1
 * (time elsewhere than in a comparison of its own).
 */
static int without_time(struct exec *x, const struct iql_expr *e, struct trange *tr,
                        const struct iql_expr **out)
{
	const struct iql_expr *l, *r;
	struct iql_expr *n;
	*out = NULL;
	if (!mentions_time(e)) {
		*out = e;
		return 0;
	}
	if (e->kind == IQL_E_PAREN)
		return without_time(x, e->lhs, tr, out);
	if (e->kind == IQL_E_BINARY && (e->op == IQL_OP_AND || e->op == IQL_OP_OR)) {
		if (without_time(x, e->lhs, tr, &l) < 0 || without_time(x, e->rhs, tr, &r) < 0)
			return -1;
		if (!l || !r) {
			*out = l ? l : r;
			return 0;
		}
		if (!(n = xa_alloc(&x->a, sizeof *n)))
			return nomem(x);
		*n = *e;
		n->lhs = (struct iql_expr *)l;
		n->rhs = (struct iql_expr *)r;
		*out = n;
		return 0;
	}
	if (e->kind != IQL_E_BINARY || !cmp_op(e->op))
		return fail(x, "invalid time condition: only comparisons of time joined by AND "
		            "or OR are supported");
	return time_bound(x, e, tr);
}

/*
 * split_where -- the top-level conjuncts of e: time comparisons into tr,
 * the others into tagc (naming only tags) or rowc; time comparisons
 * under an OR are taken out into tr too (without_time).  Returns 0 or -1.
 */
static int split_where(struct exec *x, const struct meas *m, const struct iql_expr *e,
                       struct trange *tr, struct vec *tagc, struct vec *rowc)
{
	if (!e)
		return 0;
	if (e->kind == IQL_E_PAREN && e->lhs->kind == IQL_E_BINARY && e->lhs->op == IQL_OP_AND)
		return split_where(x, m, e->lhs, tr, tagc, rowc);
	if (e->kind == IQL_E_BINARY && e->op == IQL_OP_AND)
		return split_where(x, m, e->lhs, tr, tagc, rowc) < 0 ? -1
		       : split_where(x, m, e->rhs, tr, tagc, rowc);
	if (mentions_time(e)) {
		if (without_time(x, e, tr, &e) < 0)
			return -1;
		if (!e)
			return 0;
	}
	return vec_push(&x->a, tags_only(m, e) ? tagc : rowc, (void *)e) < 0 ? nomem(x) : 0;
}

/* Whether every condition of c holds for v. */
static int all_true(struct exec *x, const struct vec *c, const struct env *v)
{
	for (size_t i = 0; i < c->n; i++) {
		struct cell r = eval(x, c->p[i], v);
		if (!(r.kind == C_BOOL && r.i))
			return 0;
	}
	return 1;
}

/* ---- Output ---- */

/* One output row: time and values. */
struct orow {
	int64_t ts;
	size_t seq;
	struct cell *v;
};

/* One output series. */
struct oseries {
	const char *name;
	char *key;               /* "k=v,k=v" of its group tags (sort order) */
	const struct cell *gtags;/* the group tags' values */
	struct vec rows;         /* struct orow * (raw) */
	struct acc *accs;        /* aggregates: nwin * ncols */
	int64_t nwin;
	unsigned char *hit;      /* nwin: a row fell in the window */
	unsigned char *later;    /* ncols, or NULL: the call found a value past the
	                          * windows LIMIT kept (past_cut) */
};

/* Append a float as Go's encoding/json writes one. */
static void put_float(struct jbuf *b, double f)
{
	char buf[64], digits[32];
	int exp10 = 0, prec, nd = 0, neg = f < 0;
	double a = fabs(f);
	if (isnan(f) || isinf(f)) {
		jbuf_puts(b, "null");
		return;
	}
	if (a == 0) {
		jbuf_puts(b, neg ? "-0" : "0");
		return;
	}
	if (a < 1e15 && a == floor(a)) { /* an integer: its digits */
		jbuf_printf(b, "%s%.0f", neg ? "-" : "", a);
		return;
	}
	/* 16 significant digits, trailing zeros cut, are the shortest form
	 * whenever one of 16 digits or fewer reads back; else 17 */
	for (prec = 16; prec <= 17; prec++) {
		snprintf(buf, sizeof buf, "%.*e", prec - 1, a);
		if (strtod(buf, NULL) == a)
			break;
	}
	/* buf: d.ddde[+-]XX */
	for (char *p = buf; *p && *p != 'e'; p++)
		if (*p >= '0' && *p <= '9')
			digits[nd++] = *p;
	while (nd > 1 && digits[nd - 1] == '0')
		nd--;
	digits[nd] = '\0';
	exp10 = atoi(strchr(buf, 'e') + 1);
	if (neg)
		jbuf_putc(b, '-');
	if (a < 1e-6 || a >= 1e21) {
		jbuf_putc(b, digits[0]);
		if (nd > 1) {
			jbuf_putc(b, '.');
			jbuf_puts(b, digits + 1);
		}
		jbuf_printf(b, "e%c%02d", exp10 < 0 ? '-' : '+', abs(exp10));
		return;
	}
	if (exp10 < 0) {
		jbuf_puts(b, "0.");
		for (int i = -1; i > exp10; i--)
			jbuf_putc(b, '0');
		jbuf_puts(b, digits);
		return;
	}
	for (int i = 0; i <= exp10; i++)
		jbuf_putc(b, i < nd ? digits[i] : '0');
	if (nd > exp10 + 1) {
		jbuf_putc(b, '.');
		jbuf_puts(b, digits + exp10 + 1);
	}
}

/* Append a value in InfluxDB's JSON. */
static void put_cell(struct jbuf *b, struct cell c)
{
	switch (c.kind) {
	case C_NULL: jbuf_puts(b, "null"); break;
	case C_FLOAT:
		if (c.s)
			jbuf_put(b, c.s, c.len);
		else
			put_float(b, c.f);
		break;
	case C_INT: jbuf_int(b, c.i); break;
	case C_BOOL: jbuf_puts(b, c.i ? "true" : "false"); break;
	case C_STRING: jbuf_string(b, c.s, c.len); break;
	}
}

/* How times are written: epoch divisor (0: RFC 3339). */
static void put_time(struct jbuf *b, int64_t ts, int64_t div)
{
	char buf[TS_TIME_BUFSZ];
	if (div) {
		jbuf_int(b, ts / div);
		return;
	}
	if (ts_time_format(ts, buf, sizeof buf) < 0)
		jbuf_int(b, ts);
	else
		jbuf_string(b, buf, strlen(buf));
}

/* The whole response: options and where each statement's text goes. */
struct resp {
	struct jbuf *b;
	int64_t epoch_div;
	int chunked;
	size_t chunk_size;
	int nresults;        /* results written (not chunked) */
	const char *warning; /* the next result's "messages" (a warning), or NULL */
};

/* What a statement answers: series of columns and rows. */
struct result {
	struct vec series;   /* struct rseries * */
};

struct rseries {
	const char *name;          /* NULL: no "name" */
	int ntags;
	const char **tagk;         /* sorted */
	const struct cell *tagv;
	int ncols;
	const char **cols;
	int has_time;              /* column 0 is time (written by put_time) */
	size_t nrows;
	int64_t *ts;
	struct cell **vals;        /* nrows rows of ncols - has_time cells */
};

/* Append series s with its rows [from, to), "partial":true when more
 * follow in another chunk. */
static void put_series(struct resp *r, const struct rseries *s, size_t from, size_t to,
                       int partial)
{
	struct jbuf *b = r->b;
	jbuf_putc(b, '{');
	if (s->name) {
		jbuf_puts(b, "\"name\":");
		jbuf_string(b, s->name, strlen(s->name));
		jbuf_putc(b, ',');
	}
	if (s->ntags) {
		jbuf_puts(b, "\"tags\":{");
		for (int i = 0; i < s->ntags; i++) {
			if (i)
				jbuf_putc(b, ',');
			jbuf_string(b, s->tagk[i], strlen(s->tagk[i]));
			jbuf_putc(b, ':');
			jbuf_string(b, s->tagv[i].s ? s->tagv[i].s : "", s->tagv[i].len);
		}
		jbuf_puts(b, "},");
	}
	jbuf_puts(b, "\"columns\":[");
	for (int i = 0; i < s->ncols; i++) {
		if (i)
			jbuf_putc(b, ',');
		jbuf_string(b, s->cols[i], strlen(s->cols[i]));
	}
	jbuf_puts(b, "],\"values\":[");
	for (size_t i = from; i < to; i++) {
		if (i > from)
			jbuf_putc(b, ',');
		jbuf_putc(b, '[');
		if (s->has_time)
			put_time(b, s->ts[i], r->epoch_div);
		for (int c = 0; c < s->ncols - s->has_time; c++) {
			if (c || s->has_time)
				jbuf_putc(b, ',');
			put_cell(b, s->vals[i][c]);
		}
		jbuf_putc(b, ']');
	}
	jbuf_putc(b, ']');
	if (partial)
		jbuf_puts(b, ",\"partial\":true");
	jbuf_putc(b, '}');
}

/* Write statement id's result (or its error). */
static void put_result(struct resp *r, int id, const struct result *res, const char *err)
{
	struct jbuf *b = r->b;
	size_t ns = res ? res->series.n : 0;
	if (r->chunked) {
		if (err || ns == 0) {
			jbuf_printf(b, "{\"results\":[{\"statement_id\":%d", id);
			if (err) {
				jbuf_puts(b, ",\"error\":");
				jbuf_string(b, err, strlen(err));
			}
			jbuf_puts(b, "}]}\n");
			return;
		}
		for (size_t i = 0; i < ns; i++) {
			const struct rseries *s = res->series.p[i];
			size_t at = 0;
			do {
				size_t to = s->nrows - at > r->chunk_size ? at + r->chunk_size : s->nrows;
				int more_rows = to < s->nrows;
				jbuf_printf(b, "{\"results\":[{\"statement_id\":%d,\"series\":[", id);
				put_series(r, s, at, to, more_rows);
				jbuf_puts(b, "]");
				if (more_rows || i + 1 < ns)
					jbuf_puts(b, ",\"partial\":true");
				jbuf_puts(b, "}]}\n");
				at = to;
			} while (at < s->nrows);
		}
		return;
	}
	if (r->nresults++)
		jbuf_putc(b, ',');
	jbuf_printf(b, "{\"statement_id\":%d", id);
	if (r->warning) {
		jbuf_puts(b, ",\"messages\":[{\"level\":\"warning\",\"text\":");
		jbuf_string(b, r->warning, strlen(r->warning));
		jbuf_puts(b, "}]");
	}
	if (err) {
		jbuf_puts(b, ",\"error\":");
		jbuf_string(b, err, strlen(err));
	} else if (ns) {
		jbuf_puts(b, ",\"series\":[");
		for (size_t i = 0; i < ns; i++) {
			if (i)
				jbuf_putc(b, ',');
			const struct rseries *s = res->series.p[i];
			put_series(r, s, 0, s->nrows, 0);
		}
		jbuf_putc(b, ']');
	}
	jbuf_putc(b, '}');
}

/* A series of one column of strings (the SHOWs). */
static struct rseries *names_series(struct exec *x, const char *name, int ncols,
                                    const char **cols)
{
	struct rseries *s = xa_alloc(&x->a, sizeof *s);
	if (!s)
		return NULL;
	s->name = name;
	s->ncols = ncols;
	s->cols = cols;
	return s;
}

/* Room for one more in a pair of parallel arrays of n entries (values of
 * size vsz in *vals, times in *ts), both moved to twice the capacity in
 * the arena when full.  Returns 0 or -1 (nomem). */
static int grow_pair(struct exec *x, size_t n, size_t *cap, void **vals, size_t vsz, int64_t **ts)
{
	if (n < *cap)
		return 0;
	size_t nc = *cap ? *cap * 2 : 16;
	void *v = xa_alloc(&x->a, nc * vsz);
	int64_t *t = xa_alloc(&x->a, nc * sizeof *t);
	if (!v || !t)
		return nomem(x);
	if (n) {
		memcpy(v, *vals, n * vsz);
		memcpy(t, *ts, n * sizeof *t);
	}
	*vals = v;
	*ts = t;
	*cap = nc;
	return 0;
}

/* Add a row of string cells to s (capacity grown in the arena). */
static int add_row(struct exec *x, struct rseries *s, size_t *cap, struct cell *vals)
{
	void *vals_p = s->vals;
	if (grow_pair(x, s->nrows, cap, &vals_p, sizeof *s->vals, &s->ts) < 0)
		return -1;
	s->vals = vals_p;
	s->vals[s->nrows++] = vals;
	return 0;
}

/* qsort order of C strings (byte order). */
static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* ---- Aggregates ---- */

/* One function's state over one window of one output series. */
struct acc {
	int64_t n;
	double sum;
	int64_t isum;
	struct cell min, max, first, last;
	int64_t min_ts, max_ts, first_ts, last_ts;
	struct cell *aux;     /* the selector's: the other columns at its point */
	struct cell *vals;    /* percentile and stddev: the values, and their times */
	int64_t *vts;
	size_t nvals, cap;
	int fixed;            /* the window came from the window cache: its value */
	struct cell fv;       /*   is fv (and its count n) */
};

/* A column of a SELECT. */
struct ocol {
	const char *name;
	int col;              /* the table's column, or -1 (unknown: null) */
	int tag;              /* raw: the tag position, or -1 */
	enum iql_fn fn;       /* aggregates (IQL_FN_OTHER: a field or tag beside a
	                       * selector, taken at the selector's point) */
	double pct;
	enum ftype ft;
};

/* Whether c is below (dir < 0) or above (dir > 0) the kept value k. */
static int beyond(struct cell c, struct cell k, int dir)
{
	if (c.kind == C_INT && k.kind == C_INT)
		return dir < 0 ? c.i < k.i : c.i > k.i;
	if (c.kind == C_STRING || k.kind == C_STRING) {
		size_t n = c.len < k.len ? c.len : k.len;
		int r = n ? memcmp(c.s, k.s, n) : 0;
		if (!r)
			r = (c.len > k.len) - (c.len < k.len);
		return dir < 0 ? r < 0 : r > 0;
	}
	double a = c.kind == C_BOOL ? (double)c.i : num(c), b = k.kind == C_BOOL ? (double)k.i : num(k);
	return dir < 0 ? a < b : a > b;
}

/* Add the value c of a row at ts to a, for function oc->fn only.
 * Returns 1 when a selector (min, max, first, last) took c as its point,
 * 0 otherwise, or -1 (memory). */
static int acc_add(struct exec *x, struct acc *a, const struct ocol *oc, struct cell c,
                   int64_t ts)
{
	if (c.kind == C_NULL)
		return 0;
	a->n++;
	switch (oc->fn) {
	case IQL_FN_COUNT:
		break;
	case IQL_FN_SUM: case IQL_FN_MEAN:
		a->sum += num(c);
		if (c.kind == C_INT) /* wrapping past int64, as InfluxDB's Go does */
			a->isum = (int64_t)((uint64_t)a->isum + (uint64_t)c.i);
		break;
	case IQL_FN_MIN: case IQL_FN_MAX: case IQL_FN_SPREAD: { /* spread keeps both */
		int took = 0;
		if (oc->fn != IQL_FN_MAX &&
		    (a->n == 1 || beyond(c, a->min, -1) || (!beyond(c, a->min, 1) && ts < a->min_ts))) {
			a->min = c;
			a->min_ts = ts;
			took |= oc->fn == IQL_FN_MIN;
		}
		if (oc->fn != IQL_FN_MIN &&
		    (a->n == 1 || beyond(c, a->max, 1) || (!beyond(c, a->max, -1) && ts < a->max_ts))) {
			a->max = c;
			a->max_ts = ts;
			took |= oc->fn == IQL_FN_MAX;
		}
		return took;
	}
	case IQL_FN_FIRST:
		if (a->n == 1 || ts < a->first_ts) {
			a->first = c;
			a->first_ts = ts;
			return 1;
		}
		break;
	case IQL_FN_LAST:
		if (a->n == 1 || ts > a->last_ts) {
			a->last = c;
			a->last_ts = ts;
			return 1;
		}
		break;
	case IQL_FN_PERCENTILE: case IQL_FN_STDDEV: { /* the values kept */
		void *vals_p = a->vals; /* (a block: a declaration cannot follow a label before C23) */
		if (grow_pair(x, a->nvals, &a->cap, &vals_p, sizeof *a->vals, &a->vts) < 0)
			return -1;
		a->vals = vals_p;
		a->vals[a->nvals] = c;
		a->vts[a->nvals++] = ts;
		break;
	}
	default:
		break;
	}
	return 0;
}

/* qsort_r order of value indexes by their times (base), then index. */
static int cmp_vts(const void *a, const void *b, void *base)
{
	const int64_t *t = base;
	size_t i = *(const size_t *)a, j = *(const size_t *)b;
	if (t[i] != t[j])
		return (t[i] > t[j]) - (t[i] < t[j]);
	return (i > j) - (i < j);
}

/* qsort_r order of value indexes by their values (base), then index. */
static int cmp_pct(const void *a, const void *b, void *base)
{
	const struct cell *v = base;
	double x = num(v[*(const size_t *)a]), y = num(v[*(const size_t *)b]);
	if (x != y)
		return (x > y) - (x < y);
	return (*(const size_t *)a > *(const size_t *)b) - (*(const size_t *)a < *(const size_t *)b);
}

/* The value of function oc over a, and the time of the point it selects
 * (for a selector alone without GROUP BY time). */
static struct cell acc_value(struct exec *x, struct acc *a, const struct ocol *oc, int64_t *pts)
{
	if (a->fixed)
		return a->fv;
	switch (oc->fn) {
	case IQL_FN_COUNT: return cint(a->n);
	case IQL_FN_SUM:
		if (!a->n)
			return cnull();
		return oc->ft == F_INT ? cint(a->isum) : cfloat(a->sum);
	case IQL_FN_MEAN: return a->n ? cfloat(a->sum / (double)a->n) : cnull();
	case IQL_FN_MIN: *pts = a->min_ts; return a->n ? a->min : cnull();
	case IQL_FN_MAX: *pts = a->max_ts; return a->n ? a->max : cnull();
	case IQL_FN_FIRST: *pts = a->first_ts; return a->n ? a->first : cnull();
	case IQL_FN_LAST: *pts = a->last_ts; return a->n ? a->last : cnull();
	case IQL_FN_SPREAD:
		if (!a->n)
			return cnull();
		return oc->ft == F_INT ? cint(a->max.i - a->min.i) : cfloat(num(a->max) - num(a->min));
	case IQL_FN_STDDEV: { /* two passes, as InfluxDB: the mean, then the squares,
	                       * over the values in time order (series after series
	                       * at one time), as its merge gives them */
		double sum = 0, sq = 0, mean;
		size_t *idx;
		if (a->nvals < 2)
			return cnull();
		if (!(idx = xa_alloc(&x->a, a->nvals * sizeof *idx))) {
			nomem(x);
			return cnull();
		}
		for (size_t k = 0; k < a->nvals; k++)
			idx[k] = k;
		qsort_r(idx, a->nvals, sizeof *idx, cmp_vts, a->vts);
		for (size_t k = 0; k < a->nvals; k++)
			sum += num(a->vals[idx[k]]);
		mean = sum / (double)a->nvals;
		for (size_t k = 0; k < a->nvals; k++)
			sq += (num(a->vals[idx[k]]) - mean) * (num(a->vals[idx[k]]) - mean);
		return cfloat(sqrt(sq / (double)(a->nvals - 1)));
	}
	case IQL_FN_PERCENTILE: {
		size_t *idx;
		if (!a->nvals)
			return cnull();
		long i = (long)floor((double)a->nvals * oc->pct / 100.0 + 0.5) - 1;
		if (i < 0 || (size_t)i >= a->nvals)
			return cnull();
		if (!(idx = xa_alloc(&x->a, a->nvals * sizeof *idx))) {
			nomem(x);
			return cnull();
		}
		for (size_t k = 0; k < a->nvals; k++)
			idx[k] = k;
		qsort_r(idx, a->nvals, sizeof *idx, cmp_pct, a->vals);
		*pts = a->vts[idx[i]];
		return a->vals[idx[i]];
	}
	default: return cnull();
	}
}

/* ---- SELECT ---- */

/* Mark the field columns e refers to in need. */
static void mark_fields(const struct meas *m, const struct iql_expr *e, unsigned char *need)
{
	if (!e)
		return;
	if (e->kind == IQL_E_VARREF) {
		int c = col_of(m, e->name.s);
		if (is_field(m, c))
			need[c] = 1;
		return;
	}
	if (e->kind == IQL_E_BINARY || e->kind == IQL_E_PAREN) {
		mark_fields(m, e->lhs, need);
		mark_fields(m, e->rhs, need);
	}
}

/* A SELECT being run. */
struct sel {
	const struct iql_select *q;
	struct meas m;
	struct ocol *cols;
	int ncols;
	int agg;
	const char **gnames;  /* GROUP BY tags, sorted */
	int *gpos;            /* their tag positions, -1: not a tag ("") */
	int ngroup;
	struct trange tr;
	struct vec tagc, rowc;
	int proj[TS_COLUMNS_MAX];
	int nproj;
	int rowpos[TS_COLUMNS_MAX];
	struct vec out;       /* struct oseries * */
	struct refmap refs;   /* the conditions' references */
	int blocks;           /* aggregates from ts_aggregate (block statistics) */
	int rolled;           /*   a rollup of the table answered some windows */
	int aux;              /* fields or tags beside a selector (plan_columns) */
	int selcol;           /* then the selector's column */
	int64_t naccs;        /* accumulators held, all output series */
	size_t nrows;         /* raw rows held */
	int64_t start, every; /* windows: start + k * every */
	int64_t nwin;
	int64_t wlo, whi, widx; /* the window take_row found last: [wlo, whi), its index
	                         * (rows come in time order: most fall in it too) */
	int cut;              /* LIMIT kept the first nwin windows: tr.to was cut */
	int64_t cut_to;       /*   from cut_to (plan_windows, past_cut) */
	const struct vec *wild; /* several measurements: the names * stands for */
};

/* The start of the window holding t. */
static int64_t window_of(const struct sel *s, int64_t t)
{
	int64_t d = s->q->group_interval, o = s->q->group_offset % d;
	int64_t r = (t - o) % d;
	if (r < 0)
		r += d;
	return t - r;
}

/* A column name not yet taken among cols[0..n): base, base_1, ... */
static const char *unique_name(struct exec *x, struct ocol *cols, int n, const char *base)
{
	char buf[TS_NAME_MAX * 4 + 16];
	const char *name = base;
	for (int k = 1;; k++) {
		int taken = 0;
		for (int i = 0; i < n && !taken; i++)
			taken = strcmp(cols[i].name, name) == 0;
		if (!taken)
			return name;
		snprintf(buf, sizeof buf, "%s_%d", base, k);
		if (!(name = xa_strndup(&x->a, buf, strlen(buf))))
			return NULL;
	}
}

/* Whether name is one of the GROUP BY tags already listed. */
static int is_group_tag(const struct sel *s, const char *name)
{
	for (int i = 0; i < s->ngroup; i++)
		if (strcmp(s->gnames[i], name) == 0)
			return 1;
	return 0;
}

/* The GROUP BY dimensions: the tags, sorted, without duplicates. */
static int plan_groups(struct exec *x, struct sel *s)
{
	const struct iql_select *q = s->q;
	int max = (int)q->ndims + s->m.ntags;
	s->gnames = xa_alloc(&x->a, (size_t)(max + 1) * sizeof *s->gnames);
	s->gpos = xa_alloc(&x->a, (size_t)(max + 1) * sizeof *s->gpos);
	if (!s->gnames || !s->gpos)
		return nomem(x);
	for (size_t i = 0; i < q->ndims; i++) {
		const struct iql_expr *d = q->dims[i];
		if (d->kind == IQL_E_VARREF) {
			if (!is_group_tag(s, d->name.s))
				s->gnames[s->ngroup++] = d->name.s;
		} else if (d->kind == IQL_E_WILDCARD) {
			for (int t = 0; t < s->m.ntags; t++) {
				const char *n = s->m.s->columns[s->m.tagcol[t]].name;
				if (!is_group_tag(s, n))
					s->gnames[s->ngroup++] = n;
			}
		} else if (d->kind == IQL_E_REGEX) {
			return fail(x, "unsupported: a regex in GROUP BY");
		}
	}
	qsort(s->gnames, (size_t)s->ngroup, sizeof *s->gnames, cmp_str);
	for (int i = 0; i < s->ngroup; i++) {
		int c = col_of(&s->m, s->gnames[i]);
		s->gpos[i] = c >= 0 ? tag_pos(&s->m, c) : -1;
	}
	return 0;
}

/* Add a column named name (made unique) reading column col (-1: none)
 * with function fn.  Returns 0 or -1. */
static int add_col(struct exec *x, struct sel *s, int cap, const char *name, int col,
                   enum iql_fn fn)
{
	struct ocol *c;
	if (s->ncols == cap)
		return fail(x, "too many columns");
	c = &s->cols[s->ncols];
	if (!(c->name = unique_name(x, s->cols, s->ncols, name)))
		return nomem(x);
	c->col = col;
	c->tag = col >= 0 ? tag_pos(&s->m, col) : -1;
	c->fn = fn;
	c->ft = col >= 0 ? ftype_of(s->m.s->columns[col].type) : F_NONE;
	s->ncols++;
	return 0;
}

/* qsort_r order of column indexes by their names in measurement m. */
static int cmp_colname(const void *a, const void *b, void *m)
{
	const struct meas *ms = m;
	return strcmp(ms->s->columns[*(const int *)a].name, ms->s->columns[*(const int *)b].name);
}

/* Whether fn over a field of type t is something InfluxDB computes. */
static int fn_takes(enum iql_fn fn, enum ftype t)
{
	if (t == F_FLOAT || t == F_INT || t == F_NONE)
		return 1;
	if (t == F_BOOL && (fn == IQL_FN_MIN || fn == IQL_FN_MAX))
		return 1;
	return fn == IQL_FN_COUNT || fn == IQL_FN_FIRST || fn == IQL_FN_LAST;
}

/* A function's name, as its column is named. */
static const char *fn_name(enum iql_fn fn)
{
	switch (fn) {
	case IQL_FN_MEAN: return "mean";
	case IQL_FN_MIN: return "min";
	case IQL_FN_MAX: return "max";
	case IQL_FN_SUM: return "sum";
	case IQL_FN_COUNT: return "count";
	case IQL_FN_FIRST: return "first";
	case IQL_FN_LAST: return "last";
	case IQL_FN_SPREAD: return "spread";
	case IQL_FN_STDDEV: return "stddev";
	case IQL_FN_PERCENTILE: return "percentile";
	default: return "?";
	}
}

/* The SELECT's columns (after time).  Returns 0 or -1. */
static int plan_columns(struct exec *x, struct sel *s)
{
	const struct iql_select *q = s->q;
	int cap = (int)q->nfields + s->m.s->ncolumns + 1 + (s->wild ? (int)s->wild->n : 0);
	int ncalls = 0, nraw = 0;
	if (!(s->cols = xa_alloc(&x->a, (size_t)cap * sizeof *s->cols)))
		return nomem(x);
	int nselect = 0, npct = 0;
	for (size_t i = 0; i < q->nfields; i++) {
		const struct iql_expr *e = q->fields[i].expr;
		while (e->kind == IQL_E_PAREN)
			e = e->lhs;
		if (e->kind == IQL_E_CALL) {
			ncalls++;
			nselect += e->fn == IQL_FN_MIN || e->fn == IQL_FN_MAX || e->fn == IQL_FN_FIRST ||
			           e->fn == IQL_FN_LAST || e->fn == IQL_FN_PERCENTILE;
			npct += e->fn == IQL_FN_PERCENTILE;
		} else if (!(e->kind == IQL_E_VARREF && strcmp(e->name.s, "time") == 0)) {
			nraw++;
		}
	}
	/* beside fields or tags, one selector only, as InfluxDB: they are
	 * taken at its point */
	if (ncalls && nraw && nselect < ncalls)
		return fail(x, "mixing aggregate and non-aggregate queries is not supported");
	if (ncalls && nraw && ncalls > 1)
		return fail(x, "mixing multiple selector functions with tags or fields is not supported");
	if (nraw && npct)
		return fail(x, "unsupported: percentile() beside fields or tags");
	s->agg = ncalls > 0;
	for (size_t i = 0; i < q->nfields; i++) {
		const struct iql_expr *e = q->fields[i].expr;
		const char *alias = q->fields[i].alias.s;
		while (e->kind == IQL_E_PAREN)
			e = e->lhs;
		if (e->kind == IQL_E_CALL) {
			const struct iql_expr *arg = e->nargs ? e->args[0] : NULL;
			int c;
			if (e->fn == IQL_FN_OTHER || e->fn == IQL_FN_NOW || e->fn == IQL_FN_TIME)
				return fail(x, "undefined function %s()", e->name.s);
			if (!arg || arg->kind != IQL_E_VARREF)
				return fail(x, "unsupported: %s() of anything but a field", fn_name(e->fn));
			c = col_of(&s->m, arg->name.s);
			if (c >= 0 && !is_field(&s->m, c))
				c = -1; /* a tag: InfluxDB has no values for it */
			if (c >= 0 && !fn_takes(e->fn, ftype_of(s->m.s->columns[c].type)))
				return fail(x, "unsupported %s iterator type: *query.%sInterruptIterator",
				            fn_name(e->fn), ftype_name(ftype_of(s->m.s->columns[c].type)));
			if (add_col(x, s, cap, alias ? alias : fn_name(e->fn), c, e->fn) < 0)
				return -1;
			if (e->fn == IQL_FN_PERCENTILE) {
				const struct iql_expr *p = e->args[1];
				if (p->kind != IQL_E_INTEGER && p->kind != IQL_E_FLOAT)
					return fail(x, "expected float argument in percentile()");
				s->cols[s->ncols - 1].pct = p->kind == IQL_E_INTEGER ? (double)p->i : p->f;
			}
		} else if (e->kind == IQL_E_VARREF) {
			if (strcmp(e->name.s, "time") == 0)
				continue;
			int c = col_of(&s->m, e->name.s);
			if (add_col(x, s, cap, alias ? alias : e->name.s, c, IQL_FN_OTHER) < 0)
				return -1;
		} else if (e->kind == IQL_E_WILDCARD && s->wild) {
			/* several measurements: the fields and tags of them all,
			 * null where this one has none of that name */
			for (size_t k = 0; k < s->wild->n; k++) {
				const char *name = s->wild->p[k];
				int c = col_of(&s->m, name);
				if (is_group_tag(s, name) || (c >= 0 && c == s->m.tscol))
					continue;
				if (add_col(x, s, cap, name, c, IQL_FN_OTHER) < 0)
					return -1;
			}
		} else if (e->kind == IQL_E_WILDCARD) {
			int idx[TS_COLUMNS_MAX], n = 0;
			for (int c = 0; c < s->m.s->ncolumns; c++) {
				if (c == s->m.tscol || (!is_field(&s->m, c) && tag_pos(&s->m, c) < 0))
					continue;
				if (tag_pos(&s->m, c) >= 0 && is_group_tag(s, s->m.s->columns[c].name))
					continue;
				idx[n++] = c;
			}
			qsort_r(idx, (size_t)n, sizeof *idx, cmp_colname, &s->m);
			for (int k = 0; k < n; k++)
				if (add_col(x, s, cap, s->m.s->columns[idx[k]].name, idx[k], IQL_FN_OTHER) < 0)
					return -1;
		} else {
			return fail(x, "unsupported expression in SELECT: only fields, tags, * and "
			            "function calls of a field are supported");
		}
	}
	for (int c = 0; c < s->ncols && s->agg; c++) {
		if (s->cols[c].fn == IQL_FN_OTHER)
			s->aux = 1;
		else
			s->selcol = c;
	}
	return 0;
}

/* The group key of series tags: "k=v,k=v" over the GROUP BY tags. */
static char *group_key(struct exec *x, const struct sel *s, const struct cell *tags,
                       struct cell **gvals)
{
	struct jbuf b = {0};
	char *k;
	*gvals = xa_alloc(&x->a, (size_t)(s->ngroup + 1) * sizeof **gvals);
	if (!*gvals)
		return NULL;
	for (int i = 0; i < s->ngroup; i++) {
		struct cell v = s->gpos[i] >= 0 ? tags[s->gpos[i]] : cstr("", 0);
		(*gvals)[i] = v;
		if (i)
			jbuf_putc(&b, ',');
		jbuf_puts(&b, s->gnames[i]);
		jbuf_putc(&b, '=');
		jbuf_put(&b, v.s, v.len);
	}
	jbuf_putc(&b, '\0');
	k = b.failed ? NULL : xa_strndup(&x->a, b.p, b.len - 1);
	jbuf_free(&b);
	return k;
}

/* The output series of group key key, or NULL when there is none yet. */
static struct oseries *find_series(const struct sel *s, const char *key)
{
	for (size_t i = s->out.n; i > 0; i--) {
		struct oseries *o = s->out.p[i - 1];
		if (strcmp(o->key, key) == 0)
			return o;
	}
	return NULL;
}

/* The output series the series of tags falls into, made on first use
 * (with its accumulators for aggregates); NULL after the error. */
static struct oseries *out_series_keyed(struct exec *x, struct sel *s, char *key,
                                        const struct cell *gv);

static struct oseries *out_series(struct exec *x, struct sel *s, const struct cell *tags)
{
	struct cell *gv;
	char *key = group_key(x, s, tags, &gv);
	if (!key) {
		nomem(x);
		return NULL;
	}
	return out_series_keyed(x, s, key, gv);
}

/* The output series of group key key (its group tags' values gv), made
 * on first use; NULL after the error. */
static struct oseries *out_series_keyed(struct exec *x, struct sel *s, char *key,
                                        const struct cell *gv)
{
	struct oseries *o;
	if ((o = find_series(s, key)))
		return o;
	if (!(o = xa_alloc(&x->a, sizeof *o)) || vec_push(&x->a, &s->out, o) < 0) {
		nomem(x);
		return NULL;
	}
	o->name = s->m.name;
	o->key = key;
	o->gtags = gv;
	if (s->agg) {
		s->naccs += s->nwin * s->ncols;
		if (s->naccs > TSD_IQL_BUCKETS_MAX) {
			fail(x, "max-select-buckets limit exceeded: (%lld/%lld)", (long long)s->naccs,
			     (long long)TSD_IQL_BUCKETS_MAX);
			return NULL;
		}
		o->nwin = s->nwin;
		o->accs = xa_alloc(&x->a, (size_t)(s->nwin * s->ncols) * sizeof *o->accs);
		o->hit = xa_alloc(&x->a, (size_t)s->nwin);
		if (!o->accs || !o->hit) {
			nomem(x);
			return NULL;
		}
	}
	return o;
}

/* The fields and tags beside a selector, at the point it just took. */
static int take_aux(struct exec *x, const struct sel *s, struct acc *a, const struct cell *tags,
                    const ts_value *row)
{
	if (!a->aux && !(a->aux = xa_alloc(&x->a, (size_t)(s->ncols + 1) * sizeof *a->aux)))
		return nomem(x);
	for (int c = 0; c < s->ncols; c++) {
		const struct ocol *oc = &s->cols[c];
		struct cell v;
		if (oc->fn != IQL_FN_OTHER)
			continue;
		if (oc->col < 0)
			v = cnull();
		else if (oc->tag >= 0)
			v = tags[oc->tag];
		else {
			v = cell_of(&row[s->rowpos[oc->col]], oc->ft);
			if (v.kind == C_STRING && !(v.s = xa_strndup(&x->a, v.s, v.len)))
				return nomem(x);
		}
		a->aux[c] = v;
	}
	return 0;
}

/* One row of a series read: into its output series. */
static int take_row(struct exec *x, struct sel *s, struct oseries **o, const struct cell *tags,
                    const ts_value *row, size_t seq, int *taken)
{
	int64_t ts = row[0].v.i;
	*taken = 0;
	if (s->agg) {
		int64_t w = 0;
		if (s->q->has_group_time) {
			if (ts < s->wlo || ts >= s->whi) { /* another window than the last row's */
				int64_t d = s->q->group_interval, lo = window_of(s, ts);
				s->wlo = lo;
				s->whi = lo > INT64_MAX - d ? INT64_MAX : lo + d;
				s->widx = (lo - s->start) / d;
			}
			w = s->widx;
		}
		if (w < 0 || w >= s->nwin)
			return 0;
		if (!*o && !(*o = out_series(x, s, tags)))
			return -1;
		(*o)->hit[w] = 1;
		for (int c = 0; c < s->ncols; c++) {
			const struct ocol *oc = &s->cols[c];
			struct acc *a = &(*o)->accs[w * s->ncols + c];
			int took;
			if (oc->col < 0 || oc->fn == IQL_FN_OTHER)
				continue;
			struct cell v = cell_of(&row[s->rowpos[oc->col]], oc->ft);
			if ((took = acc_add(x, a, oc, v, ts)) < 0)
				return -1;
			if (took && s->aux && take_aux(x, s, a, tags, row) < 0)
				return -1;
		}
		*taken = 1;
		return 0;
	}
	struct orow *r = xa_alloc(&x->a, sizeof *r);
	struct cell *v = xa_alloc(&x->a, (size_t)(s->ncols + 1) * sizeof *v);
	int any = 0;
	if (!r || !v)
		return nomem(x);
	for (int c = 0; c < s->ncols; c++) {
		const struct ocol *oc = &s->cols[c];
		if (oc->col < 0)
			v[c] = cnull();
		else if (oc->tag >= 0)
			v[c] = tags[oc->tag];
		else {
			v[c] = cell_of(&row[s->rowpos[oc->col]], oc->ft);
			if (v[c].kind == C_STRING && !(v[c].s = xa_strndup(&x->a, v[c].s, v[c].len)))
				return nomem(x);
			any |= v[c].kind != C_NULL;
		}
	}
	if (!any)
		return 0;
	if (!*o && !(*o = out_series(x, s, tags)))
		return -1;
	if (++s->nrows > TSD_IQL_ROWS_MAX)
		return fail(x, "max-select-point limit exceeded: (%zu/%zu)", s->nrows, TSD_IQL_ROWS_MAX);
	r->ts = ts;
	r->seq = seq;
	r->v = v;
	*taken = 1;
	return vec_push(&x->a, &(*o)->rows, r) < 0 ? nomem(x) : 0;
}

/* Whether s has no mean and no sum of floats: their windows, from
 * ts_aggregate, add block statistics up as blocks are cut, so that a
 * flush or a merge may change their last bits. */
static int calls_order_free(const struct sel *s)
{
	for (int c = 0; c < s->ncols; c++)
		if (s->cols[c].fn == IQL_FN_MEAN || (s->cols[c].fn == IQL_FN_SUM && s->cols[c].ft != F_INT))
			return 0;
	return 1;
}

/*
 * Whether the aggregates can come from ts_aggregate, whose blocks of one
 * series and one window answer from their statistics: windows aligned as
 * its are (no offset), no row condition, and only count, sum, min, max
 * and mean (as sum and count) of numeric fields, which merge across the
 * series an output series gathers.  Windows shorter than
 * TSD_IQL_BLOCKS_MIN_INTERVAL too, when the calls are order-free: few
 * blocks lie whole in one, but ts_aggregate folds the other blocks' rows
 * of a series in one loop reading only the fields asked (scan.c, runs),
 * where reading rows here takes each through the cursor, a cell and an
 * accumulator -- single-groupby-1-1-12 (one host's 4,320 rows in
 * 1-minute windows) took 2.4 M instructions a query that way against
 * 4.3 M from rows (callgrind, 2026-11-27).  Not with a mean or a sum of
 * floats: their windows would then depend on where blocks are cut, and a
 * flush would drop them from the window cache (qc_order_free).
 */
static int blocks_fit(const struct sel *s)
{
	if (!s->agg || !s->q->has_group_time || s->q->group_offset % s->q->group_interval != 0 ||
	    s->rowc.n || s->aux ||
	    (s->q->group_interval < TSD_IQL_BLOCKS_MIN_INTERVAL && !calls_order_free(s)))
		return 0;
	for (int c = 0; c < s->ncols; c++) {
		const struct ocol *oc = &s->cols[c];
		if (oc->col < 0)
			continue;
		if (oc->ft != F_FLOAT && oc->ft != F_INT)
			return 0;
		if (oc->fn != IQL_FN_COUNT && oc->fn != IQL_FN_SUM && oc->fn != IQL_FN_MIN &&
		    oc->fn != IQL_FN_MAX && oc->fn != IQL_FN_MEAN)
			return 0;
	}
	return 1;
}

/* A ts_aggregate result value as a cell of a column of type ft. */
static struct cell agg_cell(const ts_value *v, enum ftype ft)
{
	if (v->type == TS_DOUBLE)
		return isnan(v->v.d) ? cnull() : cfloat(v->v.d);
	return ft == F_FLOAT ? cfloat((double)v->v.i) : cint(v->v.i);
}

/* One series' windows from ts_aggregate (blocks_fit): for each column,
 * count and the function's value, merged into the output series'
 * accumulators.  Returns 0 or -1. */
static int agg_series(struct exec *x, struct sel *s, const struct cell *tags)
{
	ts_value prefix[TS_KEY_COLUMNS_MAX];
	ts_aggspec specs[2 * TS_COLUMNS_MAX];
	int first[TS_COLUMNS_MAX], nspecs = 0, rc, ntags = s->m.ntags;
	ts_aggregate ag;
	ts_cursor *cur = NULL;
	const ts_value *row;
	struct oseries *o = NULL;
	int64_t d = s->q->group_interval;
	for (int i = 0; i < ntags; i++)
		prefix[i] = key_value(&s->m, i, tags[i]);
	for (int c = 0; c < s->ncols; c++) {
		const struct ocol *oc = &s->cols[c];
		first[c] = -1;
		if (oc->col < 0)
			continue;
		first[c] = nspecs;
		specs[nspecs].column = oc->col;
		specs[nspecs++].fn = TS_AGG_COUNT;
		if (oc->fn == IQL_FN_COUNT)
			continue;
		specs[nspecs].column = oc->col;
		specs[nspecs++].fn = oc->fn == IQL_FN_MIN ? TS_AGG_MIN : oc->fn == IQL_FN_MAX ? TS_AGG_MAX
		                     : TS_AGG_SUM;
	}
	memset(&ag, 0, sizeof ag);
	ag.prefix = prefix;
	ag.nprefix = ntags;
	ag.from = s->tr.has_from ? s->tr.from : s->start;
	ag.to = s->tr.to;
	ag.every = d;
	ag.group = ntags;
	ag.specs = specs;
	ag.nspecs = nspecs;
	if (ag.from >= ag.to)
		return 0;
	if ((rc = ts_aggregate_open(s->m.t, &ag, &cur)) < 0)
		return fail(x, "%s: %s", s->m.name, ts_strerror(rc));
	while ((rc = ts_cursor_next(cur, &row, NULL)) == 0 && row) {
		int64_t w = (row[ntags].v.i - s->start) / d;
		const ts_value *val = row + ntags + 1;
		if (w < 0 || w >= s->nwin)
			continue;
		if (!o && !(o = out_series(x, s, tags)))
			break;
		o->hit[w] = 1;
		for (int c = 0; c < s->ncols; c++) {
			const struct ocol *oc = &s->cols[c];
			struct acc *a = &o->accs[w * s->ncols + c];
			int64_t n;
			struct cell v;
			if (first[c] < 0 || (n = val[first[c]].v.i) == 0)
				continue;
			a->n += n;
			if (oc->fn == IQL_FN_COUNT)
				continue;
			v = agg_cell(&val[first[c] + 1], oc->ft);
			if (v.kind == C_NULL)
				continue;
			if (oc->fn == IQL_FN_SUM || oc->fn == IQL_FN_MEAN) {
				a->sum += num(v);
				if (v.kind == C_INT)
					a->isum = (int64_t)((uint64_t)a->isum + (uint64_t)v.i);
			} else if (oc->fn == IQL_FN_MIN ? (a->n == n || beyond(v, a->min, -1))
			                               : (a->n == n || beyond(v, a->max, 1))) {
				if (oc->fn == IQL_FN_MIN)
					a->min = v;
				else
					a->max = v;
			}
		}
	}
	if (ts_cursor_source(cur)) /* (the window cache keeps no such windows) */
		s->rolled = 1;
	ts_cursor_close(cur);
	if (rc < 0)
		return fail(x, "%s: %s", s->m.name, ts_strerror(rc));
	return x->err[0] ? -1 : 0;
}

/* The query of the rows of the series of tags in the range, projected
 * (prefix: room for its tag values). */
static void series_query(const struct sel *s, const struct cell *tags, ts_value *prefix,
                         ts_query *q)
{
	for (int i = 0; i < s->m.ntags; i++)
		prefix[i] = key_value(&s->m, i, tags[i]);
	memset(q, 0, sizeof *q);
	q->prefix = prefix;
	q->nprefix = s->m.ntags;
	q->from = s->tr.from;
	q->has_from = s->tr.has_from;
	q->to = s->tr.to;
	q->has_to = s->tr.has_to;
	q->columns = s->proj;
	q->ncolumns = s->nproj;
}

/* Read one series' rows in the range.  Returns 0 or -1. */
static int scan_series(struct exec *x, struct sel *s, const struct cell *tags, size_t *seq)
{
	if (s->blocks)
		return agg_series(x, s, tags);
	ts_value prefix[TS_KEY_COLUMNS_MAX];
	ts_query q;
	ts_cursor *cur = NULL;
	const ts_value *row;
	struct oseries *o = NULL;
	struct env env = {&s->m, tags, NULL, s->rowpos, &s->refs};
	uint64_t want = 0, got = 0;
	int rc;
	series_query(s, tags, prefix, &q);
	if (!s->agg) {
		q.desc = s->q->order_desc;
		if (s->q->limit > 0)
			want = (uint64_t)s->q->limit + (uint64_t)s->q->offset;
	}
	if ((rc = ts_query_open(s->m.t, &q, &cur)) < 0)
		return fail(x, "%s: %s", s->m.name, ts_strerror(rc));
	while ((rc = ts_cursor_next(cur, &row, NULL)) == 0 && row) {
		int taken;
		env.row = row;
		if (s->rowc.n && !all_true(x, &s->rowc, &env))
			continue;
		if (x->err[0] || take_row(x, s, &o, tags, row, (*seq)++, &taken) < 0)
			break;
		if (want && taken && ++got >= want)
			break;
	}
	ts_cursor_close(cur);
	if (rc < 0)
		return fail(x, "%s: %s", s->m.name, ts_strerror(rc));
	return x->err[0] ? -1 : 0;
}

/* The earliest ts of the picked series before the upper bound, or
 * INT64_MAX when none has a row. */
static int earliest(struct exec *x, struct sel *s, struct cell **picked, size_t n, int64_t *out)
{
	*out = INT64_MAX;
	for (size_t i = 0; i < n; i++) {
		ts_value prefix[TS_KEY_COLUMNS_MAX];
		ts_query q;
		ts_cursor *cur;
		const ts_value *row;
		int rc, tscol = s->m.tscol;
		for (int k = 0; k < s->m.ntags; k++)
			prefix[k] = key_value(&s->m, k, picked[i][k]);
		memset(&q, 0, sizeof q);
		q.prefix = prefix;
		q.nprefix = s->m.ntags;
		q.to = s->tr.to;
		q.has_to = s->tr.has_to;
		q.columns = &tscol;
		q.ncolumns = 1;
		q.limit = 1;
		if ((rc = ts_query_open(s->m.t, &q, &cur)) < 0)
			return fail(x, "%s: %s", s->m.name, ts_strerror(rc));
		if ((rc = ts_cursor_next(cur, &row, NULL)) == 0 && row && row[0].v.i < *out)
			*out = row[0].v.i;
		ts_cursor_close(cur);
		if (rc < 0)
			return fail(x, "%s: %s", s->m.name, ts_strerror(rc));
	}
	return 0;
}

/* Whether call c of o found a value in the windows kept. */
static int found_in_windows(const struct sel *s, const struct oseries *o, int c)
{
	for (int64_t w = 0; w < o->nwin; w++)
		if (o->hit[w] && o->accs[w * s->ncols + c].n > 0)
			return 1;
	return 0;
}

/*
 * After LIMIT cut the windows read (plan_windows, s->cut), what the rows
 * past them would have told agg_rows of the series of tags: InfluxDB runs
 * each call over the whole range, so a call that finds a value anywhere
 * in a series answers in every window kept (null, or 0 for count, where
 * it found none there), and a series with a value only past the windows
 * kept is answered too.  Only the calls that found nothing in the windows
 * kept are looked for, in the rows from the cut on, each until found:
 * dense series cost nothing.  Returns 0 or -1.
 */
static int past_cut(struct exec *x, struct sel *s, const struct cell *tags)
{
	ts_value prefix[TS_KEY_COLUMNS_MAX];
	unsigned char want[TS_COLUMNS_MAX] = {0};
	struct env env = {&s->m, tags, NULL, s->rowpos, &s->refs};
	struct cell *gv;
	char *key = group_key(x, s, tags, &gv);
	struct oseries *o;
	ts_query q;
	ts_cursor *cur;
	const ts_value *row;
	int rc, nwant = 0, nfound = 0;
	if (!key)
		return nomem(x);
	o = find_series(s, key);
	for (int c = 0; c < s->ncols; c++)
		if (s->cols[c].fn != IQL_FN_OTHER && s->cols[c].col >= 0 &&
		    !(o && ((o->later && o->later[c]) || found_in_windows(s, o, c))))
			want[c] = 1, nwant++;
	if (nwant == 0)
		return 0;
	series_query(s, tags, prefix, &q);
	q.from = s->tr.to; /* from the cut on */
	q.has_from = 1;
	q.to = s->cut_to;
	q.has_to = 1;
	if ((rc = ts_query_open(s->m.t, &q, &cur)) < 0)
		return fail(x, "%s: %s", s->m.name, ts_strerror(rc));
	while (nfound < nwant && (rc = ts_cursor_next(cur, &row, NULL)) == 0 && row) {
		env.row = row;
		if (s->rowc.n && !all_true(x, &s->rowc, &env))
			continue;
		if (x->err[0])
			break;
		for (int c = 0; c < s->ncols; c++) {
			const struct ocol *oc = &s->cols[c];
			if (want[c] != 1 || cell_of(&row[s->rowpos[oc->col]], oc->ft).kind == C_NULL)
				continue;
			if ((!o && !(o = out_series(x, s, tags))) ||
			    (!o->later && !(o->later = xa_alloc(&x->a, (size_t)s->ncols + 1)))) {
				ts_cursor_close(cur);
				return x->err[0] ? -1 : nomem(x);
			}
			o->later[c] = 1;
			want[c] = 2;
			nfound++;
		}
	}
	ts_cursor_close(cur);
	if (rc < 0)
		return fail(x, "%s: %s", s->m.name, ts_strerror(rc));
	return x->err[0] ? -1 : 0;
}

/* qsort orders of output series (by group key) and of raw rows (by
 * time, ascending or descending, then by the order read). */
static int cmp_oseries(const void *a, const void *b)
{
	return strcmp((*(const struct oseries *const *)a)->key, (*(const struct oseries *const *)b)->key);
}

static int cmp_orow_asc(const void *a, const void *b)
{
	const struct orow *x = *(const struct orow *const *)a, *y = *(const struct orow *const *)b;
	if (x->ts != y->ts)
		return (x->ts > y->ts) - (x->ts < y->ts);
	return (x->seq > y->seq) - (x->seq < y->seq);
}

static int cmp_orow_desc(const void *a, const void *b)
{
	const struct orow *x = *(const struct orow *const *)a, *y = *(const struct orow *const *)b;
	if (x->ts != y->ts)
		return (x->ts < y->ts) - (x->ts > y->ts);
	return (x->seq > y->seq) - (x->seq < y->seq);
}

/* Fill the nulls of column c over the windows of one series. */
static void fill_column(const struct sel *s, const struct ocol *oc, struct cell **vals,
                        const unsigned char *hit, int64_t nwin, int c)
{
	const struct iql_select *q = s->q;
	if (q->fill == IQL_FILL_NUMBER) {
		for (int64_t w = 0; w < nwin; w++)
			if (!hit[w] && vals[w][c].kind == C_NULL)
				vals[w][c] = q->fill_is_int && oc->ft != F_FLOAT ? cint(q->fill_int)
				             : oc->ft == F_INT && oc->fn != IQL_FN_MEAN &&
				               oc->fn != IQL_FN_STDDEV ? cint((int64_t)q->fill_value)
				             : cfloat(q->fill_value);
		return;
	}
	if (q->fill == IQL_FILL_PREVIOUS) {
		for (int64_t w = 1; w < nwin; w++)
			if (!hit[w] && vals[w][c].kind == C_NULL)
				vals[w][c] = vals[w - 1][c];
		return;
	}
	if (q->fill == IQL_FILL_LINEAR) {
		int64_t prev = -1;
		for (int64_t w = 0; w < nwin; w++) {
			if (vals[w][c].kind == C_NULL)
				continue;
			if (prev >= 0 && w - prev > 1 && is_num(vals[prev][c]) && is_num(vals[w][c])) {
				for (int64_t k = prev + 1; k < w; k++) {
					if (vals[prev][c].kind == C_INT && vals[w][c].kind == C_INT)
						vals[k][c] = cint(vals[prev][c].i + (vals[w][c].i - vals[prev][c].i) *
						                  (k - prev) / (w - prev));
					else
						vals[k][c] = cfloat(num(vals[prev][c]) + (num(vals[w][c]) -
						                    num(vals[prev][c])) * (double)(k - prev) /
						                    (double)(w - prev));
				}
			}
			prev = w;
		}
	}
}

/* The rows of an aggregate output series into r.  As InfluxDB 1.6 runs
 * each call over each series on its own: a call that found no value in
 * the series (a null float field all along, or a field its measurement
 * lacks) is null in every window, count too, but for fill(N); one that
 * found some is filled (fill()) where it found none; windows and the
 * series are answered only where some call found a value (all windows
 * under GROUP BY time but with fill(none)); none found any: no rows. */
static int agg_rows(struct exec *x, struct sel *s, struct oseries *o, struct rseries *r)
{
	int64_t nwin = o->nwin, sel_ts = INT64_MIN;
	int ncalls = 0, sc = -1, selector, anyc = 0;
	unsigned char *hitv = xa_alloc(&x->a, (size_t)nwin + 1);
	unsigned char *hitc = xa_alloc(&x->a, (size_t)nwin + 1);
	unsigned char *found = xa_alloc(&x->a, (size_t)s->ncols + 1);
	if (!hitv || !hitc || !found)
		return nomem(x);
	for (int c = 0; c < s->ncols; c++)
		for (int64_t w = 0; w < nwin && s->cols[c].fn != IQL_FN_OTHER && s->cols[c].col >= 0; w++)
			if (o->hit[w] && o->accs[w * s->ncols + c].n > 0) {
				hitv[w] = found[c] = 1;
				anyc = 1;
			}
	for (int c = 0; o->later && c < s->ncols; c++)
		if (o->later[c]) /* a value past the windows LIMIT kept (past_cut) */
			found[c] = anyc = 1;
	if (!anyc) {
		r->nrows = 0;
		return 0;
	}
	for (int c = 0; c < s->ncols; c++)
		if (s->cols[c].fn != IQL_FN_OTHER)
			ncalls++, sc = c;
	selector = !s->q->has_group_time && ncalls == 1 &&
	           (s->cols[sc].fn == IQL_FN_MIN || s->cols[sc].fn == IQL_FN_MAX ||
	            s->cols[sc].fn == IQL_FN_FIRST || s->cols[sc].fn == IQL_FN_LAST ||
	            s->cols[sc].fn == IQL_FN_PERCENTILE);
	struct cell **vals = xa_alloc(&x->a, (size_t)nwin * sizeof *vals);
	int64_t *ts = xa_alloc(&x->a, (size_t)nwin * sizeof *ts);
	size_t n = 0;
	if (!vals || !ts)
		return nomem(x);
	for (int64_t w = 0; w < nwin; w++) {
		if (!(vals[w] = xa_alloc(&x->a, (size_t)(s->ncols + 1) * sizeof **vals)))
			return nomem(x);
		for (int c = 0; c < s->ncols; c++) {
			int64_t pts = INT64_MIN;
			if (s->cols[c].fn == IQL_FN_OTHER) { /* beside the selector */
				const struct acc *sa = &o->accs[w * s->ncols + s->selcol];
				vals[w][c] = sa->aux ? sa->aux[c] : cnull();
				continue;
			}
			vals[w][c] = s->cols[c].col < 0 ? cnull()
			             : acc_value(x, &o->accs[w * s->ncols + c], &s->cols[c], &pts);
			if (s->cols[c].fn == IQL_FN_COUNT && o->accs[w * s->ncols + c].n == 0)
				vals[w][c] = found[c] && s->q->has_group_time && s->q->fill == IQL_FILL_NULL
				             ? cint(0) : cnull();
			if (selector)
				sel_ts = pts;
		}
	}
	if (s->q->has_group_time)
		for (int c = 0; c < s->ncols; c++) {
			if (s->cols[c].fn == IQL_FN_OTHER)
				continue;
			for (int64_t w = 0; w < nwin; w++)
				hitc[w] = o->hit[w] && o->accs[w * s->ncols + c].n > 0;
			fill_column(s, &s->cols[c], vals, hitc, nwin, c);
		}
	for (int64_t w = 0; w < nwin; w++) {
		if (!hitv[w] && (!s->q->has_group_time || s->q->fill == IQL_FILL_NONE))
			continue;
		ts[n] = s->q->has_group_time ? s->start + w * s->q->group_interval
		        : selector && sel_ts != INT64_MIN ? sel_ts
		        : s->tr.has_from ? s->tr.from : 0;
		vals[n++] = vals[w];
	}
	if (s->q->order_desc)
		for (size_t i = 0; i < n / 2; i++) {
			int64_t t = ts[i];
			struct cell *v = vals[i];
			ts[i] = ts[n - 1 - i];
			vals[i] = vals[n - 1 - i];
			ts[n - 1 - i] = t;
			vals[n - 1 - i] = v;
		}
	r->ts = ts;
	r->vals = vals;
	r->nrows = n;
	return 0;
}

/* The rows of a raw output series into r, in time order (ties in the
 * order they were read). */
static int raw_rows(struct exec *x, struct sel *s, struct oseries *o, struct rseries *r)
{
	size_t n = o->rows.n;
	if (n > 1)
		qsort(o->rows.p, n, sizeof *o->rows.p, s->q->order_desc ? cmp_orow_desc : cmp_orow_asc);
	r->ts = xa_alloc(&x->a, (n + 1) * sizeof *r->ts);
	r->vals = xa_alloc(&x->a, (n + 1) * sizeof *r->vals);
	if (!r->ts || !r->vals)
		return nomem(x);
	for (size_t i = 0; i < n; i++) {
		const struct orow *w = o->rows.p[i];
		r->ts[i] = w->ts;
		r->vals[i] = w->v;
	}
	r->nrows = n;
	return 0;
}

/* The output series of s, sorted, cut, into res. */
static int finish_select(struct exec *x, struct sel *s, struct result *res)
{
	const struct iql_select *q = s->q;
	const char **cols = xa_alloc(&x->a, (size_t)(s->ncols + 1) * sizeof *cols);
	size_t first = 0, last = s->out.n;
	if (!cols)
		return nomem(x);
	cols[0] = "time";
	for (int c = 0; c < s->ncols; c++)
		cols[c + 1] = s->cols[c].name;
	if (s->out.n > 1) /* (an empty vec has no array to pass) */
		qsort(s->out.p, s->out.n, sizeof *s->out.p, cmp_oseries);
	/* SOFFSET and SLIMIT cut the series in their ascending order (under
	 * ORDER BY time DESC too), per measurement, as InfluxDB 1.6 does */
	if (q->soffset > 0)
		first = (size_t)q->soffset < last ? (size_t)q->soffset : last;
	if (q->slimit > 0 && last - first > (size_t)q->slimit)
		last = first + (size_t)q->slimit;
	if (q->order_desc) /* InfluxDB lists the series backwards too */
		for (size_t i = 0; i < (last - first) / 2; i++) {
			void *t = s->out.p[first + i];
			s->out.p[first + i] = s->out.p[last - 1 - i];
			s->out.p[last - 1 - i] = t;
		}
	for (size_t i = first; i < last; i++) {
		struct oseries *o = s->out.p[i];
		struct rseries *r = xa_alloc(&x->a, sizeof *r);
		if (!r)
			return nomem(x);
		r->name = o->name;
		r->ntags = s->ngroup;
		r->tagk = s->gnames;
		r->tagv = o->gtags;
		r->ncols = s->ncols + 1;
		r->cols = cols;
		r->has_time = 1;
		if ((s->agg ? agg_rows(x, s, o, r) : raw_rows(x, s, o, r)) < 0)
			return -1;
		size_t off = q->offset > 0 ? (size_t)q->offset : 0;
		if (off >= r->nrows)
			continue;
		r->ts += off;
		r->vals += off;
		r->nrows -= off;
		if (q->limit > 0 && r->nrows > (size_t)q->limit)
			r->nrows = (size_t)q->limit;
		if (vec_push(&x->a, &res->series, r) < 0)
			return nomem(x);
	}
	return 0;
}

/* Decide the windows of an aggregate.  Returns 1 to go on, 0 when the
 * answer is empty, -1 on error. */
static int plan_windows(struct exec *x, struct sel *s, struct cell **picked, size_t n)
{
	const struct iql_select *q = s->q;
	if (!q->has_group_time) {
		s->nwin = 1;
		return 1;
	}
	int64_t from = s->tr.from;
	if (!s->tr.has_from) {
		if (earliest(x, s, picked, n, &from) < 0)
			return -1;
		if (from == INT64_MAX)
			return 0;
	}
	if (from >= s->tr.to)
		return 0;
	s->start = window_of(s, from);
	s->wlo = s->whi = 0; /* (take_row's last window: none) */
	s->nwin = (window_of(s, s->tr.to - 1) - s->start) / q->group_interval + 1;
	/* LIMIT (+ OFFSET) windows in time order, every window answered
	 * (no fill(none), which leaves windows out, nor fill(linear), which
	 * looks past the last one): the rows after them are never read
	 * (TSBS's groupby-orderby-limit). */
	if (q->limit > 0 && !q->order_desc && q->fill != IQL_FILL_NONE &&
	    q->fill != IQL_FILL_LINEAR && q->offset >= 0 && q->limit + q->offset < s->nwin) {
		s->nwin = q->limit + q->offset;
		s->cut = 1;
		s->cut_to = s->tr.to;
		s->tr.to = s->start + s->nwin * q->group_interval;
	}
	if (s->nwin > TSD_IQL_BUCKETS_MAX / (s->ncols ? s->ncols : 1))
		return fail(x, "max-select-buckets limit exceeded: (%lld/%lld)",
		            (long long)s->nwin, (long long)TSD_IQL_BUCKETS_MAX);
	return 1;
}

/* The columns read from each series: ts, then the fields needed. */
static void plan_projection(struct sel *s)
{
	unsigned char need[TS_COLUMNS_MAX] = {0};
	for (int c = 0; c < s->ncols; c++)
		if (is_field(&s->m, s->cols[c].col))
			need[s->cols[c].col] = 1;
	for (size_t i = 0; i < s->rowc.n; i++)
		mark_fields(&s->m, s->rowc.p[i], need);
	for (int c = 0; c < s->m.s->ncolumns; c++)
		s->rowpos[c] = -1;
	s->proj[s->nproj++] = s->m.tscol;
	s->rowpos[s->m.tscol] = 0;
	for (int c = 0; c < s->m.s->ncolumns; c++)
		if (need[c]) {
			s->rowpos[c] = s->nproj;
			s->proj[s->nproj++] = c;
		}
}

/* ---- The window cache ---- */

/*
 * The window cache: the windows of aggregate SELECTs with GROUP BY time(),
 * kept across requests so that a dashboard's repeated and overlapping
 * queries (Grafana asks the same ones at every refresh, over a range that
 * moves) read only the windows they have not seen (docs/influxql.md
 * section 3.1).
 *
 * An entry is one query shape over one table: the measurement, the
 * calls (function, column, type, percentile), the window's size and
 * offset, the GROUP BY tags, the conditions on tags and fields as
 * canonical InfluxQL (iql_format_expr), and whether the windows come
 * from block statistics -- everything a window's answer depends on but
 * the rows.  It holds, for a run of whole windows [from, from + nwin *
 * every), each output series' windows: whether a row fell in each, and
 * each call's count and value (before fill(), which the statement applies
 * after, as to windows it computed).  Floats carry their JSON text.
 *
 * Exact always:
 *   - an entry belongs to the table state it was computed at (struct
 *     table_state; qc_same): the incarnation (a drop and create), the version (the
 *     LSN of the newest commit: every insert, replacement and delete
 *     commits), the descriptor's generation (flush, merge, expiry,
 *     purge, alter), the schema version and the TTL, read before the
 *     windows are computed.  A lookup that finds its shape at another
 *     state moves the entry to the new one when qc_still finds that
 *     nothing since changed its windows, and drops it otherwise
 *     (counted as an invalidation);
 *   - rows that expire while nothing commits (a TTL, as time passes)
 *     change only windows that begin before the expiry point now: those
 *     are never served, but computed again;
 *   - only whole windows are kept and served: the windows the query's
 *     range clips (its first and last, unless it begins and ends on
 *     window edges) and those the entry lacks are computed from the
 *     table, over the parts of the range left, as without the cache;
 *   - a statement some of whose windows a rollup of the table answered
 *     (ts_cursor_source) is not kept: a rollup answers by its watermark
 *     and by what reading it costs over the query's range, and its
 *     doubles' sums may differ from the rows' in their last bits.
 * A window's answer does not depend on the range it was computed in:
 * its rows (or its blocks, ts_aggregate, which summarises only blocks
 * lying whole in one window) are read in the same order whatever range
 * holds it (test_influxq's cache tests compare cached and uncached
 * answers byte for byte).
 *
 * Bounded: the entries' bytes stay within the budget (query-cache-size,
 * TSD_IQL_CACHE_DEFAULT; 0 turns the cache off), the least recently used
 * evicted first.  Entries are immutable once made (but for the state
 * qc_scan moves them to, under the mutex); a statement that
 * serves windows from one holds a reference until its answer is written
 * (exec_clear), so eviction only unlinks an entry in use.  One mutex
 * guards the table, the list and the counters: requests run on several
 * worker threads.
 */

/* What a table's windows depend on besides the query (see above). */

/* One output series' windows in an entry. */
struct qc_series {
	char *key;            /* its group key (group_key) */
	struct cell *gtags;   /* the group tags' values */
	unsigned char *hit;   /* nwin: a row fell in the window */
	int64_t *n;           /* nwin * ncols: each call's count */
	struct cell *v;       /* nwin * ncols: each call's value */
};

struct qc_entry {
	struct qc_entry *prev, *next; /* the LRU list, newest first */
	struct qc_entry *hnext;       /* the hash chain */
	uint64_t hash;
	char *key;                    /* the shape (qc_shape) */
	size_t keylen;
	struct table_state st;        /* the state its windows are the table's at */
	int order_free;               /* qc_order_free: flushes and merges leave them */
	int64_t from, every, nwin;    /* the whole windows held */
	int ncols, ngroup;
	size_t nseries;               /* sorted by key */
	struct qc_series *series;
	size_t bytes;                 /* the entry's one allocation */
	int refs;                     /* statements reading it */
	int linked;                   /* in the table and the list */
};

/* An entry a statement reads, released by exec_clear. */
struct qc_hold {
	struct qc_entry *e;
	struct qc_hold *next;
};

#define QC_BUCKETS 1024

static pthread_mutex_t qc_lock = PTHREAD_MUTEX_INITIALIZER;
static struct qc_entry *qc_table[QC_BUCKETS];
static struct qc_entry *qc_newest, *qc_oldest;
static size_t qc_budget = TSD_IQL_CACHE_DEFAULT;
static struct tsd_iql_cache_stats qc_stats;

/* FNV-1a of key[0..n). */
static uint64_t qc_hash(const char *key, size_t n)
{
	uint64_t h = UINT64_C(14695981039346656037);
	for (size_t i = 0; i < n; i++)
		h = (h ^ (unsigned char)key[i]) * UINT64_C(1099511628211);
	return h;
}

/* Take e out of the table and the list (qc_lock held); freed now unless
 * a statement reads it (then by the last qc_release). */
static void qc_unlink(struct qc_entry *e)
{
	struct qc_entry **p = &qc_table[e->hash % QC_BUCKETS];
	while (*p != e)
		p = &(*p)->hnext;
	*p = e->hnext;
	if (e->prev)
		e->prev->next = e->next;
	else
		qc_newest = e->next;
	if (e->next)
		e->next->prev = e->prev;
	else
		qc_oldest = e->prev;
	e->linked = 0;
	qc_stats.bytes -= e->bytes;
	qc_stats.entries--;
	if (!e->refs)
		free(e);
}

/* Evict the least recently used entries until bytes more fit in the
 * budget (qc_lock held). */
static void qc_evict(size_t bytes)
{
	while (qc_oldest && qc_stats.bytes + bytes > qc_budget) {
		qc_unlink(qc_oldest);
		qc_stats.evictions++;
	}
}

/* The entry of shape key (qc_lock held), or NULL. */
static struct qc_entry *qc_find(const char *key, size_t n, uint64_t h)
{
	for (struct qc_entry *e = qc_table[h % QC_BUCKETS]; e; e = e->hnext)
		if (e->hash == h && e->keylen == n && memcmp(e->key, key, n) == 0)
			return e;
	return NULL;
}

/* Make e the most recently used (qc_lock held). */
static void qc_touch(struct qc_entry *e)
{
	if (qc_newest == e)
		return;
	e->prev->next = e->next;
	if (e->next)
		e->next->prev = e->prev;
	else
		qc_oldest = e->prev;
	e->prev = NULL;
	e->next = qc_newest;
	qc_newest->prev = e;
	qc_newest = e;
}

/* Link e, newest, in place of any entry of its shape (qc_lock held). */
static void qc_link(struct qc_entry *e)
{
	struct qc_entry *old = qc_find(e->key, e->keylen, e->hash);
	if (old)
		qc_unlink(old);
	qc_evict(e->bytes);
	e->hnext = qc_table[e->hash % QC_BUCKETS];
	qc_table[e->hash % QC_BUCKETS] = e;
	e->prev = NULL;
	e->next = qc_newest;
	if (qc_newest)
		qc_newest->prev = e;
	else
		qc_oldest = e;
	qc_newest = e;
	e->linked = 1;
	qc_stats.bytes += e->bytes;
	qc_stats.entries++;
	qc_stats.stores++;
}

void tsd_influxq_cache_size(size_t bytes)
{
	pthread_mutex_lock(&qc_lock);
	qc_budget = bytes;
	qc_evict(0);
	pthread_mutex_unlock(&qc_lock);
}

void tsd_influxq_cache_stats(struct tsd_iql_cache_stats *out)
{
	pthread_mutex_lock(&qc_lock);
	*out = qc_stats;
	out->budget = qc_budget;
	pthread_mutex_unlock(&qc_lock);
}

/* Release the entries x read (exec_clear). */
static void qc_release_all(struct exec *x)
{
	if (!x->qheld)
		return;
	pthread_mutex_lock(&qc_lock);
	while (x->qheld) {
		struct qc_hold *h = x->qheld;
		x->qheld = h->next;
		if (--h->e->refs == 0 && !h->e->linked)
			free(h->e);
		free(h);
	}
	pthread_mutex_unlock(&qc_lock);
}

static int qc_same(const struct table_state *a, const struct table_state *b)
{
	return a->incarnation == b->incarnation && a->version == b->version &&
	       a->generation == b->generation && a->schema == b->schema && a->ttl == b->ttl;
}

/*
 * Whether s's windows are the same whatever tablets hold its rows: flushes
 * and merges move rows between a table's filling trees and tablets and
 * change none, and rows are read in key order wherever they lie -- but
 * block statistics (s->blocks) add up block by block, so a float sum, or
 * a mean, over them depends on where the blocks are cut.
 */
static int qc_order_free(const struct sel *s)
{
	return !s->blocks || calls_order_free(s);
}

/*
 * Whether windows [c0, c1) of s, computed at table state was, are still
 * the table's at state now: the same table, schema and TTL; the same
 * descriptor, or windows that no flush or merge changes (order_free);
 * and no commit since touched them -- ts_changes_open over the versions
 * in between, which may report windows that did not change but never
 * misses one that did.  So a live table's dashboard keeps its past
 * windows while rows arrive for the present.  Returns 1 or 0.
 */
static int qc_still(ts_table *t, const struct table_state *was, int order_free,
                    const struct table_state *now, int64_t c0, int64_t c1)
{
	ts_changes_spec spec;
	ts_cursor *cur;
	const ts_value *row;
	int rc, clean = 1;
	if (was->incarnation != now->incarnation || was->schema != now->schema ||
	    was->ttl != now->ttl || (was->generation != now->generation && !order_free) ||
	    was->version > now->version)
		return 0;
	if (was->version == now->version)
		return 1;
	memset(&spec, 0, sizeof spec);
	spec.since = (uint64_t)was->version;
	spec.until = (uint64_t)now->version;
	if (ts_changes_open(t, &spec, &cur) < 0)
		return 0;
	while (clean && (rc = ts_cursor_next(cur, &row, NULL)) == 0 && row)
		if (row[0].v.i < c1 && row[1].v.i > c0) /* [from, to) meets the windows */
			clean = 0;
	ts_cursor_close(cur);
	return clean && rc == 0;
}

/* Whether s's windows may be cached: an aggregate with GROUP BY time()
 * over a range with both ends, no LIMIT cut, nothing beside a selector,
 * and calls of numbers and booleans only (strings are not kept). */
static int qc_fits(const struct sel *s)
{
	if (!s->agg || !s->q->has_group_time || s->aux || s->cut || !s->tr.has_from ||
	    !s->tr.has_to || s->nwin < 1)
		return 0;
	for (int c = 0; c < s->ncols; c++)
		if (s->cols[c].col >= 0 && s->cols[c].ft != F_FLOAT && s->cols[c].ft != F_INT &&
		    s->cols[c].ft != F_BOOL)
			return 0;
	return 1;
}

/* Append the conditions of v to b as canonical InfluxQL.  Returns 0, or
 * -1 when one is too long or names now() (its value moves). */
static int qc_conds(struct jbuf *b, const char *what, const struct vec *v)
{
	char text[4096];
	jbuf_puts(b, what);
	for (size_t i = 0; i < v->n; i++) {
		size_t n = iql_format_expr(v->p[i], text, sizeof text);
		if (n >= sizeof text || strstr(text, "now()"))
			return -1;
		jbuf_put(b, text, n);
		jbuf_putc(b, '\n');
	}
	return 0;
}

/* s's shape as the key of its entry (see above) into b.  Returns 0, or
 * -1 when it cannot be cached. */
static int qc_shape(const struct sel *s, struct jbuf *b)
{
	const struct iql_select *q = s->q;
	jbuf_printf(b, "%s\n%lld %lld %d %d\n", s->m.name, (long long)q->group_interval,
	            (long long)(q->group_offset % q->group_interval), s->blocks, s->ngroup);
	for (int i = 0; i < s->ngroup; i++)
		jbuf_printf(b, "%s\n", s->gnames[i]);
	for (int c = 0; c < s->ncols; c++)
		jbuf_printf(b, "%d %d %d %.17g\n", (int)s->cols[c].fn, s->cols[c].col,
		            (int)s->cols[c].ft, s->cols[c].pct);
	if (qc_conds(b, "tags\n", &s->tagc) < 0 || qc_conds(b, "rows\n", &s->rowc) < 0)
		return -1;
	return b->failed ? -1 : 0;
}

/* The value of call c in window w of o (before fill). */
static struct cell qc_value(struct exec *x, struct sel *s, struct oseries *o, int64_t w, int c)
{
	int64_t pts = 0;
	if (s->cols[c].col < 0 || s->cols[c].fn == IQL_FN_OTHER)
		return cnull();
	return acc_value(x, &o->accs[w * s->ncols + c], &s->cols[c], &pts);
}

/* A bump allocator over one block: with base NULL it only measures. */
struct qc_bump {
	char *base;
	size_t used;
};

static void *qc_take(struct qc_bump *b, size_t n)
{
	void *p;
	b->used = (b->used + 15) & ~(size_t)15;
	p = b->base ? b->base + b->used : NULL;
	b->used += n;
	return p;
}

static char *qc_str(struct qc_bump *b, const char *s, size_t n)
{
	char *p = qc_take(b, n + 1);
	if (p) {
		if (n)
			memcpy(p, s, n);
		p[n] = '\0';
	}
	return p;
}

/* A cell copied into b: strings and float texts with it; a float without
 * its text gets it (put_float). */
static struct cell qc_cell(struct qc_bump *b, struct cell c)
{
	char text[64];
	if (c.kind == C_FLOAT && !c.s) {
		struct jbuf j = {0};
		put_float(&j, c.f);
		if (!j.failed && j.len < sizeof text) {
			memcpy(text, j.p, j.len);
			c.s = text;
			c.len = j.len;
		}
		jbuf_free(&j);
	}
	if (c.s)
		c.s = qc_str(b, c.s, c.len);
	return c;
}

/* Where the windows of the entry being made come from: the query's
 * output series over its whole windows [lo, hi), the old entry (or
 * NULL) elsewhere. */
struct qc_src {
	struct exec *x;
	struct sel *s;
	struct oseries **out; /* s's output series, sorted by key (ascending:
	                       * finish_select reverses them under DESC) */
	size_t nout;
	int64_t lo, hi;
	const struct qc_entry *old;
	int order_free;
};

/* Lay out into b the entry of shape key holding windows [from, from +
 * nwin * every) from src (with base NULL: measure it).  Series without a
 * row in those windows are left out. */
static struct qc_entry *qc_build(struct qc_bump *b, const struct qc_src *src, const char *key,
                                 size_t keylen, const struct table_state *st, int64_t from,
                                 int64_t nwin)
{
	struct sel *s = src->s;
	const struct qc_entry *old = src->old;
	int64_t d = s->q->group_interval;
	int ncols = s->ncols;
	size_t io = 0, iq = 0, ns = 0, nmax = src->nout + (old ? old->nseries : 0);
	struct qc_entry *e = qc_take(b, sizeof *e);
	char *k = qc_str(b, key, keylen);
	struct qc_series *series = qc_take(b, (nmax + 1) * sizeof *series);
	if (e) {
		memset(e, 0, sizeof *e);
		e->key = k;
		e->keylen = keylen;
		e->hash = qc_hash(key, keylen);
		e->st = *st;
		e->order_free = src->order_free;
		e->from = from;
		e->every = d;
		e->nwin = nwin;
		e->ncols = ncols;
		e->ngroup = s->ngroup;
		e->series = series;
	}
	/* the two lists merged by key, both sorted */
	while (iq < src->nout || (old && io < old->nseries)) {
		struct oseries *o = iq < src->nout ? src->out[iq] : NULL;
		const struct qc_series *os = old && io < old->nseries ? &old->series[io] : NULL;
		int cmp = !o ? 1 : !os ? -1 : strcmp(o->key, os->key);
		const char *skey = cmp <= 0 ? o->key : os->key;
		const struct cell *gtags = cmp <= 0 ? o->gtags : os->gtags;
		struct qc_series *q = series ? &series[ns] : NULL;
		unsigned char *hit = qc_take(b, (size_t)nwin);
		int64_t *n = qc_take(b, (size_t)(nwin * ncols) * sizeof *n);
		struct cell *v = qc_take(b, (size_t)(nwin * ncols) * sizeof *v);
		int any = 0;
		for (int64_t w = 0; w < nwin; w++) {
			int64_t t = from + w * d;
			int mine = t >= src->lo && t < src->hi;
			for (int c = 0; c < ncols; c++) {
				struct cell val = cnull();
				int64_t cnt = 0;
				int h = 0;
				if (mine && cmp <= 0) {
					int64_t ow = (t - s->start) / d;
					h = o->hit[ow];
					cnt = o->accs[ow * ncols + c].n;
					if (h)
						val = qc_value(src->x, s, o, ow, c);
				} else if (!mine && cmp >= 0 && t >= old->from &&
				           t < old->from + old->nwin * d) {
					int64_t ow = (t - old->from) / d;
					h = os->hit[ow];
					cnt = os->n[ow * ncols + c];
					val = os->v[ow * ncols + c];
				}
				any |= h;
				if (hit && c == 0)
					hit[w] = (unsigned char)h;
				if (n) {
					n[w * ncols + c] = cnt;
					v[w * ncols + c] = qc_cell(b, val);
				} else
					(void)qc_cell(b, val);
			}
		}
		if (cmp <= 0)
			iq++;
		if (cmp >= 0)
			io++;
		if (!any) /* no row in the windows kept: left out (its room unused) */
			continue;
		if (q) {
			q->key = qc_str(b, skey, strlen(skey));
			q->gtags = qc_take(b, (size_t)(s->ngroup + 1) * sizeof *q->gtags);
			for (int i = 0; i < s->ngroup; i++)
				q->gtags[i] = qc_cell(b, gtags[i]);
			q->hit = hit;
			q->n = n;
			q->v = v;
		} else {
			qc_str(b, skey, strlen(skey));
			qc_take(b, (size_t)(s->ngroup + 1) * sizeof(struct cell));
			for (int i = 0; i < s->ngroup; i++)
				qc_cell(b, gtags[i]);
		}
		ns++;
	}
	if (e)
		e->nseries = ns;
	return e;
}

/* How a statement uses the cache (qc_begin, qc_scan, qc_end). */
struct qc_use {
	int on;               /* its windows may be cached */
	struct jbuf key;      /* its shape */
	uint64_t hash;
	struct table_state st;   /* the table's state before it read */
	int order_free;       /* qc_order_free(s) */
	int64_t lo, hi;       /* its whole windows: [lo, hi) */
	int covered;          /* the entry served them all: nothing to keep */
};

/* Whether s's windows go through the cache: u filled when they do. */
static int qc_begin(struct sel *s, struct qc_use *u)
{
	size_t budget;
	memset(u, 0, sizeof *u);
	pthread_mutex_lock(&qc_lock);
	budget = qc_budget;
	pthread_mutex_unlock(&qc_lock);
	if (!budget || !qc_fits(s) || table_state_of(s->m.t, &u->st) < 0)
		return 0;
	if (qc_shape(s, &u->key) < 0) {
		jbuf_free(&u->key);
		return 0;
	}
	u->hash = qc_hash(u->key.p, u->key.len);
	u->order_free = qc_order_free(s);
	u->on = 1;
	return 1;
}

/* Read every picked series over [from, to).  Returns 0 or -1. */
static int qc_read(struct exec *x, struct sel *s, struct cell **picked, size_t n, size_t *seq,
                   int64_t from, int64_t to)
{
	struct trange keep = s->tr;
	int rc = 0;
	if (from >= to)
		return 0;
	s->tr.from = from;
	s->tr.to = to;
	s->tr.has_from = s->tr.has_to = 1;
	for (size_t i = 0; i < n && rc == 0; i++)
		rc = scan_series(x, s, picked[i], seq);
	s->tr = keep;
	return rc;
}

/*
 * qc_scan -- the windows of s (qc_begin said they go through the cache):
 * the whole windows its entry holds, served from it while its state is
 * the table's, and the rest (the clipped windows at the range's ends,
 * those the entry lacks) read from the table.  Returns 0 or -1.
 */
static int qc_scan(struct exec *x, struct sel *s, struct cell **picked, size_t n, size_t *seq,
                   struct qc_use *u)
{
	int64_t d = s->q->group_interval, from = s->tr.from, to = s->tr.to, u0 = 0, u1 = 0;
	struct qc_entry *e = NULL;
	struct qc_hold *h;
	u->lo = window_of(s, from);
	if (u->lo < from)
		u->lo += d;
	u->hi = window_of(s, to);
	if (u->lo >= u->hi)
		return qc_read(x, s, picked, n, seq, from, to);
	if (!(h = malloc(sizeof *h)))
		return nomem(x);
	pthread_mutex_lock(&qc_lock);
	e = qc_find(u->key.p, u->key.len, u->hash);
	if (e && !qc_same(&e->st, &u->st)) { /* made at another state: does it hold at this one? */
		struct table_state was = e->st;
		int ok;
		e->refs++;
		pthread_mutex_unlock(&qc_lock);
		ok = e->order_free == u->order_free &&
		     qc_still(s->m.t, &was, e->order_free, &u->st, e->from, e->from + e->nwin * d);
		pthread_mutex_lock(&qc_lock);
		if (ok && qc_same(&e->st, &was))
			e->st = u->st; /* (entries are immutable but for this, under the lock) */
		else if (!ok && e->linked && qc_same(&e->st, &was)) {
			qc_unlink(e);
			qc_stats.invalidations++;
		}
		e->refs--;
		if (!e->linked || !qc_same(&e->st, &u->st)) {
			if (!e->refs && !e->linked)
				free(e);
			e = NULL;
		}
	}
	if (e) {
		int64_t c0 = e->from, c1 = e->from + e->nwin * d;
		if (u->st.ttl > 0) { /* windows from before the expiry point now: read again */
			int64_t exp = ts_now(x->db) - u->st.ttl, w = window_of(s, exp);
			if (w < exp)
				w += d;
			if (w > c0)
				c0 = w;
		}
		u0 = u->lo > c0 ? u->lo : c0;
		u1 = u->hi < c1 ? u->hi : c1;
		if (u0 < u1) {
			e->refs++;
			qc_touch(e);
		} else
			e = NULL;
	}
	if (e)
		qc_stats.hits++;
	else
		qc_stats.misses++;
	pthread_mutex_unlock(&qc_lock);
	if (!e) {
		free(h);
		return qc_read(x, s, picked, n, seq, from, to);
	}
	h->e = e;
	h->next = x->qheld;
	x->qheld = h;
	u->covered = u0 == u->lo && u1 == u->hi;
	for (size_t i = 0; i < e->nseries; i++) {
		const struct qc_series *es = &e->series[i];
		int64_t w0 = (u0 - e->from) / d, w1 = (u1 - e->from) / d, w;
		struct oseries *o;
		for (w = w0; w < w1 && !es->hit[w]; w++)
			;
		if (w == w1) /* no row in the windows served */
			continue;
		if (!(o = out_series_keyed(x, s, es->key, es->gtags)))
			return -1;
		for (w = w0; w < w1; w++) {
			int64_t ow = (e->from + w * d - s->start) / d;
			o->hit[ow] = es->hit[w];
			for (int c = 0; c < s->ncols; c++) {
				struct acc *a = &o->accs[ow * s->ncols + c];
				a->n = es->n[w * s->ncols + c];
				a->fixed = 1;
				a->fv = es->v[w * s->ncols + c];
			}
		}
	}
	if (qc_read(x, s, picked, n, seq, from, u0) < 0)
		return -1;
	return qc_read(x, s, picked, n, seq, u1, to);
}

/* The most bytes one entry may take: a quarter of the budget. */
#define QC_ENTRY_SHARE 4

/*
 * qc_end -- after s was answered (finish_select sorted its output
 * series): keep its whole windows in the cache, joined to those its
 * shape's entry holds when they meet or overlap, if the table's state
 * did not move meanwhile and the entry fits.  Failures only leave the
 * cache as it was.
 */
static void qc_end(struct exec *x, struct sel *s, struct qc_use *u)
{
	struct table_state now;
	struct qc_entry *old = NULL, *e;
	struct qc_bump b = {NULL, 0};
	struct qc_src src = {x, s, NULL, s->out.n, u->lo, u->hi, NULL, u->order_free};
	int64_t d = s->q->group_interval, from = u->lo, to = u->hi;
	size_t budget;
	/* the state may have moved while the windows were read: they are then
	 * kept as of the state before (u->st), and the next lookup asks
	 * qc_still whether what came since touched them */
	if (!u->on || u->covered || s->rolled || x->err[0] || u->lo >= u->hi ||
	    table_state_of(s->m.t, &now) < 0 || now.incarnation != u->st.incarnation ||
	    now.schema != u->st.schema || now.ttl != u->st.ttl ||
	    (now.generation != u->st.generation && !u->order_free))
		goto out;
	if (!(src.out = xa_alloc(&x->a, (s->out.n + 1) * sizeof *src.out)))
		goto out;
	if (s->out.n) {
		memcpy(src.out, s->out.p, s->out.n * sizeof *src.out);
		qsort(src.out, s->out.n, sizeof *src.out, cmp_oseries);
	}
	pthread_mutex_lock(&qc_lock);
	budget = qc_budget;
	old = qc_find(u->key.p, u->key.len, u->hash);
	if (old && qc_same(&old->st, &u->st) && old->from <= u->hi &&
	    old->from + old->nwin * d >= u->lo) {
		old->refs++;
		if (old->from < from)
			from = old->from;
		if (old->from + old->nwin * d > to)
			to = old->from + old->nwin * d;
	} else
		old = NULL;
	pthread_mutex_unlock(&qc_lock);
	src.old = old;
	qc_build(&b, &src, u->key.p, u->key.len, &u->st, from, (to - from) / d);
	if (old && b.used + 16 > budget / QC_ENTRY_SHARE) { /* too long joined: this range alone */
		src.old = NULL;
		from = u->lo;
		to = u->hi;
		b.used = 0;
		qc_build(&b, &src, u->key.p, u->key.len, &u->st, from, (to - from) / d);
	}
	if (b.used + 16 > budget / QC_ENTRY_SHARE || !(b.base = malloc(b.used + 16)))
		goto release;
	{
		size_t bytes = b.used + 16;
		b.used = 0;
		e = qc_build(&b, &src, u->key.p, u->key.len, &u->st, from, (to - from) / d);
		e->bytes = bytes;
		pthread_mutex_lock(&qc_lock);
		if (qc_budget && e->bytes <= qc_budget / QC_ENTRY_SHARE)
			qc_link(e);
		else
			free(e);
		pthread_mutex_unlock(&qc_lock);
	}
release:
	if (old) {
		pthread_mutex_lock(&qc_lock);
		if (--old->refs == 0 && !old->linked)
			free(old);
		pthread_mutex_unlock(&qc_lock);
	}
out:
	jbuf_free(&u->key);
}

/*
 * Series narrowed by one tag's values.  Most statements name their
 * series by one tag -- TSBS's `hostname = 'host_7'`, or an OR of such
 * equalities -- and the series list holds every series of the
 * measurement.  tag_values finds such a condition among the conjuncts
 * of the tag conditions: a series whose tag is none of its strings fails
 * that conjunct, so it is skipped by a comparison of strings before the
 * conditions are evaluated (every other series is still judged by all
 * of them).  This only spares evaluating, for every series, a condition
 * that cannot hold.
 */
struct tagvals {
	int pos;                   /* the tag's position, or -1 before the first */
	const struct iql_expr **v; /* IQL_E_STRING literals */
	size_t n, cap;
};

/* Add e's strings to out when e is `tag = 'string'` (either way round)
 * of one tag, or an OR of such, in parentheses or not.  Returns 1 when
 * it is, 0 when not, -1 when memory is short. */
static int tag_eq(struct xa *a, const struct env *env, const struct iql_expr *e,
                  struct tagvals *out)
{
	while (e && e->kind == IQL_E_PAREN)
		e = e->lhs;
	if (!e || e->kind != IQL_E_BINARY)
		return 0;
	if (e->op == IQL_OP_OR) {
		int l = tag_eq(a, env, e->lhs, out);
		return l <= 0 ? l : tag_eq(a, env, e->rhs, out);
	}
	if (e->op != IQL_OP_EQ)
		return 0;
	const struct iql_expr *ref = e->lhs, *lit = e->rhs;
	if (ref->kind == IQL_E_STRING) {
		ref = e->rhs;
		lit = e->lhs;
	}
	if (ref->kind != IQL_E_VARREF || lit->kind != IQL_E_STRING)
		return 0;
	int c = ref_col(env, ref), p = c < 0 ? -1 : tag_pos(env->m, c);
	if (p < 0 || (out->pos >= 0 && p != out->pos))
		return 0;
	out->pos = p;
	if (out->n == out->cap) {
		size_t cap = out->cap ? 2 * out->cap : 8;
		const struct iql_expr **v = xa_alloc(a, cap * sizeof *v);
		if (!v)
			return -1;
		if (out->n)
			memcpy(v, out->v, out->n * sizeof *v);
		out->v = v;
		out->cap = cap;
	}
	out->v[out->n++] = lit;
	return 1;
}

/* The strings of the first conjunct of c that is such a condition
 * (out->n 0: none is).  Returns 0, or -1 when memory is short. */
static int tag_values(struct xa *a, const struct env *env, const struct vec *c,
                      struct tagvals *out)
{
	memset(out, 0, sizeof *out);
	for (size_t i = 0; i < c->n; i++) {
		out->pos = -1;
		out->n = 0; /* what a partial OR left: not usable */
		int rc = tag_eq(a, env, c->p[i], out);
		if (rc < 0)
			return -1;
		if (rc > 0)
			return 0;
	}
	out->n = 0;
	return 0;
}

/* Whether the string s[0..len) is one of vals'. */
static int tagvals_has(const struct tagvals *vals, const char *s, size_t len)
{
	for (size_t i = 0; i < vals->n; i++)
		if (vals->v[i]->len == len && (len == 0 || memcmp(vals->v[i]->str, s, len) == 0))
			return 1;
	return 0;
}

/* Whether the series of tags may pass: its tag is one of vals'. */
static int tag_in(const struct tagvals *vals, const struct cell *tags)
{
	const struct cell *t = &tags[vals->pos];
	return t->kind == C_STRING && tagvals_has(vals, t->s, t->len);
}

/* Run SELECT q over the one measurement name into res (the file's
 * comment says how); wild, when not NULL, holds the names * stands for
 * (over several measurements).  Returns 0, or -1 after the error. */
static int select_one(struct exec *x, const struct iql_select *q, const char *name,
                      const struct vec *wild, struct result *res)
{
	struct sel s;
	struct slist all;
	struct cell **picked = NULL;
	size_t npicked = 0, seq = 0;
	struct qc_use qu;
	int rc = -1;
	memset(&s, 0, sizeof s);
	memset(&qu, 0, sizeof qu);
	s.q = q;
	s.wild = wild;
	if ((rc = meas_open(x, name, &s.m)) <= 0)
		return rc;
	rc = -1;
	if (plan_groups(x, &s) < 0 || plan_columns(x, &s) < 0)
		goto out;
	if (q->has_group_time && !s.agg) {
		fail(x, "GROUP BY requires at least one aggregate function");
		goto out;
	}
	if (split_where(x, &s.m, q->where, &s.tr, &s.tagc, &s.rowc) < 0)
		goto out;
	if (s.agg && q->has_group_time && !s.tr.has_to) {
		s.tr.to = x->now;
		s.tr.has_to = 1;
	}
	rc = 0;
	if ((s.tr.has_from && s.tr.has_to && s.tr.from >= s.tr.to) || s.ncols == 0)
		goto out;
	if (s.agg) {
		int fields = 0;
		for (int c = 0; c < s.ncols; c++)
			fields |= s.cols[c].col >= 0 && s.cols[c].fn != IQL_FN_OTHER;
		if (!fields) /* InfluxDB answers nothing when no call names a field */
			goto out;
	}
	rc = -1;
	plan_projection(&s);
	for (size_t i = 0; i < s.rowc.n; i++)
		if (refs_add(&x->a, &s.m, s.rowc.p[i], &s.refs) < 0)
			goto oom;
	for (size_t i = 0; i < s.tagc.n; i++)
		if (refs_add(&x->a, &s.m, s.tagc.p[i], &s.refs) < 0)
			goto oom;
	struct env tenv = {&s.m, NULL, NULL, NULL, &s.refs};
	struct tagvals named;
	if (tag_values(&x->a, &tenv, &s.tagc, &named) < 0)
		goto oom;
	if (list_series(x, &s.m, named.n ? &named : NULL, named.pos, &all) < 0)
		goto out;
	if (!(picked = xa_alloc(&x->a, (all.n + 1) * sizeof *picked)))
		goto oom;
	for (size_t i = 0; i < all.n; i++) {
		struct env env = {&s.m, all.tags[i], NULL, NULL, &s.refs};
		if (named.n && !tag_in(&named, all.tags[i]))
			continue; /* its tag fails a conjunct */
		if (all_true(x, &s.tagc, &env))
			picked[npicked++] = all.tags[i];
		if (x->err[0])
			goto out;
	}
	if (s.agg) {
		int go = plan_windows(x, &s, picked, npicked);
		if (go <= 0) {
			rc = go;
			goto out;
		}
	}
	s.blocks = blocks_fit(&s);
	if (s.agg && qc_begin(&s, &qu)) {
		if (qc_scan(x, &s, picked, npicked, &seq, &qu) < 0)
			goto out;
	} else
		for (size_t i = 0; i < npicked; i++)
			if (scan_series(x, &s, picked[i], &seq) < 0 ||
			    (s.cut && past_cut(x, &s, picked[i]) < 0))
				goto out;
	if ((rc = finish_select(x, &s, res)) == 0)
		qc_end(x, &s, &qu);
	goto out;
oom:
	nomem(x);
out:
	jbuf_free(&qu.key);
	meas_close(x, &s.m);
	return rc;
}

static int list_sources(struct exec *x, const struct iql_source *sources, size_t nsources,
                        struct vec *out);

/* Whether q selects * (a wildcard among its fields). */
static int selects_all(const struct iql_select *q)
{
	for (size_t i = 0; i < q->nfields; i++) {
		const struct iql_expr *e = q->fields[i].expr;
		while (e->kind == IQL_E_PAREN)
			e = e->lhs;
		if (e->kind == IQL_E_WILDCARD)
			return 1;
	}
	return 0;
}

/* The names * stands for over the measurements names[0..n): every
 * field and tag of each, sorted, each once.  Returns 0 or -1. */
static int wild_names(struct exec *x, const struct vec *names, struct vec *out)
{
	for (size_t i = 0; i < names->n; i++) {
		struct meas m;
		int rc = meas_open(x, names->p[i], &m);
		if (rc < 0)
			return -1;
		for (int c = 0; rc > 0 && c < m.s->ncolumns; c++) {
			const char *cn = m.s->columns[c].name;
			int have = 0;
			if (c == m.tscol || (!is_field(&m, c) && tag_pos(&m, c) < 0))
				continue;
			for (size_t k = 0; k < out->n && !have; k++)
				have = strcmp(out->p[k], cn) == 0;
			if (!have && vec_push(&x->a, out, xa_strndup(&x->a, cn, strlen(cn))) < 0) {
				meas_close(x, &m);
				return nomem(x);
			}
		}
		meas_close(x, &m);
	}
	if (out->n > 1)
		qsort(out->p, out->n, sizeof *out->p, cmp_str);
	return x->a.failed ? nomem(x) : 0;
}

/* Run a SELECT into res: over its one measurement, or over each that
 * its sources name (measurements, regexes) in name order, as InfluxDB
 * 1.6 does: one series per measurement and tag set, each named by its
 * measurement, * the fields and tags of them all, the measurements
 * reversed under ORDER BY time DESC, SLIMIT and SOFFSET per measurement
 * (select_one).  Returns 0, or -1 after the error. */
static int run_select(struct exec *x, const struct iql_select *q, struct result *res)
{
	struct vec names = {0}, wild = {0};
	if (q->nsources == 1 && q->sources[0].kind == IQL_SRC_MEASUREMENT)
		return select_one(x, q, q->sources[0].name.s, NULL, res);
	for (size_t k = 0; k < q->nsources; k++)
		if (q->sources[k].kind == IQL_SRC_SUBQUERY)
			return fail(x, "unsupported: a sub-query in FROM");
	if (list_sources(x, q->sources, q->nsources, &names) < 0)
		return -1;
	if (selects_all(q) && wild_names(x, &names, &wild) < 0)
		return -1;
	for (size_t i = 0; i < names.n; i++) {
		size_t k = q->order_desc ? names.n - 1 - i : i;
		if (select_one(x, q, names.p[k], &wild, res) < 0)
			return -1;
	}
	return 0;
}

/* ---- SHOW and CREATE ---- */

static pthread_mutex_t created_lock = PTHREAD_MUTEX_INITIALIZER;
static char created[CREATED_MAX][TS_NAME_MAX * 4 + 1];
static int ncreated;

/* CREATE DATABASE: remember the name for SHOW DATABASES (a no-op
 * otherwise).  Returns 0. */
static int run_create(const struct iql_ident *name)
{
	pthread_mutex_lock(&created_lock);
	int have = strcmp(name->s, DEFAULT_DB) == 0;
	for (int i = 0; i < ncreated && !have; i++)
		have = strcmp(created[i], name->s) == 0;
	if (!have && ncreated < CREATED_MAX && name->len < sizeof created[0])
		strcpy(created[ncreated++], name->s);
	pthread_mutex_unlock(&created_lock);
	return 0;
}

static const char *col_name[] = {"name"};

/* SHOW DATABASES: the default and the names created. */
static int run_show_databases(struct exec *x, struct result *res)
{
	struct rseries *s = names_series(x, "databases", 1, col_name);
	const char *names[CREATED_MAX + 1];
	size_t cap = 0;
	int n = 0;
	if (!s)
		return nomem(x);
	names[n++] = DEFAULT_DB;
	pthread_mutex_lock(&created_lock);
	for (int i = 0; i < ncreated; i++)
		names[n++] = xa_strndup(&x->a, created[i], strlen(created[i]));
	pthread_mutex_unlock(&created_lock);
	for (int i = 0; i < n; i++) {
		struct cell *c = xa_alloc(&x->a, sizeof *c);
		if (!c || !names[i])
			return nomem(x);
		*c = cstr(names[i], strlen(names[i]));
		if (add_row(x, s, &cap, c) < 0)
			return -1;
	}
	return vec_push(&x->a, &res->series, s) < 0 ? nomem(x) : 0;
}

/* The tables that sources[0..nsources) name (measurement names mapped
 * as the ingest maps them, regexes matched against every table name),
 * or every table when there are no sources; sorted, each once.
 * Sub-queries name none.  Returns 0 or -1 after the error. */
static int list_sources(struct exec *x, const struct iql_source *sources, size_t nsources,
                        struct vec *out)
{
	char **names = NULL;
	int rc;
	if ((rc = ts_tables(x->db, &names, NULL)) < 0)
		return fail(x, "%s", ts_strerror(rc));
	for (int i = 0; names[i]; i++) {
		int take = nsources == 0;
		for (size_t k = 0; k < nsources && !take; k++) {
			const struct iql_source *src = &sources[k];
			char tname[TS_NAME_MAX + 1];
			if (src->kind == IQL_SRC_MEASUREMENT) {
				tsd_ingest_name(src->name.s, src->name.len, 0, tname);
				take = strcmp(tname, names[i]) == 0;
			} else if (src->kind == IQL_SRC_REGEX) {
				struct iql_expr key = {0};
				regex_t *re = regex_of(x, (const struct iql_expr *)src, src->regex);
				(void)key;
				if (!re)
					break;
				take = regex_match(re, names[i], strlen(names[i]));
			}
		}
		char *n = take ? xa_strndup(&x->a, names[i], strlen(names[i])) : NULL;
		if (take && (!n || vec_push(&x->a, out, n) < 0)) {
			ts_free_names(names);
			return nomem(x);
		}
	}
	ts_free_names(names);
	if (x->err[0])
		return -1;
	if (out->n > 1)
		qsort(out->p, out->n, sizeof *out->p, cmp_str);
	return 0;
}

/* The measurements a SHOW reads: its FROM (names, regexes), or every
 * table; sorted. */
static int show_sources(struct exec *x, const struct iql_show *sh, struct vec *out)
{
	return list_sources(x, sh->sources, sh->nsources, out);
}

/* Whether name passes SHOW MEASUREMENTS' WITH MEASUREMENT. */
static int measurement_picked(struct exec *x, const struct iql_show *sh, const char *name)
{
	if (sh->key_op == IQL_KEY_EQ)
		return strcmp(sh->keys[0].s, name) == 0;
	if (sh->key_op == IQL_KEY_EQREGEX) {
		regex_t *re = regex_of(x, (const struct iql_expr *)sh, sh->regex);
		return re && regex_match(re, name, strlen(name));
	}
	return 1;
}

/* Cut a series' rows to the SHOW's LIMIT / OFFSET. */
static void show_limits(const struct iql_show *sh, struct rseries *s)
{
	size_t off = sh->offset > 0 ? (size_t)sh->offset : 0;
	if (off > s->nrows)
		off = s->nrows;
	if (off) { /* no rows: no arrays, which NULL + 0 would be */
		s->vals += off;
		s->ts += off;
		s->nrows -= off;
	}
	if (sh->limit > 0 && s->nrows > (size_t)sh->limit)
		s->nrows = (size_t)sh->limit;
}

/* The end of a SHOW of one series s: the error met while filling it,
 * or s cut by the statement's OFFSET and LIMIT and added to res when it
 * kept rows.  Returns 0 or -1. */
static int show_done(struct exec *x, const struct iql_show *sh, struct rseries *s,
                     struct result *res)
{
	if (x->err[0])
		return -1;
	show_limits(sh, s);
	if (s->nrows && vec_push(&x->a, &res->series, s) < 0)
		return nomem(x);
	return 0;
}

/* SHOW MEASUREMENTS: the tables, by name. */
static int run_show_measurements(struct exec *x, const struct iql_show *sh, struct result *res)
{
	struct vec names = {0};
	struct rseries *s = names_series(x, "measurements", 1, col_name);
	size_t cap = 0;
	if (!s)
		return nomem(x);
	if (sh->where)
		return fail(x, "unsupported: SHOW MEASUREMENTS ... WHERE");
	if (show_sources(x, sh, &names) < 0)
		return -1;
	for (size_t i = 0; i < names.n; i++) {
		struct cell *c;
		if (!measurement_picked(x, sh, names.p[i]))
			continue;
		if (!(c = xa_alloc(&x->a, sizeof *c)))
			return nomem(x);
		*c = cstr(names.p[i], strlen(names.p[i]));
		if (add_row(x, s, &cap, c) < 0)
			return -1;
	}
	return show_done(x, sh, s, res);
}

/* Whether tag key name passes SHOW TAG VALUES' WITH KEY. */
static int key_picked(struct exec *x, const struct iql_show *sh, const char *name)
{
	switch (sh->key_op) {
	case IQL_KEY_EQ: return strcmp(sh->keys[0].s, name) == 0;
	case IQL_KEY_NEQ: return strcmp(sh->keys[0].s, name) != 0;
	case IQL_KEY_IN:
		for (size_t i = 0; i < sh->nkeys; i++)
			if (strcmp(sh->keys[i].s, name) == 0)
				return 1;
		return 0;
	case IQL_KEY_EQREGEX: case IQL_KEY_NEQREGEX: {
		regex_t *re = regex_of(x, (const struct iql_expr *)sh, sh->regex);
		return re && regex_match(re, name, strlen(name)) == (sh->key_op == IQL_KEY_EQREGEX);
	}
	default: return 1;
	}
}

static const char *tagkey_cols[] = {"tagKey"};
static const char *tagvalue_cols[] = {"key", "value"};
static const char *fieldkey_cols[] = {"fieldKey", "fieldType"};
static const char *series_cols[] = {"key"};

/* Append a series key part, escaped as the line protocol escapes it. */
static void put_key_text(struct jbuf *b, const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (s[i] == ',' || s[i] == ' ' || s[i] == '=')
			jbuf_putc(b, '\\');
		jbuf_putc(b, s[i]);
	}
}

struct tv {
	const char *k;
	struct cell v;
};

/* qsort order of tag key/value pairs: key, then value bytes. */
static int cmp_tv(const void *a, const void *b)
{
	const struct tv *x = a, *y = b;
	int c = strcmp(x->k, y->k);
	if (c)
		return c;
	size_t n = x->v.len < y->v.len ? x->v.len : y->v.len;
	c = memcmp(x->v.s, y->v.s, n);
	return c ? c : (x->v.len > y->v.len) - (x->v.len < y->v.len);
}

/* SHOW TAG KEYS, TAG VALUES, FIELD KEYS and SERIES: one measurement. */
static int show_one(struct exec *x, const struct iql_stmt *st, struct meas *m, struct result *res,
                    struct rseries *ser, size_t *sercap)
{
	const struct iql_show *sh = st->show;
	struct rseries *s = NULL;
	size_t cap = 0;
	struct slist all = {0};
	struct vec conds = {0}, rowc = {0};
	struct trange tr = {0};
	if (st->kind != IQL_SHOW_FIELD_KEYS && st->kind != IQL_SHOW_TAG_KEYS) {
		if (split_where(x, m, sh->where, &tr, &conds, &rowc) < 0)
			return -1;
		if (rowc.n)
			return fail(x, "unsupported: a condition on fields in a SHOW");
		if (list_series(x, m, NULL, 0, &all) < 0)
			return -1;
	}
	switch (st->kind) {
	case IQL_SHOW_TAG_KEYS:
		if (sh->where)
			return fail(x, "unsupported: SHOW TAG KEYS ... WHERE");
		if (!(s = names_series(x, m->name, 1, tagkey_cols)))
			return nomem(x);
		for (int i = 0; i < m->ntags; i++) {
			struct cell *c = xa_alloc(&x->a, sizeof *c);
			const char *n = m->s->columns[m->tagcol[i]].name;
			if (!c)
				return nomem(x);
			*c = cstr(n, strlen(n));
			if (add_row(x, s, &cap, c) < 0)
				return -1;
		}
		break;
	case IQL_SHOW_FIELD_KEYS: {
		int idx[TS_COLUMNS_MAX], n = 0;
		if (!(s = names_series(x, m->name, 2, fieldkey_cols)))
			return nomem(x);
		for (int c = 0; c < m->s->ncolumns; c++)
			if (is_field(m, c))
				idx[n++] = c;
		qsort_r(idx, (size_t)n, sizeof *idx, cmp_colname, m);
		for (int k = 0; k < n; k++) {
			struct cell *c = xa_alloc(&x->a, 2 * sizeof *c);
			const char *nm = m->s->columns[idx[k]].name;
			const char *t = ftype_name(ftype_of(m->s->columns[idx[k]].type));
			if (!c)
				return nomem(x);
			c[0] = cstr(nm, strlen(nm));
			c[1] = cstr(t, strlen(t));
			if (add_row(x, s, &cap, c) < 0)
				return -1;
		}
		break;
	}
	case IQL_SHOW_TAG_VALUES: {
		struct tv *tvs = xa_alloc(&x->a, (all.n * (size_t)m->ntags + 1) * sizeof *tvs);
		size_t n = 0;
		if (!tvs || !(s = names_series(x, m->name, 2, tagvalue_cols)))
			return nomem(x);
		for (size_t i = 0; i < all.n; i++) {
			struct env env = {m, all.tags[i], NULL, NULL, NULL};
			if (!all_true(x, &conds, &env))
				continue;
			for (int t = 0; t < m->ntags; t++) {
				const char *k = m->s->columns[m->tagcol[t]].name;
				if (!key_picked(x, sh, k) || all.tags[i][t].len == 0)
					continue;
				tvs[n].k = k;
				tvs[n++].v = all.tags[i][t];
			}
		}
		qsort(tvs, n, sizeof *tvs, cmp_tv);
		for (size_t i = 0; i < n; i++) {
			struct cell *c;
			if (i && cmp_tv(&tvs[i - 1], &tvs[i]) == 0)
				continue;
			if (!(c = xa_alloc(&x->a, 2 * sizeof *c)))
				return nomem(x);
			c[0] = cstr(tvs[i].k, strlen(tvs[i].k));
			c[1] = tvs[i].v;
			if (add_row(x, s, &cap, c) < 0)
				return -1;
		}
		break;
	}
	case IQL_SHOW_SERIES:
		for (size_t i = 0; i < all.n; i++) {
			struct env env = {m, all.tags[i], NULL, NULL, NULL};
			struct jbuf b = {0};
			struct cell *c;
			if (!all_true(x, &conds, &env))
				continue;
			put_key_text(&b, m->name, strlen(m->name));
			for (int t = 0; t < m->ntags; t++) {
				const char *k = m->s->columns[m->tagcol[t]].name;
				if (!all.tags[i][t].len)
					continue;
				jbuf_putc(&b, ',');
				put_key_text(&b, k, strlen(k));
				jbuf_putc(&b, '=');
				put_key_text(&b, all.tags[i][t].s, all.tags[i][t].len);
			}
			c = xa_alloc(&x->a, sizeof *c);
			if (b.failed || !c || !(c->s = xa_strndup(&x->a, b.p, b.len))) {
				jbuf_free(&b);
				return nomem(x);
			}
			c->kind = C_STRING;
			c->len = b.len;
			jbuf_free(&b);
			if (add_row(x, ser, sercap, c) < 0)
				return -1;
		}
		return x->err[0] ? -1 : 0;
	default:
		return fail(x, "unsupported statement");
	}
	return show_done(x, sh, s, res);
}

/* Any SHOW into res.  Returns 0 or -1 after the error. */
static int run_show(struct exec *x, const struct iql_stmt *st, struct result *res)
{
	const struct iql_show *sh = st->show;
	struct vec names = {0};
	struct rseries *ser = NULL;
	size_t sercap = 0;
	if (st->kind == IQL_SHOW_DATABASES)
		return run_show_databases(x, res);
	if (st->kind == IQL_SHOW_MEASUREMENTS)
		return run_show_measurements(x, sh, res);
	if (show_sources(x, sh, &names) < 0)
		return -1;
	if (st->kind == IQL_SHOW_SERIES && !(ser = names_series(x, NULL, 1, series_cols)))
		return nomem(x);
	for (size_t i = 0; i < names.n; i++) {
		struct meas m;
		int rc = meas_open(x, names.p[i], &m);
		if (rc < 0)
			return -1;
		if (rc == 0)
			continue;
		rc = show_one(x, st, &m, res, ser, &sercap);
		meas_close(x, &m);
		if (rc < 0)
			return -1;
	}
	if (ser) {
		/* the keys sort as InfluxDB lists them */
		for (size_t i = 1; i < ser->nrows; i++)
			for (size_t j = i; j > 0 && strcmp(ser->vals[j - 1][0].s, ser->vals[j][0].s) > 0; j--) {
				struct cell *t = ser->vals[j];
				ser->vals[j] = ser->vals[j - 1];
				ser->vals[j - 1] = t;
			}
		show_limits(sh, ser);
		if (ser->nrows && vec_push(&x->a, &res->series, ser) < 0)
			return nomem(x);
	}
	return 0;
}

/* ---- The request ---- */

/* The value of hex digit c, or 16 when it is none. */
static unsigned hexval(char c)
{
	if (c >= '0' && c <= '9')
		return (unsigned)(c - '0');
	if (c >= 'a' && c <= 'f')
		return (unsigned)(c - 'a' + 10);
	if (c >= 'A' && c <= 'F')
		return (unsigned)(c - 'A' + 10);
	return 16;
}

/* The value of parameter name in the form text p[0..n) ("a=1&b=2"),
 * decoded, malloc'ed; NULL when absent (or out of memory: *oom). */
static char *form_param(const char *p, size_t n, const char *name, int *oom)
{
	size_t nlen = strlen(name);
	const char *end = p + n;
	while (p && p < end) {
		const char *amp = memchr(p, '&', (size_t)(end - p));
		const char *stop = amp ? amp : end;
		if ((size_t)(stop - p) > nlen && memcmp(p, name, nlen) == 0 && p[nlen] == '=') {
			const char *v = p + nlen + 1;
			char *out = malloc((size_t)(stop - v) + 1);
			size_t k = 0;
			if (!out) {
				*oom = 1;
				return NULL;
			}
			for (; v < stop; v++) {
				unsigned hi, lo;
				int c = (unsigned char)*v;
				if (c == '+')
					c = ' ';
				else if (c == '%' && stop - v > 2 && (hi = hexval(v[1])) < 16 &&
				         (lo = hexval(v[2])) < 16) {
					c = (int)(hi << 4 | lo);
					v += 2;
				}
				out[k++] = (char)c;
			}
			out[k] = '\0';
			return out;
		}
		if ((size_t)(stop - p) == nlen && memcmp(p, name, nlen) == 0) {
			char *out = strdup("");
			*oom |= !out;
			return out;
		}
		p = amp ? amp + 1 : NULL;
	}
	return NULL;
}

/* A parameter from the body, else the URL. */
static char *param(const char *url, const char *body, size_t len, const char *name, int *oom)
{
	char *v = body ? form_param(body, len, name, oom) : NULL;
	if (!v && url)
		v = form_param(url, strlen(url), name, oom);
	return v;
}

/* The whole answer as {"error":msg}. */
static void top_error(struct jbuf *out, const char *msg)
{
	jbuf_puts(out, "{\"error\":");
	jbuf_string(out, msg, strlen(msg));
	jbuf_puts(out, "}\n");
}

/* Append `depth` levels of InfluxDB's pretty indent (4 spaces each). */
static void indent(struct jbuf *b, int depth)
{
	jbuf_putc(b, '\n');
	for (int i = 0; i < depth; i++)
		jbuf_puts(b, "    ");
}

/*
 * pretty -- the compact JSON text in[0..n) (objects each followed by a
 * newline) indented as InfluxDB's pretty=true writes it (Go's
 * MarshalIndent with four spaces): one member or element a line, ": "
 * after keys, empty arrays and objects as [] and {}.
 */
static void pretty(const char *in, size_t n, struct jbuf *b)
{
	int depth = 0;
	for (size_t i = 0; i < n; i++) {
		char c = in[i];
		if (c == '"') { /* a string, escapes and all */
			size_t j = i + 1;
			while (j < n && in[j] != '"')
				j += in[j] == '\\' ? 2 : 1;
			jbuf_put(b, in + i, j + 1 - i);
			i = j;
		} else if (c == '{' || c == '[') {
			jbuf_putc(b, c);
			if (i + 1 < n && (in[i + 1] == '}' || in[i + 1] == ']'))
				jbuf_putc(b, in[++i]);
			else
				indent(b, ++depth);
		} else if (c == '}' || c == ']') {
			indent(b, --depth);
			jbuf_putc(b, c);
		} else if (c == ',') {
			jbuf_putc(b, c);
			indent(b, depth);
		} else if (c == ':') {
			jbuf_puts(b, ": ");
		} else {
			jbuf_putc(b, c);
		}
	}
}

/* The divisor of epoch=UNIT: 0 for RFC 3339 (no epoch), 1 (ns) for a
 * unit InfluxDB does not know either. */
static int64_t epoch_div(const char *e)
{
	if (!e || !*e) return 0;
	if (!strcmp(e, "ns") || !strcmp(e, "n")) return 1;
	if (!strcmp(e, "u") || !strcmp(e, "us") || !strcmp(e, "\xc2\xb5")) return 1000;
	if (!strcmp(e, "ms")) return 1000000;
	if (!strcmp(e, "s")) return 1000000000LL;
	if (!strcmp(e, "m")) return 60000000000LL;
	if (!strcmp(e, "h")) return 3600000000000LL;
	return 1; /* InfluxDB writes ns for a unit it does not know */
}

/* Run one statement into r. */
static void run_stmt(ts_db *db, int64_t now, const char *dbname, const struct iql_stmt *st,
                     int id, int get, struct resp *r, int *oom)
{
	struct exec x;
	struct result res;
	char text[TS_NAME_MAX * 4 + 160]; /* the warning, while put_result writes it */
	int rc = 0;
	memset(&x, 0, sizeof x);
	memset(&res, 0, sizeof res);
	x.db = db;
	x.now = now;
	switch (st->kind) {
	case IQL_CREATE_DATABASE:
		rc = run_create(&st->database);
		break;
	case IQL_SHOW_DATABASES:
		rc = run_show(&x, st, &res);
		break;
	case IQL_SELECT:
		if (!dbname && !st->select->sources[0].db.s) {
			rc = fail(&x, "database name required");
			break;
		}
		rc = run_select(&x, st->select, &res);
		break;
	default:
		if (!dbname && !st->show->database.s) {
			rc = fail(&x, "database name required");
			break;
		}
		rc = run_show(&x, st, &res);
		break;
	}
	if (x.a.failed)
		nomem(&x), rc = -1;
	if (st->kind == IQL_CREATE_DATABASE && get && rc == 0) {
		/* InfluxDB's warning for a write over GET, word for word */
		snprintf(text, sizeof text, "deprecated use of 'CREATE DATABASE %s' in a read only "
		         "context, please use a POST request instead", st->database.s);
		r->warning = text;
	}
	put_result(r, id, rc < 0 ? NULL : &res, rc < 0 ? x.err : NULL);
	r->warning = NULL;
	*oom |= x.oom;
	exec_clear(&x);
}

int tsd_influxq(ts_db *db, const char *url_query, const char *body, size_t len, int get,
                int64_t now, struct jbuf *out)
{
	int oom = 0, status = 200;
	char *q = param(url_query, body, len, "q", &oom);
	char *dbname = param(url_query, body, len, "db", &oom);
	char *epoch = param(url_query, body, len, "epoch", &oom);
	char *chunked = param(url_query, body, len, "chunked", &oom);
	char *chunk_size = param(url_query, body, len, "chunk_size", &oom);
	char *pretty_p = param(url_query, body, len, "pretty", &oom);
	struct iql_query parsed = {0};
	char err[IQL_ERR_MAX];
	struct resp r = {out, epoch_div(epoch), chunked && !strcmp(chunked, "true"),
	                 TSD_IQL_CHUNK_DEFAULT, 0, NULL};
	int rc;
	if (chunk_size && atol(chunk_size) > 0)
		r.chunk_size = (size_t)atol(chunk_size);
	if (dbname && !*dbname) {
		free(dbname);
		dbname = NULL;
	}
	if (oom) {
		status = 500;
		top_error(out, "out of memory");
	} else if (!q || !*q) {
		status = 400;
		top_error(out, "missing required parameter \"q\"");
	} else if ((rc = iql_parse(q, strlen(q), &parsed, err, sizeof err)) < 0) {
		if (rc == IQL_EINVALID) {
			if (r.chunked)
				put_result(&r, 0, NULL, err);
			else {
				jbuf_puts(out, "{\"results\":[");
				put_result(&r, 0, NULL, err);
				jbuf_puts(out, "]}\n");
			}
		} else {
			status = rc == IQL_ENOMEM ? 500 : 400;
			top_error(out, err);
		}
	} else {
		if (!r.chunked)
			jbuf_puts(out, "{\"results\":[");
		for (size_t i = 0; i < parsed.nstmts; i++)
			run_stmt(db, now, dbname, &parsed.stmts[i], (int)i, get, &r, &oom);
		if (!r.chunked)
			jbuf_puts(out, "]}\n");
		iql_query_free(&parsed);
	}
	if (pretty_p && !strcmp(pretty_p, "true") && !out->failed) {
		struct jbuf b = {0};
		pretty(out->p, out->len, &b);
		jbuf_free(out);
		*out = b;
	}
	free(q);
	free(dbname);
	free(epoch);
	free(chunked);
	free(chunk_size);
	free(pretty_p);
	return status;
}
