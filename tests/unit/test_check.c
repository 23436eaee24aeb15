/*
 * test_check.c -- ts_check: a sound database passes (read-write and
 * read-only handles, one table or all, progress up to the total); every
 * kind of damage is found and named by its file -- a flipped byte at
 * every position of a small tablet's header, blocks, footer and trailer,
 * damaged blocks reported one by one, a tablet gone, a truncated log
 * segment, a flipped byte anywhere in the committed log, a damaged
 * DESCRIPTOR, a quarantined tablet -- while garbage after the recorded
 * head is not damage; and a check beside a writer that inserts, flushes
 * and merges never reports a problem.
 */
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

#include "buf.h"
#include "crc32c.h"
#include "descriptor.h"
#include "log.h"
#include "log_format.h"
#include "support.h"
#include "tablet.h"
#include "tablet_format.h"

#define NOW INT64_C(1795262400000000000) /* 2026-11-21T12:00:00Z */
#define SEC INT64_C(1000000000)
#define HOUR (3600 * SEC)

/* ---- problems, as ts_check reports them ---- */

#define MAX_PROBLEMS 64

struct found {
	int n;
	char file[MAX_PROBLEMS][256];
	char what[MAX_PROBLEMS][512];
	uint64_t done, total;
	int calls, backwards;
};

static void on_problem(void *arg, const char *table, const char *file, const char *what)
{
	struct found *f = arg;
	assert_string_equal(table, "m");
	if (f->n < MAX_PROBLEMS) {
		snprintf(f->file[f->n], sizeof f->file[0], "%s", file);
		snprintf(f->what[f->n], sizeof f->what[0], "%s", what);
	}
	f->n++;
}

static void on_progress(void *arg, uint64_t done, uint64_t total)
{
	struct found *f = arg;
	if (done < f->done || done > total)
		f->backwards++;
	f->done = done;
	f->total = total;
	f->calls++;
}

static int check(ts_db *db, const char *table, struct found *f)
{
	ts_check_opts o = {on_problem, on_progress, f};
	memset(f, 0, sizeof *f);
	return ts_check(db, table, &o);
}

/* Every problem names file, and at least one says what. */
static void expect_only(const struct found *f, const char *file, const char *what)
{
	int said = 0;
	if (f->n == 0)
		fail_msg("no problem reported (want %s: %s)", file, what);
	for (int i = 0; i < f->n && i < MAX_PROBLEMS; i++) {
		if (strcmp(f->file[i], file) != 0)
			fail_msg("problem %d names %s: %s (want %s)", i, f->file[i], f->what[i], file);
		said |= strstr(f->what[i], what) != NULL;
	}
	if (!said)
		fail_msg("no problem of %s says \"%s\" (first: %s)", file, what, f->what[0]);
}

/* ---- the database ---- */

static int setup(void **state)
{
	*state = ts_test_env_new(NOW, TS_OPEN_NOMERGE);
	return 0;
}

/* n rows of batch b, hosts h00..h(hosts-1), ts in the hour before NOW
 * (one 4-hour period), distinct across batches. */
static void insert_batch(ts_table *t, int b, int n, int hosts)
{
	test_row *r = calloc((size_t)n, sizeof *r);
	assert_non_null(r);
	for (int i = 0; i < n; i++) {
		snprintf(r[i].host, sizeof r[i].host, "h%02d", i % hosts);
		r[i].ts = NOW - HOUR + (int64_t)(i / hosts) * SEC + b;
		r[i].batch = b;
		r[i].v = b * 1000 + i;
	}
	if (ts_test_insert_m(t, r, (size_t)n) != 0)
		fail_msg("insert: %s", ts_errmsg(NULL));
	free(r);
}

static ts_db *open_readonly(const ts_test_env *e)
{
	ts_options o;
	ts_db *db;
	ts_options_init(&o);
	o.flags = TS_OPEN_READONLY;
	assert_int_equal(ts_open(e->dir, &o, &db), 0);
	return db;
}

/* One on-disk tablet (nrows rows) and a few batches in the log after
 * it; then the writer closes and a read-only handle is returned. */
