/*
 * cursor.h -- what every kind of cursor (query, latest, aggregate) shares:
 * its snapshot and range, the decoded row, the resume key and the `more`
 * flag; the public ts_cursor_* calls dispatch through it.
 */
#ifndef TS_CURSOR_H
#define TS_CURSOR_H

#include "scan.h"

/* Values a cursor keeps in its own struct (vals_mem). */
#define TS__CURSOR_VALS 16

struct ts_cursor {
	ts_table *table;
	size_t size;              /* of the kind's struct (ts__cursor_open) */
	ts__scan scan;            /* the snapshot, and the streams of range */
	ts__range range;
	/* the next row as ts_cursor_next returns it */
	int (*next)(struct ts_cursor *c, const ts_value **row, int *n);
	/* free the kind's own state (not the struct); NULL: none */
	void (*destroy)(struct ts_cursor *c);
	/* start again from the first row, on the same snapshot; NULL: the
	 * kind cannot (set by its setup) */
	int (*rewind)(struct ts_cursor *c);
	int err;                  /* sticky: the error next returned */
	int more;                 /* the limit cut the result */
	ts_value *vals;           /* a row decoded in the snapshot's schema */
	/* vals' storage when ncols + nkey values fit (a usual table): no
	 * allocation per cursor */
	ts_value vals_mem[TS__CURSOR_VALS];
	/* when not NULL, decode only columns want[0..nwant): a projection
	 * or an aggregate with no key column but ts */
	const int *want;
	int nwant;
	/* the row's unescaped key strings (ts__key_decode), in scratch_mem
	 * while they fit: a latest lookup or a short query allocates none */
	ts_buf scratch;
	unsigned char scratch_mem[TS__SHORT_KEY];
	/* when every key of the range shares a stem (range.has_stem): its
	 * columns, decoded once, so that rows decode only their ts from the
	 * key (ts__row_decode_stem); stem_state 0: not decoded yet, 1:
	 * decoded, -1: none (no stem, it does not decode, or a cursor of one
	 * row, which the decoding once would not pay for).  stem.vals lie
	 * past vals' ncols, in the same allocation; their unescaped strings
	 * in stem_scratch */
	ts__stem stem;
	ts_buf stem_scratch;
	unsigned char stem_mem[TS__SHORT_KEY];
	int stem_state;
	int row_in_stem;          /* the row last decoded went through the stem */
	int stem_vals;            /* vals hold the stem's values and types (the
	                           * last decode went through the stem) */
	/* the schema version whose fixed columns' types vals hold, from the
	 * row decoded last (0: none known), so that the stem's next row of
	 * that version writes their values alone (ts__row_decode_stem) */
	uint32_t typed_version;
	/* the key of the last row returned (ts_cursor_resume): encoded in
	 * last_key, or, when last_in_stem, the range's stem and last_ts
	 * (a query spares each row the copy) */
	ts_buf last_key;
	int last_in_stem;
	int64_t last_ts;
	unsigned char last_key_mem[TS__SHORT_KEY];
	ts_buf resume_scratch;
	ts_value *resume;         /* TS_KEY_COLUMNS_MAX, on the first ts_cursor_resume */
	char source[TS_NAME_MAX + 1]; /* an aggregate answered partly from a
	                          * rollup: its name (ts_cursor_source) */
};

/*
 * Make a cursor of size bytes (a kind's struct, struct ts_cursor first)
 * on table t with the kind's next and destroy: take its snapshot, then
 * call setup(c, arg), which builds c->range and starts c->scan.  On
 * failure the cursor is closed.  Returns 0 or the first error.
 */
int ts__cursor_open(ts_table *t, size_t size,
                    int (*next)(struct ts_cursor *, const ts_value **, int *),
                    void (*destroy)(struct ts_cursor *),
                    int (*setup)(struct ts_cursor *, const void *), const void *arg,
                    ts_cursor **out);

/* Decode a row of schema version `version` of the cursor's snapshot,
 * whose key is key[0..klen) (ts__row_key), into c->vals (only columns
 * c->want, when set).
 * Returns 0, TS_ECORRUPT or TS_ENOMEM. */
/* Free the memory of the cursor t keeps for its next (query.c), when the
 * table is freed. */
void ts__cursor_spare_free(ts_table *t);

int ts__cursor_decode(struct ts_cursor *c, uint32_t version, const void *row, size_t len,
                      const void *key, size_t klen);

/*
 * Encode n values of the leading key columns of s (vals[0..n), in key
 * order) into out for a bound named what ("prefix", "lower", ...).
 * Values are converted as inserts convert them; TS_NONE is refused.
 * Returns 0, TS_EINVAL (n out of 0..nkey, a missing value), TS_ETYPE,
 * TS_ERANGE, TS_ETOOBIG, TS_ENOMEM.
 */
int ts__bound_encode(const ts__schema *s, const ts_value *vals, int n, const char *what,
                     ts_buf *out);

/*
 * Narrow r to the keys starting with prefix[0..n) and the ts interval
 * [tmin, tmax], and when the prefix fixes every key column but ts, turn
 * the interval into key bounds and note the stem for Bloom filters.
 * Returns 0 or the errors of ts__bound_encode.
 */
int ts__range_prefix(ts__range *r, const ts__schema *s, const ts_value *prefix, int n,
                     int64_t tmin, int64_t tmax);

/*
 * Build r (initialised, no bound yet) from q's selection as ts_query_open
 * does: its prefix, lower and upper bounds, resume key (in q->desc's
 * direction), and from/to, with ts below expiry left out (INT64_MIN:
 * none).  ts_delete builds its tombstones with it, so a delete hides
 * exactly the rows a query of the same selection returns.
 * Returns 0 or the errors of ts__bound_encode.
 */
int ts__range_of_query(ts__range *r, const ts__schema *s, const ts_query *q, int64_t expiry);

#endif
