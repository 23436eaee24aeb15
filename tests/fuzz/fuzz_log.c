/*
 * fuzz_log.c -- libFuzzer target for log recovery (lib/log_recover.c) and what
 * runs on the recovered state: the filling tablets rebuilt from the
 * newest commit (filling.c), reads of their trees (avl.c, scan.c), an
 * insert into them, a flush of them to on-disk tablets, and ts_check.
 *
 * Input: one flag byte, a u64 start LSN (little-endian), then the log's
 * bytes from that LSN on (the used part of the segments; the seeds in
 * tests/fuzz/log/ are made by mkseeds).  The start is taken modulo three
 * segments and rounded down to 8; it becomes the DESCRIPTOR's flushed
 * position, and the bytes are placed at their LSNs in full-size sparse
 * segment files under valid headers, each segment the bytes touch.
 * Flag bits: 0 -- recompute what recovery validates of each batch the
 * bytes chain to (commit length, batch LSN, sequence, previous commit,
 * CRC-32C), so that mutations reach the trees behind valid commits;
 * 1 -- the segment headers say the log was closed cleanly; 2 -- an
 * empty segment follows, as the segment preparer leaves one.
 *
 * Then: a read-only open reads every row; a writer opens the table
 * (recovery) and must read the same rows, ts_check runs, a batch of two
 * rows is inserted, the trees are flushed (rows read before and after
 * must match), and two more opens must each read the rows the one
 * before left: recovery is idempotent.  A crash, leak, undefined
 * behaviour or any of these disagreements aborts; errors are expected.
 * When ts_check finds nothing wrong, reading must not fail either.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "buf.h"
#include "crc32c.h"
#include "descriptor.h"
#include "fsutil.h"
#include "fuzz_db.h"
#include "handle.h"
#include "log.h"
#include "log_format.h"

#define SEG_MASK (TS_SEG_DATA - 1)

static char *root;
static char tdir[512], ldir[600], tabdir[600], qdir[600];
static ts__descriptor *desc;

/* Remove the scratch database when the fuzzer exits (not after a crash:
 * then it shows what the input left). */
static void cleanup(void)
{
	ts__rmtree(root);
}

static void setup(void)
{
	ts_options o;
	ts_db *db = NULL;
	root = strdup(fuzz_tmpdir("log"));
	atexit(cleanup);
	fuzz_options(&o, TS_OPEN_CREATE);
	if (ts_open(root, &o, &db) < 0 || fuzz_create_all(db) < 0 || ts_close(db) < 0)
		abort();
	snprintf(tdir, sizeof tdir, "%s/%s", root, FUZZ_TABLE);
	snprintf(ldir, sizeof ldir, "%s/log", tdir);
	snprintf(tabdir, sizeof tabdir, "%s/tablets", tdir);
	snprintf(qdir, sizeof qdir, "%s/quarantine", tdir);
	if (ts__descriptor_read(tdir, &desc) < 0 || desc->nschemas != 3 || desc->ntablets)
		abort();
}

/* ---- the input ---- */

static uint64_t seg_left(uint64_t lsn) { return TS_SEG_DATA - (lsn & SEG_MASK); }

static uint64_t batch_start(uint64_t p)
{
	p = (p + 7) & ~UINT64_C(7);
	return seg_left(p) < TS_BATCH_HEADER_SIZE ? p + seg_left(p) : p;
}

/* Make every batch that p (the bytes from LSN start to end) chains to
 * pass recovery's checks but for its records: commit length, batch LSN,
 * sequence and previous commit, and the CRC.  Stops where no batch
 * header or commit record is. */
static void fix_batches(unsigned char *p, uint64_t start, uint64_t end)
{
	uint64_t at = batch_start(start), prev = 0, seq = 0;
	while (at < end && end - at >= TS_BATCH_HEADER_SIZE) {
		unsigned char *h = p + (at - start);
		uint64_t body = ts__load_u64(h + 8);
		if (ts__load_u32(h) != TS_BATCH_MAGIC || body % 8 ||
		    body > end - at - TS_BATCH_HEADER_SIZE)
			return;
		uint64_t c = at + TS_BATCH_HEADER_SIZE + body;
		if (end - c < TS_COMMIT_SIZE(0) || seg_left(c) < TS_COMMIT_SIZE(0))
			return;
		unsigned char *cp = p + (c - start);
		uint32_t nroots = ts__load_u32(cp + TS_COMMIT_OFF_NROOTS);
		uint64_t size = TS_COMMIT_SIZE((uint64_t)nroots);
		if (ts__load_u32(cp) != TS_COMMIT_MAGIC || nroots > TS_FILLING_MAX ||
		    size > end - c || size > seg_left(c))
			return;
		if (prev) {
			ts__store_u64(cp + TS_COMMIT_OFF_SEQ, seq + 1);
			ts__store_u64(cp + TS_COMMIT_OFF_PREV, prev);
		}
		ts__store_u64(cp + TS_COMMIT_OFF_BATCH, at);
		ts__store_u32(cp + size - 4, (uint32_t)size);
		ts__store_u32(cp + size - 8, ts__crc32c(0, h, c + size - 8 - at));
		seq = ts__load_u64(cp + TS_COMMIT_OFF_SEQ);
		prev = c;
		at = batch_start(c + size);
	}
}

