/*
 * diff_support.h -- the part of the SQLite differential tests
 * (test_query_diff.c, test_corrections_diff.c) that both run unchanged:
 * the random stream, TSSTORE_DIFF_* settings and the clock,
 * rows held in memory and their comparison, message text, the SQLite
 * oracle's statements and SQL text, random queries and aggregates with
 * their expected answers computed in SQL, and the checks that run them
 * on both sides.
 *
 * Not a separately compiled support file: the two tests' tables differ
 * (their diff struct, columns, value generators and limits), so this is
 * included by each test, once, after it defines what the code here uses:
 *   - the macros COUNT, SEC, MINUTE, HOUR, DAY, WEEK, DATA_SPAN, MAXCOLS,
 *     MAXKEY, KEYBYTES and SQ_BINDS (the parameters an SQL text holds);
 *   - struct col (name, type, gen) and enum gen (G_* generators);
 *   - typedef diff, with at least: seed, db, t, ro_t, qt, now, sq, ncols, nkey,
 *     tscol, cols, key, ttl, nrows, nreq, what, trace, returned;
 *   - is_int, is_bytes, is_numeric, key_name;
 * and it defines the functions declared just below, which the code here
 * calls.  Everything here is static: each test has its own copy.
 */
#ifndef TSSTORE_TESTS_DIFF_SUPPORT_H
#define TSSTORE_TESTS_DIFF_SUPPORT_H

typedef struct rowset rowset;
typedef struct keyval keyval;

/* Defined by the including test. */
static void mismatch(diff *d, const char *fmt, ...);
static void trace(diff *d);
static int pick_row(diff *d, keyval *k);
static ts_value gen_value(diff *d, int c);

/* ---- random numbers, settings, the clock ---- */

/* The random stream: each case seeds rng. */
static uint64_t rng = 1;
static uint64_t rnd(void) { return ts_test_xorshift(&rng); }
static uint64_t below(uint64_t n) { return n ? rnd() % n : 0; }
static int chance(int percent) { return below(100) < (uint64_t)percent; }

/* The integer in environment variable name, or dflt. */
static int env_int(const char *name, int dflt)
{
	const char *s = getenv(name);
	return s && *s ? atoi(s) : dflt;
}

/* The tables' clock (ts_options.clock): the int64_t at arg. */
static int64_t diff_clock(void *arg)
{
	return __atomic_load_n((int64_t *)arg, __ATOMIC_RELAXED);
}

/* ---- the case's state ---- */

/* A cmocka setup: a zeroed diff as the state. */
static int setup(void **state)
{
	diff *d = calloc(1, sizeof *d);
	assert_non_null(d);
	*state = d;
	return 0;
}

/* Close the writer's table and database. */
static void close_db(diff *d)
{
	ts_table_close(d->t);
	d->t = NULL;
	assert_int_equal(ts_close(d->db), 0);
	d->db = NULL;
}

/* ---- rows held in memory: both sides' answers ---- */

/* Rows of w values.  String and blob bytes live in bytes; a value's
 * v.s.ptr holds the offset there (vbytes resolves it), so the arrays can
 * grow while rows are added. */
struct rowset {
	int w;
	size_t n, cap;
	ts_value *v;
	unsigned char *bytes;
	size_t blen, bcap;
};

static void rs_init(rowset *rs, int w)
{
	memset(rs, 0, sizeof *rs);
	rs->w = w;
}

static void rs_free(rowset *rs)
{
	free(rs->v);
	free(rs->bytes);
	rs_init(rs, rs->w);
}

static ts_value *rs_row(const rowset *rs, size_t i) { return rs->v + i * (size_t)rs->w; }

static size_t rs_add_row(rowset *rs)
{
	if (rs->n == rs->cap) {
		rs->cap = rs->cap ? 2 * rs->cap : 64;
		rs->v = realloc(rs->v, rs->cap * (size_t)rs->w * sizeof *rs->v);
		assert_non_null(rs->v);
	}
	memset(rs_row(rs, rs->n), 0, (size_t)rs->w * sizeof *rs->v);
	return rs->n++;
}

/* Value c of row r becomes v (whose pointer, if any, is real). */
static void rs_put(rowset *rs, size_t r, int c, const ts_value *v)
{
	ts_value x = *v;
	if (is_bytes(x.type)) {
		size_t n = x.v.s.len;
		if (rs->blen + n > rs->bcap) {
			rs->bcap = 2 * (rs->blen + n) + 256;
			rs->bytes = realloc(rs->bytes, rs->bcap);
			assert_non_null(rs->bytes);
		}
		if (n)
			memcpy(rs->bytes + rs->blen, x.v.s.ptr, n);
		x.v.s.ptr = (const void *)(uintptr_t)rs->blen;
		rs->blen += n;
	}
	rs_row(rs, r)[c] = x;
}

/* The bytes of a string or blob value: in rs, or real when rs is NULL. */
static const unsigned char *vbytes(const rowset *rs, const ts_value *v)
{
	if (v->v.s.len == 0)
		return (const unsigned char *)"";
	return rs ? rs->bytes + (uintptr_t)v->v.s.ptr : v->v.s.ptr;
}

