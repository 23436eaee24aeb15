/*
 * tsstore.h -- the whole public API of libtsstore.
 *
 * libtsstore stores tables of time-series rows the way LittleTable does:
 * rows are partitioned by timestamp period into tablets and sorted by a
 * hierarchical primary key inside each tablet; TTL is the only deletion;
 * a crash loses at most a suffix of inserts.  What is declared here is the
 * contract; anything not declared here is not API.
 *
 * Conventions
 *   - Handles are opaque: ts_db (an open database directory), ts_table (one
 *     table of it), ts_cursor (a result stream over one snapshot).
 *   - Every function that can fail returns int: 0 on success or a negative
 *     TS_E* code.  ts_strerror() describes a code, ts_errname() gives its
 *     protocol name ("EDUPKEY"), and ts_errmsg() gives the detailed message
 *     of the calling thread's last failure (which row, which column, why).
 *     Nothing is reported through errno alone.
 *   - Timestamps are int64 nanoseconds since the Unix epoch, UTC.
 *     Durations are int64 nanoseconds.
 *   - Values are passed as ts_value: a type tag and a union.  Strings and
 *     blobs point at memory owned by the caller (on input) or by the handle
 *     that produced them (on output, valid until the next call on it).
 *   - Entry points whose implementation has not landed yet return
 *     TS_ENOTSUP and say so in ts_errmsg().
 *   - Misuse: every function that returns int returns TS_EINVAL, with
 *     ts_errmsg() naming the function and the argument, when given a
 *     NULL handle, a NULL pointer it must read or write through, or a
 *     count with a NULL array (nprefix > 0 with prefix NULL, ...).  The
 *     functions without an error code accept NULL as documented at each.
 *
 * Thread safety: a ts_db and its ts_table handles may be used from any
 * number of threads.  Inserts into one table are serialised (single writer
 * per table); queries never block inserts and inserts never block queries.
 * A ts_cursor belongs to one thread at a time.
 *
 * Closing under use: the last ts_table_close of a table waits for the
 * calls other threads are making on it, and ts_close for every call on
 * the database and its tables; once either began, new calls on what it
 * closes fail with TS_ECLOSED.  A cursor keeps its table alive after
 * ts_table_close (and after ts_drop); ts_close refuses with TS_EBUSY
 * while any cursor is open.  Calls made after ts_close returned use freed
 * memory: that, and a second ts_close, cannot be detected.
 */
#ifndef TSSTORE_H
#define TSSTORE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(TS_BUILDING_LIBRARY) && defined(__GNUC__)
#define TS_EXTERN __attribute__((visibility("default")))
#else
#define TS_EXTERN
#endif

/* ------------------------------------------------------------------ */
/* Versions                                                             */
/* ------------------------------------------------------------------ */

#define TS_VERSION_MAJOR 0
#define TS_VERSION_MINOR 1
#define TS_VERSION_PATCH 0
#define TS_VERSION_STRING "0.1.0"
/* One number that grows with every release: major*10000+minor*100+patch. */
#define TS_VERSION_NUMBER \
	(TS_VERSION_MAJOR * 10000 + TS_VERSION_MINOR * 100 + TS_VERSION_PATCH)

/*
 * ts_version -- the version of the library actually linked.
 * Returns a static string such as "0.1.0"; compare with TS_VERSION_STRING
 * to detect a header/library mismatch.
 */
TS_EXTERN const char *ts_version(void);

/* ------------------------------------------------------------------ */
/* Errors                                                               */
/* ------------------------------------------------------------------ */

/* Error codes.  Values are stable: they are part of the ABI. */
enum {
	TS_OK = 0,
	TS_EINVAL = -1,     /* invalid argument or malformed text */
	TS_ENOMEM = -2,     /* out of memory */
	TS_EIO = -3,        /* an operating-system I/O call failed */
	TS_ENOSPC = -4,     /* the disk is full */
	TS_ENOENT = -5,     /* no such database, table or column */
	TS_EEXIST = -6,     /* the table or column already exists */
	TS_ELOCKED = -7,    /* another process holds the database for writing */
	TS_EREADONLY = -8,  /* the handle was opened read-only */
	TS_ECORRUPT = -9,   /* a file failed its checksum or invariants */
	TS_EVERSION = -10,  /* a file has a format version this build cannot read */
	TS_ESCHEMA = -11,   /* an invalid schema or schema change */
	TS_ETYPE = -12,     /* a value has the wrong type for its column */
	TS_ERANGE = -13,    /* a value is out of its type's range */
	TS_EDUPKEY = -14,   /* the primary key already exists */
	TS_EFUTURE = -15,   /* ts is more than max_future ahead of now */
	TS_EEXPIRED = -16,  /* ts is older than now - TTL */
	TS_ENOTSUP = -17,   /* not implemented (yet) or not supported */
	TS_EBUSY = -18,     /* the object is in use */
	TS_EPROTO = -19,    /* a protocol violation (used by tsstored) */
	TS_ETOOBIG = -20,   /* a value, row or line exceeds its limit */
	TS_ECLOSED = -21,   /* the handle is closing or was dropped */
};

/*
 * ts_strerror -- a one-line English description of an error code.
 * Returns a static string; unknown codes give "unknown error".
 */
TS_EXTERN const char *ts_strerror(int code);

/*
 * ts_errname -- the symbolic name of an error code without the "TS_"
 * prefix ("EDUPKEY"), as used by the protocol.  Returns a static string;
 * unknown codes give "EUNKNOWN", 0 gives "OK".
 */
TS_EXTERN const char *ts_errname(int code);

/*
 * ts_errmsg -- the detailed message of the calling thread's last failure
 * in libtsstore, e.g. "row 17: duplicate key (\"n1\", 7,
 * 2026-11-21T10:00:00Z)".  The db argument is accepted for symmetry and may
 * be NULL (the message is per thread, so failures of ts_open, which has no
 * db yet, are reported too).  Returns a thread-local string valid until the
 * next failing call in the same thread; "" when nothing failed yet.
 */
struct ts_db;
TS_EXTERN const char *ts_errmsg(const struct ts_db *db);

/* ------------------------------------------------------------------ */
/* Types and values                                                     */
/* ------------------------------------------------------------------ */

/* Column types.  TS_NONE marks a missing value (the column default is
 * used; a missing ts takes the current time). */
typedef enum ts_type {
	TS_NONE = 0,
	TS_INT32 = 1,
	TS_INT64 = 2,
	TS_DOUBLE = 3,
	TS_TIMESTAMP = 4, /* int64 ns since the Unix epoch, UTC */
	TS_STRING = 5,    /* UTF-8, may contain NUL */
	TS_BLOB = 6,      /* bytes */
} ts_type;

/* A typed value.  i holds int32, int64 and timestamp values; d doubles;
 * s strings and blobs (not NUL-terminated; len in bytes). */
typedef struct ts_value {
	ts_type type;
	union {
		int64_t i;
		double d;
		struct {
			const void *ptr;
			size_t len;
		} s;
	} v;
} ts_value;

/* Convenience constructors. */
static inline ts_value ts_none(void) { ts_value x; x.type = TS_NONE; x.v.i = 0; return x; }
static inline ts_value ts_int32(int32_t i) { ts_value x; x.type = TS_INT32; x.v.i = i; return x; }
static inline ts_value ts_int64(int64_t i) { ts_value x; x.type = TS_INT64; x.v.i = i; return x; }
static inline ts_value ts_double(double d) { ts_value x; x.type = TS_DOUBLE; x.v.d = d; return x; }
static inline ts_value ts_timestamp(int64_t ns) { ts_value x; x.type = TS_TIMESTAMP; x.v.i = ns; return x; }
static inline ts_value ts_blob(const void *p, size_t n) { ts_value x; x.type = TS_BLOB; x.v.s.ptr = p; x.v.s.len = n; return x; }
static inline ts_value ts_stringn(const char *p, size_t n) { ts_value x; x.type = TS_STRING; x.v.s.ptr = p; x.v.s.len = n; return x; }

/*
 * ts_string -- a string value from a NUL-terminated C string.
 */
TS_EXTERN ts_value ts_string(const char *s);

/*
 * ts_type_name / ts_type_parse -- "int32", "int64", "double", "timestamp",
 * "string", "blob".  ts_type_name returns a static string ("none" for
 * TS_NONE, "?" otherwise unknown).  ts_type_parse stores the type in *out
 * and returns 0, or TS_EINVAL for an unknown name.
 */
TS_EXTERN const char *ts_type_name(ts_type type);
TS_EXTERN int ts_type_parse(const char *name, ts_type *out);

/* ------------------------------------------------------------------ */
/* Text forms shared by the programs                                    */
/* ------------------------------------------------------------------ */

/* Room for any output of ts_time_format, NUL included. */
#define TS_TIME_BUFSZ 40
/* Room for any output of ts_duration_format, NUL included. */
#define TS_DURATION_BUFSZ 32

/*
 * ts_time_parse -- parse a timestamp: RFC 3339 ("2026-11-21T10:00:00Z",
 * "2026-11-21T10:00:00.123456789+02:00"; 'T' may be 't' or ' ', 'Z' may
 * be 'z'; up to 9 fractional digits); a date alone ("2026-11-25", its
 * midnight UTC); a decimal integer of nanoseconds since the epoch
 * (optionally negative); an epoch count with a unit ("1732550000s",
 * also ms, us, ns); or a time relative to now: "now", "now-15m",
 * "now+5m", "-1h", "+30s" (a sign, or "now" and a sign, then a duration
 * as ts_duration_parse reads it).  "-1h" is an hour ago while "-1" is
 * 1 ns before the epoch; an epoch count takes no sign.
 * "now" is the clock a database opened without a clock option reads:
 * $TSSTORE_NOW when set, else the real-time clock (use ts_time_parse_at
 * to give it, e.g. ts_now(db)); the clock is read only for a relative
 * text.
 * text: NUL-terminated input.  out: receives nanoseconds since the epoch.
 * Returns 0; TS_EINVAL for malformed text (ts_errmsg says where) or a
 * malformed $TSSTORE_NOW; TS_ERANGE when the instant does not fit in
 * int64 nanoseconds.
 */
TS_EXTERN int ts_time_parse(const char *text, int64_t *out);

/*
 * ts_time_parse_at -- ts_time_parse with "now" given: relative times
 * ("now", "now-15m", "-1h") are taken from now (ns since the epoch).
 * The same results otherwise.  (Since libtsstore 1.1.)
 */
TS_EXTERN int ts_time_parse_at(const char *text, int64_t now, int64_t *out);

/*
 * ts_time_format -- format ns as RFC 3339 UTC with the shortest exact
 * fraction: "2026-11-21T10:00:00Z", "2026-11-21T10:00:00.5Z",
 * "2026-11-21T10:00:00.000000001Z".
 * buf must hold size >= TS_TIME_BUFSZ bytes.  Returns 0, or TS_EINVAL when
 * size is too small.
 */
