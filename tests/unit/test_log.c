/*
 * test_log.c -- the log's segments: the writer entering a segment that
 * the segment preparer (log_prepare.c) is still preparing; the preparer warming
 * the segment the writer mapped itself.
 *
 * The preparer creates the writer's next segment under a temporary name,
 * renames it into place, syncs the directory, then maps it and stores a
 * zero on every page to fault it in.  The writer must take that mapping
 * when the preparer is done and never write to the segment before: these
 * tests hold the preparer just after its rename (through an fsync that
 * this file puts in front of libc's) while the tail moves into the next
 * segment without a record spilling over -- the previous one ended at the
 * segment's end, or a batch header did not fit behind it -- and then check
 * that everything the writer wrote there reads back intact.
 *
 * Then the log's pages (log.c, docs/log-format.md section 1.1): what it
 * rounds to a page -- msync's and madvise's addresses, the hole recovery
 * punches after the tail -- is rounded to its page size from the start of
 * a segment's mapping, and a page size larger than the machine's may be
 * forced (ts__log_force_page_size, TSSTORE_PAGE_SIZE) so that it runs as
 * on a machine of 16 KiB or 64 KiB pages.  Every test of the segments runs
 * three times: at the real page size, with 16 KiB and with 64 KiB forced
 * (the names say which); where a page shows, the expectations are in the
 * log's pages, and the log asserts (debug builds, as tests are) that
 * every address it gives msync or madvise is aligned to them.
 *
 * Every test runs in its own mkdtemp directory (the cmocka state), removed
 * by the teardown.
 */
#include <dirent.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "buf.h"
#include "crc32c.h"
#include "error.h"
#include "log.h"
#include "support.h"

#define PATTERN 0xA5
#define HOLD_NS INT64_C(1000000000) /* longest hold of the preparer */

/* ---- an fsync that holds the preparer ---- */

/*
 * The library is linked statically into this test, so this fsync stands
 * in for libc's in every call the library makes.  While hold_armed is
 * set, an fsync of a directory made by any thread but the test's own --
 * the preparer syncing the log directory after renaming a new segment
 * into place -- waits until the test lets it go, or HOLD_NS at most (the
 * writer may rightly be waiting for the preparer).
 */
static int hold_armed, hold_released;
static pthread_t test_thread;

static void sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
	nanosleep(&ts, NULL);
}

int fsync(int fd)
{
	struct stat st;
	if (__atomic_load_n(&hold_armed, __ATOMIC_ACQUIRE) &&
	    !pthread_equal(pthread_self(), test_thread) && fstat(fd, &st) == 0 &&
	    S_ISDIR(st.st_mode))
		for (int64_t waited = 0;
		     waited < HOLD_NS && !__atomic_load_n(&hold_released, __ATOMIC_ACQUIRE);
		     waited += 1000000)
			sleep_ms(1);
	return (int)syscall(SYS_fsync, fd);
}

/*
 * And an opendir that lets a writer act between two listings of a log
 * directory: the second listing of listing_dir first makes a log of
 * 1 MiB segments there with one committed batch (one_batch_log).
 */
static char *listing_dir;
static int listings;
static void one_batch_log(const char *dir, const char *sub, uint64_t seg_size, char *logdir);

DIR *opendir(const char *name)
{
	static DIR *(*real)(const char *);
	char logdir[512];
	if (!real)
		*(void **)&real = dlsym(RTLD_NEXT, "opendir");
	if (listing_dir && strcmp(name, listing_dir) == 0 && ++listings == 2) {
		char *dir = listing_dir;
		listing_dir = NULL;
		one_batch_log(dir, ".", UINT64_C(1) << 20, logdir);
	}
	return real(name);
}

static void hold_preparer(void)
{
	test_thread = pthread_self();
	__atomic_store_n(&hold_released, 0, __ATOMIC_RELEASE);
	__atomic_store_n(&hold_armed, 1, __ATOMIC_RELEASE);
}

static void release_preparer(void)
{
	__atomic_store_n(&hold_released, 1, __ATOMIC_RELEASE);
}

static void unhold_preparer(void)
{
	__atomic_store_n(&hold_armed, 0, __ATOMIC_RELEASE);
}

/* ---- a madvise that records the preparer's warming ---- */

/* Like fsync above, this madvise stands in for libc's: it notes what
 * it was given with MADV_POPULATE_WRITE (the preparer warming the
 * writer's segment) before doing what was asked: the
 * lowest and highest address, and the bytes in all.  Only the preparer
 * writes these; the test reads them once warmed_hi is where it waits
 * for it. */
static unsigned char *warmed_lo, *warmed_hi;
static size_t warmed_bytes;
static int warmings;
/* While warm_held is set, a warming waits (10 s at most) for the test
 * to clear it; each counts itself in warm_entered and notes whether
 * warm_watch exists, on entry. */
static int warm_held, warm_entered, watched_seen;
static char warm_watch[4096];

