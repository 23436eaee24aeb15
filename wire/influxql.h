/*
 * influxql.h -- InfluxQL (InfluxDB 1.x's query language) parsed into a
 * plain C syntax tree (influxql.c): a lexer and a recursive-descent parser
 * for the subset that dashboards and the TSBS cpu-only suite use, and a
 * printer that writes a tree back as canonical text.  Bytes in, tree out:
 * no table, socket or event loop, so the daemon's /query, the command, the
 * tests and the benchmarks can all use it.  Running a query (mapping the
 * tree onto ts_query / ts_aggregate / ts_latest) is the executor's; how each
 * node is meant to be used is said at its struct.  docs/influxql.md has the
 * grammar accepted and the errors given.
 *
 * Errors read as InfluxDB 1.6 words them ("error parsing query: found FROM,
 * expected identifier, string, number, bool at line 1, char 8"), so clients
 * see the same text.
 *
 * Memory: everything a parse makes (nodes, identifiers and strings, unescaped
 * and NUL-terminated) lives in one arena owned by the struct iql_query and
 * freed whole by iql_query_free.
 */
#ifndef TSSTORE_WIRE_INFLUXQL_H
#define TSSTORE_WIRE_INFLUXQL_H

#include <stddef.h>
#include <stdint.h>

/* The longest query text iql_parse takes (all statements of one q). */
#define IQL_QUERY_MAX ((size_t)1 << 20)
/* The deepest tree iql_parse makes: the longest path from a statement to
 * a leaf, counting parentheses, operators (a chain of 300 ORs is 300 deep),
 * call arguments and sub-queries.  Deeper is refused, so that no recursion
 * over a tree (the parser's, the printer's, an executor's) can exhaust the
 * stack. */
#define IQL_DEPTH_MAX 512
/* The most statements in one q. */
#define IQL_STMTS_MAX 1000
/* Room for an error message (iql_parse's err), NUL included. */
#define IQL_ERR_MAX 512

/* What iql_parse can fail with. */
enum iql_error {
	IQL_ESYNTAX = -1,  /* not InfluxQL, or not the subset: the message says why */
	IQL_ETOOBIG = -2,  /* longer than IQL_QUERY_MAX or more than IQL_STMTS_MAX statements */
	IQL_EDEPTH = -3,   /* nested deeper than IQL_DEPTH_MAX */
	IQL_ENOMEM = -4,   /* out of memory */
	IQL_EINVALID = -5, /* parses, but InfluxDB refuses it when it compiles the
	                    * statement (e.g. "time dimension must have duration
	                    * argument"): InfluxDB reports these in the statement's
	                    * result, not as "error parsing query"; the message is
	                    * InfluxDB's, without that prefix.  Checked once the
	                    * whole q parsed, so a syntax error anywhere comes first */
};

/*
 * An identifier (a measurement, field, tag, alias, database or retention
 * policy name): its text unescaped, NUL-terminated (len excludes the NUL;
 * a quoted one may hold any byte but NUL), and whether it was written
 * "double-quoted" -- kept so that text printed again reads as written.
 * Unquoted identifiers keep their case; keywords are not identifiers unless
 * quoted.  An empty name (s == NULL, len 0) means "not given".
 */
struct iql_ident {
	const char *s;
	size_t len;
	int quoted;
};

/* What an expression node is. */
enum iql_expr_kind {
	IQL_E_INTEGER,  /* an integer literal: i (a leading '-' folded in) */
	IQL_E_FLOAT,    /* a number with a '.': f */
	IQL_E_STRING,   /* a 'single-quoted' string: str (unescaped); is_time
	                 * and i are set when it reads as a time (see below) */
	IQL_E_REGEX,    /* a /regex/ (after =~ and !~, as a field, as a call's
	                 * argument): str, the pattern with \/ unescaped to /, in
	                 * Go's RE2 syntax as InfluxDB takes it (the parser checks
	                 * its structure; compiling it is the executor's) */
	IQL_E_DURATION, /* 1h, 15m, 100ms, 1h30m...: i, in nanoseconds */
	IQL_E_BOOL,     /* true / false: i is 1 or 0 */
	IQL_E_VARREF,   /* an identifier: a field, tag or `time`: name */
	IQL_E_WILDCARD, /* `*` (a field, or a call's argument) */
	IQL_E_CALL,     /* name(args...): name, fn, args, nargs; now() too */
	IQL_E_BINARY,   /* lhs op rhs */
	IQL_E_PAREN,    /* ( lhs ): kept so that the printer writes it again */
};