TS_EXTERN int ts_time_format(int64_t ns, char *buf, size_t size);

/*
 * ts_duration_parse -- parse "<n><unit>", unit one of ns us ms s m h d w
 * (a week is 7 days); also "0" alone.  n is a non-negative decimal integer.
 * Returns 0 with *out in nanoseconds; TS_EINVAL for malformed text;
 * TS_ERANGE when the result exceeds int64 nanoseconds.
 */
TS_EXTERN int ts_duration_parse(const char *text, int64_t *out);

/*
 * ts_duration_format -- the inverse of ts_duration_parse: the largest unit
 * that divides ns exactly ("90m", "1d", "1500ms", "0s").  ns must be >= 0.
 * buf must hold size >= TS_DURATION_BUFSZ.  Returns 0, or TS_EINVAL.
 */
TS_EXTERN int ts_duration_format(int64_t ns, char *buf, size_t size);

/* ------------------------------------------------------------------ */
/* Schemas                                                              */
/* ------------------------------------------------------------------ */

/* Limits of the data model (DESIGN.md section 2). */
#define TS_NAME_MAX 64          /* longest table or column name, bytes */
#define TS_COLUMNS_MAX 1024     /* most columns in a table */
#define TS_KEY_COLUMNS_MAX 16   /* most primary-key columns, ts included */
#define TS_VALUE_MAX (1u << 24) /* longest string or blob value, bytes */
/* Longest string or blob column default, bytes.  Every schema version of a
 * table repeats all its defaults in the table's descriptor, so defaults are
 * kept far smaller than values. */
#define TS_COLUMN_DEFAULT_MAX (1u << 16)

/* One column: name, type and default.  A default of type TS_NONE means the
 * type's zero value: 0, 0.0, "" or the empty blob (for ts: now). */
typedef struct ts_column {
	const char *name;
	ts_type type;
	ts_value dflt;
} ts_column;

/*
 * What an insert does with a row whose primary key the table already
 * holds, or that an earlier row of the same batch has (DESIGN.md section
 * 2: keys are unique, and a table's policy says how).  A table's policy
 * is set by ts_create (ts_schema.on_duplicate) or ts_create_keyed_v2,
 * changed by ts_alter_on_duplicate and read back by ts_table_schema.
 */
typedef enum ts_on_duplicate {
	TS_ON_DUPLICATE_REJECT = 0, /* the batch fails with TS_EDUPKEY and stores
	                             * nothing (the default) */
	TS_ON_DUPLICATE_IGNORE = 1, /* the stored row (or the batch's earlier
	                             * one) stays; the duplicate is skipped and
	                             * the rest of the batch stored: a retried
	                             * batch is idempotent */
	TS_ON_DUPLICATE_REPLACE = 2, /* the new row replaces the stored one (or
	                              * the batch's earlier one): the newest
	                              * write wins in every read -- queries
	                              * either way, latest, aggregates -- and
	                              * across flushes and merges
	                              * (docs/corrections.md section 2).  A table
	                              * that ever had it, or took a batch under
	                              * it (ts_insert_policy), has a DESCRIPTOR
	                              * of format version 5, which older builds
	                              * refuse (TS_EVERSION) */
} ts_on_duplicate;

/*
 * ts_on_duplicate_name -- "reject", "ignore" or "replace" ("?" for any
 * other value).
 * ts_on_duplicate_parse -- the reverse: returns 0, or TS_EINVAL for any
 * other text (ts_errmsg names it).
 */
TS_EXTERN const char *ts_on_duplicate_name(ts_on_duplicate policy);
TS_EXTERN int ts_on_duplicate_parse(const char *text, ts_on_duplicate *out);

/*
 * A table's schema.  columns[0..ncolumns) in row order; key[0..nkey) holds
 * the column index of each primary-key column in key order, and the last
 * one is the column "ts" of type timestamp.  ttl is in ns, 0 = forever.
 * version counts schema changes (1 for a new table).  on_duplicate is the
 * table's duplicate policy; zero, what a zero-filled or designated
 * initialiser gives, is TS_ON_DUPLICATE_REJECT.  (On LP64 systems it
 * takes what was the struct's tail padding: sizeof(ts_schema) is
 * unchanged.)
 */
typedef struct ts_schema {
	int ncolumns;
	const ts_column *columns;
	int nkey;
	const int *key;
	int64_t ttl;
	uint32_t version;
	ts_on_duplicate on_duplicate;
} ts_schema;

/*
 * ts_name_valid -- whether name matches [A-Za-z_][A-Za-z0-9_]{0,63}.
 * Returns 1 or 0.
 */
TS_EXTERN int ts_name_valid(const char *name);

/* ------------------------------------------------------------------ */
/* Databases                                                            */
/* ------------------------------------------------------------------ */

typedef struct ts_db ts_db;
typedef struct ts_table ts_table;
typedef struct ts_cursor ts_cursor;

/* Open flags. */
#define TS_OPEN_CREATE 0x1   /* create the directory if it does not exist */
#define TS_OPEN_READONLY 0x2 /* take no lock; refuse every change */
#define TS_OPEN_NOMERGE 0x4  /* never merge tablets in the background
                              * (bulk loads, benchmarks); ts_merge still does */

/* Durability modes (DESIGN.md section 2). */
typedef enum ts_sync_mode {
	TS_SYNC_NONE = 0,     /* a process crash loses nothing; power loss may */
	TS_SYNC_INTERVAL = 1, /* at most sync_interval of inserts lost */
	TS_SYNC_COMMIT = 2,   /* ts_insert returns once its batch is durable */
} ts_sync_mode;

/* A clock: returns now in ns since the epoch. */
typedef int64_t (*ts_clock_fn)(void *arg);

/*
 * Options for ts_open.  Initialise with ts_options_init() and change what
 * you need; a NULL options pointer means all defaults.
 */
typedef struct ts_options {
	unsigned flags;             /* TS_OPEN_* */
	ts_sync_mode sync;          /* default TS_SYNC_INTERVAL */
	int64_t sync_interval;      /* ns, default 1 s */
	int64_t max_future;         /* ns, default 1 day */
	int64_t flush_size;         /* bytes of a filling tablet, default 16 MB */
	int64_t flush_age;          /* ns, default 10 min */
	int64_t merge_max_size;     /* bytes, default 128 MB */
	int64_t merge_delay;        /* ns after a flush, default 90 s */
	ts_clock_fn clock;          /* NULL: TSSTORE_NOW if set, else real time */
	void *clock_arg;
	int64_t block_cache_size;   /* bytes of decompressed tablet blocks kept
	                             * for reads (and, in spare room, those
	                             * flushes of tables queried in the last
	                             * ten minutes write), default a sixteenth of the
	                             * memory (physical, or the cgroup's limit
	                             * when lower), at least 64 MiB and at most
	                             * 4 GiB; 0 = none */
	int64_t log_cap;            /* bytes of a table's log not yet flushed
	                             * past which ts_insert fails with TS_ENOSPC
	                             * naming the cause (e.g. a flush that keeps
	                             * failing), default 8 GiB; from an eighth
	                             * of it on, every filling tablet is
	                             * flushed and inserts slow down in
	                             * proportion to the log past that (at
	                             * most 16 us a row), and from three
	                             * quarters on they wait for the flushes
	                             * (at most 10 s each) */
	/* Where the library reports what its background work (flushes,
	 * merges, expiry) could not do: called once per distinct cause with
	 * a one-line message (the same failure again is only counted, in
	 * ts_table_stats); and each tablet quarantined, with the table, the
	 * file and the damage found.  NULL: the message goes to stderr.  It is called
	 * from the library's maintenance thread, or from a ts_flush or
	 * ts_merge, with that table's flush or merge lock held: it must not
	 * call back into the library on the same table (ts_flush or ts_merge
	 * there would wait for ever); copy the message and return. */
	void (*log)(void *arg, const char *msg);
	void *log_arg;
	int64_t log_segment_size;   /* bytes of each log segment file's data, a
	                             * power of two from 1 MiB to 64 MiB, default
	                             * 64 MiB: a table's log takes this much disk
	                             * (and a page) at its first insert and at each
	                             * new segment.  No encoded row may be larger
	                             * than a segment less its 8-byte record
	                             * header, nor than 32 MiB: inserts of larger
	                             * rows fail TS_ETOOBIG, and so do creates and
	                             * alters whose column defaults alone make a
	                             * larger row.  For
	                             * logs begun from now on (new tables); a
	                             * table keeps the size its log began with.
	                             * A read-only handle ignores it: it reads
	                             * the size from the log's segment headers */
	/* The maintenance scheduler (background flushes, expiry and merges;
	 * lib/maint.c).  0 in any of them means its default. */
	int64_t merge_slice_rows;   /* rows a merge writes between two looks at
	                             * due flushes, close and the foreground;
	                             * default 4096 */
	int64_t merge_rollover_spread; /* ns: a period that grew (4-hour
	                             * tablets joining their day) merges after a
	                             * pseudo-random delay below this, so that
	                             * many tables do not all merge at midnight;
	                             * default 30 min */
	int64_t maint_busy_window;  /* ns: foreground work (a committed insert,
	                             * a read) makes background merges yield for
	                             * this long after it; default 100 ms */
	int64_t maint_busy_share;   /* percent, 1 to 100: the share of the time
	                             * background merges may take while the
	                             * foreground is busy (they take all of it
	                             * when it is idle; flushes are never held
	                             * back); default 50 */
	int64_t flush_threads;      /* threads that compress a flush's blocks,
	                             * the flushing one included: the others
	                             * compress while it walks the tree and
	                             * writes, the file unchanged; 1: the
	                             * flushing thread alone; default (0) the
	                             * online CPUs, at most 8 (the most) */
} ts_options;

/*
 * ts_options_init -- fill *opts with the defaults listed in ts_options
 * (nothing when opts is NULL).
 */
TS_EXTERN void ts_options_init(ts_options *opts);

/*
 * ts_sync_mode_parse -- "none", "interval" or "commit" to a ts_sync_mode.
 * Returns 0, or TS_EINVAL for any other text.
 */
TS_EXTERN int ts_sync_mode_parse(const char *text, ts_sync_mode *out);

/*
 * ts_open -- open the database in directory path.
 * Read-write opens take an exclusive flock on path/LOCK, held until
 * ts_close; read-only opens take no lock and may run beside a writer in
 * another process.  When opts is NULL the defaults apply; when opts->clock
 * is NULL and the environment variable TSSTORE_NOW holds a timestamp, the
 * clock is frozen at that instant (for tests).
 * path: the database directory.  opts: options or NULL.  out: receives the
 * handle, NULL on failure.
 * ts_open reads no table's files: a damaged table is reported when it is
 * opened (ts_table_open), so one bad table never keeps the others out.
 * Returns 0; TS_ENOENT when path does not exist and TS_OPEN_CREATE is not
 * set; TS_ELOCKED when another handle or process holds the write lock;
 * TS_EIO for other system failures; TS_EINVAL for bad options or a path
 * that is not a directory; TS_ENOMEM.
 */
