/*
 * schema.c -- building, validating, changing and serialising schemas.
 *
 * Invariants of every ts__schema (asserted by finish()):
 *   - 1 <= ncols <= TS_COLUMNS_MAX, names valid and unique ignoring case
 *     (so that SQL, which folds case, can name every column);
 *   - 1 <= nkey <= TS_KEY_COLUMNS_MAX, no column twice, and the last key
 *     column is "ts" of type timestamp;
 *   - every column but ts has a default of its own type; a string or blob
 *     default of a column added through the API is at most
 *     TS_COLUMN_DEFAULT_MAX bytes (one read from a descriptor, at most
 *     TS_VALUE_MAX: older builds allowed that much).
 * A table's versions are checked against each other on decode
 * (ts__schema_check_successor): only ts__schema_add and ts__schema_widen
 * make new versions, and a descriptor whose versions could not have come
 * from them is damaged.
 * Row layout (docs/row-format.md): key columns live in the encoded key;
 * the other fixed-size columns get offsets in a fixed area in column
 * order; strings and blobs follow, in column order.  finish() computes it.
 */
#include <assert.h>
#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "error.h"
#include "tslimits.h"
#include "schema.h"

int ts_name_valid(const char *name)
{
	if (!name || !(isalpha((unsigned char)name[0]) || name[0] == '_'))
		return 0;
	size_t n = 1;
	for (; name[n]; n++)
		if (!(isalnum((unsigned char)name[n]) || name[n] == '_') || n >= TS_NAME_MAX)
			return 0;
	return 1;
}

static ts__schema *schema_alloc(int ncols)
{
	ts__schema *s = calloc(1, sizeof *s);
	if (!s)
		return NULL;
	s->cols = calloc((size_t)ncols, sizeof *s->cols);
	s->var_cols = calloc((size_t)ncols, sizeof *s->var_cols);
	s->fixed_cols = calloc((size_t)ncols, sizeof *s->fixed_cols);
	if (!s->cols || !s->var_cols || !s->fixed_cols) {
		free(s->cols);
		free(s->var_cols);
		free(s->fixed_cols);
		free(s);
		return NULL;
	}
	s->ncols = ncols;
	return s;
}

void ts__schema_free(ts__schema *s)
{
	if (!s)
		return;
	for (int i = 0; i < s->ncols; i++)
		free(s->cols[i].dflt_mem);
	free(s->cols);
	free(s->var_cols);
	free(s->fixed_cols);
	free(s);
}

int ts__schema_find(const ts__schema *s, const char *name)
{
	for (int i = 0; i < s->ncols; i++)
		if (strcmp(s->cols[i].name, name) == 0)
			return i;
	return -1;
}

static int find_nocase(const ts__schema *s, int ncols, const char *name)
{
	for (int i = 0; i < ncols; i++)
		if (strcasecmp(s->cols[i].name, name) == 0)
			return i;
	return -1;
}

/* Store v as column c's default, copying string and blob bytes. */
static int set_default(ts__col *c, const ts_value *v)
{
	c->dflt = *v;
	if (!ts__type_is_var(v->type))
		return 0;
	size_t n = v->v.s.len;
	c->dflt_mem = malloc(n ? n : 1);
	if (!c->dflt_mem)
		return ts__fail(TS_ENOMEM, "out of memory");
	if (n)
		memcpy(c->dflt_mem, v->v.s.ptr, n);
	c->dflt.v.s.ptr = c->dflt_mem;
	return 0;
}

static ts_value zero_value(ts_type t)
{
	ts_value v;
	memset(&v, 0, sizeof v);
	v.type = t;
	if (t == TS_STRING || t == TS_BLOB)
		v.v.s.ptr = "";
	return v;
}

/* Fill column i of s from the user's column, validating it.  A string or
 * blob default may be at most max_default bytes: TS_COLUMN_DEFAULT_MAX for
 * a new column, TS_VALUE_MAX for one read back from a descriptor (which
 * may predate that limit). */
