/*
 * vtab.c -- tsstore tables in SQLite: the loadable extension
 * libtsstore_sqlite.so and its virtual-table module "tsstore".
 *
 *     .load libtsstore_sqlite
 *     CREATE VIRTUAL TABLE usage USING tsstore(path='/var/lib/tsstore',
 *                                             table='usage');
 *
 * The virtual table has the tsstore table's columns, declared INTEGER
 * (int32, int64, and timestamp as nanoseconds), REAL, TEXT or BLOB.  It
 * owns nothing: dropping it leaves the tsstore table alone.
 *
 * Reads.  xBestIndex pushes down what ts_query does cheaply: equality on
 * the leading key columns (a prefix), a range on the next key column, a
 * range on ts, and the key order in either direction (ORDER BY on the
 * key is then free, and LIMIT stops the scan early).  The plan is
 * idxStr, a comma-separated list shown by EXPLAIN QUERY PLAN
 * ("prefix=2,lower,upper,from,to,order=desc"; empty for a full scan), and
 * the arguments come in that order.  Every constraint stays checked by
 * SQLite too (omit = 0): a value whose type does not convert exactly to
 * its column is simply not pushed down (the bound is dropped), so a
 * pushed-down plan never changes what a query returns, only what it
 * reads.  Costs: a full scan costs the table's rows, each fixed prefix
 * column divides it by 20, a range by 4, a ts range by 8.
 *
 * Writes.  INSERT: the rows of one SQLite transaction are buffered and
 * stored at xSync as one ts_insert (atomic: a bad row fails the commit
 * and nothing of the transaction is stored).  INSERT OR REPLACE and
 * INSERT OR IGNORE store their rows under the duplicate policy replace
 * or ignore (sqlite3_vtab_on_conflict; ts_insert_policy), the other
 * conflict clauses under the table's own policy; rows of different
 * policies go in separate batches, in statement order.  The database is
 * opened read-write at the first write (the writer lock is then held
 * until the virtual table is disconnected); until then it is open
 * read-only, so queries run beside tsstored.
 *
 * DELETE.  SQLite runs a DELETE as a scan (xBestIndex/xFilter, the same
 * pushdown as a query's) and then hands over the rowid of each row its
 * whole WHERE kept.  tsstore deletes ranges, not rows (ts_delete: a key
 * prefix and bounds x a ts range), so each scan is remembered (struct
 * scan: its ts_query, the rows it gave, whether it ran to its end) and a
 * rowid names its scan and row.  When the transaction commits, a scan
 * whose every row was deleted is one ts_delete of its range: the WHERE
 * was exactly its key and ts bounds.  A scan of which some rows were
 * kept had a WHERE with more in it (a value column, an expression, a
 * bound that could not be pushed down): the commit fails with a message
 * saying so and nothing is deleted -- deleting row by row would write a
 * tombstone per row, and a range taken from the rows seen could take
 * rows inserted since that the WHERE would have kept.  A row inserted
 * into a deleted range between the scan and the commit is deleted too,
 * as by any ts_delete of that range.  UPDATE fails: a row's key cannot
 * change; to change values, INSERT OR REPLACE the row (its key kept).
 * Deletes and inserts of one transaction are applied in statement order
 * (the inserts before a DELETE are stored when its first row is marked,
 * the deletes before an INSERT when it begins), each as its own atomic
 * batch; as no read sees the transaction's pending rows, a DELETE's scan
 * does not either, and does not delete them.
 *
 * socket='ADDRESS' instead of path= goes through tsstored (common/client.c:
 * a unix socket's path, unix:PATH, or tcp:HOST:PORT with the token of
 * token_file=, $TSSTORE_TOKEN or $TSSTORE_TOKEN_FILE): the
 * schema from a schema request, each cursor's query a query request on a
 * connection of its own (a join runs cursors side by side), read a rows
 * line at a time and decoded by column type (common/json.c), and a
 * transaction's rows one insert request.  The plans are the same.
 *
 * Two scalar functions come with the module: tsstore_time('-1h') turns
 * any text form of a timestamp into the nanoseconds a ts column holds
 * (so `WHERE ts >= tsstore_time('now-15m')` is a bound pushed down), and
 * tsstore_time_text(ts) prints one as tsstore does.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3ext.h>
SQLITE_EXTENSION_INIT1

#include <tsstore.h>

#include "client.h"
#include "json.h"
#include "value.h"

/* Rows a pending transaction may buffer before they are stored early
 * (still one batch per ts_insert; a transaction bigger than this is
 * stored in several, each atomic). */
#define PENDING_ROWS_MAX 100000

/* A rowid: the scan that gave the row (struct scan's id) above
 * ROWID_SCAN_SHIFT bits, the row's number in that scan below. */
#define ROWID_SCAN_SHIFT 40
#define ROWID_SCAN_MASK ((INT64_C(1) << 23) - 1)

/* Scans kept after their cursor closed, for a DELETE's rowids that come
 * once its scans are over (SQLite collects them first; an IN list runs
 * a scan per value): past this many, the oldest that no DELETE marked
 * are let go, so reads never grow it.  A DELETE whose WHERE runs more
 * scans than this fails ("no scan of it gave") and deletes nothing. */
#define SCANS_KEPT 1024

/*
 * One scan of the table (an xFilter), remembered for DELETE: its range
 * as a ts_query (the bounds' values in lower/upper, text and blob bytes
 * owned), the rows it gave, whether it reached its end, and how many of
 * its rows were deleted.  Kept while its cursor is open, until the
 * transaction ends when rows of it were deleted, else among the last
 * SCANS_KEPT (and until a write transaction begins).
 */
struct scan {
	struct scan *next;
	int64_t id;
	ts_query q;
	ts_value lower[TS_KEY_COLUMNS_MAX], upper[TS_KEY_COLUMNS_MAX];
	void *owned[TS_KEY_COLUMNS_MAX + 1];
	int nowned;
	uint64_t rows, deleted;
	int eof, open;
};

typedef struct tsv_table {
	sqlite3_vtab base;
	char *path, *name;
	ts_db *db;          /* read-only until the first insert */
	ts_table *t;        /* of db: every query's */
	ts_db *wdb;         /* read-write, opened by the first insert */
	char *socket;       /* through tsstored: its address (db, t, wdb unused) */
	char *token_file;   /* token_file=, or NULL (client_connect) */
	int64_t timeout;    /* of each wait for tsstored, ns (0: none) */
	struct jconn *wconn; /* the inserts' connection, opened by the first */
	ts_schema *schema;  /* the library's, or (socket) one sqlite3_malloc block */
	ts_value *pending;  /* rows of the transaction, ncolumns each */
	size_t npending, cap;
	int pending_policy; /* of the pending rows: TS_ON_DUPLICATE_TABLE or a policy */
	sqlite3 *sdb;       /* for sqlite3_vtab_on_conflict */
	struct scan *scans; /* for DELETE, newest first */
	int nscans;
	int64_t next_scan;
	uint64_t ndeleted;  /* rows deleted by the transaction's DELETEs so far */
} tsv_table;

typedef struct tsv_cursor {
	sqlite3_vtab_cursor base;
	ts_cursor *cur;
	const ts_value *row;
	int n;
	sqlite3_int64 rowid;       /* of the current row: the scan's id, the row's number */
	/* through tsstored */
	struct jconn *conn;     /* this cursor's connection */
	json_t *line;              /* the rows line being read */
	size_t pos;                /* next row of it */
	int done;                  /* the ok line came */
	ts_value *rrow;            /* the current row, decoded (val_free) */
	struct scan *scan;         /* this scan, for DELETE (owned by the table) */
} tsv_cursor;

