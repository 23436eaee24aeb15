/*
 * test_db.c -- databases and tables through the public API only
 * (include/tsstore.h): opening and creating directories, the write lock
 * within a process and across processes, read-only handles, creating,
 * altering and dropping tables with their exact errors, the clean-up of
 * interrupted creates and drops, a failing sync of a directory after a
 * rename (through an fsync that this file puts in front of libc's), the
 * injectable clock, and the error vocabulary.
 *
 * Every test runs in its own mkdtemp directory (the cmocka state), removed
 * by the teardown.
 */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "support.h"
#include "tsstore.h"

#define NONE {TS_NONE, {0}}
#define T0 INT64_C(1795255200000000000) /* 2026-11-21T10:00:00Z */

/* ---- fixtures and helpers ---- */

static int setup_dir(void **state)
{
	unsetenv("TSSTORE_NOW");
	*state = ts_test_tmpdir();
	return 0;
}

static int teardown_dir(void **state)
{
	char *dir = *state;
	struct stat st;
	unsetenv("TSSTORE_NOW");
	ts_test_rmdir(strdup(dir));
	assert_int_equal(stat(dir, &st), -1);
	free(dir);
	return 0;
}

static int exists(const char *dir, const char *name)
{
	char *p = ts_test_path(dir, name);
	struct stat st;
	int r = stat(p, &st) == 0;
	free(p);
	return r;
}

static void assert_msg_has(const char *part)
{
	if (!strstr(ts_errmsg(NULL), part))
		fail_msg("message \"%s\" lacks \"%s\"", ts_errmsg(NULL), part);
}

static ts_db *open_db(const char *path, unsigned flags)
{
	ts_options o;
	ts_db *db = NULL;
	ts_options_init(&o);
	o.flags = flags;
	int rc = ts_open(path, &o, &db);
	if (rc < 0)
		fail_msg("ts_open %s: %s: %s", path, ts_errname(rc), ts_errmsg(NULL));
	assert_non_null(db);
	return db;
}

static int try_open(const char *path, unsigned flags, ts_db **db)
{
	ts_options o;
	ts_options_init(&o);
	o.flags = flags;
	*db = (ts_db *)db; /* must be reset */
	return ts_open(path, &o, db);
}

/* Table "cpu": host string, ts, n int32 = 7, user double; key (host, ts). */
static int create_cpu(ts_db *db, const char *name)
{
	ts_column cols[] = {{"host", TS_STRING, NONE}, {"ts", TS_TIMESTAMP, NONE},
	                    {"n", TS_INT32, ts_int32(7)}, {"user", TS_DOUBLE, NONE}};
	int key[] = {0, 1};
	ts_schema s = {.ncolumns = 4, .columns = cols, .nkey = 2, .key = key, .ttl = 0};
	return ts_create(db, name, &s);
}

static ts_table *open_table(ts_db *db, const char *name)
{
	ts_table *t = NULL;
	int rc = ts_table_open(db, name, &t);
	if (rc < 0)
		fail_msg("ts_table_open %s: %s: %s", name, ts_errname(rc), ts_errmsg(NULL));
	return t;
}

static ts_schema *schema_of(ts_table *t)
{
	ts_schema *s = NULL;
	int rc = ts_table_schema(t, &s);
	if (rc < 0)
		fail_msg("ts_table_schema: %s: %s", ts_errname(rc), ts_errmsg(NULL));
	return s;
}

/* The table's names joined by commas, e.g. "a,b". */
static void assert_tables(ts_db *db, const char *want)
{
	char **names, got[4096] = "";
	int n = -1;
	assert_int_equal(ts_tables(db, &names, &n), 0);
	assert_non_null(names);
	for (int i = 0; i < n; i++) {
		assert_non_null(names[i]);
		if (i)
			strcat(got, ",");
		strcat(got, names[i]);
	}
	assert_null(names[n]);
	assert_string_equal(got, want);
	ts_free_names(names);
}

/* ---- opening ---- */

static void db_open_create_nested(void **state)
{
	const char *dir = *state;
	char *path = ts_test_path(dir, "a/b/c");
	ts_db *db = open_db(path, TS_OPEN_CREATE);
	struct stat st;
	assert_int_equal(stat(path, &st), 0);
	assert_true(S_ISDIR(st.st_mode));
	assert_true(exists(path, "LOCK"));
	assert_tables(db, "");
	assert_int_equal(ts_close(db), 0);
	/* opening an existing directory with CREATE is fine too */
	db = open_db(path, TS_OPEN_CREATE);
	assert_int_equal(ts_close(db), 0);
	free(path);
}

static void db_open_missing(void **state)
{
	const char *dir = *state;
	char *path = ts_test_path(dir, "missing");
	ts_db *db;
	assert_int_equal(try_open(path, 0, &db), TS_ENOENT);
	assert_null(db);
	assert_msg_has(path);
	assert_int_equal(try_open(path, TS_OPEN_READONLY, &db), TS_ENOENT);
	assert_null(db);
	/* a read-only open never creates anything */
	assert_int_equal(try_open(path, TS_OPEN_READONLY | TS_OPEN_CREATE, &db), TS_ENOENT);
	assert_null(db);
	assert_false(exists(dir, "missing"));
	assert_int_equal(ts_open("", NULL, &db), TS_EINVAL);
	assert_null(db);
	free(path);
}

static void db_open_regular_file(void **state)
{
	const char *dir = *state;
	char *path = ts_test_path(dir, "file");
	FILE *f = fopen(path, "w");
	ts_db *db;
	assert_non_null(f);
	fclose(f);
	assert_int_equal(try_open(path, 0, &db), TS_EINVAL);
	assert_null(db);
	assert_msg_has("not a directory");
	assert_int_equal(try_open(path, TS_OPEN_CREATE, &db), TS_EINVAL);
	assert_int_equal(try_open(path, TS_OPEN_READONLY, &db), TS_EINVAL);
	assert_null(db);
	free(path);
}

static void db_open_bad_options(void **state)
{
	const char *dir = *state;
	ts_options o;
	ts_db *db = (ts_db *)&db;
	ts_options_init(&o);
	assert_int_equal(o.sync, TS_SYNC_INTERVAL);
	assert_int_equal(o.sync_interval, INT64_C(1000000000));
	assert_int_equal(o.max_future, INT64_C(86400000000000));
	assert_int_equal(o.flush_size, INT64_C(16) << 20);
	assert_int_equal(o.merge_max_size, INT64_C(128) << 20);
	assert_true(o.block_cache_size >= INT64_C(64) << 20); /* sized from memory: test_bcache */
	o.flags = 0x100;
	assert_int_equal(ts_open(dir, &o, &db), TS_EINVAL);
	assert_null(db);
	assert_msg_has("unknown flags");
	ts_options_init(&o);
	o.sync = (ts_sync_mode)7;
	assert_int_equal(ts_open(dir, &o, &db), TS_EINVAL);
	ts_options_init(&o);
	o.sync_interval = 0;
	assert_int_equal(ts_open(dir, &o, &db), TS_EINVAL);
	ts_options_init(&o);
	o.block_cache_size = -1;
	assert_int_equal(ts_open(dir, &o, &db), TS_EINVAL);
	assert_msg_has("must be positive");
	assert_false(exists(dir, "LOCK")); /* refused before touching anything */
	assert_int_equal(ts_close(NULL), 0);
}

/* ---- the write lock ---- */

static void db_lock_conflict_same_process(void **state)
{
	const char *dir = *state;
	char pid[32];
	ts_db *db = open_db(dir, 0), *db2;
	snprintf(pid, sizeof pid, "(pid %ld)", (long)getpid());
	assert_int_equal(try_open(dir, 0, &db2), TS_ELOCKED);
	assert_null(db2);
	assert_msg_has("locked");
	assert_msg_has(pid);
	assert_msg_has(dir);
	/* still locked on a second try: the failed open released nothing */
	assert_int_equal(try_open(dir, TS_OPEN_CREATE, &db2), TS_ELOCKED);
	assert_int_equal(ts_close(db), 0);
	db = open_db(dir, 0);
	assert_int_equal(ts_close(db), 0);
}

/* The child tries to open for writing and reports through its exit code:
 * 0 = TS_ELOCKED naming the parent's pid, 1 = another result, 2 = the
 * message was wrong. */
static void db_lock_conflict_child(void **state)
{
	const char *dir = *state;
	ts_db *db = open_db(dir, 0);
	long parent = (long)getpid();
	int status;
	fflush(NULL);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		char want[32];
		ts_db *db2;
		int rc = try_open(dir, 0, &db2);
		snprintf(want, sizeof want, "(pid %ld)", parent);
		if (rc != TS_ELOCKED || db2)
			_exit(1);
		_exit(strstr(ts_errmsg(NULL), "locked") && strstr(ts_errmsg(NULL), want) ? 0 : 2);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	assert_int_equal(ts_close(db), 0);
}

