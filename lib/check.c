/*
 * check.c -- ts_check: verifying a database's files and reporting every
 * problem found (docs/check-and-backup.md).
 *
 * The check reads files only, through the same readers that tables use:
 * ts__descriptor_read, ts__tablet_open + ts__tablet_verify, and a walk of
 * the log's commits (ts__log_walk_commits, recovery's validation) on a
 * private read-only log.  Each reader that stops at the first failure is
 * run per unit (a descriptor, a tablet, a segment file, a tree), so one
 * damaged file never hides another; ts__tablet_verify goes on past a
 * damaged block by itself.
 *
 * A writer may be at work meanwhile (tsstored beside `tsstore check`).
 * What it changes is the descriptor: a merge or expiry unlinks the
 * tablets a new descriptor no longer names, a flush releases the log
 * segments before the new flushed position.  So a missing tablet or a
 * broken walk is a problem only if the descriptor read again still says
 * the file should be there; otherwise the tablet is skipped, and the log
 * is walked again from the new descriptor (at most WALK_ATTEMPTS times).
 *
 * Of the database's own files, a check of every table verifies EPOCH
 * (epoch.c), reported with the table "".
 *
 * Beside the files, the check verifies invariant V of the version
 * intervals (docs/corrections.md section 1): no two tablets that may
 * hold a common key overlap in versions, and every tree of the log's
 * snapshot is newer than the tablets that may hold its keys.
 *
 * State: one struct check per call, counting the problems and the bytes
 * verified; tables are checked one after the other, each from its own
 * descriptor.  Two passes: the first reads every descriptor for the
 * total of bytes to verify (the progress display), the second checks.
 */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "api.h"
#include "avl.h"
#include "descriptor.h"
#include "descriptor_format.h"
#include "epoch.h"
#include "epoch_format.h"
#include "error.h"
#include "fsutil.h"
#include "handle.h"
#include "tslimits.h"
#include "log.h"
#include "rollupdef.h"
#include "row.h"
#include "tablet.h"
#include "tablet_format.h"

/* Walks of a table's log, before a broken one is believed. */
#define WALK_ATTEMPTS 8

struct check {
	ts_db *db;
	const ts_check_opts *o;
	const char *table;       /* the table being checked */
	const char *dir;         /* <db>/<table> */
	int problems;
	char first[TS_ERRMSG_MAX]; /* "file: what" of the first problem */
	uint64_t done, total;
};

/* ---- reporting ---- */

static void progress(struct check *c, uint64_t bytes)
{
	c->done += bytes;
	if (c->done > c->total) /* the files grew since they were counted */
		c->total = c->done;
	if (c->o && c->o->progress)
		c->o->progress(c->o->arg, c->done, c->total);
}

