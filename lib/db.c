/*
 * db.c -- opening and closing a database directory: options, the write
 * lock, the clock, the list of tables.
 *
 * A database is a directory holding one sub-directory per table and a LOCK
 * file.  A read-write ts_open takes an exclusive, non-blocking flock on
 * LOCK (held by the open file description, so a second writer -- another
 * process or another ts_open in this one -- gets TS_ELOCKED) and writes its
 * pid there for the message.  It then removes what an interrupted create
 * or drop left behind (".tmp-*" and ".dropped-*" directories), and reads
 * the EPOCH file, creating it for a new database (epoch.c).  Read-only
 * opens take no lock and change nothing.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "api.h"
#include "bcache.h"
#include "epoch.h"
#include "error.h"
#include "fsutil.h"
#include "handle.h"
#include "lifetime.h"
#include "tslimits.h"
#include "maint.h"
#include "thread.h"

/* flush_threads by default: the online CPUs, 1 to TS_FLUSH_THREADS_MAX. */
static int64_t default_flush_threads(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);
	return n < 1 ? 1 : n > TS_FLUSH_THREADS_MAX ? TS_FLUSH_THREADS_MAX : n;
}

void ts_options_init(ts_options *o)
{
	if (!o)
		return;
	memset(o, 0, sizeof *o);
	o->sync = TS_SYNC_INTERVAL;
	o->sync_interval = TS_DEFAULT_SYNC_INTERVAL;
	o->max_future = TS_DEFAULT_MAX_FUTURE;
	o->flush_size = TS_DEFAULT_FLUSH_SIZE;
	o->flush_age = TS_DEFAULT_FLUSH_AGE;
	o->merge_max_size = TS_DEFAULT_MERGE_MAX_SIZE;
	o->merge_delay = TS_DEFAULT_MERGE_DELAY;
	o->merge_slice_rows = TS_DEFAULT_MERGE_SLICE_ROWS;
	o->merge_rollover_spread = TS_DEFAULT_MERGE_ROLLOVER_SPREAD;
	o->maint_busy_window = TS_DEFAULT_MAINT_BUSY_WINDOW;
	o->maint_busy_share = TS_DEFAULT_MAINT_BUSY_SHARE;
	o->flush_threads = default_flush_threads();
	o->block_cache_size = ts__bcache_default_size(ts__memory_limit());
	o->log_cap = TS_DEFAULT_LOG_CAP;
	o->log_segment_size = (int64_t)TS_SEG_DATA;
}

/* The scheduler's settings came after the others: 0 in them (options
 * made before they existed, or zeroed by hand) means the default. */
static void default_zero_settings(ts_options *o)
{
	if (o->merge_slice_rows == 0)
		o->merge_slice_rows = TS_DEFAULT_MERGE_SLICE_ROWS;
	if (o->merge_rollover_spread == 0)
		o->merge_rollover_spread = TS_DEFAULT_MERGE_ROLLOVER_SPREAD;
	if (o->maint_busy_window == 0)
		o->maint_busy_window = TS_DEFAULT_MAINT_BUSY_WINDOW;
	if (o->maint_busy_share == 0)
		o->maint_busy_share = TS_DEFAULT_MAINT_BUSY_SHARE;
	if (o->flush_threads == 0)
		o->flush_threads = default_flush_threads();
}

