/*
 * log_int.h -- the log's private parts, shared by the four files that
 * implement log.h: log.c (opening and closing, pages, locks, segment
 * files, commits and HEAD, appending, syncing), log_recover.c (recovery),
 * log_prepare.c (making segments, the segment preparer) and log_copy.c
 * (verifying and copying for check and backup).  No other file includes
 * it: the rest of the library sees a ts__log through log.h alone.
 *
 * It holds struct ts__log and the preparer's state, the arithmetic of
 * segments and pages (static inline: they were log.c's statics, and sit
 * on the append and read paths), and the functions one of those files
 * calls in another, each a ts__log_ name declared below with what it
 * does; what the struct's fields mean is log.c's opening comment.
 *
 * It extends log.h, which must be included before it (struct ts__log
 * embeds log.h's ts__log_hot), and includes no header of the library
 * itself: log.c includes it, so its including log.h would be a cycle in
 * the include graph (scripts/include-graph.sh).
 */
#ifndef TS_LOG_INT_H
#define TS_LOG_INT_H

#ifndef TS_LOG_H
#error "log_int.h extends log.h: include log.h first"
#endif

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

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
	uint64_t want_alloc;  /* file bytes of the segment asked for to allocate */
	uint64_t ready_alloc; /* file bytes of ready's allocated (TS_SEG_HEADER
	                       * when it was not made here: not known) */
	unsigned char *warm;  /* [warm, warm_end) of the writer's segment to */
	unsigned char *warm_end; /* write-fault (NULL = nothing to do) */
	int drop;             /* released segments to drop (ts__log_prep_drop) */
};

/*
 * Allocating segments as they fill.  A segment file has its full size
 * from the start, but its blocks are allocated as the writer needs them:
 * the first TS_LOG_ALLOC_FIRST data bytes when the file is made, then
 * twice as much each time the tail reaches the end of what is allocated
 * (ts__log_alloc_seg), up to the whole segment; a log's later segments
 * are made with the amount its last allocation reached.  So a table that
 * writes little holds little disk -- a database of a thousand small
 * tables (one per Prometheus metric) held 64 MiB for each, fallocated
 * at its first insert -- while a busy table reaches whole segments,
 * allocated and write-faulted ahead by the preparer as before, within
 * its first segment.  The writer never stores past the allocated end
 * (its window, hot.win_end, stops there; warming too): a store through
 * the mapping into a hole on a full disk would be a SIGBUS, where an
 * allocation that fails is a clean TS_ENOSPC for the insert.
 */
#define TS_LOG_ALLOC_FIRST (UINT64_C(64) << 10)

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
	/* The newest commit whose record lies below synced: the newest one
	 * known durable (ts__log_durable_head); the writer's. */
	uint64_t synced_head;
	int in_batch;
	_Atomic uint64_t head;
	uint64_t seq;             /* of the head commit */
	unsigned char *headpage;  /* the shared HEAD file, or NULL */
	char boot[TS_HEAD_BOOT_SIZE]; /* this boot's id (ts__log_boot_id) */
	uint64_t recovered;
	int was_clean;
	uint64_t cut_lsn, cut_commits; /* committed data recovery gave up (lost_commits) */
	uint64_t first_seg, last_seg; /* segments mapped by the writer */
	/* Released segments stay mapped while a snapshot taken before their
	 * release may read them: pins counts the snapshots (ts__log_pin);
	 * segments below released are released, below unmapped unmapped.
	 * Without this a long-running process kept every segment it ever
	 * wrote mapped, and their disk blocks allocated.  pins is atomic
	 * (ts__log_pin); released and unmapped change under mu, stored
	 * atomically, for the last unpin reads them without it. */
	long pins;
	uint64_t released, unmapped;
	/* The writer's segment files below unlinked are deleted: a release
	 * only moves released (and first_seg), and the files go and the
	 * mappings are unmapped after, by the preparer or whoever needs it
	 * done at once (ts__log_drop_released), outside the writer's lock
	 * and mu ("Dropping released segments" in log.c).  drop_mu keeps
	 * one thread at a time doing that, so that a caller who needs the
	 * files gone (a purge) waits for the step in flight. */
	uint64_t unlinked;        /* under mu */
	pthread_mutex_t drop_mu;
	int drop_unsynced;        /* under drop_mu: files unlinked since the
	                           * directory's last fsync */
	int64_t seg_wait_ns, seg_wait_max_ns; /* the writer entering segments */
	uint64_t asked;           /* writer: segment + 1 last asked of the preparer */
	uint64_t alloc_seg;       /* writer: segment + 1 whose blocks are allocated */
	uint64_t alloc_end;       /* up to this file offset (0 = no segment known) */
	uint64_t alloc_step;      /* data bytes the next allocation adds (from
	                           * TS_LOG_ALLOC_FIRST, at most a segment's) */
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

