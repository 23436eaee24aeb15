/*
 * store.c -- the store of a run (store.h): the direct mode on libtsstore,
 * and the dispatch to remote.c for the daemon mode.
 *
 * A table handle is opened per call and closed at its end; the commands
 * make one or two calls each, and a handle held across them would only
 * pin a schema that an alter elsewhere may have changed.
 *
 * -d DATADIR while tsstored serves DATADIR: the commands that write need
 * the database's write lock, which the daemon holds.  Rather than fail,
 * the store then goes through that daemon, on the unix socket it listens
 * on in DATADIR unless told otherwise (CLI_DAEMON_SOCKET_NAME), as -s
 * would: the output is the same byte for byte (remote.c), and `make run`
 * followed by `tsstore insert` in another shell just works.  A daemon
 * that does not listen there, or another writer, leaves the command
 * failing with the lock's message, which then names the daemon and how
 * to reach it (through_daemon).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "remote.h"
#include "rowfmt.h"
#include "store.h"
#include "value.h"

struct cli_store {
	ts_db *db;              /* direct mode */
	struct cli_remote *rem; /* daemon mode */
	char msg[CLI_MESSAGE_MAX]; /* of the last failure */
};

/* The pid written in DATADIR/LOCK by the lock's holder (lib/db.c), or 0
 * when there is none to read. */
static long lock_pid(const char *datadir)
{
	char path[4096];
	long pid = 0;
	FILE *f;
	if ((size_t)snprintf(path, sizeof path, "%s/LOCK", datadir) >= sizeof path ||
	    !(f = fopen(path, "r")))
		return 0;
	if (fscanf(f, "%ld", &pid) != 1 || pid < 0)
		pid = 0;
	fclose(f);
	return pid;
}

/* Whether the process pid is a tsstored (its /proc comm). */
static int is_tsstored(long pid)
{
	char path[64], comm[32] = "";
	FILE *f;
	if (pid <= 0)
		return 0;
	snprintf(path, sizeof path, "/proc/%ld/comm", pid);
	if (!(f = fopen(path, "r")))
		return 0;
	if (!fgets(comm, sizeof comm, f))
		comm[0] = '\0';
	fclose(f);
	return strcmp(comm, "tsstored\n") == 0;
}

/*
 * The database of -d is locked (CLI_LOCKED): go through the daemon on
 * DATADIR/tsstored.sock when it is the process holding the lock (the
 * socket's peer pid is the one in DATADIR/LOCK, so a socket of some other
 * daemon is never taken for it).  Otherwise fail with the lock's message,
 * and, when the lock is a tsstored's, what stood in the way and the -s to
 * use.  Returns CLI_OK with st->rem set, or CLI_FAILURE after the message.
 */
static int through_daemon(const struct cli *cli, struct cli_store *st)
{
	char locked[CLI_MESSAGE_MAX], sock[4096], why[CLI_MESSAGE_MAX] = "";
	long pid = lock_pid(cli->datadir), peer;
	struct stat sb;
	int n, err;
	snprintf(locked, sizeof locked, "%s", *ts_errmsg(NULL) ? ts_errmsg(NULL)
	                                                        : ts_strerror(TS_ELOCKED));
	n = snprintf(sock, sizeof sock, "%s/" CLI_DAEMON_SOCKET_NAME, cli->datadir);
	if (n < 0 || (size_t)n >= sizeof sock)
		return cli_fail(cli, "%s", locked);
	err = stat(sock, &sb) < 0 ? errno : S_ISSOCK(sb.st_mode) ? 0 : ENOTSOCK;
	if (err == 0 && cli_remote_connect(cli, sock, &st->rem, why, sizeof why) == 0) {
		peer = cli_remote_peer_pid(st->rem);
		if (pid > 0 && peer == pid)
			return CLI_OK;
		cli_remote_close(st->rem);
		st->rem = NULL;
		if (!is_tsstored(pid))
			return cli_fail(cli, "%s", locked);
		return cli_fail(cli, "%s: tsstored serves it, but %s is the socket of another process "
		                "(pid %ld); go through it with -s SOCKET, SOCKET one of its unix sockets",
		                locked, sock, peer);
	}
	if (!is_tsstored(pid))
		return cli_fail(cli, "%s", locked);
	if (err == 0)
		return cli_fail(cli, "%s: tsstored serves it, but %s; go through it with -s SOCKET, "
		                "SOCKET one of its unix sockets", locked, why);
	return cli_fail(cli, "%s: tsstored serves it, not on %s (%s); go through it with -s SOCKET, "
	                "SOCKET one of its unix sockets (its --listen unix:PATH)", locked, sock,
	                strerror(err));
}

