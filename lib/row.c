/*
 * row.c -- encoding rows and decoding them into the current schema.
 *
 * Encoding trusts its input (values were checked on the way in); decoding
 * trusts nothing: a row read from a damaged file yields TS_ECORRUPT, never
 * a read outside the row.
 */
#include <assert.h>

#include "error.h"
#include "key.h"
#include "row.h"

int ts__row_encode(const ts__schema *s, const ts_value *vals, ts_buf *b)
{
	ts_value keyvals[TS_KEY_COLUMNS_MAX];
	ts_buf key;
	int rc;
	for (int k = 0; k < s->nkey; k++)
		keyvals[k] = vals[s->key[k]];
	ts__buf_init(&key);
	if ((rc = ts__key_encode(s, keyvals, s->nkey, &key)) < 0)
		goto out;
	ts__put_bytes(b, key.data, key.len);
	unsigned char *fixed = NULL;
	if (s->fixed_size && ts__buf_reserve(b, (size_t)s->fixed_size) == 0) {
		fixed = b->data + b->len;
		b->len += (size_t)s->fixed_size;
	}
	for (int i = 0; fixed && i < s->ncols; i++) {
		const ts__col *c = &s->cols[i];
		if (c->fixed_off < 0)
			continue;
		if (c->type == TS_INT32)
			ts__store_u32(fixed + c->fixed_off, (uint32_t)(int32_t)vals[i].v.i);
		else
			ts__store_u64(fixed + c->fixed_off, (uint64_t)vals[i].v.i);
	}
	for (int j = 0; j < s->nvar; j++) {
		const ts_value *v = &vals[s->var_cols[j]];
		ts__put_bytes(b, v->v.s.ptr, v->v.s.len);
	}
	rc = b->oom ? ts__fail(TS_ENOMEM, "out of memory encoding a row") : 0;
out:
	ts__buf_free(&key);
	return rc;
}

int ts__row_key(const void *row, size_t len, const void **key, size_t *klen)
{
	ts_reader r;
	ts__reader_init(&r, row, len);
	ts__get_bytes(&r, key, klen);
	if (r.bad || *klen < 8)
		return ts__fail(TS_ECORRUPT, "malformed row: bad key length");
	return 0;
}

static void read_fixed(const ts__col *c, const unsigned char *fixed, ts_value *v)
{
	if (c->type == TS_INT32)
		v->v.i = (int32_t)ts__load_u32(fixed + c->fixed_off);
	else
		v->v.i = (int64_t)ts__load_u64(fixed + c->fixed_off);
}

/* Decode the rest of a row, past its key, from r into vals: the key
 * columns from keyvals[0..from->nkey) (NULL: left alone), the others from
 * the fixed and variable areas, and the columns `to` added since `from`
 * from their defaults.  typed: vals already hold the types of from's
 * fixed columns (a row of the same version decoded into them last), so
 * that a run of 8-byte columns (fixed_run) needs its values alone. */
static int decode_rest(const ts__schema *from, const ts__schema *to, ts_reader *r,
                       const ts_value *keyvals, ts_value *vals, int typed)
{
	const unsigned char *fixed = ts__get_raw(r, (size_t)from->fixed_size);
	if (r->bad)
		return ts__fail(TS_ECORRUPT, "malformed row: bad length");
	for (int k = 0; keyvals && k < from->nkey; k++) {
		int i = from->key[k];
		vals[i].type = to->cols[i].type;
		vals[i].v = keyvals[k].v;
	}
	if (typed && from->fixed_run >= 0) {
		ts_value *v = vals + from->fixed_run;
		for (int k = 0; k < from->nfixed; k++)
			v[k].v.i = (int64_t)ts__load_u64(fixed + 8 * k);
	} else if (from->fixed_run >= 0) { /* the same with the types: no per-column lookup */
		ts_value *v = vals + from->fixed_run;
		const ts__col *tc = to->cols + from->fixed_run;
		for (int k = 0; k < from->nfixed; k++) {
			v[k].type = tc[k].type;
			v[k].v.i = (int64_t)ts__load_u64(fixed + 8 * k);
		}
	} else {
		const ts__col *tcols = to->cols;
		for (const ts__fixed_col *f = from->fixed_cols, *end = f + from->nfixed; f < end; f++) {
			int col = f->col;
			int64_t x = f->is32 ? (int32_t)ts__load_u32(fixed + f->off)
			                    : (int64_t)ts__load_u64(fixed + f->off);
			vals[col].type = tcols[col].type;
			vals[col].v.i = x;
		}
	}
	for (int j = 0; j < from->nvar; j++) {
		ts_value *v = &vals[from->var_cols[j]];
		v->type = to->cols[from->var_cols[j]].type;
		ts__get_bytes(r, &v->v.s.ptr, &v->v.s.len);
	}
	if (r->bad || ts__reader_left(r) != 0)
		return ts__fail(TS_ECORRUPT, "malformed row: bad length");
	for (int i = from->ncols; i < to->ncols; i++)
		vals[i] = to->cols[i].dflt;
	return 0;
}

