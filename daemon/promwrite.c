/*
 * promwrite.c -- Prometheus remote write 1.0 into tsstore tables, the
 * mapping of tsstore-http(7) and docs/http.md: a series' metric name
 * (label __name__) is a table, its other labels the string key columns
 * (sorted by name) before ts, each sample a row whose double column
 * "value" holds the sample's value.
 *
 * The body is decoded by wire/promwrite.c (snappy, then the WriteRequest
 * into plain structs of series); this module only maps those series to
 * tables and rows.  What the line protocol and remote
 * write share lives in ingest.c and is used from here, never copied: the
 * name rule (tsd_ingest_name), the cached table handles, the creation of
 * tables (duplicate policy ignore, ingest-default-ttl), the
 * once-per-table log and the counters.
 *
 * A request runs in three passes over the decoded series:
 *   map      each series' labels mapped to column names and checked
 *            (UTF-8, a name once, at most 15 labels with a value), its
 *            table found -- or, for a series whose labels are those of
 *            the series mapped before it but for the metric name, that
 *            mapping taken whole (same_labels); for a table that does not exist yet, the
 *            label names of all its series in the request are collected
 *   create   the missing tables made (key: those names sorted, then ts;
 *            then value double default NaN); an existing table without
 *            a column value gets one (ts_alter_add)
 *   build    each sample laid out as a row of its table's schema (label
 *            values point into the decoded message), the rows of each
 *            table inserted with one ts_insert_versioned for the schema
 *            version they were built for -- sooner when the request
 *            holds 2^20 values, which bounds its rows' memory.  A row
 *            the library refuses splits the batch there (its index is in
 *            ts_errmsg): the rows before go in, its sample is refused,
 *            the rest is tried again.
 * A series that does not fit its table is refused alone (counted by
 * reason, its first occurrence per table and cause logged) and the other
 * series are stored: the answer is then 400 naming the first one.
 */
#include <math.h>
#include <stddef.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "json.h"
#include "promwrite.h"

/* Most labels with a value a series may have besides __name__: the key
 * holds 16 columns, ts among them. */
#define KEY_LABELS (TS_KEY_COLUMNS_MAX - 1)
/* Values a request holds before it inserts what it has. */
#define FLUSH_VALUES ((size_t)1 << 20)
/* The causes logged once per table (tsd_ingest_once). */
#define ONCE_TAG TSD_INGEST_ONCE_OTHER
#define ONCE_VALUE (TSD_INGEST_ONCE_OTHER << 1)
#define ONCE_STORE (TSD_INGEST_ONCE_OTHER << 2)

/* A series' labels, mapped: column names and values (into the message). */
struct labels {
	const struct pw_series *of;  /* the series mapped (it passed); NULL: none */
	size_t metric_at;            /* the position of its label __name__ */
	const char *metric;          /* __name__'s value */
	size_t metric_len;
	int n;
	char name[KEY_LABELS][TS_NAME_MAX + 1];
	const char *value[KEY_LABELS];
	size_t value_len[KEY_LABELS];
};

/* One table of the request. */
struct ptable {
	char name[TS_NAME_MAX + 1];
	ts_table *t;                 /* the cached handle; NULL: no such table yet */
	ts_schema *schema;           /* this request's copy */
	int value_col;               /* the column "value"; -1: none usable */
	char problem[256];           /* why the table cannot take rows */
	char (*wants)[TS_NAME_MAX + 1]; /* label columns met, for creating it */
	int nwants, capwants;
	int lay_valid, lay_n;        /* the columns of the last series' labels */
	char lay_name[KEY_LABELS][TS_NAME_MAX + 1];
	int lay_col[KEY_LABELS];
	ts_value *rows;              /* nrows * ncolumns */
	size_t *series;              /* each row's series index */
	size_t nrows, caprows;
};

/* The label names of the last series mapped, by position in the series
 * (__name__ included), and what each maps to: series of one request
 * mostly repeat their label names, so a memcmp per label stands for the
 * name rule, the UTF-8 check of the name and the duplicate check. */
