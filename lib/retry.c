/*
 * retry.c -- backoff and once-per-cause logging of failing background
 * work (retry.h).  A ts__retry is guarded by whoever owns it (the table's
 * mutex for a table's work).
 */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "db.h"
#include "error.h"
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

/* ---- a table's background work ---- */

void ts__db_log(ts_db *db, const char *line)
{
	if (db->opts.log)
		db->opts.log(db->opts.log_arg, line);
	else
		fprintf(stderr, "libtsstore: %s\n", line);
}

void ts__db_report(ts_db *db, const char *table, const char *what, const char *msg)
{
	char line[TS_ERRMSG_MAX + 128];
	snprintf(line, sizeof line, "table \"%s\": %s failed, retrying with backoff: %s", table,
	         what, msg);
	ts__db_log(db, line);
}

int ts__table_retry_done(ts_table *t, ts__retry *r, const char *what, int rc)
{
	char msg[TS_ERRMSG_MAX];
	int fresh = 0;
	if (rc >= 0 || rc == TS_ECLOSED) { /* closed: dropped or closing, nothing failed */
		pthread_mutex_lock(&t->mu);
		if (rc >= 0)
			ts__retry_succeeded(r);
		pthread_mutex_unlock(&t->mu);
		return rc;
	}
	snprintf(msg, sizeof msg, "%s", ts_errmsg(NULL));
	pthread_mutex_lock(&t->mu);
	fresh = ts__retry_failed(r, rc, msg, t->db->maint.clock());
	pthread_mutex_unlock(&t->mu);
	if (fresh)
		ts__db_report(t->db, t->name, what, msg);
	return rc;
}

int ts__table_retry_due(ts_table *t, const ts__retry *r)
{
	pthread_mutex_lock(&t->mu);
	int due = ts__retry_due(r, t->db->maint.clock());
	pthread_mutex_unlock(&t->mu);
	return due;
}
