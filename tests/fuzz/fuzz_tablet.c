/*
 * fuzz_tablet.c -- libFuzzer target for the tablet reader (lib/tablet.c)
 * and the read paths above it (scan, query, latest, aggregate with block
 * summaries).
 *
 * Input: one flag byte, then a tablet file.  Flag bit 0 asks for the
 * checksums to be recomputed first (header, every block the block
 * headers chain to, footer, trailer), so that mutations get past the
 * CRCs to the parsers behind them; the seeds (tests/fuzz/tablet/, made
 * by mkseeds) hold tablets with LZO blocks and the same tablets with
 * raw blocks and footer, whose bytes mutate meaningfully.
 *
 * Each input is written as the tablet of table "t" (fuzz_db.h) whose id
 * its header names, and read twice:
 *   - directly: ts__tablet_open, ts__tablet_check and ts__tablet_verify
 *     (stopping at nothing, with and without the schema), every block
 *     and row read and decoded, ts__tablet_find on every block's keys,
 *     every block's statistics;
 *   - through a read-only database whose DESCRIPTOR names it: a full
 *     query in both directions, a paged one (limit and resume), latest,
 *     and aggregates that use the blocks' statistics.
 * Errors are expected; crashes, leaks and undefined behaviour abort.
 * When the tablet passes ts__tablet_check, the read paths must also
 * agree with it: both directions and the pages return exactly its row
 * count, ts__tablet_find finds every block's first and last key, and
 * the aggregate counts (from statistics where a block allows) add up to
 * its rows.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "crc32c.h"
#include "descriptor.h"
#include "error.h"
#include "fsutil.h"
#include "fuzz_db.h"
#include "key.h"
#include "row.h"
#include "tablet.h"
#include "tablet_format.h"

static char *root;               /* the database */
static char tdir[512];
static ts__descriptor *desc;     /* the table's, with every schema version */

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
	root = strdup(fuzz_tmpdir("tablet"));
	atexit(cleanup);
	fuzz_options(&o, TS_OPEN_CREATE);
	if (ts_open(root, &o, &db) < 0 || fuzz_create_all(db) < 0 || ts_close(db) < 0)
		abort();
	snprintf(tdir, sizeof tdir, "%s/%s", root, FUZZ_TABLE);
	if (ts__descriptor_read(tdir, &desc) < 0 || desc->nschemas != 3)
		abort();
}

/* ---- the input ---- */

static uint32_t crc_of(const unsigned char *p, size_t n) { return ts__crc32c(0, p, n); }

/* Recompute every checksum the file's own structure leads to. */
static void fix_crcs(unsigned char *p, size_t n)
{
	if (n < TS_TABH_SIZE + TS_TABT_SIZE)
		return;
	ts__store_u32(p + TS_TABH_OFF_CRC, crc_of(p, TS_TABH_OFF_CRC));
	unsigned char *tr = p + n - TS_TABT_SIZE;
	uint64_t foff = ts__load_u64(tr + TS_TABT_OFF_FOOTER);
	uint32_t fstored = ts__load_u32(tr + TS_TABT_OFF_STORED);
	uint64_t end = n - TS_TABT_SIZE;
	if (foff <= end && fstored == end - foff) {
		ts__store_u32(tr + TS_TABT_OFF_FOOTER_CRC, crc_of(p + foff, fstored));
		end = foff;
	}
	ts__store_u32(tr + TS_TABT_OFF_CRC, crc_of(tr, TS_TABT_OFF_CRC));
	for (uint64_t b = TS_TABH_SIZE; b + TS_BLKH_SIZE <= end;) {
		uint32_t stored = ts__load_u32(p + b + TS_BLKH_OFF_STORED);
		if (stored > end - b - TS_BLKH_SIZE)
			break;
		uint32_t crc = ts__crc32c(crc_of(p + b, TS_BLKH_OFF_CRC), p + b + TS_BLKH_SIZE, stored);
		ts__store_u32(p + b + TS_BLKH_OFF_CRC, crc);
		b += TS_BLKH_SIZE + stored;
	}
}