static ts_db *sound_database(ts_test_env *e, int nrows, int hosts)
{
	insert_batch(e->t, 1, nrows, hosts);
	assert_int_equal(ts_flush(e->t, INT64_MAX), 0);
	for (int b = 2; b <= 4; b++)
		insert_batch(e->t, b, 20, 4);
	ts_test_env_close(e);
	return open_readonly(e);
}

/* The path of the table's only tablet, and the tablet opened. */
static ts__tablet *only_tablet(const ts_test_env *e, char *path, size_t size, char *rel)
{
	char dir[256], name[64];
	ts__descriptor *d;
	ts__tablet *t;
	assert_true(strlen(e->dir) < 200);
	snprintf(dir, sizeof dir, "%s/m", e->dir);
	assert_int_equal(ts__descriptor_read(dir, &d), 0);
	assert_int_equal(d->ntablets, 1);
	assert_int_equal(ts__tablet_name(d->tablets[0].id, name, sizeof name), 0);
	snprintf(path, size, "%s/tablets/%s", dir, name);
	snprintf(rel, 256, "m/tablets/%s", name);
	assert_int_equal(ts__tablet_open(path, d->tablets[0].id, &t), 0);
	ts__descriptor_free(d, 1);
	return t;
}

static void flip(const char *path, off_t at)
{
	ts_test_flip(path, (long)at, 0x5a);
}

/* Flip each byte of [from, to) in turn: the check fails naming file and
 * saying what; flipped back, it passes again. */
static void flip_each(ts_db *db, const char *path, const char *file, off_t from, off_t to,
                      const char *what)
{
	struct found f;
	assert_true(from < to);
	for (off_t at = from; at < to; at++) {
		flip(path, at);
		int rc = check(db, NULL, &f);
		if (rc != TS_ECORRUPT)
			fail_msg("byte %lld flipped: got %d (%s)", (long long)at, rc, ts_errmsg(NULL));
		expect_only(&f, file, what);
		flip(path, at);
	}
	assert_int_equal(check(db, NULL, &f), 0);
}

/* ---- tests ---- */

static void check_sound_database_passes(void **state)
{
	ts_test_env *e = *state;
	struct found f;
	insert_batch(e->t, 1, 300, 10);
	assert_int_equal(ts_flush(e->t, INT64_MAX), 0);
	insert_batch(e->t, 2, 300, 10);
	assert_int_equal(check(e->db, NULL, &f), 0); /* read-write, open */
	assert_int_equal(f.n, 0);
	assert_int_equal(check(e->db, "m", &f), 0);
	assert_int_equal(f.n, 0);
	assert_true(f.calls >= 2);
	assert_int_equal(f.backwards, 0);
	assert_int_equal(f.done, f.total);
	assert_true(f.total > 1000); /* the tablet and the log */
	ts_test_env_close(e);
	ts_db *db = open_readonly(e);
	assert_int_equal(check(db, NULL, &f), 0); /* read-only, writer gone */
	assert_int_equal(f.n, 0);
	assert_int_equal(ts_check(db, NULL, NULL), 0);
	assert_int_equal(ts_close(db), 0);
}

static void check_unknown_table(void **state)
{
	ts_test_env *e = *state;
	struct found f;
	assert_int_equal(check(e->db, "nope", &f), TS_ENOENT);
	assert_int_equal(check(e->db, "no-pe", &f), TS_EINVAL);
	assert_int_equal(f.n, 0);
}

static void check_flipped_tablet_header(void **state)
{
	char path[512], rel[256];
	ts_db *db = sound_database(*state, 40, 4);
	ts__tablet *t = only_tablet(*state, path, sizeof path, rel);
	flip_each(db, path, rel, 0, TS_TABH_SIZE, "header");
	ts__tablet_close(t);
	ts_close(db);
}

