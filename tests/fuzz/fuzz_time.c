/*
 * fuzz_time.c -- libFuzzer target for the text forms of timestamps and
 * durations (lib/textfmt.c): ts_time_parse, ts_time_format,
 * ts_duration_parse, ts_duration_format.
 *
 * Each input is used three ways:
 *   - as a timestamp text (up to its first NUL): ts_time_parse_at, with
 *     "now" fixed at NOW, must agree with the small reference parser
 *     below on the outcome (0, TS_EINVAL or TS_ERANGE) and, on success,
 *     on the value (RFC 3339, a date alone, integer ns, an epoch count
 *     with a unit, now and now/sign with a duration); a parsed value
 *     must format and parse back to itself;
 *   - as a duration text, likewise against a reference;
 *   - its first 8 bytes as an int64: it must format as a timestamp that
 *     parses back to it, and (when >= 0) as a duration that parses back
 *     to it; a negative duration must be refused.
 * The reference follows the grammar of DESIGN.md section 2 and the
 * comment at the top of textfmt.c, written independently (no shared
 * code; days counted from year 0 rather than by eras), so a parser that
 * accepts 2026-02-30 or mis-scales a fraction disagrees with it.  Any
 * disagreement aborts, as does a crash, leak or undefined behaviour.
 * Seed corpus: tests/fuzz/time/.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tsstore.h"

#define NS_PER_SEC INT64_C(1000000000)
/* The reference time of relative texts: 2026-11-21T10:00:00Z. */
#define NOW INT64_C(1795255200000000000)

static int ref_duration(const char *t, int64_t *out);

static void fail(const char *what, const char *text, int rc, int want, int64_t v, int64_t w)
{
	fprintf(stderr, "%s: \"%s\": rc %d (%s), reference %d; value %lld, reference %lld\n", what,
	        text, rc, ts_errmsg(NULL), want, (long long)v, (long long)w);
	abort();
}

static int digit(char c) { return c >= '0' && c <= '9'; }

/* n digits at t[*i] into *v; 0 or -1. */
static int digits(const char *t, size_t *i, int n, int *v)
{
	*v = 0;
	for (int k = 0; k < n; k++, (*i)++) {
		if (!digit(t[*i]))
			return -1;
		*v = *v * 10 + (t[*i] - '0');
	}
	return 0;
}

static int leap(int y) { return y % 400 == 0 || (y % 4 == 0 && y % 100 != 0); }

/* Days from 0000-03-01-free counting: days before year y since
 * 0000-01-01 (every year from 0 to y - 1), then the months. */
static int64_t days_since_year0(int y, int m, int d)
{
	static const int before[12] = {0, 31, 59, 90, 120, 151, 181, 212, 243, 273, 304, 334};
	int64_t n = 365 * (int64_t)y + (y + 3) / 4 - (y + 99) / 100 + (y + 399) / 400;
	return n + before[m - 1] + (m > 2 && leap(y)) + d - 1;
}

