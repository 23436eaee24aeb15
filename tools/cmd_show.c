/*
 * cmd_show.c -- the commands that only read: tables, schema, stats.
 *
 * They open the database with TS_OPEN_READONLY, which takes no lock, so
 * they run beside a live writer (tsstored, or another tsstore).  Their
 * output is meant for cut, awk and diff as much as for people:
 *   tables   one table name per line, sorted;
 *   schema   one line per column, "name TAB type TAB default TAB key
 *            position" -- the format of the mount's schema file (DESIGN.md
 *            section 6): the default in the text form of value.c ("now"
 *            for ts), the 1-based position in the primary key or "-";
 *   stats    "name: value" lines from ts_table_stats, plus "ttl: DUR"
 *            right after "ttl_ns"; without a table, each table's lines
 *            indented by two spaces under a "TABLE:" line.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "value.h"

#define STATS_INDENT "  "

/* ---- tables ---- */

int cli_cmd_tables(struct cli *cli, int argc, char **argv)
{
	char **names = NULL;
	ts_db *db = NULL;
	int rc, status = cli_parse_operands(cli, argc, argv, NULL, 0, 0, NULL);
	if (status != CLI_CONTINUE)
		goto out;
	if ((status = cli_open(cli, TS_OPEN_READONLY, &db)) != CLI_OK)
		goto out;
	if ((rc = ts_tables(db, &names, NULL)) < 0) {
		status = cli_fail_lib(cli, rc);
		goto out;
	}
	for (int i = 0; names[i]; i++)
		printf("%s\n", names[i]);
out:
	ts_free_names(names);
	return cli_close(cli, db, status);
}

/* ---- schema ---- */

/* The 1-based position of column i in the primary key, or 0. */
static int key_position(const ts_schema *s, int i)
{
	for (int k = 0; k < s->nkey; k++)
		if (s->key[k] == i)
			return k + 1;
	return 0;
}

/* A TS_NONE default is the type's zero value: 0, 0.0 or the epoch; ""
 * and the empty blob, which print as nothing; "now" for ts. */
static void print_default(const ts_column *c)
{
	ts_value zero = ts_none();
	if (c->dflt.type != TS_NONE) {
		val_print(stdout, &c->dflt);
	} else if (c->type == TS_TIMESTAMP && strcmp(c->name, "ts") == 0) {
		fputs("now", stdout);
	} else if (c->type != TS_STRING && c->type != TS_BLOB) {
		zero.type = c->type;
		val_print(stdout, &zero);
	}
}

static void print_column(const ts_schema *s, int i)
{
	const ts_column *c = &s->columns[i];
	int pos = key_position(s, i);
	printf("%s\t%s\t", c->name, ts_type_name(c->type));
	print_default(c);
	if (pos > 0)
		printf("\t%d\n", pos);
	else
		fputs("\t-\n", stdout);
}

int cli_cmd_schema(struct cli *cli, int argc, char **argv)
{
	static const char *const names[] = {"TABLE"};
	const char *table;
	ts_db *db = NULL;
	ts_table *t = NULL;
	ts_schema *s = NULL;
	int rc, status = cli_parse_operands(cli, argc, argv, names, 1, 1, &table);
	if (status != CLI_CONTINUE)
		goto out;
	if ((status = cli_open(cli, TS_OPEN_READONLY, &db)) != CLI_OK ||
	    (status = cli_table_open(cli, db, table, &t)) != CLI_OK)
		goto out;
	if ((rc = ts_table_schema(t, &s)) < 0) {
		status = cli_fail_lib(cli, rc);
		goto out;
	}
	for (int i = 0; i < s->ncolumns; i++)
		print_column(s, i);
out:
	if (s)
		ts_schema_free(s);
	ts_table_close(t);
	return cli_close(cli, db, status);
}

/* ---- stats ---- */

static void print_stat(const char *indent, const ts_stat *st)
{
	char ttl[TS_DURATION_BUFSZ];
	printf("%s%s: %" PRId64 "\n", indent, st->name, st->value);
	if (strcmp(st->name, "ttl_ns") == 0 && st->value >= 0 &&
	    ts_duration_format(st->value, ttl, sizeof ttl) == 0)
		printf("%sttl: %s\n", indent, ttl);
}

static int print_table_stats(const struct cli *cli, ts_table *t, const char *indent)
{
	ts_stat st[TS_STATS_MAX];
	int n, rc = ts_table_stats(t, st, TS_STATS_MAX, &n);
	if (rc < 0)
		return cli_fail_lib(cli, rc);
	for (int i = 0; i < n; i++)
		print_stat(indent, &st[i]);
	return CLI_OK;
}

static int stats_one(const struct cli *cli, ts_db *db, const char *table)
{
	ts_table *t = NULL;
	int status = cli_table_open(cli, db, table, &t);
	if (status == CLI_OK)
		status = print_table_stats(cli, t, "");
	ts_table_close(t);
	return status;
}

/* Every table under a "TABLE:" line; one dropped since the listing was
 * taken is skipped, as if the listing had come a moment later. */
static int stats_all(const struct cli *cli, ts_db *db)
{
	char **names = NULL;
	int rc, status = CLI_OK;
	if ((rc = ts_tables(db, &names, NULL)) < 0)
		return cli_fail_lib(cli, rc);
	for (int i = 0; names[i] && status == CLI_OK; i++) {
		ts_table *t = NULL;
		if ((rc = ts_table_open(db, names[i], &t)) == TS_ENOENT)
			continue;
		if (rc < 0) {
			status = cli_fail_lib(cli, rc);
			break;
		}
		printf("%s:\n", names[i]);
		status = print_table_stats(cli, t, STATS_INDENT);
		ts_table_close(t);
	}
	ts_free_names(names);
	return status;
}

int cli_cmd_stats(struct cli *cli, int argc, char **argv)
{
	static const char *const names[] = {"TABLE"};
	const char *table;
	ts_db *db = NULL;
	int status = cli_parse_operands(cli, argc, argv, names, 0, 1, &table);
	if (status != CLI_CONTINUE)
		goto out;
	if ((status = cli_open(cli, TS_OPEN_READONLY, &db)) != CLI_OK)
		goto out;
	status = table ? stats_one(cli, db, table) : stats_all(cli, db);
out:
	return cli_close(cli, db, status);
}
