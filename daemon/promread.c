/*
 * promread.c -- Prometheus remote read over tsstore tables: the reverse
 * of promwrite.c's mapping (tsstore-http(7), PROMETHEUS REMOTE READ;
 * docs/http.md section 10).  A table is a metric, its string key columns
 * before ts are the labels, each row a sample whose value is the double
 * column "value".
 *
 * Each query of the request is answered on its own, in order:
 *   tables    a matcher __name__="X" names the one table X maps to by
 *             the ingest's name rule (tsd_ingest_name), and the series
 *             carry __name__="X"; without one, every table of the
 *             database that has the remote write shape (a double column
 *             "value" outside the key, every key column but ts a string)
 *             is a candidate, its name the metric; the other matchers on
 *             __name__ then pick among them.
 *   columns   every other matcher's label name goes through the same
 *             name rule to a key column; a label the table has no key
 *             column for is missing from all its series, i.e. "" (as
 *             Prometheus matches a missing label), so the matcher either
 *             passes for the whole table and is dropped, or the table
 *             gives nothing.
 *   rows      "=" matchers on the leading key columns make the key
 *             prefix, the time range the ts range (ms, both ends
 *             included: [start, end + 1 ms) in ns), and the cursor
 *             projects the label columns, ts and value.  Rows come in
 *             key order, so the rows of a series (one set of label
 *             values) are consecutive and in time order: the matchers
 *             run once per series, when its label values change; past
 *             SEEK_AFTER rows of a series they refuse, the cursor is
 *             opened again after its label values.
 * A series' labels are __name__ and its non-empty label columns, sorted
 * by name (as Prometheus keeps them); its samples are the rows, ts
 * floored to ms (a second row in the same ms is dropped: Prometheus's
 * samples have distinct times).
 *
 * Bounds: the samples gathered count against max_samples (400,
 * "exceeded sample limit (N)", past it) and an upper bound of the
 * encoded size against TSD_PROM_READ_MAX_RESPONSE.  The samples of all
 * queries are gathered in one array, the label strings in an arena
 * (wire/arena.h); the response is encoded (wire/promread.c) once every
 * query is answered, and everything but the compressed body is freed.
 *
 * Regular expressions are RE2's, as Prometheus takes them, translated to
 * POSIX extended ones by wire/promread.c (pr_regex_posix: anchored as
 * Prometheus anchors them, ^(P)$; \d and the other Perl classes as
 * bracket expressions, (?:...) as a group, . as any character but
 * newline; what has no POSIX equal, such as (?i), refused with a 400),
 * compiled with regcomp and run under a UTF-8 LC_CTYPE (C.UTF-8), so
 * that . takes a character, as RE2's does, not a byte.
 */
#include <locale.h>
#include <pthread.h>
#include <regex.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "ingest.h"
#include "promread.h"
#include "promwrite.h"
#include "wire/arena.h"

#define METRIC "__name__"
#define METRIC_LEN 8
/* Label columns a table may have: its key, ts excluded. */
#define LABELS_MAX (TS_KEY_COLUMNS_MAX - 1)
#define ARENA_CHUNK ((size_t)64 << 10)
/* The most bytes a sample takes in the response (tag, length, the
 * double's tag and 8 bytes, the timestamp's tag and at most 10 bytes). */
#define SAMPLE_MAX_BYTES 22
/* Rows of a series the matchers refuse that are passed over one by one;
 * past them, the cursor is opened again after the series' label values
 * (the rows of a long series are then skipped by the key search). */
#define SEEK_AFTER 256

/* ---- The request ---- */

/* A matcher compiled: its regular expression for =~ and !~. */
struct matcher {
	const struct pr_matcher *m;
	int is_metric;               /* on __name__ */
	int compiled;
	regex_t re;
	int col;                     /* in a table: its label (projected index), -1 none */
};

/* A series gathered: its labels (in the arena) and its samples, a run
 * of the request's sample array. */
struct gseries {
	const struct pr_label *labels;
	size_t nlabels;
	size_t first, n;
};

struct read {
	ts_db *db;
	struct tsd_prom_read_result *res;
	size_t max_samples;
	int status;                  /* the error status decided, 0: none */
	size_t bytes;                /* the response's size, an upper bound */
	struct arena arena;           /* label strings and arrays */
	char **tables;               /* the database's tables, listed once */
	struct pr_sample *samples;
	size_t nsamples, capsamples;
	struct gseries *series;
	size_t nseries, capseries;
};

