/*
 * json.c -- values in JSON (DESIGN.md section 5), shared by the programs.
 *
 * Reading goes through jansson's json_t: val_from_json checks a parsed
 * value against a column type.  Writing does not: results can be millions
 * of rows, so jbuf_value appends a value's text straight into a byte
 * buffer (struct jbuf) with no json_t in between.  The two agree on every
 * form: what jbuf_value writes, val_from_json reads back as the same
 * value, bit for bit.  JSON has no number for NaN and the infinities:
 * they are the strings "NaN", "Infinity" and "-Infinity" (null would read
 * back as the column default); -0.0 is written "-0.0", as "-0" is the
 * integer zero to every JSON reader, jansson included.
 */
#include <assert.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "value.h"

int json_utf8_len(const unsigned char *p, const unsigned char *end)
{
	unsigned c = p[0];
	int n = c >= 0xc2 && c <= 0xdf ? 2 : c >= 0xe0 && c <= 0xef ? 3 : c >= 0xf0 && c <= 0xf4 ? 4 : 0;
	if (!n || end - p < n)
		return 0;
	for (int i = 1; i < n; i++)
		if ((p[i] & 0xc0) != 0x80)
			return 0;
	if ((c == 0xe0 && p[1] < 0xa0) || (c == 0xed && p[1] > 0x9f) ||
	    (c == 0xf0 && p[1] < 0x90) || (c == 0xf4 && p[1] > 0x8f))
		return 0;
	return n;
}

void jbuf_string(struct jbuf *b, const char *p, size_t n)
{
	static const char hex[] = "0123456789abcdef";
	/* Worst case every byte becomes \u00XX. */
	if (jbuf_reserve(b, 6 * n + 2) < 0)
		return;
	char *o = b->p + b->len;
	*o++ = '"';
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)p[i];
		if (c == '"' || c == '\\') {
			*o++ = '\\';
			*o++ = (char)c;
		} else if (c >= 0x20 && c < 0x80) {
			*o++ = (char)c;
		} else if (c >= 0x80) {
			/* Stored strings are valid UTF-8; a message may quote a
			 * client's bytes, or cut a character: never let that make
			 * the line invalid JSON. */
			int len = json_utf8_len((const unsigned char *)p + i,
			                        (const unsigned char *)p + n);
			if (len) {
				memcpy(o, p + i, (size_t)len);
				o += len;
				i += (size_t)len - 1;
			} else {
				memcpy(o, "\xef\xbf\xbd", 3); /* U+FFFD */
				o += 3;
			}
		} else if (c == '\n') {
			*o++ = '\\';
			*o++ = 'n';
		} else if (c == '\t') {
			*o++ = '\\';
			*o++ = 't';
		} else {
			memcpy(o, "\\u00", 4);
			o[4] = hex[c >> 4];
			o[5] = hex[c & 15];
			o += 6;
		}
	}
	*o++ = '"';
	b->len = (size_t)(o - b->p);
}

static void put_base64(struct jbuf *b, const unsigned char *p, size_t n)
{
	static const char digits[] =
		"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	if (jbuf_reserve(b, (n + 2) / 3 * 4 + 2) < 0)
		return;
	char *o = b->p + b->len;
	*o++ = '"';
	for (size_t i = 0; i < n; i += 3) {
		uint32_t g = (uint32_t)p[i] << 16;
		if (i + 1 < n)
			g |= (uint32_t)p[i + 1] << 8;
		if (i + 2 < n)
			g |= p[i + 2];
		o[0] = digits[g >> 18];
		o[1] = digits[(g >> 12) & 63];
		o[2] = i + 1 < n ? digits[(g >> 6) & 63] : '=';
		o[3] = i + 2 < n ? digits[g & 63] : '=';
		o += 4;
	}
	*o++ = '"';
	b->len = (size_t)(o - b->p);
}

void jbuf_value(struct jbuf *b, const ts_value *v)
{
	char buf[VAL_DOUBLE_BUFSZ];
	switch (v->type) {
	case TS_INT32:
	case TS_INT64:
	case TS_TIMESTAMP:
		jbuf_int(b, v->v.i);
		break;
	case TS_DOUBLE:
		val_format_double(v->v.d, buf, sizeof buf);
		if (!isfinite(v->v.d)) {
			/* JSON has no such numbers: the words, as strings. */
			jbuf_string(b, buf, strlen(buf));
		} else if (v->v.d == 0 && signbit(v->v.d)) {
			/* "-0" is JSON's integer zero, which has no sign. */
			jbuf_put(b, "-0.0", 4);
		} else {
			/* "1" reads back as an integer; JSON numbers are numbers,
			 * and val_from_json takes either for a double, so it
			 * needs no ".0". */
			jbuf_puts(b, buf);
		}
		break;
	case TS_STRING:
		jbuf_string(b, v->v.s.ptr, v->v.s.len);
		break;
	case TS_BLOB:
		put_base64(b, v->v.s.ptr, v->v.s.len);
		break;
	default:
		jbuf_put(b, "null", 4);
		break;
	}
}

