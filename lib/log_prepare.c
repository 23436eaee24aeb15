/*
 * log_prepare.c -- making the writer's segments: checking there is room
 * for one, creating a segment file, allocating its blocks as the tail
 * needs them (log_int.h, "Allocating segments as they fill"), and the
 * segment preparer, the thread that creates, maps and write-faults the
 * writer's next segment (and warms the rest of its current one) ahead of
 * the tail, and deletes and unmaps the segments flushes released behind
 * it (log.c, "Dropping released segments").
 *
 * The writer (log.c's appending) asks: ts__log_prep_kick when the tail
 * passes the middle of a segment, ts__log_prep_warm as it writes into a
 * segment it mapped itself, ts__log_prep_take as it enters the next one,
 * ts__log_prep_drop after a release;
 * closing stops the thread (ts__log_prep_stop).  The preparer only ever
 * touches a segment no commit names yet, or advises pages of the
 * writer's without changing a byte, so its one lock, prep.mu, guards
 * only the requests and the mapping handed over.  Its state is
 * log_int.h's struct prep, in struct ts__log.
 */
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "buf.h"
#include "error.h"
#include "fsutil.h"
#include "tslimits.h"
#include "log.h"
#include "log_int.h"
#include "thread.h"

#ifndef MADV_POPULATE_WRITE /* Linux 5.14; older kernels refuse it (EINVAL) */
#define MADV_POPULATE_WRITE 23
#endif

/* ---- room for segments (docs/log-format.md section 2.1) ---- */

/* Bytes the file system of path has free for an unprivileged writer, or
 * -1 when it cannot say. */
static int64_t free_bytes(const char *path)
{
	struct statvfs v;
	if (statvfs(path, &v) < 0)
		return -1;
	return (int64_t)((uint64_t)v.f_bavail * v.f_frsize);
}

/* n bytes as "64 MiB" (from 10 MiB on) or "1028 KiB" (rounded up). */
static void size_text(uint64_t n, char *buf, size_t room)
{
	if (n >= (UINT64_C(10) << 20))
		snprintf(buf, room, "%" PRIu64 " MiB", (n + (UINT64_C(1) << 19)) >> 20);
	else
		snprintf(buf, room, "%" PRIu64 " KiB", (n + 1023) >> 10);
}

int ts__log_room(const char *path, uint64_t seg_size, const char *what, char *msg, size_t room)
{
	char need[32], have[32];
	int64_t avail = free_bytes(path);
	if (avail < 0 || (uint64_t)avail >= TS_SEG_HEADER + seg_size)
		return 0;
	size_text(TS_SEG_HEADER + seg_size, need, sizeof need);
	size_text((uint64_t)avail, have, sizeof have);
	snprintf(msg, room, "%s needs %s for a new segment and the disk has %s free", what, need,
	         have);
	return 1;
}

int ts__log_needs_segment(ts__log *log)
{
	uint64_t seg = seg_of(log, log->hot.tail);
	const ts__log_slot *s = &log->hot.ring[seg & RING_MASK];
	return !log->readonly && (atomic_load(&s->segp1) != seg + 1 ||
	                          seg_left(log, log->hot.tail) < seg_data(log) / 2);
}

/* Create a new segment file: sized, the blocks of its first alloc bytes
 * allocated, header written and durable, all under a temporary name that
 * is then renamed into place, so a crash never leaves a segment without
 * its header. */
