/*
 * fault.c -- the wrappers behind fault.h: libtsstore's file-system calls,
 * counted and failed on command.
 *
 * How the calls get here.  test_fault is linked with -Wl,--wrap=SYM for
 * each SYM of the Makefile's FAULT_WRAP list.  GNU ld then resolves every
 * undefined reference to SYM in the objects it links -- libtsstore.a's
 * members, statically linked, included -- to __wrap_SYM, and references
 * to __real_SYM to the real SYM (glibc's, or a sanitizer's interceptor).
 * Calls made inside glibc itself (nftw's lstat, say) are not redirected;
 * calls the library makes from a callback (nftw's unlink) are.  The
 * Makefile checks with nm that libtsstore.a references no file-system
 * call left out of the list (open64, openat, write, ...), so a new kind
 * of call in the library cannot silently escape the sweep.
 *
 * State.  Between fault_start and fault_stop, each call of a kind in the
 * mask made by a thread in scope is counted (under a mutex, with its
 * name and the test's current step in a trace); the fail_at-th (and,
 * when sticky, every later one) returns -1 -- MAP_FAILED for mmap --
 * with errno set, without the real call being made.  Outside that
 * window, and for calls out of scope, the wrappers only pass through:
 * the test's own file operations are never counted.  A failed call has
 * no effect on the file system, like a write refused by a full disk or
 * an I/O error reported before any byte moved; close is never failed.
 */
#include <errno.h>
#include <execinfo.h>
#include <fcntl.h>
#include <dirent.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/types.h>
#include <unistd.h>

#include "fault.h"

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static int active;                /* atomic: counting */
static pthread_t owner;           /* the thread that called fault_start */
static unsigned mask;
static enum fault_scope scope;
static long fail_at, count, failed;
static int fail_errno, sticky;
static int skip_syncs;            /* atomic */
static const char *step = "", *failed_call, *failed_step;
static struct {
	const char *call, *step;
} trace[FAULT_TRACE_MAX];

void fault_start(unsigned m, enum fault_scope s, long at, int err, int stick)
{
	pthread_mutex_lock(&mu);
	owner = pthread_self();
	mask = m;
	scope = s;
	fail_at = at;
	fail_errno = err;
	sticky = stick;
	count = failed = 0;
	step = "";
	failed_call = failed_step = NULL;
	__atomic_store_n(&active, 1, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&mu);
}

static long long free_space = -1;

void fault_free_space(long long bytes)
{
	__atomic_store_n(&free_space, bytes, __ATOMIC_RELAXED);
}

int __real_statvfs(const char *path, struct statvfs *v);
int __wrap_statvfs(const char *path, struct statvfs *v);

int __wrap_statvfs(const char *path, struct statvfs *v)
{
	long long bytes = __atomic_load_n(&free_space, __ATOMIC_RELAXED);
	int rc = __real_statvfs(path, v);
	if (rc == 0 && bytes >= 0)
		v->f_bavail = (fsblkcnt_t)((unsigned long long)bytes / v->f_frsize);
	return rc;
}

void fault_skip_syncs(int on)
{
	__atomic_store_n(&skip_syncs, on, __ATOMIC_RELAXED);
}

/* A sync that is not failed: skipped (0) or made. */
static int skipped(void)
{
	return __atomic_load_n(&skip_syncs, __ATOMIC_RELAXED);
}

long fault_stop(void)
{
	pthread_mutex_lock(&mu);
	__atomic_store_n(&active, 0, __ATOMIC_RELEASE);
	long n = count;
	pthread_mutex_unlock(&mu);
	return n;
}

long fault_count(void)
{
	pthread_mutex_lock(&mu);
	long n = count;
	pthread_mutex_unlock(&mu);
	return n;
}

long fault_failed(void)
{
	pthread_mutex_lock(&mu);
	long n = failed;
	pthread_mutex_unlock(&mu);
	return n;
}

void fault_step(const char *s)
{
	pthread_mutex_lock(&mu);
	step = s;
	pthread_mutex_unlock(&mu);
}

const char *fault_failed_call(void) { return failed_call; }
const char *fault_failed_step(void) { return failed_step; }

const char *fault_trace_call(long i)
{
	return i >= 1 && i <= FAULT_TRACE_MAX && i <= count ? trace[i - 1].call : NULL;
}

const char *fault_trace_step(long i)
{
	return i >= 1 && i <= FAULT_TRACE_MAX && i <= count ? trace[i - 1].step : NULL;
}

