/*
 * canon.c -- the interop tests' one JSON reader: it turns what each peer
 * answers into one canonical text, so that a shell script can compare
 * tsstore's rows with InfluxDB's or Prometheus's by diff(1).
 *
 *   canon tsstore TABLE          tsstore's `query --format jsonl` rows
 *   canon influx SCHEMADIR       InfluxDB 1.x /query JSON (epoch=ns)
 *   canon fieldkeys              InfluxDB's SHOW FIELD KEYS JSON
 *   canon prom                   Prometheus /api/v1/query JSON (a matrix)
 *   canon promql                 Prometheus /api/v1/query or query_range
 *                                JSON of any result type, as PromQL
 *
 * read standard input and print one line per row:
 *
 *   TABLE <TAB> TS <TAB> COLUMN=VALUE <TAB> ...   (columns sorted by name)
 *
 * TS in nanoseconds; a number as "%lld" when it is integral (and fits),
 * else "%.17g" (so 1 and 1.0 read alike: the column types are compared
 * apart, by `fieldkeys`); a string JSON-quoted; NaN and infinities as
 * tsstore's jsonl writes them ("NaN", "Infinity", "-Infinity").  The
 * peers' names and values are mapped by what docs/ingest-mapping.md
 * documents, and nothing else:
 *   - a measurement, tag or field name by the name rule of section 2
 *     (every byte not [A-Za-z0-9_] becomes _, a leading digit and a
 *     column named ts get a _ in front; names here are short);
 *   - a boolean is the int32 1 or 0;
 *   - a value InfluxDB answers null (the point had no such field or
 *     tag) is the column's default: NaN for double, 0 for int32/int64,
 *     "" for string, the type read from SCHEMADIR/TABLE (`tsstore schema
 *     TABLE`'s output);
 *   - a Prometheus sample's ms timestamp is ts = ms * 10^6, its value the
 *     column `value`, its labels string columns.
 * `promql` prints instead "LABELS <TAB> MS <TAB> VALUE" per sample, labels
 * as {name="value",...} sorted by name (__name__ included, nothing
 * mapped), MS the sample's time in ms, VALUE the number as Prometheus
 * wrote it ("NaN", "+Inf" too): a PromQL answer of one Prometheus to
 * compare with another's (test_promread.sh).
 * `fieldkeys` prints "TABLE <TAB> FIELD <TAB> TYPE" with InfluxDB's field
 * types mapped to tsstore's (float double, integer int64, unsigned int64,
 * boolean int32, string string).
 *
 * Exit status 0, or 1 (a message on stderr) on input it cannot read.
 *
 *   canon qdiff A B              two InfluxDB 1.x /query answers (files)
 *
 * compares the answer of a differential test's oracle (A) with the
 * answer under test (B), as tests/interop/test_tsbs_queries.sh needs it:
 * the same results (one per statement, statement_id alike), the same
 * series in the same order (name, tags: the same keys and values), the
 * same columns in the same order, the same number of rows with the same
 * timestamps (the column "time", exactly), and every value equal: null
 * only to null, strings and booleans exactly, two integers exactly, else
 * two numbers within QDIFF_REL of the larger magnitude (1 and 1.0 are
 * equal: InfluxDB writes a float mean of 50 as 50).  Rows of one series
 * sharing a timestamp (SELECT * over several hosts) may come in either
 * order: each such run is compared sorted by its rows' JSON text.  A
 * missing "series" is an empty one.  Prints "equal SERIES ROWS" (A's
 * counts) and exits 0; prints "differ: WHERE: WHAT" (WHERE names the
 * result, the series and the row: of a run sharing a timestamp, its
 * first) or, when A itself is
 * an error (the oracle refused the query), "error: MESSAGE", and exits 1;
 * exits 2 on a file that is not JSON.
 */
#include <ctype.h>
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NAME_MAX_LEN 256
#define COLS_MAX 2048
#define QDIFF_REL 1e-9 /* qdiff: relative tolerance of two numbers */

/* One column of an output line: its mapped name and canonical value. */
struct cell {
	char name[NAME_MAX_LEN];
	char *value;
};

static void die(const char *msg)
{
	fprintf(stderr, "canon: %s\n", msg);
	exit(1);
}

