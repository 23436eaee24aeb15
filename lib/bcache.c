/*
 * bcache.c -- the LRU cache of decompressed blocks (bcache.h): a chained
 * hash table on (serial, block) and a doubly linked recency list, under
 * one mutex held only for pointer updates.  Reference counts are atomic,
 * so that a reader lets go of a block without the mutex: only a
 * reference taken while the block is reachable from the table needs it
 * (the cache's own reference then keeps the block alive).  A hit on an
 * entry among the most recent quarter leaves the list alone (see
 * ts__bcache.pushes): the order is LRU to within a quarter of the list,
 * and a hit touches no neighbour's cache line.  The seek index of a
 * block (ts__seekix) is built and searched here too, for scan.c.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bcache.h"
#include "error.h"
#include "fsutil.h"
#include "key.h"
#include "tslimits.h"
#include "row.h"

/* ---- the default size ---- */

/* The memory.max of this process's cgroup (v2: the line "0::PATH" of
 * /proc/self/cgroup), or 0 when there is none, it cannot be read, or it
 * is "max".  Read with the library's own file calls (ts__read_file), not
 * stdio, so that the fault sweep sees every file the library opens. */
static int64_t cgroup_limit(void)
{
	char path[TS_PATH_MAX + 64], *text = NULL;
	size_t n = 0;
	long long limit = 0;
	path[0] = 0;
	if (ts__read_file("/proc/self/cgroup", 1 << 16, (void **)&text, &n) < 0) {
		ts__clear_error();
		return 0;
	}
	for (char *p = text, *end = text + n; p < end;) {
		char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t len = nl ? (size_t)(nl - p) : (size_t)(end - p);
		if (len > 3 && memcmp(p, "0::", 3) == 0)
			snprintf(path, sizeof path, "/sys/fs/cgroup%.*s/memory.max", (int)(len - 3), p + 3);
		p += len + 1;
	}
	free(text);
	text = NULL;
	if (path[0] && ts__read_file(path, 64, (void **)&text, &n) == 0) {
		char buf[65];
		memcpy(buf, text, n < 64 ? n : 64);
		buf[n < 64 ? n : 64] = 0;
		if (sscanf(buf, "%lld", &limit) != 1) /* "max": no limit */
			limit = 0;
	}
	free(text);
	ts__clear_error();
	return limit > 0 ? (int64_t)limit : 0;
}

static int64_t memory_limit;
static pthread_once_t memory_once = PTHREAD_ONCE_INIT;

static void read_memory_limit(void)
{
	long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
	int64_t phys = pages > 0 && page > 0 ? (int64_t)pages * page : 0;
	int64_t group = cgroup_limit();
	memory_limit = group > 0 && (phys == 0 || group < phys) ? group : phys;
}

int64_t ts__memory_limit(void)
{
	pthread_once(&memory_once, read_memory_limit);
	return memory_limit;
}

int64_t ts__bcache_default_size(int64_t memory)
{
	int64_t size = memory / TS_BLOCK_CACHE_MEMORY_DIVISOR;
	if (size < TS_BLOCK_CACHE_DEFAULT_MIN)
		return TS_BLOCK_CACHE_DEFAULT_MIN;
	return size > TS_BLOCK_CACHE_DEFAULT_MAX ? TS_BLOCK_CACHE_DEFAULT_MAX : size;
}

/* ---- the cache ---- */

static uint64_t next_serial = 1;

uint64_t ts__bcache_serial(void)
{
	return __atomic_fetch_add(&next_serial, 1, __ATOMIC_RELAXED);
}

int ts__bcache_init(ts__bcache *c, size_t cap)
{
	memset(c, 0, sizeof *c);
	c->cap = cap;
	c->nbuckets = 1024;
	if (!(c->buckets = calloc(c->nbuckets, sizeof *c->buckets)))
		return ts__fail(TS_ENOMEM, "out of memory");
	pthread_mutex_init(&c->mu, NULL);
	return 0;
}

static void cblock_free(ts__cblock *b)
{
	ts__buf_free(&b->raw);
	free(b->rows);
	free(b->series);
	free(b->seekix);
	free(b);
}

void ts__bcache_free(ts__bcache *c)
{
	if (!c->buckets)
		return;
	for (ts__cblock *b = c->head, *n; b; b = n) {
		n = b->next;
		b->cached = 0;
		if (__atomic_sub_fetch(&b->refs, 1, __ATOMIC_ACQ_REL) == 0)
			cblock_free(b); /* else a reader still holds it: it frees it */
	}
	free(c->buckets);
	pthread_mutex_destroy(&c->mu);
	memset(c, 0, sizeof *c);
}

