/*
 * bench.h -- the shared parts of tsstore-bench: the configuration, the
 * reference workload's rows, timing, result output, the tsstore side
 * (table.c), the peer engines' interface (peers.c), the CPU ceilings set
 * beside the flush and cold-scan targets (ceiling.c) and the workloads
 * that live outside main.c.
 *
 * The reference workload (DESIGN.md section 8): H hosts report every
 * 10 s, rows arrive timestamp-major, key (host, ts), ten int64 values,
 * batches of 512.  Every engine gets the same rows, generated before the
 * clock starts: tsstore as ts_value arrays (its API), the peers as the
 * encoded key and an 80-byte value (theirs).  A workload that needs more
 * rows than fit in memory (latency) draws them from a bench_stream, which
 * yields the very same rows one at a time.
 *
 * Every workload reads the rows it needs from the one generator here, and
 * what two workloads share (loading a table, evicting the page cache, the
 * LMDB peer's handle) is declared here once.
 */
#ifndef TS_BENCH_H
#define TS_BENCH_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "tsstore.h"

#define BENCH_VALUES 10
#define BENCH_COLUMNS (2 + BENCH_VALUES) /* host, ts, the values */
#define BENCH_KEY_MAX 32
#define BENCH_HOST_MAX 16                /* "host_" and up to 10 digits */
#define BENCH_WORKLOADS_MAX 16           /* --workload given this often */
#define BENCH_MB 1e6                     /* MB/s are decimal megabytes */
#define BENCH_TABLE "cpu"                /* the reference table's name */
#define BENCH_STEP_NS INT64_C(10000000000) /* every host reports every 10 s */
/* flush_size and flush_age a load never reaches */
#define BENCH_NEVER_FLUSH_SIZE (INT64_C(1) << 50)
#define BENCH_NEVER_FLUSH_AGE (INT64_C(365) * 86400 * 1000000000)

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
	size_t query_rows;          /* query workloads: rows loaded */
	long block_cache_mb;        /* query workloads: ts_options.block_cache_size, MB;
	                             * -1 with in_service: the library's default */
	int in_service;             /* query workloads: query the table as a sustained
	                             * load with the library's defaults left it */
	double in_service_wait;     /* in service: seconds between the load and the
	                             * queries (the scheduler working meanwhile) */
	const char *tsbs_path;      /* ingest, tsbs: the TSBS cpu-only file (gzip) */
	int rollup_days;            /* rollups: days of rows aggregated; 0: default */
	size_t sustained_rows;      /* sustained: rows of each engine's load */
	size_t rollup_rows;         /* rollups: rows of the ingest figure */
	const char *log_segment_size; /* ingest_http, remote_write: tsstored's
	                               * --log-segment-size; NULL: its default */
	/* --print-queries / --print-promql TYPE N SEED: print the queries
	 * (tsbsgen.c) instead of running workloads */
	const char *print_type;
	size_t print_n;
	uint64_t print_seed;
	int print_promql;
} bench_config;

/* Whether workload name was asked for (all are when none was named). */
int bench_wanted(const bench_config *c, const char *name);

/* The next number of a xorshift64 sequence (state never 0): the bench's
 * reproducible randomness. */
static inline uint64_t bench_xorshift(uint64_t *state)
{
	*state ^= *state << 13;
	*state ^= *state >> 7;
	*state ^= *state << 17;
	return *state;
}

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
	/* peers, when not NULL: row i's value is the vlen bytes at vbytes[i]
	 * instead of value[i] (rows of other sizes, sweep.c; the owner of
	 * the rows frees it) */
	const unsigned char **vbytes;
	size_t vlen;
} bench_rows;

/* The peers' value of row i of r, *len bytes. */
static inline const void *bench_row_value(const bench_rows *r, size_t i, size_t *len)
{
	if (r->vbytes) {
		*len = r->vlen;
		return r->vbytes[i];
	}
	*len = BENCH_VALUES * 8;
	return r->value[i];
}

/* Generate n rows for hosts hosts, ts-major, ending before now. */
void bench_rows_make(bench_rows *r, size_t n, size_t hosts, size_t batch, int64_t now);
void bench_rows_free(bench_rows *r);
/* The peers' key of (host, ts): the host's bytes, 0x00 0x01, then ts
 * with its sign bit flipped, big-endian, so that memcmp order is
 * (host, ts) order.  k must hold BENCH_KEY_MAX bytes. */
