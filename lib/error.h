/*
 * error.h -- recording the detailed message of a failure.
 *
 * Every failing library function returns a negative TS_E* code and, on the
 * way out, records a one-line message in a thread-local buffer that
 * ts_errmsg() returns.  ts__fail() does both in one expression:
 *
 *     if (n > TS_NAME_MAX)
 *         return ts__fail(TS_EINVAL, "name \"%s\" is too long", name);
 *
 * The same convention holds for internal (ts__) functions and the static
 * helpers behind them: a function that can fail returns 0 (or a count)
 * on success and a negative TS_E* code on failure -- never -errno, never
 * a bare -1 -- with its message recorded where the failure is best
 * described: ts__fail for the library's own checks, ts__fail_errno right
 * after the system call that failed (its errno, and a message naming the
 * file).  A caller then passes rc up as it is, adding where with
 * ts__context if that helps; it never has to turn a code into another.
 * Only functions that answer a question rather than do something -- an
 * index, a length, whether a number fits -- may return -1 for "none" or
 * "malformed", recording nothing, and say so where they are declared
 * (ts__schema_find, ts__key_prefix_len, textfmt.c's decimal); their
 * caller records the error when it is one.
 */
#ifndef TS_ERROR_H
#define TS_ERROR_H

#include "tsstore.h"

/* Record a printf-style message for code and return code. */
int ts__fail(int code, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Record "what: strerror(errno)" and return the TS_E* code for errno
 * (ENOSPC -> TS_ENOSPC, ENOMEM -> TS_ENOMEM, ENOENT -> TS_ENOENT, ...). */
int ts__fail_errno(int err, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Prepend "prefix: " to the current message (for adding context as an
 * error travels up) and return code. */
int ts__context(int code, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Clear the thread's message. */
void ts__clear_error(void);

#endif
