/*
 * cmd_insert.c -- insert: rows from a file or standard input into a
 * table, in batches.
 *
 *     tsstore insert TABLE [--format tsv|jsonl|csv] [--on-duplicate POLICY]
 *                          [--flush-idle DUR] [FILE]
 *     tsstore load TABLE [--on-duplicate POLICY] [--flush-idle DUR] [FILE]
 *
 * FILE "-" or no FILE is standard input; the formats are input.c's.
 * --on-duplicate reject|ignore|replace stores every batch of the run
 * under that duplicate policy instead of the table's own
 * (ts_insert_policy), leaving the table's as it is: "replace" re-sends
 * corrected rows, "ignore" retries a load.
 * Without --format, a FILE named *.tsv, *.csv or *.jsonl is read in that
 * format (load: jsonl unless the name says otherwise).
 *
 * The run: parse the arguments (usage errors, exit 2); open the database
 * read-write and the table, take its schema, open the input (failures,
 * exit 1); then read rows into a batch of CLI_INSERT_BATCH_ROWS and hand
 * each batch to ts_insert, until the input ends or stops.
 *
 * When a batch is sent: when it is full; when the input ends; and, for
 * input that arrives over time (a pipe fed by `tail -F`, a terminal, a
 * socket), when no byte came for --flush-idle (default
 * CLI_INSERT_FLUSH_IDLE_DEFAULT; 0 sends whatever was read as soon as
 * nothing more is there at once), or when the batch's first row has
 * waited the longer of --flush-idle and CLI_INSERT_HOLD_MAX_MS (a steady
 * trickle that is never idle).  insert_wait() turns this into the wait
 * input.c may spend in poll(); an empty batch waits without limit.  A
 * regular file is read to its end without waiting, as always.
 *
 * A batch is atomic, so one bad row fails all of it.  store_range() then
 * finds the bad rows without losing the good ones: ts_insert's message
 * names the first bad row by its index ("row K: why"), so the K rows
 * before it are stored as a batch of their own, row K is rejected with
 * the library's message, and the rest is tried again, the same way.
 * When a message names no row, the range is halved until single rows
 * are left.  Errors that are about no row (ENOSPC, EIO, ENOMEM, ...) stop
 * the run: nothing after the first row not stored is tried.  A row that
 * input.c cannot parse is rejected the same way, after the rows before
 * it have been stored, so that messages come in line order.
 *
 * What is said on stderr, and nothing on stdout:
 *     tsstore: insert: line 17: duplicate key ("h1", 2026-11-21T10:00:00Z)
 *         one line per rejected row, the library's message (ts_errmsg)
 *         with its "row K" turned into the line the row starts on, or
 *         input.c's reason; control characters quoted from the input are
 *         escaped (\n \r \t \xHH) so that each message is one line;
 *     tsstore: insert: line 1: unknown column "x"
 *         a failure that stops the run (a bad header, a read error, a
 *         library error about no row);
 *     insert: 8640 rows stored, 2 rejected[, 5 duplicates ignored]
 *             [, stopped at line N]
 *         always last once reading began ("1 row stored" when singular);
 *         "duplicates ignored" when a table whose duplicate policy is
 *         ignore skipped rows (neither stored nor rejected: the rows of
 *         their keys were kept); "stopped at line N" when a failure
 *         ended the run early: no row from line N on was stored.
 * Exit status 0 when every row was stored, 1 when a row was rejected or
 * the run stopped early, 2 for a usage error.  SIGINT, SIGTERM or SIGHUP
 * stop the reading (input.c, cli_input_catch_signals): the batch read so
 * far is stored, the summary printed, and the command ends by that
 * signal.
 *
 * Rows without ts (the column not given, an empty field, null) take the
 * time they were read (stamp_row): cli_store_now() when the row is whole,
 * or one nanosecond after the time the previous such row took when that
 * is not later (a clock that has not moved or went back, or TSSTORE_NOW
 * frozen), so that no two rows of one run take the same time.  The
 * library would give every row of a ts_insert call the same "now"
 * instead, and a second row of the same key in one batch would be a
 * duplicate.  Through tsstored the time is this machine's.
 *
 * On a terminal (stderr, when the input is not typed on one) a progress
 * line shows rows done, the rate and, for a file, the share read and the
 * time left (progress.c).
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <limits.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "args.h"
#include "cli.h"
#include "input.h"
#include "progress.h"
#include "store.h"
#include "value.h"

struct insert_args {
	const char *table;
	const char *file;       /* NULL or "-": standard input */
	enum rowfmt format; /* default tsv */
	int64_t flush_idle; /* ns */
	int policy;         /* --on-duplicate, else TS_ON_DUPLICATE_TABLE */
};

