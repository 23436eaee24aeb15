/*
 * log_recover.c -- recovering a table's log as it opens: finding where
 * its valid commits end, and what to do with what follows.
 *
 * Recovery scans forward from the flushed position, batch by batch
 * (ts__log_walk_commits), and stops at the first batch that is not whole;
 * a writer then erases everything after it -- the segments past the
 * tail's, and the rest of the tail's segment, made to read as zeros --
 * which is the prefix guarantee of DESIGN.md section 2.  When log/HEAD
 * names a commit at or past that point, the batches there were
 * committed: damage before the recorded head, not a crash's torn tail.
 * A writer copies them to the table's quarantine/ before erasing them and
 * counts them (ts__log_quarantined); a reader refuses the log
 * (docs/log-format.md section 5.1).
 *
 * Apart from log.c, because it runs once per open, on a log no other
 * thread sees yet, and reads as one procedure (ts__log_recover, at the
 * end); it works on log_int.h's struct ts__log.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "buf.h"
#include "error.h"
#include "fsutil.h"
#include "tslimits.h"
#include "log.h"
#include "log_int.h"

/* ---- recovery ---- */

static int list_segs(const ts__log *log, uint64_t **out, size_t *n)
{
	int rc = ts__log_segments(log->dir, out, n);
	return rc == TS_ENOENT && log->readonly ? 0 : rc; /* nothing was ever written */
}

/* Scan forward from start; leaves head/seq/tail at the last valid commit. */
static void scan(ts__log *log, uint64_t start)
{
	ts__log_walk w = {.start = start};
	ts__log_walk_commits(log, &w);
	log->recovered = w.commits;
	log->hot.tail = w.stop;
	log->hot.win_end = 0;
	log->seq = w.seq;
	atomic_store(&log->head, w.last);
}

/* Make the rest of the tail's segment read as zeros, durably: the tail's
 * page by hand, the remainder by punching a hole (no data written),
 * falling back to writing zeros where the file system cannot punch.
 * The hole begins at the log's page after the tail (not before the
 * segment's end: the file's last page may be partial on a machine of
 * large pages, and a forced page size maps nothing past the file). */
static int zero_after_tail(ts__log *log)
{
	char path[TS_PATH_MAX];
	unsigned char *p = ts__log_ptr(log, log->hot.tail);
	if (!p)
		return 0;
	ts__off off = ts__off_of(log->hot.shift, log->hot.tail), end = {seg_file(log)};
	ts__off from = page_down(log, off), hole = page_up(log, off);
	unsigned char *base = p - ts__off_bytes(off);
	if (hole.at > end.at)
		hole = end;
	memset(p, 0, hole.at - off.at);
	if (hole.at > off.at && ts__log_seg_msync(log, base, from, hole.at - from.at) < 0)
		return ts__fail_errno(errno, "msync %s", log->dir);
	if (hole.at >= end.at)
		return 0;
	int rc = ts__log_seg_path(log, seg_of(log, log->hot.tail), path), fd = -1;
	if (rc == 0 && (fd = open(path, O_RDWR | O_CLOEXEC)) < 0)
		rc = ts__fail_errno(errno, "open %s", path);
	if (rc == 0 && fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
	                         (off_t)ts__off_bytes(hole), (off_t)(end.at - hole.at)) < 0) {
		memset(ts__off_ptr(base, hole), 0, end.at - hole.at);
		if (ts__log_seg_msync(log, base, hole, end.at - hole.at) < 0)
			rc = ts__fail_errno(errno, "msync %s", path);
	}
	if (rc == 0 && fsync(fd) < 0)
		rc = ts__fail_errno(errno, "fsync %s", path);
	if (fd >= 0)
		close(fd);
	return rc;
}

static int erase_after(ts__log *log, const uint64_t *segs, size_t n)
{
	char path[TS_PATH_MAX];
	uint64_t tseg = seg_of(log, log->hot.tail);
	int rc = 0;
	for (size_t i = 0; i < n && rc == 0; i++) {
		if (segs[i] > tseg) {
			ts__log_slot *s = &log->hot.ring[segs[i] & RING_MASK];
			if (atomic_load(&s->segp1) == segs[i] + 1) {
				munmap(s->base, seg_file(log));
				s->base = NULL;
				atomic_store(&s->segp1, 0);
			}
			if ((rc = ts__log_seg_path(log, segs[i], path)) == 0 && unlink(path) < 0)
				rc = ts__fail_errno(errno, "unlink %s", path);
		}
	}
	if (rc == 0)
		rc = zero_after_tail(log);
	return rc == 0 ? ts__fsync_dir(log->dir) : rc;
}