/* The series of one table being read: its columns, and the label values
 * of the series the rows are in. */
struct tread {
	int nlab;                    /* label columns (key columns before ts) */
	int proj[LABELS_MAX + 2];    /* projection: the labels, ts, value */
	const char *name[LABELS_MAX]; /* the label columns' names (in the arena) */
	int order[LABELS_MAX + 1];   /* labels by name: indexes, -1 for __name__ */
	const char *metric;
	size_t metric_len;
	char *cur[LABELS_MAX];       /* the current series' label values, NUL-terminated */
	size_t curlen[LABELS_MAX], curcap[LABELS_MAX];
	int have_cur, cur_ok;
	size_t skipped;              /* rows of the current series passed over */
	int64_t last_ms;
};

static int failf(struct read *r, int status, int code, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static int failf(struct read *r, int status, int code, const char *fmt, ...)
{
	va_list ap;
	if (r->status)
		return -1;
	r->status = status;
	r->res->code = code;
	va_start(ap, fmt);
	vsnprintf(r->res->error, sizeof r->res->error, fmt, ap);
	va_end(ap);
	return -1;
}

/* ---- Matchers ---- */

/* Compile the regular expressions of q's matchers into ms.  Returns 0,
 * or -1 after the 400. */
static int compile(struct read *r, size_t qi, const struct pr_query *q, struct matcher *ms)
{
	for (size_t i = 0; i < q->nmatchers; i++) {
		const struct pr_matcher *m = &q->matchers[i];
		ms[i] = (struct matcher){.m = m, .col = -1};
		ms[i].is_metric = m->name_len == METRIC_LEN && memcmp(m->name, METRIC, METRIC_LEN) == 0;
		if (m->type != PR_RE && m->type != PR_NRE)
			continue;
		char *pat = NULL, why[PR_ERR_MAX];
		int rc = pr_regex_posix(m->value_len ? m->value : "", m->value_len, &pat, why,
		                        sizeof why);
		if (rc == PR_ENOMEM)
			return failf(r, 500, TS_ENOMEM, "out of memory");
		if (rc == 0 && (rc = regcomp(&ms[i].re, pat, REG_EXTENDED | REG_NOSUB)) != 0)
			regerror(rc, &ms[i].re, why, sizeof why);
		free(pat);
		if (rc != 0)
			return failf(r, 400, TS_EINVAL, "query %zu: the regular expression \"%.*s\" of "
			             "label \"%.*s\" is not one tsstored takes: %s", qi + 1,
			             (int)(m->value_len > 200 ? 200 : m->value_len), m->value,
			             (int)(m->name_len > 64 ? 64 : m->name_len), m->name, why);
		ms[i].compiled = 1;
	}
	return 0;
}

static void uncompile(struct matcher *ms, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (ms[i].compiled)
			regfree(&ms[i].re);
}

/* Whether v[0..n) is m's value (either may be NULL when empty: no
 * memcmp of NULL, even for 0 bytes). */
static int equal(const struct pr_matcher *m, const char *v, size_t n)
{
	return n == m->value_len && (n == 0 || memcmp(v, m->value, n) == 0);
}

/* Whether matcher m takes value v[0..n), which v[n] ends with a NUL
 * (regexec reads it as REG_STARTEND says, but AddressSanitizer's
 * interceptor reads to the NUL). */
static int matches(const struct matcher *m, const char *v, size_t n)
{
	regmatch_t pm[1];
	switch (m->m->type) {
	case PR_EQ:
		return equal(m->m, v, n);
	case PR_NEQ:
		return !equal(m->m, v, n);
	case PR_RE:
	case PR_NRE:
		pm[0].rm_so = 0;
		pm[0].rm_eo = (regoff_t)n;
		return (regexec(&m->re, v, 1, pm, REG_STARTEND) == 0) == (m->m->type == PR_RE);
	}
	return 0;
}

/* ---- Gathering ---- */

/* Room for one more sample; NULL when out of memory. */
static struct pr_sample *sample_add(struct read *r)
{
	if (r->nsamples == r->capsamples) {
		size_t cap = r->capsamples ? r->capsamples * 2 : 4096;
		struct pr_sample *s = realloc(r->samples, cap * sizeof *s);
		if (!s)
			return NULL;
		r->samples = s;
		r->capsamples = cap;
	}
	return &r->samples[r->nsamples++];
}

/* Start a series with the current label values of tr.  Returns 0, or -1
 * after the error. */
static int series_start(struct read *r, struct tread *tr)
{
	struct pr_label *labels;
	int n = 0;
	if (r->nseries == r->capseries) {
		size_t cap = r->capseries ? r->capseries * 2 : 256;
		struct gseries *s = realloc(r->series, cap * sizeof *s);
		if (!s)
			return failf(r, 500, TS_ENOMEM, "out of memory");
		r->series = s;
		r->capseries = cap;
	}
	if (!(labels = arena_take(&r->arena, (size_t)(tr->nlab + 1) * sizeof *labels)))
		return failf(r, 500, TS_ENOMEM, "out of memory");
	for (int k = 0; k <= tr->nlab; k++) {
		int i = tr->order[k];
		if (i < 0) {
			labels[n++] = (struct pr_label){METRIC, METRIC_LEN, tr->metric, tr->metric_len};
			continue;
		}
		if (tr->curlen[i] == 0)
			continue; /* an empty value is no label */
		char *v = arena_take(&r->arena, tr->curlen[i]);
		if (!v)
			return failf(r, 500, TS_ENOMEM, "out of memory");
		memcpy(v, tr->cur[i], tr->curlen[i]);
		labels[n++] = (struct pr_label){tr->name[i], strlen(tr->name[i]), v, tr->curlen[i]};
	}
	struct pr_series head = {labels, (size_t)n, NULL, 0};
	r->bytes += pr_series_bound(&head);
	r->series[r->nseries++] = (struct gseries){labels, (size_t)n, r->nsamples, 0};
	return 0;
}

/* Whether the labels of row are the current series' (and make them so
 * when not).  Returns 1 (same), 0 (a new series), -1 out of memory. */
static int same_series(struct tread *tr, const ts_value *row)
{
	int same = tr->have_cur;
	for (int i = 0; same && i < tr->nlab; i++)
		same = row[i].v.s.len == tr->curlen[i] &&
		       (tr->curlen[i] == 0 || memcmp(row[i].v.s.ptr, tr->cur[i], tr->curlen[i]) == 0);
	if (same)
		return 1;
	for (int i = 0; i < tr->nlab; i++) {
		size_t n = row[i].v.s.len;
		if (!tr->cur[i] || n >= tr->curcap[i]) {
			char *p = realloc(tr->cur[i], n + 1);
			if (!p)
				return -1;
			tr->cur[i] = p;
			tr->curcap[i] = n + 1;
		}
		if (n)
			memcpy(tr->cur[i], row[i].v.s.ptr, n);
		tr->cur[i][n] = '\0'; /* for regexec, whose sanitizer interceptor reads to a NUL */
		tr->curlen[i] = n;
	}
	tr->have_cur = 1;
	return 0;
}

/* Whether the current series of tr passes the label matchers. */
static int series_matches(const struct tread *tr, const struct matcher *ms, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!ms[i].is_metric && ms[i].col >= 0 &&
		    !matches(&ms[i], tr->cur[ms[i].col], tr->curlen[ms[i].col]))
			return 0;
	return 1;
}

