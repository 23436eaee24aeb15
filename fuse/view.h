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

/* The view's cache of rendered files (view.c, docs/fuse.md): the texts
 * of all files together up to TSFS_CACHE_BYTES unless tsfs_view_cache
 * says otherwise, the text of one file when at most half of that, and
 * what is known of at most TSFS_CACHE_ENTRIES files (a length, a hash
 * and an mtime each); the least recently used go first.  Files whose
 * text moves with the clock (recent/, stats) are rendered again after
 * TSFS_MOVING_NS. */
#define TSFS_CACHE_BYTES ((size_t)256 << 20)
#define TSFS_CACHE_ENTRIES 4096
#define TSFS_MOVING_NS (INT64_C(1000) * 1000 * 1000)

/* The state of a mounted view: fuse_get_context()->private_data. */
struct tsfs_view;

/* A view of db (which must outlive it).  Returns NULL when out of memory. */
struct tsfs_view *tsfs_view_new(ts_db *db);

/* A view of the database at datadir, which the view opens read-only
 * when mounted (FUSE's init, after fuse_main may have forked) and closes
 * when unmounted.  Returns NULL when out of memory. */
struct tsfs_view *tsfs_view_open(const char *datadir);

/* Keep at most bytes of rendered text in v's cache (before mounting).
 * 0 keeps none: every open then generates its file from a cursor. */
void tsfs_view_cache(struct tsfs_view *v, size_t bytes);

/* Release the view: closes every file still open (an unmount with a
 * reader in the middle of a file).  NULL allowed. */
void tsfs_view_free(struct tsfs_view *v);

/* The operations of the view, to pass to fuse_main / fuse_new with the
 * view as private data. */
const struct fuse_operations *tsfs_operations(void);

#endif /* TSSTORE_FUSE_VIEW_H */
