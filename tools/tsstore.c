/*
 * tsstore.c -- the admin command: global options, the table of commands
 * and the dispatch (DESIGN.md section 7).
 *
 *     tsstore [-d DATADIR | -s SOCKET] COMMAND [ARGS]
 *
 * main() moves through fixed steps: parse the global options (which stop
 * at the first operand, the command); choose the mode (-d, -s, else
 * $TSSTORE_SOCKET if set, else -d ./tsstore-data); look the command up in
 * `commands`; run its handler on argv from the command on, with getopt
 * reset so that the handler parses its own options.  Finally a
 * failed write to stdout turns success into failure, so that output lost
 * to a full disk or a closed pipe is never reported as done.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "clitime.h"

static const struct cli_command commands[] = {
	{"tables", cli_cmd_tables, "tables [--long]",
	 "list the tables, one name per line (--long: and TAB \"table\" or TAB \"rollup of SOURCE"
	 " every DUR group N: COL:FN,...\")"},
	{"create", cli_cmd_create,
	 "create TABLE --column NAME:TYPE[=DEFAULT]... --key COL,...,ts [--ttl DUR]"
	 " [--on-duplicate reject|ignore|replace]",
	 "create a table (a column ts of type timestamp is added when not given)"},
	{"schema", cli_cmd_schema, "schema TABLE",
	 "show the columns: name TAB type TAB default TAB key position (or -)"},
	{"stats", cli_cmd_stats, "stats [TABLE]",
	 "show the counters of TABLE, or of every table, as \"name: value\" lines"},
	{"status", cli_cmd_status, "status",
	 "with -s: whether tsstored is a primary or a standby, its epoch; a standby's primary,"
	 " link and lag"},
	{"promote", cli_cmd_promote, "promote [--force]",
	 "with -s: make the standby tsstored a primary of the next epoch; it stops following"
	 " (--force: a stale primary takes writes again, past the epoch that fenced it)"},
	{"alter", cli_cmd_alter,
	 "alter TABLE [--add NAME:TYPE[=DEFAULT]]... [--widen COL]... [--ttl DUR]"
	 " [--on-duplicate reject|ignore|replace]",
	 "append columns, widen int32 columns to int64, set the TTL or the duplicate policy,"
	 " in the order given"},
	{"drop", cli_cmd_drop, "drop TABLE",
	 "drop a table and remove its files (a table with rollups: drop them first)"},
	{"create-rollup", cli_cmd_create_rollup,
	 "create-rollup NAME --from SOURCE --every DUR [--group N] --column COL:FN,... [--ttl DUR]",
	 "create a rollup: a table of SOURCE's rows per window and group (its first N key"
	 " columns), kept by the store; columns COL_FN"},
	{"rollups", cli_cmd_rollups, "rollups TABLE",
	 "list the rollups made from TABLE, one name per line"},
	{"insert", cli_cmd_insert,
	 "insert TABLE [--format tsv|jsonl|csv] [--on-duplicate reject|ignore|replace]"
	 " [--flush-idle DUR] [FILE]",
	 "insert rows from FILE or stdin (no FILE, or -), batched; report bad rows by line"},
	{"query", cli_cmd_query,
	 "query TABLE [--prefix V,...] [--from T] [--to T] [--desc] [--limit N] [--after KEY]"
	 " [--columns COL,...] [--no-header] [--format tsv|jsonl|csv] [--output FILE]",
	 "print the rows inside a key range and a time range; a cut result says the --after"
	 " that continues it"},
	{"latest", cli_cmd_latest,
	 "latest TABLE --prefix V,... [--columns COL,...] [--no-header] [--format tsv|jsonl|csv]"
	 " [--output FILE]",
	 "print the newest row for the prefix"},
	{"aggregate", cli_cmd_aggregate,
	 "aggregate TABLE --every DUR [--group N] --column COL:FN,... [--prefix V,...] [--from T] [--to T] "
	 "[--explain] [--raw] [--columns NAME,...] [--no-header] [--format tsv|jsonl|csv] [--output FILE]",
	 "windowed statistics: count sum min max mean first last, in columns named COL_FN;"
	 " answered from a rollup where one fits (--explain says which, --raw never)"},
	{"delete", cli_cmd_delete, "delete TABLE [--prefix V,...] [--from T] [--to T] [--all]",
	 "delete the rows of a key prefix and time range (--all: every row)"},
	{"purge", cli_cmd_purge, "purge TABLE [--prefix V,...] [--from T] [--to T]",
	 "remove the deleted and replaced rows of the range (default: the table) from the files"},
	{"changes", cli_cmd_changes,
	 "changes TABLE --since V [--until W] [--resolution DUR] [--depth N] [--columns COL,...]"
	 " [--no-header] [--format tsv|jsonl|csv] [--output FILE]",
	 "the windows, per key prefix of depth N, that commits after version V touched"},
	{"flush", cli_cmd_flush, "flush [TABLE] [--before T]",
	 "persist rows to on-disk tablets"},
	{"check", cli_cmd_check, "check [TABLE]",
	 "verify every checksum and invariant; exit 1 on damage"},
	{"snapshot", cli_cmd_snapshot, "snapshot [--incremental] DEST",
	 "make a consistent copy of the database, safe to rsync (--incremental: bring an earlier copy in DEST up to date with only what changed)"},
	{"dump", cli_cmd_dump, "dump TABLE [--output FILE]", "export the rows of a table as jsonl"},
	{"load", cli_cmd_load,
	 "load TABLE [--on-duplicate reject|ignore|replace] [--flush-idle DUR] [FILE]",
	 "import rows into a table from jsonl (dump's output; .tsv and .csv files by their extension)"},
};

#define NCOMMANDS (sizeof commands / sizeof commands[0])

static const char help_options[] =
	"Options:\n"
	"  -d DATADIR   work on the database files directly (default " CLI_DEFAULT_DATADIR ");\n"
	"               while tsstored serves DATADIR, writes go through its socket\n"
	"               DATADIR/" CLI_DAEMON_SOCKET_NAME "\n"
	"  -s SOCKET    go through tsstored listening on the unix socket SOCKET\n"
	"               (or unix:PATH, or tcp:HOST:PORT; default $" CLI_SOCKET_ENV " if set)\n"
	"  --token-file FILE  with -s tcp:...: send the token on the first line of\n"
	"               FILE (default $" CLIENT_TOKEN_ENV ", else the file\n"
	"               $" CLIENT_TOKEN_FILE_ENV ")\n"
	"  --timeout DUR  with -s: how long to wait for the daemon to connect and\n"
	"               for each next part of its answer (default $" CLI_TIMEOUT_ENV "\n"
	"               if set, else 30s; 10m for check, snapshot, flush; 0: no limit)\n"
	"  --time-unit s|ms|us|ns  what a bare integer timestamp counts in the\n"
	"               time options and the rows insert reads (without it: ns,\n"
	"               and one before 1990 is refused as a likely mistake)\n"
	"  -h, --help   show this help and exit (COMMAND --help: that command's usage)\n"
	"  -V, --version  show the version and exit\n";

static const char help_notes[] =
	"Types: int32 int64 double timestamp string blob.  A DEFAULT is decimal\n"
	"(int32, int64), a number (double), a timestamp, text as is (string) or\n"
	"hex (blob).  Doubles also take nan, inf, infinity in any case, signed,\n"
	"and print NaN, Infinity, -Infinity (in jsonl as strings, -0 as -0.0).\n"
	"Timestamps: RFC 3339 (2026-11-21T10:00:00Z), a date (2026-11-21, its\n"
	"midnight UTC), an epoch count with a unit (1732550000s, also ms us ns),\n"
	"integer nanoseconds (before 1990 only with --time-unit), now, or a time\n"
	"relative to it: now-15m, now+5m, -1h.\n"
	"Durations: <n><unit>, unit one of ns us ms s m h d w; a TTL of 0 keeps\n"
	"rows forever.\n"
	"insert: tsv (the default) and csv (RFC 4180 quoting) start with a header\n"
	"line naming any of the columns, in any order; jsonl is one object per\n"
	"line, keys are column names.  Values as for DEFAULT; tsv escapes tab,\n"
	"newline and backslash as \\t \\n \\\\; jsonl blobs are base64, timestamps\n"
	"integer ns or text.  A column not given, an empty number or timestamp\n"
	"field, or null takes the default (ts: the time the row was read).  Each\n"
	"bad row is reported with its line number and skipped; the others are\n"
	"stored; the last line is \"insert: N rows stored, M rejected\".  Rows go\n"
	"in batches of 1000, or fewer once no input came for --flush-idle\n"
	"(default " CLI_INSERT_FLUSH_IDLE_DEFAULT ") or the first has waited 1s.\n"
	"Without --format, a FILE named *.tsv, *.csv or *.jsonl is read in that\n"
	"format (insert and load), and --output FILE is written in it (query,\n"
	"latest, aggregate, dump).  query, latest, aggregate: --columns prints\n"
	"those columns in that order; --no-header drops the header line (tsv,\n"
	"csv).  aggregate names its columns COL_FN (usage_mean), so its output\n"
	"is insert's input.  When --limit cuts a query, stderr says \"more:\n"
	"--after KEY\": the same query with --after KEY continues right after\n"
	"the last row printed.\n"
	"Exit status: 0 success, 1 failure, 2 usage error.\n";

static void print_help(FILE *f)
{
	fputs("usage: " CLI_PROGRAM " " CLI_GLOBAL_USAGE "\n\n", f);
	fputs(help_options, f);
	fputs("\nCommands:\n", f);
	for (size_t i = 0; i < NCOMMANDS; i++)
		fprintf(f, "  %s\n      %s\n", commands[i].usage, commands[i].summary);
	fputc('\n', f);
	fputs(help_notes, f);
}

static void print_version(FILE *f)
{
	fprintf(f, CLI_PROGRAM " %s", TS_VERSION_STRING);
	if (strcmp(ts_version(), TS_VERSION_STRING) != 0)
		fprintf(f, " (libtsstore %s)", ts_version());
	fputc('\n', f);
}

/* One global option; CLI_CONTINUE, or the exit status to stop with. */
static int global_option(struct cli *cli, int c, char **argv)
{
	switch (c) {
	case 'd':
		cli->datadir = optarg;
		return CLI_CONTINUE;
	case 's':
		cli->socket = optarg;
		return CLI_CONTINUE;
	case 'K':
		cli->token_file = optarg;
		return CLI_CONTINUE;
	case 'T':
		if (ts_duration_parse(optarg, &cli->timeout) < 0)
			return cli_usage(cli, "--timeout \"%s\": want a duration (30s, 2m; 0: no limit)",
			                 optarg);
		return CLI_CONTINUE;
	case 'U':
		if (cli_time_unit_parse(optarg, &cli->time_unit) < 0)
			return cli_usage(cli, "--time-unit \"%s\": want s, ms, us or ns", optarg);
		return CLI_CONTINUE;
	case 'h':
		print_help(stdout);
		return CLI_OK;
	case 'V':
		print_version(stdout);
		return CLI_OK;
	case ':':
		return cli_usage(cli, "option %s needs an argument", argv[optind - 1]);
	default:
		return optopt && strncmp(argv[optind - 1], "--", 2) != 0
		       ? cli_usage(cli, "unknown option -%c", optopt)
		       : cli_usage(cli, "unknown option %s", argv[optind - 1]);
	}
}

