/*
 * tablets.c -- the on-disk tablets a table has open, shared by every
 * reader and writer of the table in the process, and the tablet sets
 * snapshots take.
 *
 * A tablet is opened on first use and counted (ts__table_tablet, _put):
 * a merge, an expiry or a quarantine that takes it out of the descriptor
 * retires it (ts__table_tablet_retire), and it is closed when its last
 * user lets go -- its file already unlinked, its bytes still readable
 * through the open descriptor.  tablets_mu guards the open tablets and
 * the damaged ids.
 *
 * A tablet set is the current descriptor's tablets, opened, with its
 * schemas and TTL: built by the first snapshot after each swap of the
 * descriptor and shared by every later one, so a snapshot costs one
 * reference (schema_mu guards t->tablet_set and desc_swaps).
 *
 * A reader that finds a tablet damaged says so here
 * (ts__table_damaged): the id is noted once, and the scheduler is woken
 * to quarantine it (quarantine.c).
 */
#include <stdlib.h>
#include <string.h>

#include "bcache.h"
#include "error.h"
#include "fsutil.h"
#include "handle.h"
#include "held.h"
#include "tablet.h"
#include "tablets.h"

/* ---- open tablets ---- */

static void note_damage(struct ts_table *t, uint64_t id, int rc);

/* Room for one more open tablet; tablets_mu is held.  Returns 0 or
 * TS_ENOMEM. */
static int open_room(struct ts_table *t)
{
	TS_ASSERT_HELD(&t->tablets_mu);
	if (t->nopen == t->capopen) {
		int cap = t->capopen ? t->capopen * 2 : 16;
		struct ts__open_tablet *o = realloc(t->open_tablets, (size_t)cap * sizeof *o);
		if (!o)
			return ts__fail(TS_ENOMEM, "out of memory");
		t->open_tablets = o;
		t->capopen = cap;
	}
	return 0;
}

/* Give tab, tablet id just opened, the serial reserved for it, if any
 * (blocks may be cached under it), ending the reservation; tablets_mu
 * is held. */
static void take_serial(struct ts_table *t, uint64_t id, ts__tablet *tab)
{
	TS_ASSERT_HELD(&t->tablets_mu);
	for (int i = 0; i < t->nwarm; i++)
		if (t->warm[i].id == id) {
			tab->serial = t->warm[i].serial;
			t->warm[i] = t->warm[--t->nwarm];
			break;
		}
}

int ts__table_tablet_open_file(struct ts_table *t, uint64_t id, ts__tablet **out)
{
	char name[64], path[TS_PATH_MAX];
	int rc;
	if ((rc = ts__tablet_name(id, name, sizeof name)) < 0 ||
	    (rc = ts__path(path, "%s/tablets/%s", t->dir, name)) < 0)
		return rc;
	return ts__tablet_open(path, id, out);
}

/* A reference to the tablet of m (opened on first use); tablets_mu is
 * held. */
static int tablet_ref(struct ts_table *t, const ts__tablet_meta *m, ts__tablet **out)
{
	TS_ASSERT_HELD(&t->tablets_mu);
	int rc;
	for (int i = 0; i < t->nopen; i++)
		if (t->open_tablets[i].id == m->id && !t->open_tablets[i].retired) {
			t->open_tablets[i].refs++;
			*out = t->open_tablets[i].tab;
			return 0;
		}
	if ((rc = open_room(t)) < 0)
		return rc;
	if ((rc = ts__table_tablet_open_file(t, m->id, out)) < 0) {
		note_damage(t, m->id, rc);
		return rc;
	}
	take_serial(t, m->id, *out);
	t->open_tablets[t->nopen] = (struct ts__open_tablet){m->id, *out, 1, 0};
	t->nopen++;
	return 0;
}

