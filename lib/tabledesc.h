/*
 * tabledesc.h -- a table's current descriptor: the table lock under
 * which it is read (reloaded in read-only handles when another process
 * replaced it), and the one-writer-at-a-time protocol that changes it
 * (tabledesc.c).
 */
#ifndef TS_TABLEDESC_H
#define TS_TABLEDESC_H

#include <stdint.h>
#include <sys/types.h>

#include "handle.h"

/* Take the table's mutex and check it was not dropped; in read-only
 * handles, reload the descriptor if another process replaced it.
 * Returns 0 (locked) or TS_ECLOSED / a reload error (not locked). */
int ts__table_lock(struct ts_table *t);
void ts__table_unlock(struct ts_table *t);

/* The inode of dir/DESCRIPTOR, or 0 when it cannot be stat'ed. */
ino_t ts__desc_inode(const char *dir);

/* The identity of the table directory dir in *out: a hash of its device,
 * inode and birth time (statx; the inode alone where the file system
 * keeps no birth time), which a drop and a create of the same name change
 * even when the new directory reuses the old one's inode; never 0.
 * Returns 0, or -errno (*out 0) when dir cannot be stat'ed. */
int ts__table_incarnation(const char *dir, uint64_t *out);

/* Whether descriptor d names tablet id. */
int ts__desc_names(const ts__descriptor *d, uint64_t id);

/*
 * Changing the descriptor.  Writers of it (flush, merge, expiry,
 * quarantine, alter) hold desc_mu from reading t->desc to swapping in its
 * successor, so t->desc may be read under desc_mu alone; the file is
 * written and synced without t->mu, and only the swap takes it -- so an
 * insert never waits for a descriptor's fsync (which on ext4 may wait for
 * the data of a whole merge).
 */

/* Take desc_mu and check t was not dropped.  Returns 0 (desc_mu held) or
 * TS_ECLOSED. */
int ts__table_desc_begin(struct ts_table *t);
void ts__table_desc_end(struct ts_table *t);

/* Write d as t's next descriptor (generation bumped); desc_mu is held.
 * On failure d is freed (with a schema it added) and t is unchanged. */
int ts__table_write_descriptor(struct ts_table *t, ts__descriptor *d);

/* Make the written d current; desc_mu and t->mu are held. */
void ts__table_swap_descriptor(struct ts_table *t, ts__descriptor *d);

/* Write d, then swap it in under t->mu; desc_mu is held, t->mu is not. */
int ts__table_install_descriptor(struct ts_table *t, ts__descriptor *d);

/* Install a descriptor naming t's tablets without gone[0..ngone) and
 * with *add if add is not NULL; desc_mu is held, t->mu is not.  Returns
 * 0, TS_EBUSY when some tablet of gone is no longer named (nothing
 * changes), or the errors of ts__table_install_descriptor. */
int ts__table_replace_tablets(struct ts_table *t, const uint64_t *gone, int ngone,
                              const ts__tablet_meta *add);

/* Copies of the tombstones in force for t's writer: its descriptor's and
 * its log chain's (t->fill.lt), into *out (malloc'ed; ts__tombs_free).
 * t->mu is held.  Returns 0 or TS_ENOMEM. */
int ts__table_tombs(struct ts_table *t, ts__tomb **out, int *n);

#endif
