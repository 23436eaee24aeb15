/*
 * test_tablet.c -- on-disk tablet files: round trips of rows, index,
 * statistics and Bloom filter; the writer's refusals; and damage -- a
 * flipped byte in every part of the file (header, block headers, block
 * bytes, footer, trailer) and truncations at every boundary are detected
 * by open or check, with the file named, and never crash the reader;
 * and a writer warming the block cache with exactly the file's blocks.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "bcache.h"
#include "crc32c.h"
#include "key.h"
#include "tslimits.h"
#include "row.h"
#include "support.h"
#include "tablet.h"
#include "tablet_format.h"

#define SEC INT64_C(1000000000)
#define BASE (INT64_C(1795000000) * SEC)

static uint64_t seed;
static uint64_t rnd(void)
{
	seed ^= seed << 13;
	seed ^= seed >> 7;
	seed ^= seed << 17;
	return seed;
}

/* host string, ts, n int32, v int64, d double, note string; key (host, ts) */
static ts__schema *schema(void)
{
	ts_column cols[] = {
		{"host", TS_STRING, {TS_NONE, {0}}}, {"ts", TS_TIMESTAMP, {TS_NONE, {0}}},
		{"n", TS_INT32, {TS_NONE, {0}}},     {"v", TS_INT64, {TS_NONE, {0}}},
		{"d", TS_DOUBLE, {TS_NONE, {0}}},    {"note", TS_STRING, {TS_NONE, {0}}},
	};
	const char *key[] = {"host", "ts"};
	ts__schema *s;
	assert_int_equal(ts__schema_build(cols, 6, key, 2, &s), 0);
	return s;
}

/* Encoded rows in key order, each a malloc'ed copy. */
struct rows {
	unsigned char **p;
	size_t *len;
	size_t n;
	int64_t vsum;   /* sum of column v */
	double dsum;    /* sum of the non-NaN values of d */
	int64_t min_ts, max_ts;
};

/* What host names start with. */
static const char *host_prefix = "h";

/* hosts * per rows; note_len long notes of random letters (incompressible
 * when random, else repetitive). */
static void make_rows(struct rows *r, const ts__schema *s, int hosts, int per, size_t note_len,
                      int random_notes)
{
	char host[64], *note = malloc(note_len + 1);
	ts_buf b;
	memset(r, 0, sizeof *r);
	r->p = calloc((size_t)hosts * per, sizeof *r->p);
	r->len = calloc((size_t)hosts * per, sizeof *r->len);
	r->min_ts = INT64_MAX;
	r->max_ts = INT64_MIN;
	for (int h = 0; h < hosts; h++) {
		snprintf(host, sizeof host, "%s%04d", host_prefix, h); /* sorts as it counts */
		for (int i = 0; i < per; i++) {
			for (size_t k = 0; k < note_len; k++)
				note[k] = random_notes ? (char)('!' + rnd() % 90) : (char)('a' + k % 3);
			int64_t ts = BASE + (int64_t)i * 10 * SEC - (int64_t)(rnd() % 5);
			double d = i % 17 == 0 ? 0.0 / 0.0 : (double)(rnd() % 1000) / 8.0;
			int64_t v = (int64_t)(rnd() % 2000000) - 1000000;
			ts_value vals[6] = {ts_string(host), ts_timestamp(ts), ts_int32((int32_t)(i - 50)),
			                    ts_int64(v), ts_double(d), ts_stringn(note, note_len)};
			ts__buf_init(&b);
			assert_int_equal(ts__row_encode(s, vals, &b), 0);
			r->p[r->n] = b.data;
			r->len[r->n] = b.len;
			r->n++;
			r->vsum += v;
			if (d == d)
				r->dsum += d;
			r->min_ts = ts < r->min_ts ? ts : r->min_ts;
			r->max_ts = ts > r->max_ts ? ts : r->max_ts;
		}
	}
	free(note);
}

static void free_rows(struct rows *r)
{
	for (size_t i = 0; i < r->n; i++)
		free(r->p[i]);
	free(r->p);
	free(r->len);
}

static char *write_tablet(const char *dir, uint64_t id, const ts__schema *s, const struct rows *r)
{
	ts__tablet_writer *w;
	uint64_t rows, bytes;
	int64_t lo, hi;
	char name[64], *path = malloc(4200);
	assert_int_equal(ts__tablet_writer_open(dir, id, s, BASE - SEC, BASE + 86400 * SEC, &w), 0);
	for (size_t i = 0; i < r->n; i++)
		assert_int_equal(ts__tablet_writer_add(w, r->p[i], r->len[i]), 0);
	assert_int_equal(ts__tablet_writer_finish(w, &rows, &bytes, &lo, &hi), 0);
	assert_int_equal(rows, r->n);
	assert_int_equal(lo, r->min_ts);
	assert_int_equal(hi, r->max_ts);
	assert_int_equal(ts__tablet_name(id, name, sizeof name), 0);
	snprintf(path, 4200, "%s/%s", dir, name);
	struct stat st;
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal((uint64_t)st.st_size, bytes);
	return path;
}

