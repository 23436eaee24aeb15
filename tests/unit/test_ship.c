/*
 * test_ship.c -- ts_ship, the primary's side of following
 * (docs/standby.md section 2), against a standby built in the test from
 * the frames alone: its tablets, DESCRIPTOR and log bytes are the
 * primary's byte for byte, the directory opens as a database with
 * exactly the primary's rows and passes ts_check, after the first
 * shipment and after later commits, flushes and merges on the same
 * ship; a standby that holds everything gets a heartbeat and the
 * descriptor only; a dropped table ends the stream, and so does one
 * dropped and created again before the ship looked (seen by a writer's
 * ship and by a reader's); commits shipped one at a time follow the head
 * into new segments; a standby ahead of the primary is refused;
 * ts_close waits for ships.
 */
#include <dirent.h>
#include <fcntl.h>
#include <inttypes.h>
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

#include "handle.h"
#include "log.h"
#include "log_format.h"
#include "support.h"

#define NOW INT64_C(1795262400000000000) /* 2026-11-21T12:00:00Z */
#define SEC INT64_C(1000000000)
#define SHIFT 20                         /* 1 MiB log segments */

/* ---- the standby: ts_standby, fed the frames ---- */

struct standby {
	char *root;                  /* the standby's database directory */
	char dir[512];               /* root/m */
	ts_standby *s;
	unsigned shift;              /* the last heartbeat's */
	uint64_t head;               /* the last heartbeat's newest commit end */
	uint64_t log_end;            /* the last log frame's end */
	uint64_t commit;             /* the last log frame's id */
	uint64_t desc_at;            /* the last descriptor frame's id */
	int frames[128];             /* frames seen, by type */
	char order[4096];            /* their types, in order */
	int norder;
};

static void sb_init(struct standby *sb)
{
	memset(sb, 0, sizeof *sb);
	sb->root = ts_test_tmpdir();
	snprintf(sb->dir, sizeof sb->dir, "%s/m", sb->root);
	if (ts_standby_open(sb->root, &sb->s) < 0)
		fail_msg("open the standby: %s", ts_errmsg(NULL));
}

static void sb_close(struct standby *sb)
{
	assert_int_equal(ts_standby_close(sb->s), 0);
	sb->s = NULL;
}

static void sb_free(struct standby *sb)
{
	if (sb->s)
		sb_close(sb);
	ts_test_rmdir(sb->root);
}

static void sb_note(struct standby *sb, const ts_frame *f)
{
	sb->frames[f->type & 127]++;
	if (sb->norder < (int)sizeof sb->order - 1)
		sb->order[sb->norder++] = (char)f->type;
	switch (f->type) {
	case TS_FRAME_HEARTBEAT:
		assert_int_equal(f->length, TS_FRAME_HEARTBEAT_SIZE);
		memcpy(&sb->head, f->payload, 8);
		memcpy(&sb->shift, (const char *)f->payload + 16, 4);
		break;
	case TS_FRAME_DESCRIPTOR:
		sb->desc_at = f->id;
		break;
	case TS_FRAME_LOG:
		sb->log_end = f->offset + f->length;
		sb->commit = f->id;
		break;
	default:
		break;
	}
}

static void sb_apply(struct standby *sb, const ts_frame *f)
{
	sb_note(sb, f);
	if (ts_standby_apply(sb->s, "m", f) < 0)
		fail_msg("apply frame %c: %s", f->type, ts_errmsg(NULL));
}

/* Pull every frame the ship has now into sb; returns how many. */
static int drain(ts_ship *s, struct standby *sb)
{
	ts_frame f;
	int n = 0, rc;
	sb->norder = 0;
	while ((rc = ts_ship_next(s, &f)) == 1) {
		sb_apply(sb, &f);
		n++;
	}
	assert_int_equal(rc, 0);
	sb->order[sb->norder] = '\0';
	return n;
}

/* ---- comparing with the primary ---- */

