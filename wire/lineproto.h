/*
 * lineproto.h -- InfluxDB line protocol, parsed in place (lineproto.c).
 *
 * A pure module: bytes in, points out; no allocation, no I/O.  The
 * reader walks a body line by line; each point's names and values point
 * into the body (struct lp_text), unescaped on demand (lp_unescape), so
 * a line costs no allocation and a bad line is reported (its number and
 * why) while the reader goes on with the next one.  The grammar it
 * accepts is written out in docs/ingest-mapping.md.
 */
#ifndef TSSTORE_COMMON_LINEPROTO_H
#define TSSTORE_COMMON_LINEPROTO_H

#include <stddef.h>
#include <stdint.h>

/* Most tags and fields one line may carry (more is an error for that
 * line).  A table's key holds at most 15 tags (TS_KEY_COLUMNS_MAX less
 * ts) and it has at most 1024 columns, so no valid point needs more. */
#define LP_TAGS_MAX 64
#define LP_FIELDS_MAX 1024
/* Longest number text (a float's digits, an integer, a timestamp). */
#define LP_NUMBER_MAX 400
/* Room for a reason (lp_reader.why), NUL included. */
#define LP_WHY_MAX 160

/* Timestamp precisions: InfluxDB 2.x's ns, us, ms, s and 1.x's n, u,
 * ms, s, m, h. */
enum lp_precision { LP_NS, LP_US, LP_MS, LP_S, LP_M, LP_H };

/*
 * lp_precision_parse -- "ns", "n", "us", "u", "ms", "s", "m" or "h" (NULL
 * or "" mean ns, the default of both APIs) into *out.
 * Returns 0, or -1 for any other text (*out unchanged).
 */
int lp_precision_parse(const char *text, enum lp_precision *out);

/* Nanoseconds in one unit of precision p. */
int64_t lp_precision_ns(enum lp_precision p);

/* The escape classes: which characters a backslash escapes. */
enum lp_esc {
	LP_ESC_NONE = 0,    /* the text has no escape: p[0..len) is it */
	LP_ESC_MEASUREMENT, /* \, \space \\ */
	LP_ESC_KEY,         /* tag keys and values, field keys: \, \= \space \\ */
	LP_ESC_STRING,      /* string field values: \" \\ */
};

/* A name or string as it stands in the body: p[0..len), escapes still in
 * (esc says which class, LP_ESC_NONE when there is none to undo). */
struct lp_text {
	const char *p;
	size_t len;
	enum lp_esc esc;
};

enum lp_type { LP_FLOAT, LP_INT, LP_UINT, LP_BOOL, LP_STRING };

struct lp_tag {
	struct lp_text key, value;
};

/* One field.  Integers, unsigned integers and booleans are converted
 * while parsing (range checked); a float keeps its text (raw), checked
 * against the grammar but converted only by lp_field_float; a string's
 * raw is its text between the quotes. */
struct lp_field {
	struct lp_text key;
	enum lp_type type;
	struct lp_text raw;
	union {
		int64_t i;  /* LP_INT */
		uint64_t u; /* LP_UINT */
		int b;      /* LP_BOOL: 0 or 1 */
	} v;
};

/* One point: a parsed line.  tags and fields point into the reader. */
struct lp_point {
	struct lp_text measurement;
	const struct lp_tag *tags;
	int ntags;
	const struct lp_field *fields;
	int nfields;
	int has_time;   /* 0: the line gave no timestamp */
	int64_t time;   /* ns since the epoch (converted from the precision) */
};

/* A reader over one body.  Initialise with lp_reader_init; the body must
 * outlive the points it gives. */
struct lp_reader {
	const char *p, *end;         /* what is left of the body */
	enum lp_precision precision;
	uint64_t line;               /* number (from 1) of the line last read */
	const char *line_p;          /* that line's text, without its '\n' */
	size_t line_len;
	char why[LP_WHY_MAX];        /* why the last bad line is bad */
	struct lp_tag tags[LP_TAGS_MAX];
	struct lp_field fields[LP_FIELDS_MAX];
};

/* Start reading body[0..len) with timestamps in precision p. */
void lp_reader_init(struct lp_reader *r, const char *body, size_t len, enum lp_precision p);

/*
 * lp_next -- the next point of the body, skipping blank lines and
 * comments (lines whose first character other than space or tab is '#').
 * pt: receives the point (valid until the next call).
 * Returns 1 with *pt set; 0 at the end of the body; -1 for a bad line:
 * r->why says why, r->line and r->line_p / r->line_len which line it is.
 * After -1 the next call goes on with the next line.
 */
int lp_next(struct lp_reader *r, struct lp_point *pt);

/*
 * lp_parse_line -- parse the one line p[0..len) (no '\n' in it) into pt,
 * its tags into tags[0..ntags_room) and its fields into
 * fields[0..nfields_room).  A blank line or a comment gives 0.
 * Returns 1 for a point; 0 for nothing; -1 with why[0..whysz) set.
 */
int lp_parse_line(const char *p, size_t len, enum lp_precision prec, struct lp_point *pt,
                  struct lp_tag *tags, int ntags_room, struct lp_field *fields,
                  int nfields_room, char *why, size_t whysz);

/*
 * lp_unescape -- t's text with its escapes undone, into out, which must
 * have room for t->len bytes (the text never grows).  Returns its length.
 */
size_t lp_unescape(const struct lp_text *t, char *out);

/*
 * lp_field_float -- the value of an LP_FLOAT field.
 * Returns 0 with *out set; -1 when it is out of the range of a double
 * (such as 1e999).
 */
int lp_field_float(const struct lp_field *f, double *out);

#endif /* TSSTORE_COMMON_LINEPROTO_H */
