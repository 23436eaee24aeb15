/*
 * influxql.c -- InfluxQL text into the tree of influxql.h, and back.
 *
 * Three parts, in this order:
 *   - the lexer: bytes into tokens (identifiers and keywords, quoted
 *     identifiers, strings, numbers, durations, operators); a /regex/ is
 *     only read where the grammar wants one (after =~ and !~, in FROM, in
 *     WITH KEY), since '/' is also division;
 *   - the parser: one function per production of docs/influxql.md, each
 *     reading tokens and building nodes; binary operators by precedence
 *     climbing, which builds the same left-associative tree InfluxDB does;
 *   - the printer (iql_format) and the dumper (iql_dump).
 *
 * Errors.  The messages are InfluxDB 1.6's, position included: "found X,
 * expected Y at line L, char C", where C is InfluxDB's count (1-based, in
 * characters, with its quirks: a bad string or regex is reported one before
 * its quote, an end of input right after a word or at the start of a list
 * element one further on).  A failure unwinds with longjmp to iql_parse:
 * every node lives in the parse's arena, so nothing is left to free on the
 * way, and iql_parse frees the arena whole.
 *
 * Bounds: the text is at most IQL_QUERY_MAX bytes; every node records the
 * height of its subtree, and none may be higher than IQL_DEPTH_MAX, which
 * bounds the parser's recursion (each level of it makes a node at least one
 * higher) and that of anything walking a tree later.
 */
#include <limits.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "influxql.h"

/* ------------------------------------------------------------------ */
/* The arena                                                          */

#define ARENA_CHUNK ((size_t)16 << 10)

struct achunk {
	struct achunk *next;
	size_t used, cap;
	max_align_t data[];
};

/* Free a chain of chunks (NULL: nothing). */
static void arena_release(struct achunk *c)
{
	while (c) {
		struct achunk *next = c->next;
		free(c);
		c = next;
	}
}

/* ------------------------------------------------------------------ */
/* Tokens                                                             */

enum tok {
	T_EOF,
	T_ILLEGAL,    /* a character no token starts with */
	T_IDENT,      /* unquoted identifier (not a keyword) */
	T_QIDENT,     /* "quoted identifier" */
	T_STRING,     /* 'string' */
	T_BADSTRING,  /* a string or quoted identifier without its end */
	T_BADESCAPE,  /* a \x escape InfluxQL does not know, in a string */
	T_INTEGER,
	T_FLOAT,
	T_DURATION,   /* digits then letters: validated when used */
	T_KEYWORD,
	T_OP,         /* a binary operator (op) */
	T_LPAREN, T_RPAREN, T_COMMA, T_SEMI, T_DOT,
};

/* The keywords of InfluxQL 1.6: reserved, so an identifier spelled like
 * one must be quoted.  Matched without regard to case; kept sorted
 * (keyword() searches by halves). */
static const char *const keywords[] = {
	"ALL", "ALTER", "ANALYZE", "AND", "ANY", "AS", "ASC", "BEGIN", "BY",
	"CARDINALITY", "CONTINUOUS", "CREATE", "DATABASE", "DATABASES", "DEFAULT",
	"DELETE", "DESC", "DESTINATIONS", "DIAGNOSTICS", "DISTINCT", "DROP",
	"DURATION", "END", "EVERY", "EXACT", "EXPLAIN", "FALSE", "FIELD", "FOR",
	"FROM", "GRANT", "GRANTS", "GROUP", "GROUPS", "IN", "INF", "INSERT", "INTO",
	"KEY", "KEYS", "KILL", "LIMIT", "MEASUREMENT", "MEASUREMENTS", "NAME",
	"OFFSET", "ON", "OR", "ORDER", "PASSWORD", "POLICIES", "POLICY", "PRIVILEGES",
	"QUERIES", "QUERY", "READ", "REPLICATION", "RESAMPLE", "RETENTION", "REVOKE",
	"SELECT", "SERIES", "SET", "SHARD", "SHARDS", "SHOW", "SLIMIT", "SOFFSET", "STATS",
	"SUBSCRIPTION", "SUBSCRIPTIONS", "TAG", "TO", "TRUE", "USER", "USERS",
	"VALUES", "WHERE", "WITH", "WRITE",
};
#define NKEYWORDS (sizeof keywords / sizeof keywords[0])

struct token {
	enum tok type;
	int kw;              /* T_KEYWORD: index in keywords[] */
	enum iql_op op;      /* T_OP */
	size_t start, end;   /* its bytes in the text */
	size_t lit, litlen;  /* what an error says was found (for a string, its text) */
	size_t pos;          /* byte from which its reported position is counted */
	int pos_adj;         /* added to the count (InfluxDB's quirks, above) */
};

struct parser {
	const char *q;
	size_t len;
	size_t pos;          /* the next byte the lexer reads */
	struct token tok;    /* the token scan gave last */
	int list_start;      /* the next token starts a list element (the position
	                      * InfluxDB gives an end of input there) */
	int comment_to_end;  /* a -- comment runs to the end of the text */
	struct achunk *arena;
	jmp_buf fail;
	int rc;
	char *err;
	size_t errsize;
};

static const char *const op_text[] = {
	[IQL_OP_OR] = "OR", [IQL_OP_AND] = "AND", [IQL_OP_EQ] = "=", [IQL_OP_NEQ] = "!=",
	[IQL_OP_EQREGEX] = "=~", [IQL_OP_NEQREGEX] = "!~", [IQL_OP_LT] = "<",
	[IQL_OP_LTE] = "<=", [IQL_OP_GT] = ">", [IQL_OP_GTE] = ">=", [IQL_OP_ADD] = "+",
	[IQL_OP_SUB] = "-", [IQL_OP_BITOR] = "|", [IQL_OP_BITXOR] = "^", [IQL_OP_MUL] = "*",
	[IQL_OP_DIV] = "/", [IQL_OP_MOD] = "%", [IQL_OP_BITAND] = "&",
};

/* An operator's precedence: higher binds tighter. */
static int precedence(enum iql_op op)
{
	switch (op) {
	case IQL_OP_OR: return 1;
	case IQL_OP_AND: return 2;
	case IQL_OP_ADD: case IQL_OP_SUB: case IQL_OP_BITOR: case IQL_OP_BITXOR: return 5;
	case IQL_OP_MUL: case IQL_OP_DIV: case IQL_OP_MOD: case IQL_OP_BITAND: return 6;
	default: return 4; /* comparisons */
	}
}

/* ------------------------------------------------------------------ */
/* Failing                                                            */

/* Fail the parse with code rc and a message: unwinds to iql_parse. */
static void fail(struct parser *p, int rc, const char *fmt, ...) __attribute__((format(printf, 3, 4), noreturn));
static void fail(struct parser *p, int rc, const char *fmt, ...)
{
	if (p->err && p->errsize) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(p->err, p->errsize, fmt, ap);
		va_end(ap);
	}
	p->rc = rc;
	longjmp(p->fail, 1);
}

/* InfluxDB's line and char of byte off, plus adj: lines from 1, chars
 * (UTF-8 sequences) from 1 within the line. */
static void position(const struct parser *p, size_t off, int adj, int *line, long *ch)
{
	long c = 0;
	*line = 1;
	for (size_t i = 0; i < off && i < p->len; i++) {
		unsigned char b = (unsigned char)p->q[i];
		if (b == '\n') {
			++*line;
			c = 0;
		} else if ((b & 0xC0) != 0x80) {
			c++;
		}
	}
	*ch = c + 1 + adj;
	if (*ch < 1)
		*ch = 1; /* before the first character: InfluxDB's zero position */
}

/* What an error says was found: the token's text, unescaped for a string
 * or quoted identifier (complete or not), as InfluxDB says it. */
static void found_text(const struct parser *p, const struct token *t, char *out, size_t size)
{
	size_t o = 0;
	int quoted = t->type == T_STRING || t->type == T_QIDENT || t->type == T_BADSTRING;
	for (size_t i = t->lit; i < t->lit + t->litlen && o + 1 < size; i++) {
		char c = p->q[i];
		if (quoted && c == '\\' && i + 1 < t->lit + t->litlen) {
			c = p->q[++i];
			if (c == 'n')
				c = '\n';
		}
		out[o++] = c;
	}
	out[o] = '\0';
}

/* "found <t>, expected <what> at line L, char C". */
static void fail_expected(struct parser *p, const struct token *t, const char *what) __attribute__((noreturn));
static void fail_expected(struct parser *p, const struct token *t, const char *what)
{
	int line;
	long ch;
	char found[IQL_ERR_MAX];
	if (t->type == T_EOF)
		snprintf(found, sizeof found, "EOF");
	else if (t->type == T_KEYWORD)
		snprintf(found, sizeof found, "%s", keywords[t->kw]);
	else if (t->type == T_OP)
		snprintf(found, sizeof found, "%s", op_text[t->op]);
	else
		found_text(p, t, found, sizeof found);
	if (!found[0]) /* as InfluxDB: a token with no text is named */
		snprintf(found, sizeof found, "%s",
		         t->type == T_STRING ? "STRING" : t->type == T_QIDENT ? "IDENT" :
		         t->type == T_BADSTRING ? "BADSTRING" : t->type == T_BADESCAPE ? "BADESCAPE" : "ILLEGAL");
	position(p, t->pos, t->pos_adj, &line, &ch);
	fail(p, IQL_ESYNTAX, "error parsing query: found %s, expected %s at line %d, char %ld", found, what,
	     line, ch);
}

/* A parse error with a message of its own, at byte off. */
static void fail_at(struct parser *p, size_t off, int adj, const char *msg) __attribute__((noreturn));
static void fail_at(struct parser *p, size_t off, int adj, const char *msg)
{
	int line;
	long ch;
	position(p, off, adj, &line, &ch);
	fail(p, IQL_ESYNTAX, "error parsing query: %s at line %d, char %ld", msg, line, ch);
}

/* ------------------------------------------------------------------ */
/* Memory                                                             */

static void *alloc(struct parser *p, size_t n)
{
	struct achunk *c = p->arena;
	n = (n + sizeof(max_align_t) - 1) / sizeof(max_align_t) * sizeof(max_align_t);
	if (!c || c->cap - c->used < n) {
		size_t cap = n > ARENA_CHUNK / 2 ? n : ARENA_CHUNK;
		if (!(c = malloc(sizeof *c + cap)))
			fail(p, IQL_ENOMEM, "out of memory");
		c->cap = cap;
		c->used = 0;
		c->next = p->arena;
		p->arena = c;
	}
	c->used += n;
	void *m = (char *)c->data + c->used - n;
	memset(m, 0, n);
	return m;
}

