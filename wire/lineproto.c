/*
 * lineproto.c -- InfluxDB line protocol, parsed in place.
 *
 * A line is
 *     measurement[,tagkey=tagvalue...] fieldkey=fieldvalue[,...] [timestamp]
 * and this module owns its grammar (written out in docs/ingest-mapping.md):
 *   - lines end at '\n'; a '\r' before it and trailing spaces and tabs are
 *     ignored, as are leading ones; blank lines and lines starting with
 *     '#' are skipped (they still count in line numbers);
 *   - the sections are separated by one or more spaces;
 *   - a backslash escapes ',' and ' ' in a measurement, ',', '=' and ' '
 *     in tag keys, tag values and field keys, '"' in a string value, and
 *     a backslash in all of them (two backslashes are one); before any
 *     other character it is a literal backslash;
 *   - field values: float (-?digits[.digits][e[+-]digits], or .digits),
 *     integer (-?digits then 'i'), unsigned (digits then 'u'), boolean
 *     (t T true True TRUE f F false False FALSE), string ("...");
 *   - the timestamp, when present, is -?digits in the request's precision.
 *
 * Nothing is copied: names and strings are lp_text spans of the body, with
 * a note of whether they hold escapes, so the common case (no escapes) is
 * used as it stands.  Integers are converted while parsing, because their
 * range decides whether the line is valid; floats are only checked against
 * the grammar and converted by lp_field_float, so a caller that only needs
 * the shape of a line (which fields, of which types) pays for no strtod.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lineproto.h"

int lp_precision_parse(const char *text, enum lp_precision *out)
{
	static const struct {
		const char *name;
		enum lp_precision p;
	} names[] = {{"", LP_NS}, {"ns", LP_NS}, {"n", LP_NS}, {"us", LP_US}, {"u", LP_US},
	             {"ms", LP_MS}, {"s", LP_S}, {"m", LP_M}, {"h", LP_H}};
	if (!text)
		text = "";
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
		if (strcmp(text, names[i].name) == 0) {
			*out = names[i].p;
			return 0;
		}
	return -1;
}

int64_t lp_precision_ns(enum lp_precision p)
{
	static const int64_t ns[] = {1, 1000, 1000000, 1000000000, 60000000000LL,
	                             3600000000000LL};
	return ns[p];
}

void lp_reader_init(struct lp_reader *r, const char *body, size_t len, enum lp_precision p)
{
	r->p = body;
	r->end = body + len;
	r->precision = p;
	r->line = 0;
	r->line_p = body;
	r->line_len = 0;
	r->why[0] = '\0';
}

/* ---- Scanning ---- */

/* Whether a backslash before c is an escape in class esc. */
static int escapes(enum lp_esc esc, char c)
{
	switch (esc) {
	case LP_ESC_MEASUREMENT: return c == ',' || c == ' ' || c == '\\';
	case LP_ESC_KEY: return c == ',' || c == '=' || c == ' ' || c == '\\';
	case LP_ESC_STRING: return c == '"' || c == '\\';
	default: return 0;
	}
}

/* Whether c ends a name of class esc (measurement: ',' ' '; keys and tag
 * values: ',' '=' ' '). */
static int ends_name(enum lp_esc esc, char c)
{
	return c == ',' || c == ' ' || (c == '=' && esc == LP_ESC_KEY);
}

/* The bytes a name scan must look at: those that may end a name, and
 * the backslash (bit 0: measurement, bit 1: keys). */
static const unsigned char special[256] = {
	[','] = 3, [' '] = 3, ['='] = 2, ['\\'] = 3,
};

/* Scan a name of class esc from p: up to the first unescaped character
 * that ends it, or end.  *t receives the span; returns where it stopped. */
static const char *scan_name(const char *p, const char *end, enum lp_esc esc,
                             struct lp_text *t)
{
	const char *s = p;
	const unsigned char bit = esc == LP_ESC_KEY ? 2 : 1;
	int escaped = 0;
	for (;;) {
		while (p < end && !(special[(unsigned char)*p] & bit))
			p++;
		if (p == end || ends_name(esc, *p))
			break;
		if (p + 1 < end && escapes(esc, p[1])) { /* *p is a backslash */
			escaped = 1;
			p++;
		}
		p++;
	}
	t->p = s;
	t->len = (size_t)(p - s);
	t->esc = escaped ? esc : LP_ESC_NONE;
	return p;
}