/* ---- segments and pages: arithmetic ---- */

static inline uint64_t align8(uint64_t n) { return (n + 7) & ~UINT64_C(7); }
/* The geometry of a log's segments: data areas of 2^shift bytes (log.h). */
static inline uint64_t seg_data_s(unsigned shift) { return UINT64_C(1) << shift; }
static inline uint64_t seg_of_s(unsigned shift, uint64_t lsn) { return lsn >> shift; }
static inline uint64_t seg_off_s(unsigned shift, uint64_t lsn) { return lsn & (seg_data_s(shift) - 1); }
static inline uint64_t seg_left_s(unsigned shift, uint64_t lsn) { return seg_data_s(shift) - seg_off_s(shift, lsn); }
static inline uint64_t seg_data(const ts__log *log) { return seg_data_s(log->hot.shift); }
static inline uint64_t seg_file(const ts__log *log) { return TS_SEG_HEADER + seg_data(log); }
static inline uint64_t seg_of(const ts__log *log, uint64_t lsn) { return seg_of_s(log->hot.shift, lsn); }
static inline uint64_t seg_left(const ts__log *log, uint64_t lsn)
{
	return seg_left_s(log->hot.shift, lsn);
}
static inline uint64_t seg_lsn(const ts__log *log, uint64_t seg) { return seg << log->hot.shift; }

/* File offsets rounded to the log's pages.  A segment's mapping starts at
 * file offset 0 on a page boundary, so these are page-aligned addresses
 * in it too. */
static inline ts__off page_down(const ts__log *log, ts__off off)
{
	return (ts__off){off.at & ~((uint64_t)log->page - 1)};
}

static inline ts__off page_up(const ts__log *log, ts__off off)
{
	return page_down(log, (ts__off){off.at + log->page - 1});
}

#ifndef NDEBUG
/* Whether off may start what the kernel takes page-aligned (msync,
 * madvise) on a machine of the log's page size: asserted where such a
 * call is made (ts__log_seg_msync, ts__log_prep_warm), so that a run
 * with a forced page size fails where such a machine would refuse the
 * call (EINVAL). */
static inline int page_aligned(const ts__log *log, ts__off off)
{
	return off.at % log->page == 0;
}
#endif

/* Where the batch after position p starts, in segments of 2^shift. */
static inline uint64_t batch_start_s(unsigned shift, uint64_t p)
{
	p = align8(p);
	return seg_left_s(shift, p) < TS_BATCH_HEADER_SIZE ? p + seg_left_s(shift, p) : p;
}

/* The writer's allocation step after an allocation of the current one:
 * twice as much, up to a whole segment (see "Allocating segments as they
 * fill"). */
static inline void alloc_step_grow(ts__log *log)
{
	if (log->alloc_step < seg_data(log)) /* powers of two: 2x stays within */
		log->alloc_step *= 2;
}

/* ---- log.c ---- */

/* The page size a log opening now takes: the real one, or the one forced
 * by TSSTORE_PAGE_SIZE or ts__log_force_page_size. */
size_t ts__log_opening_page(void);

/* The page size the kernel faults pages in by, the real one: the stride
 * of the preparer's touches (a forced page size changes alignments, not
 * faults). */
size_t ts__log_fault_page(void);

/* msync [from, from + len) of the segment file mapped at base (from
 * page-aligned): the one way the log msyncs a segment.  Returns msync's
 * result, errno set on failure. */
int ts__log_seg_msync(const ts__log *log, unsigned char *base, ts__off from, uint64_t len);

/* The path of segment seg's file in the log's directory, into out
 * (TS_PATH_MAX bytes).  Returns 0 or TS_ETOOBIG. */
int ts__log_seg_path(const ts__log *log, uint64_t seg, char *out);

/* Check segment header h (of the file at path, for messages): it names
 * seg, and its data size is 2^shift or, when shift is 0, any size a
 * segment may have (*found, may be NULL, receives its shift).  Returns
 * 0, TS_ECORRUPT or TS_EVERSION. */