static int64_t floor_ms(int64_t ns)
{
	int64_t q = ns / 1000000;
	return ns % 1000000 < 0 ? q - 1 : q;
}

/* One row of the cursor. */
static int take_row(struct read *r, struct tread *tr, const struct matcher *ms, size_t n,
                    const ts_value *row)
{
	int same = same_series(tr, row);
	if (same < 0)
		return failf(r, 500, TS_ENOMEM, "out of memory");
	if (!same) {
		tr->cur_ok = series_matches(tr, ms, n);
		tr->skipped = 0;
		if (tr->cur_ok && series_start(r, tr) < 0)
			return -1;
		tr->last_ms = INT64_MIN;
	}
	if (!tr->cur_ok) {
		tr->skipped++;
		return 0;
	}
	int64_t ms_ = floor_ms(row[tr->nlab].v.i);
	struct gseries *s = &r->series[r->nseries - 1];
	if (s->n && ms_ == tr->last_ms)
		return 0; /* a second row in one ms */
	if (r->nsamples >= r->max_samples)
		return failf(r, 400, TS_ETOOBIG, "exceeded sample limit (%zu)", r->max_samples);
	if ((r->bytes += SAMPLE_MAX_BYTES) > TSD_PROM_READ_MAX_RESPONSE)
		return failf(r, 400, TS_ETOOBIG, "the response would be larger than %zu bytes",
		             TSD_PROM_READ_MAX_RESPONSE);
	struct pr_sample *smp = sample_add(r);
	if (!smp)
		return failf(r, 500, TS_ENOMEM, "out of memory");
	smp->timestamp_ms = ms_;
	smp->value = row[tr->nlab + 1].v.d;
	tr->last_ms = ms_;
	s->n++;
	return 0;
}

