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
#include "json.h"
#include "store.h"
#include "value.h"

#define STATS_INDENT "  "

/* ---- tables ---- */

int cli_cmd_tables(struct cli *cli, int argc, char **argv)
{
	char **names = NULL;
	struct cli_store *st = NULL;
	int rc, status = cli_parse_operands(cli, argc, argv, NULL, 0, 0, NULL);
	if (status != CLI_CONTINUE)
		goto out;
	if ((status = cli_store_open(cli, TS_OPEN_READONLY, &st)) != CLI_OK)
		goto out;
	if ((rc = cli_store_tables(st, &names)) < 0) {
		status = cli_fail(cli, "%s", cli_store_errmsg(st, rc));
		goto out;
	}
	for (int i = 0; names[i]; i++)
		printf("%s\n", names[i]);
out:
	cli_names_free(names);
	return cli_store_close(cli, st, status);
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
	struct cli_store *st = NULL;
	ts_schema *s = NULL;
	int status = cli_parse_operands(cli, argc, argv, names, 1, 1, &table);
	if (status != CLI_CONTINUE)
		goto out;
	if ((status = cli_store_open(cli, TS_OPEN_READONLY, &st)) != CLI_OK ||
	    (status = cli_store_schema(cli, st, table, &s)) != CLI_OK)
		goto out;
	for (int i = 0; i < s->ncolumns; i++)
		print_column(s, i);
out:
	cli_schema_free(s);
	return cli_store_close(cli, st, status);
}

/* ---- stats ---- */

static int print_stat(void *arg, const char *name, int64_t value, const char *text)
{
	const char *indent = arg;
	if (text)
		printf("%s%s: %s\n", indent, name, text);
	else
		printf("%s%s: %" PRId64 "\n", indent, name, value);
	return 0;
}

/* A counter line, indented, into the jbuf arg. */
static int collect_stat(void *arg, const char *name, int64_t value, const char *text)
{
	struct jbuf *b = arg;
	if (text)
		jbuf_printf(b, STATS_INDENT "%s: %s\n", name, text);
	else
		jbuf_printf(b, STATS_INDENT "%s: %" PRId64 "\n", name, value);
	return 0;
}

static int stats_one(const struct cli *cli, struct cli_store *st, const char *table)
{
	int rc = cli_store_stats(st, table, print_stat, "");
	return rc < 0 ? cli_fail(cli, "%s", cli_store_errmsg(st, rc)) : CLI_OK;
}

/* Every table under a "TABLE:" line; one dropped since the listing was
 * taken is skipped, as if the listing had come a moment later. */
static int stats_all(const struct cli *cli, struct cli_store *st)
{
	char **names = NULL;
	int rc, status = CLI_OK;
	if ((rc = cli_store_tables(st, &names)) < 0)
		return cli_fail(cli, "%s", cli_store_errmsg(st, rc));
	for (int i = 0; names[i] && status == CLI_OK; i++) {
		/* the counters first, so that a table gone meanwhile prints nothing */
		struct jbuf lines = {0};
		if ((rc = cli_store_stats(st, names[i], collect_stat, &lines)) == TS_ENOENT) {
			jbuf_free(&lines);
			continue;
		}
		if (rc < 0)
			status = cli_fail(cli, "%s", cli_store_errmsg(st, rc));
		else if (lines.failed)
			status = cli_fail(cli, "out of memory");
		else
			printf("%s:\n%.*s", names[i], (int)lines.len, lines.p ? lines.p : "");
		jbuf_free(&lines);
	}
	cli_names_free(names);
	return status;
}

int cli_cmd_stats(struct cli *cli, int argc, char **argv)
{
	static const char *const names[] = {"TABLE"};
	const char *table;
	struct cli_store *st = NULL;
	int status = cli_parse_operands(cli, argc, argv, names, 0, 1, &table);
	if (status != CLI_CONTINUE)
		goto out;
	if ((status = cli_store_open(cli, TS_OPEN_READONLY, &st)) != CLI_OK)
		goto out;
	status = table ? stats_one(cli, st, table) : stats_all(cli, st);
out:
	return cli_store_close(cli, st, status);
}