static int col_init(ts__schema *s, int i, const ts_column *in, size_t max_default)
{
	ts__col *c = &s->cols[i];
	if (!ts_name_valid(in->name))
		return ts__fail(TS_ESCHEMA, "column %d: invalid name \"%.80s\" (want [A-Za-z_][A-Za-z0-9_]{0,63})",
		                i, in->name ? in->name : "(null)");
	if (find_nocase(s, i, in->name) >= 0)
		return ts__fail(TS_ESCHEMA, "column \"%s\": duplicate column name", in->name);
	if (in->type < TS_INT32 || in->type > TS_BLOB)
		return ts__fail(TS_ESCHEMA, "column \"%s\": unknown type %d", in->name, (int)in->type);
	strcpy(c->name, in->name);
	c->type = in->type;
	c->key_pos = -1;
	if (strcmp(c->name, "ts") == 0) {
		if (c->type != TS_TIMESTAMP)
			return ts__fail(TS_ESCHEMA, "column \"ts\": must have type timestamp, not %s",
			                ts_type_name(c->type));
		if (in->dflt.type != TS_NONE)
			return ts__fail(TS_ESCHEMA, "column \"ts\": cannot have a default (a missing ts is the current time)");
		c->dflt = zero_value(TS_NONE);
		return 0;
	}
	ts_value d = in->dflt.type == TS_NONE ? zero_value(c->type) : in->dflt;
	ts_value checked;
	if (ts__type_is_var(c->type) && ts__type_is_var(d.type) && d.v.s.len > max_default)
		return ts__fail(TS_ESCHEMA, "column \"%s\": default of %zu bytes exceeds the limit of %zu",
		                c->name, d.v.s.len, max_default);
	int rc = ts__value_check(s, i, &d, &checked);
	if (rc < 0)
		return ts__context(TS_ESCHEMA, "default");
	return set_default(c, &checked);
}

/* Compute key positions and the row layout; check the invariants. */
static int finish(ts__schema *s)
{
	int off = 0;
	s->nvar = s->nfixed = 0;
	s->ts_col = -1;
	for (int i = 0; i < s->ncols; i++)
		s->cols[i].key_pos = -1;
	for (int k = 0; k < s->nkey; k++)
		s->cols[s->key[k]].key_pos = k;
	for (int i = 0; i < s->ncols; i++) {
		ts__col *c = &s->cols[i];
		c->fixed_off = c->var_idx = -1;
		if (strcmp(c->name, "ts") == 0)
			s->ts_col = i;
		if (c->key_pos >= 0)
			continue;
		if (ts__type_is_var(c->type)) {
			c->var_idx = s->nvar;
			s->var_cols[s->nvar++] = i;
		} else {
			c->fixed_off = off;
			s->fixed_cols[s->nfixed++] = (ts__fixed_col){i, off, c->type == TS_INT32};
			off += ts__type_size(c->type);
		}
	}
	s->fixed_size = off;
	s->fixed_run = s->nfixed ? s->fixed_cols[0].col : -1;
	for (int k = 0; k < s->nfixed; k++)
		if (s->fixed_cols[k].is32 || s->fixed_cols[k].col != s->fixed_run + k ||
		    s->fixed_cols[k].off != 8 * k)
			s->fixed_run = -1;
	assert(s->ts_col >= 0 && s->key[s->nkey - 1] == s->ts_col);
	return 0;
}

/* Resolve key names to column indexes. */
static int resolve_key(ts__schema *s, const char *const *key, int nkey)
{
	if (nkey < 1 || nkey > TS_KEY_COLUMNS_MAX)
		return ts__fail(TS_ESCHEMA, "key: %d columns; want 1 to %d, ending with ts",
		                nkey, TS_KEY_COLUMNS_MAX);
	for (int k = 0; k < nkey; k++) {
		int i = key[k] ? ts__schema_find(s, key[k]) : -1;
		if (i < 0)
			return ts__fail(TS_ESCHEMA, "key column \"%.80s\": no such column",
			                key[k] ? key[k] : "(null)");
		for (int j = 0; j < k; j++)
			if (s->key[j] == i)
				return ts__fail(TS_ESCHEMA, "key column \"%s\": listed twice", key[k]);
		s->key[k] = i;
	}
	if (strcmp(key[nkey - 1], "ts") != 0)
		return ts__fail(TS_ESCHEMA, "key: the last key column must be ts, not \"%s\"",
		                key[nkey - 1]);
	s->nkey = nkey;
	return 0;
}

/* Where an implicit ts column goes: right after the last other key column
 * (so that "host, ts, value" comes out of columns "host, value" and key
 * "host, ts"). */