void ts__table_tablet_adopt(struct ts_table *t, uint64_t id, ts__tablet *tab)
{
	int taken = 0;
	pthread_mutex_lock(&t->tablets_mu);
	for (int i = 0; i < t->nopen && !taken; i++)
		taken = t->open_tablets[i].id == id && !t->open_tablets[i].retired;
	if (!taken && open_room(t) == 0) {
		take_serial(t, id, tab);
		t->open_tablets[t->nopen++] = (struct ts__open_tablet){id, tab, 0, 0};
		tab = NULL;
	}
	pthread_mutex_unlock(&t->tablets_mu);
	if (tab) {
		ts__clear_error();
		ts__tablet_close(tab);
	}
}

int ts__table_tablets(struct ts_table *t, const ts__tablet_meta *m, int n, ts__tablet **out)
{
	int rc = 0;
	memset(out, 0, (size_t)n * sizeof *out);
	pthread_mutex_lock(&t->tablets_mu);
	for (int i = 0; i < n && rc == 0; i++)
		rc = tablet_ref(t, &m[i], &out[i]);
	pthread_mutex_unlock(&t->tablets_mu);
	if (rc < 0 && ts__table_dropped(t)) /* its files went with the drop */
		return ts__fail(TS_ECLOSED, "table \"%s\" was dropped", t->name);
	/* As for a damaged block (ts__table_damaged): quarantine it now, not
	 * at the maintainer's next periodic pass. */
	if (rc == TS_ECORRUPT && !ts__db_readonly(t->db))
		ts__maint_wake(t->db);
	return rc;
}

int ts__table_tablet(struct ts_table *t, const ts__tablet_meta *m, ts__tablet **out)
{
	return ts__table_tablets(t, m, 1, out);
}

/* Take its blocks out of the block cache and close tab, a tablet reap
 * took out of the open ones: without tablets_mu, which readers building
 * the tablet set after a swap wait for -- forgetting the 1,600 blocks of
 * a merged tablet takes milliseconds. */
static void close_reaped(struct ts_table *t, ts__tablet *tab)
{
	ts__bcache_forget(&t->db->bcache, tab->serial, tab->nblocks);
	ts__tablet_close(tab);
}

/* Take entry i out of the open tablets if it is retired and unused, and
 * return its tablet for the caller to close_reaped once tablets_mu is
 * released (else NULL); tablets_mu is held. */
static ts__tablet *reap(struct ts_table *t, int i)
{
	TS_ASSERT_HELD(&t->tablets_mu);
	struct ts__open_tablet *o = &t->open_tablets[i];
	if (!o->retired || o->refs > 0)
		return NULL;
	ts__tablet *tab = o->tab;
	*o = t->open_tablets[--t->nopen];
	return tab;
}

void ts__table_tablets_put(struct ts_table *t, ts__tablet *const *tabs, int n)
{
	ts__tablet *one, **gone = n > 1 ? malloc((size_t)n * sizeof *gone) : &one;
	int ngone = 0;
	pthread_mutex_lock(&t->tablets_mu);
	for (int k = 0; k < n; k++)
		for (int i = 0; tabs[k] && i < t->nopen; i++)
			if (t->open_tablets[i].tab == tabs[k]) {
				t->open_tablets[i].refs--;
				ts__tablet *tab = reap(t, i);
				if (tab && gone)
					gone[ngone++] = tab;
				else if (tab) /* out of memory: closed here */
					close_reaped(t, tab);
				break;
			}
	pthread_mutex_unlock(&t->tablets_mu);
	for (int k = 0; k < ngone; k++)
		close_reaped(t, gone[k]);
	if (gone != &one)
		free(gone);
}

void ts__table_tablet_put(struct ts_table *t, ts__tablet *tab)
{
	if (tab)
		ts__table_tablets_put(t, &tab, 1);
}

/* Drop id's serial reservation, if any; tablets_mu is held. */
static void unreserve(struct ts_table *t, uint64_t id)
{
	TS_ASSERT_HELD(&t->tablets_mu);
	for (int i = 0; i < t->nwarm; i++)
		if (t->warm[i].id == id) {
			t->warm[i] = t->warm[--t->nwarm];
			break;
		}
}

void ts__table_tablet_unreserve(struct ts_table *t, uint64_t id)
{
	pthread_mutex_lock(&t->tablets_mu);
	unreserve(t, id);
	pthread_mutex_unlock(&t->tablets_mu);
}