/* The name rule of docs/ingest-mapping.md section 2 (short names only).
 * column: a name of a column (ts becomes _ts). */
static void map_name(const char *in, int column, char *out)
{
	size_t n = 0;
	if (isdigit((unsigned char)in[0]) || (column && strcasecmp(in, "ts") == 0) ||
	    (!column && strcmp(in, "LOCK") == 0))
		out[n++] = '_';
	for (const char *p = in; *p && n < NAME_MAX_LEN - 1; p++)
		out[n++] = isalnum((unsigned char)*p) || *p == '_' ? *p : '_';
	out[n] = '\0';
}

/* A double as tsstore's jsonl writes it, canonical. */
static char *fmt_double(double d)
{
	char buf[64];
	if (isnan(d))
		return strdup("\"NaN\"");
	if (isinf(d))
		return strdup(d > 0 ? "\"Infinity\"" : "\"-Infinity\"");
	if (d == floor(d) && fabs(d) < 9.2e18)
		snprintf(buf, sizeof buf, "%lld", (long long)d);
	else
		snprintf(buf, sizeof buf, "%.17g", d);
	return strdup(buf);
}

/* A JSON value, canonical (booleans as 1 / 0). */
static char *fmt_value(json_t *v)
{
	char buf[64];
	switch (json_typeof(v)) {
	case JSON_INTEGER:
		snprintf(buf, sizeof buf, "%lld", (long long)json_integer_value(v));
		return strdup(buf);
	case JSON_REAL:
		return fmt_double(json_real_value(v));
	case JSON_TRUE:
		return strdup("1");
	case JSON_FALSE:
		return strdup("0");
	case JSON_STRING: {
		const char *s = json_string_value(v);
		if (strcmp(s, "NaN") == 0 || strcmp(s, "Infinity") == 0 ||
		    strcmp(s, "-Infinity") == 0) {
			snprintf(buf, sizeof buf, "\"%s\"", s);
			return strdup(buf);
		}
		return json_dumps(v, JSON_ENCODE_ANY);
	}
	default:
		return strdup("null");
	}
}

static int cell_cmp(const void *a, const void *b)
{
	return strcmp(((const struct cell *)a)->name, ((const struct cell *)b)->name);
}

/* Print one row: table, ts, then the cells sorted by name; frees them. */
static void print_row(const char *table, long long ts, struct cell *c, int n)
{
	qsort(c, (size_t)n, sizeof *c, cell_cmp);
	printf("%s\t%lld", table, ts);
	for (int i = 0; i < n; i++) {
		printf("\t%s=%s", c[i].name, c[i].value);
		free(c[i].value);
	}
	putchar('\n');
}

static struct cell cells[COLS_MAX];

/* canon tsstore TABLE: one jsonl object per line. */
static void do_tsstore(const char *table)
{
	char *line = NULL;
	size_t cap = 0;
	while (getline(&line, &cap, stdin) > 0) {
		json_error_t err;
		json_t *o = json_loads(line, 0, &err), *v;
		const char *k;
		long long ts = 0;
		int n = 0;
		if (!json_is_object(o))
			die("tsstore: a line is not a JSON object");
		json_object_foreach(o, k, v) {
			if (strcmp(k, "ts") == 0) {
				ts = (long long)json_integer_value(v);
				continue;
			}
			if (n == COLS_MAX)
				die("too many columns");
			snprintf(cells[n].name, NAME_MAX_LEN, "%s", k);
			cells[n++].value = fmt_value(v);
		}
		print_row(table, ts, cells, n);
		json_decref(o);
	}
	free(line);
}

/* The type of column col of table, from SCHEMADIR/table; NULL if none. */
static const char *column_type(const char *dir, const char *table, const char *col,
                               char *type, size_t size)
{
	char path[4096], line[1024];
	const char *found = NULL;
	FILE *f;
	snprintf(path, sizeof path, "%s/%s", dir, table);
	if (!(f = fopen(path, "r")))
		return NULL;
	while (!found && fgets(line, sizeof line, f)) {
		char *tab = strchr(line, '\t'), *end;
		if (!tab)
			continue;
		*tab = '\0';
		if (strcasecmp(line, col) != 0)
			continue;
		if ((end = strchr(tab + 1, '\t')))
			*end = '\0';
		snprintf(type, size, "%s", tab + 1);
		found = type;
	}
	fclose(f);
	return found;
}

