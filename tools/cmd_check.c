/*
 * cmd_check.c -- the commands that look after the files: check and
 * snapshot.
 *
 *     tsstore check [TABLE]
 *         verify every checksum and invariant of the table's files, or of
 *         every table's (ts_check: descriptor, tablets, log); print one
 *         line per problem on stdout, "FILE: what" with FILE relative to
 *         the database directory; nothing when all is sound.  A damaged
 *         database fails with "tsstore: check: N problems found" (exit 1).
 *     tsstore snapshot [--incremental] DEST
 *         a consistent copy of the database in the new directory DEST
 *         (ts_backup: tablets hard-linked, the rest copied), which opens
 *         and passes check; with --incremental, DEST may hold an earlier
 *         copy, brought up to date with only the new tablets
 *         (ts_backup_incremental).
 *
 * Both open the database read-only, so they run beside a live tsstored
 * with -d; with -s the daemon does the work on its own handle (DEST is
 * then made absolute, as it is a path for the daemon's process).  On a
 * terminal check draws its progress in bytes verified.
 */
#include <inttypes.h>
#include <stdio.h>
#include <unistd.h>

#include "cli.h"
#include "progress.h"
#include "store.h"

struct check_run {
	struct cli_progress progress;
};

static void print_problem(void *arg, const char *table, const char *file, const char *what)
{
	struct check_run *run = arg;
	(void)table; /* the file's path starts with it */
	cli_progress_clear(&run->progress);
	printf("%s: %s\n", file, what);
}

static void show_progress(void *arg, uint64_t done, uint64_t total)
{
	struct check_run *run = arg;
	run->progress.total = total;
	cli_progress_update(&run->progress, CLI_PROGRESS_BYTES, done);
}

int cli_cmd_check(struct cli *cli, int argc, char **argv)
{
	static const char *const names[] = {"TABLE"};
	struct check_run run;
	struct cli_check_report rep = {.problem = print_problem, .progress = show_progress, .arg = &run};
	struct cli_store *st = NULL;
	const char *table;
	uint64_t count = 0;
	int rc, status = cli_parse_operands(cli, argc, argv, names, 0, 1, &table);
	if (status != CLI_CONTINUE)
		goto out;
	if ((status = cli_store_open(cli, TS_OPEN_READONLY, &st)) != CLI_OK)
		goto out;
	cli_progress_init(&run.progress, cli->cmd->name, 0, isatty(STDERR_FILENO));
	rc = cli_store_check(st, table, &rep, &count);
	cli_progress_clear(&run.progress);
	if (rc < 0)
		status = cli_fail(cli, "%s", cli_store_errmsg(st, rc));
	else if (count > 0)
		status = cli_fail(cli, "%" PRIu64 " problem%s found", count, count == 1 ? "" : "s");
out:
	return cli_store_close(cli, st, status);
}

int cli_cmd_snapshot(struct cli *cli, int argc, char **argv)
{
	static const struct option opts[] = {
		{"incremental", no_argument, NULL, 'i'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	static const char *const names[] = {"DEST"};
	struct cli_store *st = NULL;
	const char *dest;
	int c, rc, incremental = 0, status = CLI_CONTINUE;
	while ((c = cli_getopt(cli, argc, argv, opts, &status)) >= 0)
		incremental = 1; /* 'i', the only option cli_getopt returns */
	if (c == CLI_STOP || (status = cli_operands(cli, argc, argv, names, 1, 1, &dest)) != CLI_CONTINUE)
		goto out;
	if ((status = cli_store_open(cli, TS_OPEN_READONLY, &st)) != CLI_OK)
		goto out;
	if ((rc = cli_store_snapshot(st, dest, incremental)) < 0)
		status = cli_fail(cli, "%s", cli_store_errmsg(st, rc));
out:
	return cli_store_close(cli, st, status);
}
