/*
 * test_backup.c -- ts_backup: a copy of a sound database (on-disk
 * tablets, a log, older schema versions, a table never written) opens
 * read-only and read-write, passes ts_check and returns exactly the rows
 * of the original, with tablets hard-linked and log segments sparse; a
 * log without HEAD, or with a HEAD ahead of it, is copied whole; copies
 * taken from a read-only handle (as `tsstore snapshot` beside tsstored)
 * and from the writer's own handle while a thread inserts, flushes and
 * merges hold a prefix of the batches, every batch whole, at least those
 * acknowledged before the call; an existing destination is refused and
 * left alone.
 */
#include <dirent.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "log_format.h"
#include "support.h"

#define NOW INT64_C(1795262400000000000) /* 2026-11-21T12:00:00Z */
#define SEC INT64_C(1000000000)
#define HOUR (3600 * SEC)

/* A directory outside the database, for the copies: a copy inside the
 * database directory is refused (backup_refuses_dest_inside). */
static char *outside;

static int setup(void **state)
{
	*state = ts_test_env_new(NOW, TS_OPEN_NOMERGE);
	outside = ts_test_tmpdir();
	return 0;
}

static int teardown(void **state)
{
	ts_test_rmdir(outside);
	outside = NULL;
	return ts_test_env_teardown(state);
}

static ts_db *open_copy(const char *dir, unsigned flags)
{
	ts_options o;
	ts_db *db;
	ts_options_init(&o);
	o.flags = flags;
	o.sync = TS_SYNC_NONE;
	if (ts_open(dir, &o, &db) < 0)
		fail_msg("open %s: %s", dir, ts_errmsg(NULL));
	return db;
}

/* ---- every row of a table, as text ---- */

struct text {
	char *p;
	size_t n, cap;
};

static void append(struct text *t, const char *p, size_t n)
{
	if (t->n + n + 1 > t->cap) {
		t->cap = (t->n + n + 1) * 2;
		t->p = realloc(t->p, t->cap);
		assert_non_null(t->p);
	}
	memcpy(t->p + t->n, p, n);
	t->n += n;
	t->p[t->n] = '\0';
}

static void say(struct text *t, const char *fmt, ...)
{
	va_list ap;
	char buf[256];
	va_start(ap, fmt);
	int n = vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	assert_true(n >= 0 && (size_t)n < sizeof buf);
	append(t, buf, (size_t)n);
}

/* The whole output of a query of every row of table name, one line a
 * row, every value with its type. */
static char *dump(ts_db *db, const char *name)
{
	struct text t = {0};
	ts_table *tab;
	ts_cursor *c;
	ts_query q;
	const ts_value *row;
	int n;
	memset(&q, 0, sizeof q);
	if (ts_table_open(db, name, &tab) < 0)
		fail_msg("open %s: %s", name, ts_errmsg(NULL));
	assert_int_equal(ts_query_open(tab, &q, &c), 0);
	say(&t, "%s:\n", name);
	while (ts_cursor_next(c, &row, &n) == 0 && row) {
		for (int i = 0; i < n; i++) {
			const ts_value *v = &row[i];
			if (v->type == TS_STRING || v->type == TS_BLOB)
				say(&t, " %d:%.*s", v->type, (int)v->v.s.len, (const char *)v->v.s.ptr);
			else if (v->type == TS_DOUBLE)
				say(&t, " %d:%a", v->type, v->v.d);
			else
				say(&t, " %d:%" PRId64, v->type, v->v.i);
		}
		say(&t, "\n");
	}
	ts_cursor_close(c);
	ts_table_close(tab);
	return t.p;
}

static char *dump_all(ts_db *db)
{
	char **names;
	int n;
	struct text t = {0};
	assert_int_equal(ts_tables(db, &names, &n), 0);
	say(&t, "%d tables\n", n);
	for (int i = 0; i < n; i++) {
		char *one = dump(db, names[i]);
		append(&t, one, strlen(one));
		free(one);
	}
	ts_free_names(names);
	return t.p;
}