/* A writer in a child process: the parent sees its pid, then takes over
 * once the child has closed and exited. */
static void db_lock_held_by_child(void **state)
{
	const char *dir = *state;
	int ready[2], go[2], status;
	char c, want[32];
	ts_db *db;
	assert_int_equal(pipe(ready), 0);
	assert_int_equal(pipe(go), 0);
	fflush(NULL);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		ts_db *cdb;
		alarm(30); /* never outlive a parent that failed */
		close(ready[0]);
		close(go[1]);
		int rc = try_open(dir, 0, &cdb);
		c = rc == 0 ? 'y' : 'n';
		if (write(ready[1], &c, 1) != 1 || read(go[0], &c, 1) != 1)
			_exit(3);
		_exit(rc == 0 && ts_close(cdb) == 0 ? 0 : 1);
	}
	assert_int_equal(read(ready[0], &c, 1), 1);
	assert_int_equal(c, 'y');
	snprintf(want, sizeof want, "(pid %ld)", (long)pid);
	assert_int_equal(try_open(dir, 0, &db), TS_ELOCKED);
	assert_null(db);
	assert_msg_has(want);
	/* a reader is welcome beside the other process's writer */
	db = open_db(dir, TS_OPEN_READONLY);
	assert_int_equal(ts_close(db), 0);
	assert_int_equal(write(go[1], "x", 1), 1);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	db = open_db(dir, 0);
	assert_int_equal(ts_close(db), 0);
	close(ready[0]);
	close(ready[1]);
	close(go[0]);
	close(go[1]);
}

static void db_readonly_beside_writer(void **state)
{
	const char *dir = *state;
	ts_db *w = open_db(dir, 0);
	assert_int_equal(create_cpu(w, "cpu"), 0);
	ts_db *r1 = open_db(dir, TS_OPEN_READONLY);
	ts_db *r2 = open_db(dir, TS_OPEN_READONLY);
	assert_tables(r1, "cpu");
	ts_table *t = open_table(r2, "cpu");
	ts_schema *s = schema_of(t);
	assert_int_equal(s->ncolumns, 4);
	ts_schema_free(s);
	ts_table_close(t);
	assert_int_equal(ts_close(r2), 0);
	assert_int_equal(ts_close(w), 0);
	/* the reader outlives the writer; a new writer starts beside it */
	assert_tables(r1, "cpu");
	w = open_db(dir, 0);
	assert_int_equal(create_cpu(w, "cpu2"), 0);
	assert_tables(r1, "cpu,cpu2");
	assert_int_equal(ts_close(w), 0);
	assert_int_equal(ts_close(r1), 0);
}

/* ---- create ---- */

static void db_create_table(void **state)
{
	const char *dir = *state;
	ts_db *db = open_db(dir, 0);
	assert_int_equal(create_cpu(db, "cpu"), 0);
	assert_true(exists(dir, "cpu/DESCRIPTOR"));
	ts_table *t = open_table(db, "cpu");
	assert_string_equal(ts_table_name(t), "cpu");
	ts_schema *s = schema_of(t);
	assert_int_equal(s->version, 1);
	assert_int_equal(s->ncolumns, 4);
	assert_string_equal(s->columns[0].name, "host");
	assert_int_equal(s->columns[0].type, TS_STRING);
	assert_int_equal(s->columns[0].dflt.type, TS_STRING);
	assert_int_equal(s->columns[0].dflt.v.s.len, 0);
	assert_string_equal(s->columns[1].name, "ts");
	assert_int_equal(s->columns[1].type, TS_TIMESTAMP);
	assert_int_equal(s->columns[1].dflt.type, TS_NONE);
	assert_string_equal(s->columns[2].name, "n");
	assert_int_equal(s->columns[2].type, TS_INT32);
	assert_int_equal(s->columns[2].dflt.type, TS_INT32);
	assert_int_equal(s->columns[2].dflt.v.i, 7);
	assert_string_equal(s->columns[3].name, "user");
	assert_int_equal(s->columns[3].dflt.type, TS_DOUBLE);
	assert_true(s->columns[3].dflt.v.d == 0.0);
	assert_int_equal(s->nkey, 2);
	assert_int_equal(s->key[0], 0);
	assert_int_equal(s->key[1], 1);
	assert_int_equal(s->ttl, 0);
	ts_schema_free(s);
	/* a second handle shares the table */
	ts_table *t2 = open_table(db, "cpu");
	s = schema_of(t2);
	assert_int_equal(s->ncolumns, 4);
	ts_schema_free(s);
	ts_table_close(t2);
	ts_table_close(t);
	ts_table_close(NULL);
	/* no leftovers of the create */
	assert_int_equal(ts_close(db), 0);
	char **names;
	int n;
	db = open_db(dir, TS_OPEN_READONLY);
	assert_int_equal(ts_tables(db, &names, &n), 0);
	assert_int_equal(n, 1);
	ts_free_names(names);
	ts_free_names(NULL);
	assert_int_equal(ts_close(db), 0);
}

static void db_tables_sorted(void **state)
{
	const char *dir = *state;
	ts_db *db = open_db(dir, 0);
	assert_tables(db, "");
	const char *names[] = {"zeta", "alpha", "Mid", "_u", "alpha2", "b"};
	for (int i = 0; i < 6; i++)
		assert_int_equal(create_cpu(db, names[i]), 0);
	/* things that are not tables are not listed */
	char *p = ts_test_path(dir, "notatable");
	assert_int_equal(mkdir(p, 0755), 0);
	free(p);
	p = ts_test_path(dir, "bad-name");
	assert_int_equal(mkdir(p, 0755), 0);
	free(p);
	assert_tables(db, "Mid,_u,alpha,alpha2,b,zeta");
	int n = -1;
	char **list;
	assert_int_equal(ts_tables(db, &list, &n), 0);
	assert_int_equal(n, 6);
	ts_free_names(list);
	assert_int_equal(ts_tables(db, &list, NULL), 0);
	assert_string_equal(list[5], "zeta");
	ts_free_names(list);
	assert_int_equal(ts_close(db), 0);
}

/* LOCK is the writer's lock file, not a table: "create LOCK" used to say
 * "already exists" (issue 24, item 7); EPOCH is a file too. */
static void db_create_reserved_name(void **state)
{
	const char *dir = *state;
	ts_db *db = open_db(dir, 0);
	assert_int_equal(create_cpu(db, "LOCK"), TS_EINVAL);
	assert_msg_has("LOCK is reserved: the database keeps a file of that name");
	ts_table *t = (ts_table *)&t;
	assert_int_equal(ts_table_open(db, "LOCK", &t), TS_ENOENT);
	assert_int_equal(ts_drop(db, "LOCK"), TS_ENOENT);
	char **list;
	int n;
	assert_int_equal(ts_tables(db, &list, &n), 0);
	assert_int_equal(n, 0);
	ts_free_names(list);
	assert_int_equal(create_cpu(db, "LOCK_"), 0); /* only the exact name */
	/* EPOCH: the lineage and epoch (docs/epoch-format.md) */
	assert_int_equal(create_cpu(db, "EPOCH"), TS_EINVAL);
	assert_msg_has("EPOCH is reserved: the database keeps a file of that name");
	assert_int_equal(ts_close(db), 0);
}

/* The limits a flush or merge would meet are met where the schema
 * changes: a descriptor (every schema version repeats all defaults) past
 * its 64 MiB limit is refused by the create or alter that would make it,
 * naming the limit, and the table stays usable (issue 24, item 2). */
