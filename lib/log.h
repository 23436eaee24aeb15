/*
 * log.h -- a table's memory-mapped, append-only log (DESIGN.md section 3,
 * "The log"; byte tables in docs/log-format.md).
 *
 * The writer appends a batch: a batch header, then row and AVL-node
 * records (ts__log_alloc), then a commit record naming the root of every
 * filling tablet and carrying a CRC-32C over the whole batch.  Publishing
 * the commit is one release store of its LSN; readers load it with an
 * acquire load and read the immutable records it names with no lock.
 * Segments are mapped once and stay mapped while the log is open, so a
 * pointer into the log stays valid for the life of the handle.
 *
 * Recovery (ts__log_open on a writable log) scans forward from the last
 * flushed position, validating each commit; it stops at the first torn or
 * invalid one and erases everything after it, which is exactly the
 * prefix guarantee of DESIGN.md section 2.  When log/HEAD names a commit
 * at or past that point, the batches there were committed: damage, not a
 * crash's torn tail.  Recovery then copies them to the table's
 * quarantine/ before erasing them, and counts them; a read-only open
 * refuses such a log (docs/log-format.md section 5.1).
 */
#ifndef TS_LOG_H
#define TS_LOG_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "tslimits.h"
#include "log_format.h"

/*
 * Two kinds of position, two types.  A log position (LSN) numbers the
 * log's data bytes across its segments (docs/log-format.md section 1);
 * every LSN field of a commit record and of its roots is one, and so is
 * every position the functions below take or give.  A file offset is a
 * byte of one segment file, its header page included: what an LSN becomes
 * once its segment is known, and what pread, fallocate, msync and a
 * mapping's address are computed from.  The two differ by the segment
 * and by TS_SEG_HEADER, so confusing them is a silent, off-by-4096 bug:
 * ts__off is a struct of one word, which the compiler refuses where an
 * LSN goes and the reverse, and costs nothing (it is passed and returned
 * in a register, and the helpers are inline).  ts__lsn stays a plain
 * integer, as the AVL nodes and the descriptor hold it: it names the
 * meaning, the struct enforces the boundary.
 */
typedef uint64_t ts__lsn;
typedef struct ts__off {
	uint64_t at; /* bytes from the start of the segment file */
} ts__off;

/* The file offset of lsn in its segment, of 2^shift data bytes. */
static inline ts__off ts__off_of(unsigned shift, ts__lsn lsn)
{
	return (ts__off){TS_SEG_HEADER + (lsn & ((UINT64_C(1) << shift) - 1))};
}

/* The address of off in a mapping of its segment file from offset 0. */
static inline unsigned char *ts__off_ptr(unsigned char *base, ts__off off)
{
	return base + off.at;
}

/* off as a byte count, for pread, pwrite and fallocate. */
static inline uint64_t ts__off_bytes(ts__off off)
{
	return off.at;
}

/* One filling tablet as named by a commit (TS_ROOT_SIZE bytes on disk). */
typedef struct ts__root {
	int64_t period_start, period_len;
	ts__lsn root;       /* the AVL root node, 0 = empty */
	uint64_t rows, bytes;
	int64_t min_ts, max_ts;
	ts__lsn born;       /* the tree's first row record: its name */
	ts__lsn since;      /* the batch that began the tree: no record
	                     * of it lies before (a batch boundary) */
	uint32_t flags;     /* TS_ROOT_FROZEN */
	int64_t created;    /* writer's memory only, not in the log: the
	                     * database clock when the tree began (for a
	                     * tree found in the log, the newest commit's
	                     * time) */
	ts__lsn last;       /* writer's memory only, not in the log: the
	                     * commit that last added rows to the tree, its
	                     * newest version (0 = not known: none since the
	                     * writer opened the table; see flush.c) */
} ts__root;

/* TS_ROOT_TOMBSTONES (log_format.h): the root entry naming the chain of
 * tombstone records (tombstone.h), always the last of a commit; its
 * root is the newest record, its since the newest one the DESCRIPTOR
 * already carries, its rows the records after that. */

/* A frozen tree takes no more rows (its period's new rows go to a new
 * tree); it is being written to an on-disk tablet. */
