/*
 * cmd_query.c -- the commands that print rows: query, latest, aggregate
 * and dump.
 *
 *     tsstore query TABLE [--prefix V,...] [--from T] [--to T] [--desc]
 *                         [--limit N] [--format tsv|jsonl|csv]
 *     tsstore latest TABLE --prefix V,... [--format ...]
 *     tsstore aggregate TABLE --every DUR [--group N] --column COL:FN,...
 *                         [--prefix V,...] [--from T] [--to T] [--format ...]
 *     tsstore dump TABLE
 *
 * Each runs in the same steps: parse the arguments into a struct cli_req
 * (usage errors, exit 2, before anything is opened); open the store and
 * the table's schema; turn the texts that need the schema (prefix values,
 * aggregate columns) into values (a bad one is a usage error too); run
 * the request on the store (store.c: the library with -d, tsstored with
 * -s) and print each row it yields through output.c.  The output is the
 * same in both modes because the rows are the same values either way.
 *
 * Output: a header line (tsv, csv) naming the columns, then one line per
 * row (rowfmt.c).  aggregate names its columns: the group's key columns,
 * "ts" (the window's start), then "COL:FN" for each function asked for.
 * query with --limit says on stderr when the limit cut the result:
 *     query: limit of N rows reached; more rows follow
 * latest prints the header and the row; when no row has the prefix it
 * prints nothing and fails: "tsstore: latest: no row with prefix (...)".
 * dump is query in jsonl, every column, with a progress line on a
 * terminal; its output is load's input.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "cli.h"
#include "clitime.h"
#include "output.h"
#include "store.h"
#include "value.h"

/* ---- arguments ---- */

struct query_args {
	const char *table;
	const char *prefix;  /* the --prefix text, split once the schema is known */
	struct cli_req req;
	enum rowfmt format;
	int has_format;
	char **specs;        /* aggregate: the --column texts */
	int nspecs;
};

static void query_args_free(struct query_args *a)
{
	free(a->specs);
	cli_req_free(&a->req);
}

static int time_option(const struct cli *cli, const char *option, const char *text,
                       int64_t *ns)
{
	return cli_time_option(cli, option, text, ns);
}

static int limit_option(const struct cli *cli, const char *text, uint64_t *limit)
{
	char *end;
	errno = 0;
	unsigned long long n = strtoull(text, &end, 10);
	if (text[0] < '0' || text[0] > '9' || *end || errno || n == 0)
		return cli_usage(cli, "--limit \"%s\": want a positive integer", text);
	*limit = n;
	return CLI_OK;
}

static int group_option(const struct cli *cli, const char *text, int *group)
{
	char *end;
	errno = 0;
	long n = strtol(text, &end, 10);
	if (text[0] < '0' || text[0] > '9' || *end || errno || n > TS_KEY_COLUMNS_MAX)
		return cli_usage(cli, "--group \"%s\": want a number of key columns", text);
	*group = (int)n;
	return CLI_OK;
}

static int add_spec(const struct cli *cli, struct query_args *a, char *text)
{
	char **more = realloc(a->specs, (size_t)(a->nspecs + 1) * sizeof *more);
	if (!more)
		return cli_fail(cli, "out of memory");
	a->specs = more;
	a->specs[a->nspecs++] = text;
	return CLI_OK;
}

/* One option of the query commands; CLI_OK or the status to stop with. */
static int query_option(const struct cli *cli, int c, struct query_args *a)
{
	struct cli_req *r = &a->req;
	switch (c) {
	case 'p':
		a->prefix = optarg;
		return CLI_OK;
	case 'F':
		r->has_from = 1;
		return time_option(cli, "--from", optarg, &r->from);
	case 'T':
		r->has_to = 1;
		return time_option(cli, "--to", optarg, &r->to);
	case 'D':
		r->desc = 1;
		return CLI_OK;
	case 'l':
		return limit_option(cli, optarg, &r->limit);
	case 'f':
		a->has_format = 1;
		if (rowfmt_parse(optarg, &a->format) < 0)
			return cli_usage(cli, "--format \"%s\": want tsv, jsonl or csv", optarg);
		return CLI_OK;
	case 'e':
		return cli_duration_option(cli, "--every", optarg, &r->every);
	case 'g':
		return group_option(cli, optarg, &r->group);
	case 'c':
		return add_spec(cli, a, optarg);
	default:
		return CLI_USAGE;
	}
}