const char *fault_errno_name(int err)
{
	switch (err) {
	case ENOSPC: return "ENOSPC";
	case EIO: return "EIO";
	case EDQUOT: return "EDQUOT";
	case EROFS: return "EROFS";
	default: return "E?";
	}
}

/* Count a call of kind op named name; 1 when it must fail (errno set). */
static int hit(enum fault_op op, const char *name)
{
	int err = 0, saved = errno;
	if (!__atomic_load_n(&active, __ATOMIC_ACQUIRE))
		return 0;
	pthread_mutex_lock(&mu);
	int mine = pthread_equal(pthread_self(), owner) != 0;
	if (active && (mask & FAULT_BIT(op)) && mine == (scope == FAULT_THIS_THREAD)) {
		long n = ++count;
		if (n <= FAULT_TRACE_MAX) {
			trace[n - 1].call = name;
			trace[n - 1].step = step;
		}
		if (fail_at > 0 && (n == fail_at || (sticky && n > fail_at))) {
			if (failed++ == 0) {
				failed_call = name;
				failed_step = step;
			}
			err = fail_errno;
		}
	}
	pthread_mutex_unlock(&mu);
	if (err && getenv("TSSTORE_FAULT_BACKTRACE")) { /* where the failure lands */
		void *frames[32];
		fprintf(stderr, "fault: %s fails with %s at:\n", name, fault_errno_name(err));
		backtrace_symbols_fd(frames, backtrace(frames, 32), 2);
	}
	errno = err ? err : saved;
	return err != 0;
}

/* ---- the wrappers (prototypes first: -Wmissing-prototypes) ---- */

int __real_open(const char *path, int flags, ...);
ssize_t __real_read(int fd, void *buf, size_t n);
ssize_t __real_pread(int fd, void *buf, size_t n, off_t off);
ssize_t __real_write(int fd, const void *buf, size_t n);
ssize_t __real_pwrite(int fd, const void *buf, size_t n, off_t off);
int __real_fsync(int fd);
int __real_fdatasync(int fd);
int __real_msync(void *addr, size_t len, int flags);
int __real_rename(const char *from, const char *to);
int __real_renameat2(int fromfd, const char *from, int tofd, const char *to, unsigned flags);
int __real_link(const char *from, const char *to);
int __real_unlink(const char *path);
int __real_rmdir(const char *path);
int __real_mkdir(const char *path, mode_t mode);
int __real_ftruncate(int fd, off_t len);
int __real_fallocate(int fd, int mode, off_t off, off_t len);
void *__real_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off);
int __real_sync_file_range(int fd, off_t off, off_t n, unsigned flags);
int __real_stat(const char *path, struct stat *st);
int __real_lstat(const char *path, struct stat *st);
int __real_statx(int dirfd, const char *path, int flags, unsigned want, struct statx *sx);
int __real_fstat(int fd, struct stat *st);
int __real_access(const char *path, int mode);
DIR *__real_opendir(const char *path);

int __wrap_open(const char *path, int flags, ...);
ssize_t __wrap_read(int fd, void *buf, size_t n);
ssize_t __wrap_pread(int fd, void *buf, size_t n, off_t off);
ssize_t __wrap_write(int fd, const void *buf, size_t n);
ssize_t __wrap_pwrite(int fd, const void *buf, size_t n, off_t off);
int __wrap_fsync(int fd);
int __wrap_fdatasync(int fd);
int __wrap_msync(void *addr, size_t len, int flags);
int __wrap_rename(const char *from, const char *to);
int __wrap_renameat2(int fromfd, const char *from, int tofd, const char *to, unsigned flags);
int __wrap_link(const char *from, const char *to);
int __wrap_unlink(const char *path);
int __wrap_rmdir(const char *path);
int __wrap_mkdir(const char *path, mode_t mode);
int __wrap_ftruncate(int fd, off_t len);
int __wrap_fallocate(int fd, int mode, off_t off, off_t len);
void *__wrap_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off);
int __wrap_sync_file_range(int fd, off_t off, off_t n, unsigned flags);
int __wrap_stat(const char *path, struct stat *st);
int __wrap_lstat(const char *path, struct stat *st);
int __wrap_fstat(int fd, struct stat *st);
int __wrap_statx(int dirfd, const char *path, int flags, unsigned want, struct statx *sx);
int __wrap_access(const char *path, int mode);
DIR *__wrap_opendir(const char *path);

