/*
 * bench.h -- the shared parts of tsstore-bench: the configuration, the
 * reference workload's rows, timing, result output, the tsstore side
 * (table.c), the peer engines' interface (peers.c) and the workloads that
 * live outside main.c.
 *
 * The reference workload (DESIGN.md section 8): H hosts report every
 * 10 s, rows arrive timestamp-major, key (host, ts), ten int64 values,
 * batches of 512.  Every engine gets the same rows, generated before the
 * clock starts: tsstore as ts_value arrays (its API), the peers as the
 * encoded key and an 80-byte value (theirs).  A workload that needs more
 * rows than fit in memory (latency) draws them from a bench_stream, which
 * yields the very same rows one at a time.
 */
#ifndef TS_BENCH_H
#define TS_BENCH_H

#include <stddef.h>
#include <stdint.h>

#include "tsstore.h"

#define BENCH_VALUES 10
#define BENCH_COLUMNS (2 + BENCH_VALUES) /* host, ts, the values */
#define BENCH_KEY_MAX 32
#define BENCH_HOST_MAX 16                /* "host_" and up to 10 digits */
#define BENCH_WORKLOADS_MAX 16           /* --workload given this often */
#define BENCH_MB 1e6                     /* MB/s are decimal megabytes */

/* What the command line asked for (main.c parses it). */
typedef struct bench_config {
	size_t rows, hosts, batch;
	int repeat;                 /* runs of each engine; the best is reported */
	int compare, skip_peers, quick;
	const char *only[BENCH_WORKLOADS_MAX];
	int nonly;
	size_t device_bytes;        /* device: bytes written sequentially */
	double latency_rate;        /* latency: offered rows per second */
	double latency_seconds;     /* latency: length of each of the two runs */
	int64_t latency_flush_size; /* latency: ts_options.flush_size, bytes */
	int64_t latency_merge_delay; /* latency: ts_options.merge_delay, ns */
} bench_config;

/* ---- rows (rows.c) ---- */

/* The reference rows one at a time, in insertion order. */
typedef struct bench_stream {
	size_t hosts, next;          /* next: index of the next row */
	int64_t start_ns;            /* ts of the first row */
	uint64_t x;                  /* xorshift state of the values */
	char (*host)[BENCH_HOST_MAX]; /* host names, hosts of them */
} bench_stream;

/* Start a stream of n rows for hosts hosts, ts-major, ending before now
 * (n only places the first ts).  Exits on failure to allocate. */
void bench_stream_init(bench_stream *s, size_t n, size_t hosts, int64_t now);
/* The next row as tsstore's values (v[BENCH_COLUMNS]; strings point into
 * the stream) and, when values is not NULL, the peers' values. */
void bench_stream_next(bench_stream *s, ts_value *v, int64_t *values);
void bench_stream_free(bench_stream *s);

typedef struct bench_rows {
	size_t n, hosts, batch;
	int64_t start_ns;          /* ts of the first row */
	char (*host)[BENCH_HOST_MAX]; /* host names, hosts of them */
	ts_value *vals;            /* n * BENCH_COLUMNS, tsstore's form */
	unsigned char (*key)[BENCH_KEY_MAX]; /* peers: encoded keys */
	uint8_t *klen;
	int64_t (*value)[BENCH_VALUES];      /* peers: the values */
} bench_rows;

/* Generate n rows for hosts hosts, ts-major, ending before now. */
void bench_rows_make(bench_rows *r, size_t n, size_t hosts, size_t batch, int64_t now);
void bench_rows_free(bench_rows *r);

/* ---- timing and results (rows.c) ---- */

double bench_seconds(void);   /* CLOCK_MONOTONIC */
int64_t bench_now_ns(void);   /* CLOCK_MONOTONIC */
double bench_cpu_seconds(void); /* user + system time of the process */
/* Busy CPU seconds of the whole machine, every process (/proc/stat): less
 * this process's, what the rest of a shared machine took meanwhile. */
double bench_machine_cpu_seconds(void);
/* Now on the wall clock, where the rows end: TSSTORE_NOW when it is set
 * (the instant the library's clock is then frozen at, so that a run's
 * rows and periods can be replayed), else CLOCK_REALTIME. */
int64_t bench_wall_ns(void);

/* Print one result as a JSON line (and remember it for --compare). */
void bench_result(const char *workload, const char *engine, const char *metric,
                  double value, const char *unit, const char *params);
/* Remember a Done-when target: value compared with goal by op ("<=" or
 * ">="); --compare prints whether it is met. */
void bench_target(const char *workload, const char *what, double value, const char *op,
                  double goal);
/* Print ratios of tsstore's results against each peer's, per metric, then
 * the targets. */
void bench_compare(void);

/* ---- the tsstore side (table.c) ---- */

/* A fresh directory for one engine's run, and its removal (frees d). */
char *bench_tmpdir(void);
void bench_rmdir(char *d);

/* Sync, then wait until the removal of the previous run's files has
 * drained, before a timed run that writes to the device. */
void bench_settle(void);
/* Open (creating) the database in dir with options o and the reference
 * table "cpu" in it.  Exits on failure. */
ts_table *bench_table_open(const char *dir, const ts_options *o, ts_db **db);
/* Insert every row of r in batches of r->batch.  Exits on failure. */
void bench_table_load(ts_table *t, const bench_rows *r);
/* The counter name of ts_table_stats, or -1 when there is none. */
int64_t bench_table_stat(ts_table *t, const char *name);
/* Print every counter of t as one JSON line. */
void bench_table_stats_print(ts_table *t, const char *workload, const char *engine);
/* Bytes of the regular files under dir whose names end with suffix. */
int64_t bench_dir_bytes(const char *dir, const char *suffix);

/* ---- peers (peers.c) ---- */

/* A peer engine: a key/value store fed (key, value) pairs in batches. */
typedef struct bench_peer {
	const char *name;
	void *(*open)(const char *dir);
	int (*put_batch)(void *h, const bench_rows *r, size_t from, size_t to);
	/* Bring everything to its final on-disk form (NULL: nothing to do). */
	int (*settle)(void *h);
	void (*close)(void *h);
	const char *data_suffix; /* names of its data files; NULL: in memory */
} bench_peer;

/* Feed every row of r to peer handle h in batches of r->batch.  Exits on
 * failure. */
void bench_peer_load(const bench_peer *peer, void *h, const bench_rows *r);

extern const bench_peer bench_peer_hash;
extern const bench_peer bench_peer_lmdb;    /* name NULL when not built */
extern const bench_peer bench_peer_rocksdb; /* name NULL when not built */

/* ---- workloads outside main.c ---- */

/* device.c: the device's sequential write bandwidth (fdatasync'd), MB/s,
 * measured and printed once per run, on first use. */
double bench_device_write_mbps(const bench_config *c);
void bench_workload_device(const bench_config *c);
/* flush.c */
void bench_workload_flush(const bench_config *c, const bench_rows *r);
void bench_workload_bytes_per_row(const bench_config *c, const bench_rows *r);
/* latency.c */
void bench_workload_latency(const bench_config *c);

#endif
