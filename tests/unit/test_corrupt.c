/*
 * test_corrupt.c -- the corruption suite: damage in any byte-position
 * class of any file a table keeps is reported, or provably harmless, and
 * never turns into a crash or a wrong row.
 *
 * One pristine database is built once (group setup): table "m" with
 * 1200 rows flushed into a tablet of schema version 1 (several blocks),
 * then a column added (the DESCRIPTOR holds two schema versions), 200
 * rows flushed into a tablet of version 2, and 120 rows in six batches
 * left in the log (one filling tablet).  Its files are then parsed with
 * the library's own format constants and readers (descriptor_format.h
 * and the schema encoder, tablet_format.h and ts__tablet_open,
 * log_format.h and the commit reader) into byte-position classes: each
 * field of each header, record, node, commit, root entry, block header,
 * index, trailer; payload bytes; the bytes no checksum covers.
 *
 * Each case copies the pristine database (sparse) and damages the copy:
 * one bit flipped, or one byte replaced by a random one, at offsets of
 * one class, or the file cut at a class boundary (or to 0 bytes).  Then,
 * as an application would: ts_open and ts_table_open; a query of
 * everything, ts_latest of every host, an aggregate; and ts_check.  What
 * is acceptable:
 *   - an error (TS_ECORRUPT, TS_EVERSION, TS_EIO) whose ts_errmsg names
 *     the damaged file; after a query error a read-write handle must
 *     quarantine the tablet (that one, nothing else), after which the
 *     queries succeed;
 *   - results that are exactly the pristine rows minus those reported
 *     lost: the rows of a quarantined tablet, or the log's from the
 *     position a quarantined log range starts at (quarantine/log-<lsn>,
 *     and the stats log_quarantined_*), a range that holds the damage;
 *   - when nothing is reported, results exactly the pristine ones, and
 *     only for a class marked harmless: covered by no checksum that is
 *     ever read (the segment header's clean flag and unused rest, log
 *     bytes before the flushed position or after the last commit, and
 *     log/HEAD, a hint without a checksum).
 * Whatever is reported must also make ts_check fail, naming the file.
 * The suites run on read-write handles and again on read-only ones.
 *
 * The cases in detail: a log range damaged before the recorded head is
 * quarantined (and the reader refuses it), a torn tail is not, a tablet
 * damaged in its header is quarantined at once, and an older commit in
 * log/HEAD never takes a reader back.
 *
 * The copies go to /dev/shm when there is one (else /tmp, with one offset
 * per class).  TSSTORE_CORRUPT_FULL=1 runs the long sweep: up to 64
 * offsets per class, each with every bit flipped and 3 random bytes, and
 * 32 per payload (some 27,000 cases, a minute).  TSSTORE_CORRUPT_ONLY=TEXT
 * runs only the classes naming TEXT; TSSTORE_CORRUPT_VERBOSE=1 lists every
 * case with its outcome.
 */
#include <dirent.h>
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
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "avl.h"
#include "buf.h"
#include "descriptor.h"
#include "descriptor_format.h"
#include "log.h"
#include "support.h"
#include "tablet.h"
#include "tablet_format.h"

#define SEC INT64_C(1000000000)
#define HOUR (3600 * SEC)
#define NOW (INT64_C(1795266000) * SEC) /* 2026-11-21T13:00:00Z */
#define HOSTS 4
#define NCOLS 5 /* host, ts, batch, v, and w added by the schema change */
#define W_DEFAULT 7

static int64_t fixed_clock(void *arg)
{
	(void)arg;
	return NOW;
}

static void options(ts_options *o, unsigned flags)
{
	ts_options_init(o);
	o->flags = flags | TS_OPEN_NOMERGE;
	o->sync = TS_SYNC_NONE;
	o->clock = fixed_clock;
}

static int full_sweep(void)
{
	const char *s = getenv("TSSTORE_CORRUPT_FULL");
	return s && atoi(s) > 0;
}

/* Where the damaged copies go: /dev/shm when there is one (thousands of
 * cases create and remove files, and the library syncs them; its code
 * paths are the same on tmpfs), else /tmp, with fewer cases (one offset
 * per class) so the run stays short. */
static int use_shm = -1;

static char *work_dir(void)
{
	char *dir = strdup("/dev/shm/tsstore-corrupt-XXXXXX");
	assert_non_null(dir);
	if (use_shm != 0 && mkdtemp(dir)) {
		use_shm = 1;
		return dir;
	}
	use_shm = 0;
	free(dir);
	return ts_test_tmpdir();
}

static void copy_tree(const char *from, const char *to);

/* ---- the pristine database ---- */

/* A row as the queries return it, and where the pristine database keeps
 * it: an on-disk tablet (its id), or the log (tablet 0; end is the log
 * position just past its batch's commit record). */
struct crow {
	char host[8];
	int64_t ts, batch, v, w;
	uint64_t tablet, end;
};

/* A batch of the log from the flushed position on. */
struct batch {
	uint64_t hdr, commit, end;
	uint32_t nroots;
};

#define MAX_BATCHES 32

static struct pristine {
	char *dir;
	struct crow *rows;
	size_t n;
	uint64_t desc_size;
	uint64_t flushed, tail;        /* the log's flushed position and end */
	struct batch b[MAX_BATCHES];   /* from the flushed position */
	int nb;
	int mid;                       /* an insert followed by others: b[mid] */
	uint64_t mid_row, mid_node;    /* a row record and a node of it */
	uint64_t last_row, last_node;  /* the same in the last batch */
	int has_seg1;                  /* the prepared, empty next segment */
	struct ptablet {
		uint64_t id, size, footer;
		char name[32];
		uint32_t nblocks, version;
		uint64_t boff[64];
		uint32_t bstored[64];
	} tab[2];
	int ntab;
} P;

static int crow_cmp(const void *a, const void *b)
{
	const struct crow *x = a, *y = b;
	int c = strcmp(x->host, y->host);
	return c ? c : (x->ts > y->ts) - (x->ts < y->ts);
}

/* Insert rows[0..n) with ncols columns (4 before the schema change). */
static void insert(ts_table *t, const struct crow *rows, size_t n, int ncols)
{
	ts_value *v = calloc(n * NCOLS, sizeof *v);
	assert_non_null(v);
	for (size_t i = 0; i < n; i++) {
		ts_value *r = v + i * (size_t)ncols;
		r[0] = ts_string(rows[i].host);
		r[1] = ts_timestamp(rows[i].ts);
		r[2] = ts_int64(rows[i].batch);
		r[3] = ts_int64(rows[i].v);
		if (ncols == NCOLS)
			r[4] = ts_int64(rows[i].w);
	}
	if (ts_insert(t, v, n) != 0)
		fail_msg("insert: %s", ts_errmsg(NULL));
	free(v);
}

/* Batches first..last of n rows each: host h<i % HOSTS>, ts from base in
 * steps of step, in the order they come. */
static void insert_phase(ts_table *t, int first, int last, int n, int64_t base, int64_t step,
                         int ncols)
{
	for (int b = first; b <= last; b++) {
		struct crow *r = calloc((size_t)n, sizeof *r);
		assert_non_null(r);
		for (int i = 0; i < n; i++) {
			snprintf(r[i].host, sizeof r[i].host, "h%d", i % HOSTS);
			r[i].ts = base + ((int64_t)(b - first) * (n / HOSTS) + i / HOSTS) * step;
			r[i].batch = b;
			r[i].v = b * 100000 + i;
			r[i].w = ncols == NCOLS ? b * 1000 + i : W_DEFAULT;
		}
		insert(t, r, (size_t)n, ncols);
		uint64_t end = (uint64_t)ts_test_stat(t, "log_tail_lsn");
		assert_true(end > 0);
		P.rows = realloc(P.rows, (P.n + (size_t)n) * sizeof *P.rows);
		assert_non_null(P.rows);
		for (int i = 0; i < n; i++) {
			r[i].end = end;
			P.rows[P.n++] = r[i];
		}
		free(r);
	}
}

static void build(const char *dir)
{
	ts_options o;
	ts_db *db;
	ts_table *t;
	options(&o, TS_OPEN_CREATE);
	assert_int_equal(ts_open(dir, &o, &db), 0);
	ts_test_create_m(db, 0);
	assert_int_equal(ts_table_open(db, "m", &t), 0);
	/* 1200 rows, 2 hours of each host in the period [04:00, 08:00) */
	insert_phase(t, 1, 4, 300, NOW - 8 * HOUR, 24 * SEC, 4);
	assert_int_equal(ts_flush(t, INT64_MAX), 0);
	ts_column w = {"w", TS_INT64, {TS_INT64, {.i = W_DEFAULT}}};
	assert_int_equal(ts_alter_add(t, &w), 0);
	/* 200 rows in [00:00, 04:00), of schema version 2 */
	insert_phase(t, 5, 6, 100, NOW - 12 * HOUR, 10 * SEC, NCOLS);
	assert_int_equal(ts_flush(t, INT64_MAX), 0);
	/* 120 rows in the current period, only in the log */
	insert_phase(t, 7, 12, 20, NOW - HOUR + 600 * SEC, 7 * SEC, NCOLS);
	ts_table_close(t);
	assert_int_equal(ts_close(db), 0);
}

static void path_of(char *out, size_t size, const char *dir, const char *rel)
{
	int n = snprintf(out, size, "%s/%s", dir, rel);
	assert_true(n > 0 && (size_t)n < size);
}

/* The tablets of the pristine DESCRIPTOR, their blocks and footers; each
 * row learns its tablet. */
