/*
 * remote.c -- the admin command through tsstored (-s SOCKET).
 *
 * One connection per run (common/jconn.c), one request at a time: the
 * request is one JSON line; the response is zero or more "rows" lines
 * and a last line with "ok" (DESIGN.md section 5); rows go to the caller
 * one line at a time, so a result of any size streams.
 *
 * Values come back to the caller as the same ts_value the library would
 * have given (val_from_json with the column's type), so the printing code
 * is the direct mode's.  The daemon's error line carries the library's
 * code and message, which are the command's.
 *
 * SOCKET is any address tsstored listens on (common/client.c): a path
 * to its unix socket, "unix:PATH", or "tcp:HOST:PORT", over which the
 * token of --token-file, $TSSTORE_TOKEN or $TSSTORE_TOKEN_FILE is sent
 * first.  No wait for the daemon is
 * unbounded: the connect, each send and each next part of an answer wait
 * at most --timeout (timeout_of; common/jconn.c), and the command then
 * fails with "no answer from SOCKET within DUR".
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "client.h"
#include "remote.h"
#include "value.h"

struct cli_remote {
	const struct cli *cli; /* to connect again (reconnect) */
	char *addr;            /* where: -s's, or DATADIR's daemon socket (store.c) */
	struct jconn *conn;
};

/* ---- the connection ---- */

/* The limit on each wait for the daemon: --timeout or $TSSTORE_TIMEOUT,
 * else the command's default. */
static int64_t timeout_of(const struct cli *cli)
{
	static const char *const long_commands[] = {"check", "snapshot", "flush", "purge"};
	if (cli->timeout >= 0)
		return cli->timeout;
	for (size_t i = 0; cli->cmd && i < sizeof long_commands / sizeof long_commands[0]; i++)
		if (strcmp(cli->cmd->name, long_commands[i]) == 0)
			return CLI_TIMEOUT_LONG;
	return CLI_TIMEOUT_DEFAULT;
}

int cli_remote_connect(const struct cli *cli, const char *addr, struct cli_remote **out,
                       char *why, size_t whysz)
{
	struct cli_remote *rem = calloc(1, sizeof *rem);
	*out = NULL;
	if (!rem) {
		snprintf(why, whysz, "out of memory");
		return -1;
	}
	if (!(rem->addr = strdup(addr))) {
		free(rem);
		snprintf(why, whysz, "out of memory");
		return -1;
	}
	if (client_connect(addr, cli->token_file, timeout_of(cli), &rem->conn, why, whysz) < 0) {
		free(rem->addr);
		free(rem);
		return -1;
	}
	rem->cli = cli;
	*out = rem;
	return 0;
}

int cli_remote_open(const struct cli *cli, struct cli_remote **out)
{
	char why[CLI_MESSAGE_MAX];
	if (cli_remote_connect(cli, cli->socket, out, why, sizeof why) < 0)
		return cli_fail(cli, "%s", why);
	return CLI_OK;
}

/* A new connection in place of one the daemon closed while it was idle
 * (an insert fed slowly outlives the daemon's --idle-timeout).  Returns
 * 0, or TS_EIO with msg set. */
static int reconnect(struct cli_remote *rem, char *msg, size_t msgsz)
{
	struct jconn *conn = NULL;
	if (client_connect(rem->addr, rem->cli->token_file, timeout_of(rem->cli), &conn,
	                   msg, msgsz) < 0)
		return TS_EIO;
	jconn_close(rem->conn);
	rem->conn = conn;
	return 0;
}

long cli_remote_peer_pid(const struct cli_remote *rem)
{
	return jconn_peer_pid(rem->conn);
}

void cli_remote_close(struct cli_remote *rem)
{
	if (!rem)
		return;
	jconn_close(rem->conn);
	free(rem->addr);
	free(rem);
}

int cli_remote_call(struct cli_remote *rem, const struct jbuf *req, cli_remote_rows_fn *on_rows,
                    void *arg, json_t **reply, char *msg, size_t msgsz)
{
	return jconn_call(rem->conn, req, on_rows, arg, reply, msg, msgsz);
}

int cli_remote_run(const struct cli *cli, struct cli_remote *rem, const struct jbuf *req,
                   cli_remote_rows_fn *on_rows, void *arg, json_t **reply)
{
	char msg[CLI_MESSAGE_MAX];
	int rc = cli_remote_call(rem, req, on_rows, arg, reply, msg, sizeof msg);
	if (rc < 0)
		return cli_fail(cli, "%s", msg);
	return rc == 0 ? CLI_OK : CLI_FAILURE;
}

/* {"op":OP,"table":TABLE (when not NULL) -- the caller adds the rest and
 * the closing brace. */
