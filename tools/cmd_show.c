/*
 * cmd_show.c -- the commands that only read: tables, rollups, schema,
 * stats.
 *
 * They open the database with TS_OPEN_READONLY, which takes no lock, so
 * they run beside a live writer (tsstored, or another tsstore).  Their
 * output is meant for cut, awk and diff as much as for people:
 *   tables   one table name per line, sorted; with --long, a tab and
 *            "table", or "rollup of SOURCE every DUR group N: COL:FN,..."
 *            (the definition: docs/rollups.md);
 *   rollups  the rollups made from a table, one name per line, sorted;
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
#include "rowfmt.h"
#include "store.h"
#include "value.h"

#define STATS_INDENT "  "

/* ---- tables ---- */

/* tables --long: what the table is, after its name and a tab -- "table",
 * or "rollup of SOURCE every DUR group N: COL:FN,..." -- or nothing
 * when it was dropped since the listing (its line is left out).  Returns
 * CLI_OK, or CLI_FAILURE after the message. */
static int print_kind(const struct cli *cli, struct cli_store *st, const char *name)
{
	struct cli_rollup_def def;
	int rc = cli_store_rollup_def(st, name, &def);
	if (rc == TS_ENOENT)
		return CLI_OK;
	if (rc < 0)
		return cli_fail(cli, "%s", cli_store_errmsg(st, rc));
	if (!def.is_rollup)
		printf("%s\ttable\n", name);
	else
		printf("%s\trollup of %s every %s group %d: %s\n", name, def.source, def.every,
		       def.group, def.columns);
	return CLI_OK;
}

