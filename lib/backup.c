/*
 * backup.c -- ts_backup: a consistent copy of a database, made beside a
 * writer (docs/check-and-backup.md).
 *
 * The copy is built in <dest>.tmp-<pid>, one table after the other, and
 * renamed to dest once every file and directory in it is durable; dest
 * itself never holds half a copy.  First the database's EPOCH (the copy
 * is of the same lineage and epoch), then per table: DESCRIPTOR, tablets/ (hard
 * links: tablets are immutable), log/ (the part recovery needs, sparse).
 * An incremental backup (ts_backup_incremental) takes each tablet an
 * earlier copy in dest holds (same name, size, first and last bytes)
 * from that copy instead, and exchanges the new copy with the earlier
 * one at the end.
 *
 * Why a table's copy is consistent.  Copy one table as:
 *
 *   1. read DESCRIPTOR, bytes D (flushed position F, tablets T);
 *   2. read the writer's newest commit H from log/HEAD;
 *   3. read DESCRIPTOR again; unless it is D byte for byte, start over;
 *   4. hard-link every tablet of T;
 *   5. copy the log from F through the end of the commit at H;
 *   6. write D as the copy's DESCRIPTOR.
 *
 * Opening the copy recovers T plus the filling tablets of H whose tree is
 * not the source of a tablet of T -- what a snapshot taking commit H
 * with descriptor D reads.  That is exactly the batches up to H when D
 * was the descriptor at the moment H was read, which step 3 makes sure
 * of (generations only grow, so an unchanged file was never replaced):
 *   - no row of a later batch: a tablet of D holds rows of trees frozen
 *     by commits made before D was written, so before H;
 *   - no row twice: a tree of H that was flushed into a tablet of D is
 *     that tablet's source, and skipped -- unless a merge or an expiry
 *     replaced the tablet since; but those write their descriptor after
 *     the commit that dropped the tree (a flush writes its descriptor and
 *     makes that commit under desc_mu), so before D, so before H: H no
 *     longer names the tree;
 *   - no row missing: a tree that H no longer names was dropped by a
 *     commit before H, made after the descriptor naming its tablet,
 *     which is therefore D or older; D holds its rows (or their merge);
 *   - every record of H's trees lies at or after F: F is the oldest start
 *     of any tree but the one being flushed when D was written, and trees
 *     begun later start after it.
 * Steps 4 and 5 need the files of D and the log bytes [F, H] to be there
 * when they are opened, not that D stays current: tablets and committed
 * log bytes never change, and a file, once open, stays readable after
 * its unlink.  A writer deletes a tablet only after a descriptor stops
 * naming it, and a log segment only once a descriptor's flushed position
 * passed it; so a file found missing means D is stale, and the table is
 * copied again from step 1 (BACKUP_ATTEMPTS times at most, then
 * TS_EBUSY).  Tables are consistent one by one, not with each other:
 * no batch spans two tables.
 *
 * A table whose log has no HEAD (never opened by a writer, so no writer
 * is at work) has its log copied from F to its last segment, and
 * recovery finds the end, as it would in the source.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "api.h"
#include "descriptor.h"
#include "descriptor_format.h"
#include "epoch.h"
#include "epoch_format.h"
#include "error.h"
#include "fsutil.h"
#include "handle.h"
#include "tslimits.h"
#include "log.h"
#include "rollupdef.h"
#include "tablet.h"

/* Copies of one table, before a table that keeps changing is TS_EBUSY. */
#define BACKUP_ATTEMPTS 16

/* copy_once: the descriptor changed under it; try again. */
#define AGAIN 1
/* copy_once: the table was dropped; leave it out. */
#define DROPPED 2

/* ---- files ---- */

/* Copy the file src to dst (created), synced.  A missing src is
 * TS_ENOENT. */