static int check_options(const ts_options *o)
{
	if (o->flags & ~(unsigned)(TS_OPEN_CREATE | TS_OPEN_READONLY | TS_OPEN_NOMERGE))
		return ts__fail(TS_EINVAL, "options: unknown flags 0x%x", o->flags);
	if (o->sync < TS_SYNC_NONE || o->sync > TS_SYNC_COMMIT)
		return ts__fail(TS_EINVAL, "options: unknown sync mode %d", (int)o->sync);
	if (o->sync_interval <= 0 || o->max_future < 0 || o->flush_size <= 0 ||
	    o->flush_age <= 0 || o->merge_max_size <= 0 || o->merge_delay < 0 ||
	    o->block_cache_size < 0 || o->log_cap <= 0)
		return ts__fail(TS_EINVAL, "options: sizes and intervals must be positive");
	if (o->log_segment_size < (INT64_C(1) << TS_SEG_SHIFT_MIN) ||
	    o->log_segment_size > (INT64_C(1) << TS_SEG_SHIFT_MAX) ||
	    (o->log_segment_size & (o->log_segment_size - 1)) != 0)
		return ts__fail(TS_EINVAL, "options: log_segment_size %lld: want a power of two from "
		                "1 MiB to 64 MiB", (long long)o->log_segment_size);
	if (o->merge_slice_rows < 0 || o->merge_rollover_spread < 0 || o->maint_busy_window < 0)
		return ts__fail(TS_EINVAL, "options: merge_slice_rows, merge_rollover_spread and "
		                "maint_busy_window must be positive (0: the default)");
	if (o->maint_busy_share < 0 || o->maint_busy_share > 100)
		return ts__fail(TS_EINVAL, "options: maint_busy_share %lld: want a percentage from 1 "
		                "to 100 (0: the default)", (long long)o->maint_busy_share);
	if (o->flush_threads < 0 || o->flush_threads > TS_FLUSH_THREADS_MAX)
		return ts__fail(TS_EINVAL, "options: flush_threads %lld: want 1 to %d (0: the "
		                "default)", (long long)o->flush_threads, TS_FLUSH_THREADS_MAX);
	return 0;
}

int64_t ts_now(const ts_db *db)
{
	struct timespec t;
	if (!db) {
		ts__fail(TS_EINVAL, "ts_now: db is NULL");
		return 0;
	}
	if (db->opts.clock)
		return db->opts.clock(db->opts.clock_arg);
	if (db->frozen_now != INT64_MIN)
		return db->frozen_now;
	clock_gettime(CLOCK_REALTIME, &t);
	return (int64_t)t.tv_sec * TS_NS_PER_SEC + t.tv_nsec;
}

/* TSSTORE_NOW freezes the clock for tests. */
static int read_frozen_now(ts_db *db)
{
	const char *env = getenv("TSSTORE_NOW");
	db->frozen_now = INT64_MIN;
	if (!env || !*env || db->opts.clock)
		return 0;
	int rc = ts_time_parse(env, &db->frozen_now);
	return rc < 0 ? ts__context(TS_EINVAL, "TSSTORE_NOW") : 0;
}

int ts__db_lock(const char *dir, int *fd)
{
	char path[TS_PATH_MAX], pid[32] = "";
	int rc;
	*fd = -1;
	if ((rc = ts__path(path, "%s/LOCK", dir)) < 0)
		return rc;
	*fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	if (*fd < 0)
		return ts__fail_errno(errno, "open %s", path);
	if (flock(*fd, LOCK_EX | LOCK_NB) < 0) {
		int err = errno;
		ssize_t n = pread(*fd, pid, sizeof pid - 1, 0);
		pid[n > 0 ? n : 0] = '\0';
		pid[strcspn(pid, "\n")] = '\0';
		if (err == EWOULDBLOCK)
			return ts__fail(TS_ELOCKED, "database %s is locked by another writer%s%s%s",
			                dir, *pid ? " (pid " : "", pid, *pid ? ")" : "");
		return ts__fail_errno(err, "flock %s", path);
	}
	int len = snprintf(pid, sizeof pid, "%ld\n", (long)getpid());
	if (ftruncate(*fd, 0) < 0)
		return ts__fail_errno(errno, "truncate %s", path);
	return ts__write_at(*fd, pid, (size_t)len, 0, path);
}

static int take_lock(ts_db *db)
{
	return ts__db_lock(db->path, &db->lock_fd);
}

