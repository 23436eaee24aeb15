/*
 * backoff.c -- a table's failing background work (flush, merge, expiry):
 * whether it may be tried now, and what its end means -- a success resets
 * its backoff, a failure grows it and, when its cause is new, is reported
 * through the database's log function (retry.c holds the rule itself).
 *
 * Also the database's log function, ts__db_log, through which the
 * library says what the caller did not ask about: these failures, and a
 * table that opened without room for its log (table.c).
 */
#include <stdio.h>

#include "backoff.h"
#include "error.h"
#include "handle.h"
#include "retry.h"

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