#define MEMO_LABELS (KEY_LABELS + 1)
struct name_memo {
	int n;                       /* positions held */
	int clean;                   /* names pass UTF-8, none maps twice */
	const char *raw[MEMO_LABELS]; /* into the decoded body */
	size_t len[MEMO_LABELS];
	char name[MEMO_LABELS][TS_NAME_MAX + 1]; /* mapped; "" for __name__ */
};

struct req {
	struct tsd_ingest *in;
	struct name_memo memo;
	struct tsd_ingest_result *res;
	int64_t now, max_future;     /* the database clock at the start; max-future */
	struct ptable *tables;
	int ntables, captables;
	int *table_of;               /* per series: its table, -1 when refused */
	size_t buffered;             /* values held in all tables' rows */
};

/* ---- Small helpers ---- */

static void logf_(struct tsd_ingest *in, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void logf_(struct tsd_ingest *in, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	tsd_ingest_log(in, msg);
}

/* Refuse n samples of series si (from 0) for reason why; the message of
 * the lowest series refused is kept, unless a storage failure has it. */
static void reject(struct req *r, size_t si, size_t n, enum tsd_ingest_reason why,
                   const char *fmt, ...) __attribute__((format(printf, 5, 6)));
static void reject(struct req *r, size_t si, size_t n, enum tsd_ingest_reason why,
                   const char *fmt, ...)
{
	struct tsd_ingest_result *res = r->res;
	va_list ap;
	res->rejected += n;
	res->by_reason[why] += n;
	if ((res->first_bad_line && res->first_bad_line <= si + 1) || res->code < 0)
		return;
	res->first_bad_line = si + 1;
	int k = snprintf(res->error, sizeof res->error, "series %zu: ", si + 1);
	va_start(ap, fmt);
	vsnprintf(res->error + k, sizeof res->error - (size_t)k, fmt, ap);
	va_end(ap);
}

/* ---- Pass 1: labels and tables ---- */

/* Whether series s's label names are those of the memo, position by
 * position. */
static int memo_hit(const struct name_memo *m, const struct pw_series *s)
{
	if (!m->clean || (int)s->nlabels != m->n)
		return 0;
	for (size_t i = 0; i < s->nlabels; i++) {
		const struct pw_label *k = &s->labels[i];
		/* an empty name may be NULL: no memcmp of it (fuzz_http found it) */
		if (k->name_len != m->len[i] ||
		    (k->name_len && memcmp(k->name, m->raw[i], k->name_len) != 0))
			return 0;
	}
	return 1;
}

/* Fill the memo from series s's label names: each mapped, and whether
 * they are all valid UTF-8 with no mapped name twice (__name__ aside). */
static void memo_fill(struct name_memo *m, const struct pw_series *s)
{
	m->n = 0;
	m->clean = s->nlabels <= MEMO_LABELS;
	for (size_t i = 0; m->clean && i < s->nlabels; i++) {
		const struct pw_label *k = &s->labels[i];
		char *name = m->name[i];
		m->raw[i] = k->name;
		m->len[i] = k->name_len;
		m->n++;
		if (!tsd_ingest_utf8_ok(k->name, k->name_len)) {
			m->clean = 0;
			break;
		}
		if (k->name_len == 8 && memcmp(k->name, "__name__", 8) == 0) {
			name[0] = '\0';
			continue;
		}
		tsd_ingest_name(k->name, k->name_len, 1, name);
		if (strcasecmp(name, TSD_PROM_VALUE) == 0)
			memmove(name + 1, name, strlen(name) + 1), name[0] = '_';
		for (size_t j = 0; j < i; j++)
			if (m->name[j][0] && strcasecmp(m->name[j], name) == 0)
				m->clean = 0;
	}
}

/* Map series si's labels into *l.  checked: the series passed once, the
 * checks are skipped.  A series whose label names are the memo's (the
 * memo being clean: no name invalid or mapped twice) takes their mapped
 * names from it, and only its values are checked.  Returns 0, or -1
 * after refusing it. */
static int map_labels(struct req *r, size_t si, const struct pw_series *s, struct labels *l,
                      int checked)
{
	size_t ns = s->nsamples;
	int hit = memo_hit(&r->memo, s);
	if (!hit && !checked) {
		memo_fill(&r->memo, s);
		hit = memo_hit(&r->memo, s);
	}
	l->of = NULL;
	l->metric = NULL;
	l->n = 0;
	for (size_t i = 0; i < s->nlabels; i++) {
		const struct pw_label *lab = &s->labels[i];
		if (!checked && ((!hit && !tsd_ingest_utf8_ok(lab->name, lab->name_len)) ||
		                 !tsd_ingest_utf8_ok(lab->value, lab->value_len))) {
			reject(r, si, ns, TSD_REJECT_STORE, "a label name or value is not valid UTF-8");
			return -1;
		}
		if (lab->name_len == 8 && memcmp(lab->name, "__name__", 8) == 0) {
			if (l->metric) {
				reject(r, si, ns, TSD_REJECT_DUPLICATE, "label \"__name__\" given twice");
				return -1;
			}
			l->metric = lab->value;
			l->metric_len = lab->value_len;
			l->metric_at = i;
			continue;
		}
		if (lab->value_len == 0)
			continue; /* an empty label is no label (Prometheus's rule) */
		if (l->n == KEY_LABELS) {
			reject(r, si, ns, TSD_REJECT_TAG, "more than %d labels besides __name__: a table's "
			       "key holds at most %d", KEY_LABELS, KEY_LABELS);
			return -1;
		}
		char *name = l->name[l->n];
		if (hit) { /* mapped, and known to be no duplicate */
			memcpy(name, r->memo.name[i], strlen(r->memo.name[i]) + 1);
		} else {
			tsd_ingest_name(lab->name, lab->name_len, 1, name);
			if (strcasecmp(name, TSD_PROM_VALUE) == 0)
				memmove(name + 1, name, strlen(name) + 1), name[0] = '_';
			for (int j = 0; !checked && j < l->n; j++)
				if (strcasecmp(l->name[j], name) == 0) {
					reject(r, si, ns, TSD_REJECT_DUPLICATE,
					       "label \"%s\" given twice (as mapped)", name);
					return -1;
				}
		}
		l->value[l->n] = lab->value;
		l->value_len[l->n] = lab->value_len;
		l->n++;
	}
	if (!l->metric || l->metric_len == 0) {
		reject(r, si, ns, TSD_REJECT_SYNTAX, "no metric name (label \"__name__\")");
		return -1;
	}
	l->of = s;
	return 0;
}

/* Whether series s has the labels of l's series but for the value of
 * __name__, at the same positions, and that value is a valid metric name
 * (not empty, UTF-8): then s maps as l's series did, every check that
 * series passed holding for s too.  A label equal to one met before is
 * the same memory in the decoded request (wire/promwrite.c unpacks each
 * distinct label once), so comparing pointers stands for comparing
 * bytes; equal bytes in other memory just take map_labels. */
static int same_labels(const struct labels *l, const struct pw_series *s)
{
	const struct pw_series *p = l->of;
	if (!p || p->nlabels != s->nlabels)
		return 0;
	for (size_t i = 0; i < s->nlabels; i++) {
		const struct pw_label *a = &s->labels[i], *b = &p->labels[i];
		if (i == l->metric_at) {
			if (a->name_len != 8 || memcmp(a->name, "__name__", 8) != 0)
				return 0;
		} else if (a->name != b->name || a->value != b->value || a->name_len != b->name_len ||
		           a->value_len != b->value_len) {
			return 0;
		}
	}
	const struct pw_label *m = &s->labels[l->metric_at];
	return m->value_len > 0 && tsd_ingest_utf8_ok(m->value, m->value_len);
}

/* Map series si's labels into *l (map_labels), taking l's mapping when
 * same_labels says it holds. */
static int labels_of(struct req *r, size_t si, const struct pw_series *s, struct labels *l,
                     int checked)
{
	if (same_labels(l, s)) {
		l->of = s;
		l->metric = s->labels[l->metric_at].value;
		l->metric_len = s->labels[l->metric_at].value_len;
		return 0;
	}
	return map_labels(r, si, s, l, checked);
}

/* The ptable of table name, made on first sight.  Returns its index, or
 * TS_ENOMEM. */
static int ptable_for(struct req *r, const char *name)
{
	for (int i = r->ntables - 1; i >= 0; i--)
		if (strcmp(r->tables[i].name, name) == 0)
			return i;
	if (r->ntables == r->captables) {
		int cap = r->captables ? r->captables * 2 : 16;
		struct ptable *t = realloc(r->tables, (size_t)cap * sizeof *t);
		if (!t)
			return TS_ENOMEM;
		memset(t + r->captables, 0, (size_t)(cap - r->captables) * sizeof *t);
		r->tables = t;
		r->captables = cap;
	}
	struct ptable *pt = &r->tables[r->ntables];
	snprintf(pt->name, sizeof pt->name, "%s", name);
	pt->value_col = -1;
	int rc = tsd_ingest_table(r->in, name, &pt->t);
	if (rc < 0 && rc != TS_ENOENT)
		snprintf(pt->problem, sizeof pt->problem, "%s", ts_errmsg(NULL));
	return r->ntables++;
}

/* Note that pt, still to be created, needs label columns l. */
static int want_labels(struct ptable *pt, const struct labels *l)
{
	for (int i = 0; i < l->n; i++) {
		int j;
		for (j = 0; j < pt->nwants && strcasecmp(pt->wants[j], l->name[i]) != 0; j++)
			;
		if (j < pt->nwants || pt->nwants == KEY_LABELS)
			continue; /* known; or no room: its series are refused (tag) */
		if (pt->nwants == pt->capwants) {
			int cap = pt->capwants ? pt->capwants * 2 : 8;
			void *w = realloc(pt->wants, (size_t)cap * sizeof *pt->wants);
			if (!w)
				return TS_ENOMEM;
			pt->wants = w;
			pt->capwants = cap;
		}
		snprintf(pt->wants[pt->nwants++], TS_NAME_MAX + 1, "%s", l->name[i]);
	}
	return 0;
}

static int cmp_name(const void *a, const void *b)
{
	return strcmp(a, b);
}

/* Create pt's table: its labels sorted, ts, value double default NaN. */
static void create_table(struct req *r, struct ptable *pt)
{
	ts_column cols[TS_KEY_COLUMNS_MAX + 1];
	const char *keys[TS_KEY_COLUMNS_MAX];
	int n = 0;
	if (pt->nwants > 1) /* wants is NULL when there are none */
		qsort(pt->wants, (size_t)pt->nwants, sizeof *pt->wants, cmp_name);
	for (int i = 0; i < pt->nwants; i++) {
		cols[n] = (ts_column){.name = pt->wants[i], .type = TS_STRING};
		keys[n++] = pt->wants[i];
	}
	cols[n] = (ts_column){.name = "ts", .type = TS_TIMESTAMP};
	keys[n++] = "ts";
	cols[n] = (ts_column){.name = TSD_PROM_VALUE, .type = TS_DOUBLE, .dflt = ts_double(NAN)};
	if (tsd_ingest_create(r->in, pt->name, cols, n + 1, keys, n) < 0) {
		snprintf(pt->problem, sizeof pt->problem, "it could not be created: %s", ts_errmsg(NULL));
		logf_(r->in, "table \"%s\" could not be created: %s", pt->name, ts_errmsg(NULL));
		return;
	}
	if (tsd_ingest_table(r->in, pt->name, &pt->t) < 0)
		snprintf(pt->problem, sizeof pt->problem, "%s", ts_errmsg(NULL));
}

/* Take pt's schema and find (or add) its column value. */
static void prepare_table(struct req *r, struct ptable *pt)
{
	int c;
	if (ts_table_schema(pt->t, &pt->schema) < 0) {
		snprintf(pt->problem, sizeof pt->problem, "%s", ts_errmsg(NULL));
		return;
	}
	if ((c = tsd_ingest_find_column(pt->schema, TSD_PROM_VALUE)) < 0) {
		ts_column col = {.name = TSD_PROM_VALUE, .type = TS_DOUBLE, .dflt = ts_double(NAN)};
		int rc = ts_alter_add(pt->t, &col);
		if (rc < 0 && rc != TS_EEXIST) {
			snprintf(pt->problem, sizeof pt->problem, "adding column \"value\" failed: %s",
			         ts_errmsg(NULL));
			return;
		}
		ts_schema_free(pt->schema);
		pt->schema = NULL;
		if (ts_table_schema(pt->t, &pt->schema) < 0) {
			snprintf(pt->problem, sizeof pt->problem, "%s", ts_errmsg(NULL));
			return;
		}
		c = tsd_ingest_find_column(pt->schema, TSD_PROM_VALUE);
	}
	if (c < 0 || pt->schema->columns[c].type != TS_DOUBLE ||
	    tsd_ingest_key_position(pt->schema, c) >= 0) {
		snprintf(pt->problem, sizeof pt->problem, "its column \"value\" is not a double column "
		         "outside the key");
		if (tsd_ingest_once(r->in, pt->name, ONCE_VALUE))
			logf_(r->in, "table \"%s\": refusing remote write series: %s (logged once per "
			      "table)", pt->name, pt->problem);
		return;
	}
	pt->value_col = c;
}

/* ---- Pass 3: rows ---- */

/* A storage failure of table pt: the request answers 500 (the first
 * failure's message). */
static void failed(struct req *r, struct ptable *pt, int rc, const char *msg, size_t n)
{
	if (rc == TS_ECLOSED)
		tsd_ingest_forget(r->in, pt->name);
	if (!r->res->code || r->res->code == TS_EINVAL) {
		r->res->code = rc;
		snprintf(r->res->error, sizeof r->res->error, "table \"%s\": %s (%zu samples not stored)",
		         pt->name, msg, n);
	}
}

/* What insert_rows's refused samples need. */
struct refusal {
	struct req *r;
	struct ptable *pt;
};

static void refuse_sample(void *arg, size_t row, int rc, const char *why)
{
	struct refusal *f = arg;
	if (rc != TS_EDUPKEY && tsd_ingest_once(f->r->in, f->pt->name, ONCE_STORE))
		logf_(f->r->in, "table \"%s\": a remote write sample was refused: %s (logged once per "
		      "table)", f->pt->name, why);
	reject(f->r, f->pt->series[row], 1, tsd_ingest_reason_of(rc), "table \"%s\": %s",
	       f->pt->name, why);
}

/* Insert pt's rows, refusing the samples the library refuses. */
static void insert_rows(struct req *r, struct ptable *pt)
{
	struct refusal f = {r, pt};
	size_t unstored = 0;
	int rc = tsd_ingest_insert(pt->t, pt->schema->version, pt->rows, pt->nrows,
	                           (size_t)pt->schema->ncolumns, r->res, refuse_sample, &f, &unstored);
	if (rc < 0)
		failed(r, pt, rc, ts_errmsg(NULL), unstored);
	pt->nrows = 0;
}

static void flush_all(struct req *r)
{
	for (int i = 0; i < r->ntables; i++)
		if (r->tables[i].nrows)
			insert_rows(r, &r->tables[i]);
	r->buffered = 0;
}

/* Room for one more row of pt, all of its values TS_NONE; NULL when out
 * of memory. */
static ts_value *row_alloc(struct ptable *pt)
{
	size_t nc = (size_t)pt->schema->ncolumns;
	if (pt->nrows == pt->caprows) {
		size_t cap = pt->caprows ? pt->caprows * 2 : 256;
		ts_value *rows = realloc(pt->rows, cap * nc * sizeof *rows);
		if (!rows)
			return NULL;
		pt->rows = rows;
		size_t *series = realloc(pt->series, cap * sizeof *series);
		if (!series)
			return NULL;
		pt->series = series;
		pt->caprows = cap;
	}
	ts_value *row = pt->rows + pt->nrows * nc;
	for (size_t i = 0; i < nc; i++)
		row[i] = ts_none();
	return row;
}

/* Lay out the samples of series si as rows of its table.  Returns 0 or
 * TS_ENOMEM. */
static int build_series(struct req *r, size_t si, const struct pw_series *s,
                        const struct labels *l)
{
	struct ptable *pt = &r->tables[r->table_of[si]];
	size_t ns = s->nsamples;
	int col[KEY_LABELS];
	if (!pt->schema || pt->value_col < 0) {
		reject(r, si, ns, pt->schema ? TSD_REJECT_TYPE : TSD_REJECT_SCHEMA,
		       "table \"%s\" is not available: %s", pt->name,
		       pt->problem[0] ? pt->problem : "unknown error");
		return 0;
	}
	const ts_schema *sc = pt->schema;
	int same = pt->lay_valid && pt->lay_n == l->n;
	for (int i = 0; same && i < l->n; i++)
		same = strcmp(pt->lay_name[i], l->name[i]) == 0;
	if (same) /* the labels of the table's last series: a strcmp per label */
		memcpy(col, pt->lay_col, (size_t)l->n * sizeof *col);
	for (int i = 0; !same && i < l->n; i++) {
		int c = tsd_ingest_find_column(sc, l->name[i]);
		int kp = c < 0 ? -1 : tsd_ingest_key_position(sc, c);
		if (kp < 0 || kp == sc->nkey - 1 || sc->columns[c].type != TS_STRING) {
			if (tsd_ingest_once(r->in, pt->name, ONCE_TAG))
				logf_(r->in, "table \"%s\": refusing remote write series with label \"%s\", "
				      "which is no string key column of the table (its key is fixed when it "
				      "is created)", pt->name, l->name[i]);
			reject(r, si, ns, TSD_REJECT_TAG, "table \"%s\": label \"%s\" is not a string key "
			       "column of the table", pt->name, l->name[i]);
			return 0;
		}
		col[i] = c;
	}
	if (!same) {
		pt->lay_valid = 1;
		pt->lay_n = l->n;
		for (int i = 0; i < l->n; i++) {
			memcpy(pt->lay_name[i], l->name[i], sizeof pt->lay_name[i]);
			pt->lay_col[i] = col[i];
		}
	}
	int ts_col = sc->key[sc->nkey - 1];
	for (size_t k = 0; k < ns; k++) {
		int64_t ms = s->samples[k].timestamp_ms;
		if (ms > INT64_MAX / 1000000 || ms < INT64_MIN / 1000000) {
			reject(r, si, 1, TSD_REJECT_RANGE, "table \"%s\": timestamp %lld ms is beyond the "
			       "range of a timestamp", pt->name, (long long)ms);
			continue;
		}
		int64_t ts = ms * 1000000;
		/* The library's time checks, made first as the line protocol
		 * does: a batch it refused would be split at each such row. */
		if (r->max_future > 0 && ts > r->now && ts - r->now > r->max_future) {
			reject(r, si, 1, TSD_REJECT_TIME, "table \"%s\": timestamp %lld ms is more than "
			       "max-future ahead of now", pt->name, (long long)ms);
			continue;
		}
		if (sc->ttl > 0 && r->now - sc->ttl > ts) {
			reject(r, si, 1, TSD_REJECT_TIME, "table \"%s\": timestamp %lld ms is older than "
			       "the table's TTL", pt->name, (long long)ms);
			continue;
		}
		ts_value *row = row_alloc(pt);
		if (!row)
			return TS_ENOMEM;
		for (int i = 0; i < l->n; i++)
			row[col[i]] = ts_stringn(l->value[i], l->value_len[i]);
		row[ts_col] = ts_timestamp(ts);
		row[pt->value_col] = ts_double(s->samples[k].value);
		pt->series[pt->nrows++] = si;
		if (l->n < sc->nkey - 1)
			r->res->rows_missing_tags++;
		if ((r->buffered += (size_t)sc->ncolumns) >= FLUSH_VALUES)
			flush_all(r);
	}
	return 0;
}

/* ---- The request ---- */

static int run(struct req *r, const struct pw_request *wr)
{
	struct labels l = {.of = NULL};
	char name[TS_NAME_MAX + 1];
	int rc;
	if (wr->nseries && !(r->table_of = malloc(wr->nseries * sizeof *r->table_of)))
		return TS_ENOMEM;
	for (size_t si = 0; si < wr->nseries; si++) {
		const struct pw_series *s = &wr->series[si];
		r->table_of[si] = -1;
		r->res->points += s->nsamples;
		if (s->nsamples == 0 || labels_of(r, si, s, &l, 0) < 0)
			continue;
		if ((rc = ptable_for(r, tsd_ingest_name(l.metric, l.metric_len, 0, name))) < 0)
			return rc;
		r->table_of[si] = rc;
		if (!r->tables[rc].t && !r->tables[rc].problem[0] && want_labels(&r->tables[rc], &l) < 0)
			return TS_ENOMEM;
	}
	for (int i = 0; i < r->ntables; i++) {
		struct ptable *pt = &r->tables[i];
		if (!pt->t && !pt->problem[0])
			create_table(r, pt);
		if (pt->t)
			prepare_table(r, pt);
	}
	for (size_t si = 0; si < wr->nseries; si++) {
		if (r->table_of[si] < 0)
			continue;
		labels_of(r, si, &wr->series[si], &l, 1); /* it passed the first time */
		if ((rc = build_series(r, si, &wr->series[si], &l)) < 0)
			return rc;
	}
	flush_all(r);
	return 0;
}

static void req_free(struct req *r)
{
	for (int i = 0; i < r->ntables; i++) {
		ts_schema_free(r->tables[i].schema);
		free(r->tables[i].wants);
		free(r->tables[i].rows);
		free(r->tables[i].series);
	}
	free(r->tables);
	free(r->table_of);
}

/* The answer for res (as tsd_prom_write returns). */
static int status_of(struct tsd_ingest_result *res)
{
	if (res->code < 0 && res->code != TS_EINVAL)
		return 500;
	if (res->rejected) {
		res->code = TS_EINVAL;
		return 400;
	}
	return 204;
}

static int body_error(struct tsd_ingest_result *res, int status, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int body_error(struct tsd_ingest_result *res, int status, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(res->error, sizeof res->error, fmt, ap);
	va_end(ap);
	res->code = TS_EINVAL;
	return status;
}

/* The answer for a body pw_decode refused with code (its decoded length
 * n), res filled. */
static int decode_error(struct tsd_ingest_result *res, int code, size_t n, size_t max_decoded)
{
	switch (code) {
	case PW_ENOTSNAPPY:
		return body_error(res, 400, "snappy: the body is not snappy-compressed data (block "
		                  "format, as remote write sends); nothing was stored");
	case PW_ETOOBIG:
		return body_error(res, 413, "the body is larger than http-max-body (%zu bytes) once "
		                  "decoded from snappy (%zu bytes)", max_decoded, n);
	case PW_EDAMAGED:
		return body_error(res, 400, "snappy: the compressed body is damaged; nothing was "
		                  "stored");
	case PW_EUNPACK:
		return body_error(res, 413, "protobuf: the body (%zu bytes once decoded from snappy) "
		                  "would take more than %d times its size unpacked; nothing was stored",
		                  n, PW_UNPACK_FACTOR);
	case PW_EPROTO:
		return body_error(res, 400, "protobuf: the body (%zu bytes once decoded from snappy) "
		                  "is not a remote write WriteRequest; nothing was stored", n);
	}
	snprintf(res->error, sizeof res->error, "out of memory for the decoded body");
	res->code = TS_ENOMEM;
	return 500;
}

int tsd_prom_write(struct tsd_ingest *in, const char *body, size_t len, size_t max_decoded,
                   struct tsd_ingest_result *res)
{
	struct req r = {.in = in, .res = res, .now = tsd_ingest_now(in),
	                .max_future = tsd_ingest_max_future(in)};
	struct pw_request wr;
	int rc;
	memset(res, 0, sizeof *res);
	if ((rc = pw_decode(body, len, max_decoded, &wr, NULL, 0)) < 0)
		return decode_error(res, rc, wr.decoded_len, max_decoded);
	if ((rc = run(&r, &wr)) < 0 && (!res->code || res->code == TS_EINVAL)) {
		res->code = rc;
		snprintf(res->error, sizeof res->error, "%s", rc == TS_ENOMEM ? "out of memory"
		         : ts_strerror(rc));
	}
	req_free(&r);
	pw_request_free(&wr);
	tsd_ingest_account(in, res);
	return status_of(res);
}
