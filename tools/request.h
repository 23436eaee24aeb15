/*
 * request.h -- what the two modes of a store call carry (store.h): the
 * requests that yield rows, the callbacks that receive rows, counters and
 * problems, and a schema of its own.  Both store.c (the direct mode and
 * the dispatch) and remote.c (through tsstored) use these; neither
 * includes the other's header for them (request.c).
 */
#ifndef TSSTORE_TOOLS_REQUEST_H
#define TSSTORE_TOOLS_REQUEST_H

#include <stdint.h>

#include <tsstore.h>

/* Functions an aggregate command may ask for at most. */
#define CLI_AGG_SPECS_MAX 64

/* The time range of an aggregate without --from / --to: everything. */
#define CLI_AGG_FROM_DEFAULT INT64_MIN
#define CLI_AGG_TO_DEFAULT INT64_MAX

enum cli_req_kind {
	CLI_REQ_QUERY,
	CLI_REQ_LATEST,
	CLI_REQ_AGGREGATE,
	CLI_REQ_DUMP, /* a query of every row */
	CLI_REQ_CHANGES, /* ts_changes_open: [prefix values..., from, to] */
};

/* A request that yields rows.  Zero-filled, then set what was given. */
struct cli_req {
	enum cli_req_kind kind;
	const char *table;
	ts_value prefix[TS_KEY_COLUMNS_MAX]; /* owned: cli_req_free */
	int nprefix;
	int64_t from, to;
	int has_from, has_to;
	int desc;
	uint64_t limit;                      /* 0: none */
	ts_value after[TS_KEY_COLUMNS_MAX];  /* query: resume strictly after this
	                                        full key (owned: cli_req_free) */
	int nafter;                          /* 0: from the start */
	int64_t every;                       /* aggregate */
	int group;
	ts_aggspec specs[CLI_AGG_SPECS_MAX];
	int nspecs;
	ts_changes_spec changes;             /* changes: since, until, resolution,
	                                        depth */
	int raw;                             /* aggregate: the table's own rows,
	                                        never a rollup (TS_AGG_NO_ROLLUP) */
};

/* Release the values a request owns. */
void cli_req_free(struct cli_req *r);

/*
 * Where a result cut by its limit stops: whether it was cut, and the full
 * key of the last row given (ts_cursor_resume, or the daemon's "next"),
 * which a request with that key as `after` continues from.  Zero-filled
 * before use; released with cli_more_free.
 */
struct cli_more {
	int more;                          /* the limit cut the result */
	ts_value key[TS_KEY_COLUMNS_MAX];  /* owned copies */
	int nkey;                          /* 0: not known */
	char source[TS_NAME_MAX + 1];      /* aggregate: the table whose rows
	                                      answered -- a rollup of the table
	                                      (ts_cursor_source; the daemon's
	                                      "source") or the table itself */
};

/* Keep a copy of the n values of key in m (replacing any).  Returns 0, or
 * TS_ENOMEM (m then holds no key). */
int cli_more_set_key(struct cli_more *m, const ts_value *key, int n);

/* A rollup's definition (ts_rollup_info; the "rollup" member of the
 * daemon's schema answer), as text: is_rollup 0 for a table that is no
 * rollup, the rest then empty. */
struct cli_rollup_def {
	int is_rollup;
	char source[TS_NAME_MAX + 1];
	char every[TS_DURATION_BUFSZ];
	int group;
	char columns[1024];                /* "cpu:max,cpu:mean" (cut if longer) */
};

/* Release the key m holds. */
void cli_more_free(struct cli_more *m);

/* A row of a result: n values, valid during the call.  Returns 0 to go
 * on, -1 to stop (the caller's output failed). */
typedef int cli_row_fn(void *arg, const ts_value *row, int n);

/*
 * cli_schema_new -- a schema of its own, in one allocation, from its
 * parts (copied: names and default bytes included).  Release it with
 * cli_schema_free.  Returns NULL when out of memory.
 */
ts_schema *cli_schema_new(const ts_column *columns, int ncolumns, const int *key, int nkey,
                          int64_t ttl, uint32_t version);

/* Release a schema of cli_schema_new or cli_store_schema.  NULL allowed. */
void cli_schema_free(ts_schema *s);

/* A counter of a table: an integer, or (ttl) a text.  Returns 0. */
typedef int cli_stat_fn(void *arg, const char *name, int64_t value, const char *text);

/* What cli_store_check calls: each problem (file relative to the
 * database directory), and the progress in bytes (may be NULL). */
struct cli_check_report {
	void (*problem)(void *arg, const char *table, const char *file, const char *what);
	void (*progress)(void *arg, uint64_t done, uint64_t total);
	void *arg;
};

#endif /* TSSTORE_TOOLS_REQUEST_H */
