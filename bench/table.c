/*
 * table.c -- the tsstore side of tsstore-bench: a scratch directory per
 * run, the reference table "cpu" (host string, ts, ten int64 values, key
 * (host, ts)), loading rows into it, and reading its counters and its
 * files' sizes; and evicting files from the page cache before a cold read
 * (bench_drop_caches).  A timed run that writes to the device first lets
 * the removal of the previous run's files drain (bench_settle): the file
 * system is mounted with discard here, and a gigabyte of discards would
 * otherwise land inside the next run's fsyncs.  A benchmark has no use
 * for a half-made table, so every failure here prints the library's
 * message and exits.
 */
#include <assert.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bench.h"

#define SCRATCH_TEMPLATE "/tmp/tsstore-bench-XXXXXX"
#define SETTLE_SECONDS 3 /* for the discards of a removed run to drain */
#define NFTW_FDS 16 /* directories nftw may hold open */
#define DROP_CACHES "/proc/sys/vm/drop_caches"

static void die(const char *what)
{
	fprintf(stderr, "tsstore-bench: %s: %s\n", what, ts_errmsg(NULL));
	exit(1);
}

char *bench_tmpdir(void)
{
	char *d = strdup(SCRATCH_TEMPLATE);
	if (!d || !mkdtemp(d)) {
		perror("tsstore-bench: mkdtemp");
		exit(1);
	}
	return d;
}

void bench_rmdir(char *d)
{
	char cmd[600];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", d);
	if (system(cmd) != 0)
		fprintf(stderr, "tsstore-bench: could not remove %s\n", d);
	free(d);
}

void bench_settle(void)
{
	sync();
	sleep(SETTLE_SECONDS);
}

ts_table *bench_table_open(const char *dir, const ts_options *o, ts_db **db)
{
	static const char *names[BENCH_VALUES] = {"v0", "v1", "v2", "v3", "v4",
	                                          "v5", "v6", "v7", "v8", "v9"};
	const char *key[] = {"host", "ts"};
	ts_column cols[BENCH_COLUMNS] = {{"host", TS_STRING, {TS_NONE, {0}}},
	                                 {"ts", TS_TIMESTAMP, {TS_NONE, {0}}}};
	ts_table *t;
	for (int i = 0; i < BENCH_VALUES; i++)
		cols[2 + i] = (ts_column){names[i], TS_INT64, {TS_NONE, {0}}};
	if (ts_open(dir, o, db) < 0)
		die("open");
	if (ts_create_keyed(*db, BENCH_TABLE, cols, BENCH_COLUMNS, key, 2, 0) < 0 ||
	    ts_table_open(*db, BENCH_TABLE, &t) < 0)
		die("create table");
	return t;
}

void bench_table_load(ts_table *t, const bench_rows *r)
{
	for (size_t i = 0; i < r->n; i += r->batch) {
		size_t n = r->n - i < r->batch ? r->n - i : r->batch;
		if (ts_insert(t, &r->vals[i * BENCH_COLUMNS], n) < 0)
			die("insert");
	}
}

int64_t bench_frozen_clock(void *arg)
{
	return *(const int64_t *)arg;
}

int64_t bench_flush_threads;

void bench_table_load_fresh(const bench_rows *r, int64_t flush_size, bench_loaded *l)
{
	ts_options_init(&l->opts);
	if (bench_flush_threads)
		l->opts.flush_threads = bench_flush_threads;
	l->opts.flags = TS_OPEN_CREATE | TS_OPEN_NOMERGE;
	l->opts.sync = TS_SYNC_NONE;
	l->opts.flush_size = flush_size;
	l->opts.flush_age = BENCH_NEVER_FLUSH_AGE;
	l->dir = bench_tmpdir();
	l->t = bench_table_open(l->dir, &l->opts, &l->db);
	bench_table_load(l->t, r);
	if (flush_size == BENCH_NEVER_FLUSH_SIZE && bench_table_stat(l->t, "flushes") > 0)
		fprintf(stderr, "tsstore-bench: warning: the table flushed during the load\n");
}

void bench_table_reopen(bench_loaded *l)
{
	assert(!l->t && !l->db);
	if (ts_open(l->dir, &l->opts, &l->db) < 0)
		die("reopen");
	if (ts_table_open(l->db, BENCH_TABLE, &l->t) < 0)
		die("reopen table");
}

void bench_table_unload(bench_loaded *l)
{
	ts_table_close(l->t);
	ts_close(l->db);
	bench_rmdir(l->dir);
	memset(l, 0, sizeof *l);
}

int64_t bench_table_stat(ts_table *t, const char *name)
{
	ts_stat st[TS_STATS_MAX];
	int n;
	if (ts_table_stats(t, st, TS_STATS_MAX, &n) < 0)
		die("stats");
	for (int i = 0; i < n; i++)
		if (strcmp(st[i].name, name) == 0)
			return st[i].value;
	return -1;
}

void bench_table_stats_print(ts_table *t, const char *workload, const char *engine)
{
	ts_stat st[TS_STATS_MAX];
	int n;
	if (ts_table_stats(t, st, TS_STATS_MAX, &n) < 0)
		die("stats");
	printf("{\"workload\":\"%s\",\"engine\":\"%s\",\"metric\":\"stats\",\"stats\":{", workload,
	       engine);
	for (int i = 0; i < n; i++)
		printf("%s\"%s\":%lld", i ? "," : "", st[i].name, (long long)st[i].value);
	printf("}}\n");
	fflush(stdout);
}

/* nftw has no argument for its callback: the walk's state is here. */
static const char *walk_suffix;
static int walk_evict;   /* also drop each file's pages from the cache */
static int64_t walk_bytes;

/* Drop path's clean pages from the page cache; -1 on failure. */
static int evict_file(const char *path)
{
	int fd = open(path, O_RDONLY), rc = -1;
	if (fd >= 0 && posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED) == 0)
		rc = 0;
	if (fd >= 0)
		close(fd);
	return rc;
}

static int add_file(const char *path, const struct stat *st, int type, struct FTW *f)
{
	size_t n = strlen(path), k = strlen(walk_suffix);
	(void)f;
	if (type != FTW_F || !S_ISREG(st->st_mode) || n < k || strcmp(path + n - k, walk_suffix) != 0)
		return 0;
	walk_bytes += st->st_size;
	return walk_evict && evict_file(path) < 0 ? -1 : 0;
}

/* Walk dir's files ending with suffix, adding up their sizes and, when
 * evict is set, dropping their pages from the cache. */
static int64_t walk(const char *dir, const char *suffix, int evict)
{
	walk_suffix = suffix;
	walk_evict = evict;
	walk_bytes = 0;
	if (nftw(dir, add_file, NFTW_FDS, FTW_PHYS) < 0) {
		perror("tsstore-bench: nftw");
		exit(1);
	}
	return walk_bytes;
}

int64_t bench_dir_bytes(const char *dir, const char *suffix)
{
	return walk(dir, suffix, 0);
}

/* Write "1" to drop_caches: the kernel drops every clean, unmapped page
 * of the page cache.  Returns 0, or -1 when not permitted. */
static int drop_page_cache(void)
{
	int fd = open(DROP_CACHES, O_WRONLY), rc = -1;
	if (fd >= 0 && write(fd, "1", 1) == 1)
		rc = 0;
	if (fd >= 0)
		close(fd);
	return rc;
}

const char *bench_drop_caches(const char *dir, const char *suffix)
{
	sync(); /* only clean pages can be dropped */
	if (drop_page_cache() == 0)
		return "drop_caches";
	walk(dir, suffix, 1);
	return "fadvise";
}
