/*
 * mkseeds.c -- writes the seed corpora of fuzz_tablet and fuzz_log from
 * real files of the library: `make fuzz-seeds` runs it as
 * `mkseeds tests/fuzz`, replacing tests/fuzz/tablet/seed-* and
 * tests/fuzz/log/seed-* (findings copied there under other names stay).
 *
 * Tablets (input: flag byte, tablet file): tablets flushed from table "t"
 * of fuzz_db.h at each of its three schema versions, a small one and one
 * of several hosts and hours (blocks cut at hour boundaries), each as
 * written (LZO) and converted to raw blocks and a raw footer (to_raw), so
 * that the fuzzer's mutations land on row and footer bytes rather than on
 * compressed ones.  Every converted tablet must pass ts__tablet_check.
 *
 * Logs (input: flag byte, u64 start LSN, the log's bytes from there to
 * its tail): the log of a few batches over three periods; one with rows
 * of all three schema versions; one whose start is a flushed position;
 * and one whose batches cross from segment 0 into segment 1.
 *
 * Flag bit 0 (set in every seed) makes the targets recompute checksums.
 * The seeds are deterministic: the clock is frozen and the values come
 * from a fixed xorshift sequence.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "buf.h"
#include "crc32c.h"
#include "fsutil.h"
#include "fuzz_db.h"
#include "handle.h"
#include "log.h"
#include "log_format.h"
#include "tablet.h"
#include "tablet_format.h"

static const char *out_dir;
static uint64_t rng = 88172645463325252u;

static uint64_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static void die(const char *what, int rc)
{
	fprintf(stderr, "mkseeds: %s: %s (%s)\n", what, ts_strerror(rc), ts_errmsg(NULL));
	exit(1);
}

static void check(const char *what, int rc)
{
	if (rc < 0)
		die(what, rc);
}

/* Write out_dir/kind/seed-name: the flag byte, then head[0..hn) and p[0..n). */
static void put_seed(const char *kind, const char *name, unsigned flag, const void *head,
                     size_t hn, const void *p, size_t n)
{
	char path[1024];
	unsigned char f = (unsigned char)flag;
	snprintf(path, sizeof path, "%s/%s/seed-%s", out_dir, kind, name);
	FILE *fp = fopen(path, "wb");
	if (!fp || fwrite(&f, 1, 1, fp) != 1 || (hn && fwrite(head, hn, 1, fp) != 1) ||
	    (n && fwrite(p, n, 1, fp) != 1) || fclose(fp) != 0) {
		fprintf(stderr, "mkseeds: write %s: %s\n", path, strerror(errno));
		exit(1);
	}
	printf("%s: %zu bytes\n", path, 1 + hn + n);
}

static void *slurp(const char *path, size_t *n)
{
	void *p;
	check(path, ts__read_file(path, 1u << 30, &p, n));
	return p;
}

/* ---- a database to write with ---- */

struct env {
	char *dir;
	ts_db *db;
	ts_table *t;
	int version;
};

static void env_open(struct env *e, int version)
{
	ts_options o;
	e->dir = strdup(fuzz_tmpdir("seeds"));
	fuzz_options(&o, TS_OPEN_CREATE);
	check("open", ts_open(e->dir, &o, &e->db));
	check("create", version == 3 ? fuzz_create_all(e->db) : fuzz_create_v1(e->db));
	check("table", ts_table_open(e->db, FUZZ_TABLE, &e->t));
	e->version = version == 3 ? 3 : 1;
}

static void env_alter(struct env *e)
{
	check("alter", fuzz_alter(e->t, e->version));
	e->version++;
}

static void env_close(struct env *e)
{
	ts_table_close(e->t);
	check("close", ts_close(e->db));
	e->t = NULL;
	e->db = NULL;
}

static void env_free(struct env *e)
{
	ts__rmtree(e->dir);
	free(e->dir);
}

/* Insert one batch: hosts x per rows from ts0, step apart, with blobs of
 * blob bytes (random, or a repeated letter). */