static void db_alter_refused_at_the_descriptor_limit(void **state)
{
	const char *dir = *state;
	enum { NCOL = 600, DFLT = 1 << 16, FITS = 450 };
	ts_db *db = open_db(dir, 0);
	ts_column *cols = calloc(NCOL + 1, sizeof *cols);
	char (*names)[16] = calloc(NCOL + 1, sizeof *names);
	char *big = malloc(DFLT);
	assert_true(cols && names && big);
	memset(big, 'x', DFLT);
	for (int c = 0; c < NCOL; c++) {
		snprintf(names[c], sizeof names[c], "s%d", c);
		cols[c] = (ts_column){names[c], TS_STRING, ts_stringn(big, DFLT)};
	}
	const char *key[] = {"ts"};
	/* 600 defaults of 64 KiB: a row of them alone passes TS_ROW_MAX */
	assert_int_equal(ts_create_keyed(db, "wide", cols, NCOL, key, 1, 0), TS_ETOOBIG);
	assert_msg_has("a row of the column defaults alone takes 39324");
	assert_msg_has("more than the limit of 33554432 bytes for a row");
	/* 450 fit (a 29 MB descriptor); one alter doubles it, a second would
	 * pass the 64 MiB a descriptor may have */
	assert_int_equal(ts_create_keyed(db, "wide", cols, FITS, key, 1, 0), 0);
	ts_table *t = open_table(db, "wide");
	ts_column more = {"extra", TS_INT64, NONE}, more2 = {"extra2", TS_INT64, NONE};
	assert_int_equal(ts_alter_add(t, &more), 0);
	assert_int_equal(ts_alter_add(t, &more2), TS_ETOOBIG);
	assert_msg_has("exceeds the limit of 67108864 bytes");
	ts_value row[FITS + 2];
	for (int c = 0; c < FITS + 2; c++)
		row[c] = ts_none();
	row[0] = ts_timestamp(1); /* the implicit ts comes first: no other key column */
	assert_int_equal(ts_insert(t, row, 1), 0);
	ts_table_close(t);
	assert_int_equal(ts_close(db), 0);
	db = open_db(dir, 0);
	t = open_table(db, "wide");
	ts_schema *sc = schema_of(t);
	assert_int_equal(sc->ncolumns, FITS + 2);
	assert_int_equal(sc->version, 2);
	ts_schema_free(sc);
	ts_table_close(t);
	assert_int_equal(ts_close(db), 0);
	free(big);
	free(names);
	free(cols);
}

static void db_create_duplicate(void **state)
{
	const char *dir = *state;
	ts_db *db = open_db(dir, 0);
	assert_int_equal(create_cpu(db, "cpu"), 0);
	assert_int_equal(create_cpu(db, "cpu"), TS_EEXIST);
	assert_msg_has("table \"cpu\" already exists");
	/* the failed create left the first one intact */
	ts_table *t = open_table(db, "cpu");
	ts_schema *s = schema_of(t);
	assert_int_equal(s->ncolumns, 4);
	ts_schema_free(s);
	ts_table_close(t);
	assert_tables(db, "cpu");
	assert_int_equal(ts_close(db), 0);
}

static void db_create_bad_names(void **state)
{
	const char *dir = *state;
	ts_db *db = open_db(dir, 0);
	char n64[65], n65[66];
	memset(n64, 'x', 64);
	n64[64] = '\0';
	memset(n65, 'y', 65);
	n65[65] = '\0';
	const char *bad[] = {"", "1abc", "a-b", n65, "a b", "a/b", "..", ".tmp-x", "é"};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		ts_table *t = (ts_table *)&t;
		if (create_cpu(db, bad[i]) != TS_EINVAL)
			fail_msg("create \"%s\": want TS_EINVAL", bad[i]);
		assert_msg_has("invalid table name");
		assert_int_equal(ts_table_open(db, bad[i], &t), TS_EINVAL);
		assert_null(t);
		assert_int_equal(ts_drop(db, bad[i]), TS_EINVAL);
	}
	assert_int_equal(create_cpu(db, NULL), TS_EINVAL);
	assert_tables(db, "");
	assert_int_equal(create_cpu(db, n64), 0);
	assert_int_equal(create_cpu(db, "_"), 0);
	assert_int_equal(create_cpu(db, "A9_z"), 0);
	char want[80];
	snprintf(want, sizeof want, "A9_z,_,%s", n64);
	assert_tables(db, want);
	ts_table *t = open_table(db, n64);
	assert_string_equal(ts_table_name(t), n64);
	ts_table_close(t);
	assert_int_equal(ts_close(db), 0);
}

/* Create with columns[0..n) and key; expect code and a message part. */
static void expect_create(ts_db *db, const ts_column *cols, int n,
                          const char *const *key, int nkey, int code, const char *part)
{
	int rc = ts_create_keyed(db, "t", cols, n, key, nkey, 0);
	if (rc != code)
		fail_msg("create: %s (%s), want %s", ts_errname(rc), ts_errmsg(NULL), ts_errname(code));
	if (part) {
		assert_msg_has("table \"t\": ");
		assert_msg_has(part);
	}
}

static void db_create_schema_errors(void **state)
{
	const char *dir = *state;
	ts_db *db = open_db(dir, 0);
	const char *k_host_ts[] = {"host", "ts"};
	ts_column c1[] = {{"host", TS_STRING, NONE}, {"v", TS_INT64, NONE}};
	const char *k_nope[] = {"nope", "ts"};
	expect_create(db, c1, 2, k_nope, 2, TS_ESCHEMA, "key column \"nope\": no such column");
	const char *k_v_last[] = {"ts", "v"};
	expect_create(db, c1, 2, k_v_last, 2, TS_ESCHEMA,
	              "the last key column must be ts, not \"v\"");
	const char *k_host[] = {"host"};
	expect_create(db, c1, 2, k_host, 1, TS_ESCHEMA, "the last key column must be ts");
	expect_create(db, c1, 2, k_host_ts, 0, TS_ESCHEMA, "key: 0 columns");
	ts_column c2[] = {{"host", TS_STRING, NONE}, {"ts", TS_INT64, NONE}};
	expect_create(db, c2, 2, k_host_ts, 2, TS_ESCHEMA,
	              "column \"ts\": must have type timestamp, not int64");
	ts_column c3[] = {{"host", TS_STRING, NONE}, {"v", TS_INT64, NONE}, {"v", TS_DOUBLE, NONE}};
	expect_create(db, c3, 3, k_host_ts, 2, TS_ESCHEMA, "column \"v\": duplicate column name");
	ts_column c4[] = {{"Host", TS_STRING, NONE}, {"host", TS_STRING, NONE}};
	expect_create(db, c4, 2, k_host_ts, 2, TS_ESCHEMA, "column \"host\": duplicate column name");
	ts_column c5[] = {{"host", TS_STRING, NONE}, {"bad-name", TS_INT64, NONE}};
	expect_create(db, c5, 2, k_host_ts, 2, TS_ESCHEMA, "invalid name \"bad-name\"");
	ts_column c6[] = {{"host", TS_STRING, NONE}, {"n", TS_INT32, ts_int64(INT64_C(1) << 31)}};
	expect_create(db, c6, 2, k_host_ts, 2, TS_ESCHEMA, "2147483648 does not fit in int32");
	ts_column c7[] = {{"host", TS_STRING, NONE}, {"s", TS_STRING, ts_stringn("\xc3\x28", 2)}};
	expect_create(db, c7, 2, k_host_ts, 2, TS_ESCHEMA, "column \"s\": string is not valid UTF-8");
	ts_column c8[] = {{"host", TS_STRING, NONE}, {"s", TS_STRING, ts_int64(1)}};
	expect_create(db, c8, 2, k_host_ts, 2, TS_ESCHEMA, "column \"s\": expected string, got int64");
	ts_column c9[] = {{"host", TS_STRING, NONE}, {"ts", TS_TIMESTAMP, ts_timestamp(1)}};
	expect_create(db, c9, 2, k_host_ts, 2, TS_ESCHEMA, "column \"ts\": cannot have a default");
	ts_column c10[] = {{"host", TS_STRING, NONE}, {"x", (ts_type)9, NONE}};
	expect_create(db, c10, 2, k_host_ts, 2, TS_ESCHEMA, "column \"x\": unknown type 9");
	const char *k_twice[] = {"host", "host", "ts"};
	expect_create(db, c1, 2, k_twice, 3, TS_ESCHEMA, "key column \"host\": listed twice");
	/* ts_create's key indexes are checked too */
	int bad_key[] = {0, 5};
	ts_schema s = {.ncolumns = 2, .columns = c2, .nkey = 2, .key = bad_key};
	assert_int_equal(ts_create(db, "t", &s), TS_ESCHEMA);
	assert_msg_has("index 5 out of range");
	/* an int32 default given as int64 in range is accepted */
	ts_column ok[] = {{"host", TS_STRING, NONE}, {"n", TS_INT32, ts_int64(-2147483648LL)}};
	assert_tables(db, "");
	expect_create(db, ok, 2, k_host_ts, 2, 0, NULL);
	ts_table *t = open_table(db, "t");
	ts_schema *got = schema_of(t);
	assert_int_equal(got->columns[2].dflt.type, TS_INT32);
	assert_int_equal(got->columns[2].dflt.v.i, INT32_MIN);
	ts_schema_free(got);
	ts_table_close(t);
	assert_tables(db, "t");
	assert_int_equal(ts_close(db), 0);
}