TS_EXTERN int ts_open(const char *path, const ts_options *opts, ts_db **out);

/*
 * ts_close -- close the database: sync what is pending (per the sync mode,
 * always fully on a clean close), release the lock and free the handle.
 * Tables still open are closed.  db may be NULL.  Calls other threads are
 * making on the database or its tables are waited for; calls begun after
 * ts_close began fail with TS_ECLOSED ("the database is closing"), but
 * for ts_table_close, which still closes its handle (ts_close may yet
 * return TS_EBUSY and leave the database open).
 * Returns 0, or the first error met while syncing (the handle is freed
 * regardless); TS_EBUSY, with nothing changed, while cursors are open
 * (ts_errmsg says how many: close them first) or another thread is
 * already closing the database.  Closing the same handle again after it
 * returned 0 is undefined (the handle is freed).
 */
TS_EXTERN int ts_close(ts_db *db);

/*
 * ts_now -- the database clock's current time in ns (0, with a message,
 * when db is NULL).
 */
TS_EXTERN int64_t ts_now(const ts_db *db);

/*
 * ts_sync -- make every acknowledged insert of every table durable now.
 * Returns 0, TS_EREADONLY, or TS_EIO.
 */
TS_EXTERN int ts_sync(ts_db *db);

/*
 * ts_tables -- the names of the database's tables, sorted.
 * out: receives a NULL-terminated array of strings, to be released with
 * ts_free_names().  n: receives the count (may be NULL).
 * Returns 0, TS_EIO or TS_ENOMEM.
 */
TS_EXTERN int ts_tables(ts_db *db, char ***out, int *n);

/*
 * ts_free_names -- free an array returned by ts_tables.  NULL is allowed.
 */
TS_EXTERN void ts_free_names(char **names);

/* ------------------------------------------------------------------ */
/* Tables: create, open, alter, drop                                    */
/* ------------------------------------------------------------------ */

/*
 * ts_create -- create table name with the given columns and key.
 * schema->columns lists the columns; schema->key the key columns' indexes
 * into it (ts last); schema->ttl the TTL (0 = forever);
 * schema->on_duplicate the duplicate policy (0, TS_ON_DUPLICATE_REJECT,
 * unless set).  version is ignored, so a schema from ts_table_schema
 * makes a table like its own, policy included.  When no column is named "ts", a timestamp column "ts" is
 * added right after the last other key column.  Defaults must have the
 * column's type (an int32 default may be given as TS_INT64 if in range);
 * a string or blob default is at most TS_COLUMN_DEFAULT_MAX bytes.
 * Returns 0; TS_EINVAL for a bad table name, or the reserved name LOCK
 * (the database's lock file), or an on_duplicate that is no
 * ts_on_duplicate; TS_ESCHEMA for an invalid
 * schema (ts_errmsg names the column and why); TS_ERANGE for a negative
 * ttl; TS_ETOOBIG when the table's descriptor would exceed its size limit
 * (64 MiB: many columns with long defaults), or a row of the column
 * defaults alone would exceed what a row may take (32 MiB, or less with
 * small log segments: see ts_options.log_segment_size; no insert that
 * leaves those columns out could succeed); TS_EEXIST when the table
 * exists; TS_ENOSPC when the disk has no room for the table's first log
 * segment (64 MiB; ts_errmsg names what is needed and what is free, and
 * nothing is created); TS_EREADONLY; TS_EIO (also when the database directory could
 * not be synced after the table was put in place: the table then exists,
 * but may not survive a power loss); TS_ENOMEM.
 */
TS_EXTERN int ts_create(ts_db *db, const char *name, const ts_schema *schema);

/*
 * ts_create_keyed -- like ts_create, but the key is given by column names
 * (key_names[0..nkey)), which is what the programs have at hand.
 * Same errors as ts_create, plus TS_ESCHEMA for an unknown key column.
 */
TS_EXTERN int ts_create_keyed(ts_db *db, const char *name,
                              const ts_column *columns, int ncolumns,
                              const char *const *key_names, int nkey,
                              int64_t ttl);

/*
 * ts_create_keyed_v2 -- ts_create_keyed of a table whose duplicate policy
 * is on_duplicate (ts_create_keyed's tables reject duplicates).  The
 * policy is in the table's first DESCRIPTOR: no crash leaves the table
 * with another one.  Same errors as ts_create_keyed, plus TS_EINVAL for
 * an on_duplicate that is no ts_on_duplicate.
 */
TS_EXTERN int ts_create_keyed_v2(ts_db *db, const char *name,
                                 const ts_column *columns, int ncolumns,
                                 const char *const *key_names, int nkey,
                                 int64_t ttl, ts_on_duplicate on_duplicate);

/*
 * ts_drop -- drop table name: it disappears at once and its files are
 * removed.  Handles to it still open fail afterwards with TS_ECLOSED.
 * Calls racing the drop in other threads -- inserts, queries, alters,
 * flushes, merges, the library's own flushes and merges -- either come
 * first and succeed, or fail with TS_ECLOSED and ts_errmsg "table "NAME"
 * was dropped" (or "is being dropped", while the drop waits for a flush,
 * merge or alter in progress to finish: they write no file afterwards);
 * a ts_table_open after it gives TS_ENOENT.  None gets TS_EIO from the
 * race, and nothing of the table is left in the database directory.
 * Cursors opened before the drop keep reading their snapshot.
 * Returns 0, TS_ENOENT, TS_EREADONLY or TS_EIO (also when the database
 * directory could not be synced after the table was renamed away: the
 * table is then gone, its files are removed by the next read-write
 * ts_open).
 */
TS_EXTERN int ts_drop(ts_db *db, const char *name);

/*
 * ts_table_open -- a handle on table name.  Close it with ts_table_close.
 * The first open of a table in a ts_db reads its DESCRIPTOR and log.
 * When a read-write open finds that the table's next inserts need a new
 * log segment (64 MiB) and the disk has no room for it, it says so once
 * through ts_options.log (stderr by default) and opens the table: reads
 * go on, and inserts fail with TS_ENOSPC naming the need until there is
 * room.
 * A read-write open that finds committed log batches damaged (not the
 * torn tail a crash leaves, which is cut silently) moves them to
 * <table>/quarantine/ and opens the table without them and the batches
 * after them; the stats log_quarantined_commits and log_quarantined_lsn
 * say so, and ts_check reports the file until it is removed.
 * Returns 0; TS_EINVAL (bad name); TS_ENOENT (no such table); TS_ECORRUPT
 * when the table's DESCRIPTOR or log is damaged (ts_errmsg names the file
 * and the check that failed; a read-only open refuses a log with damaged
 * committed batches); TS_EVERSION when a file has a format version this
 * build cannot read; TS_EIO; TS_ENOMEM.
 */
TS_EXTERN int ts_table_open(ts_db *db, const char *name, ts_table **out);

/*
 * ts_table_close -- release a handle from ts_table_open.  NULL allowed.
 * Every ts_table_open of a table in a ts_db gives the same object,
 * counted; the close that takes the count to 0 waits for the calls other
 * threads are making on the table, and calls on it afterwards fail with
 * TS_ECLOSED ("table ... is not open") until it is opened again.  Open
 * cursors keep the table alive and usable.  A close beyond the count
 * (closing twice) is detected -- ts_errmsg says so -- and changes
 * nothing; after ts_close it is undefined.
 */
TS_EXTERN void ts_table_close(ts_table *table);

/*
 * ts_table_name -- the table's name (valid while the handle is open;
 * NULL, with a message, when table is NULL).
 */
TS_EXTERN const char *ts_table_name(const ts_table *table);

/*
 * ts_table_schema -- a copy of the table's current schema.
 * out: receives a schema owned by the caller; free it with ts_schema_free.
 * Returns 0, TS_ECLOSED or TS_ENOMEM.
 */
TS_EXTERN int ts_table_schema(ts_table *table, ts_schema **out);

/*
 * ts_schema_free -- free a schema returned by ts_table_schema.
 */
TS_EXTERN void ts_schema_free(ts_schema *schema);

/*
 * ts_alter_add -- append a column (its default fills existing rows when
 * they are read; old tablets are not rewritten).
 * Returns 0; TS_EEXIST when the name is taken; TS_ESCHEMA for a bad column
 * (name, type, or default: of another type, or a string or blob longer
 * than TS_COLUMN_DEFAULT_MAX); TS_ETOOBIG when the table's descriptor
 * would exceed its size limit (64 MiB), or a row of the column defaults
 * alone its limit (32 MiB, or less with small log segments: see
 * ts_options.log_segment_size); TS_EREADONLY; TS_ECLOSED; TS_EIO.
 */
TS_EXTERN int ts_alter_add(ts_table *table, const ts_column *column);

/*
 * ts_alter_widen -- widen int32 column name to int64.
 * Returns 0; TS_ENOENT for an unknown column; TS_ESCHEMA when the column
 * is not int32; TS_ETOOBIG when the table's descriptor would exceed its
 * size limit; TS_EREADONLY; TS_ECLOSED; TS_EIO.
 */
TS_EXTERN int ts_alter_widen(ts_table *table, const char *column);

/*
 * ts_alter_ttl -- set the TTL in ns (0 = keep forever).
 * Expired stays expired: rows that had passed the old TTL when the TTL
 * changes (ts < now - old TTL, or below an earlier such instant) are never
 * returned again, and inserting such a ts is TS_EEXPIRED, even when the
 * new TTL is longer or 0.  The table's DESCRIPTOR keeps that instant, its
 * expiry horizon; every read applies max(horizon, now - TTL).
 * Returns 0; TS_ERANGE for a negative ttl; TS_EREADONLY; TS_ECLOSED; TS_EIO.
 *
 * Every change (ts_alter_*) writes a new DESCRIPTOR: to DESCRIPTOR.tmp,
 * renamed over DESCRIPTOR, then the table directory is synced.  When that
 * last sync fails the call returns TS_EIO (ts_errmsg names the directory)
 * and the handle keeps the old schema and TTL, although the new file is
 * already in place and is what the next ts_table_open reads.
 */
TS_EXTERN int ts_alter_ttl(ts_table *table, int64_t ttl);

/*
 * ts_alter_on_duplicate -- set the table's duplicate policy.  Inserts
 * that take the table's writer lock after the call returns apply it; no
 * row already stored changes.  Setting the policy the table has already
 * writes nothing.  Like every ts_alter_*, it writes a new DESCRIPTOR
 * (ts_alter_ttl says how), but no new schema version: ts_schema.version
 * stays as it was.  A table whose policy is ignore has a DESCRIPTOR of
 * format version 3, which builds before this call refuse (TS_EVERSION;
 * docs/descriptor-format.md); setting reject again makes it readable by
 * them.  Setting replace marks the table, for good, as one that may hold
 * replaced rows (DESCRIPTOR format version 5): its reads then resolve
 * equal keys newest first, and setting another policy later keeps that
 * (older rows stay shadowed) and keeps format 5.
 * Returns 0; TS_EINVAL for a policy that is no ts_on_duplicate;
 * TS_EREADONLY; TS_ECLOSED; TS_EIO.
 */