static void check_flipped_tablet_block(void **state)
{
	char path[512], rel[256];
	ts_db *db = sound_database(*state, 40, 4);
	ts__tablet *t = only_tablet(*state, path, sizeof path, rel);
	assert_int_equal(t->nblocks, 1);
	const ts__tablet_block *b = &t->blocks[0];
	flip_each(db, path, rel, TS_TABH_SIZE, (off_t)(b->offset + TS_BLKH_SIZE + b->stored),
	          "block 0");
	ts__tablet_close(t);
	ts_close(db);
}

static void check_flipped_tablet_footer(void **state)
{
	char path[512], rel[256];
	ts_db *db = sound_database(*state, 40, 4);
	ts__tablet *t = only_tablet(*state, path, sizeof path, rel);
	const ts__tablet_block *b = &t->blocks[t->nblocks - 1];
	flip_each(db, path, rel, (off_t)(b->offset + TS_BLKH_SIZE + b->stored),
	          (off_t)(t->size - TS_TABT_SIZE), "damaged footer");
	ts__tablet_close(t);
	ts_close(db);
}

static void check_flipped_tablet_trailer(void **state)
{
	char path[512], rel[256];
	ts_db *db = sound_database(*state, 40, 4);
	ts__tablet *t = only_tablet(*state, path, sizeof path, rel);
	flip_each(db, path, rel, (off_t)(t->size - TS_TABT_SIZE), (off_t)t->size, "trailer");
	ts__tablet_close(t);
	ts_close(db);
}

/* Two damaged blocks of one tablet: both reported, nothing else (the
 * blocks after each and the footer are still checked). */
static void check_reports_every_damaged_block(void **state)
{
	char path[512], rel[256];
	struct found f;
	ts_db *db = sound_database(*state, 3000, 30);
	ts__tablet *t = only_tablet(*state, path, sizeof path, rel);
	assert_true(t->nblocks >= 4);
	flip(path, (off_t)(t->blocks[1].offset + TS_BLKH_SIZE + t->blocks[1].stored / 2));
	flip(path, (off_t)(t->blocks[3].offset + TS_BLKH_SIZE));
	assert_int_equal(check(db, NULL, &f), TS_ECORRUPT);
	assert_int_equal(f.n, 2);
	assert_string_equal(f.file[0], rel);
	assert_string_equal(f.what[0], "damaged block 1: checksum mismatch");
	assert_string_equal(f.file[1], rel);
	assert_string_equal(f.what[1], "damaged block 3: checksum mismatch");
	char want[600];
	snprintf(want, sizeof want, "2 problems found; the first: %s: damaged block 1: checksum mismatch",
	         rel);
	assert_string_equal(ts_errmsg(NULL), want);
	ts__tablet_close(t);
	ts_close(db);
}

/* Rewrite the tablet at path with its footer stored raw, after edit
 * changed byte `at` of the raw footer (xor mask), every checksum made
 * to match: damage that only a comparison with the blocks can find. */
static void rewrite_footer(const char *path, size_t at, unsigned char mask)
{
	ts__tablet *t;
	char name[64];
	const char *slash = strrchr(path, '/');
	uint64_t id = strtoull(slash + 1, NULL, 16);
	snprintf(name, sizeof name, "%s", slash + 1);
	assert_int_equal(ts__tablet_open(path, id, &t), 0);
	const ts__tablet_block *b = &t->blocks[t->nblocks - 1];
	uint64_t off = b->offset + TS_BLKH_SIZE + b->stored;
	unsigned char tr[TS_TABT_SIZE];
	int fd = open(path, O_RDWR);
	assert_true(fd >= 0);
	assert_int_equal(pread(fd, tr, sizeof tr, (off_t)(t->size - TS_TABT_SIZE)), TS_TABT_SIZE);
	uint32_t raw = ts__load_u32(tr + TS_TABT_OFF_RAW);
	unsigned char *f = malloc(raw);
	assert_non_null(f);
	memcpy(f, t->footer, raw);
	assert_true(at < raw);
	f[at] ^= mask;
	ts__store_u32(tr + TS_TABT_OFF_STORED, raw);
	ts__store_u32(tr + TS_TABT_OFF_FOOTER_CRC, ts__crc32c(0, f, raw));
	tr[TS_TABT_OFF_CODEC] = TS_CODEC_RAW;
	ts__store_u32(tr + TS_TABT_OFF_CRC, ts__crc32c(0, tr, TS_TABT_OFF_CRC));
	assert_int_equal(ftruncate(fd, (off_t)off), 0);
	assert_int_equal(pwrite(fd, f, raw, (off_t)off), (ssize_t)raw);
	assert_int_equal(pwrite(fd, tr, sizeof tr, (off_t)(off + raw)), TS_TABT_SIZE);
	close(fd);
	free(f);
	ts__tablet_close(t);
}