static void begin_request(struct jbuf *b, const char *op, const char *table)
{
	jbuf_puts(b, "{\"op\":");
	jbuf_string(b, op, strlen(op));
	if (table) {
		jbuf_puts(b, ",\"table\":");
		jbuf_string(b, table, strlen(table));
	}
}

/* ---- schema ---- */

/* The columns of a schema reply into cols (n of them, defaults owned). */
static int reply_columns(const json_t *reply, ts_column *cols, int n, char *why, size_t whysz)
{
	for (int i = 0; i < n; i++) {
		json_t *c = json_array_get(json_object_get(reply, "columns"), (size_t)i);
		const char *name, *type;
		json_t *dflt = json_object_get(c, "default");
		/* Names from the server are checked as the server checks a
		 * client's (json_text): "a\u0000b" is no column "a". */
		int bad = json_text(json_object_get(c, "name"), JSON_TEXT_NAME, &name, why, whysz) < 0 ||
		          json_text(json_object_get(c, "type"), JSON_TEXT_NAME, &type, why, whysz) < 0;
		cols[i] = (ts_column){.name = name, .dflt = ts_none()};
		if (bad || ts_type_parse(type, &cols[i].type) < 0) {
			snprintf(why, whysz, "column %d", i);
			return TS_EIO;
		}
		if (dflt && val_from_json(cols[i].type, dflt, &cols[i].dflt, why, whysz) < 0)
			return TS_EIO;
	}
	return 0;
}

int cli_remote_schema(const struct cli *cli, struct cli_remote *rem, const char *table,
                      ts_schema **s)
{
	struct jbuf req = {0};
	json_t *reply = NULL, *columns, *key;
	ts_column *cols = NULL;
	int keyidx[TS_KEY_COLUMNS_MAX], n = 0, nkey, status, rc = 0;
	char why[CLI_MESSAGE_MAX] = "";
	*s = NULL;
	begin_request(&req, "schema", table);
	jbuf_putc(&req, '}');
	status = cli_remote_run(cli, rem, &req, NULL, NULL, &reply);
	jbuf_free(&req);
	if (status != CLI_OK)
		return status;
	columns = json_object_get(reply, "columns");
	key = json_object_get(reply, "key");
	n = (int)json_array_size(columns);
	nkey = (int)json_array_size(key);
	if (n == 0 || nkey == 0 || nkey > TS_KEY_COLUMNS_MAX || !(cols = calloc((size_t)n, sizeof *cols)))
		rc = TS_EIO;
	else
		rc = reply_columns(reply, cols, n, why, sizeof why);
	for (int k = 0; rc == 0 && k < nkey; k++) {
		const char *name;
		json_text(json_array_get(key, (size_t)k), JSON_TEXT_NAME, &name, why, sizeof why);
		if ((keyidx[k] = name ? val_column(&(ts_schema){.ncolumns = n, .columns = cols}, name,
		                                   strlen(name), 0)
		                      : -1) < 0)
			rc = TS_EIO;
	}
	int64_t ttl = 0;
	const char *ttltext = NULL;
	json_text(json_object_get(reply, "ttl"), 0, &ttltext, why, sizeof why);
	if (rc == 0 && (!ttltext || ts_duration_parse(ttltext, &ttl) < 0))
		rc = TS_EIO;
	if (rc == 0 && !(*s = cli_schema_new(cols, n, keyidx, nkey, ttl,
	                                     (uint32_t)json_integer_value(json_object_get(reply, "version")))))
		rc = TS_ENOMEM;
	for (int i = 0; cols && i < n; i++)
		val_free(&cols[i].dflt);
	free(cols);
	json_decref(reply);
	if (rc == TS_ENOMEM)
		return cli_fail(cli, "out of memory");
	if (rc < 0)
		return cli_fail(cli, "unexpected schema from tsstored%s%s", *why ? ": " : "", why);
	return CLI_OK;
}

/* ---- rows ---- */

/* What turning rows lines into values needs. */
struct rows_state {
	const struct cli *cli;
	const ts_type *types;    /* of each value of a row */
	const int *order;        /* value i of a printed row is value order[i] of the line's */
	int n;
	ts_value *row;           /* n values */
	cli_row_fn *fn;
	void *arg;
	int bad;                 /* a value could not be read: reported */
};

/* One row of a rows line into st->row: the line's values, reordered by
 * st->order, each read as its type.  Returns 0, or -1 after reporting
 * what is wrong (st->bad set).  st->row may hold values either way: the
 * caller frees them. */
