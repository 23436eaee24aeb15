/*
 * test_textfmt.c -- the text forms of timestamps and durations: known
 * instants, offsets, fractions, the calendar (leap days, every day of the
 * int64 range against the C library's gmtime_r), the int64 limits, the
 * malformed inputs that must be refused with a message, and round trips
 * parse(format(x)) == x over many pseudo-random values (fixed seed);
 * dates alone, epoch counts with a unit, and times relative to a fixed
 * reference (ts_time_parse_at) or to $TSSTORE_NOW (ts_time_parse).
 */
#include <stdlib.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <cmocka.h>

#include "tsstore.h"
#include "error.h"

#define ROUNDS 200000

/* 2026-11-21T10:00:00Z, checked with `date -u -d @1795255200`. */
#define T_2026 INT64_C(1795255200000000000)
#define NS INT64_C(1000000000)

/* What *out holds before a call: a failing parse must leave it alone. */
#define UNTOUCHED INT64_C(0x0123456789abcdef)

static uint64_t rng_state = 0x2545F4914F6CDD1Du;

static uint64_t rnd(void)
{
	uint64_t x = rng_state;
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return rng_state = x;
}

/* Random int64 values biased towards the limits, the epoch, whole
 * seconds and short fractions. */
static int64_t rnd_time(void)
{
	int64_t r = (int64_t)rnd();
	switch (rnd() % 6) {
	case 0: return INT64_MIN + (int64_t)(rnd() % 4000000000u);
	case 1: return INT64_MAX - (int64_t)(rnd() % 4000000000u);
	case 2: return (int64_t)(rnd() % 4000000000u) - 2000000000;
	case 3: return r / NS * NS;
	case 4: return r / 1000000 * 1000000;
	default: return r;
	}
}

static void expect_time(const char *text, int64_t want)
{
	int64_t got = UNTOUCHED;
	int rc = ts_time_parse(text, &got);
	if (rc != 0 || got != want)
		fail_msg("ts_time_parse(\"%s\") = %d, %lld; want 0, %lld (%s)", text, rc,
		         (long long)got, (long long)want, ts_errmsg(NULL));
}

/* A failure: the code, *out untouched, and a message that quotes the
 * text (when it has any). */
static void expect_time_error(const char *text, int code)
{
	int64_t got = UNTOUCHED;
	ts__clear_error();
	int rc = ts_time_parse(text, &got);
	if (rc != code || got != UNTOUCHED)
		fail_msg("ts_time_parse(\"%s\") = %d, %lld; want %d", text, rc, (long long)got, code);
	assert_true(ts_errmsg(NULL)[0] != '\0');
	if (text[0] != '\0')
		assert_non_null(strstr(ts_errmsg(NULL), text));
}

static void expect_format(int64_t ns, const char *want)
{
	char buf[TS_TIME_BUFSZ];
	assert_int_equal(ts_time_format(ns, buf, sizeof buf), 0);
	assert_string_equal(buf, want);
}

static void expect_duration(const char *text, int64_t want)
{
	int64_t got = UNTOUCHED;
	int rc = ts_duration_parse(text, &got);
	if (rc != 0 || got != want)
		fail_msg("ts_duration_parse(\"%s\") = %d, %lld; want 0, %lld (%s)", text, rc,
		         (long long)got, (long long)want, ts_errmsg(NULL));
}

static void expect_duration_error(const char *text, int code)
{
	int64_t got = UNTOUCHED;
	ts__clear_error();
	int rc = ts_duration_parse(text, &got);
	if (rc != code || got != UNTOUCHED)
		fail_msg("ts_duration_parse(\"%s\") = %d, %lld; want %d", text, rc, (long long)got, code);
	assert_true(ts_errmsg(NULL)[0] != '\0');
	if (text[0] != '\0')
		assert_non_null(strstr(ts_errmsg(NULL), text));
}

static void expect_duration_format(int64_t ns, const char *want)
{
	char buf[TS_DURATION_BUFSZ];
	assert_int_equal(ts_duration_format(ns, buf, sizeof buf), 0);
	assert_string_equal(buf, want);
}

/* ---- ts_time_parse ------------------------------------------------- */