/* A value of rs with its pointer made real. */
static ts_value rs_value(const rowset *rs, const ts_value *v)
{
	ts_value x = *v;
	if (is_bytes(x.type))
		x.v.s.ptr = vbytes(rs, v);
	return x;
}

static int value_eq(const rowset *ra, const ts_value *a, const rowset *rb, const ts_value *b,
                    int approx)
{
	if (a->type != b->type)
		return 0;
	switch (a->type) {
	case TS_DOUBLE:
		if (a->v.d == b->v.d)
			return 1;
		return approx && fabs(a->v.d - b->v.d) <= 1e-9 * fmax(fabs(a->v.d), fabs(b->v.d));
	case TS_STRING:
	case TS_BLOB:
		return a->v.s.len == b->v.s.len &&
		       memcmp(vbytes(ra, a), vbytes(rb, b), a->v.s.len) == 0;
	case TS_NONE:
		return 1;
	default:
		return a->v.i == b->v.i;
	}
}

/* Whether a and b hold the same rows (exactly, a's width). */
static int same_rows(const rowset *a, const rowset *b)
{
	if (a->n != b->n)
		return 0;
	for (size_t i = 0; i < a->n; i++)
		for (int c = 0; c < a->w; c++)
			if (!value_eq(a, rs_row(a, i) + c, b, rs_row(b, i) + c, 0))
				return 0;
	return 1;
}

/* ---- text for messages ---- */

typedef struct text {
	char *p;
	size_t size, n;
} text;

__attribute__((format(printf, 2, 3)))
static void tx_add(text *t, const char *fmt, ...)
{
	va_list ap;
	if (t->n + 1 >= t->size)
		return;
	va_start(ap, fmt);
	int k = vsnprintf(t->p + t->n, t->size - t->n, fmt, ap);
	va_end(ap);
	if (k > 0)
		t->n = t->n + (size_t)k < t->size ? t->n + (size_t)k : t->size - 1;
}

/* v as the C expression that makes it: ts_int32(5), ts_blob("\000\377", 2). */
static void tx_value(text *t, const rowset *rs, const ts_value *v)
{
	switch (v->type) {
	case TS_NONE: tx_add(t, "ts_none()"); return;
	case TS_INT32: tx_add(t, "ts_int32(%" PRId64 ")", v->v.i); return;
	case TS_INT64: tx_add(t, "ts_int64(%" PRId64 ")", v->v.i); return;
	case TS_TIMESTAMP: tx_add(t, "ts_timestamp(%" PRId64 ")", v->v.i); return;
	case TS_DOUBLE: tx_add(t, "ts_double(%.17g)", v->v.d); return;
	case TS_STRING:
	case TS_BLOB: break;
	default: tx_add(t, "<type %d>", (int)v->type); return;
	}
	const unsigned char *p = vbytes(rs, v);
	tx_add(t, "%s(\"", v->type == TS_STRING ? "ts_stringn" : "ts_blob");
	for (size_t i = 0; i < v->v.s.len && i < 64; i++)
		if (p[i] >= 0x20 && p[i] < 0x7f && p[i] != '"' && p[i] != '\\')
			tx_add(t, "%c", p[i]);
		else
			tx_add(t, "\\%03o", p[i]);
	tx_add(t, "\", %zu)", v->v.s.len);
}

static void tx_values(text *t, const rowset *rs, const ts_value *v, int n)
{
	tx_add(t, "{");
	for (int i = 0; i < n; i++) {
		tx_add(t, "%s", i ? ", " : "");
		tx_value(t, rs, &v[i]);
	}
	tx_add(t, "}");
}

static text what_text(diff *d)
{
	text t = {d->what, sizeof d->what, 0};
	d->what[0] = '\0';
	return t;
}

/* got must equal want's rows [off, off + n), compared on got's width;
 * approx (may be NULL) marks the values compared to a relative 1e-9. */
static void expect_rows(diff *d, const char *what, const rowset *got, const rowset *want,
                        size_t off, size_t n, const int *approx)
{
	size_t i = 0;
	int c = 0, bad = got->n != n;
	for (; i < got->n && i < n && !bad; i++)
		for (c = 0; c < got->w && !bad; c++)
			bad = !value_eq(got, rs_row(got, i) + c, want, rs_row(want, off + i) + c,
			                approx && approx[c]);
	if (!bad)
		return;
	if (i > 0 && got->n == n)
		i--; /* the loops moved past the row that differs */
	char buf[4096];
	text t = {buf, sizeof buf, 0};
	tx_add(&t, "%s: got %zu rows, want %zu; first difference at row %zu", what, got->n, n, i);
	if (i > 0) {
		tx_add(&t, "\n    both row %zu: ", i - 1);
		tx_values(&t, got, rs_row(got, i - 1), got->w);
	}
	tx_add(&t, "\n    got  row %zu: ", i);
	if (i < got->n)
		tx_values(&t, got, rs_row(got, i), got->w);
	else
		tx_add(&t, "(none)");
	tx_add(&t, "\n    want row %zu: ", i);
	if (i < n)
		tx_values(&t, want, rs_row(want, off + i), got->w);
	else
		tx_add(&t, "(none)");
	mismatch(d, "%s", buf);
}

