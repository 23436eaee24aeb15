/*
 * key.c -- encoding and decoding memcomparable keys.
 *
 * Field encodings (docs/key-format.md):
 *   int32, int64, timestamp: 8 bytes big-endian with the sign bit flipped,
 *     so int32 keys keep their bytes when the column is widened;
 *   double: the IEEE bits made canonical (-0.0 -> +0.0, NaN -> quiet NaN),
 *     then all bits flipped when negative, else only the sign bit, 8 bytes
 *     big-endian;
 *   string, blob: the bytes with every 0x00 written as 0x00 0xFF, then the
 *     terminator 0x00 0x01 -- so "a" < "a\0" < "ab" as typed order wants.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>

#include "error.h"
#include "key.h"
#include "tslimits.h"

#define SIGN_BIT (UINT64_C(1) << 63)
#define CANONICAL_NAN UINT64_C(0x7ff8000000000000)

double ts__key_canonical_double(double d)
{
	if (d == 0)
		return 0.0;
	if (isnan(d)) {
		uint64_t bits = CANONICAL_NAN;
		memcpy(&d, &bits, 8);
	}
	return d;
}

static uint64_t double_to_key(double d)
{
	uint64_t bits;
	d = ts__key_canonical_double(d);
	memcpy(&bits, &d, 8);
	return bits & SIGN_BIT ? ~bits : bits ^ SIGN_BIT;
}

static double key_to_double(uint64_t k)
{
	uint64_t bits = k & SIGN_BIT ? k ^ SIGN_BIT : ~k;
	double d;
	memcpy(&d, &bits, 8);
	return d;
}

static void put_bytes_escaped(ts_buf *b, const unsigned char *p, size_t n)
{
	static const unsigned char esc[2] = {0x00, 0xff}, term[2] = {0x00, 0x01};
	size_t start = 0;
	for (size_t i = 0; i < n; i++) {
		if (p[i] != 0)
			continue;
		ts__put(b, p + start, i - start);
		ts__put(b, esc, 2);
		start = i + 1;
	}
	ts__put(b, p + start, n - start);
	ts__put(b, term, 2);
}

void ts__key_put(ts_buf *b, const ts_value *v)
{
	unsigned char f[8];
	switch (v->type) {
	case TS_STRING:
	case TS_BLOB:
		put_bytes_escaped(b, v->v.s.ptr, v->v.s.len);
		return;
	case TS_DOUBLE:
		ts__store_be64(f, double_to_key(v->v.d));
		break;
	default:
		ts__store_be64(f, (uint64_t)v->v.i ^ SIGN_BIT);
		break;
	}
	ts__put(b, f, 8);
}

int ts__key_encode(const ts__schema *s, const ts_value *vals, int n, ts_buf *b)
{
	size_t start = b->len;
	for (int k = 0; k < n; k++) {
		ts_value v = vals[k];
		v.type = s->cols[s->key[k]].type;
		ts__key_put(b, &v);
	}
	if (b->oom)
		return ts__fail(TS_ENOMEM, "out of memory encoding a key");
	if (b->len - start > TS_KEY_MAX)
		return ts__fail(TS_ETOOBIG, "key of %zu bytes exceeds the limit of %d",
		                b->len - start, TS_KEY_MAX);
	return 0;
}

/* Length of an escaped field at p[0..n): bytes up to and including the
 * terminator; *nuls counts escaped NULs.  -1 if unterminated or bad. */
static long escaped_len(const unsigned char *p, size_t n, size_t *nuls)
{
	*nuls = 0;
	for (size_t i = 0; i + 1 < n; i++) {
		if (p[i] != 0)
			continue;
		if (p[i + 1] == 0x01)
			return (long)(i + 2);
		if (p[i + 1] != 0xff)
			return -1;
		(*nuls)++;
		i++;
	}
	return -1;
}

static void unescape(const unsigned char *p, size_t flen, unsigned char *out)
{
	for (size_t i = 0; i < flen - 2; i++) {
		*out++ = p[i];
		if (p[i] == 0)
			i++; /* skip the 0xFF of an escaped NUL */
	}
}