/* A footer whose checksums hold but whose contents disagree with the
 * blocks: each disagreement found (and the file's new size). */
static void check_footer_disagreeing_with_blocks(void **state)
{
	char path[512], rel[256], copy[600];
	struct found f;
	ts_db *db = sound_database(*state, 400, 10);
	ts__tablet *t = only_tablet(*state, path, sizeof path, rel);
	size_t rows_at = 12, bloom_at = (size_t)(t->bloom - t->footer);
	size_t stats_at = (size_t)(t->blocks[0].stats - t->footer);
	ts__tablet_close(t);
	snprintf(copy, sizeof copy, "%s.orig", path);
	assert_int_equal(link(path, copy), 0);
	const struct {
		size_t at;
		unsigned char mask;
		const char *what;
		int problems; /* with the size, and the rows of the DESCRIPTOR */
	} cases[] = {
		{rows_at, 0x01, "damaged footer: row count differs from the blocks", 3},
		{bloom_at, 0xff, "damaged footer: Bloom filter differs from the keys", 2},
		{stats_at, 0x01, "damaged block 0: statistics differ from the index", 2},
	};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		char tmp[700];
		snprintf(tmp, sizeof tmp, "%s.tmp", path);
		int in = open(copy, O_RDONLY), out = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		char buf[1 << 16];
		ssize_t n;
		while ((n = read(in, buf, sizeof buf)) > 0)
			assert_int_equal(write(out, buf, (size_t)n), n);
		close(in);
		close(out);
		assert_int_equal(rename(tmp, path), 0);
		rewrite_footer(path, cases[i].at, cases[i].mask);
		assert_int_equal(check(db, NULL, &f), TS_ECORRUPT);
		expect_only(&f, rel, cases[i].what);
		expect_only(&f, rel, "bytes; the DESCRIPTOR says"); /* the raw footer's size */
		assert_int_equal(f.n, cases[i].problems);
	}
	ts_close(db);
}

static void check_missing_tablet(void **state)
{
	char path[512], rel[256];
	struct found f;
	ts_db *db = sound_database(*state, 40, 4);
	ts__tablet *t = only_tablet(*state, path, sizeof path, rel);
	ts__tablet_close(t);
	assert_int_equal(unlink(path), 0);
	assert_int_equal(check(db, NULL, &f), TS_ECORRUPT);
	assert_int_equal(f.n, 1);
	assert_string_equal(f.file[0], rel);
	assert_string_equal(f.what[0], "missing: the DESCRIPTOR names it");
	ts_close(db);
}

static void check_damaged_descriptor(void **state)
{
	ts_test_env *e = *state;
	char path[512];
	struct stat st;
	ts_db *db = sound_database(e, 40, 4);
	snprintf(path, sizeof path, "%s/m/DESCRIPTOR", e->dir);
	assert_int_equal(stat(path, &st), 0);
	flip_each(db, path, "m/DESCRIPTOR", 0, 8, "bad magic");
	flip_each(db, path, "m/DESCRIPTOR", 8, 24, "header checksum mismatch");
	flip_each(db, path, "m/DESCRIPTOR", 24, st.st_size, "body checksum mismatch");
	assert_int_equal(truncate(path, st.st_size - 1), 0);
	struct found f;
	assert_int_equal(check(db, NULL, &f), TS_ECORRUPT);
	assert_int_equal(f.n, 1);
	assert_string_equal(f.file[0], "m/DESCRIPTOR");
	ts_close(db);
}