int madvise(void *addr, size_t len, int advice)
{
	if (advice == MADV_POPULATE_WRITE) {
		watched_seen = warm_watch[0] && access(warm_watch, F_OK) == 0;
		__atomic_add_fetch(&warm_entered, 1, __ATOMIC_RELEASE);
		for (int i = 0; i < 10000 && __atomic_load_n(&warm_held, __ATOMIC_ACQUIRE); i++)
			sleep_ms(1);
	}
	int rc = (int)syscall(SYS_madvise, addr, len, advice);
	if (advice == MADV_POPULATE_WRITE) {
		unsigned char *a = addr;
		if (!warmed_lo || a < warmed_lo)
			warmed_lo = a;
		warmed_bytes += len;
		__atomic_add_fetch(&warmings, 1, __ATOMIC_RELAXED);
		if (a + len > __atomic_load_n(&warmed_hi, __ATOMIC_RELAXED))
			__atomic_store_n(&warmed_hi, a + len, __ATOMIC_RELEASE);
	}
	return rc;
}

/* ---- an msync and a fallocate that record what they were given ---- */

/* The first MSYNCS msyncs (address, length) and the number of them; the
 * last hole punched (offset, length) and the number of them, since
 * forget_calls.  On the logs the tests below look at, only the test's
 * thread makes these calls (the preparer's fallocate allocates, it
 * punches no hole). */
#define MSYNCS 16
static struct { unsigned char *addr; size_t len; } msynced[MSYNCS];
static int msyncs;
static off_t punch_off, punch_len;
static int punches;

int msync(void *addr, size_t len, int flags)
{
	if (msyncs < MSYNCS) {
		msynced[msyncs].addr = addr;
		msynced[msyncs].len = len;
	}
	msyncs++;
	return (int)syscall(SYS_msync, addr, len, flags);
}

/* Whether msync was given exactly [addr, addr + len) since forget_calls. */
static int msynced_range(const unsigned char *addr, size_t len)
{
	for (int i = 0; i < msyncs && i < MSYNCS; i++)
		if (msynced[i].addr == addr && msynced[i].len == len)
			return 1;
	return 0;
}

int fallocate(int fd, int mode, off_t off, off_t len)
{
	if (mode & FALLOC_FL_PUNCH_HOLE) {
		punch_off = off;
		punch_len = len;
		punches++;
	}
	return (int)syscall(SYS_fallocate, fd, mode, off, len);
}

static void forget_calls(void)
{
	msyncs = punches = 0;
	punch_off = punch_len = 0;
}

static void forget_warmings(void)
{
	warm_watch[0] = 0;
	__atomic_store_n(&warm_entered, 0, __ATOMIC_RELAXED);
	warmed_lo = NULL;
	warmed_bytes = 0;
	__atomic_store_n(&warmings, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&warmed_hi, NULL, __ATOMIC_RELEASE);
}

/* Wait (10 s at most) until the preparer warmed up to end. */
static void await_warmed_to(unsigned char *end)
{
	for (int i = 0; i < 10000 && __atomic_load_n(&warmed_hi, __ATOMIC_ACQUIRE) != end; i++)
		sleep_ms(1);
	assert_ptr_equal(__atomic_load_n(&warmed_hi, __ATOMIC_ACQUIRE), end);
}

/* The same, for the first request since forget_warmings: it must have
 * warmed [from, end), once. */
static void await_warmed(unsigned char *from, unsigned char *end)
{
	await_warmed_to(end);
	assert_ptr_equal(warmed_lo, from);
	assert_int_equal(warmed_bytes, (size_t)(end - from));
}

/* Wait (10 s at most) until segment seg exists under its final name. */
static void await_segment(const char *dir, uint64_t seg)
{
	char path[4096];
	snprintf(path, sizeof path, "%s/%016llx.seg", dir, (unsigned long long)seg);
	for (int i = 0; i < 10000 && access(path, F_OK) < 0; i++)
		sleep_ms(1);
	assert_int_equal(access(path, F_OK), 0);
}

/* ---- fixtures ---- */

static size_t real_page(void) { return (size_t)sysconf(_SC_PAGESIZE); }

/* The page size a test was given to run at (0 = the real one), from its
 * initial state; the page size in effect, page. */
static size_t page;

static int setup_dir(void **state)
{
	size_t want = *state ? *(const size_t *)*state : 0;
	page = ts__log_force_page_size(want);
	/* a forced page size larger than the machine's is honoured */
	if (page != (want > real_page() ? want : real_page()))
		return -1;
	*state = ts_test_tmpdir();
	return 0;
}

static int teardown_dir(void **state)
{
	unhold_preparer();
	ts__log_force_page_size(0);
	ts_test_rmdir(*state);
	return 0;
}

/* ---- tests ---- */