TS_EXTERN int ts_alter_on_duplicate(ts_table *table, ts_on_duplicate policy);

/* ------------------------------------------------------------------ */
/* Inserts                                                              */
/* ------------------------------------------------------------------ */

/*
 * ts_insert -- insert a batch of nrows rows atomically: either all are
 * stored or none is -- except the rows that a table whose duplicate policy
 * is TS_ON_DUPLICATE_IGNORE skips (ts_insert_counted says how many): a
 * row whose key the table holds, or an earlier row of the batch has, is
 * left out, and the batch's other rows are stored, all at once, as one
 * batch.  Under TS_ON_DUPLICATE_REPLACE every row is stored and replaces
 * the row of its key, if any (a later row of the batch replaces an
 * earlier one): readers see only the newest.  rows holds nrows * ncolumns values, row after row,
 * in the columns' order of the schema current when the call takes the
 * table's writer lock (ncolumns as returned by ts_table_schema).  When
 * the table may be altered concurrently, use ts_insert_at: a schema read
 * earlier may no longer be current by then.  A TS_NONE value takes the column default; a TS_NONE
 * ts takes the current time.  An int32 column accepts TS_INT64 values in
 * range; a timestamp column accepts TS_INT64.
 * Returns 0 once the batch is visible to every query started afterwards
 * (and durable, in TS_SYNC_COMMIT mode); on failure ts_errmsg names the
 * first bad row by index and, where it applies, the column:
 * TS_EDUPKEY (key exists, or appears twice in the batch, in a table whose
 * policy is TS_ON_DUPLICATE_REJECT), TS_EFUTURE,
 * TS_EEXPIRED, TS_ETYPE, TS_ERANGE, TS_ETOOBIG (a row larger than 32 MiB,
 * or than the table's log segments hold: ts_options.log_segment_size),
 * TS_EINVAL (bad UTF-8),
 * TS_EREADONLY, TS_ECLOSED, TS_ENOSPC, TS_EIO, TS_ENOMEM.  TS_ENOSPC
 * also when the table's unflushed log reached opts.log_cap (ts_errmsg
 * names the cap and, when flushes fail, their cause; the batch is not
 * stored, and inserts go on once a flush succeeds).  While flushes do
 * not fail, past an eighth of log_cap ts_insert first sleeps a pause in
 * proportion to its rows and to the log past that point (up to 16 us a
 * row at three quarters), and past three quarters it waits for them to
 * release the log (at most 10 s): a writer faster than the flushes goes
 * at their pace, slowed gradually rather than stopped for seconds.  One TS_EIO is
 * different: in TS_SYNC_COMMIT mode, when the batch was committed (and is
 * visible) but syncing it failed, ts_errmsg says "committed but not yet
 * durable": a crash before the next successful sync may lose it.
 */
TS_EXTERN int ts_insert(ts_table *table, const ts_value *rows, size_t nrows);

/*
 * ts_insert_at -- ts_insert of rows built for schema version `version` of
 * the table (ts_schema.version of the schema the caller read), which is
 * what a caller needs when another thread or process may alter the table
 * between its ts_table_schema and its insert: ts_insert reads the rows by
 * the schema current when it runs, so rows built for an older one would be
 * read with the wrong width -- past the caller's array, values under the
 * wrong columns.
 * rows holds nrows * ncolumns values, ncolumns being that version's
 * column count, in its column order.  The whole batch is read under that
 * one version, whatever alters run meanwhile, and stored as the same row
 * of the older version would read under the current schema: values are
 * checked against that version's column types (an int32 column widened
 * since still takes only int32-range values from such rows), and the
 * columns appended since take their defaults.  version 0 means the
 * current version (ts_insert).
 * Returns as ts_insert, plus TS_ESCHEMA when the table has no such
 * version (greater than its current one).
 */
TS_EXTERN int ts_insert_at(ts_table *table, uint32_t version, const ts_value *rows,
                           size_t nrows);

/*
 * ts_insert_counted -- ts_insert_at that also says how many rows the
 * table's duplicate policy skipped.  ignored (may be NULL): receives, on
 * success, the
 * rows left out as duplicates (always 0 in a table whose policy is
 * TS_ON_DUPLICATE_REJECT), so nrows - *ignored rows were stored; 0 on
 * failure.  The same count is added to the table's stat
 * rows_ignored_duplicates.  Returns as ts_insert_at.
 */
TS_EXTERN int ts_insert_counted(ts_table *table, uint32_t version, const ts_value *rows,
                                size_t nrows, size_t *ignored);

/*
 * ts_insert_versioned -- ts_insert_counted that also says the table's
 * version once the batch is committed.  A table's version is the log
 * position (LSN) of its newest commit: it grows with every committed
 * batch (and with the table's own flushes), survives closing and
 * reopening, and orders everything the table committed
 * (docs/corrections.md section 1).  table_version (may be NULL):
 * receives, on success, the version of the batch's commit -- or, when
 * the batch committed nothing (every row skipped as a duplicate, or
 * nrows 0), the table's version at that moment; 0 on failure and in a
 * table that never committed.  Returns as ts_insert_at.
 */
TS_EXTERN int ts_insert_versioned(ts_table *table, uint32_t version, const ts_value *rows,
                                  size_t nrows, size_t *ignored, uint64_t *table_version);

/* ------------------------------------------------------------------ */
/* Queries                                                              */
/* ------------------------------------------------------------------ */

/*
 * A query: the rows inside a key range x a time range, in key order.
 * Key arrays hold values of the leading key columns (ts included when
 * present); a bound with fewer values than key columns compares on those
 * leading columns only.  Zero-filled (memset 0) means: every row,
 * ascending, no limit, all columns.
 */
typedef struct ts_query {
	const ts_value *prefix;   /* rows whose key starts with these values */
	int nprefix;
	const ts_value *lower;    /* lower key bound, or NULL */
	int nlower;
	int lower_exclusive;      /* 0: >=, 1: > */
	const ts_value *upper;    /* upper key bound, or NULL */
	int nupper;
	int upper_exclusive;      /* 0: <=, 1: < */
	int64_t from;             /* ts >= from (when has_from) */
	int64_t to;               /* ts < to (when has_to; <= if to_inclusive) */
	int has_from, has_to, to_inclusive;
	int desc;                 /* descending key order */
	uint64_t limit;           /* most rows returned, 0 = no limit */
	const int *columns;       /* projection: column indexes, or NULL */
	int ncolumns;
	const ts_value *after;    /* resume strictly after this full key */
	int nafter;
} ts_query;

/*
 * ts_query_open -- start a query over a snapshot taken now; the snapshot
 * is held until ts_cursor_close (close every cursor before its table
 * handle).  Rows come from ts_cursor_next, in the current schema: rows
 * written before a column was added read with its default.  Rows past
 * the TTL are never returned.  With a limit, ts_cursor_more says
 * afterwards whether another row qualified; pass ts_cursor_resume's key
 * as `after` (all key columns) to continue in the same direction.
 * Returns 0; TS_EINVAL (a bound with more values than key columns, a
 * TS_NONE value in a bound, an `after` without every key column, a bad
 * projection count); TS_ETYPE / TS_ERANGE for a bound value its column
 * cannot take (ts_errmsg names the bound and column); TS_ENOENT for a
 * projected column index out of range; TS_ECLOSED; TS_ENOMEM; TS_ECORRUPT
 * / TS_EIO when a tablet cannot be read.
 */
TS_EXTERN int ts_query_open(ts_table *table, const ts_query *q,
                            ts_cursor **out);

/*
 * ts_latest_open -- the newest row (greatest ts; among rows of that ts,
 * the greatest key) whose key starts with prefix[0..nprefix) and is not
 * past the TTL, as a cursor yielding zero or one row.
 * Returns as ts_query_open.
 */
TS_EXTERN int ts_latest_open(ts_table *table, const ts_value *prefix,
                             int nprefix, ts_cursor **out);

/* Aggregate functions. */
typedef enum ts_aggfn {
	TS_AGG_COUNT = 1,
	TS_AGG_SUM,
	TS_AGG_MIN,
	TS_AGG_MAX,
	TS_AGG_MEAN,
	TS_AGG_FIRST, /* value at the earliest ts of the group in the window */
	TS_AGG_LAST,  /* value at the latest ts */
} ts_aggfn;

/*
 * ts_aggfn_parse -- "count", "sum", "min", "max", "mean", "first", "last".
 * Returns 0 or TS_EINVAL.  ts_aggfn_name is the inverse.
 */
TS_EXTERN int ts_aggfn_parse(const char *name, ts_aggfn *out);
TS_EXTERN const char *ts_aggfn_name(ts_aggfn fn);

/* One output value of an aggregate: function fn of column. */
typedef struct ts_aggspec {
	int column;
	ts_aggfn fn;
} ts_aggspec;

/*
 * An aggregate request: per window of `every` ns (windows start at
 * multiples of every since the epoch) and per group (the first `group` key
 * columns, 0 <= group < number of key columns), the functions in specs over
 * the rows with ts in [from, to) whose key starts with the prefix.
 *
 * count counts values (a NaN double is no value); sum over integer
 * columns is exact, over doubles it is added block by block and may differ
 * in the last bits from a row-by-row sum; min and max ignore NaN; mean is
 * sum / count (NaN when count is 0); first and last are the values of the
 * rows with the least and the greatest ts, ties going to the least and the
 * greatest key.  Only windows holding rows appear.
 */
typedef struct ts_aggregate {
	const ts_value *prefix;
	int nprefix;
	int64_t from, to, every;
	int group;
	const ts_aggspec *specs;
	int nspecs;
} ts_aggregate;