static void parse_tablets(const ts__descriptor *d)
{
	char path[512], rel[64];
	assert_int_equal(d->ntablets, 2);
	for (int i = 0; i < d->ntablets; i++) {
		struct ptablet *pt = &P.tab[P.ntab++];
		ts__tablet *t;
		pt->id = d->tablets[i].id;
		assert_int_equal(ts__tablet_name(pt->id, pt->name, sizeof pt->name), 0);
		snprintf(rel, sizeof rel, "m/tablets/%s", pt->name);
		path_of(path, sizeof path, P.dir, rel);
		assert_int_equal(ts__tablet_open(path, pt->id, &t), 0);
		assert_true(t->nblocks <= 64);
		pt->size = t->size;
		pt->nblocks = t->nblocks;
		pt->version = t->schema_version;
		for (uint32_t k = 0; k < t->nblocks; k++) {
			pt->boff[k] = t->blocks[k].offset;
			pt->bstored[k] = t->blocks[k].stored;
		}
		pt->footer = t->blocks[t->nblocks - 1].offset + TS_BLKH_SIZE +
		             t->blocks[t->nblocks - 1].stored;
		for (size_t r = 0; r < P.n; r++)
			if (P.rows[r].batch <= 6 && P.rows[r].ts >= t->period_start &&
			    P.rows[r].ts < t->period_end)
				P.rows[r].tablet = pt->id;
		ts__tablet_close(t);
	}
	/* version 1 first: tablet 0 is the one of several blocks */
	if (P.tab[0].version != 1) {
		struct ptablet x = P.tab[0];
		P.tab[0] = P.tab[1];
		P.tab[1] = x;
	}
	assert_int_equal(P.tab[0].version, 1);
	assert_int_equal(P.tab[1].version, 2);
	assert_true(P.tab[0].nblocks >= 4);
	for (size_t r = 0; r < P.n; r++)
		assert_true((P.rows[r].batch <= 6) == (P.rows[r].tablet != 0));
}

/* The first row record LSN of the tree at root that lies in [lo, hi). */
static uint64_t row_in(ts__log *log, uint64_t root, uint64_t lo, uint64_t hi)
{
	ts__avl_iter it;
	uint64_t lsn;
	ts__avl_iter_init(&it, log, root, 0);
	while ((lsn = ts__avl_iter_next(&it)) != 0)
		if (lsn >= lo && lsn < hi)
			return lsn;
	return 0;
}

/* The batches from the flushed position on, as the format says they are
 * chained; and a row record and a node in the second insert and in the
 * last. */
static void parse_log(void)
{
	char dir[512];
	ts__log *log;
	ts__commit c;
	path_of(dir, sizeof dir, P.dir, "m/log");
	assert_int_equal(ts__log_open_verify(dir, &log), 0);
	for (uint64_t p = P.flushed;;) {
		const unsigned char *h = ts__log_ptr(log, p);
		if (!h || ts__load_u32(h) != TS_BATCH_MAGIC)
			break;
		assert_true(P.nb < MAX_BATCHES);
		struct batch *b = &P.b[P.nb++];
		b->hdr = p;
		b->commit = p + TS_BATCH_HEADER_SIZE + ts__load_u64(h + 8);
		assert_int_equal(ts__log_read_commit(log, b->commit, &c), 0);
		assert_int_equal(c.batch_lsn, p);
		b->nroots = c.nroots;
		b->end = b->commit + TS_COMMIT_SIZE(c.nroots);
		p = (b->end + 7) & ~UINT64_C(7);
		assert_true((p & (TS_SEG_DATA - 1)) + TS_BATCH_HEADER_SIZE <= TS_SEG_DATA);
	}
	for (int i = 0; getenv("TSSTORE_CORRUPT_VERBOSE") && i < P.nb; i++)
		print_message("batch %d: header %" PRIu64 ", commit %" PRIu64 ", end %" PRIu64
		              ", %u roots\n", i, P.b[i].hdr, P.b[i].commit, P.b[i].end, P.b[i].nroots);
	ts__log_walk w = {.start = P.flushed};
	ts__log_walk_commits(log, &w);
	assert_int_equal(w.commits, (uint64_t)P.nb);
	assert_true(P.nb >= 4);
	P.tail = P.b[P.nb - 1].end;
	/* the first is the flush's commit, which drops the flushed tree; the
	 * second insert and the last each hold a root node (their commit's)
	 * and rows of the head's tree */
	assert_int_equal(P.b[0].nroots, 0);
	P.mid = 2;
	const struct batch *mid = &P.b[P.mid], *last = &P.b[P.nb - 1];
	ts__root r;
	assert_int_equal(ts__log_read_commit(log, last->commit, &c), 0);
	assert_int_equal(c.nroots, 1);
	ts__commit_root(&c, 0, &r);
	P.last_node = r.root;
	P.last_row = row_in(log, r.root, last->hdr, last->commit);
	P.mid_row = row_in(log, r.root, mid->hdr, mid->commit);
	assert_int_equal(ts__log_read_commit(log, mid->commit, &c), 0);
	assert_int_equal(c.nroots, 1);
	ts__commit_root(&c, 0, &r);
	P.mid_node = r.root;
	assert_true(P.mid_node >= mid->hdr && P.mid_node < mid->commit);
	assert_true(P.mid_row >= mid->hdr && P.mid_row < mid->commit);
	assert_true(P.last_node >= last->hdr && P.last_node < last->commit);
	assert_true(P.last_row >= last->hdr && P.last_row < last->commit);
	ts__log_close(log, 0);
	/* every log row is in a batch from the flushed position on */
	for (size_t i = 0; i < P.n; i++)
		if (!P.rows[i].tablet)
			assert_true(P.rows[i].end > P.flushed && P.rows[i].end <= P.tail);
}

static int setup_pristine(void **state)
{
	char path[512];
	struct stat st;
	ts__descriptor *d;
	(void)state;
	char *built = ts_test_tmpdir();
	build(built);
	/* A sparse copy: the log's segments, allocated in full by the
	 * library, then cost nothing to copy again for every case. */
	P.dir = ts_test_tmpdir();
	copy_tree(built, P.dir);
	ts_test_rmdir(built);
	qsort(P.rows, P.n, sizeof *P.rows, crow_cmp);
	path_of(path, sizeof path, P.dir, "m");
	assert_int_equal(ts__descriptor_read(path, &d), 0);
	assert_int_equal(d->nschemas, 2);
	P.flushed = d->flushed_lsn;
	assert_true(P.flushed > 0);
	parse_tablets(d);
	ts__descriptor_free(d, 1);
	path_of(path, sizeof path, P.dir, "m/DESCRIPTOR");
	assert_int_equal(stat(path, &st), 0);
	P.desc_size = (uint64_t)st.st_size;
	parse_log();
	path_of(path, sizeof path, P.dir, "m/log/0000000000000001.seg");
	P.has_seg1 = stat(path, &st) == 0;
	return 0;
}

static int teardown_pristine(void **state)
{
	(void)state;
	ts_test_rmdir(P.dir);
	free(P.rows);
	memset(&P, 0, sizeof P);
	return 0;
}

/* ---- copying a database ---- */

static int all_zero(const unsigned char *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i])
			return 0;
	return 1;
}

/* Copy a file, leaving holes where it has none or only zeros (log
 * segments are 64 MiB, nearly all zeros). */
static void copy_file(const char *from, const char *to, mode_t mode)
{
	static unsigned char buf[1 << 16];
	struct stat st;
	int in = open(from, O_RDONLY), out = open(to, O_WRONLY | O_CREAT | O_TRUNC, mode);
	assert_true(in >= 0 && out >= 0);
	assert_int_equal(fstat(in, &st), 0);
	for (off_t at = 0; at < st.st_size;) {
		off_t data = lseek(in, at, SEEK_DATA), hole;
		if (data < 0)
			break; /* ENXIO: only a hole is left */
		hole = lseek(in, data, SEEK_HOLE);
		assert_true(hole > data);
		for (off_t p = data; p < hole;) {
			size_t n = hole - p < (off_t)sizeof buf ? (size_t)(hole - p) : sizeof buf;
			assert_int_equal(pread(in, buf, n, p), (ssize_t)n);
			if (!all_zero(buf, n))
				assert_int_equal(pwrite(out, buf, n, p), (ssize_t)n);
			p += (off_t)n;
		}
		at = hole;
	}
	assert_int_equal(ftruncate(out, st.st_size), 0);
	close(in);
	close(out);
}

static void copy_tree(const char *from, const char *to)
{
	char a[1024], b[1024];
	DIR *d = opendir(from);
	struct dirent *e;
	struct stat st;
	assert_non_null(d);
	if (mkdir(to, 0755) < 0)
		assert_int_equal(errno, EEXIST);
	while ((e = readdir(d))) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		path_of(a, sizeof a, from, e->d_name);
		path_of(b, sizeof b, to, e->d_name);
		assert_int_equal(lstat(a, &st), 0);
		if (S_ISDIR(st.st_mode))
			copy_tree(a, b);
		else if (S_ISREG(st.st_mode))
			copy_file(a, b, st.st_mode & 07777);
	}
	closedir(d);
}

/* ---- damage cases ---- */

enum kind { K_DESC, K_TABLET, K_LOG, K_HEAD, K_NKINDS };
static const char *const kind_name[] = {"DESCRIPTOR", "tablet", "log segment", "log/HEAD"};

enum op { FLIP, BYTE, CUT };
static const char *const op_name[] = {"flip", "byte", "cut"};

