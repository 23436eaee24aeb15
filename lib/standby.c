/*
 * standby.c -- the standby's side of following (docs/standby.md section
 * 1.1): the frames ts_ship_next makes on the primary, applied to a
 * database directory so that it holds the primary's files byte for byte
 * and stays, at every moment and after any crash, the primary's
 * database as of some commit.
 *
 * A standby holds the directory's LOCK (ts__db_lock), so no writer opens
 * it meanwhile; read-only handles read it as they read a database a
 * writer is changing.  Per table it keeps, in memory (struct sb_table):
 *
 *   shift     the primary's segment size (H frames; or the segment files);
 *   log_end   the standby's log holds the committed bytes below it;
 *   commit    the newest commit record held (what log/HEAD names);
 *   pending   a DESCRIPTOR (D frame) waiting for log_end to reach the
 *             LSN the frame names;
 *   tablet    the tablet being received (T frames) into tablets/.tmp-ID.tab.
 *
 * Order keeps the prefix (docs/standby.md section 1): a tablet is
 * renamed into place only once whole, synced and verified; a DESCRIPTOR
 * only once the log holds the commit the primary had when it wrote it,
 * the segments written since the last sync are synced, and every tablet
 * it names is in place; log/HEAD, which readers map, is written in place
 * after the bytes of the commit it names, and not while a descriptor
 * waits (the log may then have a gap below the descriptor's flushed
 * position, which recovery from the DESCRIPTOR on disk must see as a
 * torn tail, not as damage before HEAD).  HEAD records this boot's id
 * and the synced position as a writer's does, so that after a power
 * loss it is believed only as far as it was synced.
 *
 * State on disk is all a resume needs: ts__standby_state walks each
 * table's log from its DESCRIPTOR's flushed position as recovery does
 * and lists the complete tablet files; what a cut stream left half done
 * (a tablet, a waiting descriptor) is forgotten and sent again.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "api.h"
#include "buf.h"
#include "descriptor.h"
#include "descriptor_format.h"
#include "epoch.h"
#include "error.h"
#include "fsutil.h"
#include "handle.h"
#include "log.h"
#include "log_format.h"
#include "tablet.h"
#include "tslimits.h"

/* A descriptor waiting for log bytes past a gap (table_load). */
#define TS_STANDBY_NEXT_FILE "DESCRIPTOR.next"

struct sb_table {
	struct sb_table *next;
	char name[TS_NAME_MAX + 1];
	char dir[TS_PATH_MAX], logdir[TS_PATH_MAX], tabdir[TS_PATH_MAX];
	unsigned shift;          /* the segment size, a power of two; 0: not known yet */
	uint64_t log_end;        /* the committed log bytes held end here */
	uint64_t commit;         /* the newest commit record held (HEAD's), 0: none */
	uint64_t dirty;          /* the lowest LSN written since the last sync; UINT64_MAX: none */
	int segfd;               /* segment file seg, open for writing, or -1 */
	uint64_t seg;
	unsigned char *head;     /* log/HEAD, mapped shared, or NULL */
	void *pending;           /* a DESCRIPTOR's bytes waiting for the log */
	size_t pending_n;
	ts__descriptor *pending_d;
	uint64_t pending_at;     /* the LSN the log must reach */
	int tfd;                 /* the tablet being received, or -1 */
	uint64_t tid, toff;
	uint64_t *fresh;         /* tablets received since the last descriptor */
	int nfresh, capfresh;
};

struct ts_standby {
	char *dir;
	int lock_fd;
	struct sb_table *tables;
};

/* Array p of *cap items of size bytes with room for one more after its
 * n: p itself, or p moved to twice the room (*cap updated); NULL when
 * out of memory (p is then left as it was; the error is set). */
static void *room(void *p, int *cap, int n, size_t size)
{
	if (n < *cap)
		return p;
	int c = *cap ? 2 * *cap : 16;
	void *q = realloc(p, (size_t)c * size);
	if (!q) {
		ts__fail(TS_ENOMEM, "out of memory");
		return NULL;
	}
	*cap = c;
	return q;
}

/* Whether file name is a complete tablet's ("<16 hex>.tab"): 1 with *id. */
static int tablet_file(const char *name, uint64_t *id)
{
	char *end;
	if (strlen(name) != 20 || strcmp(name + 16, ".tab") != 0)
		return 0;
	*id = strtoull(name, &end, 16);
	return end == name + 16;
}