/* Every row of t, in order, equals r's; checks pass. */
static void expect_rows(const ts__tablet *t, const ts__schema *s, const struct rows *r)
{
	ts_buf raw;
	ts_reader rd;
	const void *row;
	size_t len, k = 0;
	ts__buf_init(&raw);
	for (uint32_t i = 0; i < t->nblocks; i++) {
		assert_int_equal(ts__tablet_read_block(t, i, &raw), 0);
		ts__reader_init(&rd, raw.data, raw.len);
		int rc;
		while ((rc = ts__tablet_block_next(&rd, &row, &len)) == 1) {
			assert_true(k < r->n);
			assert_int_equal(len, r->len[k]);
			assert_memory_equal(row, r->p[k], len);
			k++;
		}
		assert_int_equal(rc, 0);
	}
	assert_int_equal(k, r->n);
	assert_int_equal(ts__tablet_check(t, s), 0);
	ts__buf_free(&raw);
}

/* A series with a row a minute (a rollup's rows: about 1.9 KiB an
 * hour, under TS_TABLET_BLOCK_ALIGN_MIN): blocks span hours, unless the
 * writer cuts them hourly (ts__tablet_writer_hourly), when every block
 * lies in one hour -- four hours, four blocks.  Fails with the hourly cut
 * ignored. */
static void tablet_hourly_cuts_small_hours(void **state)
{
	(void)state;
	char *dir = ts_test_tmpdir();
	ts__schema *s = schema();
	int64_t hour = 3600 * SEC, h0 = (BASE / hour + 1) * hour;
	for (int hourly = 0; hourly <= 1; hourly++) {
		ts__tablet_writer *w;
		uint64_t rows, bytes;
		int64_t lo, hi;
		ts_buf b;
		assert_int_equal(ts__tablet_writer_open(dir, 20 + (uint64_t)hourly, s, BASE - SEC,
		                                        BASE + 86400 * SEC, &w), 0);
		if (hourly)
			ts__tablet_writer_hourly(w);
		for (int i = 0; i < 240; i++) {
			ts_value vals[6] = {ts_string("h0001"), ts_timestamp(h0 + i * 60 * SEC),
			                    ts_int32(i), ts_int64(i), ts_double(i), ts_string("")};
			ts__buf_init(&b);
			assert_int_equal(ts__row_encode(s, vals, &b), 0);
			assert_int_equal(ts__tablet_writer_add(w, b.data, b.len), 0);
			ts__buf_free(&b);
		}
		assert_int_equal(ts__tablet_writer_finish(w, &rows, &bytes, &lo, &hi), 0);
		char name[64], path[4200];
		assert_int_equal(ts__tablet_name(20 + (uint64_t)hourly, name, sizeof name), 0);
		snprintf(path, sizeof path, "%s/%s", dir, name);
		ts__tablet *t;
		assert_int_equal(ts__tablet_open(path, 20 + (uint64_t)hourly, &t), 0);
		int in_one_hour = 1;
		for (uint32_t i = 0; i < t->nblocks; i++)
			in_one_hour &= t->blocks[i].min_ts / hour == t->blocks[i].max_ts / hour;
		if (hourly) {
			assert_int_equal(t->nblocks, 4);
			assert_true(in_one_hour);
		} else {
			assert_true(t->nblocks < 4);
			assert_false(in_one_hour);
		}
		ts__tablet_close(t);
	}
	ts__schema_free(s);
	ts_test_rmdir(dir);
}

static void tablet_write_read_round_trip(void **state)
{
	(void)state;
	seed = 1;
	char *dir = ts_test_tmpdir();
	ts__schema *s = schema();
	struct rows r;
	make_rows(&r, s, 40, 500, 20, 0);
	char *path = write_tablet(dir, 7, s, &r);
	ts__tablet *t;
	assert_int_equal(ts__tablet_open(path, 7, &t), 0);
	assert_int_equal(t->id, 7);
	assert_int_equal(t->schema_version, s->version);
	assert_int_equal(t->rows, r.n);
	assert_int_equal(t->min_ts, r.min_ts);
	assert_int_equal(t->max_ts, r.max_ts);
	assert_int_equal(t->period_start, BASE - SEC);
	assert_int_equal(t->period_end, BASE + 86400 * SEC);
	assert_true(t->nblocks > 10);
	/* keys: the first and last rows' */
	const void *k;
	size_t kl;
	assert_int_equal(ts__row_key(r.p[0], r.len[0], &k, &kl), 0);
	assert_int_equal(t->first_klen, kl);
	assert_memory_equal(t->first_key, k, kl);
	assert_int_equal(ts__row_key(r.p[r.n - 1], r.len[r.n - 1], &k, &kl), 0);
	assert_int_equal(t->last_klen, kl);
	assert_memory_equal(t->last_key, k, kl);
	/* statistics: n, v, d (ts is not a statistics column) */
	assert_int_equal(t->nstat, 3);
	assert_int_equal(t->stat_cols[1], 3);
	uint64_t count = 0, dcount = 0;
	__int128 vsum = 0;
	double dsum = 0;
	for (uint32_t i = 0; i < t->nblocks; i++) {
		ts__colstat st;
		ts__tablet_stat(t, i, 1, &st);
		count += st.count;
		vsum += st.isum;
		assert_int_equal(st.count, t->blocks[i].rows);
		ts__tablet_stat(t, i, 2, &st);
		dcount += st.count;
		dsum += st.dsum;
	}
	assert_int_equal(count, r.n);
	assert_true(vsum == r.vsum);
	assert_int_equal(dcount, r.n - 40 * ((500 + 16) / 17)); /* NaN every 17th */
	assert_true(dsum > r.dsum - 1e-6 && dsum < r.dsum + 1e-6);
	expect_rows(t, s, &r);
	ts__tablet_close(t);
	free(path);
	free_rows(&r);
	ts__schema_free(s);
	ts_test_rmdir(dir);
}