/* ---- Tables ---- */

/* The label column (index among sc's first nlab key columns) that
 * label name[0..len) maps to, or -1. */
static int label_column(const ts_schema *sc, int nlab, const char *name, size_t len)
{
	char col[TS_NAME_MAX + 1];
	tsd_ingest_name(name, len, 1, col);
	if (strcasecmp(col, TSD_PROM_VALUE) == 0)
		memmove(col + 1, col, strlen(col) + 1), col[0] = '_';
	for (int i = 0; i < nlab; i++)
		if (strcasecmp(sc->columns[sc->key[i]].name, col) == 0)
			return i;
	return -1;
}

/* Set tr's columns from sc: whether the table has the remote write
 * shape (1) or not (0). */
static int table_shape(const ts_schema *sc, struct tread *tr)
{
	int v = tsd_ingest_find_column(sc, TSD_PROM_VALUE);
	if (v < 0 || sc->columns[v].type != TS_DOUBLE || tsd_ingest_key_position(sc, v) >= 0)
		return 0;
	tr->nlab = sc->nkey - 1;
	for (int i = 0; i < tr->nlab; i++) {
		if (sc->columns[sc->key[i]].type != TS_STRING)
			return 0;
		tr->proj[i] = sc->key[i];
		tr->name[i] = sc->columns[sc->key[i]].name;
	}
	tr->proj[tr->nlab] = sc->key[sc->nkey - 1];
	tr->proj[tr->nlab + 1] = v;
	/* the labels in name order, __name__ (-1) among them */
	int n = 0;
	for (int i = -1; i < tr->nlab; i++) {
		const char *name = i < 0 ? METRIC : tr->name[i];
		int k = n++;
		while (k > 0 && strcmp(tr->order[k - 1] < 0 ? METRIC : tr->name[tr->order[k - 1]],
		                       name) > 0) {
			tr->order[k] = tr->order[k - 1];
			k--;
		}
		tr->order[k] = i;
	}
	return 1;
}

/* Read the rows of table t (schema sc) for the query into series. */
static int read_rows(struct read *r, ts_table *t, struct tread *tr, struct matcher *ms, size_t n,
                     const struct pr_query *q)
{
	ts_value prefix[LABELS_MAX], after[LABELS_MAX];
	ts_query tq;
	ts_cursor *cur = NULL;
	const ts_value *row;
	int np = 0, rc;
	memset(&tq, 0, sizeof tq);
	for (; np < tr->nlab; np++) {
		size_t i;
		for (i = 0; i < n && !(ms[i].col == np && ms[i].m->type == PR_EQ); i++)
			;
		if (i == n)
			break;
		prefix[np] = ts_stringn(ms[i].m->value_len ? ms[i].m->value : "", ms[i].m->value_len);
	}
	tq.prefix = np ? prefix : NULL;
	tq.nprefix = np;
	if (q->start_ms > INT64_MIN / 1000000) {
		tq.from = q->start_ms * 1000000;
		tq.has_from = 1;
	}
	if (q->end_ms < INT64_MAX / 1000000 - 1) {
		tq.to = (q->end_ms + 1) * 1000000;
		tq.has_to = 1;
	}
	tq.columns = tr->proj;
	tq.ncolumns = tr->nlab + 2;
	if ((rc = ts_query_open(t, &tq, &cur)) < 0)
		return failf(r, 500, rc, "table \"%s\": %s", ts_table_name(t), ts_errmsg(NULL));
	while ((rc = ts_cursor_next(cur, &row, NULL)) == 0 && row) {
		if (take_row(r, tr, ms, n, row) < 0)
			break;
		if (tr->skipped < SEEK_AFTER || tr->nlab == 0)
			continue;
		/* a long series the matchers refuse: on past its rows, with
		 * a new cursor from just after its label values */
		for (int i = 0; i < tr->nlab; i++)
			after[i] = ts_stringn(tr->curlen[i] ? tr->cur[i] : "", tr->curlen[i]);
		tq.lower = after;
		tq.nlower = tr->nlab;
		tq.lower_exclusive = 1;
		tr->skipped = 0;
		ts_cursor_close(cur);
		if ((rc = ts_query_open(t, &tq, &cur)) < 0) {
			cur = NULL;
			break;
		}
	}
	if (rc < 0)
		failf(r, 500, rc, "table \"%s\": %s", ts_table_name(t), ts_errmsg(NULL));
	ts_cursor_close(cur);
	return r->status ? -1 : 0;
}

