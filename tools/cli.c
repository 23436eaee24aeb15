/*
 * cli.c -- what every command of the tsstore tool shares: the messages and
 * exit statuses of DESIGN.md section 7, option scanning, and opening and
 * closing the database.
 *
 * Every failure leaves through cli_usage() (exit 2: the reason and the
 * command's usage line), cli_fail() or cli_fail_lib() (exit 1: one line,
 * the latter carrying the library's ts_errmsg()), so no handler formats an
 * error of its own.  cli_open() opens the database of -d for store.c,
 * which is where the two modes (-d, -s) part.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"

/* Write "tsstore: [COMMAND: ]why\n" to stderr. */
static void vsay(const struct cli *cli, const char *fmt, va_list ap)
{
	fputs(CLI_PROGRAM ": ", stderr);
	if (cli && cli->cmd)
		fprintf(stderr, "%s: ", cli->cmd->name);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
}

int cli_fail(const struct cli *cli, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsay(cli, fmt, ap);
	va_end(ap);
	return CLI_FAILURE;
}

int cli_fail_lib(const struct cli *cli, int rc)
{
	const char *msg = ts_errmsg(NULL);
	return cli_fail(cli, "%s", msg && *msg ? msg : ts_strerror(rc));
}

int cli_usage(const struct cli *cli, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsay(cli, fmt, ap);
	va_end(ap);
	if (cli && cli->cmd)
		fprintf(stderr, "usage: " CLI_PROGRAM " %s\n", cli->cmd->usage);
	else
		fputs("usage: " CLI_PROGRAM " " CLI_GLOBAL_USAGE "\n", stderr);
	return CLI_USAGE;
}

void cli_command_help(const struct cli_command *cmd, FILE *f)
{
	fprintf(f, "usage: " CLI_PROGRAM " %s\n", cmd->usage);
	fprintf(f, "%s\n", cmd->summary);
}

/* The option a failed getopt_long call was looking at.  A long option
 * and its missing argument leave it at argv[optind - 1]; an unknown short
 * option only in optopt. */
static int bad_option(const struct cli *cli, int c, char **argv)
{
	const char *what = c == ':' ? "option %s needs an argument" : "unknown option %s";
	char shortopt[3] = {'-', (char)optopt, '\0'};
	int is_short = optopt != 0 && strncmp(argv[optind - 1], "--", 2) != 0;
	return cli_usage(cli, what, is_short ? shortopt : argv[optind - 1]);
}

const char *cli_abbreviated(char **argv, const struct option *opts, int index)
{
	const char *name = opts[index].name;
	const char *word = argv[optind - 1];
	size_t n = strlen(name);
	if (optarg && optarg == argv[optind - 1])
		word = argv[optind - 2]; /* "--name VALUE": VALUE is a word of its own */
	if (strncmp(word, "--", 2) == 0 && strncmp(word + 2, name, n) == 0 &&
	    (word[2 + n] == '\0' || word[2 + n] == '='))
		return NULL;
	return word;
}

int cli_getopt(const struct cli *cli, int argc, char **argv,
               const struct option *opts, int *status)
{
	int c, index = -1;
	const char *word;
	opterr = 0;
	c = getopt_long(argc, argv, ":h", opts, &index);
	if (c >= 0 && index >= 0 && (word = cli_abbreviated(argv, opts, index))) {
		*status = cli_usage(cli, "unknown option %s", word);
		return CLI_STOP;
	}
	if (c == 'h') {
		cli_command_help(cli->cmd, stdout);
		*status = CLI_OK;
		return CLI_STOP;
	}
	if (c == '?' || c == ':') {
		*status = bad_option(cli, c, argv);
		return CLI_STOP;
	}
	return c;
}

int cli_operands(const struct cli *cli, int argc, char **argv,
                 const char *const *names, int min, int max, const char **out)
{
	int n = argc - optind;
	if (n < min)
		return cli_usage(cli, "missing %s", names[n]);
	if (n > max)
		return cli_usage(cli, "unexpected argument \"%s\"", argv[optind + max]);
	for (int i = 0; i < max; i++)
		out[i] = i < n ? argv[optind + i] : NULL;
	return CLI_CONTINUE;
}

int cli_parse_operands(const struct cli *cli, int argc, char **argv,
                       const char *const *names, int min, int max, const char **out)
{
	static const struct option opts[] = {
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	int c, status = CLI_CONTINUE;
	while ((c = cli_getopt(cli, argc, argv, opts, &status)) >= 0)
		; /* no option but --help, which cli_getopt handles */
	if (c == CLI_STOP)
		return status;
	return cli_operands(cli, argc, argv, names, min, max, out);
}

int cli_open(const struct cli *cli, unsigned flags, ts_db **db)
{
	ts_options opts;
	int rc;
	*db = NULL;
	ts_options_init(&opts);
	opts.flags = flags;
	if ((rc = ts_open(cli->datadir, &opts, db)) == TS_ELOCKED)
		return CLI_LOCKED;
	if (rc < 0)
		return cli_fail_lib(cli, rc);
	return CLI_OK;
}

int cli_table_open(const struct cli *cli, ts_db *db, const char *name, ts_table **t)
{
	int rc = ts_table_open(db, name, t);
	return rc < 0 ? cli_fail_lib(cli, rc) : CLI_OK;
}

int cli_close(const struct cli *cli, ts_db *db, int status)
{
	int rc = ts_close(db);
	if (rc < 0 && status == CLI_OK)
		return cli_fail_lib(cli, rc);
	return status;
}