/* ---- helpers ---- */

static int fail(sqlite3_vtab *v, const char *fmt, const char *a, const char *b)
{
	sqlite3_free(v->zErrMsg);
	v->zErrMsg = sqlite3_mprintf(fmt, a, b);
	return SQLITE_ERROR;
}

static const char *lib_message(int rc)
{
	const char *m = ts_errmsg(NULL);
	return m && *m ? m : ts_strerror(rc);
}

/* The value of "key='value'" (quotes optional), or NULL. */
static char *arg_value(const char *arg, const char *key)
{
	size_t k = strlen(key);
	while (*arg == ' ')
		arg++;
	if (strncmp(arg, key, k) != 0)
		return NULL;
	arg += k;
	while (*arg == ' ')
		arg++;
	if (*arg++ != '=')
		return NULL;
	while (*arg == ' ')
		arg++;
	size_t n = strlen(arg);
	while (n > 0 && arg[n - 1] == ' ')
		n--;
	if (n >= 2 && (arg[0] == '\'' || arg[0] == '"') && arg[n - 1] == arg[0]) {
		arg++;
		n -= 2;
	}
	return sqlite3_mprintf("%.*s", (int)n, arg);
}

static const char *sql_type(ts_type t)
{
	switch (t) {
	case TS_DOUBLE: return "REAL";
	case TS_STRING: return "TEXT";
	case TS_BLOB: return "BLOB";
	default: return "INTEGER";
	}
}

/* ---- connecting ---- */

static void scan_free(struct scan *s)
{
	for (int i = 0; s && i < s->nowned; i++)
		sqlite3_free(s->owned[i]);
	sqlite3_free(s);
}

/* Unlink and free v's scans that no cursor reads and no DELETE needs,
 * after the first keep of them (every: all scans). */
static void scans_prune(tsv_table *v, int keep, int every)
{
	int seen = 0;
	for (struct scan **p = &v->scans; *p;) {
		struct scan *s = *p;
		if (every || (!s->open && s->deleted == 0 && seen++ >= keep)) {
			*p = s->next;
			scan_free(s);
			v->nscans--;
		} else {
			p = &s->next;
		}
	}
}

static void table_free(tsv_table *v)
{
	scans_prune(v, 0, 1);
	for (size_t i = 0; i < v->npending * (size_t)(v->schema ? v->schema->ncolumns : 0); i++)
		if (v->pending[i].type == TS_STRING || v->pending[i].type == TS_BLOB)
			sqlite3_free((void *)v->pending[i].v.s.ptr);
	sqlite3_free(v->pending);
	if (v->socket)
		sqlite3_free(v->schema);
	else
		ts_schema_free(v->schema);
	jconn_close(v->wconn);
	sqlite3_free(v->socket);
	sqlite3_free(v->token_file);
	ts_table_close(v->t);
	ts_close(v->wdb);
	ts_close(v->db);
	sqlite3_free(v->path);
	sqlite3_free(v->name);
	sqlite3_free(v);
}

/* A new connection to the daemon of v (client_connect).  Returns 0, or
 * -1 with why set. */
static int remote_connect(const tsv_table *v, struct jconn **c, char *why, size_t whysz)
{
	return client_connect(v->socket, v->token_file, v->timeout, c, why, whysz);
}

/* {"op":OP,"table":TABLE -- the caller adds the rest and the brace. */
static void begin_request(struct jbuf *b, const char *op, const char *table)
{
	jbuf_puts(b, "{\"op\":");
	jbuf_string(b, op, strlen(op));
	jbuf_puts(b, ",\"table\":");
	jbuf_string(b, table, strlen(table));
}

/* The size of the one block that holds the schema of a schema reply with
 * n columns (cols) and nkey key columns: the ts_schema, its columns, its
 * key indexes and the columns' names. */
static size_t schema_block_size(const json_t *cols, size_t n, size_t nkey)
{
	size_t names = 0;
	for (size_t i = 0; i < n; i++)
		names += strlen(json_string_value(json_object_get(json_array_get(cols, i), "name")) ?: "") + 1;
	return sizeof(ts_schema) + n * sizeof(ts_column) + nkey * sizeof(int) + names;
}

/* A column of a schema reply ({"name":..., "type":...}) into *col, its
 * name copied to *text, which moves past it.  Returns 0 or -1. */
static int reply_column(const json_t *o, ts_column *col, char **text, char *why, size_t whysz)
{
	const char *name, *type;
	/* A name with a NUL in it would be another name here. */
	int bad = json_text(json_object_get(o, "name"), JSON_TEXT_NAME, &name, why, whysz) < 0 ||
	          json_text(json_object_get(o, "type"), JSON_TEXT_NAME, &type, why, whysz) < 0;
	*col = (ts_column){.name = *text, .dflt = ts_none()};
	if (bad || ts_type_parse(type, &col->type) < 0)
		return -1;
	*text += sprintf(*text, "%s", name) + 1;
	return 0;
}

/* The index in col[0..n) of each of the nkey columns key names, into k.
 * Returns 0, or -1 when a name is not a column's. */
static int reply_key(const json_t *key, size_t nkey, const ts_column *col, size_t n, int *k,
                     char *why, size_t whysz)
{
	for (size_t i = 0; i < nkey; i++) {
		const char *name;
		json_text(json_array_get(key, i), JSON_TEXT_NAME, &name, why, whysz);
		k[i] = -1;
		for (size_t j = 0; name && j < n; j++)
			if (strcmp(col[j].name, name) == 0)
				k[i] = (int)j;
		if (k[i] < 0)
			return -1;
	}
	return 0;
}

/* v->schema from a schema reply, in one sqlite3_malloc block (freed with
 * v, also when this fails).  Returns 0, or -1 with why set. */
static int schema_from_reply(tsv_table *v, const json_t *reply, char *why, size_t whysz)
{
	const json_t *cols = json_object_get(reply, "columns"), *key = json_object_get(reply, "key");
	size_t n = json_array_size(cols), nkey = json_array_size(key);
	ts_schema *s = n && nkey ? sqlite3_malloc64(schema_block_size(cols, n, nkey)) : NULL;
	int rc = s ? 0 : -1;
	if (s) {
		ts_column *col = (ts_column *)(s + 1);
		int *k = (int *)(col + n);
		char *text = (char *)(k + nkey);
		for (size_t i = 0; i < n && rc == 0; i++)
			rc = reply_column(json_array_get(cols, i), &col[i], &text, why, whysz);
		if (rc == 0)
			rc = reply_key(key, nkey, col, n, k, why, whysz);
		*s = (ts_schema){.ncolumns = (int)n, .columns = col, .nkey = (int)nkey, .key = k};
		v->schema = s;
	}
	if (rc < 0)
		snprintf(why, whysz, "unexpected schema from tsstored");
	return rc;
}

/* The table's schema from tsstored, into v->schema.  Only names, types
 * and the key are needed here (defaults are the daemon's business).
 * Returns 0 or -1 with why set. */