struct damage {
	enum kind kind;
	char file[64];     /* relative to the database */
	char cls[96];      /* the byte-position class */
	enum op op;
	uint64_t at;       /* offset; for CUT the new size */
	int harmless;      /* no checksum that is read covers the class */
};

static struct damage *cases;
static int ncases, capcases;
static uint64_t rng = 0x2545F4914F6CDD1Du;

static void add(enum kind k, const char *file, const char *cls, enum op op, uint64_t at,
                int harmless)
{
	if (ncases == capcases) {
		capcases = capcases ? 2 * capcases : 256;
		cases = realloc(cases, (size_t)capcases * sizeof *cases);
		assert_non_null(cases);
	}
	struct damage *d = &cases[ncases++];
	memset(d, 0, sizeof *d);
	d->kind = k;
	snprintf(d->file, sizeof d->file, "%s", file);
	snprintf(d->cls, sizeof d->cls, "%s", cls);
	d->op = op;
	d->at = at;
	d->harmless = harmless;
}

/* A class of n bytes at `at`: at most 8 of its bytes (64 in the full
 * sweep), spread over it from the first (the low byte of a little-endian
 * field), each with one bit flipped and replaced by a random byte (in
 * the full sweep: each of its 8 bits flipped, and 3 random bytes). */
static void field(enum kind k, const char *file, const char *cls, uint64_t at, uint64_t n,
                  int harmless)
{
	uint64_t most = full_sweep() ? 64 : use_shm ? 8 : 1, steps = n < most ? n : most;
	int flips = full_sweep() ? 8 : 1, bytes = full_sweep() ? 3 : 1;
	for (uint64_t i = 0; i < steps; i++) {
		uint64_t off = at + i * n / steps;
		for (int j = 0; j < flips; j++)
			add(k, file, cls, FLIP, off, harmless);
		for (int j = 0; j < bytes; j++)
			add(k, file, cls, BYTE, off, harmless);
	}
}

/* Payload bytes [at, at + n): the first, the middle and the last (in the
 * full sweep, 32 spread over them), each flipped and replaced. */
static void payload(enum kind k, const char *file, const char *cls, uint64_t at, uint64_t n,
                    int harmless)
{
	uint64_t steps = full_sweep() ? (n < 32 ? n : 32) : (n < 3 ? n : 3);
	for (uint64_t i = 0; i < steps; i++) {
		uint64_t off = steps == 1 ? at : at + i * (n - 1) / (steps - 1);
		add(k, file, cls, FLIP, off, harmless);
		add(k, file, cls, BYTE, off, harmless);
	}
}

static void cut(enum kind k, const char *file, const char *cls, uint64_t size, int harmless)
{
	add(k, file, cls, CUT, size, harmless);
}

/* The DESCRIPTOR: every header field; the body's fixed fields; in each
 * schema record its version, column count, and each column entry's
 * name length, name, type and default; the key; the tablet count and
 * every field of each tablet record (in format version 4, with their
 * version intervals, then the horizon and the policy).  Offsets follow the records'
 * encoding, and must add up to the file's size. */
static void descriptor_cases(void)
{
	const char *f = "m/DESCRIPTOR";
	char path[512], cls[96];
	ts__descriptor *d;
	path_of(path, sizeof path, P.dir, "m");
	assert_int_equal(ts__descriptor_read(path, &d), 0);
	field(K_DESC, f, "magic", TS_DESC_OFF_MAGIC, 8, 0);
	field(K_DESC, f, "format version", TS_DESC_OFF_VERSION, 4, 0);
	field(K_DESC, f, "body_len", TS_DESC_OFF_BODY_LEN, 4, 0);
	field(K_DESC, f, "body CRC", TS_DESC_OFF_BODY_CRC, 4, 0);
	field(K_DESC, f, "header CRC", TS_DESC_OFF_HEADER_CRC, 4, 0);
	uint64_t at = TS_DESC_HEADER_SIZE;
	const char *fixed[] = {"generation", "ttl", "flushed_lsn", "next_tablet_id"};
	for (int i = 0; i < 4; i++, at += 8)
		field(K_DESC, f, fixed[i], at, 8, 0);
	field(K_DESC, f, "nschemas", at, 4, 0);
	at += 4;
	cut(K_DESC, f, "cut: header only", TS_DESC_HEADER_SIZE, 0);
	cut(K_DESC, f, "cut: inside the fixed fields", TS_DESC_HEADER_SIZE + 12, 0);
	for (int v = 0; v < d->nschemas; v++) {
		const ts__schema *s = d->schemas[v];
		ts_buf enc;
		uint64_t start = at;
		ts__buf_init(&enc);
		ts__schema_encode(s, &enc);
		snprintf(cls, sizeof cls, "cut: at schema %d", v + 1);
		cut(K_DESC, f, cls, at, 0);
		snprintf(cls, sizeof cls, "schema %d: version", v + 1);
		field(K_DESC, f, cls, at, 4, 0);
		snprintf(cls, sizeof cls, "schema %d: ncols", v + 1);
		field(K_DESC, f, cls, at + 4, 2, 0);
		at += 6;
		for (int c = 0; c < s->ncols; c++) {
			const ts__col *col = &s->cols[c];
			size_t name = strlen(col->name);
			uint64_t vsize = col->dflt.type == TS_NONE ? 0
			               : ts__type_is_var(col->dflt.type)
			                   ? ts__varint_size(col->dflt.v.s.len) + col->dflt.v.s.len
			                   : 8;
			/* in the full sweep every column, else the first, ts and the last */
			int pick = full_sweep() || c == 0 || c == s->ts_col || c == s->ncols - 1;
			snprintf(cls, sizeof cls, "schema %d: column %d name_len", v + 1, c);
			if (pick)
				field(K_DESC, f, cls, at, ts__varint_size(name), 0);
			at += ts__varint_size(name);
			snprintf(cls, sizeof cls, "schema %d: column %d name", v + 1, c);
			if (pick)
				field(K_DESC, f, cls, at, name, 0);
			at += name;
			snprintf(cls, sizeof cls, "schema %d: column %d type", v + 1, c);
			if (pick)
				field(K_DESC, f, cls, at, 1, 0);
			snprintf(cls, sizeof cls, "schema %d: column %d default tag", v + 1, c);
			if (pick)
				field(K_DESC, f, cls, at + 1, 1, 0);
			at += 2;
			snprintf(cls, sizeof cls, "schema %d: column %d default", v + 1, c);
			if (pick && vsize)
				field(K_DESC, f, cls, at, vsize, 0);
			at += vsize;
		}
		snprintf(cls, sizeof cls, "schema %d: nkey", v + 1);
		field(K_DESC, f, cls, at, 1, 0);
		snprintf(cls, sizeof cls, "schema %d: key columns", v + 1);
		field(K_DESC, f, cls, at + 1, 2 * (uint64_t)s->nkey, 0);
		at += 1 + 2 * (uint64_t)s->nkey;
		assert_int_equal(at - start, enc.len); /* the parse agrees with the encoder */
		ts__buf_free(&enc);
	}
	cut(K_DESC, f, "cut: at ntablets", at, 0);
	field(K_DESC, f, "ntablets", at, 4, 0);
	at += 4;
	const char *rec[] = {"id", "schema version", "period_start", "period_end", "min_ts",
	                     "max_ts", "rows", "bytes", "source", "lo", "hi"};
	const uint64_t size[] = {8, 4, 8, 8, 8, 8, 8, 8, 8, 8, 8};
	/* format version 4 (tablets with version intervals): lo and hi end
	 * each record, and the horizon and the policy follow the records */
	uint32_t version;
	int fields = 9;
	char dpath[512];
	path_of(dpath, sizeof dpath, P.dir, "m/DESCRIPTOR");
	FILE *df = fopen(dpath, "rb");
	unsigned char h[TS_DESC_HEADER_SIZE];
	assert_non_null(df);
	assert_int_equal(fread(h, 1, sizeof h, df), sizeof h);
	fclose(df);
	version = ts__load_u32(h + TS_DESC_OFF_VERSION);
	if (version >= 4)
		fields = 11;
	for (int i = 0; i < d->ntablets; i++) {
		snprintf(cls, sizeof cls, "cut: at tablet record %d", i);
		cut(K_DESC, f, cls, at, 0);
		snprintf(cls, sizeof cls, "tablet record %d: rec_len", i);
		field(K_DESC, f, cls, at, 1, 0);
		assert_true(at < P.desc_size);
		at += 1;
		for (int k = 0; k < fields; k++) {
			snprintf(cls, sizeof cls, "tablet record %d: %s", i, rec[k]);
			field(K_DESC, f, cls, at, size[k], 0);
			at += size[k];
		}
	}
	if (version >= 4) {
		field(K_DESC, f, "horizon", at, 8, 0);
		field(K_DESC, f, "duplicate policy", at + 8, 1, 0);
		at += 9;
	}
	assert_int_equal(at, P.desc_size); /* every byte belongs to a class */
	cut(K_DESC, f, "cut: to 0 bytes", 0, 0);
	cut(K_DESC, f, "cut: inside the header", 13, 0);
	cut(K_DESC, f, "cut: last byte", P.desc_size - 1, 0);
	ts__descriptor_free(d, 1);
}

/* A tablet: the header's fields; each block's header fields and stored
 * bytes (first, middle and last block; every block in the full sweep);
 * the footer's stored bytes; the trailer's fields; and cuts at every
 * part's boundary.  few: the second tablet, a sample only. */