/* ---- loading a table's state from its files ---- */

static int table_paths(const ts_standby *sb, struct sb_table *t, const char *name)
{
	int rc;
	snprintf(t->name, sizeof t->name, "%s", name);
	if ((rc = ts__path(t->dir, "%s/%s", sb->dir, name)) == 0 &&
	    (rc = ts__path(t->logdir, "%s/log", t->dir)) == 0)
		rc = ts__path(t->tabdir, "%s/tablets", t->dir);
	return rc;
}

/* The end of the last valid commit from flushed, as recovery finds it;
 * *commit its record's LSN (0: none, *end is flushed). */
static int walk_log(struct sb_table *t, uint64_t flushed, uint64_t *end, uint64_t *commit)
{
	ts__log *log = NULL;
	ts__log_walk w = {.start = flushed};
	int rc = 0;
	*end = flushed;
	*commit = 0;
	if (!t->shift)
		return 0; /* no segment: nothing after flushed */
	if ((rc = ts__log_open_verify(t->logdir, &log)) < 0)
		return rc;
	ts__log_walk_commits(log, &w);
	ts__log_close(log, 0);
	if (w.last) {
		*commit = w.last;
		rc = ts__log_head_end(t->logdir, t->shift, w.last, end);
	}
	return rc;
}

/* The flushed position of descriptor file dir/name: 1 with *flushed,
 * 0 when there is no such file, or an error. */
static int flushed_of(const char *dir, const char *name, uint64_t *flushed)
{
	char path[TS_PATH_MAX];
	void *p = NULL;
	size_t n = 0;
	ts__descriptor *d = NULL;
	int rc = ts__path(path, "%s/%s", dir, name);
	if (rc == 0 && (rc = ts__read_file(path, TS_DESCRIPTOR_MAX, &p, &n)) == TS_ENOENT) {
		ts__clear_error();
		return 0;
	}
	if (rc == 0 && (rc = ts__descriptor_decode(p, n, &d)) < 0)
		rc = ts__context(rc, "%s", path);
	if (rc == 0)
		*flushed = d->flushed_lsn;
	ts__descriptor_free(d, 1);
	free(p);
	return rc < 0 ? rc : 1;
}

/* What t's files hold: the segment size, the log's end, the newest
 * commit.  The log is walked from the DESCRIPTOR's flushed position, or
 * from DESCRIPTOR.next's when that is higher: a descriptor that waited
 * for the log, which the primary ships from its flushed position, so
 * that the log held there is not shipped again after a cut.  A table
 * with neither holds no log yet. */
static int table_load(struct sb_table *t)
{
	uint64_t flushed = 0, next = 0;
	int rc = ts__log_shift_of(t->logdir, &t->shift), have = 0, have_next = 0;
	if (rc == 0)
		rc = have = flushed_of(t->dir, TS_DESC_FILE, &flushed);
	if (rc >= 0)
		rc = have_next = flushed_of(t->dir, TS_STANDBY_NEXT_FILE, &next);
	if (rc < 0)
		return rc;
	if (have_next && (!have || next > flushed))
		flushed = next;
	else if (!have)
		return 0;
	return walk_log(t, flushed, &t->log_end, &t->commit);
}

static void forget_tablet(struct sb_table *t)
{
	char name[64], path[TS_PATH_MAX];
	if (t->tfd < 0)
		return;
	close(t->tfd);
	t->tfd = -1;
	if (ts__tablet_name(t->tid, name, sizeof name) == 0 &&
	    ts__path(path, "%s/.tmp-%s", t->tabdir, name) == 0)
		unlink(path);
}

static void forget_pending(struct sb_table *t)
{
	free(t->pending);
	ts__descriptor_free(t->pending_d, 1);
	t->pending = NULL;
	t->pending_d = NULL;
}

static void table_free(struct sb_table *t)
{
	forget_tablet(t);
	forget_pending(t);
	if (t->segfd >= 0)
		close(t->segfd);
	if (t->head)
		munmap(t->head, TS_HEAD_SIZE);
	free(t->fresh);
	free(t);
}

/* The table named name, loaded from its files on first use; with
 * create, its directories are made when missing (invisible to readers
 * until a DESCRIPTOR is in place: docs/layout.md section 3), log/ last:
 * a table with a log/ has its tablets/. */