/* ---- SQLite ---- */

static void sql_exec(diff *d, const char *sql)
{
	char *err = NULL;
	if (sqlite3_exec(d->sq, sql, NULL, NULL, &err) != SQLITE_OK)
		fail_msg("sqlite: %s: %s", sql, err ? err : "?");
}

static sqlite3_stmt *sql_prepare(diff *d, const char *sql)
{
	sqlite3_stmt *st = NULL;
	if (sqlite3_prepare_v2(d->sq, sql, -1, &st, NULL) != SQLITE_OK)
		fail_msg("sqlite: %s: %s", sql, sqlite3_errmsg(d->sq));
	return st;
}

static void sql_bind(diff *d, sqlite3_stmt *st, int i, const ts_value *v)
{
	int rc;
	switch (v->type) {
	case TS_DOUBLE:
		rc = sqlite3_bind_double(st, i, v->v.d);
		break;
	case TS_STRING:
		rc = sqlite3_bind_text(st, i, (const char *)vbytes(NULL, v), (int)v->v.s.len,
		                       SQLITE_TRANSIENT);
		break;
	case TS_BLOB:
		rc = sqlite3_bind_blob(st, i, vbytes(NULL, v), (int)v->v.s.len, SQLITE_TRANSIENT);
		break;
	default:
		rc = sqlite3_bind_int64(st, i, v->v.i);
		break;
	}
	if (rc != SQLITE_OK)
		fail_msg("sqlite bind: %s", sqlite3_errmsg(d->sq));
}

/* Column i of the current row of st, as a value of type into rs. */
static void sql_column(diff *d, sqlite3_stmt *st, int i, ts_type type, rowset *rs, size_t r)
{
	int have = sqlite3_column_type(st, i), want;
	ts_value v;
	v.type = type;
	switch (type) {
	case TS_DOUBLE:
		want = SQLITE_FLOAT;
		v.v.d = sqlite3_column_double(st, i);
		break;
	case TS_STRING:
	case TS_BLOB:
		want = type == TS_STRING ? SQLITE_TEXT : SQLITE_BLOB;
		v.v.s.ptr = sqlite3_column_blob(st, i);
		v.v.s.len = (size_t)sqlite3_column_bytes(st, i);
		break;
	default:
		want = SQLITE_INTEGER;
		v.v.i = sqlite3_column_int64(st, i);
		break;
	}
	if (have != want) /* a bug of this test, not of tsstore */
		fail_msg("oracle: column %d of \"%s\" has SQLite type %d, want %d", i,
		         sqlite3_sql(st), have, want);
	rs_put(rs, r, i, &v);
	(void)d;
}

static const char *sql_type(ts_type t)
{
	switch (t) {
	case TS_DOUBLE: return "REAL";
	case TS_STRING: return "TEXT";
	case TS_BLOB: return "BLOB";
	default: return "INT"; /* not INTEGER: PRIMARY KEY (ts) must not alias rowid */
	}
}

/* An SQL text with its parameters. */
typedef struct sqlbuf {
	char s[8192];
	text t;
	ts_value bind[SQ_BINDS];
	int nbind;
} sqlbuf;

static void sq_init(sqlbuf *b)
{
	b->t = (text){b->s, sizeof b->s, 0};
	b->s[0] = '\0';
	b->nbind = 0;
}

static void sq_param(sqlbuf *b, const ts_value *v)
{
	assert_true(b->nbind < (int)COUNT(b->bind));
	b->bind[b->nbind++] = *v;
	tx_add(&b->t, "?");
}

/* Run b; its rows, with the given types, go to out (w columns). */
static void sql_rows(diff *d, const sqlbuf *b, const ts_type *types, int w, rowset *out)
{
	int rc;
	assert_true(b->t.n + 1 < b->t.size);
	sqlite3_stmt *st = sql_prepare(d, b->s);
	for (int i = 0; i < b->nbind; i++)
		sql_bind(d, st, i + 1, &b->bind[i]);
	rs_init(out, w);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		size_t r = rs_add_row(out);
		for (int c = 0; c < w; c++)
			sql_column(d, st, c, types[c], out, r);
	}
	if (rc != SQLITE_DONE)
		fail_msg("sqlite: %s: %s", b->s, sqlite3_errmsg(d->sq));
	sqlite3_finalize(st);
}

static void sq_names(sqlbuf *b, const diff *d, int from, int to, const char *suffix)
{
	for (int k = from; k < to; k++)
		tx_add(&b->t, "%s\"%s\"%s", k > from ? ", " : "", key_name(d, k), suffix);
}