static int remote_schema(tsv_table *v, char *why, size_t whysz)
{
	struct jconn *c;
	struct jbuf req = {0};
	json_t *reply = NULL;
	int rc = -1;
	if (remote_connect(v, &c, why, whysz) < 0)
		return -1;
	begin_request(&req, "schema", v->name);
	jbuf_putc(&req, '}');
	if (jconn_call(c, &req, NULL, NULL, &reply, why, whysz) == 0)
		rc = schema_from_reply(v, reply, why, whysz);
	json_decref(reply);
	jbuf_free(&req);
	jconn_close(c);
	return rc;
}

/* Connecting, step 1: the arguments of CREATE VIRTUAL TABLE (argv[3..])
 * into v; *timeout receives timeout='s text, for step 2 (sqlite3_free
 * it).  A repeated argument's last value wins.  Returns 0, or -1 with
 * *err set. */
static int connect_args(tsv_table *v, int argc, const char *const *argv, char **timeout,
                        char **err)
{
	for (int i = 3; i < argc; i++) {
		char *s, **to;
		if ((s = arg_value(argv[i], "path")))
			to = &v->path;
		else if ((s = arg_value(argv[i], "table")))
			to = &v->name;
		else if ((s = arg_value(argv[i], "socket")))
			to = &v->socket;
		else if ((s = arg_value(argv[i], "token_file")))
			to = &v->token_file;
		else if ((s = arg_value(argv[i], "timeout")))
			to = timeout;
		else {
			*err = sqlite3_mprintf("tsstore: unknown argument %s (want path='DIR' or socket='ADDRESS', "
			                       "table='NAME', token_file=, timeout=)",
			                       argv[i]);
			return -1;
		}
		sqlite3_free(*to);
		*to = s;
	}
	return 0;
}

/* Step 2: v->timeout from timeout= (or NULL), else $TSSTORE_TIMEOUT,
 * else the default, as tsstore -s.  Returns 0, or -1 with *err set. */
static int connect_timeout(tsv_table *v, const char *timeout, char **err)
{
	const char *t = timeout ? timeout : getenv("TSSTORE_TIMEOUT");
	v->timeout = JCONN_TIMEOUT_DEFAULT;
	if (t && *t && ts_duration_parse(t, &v->timeout) < 0) {
		*err = sqlite3_mprintf("tsstore: %s \"%s\": want a duration (30s, 2m; 0: no limit)",
		                       timeout ? "timeout=" : "$TSSTORE_TIMEOUT", t);
		return -1;
	}
	return 0;
}

/* Step 3: exactly one of path= and socket=, and table=.  Returns 0, or
 * -1 with *err set. */
static int connect_check(const tsv_table *v, char **err)
{
	if ((!v->path && !v->socket) || (v->path && v->socket) || !v->name) {
		*err = sqlite3_mprintf("tsstore: %s (want path='DIR' or socket='ADDRESS', and table='NAME')",
		                       !v->name ? "missing table=" : v->path ? "path= and socket= together"
		                                                             : "missing path=");
		return -1;
	}
	return 0;
}

/* Step 4: the table's schema into v->schema: from tsstored (socket=), or
 * from the database at path=, opened read-only (v->db, v->t).  Returns 0,
 * or -1 with *err set. */
static int connect_schema(tsv_table *v, char **err)
{
	char why[512];
	ts_options o;
	int rc;
	if (v->socket) {
		if (remote_schema(v, why, sizeof why) < 0) {
			*err = sqlite3_mprintf("tsstore: %s", why);
			return -1;
		}
		return 0;
	}
	ts_options_init(&o);
	o.flags = TS_OPEN_READONLY;
	if ((rc = ts_open(v->path, &o, &v->db)) < 0 ||
	    (rc = ts_table_open(v->db, v->name, &v->t)) < 0 ||
	    (rc = ts_table_schema(v->t, &v->schema)) < 0) {
		*err = sqlite3_mprintf("tsstore: %s", lib_message(rc));
		return -1;
	}
	return 0;
}

/* Step 5: declare the virtual table's columns, the schema's, to SQLite.
 * Returns an SQLite code. */
static int declare_columns(sqlite3 *sdb, const tsv_table *v)
{
	sqlite3_str *sql = sqlite3_str_new(sdb);
	sqlite3_str_appendall(sql, "CREATE TABLE x(");
	for (int i = 0; i < v->schema->ncolumns; i++)
		sqlite3_str_appendf(sql, "%s\"%w\" %s", i ? ", " : "", v->schema->columns[i].name,
		                    sql_type(v->schema->columns[i].type));
	sqlite3_str_appendall(sql, ")");
	char *create = sqlite3_str_finish(sql);
	int rc = create ? sqlite3_declare_vtab(sdb, create) : SQLITE_NOMEM;
	sqlite3_free(create);
	return rc;
}

/* xConnect (and xCreate): steps 1 to 5 in turn; the first to fail ends it
 * and v goes with everything it holds. */
static int x_connect(sqlite3 *sdb, void *aux, int argc, const char *const *argv,
                     sqlite3_vtab **out, char **err)
{
	tsv_table *v = sqlite3_malloc(sizeof *v);
	char *timeout = NULL;
	int rc = SQLITE_ERROR;
	(void)aux;
	if (!v)
		return SQLITE_NOMEM;
	memset(v, 0, sizeof *v);
	v->sdb = sdb;
	v->pending_policy = TS_ON_DUPLICATE_TABLE;
	if (connect_args(v, argc, argv, &timeout, err) == 0 &&
	    connect_timeout(v, timeout, err) == 0 && connect_check(v, err) == 0 &&
	    connect_schema(v, err) == 0)
		rc = declare_columns(sdb, v);
	/* INSERT OR REPLACE / OR IGNORE come to xUpdate with their clause
	 * (sqlite3_vtab_on_conflict) */
	if (rc == SQLITE_OK)
		rc = sqlite3_vtab_config(sdb, SQLITE_VTAB_CONSTRAINT_SUPPORT, 1);
	sqlite3_free(timeout);
	if (rc != SQLITE_OK) {
		table_free(v);
		return rc;
	}
	*out = &v->base;
	return SQLITE_OK;
}

static int x_disconnect(sqlite3_vtab *base)
{
	table_free((tsv_table *)base);
	return SQLITE_OK;
}

/* ---- planning ---- */

/* The plan of idxNum: bits of what idxStr lists. */
enum {
	P_LOWER = 1 << 8, P_UPPER = 1 << 9, P_FROM = 1 << 10, P_TO = 1 << 11,
	P_DESC = 1 << 12, P_ORDER = 1 << 13, /* low 8 bits: the prefix length */
	/* the bound of P_LOWER, P_UPPER, P_FROM, P_TO (bit << 6) is strict:
	 * > or <, so that a DELETE's range is its WHERE's exactly */
	P_STRICT_SHIFT = 6,
};

static int is_lower(int op) { return op == SQLITE_INDEX_CONSTRAINT_GT || op == SQLITE_INDEX_CONSTRAINT_GE; }
static int is_upper(int op) { return op == SQLITE_INDEX_CONSTRAINT_LT || op == SQLITE_INDEX_CONSTRAINT_LE; }

/* The index in info of a usable constraint on column col satisfying
 * want (an op, or -1: lower, -2: upper), or -1.  Only constraints that
 * compare with the BINARY collation (the keys' byte order) qualify: under
 * NOCASE or RTRIM, 'EU' = 'eu', which no key range expresses. */