int ts__db_remove_leftovers(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int rc = 0;
	if (!d)
		return ts__fail_errno(errno, "opendir %s", dir);
	while (rc == 0 && (e = readdir(d))) {
		char path[TS_PATH_MAX];
		if (strncmp(e->d_name, ".tmp-", 5) != 0 && strncmp(e->d_name, ".dropped-", 9) != 0)
			continue;
		if ((rc = ts__path(path, "%s/%s", dir, e->d_name)) == 0)
			rc = ts__rmtree(path);
	}
	closedir(d);
	return rc;
}

static int open_dir(ts_db *db)
{
	struct stat st;
	if (stat(db->path, &st) < 0) {
		if (errno != ENOENT || !(db->opts.flags & TS_OPEN_CREATE) || ts__db_readonly(db))
			return ts__fail_errno(errno, "database %s", db->path);
		int rc = ts__mkdirs(db->path, 0755);
		if (rc < 0)
			return rc;
		/* make the new directory's entry durable before anything in it */
		char parent[TS_PATH_MAX];
		if ((rc = ts__path(parent, "%s/..", db->path)) < 0 || (rc = ts__fsync_dir(parent)) < 0)
			return rc;
	} else if (!S_ISDIR(st.st_mode)) {
		return ts__fail(TS_EINVAL, "database %s: not a directory", db->path);
	}
	return 0;
}

/* Sync one table's log: the range under the writer's lock, the msync
 * without it (an insert must not wait for the disk: at 100 MB/s of
 * inserts one second of log takes tens of milliseconds to write back),
 * the result under it again.  The caller holds a reference on t. */
static int sync_table(struct ts_table *t)
{
	uint64_t from = 0, to = 0, head = 0;
	pthread_mutex_lock(&t->mu);
	if (t->log)
		ts__log_sync_range(t->log, &from, &to, &head);
	pthread_mutex_unlock(&t->mu);
	if (from >= to)
		return 0;
	int rc = ts__log_sync_pages(t->log, from, to);
	if (rc == 0) {
		pthread_mutex_lock(&t->mu);
		ts__log_sync_done(t->log, to, head);
		pthread_mutex_unlock(&t->mu);
	}
	return rc;
}

/* Sync every loaded table's log; db->mu is held on entry and on return,
 * but not while syncing (ts_table_open must not wait for the disk
 * either): each table is held (ts__table_hold) meanwhile. */
static int sync_tables(ts_db *db)
{
	struct ts_table **held = NULL;
	int n = 0, cap = 0, rc = 0;
	for (struct ts_table *t = db->tables; t; t = t->next) {
		if (n == cap) {
			struct ts_table **p = realloc(held, (size_t)(cap = cap ? cap * 2 : 16) * sizeof *p);
			if (!p) {
				rc = ts__fail(TS_ENOMEM, "sync: out of memory");
				break;
			}
			held = p;
		}
		ts__table_hold(t, 0);
		held[n++] = t;
	}
	pthread_mutex_unlock(&db->mu);
	for (int i = 0; i < n; i++) {
		int r = sync_table(held[i]);
		if (r < 0 && rc == 0)
			rc = r;
		ts__table_unhold(held[i], 0);
	}
	free(held);
	pthread_mutex_lock(&db->mu);
	return rc;
}

int ts__sync(ts_db *db)
{
	if (ts__db_readonly(db))
		return ts__fail(TS_EREADONLY, "database %s is open read-only", db->path);
	pthread_mutex_lock(&db->mu);
	int rc = sync_tables(db);
	pthread_mutex_unlock(&db->mu);
	return rc;
}

/* TS_SYNC_INTERVAL: make the log durable every sync_interval. */
static void *syncer_main(void *arg)
{
	ts_db *db = arg;
	pthread_mutex_lock(&db->mu);
	while (!db->stopping) {
		struct timespec until;
		clock_gettime(CLOCK_REALTIME, &until);
		int64_t ns = until.tv_nsec + db->opts.sync_interval;
		until.tv_sec += (time_t)(ns / TS_NS_PER_SEC);
		until.tv_nsec = (long)(ns % TS_NS_PER_SEC);
		pthread_cond_timedwait(&db->stop_cv, &db->mu, &until);
		if (!db->stopping)
			sync_tables(db);
	}
	pthread_mutex_unlock(&db->mu);
	return NULL;
}

