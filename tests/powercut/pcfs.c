/*
 * pcfs.c -- the power-cut rig: a FUSE pass-through file system that knows
 * what a power loss would keep.
 *
 *   pcfs BACKING MOUNTPOINT STORE OUT [fuse options]
 *
 * Every operation goes through to BACKING at once (it holds the state the
 * page cache would show); beside it the rig keeps the *durable* state, the
 * one a power cut leaves, and moves it forward only on the calls that
 * make something durable.  docs/powercut.md is the model in full; in short:
 *
 *   file data and size   durable when fsync or fdatasync of the file
 *                        (msync reaches FUSE as fsync) follows the write;
 *                        tracked per 4 KiB page: a page written since the
 *                        last sync is dirty, and a sync copies the dirty
 *                        pages and the size into STORE/<id>.
 *   names                a directory's entries are durable when fsync of
 *                        the directory follows the create, mkdir, unlink,
 *                        rename or link; fsync of a file does not make its
 *                        name durable (stricter than ext4, as POSIX).
 *
 * A node (file or directory) is known by the backing inode number it had
 * when the rig saw it created (a fresh id then, so that a reused inode
 * number starts afresh).  Files present at mount are SHARED: STORE/<id>,
 * their durable content, is a hard link to the backing file (no copy),
 * until the first write, truncate or fallocate that changes them makes it
 * a copy (copy on write; the node is OWN from then on).  Names are kept
 * apart from data: a directory's durable entries map names to nodes, so
 * an unlinked or renamed file keeps its durable name and content.
 *
 * Writing "A <seed>" or "B <seed>" to the control file /.powercut cuts the
 * power: from then on writes are dropped (whatever the kernel still writes
 * back is lost, as in a real cut), and the durable state is written out as
 * a directory tree under OUT (hard links, no copies).  Mode A keeps
 * nothing unsynced; mode B keeps a random subset (the seed's) of the
 * unsynced pages, sizes and directory entries, as a disk that reorders
 * its writes may.  Reading /.powercut gives counters.  The driver then
 * unmounts, and mounts a new rig over OUT to reopen the store on it.
 *
 * Single-threaded (run with -s): no locks.
 */
#define FUSE_USE_VERSION 31
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <assert.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fuse.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#define PAGE 4096
#define CONTROL "/.powercut"

enum { SHARED, OWN };

struct entry {
	char *name;
	struct node *node;
};

struct node {
	uint64_t id;
	ino_t ino;            /* 0 once detached (the inode number was reused) */
	int is_dir, state;
	char *orig;           /* the last backing path the rig saw it under */
	uint8_t *dirty;       /* OWN files: a byte per page written since the last sync */
	size_t ndirty;        /* pages covered by dirty[] */
	int size_dirty;
	struct entry *ents;   /* directories: the durable entries */
	size_t nents;
	char *out;            /* during the cut: where it was written out */
};

static struct {
	char backing[PATH_MAX], store[PATH_MAX], out[PATH_MAX];
	struct node **nodes;
	size_t nnodes;
	uint64_t next_id;
	struct node *root;
	int cut;
	uint64_t seed;
	/* counters, for /.powercut */
	uint64_t writes, write_bytes, fsyncs, fsyncdirs, dropped, pages_synced, pages_lost;
	uint64_t pages_kept, ents_changed;
} rig;

static void die(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "pcfs: ");
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, ": %s\n", strerror(errno));
	va_end(ap);
	exit(2);
}

static uint64_t rnd(void)
{
	rig.seed ^= rig.seed << 13;
	rig.seed ^= rig.seed >> 7;
	rig.seed ^= rig.seed << 17;
	return rig.seed;
}

static void bpath(char *out, const char *path)
{
	snprintf(out, PATH_MAX, "%s%s", rig.backing, path);
}

static void spath(char *out, const struct node *n)
{
	snprintf(out, PATH_MAX, "%s/%" PRIu64, rig.store, n->id);
}

/* ---- nodes ------------------------------------------------------------ */

static struct node *find(ino_t ino)
{
	for (size_t i = 0; i < rig.nnodes; i++)
		if (rig.nodes[i]->ino == ino)
			return rig.nodes[i];
	return NULL;
}