static void tablet_cases(const struct ptablet *t, int few)
{
	char f[64], cls[96];
	snprintf(f, sizeof f, "m/tablets/%s", t->name);
	const struct { const char *name; uint64_t at, n; } head[] = {
		{"header: magic", TS_TABH_OFF_MAGIC, 8},   {"header: version", TS_TABH_OFF_VERSION, 4},
		{"header: size", TS_TABH_OFF_SIZE, 4},     {"header: id", TS_TABH_OFF_ID, 8},
		{"header: schema", TS_TABH_OFF_SCHEMA, 4}, {"header: CRC", TS_TABH_OFF_CRC, 4},
	}, blk[] = {
		{"stored", TS_BLKH_OFF_STORED, 4}, {"raw", TS_BLKH_OFF_RAW, 4},
		{"codec", TS_BLKH_OFF_CODEC, 1},   {"zero", TS_BLKH_OFF_CODEC + 1, 3},
		{"CRC", TS_BLKH_OFF_CRC, 4},
	}, trailer[] = {
		{"footer offset", TS_TABT_OFF_FOOTER, 8}, {"footer stored", TS_TABT_OFF_STORED, 4},
		{"footer raw", TS_TABT_OFF_RAW, 4},       {"footer CRC", TS_TABT_OFF_FOOTER_CRC, 4},
		{"footer codec", TS_TABT_OFF_CODEC, 1},   {"codec zero", TS_TABT_OFF_CODEC + 1, 3},
		{"CRC", TS_TABT_OFF_CRC, 4},              {"zero", TS_TABT_OFF_ZERO, 4},
		{"magic", TS_TABT_OFF_MAGIC, 8},
	};
	uint64_t tr = t->size - TS_TABT_SIZE;
	for (size_t i = 0; i < sizeof head / sizeof *head; i++)
		if (!few || head[i].at == TS_TABH_OFF_SCHEMA)
			field(K_TABLET, f, head[i].name, head[i].at, head[i].n, 0);
	for (uint32_t b = 0; b < t->nblocks; b++) {
		if (!full_sweep() && b != 0 && b != t->nblocks / 2 && b != t->nblocks - 1)
			continue;
		for (size_t i = 0; i < sizeof blk / sizeof *blk && !few; i++) {
			snprintf(cls, sizeof cls, "block %u header: %s", b, blk[i].name);
			field(K_TABLET, f, cls, t->boff[b] + blk[i].at, blk[i].n, 0);
		}
		snprintf(cls, sizeof cls, "block %u: stored bytes", b);
		payload(K_TABLET, f, cls, t->boff[b] + TS_BLKH_SIZE, t->bstored[b], 0);
	}
	payload(K_TABLET, f, "footer: stored bytes", t->footer, tr - t->footer, 0);
	for (size_t i = 0; i < sizeof trailer / sizeof *trailer; i++)
		if (!few || trailer[i].at == TS_TABT_OFF_CRC) {
			snprintf(cls, sizeof cls, "trailer: %s", trailer[i].name);
			field(K_TABLET, f, cls, tr + trailer[i].at, trailer[i].n, 0);
		}
	cut(K_TABLET, f, "cut: to 0 bytes", 0, 0);
	cut(K_TABLET, f, "cut: last byte", t->size - 1, 0);
	if (few)
		return;
	cut(K_TABLET, f, "cut: inside the header", TS_TABH_SIZE / 2, 0);
	cut(K_TABLET, f, "cut: header only", TS_TABH_SIZE, 0);
	cut(K_TABLET, f, "cut: inside block 0's header", t->boff[0] + TS_BLKH_OFF_CODEC, 0);
	cut(K_TABLET, f, "cut: in block 0's bytes", t->boff[0] + TS_BLKH_SIZE + t->bstored[0] / 2, 0);
	cut(K_TABLET, f, "cut: at block 1", t->boff[1], 0);
	cut(K_TABLET, f, "cut: at the last block", t->boff[t->nblocks - 1], 0);
	cut(K_TABLET, f, "cut: at the footer", t->footer, 0);
	cut(K_TABLET, f, "cut: in the footer", t->footer + (tr - t->footer) / 2, 0);
	cut(K_TABLET, f, "cut: at the trailer", tr, 0);
	cut(K_TABLET, f, "cut: in the trailer", tr + TS_TABT_OFF_CRC, 0);
}

/* A row record at log position row of segment file f: its header's
 * fields, the row, its padding. */