void bench_encode_key(unsigned char *k, uint8_t *klen, const char *host, int64_t ts);

/* calloc of n (at least 1) elements, exiting with a message naming the
 * workload when out of memory (rows.c). */
void *bench_calloc(size_t n, size_t size, const char *workload);

/* A ts_options.clock frozen at *(int64_t *)arg (table.c). */
int64_t bench_frozen_clock(void *arg);

/* ---- timing and results (rows.c) ---- */

double bench_seconds(void);   /* CLOCK_MONOTONIC */
/* qsort's comparison of doubles, ascending. */
int bench_cmp_double(const void *a, const void *b);
/* The median of v[0..n), n > 0, v sorted ascending in place. */
double bench_median(double *v, size_t n);
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
/* bench_result for one point of a sweep: point is a JSON member naming
 * it, such as "\"batch\":64".  --compare pairs the result only with those
 * of the same workload, metric and point, and repeats point in the ratio
 * line. */
void bench_result_point(const char *workload, const char *point, const char *engine,
                        const char *metric, double value, const char *unit, const char *params);
/* Print that engine could not produce workload's results: call failed
 * with error code (a TS_E* value), as one JSON line with no metric. */
void bench_error(const char *workload, const char *engine, const char *call, int code);
/* Report that tsstore's call failed with code rc in workload: on stderr
 * with ts_errmsg, and as bench_error's line; sets *failed.  Returns -1. */
int bench_tsstore_failed(const char *workload, const char *call, int rc, int *failed);
/* Remember a Done-when target: value compared with goal by op ("<=" or
 * ">="); --compare prints whether it is met. */
void bench_target(const char *workload, const char *what, double value, const char *op,
                  double goal);
/* Remember a physical ceiling of a target: the best value the target's
 * ratio could take on this machine (ceiling.c's measurements), compared
 * with the target's goal by op; --compare prints it beside the targets,
 * saying whether the goal is reachable at all. */
void bench_ceiling(const char *workload, const char *what, double value, const char *op,
                   double goal);
/* Print ratios of tsstore's results against each peer's, per metric, then
 * the targets and the ceilings, in the order they were remembered. */
void bench_compare(void);

/* ---- the tsstore side (table.c) ---- */

/* A fresh directory for one engine's run, and its removal (frees d). */
char *bench_tmpdir(void);
void bench_rmdir(char *d);

/* Sync, then wait until the removal of the previous run's files has
 * drained, before a timed run that writes to the device. */
void bench_settle(void);
/* Open (creating) the database in dir with options o and the reference
 * table BENCH_TABLE in it.  Exits on failure. */
ts_table *bench_table_open(const char *dir, const ts_options *o, ts_db **db);
/* Insert every row of r in batches of r->batch.  Exits on failure. */
void bench_table_load(ts_table *t, const bench_rows *r);

/* A table loaded by bench_table_load_fresh, in a scratch directory of its
 * own, and the options it was opened with. */
typedef struct bench_loaded {
	char *dir;
	ts_options opts;
	ts_db *db;
	ts_table *t;
} bench_loaded;

/* Load r into a fresh table that never merges by itself (TS_OPEN_NOMERGE,
 * sync none), never flushes by age and flushes only trees of flush_size
 * bytes (BENCH_NEVER_FLUSH_SIZE: none; a flush during the load is then
 * warned about).  Exits on failure. */
void bench_table_load_fresh(const bench_rows *r, int64_t flush_size, bench_loaded *l);
/* ts_options.flush_threads of the tables bench_table_load_fresh opens
 * from now on; 0: the library's default. */
extern int64_t bench_flush_threads;
/* Open l's table again, with its options, after its handles were closed
 * (l->t and l->db NULL).  Exits on failure. */
void bench_table_reopen(bench_loaded *l);
/* Close l's handles (those still open) and remove its directory. */
void bench_table_unload(bench_loaded *l);
/* The counter name of ts_table_stats, or -1 when there is none. */
int64_t bench_table_stat(ts_table *t, const char *name);
/* Print every counter of t as one JSON line. */
void bench_table_stats_print(ts_table *t, const char *workload, const char *engine);
/* Bytes of the regular files under dir whose names end with suffix. */
int64_t bench_dir_bytes(const char *dir, const char *suffix);
/* Evict the page cache before a cold read: sync, then write "1" to
 * /proc/sys/vm/drop_caches (every clean page of the machine); where that
 * is not permitted, posix_fadvise(POSIX_FADV_DONTNEED) each regular file
 * under dir whose name ends with suffix.  Returns what was done,
 * "drop_caches" or "fadvise".  Exits when neither could be done. */
