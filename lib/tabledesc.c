/*
 * tabledesc.c -- a table's current descriptor (t->desc) in memory: reading
 * it under the table lock, seeing another process's changes to it, and
 * changing it.
 *
 * Every change to a table -- a flush, a merge, an expiry, a quarantine,
 * an alter -- is a new DESCRIPTOR written atomically (descriptor.c); the
 * in-memory descriptor is swapped only after the file is durable, so a
 * failed write leaves the handle unchanged.  Writers of it hold desc_mu
 * from reading t->desc to swapping in its successor
 * (ts__table_desc_begin/_end), so t->desc may be read under desc_mu
 * alone; the file is written and synced without t->mu, and only the swap
 * takes it -- so an insert never waits for a descriptor's fsync.  A swap
 * detaches the old descriptor's tablet set (tablets.c) under schema_mu.
 *
 * Read-only handles (another process may be writing) compare the inode
 * and the generation of DESCRIPTOR each time they take the table lock
 * (ts__table_lock) and reload it when the writer replaced it; tablets
 * the writer merged away meanwhile are retired.  A table directory that
 * is not the one the handle opened (ts__table_incarnation: the table was
 * dropped and created again) makes the handle a dropped one.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "buf.h"
#include "descriptor_format.h"
#include "error.h"
#include "fsutil.h"
#include "handle.h"
#include "held.h"
#include "tabledesc.h"
#include "tablets.h"

/* ---- reading it ---- */

ino_t ts__desc_inode(const char *dir)
{
	char path[TS_PATH_MAX];
	struct stat st;
	if (ts__path(path, "%s/%s", dir, TS_DESC_FILE) < 0 || stat(path, &st) < 0)
		return 0;
	return st.st_ino;
}

int ts__desc_names(const ts__descriptor *d, uint64_t id)
{
	for (int i = 0; i < d->ntablets; i++)
		if (d->tablets[i].id == id)
			return 1;
	return 0;
}

int ts__table_incarnation(const char *dir, uint64_t *out)
{
	struct statx sx;
	*out = 0;
	if (statx(AT_FDCWD, dir, AT_STATX_SYNC_AS_STAT, STATX_INO | STATX_BTIME, &sx) < 0)
		return -errno;
	uint64_t v[4] = {(uint64_t)sx.stx_dev_major << 32 | sx.stx_dev_minor, sx.stx_ino,
	                 sx.stx_mask & STATX_BTIME ? (uint64_t)sx.stx_btime.tv_sec : 0,
	                 sx.stx_mask & STATX_BTIME ? sx.stx_btime.tv_nsec : 0};
	uint64_t h = ts__fnv1a(TS_FNV1A_BASIS, v, sizeof v);
	*out = h ? h >> 1 : 1; /* a stat of 63 bits, never 0 */
	return 0;
}

/* The generation of dir/DESCRIPTOR (the body's first field), or 0 when it
 * cannot be read (no descriptor has generation 0). */
