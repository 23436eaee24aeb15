/*
 * fsutil.c -- atomic file replacement, directory sync, whole-file reads,
 * tree removal: the POSIX calls behind every durable change, each mapped
 * to a TS_E* code with a message that names the file.
 */
#define _XOPEN_SOURCE 700
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "error.h"
#include "fsutil.h"
#include "tslimits.h"

int ts__path(char *out, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(out, TS_PATH_MAX, fmt, ap);
	va_end(ap);
	if (n < 0 || n >= TS_PATH_MAX)
		return ts__fail(TS_ETOOBIG, "path too long");
	return 0;
}

/* Write all of p[0..n) at off, retrying short writes and EINTR.
 * Returns 0, or the errno of the failure (EIO for a write of nothing). */
static int write_all(int fd, const void *p, size_t n, long long off)
{
	const char *c = p;
	while (n > 0) {
		ssize_t w = pwrite(fd, c, n, (off_t)off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return errno;
		if (w == 0)
			return EIO;
		c += w;
		n -= (size_t)w;
		off += w;
	}
	return 0;
}

int ts__write_at(int fd, const void *p, size_t n, long long off, const char *path)
{
	int err = write_all(fd, p, n, off);
	return err ? ts__fail_errno(err, "write %s", path) : 0;
}

/* Every failure is TS_EIO, whatever the errno (EINVAL from a file system
 * that cannot sync directories, EROFS, ENOSPC, ...): the caller has just
 * renamed something in dir, a step that cannot be taken back, and what it
 * must report is that the step may not be durable, not why. */
int ts__fsync_dir(const char *dir)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC), rc = 0;
	if (fd < 0) {
		ts__fail_errno(errno, "open directory %s to fsync it", dir);
		return TS_EIO;
	}
	if (fsync(fd) < 0) {
		ts__fail_errno(errno, "fsync directory %s", dir);
		rc = TS_EIO;
	}
	close(fd);
	return rc;
}

int ts__file_stage(const char *dir, const char *name, const void *p, size_t n)
{
	char tmp[TS_PATH_MAX];
	int rc, fd = -1;
	if ((rc = ts__path(tmp, "%s/%s.tmp", dir, name)) < 0)
		return rc;
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return ts__fail_errno(errno, "create %s", tmp);
	rc = ts__write_at(fd, p, n, 0, tmp);
	if (rc == 0 && fsync(fd) < 0)
		rc = ts__fail_errno(errno, "fsync %s", tmp);
	close(fd);
	if (rc < 0)
		unlink(tmp);
	return rc;
}

int ts__file_commit(const char *dir, const char *name)
{
	char tmp[TS_PATH_MAX], dst[TS_PATH_MAX];
	int rc;
	if ((rc = ts__path(tmp, "%s/%s.tmp", dir, name)) < 0 ||
	    (rc = ts__path(dst, "%s/%s", dir, name)) < 0)
		return rc;
	if (rename(tmp, dst) < 0) {
		rc = ts__fail_errno(errno, "rename %s to %s", tmp, dst);
		unlink(tmp); /* nothing else would ever remove it */
		return rc;
	}
	return ts__fsync_dir(dir);
}

int ts__file_write_atomic(const char *dir, const char *name, const void *p, size_t n)
{
	int rc = ts__file_stage(dir, name, p, n);
	return rc < 0 ? rc : ts__file_commit(dir, name);
}

int ts__read_file(const char *path, size_t max, void **out, size_t *n)
{
	struct stat st;
	int rc = 0, fd = open(path, O_RDONLY | O_CLOEXEC);
	char *data = NULL;
	*out = NULL;
	*n = 0;
	if (fd < 0)
		return ts__fail_errno(errno, "open %s", path);
	if (fstat(fd, &st) < 0) {
		rc = ts__fail_errno(errno, "stat %s", path);
		goto out;
	}
	if ((size_t)st.st_size > max) {
		rc = ts__fail(TS_ETOOBIG, "%s: %lld bytes, more than the %zu allowed",
		              path, (long long)st.st_size, max);
		goto out;
	}
	if (!(data = malloc((size_t)st.st_size + 1))) {
		rc = ts__fail(TS_ENOMEM, "out of memory reading %s", path);
		goto out;
	}
	ssize_t got = pread(fd, data, (size_t)st.st_size, 0);
	if (got < 0) {
		rc = ts__fail_errno(errno, "read %s", path);
		goto out;
	}
	*out = data;
	*n = (size_t)got;
	data = NULL;
out:
	free(data);
	close(fd);
	return rc;
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st; (void)ftw;
	int r = flag == FTW_DP ? rmdir(path) : unlink(path);
	return r < 0 && errno != ENOENT ? -1 : 0;
}

int ts__rmtree(const char *path)
{
	if (nftw(path, rm_entry, 16, FTW_DEPTH | FTW_PHYS) < 0 && errno != ENOENT)
		return ts__fail_errno(errno, "remove %s", path);
	return 0;
}

int ts__mkdirs(const char *path, int mode)
{
	char buf[TS_PATH_MAX];
	int rc = ts__path(buf, "%s", path);
	if (rc < 0)
		return rc;
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(buf, (mode_t)mode) < 0 && errno != EEXIST)
			return ts__fail_errno(errno, "mkdir %s", buf);
		*p = '/';
	}
	if (mkdir(buf, (mode_t)mode) < 0 && errno != EEXIST)
		return ts__fail_errno(errno, "mkdir %s", buf);
	return 0;
}
