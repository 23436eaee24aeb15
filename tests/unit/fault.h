/*
 * fault.h -- fault injection for the file-system calls of libtsstore
 * (tests/unit/fault.c; used by test_fault.c only).
 *
 * test_fault is linked with -Wl,--wrap=SYM for every file-system call the
 * library makes (the Makefile's FAULT_WRAP), so the library's calls to
 * SYM go to __wrap_SYM in fault.c.  Each wrapper counts the call if it is
 * of an armed kind and made by a thread in scope, and either fails it
 * (returns -1 / MAP_FAILED with errno set, without making the real call)
 * or passes it to the real function.  A run with nothing to fail (fail_at
 * 0) is a dry run: it counts the calls a workload makes, so a test can
 * then fail each of them in turn.
 */
#ifndef TS_TEST_FAULT_H
#define TS_TEST_FAULT_H

#include <stddef.h>

/* The kinds of call, one bit each in a mask. */
enum fault_op {
	FAULT_OPEN,       /* open for writing or creating */
	FAULT_OPEN_RDONLY, /* open O_RDONLY (a tablet, a directory to fsync) */
	FAULT_READ,       /* read, pread */
	FAULT_WRITE,      /* write, pwrite */
	FAULT_FSYNC,      /* fsync, fdatasync */
	FAULT_MSYNC,      /* msync */
	FAULT_RENAME,     /* rename, renameat2 */
	FAULT_LINK,       /* link */
	FAULT_UNLINK,     /* unlink, rmdir */
	FAULT_MKDIR,      /* mkdir */
	FAULT_FTRUNCATE,  /* ftruncate */
	FAULT_FALLOCATE,  /* fallocate */
	FAULT_MMAP,       /* mmap */
	FAULT_SYNC_RANGE, /* sync_file_range */
	FAULT_STAT,       /* stat, lstat, fstat, access */
	FAULT_OPENDIR,    /* opendir */
	FAULT_NOPS
};

#define FAULT_BIT(op) (1u << (op))
/* Calls that change files or make them durable: what a full disk fails. */
#define FAULT_MUTATING                                                              \
	(FAULT_BIT(FAULT_OPEN) | FAULT_BIT(FAULT_WRITE) | FAULT_BIT(FAULT_FSYNC) |  \
	 FAULT_BIT(FAULT_MSYNC) | FAULT_BIT(FAULT_RENAME) | FAULT_BIT(FAULT_LINK) | \
	 FAULT_BIT(FAULT_UNLINK) | FAULT_BIT(FAULT_MKDIR) |                         \
	 FAULT_BIT(FAULT_FTRUNCATE) | FAULT_BIT(FAULT_FALLOCATE) |                  \
	 FAULT_BIT(FAULT_MMAP) | FAULT_BIT(FAULT_SYNC_RANGE))
#define FAULT_ALL ((1u << FAULT_NOPS) - 1)
/* Calls a file system that ran out of space fails (with ENOSPC) while
 * reads go on: a disk that stays full, for sticky runs. */
#define FAULT_SPACE                                                                 \
	(FAULT_BIT(FAULT_OPEN) | FAULT_BIT(FAULT_WRITE) | FAULT_BIT(FAULT_FSYNC) |  \
	 FAULT_BIT(FAULT_MSYNC) | FAULT_BIT(FAULT_RENAME) | FAULT_BIT(FAULT_LINK) | \
	 FAULT_BIT(FAULT_MKDIR) | FAULT_BIT(FAULT_FTRUNCATE) |                      \
	 FAULT_BIT(FAULT_FALLOCATE))

/* Which threads' calls count. */
enum fault_scope {
	FAULT_THIS_THREAD,   /* the thread that called fault_start */
	FAULT_OTHER_THREADS, /* every other thread (the library's own) */
};

/*
 * Start counting the calls of the kinds in mask made by the threads of
 * scope.  The fail_at-th of them (1-based) fails with errno err; with
 * sticky, so does every one after it (a disk that stays full).  fail_at 0
 * fails nothing (a dry run).  Counting goes on until fault_stop.
 */
void fault_start(unsigned mask, enum fault_scope scope, long fail_at, int err, int sticky);

/* With on set, fsync, fdatasync, msync and sync_file_range that are not
 * failed return 0 without the real call, in every thread and whether
 * counting or not: a test that never loses power has no use for the
 * disk's durability, and skipping it makes a run many times faster.
 * What the library sees and does is the same. */
void fault_skip_syncs(int on);

/* From now on statvfs reports bytes free (for unprivileged writers) on
 * every file system, as a nearly full disk would; -1: the truth again.
 * statvfs is never counted or failed. */
void fault_free_space(long long bytes);

/* Stop counting and failing.  Returns the number of calls counted. */
long fault_stop(void);

/* The calls counted so far. */
long fault_count(void);

/* How many calls were failed so far (0 until the fail_at-th call). */
long fault_failed(void);

/* Name what the workload is doing ("insert 3"); kept with each counted
 * call (a static string, or one that lives until fault_stop). */
void fault_step(const char *step);

/* Where the first failed call happened: the wrapped function's name
 * ("fsync") and the step; NULL before any failure. */
const char *fault_failed_call(void);
const char *fault_failed_step(void);

/* The function name and step of the i-th (1-based) call counted since
 * fault_start, for i up to FAULT_TRACE_MAX; NULL beyond. */
#define FAULT_TRACE_MAX 100000
const char *fault_trace_call(long i);
const char *fault_trace_step(long i);

/* The name of an errno value ("ENOSPC", "EIO"). */
const char *fault_errno_name(int err);

#endif