static int map_all(ts__log *log, const uint64_t *segs, size_t n)
{
	int rc = 0;
	for (size_t i = 0; i < n && rc == 0; i++)
		rc = ts__log_map_seg(log, segs[i], 0);
	if (n) {
		log->first_seg = segs[0];
		log->last_seg = segs[n - 1];
		log->unmapped = log->released = log->unlinked = segs[0];
	}
	return rc;
}

/* ---- damage before the recorded head ---- */

/* The first segment of segs[0..n) whose file is shorter than a segment
 * (ts__log_map_seg zero-extends it for the writer), or UINT64_MAX. */
static uint64_t first_short_seg(const ts__log *log, const uint64_t *segs, size_t n)
{
	char path[TS_PATH_MAX];
	struct stat st;
	for (size_t i = 0; i < n; i++)
		if (ts__log_seg_path(log, segs[i], path) == 0 && stat(path, &st) == 0 &&
		    st.st_size < (off_t)seg_file(log))
			return segs[i];
	return UINT64_MAX;
}

/* Whether, among the segments from..to, one was cut short, or one is
 * missing while a later one exists. */
static int segs_damaged(const uint64_t *segs, size_t n, uint64_t from, uint64_t to,
                        uint64_t short_seg)
{
	uint64_t want = from;
	if (short_seg >= from && short_seg <= to)
		return 1;
	for (size_t i = 0; i < n && want <= to; i++) {
		if (segs[i] > want)
			return 1;
		if (segs[i] == want)
			want++;
	}
	return 0;
}

/*
 * After the scan stopped at the tail: did it stop before committed data?
 * HEAD (read before recovery) names the newest commit the last writer
 * published, and it publishes a commit only once it is whole.  So a
 * recorded head at or past the tail means the batches from the tail on
 * were committed, and are damaged, not torn -- when HEAD can be believed:
 * a commit record is where it says, or the batch at the tail says its
 * commit is there, or a segment file up to it is missing or was cut (a
 * crash never does that: files are created whole and removed only before
 * the flushed position or after the tail).  A HEAD that is itself damaged
 * points at none of these and is ignored.  (After a power loss in sync
 * mode none or interval HEAD may have reached the disk ahead of the
 * batches it names; that is reported too, as ts_check does.)
 * Returns 1 with *end (the end of the commit HEAD names) and *commits
 * (lost, at least 1), else 0.
 */
static int lost_commits(ts__log *log, uint64_t recorded, const uint64_t *segs, size_t n,
                        uint64_t short_seg, uint64_t *end, uint64_t *commits)
{
	uint64_t stop = log->hot.tail;
	ts__commit cm;
	if (recorded == 0 || recorded < stop)
		return 0;
	const unsigned char *h = ts__log_ptr(log, stop), *c = ts__log_ptr(log, recorded);
	int at_head = ts__log_read_commit(log, recorded, &cm) == 0 && cm.seq > log->seq;
	int named = h && ts__load_u32(h) == TS_BATCH_MAGIC &&
	            stop + TS_BATCH_HEADER_SIZE + ts__load_u64(h + 8) == recorded;
	if (!at_head && !named && !segs_damaged(segs, n, seg_of(log, stop), seg_of(log, recorded), short_seg))
		return 0;
	uint32_t nroots = at_head ? cm.nroots + (cm.has_tombs != 0) : 0;
	if (!at_head && c && seg_left(log, recorded) >= TS_COMMIT_FIXED &&
	    ts__load_u32(c + TS_COMMIT_OFF_NROOTS) <= TS_COMMIT_ROOTS_MAX)
		nroots = ts__load_u32(c + TS_COMMIT_OFF_NROOTS);
	*end = recorded + TS_COMMIT_SIZE((uint64_t)nroots);
	if (*end - recorded > seg_left(log, recorded))
		*end = recorded + seg_left(log, recorded);
	*commits = at_head ? cm.seq - log->seq : 1;
	return 1;
}

/* Copy the log bytes [from, to) to <table>/quarantine/log-<from in 16 hex
 * digits> (a missing segment's bytes are left a hole), durably, before
 * recovery erases them. */
