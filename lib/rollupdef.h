/*
 * rollupdef.h -- a rollup's definition and watermark, the file ROLLUP in
 * the rollup table's directory (rollupdef.c; docs/rollup-format.md), and
 * the state a loaded rollup keeps beside its table (ts_table.rollup).
 *
 * A rollup is an ordinary table derived from a source table (or from
 * another rollup): docs/rollups.md.  What makes it one is this file,
 * written in the table's directory before the directory is renamed into
 * place (so a table is a rollup from its birth or never) and replaced
 * whole, like the DESCRIPTOR, each time the maintenance moves the
 * watermark.  Here: the struct, its encoding and decoding, reading and
 * writing the file, and finding the rollups of a source by their files;
 * what a rollup does is rollup.c's.
 */
#ifndef TS_ROLLUPDEF_H
#define TS_ROLLUPDEF_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "tslimits.h"
#include "retry.h"
#include "tsstore.h"

#define TS_ROLLUP_FILE "ROLLUP"
#define TS_ROLLUP_MAGIC "TSROLLUP"
#define TS_ROLLUP_FORMAT 1
/* Largest ROLLUP file read: far above what TS_COLUMNS_MAX specs take. */
#define TS_ROLLUP_FILE_MAX (1u << 20)
/* Flag bits of the file. */
#define TS_ROLLUP_FROM_ROLLUP 0x1u /* the source is a rollup: combine */

/* One requested function: of the source's column `column` (for a
 * rollup of a rollup: the base column, the one its source's own
 * definition names), fn. */
typedef struct ts__rollup_fn {
	char column[TS_NAME_MAX + 1];
	ts_aggfn fn;
} ts__rollup_fn;

/* A rollup's definition and watermark. */
typedef struct ts__rollup_def {
	char source[TS_NAME_MAX + 1];
	uint32_t flags;        /* TS_ROLLUP_FROM_ROLLUP */
	int64_t every;         /* window width, ns; windows at multiples of it */
	int group;             /* source key columns kept before ts */
	uint64_t watermark;    /* W: the source version through which the
	                        * rollup's rows are exact */
	int nfns;
	ts__rollup_fn *fns;    /* as requested, mean as mean */
} ts__rollup_def;

/* A value column of a rollup: fn of base column `column`, named
 * column_fn; mean is kept as the two columns sum and count.  The value
 * columns of a definition, in order, are those of its fns with mean
 * split and repeats left out (ts__rollup_columns). */
typedef struct ts__rollup_col {
	char column[TS_NAME_MAX + 1];
	ts_aggfn fn;           /* never TS_AGG_MEAN */
} ts__rollup_col;

/* The value columns of d: *out malloc'ed, *n of them.  Returns 0 or
 * TS_ENOMEM. */
int ts__rollup_columns(const ts__rollup_def *d, ts__rollup_col **out, int *n);

/* "column_fn" into out[TS_PATH_MAX]-ish buffer of size; TS_ESCHEMA when
 * longer than a column name may be. */
int ts__rollup_col_name(const ts__rollup_col *c, char *out, size_t size);

/* A loaded rollup (ts_table.rollup): its definition and the
 * maintenance's state.  mu guards def->watermark and the counters, which
 * the maintenance changes and stats and ts_rollup_info read; the rest of
 * def is immutable. */
typedef struct ts__rollup {
	pthread_mutex_t mu;
	ts__rollup_def def;
	ts__retry retry;          /* the maintenance job's (backoff.h) */
	uint64_t source_version;  /* the source's version when last looked at */
	uint64_t passes;          /* maintenance runs that moved the watermark */
	uint64_t windows_recomputed, windows_deleted, windows_skipped;
	uint64_t windows_accumulated; /* of windows_recomputed: written from
	                              * accumulators at insert (rollacc.c) */
	int64_t behind_since;     /* database clock: the watermark fell behind
	                           * the source's version (0: caught up) */
	uint64_t resets;          /* the source's version went below W */
	/* pacing (rollup.c, scheduler's thread only) */
	int64_t last_run;         /* database clock: the last run that read
	                           * the source (0: none yet) */
	uint64_t seen_head;       /* the source's version at the last look */
	int64_t persisted_mono;   /* monotonic ns: W was last written (0: not
	                           * since loaded) */
	int64_t durable_wait_since; /* monotonic ns: a paced run due waits for
	                             * the source's own syncs (0: none waits) */
} ts__rollup;