/* AND (k0, ..., kn-1) op (v0, ..., vn-1) */
static void sq_keycmp(sqlbuf *b, const diff *d, const ts_value *v, int n, const char *op)
{
	tx_add(&b->t, " AND (");
	sq_names(b, d, 0, n, "");
	tx_add(&b->t, ") %s (", op);
	for (int k = 0; k < n; k++) {
		tx_add(&b->t, "%s", k ? ", " : "");
		sq_param(b, &v[k]);
	}
	tx_add(&b->t, ")");
}

static void sq_prefix(sqlbuf *b, const diff *d, const ts_value *v, int n)
{
	for (int k = 0; k < n; k++) {
		tx_add(&b->t, " AND \"%s\" = ", key_name(d, k));
		sq_param(b, &v[k]);
	}
}

/* Rows past the TTL are never returned. */
static void sq_ttl(sqlbuf *b, const diff *d)
{
	if (d->ttl > 0) {
		ts_value cut = ts_int64(d->now - d->ttl);
		tx_add(&b->t, " AND \"ts\" >= ");
		sq_param(b, &cut);
	}
}

static void sq_time(sqlbuf *b, const char *op, int64_t ts)
{
	ts_value v = ts_int64(ts);
	tx_add(&b->t, " AND \"ts\" %s ", op);
	sq_param(b, &v);
}

static void create_sql(diff *d)
{
	sqlbuf b;
	sq_init(&b);
	tx_add(&b.t, "CREATE TABLE t (");
	for (int c = 0; c < d->ncols; c++)
		tx_add(&b.t, "\"%s\" %s, ", d->cols[c].name, sql_type(d->cols[c].type));
	tx_add(&b.t, "PRIMARY KEY (");
	sq_names(&b, d, 0, d->nkey, "");
	tx_add(&b.t, "))");
	sql_exec(d, b.s);
	sql_exec(d, "CREATE INDEX t_ts ON t (\"ts\")");
}

/* ---- keys held by requests ---- */

/* Up to nkey values whose bytes live inside the struct (do not copy it). */
struct keyval {
	int n;
	ts_value v[MAXKEY];
	unsigned char b[MAXKEY][KEYBYTES];
};

static void kv_set(keyval *k, int i, const ts_value *v)
{
	k->v[i] = *v;
	if (is_bytes(v->type)) {
		assert_true(v->v.s.len <= KEYBYTES);
		memcpy(k->b[i], vbytes(NULL, v), v->v.s.len);
		k->v[i].v.s.ptr = k->b[i];
	}
}

/* ---- ts_query ---- */

enum paging { ALL_ROWS, ONE_PAGE, PAGES };

/* A random query and the values it points at (do not copy it). */
typedef struct qgen {
	ts_query q;
	keyval prefix, lower, upper, after;
	int cols[MAXCOLS];
	enum paging paging;
} qgen;

/* A key value near those stored: a stored row's, a random one, or one
 * nudged by the smallest step. */
static void gen_key(diff *d, keyval *k)
{
	if (!(chance(70) && pick_row(d, k))) {
		k->n = d->nkey;
		for (int i = 0; i < d->nkey; i++) {
			ts_value v = gen_value(d, d->key[i]);
			kv_set(k, i, &v);
		}
	}
	if (chance(15)) {
		ts_value *v = &k->v[below((uint64_t)d->nkey)];
		if (v->type == TS_DOUBLE)
			v->v.d += chance(50) ? 0.125 : -0.125;
		else if (v->type == TS_TIMESTAMP || (v->type == TS_INT64 && v->v.i > INT64_MIN &&
		                                     v->v.i < INT64_MAX))
			v->v.i += chance(50) ? 1 : -1;
		else if (v->type == TS_INT32 && v->v.i > INT32_MIN && v->v.i < INT32_MAX)
			v->v.i += chance(50) ? 1 : -1;
	}
}

/* A time for a time range: a stored row's ts, or any in the data. */
static int64_t gen_query_ts(diff *d)
{
	keyval k;
	if (chance(40) && pick_row(d, &k))
		return k.v[d->nkey - 1].v.i + (chance(70) ? 0 : chance(50) ? 1 : -1);
	int64_t lo = NOW0 - DATA_SPAN - HOUR, hi = d->now + 4 * HOUR;
	int64_t ts = lo + (int64_t)below((uint64_t)(hi - lo));
	return chance(30) ? ts - ts % HOUR : ts;
}

static const int64_t spans[] = {1, SEC, MINUTE, HOUR, 4 * HOUR, DAY, 3 * DAY};

static void gen_time_range(diff *d, ts_query *q)
{
	q->has_from = chance(45);
	q->has_to = chance(45);
	if (q->has_from)
		q->from = chance(3) ? INT64_MIN : gen_query_ts(d);
	if (q->has_to) {
		q->to = q->has_from && q->from > INT64_MIN && chance(70)
		            ? q->from + spans[below(COUNT(spans))]
		            : chance(3) ? INT64_MAX : gen_query_ts(d);
		q->to_inclusive = chance(30);
	}
}