size_t lp_unescape(const struct lp_text *t, char *out)
{
	size_t n = 0;
	if (t->esc == LP_ESC_NONE) {
		memcpy(out, t->p, t->len);
		return t->len;
	}
	for (size_t i = 0; i < t->len; i++) {
		if (t->p[i] == '\\' && i + 1 < t->len && escapes(t->esc, t->p[i + 1]))
			i++;
		out[n++] = t->p[i];
	}
	return n;
}

static int failv(char *why, size_t whysz, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int failv(char *why, size_t whysz, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(why, whysz, fmt, ap);
	va_end(ap);
	return -1;
}

/* A name for messages: at most 40 bytes of it, as it stands. */
#define SHOW(t) (int)((t).len > 40 ? 40 : (t).len), (t).p

static int is_digit(char c) { return c >= '0' && c <= '9'; }

/* Whether p[0..n) is one or more decimal digits. */
static int all_digits(const char *p, size_t n)
{
	if (n == 0)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!is_digit(p[i]))
			return 0;
	return 1;
}

/* Digits p[0..n) as a uint64; -1 when they overflow it. */
static int to_u64(const char *p, size_t n, uint64_t *out)
{
	uint64_t v = 0;
	for (size_t i = 0; i < n; i++)
		if (__builtin_mul_overflow(v, 10, &v) || __builtin_add_overflow(v, (uint64_t)(p[i] - '0'), &v))
			return -1;
	*out = v;
	return 0;
}

/* -?digits at p[0..n) as an int64.  Returns 0, -1 (malformed) or -2
 * (out of range). */
static int to_i64(const char *p, size_t n, int64_t *out)
{
	int neg = n > 0 && p[0] == '-';
	uint64_t u;
	if (!all_digits(p + neg, n - neg))
		return -1;
	if (to_u64(p + neg, n - neg, &u) < 0 || u > (uint64_t)INT64_MAX + neg)
		return -2;
	*out = neg ? (int64_t)(0 - u) : (int64_t)u;
	return 0;
}

/* Whether p[0..n) is a float of the grammar:
 * -?(digits[.digits*]|.digits)([eE][+-]?digits)? */
static int is_float(const char *p, size_t n)
{
	size_t i = 0, d = 0;
	if (i < n && p[i] == '-')
		i++;
	while (i < n && is_digit(p[i]))
		i++, d++;
	if (i < n && p[i] == '.') {
		i++;
		while (i < n && is_digit(p[i]))
			i++, d++;
	}
	if (d == 0)
		return 0;
	if (i < n && (p[i] == 'e' || p[i] == 'E')) {
		i++;
		if (i < n && (p[i] == '+' || p[i] == '-'))
			i++;
		if (i == n || !is_digit(p[i]))
			return 0;
		while (i < n && is_digit(p[i]))
			i++;
	}
	return i == n;
}

/* Whether p[0..n) is one of the boolean words; *b receives its value. */
static int is_bool(const char *p, size_t n, int *b)
{
	static const char *const words[] = {"t", "T", "true", "True", "TRUE",
	                                    "f", "F", "false", "False", "FALSE"};
	for (int w = 0; w < 10; w++)
		if (strlen(words[w]) == n && memcmp(words[w], p, n) == 0) {
			*b = w < 5;
			return 1;
		}
	return 0;
}

/* The value of field f from the text p[0..n) (not a string). */
static int field_value(struct lp_field *f, const char *p, size_t n, char *why, size_t whysz)
{
	f->raw.p = p;
	f->raw.len = n;
	f->raw.esc = LP_ESC_NONE;
	if (n == 0)
		return failv(why, whysz, "field \"%.*s\" has no value", SHOW(f->key));
	if (n > LP_NUMBER_MAX)
		return failv(why, whysz, "field \"%.*s\": value too long", SHOW(f->key));
	if (p[n - 1] == 'i') {
		int rc = to_i64(p, n - 1, &f->v.i);
		f->type = LP_INT;
		if (rc == -1)
			return failv(why, whysz, "field \"%.*s\": invalid integer \"%.*s\"", SHOW(f->key),
			             (int)n, p);
		if (rc == -2)
			return failv(why, whysz, "field \"%.*s\": integer %.*s out of range", SHOW(f->key),
			             (int)n, p);
		return 0;
	}
	if (p[n - 1] == 'u') {
		f->type = LP_UINT;
		if (!all_digits(p, n - 1))
			return failv(why, whysz, "field \"%.*s\": invalid unsigned integer \"%.*s\"",
			             SHOW(f->key), (int)n, p);
		if (to_u64(p, n - 1, &f->v.u) < 0)
			return failv(why, whysz, "field \"%.*s\": unsigned integer %.*s out of range",
			             SHOW(f->key), (int)n, p);
		return 0;
	}
	if (is_bool(p, n, &f->v.b)) {
		f->type = LP_BOOL;
		return 0;
	}
	f->type = LP_FLOAT;
	if (!is_float(p, n))
		return failv(why, whysz, "field \"%.*s\": invalid value \"%.*s\"", SHOW(f->key),
		             (int)(n > 40 ? 40 : n), p);
	return 0;
}