static int find(sqlite3_index_info *info, int col, int want)
{
	for (int i = 0; i < info->nConstraint; i++) {
		const struct sqlite3_index_constraint *c = &info->aConstraint[i];
		if (!c->usable || c->iColumn != col)
			continue;
		const char *coll = sqlite3_vtab_collation(info, i);
		if (coll && sqlite3_stricmp(coll, "BINARY") != 0)
			continue;
		if (want >= 0 ? c->op == want : want == -1 ? is_lower(c->op) : is_upper(c->op))
			return i;
	}
	return -1;
}

/* A plan as xBestIndex builds it, step by step: the next argument's
 * number, the idxNum bits, the prefix length, the estimated rows and
 * idxStr's text. */
struct index_plan {
	int arg, bits, prefix;
	double rows;
	char str[160];
};

/* Append word to the plan's idxStr, after a comma unless it is the first. */
static void plan_word(struct index_plan *p, const char *word)
{
	if (*p->str)
		strcat(p->str, ",");
	strcat(p->str, word);
}

/* Take constraint c (an index in info, or -1: none) as the plan's next
 * argument: set bit, divide the rows by divisor, and name it in idxStr.
 * Returns whether c was taken. */
static int plan_take(sqlite3_index_info *info, int c, struct index_plan *p, int bit,
                     double divisor, const char *word)
{
	if (c < 0)
		return 0;
	info->aConstraintUsage[c].argvIndex = ++p->arg;
	p->bits |= bit;
	if (info->aConstraint[c].op == SQLITE_INDEX_CONSTRAINT_GT ||
	    info->aConstraint[c].op == SQLITE_INDEX_CONSTRAINT_LT)
		p->bits |= bit << P_STRICT_SHIFT;
	p->rows /= divisor;
	plan_word(p, word);
	return 1;
}

/* Step 1: equality on the leading key columns, ts excluded: the prefix. */
static void plan_prefix(sqlite3_index_info *info, const ts_schema *s, struct index_plan *p)
{
	int c;
	while (p->prefix < s->nkey - 1 &&
	       (c = find(info, s->key[p->prefix], SQLITE_INDEX_CONSTRAINT_EQ)) >= 0) {
		info->aConstraintUsage[c].argvIndex = ++p->arg;
		p->prefix++;
		p->rows /= 20;
	}
	if (p->prefix)
		snprintf(p->str, sizeof p->str, "prefix=%d", p->prefix);
}

/* Step 2: a range on the key column after the prefix, when that column
 * is not ts (ts's range is step 3). */
static void plan_key_range(sqlite3_index_info *info, const ts_schema *s, struct index_plan *p)
{
	if (p->prefix >= s->nkey - 1)
		return;
	int next = s->key[p->prefix];
	plan_take(info, find(info, next, -1), p, P_LOWER, 4, "lower");
	plan_take(info, find(info, next, -2), p, P_UPPER, 4, "upper");
}

/* Step 3: a range on ts, the last key column. */
static void plan_ts_range(sqlite3_index_info *info, const ts_schema *s, struct index_plan *p)
{
	int ts_col = s->key[s->nkey - 1];
	plan_take(info, find(info, ts_col, -1), p, P_FROM, 8, "from");
	plan_take(info, find(info, ts_col, -2), p, P_TO, 8, "to");
}

/* Step 4: ORDER BY key columns in key order, all one direction, is the
 * scan's own order; key columns fixed by = may be left out (ORDER BY ts
 * DESC with the rest of the key fixed is the newest row first). */
static void plan_order(sqlite3_index_info *info, const ts_schema *s, struct index_plan *p)
{
	int nkey = s->nkey;
	if (info->nOrderBy <= 0 || info->nOrderBy > nkey)
		return;
	int ok = 1, desc = info->aOrderBy[0].desc, k = 0;
	for (int i = 0; i < info->nOrderBy && ok; i++) {
		while (k < p->prefix && s->key[k] != info->aOrderBy[i].iColumn)
			k++;
		ok = k < nkey && info->aOrderBy[i].iColumn == s->key[k] &&
		     info->aOrderBy[i].desc == desc;
		k++;
	}
	if (!ok)
		return;
	info->orderByConsumed = 1;
	p->bits |= P_ORDER | (desc ? P_DESC : 0);
	plan_word(p, desc ? "order=desc" : "order=asc");
}

/* Step 5: hand the plan to SQLite: every constraint still checked by
 * SQLite (omit = 0), the cost, idxNum and idxStr.  Returns SQLITE_OK or
 * SQLITE_NOMEM. */
static int plan_finish(sqlite3_index_info *info, const struct index_plan *p)
{
	double rows = p->rows < 1 ? 1 : p->rows;
	for (int i = 0; i < info->nConstraint; i++)
		info->aConstraintUsage[i].omit = 0; /* SQLite checks every row again */
	info->estimatedCost = rows + 10;
	info->estimatedRows = (sqlite3_int64)rows;
	info->idxNum = p->bits | p->prefix;
	info->idxStr = sqlite3_mprintf("%s", p->str);
	info->needToFreeIdxStr = 1;
	return info->idxStr ? SQLITE_OK : SQLITE_NOMEM;
}

/* xBestIndex: the plan the file comment describes, built in its order
 * (which is also the order of the arguments xFilter receives). */
static int x_best_index(sqlite3_vtab *base, sqlite3_index_info *info)
{
	const ts_schema *s = ((tsv_table *)base)->schema;
	struct index_plan p = {.rows = 1e6};
	plan_prefix(info, s, &p);
	plan_key_range(info, s, &p);
	plan_ts_range(info, s, &p);
	plan_order(info, s, &p);
	return plan_finish(info, &p);
}

/* ---- reading ---- */

static int x_open(sqlite3_vtab *base, sqlite3_vtab_cursor **out)
{
	tsv_cursor *c = sqlite3_malloc(sizeof *c);
	(void)base;
	if (!c)
		return SQLITE_NOMEM;
	memset(c, 0, sizeof *c);
	*out = &c->base;
	return SQLITE_OK;
}

/* Release the decoded remote row. */
static void free_rrow(tsv_cursor *c, int n)
{
	for (int i = 0; c->rrow && i < n; i++)
		val_free(&c->rrow[i]);
}

static void cursor_reset(tsv_cursor *c)
{
	tsv_table *v = (tsv_table *)c->base.pVtab;
	ts_cursor_close(c->cur);
	if (c->scan) { /* kept for the rowids of a DELETE (SCANS_KEPT) */
		c->scan->open = 0;
		c->scan = NULL;
	}
	free_rrow(c, v->schema->ncolumns);
	json_decref(c->line);
	c->line = NULL;
	if (c->conn && !c->done) { /* the rest of a response is dropped with it */
		jconn_close(c->conn);
		c->conn = NULL;
	}
	c->done = 0;
	c->cur = NULL;
	c->row = NULL;
}

static int x_close(sqlite3_vtab_cursor *base)
{
	tsv_cursor *c = (tsv_cursor *)base;
	cursor_reset(c);
	jconn_close(c->conn);
	sqlite3_free(c->rrow);
	sqlite3_free(base);
	return SQLITE_OK;
}

/*
 * The SQLite value x as exactly a value of type t (a copy for text and
 * blobs, freed with the cursor), or -1 when it is not one: then the
 * bound is not pushed down and SQLite alone filters.  For an integer
 * column a real bound rounds the way the comparison does: x > 1.5 is
 * x >= 2 (adjust: +1 for a lower bound, -1 for an upper one, 0 for =,
 * which then fails).
 */