/* Reference: 0, TS_EINVAL or TS_ERANGE, and the value. */
static int ref_time(const char *t, int64_t *out)
{
	static const int mdays[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
	size_t i = 0;
	int y, mo, d, h, mi, s, zh = 0, zm = 0, frac = 0, nfrac = 0, sign = 0;
	if (digit(t[0]) && digit(t[1]) && digit(t[2]) && digit(t[3]) && t[4] == '-') {
		if (digits(t, &i, 4, &y) || t[i++] != '-' || digits(t, &i, 2, &mo) || t[i++] != '-' ||
		    digits(t, &i, 2, &d))
			return TS_EINVAL;
		if (t[i] == '\0') { /* a date alone: midnight UTC */
			h = mi = s = 0;
			if (mo < 1 || mo > 12 || d < 1 || d > mdays[mo - 1] + (mo == 2 && leap(y)))
				return TS_EINVAL;
			__int128 ns = (__int128)(days_since_year0(y, mo, d) - days_since_year0(1970, 1, 1)) *
			              86400 * NS_PER_SEC;
			if (ns < INT64_MIN || ns > INT64_MAX)
				return TS_ERANGE;
			*out = (int64_t)ns;
			return 0;
		}
		if (!(t[i] == 'T' || t[i] == 't' || t[i] == ' ') ||
		    (++i, digits(t, &i, 2, &h)) || t[i++] != ':' || digits(t, &i, 2, &mi) ||
		    t[i++] != ':' || digits(t, &i, 2, &s))
			return TS_EINVAL;
		if (mo < 1 || mo > 12 || d < 1 || d > mdays[mo - 1] + (mo == 2 && leap(y)) ||
		    h > 23 || mi > 59 || s > 59)
			return TS_EINVAL;
		if (t[i] == '.') {
			for (i++; digit(t[i]); i++, nfrac++)
				if (nfrac < 9)
					frac = frac * 10 + (t[i] - '0');
			if (nfrac == 0 || nfrac > 9)
				return TS_EINVAL;
			for (int k = nfrac; k < 9; k++)
				frac *= 10;
		}
		if (t[i] == 'Z' || t[i] == 'z') {
			i++;
		} else if (t[i] == '+' || t[i] == '-') {
			sign = t[i++] == '-' ? -1 : 1;
			if (digits(t, &i, 2, &zh) || t[i++] != ':' || digits(t, &i, 2, &zm) || zh > 23 ||
			    zm > 59)
				return TS_EINVAL;
		} else {
			return TS_EINVAL;
		}
		if (t[i] != '\0')
			return TS_EINVAL;
		__int128 secs = (__int128)(days_since_year0(y, mo, d) - days_since_year0(1970, 1, 1)) *
		                    86400 + h * 3600 + mi * 60 + s - sign * (zh * 60 + zm) * 60;
		__int128 ns = secs * NS_PER_SEC + frac;
		if (ns < INT64_MIN || ns > INT64_MAX)
			return TS_ERANGE;
		*out = (int64_t)ns;
		return 0;
	}
	size_t k = t[0] == '-' || t[0] == '+';
	while (digit(t[k]))
		k++;
	int integer = t[k] == '\0' && digit(t[t[0] == '-' || t[0] == '+']);
	if (strncmp(t, "now", 3) == 0)
		t += 3;
	else if (integer || (t[0] != '-' && t[0] != '+'))
		goto count;
	/* relative: "", or a sign and a duration, from NOW */
	{
		int64_t dur = 0;
		int rc;
		if (t[0] == '\0') {
			*out = NOW;
			return 0;
		}
		if ((t[0] != '-' && t[0] != '+') || (rc = ref_duration(t + 1, &dur)) == TS_EINVAL)
			return TS_EINVAL;
		__int128 r = (__int128)NOW + (t[0] == '-' ? -(__int128)dur : dur);
		if (rc == TS_ERANGE || r < INT64_MIN || r > INT64_MAX)
			return TS_ERANGE;
		*out = (int64_t)r;
		return 0;
	}
count:;
	int neg = t[0] == '-';
	i = t[0] == '-' || t[0] == '+';
	size_t first = i;
	__int128 v = 0, unit = 1;
	for (; digit(t[i]); i++)
		if ((v = v * 10 + (t[i] - '0')) > ((__int128)1 << 70))
			v = (__int128)1 << 70; /* large enough to be out of range */
	if (i == first)
		return TS_EINVAL;
	if (t[i] != '\0') {
		/* an unsigned epoch count with a unit (a sign and a unit was relative) */
		if (first != 0)
			return TS_EINVAL;
		if (strcmp(t + i, "s") == 0)
			unit = NS_PER_SEC;
		else if (strcmp(t + i, "ms") == 0)
			unit = 1000000;
		else if (strcmp(t + i, "us") == 0)
			unit = 1000;
		else if (strcmp(t + i, "ns") != 0)
			return TS_EINVAL;
		v *= unit;
	}
	v = neg ? -v : v;
	if (v < INT64_MIN || v > INT64_MAX)
		return TS_ERANGE;
	*out = (int64_t)v;
	return 0;
}

static int ref_duration(const char *t, int64_t *out)
{
	static const struct {
		const char *name;
		int64_t ns;
	} units[] = {{"ns", 1}, {"us", 1000}, {"ms", 1000000}, {"s", NS_PER_SEC},
	             {"m", 60 * NS_PER_SEC}, {"h", 3600 * NS_PER_SEC}, {"d", 86400 * NS_PER_SEC},
	             {"w", 7 * 86400 * NS_PER_SEC}};
	size_t i = 0;
	__int128 v = 0;
	if (strcmp(t, "0") == 0) {
		*out = 0;
		return 0;
	}
	for (; digit(t[i]); i++)
		if ((v = v * 10 + (t[i] - '0')) > ((__int128)1 << 70))
			v = (__int128)1 << 70;
	if (i == 0)
		return TS_EINVAL;
	for (size_t u = 0; u < sizeof units / sizeof units[0]; u++)
		if (strcmp(t + i, units[u].name) == 0) {
			v *= units[u].ns;
			if (v > INT64_MAX)
				return TS_ERANGE;
			*out = (int64_t)v;
			return 0;
		}
	return TS_EINVAL;
}

static void check_time_text(const char *text)
{
	int64_t v = 0, w = 0, back = 0;
	char buf[TS_TIME_BUFSZ];
	int rc = ts_time_parse_at(text, NOW, &v), want = ref_time(text, &w);
	if (rc != want || (rc == 0 && v != w))
		fail("ts_time_parse_at", text, rc, want, v, w);
	if (rc == 0 && (ts_time_format(v, buf, sizeof buf) != 0 || ts_time_parse(buf, &back) != 0 ||
	                back != v))
		fail("timestamp round trip", buf, rc, 0, back, v);
}

static void check_duration_text(const char *text)
{
	int64_t v = 0, w = 0, back = 0;
	char buf[TS_DURATION_BUFSZ];
	int rc = ts_duration_parse(text, &v), want = ref_duration(text, &w);
	if (rc != want || (rc == 0 && v != w))
		fail("ts_duration_parse", text, rc, want, v, w);
	if (rc == 0 && (ts_duration_format(v, buf, sizeof buf) != 0 ||
	                ts_duration_parse(buf, &back) != 0 || back != v))
		fail("duration round trip", buf, rc, 0, back, v);
}

static void check_value(int64_t v)
{
	char buf[TS_TIME_BUFSZ], dbuf[TS_DURATION_BUFSZ];
	int64_t back = 0;
	if (ts_time_format(v, buf, sizeof buf) != 0 || ts_time_parse(buf, &back) != 0 || back != v)
		fail("ts_time_format", buf, 0, 0, back, v);
	int rc = ts_duration_format(v, dbuf, sizeof dbuf);
	if (v < 0 ? rc != TS_EINVAL : rc != 0 || ts_duration_parse(dbuf, &back) != 0 || back != v)
		fail("ts_duration_format", v < 0 ? "(negative)" : dbuf, rc, 0, back, v);
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);
int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
	char *text = malloc(size + 1);
	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	check_time_text(text);
	check_duration_text(text);
	if (size >= 8) {
		int64_t v;
		memcpy(&v, data, 8);
		check_value(v);
	}
	free(text);
	return 0;
}