static void db_create_implicit_ts(void **state)
{
	const char *dir = *state;
	ts_db *db = open_db(dir, 0);
	ts_column cols[] = {{"host", TS_STRING, NONE}, {"value", TS_DOUBLE, ts_double(2.5)}};
	const char *key[] = {"host", "ts"};
	assert_int_equal(ts_create_keyed(db, "m", cols, 2, key, 2, 60), 0);
	ts_table *t = open_table(db, "m");
	ts_schema *s = schema_of(t);
	assert_int_equal(s->ncolumns, 3);
	assert_string_equal(s->columns[0].name, "host");
	assert_string_equal(s->columns[1].name, "ts");
	assert_int_equal(s->columns[1].type, TS_TIMESTAMP);
	assert_string_equal(s->columns[2].name, "value");
	assert_true(s->columns[2].dflt.v.d == 2.5);
	assert_int_equal(s->nkey, 2);
	assert_int_equal(s->key[0], 0);
	assert_int_equal(s->key[1], 1);
	assert_int_equal(s->ttl, 60);
	ts_schema_free(s);
	ts_table_close(t);
	/* two key columns apart: ts goes after the later one */
	ts_column c2[] = {{"a", TS_INT64, NONE}, {"v", TS_DOUBLE, NONE},
	                  {"b", TS_STRING, NONE}, {"w", TS_INT32, NONE}};
	const char *k2[] = {"b", "a", "ts"};
	assert_int_equal(ts_create_keyed(db, "m2", c2, 4, k2, 3, 0), 0);
	t = open_table(db, "m2");
	s = schema_of(t);
	assert_int_equal(s->ncolumns, 5);
	assert_string_equal(s->columns[2].name, "b");
	assert_string_equal(s->columns[3].name, "ts");
	assert_string_equal(s->columns[4].name, "w");
	assert_int_equal(s->nkey, 3);
	assert_int_equal(s->key[0], 2);
	assert_int_equal(s->key[1], 0);
	assert_int_equal(s->key[2], 3);
	ts_schema_free(s);
	ts_table_close(t);
	assert_int_equal(ts_close(db), 0);
}

/* ---- alter ---- */

/* The state after db_alter's changes, checked on any handle. */
static void assert_altered(ts_table *t)
{
	ts_schema *s = schema_of(t);
	assert_int_equal(s->version, 3);
	assert_int_equal(s->ncolumns, 5);
	assert_string_equal(s->columns[2].name, "n");
	assert_int_equal(s->columns[2].type, TS_INT64);
	assert_int_equal(s->columns[2].dflt.type, TS_INT64);
	assert_int_equal(s->columns[2].dflt.v.i, 7);
	assert_string_equal(s->columns[4].name, "region");
	assert_int_equal(s->columns[4].type, TS_STRING);
	assert_int_equal(s->columns[4].dflt.v.s.len, 2);
	assert_memory_equal(s->columns[4].dflt.v.s.ptr, "eu", 2);
	assert_int_equal(s->ttl, INT64_C(86400000000000));
	assert_int_equal(s->nkey, 2);
	ts_schema_free(s);
}

static void db_alter(void **state)
{
	const char *dir = *state;
	ts_db *db = open_db(dir, 0);
	assert_int_equal(create_cpu(db, "cpu"), 0);
	ts_table *t = open_table(db, "cpu");

	ts_column region = {"region", TS_STRING, ts_string("eu")};
	assert_int_equal(ts_alter_add(t, &region), 0);
	ts_schema *s = schema_of(t);
	assert_int_equal(s->version, 2);
	assert_int_equal(s->ncolumns, 5);
	assert_string_equal(s->columns[4].name, "region");
	assert_memory_equal(s->columns[4].dflt.v.s.ptr, "eu", 2);
	ts_schema_free(s);

	ts_column dup = {"region", TS_INT64, NONE}, dup2 = {"HOST", TS_INT64, NONE};
	assert_int_equal(ts_alter_add(t, &dup), TS_EEXIST);
	assert_msg_has("column \"region\": already exists");
	assert_int_equal(ts_alter_add(t, &dup2), TS_EEXIST);
	ts_column badname = {"9x", TS_INT64, NONE}, badtype = {"x", TS_NONE, NONE};
	assert_int_equal(ts_alter_add(t, &badname), TS_ESCHEMA);
	assert_int_equal(ts_alter_add(t, &badtype), TS_ESCHEMA);
	ts_column baddflt = {"x", TS_INT32, ts_string("no")};
	assert_int_equal(ts_alter_add(t, &baddflt), TS_ESCHEMA);
	assert_msg_has("table \"cpu\": ");

	assert_int_equal(ts_alter_widen(t, "n"), 0);
	s = schema_of(t);
	assert_int_equal(s->version, 3);
	assert_int_equal(s->columns[2].type, TS_INT64);
	assert_int_equal(s->columns[2].dflt.v.i, 7);
	ts_schema_free(s);
	assert_int_equal(ts_alter_widen(t, "n"), TS_ESCHEMA); /* int64 now */
	assert_msg_has("only int32 can be widened, it is int64");
	assert_int_equal(ts_alter_widen(t, "user"), TS_ESCHEMA);
	assert_msg_has("it is double");
	assert_int_equal(ts_alter_widen(t, "nope"), TS_ENOENT);
	assert_msg_has("column \"nope\": no such column");

	assert_int_equal(ts_alter_ttl(t, INT64_C(86400000000000)), 0);
	assert_int_equal(ts_alter_ttl(t, -1), TS_ERANGE);
	assert_msg_has("ttl must not be negative");
	/* failed changes changed nothing, and the TTL is not a schema version */
	assert_altered(t);
	ts_table_close(t);
	assert_int_equal(ts_close(db), 0);

	/* everything persists */
	db = open_db(dir, 0);
	t = open_table(db, "cpu");
	assert_altered(t);
	ts_table_close(t);
	assert_int_equal(ts_close(db), 0);
	db = open_db(dir, TS_OPEN_READONLY);
	t = open_table(db, "cpu");
	assert_altered(t);
	ts_table_close(t);
	assert_int_equal(ts_close(db), 0);
}

/* A read-only handle opened before the changes sees each of them. */
static void db_alter_seen_by_readonly_handle(void **state)
{
	const char *dir = *state;
	ts_db *w = open_db(dir, 0);
	assert_int_equal(create_cpu(w, "cpu"), 0);
	ts_db *r = open_db(dir, TS_OPEN_READONLY);
	ts_table *rt = open_table(r, "cpu"), *wt = open_table(w, "cpu");
	ts_schema *s = schema_of(rt);
	assert_int_equal(s->version, 1);
	ts_schema_free(s);

	ts_column region = {"region", TS_STRING, ts_string("eu")};
	assert_int_equal(ts_alter_add(wt, &region), 0);
	s = schema_of(rt);
	assert_int_equal(s->version, 2);
	assert_int_equal(s->ncolumns, 5);
	ts_schema_free(s);
	assert_int_equal(ts_alter_ttl(wt, 10), 0);
	s = schema_of(rt);
	assert_int_equal(s->ttl, 10);
	ts_schema_free(s);

	/* several changes between two looks: the reader lands on the last */
	for (int i = 0; i < 20; i++) {
		assert_int_equal(ts_alter_ttl(wt, 100 + i), 0);
		assert_int_equal(ts_alter_ttl(wt, 200 + i), 0);
		s = schema_of(rt);
		assert_int_equal(s->ttl, 200 + i);
		ts_schema_free(s);
	}
	assert_int_equal(ts_alter_widen(wt, "n"), 0);
	assert_int_equal(ts_alter_ttl(wt, INT64_C(86400000000000)), 0);
	assert_altered(rt);

	/* a read-only handle refuses changes */
	assert_int_equal(ts_alter_add(rt, &region), TS_EREADONLY);
	assert_int_equal(ts_alter_widen(rt, "n"), TS_EREADONLY);
	assert_int_equal(ts_alter_ttl(rt, 5), TS_EREADONLY);
	ts_table_close(wt);
	ts_table_close(rt);
	assert_int_equal(ts_close(r), 0);
	assert_int_equal(ts_close(w), 0);
}

/* A read-only handle of a table the writer dropped and created again
 * (same name, same schema, the new directory perhaps on the old inode):
 * the old handle reports TS_ECLOSED, and ts_table_open in the same
 * read-only database opens the new table, whose rows it reads. */
