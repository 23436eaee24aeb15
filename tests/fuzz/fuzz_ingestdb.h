/*
 * fuzz_ingestdb.h -- the live database the ingest targets (fuzz_ingest,
 * fuzz_promingest) write into: opened with fuzz_db.h's frozen clock and
 * 1 MiB log segments, an ingest state on it with a quiet log, started
 * afresh every 200 inputs so that later inputs meet the tables earlier
 * ones made without the database growing for ever; and the count of its
 * rows, the targets' oracle.
 *
 * Shared by programs of tests/fuzz/ only (static functions, one copy
 * each).
 */
#ifndef TS_FUZZ_INGESTDB_H
#define TS_FUZZ_INGESTDB_H

#include "fuzz_db.h"
#include "ingest.h"

static ts_db *db;
static struct tsd_ingest *in;
static char *dir;
static int runs;

static void fuzz_ingest_quiet(void *arg, const char *msg)
{
	(void)arg;
	(void)msg;
}

/* Remove the database of the previous inputs. */
static void fuzz_ingest_cleanup(void)
{
	char cmd[512];
	tsd_ingest_close(in);
	if (ts_close(db) < 0)
		abort();
	snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", dir);
	db = NULL;
	in = NULL;
}

/* Before each input: the database, opened on the first input and again
 * every 200 (what is left is removed at exit).  name names its
 * temporary directory. */
static void fuzz_ingest_db(const char *name)
{
	ts_options o;
	struct tsd_ingest_options io = {.max_future = 86400 * FUZZ_SEC,
	                                .log = fuzz_ingest_quiet};
	if (db && ++runs % 200 != 0)
		return;
	if (db)
		fuzz_ingest_cleanup();
	else
		atexit(fuzz_ingest_cleanup);
	dir = fuzz_tmpdir(name);
	fuzz_options(&o, TS_OPEN_CREATE);
	o.log_segment_size = 1 << 20;
	if (ts_open(dir, &o, &db) < 0 || tsd_ingest_open(db, &io, &in) < 0)
		abort();
}

/* Rows in every table of the database. */
static uint64_t fuzz_ingest_rows(void)
{
	char **names;
	uint64_t rows = 0;
	if (ts_tables(db, &names, NULL) < 0)
		abort();
	for (char **n = names; *n; n++) {
		ts_table *t;
		ts_cursor *c;
		ts_query q;
		const ts_value *row;
		memset(&q, 0, sizeof q);
		if (ts_table_open(db, *n, &t) < 0 || ts_query_open(t, &q, &c) < 0)
			abort();
		while (ts_cursor_next(c, &row, NULL) == 0 && row)
			rows++;
		ts_cursor_close(c);
		ts_table_close(t);
	}
	ts_free_names(names);
	return rows;
}

#endif
