/*
 * tablet.c -- on-disk tablet files (docs/tablet-format.md; constants in
 * tablet_format.h): what their writer, reader and checker share -- the
 * LZO library, file names, a block's statistics as read back -- and
 * reading: opening a tablet, its blocks, finding a key.  Writing is
 * tablet_write.c, checking tablet_check.c; the Bloom filter's hashing and
 * the statistics' arithmetic they all use are inline in tablet_int.h.
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
#include "tslimits.h"
#include "row.h"
#include "tablet.h"
#include "tablet_format.h"
#include "tablet_int.h"

/* ---- shared ---- */

static pthread_once_t lzo_once = PTHREAD_ONCE_INIT;
static int lzo_ok;

static void lzo_setup(void) { lzo_ok = lzo_init() == LZO_E_OK; }

int ts__tablet_lzo_ready(void)
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

/* ---- statistics ---- */

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

/* ---- reading ---- */

int ts__tablet_damaged(const ts__tablet *t, const char *part, const char *why)
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
			return ts__tablet_damaged(t, "file", "shorter than its index says");
		done += (size_t)k;
	}
	return 0;
}

/* Decompress stored[0..n) with codec into exactly raw bytes of out.
 * Returns 0, TS_ENOMEM, or TS_ECORRUPT with *why saying what is wrong;
 * sets no error message, so that a read-ahead helper (readahead.c) may
 * call it on a thread of its own. */
static int expand_bytes(int codec, const unsigned char *stored, size_t n, size_t raw,
                        ts_buf *out, const char **why)
{
	out->len = 0;
	*why = "out of memory";
	if (ts__buf_reserve(out, raw ? raw : 1) < 0)
		return TS_ENOMEM;
	if (codec == TS_CODEC_RAW) {
		*why = "stored and raw lengths differ";
		if (n != raw)
			return TS_ECORRUPT;
		memcpy(out->data, stored, n);
	} else if (codec == TS_CODEC_LZO1X) {
		lzo_uint got = raw;
		*why = "does not decompress";
		if (lzo1x_decompress_safe(stored, n, out->data, &got, NULL) != LZO_E_OK || got != raw)
			return TS_ECORRUPT;
	} else {
		*why = "unknown codec";
		return TS_ECORRUPT;
	}
	out->len = raw;
	return 0;
}

/* expand_bytes, its failure reported against part of tablet t. */
static int expand(const ts__tablet *t, const char *part, int codec, const unsigned char *stored,
                  size_t n, size_t raw, ts_buf *out)
{
	const char *why;
	int rc = expand_bytes(codec, stored, n, raw, out, &why);
	if (rc == TS_ENOMEM)
		return ts__fail(TS_ENOMEM, "out of memory");
	return rc < 0 ? ts__tablet_damaged(t, part, why) : 0;
}