#define TS_ROOT_FROZEN 1u

/* A parsed commit record. */
typedef struct ts__commit {
	ts__lsn lsn;        /* of the commit record */
	uint64_t seq;
	ts__lsn batch_lsn, prev_lsn;
	uint64_t rows;
	int64_t time;
	uint32_t nroots;    /* the trees (the tombstone root not counted) */
	const unsigned char *roots; /* nroots * TS_ROOT_SIZE bytes in the log */
	/* The tombstone root (tombstone.h), the entry after the trees when
	 * the commit has one (TS_ROOT_TOMBSTONES in its flags): decode it with
	 * ts__commit_root(c, c->nroots, ..).  0 = none. */
	int has_tombs;
} ts__commit;

typedef struct ts__log ts__log;

/*
 * Open the log in dir (created if missing and writable), its new segments
 * of seg_size data bytes (below).  start_lsn is a
 * batch boundary from which to scan (the descriptor's flushed_lsn).  A
 * writable log is recovered: the torn tail is erased.  Read-only logs map
 * segments lazily and never change a byte.
 * Returns 0, TS_ECORRUPT (a segment header is damaged), TS_EIO, TS_ENOMEM.
 */
int ts__log_open(const char *dir, int readonly, ts__lsn start_lsn, uint64_t seg_size,
                 ts__log **out);

/*
 * The page size a log rounds to (docs/log-format.md section 1.1): the
 * addresses it gives msync and madvise, and where recovery's hole in the
 * tail segment begins, are multiples of it from the start of a segment's
 * mapping.  It is sysconf(_SC_PAGESIZE), taken by each log when it opens
 * -- unless a larger one is forced, so that tests run the log as on a
 * machine of 16 KiB or 64 KiB pages: TSSTORE_PAGE_SIZE in the
 * environment (read once, at the first open), or
 * ts__log_force_page_size.  A forced size is honoured only when it is a
 * power of two larger than the real page size, and at most
 * TS_LOG_PAGE_FORCE_MAX: then every address it makes aligned is aligned
 * for the kernel too, and debug builds assert the alignment where the
 * kernel would refuse it on such a machine.
 */
size_t ts__log_page_size(const ts__log *log);

/* The largest page size that may be forced: the smallest segment's data
 * area is 1 MiB. */
#define TS_LOG_PAGE_FORCE_MAX (UINT64_C(1) << 20)

/* Tests: logs opened from now on use page size size when it may be
 * forced (above), the real one otherwise; 0 forgets what was forced (and
 * TSSTORE_PAGE_SIZE).  Returns the page size logs now open with.  Call it
 * while no other thread opens a log. */
size_t ts__log_force_page_size(size_t size);

/* The writer's lock: the mutex (the table's) that ts__log_begin, _alloc,
 * _commit, _abort, _release, _sync, _sync_range, _sync_done,
 * _segment_wait and _stop_preparing are called under, as their comments
 * say.  Once told, debug builds assert in each that it is held (by some
 * thread: pthreads cannot say which); a log never told (a test driving
 * one directly) asserts nothing. */
void ts__log_set_writer_lock(ts__log *log, pthread_mutex_t *mu);

/* The segment size of a log: seg_size (bytes of data per segment, a power
 * of two from 2^TS_SEG_SHIFT_MIN to 2^TS_SEG_SHIFT_MAX; 0 = TS_SEG_DATA) is
 * only what a writable log without segment files gets (a new table's).  A
 * log keeps the size of its segment files, which their headers record; the
 * oldest one's is taken at open, and a segment of another size is damage.
 * A read-only log never uses seg_size: one without segment files at open
 * takes the size of the first segment it later maps (the writer's), and
 * reports TS_SEG_DATA until then. */
uint64_t ts__log_seg_size(const ts__log *log);

/* The largest encoded row a log of seg_size segments can hold: each row
 * is one record (TS_ROWREC_HEADER and the row), and no record is larger
 * than a segment; TS_ROW_MAX bounds it too. */
static inline uint64_t ts__row_max(uint64_t seg_size)
{
	uint64_t fits = seg_size - TS_ROWREC_HEADER;
	return fits < TS_ROW_MAX ? fits : TS_ROW_MAX;
}