static size_t hash_of(uint64_t serial, uint32_t block, size_t nbuckets)
{
	uint64_t h = (serial * 0x9E3779B97F4A7C15u) ^ (block * 0xC2B2AE3D27D4EB4Fu);
	return (size_t)(h >> 32) & (nbuckets - 1);
}

static size_t bucket_of(const ts__bcache *c, uint64_t serial, uint32_t block)
{
	return hash_of(serial, block, c->nbuckets);
}

static void lru_unlink(ts__bcache *c, ts__cblock *b)
{
	if (b->prev)
		b->prev->next = b->next;
	else
		c->head = b->next;
	if (b->next)
		b->next->prev = b->prev;
	else
		c->tail = b->prev;
	b->prev = b->next = NULL;
}

static void lru_push(ts__bcache *c, ts__cblock *b)
{
	b->pushed = ++c->pushes;
	b->prev = NULL;
	b->next = c->head;
	if (c->head)
		c->head->prev = b;
	c->head = b;
	if (!c->tail)
		c->tail = b;
}

static void lru_append(ts__bcache *c, ts__cblock *b)
{
	b->pushed = 0; /* never made most recent: a hit moves it */
	b->next = NULL;
	b->prev = c->tail;
	if (c->tail)
		c->tail->next = b;
	c->tail = b;
	if (!c->head)
		c->head = b;
}

/* The entry of (serial, block), or NULL; c->mu is held. */
static ts__cblock *find(const ts__bcache *c, uint64_t serial, uint32_t block)
{
	ts__cblock *b = c->buckets[bucket_of(c, serial, block)];
	while (b && (b->serial != serial || b->block != block))
		b = b->hnext;
	return b;
}

ts__cblock *ts__bcache_peek(ts__bcache *c, uint64_t serial, uint32_t block, int *used)
{
	*used = 0;
	if (c->cap == 0)
		return NULL;
	pthread_mutex_lock(&c->mu);
	ts__cblock *b = find(c, serial, block);
	if (b) {
		__atomic_add_fetch(&b->refs, 1, __ATOMIC_RELAXED);
		*used = b->pushed != 0;
	}
	pthread_mutex_unlock(&c->mu);
	return b;
}

ts__cblock *ts__bcache_get(ts__bcache *c, uint64_t serial, uint32_t block)
{
	if (c->cap == 0)
		return NULL;
	pthread_mutex_lock(&c->mu);
	ts__cblock *b = find(c, serial, block);
	if (b) {
		__atomic_add_fetch(&b->refs, 1, __ATOMIC_RELAXED);
		/* an entry among the most recent quarter stays where it is:
		 * moving it would touch its two neighbours, cold lines in a
		 * large cache, for an order that hardly changes (it is still
		 * evicted only after three quarters of the list) */
		if (!b->pushed || c->pushes - b->pushed >= c->count / 4) {
			lru_unlink(c, b);
			lru_push(c, b);
		}
		c->hits++;
	} else {
		c->misses++;
	}
	pthread_mutex_unlock(&c->mu);
	return b;
}

void ts__bcache_prefetch(ts__bcache *c, uint64_t serial, uint32_t block)
{
	if (c->cap == 0)
		return;
	pthread_mutex_lock(&c->mu);
	const ts__cblock *b = c->buckets[bucket_of(c, serial, block)];
	if (b) { /* the entry's first two lines: the lookup's and the rows' */
		__builtin_prefetch(b);
		__builtin_prefetch((const char *)b + 64);
	}
	pthread_mutex_unlock(&c->mu);
}

void ts__bcache_prefetch_rows(ts__bcache *c, uint64_t serial, uint32_t block)
{
	if (c->cap == 0)
		return;
	pthread_mutex_lock(&c->mu);
	const ts__cblock *b = find(c, serial, block);
	if (b) {
		const ts__seekix *x = __atomic_load_n(&b->seekix, __ATOMIC_ACQUIRE);
		if (x) {
			size_t bytes = x->n * sizeof *x->word;
			__builtin_prefetch(x);
			for (size_t o = 64; o < bytes && o <= 512; o += 64)
				__builtin_prefetch((const char *)x->word + o);
		}
		if (b->nrows)
			__builtin_prefetch(&b->rows[b->nrows / 2]);
	}
	pthread_mutex_unlock(&c->mu);
}

ts__cblock *ts__cblock_new(uint64_t serial, uint32_t block)
{
	ts__cblock *b = calloc(1, sizeof *b);
	if (!b)
		return NULL;
	b->serial = serial;
	b->block = block;
	b->refs = 1;
	ts__buf_init(&b->raw);
	return b;
}