void jbuf_row(struct jbuf *b, const ts_value *row, int n)
{
	jbuf_putc(b, '[');
	for (int i = 0; i < n; i++) {
		if (i)
			jbuf_putc(b, ',');
		jbuf_value(b, &row[i]);
	}
	jbuf_putc(b, ']');
}

const char *val_json_kind(const json_t *v)
{
	switch (json_typeof(v)) {
	case JSON_OBJECT: return "a JSON object";
	case JSON_ARRAY: return "a JSON array";
	case JSON_STRING: return "a JSON string";
	case JSON_INTEGER: return "a JSON integer";
	case JSON_REAL: return "a JSON real";
	case JSON_TRUE: return "true";
	case JSON_FALSE: return "false";
	default: return "null";
	}
}

int json_text(const json_t *v, int flags, const char **out, char *why, size_t size)
{
	const char *s;
	size_t n;
	int rc = 0;
	*out = NULL;
	if (!json_is_string(v)) {
		snprintf(why, size, "expected a string, got %s", val_json_kind(v));
		rc = TS_ETYPE;
		goto out;
	}
	s = json_string_value(v);
	n = json_string_length(v);
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c == 0) {
			snprintf(why, size, "a NUL byte (\\u0000) at offset %zu", i);
			rc = TS_EINVAL;
			goto out;
		}
		if ((flags & JSON_TEXT_NAME) && (c < 0x20 || c == 0x7f)) {
			snprintf(why, size, "a control character (\\u%04x) at offset %zu", c, i);
			rc = TS_EINVAL;
			goto out;
		}
	}
	assert(strlen(s) == n);
	*out = s;
out:
	return rc;
}

/* A JSON integer for an integer column, range checked as value.c does. */
static int from_integer(ts_type type, const json_t *v, ts_value *out,
                        char *reason, size_t size)
{
	json_int_t i = json_integer_value(v);
	if (type == TS_INT32 && (i < INT32_MIN || i > INT32_MAX)) {
		snprintf(reason, size, "%lld is out of range for int32", (long long)i);
		return TS_ERANGE;
	}
	*out = type == TS_INT32 ? ts_int32((int32_t)i)
	     : type == TS_TIMESTAMP ? ts_timestamp(i) : ts_int64(i);
	return 0;
}

int val_double_from_json_string(const char *s, size_t n, ts_value *out, char *reason,
                                size_t size)
{
	double d;
	if (val_double_word(s, n, &d)) {
		*out = ts_double(d);
		return 0;
	}
	snprintf(reason, size, "expected double, got a JSON string other than %s",
	         JSON_DOUBLE_WORDS);
	return TS_ETYPE;
}

int val_from_json(ts_type type, const json_t *v, ts_value *out,
                  char *reason, size_t size)
{
	*out = ts_none();
	if (json_is_null(v))
		return 0;
	switch (type) {
	case TS_INT32:
	case TS_INT64:
		if (json_is_integer(v))
			return from_integer(type, v, out, reason, size);
		break;
	case TS_DOUBLE:
		if (json_is_number(v)) {
			*out = ts_double(json_number_value(v));
			return 0;
		}
		if (json_is_string(v))
			return val_double_from_json_string(json_string_value(v), json_string_length(v),
			                                   out, reason, size);
		break;
	case TS_TIMESTAMP:
		if (json_is_integer(v))
			return from_integer(type, v, out, reason, size);
		if (json_is_string(v))
			return val_parsen(TS_TIMESTAMP, json_string_value(v),
			                  json_string_length(v), out, reason, size);
		break;
	case TS_STRING:
		if (json_is_string(v))
			return val_parsen(TS_STRING, json_string_value(v),
			                  json_string_length(v), out, reason, size);
		break;
	case TS_BLOB:
		if (json_is_string(v))
			return val_base64(json_string_value(v), json_string_length(v),
			                  out, reason, size);
		break;
	default:
		break;
	}
	snprintf(reason, size, "expected %s, got %s", ts_type_name(type), val_json_kind(v));
	return TS_ETYPE;
}