/* Binary operators, by InfluxQL's precedence: OR binds least, then AND,
 * then the comparisons, then + - | ^, then * / % & most. All associate to
 * the left. */
enum iql_op {
	IQL_OP_OR, IQL_OP_AND,
	IQL_OP_EQ, IQL_OP_NEQ, IQL_OP_EQREGEX, IQL_OP_NEQREGEX,
	IQL_OP_LT, IQL_OP_LTE, IQL_OP_GT, IQL_OP_GTE,
	IQL_OP_ADD, IQL_OP_SUB, IQL_OP_BITOR, IQL_OP_BITXOR,
	IQL_OP_MUL, IQL_OP_DIV, IQL_OP_MOD, IQL_OP_BITAND,
};

/* The functions the subset knows by name (a call's fn); any other name
 * parses as IQL_FN_OTHER, which the executor refuses as InfluxDB does
 * ("undefined function foo()"). */
enum iql_fn {
	IQL_FN_OTHER,
	IQL_FN_MEAN, IQL_FN_MIN, IQL_FN_MAX, IQL_FN_SUM, IQL_FN_COUNT,
	IQL_FN_FIRST, IQL_FN_LAST, IQL_FN_SPREAD, IQL_FN_STDDEV,
	IQL_FN_PERCENTILE, /* percentile(field, N): N an integer or float */
	IQL_FN_NOW,        /* now(), in time conditions */
	IQL_FN_TIME,       /* time(interval[, offset]), in GROUP BY */
};

/*
 * An expression node.  Which members mean something depends on kind (see
 * enum iql_expr_kind); the others are zero.
 *
 * For the executor: a WHERE tree is split into a time range and the rest.
 * `time OP x` (or `x OP time`), where x is now() (IQL_FN_NOW, the query's
 * arrival time), a time string (is_time), an integer (epoch nanoseconds) or
 * a duration, each possibly +/- durations, bounds ts_query's range;
 * `tag = 'v'` / `tag =~ /re/` between ANDs pick series (the key prefix and
 * filters); comparisons of fields to literals filter rows.  Which identifier
 * is a tag and which a field is the schema's to say: the parser cannot.
 */
struct iql_expr {
	enum iql_expr_kind kind;
	enum iql_op op;               /* IQL_E_BINARY */
	struct iql_expr *lhs, *rhs;   /* IQL_E_BINARY; IQL_E_PAREN: lhs only */
	int64_t i;                    /* INTEGER, DURATION (ns), BOOL, a time STRING (ns) */
	double f;                     /* FLOAT */
	const char *str;              /* STRING, REGEX: unescaped, NUL-terminated */
	size_t len;                   /* STRING, REGEX: str's length */
	int is_time;                  /* STRING: it reads as RFC 3339 (2016-01-01T00:00:00Z,
	                               * with fractions and offsets) or as a date
	                               * 2016-01-01 [15:04:05]; i is then that time in
	                               * ns since the epoch (UTC) */
	struct iql_ident name;        /* VARREF, CALL */
	enum iql_fn fn;               /* CALL */
	struct iql_expr **args;       /* CALL: its arguments */
	size_t nargs;
	int unary_minus;              /* BINARY: written -x (x an identifier or a
	                               * parenthesis): op is MUL, lhs the integer -1,
	                               * as InfluxDB reads it; printed -x again */
};

/* A SELECT field: an expression and its alias (AS name; s NULL when not
 * given -- the column is then named as InfluxDB names it: the function's
 * name for a call, the field's for a varref). */