/* Drop b from the table and the list; the cache's reference goes. */
/* Take b out of the table and the list; c->mu is held.  The cache's
 * reference is handed to *gone (b chained there through hnext): the
 * caller lets go of it with let_go once the mutex is released, so that
 * freeing blocks -- 2 ms for the 1,600 of a merged tablet, a glibc
 * free() of a large buffer being an munmap -- never holds up the
 * readers waiting for the mutex. */
static void evict(ts__bcache *c, ts__cblock *b, ts__cblock **gone)
{
	ts__cblock **p = &c->buckets[bucket_of(c, b->serial, b->block)];
	while (*p != b)
		p = &(*p)->hnext;
	*p = b->hnext;
	lru_unlink(c, b);
	c->used -= b->bytes;
	c->count--;
	b->cached = 0;
	b->hnext = *gone;
	*gone = b;
}

/* Drop the cache's references to the blocks evict chained on gone;
 * c->mu is not held. */
static void let_go(ts__cblock *gone)
{
	for (ts__cblock *b = gone, *next; b; b = next) {
		next = b->hnext;
		if (__atomic_sub_fetch(&b->refs, 1, __ATOMIC_ACQ_REL) == 0)
			cblock_free(b);
	}
}

static void grow(ts__bcache *c)
{
	size_t n = c->nbuckets * 2;
	ts__cblock **nb = calloc(n, sizeof *nb);
	if (!nb)
		return; /* longer chains, still correct */
	for (size_t i = 0; i < c->nbuckets; i++)
		for (ts__cblock *b = c->buckets[i], *next; b; b = next) {
			next = b->hnext;
			size_t j = hash_of(b->serial, b->block, n);
			b->hnext = nb[j];
			nb[j] = b;
		}
	free(c->buckets);
	c->buckets = nb;
	c->nbuckets = n;
}

void ts__cblock_fit(ts__cblock *b)
{
	if (b->raw.cap > b->raw.len && b->raw.len > 0) {
		unsigned char *d = realloc(b->raw.data, b->raw.len);
		if (d) {
			b->raw.data = d;
			b->raw.cap = b->raw.len;
		}
	}
	if (b->caprows > b->nrows && b->nrows > 0) {
		ts__rowref *r = realloc(b->rows, b->nrows * sizeof *r);
		if (r) {
			b->rows = r;
			b->caprows = b->nrows;
		}
	}
}

size_t ts__cblock_fitted_bytes(const ts__cblock *b)
{
	return sizeof *b + b->raw.len + b->nrows * sizeof *b->rows;
}

int ts__bcache_has_room(ts__bcache *c, size_t bytes)
{
	pthread_mutex_lock(&c->mu);
	int room = c->used + bytes <= c->cap;
	pthread_mutex_unlock(&c->mu);
	return room;
}

int ts__bcache_put(ts__bcache *c, ts__cblock *b, int how)
{
	b->bytes = sizeof *b + b->raw.cap + b->caprows * sizeof *b->rows +
	           (b->seekix ? sizeof *b->seekix + b->seekix->n * sizeof *b->seekix->word +
	                            b->seekix->plen
	                      : 0);
	if (c->cap == 0 || b->bytes > c->cap / 4)
		return 0; /* a block this large would push out too much */
	pthread_mutex_lock(&c->mu);
	size_t i = bucket_of(c, b->serial, b->block);
	ts__cblock *o = c->buckets[i];
	while (o && (o->serial != b->serial || o->block != b->block))
		o = o->hnext;
	int take = !o && (how == TS_BCACHE_EVICT || c->used + b->bytes <= c->cap);
	ts__cblock *gone = NULL;
	if (take) {
		while (c->used + b->bytes > c->cap && c->tail)
			evict(c, c->tail, &gone);
		if (c->count >= c->nbuckets)
			grow(c), i = bucket_of(c, b->serial, b->block);
		b->hnext = c->buckets[i];
		c->buckets[i] = b;
		if (how == TS_BCACHE_EVICT)
			lru_push(c, b);
		else
			lru_append(c, b);
		b->cached = 1;
		__atomic_add_fetch(&b->refs, 1, __ATOMIC_RELAXED);
		c->used += b->bytes;
		c->count++;
	}
	pthread_mutex_unlock(&c->mu);
	let_go(gone);
	return take;
}