const char *bench_drop_caches(const char *dir, const char *suffix);

/* ---- the TSBS cpu-only file (tsbsfile.c) ---- */

#define BENCH_TSBS_TAGS 10   /* hostname, region, ... service_environment */
#define BENCH_TSBS_FIELDS 10 /* usage_user ... usage_guest_nice, int64 */

/* One parsed line of the file; the pointers point into the file's text. */
typedef struct bench_tsbs_row {
	const char *line;        /* the whole influx line */
	size_t len;
	const char *tag[BENCH_TSBS_TAGS];
	size_t taglen[BENCH_TSBS_TAGS];
	long long field[BENCH_TSBS_FIELDS];
	long long ts;            /* ns since the epoch */
} bench_tsbs_row;

extern const char *const bench_tsbs_tags[BENCH_TSBS_TAGS];
extern const char *const bench_tsbs_fields[BENCH_TSBS_FIELDS];

/* The TSBS cpu-only file --tsbs defaults to, from the repository's root:
 * the project's shared data, beside the clone (not in a clone alone). */
#define TSBS_DEFAULT_PATH "../shared/data/tsbs-cpu-only-100hosts-12h.influx.gz"

/* Read the gzip'd file at path (through zcat) and parse its first max
 * lines (SIZE_MAX: all).  *text receives the file's text, which the rows
 * point into, and *n the number of rows.  Returns the rows (free them,
 * then *text), or NULL when the file cannot be read (*text may still need
 * freeing; stderr says why and where the file comes from). */
bench_tsbs_row *bench_tsbs_load(const char *path, size_t max, size_t *n, char **text);

/* ---- the TSBS cpu-only query set (tsbsgen.c) ---- */

#define BENCH_TSBSQ_TYPES 15  /* single-groupby-1-1-1 ... groupby-orderby-limit */
#define BENCH_TSBSQ_MAX 2048  /* bytes of one query's text, at most */

/* What the queries are drawn from: the data's hosts, in the order they
 * first appear, and its time range [start_ns, end_ns): the first ts to
 * the last ts plus the reporting interval (last_ns, npoints: its last
 * ts and its points). */
typedef struct bench_tsbsq_scope {
	char **host;
	size_t nhosts, npoints;
	int64_t start_ns, end_ns, last_ns;
} bench_tsbsq_scope;

/* One query: TSBS's InfluxQL and, for the types that have one
 * (has_promql), a PromQL equivalent over [start_s, end_s] every step_s
 * seconds (/api/v1/query_range). */
typedef struct bench_tsbsq {
	char influxql[BENCH_TSBSQ_MAX];
	char promql[BENCH_TSBSQ_MAX];
	int has_promql;
	int64_t start_s, end_s, step_s;
} bench_tsbsq;

/* The name of type (0 .. BENCH_TSBSQ_TYPES - 1), or NULL. */
const char *bench_tsbsq_name(int type);
/* The type named name, or -1. */
int bench_tsbsq_type(const char *name);
/* Whether type has a PromQL equivalent (single-groupby, cpu-max-all,
 * double-groupby). */
int bench_tsbsq_has_promql(int type);
/* The scope of the gzip'd TSBS file at path (read through zcat), or of
 * rows[0..n).  0, or -1 (no lines, out of memory; the file's said on
 * stderr).  Free with bench_tsbsq_scope_free. */
int bench_tsbsq_scope_file(const char *path, bench_tsbsq_scope *s);
int bench_tsbsq_scope_rows(const bench_tsbs_row *rows, size_t n, bench_tsbsq_scope *s);
void bench_tsbsq_scope_free(bench_tsbsq_scope *s);
/* Seed *state for the queries of type: the same seed, the same queries. */
void bench_tsbsq_seed(uint64_t *state, int type, uint64_t seed);
/* The next query of type over s, its random parameters drawn from
 * *state, into *q. */
