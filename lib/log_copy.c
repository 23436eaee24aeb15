/*
 * log_copy.c -- a log read as files, for check.c and backup.c: naming
 * and verifying segment files, opening a log to walk its commits without
 * recovering it, and copying the part of a log a backup keeps.
 *
 * Nothing here maps a segment or changes the source log: segment files
 * are opened read-only and read with pread, so a writer may be at work
 * on the log meanwhile.  A backup copies the segments holding
 * [start, end of the commit HEAD names) into fresh, sparse segment files
 * under fresh headers, and writes a HEAD naming that commit; when the
 * source's HEAD names no commit it copies everything and leaves the
 * copy's recovery to find where the log ends.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "buf.h"
#include "error.h"
#include "fsutil.h"
#include "tslimits.h"
#include "log.h"
#include "log_int.h"

int ts__log_segment_name(uint64_t seg, char *out, size_t size)
{
	int n = snprintf(out, size, "%016" PRIx64 ".seg", seg);
	return n > 0 && (size_t)n < size ? 0 : ts__fail(TS_ETOOBIG, "segment name too long");
}

/* Open dir/<seg>.seg read-only and check its size and header: a segment
 * of 2^shift data bytes (any size a segment may have when shift is 0).
 * *fd receives the open file.  Returns 0, TS_ENOENT, TS_ECORRUPT,
 * TS_EVERSION or TS_EIO. */
