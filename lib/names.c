/*
 * names.c -- the names of types, aggregate functions, sync modes and
 * duplicate policies, and the version string: the small vocabulary
 * shared by the library, the daemon's protocol and the command line.
 */
#include <string.h>

#include "tsstore.h"
#include "error.h"
#include "names.h"

static const char *const type_names[] = {
	[TS_NONE] = "none", [TS_INT32] = "int32", [TS_INT64] = "int64",
	[TS_DOUBLE] = "double", [TS_TIMESTAMP] = "timestamp",
	[TS_STRING] = "string", [TS_BLOB] = "blob",
};

static const char *const aggfn_names[] = {
	[TS_AGG_COUNT] = "count", [TS_AGG_SUM] = "sum", [TS_AGG_MIN] = "min",
	[TS_AGG_MAX] = "max", [TS_AGG_MEAN] = "mean", [TS_AGG_FIRST] = "first",
	[TS_AGG_LAST] = "last",
};

static const char *const sync_names[] = {
	[TS_SYNC_NONE] = "none", [TS_SYNC_INTERVAL] = "interval",
	[TS_SYNC_COMMIT] = "commit",
};

static const char *const on_duplicate_names[] = {
	[TS_ON_DUPLICATE_REJECT] = "reject", [TS_ON_DUPLICATE_IGNORE] = "ignore",
	[TS_ON_DUPLICATE_REPLACE] = "replace",
};

#define COUNT(a) (int)(sizeof(a) / sizeof((a)[0]))

/* Index of name in names[lo..n), or -1. */
static int lookup(const char *const *names, int lo, int n, const char *name)
{
	for (int i = lo; name && i < n; i++)
		if (names[i] && strcmp(names[i], name) == 0)
			return i;
	return -1;
}

const char *ts_version(void)
{
	return TS_VERSION_STRING;
}

ts_value ts_string(const char *s)
{
	return ts_stringn(s, s ? strlen(s) : 0);
}

const char *ts_type_name(ts_type type)
{
	return type >= 0 && type < COUNT(type_names) ? type_names[type] : "?";
}

int ts_type_parse(const char *name, ts_type *out)
{
	if (!out)
		return ts__fail(TS_EINVAL, "ts_type_parse: out is NULL");
	int i = lookup(type_names, TS_INT32, COUNT(type_names), name);
	if (i < 0)
		return ts__fail(TS_EINVAL, "unknown type \"%.80s\" (want int32, int64, double, timestamp, string or blob)",
		                name ? name : "(null)");
	*out = (ts_type)i;
	return 0;
}

const char *ts_aggfn_name(ts_aggfn fn)
{
	return fn >= TS_AGG_COUNT && fn < COUNT(aggfn_names) ? aggfn_names[fn] : "?";
}

int ts_aggfn_parse(const char *name, ts_aggfn *out)
{
	if (!out)
		return ts__fail(TS_EINVAL, "ts_aggfn_parse: out is NULL");
	int i = lookup(aggfn_names, TS_AGG_COUNT, COUNT(aggfn_names), name);
	if (i < 0)
		return ts__fail(TS_EINVAL, "unknown aggregate \"%.80s\" (want count, sum, min, max, mean, first or last)",
		                name ? name : "(null)");
	*out = (ts_aggfn)i;
	return 0;
}

int ts_sync_mode_parse(const char *text, ts_sync_mode *out)
{
	if (!out)
		return ts__fail(TS_EINVAL, "ts_sync_mode_parse: out is NULL");
	int i = lookup(sync_names, 0, COUNT(sync_names), text);
	if (i < 0)
		return ts__fail(TS_EINVAL, "unknown sync mode \"%.80s\" (want none, interval or commit)",
		                text ? text : "(null)");
	*out = (ts_sync_mode)i;
	return 0;
}

const char *ts_on_duplicate_name(ts_on_duplicate policy)
{
	return (int)policy >= 0 && (int)policy < COUNT(on_duplicate_names)
	           ? on_duplicate_names[policy] : "?";
}

int ts_on_duplicate_parse(const char *text, ts_on_duplicate *out)
{
	if (!out)
		return ts__fail(TS_EINVAL, "ts_on_duplicate_parse: out is NULL");
	int i = lookup(on_duplicate_names, 0, COUNT(on_duplicate_names), text);
	if (i < 0)
		return ts__fail(TS_EINVAL, "unknown duplicate policy \"%.80s\" (want reject, ignore or replace)",
		                text ? text : "(null)");
	*out = (ts_on_duplicate)i;
	return 0;
}

/* Entries of the database directory whose names a table could take. */
static const struct {
	const char *name, *kind;
} reserved[] = {
	{"LOCK", "a file"}, /* db.c: the writer's lock */
	{"EPOCH", "a file"}, /* epoch.c: the lineage and epoch */
};

int ts__name_reserved(const char *name, const char **kind)
{
	for (int i = 0; name && i < COUNT(reserved); i++)
		if (strcmp(reserved[i].name, name) == 0) {
			*kind = reserved[i].kind;
			return 1;
		}
	return 0;
}
