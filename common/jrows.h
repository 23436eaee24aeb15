/*
 * jrows.h -- the fast path for the "rows" of an insert request: rows
 * read straight from the JSON text into values, with no json_t (see
 * jrows.c).  Same results as jansson plus val_from_json on every input.
 */
#ifndef TSSTORE_COMMON_JROWS_H
#define TSSTORE_COMMON_JROWS_H

#include <stddef.h>

#include <jansson.h>
#include <tsstore.h>

/*
 * jrows_find -- where the value of the member "rows" of the JSON object
 * in text[0..len) is: text[*start..*end).  Only the object's own members
 * are looked at (not nested ones), and nothing is validated beyond what
 * finding the value needs: the caller parses the rest of the object
 * (with the span replaced by "[]") and the span itself (jrows_parse).
 * Returns 1 when found; 0 when there is no such member, it appears twice,
 * or the text is not an object this scanner can walk (then use jansson
 * on the whole text, which reports what is wrong).
 */
int jrows_find(const char *text, size_t len, size_t *start, size_t *end);

/*
 * jrows_parse -- the JSON array of rows at p[0..len): each row an array of
 * the schema's width in column order, or an object keyed by column name;
 * values as val_from_json reads them (null: the default).
 * p is modified: strings and blobs are decoded in place, and the values
 * point into p, which must outlive them.
 * vals: receives nrows * s->ncolumns values (free() it; NULL when there
 * are no rows).  nrows: receives the number of rows.
 * why: receives the reason on failure, naming the row (from 0) and the
 * column ("row 3, column \"v\": expected double, got a JSON string").
 * Returns 0; TS_EPROTO for malformed JSON; TS_EINVAL for a row of the
 * wrong width or shape or an unknown column; TS_ETYPE, TS_ERANGE or
 * TS_EINVAL for a bad value (as val_from_json); TS_ENOMEM.
 */
int jrows_parse(char *p, size_t len, const ts_schema *s, ts_value **vals, size_t *nrows,
                char *why, size_t whysz);

/*
 * jrows_from_json -- the slow path, and the reference jrows_parse is held
 * to: the rows of the JSON array `rows` (parsed by jansson) into values,
 * each by val_from_json, with the same checks and messages.
 * vals: receives nrows * s->ncolumns values whose strings and blobs are
 * private copies: release each with val_free, then free(vals).
 * Returns 0 or the error, with why set, as jrows_parse (never TS_EPROTO).
 */
int jrows_from_json(const json_t *rows, const ts_schema *s, ts_value **vals, size_t *nrows,
                    char *why, size_t whysz);

#endif /* TSSTORE_COMMON_JROWS_H */