/* The default of a column of type type, canonical. */
static char *type_default(const char *type)
{
	if (!type)
		return strdup("?no-such-column");
	if (strcmp(type, "double") == 0)
		return strdup("\"NaN\"");
	if (strcmp(type, "string") == 0)
		return strdup("\"\"");
	return strdup("0");
}

/* The series of result i of an InfluxDB answer ({"results":[{"series":
 * [...]}, ...]}, one result per statement); NULL past the last. */
static json_t *influx_series(json_t *root, size_t i)
{
	json_t *res = json_object_get(root, "results");
	json_t *r = json_array_get(res, i);
	if (!res || json_array_size(res) == 0)
		die("influx: no results");
	if (r && json_object_get(r, "error"))
		die(json_string_value(json_object_get(r, "error")));
	if (!r)
		return NULL;
	return json_object_get(r, "series") ? json_object_get(r, "series") : json_array();
}

/* canon influx SCHEMADIR */
static void do_influx(const char *dir)
{
	json_error_t err;
	json_t *root = json_loadf(stdin, 0, &err), *s;
	json_t *series;
	size_t r, i, j, k;
	if (!root)
		die(err.text);
	for (r = 0; (series = influx_series(root, r)); r++)
	json_array_foreach(series, i, s) {
		char table[NAME_MAX_LEN], type[64];
		json_t *cols = json_object_get(s, "columns"), *row;
		map_name(json_string_value(json_object_get(s, "name")), 0, table);
		json_array_foreach(json_object_get(s, "values"), j, row) {
			long long ts = 0;
			int n = 0;
			for (k = 0; k < json_array_size(cols); k++) {
				const char *c = json_string_value(json_array_get(cols, k));
				json_t *v = json_array_get(row, k);
				if (strcmp(c, "time") == 0) {
					ts = (long long)json_integer_value(v);
					continue;
				}
				if (n == COLS_MAX)
					die("too many columns");
				map_name(c, 1, cells[n].name);
				if (json_is_null(v))
					cells[n].value = type_default(
					        column_type(dir, table, cells[n].name, type, sizeof type));
				else
					cells[n].value = fmt_value(v);
				n++;
			}
			print_row(table, ts, cells, n);
		}
	}
	json_decref(root);
}

/* canon fieldkeys */
static void do_fieldkeys(void)
{
	static const char *map[][2] = {{"float", "double"}, {"integer", "int64"},
	                               {"unsigned", "int64"}, {"boolean", "int32"},
	                               {"string", "string"}};
	json_error_t err;
	json_t *root = json_loadf(stdin, 0, &err), *s, *row, *series;
	size_t r, i, j;
	if (!root)
		die(err.text);
	for (r = 0; (series = influx_series(root, r)); r++)
	json_array_foreach(series, i, s) {
		char table[NAME_MAX_LEN], col[NAME_MAX_LEN];
		map_name(json_string_value(json_object_get(s, "name")), 0, table);
		json_array_foreach(json_object_get(s, "values"), j, row) {
			const char *type = json_string_value(json_array_get(row, 1));
			const char *to = "?";
			map_name(json_string_value(json_array_get(row, 0)), 1, col);
			for (size_t m = 0; m < sizeof map / sizeof map[0]; m++)
				if (type && strcmp(type, map[m][0]) == 0)
					to = map[m][1];
			printf("%s\t%s\t%s\n", table, col, to);
		}
	}
	json_decref(root);
}

/* canon prom: {"data":{"result":[{"metric":{...},"values":[[t,"v"],...]}]}} */
static void do_prom(void)
{
	json_error_t err;
	json_t *root = json_loadf(stdin, 0, &err), *s, *pt;
	size_t i, j;
	if (!root)
		die(err.text);
	if (!json_is_string(json_object_get(root, "status")) ||
	    strcmp(json_string_value(json_object_get(root, "status")), "success") != 0)
		die("prom: the query did not succeed");
	json_array_foreach(json_object_get(json_object_get(root, "data"), "result"), i, s) {
		json_t *metric = json_object_get(s, "metric"), *v;
		char table[NAME_MAX_LEN] = "";
		const char *k;
		json_array_foreach(json_object_get(s, "values"), j, pt) {
			double t = json_number_value(json_array_get(pt, 0));
			const char *val = json_string_value(json_array_get(pt, 1));
			int n = 0;
			json_object_foreach(metric, k, v) {
				if (strcmp(k, "__name__") == 0) {
					map_name(json_string_value(v), 0, table);
					continue;
				}
				map_name(k, 1, cells[n].name);
				cells[n++].value = fmt_value(v);
			}
			snprintf(cells[n].name, NAME_MAX_LEN, "value");
			cells[n++].value = fmt_double(strtod(val ? val : "", NULL));
			print_row(table, llround(t * 1000.0) * 1000000LL, cells, n);
		}
	}
	json_decref(root);
}

