/*
 * ingest.h -- line protocol points into tsstore tables (ingest.c): the
 * mapping of docs/ingest-mapping.md, for the HTTP write endpoints.
 *
 * One struct tsd_ingest per database, shared by every worker thread: it
 * caches the table handles and counts what came in and what was refused.
 * tsd_ingest_lines is what a /write handler calls, on a worker thread,
 * with the whole (decompressed) body.  Only include/tsstore.h is used
 * from the library.
 */
#ifndef TSSTORE_DAEMON_INGEST_H
#define TSSTORE_DAEMON_INGEST_H

#include <stddef.h>
#include <stdint.h>

#include <tsstore.h>

#include "jbuf.h"
#include "wire/lineproto.h"

/* Longest message of a result (tsd_ingest_result.error), NUL included. */
#define TSD_INGEST_MESSAGE_MAX 1024
/* Bytes of a bad line quoted in its message. */
#define TSD_INGEST_QUOTE_MAX 200

struct tsd_ingest_options {
	/* TTL of the tables the mapping creates, ns; 0 keeps rows forever
	 * (the daemon's ingest-default-ttl, default 0). */
	int64_t default_ttl;
	/* Points more than this far ahead of now are refused (the
	 * database's max_future; 0: no check before the library's). */
	int64_t max_future;
	/* Where the once-per-table-and-cause messages go (one line each,
	 * no newline); NULL: standard error.  Called from worker threads. */
	void (*log)(void *arg, const char *msg);
	void *log_arg;
};

/* Why a line was refused (the counters' labels, tsd_ingest_reason_name). */
enum tsd_ingest_reason {
	TSD_REJECT_SYNTAX,      /* not line protocol (lineproto.c's reason) */
	TSD_REJECT_TYPE,        /* a field's type conflicts with its column */
	TSD_REJECT_RANGE,       /* an unsigned above INT64_MAX, a float out of range */
	TSD_REJECT_TAG,         /* a tag that is no key column of the table */
	TSD_REJECT_DUPLICATE,   /* a name twice in a line, or a duplicate key */
	TSD_REJECT_TIME,        /* ts too far ahead, or older than the TTL */
	TSD_REJECT_SCHEMA,      /* the table or a column could not be made */
	TSD_REJECT_STORE,       /* the library refused the row for another reason */
	TSD_REJECT_NREASONS
};

/* "syntax", "type", "range", "tag", "duplicate", "time", "schema",
 * "store". */
const char *tsd_ingest_reason_name(enum tsd_ingest_reason r);

/* A table a call committed rows to, and the table's version after its
 * last commit of them (ts_insert_versioned): what sync=replica waits
 * for a standby to hold (http.c). */
#define TSD_INGEST_COMMITS_MAX 64
struct tsd_ingest_commit {
	char table[TS_NAME_MAX + 1];
	uint64_t version;
};

/* What one call did. */
struct tsd_ingest_result {
	uint64_t points;                 /* good lines parsed */
	uint64_t stored;                 /* rows stored */
	uint64_t ignored;                /* points whose key the table held already (or an
	                                  * earlier line had), skipped by its duplicate
	                                  * policy `ignore`: not an error */
	uint64_t rejected;               /* lines refused */
	uint64_t by_reason[TSD_REJECT_NREASONS];
	uint64_t rows_missing_tags;      /* points that left a key column "" */
	uint64_t first_bad_line;         /* number (from 1) of the first refused line, 0: none */
	/* Its message, "line 3: unable to parse 'cpu,host=a': no fields",
	 * or the storage failure's when code is not TS_EINVAL. */
	char error[TSD_INGEST_MESSAGE_MAX];
	int code;                        /* as tsd_ingest_lines returns */
	/* The tables committed to; commits_over: more than
	 * TSD_INGEST_COMMITS_MAX of them, the rest not listed. */
	struct tsd_ingest_commit commits[TSD_INGEST_COMMITS_MAX];
	int ncommits, commits_over;
};

