/*
 * table.c -- creating, opening, altering and dropping tables: the table
 * handle from its directory's birth to its removal.
 *
 * Every change to a table is a new DESCRIPTOR written atomically
 * (tabledesc.c); the in-memory descriptor is swapped only after the file
 * is durable, so a failed write leaves the handle unchanged (if only the
 * final sync of the directory failed, the new file is already in place:
 * TS_EIO says so).  A table is created in a hidden ".tmp-NAME-PID"
 * directory and renamed into place, and dropped by renaming it to
 * ".dropped-NAME-PID-N" (N counts the drops of this process, from 1)
 * before removing it, so a crash at any point leaves either the whole
 * table or none (ts_open clears leftovers; docs/layout.md sections 4 to
 * 6).
 *
 * A table's duplicate policy (ts_on_duplicate) lives in its descriptor
 * like its TTL: set at creation, changed by ts__alter_on_duplicate, read
 * by insert.c under the table's mutex, so a batch sees one policy.  The
 * policy replace also sets the descriptor's flag TS_DESC_REPLACED, which
 * no alter clears: rows it replaced stay shadowed under any later policy.
 *
 * Opening a table loads its descriptor and recovers its log; the handle
 * then lives as lifetime.c says (calls, holds, release).  Read-only
 * handles (another process may be writing) reload the descriptor when
 * the writer replaced it (ts__table_lock, tabledesc.c).
 */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "api.h"
#include "avl.h"
#include "backoff.h"
#include "descriptor_format.h"
#include "error.h"
#include "fsutil.h"
#include "handle.h"
#include "held.h"
#include "lifetime.h"
#include "tslimits.h"
#include "names.h"
#include "quarantine.h"
#include "tabledesc.h"
#include "tablet.h"
#include "tablet_format.h"

static int check_table_name(const char *name)
{
	if (!ts_name_valid(name))
		return ts__fail(TS_EINVAL, "invalid table name \"%.80s\" (want [A-Za-z_][A-Za-z0-9_]{0,63})",
		                name ? name : "(null)");
	return 0;
}

/* A table may not take the name of a file the database keeps beside its
 * tables: "create LOCK" found LOCK and said "already exists". */
static int check_not_reserved(const char *name)
{
	const char *kind;
	if (ts__name_reserved(name, &kind))
		return ts__fail(TS_EINVAL, "%s is reserved: the database keeps %s of that name", name,
		                kind);
	return 0;
}

/* A table whose log could not take its first segment is not created:
 * every insert would fail (issue 24: each row said ENOSPC). */
static int check_room(const ts_db *db, const char *name)
{
	char what[TS_NAME_MAX + 32], msg[512];
	snprintf(what, sizeof what, "table \"%s\": its log", name);
	if (ts__log_room(db->path, (uint64_t)db->opts.log_segment_size, what, msg, sizeof msg))
		return ts__fail(TS_ENOSPC, "%s; the table was not created", msg);
	return 0;
}

static int check_writable(const ts_db *db)
{
	if (ts__db_readonly(db))
		return ts__fail(TS_EREADONLY, "database %s is open read-only", db->path);
	return 0;
}

static int is_table_dir(ts_db *db, const char *name);

static int make_table_dir(const char *dir, const ts__descriptor *d)
{
	char sub[TS_PATH_MAX];
	int rc = ts__mkdirs(dir, 0755);
	if (rc == 0 && (rc = ts__path(sub, "%s/log", dir)) == 0)
		rc = ts__mkdirs(sub, 0755);
	if (rc == 0 && (rc = ts__path(sub, "%s/tablets", dir)) == 0)
		rc = ts__mkdirs(sub, 0755);
	if (rc == 0)
		rc = ts__descriptor_write(dir, d);
	return rc;
}

/* What a derived table (a rollup) adds to a create: a file written in
 * the table's directory before it is renamed into place, and a table
 * that must exist meanwhile (its source), checked under db->mu. */