static int decode_row(struct rows_state *st, const json_t *row)
{
	char why[CLI_MESSAGE_MAX];
	if (!json_is_array(row) || json_array_size(row) != (size_t)st->n) {
		cli_fail(st->cli, "unexpected row from tsstored");
		st->bad = 1;
		return -1;
	}
	for (int k = 0; k < st->n; k++) {
		int from = st->order ? st->order[k] : k;
		if (json_is_null(json_array_get(row, (size_t)from))) {
			st->row[k] = ts_none(); /* changes' wildcard: every prefix */
			continue;
		}
		if (val_from_json(st->types[k], json_array_get(row, (size_t)from), &st->row[k], why,
		                  sizeof why) < 0) {
			cli_fail(st->cli, "unexpected value from tsstored: %s", why);
			st->bad = 1;
			return -1;
		}
	}
	return 0;
}

/* The rows of one rows line, each decoded and handed to st->fn (jconn's
 * rows callback).  Returns 0 to go on, 1 to stop: a row could not be
 * read, or st->fn asked to stop. */
static int on_rows(void *arg, json_t *rows)
{
	struct rows_state *st = arg;
	size_t i;
	json_t *row;
	json_array_foreach(rows, i, row) {
		int stop = decode_row(st, row) < 0 || st->fn(st->arg, st->row, st->n) < 0;
		for (int k = 0; k < st->n; k++)
			val_free(&st->row[k]);
		if (stop)
			return 1;
	}
	return 0;
}

static void put_key(struct jbuf *b, const char *field, const ts_value *v, int n)
{
	jbuf_printf(b, ",\"%s\":", field);
	jbuf_row(b, v, n);
}

/* The type of an aggregate's value for spec sp (ts_aggregate_open). */
static ts_type agg_type(const ts_schema *s, const ts_aggspec *sp)
{
	ts_type t = s->columns[sp->column].type;
	switch (sp->fn) {
	case TS_AGG_COUNT:
		return TS_INT64;
	case TS_AGG_MEAN:
		return TS_DOUBLE;
	case TS_AGG_SUM:
		return t == TS_DOUBLE ? TS_DOUBLE : TS_INT64;
	default:
		return t;
	}
}

/*
 * The aggregate request's "columns" object, and where each spec's value
 * lands.  The object groups the functions by column, in the order the
 * columns first appear, and the daemon answers in that order; order[k]
 * is the position in the daemon's row of the k-th spec as given, so the
 * printed row follows the command line, as in the direct mode.
 */
static void put_specs(struct jbuf *b, const ts_schema *s, const struct cli_req *r, int *order)
{
	int done[CLI_AGG_SPECS_MAX] = {0}, pos = 0;
	jbuf_puts(b, ",\"columns\":{");
	for (int i = 0; i < r->nspecs; i++) {
		if (done[i])
			continue;
		const char *name = s->columns[r->specs[i].column].name;
		if (pos)
			jbuf_putc(b, ',');
		jbuf_string(b, name, strlen(name));
		jbuf_puts(b, ":[");
		for (int j = i, first = 1; j < r->nspecs; j++) {
			if (r->specs[j].column != r->specs[i].column)
				continue;
			const char *fn = ts_aggfn_name(r->specs[j].fn);
			if (!first)
				jbuf_putc(b, ',');
			jbuf_string(b, fn, strlen(fn));
			first = 0;
			done[j] = 1;
			order[j] = pos++;
		}
		jbuf_putc(b, ']');
	}
	jbuf_putc(b, '}');
}

/* What a rows request's answer holds: the type of each value of a
 * printed row, and (aggregate) where it is in the daemon's row. */
struct rows_shape {
	ts_type types[TS_KEY_COLUMNS_MAX + 1 + CLI_AGG_SPECS_MAX];
	int order[TS_KEY_COLUMNS_MAX + 1 + CLI_AGG_SPECS_MAX];
	ts_type *ctypes; /* types, or (a query's columns) an allocation */
	int n;
};

/* The aggregate request's fields after the table, and the shape of its
 * rows: the group's key values, the window start, then each spec's. */
static void put_aggregate(struct jbuf *req, const ts_schema *s, const struct cli_req *r,
                          struct rows_shape *sh)
{
	int n = 0;
	jbuf_printf(req, ",\"from\":%" PRId64 ",\"to\":%" PRId64 ",\"every\":%" PRId64
	                 ",\"group\":%d",
	            r->has_from ? r->from : CLI_AGG_FROM_DEFAULT,
	            r->has_to ? r->to : CLI_AGG_TO_DEFAULT, r->every, r->group);
	if (r->raw)
		jbuf_puts(req, ",\"raw\":true");
	for (int g = 0; g < r->group; g++)
		sh->types[n++] = s->columns[s->key[g]].type;
	sh->types[n++] = TS_TIMESTAMP;
	put_specs(req, s, r, sh->order + n);
	for (int k = 0; k < r->nspecs; k++) {
		sh->types[n + k] = agg_type(s, &r->specs[k]);
		sh->order[n + k] += n;
	}
	for (int g = 0; g < n; g++)
		sh->order[g] = g;
	sh->ctypes = sh->types;
	sh->n = n + r->nspecs;
}