static int check_header(ts__tablet *t, uint64_t id)
{
	unsigned char h[TS_TABH_SIZE];
	int rc = pread_exact(t, h, sizeof h, 0);
	if (rc < 0)
		return rc;
	if (memcmp(h + TS_TABH_OFF_MAGIC, TS_TABH_MAGIC, 8) != 0)
		return ts__tablet_damaged(t, "header", "bad magic");
	if (ts__load_u32(h + TS_TABH_OFF_CRC) != ts__crc32c(0, h, TS_TABH_OFF_CRC))
		return ts__tablet_damaged(t, "header", "checksum mismatch");
	t->format = ts__load_u32(h + TS_TABH_OFF_VERSION);
	if (t->format < TS_TABLET_VERSION_MIN || t->format > TS_TABLET_VERSION)
		return ts__fail(TS_EVERSION, "tablet %s: format version %u", t->path, t->format);
	if (ts__load_u32(h + TS_TABH_OFF_SIZE) != TS_TABH_SIZE)
		return ts__tablet_damaged(t, "header", "bad header size");
	t->id = ts__load_u64(h + TS_TABH_OFF_ID);
	t->schema_version = ts__load_u32(h + TS_TABH_OFF_SCHEMA);
	if (t->id != id)
		return ts__tablet_damaged(t, "header", "names another tablet");
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
		return ts__tablet_damaged(t, "trailer", "bad magic");
	if (ts__load_u32(tr + TS_TABT_OFF_CRC) != ts__crc32c(0, tr, TS_TABT_OFF_CRC) ||
	    ts__load_u32(tr + TS_TABT_OFF_ZERO) != 0)
		return ts__tablet_damaged(t, "trailer", "checksum mismatch");
	uint64_t off = ts__load_u64(tr + TS_TABT_OFF_FOOTER);
	uint32_t stored = ts__load_u32(tr + TS_TABT_OFF_STORED);
	uint32_t rawlen = ts__load_u32(tr + TS_TABT_OFF_RAW);
	if (off < TS_TABH_SIZE || stored > TS_TABLET_FOOTER_MAX || rawlen > TS_TABLET_FOOTER_MAX ||
	    off + stored != t->size - TS_TABT_SIZE)
		return ts__tablet_damaged(t, "trailer", "footer position out of the file");
	unsigned char *buf = malloc(stored ? stored : 1);
	if (!buf)
		return ts__fail(TS_ENOMEM, "out of memory");
	rc = pread_exact(t, buf, stored, off);
	if (rc == 0 && ts__load_u32(tr + TS_TABT_OFF_FOOTER_CRC) != ts__crc32c(0, buf, stored))
		rc = ts__tablet_damaged(t, "footer", "checksum mismatch");
	if (rc == 0)
		rc = expand(t, "footer", tr[TS_TABT_OFF_CODEC], buf, stored, rawlen, raw);
	free(buf);
	return rc;
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
			t->heads[i] = ts__key_head_of(k, klen);
		if (t->format >= TS_TABLET_VERSION_BLOCK_HI) /* 3 added the block's hi */
			b->hi = ts__get_u64(r);
		b->stats = ts__get_raw(r, (size_t)t->nstat * TS_STAT_SIZE);
		if (!r->bad && b->first_key && ts__key_cmp(b->first_key, flen, k, klen) > 0)
			return ts__tablet_damaged(t, "footer", "inconsistent block index");
		if (!r->bad && (b->offset != expect || b->rows == 0 || klen < 8 || flen < 8 ||
		                b->raw > TS_ROW_MAX + TS_TABLET_BLOCK || b->min_ts > b->max_ts))
			return ts__tablet_damaged(t, "footer", "inconsistent block index");
		expect = b->offset + TS_BLKH_SIZE + b->stored;
	}
	if (!r->bad && expect != footer_off)
		return ts__tablet_damaged(t, "footer", "blocks do not end where the footer starts");
	return r->bad ? ts__tablet_damaged(t, "footer", "truncated") : 0;
}

/* A min-heap of (max_ts, block) by max_ts: the latest blocks seen so far,
 * the earliest of them on top. */
static void late_sift(const ts__tablet *t, uint32_t *h, uint32_t n, uint32_t i)
{
	for (;;) {
		uint32_t l = 2 * i + 1, m = i;
		if (l < n && t->blocks[h[l]].max_ts < t->blocks[h[m]].max_ts)
			m = l;
		if (l + 1 < n && t->blocks[h[l + 1]].max_ts < t->blocks[h[m]].max_ts)
			m = l + 1;
		if (m == i)
			return;
		uint32_t x = h[i];
		h[i] = h[m];
		h[m] = x;
		i = m;
	}
}

static int by_block(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return (x > y) - (x < y);
}

/* Find the latest blocks (tablet.h, late): the nlate of greatest max_ts
 * by a bounded heap, one pass over the block index; late_floor is the
 * greatest max_ts of those left out. */