/* ts__tablet_block_for finds the block a linear search over the last
 * keys finds, for every row's key and the keys just before and after it:
 * with short keys (their heads decide) and with host names sharing a
 * prefix longer than a head (the full keys decide). */
static void tablet_block_for_matches_a_linear_search(void **state)
{
	(void)state;
	static const char *const prefixes[] = {"h", "a-host-name-prefix-longer-than-16-"};
	for (int p = 0; p < 2; p++) {
		seed = 5;
		host_prefix = prefixes[p];
		char *dir = ts_test_tmpdir();
		ts__schema *s = schema();
		struct rows r;
		make_rows(&r, s, 30, 300, 20, 0);
		char *path = write_tablet(dir, 3, s, &r);
		ts__tablet *t;
		assert_int_equal(ts__tablet_open(path, 3, &t), 0);
		assert_true(t->nblocks > 10);
		for (size_t i = 0; i < r.n; i++) {
			const void *k;
			size_t kl;
			assert_int_equal(ts__row_key(r.p[i], r.len[i], &k, &kl), 0);
			unsigned char key[128];
			memcpy(key, k, kl);
			for (int d = -1; d <= 1; d++) {
				ts__store_be64(key + kl - 8, ts__load_be64(key + kl - 8) + (uint64_t)d);
				uint32_t want = 0;
				while (want < t->nblocks && ts__key_cmp(t->blocks[want].last_key,
				                                        t->blocks[want].last_klen, key, kl) < 0)
					want++;
				assert_int_equal(ts__tablet_block_for(t, key, kl), want);
				memcpy(key, k, kl);
			}
		}
		ts__tablet_close(t);
		free(path);
		free_rows(&r);
		ts__schema_free(s);
		ts_test_rmdir(dir);
	}
	host_prefix = "h";
}

static void tablet_bloom_has_every_stem(void **state)
{
	(void)state;
	seed = 2;
	char *dir = ts_test_tmpdir();
	ts__schema *s = schema();
	struct rows r;
	make_rows(&r, s, 500, 3, 4, 0);
	char *path = write_tablet(dir, 1, s, &r);
	ts__tablet *t;
	assert_int_equal(ts__tablet_open(path, 1, &t), 0);
	int false_pos = 0;
	for (int h = 0; h < 1500; h++) {
		char host[16];
		ts_buf b;
		ts__buf_init(&b);
		snprintf(host, sizeof host, "h%04d", h);
		ts_value v = ts_string(host);
		ts__key_put(&b, &v);
		int may = ts__tablet_may_contain(t, b.data, b.len);
		if (h < 500)
			assert_int_equal(may, 1);
		else
			false_pos += may;
		ts__buf_free(&b);
	}
	assert_true(false_pos < 30); /* 1000 absent stems, about 1 % expected */
	ts__tablet_close(t);
	free(path);
	free_rows(&r);
	ts__schema_free(s);
	ts_test_rmdir(dir);
}

/* The filter's bits, computed here from the formula of
 * docs/tablet-format.md section 4.3 -- FNV-1a, the MurmurHash3 64-bit
 * finaliser, bit (h1 + i * h2) mod bloom_bits -- are exactly the bits in
 * the file: the format stays what tablets already written hold. */
static uint64_t documented_hash(const unsigned char *p, size_t n)
{
	uint64_t h = 0xcbf29ce484222325u;
	for (size_t i = 0; i < n; i++)
		h = (h ^ p[i]) * 0x100000001b3u;
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdu;
	h ^= h >> 33;
	h *= 0xc4ceb9fe1a85ec53u;
	return h ^ (h >> 33);
}

static void tablet_bloom_bits_are_the_documented_ones(void **state)
{
	(void)state;
	seed = 3;
	char *dir = ts_test_tmpdir();
	ts__schema *s = schema();
	struct rows r;
	make_rows(&r, s, 777, 2, 4, 0);
	char *path = write_tablet(dir, 1, s, &r);
	ts__tablet *t;
	assert_int_equal(ts__tablet_open(path, 1, &t), 0);
	assert_int_equal(t->bloom_bits, 7776); /* 10 per stem, up to a multiple of 8 */
	assert_int_equal(t->bloom_k, TS_BLOOM_HASHES);
	unsigned char *want = calloc(t->bloom_bits / 8, 1);
	for (int h = 0; h < 777; h++) {
		char host[16];
		ts_buf b;
		ts__buf_init(&b);
		snprintf(host, sizeof host, "h%04d", h);
		ts_value v = ts_string(host);
		ts__key_put(&b, &v);
		uint64_t x = documented_hash(b.data, b.len);
		uint32_t h1 = (uint32_t)x, h2 = (uint32_t)(x >> 32) | 1;
		for (unsigned i = 0; i < t->bloom_k; i++) {
			uint32_t bit = (uint32_t)((h1 + (uint64_t)i * h2) % t->bloom_bits);
			want[bit / 8] |= (unsigned char)(1u << (bit % 8));
		}
		ts__buf_free(&b);
	}
	assert_memory_equal(t->bloom, want, t->bloom_bits / 8);
	free(want);
	ts__tablet_close(t);
	free(path);
	free_rows(&r);
	ts__schema_free(s);
	ts_test_rmdir(dir);
}