static void gen_projection(diff *d, qgen *g)
{
	int n = 1 + (int)below((uint64_t)d->ncols), all[MAXCOLS];
	for (int c = 0; c < d->ncols; c++)
		all[c] = c;
	for (int i = 0; i < n; i++) { /* the first n of a shuffle */
		int j = i + (int)below((uint64_t)(d->ncols - i)), x = all[i];
		all[i] = all[j];
		all[j] = x;
		g->cols[i] = all[i];
	}
	g->q.columns = g->cols;
	g->q.ncolumns = n;
}

static void gen_query(diff *d, qgen *g)
{
	memset(g, 0, sizeof *g);
	ts_query *q = &g->q;
	if (chance(55)) {
		gen_key(d, &g->prefix);
		q->prefix = g->prefix.v;
		q->nprefix = chance(10) ? d->nkey : 1 + (int)below((uint64_t)d->nkey);
	}
	if (chance(35)) {
		gen_key(d, &g->lower);
		q->lower = g->lower.v;
		q->nlower = 1 + (int)below((uint64_t)d->nkey);
		q->lower_exclusive = chance(50);
	}
	if (chance(35)) {
		gen_key(d, &g->upper);
		q->upper = g->upper.v;
		q->nupper = 1 + (int)below((uint64_t)d->nkey);
		q->upper_exclusive = chance(50);
	}
	gen_time_range(d, q);
	q->desc = chance(40);
	if (chance(40))
		gen_projection(d, g);
	if (chance(8)) {
		gen_key(d, &g->after);
		q->after = g->after.v;
		q->nafter = d->nkey;
	}
	int p = (int)below(100);
	g->paging = p < 25 ? PAGES : p < 35 ? ONE_PAGE : ALL_ROWS;
}

static void tx_bound(text *t, const char *name, const ts_value *v, int n, const char *op)
{
	tx_add(t, " %s%s", name, op);
	tx_values(t, NULL, v, n);
}

static void describe_query(diff *d, const ts_query *q, const char *tag)
{
	text t = what_text(d);
	tx_add(&t, "ts_query%s {", tag);
	if (q->nprefix)
		tx_bound(&t, "prefix", q->prefix, q->nprefix, "=");
	if (q->lower)
		tx_bound(&t, "lower", q->lower, q->nlower, q->lower_exclusive ? ">" : ">=");
	if (q->upper)
		tx_bound(&t, "upper", q->upper, q->nupper, q->upper_exclusive ? "<" : "<=");
	if (q->has_from)
		tx_add(&t, " from=%" PRId64, q->from);
	if (q->has_to)
		tx_add(&t, " to%s%" PRId64, q->to_inclusive ? "<=" : "<", q->to);
	if (q->desc)
		tx_add(&t, " desc");
	if (q->limit)
		tx_add(&t, " limit=%" PRIu64, q->limit);
	if (q->columns) {
		tx_add(&t, " columns={");
		for (int i = 0; i < q->ncolumns; i++)
			tx_add(&t, "%s%d", i ? ", " : "", q->columns[i]);
		tx_add(&t, "}");
	}
	if (q->after)
		tx_bound(&t, "after", q->after, q->nafter, "=");
	tx_add(&t, " }");
}

static int projected(const diff *d, const ts_query *q, int i)
{
	return q->columns ? q->columns[i] : i;
}

/* SQLite's answer to q, ignoring its limit: the projected columns, then
 * the full key of each row. */
static void oracle_query(diff *d, const ts_query *q, rowset *out)
{
	int nproj = q->columns ? q->ncolumns : d->ncols;
	ts_type types[2 * MAXCOLS];
	sqlbuf b;
	sq_init(&b);
	tx_add(&b.t, "SELECT ");
	for (int i = 0; i < nproj; i++) {
		types[i] = d->cols[projected(d, q, i)].type;
		tx_add(&b.t, "\"%s\", ", d->cols[projected(d, q, i)].name);
	}
	for (int k = 0; k < d->nkey; k++)
		types[nproj + k] = d->cols[d->key[k]].type;
	sq_names(&b, d, 0, d->nkey, "");
	tx_add(&b.t, " FROM t WHERE 1");
	sq_prefix(&b, d, q->prefix, q->nprefix);
	if (q->lower)
		sq_keycmp(&b, d, q->lower, q->nlower, q->lower_exclusive ? ">" : ">=");
	if (q->upper)
		sq_keycmp(&b, d, q->upper, q->nupper, q->upper_exclusive ? "<" : "<=");
	if (q->has_from)
		sq_time(&b, ">=", q->from);
	if (q->has_to)
		sq_time(&b, q->to_inclusive ? "<=" : "<", q->to);
	sq_ttl(&b, d);
	if (q->after)
		sq_keycmp(&b, d, q->after, q->nafter, q->desc ? "<" : ">");
	tx_add(&b.t, " ORDER BY ");
	sq_names(&b, d, 0, d->nkey, q->desc ? " DESC" : "");
	sql_rows(d, &b, types, nproj + d->nkey, out);
}

