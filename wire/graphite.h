/*
 * graphite.h -- Graphite plaintext ("carbon") lines parsed (graphite.c):
 * "path value [timestamp]", the path's components split at '.', tagged
 * Graphite's ";name=value" tags after them, the value a finite number and
 * the timestamp seconds since 1970.  Bytes in, parsed lines out: no
 * table, socket or event loop.  gr_map then names a line's table, key
 * columns and value column, by tsstore's default rule or by templates
 * (gr_templates_parse).  The daemon (daemon/graphite.c) makes them rows.
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
/* Most key columns a mapped line names: components, a template's
 * TAG=VALUEs (at most GR_COMPONENTS_MAX) and tags. */
#define GR_KEYS_MAX (2 * GR_COMPONENTS_MAX + GR_TAGS_MAX)
/* The value column of the default rule. */
#define GR_VALUE_COLUMN "value"
/* Longest name in a template (a tag), as a table's column names. */
#define GR_NAME_MAX 64

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
	double value;                        /* finite, or NAN for "nan" */
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

/* Templates (InfluxDB's Graphite templates, as carbon-c-relay and
 * VictoriaMetrics have them), parsed by gr_templates_parse.  Opaque. */
struct gr_templates;

/*
 * gr_templates_parse -- parse templates specs[0..n), each
 *     [FILTER] TEMPLATE [TAG=VALUE[,TAG=VALUE...]]
 * separated by spaces.  FILTER: dotted globs ('*' any text within a
 * component), matched against a path's first components.  TEMPLATE:
 * dotted parts, one per path component: "measurement" (the component is
 * part of the table's name), "field" (part of the value column's name), a
 * tag name (the component is that key column's value), or nothing (the
 * component is skipped); "measurement*" and "field*", last only, take
 * every remaining component.  Parts of one kind are joined with '_'.
 * TAG=VALUE: key columns every line of the template gets.  A template
 * without FILTER applies to the paths no filter matches; at most one.
 * Names: [A-Za-z_][A-Za-z0-9_]*, at most 64 bytes, not "ts".
 * out: the templates (free with gr_templates_free); NULL when n is 0.
 * err: errsize bytes for a message naming the template and what is wrong
 * in it, on failure.
 * Returns 0, or -1 for a bad template, -2 out of memory.
 */
int gr_templates_parse(const char *const *specs, int n, struct gr_templates **out, char *err,
                       size_t errsize);

/* gr_templates_free -- free them; NULL allowed. */
void gr_templates_free(struct gr_templates *t);

/* What gr_map can fail with: the path has fewer components than its
 * template needs for a table name. */
#define GR_ESHORT (-5)

/*
 * gr_map -- name line's table, key columns and value column.
 * t: the templates (NULL: none).  The first template whose filter matches
 * the path applies, in the order they were given; else the one without a
 * filter; else, with none of these, the default rule: the first component
 * is the table, the others are key columns p1, p2, ...  With a template,
 * the components it names make the table, the value column ("value" when
 * it names none) and key columns in the template's order, then its
 * TAG=VALUE key columns not named by a part; components past its parts
 * are dropped.  The line's ";name=value" tags come last, in the order
 * given, whatever the rule (one named as a TAG=VALUE replaces its value).
 * scratch: at least line->path.len bytes, for the joined names; out's
 * texts may point into it.
 * Returns 0, or GR_ESHORT (out undefined).
 */
int gr_map(const struct gr_templates *t, const struct gr_line *line, char *scratch,
           struct gr_mapped *out);

#endif /* TSSTORE_WIRE_GRAPHITE_H */