static int convert(sqlite3_value *x, ts_type t, int adjust, ts_value *out)
{
	int st = sqlite3_value_type(x);
	if (t == TS_STRING || t == TS_BLOB) {
		if (st != (t == TS_STRING ? SQLITE_TEXT : SQLITE_BLOB))
			return -1;
		int n = sqlite3_value_bytes(x);
		const void *p = t == TS_STRING ? (const void *)sqlite3_value_text(x) : sqlite3_value_blob(x);
		char *copy = sqlite3_malloc(n + 1);
		if (!copy)
			return -1;
		if (n)
			memcpy(copy, p, (size_t)n);
		copy[n] = '\0';
		*out = t == TS_STRING ? ts_stringn(copy, (size_t)n) : ts_blob(copy, (size_t)n);
		return 0;
	}
	if (t == TS_DOUBLE) {
		if (st != SQLITE_INTEGER && st != SQLITE_FLOAT)
			return -1;
		*out = ts_double(sqlite3_value_double(x));
		return 0;
	}
	if (st == SQLITE_INTEGER) {
		sqlite3_int64 i = sqlite3_value_int64(x);
		if (t == TS_INT32 && (i < INT32_MIN || i > INT32_MAX))
			return -1;
		out->type = t;
		out->v.i = i;
		return 0;
	}
	if (st != SQLITE_FLOAT || adjust == 0)
		return -1;
	double d = sqlite3_value_double(x), r = adjust > 0 ? ceil(d) : floor(d);
	if (!(r >= -9.2e18 && r <= 9.2e18))
		return -1;
	out->type = t;
	out->v.i = (int64_t)r;
	if (t == TS_INT32 && (out->v.i < INT32_MIN || out->v.i > INT32_MAX))
		return -1;
	return 0;
}

/* convert() for a bound of scan s: text and blob copies are kept to be
 * freed with the scan. */
static int bound(struct scan *s, sqlite3_value *x, ts_type t, int adjust, ts_value *out)
{
	if (convert(x, t, adjust, out) < 0)
		return -1;
	if (t == TS_STRING || t == TS_BLOB)
		s->owned[s->nowned++] = (void *)out->v.s.ptr;
	return 0;
}

/* The next row of a query through tsstored into c->row (NULL at the
 * end).  Returns SQLITE_OK or an error. */
static int remote_advance(tsv_cursor *c)
{
	tsv_table *v = (tsv_table *)c->base.pVtab;
	int n = v->schema->ncolumns;
	char why[512];
	free_rrow(c, n);
	c->row = NULL;
	for (;;) {
		json_t *rows = json_object_get(c->line, "rows");
		if (c->line && c->pos < json_array_size(rows)) {
			json_t *row = json_array_get(rows, c->pos++);
			if (json_array_size(row) != (size_t)n)
				return fail(&v->base, "tsstore: unexpected row from tsstored%s%s", "", "");
			for (int i = 0; i < n; i++)
				if (val_from_json(v->schema->columns[i].type, json_array_get(row, i), &c->rrow[i],
				                  why, sizeof why) < 0)
					return fail(&v->base, "tsstore: unexpected value from tsstored: %s%s", why, "");
			c->row = c->rrow;
			c->n = n;
			return SQLITE_OK;
		}
		if (c->done)
			return SQLITE_OK;
		json_decref(c->line);
		c->line = NULL;
		c->pos = 0;
		int rc = jconn_next(c->conn, &c->line, why, sizeof why);
		if (rc == TS_EIO) {
			/* lost, timed out or garbled: the rest of the response
			 * is not to be read by the next query on it */
			jconn_close(c->conn);
			c->conn = NULL;
		}
		if (rc < 0) {
			c->done = 1;
			return fail(&v->base, "tsstore: %s%s", why, "");
		}
		if (rc == 0) {
			json_decref(c->line);
			c->line = NULL;
			c->done = 1;
		}
	}
}

/* The range of q as the protocol's fields (a query's, a delete's). */
static void put_range(struct jbuf *req, const ts_query *q)
{
	if (q->nprefix) {
		jbuf_puts(req, ",\"prefix\":");
		jbuf_row(req, q->prefix, q->nprefix);
	}
	if (q->lower) {
		jbuf_puts(req, q->lower_exclusive ? ",\"gt\":" : ",\"ge\":");
		jbuf_row(req, q->lower, q->nlower);
	}
	if (q->upper) {
		jbuf_puts(req, q->upper_exclusive ? ",\"lt\":" : ",\"le\":");
		jbuf_row(req, q->upper, q->nupper);
	}
	if (q->has_from)
		jbuf_printf(req, ",\"from\":%lld", (long long)q->from);
	if (q->has_to && !q->to_inclusive)
		jbuf_printf(req, ",\"to\":%lld", (long long)q->to);
	else if (q->has_to && q->to < INT64_MAX) /* inclusive here, exclusive in the protocol */
		jbuf_printf(req, ",\"to\":%lld", (long long)q->to + 1);
}

/* Start q through tsstored. */
static int remote_query(tsv_cursor *c, const ts_query *q)
{
	tsv_table *v = (tsv_table *)c->base.pVtab;
	struct jbuf req = {0};
	char why[512];
	int rc = 0;
	if (!c->rrow && !(c->rrow = sqlite3_malloc64((size_t)v->schema->ncolumns * sizeof *c->rrow)))
		return SQLITE_NOMEM;
	for (int i = 0; i < v->schema->ncolumns; i++)
		c->rrow[i] = ts_none();
	if (!c->conn && remote_connect(v, &c->conn, why, sizeof why) < 0)
		return fail(&v->base, "tsstore: %s%s", why, "");
	begin_request(&req, "query", v->name);
	put_range(&req, q);
	if (q->desc)
		jbuf_puts(&req, ",\"desc\":true");
	jbuf_putc(&req, '}');
	c->done = 0;
	c->pos = 0;
	if (jconn_send(c->conn, &req, why, sizeof why) < 0) {
		jconn_close(c->conn);
		c->conn = NULL;
		rc = fail(&v->base, "tsstore: %s%s", why, "");
	}
	jbuf_free(&req);
	return rc ? rc : remote_advance(c);
}

/* Filtering, step 1 (plan_prefix's arguments): the prefix's values from
 * argv[0..prefix) into c->lower and c->upper, and q's prefix.  The first
 * value that does not convert exactly ends the prefix (SQLite filters
 * the rest).  Returns the number of values used. */
static int filter_prefix(struct scan *c, const ts_schema *s, int prefix, sqlite3_value **argv,
                         ts_query *q)
{
	int usable = 0;
	for (; usable < prefix; usable++)
		if (bound(c, argv[usable], s->columns[s->key[usable]].type, 0, &c->lower[usable]) < 0)
			break;
	for (int i = 0; i < usable; i++)
		c->upper[i] = c->lower[i];
	q->prefix = usable ? c->lower : NULL;
	q->nprefix = usable;
	return usable;
}

/* Whether a bound of plan's bit is strict and x, for a column of type
 * t, is that exact value: a real bound on an integer column was rounded
 * inward (x > 1.5 is x >= 2), which is not strict any more. */