static void db_recreated_seen_by_readonly_handle(void **state)
{
	const char *dir = *state;
	ts_db *w = open_db(dir, 0), *r;
	ts_value one[] = {ts_string("a"), ts_timestamp(1000), ts_int32(1), ts_double(1)};
	ts_value two[] = {ts_string("a"), ts_timestamp(1000), ts_int32(7), ts_double(7)},
	         three[] = {ts_string("b"), ts_timestamp(2000), ts_int32(7), ts_double(7)};
	ts_table *wt, *rt, *rt2;
	ts_stat st[TS_STATS_MAX];
	int n;
	int64_t inc1 = 0, inc2 = 0;
	assert_int_equal(create_cpu(w, "cpu"), 0);
	wt = open_table(w, "cpu");
	assert_int_equal(ts_insert(wt, one, 1), 0);
	ts_table_close(wt);
	r = open_db(dir, TS_OPEN_READONLY);
	rt = open_table(r, "cpu");
	assert_int_equal(ts_test_count_rows(rt), 1);
	assert_int_equal(ts_table_stats(rt, st, TS_STATS_MAX, &n), 0);
	for (int i = 0; i < n; i++)
		if (strcmp(st[i].name, "table_incarnation") == 0)
			inc1 = st[i].value;
	assert_true(inc1 > 0);

	assert_int_equal(ts_drop(w, "cpu"), 0);
	assert_int_equal(create_cpu(w, "cpu"), 0);
	wt = open_table(w, "cpu");
	assert_int_equal(ts_insert(wt, two, 1), 0);
	assert_int_equal(ts_insert(wt, three, 1), 0);
	ts_table_close(wt);

	ts_cursor *c = (ts_cursor *)&c;
	assert_int_equal(ts_query_open(rt, &(ts_query){0}, &c), TS_ECLOSED);
	assert_null(c);
	assert_msg_has("table \"cpu\" was dropped");
	rt2 = open_table(r, "cpu");
	assert_ptr_not_equal(rt2, rt);
	assert_int_equal(ts_test_count_rows(rt2), 2);
	assert_int_equal(ts_table_stats(rt2, st, TS_STATS_MAX, &n), 0);
	for (int i = 0; i < n; i++)
		if (strcmp(st[i].name, "table_incarnation") == 0)
			inc2 = st[i].value;
	assert_true(inc2 > 0 && inc2 != inc1);
	ts_table_close(rt);
	ts_table_close(rt2);
	assert_int_equal(ts_close(r), 0);
	assert_int_equal(ts_close(w), 0);
}

/* ---- drop ---- */

static void db_drop(void **state)
{
	const char *dir = *state;
	ts_db *db = open_db(dir, 0);
	assert_int_equal(create_cpu(db, "a"), 0);
	assert_int_equal(create_cpu(db, "cpu"), 0);
	ts_table *t = open_table(db, "cpu"), *t2 = (ts_table *)&t2;
	assert_int_equal(ts_drop(db, "cpu"), 0);
	assert_tables(db, "a");
	assert_false(exists(dir, "cpu"));
	assert_int_equal(ts_table_open(db, "cpu", &t2), TS_ENOENT);
	assert_null(t2);
	assert_msg_has("no such table \"cpu\"");
	ts_schema *s = (ts_schema *)&s;
	assert_int_equal(ts_table_schema(t, &s), TS_ECLOSED);
	assert_null(s);
	assert_msg_has("table \"cpu\" was dropped");
	ts_column c = {"x", TS_INT64, NONE};
	assert_int_equal(ts_alter_add(t, &c), TS_ECLOSED);
	assert_int_equal(ts_alter_widen(t, "n"), TS_ECLOSED);
	assert_int_equal(ts_alter_ttl(t, 1), TS_ECLOSED);
	assert_string_equal(ts_table_name(t), "cpu");
	assert_int_equal(ts_drop(db, "cpu"), TS_ENOENT);
	assert_int_equal(ts_drop(db, "never"), TS_ENOENT);
	assert_msg_has("no such table \"never\"");

	/* the name can be used again; the old handle stays dropped */
	ts_column cols[] = {{"k", TS_INT64, NONE}};
	const char *key[] = {"k", "ts"};
	assert_int_equal(ts_create_keyed(db, "cpu", cols, 1, key, 2, 0), 0);
	t2 = open_table(db, "cpu");
	s = schema_of(t2);
	assert_int_equal(s->ncolumns, 2);
	ts_schema_free(s);
	assert_int_equal(ts_table_schema(t, &s), TS_ECLOSED);
	ts_table_close(t);
	ts_table_close(t2);

	/* a table nobody holds */
	assert_int_equal(ts_drop(db, "a"), 0);
	assert_tables(db, "cpu");
	assert_int_equal(ts_close(db), 0);
	db = open_db(dir, 0);
	assert_tables(db, "cpu");
	assert_int_equal(ts_close(db), 0);
}

/* A dropped table's resources go with the last of its handles, calls and
 * cursors: here a cursor outlives the handle and the drop, and its close
 * releases the table -- the log's mappings of the deleted files go then,
 * not at ts_close (holds are counted without the lifetime lock: the
 * close must still see the drop). */
static void db_drop_released_by_the_last_cursor(void **state)
{
	const char *dir = *state;
	ts_db *db = open_db(dir, 0);
	assert_int_equal(create_cpu(db, "cpu"), 0);
	ts_table *t = open_table(db, "cpu");
	ts_value row[] = {ts_string("h"), ts_timestamp(1), ts_int32(1), ts_double(0.5)};
	assert_int_equal(ts_insert(t, row, 1), 0);
	ts_cursor *c = NULL;
	ts_query q = {0};
	assert_int_equal(ts_query_open(t, &q, &c), 0);
	ts_table_close(t);
	assert_int_equal(ts_test_deleted_mappings(dir), 0);
	assert_int_equal(ts_drop(db, "cpu"), 0);
	assert_true(ts_test_deleted_mappings(dir) >= 1); /* the cursor holds the table */
	const ts_value *v;
	int n;
	assert_int_equal(ts_cursor_next(c, &v, &n), 0);
	assert_non_null(v);
	assert_string_equal(v[0].v.s.ptr, "h");
	ts_cursor_close(c);
	assert_int_equal(ts_test_deleted_mappings(dir), 0);
	assert_int_equal(ts_close(db), 0);
}

/* A drop by the writer seen through a read-only database handle. */
static void db_drop_seen_by_readonly_handle(void **state)
{
	const char *dir = *state;
	ts_db *w = open_db(dir, 0);
	assert_int_equal(create_cpu(w, "cpu"), 0);
	ts_db *r = open_db(dir, TS_OPEN_READONLY);
	ts_table *rt = open_table(r, "cpu");
	ts_schema *s = schema_of(rt);
	ts_schema_free(s);
	assert_int_equal(ts_drop(w, "cpu"), 0);
	assert_int_equal(ts_table_schema(rt, &s), TS_ECLOSED);
	assert_msg_has("table \"cpu\" was dropped");
	assert_int_equal(ts_table_schema(rt, &s), TS_ECLOSED);
	assert_tables(r, "");
	ts_table *x = (ts_table *)&x;
	assert_int_equal(ts_table_open(r, "cpu", &x), TS_ENOENT);
	assert_null(x);
	/* recreated: a fresh read-only handle sees the new table while the
	 * old one stays dropped */
	assert_int_equal(create_cpu(w, "cpu"), 0);
	ts_column c = {"extra", TS_INT64, NONE};
	ts_table *wt = open_table(w, "cpu");
	assert_int_equal(ts_alter_add(wt, &c), 0);
	ts_table_close(wt);
	ts_table *rt2 = open_table(r, "cpu");
	s = schema_of(rt2);
	assert_int_equal(s->version, 2);
	assert_int_equal(s->ncolumns, 5);
	ts_schema_free(s);
	assert_int_equal(ts_table_schema(rt, &s), TS_ECLOSED);
	ts_table_close(rt);
	ts_table_close(rt2);
	/* closing the last handle of the dropped table forgot only that one */
	rt = open_table(r, "cpu");
	s = schema_of(rt);
	assert_int_equal(s->ncolumns, 5);
	ts_schema_free(s);
	assert_int_equal(ts_drop(w, "cpu"), 0);
	assert_int_equal(ts_table_schema(rt, &s), TS_ECLOSED);
	ts_table_close(rt);
	assert_int_equal(ts_table_open(r, "cpu", &x), TS_ENOENT);
	assert_int_equal(ts_close(r), 0);
	assert_int_equal(ts_close(w), 0);
}

static void make_leftover(const char *dir, const char *name)
{
	char *p = ts_test_path(dir, name), *q;
	assert_int_equal(mkdir(p, 0755), 0);
	q = ts_test_path(p, "DESCRIPTOR");
	FILE *f = fopen(q, "w");
	assert_non_null(f);
	fputs("half", f);
	fclose(f);
	free(q);
	q = ts_test_path(p, "log");
	assert_int_equal(mkdir(q, 0755), 0);
	free(q);
	free(p);
}

static void db_leftovers_removed(void **state)
{
	const char *dir = *state;
	ts_db *db = open_db(dir, 0);
	assert_int_equal(create_cpu(db, "cpu"), 0);
	assert_int_equal(ts_close(db), 0);
	make_leftover(dir, ".tmp-x-1");
	make_leftover(dir, ".dropped-y-2");
	make_leftover(dir, ".other");
	/* a read-only open changes nothing */
	db = open_db(dir, TS_OPEN_READONLY);
	assert_tables(db, "cpu");
	assert_int_equal(ts_close(db), 0);
	assert_true(exists(dir, ".tmp-x-1/log"));
	assert_true(exists(dir, ".dropped-y-2/log"));
	db = open_db(dir, 0);
	assert_false(exists(dir, ".tmp-x-1"));
	assert_false(exists(dir, ".dropped-y-2"));
	assert_true(exists(dir, ".other/DESCRIPTOR")); /* not ours */
	assert_true(exists(dir, "cpu/DESCRIPTOR"));
	assert_tables(db, "cpu");
	ts_table *t = open_table(db, "cpu");
	ts_table_close(t);
	assert_int_equal(ts_close(db), 0);
}