/* A query's (or latest's) fields after the table, and the shape of its
 * rows: the schema's columns.  Returns -1 when out of memory. */
static int put_query(struct jbuf *req, const ts_schema *s, const struct cli_req *r,
                     struct rows_shape *sh)
{
	if (r->has_from)
		jbuf_printf(req, ",\"from\":%" PRId64, r->from);
	if (r->has_to)
		jbuf_printf(req, ",\"to\":%" PRId64, r->to);
	if (r->desc)
		jbuf_puts(req, ",\"desc\":true");
	if (r->limit)
		jbuf_printf(req, ",\"limit\":%" PRIu64, r->limit);
	if (r->nafter)
		put_key(req, "after", r->after, r->nafter);
	sh->n = s->ncolumns;
	if (!(sh->ctypes = malloc((size_t)sh->n * sizeof *sh->ctypes)))
		return -1;
	for (int k = 0; k < sh->n; k++)
		sh->ctypes[k] = s->columns[k].type;
	return 0;
}

/* A changes request's fields after the table, and the shape of its
 * rows: the depth key columns' values, then from and to. */
static void put_changes(struct jbuf *req, const ts_schema *s, const struct cli_req *r,
                        struct rows_shape *sh)
{
	const ts_changes_spec *c = &r->changes;
	int n = 0;
	jbuf_printf(req, ",\"since\":%" PRIu64, c->since);
	if (c->until)
		jbuf_printf(req, ",\"until\":%" PRIu64, c->until);
	if (c->resolution)
		jbuf_printf(req, ",\"resolution\":%" PRId64, c->resolution);
	if (c->depth)
		jbuf_printf(req, ",\"depth\":%d", c->depth);
	for (; n < c->depth && n < s->nkey; n++)
		sh->types[n] = s->columns[s->key[n]].type;
	sh->types[n++] = TS_TIMESTAMP;
	sh->types[n++] = TS_TIMESTAMP;
	sh->ctypes = sh->types;
	sh->n = n;
}

/* The request line of r into req, and the shape of its rows into sh.
 * Returns -1 when out of memory. */
static int rows_request(struct jbuf *req, const ts_schema *s, const struct cli_req *r,
                        struct rows_shape *sh)
{
	static const char *const ops[] = {
		[CLI_REQ_QUERY] = "query", [CLI_REQ_LATEST] = "latest",
		[CLI_REQ_AGGREGATE] = "aggregate", [CLI_REQ_DUMP] = "query",
		[CLI_REQ_CHANGES] = "changes",
	};
	int rc = 0;
	begin_request(req, ops[r->kind], r->table);
	if (r->nprefix)
		put_key(req, "prefix", r->prefix, r->nprefix);
	if (r->kind == CLI_REQ_AGGREGATE)
		put_aggregate(req, s, r, sh);
	else if (r->kind == CLI_REQ_CHANGES)
		put_changes(req, s, r, sh);
	else
		rc = put_query(req, s, r, sh);
	jbuf_putc(req, '}');
	return rc;
}

/* The key of a cut query's "next" (the values of every key column of s)
 * into more.  A "next" missing or not of that shape leaves more without
 * a key.  Returns CLI_OK, or CLI_FAILURE after the message. */
static int next_key(const struct cli *cli, const ts_schema *s, const json_t *next,
                    struct cli_more *more)
{
	ts_value key[TS_KEY_COLUMNS_MAX];
	char why[CLI_MESSAGE_MAX];
	int n = 0, rc = 0;
	if (!json_is_array(next) || json_array_size(next) != (size_t)s->nkey)
		return CLI_OK;
	for (; n < s->nkey && rc == 0; n++)
		rc = val_from_json(s->columns[s->key[n]].type, json_array_get(next, (size_t)n),
		                   &key[n], why, sizeof why);
	if (rc == 0)
		rc = cli_more_set_key(more, key, n);
	for (int i = 0; i < n; i++)
		val_free(&key[i]);
	if (rc == TS_ENOMEM)
		return cli_fail(cli, "out of memory");
	return rc < 0 ? cli_fail(cli, "unexpected \"next\" from tsstored: %s", why) : CLI_OK;
}

/* The last line of a rows request: whether the limit cut it and where to
 * resume, and the row of a latest ("row", not in a rows line).  Returns
 * CLI_OK or CLI_FAILURE. */