static int strict(int plan, int bit, sqlite3_value *x, ts_type t)
{
	return (plan & (bit << P_STRICT_SHIFT)) &&
	       (t == TS_DOUBLE || sqlite3_value_type(x) != SQLITE_FLOAT);
}

/* Step 2 (plan_key_range's): the bounds on the key column after the
 * prefix, from argv[*a..], into q -- only when the whole prefix was used
 * (usable), since a range after a shortened prefix means nothing.  A
 * real bound on an integer column rounds inward; GT and LT stay strict
 * otherwise (SQLite rechecks every row anyway).  *a moves past the
 * arguments the plan gave, used or not. */
static void filter_key_range(struct scan *c, const ts_schema *s, int plan, int usable,
                             sqlite3_value **argv, int *a, ts_query *q)
{
	int prefix = plan & 0xff;
	ts_type next = prefix < s->nkey ? s->columns[s->key[prefix]].type : TS_NONE;
	if ((plan & P_LOWER) && usable == prefix &&
	    bound(c, argv[*a], next, 1, &c->lower[prefix]) == 0) {
		q->lower = c->lower;
		q->nlower = prefix + 1;
		q->lower_exclusive = strict(plan, P_LOWER, argv[*a], next);
	}
	*a += (plan & P_LOWER) != 0;
	if ((plan & P_UPPER) && usable == prefix &&
	    bound(c, argv[*a], next, -1, &c->upper[prefix]) == 0) {
		q->upper = c->upper;
		q->nupper = prefix + 1;
		q->upper_exclusive = strict(plan, P_UPPER, argv[*a], next);
	}
	*a += (plan & P_UPPER) != 0;
}

/* Step 3 (plan_ts_range's): the range on ts from argv[a..], into q; a
 * bound that is not exactly a timestamp is left to SQLite.  ts > X is
 * ts >= X + 1; ts < X is the exclusive to. */
static void filter_ts_range(int plan, sqlite3_value **argv, int a, ts_query *q)
{
	ts_value t;
	if ((plan & P_FROM) && convert(argv[a], TS_TIMESTAMP, 1, &t) == 0 &&
	    !(strict(plan, P_FROM, argv[a], TS_TIMESTAMP) && t.v.i == INT64_MAX)) {
		q->has_from = 1;
		q->from = t.v.i + strict(plan, P_FROM, argv[a], TS_TIMESTAMP);
	}
	a += (plan & P_FROM) != 0;
	if ((plan & P_TO) && convert(argv[a], TS_TIMESTAMP, -1, &t) == 0) {
		q->has_to = 1;
		q->to = t.v.i;
		q->to_inclusive = !strict(plan, P_TO, argv[a], TS_TIMESTAMP);
	}
}

/* After the cursor moved (rc its result): count the row in its scan and
 * give it its rowid, or mark the scan ended.  Returns rc. */
static int counted(tsv_cursor *c, int rc)
{
	struct scan *s = c->scan;
	if (rc != SQLITE_OK || !s)
		return rc;
	if (c->row)
		c->rowid = (sqlite3_int64)((s->id << ROWID_SCAN_SHIFT) | (int64_t)++s->rows);
	else
		s->eof = 1;
	return rc;
}

/* A new scan of v, linked in and marked open; NULL when out of memory. */
static struct scan *scan_new(tsv_table *v)
{
	struct scan *s;
	if (v->nscans >= SCANS_KEPT)
		scans_prune(v, SCANS_KEPT / 2, 0);
	if (!(s = sqlite3_malloc(sizeof *s)))
		return NULL;
	v->nscans++;
	memset(s, 0, sizeof *s);
	s->id = v->next_scan++ & ROWID_SCAN_MASK;
	s->open = 1;
	s->next = v->scans;
	v->scans = s;
	return s;
}

/* xFilter: the query of plan (x_best_index) with argv's values, steps 1
 * to 3, kept as the cursor's scan (for DELETE), then the first row, read
 * from the table or through tsstored. */
static int x_filter(sqlite3_vtab_cursor *base, int plan, const char *str, int argc,
                    sqlite3_value **argv)
{
	tsv_cursor *c = (tsv_cursor *)base;
	tsv_table *v = (tsv_table *)base->pVtab;
	int a = plan & 0xff, rc;
	struct scan *s;
	(void)str;
	(void)argc;
	cursor_reset(c);
	if (!(s = c->scan = scan_new(v)))
		return SQLITE_NOMEM;
	int usable = filter_prefix(s, v->schema, plan & 0xff, argv, &s->q);
	filter_key_range(s, v->schema, plan, usable, argv, &a, &s->q);
	filter_ts_range(plan, argv, a, &s->q);
	s->q.desc = (plan & P_DESC) != 0;
	c->rowid = 0;
	if (v->socket)
		return counted(c, remote_query(c, &s->q));
	if ((rc = ts_query_open(v->t, &s->q, &c->cur)) < 0)
		return fail(base->pVtab, "tsstore: %s%s", lib_message(rc), "");
	rc = ts_cursor_next(c->cur, &c->row, &c->n);
	return rc < 0 ? fail(base->pVtab, "tsstore: %s%s", lib_message(rc), "") : counted(c, SQLITE_OK);
}

static int x_next(sqlite3_vtab_cursor *base)
{
	tsv_cursor *c = (tsv_cursor *)base;
	if (((tsv_table *)base->pVtab)->socket)
		return counted(c, remote_advance(c));
	int rc = ts_cursor_next(c->cur, &c->row, &c->n);
	return rc < 0 ? fail(base->pVtab, "tsstore: %s%s", lib_message(rc), "") : counted(c, SQLITE_OK);
}

static int x_eof(sqlite3_vtab_cursor *base)
{
	return ((tsv_cursor *)base)->row == NULL;
}

static int x_column(sqlite3_vtab_cursor *base, sqlite3_context *ctx, int i)
{
	tsv_cursor *c = (tsv_cursor *)base;
	const ts_value *x = &c->row[i];
	switch (x->type) {
	case TS_INT32:
	case TS_INT64:
	case TS_TIMESTAMP:
		sqlite3_result_int64(ctx, x->v.i);
		break;
	case TS_DOUBLE:
		sqlite3_result_double(ctx, x->v.d);
		break;
	case TS_STRING:
		sqlite3_result_text(ctx, x->v.s.ptr, (int)x->v.s.len, SQLITE_TRANSIENT);
		break;
	case TS_BLOB:
		sqlite3_result_blob(ctx, x->v.s.ptr, (int)x->v.s.len, SQLITE_TRANSIENT);
		break;
	default:
		sqlite3_result_null(ctx);
	}
	return SQLITE_OK;
}

static int x_rowid(sqlite3_vtab_cursor *base, sqlite3_int64 *rowid)
{
	*rowid = ((tsv_cursor *)base)->rowid;
	return SQLITE_OK;
}

/* ---- writing ---- */

/* Forget the pending rows. */
static void free_pending(tsv_table *v)
{
	for (size_t i = 0; i < v->npending * (size_t)v->schema->ncolumns; i++)
		if (v->pending[i].type == TS_STRING || v->pending[i].type == TS_BLOB)
			sqlite3_free((void *)v->pending[i].v.s.ptr);
	v->npending = 0;
}

/* Send req (a write: insert, delete) on v's connection for writes,
 * opened by the first.  Returns 0, or a TS_E* code with why set. */