/* Report a problem in file (relative to the database directory). */
static void report(struct check *c, const char *file, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void report(struct check *c, const char *file, const char *fmt, ...)
{
	char what[TS_ERRMSG_MAX];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(what, sizeof what, fmt, ap);
	va_end(ap);
	if (c->problems++ == 0) {
		size_t n = strlen(file) < sizeof c->first / 2 ? strlen(file) : sizeof c->first / 2;
		snprintf(c->first, sizeof c->first, "%.*s: %.*s", (int)n, file,
		         (int)(sizeof c->first - n - 3), what);
	}
	if (c->o && c->o->problem)
		c->o->problem(c->o->arg, c->table, file, what);
}

/*
 * Report the failure whose message is in ts_errmsg, about the file at
 * path (absolute) named file (relative).  The readers' messages name the
 * file in full ("tablet /data/m/tablets/...: damaged block 2: checksum
 * mismatch"); since file is reported beside it, the part naming it goes.
 */
static void report_error(struct check *c, const char *file, const char *path)
{
	static const char *const prefixes[] = {"tablet ", "log segment ", ""};
	const char *msg = ts_errmsg(NULL);
	size_t n = strlen(path);
	for (size_t i = 0; i < sizeof prefixes / sizeof *prefixes; i++) {
		size_t p = strlen(prefixes[i]);
		if (strncmp(msg, prefixes[i], p) == 0 && strncmp(msg + p, path, n) == 0 &&
		    strncmp(msg + p + n, ": ", 2) == 0) {
			report(c, file, "%s", msg + p + n + 2);
			return;
		}
	}
	const char *at = strstr(msg, path); /* "read /data/m/...: ...": name it shorter */
	if (at)
		report(c, file, "%.*s%s%s", (int)(at - msg), msg, file, at + n);
	else
		report(c, file, "%s", msg);
}

/* The relative name <table>/<fmt...> and the absolute path of a file. */
static int name_file(struct check *c, char *file, char *path, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static int name_file(struct check *c, char *file, char *path, const char *fmt, ...)
{
	char rest[TS_PATH_MAX];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(rest, sizeof rest, fmt, ap);
	va_end(ap);
	if (n < 0 || n >= (int)sizeof rest)
		return ts__fail(TS_ETOOBIG, "path too long");
	int rc = ts__path(file, "%s/%s", c->table, rest);
	return rc < 0 ? rc : ts__path(path, "%s/%s", c->dir, rest);
}

/* A failure of a reader is a problem of the file, unless the check
 * itself cannot go on. */
static int fatal(int rc)
{
	return rc == TS_ENOMEM || rc == TS_ETOOBIG;
}

/* ---- the descriptor ---- */

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return (x > y) - (x < y);
}

/* Whether some value appears twice in v[0..n) (sorted in place); 0s are
 * not counted. */
static uint64_t repeated(uint64_t *v, int n)
{
	qsort(v, (size_t)n, sizeof *v, cmp_u64);
	for (int i = 1; i < n; i++)
		if (v[i] && v[i] == v[i - 1])
			return v[i];
	return 0;
}

/* Whether the timespans [a0, a1] and [b0, b1] meet: then the sources
 * they describe may hold a common key (a key's ts lies in both). */
static int spans_meet(int64_t a0, int64_t a1, int64_t b0, int64_t b1)
{
	return a0 <= b1 && b0 <= a1;
}

/*
 * Invariant V (docs/corrections.md section 1): tablets that may hold a
 * common key -- of one period, their timespans meeting -- have disjoint
 * version intervals, so one of them is newer than the other.  Tablets
 * written before versions existed ([0, 0]) are older than every other
 * source and are not compared.  (Whole periods are not compared: the
 * 4-hour tablets of one day interleave in versions -- the last rows of
 * one period arrive while the next one fills -- and share no key.)
 */
static void check_versions(struct check *c, const char *file, const ts__descriptor *d)
{
	for (int i = 0; i < d->ntablets; i++) {
		const ts__tablet_meta *a = &d->tablets[i];
		for (int j = i + 1; a->hi && j < d->ntablets; j++) {
			const ts__tablet_meta *b = &d->tablets[j];
			if (b->hi && spans_meet(a->min_ts, a->max_ts, b->min_ts, b->max_ts) &&
			    a->lo <= b->hi && b->lo <= a->hi)
				report(c, file, "tablets %" PRIu64 " and %" PRIu64 " overlap in versions "
				       "([%" PRIu64 ", %" PRIu64 "] and [%" PRIu64 ", %" PRIu64 "]) and in "
				       "time: neither is newer (invariant V)", a->id, b->id, a->lo,
				       a->hi, b->lo, b->hi);
		}
	}
}

/* The invariants of the tablet records that decoding does not check. */
/* The change records (docs/corrections.md section 4): at most
 * TS_CHANGE_RECORDS_MAX, with at most TS_CHANGE_RECORDS_KEY_BYTES of key
 * bounds, each after the changes horizon and the one
 * before it (decoding refuses the rest), with a ts range that does not
 * end before it begins. */
static void check_chrecs(struct check *c, const char *file, const ts__descriptor *d)
{
	size_t bytes = 0;
	if (d->nchrecs > ts__chrecs_max)
		report(c, file, "%d change records, more than the %d kept", d->nchrecs,
		       ts__chrecs_max);
	for (int i = 0; i < d->nchrecs; i++)
		bytes += (size_t)d->chrecs[i].lolen + d->chrecs[i].hilen;
	if (bytes > TS_CHANGE_RECORDS_KEY_BYTES)
		report(c, file, "the change records hold %zu bytes of key bounds, more than the %u "
		       "kept", bytes, TS_CHANGE_RECORDS_KEY_BYTES);
	for (int i = 0; i < d->nchrecs; i++) {
		const ts__tomb *x = &d->chrecs[i];
		if (x->version <= (i ? d->chrecs[i - 1].version : d->ch_horizon))
			report(c, file, "change record %d is not newer than the %s", i,
			       i ? "one before" : "changes horizon");
		if (x->tmin > x->tmax)
			report(c, file, "change record %d (version %" PRIu64 "): its time range ends "
			       "before it begins", i, x->version);
	}
	if (d->ch_horizon && d->ch_tmin > d->ch_tmax)
		report(c, file, "the changes horizon's time range ends before it begins");
}

static int check_records(struct check *c, const ts__descriptor *d)
{
	char file[TS_PATH_MAX], path[TS_PATH_MAX];
	int rc = name_file(c, file, path, TS_DESC_FILE);
	uint64_t *ids = malloc(2 * (size_t)(d->ntablets + 1) * sizeof *ids), *sources, twice;
	if (rc < 0 || !ids) {
		free(ids);
		return rc < 0 ? rc : ts__fail(TS_ENOMEM, "out of memory");
	}
	sources = ids + d->ntablets + 1;
	for (int i = 0; i < d->ntablets; i++) {
		const ts__tablet_meta *m = &d->tablets[i];
		ids[i] = m->id;
		sources[i] = m->source;
		if (m->id == 0 || m->id >= d->next_tablet_id)
			report(c, file, "tablet record %d: id %" PRIu64 " is not below the next id %" PRIu64,
			       i, m->id, d->next_tablet_id);
		if (m->rows == 0 || m->period_start >= m->period_end || m->min_ts > m->max_ts ||
		    m->min_ts < m->period_start || m->max_ts >= m->period_end)
			report(c, file, "tablet record %d (id %" PRIu64 "): %" PRIu64 " rows from %" PRId64
			       " to %" PRId64 " do not fit its period [%" PRId64 ", %" PRId64 ")",
			       i, m->id, m->rows, m->min_ts, m->max_ts, m->period_start, m->period_end);
	}
	if ((twice = repeated(ids, d->ntablets)))
		report(c, file, "tablet id %" PRIu64 " is named twice", twice);
	if ((twice = repeated(sources, d->ntablets)))
		report(c, file, "two tablets were flushed from the filling tablet born at %" PRIu64, twice);
	free(ids);
	check_versions(c, file, d);
	for (int i = 0; i < d->ntombs; i++) /* decoding refuses the rest */
		if (i > 0 && d->tombs[i].version <= d->tombs[i - 1].version)
			report(c, file, "tombstone record %d is not newer than the one before", i);
	check_chrecs(c, file, d);
	return 0;
}

/* ---- tablets ---- */

static int tablet_problem(void *arg, int code)
{
	void **a = arg;
	report_error(a[0], a[1], a[2]);
	(void)code;
	return 0; /* go on */
}

static void tablet_progress(void *arg, uint64_t bytes)
{
	progress(((void **)arg)[0], bytes);
}

/* Whether the table's current descriptor still names tablet id (1), no
 * longer does (0), or is gone (-1). */
static int still_named(const char *dir, uint64_t id)
{
	ts__descriptor *d;
	if (ts__descriptor_read(dir, &d) < 0)
		return -1;
	int named = 0;
	for (int i = 0; i < d->ntablets && !named; i++)
		named = d->tablets[i].id == id;
	ts__descriptor_free(d, 1);
	return named;
}

/* What the descriptor says of tablet t against what its file says. */
static void compare_meta(struct check *c, const char *file, const ts__tablet *t,
                         const ts__tablet_meta *m)
{
	if (t->size != m->bytes)
		report(c, file, "%" PRIu64 " bytes; the DESCRIPTOR says %" PRIu64, t->size, m->bytes);
	if (t->schema_version != m->schema_version)
		report(c, file, "schema version %u; the DESCRIPTOR says %u", t->schema_version,
		       m->schema_version);
	if (t->rows != m->rows || t->min_ts != m->min_ts || t->max_ts != m->max_ts)
		report(c, file, "%" PRIu64 " rows from %" PRId64 " to %" PRId64 "; the DESCRIPTOR says %"
		       PRIu64 " from %" PRId64 " to %" PRId64, t->rows, t->min_ts, t->max_ts, m->rows,
		       m->min_ts, m->max_ts);
	if (t->period_start != m->period_start || t->period_end != m->period_end)
		report(c, file, "period [%" PRId64 ", %" PRId64 "); the DESCRIPTOR says [%" PRId64
		       ", %" PRId64 ")", t->period_start, t->period_end, m->period_start, m->period_end);
	/* each block's newest version (format 3) lies in the tablet's
	 * interval: its rows came from sources within it (ts_changes_open
	 * trusts it to skip blocks).  A tablet the DESCRIPTOR records
	 * without versions ([0, 0], older than any) is read as such whatever
	 * its blocks say, so they are not compared. */
	for (uint32_t i = 0; t->format >= TS_TABLET_VERSION_BLOCK_HI && m->hi && i < t->nblocks; i++)
		if (t->blocks[i].hi < m->lo || t->blocks[i].hi > m->hi) {
			report(c, file, "block %u: newest version %" PRIu64 " outside the tablet's [%"
			       PRIu64 ", %" PRIu64 "] in the DESCRIPTOR", i, t->blocks[i].hi, m->lo, m->hi);
			break;
		}
}

/*
 * Check tablet id, named by d when m is not NULL (then against m too),
 * else found in tablets/ with no descriptor to go by (rows are not
 * decoded then).  Returns 0 or a fatal error.
 */
static int check_tablet(struct check *c, const ts__descriptor *d, const ts__tablet_meta *m,
                        uint64_t id)
{
	char name[64], file[TS_PATH_MAX], path[TS_PATH_MAX];
	ts__tablet *t = NULL;
	int rc = ts__tablet_name(id, name, sizeof name);
	if (rc == 0)
		rc = name_file(c, file, path, "tablets/%s", name);
	if (rc < 0)
		return rc;
	rc = ts__tablet_open(path, id, &t);
	if (rc == TS_ENOENT && m) {
		if (still_named(c->dir, id) == 1) /* else a merge or expiry took it */
			report(c, file, "missing: the DESCRIPTOR names it");
		progress(c, m->bytes);
		return 0;
	}
	if (rc < 0) {
		if (fatal(rc))
			return rc;
		if (rc != TS_ENOENT)
			report_error(c, file, path);
		progress(c, m ? m->bytes : 0);
		return 0;
	}
	const ts__schema *s = NULL;
	if (m) {
		compare_meta(c, file, t, m);
		if (t->schema_version == m->schema_version)
			s = d->schemas[m->schema_version - 1];
	}
	void *args[3] = {c, file, path};
	ts__tablet_verifier v = {tablet_problem, tablet_progress, args};
	uint64_t before = c->done;
	rc = ts__tablet_verify(t, s, &v);
	if (c->done - before < t->size) /* header, footer and trailer */
		progress(c, t->size - (c->done - before));
	ts__tablet_close(t);
	return fatal(rc) ? rc : 0;
}

/* Check every file in tablets/ named like a tablet: for a table whose
 * descriptor is unreadable. */
static int check_tablet_files(struct check *c)
{
	char dir[TS_PATH_MAX];
	int rc = ts__path(dir, "%s/tablets", c->dir);
	DIR *dp = rc == 0 ? opendir(dir) : NULL;
	struct dirent *e;
	while (dp && rc == 0 && (e = readdir(dp))) {
		uint64_t id;
		char rest[8];
		if (sscanf(e->d_name, "%16" SCNx64 "%7s", &id, rest) == 2 &&
		    strcmp(rest, TS_TABLET_SUFFIX) == 0 && strlen(e->d_name) == 16 + strlen(rest))
			rc = check_tablet(c, NULL, NULL, id);
	}
	if (dp)
		closedir(dp);
	return rc;
}

/* Every file in quarantine/ is a tablet found damaged earlier. */
static int check_quarantine(struct check *c)
{
	char dir[TS_PATH_MAX], file[TS_PATH_MAX], path[TS_PATH_MAX];
	int rc = ts__path(dir, "%s/quarantine", c->dir);
	DIR *dp = rc == 0 ? opendir(dir) : NULL;
	struct dirent *e;
	while (dp && rc == 0 && (e = readdir(dp))) {
		if (e->d_name[0] == '.')
			continue;
		if ((rc = name_file(c, file, path, "quarantine/%s", e->d_name)) == 0)
			report(c, file, "quarantined: found damaged and moved out of the table, "
			       "its rows are lost (remove the file once inspected)");
	}
	if (dp)
		closedir(dp);
	return rc;
}

/* ---- the log ---- */

/* The segment files: each at full size with a valid header. */
static int check_segments(struct check *c, const char *logdir)
{
	char name[64], file[TS_PATH_MAX], path[TS_PATH_MAX];
	uint64_t *segs;
	size_t n;
	int rc = name_file(c, file, path, "log");
	if (rc == 0)
		rc = ts__log_segments(logdir, &segs, &n);
	if (rc == TS_ENOENT) {
		report(c, file, "the log directory is missing");
		return 0;
	}
	if (rc < 0)
		return fatal(rc) ? rc : (report_error(c, file, logdir), 0);
	/* Every segment of a log has the size of its oldest sound one, as
	 * the library reads it: one of another size is damage. */
	unsigned shift = 0, found = 0;
	for (size_t i = 0; rc == 0 && i < n; i++) {
		if ((rc = ts__log_segment_name(segs[i], name, sizeof name)) < 0 ||
		    (rc = name_file(c, file, path, "log/%s", name)) < 0)
			break;
		int r = ts__log_check_segment(logdir, segs[i], shift, &found);
		if (r == 0 && !shift)
			shift = found;
		if (r < 0 && r != TS_ENOENT) /* ENOENT: released meanwhile */
			report_error(c, file, path);
	}
	free(segs);
	return rc;
}

/* The file holding log position lsn, for naming it. */
static void segment_file(struct check *c, ts__log *log, uint64_t lsn, char *file)
{
	char name[64], path[TS_PATH_MAX];
	if (ts__log_segment_name(ts__log_seg_of(log, lsn), name, sizeof name) < 0 ||
	    name_file(c, file, path, "log/%s", name) < 0)
		snprintf(file, TS_PATH_MAX, "%s/log", c->table);
}

/* Decode every row of a tree (already verified to lie in the log) and
 * check its timespan against the root.  Returns 0, or -1 with *why. */
static int check_tree_rows(ts__log *log, const ts__descriptor *d, const ts__root *r,
                           char *why, size_t size)
{
	ts_value vals[TS_COLUMNS_MAX];
	ts__avl_iter it;
	ts_buf scratch;
	uint64_t lsn;
	int64_t lo = INT64_MAX, hi = INT64_MIN;
	int rc = 0;
	ts__buf_init(&scratch);
	ts__avl_iter_init(&it, log, r->root, 0);
	while (rc == 0 && (lsn = ts__avl_iter_next(&it)) != 0) {
		size_t len;
		uint32_t v;
		const unsigned char *row = ts__rowrec_row(log, lsn, &len, &v);
		if (v < 1 || (int)v > d->nschemas) {
			snprintf(why, size, "the row at %" PRIu64 " has unknown schema version %u", lsn, v);
			rc = -1;
		} else if (ts__row_decode(d->schemas[v - 1], d->schemas[v - 1], row, len, vals,
		                          &scratch) < 0) {
			snprintf(why, size, "the row at %" PRIu64 " does not decode", lsn);
			rc = -1;
		} else {
			int64_t ts = vals[d->schemas[v - 1]->ts_col].v.i;
			lo = ts < lo ? ts : lo;
			hi = ts > hi ? ts : hi;
		}
	}
	ts__buf_free(&scratch);
	/* hi - period_start in unsigned: the root's fields may be garbage */
	if (rc == 0 && (lo != r->min_ts || hi != r->max_ts || lo < r->period_start ||
	                r->period_len <= 0 ||
	                (uint64_t)hi - (uint64_t)r->period_start >= (uint64_t)r->period_len)) {
		snprintf(why, size, "rows from %" PRId64 " to %" PRId64 "; its commit says %" PRId64
		         " to %" PRId64 " in the period starting at %" PRId64, lo, hi, r->min_ts,
		         r->max_ts, r->period_start);
		rc = -1;
	}
	return rc;
}

/* Check root i of commit cm, a tree not on disk.  Returns 0, or -1 with
 * *why. */
static int check_tree(ts__log *log, const ts__descriptor *d, const ts__commit *cm,
                      const ts__root *r, char *why, size_t size)
{
	long n = ts__avl_verify_root(log, r, d->flushed_lsn, cm->lsn);
	if (n < 0)
		return snprintf(why, size, "%s", ts_errmsg(NULL)), -1;
	if ((uint64_t)n != r->rows) {
		snprintf(why, size, "filling tablet born at %" PRIu64
		         ": its commit counts another number of rows", r->born);
		return -1;
	}
	if (r->rows && check_tree_rows(log, d, r, why, size) < 0)
		return -1;
	return 0;
}

/* Invariant V for a tree of the snapshot: it is newer than every tablet
 * that may hold a key of it (their timespans meet), so born after their
 * versions.  Returns 0, or -1 with *why. */
static int check_tree_newer(const ts__descriptor *d, const ts__root *r, char *why, size_t size)
{
	for (int i = 0; r->rows && i < d->ntablets; i++) {
		const ts__tablet_meta *m = &d->tablets[i];
		if (m->hi && r->born <= m->hi &&
		    spans_meet(r->min_ts, r->max_ts, m->min_ts, m->max_ts)) {
			snprintf(why, size, "filling tablet born at %" PRIu64 " is not newer than tablet %"
			         PRIu64 " (versions [%" PRIu64 ", %" PRIu64 "]), whose time it shares "
			         "(invariant V)", r->born, m->id, m->lo, m->hi);
			return -1;
		}
	}
	return 0;
}

/* Check the trees the commit at lsn names.  Returns 0, or -1 with *why
 * (the first problem). */
/* The tombstones (tombstone.h) of the commit cm and of d: the chain the
 * commit names well-formed, each record inside the log it may use, its
 * versions decreasing along it; the log holding any only under a
 * descriptor flagged TS_DESC_TOMBSTONES_LOGGED (else older builds would
 * misread it); and no tombstone of d newer than the commit (a version is
 * a commit's LSN).  Returns 0, or -1 with *why. */
static int check_tombs(ts__log *log, const ts__descriptor *d, const ts__commit *cm, char *why,
                       size_t size)
{
	for (int i = 0; i < d->ntombs; i++)
		if (d->tombs[i].version > cm->lsn) {
			snprintf(why, size, "the descriptor's tombstone of version %" PRIu64 " is newer "
			         "than the log's newest commit at %" PRIu64, d->tombs[i].version, cm->lsn);
			return -1;
		}
	/* a change record is a retired tombstone: a commit's version too */
	uint64_t newest = d->nchrecs ? d->chrecs[d->nchrecs - 1].version : d->ch_horizon;
	if (newest > cm->lsn) {
		snprintf(why, size, "the descriptor's change records reach version %" PRIu64 ", newer "
		         "than the log's newest commit at %" PRIu64, newest, cm->lsn);
		return -1;
	}
	if (!cm->has_tombs)
		return 0;
	ts__root r;
	ts__tomb *v = NULL;
	int n = 0, cap = 0;
	ts__commit_root(cm, cm->nroots, &r);
	if (!(d->flags & TS_DESC_TOMBSTONES_LOGGED)) {
		snprintf(why, size, "the commit at %" PRIu64 " names tombstones but the descriptor "
		         "does not say the log holds any", cm->lsn);
		return -1;
	}
	int rc = ts__tomb_chain(log, r.root, r.since, d->flushed_lsn, cm->lsn, &v, &n, &cap);
	free(v);
	if (rc < 0) {
		snprintf(why, size, "%s", ts_errmsg(NULL));
		return -1;
	}
	return 0;
}

static int check_trees(ts__log *log, const ts__descriptor *d, uint64_t lsn, char *why,
                       size_t size)
{
	ts__commit cm;
	if (ts__log_read_commit(log, lsn, &cm) < 0)
		return snprintf(why, size, "%s", ts_errmsg(NULL)), -1;
	if (check_tombs(log, d, &cm, why, size) < 0)
		return -1;
	for (uint32_t i = 0; i < cm.nroots; i++) {
		ts__root r;
		ts__commit_root(&cm, i, &r);
		if (!ts__tablets_hold_tree(d->tablets, d->ntablets, r.born) &&
		    (check_tree(log, d, &cm, &r, why, size) < 0 ||
		     check_tree_newer(d, &r, why, size) < 0))
			return -1;
	}
	return 0;
}

/* One walk of the log from d's flushed position through the recorded
 * head.  Returns 0 when sound, 1 with *file and *why when not, or
 * TS_ENOMEM. */
static int walk_once(struct check *c, const char *logdir, const ts__descriptor *d,
                     char *file, char *why, size_t size, uint64_t *walked)
{
	ts__log *log = NULL;
	uint64_t head = 0;
	int rc = ts__log_open_verify(logdir, &log);
	if (rc < 0)
		return rc;
	/* A head before the flushed position: a flush wrote the descriptor
	 * and has yet to make the commit that drops its tree. */
	ts__log_walk w = {.start = d->flushed_lsn};
	if (ts__log_recorded_head(logdir, &head) && head >= d->flushed_lsn)
		w.until = head;
	ts__log_walk_commits(log, &w);
	*walked = w.stop > w.start ? w.stop - w.start : 0;
	if (w.until && w.why) {
		segment_file(c, log, w.stop, file);
		snprintf(why, size, "batch at log position %" PRIu64 " is damaged (%s), before the "
		         "newest commit at %" PRIu64 " (log/HEAD)", w.stop, w.why, w.until);
		rc = 1;
	} else if (w.last && check_trees(log, d, w.last, why, size) < 0) {
		segment_file(c, log, w.last, file);
		rc = 1;
	}
	ts__log_close(log, 0);
	return rc;
}

/* Walk the log; a broken walk is believed only if the descriptor did not
 * change meanwhile (a flush releases segments, after a new descriptor). */
static int check_log(struct check *c, const ts__descriptor *d0)
{
	char logdir[TS_PATH_MAX], file[TS_PATH_MAX], why[TS_ERRMSG_MAX];
	const ts__descriptor *d = d0;
	ts__descriptor *fresh = NULL;
	uint64_t walked = 0;
	int rc = ts__path(logdir, "%s/log", c->dir);
	if (rc == 0)
		rc = check_segments(c, logdir);
	for (int attempt = 1; rc == 0; attempt++) {
		if ((rc = walk_once(c, logdir, d, file, why, sizeof why, &walked)) != 1)
			break;
		rc = 0;
		ts__descriptor_free(fresh, 1);
		fresh = NULL;
		int r = ts__descriptor_read(c->dir, &fresh);
		if (r == TS_ENOENT)
			break; /* dropped meanwhile */
		if (r < 0 || fresh->generation == d->generation || attempt == WALK_ATTEMPTS) {
			report(c, file, "%s", why);
			break;
		}
		d = fresh;
	}
	ts__descriptor_free(fresh, 1);
	progress(c, walked);
	return rc < 0 ? rc : 0;
}

/* ---- a rollup's definition ---- */

/* <table>/ROLLUP, when there is one (docs/rollup-format.md): its format,
 * checksum and fields (ts__rollup_decode), and that it fits the table --
 * the key is the group's columns and ts, the value columns are those the
 * functions make, the duplicate policy is replace -- and that its source
 * exists (a table is not dropped while rollups are built from it). */
static int check_rollup(struct check *c, const ts__descriptor *d)
{
	char file[TS_PATH_MAX], path[TS_PATH_MAX], name[TS_NAME_MAX + 32];
	ts__rollup_def def;
	int rc = name_file(c, file, path, TS_ROLLUP_FILE);
	if (rc < 0)
		return rc;
	if ((rc = ts__rollup_read(c->dir, &def)) == TS_ENOENT)
		return 0;
	if (rc < 0) {
		if (fatal(rc))
			return rc;
		report_error(c, file, path);
		return 0;
	}
	ts__rollup_col *cols = NULL;
	int ncols = 0;
	if ((rc = ts__rollup_columns(&def, &cols, &ncols)) < 0) {
		ts__rollup_def_free(&def);
		return rc;
	}
	const ts__schema *s = d ? ts__desc_schema(d) : NULL;
	if (s && (s->nkey != def.group + 1 || s->ncols != s->nkey + ncols))
		report(c, file, "the definition makes %d key and %d value columns, the table has "
		       "%d and %d", def.group + 1, ncols, s->nkey, s->ncols - s->nkey);
	else if (s)
		for (int j = 0; j < ncols; j++) {
			const char *have = s->cols[s->nkey + j].name;
			if (ts__rollup_col_name(&cols[j], name, sizeof name) < 0 || strcmp(have, name)) {
				report(c, file, "value column %d is \"%s\", the definition says \"%s_%s\"",
				       j, have, cols[j].column, ts_aggfn_name(cols[j].fn));
				break;
			}
		}
	if (d && (d->on_duplicate != TS_ON_DUPLICATE_REPLACE || !(d->flags & TS_DESC_REPLACED)))
		report(c, file, "the table's duplicate policy is %s, a rollup's is replace",
		       ts_on_duplicate_name(d->on_duplicate));
	struct stat st;
	if (ts__path(path, "%s/%s/%s", c->db->path, def.source, TS_DESC_FILE) == 0 &&
	    stat(path, &st) < 0 && errno == ENOENT)
		report(c, file, "its source \"%s\" does not exist", def.source);
	ts__clear_error();
	free(cols);
	ts__rollup_def_free(&def);
	return 0;
}

/* ---- tables ---- */

static int check_table(struct check *c, const char *name)
{
	char dir[TS_PATH_MAX], file[TS_PATH_MAX], path[TS_PATH_MAX];
	ts__descriptor *d = NULL;
	int rc = ts__path(dir, "%s/%s", c->db->path, name);
	if (rc < 0)
		return rc;
	c->table = name;
	c->dir = dir;
	if ((rc = name_file(c, file, path, TS_DESC_FILE)) < 0)
		return rc;
	rc = ts__descriptor_read(dir, &d);
	if (rc == TS_ENOENT)
		return 0; /* dropped since it was listed */
	if (rc < 0 && fatal(rc))
		return rc;
	if (rc < 0) {
		report_error(c, file, path);
		rc = check_tablet_files(c);
	} else {
		progress(c, TS_DESC_HEADER_SIZE);
		rc = check_records(c, d);
		for (int i = 0; rc == 0 && i < d->ntablets; i++)
			rc = check_tablet(c, d, &d->tablets[i], d->tablets[i].id);
	}
	if (rc == 0)
		rc = check_quarantine(c);
	if (rc == 0)
		rc = check_rollup(c, d);
	if (rc == 0 && d)
		rc = check_log(c, d);
	else if (rc == 0) /* the segment files at least */
		rc = ts__path(path, "%s/log", dir) < 0 ? TS_ETOOBIG : check_segments(c, path);
	ts__descriptor_free(d, 1);
	return rc;
}

/* Bytes a table's check will read, as its descriptor and head say now. */
static uint64_t estimate(const ts_db *db, const char *name)
{
	char dir[TS_PATH_MAX];
	ts__descriptor *d;
	uint64_t n = TS_DESC_HEADER_SIZE, head = 0;
	if (ts__path(dir, "%s/%s", db->path, name) < 0 || ts__descriptor_read(dir, &d) < 0)
		return n;
	for (int i = 0; i < d->ntablets; i++)
		n += d->tablets[i].bytes;
	if (ts__path(dir, "%s/%s/log", db->path, name) == 0 &&
	    ts__log_recorded_head(dir, &head) && head > d->flushed_lsn)
		n += head - d->flushed_lsn;
	ts__descriptor_free(d, 1);
	return n;
}

/* The tables to check: the one named, or all. */
static int tables_to_check(ts_db *db, const char *table, char ***names, int *n)
{
	char path[TS_PATH_MAX];
	struct stat st;
	if (!table)
		return ts_tables(db, names, n);
	if (!ts_name_valid(table))
		return ts__fail(TS_EINVAL, "invalid table name \"%.80s\"", table);
	int rc = ts__path(path, "%s/%s/%s", db->path, table, TS_DESC_FILE);
	if (rc < 0)
		return rc;
	if (stat(path, &st) < 0 || !S_ISREG(st.st_mode))
		return ts__fail(TS_ENOENT, "no such table \"%s\"", table);
	if (!(*names = calloc(2, sizeof **names)) || !((*names)[0] = strdup(table))) {
		free(*names);
		*names = NULL;
		return ts__fail(TS_ENOMEM, "out of memory");
	}
	*n = 1;
	return 0;
}

/* ---- the database's own files ---- */

/* EPOCH: decodes (docs/epoch-format.md).  A missing one is no problem: a
 * database made before the file existed has none until a writer opens
 * it. */
static int check_epoch(struct check *c)
{
	char path[TS_PATH_MAX];
	ts__epoch_file e;
	int rc = ts__epoch_read(c->db->path, &e);
	c->table = "";
	if (rc == TS_ENOENT || rc == 0) {
		ts__clear_error();
		return 0;
	}
	if (fatal(rc))
		return rc;
	if ((rc = ts__path(path, "%s/%s", c->db->path, TS_EPOCH_FILE)) < 0)
		return rc;
	report_error(c, TS_EPOCH_FILE, path);
	ts__clear_error();
	return 0;
}

int ts__check(ts_db *db, const char *table, const ts_check_opts *opts)
{
	struct check c = {.db = db, .o = opts};
	char **names = NULL;
	int n = 0, rc = tables_to_check(db, table, &names, &n);
	if (rc < 0)
		return rc;
	if (!table && (rc = check_epoch(&c)) < 0) {
		ts_free_names(names);
		return ts__context(rc, "check");
	}
	for (int i = 0; i < n; i++)
		c.total += estimate(db, names[i]);
	for (int i = 0; rc == 0 && i < n; i++)
		rc = check_table(&c, names[i]);
	ts_free_names(names);
	if (rc < 0)
		return ts__context(rc, "check");
	c.total = c.done; /* the last call says done */
	if (opts && opts->progress)
		opts->progress(opts->arg, c.done, c.total);
	if (c.problems)
		return ts__fail(TS_ECORRUPT, "%d problem%s found; the first: %s", c.problems,
		                c.problems == 1 ? "" : "s", c.first);
	return 0;
}
