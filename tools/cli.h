/*
 * cli.h -- what the modules of the tsstore admin command share.
 *
 * The command line is DESIGN.md section 7:
 *     tsstore [-d DATADIR | -s SOCKET] COMMAND [ARGS]
 * tsstore.c parses the global options and dispatches through a table of
 * struct cli_command; each command's handler (cmd_*.c) parses its own
 * arguments with cli_getopt() and leaves through one of the message
 * functions below, so the exit statuses and the shape of every message are
 * decided in one place (cli.c):
 *     0  success
 *     1  failure: one line "tsstore: COMMAND: why" on stderr
 *     2  usage error: "tsstore: COMMAND: why" and the command's usage line
 * Only include/tsstore.h is used from the library, never lib/ internals.
 */
#ifndef TSSTORE_TOOLS_CLI_H
#define TSSTORE_TOOLS_CLI_H

#include <getopt.h>
#include <stdint.h>
#include <stdio.h>

#include <tsstore.h>

#include "client.h"

#define CLI_PROGRAM "tsstore"
#define CLI_DEFAULT_DATADIR "./tsstore-data"
#define CLI_SOCKET_ENV "TSSTORE_SOCKET"
#define CLI_TIMEOUT_ENV "TSSTORE_TIMEOUT"
/* The unix socket tsstored listens on in its DATADIR when given no
 * --listen (daemon/tsd.h's TSD_SOCKET_NAME): -d DATADIR goes through it
 * when tsstored holds DATADIR's lock (store.c). */
#define CLI_DAEMON_SOCKET_NAME "tsstored.sock"
#define CLI_GLOBAL_USAGE "[-d DATADIR | -s SOCKET] COMMAND [ARGS]"

/* Limits of the tool, named once. */
#define CLI_INSERT_BATCH_ROWS 1000   /* rows per ts_insert call of insert */
/* insert: a batch not full is sent once no input came for --flush-idle
 * (default below), or once its first row has waited the longer of that
 * and CLI_INSERT_HOLD_MAX_MS, so that a steady trickle is stored too. */
#define CLI_INSERT_FLUSH_IDLE_DEFAULT "200ms"
#define CLI_INSERT_HOLD_MAX_MS 1000
#define CLI_INPUT_READ_SIZE 65536    /* insert's first read buffer (it grows for long lines) */
#define CLI_PROGRESS_INTERVAL_MS 250 /* least time between progress redraws */
#define CLI_MESSAGE_MAX 1024         /* longest message about one row */
/* -s: the default limit on each wait for the daemon (common/jconn.h), and
 * that of the commands whose answer comes only once the daemon has gone
 * through the whole database or table (check, snapshot, flush). */
#define CLI_TIMEOUT_DEFAULT JCONN_TIMEOUT_DEFAULT
#define CLI_TIMEOUT_LONG INT64_C(600000000000) /* 10 min */

/* Exit statuses, and the value a parsing step returns to say "go on". */
enum {
	CLI_OK = 0,
	CLI_FAILURE = 1,
	CLI_USAGE = 2,
	CLI_CONTINUE = -1,
};

struct cli;

/* A command's handler: argv[0] is the command's name.  Returns the exit
 * status. */
typedef int cli_handler(struct cli *cli, int argc, char **argv);

struct cli_command {
	const char *name;
	cli_handler *run;
	const char *usage;   /* what follows "tsstore ", e.g. "drop TABLE" */
	const char *summary; /* one line for --help */
};

/* The state of one run of the program. */
struct cli {
	const struct cli_command *cmd; /* NULL until the command is known */
	const char *datadir;           /* direct mode (-d), else NULL */
	const char *socket;            /* daemon mode (-s): an address of client.h, else NULL */
	const char *token_file;        /* -s: --token-file, else NULL ($TSSTORE_TOKEN...) */
	int64_t timeout;               /* -s: --timeout or $TSSTORE_TIMEOUT in ns (0: none),
	                                  or -1: the command's default */
	int64_t time_unit;             /* --time-unit in ns per unit, or 0: not given
	                                  (clitime.c) */
};

/* ---- messages (cli.c) ---- */

/* "tsstore: [COMMAND: ]why" on stderr; returns CLI_FAILURE. */
int cli_fail(const struct cli *cli, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* cli_fail with the library's message for the failure rc (ts_errmsg, or
 * ts_strerror(rc) when the library left none). */
int cli_fail_lib(const struct cli *cli, int rc);

/* "tsstore: [COMMAND: ]why" and the usage line on stderr; returns
 * CLI_USAGE. */
