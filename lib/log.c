/*
 * log.c -- a table's log: opening and closing it, its pages, locks and
 * segment files, commits and HEAD, appending, releasing and syncing.
 * Recovery is log_recover.c, the segment preparer log_prepare.c,
 * verifying and copying a log for check and backup log_copy.c; the
 * struct ts__log they all work on is in log_int.h.
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
 * later; released segments are deleted and unmapped off the writer's
 * path ("Dropping released segments").
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
 * slots' mappings and the release counters (asserted by mu_held), and
 * no munmap or unlink runs under it; drop_mu keeps one thread at a time
 * dropping released segments.
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
#include <time.h>
#include <unistd.h>

#include "buf.h"
#include "crc32c.h"
#include "error.h"
#include "fsutil.h"
#include "tslimits.h"
#include "log.h"
#include "log_int.h"

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
size_t ts__log_opening_page(void)
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
size_t ts__log_fault_page(void)
{
	pthread_once(&page_once, page_init);
	return real_page;
}

/* msync [from, from + len) of the segment file mapped at base: the one
 * way the log msyncs a segment. */
int ts__log_seg_msync(const ts__log *log, unsigned char *base, ts__off from, uint64_t len)
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

/* ---- segment files ---- */

int ts__log_seg_path(const ts__log *log, uint64_t seg, char *out)
{
	return ts__path(out, "%s/%016" PRIx64 ".seg", log->dir, seg);
}

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
int ts__log_check_seg_header(const unsigned char *h, uint64_t seg, const char *path,
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
			rc = ts__log_check_seg_header(h, seg, path, 0, shift);
	}
	if (fd >= 0)
		close(fd);
	return rc;
}

/* The shift of the log in dir: that of its oldest segment file (segs[0..n)
 * sorted; one a writer released since it was listed is skipped), or 0
 * when it has none. */
int ts__log_dir_shift(const char *dir, const uint64_t *segs, size_t n, unsigned *shift)
{
	int rc = 0;
	*shift = 0;
	for (size_t i = 0; i < n && (i == 0 || rc == TS_ENOENT); i++)
		rc = read_shift(dir, segs[i], shift);
	return rc == TS_ENOENT ? 0 : rc;
}

/* Map segment seg into its slot.  create: make the file if missing.
 * Returns 0, TS_ENOENT (no such segment) or another error. */
int ts__log_map_seg(ts__log *log, uint64_t seg, int create)
{
	char path[TS_PATH_MAX];
	ts__log_slot *s = &log->hot.ring[seg & RING_MASK];
	int rc, fd, fresh = 0, prot = log->readonly ? PROT_READ : PROT_READ | PROT_WRITE;
	if (atomic_load_explicit(&s->segp1, memory_order_acquire) == seg + 1)
		return 0;
	if ((rc = ts__log_seg_path(log, seg, path)) < 0)
		return rc;
	if (create && access(path, F_OK) < 0) {
		uint64_t alloc = ts__log_alloc_first(log);
		if ((rc = ts__log_create_seg(log, seg, path, alloc)) < 0)
			return rc;
		fresh = 1;
		log->alloc_seg = seg + 1;
		log->alloc_end = alloc;
		alloc_step_grow(log);
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
	if ((rc = ts__log_check_seg_header(base, seg, path, log->hot.shift, NULL)) < 0) {
		munmap(base, seg_file(log));
		return rc;
	}
	if (s->base)
		munmap(s->base, seg_file(log));
	s->base = base;
	atomic_store_explicit(&s->segp1, seg + 1, memory_order_release);
	return 0;
}

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
		rc = ts__log_dir_shift(log->dir, segs, n, &shift);
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
		int rc = ts__log_map_seg(log, seg, 0);
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
	if (c->nroots > TS_COMMIT_ROOTS_MAX ||
	    TS_COMMIT_SIZE((uint64_t)c->nroots) > seg_left(log, lsn) ||
	    ts__load_u32(p + TS_COMMIT_SIZE(c->nroots) - 4) != TS_COMMIT_SIZE(c->nroots))
		return ts__fail(TS_ECORRUPT, "log %s: malformed commit record at %" PRIu64,
		                log->dir, lsn);
	c->has_tombs = 0;
	if (c->nroots > 0 &&
	    (ts__load_u32(c->roots + (size_t)(c->nroots - 1) * TS_ROOT_SIZE + TS_ROOT_OFF_FLAGS) &
	     TS_ROOT_TOMBSTONES)) {
		c->nroots--; /* the tombstone root is not a tree */
		c->has_tombs = 1;
	}
	if (c->nroots > TS_FILLING_MAX)
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
	r->last = 0;
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
	uint64_t end = at + TS_COMMIT_SIZE((uint64_t)c->nroots + (c->has_tombs != 0));
	if (crc_range(log, p, end - TS_COMMIT_TRAILER, &crc) < 0)
		return *why = "a segment file of the batch is missing or unreadable", -1;
	if (crc != ts__load_u32((const unsigned char *)ts__log_ptr(log, end - TS_COMMIT_TRAILER)))
		return *why = "checksum mismatch", -1;
	*next = end;
	return 0;
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

/* ---- HEAD ---- */

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
	__atomic_store_n(&log->headpage, (unsigned char *)p, __ATOMIC_RELEASE);
	return 0;
}