static int implicit_ts_position(const ts_column *cols, int ncols,
                                const char *const *key, int nkey)
{
	int pos = 0;
	for (int k = 0; k < nkey; k++)
		for (int i = 0; i < ncols; i++)
			if (key[k] && cols[i].name && strcmp(cols[i].name, key[k]) == 0 && i + 1 > pos)
				pos = i + 1;
	return pos;
}

static int has_column(const ts_column *cols, int ncols, const char *name)
{
	for (int i = 0; i < ncols; i++)
		if (cols[i].name && strcmp(cols[i].name, name) == 0)
			return 1;
	return 0;
}

/* A row of s's defaults alone (what every insert that leaves the columns
 * out stores) must fit row_max, or no such insert could ever succeed:
 * the create or alter is refused instead (issue 24: limits are met where
 * the user acts).  The key is not counted: its values come with the row. */
static int check_default_row(const ts__schema *s, uint64_t row_max)
{
	uint64_t bytes = (uint64_t)s->fixed_size;
	for (int j = 0; j < s->nvar; j++)
		bytes += 5 + s->cols[s->var_cols[j]].dflt.v.s.len; /* varint length + bytes */
	if (bytes <= row_max)
		return 0;
	return ts__fail(TS_ETOOBIG, "a row of the column defaults alone takes %llu bytes, more "
	                "than the limit of %llu bytes for a row", (unsigned long long)bytes,
	                (unsigned long long)row_max);
}

int ts__schema_check_row_max(const ts__schema *s, uint64_t row_max)
{
	return check_default_row(s, row_max);
}

int ts__schema_build(const ts_column *cols, int ncols,
                     const char *const *key, int nkey, ts__schema **out)
{
	ts__schema *s = NULL;
	int rc, add_ts = !has_column(cols, ncols, "ts");
	int ts_pos = add_ts ? implicit_ts_position(cols, ncols, key, nkey) : -1;
	int total = ncols + add_ts;
	*out = NULL;
	if (ncols < 0 || total < 1 || total > TS_COLUMNS_MAX)
		return ts__fail(TS_ESCHEMA, "%d columns; want 1 to %d", ncols, TS_COLUMNS_MAX);
	if (!(s = schema_alloc(total)))
		return ts__fail(TS_ENOMEM, "out of memory");
	s->version = 1;
	const ts_column ts_def = {"ts", TS_TIMESTAMP, {TS_NONE, {0}}};
	for (int i = 0, j = 0; i < total; i++) {
		const ts_column *c = i == ts_pos ? &ts_def : &cols[j++];
		if ((rc = col_init(s, i, c, TS_COLUMN_DEFAULT_MAX)) < 0)
			goto out;
	}
	if ((rc = resolve_key(s, key, nkey)) < 0)
		goto out;
	finish(s);
	if ((rc = check_default_row(s, TS_ROW_MAX)) < 0)
		goto out;
	*out = s;
	s = NULL;
out:
	ts__schema_free(s);
	return rc;
}

/* A copy of old with room for extra more columns, version + 1.  Returns
 * 0, TS_ESCHEMA (old is the last version a table may have) or
 * TS_ENOMEM. */
static int schema_copy(const ts__schema *old, int extra, ts__schema **out)
{
	ts__schema *s = schema_alloc(old->ncols + extra);
	if (!s)
		return ts__fail(TS_ENOMEM, "out of memory");
	if (old->version >= TS_SCHEMA_VERSIONS_MAX) {
		ts__schema_free(s);
		return ts__fail(TS_ESCHEMA, "schema version %u is the last a table may have: "
		                "the limit is %u schema versions (each alter adds one)",
		                old->version, (unsigned)TS_SCHEMA_VERSIONS_MAX);
	}
	s->version = old->version + 1;
	s->nkey = old->nkey;
	memcpy(s->key, old->key, sizeof s->key);
	for (int i = 0; i < old->ncols; i++) {
		s->cols[i] = old->cols[i];
		s->cols[i].dflt_mem = NULL;
		int rc = set_default(&s->cols[i], &old->cols[i].dflt);
		if (rc < 0) { /* TS_ENOMEM, its message recorded */
			s->ncols = i + 1;
			ts__schema_free(s);
			return rc;
		}
	}
	*out = s;
	return 0;
}

