/*
 * jrows.c -- the rows of an insert, read straight from the JSON text.
 *
 * Parsed by jansson, a row of 20 values costs some 20 json_t allocations
 * and frees plus a copy of every string; at the daemon's ingest rates
 * that is most of its CPU.  Here the "rows" array is walked once by a
 * strict JSON lexer that converts each value as it meets it, by the type
 * of its column, into a ts_value pointing into the request's own buffer:
 * strings and blobs are decoded in place (their decoded form is never
 * longer), so a row costs no allocation at all.
 *
 * The contract is parity with the slow path (jansson with
 * JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, then val_from_json and the
 * row-shape checks of request.c): the same inputs are accepted, with the
 * same values, and the same inputs refused, with the same code:
 *   - malformed JSON anywhere in the array is TS_EPROTO, even after a bad
 *     value (jansson would not have got as far as the values), so after
 *     the first value error the rest is still lexed, converting nothing;
 *   - within a row, a wrong width wins over a bad value (the slow path
 *     checks the width first);
 *   - strings must be valid UTF-8 and escapes valid (surrogate pairs
 *     paired), integers must fit int64 and reals must be finite, as
 *     jansson requires; a duplicate key in a row object is malformed;
 *   - a double column takes a string only when it is one of the words
 *     for NaN and the infinities (val_double_from_json_string, shared),
 *     and "-0" is the integer 0 on both paths (jansson keeps no sign on
 *     an integer), while "-0.0" is -0.0.
 * tests/daemon/test_jrows.c checks the parity on generated inputs.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jrows.h"
#include "json.h"
#include "value.h"

/* What a JSON value was, for messages (the words of val_json_kind). */
enum kind { K_STRING, K_INTEGER, K_REAL, K_TRUE, K_FALSE, K_NULL, K_OBJECT, K_ARRAY };

static const char *const kind_names[] = {
	"a JSON string", "a JSON integer", "a JSON real", "true", "false", "null",
	"a JSON object", "a JSON array"};

struct lexer {
	char *base, *p, *end;
	int code;             /* first error: 0, or its code */
	int syntax;           /* the error is malformed JSON (it wins) */
	char *why;
	size_t whysz;
};

