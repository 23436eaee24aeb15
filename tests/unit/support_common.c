/*
 * support_common.c -- the helpers of support.h, linked into every unit
 * test.  Reading back goes through the internal snapshot API, since the
 * query engine arrives later.
 */
#define _XOPEN_SOURCE 700
#include <fcntl.h>
#include <ftw.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "snapshot.h"
#include "support.h"

char *ts_test_tmpdir(void)
{
	char *dir = strdup("/tmp/tsstore-test-XXXXXX");
	assert_non_null(dir);
	assert_non_null(mkdtemp(dir));
	return dir;
}

char *ts_test_path(const char *dir, const char *name)
{
	size_t n = strlen(dir) + strlen(name) + 2;
	char *p = malloc(n);
	assert_non_null(p);
	snprintf(p, n, "%s/%s", dir, name);
	return p;
}

void ts_test_flip(const char *path, long off, unsigned char mask)
{
	unsigned char c;
	int fd = open(path, O_RDWR);
	assert_true(fd >= 0);
	if (off < 0)
		off += (long)lseek(fd, 0, SEEK_END);
	assert_int_equal(pread(fd, &c, 1, off), 1);
	c ^= mask;
	assert_int_equal(pwrite(fd, &c, 1, off), 1);
	close(fd);
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st; (void)ftw;
	return flag == FTW_DP ? rmdir(path) : unlink(path);
}

int ts_test_deleted_mappings(const char *dir)
{
	char line[8192];
	int n = 0;
	FILE *f = fopen("/proc/self/maps", "r");
	assert_non_null(f);
	while (fgets(line, sizeof line, f))
		if (strstr(line, dir) && strstr(line, "(deleted)"))
			n++;
	fclose(f);
	return n;
}

void ts_test_rmdir(char *dir)
{
	if (dir)
		nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
	free(dir);
}

int ts_test_create_like_m(ts_db *db, const char *name, int64_t ttl)
{
	ts_column cols[] = {
		{"host", TS_STRING, {TS_NONE, {0}}}, {"ts", TS_TIMESTAMP, {TS_NONE, {0}}},
		{"batch", TS_INT64, {TS_NONE, {0}}}, {"v", TS_INT64, {TS_NONE, {0}}},
	};
	const char *key[] = {"host", "ts"};
	return ts_create_keyed(db, name, cols, 4, key, 2, ttl);
}

void ts_test_create_m(ts_db *db, int64_t ttl)
{
	if (ts_test_create_like_m(db, "m", ttl) < 0)
		fail_msg("create m: %s", ts_errmsg(NULL));
}

void ts_test_batch_rows(test_row *r, int per_batch, int64_t base, int64_t b)
{
	for (int i = 0; i < per_batch; i++) {
		memset(&r[i], 0, sizeof r[i]);
		snprintf(r[i].host, sizeof r[i].host, "h%02d", i);
		r[i].ts = base + b * INT64_C(1000000000);
		r[i].batch = b;
		r[i].v = b * 1000 + i;
	}
}

long ts_test_check_batches(const test_row *rows, long n, int per_batch, int64_t base)
{
	long k = n / per_batch;
	if (n % per_batch)
		return -1;
	for (long i = 0; i < n; i++) {
		/* sorted by (host, ts): host h%02d, then batches 1..k */
		long b = (long)((rows[i].ts - base) / INT64_C(1000000000));
		if (b != i % k + 1 || rows[i].batch != b || rows[i].v != b * 1000 + i / k ||
		    rows[i].ts != base + b * INT64_C(1000000000))
			return -1;
	}
	return k;
}

test_row ts_test_row(const char *host, int64_t ts, int64_t v)
{
	test_row r;
	memset(&r, 0, sizeof r);
	snprintf(r.host, sizeof r.host, "%s", host);
	r.ts = ts;
	r.v = v;
	return r;
}

ts_value *ts_test_values_m(const test_row *rows, size_t n)
{
	ts_value *vals = calloc(n * 4 + 1, sizeof *vals);
	assert_non_null(vals);
	for (size_t i = 0; i < n; i++) {
		vals[4 * i] = ts_string(rows[i].host);
		vals[4 * i + 1] = ts_timestamp(rows[i].ts);
		vals[4 * i + 2] = ts_int64(rows[i].batch);
		vals[4 * i + 3] = ts_int64(rows[i].v);
	}
	return vals;
}

