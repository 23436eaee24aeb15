/*
 * follow.c -- the primary's side of the "follow" op (docs/standby.md
 * section 2, docs/protocol.md): a standby's request checked against this
 * database's lineage and epoch, one ship (ts_ship_open) per table, and
 * their frames written to the connection in the wire form
 * (ts_frame_header, then the payload).
 *
 * Once the op answered {"ok":true,"stream":"binary",...}, the request
 * never finishes: each step of it (request.c, on a worker) appends the
 * frames the ships have, up to TSD_CHUNK_BYTES, going round the tables
 * so that one busy table cannot starve the others; a table's frames are
 * followed by its heartbeat when it had none for
 * TSD_FOLLOW_BUSY_HEARTBEAT, so that under a steady stream the standby
 * still learns how far the log reaches (its lag).  When every ship is
 * caught up, a step sends one heartbeat per table if TSD_FOLLOW_HEARTBEAT
 * passed since the last output, else waits up to TSD_FOLLOW_POLL (less
 * when an insert under sync=replica commits meanwhile: tsd_replica_idle)
 * and returns
 * nothing -- the server then queues the next step (so a follower keeps
 * one worker busy polling, in slices of TSD_FOLLOW_POLL: see "Known
 * limits" in docs/standby.md).
 *
 * Tables created after the follow began are looked for every
 * TSD_FOLLOW_HEARTBEAT (ts_tables) and shipped from nothing, as is a
 * table dropped and created again under the same name.
 *
 * A standby at a newer epoch of this lineage is refused, and fences
 * this daemon (tsd_role_fence): a promoted standby's lineage went on
 * without this database, which takes no more writes (docs/standby.md
 * section 3).
 *
 * State: the ships, and the names of the tables the standby named that
 * this database does not have, each told TS_FRAME_END once.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tsd.h"

struct follow_table {
	char name[TS_NAME_MAX + 1];
	ts_table *t;            /* NULL: the standby's table is unknown here */
	ts_ship *ship;          /* NULL once its end was sent */
	int64_t last_beat;      /* monotonic ns of its last heartbeat */
};

struct tsd_follow {
	ts_db *db;
	struct follow_table *tables;
	int n, cap, next;       /* next: where the round starts */
	int64_t last_out;       /* monotonic ns of the last frame */
	int64_t last_scan;      /* monotonic ns tables were last listed */
};

void tsd_follow_free(struct tsd_follow *f)
{
	if (!f)
		return;
	for (int i = 0; i < f->n; i++) {
		ts_ship_close(f->tables[i].ship);
		ts_table_close(f->tables[i].t);
	}
	free(f->tables);
	free(f);
}

void tsd_lineage_hex(const ts_epoch *e, char out[2 * TS_LINEAGE_SIZE + 1])
{
	for (int i = 0; i < TS_LINEAGE_SIZE; i++)
		snprintf(out + 2 * i, 3, "%02x", e->lineage[i]);
}

/* The standby's lineage and epoch against ours. */
static int check_epoch(ts_db *db, const json_t *req, char *msg, size_t size)
{
	ts_epoch e;
	char ours[2 * TS_LINEAGE_SIZE + 1];
	const json_t *lineage = json_object_get(req, "lineage"), *epoch = json_object_get(req, "epoch");
	int rc = ts_epoch_get(db, &e);
	if (rc < 0) {
		snprintf(msg, size, "%s", ts_errmsg(NULL));
		return rc;
	}
	tsd_lineage_hex(&e, ours);
	if (lineage && (!json_is_string(lineage) || strcmp(json_string_value(lineage), ours) != 0)) {
		snprintf(msg, size, "field \"lineage\": the standby is of lineage %.64s, this "
		         "database of %s", json_is_string(lineage) ? json_string_value(lineage) : "?",
		         ours);
		return json_is_string(lineage) ? TS_EINVAL : TS_EPROTO;
	}
	if (epoch && (!json_is_integer(epoch) || json_integer_value(epoch) < 1)) {
		snprintf(msg, size, "field \"epoch\": want an integer of 1 or more");
		return TS_EPROTO;
	}
	if (epoch && (uint64_t)json_integer_value(epoch) > e.epoch) {
		/* a newer primary exists: fenced, no more writes (access.c),
		 * and EPOCH says so from now on, across restarts -- recorded
		 * before the log line and the answer say so */
		uint64_t newer = (uint64_t)json_integer_value(epoch);
		int first = tsd_role_fence(newer, e.epoch);
		if ((rc = ts_epoch_fence(db, newer)) < 0 && rc != TS_EREADONLY)
			tsd_log("record the fence in EPOCH (a restart would take writes again): %s",
			        ts_errmsg(NULL));
		if (first)
			tsd_log("a follower at epoch %" PRIu64 " of this lineage asked to follow: this "
			        "database (epoch %" PRIu64 ") is a stale primary and takes no more "
			        "writes", newer, e.epoch);
		snprintf(msg, size, "the standby is at epoch %" PRId64 ", newer than this database's "
		         "%" PRIu64 ": this database is a stale member of its lineage and takes no "
		         "more writes", (int64_t)json_integer_value(epoch), e.epoch);
		return TS_EINVAL;
	}
	return 0;
}

