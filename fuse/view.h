/*
 * view.h -- the mounted view of a database (DESIGN.md section 6): tables
 * and time windows as read-only files, for cat, grep and awk (view.c).
 *
 * The view is a set of FUSE operations over a ts_db that the caller
 * opened and keeps open while the view is mounted: tsstore-fuse opens it
 * read-only (fuse/main.c); tsstored serves the same view from its own
 * handle (--mount).
 */
#ifndef TSSTORE_FUSE_VIEW_H
#define TSSTORE_FUSE_VIEW_H

#define FUSE_USE_VERSION 31
#include <fuse.h>

#include <tsstore.h>

/* Bytes of generated text a file keeps ahead of the reader at most, and
 * the step it is generated in. */
#define TSFS_CHUNK (64 * 1024)

/* The state of a mounted view: fuse_get_context()->private_data. */
struct tsfs_view;

/* A view of db (which must outlive it).  Returns NULL when out of memory. */
struct tsfs_view *tsfs_view_new(ts_db *db);

/* A view of the database at datadir, which the view opens read-only
 * when mounted (FUSE's init, after fuse_main may have forked) and closes
 * when unmounted.  Returns NULL when out of memory. */
struct tsfs_view *tsfs_view_open(const char *datadir);

/* Release the view: closes every file still open (an unmount with a
 * reader in the middle of a file).  NULL allowed. */
void tsfs_view_free(struct tsfs_view *v);

/* The operations of the view, to pass to fuse_main / fuse_new with the
 * view as private data. */
const struct fuse_operations *tsfs_operations(void);

#endif /* TSSTORE_FUSE_VIEW_H */