/* Parse the arguments of cmd (the options it takes are opts). */
static int parse_query(const struct cli *cli, int argc, char **argv, const struct option *opts,
                       struct query_args *a)
{
	static const char *const names[] = {"TABLE"};
	int c, status = CLI_CONTINUE;
	while ((c = cli_getopt(cli, argc, argv, opts, &status)) >= 0)
		if ((status = query_option(cli, c, a)) != CLI_OK)
			return status;
	if (c == CLI_STOP)
		return status;
	if ((status = cli_operands(cli, argc, argv, names, 1, 1, &a->table)) != CLI_CONTINUE)
		return status;
	if (a->req.has_from && a->req.has_to && a->req.from >= a->req.to)
		return cli_usage(cli, "--from must be before --to");
	return CLI_CONTINUE;
}

/* ---- what needs the schema ---- */

/*
 * The --prefix text "V,..." as values of the leading key columns.  A
 * comma inside a value is written "\,", a backslash "\\".
 */
static int parse_prefix(const struct cli *cli, const ts_schema *s, const char *text,
                        struct cli_req *r)
{
	size_t len = strlen(text);
	char *buf = malloc(len + 1), why[CLI_MESSAGE_MAX];
	const char *p = text;
	int status = CLI_CONTINUE;
	if (!buf)
		return cli_fail(cli, "out of memory");
	while (status == CLI_CONTINUE) {
		size_t n = 0;
		for (; *p && *p != ','; p++)
			buf[n++] = *p == '\\' && (p[1] == ',' || p[1] == '\\') ? *++p : *p;
		buf[n] = '\0';
		if (r->nprefix >= s->nkey) {
			status = cli_usage(cli, "--prefix: more values than the %d key columns", s->nkey);
			break;
		}
		const ts_column *col = &s->columns[s->key[r->nprefix]];
		if (val_parse(col->type, buf, &r->prefix[r->nprefix], why, sizeof why) < 0) {
			status = cli_usage(cli, "--prefix: column \"%s\": %s", col->name, why);
			break;
		}
		r->nprefix++;
		if (!*p++)
			break;
	}
	free(buf);
	return status;
}

/* One --column text "COL:FN,COL:FN..." into aggregate specs. */
static int parse_specs(const struct cli *cli, const ts_schema *s, char *text, struct cli_req *r)
{
	for (char *save = NULL, *item = strtok_r(text, ",", &save); item;
	     item = strtok_r(NULL, ",", &save)) {
		char *colon = strrchr(item, ':');
		ts_aggfn fn;
		int col;
		if (!colon)
			return cli_usage(cli, "--column \"%s\": want COL:FN", item);
		*colon = '\0';
		if ((col = val_column(s, item, strlen(item), 0)) < 0)
			return cli_usage(cli, "--column: no column \"%s\"", item);
		if (ts_aggfn_parse(colon + 1, &fn) < 0)
			return cli_usage(cli, "--column \"%s:%s\": want count, sum, min, max, mean, "
			                      "first or last", item, colon + 1);
		*colon = ':';
		if (r->nspecs == CLI_AGG_SPECS_MAX)
			return cli_usage(cli, "--column: more than %d functions", CLI_AGG_SPECS_MAX);
		r->specs[r->nspecs++] = (ts_aggspec){.column = col, .fn = fn};
	}
	return CLI_CONTINUE;
}

/* ---- running ---- */

/* run()'s status when latest found no row. */
#define CLI_NO_ROW (-3)