static uint64_t descriptor_generation(const char *dir)
{
	char path[TS_PATH_MAX];
	unsigned char g[8];
	int fd;
	if (ts__path(path, "%s/%s", dir, TS_DESC_FILE) < 0 ||
	    (fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return 0;
	ssize_t n = pread(fd, g, sizeof g, TS_DESC_HEADER_SIZE);
	close(fd);
	return n == (ssize_t)sizeof g ? ts__load_u64(g) : 0;
}

/* Read-only handles: reload the descriptor if the writer replaced it.  The
 * inode alone cannot tell: once the file we read is replaced and freed, a
 * later replacement may get its inode number again; the generation, bumped
 * by every write, tells them apart. */
static int refresh(struct ts_table *t)
{
	ts__descriptor *d;
	if (!ts__db_readonly(t->db))
		return 0;
	/* dropped and created again: another table under the same name, whose
	 * log this handle never opened; ts_table_open gives a new handle */
	uint64_t now;
	int err = ts__table_incarnation(t->dir, &now);
	if (err < 0 && err != -ENOENT)
		return ts__fail_errno(-err, "table \"%s\": stat %s", t->name, t->dir);
	if (now != t->incarnation) {
		__atomic_store_n(&t->dropped, 1, __ATOMIC_SEQ_CST);
		return ts__fail(TS_ECLOSED, "table \"%s\" was dropped", t->name);
	}
	ino_t ino = ts__desc_inode(t->dir);
	if (ino != 0 && ino == t->desc_ino &&
	    descriptor_generation(t->dir) == t->desc->generation)
		return 0;
	if (ino == 0) {
		__atomic_store_n(&t->dropped, 1, __ATOMIC_SEQ_CST); /* read under db->mu */
		return ts__fail(TS_ECLOSED, "table \"%s\" was dropped", t->name);
	}
	int rc = ts__descriptor_read(t->dir, &d);
	if (rc < 0)
		return rc;
	pthread_mutex_lock(&t->schema_mu);
	t->desc->next_retired = t->retired; /* snapshots may use its schemas */
	t->retired = t->desc;
	t->desc = d;
	ts__tablet_set *old = ts__table_tablet_set_detach(t);
	pthread_mutex_unlock(&t->schema_mu);
	ts__tablet_set_put(t, old);
	t->desc_ino = ino;
	/* tablets the writer merged, expired or quarantined meanwhile */
	for (int i = 0; i < t->retired->ntablets; i++)
		if (!ts__desc_names(d, t->retired->tablets[i].id))
			ts__table_tablet_retire(t, t->retired->tablets[i].id);
	return 0;
}

int ts__table_lock(struct ts_table *t)
{
	pthread_mutex_lock(&t->mu);
	int dropped = __atomic_load_n(&t->dropped, __ATOMIC_RELAXED);
	int rc = dropped ? ts__fail(TS_ECLOSED, "table \"%s\" was dropped", t->name)
	         : __atomic_load_n(&t->dropping, __ATOMIC_SEQ_CST)
	             ? ts__fail(TS_ECLOSED, "table \"%s\" is being dropped", t->name)
	             : refresh(t);
	if (rc < 0)
		pthread_mutex_unlock(&t->mu);
	return rc;
}

void ts__table_unlock(struct ts_table *t)
{
	pthread_mutex_unlock(&t->mu);
}

/* ---- changing it ---- */

int ts__table_desc_begin(struct ts_table *t)
{
	pthread_mutex_lock(&t->desc_mu);
	int rc = ts__table_lock(t); /* not dropped */
	if (rc < 0) {
		pthread_mutex_unlock(&t->desc_mu);
		return rc;
	}
	ts__table_unlock(t);
	return 0;
}

void ts__table_desc_end(struct ts_table *t)
{
	pthread_mutex_unlock(&t->desc_mu);
}

int ts__table_write_descriptor(struct ts_table *t, ts__descriptor *d)
{
	TS_ASSERT_HELD(&t->desc_mu);
	d->generation = t->desc->generation + 1;
	int rc = ts__descriptor_write(t->dir, d);
	if (rc < 0) {
		if (d->nschemas > t->desc->nschemas)
			ts__schema_free(d->schemas[d->nschemas - 1]);
		ts__descriptor_free(d, 0);
	}
	return rc;
}

void ts__table_swap_descriptor(struct ts_table *t, ts__descriptor *d)
{
	TS_ASSERT_HELD(&t->desc_mu);
	TS_ASSERT_HELD(&t->mu);
	pthread_mutex_lock(&t->schema_mu);
	ts__descriptor_free(t->desc, 0); /* schemas now belong to d */
	t->desc = d;
	ts__tablet_set *old = ts__table_tablet_set_detach(t);
	pthread_mutex_unlock(&t->schema_mu);
	ts__tablet_set_put(t, old);
}

int ts__table_install_descriptor(struct ts_table *t, ts__descriptor *d)
{
	int rc = ts__table_write_descriptor(t, d);
	if (rc == 0) {
		pthread_mutex_lock(&t->mu);
		ts__table_swap_descriptor(t, d);
		pthread_mutex_unlock(&t->mu);
	}
	return rc;
}

int ts__table_replace_tablets(struct ts_table *t, const uint64_t *gone, int ngone,
                              const ts__tablet_meta *add)
{
	TS_ASSERT_HELD(&t->desc_mu);
	ts__descriptor *d;
	for (int j = 0; j < ngone; j++)
		if (!ts__desc_names(t->desc, gone[j]))
			return ts__fail(TS_EBUSY, "tablet %llu is no longer in the table",
			                (unsigned long long)gone[j]);
	int rc = ts__descriptor_clone(t->desc, &d), n = 0;
	if (rc < 0)
		return rc;
	for (int i = 0; i < d->ntablets; i++) {
		int keep = 1;
		for (int j = 0; j < ngone && keep; j++)
			keep = d->tablets[i].id != gone[j];
		if (keep)
			d->tablets[n++] = d->tablets[i];
	}
	if (add) { /* the clone has room for every tablet it had, plus one */
		d->tablets[n++] = *add;
		if (d->next_tablet_id <= add->id)
			d->next_tablet_id = add->id + 1;
	}
	d->ntablets = n;
	return ts__table_install_descriptor(t, d);
}

int ts__table_tombs(struct ts_table *t, ts__tomb **out, int *n)
{
	TS_ASSERT_HELD(&t->mu);
	const ts__descriptor *d = t->desc;
	int total = d->ntombs + t->fill.nlt, rc = 0;
	*out = NULL;
	*n = 0;
	if (!total)
		return 0;
	if (!(*out = calloc((size_t)total, sizeof **out)))
		return ts__fail(TS_ENOMEM, "out of memory");
	for (int i = 0; rc == 0 && i < d->ntombs; i++)
		if ((rc = ts__tomb_copy(&(*out)[*n], &d->tombs[i])) == 0)
			++*n;
	for (int i = 0; rc == 0 && i < t->fill.nlt; i++)
		if (!ts__tombs_have(d->tombs, d->ntombs, t->fill.lt[i].version) &&
		    (rc = ts__tomb_copy(&(*out)[*n], &t->fill.lt[i])) == 0)
			++*n;
	if (rc < 0) {
		ts__tombs_free(*out, *n);
		*out = NULL;
		*n = 0;
	}
	return rc;
}