struct create_extra {
	const char *file;
	const void *bytes;
	size_t n;
	const char *source;
};

static int create_locked(ts_db *db, const char *name, ts__schema *schema, int64_t ttl,
                         ts_on_duplicate on_duplicate, const struct create_extra *x)
{
	TS_ASSERT_HELD(&db->mu);
	char tmp[TS_PATH_MAX], dst[TS_PATH_MAX];
	ts__descriptor d = {.generation = 1, .ttl = ttl, .next_tablet_id = 1,
	                    .nschemas = 1, .schemas = &schema, .on_duplicate = on_duplicate,
	                    .flags = on_duplicate == TS_ON_DUPLICATE_REPLACE ? TS_DESC_REPLACED : 0};
	struct stat st;
	int rc;
	if ((rc = ts__path(dst, "%s/%s", db->path, name)) < 0 ||
	    (rc = ts__path(tmp, "%s/.tmp-%s-%ld", db->path, name, (long)getpid())) < 0)
		return rc;
	if (lstat(dst, &st) == 0)
		return ts__fail(TS_EEXIST, "table \"%s\" already exists", name);
	if (x && x->source && (rc = is_table_dir(db, x->source)) <= 0)
		return rc < 0 ? rc : ts__fail(TS_ENOENT, "no such table \"%s\"", x->source);
	ts__rmtree(tmp);
	if ((rc = make_table_dir(tmp, &d)) < 0 ||
	    (x && (rc = ts__file_write_atomic(tmp, x->file, x->bytes, x->n)) < 0))
		goto fail;
	if (rename(tmp, dst) < 0) {
		rc = ts__fail_errno(errno, "rename %s to %s", tmp, dst);
		goto fail;
	}
	/* The table is in place whatever happens now. */
	rc = ts__fsync_dir(db->path);
	return rc < 0 ? ts__context(rc, "table \"%s\"", name) : 0;
fail:
	ts__rmtree(tmp);
	return ts__context(rc, "table \"%s\"", name);
}

/* A policy is one of the ts_on_duplicate values (callers pass ints). */
static int check_policy(const char *name, ts_on_duplicate policy)
{
	if ((int)policy < TS_ON_DUPLICATE_REJECT || (int)policy > TS_ON_DUPLICATE_REPLACE)
		return ts__fail(TS_EINVAL, "table \"%.80s\": unknown duplicate policy %d (want "
		                "TS_ON_DUPLICATE_REJECT, TS_ON_DUPLICATE_IGNORE or "
		                "TS_ON_DUPLICATE_REPLACE)",
		                name ? name : "", (int)policy);
	return 0;
}

static int create_keyed(ts_db *db, const char *name, const ts_column *columns,
                        int ncolumns, const char *const *key_names, int nkey,
                        int64_t ttl, ts_on_duplicate on_duplicate,
                        const struct create_extra *x)
{
	ts__schema *schema = NULL;
	int rc;
	if ((rc = check_writable(db)) < 0 || (rc = check_table_name(name)) < 0 ||
	    (rc = check_not_reserved(name)) < 0 || (rc = check_policy(name, on_duplicate)) < 0 ||
	    (rc = check_room(db, name)) < 0)
		return rc;
	if (ttl < 0)
		return ts__fail(TS_ERANGE, "table \"%s\": ttl %lld must not be negative",
		                name, (long long)ttl);
	if ((rc = ts__schema_build(columns, ncolumns, key_names, nkey, &schema)) < 0 ||
	    (rc = ts__schema_check_row_max(schema, ts__row_max((uint64_t)db->opts.log_segment_size))) < 0) {
		ts__schema_free(schema);
		return ts__context(rc, "table \"%s\"", name);
	}
	pthread_mutex_lock(&db->mu);
	rc = create_locked(db, name, schema, ttl, on_duplicate, x);
	pthread_mutex_unlock(&db->mu);
	ts__schema_free(schema);
	return rc;
}