static int find_late(ts__tablet *t)
{
	uint32_t n = t->nblocks / TS_TABLET_LATE_SHARE;
	if (n < TS_TABLET_LATE_MIN)
		n = TS_TABLET_LATE_MIN;
	if (n > t->nblocks)
		n = t->nblocks;
	if (!(t->late = malloc((n ? n : 1) * sizeof *t->late)))
		return ts__fail(TS_ENOMEM, "out of memory");
	int64_t floor = INT64_MIN;
	uint32_t k = 0;
	for (uint32_t i = 0; i < t->nblocks; i++) {
		int64_t ts = t->blocks[i].max_ts;
		if (k < n) {
			t->late[k++] = i;
			if (k == n)
				for (uint32_t j = n / 2; j-- > 0;)
					late_sift(t, t->late, n, j);
			continue;
		}
		if (ts <= t->blocks[t->late[0]].max_ts) {
			floor = ts > floor ? ts : floor;
			continue;
		}
		int64_t out = t->blocks[t->late[0]].max_ts;
		floor = out > floor ? out : floor;
		t->late[0] = i;
		late_sift(t, t->late, n, 0);
	}
	qsort(t->late, k, sizeof *t->late, by_block);
	if (!(t->late_heads = malloc((k ? k : 1) * sizeof *t->late_heads)))
		return ts__fail(TS_ENOMEM, "out of memory");
	for (uint32_t j = 0; j < k; j++)
		t->late_heads[j] = t->heads[t->late[j]];
	t->nlate = k;
	t->late_floor = floor;
	return 0;
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
		return ts__tablet_damaged(t, "footer", "inconsistent header fields");
	t->stat_cols = malloc((t->nstat ? t->nstat : 1) * sizeof *t->stat_cols);
	t->stat_types = malloc(t->nstat ? t->nstat : 1);
	if (!t->stat_cols || !t->stat_types)
		return ts__fail(TS_ENOMEM, "out of memory");
	for (uint32_t j = 0; j < t->nstat; j++) {
		t->stat_cols[j] = ts__get_u16(&r);
		t->stat_types[j] = ts__get_u8(&r);
		uint8_t pad = ts__get_u8(&r);
		if (!is_stat_type(t->stat_types[j]) || pad != 0)
			return ts__tablet_damaged(t, "footer", "bad statistics column");
	}
	ts__get_bytes(&r, &p, &n);
	t->first_key = p;
	t->first_klen = (uint32_t)n;
	ts__get_bytes(&r, &p, &n);
	t->last_key = p;
	t->last_klen = (uint32_t)n;
	int rc = parse_blocks(t, &r, footer_off);
	if (rc == 0)
		rc = find_late(t);
	if (rc < 0)
		return rc;
	t->bloom_bits = ts__get_u32(&r);
	t->bloom_k = ts__get_u8(&r);
	t->bloom = ts__get_raw(&r, t->bloom_bits / 8);
	if (r.bad || ts__reader_left(&r) != 0 || t->bloom_bits % 8 || t->bloom_bits == 0 ||
	    t->bloom_k == 0 || t->bloom_k > 32 || t->first_klen < 8 || t->last_klen < 8)
		return ts__tablet_damaged(t, "footer", "truncated or malformed");
	return 0;
}

int ts__tablet_open(const char *path, uint64_t id, ts__tablet **out)
{
	struct stat st;
	ts_buf raw;
	uint64_t footer_off = 0;
	int rc;
	*out = NULL;
	if ((rc = ts__tablet_lzo_ready()) < 0)
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
		rc = ts__tablet_damaged(t, "file", "too short");
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
	free(t->late);
	free(t->late_heads);
	free(t->stat_cols);
	free(t->stat_types);
	free(t->footer);
	free(t);
}

int ts__tablet_block_decode(const unsigned char *buf, uint32_t stored, uint32_t raw, ts_buf *out,
                            const char **why)
{
	*why = "header disagrees with the index";
	if (ts__load_u32(buf + TS_BLKH_OFF_STORED) != stored ||
	    ts__load_u32(buf + TS_BLKH_OFF_RAW) != raw || buf[9] | buf[10] | buf[11])
		return TS_ECORRUPT;
	*why = "checksum mismatch";
	if (ts__load_u32(buf + TS_BLKH_OFF_CRC) !=
	    ts__crc32c(ts__crc32c(0, buf, TS_BLKH_OFF_CRC), buf + TS_BLKH_SIZE, stored))
		return TS_ECORRUPT;
	return expand_bytes(buf[TS_BLKH_OFF_CODEC], buf + TS_BLKH_SIZE, stored, raw, out, why);
}

int ts__tablet_read_stored(const ts__tablet *t, uint32_t i, unsigned char *buf)
{
	const ts__tablet_block *b = &t->blocks[i];
	return pread_exact(t, buf, (size_t)TS_BLKH_SIZE + b->stored, b->offset);
}

