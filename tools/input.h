/*
 * input.h -- rows from text: the tsv, csv and jsonl input of insert (see
 * input.c for the formats).
 */
#ifndef TSSTORE_TOOLS_INPUT_H
#define TSSTORE_TOOLS_INPUT_H

#include <stdint.h>
#include <stdio.h>

#include <tsstore.h>

#include "rowfmt.h"

struct cli;

/* What cli_input_next read. */
enum {
	CLI_INPUT_IDLE = 2,  /* no row came whole within the wait: call again */
	CLI_INPUT_ROW = 1,   /* a row */
	CLI_INPUT_END = 0,   /* the end of the input */
	CLI_INPUT_BAD = -1,  /* a bad row (or record): skip it, read on */
	CLI_INPUT_STOP = -2, /* no more can be read: a bad header, a read
	                        error, out of memory */
};

struct cli_input;

/*
 * cli_input_new -- a reader of rows of schema s (which must outlive it)
 * from f in format.  name names f in messages ("standard input", a path).
 * The reader reads f's descriptor itself (read(2), never stdio), so f
 * must not have been read through stdio before.
 * Returns 0 with *out set, or TS_ENOMEM.
 */
int cli_input_new(FILE *f, const char *name, enum rowfmt format,
                  const ts_schema *s, struct cli_input **out);

/*
 * cli_input_check_times -- read the timestamp columns of in as the
 * command reads its user's timestamps (clitime.c: --time-unit, bare
 * integers before 1990 refused), for insert; cli (which must outlive the
 * reader) holds --time-unit.  Without this call (load, whose input is
 * dump's output) a bare integer is nanoseconds, as the contract says.
 */
void cli_input_check_times(struct cli_input *in, const struct cli *cli);

/* Release a reader (not its FILE).  NULL allowed. */
void cli_input_free(struct cli_input *in);

/*
 * cli_input_next -- the next row.
 * row: room for s->ncolumns values; on CLI_INPUT_ROW it holds the row in
 * the schema's column order, TS_NONE where the input gave no value (the
 * column default; for ts, now); string and blob values are private
 * copies, to be released with val_free.  On anything else it holds
 * only TS_NONE values.
 * line: receives the number (from 1) of the line where the row starts;
 * 0 when a CLI_INPUT_STOP is about no line (a read error).
 * wait_ms: how long to wait for more input, in milliseconds, each time
 * the bytes read so far hold no whole record: -1 waits until they do (or
 * the input ends); 0 takes only what can be read at once.  A regular
 * file never waits.
 * why: on CLI_INPUT_BAD and CLI_INPUT_STOP, receives the reason, without
 * the line number (e.g. "column \"ts\": timestamp \"x\": ...").
 * Returns one of CLI_INPUT_*: CLI_INPUT_IDLE when wait_ms passed with no
 * new byte (row all TS_NONE, line 0; a record read in part is kept and
 * finished by the next calls).  After CLI_INPUT_STOP or CLI_INPUT_END,
 * further calls return the same without reading.
 */
int cli_input_next(struct cli_input *in, ts_value *row, uint64_t *line, int wait_ms,
                   char *why, size_t whysz);

/*
 * cli_input_catch_signals -- from now on SIGINT, SIGTERM and SIGHUP (each
 * unless ignored) stop the reading instead of the process: every reader's
 * next cli_input_next returns CLI_INPUT_IDLE at once (a record read in
 * part is left unread), and cli_input_caught() names the signal; a second
 * one of the same kind ends the process as before.
 * cli_input_caught -- the stop signal caught, or 0.
 * cli_input_reraise -- end the process by the signal caught (its default
 * action), once the rows read are stored; nothing when none was caught.
 */
void cli_input_catch_signals(void);
int cli_input_caught(void);
void cli_input_reraise(void);

/* Lines read so far (the number of the last line read). */
uint64_t cli_input_lines(const struct cli_input *in);

/* Bytes read so far (for the progress line). */
uint64_t cli_input_offset(const struct cli_input *in);

#endif /* TSSTORE_TOOLS_INPUT_H */
