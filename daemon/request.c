/*
 * request.c -- one request of the protocol (DESIGN.md section 5), from
 * its line to its response lines.  Everything here runs on a worker
 * thread; server.c decides when.
 *
 * A request moves through three states:
 *   new        tsd_request_new holds the line;
 *   streaming  the first tsd_request_step parsed it and started the op;
 *              an op with many rows (query, aggregate) keeps its cursor
 *              and each later step appends one "rows" line of at most
 *              chunk-rows rows (and about TSD_CHUNK_BYTES), so the server
 *              can stop calling while the client is slow to read;
 *   done       the last line, with "ok", is written.
 * Every other op goes from new to done in one step.  An error at any
 * point ends the response with {"ok":false,"error":{code,message}}: a
 * response may thus be rows lines and then an error, when a tablet turns
 * out damaged in the middle of a scan.
 *
 * Once its op is known, and before any other field is looked at, a
 * request is checked against what its client may do (access.c: the
 * level the op needs, the level the connection has); a refusal is an
 * EAUTH error that keeps the connection.
 *
 * Requests are parsed with jansson and checked strictly: an unknown field
 * is an error rather than ignored, so that a misspelt "form" cannot
 * silently turn a bounded query into a scan of everything.  Response lines
 * are written straight into a byte buffer (json.c), not built as json_t.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "graphite.h"
#include "ingest.h"
#include "jrows.h"
#include "rowfmt.h"
#include "tsd.h"
#include "value.h"

/* The key arrays a query can carry. */
enum { KEY_PREFIX, KEY_LOWER, KEY_UPPER, KEY_AFTER, NKEYS };

struct tsd_request {
	struct tsd_http_req *http;  /* an HTTP request (http.c runs it), or NULL */
	char *line;
	size_t len;
	int cut;                    /* TSD_LINE_WHOLE, _TOO_LONG or _STALLED */
	int started, done, closes;
	enum tsd_op op;
	int code;                   /* 0, or the error the response carries */
	char msg[TSD_MESSAGE_MAX];
	char *id;                   /* the request's "id" as compact JSON */
	json_t *json;
	size_t rows_start, rows_end; /* the "rows" text left to jrows, or 0, 0 */
	ts_table *table;
	ts_schema *schema;
	ts_cursor *cursor;
	struct tsd_follow *follow;  /* a follow stream (follow.c), once answered */
	int acks;                   /* atomic: a follow stream whose standby sends
	                             * acks (sync=replica): the loop hands them to
	                             * replica.c (tsd_request_takes_acks) */
	struct {                    /* an insert or a delete waiting for a
	                             * standby's ack (sync=replica) */
		int on;
		uint64_t version;   /* its commit */
		int64_t until;      /* monotonic ns: then it fails */
		size_t inserted, ignored;
		uint64_t deleted;   /* a delete's count (TS_COUNT_UNKNOWN: null) */
	} replica;
	int has_limit;              /* query: the final line says more/next */
	uint64_t count;             /* rows sent */
	ts_value keys[NKEYS][TS_KEY_COLUMNS_MAX];
	int nkeys[NKEYS];
	int *columns;               /* query projection */
	ts_aggspec *specs;          /* aggregate functions */
	const char *client;         /* for the log: the connection's, or NULL */
	enum tsd_access granted;    /* what the connection may do (check_access) */
	struct jbuf out;
};

struct tsd_request *tsd_request_new(const char *line, size_t len, int cut)
{
	struct tsd_request *r = calloc(1, sizeof *r);
	if (!r || !(r->line = malloc(len + 1))) {
		free(r);
		return NULL;
	}
	memcpy(r->line, line, len);
	r->line[len] = '\0';
	r->len = len;
	r->cut = cut;
	return r;
}

int tsd_request_takes_acks(const struct tsd_request *r)
{
	return r && __atomic_load_n(&r->acks, __ATOMIC_ACQUIRE);
}

void tsd_request_set_client(struct tsd_request *r, const char *client)
{
	r->client = client;
}

/* Who r came from, for the log. */
static const char *client_of(const struct tsd_request *r)
{
	return r->client ? r->client : "a client";
}

struct tsd_request *tsd_request_http(struct tsd_http_req *h)
{
	struct tsd_request *r = calloc(1, sizeof *r);
	if (!r) {
		tsd_http_free(h);
		return NULL;
	}
	r->http = h;
	return r;
}

void tsd_request_free(struct tsd_request *r)
{
	if (!r)
		return;
	tsd_http_free(r->http);
	ts_cursor_close(r->cursor);
	tsd_follow_free(r->follow);
	if (__atomic_load_n(&r->acks, __ATOMIC_RELAXED))
		tsd_replica_attach(-1);
	ts_schema_free(r->schema);
	ts_table_close(r->table);
	for (int k = 0; k < NKEYS; k++)
		for (int i = 0; i < r->nkeys[k]; i++)
			val_free(&r->keys[k][i]);
	json_decref(r->json);
	free(r->id);
	free(r->columns);
	free(r->specs);
	free(r->line);
	jbuf_free(&r->out);
	free(r);
}

void tsd_request_output(struct tsd_request *r, char **p, size_t *len)
{
	*p = r->out.p;
	*len = r->out.len;
	memset(&r->out, 0, sizeof r->out);
}

int tsd_request_done(const struct tsd_request *r) { return r->done; }
int tsd_request_closes(const struct tsd_request *r) { return r->closes; }
enum tsd_op tsd_request_op(const struct tsd_request *r) { return r->op; }
int tsd_request_code(const struct tsd_request *r) { return r->code; }

size_t tsd_request_size(const struct tsd_request *r)
{
	return r->http ? tsd_http_size(r->http) : r->len;
}

void tsd_request_count(const struct tsd_request *r, int64_t ns)
{
	if (r->http)
		tsd_http_count(r->http, ns);
	else if (r->cut != TSD_LINE_GRAPHITE) /* graphite.c counts its own */
		tsd_stats_request(r->op, r->code, ns);
}

/* ---- Response lines ---- */

/* Start a response line: "{" and the echoed id. */
static void begin_line(struct tsd_request *r)
{
	jbuf_putc(&r->out, '{');
	if (r->id) {
		jbuf_puts(&r->out, "\"id\":");
		jbuf_puts(&r->out, r->id);
		jbuf_putc(&r->out, ',');
	}
}

/* Start the final line of a success: {"id":..,"ok":true */
static void begin_ok(struct tsd_request *r)
{
	begin_line(r);
	jbuf_puts(&r->out, "\"ok\":true");
}

static void end_line(struct tsd_request *r)
{
	jbuf_put(&r->out, "}\n", 2);
}

static void put_error_line(struct tsd_request *r)
{
	begin_line(r);
	jbuf_puts(&r->out, "\"ok\":false,\"error\":{\"code\":");
	jbuf_string(&r->out, tsd_errname(r->code), strlen(tsd_errname(r->code)));
	jbuf_puts(&r->out, ",\"message\":");
	jbuf_string(&r->out, r->msg, strlen(r->msg));
	jbuf_putc(&r->out, '}');
	end_line(r);
}

