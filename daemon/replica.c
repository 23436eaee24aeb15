/*
 * replica.c -- sync=replica on the primary (docs/standby.md section 4):
 * what the standbys acknowledged, and the inserts that wait for it.
 *
 * A standby told by the follow answer that this primary runs under
 * sync=replica ("acks":true) sends, on the follow connection, a line
 * {"ack":{"TABLE":LSN,...}} each time it has applied and synced (fsync)
 * log frames ending in a commit: LSN is the newest commit record it
 * holds of the table (a frame's id, docs/standby.md section 2), which
 * is the table's version as ts_insert_versioned reports it.  The event
 * loop hands those lines here (tsd_replica_line) instead of queueing
 * them as requests; an insert under sync=replica, once committed (and
 * synced: the library runs in TS_SYNC_COMMIT mode), answers only once
 * tsd_replica_acked says a standby holds its version, in steps of at
 * most TSD_REPLICA_WAIT on a worker (request.c), failing after
 * replica-timeout.
 *
 * State, under one mutex: per table the latest LSN acknowledged (the
 * latest, not the highest: a table dropped and made again starts its
 * log anew, and tsd_replica_forget, from drop, removes it at once), the
 * number of follow streams attached, and a condition variable broadcast
 * at each ack; and a count of the commits of waiting inserts, with a
 * condition variable a caught-up follow step waits on instead of
 * sleeping TSD_FOLLOW_POLL (tsd_replica_idle), so that a commit is
 * shipped at once rather than at the next poll (11.4 ms an insert
 * before, with one client).  One standby's ack is enough: with two, a lagging one's
 * lower ack only makes an insert wait for the other's next one.
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tsd.h"

struct acked {
	char name[TS_NAME_MAX + 1];
	uint64_t lsn;
};

static struct {
	pthread_mutex_t mu;
	pthread_cond_t cond;    /* CLOCK_MONOTONIC: tsd_replica_init */
	struct acked *tables;
	int n, cap;
	int streams;            /* follow streams attached */
	uint64_t commits;       /* inserts committed that wait for an ack */
	pthread_cond_t committed; /* CLOCK_MONOTONIC: broadcast at each */
} rep = {.mu = PTHREAD_MUTEX_INITIALIZER};
static pthread_once_t rep_once = PTHREAD_ONCE_INIT;

static void init_cond(void)
{
	pthread_condattr_t a;
	pthread_condattr_init(&a);
	pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
	pthread_cond_init(&rep.cond, &a);
	pthread_cond_init(&rep.committed, &a);
	pthread_condattr_destroy(&a);
}

static struct acked *find(const char *name)
{
	for (int i = 0; i < rep.n; i++)
		if (strcmp(rep.tables[i].name, name) == 0)
			return &rep.tables[i];
	return NULL;
}

/* Record table's ack; rep.mu held.  Out of memory: the ack is lost, and
 * the insert waiting for it waits for the next. */
static void record(const char *name, uint64_t lsn)
{
	struct acked *a = find(name);
	if (!a && rep.n == rep.cap) {
		int cap = rep.cap ? 2 * rep.cap : 16;
		struct acked *p = realloc(rep.tables, (size_t)cap * sizeof *p);
		if (!p)
			return;
		rep.tables = p;
		rep.cap = cap;
	}
	if (!a) {
		a = &rep.tables[rep.n++];
		snprintf(a->name, sizeof a->name, "%s", name);
	}
	a->lsn = lsn;
}

void tsd_replica_attach(int delta)
{
	pthread_once(&rep_once, init_cond);
	pthread_mutex_lock(&rep.mu);
	rep.streams += delta;
	pthread_mutex_unlock(&rep.mu);
}

int tsd_replica_line(const char *line, size_t len)
{
	json_error_t err;
	json_t *j = json_loadb(line, len, 0, &err), *acks = json_object_get(j, "ack"), *v;
	const char *name;
	int rc = json_is_object(acks) ? 0 : -1;
	pthread_once(&rep_once, init_cond);
	pthread_mutex_lock(&rep.mu);
	if (rc == 0)
		json_object_foreach(acks, name, v)
			if (json_is_integer(v) && json_integer_value(v) >= 0 && ts_name_valid(name))
				record(name, (uint64_t)json_integer_value(v));
	pthread_cond_broadcast(&rep.cond);
	pthread_mutex_unlock(&rep.mu);
	json_decref(j);
	return rc;
}

void tsd_replica_forget(const char *table)
{
	pthread_mutex_lock(&rep.mu);
	struct acked *a = find(table);
	if (a)
		*a = rep.tables[--rep.n];
	pthread_mutex_unlock(&rep.mu);
}

/* now + ns on the monotonic clock */
static struct timespec deadline(int64_t ns)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	t.tv_nsec += ns % 1000000000;
	t.tv_sec += ns / 1000000000 + t.tv_nsec / 1000000000;
	t.tv_nsec %= 1000000000;
	return t;
}

void tsd_replica_timed_out(char *buf, size_t size, int streams, const char *table, uint64_t lsn,
                           const char *what)
{
	snprintf(buf, size, "sync=replica: %s acknowledged commit %" PRIu64 " of table \"%s\" within "
	         "replica-timeout; %s committed here, but not known to be on a standby",
	         streams ? "no standby" : "no standby is following, so none", lsn, table, what);
}

void tsd_replica_committed(void)
{
	pthread_once(&rep_once, init_cond);
	pthread_mutex_lock(&rep.mu);
	rep.commits++;
	pthread_cond_broadcast(&rep.committed);
	pthread_mutex_unlock(&rep.mu);
}

uint64_t tsd_replica_commits(void)
{
	pthread_mutex_lock(&rep.mu);
	uint64_t n = rep.commits;
	pthread_mutex_unlock(&rep.mu);
	return n;
}

void tsd_replica_idle(uint64_t seen, int64_t ns)
{
	struct timespec until = deadline(ns);
	pthread_once(&rep_once, init_cond);
	pthread_mutex_lock(&rep.mu);
	if (rep.commits == seen)
		pthread_cond_timedwait(&rep.committed, &rep.mu, &until);
	pthread_mutex_unlock(&rep.mu);
}

int tsd_replica_acked(const char *table, uint64_t lsn, int64_t wait_ns, int *streams)
{
	struct timespec until = deadline(wait_ns);
	pthread_once(&rep_once, init_cond);
	pthread_mutex_lock(&rep.mu);
	const struct acked *a = find(table);
	int done = a && a->lsn >= lsn;
	if (!done && wait_ns > 0) {
		pthread_cond_timedwait(&rep.cond, &rep.mu, &until);
		a = find(table);
		done = a && a->lsn >= lsn;
	}
	*streams = rep.streams;
	pthread_mutex_unlock(&rep.mu);
	return done;
}
