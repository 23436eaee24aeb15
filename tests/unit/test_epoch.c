/*
 * test_epoch.c -- the EPOCH file (docs/epoch-format.md) through the
 * public API: a new database gets one (epoch 1, a lineage of its own),
 * a reopen keeps it, ts_epoch_raise makes the next epoch durable and
 * visible to read-only handles, a damaged file fails the read-write
 * open and is a problem of ts_check, a missing one (a database made
 * before the file) is created by the next writer, ts_backup and
 * ts_backup_incremental carry it into the copy, and a fence
 * (ts_epoch_fence) is kept until an adopt or a raise ends it.
 */
#include <fcntl.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "crc32c.h"
#include "support.h"

#define NOW INT64_C(1795262400000000000) /* 2026-11-21T12:00:00Z */
#define EPOCH_SIZE 48                    /* docs/epoch-format.md, version 1 */
#define EPOCH_FENCED_SIZE 56             /* version 2 */

static int setup(void **state)
{
	*state = ts_test_env_new(NOW, TS_OPEN_NOMERGE);
	return 0;
}

static ts_db *open_db(const char *dir, unsigned flags)
{
	ts_options o;
	ts_db *db = NULL;
	ts_options_init(&o);
	o.flags = flags;
	o.sync = TS_SYNC_NONE;
	assert_int_equal(ts_open(dir, &o, &db), 0);
	return db;
}

/* The file's bytes; their count must be n (EPOCH_SIZE: version 1,
 * EPOCH_FENCED_SIZE: version 2). */