struct printer {
	const struct cli *cli;
	struct cli_output out;
	int failed; /* standard output failed */
};

static int print_row(void *arg, const ts_value *row, int n)
{
	struct printer *p = arg;
	(void)n;
	if (cli_output_row(&p->out, row) < 0) {
		p->failed = 1;
		return -1;
	}
	return 0;
}

/* Run the request and print its rows under the columns named. */
static int run(struct cli *cli, struct cli_store *st, struct cli_req *r, const ts_schema *s,
               enum rowfmt format, const char *const *names, int ncolumns, int progress)
{
	struct printer p = {.cli = cli};
	int more = 0, status;
	cli_output_begin(&p.out, cli, format, names, ncolumns, progress);
	status = cli_store_rows(cli, st, r, s, print_row, &p, &more);
	if (p.out.rows == 0 && (status != CLI_OK || r->kind == CLI_REQ_LATEST))
		p.out.buf.len = 0; /* no header for a failure, or for latest without its row */
	if (cli_output_end(&p.out) < 0 || p.failed)
		return CLI_FAILURE; /* tsstore.c says what happened to stdout */
	if (status == CLI_OK && more)
		fprintf(stderr, "%s: limit of %" PRIu64 " row%s reached; more rows follow\n",
		        cli->cmd->name, r->limit, r->limit == 1 ? "" : "s");
	if (status == CLI_OK && r->kind == CLI_REQ_LATEST && p.out.rows == 0)
		status = CLI_NO_ROW;
	return status;
}

/* The column names of an aggregate's rows: the group's key columns, "ts",
 * then "COL:FN" per spec; the strings are in *text, one allocation. */
static int aggregate_names(const ts_schema *s, const struct cli_req *r, const char ***names,
                           char **text)
{
	size_t size = 0, at = 0;
	int n = r->group + 1 + r->nspecs;
	for (int i = 0; i < r->nspecs; i++)
		size += strlen(s->columns[r->specs[i].column].name) + 16;
	if (!(*names = calloc((size_t)n, sizeof **names)) || !(*text = malloc(size + 1)))
		return -1;
	for (int i = 0; i < r->group; i++)
		(*names)[i] = s->columns[s->key[i]].name;
	(*names)[r->group] = "ts";
	for (int i = 0; i < r->nspecs; i++) {
		(*names)[r->group + 1 + i] = *text + at;
		at += (size_t)sprintf(*text + at, "%s:%s", s->columns[r->specs[i].column].name,
		                      ts_aggfn_name(r->specs[i].fn)) + 1;
	}
	return n;
}

/* Running a command, step 1: the options each kind requires (latest:
 * --prefix; aggregate: --every and --column).  Returns CLI_CONTINUE, or
 * CLI_USAGE after the message. */
static int check_required(struct cli *cli, const struct query_args *a, enum cli_req_kind kind)
{
	if (kind == CLI_REQ_LATEST && !a->prefix)
		return cli_usage(cli, "missing --prefix");
	if (kind == CLI_REQ_AGGREGATE && !a->req.every)
		return cli_usage(cli, "missing --every");
	if (kind == CLI_REQ_AGGREGATE && a->nspecs == 0)
		return cli_usage(cli, "missing --column");
	return CLI_CONTINUE;
}

/* Step 2: what needs the schema, into a->req: the --prefix values, the
 * aggregate's --column specs, --group checked against the key.  Returns
 * CLI_CONTINUE, or CLI_USAGE after the message. */
static int apply_schema(struct cli *cli, const ts_schema *s, struct query_args *a,
                        enum cli_req_kind kind)
{
	int status = CLI_CONTINUE;
	if (a->prefix)
		status = parse_prefix(cli, s, a->prefix, &a->req);
	for (int i = 0; i < a->nspecs && status == CLI_CONTINUE; i++)
		status = parse_specs(cli, s, a->specs[i], &a->req);
	if (status == CLI_CONTINUE && kind == CLI_REQ_AGGREGATE && a->req.group >= s->nkey)
		status = cli_usage(cli, "--group %d: the table has %d key columns before ts",
		                   a->req.group, s->nkey - 1);
	return status;
}