static int table_get(ts_standby *sb, const char *name, int create, struct sb_table **out)
{
	struct sb_table *t;
	struct stat st;
	int rc;
	for (t = sb->tables; t; t = t->next)
		if (strcmp(t->name, name) == 0) {
			*out = t;
			return 0;
		}
	if (!(t = calloc(1, sizeof *t)))
		return ts__fail(TS_ENOMEM, "out of memory");
	t->segfd = t->tfd = -1;
	t->dirty = UINT64_MAX;
	if ((rc = table_paths(sb, t, name)) == 0 && create && stat(t->logdir, &st) < 0) {
		if (errno != ENOENT)
			rc = ts__fail_errno(errno, "stat %s", t->logdir);
		else if ((rc = ts__mkdirs(t->tabdir, 0755)) == 0 && (rc = ts__mkdirs(t->logdir, 0755)) == 0)
			rc = ts__fsync_dir(sb->dir);
	}
	if (rc == 0)
		rc = table_load(t);
	if (rc < 0) {
		table_free(t);
		return ts__context(rc, "standby table \"%s\"", name);
	}
	t->next = sb->tables;
	sb->tables = t;
	*out = t;
	return 0;
}

/* Forget t's state in memory (after an error, before a resume): the
 * next frame loads it from the files again. */
static void table_forget(ts_standby *sb, struct sb_table *t)
{
	for (struct sb_table **p = &sb->tables; *p; p = &(*p)->next)
		if (*p == t) {
			*p = t->next;
			break;
		}
	table_free(t);
}

/* ---- log bytes and HEAD ---- */

/* Open (creating it as a writer does: full size, sparse, its header
 * synced before it is renamed into place) the segment holding lsn. */
static int open_segment(struct sb_table *t, uint64_t lsn)
{
	char name[64], path[TS_PATH_MAX], tmp[TS_PATH_MAX];
	uint64_t seg = lsn >> t->shift, data = UINT64_C(1) << t->shift;
	unsigned char h[TS_SEG_HEADER] = {0};
	int rc, fd = -1;
	if (t->segfd >= 0 && t->seg == seg)
		return 0;
	if (t->segfd >= 0)
		close(t->segfd);
	t->segfd = -1;
	if ((rc = ts__log_segment_name(seg, name, sizeof name)) < 0 ||
	    (rc = ts__path(path, "%s/%s", t->logdir, name)) < 0 ||
	    (rc = ts__path(tmp, "%s.tmp", path)) < 0)
		return rc;
	if ((t->segfd = open(path, O_WRONLY | O_CLOEXEC)) >= 0) {
		t->seg = seg;
		return 0;
	}
	if (errno != ENOENT)
		return ts__fail_errno(errno, "open %s", path);
	ts__log_segment_header(h, seg, data);
	if ((fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644)) < 0)
		return ts__fail_errno(errno, "create %s", tmp);
	if (ftruncate(fd, (off_t)(TS_SEG_HEADER + data)) < 0)
		rc = ts__fail_errno(errno, "size %s", tmp);
	if (rc == 0)
		rc = ts__write_at(fd, h, sizeof h, 0, tmp);
	if (rc == 0 && fsync(fd) < 0)
		rc = ts__fail_errno(errno, "fsync %s", tmp);
	if (rc == 0 && rename(tmp, path) < 0)
		rc = ts__fail_errno(errno, "rename %s", tmp);
	if (rc == 0)
		rc = ts__fsync_dir(t->logdir);
	if (rc < 0) {
		close(fd);
		unlink(tmp);
		return rc;
	}
	t->segfd = fd;
	t->seg = seg;
	return 0;
}

/* fsync the segments written since the last sync; HEAD then says the
 * log is durable through log_end. */