/* Decode row into vals; keys: the key columns too (else left alone). */
static int decode(const ts__schema *from, const ts__schema *to, const void *row, size_t len,
                  ts_value *vals, ts_buf *scratch, int keys)
{
	ts_value keyvals[TS_KEY_COLUMNS_MAX];
	const void *key;
	size_t klen, used;
	ts_reader r;
	ts__reader_init(&r, row, len);
	ts__get_bytes(&r, &key, &klen);
	if (r.bad || (keys && (ts__key_decode(from, key, klen, from->nkey, keyvals, scratch,
	                                      &used) < 0 ||
	                       used != klen)))
		return ts__fail(TS_ECORRUPT, "malformed row: bad key");
	return decode_rest(from, to, &r, keys ? keyvals : NULL, vals, 0);
}

int ts__row_decode_stem(const ts__schema *from, const ts__schema *to, const void *row,
                        size_t len, const void *key, size_t klen, const ts__stem *stem,
                        ts_value *vals, int typed)
{
	return ts__row_decode_stem_values(from, to, row, len, key, klen, stem, vals, typed, 0);
}

int ts__row_decode_stem_values(const ts__schema *from, const ts__schema *to, const void *row,
                               size_t len, const void *key, size_t klen, const ts__stem *stem,
                               ts_value *vals, int typed, int stem_vals)
{
	const unsigned char *rest = (const unsigned char *)key + klen;
	ts_reader r;
	assert(from->nkey >= 1 && from->nkey <= TS_KEY_COLUMNS_MAX);
	assert(rest > (const unsigned char *)row && rest <= (const unsigned char *)row + len);
	if (klen != stem->len + 8 || ts__key_cmp(key, stem->len, stem->data, stem->len) != 0)
		return 1;
	int last = from->nkey - 1; /* ts, the key's last column */
	for (int k = 0; !stem_vals && k < last; k++) {
		int i = from->key[k];
		vals[i].type = to->cols[i].type;
		vals[i].v = stem->vals[k].v;
	}
	vals[from->key[last]].type = TS_TIMESTAMP;
	vals[from->key[last]].v.i = ts__key_ts(key, klen);
	ts__reader_init(&r, rest, (size_t)((const unsigned char *)row + len - rest));
	return decode_rest(from, to, &r, NULL, vals, typed);
}

int ts__row_decode(const ts__schema *from, const ts__schema *to,
                   const void *row, size_t len, ts_value *vals,
                   ts_buf *scratch)
{
	return decode(from, to, row, len, vals, scratch, 1);
}

/* vals[ts] from the key's last 8 bytes, when ts is wanted. */
static int want_ts(const ts__schema *to, const void *row, size_t len, ts_value *vals,
                   const int *want, int nwant)
{
	const void *key;
	size_t klen;
	for (int k = 0; k < nwant; k++)
		if (want[k] == to->ts_col) {
			if (ts__row_key(row, len, &key, &klen) < 0)
				return TS_ECORRUPT;
			vals[to->ts_col].type = TS_TIMESTAMP;
			vals[to->ts_col].v.i = ts__key_ts(key, klen);
			return 0;
		}
	return 0;
}

int ts__row_decode_values(const ts__schema *from, const ts__schema *to,
                          const void *row, size_t len, ts_value *vals,
                          const int *want, int nwant)
{
	for (int k = 0; k < nwant; k++)
		if (want[k] < from->ncols && want[k] != to->ts_col && from->cols[want[k]].fixed_off < 0) {
			/* a variable-length column: every one before it must be walked */
			int rc = decode(from, to, row, len, vals, NULL, 0);
			return rc < 0 ? rc : want_ts(to, row, len, vals, want, nwant);
		}
	const void *key;
	size_t klen;
	ts_reader r;
	ts__reader_init(&r, row, len);
	ts__get_bytes(&r, &key, &klen);
	const unsigned char *fixed = ts__get_raw(&r, (size_t)from->fixed_size);
	if (r.bad || klen < 8)
		return ts__fail(TS_ECORRUPT, "malformed row: bad length");
	for (int k = 0; k < nwant; k++) {
		int i = want[k];
		if (i == to->ts_col) {
			vals[i].type = TS_TIMESTAMP;
			vals[i].v.i = ts__key_ts(key, klen);
		} else if (i >= from->ncols) {
			vals[i] = to->cols[i].dflt;
		} else {
			vals[i].type = to->cols[i].type;
			read_fixed(&from->cols[i], fixed, &vals[i]);
		}
	}
	return 0;
}
