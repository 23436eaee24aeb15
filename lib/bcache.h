/*
 * bcache.h -- the database's cache of decompressed tablet blocks.
 *
 * Reading a block costs a pread, a CRC over it and an LZO decompression,
 * tens of microseconds for 64 kB: far more than the few rows a latest or
 * a short range query wants from it.  So blocks read by queries are kept,
 * decompressed and with their rows located, in one LRU cache per
 * database, bounded in bytes (ts_options.block_cache_size).  Tablets are
 * immutable and each open tablet has a process-unique serial number, so
 * an entry never goes stale; a tablet's entries are dropped when it is
 * closed (ts__bcache_forget), as no reader can look them up again.  A
 * merge's output is opened with a serial reserved while it is written
 * (ts__table_tablet_serial), so that the merge can cache the output
 * blocks whose rows came from cached input blocks (merge.c): what
 * readers had cached stays cached across the swap.  The blocks a flush
 * of a table being read writes go into spare room the same way
 * (flush.c).
 *
 * Entries are reference-counted: a reader holds its block while it reads
 * rows from it, and eviction only unlinks an entry, which is freed when
 * its last reader lets go.  Long scans never push anything out (scan.c):
 * past their first blocks they only fill room the cache has spare, at the
 * cold end of the list, so that one scan does not flush everything else
 * out, while a cache big enough for the data ends up holding all of it.
 *
 * A block sought in by a range gets a seek index (ts__seekix), a compact
 * array of its keys' leading words, so that finding a bound in it reads
 * a few cache lines instead of a row per probe.
 */
#ifndef TS_BCACHE_H
#define TS_BCACHE_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"

/* Where the rows of a decompressed block are. */
typedef struct ts__rowref {
	uint32_t off, len;
} ts__rowref;

/* Where each series of a block begins: the rows whose stem (key but ts)
 * differs from the row before's, start[0] = 0. */
typedef struct ts__series {
	size_t n;
	uint32_t start[];
} ts__series;

/* A decoded block's seek index: every key of the block shares its first
 * plen bytes (prefix, a copy); word[i] holds the 8 bytes of row i's key
 * after them, big-endian, zero past the key's end.  Keys whose words
 * differ order as their words, so a binary search for a bound reads the
 * compact words, a few cache lines, and reads a row only where its word
 * ties the bound's -- instead of a row (its locator and its key, two
 * cold lines in a large cache) per probe.  Built by the first seek in
 * the block (scan.c) and charged to the cache with it. */
typedef struct ts__seekix {
	size_t n;                 /* rows */
	uint32_t plen;
	const unsigned char *prefix; /* plen bytes, after word[] */
	uint64_t word[];
} ts__seekix;

typedef struct ts__cblock {
	/* what a lookup reads first, together: the chain walk and the hit */
	uint64_t serial;          /* of the tablet */
	uint32_t block;
	int refs;                 /* atomic: readers, plus 1 while cached */
	struct ts__cblock *hnext; /* hash chain */
	uint64_t pushed;          /* c->pushes when last made most recent, 0
	                           * when appended as the least recent */
	ts_buf raw;               /* the decompressed rows */
	ts__rowref *rows;
	size_t nrows, caprows;
	/* atomic: the block's series, found by the first seek that needs
	 * them (scan.c), NULL until then; not charged to the cache (four
	 * bytes a series) */
	ts__series *series;
	/* atomic: the block's seek index (ts__cblock_seekix), NULL until a
	 * seek builds it; charged to the cache */
	ts__seekix *seekix;
	size_t bytes;             /* charged to the cache */
	int cached;
	struct ts__cblock *prev, *next; /* LRU, most recent first */
} ts__cblock;

typedef struct ts__bcache {
	pthread_mutex_t mu;
	size_t cap, used;
	ts__cblock **buckets;
	size_t nbuckets;          /* power of two */
	size_t count;
	ts__cblock *head, *tail;
	/* entries made most recent so far: an entry made so fewer than
	 * count / 4 pushes ago stands among the most recent quarter of the
	 * list, and a hit leaves it there (no list neighbours touched) */
	uint64_t pushes;
	uint64_t hits, misses;    /* counters */
} ts__bcache;

/* The memory this process may use, in bytes: the machine's physical
 * memory (sysconf), or the memory.max of its cgroup (v2, read through
 * /proc/self/cgroup) when that is lower.  Returns 0 when neither can be
 * read.  Read once per process (the first call; ts_options_init makes
 * it), so that setting options does no I/O each time. */
int64_t ts__memory_limit(void);

/* The default block_cache_size for memory bytes (ts__memory_limit; 0:
 * unknown): memory / TS_BLOCK_CACHE_MEMORY_DIVISOR, within
 * [TS_BLOCK_CACHE_DEFAULT_MIN, TS_BLOCK_CACHE_DEFAULT_MAX] (tslimits.h);
 * the minimum when memory is unknown. */
int64_t ts__bcache_default_size(int64_t memory);