static int rows_reply(const struct cli_req *r, const ts_schema *s, json_t *reply,
                      struct rows_state *st, struct cli_more *more)
{
	json_t *one = json_object_get(reply, "row");
	const char *source = json_string_value(json_object_get(reply, "source"));
	int status = CLI_OK;
	if (r->kind == CLI_REQ_AGGREGATE)
		/* no "source": the table's own rows answered */
		snprintf(more->source, sizeof more->source, "%s", source ? source : r->table);
	more->more = json_is_true(json_object_get(reply, "more"));
	if (more->more)
		status = next_key(st->cli, s, json_object_get(reply, "next"), more);
	if (r->kind == CLI_REQ_LATEST && json_is_array(one)) {
		json_t *wrap = json_pack("[O]", one);
		if (on_rows(st, wrap))
			status = CLI_FAILURE;
		json_decref(wrap);
	}
	return status;
}

int cli_remote_rows(const struct cli *cli, struct cli_remote *rem, const struct cli_req *r,
                    const ts_schema *s, cli_row_fn *fn, void *arg, struct cli_more *more)
{
	struct jbuf req = {0};
	struct rows_shape sh = {.ctypes = NULL};
	json_t *reply = NULL;
	ts_value *row = NULL;
	int status;
	if (rows_request(&req, s, r, &sh) < 0 || !(row = calloc((size_t)sh.n, sizeof *row))) {
		status = cli_fail(cli, "out of memory");
		goto out;
	}
	struct rows_state st = {
		.cli = cli, .types = sh.ctypes, .order = r->kind == CLI_REQ_AGGREGATE ? sh.order : NULL,
		.n = sh.n, .row = row, .fn = fn, .arg = arg,
	};
	status = cli_remote_run(cli, rem, &req, on_rows, &st, &reply);
	if (status == CLI_OK)
		status = rows_reply(r, s, reply, &st, more);
out:
	json_decref(reply);
	jbuf_free(&req);
	free(row);
	if (sh.ctypes != sh.types)
		free(sh.ctypes);
	return status;
}

/* ---- the calls that leave their message (store.h) ---- */

/* Send req (then free it) and keep the reply; the call's code. */
static int simple(struct cli_remote *rem, struct jbuf *req, json_t **reply, char *msg,
                  size_t msgsz)
{
	jbuf_putc(req, '}');
	int rc = cli_remote_call(rem, req, NULL, NULL, reply, msg, msgsz);
	jbuf_free(req);
	return rc;
}

/* The op's reply member: an array of names, into *names (NULL-terminated,
 * for ts_free_names); table: the request's table, or NULL. */
static int remote_names(struct cli_remote *rem, const char *op, const char *table,
                        const char *member, char ***names, char *msg, size_t msgsz)
{
	struct jbuf req = {0};
	json_t *reply, *list;
	size_t i;
	int rc;
	*names = NULL;
	begin_request(&req, op, table);
	if ((rc = simple(rem, &req, &reply, msg, msgsz)) < 0)
		return rc;
	list = json_object_get(reply, member);
	if (!(*names = calloc(json_array_size(list) + 1, sizeof **names)))
		rc = TS_ENOMEM;
	for (i = 0; rc == 0 && i < json_array_size(list); i++) {
		const char *name;
		if (json_text(json_array_get(list, i), JSON_TEXT_NAME, &name, msg, msgsz) < 0) {
			rc = TS_EIO; /* a server's table name that is no name */
			break;
		}
		if (!((*names)[i] = strdup(name)))
			rc = TS_ENOMEM;
	}
	json_decref(reply);
	if (rc == TS_ENOMEM)
		snprintf(msg, msgsz, "out of memory");
	if (rc < 0) {
		ts_free_names(*names);
		*names = NULL;
	}
	return rc;
}

int cli_remote_tables(struct cli_remote *rem, char ***names, char *msg, size_t msgsz)
{
	return remote_names(rem, "tables", NULL, "tables", names, msg, msgsz);
}

/* A column as {"name":…,"type":…,"default":…} (no default when TS_NONE). */
static void put_column(struct jbuf *b, const ts_column *c)
{
	const char *type = ts_type_name(c->type);
	jbuf_puts(b, "{\"name\":");
	jbuf_string(b, c->name, strlen(c->name));
	jbuf_puts(b, ",\"type\":");
	jbuf_string(b, type, strlen(type));
	if (c->dflt.type != TS_NONE) {
		jbuf_puts(b, ",\"default\":");
		jbuf_value(b, &c->dflt);
	}
	jbuf_putc(b, '}');
}