/* The log position of the end of the last commit (all of the log). */
static uint64_t log_end(const char *dir)
{
	char logdir[512];
	ts__log *log;
	snprintf(logdir, sizeof logdir, "%s/m/log", dir);
	assert_int_equal(ts__log_open_verify(logdir, &log), 0);
	ts__log_walk w = {0};
	ts__log_walk_commits(log, &w);
	ts__log_close(log, 0);
	assert_true(w.commits >= 3);
	return w.stop;
}

static void check_truncated_log_segment(void **state)
{
	ts_test_env *e = *state;
	char path[512];
	struct found f;
	ts_db *db = sound_database(e, 40, 4);
	uint64_t end = log_end(e->dir);
	snprintf(path, sizeof path, "%s/m/log/0000000000000000.seg", e->dir);
	/* past the last commit: still unreadable, and so are its commits */
	assert_int_equal(truncate(path, (off_t)(TS_SEG_FILE_SIZE - 4096)), 0);
	assert_int_equal(check(db, NULL, &f), TS_ECORRUPT);
	assert_int_equal(f.n, 2);
	assert_string_equal(f.file[0], "m/log/0000000000000000.seg");
	assert_string_equal(f.what[0], "67108864 bytes, not 67112960 (truncated)");
	assert_string_equal(f.file[1], "m/log/0000000000000000.seg");
	assert_non_null(strstr(f.what[1], "is damaged (its segment file is missing or unreadable), "
	                                  "before the newest commit at"));
	/* inside the commits: the file, and the commits it held */
	assert_int_equal(truncate(path, (off_t)(TS_SEG_HEADER + end / 2)), 0);
	assert_int_equal(check(db, NULL, &f), TS_ECORRUPT);
	expect_only(&f, "m/log/0000000000000000.seg", "truncated");
	expect_only(&f, "m/log/0000000000000000.seg", "before the newest commit");
	ts_close(db);
}

/* A log's segments all have its size: a segment of 64 MiB in a log of
 * 1 MiB segments is reported (the library refuses to read it), although
 * its header and size agree with each other. */
static void check_segment_of_another_size(void **state)
{
	ts_test_env *e = *state;
	char path[512];
	unsigned char h[TS_SEG_HEADER] = {0};
	struct found f;
	ts_test_env_close(e);
	e->log_segment_size = 1 << 20;
	ts_test_env_open(e);
	ts_db *db = sound_database(e, 40, 4);
	assert_int_equal(check(db, NULL, &f), 0);
	snprintf(path, sizeof path, "%s/m/log/0000000000000007.seg", e->dir);
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0644);
	assert_true(fd >= 0);
	ts__log_segment_header(h, 7, UINT64_C(64) << 20);
	assert_int_equal(pwrite(fd, h, sizeof h, 0), (ssize_t)sizeof h);
	assert_int_equal(ftruncate(fd, (off_t)(TS_SEG_HEADER + (64 << 20))), 0);
	assert_int_equal(close(fd), 0);
	assert_int_equal(check(db, NULL, &f), TS_ECORRUPT);
	assert_int_equal(f.n, 1);
	assert_string_equal(f.file[0], "m/log/0000000000000007.seg");
	assert_non_null(strstr(f.what[0], "holds 67108864 bytes of data, the log's segments 1048576"));
	ts_close(db);
}

static void check_flipped_committed_record(void **state)
{
	ts_test_env *e = *state;
	char path[512];
	ts_db *db = sound_database(e, 40, 4);
	char dir[512];
	ts__descriptor *d;
	snprintf(dir, sizeof dir, "%s/m", e->dir);
	assert_int_equal(ts__descriptor_read(dir, &d), 0);
	uint64_t from = d->flushed_lsn, end = log_end(e->dir);
	ts__descriptor_free(d, 1);
	snprintf(path, sizeof path, "%s/m/log/0000000000000000.seg", e->dir);
	/* every byte from the flushed position to the head's end */
	flip_each(db, path, "m/log/0000000000000000.seg", (off_t)(TS_SEG_HEADER + from),
	          (off_t)(TS_SEG_HEADER + end), "before the newest commit");
	/* the segment header too */
	flip_each(db, path, "m/log/0000000000000000.seg", 0, 36, "damaged header");
	ts_close(db);
}

