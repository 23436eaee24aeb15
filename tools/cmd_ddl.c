/*
 * cmd_ddl.c -- the commands that change what tables exist and what they
 * hold: create, alter, drop, create-rollup (a table the store keeps from
 * another: docs/rollups.md); and flush, which moves rows to on-disk
 * tablets.
 *
 * Each handler runs in three steps, each of which may end the run:
 *   1. parse the arguments into a struct of its own (usage errors, exit 2;
 *      nothing is opened before every argument has been checked);
 *   2. open the database read-write (create alone may create the
 *      directory; for the others a missing directory is an error);
 *   3. make the change with the public API and report the library's
 *      message on failure (exit 1).
 * alter applies its changes in the order given; each is a schema change
 * of its own, so a failure leaves the ones before it made, and the message
 * says how many.
 */
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "cli.h"
#include "clitime.h"
#include "store.h"
#include "value.h"

/* ---- create ---- */

struct create_args {
	const char *table;
	ts_column *columns;
	int ncolumns;
	char *key_text; /* the --key text, split in place */
	const char *key[TS_KEY_COLUMNS_MAX];
	int nkey;
	int64_t ttl;
	ts_on_duplicate on_duplicate;
};

static void create_args_free(struct create_args *a)
{
	for (int i = 0; i < a->ncolumns; i++)
		cli_column_free(&a->columns[i]);
	free(a->columns);
	free(a->key_text);
}

static int add_column(const struct cli *cli, struct create_args *a, const char *spec)
{
	ts_column *more = realloc(a->columns, (size_t)(a->ncolumns + 1) * sizeof *more);
	if (!more)
		return cli_fail(cli, "out of memory");
	a->columns = more;
	a->ncolumns++;
	return cli_column_option(cli, "--column", spec, &a->columns[a->ncolumns - 1]);
}

/* One option of create; CLI_OK or the status to stop with. */
static int create_option(const struct cli *cli, int c, struct create_args *a)
{
	switch (c) {
	case 'c':
		return add_column(cli, a, optarg);
	case 'k':
		free(a->key_text);
		return cli_key_option(cli, optarg, &a->key_text, a->key, &a->nkey);
	case 'o':
		return cli_on_duplicate_option(cli, optarg, &a->on_duplicate);
	default:
		return cli_duration_option(cli, "--ttl", optarg, &a->ttl);
	}
}