static int quarantine_range(ts__log *log, uint64_t from, uint64_t to)
{
	char qdir[TS_PATH_MAX], path[TS_PATH_MAX];
	const char *slash = strrchr(log->dir, '/');
	int len = slash ? (int)(slash - log->dir) : 1, fd, rc;
	if ((rc = ts__path(qdir, "%.*s/quarantine", len, slash ? log->dir : ".")) < 0 ||
	    (rc = ts__path(path, "%s/log-%016" PRIx64, qdir, from)) < 0 ||
	    (rc = ts__mkdirs(qdir, 0755)) < 0)
		return rc;
	if ((fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644)) < 0)
		return ts__fail_errno(errno, "create %s", path);
	for (uint64_t p = from; rc == 0 && p < to;) {
		uint64_t k = seg_left(log, p) < to - p ? seg_left(log, p) : to - p;
		const void *src = ts__log_ptr(log, p);
		if (src)
			rc = ts__write_at(fd, src, k, (long long)(p - from), path);
		p += k;
	}
	if (rc == 0 && (ftruncate(fd, (off_t)(to - from)) < 0 || fsync(fd) < 0))
		rc = ts__fail_errno(errno, "write %s", path);
	close(fd);
	return rc == 0 ? ts__fsync_dir(qdir) : rc;
}

/* The writer's recovery: keep aside what it is about to erase if that
 * was committed (lost_commits), and count it. */
static int keep_lost(ts__log *log, uint64_t recorded, const uint64_t *segs, size_t n,
                     uint64_t short_seg)
{
	uint64_t end, commits;
	if (!lost_commits(log, recorded, segs, n, short_seg, &end, &commits))
		return 0;
	int rc = quarantine_range(log, log->hot.tail, end);
	if (rc < 0)
		return ts__context(rc, "log %s: damage at %" PRIu64, log->dir, log->hot.tail);
	log->cut_lsn = log->hot.tail;
	log->cut_commits = commits;
	return 0;
}

/* A reader: refuse a log whose committed batches are damaged
 * (lost_commits), rather than serve the newest commit's trees, which
 * reach into them.  A batch whose segment a writer released meanwhile (a
 * flush; the reader's flushed position is older) is no damage: HEAD leads
 * the reader past it (ts__log_head). */
static int refuse_lost(ts__log *log, uint64_t recorded, const uint64_t *segs, size_t n)
{
	char path[TS_PATH_MAX];
	uint64_t end, commits, stop = log->hot.tail;
	if (!ts__log_ptr(log, stop) ||
	    !lost_commits(log, recorded, segs, n, UINT64_MAX, &end, &commits))
		return 0;
	int rc = ts__log_seg_path(log, seg_of(log, stop), path);
	return rc < 0 ? rc : ts__fail(TS_ECORRUPT, "log segment %s: the batch at log position %" PRIu64
	                              " is damaged, before the newest commit at %" PRIu64
	                              " (log/HEAD); a read-write open moves it to quarantine",
	                              path, stop, recorded);
}

/* ---- the recovery of a log opening ---- */

int ts__log_recover(ts__log *log, uint64_t start)
{
	uint64_t *segs, recorded = 0, short_seg = UINT64_MAX;
	size_t n;
	unsigned shift = 0;
	int rc = list_segs(log, &segs, &n);
	if (rc == 0)
		rc = ts__log_dir_shift(log->dir, segs, n, &shift);
	if (rc == 0 && shift) {
		log->hot.shift = shift;
		log->shift_known = 1;
	} else if (rc == 0 && !log->readonly) {
		log->shift_known = 1; /* the option's, for the first segment */
	}
	if (rc == 0) { /* before the scan, and before a writer changes them */
		ts__log_recorded_head(log->dir, &recorded);
		if (!log->readonly)
			short_seg = first_short_seg(log, segs, n);
	}
	if (rc == 0)
		rc = map_all(log, segs, n);
	if (rc == 0) {
		scan(log, start);
		/* The flag is in the segment holding the tail (ts__log_set_clean); a
		 * segment prepared beyond it has never been written. */
		ts__log_slot *ts = &log->hot.ring[seg_of(log, log->hot.tail) & RING_MASK];
		log->was_clean = n == 0 || (atomic_load(&ts->segp1) == seg_of(log, log->hot.tail) + 1 &&
		                            ts__load_u32(ts->base + TS_SEGH_OFF_CLEAN) == 1);
		if (log->readonly)
			rc = refuse_lost(log, recorded, segs, n);
		else if ((rc = keep_lost(log, recorded, segs, n, short_seg)) == 0 &&
		         (rc = erase_after(log, segs, n)) == 0) {
			log->synced = log->hot.tail;
			log->synced_head = atomic_load(&log->head); /* what recovery found */
			ts__log_set_clean(log, 0);
		}
	}
	free(segs);
	return rc;
}