static void *slurp(const char *path, size_t *n)
{
	struct stat st;
	int fd = open(path, O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(fstat(fd, &st), 0);
	void *p = malloc((size_t)st.st_size + 1);
	assert_int_equal(read(fd, p, (size_t)st.st_size), st.st_size);
	close(fd);
	*n = (size_t)st.st_size;
	return p;
}

static void expect_same_file(const char *a, const char *b)
{
	size_t na, nb;
	void *pa = slurp(a, &na), *pb = slurp(b, &nb);
	if (na != nb || memcmp(pa, pb, na) != 0)
		fail_msg("%s and %s differ (%zu and %zu bytes)", a, b, na, nb);
	free(pa);
	free(pb);
}

/* Every tablet and the DESCRIPTOR of the primary's table are the
 * standby's, byte for byte. */
static void expect_same_files(const ts_test_env *e, const struct standby *sb)
{
	char a[1024], b[1024];
	snprintf(a, sizeof a, "%s/m/DESCRIPTOR", e->dir);
	snprintf(b, sizeof b, "%s/DESCRIPTOR", sb->dir);
	expect_same_file(a, b);
	snprintf(a, sizeof a, "%s/m/tablets", e->dir);
	DIR *d = opendir(a);
	struct dirent *de;
	int n = 0;
	assert_non_null(d);
	while ((de = readdir(d)))
		if (strstr(de->d_name, ".tab") && de->d_name[0] != '.') {
			snprintf(a, sizeof a, "%s/m/tablets/%s", e->dir, de->d_name);
			snprintf(b, sizeof b, "%s/tablets/%s", sb->dir, de->d_name);
			expect_same_file(a, b);
			n++;
		}
	closedir(d);
	assert_true(n > 0);
}

/* The last log frame's id is the commit record the log ends with: the
 * one the primary's HEAD names. */
static void expect_commit_at_end(const ts_test_env *e, const struct standby *sb)
{
	char path[1024];
	unsigned char h[16];
	uint64_t head;
	snprintf(path, sizeof path, "%s/m/log/HEAD", e->dir);
	int fd = open(path, O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(pread(fd, h, sizeof h, 0), (ssize_t)sizeof h);
	close(fd);
	memcpy(&head, h + 8, 8);
	assert_true(head > 0);
	assert_int_equal(sb->commit, head);
}

/* The standby read as a database -- read-only beside the applier while
 * it is open, else read-write (its recovery run) -- holds exactly the
 * primary's rows, and passes ts_check. */
static void expect_same_rows(ts_test_env *e, const struct standby *sb)
{
	ts_test_expect_copy_m(sb->root, TS_OPEN_NOMERGE | (sb->s ? TS_OPEN_READONLY : 0), e->t);
}

/* The standby, read read-only, holds exactly insert_batches(1, batches,
 * rows)'s rows. */
static void expect_same_rows_as_of(const struct standby *sb, int batches, int rows)
{
	ts_options o;
	ts_db *db = NULL;
	ts_table *t = NULL;
	test_row *got = NULL;
	ts_options_init(&o);
	o.flags = TS_OPEN_READONLY;
	assert_int_equal(ts_open(sb->root, &o, &db), 0);
	assert_int_equal(ts_table_open(db, "m", &t), 0);
	long ng = ts_test_read_m(t, &got);
	assert_int_equal(ng, (long)batches * rows);
	for (long i = 0; i < ng; i++)
		assert_true(got[i].v / 1000 >= 1 && got[i].v / 1000 <= batches);
	free(got);
	ts_table_close(t);
	assert_int_equal(ts_check(db, NULL, NULL), 0);
	assert_int_equal(ts_close(db), 0);
}

static void insert_batches(ts_test_env *e, int from, int n, int rows)
{
	test_row *r = calloc((size_t)rows, sizeof *r);
	for (int b = from; b < from + n; b++) {
		for (int i = 0; i < rows; i++) {
			char host[16];
			snprintf(host, sizeof host, "h%03d", i % 50);
			r[i] = ts_test_row(host, NOW - 3600 * SEC + b * SEC + (i / 50) * 1000, b * 1000 + i);
		}
		assert_int_equal(ts_test_insert_m(e->t, r, (size_t)rows), 0);
	}
	free(r);
}

static int setup(void **state)
{
	ts_test_env *e = ts_test_env_new_held(NOW);
	ts_test_env_close(e);
	e->log_segment_size = INT64_C(1) << SHIFT;
	ts_test_env_open(e);
	*state = e;
	return 0;
}

/* ---- tests ---- */

/* From nothing: a heartbeat, every tablet, the descriptor, the log; the
 * standby is the primary.  Then, on the same ship, new commits are log
 * frames only; a flush sends its tablet and the descriptor first; a
 * merge its output. */
static void ship_builds_a_standby(void **state)
{
	ts_test_env *e = *state;
	struct standby sb;
	ts_ship *s = NULL;
	sb_init(&sb);
	insert_batches(e, 1, 10, 500);
	assert_int_equal(ts_flush(e->t, INT64_MAX), 0);
	insert_batches(e, 11, 20, 500); /* several segments of log */
	assert_int_equal(ts_ship_open(e->t, 0, NULL, 0, &s), 0);
	drain(s, &sb);
	assert_int_equal(sb.order[0], 'H');
	assert_int_equal(sb.shift, SHIFT);
	assert_int_equal(sb.frames['D'], 1);
	assert_true(sb.frames['T'] >= 1);
	if (sb.frames['L'] < 2 || sb.log_end >> SHIFT < 1) /* two segments */
		fail_msg("frames %s, log end %" PRIu64, sb.order, sb.log_end);
	assert_non_null(strstr(sb.order, "TDL"));
	assert_true(sb.desc_at <= sb.log_end); /* put in place: the log reached it */
	assert_int_equal(sb.desc_at, sb.head); /* at the commit it was read with */
	assert_int_equal(sb.log_end, sb.head);
	expect_commit_at_end(e, &sb);
	expect_same_files(e, &sb);
	expect_same_rows(e, &sb);

	/* commits: log frames only */
	insert_batches(e, 31, 3, 100);
	drain(s, &sb);
	assert_true(strspn(sb.order, "L") == strlen(sb.order) && strlen(sb.order) >= 1);
	expect_commit_at_end(e, &sb);
	expect_same_rows(e, &sb);

	/* a flush: its tablet, then the descriptor, then nothing else */
	assert_int_equal(ts_flush(e->t, INT64_MAX), 0);
	drain(s, &sb);
	assert_int_equal(sb.order[0], 'T');
	assert_non_null(strchr(sb.order, 'D'));
	assert_null(strchr(sb.order, 'H'));
	expect_same_files(e, &sb);
	expect_same_rows(e, &sb);

	/* a merge of the two tablets; more commits */
	assert_int_equal(ts_merge(e->t, NULL), 0);
	insert_batches(e, 34, 2, 100);
	drain(s, &sb);
	assert_non_null(strstr(sb.order, "TD"));
	expect_same_files(e, &sb);
	expect_same_rows(e, &sb);
	assert_int_equal(drain(s, &sb), 0); /* nothing new */
	ts_ship_close(s);
	sb_free(&sb);
}

/* A standby that holds every tablet and the log through the newest
 * commit gets a heartbeat and the descriptor, nothing else. */
static void ship_to_a_standby_that_has_everything(void **state)
{
	ts_test_env *e = *state;
	struct standby sb;
	ts_ship *s = NULL;
	uint64_t ids[16];
	int n = 0;
	sb_init(&sb);
	insert_batches(e, 1, 4, 300);
	assert_int_equal(ts_flush(e->t, INT64_MAX), 0);
	insert_batches(e, 5, 4, 300);
	assert_int_equal(ts_ship_open(e->t, 0, NULL, 0, &s), 0);
	drain(s, &sb);
	ts_ship_close(s);
	char p[600];
	snprintf(p, sizeof p, "%s/tablets", sb.dir);
	DIR *d = opendir(p);
	struct dirent *de;
	while ((de = readdir(d)))
		if (strstr(de->d_name, ".tab"))
			ids[n++] = strtoull(de->d_name, NULL, 16);
	closedir(d);
	assert_true(n >= 1);
	assert_int_equal(ts_ship_open(e->t, sb.log_end, ids, n, &s), 0);
	assert_int_equal(drain(s, &sb), 2);
	assert_string_equal(sb.order, "HD");
	ts_ship_close(s);
	/* one tablet missing: that one is sent again, whole */
	assert_int_equal(ts_ship_open(e->t, sb.log_end, ids, n - 1, &s), 0);
	drain(s, &sb);
	assert_int_equal(sb.order[0], 'H');
	assert_int_equal(sb.order[1], 'T');
	assert_int_equal(sb.order[strlen(sb.order) - 1], 'D');
	ts_ship_close(s);
	expect_same_files(e, &sb);
	sb_free(&sb);
}

/* A standby that holds nothing of a table whose older log segments a
 * flush released: the log is shipped from the descriptor's flushed
 * position, and the standby holds the primary's rows. */
static void ship_skips_the_released_log(void **state)
{
	ts_test_env *e = *state;
	struct standby sb;
	ts_ship *s = NULL;
	char p[600];
	struct stat st;
	sb_init(&sb);
	insert_batches(e, 1, 30, 500);
	assert_int_equal(ts_flush(e->t, INT64_MAX), 0);
	assert_int_equal(ts__log_drop_released(e->t->log), 0); /* (the preparer's work, now) */
	insert_batches(e, 31, 2, 100);
	snprintf(p, sizeof p, "%s/m/log/%016x.seg", e->dir, 0);
	assert_int_equal(stat(p, &st), -1); /* released */
	assert_int_equal(ts_ship_open(e->t, 0, NULL, 0, &s), 0);
	drain(s, &sb);
	assert_non_null(strstr(sb.order, "TDL"));
	assert_true(sb.log_end >> SHIFT >= 1);
	expect_same_files(e, &sb);
	expect_same_rows(e, &sb);
	ts_ship_close(s);
	sb_free(&sb);
}

/* A standby whose log reaches past the primary's newest commit follows
 * another history: refused. */
static void ship_refuses_a_standby_ahead(void **state)
{
	ts_test_env *e = *state;
	ts_ship *s = NULL;
	ts_frame f;
	insert_batches(e, 1, 2, 10);
	assert_int_equal(ts_ship_open(e->t, UINT64_C(1) << 40, NULL, 0, &s), 0);
	assert_int_equal(ts_ship_next(s, &f), TS_EINVAL);
	assert_non_null(strstr(ts_errmsg(NULL), "past the primary's newest commit"));
	ts_ship_close(s);
}

/* A dropped table: one end frame, then nothing; ts_close waits for the
 * ship (TS_EBUSY) until it is closed. */
static void ship_of_a_dropped_table_ends(void **state)
{
	ts_test_env *e = *state;
	struct standby sb;
	ts_ship *s = NULL;
	ts_frame f;
	sb_init(&sb);
	insert_batches(e, 1, 2, 10);
	assert_int_equal(ts_ship_open(e->t, 0, NULL, 0, &s), 0);
	drain(s, &sb);
	assert_int_equal(ts_drop(e->db, "m"), 0);
	assert_int_equal(ts_ship_next(s, &f), 1);
	assert_int_equal(f.type, TS_FRAME_END);
	assert_int_equal(ts_ship_next(s, &f), 0);
	ts_table_close(e->t);
	e->t = NULL;
	assert_int_equal(ts_close(e->db), TS_EBUSY);
	ts_ship_close(s);
	assert_int_equal(ts_close(e->db), 0);
	e->db = NULL;
	sb_free(&sb);
}

/* Commits shipped one at a time while the log grows through several
 * segments, on the same ship with no descriptor change in between:
 * the segment file the ship keeps open to find the head commit's end
 * must follow the head into each new segment (each drain ends at the
 * commit HEAD names, the standby holds the primary's rows). */
static void ship_follows_the_head_into_new_segments(void **state)
{
	ts_test_env *e = *state;
	struct standby sb;
	ts_ship *s = NULL;
	char logdir[600];
	snprintf(logdir, sizeof logdir, "%s/m/log", e->dir);
	sb_init(&sb);
	insert_batches(e, 1, 1, 10);
	assert_int_equal(ts_ship_open(e->t, 0, NULL, 0, &s), 0);
	drain(s, &sb);
	int b = 2, segments = 0;
	uint64_t seg = sb.log_end >> SHIFT;
	for (; segments < 3 && b < 400; b++) {
		insert_batches(e, b, 1, 500);
		drain(s, &sb);
		if (strcmp(sb.order, "L") != 0 && strcmp(sb.order, "LL") != 0)
			fail_msg("batch %d: frames %s, want log frames only", b, sb.order);
		expect_commit_at_end(e, &sb);
		uint64_t end = 0;
		assert_int_equal(ts__log_head_end(logdir, SHIFT, sb.commit, &end), 0);
		assert_int_equal(sb.log_end, end);
		if (sb.log_end >> SHIFT != seg) {
			seg = sb.log_end >> SHIFT;
			segments++;
		}
	}
	assert_int_equal(segments, 3);
	expect_same_rows(e, &sb);
	ts_ship_close(s);
	sb_free(&sb);
}

/* A table dropped and created again under its name before the ship
 * looks: the ship's table is gone, so one end frame -- not the new
 * table's descriptor, which a standby would put over the old table's
 * log (the new table is shipped from nothing by a new ship, as
 * follow.c does for a table it finds).  reader: the ship is of a
 * read-only handle (a writer in another process, as far as the ship can
 * tell), whose table object is never marked dropped: the directory's
 * identity says it is another table. */
static void expect_end_after_created_again(ts_test_env *e, int reader)
{
	struct standby sb;
	ts_options o;
	ts_db *ro = NULL;
	ts_table *rt = NULL, *t2 = NULL, *old = e->t;
	ts_ship *s = NULL;
	ts_frame f;
	sb_init(&sb);
	insert_batches(e, 1, 20, 100);
	if (reader) {
		ts_options_init(&o);
		o.flags = TS_OPEN_READONLY;
		assert_int_equal(ts_open(e->dir, &o, &ro), 0);
		assert_int_equal(ts_table_open(ro, "m", &rt), 0);
	}
	assert_int_equal(ts_ship_open(reader ? rt : e->t, 0, NULL, 0, &s), 0);
	drain(s, &sb);
	assert_int_equal(ts_drop(e->db, "m"), 0);
	ts_test_create_m(e->db, 0);
	assert_int_equal(ts_table_open(e->db, "m", &t2), 0);
	e->t = t2;
	insert_batches(e, 1, 1, 10);
	assert_int_equal(ts_ship_next(s, &f), 1);
	assert_int_equal(f.type, TS_FRAME_END);
	assert_int_equal(ts_ship_next(s, &f), 0);
	ts_ship_close(s);
	ts_table_close(old);
	ts_table_close(rt);
	if (ro)
		assert_int_equal(ts_close(ro), 0);
	sb_free(&sb);
}

static void ship_of_a_table_created_again_ends(void **state)
{
	expect_end_after_created_again(*state, 0);
}

static void ship_of_a_reader_sees_a_table_created_again(void **state)
{
	expect_end_after_created_again(*state, 1);
}

/* ---- the standby's own tests ---- */

/* Drain the ship into sb through the wire: each frame encoded and
 * decoded (ts_frame_header, ts_frame_decode), as a standby receives it. */
static void drain_wire(ts_ship *s, struct standby *sb)
{
	static unsigned char wire[TS_FRAME_HEADER_MAX + TS_FRAME_PAYLOAD_MAX];
	char table[TS_NAME_MAX + 1];
	ts_frame f, g;
	size_t n, used;
	int rc;
	while ((rc = ts_ship_next(s, &f)) == 1) {
		assert_int_equal(ts_frame_header("m", &f, wire, sizeof wire, &n), 0);
		if (f.length) /* (an end frame has no payload) */
			memcpy(wire + n, f.payload, f.length);
		assert_int_equal(ts_frame_decode(wire, n + f.length, &g, table, &used), 1);
		assert_string_equal(table, "m");
		sb_apply(sb, &g);
	}
	assert_int_equal(rc, 0);
}

/* A ship opened from what the standby says it holds. */
static ts_ship *ship_from_state(ts_test_env *e, struct standby *sb, uint64_t *lsn, int *ntablets)
{
	ts_standby_table *st = NULL;
	ts_ship *s = NULL;
	int n = 0;
	assert_int_equal(ts_standby_state(sb->s, &st, &n), 0);
	*lsn = 0;
	*ntablets = 0;
	assert_true(n <= 1);
	if (n == 1) {
		assert_string_equal(st[0].name, "m");
		*lsn = st[0].lsn;
		*ntablets = st[0].ntablets;
		for (int i = 1; i < st[0].ntablets; i++)
			assert_true(st[0].tablets[i - 1] < st[0].tablets[i]);
	}
	assert_int_equal(ts_ship_open(e->t, *lsn, n ? st[0].tablets : NULL, *ntablets, &s), 0);
	ts_standby_state_free(st, n);
	return s;
}

/* The standby's DESCRIPTOR file: whether it is there. */
static int sb_has_desc(const struct standby *sb)
{
	char p[600];
	struct stat st;
	snprintf(p, sizeof p, "%s/DESCRIPTOR", sb->dir);
	return stat(p, &st) == 0;
}

/* The standby holds the database's LOCK: no writer, no second standby;
 * readers are welcome.  A drop on the primary (E) removes the table. */
static void standby_locks_and_drops(void **state)
{
	ts_test_env *e = *state;
	struct standby sb;
	ts_standby *other = NULL;
	ts_db *db = NULL;
	ts_options o;
	ts_ship *s = NULL;
	sb_init(&sb);
	ts_options_init(&o);
	assert_int_equal(ts_open(sb.root, &o, &db), TS_ELOCKED);
	assert_int_equal(ts_standby_open(sb.root, &other), TS_ELOCKED);
	assert_non_null(strstr(ts_errmsg(NULL), "locked by another writer"));
	insert_batches(e, 1, 3, 100);
	assert_int_equal(ts_ship_open(e->t, 0, NULL, 0, &s), 0);
	drain_wire(s, &sb);
	expect_same_rows(e, &sb);
	assert_int_equal(ts_drop(e->db, "m"), 0);
	drain_wire(s, &sb);
	assert_int_equal(sb.order[sb.norder - 1], 'E');
	ts_ship_close(s);
	struct stat st;
	assert_int_equal(stat(sb.dir, &st), -1);
	ts_standby_table *tables = NULL;
	int n = -1;
	assert_int_equal(ts_standby_state(sb.s, &tables, &n), 0);
	assert_int_equal(n, 0);
	ts_standby_state_free(tables, n);
	ts_table_close(e->t);
	e->t = NULL;
	sb_free(&sb);
}

/* The standby takes its primary's lineage and epoch: a higher epoch of
 * it later, never a lower one, and another lineage only while it holds
 * no table.  A read-only handle on it reads what it took. */
static void standby_adopts_the_primarys_epoch(void **state)
{
	ts_test_env *e = *state;
	struct standby sb;
	ts_epoch p, got, other;
	ts_ship *s = NULL;
	ts_db *db = NULL;
	ts_options o;
	sb_init(&sb);
	assert_int_equal(ts_epoch_get(e->db, &p), 0);
	other = p;
	other.lineage[0] ^= 1;
	assert_int_equal(ts_standby_adopt(sb.s, &other), 0); /* empty: any lineage */
	assert_int_equal(ts_standby_adopt(sb.s, &p), 0);
	insert_batches(e, 1, 2, 10);
	assert_int_equal(ts_ship_open(e->t, 0, NULL, 0, &s), 0);
	drain(s, &sb);
	ts_ship_close(s);
	ts_options_init(&o);
	o.flags = TS_OPEN_READONLY;
	assert_int_equal(ts_open(sb.root, &o, &db), 0);
	assert_int_equal(ts_epoch_get(db, &got), 0);
	assert_memory_equal(&got, &p, sizeof p);
	assert_int_equal(ts_standby_adopt(sb.s, &other), TS_EINVAL);
	assert_non_null(strstr(ts_errmsg(NULL), "a standby starts empty"));
	assert_int_equal(ts_epoch_raise(e->db, &p), 0);
	assert_int_equal(ts_standby_adopt(sb.s, &p), 0);
	assert_int_equal(ts_epoch_get(db, &got), 0);
	assert_int_equal(got.epoch, 2);
	p.epoch = 1;
	assert_int_equal(ts_standby_adopt(sb.s, &p), TS_EINVAL);
	assert_non_null(strstr(ts_errmsg(NULL), "epochs never go down"));
	p.epoch = 0;
	assert_int_equal(ts_standby_adopt(sb.s, &p), TS_EINVAL);
	assert_int_equal(ts_epoch_get(db, &got), 0);
	assert_int_equal(got.epoch, 2);
	assert_int_equal(ts_close(db), 0);
	sb_free(&sb);
}

/* A damaged stream is refused with a clear error and leaves a valid
 * prefix; a new ship from what the standby holds finishes the job.
 * Damage: a flipped bit (the frame's CRC), a tablet cut short (its
 * verification), log bytes at the wrong LSN (the standby's log end). */
static void standby_refuses_damaged_frames(void **state)
{
	ts_test_env *e = *state;
	static unsigned char wire[TS_FRAME_HEADER_MAX + TS_FRAME_PAYLOAD_MAX];
	char table[TS_NAME_MAX + 1], p[700];
	struct standby sb;
	ts_ship *s = NULL;
	ts_frame f, g;
	size_t n, used;
	uint64_t lsn;
	int nt;
	sb_init(&sb);
	insert_batches(e, 1, 6, 300);
	assert_int_equal(ts_flush(e->t, INT64_MAX), 0);
	insert_batches(e, 7, 4, 300);

	/* a flipped bit in the tablet chunk: never a frame */
	assert_int_equal(ts_ship_open(e->t, 0, NULL, 0, &s), 0);
	assert_int_equal(ts_ship_next(s, &f), 1);
	sb_apply(&sb, &f); /* H */
	assert_int_equal(ts_ship_next(s, &f), 1);
	assert_int_equal(f.type, TS_FRAME_TABLET);
	assert_int_equal(ts_frame_header("m", &f, wire, sizeof wire, &n), 0);
	memcpy(wire + n, f.payload, f.length);
	wire[n + f.length / 2] ^= 4;
	assert_int_equal(ts_frame_decode(wire, n + f.length, &g, table, &used), TS_ECORRUPT);
	assert_non_null(strstr(ts_errmsg(NULL), "checksum mismatch"));

	/* the same chunk cut short, claimed the last */
	g = f;
	g.length = f.length / 2;
	g.flags = TS_FRAME_LAST;
	assert_int_equal(ts_standby_apply(sb.s, "m", &g), TS_ECORRUPT);
	assert_non_null(strstr(ts_errmsg(NULL), "as shipped"));
	assert_non_null(strstr(ts_errmsg(NULL), "table \"m\""));
	snprintf(p, sizeof p, "%s/tablets/.tmp-%016" PRIx64 ".tab", sb.dir, f.id);
	struct stat st;
	assert_int_equal(stat(p, &st), -1); /* removed */
	snprintf(p, sizeof p, "%s/tablets/%016" PRIx64 ".tab", sb.dir, f.id);
	assert_int_equal(stat(p, &st), -1); /* never in place */
	assert_false(sb_has_desc(&sb));
	ts_ship_close(s);

	/* resume: everything arrives */
	s = ship_from_state(e, &sb, &lsn, &nt);
	assert_int_equal(lsn, 0);
	assert_int_equal(nt, 0);
	drain_wire(s, &sb);
	ts_ship_close(s);
	expect_same_files(e, &sb);
	expect_same_rows(e, &sb);

	/* log bytes at the wrong LSN: refused, the standby as it was */
	insert_batches(e, 11, 2, 300);
	s = ship_from_state(e, &sb, &lsn, &nt);
	assert_int_equal(lsn, sb.log_end);
	assert_int_equal(nt, 1);
	do
		assert_int_equal(ts_ship_next(s, &f), 1);
	while (f.type != TS_FRAME_LOG);
	g = f;
	g.offset += 8;
	assert_int_equal(ts_standby_apply(sb.s, "m", &g), TS_EINVAL);
	assert_non_null(strstr(ts_errmsg(NULL), "but the standby's log ends at"));
	expect_same_rows_as_of(&sb, 10, 300);
	ts_ship_close(s);
	s = ship_from_state(e, &sb, &lsn, &nt);
	drain_wire(s, &sb);
	ts_ship_close(s);
	expect_same_rows(e, &sb);
	sb_close(&sb);
	expect_same_rows(e, &sb); /* read-write: recovery, then ts_check */
	sb_free(&sb);
}

/* Closed after every fourth frame and opened again, the standby names
 * what it holds (ts_standby_state), and a new ship sends the difference
 * only: after commits, flushes, merges. */
static void standby_resumes_after_close(void **state)
{
	ts_test_env *e = *state;
	struct standby sb;
	ts_frame f;
	uint64_t lsn;
	int nt, total = 0, rounds = 0;
	sb_init(&sb);
	for (int step = 0; step < 4; step++) {
		insert_batches(e, 1 + 10 * step, 10, 500);
		if (step == 1)
			assert_int_equal(ts_flush(e->t, INT64_MAX), 0);
		if (step == 2) {
			assert_int_equal(ts_flush(e->t, INT64_MAX), 0);
			assert_int_equal(ts_merge(e->t, NULL), 0);
		}
		/* four frames, a restart, four frames...: a heartbeat, the
		 * descriptor and two more (a batch may span two segments,
		 * two log frames) */
		for (;;) {
			ts_ship *s = ship_from_state(e, &sb, &lsn, &nt);
			int got = 0, rc;
			while (got < 4 && (rc = ts_ship_next(s, &f)) == 1) {
				sb_apply(&sb, &f);
				got++;
			}
			ts_ship_close(s);
			sb_close(&sb);
			assert_int_equal(ts_standby_open(sb.root, &sb.s), 0);
			total += got;
			rounds++;
			if (got <= 2) /* H, D: nothing new */
				break;
		}
		if (step > 0) /* (tablets since the first flush) */
			expect_same_files(e, &sb);
		expect_same_rows(e, &sb);
	}
	assert_true(rounds >= 8); /* two at least per step: resumed mid-stream */
	assert_true(total > 20);
	/* what it holds is what it says */
	ts_standby_table *st = NULL;
	int n = 0;
	assert_int_equal(ts_standby_state(sb.s, &st, &n), 0);
	assert_int_equal(n, 1);
	expect_commit_at_end(e, &sb);
	assert_int_equal(st[0].lsn, sb.log_end);
	ts_standby_state_free(st, n);
	sb_free(&sb);
}

/* A standby that holds nothing of a table whose log starts past its
 * flushed position: the descriptor waits for log bytes that begin
 * there.  Cut before it is in place, the standby still names the log it
 * got (from DESCRIPTOR.next), and the next ship sends only the rest. */
static void standby_resumes_past_a_gap(void **state)
{
	ts_test_env *e = *state;
	struct standby sb;
	ts_ship *s = NULL;
	ts_frame f;
	uint64_t lsn, first_log = 0;
	int nt, logs = 0;
	sb_init(&sb);
	insert_batches(e, 1, 10, 500);
	assert_int_equal(ts_flush(e->t, INT64_MAX), 0);
	insert_batches(e, 11, 60, 500); /* three segments past the flushed position */
	assert_int_equal(ts_ship_open(e->t, 0, NULL, 0, &s), 0);
	while (logs < 2 && ts_ship_next(s, &f) == 1) {
		sb_apply(&sb, &f);
		logs += f.type == TS_FRAME_LOG;
	}
	ts_ship_close(s);
	assert_int_equal(logs, 2);
	assert_false(sb_has_desc(&sb)); /* waiting for the log */
	sb_close(&sb);
	assert_int_equal(ts_standby_open(sb.root, &sb.s), 0);
	s = ship_from_state(e, &sb, &lsn, &nt);
	assert_int_equal(nt, 1);
	assert_true(lsn > 0 && lsn <= sb.log_end); /* its whole commits, kept */
	while (ts_ship_next(s, &f) == 1) {
		if (f.type == TS_FRAME_LOG && !first_log)
			first_log = f.offset;
		sb_apply(&sb, &f);
	}
	ts_ship_close(s);
	assert_int_equal(first_log, lsn); /* the rest only */
	expect_same_files(e, &sb);
	expect_same_rows(e, &sb);
	sb_free(&sb);
}

/* A read-only handle on the standby's directory, open while the frames
 * are applied one by one, reads after every frame exactly the primary's
 * first k batches for some k that never goes down. */
static void standby_readers_see_a_prefix(void **state)
{
	ts_test_env *e = *state;
	enum { PER = 100, BATCHES = 24 }; /* (hosts h00..h99 sort as numbered) */
	const int64_t base = NOW - 3600 * SEC;
	struct standby sb;
	test_row r[PER];
	ts_ship *s = NULL;
	ts_frame f;
	ts_db *db = NULL;
	ts_table *t = NULL;
	ts_options o;
	long last = 0;
	int frames = 0;
	sb_init(&sb);
	for (int b = 1; b <= 4; b++) {
		ts_test_batch_rows(r, PER, base, b);
		assert_int_equal(ts_test_insert_m(e->t, r, PER), 0);
	}
	assert_int_equal(ts_ship_open(e->t, 0, NULL, 0, &s), 0);
	drain(s, &sb);
	ts_options_init(&o);
	o.flags = TS_OPEN_READONLY;
	assert_int_equal(ts_open(sb.root, &o, &db), 0);
	assert_int_equal(ts_table_open(db, "m", &t), 0);
	for (int b = 5; b <= BATCHES; b++) {
		ts_test_batch_rows(r, PER, base, b);
		assert_int_equal(ts_test_insert_m(e->t, r, PER), 0);
		if (b % 6 == 0)
			assert_int_equal(ts_flush(e->t, INT64_MAX), 0);
		if (b % 12 == 0)
			assert_int_equal(ts_merge(e->t, NULL), 0);
		while (ts_ship_next(s, &f) == 1) {
			sb_apply(&sb, &f);
			test_row *got = NULL;
			long ng = ts_test_read_m(t, &got);
			long k = ts_test_check_batches(got, ng, PER, base);
			free(got);
			if (k < last)
				fail_msg("after frame %d (%c): batches 1..%ld, before 1..%ld", frames,
				         f.type, k, last);
			last = k;
			frames++;
		}
	}
	assert_int_equal(last, BATCHES);
	assert_true(frames > BATCHES);
	ts_table_close(t);
	assert_int_equal(ts_check(db, NULL, NULL), 0);
	assert_int_equal(ts_close(db), 0);
	ts_ship_close(s);
	sb_free(&sb);
}

/* A table with no commit yet when the ship begins: its first heartbeat
 * gives no segment size, so its first log bytes come after another
 * heartbeat that does; and a read-only handle that opened the
 * standby's table before its log existed sees the rows once applied. */
static void standby_readers_of_a_table_before_its_log(void **state)
{
	ts_test_env *e = *state;
	enum { PER = 100 };
	const int64_t base = NOW - 3600 * SEC;
	struct standby sb;
	test_row r[PER], *got = NULL;
	ts_ship *s = NULL;
	ts_db *db = NULL;
	ts_table *t = NULL;
	ts_options o;
	sb_init(&sb);
	assert_int_equal(ts_ship_open(e->t, 0, NULL, 0, &s), 0);
	drain(s, &sb);
	assert_string_equal(sb.order, "HD");
	assert_int_equal(sb.shift, 0);
	ts_options_init(&o);
	o.flags = TS_OPEN_READONLY;
	assert_int_equal(ts_open(sb.root, &o, &db), 0);
	assert_int_equal(ts_table_open(db, "m", &t), 0);
	assert_int_equal(ts_test_read_m(t, &got), 0);
	free(got);
	ts_test_batch_rows(r, PER, base, 1);
	assert_int_equal(ts_test_insert_m(e->t, r, PER), 0);
	drain(s, &sb);
	assert_string_equal(sb.order, "HL");
	assert_int_equal(sb.shift, SHIFT);
	assert_int_equal(ts_test_read_m(t, &got), PER);
	free(got);
	ts_test_batch_rows(r, PER, base, 2);
	assert_int_equal(ts_test_insert_m(e->t, r, PER), 0);
	drain(s, &sb);
	assert_string_equal(sb.order, "L"); /* told once */
	assert_int_equal(ts_test_read_m(t, &got), 2 * PER);
	free(got);
	ts_table_close(t);
	assert_int_equal(ts_check(db, NULL, NULL), 0);
	assert_int_equal(ts_close(db), 0);
	ts_ship_close(s);
	sb_free(&sb);
}

/* Frames on the wire: a round trip; a prefix is "read more"; a flipped
 * bit anywhere, header or payload, is never a frame; bad input to the
 * encoder is refused. */
static void frame_codec(void **state)
{
	(void)state;
	unsigned char wire[TS_FRAME_HEADER_MAX + 100], payload[100];
	char table[TS_NAME_MAX + 1];
	ts_frame f = {0}, g;
	size_t n = 0, used = 1;
	for (int i = 0; i < 100; i++)
		payload[i] = (unsigned char)(i * 7);
	f.type = TS_FRAME_TABLET;
	f.flags = TS_FRAME_LAST;
	f.id = 0x0102030405060708u;
	f.offset = 4096;
	f.payload = payload;
	f.length = 100;
	assert_int_equal(ts_frame_header("cpu", &f, wire, sizeof wire, &n), 0);
	assert_int_equal(n, 28 + 3);
	memcpy(wire + n, payload, 100);
	assert_int_equal(ts_frame_decode(wire, n + 100, &g, table, &used), 1);
	assert_int_equal(used, n + 100);
	assert_string_equal(table, "cpu");
	assert_int_equal(g.type, TS_FRAME_TABLET);
	assert_int_equal(g.flags, TS_FRAME_LAST);
	assert_int_equal(g.id, f.id);
	assert_int_equal(g.offset, 4096);
	assert_int_equal(g.length, 100);
	assert_memory_equal(g.payload, payload, 100);
	for (size_t k = 0; k < n + 100; k++) {
		assert_int_equal(ts_frame_decode(wire, k, &g, table, &used), 0);
		assert_int_equal(used, 0);
	}
	for (size_t k = 0; k < (n + 100) * 8; k++) {
		wire[k / 8] ^= (unsigned char)(1u << (k % 8));
		int rc = ts_frame_decode(wire, n + 100, &g, table, &used);
		if (rc > 0)
			fail_msg("bit %zu flipped: still a frame", k);
		wire[k / 8] ^= (unsigned char)(1u << (k % 8));
	}
	f.type = 'X';
	assert_int_equal(ts_frame_header("cpu", &f, wire, sizeof wire, &n), TS_EINVAL);
	f.type = TS_FRAME_LOG;
	assert_int_equal(ts_frame_header("no such", &f, wire, sizeof wire, &n), TS_EINVAL);
	assert_int_equal(ts_frame_header("cpu", &f, wire, 30, &n), TS_ETOOBIG);
	f.length = TS_FRAME_PAYLOAD_MAX + 1;
	assert_int_equal(ts_frame_header("cpu", &f, wire, sizeof wire, &n), TS_EINVAL);
}

#define T(f) cmocka_unit_test_setup_teardown(f, setup, ts_test_env_teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(frame_codec),
		T(ship_builds_a_standby),
		T(ship_to_a_standby_that_has_everything),
		T(ship_skips_the_released_log),
		T(ship_refuses_a_standby_ahead),
		T(ship_of_a_dropped_table_ends),
		T(ship_follows_the_head_into_new_segments),
		T(ship_of_a_table_created_again_ends),
		T(ship_of_a_reader_sees_a_table_created_again),
		T(standby_locks_and_drops),
		T(standby_adopts_the_primarys_epoch),
		T(standby_refuses_damaged_frames),
		T(standby_resumes_after_close),
		T(standby_resumes_past_a_gap),
		T(standby_readers_see_a_prefix),
		T(standby_readers_of_a_table_before_its_log),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