/* What the standby has of table name: "lsn" and "tablets" of its entry
 * in "tables" (none: nothing). */
static int standby_has(const json_t *tables, const char *name, uint64_t *lsn, uint64_t **ids,
                       int *n, char *msg, size_t size)
{
	const json_t *entry = tables ? json_object_get(tables, name) : NULL, *v;
	size_t i;
	*lsn = 0;
	*ids = NULL;
	*n = 0;
	if (!entry)
		return 0;
	const json_t *l = json_object_get(entry, "lsn"), *t = json_object_get(entry, "tablets");
	if (!json_is_object(entry) || (l && (!json_is_integer(l) || json_integer_value(l) < 0)) ||
	    (t && !json_is_array(t))) {
		snprintf(msg, size, "field \"tables\": \"%s\": want {\"lsn\":N,\"tablets\":[ID,...]}",
		         name);
		return TS_EPROTO;
	}
	*lsn = l ? (uint64_t)json_integer_value(l) : 0;
	if (!t || !json_array_size(t))
		return 0;
	if (!(*ids = malloc(json_array_size(t) * sizeof **ids)))
		return TS_ENOMEM;
	json_array_foreach(t, i, v) {
		if (!json_is_integer(v) || json_integer_value(v) < 0) {
			snprintf(msg, size, "field \"tables\": \"%s\": tablets[%zu] is no id", name, i);
			free(*ids);
			*ids = NULL;
			return TS_EPROTO;
		}
		(*ids)[(*n)++] = (uint64_t)json_integer_value(v);
	}
	return 0;
}

/* Add table name: a ship from what the standby has, or (absent here)
 * an end to send. */
static int add_table(struct tsd_follow *f, ts_db *db, const json_t *tables, const char *name,
                     int here, char *msg, size_t size)
{
	struct follow_table *ft = &f->tables[f->n];
	uint64_t lsn, *ids = NULL;
	int n, rc = standby_has(tables, name, &lsn, &ids, &n, msg, size);
	memset(ft, 0, sizeof *ft);
	snprintf(ft->name, sizeof ft->name, "%s", name);
	if (rc == 0 && here && (rc = ts_table_open(db, name, &ft->t)) == 0)
		rc = ts_ship_open(ft->t, lsn, ids, n, &ft->ship);
	if (rc < 0 && !*msg)
		snprintf(msg, size, "table \"%s\": %s", name, ts_errmsg(NULL));
	free(ids);
	f->n++;
	return rc;
}

int tsd_follow_open(ts_db *db, const json_t *req, struct tsd_follow **out, char *msg,
                    size_t size)
{
	const json_t *tables = json_object_get(req, "tables");
	struct tsd_follow *f = NULL;
	char **names = NULL;
	const char *key;
	const json_t *v;
	int n = 0, rc;
	*out = NULL;
	*msg = '\0';
	if (tables && !json_is_object(tables)) {
		snprintf(msg, size, "field \"tables\": want an object");
		return TS_EPROTO;
	}
	if ((rc = check_epoch(db, req, msg, size)) < 0)
		return rc;
	if ((rc = ts_tables(db, &names, &n)) < 0) {
		snprintf(msg, size, "%s", ts_errmsg(NULL));
		return rc;
	}
	size_t cap = (size_t)n + (tables ? json_object_size(tables) : 0) + 1;
	if (!(f = calloc(1, sizeof *f)) || !(f->tables = calloc(cap, sizeof *f->tables)))
		rc = TS_ENOMEM;
	else
		f->cap = (int)cap, f->db = db;
	for (int i = 0; rc == 0 && i < n; i++)
		rc = add_table(f, db, tables, names[i], 1, msg, size);
	if (rc == 0 && tables)
		json_object_foreach((json_t *)tables, key, v) {
			int known = 0;
			for (int i = 0; i < n && !known; i++)
				known = strcmp(names[i], key) == 0;
			if (!known && rc == 0)
				rc = ts_name_valid(key) ? add_table(f, db, NULL, key, 0, msg, size)
				                        : (snprintf(msg, size, "field \"tables\": \"%.64s\" is "
				                                    "no table name", key), TS_EPROTO);
		}
	ts_free_names(names);
	if (rc < 0) {
		if (!*msg)
			snprintf(msg, size, "%s", ts_strerror(rc));
		tsd_follow_free(f);
		return rc;
	}
	f->last_out = f->last_scan = tsd_mono_ns();
	*out = f;
	return 0;
}

/* Append frame fr of table name to out. */
static void put_frame(struct jbuf *out, const char *name, const ts_frame *fr)
{
	unsigned char h[TS_FRAME_HEADER_MAX];
	size_t n = 0;
	if (ts_frame_header(name, fr, h, sizeof h, &n) < 0) { /* cannot happen: a ship's frame */
		jbuf_fail(out);
		return;
	}
	jbuf_put(out, h, n);
	jbuf_put(out, fr->payload, fr->length);
}

