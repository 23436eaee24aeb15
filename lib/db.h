/*
 * db.h -- the functions on database and table handles that the rest of
 * the library calls (the handles themselves are in handle.h).
 */
#ifndef TS_DB_H
#define TS_DB_H

#include "handle.h"
#include "maint.h" /* for the tests, until they include it themselves */

/* Writers: move every tablet noted damaged to <table>/quarantine/ and
 * out of the descriptor.  Takes t->mu.  Returns 0 or the first error. */
int ts__table_quarantine_due(struct ts_table *t);

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

/* Flush the table's filling trees that are due: flush_size reached,
 * flush_age old, or their period ended while they filled (flush.c).
 * Returns 0 or the errors of ts_flush. */
int ts__flush_due(struct ts_table *t);

/* Whether a filling tree reached flush_size; t->mu is held. */
int ts__flush_wanted(const struct ts_table *t);

/* Pass one line to opts.log (stderr when NULL). */
void ts__db_log(ts_db *db, const char *line);

/* Report a failure of background work through ts__db_log:
 * "table \"t\": what failed, retrying with backoff: msg". */
void ts__db_report(ts_db *db, const char *table, const char *what, const char *msg);

/* Whether the background work of r may be tried now (not in backoff).
 * The caller holds the mutex that makes that work one at a time
 * (flush_mu, merge_mu) from this check through ts__table_retry_done, so
 * that one failure is never tried twice.  Takes t->mu. */
int ts__table_retry_due(struct ts_table *t, const ts__retry *r);

/* Background work of t (what: "flush", "merge", "expiry") ended with rc:
 * record it in r (under t->mu) and report a new cause.
 * Returns rc. */
int ts__table_retry_done(struct ts_table *t, ts__retry *r, const char *what, int rc);

/* Whether an insert may append to t's log: TS_ENOSPC naming the cause
 * when its unflushed part reached log_cap.  t->mu is held (flush.c). */
int ts__log_cap_check(struct ts_table *t);


/* Free a table object (when the db closes): its resources, if not yet
 * released, and the object. */
void ts__table_free(struct ts_table *t);

/* Take the table's mutex and check it was not dropped; in read-only
 * handles, reload the descriptor if another process replaced it.
 * Returns 0 (locked) or TS_ECLOSED / a reload error (not locked). */
int ts__table_lock(struct ts_table *t);
void ts__table_unlock(struct ts_table *t);

#endif