/*
 * ts_aggregate_open -- run an aggregate; the cursor yields rows of
 * [group key values..., window start (timestamp), one value per spec]
 * ordered by group key then window.  count is TS_INT64, mean TS_DOUBLE,
 * sum TS_INT64 for integer columns and TS_DOUBLE for doubles, the others
 * the column's type.  Blocks of on-disk tablets lying wholly in one group
 * and one window are answered from their precomputed statistics, unless
 * first, last or the ts column is asked for.
 * nspecs may be 0: the rows then list the group-windows holding rows.
 * When the table has a rollup (ts_create_rollup) -- or a rollup of its
 * rollup, and so on (1m -> 1h -> 1d) -- whose every divides every, whose
 * group is at least group and the prefix's length, and whose columns
 * give the functions (mean from sum and count; first and last need the
 * same group), the coarsest such rollup may answer: when reading it
 * costs less than the table's rows, as estimated from the blocks of
 * both (a block inside one window answered from its statistics, any
 * other read row by row), or when the range reaches past the table's
 * TTL.  It answers the whole windows of [from, to) that it keeps and
 * that no commit after its watermark touched (for a rollup of a rollup,
 * no commit of any table of the chain after the watermark of the rollup
 * built on it), and the table's rows answer the others (the cut edges,
 * windows changed since, windows the rollup no longer keeps): the same
 * rows, doubles' sums aside in their last bits, for every window inside
 * the table's TTL -- and windows older than the table's TTL that the
 * rollup still keeps are answered too.  The rollup's windows are
 * streamed, the table's few gathered before the first row;
 * ts_cursor_source names the rollup.  The rollups are those
 * loaded in the handle: every rollup of a writable database after the
 * scheduler's first pass, those opened in a read-only one.
 * Returns 0; TS_EINVAL (every <= 0, from >= to, group out of range, a bad
 * function, a negative spec count, a prefix too long or with a TS_NONE
 * value); TS_ETYPE (a non-numeric column, or a prefix value its column
 * cannot take; TS_ERANGE when out of its range); TS_ENOENT (a column index
 * out of range); TS_ECLOSED; TS_ENOMEM.
 * ts_cursor_next may return TS_ERANGE when an integer sum overflows int64.
 */
TS_EXTERN int ts_aggregate_open(ts_table *table, const ts_aggregate *req,
                                ts_cursor **out);

/* ts_aggregate_open_flags's flags. */
#define TS_AGG_NO_ROLLUP 0x1u /* answer from the table's own rows only */

/*
 * ts_aggregate_open_flags -- ts_aggregate_open with flags: 0 is
 * ts_aggregate_open; TS_AGG_NO_ROLLUP answers from the table's own rows
 * even where a rollup could (to compare the two, or to see only the
 * rows the table still holds).  Returns as ts_aggregate_open, plus
 * TS_EINVAL for an unknown flag.
 */
TS_EXTERN int ts_aggregate_open_flags(ts_table *table, const ts_aggregate *req,
                                      unsigned flags, ts_cursor **out);

/*
 * ts_cursor_source -- for an aggregate cursor answered in part from a
 * rollup of its table (ts_aggregate_open: docs/rollups.md section 3),
 * the rollup's name; NULL when the table's own rows alone answered, for
 * every other cursor, and (with a message) when cur is NULL.  Valid
 * while the cursor is open.
 */
TS_EXTERN const char *ts_cursor_source(const ts_cursor *cur);

/*
 * ts_cursor_next -- the next row.  *row receives a pointer to the row's
 * values (the projected columns, or all columns of the current schema),
 * valid until the next call on the cursor; *row is NULL at the end.
 * n (may be NULL) receives the number of values.
 * Returns 0, or TS_EIO / TS_ECORRUPT when a tablet cannot be read (the
 * tablet is reported for quarantine), TS_ENOMEM, or (aggregates)
 * TS_ERANGE; an error is sticky: later calls return it again.
 */
TS_EXTERN int ts_cursor_next(ts_cursor *cur, const ts_value **row, int *n);

/*
 * ts_cursor_more -- after the end: 1 if the limit cut the result (at
 * least one more row qualifies), else 0.  When 1, ts_cursor_resume gives the key to pass
 * as ts_query.after to continue.  0, with a message, when cur is NULL.
 */
TS_EXTERN int ts_cursor_more(const ts_cursor *cur);

/*
 * ts_cursor_rewind -- start a query cursor again from its first row, on
 * the snapshot it was opened on: the rows that follow are exactly those
 * the cursor gave since it was opened, whatever was inserted, flushed or
 * merged meanwhile (the FUSE view re-reads a file this way).  The limit
 * counts again from 0 and a sticky error is forgotten (it comes back if
 * its cause is still there).
 * Returns 0; TS_ENOTSUP for latest and aggregate cursors; the errors of
 * ts_query_open's reading (TS_ECORRUPT, TS_EIO, TS_ENOMEM), which then
 * stick as ts_cursor_next's.
 */
TS_EXTERN int ts_cursor_rewind(ts_cursor *cur);

/*
 * ts_cursor_resume -- the full key of the last row returned.  *key points
 * at nkey values owned by the cursor.  Returns 0, or TS_ENOENT when no row
 * was returned yet.
 */
TS_EXTERN int ts_cursor_resume(const ts_cursor *cur, const ts_value **key,
                               int *nkey);

/*
 * ts_cursor_close -- release the cursor, its snapshot and its hold on
 * the table.  NULL allowed.
 */
TS_EXTERN void ts_cursor_close(ts_cursor *cur);

/* ------------------------------------------------------------------ */
/* Corrections: replacing inserts, deletes, purge, changes             */
/* (docs/corrections.md; DESIGN.md section 2 as issue 28 extends it)    */
/* ------------------------------------------------------------------ */

/* ts_insert_policy's on_duplicate: the table's own policy. */
#define TS_ON_DUPLICATE_TABLE (-1)

/*
 * ts_insert_policy -- ts_insert_versioned under the duplicate policy
 * on_duplicate for this one batch (a ts_on_duplicate, or
 * TS_ON_DUPLICATE_TABLE for the table's own), leaving the table's
 * policy as it is: SQL's INSERT OR REPLACE and INSERT OR IGNORE.
 * ignored counts only the rows skipped (under ignore); rows that
 * replaced a stored row are stored rows.  The first batch under
 * TS_ON_DUPLICATE_REPLACE in a table whose policy never was replace
 * first marks the table as one that may hold replaced rows (one
 * DESCRIPTOR write; format version 5, for good), as
 * ts_alter_on_duplicate to replace does.  The table's stat rows_replaced
 * counts the rows that replaced a row still in the log (filling tablets):
 * a replaced row already written to an on-disk tablet is not looked for
 * (that would cost a tablet read per late row), so it is not counted.
 * Returns as ts_insert_at, plus TS_EINVAL for any other on_duplicate.
 */
TS_EXTERN int ts_insert_policy(ts_table *table, uint32_t version, int on_duplicate,
                               const ts_value *rows, size_t nrows, size_t *ignored,
                               uint64_t *table_version);

/* ts_delete's *deleted when counting would cost a read of the rows. */
#define TS_COUNT_UNKNOWN UINT64_MAX

/*
 * ts_delete -- delete every row inside a key range x a time range,
 * atomically: range's prefix, lower/upper bounds and from/to select rows
 * exactly as ts_query_open selects them (a zero-filled range: every
 * row); its desc, limit, columns and after must be zero.  The rows
 * vanish from every read that starts after the call returns (queries,
 * latest, aggregates, the mount, SQL), and from none that started
 * before; rows inserted later into the range are not affected.  Like an
 * insert batch, a delete follows the durability mode (durable on return
 * in TS_SYNC_COMMIT mode) and the prefix rule: a crash that keeps it
 * keeps every commit before it.  The rows' bytes stay in the table's
 * files until merges rewrite them or ts_purge forces that.
 * deleted (may be NULL): the rows it covered (a replaced key once), or
 * TS_COUNT_UNKNOWN when counting them would have cost a read of the
 * rows.  table_version (may
 * be NULL): the delete's version (ts_insert_versioned).
 * Returns 0; TS_EINVAL (a bad range, or desc/limit/columns/after set),
 * TS_ETYPE, TS_ERANGE as ts_query_open; TS_EREADONLY (also for a rollup,
 * which only its maintenance writes: ts_create_rollup); TS_ECLOSED;
 * TS_ENOSPC; TS_EIO; TS_ENOMEM.
 */
TS_EXTERN int ts_delete(ts_table *table, const ts_query *range, uint64_t *deleted,
                        uint64_t *table_version);

/*
 * ts_purge -- remove physically the rows deleted (and replaced) inside
 * range (NULL or zero-filled: the whole table): flush the filling
 * tablets, rewrite the on-disk tablets that hold such rows (in a table
 * that may hold replaced rows, the tablets whose times meet range's and
 * each other's are merged into one, which keeps each key's newest row)
 * and release the log segments that hold them, so that when it returns
 * no live file of
 * the database holds their bytes (a snapshot taken before, and the
 * cursors on it, keep what they read until closed; backups are the
 * operator's).  Each delete whose range meets range is purged whole,
 * and its tombstone dropped: ts_changes_open still reports it, and any
 * older delete whose key range meets range's, as wildcard rows over
 * their time ranges (their key bounds, key bytes of the erased rows,
 * are not kept).  A crash during a purge leaves the table as before it
 * or as after it, and ts_check passes either way.
 * table_version: as ts_delete.  Returns 0; TS_EINVAL; TS_EREADONLY;
 * TS_ECLOSED; TS_ENOSPC; TS_EIO; TS_ENOMEM; TS_ECORRUPT when a tablet to
 * rewrite is damaged.
 */
TS_EXTERN int ts_purge(ts_table *table, const ts_query *range, uint64_t *table_version);

/*
 * What ts_changes_open asks: the windows that commits with versions in
 * (since, until] touched -- inserts, replacements, deletes.
 */
typedef struct ts_changes_spec {
	uint64_t since;      /* versions after this one */
	uint64_t until;      /* up to this one; 0: the table's version now */
	int64_t resolution;  /* window width in ns, windows aligned to
	                      * multiples of it; 0: one window per touched
	                      * span (a block's; a tablet's changed blocks
	                      * of a prefix adjacent in key order make one,
	                      * as do a filling tablet's changed rows of a
	                      * prefix), overlapping or touching spans of a
	                      * prefix joined */
	int depth;           /* key columns before ts that name a prefix,
	                      * 0 .. (key columns - 1); 0: the whole table */
} ts_changes_spec;

/*
 * ts_changes_open -- BTrDB's ComputeDiff: a cursor yielding one row per
 * (key prefix, window) that a commit in (since, until] may have touched,
 * sorted by prefix then window: the depth leading key columns' values,
 * then "from" (timestamp, inclusive) and "to" (timestamp, exclusive).
 * It is computed from metadata (tablets' versions and their blocks'
 * newest versions, searches of the filling tablets that skip subtrees
 * older than since, tombstones), never by scanning the rows: only a
 * block whose keys span several prefixes has its keys read.  A window
 * may be reported that did not change (a rollup recomputes it for
 * nothing) -- a block reports its whole span for all of its prefixes,
 * until cannot cut a block that also holds newer rows, tablets written
 * before versions existed are always reported -- but none that changed
 * is ever missed.  A since that is not one of the table's versions
 * counts every row of a filling tablet begun before it as changed.
 *
 * Deletes are reported by their range alone, whether their rows are
 * still in the table's files, left out by a flush or merge, or purged:
 * over the time range the delete covered (narrowed to the times the
 * table held rows in when it ran), under its prefix when every key of
 * its range has the same depth leading values, else as a *wildcard row*:
 * the leading values its range does fix (k < depth of them, perhaps
 * none), then TS_NONE for the other prefix columns, meaning "every
 * value" -- e.g. at depth 2 (host, cpu), a delete of host "x" is
 * ("x", TS_NONE), a delete of every host (TS_NONE, TS_NONE).  So are a
 * delete of several prefixes and any delete a purge met (a purge keeps
 * no key bytes of what it erased: every prefix).  A wildcard row sorts
 * before the prefixes it covers (TS_NONE first, column by column).  The
 * table keeps the deletes whose tombstones left as change records (the
 * newest TS_CHANGE_RECORDS_MAX, 4096, holding at most 1 MiB of key
 * bounds); the version of the newest one dropped past that is the
 * table's changes horizon (stat changes_horizon, 0: none): a since
 * below it gets, besides, one wildcard row of every prefix over the time
 * range of every delete dropped.  A row whose from is INT64_MIN or whose
 * to is INT64_MAX (a delete whose time range could not be narrowed) is
 * returned whole, not cut into windows.
 * Returns 0; TS_EINVAL (depth out of range, resolution < 0, until
 * below since); TS_ECLOSED; TS_ENOMEM; TS_ECORRUPT / TS_EIO.
 */