/* The counters since tsd_ingest_open (for stats and /metrics). */
struct tsd_ingest_stats {
	uint64_t requests;
	uint64_t rows_stored;
	uint64_t duplicates_ignored;
	uint64_t lines_rejected[TSD_REJECT_NREASONS];
	uint64_t rows_missing_tags;      /* points that left a key column "" */
	uint64_t tables_created;
	uint64_t columns_added;
};

struct tsd_ingest;

/*
 * tsd_ingest_open -- the ingest state for db (which must outlive it).
 * opts: may be NULL (all defaults: TTL 0, no future check, stderr).
 * Returns 0 with *out set, or TS_ENOMEM.
 */
int tsd_ingest_open(ts_db *db, const struct tsd_ingest_options *opts, struct tsd_ingest **out);

/* From now on open tables in db (a promoted standby's writer, which
 * outlives in); the handles cached so far are kept, unused, until
 * tsd_ingest_close.  Any thread. */
void tsd_ingest_set_db(struct tsd_ingest *in, ts_db *db);

/* Close the table handles and free the state; no call may be running.
 * NULL allowed. */
void tsd_ingest_close(struct tsd_ingest *in);

/*
 * tsd_ingest_lines -- store the points of the line protocol body
 * body[0..len), timestamps in precision prec: each good line becomes a
 * row of the table its measurement maps to (created, or given new
 * columns, as docs/ingest-mapping.md says), every table's rows in one
 * ts_insert_counted per table (a table created here ignores keys it holds
 * already: a retried batch is idempotent, res->ignored counts them); a
 * bad line is refused alone and counted, the good ones are stored anyway
 * (InfluxDB's partial write).  Lines without
 * a timestamp all take the same instant, the database clock's now at the
 * call.  Any thread; calls may run at once.
 * res: receives what was done (always filled, also on failure).
 * Returns 0 when every line was stored (or ignored); TS_EINVAL when some lines were
 * refused (res->first_bad_line and res->error say the first, the others
 * are stored: an HTTP 400); or the storage failure that kept the rows of
 * at least one table from being stored (TS_EIO, TS_ENOSPC, TS_ENOMEM,
 * TS_EREADONLY, TS_ECLOSED: an HTTP 5xx), res->error saying which table
 * and why; the other tables' rows may have been stored.
 */
int tsd_ingest_lines(struct tsd_ingest *in, const char *body, size_t len,
                     enum lp_precision prec, struct tsd_ingest_result *res);

/* A consistent-enough copy of the counters (each read atomically). */
void tsd_ingest_stats_get(struct tsd_ingest *in, struct tsd_ingest_stats *out);

/* Append the counters to the JSON object being written in b, as the
 * member ,"ingest":{"requests":N,"rows_stored":N,"duplicates_ignored":N,
 * "rejected":{"syntax":N,
 * ...every reason},"rows_missing_tags":N,"tables_created":N,
 * "columns_added":N} (the daemon's stats op). */
void tsd_ingest_stats_json(struct tsd_ingest *in, struct jbuf *b);

/*
 * tsd_ingest_name -- the tsstore name for the line protocol name
 * p[0..n) (unescaped), the mapping's rule: bytes other than [A-Za-z0-9_]
 * become '_'; a leading digit, and a column named "ts" in any case (the
 * timestamp column), get a '_' in front; a table named "LOCK" too;
 * longer than TS_NAME_MAX: the first 55 bytes, '_' and 8 hex digits of
 * the name's FNV-1a hash.  column: 1 for a column name, 0 for a table.
 * out: room for TS_NAME_MAX + 1 bytes.  Returns out.
 */
char *tsd_ingest_name(const char *p, size_t n, int column, char *out);

/* ---- For the other protocols mapped onto the same tables ---------------
 * Prometheus remote write (promwrite.c) shares the table handles, the
 * table creation rule, the once-per-table log and the counters. */

