/*
 * schema.h -- validated table schemas, their versions and row layout.
 *
 * A ts__schema is immutable once built.  Schema changes (append a column,
 * widen int32 to int64) build a new version from the old one; a table keeps
 * every version so that rows written under an old one are translated when
 * read (column identity is the column's index: columns are only appended).
 * The TTL is not part of a version: changing it rewrites nothing.
 */
#ifndef TS_SCHEMA_H
#define TS_SCHEMA_H

#include "buf.h"
#include "tsstore.h"

typedef struct ts__col {
	char name[TS_NAME_MAX + 1];
	ts_type type;
	ts_value dflt;   /* never TS_NONE except for ts (= now) */
	int key_pos;     /* position in the key, or -1 */
	int fixed_off;   /* offset in the row's fixed area, or -1 */
	int var_idx;     /* index among variable-size non-key columns, or -1 */
	void *dflt_mem;  /* owns the bytes of a string or blob default */
} ts__col;

/* Where a fixed-size non-key column lies in a row's fixed area. */
typedef struct ts__fixed_col {
	int col;         /* column index */
	int off;         /* its fixed_off */
	int is32;        /* an int32: 4 bytes, else 8 */
} ts__fixed_col;

typedef struct ts__schema {
	uint32_t version;
	int ncols;
	ts__col *cols;
	int nkey;
	int key[TS_KEY_COLUMNS_MAX]; /* column index of each key column */
	int ts_col;                  /* index of the ts column */
	int fixed_size;              /* bytes of the fixed area of a row */
	int nvar;                    /* number of variable-size non-key columns */
	int *var_cols;               /* their column indexes, in order */
	/* the fixed-size non-key columns in order, for decoding rows
	 * without a pass over every column's description */
	int nfixed;
	ts__fixed_col *fixed_cols;
	/* when the fixed columns are 8-byte ones, one after the other both as
	 * columns and in the fixed area: the index of the first (the row's
	 * value k lies at 8 k, column fixed_run + k); else -1 */
	int fixed_run;
} ts__schema;

/* Build version 1 from a user's description (see ts_create_keyed).
 * Returns 0, TS_ESCHEMA (message names the column and why; this includes
 * a string or blob default longer than TS_COLUMN_DEFAULT_MAX) or
 * TS_ENOMEM. */
int ts__schema_build(const ts_column *cols, int ncols,
                     const char *const *key, int nkey, ts__schema **out);

/* Whether a row of s's column defaults alone fits row_max bytes (what the
 * table's log can hold, ts__row_max; ts__schema_build and ts__schema_add
 * check TS_ROW_MAX).  Returns 0, or TS_ETOOBIG saying how large it is. */
int ts__schema_check_row_max(const ts__schema *s, uint64_t row_max);

/* New version = old + column c appended.  TS_EEXIST, TS_ESCHEMA, TS_ENOMEM. */
int ts__schema_add(const ts__schema *old, const ts_column *c, ts__schema **out);

/* New version = old with int32 column name widened to int64.
 * TS_ENOENT, TS_ESCHEMA, TS_ENOMEM. */
int ts__schema_widen(const ts__schema *old, const char *name, ts__schema **out);

void ts__schema_free(ts__schema *s);

/* Index of column name, or -1. */
int ts__schema_find(const ts__schema *s, const char *name);

/* Serialise to / parse from the descriptor's schema record (see
 * docs/descriptor-format.md).  Decode returns 0, TS_ECORRUPT or TS_ENOMEM;
 * it accepts string and blob defaults up to TS_VALUE_MAX, the limit before
 * TS_COLUMN_DEFAULT_MAX, so that older descriptors stay readable. */
void ts__schema_encode(const ts__schema *s, ts_buf *b);
int ts__schema_decode(ts_reader *r, ts__schema **out);

/* Whether s may follow prev in a table's history (docs/descriptor-format.md
 * §4.1): the same key, prev's columns in the same order under the same
 * names, any others appended, and no type change but int32 to int64.
 * Returns 0, or TS_ECORRUPT with a message naming the version and the
 * column. */
int ts__schema_check_successor(const ts__schema *prev, const ts__schema *s);

/* A public copy in one allocation (freed by ts_schema_free). */
int ts__schema_export(const ts__schema *s, int64_t ttl, ts_schema **out);

/*
 * Check value in against column col of s and convert it to the column's
 * type in *out (strings still point at the caller's bytes).  TS_NONE gives
 * the default.  Returns 0, TS_ETYPE, TS_ERANGE, TS_ETOOBIG or TS_EINVAL
 * (invalid UTF-8), with a message naming the column.
 */
int ts__value_check(const ts__schema *s, int col, const ts_value *in,
                    ts_value *out);

/* Whether p[0..n) is well-formed UTF-8 (no overlongs, no surrogates). */
int ts__utf8_valid(const void *p, size_t n);

static inline int ts__type_is_var(ts_type t)
{
	return t == TS_STRING || t == TS_BLOB;
}

static inline int ts__type_size(ts_type t)
{
	return t == TS_INT32 ? 4 : ts__type_is_var(t) ? 0 : 8;
}

static inline int ts__type_is_numeric(ts_type t)
{
	return t == TS_INT32 || t == TS_INT64 || t == TS_DOUBLE || t == TS_TIMESTAMP;
}

#endif