TS_EXTERN int ts_changes_open(ts_table *table, const ts_changes_spec *spec, ts_cursor **out);

/* The most change records of retired deletes a table keeps for
 * ts_changes_open; older ones raise the changes horizon. */
#define TS_CHANGE_RECORDS_MAX 4096

/* ------------------------------------------------------------------ */
/* Rollups: tables kept at a coarser resolution by the store           */
/* (docs/rollups.md; issue 29)                                          */
/* ------------------------------------------------------------------ */

/*
 * What ts_create_rollup makes: per window of `every` ns (windows start
 * at multiples of every since the epoch) and per group (the source's
 * first `group` key columns), the functions specs[0..nspecs) over the
 * source's rows, as ts_aggregate_open computes them.
 *   source: the table rolled up, or another rollup (then every must be a
 *     multiple of its every, group at most its group, and each spec names
 *     one of its value columns with the function that column holds --
 *     column "cpu_max" with TS_AGG_MAX -- or TS_AGG_MEAN on its "X_sum"
 *     or "X_count" when it holds both; the values are combined: counts
 *     and sums summed, min of mins, max of maxes, first of the earliest
 *     window and last of the latest, which need the same group).
 *   specs: column indexes into the source's columns (numeric ones) and
 *     functions; repeats are allowed and stored once.
 *   ttl: the rollup's own TTL in ns (0: forever), independent of the
 *     source's.
 */
typedef struct ts_rollup_spec {
	const char *source;
	int64_t every;
	int group;
	const ts_aggspec *specs;
	int nspecs;
	int64_t ttl;
} ts_rollup_spec;

/*
 * ts_create_rollup -- create table name as a rollup of spec->source.
 * The rollup is an ordinary table -- every read works on it: queries,
 * latest, aggregates -- whose key is the source's first group key
 * columns (same names and types), then ts, the window's start, and whose
 * value columns are COL_FN for each spec (the source's column name, an
 * underscore, the function's name: "cpu_max"), in the specs' order; mean
 * is stored as the two columns COL_sum and COL_count (each added once),
 * from which it stays exact when windows combine.  Types: count int64;
 * sum int64 over integer columns, double over doubles; min, max, first,
 * last the column's type.  Its duplicate policy is replace.
 * The store keeps it: a job of the maintenance scheduler recomputes,
 * from ts_changes_open, every window the source's durable commits
 * touched since the rollup's watermark -- late and out-of-order rows,
 * replacements, deletes -- so that, once it caught up, every row equals
 * ts_aggregate_open over the source for its group and window, and it
 * holds no window the source has no row in (windows that begin before
 * the source's TTL horizon are kept as computed; the rollup's own TTL
 * applies to it).  The scheduler serves loaded tables (a rollup is
 * loaded by its creation and by any ts_table_open; tsstored loads every
 * table).  Only durable commits are rolled up: the scheduler's paced
 * runs roll up what the source's own syncs and flushes made durable
 * (its interval or commit syncs, an explicit pass, a close), waiting for them up to
 * about 2 s before syncing the source's log themselves -- which, in
 * TS_SYNC_NONE mode, where nothing else syncs, they do about that often
 * -- and an explicit pass syncs it.  The
 * definition and watermark live in <name>/ROLLUP
 * (docs/rollup-format.md), checked by ts_check and copied by ts_backup.
 * Clients cannot write a rollup: ts_insert* and ts_delete fail with
 * TS_EREADONLY ("table ... is a rollup of ..."), and so do
 * ts_alter_add, ts_alter_widen and ts_alter_on_duplicate on it
 * (ts_alter_ttl and ts_purge work).  ts_drop drops a rollup like any table; a table
 * with rollups is not dropped (TS_EBUSY naming them).
 * Returns 0; TS_EINVAL (bad name, reserved name, bad source name, every
 * <= 0, group out of range, no spec, a bad function, a rollup of a
 * rollup whose every, group or specs do not combine); TS_ENOENT (no such
 * source; a spec's column index out of range); TS_ETYPE (a non-numeric
 * column); TS_ESCHEMA (a value column's name longer than TS_NAME_MAX, or
 * equal to a key column's); TS_ERANGE (negative ttl); TS_EEXIST (the
 * table exists); TS_EREADONLY; and ts_create's other errors.
 */
TS_EXTERN int ts_create_rollup(ts_db *db, const char *name, const ts_rollup_spec *spec);

/* One function of a rollup's definition: of column (the source's; for
 * a rollup of a rollup, the base column its source rolls up), fn. */
typedef struct ts_rollup_column {
	const char *column;
	ts_aggfn fn;
} ts_rollup_column;

/* A rollup's definition and the state of its maintenance. */
typedef struct ts_rollup_state {
	const char *source;        /* the source table */
	int from_rollup;           /* 1 when the source is itself a rollup */
	int64_t every;             /* window width, ns */
	int group;                 /* source key columns kept */
	int nfns;
	const ts_rollup_column *fns; /* as created, mean as mean */
	uint64_t watermark;        /* W: the source version through which the
	                            * rollup is exact (0: nothing yet) */
	uint64_t source_version;   /* the source's version when the
	                            * maintenance last looked (0: not yet) */
	int64_t lag_ns;            /* how long the rollup has been behind the
	                            * source's version: 0 when caught up */
	uint64_t windows_recomputed; /* since the database opened */
	uint64_t windows_deleted;
	int last_error;            /* TS_E* of the maintenance's last failure
	                            * (retried with backoff), 0 after a success */
	uint64_t failures;         /* failures since the database opened */
} ts_rollup_state;

/*
 * ts_rollup_info -- the definition and state of rollup table.  *out is
 * allocated; free it with ts_rollup_state_free.  The same numbers are
 * in the rollup's ts_table_stats (rollup_*).
 * Returns 0; TS_ENOENT when table is no rollup; TS_ECLOSED; TS_ENOMEM.
 */
TS_EXTERN int ts_rollup_info(ts_table *table, ts_rollup_state **out);

/* ts_rollup_state_free -- free what ts_rollup_info gave.  NULL allowed. */
TS_EXTERN void ts_rollup_state_free(ts_rollup_state *state);

/*
 * ts_rollups -- the names of the rollups whose source is table source
 * (rollups of those not included), sorted; *names is NULL-terminated,
 * freed with ts_free_names; n (may be NULL) receives the count.
 * Returns 0; TS_EINVAL (bad name); TS_EIO; TS_ENOMEM.
 */
TS_EXTERN int ts_rollups(ts_db *db, const char *source, char ***names, int *n);

/* ------------------------------------------------------------------ */
/* Flush and statistics                                                 */
/* ------------------------------------------------------------------ */

/*
 * ts_flush -- write every filling tablet holding rows with ts < before to
 * on-disk tablets and return once they are durable (tablet files and
 * DESCRIPTOR synced); the log they occupied is then released.  Inserts
 * into the same periods go on meanwhile, into new filling tablets.
 * With them go the older filling tablets of periods that meet theirs
 * (yesterday's 4-hour tablet still filling beside yesterday's day
 * tablet), so that no flushed row is newer than a row left in the log
 * under the same key's time (docs/corrections.md, invariant V).
 * before = INT64_MAX flushes everything.
 * Returns 0, TS_EREADONLY, TS_ECLOSED, TS_ENOSPC, TS_EIO, TS_ENOMEM,
 * TS_ECORRUPT (a damaged row in the log).
 */
TS_EXTERN int ts_flush(ts_table *table, int64_t before);

/*
 * ts_merge -- merge the table's on-disk tablets now, by the background
 * merger's rule (LittleTable's: within each period, the first adjacent
 * pair whose newer member is at least half the older, with the newer
 * neighbours that fit under merge_max_size), repeatedly until the rule
 * finds nothing more to merge; merge_delay is not waited for.  Returns
 * once the merged tablets are durable and named in the DESCRIPTOR.
 * merged: receives the number of merges made (may be NULL).
 * Returns 0, TS_EREADONLY, TS_ECLOSED, TS_ENOSPC, TS_EIO, TS_ENOMEM,
 * TS_ECORRUPT (a damaged tablet: it is quarantined and the error says
 * which).
 */
TS_EXTERN int ts_merge(ts_table *table, int *merged);

/* One named counter. */
typedef struct ts_stat {
	const char *name; /* static string, e.g. "rows_inserted" */
	int64_t value;
} ts_stat;

/*
 * ts_table_stats -- the table's counters (among them flush_failures,
 * flush_last_error, merge_failures, merge_last_error, expiry_failures:
 * failures of the background work, which is retried with backoff;
 * log_bytes, the unflushed log, log_cap_refusals, inserts refused at
 * opts.log_cap, and log_stalls and log_stall_ns, inserts that waited for
 * the flushes past three quarters of it, and how long; log_paced_ns, the
 * time inserts slept slowing down past an eighth of it; rows_ignored_duplicates, the rows inserts skipped under
 * the policy TS_ON_DUPLICATE_IGNORE since the table was opened;
 * rows_replaced, the rows inserts under TS_ON_DUPLICATE_REPLACE stored
 * over a row still in a filling tablet (ts_insert_policy);
 * tablets_quarantined, the tablet files in the table's quarantine/ when
 * it opened plus those quarantined since; table_incarnation, an opaque
 * number that a drop and a create of the same name change -- a read-only
 * handle of the dropped table then reports TS_ECLOSED, and ts_table_open
 * opens the new one; version, the table's version, as ts_table_version).
 * out: array of room entries;
 * *n receives how many were written (at most room).  The set of names is
 * stable within a version; TS_STATS_MAX entries always suffice.
 * Returns 0 or TS_ECLOSED.
 */
#define TS_STATS_MAX 128
TS_EXTERN int ts_table_stats(ts_table *table, ts_stat *out, int room, int *n);