int ts__tablet_read_block(const ts__tablet *t, uint32_t i, ts_buf *raw)
{
	char part[48];
	const char *why;
	const ts__tablet_block *b = &t->blocks[i];
	unsigned char *buf = malloc((size_t)TS_BLKH_SIZE + b->stored);
	if (!buf)
		return ts__fail(TS_ENOMEM, "out of memory");
	int rc = ts__tablet_read_stored(t, i, buf);
	if (rc == 0 && (rc = ts__tablet_block_decode(buf, b->stored, b->raw, raw, &why)) < 0) {
		snprintf(part, sizeof part, "block %u", i);
		rc = rc == TS_ENOMEM ? ts__fail(TS_ENOMEM, "out of memory")
		                     : ts__tablet_damaged(t, part, why);
	}
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

int ts__tablet_block_locate(ts__cblock *b)
{
	ts_reader rd;
	const void *row;
	size_t len;
	int rc;
	b->nrows = 0;
	free(b->series); /* a block refilled by its only reader */
	b->series = NULL;
	free(b->seekix);
	b->seekix = NULL;
	ts__reader_init(&rd, b->raw.data, b->raw.len);
	while ((rc = ts__tablet_block_next(&rd, &row, &len)) == 1) {
		if (b->nrows == b->caprows) {
			size_t cap = b->caprows ? 2 * b->caprows : 512;
			ts__rowref *o = realloc(b->rows, cap * sizeof *o);
			if (!o)
				return ts__fail(TS_ENOMEM, "out of memory");
			b->rows = o;
			b->caprows = cap;
		}
		b->rows[b->nrows].off = (uint32_t)((const unsigned char *)row - b->raw.data);
		b->rows[b->nrows].len = (uint32_t)len;
		b->nrows++;
	}
	return rc;
}

int ts__tablet_warm(const ts__tablet *t, ts__bcache *c, uint64_t serial,
                    int (*between)(void *arg), void *arg)
{
	int rc = 0, used;
	uint32_t read = 0;
	for (uint32_t i = 0; i < t->nblocks && rc == 0; i++) {
		ts__cblock *cb = ts__bcache_peek(c, serial, i, &used);
		if (cb) {
			ts__cblock_put(c, cb);
			continue;
		}
		if (!ts__bcache_has_room(c, sizeof *cb + t->blocks[i].raw))
			break; /* spare room only: the rest would evict */
		if (!(cb = ts__cblock_new(serial, i)))
			break;
		int ok = ts__tablet_read_block(t, i, &cb->raw) == 0 && ts__tablet_block_locate(cb) == 0;
		if (ok)
			ts__cblock_fit(cb);
		ok = ok && ts__bcache_put(c, cb, TS_BCACHE_SPARE);
		ts__cblock_put(c, cb);
		if (!ok)
			ts__clear_error(); /* skipped: a reader reports it */
		if (between && ++read % TS_WARM_YIELD_BLOCKS == 0)
			rc = between(arg);
	}
	return rc;
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

int ts__tablet_may_hold_since(const ts__tablet *t, const void *lo, size_t lolen, const void *hi,
                              size_t hilen, int64_t tmin)
{
	if (tmin > t->max_ts)
		return 0;
	if (tmin <= t->late_floor)
		return 1; /* a block outside the latest may hold such a row */
	/* the first latest block whose last key is >= lo: blocks before it
	 * end below the range */
	uint32_t a = 0, b = t->nlate;
	ts__key_head k = lo ? ts__key_head_of(lo, lolen) : (ts__key_head){0, 0};
	while (lo && a < b) {
		uint32_t mid = a + (b - a) / 2;
		const ts__key_head *h = &t->late_heads[mid];
		const ts__tablet_block *blk = &t->blocks[t->late[mid]];
		int c = h->hi != k.hi ? (h->hi < k.hi ? -1 : 1)
		        : h->lo != k.lo ? (h->lo < k.lo ? -1 : 1)
		                        : ts__key_cmp(blk->last_key, blk->last_klen, lo, lolen);
		if (c < 0)
			a = mid + 1;
		else
			b = mid;
	}
	/* in key order: the first that starts past hi ends the search (a
	 * format 1 block, without its first key, never does) */
	for (; a < t->nlate; a++) {
		const ts__tablet_block *blk = &t->blocks[t->late[a]];
		if (hi && blk->first_key &&
		    ts__key_cmp(blk->first_key, blk->first_klen, hi, hilen) > 0)
			return 0;
		if (blk->max_ts >= tmin)
			return 1;
	}
	return 0;
}

uint32_t ts__tablet_block_for(const ts__tablet *t, const void *key, size_t klen)
{
	ts__key_head k = ts__key_head_of(key, klen);
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