int ts__schema_add(const ts__schema *old, const ts_column *c, ts__schema **out)
{
	ts__schema *s = NULL;
	int rc;
	*out = NULL;
	if (old->ncols >= TS_COLUMNS_MAX)
		return ts__fail(TS_ESCHEMA, "table has %d columns already, the most allowed",
		                old->ncols);
	if (c->name && find_nocase(old, old->ncols, c->name) >= 0)
		return ts__fail(TS_EEXIST, "column \"%s\": already exists", c->name);
	if ((rc = schema_copy(old, 1, &s)) < 0)
		return rc;
	if ((rc = col_init(s, old->ncols, c, TS_COLUMN_DEFAULT_MAX)) < 0) {
		ts__schema_free(s);
		return rc;
	}
	finish(s);
	if ((rc = check_default_row(s, TS_ROW_MAX)) < 0) {
		ts__schema_free(s);
		return rc;
	}
	*out = s;
	return 0;
}

int ts__schema_widen(const ts__schema *old, const char *name, ts__schema **out)
{
	int i = ts__schema_find(old, name), rc;
	*out = NULL;
	if (i < 0)
		return ts__fail(TS_ENOENT, "column \"%.80s\": no such column", name);
	if (old->cols[i].type != TS_INT32)
		return ts__fail(TS_ESCHEMA, "column \"%s\": only int32 can be widened, it is %s",
		                name, ts_type_name(old->cols[i].type));
	if ((rc = schema_copy(old, 0, out)) < 0)
		return rc;
	(*out)->cols[i].type = TS_INT64;
	(*out)->cols[i].dflt.type = TS_INT64;
	finish(*out);
	return 0;
}

/* ---- serialisation (docs/descriptor-format.md, "schema record") ---- */

static void encode_value(ts_buf *b, const ts_value *v)
{
	ts__put_u8(b, (uint8_t)v->type);
	if (v->type == TS_NONE)
		return;
	if (ts__type_is_var(v->type))
		ts__put_bytes(b, v->v.s.ptr, v->v.s.len);
	else
		ts__put_u64(b, (uint64_t)v->v.i); /* doubles: their bits */
}

static void decode_value(ts_reader *r, ts_value *v)
{
	memset(v, 0, sizeof *v);
	v->type = (ts_type)ts__get_u8(r);
	if (v->type == TS_NONE)
		return;
	if (ts__type_is_var(v->type))
		ts__get_bytes(r, &v->v.s.ptr, &v->v.s.len);
	else
		v->v.i = (int64_t)ts__get_u64(r);
}

void ts__schema_encode(const ts__schema *s, ts_buf *b)
{
	ts__put_u32(b, s->version);
	ts__put_u16(b, (uint16_t)s->ncols);
	for (int i = 0; i < s->ncols; i++) {
		const ts__col *c = &s->cols[i];
		ts__put_bytes(b, c->name, strlen(c->name));
		ts__put_u8(b, (uint8_t)c->type);
		encode_value(b, &c->dflt);
	}
	ts__put_u8(b, (uint8_t)s->nkey);
	for (int k = 0; k < s->nkey; k++)
		ts__put_u16(b, (uint16_t)s->key[k]);
}

/* Decode column i; the checks are those of col_init. */
static int decode_col(ts_reader *r, ts__schema *s, int i)
{
	const void *name;
	size_t n;
	ts_column in;
	char buf[TS_NAME_MAX + 1];
	ts__get_bytes(r, &name, &n);
	in.type = (ts_type)ts__get_u8(r);
	decode_value(r, &in.dflt);
	if (r->bad || n > TS_NAME_MAX)
		return ts__fail(TS_ECORRUPT, "schema record: column %d is truncated", i);
	/* A NUL would cut the name short, and the shorter name might pass. */
	if (memchr(name, '\0', n))
		return ts__fail(TS_ECORRUPT, "schema record: column %d: name contains a NUL byte", i);
	memcpy(buf, name, n);
	buf[n] = '\0';
	in.name = buf;
	int rc = col_init(s, i, &in, TS_VALUE_MAX);
	return rc < 0 ? ts__context(TS_ECORRUPT, "schema record") : 0;
}

