/*
 * bench.h -- the shared parts of tsstore-bench: the reference workload's
 * rows, timing, result output, and the peer engines' interface.
 *
 * The reference workload (DESIGN.md section 8): H hosts report every
 * 10 s, rows arrive timestamp-major, key (host, ts), ten int64 values,
 * batches of 512.  Every engine gets the same rows, generated before the
 * clock starts: tsstore as ts_value arrays (its API), the peers as the
 * encoded key and an 80-byte value (theirs).
 */
#ifndef TS_BENCH_H
#define TS_BENCH_H

#include <stddef.h>
#include <stdint.h>

#include "tsstore.h"

#define BENCH_VALUES 10
#define BENCH_KEY_MAX 32

typedef struct bench_rows {
	size_t n, hosts, batch;
	int64_t start_ns;          /* ts of the first row */
	char (*host)[16];          /* host names, hosts of them */
	ts_value *vals;            /* n * (2 + BENCH_VALUES), tsstore's form */
	unsigned char (*key)[BENCH_KEY_MAX]; /* peers: encoded keys */
	uint8_t *klen;
	int64_t (*value)[BENCH_VALUES];      /* peers: the values */
} bench_rows;

/* Generate n rows for hosts hosts, ts-major, ending before now. */
void bench_rows_make(bench_rows *r, size_t n, size_t hosts, size_t batch, int64_t now);
void bench_rows_free(bench_rows *r);

double bench_seconds(void);

/* Print one result as a JSON line (and remember it for --compare). */
void bench_result(const char *workload, const char *engine, const char *metric,
                  double value, const char *unit, const char *params);
/* Print ratios of tsstore's results against each peer's, per metric. */
void bench_compare(void);

/* A peer engine: a key/value store fed (key, value) pairs in batches. */
typedef struct bench_peer {
	const char *name;
	void *(*open)(const char *dir);
	int (*put_batch)(void *h, const bench_rows *r, size_t from, size_t to);
	void (*close)(void *h);
} bench_peer;

extern const bench_peer bench_peer_hash;
extern const bench_peer bench_peer_lmdb; /* name NULL when not built */

#endif