/* A growable array of pointers or structs, built in the arena by doubling. */
static void *grow(struct parser *p, void *arr, size_t n, size_t size)
{
	if (n == 0 || (n & (n - 1)) == 0) { /* 0, 1, 2, 4...: full */
		size_t cap = n ? n * 2 : 1;
		void *m = alloc(p, cap * size);
		if (n)
			memcpy(m, arr, n * size);
		return m;
	}
	return arr;
}

/* ------------------------------------------------------------------ */
/* The lexer                                                          */

static int is_letter(int c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

/* The character classes of InfluxQL's lexer (ASCII only, as InfluxDB's). */
static int is_digit(int c)
{
	return c >= '0' && c <= '9';
}

static int is_ident_char(int c)
{
	return is_letter(c) || is_digit(c) || c == '_';
}

/* The byte at i, or -1 past the end. */
static int at(const struct parser *p, size_t i)
{
	return i < p->len ? (unsigned char)p->q[i] : -1;
}

/* Skip blanks and comments (-- to the end of the line, slash-star to
 * star-slash); returns whether anything was skipped. */
static int skip_space(struct parser *p)
{
	size_t from = p->pos;
	for (;;) {
		int c = at(p, p->pos);
		if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
			p->pos++;
		} else if (c == '-' && at(p, p->pos + 1) == '-') {
			while (p->pos < p->len && p->q[p->pos] != '\n')
				p->pos++;
			p->comment_to_end = p->pos == p->len;
		} else if (c == '/' && at(p, p->pos + 1) == '*') {
			const char *e = NULL;
			for (size_t i = p->pos + 2; i + 1 < p->len; i++)
				if (p->q[i] == '*' && p->q[i + 1] == '/') {
					e = p->q + i + 2;
					break;
				}
			if (!e) /* unterminated: the lexer makes it an illegal token */
				return p->pos != from;
			p->pos = (size_t)(e - p->q);
		} else {
			return p->pos != from;
		}
	}
}

/* Whether the text ends with a word (an identifier, keyword or boolean):
 * InfluxDB counts an end of input right after one a char further. */
static int ends_with_word(const struct parser *p)
{
	size_t i = p->len;
	while (i > 0 && is_ident_char((unsigned char)p->q[i - 1]))
		i--;
	return i < p->len && !is_digit((unsigned char)p->q[i]);
}

/* The length of the UTF-8 sequence at i (1 when it is not one). */
static size_t utf8_len(const struct parser *p, size_t i)
{
	unsigned char b = (unsigned char)p->q[i];
	size_t n = b >= 0xF0 && b < 0xF8 ? 4 : b >= 0xE0 ? 3 : b >= 0xC0 ? 2 : 1;
	if (n > 3 && b >= 0xF8)
		n = 1;
	for (size_t k = 1; k < n; k++)
		if (i + k >= p->len || ((unsigned char)p->q[i + k] & 0xC0) != 0x80)
			return 1;
	return n;
}

/* Whether "µ" (U+00B5, a duration unit) is at i. */
static int is_micro(const struct parser *p, size_t i)
{
	return at(p, i) == 0xC2 && at(p, i + 1) == 0xB5;
}

/* A 'string' or "identifier" from its opening quote at p->pos: checks its
 * escapes (\n \\ \" \' only) and finds its end. */
static void scan_quoted(struct parser *p, struct token *t, int quote)
{
	size_t i = p->pos + 1;
	t->type = quote == '"' ? T_QIDENT : T_STRING;
	/* InfluxDB reports a string (and an unterminated identifier, and a
	 * regex) at the character before its opening quote */
	t->pos_adj = quote == '\'' ? -1 : 0;
	for (;;) {
		int c = at(p, i);
		if (c < 0 || c == '\n') {
			t->type = T_BADSTRING;
			t->lit = p->pos + 1;
			t->litlen = i - t->lit;
			t->pos = p->pos;
			t->pos_adj = -1;
			p->pos = i;
			return;
		}
		if (c == '\\') {
			int e = at(p, i + 1);
			if (e != 'n' && e != '\\' && e != '"' && e != '\'') {
				t->type = T_BADESCAPE;
				t->lit = i;
				t->litlen = e < 0 ? 1 : 1 + utf8_len(p, i + 1);
				t->pos = i;
				t->pos_adj = 1;
				p->pos = i + t->litlen;
				return;
			}
			i += 2;
			continue;
		}
		if (c == quote)
			break;
		i++;
	}
	t->lit = p->pos + 1;
	t->litlen = i - t->lit;
	p->pos = i + 1;
}

/* A number: digits [. digits] or . digits; digits followed by letters is a
 * duration (checked when used, as InfluxDB does: "1x" is an invalid
 * duration, not a number and a name). */
static void scan_number(struct parser *p, struct token *t)
{
	size_t i = p->pos;
	while (is_digit(at(p, i)))
		i++;
	if (at(p, i) == '.') {
		t->type = T_FLOAT;
		for (i++; is_digit(at(p, i)); i++)
			;
	} else if (is_letter(at(p, i)) || is_micro(p, i)) {
		t->type = T_DURATION;
		while (is_letter(at(p, i)) || is_digit(at(p, i)) || is_micro(p, i))
			i += is_micro(p, i) ? 2 : 1;
	} else {
		t->type = T_INTEGER;
	}
	p->pos = i;
}

/* The index in keywords[] (sorted) of the word s[0..n), any case, or -1. */
static int keyword(const char *s, size_t n)
{
	size_t lo = 0, hi = NKEYWORDS;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		int c = strncasecmp(s, keywords[mid], n);
		if (c == 0 && keywords[mid][n] == '\0')
			return (int)mid;
		if (c < 0 || (c == 0 && keywords[mid][n] != '\0'))
			hi = mid; /* s sorts before (a prefix sorts first) */
		else
			lo = mid + 1;
	}
	return -1;
}

/* An operator or punctuation at p->pos, or T_ILLEGAL. */
static void scan_symbol(struct parser *p, struct token *t)
{
	int c = at(p, p->pos), c1 = at(p, p->pos + 1);
	size_t n = 1;
	t->type = T_OP;
	switch (c) {
	case '(': t->type = T_LPAREN; break;
	case ')': t->type = T_RPAREN; break;
	case ',': t->type = T_COMMA; break;
	case ';': t->type = T_SEMI; break;
	case '.': t->type = T_DOT; break;
	case '+': t->op = IQL_OP_ADD; break;
	case '-': t->op = IQL_OP_SUB; break;
	case '*': t->op = IQL_OP_MUL; break;
	case '/':
		if (c1 == '*') { /* a comment without its end, as InfluxDB: ILLEGAL */
			t->type = T_ILLEGAL;
			n = p->len - p->pos;
			break;
		}
		t->op = IQL_OP_DIV;
		break;
	case '%': t->op = IQL_OP_MOD; break;
	case '&': t->op = IQL_OP_BITAND; break;
	case '|': t->op = IQL_OP_BITOR; break;
	case '^': t->op = IQL_OP_BITXOR; break;
	case '=':
		t->op = c1 == '~' ? IQL_OP_EQREGEX : IQL_OP_EQ;
		n = c1 == '~' ? 2 : 1;
		break;
	case '!':
		if (c1 == '=' || c1 == '~') {
			t->op = c1 == '=' ? IQL_OP_NEQ : IQL_OP_NEQREGEX;
			n = 2;
		} else {
			t->type = T_ILLEGAL;
		}
		break;
	case '<':
		t->op = c1 == '=' ? IQL_OP_LTE : IQL_OP_LT;
		n = c1 == '=' ? 2 : 1;
		if (c1 == '>') { /* <> is != in InfluxQL */
			t->op = IQL_OP_NEQ;
			n = 2;
		}
		break;
	case '>':
		t->op = c1 == '=' ? IQL_OP_GTE : IQL_OP_GT;
		n = c1 == '=' ? 2 : 1;
		break;
	default:
		t->type = T_ILLEGAL;
		n = utf8_len(p, p->pos);
	}
	p->pos += n;
}

/* The next token. */
static struct token *scan(struct parser *p)
{
	struct token *t = &p->tok;
	int spaced = skip_space(p), c = at(p, p->pos);
	memset(t, 0, sizeof *t);
	t->start = t->pos = t->lit = p->pos;
	if (c < 0) {
		t->type = T_EOF;
		t->pos_adj = (!spaced && ends_with_word(p)) || p->list_start || p->comment_to_end;
	} else if (is_letter(c) || c == '_') {
		size_t i = p->pos;
		while (is_ident_char(at(p, i)))
			i++;
		if (at(p, i) == '"') {
			/* InfluxDB reads a word glued to a quoted identifier as that
			 * identifier alone (a"b" is "b"), at the word's place */
			p->pos = i;
			scan_quoted(p, t, '"');
			if (t->type == T_QIDENT) {
				t->pos = t->start;
				t->pos_adj = 0;
			}
		} else {
			t->kw = keyword(p->q + p->pos, i - p->pos);
			t->type = t->kw >= 0 ? T_KEYWORD : T_IDENT;
			p->pos = i;
		}
	} else if (c == '"' || c == '\'') {
		scan_quoted(p, t, c);
	} else if (is_digit(c) || (c == '.' && is_digit(at(p, p->pos + 1)))) {
		scan_number(p, t);
	} else {
		scan_symbol(p, t);
	}
	t->end = p->pos;
	if (t->type != T_BADSTRING && t->type != T_BADESCAPE && t->type != T_QIDENT &&
	    t->type != T_STRING)
		t->litlen = t->end - t->lit;
	if (t->type == T_ILLEGAL && c == '/')
		t->litlen = 0;
	p->list_start = 0;
	return t;
}

/* Undo the last scan: the next one reads the same token again. */
static void unscan(struct parser *p)
{
	p->pos = p->tok.start;
}

/* Whether t is keyword kw (spelled as in keywords[]). */
static int is_kw(const struct token *t, const char *kw)
{
	return t->type == T_KEYWORD && strcmp(keywords[t->kw], kw) == 0;
}

/* Scan, and take the token if it is keyword kw; otherwise put it back. */
static int accept_kw(struct parser *p, const char *kw)
{
	if (is_kw(scan(p), kw))
		return 1;
	unscan(p);
	return 0;
}

/* The next token must be keyword kw: "found X, expected KW" otherwise. */
static void expect_kw(struct parser *p, const char *kw)
{
	if (!is_kw(scan(p), kw))
		fail_expected(p, &p->tok, kw);
}

