/*
 * value.c -- values as text, both ways: what a user types after "=" in a
 * column spec, the fields of the rows insert reads (input.c) and, later,
 * key prefixes; and what the tool prints in the tab-separated forms of
 * DESIGN.md section 6.  Blobs are hex in text; in JSON they are base64
 * (DESIGN.md section 5), decoded here too.
 *
 * Parsing is strict: the whole text must be the value, with no leading or
 * trailing blanks, so that a typo is an error rather than a silently
 * different number.  Printing round-trips: every printed value parses back
 * to the same value (doubles use the shortest exact form; strings are the
 * exception, as their escapes are for reading, not for reparsing here).
 */
#include <assert.h>
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "jbuf.h"
#include "value.h"

static int is_integer_text(const char *text)
{
	const char *p = text + (*text == '-' || *text == '+');
	return isdigit((unsigned char)*p);
}

static int parse_int(const char *text, ts_type type, ts_value *out,
                     char *why, size_t whysz)
{
	int64_t min = type == TS_INT32 ? INT32_MIN : INT64_MIN;
	int64_t max = type == TS_INT32 ? INT32_MAX : INT64_MAX;
	char *end = NULL;
	long long v = 0;
	errno = 0;
	if (is_integer_text(text))
		v = strtoll(text, &end, 10);
	if (!end || *end != '\0') {
		snprintf(why, whysz, "\"%s\" is not a decimal integer", text);
		return TS_EINVAL;
	}
	if (errno == ERANGE || v < min || v > max) {
		snprintf(why, whysz, "%s is out of range for %s", text, ts_type_name(type));
		return TS_ERANGE;
	}
	out->type = type;
	out->v.i = v;
	return 0;
}

static int parse_double(const char *text, ts_value *out, char *why, size_t whysz)
{
	char *end;
	double d;
	errno = 0;
	d = strtod(text, &end);
	if (end == text || *end != '\0' || isspace((unsigned char)*text)) {
		snprintf(why, whysz, "\"%s\" is not a number", text);
		return TS_EINVAL;
	}
	if (errno == ERANGE && isinf(d)) {
		snprintf(why, whysz, "%s is out of range for double", text);
		return TS_ERANGE;
	}
	*out = ts_double(d);
	return 0;
}

static int parse_time(const char *text, ts_value *out, char *why, size_t whysz)
{
	int64_t ns;
	int rc = ts_time_parse(text, &ns);
	if (rc < 0) {
		const char *msg = ts_errmsg(NULL);
		snprintf(why, whysz, "%s", *msg ? msg : ts_strerror(rc));
		return rc;
	}
	*out = ts_timestamp(ns);
	return 0;
}

static int hex_digit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c = (char)tolower((unsigned char)c);
	return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* Decode n hex digits of text into bytes; 0, or -1 at a non-digit. */
static int decode_hex(const char *text, size_t n, unsigned char *bytes)
{
	for (size_t i = 0; i < n; i += 2) {
		int hi = hex_digit(text[i]), lo = hex_digit(text[i + 1]);
		if (hi < 0 || lo < 0)
			return -1;
		bytes[i / 2] = (unsigned char)(hi << 4 | lo);
	}
	return 0;
}

static int parse_hex(const char *text, ts_value *out, char *why, size_t whysz)
{
	size_t n = strlen(text);
	unsigned char *bytes;
	if (n % 2 != 0) {
		snprintf(why, whysz, "\"%s\" is not hex: odd number of digits", text);
		return TS_EINVAL;
	}
	if (!(bytes = malloc(n / 2 + 1)))
		return TS_ENOMEM;
	if (decode_hex(text, n, bytes) < 0) {
		free(bytes);
		snprintf(why, whysz, "\"%s\" is not hex", text);
		return TS_EINVAL;
	}
	*out = ts_blob(bytes, n / 2);
	return 0;
}

static int copy_string(const char *text, ts_value *out)
{
	char *copy = strdup(text);
	if (!copy)
		return TS_ENOMEM;
	*out = ts_stringn(copy, strlen(copy));
	return 0;
}

