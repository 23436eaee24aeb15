/*
 * retry.h -- how background work (flushes, merges, expiry) behaves when it
 * fails: retried with exponential backoff, logged once per cause, counted.
 *
 * A failing flush used to be retried on every maintenance pass, and every
 * insert that found a tree at flush_size woke the thread again: a flush
 * that can never succeed spun at 100% CPU while the log grew.  Now each
 * kind of work of each table has a ts__retry: after a failure the work is
 * not tried again before TS_RETRY_MIN, then twice that, up to
 * TS_RETRY_MAX; a success resets it.  A failure whose cause (its code and
 * message, digits aside) differs from the last one logged is logged
 * through the database's log function; the same cause again is only
 * counted.  Work the user asks for (ts_flush, ts_merge) is never held
 * back, and its success resets the backoff too.
 */
#ifndef TS_RETRY_H
#define TS_RETRY_H

#include <stdint.h>

#include "tslimits.h"

typedef struct ts__retry {
	int failures;       /* in a row since the last success */
	int64_t next_at;    /* maintenance clock: not tried again before */
	int last_rc;        /* TS_E* of the last failure, 0 after a success */
	uint64_t total;     /* failures ever */
	uint64_t logged;    /* failures that were logged (new causes) */
	char cause[TS_RETRY_CAUSE_MAX]; /* message of the last failure */
} ts__retry;

/* Whether the work may be tried at now (maintenance clock). */
static inline int ts__retry_due(const ts__retry *r, int64_t now)
{
	return r->failures == 0 || now >= r->next_at;
}

/* The delay before the next try after n failures in a row. */
int64_t ts__retry_delay(int n);

/* Record a failure with code rc and message msg at now: backoff grows.
 * Returns 1 when its cause differs from the last failure's (to be
 * logged), else 0. */
int ts__retry_failed(ts__retry *r, int rc, const char *msg, int64_t now);

/* Record a success: the next failure is tried again after TS_RETRY_MIN. */
void ts__retry_succeeded(ts__retry *r);

#endif