static void write_file(const char *file, const unsigned char *p, size_t n)
{
	int fd = open(file, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0 || write(fd, p, n) != (ssize_t)n)
		abort();
	close(fd);
}

/* ---- direct reading ---- */

static int go_on(void *arg, int code)
{
	(void)arg;
	(void)code;
	return 0;
}

static const ts__schema *schema_of(uint32_t v)
{
	return v >= 1 && v <= (uint32_t)desc->nschemas ? desc->schemas[v - 1] : NULL;
}

/* Every block and row of tab; returns the rows read, or -1 when some
 * block or row failed. */
static long read_all(const ts__tablet *tab, const ts__schema *s)
{
	ts_value vals[TS_COLUMNS_MAX];
	ts_buf raw, scratch;
	ts__colstat st;
	long rows = 0, bad = 0;
	ts__buf_init(&raw);
	ts__buf_init(&scratch);
	for (uint32_t i = 0; i < tab->nblocks; i++) {
		ts_reader r;
		const void *row, *key;
		size_t len, klen;
		int rc;
		for (uint32_t j = 0; j < tab->nstat; j++)
			ts__tablet_stat(tab, i, j, &st);
		if (ts__tablet_read_block(tab, i, &raw) < 0) {
			bad = 1;
			continue;
		}
		ts__reader_init(&r, raw.data, raw.len);
		while ((rc = ts__tablet_block_next(&r, &row, &len)) == 1) {
			rows++;
			if (ts__row_key(row, len, &key, &klen) < 0 ||
			    (s && ts__row_decode(s, desc->schemas[desc->nschemas - 1], row, len, vals,
			                         &scratch) < 0))
				bad = 1;
		}
		bad |= rc < 0;
	}
	ts__buf_free(&raw);
	ts__buf_free(&scratch);
	return bad ? -1 : rows;
}

/* Look up every block's first and last key; 1 when all were found. */
static int find_keys(const ts__tablet *tab)
{
	ts_buf raw;
	int all = 1;
	ts__buf_init(&raw);
	for (uint32_t i = 0; i < tab->nblocks; i++) {
		const ts__tablet_block *b = &tab->blocks[i];
		if (b->first_key && ts__tablet_find(tab, b->first_key, b->first_klen, &raw) != 1)
			all = 0;
		if (ts__tablet_find(tab, b->last_key, b->last_klen, &raw) != 1)
			all = 0;
		ts__tablet_block_for(tab, b->last_key, b->last_klen);
	}
	ts__buf_free(&raw);
	return all;
}

/* ---- reading through a database ---- */

struct counts {
	long asc, desc, paged, agg;
};

/* Rows of cursor c until its end, or -1 on an error. */
static long drain(ts_cursor *c, long count_col)
{
	const ts_value *row;
	long n = 0;
	int nv, rc;
	while ((rc = ts_cursor_next(c, &row, &nv)) == 0 && row)
		n += count_col >= 0 && count_col < nv ? (long)row[count_col].v.i : 1;
	return rc < 0 ? -1 : n;
}

static long query(ts_table *t, const ts_query *q)
{
	ts_cursor *c = NULL;
	long n = ts_query_open(t, q, &c) < 0 ? -1 : drain(c, -1);
	ts_cursor_close(c);
	return n;
}