void ts__table_tablet_retire(struct ts_table *t, uint64_t id)
{
	ts__tablet *tab = NULL;
	pthread_mutex_lock(&t->tablets_mu);
	unreserve(t, id); /* never opened */
	for (int i = 0; i < t->nopen; i++)
		if (t->open_tablets[i].id == id && !t->open_tablets[i].retired) {
			t->open_tablets[i].retired = 1;
			tab = reap(t, i);
			break;
		}
	pthread_mutex_unlock(&t->tablets_mu);
	if (tab)
		close_reaped(t, tab);
}

uint64_t ts__table_tablet_serial(struct ts_table *t, uint64_t id)
{
	uint64_t serial = 0;
	pthread_mutex_lock(&t->tablets_mu);
	if (t->nwarm == t->capwarm) {
		int cap = t->capwarm ? 2 * t->capwarm : 4;
		struct ts__warm_tablet *w = realloc(t->warm, (size_t)cap * sizeof *w);
		if (w) {
			t->warm = w;
			t->capwarm = cap;
		}
	}
	if (t->nwarm < t->capwarm) {
		serial = ts__bcache_serial();
		t->warm[t->nwarm++] = (struct ts__warm_tablet){id, serial};
	}
	pthread_mutex_unlock(&t->tablets_mu);
	return serial;
}

/* ---- tablet sets ---- */

/* The order latest visits tablets in (query.c): the greatest max_ts
 * first, and of equal ones the tablet of more rows, which more likely
 * holds a key's newest row -- a small tablet of corrections whose newest
 * row happens to tie the day's is then asked only whether it holds a
 * newer row than the one found, which its block index mostly answers. */
static int newer_tablet(const void *a, const void *b, void *arg)
{
	ts__tablet *const *tabs = arg;
	const ts__tablet *x = tabs[*(const int *)a], *y = tabs[*(const int *)b];
	if (x->max_ts != y->max_ts)
		return x->max_ts < y->max_ts ? 1 : -1;
	return (x->rows < y->rows) - (x->rows > y->rows);
}

static void set_free(struct ts_table *t, ts__tablet_set *set)
{
	ts__table_tablets_put(t, set->tablets, set->ntablets);
	ts__tomb_view_put(set->tview);
	ts__tombs_free(set->tombs, set->ntombs);
	ts__tombs_free(set->chrecs, set->nchrecs);
	free(set);
}

void ts__tablet_set_put(struct ts_table *t, ts__tablet_set *set)
{
	if (set && __atomic_sub_fetch(&set->refs, 1, __ATOMIC_ACQ_REL) == 0)
		set_free(t, set);
}

/* A set holding copies of d's tablets and schemas, its tablets not yet
 * opened (NULL).  One allocation; the caller holds schema_mu. */
static ts__tablet_set *set_new(const ts__descriptor *d)
{
	size_t n = (size_t)d->ntablets, nv = (size_t)d->nschemas;
	size_t metas = n * sizeof(ts__tablet_meta), tabs = n * sizeof(ts__tablet *),
	       newest = (n * sizeof(int) + 7) & ~(size_t)7;
	ts__tablet_set *set = calloc(1, sizeof *set + metas + tabs + newest + nv * sizeof(void *));
	if (!set)
		return NULL;
	unsigned char *p = (unsigned char *)(set + 1);
	set->metas = (ts__tablet_meta *)p;
	set->tablets = (ts__tablet **)(p + metas);
	set->newest = (int *)(p + metas + tabs);
	set->versions = (const ts__schema **)(p + metas + tabs + newest);
	set->ntablets = d->ntablets;
	if (n)
		memcpy(set->metas, d->tablets, metas);
	memcpy(set->versions, d->schemas, nv * sizeof(void *));
	set->nversions = d->nschemas;
	set->ttl = d->ttl;
	set->horizon = d->horizon;
	set->horizon_set = d->horizon_set;
	set->flushed_lsn = d->flushed_lsn;
	set->flags = d->flags;
	if (d->ntombs && !(set->tombs = calloc((size_t)d->ntombs, sizeof *set->tombs))) {
		free(set);
		return NULL;
	}
	for (int i = 0; i < d->ntombs; i++, set->ntombs++)
		if (ts__tomb_copy(&set->tombs[i], &d->tombs[i]) < 0) {
			ts__tombs_free(set->tombs, set->ntombs);
			free(set);
			return NULL;
		}
	set->ch_horizon = d->ch_horizon;
	set->ch_tmin = d->ch_tmin;
	set->ch_tmax = d->ch_tmax;
	if (d->nchrecs && !(set->chrecs = calloc((size_t)d->nchrecs, sizeof *set->chrecs))) {
		ts__tombs_free(set->tombs, set->ntombs);
		free(set);
		return NULL;
	}
	for (int i = 0; i < d->nchrecs; i++, set->nchrecs++)
		if (ts__tomb_copy(&set->chrecs[i], &d->chrecs[i]) < 0) {
			ts__tombs_free(set->chrecs, set->nchrecs);
			ts__tombs_free(set->tombs, set->ntombs);
			free(set);
			return NULL;
		}
	return set;
}