int cli_remote_create(struct cli_remote *rem, const char *table, const ts_column *columns,
                      int ncolumns, const char *const *key, int nkey, int64_t ttl,
                      ts_on_duplicate on_duplicate, char *msg, size_t msgsz)
{
	struct jbuf req = {0};
	begin_request(&req, "create", table);
	jbuf_puts(&req, ",\"columns\":[");
	for (int i = 0; i < ncolumns; i++) {
		if (i)
			jbuf_putc(&req, ',');
		put_column(&req, &columns[i]);
	}
	jbuf_puts(&req, "],\"key\":[");
	for (int k = 0; k < nkey; k++) {
		if (k)
			jbuf_putc(&req, ',');
		jbuf_string(&req, key[k], strlen(key[k]));
	}
	jbuf_printf(&req, "],\"ttl\":%" PRId64, ttl);
	/* the default is left out: a daemon older than policies takes it */
	if (on_duplicate != TS_ON_DUPLICATE_REJECT)
		jbuf_printf(&req, ",\"on_duplicate\":\"%s\"", ts_on_duplicate_name(on_duplicate));
	return simple(rem, &req, NULL, msg, msgsz);
}

int cli_remote_alter(struct cli_remote *rem, const char *table, const ts_column *column,
                     const char *widen, int64_t ttl, char *msg, size_t msgsz)
{
	struct jbuf req = {0};
	begin_request(&req, "alter", table);
	if (column) {
		jbuf_puts(&req, ",\"add\":[");
		put_column(&req, column);
		jbuf_putc(&req, ']');
	} else if (widen) {
		jbuf_puts(&req, ",\"widen\":[");
		jbuf_string(&req, widen, strlen(widen));
		jbuf_putc(&req, ']');
	} else {
		jbuf_printf(&req, ",\"ttl\":%" PRId64, ttl);
	}
	return simple(rem, &req, NULL, msg, msgsz);
}

int cli_remote_alter_on_duplicate(struct cli_remote *rem, const char *table,
                                  ts_on_duplicate policy, char *msg, size_t msgsz)
{
	struct jbuf req = {0};
	begin_request(&req, "alter", table);
	jbuf_printf(&req, ",\"on_duplicate\":\"%s\"", ts_on_duplicate_name(policy));
	return simple(rem, &req, NULL, msg, msgsz);
}

int cli_remote_drop(struct cli_remote *rem, const char *table, char *msg, size_t msgsz)
{
	struct jbuf req = {0};
	begin_request(&req, "drop", table);
	return simple(rem, &req, NULL, msg, msgsz);
}

int cli_remote_create_rollup(struct cli_remote *rem, const char *name, const ts_rollup_spec *spec,
                             const ts_schema *src, char *msg, size_t msgsz)
{
	struct jbuf req = {0};
	begin_request(&req, "create_rollup", name);
	jbuf_puts(&req, ",\"from\":");
	jbuf_string(&req, spec->source, strlen(spec->source));
	jbuf_printf(&req, ",\"every\":%" PRId64 ",\"group\":%d,\"columns\":[", spec->every,
	            spec->group);
	for (int i = 0; i < spec->nspecs; i++) {
		char text[TS_NAME_MAX + 16];
		int n = snprintf(text, sizeof text, "%s:%s", src->columns[spec->specs[i].column].name,
		                 ts_aggfn_name(spec->specs[i].fn));
		if (i)
			jbuf_putc(&req, ',');
		jbuf_string(&req, text, (size_t)n < sizeof text ? (size_t)n : sizeof text - 1);
	}
	jbuf_printf(&req, "],\"ttl\":%" PRId64, spec->ttl);
	return simple(rem, &req, NULL, msg, msgsz);
}

int cli_remote_rollups(struct cli_remote *rem, const char *table, char ***names, char *msg,
                       size_t msgsz)
{
	return remote_names(rem, "rollups", table, "rollups", names, msg, msgsz);
}

int cli_remote_rollup_def(struct cli_remote *rem, const char *table, struct cli_rollup_def *def,
                          char *msg, size_t msgsz)
{
	struct jbuf req = {0};
	json_t *reply, *ru, *c;
	size_t i, at = 0;
	int rc;
	memset(def, 0, sizeof *def);
	begin_request(&req, "schema", table);
	if ((rc = simple(rem, &req, &reply, msg, msgsz)) < 0)
		return rc;
	if (json_is_object(ru = json_object_get(reply, "rollup"))) {
		const char *source = json_string_value(json_object_get(ru, "source"));
		const char *every = json_string_value(json_object_get(ru, "every"));
		def->is_rollup = 1;
		snprintf(def->source, sizeof def->source, "%s", source ? source : "?");
		snprintf(def->every, sizeof def->every, "%s", every ? every : "?");
		def->group = (int)json_integer_value(json_object_get(ru, "group"));
		json_array_foreach(json_object_get(ru, "columns"), i, c)
			if (json_is_string(c) && at < sizeof def->columns)
				at += (size_t)snprintf(def->columns + at, sizeof def->columns - at, "%s%s",
				                       i ? "," : "", json_string_value(c));
	}
	json_decref(reply);
	return 0;
}