static void insert(struct env *e, int hosts, int per, int64_t ts0, int64_t step, size_t blob,
                   int random_blob)
{
	int ncols = e->version == 1 ? 6 : 7;
	size_t n = (size_t)hosts * per;
	ts_value *v = calloc(n * ncols, sizeof *v);
	char (*names)[16] = calloc((size_t)hosts, sizeof *names);
	unsigned char *b = malloc(n * (blob ? blob : 1));
	for (int h = 0; h < hosts; h++)
		snprintf(names[h], sizeof names[h], "host-%02d", h);
	for (size_t r = 0; r < n; r++) {
		ts_value *row = v + r * ncols;
		unsigned char *bb = b + r * blob;
		for (size_t k = 0; k < blob; k++)
			bb[k] = random_blob ? (unsigned char)rnd() : (unsigned char)('a' + r % 7);
		int64_t i = (int64_t)(rnd() % 2001) - 1000;
		if (e->version == 3 && r % 5 == 0)
			i *= INT64_C(10000000);
		row[0] = ts_string(names[r / per]);
		row[1] = ts_timestamp(ts0 + (int64_t)(r % per) * step);
		row[2] = e->version == 3 ? ts_int64(i) : ts_int32((int32_t)i);
		row[3] = ts_int64((int64_t)(rnd() % 100000) * (r % 2 ? -1 : 1));
		row[4] = ts_double(r % 11 == 3 ? 0.0 / 0.0 : (double)(rnd() % 10000) / 16.0);
		row[5] = ts_blob(bb, blob);
		if (ncols == 7)
			row[6] = r % 3 ? ts_int64((int64_t)(rnd() % 50)) : ts_none();
	}
	check("insert", ts_insert(e->t, v, n));
	free(v);
	free(names);
	free(b);
}

/* ---- tablets ---- */

/* The path of the tablet with the greatest id in dir/t/tablets. */
static void newest_tablet(const struct env *e, char *path, size_t size)
{
	char dir[600], best[64] = "";
	snprintf(dir, sizeof dir, "%s/%s/tablets", e->dir, FUZZ_TABLE);
	DIR *d = opendir(dir);
	struct dirent *de;
	if (!d)
		die(dir, TS_EIO);
	while ((de = readdir(d)))
		if (strlen(de->d_name) == 20 && strcmp(de->d_name, best) > 0)
			strcpy(best, de->d_name);
	closedir(d);
	if (!*best)
		die("no tablet", TS_ENOENT);
	snprintf(path, size, "%s/%s", dir, best);
}

/* The file of tablet tab with every block and the footer stored raw:
 * the block index's offsets and stored sizes move accordingly (found in
 * the raw footer just before each block's first key). */
static unsigned char *to_raw(const ts__tablet *tab, const unsigned char *file, size_t *n)
{
	ts_buf out, raw;
	unsigned char tr[TS_TABT_SIZE] = {0};
	const unsigned char *otr = file + tab->size - TS_TABT_SIZE;
	uint32_t flen = ts__load_u32(otr + TS_TABT_OFF_RAW);
	unsigned char *footer = malloc(flen);
	memcpy(footer, tab->footer, flen);
	ts__buf_init(&out);
	ts__buf_init(&raw);
	ts__put(&out, file, TS_TABH_SIZE);
	for (uint32_t i = 0; i < tab->nblocks; i++) {
		const ts__tablet_block *b = &tab->blocks[i];
		unsigned char h[TS_BLKH_SIZE] = {0};
		check("read block", ts__tablet_read_block(tab, i, &raw));
		size_t at = (size_t)(b->first_key - tab->footer) - ts__varint_size(b->first_klen) - 36;
		if (ts__load_u64(footer + at) != b->offset)
			die("block index layout", TS_ECORRUPT);
		ts__store_u64(footer + at, out.len);
		ts__store_u32(footer + at + 8, (uint32_t)raw.len);
		ts__store_u32(h + TS_BLKH_OFF_STORED, (uint32_t)raw.len);
		ts__store_u32(h + TS_BLKH_OFF_RAW, (uint32_t)raw.len);
		h[TS_BLKH_OFF_CODEC] = TS_CODEC_RAW;
		ts__store_u32(h + TS_BLKH_OFF_CRC,
		              ts__crc32c(ts__crc32c(0, h, TS_BLKH_OFF_CRC), raw.data, raw.len));
		ts__put(&out, h, sizeof h);
		ts__put(&out, raw.data, raw.len);
	}
	ts__store_u64(tr + TS_TABT_OFF_FOOTER, out.len);
	ts__store_u32(tr + TS_TABT_OFF_STORED, flen);
	ts__store_u32(tr + TS_TABT_OFF_RAW, flen);
	ts__store_u32(tr + TS_TABT_OFF_FOOTER_CRC, ts__crc32c(0, footer, flen));
	tr[TS_TABT_OFF_CODEC] = TS_CODEC_RAW;
	ts__store_u32(tr + TS_TABT_OFF_CRC, ts__crc32c(0, tr, TS_TABT_OFF_CRC));
	memcpy(tr + TS_TABT_OFF_MAGIC, TS_TABT_MAGIC, 8);
	ts__put(&out, footer, flen);
	ts__put(&out, tr, sizeof tr);
	free(footer);
	ts__buf_free(&raw);
	if (out.oom)
		die("to_raw", TS_ENOMEM);
	*n = out.len;
	return out.data;
}