/* The kernel's boot id, read once per process (it cannot change while
 * the process runs); boot_known is set, with a release, only after
 * boot_cached holds it, which is then never written again.  A failed
 * read is not remembered: the next call tries again. */
static char boot_cached[TS_HEAD_BOOT_SIZE];
static int boot_known;
static pthread_mutex_t boot_mu = PTHREAD_MUTEX_INITIALIZER;

/* The id of the running boot of the machine, NUL-padded: HEAD is never
 * synced, so what it says outlives a process, not a power loss; the boot
 * id tells the two apart.  TSSTORE_BOOT_ID replaces it (a power-cut rig
 * that simulates a power loss without a reboot sets it; docs/powercut.md),
 * looked at on every call; the kernel's is read once (boot_cached). */
void ts__log_boot_id(char out[TS_HEAD_BOOT_SIZE])
{
	const char *env = getenv("TSSTORE_BOOT_ID");
	memset(out, 0, TS_HEAD_BOOT_SIZE);
	if (env && *env) {
		strncpy(out, env, TS_HEAD_BOOT_SIZE - 1);
		return;
	}
	if (__atomic_load_n(&boot_known, __ATOMIC_ACQUIRE)) {
		memcpy(out, boot_cached, TS_HEAD_BOOT_SIZE);
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
		return;
	}
	pthread_mutex_lock(&boot_mu);
	if (!boot_known) {
		memcpy(boot_cached, out, TS_HEAD_BOOT_SIZE);
		__atomic_store_n(&boot_known, 1, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&boot_mu);
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

void ts__log_set_clean(ts__log *log, uint32_t clean)
{
	ts__log_slot *s = &log->hot.ring[seg_of(log, log->hot.tail) & RING_MASK];
	if (atomic_load(&s->segp1) != seg_of(log, log->hot.tail) + 1)
		return;
	ts__store_u32(s->base + TS_SEGH_OFF_CLEAN, clean);
	ts__log_seg_msync(log, s->base, (ts__off){0}, TS_SEG_HEADER);
}

int ts__log_head_map(const char *dir, const unsigned char **page)
{
	char path[TS_PATH_MAX];
	struct stat st;
	int fd;
	*page = NULL;
	if (ts__path(path, "%s/%s", dir, TS_HEAD_FILE) < 0 ||
	    (fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return 0;
	/* Mapped, as the writer shares it, so the LSN is read whole. */
	void *p = fstat(fd, &st) == 0 && st.st_size >= TS_HEAD_SIZE
	                  ? mmap(NULL, TS_HEAD_SIZE, PROT_READ, MAP_SHARED, fd, 0)
	                  : MAP_FAILED;
	close(fd);
	if (p == MAP_FAILED)
		return 0;
	*page = p;
	return 1;
}

void ts__log_head_unmap(const unsigned char *page)
{
	if (page)
		munmap((void *)page, TS_HEAD_SIZE);
}

int ts__log_head_page_commit(const unsigned char *page, ts__lsn *head)
{
	char boot[TS_HEAD_BOOT_SIZE];
	ts__log_boot_id(boot);
	if (memcmp(page + TS_HEAD_OFF_MAGIC, TS_HEAD_MAGIC, 8) == 0 && head_commit(page, boot, head))
		return 1;
	*head = 0;
	return 0;
}

int ts__log_recorded_head(const char *dir, ts__lsn *head)
{
	const unsigned char *p;
	*head = 0;
	if (!ts__log_head_map(dir, &p))
		return 0;
	int found = ts__log_head_page_commit(p, head);
	ts__log_head_unmap(p);
	return found;
}

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
	if (log->readonly && !__atomic_load_n(&log->headpage, __ATOMIC_ACQUIRE)) {
		/* opened before the table's first commit (a new table; a
		 * standby's, before its first log bytes): HEAD may be there now,
		 * and then it is mapped for good; until then, nothing is new */
		mu_lock(log);
		if (!log->headpage && open_headpage(log) < 0)
			ts__clear_error(); /* tried again at the next read */
		mu_unlock(log);
	}
	if (log->readonly && __atomic_load_n(&log->headpage, __ATOMIC_ACQUIRE))
		refresh_head(log);
	return atomic_load_explicit(&log->head, memory_order_acquire);
}

/* ---- opening and closing ---- */

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
	log->alloc_step = TS_LOG_ALLOC_FIRST;
	if (readonly && log->hot.shift) /* until learnt from a segment (ts__log_recover) */
		log->hot.shift = TS_SEG_DATA_SHIFT;
	if (!log->hot.shift) {
		free(log->dir);
		free(log);
		return ts__fail(TS_EINVAL, "log segment size %" PRIu64 ": want a power of two "
		                "from 1 MiB to 64 MiB", seg_size);
	}
	log->readonly = readonly;
	log->page = ts__log_opening_page();
	ts__log_boot_id(log->boot);
	pthread_mutex_init(&log->mu, NULL);
	pthread_mutex_init(&log->drop_mu, NULL);
	if (!readonly && (rc = ts__mkdirs(dir, 0755)) < 0)
		goto fail;
	if ((rc = ts__log_recover(log, start_lsn)) < 0 || (rc = open_headpage(log)) < 0)
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
		ts__log_prep_stop(log);
		if (!log->readonly) /* what it had left, under the path it had */
			(void)ts__log_drop_released(log);
	}
}

void ts__log_close(ts__log *log, int clean)
{
	if (!log)
		return;
	ts__log_prep_stop(log);
	if (!log->readonly) /* what the preparer had left of the released segments */
		(void)ts__log_drop_released(log);
	if (!log->readonly && sync_all(log) == 0 && clean)
		ts__log_set_clean(log, 1);
	for (int i = 0; i < TS_LOG_RING; i++)
		if (log->hot.ring[i].base)
			munmap(log->hot.ring[i].base, seg_file(log));
	if (log->headpage)
		munmap(log->headpage, TS_HEAD_SIZE);
	pthread_mutex_destroy(&log->drop_mu);
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
	uint64_t alloc = TS_SEG_HEADER;
	int prepared = ts__log_prep_take(log, seg, &alloc);
	int rc = prepared ? 0 : ts__log_map_seg(log, seg, 1);
	if (prepared) {
		log->alloc_seg = seg + 1;
		log->alloc_end = alloc;
		if (alloc > TS_SEG_HEADER) /* made with the step asked for */
			alloc_step_grow(log);
	}
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
 * ts__log_prep_take.  Mapping it here directly raced the preparer: both
 * created the same .seg.tmp (one rename failed with ENOENT), or the
 * writer appended to the file while the preparer, taking it for fresh,
 * stored a zero on every page of it -- over the writer's rows and AVL
 * nodes.
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
	ts__log_hot *h = &log->hot;
	uint64_t tseg = seg_of(log, h->tail);
	if (rc == 0) /* the record's blocks, before any store into them */
		rc = ts__log_alloc_seg(log, tseg, TS_SEG_HEADER + (h->tail - seg_lsn(log, tseg)) + size);
	if (rc < 0)
		return rc;
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
			ts__log_prep_warm(log, seg, seg_data(log));
			log->warm_at = 0;
		}
		ts__log_prep_kick(log, seg + 1, ts__log_alloc_first(log));
		log->asked = seg + 2;
	}
	if (log->warm_at && h->tail >= log->warm_at) {
		ts__log_prep_warm(log, seg, TS_LOG_WARM_AHEAD);
		log->warm_at = h->tail + TS_LOG_WARM_STEP;
		if (seg_of(log, log->warm_at) != seg) /* the warming reached the end */
			log->warm_at = 0;
		else if (log->warm_at < end)
			end = log->warm_at;
	} else if (log->warm_at && log->warm_at < end) {
		end = log->warm_at;
	}
	/* the window stops where the allocated blocks do */
	uint64_t alloc_lsn = seg_lsn(log, tseg) + (log->alloc_end - TS_SEG_HEADER);
	if (end > alloc_lsn)
		end = alloc_lsn;
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