/* The segment holding lsn. */
uint64_t ts__log_seg_of(const ts__log *log, ts__lsn lsn);

/* Sync (writable logs), mark clean when clean is set, unmap, free. */
void ts__log_close(ts__log *log, int clean);

/* The table was dropped (its directory renamed away): stop the segment
 * preparer, so that no segment file is made under the old path, which a
 * new table of the same name may take.  The writer holds the table's
 * lock and will write no more. */
void ts__log_stop_preparing(ts__log *log);

/* A segment slot. */
typedef struct ts__log_slot {
	_Atomic uint64_t segp1; /* segment number + 1, 0 = empty */
	unsigned char *base;    /* the mapping, header page included */
} ts__log_slot;

/* The first member of every ts__log: what the inline functions below
 * need, so that addressing and appending cost no call. */
typedef struct ts__log_hot {
	ts__log_slot ring[TS_LOG_RING]; /* by segment number modulo the size */
	ts__lsn tail;         /* writer: the next free LSN */
	ts__lsn win_end;      /* writer: [tail, win_end) is mapped and free; 0 = unknown */
	unsigned char *win_at; /* writer: the address of tail when win_end != 0 */
	unsigned shift;       /* segments hold 2^shift data bytes: lsn = segment
	                       * << shift + offset (docs/log-format.md section 1) */
} ts__log_hot;

/* ts__log_ptr when the segment is not mapped in its slot: maps it
 * (read-only logs) or returns NULL. */
void *ts__log_ptr_slow(ts__log *log, ts__lsn lsn);

/* Address of lsn, or NULL when its segment is gone or unreadable.  The
 * caller guarantees [lsn, lsn + n) lies inside one record it was given. */
static inline void *ts__log_ptr(ts__log *log, ts__lsn lsn)
{
	const ts__log_hot *h = (const ts__log_hot *)(const void *)log;
	/* a read-only log may learn its shift in another thread (log.c) */
	unsigned shift = __atomic_load_n(&h->shift, __ATOMIC_RELAXED);
	uint64_t seg = lsn >> shift;
	ts__log_slot *s = &((ts__log_hot *)(void *)log)->ring[seg & (TS_LOG_RING - 1)];
	if (__builtin_expect(atomic_load_explicit(&s->segp1, memory_order_acquire) == seg + 1, 1))
		return ts__off_ptr(s->base, ts__off_of(shift, lsn));
	return ts__log_ptr_slow(log, lsn);
}

/* The newest published commit (0 = none); read-only logs first check the
 * writer's HEAD for a newer one. */
ts__lsn ts__log_head(ts__log *log);

/* Parse the commit record at lsn.  Returns 0 or TS_ECORRUPT. */
int ts__log_read_commit(ts__log *log, ts__lsn lsn, ts__commit *out);

/* Decode root i of a commit. */
void ts__commit_root(const ts__commit *c, uint32_t i, ts__root *out);

/* Commits seen by the recovery scan of ts__log_open (for stats/tests). */
uint64_t ts__log_recovered_commits(const ts__log *log);
/* Whether the log was closed cleanly before this open. */
int ts__log_was_clean(const ts__log *log);

/* The log position from which the writer's recovery gave up committed
 * batches, 0 when it did not: the log/HEAD it found named a commit at or
 * past the first invalid batch, so that batch was damaged, not torn by a
 * crash.  Its bytes through that commit were first copied to
 * <table>/quarantine/log-<position in 16 hex digits>.  *commits receives
 * the commits given up (at least 1; exact when the commit HEAD names is
 * intact). */
ts__lsn ts__log_quarantined(const ts__log *log, uint64_t *commits);

/* Time the writer spent entering new segments (waiting for the segment
 * preparer, or mapping one itself), in all and at most (*max), ns.  The
 * writer's mutex is held. */
int64_t ts__log_segment_wait(const ts__log *log, int64_t *max);

/* ---- the writer ---- */

/* Start a batch: reserve its header.  *batch_lsn receives its LSN; records
 * allocated from now on with LSN >= *batch_lsn belong to this batch. */
int ts__log_begin(ts__log *log, ts__lsn *batch_lsn);

