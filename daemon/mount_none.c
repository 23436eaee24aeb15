/*
 * mount_none.c -- tsstored built without FUSE (./configure --without-fuse):
 * linked instead of mount.c, so that the daemon needs no libfuse.  The
 * option --mount (and the config key mount) stays known, and is refused
 * at start-up by load_config (main.c) with the reason, before the
 * database is opened; tsd_mount_start fails the same way should it be
 * reached.
 */
#include <stddef.h>

#include "tsd.h"

const int tsd_mount_available = 0;

int tsd_mount_start(ts_db *db, const char *mountpoint, struct tsd_mount **out)
{
	*out = NULL;
	tsd_log("--mount %s: " TSD_NO_FUSE, mountpoint);
	return -1;
}

void tsd_mount_stop(struct tsd_mount *m)
{
	(void)m; /* never started: tsd_mount_start always fails */
}