/* One row larger than a block, and incompressible notes (stored raw). */
static void tablet_huge_and_incompressible_rows(void **state)
{
	(void)state;
	seed = 3;
	char *dir = ts_test_tmpdir();
	ts__schema *s = schema();
	struct rows r;
	make_rows(&r, s, 3, 2, TS_TABLET_BLOCK * 3, 1);
	char *path = write_tablet(dir, 2, s, &r);
	ts__tablet *t;
	assert_int_equal(ts__tablet_open(path, 2, &t), 0);
	assert_int_equal(t->nblocks, 6); /* a block each */
	expect_rows(t, s, &r);
	ts__tablet_close(t);
	free(path);
	free_rows(&r);
	ts__schema_free(s);
	ts_test_rmdir(dir);
}

static int count_entries(const char *dir)
{
	char cmd[4300];
	snprintf(cmd, sizeof cmd, "test $(ls -A '%s' | wc -l) -eq 0", dir);
	return system(cmd) == 0 ? 0 : 1;
}

/* The bytes of tablet 5 written into a fresh directory from r's rows,
 * the writer compressing on threads threads; row i has version
 * hi_every ? 100 + i / hi_every : 0.  *n receives the size. */
static unsigned char *pool_tablet(const ts__schema *s, const struct rows *r, int threads,
                                  size_t hi_every, size_t *n)
{
	char *dir = ts_test_tmpdir(), name[64], path[4200];
	ts__tablet_writer *w;
	uint64_t bytes;
	assert_int_equal(ts__tablet_writer_open(dir, 5, s, BASE - SEC, BASE + 86400 * SEC, &w), 0);
	ts__tablet_writer_threads(w, threads);
	for (size_t i = 0; i < r->n; i++)
		assert_int_equal(ts__tablet_writer_add_hi(w, r->p[i], r->len[i],
		                                          hi_every ? 100 + i / hi_every : 0), 0);
	assert_int_equal(ts__tablet_writer_finish(w, NULL, &bytes, NULL, NULL), 0);
	assert_int_equal(ts__tablet_name(5, name, sizeof name), 0);
	snprintf(path, sizeof path, "%s/%s", dir, name);
	FILE *f = fopen(path, "rb");
	assert_non_null(f);
	unsigned char *data = malloc(bytes + 1);
	*n = fread(data, 1, bytes + 1, f);
	fclose(f);
	assert_int_equal(*n, bytes);
	ts__tablet *t;
	assert_int_equal(ts__tablet_open(path, 5, &t), 0);
	expect_rows(t, s, r);
	ts__tablet_close(t);
	ts_test_rmdir(dir);
	return data;
}

/* A writer compressing on 2, 3 or 8 threads (ts__tablet_writer_threads:
 * helpers compress, the writer writes in block order) writes the very
 * bytes one thread does: compressible blocks, incompressible ones stored
 * raw, rows larger than a block, with versions (format 3) and without
 * (format 2); and an abort with blocks in flight leaves no file. */
static void tablet_pool_writes_the_same_bytes(void **state)
{
	(void)state;
	ts__schema *s = schema();
	struct rows sets[3];
	seed = 11;
	make_rows(&sets[0], s, 40, 500, 20, 0);     /* about 300 LZO blocks */
	make_rows(&sets[1], s, 20, 100, 700, 1);     /* random notes: raw blocks */
	make_rows(&sets[2], s, 3, 2, TS_TABLET_BLOCK * 2, 1); /* a block per row */
	for (int k = 0; k < 3; k++)
		for (size_t hi_every = 0; hi_every <= 500; hi_every += 500) {
			size_t n1, n;
			unsigned char *one = pool_tablet(s, &sets[k], 1, hi_every, &n1);
			assert_true(n1 > TS_TABH_SIZE + TS_TABT_SIZE);
			for (int threads = 2; threads <= 8; threads = threads == 3 ? 8 : threads + 1) {
				unsigned char *many = pool_tablet(s, &sets[k], threads, hi_every, &n);
				assert_int_equal(n, n1);
				assert_memory_equal(many, one, n1);
				free(many);
			}
			free(one);
		}

	/* abort with the helpers busy: no file, the threads joined */
	char *dir = ts_test_tmpdir();
	ts__tablet_writer *w;
	assert_int_equal(ts__tablet_writer_open(dir, 6, s, BASE - SEC, BASE + 86400 * SEC, &w), 0);
	ts__tablet_writer_threads(w, 3);
	for (size_t i = 0; i < sets[0].n / 2; i++)
		assert_int_equal(ts__tablet_writer_add(w, sets[0].p[i], sets[0].len[i]), 0);
	ts__tablet_writer_abort(w);
	assert_int_equal(count_entries(dir), 0);
	ts_test_rmdir(dir);
	for (int k = 0; k < 3; k++)
		free_rows(&sets[k]);
	ts__schema_free(s);
}