static int remote_write(tsv_table *v, const struct jbuf *req, char *why, size_t whysz)
{
	int rc = (!v->wconn && remote_connect(v, &v->wconn, why, whysz) < 0)
	         ? TS_EIO : jconn_call(v->wconn, req, NULL, NULL, NULL, why, whysz);
	if (rc == TS_EIO || rc == TS_ENOMEM) {
		/* the connection is in no known state: the next write opens
		 * another */
		jconn_close(v->wconn);
		v->wconn = NULL;
	}
	return rc;
}

/* The table opened read-write in *t (the database opened so at the
 * first write: v->wdb).  Returns 0 or the library's code. */
static int writer_table(tsv_table *v, ts_table **t)
{
	int rc;
	*t = NULL;
	if (!v->wdb) {
		ts_options o;
		ts_options_init(&o);
		if ((rc = ts_open(v->path, &o, &v->wdb)) < 0) {
			v->wdb = NULL;
			return rc;
		}
	}
	return ts_table_open(v->wdb, v->name, t);
}

/* Store the pending rows as one batch, under their policy. */
static int store_pending(tsv_table *v)
{
	ts_table *t = NULL;
	int rc = 0;
	if (v->npending == 0)
		return SQLITE_OK;
	if (v->socket) {
		struct jbuf req = {0};
		char why[512];
		int n = v->schema->ncolumns;
		begin_request(&req, "insert", v->name);
		jbuf_puts(&req, ",\"rows\":[");
		for (size_t i = 0; i < v->npending; i++) {
			if (i)
				jbuf_putc(&req, ',');
			jbuf_row(&req, v->pending + i * (size_t)n, n);
		}
		jbuf_putc(&req, ']');
		if (v->pending_policy != TS_ON_DUPLICATE_TABLE)
			jbuf_printf(&req, ",\"on_duplicate\":\"%s\"", ts_on_duplicate_name((ts_on_duplicate)v->pending_policy));
		jbuf_putc(&req, '}');
		rc = remote_write(v, &req, why, sizeof why);
		jbuf_free(&req);
		free_pending(v);
		return rc < 0 ? fail(&v->base, "tsstore: %s%s", why, "") : SQLITE_OK;
	}
	if ((rc = writer_table(v, &t)) == 0)
		rc = v->pending_policy == TS_ON_DUPLICATE_TABLE
		     ? ts_insert_at(t, v->schema->version, v->pending, v->npending)
		     : ts_insert_policy(t, v->schema->version, v->pending_policy, v->pending,
		                        v->npending, NULL, NULL);
	ts_table_close(t);
	free_pending(v);
	return rc < 0 ? fail(&v->base, "tsstore: %s%s", lib_message(rc), "") : SQLITE_OK;
}

/* ---- DELETE ---- */

/* Forget the rows DELETEs marked (a rollback, or a refused commit). */
static void forget_deletes(tsv_table *v)
{
	for (struct scan *s = v->scans; s; s = s->next)
		s->deleted = 0;
	v->ndeleted = 0;
	scans_prune(v, 0, 0);
}

/* The range of scan s deleted: one ts_delete, or a delete request. */
static int delete_range(tsv_table *v, const struct scan *s)
{
	ts_query q = s->q;
	ts_table *t = NULL;
	int rc;
	q.desc = 0;
	if (v->socket) {
		struct jbuf req = {0};
		char why[512];
		begin_request(&req, "delete", v->name);
		put_range(&req, &q);
		jbuf_putc(&req, '}');
		rc = remote_write(v, &req, why, sizeof why);
		jbuf_free(&req);
		return rc < 0 ? fail(&v->base, "tsstore: %s%s", why, "") : SQLITE_OK;
	}
	if ((rc = writer_table(v, &t)) == 0)
		rc = ts_delete(t, &q, NULL, NULL);
	ts_table_close(t);
	return rc < 0 ? fail(&v->base, "tsstore: %s%s", lib_message(rc), "") : SQLITE_OK;
}

/*
 * Apply the DELETEs of the transaction so far: every scan with deleted
 * rows must have given all its rows to the DELETE (its range is then
 * exactly what the WHERE selected) and be deleted as a range; else
 * nothing is deleted and the statement or commit fails, saying why.
 */
static int apply_deletes(tsv_table *v)
{
	int rc = SQLITE_OK;
	if (v->ndeleted == 0)
		return SQLITE_OK;
	for (struct scan *s = v->scans; s; s = s->next) {
		if (s->deleted == 0 || (s->eof && s->deleted == s->rows))
			continue;
		sqlite3_free(v->base.zErrMsg);
		v->base.zErrMsg = sqlite3_mprintf(
			"tsstore: %s: DELETE removes whole ranges of the key and ts: its WHERE kept %llu of "
			"the %llu rows its key and ts bounds select (a condition on a value column, an "
			"expression, or a bound not pushed down); nothing was deleted -- delete by = on "
			"leading key columns, a range on the next one and a range on ts",
			v->name, (unsigned long long)(s->rows - s->deleted), (unsigned long long)s->rows);
		forget_deletes(v);
		return SQLITE_ERROR;
	}
	for (struct scan *s = v->scans; s && rc == SQLITE_OK; s = s->next)
		if (s->deleted)
			rc = delete_range(v, s);
	forget_deletes(v);
	return rc;
}

/* xUpdate's DELETE of the row rowid: marked in its scan, deleted with
 * the scan's range by apply_deletes.  The inserts before it are stored
 * first, so that the transaction's statements apply in order. */
static int delete_row(tsv_table *v, sqlite3_value *rowid)
{
	int64_t id = (int64_t)((uint64_t)sqlite3_value_int64(rowid) >> ROWID_SCAN_SHIFT);
	struct scan *s = v->scans;
	int rc;
	while (s && s->id != id)
		s = s->next;
	if (!s)
		return fail(&v->base, "tsstore: %s: DELETE of a row no scan of it gave%s", v->name, "");
	if (v->npending && (rc = store_pending(v)) != SQLITE_OK)
		return rc;
	s->deleted++;
	v->ndeleted++;
	return SQLITE_OK;
}

/* The SQLite value x for column col of an inserted row; NULL: TS_NONE. */
static int insert_value(tsv_table *v, sqlite3_value *x, const ts_column *col, ts_value *out)
{
	int st = sqlite3_value_type(x);
	*out = ts_none();
	if (st == SQLITE_NULL)
		return SQLITE_OK;
	switch (col->type) {
	case TS_DOUBLE:
		if (st == SQLITE_TEXT) {
			/* SQLite has no NaN (it makes one NULL): the words are
			 * how SQL stores one, and the infinities too. */
			double d;
			if (!val_double_word((const char *)sqlite3_value_text(x),
			                     (size_t)sqlite3_value_bytes(x), &d))
				break;
			*out = ts_double(d);
			return SQLITE_OK;
		}
		if (st != SQLITE_INTEGER && st != SQLITE_FLOAT)
			break;
		*out = ts_double(sqlite3_value_double(x));
		return SQLITE_OK;
	case TS_STRING:
	case TS_BLOB:
		if (convert(x, col->type, 0, out) == 0)
			return SQLITE_OK;
		if (col->type == TS_STRING && st != SQLITE_BLOB) { /* numbers as their text */
			const unsigned char *p = sqlite3_value_text(x);
			int n = sqlite3_value_bytes(x);
			char *copy = sqlite3_malloc(n + 1);
			if (!copy)
				return SQLITE_NOMEM;
			memcpy(copy, p, (size_t)n + 1);
			*out = ts_stringn(copy, (size_t)n);
			return SQLITE_OK;
		}
		break;
	default:
		if (st == SQLITE_INTEGER) {
			out->type = col->type;
			out->v.i = sqlite3_value_int64(x);
			return SQLITE_OK;
		}
		break;
	}
	return fail(&v->base, "tsstore: column \"%s\": a %s value cannot be stored in it", col->name,
	            st == SQLITE_TEXT ? "text" : st == SQLITE_BLOB ? "blob" : "real");
}