int ts__create_keyed(ts_db *db, const char *name, const ts_column *columns,
                    int ncolumns, const char *const *key_names, int nkey,
                    int64_t ttl, ts_on_duplicate on_duplicate)
{
	return create_keyed(db, name, columns, ncolumns, key_names, nkey, ttl, on_duplicate, NULL);
}

int ts__create_derived(ts_db *db, const char *name, const ts_column *columns, int ncolumns,
                       const char *const *key_names, int nkey, int64_t ttl,
                       ts_on_duplicate on_duplicate, const char *file, const void *bytes,
                       size_t n, const char *source)
{
	struct create_extra x = {file, bytes, n, source};
	return create_keyed(db, name, columns, ncolumns, key_names, nkey, ttl, on_duplicate, &x);
}

int ts__create(ts_db *db, const char *name, const ts_schema *schema)
{
	const char *key[TS_KEY_COLUMNS_MAX];
	if (!schema || schema->nkey < 1 || schema->nkey > TS_KEY_COLUMNS_MAX)
		return ts__fail(TS_ESCHEMA, "table \"%.80s\": key: want 1 to %d columns, ending with ts",
		                name ? name : "", TS_KEY_COLUMNS_MAX);
	for (int k = 0; k < schema->nkey; k++) {
		int i = schema->key[k];
		if (i < 0 || i >= schema->ncolumns)
			return ts__fail(TS_ESCHEMA, "table \"%.80s\": key column %d: index %d out of range",
			                name ? name : "", k, i);
		key[k] = schema->columns[i].name;
	}
	return ts__create_keyed(db, name, schema->columns, schema->ncolumns, key,
	                       schema->nkey, schema->ttl, schema->on_duplicate);
}

/* Remove what a crash may leave in <table>/tablets: temporary files of
 * unfinished tablets, tablets written but never named in the descriptor,
 * and tablets a merge, expiry or quarantine replaced but had not yet
 * deleted.  Writers only, before any flush or merge of this process. */
static int clean_tablets(struct ts_table *t)
{
	char dir[TS_PATH_MAX], path[TS_PATH_MAX];
	int rc = ts__path(dir, "%s/tablets", t->dir);
	DIR *d = rc == 0 ? opendir(dir) : NULL;
	struct dirent *e;
	if (!d)
		return rc < 0 ? rc : errno == ENOENT ? 0 : ts__fail_errno(errno, "open %s", dir);
	while (rc == 0 && (e = readdir(d))) {
		uint64_t id;
		char rest[8];
		int orphan = strncmp(e->d_name, ".tmp-", 5) == 0;
		if (sscanf(e->d_name, "%16" SCNx64 "%7s", &id, rest) == 2 &&
		    strcmp(rest, TS_TABLET_SUFFIX) == 0 && !ts__desc_names(t->desc, id))
			orphan = 1;
		if (orphan && (rc = ts__path(path, "%s/%s", dir, e->d_name)) == 0 &&
		    unlink(path) < 0 && errno != ENOENT)
			rc = ts__fail_errno(errno, "remove %s", path);
	}
	closedir(d);
	return rc;
}

/*
 * Verify the trees the newest commit names (but those already on disk)
 * before anything walks them: each begun by a valid batch between the
 * flushed position and the commit, and every node and row record within
 * the log from that batch to the commit, keys in order, AVL balanced
 * (ts__avl_verify).  The commit's CRC only says its bytes are those
 * written; a tree pointing outside the log or into itself -- a writer's
 * bug, or a file made by hand -- would otherwise crash or hang every
 * reader, the writer's recovery first, and a since inside a batch would
 * become, at the next flush, a flushed position no recovery can start
 * from (losing every later commit).  Read-only handles check the head
 * they start from; the writer's later commits are its own trees.
 * Returns 0 or TS_ECORRUPT (ts_check names the same problem).
 */