/* The state of one insert run. */
struct insert {
	const struct cli *cli;
	struct cli_store *st;
	const char *table;
	const ts_schema *schema; /* the rows are built for it (cli_store_insert) */
	int policy;           /* of every batch: --on-duplicate, or TS_ON_DUPLICATE_TABLE */
	int ncols;
	struct cli_input *input;
	int ts_col;           /* the column ts (stamp_row) */
	int64_t last_now;     /* the last time stamp_row gave; INT64_MIN before */
	int idle_ms;          /* --flush-idle */
	int hold_ms;          /* the longest a row waits in the batch */
	struct timespec first_at; /* when the batch's first row was read (monotonic) */
	ts_value *rows;       /* CLI_INSERT_BATCH_ROWS rows of ncols values */
	uint64_t *lines;      /* the line each row of the batch starts on */
	size_t nrows;         /* rows in the batch */
	uint64_t stored, rejected, ignored;
	uint64_t stopped_at;  /* the first line not stored when the run stopped, else 0 */
	struct cli_progress progress;
};

/* ---- arguments and input ---- */

/* load takes no --format: it reads jsonl, or what FILE's extension
 * names (rowfmt_from_path); insert's --format wins over the extension,
 * and tsv is its default. */
static int parse_insert(const struct cli *cli, int argc, char **argv, int load,
                        struct insert_args *a)
{
	static const struct option insert_opts[] = {
		{"format", required_argument, NULL, 'f'},
		{"on-duplicate", required_argument, NULL, 'o'},
		{"flush-idle", required_argument, NULL, 'i'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	const struct option *opts = load ? insert_opts + 1 : insert_opts;
	a->format = load ? ROWFMT_JSONL : ROWFMT_TSV;
	a->policy = TS_ON_DUPLICATE_TABLE;
	static const char *const names[] = {"TABLE", "FILE"};
	const char *operands[2];
	int c, status = CLI_CONTINUE;
	int explicit = 0; /* --format given: it wins over FILE's extension */
	if (ts_duration_parse(CLI_INSERT_FLUSH_IDLE_DEFAULT, &a->flush_idle) < 0)
		return cli_fail(cli, "bad CLI_INSERT_FLUSH_IDLE_DEFAULT");
	while ((c = cli_getopt(cli, argc, argv, opts, &status)) >= 0) {
		if (c == 'i' && (status = cli_duration_option(cli, "--flush-idle", optarg,
		                                              &a->flush_idle)) != CLI_OK)
			return status;
		if (c == 'o') {
			ts_on_duplicate p;
			if ((status = cli_on_duplicate_option(cli, optarg, &p)) != CLI_OK)
				return status;
			a->policy = (int)p;
		}
		if (c == 'f')
			explicit = 1;
		if (c == 'f' && rowfmt_parse(optarg, &a->format) < 0)
			return cli_usage(cli, "--format \"%s\": want tsv, jsonl or csv", optarg);
	}
	if (c == CLI_STOP)
		return status;
	if ((status = cli_operands(cli, argc, argv, names, 1, 2, operands)) != CLI_CONTINUE)
		return status;
	a->table = operands[0];
	a->file = operands[1];
	if (a->file && !explicit)
		rowfmt_from_path(a->file, &a->format); /* else the default stays */
	return CLI_CONTINUE;
}

static int open_input(const struct cli *cli, const char *file, FILE **f, const char **name)
{
	if (!file || strcmp(file, "-") == 0) {
		*f = stdin;
		*name = "standard input";
		return CLI_OK;
	}
	if (!(*f = fopen(file, "r")))
		return cli_fail(cli, "%s: %s", file, strerror(errno));
	*name = file;
	return CLI_OK;
}

/* The size of the input when it is a regular file, else 0. */
static uint64_t input_size(FILE *f)
{
	struct stat st;
	if (fstat(fileno(f), &st) < 0 || !S_ISREG(st.st_mode) || st.st_size <= 0)
		return 0;
	return (uint64_t)st.st_size;
}

/* ns as whole milliseconds for poll(), rounded up, at most INT_MAX. */
static int ns_to_ms(int64_t ns)
{
	int64_t ms = ns / 1000000 + (ns % 1000000 != 0);
	return ms > INT_MAX ? INT_MAX : (int)ms;
}

static int insert_init(struct insert *ins, const struct cli *cli, const ts_schema *s,
                       FILE *f, const char *name, const struct insert_args *a)
{
	size_t nvalues = (size_t)CLI_INSERT_BATCH_ROWS * (size_t)s->ncolumns;
	int typed = f == stdin && isatty(STDIN_FILENO);
	ins->cli = cli;
	ins->schema = s;
	ins->policy = a->policy;
	ins->ncols = s->ncolumns;
	ins->ts_col = -1;
	for (int i = 0; i < s->ncolumns; i++)
		if (strcmp(s->columns[i].name, "ts") == 0)
			ins->ts_col = i;
	ins->last_now = INT64_MIN;
	ins->idle_ms = ns_to_ms(a->flush_idle);
	ins->hold_ms = ins->idle_ms > CLI_INSERT_HOLD_MAX_MS ? ins->idle_ms : CLI_INSERT_HOLD_MAX_MS;
	ins->rows = calloc(nvalues, sizeof *ins->rows); /* all TS_NONE */
	ins->lines = calloc(CLI_INSERT_BATCH_ROWS, sizeof *ins->lines);
	if (!ins->rows || !ins->lines || cli_input_new(f, name, a->format, s, &ins->input) < 0)
		return cli_fail(cli, "out of memory");
	cli_progress_init(&ins->progress, cli->cmd->name, input_size(f),
	                  isatty(STDERR_FILENO) && !typed);
	return CLI_OK;
}

static void insert_free(struct insert *ins)
{
	if (ins->rows)
		for (size_t i = 0; i < ins->nrows * (size_t)ins->ncols; i++)
			val_free(&ins->rows[i]);
	free(ins->rows);
	free(ins->lines);
	cli_input_free(ins->input);
}

/* ---- messages ---- */

/* why with its control characters escaped (\n, \r, \t, \xHH), so that
 * input quoted in it never breaks the message's line; cut to fit. */
static void one_line(const char *why, char *buf, size_t size)
{
	size_t at = 0;
	for (const unsigned char *p = (const unsigned char *)why; *p && at + 5 < size; p++) {
		if (*p == '\n' || *p == '\r' || *p == '\t')
			at += (size_t)snprintf(buf + at, size - at, "\\%c",
			                       *p == '\n' ? 'n' : *p == '\r' ? 'r' : 't');
		else if (*p < 0x20 || *p == 0x7f)
			at += (size_t)snprintf(buf + at, size - at, "\\x%02x", *p);
		else
			buf[at++] = (char)*p;
	}
	buf[at] = '\0';
}

/* "tsstore: insert: line N: why", or without the line when it is 0. */
static void report(struct insert *ins, uint64_t line, const char *why)
{
	char msg[CLI_MESSAGE_MAX];
	one_line(why, msg, sizeof msg);
	cli_progress_clear(&ins->progress);
	if (line)
		cli_fail(ins->cli, "line %" PRIu64 ": %s", line, msg);
	else
		cli_fail(ins->cli, "%s", msg);
}

static void summary(struct insert *ins)
{
	cli_progress_clear(&ins->progress);
	fprintf(stderr, "%s: %" PRIu64 " row%s stored, %" PRIu64 " rejected", ins->cli->cmd->name,
	        ins->stored, ins->stored == 1 ? "" : "s", ins->rejected);
	if (ins->ignored)
		fprintf(stderr, ", %" PRIu64 " duplicate%s ignored", ins->ignored,
		        ins->ignored == 1 ? "" : "s");
	if (ins->stopped_at)
		fprintf(stderr, ", stopped at line %" PRIu64, ins->stopped_at);
	fputc('\n', stderr);
}

/* ---- batches ---- */

/* The errors of ts_insert that are about one row: the others stop. */
static int is_row_error(int rc)
{
	switch (rc) {
	case TS_EDUPKEY:
	case TS_EFUTURE:
	case TS_EEXPIRED:
	case TS_ETYPE:
	case TS_ERANGE:
	case TS_ETOOBIG:
	case TS_EINVAL:
		return 1;
	default:
		return 0;
	}
}

/* The index K of the row that ts_insert's message "row K: why" names,
 * with *why after the prefix; count (and *why the whole message) when it
 * names no row of the count given. */
static size_t failed_row(const char *msg, size_t count, const char **why)
{
	unsigned long long k;
	char *end;
	*why = msg;
	if (strncmp(msg, "row ", 4) != 0 || !isdigit((unsigned char)msg[4]))
		return count;
	errno = 0;
	k = strtoull(msg + 4, &end, 10);
	if (errno != 0 || strncmp(end, ": ", 2) != 0 || k >= count)
		return count;
	*why = end + 2;
	return (size_t)k;
}

/* Store rows [first, first + count) of the batch: every good row stored,
 * every bad one reported and counted.  Returns 0, or -1 when the run
 * stops (reported, stopped_at set). */
static int store_range(struct insert *ins, size_t first, size_t count)
{
	while (count > 0) {
		char msg[CLI_MESSAGE_MAX];
		const char *why;
		size_t bad, ignored;
		int rc = cli_store_insert(ins->st, ins->table, ins->rows + first * (size_t)ins->ncols,
		                          count, ins->schema, ins->policy, &ignored);
		if (rc == 0) {
			ins->stored += count - ignored;
			ins->ignored += ignored;
			return 0;
		}
		snprintf(msg, sizeof msg, "%s", cli_store_errmsg(ins->st, rc));
		bad = failed_row(msg, count, &why);
		if (!is_row_error(rc)) {
			report(ins, bad < count ? ins->lines[first + bad] : 0, why);
			ins->stopped_at = ins->lines[first];
			return -1;
		}
		if (bad == count && count > 1) { /* no row named: halve */
			size_t half = count / 2;
			if (store_range(ins, first, half) < 0)
				return -1;
			first += half;
			count -= half;
			continue;
		}
		if (bad == count)
			bad = 0;
		if (bad > 0 && store_range(ins, first, bad) < 0)
			return -1;
		report(ins, ins->lines[first + bad], why);
		ins->rejected++;
		first += bad + 1;
		count -= bad + 1;
	}
	return 0;
}

/* Store the batch and empty it. */
static int flush_batch(struct insert *ins)
{
	int rc = store_range(ins, 0, ins->nrows);
	for (size_t i = 0; i < ins->nrows * (size_t)ins->ncols; i++)
		val_free(&ins->rows[i]);
	ins->nrows = 0;
	return rc;
}

/* A row input.c could not take: stored what came before, then report it.
 * Returns 0, or -1 when the run stops. */
static int input_failed(struct insert *ins, int rc, uint64_t line, const char *why)
{
	if (flush_batch(ins) < 0)
		return -1;
	report(ins, line, why);
	if (rc == CLI_INPUT_STOP) {
		ins->stopped_at = line ? line : cli_input_lines(ins->input) + 1;
		return -1;
	}
	ins->rejected++;
	return 0;
}

/* ---- reading over time ---- */

static int64_t ms_since(const struct timespec *t)
{
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	return (int64_t)(now.tv_sec - t->tv_sec) * 1000 + (now.tv_nsec - t->tv_nsec) / 1000000;
}

/* How long input.c may wait for the next row: without limit when the
 * batch is empty, else --flush-idle, cut to what is left of the time
 * the first row may wait. */
static int insert_wait(const struct insert *ins)
{
	int64_t left;
	if (ins->nrows == 0)
		return -1;
	left = ins->hold_ms - ms_since(&ins->first_at);
	if (left < 0)
		left = 0;
	return left < ins->idle_ms ? (int)left : ins->idle_ms;
}

/* Give row the time it was read when it has no ts (see the top). */
static void stamp_row(struct insert *ins, ts_value *row)
{
	int64_t now;
	if (ins->ts_col < 0 || row[ins->ts_col].type != TS_NONE)
		return;
	now = cli_store_now(ins->st);
	if (ins->last_now != INT64_MIN && now <= ins->last_now && ins->last_now < INT64_MAX)
		now = ins->last_now + 1;
	ins->last_now = now;
	row[ins->ts_col] = ts_timestamp(now);
}

/* Add the row just read to the batch; send the batch when it is full or
 * its first row has waited long enough.  Returns 0, or -1 when the run
 * stops. */
static int add_row(struct insert *ins, ts_value *row, uint64_t line)
{
	stamp_row(ins, row);
	if (ins->nrows == 0)
		clock_gettime(CLOCK_MONOTONIC, &ins->first_at);
	ins->lines[ins->nrows++] = line;
	if (ins->nrows == CLI_INSERT_BATCH_ROWS || ms_since(&ins->first_at) >= ins->hold_ms)
		return flush_batch(ins);
	return 0;
}

/* Read every row and store it.  Returns 0, or -1 when the run stopped. */
static int insert_rows(struct insert *ins)
{
	char why[CLI_MESSAGE_MAX];
	uint64_t line;
	for (;;) {
		ts_value *row = ins->rows + ins->nrows * (size_t)ins->ncols;
		int rc = cli_input_next(ins->input, row, &line, insert_wait(ins), why, sizeof why);
		if (rc == CLI_INPUT_END)
			return flush_batch(ins);
		if (rc == CLI_INPUT_IDLE) {
			if (flush_batch(ins) < 0)
				return -1;
			if (cli_input_caught())
				return 0; /* stopped by a signal: the rows read whole are stored */
		} else if (rc == CLI_INPUT_ROW) {
			if (add_row(ins, row, line) < 0)
				return -1;
		} else if (input_failed(ins, rc, line, why) < 0) {
			return -1;
		}
		cli_progress_update(&ins->progress, ins->stored + ins->rejected + ins->ignored,
		                    cli_input_offset(ins->input));
	}
}

/* insert, or load (jsonl only). */
static int run_insert(struct cli *cli, int argc, char **argv, int load)
{
	struct insert_args a = {0};
	struct insert ins = {0};
	ts_schema *s = NULL;
	FILE *f = NULL;
	const char *name = NULL;
	int status = parse_insert(cli, argc, argv, load, &a);
	if (status != CLI_CONTINUE)
		goto out;
	if ((status = cli_store_open(cli, 0, &ins.st)) != CLI_OK ||
	    (status = cli_store_schema(cli, ins.st, a.table, &s)) != CLI_OK)
		goto out;
	ins.table = a.table;
	if ((status = open_input(cli, a.file, &f, &name)) != CLI_OK ||
	    (status = insert_init(&ins, cli, s, f, name, &a)) != CLI_OK)
		goto out;
	if (!load) /* load reads dump's integers: nanoseconds, as the contract says */
		cli_input_check_times(ins.input, cli);
	cli_input_catch_signals();
	status = insert_rows(&ins) == 0 && ins.rejected == 0 ? CLI_OK : CLI_FAILURE;
	summary(&ins);
out:
	insert_free(&ins);
	if (f && f != stdin)
		fclose(f);
	cli_schema_free(s);
	status = cli_store_close(cli, ins.st, status);
	cli_input_reraise(); /* stopped by a signal: end by it, now that the rows are stored */
	return status;
}

int cli_cmd_insert(struct cli *cli, int argc, char **argv)
{
	return run_insert(cli, argc, argv, 0);
}

int cli_cmd_load(struct cli *cli, int argc, char **argv)
{
	return run_insert(cli, argc, argv, 1);
}