static int open_checked_seg(const char *dir, uint64_t seg, unsigned shift, int *fd,
                            unsigned *shift_found)
{
	char path[TS_PATH_MAX];
	unsigned char h[TS_SEG_HEADER];
	struct stat st;
	unsigned found = shift;
	int rc = ts__path(path, "%s/%016" PRIx64 ".seg", dir, seg);
	*fd = -1;
	if (rc < 0)
		return rc;
	if ((*fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return errno == ENOENT ? ts__fail(TS_ENOENT, "log segment %s is missing", path)
		                       : ts__fail_errno(errno, "open %s", path);
	if (fstat(*fd, &st) < 0)
		rc = ts__fail_errno(errno, "stat %s", path);
	else if (st.st_size >= (off_t)TS_SEG_HEADER && pread(*fd, h, sizeof h, 0) != (ssize_t)sizeof h)
		rc = ts__fail_errno(errno ? errno : EIO, "read %s", path);
	else if (st.st_size >= (off_t)TS_SEG_HEADER)
		rc = ts__log_check_seg_header(h, seg, path, shift, &found);
	uint64_t want = TS_SEG_HEADER + seg_data_s(found ? found : TS_SEG_DATA_SHIFT);
	if (rc == 0 && st.st_size != (off_t)want)
		rc = ts__fail(TS_ECORRUPT, "log segment %s: %lld bytes, not %llu (truncated)", path,
		              (long long)st.st_size, (unsigned long long)want);
	if (rc < 0) {
		close(*fd);
		*fd = -1;
	} else if (shift_found) {
		*shift_found = found;
	}
	return rc;
}

int ts__log_check_segment(const char *dir, uint64_t seg, unsigned shift, unsigned *found)
{
	int fd, rc = open_checked_seg(dir, seg, shift, &fd, found);
	if (fd >= 0)
		close(fd);
	return rc;
}

int ts__log_open_verify(const char *dir, ts__log **out)
{
	ts__log *log = calloc(1, sizeof *log);
	*out = NULL;
	if (!log || !(log->dir = strdup(dir))) {
		free(log);
		return ts__fail(TS_ENOMEM, "out of memory");
	}
	log->readonly = 1;
	log->page = ts__log_opening_page();
	pthread_mutex_init(&log->mu, NULL);
	uint64_t *segs = NULL;
	size_t n = 0;
	int rc = ts__log_segments(dir, &segs, &n);
	/* a log that cannot tell (no segments, or a damaged oldest one) is
	 * walked with the default size: the walk then ends, and the check of
	 * each segment says why */
	unsigned shift = 0;
	if (rc == 0 && ts__log_dir_shift(dir, segs, n, &shift) == 0 && shift)
		log->hot.shift = shift;
	else
		log->hot.shift = TS_SEG_DATA_SHIFT;
	log->shift_known = 1;
	free(segs);
	*out = log;
	return 0;
}

/* The LSN just past the commit record at lsn, read from segment file fd.
 * Returns 0 or TS_ECORRUPT. */
static int commit_end(int fd, const char *dir, unsigned shift, uint64_t lsn, uint64_t *end)
{
	unsigned char c[TS_COMMIT_FIXED];
	off_t off = (off_t)ts__off_bytes(ts__off_of(shift, lsn));
	uint32_t nroots = 0, len = 0;
	if (pread(fd, c, sizeof c, off) == (ssize_t)sizeof c &&
	    ts__load_u32(c + TS_COMMIT_OFF_MAGIC) == TS_COMMIT_MAGIC &&
	    (nroots = ts__load_u32(c + TS_COMMIT_OFF_NROOTS)) <= TS_COMMIT_ROOTS_MAX &&
	    TS_COMMIT_SIZE((uint64_t)nroots) <= seg_left_s(shift, lsn)) {
		unsigned char t[4];
		if (pread(fd, t, 4, off + (off_t)TS_COMMIT_SIZE(nroots) - 4) == 4)
			len = ts__load_u32(t);
	}
	if (len == 0 || len != TS_COMMIT_SIZE(nroots))
		return ts__fail(TS_ECORRUPT, "log %s: no commit record at %" PRIu64, dir, lsn);
	*end = lsn + len;
	return 0;
}

/* Whether p[0..n) is all zeros. */
static int all_zero(const unsigned char *p, size_t n)
{
	return n == 0 || (p[0] == 0 && memcmp(p, p + 1, n - 1) == 0);
}

/* Copy the data bytes [from, to) of segment file fd (both in its segment)
 * to dst, leaving zero pages as holes. */
static int copy_range(int fd, int dst, unsigned shift, uint64_t from, uint64_t to,
                      unsigned char *buf, const char *src_path, const char *dst_path)
{
	/* BLOCK: the granularity of the holes left, a file system block
	 * (not a memory page: nothing here is mapped) */
	enum { CHUNK = 1 << 20, BLOCK = 4096 };
	while (from < to) {
		size_t n = to - from < CHUNK ? (size_t)(to - from) : CHUNK;
		off_t off = (off_t)ts__off_bytes(ts__off_of(shift, from));
		ssize_t got = pread(fd, buf, n, off);
		if (got != (ssize_t)n)
			return ts__fail_errno(got < 0 ? errno : EIO, "read %s", src_path);
		for (size_t at = 0; at < n; at += BLOCK) {
			size_t k = n - at < BLOCK ? n - at : BLOCK;
			int rc = all_zero(buf + at, k) ? 0 :
			         ts__write_at(dst, buf + at, k, off + (off_t)at, dst_path);
			if (rc < 0)
				return rc;
		}
		from += n;
	}
	return 0;
}

/* Copy segment seg's data [from, to) into a new, full-size, sparse file
 * in dst_dir under a fresh header.  A missing source is TS_ENOENT. */
static int copy_seg(const char *src_dir, const char *dst_dir, unsigned shift, uint64_t seg,
                    uint64_t from, uint64_t to, unsigned char *buf)
{
	char src[TS_PATH_MAX], dst[TS_PATH_MAX];
	unsigned char h[TS_SEG_HEADER] = {0};
	int fd = -1, out = -1;
	int rc = ts__path(src, "%s/%016" PRIx64 ".seg", src_dir, seg);
	if (rc == 0)
		rc = ts__path(dst, "%s/%016" PRIx64 ".seg", dst_dir, seg);
	if (rc == 0)
		rc = open_checked_seg(src_dir, seg, shift, &fd, NULL);
	if (rc == 0 && (out = open(dst, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644)) < 0)
		rc = ts__fail_errno(errno, "create %s", dst);
	if (rc == 0 && ftruncate(out, (off_t)(TS_SEG_HEADER + seg_data_s(shift))) < 0)
		rc = ts__fail_errno(errno, "size %s", dst);
	ts__log_segment_header(h, seg, seg_data_s(shift));
	if (rc == 0)
		rc = ts__write_at(out, h, sizeof h, 0, dst);
	if (rc == 0)
		rc = copy_range(fd, out, shift, from, to, buf, src, dst);
	if (rc == 0 && fsync(out) < 0)
		rc = ts__fail_errno(errno, "fsync %s", dst);
	if (fd >= 0)
		close(fd);
	if (out >= 0)
		close(out);
	return rc;
}

/* The LSN just past the commit record at head, in src_dir's log. */
static int head_end(const char *src_dir, unsigned shift, uint64_t head, uint64_t *end)
{
	int fd, rc = open_checked_seg(src_dir, seg_of_s(shift, head), shift, &fd, NULL);
	if (rc == 0)
		rc = commit_end(fd, src_dir, shift, head, end);
	if (fd >= 0)
		close(fd);
	return rc;
}

int ts__log_head_end(const char *dir, unsigned shift, uint64_t head, uint64_t *end)
{
	return head_end(dir, shift, head, end);
}

int ts__log_commit_end_in(int fd, const char *dir, unsigned shift, uint64_t head,
                          uint64_t *end)
{
	return commit_end(fd, dir, shift, head, end);
}

int ts__log_segment_open(const char *dir, uint64_t seg, unsigned shift, int *fd)
{
	return open_checked_seg(dir, seg, shift, fd, NULL);
}

int ts__log_shift_of(const char *dir, unsigned *shift)
{
	uint64_t *segs = NULL;
	size_t n = 0;
	int rc = ts__log_segments(dir, &segs, &n);
	*shift = 0;
	if (rc == TS_ENOENT) {
		ts__clear_error();
		rc = 0;
	} else if (rc == 0) {
		rc = ts__log_dir_shift(dir, segs, n, shift);
	}
	free(segs);
	return rc;
}

/* Write dst_dir/HEAD naming head, durably. */
static int write_head(const char *dst_dir, uint64_t head)
{
	unsigned char p[TS_HEAD_SIZE] = {0};
	memcpy(p + TS_HEAD_OFF_MAGIC, TS_HEAD_MAGIC, 8);
	ts__store_u64(p + TS_HEAD_OFF_COMMIT, head);
	return ts__file_write_atomic(dst_dir, TS_HEAD_FILE, p, sizeof p);
}

/* The LSN past the last segment file in dir from seg_of(log, from) on, or
 * from when there is none. */
static int last_segment_end(const char *dir, unsigned shift, uint64_t from, uint64_t *end)
{
	uint64_t *segs;
	size_t n;
	int rc = ts__log_segments(dir, &segs, &n);
	*end = from;
	if (rc == TS_ENOENT)
		return 0;
	if (rc == 0 && n && segs[n - 1] >= seg_of_s(shift, from))
		*end = (segs[n - 1] + 1) << shift;
	free(segs);
	return rc;
}

/* ts__log_backup of a log of 2^shift segments; known: head is not
 * TS_LOG_HEAD_UNKNOWN. */
static int copy_log(const char *src_dir, const char *dst_dir, unsigned shift, uint64_t start,
                    uint64_t head, int known)
{
	unsigned char *buf = NULL;
	int rc = 0;
	uint64_t from = batch_start_s(shift, start), end = from;
	if (known && head && head >= from && (rc = head_end(src_dir, shift, head, &end)) == TS_ECORRUPT) {
		/* No commit where HEAD says (it is never synced: a power loss
		 * may leave it ahead of the log), so no writer is at work --
		 * a writer's HEAD names a complete commit.  Copy it all and
		 * let recovery find where the log ends, as it would here. */
		known = 0;
		rc = 0;
	}
	if (rc == 0 && !known)
		rc = last_segment_end(src_dir, shift, from, &end);
	if (rc == 0 && !(buf = malloc((size_t)1 << 20)))
		rc = ts__fail(TS_ENOMEM, "out of memory");
	/* The segments holding [from, end); when no commit follows the
	 * flushed position, the segment holding it all the same, if there
	 * is one, as the source's recovery would find it. */
	for (uint64_t seg = seg_of_s(shift, from);
	     rc == 0 && seg <= seg_of_s(shift, end > from ? end - 1 : from); seg++) {
		uint64_t lo = seg << shift, hi = (seg + 1) << shift;
		rc = copy_seg(src_dir, dst_dir, shift, seg, lo > from ? lo : from, hi < end ? hi : end, buf);
		if (rc == TS_ENOENT && end == from)
			rc = 0;
	}
	free(buf);
	if (rc == 0)
		rc = write_head(dst_dir, known && end > from ? head : 0);
	return rc;
}

int ts__log_backup(const char *src_dir, const char *dst_dir, ts__lsn start, ts__lsn head)
{
	uint64_t *segs = NULL;
	size_t nsegs = 0;
	unsigned shift = 0;
	int rc = ts__log_segments(src_dir, &segs, &nsegs), known = head != TS_LOG_HEAD_UNKNOWN;
	if (rc == 0)
		rc = ts__log_dir_shift(src_dir, segs, nsegs, &shift);
	else if (rc == TS_ENOENT)
		rc = 0;
	free(segs);
	if (rc == 0 && shift)
		rc = copy_log(src_dir, dst_dir, shift, start, head, known);
	else if (rc == 0)
		/* No segment file: none was made yet, or a writer released
		 * them all since HEAD was read.  A commit at or after start
		 * needs its segment, so in the second case the descriptor is
		 * stale; a segment made since holds only commits after head,
		 * which the copy leaves out.  Nothing to copy either way (and
		 * no size to go by: this process's option is not the
		 * writer's). */
		rc = known && head && head >= start ? TS_ENOENT : write_head(dst_dir, 0);
	return rc;
}