/* ---- a sound database ---- */

static void insert_rows(ts_table *t, int b, int n)
{
	test_row *r = calloc((size_t)n, sizeof *r);
	assert_non_null(r);
	for (int i = 0; i < n; i++) {
		snprintf(r[i].host, sizeof r[i].host, "h%02d", i % 10);
		r[i].ts = NOW - 2 * HOUR + (int64_t)(i / 10) * SEC + b;
		r[i].batch = b;
		r[i].v = i;
	}
	if (ts_test_insert_m(t, r, (size_t)n) != 0)
		fail_msg("insert: %s", ts_errmsg(NULL));
	free(r);
}

/* Table m: an on-disk tablet and rows in the log; table n: rows under
 * two schema versions, one part flushed; table e: never written. */
static void fill(ts_test_env *e)
{
	insert_rows(e->t, 1, 500);
	assert_int_equal(ts_flush(e->t, INT64_MAX), 0);
	insert_rows(e->t, 2, 300);
	ts_column c[] = {{"k", TS_STRING, {TS_NONE, {0}}}, {"ts", TS_TIMESTAMP, {TS_NONE, {0}}},
	                 {"x", TS_INT32, {TS_NONE, {0}}}};
	const char *key[] = {"k", "ts"};
	assert_int_equal(ts_create_keyed(e->db, "n", c, 3, key, 2, 0), 0);
	assert_int_equal(ts_create_keyed(e->db, "e", c, 3, key, 2, 0), 0);
	ts_table *n;
	assert_int_equal(ts_table_open(e->db, "n", &n), 0);
	ts_value v[3] = {ts_string("a"), ts_timestamp(NOW - HOUR), ts_int32(7)};
	assert_int_equal(ts_insert(n, v, 1), 0);
	assert_int_equal(ts_flush(n, INT64_MAX), 0);
	ts_column y = {"y", TS_DOUBLE, {TS_DOUBLE, {.d = 2.5}}};
	assert_int_equal(ts_alter_add(n, &y), 0);
	assert_int_equal(ts_alter_widen(n, "x"), 0);
	ts_value w[4] = {ts_string("b"), ts_timestamp(NOW - HOUR), ts_int64(INT64_C(1) << 40),
	                 ts_double(-1)};
	assert_int_equal(ts_insert(n, w, 1), 0);
	ts_table_close(n);
}

static char *path_in(const char *dir, const char *rest)
{
	char *p = malloc(strlen(dir) + strlen(rest) + 2);
	assert_non_null(p);
	sprintf(p, "%s/%s", dir, rest);
	return p;
}

/* The copy at dir holds exactly want and passes ts_check, read-only and
 * then read-write (after recovery). */
static void expect_copy(const char *dir, const char *want)
{
	for (int rw = 0; rw <= 1; rw++) {
		ts_db *db = open_copy(dir, rw ? 0 : TS_OPEN_READONLY);
		if (ts_check(db, NULL, NULL) != 0)
			fail_msg("check of the copy: %s", ts_errmsg(NULL));
		char *got = dump_all(db);
		assert_string_equal(got, want);
		free(got);
		assert_int_equal(ts_close(db), 0);
	}
}

/* Nothing named dest.tmp-* is left beside dest. */
static void expect_no_leftover(const char *dest)
{
	char *dir = strdup(dest), *slash = strrchr(dir, '/');
	const char *base = slash + 1;
	char prefix[256];
	*slash = '\0';
	snprintf(prefix, sizeof prefix, "%s.tmp-", base);
	DIR *d = opendir(dir);
	struct dirent *e;
	assert_non_null(d);
	while ((e = readdir(d)))
		if (strncmp(e->d_name, prefix, strlen(prefix)) == 0)
			fail_msg("left behind: %s", e->d_name);
	closedir(d);
	free(dir);
}

