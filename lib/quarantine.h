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

#endif