/* A cache of cap bytes (0: nothing is ever kept).  Returns 0 or
 * TS_ENOMEM. */
int ts__bcache_init(ts__bcache *c, size_t cap);
void ts__bcache_free(ts__bcache *c);

/* The cached block (serial, block), referenced, or NULL. */
ts__cblock *ts__bcache_get(ts__bcache *c, uint64_t serial, uint32_t block);

/* The same, for a reader that is not a query (a merge reading its
 * inputs): neither counted as a hit or a miss nor made more recent.
 * *used says whether a reader has used the block (or it was put as the
 * most recent), rather than it only filling spare room since it was
 * put (TS_BCACHE_SPARE). */
ts__cblock *ts__bcache_peek(ts__bcache *c, uint64_t serial, uint32_t block, int *used);

/* A hint: start fetching the cache lines a lookup of (serial, block)
 * will read -- its bucket's first entry -- so that the lookup, made a
 * little later, finds them in the CPU cache.  Takes no reference. */
void ts__bcache_prefetch(ts__bcache *c, uint64_t serial, uint32_t block);

/* The next hint, once the entry's lines may have arrived: when (serial,
 * block) is cached, start fetching its seek index (its first 512 bytes:
 * all of a small block's) and the middle of its row locators, which a
 * seek in it reads first.  Takes no reference. */
void ts__bcache_prefetch_rows(ts__bcache *c, uint64_t serial, uint32_t block);

/* A new, unshared block for the caller to fill (referenced once).
 * Returns NULL when out of memory. */
ts__cblock *ts__cblock_new(uint64_t serial, uint32_t block);

/* How ts__bcache_put makes room. */
enum {
	TS_BCACHE_EVICT, /* as the most recent entry, evicting the least recent */
	TS_BCACHE_SPARE  /* only into room to spare, as the least recent entry */
};

/* Offer a filled block b (referenced by the caller, who keeps that
 * reference) to the cache; when another reader cached the same block
 * first, or b is too large, or (TS_BCACHE_SPARE) the cache has no room
 * to spare, b stays private.  Returns 1 when b was cached (other readers
 * may use it from then on, even after it is evicted), 0 when it is still
 * the caller's alone. */
int ts__bcache_put(ts__bcache *c, ts__cblock *b, int how);

/* Drop the entries of blocks [0, nblocks) of the tablet of serial: it is
 * being closed, no reader can look them up again, and their room is
 * better given to live tablets' blocks than left to age out (a merge's
 * output takes over its inputs' entries, merge.c).  Readers holding one
 * keep it until they let go. */
void ts__bcache_forget(ts__bcache *c, uint64_t serial, uint32_t nblocks);

/* Shrink the buffers of b, the caller's alone, to what they hold, so
 * that the cache is charged for the rows and not for spare capacity
 * (decompression buffers grow by doubling).  Keeps them as they are when
 * memory is short. */
void ts__cblock_fit(ts__cblock *b);

/* Whether the cache has bytes to spare now (a hint: others may take the
 * room before a TS_BCACHE_SPARE put). */
int ts__bcache_has_room(ts__bcache *c, size_t bytes);

/* What b would be charged once fitted. */
size_t ts__cblock_fitted_bytes(const ts__cblock *b);

/* Another reference to b, which the caller holds. */
static inline void ts__cblock_ref(ts__cblock *b)
{
	__atomic_add_fetch(&b->refs, 1, __ATOMIC_RELAXED);
}

/* Whether the caller's reference is b's only one, so that its buffers
 * may be refilled. */
static inline int ts__cblock_sole(const ts__cblock *b)
{
	return __atomic_load_n(&b->refs, __ATOMIC_ACQUIRE) == 1;
}

/* The seek index of the rows of b (b->rows, b->raw), or NULL when a
 * key is malformed or memory is short.  Not published anywhere: the
 * caller owns it (free()). */
ts__seekix *ts__seekix_build(const ts__cblock *b);

/* The first row i of b (0 .. b->nrows) whose key k does not satisfy
 * k < bound, or k == bound when eq_true -- the rows satisfying it must be
 * a leading run, as in a block in key order.  x is b's seek index.
 * Returns i, or TS_ECORRUPT for a malformed key of a row it had to read. */
long ts__seekix_first_not(const ts__seekix *x, const ts__cblock *b, const void *bound,
                          size_t blen, int eq_true);

/* The seek index of b, a block the caller holds (cached or private):
 * built on first use and published in b, charged to c when b is cached
 * (readers racing to build it keep the first published).  NULL when it
 * cannot be built (see ts__seekix_build): the caller searches the rows. */
const ts__seekix *ts__cblock_seekix(ts__bcache *c, ts__cblock *b);

/* Let go of a reference.  NULL allowed. */
void ts__cblock_put(ts__bcache *c, ts__cblock *b);

/* A process-unique serial number for a newly opened tablet. */
uint64_t ts__bcache_serial(void);

#endif
