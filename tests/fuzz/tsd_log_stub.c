/*
 * tsd_log_stub.c -- server.c's log for the fuzz targets that link the
 * daemon's request path (FUZZ_DAEMON_SRCS) without server.c: request.c
 * logs why a follow stream ended, link.c what a standby's link did.
 * Discarded: a fuzz run's output is libFuzzer's.
 */
#include "tsd.h"

void tsd_log(const char *fmt, ...)
{
	(void)fmt;
}