int ts_test_insert_m(ts_table *t, const test_row *rows, size_t n)
{
	ts_value *vals = ts_test_values_m(rows, n);
	int rc = ts_insert(t, vals, n);
	free(vals);
	return rc;
}

int ts_test_row_cmp(const void *a, const void *b)
{
	const test_row *x = a, *y = b;
	int c = strcmp(x->host, y->host);
	return c ? c : (x->ts > y->ts) - (x->ts < y->ts);
}

struct collect {
	test_row *rows;
	size_t n, cap;
	int wide; /* columns past the fourth allowed (and left out) */
};

static int collect_row(const ts_value *v, int n, void *arg)
{
	struct collect *c = arg;
	if ((c->wide ? n < 4 : n != 4) || v[0].v.s.len >= sizeof c->rows[0].host)
		return TS_ECORRUPT;
	if (c->n == c->cap) {
		c->cap = c->cap ? 2 * c->cap : 1024;
		c->rows = realloc(c->rows, c->cap * sizeof *c->rows);
		assert_non_null(c->rows);
	}
	test_row *r = &c->rows[c->n++];
	memset(r, 0, sizeof *r);
	memcpy(r->host, v[0].v.s.ptr, v[0].v.s.len);
	r->host[v[0].v.s.len] = '\0';
	r->ts = v[1].v.i;
	r->batch = v[2].v.i;
	r->v = v[3].v.i;
	return 0;
}

int64_t ts_test_count_rows(ts_table *t)
{
	ts_cursor *c;
	const ts_value *row;
	int64_t n = 0;
	assert_int_equal(ts_query_open(t, &(ts_query){0}, &c), 0);
	while (ts_cursor_next(c, &row, NULL) == 0 && row)
		n++;
	ts_cursor_close(c);
	return n;
}

static long read_rows(ts_table *t, test_row **out, int wide)
{
	ts__snapshot s;
	struct collect c = {.wide = wide};
	int rc = ts__snapshot_take(t, &s);
	for (uint32_t i = 0; rc == 0 && i < s.nroots; i++)
		rc = ts__snapshot_scan(&s, i, collect_row, &c);
	for (int i = 0; rc == 0 && i < s.ntablets; i++)
		rc = ts__snapshot_scan_tablet(&s, i, collect_row, &c);
	ts__snapshot_release(&s);
	if (rc < 0) {
		free(c.rows);
		return rc;
	}
	if (c.n)
		qsort(c.rows, c.n, sizeof *c.rows, ts_test_row_cmp);
	*out = c.rows;
	return (long)c.n;
}

long ts_test_read_m(ts_table *t, test_row **out) { return read_rows(t, out, 0); }
long ts_test_read_m_wide(ts_table *t, test_row **out) { return read_rows(t, out, 1); }

int64_t ts_test_run_and_kill(void (*child)(void *arg, int fd), void *arg, long pause_ns,
                             int64_t last)
{
	int p[2];
	int64_t o;
	assert_int_equal(pipe(p), 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(p[0]);
		child(arg, p[1]);
	}
	close(p[1]);
	if (read(p[0], &o, sizeof o) == sizeof o) /* the child is ready */
		last = o;
	struct timespec pause = {0, pause_ns};
	nanosleep(&pause, NULL);
	kill(pid, SIGKILL);
	int status;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	if (!(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL))
		fail_msg("child ended on its own: status %d", status);
	while (read(p[0], &o, sizeof o) == sizeof o)
		last = o;
	close(p[0]);
	return last;
}

void ts_test_wait_exit0(pid_t pid)
{
	int status;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

static void report_problem(void *arg, const char *table, const char *file, const char *what)
{
	(void)arg;
	print_error("check: %s: %s: %s\n", table, file, what);
}

void ts_test_check_clean(ts_db *db, const char *table, const char *when)
{
	ts_check_opts opts = {.problem = report_problem};
	if (ts_check(db, table, &opts) < 0)
		fail_msg("check %s: %s", when, ts_errmsg(NULL));
}