/* ts__log_alloc past the window: moves to the next segment if needed. */
int ts__log_alloc_slow(ts__log *log, size_t n, ts__lsn *lsn, void **p);

/* Reserve n bytes (rounded up to 8) for a record of the batch.  *lsn and
 * *p receive its position and address.  Returns 0, TS_ENOSPC, TS_EIO,
 * TS_ETOOBIG (n larger than a segment). */
static inline int ts__log_alloc(ts__log *log, size_t n, ts__lsn *lsn, void **p)
{
	ts__log_hot *h = (ts__log_hot *)(void *)log;
	uint64_t size = ((uint64_t)n + 7) & ~UINT64_C(7);
	if (__builtin_expect(h->win_end != 0 && size <= h->win_end - h->tail, 1)) {
		*lsn = h->tail;
		*p = h->win_at;
		h->tail += size;
		h->win_at += size;
		return 0;
	}
	return ts__log_alloc_slow(log, n, lsn, p);
}

/* Give back the last record allocated in the batch in progress, at lsn
 * (an insert's row that turned out to be a duplicate its table ignores):
 * the tail returns to lsn, as ts__log_abort returns it to the batch's
 * start, and the next record takes its place.  Nothing allocated after
 * it may be in use.  The writer's lock is held. */
void ts__log_unalloc(ts__log *log, ts__lsn lsn);

/* Within the batch in progress, move the tail to the start of the next
 * segment (the bytes skipped belong to the batch): the batch's commit
 * and every later record lie there, so that once the flushed position
 * passes the batch, the segment holding what came before can be
 * released whole (ts_purge: no live file keeps a deleted row's bytes).
 * The writer's lock is held.  Returns 0 or an allocation error. */
int ts__log_next_segment(ts__log *log);

/* End the batch: write the commit record for roots[0..nroots), checksum
 * the batch and publish it.  Returns 0 or an allocation error (the batch
 * is then aborted). */
int ts__log_commit(ts__log *log, const ts__root *roots, uint32_t nroots,
                   uint64_t rows, int64_t now);

/* Forget the batch in progress: the tail returns to its start. */
void ts__log_abort(ts__log *log);

/* The LSN at which the next batch will start: a batch boundary from which
 * recovery may scan. */
ts__lsn ts__log_next_batch(const ts__log *log);

/* Release the segments that lie wholly before lsn (their commits are
 * all in on-disk tablets): the log's preparer deletes their files, syncs
 * the directory and unmaps them after, outside the writer's lock and the
 * log's mutex (log.c, "Dropping released segments"; when the preparer
 * cannot run, this does it).  Their mappings stay while a snapshot
 * pinned before may read them, and go when the last such unpins; readers
 * in other processes keep the pages they mapped (unlink semantics) until
 * they forget them in turn (ts__log_forget).  The writer's lock is held.
 * Returns 0, or TS_EIO when this call had to delete the files itself and
 * failed. */
int ts__log_release(ts__log *log, ts__lsn lsn);

/* Delete the released segments' files, sync the directory, and unmap
 * those no snapshot may read, now, waiting for the preparer's step in
 * flight: when it returns, no segment file a release named is left.  No
 * lock of the log's or the writer's need be held.  Returns 0 or the
 * error (TS_EIO), once. */
int ts__log_drop_released(ts__log *log);

/* Whether segments released by a flush are still to be deleted or their
 * directory synced -- work the preparer does in the background, or the
 * log's close when the preparer has not come to it.  For tests that count
 * one thread's file calls: they wait for it to be 0 before closing, so
 * that close's calls do not depend on the preparer's timing. */
int ts__log_drops_pending(ts__log *log);

/* A reader learnt (from the descriptor) that the writer released the
 * segments before lsn: unmap them once no snapshot is pinned. */
void ts__log_forget(ts__log *log, ts__lsn lsn);

/* A snapshot that may read the log pins it from before it reads the head
 * commit until it is released, so that no segment it may read is
 * unmapped under it (ts__log_release). */
void ts__log_pin(ts__log *log);
void ts__log_unpin(ts__log *log);

/* Make every published commit durable (msync).  Returns 0 or TS_EIO.
 * The caller holds the writer's lock throughout; ts__log_sync_range,
 * _pages and _done are the same in three steps, so that the msync itself
 * runs without the lock and inserts never wait for the disk. */