int ts__log_next_segment(ts__log *log)
{
	ts__lsn lsn;
	void *p;
	assert(writer_locked(log) && log->in_batch);
	uint64_t left = seg_left(log, log->hot.tail);
	if (left == seg_data(log))
		return 0; /* already at a segment's start */
	/* a record one word longer than what is left goes to the next
	 * segment's start; given back, the commit takes its place */
	int rc = ts__log_alloc(log, left + 8, &lsn, &p);
	if (rc == 0)
		ts__log_unalloc(log, lsn);
	return rc;
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

/* ---- releasing and syncing ---- */

/*
 * Dropping released segments.  A flush releases the segments wholly
 * before its flushed position under the writer's lock (ts__log_release),
 * which only moves first_seg and released.  Deleting their files and
 * unmapping them is the costly part -- munmap of 64 MiB mappings, and the
 * kernel dropping the page cache of each file once it is both unlinked
 * and unmapped: an eighth of a flush that released 1.3 GB of log -- and
 * it ran on the flushing thread under the writer's lock, so inserts
 * waited, and the munmaps under mu, so snapshots taking or dropping their
 * pins waited.  Now the preparer does it after the writer's release, in
 * steps between the segments it prepares and warms (ts__log_drop_step),
 * outside both locks; a caller that needs it done at once (a purge,
 * closing the log, stopping the preparer) runs the steps itself
 * (ts__log_drop_released), and so does the writer when the preparer
 * cannot run.  A failure of the preparer's is reported to nobody -- the
 * files are named by no descriptor any more (test_fault's "absorbed"
 * calls) -- and the step is tried again after the next release.
 *
 * Crash safety is unchanged: the files a release names lie wholly before
 * the flushed position of a descriptor already durable, and recovery
 * starts at that position whatever older segment files are left -- as
 * after a crash between a flush's descriptor and its release, which was
 * always possible (test_crash).  Readers keep their segments as before:
 * a segment is unmapped only once no snapshot may read it (claim_unmap);
 * it is claimed under mu, its slot emptied so that no later lookup finds
 * it, and unmapped after mu is dropped -- the address stays mapped until
 * then, so nothing else can be given it meanwhile.  Readers in other
 * processes keep the pages they mapped (unlink semantics).
 */

/* A pin is one atomic add and an unpin one subtract, without mu: a
 * latest lookup took and dropped mu twice for them.  What mu ordered,
 * the pins' modification order does: whoever decides that no snapshot
 * is pinned (claim_unmap, ts__log_release) reads pins with a read-modify-
 * write (pins_now), after the release that made the segment unneeded
 * -- so either it reads a pin, or every later pin and unpin reads its
 * write and synchronises with it: that snapshot then reads the commit
 * that no longer names the segment, that last unpin the new released
 * (and unmaps it itself). */
static long pins_now(ts__log *log)
{
	return __atomic_fetch_add(&log->pins, 0, __ATOMIC_SEQ_CST);
}

/* The mapping of the oldest released segment not yet unmapped, claimed
 * for the caller to unmap outside mu (its slot emptied), or NULL when
 * there is none or a snapshot is pinned; mu is held.  A snapshot pinned
 * after this cannot need it: it pins before it reads the head commit,
 * and a segment is released only after a commit that names no tree in
 * it was published and a descriptor that names the tablets holding its
 * rows (flush.c), so either this check sees the pin or that snapshot
 * reads the new commit (pins_now). */
static unsigned char *claim_unmap(ts__log *log)
{
	assert(mu_held(log));
	while (pins_now(log) == 0 && log->unmapped < log->released) {
		uint64_t seg = log->unmapped;
		__atomic_store_n(&log->unmapped, seg + 1, __ATOMIC_RELAXED);
		ts__log_slot *s = &log->hot.ring[seg & RING_MASK];
		if (atomic_load(&s->segp1) == seg + 1) {
			unsigned char *base = s->base;
			atomic_store(&s->segp1, 0);
			s->base = NULL;
			return base;
		}
	}
	return NULL;
}

/* Unmap, one at a time and each outside mu, the released segments no
 * snapshot may read; mu is not held. */
static void unmap_released(ts__log *log)
{
	for (;;) {
		mu_lock(log);
		unsigned char *base = claim_unmap(log);
		mu_unlock(log);
		if (!base)
			return;
		munmap(base, seg_file(log));
	}
}

void ts__log_pin(ts__log *log)
{
	__atomic_add_fetch(&log->pins, 1, __ATOMIC_SEQ_CST);
}

void ts__log_unpin(ts__log *log)
{
	long left = __atomic_sub_fetch(&log->pins, 1, __ATOMIC_SEQ_CST);
	assert(left >= 0);
	if (left == 0 && __atomic_load_n(&log->unmapped, __ATOMIC_SEQ_CST) <
	                 __atomic_load_n(&log->released, __ATOMIC_SEQ_CST))
		unmap_released(log);
}

int ts__log_drop_step(ts__log *log)
{
	char path[TS_PATH_MAX];
	int rc = 0, did = 1;
	pthread_mutex_lock(&log->drop_mu);
	mu_lock(log);
	uint64_t seg = log->unlinked;
	int unlink_one = !log->readonly && seg < log->released;
	if (unlink_one)
		log->unlinked = seg + 1;
	unsigned char *base = unlink_one || log->drop_unsynced ? NULL : claim_unmap(log);
	mu_unlock(log);
	if (unlink_one) {
		if ((rc = ts__log_seg_path(log, seg, path)) == 0 && unlink(path) < 0 && errno != ENOENT)
			rc = ts__fail_errno(errno, "unlink %s", path);
		log->drop_unsynced = 1;
		if (rc < 0) { /* tried again after the next release */
			mu_lock(log);
			if (log->unlinked > seg)
				log->unlinked = seg;
			mu_unlock(log);
		}
	} else if (log->drop_unsynced) {
		if ((rc = ts__fsync_dir(log->dir)) == 0)
			log->drop_unsynced = 0;
	} else if (base) {
		munmap(base, seg_file(log));
	} else {
		did = 0;
	}
	pthread_mutex_unlock(&log->drop_mu);
	return rc < 0 ? rc : did;
}

int ts__log_drops_pending(ts__log *log)
{
	pthread_mutex_lock(&log->drop_mu); /* not inside a step in flight */
	mu_lock(log);
	int pending = !log->readonly && (log->unlinked < log->released || log->drop_unsynced);
	mu_unlock(log);
	pthread_mutex_unlock(&log->drop_mu);
	return pending;
}

int ts__log_drop_released(ts__log *log)
{
	int rc;
	while ((rc = ts__log_drop_step(log)) > 0)
		;
	return rc;
}

int ts__log_release(ts__log *log, ts__lsn lsn)
{
	assert(writer_locked(log) && !log->readonly);
	uint64_t upto = seg_of(log, lsn);
	if (upto > seg_of(log, log->hot.tail))
		upto = seg_of(log, log->hot.tail);
	if (upto > log->first_seg)
		log->first_seg = upto;
	mu_lock(log);
	if (log->first_seg > log->released)
		__atomic_store_n(&log->released, log->first_seg, __ATOMIC_SEQ_CST);
	int work = log->unlinked < log->released || log->drop_unsynced ||
	           (pins_now(log) == 0 && log->unmapped < log->released);
	mu_unlock(log);
	/* without the preparer, here: a failure is the flush's, as before */
	return work && !ts__log_prep_drop(log) ? ts__log_drop_released(log) : 0;
}

void ts__log_forget(ts__log *log, ts__lsn lsn)
{
	mu_lock(log);
	if (seg_of(log, lsn) > log->released)
		__atomic_store_n(&log->released, seg_of(log, lsn), __ATOMIC_SEQ_CST);
	mu_unlock(log);
	unmap_released(log);
}

/* The LSNs [*from, *to) not yet durable; the writer's.  *head: the
 * newest commit then, whose record lies wholly below *to (a commit
 * record is published before the tail moves past it, and an open batch
 * begins after it). */
static void unsynced(const ts__log *log, ts__lsn *from, ts__lsn *to, ts__lsn *head)
{
	*from = log->synced;
	*to = log->readonly ? log->synced : log->in_batch ? log->batch : log->hot.tail;
	*head = atomic_load_explicit(&log->head, memory_order_relaxed);
}

/* [.., to) is durable, and with it the commit head; the writer's.  Two
 * syncs may end out of order: each claims only its own range's head. */
static void synced_to(ts__log *log, ts__lsn to, ts__lsn head)
{
	if (to > log->synced) {
		log->synced = to;
		publish_synced(log, to);
	}
	if (head > log->synced_head && head < log->synced)
		log->synced_head = head;
}

void ts__log_sync_range(const ts__log *log, ts__lsn *from, ts__lsn *to, ts__lsn *head)
{
	assert(writer_locked(log));
	unsynced(log, from, to, head);
}

ts__lsn ts__log_durable_head(const ts__log *log)
{
	assert(writer_locked(log));
	return log->synced_head;
}

int ts__log_sync_pages(ts__log *log, ts__lsn from, ts__lsn to)
{
	while (from < to) {
		uint64_t n = seg_left(log, from) < to - from ? seg_left(log, from) : to - from;
		unsigned char *p = ts__log_ptr(log, from);
		/* from the page holding from, in the segment's mapping */
		ts__off off = ts__off_of(log->hot.shift, from), a = page_down(log, off);
		if (p && ts__log_seg_msync(log, p - ts__off_bytes(off), a, n + (off.at - a.at)) < 0)
			return ts__fail_errno(errno, "msync %s", log->dir);
		from += n;
	}
	return 0;
}

void ts__log_sync_done(ts__log *log, ts__lsn to, ts__lsn head)
{
	assert(writer_locked(log));
	synced_to(log, to, head);
}

/* ts__log_sync without its assertion: also what closing runs, when the
 * writer is alone and holds no lock. */
static int sync_all(ts__log *log)
{
	ts__lsn from, to, head;
	unsynced(log, &from, &to, &head);
	int rc = ts__log_sync_pages(log, from, to);
	if (rc == 0)
		synced_to(log, to, head);
	return rc;
}

int ts__log_sync(ts__log *log)
{
	assert(writer_locked(log));
	return sync_all(log);
}