/* Flush t into a tablet; seed it as written and converted to raw. */
static void seed_tablet(struct env *e, const char *name)
{
	char path[700], raw_path[800], seed[64];
	ts__tablet *tab, *back;
	size_t n, rn;
	check("flush", ts_flush(e->t, INT64_MAX));
	newest_tablet(e, path, sizeof path);
	unsigned char *file = slurp(path, &n);
	uint64_t id = strtoull(strrchr(path, '/') + 1, NULL, 16);
	check("open tablet", ts__tablet_open(path, id, &tab));
	check("check tablet", ts__tablet_check(tab, e->t->desc->schemas[tab->schema_version - 1]));
	unsigned char *raw = to_raw(tab, file, &rn);
	snprintf(raw_path, sizeof raw_path, "%s/%s/raw.tab", e->dir, FUZZ_TABLE);
	FILE *fp = fopen(raw_path, "wb");
	if (!fp || fwrite(raw, rn, 1, fp) != 1 || fclose(fp) != 0)
		die(raw_path, TS_EIO);
	check("open raw", ts__tablet_open(raw_path, id, &back));
	check("check raw", ts__tablet_check(back, e->t->desc->schemas[back->schema_version - 1]));
	if (back->rows != tab->rows || back->nblocks != tab->nblocks)
		die("raw rows", TS_ECORRUPT);
	put_seed("tablet", name, 1, NULL, 0, file, n);
	snprintf(seed, sizeof seed, "%s-raw", name);
	put_seed("tablet", seed, 1, NULL, 0, raw, rn);
	ts__tablet_close(tab);
	ts__tablet_close(back);
	unlink(raw_path);
	free(file);
	free(raw);
}

static void tablet_seeds(void)
{
	struct env e;
	env_open(&e, 1);
	insert(&e, 2, 3, FUZZ_NOW - 5 * FUZZ_HOUR, 60 * FUZZ_SEC, 4, 0);
	seed_tablet(&e, "small-v1");
	insert(&e, 3, 200, FUZZ_NOW - 30 * FUZZ_HOUR, 60 * FUZZ_SEC, 40, 1);
	seed_tablet(&e, "hours-v1");
	env_alter(&e);
	insert(&e, 4, 30, FUZZ_NOW - 50 * FUZZ_HOUR, 17 * 60 * FUZZ_SEC, 8, 0);
	seed_tablet(&e, "v2");
	env_alter(&e);
	insert(&e, 2, 150, FUZZ_NOW - 9 * 24 * FUZZ_HOUR, 90 * FUZZ_SEC, 30, 0);
	seed_tablet(&e, "hours-v3");
	env_close(&e);
	env_free(&e);
}

/* ---- logs ---- */

/* Seed the log of e's table from its flushed position to its tail. */
static void seed_log(struct env *e, const char *name)
{
	uint64_t start = e->t->desc->flushed_lsn, end = ts__log_tail(e->t->log);
	char dir[600], seg[700];
	size_t n = (size_t)(end - start);
	unsigned char *p = malloc(n ? n : 1), head[8];
	snprintf(dir, sizeof dir, "%s/%s/log", e->dir, FUZZ_TABLE);
	check("sync", ts_sync(e->db));
	for (uint64_t lsn = start; lsn < end;) {
		uint64_t s = lsn >> TS_SEG_DATA_SHIFT, off = lsn & (TS_SEG_DATA - 1);
		uint64_t k = TS_SEG_DATA - off < end - lsn ? TS_SEG_DATA - off : end - lsn;
		snprintf(seg, sizeof seg, "%s/%016" PRIx64 ".seg", dir, s);
		int fd = open(seg, O_RDONLY);
		if (fd < 0 || pread(fd, p + (lsn - start), k, (off_t)(TS_SEG_HEADER + off)) != (ssize_t)k)
			die(seg, TS_EIO);
		close(fd);
		lsn += k;
	}
	ts__store_u64(head, start);
	put_seed("log", name, 1, head, 8, p, n);
	free(p);
}