static int decode_key(ts_reader *r, ts__schema *s)
{
	s->nkey = ts__get_u8(r);
	if (s->nkey < 1 || s->nkey > TS_KEY_COLUMNS_MAX)
		return ts__fail(TS_ECORRUPT, "schema record: %d key columns", s->nkey);
	for (int k = 0; k < s->nkey; k++) {
		s->key[k] = ts__get_u16(r);
		if (s->key[k] >= s->ncols)
			return ts__fail(TS_ECORRUPT, "schema record: key column %d out of range", k);
		for (int j = 0; j < k; j++)
			if (s->key[j] == s->key[k])
				return ts__fail(TS_ECORRUPT, "schema record: key column repeated");
	}
	if (r->bad || strcmp(s->cols[s->key[s->nkey - 1]].name, "ts") != 0)
		return ts__fail(TS_ECORRUPT, "schema record: key does not end with ts");
	return 0;
}

int ts__schema_decode(ts_reader *r, ts__schema **out)
{
	uint32_t version = ts__get_u32(r);
	int ncols = ts__get_u16(r), rc;
	ts__schema *s;
	*out = NULL;
	if (r->bad || ncols < 1 || ncols > TS_COLUMNS_MAX || version < 1)
		return ts__fail(TS_ECORRUPT, "schema record: bad header");
	if (!(s = schema_alloc(ncols)))
		return ts__fail(TS_ENOMEM, "out of memory");
	s->version = version;
	for (int i = 0; i < ncols; i++)
		if ((rc = decode_col(r, s, i)) < 0)
			goto fail;
	if ((rc = decode_key(r, s)) < 0)
		goto fail;
	finish(s);
	*out = s;
	return 0;
fail:
	ts__schema_free(s);
	return rc;
}

/* Whether the key of s lists the same columns as that of prev; names the
 * first difference. */
static int check_same_key(const ts__schema *prev, const ts__schema *s)
{
	if (s->nkey != prev->nkey)
		return ts__fail(TS_ECORRUPT, "schema version %u: %d key columns, version %u has %d",
		                s->version, s->nkey, prev->version, prev->nkey);
	for (int k = 0; k < s->nkey; k++)
		if (s->key[k] != prev->key[k])
			return ts__fail(TS_ECORRUPT, "schema version %u: key column %d is \"%s\", was \"%s\" in version %u",
			                s->version, k, s->cols[s->key[k]].name,
			                prev->cols[prev->key[k]].name, prev->version);
	return 0;
}

int ts__schema_check_successor(const ts__schema *prev, const ts__schema *s)
{
	int rc = check_same_key(prev, s);
	if (rc < 0)
		return rc;
	if (s->ncols < prev->ncols)
		return ts__fail(TS_ECORRUPT, "schema version %u: %d columns, fewer than the %d of version %u (column \"%s\" is missing)",
		                s->version, s->ncols, prev->ncols, prev->version,
		                prev->cols[s->ncols].name);
	for (int i = 0; i < prev->ncols; i++) {
		const ts__col *a = &prev->cols[i], *b = &s->cols[i];
		if (strcmp(a->name, b->name) != 0)
			return ts__fail(TS_ECORRUPT, "schema version %u: column %d is \"%s\", was \"%s\" in version %u",
			                s->version, i, b->name, a->name, prev->version);
		if (a->type != b->type && !(a->type == TS_INT32 && b->type == TS_INT64))
			return ts__fail(TS_ECORRUPT, "schema version %u: column \"%s\" changed type from %s to %s (only int32 to int64 is allowed)",
			                s->version, b->name, ts_type_name(a->type), ts_type_name(b->type));
	}
	return 0;
}

/* ---- public copies ---- */

int ts__schema_export(const ts__schema *s, int64_t ttl, ts_schema **out)
{
	size_t bytes = sizeof(ts_schema) + (size_t)s->ncols * sizeof(ts_column) +
	               (size_t)s->nkey * sizeof(int);
	for (int i = 0; i < s->ncols; i++)
		bytes += strlen(s->cols[i].name) + 1 +
		         (ts__type_is_var(s->cols[i].type) ? s->cols[i].dflt.v.s.len : 0);
	char *mem = calloc(1, bytes);
	if (!(*out = (ts_schema *)mem))
		return ts__fail(TS_ENOMEM, "out of memory");
	ts_schema *pub = *out;
	ts_column *cols = (ts_column *)(mem + sizeof *pub);
	int *key = (int *)(cols + s->ncols);
	char *p = (char *)(key + s->nkey);
	for (int i = 0; i < s->ncols; i++) {
		const ts__col *c = &s->cols[i];
		size_t n = strlen(c->name) + 1;
		cols[i].name = memcpy(p, c->name, n);
		p += n;
		cols[i].type = c->type;
		cols[i].dflt = c->dflt;
		if (ts__type_is_var(c->type)) {
			cols[i].dflt.v.s.ptr = memcpy(p, c->dflt.v.s.ptr, c->dflt.v.s.len);
			p += c->dflt.v.s.len;
		}
	}
	memcpy(key, s->key, (size_t)s->nkey * sizeof(int));
	pub->ncolumns = s->ncols;
	pub->columns = cols;
	pub->nkey = s->nkey;
	pub->key = key;
	pub->ttl = ttl;
	pub->version = s->version;
	return 0;
}