int cli_cmd_tables(struct cli *cli, int argc, char **argv)
{
	static const struct option opts[] = {
		{"long", no_argument, NULL, 'l'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	char **names = NULL;
	struct cli_store *st = NULL;
	int c, rc, is_long = 0, status = CLI_CONTINUE;
	while ((c = cli_getopt(cli, argc, argv, opts, &status)) >= 0)
		is_long = 1;
	if (c == CLI_STOP || (status = cli_operands(cli, argc, argv, NULL, 0, 0, NULL)) != CLI_CONTINUE)
		goto out;
	if ((status = cli_store_open(cli, TS_OPEN_READONLY, &st)) != CLI_OK)
		goto out;
	if ((rc = cli_store_tables(st, &names)) < 0) {
		status = cli_fail(cli, "%s", cli_store_errmsg(st, rc));
		goto out;
	}
	for (int i = 0; names[i] && status == CLI_OK; i++)
		if (is_long)
			status = print_kind(cli, st, names[i]);
		else
			printf("%s\n", names[i]);
out:
	cli_names_free(names);
	return cli_store_close(cli, st, status);
}

/* ---- rollups ---- */

int cli_cmd_rollups(struct cli *cli, int argc, char **argv)
{
	static const char *const names[] = {"TABLE"};
	const char *table;
	char **list = NULL;
	struct cli_store *st = NULL;
	int rc, status = cli_parse_operands(cli, argc, argv, names, 1, 1, &table);
	if (status != CLI_CONTINUE)
		goto out;
	if ((status = cli_store_open(cli, TS_OPEN_READONLY, &st)) != CLI_OK)
		goto out;
	if ((rc = cli_store_rollups(st, table, &list)) < 0) {
		status = cli_fail(cli, "%s", cli_store_errmsg(st, rc));
		goto out;
	}
	for (int i = 0; list[i]; i++)
		printf("%s\n", list[i]);
out:
	cli_names_free(list);
	return cli_store_close(cli, st, status);
}

/* ---- schema ---- */

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
	struct jbuf text = {0};
	rowfmt_schema(&text, s);
	if (text.failed)
		status = cli_fail(cli, "out of memory");
	else
		fwrite(text.p, 1, text.len, stdout);
	jbuf_free(&text);
out:
	cli_schema_free(s);
	return cli_store_close(cli, st, status);
}

/* ---- stats ---- */

/* Counter lines gathered before any is printed. */
struct stat_lines {
	const char *indent;
	struct jbuf text;
};

/* A counter line, indented, into the stat_lines arg. */
static int collect_stat(void *arg, const char *name, int64_t value, const char *text)
{
	struct stat_lines *l = arg;
	char base[TS_NAME_MAX + 8], dur[ROWFMT_STAT_TEXT_MAX];
	rowfmt_stat(&l->text, l->indent, name, value, text);
	if (!text && rowfmt_stat_duration(name, value, base, sizeof base, dur, sizeof dur))
		rowfmt_stat(&l->text, l->indent, base, 0, dur);
	return 0;
}

static int stats_one(const struct cli *cli, struct cli_store *st, const char *table)
{
	struct stat_lines l = {.indent = ""};
	int rc = cli_store_stats(st, table, collect_stat, &l), status = CLI_OK;
	if (rc < 0)
		status = cli_fail(cli, "%s", cli_store_errmsg(st, rc));
	else if (l.text.failed)
		status = cli_fail(cli, "out of memory");
	else if (l.text.len)
		fwrite(l.text.p, 1, l.text.len, stdout);
	jbuf_free(&l.text);
	return status;
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
		struct stat_lines l = {.indent = STATS_INDENT};
		if ((rc = cli_store_stats(st, names[i], collect_stat, &l)) == TS_ENOENT) {
			jbuf_free(&l.text);
			continue;
		}
		if (rc < 0)
			status = cli_fail(cli, "%s", cli_store_errmsg(st, rc));
		else if (l.text.failed)
			status = cli_fail(cli, "out of memory");
		else
			printf("%s:\n%.*s", names[i], (int)l.text.len, l.text.p ? l.text.p : "");
		jbuf_free(&l.text);
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

/* A command of tsstored's alone, without operands, whose answer is
 * "name: value" lines: status, promote.  opts: its options (--help
 * alone: NULL); *flag (may be NULL) is set when one of them is given. */
static int daemon_lines(struct cli *cli, int argc, char **argv, const char *name,
                        const struct option *opts, int *flag,
                        int (*call)(struct cli_store *, int, cli_stat_fn *, void *))
{
	static const struct option help[] = {
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	struct cli_store *st = NULL;
	struct stat_lines l = {.indent = ""};
	int c, rc, set = 0, status = CLI_CONTINUE;
	while ((c = cli_getopt(cli, argc, argv, opts ? opts : help, &status)) >= 0)
		set = 1;
	if (c == CLI_STOP || (status = cli_operands(cli, argc, argv, NULL, 0, 0, NULL)) != CLI_CONTINUE)
		return status;
	if (flag)
		*flag = set;
	if (!cli->socket)
		return cli_fail(cli, "%s is a tsstored's: give its socket with -s SOCKET", name);
	if ((status = cli_store_open(cli, TS_OPEN_READONLY, &st)) != CLI_OK)
		return status;
	if ((rc = call(st, set, collect_stat, &l)) < 0)
		status = cli_fail(cli, "%s", cli_store_errmsg(st, rc));
	else if (l.text.failed)
		status = cli_fail(cli, "out of memory");
	else
		fwrite(l.text.p, 1, l.text.len, stdout);
	jbuf_free(&l.text);
	return cli_store_close(cli, st, status);
}

static int store_status(struct cli_store *st, int flag, cli_stat_fn *fn, void *arg)
{
	(void)flag;
	return cli_store_status(st, fn, arg);
}

/* status: what tsstored is (primary, or the standby of which primary),
 * its epoch and, for a standby, its link: connected, lag, counters. */
int cli_cmd_status(struct cli *cli, int argc, char **argv)
{
	return daemon_lines(cli, argc, argv, "status", NULL, NULL, store_status);
}

/* promote [--force]: the standby tsstored becomes a primary (with
 * --force, a stale primary becomes the primary again, of an epoch past
 * the one that fenced it); its role, epoch and lineage. */
int cli_cmd_promote(struct cli *cli, int argc, char **argv)
{
	static const struct option opts[] = {
		{"force", no_argument, NULL, 'f'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	return daemon_lines(cli, argc, argv, "promote", opts, NULL, cli_store_promote);
}
