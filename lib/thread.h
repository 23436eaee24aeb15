/*
 * thread.h -- how the library starts its background threads (the
 * syncer, the maintenance scheduler, the log's segment preparer, a
 * flush's compressing helpers).
 *
 * They start with every signal blocked, so that a signal sent to the
 * process is handled by one of the application's threads: a handler
 * that only sets a flag (tsstore insert's stop on SIGINT, libuv's signal
 * pipe) then interrupts the poll or read the application waits in,
 * instead of landing in a thread of ours that never looks at the flag.
 * The caller's mask is restored before returning.
 *
 * They never run at a real-time priority.  A process started under
 * SCHED_FIFO or SCHED_RR (chrt) would otherwise hand its policy down to
 * them, and a merge or a read-ahead helper at such a priority keeps its
 * core until it blocks -- tens of milliseconds for a merge's slice --
 * ahead of the application's threads serving reads and inserts, which
 * then wait for it (a 1-host query of tsstored waited 5-9 ms behind
 * them, 2026-11-27).  So when the caller runs under a real-time policy
 * the new thread starts under SCHED_OTHER: the application's threads
 * keep their priority over the library's background work, as the
 * scheduler's budget means (maint.c).  Under any other policy the thread
 * inherits the caller's, as pthread_create does.
 */
#ifndef TS_THREAD_H
#define TS_THREAD_H

#include <pthread.h>
#include <sched.h>
#include <signal.h>

/* pthread_create(t, NULL, fn, arg) with every signal blocked in the new
 * thread, and under SCHED_OTHER when the caller runs under a real-time
 * policy.  Returns 0 or pthread_create's error number. */
static inline int ts__thread_start(pthread_t *t, void *(*fn)(void *), void *arg)
{
	sigset_t all, old;
	pthread_attr_t attr, *a = NULL;
	struct sched_param sp;
	int policy;
	if (pthread_getschedparam(pthread_self(), &policy, &sp) == 0 &&
	    (policy == SCHED_FIFO || policy == SCHED_RR) && pthread_attr_init(&attr) == 0) {
		struct sched_param none = {0};
		a = &attr;
		if (pthread_attr_setinheritsched(a, PTHREAD_EXPLICIT_SCHED) != 0 ||
		    pthread_attr_setschedpolicy(a, SCHED_OTHER) != 0 ||
		    pthread_attr_setschedparam(a, &none) != 0) {
			pthread_attr_destroy(a); /* then as pthread_create would */
			a = NULL;
		}
	}
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	int err = pthread_create(t, a, fn, arg);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (a)
		pthread_attr_destroy(a);
	return err;
}

#endif /* TS_THREAD_H */
