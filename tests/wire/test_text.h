/*
 * test_text.h -- what the wire formats' tests (and the daemon's
 * test_ingest) share: put, which appends printf text to a rendering
 * (each test renders what a parser made of a line and compares it with
 * the exact text expected).
 */
#ifndef TSSTORE_TESTS_WIRE_TEST_TEXT_H
#define TSSTORE_TESTS_WIRE_TEST_TEXT_H

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* Append fmt's text to the string out (size bytes in all, truncated). */
static void put(char *out, size_t size, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void put(char *out, size_t size, const char *fmt, ...)
{
	size_t n = strlen(out);
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(out + n, size - n, fmt, ap);
	va_end(ap);
}

#endif /* TSSTORE_TESTS_WIRE_TEST_TEXT_H */
