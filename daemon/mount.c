/*
 * mount.c -- the FUSE view served from tsstored's own process
 * (--mount MOUNTPOINT): the view of fuse/view.c over the daemon's
 * read-write handle, so the files show every committed batch at once,
 * with no second process and no second open of the database.
 *
 * The FUSE session runs libfuse's single-threaded loop on a thread of its
 * own, with every signal blocked but the one that wakes it to stop (the
 * event loop's SIGTERM handling stays with libuv).  One thread, so that
 * the stop knows which thread to interrupt; the view's reads are
 * sequential per file anyway.  Stopping ends the loop (tsd_mount_stop says how), then
 * unmounts and destroys the session, whose destroy callback closes the
 * files readers still hold open; only then may the caller close the
 * database.
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdatomic.h>
#include <time.h>

#include "tsd.h"
#include "view.h"

struct tsd_mount {
	struct fuse *fuse;
	struct tsfs_view *view;
	pthread_t thread;
	atomic_int ended;          /* the loop returned */
};

const int tsd_mount_available = 1;

/* The signal that interrupts the loop's read of /dev/fuse at the stop. */
#define WAKE_SIGNAL SIGUSR1

static void on_wake(int sig)
{
	(void)sig; /* only to interrupt read(2) with EINTR */
}

static void *loop_main(void *arg)
{
	struct tsd_mount *m = arg;
	sigset_t set;
	sigfillset(&set);
	sigdelset(&set, WAKE_SIGNAL);
	pthread_sigmask(SIG_SETMASK, &set, NULL);
	fuse_loop(m->fuse);
	atomic_store(&m->ended, 1);
	return NULL;
}

int tsd_mount_start(ts_db *db, const char *mountpoint, struct tsd_mount **out)
{
	char *argv[] = {"tsstored", "-oro,fsname=tsstore,subtype=tsstore", NULL};
	struct fuse_args args = FUSE_ARGS_INIT(2, argv);
	struct tsd_mount *m = calloc(1, sizeof *m);
	*out = NULL;
	if (!m || !(m->view = tsfs_view_new(db))) {
		free(m);
		tsd_log("--mount: out of memory");
		return -1;
	}
	m->fuse = fuse_new(&args, tsfs_operations(), sizeof(struct fuse_operations), m->view);
	fuse_opt_free_args(&args); /* fuse_new may have added to them */
	if (!m->fuse || fuse_mount(m->fuse, mountpoint) < 0) {
		tsd_log("--mount: cannot mount the view at %s (see libfuse's message above)",
		        mountpoint);
		if (m->fuse)
			fuse_destroy(m->fuse);
		tsfs_view_free(m->view);
		free(m);
		return -1;
	}
	struct sigaction sa = {.sa_handler = on_wake}; /* no SA_RESTART */
	sigemptyset(&sa.sa_mask);
	if (sigaction(WAKE_SIGNAL, &sa, NULL) < 0 ||
	    pthread_create(&m->thread, NULL, loop_main, m) != 0) {
		tsd_log("--mount: cannot start the FUSE thread");
		fuse_unmount(m->fuse);
		fuse_destroy(m->fuse);
		tsfs_view_free(m->view);
		free(m);
		return -1;
	}
	tsd_log("serving the FUSE view at %s", mountpoint);
	*out = m;
	return 0;
}

void tsd_mount_stop(struct tsd_mount *m)
{
	if (!m)
		return;
	/* The loop sits in read(2) on /dev/fuse, and a reader holding a
	 * file open keeps the connection alive past an unmount: so mark the
	 * session done and interrupt the read (again, in case the signal
	 * came just before it) until the loop returns.  Destroying the
	 * session then closes /dev/fuse, which aborts the connection: open
	 * files get ENOTCONN. */
	fuse_exit(m->fuse);
	while (!atomic_load(&m->ended)) {
		pthread_kill(m->thread, WAKE_SIGNAL);
		struct timespec pause = {0, 10 * 1000 * 1000};
		nanosleep(&pause, NULL);
	}
	pthread_join(m->thread, NULL);
	fuse_unmount(m->fuse);
	fuse_destroy(m->fuse);
	tsfs_view_free(m->view);
	free(m);
}