struct iql_field {
	struct iql_expr *expr;
	struct iql_ident alias;
};

/* What a FROM source is. */
enum iql_source_kind {
	IQL_SRC_MEASUREMENT, /* [db.][rp.]name: a table of the database */
	IQL_SRC_REGEX,       /* /regex/: every measurement it matches */
	IQL_SRC_SUBQUERY,    /* ( SELECT ... ): rows of an inner statement */
};

/*
 * A FROM source.  db and rp are empty when not written; "db..name" (the
 * default retention policy) leaves rp empty with db set.  tsstore has one
 * retention policy per table, so the executor is expected to ignore rp and
 * take db over the request's db parameter.
 */
struct iql_source {
	enum iql_source_kind kind;
	struct iql_ident db, rp, name; /* MEASUREMENT (and db/rp for REGEX) */
	const char *regex;             /* REGEX: the pattern, \/ unescaped */
	size_t regex_len;
	struct iql_select *subquery;   /* SUBQUERY */
};

/* fill() in a SELECT: what a GROUP BY time() window without rows gives. */
enum iql_fill {
	IQL_FILL_NULL,     /* the default, and fill(null) */
	IQL_FILL_NONE,     /* the window is left out */
	IQL_FILL_PREVIOUS, /* the previous window's value */
	IQL_FILL_LINEAR,   /* interpolated between the windows around it */
	IQL_FILL_NUMBER,   /* fill_value */
};

/*
 * A SELECT statement.
 *
 * For the executor: sources name the tables; the WHERE splits as said at
 * struct iql_expr; a GROUP BY time(d, off) makes ts_aggregate's windows
 * (every d ns, shifted by off) and the calls in fields are what it computes
 * per window (mean, min, max, sum, count, first, last from block summaries;
 * spread = max - min; stddev and percentile from rows); without time() the
 * calls cover the whole range; without calls, rows are returned as they are.
 * Tag dimensions (and `*`: all tags) split the result into series, one per
 * tag value set.  `SELECT * ... GROUP BY tag ORDER BY time DESC LIMIT 1`
 * (TSBS lastpoint) is ts_latest per series.
 */
struct iql_select {
	struct iql_field *fields;
	size_t nfields;
	struct iql_source *sources;
	size_t nsources;
	struct iql_expr *where;       /* NULL: no WHERE */
	struct iql_expr **dims;       /* GROUP BY, as written: VARREFs (tags), a
	                               * WILDCARD, at most one CALL time(d[, off]) */
	size_t ndims;
	int has_group_time;           /* a time() dimension is among dims */
	int64_t group_interval;       /* its interval, ns (> 0) */
	int64_t group_offset;         /* its offset, ns (0 when not given; may be < 0) */
	enum iql_fill fill;
	int has_fill;                 /* fill() was written (the printer writes it again) */
	double fill_value;            /* IQL_FILL_NUMBER */
	int fill_is_int;              /* IQL_FILL_NUMBER: written as an integer */
	int64_t fill_int;             /* ... and that integer */
	int order_desc;               /* ORDER BY time DESC (ascending otherwise) */
	int has_order;                /* ORDER BY was written */
	int64_t limit, offset;        /* rows per series; 0 when not given */
	int64_t slimit, soffset;      /* series; 0 when not given */
};

/* SHOW TAG VALUES' WITH KEY: how the keys are picked. */
enum iql_key_op {
	IQL_KEY_NONE,    /* no WITH KEY (only SHOW TAG VALUES requires one) */
	IQL_KEY_EQ,      /* KEY = k: keys[0] */
	IQL_KEY_NEQ,     /* KEY != k: keys[0] */
	IQL_KEY_IN,      /* KEY IN (k1, k2, ...): keys */
	IQL_KEY_EQREGEX, /* KEY =~ /re/: regex */
	IQL_KEY_NEQREGEX,/* KEY !~ /re/: regex */
};

