/*
 * log.c -- segments, appends, commits, publication and recovery of a
 * table's log.
 *
 * State: `tail` is the next free LSN; between ts__log_begin and
 * ts__log_commit/abort a batch is open at `batch`.  `head` is the LSN of
 * the newest published commit record; everything at or before it is
 * immutable, everything after it belongs to the writer alone.  `synced`
 * is the LSN up to which msync has made the log durable.
 *
 * Segment slots: a ring of TS_LOG_RING slots indexed by segment number
 * modulo the ring size.  The writer maps a segment before any record in
 * it is published, so readers of the same process always find their
 * segments mapped; read-only handles map segments on first touch.
 * A segment is unmapped while the log is open only once it was released
 * (its rows are all in tablets) and no snapshot that may read it is left
 * (ts__log_pin), or when its slot is needed again TS_LOG_RING segments
 * later.
 *
 * Pages: a segment is mapped whole, from file offset 0, so that no mmap
 * offset depends on the page size (the data area's file offset,
 * TS_SEG_HEADER, is a page only on machines of 4 KiB pages).  What must
 * be page-aligned -- msync's and madvise's addresses, the start of the
 * hole recovery punches -- is rounded on file offsets (ts__off) to the
 * log's page size (ts__log_page_size), from the mapping's base, which
 * the kernel aligns; debug builds assert it (page_aligned).
 *
 * Locks: the writer's functions run under the writer's lock, the table's
 * (ts__log_set_writer_lock; asserted by writer_locked); mu guards the
 * slots' mappings and the release counters (asserted by mu_held).
 */
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <dirent.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "buf.h"
#include "crc32c.h"
#include "error.h"
#include "fsutil.h"
#include "limits.h"
#include "log.h"

#ifndef MADV_POPULATE_WRITE /* Linux 5.14; older kernels refuse it (EINVAL) */
#define MADV_POPULATE_WRITE 23
#endif

#define RING_MASK (TS_LOG_RING - 1)

/* The segment preparer: a thread that creates, maps and write-faults the
 * writer's next segment ahead of time, so that moving into it costs the
 * writer a pointer swap instead of a file creation and 16384 page faults
 * (a write fault on a shared file mapping runs the file system's
 * page_mkwrite).  It only ever touches a segment no commit names yet. */
struct prep {
	pthread_t thread;
	int started, stop;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	uint64_t want;        /* segment + 1 to prepare, 0 = none */
	uint64_t ready;       /* segment + 1 whose mapping is in base */
	unsigned char *base;
	unsigned char *warm;  /* [warm, warm_end) of the writer's segment to */
	unsigned char *warm_end; /* write-fault (NULL = nothing to do) */
};

/*
 * Warming the writer's own segments.  A segment the writer maps itself
 * -- a new table's first, or the one holding the tail at open, whose
 * rest recovery punched out -- was never write-faulted: every 4 kB page
 * of it cost the inserting thread a fault the first time a batch wrote
 * there (the first second of the latency workload had two to three times
 * the p99 of every later one).  Once the tail is TS_LOG_WARM_AFTER bytes
 * into such a segment, and again every TS_LOG_WARM_STEP bytes, the
 * preparer write-faults the next TS_LOG_WARM_AHEAD bytes after the tail
 * with MADV_POPULATE_WRITE, which maps the pages writable without
 * touching their bytes, so it may run beside the writer's appends.  The
 * pages are then dirty, and written back, whether the writer gets to
 * them or not: so nothing is warmed for a table that writes less than
 * TS_LOG_WARM_AFTER, and nothing more than TS_LOG_WARM_AHEAD past the
 * tail until it passes the middle of the segment (a database of many
 * small tables must not write 64 MiB of zeros for each).  There, where
 * the next segment is asked for anyway, the rest of this one is warmed
 * at once, before the next is made: the writer needs it first, and
 * making the next takes the preparer long enough for the writer to
 * outrun a window.  (Kernels before 5.14 lack the advice: the writer
 * then faults as before.)
 */
#define TS_LOG_WARM_AFTER (UINT64_C(1) << 20)
#define TS_LOG_WARM_STEP (UINT64_C(4) << 20)  /* of the tail between two requests */
#define TS_LOG_WARM_AHEAD (UINT64_C(8) << 20) /* warmed past the tail */

struct ts__log {
	ts__log_hot hot;          /* first: the inline functions of log.h read it */
	char *dir;
	int readonly;
	pthread_mutex_t mu;       /* mapping slots; refreshing head (read-only) */
	uint64_t batch, synced;
	int in_batch;
	_Atomic uint64_t head;
	uint64_t seq;             /* of the head commit */
	unsigned char *headpage;  /* the shared HEAD file, or NULL */
	char boot[TS_HEAD_BOOT_SIZE]; /* this boot's id (current_boot) */
	uint64_t recovered;
	int was_clean;
	uint64_t cut_lsn, cut_commits; /* committed data recovery gave up (lost_commits) */
	uint64_t first_seg, last_seg; /* segments mapped by the writer */
	/* Released segments stay mapped while a snapshot taken before their
	 * release may read them: pins counts the snapshots (ts__log_pin);
	 * segments below released are released, below unmapped unmapped
	 * (all three under mu).  Without this a long-running process kept every
	 * segment it ever wrote mapped, and their disk blocks allocated. */
	long pins;                /* under mu, as the two below */
	uint64_t released, unmapped;
	int64_t seg_wait_ns, seg_wait_max_ns; /* the writer entering segments */
	uint64_t asked;           /* writer: segment + 1 last asked of the preparer */
	uint64_t warm_at;         /* writer: ask the preparer to warm the tail's
	                           * segment when the tail passes this LSN (0 = no) */
	/* Whether hot.shift is the log's.  A writer's always is (its segments'
	 * or, without any, its option's); a read-only log without segment
	 * files at open has none to go by -- the option is this process's, not
	 * the writer's -- and learns it from the first segment it maps
	 * (learn_shift, under mu; set once, with release). */
	_Atomic int shift_known;
	size_t page;              /* ts__log_page_size, taken at open */
	pthread_mutex_t *writer_mu; /* the writer's lock, NULL = not told */
#ifndef NDEBUG
	_Atomic(const void *) mu_owner; /* the thread holding mu (mu_lock) */
#endif
	struct prep prep;
};

static void prep_stop(ts__log *log);
static int sync_all(ts__log *log);

/* ---- pages ---- */

/* The real page size, and the one logs open with (0 = not yet known:
 * page_init; a power of two, the real one or a forced one). */
static size_t real_page;
static _Atomic size_t open_page;
static pthread_once_t page_once = PTHREAD_ONCE_INIT;

/* What a forced page size of want gives: want if it may be forced
 * (log.h), else the real page size. */
static size_t forced_page(size_t want)
{
	int pow2 = want && (want & (want - 1)) == 0;
	return pow2 && want > real_page && want <= TS_LOG_PAGE_FORCE_MAX ? want : real_page;
}

static void page_init(void)
{
	long n = sysconf(_SC_PAGESIZE);
	const char *env = getenv("TSSTORE_PAGE_SIZE");
	real_page = n > 0 ? (size_t)n : 4096;
	atomic_store(&open_page, forced_page(env ? (size_t)strtoull(env, NULL, 0) : 0));
}

/* The page size a log opening now takes. */
static size_t opening_page(void)
{
	pthread_once(&page_once, page_init);
	return atomic_load(&open_page);
}

size_t ts__log_force_page_size(size_t size)
{
	pthread_once(&page_once, page_init);
	atomic_store(&open_page, forced_page(size));
	return atomic_load(&open_page);
}