static void textfmt_time_parse_known_values(void **state)
{
	(void)state;
	expect_time("2026-11-21T10:00:00Z", T_2026);
	expect_time("1970-01-01T00:00:00Z", 0);
	expect_time("1970-01-01T00:00:01Z", NS);
	expect_time("1969-12-31T23:59:59Z", -NS);
	expect_time("2000-01-01T00:00:00Z", INT64_C(946684800) * NS);
	expect_time("1900-01-01T00:00:00Z", INT64_C(-2208988800) * NS);
	expect_time("2026-12-31T23:59:59Z", INT64_C(1798761599) * NS);
}

static void textfmt_time_parse_separators(void **state)
{
	(void)state;
	expect_time("2026-11-21t10:00:00Z", T_2026);
	expect_time("2026-11-21 10:00:00Z", T_2026);
	expect_time("2026-11-21T10:00:00z", T_2026);
	expect_time("2026-11-21 10:00:00.5z", T_2026 + 500000000);
}

static void textfmt_time_parse_offset(void **state)
{
	(void)state;
	expect_time("2026-11-21T12:00:00+02:00", T_2026);
	expect_time("2026-11-21T04:30:00-05:30", T_2026);
	expect_time("2026-11-21T10:00:00+00:00", T_2026);
	expect_time("2026-11-21T10:00:00-00:00", T_2026);
	expect_time("2026-11-21T12:00:00.25+02:00", T_2026 + 250000000);
	expect_time("2026-11-22T09:59:00+23:59", T_2026);
	/* Offsets that cross a day, a month and a leap day. */
	expect_time("2026-11-21T01:00:00+02:00", T_2026 - 11 * 3600 * NS);
	expect_time("2024-03-01T00:30:00+01:00", (INT64_C(1709164800) + 23 * 3600 + 1800) * NS);
	expect_time("2023-12-31T23:00:00-01:00", INT64_C(1704067200) * NS);
}

static void textfmt_time_parse_fraction_digits(void **state)
{
	(void)state;
	expect_time("2026-11-21T10:00:00.1Z", T_2026 + 100000000);
	expect_time("2026-11-21T10:00:00.12Z", T_2026 + 120000000);
	expect_time("2026-11-21T10:00:00.123Z", T_2026 + 123000000);
	expect_time("2026-11-21T10:00:00.1234Z", T_2026 + 123400000);
	expect_time("2026-11-21T10:00:00.12345Z", T_2026 + 123450000);
	expect_time("2026-11-21T10:00:00.123456Z", T_2026 + 123456000);
	expect_time("2026-11-21T10:00:00.1234567Z", T_2026 + 123456700);
	expect_time("2026-11-21T10:00:00.12345678Z", T_2026 + 123456780);
	expect_time("2026-11-21T10:00:00.123456789Z", T_2026 + 123456789);
	expect_time("2026-11-21T10:00:00.000000001Z", T_2026 + 1);
	expect_time("2026-11-21T10:00:00.050Z", T_2026 + 50000000);
	expect_time("2026-11-21T10:00:00.000000000Z", T_2026);
	expect_time("1969-12-31T23:59:59.999999999Z", -1);
	expect_time("1969-12-31T23:59:59.5Z", -500000000);
}

static void textfmt_time_parse_leap_days(void **state)
{
	(void)state;
	expect_time("2024-02-29T00:00:00Z", INT64_C(1709164800) * NS);
	expect_time("2000-02-29T00:00:00Z", INT64_C(951782400) * NS);
	expect_time("2024-03-01T00:00:00Z", INT64_C(1709251200) * NS);
	expect_time_error("2023-02-29T00:00:00Z", TS_EINVAL);
	expect_time_error("2100-02-29T00:00:00Z", TS_EINVAL);
	expect_time_error("1900-02-29T00:00:00Z", TS_EINVAL);
	expect_time_error("2024-02-30T00:00:00Z", TS_EINVAL);
	/* Year 0 is a leap year: the date exists, the instant is out of range. */
	expect_time_error("0000-02-29T00:00:00Z", TS_ERANGE);
}

/* Every day of the int64 range, against the C library's calendar. */
static void textfmt_time_parse_every_day(void **state)
{
	(void)state;
	char text[64], buf[TS_TIME_BUFSZ];
	int64_t first = INT64_MIN / (86400 * NS), last = INT64_MAX / (86400 * NS);
	assert_int_equal(first, -106751);
	assert_int_equal(last, 106751);
	for (int64_t day = first; day <= last; day++) {
		time_t t = (time_t)(day * 86400);
		struct tm tm;
		assert_non_null(gmtime_r(&t, &tm));
		assert_int_equal(strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &tm), 20);
		expect_time(text, day * 86400 * NS);
		assert_int_equal(ts_time_format(day * 86400 * NS, buf, sizeof buf), 0);
		assert_string_equal(buf, text);
	}
}

