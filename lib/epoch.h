/*
 * epoch.h -- the database's EPOCH file: its lineage and epoch
 * (docs/epoch-format.md, docs/standby.md section 3).
 */
#ifndef TS_EPOCH_H
#define TS_EPOCH_H

#include <stddef.h>

#include "epoch_format.h"
#include "tsstore.h"

/* Encode e into out[0..TS_EPOCH_SIZE_MAX): format version 1 when
 * e->fenced_by is 0, else 2 (docs/epoch-format.md).  Returns the bytes encoded (48 or 56). */
size_t ts__epoch_encode(const ts__epoch_file *e, unsigned char *out);

/* Decode p[0..n): 0, or TS_ECORRUPT with a message saying what is wrong
 * (size, magic, version, checksum, reserved bytes, epoch 0), not naming
 * the file: the caller does. */
int ts__epoch_decode(const void *p, size_t n, ts__epoch_file *e);

/* Read dir/EPOCH.  Returns 0, TS_ENOENT (no file: a database made
 * before EPOCH existed, never opened by a writer since), TS_ECORRUPT
 * (message naming the file), TS_EIO, TS_ENOMEM. */
int ts__epoch_read(const char *dir, ts__epoch_file *e);

/* Replace dir/EPOCH with e atomically and durably (written to
 * EPOCH.tmp, synced, renamed, dir synced).  Returns 0 or a TS_E* code
 * (TS_ENOSPC, TS_EIO). */
int ts__epoch_write(const char *dir, const ts__epoch_file *e);

/* Whether database directory dir, of lineage and epoch have (NULL: it
 * has none yet), may take e (ts_epoch_adopt's rule): an epoch of its
 * lineage not below its own, or another lineage while it holds no
 * table.  Returns 0, TS_EINVAL with a message saying which rule, or an
 * error listing dir. */
int ts__epoch_may_adopt(const char *dir, const ts__epoch_file *have, const ts_epoch *e);

/* What a database whose EPOCH holds have (NULL: none) holds after
 * adopting e: e's lineage and epoch, and have's fence while it is above
 * e's epoch in the same lineage. */
ts__epoch_file ts__epoch_adopted(const ts__epoch_file *have, const ts_epoch *e);

/* What db's EPOCH holds: a read-only handle reads the file (the errors
 * of ts__epoch_read), a read-write one returns what it keeps. */
int ts__epoch_state(ts_db *db, ts__epoch_file *out);

/* At a read-write open: read db's EPOCH into db->epoch, creating it (a
 * random lineage, epoch 1) when there is none.  Returns 0, TS_ECORRUPT
 * (a damaged EPOCH is never replaced silently: the lineage is what a
 * standby and a returning primary are told apart by), or the errors of
 * ts__epoch_read and ts__epoch_write. */
int ts__epoch_load(ts_db *db);

#endif