int cli_remote_insert(struct cli_remote *rem, const char *table, const ts_value *rows, size_t n,
                      int ncolumns, int policy, size_t *ignored, char *msg, size_t msgsz)
{
	struct jbuf req = {0};
	json_t *reply = NULL, *k;
	int rc;
	*ignored = 0;
	/* Nothing of this batch was sent yet: a connection the daemon
	 * closed meanwhile is replaced without any risk of storing twice. */
	if (jconn_closed(rem->conn) && (rc = reconnect(rem, msg, msgsz)) < 0)
		return rc;
	begin_request(&req, "insert", table);
	jbuf_puts(&req, ",\"rows\":[");
	for (size_t i = 0; i < n; i++) {
		if (i)
			jbuf_putc(&req, ',');
		jbuf_row(&req, rows + i * (size_t)ncolumns, ncolumns);
	}
	jbuf_putc(&req, ']');
	if (policy != TS_ON_DUPLICATE_TABLE)
		jbuf_printf(&req, ",\"on_duplicate\":\"%s\"",
		            ts_on_duplicate_name((ts_on_duplicate)policy));
	if ((rc = simple(rem, &req, &reply, msg, msgsz)) < 0)
		return rc;
	/* "ignored": the duplicates the table's policy skipped, when any */
	k = json_object_get(reply, "ignored");
	if (json_is_integer(k) && json_integer_value(k) > 0 && (size_t)json_integer_value(k) <= n)
		*ignored = (size_t)json_integer_value(k);
	json_decref(reply);
	return 0;
}

/* A delete's or purge's request: the table and r's range, as a query's
 * fields. */
static void range_request(struct jbuf *req, const char *op, const struct cli_req *r)
{
	begin_request(req, op, r->table);
	if (r->nprefix)
		put_key(req, "prefix", r->prefix, r->nprefix);
	if (r->has_from)
		jbuf_printf(req, ",\"from\":%" PRId64, r->from);
	if (r->has_to)
		jbuf_printf(req, ",\"to\":%" PRId64, r->to);
}

/* The "version" of an answer, 0 when missing. */
static uint64_t reply_version(const json_t *reply)
{
	json_t *v = json_object_get(reply, "version");
	return json_is_integer(v) && json_integer_value(v) > 0 ? (uint64_t)json_integer_value(v) : 0;
}

int cli_remote_delete(struct cli_remote *rem, const struct cli_req *r, uint64_t *deleted,
                      uint64_t *version, char *msg, size_t msgsz)
{
	struct jbuf req = {0};
	json_t *reply = NULL, *d;
	int rc;
	range_request(&req, "delete", r);
	if ((rc = simple(rem, &req, &reply, msg, msgsz)) < 0)
		return rc;
	d = json_object_get(reply, "deleted"); /* null: not counted */
	*deleted = json_is_integer(d) && json_integer_value(d) >= 0
	               ? (uint64_t)json_integer_value(d) : TS_COUNT_UNKNOWN;
	*version = reply_version(reply);
	json_decref(reply);
	return 0;
}

int cli_remote_purge(struct cli_remote *rem, const struct cli_req *r, uint64_t *version,
                     char *msg, size_t msgsz)
{
	struct jbuf req = {0};
	json_t *reply = NULL;
	int rc;
	range_request(&req, "purge", r);
	if ((rc = simple(rem, &req, &reply, msg, msgsz)) < 0)
		return rc;
	*version = reply_version(reply);
	json_decref(reply);
	return 0;
}

int cli_remote_flush(struct cli_remote *rem, const char *table, int64_t before, char *msg,
                     size_t msgsz)
{
	struct jbuf req = {0};
	begin_request(&req, "flush", table);
	if (before != INT64_MAX)
		jbuf_printf(&req, ",\"before\":%" PRId64, before);
	return simple(rem, &req, NULL, msg, msgsz);
}

int cli_remote_stats(struct cli_remote *rem, const char *table, cli_stat_fn *fn, void *arg,
                     char *msg, size_t msgsz)
{
	struct jbuf req = {0};
	json_t *reply, *v;
	const char *name;
	int rc;
	begin_request(&req, "stats", table);
	if ((rc = simple(rem, &req, &reply, msg, msgsz)) < 0)
		return rc;
	json_object_foreach(reply, name, v) {
		if (json_is_integer(v))
			fn(arg, name, json_integer_value(v), NULL);
		else if (json_is_string(v) &&
		         (strcmp(name, "ttl") == 0 || strcmp(name, "on_duplicate") == 0))
			fn(arg, name, 0, json_string_value(v));
	}
	json_decref(reply);
	return 0;
}