/* Scan a string value from p, which is just past its opening quote;
 * *t receives its text between the quotes.  Returns where the closing
 * quote is, or NULL when there is none. */
static const char *scan_string(const char *p, const char *end, struct lp_text *t)
{
	const char *s = p;
	int escaped = 0;
	while (p < end && *p != '"') {
		if (*p == '\\' && p + 1 < end && escapes(LP_ESC_STRING, p[1])) {
			escaped = 1;
			p++;
		}
		p++;
	}
	if (p == end)
		return NULL;
	t->p = s;
	t->len = (size_t)(p - s);
	t->esc = escaped ? LP_ESC_STRING : LP_ESC_NONE;
	return p;
}

/* ---- One line ---- */

struct line {
	const char *p, *end;
	char *why;
	size_t whysz;
};

/* The tag set after the measurement; l->p is at the ',' before it.
 * Stops at the ' ' that ends it. */
static int parse_tags(struct line *l, struct lp_point *pt, struct lp_tag *tags, int room)
{
	while (l->p < l->end && *l->p == ',') {
		struct lp_tag *t = &tags[pt->ntags];
		if (pt->ntags == room)
			return failv(l->why, l->whysz, "more than %d tags", room);
		l->p = scan_name(l->p + 1, l->end, LP_ESC_KEY, &t->key);
		if (t->key.len == 0)
			return failv(l->why, l->whysz, "empty tag key");
		if (l->p == l->end || *l->p != '=')
			return failv(l->why, l->whysz, "tag \"%.*s\" has no value", SHOW(t->key));
		l->p = scan_name(l->p + 1, l->end, LP_ESC_KEY, &t->value);
		if (t->value.len == 0)
			return failv(l->why, l->whysz, "tag \"%.*s\" has an empty value", SHOW(t->key));
		if (l->p < l->end && *l->p == '=')
			return failv(l->why, l->whysz, "tag \"%.*s\": unescaped '=' in its value",
			             SHOW(t->key));
		pt->ntags++;
	}
	return 0;
}

/* The field set; l->p is at its first character.  Stops at the ' ' that
 * ends it, or the end. */
static int parse_fields(struct line *l, struct lp_point *pt, struct lp_field *fields, int room)
{
	for (;;) {
		struct lp_field *f = &fields[pt->nfields];
		if (pt->nfields == room)
			return failv(l->why, l->whysz, "more than %d fields", room);
		l->p = scan_name(l->p, l->end, LP_ESC_KEY, &f->key);
		if (f->key.len == 0)
			return failv(l->why, l->whysz, "empty field key");
		if (l->p == l->end || *l->p != '=')
			return failv(l->why, l->whysz, "field \"%.*s\" has no value", SHOW(f->key));
		l->p++;
		if (l->p < l->end && *l->p == '"') {
			const char *q = scan_string(l->p + 1, l->end, &f->raw);
			if (!q)
				return failv(l->why, l->whysz, "field \"%.*s\": unterminated string",
				             SHOW(f->key));
			f->type = LP_STRING;
			l->p = q + 1;
			if (l->p < l->end && *l->p != ',' && *l->p != ' ')
				return failv(l->why, l->whysz, "field \"%.*s\": text after the closing quote",
				             SHOW(f->key));
		} else {
			const char *s = l->p;
			while (l->p < l->end && *l->p != ',' && *l->p != ' ')
				l->p++;
			if (field_value(f, s, (size_t)(l->p - s), l->why, l->whysz) < 0)
				return -1;
		}
		pt->nfields++;
		if (l->p == l->end || *l->p == ' ')
			return 0;
		l->p++; /* the ',' */
	}
}