static int copy_file(const char *src, const char *dst)
{
	char buf[1 << 16];
	int in = open(src, O_RDONLY | O_CLOEXEC), out = -1, rc = 0;
	long long off = 0;
	if (in < 0)
		return errno == ENOENT ? TS_ENOENT : ts__fail_errno(errno, "open %s", src);
	if ((out = open(dst, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644)) < 0)
		rc = ts__fail_errno(errno, "create %s", dst);
	while (rc == 0) {
		ssize_t n = read(in, buf, sizeof buf);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			rc = ts__fail_errno(errno, "read %s", src);
		if (n <= 0)
			break;
		rc = ts__write_at(out, buf, (size_t)n, off, dst);
		off += n;
	}
	if (rc == 0 && fsync(out) < 0)
		rc = ts__fail_errno(errno, "fsync %s", dst);
	close(in);
	if (out >= 0)
		close(out);
	return rc;
}

/* Hard-link src as dst, or copy it where links cannot be made (another
 * file system, or one without links).  A missing src is TS_ENOENT. */
static int link_or_copy(const char *src, const char *dst)
{
	if (link(src, dst) == 0)
		return 0;
	if (errno == ENOENT)
		return TS_ENOENT;
	if (errno == EXDEV || errno == EPERM || errno == EMLINK || errno == ENOTSUP)
		return copy_file(src, dst);
	return ts__fail_errno(errno, "link %s to %s", src, dst);
}

/* The first and the last TAIL bytes of two files of one size must agree
 * for a tablet of an earlier copy to stand for the database's: tablets
 * are named by id and never change, so within one database's copies the
 * name decides; the bytes guard against a copy of another database,
 * whose tablet of the same id differs (its header, its footer). */
#define TAIL 4096

/* The bytes [off, off + n) of the open file fd into buf.  Returns 0 or an
 * error (a short file is TS_EIO: the sizes were checked before). */
static int read_span(int fd, char *buf, size_t n, off_t off, const char *path)
{
	while (n) {
		ssize_t r = pread(fd, buf, n, off);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return ts__fail_errno(errno, "read %s", path);
		if (r == 0)
			return ts__fail(TS_EIO, "%s: shorter than its size", path);
		buf += r, n -= (size_t)r, off += r;
	}
	return 0;
}

/* Whether the file old (of an earlier copy) holds the same tablet as the
 * file cur: same size, same first and last TAIL bytes.  1 or 0 (old
 * missing or unreadable as a regular file: 0), or an error reading cur,
 * whose absence is TS_ENOENT. */
static int same_tablet(const char *cur, const char *old)
{
	char a[2][TAIL], b[2][TAIL];
	struct stat sa, sb;
	int fa = open(cur, O_RDONLY | O_CLOEXEC), fb = -1, rc = 0;
	if (fa < 0)
		return errno == ENOENT ? TS_ENOENT : ts__fail_errno(errno, "open %s", cur);
	if (fstat(fa, &sa) < 0)
		rc = ts__fail_errno(errno, "stat %s", cur);
	else if ((fb = open(old, O_RDONLY | O_CLOEXEC)) < 0 || fstat(fb, &sb) < 0 ||
	         !S_ISREG(sb.st_mode) || sb.st_size != sa.st_size)
		rc = 0;
	else {
		size_t n = sa.st_size < TAIL ? (size_t)sa.st_size : TAIL;
		off_t last = sa.st_size - (off_t)n;
		rc = read_span(fa, a[0], n, 0, cur);
		if (rc == 0)
			rc = read_span(fa, a[1], n, last, cur);
		/* the old file unreadable: copy the tablet anew */
		if (rc == 0)
			rc = read_span(fb, b[0], n, 0, old) == 0 && read_span(fb, b[1], n, last, old) == 0 &&
			     memcmp(a[0], b[0], n) == 0 && memcmp(a[1], b[1], n) == 0;
		if (rc == 0)
			ts__clear_error();
	}
	close(fa);
	if (fb >= 0)
		close(fb);
	return rc;
}