int cli_store_open(const struct cli *cli, unsigned flags, struct cli_store **out)
{
	struct cli_store *st = calloc(1, sizeof *st);
	int status;
	*out = NULL;
	if (!st)
		return cli_fail(cli, "out of memory");
	if (cli->socket)
		status = cli_remote_open(cli, &st->rem);
	else if ((status = cli_open(cli, flags, &st->db)) == CLI_LOCKED)
		status = through_daemon(cli, st);
	if (status != CLI_OK) {
		free(st);
		return status;
	}
	*out = st;
	return CLI_OK;
}

int cli_store_close(const struct cli *cli, struct cli_store *st, int status)
{
	if (!st)
		return status;
	if (st->rem)
		cli_remote_close(st->rem);
	else
		status = cli_close(cli, st->db, status);
	free(st);
	return status;
}

ts_db *cli_store_db(struct cli_store *st)
{
	return st->db;
}

int64_t cli_store_now(struct cli_store *st)
{
	const char *env = getenv("TSSTORE_NOW");
	struct timespec t;
	int64_t now;
	if (st->db)
		return ts_now(st->db);
	if (env && *env && ts_time_parse(env, &now) == 0)
		return now;
	clock_gettime(CLOCK_REALTIME, &t);
	return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

int cli_store_schema(const struct cli *cli, struct cli_store *st, const char *table,
                     ts_schema **s)
{
	ts_table *t = NULL;
	ts_schema *lib = NULL;
	int rc, status;
	*s = NULL;
	if (st->rem)
		return cli_remote_schema(cli, st->rem, table, s);
	if ((status = cli_table_open(cli, st->db, table, &t)) != CLI_OK)
		return status;
	rc = ts_table_schema(t, &lib);
	ts_table_close(t);
	if (rc < 0)
		return cli_fail_lib(cli, rc);
	*s = cli_schema_new(lib->columns, lib->ncolumns, lib->key, lib->nkey, lib->ttl, lib->version);
	ts_schema_free(lib);
	return *s ? CLI_OK : cli_fail(cli, "out of memory");
}

/* The range of r as ts_delete and ts_purge take it: query's fields,
 * without order, limit, projection or resume key. */
static ts_query range_of(const struct cli_req *r)
{
	ts_query q = {
		.prefix = r->nprefix ? r->prefix : NULL,
		.nprefix = r->nprefix,
		.from = r->from,
		.to = r->to,
		.has_from = r->has_from,
		.has_to = r->has_to,
	};
	return q;
}

/* Open the cursor of r on t. */
static int open_cursor(ts_table *t, const struct cli_req *r, ts_cursor **cur)
{
	switch (r->kind) {
	case CLI_REQ_LATEST:
		return ts_latest_open(t, r->prefix, r->nprefix, cur);
	case CLI_REQ_CHANGES:
		return ts_changes_open(t, &r->changes, cur);
	case CLI_REQ_AGGREGATE: {
		ts_aggregate a = {
			.prefix = r->prefix,
			.nprefix = r->nprefix,
			.from = r->has_from ? r->from : CLI_AGG_FROM_DEFAULT,
			.to = r->has_to ? r->to : CLI_AGG_TO_DEFAULT,
			.every = r->every,
			.group = r->group,
			.specs = r->specs,
			.nspecs = r->nspecs,
		};
		return ts_aggregate_open_flags(t, &a, r->raw ? TS_AGG_NO_ROLLUP : 0, cur);
	}
	default: {
		ts_query q = range_of(r);
		q.desc = r->desc;
		q.limit = r->limit;
		q.after = r->nafter ? r->after : NULL;
		q.nafter = r->nafter;
		return ts_query_open(t, &q, cur);
	}
	}
}

/* After the last row of cur: whether the limit cut it, and the key to
 * resume from.  Returns 0 or TS_ENOMEM. */
static int cursor_more(ts_cursor *cur, struct cli_more *more)
{
	const ts_value *key;
	int nkey;
	if (!(more->more = ts_cursor_more(cur)) || ts_cursor_resume(cur, &key, &nkey) < 0)
		return 0;
	return cli_more_set_key(more, key, nkey);
}

/* The rollups of table, opened: an aggregate routes only to rollups
 * loaded in the handle, and a read-only one loads those opened
 * (ts_aggregate_open), so that -d answers as tsstored does.  *opened is
 * NULL-terminated, to close with close_rollups; one that cannot be
 * opened is left out (its source's rows answer). */
static ts_table **open_rollups(ts_db *db, const char *table)
{
	char **names = NULL;
	ts_table **opened;
	int n = 0, k = 0;
	if (ts_rollups(db, table, &names, &n) < 0)
		return NULL;
	if ((opened = calloc((size_t)n + 1, sizeof *opened)))
		for (int i = 0; i < n; i++)
			if (ts_table_open(db, names[i], &opened[k]) == 0)
				k++;
	ts_free_names(names);
	return opened;
}

static void close_rollups(ts_table **opened)
{
	for (int i = 0; opened && opened[i]; i++)
		ts_table_close(opened[i]);
	free(opened);
}

int cli_store_rows(const struct cli *cli, struct cli_store *st, const struct cli_req *r,
                   const ts_schema *s, cli_row_fn *fn, void *arg, struct cli_more *more)
{
	ts_table *t = NULL, **rollups = NULL;
	ts_cursor *cur = NULL;
	const ts_value *row;
	int rc, n, status;
	if (st->rem)
		return cli_remote_rows(cli, st->rem, r, s, fn, arg, more);
	if ((status = cli_table_open(cli, st->db, r->table, &t)) != CLI_OK)
		return status;
	if (r->kind == CLI_REQ_AGGREGATE && !r->raw)
		rollups = open_rollups(st->db, r->table);
	if ((rc = open_cursor(t, r, &cur)) == 0) {
		while ((rc = ts_cursor_next(cur, &row, &n)) == 0 && row)
			if (fn(arg, row, n) < 0) {
				rc = 1;
				break;
			}
		if (rc == 0)
			rc = cursor_more(cur, more);
		if (rc == 0 && r->kind == CLI_REQ_AGGREGATE)
			snprintf(more->source, sizeof more->source, "%s",
			         ts_cursor_source(cur) ? ts_cursor_source(cur) : r->table);
	}
	status = rc == 0 ? CLI_OK : rc > 0 ? CLI_FAILURE : cli_fail_lib(cli, rc);
	ts_cursor_close(cur);
	close_rollups(rollups);
	ts_table_close(t);
	return status;
}

/* ---- calls that leave their message ---- */

/* rc, with the library's message for it kept in st->msg. */
static int lib(struct cli_store *st, int rc)
{
	if (rc < 0)
		snprintf(st->msg, sizeof st->msg, "%s", *ts_errmsg(NULL) ? ts_errmsg(NULL)
		                                                          : ts_strerror(rc));
	return rc;
}

const char *cli_store_errmsg(struct cli_store *st, int rc)
{
	return st->msg[0] ? st->msg : ts_strerror(rc);
}

int cli_store_tables(struct cli_store *st, char ***names)
{
	if (st->rem)
		return cli_remote_tables(st->rem, names, st->msg, sizeof st->msg);
	return lib(st, ts_tables(st->db, names, NULL));
}

void cli_names_free(char **names)
{
	ts_free_names(names);
}

int cli_store_create(struct cli_store *st, const char *table, const ts_column *columns,
                     int ncolumns, const char *const *key, int nkey, int64_t ttl,
                     ts_on_duplicate on_duplicate)
{
	if (st->rem)
		return cli_remote_create(st->rem, table, columns, ncolumns, key, nkey, ttl,
		                         on_duplicate, st->msg, sizeof st->msg);
	return lib(st, ts_create_keyed_v2(st->db, table, columns, ncolumns, key, nkey, ttl,
	                                  on_duplicate));
}

int cli_store_create_rollup(struct cli_store *st, const char *name, const ts_rollup_spec *spec,
                            const ts_schema *src)
{
	if (st->rem)
		return cli_remote_create_rollup(st->rem, name, spec, src, st->msg, sizeof st->msg);
	return lib(st, ts_create_rollup(st->db, name, spec));
}

int cli_store_rollups(struct cli_store *st, const char *table, char ***names)
{
	ts_table *t = NULL;
	int rc;
	*names = NULL;
	if (st->rem)
		return cli_remote_rollups(st->rem, table, names, st->msg, sizeof st->msg);
	/* ts_rollups lists none for a table that does not exist: say so */
	if ((rc = lib(st, ts_table_open(st->db, table, &t))) < 0)
		return rc;
	ts_table_close(t);
	return lib(st, ts_rollups(st->db, table, names, NULL));
}

int cli_store_rollup_def(struct cli_store *st, const char *table, struct cli_rollup_def *def)
{
	ts_rollup_state *rs = NULL;
	ts_table *t = NULL;
	size_t at = 0;
	int rc;
	memset(def, 0, sizeof *def);
	if (st->rem)
		return cli_remote_rollup_def(st->rem, table, def, st->msg, sizeof st->msg);
	if ((rc = lib(st, ts_table_open(st->db, table, &t))) < 0)
		return rc;
	rc = ts_rollup_info(t, &rs);
	ts_table_close(t);
	if (rc == TS_ENOENT)
		return 0;
	if (rc < 0)
		return lib(st, rc);
	def->is_rollup = 1;
	snprintf(def->source, sizeof def->source, "%s", rs->source);
	ts_duration_format(rs->every, def->every, sizeof def->every);
	def->group = rs->group;
	for (int i = 0; i < rs->nfns && at < sizeof def->columns; i++)
		at += (size_t)snprintf(def->columns + at, sizeof def->columns - at, "%s%s:%s",
		                       i ? "," : "", rs->fns[i].column, ts_aggfn_name(rs->fns[i].fn));
	ts_rollup_state_free(rs);
	return 0;
}

/* Open table, run one call on it, close it. */
static int with_table(struct cli_store *st, const char *table, ts_table **t)
{
	return lib(st, ts_table_open(st->db, table, t));
}

int cli_store_alter(struct cli_store *st, const char *table, const ts_column *column,
                    const char *widen, int64_t ttl)
{
	ts_table *t = NULL;
	int rc;
	if (st->rem)
		return cli_remote_alter(st->rem, table, column, widen, ttl, st->msg, sizeof st->msg);
	if ((rc = with_table(st, table, &t)) < 0)
		return rc;
	rc = lib(st, column ? ts_alter_add(t, column) : widen ? ts_alter_widen(t, widen)
	                                                      : ts_alter_ttl(t, ttl));
	ts_table_close(t);
	return rc;
}

int cli_store_alter_on_duplicate(struct cli_store *st, const char *table,
                                 ts_on_duplicate policy)
{
	ts_table *t = NULL;
	int rc;
	if (st->rem)
		return cli_remote_alter_on_duplicate(st->rem, table, policy, st->msg, sizeof st->msg);
	if ((rc = with_table(st, table, &t)) < 0)
		return rc;
	rc = lib(st, ts_alter_on_duplicate(t, policy));
	ts_table_close(t);
	return rc;
}

int cli_store_drop(struct cli_store *st, const char *table)
{
	if (st->rem)
		return cli_remote_drop(st->rem, table, st->msg, sizeof st->msg);
	return lib(st, ts_drop(st->db, table));
}

int cli_store_insert(struct cli_store *st, const char *table, const ts_value *rows, size_t n,
                     const ts_schema *s, int policy, size_t *ignored)
{
	int ncolumns = s->ncolumns;
	ts_table *t = NULL;
	int rc;
	*ignored = 0;
	if (st->rem)
		return cli_remote_insert(st->rem, table, rows, n, ncolumns, policy, ignored, st->msg,
		                         sizeof st->msg);
	if ((rc = with_table(st, table, &t)) < 0)
		return rc;
	rc = lib(st, policy == TS_ON_DUPLICATE_TABLE
	                 ? ts_insert_counted(t, s->version, rows, n, ignored)
	                 : ts_insert_policy(t, s->version, policy, rows, n, ignored, NULL));
	ts_table_close(t);
	return rc;
}

int cli_store_delete(struct cli_store *st, const struct cli_req *r, uint64_t *deleted,
                     uint64_t *version)
{
	ts_table *t = NULL;
	ts_query q = range_of(r);
	int rc;
	*deleted = 0;
	*version = 0;
	if (st->rem)
		return cli_remote_delete(st->rem, r, deleted, version, st->msg, sizeof st->msg);
	if ((rc = with_table(st, r->table, &t)) < 0)
		return rc;
	rc = lib(st, ts_delete(t, &q, deleted, version));
	ts_table_close(t);
	return rc;
}

int cli_store_purge(struct cli_store *st, const struct cli_req *r, uint64_t *version)
{
	ts_table *t = NULL;
	ts_query q = range_of(r);
	int rc;
	*version = 0;
	if (st->rem)
		return cli_remote_purge(st->rem, r, version, st->msg, sizeof st->msg);
	if ((rc = with_table(st, r->table, &t)) < 0)
		return rc;
	rc = lib(st, ts_purge(t, &q, version));
	ts_table_close(t);
	return rc;
}

static int flush_one(struct cli_store *st, const char *table, int64_t before)
{
	ts_table *t = NULL;
	int rc = with_table(st, table, &t);
	if (rc == 0)
		rc = lib(st, ts_flush(t, before));
	ts_table_close(t);
	return rc;
}

int cli_store_flush(struct cli_store *st, const char *table, int64_t before)
{
	char **names = NULL;
	int rc;
	if (st->rem)
		return cli_remote_flush(st->rem, table, before, st->msg, sizeof st->msg);
	if (table)
		return flush_one(st, table, before);
	if ((rc = lib(st, ts_tables(st->db, &names, NULL))) < 0)
		return rc;
	for (int i = 0; rc == 0 && names[i]; i++)
		if ((rc = flush_one(st, names[i], before)) == TS_ENOENT)
			rc = 0; /* dropped since the listing */
	ts_free_names(names);
	return rc;
}

int cli_store_status(struct cli_store *st, cli_stat_fn *fn, void *arg)
{
	if (!st->rem) {
		snprintf(st->msg, sizeof st->msg, "status is a tsstored's: give its socket with -s");
		return TS_EINVAL;
	}
	return cli_remote_status(st->rem, fn, arg, st->msg, sizeof st->msg);
}

int cli_store_promote(struct cli_store *st, int force, cli_stat_fn *fn, void *arg)
{
	if (!st->rem) {
		snprintf(st->msg, sizeof st->msg, "promote is a tsstored's: give its socket with -s");
		return TS_EINVAL;
	}
	return cli_remote_promote(st->rem, force, fn, arg, st->msg, sizeof st->msg);
}

int cli_store_stats(struct cli_store *st, const char *table, cli_stat_fn *fn, void *arg)
{
	ts_stat stats[TS_STATS_MAX];
	ts_table *t = NULL;
	int n, rc;
	if (st->rem)
		return cli_remote_stats(st->rem, table, fn, arg, st->msg, sizeof st->msg);
	if ((rc = with_table(st, table, &t)) < 0)
		return rc;
	rc = lib(st, ts_table_stats(t, stats, TS_STATS_MAX, &n));
	ts_table_close(t);
	for (int i = 0; rc == 0 && i < n; i++) {
		char text[ROWFMT_STAT_TEXT_MAX];
		const char *name;
		fn(arg, stats[i].name, stats[i].value, NULL);
		if (rowfmt_stat_text(&stats[i], &name, text, sizeof text))
			fn(arg, name, 0, text);
	}
	return rc;
}

/* Counts the problems on their way to the caller's report. */
struct counted {
	const struct cli_check_report *rep;
	uint64_t count;
};

static void count_problem(void *arg, const char *table, const char *file, const char *what)
{
	struct counted *c = arg;
	c->count++;
	c->rep->problem(c->rep->arg, table, file, what);
}

static void pass_progress(void *arg, uint64_t done, uint64_t total)
{
	struct counted *c = arg;
	if (c->rep->progress)
		c->rep->progress(c->rep->arg, done, total);
}

int cli_store_check(struct cli_store *st, const char *table, const struct cli_check_report *rep,
                    uint64_t *count)
{
	struct counted c = {.rep = rep};
	ts_check_opts opts = {.problem = count_problem, .progress = pass_progress, .arg = &c};
	int rc;
	*count = 0;
	if (st->rem)
		return cli_remote_check(st->rem, table, rep, count, st->msg, sizeof st->msg);
	rc = ts_check(st->db, table, &opts);
	*count = c.count;
	return rc == TS_ECORRUPT && c.count > 0 ? 0 : lib(st, rc);
}

int cli_store_snapshot(struct cli_store *st, const char *dest, int incremental)
{
	if (st->rem)
		return cli_remote_snapshot(st->rem, dest, incremental, st->msg, sizeof st->msg);
	return lib(st, incremental ? ts_backup_incremental(st->db, dest) : ts_backup(st->db, dest));
}