/* The timestamp, from l->p to the end. */
static int parse_time(struct line *l, struct lp_point *pt, enum lp_precision prec)
{
	size_t n = (size_t)(l->end - l->p);
	int64_t v;
	int rc;
	if (memchr(l->p, ' ', n))
		return failv(l->why, l->whysz, "text after the timestamp");
	if (n > LP_NUMBER_MAX || (rc = to_i64(l->p, n, &v)) == -1)
		return failv(l->why, l->whysz, "invalid timestamp \"%.*s\"", (int)(n > 40 ? 40 : n),
		             l->p);
	if (rc == -2 || __builtin_mul_overflow(v, lp_precision_ns(prec), &pt->time))
		return failv(l->why, l->whysz, "timestamp %.*s out of range", (int)n, l->p);
	pt->has_time = 1;
	return 0;
}

static const char *skip_spaces(const char *p, const char *end)
{
	while (p < end && *p == ' ')
		p++;
	return p;
}

int lp_parse_line(const char *p, size_t len, enum lp_precision prec, struct lp_point *pt,
                  struct lp_tag *tags, int ntags_room, struct lp_field *fields,
                  int nfields_room, char *why, size_t whysz)
{
	struct line l = {p, p + len, why, whysz};
	while (l.p < l.end && (*l.p == ' ' || *l.p == '\t'))
		l.p++;
	while (l.end > l.p && (l.end[-1] == '\r' || l.end[-1] == ' ' || l.end[-1] == '\t'))
		l.end--;
	if (l.p == l.end || *l.p == '#')
		return 0;
	memset(pt, 0, sizeof *pt);
	pt->tags = tags;
	pt->fields = fields;
	l.p = scan_name(l.p, l.end, LP_ESC_MEASUREMENT, &pt->measurement);
	if (pt->measurement.len == 0)
		return failv(why, whysz, "empty measurement");
	if (parse_tags(&l, pt, tags, ntags_room) < 0)
		return -1;
	l.p = skip_spaces(l.p, l.end);
	if (l.p == l.end)
		return failv(why, whysz, "no fields");
	if (parse_fields(&l, pt, fields, nfields_room) < 0)
		return -1;
	l.p = skip_spaces(l.p, l.end);
	if (l.p < l.end && parse_time(&l, pt, prec) < 0)
		return -1;
	return 1;
}

int lp_next(struct lp_reader *r, struct lp_point *pt)
{
	while (r->p < r->end) {
		const char *nl = memchr(r->p, '\n', (size_t)(r->end - r->p));
		const char *e = nl ? nl : r->end;
		int rc;
		r->line++;
		r->line_p = r->p;
		r->line_len = (size_t)(e - r->p);
		r->p = nl ? nl + 1 : r->end;
		rc = lp_parse_line(r->line_p, r->line_len, r->precision, pt, r->tags, LP_TAGS_MAX,
		                   r->fields, LP_FIELDS_MAX, r->why, sizeof r->why);
		if (rc != 0)
			return rc;
	}
	return 0;
}

/* ---- Floats ---- */

/* Exact powers of ten as doubles (10^22 is the last one). */
static const double pow10_exact[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                     1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                     1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

/* The fast path for the common floats: at most 15 significant digits and
 * no exponent, so the mantissa and the power of ten are both exact
 * doubles and one division rounds correctly.  0 when it applies. */
static int float_fast(const char *p, size_t n, double *out)
{
	uint64_t m = 0;
	int digits = 0, frac = 0, seen_dot = 0, neg = 0;
	size_t i = 0;
	if (p[0] == '-')
		neg = 1, i = 1;
	for (; i < n; i++) {
		if (p[i] == '.') {
			seen_dot = 1;
			continue;
		}
		if (!is_digit(p[i]))
			return -1; /* an exponent: the slow path */
		if (m == 0 && p[i] == '0') {
			frac += seen_dot;
			continue; /* leading zeros are not significant */
		}
		if (++digits > 15)
			return -1;
		m = m * 10 + (uint64_t)(p[i] - '0');
		frac += seen_dot;
	}
	if (frac > 22)
		return -1;
	double d = (double)m / pow10_exact[frac];
	*out = neg ? -d : d;
	return 0;
}

int lp_field_float(const struct lp_field *f, double *out)
{
	char buf[LP_NUMBER_MAX + 1];
	char *e;
	size_t n = f->raw.len;
	if (float_fast(f->raw.p, n, out) == 0)
		return 0;
	memcpy(buf, f->raw.p, n);
	buf[n] = '\0';
	errno = 0;
	*out = strtod(buf, &e);
	if (errno == ERANGE && (*out == HUGE_VAL || *out == -HUGE_VAL))
		return -1;
	return 0;
}