/* The next token must be of type: "found X, expected <what>" otherwise. */
static void expect(struct parser *p, enum tok type, const char *what)
{
	if (scan(p)->type != type)
		fail_expected(p, &p->tok, what);
}

/* ------------------------------------------------------------------ */
/* Literals                                                           */

/* The text of a quoted token unescaped into the arena. */
static const char *unquote(struct parser *p, const struct token *t, size_t *len)
{
	char *s = alloc(p, t->litlen + 1), *o = s;
	for (size_t i = t->lit; i < t->lit + t->litlen; i++) {
		char c = p->q[i];
		if (c == '\\') {
			c = p->q[++i];
			if (c == 'n')
				c = '\n';
		}
		*o++ = c;
	}
	*o = '\0';
	*len = (size_t)(o - s);
	return s;
}

/* An identifier token as a struct iql_ident, its text copied to the arena. */
static struct iql_ident ident_of(struct parser *p, const struct token *t)
{
	struct iql_ident id = {0};
	if (t->type == T_QIDENT) {
		id.s = unquote(p, t, &id.len);
		id.quoted = 1;
	} else {
		char *s = alloc(p, t->litlen + 1);
		memcpy(s, p->q + t->lit, t->litlen);
		id.s = s;
		id.len = t->litlen;
	}
	return id;
}

/* An identifier, quoted or not: "found X, expected identifier" otherwise. */
static struct iql_ident parse_ident(struct parser *p)
{
	struct token *t = scan(p);
	if (t->type != T_IDENT && t->type != T_QIDENT)
		fail_expected(p, t, "identifier");
	return ident_of(p, t);
}

/* Digits into an int64, with sign; 0 on overflow (then *ok is 0). */
static int64_t parse_int(const char *s, size_t n, int neg, int *ok)
{
	uint64_t v = 0, lim = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
	*ok = 1;
	for (size_t i = 0; i < n; i++) {
		unsigned d = (unsigned)(s[i] - '0');
		if (v > (lim - d) / 10) {
			*ok = 0;
			return 0;
		}
		v = v * 10 + d;
	}
	return neg ? (int64_t)(0 - v) : (int64_t)v;
}

/* A duration token's text in nanoseconds (segments of digits and a unit:
 * ns, u or µ, ms, s, m, h, d, w); 0 with *ok 0 when it is not one. */
static int64_t parse_duration(const char *s, size_t n, int *ok)
{
	int64_t d = 0;
	size_t i = 0;
	*ok = 0;
	while (i < n) {
		size_t start = i;
		int64_t unit, v;
		int vok;
		while (i < n && is_digit((unsigned char)s[i]))
			i++;
		if (i == start || i >= n)
			return 0;
		v = parse_int(s + start, i - start, 0, &vok);
		if (!vok)
			return 0;
		if (s[i] == 'n' && i + 1 < n && s[i + 1] == 's') {
			unit = 1, i += 2;
		} else if (s[i] == 'u') {
			unit = 1000, i++;
		} else if ((unsigned char)s[i] == 0xC2 && i + 1 < n && (unsigned char)s[i + 1] == 0xB5) {
			unit = 1000, i += 2;
		} else if (s[i] == 'm' && i + 1 < n && s[i + 1] == 's') {
			unit = 1000000, i += 2;
		} else {
			switch (s[i]) {
			case 's': unit = 1000000000LL; break;
			case 'm': unit = 60 * 1000000000LL; break;
			case 'h': unit = 3600 * 1000000000LL; break;
			case 'd': unit = 86400 * 1000000000LL; break;
			case 'w': unit = 7 * 86400 * 1000000000LL; break;
			default: return 0;
			}
			i++;
		}
		if (v > (INT64_MAX - d) / unit)
			return 0; /* InfluxDB wraps; refused here */
		d += v * unit;
	}
	*ok = 1;
	return d;
}

/* s[0..n) as a decimal number into *v; 0 when not all digits. */
static int digits(const char *s, size_t n, int *v)
{
	*v = 0;
	for (size_t i = 0; i < n; i++) {
		if (!is_digit((unsigned char)s[i]))
			return 0;
		*v = *v * 10 + (s[i] - '0');
	}
	return 1;
}

/* Days since 1970-01-01 of a proleptic Gregorian date. */
static int64_t days_from_civil(int64_t y, int m, int d)
{
	y -= m <= 2;
	int64_t era = (y >= 0 ? y : y - 399) / 400;
	int64_t yoe = y - era * 400;
	int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + doe - 719468;
}

/* Whether s reads as a time InfluxDB takes in a time condition:
 * 2006-01-02T15:04:05[.999999999](Z|+07:00), 2006-01-02 15:04:05[.999999999]
 * or 2006-01-02; the time into *ns. */