/* A writer told to warm the block cache (ts__tablet_writer_warm), on 1
 * and 3 threads: with all, every block it writes is cached under the
 * serial given, holding exactly the bytes the file decompresses to; with
 * keep alone, only the blocks rows were kept in, as used entries where
 * keep said used; an aborted writer takes its blocks out again. */
static void tablet_writer_warms_the_block_cache(void **state)
{
	(void)state;
	ts__schema *s = schema();
	struct rows r;
	seed = 12;
	make_rows(&r, s, 40, 100, 20, 0);
	ts__bcache bc;
	assert_int_equal(ts__bcache_init(&bc, 64 << 20), 0);
	for (int threads = 1; threads <= 3; threads += 2) {
		char *dir = ts_test_tmpdir(), name[64], path[4200];
		uint64_t serial = 1000 + (uint64_t)threads;
		ts__tablet_writer *w;
		assert_int_equal(ts__tablet_writer_open(dir, 7, s, BASE - SEC, BASE + 86400 * SEC, &w),
		                 0);
		ts__tablet_writer_threads(w, threads);
		ts__tablet_writer_warm(w, &bc, serial, 1);
		for (size_t i = 0; i < r.n; i++)
			assert_int_equal(ts__tablet_writer_add(w, r.p[i], r.len[i]), 0);
		assert_int_equal(ts__tablet_writer_finish(w, NULL, NULL, NULL, NULL), 0);
		assert_int_equal(ts__tablet_name(7, name, sizeof name), 0);
		snprintf(path, sizeof path, "%s/%s", dir, name);
		ts__tablet *t;
		assert_int_equal(ts__tablet_open(path, 7, &t), 0);
		assert_true(t->nblocks > 4);
		ts_buf raw;
		ts__buf_init(&raw);
		for (uint32_t b = 0; b < t->nblocks; b++) {
			int used;
			ts__cblock *cb = ts__bcache_peek(&bc, serial, b, &used);
			assert_non_null(cb);
			assert_int_equal(used, 0); /* spare room only */
			assert_int_equal(ts__tablet_read_block(t, b, &raw), 0);
			assert_int_equal(cb->raw.len, raw.len);
			assert_memory_equal(cb->raw.data, raw.data, raw.len);
			assert_int_equal(cb->nrows, t->blocks[b].rows);
			ts__cblock_put(&bc, cb);
		}
		assert_null(ts__bcache_get(&bc, serial, t->nblocks));
		ts__buf_free(&raw);
		ts__tablet_close(t);
		ts_test_rmdir(dir);
	}
	size_t count = bc.count;
	/* keep alone: row 0's block used, the last row's block spare */
	char *dir = ts_test_tmpdir();
	ts__tablet_writer *w;
	assert_int_equal(ts__tablet_writer_open(dir, 8, s, BASE - SEC, BASE + 86400 * SEC, &w), 0);
	ts__tablet_writer_warm(w, &bc, 2000, 0);
	for (size_t i = 0; i < r.n; i++) {
		assert_int_equal(ts__tablet_writer_add(w, r.p[i], r.len[i]), 0);
		if (i == 0 || i == r.n - 1)
			ts__tablet_writer_keep(w, i == 0);
	}
	assert_int_equal(ts__tablet_writer_finish(w, NULL, NULL, NULL, NULL), 0);
	assert_int_equal(bc.count, count + 2);
	int used;
	ts__cblock *first = ts__bcache_peek(&bc, 2000, 0, &used);
	assert_non_null(first);
	assert_int_equal(used, 1);
	ts__cblock_put(&bc, first);
	ts_test_rmdir(dir);
	/* an abort, blocks cut on helper threads: none left cached */
	count = bc.count;
	dir = ts_test_tmpdir();
	assert_int_equal(ts__tablet_writer_open(dir, 9, s, BASE - SEC, BASE + 86400 * SEC, &w), 0);
	ts__tablet_writer_threads(w, 3);
	ts__tablet_writer_warm(w, &bc, 3000, 1);
	for (size_t i = 0; i < r.n; i++)
		assert_int_equal(ts__tablet_writer_add(w, r.p[i], r.len[i]), 0);
	ts__tablet_writer_abort(w);
	assert_int_equal(bc.count, count);
	assert_int_equal(count_entries(dir), 0);
	ts_test_rmdir(dir);
	ts__bcache_free(&bc);
	free_rows(&r);
	ts__schema_free(s);
}

static void tablet_writer_refuses_disorder_and_empty(void **state)
{
	(void)state;
	seed = 4;
	char *dir = ts_test_tmpdir();
	ts__schema *s = schema();
	struct rows r;
	ts__tablet_writer *w;
	make_rows(&r, s, 2, 2, 3, 0);
	assert_int_equal(ts__tablet_writer_open(dir, 3, s, 0, 1, &w), 0);
	assert_int_equal(ts__tablet_writer_add(w, r.p[1], r.len[1]), 0);
	assert_int_equal(ts__tablet_writer_add(w, r.p[0], r.len[0]), TS_EINVAL);
	assert_string_equal(ts_errmsg(NULL), "tablet 0000000000000003: rows out of key order");
	assert_int_equal(ts__tablet_writer_add(w, r.p[1], r.len[1]), TS_EINVAL); /* equal */
	ts__tablet_writer_abort(w);
	assert_int_equal(count_entries(dir), 0);
	assert_int_equal(ts__tablet_writer_open(dir, 4, s, 0, 1, &w), 0);
	assert_int_equal(ts__tablet_writer_finish(w, NULL, NULL, NULL, NULL), TS_EINVAL);
	assert_int_equal(count_entries(dir), 0);
	free_rows(&r);
	ts__schema_free(s);
	ts_test_rmdir(dir);
}