/* Create segment seg, full size and sparse, with a valid header, holding
 * the bytes of p (LSNs start..end) that fall in it. */
static void write_segment(uint64_t seg, int clean, const unsigned char *p, uint64_t start,
                          uint64_t end)
{
	unsigned char h[TS_SEG_HEADER] = {0};
	char path[700];
	snprintf(path, sizeof path, "%s/%016llx.seg", ldir, (unsigned long long)seg);
	ts__log_segment_header(h, seg, TS_SEG_DATA);
	ts__store_u32(h + TS_SEGH_OFF_CLEAN, (uint32_t)clean); /* outside the CRC */
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0 || ftruncate(fd, (off_t)TS_SEG_FILE_SIZE) < 0 ||
	    pwrite(fd, h, sizeof h, 0) != (ssize_t)sizeof h)
		abort();
	uint64_t lo = seg << TS_SEG_DATA_SHIFT, hi = lo + TS_SEG_DATA;
	lo = lo > start ? lo : start;
	hi = hi < end ? hi : end;
	if (lo < hi && pwrite(fd, p + (lo - start), hi - lo,
	                      (off_t)(TS_SEG_HEADER + (lo & SEG_MASK))) != (ssize_t)(hi - lo))
		abort();
	close(fd);
}

/* A fresh table directory: the descriptor (flushed at start) and the log. */
static void place(unsigned flag, const unsigned char *p, uint64_t start, uint64_t end)
{
	ts__rmtree(ldir);
	ts__rmtree(tabdir);
	ts__rmtree(qdir);
	if (mkdir(ldir, 0755) < 0 || mkdir(tabdir, 0755) < 0)
		abort();
	desc->flushed_lsn = start;
	if (ts__descriptor_write(tdir, desc) < 0)
		abort();
	uint64_t first = start >> TS_SEG_DATA_SHIFT;
	uint64_t last = end > start ? (end - 1) >> TS_SEG_DATA_SHIFT : first;
	for (uint64_t s = first; s <= last; s++)
		write_segment(s, (flag & 2) != 0, p, start, end);
	if (flag & 4)
		write_segment(last + 1, 0, p, start, start);
}

/* ---- reading ---- */

/* Every row of t in key order, with the final code, appended to out. */
static void read_rows(ts_table *t, ts_buf *out)
{
	ts_query q = {0};
	ts_cursor *c = NULL;
	const ts_value *row;
	int n, rc = ts_query_open(t, &q, &c);
	while (rc == 0 && (rc = ts_cursor_next(c, &row, &n)) == 0 && row)
		for (int i = 0; i < n; i++) {
			ts__put_u8(out, (uint8_t)row[i].type);
			if (row[i].type == TS_STRING || row[i].type == TS_BLOB)
				ts__put_bytes(out, row[i].v.s.ptr, row[i].v.s.len);
			else
				ts__put(out, &row[i].v, sizeof row[i].v.i);
		}
	ts_cursor_close(c);
	ts__put_u32(out, (uint32_t)rc);
}

/* Other reads, for what they run: descending, latest, an aggregate. */
static void read_more(ts_table *t)
{
	ts_query q = {.desc = 1, .limit = 50};
	ts_aggspec specs[] = {{2, TS_AGG_SUM}, {3, TS_AGG_MAX}, {4, TS_AGG_MEAN}, {6, TS_AGG_FIRST}};
	ts_aggregate a = {.from = INT64_MIN, .to = INT64_MAX, .every = FUZZ_HOUR, .group = 1,
	                  .specs = specs, .nspecs = 4};
	ts_cursor *c[3] = {NULL, NULL, NULL};
	const ts_value *row;
	int n;
	ts_query_open(t, &q, &c[0]);
	ts_latest_open(t, NULL, 0, &c[1]);
	ts_aggregate_open(t, &a, &c[2]);
	for (int i = 0; i < 3; i++) {
		while (c[i] && ts_cursor_next(c[i], &row, &n) == 0 && row)
			;
		ts_cursor_close(c[i]);
	}
}

/* Open the database (read-only or not) and its table: 0 or an error. */
static int open_table(unsigned flags, ts_db **db, ts_table **t)
{
	ts_options o;
	*t = NULL;
	fuzz_options(&o, flags);
	if (ts_open(root, &o, db) < 0)
		abort(); /* the directory is always there */
	return ts_table_open(*db, FUZZ_TABLE, t);
}