static int sync_log(struct sb_table *t)
{
	char name[64], path[TS_PATH_MAX];
	int rc = 0;
	if (t->dirty == UINT64_MAX)
		return 0;
	for (uint64_t seg = t->dirty >> t->shift; rc == 0 && seg <= (t->log_end - 1) >> t->shift; seg++) {
		int fd;
		if ((rc = ts__log_segment_name(seg, name, sizeof name)) < 0 ||
		    (rc = ts__path(path, "%s/%s", t->logdir, name)) < 0)
			break;
		if ((fd = open(path, O_WRONLY | O_CLOEXEC)) < 0) {
			if (errno != ENOENT) /* a segment the stream skipped */
				rc = ts__fail_errno(errno, "open %s", path);
			continue;
		}
		if (fsync(fd) < 0)
			rc = ts__fail_errno(errno, "fsync %s", path);
		close(fd);
	}
	if (rc < 0)
		return rc;
	t->dirty = UINT64_MAX;
	if (t->head)
		__atomic_store_n((uint64_t *)(void *)(t->head + TS_HEAD_OFF_SYNCED), t->log_end,
		                 __ATOMIC_RELEASE);
	return 0;
}

/* Name t->commit in log/HEAD, written in place: readers map the file
 * (a replaced one would never be seen).  Made once, as a writer's: this
 * boot's id, the synced position. */