/* Rows given versions (ts__tablet_writer_add_hi) make a format-3 tablet
 * whose blocks carry the greatest version of their rows; rows without
 * make format 2, as before (its blocks' hi read 0); a newer format than
 * the reader's is refused with TS_EVERSION. */
static void tablet_block_hi_and_versions(void **state)
{
	(void)state;
	seed = 9;
	char *dir = ts_test_tmpdir();
	ts__schema *s = schema();
	struct rows r;
	ts__tablet_writer *w;
	ts__tablet *t;
	char name[64], path[4200];
	make_rows(&r, s, 40, 500, 20, 0);
	assert_int_equal(ts__tablet_writer_open(dir, 8, s, BASE - SEC, BASE + 86400 * SEC, &w), 0);
	for (size_t i = 0; i < r.n; i++) /* host h's rows: version 100 + h, one row 7000 */
		assert_int_equal(ts__tablet_writer_add_hi(w, r.p[i], r.len[i],
		                                          i == 1234 ? 7000 : 100 + i / 500), 0);
	assert_int_equal(ts__tablet_writer_finish(w, NULL, NULL, NULL, NULL), 0);
	assert_int_equal(ts__tablet_name(8, name, sizeof name), 0);
	snprintf(path, sizeof path, "%s/%s", dir, name);
	assert_int_equal(ts__tablet_open(path, 8, &t), 0);
	assert_int_equal(t->format, TS_TABLET_VERSION);
	assert_int_equal(t->format, 3);
	assert_true(t->nblocks > 10);
	size_t first = 0;
	for (uint32_t i = 0; i < t->nblocks; i++) {
		size_t last = first + t->blocks[i].rows - 1;
		uint64_t want = 100 + last / 500;
		if (first <= 1234 && 1234 <= last)
			want = 7000;
		assert_int_equal(t->blocks[i].hi, want);
		first = last + 1;
	}
	expect_rows(t, s, &r);
	ts__tablet_close(t);
	/* without versions: format 2 */
	char *p2 = write_tablet(dir, 9, s, &r);
	assert_int_equal(ts__tablet_open(p2, 9, &t), 0);
	assert_int_equal(t->format, 2);
	for (uint32_t i = 0; i < t->nblocks; i++)
		assert_int_equal(t->blocks[i].hi, 0);
	expect_rows(t, s, &r);
	ts__tablet_close(t);
	free(p2);
	/* a format from a newer build */
	unsigned char h[TS_TABH_SIZE];
	int fd = open(path, O_RDWR);
	assert_true(fd >= 0);
	assert_int_equal(pread(fd, h, sizeof h, 0), sizeof h);
	ts__store_u32(h + TS_TABH_OFF_VERSION, TS_TABLET_VERSION + 1);
	ts__store_u32(h + TS_TABH_OFF_CRC, ts__crc32c(0, h, TS_TABH_OFF_CRC));
	assert_int_equal(pwrite(fd, h, sizeof h, 0), sizeof h);
	close(fd);
	assert_int_equal(ts__tablet_open(path, 8, &t), TS_EVERSION);
	assert_null(t);
	free_rows(&r);
	ts__schema_free(s);
	ts_test_rmdir(dir);
}

static void tablet_open_missing_or_misnamed(void **state)
{
	(void)state;
	seed = 5;
	char *dir = ts_test_tmpdir();
	ts__schema *s = schema();
	struct rows r;
	ts__tablet *t;
	make_rows(&r, s, 1, 3, 3, 0);
	char *path = write_tablet(dir, 9, s, &r);
	assert_int_equal(ts__tablet_open(path, 8, &t), TS_ECORRUPT);
	assert_non_null(strstr(ts_errmsg(NULL), "damaged header: names another tablet"));
	unlink(path);
	assert_int_equal(ts__tablet_open(path, 9, &t), TS_ENOENT);
	free(path);
	free_rows(&r);
	ts__schema_free(s);
	ts_test_rmdir(dir);
}

/* ---- damage ---- */

/* open + check of path: 0 or the error (which must name the file). */
static int open_and_check(const char *path, uint64_t id, const ts__schema *s)
{
	ts__tablet *t;
	int rc = ts__tablet_open(path, id, &t);
	if (rc == 0) {
		rc = ts__tablet_check(t, s);
		ts__tablet_close(t);
	}
	if (rc < 0 && !strstr(ts_errmsg(NULL), path))
		fail_msg("error without the file name: %s", ts_errmsg(NULL));
	return rc;
}

