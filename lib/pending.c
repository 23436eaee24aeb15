/*
 * pending.c -- the entry points whose engines have not landed yet.
 *
 * Each returns TS_ENOTSUP and says which part of the design will provide
 * it, so that a caller never mistakes a missing feature for success.  As
 * the in-memory tablets (issue 3), on-disk tablets (issue 4) and the query
 * engine (issue 5) land, these move to their own modules.
 */
#include "db.h"
#include "error.h"

static int not_yet(const char *what, const char *part)
{
	return ts__fail(TS_ENOTSUP, "%s is not implemented yet (it arrives with %s)", what, part);
}

int ts_query_open(ts_table *table, const ts_query *q, ts_cursor **out)
{
	(void)table; (void)q;
	*out = NULL;
	return not_yet("ts_query_open", "the query engine");
}

int ts_latest_open(ts_table *table, const ts_value *prefix, int nprefix,
                   ts_cursor **out)
{
	(void)table; (void)prefix; (void)nprefix;
	*out = NULL;
	return not_yet("ts_latest_open", "the query engine");
}

int ts_aggregate_open(ts_table *table, const ts_aggregate *req, ts_cursor **out)
{
	(void)table; (void)req;
	*out = NULL;
	return not_yet("ts_aggregate_open", "the query engine");
}

int ts_cursor_next(ts_cursor *cur, const ts_value **row, int *n)
{
	(void)cur;
	*row = NULL;
	if (n)
		*n = 0;
	return not_yet("ts_cursor_next", "the query engine");
}

int ts_cursor_more(const ts_cursor *cur)
{
	(void)cur;
	return 0;
}

int ts_cursor_resume(const ts_cursor *cur, const ts_value **key, int *nkey)
{
	(void)cur;
	*key = NULL;
	*nkey = 0;
	return not_yet("ts_cursor_resume", "the query engine");
}

void ts_cursor_close(ts_cursor *cur)
{
	(void)cur;
}