int cli_usage(const struct cli *cli, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* The usage line and summary of cmd, for COMMAND --help. */
void cli_command_help(const struct cli_command *cmd, FILE *f);

/* ---- arguments (cli.c) ---- */

/*
 * cli_getopt -- the next option of a command's arguments, as getopt_long
 * (operands may come before, between or after options; -h/--help is
 * handled here).  Returns the option's val, or -1 at the end; or CLI_STOP
 * with *status set: CLI_OK when the help was shown, CLI_USAGE after a
 * message about an unknown option or a missing argument.  The caller set
 * optind = 0 before the first call (tsstore.c does).
 */
#define CLI_STOP (-2)
int cli_getopt(const struct cli *cli, int argc, char **argv,
               const struct option *opts, int *status);

/*
 * cli_abbreviated -- after getopt_long returned long option opts[index]:
 * the word as typed when it was an abbreviation ("--col" for "--column"),
 * else NULL.  getopt_long accepts abbreviations; tsstore does not, so that
 * adding an option never changes what an existing command line means.
 */
const char *cli_abbreviated(char **argv, const struct option *opts, int index);

/*
 * cli_operands -- the operands left after the options (argv[optind..]):
 * between min and max of them, stored in out[0..max), missing ones NULL.
 * names[i] names operand i in the message about a missing one.  Returns
 * CLI_CONTINUE, or CLI_USAGE after the message.
 */
int cli_operands(const struct cli *cli, int argc, char **argv,
                 const char *const *names, int min, int max, const char **out);

/* The whole parse of a command that has no options but --help: operands
 * as cli_operands.  Returns CLI_CONTINUE, CLI_OK (help shown) or
 * CLI_USAGE. */
int cli_parse_operands(const struct cli *cli, int argc, char **argv,
                       const char *const *names, int min, int max, const char **out);

/* ---- the database (cli.c) ---- */

/* Open the database of the run (cli->datadir) with TS_OPEN_* flags.
 * Returns CLI_OK; CLI_LOCKED, with no message (the library's is left in
 * ts_errmsg), when another process holds the database's write lock
 * (TS_ELOCKED), for store.c to go through the tsstored serving it; or
 * CLI_FAILURE after the message.  The commands use store.h, which calls
 * this in the direct mode. */
#define CLI_LOCKED (-3)
int cli_open(const struct cli *cli, unsigned flags, ts_db **db);

/* Open table name of db.  Returns CLI_OK or CLI_FAILURE after the message. */
int cli_table_open(const struct cli *cli, ts_db *db, const char *name, ts_table **t);

/* Close db (NULL allowed) and return status, or CLI_FAILURE if status was
 * CLI_OK and closing failed (pending data could not be synced). */
int cli_close(const struct cli *cli, ts_db *db, int status);

/* ---- the commands (cmd_show.c, cmd_ddl.c, cmd_insert.c, cmd_query.c, cmd_check.c) ---- */

int cli_cmd_tables(struct cli *cli, int argc, char **argv);
int cli_cmd_schema(struct cli *cli, int argc, char **argv);
int cli_cmd_stats(struct cli *cli, int argc, char **argv);
int cli_cmd_status(struct cli *cli, int argc, char **argv);
int cli_cmd_promote(struct cli *cli, int argc, char **argv);
int cli_cmd_create(struct cli *cli, int argc, char **argv);
int cli_cmd_alter(struct cli *cli, int argc, char **argv);
int cli_cmd_drop(struct cli *cli, int argc, char **argv);
int cli_cmd_create_rollup(struct cli *cli, int argc, char **argv);
int cli_cmd_rollups(struct cli *cli, int argc, char **argv);
int cli_cmd_flush(struct cli *cli, int argc, char **argv);
int cli_cmd_check(struct cli *cli, int argc, char **argv);
int cli_cmd_snapshot(struct cli *cli, int argc, char **argv);
int cli_cmd_insert(struct cli *cli, int argc, char **argv);
int cli_cmd_load(struct cli *cli, int argc, char **argv);
int cli_cmd_query(struct cli *cli, int argc, char **argv);
int cli_cmd_latest(struct cli *cli, int argc, char **argv);
int cli_cmd_aggregate(struct cli *cli, int argc, char **argv);
int cli_cmd_dump(struct cli *cli, int argc, char **argv);
int cli_cmd_changes(struct cli *cli, int argc, char **argv);
/* cmd_delete.c */
int cli_cmd_delete(struct cli *cli, int argc, char **argv);
int cli_cmd_purge(struct cli *cli, int argc, char **argv);

#endif /* TSSTORE_TOOLS_CLI_H */