/*
 * Batch 1 fills segment 0 up to `left` bytes before its end; batch 2
 * starts in segment 1, which the preparer has renamed into place but not
 * yet faulted in, and fills it with PATTERN.  Then the log is closed (the
 * preparer finishes) and reopened read-only: both commits must be
 * recovered and every byte of batch 2's record must still be PATTERN.
 */
static void enter_prepared_segment(const char *dir, uint64_t left)
{
	ts__log *log;
	uint64_t batch, lsn, rec;
	unsigned char *p;
	const uint64_t commit = TS_COMMIT_SIZE(0);
	hold_preparer();
	assert_int_equal(ts__log_open(dir, 0, 0, 0, &log), 0);

	/* Batch 1: a header at 0, one record, a commit ending left bytes
	 * before the end of the segment. */
	assert_int_equal(ts__log_begin(log, &batch), 0); /* maps 0 */
	assert_int_equal(batch, 0);
	assert_int_equal(ts__log_alloc(log, TS_SEG_DATA - TS_BATCH_HEADER_SIZE - commit - left,
	                               &lsn, (void **)&p), 0);
	assert_int_equal(ts__log_commit(log, NULL, 0, 1, 0), 0);
	assert_int_equal(ts__log_tail(log), TS_SEG_DATA - left); /* past the middle: asks for 1 */

	/* The preparer has renamed segment 1 into place and is held. */
	await_segment(dir, 1);

	/* Batch 2: its header must be the first bytes of segment 1. */
	assert_int_equal(ts__log_begin(log, &batch), 0);
	assert_int_equal(batch, TS_SEG_DATA);
	uint64_t size = TS_SEG_DATA - TS_BATCH_HEADER_SIZE - commit;
	assert_int_equal(ts__log_alloc(log, size, &rec, (void **)&p), 0);
	assert_int_equal(rec, TS_SEG_DATA + TS_BATCH_HEADER_SIZE);
	memset(p, PATTERN, size);
	assert_int_equal(ts__log_commit(log, NULL, 0, 1, 0), 0);
	uint64_t head = ts__log_head(log);
	release_preparer();
	ts__log_close(log, 1); /* joins the preparer */
	unhold_preparer();

	assert_int_equal(ts__log_open(dir, 1, 0, 0, &log), 0);
	p = ts__log_ptr(log, rec);
	assert_non_null(p);
	uint64_t damaged = 0;
	for (uint64_t i = 0; i < size; i++)
		damaged += p[i] != PATTERN;
	assert_int_equal(damaged, 0);
	assert_int_equal(ts__log_recovered_commits(log), 2);
	assert_int_equal(ts__log_head(log), head);
	ts__log_close(log, 0);
}

/* A record ends exactly at the end of segment 0. */
static void log_segment_entered_after_exact_fit(void **state)
{
	enter_prepared_segment(*state, 0);
}

/* Segment 0 ends 8 bytes after batch 1: too few for a batch header, so
 * batch 2 begins at the start of segment 1. */
static void log_segment_entered_by_batch_start(void **state)
{
	enter_prepared_segment(*state, 8);
}

/*
 * The next segment is asked for when the tail passes the middle of the
 * current one, not on entering it: a table that only ever holds a few
 * rows must not cost a second 64 MiB segment of written zeros.
 */
static void log_next_segment_asked_at_middle(void **state)
{
	const char *dir = *state;
	char path[4096];
	ts__log *log;
	uint64_t batch, lsn;
	void *p;
	const uint64_t commit = TS_COMMIT_SIZE(0);
	snprintf(path, sizeof path, "%s/%016llx.seg", dir, 1ULL);
	assert_int_equal(ts__log_open(dir, 0, 0, 0, &log), 0);

	/* A small batch, then one ending 8 bytes short of the middle. */
	assert_int_equal(ts__log_begin(log, &batch), 0);
	assert_int_equal(ts__log_alloc(log, 64, &lsn, &p), 0);
	assert_int_equal(ts__log_commit(log, NULL, 0, 1, 0), 0);
	assert_int_equal(ts__log_begin(log, &batch), 0);
	uint64_t to_mid = TS_SEG_DATA / 2 - 8 - ts__log_tail(log) - commit;
	assert_int_equal(ts__log_alloc(log, to_mid, &lsn, &p), 0);
	assert_int_equal(ts__log_commit(log, NULL, 0, 1, 0), 0);
	assert_int_equal(ts__log_tail(log), TS_SEG_DATA / 2 - 8);
	sleep_ms(300); /* what a preparer asked for would have done by now */
	assert_int_not_equal(access(path, F_OK), 0);

	/* The next allocation crosses the middle. */
	assert_int_equal(ts__log_begin(log, &batch), 0);
	assert_int_equal(ts__log_alloc(log, 64, &lsn, &p), 0);
	assert_int_equal(ts__log_commit(log, NULL, 0, 1, 0), 0);
	await_segment(dir, 1);
	ts__log_close(log, 1);
}