static void row_cases(const char *f, const char *which, uint64_t row)
{
	char path[512], cls[96];
	unsigned char rh[TS_ROWREC_HEADER];
	uint64_t at = TS_SEG_HEADER + row;
	path_of(path, sizeof path, P.dir, f);
	int fd = open(path, O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(pread(fd, rh, sizeof rh, (off_t)at), TS_ROWREC_HEADER);
	close(fd);
	uint32_t len = ts__load_u32(rh);
	assert_true(len > 0 && len < 256);
	snprintf(cls, sizeof cls, "%s: row record: row_len", which);
	field(K_LOG, f, cls, at, 4, 0);
	snprintf(cls, sizeof cls, "%s: row record: schema version", which);
	field(K_LOG, f, cls, at + 4, 2, 0);
	snprintf(cls, sizeof cls, "%s: row record: flags", which);
	field(K_LOG, f, cls, at + 6, 2, 0);
	snprintf(cls, sizeof cls, "%s: row record: row", which);
	payload(K_LOG, f, cls, at + TS_ROWREC_HEADER, len, 0);
	if (len % 8) {
		snprintf(cls, sizeof cls, "%s: row record: padding", which);
		field(K_LOG, f, cls, at + TS_ROWREC_HEADER + len, 8 - len % 8, 0);
	}
}

/* An AVL node at log position node: each of its fields. */
static void node_cases(const char *f, const char *which, uint64_t node)
{
	char cls[96];
	const struct { const char *name; uint64_t at, n; } nd[] = {
		{"node: kpfx", 0, 8},  {"node: kpfx2", 8, 8}, {"node: kts", 16, 8},
		{"node: left", 24, 8}, {"node: right", 32, 8},
		{"node: balance and key length", 40, 1}, {"node: row LSN", 41, 7},
	};
	for (size_t i = 0; i < sizeof nd / sizeof *nd; i++) {
		snprintf(cls, sizeof cls, "%s: %s", which, nd[i].name);
		field(K_LOG, f, cls, TS_SEG_HEADER + node + nd[i].at, nd[i].n, 0);
	}
}

/* The records of one batch: its header; a row record and a node (when
 * row is not 0); its commit record with its first root entry (if any)
 * and trailer; cuts at and in it.  Positions are log positions; the file
 * offset adds the header page. */
static void batch_cases(const char *f, const char *which, const struct batch *b,
                        uint64_t row, uint64_t node)
{
	char cls[96];
	uint64_t h = TS_SEG_HEADER;
	const struct { const char *name; uint64_t at, n; } bh[] = {
		{"batch header: magic", 0, 4}, {"batch header: flags", 4, 4},
		{"batch header: body_len", 8, 8},
	}, cm[] = {
		{"commit: magic", TS_COMMIT_OFF_MAGIC, 4}, {"commit: nroots", TS_COMMIT_OFF_NROOTS, 4},
		{"commit: seq", TS_COMMIT_OFF_SEQ, 8},     {"commit: batch", TS_COMMIT_OFF_BATCH, 8},
		{"commit: prev", TS_COMMIT_OFF_PREV, 8},   {"commit: time", TS_COMMIT_OFF_TIME, 8},
		{"commit: rows", TS_COMMIT_OFF_ROWS, 8},
	}, root[] = {
		{"period start", 0, 8}, {"period length", 8, 8}, {"root", 16, 8},
		{"rows", 24, 8},        {"bytes", 32, 8},        {"min_ts", 40, 8},
		{"max_ts", 48, 8},      {"born", 56, 8},         {"since", 64, 8},
		{"flags", 72, 4},       {"zero", 76, 4},
	};
	for (size_t i = 0; i < sizeof bh / sizeof *bh; i++) {
		snprintf(cls, sizeof cls, "%s: %s", which, bh[i].name);
		field(K_LOG, f, cls, h + b->hdr + bh[i].at, bh[i].n, 0);
	}
	if (row) {
		row_cases(f, which, row);
		node_cases(f, which, node);
	}
	for (size_t i = 0; i < sizeof cm / sizeof *cm; i++) {
		snprintf(cls, sizeof cls, "%s: %s", which, cm[i].name);
		field(K_LOG, f, cls, h + b->commit + cm[i].at, cm[i].n, 0);
	}
	for (size_t i = 0; i < sizeof root / sizeof *root && b->nroots; i++) {
		snprintf(cls, sizeof cls, "%s: commit root: %s", which, root[i].name);
		field(K_LOG, f, cls, h + b->commit + TS_COMMIT_FIXED + root[i].at, root[i].n, 0);
	}
	uint64_t trailer = b->commit + TS_COMMIT_FIXED + (uint64_t)b->nroots * TS_ROOT_SIZE;
	snprintf(cls, sizeof cls, "%s: commit: CRC", which);
	field(K_LOG, f, cls, h + trailer, 4, 0);
	snprintf(cls, sizeof cls, "%s: commit: length", which);
	field(K_LOG, f, cls, h + trailer + 4, 4, 0);
	snprintf(cls, sizeof cls, "cut: at the %s", which);
	cut(K_LOG, f, cls, h + b->hdr, 0);
	snprintf(cls, sizeof cls, "cut: in the %s", which);
	cut(K_LOG, f, cls, h + (b->hdr + b->commit) / 2, 0);
	snprintf(cls, sizeof cls, "cut: at the commit of the %s", which);
	cut(K_LOG, f, cls, h + b->commit, 0);
}

/* The log segment: its header page's fields (the clean flag and the zero
 * rest are covered by no checksum); a batch followed by valid ones and
 * the last batch; bytes before the flushed position and after the last
 * commit (harmless: never read); cuts; the prepared next segment; and
 * log/HEAD, which is a hint without a checksum. */
static void log_cases(void)
{
	const char *f = "m/log/0000000000000000.seg", *h = "m/log/HEAD";
	const struct { const char *name; uint64_t at, n; int harmless; } seg[] = {
		{"segment header: magic", TS_SEGH_OFF_MAGIC, 8, 0},
		{"segment header: version", TS_SEGH_OFF_VERSION, 4, 0},
		{"segment header: header size", TS_SEGH_OFF_HEADER_SIZE, 4, 0},
		{"segment header: segno", TS_SEGH_OFF_SEGNO, 8, 0},
		{"segment header: data size", TS_SEGH_OFF_DATA_SIZE, 8, 0},
		{"segment header: CRC", TS_SEGH_OFF_CRC, 4, 0},
		{"segment header: clean flag", TS_SEGH_OFF_CLEAN, 4, 1},
		{"segment header: zero rest", TS_SEGH_OFF_CLEAN + 4, TS_SEG_HEADER - 40, 1},
	};
	for (size_t i = 0; i < sizeof seg / sizeof *seg; i++)
		field(K_LOG, f, seg[i].name, seg[i].at, seg[i].n, seg[i].harmless);
	batch_cases(f, "flush's commit", &P.b[0], 0, 0);
	batch_cases(f, "batch followed by others", &P.b[P.mid], P.mid_row, P.mid_node);
	batch_cases(f, "last batch", &P.b[P.nb - 1], P.last_row, P.last_node);
	payload(K_LOG, f, "before the flushed position", TS_SEG_HEADER, P.flushed, 1);
	payload(K_LOG, f, "after the last commit", TS_SEG_HEADER + P.tail, 4096, 1);
	cut(K_LOG, f, "cut: to 0 bytes", 0, 0);
	cut(K_LOG, f, "cut: inside the header page", 40, 0);
	cut(K_LOG, f, "cut: header page only", TS_SEG_HEADER, 0);
	cut(K_LOG, f, "cut: at the flushed position", TS_SEG_HEADER + P.flushed, 0);
	cut(K_LOG, f, "cut: at the end of the last commit", TS_SEG_HEADER + P.tail, 1);
	cut(K_LOG, f, "cut: a page after the last commit", TS_SEG_HEADER + P.tail + 4096, 1);
	if (P.has_seg1) {
		const char *f1 = "m/log/0000000000000001.seg";
		field(K_LOG, f1, "next segment header: magic", TS_SEGH_OFF_MAGIC, 8, 0);
		field(K_LOG, f1, "next segment header: CRC", TS_SEGH_OFF_CRC, 4, 0);
		payload(K_LOG, f1, "next segment: data", TS_SEG_HEADER, TS_SEG_DATA, 1);
		cut(K_LOG, f1, "cut: next segment to 0 bytes", 0, 0);
		cut(K_LOG, f1, "cut: next segment, header page only", TS_SEG_HEADER, 1);
	}
	field(K_HEAD, h, "magic", TS_HEAD_OFF_MAGIC, 8, 1);
	field(K_HEAD, h, "commit LSN", TS_HEAD_OFF_COMMIT, 8, 1);
	field(K_HEAD, h, "pid", TS_HEAD_OFF_PID, 8, 1);
	cut(K_HEAD, h, "cut: to 0 bytes", 0, 1);
	cut(K_HEAD, h, "cut: inside the commit LSN", TS_HEAD_OFF_COMMIT + 4, 1);
}

/* Apply d to the database in dir. */
static void apply(const char *dir, const struct damage *d, uint64_t *state)
{
	char path[512];
	path_of(path, sizeof path, dir, d->file);
	if (d->op == CUT) {
		assert_int_equal(truncate(path, (off_t)d->at), 0);
		return;
	}
	int fd = open(path, O_RDWR);
	unsigned char c, x;
	assert_true(fd >= 0);
	assert_int_equal(pread(fd, &c, 1, (off_t)d->at), 1);
	if (d->op == FLIP)
		x = c ^ (unsigned char)(1u << (ts_test_xorshift(state) % 8));
	else
		do
			x = (unsigned char)ts_test_xorshift(state);
		while (x == c);
	assert_int_equal(pwrite(fd, &x, 1, (off_t)d->at), 1);
	close(fd);
}

/* ---- what a damaged copy answers ---- */

enum outcome { OUT_OPEN, OUT_QUERY, OUT_RECOVERY, OUT_CHECK, OUT_SILENT, OUT_N };
static const char *const outcome_name[] = {
	"table open fails", "query fails (read-write: then quarantine)", "recovery quarantines log",
	"only ts_check", "silent",
};

/* What the queries returned. */
struct answers {
	struct crow *rows;
	size_t n;
	struct crow latest[HOSTS];
	int has_latest[HOSTS];
	int64_t (*agg)[7];   /* host index, window, count, sum, min, max of v, sum of w */
	size_t nagg;
};

static void answers_free(struct answers *a)
{
	free(a->rows);
	free(a->agg);
	memset(a, 0, sizeof *a);
}

static void to_crow(const ts_value *v, int n, struct crow *r)
{
	assert_int_equal(n, NCOLS);
	assert_int_equal(v[0].type, TS_STRING);
	assert_true(v[0].v.s.len < sizeof r->host);
	memset(r, 0, sizeof *r);
	memcpy(r->host, v[0].v.s.ptr, v[0].v.s.len);
	r->ts = v[1].v.i;
	r->batch = v[2].v.i;
	r->v = v[3].v.i;
	r->w = v[4].v.i;
}

static int query_all(ts_table *t, struct answers *a)
{
	ts_query q;
	ts_cursor *c;
	const ts_value *v;
	int n, rc;
	size_t cap = 0;
	memset(&q, 0, sizeof q);
	if ((rc = ts_query_open(t, &q, &c)) < 0)
		return rc;
	while ((rc = ts_cursor_next(c, &v, &n)) == 0 && v) {
		if (a->n == cap) {
			cap = cap ? 2 * cap : 1024;
			a->rows = realloc(a->rows, cap * sizeof *a->rows);
			assert_non_null(a->rows);
		}
		to_crow(v, n, &a->rows[a->n++]);
	}
	ts_cursor_close(c);
	return rc;
}

static int latest_all(ts_table *t, struct answers *a)
{
	for (int h = 0; h < HOSTS; h++) {
		char host[8];
		ts_cursor *c;
		const ts_value *v;
		int n, rc;
		snprintf(host, sizeof host, "h%d", h);
		ts_value prefix = ts_string(host);
		if ((rc = ts_latest_open(t, &prefix, 1, &c)) < 0)
			return rc;
		rc = ts_cursor_next(c, &v, &n);
		if (rc == 0 && v) {
			to_crow(v, n, &a->latest[h]);
			a->has_latest[h] = 1;
		}
		ts_cursor_close(c);
		if (rc < 0)
			return rc;
	}
	return 0;
}

static const ts_aggspec agg_specs[] = {
	{3, TS_AGG_COUNT}, {3, TS_AGG_SUM}, {3, TS_AGG_MIN}, {3, TS_AGG_MAX}, {4, TS_AGG_SUM},
};

static int aggregate_all(ts_table *t, struct answers *a)
{
	ts_aggregate req = {.from = NOW - 24 * HOUR, .to = NOW + HOUR, .every = HOUR, .group = 1,
	                    .specs = agg_specs, .nspecs = 5};
	ts_cursor *c;
	const ts_value *v;
	int n, rc;
	size_t cap = 0;
	if ((rc = ts_aggregate_open(t, &req, &c)) < 0)
		return rc;
	while ((rc = ts_cursor_next(c, &v, &n)) == 0 && v) {
		assert_int_equal(n, 7);
		if (a->nagg == cap) {
			cap = cap ? 2 * cap : 64;
			a->agg = realloc(a->agg, cap * sizeof *a->agg);
			assert_non_null(a->agg);
		}
		int64_t *g = a->agg[a->nagg++];
		assert_true(v[0].v.s.len == 2 && ((const char *)v[0].v.s.ptr)[0] == 'h');
		g[0] = ((const char *)v[0].v.s.ptr)[1] - '0';
		for (int i = 1; i < 7; i++)
			g[i] = v[i].v.i;
	}
	ts_cursor_close(c);
	return rc;
}

/* What the pristine rows give, keeping only those keep[] says. */
static void expected(const unsigned char *keep, struct answers *a)
{
	a->rows = calloc(P.n + 1, sizeof *a->rows);
	a->agg = calloc(P.n + 1, sizeof *a->agg);
	assert_true(a->rows && a->agg);
	for (size_t i = 0; i < P.n; i++) {
		const struct crow *r = &P.rows[i];
		if (!keep[i])
			continue;
		a->rows[a->n++] = *r;
		int h = r->host[1] - '0';
		if (!a->has_latest[h] || r->ts > a->latest[h].ts)
			a->latest[h] = *r;
		a->has_latest[h] = 1;
	}
	/* rows are in (host, ts) order, so groups come in output order */
	for (size_t i = 0; i < a->n; i++) {
		const struct crow *r = &a->rows[i];
		int64_t win = r->ts - r->ts % HOUR, h = r->host[1] - '0';
		int64_t *g = a->nagg ? a->agg[a->nagg - 1] : NULL;
		if (!g || g[0] != h || g[1] != win) {
			g = a->agg[a->nagg++];
			g[0] = h;
			g[1] = win;
			g[2] = g[3] = g[6] = 0;
			g[4] = INT64_MAX;
			g[5] = INT64_MIN;
		}
		g[2]++;
		g[3] += r->v;
		g[4] = r->v < g[4] ? r->v : g[4];
		g[5] = r->v > g[5] ? r->v : g[5];
		g[6] += r->w;
	}
}

static void expect_same(const struct damage *d, const struct answers *got,
                        const struct answers *want)
{
	for (size_t i = 0; i < got->n && i < want->n; i++) {
		const struct crow *x = &got->rows[i], *y = &want->rows[i];
		if (strcmp(x->host, y->host) || x->ts != y->ts || x->batch != y->batch || x->v != y->v ||
		    x->w != y->w)
			fail_msg("%s %s at %" PRIu64 " (%s): row %zu is %s/%" PRId64 "/%" PRId64 "/%" PRId64
			         "/%" PRId64 ", want %s/%" PRId64 "/%" PRId64 "/%" PRId64 "/%" PRId64,
			         d->file, op_name[d->op], d->at, d->cls, i, x->host, x->ts, x->batch, x->v,
			         x->w, y->host, y->ts, y->batch, y->v, y->w);
	}
	if (got->n != want->n)
		fail_msg("%s %s at %" PRIu64 " (%s): %zu rows, want %zu", d->file, op_name[d->op], d->at,
		         d->cls, got->n, want->n);
	for (int h = 0; h < HOSTS; h++) {
		assert_int_equal(got->has_latest[h], want->has_latest[h]);
		if (want->has_latest[h] && (got->latest[h].ts != want->latest[h].ts ||
		                            got->latest[h].v != want->latest[h].v))
			fail_msg("%s (%s): latest of h%d differs", d->file, d->cls, h);
	}
	if (got->nagg != want->nagg)
		fail_msg("%s (%s): %zu aggregate rows, want %zu", d->file, d->cls, got->nagg, want->nagg);
	for (size_t i = 0; i < got->nagg; i++)
		if (memcmp(got->agg[i], want->agg[i], sizeof got->agg[i]) != 0)
			fail_msg("%s (%s): aggregate row %zu differs", d->file, d->cls, i);
}

/* The first error of the case, for TSSTORE_CORRUPT_VERBOSE. */
static char first_error[160];

/* An error an application may be given for damage, naming the file. */
static void expect_damage_error(const struct damage *d, int rc, const char *when)
{
	if (!first_error[0])
		snprintf(first_error, sizeof first_error, "%s: %s", when, ts_errmsg(NULL));
	if (rc != TS_ECORRUPT && rc != TS_EVERSION && rc != TS_EIO)
		fail_msg("%s %s at %" PRIu64 " (%s): %s gave %d (%s)", d->file, op_name[d->op], d->at,
		         d->cls, when, rc, ts_errmsg(NULL));
	if (!strstr(ts_errmsg(NULL), d->file))
		fail_msg("%s %s at %" PRIu64 " (%s): %s: the message does not name the file: %s",
		         d->file, op_name[d->op], d->at, d->cls, when, ts_errmsg(NULL));
}

struct problems {
	int n, naming;      /* problems; those naming the damaged file */
	int quarantine;     /* those naming a file in quarantine/ */
	const char *file;
	char first[512];
};

static void on_problem(void *arg, const char *table, const char *file, const char *what)
{
	struct problems *p = arg;
	assert_string_equal(table, "m");
	if (p->n++ == 0)
		snprintf(p->first, sizeof p->first, "%s: %s", file, what);
	/* log/HEAD only points into the log: damage to it reads as a
	 * segment that lacks the commit HEAD names, and says so */
	p->naming += strcmp(file, p->file) == 0 ||
	             (strcmp(p->file, "m/log/HEAD") == 0 && strstr(what, "(log/HEAD)"));
	p->quarantine += strncmp(file, "m/quarantine/", 13) == 0;
}

static int check(ts_db *db, const char *file, struct problems *p)
{
	ts_check_opts o = {.problem = on_problem, .arg = p};
	memset(p, 0, sizeof *p);
	p->file = file;
	int rc = ts_check(db, "m", &o);
	assert_true(rc == 0 || rc == TS_ECORRUPT);
	assert_int_equal(rc == 0, p->n == 0);
	return rc;
}

/* What the copy's quarantine/ holds: keep[] loses the rows of each
 * tablet there, and of the log from a log range's start.  Returns the
 * files found. */
static int quarantined(const char *dir, unsigned char *keep, uint64_t *log_cut)
{
	char path[512];
	DIR *d;
	struct dirent *e;
	int n = 0;
	path_of(path, sizeof path, dir, "m/quarantine");
	*log_cut = 0;
	if (!(d = opendir(path)))
		return 0;
	while ((e = readdir(d))) {
		uint64_t id, lsn;
		char rest[8];
		if (e->d_name[0] == '.')
			continue;
		n++;
		if (sscanf(e->d_name, "%16" SCNx64 "%7s", &id, rest) == 2 &&
		    strcmp(rest, TS_TABLET_SUFFIX) == 0) {
			for (size_t i = 0; i < P.n; i++)
				if (P.rows[i].tablet == id)
					keep[i] = 0;
		} else if (sscanf(e->d_name, "log-%16" SCNx64, &lsn) == 1) {
			*log_cut = lsn;
			for (size_t i = 0; i < P.n; i++)
				if (!P.rows[i].tablet && P.rows[i].end > lsn)
					keep[i] = 0;
		} else {
			fail_msg("unknown file in quarantine/: %s", e->d_name);
		}
	}
	closedir(d);
	return n;
}

/* Wait (at most 10 s) for the maintenance thread to quarantine what a
 * query found damaged. */
static void await_quarantine(ts_table *t, int64_t before)
{
	for (int i = 0; i < 10000 && ts_test_stat(t, "tablets_quarantined") == before; i++) {
		struct timespec ms = {0, 1000000};
		nanosleep(&ms, NULL);
	}
	if (ts_test_stat(t, "tablets_quarantined") == before)
		fail_msg("the damaged tablet was not quarantined");
}

/* Run the three queries; on a damage error wait for the quarantine and
 * run them again (a read-only handle, which cannot quarantine, stops at
 * the error).  Returns 1 if an error was seen. */
static int run_queries(const struct damage *d, ts_table *t, struct answers *got, int readonly)
{
	int failed = 0;
	for (int attempt = 0;; attempt++) {
		const char *when = "query";
		int64_t q = ts_test_stat(t, "tablets_quarantined");
		answers_free(got);
		int rc = query_all(t, got);
		if (rc == 0 && (when = "latest", rc = latest_all(t, got)) == 0)
			when = "aggregate", rc = aggregate_all(t, got);
		if (rc == 0)
			return failed;
		expect_damage_error(d, rc, when);
		if (readonly)
			return 1;
		if (attempt == 2)
			fail_msg("%s (%s): %s still fails after quarantine: %s", d->file, d->cls, when,
			         ts_errmsg(NULL));
		failed = 1;
		await_quarantine(t, q);
	}
}

/* What quarantine/ holds must be what d damaged: the tablet itself; or
 * a log range that starts at or before the damaged position and, for a
 * changed byte, holds it.  Harmless damage quarantines nothing. */
static void expect_quarantine_fits(const struct damage *d, const char *dir, int files,
                                   uint64_t log_cut)
{
	char path[512];
	struct stat st;
	if (d->harmless && files)
		fail_msg("%s (%s): harmless damage, yet %d files in quarantine", d->file, d->cls, files);
	if (d->kind == K_TABLET && files) {
		const char *name = strrchr(d->file, '/') + 1;
		snprintf(path, sizeof path, "%s/m/quarantine/%s", dir, name);
		if (files != 1 || access(path, F_OK) != 0)
			fail_msg("%s (%s): another file was quarantined", d->file, d->cls);
	}
	if (!log_cut)
		return;
	if (d->kind != K_LOG || d->at < TS_SEG_HEADER || strcmp(d->file + 6, "0000000000000000.seg"))
		fail_msg("%s (%s): a log range was quarantined", d->file, d->cls);
	uint64_t lsn = d->at - TS_SEG_HEADER;
	if (d->op == CUT && lsn < P.flushed) /* what is cut before it is never read */
		lsn = P.flushed;
	snprintf(path, sizeof path, "%s/m/quarantine/log-%016" PRIx64, dir, log_cut);
	assert_int_equal(stat(path, &st), 0);
	if (log_cut > lsn || (d->op != CUT && lsn >= log_cut + (uint64_t)st.st_size))
		fail_msg("%s (%s): damage at log position %" PRIu64 ", quarantined [%" PRIu64 ", +%lld)",
		         d->file, d->cls, lsn, log_cut, (long long)st.st_size);
}

/* The table opened: query it, compare what it answers with the pristine
 * rows but those reported lost, and run ts_check.  Returns the outcome. */
static enum outcome judge(const struct damage *d, const char *dir, ts_db *db, ts_table *t,
                          int readonly)
{
	struct answers got = {0}, want = {0};
	struct problems p;
	unsigned char *keep = malloc(P.n + 1);
	uint64_t log_cut = 0;
	assert_non_null(keep);
	memset(keep, 1, P.n + 1);
	enum outcome out = run_queries(d, t, &got, readonly) ? OUT_QUERY : OUT_SILENT;
	if (out == OUT_QUERY && readonly) { /* nothing to compare: it cannot quarantine */
		if (check(db, d->file, &p) != TS_ECORRUPT || !p.naming)
			fail_msg("%s (%s): a query fails, but ts_check says %s", d->file, d->cls,
			         p.n ? p.first : "nothing");
		goto out;
	}
	int files = quarantined(dir, keep, &log_cut);
	if (out == OUT_QUERY && !files)
		fail_msg("%s (%s): a query failed, and nothing is in quarantine", d->file, d->cls);
	if ((log_cut != 0) != (ts_test_stat(t, "log_quarantined_commits") != 0) ||
	    (uint64_t)ts_test_stat(t, "log_quarantined_lsn") != log_cut)
		fail_msg("%s (%s): quarantine/ and the stats disagree on the log", d->file, d->cls);
	expect_quarantine_fits(d, dir, files, log_cut);
	if (log_cut && out == OUT_SILENT)
		out = OUT_RECOVERY;
	expected(keep, &want);
	expect_same(d, &got, &want);
	int rc = check(db, d->file, &p);
	if (out != OUT_SILENT && (rc != TS_ECORRUPT || !p.quarantine))
		fail_msg("%s (%s): rows were given up, but ts_check says %s", d->file, d->cls,
		         p.n ? p.first : "nothing");
	if (out == OUT_SILENT && rc == TS_ECORRUPT) {
		if (!p.naming)
			fail_msg("%s (%s): ts_check names another file: %s", d->file, d->cls, p.first);
		out = OUT_CHECK;
	}
	if (out == OUT_SILENT && !d->harmless)
		fail_msg("%s %s at %" PRIu64 " (%s): damage nobody reports", d->file, op_name[d->op],
		         d->at, d->cls);
out:
	answers_free(&got);
	answers_free(&want);
	free(keep);
	return out;
}

/* Run damage case d on a fresh copy of the pristine database, opened
 * read-write (or read-only).  Returns the outcome. */
static enum outcome run_case(const struct damage *d, int readonly, uint64_t seed)
{
	char *dir = work_dir();
	struct problems p;
	enum outcome out = OUT_OPEN;
	ts_options o;
	ts_db *db;
	ts_table *t;
	copy_tree(P.dir, dir);
	apply(dir, d, &seed);
	options(&o, readonly ? TS_OPEN_READONLY : 0);
	if (ts_open(dir, &o, &db) != 0)
		fail_msg("%s (%s): ts_open: %s", d->file, d->cls, ts_errmsg(NULL));
	int rc = ts_table_open(db, "m", &t);
	if (rc == 0) {
		out = judge(d, dir, db, t, readonly);
		ts_table_close(t);
	} else {
		expect_damage_error(d, rc, "ts_table_open");
		if (check(db, d->file, &p) != TS_ECORRUPT || !p.naming)
			fail_msg("%s (%s): the table does not open, but ts_check says %s", d->file, d->cls,
			         p.n ? p.first : "nothing");
	}
	ts_close(db);
	ts_test_rmdir(dir);
	return out;
}

/* ---- the suite ---- */

/* TSSTORE_CORRUPT_ONLY=TEXT runs the cases whose class contains TEXT
 * (=TEXT: whose class is TEXT), for debugging. */
static int selected(const struct damage *d)
{
	const char *only = getenv("TSSTORE_CORRUPT_ONLY");
	if (!only)
		return 1;
	return only[0] == '=' ? strcmp(d->cls, only + 1) == 0 : strstr(d->cls, only) != NULL;
}

static double ms_since(const struct timespec *a)
{
	struct timespec b;
	clock_gettime(CLOCK_MONOTONIC, &b);
	return (double)(b.tv_sec - a->tv_sec) * 1e3 + (double)(b.tv_nsec - a->tv_nsec) / 1e6;
}

/* Per file kind: the cases and how each was answered. */
static void summary(int count[K_NKINDS][OUT_N], int first_kind, int last_kind, int readonly)
{
	for (int k = first_kind; k <= last_kind; k++) {
		int n = 0;
		for (int o = 0; o < OUT_N; o++)
			n += count[k][o];
		print_message("corrupt%s: %-11s %4d cases:", readonly ? " (read-only)" : "",
		              kind_name[k], n);
		for (int o = 0; o < OUT_N; o++)
			if (count[k][o])
				print_message(" %s %d;", outcome_name[o], count[k][o]);
		print_message("\n");
	}
}

/* Run every case of the kinds first_kind..last_kind (TSSTORE_CORRUPT_VERBOSE
 * lists each with its outcome). */
static void run_suite(int first_kind, int last_kind, int readonly)
{
	int count[K_NKINDS][OUT_N] = {{0}}, total = 0;
	struct timespec all, one;
	clock_gettime(CLOCK_MONOTONIC, &all);
	for (int i = 0; i < ncases; i++) {
		const struct damage *d = &cases[i];
		if ((int)d->kind < first_kind || (int)d->kind > last_kind || !selected(d))
			continue;
		clock_gettime(CLOCK_MONOTONIC, &one);
		first_error[0] = '\0';
		enum outcome out = run_case(d, readonly, rng ^ (uint64_t)(i + 1) * 0x9E3779B97F4A7C15u);
		count[d->kind][out]++;
		total++;
		if (getenv("TSSTORE_CORRUPT_VERBOSE"))
			print_message("%-30s %-4s %8" PRIu64 "  %-52s %-28s %4.0f ms  %s\n", d->file,
			              op_name[d->op], d->at, d->cls, outcome_name[out], ms_since(&one),
			              first_error);
	}
	summary(count, first_kind, last_kind, readonly);
	print_message("corrupt: %d cases in %.1f s\n", total, ms_since(&all) / 1e3);
	assert_true(total > 0);
}

static int setup_cases(void **state)
{
	ts_test_rmdir(work_dir()); /* decides use_shm */
	setup_pristine(state);
	descriptor_cases();
	tablet_cases(&P.tab[0], 0);
	tablet_cases(&P.tab[1], 1);
	log_cases();
	return 0;
}

static int teardown_cases(void **state)
{
	free(cases);
	cases = NULL;
	ncases = capcases = 0;
	return teardown_pristine(state);
}

/* The harness itself: an undamaged copy answers exactly the pristine
 * rows, and ts_check passes. */
static void corrupt_pristine_copy_is_sound(void **state)
{
	(void)state;
	struct damage none = {.kind = K_DESC, .file = "m/DESCRIPTOR", .cls = "none", .op = CUT,
	                      .harmless = 1};
	none.at = P.desc_size; /* a cut at the size changes nothing */
	assert_int_equal(run_case(&none, 0, 1), OUT_SILENT);
	assert_int_equal(run_case(&none, 1, 1), OUT_SILENT);
	assert_int_equal(P.n, 1520);
}

/* ---- the reports, in detail ---- */

/* A fresh copy of the pristine database. */
static char *pristine_copy(void)
{
	char *dir = work_dir();
	copy_tree(P.dir, dir);
	return dir;
}

static void xor_byte(const char *dir, const char *rel, uint64_t at, unsigned char mask)
{
	char path[512];
	unsigned char c;
	path_of(path, sizeof path, dir, rel);
	int fd = open(path, O_RDWR);
	assert_true(fd >= 0);
	assert_int_equal(pread(fd, &c, 1, (off_t)at), 1);
	c ^= mask;
	assert_int_equal(pwrite(fd, &c, 1, (off_t)at), 1);
	close(fd);
}

static void open_m(const char *dir, unsigned flags, ts_db **db, ts_table **t)
{
	ts_options o;
	options(&o, flags);
	assert_int_equal(ts_open(dir, &o, db), 0);
	if (ts_table_open(*db, "m", t) != 0)
		fail_msg("open m: %s", ts_errmsg(NULL));
}

/* The rows of the pristine database but the log's from position cut. */
static size_t rows_before(uint64_t cut, unsigned char *keep)
{
	size_t n = 0;
	for (size_t i = 0; i < P.n; i++) {
		keep[i] = P.rows[i].tablet || P.rows[i].end <= cut;
		n += keep[i];
	}
	return n;
}

/* A value byte of a row in a batch followed by valid ones: a reader
 * refuses the log (it would read the row); the writer keeps the batch
 * and the ones after aside in quarantine/, counts them, and goes on with
 * the prefix; ts_check reports the quarantined file until it is
 * removed.  (Before, recovery cut them off silently, and readers
 * returned the damaged row.) */
static void corrupt_log_damage_before_head_is_quarantined(void **state)
{
	(void)state;
	char *dir = pristine_copy(), path[512], name[64], want[600];
	const char *seg = "m/log/0000000000000000.seg";
	const struct batch *mid = &P.b[P.mid];
	unsigned char rh[TS_ROWREC_HEADER], *keep = malloc(P.n);
	struct answers got = {0}, exp = {0};
	struct problems p;
	ts_db *db;
	ts_table *t;
	assert_non_null(keep);
	path_of(path, sizeof path, dir, seg);
	int fd = open(path, O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(pread(fd, rh, sizeof rh, (off_t)(TS_SEG_HEADER + P.mid_row)),
	                 TS_ROWREC_HEADER);
	uint64_t at = TS_SEG_HEADER + P.mid_row + TS_ROWREC_HEADER + ts__load_u32(rh) - 1;
	unsigned char *orig = malloc(P.tail - mid->hdr);
	assert_non_null(orig);
	assert_int_equal(pread(fd, orig, P.tail - mid->hdr, (off_t)(TS_SEG_HEADER + mid->hdr)),
	                 (ssize_t)(P.tail - mid->hdr));
	close(fd);
	xor_byte(dir, seg, at, 0x10); /* the last byte of the row: its w */

	ts_options o;
	options(&o, TS_OPEN_READONLY);
	assert_int_equal(ts_open(dir, &o, &db), 0);
	assert_int_equal(ts_table_open(db, "m", &t), TS_ECORRUPT);
	snprintf(want, sizeof want, "log segment %s: the batch at log position %" PRIu64
	         " is damaged, before the newest commit at %" PRIu64, path, mid->hdr,
	         P.b[P.nb - 1].commit);
	if (!strstr(ts_errmsg(NULL), want))
		fail_msg("%s", ts_errmsg(NULL));
	assert_int_equal(ts_close(db), 0);

	open_m(dir, 0, &db, &t);
	assert_int_equal(ts_test_stat(t, "log_quarantined_lsn"), mid->hdr);
	assert_int_equal(ts_test_stat(t, "log_quarantined_commits"), P.nb - P.mid);
	snprintf(name, sizeof name, "m/quarantine/log-%016" PRIx64, mid->hdr);
	path_of(path, sizeof path, dir, name);
	unsigned char *kept = malloc(P.tail - mid->hdr + 1);
	assert_non_null(kept);
	fd = open(path, O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(read(fd, kept, P.tail - mid->hdr + 1), (ssize_t)(P.tail - mid->hdr));
	close(fd);
	orig[at - TS_SEG_HEADER - mid->hdr] ^= 0x10;
	assert_memory_equal(kept, orig, P.tail - mid->hdr); /* the bytes as found */
	size_t n = rows_before(mid->hdr, keep);
	assert_int_equal(n, P.n - 120 + 20); /* the insert before it stays */
	assert_int_equal(query_all(t, &got), 0);
	expected(keep, &exp);
	assert_int_equal(got.n, n);
	for (size_t i = 0; i < n; i++) {
		const struct crow *x = &got.rows[i], *y = &exp.rows[i];
		assert_string_equal(x->host, y->host);
		assert_true(x->ts == y->ts && x->batch == y->batch && x->v == y->v && x->w == y->w);
	}
	assert_int_equal(check(db, name, &p), TS_ECORRUPT);
	assert_int_equal(p.n, 1);
	assert_int_equal(p.naming, 1);
	/* the writer goes on after the cut */
	struct crow r = {.host = "h9", .ts = NOW - 60 * SEC, .batch = 99, .v = 1, .w = 2};
	insert(t, &r, 1, NCOLS);
	ts_table_close(t);
	assert_int_equal(ts_close(db), 0);

	open_m(dir, 0, &db, &t);
	assert_int_equal(ts_test_stat(t, "log_quarantined_commits"), 0);
	assert_int_equal(ts_test_stat(t, "log_quarantined_lsn"), 0);
	answers_free(&got);
	assert_int_equal(query_all(t, &got), 0);
	assert_int_equal(got.n, n + 1);
	assert_int_equal(check(db, name, &p), TS_ECORRUPT); /* until removed */
	assert_int_equal(unlink(path), 0);
	assert_int_equal(check(db, name, &p), 0);
	ts_table_close(t);
	assert_int_equal(ts_close(db), 0);
	answers_free(&got);
	answers_free(&exp);
	free(kept);
	free(orig);
	free(keep);
	ts_test_rmdir(dir);
}

/* What a crash leaves after the last published commit -- a batch cut
 * short, or whole but for its CRC, which log/HEAD does not name -- is cut
 * off silently, as before: nothing quarantined, nothing reported. */
static void corrupt_log_torn_tail_is_silent(void **state)
{
	(void)state;
	const struct batch *last = &P.b[P.nb - 1];
	for (int whole = 0; whole < 2; whole++) {
		char *dir = pristine_copy(), path[512];
		unsigned char buf[16 + 64 + TS_COMMIT_SIZE(0)];
		struct answers got = {0};
		struct problems p;
		ts_db *db;
		ts_table *t;
		memset(buf, 0xa5, sizeof buf);
		ts__store_u32(buf, TS_BATCH_MAGIC);
		ts__store_u32(buf + 4, 0);
		ts__store_u64(buf + 8, 64);
		unsigned char *c = buf + 16 + 64;
		ts__store_u32(c + TS_COMMIT_OFF_MAGIC, TS_COMMIT_MAGIC);
		ts__store_u32(c + TS_COMMIT_OFF_NROOTS, 0);
		ts__store_u64(c + TS_COMMIT_OFF_SEQ, (uint64_t)P.nb + 100); /* any: never read */
		ts__store_u64(c + TS_COMMIT_OFF_BATCH, P.tail);
		ts__store_u64(c + TS_COMMIT_OFF_PREV, last->commit);
		ts__store_u32(c + TS_COMMIT_FIXED + 4, TS_COMMIT_SIZE(0)); /* the CRC is wrong */
		path_of(path, sizeof path, dir, "m/log/0000000000000000.seg");
		int fd = open(path, O_WRONLY);
		assert_true(fd >= 0);
		size_t len = whole ? sizeof buf : 16 + 40;
		assert_int_equal(pwrite(fd, buf, len, (off_t)(TS_SEG_HEADER + P.tail)), (ssize_t)len);
		close(fd);
		open_m(dir, 0, &db, &t);
		assert_int_equal(ts_test_stat(t, "log_quarantined_commits"), 0);
		assert_int_equal(ts_test_stat(t, "log_quarantined_lsn"), 0);
		assert_int_equal(query_all(t, &got), 0);
		assert_int_equal(got.n, P.n);
		assert_int_equal(check(db, "m/quarantine", &p), 0);
		path_of(path, sizeof path, dir, "m/quarantine");
		assert_int_equal(access(path, F_OK), -1);
		ts_table_close(t);
		assert_int_equal(ts_close(db), 0);
		answers_free(&got);
		ts_test_rmdir(dir);
	}
}

static int64_t mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* A tablet found damaged when it is opened (its header) is quarantined
 * at once, as one found damaged in a block is -- not at the maintenance
 * thread's next periodic pass, a second after ts_open. */
static void corrupt_damaged_tablet_quarantined_at_once(void **state)
{
	(void)state;
	char *dir = pristine_copy(), rel[64];
	struct answers got = {0};
	ts_db *db;
	ts_table *t;
	snprintf(rel, sizeof rel, "m/tablets/%s", P.tab[0].name);
	xor_byte(dir, rel, TS_TABH_OFF_MAGIC, 0x01);
	int64_t t0 = mono_ms();
	open_m(dir, 0, &db, &t);
	assert_int_equal(query_all(t, &got), TS_ECORRUPT);
	while (ts_test_stat(t, "tablets_quarantined") == 0 && mono_ms() - t0 < 5000) {
		struct timespec ms = {0, 1000000};
		nanosleep(&ms, NULL);
	}
	int64_t took = mono_ms() - t0;
	assert_int_equal(ts_test_stat(t, "tablets_quarantined"), 1);
	if (took >= 500)
		fail_msg("quarantined %lld ms after ts_open", (long long)took);
	answers_free(&got);
	assert_int_equal(query_all(t, &got), 0);
	assert_int_equal(got.n, P.n - 1200);
	ts_table_close(t);
	assert_int_equal(ts_close(db), 0);
	answers_free(&got);
	ts_test_rmdir(dir);
}

/* log/HEAD naming an older commit (a damaged HEAD, or a writer's
 * recovery that cut the log back): a reader never goes back to it from
 * the newer commit it found, and a writer rewrites it. */
static void corrupt_head_naming_older_commit(void **state)
{
	(void)state;
	char *dir = pristine_copy(), path[512];
	struct answers got = {0};
	unsigned char lsn[8];
	ts_db *db;
	ts_table *t;
	path_of(path, sizeof path, dir, "m/log/HEAD");
	ts__store_u64(lsn, P.b[P.nb - 2].commit);
	int fd = open(path, O_WRONLY);
	assert_true(fd >= 0);
	assert_int_equal(pwrite(fd, lsn, 8, TS_HEAD_OFF_COMMIT), 8);
	close(fd);
	for (int ro = 1; ro >= 0; ro--) {
		open_m(dir, ro ? TS_OPEN_READONLY : 0, &db, &t);
		assert_int_equal(query_all(t, &got), 0);
		assert_int_equal(got.n, P.n);
		answers_free(&got);
		ts_table_close(t);
		assert_int_equal(ts_close(db), 0);
	}
	ts_test_rmdir(dir);
}

static void corrupt_descriptor(void **state) { (void)state; run_suite(K_DESC, K_DESC, 0); }
static void corrupt_tablets(void **state) { (void)state; run_suite(K_TABLET, K_TABLET, 0); }
static void corrupt_log(void **state) { (void)state; run_suite(K_LOG, K_HEAD, 0); }
static void corrupt_read_only(void **state) { (void)state; run_suite(K_DESC, K_HEAD, 1); }

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(corrupt_pristine_copy_is_sound),
		cmocka_unit_test(corrupt_log_damage_before_head_is_quarantined),
		cmocka_unit_test(corrupt_log_torn_tail_is_silent),
		cmocka_unit_test(corrupt_damaged_tablet_quarantined_at_once),
		cmocka_unit_test(corrupt_head_naming_older_commit),
		cmocka_unit_test(corrupt_descriptor),
		cmocka_unit_test(corrupt_tablets),
		cmocka_unit_test(corrupt_log),
		cmocka_unit_test(corrupt_read_only),
	};
	return cmocka_run_group_tests_name("corrupt", tests, setup_cases, teardown_cases);
}