static int verify_trees(struct ts_table *t)
{
	ts__commit c;
	uint64_t head = ts__log_head(t->log);
	int rc = head ? ts__log_read_commit(t->log, head, &c) : 0;
	for (uint32_t i = 0; head && rc == 0 && i < c.nroots; i++) {
		ts__root r;
		ts__commit_root(&c, i, &r);
		if (ts__tablets_hold_tree(t->desc->tablets, t->desc->ntablets, r.born))
			continue;
		if (ts__avl_verify_root(t->log, &r, t->desc->flushed_lsn, c.lsn) < 0)
			rc = ts__context(TS_ECORRUPT, "log commit at %" PRIu64, c.lsn);
	}
	return rc;
}

/* A writer whose next inserts need a new log segment on a file system
 * without room for one: said once, here, rather than only by every insert
 * failing; the table opens, and reads go on. */
static void note_room(struct ts_table *t)
{
	char what[TS_NAME_MAX + 32], msg[512], line[640];
	snprintf(what, sizeof what, "table \"%s\": its log", t->name);
	if (ts__log_needs_segment(t->log) &&
	    ts__log_room(t->dir, ts__log_seg_size(t->log), what, msg, sizeof msg)) {
		snprintf(line, sizeof line, "%s; inserts will fail until there is room (reads go on)",
		         msg);
		ts__db_log(t->db, line);
	}
}

/* Open the log (recovering it in writable databases) and, for writers,
 * the filling tablets of its newest commit. */
static int open_log(struct ts_table *t)
{
	char dir[TS_PATH_MAX];
	int ro = ts__db_readonly(t->db);
	int rc = ts__path(dir, "%s/log", t->dir);
	if (rc == 0)
		rc = ts__log_open(dir, ro, t->desc->flushed_lsn, (uint64_t)t->db->opts.log_segment_size,
		                  &t->log);
	if (rc == 0) {
		ts__log_set_writer_lock(t->log, &t->mu); /* its callers' lock, asserted */
		rc = verify_trees(t);
	}
	if (rc == 0 && !ro)
		rc = ts__filling_init(&t->fill, t->log, t->desc->flushed_lsn, ts_now(t->db));
	if (rc == 0 && !ro)
		rc = clean_tablets(t);
	if (rc == 0 && !ro)
		note_room(t);
	/* A tree already on disk (a crash came between the descriptor naming
	 * its tablet and the commit dropping it) is forgotten. */
	for (int i = 0; rc == 0 && !ro && i < t->desc->ntablets; i++)
		if (t->desc->tablets[i].source)
			ts__filling_drop(&t->fill, t->desc->tablets[i].source);
	return rc;
}

static int load_table(ts_db *db, const char *name, struct ts_table **out)
{
	struct ts_table *t = calloc(1, sizeof *t);
	char dir[TS_PATH_MAX];
	int rc;
	*out = NULL;
	if (!t)
		return ts__fail(TS_ENOMEM, "out of memory");
	pthread_mutex_init(&t->mu, NULL);
	pthread_mutex_init(&t->schema_mu, NULL);
	pthread_mutex_init(&t->tablets_mu, NULL);
	pthread_mutex_init(&t->flush_mu, NULL);
	pthread_mutex_init(&t->merge_mu, NULL);
	pthread_mutex_init(&t->desc_mu, NULL);
	t->db = db;
	strcpy(t->name, name);
	if ((rc = ts__path(dir, "%s/%s", db->path, name)) < 0 || !(t->dir = strdup(dir))) {
		ts__table_free(t);
		return rc < 0 ? rc : ts__fail(TS_ENOMEM, "out of memory");
	}
	t->desc_ino = ts__desc_inode(dir);
	if ((rc = ts__table_incarnation(dir, &t->incarnation)) < 0 && rc != -ENOENT) {
		ts__table_free(t);
		return ts__fail_errno(-rc, "table \"%s\": stat %s", name, dir);
	}
	t->quarantined = ts__quarantine_count(dir); /* "so far" survives a restart */
	if ((rc = ts__descriptor_read(dir, &t->desc)) < 0) {
		ts__table_free(t);
		return rc == TS_ENOENT ? ts__fail(TS_ENOENT, "no such table \"%s\"", name) : rc;
	}
	if ((rc = ts__rollup_load(dir, &t->rollup)) < 0) {
		ts__table_free(t);
		return ts__context(rc, "table \"%s\"", name);
	}
	if ((rc = open_log(t)) < 0) {
		ts__table_free(t);
		return ts__context(rc, "table \"%s\"", name);
	}
	*out = t;
	return 0;
}

