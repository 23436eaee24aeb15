/*
 * graphite.h -- Graphite plaintext ("carbon") lines parsed (graphite.c):
 * "path value [timestamp]", the path's components split at '.', tagged
 * Graphite's ";name=value" tags after them, the value a finite number and
 * the timestamp seconds since 1970.  Bytes in, parsed lines out: no
 * table, socket or event loop.  gr_map then names a line's table, key
 * columns and value column by tsstore's default rule.  The daemon
 * (daemon/graphite.c) maps them to rows.
 */
#ifndef TSSTORE_WIRE_GRAPHITE_H
#define TSSTORE_WIRE_GRAPHITE_H

#include <stddef.h>
#include <stdint.h>

/* Most components of a path: a table and the 15 key columns a table's key
 * holds besides ts (TS_KEY_COLUMNS_MAX). */
#define GR_COMPONENTS_MAX 16
/* Most ";name=value" tags of a path. */
#define GR_TAGS_MAX 64
/* Most key columns a mapped line names: components and tags. */
#define GR_KEYS_MAX (GR_COMPONENTS_MAX + GR_TAGS_MAX)
/* The value column of the default rule. */
#define GR_VALUE_COLUMN "value"

/* What gr_parse can fail with (each has a message, gr_parse's why). */
enum gr_error {
	GR_EFIELDS = -1, /* not "path value [timestamp]" */
	GR_EPATH = -2,   /* an empty component, too many, or a tag not name=value */
	GR_EVALUE = -3,  /* the value is not a finite number */
	GR_ETIME = -4,   /* the timestamp is not seconds */
};

/* Text in the line: p[0..len), not NUL-terminated. */
struct gr_text {
	const char *p;
	size_t len;
};

struct gr_tag {
	struct gr_text name, value;
};

/* A parsed line.  Its texts point into the line. */
struct gr_line {
	struct gr_text path;                 /* the path, tags included */
	struct gr_text comp[GR_COMPONENTS_MAX]; /* the components, each not empty */
	int ncomp;                           /* at least 1 */
	struct gr_tag tags[GR_TAGS_MAX];     /* the tags, names and values not empty */
	int ntags;
	double value;                        /* finite */
	int has_time;                        /* 0: none given, or "-1": the caller's now */
	int64_t ns;                          /* the timestamp in ns (when has_time) */
};

/*
 * gr_next -- the next line of buf[0..len) from *pos: lines end at '\n' (a
 * last one without it too), a '\r' before it is dropped, empty lines are
 * skipped.  *line, *n: the line (no '\n').  *pos moves past it.
 * Returns 1 with a line, 0 at the end of buf.
 */
int gr_next(const char *buf, size_t len, size_t *pos, const char **line, size_t *n);

/*
 * gr_parse -- parse one line p[0..n) (no '\n').  Fields are separated by
 * spaces or tabs.  The timestamp: digits, with a decimal part or not
 * ("1700000000", "1700000000.25": ns precision, more digits dropped), or
 * "-1" or none meaning now.
 * out: the line (undefined on failure).  why: when not NULL, set to a
 * message naming what is wrong (static text) on failure.
 * Returns 0, or a negative gr_error.
 */
int gr_parse(const char *p, size_t n, struct gr_line *out, const char **why);

/* A key column of a mapped line: its name and its value's text. */
struct gr_key {
	struct gr_text name, value;
};

/* A line mapped to a table: the table's name, its key columns in order,
 * the name of the value column.  Texts point into the line, into static
 * text, or into the scratch buffer given to gr_map.  The names are as
 * they came (the caller applies its name rule). */
struct gr_mapped {
	struct gr_text table;
	struct gr_key keys[GR_KEYS_MAX];
	int nkeys;
	struct gr_text field;
};

/*
 * gr_map -- the default rule: the first component is the table, the
 * others are key columns p1, p2, ..., then the tags (name=value) in the
 * order given; the value column is "value".
 * Returns 0 (it cannot fail).
 */
int gr_map(const struct gr_line *line, struct gr_mapped *out);

#endif /* TSSTORE_WIRE_GRAPHITE_H */