int ts__log_sync(ts__log *log);

/* Under the writer's lock: the LSNs [*from, *to) not yet durable, and
 * *head, the newest commit, whose record lies below *to. */
void ts__log_sync_range(const ts__log *log, ts__lsn *from, ts__lsn *to, ts__lsn *head);

/* Without the writer's lock: msync [from, to), a range ts__log_sync_range
 * returned.  Safe beside the writer: those LSNs are committed (the writer
 * never writes them again) and their segments stay mapped, since a slot
 * is remapped only when the tail enters the segment TS_LOG_RING later,
 * after this one was released by a flush.  Returns 0 or TS_EIO. */
int ts__log_sync_pages(ts__log *log, ts__lsn from, ts__lsn to);

/* Under the writer's lock again: record that [.., to) is durable, and
 * with it the commit head that ts__log_sync_range gave. */
void ts__log_sync_done(ts__log *log, ts__lsn to, ts__lsn head);

/* Under the writer's lock: the newest commit known durable -- synced by
 * ts__log_sync or a sync_range/_pages/_done, or found by the recovery
 * that opened the log (0: none yet).  Rollups take only what it says
 * (a crash can still take back every later commit). */
ts__lsn ts__log_durable_head(const ts__log *log);

/* The LSN the next record will get: bytes of log ever written, counting
 * each segment as full once the tail moved past it (for stats). */
ts__lsn ts__log_tail(const ts__log *log);

/* ---- verifying and copying a log by its files (check.c, backup.c) ---- */

/* The sorted numbers of the segment files in dir; *out is malloc'ed.
 * Returns 0, TS_ENOENT (no such directory), TS_EIO, TS_ENOMEM. */
int ts__log_segments(const char *dir, uint64_t **out, size_t *n);

/* Fill h[0..TS_SEG_HEADER) past its zeroes with the header of segment
 * seg (docs/log-format.md), its clean flag 0. */
void ts__log_segment_header(unsigned char *h, uint64_t seg, uint64_t data);

/* Whether the file system of path (a log directory, or the database's
 * for a table not yet created) lacks the bytes a new segment of seg_size
 * data bytes takes (a page more): then 1, with msg saying "<what> needs 64 MiB for a new
 * segment and the disk has 12 MiB free"; else 0 (also when it cannot
 * tell). */
int ts__log_room(const char *path, uint64_t seg_size, const char *what, char *msg, size_t room);

/* Whether a writable log's next batch must begin a new segment: it has
 * none yet, or the tail is past the middle of its segment (where the next
 * one is prepared). */
int ts__log_needs_segment(ts__log *log);

/* The file name of segment seg, "<16 hex digits>.seg". */
int ts__log_segment_name(uint64_t seg, char *out, size_t size);

/* Check segment file seg of dir: a valid header naming seg, a data size
 * of 2^shift (shift 0: any a segment may have), and exactly that size
 * and a page.  *found (may be NULL) receives the segment's shift when it
 * is sound.  Returns 0, TS_ENOENT, TS_ECORRUPT,
 * TS_EVERSION or TS_EIO, with a message naming the file. */
int ts__log_check_segment(const char *dir, uint64_t seg, unsigned shift, unsigned *found);

/* The newest commit the writer recorded in dir/HEAD.  Returns 1 with
 * *head set (0 = none yet) when HEAD is there and valid, else 0. */
int ts__log_recorded_head(const char *dir, ts__lsn *head);

/* dir/HEAD mapped read-only, for a reader that looks at it again and
 * again (ship.c): the writer updates the file in place and never
 * replaces it while the table exists, so the mapping stays its HEAD.
 * Returns 1 with *page, or 0 (no error) when HEAD is missing or shorter
 * than a page (no writer opened the table yet).  Unmap with
 * ts__log_head_unmap (NULL: nothing). */
int ts__log_head_map(const char *dir, const unsigned char **page);
void ts__log_head_unmap(const unsigned char *page);

/* The newest commit a mapped HEAD names, as ts__log_recorded_head reads
 * it (its magic, and the boot id's rule of log-format.md section 5.1):
 * 1 with *head, or 0 with *head 0. */