void bench_tsbsq_make(const bench_tsbsq_scope *s, int type, uint64_t *state, bench_tsbsq *q);
/* --print-queries / --print-promql: n queries of type ("all": n of each,
 * each line "TYPE <TAB> QUERY") over the file at path, from seed, on
 * stdout: the InfluxQL, or (promql) "START END STEP <TAB> PROMQL".
 * 0, or -1 (an unknown type or an unreadable file, said on stderr). */
int bench_tsbsq_print(const char *path, const char *type, size_t n, uint64_t seed, int promql);

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
/* Open peer in a fresh directory, time bench_peer_load of r, close and
 * remove it; returns rows per second.  Exits on failure. */
double bench_peer_absorb(const bench_peer *peer, const bench_rows *r);

/* The LMDB peer's map size, bytes (8 GiB unless a workload needs more,
 * set before its open). */
extern size_t bench_lmdb_map_bytes;

extern const bench_peer bench_peer_hash;
extern const bench_peer bench_peer_lmdb;    /* name NULL when not built */
extern const bench_peer bench_peer_rocksdb; /* name NULL when not built */
extern const bench_peer bench_peer_rbtree;  /* peers_tree.c */
extern const bench_peer bench_peer_sqlite;  /* name NULL when not built */

#ifdef HAVE_LMDB
#include <lmdb.h>

/* What bench_peer_lmdb.open returns: the query workloads read the
 * environment directly with LMDB's cursors. */
typedef struct bench_lmdb {
	MDB_env *env;
	MDB_dbi dbi;
} bench_lmdb;
#endif

/* ---- CPU ceilings (ceiling.c) ---- */

#define BENCH_THREADS_MAX 64 /* threads of one LZO pass, at most */

/* The online CPUs (sysconf), at least 1. */
int bench_cpus(void);

/* One in-order walk of a table's filling trees. */
typedef struct bench_walk {
	double seconds;
	uint64_t rows, bytes; /* rows visited, their encoded bytes */
} bench_walk;

/* Visit every row of t's filling trees in key order, as a flush does
 * (the tree iterator and the row record, nothing decoded), timed, on the
 * calling thread.  Returns 0, or an error of ts__snapshot_take. */
int bench_walk_filling(ts_table *t, bench_walk *w);

/* Blocks held in memory: block i is bytes[off[i] .. off[i + 1]), raw[i]
 * bytes once decompressed (its length itself when it is raw). */
typedef struct bench_blocks {
	size_t n;
	unsigned char *bytes;
	size_t *off;          /* n + 1 offsets */
	size_t *raw;
	size_t max_raw;       /* the largest raw[i] */
	size_t skipped;       /* bench_blocks_stored: blocks stored raw, left out */
} bench_blocks;

/* Every block of t's on-disk tablets, read back and decompressed.
 * Returns 0, TS_ENOMEM or an error of ts__tablet_read_block. */
int bench_blocks_raw(ts_table *t, bench_blocks *b);
/* The stored (LZO1X-1 compressed) bytes of every LZO block of t's
 * on-disk tablets, as they lie in the files; blocks stored raw are
 * counted in b->skipped.  Returns 0, TS_ENOMEM, TS_EIO. */
int bench_blocks_stored(ts_table *t, bench_blocks *b);
void bench_blocks_free(bench_blocks *b);

/* What one LZO pass did: its wall time, bytes in and out in all. */
typedef struct bench_lzo {
	double seconds;
	uint64_t in, out;
	int threads;
} bench_lzo;

/* Compress (lzo1x_1_compress) or decompress (lzo1x_decompress_safe)
 * every block of b on threads threads (at most BENCH_THREADS_MAX), blocks
 * dealt round-robin, each thread with its own work memory and output
 * buffer; passes passes, the fastest in *best.  Returns 0, TS_ENOMEM, or
 * TS_EIO (LZO failed, a block did not decompress to its length, a thread
 * could not start). */
int bench_lzo_run(const bench_blocks *b, int compress, int threads, int passes, bench_lzo *best);

/* ---- servers over loopback (ingest.c; used by wire.c too) ---- */

#define BENCH_INGEST_BATCH 512          /* rows per request */
#define BENCH_INGEST_CLIENTS 2          /* connections, one request in flight each */
#define BENCH_INGEST_QUICK_ROWS 100000  /* --quick: the file's first rows */