/* ---- a failing directory sync ---- */

/*
 * The library is linked statically into this test, so this fsync stands
 * in for libc's in every call the library makes.  While fail_dir is set,
 * an fsync of that directory fails with fail_errno; every other call goes
 * to the kernel.  Only the test's own thread arms it, and the databases
 * of these tests run no sync thread.
 */
static char fail_dir[4096];
static int fail_errno, fail_count;

int fsync(int fd)
{
	char link[64], path[sizeof fail_dir];
	struct stat st;
	if (fstat(fd, &st) == 0 && S_ISDIR(st.st_mode) && fail_dir[0]) {
		snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
		ssize_t n = readlink(link, path, sizeof path - 1);
		if (n > 0 && (path[n] = '\0', strcmp(path, fail_dir) == 0)) {
			fail_count++;
			errno = fail_errno;
			return -1;
		}
	}
	return (int)syscall(SYS_fsync, fd);
}

/* Make the fsync of directory dir[/sub] fail with err. */
static void fail_dir_fsync(const char *dir, const char *sub, int err)
{
	char *real = realpath(dir, NULL);
	assert_non_null(real);
	snprintf(fail_dir, sizeof fail_dir, "%s%s%s", real, sub ? "/" : "", sub ? sub : "");
	free(real);
	fail_errno = err;
	fail_count = 0;
}

/* Disarm; returns how many fsyncs failed. */
static int heal_dir_fsync(void)
{
	fail_dir[0] = '\0';
	return fail_count;
}

/* The one entry of dir named ".dropped-NAME-PID-N" (N decimal), as a
 * malloc'ed name; fails unless there is exactly one. */
static char *dropped_entry(const char *dir, const char *name)
{
	char prefix[128], *found = NULL;
	struct dirent *e;
	DIR *d = opendir(dir);
	assert_non_null(d);
	snprintf(prefix, sizeof prefix, ".dropped-%s-%ld-", name, (long)getpid());
	while ((e = readdir(d))) {
		if (strncmp(e->d_name, ".dropped-", 9) != 0)
			continue;
		const char *n = e->d_name + strlen(prefix);
		if (strncmp(e->d_name, prefix, strlen(prefix)) != 0 || !*n ||
		    strspn(n, "0123456789") != strlen(n) || found)
			fail_msg("unexpected entry %s", e->d_name);
		assert_non_null(found = strdup(e->d_name));
	}
	closedir(d);
	if (!found)
		fail_msg("no %s* in %s", prefix, dir);
	return found;
}

/* Expect code TS_EIO and the message: table "NAME": fsync directory PATH: ... */
static void expect_dir_sync_failed(int rc, const char *table, const char *path, int err)
{
	char want[4200];
	snprintf(want, sizeof want, "table \"%s\": fsync directory %s: %s", table, path,
	         strerror(err));
	if (rc != TS_EIO)
		fail_msg("%s, want EIO (%s)", ts_errname(rc), ts_errmsg(NULL));
	assert_string_equal(ts_errmsg(NULL), want);
	assert_int_equal(heal_dir_fsync(), 1);
}

/*
 * A failed fsync of a directory after a rename is TS_EIO naming the
 * directory, whatever the errno, for every operation that renames: the
 * rename cannot be taken back, so what the caller learns is that it may
 * not be durable.
 */
static void db_dir_sync_failure_is_eio(void **state)
{
	const char *dir = *state;
	static const int errs[] = {EIO, EINVAL, EROFS, ENOSPC};
	char tmp_name[64], table_dir[4200];
	ts_options o;
	ts_options_init(&o);
	o.sync = TS_SYNC_NONE; /* no sync thread */
	snprintf(tmp_name, sizeof tmp_name, ".tmp-cpu-%ld", (long)getpid());
	snprintf(table_dir, sizeof table_dir, "%s/cpu", dir);
	for (size_t i = 0; i < sizeof errs / sizeof errs[0]; i++) {
		ts_db *db;
		ts_table *t;
		ts_schema *s;
		assert_int_equal(ts_open(dir, &o, &db), 0);

		/* create: the new table's hidden directory, before its rename */
		char tmp_dir[4200];
		snprintf(tmp_dir, sizeof tmp_dir, "%s/%s", dir, tmp_name);
		fail_dir_fsync(dir, tmp_name, errs[i]);
		expect_dir_sync_failed(create_cpu(db, "cpu"), "cpu", tmp_dir, errs[i]);
		assert_tables(db, "");
		assert_false(exists(dir, tmp_name));

		/* create: the database directory, after the rename */
		fail_dir_fsync(dir, NULL, errs[i]);
		expect_dir_sync_failed(create_cpu(db, "cpu"), "cpu", dir, errs[i]);
		assert_tables(db, "cpu"); /* in place all the same */

		/* alter: the table directory, after DESCRIPTOR is replaced */
		t = open_table(db, "cpu");
		ts_column c = {"extra", TS_INT64, NONE};
		fail_dir_fsync(dir, "cpu", errs[i]);
		expect_dir_sync_failed(ts_alter_add(t, &c), "cpu", table_dir, errs[i]);
		fail_dir_fsync(dir, "cpu", errs[i]);
		expect_dir_sync_failed(ts_alter_widen(t, "n"), "cpu", table_dir, errs[i]);
		fail_dir_fsync(dir, "cpu", errs[i]);
		expect_dir_sync_failed(ts_alter_ttl(t, 5), "cpu", table_dir, errs[i]);
		/* the handle keeps the old descriptor (docs/descriptor-format.md §8) */
		s = schema_of(t);
		assert_int_equal(s->version, 1);
		assert_int_equal(s->ncolumns, 4);
		assert_int_equal(s->ttl, 0);
		ts_schema_free(s);
		ts_table_close(t);

		/* drop: the database directory, after the rename */
		fail_dir_fsync(dir, NULL, errs[i]);
		expect_dir_sync_failed(ts_drop(db, "cpu"), "cpu", dir, errs[i]);
		assert_tables(db, ""); /* gone all the same */
		char *dropped = dropped_entry(dir, "cpu");
		assert_int_equal(ts_close(db), 0);

		/* the next open clears the dropped table's files */
		assert_int_equal(ts_open(dir, &o, &db), 0);
		assert_false(exists(dir, dropped));
		assert_tables(db, "");
		assert_int_equal(ts_close(db), 0);
		free(dropped);
	}
}

/* The name a drop renames the table to before removing it (layout.md
 * section 5): .dropped-NAME-PID-N, N counting this process's drops. */
static void db_drop_renames_to_dropped_name(void **state)
{
	const char *dir = *state;
	ts_options o;
	ts_options_init(&o);
	o.sync = TS_SYNC_NONE;
	ts_db *db;
	assert_int_equal(ts_open(dir, &o, &db), 0);
	unsigned long n[2];
	for (int i = 0; i < 2; i++) {
		assert_int_equal(create_cpu(db, "cpu"), 0);
		fail_dir_fsync(dir, NULL, EIO); /* keeps the renamed directory */
		assert_int_equal(ts_drop(db, "cpu"), TS_EIO);
		assert_int_equal(heal_dir_fsync(), 1);
		char *name = dropped_entry(dir, "cpu"), *p = ts_test_path(dir, name);
		n[i] = strtoul(strrchr(name, '-') + 1, NULL, 10);
		assert_true(exists(p, "DESCRIPTOR")); /* the whole table */
		assert_true(exists(p, "log"));
		assert_true(exists(p, "tablets"));
		free(name);
		free(p);
		/* reopen, which removes it, before the next drop */
		assert_int_equal(ts_close(db), 0);
		assert_int_equal(ts_open(dir, &o, &db), 0);
	}
	assert_true(n[0] >= 1);
	assert_int_equal(n[1], n[0] + 1);
	assert_int_equal(ts_close(db), 0);
}