static int write_head(struct sb_table *t)
{
	char path[TS_PATH_MAX];
	int rc, fd;
	if (!t->head) {
		unsigned char p[TS_HEAD_SIZE] = {0};
		memcpy(p + TS_HEAD_OFF_MAGIC, TS_HEAD_MAGIC, 8);
		ts__store_u64(p + TS_HEAD_OFF_COMMIT, t->commit);
		ts__store_u64(p + TS_HEAD_OFF_PID, (uint64_t)getpid());
		ts__log_boot_id((char *)p + TS_HEAD_OFF_BOOT);
		if ((rc = ts__path(path, "%s/%s", t->logdir, TS_HEAD_FILE)) < 0)
			return rc;
		if ((fd = open(path, O_RDWR | O_CLOEXEC)) < 0) {
			if (errno != ENOENT)
				return ts__fail_errno(errno, "open %s", path);
			if ((rc = ts__file_write_atomic(t->logdir, TS_HEAD_FILE, p, sizeof p)) < 0)
				return rc;
			if ((fd = open(path, O_RDWR | O_CLOEXEC)) < 0)
				return ts__fail_errno(errno, "open %s", path);
		} else if ((rc = ts__write_at(fd, p, sizeof p, 0, path)) < 0) {
			close(fd); /* (the last run's HEAD: this one's boot, nothing synced yet) */
			return rc;
		}
		void *m = mmap(NULL, TS_HEAD_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		rc = m == MAP_FAILED ? ts__fail_errno(errno, "map %s", path) : 0;
		close(fd);
		if (rc < 0)
			return rc;
		t->head = m;
	}
	__atomic_store_n((uint64_t *)(void *)(t->head + TS_HEAD_OFF_COMMIT), t->commit,
	                 __ATOMIC_RELEASE);
	return 0;
}

/* ---- descriptors ---- */

static int named(const ts__descriptor *d, uint64_t id)
{
	for (int i = 0; i < d->ntablets; i++)
		if (d->tablets[i].id == id)
			return 1;
	return 0;
}

static int fresh(const struct sb_table *t, uint64_t id)
{
	for (int i = 0; i < t->nfresh; i++)
		if (t->fresh[i] == id)
			return 1;
	return 0;
}

/* Each tablet d names is in tablets/. */
static int tablets_in_place(const struct sb_table *t, const ts__descriptor *d)
{
	char name[64], path[TS_PATH_MAX];
	struct stat st;
	int rc;
	for (int i = 0; i < d->ntablets; i++) {
		if ((rc = ts__tablet_name(d->tablets[i].id, name, sizeof name)) < 0 ||
		    (rc = ts__path(path, "%s/%s", t->tabdir, name)) < 0)
			return rc;
		if (stat(path, &st) < 0)
			return errno == ENOENT
			       ? ts__fail(TS_EINVAL, "the DESCRIPTOR names tablet %s, which the "
			                  "standby does not hold", name)
			       : ts__fail_errno(errno, "stat %s", path);
	}
	return 0;
}

/* After d is in place: unlink the tablets it no longer names (but those
 * received for a later one) and the segments wholly below its flushed
 * position, as the primary did. */
static int release(struct sb_table *t, const ts__descriptor *d)
{
	char path[TS_PATH_MAX];
	uint64_t *segs = NULL;
	size_t n = 0;
	int rc = 0, gone = 0;
	DIR *dp = opendir(t->tabdir);
	struct dirent *e;
	if (!dp)
		return ts__fail_errno(errno, "opendir %s", t->tabdir);
	while (rc == 0 && (e = readdir(dp))) {
		uint64_t id;
		if (!tablet_file(e->d_name, &id) || named(d, id) || fresh(t, id))
			continue;
		if ((rc = ts__path(path, "%s/%s", t->tabdir, e->d_name)) == 0 && unlink(path) < 0)
			rc = ts__fail_errno(errno, "unlink %s", path);
	}
	closedir(dp);
	if (rc == 0 && t->shift && (rc = ts__log_segments(t->logdir, &segs, &n)) == TS_ENOENT) {
		ts__clear_error();
		rc = 0;
	}
	for (size_t i = 0; rc == 0 && i < n && (segs[i] + 1) << t->shift <= d->flushed_lsn; i++) {
		char name[64];
		if (t->segfd >= 0 && t->seg == segs[i]) {
			close(t->segfd);
			t->segfd = -1;
		}
		if ((rc = ts__log_segment_name(segs[i], name, sizeof name)) == 0 &&
		    (rc = ts__path(path, "%s/%s", t->logdir, name)) == 0 && unlink(path) < 0)
			rc = ts__fail_errno(errno, "unlink %s", path);
		gone++;
	}
	free(segs);
	if (rc == 0 && gone)
		rc = ts__fsync_dir(t->logdir);
	return rc;
}

/* Put the waiting descriptor in place once the log reached its LSN. */
static int place(struct sb_table *t)
{
	char path[TS_PATH_MAX];
	int rc;
	if (!t->pending || t->log_end < t->pending_at)
		return 0;
	if ((rc = sync_log(t)) < 0 || (rc = tablets_in_place(t, t->pending_d)) < 0 ||
	    (rc = ts__file_write_atomic(t->dir, TS_DESC_FILE, t->pending, t->pending_n)) < 0)
		return rc;
	if (t->commit && (rc = write_head(t)) < 0)
		return rc;
	if ((rc = ts__path(path, "%s/%s", t->dir, TS_STANDBY_NEXT_FILE)) == 0 && unlink(path) < 0 &&
	    errno != ENOENT)
		rc = ts__fail_errno(errno, "unlink %s", path);
	if (rc == 0)
		rc = release(t, t->pending_d);
	t->nfresh = 0;
	forget_pending(t);
	return rc;
}

/* ---- the frames ---- */

static int apply_heartbeat(struct sb_table *t, const ts_frame *f)
{
	if (f->length != TS_FRAME_HEARTBEAT_SIZE)
		return ts__fail(TS_EINVAL, "a heartbeat of %u bytes, not %u", f->length,
		                TS_FRAME_HEARTBEAT_SIZE);
	unsigned shift = ts__load_u32((const unsigned char *)f->payload + 16);
	if (shift && (shift < TS_SEG_SHIFT_MIN || shift > TS_SEG_SHIFT_MAX))
		return ts__fail(TS_EINVAL, "a heartbeat naming segments of 2^%u bytes", shift);
	if (shift && t->shift && shift != t->shift)
		return ts__fail(TS_EINVAL, "the primary's log segments hold 2^%u bytes, the "
		                "standby's 2^%u", shift, t->shift);
	if (shift)
		t->shift = shift;
	return 0;
}

static int add_fresh(struct sb_table *t, uint64_t id)
{
	uint64_t *p = room(t->fresh, &t->capfresh, t->nfresh, sizeof *p);
	if (!p)
		return TS_ENOMEM;
	t->fresh = p;
	t->fresh[t->nfresh++] = id;
	return 0;
}

/* The last chunk is written: sync, verify as ts_check verifies a tablet
 * it has no descriptor for, rename into place, sync the directory. */
static int finish_tablet(struct sb_table *t, const char *tmp, const char *path)
{
	ts__tablet *tab = NULL;
	int rc = 0;
	if (fsync(t->tfd) < 0)
		rc = ts__fail_errno(errno, "fsync %s", tmp);
	close(t->tfd);
	t->tfd = -1;
	if (rc == 0 && (rc = ts__tablet_open(tmp, t->tid, &tab)) == 0)
		rc = ts__tablet_check(tab, NULL);
	ts__tablet_close(tab);
	if (rc == TS_ECORRUPT || rc == TS_EVERSION || rc == TS_ENOENT)
		rc = ts__context(TS_ECORRUPT, "tablet %016" PRIx64 " as shipped", t->tid);
	if (rc == 0 && rename(tmp, path) < 0)
		rc = ts__fail_errno(errno, "rename %s", tmp);
	if (rc == 0)
		rc = ts__fsync_dir(t->tabdir);
	if (rc == 0)
		rc = add_fresh(t, t->tid);
	if (rc < 0)
		unlink(tmp);
	return rc;
}

static int apply_tablet(struct sb_table *t, const ts_frame *f)
{
	char name[64], tmp[TS_PATH_MAX], path[TS_PATH_MAX];
	int rc;
	if ((rc = ts__tablet_name(f->id, name, sizeof name)) < 0 ||
	    (rc = ts__path(tmp, "%s/.tmp-%s", t->tabdir, name)) < 0 ||
	    (rc = ts__path(path, "%s/%s", t->tabdir, name)) < 0)
		return rc;
	if (f->offset == 0) {
		forget_tablet(t);
		if ((t->tfd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644)) < 0)
			return ts__fail_errno(errno, "create %s", tmp);
		t->tid = f->id;
		t->toff = 0;
	} else if (t->tfd < 0 || t->tid != f->id || t->toff != f->offset) {
		return ts__fail(TS_EINVAL, "a chunk at byte %" PRIu64 " of tablet %s, which the "
		                "standby holds %" PRIu64 " bytes of", f->offset, name,
		                t->tfd >= 0 && t->tid == f->id ? t->toff : 0);
	}
	if (f->length && (rc = ts__write_at(t->tfd, f->payload, f->length, (long long)t->toff, tmp)) < 0)
		return rc;
	t->toff += f->length;
	return f->flags & TS_FRAME_LAST ? finish_tablet(t, tmp, path) : 0;
}