int ts__log_check_seg_header(const unsigned char *h, uint64_t seg, const char *path,
                             unsigned shift, unsigned *found);

/* Map segment seg into its slot of the ring; create (the writer only):
 * make the file (ts__log_create_seg, ts__log_alloc_first bytes
 * allocated, which the log's alloc_seg and alloc_end then record) if it
 * is missing.  Returns 0, TS_ENOENT (no such segment) or another error. */
int ts__log_map_seg(ts__log *log, uint64_t seg, int create);

/* The shift of the log in dir: that of its oldest segment file
 * (segs[0..n) sorted, as ts__log_segments gives them; one a writer
 * released since it was listed is skipped), or 0 when it has none.
 * Returns 0 or an error reading a header. */
int ts__log_dir_shift(const char *dir, const uint64_t *segs, size_t n, unsigned *shift);

/* The writer: set the clean-close flag of the segment holding the tail
 * (1 when closing cleanly, 0 once recovered), durably; nothing when that
 * segment is not mapped. */
void ts__log_set_clean(ts__log *log, uint32_t clean);

/* ---- log_recover.c ---- */

/* Recover the log opening in log, scanning from start (the flushed
 * position): learn its shift, map its segments, find the last valid
 * commit, and -- for a writer -- quarantine committed batches found
 * damaged and erase what follows; a reader refuses such a log.  Sets
 * head, seq, tail, synced, recovered and was_clean.  Returns 0 or an
 * error (TS_ECORRUPT for a reader refusing the log). */
int ts__log_recover(ts__log *log, uint64_t start);

/* ---- log_prepare.c ---- */

/* Create segment file seg at path: sized, the blocks of its first alloc
 * bytes (at least the header page; at most the file) allocated, header
 * written and durable, under a temporary name renamed into place.
 * Returns 0, TS_ENOSPC (with a message saying how much room it needs) or
 * another error. */
int ts__log_create_seg(ts__log *log, uint64_t seg, const char *path, uint64_t alloc);

/* The writer: the file bytes a segment it makes now gets allocated
 * (see "Allocating segments as they fill"). */
uint64_t ts__log_alloc_first(const ts__log *log);

/* The writer: make sure the blocks of segment seg, which holds the tail
 * and is mapped, are allocated up to file offset need, allocating the
 * log's next step past what is (and doubling the step).  Returns 0, or
 * TS_ENOSPC (saying how much room it needs) or another error, having
 * stored nothing. */
int ts__log_alloc_seg(ts__log *log, uint64_t seg, uint64_t need);

/* The writer: ask the preparer to create (with alloc file bytes
 * allocated, ts__log_alloc_first), map and write-fault segment seg
 * (starting the preparer on first use). */
void ts__log_prep_kick(ts__log *log, uint64_t seg, uint64_t alloc);

/* The writer: ask the preparer to write-fault the `ahead` bytes of
 * segment seg, which holds the tail, after the tail's page (log_int.h's
 * "Warming the writer's own segments"). */
void ts__log_prep_warm(ts__log *log, uint64_t seg, uint64_t ahead);

/* The writer: install the preparer's mapping of seg in its slot, waiting
 * while seg is being prepared.  Returns 1 if installed, with the file
 * bytes of seg known allocated in *alloc (TS_SEG_HEADER when the
 * preparer found the file made), or 0 if the caller must map seg itself. */
int ts__log_prep_take(ts__log *log, uint64_t seg, uint64_t *alloc);

/* Stop the preparer's thread, if it runs, and drop a mapping it made
 * that nobody took. */
void ts__log_prep_stop(ts__log *log);

/* The writer (its lock held): ask the preparer to drop the released
 * segments (ts__log_drop_step until it says none is left), after any
 * segment asked for and any warming.  Returns 1, or 0 if the preparer
 * cannot run (the caller then drops them itself). */
int ts__log_prep_drop(ts__log *log);

/* One step of dropping the released segments, under drop_mu: delete one
 * released segment file, else fsync the directory after deletions, else
 * unmap one released segment no snapshot may read.  Returns 1 when it
 * did one, 0 when nothing is left to do, or the error (TS_EIO); the step
 * is tried again at the next release or ts__log_drop_released.  The
 * preparer's failures go no further: the files are named by no
 * descriptor any more, and the next open removes what stays. */
int ts__log_drop_step(ts__log *log);

#endif /* TS_LOG_INT_H */