/* One request, encoded before the clock starts, and the time its
 * response took. */
typedef struct bench_batch {
	char *body;
	size_t len;
	double seconds;
} bench_batch;

/* What bench_ingest_send measured. */
typedef struct bench_send {
	double seconds;          /* wall time of all the requests */
	double p50_us, p99_us;   /* request latency */
	double rss_mb;           /* the server's peak RSS (VmHWM) after them */
	double cpu_s;            /* the server's CPU time (user + system) during them */
} bench_send;

/* A free TCP port on 127.0.0.1, or -1. */
int bench_free_port(void);
/* Start argv (stdout and stderr to /dev/null) and wait until port
 * accepts; the pid, or -1 (the process killed). */
pid_t bench_server_start(char *const argv[], int port);
/* SIGTERM pid and reap it. */
void bench_server_stop(pid_t pid);
/* The peak RSS (VmHWM) of pid in MB, or -1. */
double bench_peak_rss_mb(pid_t pid);
/* The CPU time (user + system, every thread) pid has used, seconds; -1
 * when /proc cannot tell. */
double bench_server_cpu_seconds(pid_t pid);
/* The path of tsstored: beside this program (buf of size bytes). */
void bench_daemon_path(char *buf, size_t size);
/* Send b[0..nb) over BENCH_INGEST_CLIENTS connections to 127.0.0.1:port,
 * each waiting for its response before the next: http, whole HTTP
 * requests (a 2xx answer is success); else JSON lines to tsstored.
 * Fills out (rss of pid).  Returns 0, or -1 when a request failed (said
 * on stderr). */
int bench_ingest_send(bench_batch *b, size_t nb, int port, int http, pid_t pid, bench_send *out);
/* One whole HTTP request req (len bytes) on a connection of its own;
 * 0 when answered 2xx, else -1 (the answer on stderr). */
int bench_http_call(int port, const char *req, size_t len);
/* GET path from 127.0.0.1:port (Connection: close): the whole response,
 * headers and body, into buf (at most cap - 1 bytes, NUL-terminated).
 * 0 when answered 2xx, else -1. */
int bench_http_get(int port, const char *path, char *buf, size_t cap);
/* Free every body of b[0..nb), then b. */
void bench_batches_free(bench_batch *b, size_t nb);
/* rows[0..n) as tsstored's JSON-lines inserts into BENCH_TABLE's TSBS
 * form, BENCH_INGEST_BATCH rows each, *nb of them (free with
 * bench_batches_free); NULL when out of memory. */
bench_batch *bench_json_batches(const bench_tsbs_row *rows, size_t n, size_t *nb);
struct jconn;
struct json_t;
/* tsstored at tcp:127.0.0.1:port through the programs' one client
 * (common/client.c, which sends the token of $TSSTORE_TOKEN or
 * $TSSTORE_TOKEN_FILE when set); NULL after a message. */
struct jconn *bench_tsstored_connect(int port);
/* Send the request line body (len bytes, no newline) on c and wait for
 * its ok; 0, or -1 after a message.  reply: the ok line, or NULL. */
int bench_tsstored_call(struct jconn *c, const char *body, size_t len, struct json_t **reply);
/* Create the table "cpu" of the TSBS file's columns (key hostname, ts)
 * on c; 0, or -1 after a message. */
int bench_tsstored_create_cpu(struct jconn *c);

/* ---- workloads outside main.c ---- */

/* device.c: the device's sequential write bandwidth (fdatasync'd), MB/s,
 * and its sequential read bandwidth from a cold page cache, MB/s; each
 * measured and printed once per run, on first use. */
double bench_device_write_mbps(const bench_config *c);
double bench_device_read_mbps(const bench_config *c);
void bench_workload_device(const bench_config *c);
/* flush.c */
void bench_workload_flush(const bench_config *c, const bench_rows *r);
void bench_workload_bytes_per_row(const bench_config *c, const bench_rows *r);
/* latency.c */
void bench_workload_latency(const bench_config *c);
/* query.c: the query workloads (scan, range, latest, aggregate,
 * cold_scan; "query" names them all) on one table and one LMDB loaded
 * with the same rows.  Returns 0, or -1 when a tsstore query call failed
 * (reported on stderr; its results and targets are then missing). */