/* The options before the command, and the mode they choose. */
static int parse_global(struct cli *cli, int argc, char **argv)
{
	static const struct option opts[] = {
		{"help", no_argument, NULL, 'h'},
		{"version", no_argument, NULL, 'V'},
		{"timeout", required_argument, NULL, 'T'},
		{"token-file", required_argument, NULL, 'K'},
		{"time-unit", required_argument, NULL, 'U'},
		{NULL, 0, NULL, 0},
	};
	const char *env = getenv(CLI_SOCKET_ENV), *tenv = getenv(CLI_TIMEOUT_ENV), *word;
	int c, status, index = -1;
	opterr = 0;
	cli->timeout = -1;
	while ((c = getopt_long(argc, argv, "+:d:s:hV", opts, &index)) != -1) {
		if (index >= 0 && (word = cli_abbreviated(argv, opts, index)))
			return cli_usage(cli, "unknown option %s", word);
		if ((status = global_option(cli, c, argv)) != CLI_CONTINUE)
			return status;
		index = -1;
	}
	if (cli->datadir && cli->socket)
		return cli_usage(cli, "-d and -s cannot be used together");
	if (!cli->datadir && !cli->socket && env && *env)
		cli->socket = env;
	if (!cli->datadir && !cli->socket)
		cli->datadir = CLI_DEFAULT_DATADIR;
	if (cli->timeout < 0 && tenv && *tenv && ts_duration_parse(tenv, &cli->timeout) < 0)
		return cli_usage(cli, "$" CLI_TIMEOUT_ENV " \"%s\": want a duration (30s, 2m; 0: no limit)",
		                 tenv);
	return CLI_CONTINUE;
}

static const struct cli_command *find_command(const char *name)
{
	for (size_t i = 0; i < NCOMMANDS; i++)
		if (strcmp(commands[i].name, name) == 0)
			return &commands[i];
	return NULL;
}

/* Look up and run the command at argv[0]. */
static int dispatch(struct cli *cli, int argc, char **argv)
{
	if (argc < 1)
		return cli_usage(cli, "missing command");
	if (!(cli->cmd = find_command(argv[0])))
		return cli_usage(cli, "%s: unknown command", argv[0]);
	optind = 0; /* a fresh getopt scan of the command's arguments */
	return cli->cmd->run(cli, argc, argv);
}

/* Output that could not be written is a failure, whatever the command
 * said. */
static int finish_output(int status)
{
	if (fflush(stdout) != 0 || ferror(stdout)) {
		const char *why = strerror(errno);
		fprintf(stderr, CLI_PROGRAM ": standard output: %s\n", why);
		return status == CLI_OK ? CLI_FAILURE : status;
	}
	return status;
}

int main(int argc, char **argv)
{
	struct cli cli = {0};
	int status = parse_global(&cli, argc, argv);
	if (status == CLI_CONTINUE)
		status = dispatch(&cli, argc - optind, argv + optind);
	return finish_output(status);
}