static int start_syncer(ts_db *db)
{
	if (ts__db_readonly(db) || db->opts.sync != TS_SYNC_INTERVAL)
		return 0;
	int err = ts__thread_start(&db->syncer, syncer_main, db);
	if (err)
		return ts__fail_errno(err, "start the sync thread");
	db->syncer_running = 1;
	return 0;
}

static void stop_syncer(ts_db *db)
{
	if (!db->syncer_running)
		return;
	pthread_mutex_lock(&db->mu);
	db->stopping = 1;
	pthread_cond_signal(&db->stop_cv);
	pthread_mutex_unlock(&db->mu);
	pthread_join(db->syncer, NULL);
	db->syncer_running = 0;
}

int ts_open(const char *path, const ts_options *opts, ts_db **out)
{
	ts_db *db = NULL;
	int rc;
	if (!out)
		return ts__fail(TS_EINVAL, "ts_open: out is NULL");
	*out = NULL;
	if (!path || !*path)
		return ts__fail(TS_EINVAL, "ts_open: empty path");
	if (!(db = calloc(1, sizeof *db)) || !(db->path = strdup(path))) {
		free(db);
		return ts__fail(TS_ENOMEM, "out of memory");
	}
	db->lock_fd = -1;
	pthread_mutex_init(&db->mu, NULL);
	pthread_mutex_init(&db->life_mu, NULL);
	pthread_mutex_init(&db->epoch_mu, NULL);
	pthread_cond_init(&db->life_cv, NULL);
	pthread_cond_init(&db->stop_cv, NULL);
	ts__maint_init(&db->maint);
	db->maint.rollups_load = ts__rollups_load; /* a job above the scheduler */
	db->maint.rollup_due = ts__rollup_due;
	if (opts)
		db->opts = *opts;
	else
		ts_options_init(&db->opts);
	default_zero_settings(&db->opts);
	/* a scan's read-ahead helpers: the cores a flush compresses on */
	ts__rapool_init(&db->rapool, (int)db->opts.flush_threads - 1);
	if ((rc = check_options(&db->opts)) < 0 || (rc = read_frozen_now(db)) < 0 ||
	    (rc = ts__bcache_init(&db->bcache, (size_t)db->opts.block_cache_size)) < 0 ||
	    (rc = open_dir(db)) < 0)
		goto fail;
	if (!ts__db_readonly(db) && ((rc = take_lock(db)) < 0 || (rc = ts__db_remove_leftovers(db->path)) < 0 ||
	                             (rc = ts__epoch_load(db)) < 0 || (rc = start_syncer(db)) < 0 ||
	                             (rc = ts__maint_start(db)) < 0))
		goto fail;
	*out = db;
	return 0;
fail:
	ts_close(db);
	return rc;
}

/* The cursors open (atomic, ts__table_hold): acquired, so that a cursor
 * closed is done with its table before the table is freed. */
static long cursors_open(ts_db *db)
{
	return __atomic_load_n(&db->cursors, __ATOMIC_ACQUIRE);
}

/* Refuse new calls and wait for those inside; TS_EBUSY (nothing
 * changed) while cursors are open, since they would outlive the db. */