int ts_table_open(ts_db *db, const char *name, ts_table **out)
{
	struct ts_table *t;
	int rc = 0;
	if (!out)
		return ts__fail(TS_EINVAL, "ts_table_open: out is NULL");
	*out = NULL;
	if ((rc = check_table_name(name)) < 0 || (rc = ts__db_enter(db, "ts_table_open")) < 0)
		return rc;
	pthread_mutex_lock(&db->mu);
	for (t = db->tables; t && (strcmp(t->name, name) != 0 || ts__table_dropped(t)); t = t->next)
		;
	/* read-only: a handle of a table since dropped and created again by
	 * the writer is left to its holders, and the new table opened */
	uint64_t now;
	if (t && ts__db_readonly(db) && ts__table_incarnation(t->dir, &now) == 0 &&
	    now != t->incarnation) {
		__atomic_store_n(&t->dropped, 1, __ATOMIC_SEQ_CST);
		t = NULL;
	}
	if (!t && (rc = load_table(db, name, &t)) == 0) {
		t->next = db->tables;
		db->tables = t;
	}
	if (t) {
		pthread_mutex_lock(&db->life_mu);
		t->refs++;
		pthread_mutex_unlock(&db->life_mu);
	}
	pthread_mutex_unlock(&db->mu);
	ts__db_leave(db);
	*out = t;
	return rc;
}

/* Take t off db->tables (if listed) and put it on db->dead; db->mu and
 * life_mu are held. */
static void bury(ts_db *db, struct ts_table *t)
{
	TS_ASSERT_HELD(&db->mu);
	TS_ASSERT_HELD(&db->life_mu);
	struct ts_table **pp = &db->tables;
	while (*pp && *pp != t)
		pp = &(*pp)->next;
	if (!*pp)
		return; /* buried already */
	*pp = t->next;
	t->next = db->dead;
	db->dead = t;
}

/*
 * The last close of a handle waits for the calls still inside the table
 * (another thread's insert or query_open): once it returns, nothing runs
 * on the table but cursors and the library's own threads, which hold it.
 * Closing more often than opening is detected while the object lives,
 * which is until ts_close (dropped tables' objects too, on db->dead).
 */
void ts_table_close(ts_table *t)
{
	if (!t)
		return;
	ts_db *db = t->db;
	pthread_mutex_lock(&db->life_mu);
	int gone = db->closing == 2; /* ts_close is freeing it */
	if (!gone)
		db->calls++; /* counted even while ts_close waits: it may not close */
	pthread_mutex_unlock(&db->life_mu);
	if (gone)
		return;
	pthread_mutex_lock(&db->mu);
	pthread_mutex_lock(&db->life_mu);
	int last = 0, release = 0;
	if (t->refs <= 0) {
		ts__fail(TS_EINVAL, "ts_table_close: table \"%s\" is not open (closed twice?)", t->name);
		pthread_mutex_unlock(&db->mu);
	} else {
		last = --t->refs == 0;
		if (last && ts__table_dropped(t)) /* a read-only db's table that saw its drop */
			bury(db, t);
		pthread_mutex_unlock(&db->mu);
		while (last && t->calls > 0)
			pthread_cond_wait(&db->life_cv, &db->life_mu);
		release = ts__table_take_release(t);
	}
	pthread_mutex_unlock(&db->life_mu);
	if (release)
		ts__table_release(t);
	ts__db_leave(db);
}