/* The duplicate policy of the INSERT running: OR REPLACE and OR IGNORE
 * say one; the others keep the table's. */
static int insert_policy(tsv_table *v)
{
	switch (sqlite3_vtab_on_conflict(v->sdb)) {
	case SQLITE_REPLACE:
		return TS_ON_DUPLICATE_REPLACE;
	case SQLITE_IGNORE:
		return TS_ON_DUPLICATE_IGNORE;
	default:
		return TS_ON_DUPLICATE_TABLE;
	}
}

static int x_update(sqlite3_vtab *base, int argc, sqlite3_value **argv, sqlite3_int64 *rowid)
{
	tsv_table *v = (tsv_table *)base;
	int n = v->schema->ncolumns, rc, policy;
	if (argc == 1)
		return delete_row(v, argv[0]);
	if (sqlite3_value_type(argv[0]) != SQLITE_NULL)
		return fail(base, "tsstore: %s: UPDATE is not supported (a row's key cannot change): "
		                  "INSERT OR REPLACE the row with its new values, or DELETE it%s",
		            v->name, "");
	policy = insert_policy(v);
	if ((rc = apply_deletes(v)) != SQLITE_OK)
		return rc;
	if (v->npending && (v->npending == PENDING_ROWS_MAX || policy != v->pending_policy) &&
	    (rc = store_pending(v)) != SQLITE_OK)
		return rc;
	v->pending_policy = policy;
	if (v->npending == v->cap) {
		size_t cap = v->cap ? v->cap * 2 : 64;
		ts_value *p = sqlite3_realloc64(v->pending, cap * (size_t)n * sizeof *p);
		if (!p)
			return SQLITE_NOMEM;
		v->pending = p;
		v->cap = cap;
	}
	ts_value *row = v->pending + v->npending * (size_t)n;
	for (int i = 0; i < n; i++)
		row[i] = ts_none();
	for (int i = 0; i < n; i++)
		if ((rc = insert_value(v, argv[2 + i], &v->schema->columns[i], &row[i])) != SQLITE_OK) {
			for (int k = 0; k < i; k++)
				if (row[k].type == TS_STRING || row[k].type == TS_BLOB)
					sqlite3_free((void *)row[k].v.s.ptr);
			return rc;
		}
	v->npending++;
	*rowid = 0;
	return SQLITE_OK;
}

/* A write transaction begins: the scans of the reads before it are no
 * DELETE's. */
static int x_begin(sqlite3_vtab *base)
{
	scans_prune((tsv_table *)base, 0, 0);
	return SQLITE_OK;
}

static int x_sync(sqlite3_vtab *base)
{
	int rc = apply_deletes((tsv_table *)base);
	return rc == SQLITE_OK ? store_pending((tsv_table *)base) : rc;
}

static int x_commit(sqlite3_vtab *base)
{
	(void)base;
	return SQLITE_OK;
}

static int x_rollback(sqlite3_vtab *base)
{
	free_pending((tsv_table *)base);
	forget_deletes((tsv_table *)base);
	return SQLITE_OK;
}

static sqlite3_module module = {
	.iVersion = 0,
	.xCreate = x_connect,
	.xConnect = x_connect,
	.xBestIndex = x_best_index,
	.xDisconnect = x_disconnect,
	.xDestroy = x_disconnect,
	.xOpen = x_open,
	.xClose = x_close,
	.xFilter = x_filter,
	.xNext = x_next,
	.xEof = x_eof,
	.xColumn = x_column,
	.xRowid = x_rowid,
	.xUpdate = x_update,
	.xBegin = x_begin,
	.xSync = x_sync,
	.xCommit = x_commit,
	.xRollback = x_rollback,
};

/* ---- time helpers ---- */

/* tsstore_time(X): X as nanoseconds since the epoch, the INTEGER a ts
 * column holds: TEXT in any form of ts_time_parse (RFC 3339, a date,
 * 1732550000s, now, now-15m, -1h; "now" is $TSSTORE_NOW or the real-time
 * clock, read when the statement runs), an INTEGER as it is (already
 * nanoseconds), NULL as NULL; anything else is an error.  Not
 * deterministic ("now" moves), but a bound on ts that uses it is still
 * pushed down: SQLite evaluates it once per scan. */
static void fn_time(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
	int64_t ns = 0;
	(void)argc;
	switch (sqlite3_value_type(argv[0])) {
	case SQLITE_NULL:
		sqlite3_result_null(ctx);
		return;
	case SQLITE_INTEGER:
		sqlite3_result_int64(ctx, sqlite3_value_int64(argv[0]));
		return;
	case SQLITE_TEXT:
		if (ts_time_parse((const char *)sqlite3_value_text(argv[0]), &ns) == 0) {
			sqlite3_result_int64(ctx, ns);
			return;
		}
		sqlite3_result_error(ctx, ts_errmsg(NULL), -1);
		return;
	default:
		sqlite3_result_error(ctx, "tsstore_time: want a timestamp as TEXT or INTEGER nanoseconds", -1);
	}
}

/* tsstore_time_text(NS): RFC 3339 UTC as tsstore prints it; NULL as NULL;
 * anything but an INTEGER is an error. */
static void fn_time_text(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
	char buf[TS_TIME_BUFSZ];
	(void)argc;
	if (sqlite3_value_type(argv[0]) == SQLITE_NULL) {
		sqlite3_result_null(ctx);
		return;
	}
	if (sqlite3_value_type(argv[0]) != SQLITE_INTEGER) {
		sqlite3_result_error(ctx, "tsstore_time_text: want INTEGER nanoseconds", -1);
		return;
	}
	ts_time_format(sqlite3_value_int64(argv[0]), buf, sizeof buf);
	sqlite3_result_text(ctx, buf, -1, SQLITE_TRANSIENT);
}

/* The entry point SQLite derives from the file name libtsstore_sqlite.so. */
__attribute__((visibility("default"))) int
sqlite3_tsstoresqlite_init(sqlite3 *db, char **err, const sqlite3_api_routines *api);

int sqlite3_tsstoresqlite_init(sqlite3 *db, char **err, const sqlite3_api_routines *api)
{
	int rc;
	(void)err;
	SQLITE_EXTENSION_INIT2(api);
	if ((rc = sqlite3_create_function(db, "tsstore_time", 1, SQLITE_UTF8, NULL, fn_time, NULL,
	                                  NULL)) != SQLITE_OK ||
	    (rc = sqlite3_create_function(db, "tsstore_time_text", 1,
	                                  SQLITE_UTF8 | SQLITE_DETERMINISTIC, NULL, fn_time_text,
	                                  NULL, NULL)) != SQLITE_OK)
		return rc;
	return sqlite3_create_module(db, "tsstore", &module, NULL);
}