static struct node *add_node(ino_t ino, int is_dir, int state, const char *orig)
{
	struct node *old = find(ino), *n = calloc(1, sizeof *n);
	if (!n)
		die("calloc");
	if (old)
		old->ino = 0;
	n->id = ++rig.next_id;
	n->ino = ino;
	n->is_dir = is_dir;
	n->state = state;
	n->orig = orig ? strdup(orig) : NULL;
	rig.nodes = realloc(rig.nodes, (rig.nnodes + 1) * sizeof *rig.nodes);
	if (!rig.nodes)
		die("realloc");
	rig.nodes[rig.nnodes++] = n;
	return n;
}

static struct node *node_of_path(const char *path)
{
	char p[PATH_MAX];
	struct stat st;
	bpath(p, path);
	return lstat(p, &st) == 0 ? find(st.st_ino) : NULL;
}

static struct node *node_of_fd(int fd)
{
	struct stat st;
	return fstat(fd, &st) == 0 ? find(st.st_ino) : NULL;
}

static void mark_dirty(struct node *n, uint64_t off, uint64_t len)
{
	if (!n || n->is_dir || len == 0)
		return;
	assert(n->state == OWN);
	size_t last = (size_t)((off + len - 1) / PAGE);
	if (last >= n->ndirty) {
		size_t nd = last + 1 > 2 * n->ndirty ? last + 1 : 2 * n->ndirty;
		n->dirty = realloc(n->dirty, nd);
		if (!n->dirty)
			die("realloc");
		memset(n->dirty + n->ndirty, 0, nd - n->ndirty);
		n->ndirty = nd;
	}
	memset(n->dirty + off / PAGE, 1, last - off / PAGE + 1);
}

/* Copy src to dst keeping holes. */
static void copy_sparse(int src, int dst)
{
	static char buf[1 << 20];
	struct stat st;
	if (fstat(src, &st) < 0 || ftruncate(dst, st.st_size) < 0)
		die("copy: stat/truncate");
	off_t off = 0;
	while (off < st.st_size) {
		off_t data = lseek(src, off, SEEK_DATA);
		if (data < 0)
			break;
		off_t hole = lseek(src, data, SEEK_HOLE);
		if (hole < 0)
			hole = st.st_size;
		while (data < hole) {
			size_t n = hole - data < (off_t)sizeof buf ? (size_t)(hole - data) : sizeof buf;
			ssize_t r = pread(src, buf, n, data);
			if (r <= 0 || pwrite(dst, buf, (size_t)r, data) != r)
				die("copy");
			data += r;
		}
		off = hole;
	}
}

/* Before the backing file of a SHARED node changes: STORE/<id>, a hard
 * link to it so far, becomes a copy (copy on write). */