void ts_schema_free(ts_schema *schema)
{
	free(schema);
}

/* ---- values ---- */

int ts__utf8_valid(const void *p, size_t n)
{
	const unsigned char *s = p, *end = s + n;
	while (s < end) {
		unsigned c = *s++;
		int more;
		uint32_t cp, min;
		if (c < 0x80)
			continue;
		else if ((c & 0xe0) == 0xc0) { more = 1; cp = c & 0x1f; min = 0x80; }
		else if ((c & 0xf0) == 0xe0) { more = 2; cp = c & 0x0f; min = 0x800; }
		else if ((c & 0xf8) == 0xf0) { more = 3; cp = c & 0x07; min = 0x10000; }
		else return 0;
		if (end - s < more)
			return 0;
		for (int i = 0; i < more; i++, s++) {
			if ((*s & 0xc0) != 0x80)
				return 0;
			cp = cp << 6 | (*s & 0x3f);
		}
		if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
			return 0;
	}
	return 1;
}

static int check_int(const ts__col *c, const ts_value *in, ts_value *out)
{
	if (in->type != TS_INT32 && in->type != TS_INT64 && in->type != TS_TIMESTAMP)
		return ts__fail(TS_ETYPE, "column \"%s\": expected %s, got %s",
		                c->name, ts_type_name(c->type), ts_type_name(in->type));
	if (c->type == TS_INT32 && (in->v.i < INT32_MIN || in->v.i > INT32_MAX))
		return ts__fail(TS_ERANGE, "column \"%s\": %lld does not fit in int32",
		                c->name, (long long)in->v.i);
	out->type = c->type;
	out->v.i = in->v.i;
	return 0;
}

static int check_bytes(const ts__col *c, const ts_value *in, ts_value *out)
{
	if (in->type != TS_STRING && in->type != TS_BLOB)
		return ts__fail(TS_ETYPE, "column \"%s\": expected %s, got %s",
		                c->name, ts_type_name(c->type), ts_type_name(in->type));
	if (c->type == TS_STRING && in->type == TS_BLOB)
		return ts__fail(TS_ETYPE, "column \"%s\": expected string, got blob", c->name);
	if (in->v.s.len > TS_VALUE_MAX)
		return ts__fail(TS_ETOOBIG, "column \"%s\": value of %zu bytes exceeds the limit of %u",
		                c->name, in->v.s.len, TS_VALUE_MAX);
	if (in->v.s.len && !in->v.s.ptr)
		return ts__fail(TS_EINVAL, "column \"%s\": NULL pointer", c->name);
	if (c->type == TS_STRING && !ts__utf8_valid(in->v.s.ptr, in->v.s.len))
		return ts__fail(TS_EINVAL, "column \"%s\": string is not valid UTF-8", c->name);
	*out = *in;
	out->type = c->type;
	return 0;
}

int ts__value_check(const ts__schema *s, int col, const ts_value *in,
                    ts_value *out)
{
	const ts__col *c = &s->cols[col];
	if (in->type == TS_NONE) {
		*out = c->dflt;
		return 0;
	}
	switch (c->type) {
	case TS_INT32:
	case TS_INT64:
	case TS_TIMESTAMP:
		return check_int(c, in, out);
	case TS_DOUBLE:
		if (in->type == TS_DOUBLE)
			out->v.d = in->v.d;
		else if (in->type == TS_INT32 || in->type == TS_INT64)
			out->v.d = (double)in->v.i;
		else
			return ts__fail(TS_ETYPE, "column \"%s\": expected double, got %s",
			                c->name, ts_type_name(in->type));
		out->type = TS_DOUBLE;
		return 0;
	case TS_STRING:
	case TS_BLOB:
		return check_bytes(c, in, out);
	default:
		return ts__fail(TS_ETYPE, "column \"%s\": bad column type", c->name);
	}
}