static void textfmt_time_parse_integer(void **state)
{
	(void)state;
	expect_time("0", 0);
	expect_time("-0", 0);
	expect_time("1", 1);
	expect_time("-1", -1);
	expect_time("+5", 5);
	expect_time("007", 7);
	expect_time("1795255200000000000", T_2026);
	expect_time("9223372036854775807", INT64_MAX);
	expect_time("-9223372036854775808", INT64_MIN);
}

static void textfmt_time_parse_integer_overflow(void **state)
{
	(void)state;
	expect_time_error("9223372036854775808", TS_ERANGE);
	expect_time_error("-9223372036854775809", TS_ERANGE);
	expect_time_error("99999999999999999999999999", TS_ERANGE);
	expect_time_error("-99999999999999999999999999", TS_ERANGE);
	/* Syntax is checked before size. */
	expect_time_error("99999999999999999999999999x", TS_EINVAL);
}

static void textfmt_time_parse_range_limits(void **state)
{
	(void)state;
	expect_time("1677-09-21T00:12:43.145224192Z", INT64_MIN);
	expect_time_error("1677-09-21T00:12:43.145224191Z", TS_ERANGE);
	expect_time_error("1677-09-21T00:12:43Z", TS_ERANGE);
	expect_time("1677-09-21T00:12:44Z", INT64_C(-9223372036) * NS);
	expect_time("2262-04-11T23:47:16.854775807Z", INT64_MAX);
	expect_time_error("2262-04-11T23:47:16.854775808Z", TS_ERANGE);
	expect_time_error("2262-04-11T23:47:17Z", TS_ERANGE);
	/* The zone moves the instant across the limits. */
	expect_time("2262-04-12T01:47:16.854775807+02:00", INT64_MAX);
	expect_time_error("2262-04-11T23:47:16.854775807-00:01", TS_ERANGE);
	expect_time("1677-09-20T23:12:43.145224192-01:00", INT64_MIN);
	expect_time_error("1677-09-21T00:12:43.145224192+00:01", TS_ERANGE);
	expect_time_error("0000-01-01T00:00:00Z", TS_ERANGE);
	expect_time_error("9999-12-31T23:59:59.999999999Z", TS_ERANGE);
}

