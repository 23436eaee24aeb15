/*
 * tablet.c -- writing and reading on-disk tablet files
 * (docs/tablet-format.md; constants in tablet_format.h).
 *
 * The writer streams: rows accumulate in a raw block until the next row
 * would take it past TS_TABLET_BLOCK (or TS_TABLET_INDEX_SHARE times its
 * index entry, in wide tables: block_ends); the block is then compressed
 * (LZO1X-1, or stored raw when that is no smaller), checksummed and
 * written, and its index entry -- last key, timespan, per-column
 * statistics -- is appended to the footer being built.  Distinct key
 * stems arrive consecutively (rows come in key order, and the stem is a
 * key prefix), so counting them for the Bloom filter needs only the
 * previous stem.
 *
 * The reader keeps the decompressed footer and points into it; each
 * block read is checked (CRC over header and bytes, exact decompressed
 * length) before a single row of it is handed out.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <lzo1x.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bcache.h"
#include "crc32c.h"
#include "error.h"
#include "fsutil.h"
#include "key.h"
#include "period.h"
#include "limits.h"
#include "row.h"
#include "tablet.h"
#include "tablet_format.h"

/* ---- shared ---- */

static pthread_once_t lzo_once = PTHREAD_ONCE_INIT;
static int lzo_ok;

static void lzo_setup(void) { lzo_ok = lzo_init() == LZO_E_OK; }

static int lzo_ready(void)
{
	pthread_once(&lzo_once, lzo_setup);
	return lzo_ok ? 0 : ts__fail(TS_EIO, "the LZO library failed to initialise");
}

/* Worst-case LZO1X output for n input bytes (lzo's documented bound). */
int ts__tablet_name(uint64_t id, char *out, size_t size)
{
	int n = snprintf(out, size, "%016" PRIx64 TS_TABLET_SUFFIX, id);
	return n > 0 && (size_t)n < size ? 0 : ts__fail(TS_ETOOBIG, "tablet name too long");
}

/* The Bloom filter's two hashes of a stem (FNV-1a, then a 64-bit mix). */
static uint64_t stem_hash(const unsigned char *p, size_t n)
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

/* The bits of a stem whose hash is h, in a filter of nbits: bit i is
 * (h1 + i * h2) mod nbits (docs/tablet-format.md), stepped here with two
 * divisions in all instead of one per bit. */
typedef struct bloom_walk {
	uint64_t bit, step, nbits;
} bloom_walk;

static bloom_walk bloom_start(uint64_t h, uint32_t nbits)
{
	uint32_t h1 = (uint32_t)h, h2 = (uint32_t)(h >> 32) | 1;
	return (bloom_walk){h1 % nbits, h2 % nbits, nbits};
}

static uint32_t bloom_next(bloom_walk *w)
{
	uint32_t bit = (uint32_t)w->bit;
	w->bit += w->step;
	if (w->bit >= w->nbits)
		w->bit -= w->nbits;
	return bit;
}

static int is_stat_type(int type)
{
	return type == TS_INT32 || type == TS_INT64 || type == TS_TIMESTAMP || type == TS_DOUBLE;
}

/* ---- statistics ---- */

static void stat_reset(ts__colstat *st)
{
	memset(st, 0, sizeof *st);
	st->min.type = st->max.type = TS_NONE;
}

static void stat_add(ts__colstat *st, const ts_value *v)
{
	if (v->type == TS_DOUBLE) {
		double d = v->v.d;
		if (d != d) /* NaN: not counted */
			return;
		st->dsum += d;
		if (!st->count || d < st->min.v.d)
			st->min = *v;
		if (!st->count || d > st->max.v.d)
			st->max = *v;
	} else {
		st->isum += v->v.i;
		if (!st->count || v->v.i < st->min.v.i)
			st->min = *v;
		if (!st->count || v->v.i > st->max.v.i)
			st->max = *v;
	}
	st->count++;
}

static uint64_t value_bits(const ts_value *v)
{
	uint64_t u = 0;
	if (v->type == TS_DOUBLE)
		memcpy(&u, &v->v.d, 8);
	else if (v->type != TS_NONE)
		u = (uint64_t)v->v.i;
	return u;
}

static void stat_put(ts_buf *b, const ts__colstat *st, int type)
{
	ts__put_u64(b, st->count);
	if (type == TS_DOUBLE) {
		uint64_t u;
		memcpy(&u, &st->dsum, 8);
		ts__put_u64(b, u);
		ts__put_u64(b, 0);
	} else {
		ts__put_u64(b, (uint64_t)st->isum);
		ts__put_u64(b, (uint64_t)(st->isum >> 64));
	}
	ts__put_u64(b, value_bits(&st->min));
	ts__put_u64(b, value_bits(&st->max));
}

static ts_value value_of(int type, uint64_t bits)
{
	ts_value v;
	v.type = type;
	if (type == TS_DOUBLE)
		memcpy(&v.v.d, &bits, 8);
	else
		v.v.i = (int64_t)bits;
	return v;
}

void ts__tablet_stat(const ts__tablet *t, uint32_t i, uint32_t j, ts__colstat *out)
{
	const unsigned char *p = t->blocks[i].stats + (size_t)j * TS_STAT_SIZE;
	int type = t->stat_types[j];
	stat_reset(out);
	out->count = ts__load_u64(p);
	if (type == TS_DOUBLE)
		memcpy(&out->dsum, p + 8, 8);
	else
		out->isum = (__int128)(((unsigned __int128)ts__load_u64(p + 16) << 64) |
		                       ts__load_u64(p + 8));
	if (out->count) {
		out->min = value_of(type, ts__load_u64(p + 24));
		out->max = value_of(type, ts__load_u64(p + 32));
	}
}

/* ---- writing ---- */

