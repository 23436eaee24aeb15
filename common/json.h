/*
 * json.h -- values in JSON, both ways, in the forms of DESIGN.md section 5
 * (see json.c): what the daemon reads and writes and what the admin
 * command's jsonl input and output hold.
 */
#ifndef TSSTORE_COMMON_JSON_H
#define TSSTORE_COMMON_JSON_H

#include <stddef.h>

#include <jansson.h>
#include <tsstore.h>

#include "jbuf.h"

/* Append the n bytes at p as a JSON string: quotes, and escapes for '"',
 * '\\' and the control characters (NUL as \u0000).  Bytes that are not
 * valid UTF-8 (a client's bytes quoted in a message, a character cut by
 * a length limit) become U+FFFD, so the output is always valid JSON. */
void jbuf_string(struct jbuf *b, const char *p, size_t n);

/* The length of the valid UTF-8 sequence starting with the byte >= 0x80
 * at p (before end), or 0 when it is not one: no overlong forms, no
 * surrogates, nothing above U+10FFFF (jansson's rules). */
int json_utf8_len(const unsigned char *p, const unsigned char *end);

/*
 * jbuf_value -- append v in its JSON form: integers and timestamps as
 * integers (timestamps in ns), doubles in the shortest form that reads
 * back exactly (-0.0 as "-0.0"; NaN and the infinities, which JSON has
 * no numbers for, as the strings "NaN", "Infinity" and "-Infinity"),
 * strings as strings, blobs as base64 strings (RFC 4648, padded), TS_NONE
 * as null.
 */
void jbuf_value(struct jbuf *b, const ts_value *v);

/* Append row[0..n) as a JSON array of jbuf_value forms. */
void jbuf_row(struct jbuf *b, const ts_value *row, int n);

/* "a JSON string", "an integer", ...: what v is, for messages. */
const char *val_json_kind(const json_t *v);

/* The JSON strings a double column takes, for messages. */
#define JSON_DOUBLE_WORDS "\"NaN\", \"Infinity\" or \"-Infinity\""

/*
 * val_double_from_json_string -- the JSON string s[0..n) for a double
 * column: one of the words of val_double_word (value.h; "NaN",
 * "Infinity", "-Infinity" and their case variants), else TS_ETYPE with
 * reason set.  Shared by val_from_json and jrows, so both say the same.
 */
int val_double_from_json_string(const char *s, size_t n, ts_value *out, char *reason,
                                size_t size);

/* json_text flags: the string is a name (an identifier: a table or column
 * name, an op, an aggregate function, a type), so control characters are
 * refused too. */
#define JSON_TEXT_NAME 1

/*
 * json_text -- the JSON string v as a C string that means exactly what
 * the client sent.  Every place that turns a client's JSON string into a
 * C string goes through here: a JSON string may hold "\u0000", and a C
 * string stops at it, so "victim\u0000junk" would otherwise name the
 * table "victim".
 * flags: 0, or JSON_TEXT_NAME to refuse also the control characters
 * U+0001..U+001F and U+007F.
 * out: receives the string (owned by v), NULL on failure.
 * why: receives the reason on failure ("expected a string, got a JSON
 * integer", "a NUL byte (\u0000) at offset 6"), size bytes of room.
 * Returns 0; TS_ETYPE when v is not a string; TS_EINVAL when it holds a
 * NUL byte (or, for a name, a control character).
 */
int json_text(const json_t *v, int flags, const char **out, char *why, size_t size);

/*
 * val_from_json -- the JSON value v as a value of column type `type`:
 * integers for int32/int64 (range checked); any number for double, or
 * a string of val_double_from_json_string (NaN and the infinities);
 * integer ns or an RFC 3339 / integer string for timestamps; strings for
 * strings; base64 strings for blobs; null for TS_NONE (the default).
 * out: receives the value; string and blob bytes are a private copy, to
 * be released with val_free (value.h).  reason: receives why on failure,
 * without the column's name ("expected int32, got a JSON string").
 * Returns 0; TS_ETYPE, TS_ERANGE or TS_EINVAL with reason set; TS_ENOMEM.
 */
int val_from_json(ts_type type, const json_t *v, ts_value *out,
                  char *reason, size_t size);

#endif /* TSSTORE_COMMON_JSON_H */