/*
 * A SHOW statement (the schema: SHOW MEASUREMENTS, TAG KEYS, TAG VALUES,
 * FIELD KEYS, SERIES) -- what the executor answers from the tables' key and
 * value columns.  sources: FROM, when written; where: WHERE on tags.
 * SHOW MEASUREMENTS' WITH MEASUREMENT =|=~ is in name_op / measurement /
 * regex.
 */
struct iql_show {
	struct iql_ident database;      /* ON db; empty when not written */
	struct iql_source *sources;
	size_t nsources;
	struct iql_expr *where;         /* NULL: none */
	enum iql_key_op key_op;         /* TAG VALUES: WITH KEY; MEASUREMENTS: WITH MEASUREMENT
	                                 * (only IQL_KEY_EQ / IQL_KEY_EQREGEX) */
	struct iql_ident *keys;         /* KEY = / != / IN, and MEASUREMENT = */
	size_t nkeys;
	const char *regex;              /* =~ / !~ */
	size_t regex_len;
	int64_t limit, offset;          /* 0 when not given */
};

/* What a statement is. */
enum iql_stmt_kind {
	IQL_SELECT,
	IQL_SHOW_DATABASES,
	IQL_SHOW_MEASUREMENTS,
	IQL_SHOW_TAG_KEYS,
	IQL_SHOW_TAG_VALUES,
	IQL_SHOW_FIELD_KEYS,
	IQL_SHOW_SERIES,
	IQL_CREATE_DATABASE, /* accepted; the executor answers it as done (a no-op) */
};

/* A statement: select for IQL_SELECT, show for the SHOWs, database for
 * CREATE DATABASE. */
struct iql_stmt {
	enum iql_stmt_kind kind;
	struct iql_select *select;
	struct iql_show *show;
	struct iql_ident database;
};

/* A parsed q: its statements in order (';' between them; empty statements
 * are skipped, as InfluxDB does).  Everything it points to is owned by it
 * and freed by iql_query_free. */
struct iql_query {
	struct iql_stmt *stmts;
	size_t nstmts;
	void *mem_; /* private: the arena */
};

/*
 * iql_parse -- parse one q (all its statements).
 * q[0..len): the query text, UTF-8 (not NUL-terminated; a NUL byte in it is
 * refused as InfluxDB refuses an illegal character).
 * out: filled on success (free it with iql_query_free); on failure it holds
 * nothing to free.
 * err: when not NULL, errsize bytes for the message InfluxDB would give
 * (set on failure only), e.g. "error parsing query: found EOF, expected FROM
 * at line 1, char 10".
 * Returns 0, or a negative iql_error.
 */
int iql_parse(const char *q, size_t len, struct iql_query *out, char *err, size_t errsize);

/* iql_query_free -- release what iql_parse made; q may be zeroed (then
 * nothing happens).  The struct itself is the caller's. */
void iql_query_free(struct iql_query *q);

/*
 * iql_format -- one statement written as canonical InfluxQL: keywords in
 * upper case, single spaces, identifiers quoted when they must be (or were),
 * numbers in the shortest form that reads back the same, durations in the
 * largest exact unit.  Parsing the text again gives the same tree (and
 * printing that, the same text).
 * buf: size bytes (may be 0 with buf NULL); the text is NUL-terminated and
 * truncated to fit, as snprintf does.
 * Returns the length of the whole text (excluding the NUL), as snprintf.
 */
size_t iql_format(const struct iql_stmt *s, char *buf, size_t size);

/* iql_format_expr -- the same for one expression. */
size_t iql_format_expr(const struct iql_expr *e, char *buf, size_t size);

/*
 * iql_dump -- one statement's tree as an S-expression naming every node's
 * kind and every member that is set, e.g.
 * "(select (fields (call max (ref usage_user))) (from cpu) ...)": what the
 * tests compare, and what the fuzz target compares between a parse and the
 * parse of its printed text.  buf, size and the return value as iql_format.
 */
size_t iql_dump(const struct iql_stmt *s, char *buf, size_t size);

/* iql_strerror -- a short name for an iql_error ("unknown error" for any
 * other value). */
const char *iql_strerror(int code);

#endif /* TSSTORE_WIRE_INFLUXQL_H */