/* A torn batch after the recorded head is what a crash leaves: no
 * problem. */
static void check_garbage_after_head_is_sound(void **state)
{
	ts_test_env *e = *state;
	char path[512];
	struct found f;
	ts_db *db = sound_database(e, 40, 4);
	uint64_t end = log_end(e->dir);
	unsigned char junk[256];
	memset(junk, 0xa5, sizeof junk);
	memcpy(junk, "TSBH", 4);
	snprintf(path, sizeof path, "%s/m/log/0000000000000000.seg", e->dir);
	int fd = open(path, O_RDWR);
	assert_true(fd >= 0);
	assert_int_equal(pwrite(fd, junk, sizeof junk, (off_t)(TS_SEG_HEADER + end)), sizeof junk);
	close(fd);
	assert_int_equal(check(db, NULL, &f), 0);
	assert_int_equal(f.n, 0);
	ts_close(db);
}

static void check_quarantined_tablet(void **state)
{
	ts_test_env *e = *state;
	char path[512];
	struct found f;
	ts_db *db = sound_database(e, 40, 4);
	snprintf(path, sizeof path, "%s/m/quarantine", e->dir);
	assert_int_equal(mkdir(path, 0755), 0);
	snprintf(path, sizeof path, "%s/m/quarantine/0000000000000009.tab", e->dir);
	FILE *q = fopen(path, "w");
	assert_non_null(q);
	fclose(q);
	assert_int_equal(check(db, NULL, &f), TS_ECORRUPT);
	assert_int_equal(f.n, 1);
	assert_string_equal(f.file[0], "m/quarantine/0000000000000009.tab");
	assert_non_null(strstr(f.what[0], "quarantined"));
	ts_close(db);
}

/* ---- beside a writer ---- */

static int64_t mono_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

struct writer {
	ts_test_env *e;
	int stop, batches, rc;
	char msg[512];
};

/* Insert batches of 50 rows, flushing every 20 and merging every 60,
 * until stopped (no cmocka assertion in this thread: it keeps the first
 * error). */
static void *write_on(void *arg)
{
	struct writer *w = arg;
	test_row r[50];
	memset(r, 0, sizeof r);
	for (int b = 1; w->rc == 0 && !__atomic_load_n(&w->stop, __ATOMIC_RELAXED); b++) {
		for (int i = 0; i < 50; i++) {
			snprintf(r[i].host, sizeof r[i].host, "h%02d", i % 10);
			r[i].ts = NOW - HOUR + (int64_t)(i / 10) * SEC + b;
			r[i].batch = b;
		}
		w->rc = ts_test_insert_m(w->e->t, r, 50);
		if (w->rc == 0 && b % 20 == 0)
			w->rc = ts_flush(w->e->t, INT64_MAX);
		if (w->rc == 0 && b % 60 == 0)
			w->rc = ts_merge(w->e->t, NULL);
		if (w->rc < 0)
			snprintf(w->msg, sizeof w->msg, "batch %d: %s", b, ts_errmsg(NULL));
		w->batches = b;
	}
	return NULL;
}

static void check_beside_writer(void **state)
{
	ts_test_env *e = *state;
	struct writer w = {.e = e};
	struct found f;
	pthread_t th;
	ts_options o;
	ts_db *db;
	ts_options_init(&o);
	o.flags = TS_OPEN_READONLY;
	assert_int_equal(ts_open(e->dir, &o, &db), 0);
	assert_int_equal(pthread_create(&th, NULL, write_on, &w), 0);
	int checks = 0;
	for (int64_t until = mono_ns() + 1500000000; mono_ns() < until; checks++) {
		int rc = check(db, NULL, &f);
		if (rc != 0)
			fail_msg("check %d: %d, %s", checks, rc, ts_errmsg(NULL));
	}
	__atomic_store_n(&w.stop, 1, __ATOMIC_RELAXED);
	pthread_join(th, NULL);
	if (w.rc < 0)
		fail_msg("writer: %s", w.msg);
	assert_true(w.batches > 60);
	print_message("%d checks beside %d batches\n", checks, w.batches);
	assert_int_equal(check(db, NULL, &f), 0);
	assert_int_equal(check(e->db, NULL, &f), 0);
	ts_close(db);
}