/*
 * ts_table_version -- the table's version: the log position (LSN) of its
 * newest commit, 0 when it never committed (ts_insert_versioned says
 * what it orders).  The same value as the stat "version".  A read-only
 * handle sees the writer's newest commit.  Returns 0, TS_EINVAL (version
 * is NULL) or TS_ECLOSED.
 */
TS_EXTERN int ts_table_version(ts_table *table, uint64_t *version);

/* ------------------------------------------------------------------ */
/* Checking and copying a database                                      */
/* ------------------------------------------------------------------ */

/* How ts_check reports.  Every member may be NULL / 0. */
typedef struct ts_check_opts {
	/* Called once per problem found: the table, the file it was found
	 * in (a path relative to the database directory, e.g.
	 * "m/tablets/0000000000000003.tab", "m/log/0000000000000000.seg",
	 * "m/DESCRIPTOR"), and a one-line description ("damaged block 2:
	 * checksum mismatch").  The strings are valid during the call. */
	void (*problem)(void *arg, const char *table, const char *file, const char *what);
	/* Called now and then with the bytes verified so far and the total
	 * to verify (for a progress display); done never exceeds total, and
	 * the last call has done == total. */
	void (*progress)(void *arg, uint64_t done, uint64_t total);
	void *arg;
} ts_check_opts;

/*
 * ts_check -- verify a database's files and report every problem found,
 * going on after each one.  For each table (docs/check-and-backup.md):
 *   - DESCRIPTOR: checksums and every format invariant; its tablet
 *     records (ids unique and below the next id, timespans inside their
 *     periods, no row count of 0), and that every tablet it names exists
 *     with the size, rows, timespan, period and schema version recorded;
 *   - each tablet it names: header, trailer, footer checksum, every
 *     block's checksum and decompression, rows strictly ordered by key
 *     within and across blocks and each decoding under its schema, each
 *     block's index entry (first and last key, rows, timespan, column
 *     statistics), and the footer's rows, timespan, first and last key
 *     and Bloom filter;
 *   - the log: every segment file at its full size with a valid header;
 *     every commit from the descriptor's flushed position through the
 *     newest one the writer recorded (log/HEAD) present and valid
 *     (structure, sequence, CRC-32C), so a torn or damaged commit before
 *     that head, or a missing or truncated segment, is a problem; and
 *     the filling tablets the head commit names: each tree ordered and
 *     balanced, inside the log since it began, with the rows and
 *     timespan the commit records, every row decoding.
 *   - invariant V of versions (docs/corrections.md): tablets whose
 *     timespans meet have disjoint version intervals, and each of those
 *     trees is born after the newest version of every tablet whose
 *     timespan meets its own.
 *   - A tablet in quarantine/ (found damaged earlier and moved out of the
 *     table) is reported as a problem too: the table lost its rows.
 *     Remove the file once inspected.
 * Works on read-only handles, also while another process writes the
 * database: a tablet that a merge replaced meanwhile is not a problem
 * (the descriptor is read again), nor is a log segment a flush released.
 * Reads the files only, so it checks what is on disk, not what a
 * read-write handle holds in memory; it never repairs anything.
 * table: one table, or NULL for every table.  opts: may be NULL.
 * Returns 0 when everything is sound; TS_ECORRUPT when at least one
 * problem was reported (ts_errmsg gives the count and the first);
 * TS_EINVAL for a bad table name; TS_ENOENT for an unknown table;
 * TS_ENOMEM, or TS_EIO when the database directory cannot be listed --
 * the check could not run.
 */
TS_EXTERN int ts_check(ts_db *db, const char *table, const ts_check_opts *opts);

/*
 * ts_backup -- a consistent copy of the whole database in a new
 * directory dest, which a later ts_open takes as a database: per table,
 * its DESCRIPTOR, its tablets (hard links, or copies across file
 * systems), and the part of its log from the flushed position through
 * its newest commit (sparse segment files), so that the copy holds a
 * prefix of the table's committed batches, every batch whole or absent.
 * Tables are copied one after the other, each consistent on its own.
 * Quarantined tablets and leftovers of crashes are not copied.
 * The copy is built in dest.tmp-<pid> beside dest, every file and
 * directory synced, then renamed to dest (and its parent synced), so a
 * crash never leaves half a copy under dest.  Safe beside a writer in
 * this or another process: a table whose files a flush or merge changed
 * during its copy is copied again from its new descriptor.
 * Returns 0; TS_EEXIST when dest exists (nothing is changed); TS_EINVAL
 * (empty dest, or dest the database directory or inside it, symbolic
 * links resolved: the copy would become part of what it copies); TS_ECORRUPT when a table's DESCRIPTOR or a log segment
 * header is damaged; TS_EBUSY when a table kept changing under every
 * attempt; TS_ENOENT (dest's parent does not exist); TS_ENOSPC; TS_EIO;
 * TS_ENOMEM.  On failure the temporary copy is removed.
 */
TS_EXTERN int ts_backup(ts_db *db, const char *dest);

/*
 * ts_backup_incremental -- as ts_backup, but dest may hold an earlier
 * copy (of this database or not), which is brought up to date with only
 * what changed: a tablet the earlier copy holds under the same name, of
 * the same size and with the same first and last 4 KiB, is hard-linked
 * from it instead of copied from the database (so across file systems
 * only new tablets are copied, and an rsync of dest sends only them: a
 * file of the copy never changes under its name); descriptors and logs
 * are written anew.  The new copy is built beside dest and exchanged
 * with it atomically (renameat2 RENAME_EXCHANGE; where the file system
 * cannot, dest is renamed aside first), then the earlier copy is
 * removed: dest holds the earlier copy or the new one at every moment.
 * A dest that does not exist gets a full copy, as ts_backup.  A dest
 * holding anything but table directories with a DESCRIPTOR and a LOCK
 * file (a directory that is no copy) is refused with TS_EINVAL and left
 * alone.
 * Returns as ts_backup, but no TS_EEXIST.
 */
TS_EXTERN int ts_backup_incremental(ts_db *db, const char *dest);

/* ------------------------------------------------------------------ */
/* Lineage and epoch (a primary and its standby)                        */
/* ------------------------------------------------------------------ */

/* Bytes of a lineage id. */
#define TS_LINEAGE_SIZE 16

/*
 * A database's place among the copies that follow one another
 * (docs/standby.md section 3), kept in <db>/EPOCH
 * (docs/epoch-format.md).  lineage: random bytes drawn when the
 * database was created (or first opened for writing by a build that
 * keeps the file), shared by a standby with the primary it follows and
 * by a backup with its source.  epoch: 1 at creation, raised by one at
 * each promotion; of two members of a lineage, the one of the higher
 * epoch is the primary.
 */
typedef struct ts_epoch {
	uint8_t lineage[TS_LINEAGE_SIZE];
	uint64_t epoch;
} ts_epoch;

/*
 * ts_epoch_get -- the database's lineage and epoch.  A read-write handle
 * returns what it holds (read or created at ts_open, raised by
 * ts_epoch_raise); a read-only handle reads <db>/EPOCH at each call.
 * out: receives them.
 * Returns 0; TS_EINVAL (NULL db or out); TS_ENOENT (read-only handle of
 * a database no writer has opened since EPOCH was introduced: it has no
 * lineage yet); TS_ECORRUPT (the file is damaged: size, magic, version,
 * checksum, epoch 0); TS_EIO; TS_ECLOSED.
 */
TS_EXTERN int ts_epoch_get(ts_db *db, ts_epoch *out);

/*
 * ts_epoch_raise -- raise the database's epoch by one, durably: when it
 * returns 0, <db>/EPOCH holds the new epoch (written to a temporary
 * file, synced, renamed, the directory synced), and a crash at any
 * moment leaves the old epoch or the new one.  This is the step of a
 * promotion (docs/standby.md section 3); the lineage stays.  A fenced
 * database (ts_epoch_fenced_by) is raised past the newer epoch it knows
 * of, to that epoch + 1, and is fenced no more: an epoch known to be
 * taken is never taken again.
 * out: receives the new lineage and epoch; may be NULL.
 * Returns 0; TS_EINVAL (NULL db, or the epoch is UINT64_MAX);
 * TS_EREADONLY (read-only handle); TS_ENOSPC; TS_EIO (the epoch may
 * then be raised on disk: ts_epoch_get says which); TS_ECLOSED.
 */
TS_EXTERN int ts_epoch_raise(ts_db *db, ts_epoch *out);

/*
 * ts_epoch_adopt -- take the lineage and epoch e (a primary's, as a
 * standby does when it follows it), durably as ts_epoch_raise.  Within
 * the database's own lineage the epoch may only stay or go up; another
 * lineage is taken only by a database that holds no table (a standby
 * starts empty: rows of two histories never mix).
 * Returns 0; TS_EINVAL (NULL db or e; e->epoch 0; an epoch below the
 * database's in its lineage; another lineage while tables exist);
 * TS_EREADONLY; TS_ENOSPC; TS_EIO; TS_ECLOSED.
 */
TS_EXTERN int ts_epoch_adopt(ts_db *db, const ts_epoch *e);

/*
 * ts_epoch_fence -- record durably, as ts_epoch_raise writes, that a
 * member of this database's lineage at epoch newer exists (a standby
 * promoted while this database was its primary): ts_epoch_fenced_by
 * says newer from then on, across restarts, until the database adopts
 * an epoch of at least newer (following the newer primary:
 * ts_epoch_adopt, ts_standby_adopt) or ts_epoch_raise takes it past it.
 * The library itself takes writes as before; a server acting as primary
 * (tsstored) refuses them while the database is fenced
 * (docs/standby.md section 3.2).  A newer not above the epoch or the
 * fence already recorded changes nothing.
 * Returns 0; TS_EINVAL (NULL db); TS_EREADONLY; TS_ENOSPC; TS_EIO (the
 * fence may then be recorded: ts_epoch_fenced_by says whether);
 * TS_ECLOSED.
 */
TS_EXTERN int ts_epoch_fence(ts_db *db, uint64_t newer);

/*
 * ts_epoch_fenced_by -- the newer epoch of its lineage this database
 * knows exists (ts_epoch_fence), or 0 when it knows of none: whether it
 * is a stale primary.  A read-only handle reads <db>/EPOCH at each call,
 * as ts_epoch_get does.
 * out: receives it.
 * Returns 0; the errors of ts_epoch_get.
 */
TS_EXTERN int ts_epoch_fenced_by(ts_db *db, uint64_t *out);

/* ------------------------------------------------------------------ */
/* Shipping a table to a standby (the primary's side of "follow")       */
/* ------------------------------------------------------------------ */

