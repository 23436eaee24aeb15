/*
 * merge.h -- changing a table's set of on-disk tablets after they are
 * flushed: merging a period's tablets by LittleTable's rule (SIGMOD 2017,
 * appendix; DESIGN.md section 3, "Flush and merge") and deleting tablets
 * past the TTL.
 */
#ifndef TS_MERGE_H
#define TS_MERGE_H

#include <stdint.h>

/*
 * The merge policy.  sizes[0..n) are the bytes of one period's tablets
 * ordered by the low end of their timespans (oldest first).  Find the
 * first adjacent pair i, i+1 with sizes[i] <= 2 * sizes[i+1] whose sum is
 * at most max, and extend it with the adjacent newer tablets while the
 * total stays at most max.  Returns how many tablets to merge (>= 2) and
 * sets *first, or returns 0 when no pair qualifies.  Applied until it
 * returns 0, it leaves sizes that more than halve from each tablet to the
 * next (except where a merge would pass max), so a period holds
 * O(log(bytes)) tablets.
 */
int ts__merge_pick(const uint64_t *sizes, int n, uint64_t max, int *first);

struct ts_table;

/*
 * Run at most one merge in table t if one is due: per period, among
 * tablets flushed at least merge_delay ago (and, for a period that grew
 * by roll-over, once its pseudo-random delay passed), the first group
 * ts__merge_pick finds.  The merge yields to inserts and runs due
 * flushes between slices, and gives up when the database closes.  Does
 * nothing when another merge of t is running.  Returns 1 if a merge was
 * made, 0 if none was due, or an error.
 */
int ts__merge_due(struct ts_table *t);

/* Tablets in the groups that background merges would take next, one
 * group per period (the merge backlog); t->mu is held.  -1 on ENOMEM. */
int64_t ts__merge_backlog(struct ts_table *t);

/* Record that tablet id was flushed now; t->mu is held. */
void ts__merge_note_flush(struct ts_table *t, uint64_t id, int64_t now);

/*
 * Delete t's tablets whose rows are all older than now - TTL: out of the
 * descriptor, then off the disk.  Returns the number deleted or an error.
 */
int ts__expire_due(struct ts_table *t);

#endif
