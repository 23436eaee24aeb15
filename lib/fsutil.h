/*
 * fsutil.h -- the file-system steps every durable change is made of.
 *
 * A file that must change atomically (a DESCRIPTOR, a finished tablet) is
 * written to NAME.tmp, fsynced, renamed over NAME, and its directory is
 * fsynced: after a crash at any point, NAME is either the old file or the
 * new one.  ts__file_stage and ts__file_commit are the two halves, kept
 * apart so tests can crash between them.
 */
#ifndef TS_FSUTIL_H
#define TS_FSUTIL_H

#include <stddef.h>

/* Write dir/name.tmp with p[0..n) and fsync it.  Returns 0 or a TS_E* code
 * (TS_ENOSPC for a full disk) with a message naming the file. */
int ts__file_stage(const char *dir, const char *name, const void *p, size_t n);

/* Rename dir/name.tmp to dir/name and fsync dir.  A failed rename returns
 * its TS_E* code, removes dir/name.tmp and leaves dir/name alone; a failed
 * fsync of dir returns TS_EIO with dir/name already replaced
 * (ts__fsync_dir). */
int ts__file_commit(const char *dir, const char *name);

/* Both halves. */
int ts__file_write_atomic(const char *dir, const char *name, const void *p, size_t n);

/* fsync a directory, making the renames and creations in it durable.
 * Returns 0, or TS_EIO for any failure (opening dir or syncing it), with a
 * message naming dir and the system's reason. */
int ts__fsync_dir(const char *dir);

/* Read a whole file of at most max bytes into a malloc'ed buffer.
 * Returns 0, TS_ENOENT, TS_ETOOBIG (larger than max), TS_EIO, TS_ENOMEM. */
int ts__read_file(const char *path, size_t max, void **out, size_t *n);

/* Write all of p[0..n) at offset off of fd, the file at path (retrying
 * short writes and EINTR).  Returns 0, or the TS_E* code of the failure
 * (TS_ENOSPC for a full disk, TS_EIO for most others) with the message
 * "write PATH: REASON". */
int ts__write_at(int fd, const void *p, size_t n, long long off, const char *path);

/* Remove a directory tree (no symlinks followed).  Returns 0 or a TS_E*. */
int ts__rmtree(const char *path);

/* mkdir -p.  Returns 0 or a TS_E* code. */
int ts__mkdirs(const char *path, int mode);

/* snprintf into a path buffer of TS_PATH_MAX; TS_ETOOBIG if cut. */
int ts__path(char *out, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