/* One frame of table i, or 0 when it has none now; and after a frame,
 * the table's heartbeat when it had none for TSD_FOLLOW_BUSY_HEARTBEAT:
 * under a steady stream the standby then still learns, every so often,
 * how far the primary's log reaches, and its lag is measured against
 * that rather than against the last quiet moment. */
static int next_of(struct follow_table *ft, struct jbuf *out)
{
	ts_frame fr;
	int rc;
	if (!ft->ship && !ft->t && ft->name[0]) { /* unknown here: an end */
		memset(&fr, 0, sizeof fr);
		fr.type = TS_FRAME_END;
		put_frame(out, ft->name, &fr);
		ft->name[0] = '\0';
		return 1;
	}
	if (!ft->ship || (rc = ts_ship_next(ft->ship, &fr)) == 0)
		return 0;
	if (rc < 0)
		return rc;
	put_frame(out, ft->name, &fr);
	int64_t now = tsd_mono_ns();
	if (fr.type == TS_FRAME_END) {
		ts_ship_close(ft->ship);
		ft->ship = NULL;
	} else if (fr.type == TS_FRAME_HEARTBEAT) {
		ft->last_beat = now;
	} else if (now - ft->last_beat >= TSD_FOLLOW_BUSY_HEARTBEAT) {
		if ((rc = ts_ship_heartbeat(ft->ship, &fr)) < 0)
			return rc;
		put_frame(out, ft->name, &fr);
		ft->last_beat = now;
	}
	return 1;
}

/* A heartbeat of every table still shipped. */
static int heartbeats(struct tsd_follow *f, struct jbuf *out)
{
	for (int i = 0; i < f->n; i++) {
		ts_frame fr;
		int rc;
		if (!f->tables[i].ship)
			continue;
		if ((rc = ts_ship_heartbeat(f->tables[i].ship, &fr)) < 0)
			return rc;
		put_frame(out, f->tables[i].name, &fr);
		f->tables[i].last_beat = tsd_mono_ns();
	}
	return 0;
}

/* The tables of the database the stream does not ship (created since
 * it began, or dropped and created again), shipped from nothing. */
static int new_tables(struct tsd_follow *f, char *msg, size_t size)
{
	char **names = NULL;
	int n = 0, rc = ts_tables(f->db, &names, &n);
	if (rc < 0) {
		snprintf(msg, size, "follow: %s", ts_errmsg(NULL));
		return rc;
	}
	for (int i = 0; rc == 0 && i < n; i++) {
		int k = 0;
		while (k < f->n && strcmp(f->tables[k].name, names[i]) != 0)
			k++;
		if (k < f->n && f->tables[k].ship)
			continue; /* shipped */
		if (k < f->n) { /* its end was sent: a table of that name again */
			ts_table_close(f->tables[k].t);
			f->tables[k] = f->tables[--f->n];
		}
		if (f->n == f->cap) {
			struct follow_table *p = realloc(f->tables, 2 * (size_t)f->cap * sizeof *p);
			if (!p) {
				rc = TS_ENOMEM;
				snprintf(msg, size, "follow: out of memory");
				break;
			}
			f->tables = p;
			f->cap *= 2;
		}
		*msg = '\0';
		rc = add_table(f, f->db, NULL, names[i], 1, msg, size);
	}
	ts_free_names(names);
	return rc;
}

int tsd_follow_step(struct tsd_follow *f, struct jbuf *out, char *msg, size_t size)
{
	size_t start = out->len;
	uint64_t commits = tsd_replica_commits(); /* before looking: none missed */
	int idle = 0;
	if (tsd_mono_ns() - f->last_scan >= TSD_FOLLOW_HEARTBEAT) {
		int rc = new_tables(f, msg, size);
		f->last_scan = tsd_mono_ns();
		if (rc < 0)
			return rc;
		if (f->next >= f->n)
			f->next = 0;
	}
	/* round the tables, a frame each, until the chunk is full or a whole
	 * round found nothing */
	while (out->len - start < TSD_CHUNK_BYTES && idle < f->n) {
		struct follow_table *ft = &f->tables[f->next];
		int rc = next_of(ft, out);
		if (rc < 0) {
			snprintf(msg, size, "follow: table \"%s\": %s", ft->name, ts_errmsg(NULL));
			return rc;
		}
		idle = rc ? 0 : idle + 1;
		f->next = (f->next + 1) % f->n;
	}
	int64_t now = tsd_mono_ns();
	if (out->len > start) {
		f->last_out = now;
		return 0;
	}
	if (now - f->last_out >= TSD_FOLLOW_HEARTBEAT) {
		int rc = heartbeats(f, out);
		if (rc < 0) {
			snprintf(msg, size, "follow: heartbeat: %s", ts_errmsg(NULL));
			return rc;
		}
		f->last_out = now;
		return 0;
	}
	tsd_replica_idle(commits, TSD_FOLLOW_POLL); /* an insert under sync=replica wakes it */
	return 0;
}
