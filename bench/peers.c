/*
 * peers.c -- the engines tsstore is measured against, fed the same rows:
 * an open-addressing hash table (the in-memory upper bound Rusher's store
 * was compared with), LMDB (MDB_NOSYNC) and RocksDB (LZ4, WAL on, no
 * sync), each when its library is present.  The hash table and LMDB
 * enforce key uniqueness, as tsstore does; RocksDB is fed blind puts, as
 * it is ordinarily used (it serves the bytes-per-row comparison).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "bench.h"

void bench_peer_load(const bench_peer *peer, void *h, const bench_rows *r)
{
	for (size_t i = 0; i < r->n; i += r->batch) {
		size_t to = r->n - i < r->batch ? r->n : i + r->batch;
		if (peer->put_batch(h, r, i, to) < 0) {
			fprintf(stderr, "tsstore-bench: %s: insert failed\n", peer->name);
			exit(1);
		}
	}
}

double bench_peer_absorb(const bench_peer *peer, const bench_rows *r)
{
	char *dir = bench_tmpdir();
	void *h = peer->open(dir);
	if (!h)
		exit(1);
	double t0 = bench_seconds();
	bench_peer_load(peer, h, r);
	double rate = (double)r->n / (bench_seconds() - t0);
	peer->close(h);
	bench_rmdir(dir);
	return rate;
}

/* ---- open-addressing hash table: key -> copy of (key, values) ---- */

struct hash {
	unsigned char **slots;
	size_t cap;
	unsigned char *arena;
	size_t used, size;
};

static void *hash_open(const char *dir)
{
	(void)dir;
	struct hash *h = calloc(1, sizeof *h);
	h->cap = 1 << 22;
	h->slots = calloc(h->cap, sizeof *h->slots);
	h->size = (size_t)1 << 30;
	h->arena = malloc(h->size);
	return h->slots && h->arena ? h : NULL;
}

static uint64_t hash_key(const unsigned char *k, size_t n)
{
	uint64_t x = 0xcbf29ce484222325u;
	for (size_t i = 0; i < n; i++)
		x = (x ^ k[i]) * 0x100000001b3u;
	return x ^ (x >> 29);
}

static int hash_put(struct hash *h, const unsigned char *k, uint8_t n, const void *v,
                    size_t vlen)
{
	size_t i = hash_key(k, n) & (h->cap - 1);
	for (; h->slots[i]; i = (i + 1) & (h->cap - 1))
		if (h->slots[i][0] == n && memcmp(h->slots[i] + 1, k, n) == 0)
			return -1; /* duplicate */
	size_t need = 1 + n + vlen;
	if (h->used + need > h->size)
		return -1;
	unsigned char *e = h->arena + h->used;
	e[0] = n;
	memcpy(e + 1, k, n);
	memcpy(e + 1 + n, v, vlen);
	h->used += need;
	h->slots[i] = e;
	return 0;
}

static int hash_put_batch(void *hp, const bench_rows *r, size_t from, size_t to)
{
	for (size_t i = from; i < to; i++) {
		size_t vlen;
		const void *v = bench_row_value(r, i, &vlen);
		if (hash_put(hp, r->key[i], r->klen[i], v, vlen) < 0)
			return -1;
	}
	return 0;
}

static void hash_close(void *hp)
{
	struct hash *h = hp;
	free(h->slots);
	free(h->arena);
	free(h);
}

const bench_peer bench_peer_hash = {"hash", hash_open, hash_put_batch, NULL, hash_close, NULL};

/* ---- LMDB ---- */

size_t bench_lmdb_map_bytes = (size_t)8 << 30;

#ifdef HAVE_LMDB
/* The handle, struct bench_lmdb, is in bench.h: the query workloads read
 * through it. */

static void *lmdb_open(const char *dir)
{
	bench_lmdb *l = calloc(1, sizeof *l);
	MDB_txn *txn;
	if (!l || mdb_env_create(&l->env) || mdb_env_set_mapsize(l->env, bench_lmdb_map_bytes) ||
	    mdb_env_open(l->env, dir, MDB_NOSYNC, 0644) || mdb_txn_begin(l->env, NULL, 0, &txn) ||
	    mdb_dbi_open(txn, NULL, 0, &l->dbi) || mdb_txn_commit(txn)) {
		fprintf(stderr, "tsstore-bench: lmdb open failed\n");
		return NULL;
	}
	return l;
}