/* ---- canon qdiff A B ---- */

/* Report the first difference (what, at where) and exit 1. */
static void qd_differ(const char *where, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void qd_differ(const char *where, const char *fmt, ...)
{
	va_list ap;
	printf("differ: %s: ", where);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	exit(1);
}

/* v as compact JSON text, for a message (static buffer, cut short). */
static const char *qd_text(json_t *v)
{
	static char buf[2][256];
	static int k;
	char *t = v ? json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT) : NULL;
	k ^= 1;
	snprintf(buf[k], sizeof buf[k], "%s", t ? t : "(absent)");
	free(t);
	return buf[k];
}

/* Whether two cells are equal (see the head comment). */
static int qd_value_equal(json_t *a, json_t *b)
{
	if (json_is_integer(a) && json_is_integer(b))
		return json_integer_value(a) == json_integer_value(b);
	if (json_is_number(a) && json_is_number(b)) {
		double x = json_number_value(a), y = json_number_value(b);
		return x == y || fabs(x - y) <= QDIFF_REL * fmax(fabs(x), fabs(y));
	}
	return json_equal(a, b);
}

/* qsort: rows by their JSON text. */
static int qd_row_cmp(const void *a, const void *b)
{
	char *x = json_dumps(*(json_t *const *)a, JSON_ENCODE_ANY | JSON_COMPACT);
	char *y = json_dumps(*(json_t *const *)b, JSON_ENCODE_ANY | JSON_COMPACT);
	int c = strcmp(x ? x : "", y ? y : "");
	free(x);
	free(y);
	return c;
}

/* Whether rows x and y are equal, cell for cell; *col receives the
 * first column that differs (-1: their lengths do). */
static int qd_row_equal(json_t *x, json_t *y, long *col)
{
	*col = -1;
	if (json_array_size(x) != json_array_size(y))
		return 0;
	for (size_t k = 0; k < json_array_size(x); k++)
		if (!qd_value_equal(json_array_get(x, k), json_array_get(y, k))) {
			*col = (long)k;
			return 0;
		}
	return 1;
}

/* Whether rows a[0..n) and b[0..n) are equal, in order; *at receives
 * the first that differs. */
static int qd_rows_equal(json_t **a, json_t **b, size_t n, size_t *at, long *col)
{
	for (*at = 0; *at < n; ++*at)
		if (!qd_row_equal(a[*at], b[*at], col))
			return 0;
	return 1;
}

/* Compare rows a[0..n) and b[0..n), at where: equal in order, or else
 * (a run sharing one timestamp) equal once both are sorted. */
static void qd_rows(const char *where, json_t **a, json_t **b, size_t n, json_t *cols)
{
	size_t j;
	long k;
	if (qd_rows_equal(a, b, n, &j, &k))
		return;
	if (n > 1) {
		qsort(a, n, sizeof *a, qd_row_cmp);
		qsort(b, n, sizeof *b, qd_row_cmp);
		if (qd_rows_equal(a, b, n, &j, &k))
			return;
	}
	if (k < 0)
		qd_differ(where, "a row of %zu cells against %zu", json_array_size(a[j]),
		          json_array_size(b[j]));
	qd_differ(where, "column %s: %s against %s",
	          json_string_value(json_array_get(cols, (size_t)k)),
	          qd_text(json_array_get(a[j], (size_t)k)), qd_text(json_array_get(b[j], (size_t)k)));
}

/* Compare the values of two series with the same columns (time at
 * column tcol, or -1); returns the rows. */