static int parse_time(const char *s, size_t n, int64_t *ns)
{
	int y, mo, d, h = 0, mi = 0, sec = 0, tz = 0;
	int64_t frac = 0;
	static const int mdays[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
	if (n < 10 || s[4] != '-' || s[7] != '-' || !digits(s, 4, &y) || !digits(s + 5, 2, &mo) ||
	    !digits(s + 8, 2, &d))
		return 0;
	if (mo < 1 || mo > 12 || d < 1 || d > mdays[mo - 1] ||
	    (mo == 2 && d == 29 && !(y % 4 == 0 && (y % 100 != 0 || y % 400 == 0))))
		return 0;
	if (n > 10) {
		size_t i = 19;
		int rfc = s[10] == 'T';
		if (n < 19 || (s[10] != 'T' && s[10] != ' ') || s[13] != ':' || s[16] != ':' ||
		    !digits(s + 11, 2, &h) || !digits(s + 14, 2, &mi) || !digits(s + 17, 2, &sec) ||
		    h > 23 || mi > 59 || sec > 59)
			return 0;
		if (i < n && s[i] == '.') {
			int k = 0;
			for (i++; i < n && is_digit((unsigned char)s[i]); i++, k++)
				if (k < 9)
					frac = frac * 10 + (s[i] - '0');
			if (k == 0 || k > 9)
				return 0;
			for (; k < 9; k++)
				frac *= 10;
		}
		if (rfc) {
			int th, tm;
			if (i + 1 == n && s[i] == 'Z') {
				tz = 0;
			} else if (i + 6 == n && (s[i] == '+' || s[i] == '-') && s[i + 3] == ':' &&
			           digits(s + i + 1, 2, &th) && digits(s + i + 4, 2, &tm) && th < 24 && tm < 60) {
				tz = (th * 60 + tm) * (s[i] == '-' ? -1 : 1);
			} else {
				return 0;
			}
		} else if (i != n) {
			return 0;
		}
	}
	int64_t secs = days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + sec - tz * 60;
	if (secs < INT64_MIN / 1000000000 + 1 || secs > INT64_MAX / 1000000000 - 1)
		return 0;
	*ns = secs * 1000000000 + frac;
	return 1;
}

/* ------------------------------------------------------------------ */
/* Nodes                                                              */

/* A node as the parser allocates it: the public node, then the height of
 * its subtree (what IQL_DEPTH_MAX bounds), which only the parser reads. */
struct xnode {
	struct iql_expr e;
	int height;
};

/* The height of e's subtree (0 for none). */
static int height(const struct iql_expr *e)
{
	return e ? ((const struct xnode *)e)->height : 0;
}

/* A new leaf of the given kind. */
static struct iql_expr *node(struct parser *p, enum iql_expr_kind kind)
{
	struct xnode *x = alloc(p, sizeof *x);
	x->e.kind = kind;
	x->height = 1;
	return &x->e;
}

/* Note that e has a child c: e is one higher; refused past the bound. */
static void child(struct parser *p, struct iql_expr *e, const struct iql_expr *c)
{
	struct xnode *x = (struct xnode *)e;
	if (height(c) + 1 > x->height)
		x->height = height(c) + 1;
	if (x->height > IQL_DEPTH_MAX)
		fail(p, IQL_EDEPTH, "error parsing query: expressions nested deeper than %d levels",
		     IQL_DEPTH_MAX);
}

/* l op r. */
static struct iql_expr *binary(struct parser *p, enum iql_op op, struct iql_expr *l, struct iql_expr *r)
{
	struct iql_expr *e = node(p, IQL_E_BINARY);
	e->op = op;
	e->lhs = l;
	e->rhs = r;
	child(p, e, l);
	child(p, e, r);
	return e;
}

/* The function a call names (any case), or IQL_FN_OTHER. */
static enum iql_fn fn_of(const struct iql_ident *name)
{
	static const struct {
		const char *name;
		enum iql_fn fn;
	} fns[] = {
		{"mean", IQL_FN_MEAN}, {"min", IQL_FN_MIN}, {"max", IQL_FN_MAX}, {"sum", IQL_FN_SUM},
		{"count", IQL_FN_COUNT}, {"first", IQL_FN_FIRST}, {"last", IQL_FN_LAST},
		{"spread", IQL_FN_SPREAD}, {"stddev", IQL_FN_STDDEV}, {"percentile", IQL_FN_PERCENTILE},
		{"now", IQL_FN_NOW}, {"time", IQL_FN_TIME},
	};
	for (size_t k = 0; k < sizeof fns / sizeof fns[0]; k++)
		if (strlen(fns[k].name) == name->len && strncasecmp(fns[k].name, name->s, name->len) == 0)
			return fns[k].fn;
	return IQL_FN_OTHER;
}

/* ------------------------------------------------------------------ */
/* Expressions                                                        */

static struct iql_expr *parse_expr(struct parser *p, int depth);

#define EXPECT_OPERAND "identifier, string, number, bool"

/* A /regex/ from here, or NULL (nothing read) when the next token does not
 * start with '/'.  Inside, \/ is a '/'; any other \x is kept as it is. */
static const char *scan_regex(struct parser *p, size_t *len)
{
	size_t open, i;
	char *s, *o;
	while (p->pos < p->len && strchr(" \t\r\n", p->q[p->pos]))
		p->pos++;
	if (at(p, p->pos) != '/')
		return NULL;
	open = p->pos;
	for (i = open + 1;; i++) {
		int c = at(p, i);
		if (c < 0 || c == '\n')
			fail_at(p, open, -1, "bad regex: ");
		if (c == '/')
			break;
		if (c == '\\')
			i++;
	}
	s = o = alloc(p, i - open);
	for (size_t k = open + 1; k < i; k++) {
		if (p->q[k] == '\\' && p->q[k + 1] == '/')
			k++;
		else if (p->q[k] == '\\')
			*o++ = p->q[k++];
		*o++ = p->q[k];
	}
	*o = '\0';
	*len = (size_t)(o - s);
	p->tok.start = open; /* so that an unscan goes back before it */
	p->pos = i + 1;
	return s;
}

/* The common ways Go's regexp package refuses a pattern, with its words
 * (InfluxDB compiles regexes while parsing): an unclosed ( or [, a ) not
 * opened, a repetition with nothing to repeat. */
static void check_regex(struct parser *p, size_t open, const char *re, size_t n)
{
	int depth = 0;
	char msg[160];
	const char *why = NULL, *from = re;
	for (size_t i = 0; i < n && !why; i++) {
		char c = re[i];
		if (c == '\\') {
			int e = i + 1 < n ? (unsigned char)re[i + 1] : -1;
			if (e >= 0 && ((e >= 'a' && e <= 'z') || (e >= 'A' && e <= 'Z') || e == '8' || e == '9') &&
			    !strchr("aftnrvdDsSwWbBAzpPQEx", e)) {
				snprintf(msg, sizeof msg, "error parsing regexp: invalid escape sequence: `\\%c`", e);
				fail_at(p, open, -1, msg);
			}
			i++;
		} else if (c == '(' && i + 2 < n && re[i + 1] == '?' && !strchr("imsU-:P", re[i + 2])) {
			snprintf(msg, sizeof msg, "error parsing regexp: invalid or unsupported Perl syntax: `(?%c`",
			         re[i + 2]);
			fail_at(p, open, -1, msg);
		} else if (c == '[') {
			size_t k = i + 1;
			if (k < n && re[k] == '^')
				k++;
			if (k < n && re[k] == ']')
				k++;
			while (k < n && re[k] != ']')
				k += re[k] == '\\' ? 2 : 1;
			if (k >= n) {
				why = "missing closing ]";
				from = re + i;
			}
			i = k;
		} else if (c == '(') {
			depth++;
		} else if (c == ')') {
			if (--depth < 0)
				why = "unexpected )";
		} else if ((c == '*' || c == '+' || c == '?') &&
		           (i == 0 || re[i - 1] == '|' || (re[i - 1] == '(' && c != '?'))) {
			why = "missing argument to repetition operator";
			snprintf(msg, sizeof msg, "error parsing regexp: %s: `%c`", why, c);
			fail_at(p, open, -1, msg);
		}
	}
	if (!why && depth > 0)
		why = "missing closing )";
	if (why) {
		snprintf(msg, sizeof msg, "error parsing regexp: %s: `%.*s`", why,
		         (int)(n - (size_t)(from - re) > 100 ? 100 : n - (size_t)(from - re)), from);
		fail_at(p, open, -1, msg);
	}
}

/* A regex when the next character is '/' (a field or a call's argument may
 * be one), else NULL with nothing read. */
static struct iql_expr *regex_operand(struct parser *p)
{
	size_t len;
	const char *re = scan_regex(p, &len);
	struct iql_expr *e;
	if (!re)
		return NULL;
	check_regex(p, p->tok.start, re, len);
	e = node(p, IQL_E_REGEX);
	e->str = re;
	e->len = len;
	return e;
}

/* A regex where the grammar requires one ("found X, expected regex"). */
static struct iql_expr *parse_regex(struct parser *p)
{
	size_t len;
	const char *re = scan_regex(p, &len);
	if (!re) {
		p->list_start = 1; /* InfluxDB has read the end of input twice here */
		fail_expected(p, scan(p), "regex");
	}
	check_regex(p, p->tok.start, re, len);
	struct iql_expr *e = node(p, IQL_E_REGEX);
	e->str = re;
	e->len = len;
	return e;
}

/* A number, integer or duration token as a literal, negated when neg. */
static struct iql_expr *number(struct parser *p, const struct token *t, int neg)
{
	struct iql_expr *e;
	int ok;
	if (t->type == T_DURATION) {
		e = node(p, IQL_E_DURATION);
		e->i = parse_duration(p->q + t->start, t->end - t->start, &ok);
		if (!ok)
			fail(p, IQL_ESYNTAX, "error parsing query: invalid duration");
		if (neg)
			e->i = -e->i;
	} else if (t->type == T_INTEGER) {
		e = node(p, IQL_E_INTEGER);
		e->i = parse_int(p->q + t->start, t->end - t->start, neg, &ok);
		if (!ok)
			fail_at(p, t->start, 0, "unable to parse integer");
	} else {
		char buf[64];
		size_t n = t->end - t->start;
		e = node(p, IQL_E_FLOAT);
		if (n >= sizeof buf) {
			char *big = alloc(p, n + 1);
			memcpy(big, p->q + t->start, n);
			e->f = strtod(big, NULL);
		} else {
			memcpy(buf, p->q + t->start, n);
			buf[n] = '\0';
			e->f = strtod(buf, NULL);
		}
		if (!isfinite(e->f))
			fail_at(p, t->start, 0, "unable to parse number");
		if (neg)
			e->f = -e->f;
	}
	return e;
}

/* name( args ) after name and '(' were read.  As in InfluxDB, "f()" has no
 * arguments only when ')' follows '(' at once. */
static struct iql_expr *parse_call(struct parser *p, const struct token *name, int depth)
{
	struct iql_expr *e = node(p, IQL_E_CALL);
	e->name = ident_of(p, name);
	e->fn = fn_of(&e->name);
	skip_space(p);
	if (at(p, p->pos) == ')') {
		p->pos++;
		return e;
	}
	for (;;) {
		struct iql_expr *arg;
		p->list_start = 1;
		if (!(arg = regex_operand(p))) {
			p->list_start = 1;
			arg = parse_expr(p, depth + 1);
		}
		e->args = grow(p, e->args, e->nargs, sizeof *e->args);
		e->args[e->nargs++] = arg;
		child(p, e, arg);
		if (scan(p)->type != T_COMMA) {
			unscan(p);
			break;
		}
	}
	expect(p, T_RPAREN, ")");
	return e;
}

/* An operand: a literal, a reference, a call, *, ( expr ) or -x. */
static struct iql_expr *parse_unary(struct parser *p, int depth)
{
	struct token t;
	struct iql_expr *e;
	if (depth > IQL_DEPTH_MAX)
		fail(p, IQL_EDEPTH, "error parsing query: expressions nested deeper than %d levels",
		     IQL_DEPTH_MAX);
	t = *scan(p);
	switch (t.type) {
	case T_LPAREN:
		e = node(p, IQL_E_PAREN);
		e->lhs = parse_expr(p, depth + 1);
		child(p, e, e->lhs);
		expect(p, T_RPAREN, ")");
		return e;
	case T_IDENT:
	case T_QIDENT:
		if (at(p, p->pos) == '(') {
			p->pos++;
			return parse_call(p, &t, depth);
		}
		e = node(p, IQL_E_VARREF);
		e->name = ident_of(p, &t);
		return e;
	case T_STRING:
		e = node(p, IQL_E_STRING);
		e->str = unquote(p, &t, &e->len);
		e->is_time = parse_time(e->str, e->len, &e->i);
		return e;
	case T_INTEGER:
	case T_FLOAT:
	case T_DURATION:
		return number(p, &t, 0);
	case T_OP:
		if (t.op == IQL_OP_MUL)
			return node(p, IQL_E_WILDCARD);
		if (t.op == IQL_OP_SUB || t.op == IQL_OP_ADD)
			break;
		fail_expected(p, &t, EXPECT_OPERAND);
	case T_KEYWORD:
		if (is_kw(&t, "TRUE") || is_kw(&t, "FALSE")) {
			e = node(p, IQL_E_BOOL);
			e->i = is_kw(&t, "TRUE");
			return e;
		}
		fail_expected(p, &t, EXPECT_OPERAND);
	default:
		fail_expected(p, &t, EXPECT_OPERAND);
	}
	/* a sign: folded into a number; -x is -1 * x, as InfluxDB reads it */
	int neg = t.op == IQL_OP_SUB;
	struct token u = *scan(p);
	if (u.type == T_INTEGER || u.type == T_FLOAT || u.type == T_DURATION)
		return number(p, &u, neg);
	if (u.type != T_IDENT && u.type != T_QIDENT && u.type != T_LPAREN)
		fail_expected(p, &u, "identifier, number, duration, (");
	unscan(p);
	e = parse_unary(p, depth + 1);
	if (!neg)
		return e;
	struct iql_expr *m1 = node(p, IQL_E_INTEGER);
	m1->i = -1;
	e = binary(p, IQL_OP_MUL, m1, e);
	e->unary_minus = 1;
	return e;
}

/* Operators binding at least as tight as minprec, after lhs. */
static struct iql_expr *climb(struct parser *p, struct iql_expr *lhs, int minprec, int depth)
{
	for (;;) {
		struct token *t = scan(p);
		struct iql_expr *rhs;
		int prec;
		if (t->type == T_KEYWORD && (is_kw(t, "AND") || is_kw(t, "OR"))) {
			t->op = is_kw(t, "AND") ? IQL_OP_AND : IQL_OP_OR;
			t->type = T_OP;
		}
		if (t->type != T_OP || (prec = precedence(t->op)) < minprec) {
			unscan(p);
			return lhs;
		}
		enum iql_op op = t->op;
		if (op == IQL_OP_EQREGEX || op == IQL_OP_NEQREGEX)
			rhs = parse_regex(p);
		else
			rhs = parse_unary(p, depth + 1);
		rhs = climb(p, rhs, prec + 1, depth + 1);
		lhs = binary(p, op, lhs, rhs);
	}
}

/* An expression: an operand, then operators by precedence. */
static struct iql_expr *parse_expr(struct parser *p, int depth)
{
	return climb(p, parse_unary(p, depth), 1, depth);
}

/* ------------------------------------------------------------------ */
/* Statements                                                         */

static struct iql_select *parse_select(struct parser *p, int depth);

/* LIMIT n and the like, when keyword kw is next: n into *v. */
static void parse_count(struct parser *p, const char *kw, int64_t *v)
{
	int ok;
	if (!accept_kw(p, kw))
		return;
	expect(p, T_INTEGER, "integer");
	*v = parse_int(p->q + p->tok.start, p->tok.end - p->tok.start, 0, &ok);
	if (!ok)
		*v = INT64_MAX; /* as InfluxDB: the parse error is ignored, the value saturates */
}

/* [db.][rp.]name: identifiers joined by '.' with nothing between (db..name
 * leaves rp empty); more than 3 are refused once read, as InfluxDB does. */
static void parse_segments(struct parser *p, struct iql_source *s)
{
	struct iql_ident *seg = NULL;
	size_t n = 0;
	seg = grow(p, seg, n, sizeof *seg);
	seg[n++] = parse_ident(p);
	while (at(p, p->pos) == '.') {
		p->pos++;
		seg = grow(p, seg, n, sizeof *seg);
		if (at(p, p->pos) == '.') {
			memset(&seg[n++], 0, sizeof *seg);
			continue;
		}
		p->list_start = 1;
		seg[n++] = parse_ident(p);
	}
	if (n > 3) {
		char msg[IQL_ERR_MAX];
		size_t m = (size_t)snprintf(msg, sizeof msg, "too many segments in ");
		for (size_t k = 0; k < n && m < sizeof msg; k++) {
			const char *t = seg[k].s ? seg[k].s : "";
			if (k + 1 == n || !t[0]) /* InfluxDB quotes every non-empty part but the last */
				m += (size_t)snprintf(msg + m, sizeof msg - m, "%s%s", t, k + 1 < n ? "." : "");
			else
				m += (size_t)snprintf(msg + m, sizeof msg - m, "\"%s\".", t);
		}
		fail(p, IQL_ESYNTAX, "error parsing query: %s at line 1, char 1", msg);
	}
	s->name = seg[n - 1];
	if (n >= 2)
		s->rp = seg[n - 2];
	if (n == 3)
		s->db = seg[0];
}

/* FROM's list: measurements, /regexes/ and (sub-queries, when allowed). */
static struct iql_source *parse_sources(struct parser *p, size_t *n, int subqueries, int depth)
{
	struct iql_source *v = NULL;
	*n = 0;
	for (;;) {
		struct iql_source *s;
		size_t len;
		const char *re;
		v = grow(p, v, *n, sizeof *v);
		s = &v[(*n)++];
		p->list_start = *n > 1;
		if ((re = scan_regex(p, &len))) {
			check_regex(p, p->tok.start, re, len);
			s->kind = IQL_SRC_REGEX;
			s->regex = re;
			s->regex_len = len;
		} else if (subqueries && scan(p)->type == T_LPAREN) {
			expect_kw(p, "SELECT");
			s->kind = IQL_SRC_SUBQUERY;
			s->subquery = parse_select(p, depth + 1);
			expect(p, T_RPAREN, ")");
		} else {
			if (subqueries)
				unscan(p);
			p->list_start = *n > 1;
			parse_segments(p, s);
		}
		if (scan(p)->type != T_COMMA) {
			unscan(p);
			return v;
		}
	}
}

/* A statement InfluxDB would refuse when compiling it (IQL_EINVALID). */
static void fail_invalid(struct parser *p, const char *msg) __attribute__((noreturn));
static void fail_invalid(struct parser *p, const char *msg)
{
	fail(p, IQL_EINVALID, "%s", msg);
}

/* GROUP BY's dimensions (checked later, by check_dimensions). */
static void parse_dimensions(struct parser *p, struct iql_select *s, int depth)
{
	for (;;) {
		struct iql_expr *d;
		p->list_start = 1;
		d = parse_expr(p, depth + 1);
		s->dims = grow(p, s->dims, s->ndims, sizeof *s->dims);
		s->dims[s->ndims++] = d;
		if (scan(p)->type != T_COMMA) {
			unscan(p);
			break;
		}
	}
}

/* The dimensions checked as InfluxDB checks them when it compiles the
 * statement; the time() one into has_group_time, group_interval and
 * group_offset. */
static void check_dimensions(struct parser *p, struct iql_select *s)
{
	for (size_t k = 0; k < s->ndims; k++) {
		const struct iql_expr *d = s->dims[k];
		if (d->kind == IQL_E_VARREF || d->kind == IQL_E_WILDCARD || d->kind == IQL_E_REGEX)
			continue;
		if (d->kind != IQL_E_CALL)
			fail_invalid(p, "only time and tag dimensions allowed");
		if (d->fn != IQL_FN_TIME)
			fail_invalid(p, "only time() calls allowed in dimensions");
		if (s->has_group_time)
			fail_invalid(p, "multiple time dimensions not allowed");
		if (d->nargs != 1 && d->nargs != 2)
			fail_invalid(p, "time dimension expected 1 or 2 arguments");
		if (d->args[0]->kind != IQL_E_DURATION)
			fail_invalid(p, "time dimension must have duration argument");
		if (d->args[0]->i <= 0)
			fail_invalid(p, "time dimension must have positive duration");
		if (d->nargs == 2 && d->args[1]->kind != IQL_E_DURATION)
			fail_invalid(p, "time dimension offset must be duration or now()");
		s->has_group_time = 1;
		s->group_interval = d->args[0]->i;
		s->group_offset = d->nargs == 2 ? d->args[1]->i : 0;
	}
}

/* fill(...), when next: parsed as an expression, as InfluxDB does. */
static void parse_fill(struct parser *p, struct iql_select *s, int depth)
{
	struct token *t = scan(p);
	struct iql_expr *e, *a;
	int is_fill = t->type == T_IDENT && t->end - t->start == 4 &&
	              strncasecmp(p->q + t->start, "fill", 4) == 0;
	unscan(p);
	if (!is_fill)
		return;
	e = parse_expr(p, depth + 1);
	if (e->kind != IQL_E_CALL)
		fail(p, IQL_ESYNTAX, "error parsing query: fill must be a function call");
	if (e->nargs != 1)
		fail(p, IQL_ESYNTAX,
		     "error parsing query: fill requires an argument, e.g.: 0, null, none, previous, linear");
	a = e->args[0];
	s->has_fill = 1;
	if (a->kind == IQL_E_VARREF && strcmp(a->name.s, "null") == 0) {
		s->fill = IQL_FILL_NULL;
	} else if (a->kind == IQL_E_VARREF && strcmp(a->name.s, "none") == 0) {
		s->fill = IQL_FILL_NONE;
	} else if (a->kind == IQL_E_VARREF && strcmp(a->name.s, "previous") == 0) {
		s->fill = IQL_FILL_PREVIOUS;
	} else if (a->kind == IQL_E_VARREF && strcmp(a->name.s, "linear") == 0) {
		s->fill = IQL_FILL_LINEAR;
	} else if (a->kind == IQL_E_INTEGER || a->kind == IQL_E_FLOAT) {
		s->fill = IQL_FILL_NUMBER;
		s->fill_is_int = a->kind == IQL_E_INTEGER;
		s->fill_value = s->fill_is_int ? (double)a->i : a->f;
		s->fill_int = a->i;
	} else {
		fail(p, IQL_ESYNTAX, "error parsing query: expected number argument in fill()");
	}
}

/* One ORDER BY field: a name, then ASC or DESC; returns whether the name
 * is not time. */
static int parse_sort_field(struct parser *p, struct iql_select *s)
{
	struct iql_ident f = parse_ident(p);
	if (accept_kw(p, "DESC"))
		s->order_desc = 1;
	else if (accept_kw(p, "ASC"))
		s->order_desc = 0;
	return strcmp(f.s, "time") != 0;
}

/* ORDER BY: time [ASC|DESC] (or ASC / DESC alone); other fields are
 * refused as InfluxDB refuses them. */
static void parse_order(struct parser *p, struct iql_select *s)
{
	struct token *t;
	int other = 0, n = 1;
	if (!accept_kw(p, "ORDER"))
		return;
	expect_kw(p, "BY");
	s->has_order = 1;
	t = scan(p);
	if (is_kw(t, "ASC") || is_kw(t, "DESC")) {
		s->order_desc = is_kw(t, "DESC");
	} else if (t->type == T_IDENT || t->type == T_QIDENT) {
		unscan(p);
		other = parse_sort_field(p, s);
	} else {
		fail_expected(p, t, "identifier, ASC, DESC");
	}
	for (; scan(p)->type == T_COMMA; n++)
		other |= parse_sort_field(p, s);
	unscan(p);
	if (n > 1 || other)
		fail(p, IQL_ESYNTAX, "error parsing query: only ORDER BY time supported at this time");
}

/* The argument counts InfluxDB wants of the functions the subset knows. */
static void check_calls(struct parser *p, const struct iql_expr *e)
{
	char msg[128];
	int want;
	if (!e)
		return;
	if (e->kind == IQL_E_BINARY || e->kind == IQL_E_PAREN) {
		check_calls(p, e->lhs);
		check_calls(p, e->rhs);
		return;
	}
	if (e->kind != IQL_E_CALL || e->fn == IQL_FN_OTHER || e->fn == IQL_FN_TIME)
		return;
	want = e->fn == IQL_FN_PERCENTILE ? 2 : e->fn == IQL_FN_NOW ? 0 : 1;
	if ((int)e->nargs != want) {
		snprintf(msg, sizeof msg, "invalid number of arguments for %.*s, expected %d, got %zu",
		         (int)e->name.len, e->name.s, want, e->nargs);
		fail_invalid(p, msg);
	}
	for (size_t k = 0; k < e->nargs; k++)
		check_calls(p, e->args[k]);
}

/* The last operator InfluxDB's walk over a field finds that makes a
 * boolean (a comparison, AND, OR), not looking below one it found; -1. */
static int boolean_op(const struct iql_expr *e)
{
	int found = -1, k;
	switch (e->kind) {
	case IQL_E_BINARY:
		if (e->op <= IQL_OP_GTE)
			return (int)e->op;
		if ((k = boolean_op(e->lhs)) >= 0)
			found = k;
		if ((k = boolean_op(e->rhs)) >= 0)
			found = k;
		return found;
	case IQL_E_PAREN:
		return boolean_op(e->lhs);
	case IQL_E_CALL:
		for (size_t i = 0; i < e->nargs; i++)
			if ((k = boolean_op(e->args[i])) >= 0)
				found = k;
		return found;
	default:
		return -1;
	}
}

/* A field may not make a boolean: InfluxDB's words, at the field's first
 * token. */
static void check_field(struct parser *p, const struct iql_expr *e, const struct token *first)
{
	int op = boolean_op(e), line;
	long ch;
	if (op < 0)
		return;
	position(p, first->pos, first->pos_adj, &line, &ch);
	fail(p, IQL_ESYNTAX,
	     "error parsing query: invalid operator %s in SELECT clause at line %d, char %ld; "
	     "operator is intended for WHERE clause", op_text[op], line, ch);
}

/* SELECT fields FROM sources [WHERE] [GROUP BY] [fill()] [ORDER BY]
 * [LIMIT] [OFFSET] [SLIMIT] [SOFFSET], after SELECT was read. */
static struct iql_select *parse_select(struct parser *p, int depth)
{
	struct iql_select *s = alloc(p, sizeof *s);
	if (depth > IQL_DEPTH_MAX)
		fail(p, IQL_EDEPTH, "error parsing query: sub-queries nested deeper than %d levels",
		     IQL_DEPTH_MAX);
	for (;;) {
		struct iql_field *f;
		s->fields = grow(p, s->fields, s->nfields, sizeof *s->fields);
		f = &s->fields[s->nfields++];
		p->list_start = 1;
		if (!(f->expr = regex_operand(p))) {
			struct token first = *scan(p);
			unscan(p);
			p->list_start = 1;
			f->expr = parse_expr(p, depth + 1);
			check_field(p, f->expr, &first);
		}
		if (accept_kw(p, "AS"))
			f->alias = parse_ident(p);
		if (scan(p)->type != T_COMMA) {
			unscan(p);
			break;
		}
	}
	expect_kw(p, "FROM");
	s->sources = parse_sources(p, &s->nsources, 1, depth);
	if (accept_kw(p, "WHERE"))
		s->where = parse_expr(p, depth + 1);
	if (accept_kw(p, "GROUP")) {
		expect_kw(p, "BY");
		parse_dimensions(p, s, depth);
	}
	parse_fill(p, s, depth);
	parse_order(p, s);
	parse_count(p, "LIMIT", &s->limit);
	parse_count(p, "OFFSET", &s->offset);
	parse_count(p, "SLIMIT", &s->slimit);
	parse_count(p, "SOFFSET", &s->soffset);
	return s;
}

/* What InfluxDB checks when it compiles a SELECT (after the whole q
 * parsed, so that a syntax error anywhere is said first), sub-queries
 * first. */
static void check_select(struct parser *p, struct iql_select *s)
{
	for (size_t k = 0; k < s->nsources; k++)
		if (s->sources[k].kind == IQL_SRC_SUBQUERY)
			check_select(p, s->sources[k].subquery);
	for (size_t k = 0; k < s->nfields; k++)
		check_calls(p, s->fields[k].expr);
	check_dimensions(p, s);
}

/* [ON db] of the SHOWs. */
static void parse_on(struct parser *p, struct iql_show *s)
{
	if (accept_kw(p, "ON"))
		s->database = parse_ident(p);
}

/* [FROM sources] of the SHOWs. */
static void parse_show_from(struct parser *p, struct iql_show *s, int depth)
{
	if (accept_kw(p, "FROM"))
		s->sources = parse_sources(p, &s->nsources, 0, depth);
}

/* [WHERE] [LIMIT] [OFFSET] closing the SHOWs. */
static void parse_show_tail(struct parser *p, struct iql_show *s, int where, int depth)
{
	if (where && accept_kw(p, "WHERE"))
		s->where = parse_expr(p, depth + 1);
	parse_count(p, "LIMIT", &s->limit);
	parse_count(p, "OFFSET", &s->offset);
}

/* WITH KEY (= | != | =~ | !~ | IN) of SHOW TAG VALUES. */
static void parse_with_key(struct parser *p, struct iql_show *s)
{
	struct token *t;
	expect_kw(p, "WITH");
	expect_kw(p, "KEY");
	t = scan(p);
	if (is_kw(t, "IN")) {
		s->key_op = IQL_KEY_IN;
		expect(p, T_LPAREN, "(");
		do {
			s->keys = grow(p, s->keys, s->nkeys, sizeof *s->keys);
			s->keys[s->nkeys++] = parse_ident(p);
		} while (scan(p)->type == T_COMMA);
		unscan(p);
		expect(p, T_RPAREN, ")");
	} else if (t->type == T_OP && (t->op == IQL_OP_EQ || t->op == IQL_OP_NEQ)) {
		s->key_op = t->op == IQL_OP_EQ ? IQL_KEY_EQ : IQL_KEY_NEQ;
		s->keys = alloc(p, sizeof *s->keys);
		s->keys[0] = parse_ident(p);
		s->nkeys = 1;
	} else if (t->type == T_OP && (t->op == IQL_OP_EQREGEX || t->op == IQL_OP_NEQREGEX)) {
		struct iql_expr *re;
		s->key_op = t->op == IQL_OP_EQREGEX ? IQL_KEY_EQREGEX : IQL_KEY_NEQREGEX;
		re = parse_regex(p);
		s->regex = re->str;
		s->regex_len = re->len;
	} else {
		fail_expected(p, t, "IN, =, =~");
	}
}

/* WITH MEASUREMENT (= | =~) (name | /re/) of SHOW MEASUREMENTS: InfluxDB
 * takes either after either operator; a regex makes it IQL_KEY_EQREGEX. */
static void parse_with_measurement(struct parser *p, struct iql_show *s)
{
	struct token *t;
	struct iql_expr *re;
	if (!accept_kw(p, "WITH"))
		return;
	expect_kw(p, "MEASUREMENT");
	t = scan(p);
	if (t->type != T_OP || (t->op != IQL_OP_EQ && t->op != IQL_OP_EQREGEX))
		fail_expected(p, t, "=, =~");
	if ((re = regex_operand(p))) {
		s->key_op = IQL_KEY_EQREGEX;
		s->regex = re->str;
		s->regex_len = re->len;
	} else {
		s->key_op = IQL_KEY_EQ;
		s->keys = alloc(p, sizeof *s->keys);
		s->keys[0] = parse_ident(p);
		s->nkeys = 1;
	}
}

/* SHOW ..., after SHOW was read. */
static void parse_show(struct parser *p, struct iql_stmt *st, int depth)
{
	static const char *const unsupported[] = {
		"CONTINUOUS", "DIAGNOSTICS", "GRANTS", "MEASUREMENT", "QUERIES", "RETENTION",
		"SHARD", "SHARDS", "STATS", "SUBSCRIPTIONS", "USERS",
	};
	struct token *t = scan(p);
	struct iql_show *s = alloc(p, sizeof *s);
	st->show = s;
	if (is_kw(t, "DATABASES")) {
		st->kind = IQL_SHOW_DATABASES;
	} else if (is_kw(t, "MEASUREMENTS")) {
		st->kind = IQL_SHOW_MEASUREMENTS;
		parse_on(p, s);
		parse_with_measurement(p, s);
		parse_show_tail(p, s, 1, depth);
	} else if (is_kw(t, "TAG")) {
		t = scan(p);
		if (is_kw(t, "KEYS")) {
			st->kind = IQL_SHOW_TAG_KEYS;
		} else if (is_kw(t, "VALUES")) {
			st->kind = IQL_SHOW_TAG_VALUES;
		} else if (is_kw(t, "KEY")) {
			fail_expected(p, t, "KEYS, VALUES"); /* TAG KEY CARDINALITY: not in the subset */
		} else {
			fail_expected(p, t, "KEY, KEYS, VALUES");
		}
		parse_on(p, s);
		parse_show_from(p, s, depth);
		if (st->kind == IQL_SHOW_TAG_VALUES)
			parse_with_key(p, s);
		parse_show_tail(p, s, 1, depth);
	} else if (is_kw(t, "FIELD")) {
		t = scan(p);
		if (is_kw(t, "KEY"))
			fail_expected(p, t, "KEYS");
		if (!is_kw(t, "KEYS"))
			fail_expected(p, t, "KEY, KEYS");
		st->kind = IQL_SHOW_FIELD_KEYS;
		parse_on(p, s);
		parse_show_from(p, s, depth);
		parse_show_tail(p, s, 0, depth);
	} else if (is_kw(t, "SERIES")) {
		st->kind = IQL_SHOW_SERIES;
		parse_on(p, s);
		parse_show_from(p, s, depth);
		parse_show_tail(p, s, 1, depth);
	} else {
		for (size_t k = 0; k < sizeof unsupported / sizeof unsupported[0]; k++)
			if (is_kw(t, unsupported[k]))
				fail_expected(p, t, "DATABASES, FIELD, MEASUREMENTS, SERIES, TAG");
		fail_expected(p, t, "CONTINUOUS, DATABASES, DIAGNOSTICS, FIELD, GRANTS, MEASUREMENT, "
		                    "MEASUREMENTS, QUERIES, RETENTION, SERIES, SHARD, SHARDS, STATS, "
		                    "SUBSCRIPTIONS, TAG, USERS");
	}
}

/* One statement. */
static void parse_statement(struct parser *p, struct iql_stmt *st)
{
	static const char *const unsupported[] = {
		"DELETE", "DROP", "EXPLAIN", "GRANT", "REVOKE", "ALTER", "SET", "KILL",
	};
	struct token *t = scan(p);
	if (is_kw(t, "SELECT")) {
		st->kind = IQL_SELECT;
		st->select = parse_select(p, 1);
	} else if (is_kw(t, "SHOW")) {
		parse_show(p, st, 1);
	} else if (is_kw(t, "CREATE")) {
		t = scan(p);
		if (is_kw(t, "DATABASE")) {
			st->kind = IQL_CREATE_DATABASE;
			st->database = parse_ident(p);
		} else if (is_kw(t, "CONTINUOUS") || is_kw(t, "USER") || is_kw(t, "RETENTION") ||
		           is_kw(t, "SUBSCRIPTION")) {
			fail_expected(p, t, "DATABASE");
		} else {
			fail_expected(p, t, "CONTINUOUS, DATABASE, USER, RETENTION, SUBSCRIPTION");
		}
	} else {
		for (size_t k = 0; k < sizeof unsupported / sizeof unsupported[0]; k++)
			if (is_kw(t, unsupported[k]))
				fail_expected(p, t, "SELECT, SHOW, CREATE");
		fail_expected(p, t, "SELECT, DELETE, SHOW, CREATE, DROP, EXPLAIN, GRANT, REVOKE, "
		                    "ALTER, SET, KILL");
	}
}

/* Statements separated by ';' to the end. */
static void parse_all(struct parser *p, struct iql_query *out)
{
	int semi = 1;
	for (;;) {
		struct token *t = scan(p);
		if (t->type == T_EOF)
			return;
		if (t->type == T_SEMI) {
			semi = 1;
			continue;
		}
		if (!semi)
			fail_expected(p, t, ";");
		unscan(p);
		if (out->nstmts >= IQL_STMTS_MAX)
			fail(p, IQL_ETOOBIG, "error parsing query: more than %d statements", IQL_STMTS_MAX);
		out->stmts = grow(p, out->stmts, out->nstmts, sizeof *out->stmts);
		parse_statement(p, &out->stmts[out->nstmts++]);
		semi = 0;
	}
}

int iql_parse(const char *q, size_t len, struct iql_query *out, char *err, size_t errsize)
{
	struct parser p;
	memset(out, 0, sizeof *out);
	memset(&p, 0, sizeof p);
	p.q = q;
	p.len = len;
	p.err = err;
	p.errsize = errsize;
	if (len > IQL_QUERY_MAX) {
		if (err && errsize)
			snprintf(err, errsize, "error parsing query: query longer than %zu bytes",
			         (size_t)IQL_QUERY_MAX);
		return IQL_ETOOBIG;
	}
	if (memchr(q, '\0', len)) {
		int line;
		long ch;
		position(&p, (size_t)((const char *)memchr(q, '\0', len) - q), 0, &line, &ch);
		if (err && errsize)
			snprintf(err, errsize, "error parsing query: illegal NUL byte at line %d, char %ld",
			         line, ch);
		return IQL_ESYNTAX;
	}
	if (setjmp(p.fail)) {
		arena_release(p.arena);
		memset(out, 0, sizeof *out);
		return p.rc;
	}
	parse_all(&p, out);
	for (size_t k = 0; k < out->nstmts; k++)
		if (out->stmts[k].kind == IQL_SELECT)
			check_select(&p, out->stmts[k].select);
	out->mem_ = p.arena;
	return 0;
}

void iql_query_free(struct iql_query *q)
{
	if (!q)
		return;
	arena_release(q->mem_);
	memset(q, 0, sizeof *q);
}

const char *iql_strerror(int code)
{
	switch (code) {
	case IQL_ESYNTAX: return "syntax error";
	case IQL_ETOOBIG: return "query too big";
	case IQL_EDEPTH: return "nested too deep";
	case IQL_ENOMEM: return "out of memory";
	case IQL_EINVALID: return "invalid statement";
	default: return "unknown error";
	}
}

/* ------------------------------------------------------------------ */
/* The printer                                                        */

struct out {
	char *buf;
	size_t size, n;
};

/* Append s[0..n) (truncated to the buffer, counted whole). */
static void out_mem(struct out *o, const char *s, size_t n)
{
	if (o->n < o->size) {
		size_t room = o->size - o->n - 1;
		memcpy(o->buf + o->n, s, n < room ? n : room);
		o->buf[o->n + (n < room ? n : room)] = '\0';
	}
	o->n += n;
}

/* Append a C string. */
static void out_str(struct out *o, const char *s)
{
	out_mem(o, s, strlen(s));
}

/* Append printf text (short: numbers and names). */
static void out_fmt(struct out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void out_fmt(struct out *o, const char *fmt, ...)
{
	char tmp[64];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
	va_end(ap);
	out_mem(o, tmp, (size_t)n < sizeof tmp ? (size_t)n : sizeof tmp - 1);
}

/* Whether id must be quoted to read back: not a plain word, or a keyword. */
static int needs_quotes(const struct iql_ident *id)
{
	if (id->len == 0 || !(is_letter((unsigned char)id->s[0]) || id->s[0] == '_'))
		return 1;
	for (size_t i = 1; i < id->len; i++)
		if (!is_ident_char((unsigned char)id->s[i]))
			return 1;
	return keyword(id->s, id->len) >= 0;
}

/* s between quote characters, with \\, \n and the quote escaped. */
static void out_quoted(struct out *o, const char *s, size_t n, char quote)
{
	out_mem(o, &quote, 1);
	for (size_t i = 0; i < n; i++) {
		if (s[i] == '\\' || s[i] == quote)
			out_mem(o, "\\", 1);
		if (s[i] == '\n')
			out_mem(o, "\\n", 2);
		else
			out_mem(o, s + i, 1);
	}
	out_mem(o, &quote, 1);
}

/* An identifier, quoted when it was or must be. */
static void out_ident(struct out *o, const struct iql_ident *id)
{
	if (id->quoted || needs_quotes(id))
		out_quoted(o, id->s ? id->s : "", id->len, '"');
	else
		out_mem(o, id->s, id->len);
}

/* A regex between slashes: '/' written \/ (a \x pair is kept as it is). */
static void out_regex(struct out *o, const char *s, size_t n)
{
	out_mem(o, "/", 1);
	for (size_t i = 0; i < n; i++) {
		if (s[i] == '/') {
			out_mem(o, "\\/", 2);
		} else if (s[i] == '\\' && i + 1 < n) {
			out_mem(o, s + i, 2);
			i++;
		} else {
			out_mem(o, s + i, 1);
		}
	}
	out_mem(o, "/", 1);
}

/* A float as InfluxQL reads it back exactly: digits with a '.', never an
 * exponent (the lexer has none), in the fewest digits that round-trip. */
static void out_float(struct out *o, double f)
{
	char g[40], digs[40], res[400];
	int prec, exp, nd = 0;
	size_t r = 0;
	for (prec = 1; prec <= 17; prec++) {
		snprintf(g, sizeof g, "%.*e", prec - 1, f);
		if (strtod(g, NULL) == f)
			break;
	}
	/* g is [-]d.ddde[+-]x: its digits and exponent */
	const char *s = g;
	if (*s == '-') {
		res[r++] = '-';
		s++;
	}
	for (; *s && *s != 'e'; s++)
		if (is_digit((unsigned char)*s))
			digs[nd++] = *s;
	exp = atoi(s + 1);
	while (nd > 1 && digs[nd - 1] == '0')
		nd--;
	if (exp < 0) {
		res[r++] = '0';
		res[r++] = '.';
		for (int k = -1; k > exp; k--)
			res[r++] = '0';
		memcpy(res + r, digs, (size_t)nd);
		r += (size_t)nd;
	} else {
		for (int k = 0; k <= exp || k < nd; k++) {
			if (k == exp + 1)
				res[r++] = '.';
			res[r++] = k < nd ? digs[k] : '0';
		}
		if (nd <= exp + 1) {
			res[r++] = '.';
			res[r++] = '0';
		}
	}
	out_mem(o, res, r);
}

/* A duration in its largest exact unit (0s for zero). */
static void out_duration(struct out *o, int64_t d)
{
	static const struct {
		int64_t ns;
		const char *unit;
	} units[] = {
		{7 * 86400 * 1000000000LL, "w"}, {86400 * 1000000000LL, "d"}, {3600 * 1000000000LL, "h"},
		{60 * 1000000000LL, "m"}, {1000000000LL, "s"}, {1000000LL, "ms"}, {1000LL, "u"}, {1, "ns"},
	};
	if (d == 0) {
		out_str(o, "0s");
		return;
	}
	for (size_t k = 0;; k++)
		if (d % units[k].ns == 0) {
			out_fmt(o, "%lld%s", (long long)(d / units[k].ns), units[k].unit);
			return;
		}
}

static void format_select(struct out *o, const struct iql_select *s);

/* An expression as canonical text: parentheses only where written. */
static void format_expr(struct out *o, const struct iql_expr *e)
{
	switch (e->kind) {
	case IQL_E_INTEGER: out_fmt(o, "%lld", (long long)e->i); break;
	case IQL_E_FLOAT: out_float(o, e->f); break;
	case IQL_E_STRING: out_quoted(o, e->str, e->len, '\''); break;
	case IQL_E_REGEX: out_regex(o, e->str, e->len); break;
	case IQL_E_DURATION: out_duration(o, e->i); break;
	case IQL_E_BOOL: out_str(o, e->i ? "true" : "false"); break;
	case IQL_E_VARREF: out_ident(o, &e->name); break;
	case IQL_E_WILDCARD: out_str(o, "*"); break;
	case IQL_E_CALL:
		out_ident(o, &e->name);
		out_str(o, "(");
		for (size_t k = 0; k < e->nargs; k++) {
			if (k)
				out_str(o, ", ");
			format_expr(o, e->args[k]);
		}
		out_str(o, ")");
		break;
	case IQL_E_PAREN:
		out_str(o, "(");
		format_expr(o, e->lhs);
		out_str(o, ")");
		break;
	case IQL_E_BINARY:
		if (e->unary_minus) {
			out_str(o, "-");
			format_expr(o, e->rhs);
			break;
		}
		format_expr(o, e->lhs);
		out_fmt(o, " %s ", op_text[e->op]);
		format_expr(o, e->rhs);
		break;
	}
}

/* FROM's list. */
static void format_sources(struct out *o, const struct iql_source *v, size_t n)
{
	for (size_t k = 0; k < n; k++) {
		const struct iql_source *s = &v[k];
		if (k)
			out_str(o, ", ");
		if (s->kind == IQL_SRC_SUBQUERY) {
			out_str(o, "(");
			format_select(o, s->subquery);
			out_str(o, ")");
			continue;
		}
		if (s->kind == IQL_SRC_REGEX) {
			out_regex(o, s->regex, s->regex_len);
			continue;
		}
		if (s->db.s) {
			out_ident(o, &s->db);
			out_str(o, ".");
			if (s->rp.s)
				out_ident(o, &s->rp);
			out_str(o, ".");
		} else if (s->rp.s) {
			out_ident(o, &s->rp);
			out_str(o, ".");
		}
		out_ident(o, &s->name);
	}
}

/* LIMIT and OFFSET, when given. */
static void format_counts(struct out *o, int64_t limit, int64_t offset)
{
	if (limit)
		out_fmt(o, " LIMIT %lld", (long long)limit);
	if (offset)
		out_fmt(o, " OFFSET %lld", (long long)offset);
}

/* A SELECT, its clauses in InfluxQL's order. */
static void format_select(struct out *o, const struct iql_select *s)
{
	static const char *const fills[] = {
		[IQL_FILL_NULL] = "null", [IQL_FILL_NONE] = "none", [IQL_FILL_PREVIOUS] = "previous",
		[IQL_FILL_LINEAR] = "linear",
	};
	out_str(o, "SELECT ");
	for (size_t k = 0; k < s->nfields; k++) {
		if (k)
			out_str(o, ", ");
		format_expr(o, s->fields[k].expr);
		if (s->fields[k].alias.s) {
			out_str(o, " AS ");
			out_ident(o, &s->fields[k].alias);
		}
	}
	out_str(o, " FROM ");
	format_sources(o, s->sources, s->nsources);
	if (s->where) {
		out_str(o, " WHERE ");
		format_expr(o, s->where);
	}
	for (size_t k = 0; k < s->ndims; k++) {
		out_str(o, k ? ", " : " GROUP BY ");
		format_expr(o, s->dims[k]);
	}
	if (s->has_fill && s->fill == IQL_FILL_NUMBER && s->fill_is_int)
		out_fmt(o, " fill(%lld)", (long long)s->fill_int);
	else if (s->has_fill && s->fill == IQL_FILL_NUMBER) {
		out_str(o, " fill(");
		out_float(o, s->fill_value);
		out_str(o, ")");
	} else if (s->has_fill) {
		out_fmt(o, " fill(%s)", fills[s->fill]);
	}
	if (s->has_order)
		out_str(o, s->order_desc ? " ORDER BY time DESC" : " ORDER BY time ASC");
	format_counts(o, s->limit, s->offset);
	if (s->slimit)
		out_fmt(o, " SLIMIT %lld", (long long)s->slimit);
	if (s->soffset)
		out_fmt(o, " SOFFSET %lld", (long long)s->soffset);
}

/* A SHOW statement. */
static void format_show(struct out *o, const struct iql_stmt *st)
{
	static const char *const what[] = {
		[IQL_SHOW_DATABASES] = "DATABASES", [IQL_SHOW_MEASUREMENTS] = "MEASUREMENTS",
		[IQL_SHOW_TAG_KEYS] = "TAG KEYS", [IQL_SHOW_TAG_VALUES] = "TAG VALUES",
		[IQL_SHOW_FIELD_KEYS] = "FIELD KEYS", [IQL_SHOW_SERIES] = "SERIES",
	};
	static const char *const key_ops[] = {
		[IQL_KEY_EQ] = " = ", [IQL_KEY_NEQ] = " != ", [IQL_KEY_EQREGEX] = " =~ ",
		[IQL_KEY_NEQREGEX] = " !~ ", [IQL_KEY_IN] = " IN (",
	};
	const struct iql_show *s = st->show;
	out_fmt(o, "SHOW %s", what[st->kind]);
	if (s->database.s) {
		out_str(o, " ON ");
		out_ident(o, &s->database);
	}
	if (s->nsources) {
		out_str(o, " FROM ");
		format_sources(o, s->sources, s->nsources);
	}
	if (s->key_op != IQL_KEY_NONE) {
		out_str(o, st->kind == IQL_SHOW_MEASUREMENTS ? " WITH MEASUREMENT" : " WITH KEY");
		out_str(o, key_ops[s->key_op]);
		if (s->key_op == IQL_KEY_EQREGEX || s->key_op == IQL_KEY_NEQREGEX)
			out_regex(o, s->regex, s->regex_len);
		for (size_t k = 0; k < s->nkeys; k++) {
			if (k)
				out_str(o, ", ");
			out_ident(o, &s->keys[k]);
		}
		if (s->key_op == IQL_KEY_IN)
			out_str(o, ")");
	}
	if (s->where) {
		out_str(o, " WHERE ");
		format_expr(o, s->where);
	}
	format_counts(o, s->limit, s->offset);
}

size_t iql_format(const struct iql_stmt *st, char *buf, size_t size)
{
	struct out o = {buf, size, 0};
	if (buf && size)
		buf[0] = '\0';
	if (st->kind == IQL_SELECT) {
		format_select(&o, st->select);
	} else if (st->kind == IQL_CREATE_DATABASE) {
		out_str(&o, "CREATE DATABASE ");
		out_ident(&o, &st->database);
	} else {
		format_show(&o, st);
	}
	return o.n;
}

size_t iql_format_expr(const struct iql_expr *e, char *buf, size_t size)
{
	struct out o = {buf, size, 0};
	if (buf && size)
		buf[0] = '\0';
	format_expr(&o, e);
	return o.n;
}

/* ------------------------------------------------------------------ */
/* The dumper                                                         */

static void dump_ident(struct out *o, const struct iql_ident *id)
{
	if (!id->s)
		out_str(o, "-");
	else if (id->quoted)
		out_quoted(o, id->s, id->len, '"');
	else
		out_mem(o, id->s, id->len);
}

static void dump_select(struct out *o, const struct iql_select *s);

/* An expression as an S-expression (see iql_dump). */
static void dump_expr(struct out *o, const struct iql_expr *e)
{
	switch (e->kind) {
	case IQL_E_INTEGER: out_fmt(o, "(int %lld)", (long long)e->i); break;
	case IQL_E_FLOAT: out_fmt(o, "(float %.17g)", e->f); break;
	case IQL_E_STRING:
		out_str(o, e->is_time ? "(time " : "(str ");
		out_quoted(o, e->str, e->len, '\'');
		if (e->is_time)
			out_fmt(o, " %lld", (long long)e->i);
		out_str(o, ")");
		break;
	case IQL_E_REGEX:
		out_str(o, "(regex ");
		out_regex(o, e->str, e->len);
		out_str(o, ")");
		break;
	case IQL_E_DURATION: out_fmt(o, "(dur %lld)", (long long)e->i); break;
	case IQL_E_BOOL: out_str(o, e->i ? "(bool true)" : "(bool false)"); break;
	case IQL_E_VARREF:
		out_str(o, "(ref ");
		dump_ident(o, &e->name);
		out_str(o, ")");
		break;
	case IQL_E_WILDCARD: out_str(o, "(*)"); break;
	case IQL_E_CALL:
		out_str(o, "(call ");
		dump_ident(o, &e->name);
		out_fmt(o, "/%d", (int)e->fn);
		for (size_t k = 0; k < e->nargs; k++) {
			out_str(o, " ");
			dump_expr(o, e->args[k]);
		}
		out_str(o, ")");
		break;
	case IQL_E_PAREN:
		out_str(o, "(paren ");
		dump_expr(o, e->lhs);
		out_str(o, ")");
		break;
	case IQL_E_BINARY:
		out_fmt(o, "(%s%s ", e->unary_minus ? "neg" : "", e->unary_minus ? "" : op_text[e->op]);
		if (!e->unary_minus) {
			dump_expr(o, e->lhs);
			out_str(o, " ");
		}
		dump_expr(o, e->rhs);
		out_str(o, ")");
		break;
	}
}

/* FROM's list as an S-expression. */
static void dump_sources(struct out *o, const struct iql_source *v, size_t n)
{
	out_str(o, " (from");
	for (size_t k = 0; k < n; k++) {
		const struct iql_source *s = &v[k];
		out_str(o, " ");
		if (s->kind == IQL_SRC_SUBQUERY) {
			dump_select(o, s->subquery);
		} else if (s->kind == IQL_SRC_REGEX) {
			out_regex(o, s->regex, s->regex_len);
		} else {
			if (s->db.s || s->rp.s) {
				dump_ident(o, &s->db);
				out_str(o, ".");
				dump_ident(o, &s->rp);
				out_str(o, ".");
			}
			dump_ident(o, &s->name);
		}
	}
	out_str(o, ")");
}

/* A SELECT as an S-expression. */
static void dump_select(struct out *o, const struct iql_select *s)
{
	out_str(o, "(select (fields");
	for (size_t k = 0; k < s->nfields; k++) {
		out_str(o, " ");
		dump_expr(o, s->fields[k].expr);
		if (s->fields[k].alias.s) {
			out_str(o, " as ");
			dump_ident(o, &s->fields[k].alias);
		}
	}
	out_str(o, ")");
	dump_sources(o, s->sources, s->nsources);
	if (s->where) {
		out_str(o, " (where ");
		dump_expr(o, s->where);
		out_str(o, ")");
	}
	if (s->ndims) {
		out_str(o, " (group");
		for (size_t k = 0; k < s->ndims; k++) {
			out_str(o, " ");
			dump_expr(o, s->dims[k]);
		}
		if (s->has_group_time)
			out_fmt(o, " every=%lld offset=%lld", (long long)s->group_interval,
			        (long long)s->group_offset);
		out_str(o, ")");
	}
	if (s->has_fill) {
		static const char *const f[] = {"null", "none", "previous", "linear"};
		if (s->fill == IQL_FILL_NUMBER)
			out_fmt(o, s->fill_is_int ? " (fill %.0f)" : " (fill %.17g)", s->fill_value);
		else
			out_fmt(o, " (fill %s)", f[s->fill]);
	}
	if (s->has_order)
		out_str(o, s->order_desc ? " (order desc)" : " (order asc)");
	if (s->limit)
		out_fmt(o, " (limit %lld)", (long long)s->limit);
	if (s->offset)
		out_fmt(o, " (offset %lld)", (long long)s->offset);
	if (s->slimit)
		out_fmt(o, " (slimit %lld)", (long long)s->slimit);
	if (s->soffset)
		out_fmt(o, " (soffset %lld)", (long long)s->soffset);
	out_str(o, ")");
}

size_t iql_dump(const struct iql_stmt *st, char *buf, size_t size)
{
	static const char *const kinds[] = {
		[IQL_SELECT] = "select", [IQL_SHOW_DATABASES] = "show-databases",
		[IQL_SHOW_MEASUREMENTS] = "show-measurements", [IQL_SHOW_TAG_KEYS] = "show-tag-keys",
		[IQL_SHOW_TAG_VALUES] = "show-tag-values", [IQL_SHOW_FIELD_KEYS] = "show-field-keys",
		[IQL_SHOW_SERIES] = "show-series", [IQL_CREATE_DATABASE] = "create-database",
	};
	struct out o = {buf, size, 0};
	if (buf && size)
		buf[0] = '\0';
	if (st->kind == IQL_SELECT) {
		dump_select(&o, st->select);
		return o.n;
	}
	out_fmt(&o, "(%s", kinds[st->kind]);
	if (st->kind == IQL_CREATE_DATABASE) {
		out_str(&o, " ");
		dump_ident(&o, &st->database);
	} else if (st->show) {
		const struct iql_show *s = st->show;
		if (s->database.s) {
			out_str(&o, " (on ");
			dump_ident(&o, &s->database);
			out_str(&o, ")");
		}
		if (s->nsources)
			dump_sources(&o, s->sources, s->nsources);
		if (s->key_op != IQL_KEY_NONE) {
			out_fmt(&o, " (key %d", (int)s->key_op);
			if (s->regex) {
				out_str(&o, " ");
				out_regex(&o, s->regex, s->regex_len);
			}
			for (size_t k = 0; k < s->nkeys; k++) {
				out_str(&o, " ");
				dump_ident(&o, &s->keys[k]);
			}
			out_str(&o, ")");
		}
		if (s->where) {
			out_str(&o, " (where ");
			dump_expr(&o, s->where);
			out_str(&o, ")");
		}
		if (s->limit)
			out_fmt(&o, " (limit %lld)", (long long)s->limit);
		if (s->offset)
			out_fmt(&o, " (offset %lld)", (long long)s->offset);
	}
	out_str(&o, ")");
	return o.n;
}