/* HEAD's boot id and synced position (lib/log.c, head_commit). */
static void set_head(const char *dir, const char *boot, uint64_t synced)
{
	char path[512], b[TS_HEAD_BOOT_SIZE] = {0};
	snprintf(path, sizeof path, "%s/m/log/HEAD", dir);
	int fd = open(path, O_RDWR);
	assert_true(fd >= 0);
	if (boot) {
		strncpy(b, boot, sizeof b - 1);
		assert_int_equal(pwrite(fd, b, sizeof b, TS_HEAD_OFF_BOOT), sizeof b);
	}
	assert_int_equal(pwrite(fd, &synced, 8, TS_HEAD_OFF_SYNCED), 8);
	close(fd);
}

/* A power loss: the last commit never reached the disk, while HEAD,
 * never synced, did.  After a process crash (HEAD of this boot) that is
 * damage; after a restart of the machine (HEAD of another boot) it is
 * what the sync mode allows, unless HEAD says the log had been synced
 * past it.  Found by the power-cut rig (tests/powercut/): check and the
 * writer's recovery took HEAD's word for batches a power loss may take. */
static void check_unsynced_tail_lost_in_power_loss_is_sound(void **state)
{
	ts_test_env *e = *state;
	char path[512];
	struct found f;
	ts_db *db = sound_database(e, 40, 4);
	uint64_t end = log_end(e->dir);
	unsigned char zero[64] = {0};
	snprintf(path, sizeof path, "%s/m/log/0000000000000000.seg", e->dir);
	int fd = open(path, O_RDWR);
	assert_true(fd >= 0);
	assert_int_equal(pwrite(fd, zero, sizeof zero, (off_t)(TS_SEG_HEADER + end - sizeof zero)),
	                 sizeof zero);
	close(fd);
	setenv("TSSTORE_BOOT_ID", "this-boot", 1);
	set_head(e->dir, "this-boot", 0);
	assert_int_equal(check(db, NULL, &f), TS_ECORRUPT);
	expect_only(&f, "m/log/0000000000000000.seg", "before the newest commit");
	set_head(e->dir, "another-boot", end); /* synced past it: damage still */
	assert_int_equal(check(db, NULL, &f), TS_ECORRUPT);
	expect_only(&f, "m/log/0000000000000000.seg", "before the newest commit");
	set_head(e->dir, "another-boot", 0);
	assert_int_equal(check(db, NULL, &f), 0);
	assert_int_equal(f.n, 0);
	ts_close(db);
	/* the writer recovers without a quarantine: batches 1..3 remain */
	ts_test_env_open(e);
	test_row *rows;
	long n = ts_test_read_m(e->t, &rows);
	free(rows);
	assert_int_equal(n, 40 + 20 + 20);
	assert_int_equal(ts_test_stat(e->t, "log_quarantined_commits"), 0);
	snprintf(path, sizeof path, "%s/m/quarantine", e->dir);
	assert_int_equal(access(path, F_OK), -1);
	unsetenv("TSSTORE_BOOT_ID");
}

int main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, setup, ts_test_env_teardown)
	const struct CMUnitTest tests[] = {
		T(check_sound_database_passes),
		T(check_unknown_table),
		T(check_flipped_tablet_header),
		T(check_flipped_tablet_block),
		T(check_flipped_tablet_footer),
		T(check_flipped_tablet_trailer),
		T(check_reports_every_damaged_block),
		T(check_footer_disagreeing_with_blocks),
		T(check_missing_tablet),
		T(check_damaged_descriptor),
		T(check_truncated_log_segment),
		T(check_segment_of_another_size),
		T(check_flipped_committed_record),
		T(check_garbage_after_head_is_sound),
		T(check_unsynced_tail_lost_in_power_loss_is_sound),
		T(check_quarantined_tablet),
		T(check_beside_writer),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
