/*
 * textfmt.c -- the text forms of timestamps and durations shared by the
 * protocol, the command line, the FUSE paths and the SQLite extension
 * (DESIGN.md section 2).
 *
 * A timestamp is int64 nanoseconds since the Unix epoch, UTC, which spans
 * 1677-09-21T00:12:43.145224192Z to 2262-04-11T23:47:16.854775807Z.  In
 * text it is one of
 *
 *     YYYY-MM-DD T HH:MM:SS [.fraction] (Z | +HH:MM | -HH:MM)   RFC 3339
 *     YYYY-MM-DD                          a date alone: its midnight, UTC
 *     [+-]digits                          integer nanoseconds (the contract)
 *     digits(s|ms|us|ns)                  an epoch count in that unit
 *     now                                 the reference time
 *     now(+|-)DURATION, (+|-)DURATION     the reference time moved by a
 *                                         duration (90m, 1h, 7d, ...)
 *
 * (RFC 3339: 't' or ' ' for 'T', 'z' for 'Z', 1 to 9 fraction digits,
 * years 0000 to 9999.)  The forms are told apart by their first
 * characters: four digits and '-' is a date; "now" is relative; a text of
 * a sign and digits only is integer nanoseconds; a signed duration is
 * relative; unsigned digits and a unit are an epoch count.  So "-1h" is
 * an hour ago and "-1" is 1 ns before the epoch; an epoch count takes
 * only the units s, ms, us and ns ("5h" names no instant), and a
 * negative one must be written as integer nanoseconds or RFC 3339, since
 * "-5s" is five seconds ago.  Second 60 is rejected: the epoch count has
 * no leap seconds, so a leap second has no instant of its own to map to,
 * and folding it onto a neighbour would make two texts parse to the same
 * key silently.
 *
 * "now" is the reference time the caller gives (ts_time_parse_at), or for
 * ts_time_parse the clock a database opened without a clock option reads:
 * $TSSTORE_NOW when set, else the real-time clock.  The clock is read
 * only for a relative text, so parsing absolute times stays pure.
 *
 * The calendar is the proleptic Gregorian one, computed here with the
 * days-from-civil arithmetic of Howard Hinnant's "chrono-Compatible
 * Low-Level Date Algorithms" rather than timegm/gmtime, so the result
 * never depends on TZ, the locale or the width of time_t.
 *
 * Invariants: parsing writes *out only on success; every failure records
 * a message quoting the text and saying what was expected where; every
 * arithmetic step that can leave int64 is checked and gives TS_ERANGE.
 * ts_time_format and ts_duration_format produce text that the parsers map
 * back to the same number, for every int64 (durations: every ns >= 0).
 */
#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tsstore.h"
#include "error.h"
#include "tslimits.h"

/* Longest part of a text quoted in a message. */
#define QUOTE_MAX 80

static const int64_t SECS_PER_DAY = 86400;

/* Duration units, largest first: ts_duration_format takes the first one
 * that divides the value exactly. */
static const struct unit {
	const char *name;
	int64_t ns;
} units[] = {
	{"w", 7 * TS_NS_PER_DAY}, {"d", TS_NS_PER_DAY}, {"h", TS_NS_PER_HOUR},
	{"m", TS_NS_PER_MIN},     {"s", TS_NS_PER_SEC}, {"ms", 1000000},
	{"us", 1000},             {"ns", 1},
};

#define NUNITS (sizeof units / sizeof units[0])

/* The fields of an RFC 3339 timestamp as written. */
struct civil {
	int year, month, day;
	int hour, minute, second;
	int nanos;          /* the fraction of the second, in ns */
	int offset_minutes; /* the zone's offset east of UTC */
};

/* A position in the text being parsed. */
struct scan {
	const char *text;
	size_t pos;
};

static int is_digit(char c)
{
	return c >= '0' && c <= '9';
}