/* Answer the query from table name, whose series carry
 * __name__=metric[0..mlen). */
static int read_table(struct read *r, const char *name, const char *metric, size_t mlen,
                      struct matcher *ms, size_t n, const struct pr_query *q)
{
	struct tread tr;
	ts_table *t = NULL;
	ts_schema *sc = NULL;
	int rc;
	for (size_t i = 0; i < n; i++)
		if (ms[i].is_metric && !matches(&ms[i], metric, mlen))
			return 0;
	memset(&tr, 0, sizeof tr);
	tr.metric = metric;
	tr.metric_len = mlen;
	if ((rc = ts_table_open(r->db, name, &t)) < 0)
		return rc == TS_ENOENT ? 0 : failf(r, 500, rc, "table \"%s\": %s", name, ts_errmsg(NULL));
	if ((rc = ts_table_schema(t, &sc)) < 0) {
		failf(r, 500, rc, "table \"%s\": %s", name, ts_errmsg(NULL));
		goto out;
	}
	if (!table_shape(sc, &tr))
		goto out;
	for (int i = 0; i < tr.nlab; i++) { /* the series outlive the schema */
		size_t len = strlen(tr.name[i]) + 1;
		char *copy = arena_take(&r->arena, len);
		if (!copy) {
			failf(r, 500, TS_ENOMEM, "out of memory");
			goto out;
		}
		tr.name[i] = memcpy(copy, tr.name[i], len);
	}
	for (size_t i = 0; i < n; i++) {
		if (ms[i].is_metric)
			continue;
		ms[i].col = label_column(sc, tr.nlab, ms[i].m->name, ms[i].m->name_len);
		if (ms[i].col < 0 && !matches(&ms[i], "", 0))
			goto out; /* a label no series has, which must not be empty */
	}
	read_rows(r, t, &tr, ms, n, q);
out:
	for (int i = 0; i < LABELS_MAX; i++)
		free(tr.cur[i]);
	ts_schema_free(sc);
	ts_table_close(t);
	return r->status ? -1 : 0;
}

/* Answer query qi. */
static int run_query(struct read *r, size_t qi, const struct pr_query *q)
{
	struct matcher *ms = calloc(q->nmatchers + 1, sizeof *ms);
	const struct pr_matcher *named = NULL;
	char table[TS_NAME_MAX + 1], *metric = NULL;
	int rc = 0;
	if (!ms)
		return failf(r, 500, TS_ENOMEM, "out of memory");
	if (compile(r, qi, q, ms) < 0)
		goto out;
	r->bytes += 11;
	for (size_t i = 0; i < q->nmatchers && !named; i++)
		if (ms[i].is_metric && ms[i].m->type == PR_EQ)
			named = ms[i].m;
	if (named) {
		if (!named->value_len)
			goto out;
		/* a copy, NUL-terminated, that lives as long as the series */
		if (!(metric = arena_take(&r->arena, named->value_len + 1))) {
			rc = failf(r, 500, TS_ENOMEM, "out of memory");
			goto out;
		}
		memcpy(metric, named->value, named->value_len);
		metric[named->value_len] = '\0';
		rc = read_table(r, tsd_ingest_name(named->value, named->value_len, 0, table), metric,
		                named->value_len, ms, q->nmatchers, q);
		goto out;
	}
	if (!r->tables && (rc = ts_tables(r->db, &r->tables, NULL)) < 0) {
		rc = failf(r, 500, rc, "listing the tables: %s", ts_errmsg(NULL));
		goto out;
	}
	for (int i = 0; r->tables[i] && rc == 0; i++)
		rc = read_table(r, r->tables[i], r->tables[i], strlen(r->tables[i]), ms,
		                q->nmatchers, q);
out:
	uncompile(ms, q->nmatchers);
	free(ms);
	return r->status ? -1 : 0;
}

/* Encode what was gathered: the results of queries[0..nq), first[qi]
 * their first series (first[nq] the end). */