/* Read dir/DESCRIPTOR whole. */
static int read_descriptor(const char *dir, void **data, size_t *n)
{
	char path[TS_PATH_MAX];
	int rc = ts__path(path, "%s/%s", dir, TS_DESC_FILE);
	if (rc < 0)
		return rc;
	rc = ts__read_file(path, TS_DESCRIPTOR_MAX, data, n);
	return rc == TS_ETOOBIG ? ts__fail(TS_ECORRUPT, "%s: larger than a descriptor can be", path)
	                        : rc;
}

/* Whether dir/DESCRIPTOR still holds data[0..n).  1 or 0, or an error. */
static int unchanged(const char *dir, const void *data, size_t n)
{
	void *now;
	size_t len;
	int rc = read_descriptor(dir, &now, &len);
	if (rc < 0)
		return rc == TS_ENOENT ? 0 : rc;
	rc = len == n && memcmp(now, data, n) == 0;
	free(now);
	return rc;
}

/* ---- one table ---- */

/* src/ROLLUP whole into *data (NULL when src is no rollup).  Returns 0
 * or an error. */
static int read_rollup(const char *src, void **data, size_t *n)
{
	char path[TS_PATH_MAX];
	int rc = ts__path(path, "%s/%s", src, TS_ROLLUP_FILE);
	*data = NULL;
	*n = 0;
	if (rc == 0 && (rc = ts__read_file(path, TS_ROLLUP_FILE_MAX, data, n)) == TS_ENOENT) {
		ts__clear_error();
		rc = 0;
	}
	return rc;
}

/* Steps 1 to 3: the descriptor's bytes, its decoding and the head that
 * goes with it.  Returns 0, AGAIN, DROPPED, or an error. */
static int pin(const char *src, const char *logdir, void **data, size_t *n,
               ts__descriptor **d, uint64_t *head)
{
	int rc = read_descriptor(src, data, n);
	if (rc == TS_ENOENT)
		return DROPPED;
	if (rc < 0)
		return rc;
	if ((rc = ts__descriptor_decode(*data, *n, d)) < 0)
		return ts__context(rc, "%s/%s", src, TS_DESC_FILE);
	if (!ts__log_recorded_head(logdir, head))
		*head = TS_LOG_HEAD_UNKNOWN;
	rc = unchanged(src, *data, *n);
	return rc < 0 ? rc : rc ? 0 : AGAIN;
}

/* Step 4: link every tablet of d from src to dst -- or, with prev (the
 * table's directory in an earlier copy), from prev where it holds the
 * same tablet.  Returns 0, AGAIN, or an error. */
static int link_tablets(const char *src, const char *dst, const char *prev,
                        const ts__descriptor *d)
{
	char name[64], from[TS_PATH_MAX], to[TS_PATH_MAX], old[TS_PATH_MAX];
	int rc = 0;
	for (int i = 0; rc == 0 && i < d->ntablets; i++) {
		if ((rc = ts__tablet_name(d->tablets[i].id, name, sizeof name)) < 0 ||
		    (rc = ts__path(from, "%s/tablets/%s", src, name)) < 0 ||
		    (rc = ts__path(to, "%s/tablets/%s", dst, name)) < 0)
			break;
		if (prev && (rc = ts__path(old, "%s/tablets/%s", prev, name)) == 0 &&
		    (rc = same_tablet(from, old)) == 1) {
			rc = link_or_copy(old, to);
			continue;
		}
		if (rc == 0)
			rc = link_or_copy(from, to);
	}
	if (rc == 0 && (rc = ts__path(to, "%s/tablets", dst)) == 0)
		rc = ts__fsync_dir(to);
	return rc == TS_ENOENT ? AGAIN : rc;
}