static void log_seeds(void)
{
	struct env e;
	/* three periods: this 4-hour one, a day, a week */
	env_open(&e, 3);
	insert(&e, 2, 4, FUZZ_NOW - FUZZ_HOUR, 10 * FUZZ_SEC, 6, 0);
	insert(&e, 1, 3, FUZZ_NOW - 50 * FUZZ_HOUR, 10 * FUZZ_SEC, 0, 0);
	insert(&e, 3, 2, FUZZ_NOW - 20 * 24 * FUZZ_HOUR, FUZZ_HOUR, 12, 1);
	insert(&e, 2, 3, FUZZ_NOW - FUZZ_HOUR + 5 * FUZZ_SEC, 10 * FUZZ_SEC, 3, 0);
	seed_log(&e, "periods");
	env_close(&e);
	env_free(&e);

	/* rows of every schema version */
	env_open(&e, 1);
	insert(&e, 2, 5, FUZZ_NOW - 2 * FUZZ_HOUR, FUZZ_SEC, 5, 0);
	env_alter(&e);
	insert(&e, 2, 5, FUZZ_NOW - 2 * FUZZ_HOUR + 100 * FUZZ_SEC, FUZZ_SEC, 5, 0);
	env_alter(&e);
	insert(&e, 3, 5, FUZZ_NOW - 2 * FUZZ_HOUR + 1000 * FUZZ_SEC, 7 * FUZZ_SEC, 5, 0);
	seed_log(&e, "versions");
	env_close(&e);
	env_free(&e);

	/* from a flushed position: older rows went to a tablet */
	env_open(&e, 3);
	insert(&e, 2, 10, FUZZ_NOW - 30 * FUZZ_HOUR, FUZZ_SEC, 4, 0);
	insert(&e, 2, 10, FUZZ_NOW - FUZZ_HOUR, FUZZ_SEC, 4, 0);
	check("flush", ts_flush(e.t, FUZZ_NOW - 10 * FUZZ_HOUR));
	insert(&e, 2, 4, FUZZ_NOW - FUZZ_HOUR + 30 * FUZZ_SEC, FUZZ_SEC, 4, 0);
	insert(&e, 1, 4, FUZZ_NOW - 30 * FUZZ_HOUR + 30 * FUZZ_SEC, FUZZ_SEC, 4, 0);
	seed_log(&e, "flushed");
	env_close(&e);
	env_free(&e);

	/* batches crossing from segment 0 into segment 1: fill segment 0 to
	 * a few kB from its end with large rows, flush them all, then insert
	 * small batches */
	env_open(&e, 3);
	int64_t ts = FUZZ_NOW - 3 * FUZZ_HOUR;
	for (;;) {
		uint64_t left = TS_SEG_DATA - (ts__log_tail(e.t->log) & (TS_SEG_DATA - 1));
		if (left < 6000)
			break;
		size_t blob = left - 5000 > (1u << 20) ? (1u << 20) : (size_t)(left - 5000) / 2;
		insert(&e, 1, 1, ts, 0, blob, 0);
		ts += FUZZ_SEC;
	}
	check("flush", ts_flush(e.t, INT64_MAX));
	for (int i = 0; i < 4; i++)
		insert(&e, 3, 4, ts + i * 20 * FUZZ_SEC, FUZZ_SEC, 20, 0);
	if ((ts__log_tail(e.t->log) >> TS_SEG_DATA_SHIFT) != 1)
		die("the batches did not reach segment 1", TS_EINVAL);
	seed_log(&e, "segments");
	env_close(&e);
	env_free(&e);
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: mkseeds DIR (writes DIR/tablet/seed-* and DIR/log/seed-*)\n");
		return 2;
	}
	out_dir = argv[1];
	tablet_seeds();
	log_seeds();
	return 0;
}
