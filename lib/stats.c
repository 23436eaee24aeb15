/*
 * stats.c -- a table's counters as name/value pairs, the one shape that
 * the daemon (JSON), the mount (the stats file) and the admin command all
 * print.  Counters are added here as the engines that move them land.
 */
#include "db.h"
#include "error.h"

static void put(ts_stat *out, int room, int *n, const char *name, int64_t v)
{
	if (*n < room) {
		out[*n].name = name;
		out[*n].value = v;
	}
	(*n)++;
}

int ts_table_stats(ts_table *t, ts_stat *out, int room, int *n)
{
	int count = 0, rc = ts__table_lock(t);
	*n = 0;
	if (rc < 0)
		return rc;
	const ts__descriptor *d = t->desc;
	uint64_t rows = 0, bytes = 0;
	for (int i = 0; i < d->ntablets; i++) {
		rows += d->tablets[i].rows;
		bytes += d->tablets[i].bytes;
	}
	put(out, room, &count, "schema_version", (int64_t)ts__desc_schema(d)->version);
	put(out, room, &count, "columns", ts__desc_schema(d)->ncols);
	put(out, room, &count, "ttl_ns", d->ttl);
	put(out, room, &count, "descriptor_generation", (int64_t)d->generation);
	put(out, room, &count, "tablets", d->ntablets);
	put(out, room, &count, "tablet_rows", (int64_t)rows);
	put(out, room, &count, "tablet_bytes", (int64_t)bytes);
	ts__table_unlock(t);
	*n = count < room ? count : room;
	return 0;
}