int ts__log_create_seg(ts__log *log, uint64_t seg, const char *path, uint64_t alloc)
{
	unsigned char h[TS_SEG_HEADER] = {0};
	char tmp[TS_PATH_MAX];
	int rc = ts__path(tmp, "%s.tmp", path), fd;
	if (rc < 0)
		return rc;
	if (alloc < TS_SEG_HEADER)
		alloc = TS_SEG_HEADER;
	if (alloc > seg_file(log))
		alloc = seg_file(log);
	fd = open(tmp, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return ts__fail_errno(errno, "create %s", tmp);
	ts__log_segment_header(h, seg, seg_data(log));
	/* The file has its whole size; the blocks the writer will store into
	 * first are allocated here (log_int.h, "Allocating segments as they
	 * fill"), and only a file system that cannot allocate (EOPNOTSUPP)
	 * leaves them to the first store. */
	if (ftruncate(fd, (off_t)seg_file(log)) < 0) {
		rc = ts__fail_errno(errno, "size %s", tmp);
	} else if (fallocate(fd, 0, 0, (off_t)alloc) < 0 && errno != EOPNOTSUPP && errno != ENOSYS) {
		char msg[512];
		if (errno == ENOSPC && ts__log_room(log->dir, seg_data(log), "the table's log", msg, sizeof msg))
			rc = ts__fail(TS_ENOSPC, "%s (%s)", msg, log->dir);
		else
			rc = ts__fail_errno(errno, "allocate %s", tmp);
	}
	else if ((rc = ts__write_at(fd, h, sizeof h, 0, tmp)) == 0 && fsync(fd) < 0)
		rc = ts__fail_errno(errno, "fsync %s", tmp);
	close(fd);
	if (rc == 0 && rename(tmp, path) < 0)
		rc = ts__fail_errno(errno, "rename %s", tmp);
	if (rc == 0)
		rc = ts__fsync_dir(log->dir);
	if (rc < 0)
		unlink(tmp);
	return rc;
}

uint64_t ts__log_alloc_first(const ts__log *log)
{
	return TS_SEG_HEADER + log->alloc_step;
}

int ts__log_alloc_seg(ts__log *log, uint64_t seg, uint64_t need)
{
	uint64_t from, to;
	char path[TS_PATH_MAX];
	int rc, fd;
	if (log->alloc_seg == seg + 1 && need <= log->alloc_end)
		return 0;
	/* not known: below the tail, every block was stored into */
	from = log->alloc_seg == seg + 1 ? log->alloc_end
	                                 : TS_SEG_HEADER + (log->hot.tail - seg_lsn(log, seg));
	to = (from > need ? from : need) + log->alloc_step;
	if (to > seg_file(log))
		to = seg_file(log);
	if (from >= to) /* the tail at the segment's end: nothing to add */
		return 0;
	if ((rc = ts__log_seg_path(log, seg, path)) < 0)
		return rc;
	if ((fd = open(path, O_RDWR | O_CLOEXEC)) < 0)
		return ts__fail_errno(errno, "open %s", path);
	int r = fallocate(fd, 0, (off_t)from, (off_t)(to - from));
	/* the record alone, to the end of its (4 KiB) block */
	uint64_t least = (need + 4095) & ~(uint64_t)4095;
	if (r < 0 && errno == ENOSPC && least > from && least < to) {
		to = least;
		r = fallocate(fd, 0, (off_t)from, (off_t)(to - from));
	}
	if (r < 0 && errno != EOPNOTSUPP && errno != ENOSYS) {
		int e = errno;
		char needs[32], has[32];
		int64_t avail = free_bytes(log->dir);
		close(fd);
		if (e != ENOSPC)
			return ts__fail_errno(e, "allocate %s", path);
		size_text(to - from, needs, sizeof needs);
		size_text(avail < 0 ? 0 : (uint64_t)avail, has, sizeof has);
		return ts__fail(TS_ENOSPC, "the table's log needs %s more in its segment and the "
		                "disk has %s free (%s)", needs, has, log->dir);
	}
	close(fd);
	log->alloc_seg = seg + 1;
	log->alloc_end = to;
	alloc_step_grow(log);
	return 0;
}

/* ---- the segment preparer ---- */

/* Create (if missing), map and write-fault segment seg; NULL on failure,
 * which leaves the work to the writer and its error reporting. */
static unsigned char *prepare_seg(ts__log *log, uint64_t seg, uint64_t *alloc)
{
	char path[TS_PATH_MAX];
	int fresh = 0;
	if (ts__log_seg_path(log, seg, path) < 0)
		return NULL;
	if (access(path, F_OK) < 0) {
		/* Only a file that is not there is made: any other failure
		 * may hide one the writer maps (made by the writer after a
		 * failure here), which a new one renamed over would cut
		 * from the writer's records. */
		if (errno != ENOENT || ts__log_create_seg(log, seg, path, *alloc) < 0)
			return NULL;
		fresh = 1;
	}
	if (!fresh) /* made before (by a preparer that failed after): not known */
		*alloc = TS_SEG_HEADER;
	int fd = open(path, O_RDWR | O_CLOEXEC);
	struct stat st;
	if (fd < 0)
		return NULL;
	unsigned char *base = MAP_FAILED;
	if (fstat(fd, &st) == 0 && st.st_size == (off_t)seg_file(log))
		base = mmap(NULL, seg_file(log), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (base == MAP_FAILED)
		return NULL;
	if (ts__log_check_seg_header(base, seg, path, log->hot.shift, NULL) < 0) {
		munmap(base, seg_file(log));
		return NULL;
	}
	if (fresh) /* all zeros, and nobody else's yet: a store per page
	            * faulted, of the pages allocated */
		for (uint64_t off = TS_SEG_HEADER, step = ts__log_fault_page(); off < *alloc; off += step)
			((volatile unsigned char *)base)[off] = 0;
	return base;
}

static void *prep_main(void *arg)
{
	ts__log *log = arg;
	struct prep *p = &log->prep;
	pthread_mutex_lock(&p->mu);
	while (!p->stop) {
		if (p->warm) {
			/* Before any segment asked for: the writer fills the
			 * rest of this one before it needs the next.  The
			 * writer's segment stays mapped while the tail is in it,
			 * and past that a segment is unmapped only once a flush
			 * released it -- and the advice changes no byte even
			 * then.  Failures only leave the faults to the writer. */
			unsigned char *from = p->warm, *to = p->warm_end;
			p->warm = p->warm_end = NULL;
			pthread_mutex_unlock(&p->mu);
			madvise(from, (size_t)(to - from), MADV_POPULATE_WRITE);
			pthread_mutex_lock(&p->mu);
			continue;
		}
		if (p->want && p->want != p->ready) {
			uint64_t seg = p->want - 1, alloc = p->want_alloc;
			pthread_mutex_unlock(&p->mu);
			unsigned char *base = prepare_seg(log, seg, &alloc);
			pthread_mutex_lock(&p->mu);
			if (p->base)
				munmap(p->base, seg_file(log));
			p->base = base;
			p->ready = base ? seg + 1 : 0;
			p->ready_alloc = alloc;
			if (p->want == seg + 1 && !base)
				p->want = 0; /* failed: the writer will try itself */
			pthread_cond_broadcast(&p->cv);
			continue;
		}
		if (p->drop) {
			/* Last: a segment asked for or warming comes first,
			 * looked at again between two steps.  A request made
			 * during the step sets drop again. */
			p->drop = 0;
			pthread_mutex_unlock(&p->mu);
			int more = ts__log_drop_step(log) > 0;
			pthread_mutex_lock(&p->mu);
			if (more)
				p->drop = 1;
			continue;
		}
		pthread_cond_wait(&p->cv, &p->mu);
	}
	pthread_mutex_unlock(&p->mu);
	return NULL;
}

/* Start the preparer on first use; 0 if it cannot run (the writer then
 * prepares its segments itself, and nothing is warmed). */
static int prep_start(ts__log *log)
{
	struct prep *p = &log->prep;
	if (p->started)
		return 1;
	pthread_mutex_init(&p->mu, NULL);
	pthread_cond_init(&p->cv, NULL);
	if (ts__thread_start(&p->thread, prep_main, log) != 0) {
		pthread_cond_destroy(&p->cv);
		pthread_mutex_destroy(&p->mu);
		return 0;
	}
	p->started = 1;
	return 1;
}

/* Ask for segment seg to be prepared. */
void ts__log_prep_kick(ts__log *log, uint64_t seg, uint64_t alloc)
{
	struct prep *p = &log->prep;
	if (!prep_start(log))
		return;
	pthread_mutex_lock(&p->mu);
	p->want = seg + 1;
	p->want_alloc = alloc;
	pthread_cond_signal(&p->cv);
	pthread_mutex_unlock(&p->mu);
}

/* Ask for the `ahead` bytes of segment seg after the tail (which is in
 * it), from the page after the tail's, to be warmed; this replaces what
 * is left of an earlier request (see "Warming the writer's own
 * segments"). */
void ts__log_prep_warm(ts__log *log, uint64_t seg, uint64_t ahead)
{
	struct prep *p = &log->prep;
	ts__log_slot *s = &log->hot.ring[seg & RING_MASK];
	/* the tail's offset in seg: its end, when a record filled seg */
	ts__off at = {TS_SEG_HEADER + (log->hot.tail - seg_lsn(log, seg))};
	ts__off from = page_up(log, at), to = page_up(log, (ts__off){at.at + ahead});
	assert(page_aligned(log, from));
	if (to.at > seg_file(log))
		to.at = seg_file(log);
	/* what is warmed is allocated first (a table this far into a
	 * segment is no small one); never a hole: a failed allocation only
	 * warms less, and the writer's next record says ENOSPC */
	if (to.at > from.at && ts__log_alloc_seg(log, seg, to.at) < 0) {
		if (log->alloc_seg != seg + 1)
			return;
		if (to.at > log->alloc_end)
			to = page_down(log, (ts__off){log->alloc_end});
	}
	if (from.at >= to.at || atomic_load(&s->segp1) != seg + 1 || !prep_start(log))
		return;
	pthread_mutex_lock(&p->mu);
	p->warm = ts__off_ptr(s->base, from);
	p->warm_end = ts__off_ptr(s->base, to);
	pthread_cond_signal(&p->cv);
	pthread_mutex_unlock(&p->mu);
}

/* Install the prepared mapping of seg in its slot, waiting if it is being
 * prepared.  Returns 1 if installed, 0 if the caller must map it. */
int ts__log_prep_take(ts__log *log, uint64_t seg, uint64_t *alloc)
{
	struct prep *p = &log->prep;
	if (!p->started)
		return 0;
	pthread_mutex_lock(&p->mu);
	while (p->want == seg + 1 && p->ready != seg + 1) /* until done or failed */
		pthread_cond_wait(&p->cv, &p->mu);
	unsigned char *base = NULL;
	if (p->ready == seg + 1) {
		base = p->base;
		*alloc = p->ready_alloc;
		p->base = NULL;
		p->ready = 0;
	}
	/* Served (or the writer's to do): else the preparer, woken for
	 * something else, would take want != ready for a request and make
	 * seg again, under the writer's records. */
	if (p->want == seg + 1)
		p->want = 0;
	pthread_mutex_unlock(&p->mu);
	if (!base)
		return 0;
	ts__log_slot *s = &log->hot.ring[seg & RING_MASK];
	if (s->base)
		munmap(s->base, seg_file(log));
	s->base = base;
	atomic_store_explicit(&s->segp1, seg + 1, memory_order_release);
	return 1;
}

int ts__log_prep_drop(ts__log *log)
{
	struct prep *p = &log->prep;
	if (!prep_start(log))
		return 0;
	pthread_mutex_lock(&p->mu);
	p->drop = 1;
	pthread_cond_signal(&p->cv);
	pthread_mutex_unlock(&p->mu);
	return 1;
}

void ts__log_prep_stop(ts__log *log)
{
	struct prep *p = &log->prep;
	if (!p->started)
		return;
	pthread_mutex_lock(&p->mu);
	p->stop = 1;
	pthread_cond_signal(&p->cv);
	pthread_mutex_unlock(&p->mu);
	pthread_join(p->thread, NULL);
	if (p->base) /* its file is past the tail: the next recovery removes it */
		munmap(p->base, seg_file(log));
	pthread_cond_destroy(&p->cv);
	pthread_mutex_destroy(&p->mu);
	p->started = 0;
}