/* One batch of a record of n bytes filled with PATTERN; its LSN. */
static uint64_t append(ts__log *log, uint64_t n)
{
	uint64_t batch, lsn;
	unsigned char *p;
	assert_int_equal(ts__log_begin(log, &batch), 0);
	assert_int_equal(ts__log_alloc(log, n, &lsn, (void **)&p), 0);
	memset(p, PATTERN, n);
	assert_int_equal(ts__log_commit(log, NULL, 0, 1, 0), 0);
	return lsn;
}

/* The address just past segment 0's mapping in log. */
static unsigned char *seg0_end(ts__log *log)
{
	return (unsigned char *)ts__log_ptr(log, 0) - TS_SEG_HEADER + TS_SEG_FILE_SIZE;
}

/* The address of the first of the log's page boundaries at or after lsn
 * (in segment 0), counted from the start of the segment's mapping. */
static unsigned char *page_from(ts__log *log, uint64_t lsn)
{
	uint64_t off = TS_SEG_HEADER + lsn, pg = ts__log_page_size(log); /* in segment 0's file */
	assert_int_equal(pg, page);
	return (unsigned char *)ts__log_ptr(log, 0) - TS_SEG_HEADER + (off + pg - 1) / pg * pg;
}

#define AHEAD (8u << 20) /* TS_LOG_WARM_AHEAD */

/*
 * Segment 0 of a new log is the writer's own mapping.  Once the tail
 * passes its first MiB (not before: a table of a few rows must not dirty
 * what it never writes) the 8 MiB after the tail are warmed, from the
 * page after the tail's; again each time the tail has moved 4 MiB on;
 * never further ahead; and nothing the writer wrote changes.  The same
 * after a reopen, counted from where recovery left the tail.
 */
static void log_own_segment_warmed_after_first_mib(void **state)
{
	const char *dir = *state;
	ts__log *log;
	forget_warmings();
	assert_int_equal(ts__log_open(dir, 0, 0, 0, &log), 0);
	uint64_t a = append(log, 1000);
	sleep_ms(100); /* what a warming asked for would have begun by now */
	assert_int_equal(__atomic_load_n(&warmings, __ATOMIC_ACQUIRE), 0);

	/* Up to the first MiB: the window stops there, nothing asked. */
	uint64_t nb = (1 << 20) - 2048 - ts__log_tail(log), b = append(log, nb);
	assert_true(ts__log_tail(log) < (1 << 20));
	assert_int_equal(__atomic_load_n(&warmings, __ATOMIC_ACQUIRE), 0);

	/* Past it: 8 MiB are warmed from the page after the record that
	 * crossed the mark. */
	uint64_t c = append(log, 4096);
	assert_true(ts__log_tail(log) > (1 << 20));
	await_warmed(page_from(log, c + 4096), page_from(log, c + 4096 + AHEAD));
	int warmed = __atomic_load_n(&warmings, __ATOMIC_ACQUIRE);

	/* 3 MiB on: into the warmed pages, nothing more asked. */
	uint64_t d = append(log, 3 << 20);
	sleep_ms(100);
	assert_int_equal(__atomic_load_n(&warmings, __ATOMIC_ACQUIRE), warmed);

	/* 2 MiB more, past 4 MiB from the last request: the next 8 MiB. */
	uint64_t f = append(log, 2 << 20);
	await_warmed_to(page_from(log, f + (2 << 20) + AHEAD));
	assert_true(page_from(log, f + (2 << 20) + AHEAD) < seg0_end(log));
	uint64_t tail = ts__log_tail(log);
	ts__log_close(log, 1);
	forget_warmings();

	/* Reopened: a MiB past the recovered tail, again. */
	assert_int_equal(ts__log_open(dir, 0, 0, 0, &log), 0);
	assert_int_equal(ts__log_recovered_commits(log), 5);
	assert_int_equal(ts__log_tail(log), tail);
	append(log, (1 << 20) - 4096);
	sleep_ms(100);
	assert_int_equal(__atomic_load_n(&warmings, __ATOMIC_ACQUIRE), 0);
	uint64_t e = append(log, 8192);
	await_warmed(page_from(log, e + 8192), page_from(log, e + 8192 + AHEAD));
	uint64_t sizes[6] = {1000, nb, 4096, 3 << 20, 2 << 20, 8192}, lsns[6] = {a, b, c, d, f, e};
	for (int i = 0; i < 6; i++) {
		const unsigned char *p = ts__log_ptr(log, lsns[i]);
		uint64_t damaged = 0;
		for (uint64_t j = 0; j < sizes[i]; j++)
			damaged += p[j] != PATTERN;
		assert_int_equal(damaged, 0);
	}
	ts__log_close(log, 1);
}