/* Every row of cur into rs (rs->w values each). */
static void collect(diff *d, ts_cursor *cur, rowset *rs)
{
	const ts_value *row;
	int n;
	for (;;) {
		int rc = ts_cursor_next(cur, &row, &n);
		if (rc < 0)
			mismatch(d, "ts_cursor_next returned %s: %s", ts_errname(rc), ts_errmsg(NULL));
		if (!row) {
			if (ts_cursor_next(cur, &row, &n) != 0 || row)
				mismatch(d, "ts_cursor_next after the end did not stay at the end");
			return;
		}
		if (n != rs->w)
			mismatch(d, "row %zu has %d values, want %d", rs->n, n, rs->w);
		size_t r = rs_add_row(rs);
		for (int c = 0; c < n; c++)
			rs_put(rs, r, c, &row[c]);
	}
}

static ts_cursor *open_query(diff *d, const ts_query *q)
{
	ts_cursor *cur = NULL;
	int rc = ts_query_open(d->qt, q, &cur);
	if (rc < 0)
		mismatch(d, "ts_query_open returned %s: %s", ts_errname(rc), ts_errmsg(NULL));
	return cur;
}

/* The resume key of cur after it returned the rows of want up to (not
 * including) row end: that of row end - 1, or TS_ENOENT when end is 0.
 * It goes to *k. */
static void check_resume(diff *d, ts_cursor *cur, const rowset *want, int nproj, size_t end,
                         keyval *k)
{
	const ts_value *key = NULL;
	int n = -1, rc = ts_cursor_resume(cur, &key, &n);
	if (end == 0) {
		if (rc != TS_ENOENT)
			mismatch(d, "ts_cursor_resume with no row returned gave %s, want ENOENT",
			         ts_errname(rc));
		return;
	}
	if (rc != 0 || n != d->nkey)
		mismatch(d, "ts_cursor_resume returned %s with %d values", ts_errname(rc), n);
	const ts_value *w = rs_row(want, end - 1) + nproj;
	for (int i = 0; i < n; i++)
		if (!value_eq(NULL, &key[i], want, &w[i], 0)) {
			char buf[1024];
			text t = {buf, sizeof buf, 0};
			tx_add(&t, "ts_cursor_resume after row %zu: got ", end - 1);
			tx_values(&t, NULL, key, n);
			tx_add(&t, ", want ");
			tx_values(&t, want, w, n);
			mismatch(d, "%s", buf);
		}
	k->n = n;
	for (int i = 0; i < n; i++)
		kv_set(k, i, &key[i]);
}

/* The limit for a paged query: a few pages, sometimes ending exactly at
 * the end of the rows. */
static uint64_t pick_limit(const qgen *g, size_t n)
{
	if (g->paging == ONE_PAGE && n > 0 && chance(25))
		return n;
	if (g->paging == ONE_PAGE && chance(5))
		return UINT64_MAX;
	if (g->paging == ONE_PAGE)
		return 1 + below(n + 3);
	uint64_t pages = 1 + below(10);
	return n / pages + 1 + below(3);
}

static void run_query(diff *d, qgen *g)
{
	ts_query q = g->q;
	int nproj = q.columns ? q.ncolumns : d->ncols;
	keyval after[2];
	rowset want;
	describe_query(d, &q, "");
	trace(d);
	oracle_query(d, &q, &want);
	q.limit = g->paging == ALL_ROWS ? 0 : pick_limit(g, want.n);
	size_t off = 0;
	for (int page = 0;; page++) {
		rowset got;
		rs_init(&got, nproj);
		describe_query(d, &q, page ? " (a later page)" : "");
		ts_cursor *cur = open_query(d, &q);
		collect(d, cur, &got);
		size_t left = want.n - off, expect = q.limit && q.limit < left ? q.limit : left;
		expect_rows(d, "ts_query", &got, &want, off, expect, NULL);
		int more = ts_cursor_more(cur), want_more = expect < left;
		if (more != want_more)
			mismatch(d, "ts_cursor_more is %d after %zu of %zu rows, want %d", more,
			         off + expect, want.n, want_more);
		check_resume(d, cur, &want, nproj, off + expect, &after[page % 2]);
		ts_cursor_close(cur);
		if (d->qt == d->t)
			d->returned += (int64_t)got.n;
		off += got.n;
		rs_free(&got);
		if (!more || g->paging != PAGES)
			break;
		assert_true(page <= (int)want.n);
		q.after = after[page % 2].v;
		q.nafter = d->nkey;
	}
	rs_free(&want);
}

/* ---- ts_latest_open ---- */

