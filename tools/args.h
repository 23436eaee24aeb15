/*
 * args.h -- the values of command options: column specs, key lists and
 * durations (see args.c).
 */
#ifndef TSSTORE_TOOLS_ARGS_H
#define TSSTORE_TOOLS_ARGS_H

#include <stddef.h>
#include <stdint.h>

#include "cli.h"

/*
 * cli_column_parse -- a column spec "NAME:TYPE[=DEFAULT]" as a ts_column.
 * The default is read by val_parse for the column's type; without
 * "=" the column gets the library's default (TS_NONE: the type's zero).
 * col: receives the column; its name and default bytes are owned by it,
 * to be released with cli_column_free (also after a failure).
 * why: receives the reason on failure.
 * Returns 0; TS_EINVAL or TS_ERANGE with why set; TS_ENOMEM.
 */
int cli_column_parse(const char *spec, ts_column *col, char *why, size_t whysz);

/* Release what cli_column_parse put in col. */
void cli_column_free(ts_column *col);

/*
 * cli_column_option -- cli_column_parse for the argument of an option
 * (option names it in messages, e.g. "--column").
 * Returns CLI_OK, CLI_USAGE for a bad spec or CLI_FAILURE (out of memory),
 * after the message.
 */
int cli_column_option(const struct cli *cli, const char *option,
                      const char *spec, ts_column *col);

/*
 * cli_key_option -- the list "COL,...,ts" of --key.  The names are split
 * in a copy of text stored in *copy (the caller frees it, also after a
 * failure, and frees any previous one first); key[0..*nkey) point into it;
 * key holds TS_KEY_COLUMNS_MAX entries.
 * Returns CLI_OK, CLI_USAGE (an empty name, too many names) or
 * CLI_FAILURE (out of memory), after the message.
 */
int cli_key_option(const struct cli *cli, const char *text, char **copy,
                   const char **key, int *nkey);

/*
 * cli_duration_option -- a duration "<n><unit>" (ts_duration_parse) as
 * the argument of option.  Returns CLI_OK or CLI_USAGE after the message.
 */
int cli_duration_option(const struct cli *cli, const char *option,
                        const char *text, int64_t *ns);

/*
 * cli_on_duplicate_option -- a duplicate policy, "reject" or "ignore"
 * (ts_on_duplicate_parse), as the argument of --on-duplicate.  Returns
 * CLI_OK or CLI_USAGE after the message.
 */
int cli_on_duplicate_option(const struct cli *cli, const char *text, ts_on_duplicate *policy);

/*
 * cli_key_values -- a key text "V,..." (the argument of option, --prefix
 * or --after) as values of the leading key columns of s, into
 * values[0..*n) (val_parse: text and blob values owned, released with
 * cli_req_free's val_free).  A comma inside a value is written "\,", a
 * backslash "\\".  Returns CLI_CONTINUE, or CLI_USAGE (too many values,
 * a value its column cannot take) or CLI_FAILURE after the message.
 */
int cli_key_values(const struct cli *cli, const ts_schema *s, const char *option,
                   const char *text, ts_value *values, int *n);

#endif /* TSSTORE_TOOLS_ARGS_H */