/*
 * Past the middle of a segment the writer mapped itself -- where the
 * next segment is asked for, so the table is no small one -- the rest of
 * the segment is warmed, and before the next segment is made: the writer
 * fills this one first, and making the next takes long enough for it to
 * outrun a window.  The first warming is held while the tail passes the
 * middle; once let go, the warming that reaches the segment's end must
 * come before segment 1 exists, and segment 1 must follow.
 */
static void log_rest_warmed_before_next_segment(void **state)
{
	const char *dir = *state;
	ts__log *log;
	forget_warmings();
	snprintf(warm_watch, sizeof warm_watch, "%s/%016llx.seg", dir, 1ULL);
	__atomic_store_n(&warm_held, 1, __ATOMIC_RELEASE);
	assert_int_equal(ts__log_open(dir, 0, 0, 0, &log), 0);
	append(log, (1 << 20) + 4096); /* past the first MiB: a warming begins, held */
	for (int i = 0; i < 10000 && __atomic_load_n(&warm_entered, __ATOMIC_ACQUIRE) == 0; i++)
		sleep_ms(1);
	assert_int_equal(__atomic_load_n(&warm_entered, __ATOMIC_ACQUIRE), 1);
	uint64_t to_mid = TS_SEG_DATA / 2 - ts__log_tail(log) + 4096;
	append(log, to_mid); /* past the middle: the rest, then segment 1 */
	assert_true(ts__log_tail(log) > TS_SEG_DATA / 2);
	__atomic_store_n(&warm_held, 0, __ATOMIC_RELEASE);
	await_warmed_to(seg0_end(log));
	assert_ptr_equal(warmed_lo, page_from(log, 16 + (1 << 20) + 4096));
	assert_false(watched_seen);
	await_segment(dir, 1);
	ts__log_close(log, 1);
}

/* ---- segment sizes and format versions ---- */

/* A log of seg_size segments in dir/sub holding one committed batch. */
static void one_batch_log(const char *dir, const char *sub, uint64_t seg_size, char *logdir)
{
	ts__log *log;
	uint64_t batch, lsn;
	void *p;
	snprintf(logdir, 512, "%s/%s", dir, sub);
	assert_int_equal(ts__log_open(logdir, 0, 0, seg_size, &log), 0);
	assert_int_equal(ts__log_begin(log, &batch), 0);
	assert_int_equal(ts__log_alloc(log, 64, &lsn, &p), 0);
	memset(p, PATTERN, 64);
	assert_int_equal(ts__log_commit(log, NULL, 0, 1, 0), 0);
	ts__log_close(log, 1);
}

/* Read (or, when write, write back) the header page of logdir's segment 0. */
static void seg0_header(const char *logdir, unsigned char *h, int write)
{
	char path[600];
	snprintf(path, sizeof path, "%s/0000000000000000.seg", logdir);
	FILE *f = fopen(path, write ? "r+b" : "rb");
	assert_non_null(f);
	if (write)
		assert_int_equal(fwrite(h, 1, TS_SEG_HEADER, f), TS_SEG_HEADER);
	else
		assert_int_equal(fread(h, 1, TS_SEG_HEADER, f), TS_SEG_HEADER);
	assert_int_equal(fclose(f), 0);
}

static off_t seg0_size(const char *logdir)
{
	char path[600];
	struct stat st;
	snprintf(path, sizeof path, "%s/0000000000000000.seg", logdir);
	assert_int_equal(stat(path, &st), 0);
	return st.st_size;
}

/* Segments of 64 MiB keep format version 1; every other size is version
 * 2, which builds that knew only 64 MiB segments refuse. */
static void log_segment_version_per_size(void **state)
{
	static const struct { uint64_t size; uint32_t version; } cases[] = {
		{UINT64_C(1) << 20, 2}, {UINT64_C(4) << 20, 2}, {UINT64_C(64) << 20, 1},
	};
	char logdir[512], sub[32];
	unsigned char h[TS_SEG_HEADER];
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		snprintf(sub, sizeof sub, "log%zu", i);
		one_batch_log(*state, sub, cases[i].size, logdir);
		seg0_header(logdir, h, 0);
		assert_int_equal(ts__load_u32(h + TS_SEGH_OFF_VERSION), cases[i].version);
		assert_int_equal(ts__load_u64(h + TS_SEGH_OFF_DATA_SIZE), cases[i].size);
		ts__log *log;
		assert_int_equal(ts__log_open(logdir, 1, 0, 0, &log), 0);
		assert_int_equal(ts__log_recovered_commits(log), 1);
		ts__log_close(log, 0);
	}
}

/* A version 1 header naming a data size other than 64 MiB is damage,
 * for readers and writers alike, and the writer leaves the file as it
 * is; a version past 2 is TS_EVERSION. */