static void close_table(ts_db *db, ts_table *t)
{
	ts_table_close(t);
	ts_close(db);
}

/* Open, read every row into out (the open's code first), close. */
static void open_and_read(unsigned flags, ts_buf *out)
{
	ts_db *db;
	ts_table *t;
	int rc = open_table(flags, &db, &t);
	ts__put_u32(out, (uint32_t)rc);
	if (rc == 0)
		read_rows(t, out);
	close_table(db, t);
}

static void same(const char *what, const ts_buf *a, const ts_buf *b)
{
	if (a->len != b->len || memcmp(a->data, b->data, a->len) != 0) {
		fprintf(stderr, "fuzz_log: %s: the rows differ (%zu and %zu bytes)\n", what, a->len,
		        b->len);
		abort();
	}
}

/* The last code read_rows appended to b. */
static int final_code(const ts_buf *b)
{
	return b->len >= 4 ? (int)ts__load_u32(b->data + b->len - 4) : 0;
}

/* Insert two rows of a host of its own (may fail: a duplicate, say). */
static void insert_two(ts_table *t)
{
	ts_value rows[14];
	for (int r = 0; r < 2; r++) {
		ts_value *v = rows + r * 7;
		v[0] = ts_string("zz-fuzz");
		v[1] = ts_timestamp(FUZZ_NOW - (r + 1) * 600 * FUZZ_SEC);
		v[2] = ts_int64(r);
		v[3] = ts_int64(-r);
		v[4] = ts_double(r * 0.5);
		v[5] = ts_blob("ab", (size_t)r);
		v[6] = ts_none();
	}
	ts_insert(t, rows, 2);
}

/* The writer's part: recovery, reads, check, insert, flush. */
static void as_writer(const ts_buf *ro, ts_buf *after)
{
	ts_buf b, b2;
	ts_db *db;
	ts_table *t;
	ts__buf_init(&b);
	ts__buf_init(&b2);
	int rc = open_table(0, &db, &t);
	ts__put_u32(&b, (uint32_t)rc);
	ts__put_u32(after, (uint32_t)rc);
	if (rc == 0)
		read_rows(t, &b);
	same("read-only and writer after recovery", ro, &b);
	if (rc == 0) {
		int checked = ts_check(db, FUZZ_TABLE, NULL);
		if (checked == 0 && final_code(&b) != 0) {
			fprintf(stderr, "fuzz_log: check passed but reading failed: %s\n",
			        ts_strerror(final_code(&b)));
			abort();
		}
		read_more(t);
		/* Appending stays in the tail's segment, before its middle:
		 * no new 64 MiB segment is prepared. */
		uint64_t tail = ts__log_tail(t->log) & SEG_MASK;
		if (tail + (1u << 20) < TS_SEG_DATA / 2) {
			insert_two(t);
			ts__put_u32(&b2, 0);
			read_rows(t, &b2);
			ts_flush(t, INT64_MAX);
			read_rows(t, after);
			same("before and after a flush", &b2, after);
		} else {
			read_rows(t, after);
		}
	}
	close_table(db, t);
	ts__buf_free(&b);
	ts__buf_free(&b2);
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);
int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
	ts_buf ro, w, d, e;
	if (!root)
		setup();
	if (size < 9)
		return 0;
	unsigned flag = data[0];
	uint64_t start = (ts__load_u64(data + 1) & ~UINT64_C(7)) % (3 * TS_SEG_DATA);
	uint64_t n = size - 9, end = start + n;
	unsigned char *p = malloc(n ? n : 1);
	if (!p)
		return 0;
	memcpy(p, data + 9, n);
	if (flag & 1)
		fix_batches(p, start, end);
	place(flag, p, start, end);
	free(p);
	ts__buf_init(&ro);
	ts__buf_init(&w);
	ts__buf_init(&d);
	ts__buf_init(&e);
	open_and_read(TS_OPEN_READONLY, &ro);
	as_writer(&ro, &w);
	open_and_read(0, &d);
	same("the writer's and the next open's", &w, &d);
	open_and_read(0, &e);
	same("two opens'", &d, &e);
	if (getenv("TSSTORE_FUZZ_VERBOSE"))
		fprintf(stderr, "fuzz_log: start %llu, %llu bytes: read-only %zu bytes of rows "
		        "(code %d), after the flush %zu (code %d)\n", (unsigned long long)start,
		        (unsigned long long)n, ro.len, final_code(&ro), w.len, final_code(&w));
	ts__buf_free(&ro);
	ts__buf_free(&w);
	ts__buf_free(&d);
	ts__buf_free(&e);
	return 0;
}