int val_parse(ts_type type, const char *text, ts_value *out,
                    char *why, size_t whysz)
{
	*out = ts_none();
	switch (type) {
	case TS_INT32:
	case TS_INT64:
		return parse_int(text, type, out, why, whysz);
	case TS_DOUBLE:
		return parse_double(text, out, why, whysz);
	case TS_TIMESTAMP:
		return parse_time(text, out, why, whysz);
	case TS_STRING:
		return copy_string(text, out);
	case TS_BLOB:
		return parse_hex(text, out, why, whysz);
	default:
		snprintf(why, whysz, "type %s has no values", ts_type_name(type));
		return TS_EINVAL;
	}
}

static int copy_bytes(const char *text, size_t len, ts_value *out)
{
	char *copy = malloc(len + 1);
	if (!copy)
		return TS_ENOMEM;
	memcpy(copy, text, len);
	copy[len] = '\0';
	*out = ts_stringn(copy, len);
	return 0;
}

int val_parsen(ts_type type, const char *text, size_t len, ts_value *out,
                     char *why, size_t whysz)
{
	assert(text[len] == '\0');
	*out = ts_none();
	if (type == TS_STRING)
		return copy_bytes(text, len, out);
	if (memchr(text, '\0', len)) {
		snprintf(why, whysz, "a %s value cannot hold a NUL byte", ts_type_name(type));
		return TS_EINVAL;
	}
	return val_parse(type, text, out, why, whysz);
}

/* The 6-bit value of base64 digit c, or -1. */
static int base64_digit(char c)
{
	static const char digits[] =
		"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	const char *p = c ? strchr(digits, c) : NULL;
	return p ? (int)(p - digits) : -1;
}

/* Decode the groups of 4 digits at text (len a multiple of 4, '=' only as
 * padding at the end) into bytes (NULL: only check them); the count in
 * *n, or -1. */
static int decode_base64(const char *text, size_t len, unsigned char *bytes, size_t *n)
{
	*n = 0;
	for (size_t i = 0; i < len; i += 4) {
		int last = i + 4 == len;
		int pad = last ? (text[i + 3] == '=') + (text[i + 2] == '=' && text[i + 3] == '=') : 0;
		uint32_t group = 0;
		for (int k = 0; k < 4; k++) {
			int d = k >= 4 - pad ? 0 : base64_digit(text[i + k]);
			if (d < 0)
				return -1;
			group = group << 6 | (uint32_t)d;
		}
		if (!bytes) {
			*n += (size_t)(3 - pad);
			continue;
		}
		bytes[(*n)++] = (unsigned char)(group >> 16);
		if (pad < 2)
			bytes[(*n)++] = (unsigned char)(group >> 8);
		if (pad < 1)
			bytes[(*n)++] = (unsigned char)group;
	}
	return 0;
}

int val_base64_inplace(char *text, size_t len, ts_value *out, char *why, size_t whysz)
{
	size_t n;
	*out = ts_none();
	if (len % 4 != 0) {
		snprintf(why, whysz, "\"%.*s\" is not base64: %zu characters, not a multiple of 4",
		         len > 80 ? 80 : (int)len, text, len);
		return TS_EINVAL;
	}
	if (decode_base64(text, len, NULL, &n) < 0) {
		snprintf(why, whysz, "\"%.*s\" is not base64", len > 80 ? 80 : (int)len, text);
		return TS_EINVAL;
	}
	/* Each group of 4 digits is read whole before its bytes are written,
	 * behind it, so decoding in place is safe. */
	decode_base64(text, len, (unsigned char *)text, &n);
	*out = ts_blob(text, n);
	return 0;
}

int val_base64(const char *text, size_t len, ts_value *out,
                     char *why, size_t whysz)
{
	char *copy = malloc(len + 1);
	int rc;
	*out = ts_none();
	if (!copy)
		return TS_ENOMEM;
	memcpy(copy, text, len);
	copy[len] = '\0';
	if ((rc = val_base64_inplace(copy, len, out, why, whysz)) < 0)
		free(copy);
	return rc;
}