static void own(struct node *n)
{
	char s[PATH_MAX], t[PATH_MAX + 8];
	if (!n || n->is_dir || n->state == OWN)
		return;
	spath(s, n);
	snprintf(t, sizeof t, "%s.cow", s);
	int src = open(s, O_RDONLY), dst = open(t, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (src < 0 || dst < 0)
		die("own %s", s);
	copy_sparse(src, dst);
	close(src);
	close(dst);
	if (rename(t, s) < 0)
		die("rename %s", t);
	n->state = OWN;
}

/* Copy the dirty pages of n (those keep() says yes to) and, if keep_size,
 * the size from the backing fd to the store. */
static void sync_file(struct node *n, int fd, int (*keep)(void))
{
	char s[PATH_MAX], buf[PAGE];
	struct stat st;
	if (!n || n->is_dir || n->state == SHARED)
		return;
	spath(s, n);
	int dst = open(s, O_WRONLY | O_CREAT, 0644);
	if (dst < 0 || fstat(fd, &st) < 0)
		die("sync %s", s);
	int keep_size = !n->size_dirty || keep();
	if (keep_size && ftruncate(dst, st.st_size) < 0)
		die("truncate %s", s);
	for (size_t p = 0; p < n->ndirty; p++) {
		if (!n->dirty[p])
			continue;
		if (!keep()) {
			rig.pages_lost++;
			continue;
		}
		off_t off = (off_t)p * PAGE;
		ssize_t r = off < st.st_size ? pread(fd, buf, PAGE, off) : 0;
		if (r < 0)
			die("pread");
		if (r < PAGE)
			memset(buf + r, 0, PAGE - (size_t)r);
		/* past the size kept, the page would be beyond the end of file */
		struct stat ds;
		if (fstat(dst, &ds) < 0)
			die("fstat");
		if (off < ds.st_size) {
			size_t len = ds.st_size - off < PAGE ? (size_t)(ds.st_size - off) : PAGE;
			if (pwrite(dst, buf, len, off) != (ssize_t)len)
				die("pwrite %s", s);
		}
		rig.pages_synced++;
	}
	close(dst);
	if (n->ndirty) /* dirty is NULL until a page was written */
		memset(n->dirty, 0, n->ndirty);
	n->size_dirty = 0;
}

static int always(void) { return 1; }
static int coin(void) { return (int)(rnd() >> 40) & 1; }

/* The current entries of directory n (at backing path p). */
static struct entry *listing(const char *p, size_t *count)
{
	DIR *d = opendir(p);
	struct dirent *e;
	struct entry *ents = NULL;
	size_t n = 0;
	if (!d) {
		*count = 0;
		return NULL;
	}
	while ((e = readdir(d))) {
		char q[PATH_MAX];
		struct stat st;
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		snprintf(q, sizeof q, "%s/%s", p, e->d_name);
		struct node *c = lstat(q, &st) == 0 ? find(st.st_ino) : NULL;
		if (!c) {
			fprintf(stderr, "pcfs: %s: not a node the rig knows\n", q);
			exit(2);
		}
		ents = realloc(ents, (n + 1) * sizeof *ents);
		ents[n].name = strdup(e->d_name);
		ents[n++].node = c;
	}
	closedir(d);
	*count = n;
	return ents;
}

static void free_ents(struct entry *e, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(e[i].name);
	free(e);
}

static void sync_dir(struct node *n, const char *p)
{
	free_ents(n->ents, n->nents);
	n->ents = listing(p, &n->nents);
}

/* Scan the tree at mount: everything there is durable. */
static struct node *scan(const char *p)
{
	struct stat st;
	if (lstat(p, &st) < 0)
		die("lstat %s", p);
	struct node *n = add_node(st.st_ino, S_ISDIR(st.st_mode), SHARED, p);
	if (!n->is_dir) {
		char s[PATH_MAX];
		spath(s, n);
		if (link(p, s) < 0)
			die("link %s", s);
		return n;
	}
	DIR *d = opendir(p);
	struct dirent *e;
	if (!d)
		die("opendir %s", p);
	while ((e = readdir(d))) {
		char q[PATH_MAX];
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		snprintf(q, sizeof q, "%s/%s", p, e->d_name);
		scan(q);
	}
	closedir(d);
	n->ents = listing(p, &n->nents);
	return n;
}

/* ---- the cut ---------------------------------------------------------- */

/* Mode B: each entry of a directory takes its current state or keeps its
 * durable one, independently. */
static void mix_dir(struct node *n)
{
	char p[PATH_MAX];
	size_t ncur;
	struct stat st;
	/* by the last path the rig saw it under (remember): if that is gone
	 * or names another directory now, its unsynced changes are lost */
	if (!n->orig || lstat(n->orig, &st) < 0 || st.st_ino != n->ino)
		return;
	snprintf(p, sizeof p, "%s", n->orig);
	struct entry *cur = listing(p, &ncur);
	struct entry *mix = NULL;
	size_t nmix = 0;
	for (size_t i = 0; i < n->nents; i++) { /* durable names: keep, or take their current state */
		struct entry *c = NULL;
		for (size_t j = 0; j < ncur; j++)
			if (!strcmp(cur[j].name, n->ents[i].name))
				c = &cur[j];
		struct node *to = n->ents[i].node;
		if ((!c || c->node != to) && coin()) {
			to = c ? c->node : NULL;
			rig.ents_changed++;
		}
		if (to) {
			mix = realloc(mix, (nmix + 1) * sizeof *mix);
			mix[nmix].name = strdup(n->ents[i].name);
			mix[nmix++].node = to;
		}
	}
	for (size_t j = 0; j < ncur; j++) { /* new names: appear, or not */
		int known = 0;
		for (size_t i = 0; i < n->nents; i++)
			known |= !strcmp(cur[j].name, n->ents[i].name);
		if (!known && coin()) {
			mix = realloc(mix, (nmix + 1) * sizeof *mix);
			mix[nmix].name = strdup(cur[j].name);
			mix[nmix++].node = cur[j].node;
			rig.ents_changed++;
		}
	}
	free_ents(cur, ncur);
	free_ents(n->ents, n->nents);
	n->ents = mix;
	n->nents = nmix;
}

static void write_out(struct node *d, const char *to)
{
	if (mkdir(to, 0755) < 0)
		die("mkdir %s", to);
	d->out = strdup(to);
	for (size_t i = 0; i < d->nents; i++) {
		struct node *c = d->ents[i].node;
		char q[PATH_MAX], s[PATH_MAX];
		snprintf(q, sizeof q, "%s/%s", to, d->ents[i].name);
		if (c->is_dir) {
			if (c->out) /* named twice (a rename between directories): once is enough */
				continue;
			write_out(c, q);
			continue;
		}
		if (c->out) {
			if (link(c->out, q) < 0)
				die("link %s", q);
			continue;
		}
		{
			spath(s, c);
			if (link(s, q) < 0) {
				if (errno != ENOENT) /* else never synced: empty */
					die("link %s", q);
				int fd = open(q, O_WRONLY | O_CREAT | O_EXCL, 0644);
				if (fd < 0)
					die("create %s", q);
				close(fd);
			}
		}
		c->out = strdup(q);
	}
}

static int cut(char mode, uint64_t seed)
{
	rig.cut = 1;
	rig.seed = seed ? seed : 1;
	if (mode == 'B') {
		for (size_t i = 0; i < rig.nnodes; i++) {
			struct node *n = rig.nodes[i];
			if (n->is_dir) {
				mix_dir(n);
			} else if (n->state == OWN && n->ino) {
				/* the backing file of a detached node is gone; so
				 * are its unsynced pages, as if unlinked first */
				/* by the last path the rig saw it under (remember) */
				int fd = n->orig ? open(n->orig, O_RDONLY) : -1;
				struct stat st;
				if (fd >= 0 && fstat(fd, &st) == 0 && st.st_ino == n->ino)
					sync_file(n, fd, coin);
				if (fd >= 0)
					close(fd);
			}
		}
	}
	for (size_t i = 0; i < rig.nnodes; i++) /* what is left dirty is lost */
		for (size_t p = 0; p < rig.nodes[i]->ndirty; p++)
			rig.pages_lost += rig.nodes[i]->dirty[p];
	write_out(rig.root, rig.out);
	return 0;
}

/* ---- FUSE operations -------------------------------------------------- */

#define FH(fi) ((int)(fi)->fh)
#define CONTROL_FH ((uint64_t)INT32_MAX)

/* Paths are NULL for files unlinked while open (hard_remove); the control
 * file is known by its handle once open. */
static int is_control(const char *path) { return path && !strcmp(path, CONTROL); }
static int is_control_fh(const struct fuse_file_info *fi) { return fi && fi->fh == CONTROL_FH; }

/* Where a file or directory now is, for mode B (see mix_dir): the last
 * backing path the rig saw it under. */
static void remember(struct node *n, const char *path)
{
	char p[PATH_MAX];
	if (!n || !path)
		return;
	bpath(p, path);
	free(n->orig);
	n->orig = strdup(p);
}

static void *pc_init(struct fuse_conn_info *conn, struct fuse_config *cfg)
{
	(void)conn;
	cfg->hard_remove = 1;   /* no .fuse_hidden files in listings */
	cfg->use_ino = 1;
	cfg->attr_timeout = 0;
	cfg->entry_timeout = 0;
	cfg->negative_timeout = 0;
	return NULL;
}

static int pc_getattr(const char *path, struct stat *st, struct fuse_file_info *fi)
{
	char p[PATH_MAX];
	if (is_control(path)) {
		memset(st, 0, sizeof *st);
		st->st_mode = S_IFREG | 0666;
		st->st_nlink = 1;
		return 0;
	}
	if (fi)
		return fstat(FH(fi), st) < 0 ? -errno : 0;
	bpath(p, path);
	return lstat(p, st) < 0 ? -errno : 0;
}

static int pc_access(const char *path, int mask)
{
	char p[PATH_MAX];
	if (is_control(path))
		return 0;
	bpath(p, path);
	return access(p, mask) < 0 ? -errno : 0;
}

static int pc_opendir(const char *path, struct fuse_file_info *fi)
{
	char p[PATH_MAX];
	bpath(p, path);
	DIR *d = opendir(p);
	if (!d)
		return -errno;
	fi->fh = (uint64_t)(uintptr_t)d;
	remember(node_of_path(path), path);
	return 0;
}

static int pc_readdir(const char *path, void *buf, fuse_fill_dir_t fill, off_t off,
                      struct fuse_file_info *fi, enum fuse_readdir_flags flags)
{
	DIR *d = (DIR *)(uintptr_t)fi->fh;
	struct dirent *e;
	(void)path; (void)off; (void)flags;
	rewinddir(d);
	while ((e = readdir(d)))
		if (fill(buf, e->d_name, NULL, 0, 0))
			break;
	return 0;
}

static int pc_releasedir(const char *path, struct fuse_file_info *fi)
{
	(void)path;
	closedir((DIR *)(uintptr_t)fi->fh);
	return 0;
}

static int pc_fsyncdir(const char *path, int datasync, struct fuse_file_info *fi)
{
	(void)datasync;
	if (rig.cut)
		return 0;
	DIR *d = (DIR *)(uintptr_t)fi->fh;
	struct stat st;
	char p[PATH_MAX];
	(void)path;
	struct node *n = fstat(dirfd(d), &st) == 0 ? find(st.st_ino) : NULL;
	if (!n)
		return -EIO;
	snprintf(p, sizeof p, "/proc/self/fd/%d", dirfd(d));
	sync_dir(n, p);
	rig.fsyncdirs++;
	return 0;
}

static int pc_mkdir(const char *path, mode_t mode)
{
	char p[PATH_MAX];
	struct stat st;
	if (rig.cut)
		return -EROFS;
	bpath(p, path);
	if (mkdir(p, mode) < 0)
		return -errno;
	if (lstat(p, &st) < 0)
		return -errno;
	struct node *n = add_node(st.st_ino, 1, OWN, p);
	(void)n;
	return 0;
}

static int pc_unlink(const char *path)
{
	char p[PATH_MAX];
	if (rig.cut)
		return -EROFS;
	bpath(p, path);
	return unlink(p) < 0 ? -errno : 0;
}

static int pc_rmdir(const char *path)
{
	char p[PATH_MAX];
	if (rig.cut)
		return -EROFS;
	bpath(p, path);
	return rmdir(p) < 0 ? -errno : 0;
}

static int pc_rename(const char *from, const char *to, unsigned int flags)
{
	char f[PATH_MAX], t[PATH_MAX];
	if (rig.cut)
		return -EROFS;
	bpath(f, from);
	bpath(t, to);
	if (syscall(SYS_renameat2, AT_FDCWD, f, AT_FDCWD, t, flags) < 0)
		return -errno;
	remember(node_of_path(to), to);
	return 0;
}

static int pc_link(const char *from, const char *to)
{
	char f[PATH_MAX], t[PATH_MAX];
	if (rig.cut)
		return -EROFS;
	bpath(f, from);
	bpath(t, to);
	return link(f, t) < 0 ? -errno : 0;
}

static int pc_chmod(const char *path, mode_t mode, struct fuse_file_info *fi)
{
	(void)path; (void)mode; (void)fi;
	return 0;
}

static int pc_utimens(const char *path, const struct timespec tv[2], struct fuse_file_info *fi)
{
	(void)path; (void)tv; (void)fi;
	return 0;
}

static int pc_truncate(const char *path, off_t size, struct fuse_file_info *fi)
{
	char p[PATH_MAX];
	struct stat st;
	if (rig.cut)
		return -EROFS;
	int fd = fi ? FH(fi) : -1;
	if (fd < 0) {
		bpath(p, path);
		fd = open(p, O_WRONLY);
		if (fd < 0)
			return -errno;
	}
	struct node *n = node_of_fd(fd);
	int rc = fstat(fd, &st) < 0 ? -errno : 0;
	own(n);
	if (rc == 0 && ftruncate(fd, size) < 0)
		rc = -errno;
	if (rc == 0 && n && st.st_size != size) {
		off_t lo = st.st_size < size ? st.st_size : size, hi = st.st_size ^ size ^ lo;
		mark_dirty(n, (uint64_t)lo, (uint64_t)(hi - lo));
		n->size_dirty = 1;
	}
	if (!fi)
		close(fd);
	return rc;
}

/* Backing files are opened for reading too: a sync reads the dirty pages. */
static int rw(int flags)
{
	return (flags & O_ACCMODE) == O_WRONLY ? (flags & ~O_ACCMODE) | O_RDWR : flags;
}

static int pc_open(const char *path, struct fuse_file_info *fi)
{
	char p[PATH_MAX];
	if (is_control(path)) {
		fi->direct_io = 1;
		fi->fh = CONTROL_FH;
		return 0;
	}
	bpath(p, path);
	struct node *n = node_of_path(path);
	if ((fi->flags & O_TRUNC) && rig.cut)
		return -EROFS;
	if (fi->flags & O_TRUNC) {
		own(n); /* before the truncation */
		if (n)
			n->size_dirty = 1;
	}
	int fd = open(p, rw(fi->flags) & ~(O_CREAT | O_EXCL));
	if (fd < 0)
		return -errno;
	fi->fh = (uint64_t)fd;
	remember(node_of_fd(fd), path);
	return 0;
}

static int pc_create(const char *path, mode_t mode, struct fuse_file_info *fi)
{
	char p[PATH_MAX];
	struct stat st;
	if (rig.cut)
		return -EROFS;
	bpath(p, path);
	int existed = lstat(p, &st) == 0;
	if (existed && (fi->flags & O_TRUNC)) {
		struct node *n = find(st.st_ino);
		own(n); /* before the truncation */
		if (n)
			n->size_dirty = 1;
	}
	int fd = open(p, rw(fi->flags) | O_CREAT, mode);
	if (fd < 0)
		return -errno;
	fi->fh = (uint64_t)fd;
	if (!existed && fstat(fd, &st) == 0)
		add_node(st.st_ino, 0, OWN, p);
	else
		remember(node_of_fd(fd), path);
	return 0;
}

static int pc_read(const char *path, char *buf, size_t size, off_t off, struct fuse_file_info *fi)
{
	(void)path;
	if (is_control_fh(fi)) {
		char s[512];
		int n = snprintf(s, sizeof s,
		                 "writes %" PRIu64 " bytes %" PRIu64 " fsyncs %" PRIu64 " fsyncdirs %" PRIu64
		                 " pages_synced %" PRIu64 " pages_lost %" PRIu64 " dropped %" PRIu64
		                 " entries_mixed %" PRIu64 "\n",
		                 rig.writes, rig.write_bytes, rig.fsyncs, rig.fsyncdirs, rig.pages_synced,
		                 rig.pages_lost, rig.dropped, rig.ents_changed);
		if (off >= n)
			return 0;
		size_t len = (size_t)(n - off) < size ? (size_t)(n - off) : size;
		memcpy(buf, s + off, len);
		return (int)len;
	}
	ssize_t r = pread(FH(fi), buf, size, off);
	return r < 0 ? -errno : (int)r;
}

static int pc_write(const char *path, const char *buf, size_t size, off_t off,
                    struct fuse_file_info *fi)
{
	(void)path;
	if (is_control_fh(fi)) {
		char cmd[64] = {0};
		memcpy(cmd, buf, size < sizeof cmd - 1 ? size : sizeof cmd - 1);
		unsigned long long seed = 0;
		char mode = 0;
		if (rig.cut || sscanf(cmd, "%c %llu", &mode, &seed) != 2 || (mode != 'A' && mode != 'B'))
			return -EINVAL;
		return cut(mode, seed) < 0 ? -EIO : (int)size;
	}
	if (rig.cut) {
		rig.dropped++;
		return (int)size; /* after the cut: lost, like the page cache */
	}
	struct node *n = node_of_fd(FH(fi));
	own(n);
	ssize_t w = pwrite(FH(fi), buf, size, off);
	if (w < 0)
		return -errno;
	rig.writes++;
	rig.write_bytes += (uint64_t)w;
	if (n) {
		struct stat st;
		mark_dirty(n, (uint64_t)off, (uint64_t)w);
		if (fstat(FH(fi), &st) == 0 && (uint64_t)st.st_size <= (uint64_t)off + (uint64_t)w)
			n->size_dirty = 1;
	}
	return (int)w;
}

static int pc_fsync(const char *path, int datasync, struct fuse_file_info *fi)
{
	(void)path; (void)datasync;
	if (is_control_fh(fi) || rig.cut)
		return 0;
	sync_file(node_of_fd(FH(fi)), FH(fi), always);
	rig.fsyncs++;
	return 0;
}

static int pc_release(const char *path, struct fuse_file_info *fi)
{
	(void)path;
	if (!is_control_fh(fi))
		close(FH(fi));
	return 0;
}

static int pc_fallocate(const char *path, int mode, off_t off, off_t len, struct fuse_file_info *fi)
{
	struct stat st;
	(void)path;
	if (rig.cut)
		return -EROFS;
	struct node *n = node_of_fd(FH(fi));
	own(n);
	if (fstat(FH(fi), &st) < 0 || fallocate(FH(fi), mode, off, len) < 0)
		return -errno;
	if (n) {
		mark_dirty(n, (uint64_t)off, (uint64_t)len);
		if (!(mode & FALLOC_FL_KEEP_SIZE) && off + len > st.st_size)
			n->size_dirty = 1;
	}
	return 0;
}

static int pc_statfs(const char *path, struct statvfs *sv)
{
	(void)path;
	return statvfs(rig.backing, sv) < 0 ? -errno : 0;
}

static off_t pc_lseek(const char *path, off_t off, int whence, struct fuse_file_info *fi)
{
	(void)path;
	off_t r = lseek(FH(fi), off, whence);
	return r < 0 ? -errno : r;
}

static const struct fuse_operations pc_ops = {
	.init = pc_init,
	.getattr = pc_getattr,
	.access = pc_access,
	.opendir = pc_opendir,
	.readdir = pc_readdir,
	.releasedir = pc_releasedir,
	.fsyncdir = pc_fsyncdir,
	.mkdir = pc_mkdir,
	.unlink = pc_unlink,
	.rmdir = pc_rmdir,
	.rename = pc_rename,
	.link = pc_link,
	.chmod = pc_chmod,
	.utimens = pc_utimens,
	.truncate = pc_truncate,
	.open = pc_open,
	.create = pc_create,
	.read = pc_read,
	.write = pc_write,
	.fsync = pc_fsync,
	.release = pc_release,
	.fallocate = pc_fallocate,
	.statfs = pc_statfs,
	.lseek = pc_lseek,
};

int main(int argc, char **argv)
{
	if (argc < 5) {
		fprintf(stderr, "usage: pcfs BACKING MOUNTPOINT STORE OUT [fuse options]\n");
		return 2;
	}
	if (!realpath(argv[1], rig.backing) || !realpath(argv[3], rig.store))
		die("realpath");
	char cwd[PATH_MAX];
	if (!getcwd(cwd, sizeof cwd))
		die("getcwd");
	snprintf(rig.out, sizeof rig.out, "%s%s%s", argv[4][0] == '/' ? "" : cwd,
	         argv[4][0] == '/' ? "" : "/", argv[4]); /* fuse_main leaves the cwd */
	rig.root = scan(rig.backing);
	char *fargv[16];
	int fargc = 0;
	fargv[fargc++] = argv[0];
	fargv[fargc++] = argv[2];
	fargv[fargc++] = "-f";
	fargv[fargc++] = "-s";
	for (int i = 5; i < argc && fargc < 15; i++)
		fargv[fargc++] = argv[i];
	fargv[fargc] = NULL;
	int rc = fuse_main(fargc, fargv, &pc_ops, NULL);
	/* After a cut the state is written out; how the unmount ended the
	 * loop does not matter (it may read ECONNABORTED, not ENODEV). */
	return rig.cut ? 0 : rc;
}