static void error(struct lexer *lx, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void error(struct lexer *lx, int code, const char *fmt, ...)
{
	va_list ap;
	if (lx->syntax || (lx->code && code != TS_EPROTO))
		return;
	lx->code = code;
	lx->syntax = code == TS_EPROTO;
	va_start(ap, fmt);
	vsnprintf(lx->why, lx->whysz, fmt, ap);
	va_end(ap);
}

static int malformed(struct lexer *lx, const char *what)
{
	error(lx, TS_EPROTO, "malformed JSON in \"rows\" at byte %zu: %s",
	      (size_t)(lx->p - lx->base), what);
	return -1;
}

static void skip_ws(struct lexer *lx)
{
	while (lx->p < lx->end && (*lx->p == ' ' || *lx->p == '\t' || *lx->p == '\n' || *lx->p == '\r'))
		lx->p++;
}

/* ---- strings ---- */

static int hex4(const char *p, uint32_t *out)
{
	uint32_t v = 0;
	for (int i = 0; i < 4; i++) {
		char c = p[i];
		int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
		      : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
		if (d < 0)
			return -1;
		v = v << 4 | (uint32_t)d;
	}
	*out = v;
	return 0;
}

static char *put_utf8(char *o, uint32_t cp)
{
	if (cp < 0x80) {
		*o++ = (char)cp;
	} else if (cp < 0x800) {
		*o++ = (char)(0xc0 | cp >> 6);
		*o++ = (char)(0x80 | (cp & 0x3f));
	} else if (cp < 0x10000) {
		*o++ = (char)(0xe0 | cp >> 12);
		*o++ = (char)(0x80 | ((cp >> 6) & 0x3f));
		*o++ = (char)(0x80 | (cp & 0x3f));
	} else {
		*o++ = (char)(0xf0 | cp >> 18);
		*o++ = (char)(0x80 | ((cp >> 12) & 0x3f));
		*o++ = (char)(0x80 | ((cp >> 6) & 0x3f));
		*o++ = (char)(0x80 | (cp & 0x3f));
	}
	return o;
}

/* The escape at lx->p (after the backslash) written at *o. */
static int escape(struct lexer *lx, char **o)
{
	static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
	uint32_t cp, lo;
	const char *e = lx->p < lx->end ? memchr(from, *lx->p, sizeof from - 1) : NULL;
	if (e) {
		*(*o)++ = to[e - from];
		lx->p++;
		return 0;
	}
	if (lx->p >= lx->end || *lx->p != 'u' || lx->end - lx->p < 5 || hex4(lx->p + 1, &cp) < 0)
		return malformed(lx, "invalid escape");
	lx->p += 5;
	if (cp >= 0xdc00 && cp <= 0xdfff)
		return malformed(lx, "invalid Unicode escape (lone low surrogate)");
	if (cp >= 0xd800 && cp <= 0xdbff) {
		if (lx->end - lx->p < 6 || lx->p[0] != '\\' || lx->p[1] != 'u' ||
		    hex4(lx->p + 2, &lo) < 0 || lo < 0xdc00 || lo > 0xdfff)
			return malformed(lx, "invalid Unicode escape (unpaired high surrogate)");
		lx->p += 6;
		cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
	}
	*o = put_utf8(*o, cp);
	return 0;
}

/* The string at lx->p (its opening quote), decoded in place; *s and *n
 * receive it.  The byte after it is free to hold a NUL. */
static int string(struct lexer *lx, char **s, size_t *n)
{
	char *o = ++lx->p;
	*s = o;
	while (lx->p < lx->end) {
		unsigned char c = (unsigned char)*lx->p;
		if (c == '"') {
			*n = (size_t)(o - *s);
			lx->p++;
			return 0;
		}
		if (c == '\\') {
			lx->p++;
			if (escape(lx, &o) < 0)
				return -1;
		} else if (c < 0x20) {
			return malformed(lx, "control character in a string");
		} else if (c < 0x80) {
			*o++ = *lx->p++;
		} else {
			int len = json_utf8_len((const unsigned char *)lx->p, (const unsigned char *)lx->end);
			if (!len)
				return malformed(lx, "invalid UTF-8 in a string");
			memmove(o, lx->p, (size_t)len);
			o += len;
			lx->p += len;
		}
	}
	return malformed(lx, "unterminated string");
}

/* ---- numbers and literals ---- */

static int digits(struct lexer *lx)
{
	const char *start = lx->p;
	while (lx->p < lx->end && *lx->p >= '0' && *lx->p <= '9')
		lx->p++;
	return lx->p > start ? 0 : -1;
}

/* The number at lx->p, by JSON's grammar, as an integer (no fraction or
 * exponent) or a real, checked as jansson checks it. */
static int number(struct lexer *lx, enum kind *kind, long long *i, double *d)
{
	char *start = lx->p, buf[64], *copy = buf;
	int rc = 0;
	*kind = K_INTEGER;
	if (lx->p < lx->end && *lx->p == '-')
		lx->p++;
	if (lx->p < lx->end && *lx->p == '0')
		lx->p++;
	else if (digits(lx) < 0)
		return malformed(lx, "invalid number");
	if (lx->p < lx->end && *lx->p == '.') {
		lx->p++;
		*kind = K_REAL;
		if (digits(lx) < 0)
			return malformed(lx, "invalid number");
	}
	if (lx->p < lx->end && (*lx->p == 'e' || *lx->p == 'E')) {
		lx->p++;
		*kind = K_REAL;
		if (lx->p < lx->end && (*lx->p == '+' || *lx->p == '-'))
			lx->p++;
		if (digits(lx) < 0)
			return malformed(lx, "invalid number");
	}
	/* strtoll and strtod need a terminated copy: the span is followed by
	 * whatever comes next in the request. */
	size_t n = (size_t)(lx->p - start);
	if (n >= sizeof buf && !(copy = malloc(n + 1)))
		return malformed(lx, "out of memory");
	memcpy(copy, start, n);
	copy[n] = '\0';
	errno = 0;
	if (*kind == K_INTEGER) {
		*i = strtoll(copy, NULL, 10);
		if (errno == ERANGE)
			rc = malformed(lx, "too big integer");
	} else {
		*d = strtod(copy, NULL);
		if (errno == ERANGE && isinf(*d))
			rc = malformed(lx, "real number overflow");
	}
	if (copy != buf)
		free(copy);
	return rc;
}

static int literal(struct lexer *lx, const char *word, size_t n)
{
	if ((size_t)(lx->end - lx->p) < n || memcmp(lx->p, word, n) != 0)
		return malformed(lx, "invalid literal");
	lx->p += n;
	return 0;
}

/* ---- values ---- */

/* Deepest nesting of a value inside a row, as jansson bounds its parser's
 * (JSON_PARSER_MAX_DEPTH, 2048, counted from the request object). */
#define NEST_MAX 2044

/* Keys of a row object that name no column, kept only to find a
 * duplicate among them (which jansson reports as malformed). */
struct unknown_keys {
	struct { const char *p; size_t n; } *k;
	size_t count, cap;
};

/* Remember key; 1 if it was seen before, 0, or -1 out of memory. */
static int unknown_seen(struct unknown_keys *u, const char *key, size_t n)
{
	for (size_t i = 0; i < u->count; i++)
		if (u->k[i].n == n && memcmp(u->k[i].p, key, n) == 0)
			return 1;
	if (u->count == u->cap) {
		size_t cap = u->cap ? u->cap * 2 : 8;
		void *k = realloc(u->k, cap * sizeof *u->k);
		if (!k)
			return -1;
		u->k = k;
		u->cap = cap;
	}
	u->k[u->count].p = key;
	u->k[u->count++].n = n;
	return 0;
}

static int skip_value(struct lexer *lx, enum kind *kind, int depth);

/* An object key at lx->p and its ':'; a duplicate in keys (or a NUL
 * byte) is malformed, as jansson has it.  *key, *n receive it. */
static int object_key(struct lexer *lx, struct unknown_keys *keys, char **key, size_t *n)
{
	int dup;
	skip_ws(lx);
	if (lx->p >= lx->end || *lx->p != '"' || string(lx, key, n) < 0)
		return malformed(lx, "expected a string key");
	skip_ws(lx);
	if (lx->p >= lx->end || *lx->p++ != ':')
		return malformed(lx, "expected ':'");
	if (memchr(*key, '\0', *n))
		return malformed(lx, "NUL byte in an object key");
	if (keys && (dup = unknown_seen(keys, *key, *n)) != 0)
		return malformed(lx, dup < 0 ? "out of memory" : "duplicate object key");
	return 0;
}

/* Skip a nested array or object (its contents are never values). */
static int skip_container(struct lexer *lx, char close, int depth)
{
	struct unknown_keys keys = {0};
	enum kind k;
	char *s;
	size_t n;
	int rc = 0;
	if (depth > NEST_MAX)
		return malformed(lx, "maximum parsing depth reached");
	lx->p++;
	skip_ws(lx);
	if (lx->p < lx->end && *lx->p == close) {
		lx->p++;
		return 0;
	}
	for (;;) {
		if ((close == '}' && (rc = object_key(lx, &keys, &s, &n)) < 0) ||
		    (rc = skip_value(lx, &k, depth + 1)) < 0)
			break;
		skip_ws(lx);
		if (lx->p < lx->end && *lx->p == ',') {
			lx->p++;
			continue;
		}
		if (lx->p < lx->end && *lx->p == close)
			lx->p++;
		else
			rc = malformed(lx, close == ']' ? "expected ',' or ']'" : "expected ',' or '}'");
		break;
	}
	free(keys.k);
	return rc;
}

/* Lex any value, converting nothing (a string is still decoded). */
static int skip_value(struct lexer *lx, enum kind *kind, int depth)
{
	long long i;
	double d;
	char *s;
	size_t n;
	skip_ws(lx);
	if (lx->p >= lx->end)
		return malformed(lx, "expected a value");
	switch (*lx->p) {
	case '"': *kind = K_STRING; return string(lx, &s, &n);
	case '[': *kind = K_ARRAY; return skip_container(lx, ']', depth);
	case '{': *kind = K_OBJECT; return skip_container(lx, '}', depth);
	case 't': *kind = K_TRUE; return literal(lx, "true", 4);
	case 'f': *kind = K_FALSE; return literal(lx, "false", 5);
	case 'n': *kind = K_NULL; return literal(lx, "null", 4);
	default: return number(lx, kind, &i, &d);
	}
}

/* A string value for a column of type type. */
static int from_string(ts_type type, char *s, size_t n, ts_value *out, char *why, size_t whysz)
{
	switch (type) {
	case TS_STRING:
		*out = ts_stringn(s, n);
		return 0;
	case TS_BLOB:
		return val_base64_inplace(s, n, out, why, whysz);
	case TS_TIMESTAMP:
		s[n] = '\0'; /* the closing quote's place, or before it */
		return val_parsen(TS_TIMESTAMP, s, n, out, why, whysz);
	case TS_DOUBLE:
		return val_double_from_json_string(s, n, out, why, whysz);
	default:
		snprintf(why, whysz, "expected %s, got a JSON string", ts_type_name(type));
		return TS_ETYPE;
	}
}

/* A number value for a column of type type. */
static int from_number(ts_type type, enum kind kind, long long i, double d, ts_value *out,
                       char *why, size_t whysz)
{
	if (type == TS_DOUBLE) {
		*out = ts_double(kind == K_INTEGER ? (double)i : d);
		return 0;
	}
	if (kind == K_INTEGER && (type == TS_INT32 || type == TS_INT64 || type == TS_TIMESTAMP)) {
		if (type == TS_INT32 && (i < INT32_MIN || i > INT32_MAX)) {
			snprintf(why, whysz, "%lld is out of range for int32", i);
			return TS_ERANGE;
		}
		*out = type == TS_INT32 ? ts_int32((int32_t)i)
		     : type == TS_TIMESTAMP ? ts_timestamp(i) : ts_int64(i);
		return 0;
	}
	snprintf(why, whysz, "expected %s, got %s", ts_type_name(type), kind_names[kind]);
	return TS_ETYPE;
}

/* The value at lx->p for column c of row `row`, into *out (unless an
 * error is already recorded: then only lexed). */
static int value(struct lexer *lx, const ts_column *c, size_t row, ts_value *out)
{
	char why[512], *s;
	size_t n;
	long long i = 0;
	double d = 0;
	enum kind kind;
	int rc;
	skip_ws(lx);
	if (lx->p >= lx->end)
		return malformed(lx, "expected a value");
	if (*lx->p == '"') {
		if (string(lx, &s, &n) < 0)
			return -1;
		if (lx->code)
			return 0;
		rc = from_string(c->type, s, n, out, why, sizeof why);
	} else if (*lx->p == '-' || (*lx->p >= '0' && *lx->p <= '9')) {
		if (number(lx, &kind, &i, &d) < 0)
			return -1;
		if (lx->code)
			return 0;
		rc = from_number(c->type, kind, i, d, out, why, sizeof why);
	} else {
		if (skip_value(lx, &kind, 0) < 0 || lx->code || kind == K_NULL)
			return lx->syntax ? -1 : 0;
		snprintf(why, sizeof why, "expected %s, got %s", ts_type_name(c->type), kind_names[kind]);
		rc = TS_ETYPE;
	}
	if (rc < 0)
		error(lx, rc, "row %zu, column \"%s\": %s", row, c->name, why);
	return 0;
}

/* ---- rows ---- */

/* Expect ',' (1: another element follows) or close (0: the end). */
static int next_or_close(struct lexer *lx, char close)
{
	skip_ws(lx);
	if (lx->p < lx->end && *lx->p == ',') {
		lx->p++;
		return 1;
	}
	if (lx->p < lx->end && *lx->p == close) {
		lx->p++;
		return 0;
	}
	return malformed(lx, close == ']' ? "expected ',' or ']'" : "expected ',' or '}'");
}

/* An array row: the values in column order; the width must match. */
static int array_row(struct lexer *lx, const ts_schema *s, size_t row, ts_value *vals)
{
	size_t count = 0;
	int had_error = lx->code != 0, more;
	char saved[512];
	lx->p++;
	skip_ws(lx);
	if (lx->p < lx->end && *lx->p == ']') {
		lx->p++;
	} else {
		do {
			enum kind k;
			if (count < (size_t)s->ncolumns ? value(lx, &s->columns[count], row, &vals[count]) < 0
			                                : skip_value(lx, &k, 0) < 0)
				return -1;
			count++;
		} while ((more = next_or_close(lx, ']')) == 1);
		if (more < 0)
			return -1;
	}
	if (count != (size_t)s->ncolumns && !lx->syntax && !had_error) {
		/* The width error replaces a value error of this same row. */
		snprintf(saved, sizeof saved, "row %zu: %zu values, the table has %d columns", row,
		         count, s->ncolumns);
		lx->code = TS_EINVAL;
		snprintf(lx->why, lx->whysz, "%s", saved);
	}
	return 0;
}

/* An object row: values by column name; seen[] marks the keys met. */
static int object_row(struct lexer *lx, const ts_schema *s, size_t row, ts_value *vals,
                      unsigned char *seen, struct unknown_keys *unknown)
{
	int hint = 0, more;
	char *key;
	size_t n;
	memset(seen, 0, (size_t)s->ncolumns);
	unknown->count = 0;
	lx->p++;
	skip_ws(lx);
	if (lx->p < lx->end && *lx->p == '}') {
		lx->p++;
		return 0;
	}
	do {
		enum kind k;
		if (object_key(lx, NULL, &key, &n) < 0)
			return -1;
		int j = val_column(s, key, n, hint), dup = j >= 0 ? seen[j] : unknown_seen(unknown, key, n);
		if (dup)
			return malformed(lx, dup < 0 ? "out of memory" : "duplicate object key");
		if (j < 0) {
			error(lx, TS_EINVAL, "row %zu: unknown column \"%.*s\"", row, n > 64 ? 64 : (int)n, key);
			if (skip_value(lx, &k, 0) < 0)
				return -1;
		} else {
			seen[j] = 1;
			hint = j + 1;
			if (value(lx, &s->columns[j], row, &vals[j]) < 0)
				return -1;
		}
	} while ((more = next_or_close(lx, '}')) == 1);
	return more;
}

/* The opening of the rows array.  Returns 1 when rows follow the '[', 0
 * for an empty array ("[]", taken), -1 when the text is not an array
 * (the error recorded in lx). */
static int rows_open(struct lexer *lx)
{
	skip_ws(lx);
	if (lx->p >= lx->end || *lx->p != '[') {
		enum kind k;
		if (skip_value(lx, &k, 0) == 0)
			error(lx, TS_EPROTO, "field \"rows\": expected an array, got %s", kind_names[k]);
		return -1;
	}
	lx->p++;
	skip_ws(lx);
	if (lx->p < lx->end && *lx->p == ']') {
		lx->p++;
		return 0;
	}
	return 1;
}

/* Room in *v, an array of *cap rows of w values, for row n: doubled when
 * full, the new rows zeroed.  Returns 0, or -1 with TS_ENOMEM recorded. */
static int rows_room(struct lexer *lx, ts_value **v, size_t *cap, size_t n, size_t w)
{
	if (n < *cap)
		return 0;
	size_t ncap = *cap ? *cap * 2 : 64;
	ts_value *nv = realloc(*v, ncap * w * sizeof *nv + 1);
	if (!nv) {
		error(lx, TS_ENOMEM, "out of memory for %zu rows", ncap);
		return -1;
	}
	memset(nv + *cap * w, 0, (ncap - *cap) * w * sizeof *nv);
	*v = nv;
	*cap = ncap;
	return 0;
}

/* Row n, the element at lx->p, into vals: an array row, an object row,
 * or an error saying what else it is.  Returns 0 (also after a value
 * error, recorded: the rest is still lexed) or -1 (malformed JSON). */
static int one_row(struct lexer *lx, const ts_schema *s, size_t n, ts_value *vals,
                   unsigned char *seen, struct unknown_keys *unknown)
{
	enum kind k;
	int rc;
	skip_ws(lx);
	if (lx->p < lx->end && *lx->p == '[')
		return array_row(lx, s, n, vals);
	if (lx->p < lx->end && *lx->p == '{')
		return object_row(lx, s, n, vals, seen, unknown);
	if ((rc = skip_value(lx, &k, 0)) == 0)
		error(lx, TS_EINVAL, "row %zu: expected an array or an object, got %s", n, kind_names[k]);
	return rc;
}

int jrows_parse(char *p, size_t len, const ts_schema *s, ts_value **vals, size_t *nrows,
                char *why, size_t whysz)
{
	struct lexer lx = {.base = p, .p = p, .end = p + len, .why = why, .whysz = whysz};
	size_t cap = 0, n = 0, w = (size_t)s->ncolumns;
	unsigned char *seen = malloc(w + 1);
	struct unknown_keys unknown = {0};
	ts_value *v = NULL;
	int more;
	*vals = NULL;
	*nrows = 0;
	if (!seen)
		return TS_ENOMEM;
	if ((more = rows_open(&lx)) < 0)
		goto out;
	while (more == 1) {
		if (rows_room(&lx, &v, &cap, n, w) < 0 ||
		    one_row(&lx, s, n, v + n * w, seen, &unknown) < 0)
			goto out;
		n++;
		more = next_or_close(&lx, ']');
	}
	if (more < 0)
		goto out;
	skip_ws(&lx);
	if (lx.p != lx.end)
		malformed(&lx, "text after the array");
out:
	free(seen);
	free(unknown.k);
	if (lx.code) {
		free(v);
		return lx.code;
	}
	*vals = v;
	*nrows = n;
	return 0;
}

/* ---- finding "rows" ---- */

/* Finding "rows" follows only the structure (strings, brackets, commas):
 * the text is neither modified nor validated.  Each step returns NULL
 * when the text is not what it can walk, and jrows_find then gives up. */

static int is_json_ws(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

/* The first byte of p[0..e) that is not JSON white space (e if none). */
static const char *past_ws(const char *p, const char *e)
{
	while (p < e && is_json_ws(*p))
		p++;
	return p;
}

/* A member's key: the string at p.  *is_rows says whether its bytes are
 * exactly "rows" (escapes are not decoded).  Returns the byte after its
 * closing quote, or NULL when p is not a string that ends before e. */
static const char *member_key(const char *p, const char *e, int *is_rows)
{
	const char *key;
	if (p >= e || *p != '"')
		return NULL;
	key = ++p;
	while (p < e && *p != '"') {
		if (*p == '\\' && e - p < 2)
			return NULL; /* an escape cut by the end */
		p += *p == '\\' ? 2 : 1;
	}
	if (p >= e)
		return NULL;
	*is_rows = p - key == 4 && memcmp(key, "rows", 4) == 0;
	return p + 1;
}

/* Skip the member value starting at p: strings, and brackets to their
 * match.  Returns the ',' or '}' that ends it, or NULL when the text ends
 * first or a ']' closes what is not open. */
static const char *member_value_end(const char *p, const char *e)
{
	int depth = 0, in_string = 0;
	for (; p < e; p++) {
		if (in_string) {
			if (*p == '\\')
				p++;
			else if (*p == '"')
				in_string = 0;
			continue;
		}
		if (*p == '"')
			in_string = 1;
		else if (*p == '[' || *p == '{')
			depth++;
		else if (*p == ']' || *p == '}') {
			if (depth == 0)
				break;
			depth--;
		} else if (*p == ',' && depth == 0)
			break;
	}
	return p >= e || *p == ']' ? NULL : p;
}

/* end moved back over the white space that ends text[start..end). */
static size_t trim_ws_end(const char *text, size_t start, size_t end)
{
	while (end > start && is_json_ws(text[end - 1]))
		end--;
	return end;
}

int jrows_find(const char *text, size_t len, size_t *start, size_t *end)
{
	const char *e = text + len, *p = past_ws(text, e), *v;
	int found = 0, is_rows;
	if (p >= e || *p++ != '{')
		return 0;
	for (;;) {
		if (!(p = member_key(past_ws(p, e), e, &is_rows)))
			return 0;
		p = past_ws(p, e);
		if (p >= e || *p++ != ':')
			return 0;
		v = past_ws(p, e);
		if (!(p = member_value_end(v, e)))
			return 0;
		if (is_rows) {
			if (found)
				return 0; /* twice: jansson says so */
			found = 1;
			*start = (size_t)(v - text);
			*end = trim_ws_end(text, *start, (size_t)(p - text));
		}
		if (*p == '}')
			return found;
		p++; /* ',' */
	}
}

/* ---- the slow path ---- */

/* Row i, an array in column order, into vals. */
static int json_array_row(const ts_schema *s, size_t i, const json_t *row, ts_value *vals,
                          char *why, size_t whysz)
{
	char reason[512];
	json_t *v;
	size_t j;
	int rc;
	if (json_array_size(row) != (size_t)s->ncolumns) {
		snprintf(why, whysz, "row %zu: %zu values, the table has %d columns", i,
		         json_array_size(row), s->ncolumns);
		return TS_EINVAL;
	}
	json_array_foreach(row, j, v) {
		if ((rc = val_from_json(s->columns[j].type, v, &vals[j], reason, sizeof reason)) < 0) {
			snprintf(why, whysz, "row %zu, column \"%s\": %s", i, s->columns[j].name, reason);
			return rc;
		}
	}
	return 0;
}

/* Row i, an object keyed by column name, into vals. */
static int json_object_row(const ts_schema *s, size_t i, json_t *row, ts_value *vals,
                           char *why, size_t whysz)
{
	char reason[512];
	const char *name;
	json_t *v;
	int rc;
	json_object_foreach(row, name, v) {
		int j = val_column(s, name, strlen(name), 0);
		if (j < 0) {
			snprintf(why, whysz, "row %zu: unknown column \"%.64s\"", i, name);
			return TS_EINVAL;
		}
		if ((rc = val_from_json(s->columns[j].type, v, &vals[j], reason, sizeof reason)) < 0) {
			snprintf(why, whysz, "row %zu, column \"%s\": %s", i, s->columns[j].name, reason);
			return rc;
		}
	}
	return 0;
}

int jrows_from_json(const json_t *rows, const ts_schema *s, ts_value **vals, size_t *nrows,
                    char *why, size_t whysz)
{
	size_t i, n = json_array_size(rows), w = (size_t)s->ncolumns;
	ts_value *v = NULL;
	json_t *row;
	int rc = 0;
	*vals = NULL;
	*nrows = 0;
	if (n && !(v = calloc(n * w, sizeof *v))) {
		snprintf(why, whysz, "out of memory for %zu rows", n);
		return TS_ENOMEM;
	}
	json_array_foreach(rows, i, row) {
		if (json_is_array(row))
			rc = json_array_row(s, i, row, v + i * w, why, whysz);
		else if (json_is_object(row))
			rc = json_object_row(s, i, row, v + i * w, why, whysz);
		else {
			snprintf(why, whysz, "row %zu: expected an array or an object, got %s", i,
			         val_json_kind(row));
			rc = TS_EINVAL;
		}
		if (rc < 0)
			break;
	}
	if (rc < 0) {
		for (i = 0; i < n * w; i++)
			val_free(&v[i]);
		free(v);
		return rc;
	}
	*vals = v;
	*nrows = n;
	return 0;
}