static void log_segment_v1_of_other_size_is_damage(void **state)
{
	char logdir[512];
	unsigned char h[TS_SEG_HEADER];
	ts__log *log;
	one_batch_log(*state, "log", UINT64_C(1) << 20, logdir);
	seg0_header(logdir, h, 0);
	ts__store_u32(h + TS_SEGH_OFF_VERSION, 1);
	ts__store_u32(h + TS_SEGH_OFF_CRC, ts__crc32c(0, h, TS_SEGH_FIXED));
	seg0_header(logdir, h, 1);
	assert_int_equal(ts__log_open(logdir, 1, 0, 0, &log), TS_ECORRUPT);
	assert_non_null(strstr(ts_errmsg(NULL), "header names another segment"));
	assert_int_equal(ts__log_open(logdir, 0, 0, UINT64_C(1) << 20, &log), TS_ECORRUPT);
	assert_int_equal(seg0_size(logdir), TS_SEG_HEADER + (1 << 20));

	ts__store_u32(h + TS_SEGH_OFF_VERSION, 3);
	ts__store_u32(h + TS_SEGH_OFF_CRC, ts__crc32c(0, h, TS_SEGH_FIXED));
	seg0_header(logdir, h, 1);
	assert_int_equal(ts__log_open(logdir, 1, 0, 0, &log), TS_EVERSION);
	assert_int_equal(ts__log_open(logdir, 0, 0, UINT64_C(1) << 20, &log), TS_EVERSION);
	assert_int_equal(seg0_size(logdir), TS_SEG_HEADER + (1 << 20));
}

/* A backup of a log with no segment file when it is listed, whose writer
 * (of 1 MiB segments) makes its first one right after: the copy holds
 * none of it (its commits are after the backup's HEAD), and the backup
 * takes no segment size of its own -- with the 64 MiB default it listed
 * again, found the new segment, and failed reading it at that size. */
static void log_backup_before_first_segment(void **state)
{
	char src[512], dst[512];
	uint64_t head = 1;
	snprintf(src, sizeof src, "%s/src", (char *)*state);
	snprintf(dst, sizeof dst, "%s/dst", (char *)*state);
	assert_int_equal(mkdir(src, 0755), 0);
	assert_int_equal(mkdir(dst, 0755), 0);
	listing_dir = src;
	listings = 0;
	int rc = ts__log_backup(src, dst, 0, TS_LOG_HEAD_UNKNOWN);
	listing_dir = NULL;
	if (rc != 0)
		fail_msg("backup: %s", ts_errmsg(NULL));
	assert_int_equal(ts_test_count_files(dst, ".seg"), 0);
	assert_int_equal(ts__log_recorded_head(dst, &head), 1);
	assert_int_equal(head, 0);
}

/* ---- pages ---- */

#define SMALL_SEG (UINT64_C(1) << 20)

/* The file offset off rounded down to the log's pages. */
static uint64_t page_down(uint64_t off) { return off / page * page; }

/* The bytes of logdir's segment 0 from file offset from to its end that
 * are not zero. */
static uint64_t nonzero_from(const char *logdir, uint64_t from)
{
	char path[600];
	unsigned char buf[65536];
	uint64_t bad = 0;
	ssize_t got;
	snprintf(path, sizeof path, "%s/0000000000000000.seg", logdir);
	int fd = open(path, O_RDONLY);
	assert_true(fd >= 0);
	while ((got = pread(fd, buf, sizeof buf, (off_t)from)) > 0) {
		for (ssize_t i = 0; i < got; i++)
			bad += buf[i] != 0;
		from += (uint64_t)got;
	}
	close(fd);
	assert_int_equal(from, TS_SEG_HEADER + SMALL_SEG);
	return bad;
}

/* Write n bytes of garbage into logdir's segment 0 at file offset at. */
static void scribble(const char *logdir, uint64_t at, size_t n)
{
	char path[600];
	unsigned char junk[4096];
	memset(junk, 0x5A, sizeof junk);
	snprintf(path, sizeof path, "%s/0000000000000000.seg", logdir);
	int fd = open(path, O_WRONLY);
	assert_true(fd >= 0);
	for (size_t done = 0; done < n;) {
		size_t k = n - done < sizeof junk ? n - done : sizeof junk;
		assert_int_equal(pwrite(fd, junk, k, (off_t)(at + done)), (ssize_t)k);
		done += k;
	}
	close(fd);
}

/*
 * A log of 1 MiB segments whose one batch ends at tail (its record of
 * PATTERN), closed, with garbage written after the tail (what a torn
 * batch leaves), then reopened by a writer: recovery zeroes the tail's
 * page by hand, from the tail, and msyncs it from the page's start; the
 * rest of the segment it punches out, from the next page boundary (the
 * log's page size) to the end of the file -- or, when the tail is in
 * the file's last page, it zeroes and msyncs to the end and punches
 * nothing.  Either way the file reads as zeros from the tail on, and the
 * batch is intact.
 */
