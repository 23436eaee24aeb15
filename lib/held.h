/*
 * held.h -- lock preconditions said in code.
 *
 * Many internal functions may only be called with a given mutex held
 * ("t->mu is held").  They assert it with TS_ASSERT_HELD(&t->mu), which
 * in builds with assertions (the default: the library is not built with
 * NDEBUG) checks that the mutex is locked.  A plain pthread mutex cannot
 * say by whom, so the check is a trylock: it catches a caller that took
 * no lock at all -- the usual mistake -- but not one that relies on a
 * lock another thread happens to hold.  The cost is one atomic operation;
 * the functions that assert are not per-row.
 */
#ifndef TS_HELD_H
#define TS_HELD_H

#include <assert.h>
#include <errno.h>
#include <pthread.h>

/* Whether m is locked (by some thread).  A trylock that succeeds is
 * undone at once. */
static inline int ts__held(const pthread_mutex_t *m)
{
	pthread_mutex_t *mm = (pthread_mutex_t *)m; /* trylock + unlock: no net change */
	if (pthread_mutex_trylock(mm) == EBUSY)
		return 1;
	pthread_mutex_unlock(mm);
	return 0;
}

#define TS_ASSERT_HELD(m) assert(ts__held(m))

#endif