static int make_dirs(const char *dst)
{
	char sub[TS_PATH_MAX];
	int rc = ts__mkdirs(dst, 0755);
	if (rc == 0 && (rc = ts__path(sub, "%s/tablets", dst)) == 0)
		rc = ts__mkdirs(sub, 0755);
	if (rc == 0 && (rc = ts__path(sub, "%s/log", dst)) == 0)
		rc = ts__mkdirs(sub, 0755);
	return rc;
}

/* One attempt at copying table directory src to dst (not existing yet),
 * taking the tablets prev (an earlier copy's, or NULL) holds from there.
 * Returns 0, AGAIN, DROPPED, or an error. */
static int copy_once(const char *src, const char *dst, const char *prev)
{
	char srclog[TS_PATH_MAX], dstlog[TS_PATH_MAX];
	ts__descriptor *d = NULL;
	void *data = NULL;
	size_t n = 0;
	uint64_t head = 0;
	void *roll = NULL;
	size_t nroll = 0;
	int rc = ts__path(srclog, "%s/log", src);
	if (rc == 0)
		rc = ts__path(dstlog, "%s/log", dst);
	/* A rollup's definition, read before the rows are: its watermark then
	 * claims no row the copy lacks (docs/rollup-format.md). */
	if (rc == 0 && (rc = read_rollup(src, &roll, &nroll)) == 0)
		rc = pin(src, srclog, &data, &n, &d, &head);
	if (rc == 0)
		rc = make_dirs(dst);
	if (rc == 0)
		rc = link_tablets(src, dst, prev, d);
	if (rc == 0 && (rc = ts__log_backup(srclog, dstlog, d->flushed_lsn, head)) == TS_ENOENT)
		rc = AGAIN;
	if (rc == 0 && roll)
		rc = ts__file_write_atomic(dst, TS_ROLLUP_FILE, roll, nroll);
	if (rc == 0) /* step 6; syncs dst, whose entries are all in place */
		rc = ts__file_write_atomic(dst, TS_DESC_FILE, data, n);
	ts__descriptor_free(d, 1);
	free(data);
	free(roll);
	return rc;
}

/* Copy table name of db into root/name, again while its files move;
 * with prev (an earlier copy's root, or NULL), its tablets from there
 * where it holds them. */
static int copy_table(ts_db *db, const char *name, const char *root, const char *prev)
{
	char src[TS_PATH_MAX], dst[TS_PATH_MAX], old[TS_PATH_MAX];
	int rc = ts__path(src, "%s/%s", db->path, name);
	if (rc == 0)
		rc = ts__path(dst, "%s/%s", root, name);
	if (rc == 0 && prev)
		rc = ts__path(old, "%s/%s", prev, name);
	for (int attempt = 1; rc == 0; attempt++) {
		if ((rc = copy_once(src, dst, prev ? old : NULL)) != AGAIN && rc != DROPPED)
			break;
		int again = rc == AGAIN;
		if ((rc = ts__rmtree(dst)) < 0 || !again)
			break;
		if (attempt == BACKUP_ATTEMPTS)
			rc = ts__fail(TS_EBUSY, "table \"%s\" changed under each of %d attempts to copy it",
			              name, BACKUP_ATTEMPTS);
	}
	return rc < 0 ? ts__context(rc, "table \"%s\"", name) : 0;
}

/* ---- the database ---- */

/* Rename from to to, failing with TS_EEXIST if to exists. */
static int rename_new(const char *from, const char *to)
{
	struct stat st;
	if (renameat2(AT_FDCWD, from, AT_FDCWD, to, RENAME_NOREPLACE) == 0)
		return 0;
	if (errno != EINVAL && errno != ENOSYS) /* the file system cannot: check, then rename */
		return errno == EEXIST ? ts__fail(TS_EEXIST, "%s already exists", to)
		                       : ts__fail_errno(errno, "rename %s to %s", from, to);
	if (lstat(to, &st) == 0)
		return ts__fail(TS_EEXIST, "%s already exists", to);
	return rename(from, to) == 0 ? 0 : ts__fail_errno(errno, "rename %s to %s", from, to);
}

