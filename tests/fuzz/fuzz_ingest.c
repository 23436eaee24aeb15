/*
 * fuzz_ingest.c -- libFuzzer target for the line protocol mapping
 * (daemon/ingest.c) on a real database: the input's first byte picks the
 * precision, the rest is a request body given to tsd_ingest_lines.
 * Oracle: no crash, leak or undefined behaviour; the call never fails as
 * a whole (no storage failure on a healthy database); it accounts for
 * every line -- the points it parsed are those lp_next gives, its syntax
 * refusals the lines lp_next refuses, and each point is stored, ignored
 * (a duplicate key) or refused -- and the tables hold exactly `stored`
 * more rows afterwards.
 * The database (frozen clock, 1 MiB log segments) lives across inputs, so
 * later inputs meet the tables and columns earlier ones made; it starts
 * afresh every 200 inputs.  Seed corpus: tests/fuzz/ingest/.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_db.h"
#include "ingest.h"

static ts_db *db;
static struct tsd_ingest *in;
static char *dir;
static int runs;
static struct lp_reader reader;

static void quiet(void *arg, const char *msg)
{
	(void)arg;
	(void)msg;
}

static void reopen(void)
{
	ts_options o;
	char cmd[512];
	struct tsd_ingest_options io = {.max_future = 86400 * FUZZ_SEC, .log = quiet};
	if (db) {
		tsd_ingest_close(in);
		if (ts_close(db) < 0)
			abort();
		snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
		if (system(cmd) != 0)
			abort();
	}
	dir = fuzz_tmpdir("ingest");
	fuzz_options(&o, TS_OPEN_CREATE);
	o.log_segment_size = 1 << 20;
	if (ts_open(dir, &o, &db) < 0 || tsd_ingest_open(db, &io, &in) < 0)
		abort();
}

static void cleanup(void)
{
	char cmd[512];
	tsd_ingest_close(in);
	ts_close(db);
	snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", dir);
}

/* Rows in every table of the database. */
static uint64_t all_rows(void)
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

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);
int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
	struct tsd_ingest_result res;
	struct lp_point pt;
	uint64_t good = 0, bad = 0, before;
	int rc;
	if (size == 0)
		return 0;
	if (!db || ++runs % 200 == 0) {
		if (!db)
			atexit(cleanup);
		reopen();
	}
	enum lp_precision prec = (enum lp_precision)(data[0] % 6);
	const char *body = (const char *)data + 1;
	lp_reader_init(&reader, body, size - 1, prec);
	while ((rc = lp_next(&reader, &pt)) != 0)
		rc > 0 ? good++ : bad++;
	before = all_rows();
	rc = tsd_ingest_lines(in, body, size - 1, prec, &res);
	if (rc != 0 && rc != TS_EINVAL) {
		fprintf(stderr, "storage failure %s: %s\n", ts_errname(rc), res.error);
		abort();
	}
	if (res.points != good || res.by_reason[TSD_REJECT_SYNTAX] != bad ||
	    res.stored + res.ignored + res.rejected - bad != res.points ||
	    (rc == 0) != (res.rejected == 0) ||
	    (res.rejected && (!res.first_bad_line || !res.error[0]))) {
		fprintf(stderr, "accounts differ: good %llu bad %llu; points %llu stored %llu rejected "
		        "%llu syntax %llu: %s\n", (unsigned long long)good, (unsigned long long)bad,
		        (unsigned long long)res.points, (unsigned long long)res.stored,
		        (unsigned long long)res.rejected,
		        (unsigned long long)res.by_reason[TSD_REJECT_SYNTAX], res.error);
		abort();
	}
	if (all_rows() != before + res.stored) {
		fprintf(stderr, "stored %llu rows but the tables grew by %llu\n",
		        (unsigned long long)res.stored, (unsigned long long)(all_rows() - before));
		abort();
	}
	return 0;
}
