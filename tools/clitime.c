/*
 * clitime.c -- the timestamps the command reads from its user.
 *
 * The contract reads a bare integer as nanoseconds since the epoch, so
 * the seconds `date +%s` prints land, silently, in January 1970.  The
 * library and the protocol keep that contract (machines write those
 * integers); the command, which people type at, is stricter:
 *
 *   - --time-unit s|ms|us|ns (a global option, cli->time_unit) says what
 *     a bare integer counts; given, it is taken as said, any value;
 *   - without it, a bare integer is nanoseconds, and one that lands
 *     before 1990-01-01 is refused with a hint naming the unit that puts
 *     it nearest to now ("did you mean 1732550000s?");
 *   - every other form (RFC 3339, a date, 1732550000s, now, -1h, ...) is
 *     ts_time_parse's, whatever --time-unit says: it names its instant
 *     already.
 *
 * The rule covers the time options (--from, --to, --before) and the
 * timestamp columns of the rows insert reads (input.c); load reads
 * dump's output, whose integers are nanoseconds by the contract, and
 * keeps it.
 */
#include <stdio.h>
#include <string.h>

#include "clitime.h"

static const struct {
	const char *name;
	int64_t ns;
} units[] = {{"s", 1000000000}, {"ms", 1000000}, {"us", 1000}, {"ns", 1}};

#define NUNITS (sizeof units / sizeof units[0])

int cli_time_unit_parse(const char *text, int64_t *unit)
{
	for (size_t i = 0; i < NUNITS; i++)
		if (strcmp(text, units[i].name) == 0) {
			*unit = units[i].ns;
			return 0;
		}
	return TS_EINVAL;
}

/* The whole text is [+-]digits. */
static int is_bare_integer(const char *text)
{
	size_t i = text[0] == '-' || text[0] == '+';
	if (text[i] < '0' || text[i] > '9')
		return 0;
	while (text[i] >= '0' && text[i] <= '9')
		i++;
	return text[i] == '\0';
}

/* The unit (s, ms or us) that puts v nearest to now, at or after 1990,
 * or NULL. */
static const char *likely_unit(int64_t v)
{
	int64_t now = 0, best = INT64_MAX, at, dist;
	const char *name = NULL;
	if (ts_time_parse("now", &now) < 0)
		return NULL;
	for (size_t i = 0; i + 1 < NUNITS; i++) {
		if (__builtin_mul_overflow(v, units[i].ns, &at) || at < CLI_TIME_BARE_MIN)
			continue;
		dist = at > now ? at - now : now - at;
		if (dist < best) {
			best = dist;
			name = units[i].name;
		}
	}
	return name;
}

int cli_time_integer(const struct cli *cli, int64_t v, int64_t *ns, char *why, size_t whysz)
{
	char when[TS_TIME_BUFSZ];
	const char *unit;
	if (cli->time_unit > 0) {
		if (__builtin_mul_overflow(v, cli->time_unit, ns)) {
			snprintf(why, whysz, "timestamp %lld (--time-unit) does not fit in int64 nanoseconds",
			         (long long)v);
			return TS_ERANGE;
		}
		return 0;
	}
	if (v >= CLI_TIME_BARE_MIN) {
		*ns = v;
		return 0;
	}
	ts_time_format(v, when, sizeof when);
	if ((unit = likely_unit(v)))
		snprintf(why, whysz, "timestamp %lld would be %s, before 1990; did you mean %lld%s? "
		         "(or --time-unit %s)", (long long)v, when, (long long)v, unit, unit);
	else
		snprintf(why, whysz, "timestamp %lld would be %s, before 1990; write it in RFC 3339, "
		         "or give --time-unit ns to take it as nanoseconds", (long long)v, when);
	return TS_EINVAL;
}

int cli_time_read(const struct cli *cli, const char *text, int64_t *ns, char *why, size_t whysz)
{
	int64_t v = 0;
	int rc = ts_time_parse(text, &v);
	if (rc < 0) {
		const char *msg = ts_errmsg(NULL);
		snprintf(why, whysz, "%s", *msg ? msg : ts_strerror(rc));
		return rc;
	}
	if (!is_bare_integer(text)) {
		*ns = v;
		return 0;
	}
	return cli_time_integer(cli, v, ns, why, whysz);
}

int cli_time_option(const struct cli *cli, const char *option, const char *text, int64_t *ns)
{
	char why[CLI_MESSAGE_MAX];
	if (cli_time_read(cli, text, ns, why, sizeof why) < 0)
		return cli_usage(cli, "%s: %s", option, why);
	return CLI_OK;
}