const char *ts_table_name(const ts_table *t)
{
	if (!t) {
		ts__fail(TS_EINVAL, "ts_table_name: table is NULL");
		return NULL;
	}
	return t->name;
}

int ts__table_schema(ts_table *t, ts_schema **out)
{
	int rc = ts__table_lock(t);
	*out = NULL;
	if (rc < 0)
		return rc;
	rc = ts__schema_export(ts__desc_schema(t->desc), t->desc->ttl, out);
	if (rc == 0)
		(*out)->on_duplicate = t->desc->on_duplicate;
	ts__table_unlock(t);
	return rc;
}

/* A rollup's schema and policy are its maintenance's (docs/rollups.md):
 * only its TTL may change. */
static int check_not_rollup(struct ts_table *t, const char *what)
{
	if (t->rollup)
		return ts__fail(TS_EREADONLY, "table \"%s\" is a rollup of \"%s\": its %s is "
		                "fixed by its definition (drop it and create it again)",
		                t->name, t->rollup->def.source, what);
	return 0;
}

/* Alters hold desc_mu throughout: the clone they change stays current. */
static int begin_alter(struct ts_table *t, ts__descriptor **d)
{
	int rc = check_writable(t->db);
	if (rc < 0 || (rc = ts__table_desc_begin(t)) < 0)
		return rc;
	if ((rc = ts__descriptor_clone(t->desc, d)) < 0)
		ts__table_desc_end(t);
	return rc;
}

/* Add schema s as the newest version of d and install it. */
static int install_schema(struct ts_table *t, ts__descriptor *d, ts__schema *s)
{
	d->schemas[d->nschemas++] = s;
	return ts__table_install_descriptor(t, d);
}

int ts__alter_add(ts_table *t, const ts_column *column)
{
	ts__descriptor *d;
	ts__schema *s;
	int rc = check_not_rollup(t, "schema");
	if (rc < 0 || (rc = begin_alter(t, &d)) < 0)
		return rc;
	if ((rc = ts__schema_add(ts__desc_schema(d), column, &s)) == 0 &&
	    (rc = ts__schema_check_row_max(s, ts__row_max(ts__log_seg_size(t->log)))) < 0)
		ts__schema_free(s);
	if (rc < 0)
		ts__descriptor_free(d, 0);
	else
		rc = install_schema(t, d, s);
	ts__table_desc_end(t);
	return rc < 0 ? ts__context(rc, "table \"%s\"", t->name) : 0;
}

int ts__alter_widen(ts_table *t, const char *column)
{
	ts__descriptor *d;
	ts__schema *s;
	int rc = check_not_rollup(t, "schema");
	if (rc < 0 || (rc = begin_alter(t, &d)) < 0)
		return rc;
	if ((rc = ts__schema_widen(ts__desc_schema(d), column, &s)) < 0)
		ts__descriptor_free(d, 0);
	else
		rc = install_schema(t, d, s);
	ts__table_desc_end(t);
	return rc < 0 ? ts__context(rc, "table \"%s\"", t->name) : 0;
}

int ts__alter_ttl(ts_table *t, int64_t ttl)
{
	ts__descriptor *d;
	if (ttl < 0)
		return ts__fail(TS_ERANGE, "table \"%s\": ttl must not be negative", t->name);
	int rc = begin_alter(t, &d);
	if (rc < 0)
		return rc;
	/* What readers hide now stays hidden, whatever the TTL becomes.
	 * Under one TTL the expiry (now - TTL) only rises, so its highest
	 * value so far is the one in force when the TTL changes: kept as the
	 * horizon when the TTL grows or ends.  Nothing else writes it, so a
	 * clock that jumps ahead for a while leaves no trace in the file
	 * unless the TTL is lengthened during the jump. */
	if (ttl == 0 || (d->ttl > 0 && ttl > d->ttl))
		ts__descriptor_raise_horizon(d, ts__table_expiry(t, ts_now(t->db)));
	d->ttl = ttl;
	rc = ts__table_install_descriptor(t, d);
	ts__table_desc_end(t);
	return rc < 0 ? ts__context(rc, "table \"%s\"", t->name) : 0;
}