static void backup_sound_database_round_trip(void **state)
{
	ts_test_env *e = *state;
	char *dest1 = path_in(outside, "copy1"), *dest2 = path_in(outside, "copy2");
	fill(e);
	char *want = dump_all(e->db);
	assert_non_null(strstr(want, "3 tables\ne:\nm:\n"));
	assert_int_equal(ts_backup(e->db, dest1), 0); /* the writer's own handle */
	ts_test_env_close(e);
	ts_db *ro = open_copy(e->dir, TS_OPEN_READONLY);
	assert_int_equal(ts_backup(ro, dest2), 0); /* beside it, read-only */
	assert_int_equal(ts_close(ro), 0);
	expect_copy(dest1, want);
	expect_copy(dest2, want);
	expect_no_leftover(dest1);

	/* tablets are links to the same files; segments hold holes */
	char src[600], dst[600];
	struct stat a, b;
	DIR *d;
	struct dirent *de;
	snprintf(src, sizeof src, "%s/m/tablets", e->dir);
	assert_non_null(d = opendir(src));
	int tablets = 0;
	while ((de = readdir(d)))
		if (de->d_name[0] != '.') {
			snprintf(src, sizeof src, "%s/m/tablets/%s", e->dir, de->d_name);
			snprintf(dst, sizeof dst, "%s/m/tablets/%s", dest2, de->d_name);
			assert_int_equal(stat(src, &a), 0);
			assert_int_equal(stat(dst, &b), 0);
			assert_true(a.st_ino == b.st_ino);
			tablets++;
		}
	closedir(d);
	assert_int_equal(tablets, 1);
	snprintf(dst, sizeof dst, "%s/m/log/0000000000000000.seg", dest2);
	assert_int_equal(stat(dst, &b), 0);
	assert_int_equal(b.st_size, TS_SEG_FILE_SIZE);
	assert_true(b.st_blocks * 512 < 1024 * 1024);
	free(want);
	free(dest1);
	free(dest2);
}

/* A log whose HEAD is missing, or names no commit (a power loss left it
 * ahead of the log), is copied whole: the copy recovers every commit. */
static void backup_without_a_usable_head(void **state)
{
	ts_test_env *e = *state;
	char *dest1 = path_in(outside, "copy1"), *dest2 = path_in(outside, "copy2");
	char *head = path_in(e->dir, "m/log/HEAD");
	fill(e);
	char *want = dump_all(e->db);
	ts_test_env_close(e);
	int fd = open(head, O_RDWR);
	assert_true(fd >= 0);
	unsigned char lsn[8] = {0x08, 0, 0, 0x01}; /* 16 MiB + 8: no commit there */
	assert_int_equal(pwrite(fd, lsn, 8, TS_HEAD_OFF_COMMIT), 8);
	close(fd);
	ts_db *ro = open_copy(e->dir, TS_OPEN_READONLY);
	assert_int_equal(ts_backup(ro, dest1), 0);
	assert_int_equal(unlink(head), 0);
	assert_int_equal(ts_backup(ro, dest2), 0);
	assert_int_equal(ts_close(ro), 0);
	expect_copy(dest1, want);
	expect_copy(dest2, want);
	free(want);
	free(head);
	free(dest1);
	free(dest2);
}

/* Entries of dir but . and .. */
static int entries(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;
	assert_non_null(d);
	while ((e = readdir(d)))
		n += strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
	closedir(d);
	return n;
}

/* A directory dest of the user's, holding the file inside ("mine\n"). */
static void make_mine(const char *dest, const char *inside)
{
	assert_int_equal(mkdir(dest, 0755), 0);
	FILE *f = fopen(inside, "w");
	assert_non_null(f);
	fputs("mine\n", f);
	fclose(f);
}

/* dest as make_mine left it. */
static void expect_mine(const char *dest, const char *inside)
{
	struct stat st;
	assert_int_equal(entries(dest), 1);
	assert_int_equal(stat(inside, &st), 0);
	assert_int_equal(st.st_size, 5);
}

