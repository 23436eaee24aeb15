/*
 * quarantine.c -- moving the tablets readers found damaged out of the
 * way: out of the descriptor, and their files into <table>/quarantine/,
 * where an operator can look at them (docs/layout.md section 7).
 *
 * Readers only note a damaged tablet (ts__table_damaged, tablets.c) and
 * wake the scheduler, whose pass runs ts__table_quarantine_due first of
 * its jobs for each table, so that no flush or merge trips over the
 * tablet again.  The rows of a quarantined tablet are given up; ts_check
 * reports the files.
 */
#include <errno.h>
#include <stdio.h>

#include "error.h"
#include "fsutil.h"
#include "handle.h"
#include "held.h"
#include "quarantine.h"
#include "tabledesc.h"
#include "tablet.h"
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

/* Take one damaged id off the list; 0 when none is left. */
static int next_damaged(struct ts_table *t, uint64_t *id)
{
	int any;
	pthread_mutex_lock(&t->tablets_mu);
	if ((any = t->ndamaged > 0))
		*id = t->damaged[--t->ndamaged];
	pthread_mutex_unlock(&t->tablets_mu);
	return any;
}

/*
 * The descriptor is changed first, then the file is moved aside before
 * desc_mu is let go: a crash between the two leaves a file no
 * descriptor names, which the next writer's open deletes -- the rows were
 * already given up as damaged.
 */
int ts__table_quarantine_due(struct ts_table *t)
{
	char name[64] = "";
	uint64_t id;
	int rc = 0;
	while (rc == 0 && next_damaged(t, &id)) {
		if ((rc = ts__table_desc_begin(t)) < 0)
			break;
		int was_named = forget_tablet(t, id);
		rc = was_named < 0 ? was_named : ts__tablet_name(id, name, sizeof name);
		if (rc == 0 && was_named == 1 && (rc = move_aside(t, name)) == 0)
			__atomic_add_fetch(&t->quarantined, 1, __ATOMIC_RELAXED);
		ts__table_desc_end(t);
		if (rc == 0 && was_named == 1)
			ts__table_tablet_retire(t, id);
		if (rc < 0)
			rc = ts__context(rc, "quarantine of tablet %s", name);
	}
	return rc;
}