static void db_create_negative_ttl(void **state)
{
	const char *dir = *state;
	ts_db *db = open_db(dir, 0);
	ts_column cols[] = {{"host", TS_STRING, NONE}, {"v", TS_INT64, NONE}};
	const char *key[] = {"host", "ts"};
	assert_int_equal(ts_create_keyed(db, "t", cols, 2, key, 2, -1), TS_ERANGE);
	assert_string_equal(ts_errmsg(NULL), "table \"t\": ttl -1 must not be negative");
	int kidx[] = {0, 1};
	ts_column cols2[] = {{"host", TS_STRING, NONE}, {"ts", TS_TIMESTAMP, NONE}};
	ts_schema s = {.ncolumns = 2, .columns = cols2, .nkey = 2, .key = kidx, .ttl = INT64_MIN};
	assert_int_equal(ts_create(db, "u", &s), TS_ERANGE);
	assert_string_equal(ts_errmsg(NULL),
	                    "table \"u\": ttl -9223372036854775808 must not be negative");
	assert_tables(db, "");
	/* the same code as changing the TTL of an existing table */
	s.ttl = 0;
	assert_int_equal(ts_create(db, "u", &s), 0);
	ts_table *t = open_table(db, "u");
	assert_int_equal(ts_alter_ttl(t, -1), TS_ERANGE);
	ts_table_close(t);
	assert_int_equal(ts_close(db), 0);
}

/* String and blob defaults are bounded by TS_COLUMN_DEFAULT_MAX, at
 * create and at alter, with TS_ESCHEMA naming the column. */
static void db_default_size_limit(void **state)
{
	const char *dir = *state;
	ts_db *db = open_db(dir, 0);
	char *bytes = malloc(65537);
	assert_non_null(bytes);
	memset(bytes, 'd', 65537);
	const char *key[] = {"host", "ts"};
	ts_column cols[] = {{"host", TS_STRING, NONE}, {"s", TS_STRING, ts_stringn(bytes, 65537)}};
	assert_int_equal(ts_create_keyed(db, "t", cols, 2, key, 2, 0), TS_ESCHEMA);
	assert_string_equal(ts_errmsg(NULL),
	                    "table \"t\": column \"s\": default of 65537 bytes exceeds the limit of 65536");
	assert_tables(db, "");
	cols[1].dflt.v.s.len = 65536;
	assert_int_equal(ts_create_keyed(db, "t", cols, 2, key, 2, 0), 0);
	ts_table *t = open_table(db, "t");
	ts_column b = {"b", TS_BLOB, ts_blob(bytes, 65537)};
	assert_int_equal(ts_alter_add(t, &b), TS_ESCHEMA);
	assert_string_equal(ts_errmsg(NULL),
	                    "table \"t\": column \"b\": default of 65537 bytes exceeds the limit of 65536");
	ts_schema *s = schema_of(t);
	assert_int_equal(s->version, 1);
	ts_schema_free(s);
	b.dflt.v.s.len = 65536;
	assert_int_equal(ts_alter_add(t, &b), 0);
	ts_table_close(t);
	assert_int_equal(ts_close(db), 0);
	/* both long defaults read back whole */
	db = open_db(dir, TS_OPEN_READONLY);
	t = open_table(db, "t");
	s = schema_of(t);
	assert_int_equal(s->version, 2);
	assert_int_equal(s->columns[2].dflt.v.s.len, 65536);
	assert_int_equal(s->columns[3].dflt.type, TS_BLOB);
	assert_int_equal(s->columns[3].dflt.v.s.len, 65536);
	assert_memory_equal(s->columns[3].dflt.v.s.ptr, bytes, 65536);
	ts_schema_free(s);
	ts_table_close(t);
	assert_int_equal(ts_close(db), 0);
	free(bytes);
}

/* ---- log segment sizes ---- */

/*
 * A read-only handle opened on a table before its first insert (no log
 * segment yet) takes the size of the writer's segments when they come,
 * not its own log_segment_size option: with the option's size it read the
 * writer's first segment as truncated (writer 1 MiB, reader 64 MiB) or
 * as naming another segment (the opposite), and every query failed until
 * the handle was reopened.
 */
static void readonly_takes_writer_segment_size(int64_t writer, int64_t reader)
{
	ts_test_env *e = ts_test_env_new(INT64_C(1795262400000000000), 0);
	ts_test_env_close(e);
	e->log_segment_size = writer;
	ts_test_env_open(e); /* "m" has no segment yet: it takes writer */
	ts_options o;
	ts_db *rdb;
	ts_table *rt;
	ts_options_init(&o);
	o.flags = TS_OPEN_READONLY;
	if (reader) /* else the default, 64 MiB */
		o.log_segment_size = reader;
	assert_int_equal(ts_open(e->dir, &o, &rdb), 0);
	assert_int_equal(ts_table_open(rdb, "m", &rt), 0);
	assert_int_equal(ts_test_count_rows(rt), 0);
	test_row rows[3] = {{"a", e->now - 3, 1, 1}, {"b", e->now - 2, 1, 2}, {"c", e->now - 1, 1, 3}};
	assert_int_equal(ts_test_insert_m(e->t, rows, 3), 0);
	char seg[4200];
	struct stat st;
	snprintf(seg, sizeof seg, "%s/m/log/0000000000000000.seg", e->dir);
	assert_int_equal(stat(seg, &st), 0);
	assert_int_equal(st.st_size, 4096 + writer);
	assert_int_equal(ts_test_count_rows(rt), 3);
	ts_table_close(rt);
	assert_int_equal(ts_close(rdb), 0);
	ts_test_env_teardown((void **)&e);
}

static void db_readonly_small_segments_default_reader(void **state)
{
	(void)state;
	readonly_takes_writer_segment_size(INT64_C(1) << 20, 0);
}

static void db_readonly_default_segments_small_reader(void **state)
{
	(void)state;
	readonly_takes_writer_segment_size(INT64_C(64) << 20, INT64_C(1) << 20);
}

/*
 * A table whose log has 1 MiB segments cannot hold a row larger than a
 * segment (1 MiB less the row record's header): an insert of a larger
 * row says so, naming the segment size, and a create or an alter whose
 * column defaults alone make a row larger is refused, as at TS_ROW_MAX.
 */
static void db_row_limit_of_small_segments(void **state)
{
	const char *dir = *state;
	ts_options o;
	ts_db *db;
	ts_options_init(&o);
	o.log_segment_size = 1 << 20;
	assert_int_equal(ts_open(dir, &o, &db), 0);
	char *bytes = malloc(1 << 20);
	assert_non_null(bytes);
	memset(bytes, 'd', 1 << 20);
	const char *key[] = {"host", "ts"};
	/* 16 defaults of 64 KiB: 1048656 bytes of defaults and their lengths */
	ts_column cols[18] = {{"host", TS_STRING, NONE}, {"ts", TS_TIMESTAMP, NONE}};
	char names[16][8];
	for (int i = 0; i < 16; i++) {
		snprintf(names[i], sizeof names[i], "d%d", i);
		cols[2 + i] = (ts_column){names[i], TS_BLOB, ts_blob(bytes, 65536)};
	}
	assert_int_equal(ts_create_keyed(db, "t", cols, 18, key, 2, 0), TS_ETOOBIG);
	assert_msg_has("a row of the column defaults alone takes 1048656 bytes, more than the "
	               "limit of 1048568 bytes for a row");
	assert_tables(db, "");
	assert_int_equal(ts_create_keyed(db, "t", cols, 17, key, 2, 0), 0);
	ts_table *t = open_table(db, "t");
	assert_int_equal(ts_alter_add(t, &cols[17]), TS_ETOOBIG);
	assert_msg_has("more than the limit of 1048568 bytes for a row");
	ts_table_close(t);

	ts_column bcols[] = {{"host", TS_STRING, NONE}, {"ts", TS_TIMESTAMP, NONE},
	                     {"b", TS_BLOB, NONE}};
	assert_int_equal(ts_create_keyed(db, "b", bcols, 3, key, 2, 0), 0);
	t = open_table(db, "b");
	ts_value row[3] = {ts_string("h"), ts_timestamp(INT64_C(1795262400000000000)),
	                   ts_blob(bytes, 1 << 20)};
	assert_int_equal(ts_insert(t, row, 1), TS_ETOOBIG);
	assert_msg_has("exceeds the largest a table with 1 MiB log segments can hold "
	               "(1048568 bytes)");
	row[2] = ts_blob(bytes, 1000000);
	assert_int_equal(ts_insert(t, row, 1), 0);
	ts_table_close(t);
	assert_int_equal(ts_close(db), 0);
	free(bytes);
}

/* ---- read-only databases ---- */