static void backup_onto_existing_dest_fails(void **state)
{
	ts_test_env *e = *state;
	char *dest = path_in(outside, "copy"), *inside = path_in(dest, "keep");
	fill(e);
	make_mine(dest, inside);
	assert_int_equal(ts_backup(e->db, dest), TS_EEXIST);
	assert_non_null(strstr(ts_errmsg(NULL), "already exists"));
	char *slashed = path_in(dest, ""); /* "copy/" names it too */
	assert_int_equal(ts_backup(e->db, slashed), TS_EEXIST);
	expect_mine(dest, inside);
	assert_int_equal(ts_backup(e->db, inside), TS_EEXIST); /* a file */
	expect_mine(dest, inside);
	expect_no_leftover(dest);
	assert_int_equal(ts_backup(e->db, ""), TS_EINVAL);
	free(slashed);
	free(inside);
	free(dest);
}

/* ---- beside a writer ---- */

#define PER_BATCH 10

struct writer {
	ts_test_env *e;
	int stop, rc;
	int batches; /* acknowledged so far */
	char msg[512];
};

static void *write_on(void *arg)
{
	struct writer *w = arg;
	test_row r[PER_BATCH];
	memset(r, 0, sizeof r);
	for (int b = 1; w->rc == 0 && !__atomic_load_n(&w->stop, __ATOMIC_RELAXED); b++) {
		for (int i = 0; i < PER_BATCH; i++) {
			snprintf(r[i].host, sizeof r[i].host, "h%d", i);
			r[i].ts = NOW - 2 * HOUR + b;
			r[i].batch = b;
			r[i].v = i;
		}
		w->rc = ts_test_insert_m(w->e->t, r, PER_BATCH);
		if (w->rc == 0 && b % 25 == 0)
			w->rc = ts_flush(w->e->t, INT64_MAX);
		if (w->rc == 0 && b % 100 == 0)
			w->rc = ts_merge(w->e->t, NULL);
		if (w->rc < 0)
			snprintf(w->msg, sizeof w->msg, "batch %d: %s", b, ts_errmsg(NULL));
		else
			__atomic_store_n(&w->batches, b, __ATOMIC_RELEASE);
	}
	return NULL;
}

/* The copy holds batches 1..k, each whole, with lo <= k <= hi. */
static int expect_prefix(const char *dir, int lo, int hi)
{
	ts_db *db = open_copy(dir, TS_OPEN_READONLY);
	ts_table *t;
	test_row *rows;
	if (ts_check(db, NULL, NULL) != 0)
		fail_msg("check of the copy: %s", ts_errmsg(NULL));
	assert_int_equal(ts_table_open(db, "m", &t), 0);
	long n = ts_test_read_m(t, &rows);
	assert_true(n >= 0);
	int *count = calloc((size_t)hi + 2, sizeof *count), k = 0;
	assert_non_null(count);
	for (long i = 0; i < n; i++) {
		assert_true(rows[i].batch >= 1 && rows[i].batch <= hi);
		count[rows[i].batch]++;
	}
	while (k < hi && count[k + 1] == PER_BATCH)
		k++;
	for (int b = k + 1; b <= hi; b++)
		if (count[b])
			fail_msg("batch %d: %d rows after batch %d (%d rows)", b, count[b], k + 1,
			         count[k + 1]);
	if (k < lo)
		fail_msg("%d batches copied, %d were acknowledged before", k, lo);
	assert_int_equal(n, (long)k * PER_BATCH);
	free(count);
	free(rows);
	ts_table_close(t);
	assert_int_equal(ts_close(db), 0);
	return k;
}

static int64_t mono_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