/* Step 3: the names of the printed columns: an aggregate's
 * (aggregate_names, strings in *text), else the table's.  Returns their
 * number, or -1 when out of memory. */
static int output_names(const ts_schema *s, const struct cli_req *r, const char ***names,
                        char **text)
{
	int n;
	if (r->kind == CLI_REQ_AGGREGATE)
		return aggregate_names(s, r, names, text);
	if (!(*names = calloc((size_t)s->ncolumns, sizeof **names)))
		return -1;
	for (n = 0; n < s->ncolumns; n++)
		(*names)[n] = s->columns[n].name;
	return n;
}

/* query, latest, aggregate and dump: the options, then steps 1 to 3 with
 * the store open, then run. */
static int run_command(struct cli *cli, int argc, char **argv, const struct option *opts,
                       enum cli_req_kind kind)
{
	struct query_args a = {.req = {.kind = kind}};
	struct cli_store *st = NULL;
	ts_schema *s = NULL;
	const char **names = NULL;
	char *text = NULL;
	int n, status = parse_query(cli, argc, argv, opts, &a);
	if (status != CLI_CONTINUE || (status = check_required(cli, &a, kind)) != CLI_CONTINUE)
		goto out;
	a.req.table = a.table;
	if ((status = cli_store_open(cli, TS_OPEN_READONLY, &st)) != CLI_OK ||
	    (status = cli_store_schema(cli, st, a.table, &s)) != CLI_OK ||
	    (status = apply_schema(cli, s, &a, kind)) != CLI_CONTINUE)
		goto out;
	if ((n = output_names(s, &a.req, &names, &text)) < 0) {
		status = cli_fail(cli, "out of memory");
		goto out;
	}
	status = run(cli, st, &a.req, s, a.has_format ? a.format : kind == CLI_REQ_DUMP ? ROWFMT_JSONL
	                                                                              : ROWFMT_TSV,
	             names, n, kind == CLI_REQ_DUMP);
	if (status == CLI_NO_ROW)
		status = cli_fail(cli, "no row with prefix \"%s\"", a.prefix);
out:
	free(names);
	free(text);
	cli_schema_free(s);
	query_args_free(&a);
	return cli_store_close(cli, st, status);
}

int cli_cmd_query(struct cli *cli, int argc, char **argv)
{
	static const struct option opts[] = {
		{"prefix", required_argument, NULL, 'p'},
		{"from", required_argument, NULL, 'F'},
		{"to", required_argument, NULL, 'T'},
		{"desc", no_argument, NULL, 'D'},
		{"limit", required_argument, NULL, 'l'},
		{"format", required_argument, NULL, 'f'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	return run_command(cli, argc, argv, opts, CLI_REQ_QUERY);
}

int cli_cmd_latest(struct cli *cli, int argc, char **argv)
{
	static const struct option opts[] = {
		{"prefix", required_argument, NULL, 'p'},
		{"format", required_argument, NULL, 'f'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	return run_command(cli, argc, argv, opts, CLI_REQ_LATEST);
}

int cli_cmd_aggregate(struct cli *cli, int argc, char **argv)
{
	static const struct option opts[] = {
		{"every", required_argument, NULL, 'e'},
		{"group", required_argument, NULL, 'g'},
		{"column", required_argument, NULL, 'c'},
		{"prefix", required_argument, NULL, 'p'},
		{"from", required_argument, NULL, 'F'},
		{"to", required_argument, NULL, 'T'},
		{"format", required_argument, NULL, 'f'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	return run_command(cli, argc, argv, opts, CLI_REQ_AGGREGATE);
}

int cli_cmd_dump(struct cli *cli, int argc, char **argv)
{
	static const struct option opts[] = {
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	return run_command(cli, argc, argv, opts, CLI_REQ_DUMP);
}