/* The bytes of d's file, in *b (malloc'ed, *n bytes).  Returns 0 or
 * TS_ENOMEM. */
int ts__rollup_encode(const ts__rollup_def *d, unsigned char **b, size_t *n);

/* Decode p[0..n) into *d (d->fns malloc'ed; ts__rollup_def_free).
 * Returns 0; TS_ECORRUPT (bad magic, length, checksum, field) or
 * TS_EVERSION (a format this build cannot read), with a message. */
int ts__rollup_decode(const void *p, size_t n, ts__rollup_def *d);

void ts__rollup_def_free(ts__rollup_def *d);

/* Read dir/ROLLUP.  Returns 0; TS_ENOENT when there is none (the table
 * is no rollup); else as ts__rollup_decode, or TS_EIO / TS_ENOMEM. */
int ts__rollup_read(const char *dir, ts__rollup_def *d);

/* Write dir/ROLLUP atomically (staged, synced, renamed, directory
 * synced: fsutil.h).  Returns 0 or a TS_E* code. */
int ts__rollup_write(const char *dir, const ts__rollup_def *d);

/* Load dir's rollup, if any, into *out (NULL when the table is none).
 * Returns 0 or an error of ts__rollup_read but TS_ENOENT. */
int ts__rollup_load(const char *dir, ts__rollup **out);
void ts__rollup_free(ts__rollup *r);

/* A read-only handle's rollup r: the watermark the writer wrote last,
 * read again from dir/ROLLUP (left as it was when the file cannot be
 * read). */
void ts__rollup_reload_watermark(const char *dir, ts__rollup *r);

/* The rollups whose source is table `source` among the tables of the
 * database directory dbdir, sorted: *names NULL-terminated (ts_free_names),
 * *n of them.  A table whose ROLLUP is damaged is skipped (ts_check
 * reports it).  Returns 0, TS_EIO (the directory cannot be listed, or a
 * ROLLUP read: it might name source) or TS_ENOMEM. */
int ts__rollups_of(const char *dbdir, const char *source, char ***names, int *n);

/* Set while the rollup maintenance of this thread writes a rollup table:
 * inserts and deletes into a rollup are refused otherwise. */
extern _Thread_local int ts__rollup_writing;

/* Runs that took the windows to recompute from the accumulators at
 * insert instead of reading changes (rollacc.h, ts__rollacc_exact); for
 * tests and measurements. */
extern uint64_t ts__rollup_changes_skipped;

/* Tests: when set, called by a rollup's run right after it synced the
 * source src (the durable version taken), before it reads the source's
 * rows -- where rows committed meanwhile are not durable. */
extern void (*ts__rollup_after_sync)(struct ts_table *src);

/* Paced runs that rolled up through the source's durable commit without
 * a snapshot or a sync of it (the harvest whole: rollup.c, unsynced);
 * for tests and measurements. */
extern uint64_t ts__rollup_unsynced_runs;

/* How long (monotonic ns) a paced run due waits for the source's own
 * syncs to make what it would roll up durable before it syncs the source
 * itself: TS_ROLLUP_DURABLE_WAIT; tests set 0 (at once, as before) or
 * INT64_MAX (never). */
extern int64_t ts__rollup_durable_wait;

/* How old (monotonic ns) the snapshot a rollup run reads at may grow
 * before the run takes a newer one: TS_ROLLUP_RESNAP_EVERY; tests set
 * 0 (a fresh snapshot for every span and part of a span). */
extern int64_t ts__rollup_resnap_every;

#endif