/* Add what one request did (res) to the counters, as tsd_ingest_lines
 * does for its own: one request, the rows stored, ignored and refused by
 * reason. */
void tsd_ingest_account(struct tsd_ingest *in, const struct tsd_ingest_result *res);

/*
 * tsd_ingest_create -- create table name as the mapping creates tables:
 * columns cols[0..ncols), key keys[0..nkeys) (ts last), TTL
 * ingest-default-ttl, duplicate policy ignore; counted in tables_created.
 * Returns 0, also when the table exists already (made meanwhile by
 * another request: its schema may differ); another ts_create_keyed_v2
 * error (ts_errmsg says why).
 */
int tsd_ingest_create(struct tsd_ingest *in, const char *name, const ts_column *cols, int ncols,
                      const char *const *keys, int nkeys);

/*
 * tsd_ingest_table -- the cached handle of table name (opened on first
 * use, closed by tsd_ingest_close: never close it).  Returns 0 with *out
 * set; TS_ENOENT when there is no such table (*out NULL); another error
 * of ts_table_open.
 */
int tsd_ingest_table(struct tsd_ingest *in, const char *name, ts_table **out);

/* Forget the cached handle of table name after it answered TS_ECLOSED
 * (the table was dropped): the next tsd_ingest_table opens it again. */
void tsd_ingest_forget(struct tsd_ingest *in, const char *name);

/* The bits of tsd_ingest_once free for other protocols: from this one up
 * (ingest.c's own causes use the bits below). */
#define TSD_INGEST_ONCE_OTHER (1u << 8)

/* Whether cause (one bit, TSD_INGEST_ONCE_OTHER or above) is met for the
 * first time for table name (an open table; 1 when it is not cached):
 * the once-per-table-and-cause rule of the log.  Marks it met. */
int tsd_ingest_once(struct tsd_ingest *in, const char *name, unsigned cause);

/* Log msg (one line, no newline) where the ingest logs (the options'
 * log, or standard error). */
void tsd_ingest_log(struct tsd_ingest *in, const char *msg);

/* The column of s called name (case blind, as the library compares
 * names), or -1. */
int tsd_ingest_find_column(const ts_schema *s, const char *name);

/* The position of column c in s's key, or -1. */
int tsd_ingest_key_position(const ts_schema *s, int c);

/* Whether s[0..n) is valid UTF-8 (s may be NULL when n is 0). */
int tsd_ingest_utf8_ok(const void *s, size_t n);

/* The reason a row the library refused with code counts under. */
enum tsd_ingest_reason tsd_ingest_reason_of(int code);

/* What tsd_ingest_insert says of a row the library refused: its index in
 * the batch, the library's code, and why (its message without "row N: "). */
typedef void (*tsd_ingest_refused_fn)(void *arg, size_t row, int rc, const char *why);

/*
 * tsd_ingest_insert -- insert rows[0..n) (ncols values each, in schema
 * version) into t as one batch; where the library refuses one row (a
 * duplicate under reject, a time out of range, a value that does not
 * fit), insert the rows before it, tell refused, and go on after it;
 * into a rollup, which clients cannot write, every row is refused
 * (TS_EREADONLY, the library's message).
 * The rows stored and the duplicates ignored are added to res.  Returns
 * 0, or a storage failure (its message in ts_errmsg) with *unstored the
 * rows from which nothing was stored.
 */
int tsd_ingest_insert(ts_table *t, uint32_t version, const ts_value *rows, size_t n, size_t ncols,
                      struct tsd_ingest_result *res, tsd_ingest_refused_fn refused, void *arg,
                      size_t *unstored);

/* The database clock's now (ts_now), ns. */
int64_t tsd_ingest_now(struct tsd_ingest *in);

/* The options' max_future (0: no check before the library's). */
int64_t tsd_ingest_max_future(const struct tsd_ingest *in);

#endif /* TSSTORE_DAEMON_INGEST_H */