static void backup_beside_writer_holds_prefix(void **state)
{
	ts_test_env *e = *state;
	struct writer w = {.e = e};
	pthread_t th;
	char *dest = path_in(outside, "copy");
	ts_db *ro = open_copy(e->dir, TS_OPEN_READONLY);
	assert_int_equal(pthread_create(&th, NULL, write_on, &w), 0);
	int copies = 0, last = 0;
	for (int64_t until = mono_ns() + 1500000000; mono_ns() < until || copies < 4; copies++) {
		int before = __atomic_load_n(&w.batches, __ATOMIC_ACQUIRE);
		/* mostly as `tsstore snapshot` beside tsstored; every third
		 * from the writer's own handle, as tsstored would */
		int rc = ts_backup(copies % 3 == 2 ? e->db : ro, dest);
		int after = __atomic_load_n(&w.batches, __ATOMIC_ACQUIRE);
		if (rc != 0)
			fail_msg("backup %d: %s", copies, ts_errmsg(NULL));
		last = expect_prefix(dest, before, after + 1);
		ts_test_rmdir(strdup(dest));
	}
	__atomic_store_n(&w.stop, 1, __ATOMIC_RELAXED);
	pthread_join(th, NULL);
	if (w.rc < 0)
		fail_msg("writer: %s", w.msg);
	assert_true(w.batches >= 200); /* flushes and merges happened */
	print_message("%d copies beside %d batches, the last with %d\n", copies, w.batches, last);
	assert_int_equal(ts_close(ro), 0);
	free(dest);
}

/* A copy into the database directory or anywhere below it, also through
 * a symbolic link, is refused before anything is written: the copy
 * would become part of what it copies (issue 24, item 7). */
static void backup_refuses_dest_inside(void **state)
{
	ts_test_env *e = *state;
	char *in_db = path_in(e->dir, "copy"), *in_table = path_in(e->dir, "m/copy");
	char *link = path_in(outside, "link"), *via_link = path_in(link, "copy");
	fill(e);
	int before = entries(e->dir);
	assert_int_equal(symlink(e->dir, link), 0);
	const char *dests[] = {in_db, in_table, via_link, e->dir, link};
	for (size_t i = 0; i < sizeof dests / sizeof *dests; i++) {
		assert_int_equal(ts_backup(e->db, dests[i]), TS_EINVAL);
		if (!strstr(ts_errmsg(NULL), "is inside the database directory"))
			fail_msg("%s: %s", dests[i], ts_errmsg(NULL));
	}
	assert_int_equal(entries(e->dir), before);
	free(in_db);
	free(in_table);
	free(link);
	free(via_link);
}

/* ---- incremental ---- */

/* The one tablet name of table m in the copy or database at dir. */
static void only_tablet(const char *dir, char *out, size_t size)
{
	char path[600];
	DIR *d;
	struct dirent *de;
	int n = 0;
	snprintf(path, sizeof path, "%s/m/tablets", dir);
	assert_non_null(d = opendir(path));
	while ((de = readdir(d)))
		if (de->d_name[0] != '.') {
			snprintf(out, size, "%s/m/tablets/%s", dir, de->d_name);
			n++;
		}
	closedir(d);
	assert_int_equal(n, 1);
}

static ino_t inode_of(const char *path)
{
	struct stat st;
	if (stat(path, &st) != 0)
		fail_msg("stat %s", path);
	return st.st_ino;
}

/* Replace the file at path by a copy of itself (a new inode, the same
 * bytes), with byte at (from the end, when back) changed when change. */
static void recopy(const char *path, int change, long at)
{
	char tmp[700], buf[1 << 16];
	snprintf(tmp, sizeof tmp, "%s.new", path);
	FILE *in = fopen(path, "rb"), *out = fopen(tmp, "wb");
	assert_non_null(in);
	assert_non_null(out);
	size_t n;
	while ((n = fread(buf, 1, sizeof buf, in)) > 0)
		assert_int_equal(fwrite(buf, 1, n, out), n);
	fclose(in);
	if (change) {
		fseek(out, at, SEEK_END);
		fputc(0x5a, out);
	}
	fclose(out);
	assert_int_equal(rename(tmp, path), 0);
}

