/*
 * value.h -- values as text, both ways, in the forms of DESIGN.md
 * sections 2 and 6 (see value.c).
 */
#ifndef TSSTORE_COMMON_VALUE_H
#define TSSTORE_COMMON_VALUE_H

#include <stddef.h>
#include <stdio.h>

#include <tsstore.h>

/*
 * val_parse -- text as a value of type: int32 and int64 in decimal
 * (range checked), double as strtod reads it (the whole text: so also
 * nan, inf and infinity in any case, signed; out of range is an error),
 * timestamp
 * as ts_time_parse reads it, string as is, blob as hex digits (an even
 * number of them, any case; "" is the empty blob).
 * out: receives the value; string and blob bytes are a private copy, to be
 * released with val_free.  why: receives the reason on failure.
 * Returns 0; TS_EINVAL (malformed) or TS_ERANGE (out of range) with why
 * set; TS_ENOMEM.
 */
int val_parse(ts_type type, const char *text, ts_value *out,
                    char *why, size_t whysz);

/*
 * val_parsen -- val_parse for the len bytes at text, which may
 * hold NUL bytes (text[len] must be NUL): a string keeps them; any other
 * type refuses them (TS_EINVAL), as no number, timestamp or hex digit is a
 * NUL.  Same results as val_parse.
 */
int val_parsen(ts_type type, const char *text, size_t len, ts_value *out,
                     char *why, size_t whysz);

/*
 * val_base64 -- the len bytes at text as a blob in base64 (RFC 4648
 * section 4: the standard alphabet A-Z a-z 0-9 + /, padded with '=' to a
 * multiple of 4 characters; no blanks; "" is the empty blob).  This is the
 * form of blobs in JSON (DESIGN.md section 5); text forms use hex.
 * out: receives the blob, a private copy to release with val_free.
 * Returns 0; TS_EINVAL with why set; TS_ENOMEM.
 */
int val_base64(const char *text, size_t len, ts_value *out,
                     char *why, size_t whysz);

/*
 * val_double_word -- whether the len bytes at text are one of the words
 * for the doubles that no number spells: "nan", "inf" or "infinity" in
 * any case, with an optional sign ("NaN", "Infinity", "-Infinity" are
 * the forms printed), as strtod reads them.  1 with *d set (NaN is the
 * default quiet NaN, its sign bit set by "-"), or 0.  JSON strings for
 * double columns are read with it.
 */
int val_double_word(const char *text, size_t len, double *d);

/* Room for any output of val_format_double, NUL included. */
#define VAL_DOUBLE_BUFSZ 32

/*
 * val_format_double -- d in a "%g" form that strtod reads back as exactly
 * d, the shortest one of up to 15 digits when there is one ("0.1",
 * "1e+300", "-0"), else of 16 or 17; NaN (any sign or payload), +inf and
 * -inf as the words "NaN", "Infinity" and "-Infinity", which strtod and
 * val_double_word read back.  buf holds size >= VAL_DOUBLE_BUFSZ bytes.
 */
void val_format_double(double d, char *buf, size_t size);

/*
 * val_base64_inplace -- val_base64 decoding text[0..len) where it lies:
 * the blob points into text, which is overwritten (only on success).
 */
int val_base64_inplace(char *text, size_t len, ts_value *out, char *why, size_t whysz);

/*
 * val_column -- the index of the column of s named by the len bytes at
 * name (which need not be NUL-terminated), or -1.  The search starts at
 * column hint (0 <= hint), so a caller walking columns in schema order
 * finds each at the first try.
 */
int val_column(const ts_schema *s, const char *name, size_t len, int hint);

/* Release the bytes val_parse copied (nothing for other values). */
void val_free(ts_value *v);

/*
 * val_print -- write v as text: integers in decimal, doubles in the
 * shortest form that reads back exactly, timestamps in RFC 3339 UTC,
 * strings with tab, newline and backslash escaped as \t \n \\, blobs in
 * lower-case hex.  A TS_NONE value prints as nothing.
 */
void val_print(FILE *f, const ts_value *v);

struct jbuf;

/* val_print's text appended to b; escape 0 leaves strings as they are
 * (for csv, which quotes instead). */
void val_text(struct jbuf *b, const ts_value *v, int escape);

#endif /* TSSTORE_COMMON_VALUE_H */