size_t ts__log_page_size(const ts__log *log) { return log->page; }

/* The page size the kernel faults pages in by: the stride of prepare_seg's
 * touches (a forced page size changes alignments, not faults). */
static size_t fault_page(void)
{
	pthread_once(&page_once, page_init);
	return real_page;
}

/* File offsets rounded to the log's pages.  A segment's mapping starts at
 * file offset 0 on a page boundary, so these are page-aligned addresses
 * in it too. */
static ts__off page_down(const ts__log *log, ts__off off)
{
	return (ts__off){off.at & ~((uint64_t)log->page - 1)};
}

static ts__off page_up(const ts__log *log, ts__off off)
{
	return page_down(log, (ts__off){off.at + log->page - 1});
}

#ifndef NDEBUG
/* Whether off may start what the kernel takes page-aligned (msync,
 * madvise) on a machine of the log's page size: asserted where such a
 * call is made (seg_msync, prep_warm), so that a run with a forced page
 * size fails where such a machine would refuse the call (EINVAL). */
static int page_aligned(const ts__log *log, ts__off off)
{
	return off.at % log->page == 0;
}
#endif

/* msync [from, from + len) of the segment file mapped at base: the one
 * way the log msyncs a segment. */
static int seg_msync(const ts__log *log, unsigned char *base, ts__off from, uint64_t len)
{
	assert(page_aligned(log, from));
	return msync(ts__off_ptr(base, from), len, MS_SYNC);
}

/* ---- locks ---- */

#ifndef NDEBUG
/* Each thread's own address: mu_owner names the thread holding mu. */
static _Thread_local char this_thread;
#endif

static void mu_lock(ts__log *log)
{
	pthread_mutex_lock(&log->mu);
#ifndef NDEBUG
	atomic_store_explicit(&log->mu_owner, &this_thread, memory_order_relaxed);
#endif
}

static void mu_unlock(ts__log *log)
{
#ifndef NDEBUG
	atomic_store_explicit(&log->mu_owner, NULL, memory_order_relaxed);
#endif
	pthread_mutex_unlock(&log->mu);
}

#ifndef NDEBUG
/* Whether the calling thread holds mu. */
static int mu_held(ts__log *log)
{
	return atomic_load_explicit(&log->mu_owner, memory_order_relaxed) == &this_thread;
}

/* Whether the writer's lock is held, when the log was told it: by some
 * thread (a trylock cannot say which), so a caller that took no lock is
 * caught unless another thread holds it just then. */
static int writer_locked(const ts__log *log)
{
	if (!log->writer_mu || pthread_mutex_trylock(log->writer_mu) == EBUSY)
		return 1;
	pthread_mutex_unlock(log->writer_mu);
	return 0;
}
#endif

void ts__log_set_writer_lock(ts__log *log, pthread_mutex_t *mu)
{
	log->writer_mu = mu;
}

static uint64_t align8(uint64_t n) { return (n + 7) & ~UINT64_C(7); }
/* The geometry of a log's segments: data areas of 2^shift bytes (log.h). */
static uint64_t seg_data_s(unsigned shift) { return UINT64_C(1) << shift; }
static uint64_t seg_of_s(unsigned shift, uint64_t lsn) { return lsn >> shift; }
static uint64_t seg_off_s(unsigned shift, uint64_t lsn) { return lsn & (seg_data_s(shift) - 1); }
static uint64_t seg_left_s(unsigned shift, uint64_t lsn) { return seg_data_s(shift) - seg_off_s(shift, lsn); }
static uint64_t seg_data(const ts__log *log) { return seg_data_s(log->hot.shift); }
static uint64_t seg_file(const ts__log *log) { return TS_SEG_HEADER + seg_data(log); }
static uint64_t seg_of(const ts__log *log, uint64_t lsn) { return seg_of_s(log->hot.shift, lsn); }
static uint64_t seg_left(const ts__log *log, uint64_t lsn)
{
	return seg_left_s(log->hot.shift, lsn);
}
static uint64_t seg_lsn(const ts__log *log, uint64_t seg) { return seg << log->hot.shift; }

static int seg_path(const ts__log *log, uint64_t seg, char *out)
{
	return ts__path(out, "%s/%016" PRIx64 ".seg", log->dir, seg);
}

/* ---- segment files ---- */

void ts__log_segment_header(unsigned char *h, uint64_t seg, uint64_t data)
{
	memcpy(h + TS_SEGH_OFF_MAGIC, TS_SEG_MAGIC, 8);
	ts__store_u32(h + TS_SEGH_OFF_VERSION, data == seg_data_s(TS_SEG_V1_SHIFT)
	                                           ? TS_SEG_VERSION_64MIB : TS_SEG_VERSION_SIZED);
	ts__store_u32(h + TS_SEGH_OFF_HEADER_SIZE, TS_SEG_HEADER);
	ts__store_u64(h + TS_SEGH_OFF_SEGNO, seg);
	ts__store_u64(h + TS_SEGH_OFF_DATA_SIZE, data);
	ts__store_u32(h + TS_SEGH_OFF_CRC, ts__crc32c(0, h, TS_SEGH_FIXED));
	ts__store_u32(h + TS_SEGH_OFF_CLEAN, 0);
}

/* The shift of a segment data size: TS_SEG_SHIFT_MIN .. MAX, or 0 when
 * data is no such power of two. */
static unsigned shift_of(uint64_t data)
{
	for (unsigned s = TS_SEG_SHIFT_MIN; s <= TS_SEG_SHIFT_MAX; s++)
		if (data == seg_data_s(s))
			return s;
	return 0;
}

/* Check a segment's header: it names seg, and its data size is 2^shift
 * or, when shift is 0, any size a segment may have (*found, may be NULL,
 * receives its shift). */
static int check_seg_header(const unsigned char *h, uint64_t seg, const char *path,
                            unsigned shift, unsigned *found)
{
	if (memcmp(h + TS_SEGH_OFF_MAGIC, TS_SEG_MAGIC, 8) != 0 ||
	    ts__load_u32(h + TS_SEGH_OFF_CRC) != ts__crc32c(0, h, TS_SEGH_FIXED))
		return ts__fail(TS_ECORRUPT, "log segment %s: damaged header", path);
	uint32_t version = ts__load_u32(h + TS_SEGH_OFF_VERSION);
	if (version != TS_SEG_VERSION_64MIB && version != TS_SEG_VERSION_SIZED)
		return ts__fail(TS_EVERSION, "log segment %s: format version %u", path, version);
	uint64_t data = ts__load_u64(h + TS_SEGH_OFF_DATA_SIZE);
	unsigned s = shift_of(data);
	if (ts__load_u64(h + TS_SEGH_OFF_SEGNO) != seg || !s ||
	    (version == TS_SEG_VERSION_64MIB && s != TS_SEG_V1_SHIFT))
		return ts__fail(TS_ECORRUPT, "log segment %s: header names another segment", path);
	if (shift && s != shift)
		return ts__fail(TS_ECORRUPT, "log segment %s: holds %" PRIu64 " bytes of data, "
		                "the log's segments %" PRIu64, path, data, seg_data_s(shift));
	if (found)
		*found = s;
	return 0;
}

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

/* Create a new segment file: sized, blocks allocated, header written and
 * durable, all under a temporary name that is then renamed into place, so
 * a crash never leaves a segment without its header. */