int ts__alter_on_duplicate(ts_table *t, ts_on_duplicate policy)
{
	ts__descriptor *d;
	int rc = check_policy(t->name, policy);
	if (rc < 0 || (rc = check_not_rollup(t, "duplicate policy")) < 0 ||
	    (rc = begin_alter(t, &d)) < 0)
		return rc;
	if (d->on_duplicate == policy) { /* nothing to write */
		ts__descriptor_free(d, 0);
	} else {
		d->on_duplicate = policy;
		if (policy == TS_ON_DUPLICATE_REPLACE) /* for good: its rows stay shadowing */
			d->flags |= TS_DESC_REPLACED;
		rc = ts__table_install_descriptor(t, d);
	}
	ts__table_desc_end(t);
	return rc < 0 ? ts__context(rc, "table \"%s\"", t->name) : 0;
}

/* 1 when table name has a DESCRIPTOR, 0 when not, or a TS_E* code when
 * stat fails otherwise (an I/O error is not "no such table"). */
static int is_table_dir(ts_db *db, const char *name)
{
	char path[TS_PATH_MAX];
	struct stat st;
	int rc = ts__path(path, "%s/%s/%s", db->path, name, TS_DESC_FILE);
	if (rc < 0)
		return rc;
	if (stat(path, &st) == 0)
		return 1;
	return errno == ENOENT || errno == ENOTDIR ? 0 : ts__fail_errno(errno, "stat %s", path);
}

/* Forget the table object of a dropped table; db->mu is held.  Handles
 * still out see TS_ECLOSED; the last of its handles, calls and holds
 * releases its resources, and ts_close frees the object. */
static void unlink_table(ts_db *db, const char *name)
{
	TS_ASSERT_HELD(&db->mu);
	struct ts_table *t = db->tables;
	while (t && strcmp(t->name, name) != 0)
		t = t->next;
	if (!t)
		return;
	pthread_mutex_lock(&t->mu);
	__atomic_store_n(&t->dropped, 1, __ATOMIC_SEQ_CST);
	ts__log_stop_preparing(t->log); /* no segment made under the old path */
	pthread_mutex_unlock(&t->mu);
	pthread_mutex_lock(&db->life_mu);
	bury(db, t);
	int release = ts__table_take_release(t);
	pthread_mutex_unlock(&db->life_mu);
	if (release)
		ts__table_release(t);
}

/* The loaded object of table name (not dropped), held, or NULL; db->mu
 * is held. */
static struct ts_table *loaded(ts_db *db, const char *name)
{
	TS_ASSERT_HELD(&db->mu);
	struct ts_table *t = db->tables;
	while (t && (strcmp(t->name, name) != 0 || ts__table_dropped(t)))
		t = t->next;
	if (t)
		ts__table_hold(t, 0);
	return t;
}

/* Wait for t's writers of files -- merge, flush, alter, expiry,
 * quarantine: each holds one of these from checking that t is not
 * dropped to its last file written -- and keep them out (NULL: none). */
static void stop_file_writers(struct ts_table *t)
{
	if (!t)
		return;
	/* Calls arriving meanwhile fail fast rather than queue on the
	 * mutexes before the drop (which they could starve). */
	__atomic_add_fetch(&t->dropping, 1, __ATOMIC_SEQ_CST);
	pthread_mutex_lock(&t->merge_mu);
	pthread_mutex_lock(&t->flush_mu);
	pthread_mutex_lock(&t->desc_mu);
}

