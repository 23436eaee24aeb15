/*
 * peers_tree.c -- two more engines of DESIGN.md section 8, fed the same
 * (key, value) pairs as the others:
 *
 *   rbtree  a red-black tree in memory: glibc's tsearch(3), which keeps
 *           its tree red-black balanced, over entries (key length, key,
 *           value) copied into one arena -- the ordered in-memory bound
 *           Rusher compared his store with, beside the hash table;
 *   sqlite  SQLite, one table (k BLOB PRIMARY KEY, v BLOB) WITHOUT ROWID
 *           in a file, journal_mode=WAL, synchronous=OFF, one transaction
 *           per batch through a prepared INSERT (built with HAVE_SQLITE).
 *
 * Both refuse a duplicate key, as tsstore does.
 */
#include <search.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

/* ---- red-black tree (tsearch) ---- */

struct rbtree {
	void *root;
	unsigned char *arena;
	size_t used, size;
};

/* An entry: its key length, then the key, then the value. */
static int entry_cmp(const void *a, const void *b)
{
	const unsigned char *x = a, *y = b;
	size_t n = x[0] < y[0] ? x[0] : y[0];
	int c = memcmp(x + 1, y + 1, n);
	return c ? c : (x[0] > y[0]) - (x[0] < y[0]);
}

static void *rbtree_open(const char *dir)
{
	(void)dir;
	struct rbtree *t = calloc(1, sizeof *t);
	if (!t)
		return NULL;
	t->size = (size_t)1 << 30;
	if (!(t->arena = malloc(t->size))) {
		free(t);
		return NULL;
	}
	return t;
}

static int rbtree_put_batch(void *tp, const bench_rows *r, size_t from, size_t to)
{
	struct rbtree *t = tp;
	for (size_t i = from; i < to; i++) {
		size_t vlen;
		const void *v = bench_row_value(r, i, &vlen);
		size_t need = 1 + r->klen[i] + vlen;
		if (t->used + need > t->size)
			return -1;
		unsigned char *e = t->arena + t->used;
		e[0] = r->klen[i];
		memcpy(e + 1, r->key[i], r->klen[i]);
		memcpy(e + 1 + r->klen[i], v, vlen);
		void **found = tsearch(e, &t->root, entry_cmp);
		if (!found || *found != e)
			return -1; /* out of memory, or a duplicate */
		t->used += need;
	}
	return 0;
}

static void no_free(void *p)
{
	(void)p; /* entries live in the arena */
}

static void rbtree_close(void *tp)
{
	struct rbtree *t = tp;
	tdestroy(t->root, no_free);
	free(t->arena);
	free(t);
}

const bench_peer bench_peer_rbtree = {"rbtree", rbtree_open, rbtree_put_batch, NULL,
                                      rbtree_close, NULL};

/* ---- SQLite ---- */

#ifdef HAVE_SQLITE
#include <sqlite3.h>

struct sqlite_peer {
	sqlite3 *db;
	sqlite3_stmt *insert;
};

static int sql_exec(sqlite3 *db, const char *sql)
{
	char *err = NULL;
	if (sqlite3_exec(db, sql, NULL, NULL, &err) == SQLITE_OK)
		return 0;
	fprintf(stderr, "tsstore-bench: sqlite: %s: %s\n", sql, err ? err : "?");
	sqlite3_free(err);
	return -1;
}

static void sqlite_close(void *sp)
{
	struct sqlite_peer *s = sp;
	sqlite3_finalize(s->insert);
	sqlite3_close(s->db);
	free(s);
}

static void *sqlite_open(const char *dir)
{
	char path[4200];
	struct sqlite_peer *s = calloc(1, sizeof *s);
	if (!s)
		return NULL;
	snprintf(path, sizeof path, "%s/peer.sqlite", dir);
	if (sqlite3_open(path, &s->db) != SQLITE_OK ||
	    sql_exec(s->db, "PRAGMA journal_mode=WAL") < 0 ||
	    sql_exec(s->db, "PRAGMA synchronous=OFF") < 0 ||
	    sql_exec(s->db, "CREATE TABLE t(k BLOB PRIMARY KEY, v BLOB) WITHOUT ROWID") < 0 ||
	    sqlite3_prepare_v2(s->db, "INSERT INTO t(k, v) VALUES (?1, ?2)", -1, &s->insert,
	                       NULL) != SQLITE_OK) {
		fprintf(stderr, "tsstore-bench: sqlite open failed: %s\n", sqlite3_errmsg(s->db));
		sqlite_close(s);
		return NULL;
	}
	return s;
}

static int sqlite_put_batch(void *sp, const bench_rows *r, size_t from, size_t to)
{
	struct sqlite_peer *s = sp;
	if (sql_exec(s->db, "BEGIN") < 0)
		return -1;
	for (size_t i = from; i < to; i++) {
		size_t vlen;
		const void *v = bench_row_value(r, i, &vlen);
		sqlite3_bind_blob(s->insert, 1, r->key[i], r->klen[i], SQLITE_STATIC);
		sqlite3_bind_blob(s->insert, 2, v, (int)vlen, SQLITE_STATIC);
		int rc = sqlite3_step(s->insert);
		sqlite3_reset(s->insert);
		if (rc != SQLITE_DONE) { /* a duplicate is SQLITE_CONSTRAINT */
			fprintf(stderr, "tsstore-bench: sqlite insert: %s\n", sqlite3_errmsg(s->db));
			sql_exec(s->db, "ROLLBACK");
			return -1;
		}
	}
	return sql_exec(s->db, "COMMIT");
}

const bench_peer bench_peer_sqlite = {"sqlite", sqlite_open, sqlite_put_batch, NULL,
                                      sqlite_close, ".sqlite"};
#else
const bench_peer bench_peer_sqlite = {NULL, NULL, NULL, NULL, NULL, NULL};
#endif