int __wrap_open(const char *path, int flags, ...)
{
	int mode = 0;
	if ((flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE) {
		va_list ap;
		va_start(ap, flags);
		mode = va_arg(ap, int);
		va_end(ap);
	}
	int rdonly = (flags & O_ACCMODE) == O_RDONLY && !(flags & (O_CREAT | O_TRUNC));
	return hit(rdonly ? FAULT_OPEN_RDONLY : FAULT_OPEN, "open") ? -1
	                                                            : __real_open(path, flags, mode);
}

ssize_t __wrap_read(int fd, void *buf, size_t n)
{
	return hit(FAULT_READ, "read") ? -1 : __real_read(fd, buf, n);
}

ssize_t __wrap_pread(int fd, void *buf, size_t n, off_t off)
{
	return hit(FAULT_READ, "pread") ? -1 : __real_pread(fd, buf, n, off);
}

ssize_t __wrap_write(int fd, const void *buf, size_t n)
{
	return hit(FAULT_WRITE, "write") ? -1 : __real_write(fd, buf, n);
}

ssize_t __wrap_pwrite(int fd, const void *buf, size_t n, off_t off)
{
	return hit(FAULT_WRITE, "pwrite") ? -1 : __real_pwrite(fd, buf, n, off);
}

int __wrap_fsync(int fd)
{
	return hit(FAULT_FSYNC, "fsync") ? -1 : skipped() ? 0 : __real_fsync(fd);
}

int __wrap_fdatasync(int fd)
{
	return hit(FAULT_FSYNC, "fdatasync") ? -1 : skipped() ? 0 : __real_fdatasync(fd);
}

int __wrap_msync(void *addr, size_t len, int flags)
{
	return hit(FAULT_MSYNC, "msync") ? -1 : skipped() ? 0 : __real_msync(addr, len, flags);
}

int __wrap_rename(const char *from, const char *to)
{
	return hit(FAULT_RENAME, "rename") ? -1 : __real_rename(from, to);
}

int __wrap_renameat2(int fromfd, const char *from, int tofd, const char *to, unsigned flags)
{
	return hit(FAULT_RENAME, "renameat2") ? -1 : __real_renameat2(fromfd, from, tofd, to, flags);
}

int __wrap_link(const char *from, const char *to)
{
	return hit(FAULT_LINK, "link") ? -1 : __real_link(from, to);
}

int __wrap_unlink(const char *path)
{
	return hit(FAULT_UNLINK, "unlink") ? -1 : __real_unlink(path);
}

int __wrap_rmdir(const char *path)
{
	return hit(FAULT_UNLINK, "rmdir") ? -1 : __real_rmdir(path);
}

int __wrap_mkdir(const char *path, mode_t mode)
{
	return hit(FAULT_MKDIR, "mkdir") ? -1 : __real_mkdir(path, mode);
}

int __wrap_ftruncate(int fd, off_t len)
{
	return hit(FAULT_FTRUNCATE, "ftruncate") ? -1 : __real_ftruncate(fd, len);
}

int __wrap_fallocate(int fd, int mode, off_t off, off_t len)
{
	return hit(FAULT_FALLOCATE, "fallocate") ? -1 : __real_fallocate(fd, mode, off, len);
}

void *__wrap_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	/* Only file mappings: an allocator's anonymous mmap is not I/O. */
	if (!(flags & MAP_ANONYMOUS) && hit(FAULT_MMAP, "mmap"))
		return MAP_FAILED;
	return __real_mmap(addr, len, prot, flags, fd, off);
}

int __wrap_sync_file_range(int fd, off_t off, off_t n, unsigned flags)
{
	if (hit(FAULT_SYNC_RANGE, "sync_file_range"))
		return -1;
	return skipped() ? 0 : __real_sync_file_range(fd, off, n, flags);
}

int __wrap_stat(const char *path, struct stat *st)
{
	return hit(FAULT_STAT, "stat") ? -1 : __real_stat(path, st);
}

int __wrap_lstat(const char *path, struct stat *st)
{
	return hit(FAULT_STAT, "lstat") ? -1 : __real_lstat(path, st);
}

int __wrap_fstat(int fd, struct stat *st)
{
	return hit(FAULT_STAT, "fstat") ? -1 : __real_fstat(fd, st);
}

int __wrap_statx(int dirfd, const char *path, int flags, unsigned want, struct statx *sx)
{
	return hit(FAULT_STAT, "statx") ? -1 : __real_statx(dirfd, path, flags, want, sx);
}

int __wrap_access(const char *path, int mode)
{
	return hit(FAULT_STAT, "access") ? -1 : __real_access(path, mode);
}

DIR *__wrap_opendir(const char *path)
{
	return hit(FAULT_OPENDIR, "opendir") ? NULL : __real_opendir(path);
}