static int lmdb_put_batch(void *lp, const bench_rows *r, size_t from, size_t to)
{
	bench_lmdb *l = lp;
	MDB_txn *txn;
	if (mdb_txn_begin(l->env, NULL, 0, &txn))
		return -1;
	for (size_t i = from; i < to; i++) {
		MDB_val k = {r->klen[i], (void *)r->key[i]}, v;
		v.mv_data = (void *)bench_row_value(r, i, &v.mv_size);
		if (mdb_put(txn, l->dbi, &k, &v, MDB_NOOVERWRITE)) {
			mdb_txn_abort(txn);
			return -1;
		}
	}
	return mdb_txn_commit(txn) ? -1 : 0;
}

static void lmdb_close(void *lp)
{
	bench_lmdb *l = lp;
	mdb_env_close(l->env);
	free(l);
}

const bench_peer bench_peer_lmdb = {"lmdb", lmdb_open, lmdb_put_batch, NULL, lmdb_close,
                                   "data.mdb"};
#else
const bench_peer bench_peer_lmdb = {NULL, NULL, NULL, NULL, NULL, NULL};
#endif

/* ---- RocksDB ---- */

#ifdef HAVE_ROCKSDB
#include <rocksdb/c.h>

/* Everything left at RocksDB's defaults but the compression: LZ4 on every
 * level (the bottommost one included, as bottommost_compression is unset).
 * Opening fails when the library was built without LZ4 ("Compression type
 * LZ4 is not linked with the binary"), so an open that succeeds proves
 * the peer compresses with LZ4. */
struct rocks {
	rocksdb_t *db;
	rocksdb_options_t *opts;
	rocksdb_writeoptions_t *wopts;
	rocksdb_writebatch_t *batch;
};

static void rocks_close(void *kp)
{
	struct rocks *k = kp;
	if (!k)
		return;
	if (k->db)
		rocksdb_close(k->db);
	if (k->batch)
		rocksdb_writebatch_destroy(k->batch);
	if (k->wopts)
		rocksdb_writeoptions_destroy(k->wopts);
	if (k->opts)
		rocksdb_options_destroy(k->opts);
	free(k);
}

static void *rocks_open(const char *dir)
{
	struct rocks *k = calloc(1, sizeof *k);
	char *err = NULL;
	if (!k)
		goto out;
	k->opts = rocksdb_options_create();
	rocksdb_options_set_create_if_missing(k->opts, 1);
	rocksdb_options_set_compression(k->opts, rocksdb_lz4_compression);
	k->wopts = rocksdb_writeoptions_create();
	rocksdb_writeoptions_set_sync(k->wopts, 0); /* WAL on, not synced */
	k->batch = rocksdb_writebatch_create();
	k->db = rocksdb_open(k->opts, dir, &err);
out:
	if (!k || err) {
		fprintf(stderr, "tsstore-bench: rocksdb open: %s\n", err ? err : "out of memory");
		rocksdb_free(err);
		rocks_close(k);
		return NULL;
	}
	return k;
}

static int rocks_put_batch(void *kp, const bench_rows *r, size_t from, size_t to)
{
	struct rocks *k = kp;
	char *err = NULL;
	rocksdb_writebatch_clear(k->batch);
	for (size_t i = from; i < to; i++) {
		size_t vlen;
		const char *v = bench_row_value(r, i, &vlen);
		rocksdb_writebatch_put(k->batch, (const char *)r->key[i], r->klen[i], v, vlen);
	}
	rocksdb_write(k->db, k->wopts, k->batch, &err);
	if (err) {
		fprintf(stderr, "tsstore-bench: rocksdb write: %s\n", err);
		rocksdb_free(err);
		return -1;
	}
	return 0;
}

/* Flush the memtable, then compact the whole key space into its final
 * level. */
static int rocks_settle(void *kp)
{
	struct rocks *k = kp;
	rocksdb_flushoptions_t *fo = rocksdb_flushoptions_create();
	char *err = NULL;
	rocksdb_flushoptions_set_wait(fo, 1);
	rocksdb_flush(k->db, fo, &err);
	rocksdb_flushoptions_destroy(fo);
	if (err) {
		fprintf(stderr, "tsstore-bench: rocksdb flush: %s\n", err);
		rocksdb_free(err);
		return -1;
	}
	rocksdb_compact_range(k->db, NULL, 0, NULL, 0);
	return 0;
}

const bench_peer bench_peer_rocksdb = {"rocksdb", rocks_open, rocks_put_batch, rocks_settle,
                                       rocks_close, ".sst"};
#else
const bench_peer bench_peer_rocksdb = {NULL, NULL, NULL, NULL, NULL, NULL};
#endif
