/*
 * period.h -- LittleTable's time periods (DESIGN.md section 3, "Periods").
 *
 * Seen from `now`, a row's period is the 4-hour period holding its ts if
 * ts falls on the current UTC day (or later), the day holding it if it
 * falls within the six days before, and otherwise the week holding it;
 * all are aligned to multiples of their length since the Unix epoch.  So
 * recent data is clustered finely and old data coarsely, and as time
 * passes a row's period grows: 4 hours, then a day, then a week.
 */
#ifndef TS_PERIOD_H
#define TS_PERIOD_H

#include <stdint.h>

#include "tslimits.h"

#define TS_PERIOD_4H (4 * TS_NS_PER_HOUR)
#define TS_PERIOD_DAY TS_NS_PER_DAY
#define TS_PERIOD_WEEK (7 * TS_NS_PER_DAY)
#define TS_PERIOD_RECENT_DAYS 7 /* days (today included) kept as day periods */

/* floor(a / b) for b > 0. */
static inline int64_t ts__floor_div(int64_t a, int64_t b)
{
	int64_t q = a / b;
	return (a % b != 0 && a < 0) ? q - 1 : q;
}

/* The start of the window of length b (b > 0) holding a: the greatest
 * multiple of b not above a.  The first window of the int64 range begins
 * below INT64_MIN; its start is taken as INT64_MIN (computing it
 * overflowed: a row at 1677-09-21T00:12:43Z made inserts and aggregates
 * run into undefined behaviour). */
static inline int64_t ts__floor_multiple(int64_t a, int64_t b)
{
	int64_t m;
	return __builtin_mul_overflow(ts__floor_div(a, b), b, &m) ? INT64_MIN : m;
}

/* The end of the period [start, start + len), saturated at the ends of
 * the int64 range: the last period of it ends after INT64_MAX, and the
 * fields of a damaged commit may be anything. */
static inline int64_t ts__period_end(int64_t start, int64_t len)
{
	int64_t end;
	return __builtin_add_overflow(start, len, &end) ? (len > 0 ? INT64_MAX : INT64_MIN) : end;
}

/* The period [*start, *start + *len) holding ts as of now. */
static inline void ts__period_of(int64_t ts, int64_t now, int64_t *start, int64_t *len)
{
	int64_t day_now = ts__floor_div(now, TS_PERIOD_DAY);
	int64_t day_ts = ts__floor_div(ts, TS_PERIOD_DAY);
	if (day_ts >= day_now)
		*len = TS_PERIOD_4H;
	else if (day_ts > day_now - TS_PERIOD_RECENT_DAYS)
		*len = TS_PERIOD_DAY;
	else
		*len = TS_PERIOD_WEEK;
	*start = ts__floor_multiple(ts, *len);
}

#endif