static void run_latest(diff *d)
{
	keyval k;
	int n = chance(25) ? 0 : 1 + (int)below((uint64_t)d->nkey);
	ts_type types[MAXCOLS];
	rowset want, got;
	sqlbuf b;
	gen_key(d, &k);
	if (n == d->nkey && chance(50))
		n--;
	text t = what_text(d);
	tx_bound(&t, "ts_latest_open prefix", k.v, n, "=");
	trace(d);
	sq_init(&b);
	tx_add(&b.t, "SELECT ");
	for (int c = 0; c < d->ncols; c++) {
		types[c] = d->cols[c].type;
		tx_add(&b.t, "%s\"%s\"", c ? ", " : "", d->cols[c].name);
	}
	tx_add(&b.t, " FROM t WHERE 1");
	sq_prefix(&b, d, k.v, n);
	sq_ttl(&b, d);
	tx_add(&b.t, " ORDER BY \"ts\" DESC, ");
	sq_names(&b, d, 0, d->nkey, " DESC");
	tx_add(&b.t, " LIMIT 1");
	sql_rows(d, &b, types, d->ncols, &want);
	ts_cursor *cur = NULL;
	int rc = ts_latest_open(d->qt, n ? k.v : NULL, n, &cur);
	if (rc < 0)
		mismatch(d, "ts_latest_open returned %s: %s", ts_errname(rc), ts_errmsg(NULL));
	rs_init(&got, d->ncols);
	collect(d, cur, &got);
	ts_cursor_close(cur);
	if (d->qt == d->ro_t && !same_rows(&got, &want)) {
		/* say whether the writer's handle answers right */
		rowset w;
		ts_cursor *wc = NULL;
		rs_init(&w, d->ncols);
		if (ts_latest_open(d->t, n ? k.v : NULL, n, &wc) == 0)
			collect(d, wc, &w);
		ts_cursor_close(wc);
		tx_add(&t, same_rows(&w, &want) ? " (the writer's handle answers right)"
		                                : " (the writer's handle is wrong too)");
		rs_free(&w);
	}
	expect_rows(d, "ts_latest_open", &got, &want, 0, want.n, NULL);
	rs_free(&got);
	rs_free(&want);
}

/* ---- ts_aggregate_open ---- */

typedef struct agen {
	ts_aggregate a;
	keyval prefix;
	ts_aggspec specs[6];
} agen;

static const int64_t everies[] = {1, 1000, SEC, 7 * SEC, MINUTE, 7 * MINUTE, HOUR,
                                  90 * MINUTE, 4 * HOUR, DAY, WEEK, 30 * DAY,
                                  INT64_C(1000000000000000000), INT64_C(1) << 62, INT64_MAX};
static const int64_t broad_everies[] = {HOUR, 4 * HOUR, DAY, WEEK, 30 * DAY};
static const int64_t agg_spans[] = {MINUTE, HOUR, 6 * HOUR, DAY, 3 * DAY, 9 * DAY};

/* Sums and means of the ts key and of int64 keys would overflow. */
static int summable(const diff *d, int c)
{
	return d->cols[c].gen != G_TS && d->cols[c].gen != G_KEY64;
}

static void gen_aggregate(diff *d, agen *g)
{
	int numeric[MAXCOLS], nnum = 0;
	memset(g, 0, sizeof *g);
	for (int c = 0; c < d->ncols; c++)
		if (is_numeric(d->cols[c].type))
			numeric[nnum++] = c;
	if (chance(60)) {
		gen_key(d, &g->prefix);
		g->a.prefix = g->prefix.v;
		g->a.nprefix = 1 + (int)below((uint64_t)d->nkey);
	}
	g->a.group = (int)below((uint64_t)d->nkey);
	/* broad: every row, wide windows and no first or last, so that
	 * whole tablet blocks can be answered from their statistics */
	int broad = chance(30);
	if (broad) {
		g->a.every = broad_everies[below(COUNT(broad_everies))];
		g->a.from = chance(20) ? INT64_MIN : NOW0 - 2 * WEEK + (int64_t)below(2);
		g->a.to = chance(20) ? INT64_MAX : d->now + 2 * DAY - (int64_t)below(2);
	} else {
		g->a.every = everies[below(COUNT(everies))];
		g->a.from = gen_query_ts(d);
		g->a.to = g->a.from + agg_spans[below(COUNT(agg_spans))] + (int64_t)below(1000);
	}
	if (g->a.every == 1 && g->a.to - g->a.from > 6 * HOUR) /* one window per row */
		g->a.to = g->a.from + 6 * HOUR;
	g->a.nspecs = chance(5) ? 0 : 1 + (int)below(COUNT(g->specs)); /* 0: the windows only */
	for (int i = 0; i < g->a.nspecs; i++) {
		ts_aggspec *s = &g->specs[i];
		s->column = numeric[below((uint64_t)nnum)];
		s->fn = (ts_aggfn)(TS_AGG_COUNT + (int)below(broad ? 5 : 7));
		if ((s->fn == TS_AGG_SUM || s->fn == TS_AGG_MEAN) && !summable(d, s->column))
			s->fn = chance(50) ? TS_AGG_MIN : broad ? TS_AGG_MAX : TS_AGG_LAST;
	}
	g->a.specs = g->specs;
}

static void describe_aggregate(diff *d, const ts_aggregate *a)
{
	text t = what_text(d);
	tx_add(&t, "ts_aggregate {");
	if (a->nprefix)
		tx_bound(&t, "prefix", a->prefix, a->nprefix, "=");
	tx_add(&t, " from=%" PRId64 " to=%" PRId64 " every=%" PRId64 " group=%d specs={", a->from,
	       a->to, a->every, a->group);
	for (int i = 0; i < a->nspecs; i++)
		tx_add(&t, "%s%s(%d \"%s\")", i ? ", " : "", ts_aggfn_name(a->specs[i].fn),
		       a->specs[i].column, d->cols[a->specs[i].column].name);
	tx_add(&t, "} }");
}