static size_t qd_values(const char *where, json_t *va, json_t *vb, json_t *cols, int tcol)
{
	size_t n = json_array_size(va), j, end;
	char at[1100];
	if (n != json_array_size(vb))
		qd_differ(where, "%zu rows against %zu", n, json_array_size(vb));
	for (j = 0; j < n; j = end) {
		json_t *ta = tcol < 0 ? NULL : json_array_get(json_array_get(va, j), (size_t)tcol);
		json_t *tb = tcol < 0 ? NULL : json_array_get(json_array_get(vb, j), (size_t)tcol);
		snprintf(at, sizeof at, "%s, row %zu", where, j);
		if (tcol >= 0 && !(json_is_integer(ta) && json_is_integer(tb) &&
		                   json_integer_value(ta) == json_integer_value(tb)))
			qd_differ(at, "time %s against %s", qd_text(ta), qd_text(tb));
		/* the run of rows sharing this timestamp */
		for (end = j + 1; tcol >= 0 && end < n; end++) {
			json_t *next = json_array_get(json_array_get(va, end), (size_t)tcol);
			if (!json_equal(next, ta))
				break;
		}
		json_t *ra[end - j], *rb[end - j];
		for (size_t k = j; k < end; k++) {
			ra[k - j] = json_array_get(va, k);
			rb[k - j] = json_array_get(vb, k);
		}
		qd_rows(at, ra, rb, end - j, cols);
	}
	return n;
}

/* Compare series a and b (index i of result r); returns their rows. */
static size_t qd_series(size_t r, size_t i, json_t *a, json_t *b)
{
	char where[1024];
	json_t *ta = json_object_get(a, "tags"), *tb = json_object_get(b, "tags");
	json_t *ca = json_object_get(a, "columns"), *cb = json_object_get(b, "columns");
	json_t *empty = json_object();
	int tcol = -1;
	snprintf(where, sizeof where, "result %zu, series %zu (%s", r, i,
	         json_string_value(json_object_get(a, "name")));
	snprintf(where + strlen(where), sizeof where - strlen(where), " %s)",
	         ta ? qd_text(ta) : "{}");
	if (!json_equal(json_object_get(a, "name"), json_object_get(b, "name")))
		qd_differ(where, "name %s against %s", qd_text(json_object_get(a, "name")),
		          qd_text(json_object_get(b, "name")));
	if (!json_equal(ta ? ta : empty, tb ? tb : empty))
		qd_differ(where, "tags %s against %s", qd_text(ta), qd_text(tb));
	if (!json_equal(ca, cb))
		qd_differ(where, "columns %s against %s", qd_text(ca), qd_text(cb));
	json_decref(empty);
	for (size_t k = 0; k < json_array_size(ca); k++)
		if (strcmp(json_string_value(json_array_get(ca, k)) ?: "", "time") == 0)
			tcol = (int)k;
	return qd_values(where, json_object_get(a, "values"), json_object_get(b, "values"), ca,
	                 tcol);
}

/* The answer in file path, or exit 2. */
static json_t *qd_load(const char *path)
{
	json_error_t err;
	json_t *root = json_load_file(path, 0, &err);
	if (!json_is_object(root)) {
		fprintf(stderr, "canon: %s: not a JSON object: %s\n", path, err.text);
		exit(2);
	}
	return root;
}