/* An incremental backup: first a full copy; then, after more rows and a
 * flush, the earlier copy's tablet is taken from it (its inode, not the
 * database's), the new one from the database; a tablet of the earlier
 * copy whose last bytes differ is not taken; after a merge, the copy
 * holds only the merged tablet; every copy holds exactly the rows and
 * passes check; nothing is left beside dest. */
static void backup_incremental_takes_the_earlier_tablets(void **state)
{
	ts_test_env *e = *state;
	char *dest = path_in(outside, "copy"), db_tablet[600], copied[600], path[700];
	fill(e);
	char *want = dump_all(e->db);
	assert_int_equal(ts_backup_incremental(e->db, dest), 0); /* none yet: a full copy */
	expect_copy(dest, want);
	free(want);
	only_tablet(e->dir, db_tablet, sizeof db_tablet);
	only_tablet(dest, copied, sizeof copied);
	assert_true(inode_of(db_tablet) == inode_of(copied));
	recopy(copied, 0, 0); /* as across file systems: the copy's own file */
	ino_t own = inode_of(copied);
	assert_true(own != inode_of(db_tablet));

	insert_rows(e->t, 3, 200);
	assert_int_equal(ts_flush(e->t, INT64_MAX), 0);
	want = dump_all(e->db);
	if (ts_backup_incremental(e->db, dest) != 0)
		fail_msg("incremental: %s", ts_errmsg(NULL));
	expect_copy(dest, want);
	assert_true(inode_of(copied) == own); /* from the earlier copy */
	snprintf(path, sizeof path, "%s/m/tablets", dest);
	assert_int_equal(entries(path), 2);
	expect_no_leftover(dest);

	/* the earlier copy's tablet differs in its last bytes: not taken */
	recopy(copied, 1, -10);
	if (ts_backup_incremental(e->db, dest) != 0)
		fail_msg("incremental: %s", ts_errmsg(NULL));
	expect_copy(dest, want);
	assert_true(inode_of(copied) == inode_of(db_tablet));
	free(want);

	int merged = 0;
	assert_int_equal(ts_merge(e->t, &merged), 0);
	assert_true(merged > 0);
	want = dump_all(e->db);
	if (ts_backup_incremental(e->db, dest) != 0)
		fail_msg("incremental: %s", ts_errmsg(NULL));
	expect_copy(dest, want);
	snprintf(path, sizeof path, "%s/m/tablets", dest);
	assert_int_equal(entries(path), 1); /* the merged tablet alone */
	expect_no_leftover(dest);
	assert_int_equal(entries(outside), 1); /* no earlier copy left aside */
	free(want);
	free(dest);
}

/* A destination that is no copy -- a directory holding anything but
 * tables, or a file -- is refused and left as it was. */
static void backup_incremental_refuses_what_is_no_copy(void **state)
{
	ts_test_env *e = *state;
	char *dest = path_in(outside, "mine"), *inside = path_in(dest, "keep");
	fill(e);
	make_mine(dest, inside);
	assert_int_equal(ts_backup_incremental(e->db, dest), TS_EINVAL);
	assert_non_null(strstr(ts_errmsg(NULL), "is not a copy of a database"));
	expect_mine(dest, inside);
	assert_int_equal(ts_backup_incremental(e->db, inside), TS_EINVAL); /* a file */
	assert_non_null(strstr(ts_errmsg(NULL), "is not a directory"));
	expect_mine(dest, inside);
	expect_no_leftover(dest);
	assert_int_equal(entries(outside), 1);
	free(inside);
	free(dest);
}

int main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
	const struct CMUnitTest tests[] = {
		T(backup_sound_database_round_trip),
		T(backup_without_a_usable_head),
		T(backup_onto_existing_dest_fails),
		T(backup_beside_writer_holds_prefix),
		T(backup_refuses_dest_inside),
		T(backup_incremental_takes_the_earlier_tablets),
		T(backup_incremental_refuses_what_is_no_copy),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