static void db_readonly_refuses_changes(void **state)
{
	const char *dir = *state;
	ts_db *db = open_db(dir, 0);
	assert_int_equal(create_cpu(db, "cpu"), 0);
	assert_int_equal(ts_close(db), 0);
	db = open_db(dir, TS_OPEN_READONLY);
	assert_int_equal(create_cpu(db, "other"), TS_EREADONLY);
	assert_msg_has("read-only");
	assert_int_equal(ts_drop(db, "cpu"), TS_EREADONLY);
	assert_int_equal(ts_sync(db), TS_EREADONLY);
	ts_table *t = open_table(db, "cpu");
	ts_column c = {"x", TS_INT64, NONE};
	assert_int_equal(ts_alter_add(t, &c), TS_EREADONLY);
	assert_int_equal(ts_alter_widen(t, "n"), TS_EREADONLY);
	assert_int_equal(ts_alter_ttl(t, 5), TS_EREADONLY);
	ts_schema *s = schema_of(t);
	assert_int_equal(s->version, 1);
	assert_int_equal(s->ttl, 0);
	ts_schema_free(s);
	ts_table_close(t);
	assert_tables(db, "cpu");
	assert_int_equal(ts_close(db), 0);
	assert_false(exists(dir, "other"));
}

/* ---- the clock ---- */

static int64_t fixed_clock(void *arg)
{
	return *(int64_t *)arg;
}

static void db_clock(void **state)
{
	const char *dir = *state;
	ts_db *db;
	struct timespec a, b;
	/* real time when nothing is set */
	clock_gettime(CLOCK_REALTIME, &a);
	db = open_db(dir, 0);
	int64_t now = ts_now(db);
	clock_gettime(CLOCK_REALTIME, &b);
	assert_true(now >= (int64_t)a.tv_sec * 1000000000 + a.tv_nsec);
	assert_true(now <= (int64_t)b.tv_sec * 1000000000 + b.tv_nsec);
	assert_int_equal(ts_close(db), 0);

	assert_int_equal(setenv("TSSTORE_NOW", "2026-11-21T10:00:00Z", 1), 0);
	db = open_db(dir, 0);
	assert_int_equal(ts_now(db), T0);
	assert_int_equal(ts_now(db), T0);
	assert_int_equal(ts_close(db), 0);
	db = open_db(dir, TS_OPEN_READONLY);
	assert_int_equal(ts_now(db), T0);
	assert_int_equal(ts_close(db), 0);
	assert_int_equal(ts_open(dir, NULL, &db), 0);
	assert_int_equal(ts_now(db), T0);
	assert_int_equal(ts_close(db), 0);

	/* the option wins over the environment */
	int64_t fixed = 42;
	ts_options o;
	ts_options_init(&o);
	o.clock = fixed_clock;
	o.clock_arg = &fixed;
	assert_int_equal(ts_open(dir, &o, &db), 0);
	assert_int_equal(ts_now(db), 42);
	fixed = -7;
	assert_int_equal(ts_now(db), -7);
	assert_int_equal(ts_close(db), 0);

	assert_int_equal(setenv("TSSTORE_NOW", "yesterday", 1), 0);
	db = (ts_db *)&db;
	assert_int_equal(ts_open(dir, NULL, &db), TS_EINVAL);
	assert_null(db);
	assert_msg_has("TSSTORE_NOW");
	assert_int_equal(try_open(dir, TS_OPEN_READONLY, &db), TS_EINVAL);
	assert_int_equal(setenv("TSSTORE_NOW", "2026-11-21T10:00:00", 1), 0);
	assert_int_equal(ts_open(dir, NULL, &db), TS_EINVAL);
	/* the failed opens left no lock behind */
	assert_int_equal(setenv("TSSTORE_NOW", "", 1), 0);
	db = open_db(dir, 0);
	assert_int_equal(ts_close(db), 0);
	/* with a clock option a malformed TSSTORE_NOW is not even read */
	assert_int_equal(setenv("TSSTORE_NOW", "yesterday", 1), 0);
	assert_int_equal(ts_open(dir, &o, &db), 0);
	assert_int_equal(ts_now(db), -7);
	assert_int_equal(ts_close(db), 0);
}

/* ---- errors ---- */

static void db_error_names(void **state)
{
	(void)state;
	static const struct { int code; const char *name; } want[] = {
		{TS_OK, "OK"}, {TS_EINVAL, "EINVAL"}, {TS_ENOMEM, "ENOMEM"}, {TS_EIO, "EIO"},
		{TS_ENOSPC, "ENOSPC"}, {TS_ENOENT, "ENOENT"}, {TS_EEXIST, "EEXIST"},
		{TS_ELOCKED, "ELOCKED"}, {TS_EREADONLY, "EREADONLY"}, {TS_ECORRUPT, "ECORRUPT"},
		{TS_EVERSION, "EVERSION"}, {TS_ESCHEMA, "ESCHEMA"}, {TS_ETYPE, "ETYPE"},
		{TS_ERANGE, "ERANGE"}, {TS_EDUPKEY, "EDUPKEY"}, {TS_EFUTURE, "EFUTURE"},
		{TS_EEXPIRED, "EEXPIRED"}, {TS_ENOTSUP, "ENOTSUP"}, {TS_EBUSY, "EBUSY"},
		{TS_EPROTO, "EPROTO"}, {TS_ETOOBIG, "ETOOBIG"}, {TS_ECLOSED, "ECLOSED"},
	};
	assert_int_equal(sizeof want / sizeof want[0], 22);
	for (int i = 0; i < 22; i++) {
		assert_int_equal(want[i].code, -i);
		const char *text = ts_strerror(-i), *name = ts_errname(-i);
		assert_non_null(text);
		assert_true(strlen(text) > 0);
		assert_string_not_equal(text, "unknown error");
		assert_string_equal(name, want[i].name);
		for (int j = 0; j < i; j++) {
			assert_string_not_equal(text, ts_strerror(-j));
			assert_string_not_equal(name, ts_errname(-j));
		}
	}
	assert_string_equal(ts_errname(TS_EDUPKEY), "EDUPKEY");
	assert_string_equal(ts_strerror(TS_EDUPKEY), "duplicate primary key");
	assert_string_equal(ts_strerror(-22), "unknown error");
	assert_string_equal(ts_strerror(1), "unknown error");
	assert_string_equal(ts_errname(-22), "EUNKNOWN");
	assert_string_equal(ts_errname(INT32_MIN), "EUNKNOWN");
	assert_string_equal(ts_version(), TS_VERSION_STRING);
}

static void *thread_errmsg(void *arg)
{
	char *out = arg;
	ts_db *db;
	strcpy(out, ts_errmsg(NULL)); /* nothing failed in this thread yet */
	strcat(out, "|");
	if (ts_open("", NULL, &db) == TS_EINVAL)
		strcat(out, ts_errmsg(NULL));
	return NULL;
}

/* The message is per thread: another thread's failure leaves ours. */
static void db_errmsg_per_thread(void **state)
{
	const char *dir = *state;
	char *missing = ts_test_path(dir, "missing"), got[1200] = "";
	ts_db *db;
	pthread_t th;
	assert_int_equal(try_open(missing, 0, &db), TS_ENOENT);
	char mine[1024];
	snprintf(mine, sizeof mine, "%s", ts_errmsg(NULL));
	assert_non_null(strstr(mine, missing));
	assert_int_equal(pthread_create(&th, NULL, thread_errmsg, got), 0);
	assert_int_equal(pthread_join(th, NULL), 0);
	assert_string_equal(got, "|ts_open: empty path");
	assert_string_equal(ts_errmsg(NULL), mine);
	assert_string_equal(ts_errmsg(NULL), ts_errmsg((ts_db *)&th)); /* db is ignored */
	free(missing);
}

int main(void)
{
#define T(name) cmocka_unit_test_setup_teardown(name, setup_dir, teardown_dir)
	const struct CMUnitTest tests[] = {
		T(db_open_create_nested),
		T(db_open_missing),
		T(db_open_regular_file),
		T(db_open_bad_options),
		T(db_lock_conflict_same_process),
		T(db_lock_conflict_child),
		T(db_lock_held_by_child),
		T(db_readonly_beside_writer),
		T(db_create_table),
		T(db_tables_sorted),
		T(db_create_reserved_name),
		T(db_alter_refused_at_the_descriptor_limit),
		T(db_create_duplicate),
		T(db_create_bad_names),
		T(db_create_schema_errors),
		T(db_create_implicit_ts),
		T(db_alter),
		T(db_alter_seen_by_readonly_handle),
		T(db_recreated_seen_by_readonly_handle),
		T(db_drop),
		T(db_drop_released_by_the_last_cursor),
		T(db_drop_seen_by_readonly_handle),
		T(db_leftovers_removed),
		T(db_dir_sync_failure_is_eio),
		T(db_drop_renames_to_dropped_name),
		T(db_create_negative_ttl),
		T(db_default_size_limit),
		T(db_readonly_refuses_changes),
		T(db_clock),
		T(db_error_names),
		T(db_errmsg_per_thread),
		T(db_readonly_small_segments_default_reader),
		T(db_readonly_default_segments_small_reader),
		T(db_row_limit_of_small_segments),
	};
#undef T
	return cmocka_run_group_tests_name("db", tests, NULL, NULL);
}