/*
 * One frame of the follow stream (docs/standby.md section 2): what a
 * standby needs to hold the primary's files byte for byte.  type:
 *   TS_FRAME_TABLET      a chunk of tablet file id, at offset in it;
 *                        the last chunk has TS_FRAME_LAST in flags;
 *   TS_FRAME_DESCRIPTOR  the whole DESCRIPTOR, to be put in place once
 *                        the standby's log holds every byte below LSN id
 *                        (the end of the commit the primary had then),
 *                        and once every tablet it names is in place;
 *   TS_FRAME_LOG         committed log bytes whose first LSN is offset;
 *                        id: the LSN of the commit record the bytes end
 *                        with, when they end a commit (what the
 *                        standby's log/HEAD then names), else 0;
 *   TS_FRAME_HEARTBEAT   TS_FRAME_HEARTBEAT_SIZE bytes: u64 the LSN just
 *                        past the primary's newest commit, i64 its clock
 *                        (ns), u32 the log's segment size as a power of
 *                        two (0: no segment yet); little-endian;
 *   TS_FRAME_END         the table was dropped; nothing follows.
 * payload[0..length) is valid until the next call on the ship; length
 * is at most TS_FRAME_PAYLOAD_MAX.
 */
typedef struct ts_ship ts_ship;
enum {
	TS_FRAME_TABLET = 'T',
	TS_FRAME_DESCRIPTOR = 'D',
	TS_FRAME_LOG = 'L',
	TS_FRAME_HEARTBEAT = 'H',
	TS_FRAME_END = 'E'
};
#define TS_FRAME_LAST 0x01u
#define TS_FRAME_PAYLOAD_MAX (1u << 20)
#define TS_FRAME_HEARTBEAT_SIZE 20
typedef struct ts_frame {
	int type;             /* TS_FRAME_* */
	unsigned flags;       /* TS_FRAME_LAST */
	uint64_t id;          /* TABLET: the tablet's id; DESCRIPTOR: the LSN;
	                       * LOG: the commit record ending it, or 0 */
	uint64_t offset;      /* TABLET: offset in the file; LOG: first LSN */
	const void *payload;
	uint32_t length;
} ts_frame;

/*
 * ts_ship_open -- start shipping table t to a standby that holds the
 * table's log below LSN lsn and the tablets tablets[0..ntablets) (ids;
 * 0 and none for a standby that holds nothing).  The ship reads the
 * table's files only (as ts_backup does), so t may be a read-only
 * handle beside a writer in another process.  It is counted as a
 * cursor: ts_close fails with TS_EBUSY until ts_ship_close.
 * Returns 0 with *out; TS_EINVAL (NULL t or out, tablets NULL with
 * ntablets > 0, negative ntablets); TS_ECLOSED; TS_ENOMEM.
 */
TS_EXTERN int ts_ship_open(ts_table *t, uint64_t lsn, const uint64_t *tablets, int ntablets,
                           ts_ship **out);

/*
 * ts_ship_next -- the next frame for the standby, without waiting.  In
 * order: a heartbeat; every tablet of the table's descriptor the
 * standby lacks, in chunks; the descriptor; then committed log bytes,
 * in LSN order, from lsn (or from the descriptor's flushed position
 * when that is higher) through the newest commit, trailing zeros of a
 * segment left out (the standby's fresh segment holds them), after one
 * more heartbeat when the first gave no segment size (the table had no
 * log yet); and again
 * tablets and descriptor each time the table's descriptor changes.  A
 * dropped table gives one TS_FRAME_END.
 * Returns 1 with *f; 0 when the standby has everything committed so
 * far (call again later: a new commit or descriptor gives new frames);
 * TS_EINVAL (NULL arguments, or lsn past the primary's newest commit:
 * the standby follows another history); TS_EBUSY (the descriptor kept
 * changing under every read); TS_ECORRUPT (a file the descriptor names
 * is missing or damaged); TS_EIO; TS_ENOMEM.
 */
TS_EXTERN int ts_ship_next(ts_ship *s, ts_frame *f);

/*
 * ts_ship_heartbeat -- a TS_FRAME_HEARTBEAT frame now (the newest
 * commit, the clock, the segment size), whatever the ship's state.
 * Returns 0 with *f; TS_EINVAL (NULL arguments); TS_ECORRUPT; TS_EIO.
 */
TS_EXTERN int ts_ship_heartbeat(ts_ship *s, ts_frame *f);

/* ts_ship_close -- end a ship (NULL: nothing). */
TS_EXTERN void ts_ship_close(ts_ship *s);

/* Bytes of a frame's header at most: the fixed fields and a table name. */
#define TS_FRAME_HEADER_MAX (28 + TS_NAME_MAX)

/*
 * ts_frame_header -- the wire header of frame f of table (docs/standby.md
 * section 2), its CRC-32C covering the header and f's payload, into
 * out[0..size); *n receives its length.  The payload follows it on the
 * wire.  Returns 0; TS_EINVAL (NULL arguments, an unknown type or flag,
 * a payload over TS_FRAME_PAYLOAD_MAX, an invalid table name);
 * TS_ETOOBIG (size too small: TS_FRAME_HEADER_MAX always suffices).
 */
TS_EXTERN int ts_frame_header(const char *table, const ts_frame *f, void *out, size_t size,
                              size_t *n);

/*
 * ts_frame_decode -- read one frame from in[0..size).  table: room for
 * TS_NAME_MAX + 1 bytes, receives its table.  Returns 1 with *f (its
 * payload points into in) and *used its bytes on the wire; 0 when in
 * holds no whole frame yet (*used 0: read more); TS_ECORRUPT (an unknown
 * type or flag, a bad name, a payload over TS_FRAME_PAYLOAD_MAX, a
 * checksum mismatch: the stream cannot be trusted past it); TS_EINVAL
 * (NULL arguments).
 */
TS_EXTERN int ts_frame_decode(const void *in, size_t size, ts_frame *f, char *table,
                              size_t *used);

/* ------------------------------------------------------------------ */
/* The standby: applying a primary's frames (docs/standby.md 1.1)       */
/* ------------------------------------------------------------------ */

/*
 * A standby is a database directory that a primary's frames
 * (ts_ship_next, decoded by ts_frame_decode) keep the primary's, byte
 * for byte: tablets verified and renamed into place, each DESCRIPTOR put
 * in place once the log holds the commit it goes with, log bytes at
 * their LSNs, log/HEAD in place.  At every moment, and after a crash at
 * any moment, the directory is the primary's database as of some commit
 * (a prefix): read-only handles (ts_open with TS_OPEN_READONLY) read it
 * as it is applied, and ts_check passes on it.  The standby holds the
 * database's LOCK: no writer (ts_open read-write, another standby) opens
 * it meanwhile.  A handle is used by one thread at a time.
 */
typedef struct ts_standby ts_standby;

/* What a standby holds of one table: what "follow" names
 * (ts_ship_open's lsn and tablets). */
typedef struct ts_standby_table {
	char name[TS_NAME_MAX + 1];
	uint64_t lsn;          /* the log is held below it: the end of its
	                        * last valid commit (0: nothing yet) */
	uint64_t *tablets;     /* ids of the complete tablet files, sorted */
	int ntablets;
} ts_standby_table;

/*
 * ts_standby_open -- open (creating it when missing) database directory
 * dir as a standby, taking its LOCK.  out: receives the handle.
 * Returns 0; TS_EINVAL (NULL out, NULL or empty dir); TS_ELOCKED
 * (a writer or another standby holds it; the message names the pid);
 * TS_EIO; TS_ENOSPC; TS_ENOMEM.
 */
TS_EXTERN int ts_standby_open(const char *dir, ts_standby **out);

/*
 * ts_standby_apply -- apply frame f of table (as ts_frame_decode gives
 * them, in stream order).  H takes the segment size; T writes a tablet
 * chunk, and with TS_FRAME_LAST syncs, verifies (header, trailer,
 * footer, every block's checksum) and renames the tablet into place; D
 * is held until the log reaches its id, then (segments synced, every
 * tablet it names present) written atomically, and the tablets and
 * segments it no longer needs are removed; L writes the bytes at their
 * LSN (creating the segment) and, when it ends a commit, names that
 * commit in log/HEAD; E drops the table.  A frame that does not follow
 * what the standby holds is refused and changes nothing durable: the
 * table's state in memory is forgotten, and a resume (ts_standby_state,
 * a new follow) goes on from what the files hold.
 * Returns 0; TS_EINVAL (NULL arguments, a bad table name, a frame that
 * does not follow: log bytes not at the end of the log or across a
 * segment, a tablet chunk not at the end of its file, log bytes before
 * the segment size is known, a segment size other than the standby's, a
 * DESCRIPTOR naming a tablet the standby lacks); TS_ECORRUPT (a tablet
 * that fails verification, a DESCRIPTOR that does not decode); TS_EIO;
 * TS_ENOSPC; TS_ENOMEM.
 */
TS_EXTERN int ts_standby_apply(ts_standby *sb, const char *table, const ts_frame *f);

/*
 * ts_standby_state -- per table, what the standby holds, read from its
 * files (the log walked from the DESCRIPTOR's flushed position as
 * recovery walks it): what to name in a new follow, whose primary then
 * sends the difference.  What streams left half applied (a tablet
 * being received, a DESCRIPTOR waiting for the log) is forgotten: the
 * primary sends it again.  *out receives *n entries, in directory
 * order; free them with ts_standby_state_free.
 * Returns 0; TS_EINVAL (NULL arguments); TS_ECORRUPT (a DESCRIPTOR that
 * does not decode); TS_EIO; TS_ENOMEM.
 */
TS_EXTERN int ts_standby_state(ts_standby *sb, ts_standby_table **out, int *n);

/* ts_standby_state_free -- free what ts_standby_state gave (NULL:
 * nothing). */
TS_EXTERN void ts_standby_state_free(ts_standby_table *tables, int n);

/*
 * ts_standby_adopt -- take the primary's lineage and epoch e (from its
 * answer to "follow") into the standby's EPOCH, durably, by
 * ts_epoch_adopt's rule: within the standby's lineage the epoch may only
 * stay or go up (a primary of a lower epoch than the standby's is
 * refused); another lineage only while the standby holds no table.
 * Returns 0; TS_EINVAL (NULL arguments, e->epoch 0, an epoch below the
 * standby's, another lineage while tables exist); TS_ECORRUPT (a damaged
 * EPOCH: never replaced silently); TS_ENOSPC; TS_EIO.
 */
TS_EXTERN int ts_standby_adopt(ts_standby *sb, const ts_epoch *e);

/*
 * ts_standby_sync -- make the log bytes applied so far durable (fsync of
 * the segments written since the last sync; DESCRIPTORs and tablets are
 * synced as they are put in place).  Returns 0; TS_EINVAL (NULL sb);
 * TS_EIO.
 */
TS_EXTERN int ts_standby_sync(ts_standby *sb);

/*
 * ts_standby_close -- sync (ts_standby_sync), release the LOCK, free the
 * handle (NULL: nothing).  A half-received tablet's file is removed.
 * Returns 0, or the error of the sync (the handle is freed all the same).
 */
TS_EXTERN int ts_standby_close(ts_standby *sb);

#ifdef __cplusplus
}
#endif

#endif /* TSSTORE_H */