int ts__log_head_page_commit(const unsigned char *page, ts__lsn *head);

/* A read-only log on dir for ts__log_walk_commits: nothing is scanned
 * or mapped yet; segments are mapped on first touch, and one missing or
 * damaged only ends a walk.  Close with ts__log_close(log, 0).  Returns 0
 * or TS_ENOMEM. */
int ts__log_open_verify(const char *dir, ts__log **out);

/* A walk along the commits, as recovery makes it. */
typedef struct ts__log_walk {
	ts__lsn start;     /* in: a batch boundary (a flushed LSN) */
	ts__lsn until;     /* in: stop after the commit record at this LSN;
	                    * 0 = go on while the batches are valid */
	ts__lsn last;      /* out: the last valid commit record, 0 = none */
	uint64_t seq;      /* out: its sequence number */
	ts__lsn stop;      /* out: the batch at which the walk stopped */
	uint64_t commits;  /* out: valid commits met */
	const char *why;   /* out: why the batch at stop is not valid (a
	                    * static string), or NULL when until was met */
} ts__log_walk;

/* Validate batches from w->start as recovery does (batch header, commit
 * record, sequence, CRC-32C), up to the commit at w->until. */
void ts__log_walk_commits(ts__log *log, ts__log_walk *w);

/* Whether a batch that recovery would accept begins at lsn (its header,
 * its commit record, its CRC-32C; not its place in the sequence): what a
 * tree's since must name. */
int ts__log_batch_at(ts__log *log, ts__lsn lsn);

/* The LSN just past the commit record at head in dir's log of 2^shift
 * segments (ship.c).  Returns 0, TS_ENOENT (its segment is gone),
 * TS_ECORRUPT (no commit record there), TS_EIO. */
int ts__log_head_end(const char *dir, unsigned shift, uint64_t head, uint64_t *end);

/* The same from segment file fd of the commit at head, open already
 * (ts__log_segment_open), for a reader that keeps it open (ship.c). */
int ts__log_commit_end_in(int fd, const char *dir, unsigned shift, uint64_t head,
                          uint64_t *end);

/* Open segment seg of dir's log of 2^shift segments read-only, checked
 * as ts__log_check_segment checks it; *fd receives it (-1 on failure).
 * Returns 0, TS_ENOENT, TS_ECORRUPT, TS_EVERSION, TS_EIO. */
int ts__log_segment_open(const char *dir, uint64_t seg, unsigned shift, int *fd);

/* The shift of dir's log, from its oldest segment file; 0 when it has
 * none (or no directory).  Returns 0 or an error reading a header. */
int ts__log_shift_of(const char *dir, unsigned *shift);

/* The id of the running boot, NUL-padded, as a writer records it in
 * HEAD (docs/log-format.md section 5.1): TSSTORE_BOOT_ID when set, else
 * the kernel's, else an id no other process shares. */
void ts__log_boot_id(char out[TS_HEAD_BOOT_SIZE]);

/* ts__log_backup's head when there is no HEAD to say it. */
#define TS_LOG_HEAD_UNKNOWN UINT64_MAX

/* Copy what recovery needs of the log in src_dir to find the commits
 * from start (a flushed LSN) through the one at head, into dst_dir (an
 * existing directory): each segment file holding those bytes, at full
 * size, under a fresh header, with those bytes and nothing else (the
 * rest are holes), and a HEAD naming head; every file and dst_dir are
 * synced.  Committed bytes never change, so this is safe beside the
 * writer.  When head is TS_LOG_HEAD_UNKNOWN, or no commit record is at
 * head (a HEAD left ahead of the log by a power loss), every segment
 * from start's on is copied whole (still sparse) and recovery finds the
 * end, as it would in src_dir.  Returns 0; TS_ENOENT when a segment file needed is gone (a
 * flush released it: start from a newer descriptor); TS_ECORRUPT (a
 * damaged segment header, no commit record at head); TS_EIO; TS_ENOSPC;
 * TS_ENOMEM. */
int ts__log_backup(const char *src_dir, const char *dst_dir, ts__lsn start, ts__lsn head);

#endif