int cli_remote_status(struct cli_remote *rem, cli_stat_fn *fn, void *arg, char *msg,
                      size_t msgsz)
{
	static const char *const counters[] = {"lag_lsn", "connects", "frames", "tablet_bytes",
	                                       "log_bytes"};
	struct jbuf req = {0};
	json_t *reply, *sb;
	char text[32];
	int rc;
	begin_request(&req, "stats", NULL);
	if ((rc = simple(rem, &req, &reply, msg, msgsz)) < 0)
		return rc;
	const char *role = json_string_value(json_object_get(reply, "role"));
	const char *from = json_string_value(json_object_get(reply, "promoted_from"));
	const json_t *epoch = json_object_get(reply, "epoch"), *fenced = json_object_get(reply, "fenced_by");
	fn(arg, "role", 0, role ? role : "primary"); /* a tsstored before standbys */
	if (json_is_integer(epoch)) /* not before a standby first reached its primary */
		fn(arg, "epoch", json_integer_value(epoch), NULL);
	if (json_is_integer(fenced))
		fn(arg, "fenced_by", json_integer_value(fenced), NULL);
	if (from)
		fn(arg, "promoted_from", 0, from);
	if ((sb = json_object_get(reply, "standby")) && json_is_object(sb)) {
		const char *primary = json_string_value(json_object_get(sb, "primary"));
		fn(arg, "primary", 0, primary ? primary : "?");
		fn(arg, "connected", 0, json_is_true(json_object_get(sb, "connected")) ? "yes" : "no");
		fn(arg, counters[0], json_integer_value(json_object_get(sb, counters[0])), NULL);
		snprintf(text, sizeof text, "%.3f",
		         json_number_value(json_object_get(sb, "lag_seconds")));
		fn(arg, "lag_seconds", 0, text);
		for (size_t i = 1; i < sizeof counters / sizeof counters[0]; i++)
			fn(arg, counters[i], json_integer_value(json_object_get(sb, counters[i])), NULL);
	}
	json_decref(reply);
	return 0;
}

int cli_remote_promote(struct cli_remote *rem, int force, cli_stat_fn *fn, void *arg, char *msg,
                       size_t msgsz)
{
	struct jbuf req = {0};
	json_t *reply;
	int rc;
	begin_request(&req, "promote", NULL);
	if (force)
		jbuf_puts(&req, ",\"force\":true");
	if ((rc = simple(rem, &req, &reply, msg, msgsz)) < 0)
		return rc;
	const char *role = json_string_value(json_object_get(reply, "role"));
	const char *lineage = json_string_value(json_object_get(reply, "lineage"));
	fn(arg, "role", 0, role ? role : "?");
	fn(arg, "epoch", json_integer_value(json_object_get(reply, "epoch")), NULL);
	fn(arg, "lineage", 0, lineage ? lineage : "?");
	json_decref(reply);
	return 0;
}

int cli_remote_check(struct cli_remote *rem, const char *table,
                     const struct cli_check_report *rep, uint64_t *count, char *msg, size_t msgsz)
{
	struct jbuf req = {0};
	json_t *reply, *p;
	size_t i;
	int rc;
	*count = 0;
	begin_request(&req, "check", table);
	if ((rc = simple(rem, &req, &reply, msg, msgsz)) < 0)
		return rc;
	json_array_foreach(json_object_get(reply, "problems"), i, p) {
		const char *t = json_string_value(json_object_get(p, "table"));
		const char *f = json_string_value(json_object_get(p, "file"));
		const char *w = json_string_value(json_object_get(p, "what"));
		rep->problem(rep->arg, t ? t : "?", f ? f : "?", w ? w : "?");
	}
	*count = (uint64_t)json_integer_value(json_object_get(reply, "count"));
	json_decref(reply);
	return 0;
}

int cli_remote_snapshot(struct cli_remote *rem, const char *dest, int incremental, char *msg,
                        size_t msgsz)
{
	struct jbuf req = {0};
	char *abs = NULL;
	if (dest[0] != '/') { /* the daemon's working directory is not ours */
		char *cwd = getcwd(NULL, 0);
		if (cwd && (abs = malloc(strlen(cwd) + strlen(dest) + 2)))
			sprintf(abs, "%s/%s", cwd, dest);
		free(cwd);
		if (!abs) {
			snprintf(msg, msgsz, "%s: cannot make the path absolute", dest);
			return TS_ENOMEM;
		}
		dest = abs;
	}
	begin_request(&req, "snapshot", NULL);
	jbuf_puts(&req, ",\"dest\":");
	jbuf_string(&req, dest, strlen(dest));
	if (incremental)
		jbuf_puts(&req, ",\"incremental\":true");
	free(abs);
	return simple(rem, &req, NULL, msg, msgsz);
}
