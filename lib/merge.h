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
 * in version order (oldest first: merge.c says why).  Find the
 * first adjacent pair i, i+1 with sizes[i] <= 2 * sizes[i+1] whose sum is
 * at most max, and extend it with the adjacent newer tablets while the
 * total stays at most max.  Returns how many tablets to merge (>= 2) and
 * sets *first, or returns 0 when no pair qualifies.  Applied until it
 * returns 0, it leaves sizes that more than halve from each tablet to the
 * next (except where a merge would pass max), so a period holds
 * O(log(bytes)) tablets.
 */
int ts__merge_pick(const uint64_t *sizes, int n, uint64_t max, int *first);

/*
 * The most tablets LittleTable's rule leaves in a period whose n tablets
 * have these sizes (bytes, any order), with merges of at most max bytes:
 * the tablets larger than max / 2 (each too large to merge with one of
 * its size), plus floor(log2(B / s)) + 2 for the others, B their bytes
 * and s the smallest -- sizes that more than halve from each to the next
 * leave floor(log2(B / s)) + 1, and the newest flush may not have merged
 * yet.  A period holding more is behind: it merges without waiting for
 * merge_delay (merge.c).  Returns n when no tablet is at most max / 2.
 */
int ts__merge_bound(const uint64_t *sizes, int n, uint64_t max);

struct ts_table;

/*
 * What a merge does between slices of merge_slice_rows rows: fn(arg, t)
 * returns 0 to go on, or TS_ECLOSED to give the merge up (the database
 * is closing; not an error), or an error.  The scheduler's runs the due
 * flushes of every table and keeps a background merge within its budget
 * (maint.c), so merge.c knows nothing of other tables or of time.
 */
typedef struct ts__merge_yield {
	int (*fn)(void *arg, struct ts_table *t);
	void *arg;
} ts__merge_yield;

/*
 * The bytes of the merge a background pass would make next in t: per
 * period, among tablets flushed at least merge_delay ago (and, for a
 * period that grew by roll-over, once its pseudo-random delay passed),
 * the groups ts__merge_pick finds (grown or passed over to keep
 * invariant V: merge.c), and of those the smallest.  0 when
 * none is due, another merge of t is running, or t's merges failed
 * lately and wait for their backoff.  Returns the bytes or an error.
 */
int64_t ts__merge_next(struct ts_table *t);

/*
 * Make the merge ts__merge_next names, if one is still due, calling y
 * between slices (NULL: never).  Does nothing when another merge of t is
 * running.  Returns 1 if a merge was made, 0 if none was due or y gave
 * it up because the database closes, or an error (recorded for backoff).
 */
int ts__merge_due(struct ts_table *t, const ts__merge_yield *y);

/*
 * ts_merge: merge t's tablets by LittleTable's rule, merge_delay not
 * waited for, until the rule finds nothing more; y as for ts__merge_due.
 * *merged (may be NULL) gets the number of merges made.
 */
int ts__merge(struct ts_table *t, int *merged, const ts__merge_yield *y);

/* Tablets in the groups that background merges would take next, one
 * group per period (the merge backlog); t->mu is held.  -1 on ENOMEM. */
int64_t ts__merge_backlog(struct ts_table *t);

/* ts_purge's rewrite (merge.c): in a table that may hold replaced rows,
 * first every group of tablets whose timespans meet (transitively) and
 * meet box's (the purge's range) is merged whole, keeping the newest row
 * of each key and dropping what the tombstones in force hide; then every
 * on-disk tablet that one of gone[0..ngone) applies to and may hold rows
 * of is rewritten alone, without the rows the tombstones in force hide.
 * *rewritten counts the tablets written.  Returns 0 or an error
 * (TS_ECORRUPT: a damaged tablet). */
struct ts__tomb;
int ts__merge_purge(struct ts_table *t, const struct ts__tomb *box, const struct ts__tomb *gone,
                    int ngone, int *rewritten);

/* Record that tablet id was flushed now; t->mu is held. */
void ts__merge_note_flush(struct ts_table *t, uint64_t id, int64_t now);

/*
 * Delete t's tablets whose rows are all older than now - TTL: out of the
 * descriptor, then off the disk.  Returns the number deleted or an error.
 */
int ts__expire_due(struct ts_table *t);

#endif
