/*
 * retry.c -- backoff and once-per-cause logging of failing background
 * work (retry.h).  A ts__retry is guarded by whoever owns it (the table's
 * mutex for a table's work).  Pure: it knows nothing of tables or
 * databases (the handles hold a ts__retry for each kind of work, and
 * backoff.c applies it to a table's work), so that handle.h can include
 * retry.h.
 */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "retry.h"

int64_t ts__retry_delay(int n)
{
	int64_t d = TS_RETRY_MIN;
	for (int i = 1; i < n && d < TS_RETRY_MAX; i++)
		d *= 2;
	return d < TS_RETRY_MAX ? d : TS_RETRY_MAX;
}

/* The length of the word at s (a run of letters and digits) and whether
 * it holds a digit: a number, a tablet id in hex, an LSN. */
static size_t word(const char *s, int *numeric)
{
	size_t n = 0;
	*numeric = 0;
	while (isalnum((unsigned char)s[n]))
		*numeric |= isdigit((unsigned char)s[n++]) != 0;
	return n;
}

/* Whether messages a and b say the same thing but for their numbers
 * (tablet ids, sizes and offsets change from one try to the next). */
static int same_cause(const char *a, const char *b)
{
	while (*a && *b) {
		int na, nb;
		size_t la = word(a, &na), lb = word(b, &nb);
		if (la && lb && na && nb) {
			a += la;
			b += lb;
		} else if (la || lb) {
			if (la != lb || memcmp(a, b, la) != 0)
				return 0;
			a += la;
			b += lb;
		} else if (*a++ != *b++) {
			return 0;
		}
	}
	return *a == *b;
}

int ts__retry_failed(ts__retry *r, int rc, const char *msg, int64_t now)
{
	int fresh = r->last_rc != rc || !same_cause(r->cause, msg);
	r->failures++;
	r->total++;
	r->next_at = now + ts__retry_delay(r->failures);
	r->last_rc = rc;
	snprintf(r->cause, sizeof r->cause, "%s", msg);
	if (fresh)
		r->logged++;
	return fresh;
}

void ts__retry_succeeded(ts__retry *r)
{
	r->failures = 0;
	r->next_at = 0;
	r->last_rc = 0;
	r->cause[0] = '\0';
}