/* Decode one field of type t at p[0..n) into v; returns its length or -1. */
static long decode_field(ts_type t, const unsigned char *p, size_t n,
                         ts_value *v, ts_buf *scratch)
{
	v->type = t;
	if (!ts__type_is_var(t)) {
		if (n < 8)
			return -1;
		uint64_t k = ts__load_be64(p);
		if (t == TS_DOUBLE)
			v->v.d = key_to_double(k);
		else
			v->v.i = (int64_t)(k ^ SIGN_BIT);
		return 8;
	}
	size_t nuls;
	long flen = escaped_len(p, n, &nuls);
	if (flen < 0)
		return -1;
	v->v.s.len = (size_t)flen - 2 - nuls;
	if (nuls == 0) {
		v->v.s.ptr = p;
		return flen;
	}
	/* scratch was sized for the whole key up front: no realloc here. */
	unsigned char *out = scratch->data + scratch->len;
	unescape(p, (size_t)flen, out);
	scratch->len += v->v.s.len;
	v->v.s.ptr = out;
	return flen;
}

int ts__key_decode(const ts__schema *s, const void *key, size_t len, int n,
                   ts_value *vals, ts_buf *scratch, size_t *used)
{
	const unsigned char *p = key;
	size_t off = 0;
	scratch->len = 0;
	if (ts__buf_reserve(scratch, len + 1) < 0)
		return ts__fail(TS_ENOMEM, "out of memory decoding a key");
	for (int k = 0; k < n; k++) {
		long f = decode_field(s->cols[s->key[k]].type, p + off, len - off,
		                      &vals[k], scratch);
		if (f < 0)
			return ts__fail(TS_ECORRUPT, "malformed key: field %d", k);
		off += (size_t)f;
	}
	if (used)
		*used = off;
	return 0;
}

long ts__key_prefix_len(const ts__schema *s, const void *key, size_t len, int n)
{
	const unsigned char *p = key;
	size_t off = 0, nuls;
	for (int k = 0; k < n; k++) {
		long f = ts__type_is_var(s->cols[s->key[k]].type)
		         ? escaped_len(p + off, len - off, &nuls)
		         : (len - off >= 8 ? 8 : -1);
		if (f < 0)
			return -1;
		off += (size_t)f;
	}
	return (long)off;
}

/* Append printf-style text to buf[*at..size), keeping it terminated. */
static void add(char *buf, size_t size, size_t *at, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static void add(char *buf, size_t size, size_t *at, const char *fmt, ...)
{
	va_list ap;
	if (*at >= size)
		return;
	va_start(ap, fmt);
	int n = vsnprintf(buf + *at, size - *at, fmt, ap);
	va_end(ap);
	*at = n < 0 ? size : *at + (size_t)n;
}

static void describe_value(const ts_value *v, char *buf, size_t size, size_t *at)
{
	char t[TS_TIME_BUFSZ];
	const unsigned char *p = v->v.s.ptr;
	switch (v->type) {
	case TS_TIMESTAMP:
		ts_time_format(v->v.i, t, sizeof t);
		add(buf, size, at, "%s", t);
		break;
	case TS_DOUBLE:
		add(buf, size, at, "%.17g", v->v.d);
		break;
	case TS_STRING:
		add(buf, size, at, "\"");
		for (size_t i = 0; i < v->v.s.len && *at < size; i++)
			add(buf, size, at, p[i] == '"' || p[i] == '\\' ? "\\%c" : p[i] < 0x20 ? "\\x%02x" : "%c", p[i]);
		add(buf, size, at, "\"");
		break;
	case TS_BLOB:
		add(buf, size, at, "x'");
		for (size_t i = 0; i < v->v.s.len && *at < size; i++)
			add(buf, size, at, "%02x", p[i]);
		add(buf, size, at, "'");
		break;
	default:
		add(buf, size, at, "%lld", (long long)v->v.i);
	}
}

void ts__key_describe(const ts__schema *s, const void *key, size_t len,
                      char *buf, size_t size)
{
	ts_value vals[TS_KEY_COLUMNS_MAX];
	ts_buf scratch;
	size_t at = 0;
	ts__buf_init(&scratch);
	buf[0] = '\0';
	if (ts__key_decode(s, key, len, s->nkey, vals, &scratch, NULL) < 0) {
		add(buf, size, &at, "(malformed key)");
	} else {
		add(buf, size, &at, "(");
		for (int k = 0; k < s->nkey; k++) {
			if (k)
				add(buf, size, &at, ", ");
			describe_value(&vals[k], buf, size, &at);
		}
		add(buf, size, &at, ")");
	}
	ts__buf_free(&scratch);
}