/* The directory holding path (its parent; "." for a bare name). */
static int parent_of(const char *path, char *out)
{
	int rc = ts__path(out, "%s", path);
	char *slash = rc == 0 ? strrchr(out, '/') : NULL;
	if (rc < 0)
		return rc;
	if (!slash)
		return ts__path(out, ".");
	slash[slash == out] = '\0'; /* "/x" -> "/" */
	return 0;
}

/* Refuse a destination inside the database directory (to itself, or its
 * parent when to does not exist, with symbolic links resolved, is the
 * directory or below it): the copy would become part of what it copies.
 * Returns 0, TS_EINVAL, or TS_ENOENT when the parent does not exist. */
static int check_outside(const ts_db *db, const char *parent, const char *to)
{
	char *p = realpath(to, NULL), *d = realpath(db->path, NULL);
	int rc = 0;
	if (!p) /* to does not exist (as it should): its parent then */
		p = realpath(parent, NULL);
	if (!p || !d)
		rc = ts__fail_errno(errno, "backup: %s", !p ? parent : db->path);
	else if (strncmp(p, d, strlen(d)) == 0 && (p[strlen(d)] == '\0' || p[strlen(d)] == '/' ||
	                                            strcmp(d, "/") == 0))
		rc = ts__fail(TS_EINVAL, "backup: %s is inside the database directory %s; "
		              "choose a destination outside it", to, db->path);
	free(p);
	free(d);
	return rc;
}

/* The database's EPOCH (epoch.c), so that the copy stays a member of
 * its lineage (and fenced, if the database is): rewritten from what the
 * handle says, not copied, so a copy never holds a damaged one.  A
 * database without one (read-only handle, never opened by a writer
 * since the file exists) has none to copy. */
static int copy_epoch(ts_db *db, const char *root)
{
	ts__epoch_file e;
	int rc = ts__epoch_state(db, &e);
	if (rc == TS_ENOENT) {
		ts__clear_error();
		return 0;
	}
	return rc < 0 ? rc : ts__epoch_write(root, &e);
}

static int copy_tables(ts_db *db, const char *root, const char *prev)
{
	char **names = NULL;
	int n = 0, rc = copy_epoch(db, root);
	if (rc < 0)
		return rc;
	rc = ts_tables(db, &names, &n);
	for (int i = 0; rc == 0 && i < n; i++)
		rc = copy_table(db, names[i], root, prev);
	ts_free_names(names);
	return rc == 0 ? ts__fsync_dir(root) : rc;
}

/* Whether the directory to is a copy ts_backup could have made: nothing
 * in it but directories holding a DESCRIPTOR (empty is one), its EPOCH,
 * and the LOCK file of a copy that was opened as a database.  Returns 0
 * or TS_EINVAL naming what is not, so that an incremental backup never
 * replaces -- and then removes -- a directory that is no copy. */
static int is_copy(const char *to)
{
	char path[TS_PATH_MAX];
	struct stat st;
	DIR *dir = opendir(to);
	struct dirent *e;
	int rc = 0;
	if (!dir)
		return errno == ENOTDIR ? ts__fail(TS_EINVAL, "backup: %s is not a directory", to)
		                        : ts__fail_errno(errno, "backup: %s", to);
	while (rc == 0 && (errno = 0, e = readdir(dir)) != NULL) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0 ||
		    strcmp(e->d_name, "LOCK") == 0 || /* a copy that was opened has one */
		    strcmp(e->d_name, TS_EPOCH_FILE) == 0)
			continue;
		if ((rc = ts__path(path, "%s/%s/%s", to, e->d_name, TS_DESC_FILE)) < 0)
			break;
		int gone = lstat(path, &st) < 0;
		if (gone && errno != ENOENT && errno != ENOTDIR)
			rc = ts__fail_errno(errno, "backup: %s", path);
		else if (gone || !S_ISREG(st.st_mode))
			rc = ts__fail(TS_EINVAL, "backup: %s is not a copy of a database (%s is not a "
			              "table); an incremental backup replaces only a copy", to, e->d_name);
	}
	if (rc == 0 && errno)
		rc = ts__fail_errno(errno, "backup: read %s", to);
	closedir(dir);
	return rc;
}