static void recover_tail_at(const char *dir, uint64_t tail, size_t garbage)
{
	ts__log *log;
	const uint64_t commit = TS_COMMIT_SIZE(0), file = TS_SEG_HEADER + SMALL_SEG;
	assert_int_equal(ts__log_open(dir, 0, 0, SMALL_SEG, &log), 0);
	uint64_t rec = append(log, tail - TS_BATCH_HEADER_SIZE - commit);
	assert_int_equal(ts__log_tail(log), tail);
	ts__log_close(log, 1);
	uint64_t off = TS_SEG_HEADER + tail; /* the tail's file offset */
	scribble(dir, off, garbage);

	forget_calls();
	assert_int_equal(ts__log_open(dir, 0, 0, SMALL_SEG, &log), 0);
	assert_int_equal(ts__log_recovered_commits(log), 1);
	assert_int_equal(ts__log_tail(log), tail);
	unsigned char *base = (unsigned char *)ts__log_ptr(log, 0) - TS_SEG_HEADER;
	uint64_t hole = (off + page - 1) / page * page;
	if (hole >= file) { /* the tail's page is the file's last */
		assert_int_equal(punches, 0);
		assert_true(msynced_range(base + page_down(off), file - page_down(off)));
	} else {
		assert_int_equal(punches, 1);
		assert_int_equal(punch_off, hole);
		assert_int_equal(punch_len, file - hole);
		assert_true(msynced_range(base + page_down(off), hole - page_down(off)));
	}
	const unsigned char *p = ts__log_ptr(log, rec);
	uint64_t damaged = 0;
	for (uint64_t i = 0; i < tail - TS_BATCH_HEADER_SIZE - commit; i++)
		damaged += p[i] != PATTERN;
	assert_int_equal(damaged, 0);
	ts__log_close(log, 1);
	assert_int_equal(nonzero_from(dir, off), 0);
}

/* The tail 100,008 bytes into the segment: garbage over 200,000 bytes
 * after it, across pages of every size tested. */
static void log_recovery_zeroes_from_tail_page(void **state)
{
	recover_tail_at(*state, 100008, 200000);
}

/* The tail 2 KiB before the segment's end: its page (of 4 KiB or more)
 * is the file's last, which is partial for pages of 8 KiB and more. */
static void log_recovery_tail_in_last_page(void **state)
{
	recover_tail_at(*state, SMALL_SEG - 2048, 2048);
}

/* ts__log_sync msyncs the log from the page holding the first byte not
 * yet durable (counted from the mapping's start) through the tail. */
static void log_sync_from_page_of_unsynced(void **state)
{
	ts__log *log;
	assert_int_equal(ts__log_open(*state, 0, 0, SMALL_SEG, &log), 0);
	append(log, 100000);
	unsigned char *base = (unsigned char *)ts__log_ptr(log, 0) - TS_SEG_HEADER;
	uint64_t to = ts__log_tail(log);
	forget_calls();
	assert_int_equal(ts__log_sync(log), 0);
	assert_int_equal(msyncs, 1);
	assert_ptr_equal(msynced[0].addr, base + page_down(TS_SEG_HEADER));
	assert_int_equal(msynced[0].len, TS_SEG_HEADER + to - page_down(TS_SEG_HEADER));
	append(log, 5000);
	uint64_t from = to;
	to = ts__log_tail(log);
	forget_calls();
	assert_int_equal(ts__log_sync(log), 0);
	assert_int_equal(msyncs, 1);
	assert_ptr_equal(msynced[0].addr, base + page_down(TS_SEG_HEADER + from));
	assert_int_equal(msynced[0].len, TS_SEG_HEADER + to - page_down(TS_SEG_HEADER + from));
	forget_calls();
	assert_int_equal(ts__log_sync(log), 0); /* nothing new */
	assert_int_equal(msyncs, 0);
	ts__log_close(log, 1);
}

/* A page size is forced only when it is a power of two larger than the
 * machine's, up to TS_LOG_PAGE_FORCE_MAX; a log keeps the one it opened
 * with. */
static void log_page_size_forced_only_when_larger(void **state)
{
	size_t real = real_page();
	ts__log *log;
	assert_int_equal(ts__log_force_page_size(0), real);
	assert_int_equal(ts__log_force_page_size(real), real);
	assert_int_equal(ts__log_force_page_size(real / 2), real);
	assert_int_equal(ts__log_force_page_size(real * 3), real); /* no power of two */
	assert_int_equal(ts__log_force_page_size(TS_LOG_PAGE_FORCE_MAX * 2), real);
	assert_int_equal(ts__log_force_page_size(real * 4), real * 4);
	assert_int_equal(ts__log_open(*state, 0, 0, SMALL_SEG, &log), 0);
	assert_int_equal(ts__log_page_size(log), real * 4);
	assert_int_equal(ts__log_force_page_size(0), real);
	assert_int_equal(ts__log_page_size(log), real * 4);
	ts__log_close(log, 1);
	assert_int_equal(ts__log_open(*state, 1, 0, 0, &log), 0);
	assert_int_equal(ts__log_page_size(log), real);
	ts__log_close(log, 0);
}