struct ts__tablet_writer {
	int fd;
	char dir[TS_PATH_MAX], tmp[TS_PATH_MAX];
	const ts__schema *s;
	uint64_t id;
	int64_t period_start, period_end;
	void *wrkmem;
	ts_buf block, stored, index, first_key, last_key, bfirst, scratch;
	uint64_t *stems;            /* hashes of the distinct stems */
	size_t nstems, stems_cap;
	uint64_t offset, rows;
	uint64_t sync_started;      /* writeback started for [0, sync_started) */
	int64_t min_ts, max_ts;
	uint32_t nblocks, brows;
	int64_t bmin, bmax;
	int nstat;
	uint16_t stat_cols[TS_COLUMNS_MAX];
	ts__colstat st[TS_COLUMNS_MAX];
	ts_value vals[TS_COLUMNS_MAX];
};

static void writer_free(ts__tablet_writer *w)
{
	if (w->fd >= 0)
		close(w->fd);
	free(w->wrkmem);
	free(w->stems);
	ts__buf_free(&w->block);
	ts__buf_free(&w->stored);
	ts__buf_free(&w->index);
	ts__buf_free(&w->first_key);
	ts__buf_free(&w->last_key);
	ts__buf_free(&w->bfirst);
	ts__buf_free(&w->scratch);
	free(w);
}