/* Pages of 7 rows, each resumed after the last. */
static long paged(ts_table *t)
{
	ts_value key[2], strbuf;
	char host[64];
	long total = 0;
	int nkey = 0;
	for (int page = 0; page < 1000; page++) {
		ts_query q = {.limit = 7, .after = nkey ? key : NULL, .nafter = nkey};
		ts_cursor *c = NULL;
		const ts_value *k;
		long n = ts_query_open(t, &q, &c) < 0 ? -1 : drain(c, -1);
		int more = n >= 0 && ts_cursor_more(c);
		if (more && (ts_cursor_resume(c, &k, &nkey) < 0 || nkey != 2 ||
		             k[0].v.s.len >= sizeof host))
			n = -1, more = 0;
		if (more) { /* copy the key out of the cursor */
			memcpy(host, k[0].v.s.ptr, k[0].v.s.len);
			strbuf = ts_stringn(host, k[0].v.s.len);
			key[0] = strbuf;
			key[1] = k[1];
		}
		ts_cursor_close(c);
		if (n < 0)
			return -1;
		total += n;
		if (!more)
			return total;
	}
	return -1;
}

/* count(l) over everything, in windows of 2^62 ns and no groups: every
 * block lies in one window unless it straddles one, so statistics
 * answer. */
static long count_all(ts_table *t)
{
	ts_aggspec spec = {3, TS_AGG_COUNT};
	ts_aggregate a = {.from = INT64_MIN, .to = INT64_MAX, .every = INT64_C(1) << 62,
	                  .specs = &spec, .nspecs = 1};
	ts_cursor *c = NULL;
	long n = ts_aggregate_open(t, &a, &c) < 0 ? -1 : drain(c, 1);
	ts_cursor_close(c);
	return n;
}

/* Per host and hour, every function of the numeric columns. */
static void aggregate_hosts(ts_table *t, const ts_value *prefix, int nprefix)
{
	ts_aggspec specs[] = {{2, TS_AGG_SUM}, {2, TS_AGG_MIN}, {3, TS_AGG_MAX}, {3, TS_AGG_SUM},
	                      {4, TS_AGG_MEAN}, {4, TS_AGG_MIN}, {6, TS_AGG_SUM}, {4, TS_AGG_LAST}};
	ts_aggregate a = {.prefix = prefix, .nprefix = nprefix, .from = INT64_MIN,
	                  .to = INT64_MAX, .every = FUZZ_HOUR, .group = 1, .specs = specs,
	                  .nspecs = 7};
	ts_cursor *c = NULL;
	if (ts_aggregate_open(t, &a, &c) == 0)
		drain(c, -1);
	ts_cursor_close(c);
	a.nspecs = 8; /* with last: rows, not statistics */
	a.every = 7 * 24 * FUZZ_HOUR;
	c = NULL;
	if (ts_aggregate_open(t, &a, &c) == 0)
		drain(c, -1);
	ts_cursor_close(c);
}

/* The first row's host, for the prefix reads. */
static int first_host(ts_table *t, char *host, size_t size, size_t *len, int64_t *ts)
{
	ts_query q = {.limit = 1};
	ts_cursor *c = NULL;
	const ts_value *row;
	int n, found = 0;
	if (ts_query_open(t, &q, &c) == 0 && ts_cursor_next(c, &row, &n) == 0 && row &&
	    row[0].v.s.len <= size) {
		memcpy(host, row[0].v.s.ptr, row[0].v.s.len);
		*len = row[0].v.s.len;
		*ts = row[1].v.i;
		found = 1;
	}
	ts_cursor_close(c);
	return found;
}

static void by_prefix(ts_table *t)
{
	char host[256];
	size_t len;
	int64_t ts;
	ts_cursor *c = NULL;
	if (!first_host(t, host, sizeof host, &len, &ts))
		return;
	ts_value prefix[2] = {ts_stringn(host, len), ts_timestamp(ts)};
	ts_query q = {.prefix = prefix, .nprefix = 1, .from = ts,
	              .to = ts > INT64_MAX - FUZZ_HOUR ? INT64_MAX : ts + FUZZ_HOUR,
	              .has_from = 1, .has_to = 1, .desc = 1};
	query(t, &q);
	q.nprefix = 2; /* the full key: one row, found through the Bloom filter */
	q.has_from = q.has_to = 0;
	query(t, &q);
	if (ts_latest_open(t, prefix, 1, &c) == 0)
		drain(c, -1);
	ts_cursor_close(c);
	aggregate_hosts(t, prefix, 1);
}

