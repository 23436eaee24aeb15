/*
 * test_epoch.c -- the EPOCH file (docs/epoch-format.md) through the
 * public API: a new database gets one (epoch 1, a lineage of its own),
 * a reopen keeps it, ts_epoch_raise makes the next epoch durable and
 * visible to read-only handles, a damaged file fails the read-write
 * open and is a problem of ts_check, a missing one (a database made
 * before the file) is created by the next writer, and ts_backup and
 * ts_backup_incremental carry it into the copy.
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
#define EPOCH_SIZE 48                    /* docs/epoch-format.md */

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

/* The file's bytes; their count must be EPOCH_SIZE. */
static void read_epoch_file(const char *dir, unsigned char *b)
{
	char *p = ts_test_path(dir, "EPOCH");
	int fd = open(p, O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(read(fd, b, EPOCH_SIZE + 1), EPOCH_SIZE);
	close(fd);
	free(p);
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
	unsigned char b[EPOCH_SIZE];
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

/* A version this build does not know, or a file of another size. */
static void epoch_other_version_or_size(void **state)
{
	ts_test_env *e = *state;
	unsigned char b[EPOCH_SIZE + 1];
	char *p = ts_test_path(e->dir, "EPOCH");
	ts_epoch got;
	ts_test_env_close(e);
	read_epoch_file(e->dir, b);
	ts_db *ro = open_db(e->dir, TS_OPEN_READONLY);
	b[8] = 2; /* version 2, the CRC made to match */
	uint32_t crc = ts__crc32c(0, b, 40);
	memcpy(b + 40, &crc, 4);
	FILE *f = fopen(p, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(b, 1, EPOCH_SIZE, f), EPOCH_SIZE);
	assert_int_equal(fclose(f), 0);
	assert_int_equal(ts_epoch_get(ro, &got), TS_EVERSION);
	assert_non_null(strstr(ts_errmsg(NULL), "format version 2, this build reads 1"));
	f = fopen(p, "ab");
	assert_non_null(f);
	assert_int_equal(fputc(0, f), 0);
	assert_int_equal(fclose(f), 0);
	assert_int_equal(ts_epoch_get(ro, &got), TS_ECORRUPT);
	assert_non_null(strstr(ts_errmsg(NULL), "more than 48 bytes"));
	assert_int_equal(truncate(p, 47), 0);
	assert_int_equal(ts_epoch_get(ro, &got), TS_ECORRUPT);
	assert_non_null(strstr(ts_errmsg(NULL), "47 bytes, want 48"));
	assert_int_equal(ts_close(ro), 0);
	free(p);
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
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