static int encode(struct read *r, const size_t *first, size_t nq, char **out, size_t *outlen)
{
	struct pr_series *series = calloc(r->nseries + 1, sizeof *series);
	struct pr_result *results = calloc(nq + 1, sizeof *results);
	int rc = -1;
	if (!series || !results) {
		failf(r, 500, TS_ENOMEM, "out of memory");
		goto out;
	}
	for (size_t i = 0; i < r->nseries; i++)
		series[i] = (struct pr_series){r->series[i].labels, r->series[i].nlabels,
		                               r->samples + r->series[i].first, r->series[i].n};
	for (size_t q = 0; q < nq; q++)
		results[q] = (struct pr_result){series + first[q], first[q + 1] - first[q]};
	if (pr_encode(results, nq, out, outlen) < 0) {
		failf(r, 500, TS_ENOMEM, "out of memory for the response");
		goto out;
	}
	rc = 0;
out:
	free(series);
	free(results);
	return rc;
}

/* The status for a body pr_decode refused. */
static int decode_error(struct read *r, int code, const char *why, size_t n, size_t max_decoded)
{
	switch (code) {
	case PR_ETOOBIG:
		return failf(r, 413, TS_ETOOBIG, "the body is larger than http-max-body (%zu bytes) "
		             "once decoded from snappy (%zu bytes)", max_decoded, n);
	case PR_EUNPACK:
		return failf(r, 413, TS_ETOOBIG, "%s", why);
	case PR_ENOMEM:
		return failf(r, 500, TS_ENOMEM, "%s", why);
	}
	return failf(r, 400, TS_EINVAL, "%s", why);
}

static int prom_read(ts_db *db, const char *body, size_t len, size_t max_decoded,
                     size_t max_samples, char **out, size_t *outlen,
                     struct tsd_prom_read_result *res);

/* The UTF-8 locale the regular expressions run in (LC_CTYPE, so that
 * . and [^...] take a character, as RE2's do, not a byte), made once;
 * (locale_t)0 when the system has none (then they run in the thread's,
 * the C locale: bytes). */
static locale_t utf8_locale;
static pthread_once_t utf8_once = PTHREAD_ONCE_INIT;

static void utf8_make(void)
{
	utf8_locale = newlocale(LC_CTYPE_MASK, "C.UTF-8", (locale_t)0);
}

int tsd_prom_read(ts_db *db, const char *body, size_t len, size_t max_decoded,
                  size_t max_samples, char **out, size_t *outlen,
                  struct tsd_prom_read_result *res)
{
	locale_t old = (locale_t)0;
	pthread_once(&utf8_once, utf8_make);
	if (utf8_locale)
		old = uselocale(utf8_locale);
	int status = prom_read(db, body, len, max_decoded, max_samples, out, outlen, res);
	if (utf8_locale)
		uselocale(old);
	return status;
}

static int prom_read(ts_db *db, const char *body, size_t len, size_t max_decoded,
                     size_t max_samples, char **out, size_t *outlen,
                     struct tsd_prom_read_result *res)
{
	struct read r = {.db = db, .res = res, .max_samples = max_samples,
	                 .arena = ARENA_INIT(ARENA_CHUNK, SIZE_MAX)};
	struct pr_request req;
	char why[PR_ERR_MAX];
	size_t *first = NULL;
	int rc;
	memset(res, 0, sizeof *res);
	*out = NULL;
	*outlen = 0;
	if ((rc = pr_decode(body, len, max_decoded, &req, why, sizeof why)) < 0) {
		decode_error(&r, rc, why, req.decoded_len, max_decoded);
		return r.status;
	}
	if (!(first = calloc(req.nqueries + 1, sizeof *first)))
		failf(&r, 500, TS_ENOMEM, "out of memory");
	for (size_t qi = 0; !r.status && qi < req.nqueries; qi++) {
		first[qi] = r.nseries;
		run_query(&r, qi, &req.queries[qi]);
	}
	if (!r.status) {
		first[req.nqueries] = r.nseries;
		if (encode(&r, first, req.nqueries, out, outlen) == 0) {
			res->queries = req.nqueries;
			res->series = r.nseries;
			res->samples = r.nsamples;
		}
	}
	free(first);
	free(r.samples);
	free(r.series);
	arena_clear(&r.arena);
	ts_free_names(r.tables);
	pr_request_free(&req);
	return r.status ? r.status : 200;
}