/* Put the new copy tmp in the place of the earlier one at to, and remove
 * the earlier one: exchanged atomically where the file system can, else
 * the earlier copy renamed aside first (a crash then may leave to
 * missing and the earlier copy in to.old-PID). */
static int replace_copy(const char *tmp, const char *to)
{
	char aside[TS_PATH_MAX];
	int rc;
	if (renameat2(AT_FDCWD, tmp, AT_FDCWD, to, RENAME_EXCHANGE) == 0) {
		/* the earlier copy, under tmp's name now */
		if ((rc = ts__rmtree(tmp)) < 0)
			return ts__context(rc, "the new copy is in place; removing the earlier one, "
			                   "now %s", tmp);
		return 0;
	}
	if (errno != EINVAL && errno != ENOSYS)
		return ts__fail_errno(errno, "exchange %s with %s", tmp, to);
	if ((rc = ts__path(aside, "%s.old-%ld", to, (long)getpid())) < 0)
		return rc;
	if (rename(to, aside) < 0)
		return ts__fail_errno(errno, "rename %s to %s", to, aside);
	if (rename(tmp, to) < 0) {
		rc = ts__fail_errno(errno, "rename %s to %s", tmp, to);
		rename(aside, to); /* the earlier copy back */
		return rc;
	}
	if ((rc = ts__rmtree(aside)) < 0)
		return ts__context(rc, "the new copy is in place; removing the earlier one, now %s",
		                   aside);
	return 0;
}

int ts__backup(ts_db *db, const char *dest, int incremental)
{
	char to[TS_PATH_MAX], tmp[TS_PATH_MAX], parent[TS_PATH_MAX];
	struct stat st;
	int rc, earlier = 0;
	if (!dest || !*dest)
		return ts__fail(TS_EINVAL, "backup: empty destination");
	if ((rc = ts__path(to, "%s", dest)) < 0)
		return rc;
	for (size_t n = strlen(to); n > 1 && to[n - 1] == '/'; n--)
		to[n - 1] = '\0';
	if ((rc = parent_of(to, parent)) < 0 || (rc = check_outside(db, parent, to)) < 0)
		return rc;
	if (lstat(to, &st) == 0) {
		if (!incremental)
			return ts__fail(TS_EEXIST, "backup: %s already exists", to);
		if (!S_ISDIR(st.st_mode))
			return ts__fail(TS_EINVAL, "backup: %s is not a directory", to);
		if ((rc = is_copy(to)) < 0)
			return rc;
		earlier = 1;
	} else if (errno != ENOENT) {
		return ts__fail_errno(errno, "backup: %s", to);
	}
	if ((rc = ts__path(tmp, "%s.tmp-%ld", to, (long)getpid())) < 0)
		return rc;
	ts__rmtree(tmp); /* a leftover of a crashed backup of this pid */
	if (mkdir(tmp, 0755) < 0)
		return ts__fail_errno(errno, "backup: mkdir %s", tmp);
	rc = copy_tables(db, tmp, earlier ? to : NULL);
	if (rc == 0)
		rc = earlier ? replace_copy(tmp, to) : rename_new(tmp, to);
	if (rc < 0) { /* tmp: the new copy, the earlier one (exchanged), or gone */
		ts__rmtree(tmp);
		return ts__context(rc, "backup to %s", to);
	}
	if ((rc = ts__fsync_dir(parent)) < 0) /* the copy is whole, maybe not durable */
		return ts__context(rc, "backup to %s", to);
	return 0;
}
