/*
 * clitime.h -- the timestamps the command reads from its user: time
 * options (--from, --to, --before) and the timestamp columns of the rows
 * insert reads (see clitime.c).
 */
#ifndef TSSTORE_TOOLS_CLITIME_H
#define TSSTORE_TOOLS_CLITIME_H

#include <stddef.h>
#include <stdint.h>

#include "cli.h"

/* The earliest instant a bare integer may name without a unit:
 * 1990-01-01T00:00:00Z. */
#define CLI_TIME_BARE_MIN INT64_C(631152000000000000)

/*
 * cli_time_unit_parse -- the argument of --time-unit, "s", "ms", "us" or
 * "ns", as nanoseconds per unit in *unit.  Returns 0, or TS_EINVAL.
 */
int cli_time_unit_parse(const char *text, int64_t *unit);

/*
 * cli_time_read -- a timestamp as the command reads it: every form of
 * ts_time_parse (relative times from $TSSTORE_NOW or the real-time
 * clock), but a bare integer ([+-]digits) counts cli->time_unit units
 * when --time-unit was given, and without it is nanoseconds that must
 * not land before CLI_TIME_BARE_MIN: such a one is refused with a hint
 * naming the likely unit ("timestamp 1732550000 would be
 * 1970-01-01T00:00:01.73255Z, before 1990; did you mean 1732550000s? (or
 * --time-unit s)").
 * ns: receives the instant.  why: receives the reason on failure.
 * Returns 0; TS_EINVAL or TS_ERANGE with why set.
 */
int cli_time_read(const struct cli *cli, const char *text, int64_t *ns, char *why, size_t whysz);

/*
 * cli_time_integer -- cli_time_read for a number already read as an
 * integer (a JSON integer of jsonl input).  Same results.
 */
int cli_time_integer(const struct cli *cli, int64_t v, int64_t *ns, char *why, size_t whysz);

/*
 * cli_time_option -- cli_time_read for the argument of option (e.g.
 * "--from").  Returns CLI_OK, or CLI_USAGE after the message.
 */
int cli_time_option(const struct cli *cli, const char *option, const char *text, int64_t *ns);

#endif /* TSSTORE_TOOLS_CLITIME_H */
