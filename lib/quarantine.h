/*
 * quarantine.h -- moving damaged tablets aside (quarantine.c), a job of
 * the maintenance scheduler.
 */
#ifndef TS_QUARANTINE_H
#define TS_QUARANTINE_H

#include "handle.h"

/* Writers: move every tablet noted damaged to <table>/quarantine/ and
 * out of the descriptor.  Takes t->mu.  Returns 0 or the first error. */
int ts__table_quarantine_due(struct ts_table *t);

/* The tablet files (<16 hex digits>.tab) in <dir>/quarantine/, dir being
 * a table's directory: where tablets_quarantined starts when the table
 * opens.  0 when there is no such directory or it cannot be read (the
 * count is for the stats; nothing depends on it). */
uint64_t ts__quarantine_count(const char *dir);

#endif