int bench_workload_query(const bench_config *c);
/* ingest.c: tsstored against VictoriaMetrics ingesting the TSBS file over
 * loopback (tsstored is looked for beside tsstore-bench). */
void bench_workload_ingest(const bench_config *c);
/* wire.c: line protocol over HTTP into tsstored, VictoriaMetrics and
 * InfluxDB 1.x (workload ingest_http); Prometheus remote write into
 * tsstored and VictoriaMetrics (remote_write).  Each returns 0, or -1
 * when tsstored's side failed. */
int bench_workload_ingest_http(const bench_config *c);
int bench_workload_remote_write(const bench_config *c);
/* wire.c, for tsbsquery.c: start engine ("tsstored", "victoriametrics",
 * "influxdb": InfluxDB with the database BENCH_INFLUX_DB made) on dir and
 * 127.0.0.1:port, ready for writes, its pid in *pid; 0, or -1 (said on
 * stderr).  And rows[0..n) as line protocol requests to target (e.g.
 * "/write"), BENCH_INGEST_BATCH lines each, *nb of them (free with
 * bench_batches_free); NULL when out of memory. */
#define BENCH_INFLUX_DB "bench"
int bench_wire_start(const char *engine, const char *dir, int port, pid_t *pid);
bench_batch *bench_wire_lines(const bench_tsbs_row *rows, size_t n, const char *target,
                              size_t *nb);
/* tsbsquery.c: the TSBS query types' latency through /query (InfluxDB
 * 1.x, tsstored once it answers /query) and, for the types with a PromQL
 * equivalent, VictoriaMetrics' /api/v1/query_range.  Returns 0, or -1
 * when tsstored answered a query wrong or failed (a tsstored without
 * /query is reported "not yet", not a failure). */
int bench_workload_tsbs_queries(const bench_config *c);
/* fuse.c: a day of rows read through tsstore-fuse against tsstore query. */
void bench_workload_fuse(const bench_config *c);
/* sql.c: queries through the SQLite virtual table against the C API. */
void bench_workload_sql(const bench_config *c);
/* sweep.c: absorb against batch size and against row size. */
void bench_workload_absorb_sweep(const bench_config *c);
/* firstrow.c: first-row latency of a 1-host query against the number of
 * on-disk tablets in its period.  Returns 0, or -1 when a tsstore call
 * failed or a first row was wrong (reported). */
int bench_workload_first_row(const bench_config *c);
/* corrections.c: issue 28's figures -- scan, range and latest over a
 * table with 0 % and 1 % of its rows deleted or replaced against an
 * append-only one, the latency of deleting one host's day, and changes
 * over a day.  A figure whose call answers TS_ENOTSUP is reported "not
 * built".  Returns 0, or -1 when a tsstore call failed otherwise or
 * answered wrong (reported). */
int bench_workload_corrections(const bench_config *c);
/* rollups.c: issue 29's figures -- an aggregate at 1-hour windows over
 * --rollup-days days of every host answered from a 1-minute rollup
 * against the raw rows (and as ts_aggregate_open chooses, and through a
 * rollup of the rollup), every answer checked; ingest with a 1-minute
 * rollup kept and caught up against without.  Returns 0, or -1 when a
 * tsstore call failed or answers differed (reported). */
int bench_workload_rollups(const bench_config *c);
/* standby.c: issue 33's figures -- the TSBS file ingested by tsstored
 * alone and with a second tsstored --follow of it (asynchronous), runs
 * alternating; rows/s of each and their ratio, the standby's lag sampled
 * during the load, and how long it takes to catch up after.  Returns 0,
 * or -1 when a daemon failed (reported). */
int bench_workload_standby(const bench_config *c);
/* sustained.c: issue 32's target 4 -- --sustained-rows rows (more than
 * the log holds) into tsstore with the library's defaults, LMDB and
 * RocksDB, the hash table on the first --rows: rows/s, the inserting
 * thread's rows per CPU second, the slowest second, the slowest batch,
 * the rows of each second (the throughput over time). */
void bench_workload_sustained(const bench_config *c);
/* tsbs.c: the TSBS query set over the TSBS file, tsstore against SQLite.
 * Returns 0, or -1 when a tsstore call failed or the engines' answers
 * differed (reported). */
int bench_workload_tsbs(const bench_config *c);

#endif