static void resume_file_writers(struct ts_table *t)
{
	if (!t)
		return;
	pthread_mutex_unlock(&t->desc_mu);
	pthread_mutex_unlock(&t->flush_mu);
	pthread_mutex_unlock(&t->merge_mu);
	__atomic_sub_fetch(&t->dropping, 1, __ATOMIC_SEQ_CST);
	ts__table_unhold(t, 0);
}

/* A table that rollups are built from is not dropped under them
 * (docs/rollups.md): TS_EBUSY naming them, to be dropped first.  db->mu
 * is held, so no rollup of it is created meanwhile. */
static int refuse_source(ts_db *db, const char *name)
{
	char **names, list[512];
	int n, rc = ts__rollups_of(db->path, name, &names, &n);
	if (rc < 0 || n == 0) {
		ts_free_names(names);
		return rc;
	}
	size_t len = 0;
	list[0] = 0;
	for (int i = 0; i < n && len < sizeof list; i++)
		len += (size_t)snprintf(list + len, sizeof list - len, "%s\"%s\"", i ? ", " : "",
		                        names[i]);
	ts_free_names(names);
	return ts__fail(TS_EBUSY, "table \"%s\" is the source of %d rollup%s (%s): drop %s first",
	                name, n, n == 1 ? "" : "s", list, n == 1 ? "it" : "them");
}

/* Rename the table away and forget its object; db->mu is held, and the
 * table's file writers are stopped. */
static int drop_locked(ts_db *db, const char *name)
{
	TS_ASSERT_HELD(&db->mu);
	char src[TS_PATH_MAX], dst[TS_PATH_MAX];
	static unsigned long seq; /* shared by every ts_db of the process */
	int rc;
	if ((rc = is_table_dir(db, name)) <= 0)
		return rc == 0 ? ts__fail(TS_ENOENT, "no such table \"%s\"", name) : rc;
	if ((rc = refuse_source(db, name)) < 0)
		return rc;
	if ((rc = ts__path(src, "%s/%s", db->path, name)) < 0 ||
	    (rc = ts__path(dst, "%s/.dropped-%s-%ld-%lu", db->path, name, (long)getpid(),
	                   __atomic_add_fetch(&seq, 1, __ATOMIC_RELAXED))) < 0)
		return rc;
	if (rename(src, dst) < 0)
		return ts__fail_errno(errno, "rename %s to %s", src, dst);
	unlink_table(db, name);
	/* The table is gone whatever happens now; if the sync fails, the
	 * next read-write ts_open removes dst. */
	if ((rc = ts__fsync_dir(db->path)) < 0)
		return ts__context(rc, "table \"%s\"", name);
	return ts__rmtree(dst);
}

/*
 * A drop racing calls on the table: calls that change its files wait
 * for their mutexes, which the drop holds from before the rename until
 * the table is marked dropped, so they find it dropped (TS_ECLOSED) and
 * write nothing; calls that only read files find them gone and, seeing
 * the mark, say TS_ECLOSED too (ts__table_tablets).  The table's mutexes
 * are taken without db->mu (a merge takes db->mu to run due flushes),
 * so the object is looked up again under it, and the drop starts over
 * in the unlikely case that another drop and create of the same name
 * came in between.
 */
int ts__drop(ts_db *db, const char *name)
{
	int rc;
	if ((rc = check_writable(db)) < 0 || (rc = check_table_name(name)) < 0)
		return rc;
	for (;;) {
		pthread_mutex_lock(&db->mu);
		struct ts_table *t = loaded(db, name);
		pthread_mutex_unlock(&db->mu);
		stop_file_writers(t);
		pthread_mutex_lock(&db->mu);
		struct ts_table *now = loaded(db, name);
		int same = now == t;
		if (same)
			rc = drop_locked(db, name);
		pthread_mutex_unlock(&db->mu);
		if (now)
			ts__table_unhold(now, 0);
		resume_file_writers(t);
		if (same)
			return rc;
	}
}