static int apply_descriptor(struct sb_table *t, const ts_frame *f)
{
	ts__descriptor *d = NULL;
	void *p = NULL;
	int rc = ts__descriptor_decode(f->payload, f->length, &d);
	if (rc < 0)
		return ts__context(rc, "the DESCRIPTOR as shipped");
	if (f->id < d->flushed_lsn) {
		ts__descriptor_free(d, 1);
		return ts__fail(TS_EINVAL, "a DESCRIPTOR flushed through %" PRIu64 " to be put in "
		                "place at %" PRIu64 ", before it", d->flushed_lsn, f->id);
	}
	if (!(p = malloc(f->length ? f->length : 1))) {
		ts__descriptor_free(d, 1);
		return ts__fail(TS_ENOMEM, "out of memory");
	}
	memcpy(p, f->payload, f->length);
	forget_pending(t);
	t->pending = p;
	t->pending_n = f->length;
	t->pending_d = d;
	t->pending_at = f->id;
	/* The primary ships the log from the flushed position on; recovery
	 * from this descriptor never reads below it.  Recorded, so that a
	 * resume walks the log from there (table_load). */
	if (t->log_end < d->flushed_lsn) {
		if (t->pending_at > d->flushed_lsn &&
		    (rc = ts__file_write_atomic(t->dir, TS_STANDBY_NEXT_FILE, p, f->length)) < 0)
			return rc;
		t->log_end = d->flushed_lsn;
	}
	return place(t);
}

/* Where log bytes may start: where the log ends, or the start of the
 * next segment (a segment's trailing zeros are not shipped).  (A
 * descriptor's flushed position past the end moved the end there.) */
static int follows(const struct sb_table *t, uint64_t lsn)
{
	uint64_t next_seg = ((t->log_end >> t->shift) + 1) << t->shift;
	return lsn == t->log_end || lsn == next_seg;
}

