/*
 * bcache.c -- the LRU cache of decompressed blocks (bcache.h): a chained
 * hash table on (serial, block) and a doubly linked recency list, under
 * one mutex held only for pointer updates.  Reference counts are atomic,
 * so that a reader lets go of a block without the mutex: only a
 * reference taken while the block is reachable from the table needs it
 * (the cache's own reference then keeps the block alive).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bcache.h"
#include "error.h"
#include "limits.h"

/* ---- the default size ---- */

/* The memory.max of this process's cgroup (v2: the line "0::PATH" of
 * /proc/self/cgroup), or 0 when there is none or it is "max". */
static int64_t cgroup_limit(void)
{
	char line[TS_PATH_MAX], path[TS_PATH_MAX + 64];
	long long limit = 0;
	FILE *f = fopen("/proc/self/cgroup", "r");
	if (!f)
		return 0;
	path[0] = 0;
	while (fgets(line, sizeof line, f))
		if (strncmp(line, "0::", 3) == 0) {
			line[strcspn(line, "\n")] = 0;
			snprintf(path, sizeof path, "/sys/fs/cgroup%s/memory.max", line + 3);
		}
	fclose(f);
	if (path[0] && (f = fopen(path, "r"))) {
		if (fscanf(f, "%lld", &limit) != 1) /* "max": no limit */
			limit = 0;
		fclose(f);
	}
	return limit > 0 ? (int64_t)limit : 0;
}

int64_t ts__memory_limit(void)
{
	long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
	int64_t phys = pages > 0 && page > 0 ? (int64_t)pages * page : 0;
	int64_t group = cgroup_limit();
	return group > 0 && (phys == 0 || group < phys) ? group : phys;
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
	b->next = NULL;
	b->prev = c->tail;
	if (c->tail)
		c->tail->next = b;
	c->tail = b;
	if (!c->head)
		c->head = b;
}

ts__cblock *ts__bcache_get(ts__bcache *c, uint64_t serial, uint32_t block)
{
	if (c->cap == 0)
		return NULL;
	pthread_mutex_lock(&c->mu);
	ts__cblock *b = c->buckets[bucket_of(c, serial, block)];
	while (b && (b->serial != serial || b->block != block))
		b = b->hnext;
	if (b) {
		__atomic_add_fetch(&b->refs, 1, __ATOMIC_RELAXED);
		lru_unlink(c, b);
		lru_push(c, b);
		c->hits++;
	} else {
		c->misses++;
	}
	pthread_mutex_unlock(&c->mu);
	return b;
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
static void evict(ts__bcache *c, ts__cblock *b)
{
	ts__cblock **p = &c->buckets[bucket_of(c, b->serial, b->block)];
	while (*p != b)
		p = &(*p)->hnext;
	*p = b->hnext;
	lru_unlink(c, b);
	c->used -= b->bytes;
	c->count--;
	b->cached = 0;
	if (__atomic_sub_fetch(&b->refs, 1, __ATOMIC_ACQ_REL) == 0)
		cblock_free(b);
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
	b->bytes = sizeof *b + b->raw.cap + b->caprows * sizeof *b->rows;
	if (c->cap == 0 || b->bytes > c->cap / 4)
		return 0; /* a block this large would push out too much */
	pthread_mutex_lock(&c->mu);
	size_t i = bucket_of(c, b->serial, b->block);
	ts__cblock *o = c->buckets[i];
	while (o && (o->serial != b->serial || o->block != b->block))
		o = o->hnext;
	int take = !o && (how == TS_BCACHE_EVICT || c->used + b->bytes <= c->cap);
	if (take) {
		while (c->used + b->bytes > c->cap && c->tail)
			evict(c, c->tail);
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
	return take;
}

void ts__cblock_put(ts__bcache *c, ts__cblock *b)
{
	if (b && __atomic_sub_fetch(&b->refs, 1, __ATOMIC_ACQ_REL) == 0)
		cblock_free(b);
}
