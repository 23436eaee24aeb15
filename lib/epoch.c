/*
 * epoch.c -- the database's EPOCH file: which lineage the database
 * belongs to and at which epoch (docs/epoch-format.md; the standby's
 * use of it is docs/standby.md section 3).
 *
 * A lineage is the line of databases that descend from one created
 * database by following and promotion: a standby takes its primary's
 * lineage and epoch, and a promotion raises the epoch by one.  So two
 * databases of one lineage at one epoch hold one history, and of two
 * members the one at the higher epoch is the primary: an old primary
 * that returns finds a member of a newer epoch and stops.
 *
 * The file is small and fixed-size, replaced whole through
 * ts__file_write_atomic (temp file, fsync, rename, fsync of the
 * directory): after a crash it holds the old epoch or the new one,
 * never a mix, and an epoch once returned by ts_epoch_raise is durable.
 * Epochs never go down.
 *
 * A database can also know that a newer epoch of its lineage exists
 * without being of it: a primary whose standby was promoted learns it
 * when that standby (or any member of the newer epoch) asks it to
 * follow.  ts__epoch_fence records that in the file (fenced_by, format
 * version 2), so that a server restarted on the directory is still a
 * stale primary; adopting that epoch (following the newer primary) or
 * raising past it ends the fence.
 *
 * State: a read-write handle reads the file at open (ts__epoch_load,
 * creating it with a random lineage and epoch 1 when the database has
 * none -- a new database, or one made before the file existed) and
 * keeps it in db->epoch, which ts_epoch_raise moves to the next epoch
 * under db->epoch_mu after the file holds it, as ts_epoch_adopt moves it
 * to a primary's (a standby; another lineage only while the database
 * holds no table).  A read-only handle keeps
 * nothing: it reads the file at every ts_epoch_get, since the writer
 * may raise it meanwhile.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "api.h"
#include "buf.h"
#include "crc32c.h"
#include "epoch.h"
#include "epoch_format.h"
#include "error.h"
#include "fsutil.h"
#include "handle.h"
#include "tslimits.h"

size_t ts__epoch_encode(const ts__epoch_file *e, unsigned char *out)
{
	int fenced = e->fenced_by != 0;
	size_t crc = fenced ? TS_EPOCH_OFF_CRC2 : TS_EPOCH_OFF_CRC;
	memset(out, 0, TS_EPOCH_SIZE_MAX);
	memcpy(out + TS_EPOCH_OFF_MAGIC, TS_EPOCH_MAGIC, TS_EPOCH_MAGIC_SIZE);
	ts__store_u32(out + TS_EPOCH_OFF_VERSION, fenced ? TS_EPOCH_VERSION_FENCED : TS_EPOCH_VERSION);
	memcpy(out + TS_EPOCH_OFF_LINEAGE, e->lineage, TS_LINEAGE_SIZE);
	ts__store_u64(out + TS_EPOCH_OFF_EPOCH, e->epoch);
	if (fenced)
		ts__store_u64(out + TS_EPOCH_OFF_FENCED_BY, e->fenced_by);
	ts__store_u32(out + crc, ts__crc32c(0, out, crc));
	return crc + 8;
}

int ts__epoch_decode(const void *p, size_t n, ts__epoch_file *e)
{
	const unsigned char *b = p;
	if (n != TS_EPOCH_SIZE && n != TS_EPOCH_SIZE_FENCED)
		return ts__fail(TS_ECORRUPT, "%zu bytes, want %d or %d", n, TS_EPOCH_SIZE,
		                TS_EPOCH_SIZE_FENCED);
	size_t crc = n - 8;
	uint32_t version = ts__load_u32(b + TS_EPOCH_OFF_VERSION);
	if (memcmp(b + TS_EPOCH_OFF_MAGIC, TS_EPOCH_MAGIC, TS_EPOCH_MAGIC_SIZE) != 0)
		return ts__fail(TS_ECORRUPT, "bad magic");
	if (ts__load_u32(b + crc) != ts__crc32c(0, b, crc))
		return ts__fail(TS_ECORRUPT, "checksum mismatch");
	if (version != TS_EPOCH_VERSION && version != TS_EPOCH_VERSION_FENCED)
		return ts__fail(TS_EVERSION, "format version %u, this build reads %d and %d", version,
		                TS_EPOCH_VERSION, TS_EPOCH_VERSION_FENCED);
	if (n != (version == TS_EPOCH_VERSION ? TS_EPOCH_SIZE : TS_EPOCH_SIZE_FENCED))
		return ts__fail(TS_ECORRUPT, "format version %u in %zu bytes, want %d", version, n,
		                version == TS_EPOCH_VERSION ? TS_EPOCH_SIZE : TS_EPOCH_SIZE_FENCED);
	if (ts__load_u32(b + TS_EPOCH_OFF_RESERVED) != 0 || ts__load_u32(b + crc + 4) != 0)
		return ts__fail(TS_ECORRUPT, "reserved bytes not 0");
	memcpy(e->lineage, b + TS_EPOCH_OFF_LINEAGE, TS_LINEAGE_SIZE);
	e->epoch = ts__load_u64(b + TS_EPOCH_OFF_EPOCH);
	e->fenced_by = version == TS_EPOCH_VERSION ? 0 : ts__load_u64(b + TS_EPOCH_OFF_FENCED_BY);
	if (e->epoch == 0)
		return ts__fail(TS_ECORRUPT, "epoch 0");
	if (version == TS_EPOCH_VERSION_FENCED && e->fenced_by <= e->epoch)
		return ts__fail(TS_ECORRUPT, "fenced by epoch %llu, not above the epoch %llu",
		                (unsigned long long)e->fenced_by, (unsigned long long)e->epoch);
	return 0;
}

int ts__epoch_read(const char *dir, ts__epoch_file *e)
{
	char path[TS_PATH_MAX];
	void *data = NULL;
	size_t n = 0;
	int rc = ts__path(path, "%s/%s", dir, TS_EPOCH_FILE);
	if (rc == 0)
		rc = ts__read_file(path, TS_EPOCH_SIZE_MAX, &data, &n);
	if (rc == TS_ETOOBIG)
		rc = ts__fail(TS_ECORRUPT, "%s: more than %d bytes", path, TS_EPOCH_SIZE_MAX);
	else if (rc == 0 && (rc = ts__epoch_decode(data, n, e)) < 0)
		rc = ts__context(rc, "%s", path);
	free(data);
	return rc;
}

int ts__epoch_write(const char *dir, const ts__epoch_file *e)
{
	unsigned char b[TS_EPOCH_SIZE_MAX];
	return ts__file_write_atomic(dir, TS_EPOCH_FILE, b, ts__epoch_encode(e, b));
}

/* A new lineage: random bytes from the kernel. */
static int new_lineage(unsigned char *lineage)
{
	size_t got = 0;
	while (got < TS_LINEAGE_SIZE) {
		ssize_t n = getrandom(lineage + got, TS_LINEAGE_SIZE - got, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return ts__fail_errno(errno, "a random lineage id (getrandom)");
		got += (size_t)n;
	}
	return 0;
}

int ts__epoch_load(ts_db *db)
{
	ts__epoch_file e;
	int rc = ts__epoch_read(db->path, &e);
	if (rc == TS_ECORRUPT)
		return ts__context(rc, "the database's lineage is unknown; move the file aside "
		                   "to give it a new lineage (a standby of the old one will "
		                   "refuse it)");
	if (rc == TS_ENOENT) {
		ts__clear_error();
		e.epoch = 1;
		e.fenced_by = 0;
		if ((rc = new_lineage(e.lineage)) == 0)
			rc = ts__epoch_write(db->path, &e);
	}
	if (rc == 0)
		db->epoch = e;
	return rc;
}

int ts__epoch_state(ts_db *db, ts__epoch_file *out)
{
	if (ts__db_readonly(db))
		return ts__epoch_read(db->path, out);
	pthread_mutex_lock(&db->epoch_mu);
	*out = db->epoch;
	pthread_mutex_unlock(&db->epoch_mu);
	return 0;
}

static ts_epoch public_of(const ts__epoch_file *f)
{
	ts_epoch e;
	memcpy(e.lineage, f->lineage, TS_LINEAGE_SIZE);
	e.epoch = f->epoch;
	return e;
}

int ts__epoch_get(ts_db *db, ts_epoch *out)
{
	ts__epoch_file f;
	int rc = ts__epoch_state(db, &f);
	if (rc == 0)
		*out = public_of(&f);
	return rc;
}

int ts__epoch_fenced_by(ts_db *db, uint64_t *out)
{
	ts__epoch_file f;
	int rc = ts__epoch_state(db, &f);
	if (rc == 0)
		*out = f.fenced_by;
	return rc;
}

/* After a failed write: the rename may have happened (a failed fsync of
 * the directory), so db->epoch takes what the file says -- if it is a
 * later state of its lineage (a newer epoch, or the same one fenced by a
 * newer one), or, after an adopt (any), whatever it holds; the
 * failure's message stays the one reported. */
static void keep_file(ts_db *db, int rc, int any)
{
	char msg[TS_ERRMSG_MAX];
	ts__epoch_file now;
	snprintf(msg, sizeof msg, "%s", ts_errmsg(NULL));
	if (ts__epoch_read(db->path, &now) == 0 &&
	    (any || (memcmp(now.lineage, db->epoch.lineage, TS_LINEAGE_SIZE) == 0 &&
	             (now.epoch > db->epoch.epoch ||
	              (now.epoch == db->epoch.epoch && now.fenced_by > db->epoch.fenced_by)))))
		db->epoch = now;
	ts__fail(rc, "%s", msg);
}

int ts__epoch_may_adopt(const char *dir, const ts__epoch_file *have, const ts_epoch *e)
{
	char **names = NULL;
	int rc = 0, n = 0;
	int same = have && memcmp(e->lineage, have->lineage, TS_LINEAGE_SIZE) == 0;
	if (e->epoch == 0)
		return ts__fail(TS_EINVAL, "adopt epoch 0: epochs start at 1");
	if (same && e->epoch < have->epoch)
		return ts__fail(TS_EINVAL, "adopt epoch %llu: the database is at epoch %llu, and "
		                "epochs never go down", (unsigned long long)e->epoch,
		                (unsigned long long)have->epoch);
	if (!same && (rc = ts__dir_tables(dir, &names, &n)) == 0 && n)
		rc = ts__fail(TS_EINVAL, "adopt another lineage: database %s holds tables of its "
		              "own lineage; a standby starts empty", dir);
	ts_free_names(names);
	return rc;
}

ts__epoch_file ts__epoch_adopted(const ts__epoch_file *have, const ts_epoch *e)
{
	ts__epoch_file next;
	memcpy(next.lineage, e->lineage, TS_LINEAGE_SIZE);
	next.epoch = e->epoch;
	next.fenced_by = 0;
	if (have && memcmp(e->lineage, have->lineage, TS_LINEAGE_SIZE) == 0 &&
	    have->fenced_by > e->epoch)
		next.fenced_by = have->fenced_by;
	return next;
}

int ts__epoch_adopt(ts_db *db, const ts_epoch *e)
{
	int rc;
	if (ts__db_readonly(db))
		return ts__fail(TS_EREADONLY, "database %s is open read-only", db->path);
	pthread_mutex_lock(&db->epoch_mu);
	ts__epoch_file next = ts__epoch_adopted(&db->epoch, e);
	rc = ts__epoch_may_adopt(db->path, &db->epoch, e);
	if (rc == 0 && (rc = ts__epoch_write(db->path, &next)) == 0)
		db->epoch = next;
	else if (rc < 0 && rc != TS_EINVAL)
		keep_file(db, rc, 1);
	pthread_mutex_unlock(&db->epoch_mu);
	return rc < 0 ? ts__context(rc, "adopt a lineage and epoch") : 0;
}

int ts__epoch_raise(ts_db *db, ts_epoch *out)
{
	ts__epoch_file next;
	int rc;
	if (ts__db_readonly(db))
		return ts__fail(TS_EREADONLY, "database %s is open read-only", db->path);
	pthread_mutex_lock(&db->epoch_mu);
	next = db->epoch;
	/* past the newest epoch known to exist: one is never taken twice */
	if (next.fenced_by > next.epoch)
		next.epoch = next.fenced_by;
	next.fenced_by = 0;
	if (next.epoch == UINT64_MAX) {
		rc = ts__fail(TS_EINVAL, "epoch %llu is the last", (unsigned long long)next.epoch);
	} else {
		next.epoch++;
		rc = ts__epoch_write(db->path, &next);
		if (rc == 0)
			db->epoch = next;
		else
			keep_file(db, rc, 0);
	}
	if (rc == 0 && out)
		*out = public_of(&db->epoch);
	pthread_mutex_unlock(&db->epoch_mu);
	return rc < 0 ? ts__context(rc, "raise the epoch") : 0;
}

int ts__epoch_fence(ts_db *db, uint64_t newer)
{
	ts__epoch_file next;
	int rc = 0;
	if (ts__db_readonly(db))
		return ts__fail(TS_EREADONLY, "database %s is open read-only", db->path);
	pthread_mutex_lock(&db->epoch_mu);
	next = db->epoch;
	if (newer > next.epoch && newer > next.fenced_by) {
		next.fenced_by = newer;
		if ((rc = ts__epoch_write(db->path, &next)) == 0)
			db->epoch = next;
		else
			keep_file(db, rc, 0);
	}
	pthread_mutex_unlock(&db->epoch_mu);
	return rc < 0 ? ts__context(rc, "record the fence of epoch %llu",
	                            (unsigned long long)newer) : 0;
}