static int apply_log(struct sb_table *t, const ts_frame *f)
{
	int rc;
	if (!t->shift)
		return ts__fail(TS_EINVAL, "log bytes before a heartbeat naming the segment size");
	uint64_t first = f->offset, end = f->offset + f->length;
	if (f->length == 0 || end < first || first >> t->shift != (end - 1) >> t->shift)
		return ts__fail(TS_EINVAL, "log bytes [%" PRIu64 ", %" PRIu64 ") not within one "
		                "segment", first, end);
	if (!follows(t, first))
		return ts__fail(TS_EINVAL, "log bytes at LSN %" PRIu64 ", but the standby's log "
		                "ends at %" PRIu64, first, t->log_end);
	if (f->id && (f->id < first || f->id >= end))
		return ts__fail(TS_EINVAL, "log bytes [%" PRIu64 ", %" PRIu64 ") ending a commit "
		                "at %" PRIu64, first, end, f->id);
	if ((rc = open_segment(t, first)) < 0)
		return rc;
	char name[64], path[TS_PATH_MAX];
	if ((rc = ts__log_segment_name(t->seg, name, sizeof name)) < 0 ||
	    (rc = ts__path(path, "%s/%s", t->logdir, name)) < 0)
		return rc;
	if ((rc = ts__write_at(t->segfd, f->payload, f->length,
	                       (long long)ts__off_bytes(ts__off_of(t->shift, first)), path)) < 0)
		return rc;
	if (t->dirty > first)
		t->dirty = first;
	t->log_end = end;
	if (f->id) {
		t->commit = f->id;
		if (!t->pending && (rc = write_head(t)) < 0)
			return rc;
	}
	return place(t);
}

/* Drop the table as ts_drop does: renamed away, the rename synced, the
 * tree removed. */
static int apply_end(ts_standby *sb, struct sb_table *t)
{
	static unsigned long seq;
	char dst[TS_PATH_MAX];
	struct stat st;
	int rc = ts__path(dst, "%s/.dropped-%s-%ld-%lu", sb->dir, t->name, (long)getpid(),
	                  __atomic_add_fetch(&seq, 1, __ATOMIC_RELAXED));
	if (rc == 0 && stat(t->dir, &st) < 0)
		return errno == ENOENT ? 0 : ts__fail_errno(errno, "stat %s", t->dir);
	if (rc == 0 && rename(t->dir, dst) < 0)
		rc = ts__fail_errno(errno, "rename %s to %s", t->dir, dst);
	if (rc == 0)
		rc = ts__fsync_dir(sb->dir);
	if (rc == 0)
		rc = ts__rmtree(dst);
	return rc;
}

int ts__standby_apply(ts_standby *sb, const char *table, const ts_frame *f)
{
	struct sb_table *t = NULL;
	if (!ts_name_valid(table))
		return ts__fail(TS_EINVAL, "ts_standby_apply: bad table name \"%.64s\"", table);
	if (f->length > TS_FRAME_PAYLOAD_MAX || (f->length && !f->payload))
		return ts__fail(TS_EINVAL, "ts_standby_apply: a payload of %u bytes", f->length);
	int rc = table_get(sb, table, f->type != TS_FRAME_END, &t);
	if (rc < 0)
		return rc;
	switch (f->type) {
	case TS_FRAME_HEARTBEAT: rc = apply_heartbeat(t, f); break;
	case TS_FRAME_TABLET: rc = apply_tablet(t, f); break;
	case TS_FRAME_DESCRIPTOR: rc = apply_descriptor(t, f); break;
	case TS_FRAME_LOG: rc = apply_log(t, f); break;
	case TS_FRAME_END:
		rc = apply_end(sb, t);
		table_forget(sb, t);
		return rc < 0 ? ts__context(rc, "drop table \"%s\" on the standby", table) : 0;
	default: rc = ts__fail(TS_EINVAL, "frame type 0x%02x", (unsigned)f->type); break;
	}
	if (rc < 0) {
		/* what the files hold stays a prefix; a resume starts from it */
		rc = ts__context(rc, "standby of table \"%s\": frame '%c' (id %" PRIu64 ", offset %"
		                 PRIu64 ", %u bytes)", table, f->type > 32 && f->type < 127 ? f->type : '?',
		                 f->id, f->offset, f->length);
		table_forget(sb, t);
	}
	return rc;
}

/* ---- resuming ---- */