/* Record an error (the first one wins) and return its code. */
static int fail(struct tsd_request *r, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int fail(struct tsd_request *r, int code, const char *fmt, ...)
{
	va_list ap;
	if (r->code)
		return r->code;
	r->code = code;
	va_start(ap, fmt);
	vsnprintf(r->msg, sizeof r->msg, fmt, ap);
	va_end(ap);
	return code;
}

/* Record a library error with the library's message. */
static int lib_fail(struct tsd_request *r, int code)
{
	const char *m = ts_errmsg(NULL);
	return fail(r, code, "%s", m && *m ? m : ts_strerror(code));
}

/* ---- Fields ---- */

/* The fields each op accepts besides "op" and "id". */
static const char *const op_fields[TSD_NOPS][12] = {
	[TSD_OP_PING] = {NULL},
	[TSD_OP_TABLES] = {NULL},
	[TSD_OP_CREATE] = {"table", "columns", "key", "ttl", "on_duplicate", NULL},
	[TSD_OP_SCHEMA] = {"table", NULL},
	[TSD_OP_ALTER] = {"table", "add", "widen", "ttl", "on_duplicate", NULL},
	[TSD_OP_DROP] = {"table", NULL},
	[TSD_OP_INSERT] = {"table", "rows", "on_duplicate", NULL},
	[TSD_OP_QUERY] = {"table", "prefix", "ge", "gt", "le", "lt", "from", "to",
	                  "desc", "limit", "columns", "after"},
	[TSD_OP_LATEST] = {"table", "prefix", NULL},
	[TSD_OP_AGGREGATE] = {"table", "prefix", "from", "to", "every", "group",
	                      "columns", "raw", NULL},
	[TSD_OP_FLUSH] = {"table", "before", NULL},
	[TSD_OP_STATS] = {"table", NULL},
	[TSD_OP_CHECK] = {"table", NULL},
	[TSD_OP_SNAPSHOT] = {"dest", "incremental", NULL},
	[TSD_OP_AUTH] = {"token", NULL},
	/* delete and purge take query's range fields, nothing else of it */
	[TSD_OP_DELETE] = {"table", "prefix", "ge", "gt", "le", "lt", "from", "to", NULL},
	[TSD_OP_PURGE] = {"table", "prefix", "ge", "gt", "le", "lt", "from", "to", NULL},
	[TSD_OP_CHANGES] = {"table", "since", "until", "resolution", "depth", NULL},
	[TSD_OP_CREATE_ROLLUP] = {"table", "from", "every", "group", "columns", "ttl", NULL},
	[TSD_OP_ROLLUPS] = {"table", NULL},
	[TSD_OP_FOLLOW] = {"lineage", "epoch", "tables", NULL},
	[TSD_OP_PROMOTE] = {"force", NULL},
};

static int check_fields(struct tsd_request *r)
{
	const char *name;
	json_t *v;
	json_object_foreach(r->json, name, v) {
		int ok = strcmp(name, "op") == 0 || strcmp(name, "id") == 0;
		for (int i = 0; !ok && i < 12 && op_fields[r->op][i]; i++)
			ok = strcmp(name, op_fields[r->op][i]) == 0;
		if (!ok)
			return fail(r, TS_EPROTO, "unknown field \"%.64s\" for op \"%s\"", name,
			            tsd_op_name(r->op));
	}
	return 0;
}

/* A string made by json_text as a C string, or the request's error:
 * EPROTO when v is no string, EINVAL when it holds a NUL byte (or, for
 * a name, a control character).  what names it for the message
 * ("field \"table\"", "key[2]"). */
static int get_text(struct tsd_request *r, const json_t *v, int flags, const char *what,
                    const char **out)
{
	char why[TSD_MESSAGE_MAX / 2];
	int rc = json_text(v, flags, out, why, sizeof why);
	if (rc < 0)
		return fail(r, rc == TS_ETYPE ? TS_EPROTO : TS_EINVAL, "%s: %s", what, why);
	return 0;
}

/* Field name as a C string (json_text; flags JSON_TEXT_NAME for an
 * identifier); *out NULL when absent and not required. */
static int get_string(struct tsd_request *r, const char *name, int flags, int required,
                      const char **out)
{
	json_t *v = json_object_get(r->json, name);
	char what[80];
	*out = NULL;
	if (!v && !required)
		return 0;
	if (!v)
		return fail(r, TS_EPROTO, "missing field \"%s\"", name);
	snprintf(what, sizeof what, "field \"%s\"", name);
	return get_text(r, v, flags, what, out);
}

/* A timestamp field: integer ns or text; *has says whether it was given. */
static int get_time(struct tsd_request *r, const char *name, int64_t *ns, int *has)
{
	json_t *v = json_object_get(r->json, name);
	char why[TSD_MESSAGE_MAX / 2];
	ts_value t;
	*has = 0;
	if (!v)
		return 0;
	int rc = json_is_null(v) ? TS_EINVAL : val_from_json(TS_TIMESTAMP, v, &t, why, sizeof why);
	if (rc < 0)
		return fail(r, rc, "field \"%s\": %s", name,
		            json_is_null(v) ? "expected a timestamp, got null" : why);
	*ns = t.v.i;
	*has = 1;
	return 0;
}

/* A duration field: "<n><unit>" or integer ns >= 0. */
static int get_duration(struct tsd_request *r, const char *name, int64_t *ns, int *has)
{
	json_t *v = json_object_get(r->json, name);
	*has = 0;
	if (!v)
		return 0;
	const char *text = NULL;
	char why[64];
	if (json_is_integer(v) && json_integer_value(v) >= 0)
		*ns = json_integer_value(v);
	else if (json_text(v, 0, &text, why, sizeof why) < 0 || ts_duration_parse(text, ns) < 0)
		return fail(r, TS_EINVAL, "field \"%s\": expected a duration such as \"1h\" "
		            "(<n><unit>, unit ns us ms s m h d w) or integer ns", name);
	*has = 1;
	return 0;
}

/* The duplicate policy field "on_duplicate", "reject", "ignore" or
 * "replace" (ts_on_duplicate_parse: whatever the library knows); *has
 * says whether it was given. */
static int get_on_duplicate(struct tsd_request *r, ts_on_duplicate *policy, int *has)
{
	const char *text;
	*has = 0;
	if (get_string(r, "on_duplicate", JSON_TEXT_NAME, 0, &text) < 0 || !text)
		return r->code;
	if (ts_on_duplicate_parse(text, policy) < 0)
		return fail(r, TS_EINVAL, "field \"on_duplicate\": %s", ts_errmsg(NULL));
	*has = 1;
	return 0;
}

/* A non-negative integer field. */
static int get_count(struct tsd_request *r, const char *name, int64_t *out, int *has)
{
	json_t *v = json_object_get(r->json, name);
	*has = 0;
	if (!v)
		return 0;
	if (!json_is_integer(v) || json_integer_value(v) < 0)
		return fail(r, TS_EPROTO, "field \"%s\": expected a non-negative integer, got %s",
		            name, val_json_kind(v));
	*out = json_integer_value(v);
	*has = 1;
	return 0;
}

static int get_bool(struct tsd_request *r, const char *name, int *out)
{
	json_t *v = json_object_get(r->json, name);
	*out = 0;
	if (!v)
		return 0;
	if (!json_is_boolean(v))
		return fail(r, TS_EPROTO, "field \"%s\": expected true or false, got %s", name,
		            val_json_kind(v));
	*out = json_is_true(v);
	return 0;
}

/* An array field (absent: *out NULL unless required). */
static int get_array(struct tsd_request *r, const char *name, int required, json_t **out)
{
	json_t *v = json_object_get(r->json, name);
	*out = NULL;
	if (!v && !required)
		return 0;
	if (!v)
		return fail(r, TS_EPROTO, "missing field \"%s\"", name);
	if (!json_is_array(v))
		return fail(r, TS_EPROTO, "field \"%s\": expected an array, got %s", name,
		            val_json_kind(v));
	*out = v;
	return 0;
}

/* Open the request's "table" and take its schema. */
static int open_table(struct tsd_request *r, const struct tsd_context *ctx)
{
	const char *name;
	int rc;
	if (get_string(r, "table", JSON_TEXT_NAME, 1, &name) < 0)
		return r->code;
	if ((rc = ts_table_open(tsd_db(ctx), name, &r->table)) < 0 ||
	    (rc = ts_table_schema(r->table, &r->schema)) < 0)
		return lib_fail(r, rc);
	return 0;
}

/* Key array field `name` into r->keys[slot]: values of the leading key
 * columns in order. */
static int get_key(struct tsd_request *r, const char *name, int slot)
{
	json_t *arr, *v;
	size_t i;
	char why[TSD_MESSAGE_MAX / 2];
	int rc;
	if (get_array(r, name, 0, &arr) < 0 || !arr)
		return r->code;
	if (json_array_size(arr) > (size_t)r->schema->nkey)
		return fail(r, TS_EINVAL, "field \"%s\": %zu values, the key has %d columns", name,
		            json_array_size(arr), r->schema->nkey);
	json_array_foreach(arr, i, v) {
		const ts_column *c = &r->schema->columns[r->schema->key[i]];
		if (json_is_null(v))
			return fail(r, TS_EINVAL, "field \"%s\"[%zu] (column \"%s\"): null is not a key value",
			            name, i, c->name);
		if ((rc = val_from_json(c->type, v, &r->keys[slot][i], why, sizeof why)) < 0)
			return fail(r, rc, "field \"%s\"[%zu] (column \"%s\"): %s", name, i, c->name, why);
		r->nkeys[slot] = (int)i + 1;
	}
	return 0;
}

/* ---- Ops that answer in one line ---- */

static int op_ping(struct tsd_request *r)
{
	begin_ok(r);
	jbuf_puts(&r->out, ",\"version\":\"" TS_VERSION_STRING "\"");
	end_line(r);
	return 0;
}

/* {"ok":true,"MEMBER":[names…]}, and names (NULL-terminated, from the
 * library) freed. */
static int reply_names(struct tsd_request *r, const char *member, char **names)
{
	begin_ok(r);
	jbuf_puts(&r->out, ",\"");
	jbuf_puts(&r->out, member);
	jbuf_puts(&r->out, "\":[");
	for (int i = 0; names[i]; i++) {
		if (i)
			jbuf_putc(&r->out, ',');
		jbuf_string(&r->out, names[i], strlen(names[i]));
	}
	jbuf_putc(&r->out, ']');
	end_line(r);
	ts_free_names(names);
	return 0;
}

static int op_tables(struct tsd_request *r, const struct tsd_context *ctx)
{
	char **names = NULL;
	int rc = ts_tables(tsd_db(ctx), &names, NULL);
	if (rc < 0)
		return lib_fail(r, rc);
	return reply_names(r, "tables", names);
}

/* The JSON form of a column's default: the type's zero value when none
 * was given; nothing for ts, whose default is "now". */
static void put_column(struct jbuf *b, const ts_schema *s, int i)
{
	const ts_column *c = &s->columns[i];
	ts_value zero = {.type = c->type};
	int is_ts = s->key[s->nkey - 1] == i;
	jbuf_puts(b, "{\"name\":");
	jbuf_string(b, c->name, strlen(c->name));
	jbuf_printf(b, ",\"type\":\"%s\"", ts_type_name(c->type));
	if (c->dflt.type != TS_NONE || !is_ts) {
		jbuf_puts(b, ",\"default\":");
		if (c->type == TS_STRING || c->type == TS_BLOB)
			zero.v.s.ptr = "";
		jbuf_value(b, c->dflt.type != TS_NONE ? &c->dflt : &zero);
	}
	jbuf_putc(b, '}');
}

/* A rollup's definition as the schema answer's member
 * "rollup":{"source","every","group","columns":["COL:FN",...]} (the
 * columns as the definition names them: a rollup of a rollup names its
 * base columns); nothing for a table that is no rollup. */
static int put_rollup_definition(struct tsd_request *r)
{
	ts_rollup_state *st = NULL;
	char every[TS_DURATION_BUFSZ];
	int rc = ts_rollup_info(r->table, &st);
	if (rc == TS_ENOENT)
		return 0;
	if (rc < 0)
		return lib_fail(r, rc);
	ts_duration_format(st->every, every, sizeof every);
	jbuf_puts(&r->out, ",\"rollup\":{\"source\":");
	jbuf_string(&r->out, st->source, strlen(st->source));
	jbuf_printf(&r->out, ",\"every\":\"%s\",\"group\":%d,\"columns\":[", every, st->group);
	for (int i = 0; i < st->nfns; i++) {
		char spec[TS_NAME_MAX + 16];
		int n = snprintf(spec, sizeof spec, "%s:%s", st->fns[i].column,
		                 ts_aggfn_name(st->fns[i].fn));
		if (i)
			jbuf_putc(&r->out, ',');
		jbuf_string(&r->out, spec, (size_t)n < sizeof spec ? (size_t)n : sizeof spec - 1);
	}
	jbuf_puts(&r->out, "]}");
	ts_rollup_state_free(st);
	return 0;
}

static int op_schema(struct tsd_request *r, const struct tsd_context *ctx)
{
	const ts_schema *s;
	char ttl[TS_DURATION_BUFSZ];
	if (open_table(r, ctx) < 0)
		return r->code;
	s = r->schema;
	begin_ok(r);
	jbuf_puts(&r->out, ",\"columns\":[");
	for (int i = 0; i < s->ncolumns; i++) {
		if (i)
			jbuf_putc(&r->out, ',');
		put_column(&r->out, s, i);
	}
	jbuf_puts(&r->out, "],\"key\":[");
	for (int k = 0; k < s->nkey; k++) {
		const char *name = s->columns[s->key[k]].name;
		if (k)
			jbuf_putc(&r->out, ',');
		jbuf_string(&r->out, name, strlen(name));
	}
	ts_duration_format(s->ttl, ttl, sizeof ttl);
	jbuf_printf(&r->out, "],\"ttl\":\"%s\",\"version\":%u,\"on_duplicate\":\"%s\"", ttl,
	            s->version, ts_on_duplicate_name(s->on_duplicate));
	if (put_rollup_definition(r) < 0)
		return r->code;
	end_line(r);
	return 0;
}

/* A column object {"name","type","default"?} as a ts_column whose name
 * points into the JSON and whose default is a copy (val_free it). */
static int parse_column(struct tsd_request *r, const char *field, size_t i,
                        json_t *obj, ts_column *c)
{
	json_t *name = json_object_get(obj, "name"), *type = json_object_get(obj, "type");
	json_t *dflt = json_object_get(obj, "default");
	char why[TSD_MESSAGE_MAX / 2];
	int rc;
	*c = (ts_column){.name = NULL};
	if (!json_is_object(obj))
		return fail(r, TS_EPROTO, "%s[%zu]: expected a column object, got %s", field, i,
		            val_json_kind(obj));
	if (json_object_size(obj) != 2u + (dflt != NULL) || !json_is_string(name) || !json_is_string(type))
		return fail(r, TS_EPROTO, "%s[%zu]: a column is {\"name\":…,\"type\":…,\"default\":…}"
		            " with \"default\" optional", field, i);
	const char *tname;
	char what[80];
	snprintf(what, sizeof what, "%s[%zu]: \"name\"", field, i);
	if (get_text(r, name, JSON_TEXT_NAME, what, &c->name) < 0)
		return r->code;
	snprintf(what, sizeof what, "%s[%zu] (column \"%.32s\"): \"type\"", field, i, c->name);
	if (get_text(r, type, JSON_TEXT_NAME, what, &tname) < 0)
		return r->code;
	if (ts_type_parse(tname, &c->type) < 0)
		return fail(r, TS_ESCHEMA, "%s[%zu] (column \"%.64s\"): unknown type \"%.32s\" (want "
		            "int32, int64, double, timestamp, string or blob)", field, i, c->name, tname);
	if (dflt && (rc = val_from_json(c->type, dflt, &c->dflt, why, sizeof why)) < 0)
		return fail(r, rc, "%s[%zu] (column \"%.64s\"): default: %s", field, i, c->name, why);
	return 0;
}

static void free_columns(ts_column *cols, size_t n)
{
	for (size_t i = 0; i < n; i++)
		val_free(&cols[i].dflt);
	free(cols);
}

static int op_create(struct tsd_request *r, const struct tsd_context *ctx)
{
	json_t *cols, *key, *v;
	const char *name, *keynames[TS_KEY_COLUMNS_MAX];
	ts_column *columns = NULL;
	int64_t ttl = 0;
	ts_on_duplicate policy = TS_ON_DUPLICATE_REJECT;
	int has_ttl, has_policy, rc = 0;
	size_t i, n = 0;
	if (get_string(r, "table", JSON_TEXT_NAME, 1, &name) < 0 || get_array(r, "columns", 1, &cols) < 0 ||
	    get_array(r, "key", 1, &key) < 0 || get_duration(r, "ttl", &ttl, &has_ttl) < 0 ||
	    get_on_duplicate(r, &policy, &has_policy) < 0)
		return r->code;
	if (json_array_size(key) > TS_KEY_COLUMNS_MAX)
		return fail(r, TS_ESCHEMA, "key: more than %d columns", TS_KEY_COLUMNS_MAX);
	json_array_foreach(key, i, v) {
		char what[32];
		if (!json_is_string(v))
			return fail(r, TS_EPROTO, "key[%zu]: expected a column name, got %s", i,
			            val_json_kind(v));
		snprintf(what, sizeof what, "key[%zu]", i);
		if (get_text(r, v, JSON_TEXT_NAME, what, &keynames[i]) < 0)
			return r->code;
	}
	if (!(columns = calloc(json_array_size(cols) + 1, sizeof *columns)))
		return fail(r, TS_ENOMEM, "out of memory");
	json_array_foreach(cols, i, v) {
		if ((rc = parse_column(r, "columns", i, v, &columns[i])) < 0)
			break;
		n = i + 1;
	}
	if (rc == 0 && (rc = ts_create_keyed_v2(tsd_db(ctx), name, columns, (int)n, keynames,
	                                        (int)json_array_size(key), ttl, policy)) < 0)
		lib_fail(r, rc);
	free_columns(columns, json_array_size(cols));
	if (rc < 0)
		return r->code;
	begin_ok(r);
	end_line(r);
	return 0;
}

static int alter_add(struct tsd_request *r, json_t *add)
{
	json_t *v;
	size_t i;
	int rc = 0;
	json_array_foreach(add, i, v) {
		ts_column c;
		if ((rc = parse_column(r, "add", i, v, &c)) == 0 &&
		    (rc = ts_alter_add(r->table, &c)) < 0)
			lib_fail(r, rc);
		val_free(&c.dflt);
		if (rc < 0)
			return r->code;
	}
	return 0;
}

/* The type of the column called name: in the schema (case blind, as the
 * library compares new names), else among the first n columns added;
 * TS_NONE if none. */
static ts_type alter_type(const ts_schema *s, const ts_column *added, size_t n,
                          const char *name)
{
	for (int i = 0; i < s->ncolumns; i++)
		if (strcasecmp(s->columns[i].name, name) == 0)
			return s->columns[i].type;
	for (size_t i = 0; i < n; i++)
		if (strcasecmp(added[i].name, name) == 0)
			return added[i].type;
	return TS_NONE;
}

/* Check a whole alter before changing anything, with the library's own
 * words, so that a request failing its checks changes nothing.  (A
 * failure of the disk midway can still leave the changes before it
 * applied: each is durable on its own.) */
static int alter_check(struct tsd_request *r, json_t *add, json_t *widen)
{
	const char *table = ts_table_name(r->table);
	size_t i, n = json_array_size(add);
	ts_column *cols = calloc(n + 1, sizeof *cols);
	json_t *v;
	int rc = 0;
	if (!cols)
		return fail(r, TS_ENOMEM, "out of memory");
	json_array_foreach(add, i, v) {
		if ((rc = parse_column(r, "add", i, v, &cols[i])) < 0)
			break;
		if (alter_type(r->schema, cols, i, cols[i].name) != TS_NONE) {
			rc = fail(r, TS_EEXIST, "table \"%s\": column \"%.64s\": already exists", table,
			          cols[i].name);
			break;
		}
	}
	json_array_foreach(widen, i, v) {
		const char *name = json_string_value(v); /* op_alter checked: no NUL */
		ts_type t = rc < 0 ? TS_INT32 : alter_type(r->schema, cols, n, name);
		if (t == TS_NONE)
			rc = fail(r, TS_ENOENT, "table \"%s\": column \"%.80s\": no such column", table, name);
		else if (t != TS_INT32)
			rc = fail(r, TS_ESCHEMA, "table \"%s\": column \"%.64s\": only int32 can be widened, "
			          "it is %s", table, name, ts_type_name(t));
		if (rc < 0)
			break;
	}
	free_columns(cols, n);
	return rc;
}

static int op_alter(struct tsd_request *r, const struct tsd_context *ctx)
{
	json_t *add, *widen, *v;
	int64_t ttl;
	ts_on_duplicate policy;
	int has_ttl, has_policy, rc;
	size_t i;
	if (open_table(r, ctx) < 0 || get_array(r, "add", 0, &add) < 0 ||
	    get_array(r, "widen", 0, &widen) < 0 || get_duration(r, "ttl", &ttl, &has_ttl) < 0 ||
	    get_on_duplicate(r, &policy, &has_policy) < 0)
		return r->code;
	json_array_foreach(widen, i, v) {
		const char *name;
		char what[32];
		if (!json_is_string(v))
			return fail(r, TS_EPROTO, "widen[%zu]: expected a column name, got %s", i,
			            val_json_kind(v));
		snprintf(what, sizeof what, "widen[%zu]", i);
		if (get_text(r, v, JSON_TEXT_NAME, what, &name) < 0)
			return r->code;
	}
	if (alter_check(r, add, widen) < 0 || (add && alter_add(r, add) < 0))
		return r->code;
	json_array_foreach(widen, i, v) /* names checked above: no NUL */
		if ((rc = ts_alter_widen(r->table, json_string_value(v))) < 0)
			return lib_fail(r, rc);
	if (has_ttl && (rc = ts_alter_ttl(r->table, ttl)) < 0)
		return lib_fail(r, rc);
	if (has_policy && (rc = ts_alter_on_duplicate(r->table, policy)) < 0)
		return lib_fail(r, rc);
	begin_ok(r);
	end_line(r);
	return 0;
}

static int op_drop(struct tsd_request *r, const struct tsd_context *ctx)
{
	const char *name;
	int rc;
	if (get_string(r, "table", JSON_TEXT_NAME, 1, &name) < 0)
		return r->code;
	if ((rc = ts_drop(tsd_db(ctx), name)) < 0)
		return lib_fail(r, rc);
	tsd_replica_forget(name);
	begin_ok(r);
	end_line(r);
	return 0;
}

/* ---- rollups (docs/rollups.md) ---- */

/* The "columns" of create_rollup, ["COL:FN",...], as specs over the
 * source's schema src (COL one of its numeric columns: for a rollup of
 * a rollup, a value column of it, "cpu_max:max"). */
static int get_rollup_specs(struct tsd_request *r, const ts_schema *src, const char *source,
                            ts_aggspec **out, int *n)
{
	json_t *cols, *v;
	size_t i;
	*out = NULL;
	*n = 0;
	if (get_array(r, "columns", 1, &cols) < 0)
		return r->code;
	if (!(*out = calloc(json_array_size(cols) + 1, sizeof **out)))
		return fail(r, TS_ENOMEM, "out of memory");
	json_array_foreach(cols, i, v) {
		const char *text, *colon;
		char what[32];
		int col;
		snprintf(what, sizeof what, "columns[%zu]", i);
		if (!json_is_string(v))
			return fail(r, TS_EPROTO, "%s: expected \"COL:FN\", got %s", what,
			            val_json_kind(v));
		if (get_text(r, v, 0, what, &text) < 0)
			return r->code;
		if (!(colon = strrchr(text, ':')))
			return fail(r, TS_EINVAL, "%s \"%.80s\": want COL:FN", what, text);
		if ((col = val_column(src, text, (size_t)(colon - text), 0)) < 0)
			return fail(r, TS_ENOENT, "%s: no column \"%.*s\" in table \"%s\"", what,
			            (int)(colon - text) > 64 ? 64 : (int)(colon - text), text, source);
		if (ts_aggfn_parse(colon + 1, &(*out)[i].fn) < 0)
			return fail(r, TS_EINVAL, "%s \"%.80s\": want count, sum, min, max, mean, first "
			            "or last after the colon", what, text);
		(*out)[i].column = col;
		*n = (int)i + 1;
	}
	return 0;
}

/* {"ok":true} once the rollup exists (ts_create_rollup); the library's
 * errors as they are: an unknown source, a rollup of a rollup whose
 * every, group or functions do not combine. */
static int op_create_rollup(struct tsd_request *r, const struct tsd_context *ctx)
{
	ts_rollup_spec spec;
	ts_table *src = NULL;
	ts_schema *schema = NULL;
	ts_aggspec *specs = NULL;
	const char *name;
	int64_t group = 0;
	int has_every, has, rc;
	memset(&spec, 0, sizeof spec);
	if (get_string(r, "table", JSON_TEXT_NAME, 1, &name) < 0 ||
	    get_string(r, "from", JSON_TEXT_NAME, 1, &spec.source) < 0 ||
	    get_duration(r, "every", &spec.every, &has_every) < 0 ||
	    get_count(r, "group", &group, &has) < 0 || get_duration(r, "ttl", &spec.ttl, &has) < 0)
		return r->code;
	if (!has_every)
		return fail(r, TS_EPROTO, "missing field \"every\"");
	if ((rc = ts_table_open(tsd_db(ctx), spec.source, &src)) < 0 ||
	    (rc = ts_table_schema(src, &schema)) < 0) {
		ts_table_close(src);
		return lib_fail(r, rc);
	}
	ts_table_close(src);
	rc = get_rollup_specs(r, schema, spec.source, &specs, &spec.nspecs);
	ts_schema_free(schema);
	/* out of range: the library says so, as for tsstore -d */
	spec.group = group > INT32_MAX ? INT32_MAX : (int)group;
	spec.specs = specs;
	if (rc == 0 && (rc = ts_create_rollup(tsd_db(ctx), name, &spec)) < 0)
		lib_fail(r, rc);
	free(specs);
	if (rc < 0)
		return r->code;
	begin_ok(r);
	end_line(r);
	return 0;
}

/* {"ok":true,"rollups":[names, sorted]}: the rollups built directly
 * from the table (ts_rollups; rollups of those not included). */
static int op_rollups(struct tsd_request *r, const struct tsd_context *ctx)
{
	char **names = NULL;
	const char *table;
	int rc;
	/* the table opened first: ts_rollups lists none for a name that is
	 * no table, which must be ENOENT */
	if (open_table(r, ctx) < 0)
		return r->code;
	table = ts_table_name(r->table);
	if ((rc = ts_rollups(tsd_db(ctx), table, &names, NULL)) < 0)
		return lib_fail(r, rc);
	return reply_names(r, "rollups", names);
}

/* ---- insert ---- */

/* Whether the policy is replace, by name: the same test before and after
 * the library gains TS_ON_DUPLICATE_REPLACE. */
static int is_replace(ts_on_duplicate policy)
{
	return strcmp(ts_on_duplicate_name(policy), "replace") == 0;
}

/*
 * An insert's own "on_duplicate" (ts_insert_policy for this batch):
 * *policy, or TS_ON_DUPLICATE_TABLE when absent.  "replace" overwrites
 * stored rows, which a table whose own policy is not replace lets only
 * admin do (access.c): a write-level client refused it gets EAUTH, as
 * for an op above its level.
 */
static int get_insert_policy(struct tsd_request *r, const struct tsd_context *ctx, int *policy,
                             enum tsd_peer peer)
{
	ts_on_duplicate p;
	char msg[TSD_MESSAGE_MAX];
	int has;
	*policy = TS_ON_DUPLICATE_TABLE;
	if (get_on_duplicate(r, &p, &has) < 0 || !has)
		return r->code;
	*policy = (int)p;
	if (!is_replace(p) || is_replace(r->schema->on_duplicate) || r->granted >= TSD_ACCESS_ADMIN)
		return 0;
	tsd_access_refusal(ctx->cfg, peer, 0, "an insert with \"on_duplicate\":\"replace\" into a "
	                   "table whose policy is not replace", TSD_ACCESS_ADMIN, msg, sizeof msg);
	tsd_access_log(TSD_LOG_ACCESS, "%s: refused: %s", client_of(r), msg);
	return fail(r, TSD_EAUTH, "%s", msg);
}

/* The ok line of an insert. */
static void insert_answer(struct tsd_request *r)
{
	begin_ok(r);
	jbuf_printf(&r->out, ",\"inserted\":%zu", r->replica.inserted);
	if (r->replica.ignored)
		jbuf_printf(&r->out, ",\"ignored\":%zu", r->replica.ignored);
	/* The table's version once the batch is in (docs/corrections.md). */
	jbuf_printf(&r->out, ",\"version\":%" PRIu64, r->replica.version);
	end_line(r);
}

static int replica_wait(struct tsd_request *r, const struct tsd_context *ctx, uint64_t version);

static int op_insert(struct tsd_request *r, const struct tsd_context *ctx, enum tsd_peer peer)
{
	char why[TSD_MESSAGE_MAX];
	ts_value *vals = NULL;
	size_t n = 0, ignored = 0;
	uint64_t version = 0;
	int rc, policy, fast = r->rows_end > 0;
	if (open_table(r, ctx) < 0 || get_insert_policy(r, ctx, &policy, peer) < 0)
		return r->code;
	if (fast) {
		/* The values point into the line: nothing to free but vals. */
		if ((rc = jrows_parse(r->line + r->rows_start, r->rows_end - r->rows_start,
		                      r->schema, &vals, &n, why, sizeof why)) < 0)
			fail(r, rc, "%s", why);
	} else {
		json_t *rows;
		if ((rc = get_array(r, "rows", 1, &rows)) == 0 &&
		    (rc = jrows_from_json(rows, r->schema, &vals, &n, why, sizeof why)) < 0)
			fail(r, rc, "%s", why);
	}
	/* The rows were read by r->schema: the library reads them by the same
	 * version, whatever alter ran on another connection since. */
	if (rc == 0 && n && policy == TS_ON_DUPLICATE_TABLE &&
	    (rc = ts_insert_versioned(r->table, r->schema->version, vals, n, &ignored,
	                              &version)) < 0)
		lib_fail(r, rc);
	else if (rc == 0 && n && policy != TS_ON_DUPLICATE_TABLE &&
	         (rc = ts_insert_policy(r->table, r->schema->version, policy, vals, n, &ignored,
	                                &version)) < 0)
		lib_fail(r, rc);
	if (rc == 0 && !n && (rc = ts_table_version(r->table, &version)) < 0)
		lib_fail(r, rc);
	for (size_t i = 0; !fast && vals && i < n * (size_t)r->schema->ncolumns; i++)
		val_free(&vals[i]);
	free(vals);
	if (rc < 0)
		return r->code;
	/* Rows the table's duplicate policy skipped are not "inserted". */
	tsd_stats_rows(n - ignored, 0);
	r->replica.inserted = n - ignored;
	r->replica.ignored = ignored;
	if (replica_wait(r, ctx, version)) /* answered once a standby has it */
		return 0;
	insert_answer(r);
	return 0;
}

/* The ok line of a delete. */
static void delete_answer(struct tsd_request *r)
{
	begin_ok(r);
	if (r->replica.deleted == TS_COUNT_UNKNOWN)
		jbuf_puts(&r->out, ",\"deleted\":null");
	else
		jbuf_printf(&r->out, ",\"deleted\":%" PRIu64, r->replica.deleted);
	jbuf_printf(&r->out, ",\"version\":%" PRIu64, r->replica.version);
	end_line(r);
}

/* Under sync=replica, r (an insert or a delete) committed version:
 * answered by replica_step once a standby acknowledged it.  Returns
 * whether it waits (else: answer it now). */
static int replica_wait(struct tsd_request *r, const struct tsd_context *ctx, uint64_t version)
{
	r->replica.version = version;
	if (!ctx->cfg->sync_replica || !version)
		return 0;
	tsd_replica_committed(); /* a follow step ships it at once */
	r->replica.on = 1;
	r->replica.until = tsd_mono_ns() + ctx->cfg->replica_timeout;
	return 1;
}

/* A step of an insert or a delete under sync=replica: its answer once a
 * standby acknowledged its commit (replica.c), an error after
 * replica-timeout, else nothing after waiting up to TSD_REPLICA_WAIT for
 * an ack, the worker then free for other steps (a follow stream's among
 * them). */
static void replica_step(struct tsd_request *r)
{
	int streams = 0;
	const char *table = ts_table_name(r->table);
	if (tsd_replica_acked(table, r->replica.version, TSD_REPLICA_WAIT, &streams)) {
		if (r->op == TSD_OP_DELETE)
			delete_answer(r);
		else
			insert_answer(r);
		r->done = 1;
		return;
	}
	if (tsd_mono_ns() < r->replica.until)
		return;
	char msg[TSD_MESSAGE_MAX];
	tsd_replica_timed_out(msg, sizeof msg, streams, table, r->replica.version,
	                      r->op == TSD_OP_DELETE ? "the deletion is" : "the rows are");
	fail(r, TSD_EREPLICA, "%s", msg);
	put_error_line(r);
	r->done = 1;
}

/* ---- query, latest, aggregate ---- */

static int get_projection(struct tsd_request *r, ts_query *q)
{
	json_t *cols, *v;
	size_t i;
	if (get_array(r, "columns", 0, &cols) < 0 || !cols)
		return r->code;
	if (!(r->columns = calloc(json_array_size(cols) + 1, sizeof *r->columns)))
		return fail(r, TS_ENOMEM, "out of memory");
	json_array_foreach(cols, i, v) {
		const char *name;
		char what[32];
		if (!json_is_string(v))
			return fail(r, TS_EPROTO, "columns[%zu]: expected a column name, got %s", i,
			            val_json_kind(v));
		snprintf(what, sizeof what, "columns[%zu]", i);
		if (get_text(r, v, JSON_TEXT_NAME, what, &name) < 0)
			return r->code;
		if ((r->columns[i] = val_column(r->schema, name, strlen(name), 0)) < 0)
			return fail(r, TS_ENOENT, "columns[%zu]: no column \"%.64s\" in table \"%s\"", i,
			            name, ts_table_name(r->table));
	}
	q->columns = r->columns;
	q->ncolumns = (int)json_array_size(cols);
	return 0;
}

/* One of a pair of exclusive bound fields ("ge"/"gt"). */
static int get_bound(struct tsd_request *r, const char *incl, const char *excl, int slot,
                     const ts_value **vals, int *n, int *exclusive)
{
	int has_incl = json_object_get(r->json, incl) != NULL;
	int has_excl = json_object_get(r->json, excl) != NULL;
	if (has_incl && has_excl)
		return fail(r, TS_EPROTO, "fields \"%s\" and \"%s\" exclude each other", incl, excl);
	if (get_key(r, has_excl ? excl : incl, slot) < 0)
		return r->code;
	*vals = r->nkeys[slot] || has_incl || has_excl ? r->keys[slot] : NULL;
	*n = r->nkeys[slot];
	*exclusive = has_excl;
	return 0;
}

/* The selection fields query, delete and purge share -- "prefix",
 * "ge"/"gt", "le"/"lt", "from", "to" -- into q (with the table open),
 * so that a delete selects exactly the rows the same query returns. */
static int get_range(struct tsd_request *r, ts_query *q)
{
	if (get_key(r, "prefix", KEY_PREFIX) < 0 ||
	    get_bound(r, "ge", "gt", KEY_LOWER, &q->lower, &q->nlower, &q->lower_exclusive) < 0 ||
	    get_bound(r, "le", "lt", KEY_UPPER, &q->upper, &q->nupper, &q->upper_exclusive) < 0 ||
	    get_time(r, "from", &q->from, &q->has_from) < 0 ||
	    get_time(r, "to", &q->to, &q->has_to) < 0)
		return r->code;
	q->prefix = r->keys[KEY_PREFIX];
	q->nprefix = r->nkeys[KEY_PREFIX];
	return 0;
}

static int op_query(struct tsd_request *r, const struct tsd_context *ctx)
{
	ts_query q;
	int64_t limit = 0;
	int has, rc;
	memset(&q, 0, sizeof q);
	if (open_table(r, ctx) < 0 || get_range(r, &q) < 0 || get_key(r, "after", KEY_AFTER) < 0 ||
	    get_bool(r, "desc", &q.desc) < 0 || get_count(r, "limit", &limit, &has) < 0 ||
	    get_projection(r, &q) < 0)
		return r->code;
	if (json_object_get(r->json, "after")) {
		q.after = r->keys[KEY_AFTER];
		q.nafter = r->nkeys[KEY_AFTER];
	}
	q.limit = (uint64_t)limit;
	r->has_limit = limit > 0;
	if ((rc = ts_query_open(r->table, &q, &r->cursor)) < 0)
		return lib_fail(r, rc);
	return 0;
}

static int op_latest(struct tsd_request *r, const struct tsd_context *ctx)
{
	const ts_value *row;
	int n, rc;
	if (open_table(r, ctx) < 0 || get_key(r, "prefix", KEY_PREFIX) < 0)
		return r->code;
	if ((rc = ts_latest_open(r->table, r->keys[KEY_PREFIX], r->nkeys[KEY_PREFIX],
	                         &r->cursor)) < 0 ||
	    (rc = ts_cursor_next(r->cursor, &row, &n)) < 0)
		return lib_fail(r, rc);
	begin_ok(r);
	jbuf_puts(&r->out, ",\"row\":");
	if (row)
		jbuf_row(&r->out, row, n);
	else
		jbuf_puts(&r->out, "null");
	end_line(r);
	tsd_stats_rows(0, row != NULL);
	return 0;
}

/* "columns":{"bytes":["min","max"],...} into r->specs. */
static int get_specs(struct tsd_request *r, ts_aggregate *a)
{
	json_t *cols = json_object_get(r->json, "columns"), *fns, *fn;
	const char *name;
	size_t total = 0, i;
	if (!cols)
		return 0;
	if (!json_is_object(cols))
		return fail(r, TS_EPROTO, "field \"columns\": expected an object such as "
		            "{\"bytes\":[\"min\",\"max\"]}, got %s", val_json_kind(cols));
	json_object_foreach(cols, name, fns) {
		if (!json_is_array(fns))
			return fail(r, TS_EPROTO, "columns.%.64s: expected an array of functions, got %s",
			            name, val_json_kind(fns));
		total += json_array_size(fns);
	}
	if (!(r->specs = calloc(total + 1, sizeof *r->specs)))
		return fail(r, TS_ENOMEM, "out of memory");
	json_object_foreach(cols, name, fns) {
		int col = val_column(r->schema, name, strlen(name), 0);
		if (col < 0)
			return fail(r, TS_ENOENT, "columns: no column \"%.64s\" in table \"%s\"", name,
			            ts_table_name(r->table));
		json_array_foreach(fns, i, fn) {
			ts_aggspec *s = &r->specs[a->nspecs++];
			const char *text = NULL;
			char why[64];
			s->column = col;
			if (json_text(fn, JSON_TEXT_NAME, &text, why, sizeof why) < 0 ||
			    ts_aggfn_parse(text, &s->fn) < 0)
				return fail(r, TS_EINVAL, "columns.%.64s[%zu]: want one of count, sum, min, "
				            "max, mean, first, last", name, i);
		}
	}
	a->specs = r->specs;
	return 0;
}

static int op_aggregate(struct tsd_request *r, const struct tsd_context *ctx)
{
	ts_aggregate a;
	int64_t group = 0;
	int has_from, has_to, has_every, has_group, raw, rc;
	memset(&a, 0, sizeof a);
	if (open_table(r, ctx) < 0 || get_key(r, "prefix", KEY_PREFIX) < 0 ||
	    get_time(r, "from", &a.from, &has_from) < 0 || get_time(r, "to", &a.to, &has_to) < 0 ||
	    get_duration(r, "every", &a.every, &has_every) < 0 ||
	    get_count(r, "group", &group, &has_group) < 0 || get_specs(r, &a) < 0 ||
	    get_bool(r, "raw", &raw) < 0)
		return r->code;
	if (!has_from || !has_to || !has_every)
		return fail(r, TS_EPROTO, "missing field \"%s\"",
		            !has_from ? "from" : !has_to ? "to" : "every");
	if (group >= r->schema->nkey)
		return fail(r, TS_EINVAL, "field \"group\": %" PRId64 " key columns, the key has %d "
		            "and the last (ts) cannot be a group", group, r->schema->nkey);
	a.group = (int)group;
	a.prefix = r->keys[KEY_PREFIX];
	a.nprefix = r->nkeys[KEY_PREFIX];
	/* "raw": the table's own rows, never a rollup (TS_AGG_NO_ROLLUP) */
	if ((rc = ts_aggregate_open_flags(r->table, &a, raw ? TS_AGG_NO_ROLLUP : 0,
	                                  &r->cursor)) < 0)
		return lib_fail(r, rc);
	return 0;
}

/* ---- delete, purge, changes (docs/corrections.md) ---- */

/* {"ok":true,"deleted":N or null,"version":V}: null when the library
 * could not count the rows without reading them (TS_COUNT_UNKNOWN). */
static int op_delete(struct tsd_request *r, const struct tsd_context *ctx)
{
	ts_query q;
	uint64_t deleted = 0, version = 0;
	int rc;
	memset(&q, 0, sizeof q);
	if (open_table(r, ctx) < 0 || get_range(r, &q) < 0)
		return r->code;
	if ((rc = ts_delete(r->table, &q, &deleted, &version)) < 0)
		return lib_fail(r, rc);
	r->replica.deleted = deleted;
	if (replica_wait(r, ctx, version)) /* answered once a standby has it */
		return 0;
	delete_answer(r);
	return 0;
}

/* {"ok":true,"version":V} once no live file holds the deleted rows of
 * the range (the whole table without one). */
static int op_purge(struct tsd_request *r, const struct tsd_context *ctx)
{
	ts_query q;
	uint64_t version = 0;
	int rc;
	memset(&q, 0, sizeof q);
	if (open_table(r, ctx) < 0 || get_range(r, &q) < 0)
		return r->code;
	if ((rc = ts_purge(r->table, &q, &version)) < 0)
		return lib_fail(r, rc);
	begin_ok(r);
	jbuf_printf(&r->out, ",\"version\":%" PRIu64, version);
	end_line(r);
	return 0;
}

/* rows lines [prefix values..., from, to], then {"ok":true,"count":N},
 * streamed as a query's.  "since" is required: no default could be
 * right for a cache. */
static int op_changes(struct tsd_request *r, const struct tsd_context *ctx)
{
	ts_changes_spec spec;
	int64_t since = 0, until = 0, depth = 0;
	int has_since, has, rc;
	memset(&spec, 0, sizeof spec);
	if (open_table(r, ctx) < 0 || get_count(r, "since", &since, &has_since) < 0 ||
	    get_count(r, "until", &until, &has) < 0 ||
	    get_duration(r, "resolution", &spec.resolution, &has) < 0 ||
	    get_count(r, "depth", &depth, &has) < 0)
		return r->code;
	if (!has_since)
		return fail(r, TS_EPROTO, "missing field \"since\"");
	if (depth >= r->schema->nkey)
		return fail(r, TS_EINVAL, "field \"depth\": %" PRId64 " key columns, the key has %d "
		            "and the last (ts) cannot name a prefix", depth, r->schema->nkey);
	spec.since = (uint64_t)since;
	spec.until = (uint64_t)until;
	spec.depth = (int)depth;
	if ((rc = ts_changes_open(r->table, &spec, &r->cursor)) < 0)
		return lib_fail(r, rc);
	return 0;
}

/* Append the next "rows" line: up to chunk-rows rows or about
 * TSD_CHUNK_BYTES; when the cursor ends, the final line too. */
static void stream(struct tsd_request *r, const struct tsd_context *ctx)
{
	const ts_value *row = NULL;
	int n, rc = 0, rows = 0;
	size_t start = r->out.len;
	int chunk_rows = __atomic_load_n(&ctx->cfg->chunk_rows, __ATOMIC_RELAXED);
	while (rows < chunk_rows && r->out.len - start < TSD_CHUNK_BYTES &&
	       (rc = ts_cursor_next(r->cursor, &row, &n)) == 0 && row) {
		if (rows++ == 0) {
			begin_line(r);
			jbuf_puts(&r->out, "\"rows\":[");
		} else {
			jbuf_putc(&r->out, ',');
		}
		jbuf_row(&r->out, row, n);
	}
	if (rows)
		jbuf_put(&r->out, "]}\n", 3);
	r->count += (uint64_t)rows;
	tsd_stats_rows(0, (uint64_t)rows);
	if (rc < 0) {
		lib_fail(r, rc);
		put_error_line(r);
		r->done = 1;
	} else if (!row) {
		int more = r->has_limit && ts_cursor_more(r->cursor);
		const ts_value *key;
		int nkey;
		begin_ok(r);
		jbuf_printf(&r->out, ",\"count\":%" PRIu64, r->count);
		if (r->op == TSD_OP_QUERY)
			jbuf_printf(&r->out, ",\"more\":%s", more ? "true" : "false");
		if (r->op == TSD_OP_AGGREGATE && ts_cursor_source(r->cursor)) {
			/* the rollup of the table that answered the windows it
			 * holds (ts_cursor_source; the table's rows answered
			 * the others); absent when the table's rows alone did */
			const char *src = ts_cursor_source(r->cursor);
			jbuf_puts(&r->out, ",\"source\":");
			jbuf_string(&r->out, src, strlen(src));
		}
		if (more && ts_cursor_resume(r->cursor, &key, &nkey) == 0) {
			jbuf_puts(&r->out, ",\"next\":");
			jbuf_row(&r->out, key, nkey);
		}
		end_line(r);
		r->done = 1;
	}
}

/* ---- flush, stats, auth ---- */

/* Flush one table by name. */
static int flush_table(struct tsd_request *r, const struct tsd_context *ctx,
                       const char *name, int64_t before)
{
	ts_table *t;
	int rc = ts_table_open(tsd_db(ctx), name, &t);
	if (rc == 0) {
		rc = ts_flush(t, before);
		ts_table_close(t);
	}
	return rc < 0 ? lib_fail(r, rc) : 0;
}

static int op_flush(struct tsd_request *r, const struct tsd_context *ctx)
{
	const char *name;
	char **names = NULL;
	int64_t before = INT64_MAX;
	int has, rc = 0;
	if (get_string(r, "table", JSON_TEXT_NAME, 0, &name) < 0 || get_time(r, "before", &before, &has) < 0)
		return r->code;
	if (name) {
		rc = flush_table(r, ctx, name, before);
	} else if ((rc = ts_tables(tsd_db(ctx), &names, NULL)) < 0) {
		lib_fail(r, rc);
	} else {
		for (int i = 0; rc == 0 && names[i]; i++)
			if ((rc = flush_table(r, ctx, names[i], before)) < 0 && r->code == TS_ENOENT) {
				r->code = 0; /* dropped meanwhile */
				rc = 0;
			}
	}
	ts_free_names(names);
	if (rc < 0)
		return r->code;
	begin_ok(r);
	end_line(r);
	return 0;
}

/* A table's counters as "name":value members, and its TTL. */
static int put_table_stats(struct tsd_request *r, ts_table *t)
{
	ts_stat st[TS_STATS_MAX];
	int n, rc = ts_table_stats(t, st, TS_STATS_MAX, &n);
	if (rc < 0)
		return lib_fail(r, rc);
	for (int i = 0; i < n; i++) {
		jbuf_printf(&r->out, "%s\"%s\":%" PRId64, i ? "," : "", st[i].name, st[i].value);
		char text[ROWFMT_STAT_TEXT_MAX];
		const char *name;
		if (rowfmt_stat_text(&st[i], &name, text, sizeof text))
			jbuf_printf(&r->out, ",\"%s\":\"%s\"", name, text);
	}
	return 0;
}

/* ,"lineage":HEX,"epoch":N of e (stats, follow, promote). */
static void put_lineage(struct tsd_request *r, const ts_epoch *e)
{
	char hex[2 * TS_LINEAGE_SIZE + 1];
	tsd_lineage_hex(e, hex);
	jbuf_printf(&r->out, ",\"lineage\":\"%s\",\"epoch\":%" PRIu64, hex, e->epoch);
}

/* The database's lineage and epoch (and "fenced_by":M when a newer epoch
 * was heard of), for stats. */
static int put_epoch(struct tsd_request *r, const struct tsd_context *ctx)
{
	uint64_t newer;
	ts_epoch e;
	int rc = ts_epoch_get(tsd_db(ctx), &e);
	if (rc == TS_ENOENT) /* a standby that never reached its primary */
		return 0;
	if (rc < 0)
		return lib_fail(r, rc);
	put_lineage(r, &e);
	if (tsd_role_now(&newer) == TSD_ROLE_FENCED)
		jbuf_printf(&r->out, ",\"fenced_by\":%" PRIu64, newer);
	return 0;
}

static int op_stats(struct tsd_request *r, const struct tsd_context *ctx)
{
	const char *name;
	char **names = NULL;
	int rc;
	if (get_string(r, "table", JSON_TEXT_NAME, 0, &name) < 0)
		return r->code;
	if (name) {
		if (open_table(r, ctx) < 0)
			return r->code;
		begin_ok(r);
		jbuf_putc(&r->out, ',');
		if (put_table_stats(r, r->table) < 0)
			return r->code;
		end_line(r);
		return 0;
	}
	if ((rc = ts_tables(tsd_db(ctx), &names, NULL)) < 0)
		return lib_fail(r, rc);
	begin_ok(r);
	tsd_stats_json(&r->out);
	if (put_epoch(r, ctx) < 0)
		return r->code;
	if (ctx->ingest)
		tsd_ingest_stats_json(ctx->ingest, &r->out);
	if (ctx->graphite)
		tsd_graphite_stats_json(ctx->graphite, &r->out);
	jbuf_puts(&r->out, ",\"tables\":{");
	for (int i = 0, first = 1; names[i]; i++) {
		ts_table *t;
		if (ts_table_open(tsd_db(ctx), names[i], &t) < 0)
			continue; /* dropped meanwhile, or damaged: its own stats say */
		jbuf_printf(&r->out, "%s\"%s\":{", first ? "" : ",", names[i]);
		rc = put_table_stats(r, t);
		jbuf_putc(&r->out, '}');
		ts_table_close(t);
		first = 0;
		if (rc < 0)
			break;
	}
	ts_free_names(names);
	if (r->code)
		return r->code;
	jbuf_putc(&r->out, '}');
	end_line(r);
	return 0;
}

/* ---- check, snapshot (extensions for tsstore -s) ---- */

/* The problems a check found, as JSON objects, and how many. */
struct problems {
	struct jbuf list;
	uint64_t count;
};

static void add_problem(void *arg, const char *table, const char *file, const char *what)
{
	struct problems *p = arg;
	if (p->count++ >= TSD_CHECK_PROBLEMS_MAX)
		return;
	jbuf_puts(&p->list, p->count > 1 ? ",{\"table\":" : "{\"table\":");
	jbuf_string(&p->list, table, strlen(table));
	jbuf_puts(&p->list, ",\"file\":");
	jbuf_string(&p->list, file, strlen(file));
	jbuf_puts(&p->list, ",\"what\":");
	jbuf_string(&p->list, what, strlen(what));
	jbuf_putc(&p->list, '}');
}

/* {"ok":true,"count":N,"problems":[{"table","file","what"}...]}: the
 * check ran; N > 0 means damage (the list stops at
 * TSD_CHECK_PROBLEMS_MAX).  An error line means it could not run. */
static int op_check(struct tsd_request *r, const struct tsd_context *ctx)
{
	struct problems p = {0};
	ts_check_opts opts = {.problem = add_problem, .arg = &p};
	const char *name;
	int rc;
	if (get_string(r, "table", JSON_TEXT_NAME, 0, &name) < 0)
		return r->code;
	if ((rc = ts_check(tsd_db(ctx), name, &opts)) < 0 && rc != TS_ECORRUPT) {
		jbuf_free(&p.list);
		return lib_fail(r, rc);
	}
	if (p.list.failed) {
		jbuf_free(&p.list);
		return fail(r, TS_ENOMEM, "out of memory");
	}
	begin_ok(r);
	jbuf_printf(&r->out, ",\"count\":%" PRIu64 ",\"problems\":[", p.count);
	if (p.list.len)
		jbuf_put(&r->out, p.list.p, p.list.len);
	jbuf_putc(&r->out, ']');
	end_line(r);
	jbuf_free(&p.list);
	return 0;
}

/* A consistent copy of the database in the new directory dest, a path
 * on the daemon's machine (absolute, or relative to its working
 * directory); with "incremental", dest may hold an earlier copy, brought
 * up to date (ts_backup_incremental). */
static int op_snapshot(struct tsd_request *r, const struct tsd_context *ctx)
{
	const char *dest;
	int rc, incremental = 0;
	if (get_string(r, "dest", 0, 1, &dest) < 0 || get_bool(r, "incremental", &incremental) < 0)
		return r->code;
	if ((rc = incremental ? ts_backup_incremental(tsd_db(ctx), dest) : ts_backup(tsd_db(ctx), dest)) < 0)
		return lib_fail(r, rc);
	begin_ok(r);
	end_line(r);
	return 0;
}

/* The token: admin on this connection (access.c), or the connection
 * closed.  A daemon without a token has nothing to check it against:
 * that is refused, the connection kept, so that a client sending one
 * is told rather than left to think it has admin. */
static int op_auth(struct tsd_request *r, const struct tsd_context *ctx, int *authed)
{
	json_t *token = json_object_get(r->json, "token");
	if (!token)
		return fail(r, TS_EPROTO, "missing field \"token\"");
	if (!json_is_string(token))
		return fail(r, TS_EPROTO, "field \"token\": expected a string, got %s",
		            val_json_kind(token));
	if (!tsd_token_set(ctx->cfg)) {
		tsd_access_log(TSD_LOG_AUTH, "%s: authentication failed: this tsstored has no token",
		               client_of(r));
		return fail(r, TSD_EAUTH, "this tsstored has no token (--token FILE): there is "
		            "nothing to authenticate with");
	}
	if (!tsd_token_check(ctx->cfg, json_string_value(token), json_string_length(token))) {
		r->closes = 1;
		tsd_access_log(TSD_LOG_AUTH, "%s: authentication failed: wrong token; connection "
		               "closed", client_of(r));
		return fail(r, TSD_EAUTH, "wrong token; closing the connection");
	}
	*authed = 1;
	begin_ok(r);
	end_line(r);
	return 0;
}

/* ---- Dispatch ---- */

/* Requests shorter than this hold too few rows for the fast path to
 * matter. */
#define FAST_ROWS_MIN 256

/* The request as json_t.  An insert's "rows" are left out, as "[]", for
 * jrows to read straight from the line (op_insert). */
static json_t *load_json(struct tsd_request *r, json_error_t *err)
{
	const size_t flags = JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL;
	size_t start, end;
	char *rest;
	json_t *j;
	if (r->len < FAST_ROWS_MIN || !jrows_find(r->line, r->len, &start, &end))
		return json_loadb(r->line, r->len, flags, err);
	if (!(rest = malloc(r->len - (end - start) + 2))) {
		snprintf(err->text, sizeof err->text, "out of memory");
		err->column = 0;
		return NULL;
	}
	memcpy(rest, r->line, start);
	memcpy(rest + start, "[]", 2);
	memcpy(rest + start + 2, r->line + end, r->len - end);
	j = json_loadb(rest, r->len - (end - start) + 2, flags, err);
	free(rest);
	r->rows_start = start;
	r->rows_end = end;
	return j;
}

/* {"ok":true,"stream":"binary","lineage":HEX,"epoch":N}, then frames
 * (docs/standby.md section 2) for as long as the connection lasts. */
static int op_follow(struct tsd_request *r, const struct tsd_context *ctx)
{
	ts_epoch e;
	int rc = tsd_follow_open(tsd_db(ctx), r->json, &r->follow, r->msg, sizeof r->msg);
	if (rc < 0) {
		r->code = rc;
		return rc;
	}
	if ((rc = ts_epoch_get(tsd_db(ctx), &e)) < 0)
		return lib_fail(r, rc);
	begin_ok(r);
	jbuf_puts(&r->out, ",\"stream\":\"binary\"");
	put_lineage(r, &e);
	if (ctx->cfg->sync_replica) { /* the standby acks what it synced */
		jbuf_puts(&r->out, ",\"acks\":true");
		tsd_replica_attach(1);
		__atomic_store_n(&r->acks, 1, __ATOMIC_RELEASE);
	}
	end_line(r);
	return 0;
}

/* A stale primary takes over again ("force":true): its epoch raised
 * past the one that fenced it (ts_epoch_raise), writes taken again. */
static int take_over(struct tsd_request *r, const struct tsd_context *ctx, ts_epoch *e,
                     uint64_t newer)
{
	int rc = ts_epoch_raise(tsd_db(ctx), e);
	if (rc < 0)
		return lib_fail(r, rc);
	tsd_role_unfence();
	tsd_log("promote --force: this stale primary is the primary of epoch %" PRIu64
	        " (it had heard of epoch %" PRIu64 ")", e->epoch, newer);
	return 0;
}

/* {"ok":true,"role":"primary","lineage":HEX,"epoch":N}: the standby is a
 * primary of the next epoch (tsd_link_promote), or with "force":true a
 * stale primary one of the epoch after the one that fenced it; on a
 * primary, EINVAL. */
static int op_promote(struct tsd_request *r, const struct tsd_context *ctx)
{
	uint64_t newer;
	ts_epoch e;
	const json_t *force = json_object_get(r->json, "force");
	enum tsd_role role = tsd_role_now(&newer);
	if (force && !json_is_boolean(force))
		return fail(r, TS_EPROTO, "field \"force\": want true or false");
	if (role == TSD_ROLE_FENCED && json_is_true(force)) {
		if (take_over(r, ctx, &e, newer) < 0)
			return -1;
	} else if (role != TSD_ROLE_STANDBY || !ctx->link) {
		if (ts_epoch_get(tsd_db(ctx), &e) < 0)
			e.epoch = 0;
		if (role == TSD_ROLE_FENCED)
			return fail(r, TS_EINVAL, "this tsstored is a stale primary (epoch %"
			            PRIu64 ", a member of epoch %" PRIu64 " exists); promote is for a "
			            "standby (tsstored --follow); if the member of epoch %" PRIu64
			            " is lost for good, promote --force makes this one the primary "
			            "of epoch %" PRIu64, e.epoch, newer, newer, newer + 1);
		return fail(r, TS_EINVAL, "this tsstored is a primary (epoch %" PRIu64 "); "
		            "promote is for a standby (tsstored --follow)", e.epoch);
	} else if (tsd_link_promote(ctx->link, &e, r->msg, sizeof r->msg) < 0) {
		return fail(r, TS_EINVAL, "%s", r->msg);
	}
	if (ctx->ingest)
		tsd_ingest_set_db(ctx->ingest, tsd_db(ctx));
	begin_ok(r);
	jbuf_puts(&r->out, ",\"role\":\"primary\"");
	put_lineage(r, &e);
	end_line(r);
	return 0;
}

/* A step of a follow stream: frames, or the end of the connection on a
 * failure (no JSON line can follow binary frames) or at shutdown. */
static void follow_step(struct tsd_request *r, const struct tsd_context *ctx)
{
	int rc = 0;
	if (!__atomic_load_n(&ctx->stopping, __ATOMIC_RELAXED))
		rc = tsd_follow_step(r->follow, &r->out, r->msg, sizeof r->msg);
	else
		rc = TS_ECLOSED;
	if (rc < 0) {
		if (rc != TS_ECLOSED)
			tsd_log("%s: %s; closing the stream", client_of(r), r->msg);
		r->done = 1;
		r->closes = 1;
	}
}

/* Parse the line: an object with a string "op" naming an op. */
static int parse(struct tsd_request *r)
{
	json_error_t err;
	json_t *op, *id;
	const char *name;
	char why[64];
	if (r->cut == TSD_LINE_TOO_LONG) {
		r->closes = 1;
		return fail(r, TS_ETOOBIG, "request line longer than the limit; closing the connection");
	}
	if (r->cut == TSD_LINE_STALLED) {
		r->closes = 1;
		return fail(r, TS_EBUSY, "%s", r->line); /* the daemon's own message */
	}
	/* JSON never holds a raw NUL byte (one in a string is \u0000), and
	 * jansson reads one as an end of input rather than an error. */
	if (memchr(r->line, '\0', r->len))
		return fail(r, TS_EPROTO, "malformed JSON: a NUL byte at column %zu",
		            (size_t)((const char *)memchr(r->line, '\0', r->len) - r->line) + 1);
	if (!(r->json = load_json(r, &err)))
		return fail(r, TS_EPROTO, "malformed JSON at column %d: %s", err.column, err.text);
	if (!json_is_object(r->json))
		return fail(r, TS_EPROTO, "a request is a JSON object, got %s", val_json_kind(r->json));
	if ((id = json_object_get(r->json, "id")) &&
	    !(r->id = json_dumps(id, JSON_COMPACT | JSON_ENCODE_ANY)))
		return fail(r, TS_ENOMEM, "out of memory");
	op = json_object_get(r->json, "op");
	if (!op)
		return fail(r, TS_EPROTO, "missing field \"op\"");
	if (json_text(op, JSON_TEXT_NAME, &name, why, sizeof why) < 0)
		return fail(r, TS_EPROTO, "field \"op\": %s", why);
	if ((r->op = tsd_op_parse(name)) == TSD_OP_NONE)
		return fail(r, TS_EPROTO, "unknown op \"%.64s\"", name);
	return 0;
}

/* Whether the client at peer may run r's op (access.c); the EAUTH
 * error otherwise, before the fields are looked at.  A standby, or a
 * fenced primary, refuses the ops that change the database with
 * EREADONLY (tsd_write_refusal). */
static int check_access(struct tsd_request *r, const struct tsd_context *ctx, int authed,
                        enum tsd_peer peer)
{
	enum tsd_access need = tsd_access_op(r->op);
	char what[32], msg[TSD_MESSAGE_MAX];
	r->granted = tsd_access_granted(ctx->cfg, peer, authed);
	snprintf(what, sizeof what, "\"%s\"", tsd_op_name(r->op));
	if (r->granted >= need) {
		if (!tsd_write_refusal(r->op, TSD_HTTP_NOROUTE, what, msg, sizeof msg))
			return 0;
		return fail(r, TS_EREADONLY, "%s", msg);
	}
	tsd_access_refusal(ctx->cfg, peer, 0, what, need, msg, sizeof msg);
	tsd_access_log(TSD_LOG_ACCESS, "%s: refused: %s", client_of(r), msg);
	return fail(r, TSD_EAUTH, "%s", msg);
}

static int start(struct tsd_request *r, const struct tsd_context *ctx, int *authed,
                 enum tsd_peer peer)
{
	if (parse(r) < 0 || check_access(r, ctx, *authed, peer) < 0)
		return r->code;
	if (check_fields(r) < 0)
		return r->code;
	switch (r->op) {
	case TSD_OP_PING: return op_ping(r);
	case TSD_OP_TABLES: return op_tables(r, ctx);
	case TSD_OP_CREATE: return op_create(r, ctx);
	case TSD_OP_SCHEMA: return op_schema(r, ctx);
	case TSD_OP_ALTER: return op_alter(r, ctx);
	case TSD_OP_DROP: return op_drop(r, ctx);
	case TSD_OP_INSERT: return op_insert(r, ctx, peer);
	case TSD_OP_QUERY: return op_query(r, ctx);
	case TSD_OP_LATEST: return op_latest(r, ctx);
	case TSD_OP_AGGREGATE: return op_aggregate(r, ctx);
	case TSD_OP_FLUSH: return op_flush(r, ctx);
	case TSD_OP_STATS: return op_stats(r, ctx);
	case TSD_OP_CHECK: return op_check(r, ctx);
	case TSD_OP_SNAPSHOT: return op_snapshot(r, ctx);
	case TSD_OP_AUTH: return op_auth(r, ctx, authed);
	case TSD_OP_DELETE: return op_delete(r, ctx);
	case TSD_OP_PURGE: return op_purge(r, ctx);
	case TSD_OP_CHANGES: return op_changes(r, ctx);
	case TSD_OP_CREATE_ROLLUP: return op_create_rollup(r, ctx);
	case TSD_OP_ROLLUPS: return op_rollups(r, ctx);
	case TSD_OP_FOLLOW: return op_follow(r, ctx);
	case TSD_OP_PROMOTE: return op_promote(r, ctx);
	default: return fail(r, TS_EPROTO, "unknown op");
	}
}

void tsd_request_step(struct tsd_request *r, const struct tsd_context *ctx,
                      int *authed, enum tsd_peer peer)
{
	if (r->done)
		return;
	if (r->cut == TSD_LINE_GRAPHITE) {
		if (ctx->graphite)
			tsd_graphite_lines(ctx->graphite, r->line, r->len);
		r->done = 1;
		return;
	}
	if (r->http) {
		tsd_http_step(r->http, ctx, &r->out);
		r->closes = tsd_http_closes(r->http);
		r->done = !tsd_http_waits(r->http); /* sync=replica: stepped again */
		return;
	}
	if (!r->started) {
		r->started = 1;
		if (start(r, ctx, authed, peer) < 0) {
			r->out.len = 0; /* a half-written line never goes out */
			put_error_line(r);
			r->done = 1;
		} else if ((!r->cursor && !r->follow && !r->replica.on) || r->op == TSD_OP_LATEST) {
			r->done = 1;
		}
	} else if (r->follow) {
		follow_step(r, ctx);
	} else if (r->replica.on) {
		replica_step(r);
	}
	if (!r->done && !r->follow && !r->replica.on)
		stream(r, ctx);
	if (r->out.failed) {
		/* Out of memory for the output: what this step produced is
		 * lost, so the response ends with an error the client sees. */
		jbuf_free(&r->out);
		r->code = 0;
		fail(r, TS_ENOMEM, "out of memory for the response");
		put_error_line(r);
		r->done = 1;
	}
	if (r->done) {
		/* Let go of the snapshot and the table here, on the worker:
		 * closing them may wait for the database's lock, which the
		 * event loop must never do. */
		ts_cursor_close(r->cursor);
		ts_schema_free(r->schema);
		ts_table_close(r->table);
		r->cursor = NULL;
		r->schema = NULL;
		r->table = NULL;
	}
}