static int is_leap(int year)
{
	return (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
}

static int days_in_month(int year, int month)
{
	static const int days[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
	assert(month >= 1 && month <= 12);
	return month == 2 && is_leap(year) ? 29 : days[month - 1];
}

/* Days since 1970-01-01 of the proleptic Gregorian date y-m-d.  Years
 * are counted from March so that the leap day ends the year; an era is
 * the 400-year cycle of 146097 days. */
static int64_t days_from_civil(int64_t y, int m, int d)
{
	y -= m <= 2;
	int64_t era = (y >= 0 ? y : y - 399) / 400;
	int64_t yoe = y - era * 400;                          /* [0, 399] */
	int64_t doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
	int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;  /* [0, 146096] */
	return era * 146097 + doe - 719468;
}

/* The inverse of days_from_civil. */
static void civil_from_days(int64_t z, struct civil *c)
{
	z += 719468;
	int64_t era = (z >= 0 ? z : z - 146096) / 146097;
	int64_t doe = z - era * 146097;                                   /* [0, 146096] */
	int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365; /* [0, 399] */
	int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);            /* [0, 365] */
	int64_t mp = (5 * doy + 2) / 153;                                 /* [0, 11] */
	c->day = (int)(doy - (153 * mp + 2) / 5 + 1);
	c->month = (int)(mp < 10 ? mp + 3 : mp - 9);
	c->year = (int)(yoe + era * 400 + (c->month <= 2));
}

/* Fail at s->pos, which should have held want; say what is there. */
static int expected(const struct scan *s, const char *want)
{
	unsigned char c = (unsigned char)s->text[s->pos];
	if (c == '\0')
		return ts__fail(TS_EINVAL, "timestamp \"%.*s\": expected %s at offset %zu, found the end of the text",
		                QUOTE_MAX, s->text, want, s->pos);
	if (c < 0x20 || c > 0x7e)
		return ts__fail(TS_EINVAL, "timestamp \"%.*s\": expected %s at offset %zu, found byte 0x%02x",
		                QUOTE_MAX, s->text, want, s->pos, c);
	return ts__fail(TS_EINVAL, "timestamp \"%.*s\": expected %s at offset %zu, found '%c'",
	                QUOTE_MAX, s->text, want, s->pos, c);
}

/* A field that parsed but names no date or time. */
static int out_of_range(const struct scan *s, const char *field, int value, const char *range)
{
	return ts__fail(TS_EINVAL, "timestamp \"%.*s\": %s %02d is out of range %s",
	                QUOTE_MAX, s->text, field, value, range);
}

/* Exactly n digits, as a number in *out; what names the field. */
static int take_digits(struct scan *s, int n, const char *what, int *out)
{
	int v = 0;
	for (int i = 0; i < n; i++) {
		if (!is_digit(s->text[s->pos]))
			return expected(s, what);
		v = v * 10 + (s->text[s->pos++] - '0');
	}
	*out = v;
	return 0;
}

/* One character out of accept (never the terminating NUL). */
static int take_char(struct scan *s, const char *accept, const char *what)
{
	char c = s->text[s->pos];
	if (c == '\0' || !strchr(accept, c))
		return expected(s, what);
	s->pos++;
	return 0;
}

/* YYYY-MM-DD, with the day checked against its month and year. */
static int parse_date(struct scan *s, struct civil *c)
{
	int rc;
	if ((rc = take_digits(s, 4, "a 4-digit year", &c->year)) < 0 ||
	    (rc = take_char(s, "-", "'-' after the year")) < 0 ||
	    (rc = take_digits(s, 2, "a 2-digit month", &c->month)) < 0 ||
	    (rc = take_char(s, "-", "'-' after the month")) < 0 ||
	    (rc = take_digits(s, 2, "a 2-digit day", &c->day)) < 0)
		return rc;
	if (c->month < 1 || c->month > 12)
		return out_of_range(s, "month", c->month, "01-12");
	if (c->day < 1 || c->day > days_in_month(c->year, c->month))
		return ts__fail(TS_EINVAL, "timestamp \"%.*s\": day %02d does not exist in %04d-%02d, which has %d days",
		                QUOTE_MAX, s->text, c->day, c->year, c->month,
		                days_in_month(c->year, c->month));
	return 0;
}

/* THH:MM:SS ('t' or ' ' may stand for 'T'). */
static int parse_clock(struct scan *s, struct civil *c)
{
	int rc;
	if ((rc = take_char(s, "Tt ", "'T' and a time of day")) < 0 ||
	    (rc = take_digits(s, 2, "a 2-digit hour", &c->hour)) < 0 ||
	    (rc = take_char(s, ":", "':' after the hour")) < 0 ||
	    (rc = take_digits(s, 2, "2-digit minutes", &c->minute)) < 0 ||
	    (rc = take_char(s, ":", "':' after the minutes")) < 0 ||
	    (rc = take_digits(s, 2, "2-digit seconds", &c->second)) < 0)
		return rc;
	if (c->hour > 23)
		return out_of_range(s, "hour", c->hour, "00-23");
	if (c->minute > 59)
		return out_of_range(s, "minute", c->minute, "00-59");
	if (c->second == 60)
		return ts__fail(TS_EINVAL, "timestamp \"%.*s\": second 60: leap seconds are not supported",
		                QUOTE_MAX, s->text);
	if (c->second > 59)
		return out_of_range(s, "second", c->second, "00-59");
	return 0;
}

/* An optional '.' and 1 to 9 digits, scaled to nanoseconds. */
static int parse_fraction(struct scan *s, struct civil *c)
{
	int digits = 0;
	c->nanos = 0;
	if (s->text[s->pos] != '.')
		return 0;
	s->pos++;
	while (is_digit(s->text[s->pos]) && digits < 9) {
		c->nanos = c->nanos * 10 + (s->text[s->pos++] - '0');
		digits++;
	}
	if (digits == 0)
		return expected(s, "a digit after '.'");
	if (is_digit(s->text[s->pos]))
		return ts__fail(TS_EINVAL, "timestamp \"%.*s\": too many fractional digits at offset %zu: at most 9 (nanoseconds)",
		                QUOTE_MAX, s->text, s->pos);
	for (; digits < 9; digits++)
		c->nanos *= 10;
	return 0;
}

/* Z, or +HH:MM / -HH:MM east of UTC. */
static int parse_zone(struct scan *s, struct civil *c)
{
	int rc, hours = 0, minutes = 0;
	char sign = s->text[s->pos];
	c->offset_minutes = 0;
	if ((rc = take_char(s, "Zz+-", "a zone ('Z' or an offset such as +02:00)")) < 0)
		return rc;
	if (sign == 'Z' || sign == 'z')
		return 0;
	if ((rc = take_digits(s, 2, "2-digit zone hours", &hours)) < 0 ||
	    (rc = take_char(s, ":", "':' in the zone offset")) < 0 ||
	    (rc = take_digits(s, 2, "2-digit zone minutes", &minutes)) < 0)
		return rc;
	if (hours > 23)
		return out_of_range(s, "zone hour", hours, "00-23");
	if (minutes > 59)
		return out_of_range(s, "zone minute", minutes, "00-59");
	c->offset_minutes = (sign == '-' ? -1 : 1) * (hours * 60 + minutes);
	return 0;
}

/* The instant c names, in ns since the epoch.  The seconds of every
 * 4-digit year fit easily in int64; only the step to nanoseconds can
 * overflow.  A negative second count with a fraction is first moved one
 * second up so that INT64_MIN, whose whole seconds alone do not fit in
 * int64 ns, is reachable. */
static int civil_to_ns(const struct scan *s, const struct civil *c, int64_t *out)
{
	int64_t secs = days_from_civil(c->year, c->month, c->day) * SECS_PER_DAY +
	               c->hour * 3600 + c->minute * 60 + c->second - c->offset_minutes * 60;
	int64_t frac = c->nanos, ns;
	if (secs < 0 && frac > 0) {
		secs += 1;
		frac -= TS_NS_PER_SEC;
	}
	if (__builtin_mul_overflow(secs, TS_NS_PER_SEC, &ns) ||
	    __builtin_add_overflow(ns, frac, &ns))
		return ts__fail(TS_ERANGE, "timestamp \"%.*s\" is outside the range of int64 nanoseconds "
		                "(1677-09-21T00:12:43.145224192Z to 2262-04-11T23:47:16.854775807Z)",
		                QUOTE_MAX, s->text);
	*out = ns;
	return 0;
}

static int parse_rfc3339(const char *text, int64_t *out)
{
	struct scan s = {text, 0};
	struct civil c = {0};
	int rc;
	if ((rc = parse_date(&s, &c)) < 0)
		return rc;
	if (text[s.pos] == '\0') /* a date alone: its midnight, UTC */
		return civil_to_ns(&s, &c, out);
	if ((rc = parse_clock(&s, &c)) < 0 || (rc = parse_fraction(&s, &c)) < 0 ||
	    (rc = parse_zone(&s, &c)) < 0)
		return rc;
	if (text[s.pos] != '\0')
		return ts__fail(TS_EINVAL, "timestamp \"%.*s\": unexpected text at offset %zu, after the zone",
		                QUOTE_MAX, text, s.pos);
	return civil_to_ns(&s, &c, out);
}

/* The decimal digits text[from..to) as int64, negated when negative
 * (accumulated downwards, so that INT64_MIN is reachable).  Returns 0, or
 * -1 when the number does not fit; the caller says what it was. */
static int decimal(const char *text, size_t from, size_t to, int negative, int64_t *out)
{
	int64_t v = 0;
	for (size_t i = from; i < to; i++) {
		int d = text[i] - '0';
		if (__builtin_mul_overflow(v, 10, &v))
			return -1;
		if (negative ? __builtin_sub_overflow(v, d, &v) : __builtin_add_overflow(v, d, &v))
			return -1;
	}
	*out = v;
	return 0;
}

/* Split ns into days since the epoch, the second of that day and the
 * nanosecond of that second, rounding towards minus infinity: -1 ns is
 * 23:59:59.999999999 of the day before the epoch.  INT64_MIN / 10^9
 * cannot overflow. */
static void split_ns(int64_t ns, int64_t *days, int64_t *sod, int64_t *frac)
{
	int64_t secs = ns / TS_NS_PER_SEC;
	*frac = ns % TS_NS_PER_SEC;
	if (*frac < 0) {
		*frac += TS_NS_PER_SEC;
		secs -= 1;
	}
	*days = secs / SECS_PER_DAY;
	*sod = secs % SECS_PER_DAY;
	if (*sod < 0) {
		*sod += SECS_PER_DAY;
		*days -= 1;
	}
}

int ts_time_format(int64_t ns, char *buf, size_t size)
{
	int64_t days, sod, frac;
	struct civil c = {0};
	if (!buf || size < TS_TIME_BUFSZ)
		return ts__fail(TS_EINVAL, "timestamp buffer of %zu bytes is too small (need %d)",
		                buf ? size : 0, TS_TIME_BUFSZ);
	split_ns(ns, &days, &sod, &frac);
	civil_from_days(days, &c);
	int n = snprintf(buf, size, "%04d-%02d-%02dT%02d:%02d:%02d", c.year, c.month, c.day,
	                 (int)(sod / 3600), (int)(sod / 60 % 60), (int)(sod % 60));
	if (frac != 0) {
		/* The shortest exact fraction: nine digits, trailing zeros cut;
		 * frac != 0 keeps at least one digit after the '.'. */
		n += snprintf(buf + n, size - (size_t)n, ".%09d", (int)frac);
		while (buf[n - 1] == '0')
			n--;
	}
	memcpy(buf + n, "Z", 2);
	return 0;
}

/* The unit called name, or NULL. */
static const struct unit *find_unit(const char *name)
{
	for (size_t i = 0; i < NUNITS; i++)
		if (strcmp(units[i].name, name) == 0)
			return &units[i];
	return NULL;
}

/* Check the form digits+unit of text: *n receives the number of digits
 * and *unit the unit. */
static int duration_syntax(const char *text, size_t *n, const struct unit **unit)
{
	size_t i = 0;
	while (is_digit(text[i]))
		i++;
	if (i == 0)
		return ts__fail(TS_EINVAL, "duration \"%.*s\": expected a non-negative integer and a unit (ns us ms s m h d w), e.g. 90m",
		                QUOTE_MAX, text);
	if (text[i] == '.')
		return ts__fail(TS_EINVAL, "duration \"%.*s\": fractions are not supported; use a smaller unit (1.5h is 90m)",
		                QUOTE_MAX, text);
	if (!(*unit = find_unit(text + i)))
		return ts__fail(TS_EINVAL, "duration \"%.*s\": expected a unit (ns us ms s m h d w) at offset %zu",
		                QUOTE_MAX, text, i);
	*n = i;
	return 0;
}

int ts_duration_parse(const char *text, int64_t *out)
{
	const struct unit *unit = NULL;
	size_t n = 0;
	int64_t count = 0, ns = 0;
	int rc;
	if (!text || !out)
		return ts__fail(TS_EINVAL, "ts_duration_parse: NULL argument");
	if (strcmp(text, "0") == 0) {
		*out = 0;
		return 0;
	}
	if ((rc = duration_syntax(text, &n, &unit)) < 0)
		return rc;
	if (decimal(text, 0, n, 0, &count) < 0 || __builtin_mul_overflow(count, unit->ns, &ns))
		return ts__fail(TS_ERANGE, "duration \"%.*s\" does not fit in int64 nanoseconds",
		                QUOTE_MAX, text);
	*out = ns;
	return 0;
}

int ts_duration_format(int64_t ns, char *buf, size_t size)
{
	if (!buf || size < TS_DURATION_BUFSZ)
		return ts__fail(TS_EINVAL, "duration buffer of %zu bytes is too small (need %d)",
		                buf ? size : 0, TS_DURATION_BUFSZ);
	if (ns < 0)
		return ts__fail(TS_EINVAL, "negative duration %lld ns", (long long)ns);
	if (ns == 0) {
		memcpy(buf, "0s", 3);
		return 0;
	}
	size_t i = 0;
	while (ns % units[i].ns != 0)
		i++;
	assert(i < NUNITS);
	snprintf(buf, size, "%lld%s", (long long)(ns / units[i].ns), units[i].name);
	return 0;
}

/* ---- timestamps: integers, epoch counts and relative times ---- */

/* The whole text is [+-]digits. */
static int is_integer(const char *text)
{
	size_t i = text[0] == '-' || text[0] == '+';
	if (!is_digit(text[i]))
		return 0;
	while (is_digit(text[i]))
		i++;
	return text[i] == '\0';
}

/* RFC 3339 and dates start with a 4-digit year and '-'; nothing else
 * does. */
static int looks_like_rfc3339(const char *text)
{
	for (int i = 0; i < 4; i++)
		if (!is_digit(text[i]))
			return 0;
	return text[4] == '-';
}

/* [+-]digits: integer nanoseconds. */
static int parse_integer(const char *text, int64_t *out)
{
	size_t first = text[0] == '-' || text[0] == '+';
	if (decimal(text, first, strlen(text), text[0] == '-', out) < 0)
		return ts__fail(TS_ERANGE, "timestamp \"%.*s\" does not fit in int64 nanoseconds",
		                QUOTE_MAX, text);
	return 0;
}

/* digits followed by a unit: an epoch count in s, ms, us or ns. */
static int parse_epoch_count(const char *text, int64_t *out)
{
	size_t n = 0;
	const struct unit *unit = NULL;
	int64_t count = 0, ns = 0;
	while (is_digit(text[n]))
		n++;
	if (n == 0)
		return ts__fail(TS_EINVAL, "timestamp \"%.*s\": expected RFC 3339 (2026-11-21T10:00:00Z), "
		                "a date (2026-11-21), integer nanoseconds, an epoch count (1732550000s), "
		                "now or a time relative to it (now-15m, -1h)", QUOTE_MAX, text);
	if (!(unit = find_unit(text + n))) {
		struct scan s = {text, n};
		return expected(&s, "a digit or an epoch unit (s ms us ns)");
	}
	if (unit->ns > TS_NS_PER_SEC)
		return ts__fail(TS_EINVAL, "timestamp \"%.*s\": an epoch count takes the unit s, ms, us "
		                "or ns; for %.*s before now write -%.*s or now-%.*s",
		                QUOTE_MAX, text, QUOTE_MAX, text, QUOTE_MAX, text, QUOTE_MAX, text);
	if (decimal(text, 0, n, 0, &count) < 0 || __builtin_mul_overflow(count, unit->ns, &ns))
		return ts__fail(TS_ERANGE, "timestamp \"%.*s\" does not fit in int64 nanoseconds",
		                QUOTE_MAX, text);
	*out = ns;
	return 0;
}

/* The clock ts_time_parse reads "now" from: the one a database opened
 * without a clock option reads (lib/db.c), $TSSTORE_NOW when set, else
 * the real-time clock.  A relative $TSSTORE_NOW is taken from the
 * real-time clock. */
static int default_now(int64_t *now)
{
	struct timespec t;
	const char *env = getenv("TSSTORE_NOW");
	clock_gettime(CLOCK_REALTIME, &t);
	*now = (int64_t)t.tv_sec * TS_NS_PER_SEC + t.tv_nsec;
	if (!env || !*env)
		return 0;
	return ts_time_parse_at(env, *now, now) < 0 ? ts__context(TS_EINVAL, "TSSTORE_NOW") : 0;
}

/* now, now+DURATION, now-DURATION, +DURATION, -DURATION (the text after
 * "now", if any, is at rest); *now is read from the default clock when
 * now is NULL. */
static int parse_relative(const char *text, const char *rest, const int64_t *now, int64_t *out)
{
	int64_t base = 0, d = 0;
	int rc = 0;
	if (*rest != '\0' && *rest != '+' && *rest != '-')
		return ts__fail(TS_EINVAL, "timestamp \"%.*s\": expected '+' or '-' and a duration "
		                "after \"now\" (now-15m)", QUOTE_MAX, text);
	if (*rest != '\0' && (rc = ts_duration_parse(rest + 1, &d)) == TS_ERANGE)
		return ts__fail(TS_ERANGE, "timestamp \"%.*s\": the duration does not fit in int64 "
		                "nanoseconds", QUOTE_MAX, text);
	if (*rest != '\0' && rc < 0)
		return ts__fail(TS_EINVAL, "timestamp \"%.*s\": expected a duration after '%c' "
		                "(<n><unit>, unit one of ns us ms s m h d w: now-15m, -1h)",
		                QUOTE_MAX, text, *rest);
	if (now)
		base = *now;
	else if ((rc = default_now(&base)) < 0)
		return rc;
	if (*rest == '-' ? __builtin_sub_overflow(base, d, &base) : __builtin_add_overflow(base, d, &base))
		return ts__fail(TS_ERANGE, "timestamp \"%.*s\" is outside the range of int64 nanoseconds",
		                QUOTE_MAX, text);
	*out = base;
	return 0;
}

/* Every form, now from *now or (NULL) the default clock. */
static int parse_time(const char *text, const int64_t *now, int64_t *out)
{
	if (text[0] == '\0')
		return ts__fail(TS_EINVAL, "empty timestamp: expected RFC 3339 (2026-11-21T10:00:00Z), "
		                "a date, integer nanoseconds, now or a time relative to it (-1h)");
	if (looks_like_rfc3339(text))
		return parse_rfc3339(text, out);
	if (is_integer(text))
		return parse_integer(text, out);
	if (strncmp(text, "now", 3) == 0)
		return parse_relative(text, text + 3, now, out);
	if (text[0] == '+' || text[0] == '-')
		return parse_relative(text, text, now, out);
	return parse_epoch_count(text, out);
}

int ts_time_parse(const char *text, int64_t *out)
{
	int64_t v = 0;
	int rc;
	if (!text || !out)
		return ts__fail(TS_EINVAL, "ts_time_parse: NULL argument");
	if ((rc = parse_time(text, NULL, &v)) < 0)
		return rc;
	*out = v;
	return 0;
}

int ts_time_parse_at(const char *text, int64_t now, int64_t *out)
{
	int64_t v = 0;
	int rc;
	if (!text || !out)
		return ts__fail(TS_EINVAL, "ts_time_parse_at: NULL argument");
	if ((rc = parse_time(text, &now, &v)) < 0)
		return rc;
	*out = v;
	return 0;
}