static void flip_and_expect_damage(const char *path, const ts__schema *s, off_t at)
{
	int fd = open(path, O_RDWR);
	unsigned char c, x;
	assert_true(fd >= 0);
	assert_int_equal(pread(fd, &c, 1, at), 1);
	x = c ^ (unsigned char)(1u << (rnd() % 8));
	assert_int_equal(pwrite(fd, &x, 1, at), 1);
	int rc = open_and_check(path, 11, s);
	if (rc != TS_ECORRUPT && rc != TS_EVERSION)
		fail_msg("flipped byte at %lld: got %d (%s)", (long long)at, rc, ts_errmsg(NULL));
	assert_int_equal(pwrite(fd, &c, 1, at), 1);
	close(fd);
}

static void tablet_flipped_byte_in_every_part(void **state)
{
	(void)state;
	seed = 6;
	char *dir = ts_test_tmpdir();
	ts__schema *s = schema();
	struct rows r;
	make_rows(&r, s, 8, 400, 12, 0);
	char *path = write_tablet(dir, 11, s, &r);
	ts__tablet *t;
	assert_int_equal(ts__tablet_open(path, 11, &t), 0);
	uint64_t size = t->size, footer = t->blocks[t->nblocks - 1].offset + TS_BLKH_SIZE +
	                                  t->blocks[t->nblocks - 1].stored;
	assert_true(t->nblocks >= 3);
	for (off_t i = 0; i < TS_TABH_SIZE; i++) /* header: every byte */
		flip_and_expect_damage(path, s, i);
	for (uint32_t b = 0; b < t->nblocks; b++) { /* block headers: every byte */
		for (off_t i = 0; i < TS_BLKH_SIZE; i++)
			flip_and_expect_damage(path, s, (off_t)t->blocks[b].offset + i);
		for (int k = 0; k < 20; k++) /* block bytes: a sample */
			flip_and_expect_damage(path, s, (off_t)(t->blocks[b].offset + TS_BLKH_SIZE +
			                                        rnd() % t->blocks[b].stored));
	}
	for (uint64_t i = footer; i < size - TS_TABT_SIZE; i++) /* footer: every byte */
		flip_and_expect_damage(path, s, (off_t)i);
	for (uint64_t i = size - TS_TABT_SIZE; i < size; i++) /* trailer: every byte */
		flip_and_expect_damage(path, s, (off_t)i);
	assert_int_equal(open_and_check(path, 11, s), 0); /* restored intact */
	ts__tablet_close(t);
	free(path);
	free_rows(&r);
	ts__schema_free(s);
	ts_test_rmdir(dir);
}

static void tablet_truncated_anywhere(void **state)
{
	(void)state;
	seed = 7;
	char *dir = ts_test_tmpdir();
	ts__schema *s = schema();
	struct rows r;
	make_rows(&r, s, 4, 400, 12, 0);
	char *path = write_tablet(dir, 11, s, &r);
	ts__tablet *t;
	assert_int_equal(ts__tablet_open(path, 11, &t), 0);
	uint64_t size = t->size;
	off_t cuts[] = {0, 1, TS_TABH_SIZE - 1, TS_TABH_SIZE, TS_TABH_SIZE + 5,
	                (off_t)t->blocks[1].offset, (off_t)t->blocks[1].offset + 20,
	                (off_t)size / 2, (off_t)size - TS_TABT_SIZE - 1, (off_t)size - TS_TABT_SIZE,
	                (off_t)size - 8, (off_t)size - 1};
	ts__tablet_close(t);
	unsigned char *copy = malloc(size);
	int fd = open(path, O_RDONLY);
	assert_int_equal(pread(fd, copy, size, 0), (ssize_t)size);
	close(fd);
	for (size_t i = 0; i < sizeof cuts / sizeof *cuts; i++) {
		assert_int_equal(truncate(path, cuts[i]), 0);
		int rc = open_and_check(path, 11, s);
		if (rc != TS_ECORRUPT)
			fail_msg("cut at %lld: got %d (%s)", (long long)cuts[i], rc, ts_errmsg(NULL));
		fd = open(path, O_WRONLY | O_TRUNC);
		assert_int_equal(write(fd, copy, size), (ssize_t)size);
		close(fd);
	}
	/* and a file grown by garbage after its trailer */
	fd = open(path, O_WRONLY | O_APPEND);
	assert_int_equal(write(fd, "junk", 4), 4);
	close(fd);
	assert_int_equal(open_and_check(path, 11, s), TS_ECORRUPT);
	free(copy);
	free(path);
	free_rows(&r);
	ts__schema_free(s);
	ts_test_rmdir(dir);
}

/* A between callback counting its calls; it stops the warming at the
 * call *arg names (0: never). */
static int warm_calls, warm_stop_at;
static int count_warm_between(void *arg)
{
	(void)arg;
	return ++warm_calls == warm_stop_at ? 42 : 0;
}

/* ts__tablet_warm reads the blocks the cache lacks into its spare room,
 * in block order, byte for byte what the file decompresses to, as
 * unused entries; a second warm reads nothing; a full cache is never
 * evicted from (a used entry stays, the blocks that fit are a prefix);
 * between is called every TS_WARM_YIELD_BLOCKS blocks read, and its
 * non-zero return stops the warming and is returned. */
