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
 */
#ifndef TS_THREAD_H
#define TS_THREAD_H

#include <pthread.h>
#include <signal.h>

/* pthread_create(t, NULL, fn, arg) with every signal blocked in the new
 * thread.  Returns 0 or pthread_create's error number. */
static inline int ts__thread_start(pthread_t *t, void *(*fn)(void *), void *arg)
{
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	int err = pthread_create(t, NULL, fn, arg);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return err;
}

#endif /* TS_THREAD_H */
