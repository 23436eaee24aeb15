/*
 * args.c -- the values of command options: column specs, key lists,
 * durations, duplicate policies, and key values (--prefix, --after).
 *
 * These are checked here, before the database is opened, so that a typo
 * is a usage error (exit 2) that names the option, the text and the
 * reason, and never a half-done change.  What only the library can judge
 * (a duplicate column, a key that does not end with ts, a default given
 * for ts) is left to it and reported as a failure (exit 1).
 *
 * A column spec is split at its first ':' and the type at the first '='
 * after it: names and type names contain neither, while a default may
 * contain both ("at:timestamp=2026-11-21T10:00:00Z", "s:string=a=b").
 */
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "value.h"

#define TYPE_NAME_MAX 16 /* longer than any type name */

/* Copy the n bytes at p into buf of size bufsz, cut to fit. */
static void copy_part(char *buf, size_t bufsz, const char *p, size_t n)
{
	if (n >= bufsz)
		n = bufsz - 1;
	memcpy(buf, p, n);
	buf[n] = '\0';
}

/* Split "NAME:TYPE[=DEFAULT]"; *dflt is NULL when there is no "=". */
static int split_spec(const char *spec, char *name, char *type, const char **dflt,
                      char *why, size_t whysz)
{
	const char *colon = strchr(spec, ':'), *eq;
	if (!colon) {
		snprintf(why, whysz, "want NAME:TYPE[=DEFAULT]");
		return TS_EINVAL;
	}
	eq = strchr(colon + 1, '=');
	copy_part(name, TS_NAME_MAX + 2, spec, (size_t)(colon - spec));
	copy_part(type, TYPE_NAME_MAX, colon + 1,
	          eq ? (size_t)(eq - colon - 1) : strlen(colon + 1));
	*dflt = eq ? eq + 1 : NULL;
	return 0;
}

/* Check name and type; store them in col. */
static int name_and_type(const char *name, const char *type, ts_column *col,
                         char *why, size_t whysz)
{
	if (!ts_name_valid(name)) {
		snprintf(why, whysz, "invalid column name \"%s\" (want [A-Za-z_][A-Za-z0-9_]{0,63})",
		         name);
		return TS_EINVAL;
	}
	if (ts_type_parse(type, &col->type) < 0) {
		snprintf(why, whysz, "unknown type \"%s\" (want int32, int64, double, timestamp, string or blob)",
		         type);
		return TS_EINVAL;
	}
	return (col->name = strdup(name)) ? 0 : TS_ENOMEM;
}

int cli_column_parse(const char *spec, ts_column *col, char *why, size_t whysz)
{
	char name[TS_NAME_MAX + 2], type[TYPE_NAME_MAX], reason[256];
	const char *dflt;
	int rc;
	col->name = NULL;
	col->type = TS_NONE;
	col->dflt = ts_none();
	if ((rc = split_spec(spec, name, type, &dflt, why, whysz)) < 0 ||
	    (rc = name_and_type(name, type, col, why, whysz)) < 0 || !dflt)
		return rc;
	rc = val_parse(col->type, dflt, &col->dflt, reason, sizeof reason);
	if (rc < 0 && rc != TS_ENOMEM)
		snprintf(why, whysz, "bad default: %s", reason);
	return rc;
}

void cli_column_free(ts_column *col)
{
	free((void *)col->name);
	col->name = NULL;
	val_free(&col->dflt);
}

int cli_column_option(const struct cli *cli, const char *option,
                      const char *spec, ts_column *col)
{
	char why[512];
	int rc = cli_column_parse(spec, col, why, sizeof why);
	if (rc == TS_ENOMEM)
		return cli_fail(cli, "out of memory");
	if (rc < 0)
		return cli_usage(cli, "%s \"%s\": %s", option, spec, why);
	return CLI_OK;
}

int cli_key_option(const struct cli *cli, const char *text, char **copy,
                   const char **key, int *nkey)
{
	char *p, *comma;
	*nkey = 0;
	if (!(*copy = p = strdup(text)))
		return cli_fail(cli, "out of memory");
	for (;; p = comma + 1) {
		if ((comma = strchr(p, ',')))
			*comma = '\0';
		if (*p == '\0')
			return cli_usage(cli, "--key \"%s\": empty column name", text);
		if (*nkey == TS_KEY_COLUMNS_MAX)
			return cli_usage(cli, "--key \"%s\": more than %d columns", text,
			                 TS_KEY_COLUMNS_MAX);
		key[(*nkey)++] = p;
		if (!comma)
			return CLI_OK;
	}
}

int cli_duration_option(const struct cli *cli, const char *option,
                        const char *text, int64_t *ns)
{
	int rc = ts_duration_parse(text, ns);
	const char *msg = ts_errmsg(NULL);
	if (rc < 0)
		return cli_usage(cli, "%s: %s", option, *msg ? msg : ts_strerror(rc));
	return CLI_OK;
}

int cli_on_duplicate_option(const struct cli *cli, const char *text, ts_on_duplicate *policy)
{
	if (ts_on_duplicate_parse(text, policy) < 0)
		return cli_usage(cli, "--on-duplicate: %s", ts_errmsg(NULL));
	return CLI_OK;
}

/* cli_key_values: the key text, value by value (the form cmd_query.c's
 * key_text prints for --after). */
int cli_key_values(const struct cli *cli, const ts_schema *s, const char *option,
                   const char *text, ts_value *values, int *n)
{
	size_t len = strlen(text);
	char *buf = malloc(len + 1), why[CLI_MESSAGE_MAX];
	const char *p = text;
	int status = CLI_CONTINUE;
	if (!buf)
		return cli_fail(cli, "out of memory");
	while (status == CLI_CONTINUE) {
		size_t k = 0;
		for (; *p && *p != ','; p++)
			buf[k++] = *p == '\\' && (p[1] == ',' || p[1] == '\\') ? *++p : *p;
		buf[k] = '\0';
		if (*n >= s->nkey) {
			status = cli_usage(cli, "%s: more values than the %d key columns", option, s->nkey);
			break;
		}
		const ts_column *col = &s->columns[s->key[*n]];
		if (val_parse(col->type, buf, &values[*n], why, sizeof why) < 0) {
			status = cli_usage(cli, "%s: column \"%s\": %s", option, col->name, why);
			break;
		}
		(*n)++;
		if (!*p++)
			break;
	}
	free(buf);
	return status;
}