static void read_epoch_bytes(const char *dir, unsigned char *b, size_t n)
{
	char *p = ts_test_path(dir, "EPOCH");
	int fd = open(p, O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(read(fd, b, n + 1), n);
	close(fd);
	free(p);
}

static void read_epoch_file(const char *dir, unsigned char *b)
{
	read_epoch_bytes(dir, b, EPOCH_SIZE);
}

static void read_fenced_file(const char *dir, unsigned char *b)
{
	read_epoch_bytes(dir, b, EPOCH_FENCED_SIZE);
}

/* Flip one bit of the file at offset off. */
static void flip(const char *dir, long off)
{
	char *p = ts_test_path(dir, "EPOCH");
	ts_test_flip(p, off, 0x10);
	free(p);
}

static void remove_epoch(const char *dir)
{
	char *p = ts_test_path(dir, "EPOCH");
	assert_int_equal(unlink(p), 0);
	free(p);
}

static void expect_epoch(ts_db *db, const ts_epoch *want)
{
	ts_epoch got;
	assert_int_equal(ts_epoch_get(db, &got), 0);
	assert_memory_equal(got.lineage, want->lineage, TS_LINEAGE_SIZE);
	assert_int_equal(got.epoch, want->epoch);
}

/* A new database: epoch 1, a non-zero lineage, the bytes of the format
 * table; a second database has another lineage; a reopen keeps it. */
static void epoch_new_database(void **state)
{
	ts_test_env *e = *state;
	static const unsigned char zero[TS_LINEAGE_SIZE];
	unsigned char b[EPOCH_SIZE + 1];
	ts_epoch first, other;
	assert_int_equal(ts_epoch_get(e->db, &first), 0);
	assert_int_equal(first.epoch, 1);
	assert_memory_not_equal(first.lineage, zero, TS_LINEAGE_SIZE);
	read_epoch_file(e->dir, b);
	assert_memory_equal(b, "TSEPOCH1", 8);
	assert_int_equal(b[8], 1); /* version 1, little-endian */
	assert_memory_equal(b + 16, first.lineage, TS_LINEAGE_SIZE);
	assert_int_equal(b[32], 1); /* epoch */
	assert_memory_equal(b + 33, zero, 7);
	ts_test_env_reopen(e);
	expect_epoch(e->db, &first);

	char *dir = ts_test_tmpdir(), *sub = ts_test_path(dir, "db2");
	ts_db *db2 = open_db(sub, TS_OPEN_CREATE);
	assert_int_equal(ts_epoch_get(db2, &other), 0);
	assert_int_equal(other.epoch, 1);
	assert_memory_not_equal(other.lineage, first.lineage, TS_LINEAGE_SIZE);
	assert_int_equal(ts_close(db2), 0);
	free(sub);
	ts_test_rmdir(dir);
}

/* ts_epoch_raise: epoch 2 then 3, the lineage kept, a read-only handle
 * opened before sees each at its next ts_epoch_get, a reopen keeps the
 * last; a read-only handle cannot raise. */
static void epoch_raise_is_durable(void **state)
{
	ts_test_env *e = *state;
	ts_epoch before, raised;
	ts_db *ro = open_db(e->dir, TS_OPEN_READONLY);
	assert_int_equal(ts_epoch_get(e->db, &before), 0);
	expect_epoch(ro, &before);
	assert_int_equal(ts_epoch_raise(e->db, &raised), 0);
	assert_int_equal(raised.epoch, 2);
	assert_memory_equal(raised.lineage, before.lineage, TS_LINEAGE_SIZE);
	expect_epoch(e->db, &raised);
	expect_epoch(ro, &raised);
	assert_int_equal(ts_epoch_raise(e->db, NULL), 0);
	raised.epoch = 3;
	expect_epoch(ro, &raised);
	assert_int_equal(ts_epoch_raise(ro, NULL), TS_EREADONLY);
	expect_epoch(ro, &raised);
	assert_int_equal(ts_close(ro), 0);
	ts_test_env_reopen(e);
	expect_epoch(e->db, &raised);
}

/* A damaged EPOCH -- each field in turn -- fails the read-write open
 * naming the file and how, is TS_ECORRUPT (TS_EVERSION for a version)
 * to a read-only handle, and is the one problem of a check of the whole
 * database, reported as table "" and file "EPOCH"; a check of one table
 * does not read it. */
struct problems {
	int n;
	char table[64], file[64], what[256];
};

static void note(void *arg, const char *table, const char *file, const char *what)
{
	struct problems *p = arg;
	if (p->n++ == 0) {
		snprintf(p->table, sizeof p->table, "%s", table);
		snprintf(p->file, sizeof p->file, "%s", file);
		snprintf(p->what, sizeof p->what, "%s", what);
	}
}

static void expect_damaged(ts_test_env *e, long off, int code, const char *what)
{
	ts_options o;
	ts_db *db = NULL, *ro;
	ts_epoch got;
	struct problems p = {0};
	ts_check_opts co = {.problem = note, .arg = &p};
	flip(e->dir, off);
	ts_options_init(&o);
	o.sync = TS_SYNC_NONE;
	assert_int_equal(ts_open(e->dir, &o, &db), code);
	assert_null(db);
	assert_non_null(strstr(ts_errmsg(NULL), "/EPOCH: "));
	assert_non_null(strstr(ts_errmsg(NULL), what));
	ro = open_db(e->dir, TS_OPEN_READONLY);
	assert_int_equal(ts_epoch_get(ro, &got), code);
	assert_int_equal(ts_check(ro, "m", &co), 0);
	assert_int_equal(p.n, 0);
	assert_int_equal(ts_check(ro, NULL, &co), TS_ECORRUPT);
	assert_int_equal(p.n, 1);
	assert_string_equal(p.table, "");
	assert_string_equal(p.file, "EPOCH");
	assert_string_equal(p.what, what);
	assert_int_equal(ts_close(ro), 0);
	flip(e->dir, off); /* back */
	ts_test_env_open(e);
}

static void epoch_damaged_file(void **state)
{
	ts_test_env *e = *state;
	ts_test_env_close(e);
	expect_damaged(e, 0, TS_ECORRUPT, "bad magic");
	ts_test_env_close(e);
	expect_damaged(e, 20, TS_ECORRUPT, "checksum mismatch"); /* the lineage */
	ts_test_env_close(e);
	expect_damaged(e, 33, TS_ECORRUPT, "checksum mismatch"); /* the epoch */
	ts_test_env_close(e);
	expect_damaged(e, 40, TS_ECORRUPT, "checksum mismatch"); /* the CRC */
	ts_test_env_close(e);
	expect_damaged(e, 44, TS_ECORRUPT, "reserved bytes not 0");
}

/* Write b[0..n) as dir's EPOCH, the CRC at crc made to match first. */
static void write_epoch_file(const char *dir, unsigned char *b, size_t n, size_t crc)
{
	char *p = ts_test_path(dir, "EPOCH");
	uint32_t sum = ts__crc32c(0, b, crc);
	memcpy(b + crc, &sum, 4);
	FILE *f = fopen(p, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(b, 1, n, f), n);
	assert_int_equal(fclose(f), 0);
	free(p);
}

/* A version this build does not know, a version in the other's size, or
 * a file of another size. */
static void epoch_other_version_or_size(void **state)
{
	ts_test_env *e = *state;
	unsigned char b[EPOCH_FENCED_SIZE + 1] = {0};
	char *p = ts_test_path(e->dir, "EPOCH");
	ts_epoch got;
	ts_test_env_close(e);
	read_epoch_file(e->dir, b);
	ts_db *ro = open_db(e->dir, TS_OPEN_READONLY);
	b[8] = 3; /* version 3, the CRC made to match */
	write_epoch_file(e->dir, b, EPOCH_SIZE, 40);
	assert_int_equal(ts_epoch_get(ro, &got), TS_EVERSION);
	assert_non_null(strstr(ts_errmsg(NULL), "format version 3, this build reads 1 and 2"));
	b[8] = 2; /* version 2 is 56 bytes */
	write_epoch_file(e->dir, b, EPOCH_SIZE, 40);
	assert_int_equal(ts_epoch_get(ro, &got), TS_ECORRUPT);
	assert_non_null(strstr(ts_errmsg(NULL), "format version 2 in 48 bytes, want 56"));
	b[8] = 1; /* version 1 is 48 */
	write_epoch_file(e->dir, b, EPOCH_FENCED_SIZE, 48);
	assert_int_equal(ts_epoch_get(ro, &got), TS_ECORRUPT);
	assert_non_null(strstr(ts_errmsg(NULL), "format version 1 in 56 bytes, want 48"));
	write_epoch_file(e->dir, b, EPOCH_FENCED_SIZE + 1, 48);
	assert_int_equal(ts_epoch_get(ro, &got), TS_ECORRUPT);
	assert_non_null(strstr(ts_errmsg(NULL), "more than 56 bytes"));
	assert_int_equal(truncate(p, 49), 0);
	assert_int_equal(ts_epoch_get(ro, &got), TS_ECORRUPT);
	assert_non_null(strstr(ts_errmsg(NULL), "49 bytes, want 48 or 56"));
	assert_int_equal(truncate(p, 47), 0);
	assert_int_equal(ts_epoch_get(ro, &got), TS_ECORRUPT);
	assert_non_null(strstr(ts_errmsg(NULL), "47 bytes, want 48 or 56"));
	assert_int_equal(ts_close(ro), 0);
	free(p);
}

static void expect_fence(ts_db *db, uint64_t epoch, uint64_t fenced_by)
{
	ts_epoch got;
	uint64_t newer = 99;
	assert_int_equal(ts_epoch_get(db, &got), 0);
	assert_int_equal(got.epoch, epoch);
	assert_int_equal(ts_epoch_fenced_by(db, &newer), 0);
	assert_int_equal(newer, fenced_by);
}

/* ts_epoch_fence: a newer epoch recorded durably in format version 2
 * (the bytes of the table), seen by read-only handles, kept by a reopen
 * and a backup, passing check; an epoch not above the epoch or the
 * fence changes nothing; ts_epoch_raise goes past the fence and ends
 * it (the file version 1 again). */
static void epoch_fence_is_durable(void **state)
{
	ts_test_env *e = *state;
	unsigned char b[EPOCH_FENCED_SIZE + 1];
	ts_epoch first, got;
	char *out = ts_test_tmpdir(), *dest = ts_test_path(out, "copy");
	assert_int_equal(ts_epoch_get(e->db, &first), 0);
	expect_fence(e->db, 1, 0);
	assert_int_equal(ts_epoch_fence(e->db, 1), 0); /* not above the epoch */
	expect_fence(e->db, 1, 0);
	read_epoch_file(e->dir, b); /* still 48 bytes, version 1 */
	assert_int_equal(b[8], 1);

	ts_db *ro = open_db(e->dir, TS_OPEN_READONLY);
	assert_int_equal(ts_epoch_fence(e->db, 3), 0);
	expect_fence(e->db, 1, 3);
	expect_fence(ro, 1, 3);
	read_fenced_file(e->dir, b);
	assert_memory_equal(b, "TSEPOCH1", 8);
	assert_int_equal(b[8], 2); /* version 2 */
	assert_memory_equal(b + 16, first.lineage, TS_LINEAGE_SIZE);
	assert_int_equal(b[32], 1); /* epoch */
	assert_int_equal(b[40], 3); /* fenced_by */
	uint32_t crc = ts__crc32c(0, b, 48);
	assert_memory_equal(b + 48, &crc, 4);
	assert_int_equal(ts_epoch_fence(e->db, 2), 0); /* below the fence */
	expect_fence(ro, 1, 3);
	assert_int_equal(ts_epoch_fence(ro, 5), TS_EREADONLY);
	assert_int_equal(ts_check(ro, NULL, NULL), 0);
	ts_test_env_reopen(e);
	expect_fence(e->db, 1, 3);
	assert_int_equal(ts_backup(e->db, dest), 0);
	ts_db *copy = open_db(dest, TS_OPEN_READONLY);
	expect_fence(copy, 1, 3);
	assert_int_equal(ts_close(copy), 0);

	assert_int_equal(ts_epoch_raise(e->db, &got), 0); /* past epoch 3 */
	assert_int_equal(got.epoch, 4);
	assert_memory_equal(got.lineage, first.lineage, TS_LINEAGE_SIZE);
	expect_fence(ro, 4, 0);
	read_epoch_file(e->dir, b);
	assert_int_equal(b[8], 1);
	assert_int_equal(b[32], 4);
	assert_int_equal(ts_close(ro), 0);
	ts_test_env_reopen(e);
	expect_fence(e->db, 4, 0);
	free(dest);
	ts_test_rmdir(out);
}

/* Adopting an epoch of the lineage below the fence keeps it; adopting
 * the fence's epoch or a newer one ends it, through ts_epoch_adopt and
 * a standby's ts_standby_adopt. */
static void epoch_adopt_ends_fence(void **state)
{
	ts_test_env *e = *state;
	ts_epoch mine, to;
	ts_standby *sb = NULL;
	assert_int_equal(ts_epoch_fence(e->db, 4), 0);
	assert_int_equal(ts_epoch_get(e->db, &mine), 0);
	to = mine;
	to.epoch = 3;
	assert_int_equal(ts_epoch_adopt(e->db, &to), 0);
	expect_fence(e->db, 3, 4);
	to.epoch = 4;
	assert_int_equal(ts_epoch_adopt(e->db, &to), 0);
	expect_fence(e->db, 4, 0);
	assert_int_equal(ts_epoch_adopt(e->db, &to), 0);
	expect_fence(e->db, 4, 0);

	/* a stale primary's directory made a standby's: following the
	 * newer primary ends the fence */
	assert_int_equal(ts_epoch_fence(e->db, 6), 0);
	ts_test_env_close(e);
	assert_int_equal(ts_standby_open(e->dir, &sb), 0);
	to.epoch = 5;
	assert_int_equal(ts_standby_adopt(sb, &to), 0);
	ts_db *ro = open_db(e->dir, TS_OPEN_READONLY);
	expect_fence(ro, 5, 6);
	to.epoch = 7;
	assert_int_equal(ts_standby_adopt(sb, &to), 0);
	expect_fence(ro, 7, 0);
	assert_int_equal(ts_close(ro), 0);
	assert_int_equal(ts_standby_close(sb), 0);
	ts_test_env_open(e);
	expect_fence(e->db, 7, 0);
}

/* A fenced file damaged: each field of version 2 in turn. */
static void epoch_fenced_damaged(void **state)
{
	ts_test_env *e = *state;
	unsigned char b[EPOCH_FENCED_SIZE + 1];
	ts_epoch got;
	assert_int_equal(ts_epoch_fence(e->db, 2), 0);
	ts_test_env_close(e);
	expect_damaged(e, 41, TS_ECORRUPT, "checksum mismatch"); /* fenced_by */
	ts_test_env_close(e);
	expect_damaged(e, 48, TS_ECORRUPT, "checksum mismatch"); /* the CRC */
	ts_test_env_close(e);
	expect_damaged(e, 52, TS_ECORRUPT, "reserved bytes not 0");
	ts_test_env_close(e);
	read_fenced_file(e->dir, b);
	b[40] = 1; /* fenced by the epoch itself */
	write_epoch_file(e->dir, b, EPOCH_FENCED_SIZE, 48);
	ts_db *ro = open_db(e->dir, TS_OPEN_READONLY);
	assert_int_equal(ts_epoch_get(ro, &got), TS_ECORRUPT);
	assert_non_null(strstr(ts_errmsg(NULL), "fenced by epoch 1, not above the epoch 1"));
	assert_int_equal(ts_close(ro), 0);
	b[40] = 2;
	write_epoch_file(e->dir, b, EPOCH_FENCED_SIZE, 48);
	ts_test_env_open(e);
	expect_fence(e->db, 1, 2);
}

/* A database made before EPOCH existed: no lineage to a read-only
 * handle, no problem to ts_check; the next writer gives it a new
 * lineage at epoch 1. */
static void epoch_missing_file(void **state)
{
	ts_test_env *e = *state;
	ts_epoch old, got;
	assert_int_equal(ts_epoch_raise(e->db, &old), 0);
	ts_test_env_close(e);
	remove_epoch(e->dir);
	ts_db *ro = open_db(e->dir, TS_OPEN_READONLY);
	assert_int_equal(ts_epoch_get(ro, &got), TS_ENOENT);
	assert_int_equal(ts_check(ro, NULL, NULL), 0);
	assert_int_equal(ts_close(ro), 0);
	ts_test_env_open(e);
	assert_int_equal(ts_epoch_get(e->db, &got), 0);
	assert_int_equal(got.epoch, 1);
	assert_memory_not_equal(got.lineage, old.lineage, TS_LINEAGE_SIZE);
}

/* ts_backup copies the lineage and epoch; an incremental backup takes a
 * copy holding EPOCH as a copy, and carries a raised epoch; a backup
 * from a read-only handle of a database without the file has none. */
static void epoch_backup_carries_it(void **state)
{
	ts_test_env *e = *state;
	char *out = ts_test_tmpdir(), *dest = ts_test_path(out, "copy");
	ts_epoch want;
	assert_int_equal(ts_epoch_raise(e->db, &want), 0);
	assert_int_equal(ts_backup(e->db, dest), 0);
	ts_db *copy = open_db(dest, TS_OPEN_READONLY);
	expect_epoch(copy, &want);
	assert_int_equal(ts_check(copy, NULL, NULL), 0);
	assert_int_equal(ts_epoch_raise(e->db, &want), 0);
	assert_int_equal(ts_backup_incremental(e->db, dest), 0);
	expect_epoch(copy, &want);
	assert_int_equal(ts_close(copy), 0);

	ts_test_env_close(e);
	remove_epoch(e->dir);
	ts_db *ro = open_db(e->dir, TS_OPEN_READONLY);
	assert_int_equal(ts_backup_incremental(ro, dest), 0);
	assert_int_equal(ts_close(ro), 0);
	copy = open_db(dest, TS_OPEN_READONLY);
	assert_int_equal(ts_epoch_get(copy, &want), TS_ENOENT);
	assert_int_equal(ts_close(copy), 0);
	ts_test_env_open(e);
	free(dest);
	ts_test_rmdir(out);
}

/* ts_epoch_adopt: an empty database takes another lineage (durably);
 * within its lineage the epoch stays or goes up, never down; a database
 * with tables keeps its lineage; a read-only handle adopts nothing. */
static void epoch_adopt(void **state)
{
	ts_test_env *e = *state;
	char *dir = ts_test_tmpdir(), *sub = ts_test_path(dir, "standby");
	ts_epoch primary;
	assert_int_equal(ts_epoch_raise(e->db, &primary), 0); /* epoch 2 */
	ts_db *sb = open_db(sub, TS_OPEN_CREATE);
	assert_int_equal(ts_epoch_adopt(sb, &primary), 0);
	expect_epoch(sb, &primary);
	assert_int_equal(ts_close(sb), 0);
	sb = open_db(sub, 0);
	expect_epoch(sb, &primary);
	primary.epoch = 1;
	assert_int_equal(ts_epoch_adopt(sb, &primary), TS_EINVAL);
	assert_non_null(strstr(ts_errmsg(NULL), "epochs never go down"));
	primary.epoch = 3;
	assert_int_equal(ts_epoch_adopt(sb, &primary), 0);
	expect_epoch(sb, &primary);
	primary.epoch = 0;
	assert_int_equal(ts_epoch_adopt(sb, &primary), TS_EINVAL);
	assert_int_equal(ts_close(sb), 0);
	/* e's database holds table m: it keeps its lineage */
	ts_epoch other = primary, mine;
	other.lineage[0] ^= 1;
	other.epoch = 9;
	assert_int_equal(ts_epoch_get(e->db, &mine), 0);
	assert_int_equal(ts_epoch_adopt(e->db, &other), TS_EINVAL);
	assert_non_null(strstr(ts_errmsg(NULL), "a standby starts empty"));
	expect_epoch(e->db, &mine);
	ts_db *ro = open_db(sub, TS_OPEN_READONLY);
	assert_int_equal(ts_epoch_adopt(ro, &other), TS_EREADONLY);
	assert_int_equal(ts_close(ro), 0);
	free(sub);
	ts_test_rmdir(dir);
}

#define T(f) cmocka_unit_test_setup_teardown(f, setup, ts_test_env_teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(epoch_new_database),
		T(epoch_raise_is_durable),
		T(epoch_damaged_file),
		T(epoch_other_version_or_size),
		T(epoch_missing_file),
		T(epoch_backup_carries_it),
		T(epoch_adopt),
		T(epoch_fence_is_durable),
		T(epoch_adopt_ends_fence),
		T(epoch_fenced_damaged),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