void ts__bcache_forget(ts__bcache *c, uint64_t serial, uint32_t nblocks)
{
	if (c->cap == 0)
		return;
	ts__cblock *gone = NULL;
	pthread_mutex_lock(&c->mu);
	for (uint32_t i = 0; i < nblocks && c->count; i++) {
		ts__cblock *b = find(c, serial, i);
		if (b)
			evict(c, b, &gone);
	}
	pthread_mutex_unlock(&c->mu);
	let_go(gone);
}

void ts__cblock_put(ts__bcache *c, ts__cblock *b)
{
	if (b && __atomic_sub_fetch(&b->refs, 1, __ATOMIC_ACQ_REL) == 0)
		cblock_free(b);
}

/* The key of row i of b, or -1 (TS_ECORRUPT said) when malformed. */
static int row_key_of(const ts__cblock *b, size_t i, const unsigned char **k, size_t *klen)
{
	const void *key;
	if (ts__row_key(b->raw.data + b->rows[i].off, b->rows[i].len, &key, klen) < 0)
		return -1;
	*k = key;
	return 0;
}

/* The 8 bytes of k[0..klen) from at, big-endian, zero past the end. */
static uint64_t word_at(const unsigned char *k, size_t klen, size_t at)
{
	unsigned char w[8] = {0};
	if (at < klen)
		memcpy(w, k + at, klen - at < 8 ? klen - at : 8);
	return ts__load_be64(w);
}

ts__seekix *ts__seekix_build(const ts__cblock *b)
{
	const unsigned char *first = NULL, *last = NULL, *k;
	size_t flen = 0, llen = 0, klen;
	/* in key order, the prefix every key shares is that of the first
	 * and the last */
	if (b->nrows > 0 &&
	    (row_key_of(b, 0, &first, &flen) < 0 || row_key_of(b, b->nrows - 1, &last, &llen) < 0))
		return NULL;
	size_t plen = 0;
	while (plen < flen && plen < llen && first[plen] == last[plen])
		plen++;
	ts__seekix *x = malloc(sizeof *x + b->nrows * sizeof *x->word + plen);
	if (!x)
		return NULL;
	x->n = b->nrows;
	x->plen = (uint32_t)plen;
	x->prefix = (const unsigned char *)(x->word + b->nrows);
	if (plen)
		memcpy((unsigned char *)(x->word + b->nrows), first, plen);
	for (size_t i = 0; i < b->nrows; i++) {
		if (row_key_of(b, i, &k, &klen) < 0 || klen < plen || memcmp(k, first, plen) != 0) {
			free(x); /* malformed, or out of order: the caller's search says so */
			return NULL;
		}
		x->word[i] = word_at(k, klen, plen);
	}
	return x;
}

long ts__seekix_first_not(const ts__seekix *x, const ts__cblock *b, const void *bound,
                          size_t blen, int eq_true)
{
	const unsigned char *bd = bound;
	size_t n = x->n, common = blen < x->plen ? blen : x->plen;
	/* every key starts with the prefix: where the bound leaves it, all
	 * keys compare alike */
	int c = memcmp(x->prefix, bd, common);
	if (c != 0)
		return c < 0 ? (long)n : 0; /* every key below the bound, or above */
	if (blen < x->plen)
		return 0;                   /* the bound is a proper prefix of every key */
	uint64_t bw = word_at(bd, blen, x->plen);
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int below; /* the key of mid satisfies the predicate */
		if (x->word[mid] != bw) {
			below = x->word[mid] < bw;
		} else {
			const unsigned char *k;
			size_t klen;
			if (row_key_of(b, mid, &k, &klen) < 0)
				return TS_ECORRUPT;
			int kc = ts__key_cmp(k, klen, bound, blen);
			below = kc < 0 || (kc == 0 && eq_true);
		}
		if (below)
			lo = mid + 1;
		else
			hi = mid;
	}
	return (long)lo;
}

const ts__seekix *ts__cblock_seekix(ts__bcache *c, ts__cblock *b)
{
	ts__seekix *x = __atomic_load_n(&b->seekix, __ATOMIC_ACQUIRE), *none = NULL;
	if (x)
		return x;
	if (!(x = ts__seekix_build(b)))
		return NULL;
	if (!__atomic_compare_exchange_n(&b->seekix, &none, x, 0, __ATOMIC_ACQ_REL,
	                                 __ATOMIC_ACQUIRE)) {
		free(x);
		return none;
	}
	/* charged like the rows: with the block while it is cached (an
	 * uncached block's charge is set when it is put) */
	size_t bytes = sizeof *x + x->n * sizeof *x->word + x->plen;
	pthread_mutex_lock(&c->mu);
	if (b->cached) {
		b->bytes += bytes;
		c->used += bytes;
	}
	pthread_mutex_unlock(&c->mu);
	return x;
}