int val_column(const ts_schema *s, const char *name, size_t len, int hint)
{
	for (int k = 0; k < s->ncolumns; k++) {
		int j = (hint + k) % s->ncolumns;
		if (strlen(s->columns[j].name) == len && memcmp(s->columns[j].name, name, len) == 0)
			return j;
	}
	return -1;
}

void val_free(ts_value *v)
{
	if (v->type == TS_STRING || v->type == TS_BLOB)
		free((void *)v->v.s.ptr);
	*v = ts_none();
}

int val_double_word(const char *text, size_t len, double *d)
{
	static const char *const words[] = {"nan", "inf", "infinity"};
	int negative = len > 0 && text[0] == '-';
	if (len > 0 && (text[0] == '-' || text[0] == '+')) {
		text++;
		len--;
	}
	for (size_t w = 0; w < sizeof words / sizeof words[0]; w++) {
		if (strlen(words[w]) != len || strncasecmp(text, words[w], len) != 0)
			continue;
		*d = w == 0 ? NAN : INFINITY;
		if (negative)
			*d = -*d;
		return 1;
	}
	return 0;
}

void val_format_double(double d, char *buf, size_t size)
{
	/* The words, not printf's "nan" and "inf", so that text and JSON
	 * spell them alike (JSON as strings); a NaN's sign and payload are
	 * not spelled. */
	if (isnan(d) || isinf(d)) {
		snprintf(buf, size, "%s", isnan(d) ? "NaN" : d > 0 ? "Infinity" : "-Infinity");
		return;
	}
	/* A shorter exact form, when there is one, is what %.15g prints:
	 * rounding d to 15 digits gives that form padded with zeros, which
	 * %g drops.  So 15, 16 and 17 digits are all that need trying.  -0.0
	 * prints as "-0", which strtod reads back as -0.0. */
	for (int prec = 15; prec <= 17; prec++) {
		snprintf(buf, size, "%.*g", prec, d);
		if (strtod(buf, NULL) == d)
			break;
	}
}

static void text_time(struct jbuf *b, int64_t ns)
{
	char buf[TS_TIME_BUFSZ];
	if (ts_time_format(ns, buf, sizeof buf) == 0)
		jbuf_puts(b, buf);
	else
		jbuf_int(b, ns);
}

/* The string's bytes with tab, newline and backslash as \t \n \\. */
static void text_escaped(struct jbuf *b, const char *p, size_t n)
{
	size_t run = 0;
	for (size_t i = 0; i < n; i++) {
		char c = p[i];
		if (c != '\t' && c != '\n' && c != '\\')
			continue;
		jbuf_put(b, p + run, i - run);
		jbuf_putc(b, '\\');
		jbuf_putc(b, c == '\t' ? 't' : c == '\n' ? 'n' : '\\');
		run = i + 1;
	}
	jbuf_put(b, p + run, n - run);
}

static void text_hex(struct jbuf *b, const unsigned char *p, size_t n)
{
	static const char hex[] = "0123456789abcdef";
	if (jbuf_reserve(b, 2 * n) < 0)
		return;
	for (size_t i = 0; i < n; i++) {
		b->p[b->len++] = hex[p[i] >> 4];
		b->p[b->len++] = hex[p[i] & 15];
	}
}

void val_text(struct jbuf *b, const ts_value *v, int escape)
{
	char buf[VAL_DOUBLE_BUFSZ];
	switch (v->type) {
	case TS_INT32:
	case TS_INT64:
		jbuf_int(b, v->v.i);
		break;
	case TS_DOUBLE:
		val_format_double(v->v.d, buf, sizeof buf);
		jbuf_puts(b, buf);
		break;
	case TS_TIMESTAMP:
		text_time(b, v->v.i);
		break;
	case TS_STRING:
		if (escape)
			text_escaped(b, v->v.s.ptr, v->v.s.len);
		else
			jbuf_put(b, v->v.s.ptr, v->v.s.len);
		break;
	case TS_BLOB:
		text_hex(b, v->v.s.ptr, v->v.s.len);
		break;
	default:
		break;
	}
}

void val_print(FILE *f, const ts_value *v)
{
	struct jbuf b = {0};
	val_text(&b, v, 1);
	if (b.len)
		fwrite(b.p, 1, b.len, f);
	jbuf_free(&b);
}