static void tablet_warm_fills_spare_room_only(void **state)
{
	(void)state;
	ts__schema *s = schema();
	struct rows r;
	seed = 13;
	make_rows(&r, s, 200, 100, 40, 1);
	char *dir = ts_test_tmpdir(), *path = write_tablet(dir, 7, s, &r);
	ts__tablet *t;
	assert_int_equal(ts__tablet_open(path, 7, &t), 0);
	free(path);
	uint32_t nb = t->nblocks;
	assert_true(nb > 2 * TS_WARM_YIELD_BLOCKS);
	ts_buf raw;
	ts__buf_init(&raw);

	/* room for everything; one block cached already */
	ts__bcache bc;
	assert_int_equal(ts__bcache_init(&bc, 256 << 20), 0);
	ts__cblock *cb = ts__cblock_new(500, 3);
	assert_non_null(cb);
	assert_int_equal(ts__tablet_read_block(t, 3, &cb->raw), 0);
	assert_int_equal(ts__tablet_block_locate(cb), 0);
	assert_int_equal(ts__bcache_put(&bc, cb, TS_BCACHE_EVICT), 1);
	ts__cblock_put(&bc, cb);
	warm_calls = warm_stop_at = 0;
	assert_int_equal(ts__tablet_warm(t, &bc, 500, count_warm_between, NULL), 0);
	assert_int_equal(warm_calls, (int)((nb - 1) / TS_WARM_YIELD_BLOCKS));
	assert_int_equal(bc.count, nb);
	for (uint32_t b = 0; b < nb; b++) {
		int used;
		assert_non_null(cb = ts__bcache_peek(&bc, 500, b, &used));
		assert_int_equal(used, b == 3); /* warmed blocks: spare room */
		assert_int_equal(ts__tablet_read_block(t, b, &raw), 0);
		assert_int_equal(cb->raw.len, raw.len);
		assert_memory_equal(cb->raw.data, raw.data, raw.len);
		assert_int_equal(cb->nrows, t->blocks[b].rows);
		ts__cblock_put(&bc, cb);
	}
	size_t used_bytes = bc.used;
	warm_calls = 0;
	assert_int_equal(ts__tablet_warm(t, &bc, 500, count_warm_between, NULL), 0);
	assert_int_equal(warm_calls, 0); /* nothing read */
	assert_int_equal(bc.used, used_bytes);

	/* stopped by between at its second call */
	ts__bcache_free(&bc);
	assert_int_equal(ts__bcache_init(&bc, 256 << 20), 0);
	warm_calls = 0;
	warm_stop_at = 2;
	assert_int_equal(ts__tablet_warm(t, &bc, 600, count_warm_between, NULL), 42);
	assert_int_equal(bc.count, 2 * TS_WARM_YIELD_BLOCKS);

	/* a cache with room for a few blocks beside a used entry */
	ts__bcache_free(&bc);
	assert_int_equal(ts__bcache_init(&bc, (size_t)used_bytes / 8), 0);
	assert_non_null(cb = ts__cblock_new(700, 0));
	assert_int_equal(ts__tablet_read_block(t, nb - 1, &cb->raw), 0);
	assert_int_equal(ts__tablet_block_locate(cb), 0);
	assert_int_equal(ts__bcache_put(&bc, cb, TS_BCACHE_EVICT), 1);
	ts__cblock_put(&bc, cb);
	warm_calls = warm_stop_at = 0;
	assert_int_equal(ts__tablet_warm(t, &bc, 800, count_warm_between, NULL), 0);
	assert_true(bc.used <= bc.cap);
	assert_non_null(cb = ts__bcache_get(&bc, 700, 0)); /* not evicted */
	ts__cblock_put(&bc, cb);
	size_t k = bc.count - 1;
	assert_in_range(k, 2, nb / 4);
	assert_int_equal(warm_calls, (int)(k / TS_WARM_YIELD_BLOCKS)); /* no block read past them */
	for (uint32_t b = 0; b < nb; b++) {
		int used;
		cb = ts__bcache_peek(&bc, 800, b, &used);
		assert_true((cb != NULL) == (b < k));
		ts__cblock_put(&bc, cb);
	}
	ts__bcache_free(&bc);
	ts__buf_free(&raw);
	ts__tablet_close(t);
	ts_test_rmdir(dir);
	free_rows(&r);
	ts__schema_free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(tablet_write_read_round_trip),
		cmocka_unit_test(tablet_hourly_cuts_small_hours),
		cmocka_unit_test(tablet_bloom_has_every_stem),
		cmocka_unit_test(tablet_bloom_bits_are_the_documented_ones),
		cmocka_unit_test(tablet_block_for_matches_a_linear_search),
		cmocka_unit_test(tablet_huge_and_incompressible_rows),
		cmocka_unit_test(tablet_writer_refuses_disorder_and_empty),
		cmocka_unit_test(tablet_block_hi_and_versions),
		cmocka_unit_test(tablet_pool_writes_the_same_bytes),
		cmocka_unit_test(tablet_writer_warms_the_block_cache),
		cmocka_unit_test(tablet_warm_fills_spare_room_only),
		cmocka_unit_test(tablet_open_missing_or_misnamed),
		cmocka_unit_test(tablet_flipped_byte_in_every_part),
		cmocka_unit_test(tablet_truncated_anywhere),
	};
	return cmocka_run_group_tests_name("tablet", tests, NULL, NULL);
}
