/*
 * quarantine.c -- moving the tablets readers found damaged out of the
 * way: out of the descriptor, and their files into <table>/quarantine/,
 * where an operator can look at them (docs/layout.md section 7).
 *
 * Readers only note a damaged tablet (ts__table_damaged, tablets.c) and
 * wake the scheduler, whose pass runs ts__table_quarantine_due first of
 * its jobs for each table, so that no flush or merge trips over the
 * tablet again.  The rows of a quarantined tablet are given up; ts_check
 * reports the files.  Each quarantine is said through the database's log
 * function (ts_options.log) with the table, the file and the reader's
 * message that found the damage.
 *
 * tablets_quarantined counts the tablets in quarantine/: a writer or
 * reader opening the table starts from the files there
 * (ts__quarantine_count), so the count survives a restart as long as
 * the files stay (an operator who removes them once inspected lowers it
 * at the next open).
 */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backoff.h"
#include "error.h"
#include "fsutil.h"
#include "handle.h"
#include "held.h"
#include "quarantine.h"
#include "tabledesc.h"
#include "tablet.h"
#include "tablet_format.h"
#include "tablets.h"

/* Move tablet file name into <table>/quarantine/ (if it is still there). */
static int move_aside(struct ts_table *t, const char *name)
{
	char qdir[TS_PATH_MAX], from[TS_PATH_MAX], to[TS_PATH_MAX];
	int rc;
	if ((rc = ts__path(qdir, "%s/quarantine", t->dir)) < 0 ||
	    (rc = ts__path(from, "%s/tablets/%s", t->dir, name)) < 0 ||
	    (rc = ts__path(to, "%s/%s", qdir, name)) < 0 || (rc = ts__mkdirs(qdir, 0755)) < 0)
		return rc;
	if (rename(from, to) < 0 && errno != ENOENT)
		return ts__fail_errno(errno, "rename %s to %s", from, to);
	if ((rc = ts__fsync_dir(qdir)) == 0 && (rc = ts__path(from, "%s/tablets", t->dir)) == 0)
		rc = ts__fsync_dir(from);
	return rc;
}

/* Drop tablet id from the descriptor; desc_mu is held.  1 if it was named. */
static int forget_tablet(struct ts_table *t, uint64_t id)
{
	TS_ASSERT_HELD(&t->desc_mu);
	if (!ts__desc_names(t->desc, id))
		return 0;
	int rc = ts__table_replace_tablets(t, &id, 1, NULL);
	return rc < 0 ? rc : 1;
}

/* Take one damaged id off the list, and the message that found it
 * (*why: the caller frees it; NULL when unknown); 0 when none is left. */
static int next_damaged(struct ts_table *t, uint64_t *id, char **why)
{
	int any;
	pthread_mutex_lock(&t->tablets_mu);
	if ((any = t->ndamaged > 0)) {
		t->ndamaged--;
		*id = t->damaged[t->ndamaged];
		*why = t->damaged_why[t->ndamaged];
		t->damaged_why[t->ndamaged] = NULL;
	}
	pthread_mutex_unlock(&t->tablets_mu);
	return any;
}

/* Say that tablet name of t was moved aside, and why. */
static void log_quarantine(struct ts_table *t, const char *name, const char *why)
{
	char line[TS_ERRMSG_MAX + TS_PATH_MAX + 256];
	snprintf(line, sizeof line,
	         "table \"%s\": tablet %s/tablets/%s quarantined (moved into %s/quarantine/; "
	         "its rows are no longer read): %s", t->name, t->dir, name, t->dir,
	         why ? why : "damaged (the reader's message was lost: out of memory)");
	ts__db_log(t->db, line);
}

/*
 * The descriptor is changed first, then the file is moved aside before
 * desc_mu is let go: a crash between the two leaves a file no
 * descriptor names, which the next writer's open deletes -- the rows were
 * already given up as damaged.
 */
int ts__table_quarantine_due(struct ts_table *t)
{
	char name[64] = "", *why = NULL;
	uint64_t id;
	int rc = 0;
	while (rc == 0 && next_damaged(t, &id, &why)) {
		if ((rc = ts__table_desc_begin(t)) < 0) {
			free(why);
			break;
		}
		int was_named = forget_tablet(t, id);
		rc = was_named < 0 ? was_named : ts__tablet_name(id, name, sizeof name);
		if (rc == 0 && was_named == 1 && (rc = move_aside(t, name)) == 0)
			__atomic_add_fetch(&t->quarantined, 1, __ATOMIC_RELAXED);
		ts__table_desc_end(t);
		if (rc == 0 && was_named == 1) {
			ts__table_tablet_retire(t, id);
			log_quarantine(t, name, why);
		}
		free(why);
		why = NULL;
		if (rc < 0)
			rc = ts__context(rc, "quarantine of tablet %s", name);
	}
	return rc;
}

uint64_t ts__quarantine_count(const char *dir)
{
	char qdir[TS_PATH_MAX];
	DIR *d = ts__path(qdir, "%s/quarantine", dir) == 0 ? opendir(qdir) : NULL;
	struct dirent *e;
	uint64_t n = 0;
	while (d && (e = readdir(d))) {
		uint64_t id;
		char rest[8];
		if (strlen(e->d_name) == 16 + strlen(TS_TABLET_SUFFIX) &&
		    sscanf(e->d_name, "%16" SCNx64 "%7s", &id, rest) == 2 &&
		    strcmp(rest, TS_TABLET_SUFFIX) == 0)
			n++;
	}
	if (d)
		closedir(d);
	return n;
}
