/*
 * value.h -- values as text, both ways, in the forms of DESIGN.md
 * sections 2 and 6 (see value.c).
 */
#ifndef TSSTORE_TOOLS_VALUE_H
#define TSSTORE_TOOLS_VALUE_H

#include <stddef.h>
#include <stdio.h>

#include <tsstore.h>

/*
 * cli_value_parse -- text as a value of type: int32 and int64 in decimal
 * (range checked), double as strtod reads it (the whole text), timestamp
 * as ts_time_parse reads it, string as is, blob as hex digits (an even
 * number of them, any case; "" is the empty blob).
 * out: receives the value; string and blob bytes are a private copy, to be
 * released with cli_value_free.  why: receives the reason on failure.
 * Returns 0; TS_EINVAL (malformed) or TS_ERANGE (out of range) with why
 * set; TS_ENOMEM.
 */
int cli_value_parse(ts_type type, const char *text, ts_value *out,
                    char *why, size_t whysz);

/*
 * cli_value_parsen -- cli_value_parse for the len bytes at text, which may
 * hold NUL bytes (text[len] must be NUL): a string keeps them; any other
 * type refuses them (TS_EINVAL), as no number, timestamp or hex digit is a
 * NUL.  Same results as cli_value_parse.
 */
int cli_value_parsen(ts_type type, const char *text, size_t len, ts_value *out,
                     char *why, size_t whysz);

/*
 * cli_value_base64 -- the len bytes at text as a blob in base64 (RFC 4648
 * section 4: the standard alphabet A-Z a-z 0-9 + /, padded with '=' to a
 * multiple of 4 characters; no blanks; "" is the empty blob).  This is the
 * form of blobs in JSON (DESIGN.md section 5); text forms use hex.
 * out: receives the blob, a private copy to release with cli_value_free.
 * Returns 0; TS_EINVAL with why set; TS_ENOMEM.
 */
int cli_value_base64(const char *text, size_t len, ts_value *out,
                     char *why, size_t whysz);

/* Release the bytes cli_value_parse copied (nothing for other values). */
void cli_value_free(ts_value *v);

/*
 * cli_value_print -- write v as text: integers in decimal, doubles in the
 * shortest form that reads back exactly, timestamps in RFC 3339 UTC,
 * strings with tab, newline and backslash escaped as \t \n \\, blobs in
 * lower-case hex.  A TS_NONE value prints as nothing.
 */
void cli_value_print(FILE *f, const ts_value *v);

#endif /* TSSTORE_TOOLS_VALUE_H */