static ts_type agg_type(const diff *d, const ts_aggspec *s)
{
	ts_type ct = d->cols[s->column].type;
	switch (s->fn) {
	case TS_AGG_COUNT: return TS_INT64;
	case TS_AGG_SUM: return ct == TS_DOUBLE ? TS_DOUBLE : TS_INT64;
	case TS_AGG_MEAN: return TS_DOUBLE;
	default: return ct;
	}
}

/* first/last as window functions: the value at the least (greatest) ts
 * of the group-window, ties broken by the least (greatest) key. */
static void sq_first_last(sqlbuf *b, const diff *d, const ts_aggregate *a)
{
	for (int i = 0; i < a->nspecs; i++) {
		const ts_aggspec *s = &a->specs[i];
		const char *dir = s->fn == TS_AGG_LAST ? " DESC" : "";
		if (s->fn != TS_AGG_FIRST && s->fn != TS_AGG_LAST)
			continue;
		tx_add(&b->t, ", first_value(\"%s\") OVER (PARTITION BY ", d->cols[s->column].name);
		sq_names(b, d, 0, a->group, "");
		tx_add(&b->t, "%sw__ ORDER BY \"ts\"%s%s", a->group ? ", " : "", dir,
		       d->nkey > 1 ? ", " : "");
		sq_names(b, d, 0, d->nkey - 1, dir);
		tx_add(&b->t, ") AS v%d__", i);
	}
}

static void sq_agg_expr(sqlbuf *b, const diff *d, const ts_aggspec *s, int i)
{
	static const char *const fns[] = {"", "count", "sum", "min", "max", "avg"};
	const char *name = d->cols[s->column].name;
	if (s->fn == TS_AGG_FIRST || s->fn == TS_AGG_LAST)
		tx_add(&b->t, ", min(v%d__)", i);
	else
		tx_add(&b->t, ", %s(\"%s\")", fns[s->fn], name);
}

/* The group's key columns, then the window: "a", "b", w__ */
static void sq_group(sqlbuf *b, const diff *d, int group)
{
	sq_names(b, d, 0, group, "");
	tx_add(&b->t, "%sw__", group ? ", " : "");
}

static void oracle_aggregate(diff *d, const ts_aggregate *a, rowset *out, int *approx)
{
	ts_type types[MAXKEY + 1 + COUNT(((agen *)0)->specs)];
	int w = a->group + 1 + a->nspecs;
	int64_t e = a->every;
	sqlbuf b;
	for (int k = 0; k < a->group; k++)
		types[k] = d->cols[d->key[k]].type;
	types[a->group] = TS_TIMESTAMP;
	memset(approx, 0, (size_t)w * sizeof *approx);
	for (int i = 0; i < a->nspecs; i++) {
		types[a->group + 1 + i] = agg_type(d, &a->specs[i]);
		approx[a->group + 1 + i] = types[a->group + 1 + i] == TS_DOUBLE &&
		                           (a->specs[i].fn == TS_AGG_SUM || a->specs[i].fn == TS_AGG_MEAN);
	}
	sq_init(&b);
	tx_add(&b.t, "SELECT ");
	sq_group(&b, d, a->group);
	for (int i = 0; i < a->nspecs; i++)
		sq_agg_expr(&b, d, &a->specs[i], i);
	tx_add(&b.t, " FROM (SELECT *");
	sq_first_last(&b, d, a);
	/* floor(ts / every) * every: every ts of the test is positive */
	tx_add(&b.t, " FROM (SELECT *, \"ts\" - \"ts\" %% %" PRId64 " AS w__ FROM t WHERE 1", e);
	sq_prefix(&b, d, a->prefix, a->nprefix);
	sq_time(&b, ">=", a->from);
	sq_time(&b, "<", a->to);
	sq_ttl(&b, d);
	tx_add(&b.t, ")) GROUP BY ");
	sq_group(&b, d, a->group);
	tx_add(&b.t, " ORDER BY ");
	sq_group(&b, d, a->group);
	sql_rows(d, &b, types, w, out);
}

static void run_aggregate(diff *d)
{
	agen g;
	rowset want, got;
	int approx[MAXKEY + 1 + COUNT(g.specs)];
	gen_aggregate(d, &g);
	describe_aggregate(d, &g.a);
	trace(d);
	oracle_aggregate(d, &g.a, &want, approx);
	ts_cursor *cur = NULL;
	int rc = ts_aggregate_open(d->qt, &g.a, &cur);
	if (rc < 0)
		mismatch(d, "ts_aggregate_open returned %s: %s", ts_errname(rc), ts_errmsg(NULL));
	rs_init(&got, want.w);
	collect(d, cur, &got);
	ts_cursor_close(cur);
	expect_rows(d, "ts_aggregate_open", &got, &want, 0, want.n, approx);
	rs_free(&got);
	rs_free(&want);
}

#endif
