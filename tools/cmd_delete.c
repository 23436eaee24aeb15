/*
 * cmd_delete.c -- the commands that take rows out of a table: delete and
 * purge (docs/corrections.md, issue 28).
 *
 *     tsstore delete TABLE [--prefix V,...] [--from T] [--to T] | --all
 *     tsstore purge TABLE [--prefix V,...] [--from T] [--to T]
 *
 * The range is query's: --prefix, --from and --to select exactly the
 * rows `tsstore query TABLE` with the same options prints (the values
 * of --prefix are read by the schema, as query reads them), and the
 * library's ts_delete takes the same ts_query (store.c).
 *
 * delete refuses to run without a range unless --all says so: a
 * forgotten --prefix must not empty a table (an operator trap), and
 * --all with a range is refused too, so that what runs is what was
 * meant.  On success it prints one line on stdout:
 *     42 rows deleted, version 1234
 *     rows deleted (not counted), version 1234
 * the second when the library could not count them without reading them
 * (TS_COUNT_UNKNOWN); the version is the delete's (as the stat
 * "version" and insert answers give it), for `changes --since`.
 *
 * purge removes physically the rows deleted or replaced inside its
 * range (the whole table without one: it deletes nothing that is not
 * deleted already, so it needs no --all); it prints nothing, as flush.
 *
 * Both work on the files (-d) or through tsstored (-s), where they need
 * admin (tsstored(8)).  Steps as in cmd_ddl.c: the arguments (usage
 * errors, exit 2), then the store and the schema (for --prefix), then
 * the call (exit 1 with the library's message).
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "args.h"
#include "cli.h"
#include "clitime.h"
#include "store.h"

struct delete_args {
	const char *prefix; /* the --prefix text, read by the schema */
	int all;            /* --all */
	struct cli_req req; /* table, from, to; the prefix once read */
};

/* One option; CLI_OK or the status to stop with. */
static int delete_option(const struct cli *cli, int c, struct delete_args *a)
{
	switch (c) {
	case 'p':
		a->prefix = optarg;
		return CLI_OK;
	case 'F':
		a->req.has_from = 1;
		return cli_time_option(cli, "--from", optarg, &a->req.from);
	case 'T':
		a->req.has_to = 1;
		return cli_time_option(cli, "--to", optarg, &a->req.to);
	case 'A':
		a->all = 1;
		return CLI_OK;
	default:
		return CLI_USAGE;
	}
}

/* The arguments of delete (purge: is_purge, no --all). */
static int parse_delete(const struct cli *cli, int argc, char **argv, int is_purge,
                        struct delete_args *a)
{
	static const struct option opts[] = {
		{"prefix", required_argument, NULL, 'p'},
		{"from", required_argument, NULL, 'F'},
		{"to", required_argument, NULL, 'T'},
		{"help", no_argument, NULL, 'h'},
		{"all", no_argument, NULL, 'A'}, /* delete only: last, cut for purge */
		{NULL, 0, NULL, 0},
	};
	static const struct option purge_opts[] = {
		{"prefix", required_argument, NULL, 'p'},
		{"from", required_argument, NULL, 'F'},
		{"to", required_argument, NULL, 'T'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	static const char *const names[] = {"TABLE"};
	int c, status = CLI_CONTINUE, ranged;
	while ((c = cli_getopt(cli, argc, argv, is_purge ? purge_opts : opts, &status)) >= 0)
		if ((status = delete_option(cli, c, a)) != CLI_OK)
			return status;
	if (c == CLI_STOP)
		return status;
	if ((status = cli_operands(cli, argc, argv, names, 1, 1, &a->req.table)) != CLI_CONTINUE)
		return status;
	if (a->req.has_from && a->req.has_to && a->req.from >= a->req.to)
		return cli_usage(cli, "--from must be before --to");
	ranged = a->prefix || a->req.has_from || a->req.has_to;
	if (!is_purge && !ranged && !a->all)
		return cli_usage(cli, "no range given: that would delete every row of \"%s\"; give "
		                 "--prefix, --from or --to, or --all to mean it", a->req.table);
	if (ranged && a->all)
		return cli_usage(cli, "--all deletes every row: it takes no --prefix, --from or --to");
	return CLI_CONTINUE;
}

/* The "N rows deleted, version V" line. */
static void say_deleted(uint64_t deleted, uint64_t version)
{
	if (deleted == TS_COUNT_UNKNOWN)
		printf("rows deleted (not counted), version %" PRIu64 "\n", version);
	else
		printf("%" PRIu64 " row%s deleted, version %" PRIu64 "\n", deleted,
		       deleted == 1 ? "" : "s", version);
}

/* delete or purge: the arguments, the store and the schema, the call. */
static int run_delete(struct cli *cli, int argc, char **argv, int is_purge)
{
	struct delete_args a = {0};
	struct cli_store *st = NULL;
	ts_schema *s = NULL;
	uint64_t deleted = 0, version = 0;
	int rc, status = parse_delete(cli, argc, argv, is_purge, &a);
	if (status != CLI_CONTINUE)
		goto out;
	if ((status = cli_store_open(cli, 0, &st)) != CLI_OK)
		goto out;
	if (a.prefix &&
	    ((status = cli_store_schema(cli, st, a.req.table, &s)) != CLI_OK ||
	     (status = cli_key_values(cli, s, "--prefix", a.prefix, a.req.prefix,
	                              &a.req.nprefix)) != CLI_CONTINUE))
		goto out;
	rc = is_purge ? cli_store_purge(st, &a.req, &version)
	              : cli_store_delete(st, &a.req, &deleted, &version);
	if (rc < 0)
		status = cli_fail(cli, "%s", cli_store_errmsg(st, rc));
	else if (!is_purge)
		say_deleted(deleted, version);
	status = rc < 0 ? CLI_FAILURE : CLI_OK;
out:
	cli_schema_free(s);
	cli_req_free(&a.req);
	return cli_store_close(cli, st, status);
}

int cli_cmd_delete(struct cli *cli, int argc, char **argv)
{
	return run_delete(cli, argc, argv, 0);
}

int cli_cmd_purge(struct cli *cli, int argc, char **argv)
{
	return run_delete(cli, argc, argv, 1);
}