/* canon qdiff A B */
static void do_qdiff(const char *pa, const char *pb)
{
	json_t *a = qd_load(pa), *b = qd_load(pb), *ra, *rb, *sa, *sb;
	size_t nseries = 0, nrows = 0;
	if (json_object_get(a, "error"))
		printf("error: %s\n", json_string_value(json_object_get(a, "error"))), exit(1);
	if (json_object_get(b, "error"))
		qd_differ("answer", "an error: %s", qd_text(json_object_get(b, "error")));
	ra = json_object_get(a, "results");
	rb = json_object_get(b, "results");
	if (json_array_size(ra) != json_array_size(rb) || !json_is_array(rb))
		qd_differ("results", "%zu results against %s", json_array_size(ra), qd_text(rb));
	for (size_t r = 0; r < json_array_size(ra); r++) {
		json_t *x = json_array_get(ra, r), *y = json_array_get(rb, r), *none = json_array();
		char where[64];
		snprintf(where, sizeof where, "result %zu", r);
		if (json_object_get(x, "error"))
			printf("error: %s\n", json_string_value(json_object_get(x, "error"))), exit(1);
		if (json_object_get(y, "error"))
			qd_differ(where, "an error: %s", qd_text(json_object_get(y, "error")));
		if (!json_equal(json_object_get(x, "statement_id"), json_object_get(y, "statement_id")))
			qd_differ(where, "statement_id %s against %s",
			          qd_text(json_object_get(x, "statement_id")),
			          qd_text(json_object_get(y, "statement_id")));
		sa = json_object_get(x, "series") ? json_object_get(x, "series") : none;
		sb = json_object_get(y, "series") ? json_object_get(y, "series") : none;
		if (json_array_size(sa) != json_array_size(sb))
			qd_differ(where, "%zu series against %zu", json_array_size(sa),
			          json_array_size(sb));
		for (size_t i = 0; i < json_array_size(sa); i++)
			nrows += qd_series(r, i, json_array_get(sa, i), json_array_get(sb, i));
		nseries += json_array_size(sa);
		json_decref(none);
	}
	printf("equal %zu %zu\n", nseries, nrows);
	json_decref(a);
	json_decref(b);
}

static int label_cmp(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* One sample [t, "v"] of a PromQL result whose labels are text. */
static void promql_sample(const char *labels, json_t *pt)
{
	double t = json_number_value(json_array_get(pt, 0));
	const char *val = json_string_value(json_array_get(pt, 1));
	printf("%s\t%lld\t%s\n", labels, llround(t * 1000.0), val ? val : "?");
}

/* canon promql: {"data":{"resultType":...,"result":...}} */
static void do_promql(void)
{
	json_error_t err;
	json_t *root = json_loadf(stdin, 0, &err), *data, *res, *s, *pt, *v;
	const char *k, *type;
	size_t i, j;
	if (!root)
		die(err.text);
	if (!json_is_string(json_object_get(root, "status")) ||
	    strcmp(json_string_value(json_object_get(root, "status")), "success") != 0)
		die("promql: the query did not succeed");
	data = json_object_get(root, "data");
	res = json_object_get(data, "result");
	type = json_string_value(json_object_get(data, "resultType"));
	if (type && strcmp(type, "scalar") == 0) {
		promql_sample("{}", res);
		json_decref(root);
		return;
	}
	json_array_foreach(res, i, s) {
		json_t *metric = json_object_get(s, "metric");
		char *names[COLS_MAX], *text = NULL;
		size_t n = 0, len = 0;
		FILE *f = open_memstream(&text, &len);
		json_object_foreach(metric, k, v) {
			if (n == COLS_MAX)
				die("promql: too many labels");
			if (asprintf(&names[n++], "%s=\"%s\"", k, json_string_value(v)) < 0)
				die("out of memory");
		}
		qsort(names, n, sizeof *names, label_cmp);
		fputc('{', f);
		for (size_t x = 0; x < n; x++) {
			fprintf(f, "%s%s", x ? "," : "", names[x]);
			free(names[x]);
		}
		fputc('}', f);
		fclose(f);
		if (json_object_get(s, "value"))
			promql_sample(text, json_object_get(s, "value"));
		json_array_foreach(json_object_get(s, "values"), j, pt)
			promql_sample(text, pt);
		free(text);
	}
	json_decref(root);
}

int main(int argc, char **argv)
{
	if (argc == 3 && strcmp(argv[1], "tsstore") == 0)
		do_tsstore(argv[2]);
	else if (argc == 3 && strcmp(argv[1], "influx") == 0)
		do_influx(argv[2]);
	else if (argc == 2 && strcmp(argv[1], "fieldkeys") == 0)
		do_fieldkeys();
	else if (argc == 2 && strcmp(argv[1], "prom") == 0)
		do_prom();
	else if (argc == 4 && strcmp(argv[1], "qdiff") == 0)
		do_qdiff(argv[2], argv[3]);
	else if (argc == 2 && strcmp(argv[1], "promql") == 0)
		do_promql();
	else {
		fprintf(stderr, "usage: canon tsstore TABLE | influx SCHEMADIR | fieldkeys | prom | promql | "
		        "qdiff A B\n");
		return 2;
	}
	return fflush(stdout) == 0 ? 0 : 1;
}