static void through_db(uint64_t id, const ts__tablet *tab, size_t size, struct counts *n)
{
	ts__tablet_meta m = {.id = id, .schema_version = 1, .period_end = 1, .bytes = size};
	ts__tablet_meta *old = desc->tablets;
	ts_options o;
	ts_db *db = NULL;
	ts_table *t = NULL;
	if (tab) {
		m.schema_version = schema_of(tab->schema_version) ? tab->schema_version : 1;
		m.period_start = tab->period_start;
		m.period_end = tab->period_end;
		m.min_ts = tab->min_ts;
		m.max_ts = tab->max_ts;
		m.rows = tab->rows;
	}
	desc->tablets = &m;
	desc->ntablets = 1;
	desc->next_tablet_id = id + 1;
	int rc = ts__descriptor_write(tdir, desc);
	desc->tablets = old;
	desc->ntablets = 0;
	if (rc < 0)
		abort();
	fuzz_options(&o, TS_OPEN_READONLY);
	if (ts_open(root, &o, &db) < 0)
		abort();
	if (ts_table_open(db, FUZZ_TABLE, &t) == 0) {
		ts_query q = {0};
		n->asc = query(t, &q);
		q.desc = 1;
		n->desc = query(t, &q);
		n->paged = paged(t);
		n->agg = count_all(t);
		aggregate_hosts(t, NULL, 0);
		by_prefix(t);
	}
	ts_table_close(t);
	ts_close(db);
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);
int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
	ts__tablet_verifier all = {.problem = go_on};
	struct counts n = {-1, -1, -1, -1};
	ts__tablet *tab = NULL;
	char path[700];
	uint64_t id = 1;
	int valid = 0;
	if (!root)
		setup();
	if (size < 1)
		return 0;
	unsigned char *p = malloc(size);
	if (!p)
		return 0;
	memcpy(p, data + 1, size - 1);
	if (data[0] & 1)
		fix_crcs(p, size - 1);
	if (size - 1 >= TS_TABH_SIZE)
		id = ts__load_u64(p + TS_TABH_OFF_ID);
	snprintf(path, sizeof path, "%s/tablets/%016llx.tab", tdir, (unsigned long long)id);
	write_file(path, p, size - 1);
	free(p);
	if (ts__tablet_open(path, id, &tab) == 0) {
		const ts__schema *s = schema_of(tab->schema_version);
		valid = s && ts__tablet_check(tab, s) == 0;
		ts__tablet_verify(tab, NULL, &all);
		if (s)
			ts__tablet_verify(tab, s, &all);
		long rows = read_all(tab, s);
		int found = find_keys(tab);
		if (valid && (rows != (long)tab->rows || !found)) {
			fprintf(stderr, "a checked tablet of %llu rows: read %ld, keys %s\n",
			        (unsigned long long)tab->rows, rows, found ? "found" : "not all found");
			abort();
		}
	}
	through_db(id, tab, size - 1, &n);
	if (valid && (n.asc != (long)tab->rows || n.desc != n.asc || n.paged != n.asc ||
	              n.agg != n.asc)) {
		fprintf(stderr, "a checked tablet of %llu rows: asc %ld, desc %ld, paged %ld, "
		        "count %ld\n", (unsigned long long)tab->rows, n.asc, n.desc, n.paged, n.agg);
		abort();
	}
	if (getenv("TSSTORE_FUZZ_VERBOSE"))
		fprintf(stderr, "fuzz_tablet: %s, %llu rows, %u blocks, %s; asc %ld, desc %ld, "
		        "paged %ld, count %ld\n", tab ? "opened" : ts_errmsg(NULL),
		        tab ? (unsigned long long)tab->rows : 0ull, tab ? tab->nblocks : 0,
		        valid ? "valid" : "not valid", n.asc, n.desc, n.paged, n.agg);
	ts__tablet_close(tab);
	unlink(path);
	return 0;
}