int ts__tablet_writer_open(const char *dir, uint64_t id, const ts__schema *s,
                           int64_t period_start, int64_t period_end,
                           ts__tablet_writer **out)
{
	unsigned char h[TS_TABH_SIZE] = {0};
	char name[64];
	int rc = lzo_ready();
	*out = NULL;
	if (rc < 0)
		return rc;
	ts__tablet_writer *w = calloc(1, sizeof *w);
	if (!w)
		return ts__fail(TS_ENOMEM, "out of memory");
	w->fd = -1;
	w->s = s;
	w->id = id;
	w->period_start = period_start;
	w->period_end = period_end;
	w->min_ts = INT64_MAX;
	w->max_ts = INT64_MIN;
	for (int c = 0; c < s->ncols; c++)
		if (c != s->ts_col && is_stat_type(s->cols[c].type))
			w->stat_cols[w->nstat++] = (uint16_t)c;
	if (!(w->wrkmem = malloc(LZO1X_1_MEM_COMPRESS))) {
		writer_free(w);
		return ts__fail(TS_ENOMEM, "out of memory");
	}
	if ((rc = ts__tablet_name(id, name, sizeof name)) < 0 ||
	    (rc = ts__path(w->dir, "%s", dir)) < 0 || (rc = ts__path(w->tmp, "%s/.tmp-%s", dir, name)) < 0) {
		writer_free(w);
		return rc;
	}
	w->fd = open(w->tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (w->fd < 0) {
		rc = ts__fail_errno(errno, "create %s", w->tmp);
		writer_free(w);
		return rc;
	}
	memcpy(h + TS_TABH_OFF_MAGIC, TS_TABH_MAGIC, 8);
	ts__store_u32(h + TS_TABH_OFF_VERSION, TS_TABLET_VERSION);
	ts__store_u32(h + TS_TABH_OFF_SIZE, TS_TABH_SIZE);
	ts__store_u64(h + TS_TABH_OFF_ID, id);
	ts__store_u32(h + TS_TABH_OFF_SCHEMA, s->version);
	ts__store_u32(h + TS_TABH_OFF_CRC, ts__crc32c(0, h, TS_TABH_OFF_CRC));
	if ((rc = ts__write_at(w->fd, h, sizeof h, 0, w->tmp)) < 0) {
		ts__tablet_writer_abort(w);
		return rc;
	}
	w->offset = TS_TABH_SIZE;
	for (int j = 0; j < w->nstat; j++)
		stat_reset(&w->st[j]);
	*out = w;
	return 0;
}

/* Compress p[0..n) into w->stored, or leave it raw when that is smaller;
 * returns the codec. */
static int compress(ts__tablet_writer *w, const unsigned char *p, size_t n)
{
	lzo_uint out = 0;
	w->stored.len = 0;
	if (ts__buf_reserve(&w->stored, ts__lzo_bound(n)) == 0 &&
	    lzo1x_1_compress(p, n, w->stored.data, &out, w->wrkmem) == LZO_E_OK && out < n) {
		w->stored.len = out;
		return TS_CODEC_LZO1X;
	}
	w->stored.len = 0;
	return TS_CODEC_RAW;
}

/*
 * Keep the dirty pages of a tablet being written few: every
 * TS_TABLET_SYNC_BYTES, start writeback of what was written since, and
 * wait for the writeback started the time before.  Without it a merge of
 * hundreds of megabytes leaves them all dirty until its fsync, and the
 * kernel then throttles whoever dirties pages next -- the inserting
 * thread, writing to the mapped log (SILK's point: background writes
 * must not stall the clients).  Failures here are not errors: the final
 * fsync reports any I/O error.
 */
static void pace_writeback(ts__tablet_writer *w)
{
	if (w->offset - w->sync_started < TS_TABLET_SYNC_BYTES)
		return;
	if (w->sync_started)
		sync_file_range(w->fd, 0, (off_t)w->sync_started,
		                SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE |
		                SYNC_FILE_RANGE_WAIT_AFTER);
	sync_file_range(w->fd, (off_t)w->sync_started, (off_t)(w->offset - w->sync_started),
	                SYNC_FILE_RANGE_WRITE);
	w->sync_started = w->offset;
}

/* Compress, checksum and write the current block; index it. */
static int cut_block(ts__tablet_writer *w)
{
	unsigned char h[TS_BLKH_SIZE] = {0};
	int codec = compress(w, w->block.data, w->block.len);
	const unsigned char *data = codec == TS_CODEC_RAW ? w->block.data : w->stored.data;
	size_t stored = codec == TS_CODEC_RAW ? w->block.len : w->stored.len;
	ts__store_u32(h + TS_BLKH_OFF_STORED, (uint32_t)stored);
	ts__store_u32(h + TS_BLKH_OFF_RAW, (uint32_t)w->block.len);
	h[TS_BLKH_OFF_CODEC] = (unsigned char)codec;
	uint32_t crc = ts__crc32c(ts__crc32c(0, h, TS_BLKH_OFF_CRC), data, stored);
	ts__store_u32(h + TS_BLKH_OFF_CRC, crc);
	int rc = ts__write_at(w->fd, h, sizeof h, (long long)w->offset, w->tmp);
	if (rc == 0)
		rc = ts__write_at(w->fd, data, stored, (long long)(w->offset + TS_BLKH_SIZE), w->tmp);
	if (rc < 0)
		return rc;
	ts_buf *x = &w->index;
	ts__put_u64(x, w->offset);
	ts__put_u32(x, (uint32_t)stored);
	ts__put_u32(x, (uint32_t)w->block.len);
	ts__put_u32(x, w->brows);
	ts__put_u64(x, (uint64_t)w->bmin);
	ts__put_u64(x, (uint64_t)w->bmax);
	ts__put_bytes(x, w->bfirst.data, w->bfirst.len);
	ts__put_bytes(x, w->last_key.data, w->last_key.len);
	for (int j = 0; j < w->nstat; j++) {
		stat_put(x, &w->st[j], w->s->cols[w->stat_cols[j]].type);
		stat_reset(&w->st[j]);
	}
	if (x->oom)
		return ts__fail(TS_ENOMEM, "out of memory");
	w->offset += TS_BLKH_SIZE + stored;
	w->nblocks++;
	w->block.len = 0;
	w->brows = 0;
	pace_writeback(w);
	return 0;
}

/* Whether key shares its stem (all but the ts) with the previous row. */
static int same_stem(const ts__tablet_writer *w, const unsigned char *key, size_t klen)
{
	return w->rows && w->last_key.len == klen && memcmp(w->last_key.data, key, klen - 8) == 0;
}

/* The bytes of the block's entry in the footer's index, when the row of
 * key (klen bytes) ends it: fixed fields, two keys, the statistics. */
static size_t entry_size(const ts__tablet_writer *w, size_t klen)
{
	return 40 + w->bfirst.len + klen + (size_t)TS_STAT_SIZE * (size_t)w->nstat;
}

/* Whether to cut the block before the row of key: it is full, or it is
 * big enough and the row starts another series or hour.  Both sizes grow
 * with the block's index entry (TS_TABLET_INDEX_SHARE), so that the
 * footer of a wide table stays a small share of its rows. */
static int block_ends(const ts__tablet_writer *w, const unsigned char *key, size_t klen,
                      size_t len, int same)
{
	size_t share = TS_TABLET_INDEX_SHARE * entry_size(w, klen);
	size_t full = share > TS_TABLET_BLOCK ? share : TS_TABLET_BLOCK;
	size_t align_min = share > TS_TABLET_BLOCK_ALIGN_MIN ? share : TS_TABLET_BLOCK_ALIGN_MIN;
	if (w->block.len + len + 10 > full)
		return w->block.len > 0;
	if (w->block.len < align_min)
		return 0;
	int64_t last = ts__key_ts(w->last_key.data, w->last_key.len);
	return !same || ts__floor_div(last, TS_TABLET_BLOCK_ALIGN) !=
	                    ts__floor_div(ts__key_ts(key, klen), TS_TABLET_BLOCK_ALIGN);
}

static int remember_stem(ts__tablet_writer *w, const unsigned char *key, size_t klen, int same)
{
	size_t n = klen - 8;
	if (same)
		return 0; /* same stem as the previous row */
	if (w->nstems == w->stems_cap) {
		size_t cap = w->stems_cap ? w->stems_cap * 2 : 1024;
		uint64_t *s = realloc(w->stems, cap * sizeof *s);
		if (!s)
			return ts__fail(TS_ENOMEM, "out of memory");
		w->stems = s;
		w->stems_cap = cap;
	}
	w->stems[w->nstems++] = stem_hash(key, n);
	return 0;
}

int ts__tablet_writer_add(ts__tablet_writer *w, const void *row, size_t len)
{
	const void *kp;
	size_t klen;
	int rc = ts__row_key(row, len, &kp, &klen);
	const unsigned char *key = kp;
	if (rc < 0 || klen < 8)
		return rc < 0 ? rc : ts__fail(TS_ECORRUPT, "row key of %zu bytes", klen);
	if (w->rows && ts__key_cmp(w->last_key.data, w->last_key.len, key, klen) >= 0)
		return ts__fail(TS_EINVAL, "tablet %016" PRIx64 ": rows out of key order", w->id);
	if ((rc = ts__row_decode(w->s, w->s, row, len, w->vals, &w->scratch)) < 0)
		return rc;
	int same = same_stem(w, key, klen);
	if (block_ends(w, key, klen, len, same) && (rc = cut_block(w)) < 0)
		return rc;
	if ((rc = remember_stem(w, key, klen, same)) < 0)
		return rc;
	int64_t ts = ts__key_ts(key, klen);
	for (int j = 0; j < w->nstat; j++)
		stat_add(&w->st[j], &w->vals[w->stat_cols[j]]);
	ts__put_bytes(&w->block, row, len);
	if (!w->rows)
		ts__put(&w->first_key, key, klen);
	if (!w->brows) {
		w->bfirst.len = 0;
		ts__put(&w->bfirst, key, klen);
	}
	w->last_key.len = 0;
	ts__put(&w->last_key, key, klen);
	if (w->block.oom || w->first_key.oom || w->last_key.oom || w->bfirst.oom)
		return ts__fail(TS_ENOMEM, "out of memory");
	w->bmin = w->brows ? (ts < w->bmin ? ts : w->bmin) : ts;
	w->bmax = w->brows ? (ts > w->bmax ? ts : w->bmax) : ts;
	w->brows++;
	w->rows++;
	if (ts < w->min_ts)
		w->min_ts = ts;
	if (ts > w->max_ts)
		w->max_ts = ts;
	return 0;
}

/* The raw footer: fixed fields, statistics columns, keys, index, Bloom. */
static int build_footer(ts__tablet_writer *w, ts_buf *f)
{
	ts__put_u32(f, w->s->version);
	ts__put_u64(f, w->id);
	ts__put_u64(f, w->rows);
	ts__put_u64(f, (uint64_t)w->min_ts);
	ts__put_u64(f, (uint64_t)w->max_ts);
	ts__put_u64(f, (uint64_t)w->period_start);
	ts__put_u64(f, (uint64_t)w->period_end);
	ts__put_u32(f, w->nblocks);
	ts__put_u32(f, (uint32_t)w->nstat);
	for (int j = 0; j < w->nstat; j++) {
		ts__put_u16(f, w->stat_cols[j]);
		ts__put_u8(f, (uint8_t)w->s->cols[w->stat_cols[j]].type);
		ts__put_u8(f, 0);
	}
	ts__put_bytes(f, w->first_key.data, w->first_key.len);
	ts__put_bytes(f, w->last_key.data, w->last_key.len);
	ts__put(f, w->index.data, w->index.len);
	uint64_t nbits = (uint64_t)w->nstems * TS_BLOOM_BITS_PER_STEM;
	nbits = nbits < 64 ? 64 : (nbits + 7) & ~UINT64_C(7);
	if (nbits > UINT32_MAX - 7)
		return ts__fail(TS_ETOOBIG, "tablet %016" PRIx64 ": too many keys", w->id);
	ts__put_u32(f, (uint32_t)nbits);
	ts__put_u8(f, TS_BLOOM_HASHES);
	size_t at = f->len;
	if (ts__buf_reserve(f, nbits / 8) == 0) {
		memset(f->data + at, 0, nbits / 8);
		f->len += nbits / 8;
		for (size_t i = 0; i < w->nstems; i++) {
			bloom_walk bw = bloom_start(w->stems[i], (uint32_t)nbits);
			for (unsigned k = 0; k < TS_BLOOM_HASHES; k++) {
				uint32_t bit = bloom_next(&bw);
				f->data[at + bit / 8] |= (unsigned char)(1u << (bit % 8));
			}
		}
	}
	if (f->oom)
		return ts__fail(TS_ENOMEM, "out of memory");
	if (f->len > TS_TABLET_FOOTER_MAX)
		return ts__fail(TS_ETOOBIG, "tablet %016" PRIx64 ": footer of %zu bytes", w->id, f->len);
	return 0;
}

static int write_tail(ts__tablet_writer *w)
{
	unsigned char t[TS_TABT_SIZE] = {0};
	ts_buf f;
	ts__buf_init(&f);
	int rc = build_footer(w, &f);
	if (rc < 0) {
		ts__buf_free(&f);
		return rc;
	}
	int codec = compress(w, f.data, f.len);
	const unsigned char *data = codec == TS_CODEC_RAW ? f.data : w->stored.data;
	size_t stored = codec == TS_CODEC_RAW ? f.len : w->stored.len;
	ts__store_u64(t + TS_TABT_OFF_FOOTER, w->offset);
	ts__store_u32(t + TS_TABT_OFF_STORED, (uint32_t)stored);
	ts__store_u32(t + TS_TABT_OFF_RAW, (uint32_t)f.len);
	ts__store_u32(t + TS_TABT_OFF_FOOTER_CRC, ts__crc32c(0, data, stored));
	t[TS_TABT_OFF_CODEC] = (unsigned char)codec;
	ts__store_u32(t + TS_TABT_OFF_CRC, ts__crc32c(0, t, TS_TABT_OFF_CRC));
	memcpy(t + TS_TABT_OFF_MAGIC, TS_TABT_MAGIC, 8);
	rc = ts__write_at(w->fd, data, stored, (long long)w->offset, w->tmp);
	if (rc == 0)
		rc = ts__write_at(w->fd, t, sizeof t, (long long)(w->offset + stored), w->tmp);
	w->offset += stored + sizeof t;
	ts__buf_free(&f);
	return rc;
}

int ts__tablet_writer_finish(ts__tablet_writer *w, uint64_t *rows, uint64_t *bytes,
                             int64_t *min_ts, int64_t *max_ts)
{
	char name[64], path[TS_PATH_MAX];
	int rc = w->rows ? 0 : ts__fail(TS_EINVAL, "tablet %016" PRIx64 " has no rows", w->id);
	if (rc == 0 && w->block.len)
		rc = cut_block(w);
	if (rc == 0)
		rc = write_tail(w);
	if (rc == 0 && fsync(w->fd) < 0)
		rc = ts__fail_errno(errno, "fsync %s", w->tmp);
	if (rc == 0)
		rc = ts__tablet_name(w->id, name, sizeof name);
	if (rc == 0)
		rc = ts__path(path, "%s/%s", w->dir, name);
	if (rc == 0 && rename(w->tmp, path) < 0)
		rc = ts__fail_errno(errno, "rename %s", w->tmp);
	if (rc < 0) {
		ts__tablet_writer_abort(w);
		return rc;
	}
	if (rows)
		*rows = w->rows;
	if (bytes)
		*bytes = w->offset;
	if (min_ts)
		*min_ts = w->min_ts;
	if (max_ts)
		*max_ts = w->max_ts;
	rc = ts__fsync_dir(w->dir);
	writer_free(w);
	return rc;
}

void ts__tablet_writer_abort(ts__tablet_writer *w)
{
	if (!w)
		return;
	unlink(w->tmp);
	writer_free(w);
}

/* ---- reading ---- */

static int damaged(const ts__tablet *t, const char *part, const char *why)
{
	return ts__fail(TS_ECORRUPT, "tablet %s: damaged %s: %s", t->path, part, why);
}

static int pread_exact(const ts__tablet *t, void *p, size_t n, uint64_t off)
{
	size_t done = 0;
	while (done < n) {
		ssize_t k = pread(t->fd, (char *)p + done, n - done, (off_t)(off + done));
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return ts__fail_errno(errno, "read %s", t->path);
		if (k == 0)
			return damaged(t, "file", "shorter than its index says");
		done += (size_t)k;
	}
	return 0;
}

/* Decompress stored[0..n) with codec into exactly raw bytes of out. */
static int expand(const ts__tablet *t, const char *part, int codec, const unsigned char *stored,
                  size_t n, size_t raw, ts_buf *out)
{
	out->len = 0;
	if (ts__buf_reserve(out, raw ? raw : 1) < 0)
		return ts__fail(TS_ENOMEM, "out of memory");
	if (codec == TS_CODEC_RAW) {
		if (n != raw)
			return damaged(t, part, "stored and raw lengths differ");
		memcpy(out->data, stored, n);
	} else if (codec == TS_CODEC_LZO1X) {
		lzo_uint got = raw;
		if (lzo1x_decompress_safe(stored, n, out->data, &got, NULL) != LZO_E_OK || got != raw)
			return damaged(t, part, "does not decompress");
	} else {
		return damaged(t, part, "unknown codec");
	}
	out->len = raw;
	return 0;
}

static int check_header(ts__tablet *t, uint64_t id)
{
	unsigned char h[TS_TABH_SIZE];
	int rc = pread_exact(t, h, sizeof h, 0);
	if (rc < 0)
		return rc;
	if (memcmp(h + TS_TABH_OFF_MAGIC, TS_TABH_MAGIC, 8) != 0)
		return damaged(t, "header", "bad magic");
	if (ts__load_u32(h + TS_TABH_OFF_CRC) != ts__crc32c(0, h, TS_TABH_OFF_CRC))
		return damaged(t, "header", "checksum mismatch");
	t->format = ts__load_u32(h + TS_TABH_OFF_VERSION);
	if (t->format < TS_TABLET_VERSION_MIN || t->format > TS_TABLET_VERSION)
		return ts__fail(TS_EVERSION, "tablet %s: format version %u", t->path, t->format);
	if (ts__load_u32(h + TS_TABH_OFF_SIZE) != TS_TABH_SIZE)
		return damaged(t, "header", "bad header size");
	t->id = ts__load_u64(h + TS_TABH_OFF_ID);
	t->schema_version = ts__load_u32(h + TS_TABH_OFF_SCHEMA);
	if (t->id != id)
		return damaged(t, "header", "names another tablet");
	return 0;
}

/* Read and decompress the footer the trailer points at into raw. */
static int read_footer(ts__tablet *t, ts_buf *raw)
{
	unsigned char tr[TS_TABT_SIZE];
	int rc = pread_exact(t, tr, sizeof tr, t->size - TS_TABT_SIZE);
	if (rc < 0)
		return rc;
	if (memcmp(tr + TS_TABT_OFF_MAGIC, TS_TABT_MAGIC, 8) != 0)
		return damaged(t, "trailer", "bad magic");
	if (ts__load_u32(tr + TS_TABT_OFF_CRC) != ts__crc32c(0, tr, TS_TABT_OFF_CRC) ||
	    ts__load_u32(tr + TS_TABT_OFF_ZERO) != 0)
		return damaged(t, "trailer", "checksum mismatch");
	uint64_t off = ts__load_u64(tr + TS_TABT_OFF_FOOTER);
	uint32_t stored = ts__load_u32(tr + TS_TABT_OFF_STORED);
	uint32_t rawlen = ts__load_u32(tr + TS_TABT_OFF_RAW);
	if (off < TS_TABH_SIZE || stored > TS_TABLET_FOOTER_MAX || rawlen > TS_TABLET_FOOTER_MAX ||
	    off + stored != t->size - TS_TABT_SIZE)
		return damaged(t, "trailer", "footer position out of the file");
	unsigned char *buf = malloc(stored ? stored : 1);
	if (!buf)
		return ts__fail(TS_ENOMEM, "out of memory");
	rc = pread_exact(t, buf, stored, off);
	if (rc == 0 && ts__load_u32(tr + TS_TABT_OFF_FOOTER_CRC) != ts__crc32c(0, buf, stored))
		rc = damaged(t, "footer", "checksum mismatch");
	if (rc == 0)
		rc = expand(t, "footer", tr[TS_TABT_OFF_CODEC], buf, stored, rawlen, raw);
	free(buf);
	return rc;
}

static ts__key_head key_head(const void *key, size_t len)
{
	unsigned char b[16] = {0};
	memcpy(b, key, len < 16 ? len : 16);
	return (ts__key_head){ts__load_be64(b), ts__load_be64(b + 8)};
}

static int parse_blocks(ts__tablet *t, ts_reader *r, uint64_t footer_off)
{
	uint64_t expect = TS_TABH_SIZE;
	t->blocks = calloc(t->nblocks ? t->nblocks : 1, sizeof *t->blocks);
	t->heads = calloc(t->nblocks ? t->nblocks : 1, sizeof *t->heads);
	if (!t->blocks || !t->heads)
		return ts__fail(TS_ENOMEM, "out of memory");
	for (uint32_t i = 0; i < t->nblocks && !r->bad; i++) {
		ts__tablet_block *b = &t->blocks[i];
		const void *k;
		size_t klen;
		b->offset = ts__get_u64(r);
		b->stored = ts__get_u32(r);
		b->raw = ts__get_u32(r);
		b->rows = ts__get_u32(r);
		b->min_ts = (int64_t)ts__get_u64(r);
		b->max_ts = (int64_t)ts__get_u64(r);
		size_t flen = 8;
		if (t->format >= 2) { /* version 1 did not record first keys */
			ts__get_bytes(r, &k, &flen);
			b->first_key = k;
			b->first_klen = (uint32_t)flen;
		}
		ts__get_bytes(r, &k, &klen);
		b->last_key = k;
		b->last_klen = (uint32_t)klen;
		if (k)
			t->heads[i] = key_head(k, klen);
		b->stats = ts__get_raw(r, (size_t)t->nstat * TS_STAT_SIZE);
		if (!r->bad && b->first_key && ts__key_cmp(b->first_key, flen, k, klen) > 0)
			return damaged(t, "footer", "inconsistent block index");
		if (!r->bad && (b->offset != expect || b->rows == 0 || klen < 8 || flen < 8 ||
		                b->raw > TS_ROW_MAX + TS_TABLET_BLOCK || b->min_ts > b->max_ts))
			return damaged(t, "footer", "inconsistent block index");
		expect = b->offset + TS_BLKH_SIZE + b->stored;
	}
	if (!r->bad && expect != footer_off)
		return damaged(t, "footer", "blocks do not end where the footer starts");
	return r->bad ? damaged(t, "footer", "truncated") : 0;
}

static int parse_footer(ts__tablet *t, size_t len, uint64_t footer_off)
{
	ts_reader r;
	const void *p;
	size_t n;
	ts__reader_init(&r, t->footer, len);
	uint32_t version = ts__get_u32(&r);
	uint64_t id = ts__get_u64(&r);
	t->rows = ts__get_u64(&r);
	t->min_ts = (int64_t)ts__get_u64(&r);
	t->max_ts = (int64_t)ts__get_u64(&r);
	t->period_start = (int64_t)ts__get_u64(&r);
	t->period_end = (int64_t)ts__get_u64(&r);
	t->nblocks = ts__get_u32(&r);
	t->nstat = ts__get_u32(&r);
	if (r.bad || version != t->schema_version || id != t->id || t->nstat > TS_COLUMNS_MAX ||
	    t->nblocks == 0 || t->nblocks > len / 8 || t->rows < t->nblocks || t->min_ts > t->max_ts)
		return damaged(t, "footer", "inconsistent header fields");
	t->stat_cols = malloc((t->nstat ? t->nstat : 1) * sizeof *t->stat_cols);
	t->stat_types = malloc(t->nstat ? t->nstat : 1);
	if (!t->stat_cols || !t->stat_types)
		return ts__fail(TS_ENOMEM, "out of memory");
	for (uint32_t j = 0; j < t->nstat; j++) {
		t->stat_cols[j] = ts__get_u16(&r);
		t->stat_types[j] = ts__get_u8(&r);
		uint8_t pad = ts__get_u8(&r);
		if (!is_stat_type(t->stat_types[j]) || pad != 0)
			return damaged(t, "footer", "bad statistics column");
	}
	ts__get_bytes(&r, &p, &n);
	t->first_key = p;
	t->first_klen = (uint32_t)n;
	ts__get_bytes(&r, &p, &n);
	t->last_key = p;
	t->last_klen = (uint32_t)n;
	int rc = parse_blocks(t, &r, footer_off);
	if (rc < 0)
		return rc;
	t->bloom_bits = ts__get_u32(&r);
	t->bloom_k = ts__get_u8(&r);
	t->bloom = ts__get_raw(&r, t->bloom_bits / 8);
	if (r.bad || ts__reader_left(&r) != 0 || t->bloom_bits % 8 || t->bloom_bits == 0 ||
	    t->bloom_k == 0 || t->bloom_k > 32 || t->first_klen < 8 || t->last_klen < 8)
		return damaged(t, "footer", "truncated or malformed");
	return 0;
}

int ts__tablet_open(const char *path, uint64_t id, ts__tablet **out)
{
	struct stat st;
	ts_buf raw;
	uint64_t footer_off = 0;
	int rc;
	*out = NULL;
	if ((rc = lzo_ready()) < 0)
		return rc;
	ts__tablet *t = calloc(1, sizeof *t);
	if (!t || !(t->path = strdup(path))) {
		free(t);
		return ts__fail(TS_ENOMEM, "out of memory");
	}
	ts__buf_init(&raw);
	t->serial = ts__bcache_serial();
	t->fd = open(path, O_RDONLY | O_CLOEXEC);
	if (t->fd < 0)
		rc = errno == ENOENT ? ts__fail(TS_ENOENT, "tablet %s does not exist", path)
		                     : ts__fail_errno(errno, "open %s", path);
	else if (fstat(t->fd, &st) < 0)
		rc = ts__fail_errno(errno, "stat %s", path);
	else if ((t->size = (uint64_t)st.st_size) < TS_TABH_SIZE + TS_TABT_SIZE)
		rc = damaged(t, "file", "too short");
	if (rc == 0)
		rc = check_header(t, id);
	if (rc == 0)
		rc = read_footer(t, &raw);
	if (rc == 0) {
		unsigned char tr[8];
		rc = pread_exact(t, tr, 8, t->size - TS_TABT_SIZE + TS_TABT_OFF_FOOTER);
		footer_off = ts__load_u64(tr);
	}
	if (rc == 0) {
		t->footer = raw.data; /* owned by t from here */
		raw.data = NULL;
		rc = parse_footer(t, raw.len, footer_off);
	}
	ts__buf_free(&raw);
	if (rc < 0) {
		ts__tablet_close(t);
		return rc;
	}
	*out = t;
	return 0;
}

void ts__tablet_close(ts__tablet *t)
{
	if (!t)
		return;
	if (t->fd >= 0)
		close(t->fd);
	free(t->path);
	free(t->blocks);
	free(t->heads);
	free(t->stat_cols);
	free(t->stat_types);
	free(t->footer);
	free(t);
}

int ts__tablet_read_block(const ts__tablet *t, uint32_t i, ts_buf *raw)
{
	char part[48];
	const ts__tablet_block *b = &t->blocks[i];
	unsigned char *buf = malloc((size_t)TS_BLKH_SIZE + b->stored);
	if (!buf)
		return ts__fail(TS_ENOMEM, "out of memory");
	snprintf(part, sizeof part, "block %u", i);
	int rc = pread_exact(t, buf, (size_t)TS_BLKH_SIZE + b->stored, b->offset);
	if (rc == 0 && (ts__load_u32(buf + TS_BLKH_OFF_STORED) != b->stored ||
	                ts__load_u32(buf + TS_BLKH_OFF_RAW) != b->raw ||
	                buf[9] | buf[10] | buf[11]))
		rc = damaged(t, part, "header disagrees with the index");
	if (rc == 0 && ts__load_u32(buf + TS_BLKH_OFF_CRC) !=
	                   ts__crc32c(ts__crc32c(0, buf, TS_BLKH_OFF_CRC), buf + TS_BLKH_SIZE, b->stored))
		rc = damaged(t, part, "checksum mismatch");
	if (rc == 0)
		rc = expand(t, part, buf[TS_BLKH_OFF_CODEC], buf + TS_BLKH_SIZE, b->stored, b->raw, raw);
	free(buf);
	return rc;
}

int ts__tablet_block_next(ts_reader *r, const void **row, size_t *len)
{
	if (ts__reader_left(r) == 0)
		return 0;
	ts__get_bytes(r, row, len);
	return r->bad || *len == 0 ? ts__fail(TS_ECORRUPT, "malformed row in a tablet block") : 1;
}

int ts__tablet_may_contain(const ts__tablet *t, const void *stem, size_t len)
{
	bloom_walk bw = bloom_start(stem_hash(stem, len), t->bloom_bits);
	for (unsigned k = 0; k < t->bloom_k; k++) {
		uint32_t bit = bloom_next(&bw);
		if (!(t->bloom[bit / 8] & (1u << (bit % 8))))
			return 0;
	}
	return 1;
}

uint32_t ts__tablet_block_for(const ts__tablet *t, const void *key, size_t klen)
{
	ts__key_head k = key_head(key, klen);
	uint32_t lo = 0, hi = t->nblocks;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		const ts__key_head *h = &t->heads[mid];
		int c = h->hi != k.hi ? (h->hi < k.hi ? -1 : 1)
		        : h->lo != k.lo ? (h->lo < k.lo ? -1 : 1)
		                        : ts__key_cmp(t->blocks[mid].last_key, t->blocks[mid].last_klen,
		                                      key, klen);
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

int ts__tablet_find(const ts__tablet *t, const void *key, size_t klen, ts_buf *raw)
{
	const void *row, *k;
	size_t len, kl;
	ts_reader r;
	int rc;
	if (klen < 8 || !ts__tablet_may_contain(t, key, klen - 8))
		return 0;
	uint32_t i = ts__tablet_block_for(t, key, klen);
	if (i == t->nblocks)
		return 0;
	if ((rc = ts__tablet_read_block(t, i, raw)) < 0)
		return rc;
	ts__reader_init(&r, raw->data, raw->len);
	while ((rc = ts__tablet_block_next(&r, &row, &len)) == 1) {
		if ((rc = ts__row_key(row, len, &k, &kl)) < 0)
			return rc;
		int c = ts__key_cmp(k, kl, key, klen);
		if (c >= 0)
			return c == 0;
	}
	return rc;
}

/* ---- checking ---- */

static int stat_equal(const ts__colstat *a, const ts__colstat *b, int type)
{
	if (a->count != b->count || (type == TS_DOUBLE ? memcmp(&a->dsum, &b->dsum, 8) != 0
	                                                : a->isum != b->isum))
		return 0;
	return !a->count || (value_bits(&a->min) == value_bits(&b->min) &&
	                     value_bits(&a->max) == value_bits(&b->max));
}

/* What the blocks said so far, for the tablet-wide checks at the end.
 * A damaged block contributes what its index entry says. */
struct seen {
	ts_buf prev;          /* the last key so far, across blocks */
	ts_buf first;         /* the tablet's first key */
	int first_seen;       /* block 0 was looked at (first may stay empty
	                       * when it is damaged in a format-1 tablet) */
	uint64_t rows;
	int64_t lo, hi;       /* timespan */
	int stats;            /* whether the footer's statistics columns fit s */
	unsigned char *bloom; /* the Bloom filter of the keys seen */
	int partial;          /* some block could not be read: bloom is partial */
};

/* Add the stem of key to w->bloom unless the previous key (w->prev, not
 * yet replaced) has the same: distinct stems arrive one after the other,
 * as the writer counts them. */
static void seen_stem(const ts__tablet *t, struct seen *w, const unsigned char *key, size_t klen)
{
	if (w->prev.len == klen && memcmp(w->prev.data, key, klen - 8) == 0)
		return;
	bloom_walk bw = bloom_start(stem_hash(key, klen - 8), t->bloom_bits);
	for (unsigned k = 0; k < t->bloom_k; k++) {
		uint32_t bit = bloom_next(&bw);
		w->bloom[bit / 8] |= (unsigned char)(1u << (bit % 8));
	}
}

static void seen_key(struct seen *w, const void *key, size_t klen)
{
	if (!w->first_seen) {
		ts__put(&w->first, key, klen);
		w->first_seen = 1;
	}
	w->prev.len = 0;
	ts__put(&w->prev, key, klen);
}

static void seen_span(struct seen *w, int64_t lo, int64_t hi)
{
	w->lo = lo < w->lo ? lo : w->lo;
	w->hi = hi > w->hi ? hi : w->hi;
}

/* Pass a failure to the verifier; returns non-zero when it must stop
 * (TS_ENOMEM always stops). */
static int report(const ts__tablet_verifier *v, int rc)
{
	return rc == TS_ENOMEM || v->problem(v->arg, rc);
}

/* Whether the footer's statistics columns are columns of s of their type:
 * without that they cannot be recomputed (nor indexed safely). */
static int stats_fit(const ts__tablet *t, const ts__schema *s)
{
	for (uint32_t j = 0; j < t->nstat; j++)
		if (t->stat_cols[j] >= s->ncols || (int)s->cols[t->stat_cols[j]].type != t->stat_types[j])
			return 0;
	return 1;
}

/* Check the rows of block i (in raw) against its index entry.  Rows are
 * decoded with s when it is not NULL.  Returns 0 or the first failure. */
static int check_block(const ts__tablet *t, const ts__schema *s, uint32_t i, const ts_buf *raw,
                       struct seen *w, ts_buf *scratch)
{
	const ts__tablet_block *b = &t->blocks[i];
	ts__colstat st[TS_COLUMNS_MAX], want;
	ts_value vals[TS_COLUMNS_MAX];
	ts_reader r;
	const void *row, *key;
	size_t len, klen;
	uint32_t n = 0;
	int64_t lo = INT64_MAX, hi = INT64_MIN;
	char part[48];
	int rc;
	snprintf(part, sizeof part, "block %u", i);
	for (uint32_t j = 0; j < t->nstat; j++)
		stat_reset(&st[j]);
	ts__reader_init(&r, raw->data, raw->len);
	while ((rc = ts__tablet_block_next(&r, &row, &len)) == 1) {
		if ((rc = ts__row_key(row, len, &key, &klen)) < 0 || klen < 8 ||
		    (w->prev.len && ts__key_cmp(w->prev.data, w->prev.len, key, klen) >= 0))
			return damaged(t, part, "rows out of key order");
		if (s && (rc = ts__row_decode(s, s, row, len, vals, scratch)) < 0)
			return rc == TS_ECORRUPT ? damaged(t, part, "a row does not decode") : rc;
		for (uint32_t j = 0; s && w->stats && j < t->nstat; j++)
			stat_add(&st[j], &vals[t->stat_cols[j]]);
		int64_t ts = ts__key_ts(key, klen);
		lo = ts < lo ? ts : lo;
		hi = ts > hi ? ts : hi;
		if (n == 0 && b->first_key &&
		    (klen != b->first_klen || memcmp(key, b->first_key, klen) != 0))
			return damaged(t, part, "first key differs from the index");
		seen_stem(t, w, key, klen);
		seen_key(w, key, klen);
		n++;
	}
	if (rc < 0)
		return damaged(t, part, "malformed row");
	if (n != b->rows || lo != b->min_ts || hi != b->max_ts)
		return damaged(t, part, "rows or timespan differ from the index");
	if (w->prev.len != b->last_klen || memcmp(w->prev.data, b->last_key, w->prev.len) != 0)
		return damaged(t, part, "last key differs from the index");
	for (uint32_t j = 0; s && w->stats && j < t->nstat; j++) {
		ts__tablet_stat(t, i, j, &want);
		if (!stat_equal(&st[j], &want, t->stat_types[j]))
			return damaged(t, part, "statistics differ from the index");
	}
	return 0;
}

/* Take block i's index entry for what the block would have said. */
static void seen_index(const ts__tablet *t, uint32_t i, struct seen *w)
{
	const ts__tablet_block *b = &t->blocks[i];
	if (!w->first_seen && b->first_key)
		ts__put(&w->first, b->first_key, b->first_klen);
	w->first_seen = 1;
	w->prev.len = 0;
	ts__put(&w->prev, b->last_key, b->last_klen);
}

/* The tablet-wide checks, once every block was seen. */
static int check_totals(const ts__tablet *t, const struct seen *w, const ts__tablet_verifier *v)
{
	int rc;
	if (w->rows != t->rows &&
	    report(v, rc = damaged(t, "footer", "row count differs from the blocks")))
		return rc;
	if (w->lo != t->min_ts || w->hi != t->max_ts) {
		if (report(v, rc = damaged(t, "footer", "timespan differs from the blocks")))
			return rc;
	}
	if (w->first.len && (w->first.len != t->first_klen ||
	                     memcmp(w->first.data, t->first_key, t->first_klen) != 0) &&
	    report(v, rc = damaged(t, "footer", "first key differs from the blocks")))
		return rc;
	if ((w->prev.len != t->last_klen || memcmp(w->prev.data, t->last_key, w->prev.len) != 0) &&
	    report(v, rc = damaged(t, "footer", "last key differs from the blocks")))
		return rc;
	if (!w->partial && memcmp(w->bloom, t->bloom, t->bloom_bits / 8) != 0 &&
	    report(v, rc = damaged(t, "footer", "Bloom filter differs from the keys")))
		return rc;
	return 0;
}

int ts__tablet_verify(const ts__tablet *t, const ts__schema *s, const ts__tablet_verifier *v)
{
	struct seen w = {.lo = INT64_MAX, .hi = INT64_MIN, .stats = 1};
	ts_buf raw, scratch;
	int rc = 0;
	if (s && s->version != t->schema_version)
		return ts__fail(TS_EINVAL, "tablet %s: checked with schema version %u, written with %u",
		                t->path, s->version, t->schema_version);
	ts__buf_init(&raw);
	ts__buf_init(&scratch);
	ts__buf_init(&w.prev);
	ts__buf_init(&w.first);
	if (!(w.bloom = calloc(t->bloom_bits / 8, 1))) {
		rc = ts__fail(TS_ENOMEM, "out of memory");
		goto out;
	}
	if (s && !(w.stats = stats_fit(t, s)) &&
	    report(v, rc = damaged(t, "footer", "statistics columns do not match the schema")))
		goto out;
	rc = 0;
	for (uint32_t i = 0; i < t->nblocks; i++) {
		const ts__tablet_block *b = &t->blocks[i];
		if ((rc = ts__tablet_read_block(t, i, &raw)) == 0)
			rc = check_block(t, s, i, &raw, &w, &scratch);
		if (v->progress)
			v->progress(v->arg, TS_BLKH_SIZE + (uint64_t)b->stored);
		if (rc < 0 && report(v, rc))
			goto out;
		if (rc < 0) { /* go on as if the block held what its index says */
			seen_index(t, i, &w);
			w.partial = 1;
		}
		w.rows += b->rows;
		seen_span(&w, b->min_ts, b->max_ts);
		rc = 0;
	}
	if (w.prev.oom || w.first.oom)
		rc = ts__fail(TS_ENOMEM, "out of memory");
	else
		rc = check_totals(t, &w, v);
out:
	ts__buf_free(&raw);
	ts__buf_free(&scratch);
	ts__buf_free(&w.prev);
	ts__buf_free(&w.first);
	free(w.bloom);
	return rc;
}

/* ts__tablet_check's verifier: stop at the first problem. */
static int stop_at_first(void *arg, int code)
{
	(void)arg;
	(void)code;
	return 1;
}

int ts__tablet_check(const ts__tablet *t, const ts__schema *s)
{
	ts__tablet_verifier v = {.problem = stop_at_first};
	return ts__tablet_verify(t, s, &v);
}