static int begin_close(ts_db *db)
{
	int rc = 0;
	pthread_mutex_lock(&db->life_mu);
	if (db->closing) {
		rc = ts__fail(TS_EBUSY, "ts_close: another thread is closing the database");
	} else if (cursors_open(db) == 0) {
		db->closing = 1;
		while (db->calls > 0)
			pthread_cond_wait(&db->life_cv, &db->life_mu);
		/* a cursor opened by a call that was inside: not closing after
		 * all; else closed for good (even ts_table_close is refused) */
		db->closing = cursors_open(db) > 0 ? 0 : 2;
	}
	long cursors = cursors_open(db);
	if (rc == 0 && cursors > 0)
		rc = ts__fail(TS_EBUSY, "ts_close: %ld cursor%s still open (close cursors first)",
		              cursors, cursors == 1 ? " is" : "s are");
	pthread_mutex_unlock(&db->life_mu);
	return rc;
}

int ts_close(ts_db *db)
{
	if (!db)
		return 0;
	int rc = begin_close(db);
	if (rc < 0)
		return rc;
	ts__maint_stop(db);
	stop_syncer(db);
	rc = ts__db_readonly(db) || db->lock_fd < 0 ? 0 : ts__sync(db);
	while (db->tables) {
		struct ts_table *t = db->tables;
		db->tables = t->next;
		ts__table_free(t);
	}
	while (db->dead) {
		struct ts_table *t = db->dead;
		db->dead = t->next;
		ts__table_free(t);
	}
	ts__rapool_destroy(&db->rapool); /* no stream is open */
	ts__bcache_free(&db->bcache);
	if (db->lock_fd >= 0)
		close(db->lock_fd); /* releases the flock */
	pthread_cond_destroy(&db->stop_cv);
	pthread_mutex_destroy(&db->mu);
	pthread_cond_destroy(&db->life_cv);
	pthread_mutex_destroy(&db->life_mu);
	pthread_mutex_destroy(&db->epoch_mu);
	ts__maint_destroy(&db->maint);
	free(db->path);
	free(db);
	return rc;
}


static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Whether dir/name is a table: a valid name with a DESCRIPTOR inside.
 * Returns 1 or 0, or a TS_E* code when stat fails otherwise than for a
 * missing file (a table must not vanish from the list, and so from a
 * backup, because of an I/O error). */
static int is_table(const char *dir, const char *name)
{
	char path[TS_PATH_MAX];
	struct stat st;
	if (!ts_name_valid(name) || ts__path(path, "%s/%s/DESCRIPTOR", dir, name) < 0)
		return 0;
	if (stat(path, &st) < 0)
		return errno == ENOENT || errno == ENOTDIR ? 0 : ts__fail_errno(errno, "stat %s", path);
	return S_ISREG(st.st_mode);
}

void ts_free_names(char **names)
{
	for (int i = 0; names && names[i]; i++)
		free(names[i]);
	free(names);
}

int ts__tables(ts_db *db, char ***out, int *n)
{
	return ts__dir_tables(db->path, out, n);
}

int ts__dir_tables(const char *dir, char ***out, int *n)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char **names = NULL;
	int count = 0, cap = 0, rc = 0;
	*out = NULL;
	if (!d)
		return ts__fail_errno(errno, "opendir %s", dir);
	while ((e = readdir(d))) {
		int table = is_table(dir, e->d_name);
		if (table < 0) {
			rc = table;
			break;
		}
		if (!table)
			continue;
		if (count + 1 >= cap) {
			char **nn = realloc(names, (size_t)(cap = cap ? 2 * cap : 16) * sizeof *nn);
			if (!nn) { rc = ts__fail(TS_ENOMEM, "out of memory"); break; }
			names = nn;
		}
		if (!(names[count] = strdup(e->d_name))) { rc = ts__fail(TS_ENOMEM, "out of memory"); break; }
		names[++count] = NULL;
	}
	closedir(d);
	if (rc == 0 && !names && !(names = calloc(1, sizeof *names)))
		rc = ts__fail(TS_ENOMEM, "out of memory");
	if (rc < 0) {
		ts_free_names(names);
		return rc;
	}
	qsort(names, (size_t)count, sizeof *names, cmp_names);
	*out = names;
	if (n)
		*n = count;
	return 0;
}
