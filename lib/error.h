/*
 * error.h -- recording the detailed message of a failure.
 *
 * Every failing library function returns a negative TS_E* code and, on the
 * way out, records a one-line message in a thread-local buffer that
 * ts_errmsg() returns.  ts__fail() does both in one expression:
 *
 *     if (n > TS_NAME_MAX)
 *         return ts__fail(TS_EINVAL, "name \"%s\" is too long", name);
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