static int parse_create(const struct cli *cli, int argc, char **argv, struct create_args *a)
{
	static const struct option opts[] = {
		{"column", required_argument, NULL, 'c'},
		{"key", required_argument, NULL, 'k'},
		{"ttl", required_argument, NULL, 't'},
		{"on-duplicate", required_argument, NULL, 'o'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	static const char *const names[] = {"TABLE"};
	int c, status = CLI_CONTINUE;
	while ((c = cli_getopt(cli, argc, argv, opts, &status)) >= 0)
		if ((status = create_option(cli, c, a)) != CLI_OK)
			return status;
	if (c == CLI_STOP)
		return status;
	if ((status = cli_operands(cli, argc, argv, names, 1, 1, &a->table)) != CLI_CONTINUE)
		return status;
	if (a->nkey == 0)
		return cli_usage(cli, "missing --key");
	return CLI_CONTINUE;
}

int cli_cmd_create(struct cli *cli, int argc, char **argv)
{
	struct create_args a = {0};
	struct cli_store *st = NULL;
	int rc, status = parse_create(cli, argc, argv, &a);
	if (status != CLI_CONTINUE)
		goto out;
	if ((status = cli_store_open(cli, TS_OPEN_CREATE, &st)) != CLI_OK)
		goto out;
	rc = cli_store_create(st, a.table, a.columns, a.ncolumns, a.key, a.nkey, a.ttl,
	                      a.on_duplicate);
	if (rc < 0)
		status = cli_fail(cli, "%s", cli_store_errmsg(st, rc));
out:
	create_args_free(&a);
	return cli_store_close(cli, st, status);
}

/* ---- alter ---- */

enum change_kind { CHANGE_ADD, CHANGE_WIDEN, CHANGE_TTL, CHANGE_POLICY };

struct change {
	enum change_kind kind;
	ts_column column;   /* CHANGE_ADD */
	const char *widen;  /* CHANGE_WIDEN: the column */
	int64_t ttl;        /* CHANGE_TTL */
	ts_on_duplicate on_duplicate; /* CHANGE_POLICY */
};

struct alter_args {
	const char *table;
	struct change *changes;
	int nchanges;
};

static void alter_args_free(struct alter_args *a)
{
	for (int i = 0; i < a->nchanges; i++)
		if (a->changes[i].kind == CHANGE_ADD)
			cli_column_free(&a->changes[i].column);
	free(a->changes);
}

/* Append a change of kind to a, zeroed; NULL when out of memory. */
static struct change *new_change(struct alter_args *a, enum change_kind kind)
{
	struct change *more = realloc(a->changes, (size_t)(a->nchanges + 1) * sizeof *more);
	if (!more)
		return NULL;
	a->changes = more;
	memset(&more[a->nchanges], 0, sizeof *more);
	more[a->nchanges].kind = kind;
	return &more[a->nchanges++];
}

/* One option of alter; CLI_OK or the status to stop with. */
static int alter_option(const struct cli *cli, int c, struct alter_args *a)
{
	struct change *ch = new_change(a, c == 'a' ? CHANGE_ADD : c == 'w' ? CHANGE_WIDEN
	                                  : c == 'o' ? CHANGE_POLICY : CHANGE_TTL);
	if (!ch)
		return cli_fail(cli, "out of memory");
	switch (ch->kind) {
	case CHANGE_ADD:
		return cli_column_option(cli, "--add", optarg, &ch->column);
	case CHANGE_WIDEN:
		ch->widen = optarg;
		return CLI_OK;
	case CHANGE_POLICY:
		return cli_on_duplicate_option(cli, optarg, &ch->on_duplicate);
	default:
		return cli_duration_option(cli, "--ttl", optarg, &ch->ttl);
	}
}

static int parse_alter(const struct cli *cli, int argc, char **argv, struct alter_args *a)
{
	static const struct option opts[] = {
		{"add", required_argument, NULL, 'a'},
		{"widen", required_argument, NULL, 'w'},
		{"ttl", required_argument, NULL, 't'},
		{"on-duplicate", required_argument, NULL, 'o'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	static const char *const names[] = {"TABLE"};
	int c, status = CLI_CONTINUE;
	while ((c = cli_getopt(cli, argc, argv, opts, &status)) >= 0)
		if ((status = alter_option(cli, c, a)) != CLI_OK)
			return status;
	if (c == CLI_STOP)
		return status;
	if ((status = cli_operands(cli, argc, argv, names, 1, 1, &a->table)) != CLI_CONTINUE)
		return status;
	if (a->nchanges == 0)
		return cli_usage(cli, "nothing to change (want --add, --widen, --ttl or --on-duplicate)");
	return CLI_CONTINUE;
}

/* Apply every change in order; stop at the first failure. */
static int apply_changes(const struct cli *cli, struct cli_store *st, const struct alter_args *a)
{
	for (int i = 0; i < a->nchanges; i++) {
		const struct change *ch = &a->changes[i];
		int rc = ch->kind == CHANGE_POLICY
		             ? cli_store_alter_on_duplicate(st, a->table, ch->on_duplicate)
		             : cli_store_alter(st, a->table, ch->kind == CHANGE_ADD ? &ch->column : NULL,
		                               ch->kind == CHANGE_WIDEN ? ch->widen : NULL, ch->ttl);
		if (rc < 0 && i == 0)
			return cli_fail(cli, "%s", cli_store_errmsg(st, rc));
		if (rc < 0)
			return cli_fail(cli, "%s (the %d change%s before it %s made)",
			                cli_store_errmsg(st, rc), i, i == 1 ? "" : "s",
			                i == 1 ? "was" : "were");
	}
	return CLI_OK;
}

int cli_cmd_alter(struct cli *cli, int argc, char **argv)
{
	struct alter_args a = {0};
	struct cli_store *st = NULL;
	int status = parse_alter(cli, argc, argv, &a);
	if (status != CLI_CONTINUE)
		goto out;
	if ((status = cli_store_open(cli, 0, &st)) == CLI_OK)
		status = apply_changes(cli, st, &a);
out:
	alter_args_free(&a);
	return cli_store_close(cli, st, status);
}

/* ---- drop ---- */

int cli_cmd_drop(struct cli *cli, int argc, char **argv)
{
	static const char *const names[] = {"TABLE"};
	const char *table;
	struct cli_store *st = NULL;
	int rc, status = cli_parse_operands(cli, argc, argv, names, 1, 1, &table);
	if (status != CLI_CONTINUE)
		goto out;
	if ((status = cli_store_open(cli, 0, &st)) != CLI_OK)
		goto out;
	if ((rc = cli_store_drop(st, table)) < 0)
		status = cli_fail(cli, "%s", cli_store_errmsg(st, rc));
out:
	return cli_store_close(cli, st, status);
}

/* ---- create-rollup ---- */

struct rollup_args {
	const char *name;
	ts_rollup_spec spec;
	char **columns;    /* the --column texts, read against the source's schema */
	int ncolumns;
	ts_aggspec *specs;
	int group_given;
};

static void rollup_args_free(struct rollup_args *a)
{
	free(a->columns);
	free(a->specs);
}

/* --group N: key columns of the source kept. */
static int rollup_group_option(const struct cli *cli, const char *text, int *group)
{
	char *end;
	long n = strtol(text, &end, 10);
	if (text[0] < '0' || text[0] > '9' || *end || n > TS_KEY_COLUMNS_MAX)
		return cli_usage(cli, "--group \"%s\": want a number of key columns", text);
	*group = (int)n;
	return CLI_OK;
}

/* One option of create-rollup; CLI_OK or the status to stop with. */
static int rollup_option(const struct cli *cli, int c, struct rollup_args *a)
{
	char **more;
	switch (c) {
	case 'F':
		a->spec.source = optarg;
		return CLI_OK;
	case 'e':
		return cli_duration_option(cli, "--every", optarg, &a->spec.every);
	case 'g':
		return rollup_group_option(cli, optarg, &a->spec.group);
	case 'c':
		if (!(more = realloc(a->columns, (size_t)(a->ncolumns + 1) * sizeof *more)))
			return cli_fail(cli, "out of memory");
		a->columns = more;
		a->columns[a->ncolumns++] = optarg;
		return CLI_OK;
	default:
		return cli_duration_option(cli, "--ttl", optarg, &a->spec.ttl);
	}
}

static int parse_rollup(const struct cli *cli, int argc, char **argv, struct rollup_args *a)
{
	static const struct option opts[] = {
		{"from", required_argument, NULL, 'F'},
		{"every", required_argument, NULL, 'e'},
		{"group", required_argument, NULL, 'g'},
		{"column", required_argument, NULL, 'c'},
		{"ttl", required_argument, NULL, 't'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	static const char *const names[] = {"NAME"};
	int c, status = CLI_CONTINUE;
	while ((c = cli_getopt(cli, argc, argv, opts, &status)) >= 0)
		if ((status = rollup_option(cli, c, a)) != CLI_OK)
			return status;
	if (c == CLI_STOP)
		return status;
	if ((status = cli_operands(cli, argc, argv, names, 1, 1, &a->name)) != CLI_CONTINUE)
		return status;
	if (!a->spec.source)
		return cli_usage(cli, "missing --from");
	if (!a->spec.every)
		return cli_usage(cli, "missing --every");
	if (a->ncolumns == 0)
		return cli_usage(cli, "missing --column");
	return CLI_CONTINUE;
}

/* The --column texts "COL:FN,..." into specs over the source's schema
 * src (a rollup of a rollup names its value columns: cpu_max:max). */
static int rollup_specs(const struct cli *cli, const ts_schema *src, struct rollup_args *a)
{
	int cap = 0;
	for (int i = 0; i < a->ncolumns; i++)
		cap += 1 + (int)(strlen(a->columns[i]) / 2);
	if (!(a->specs = calloc((size_t)cap + 1, sizeof *a->specs)))
		return cli_fail(cli, "out of memory");
	for (int i = 0; i < a->ncolumns; i++) {
		char *copy = strdup(a->columns[i]), *save = NULL;
		int status = copy ? CLI_CONTINUE : cli_fail(cli, "out of memory");
		for (char *item = copy ? strtok_r(copy, ",", &save) : NULL;
		     item && status == CLI_CONTINUE; item = strtok_r(NULL, ",", &save)) {
			char *colon = strrchr(item, ':');
			ts_aggspec *sp = &a->specs[a->spec.nspecs];
			if (!colon) {
				status = cli_usage(cli, "--column \"%s\": want COL:FN", item);
				break;
			}
			*colon = '\0';
			if ((sp->column = val_column(src, item, strlen(item), 0)) < 0)
				status = cli_usage(cli, "--column: no column \"%s\" in table \"%s\"", item,
				                   a->spec.source);
			else if (ts_aggfn_parse(colon + 1, &sp->fn) < 0)
				status = cli_usage(cli, "--column \"%s:%s\": want count, sum, min, max, mean, "
				                   "first or last", item, colon + 1);
			else
				a->spec.nspecs++;
		}
		free(copy);
		if (status != CLI_CONTINUE)
			return status;
	}
	a->spec.specs = a->specs;
	return CLI_CONTINUE;
}

int cli_cmd_create_rollup(struct cli *cli, int argc, char **argv)
{
	struct rollup_args a = {0};
	struct cli_store *st = NULL;
	ts_schema *src = NULL;
	int rc, status = parse_rollup(cli, argc, argv, &a);
	if (status != CLI_CONTINUE)
		goto out;
	if ((status = cli_store_open(cli, 0, &st)) != CLI_OK ||
	    (status = cli_store_schema(cli, st, a.spec.source, &src)) != CLI_OK ||
	    (status = rollup_specs(cli, src, &a)) != CLI_CONTINUE)
		goto out;
	status = CLI_OK;
	if ((rc = cli_store_create_rollup(st, a.name, &a.spec, src)) < 0)
		status = cli_fail(cli, "%s", cli_store_errmsg(st, rc));
out:
	cli_schema_free(src);
	rollup_args_free(&a);
	return cli_store_close(cli, st, status);
}

/* ---- flush ---- */

int cli_cmd_flush(struct cli *cli, int argc, char **argv)
{
	static const struct option opts[] = {
		{"before", required_argument, NULL, 'b'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	static const char *const names[] = {"TABLE"};
	const char *table;
	struct cli_store *st = NULL;
	int64_t before = INT64_MAX;
	int c, rc, status = CLI_CONTINUE;
	while ((c = cli_getopt(cli, argc, argv, opts, &status)) >= 0)
		if ((status = cli_time_option(cli, "--before", optarg, &before)) != CLI_OK)
			goto out;
	if (c == CLI_STOP ||
	    (status = cli_operands(cli, argc, argv, names, 0, 1, &table)) != CLI_CONTINUE)
		goto out;
	if ((status = cli_store_open(cli, 0, &st)) != CLI_OK)
		goto out;
	if ((rc = cli_store_flush(st, table, before)) < 0)
		status = cli_fail(cli, "%s", cli_store_errmsg(st, rc));
out:
	return cli_store_close(cli, st, status);
}