/* The complete tablet files of t, sorted. */
static int held_tablets(const struct sb_table *t, uint64_t **out, int *n)
{
	DIR *dp = opendir(t->tabdir);
	struct dirent *e;
	int cap = 0, rc = 0;
	*out = NULL;
	*n = 0;
	if (!dp)
		return errno == ENOENT ? 0 : ts__fail_errno(errno, "opendir %s", t->tabdir);
	while (rc == 0 && (e = readdir(dp))) {
		uint64_t id;
		if (!tablet_file(e->d_name, &id))
			continue;
		uint64_t *p = room(*out, &cap, *n, sizeof *p);
		if (!p) {
			rc = TS_ENOMEM;
			break;
		}
		*out = p;
		(*out)[(*n)++] = id;
	}
	closedir(dp);
	for (int i = 1; rc == 0 && i < *n; i++) /* insertion sort: a table holds few */
		for (int j = i; j > 0 && (*out)[j - 1] > (*out)[j]; j--) {
			uint64_t x = (*out)[j];
			(*out)[j] = (*out)[j - 1];
			(*out)[j - 1] = x;
		}
	return rc;
}

void ts__standby_state_free(ts_standby_table *tables, int n)
{
	for (int i = 0; tables && i < n; i++)
		free(tables[i].tablets);
	free(tables);
}

int ts__standby_state(ts_standby *sb, ts_standby_table **out, int *n)
{
	DIR *dp;
	struct dirent *e;
	int rc = 0, cap = 0;
	*out = NULL;
	*n = 0;
	while (sb->tables) /* a resume: what streams left half done is sent again */
		table_forget(sb, sb->tables);
	if (!(dp = opendir(sb->dir)))
		return ts__fail_errno(errno, "opendir %s", sb->dir);
	while (rc == 0 && (e = readdir(dp))) {
		struct sb_table *t = NULL;
		struct stat st;
		char path[TS_PATH_MAX];
		if (!ts_name_valid(e->d_name) || ts__path(path, "%s/%s/log", sb->dir, e->d_name) < 0 ||
		    stat(path, &st) < 0 || !S_ISDIR(st.st_mode))
			continue;
		ts_standby_table *p = room(*out, &cap, *n, sizeof *p);
		if (!p) {
			rc = TS_ENOMEM;
			break;
		}
		*out = p;
		ts_standby_table *s = &(*out)[*n];
		memset(s, 0, sizeof *s);
		if ((rc = table_get(sb, e->d_name, 0, &t)) < 0)
			break;
		(*n)++;
		snprintf(s->name, sizeof s->name, "%s", t->name);
		s->lsn = t->log_end;
		rc = held_tablets(t, &s->tablets, &s->ntablets);
	}
	closedir(dp);
	if (rc < 0) {
		ts__standby_state_free(*out, *n);
		*out = NULL;
		*n = 0;
	}
	return rc;
}

/* ---- opening and closing ---- */

int ts__standby_open(const char *dir, ts_standby **out)
{
	ts_standby *sb = calloc(1, sizeof *sb);
	int rc;
	*out = NULL;
	if (!sb || !(sb->dir = strdup(dir))) {
		free(sb);
		return ts__fail(TS_ENOMEM, "out of memory");
	}
	sb->lock_fd = -1;
	if ((rc = ts__mkdirs(dir, 0755)) == 0 && (rc = ts__db_lock(dir, &sb->lock_fd)) == 0)
		rc = ts__db_remove_leftovers(dir);
	if (rc < 0) {
		ts__standby_close(sb);
		return ts__context(rc, "standby %s", dir);
	}
	*out = sb;
	return 0;
}

int ts__standby_adopt(ts_standby *sb, const ts_epoch *e)
{
	ts__epoch_file have;
	int rc = ts__epoch_read(sb->dir, &have), none = rc == TS_ENOENT;
	if (none) {
		ts__clear_error();
		rc = 0;
	}
	if (rc == 0)
		rc = ts__epoch_may_adopt(sb->dir, none ? NULL : &have, e);
	if (rc == 0) {
		ts__epoch_file next = ts__epoch_adopted(none ? NULL : &have, e);
		rc = ts__epoch_write(sb->dir, &next);
	}
	return rc < 0 ? ts__context(rc, "standby %s: adopt a lineage and epoch", sb->dir) : 0;
}

int ts__standby_sync(ts_standby *sb)
{
	int rc = 0;
	for (struct sb_table *t = sb->tables; t && rc == 0; t = t->next)
		rc = sync_log(t);
	return rc;
}

int ts__standby_close(ts_standby *sb)
{
	int rc = ts__standby_sync(sb);
	while (sb->tables)
		table_forget(sb, sb->tables);
	if (sb->lock_fd >= 0)
		close(sb->lock_fd); /* releases the flock */
	free(sb->dir);
	free(sb);
	return rc;
}
