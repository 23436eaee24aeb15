/*
 * fuzz_db.h -- the table that fuzz_tablet and fuzz_log read their inputs
 * as, and that mkseeds writes their seeds with: table "t" of a database
 * opened with a frozen clock, no background flush or merge, sync none.
 *
 *   version 1: host string, ts timestamp, i int32, l int64, d double,
 *              b blob; key (host, ts)
 *   version 2: + x int64 default 7
 *   version 3: i widened to int64
 *
 * Shared by programs of tests/fuzz/ only (static functions, one copy
 * each).
 */
#ifndef TS_FUZZ_DB_H
#define TS_FUZZ_DB_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tsstore.h"

#define FUZZ_TABLE "t"
#define FUZZ_SEC INT64_C(1000000000)
#define FUZZ_HOUR (3600 * FUZZ_SEC)
/* The frozen clock: 2026-11-18T01:46:40Z. */
#define FUZZ_NOW (INT64_C(1795000000) * FUZZ_SEC)

static int64_t fuzz_clock(void *arg)
{
	(void)arg;
	return FUZZ_NOW;
}

/* Options: flags plus TS_OPEN_NOMERGE; nothing is ever due for a flush in
 * the background (so what runs is what the target calls). */
static void fuzz_options(ts_options *o, unsigned flags)
{
	ts_options_init(o);
	o->flags = flags | TS_OPEN_NOMERGE;
	o->sync = TS_SYNC_NONE;
	o->clock = fuzz_clock;
	o->flush_size = INT64_MAX / 2;
	o->flush_age = INT64_MAX / 2;
	o->block_cache_size = 1 << 20;
}

/* Create table "t" at version 1 in db.  Returns 0 or an error. */
static int fuzz_create_v1(ts_db *db)
{
	static const ts_column cols[] = {
		{"host", TS_STRING, {TS_NONE, {0}}}, {"ts", TS_TIMESTAMP, {TS_NONE, {0}}},
		{"i", TS_INT32, {TS_NONE, {0}}},     {"l", TS_INT64, {TS_NONE, {0}}},
		{"d", TS_DOUBLE, {TS_NONE, {0}}},    {"b", TS_BLOB, {TS_NONE, {0}}},
	};
	static const char *const key[] = {"host", "ts"};
	return ts_create_keyed(db, FUZZ_TABLE, cols, 6, key, 2, 0);
}

/* Take table t from version v to v + 1 (v is 1 or 2). */
static int fuzz_alter(ts_table *t, int v)
{
	if (v == 1) {
		ts_column x = {"x", TS_INT64, {TS_INT64, {7}}};
		return ts_alter_add(t, &x);
	}
	return ts_alter_widen(t, "i");
}

/* Create table "t" with all three versions in db. */
static int fuzz_create_all(ts_db *db)
{
	ts_table *t = NULL;
	int rc = fuzz_create_v1(db);
	if (rc == 0)
		rc = ts_table_open(db, FUZZ_TABLE, &t);
	if (rc == 0)
		rc = fuzz_alter(t, 1);
	if (rc == 0)
		rc = fuzz_alter(t, 2);
	ts_table_close(t);
	return rc;
}

/* A directory for the fuzzer's files: under /dev/shm when there is one
 * (the targets sync files on every input), else /tmp.  Aborts on
 * failure; returns a static buffer. */
static char *fuzz_tmpdir(const char *name)
{
	static char dir[256];
	const char *base = getenv("TSSTORE_FUZZ_TMP");
	if (!base)
		base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
	snprintf(dir, sizeof dir, "%s/tsstore-fuzz-%s-XXXXXX", base, name);
	if (!mkdtemp(dir))
		abort();
	return dir;
}

#endif