/* What this program, run again with TSSTORE_PAGE_SIZE=value (unset when
 * NULL) and --page-size, says a log opens with. */
static size_t page_size_with_env(const char *value)
{
	char self[4096], cmd[4200];
	ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
	assert_true(n > 0);
	self[n] = 0;
	if (value)
		snprintf(cmd, sizeof cmd, "TSSTORE_PAGE_SIZE='%s' '%s' --page-size", value, self);
	else
		snprintf(cmd, sizeof cmd, "env -u TSSTORE_PAGE_SIZE '%s' --page-size", self);
	FILE *f = popen(cmd, "r");
	assert_non_null(f);
	unsigned long long got = 0;
	assert_int_equal(fscanf(f, "%llu", &got), 1);
	assert_int_equal(pclose(f), 0);
	return (size_t)got;
}

/* TSSTORE_PAGE_SIZE forces the page size of a whole process, as
 * ts__log_force_page_size does (the same rule). */
static void log_page_size_from_environment(void **state)
{
	size_t real = real_page();
	(void)state;
	assert_int_equal(page_size_with_env(NULL), real);
	assert_int_equal(page_size_with_env("65536"), 65536 > real ? 65536 : real);
	assert_int_equal(page_size_with_env("16384"), 16384 > real ? 16384 : real);
	assert_int_equal(page_size_with_env("12288"), real); /* no power of two */
	assert_int_equal(page_size_with_env("2097152"), real); /* past the largest */
	assert_int_equal(page_size_with_env("lots"), real);
}

/* The child of page_size_with_env: print the page size a log opens with. */
static int print_page_size(void)
{
	char *dir = ts_test_tmpdir();
	ts__log *log;
	if (ts__log_open(dir, 0, 0, SMALL_SEG, &log) != 0)
		return 1;
	printf("%zu\n", ts__log_page_size(log));
	ts__log_close(log, 1);
	ts_test_rmdir(dir);
	return 0;
}

/* ---- the writer's lock ---- */

/* Run ts__log_begin in a child process on a log told that the writer's
 * lock is mu, held or not; its exit status. */
static int begin_in_child(const char *dir, int held)
{
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
		ts__log *log;
		ts__lsn batch;
		int quiet = open("/dev/null", O_WRONLY); /* not the assertion's message */
		if (quiet >= 0)
			dup2(quiet, 2);
		if (ts__log_open(dir, 0, 0, SMALL_SEG, &log) != 0)
			_exit(2);
		ts__log_set_writer_lock(log, &mu);
		if (held)
			pthread_mutex_lock(&mu);
		_exit(ts__log_begin(log, &batch) == 0 ? 0 : 3);
	}
	int status;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	return status;
}

/* Debug builds assert the writer's lock in the writer's functions: a
 * batch begun without it aborts, with it proceeds. */
static void log_writer_lock_asserted(void **state)
{
	int status = begin_in_child(*state, 1);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
#ifdef NDEBUG
	skip();
#else
	status = begin_in_child(*state, 0);
	assert_true(WIFSIGNALED(status));
	assert_int_equal(WTERMSIG(status), SIGABRT);
#endif
}

/* Each test of the log's segments and pages at the real page size and
 * with 16 KiB and 64 KiB forced. */
static const size_t P0 = 0, P16 = 16384, P64 = 65536;
#define AT_PAGES(f) \
	{#f, f, setup_dir, teardown_dir, (void *)&P0}, \
	{#f " (16 KiB pages)", f, setup_dir, teardown_dir, (void *)&P16}, \
	{#f " (64 KiB pages)", f, setup_dir, teardown_dir, (void *)&P64}

int main(int argc, char **argv)
{
	if (argc == 2 && strcmp(argv[1], "--page-size") == 0)
		return print_page_size();
	const struct CMUnitTest tests[] = {
		AT_PAGES(log_segment_entered_after_exact_fit),
		AT_PAGES(log_segment_entered_by_batch_start),
		AT_PAGES(log_next_segment_asked_at_middle),
		AT_PAGES(log_own_segment_warmed_after_first_mib),
		AT_PAGES(log_rest_warmed_before_next_segment),
		AT_PAGES(log_segment_version_per_size),
		AT_PAGES(log_segment_v1_of_other_size_is_damage),
		AT_PAGES(log_backup_before_first_segment),
		AT_PAGES(log_recovery_zeroes_from_tail_page),
		AT_PAGES(log_recovery_tail_in_last_page),
		AT_PAGES(log_sync_from_page_of_unsynced),
		cmocka_unit_test_setup_teardown(log_page_size_forced_only_when_larger, setup_dir,
		                                teardown_dir),
		cmocka_unit_test_setup_teardown(log_page_size_from_environment, setup_dir,
		                                teardown_dir),
		cmocka_unit_test_setup_teardown(log_writer_lock_asserted, setup_dir, teardown_dir),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
