/*
 * row.h -- the compact encoding of one row (docs/row-format.md).
 *
 *   varint key length | key (key.h) | fixed area | variable area
 *
 * The fixed area holds the non-key int32 (4 bytes), int64, timestamp and
 * double (8 bytes) columns in column order, little-endian, so a numeric
 * column is read at a constant offset; the variable area holds the non-key
 * strings and blobs in column order, each a varint length and the bytes.
 * A row does not record its schema version: its container does (a tablet,
 * or a log commit), and decoding translates it to the current schema.
 */
#ifndef TS_ROW_H
#define TS_ROW_H

#include "buf.h"
#include "schema.h"

/* Append the encoding of vals[0..s->ncols) (checked values, see
 * ts__value_check) to b.  Returns 0, TS_ETOOBIG (key too long), TS_ENOMEM. */
int ts__row_encode(const ts__schema *s, const ts_value *vals, ts_buf *b);

/* Locate the key of an encoded row.  Returns 0 or TS_ECORRUPT. */
int ts__row_key(const void *row, size_t len, const void **key, size_t *klen);

/*
 * Decode a row written under schema `from` into vals[0..to->ncols) of the
 * schema `to` (a later version of the same table, or the same): appended
 * columns take their defaults, widened columns their new type.  Strings
 * point into row or scratch.  Returns 0 or TS_ECORRUPT, TS_ENOMEM.
 */
int ts__row_decode(const ts__schema *from, const ts__schema *to,
                   const void *row, size_t len, ts_value *vals,
                   ts_buf *scratch);

/* The stem every key of a read begins with (its key columns but ts,
 * encoded: data[0..len)) and those columns decoded, once, into
 * vals[0..nkey - 1) (strings pointing where the read keeps them). */
typedef struct ts__stem {
	const void *data;
	size_t len;
	ts_value *vals;
} ts__stem;

/*
 * ts__row_decode for a read whose keys all begin with one stem: the
 * row's key, key[0..klen) (located in row by ts__row_key), is compared
 * with the stem rather than decoded (nor its strings unescaped), and
 * only its ts is read; the key columns but ts take stem->vals.  typed:
 * vals hold the types a row of `from` decoded into them last gave its
 * fixed columns, which are then left alone (a run of 8-byte columns,
 * ts__schema.fixed_run, gets its values only).  Returns 0; 1 when the
 * key is not the stem and a ts (vals untouched: decode the row with
 * ts__row_decode); TS_ECORRUPT.
 */
int ts__row_decode_stem(const ts__schema *from, const ts__schema *to, const void *row,
                        size_t len, const void *key, size_t klen, const ts__stem *stem,
                        ts_value *vals, int typed);
/* The same when vals hold this stem's values and types already (the
 * cursor's last row went through the stem: stem_vals 1) -- they are left
 * alone too, and only ts, the fixed columns' values and the variable
 * columns are written. */
int ts__row_decode_stem_values(const ts__schema *from, const ts__schema *to, const void *row,
                               size_t len, const void *key, size_t klen, const ts__stem *stem,
                               ts_value *vals, int typed, int stem_vals);

/*
 * ts__row_decode_stem_values inlined for the row a one-series range
 * reads most: typed, stem_vals, and a row of the `to` schema's shape --
 * no variable-length column, a run of 8-byte fixed columns (fixed_run),
 * no column added since -- so that the row is its key, the stem and a
 * ts, then nfixed values.  Writes the ts and the values and returns 0;
 * returns 1 with vals untouched for any other row, a damaged one too
 * (the general call then decides, and reports the damage).
 */
static inline int ts__row_decode_stem_fixed(const ts__schema *from, const ts__schema *to,
                                            const void *row, size_t len, const void *key,
                                            size_t klen, const ts__stem *stem, ts_value *vals)
{
	const unsigned char *fixed = (const unsigned char *)key + klen;
	if (from->fixed_run < 0 || from->nvar != 0 || from->ncols != to->ncols ||
	    klen != stem->len + 8 || (const unsigned char *)row + len - fixed != from->fixed_size ||
	    memcmp(key, stem->data, stem->len) != 0)
		return 1;
	ts_value *v = &vals[from->key[from->nkey - 1]];
	v->v.i = (int64_t)(ts__load_be64(fixed - 8) ^ (UINT64_C(1) << 63));
	v = vals + from->fixed_run;
	for (int k = 0; k < from->nfixed; k++)
		v[k].v.i = (int64_t)ts__load_u64(fixed + 8 * k);
	return 0;
}

/* The same for columns want[0..nwant) of `to`, none of them in the key
 * but ts (read from the key's last 8 bytes); vals of the other key
 * columns are left as they were, those of other columns may be written
 * or not.  For projections, which are spared decoding (and unescaping)
 * the key and, when they want no variable-length column, every column
 * they drop.  The row's length is checked only as far as the wanted
 * columns lie. */
int ts__row_decode_values(const ts__schema *from, const ts__schema *to,
                          const void *row, size_t len, ts_value *vals,
                          const int *want, int nwant);

#endif