static void textfmt_time_parse_rejects_malformed(void **state)
{
	(void)state;
	static const char *const bad[] = {
		"", "2026-11-21T", "2026-11-21T10:00:00", "2026-11-21T10:00:00.Z",
		"12abc", "--5", " 5", "5 ", "-", "+", "1e9", "0x10",
		"2026-11-21T10:00", "2026-11-21T10:00:00+0200", "2026-11-21T10:00:00+02",
		"2026-11-21T10:00:00+02:0", "2026-1-21T10:00:00Z", "2026-11-21X10:00:00Z",
		"2026-11-21T10:00:00 Z", "2026-11-21T10:00:00Zjunk", "2026-11-21T10:00:00ZZ",
		"2026-11-21T10:00:00+02:00Z", "2026-11-21T10:0a:00Z", "2026-11-21T10:00:00,5Z",
		"2026-11-21T1:00:00Z", "+2026-11-21T10:00:00Z", "2026-11-21T10:00:00\x01",
		"2026-11-21T10:00:00.5\xc3\xa9",
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		expect_time_error(bad[i], TS_EINVAL);
}

static void textfmt_time_parse_rejects_bad_month(void **state)
{
	(void)state;
	expect_time_error("2026-13-01T00:00:00Z", TS_EINVAL);
	assert_non_null(strstr(ts_errmsg(NULL), "month 13"));
	expect_time_error("2026-00-01T00:00:00Z", TS_EINVAL);
	assert_non_null(strstr(ts_errmsg(NULL), "month 00"));
}

static void textfmt_time_parse_rejects_bad_fields(void **state)
{
	(void)state;
	expect_time_error("2026-11-00T10:00:00Z", TS_EINVAL);
	expect_time_error("2026-11-31T10:00:00Z", TS_EINVAL);
	assert_non_null(strstr(ts_errmsg(NULL), "day 31"));
	expect_time_error("2026-04-31T10:00:00Z", TS_EINVAL);
	expect_time_error("2026-01-32T10:00:00Z", TS_EINVAL);
	expect_time_error("2026-11-21T24:00:00Z", TS_EINVAL);
	expect_time_error("2026-11-21T25:00:00Z", TS_EINVAL);
	assert_non_null(strstr(ts_errmsg(NULL), "hour 25"));
	expect_time_error("2026-11-21T10:60:00Z", TS_EINVAL);
	expect_time_error("2026-11-21T10:00:61Z", TS_EINVAL);
	expect_time_error("2026-11-21T10:00:00+24:00", TS_EINVAL);
	expect_time_error("2026-11-21T10:00:00+02:60", TS_EINVAL);
	expect_time("2026-01-31T10:00:00Z", INT64_C(1769853600) * NS);
	expect_time("2026-11-21T23:59:59Z", T_2026 + (13 * 3600 + 59 * 60 + 59) * NS);
}

static void textfmt_time_parse_rejects_leap_second(void **state)
{
	(void)state;
	expect_time_error("2016-12-31T23:59:60Z", TS_EINVAL);
	assert_non_null(strstr(ts_errmsg(NULL), "leap seconds are not supported"));
}

static void textfmt_time_parse_rejects_ten_fraction_digits(void **state)
{
	(void)state;
	expect_time_error("2026-11-21T10:00:00.1234567890Z", TS_EINVAL);
	assert_non_null(strstr(ts_errmsg(NULL), "at most 9"));
	expect_time_error("2026-11-21T10:00:00.0000000000Z", TS_EINVAL);
}

static void textfmt_time_parse_message_says_where(void **state)
{
	(void)state;
	expect_time_error("2026-11-21X", TS_EINVAL);
	assert_string_equal(ts_errmsg(NULL),
	                    "timestamp \"2026-11-21X\": expected 'T' and a time of day at offset 10, "
	                    "found 'X'");
	expect_time_error("2026-11-21T10:00:00", TS_EINVAL);
	assert_non_null(strstr(ts_errmsg(NULL), "expected a zone ('Z' or an offset such as +02:00) at offset 19"));
	expect_time_error("12abc", TS_EINVAL);
	assert_non_null(strstr(ts_errmsg(NULL), "at offset 2, found 'a'"));
	expect_time_error("", TS_EINVAL);
	assert_non_null(strstr(ts_errmsg(NULL), "empty timestamp"));
}

/* ---- dates, epoch units, relative times ----------------------------- */

/* ts_time_parse_at(text, now) succeeds with want. */
static void expect_time_at(const char *text, int64_t now, int64_t want)
{
	int64_t got = UNTOUCHED;
	int rc = ts_time_parse_at(text, now, &got);
	if (rc != 0 || got != want)
		fail_msg("ts_time_parse_at(\"%s\") = %d, %lld; want 0, %lld (%s)", text, rc,
		         (long long)got, (long long)want, ts_errmsg(NULL));
}

static void expect_time_at_error(const char *text, int64_t now, int code)
{
	int64_t got = UNTOUCHED;
	ts__clear_error();
	int rc = ts_time_parse_at(text, now, &got);
	if (rc != code || got != UNTOUCHED)
		fail_msg("ts_time_parse_at(\"%s\") = %d, %lld; want %d", text, rc, (long long)got, code);
	assert_non_null(strstr(ts_errmsg(NULL), text));
}

static void textfmt_time_parse_date_alone(void **state)
{
	(void)state;
	expect_time("2026-11-21", T_2026 - 10 * 3600 * NS);
	expect_time("2026-11-25", INT64_C(1795564800) * NS); /* date -u -d 2026-11-25 +%s */
	expect_time("1970-01-01", 0);
	expect_time("1969-12-31", -86400 * NS);
	expect_time("2024-02-29", INT64_C(1709164800) * NS);
	expect_time_error("2026-02-29", TS_EINVAL);
	expect_time_error("2026-11-21Z", TS_EINVAL);
	expect_time_error("1677-09-21", TS_ERANGE);
	expect_time("1677-09-22", INT64_C(-9223286400) * NS);
}

static void textfmt_time_parse_epoch_units(void **state)
{
	(void)state;
	expect_time("1732550000s", INT64_C(1732550000) * NS); /* 2024-11-25T15:53:20Z */
	expect_time("1732550000123ms", INT64_C(1732550000123) * 1000000);
	expect_time("1732550000123456us", INT64_C(1732550000123456) * 1000);
	expect_time("1732550000123456789ns", INT64_C(1732550000123456789));
	expect_time("0s", 0);
	expect_time("9223372036s", INT64_C(9223372036) * NS);
	expect_time("9223372036854775807ns", INT64_MAX);
	expect_time_error("9223372037s", TS_ERANGE);
	expect_time_error("9223372036854775808ns", TS_ERANGE);
	expect_time_error("s", TS_EINVAL);
	expect_time_error("5x", TS_EINVAL);
	expect_time_error("1.5s", TS_EINVAL);
	expect_time_error("5S", TS_EINVAL);
	expect_time_error("5h", TS_EINVAL);
	assert_string_equal(ts_errmsg(NULL), "timestamp \"5h\": an epoch count takes the unit s, ms, "
	                    "us or ns; for 5h before now write -5h or now-5h");
	expect_time_error("3d", TS_EINVAL);
	expect_time_error("1w", TS_EINVAL);
}

static void textfmt_time_parse_relative(void **state)
{
	(void)state;
	expect_time_at("now", T_2026, T_2026);
	expect_time_at("now-15m", T_2026, T_2026 - 900 * NS);
	expect_time_at("now+5m", T_2026, T_2026 + 300 * NS);
	expect_time_at("-1h", T_2026, T_2026 - 3600 * NS);
	expect_time_at("+30s", T_2026, T_2026 + 30 * NS);
	expect_time_at("-7d", T_2026, T_2026 - 7 * 86400 * NS);
	expect_time_at("now-1w", T_2026, T_2026 - 7 * 86400 * NS);
	expect_time_at("-1ns", 0, -1);
	expect_time_at("now-0", T_2026, T_2026);
	expect_time_at("-5s", 0, -5 * NS);
	/* not relative: a bare signed integer is nanoseconds, the rest as before */
	expect_time_at("-1", T_2026, -1);
	expect_time_at("+5", T_2026, 5);
	expect_time_at("1732550000s", T_2026, INT64_C(1732550000) * NS);
	expect_time_at("2026-11-21T10:00:00Z", 0, T_2026);
	/* the int64 range */
	expect_time_at("now+1ns", INT64_MAX - 1, INT64_MAX);
	expect_time_at_error("now+2ns", INT64_MAX - 1, TS_ERANGE);
	expect_time_at_error("-1ns", INT64_MIN, TS_ERANGE);
	expect_time_at_error("-9223372037s", 0, TS_ERANGE);
	static const char *const bad[] = {
		"now-", "now+", "nowx", "now-1x", "now--1h", "now 1h", "now-1h ", "-1.5h", "now-1",
		"now-h", "Now", "NOW", "now-1h-1h", "-1h30m", "- 1h", "-", "+", "--1h", "now-1H",
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		expect_time_at_error(bad[i], T_2026, TS_EINVAL);
	expect_time_at_error("now-15x", T_2026, TS_EINVAL);
	assert_string_equal(ts_errmsg(NULL), "timestamp \"now-15x\": expected a duration after '-' "
	                    "(<n><unit>, unit one of ns us ms s m h d w: now-15m, -1h)");
	expect_time_at_error("nowadays", T_2026, TS_EINVAL);
	assert_string_equal(ts_errmsg(NULL), "timestamp \"nowadays\": expected '+' or '-' and a "
	                    "duration after \"now\" (now-15m)");
}

/* ts_time_parse reads now as a database without a clock option does:
 * $TSSTORE_NOW, else the real-time clock; only for a relative text. */
static void textfmt_time_parse_default_now(void **state)
{
	(void)state;
	int64_t got = 0;
	struct timespec a, b;
	assert_int_equal(setenv("TSSTORE_NOW", "2026-11-21T10:00:00Z", 1), 0);
	expect_time("now-1h", T_2026 - 3600 * NS);
	expect_time("-15m", T_2026 - 900 * NS);
	assert_int_equal(setenv("TSSTORE_NOW", "yesterday", 1), 0);
	expect_time("2026-11-21T10:00:00Z", T_2026); /* absolute: the clock is not read */
	expect_time("5s", 5 * NS);
	ts__clear_error();
	assert_int_equal(ts_time_parse("now", &got), TS_EINVAL);
	assert_non_null(strstr(ts_errmsg(NULL), "TSSTORE_NOW"));
	assert_int_equal(got, 0);
	assert_int_equal(unsetenv("TSSTORE_NOW"), 0);
	clock_gettime(CLOCK_REALTIME, &a);
	assert_int_equal(ts_time_parse("now-1h", &got), 0);
	clock_gettime(CLOCK_REALTIME, &b);
	assert_true(got >= (int64_t)a.tv_sec * NS + a.tv_nsec - 3600 * NS);
	assert_true(got <= (int64_t)b.tv_sec * NS + b.tv_nsec - 3600 * NS);
}

static void textfmt_time_parse_at_null(void **state)
{
	(void)state;
	int64_t got = 0;
	assert_int_equal(ts_time_parse_at(NULL, 0, &got), TS_EINVAL);
	assert_int_equal(ts_time_parse_at("now", 0, NULL), TS_EINVAL);
}

/* ---- ts_time_format ------------------------------------------------ */

static void textfmt_time_format_known_values(void **state)
{
	(void)state;
	expect_format(T_2026, "2026-11-21T10:00:00Z");
	expect_format(0, "1970-01-01T00:00:00Z");
	expect_format(INT64_C(1709164800) * NS, "2024-02-29T00:00:00Z");
	expect_format(INT64_C(951782400) * NS, "2000-02-29T00:00:00Z");
	expect_format(INT64_C(-2208988800) * NS, "1900-01-01T00:00:00Z");
}

static void textfmt_time_format_fraction_shortest(void **state)
{
	(void)state;
	expect_format(T_2026 + 500000000, "2026-11-21T10:00:00.5Z");
	expect_format(T_2026 + 1, "2026-11-21T10:00:00.000000001Z");
	expect_format(T_2026 + 120000000, "2026-11-21T10:00:00.12Z");
	expect_format(T_2026 + 123456789, "2026-11-21T10:00:00.123456789Z");
	expect_format(T_2026 + 10, "2026-11-21T10:00:00.00000001Z");
	expect_format(T_2026 + NS + 500000000, "2026-11-21T10:00:01.5Z");
	expect_format(1, "1970-01-01T00:00:00.000000001Z");
}

static void textfmt_time_format_negative(void **state)
{
	(void)state;
	expect_format(-1, "1969-12-31T23:59:59.999999999Z");
	expect_format(-NS, "1969-12-31T23:59:59Z");
	expect_format(-NS - 1, "1969-12-31T23:59:58.999999999Z");
	expect_format(-500000000, "1969-12-31T23:59:59.5Z");
	expect_format(-86400 * NS, "1969-12-31T00:00:00Z");
	expect_format(-86400 * NS - 1, "1969-12-30T23:59:59.999999999Z");
	expect_format(INT64_C(-2208988800) * NS - 1, "1899-12-31T23:59:59.999999999Z");
}

static void textfmt_time_format_limits(void **state)
{
	(void)state;
	expect_format(INT64_MIN, "1677-09-21T00:12:43.145224192Z");
	expect_format(INT64_MIN + 1, "1677-09-21T00:12:43.145224193Z");
	expect_format(INT64_MAX, "2262-04-11T23:47:16.854775807Z");
	expect_format(INT64_MAX - 854775807, "2262-04-11T23:47:16Z");
}

/* Random instants, against gmtime_r for the part before the fraction. */
static void textfmt_time_format_matches_gmtime(void **state)
{
	(void)state;
	char want[64], buf[TS_TIME_BUFSZ];
	for (int i = 0; i < ROUNDS; i++) {
		int64_t ns = rnd_time();
		int64_t secs = ns / NS - (ns % NS < 0);
		time_t t = (time_t)secs;
		struct tm tm;
		assert_non_null(gmtime_r(&t, &tm));
		assert_int_equal(strftime(want, sizeof want, "%Y-%m-%dT%H:%M:%S", &tm), 19);
		assert_int_equal(ts_time_format(ns, buf, sizeof buf), 0);
		assert_memory_equal(buf, want, 19);
		assert_true(buf[19] == (ns % NS == 0 ? 'Z' : '.'));
	}
}

static void textfmt_time_format_rejects_small_buffer(void **state)
{
	(void)state;
	char buf[TS_TIME_BUFSZ];
	ts__clear_error();
	assert_int_equal(ts_time_format(0, buf, TS_TIME_BUFSZ - 1), TS_EINVAL);
	assert_true(ts_errmsg(NULL)[0] != '\0');
	assert_int_equal(ts_time_format(0, NULL, TS_TIME_BUFSZ), TS_EINVAL);
}

static void textfmt_time_roundtrip_random(void **state)
{
	(void)state;
	char buf[TS_TIME_BUFSZ];
	static const int64_t edge[] = {0, 1, -1, INT64_MIN, INT64_MAX, INT64_MIN + 1,
	                               INT64_MAX - 1, NS, -NS, T_2026};
	for (size_t i = 0; i < sizeof edge / sizeof edge[0]; i++) {
		assert_int_equal(ts_time_format(edge[i], buf, sizeof buf), 0);
		expect_time(buf, edge[i]);
	}
	for (int i = 0; i < ROUNDS; i++) {
		int64_t ns = rnd_time();
		assert_int_equal(ts_time_format(ns, buf, sizeof buf), 0);
		assert_true(strlen(buf) < TS_TIME_BUFSZ);
		expect_time(buf, ns);
	}
}

/* ---- durations ----------------------------------------------------- */

static void textfmt_duration_parse_units(void **state)
{
	(void)state;
	expect_duration("1ns", 1);
	expect_duration("1us", 1000);
	expect_duration("1ms", 1000000);
	expect_duration("1s", NS);
	expect_duration("1m", 60 * NS);
	expect_duration("1h", 3600 * NS);
	expect_duration("1d", 86400 * NS);
	expect_duration("1w", 604800 * NS);
	expect_duration("90m", 5400 * NS);
	expect_duration("1500ms", 1500000000);
	expect_duration("007s", 7 * NS);
	expect_duration("9223372036854775807ns", INT64_MAX);
	expect_duration("15250w", INT64_C(15250) * 604800 * NS);
	expect_duration("106751d", INT64_C(106751) * 86400 * NS);
}

static void textfmt_duration_parse_zero(void **state)
{
	(void)state;
	expect_duration("0", 0);
	expect_duration("0s", 0);
	expect_duration("0w", 0);
	expect_duration("0ns", 0);
}

static void textfmt_duration_parse_rejects_malformed(void **state)
{
	(void)state;
	static const char *const bad[] = {
		"", "5", "5x", "-5s", "1.5h", "s", " 5s", "5s ", "5 s", "5S", "+5s",
		"5sec", "5mss", "5hm", "1h30m", "-0", "ms", "5\xc2\xb5s",
		"99999999999999999999999999x",
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		expect_duration_error(bad[i], TS_EINVAL);
	expect_duration_error("1.5h", TS_EINVAL);
	assert_non_null(strstr(ts_errmsg(NULL), "fractions are not supported"));
}

static void textfmt_duration_parse_overflow(void **state)
{
	(void)state;
	expect_duration_error("9999999999999999999ns", TS_ERANGE);
	expect_duration_error("10000000w", TS_ERANGE);
	expect_duration_error("9223372036854775808ns", TS_ERANGE);
	expect_duration_error("9223372036854775807us", TS_ERANGE);
	expect_duration_error("15251w", TS_ERANGE);
	expect_duration_error("106752d", TS_ERANGE);
	expect_duration_error("9223372037s", TS_ERANGE);
}

static void textfmt_duration_format_largest_unit(void **state)
{
	(void)state;
	expect_duration_format(5400 * NS, "90m");
	expect_duration_format(86400 * NS, "1d");
	expect_duration_format(604800 * NS, "1w");
	expect_duration_format(1500000000, "1500ms");
	expect_duration_format(0, "0s");
	expect_duration_format(1, "1ns");
	expect_duration_format(1000, "1us");
	expect_duration_format(1001, "1001ns");
	expect_duration_format(1000000, "1ms");
	expect_duration_format(NS, "1s");
	expect_duration_format(90 * NS, "90s");
	expect_duration_format(60 * NS, "1m");
	expect_duration_format(3600 * NS, "1h");
	expect_duration_format(25 * 3600 * NS, "25h");
	expect_duration_format(8 * 86400 * NS, "8d");
	expect_duration_format(14 * 86400 * NS, "2w");
	expect_duration_format(INT64_C(15250) * 604800 * NS, "15250w");
	expect_duration_format(INT64_MAX, "9223372036854775807ns");
}

static void textfmt_duration_format_rejects_negative(void **state)
{
	(void)state;
	char buf[TS_DURATION_BUFSZ];
	ts__clear_error();
	assert_int_equal(ts_duration_format(-1, buf, sizeof buf), TS_EINVAL);
	assert_true(ts_errmsg(NULL)[0] != '\0');
	assert_int_equal(ts_duration_format(INT64_MIN, buf, sizeof buf), TS_EINVAL);
}

static void textfmt_duration_format_rejects_small_buffer(void **state)
{
	(void)state;
	char buf[TS_DURATION_BUFSZ];
	ts__clear_error();
	assert_int_equal(ts_duration_format(1, buf, TS_DURATION_BUFSZ - 1), TS_EINVAL);
	assert_true(ts_errmsg(NULL)[0] != '\0');
	assert_int_equal(ts_duration_format(1, NULL, TS_DURATION_BUFSZ), TS_EINVAL);
}

static void textfmt_duration_roundtrip(void **state)
{
	(void)state;
	static const int64_t unit[] = {1, 1000, 1000000, NS, 60 * NS, 3600 * NS,
	                               86400 * NS, 604800 * NS};
	char buf[TS_DURATION_BUFSZ];
	for (int i = 0; i < ROUNDS; i++) {
		int64_t u = unit[rnd() % 8];
		int64_t ns = rnd() % 2 ? (int64_t)(rnd() >> 1) : (int64_t)(rnd() % (uint64_t)(INT64_MAX / u)) * u;
		assert_int_equal(ts_duration_format(ns, buf, sizeof buf), 0);
		expect_duration(buf, ns);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(textfmt_time_parse_known_values),
		cmocka_unit_test(textfmt_time_parse_separators),
		cmocka_unit_test(textfmt_time_parse_offset),
		cmocka_unit_test(textfmt_time_parse_fraction_digits),
		cmocka_unit_test(textfmt_time_parse_leap_days),
		cmocka_unit_test(textfmt_time_parse_every_day),
		cmocka_unit_test(textfmt_time_parse_integer),
		cmocka_unit_test(textfmt_time_parse_integer_overflow),
		cmocka_unit_test(textfmt_time_parse_range_limits),
		cmocka_unit_test(textfmt_time_parse_rejects_malformed),
		cmocka_unit_test(textfmt_time_parse_rejects_bad_month),
		cmocka_unit_test(textfmt_time_parse_rejects_bad_fields),
		cmocka_unit_test(textfmt_time_parse_rejects_leap_second),
		cmocka_unit_test(textfmt_time_parse_rejects_ten_fraction_digits),
		cmocka_unit_test(textfmt_time_parse_message_says_where),
		cmocka_unit_test(textfmt_time_parse_date_alone),
		cmocka_unit_test(textfmt_time_parse_epoch_units),
		cmocka_unit_test(textfmt_time_parse_relative),
		cmocka_unit_test(textfmt_time_parse_default_now),
		cmocka_unit_test(textfmt_time_parse_at_null),
		cmocka_unit_test(textfmt_time_format_known_values),
		cmocka_unit_test(textfmt_time_format_fraction_shortest),
		cmocka_unit_test(textfmt_time_format_negative),
		cmocka_unit_test(textfmt_time_format_limits),
		cmocka_unit_test(textfmt_time_format_matches_gmtime),
		cmocka_unit_test(textfmt_time_format_rejects_small_buffer),
		cmocka_unit_test(textfmt_time_roundtrip_random),
		cmocka_unit_test(textfmt_duration_parse_units),
		cmocka_unit_test(textfmt_duration_parse_zero),
		cmocka_unit_test(textfmt_duration_parse_rejects_malformed),
		cmocka_unit_test(textfmt_duration_parse_overflow),
		cmocka_unit_test(textfmt_duration_format_largest_unit),
		cmocka_unit_test(textfmt_duration_format_rejects_negative),
		cmocka_unit_test(textfmt_duration_format_rejects_small_buffer),
		cmocka_unit_test(textfmt_duration_roundtrip),
	};
	return cmocka_run_group_tests_name("textfmt", tests, NULL, NULL);
}