/*
 * The set is built outside schema_mu, since opening a tablet reads its
 * file: a descriptor swapped in meanwhile (desc_swaps moved) makes it
 * stale, and it then serves only the snapshot that built it.
 */
int ts__table_tablet_set(struct ts_table *t, ts__tablet_set **out)
{
	pthread_mutex_lock(&t->schema_mu);
	ts__tablet_set *set = t->tablet_set;
	uint64_t swaps = t->desc_swaps;
	int shared = set != NULL;
	if (shared)
		__atomic_add_fetch(&set->refs, 1, __ATOMIC_RELAXED);
	else
		set = set_new(t->desc);
	pthread_mutex_unlock(&t->schema_mu);
	*out = set;
	if (!set)
		return ts__fail(TS_ENOMEM, "out of memory");
	if (shared)
		return 0;
	int rc = ts__table_tablets(t, set->metas, set->ntablets, set->tablets);
	if (rc < 0) {
		set_free(t, set);
		*out = NULL;
		return rc;
	}
	for (int i = 0; i < set->ntablets; i++)
		set->newest[i] = i;
	qsort_r(set->newest, (size_t)set->ntablets, sizeof *set->newest, newer_tablet, set->tablets);
	__atomic_store_n(&set->refs, 1, __ATOMIC_RELAXED);
	pthread_mutex_lock(&t->schema_mu);
	if (!t->tablet_set && t->desc_swaps == swaps) {
		t->tablet_set = set;
		__atomic_add_fetch(&set->refs, 1, __ATOMIC_RELAXED);
	}
	pthread_mutex_unlock(&t->schema_mu);
	return 0;
}

ts__tablet_set *ts__table_tablet_set_detach(struct ts_table *t)
{
	ts__tablet_set *old = t->tablet_set;
	t->tablet_set = NULL;
	t->desc_swaps++;
	return old;
}

/* ---- damaged tablets ---- */

/* Count a report of damage and note the id once; tablets_mu is held. */
static void note_damage(struct ts_table *t, uint64_t id, int rc)
{
	TS_ASSERT_HELD(&t->tablets_mu);
	if (rc != TS_ECORRUPT)
		return;
	t->damage_reports++;
	for (int i = 0; i < t->ndamaged; i++)
		if (t->damaged[i] == id)
			return;
	if (t->ndamaged < TS_DAMAGED_MAX) {
		/* The caller's failure is this thread's last message: what the
		 * quarantine will log as the reason. */
		t->damaged_why[t->ndamaged] = strdup(ts_errmsg(NULL));
		t->damaged[t->ndamaged++] = id;
	}
}

int ts__table_damaged(struct ts_table *t, uint64_t id, int rc)
{
	if (rc != TS_ECORRUPT)
		return rc;
	pthread_mutex_lock(&t->tablets_mu);
	note_damage(t, id, rc);
	pthread_mutex_unlock(&t->tablets_mu);
	if (!ts__db_readonly(t->db))
		ts__maint_wake(t->db);
	return rc;
}