static int create_seg(ts__log *log, uint64_t seg, const char *path)
{
	unsigned char h[TS_SEG_HEADER] = {0};
	char tmp[TS_PATH_MAX];
	int rc = ts__path(tmp, "%s.tmp", path), fd;
	if (rc < 0)
		return rc;
	fd = open(tmp, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return ts__fail_errno(errno, "create %s", tmp);
	ts__log_segment_header(h, seg, seg_data(log));
	/* Blocks are allocated here so that writing through the mapping
	 * never meets a full disk (SIGBUS): only a file system that cannot
	 * allocate (EOPNOTSUPP) gets a sparse file instead, not a full one. */
	if (fallocate(fd, 0, 0, (off_t)seg_file(log)) < 0 &&
	    ((errno != EOPNOTSUPP && errno != ENOSYS) || ftruncate(fd, (off_t)seg_file(log)) < 0)) {
		char msg[512];
		if (errno == ENOSPC && ts__log_room(log->dir, seg_data(log), "the table's log", msg, sizeof msg))
			rc = ts__fail(TS_ENOSPC, "%s (%s)", msg, log->dir);
		else
			rc = ts__fail_errno(errno, "size %s", tmp);
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

/* Map segment seg into its slot.  create: make the file if missing.
 * Returns 0, TS_ENOENT (no such segment) or another error. */
static int map_seg(ts__log *log, uint64_t seg, int create)
{
	char path[TS_PATH_MAX];
	ts__log_slot *s = &log->hot.ring[seg & RING_MASK];
	int rc, fd, fresh = 0, prot = log->readonly ? PROT_READ : PROT_READ | PROT_WRITE;
	if (atomic_load_explicit(&s->segp1, memory_order_acquire) == seg + 1)
		return 0;
	if ((rc = seg_path(log, seg, path)) < 0)
		return rc;
	if (create && access(path, F_OK) < 0) {
		if ((rc = create_seg(log, seg, path)) < 0)
			return rc;
		fresh = 1;
	}
	fd = open(path, (log->readonly ? O_RDONLY : O_RDWR) | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? TS_ENOENT : ts__fail_errno(errno, "open %s", path);
	struct stat st;
	if (fstat(fd, &st) < 0) { /* an I/O error, not damage */
		rc = ts__fail_errno(errno, "stat %s", path);
		close(fd);
		return rc;
	}
	if (st.st_size < (off_t)TS_SEG_HEADER ||
	    (st.st_size < (off_t)seg_file(log) && log->readonly)) {
		/* A writer zero-extends a segment cut short (a torn tail, for
		 * recovery to find); a reader cannot. */
		close(fd);
		return ts__fail(TS_ECORRUPT, "log segment %s: truncated", path);
	}
	if (st.st_size < (off_t)seg_file(log) && ftruncate(fd, (off_t)seg_file(log)) < 0) {
		rc = ts__fail_errno(errno, "extend %s", path);
		close(fd);
		return rc;
	}
	unsigned char *base = mmap(NULL, seg_file(log), prot,
	                           MAP_SHARED | (fresh ? MAP_POPULATE : 0), fd, 0);
	close(fd);
	if (base == MAP_FAILED)
		return ts__fail_errno(errno, "mmap %s", path);
	if ((rc = check_seg_header(base, seg, path, log->hot.shift, NULL)) < 0) {
		munmap(base, seg_file(log));
		return rc;
	}
	if (s->base)
		munmap(s->base, seg_file(log));
	s->base = base;
	atomic_store_explicit(&s->segp1, seg + 1, memory_order_release);
	return 0;
}

static int dir_shift(const char *dir, const uint64_t *segs, size_t n, unsigned *shift);

/* Read-only, under mu: take the log's shift from its oldest segment file
 * unless known.  Returns 0, TS_ENOENT (no segment file yet), or an error
 * reading the header. */
static int learn_shift(ts__log *log)
{
	uint64_t *segs = NULL;
	size_t n = 0;
	unsigned shift = 0;
	assert(log->readonly && mu_held(log));
	if (atomic_load_explicit(&log->shift_known, memory_order_relaxed))
		return 0;
	int rc = ts__log_segments(log->dir, &segs, &n);
	if (rc == 0)
		rc = dir_shift(log->dir, segs, n, &shift);
	free(segs);
	if (rc == 0 && !shift)
		rc = TS_ENOENT;
	if (rc == 0) {
		__atomic_store_n(&log->hot.shift, shift, __ATOMIC_RELAXED);
		atomic_store_explicit(&log->shift_known, 1, memory_order_release);
	}
	return rc;
}

void *ts__log_ptr_slow(ts__log *log, ts__lsn lsn)
{
	if (!atomic_load_explicit(&log->shift_known, memory_order_acquire)) {
		assert(log->readonly);
		mu_lock(log);
		int rc = learn_shift(log);
		mu_unlock(log);
		if (rc < 0)
			return NULL;
	}
	uint64_t seg = seg_of(log, lsn);
	ts__log_slot *s = &log->hot.ring[seg & RING_MASK];
	if (atomic_load_explicit(&s->segp1, memory_order_acquire) != seg + 1) {
		if (!log->readonly)
			return NULL;
		mu_lock(log);
		int rc = map_seg(log, seg, 0);
		mu_unlock(log);
		if (rc < 0)
			return NULL;
	}
	return ts__off_ptr(s->base, ts__off_of(log->hot.shift, lsn));
}

/* ---- commits ---- */

/* CRC-32C of the log bytes [from, to), across segments. */
static int crc_range(ts__log *log, uint64_t from, uint64_t to, uint32_t *crc)
{
	*crc = 0;
	while (from < to) {
		uint64_t n = seg_left(log, from) < to - from ? seg_left(log, from) : to - from;
		const void *p = ts__log_ptr(log, from);
		if (!p)
			return TS_ENOENT;
		*crc = ts__crc32c(*crc, p, n);
		from += n;
	}
	return 0;
}

int ts__log_read_commit(ts__log *log, ts__lsn lsn, ts__commit *c)
{
	const unsigned char *p = ts__log_ptr(log, lsn);
	if (!p || seg_left(log, lsn) < TS_COMMIT_FIXED + TS_COMMIT_TRAILER ||
	    ts__load_u32(p + TS_COMMIT_OFF_MAGIC) != TS_COMMIT_MAGIC)
		return ts__fail(TS_ECORRUPT, "log %s: no commit record at %" PRIu64, log->dir, lsn);
	c->lsn = lsn;
	c->nroots = ts__load_u32(p + TS_COMMIT_OFF_NROOTS);
	c->seq = ts__load_u64(p + TS_COMMIT_OFF_SEQ);
	c->batch_lsn = ts__load_u64(p + TS_COMMIT_OFF_BATCH);
	c->prev_lsn = ts__load_u64(p + TS_COMMIT_OFF_PREV);
	c->time = (int64_t)ts__load_u64(p + TS_COMMIT_OFF_TIME);
	c->rows = ts__load_u64(p + TS_COMMIT_OFF_ROWS);
	c->roots = p + TS_COMMIT_FIXED;
	if (c->nroots > TS_FILLING_MAX || TS_COMMIT_SIZE((uint64_t)c->nroots) > seg_left(log, lsn) ||
	    ts__load_u32(p + TS_COMMIT_SIZE(c->nroots) - 4) != TS_COMMIT_SIZE(c->nroots))
		return ts__fail(TS_ECORRUPT, "log %s: malformed commit record at %" PRIu64,
		                log->dir, lsn);
	return 0;
}

void ts__commit_root(const ts__commit *c, uint32_t i, ts__root *r)
{
	const unsigned char *p = c->roots + (size_t)i * TS_ROOT_SIZE;
	r->period_start = (int64_t)ts__load_u64(p + TS_ROOT_OFF_PERIOD_START);
	r->period_len = (int64_t)ts__load_u64(p + TS_ROOT_OFF_PERIOD_LEN);
	r->root = ts__load_u64(p + TS_ROOT_OFF_ROOT);
	r->rows = ts__load_u64(p + TS_ROOT_OFF_ROWS);
	r->bytes = ts__load_u64(p + TS_ROOT_OFF_BYTES);
	r->min_ts = (int64_t)ts__load_u64(p + TS_ROOT_OFF_MIN_TS);
	r->max_ts = (int64_t)ts__load_u64(p + TS_ROOT_OFF_MAX_TS);
	r->born = ts__load_u64(p + TS_ROOT_OFF_BORN);
	r->since = ts__load_u64(p + TS_ROOT_OFF_SINCE);
	r->flags = ts__load_u32(p + TS_ROOT_OFF_FLAGS);
	r->created = 0;
}

/* Validate the batch at p; on success *c is its commit and *next the LSN
 * after it.  Any failure means "the log ends here"; *why says which
 * check failed. */
static int check_batch(ts__log *log, uint64_t p, const ts__commit *prev,
                       ts__commit *c, uint64_t *next, const char **why)
{
	const unsigned char *h = ts__log_ptr(log, p);
	uint32_t crc;
	if (!h)
		return *why = "its segment file is missing or unreadable", -1;
	if (ts__load_u32(h) != TS_BATCH_MAGIC)
		return *why = "no batch header", -1;
	uint64_t body = ts__load_u64(h + 8);
	if (body % 8 || body > UINT64_MAX / 2)
		return *why = "malformed batch header", -1;
	uint64_t at = p + TS_BATCH_HEADER_SIZE + body;
	if (ts__log_read_commit(log, at, c) < 0 || c->batch_lsn != p)
		return *why = "no commit record where its batch header says", -1;
	if (prev->lsn && (c->seq != prev->seq + 1 || c->prev_lsn != prev->lsn))
		return *why = "commit out of sequence", -1;
	uint64_t end = at + TS_COMMIT_SIZE(c->nroots);
	if (crc_range(log, p, end - TS_COMMIT_TRAILER, &crc) < 0)
		return *why = "a segment file of the batch is missing or unreadable", -1;
	if (crc != ts__load_u32((const unsigned char *)ts__log_ptr(log, end - TS_COMMIT_TRAILER)))
		return *why = "checksum mismatch", -1;
	*next = end;
	return 0;
}

/* Where the batch after position p starts, in segments of 2^shift. */
static uint64_t batch_start_s(unsigned shift, uint64_t p)
{
	p = align8(p);
	return seg_left_s(shift, p) < TS_BATCH_HEADER_SIZE ? p + seg_left_s(shift, p) : p;
}

static uint64_t batch_start(const ts__log *log, uint64_t p)
{
	return batch_start_s(log->hot.shift, p);
}

void ts__log_walk_commits(ts__log *log, ts__log_walk *w)
{
	ts__commit prev = {0}, c;
	uint64_t p = batch_start(log, w->start), next;
	w->last = w->commits = 0;
	w->why = NULL;
	while (check_batch(log, p, &prev, &c, &next, &w->why) == 0) {
		prev = c;
		w->commits++;
		p = batch_start(log, next);
		if (w->until && c.lsn >= w->until) {
			w->why = c.lsn == w->until ? NULL : "the recorded head is not a commit of the log";
			break;
		}
	}
	w->stop = p;
	w->last = prev.lsn;
	w->seq = prev.seq;
}

int ts__log_batch_at(ts__log *log, ts__lsn lsn)
{
	ts__commit none = {0}, c;
	uint64_t next;
	const char *why;
	return lsn == batch_start(log, lsn) && check_batch(log, lsn, &none, &c, &next, &why) == 0;
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

/* ---- recovery ---- */

static int list_segs(const ts__log *log, uint64_t **out, size_t *n)
{
	int rc = ts__log_segments(log->dir, out, n);
	return rc == TS_ENOENT && log->readonly ? 0 : rc; /* nothing was ever written */
}

int ts__log_segments(const char *dir, uint64_t **out, size_t *n)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	size_t cap = 0;
	*out = NULL;
	*n = 0;
	if (!d)
		return ts__fail_errno(errno, "opendir %s", dir);
	while ((e = readdir(d))) {
		uint64_t seg;
		char tail[8];
		if (sscanf(e->d_name, "%16" SCNx64 "%7s", &seg, tail) != 2 || strcmp(tail, ".seg") != 0)
			continue;
		if (*n == cap) {
			uint64_t *m = realloc(*out, (cap = cap ? 2 * cap : 16) * sizeof *m);
			if (!m) {
				closedir(d);
				return ts__fail(TS_ENOMEM, "out of memory");
			}
			*out = m;
		}
		(*out)[(*n)++] = seg;
	}
	closedir(d);
	for (size_t i = 1; i < *n; i++) /* insertion sort: a handful of segments */
		for (size_t j = i; j > 0 && (*out)[j - 1] > (*out)[j]; j--) {
			uint64_t t = (*out)[j];
			(*out)[j] = (*out)[j - 1];
			(*out)[j - 1] = t;
		}
	return 0;
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
	if (hole.at > off.at && seg_msync(log, base, from, hole.at - from.at) < 0)
		return ts__fail_errno(errno, "msync %s", log->dir);
	if (hole.at >= end.at)
		return 0;
	int rc = seg_path(log, seg_of(log, log->hot.tail), path), fd = -1;
	if (rc == 0 && (fd = open(path, O_RDWR | O_CLOEXEC)) < 0)
		rc = ts__fail_errno(errno, "open %s", path);
	if (rc == 0 && fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
	                         (off_t)ts__off_bytes(hole), (off_t)(end.at - hole.at)) < 0) {
		memset(ts__off_ptr(base, hole), 0, end.at - hole.at);
		if (seg_msync(log, base, hole, end.at - hole.at) < 0)
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
			if ((rc = seg_path(log, segs[i], path)) == 0 && unlink(path) < 0)
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
		rc = map_seg(log, segs[i], 0);
	if (n) {
		log->first_seg = segs[0];
		log->last_seg = segs[n - 1];
		log->unmapped = log->released = segs[0];
	}
	return rc;
}

static int open_headpage(ts__log *log)
{
	char path[TS_PATH_MAX];
	int rc = ts__path(path, "%s/%s", log->dir, TS_HEAD_FILE), fd;
	if (rc < 0)
		return rc;
	fd = open(path, (log->readonly ? O_RDONLY : O_RDWR | O_CREAT) | O_CLOEXEC, 0644);
	if (fd < 0)
		return log->readonly && errno == ENOENT ? 0 : ts__fail_errno(errno, "open %s", path);
	struct stat st;
	if (!log->readonly && ftruncate(fd, TS_HEAD_SIZE) < 0)
		rc = ts__fail_errno(errno, "size %s", path);
	else if (log->readonly && (fstat(fd, &st) < 0 || st.st_size < TS_HEAD_SIZE)) {
		close(fd); /* cut short: reading the mapping would fault; scan instead */
		return 0;
	}
	void *p = rc < 0 ? MAP_FAILED
	                 : mmap(NULL, TS_HEAD_SIZE, log->readonly ? PROT_READ : PROT_READ | PROT_WRITE,
	                        MAP_SHARED, fd, 0);
	close(fd);
	if (rc == 0 && p == MAP_FAILED)
		rc = ts__fail_errno(errno, "mmap %s", path);
	if (rc < 0)
		return rc;
	log->headpage = p;
	return 0;
}

/* The id of the running boot of the machine, NUL-padded: HEAD is never
 * synced, so what it says outlives a process, not a power loss; the boot
 * id tells the two apart.  TSSTORE_BOOT_ID replaces it (a power-cut rig
 * that simulates a power loss without a reboot sets it; docs/powercut.md). */
static void current_boot(char out[TS_HEAD_BOOT_SIZE])
{
	const char *env = getenv("TSSTORE_BOOT_ID");
	memset(out, 0, TS_HEAD_BOOT_SIZE);
	if (env && *env) {
		strncpy(out, env, TS_HEAD_BOOT_SIZE - 1);
		return;
	}
	int fd = open("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC);
	ssize_t n = fd < 0 ? -1 : read(fd, out, TS_HEAD_BOOT_SIZE - 1);
	if (fd >= 0)
		close(fd);
	for (ssize_t i = 0; i < n; i++)
		if (out[i] == '\n')
			out[i] = '\0';
	if (n <= 0 || !out[0]) {
		/* Unknown: an id no other process shares.  All zeros would
		 * mean "no boot id" (an older writer), whose HEAD is always
		 * believed; one that matches nothing is believed only as far
		 * as it was synced, which is always safe. */
		struct timespec now;
		clock_gettime(CLOCK_REALTIME, &now);
		memset(out, 0, TS_HEAD_BOOT_SIZE);
		snprintf(out, TS_HEAD_BOOT_SIZE, "unknown-%ld-%lld.%09ld", (long)getpid(),
		         (long long)now.tv_sec, now.tv_nsec);
	}
}

/*
 * The newest commit a HEAD page p names, if it can be believed to have
 * reached the log: always when HEAD was written during this boot (a
 * process crash keeps the page cache), or by an older version or a
 * backup (no boot id); after a restart of the machine (a power loss
 * keeps only what was synced, and HEAD may have reached the disk ahead
 * of the batches it names) only when the commit lies before the position
 * the writer had synced the log through.  Returns 1 with *commit, or 0.
 */
static int head_commit(const unsigned char *p, const char *boot, uint64_t *commit)
{
	static const char none[TS_HEAD_BOOT_SIZE];
	*commit = __atomic_load_n((const uint64_t *)(const void *)(p + TS_HEAD_OFF_COMMIT),
	                          __ATOMIC_ACQUIRE);
	if (!memcmp(p + TS_HEAD_OFF_BOOT, none, TS_HEAD_BOOT_SIZE) ||
	    !memcmp(p + TS_HEAD_OFF_BOOT, boot, TS_HEAD_BOOT_SIZE))
		return 1;
	return *commit < __atomic_load_n((const uint64_t *)(const void *)(p + TS_HEAD_OFF_SYNCED),
	                                 __ATOMIC_ACQUIRE);
}

/* The writer: HEAD says the log is durable through lsn (after the msync). */
static void publish_synced(ts__log *log, uint64_t lsn)
{
	if (log->headpage && !log->readonly)
		__atomic_store_n((uint64_t *)(log->headpage + TS_HEAD_OFF_SYNCED), lsn,
		                 __ATOMIC_RELEASE);
}

static void publish(ts__log *log, uint64_t lsn)
{
	atomic_store_explicit(&log->head, lsn, memory_order_release);
	if (log->headpage && !log->readonly)
		__atomic_store_n((uint64_t *)(log->headpage + TS_HEAD_OFF_COMMIT), lsn,
		                 __ATOMIC_RELEASE);
}

static void set_clean(ts__log *log, uint32_t clean)
{
	ts__log_slot *s = &log->hot.ring[seg_of(log, log->hot.tail) & RING_MASK];
	if (atomic_load(&s->segp1) != seg_of(log, log->hot.tail) + 1)
		return;
	ts__store_u32(s->base + TS_SEGH_OFF_CLEAN, clean);
	seg_msync(log, s->base, (ts__off){0}, TS_SEG_HEADER);
}

/* ---- damage before the recorded head ---- */

/* The first segment of segs[0..n) whose file is shorter than a segment
 * (map_seg zero-extends it for the writer), or UINT64_MAX. */
static uint64_t first_short_seg(const ts__log *log, const uint64_t *segs, size_t n)
{
	char path[TS_PATH_MAX];
	struct stat st;
	for (size_t i = 0; i < n; i++)
		if (seg_path(log, segs[i], path) == 0 && stat(path, &st) == 0 &&
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
	uint32_t nroots = at_head ? cm.nroots : 0;
	if (!at_head && c && seg_left(log, recorded) >= TS_COMMIT_FIXED &&
	    ts__load_u32(c + TS_COMMIT_OFF_NROOTS) <= TS_FILLING_MAX)
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
	int rc = seg_path(log, seg_of(log, stop), path);
	return rc < 0 ? rc : ts__fail(TS_ECORRUPT, "log segment %s: the batch at log position %" PRIu64
	                              " is damaged, before the newest commit at %" PRIu64
	                              " (log/HEAD); a read-write open moves it to quarantine",
	                              path, stop, recorded);
}

/* The shift of segment seg of dir, from its header.  Returns 0,
 * TS_ENOENT, TS_ECORRUPT (a damaged or short header), TS_EVERSION or
 * TS_EIO. */
static int read_shift(const char *dir, uint64_t seg, unsigned *shift)
{
	char path[TS_PATH_MAX];
	unsigned char h[TS_SEG_HEADER];
	int rc = ts__path(path, "%s/%016" PRIx64 ".seg", dir, seg), fd = -1;
	if (rc == 0 && (fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		rc = errno == ENOENT ? TS_ENOENT : ts__fail_errno(errno, "open %s", path);
	if (rc == 0) {
		ssize_t got = pread(fd, h, sizeof h, 0);
		if (got < 0)
			rc = ts__fail_errno(errno, "read %s", path);
		else if (got != (ssize_t)sizeof h)
			rc = ts__fail(TS_ECORRUPT, "log segment %s: truncated", path);
		else
			rc = check_seg_header(h, seg, path, 0, shift);
	}
	if (fd >= 0)
		close(fd);
	return rc;
}

/* The shift of the log in dir: that of its oldest segment file (segs[0..n)
 * sorted; one a writer released since it was listed is skipped), or 0
 * when it has none. */
static int dir_shift(const char *dir, const uint64_t *segs, size_t n, unsigned *shift)
{
	int rc = 0;
	*shift = 0;
	for (size_t i = 0; i < n && (i == 0 || rc == TS_ENOENT); i++)
		rc = read_shift(dir, segs[i], shift);
	return rc == TS_ENOENT ? 0 : rc;
}

static int recover(ts__log *log, uint64_t start)
{
	uint64_t *segs, recorded = 0, short_seg = UINT64_MAX;
	size_t n;
	unsigned shift = 0;
	int rc = list_segs(log, &segs, &n);
	if (rc == 0)
		rc = dir_shift(log->dir, segs, n, &shift);
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
		/* The flag is in the segment holding the tail (set_clean); a
		 * segment prepared beyond it has never been written. */
		ts__log_slot *ts = &log->hot.ring[seg_of(log, log->hot.tail) & RING_MASK];
		log->was_clean = n == 0 || (atomic_load(&ts->segp1) == seg_of(log, log->hot.tail) + 1 &&
		                            ts__load_u32(ts->base + TS_SEGH_OFF_CLEAN) == 1);
		if (log->readonly)
			rc = refuse_lost(log, recorded, segs, n);
		else if ((rc = keep_lost(log, recorded, segs, n, short_seg)) == 0 &&
		         (rc = erase_after(log, segs, n)) == 0) {
			log->synced = log->hot.tail;
			set_clean(log, 0);
		}
	}
	free(segs);
	return rc;
}

uint64_t ts__log_seg_size(const ts__log *log) { return seg_data(log); }
uint64_t ts__log_seg_of(const ts__log *log, ts__lsn lsn) { return seg_of(log, lsn); }

int ts__log_open(const char *dir, int readonly, ts__lsn start_lsn, uint64_t seg_size,
                 ts__log **out)
{
	ts__log *log = calloc(1, sizeof *log);
	int rc;
	*out = NULL;
	if (!log || !(log->dir = strdup(dir))) {
		free(log);
		return ts__fail(TS_ENOMEM, "out of memory");
	}
	log->hot.shift = shift_of(seg_size ? seg_size : TS_SEG_DATA);
	if (readonly && log->hot.shift) /* until learnt from a segment (recover) */
		log->hot.shift = TS_SEG_DATA_SHIFT;
	if (!log->hot.shift) {
		free(log->dir);
		free(log);
		return ts__fail(TS_EINVAL, "log segment size %" PRIu64 ": want a power of two "
		                "from 1 MiB to 64 MiB", seg_size);
	}
	log->readonly = readonly;
	log->page = opening_page();
	current_boot(log->boot);
	pthread_mutex_init(&log->mu, NULL);
	if (!readonly && (rc = ts__mkdirs(dir, 0755)) < 0)
		goto fail;
	if ((rc = recover(log, start_lsn)) < 0 || (rc = open_headpage(log)) < 0)
		goto fail;
	if (!readonly) {
		/* recovery punched out the rest of the tail's segment */
		if (seg_left(log, log->hot.tail) > TS_LOG_WARM_AFTER)
			log->warm_at = log->hot.tail + TS_LOG_WARM_AFTER;
		memcpy(log->headpage + TS_HEAD_OFF_MAGIC, TS_HEAD_MAGIC, 8);
		ts__store_u64(log->headpage + TS_HEAD_OFF_PID, (uint64_t)getpid());
		/* the commit first: a HEAD of an older boot is believed only
		 * below its synced position, which this moves */
		publish(log, atomic_load(&log->head));
		memcpy(log->headpage + TS_HEAD_OFF_BOOT, log->boot, TS_HEAD_BOOT_SIZE);
		publish_synced(log, log->synced);
	}
	*out = log;
	return 0;
fail:
	ts__log_close(log, 0);
	return rc;
}

void ts__log_stop_preparing(ts__log *log)
{
	if (log) {
		assert(writer_locked(log));
		prep_stop(log);
	}
}

void ts__log_close(ts__log *log, int clean)
{
	if (!log)
		return;
	prep_stop(log);
	if (!log->readonly && sync_all(log) == 0 && clean)
		set_clean(log, 1);
	for (int i = 0; i < TS_LOG_RING; i++)
		if (log->hot.ring[i].base)
			munmap(log->hot.ring[i].base, seg_file(log));
	if (log->headpage)
		munmap(log->headpage, TS_HEAD_SIZE);
	pthread_mutex_destroy(&log->mu);
	free(log->dir);
	free(log);
}

uint64_t ts__log_recovered_commits(const ts__log *log) { return log->recovered; }
ts__lsn ts__log_quarantined(const ts__log *log, uint64_t *commits)
{
	*commits = log->cut_commits;
	return log->cut_lsn;
}
int ts__log_was_clean(const ts__log *log) { return log->was_clean; }
int64_t ts__log_segment_wait(const ts__log *log, int64_t *max)
{
	assert(writer_locked(log));
	*max = log->seg_wait_max_ns;
	return log->seg_wait_ns;
}
ts__lsn ts__log_tail(const ts__log *log) { return log->hot.tail; }

/* Read-only: adopt the writer's newest commit if it is a valid one. */
static void refresh_head(ts__log *log)
{
	ts__commit c;
	uint64_t h;
	if (!head_commit(log->headpage, log->boot, &h))
		return;
	/* Only forward: commits are published in log order, so a HEAD behind
	 * the commit already found is stale or damaged, and going back to it
	 * would drop rows the reader served (the CAS keeps two threads
	 * refreshing at once from going back either). */
	uint64_t cur = atomic_load_explicit(&log->head, memory_order_relaxed);
	if (h <= cur || ts__log_read_commit(log, h, &c) < 0)
		return;
	while (h > cur && !atomic_compare_exchange_weak_explicit(&log->head, &cur, h,
	                                                         memory_order_release,
	                                                         memory_order_relaxed))
		;
}

ts__lsn ts__log_head(ts__log *log)
{
	if (log->readonly && log->headpage)
		refresh_head(log);
	return atomic_load_explicit(&log->head, memory_order_acquire);
}

/* ---- the segment preparer ---- */

/* Create (if missing), map and write-fault segment seg; NULL on failure,
 * which leaves the work to the writer and its error reporting. */
static unsigned char *prepare_seg(ts__log *log, uint64_t seg)
{
	char path[TS_PATH_MAX];
	int fresh = 0;
	if (seg_path(log, seg, path) < 0)
		return NULL;
	if (access(path, F_OK) < 0) {
		if (create_seg(log, seg, path) < 0)
			return NULL;
		fresh = 1;
	}
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
	if (check_seg_header(base, seg, path, log->hot.shift, NULL) < 0) {
		munmap(base, seg_file(log));
		return NULL;
	}
	if (fresh) /* all zeros, and nobody else's yet: a store per page faulted */
		for (uint64_t off = TS_SEG_HEADER, step = fault_page(); off < seg_file(log); off += step)
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
			uint64_t seg = p->want - 1;
			pthread_mutex_unlock(&p->mu);
			unsigned char *base = prepare_seg(log, seg);
			pthread_mutex_lock(&p->mu);
			if (p->base)
				munmap(p->base, seg_file(log));
			p->base = base;
			p->ready = base ? seg + 1 : 0;
			if (p->want == seg + 1 && !base)
				p->want = 0; /* failed: the writer will try itself */
			pthread_cond_broadcast(&p->cv);
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
	if (pthread_create(&p->thread, NULL, prep_main, log) != 0) {
		pthread_cond_destroy(&p->cv);
		pthread_mutex_destroy(&p->mu);
		return 0;
	}
	p->started = 1;
	return 1;
}

/* Ask for segment seg to be prepared. */
static void prep_kick(ts__log *log, uint64_t seg)
{
	struct prep *p = &log->prep;
	if (!prep_start(log))
		return;
	pthread_mutex_lock(&p->mu);
	p->want = seg + 1;
	pthread_cond_signal(&p->cv);
	pthread_mutex_unlock(&p->mu);
}

/* Ask for the `ahead` bytes of segment seg after the tail (which is in
 * it), from the page after the tail's, to be warmed; this replaces what
 * is left of an earlier request (see "Warming the writer's own
 * segments"). */
static void prep_warm(ts__log *log, uint64_t seg, uint64_t ahead)
{
	struct prep *p = &log->prep;
	ts__log_slot *s = &log->hot.ring[seg & RING_MASK];
	/* the tail's offset in seg: its end, when a record filled seg */
	ts__off at = {TS_SEG_HEADER + (log->hot.tail - seg_lsn(log, seg))};
	ts__off from = page_up(log, at), to = page_up(log, (ts__off){at.at + ahead});
	assert(page_aligned(log, from));
	if (to.at > seg_file(log))
		to.at = seg_file(log);
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
static int prep_take(ts__log *log, uint64_t seg)
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
		p->base = NULL;
		p->ready = 0;
	}
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

static void prep_stop(ts__log *log)
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

/* ---- appending ---- */

/* Map segment seg, which the tail is entering: the preparer's mapping if
 * it has one (waiting while it works on seg), else one of the writer's
 * own.  The preparer is asked for seg + 1 later, by ts__log_alloc_slow. */
static int enter_segment(ts__log *log, uint64_t seg)
{
	if (seg - log->first_seg >= TS_LOG_RING - 1)
		return ts__fail(TS_ENOSPC, "log %s: %d segments are live; flush the table",
		                log->dir, TS_LOG_RING);
	struct timespec a, b;
	clock_gettime(CLOCK_MONOTONIC, &a);
	int prepared = prep_take(log, seg), rc = prepared ? 0 : map_seg(log, seg, 1);
	log->warm_at = prepared ? 0 : (seg_lsn(log, seg)) + TS_LOG_WARM_AFTER;
	clock_gettime(CLOCK_MONOTONIC, &b);
	int64_t waited = (int64_t)(b.tv_sec - a.tv_sec) * 1000000000 + (b.tv_nsec - a.tv_nsec);
	log->seg_wait_ns += waited;
	if (waited > log->seg_wait_max_ns)
		log->seg_wait_max_ns = waited;
	if (rc < 0)
		return rc;
	log->last_seg = seg;
	return 0;
}

/*
 * Make sure n bytes fit at the tail inside one mapped segment, moving the
 * tail to the next segment if they do not fit in this one.
 *
 * The tail can also stand at the first LSN of a segment it never entered:
 * when a record ended exactly at the end of the previous segment, or when
 * batch_start skipped the few bytes left there.  That segment is the one
 * the preparer was asked for, so it too must be entered through
 * prep_take.  Mapping it here directly raced the preparer: both created
 * the same .seg.tmp (one rename failed with ENOENT), or the writer
 * appended to the file while the preparer, taking it for fresh, stored a
 * zero on every page of it -- over the writer's rows and AVL nodes.
 */
static int reserve(ts__log *log, uint64_t n)
{
	if (n > seg_data(log))
		return ts__fail(TS_ETOOBIG, "log record of %" PRIu64 " bytes is larger than a segment", n);
	uint64_t seg = seg_of(log, log->hot.tail) + (seg_left(log, log->hot.tail) < n);
	ts__log_slot *s = &log->hot.ring[seg & RING_MASK];
	int rc = atomic_load_explicit(&s->segp1, memory_order_relaxed) == seg + 1
	             ? 0 : enter_segment(log, seg);
	if (rc == 0 && seg != seg_of(log, log->hot.tail)) {
		log->hot.tail = seg_lsn(log, seg);
		log->hot.win_end = 0;
	}
	return rc;
}

int ts__log_begin(ts__log *log, ts__lsn *batch_lsn)
{
	ts__lsn lsn;
	void *p;
	assert(writer_locked(log) && !log->readonly && !log->in_batch);
	log->hot.tail = batch_start(log, log->hot.tail);
	log->hot.win_end = 0;
	int rc = ts__log_alloc(log, TS_BATCH_HEADER_SIZE, &lsn, &p);
	if (rc < 0)
		return rc;
	ts__store_u32(p, TS_BATCH_MAGIC);
	ts__store_u32((char *)p + 4, 0);
	log->batch = *batch_lsn = lsn;
	log->in_batch = 1;
	return 0;
}

int ts__log_alloc_slow(ts__log *log, size_t n, ts__lsn *lsn, void **p)
{
	uint64_t size = align8(n);
	assert(writer_locked(log) && !log->readonly);
	int rc = reserve(log, size);
	if (rc < 0)
		return rc;
	ts__log_hot *h = &log->hot;
	*lsn = h->tail;
	*p = ts__log_ptr(log, h->tail);
	h->tail += size;
	/*
	 * The rest of this segment is the window of the inline fast path, but
	 * only up to its middle while the tail is in its first half: the next
	 * segment is asked of the preparer when the tail passes the middle.
	 * Asking on entry instead cost every table 64 MiB of written zeros
	 * at its first insert, which a database of many small tables (or a
	 * test creating fifty at once) pays in disk writes and stalls.
	 */
	uint64_t seg = seg_of(log, h->tail - 1), end = seg_lsn(log, seg + 1);
	uint64_t mid = end - seg_data(log) / 2;
	if (log->warm_at && seg_of(log, log->warm_at) != seg)
		log->warm_at = 0; /* left behind */
	if (h->tail < mid) {
		end = mid;
	} else if (log->asked != seg + 2) {
		if (log->warm_at) { /* a big table: the rest of this segment first */
			prep_warm(log, seg, seg_data(log));
			log->warm_at = 0;
		}
		prep_kick(log, seg + 1);
		log->asked = seg + 2;
	}
	if (log->warm_at && h->tail >= log->warm_at) {
		prep_warm(log, seg, TS_LOG_WARM_AHEAD);
		log->warm_at = h->tail + TS_LOG_WARM_STEP;
		if (seg_of(log, log->warm_at) != seg) /* the warming reached the end */
			log->warm_at = 0;
		else if (log->warm_at < end)
			end = log->warm_at;
	} else if (log->warm_at && log->warm_at < end) {
		end = log->warm_at;
	}
	h->win_at = (unsigned char *)*p + size;
	h->win_end = end;
	return 0;
}

static void encode_root(unsigned char *p, const ts__root *r)
{
	ts__store_u64(p + TS_ROOT_OFF_PERIOD_START, (uint64_t)r->period_start);
	ts__store_u64(p + TS_ROOT_OFF_PERIOD_LEN, (uint64_t)r->period_len);
	ts__store_u64(p + TS_ROOT_OFF_ROOT, r->root);
	ts__store_u64(p + TS_ROOT_OFF_ROWS, r->rows);
	ts__store_u64(p + TS_ROOT_OFF_BYTES, r->bytes);
	ts__store_u64(p + TS_ROOT_OFF_MIN_TS, (uint64_t)r->min_ts);
	ts__store_u64(p + TS_ROOT_OFF_MAX_TS, (uint64_t)r->max_ts);
	ts__store_u64(p + TS_ROOT_OFF_BORN, r->born);
	ts__store_u64(p + TS_ROOT_OFF_SINCE, r->since);
	ts__store_u32(p + TS_ROOT_OFF_FLAGS, r->flags);
	ts__store_u32(p + TS_ROOT_OFF_ZERO, 0);
}

int ts__log_commit(ts__log *log, const ts__root *roots, uint32_t nroots,
                   uint64_t rows, int64_t now)
{
	ts__lsn lsn;
	uint64_t size = TS_COMMIT_SIZE((uint64_t)nroots);
	unsigned char *c;
	uint32_t crc;
	assert(writer_locked(log) && log->in_batch);
	int rc = ts__log_alloc(log, size, &lsn, (void **)&c);
	if (rc < 0) {
		ts__log_abort(log);
		return rc;
	}
	unsigned char *h = ts__log_ptr(log, log->batch);
	ts__store_u64(h + 8, lsn - log->batch - TS_BATCH_HEADER_SIZE); /* body_len */
	ts__store_u32(c + TS_COMMIT_OFF_MAGIC, TS_COMMIT_MAGIC);
	ts__store_u32(c + TS_COMMIT_OFF_NROOTS, nroots);
	ts__store_u64(c + TS_COMMIT_OFF_SEQ, log->seq + 1);
	ts__store_u64(c + TS_COMMIT_OFF_BATCH, log->batch);
	ts__store_u64(c + TS_COMMIT_OFF_PREV, atomic_load_explicit(&log->head, memory_order_relaxed));
	ts__store_u64(c + TS_COMMIT_OFF_TIME, (uint64_t)now);
	ts__store_u64(c + TS_COMMIT_OFF_ROWS, rows);
	for (uint32_t i = 0; i < nroots; i++)
		encode_root(c + TS_COMMIT_FIXED + (size_t)i * TS_ROOT_SIZE, &roots[i]);
	crc_range(log, log->batch, lsn + size - TS_COMMIT_TRAILER, &crc);
	ts__store_u32(c + size - 8, crc);
	ts__store_u32(c + size - 4, (uint32_t)size);
	log->seq++;
	log->in_batch = 0;
	publish(log, lsn);
	return 0;
}

void ts__log_unalloc(ts__log *log, ts__lsn lsn)
{
	assert(writer_locked(log) && log->in_batch);
	assert(lsn > log->batch && lsn < log->hot.tail);
	log->hot.tail = lsn;
	log->hot.win_end = 0; /* the next ts__log_alloc finds its window again */
}

void ts__log_abort(ts__log *log)
{
	assert(writer_locked(log));
	if (log->in_batch) {
		log->hot.tail = log->batch;
		log->hot.win_end = 0;
	}
	log->in_batch = 0;
}

ts__lsn ts__log_next_batch(const ts__log *log)
{
	return batch_start(log, log->hot.tail);
}

/* Unmap the released segments once no snapshot is pinned; mu is held.
 * A snapshot pinned after this cannot need them: it pins (under mu)
 * before it reads the head commit, and a segment is released only after
 * a commit that names no tree in it was published and a descriptor that
 * names the tablets holding its rows (flush.c), so the mutex orders
 * either the pin before this check or the new commit before that
 * snapshot's reading it. */
static void unmap_released_locked(ts__log *log)
{
	assert(mu_held(log));
	if (log->pins != 0)
		return;
	for (; log->unmapped < log->released; log->unmapped++) {
		ts__log_slot *s = &log->hot.ring[log->unmapped & RING_MASK];
		if (atomic_load(&s->segp1) == log->unmapped + 1) {
			atomic_store(&s->segp1, 0);
			munmap(s->base, seg_file(log));
			s->base = NULL;
		}
	}
}

void ts__log_pin(ts__log *log)
{
	mu_lock(log);
	log->pins++;
	mu_unlock(log);
}

void ts__log_unpin(ts__log *log)
{
	mu_lock(log);
	assert(log->pins > 0);
	if (--log->pins == 0)
		unmap_released_locked(log);
	mu_unlock(log);
}

/* Segments below seg are no longer needed: unmap them when no snapshot
 * can read them any more. */
static void note_released(ts__log *log, uint64_t seg)
{
	mu_lock(log);
	if (seg > log->released)
		log->released = seg;
	unmap_released_locked(log);
	mu_unlock(log);
}

int ts__log_release(ts__log *log, ts__lsn lsn)
{
	char path[TS_PATH_MAX];
	int rc = 0;
	assert(writer_locked(log) && !log->readonly);
	uint64_t upto = seg_of(log, lsn);
	if (upto > seg_of(log, log->hot.tail))
		upto = seg_of(log, log->hot.tail);
	while (log->first_seg < upto) {
		if ((rc = seg_path(log, log->first_seg, path)) < 0)
			return rc;
		if (unlink(path) < 0 && errno != ENOENT)
			return ts__fail_errno(errno, "unlink %s", path);
		log->first_seg++;
	}
	note_released(log, log->first_seg);
	return 0;
}

void ts__log_forget(ts__log *log, ts__lsn lsn)
{
	note_released(log, seg_of(log, lsn));
}

int ts__log_sync_dir(ts__log *log)
{
	return ts__fsync_dir(log->dir);
}

/* The LSNs [*from, *to) not yet durable; the writer's. */
static void unsynced(const ts__log *log, ts__lsn *from, ts__lsn *to)
{
	*from = log->synced;
	*to = log->readonly ? log->synced : log->in_batch ? log->batch : log->hot.tail;
}

/* [.., to) is durable; the writer's. */
static void synced_to(ts__log *log, ts__lsn to)
{
	if (to > log->synced) {
		log->synced = to;
		publish_synced(log, to);
	}
}

void ts__log_sync_range(const ts__log *log, ts__lsn *from, ts__lsn *to)
{
	assert(writer_locked(log));
	unsynced(log, from, to);
}

int ts__log_sync_pages(ts__log *log, ts__lsn from, ts__lsn to)
{
	while (from < to) {
		uint64_t n = seg_left(log, from) < to - from ? seg_left(log, from) : to - from;
		unsigned char *p = ts__log_ptr(log, from);
		/* from the page holding from, in the segment's mapping */
		ts__off off = ts__off_of(log->hot.shift, from), a = page_down(log, off);
		if (p && seg_msync(log, p - ts__off_bytes(off), a, n + (off.at - a.at)) < 0)
			return ts__fail_errno(errno, "msync %s", log->dir);
		from += n;
	}
	return 0;
}

void ts__log_sync_done(ts__log *log, ts__lsn to)
{
	assert(writer_locked(log));
	synced_to(log, to);
}

/* ts__log_sync without its assertion: also what closing runs, when the
 * writer is alone and holds no lock. */
static int sync_all(ts__log *log)
{
	ts__lsn from, to;
	unsynced(log, &from, &to);
	int rc = ts__log_sync_pages(log, from, to);
	if (rc == 0)
		synced_to(log, to);
	return rc;
}

int ts__log_sync(ts__log *log)
{
	assert(writer_locked(log));
	return sync_all(log);
}

/* ---- verifying and copying (check.c, backup.c) ---- */

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
		rc = check_seg_header(h, seg, path, shift, &found);
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

int ts__log_recorded_head(const char *dir, ts__lsn *head)
{
	char path[TS_PATH_MAX];
	struct stat st;
	int fd, found = 0;
	*head = 0;
	if (ts__path(path, "%s/%s", dir, TS_HEAD_FILE) < 0 ||
	    (fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return 0;
	/* Mapped, as the writer shares it, so the LSN is read whole. */
	const unsigned char *p = fstat(fd, &st) == 0 && st.st_size >= TS_HEAD_SIZE
	                             ? mmap(NULL, TS_HEAD_SIZE, PROT_READ, MAP_SHARED, fd, 0)
	                             : MAP_FAILED;
	close(fd);
	if (p == MAP_FAILED)
		return 0;
	char boot[TS_HEAD_BOOT_SIZE];
	current_boot(boot);
	if (memcmp(p + TS_HEAD_OFF_MAGIC, TS_HEAD_MAGIC, 8) == 0 && head_commit(p, boot, head))
		found = 1;
	else
		*head = 0;
	munmap((void *)p, TS_HEAD_SIZE);
	return found;
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
	log->page = opening_page();
	pthread_mutex_init(&log->mu, NULL);
	uint64_t *segs = NULL;
	size_t n = 0;
	int rc = ts__log_segments(dir, &segs, &n);
	/* a log that cannot tell (no segments, or a damaged oldest one) is
	 * walked with the default size: the walk then ends, and the check of
	 * each segment says why */
	unsigned shift = 0;
	if (rc == 0 && dir_shift(dir, segs, n, &shift) == 0 && shift)
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
	    (nroots = ts__load_u32(c + TS_COMMIT_OFF_NROOTS)) <= TS_FILLING_MAX &&
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
		rc = dir_shift(src_dir, segs, nsegs, &shift);
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
