/*
 * jbuf.c -- a growing byte buffer (jbuf.h): what the programs append
 * request lines, responses and text forms of values to.
 *
 * An allocation that fails sets the buffer's `failed` and makes every
 * later append a no-op, so a writer appends freely and checks once at
 * the end.  JSON's own forms (strings, values, rows) are json.c's; value
 * text is value.c's; both build on this, which needs neither.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tsstore.h>

#include "jbuf.h"

void jbuf_free(struct jbuf *b)
{
	free(b->p);
	memset(b, 0, sizeof *b);
}

int jbuf_reserve(struct jbuf *b, size_t n)
{
	if (b->failed)
		return TS_ENOMEM;
	if (b->cap - b->len >= n)
		return 0;
	size_t cap = b->cap ? b->cap : 256;
	while (cap - b->len < n)
		cap *= 2;
	char *p = realloc(b->p, cap);
	if (!p) {
		jbuf_fail(b);
		return TS_ENOMEM;
	}
	b->p = p;
	b->cap = cap;
	return 0;
}

void jbuf_puts(struct jbuf *b, const char *s)
{
	jbuf_put(b, s, strlen(s));
}

void jbuf_printf(struct jbuf *b, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0 || jbuf_reserve(b, (size_t)n + 1) < 0)
		return;
	va_start(ap, fmt);
	vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
}

/* Decimal digits of an int64, fast: results are mostly integers. */
void jbuf_int(struct jbuf *b, int64_t i)
{
	/* two digits a division: answers are mostly 19-digit timestamps */
	static const char pairs[201] = "00010203040506070809101112131415161718192021222324"
	                               "25262728293031323334353637383940414243444546474849"
	                               "50515253545556575859606162636465666768697071727374"
	                               "75767778798081828384858687888990919293949596979899";
	char tmp[24], *e = tmp + sizeof tmp, *s = e;
	uint64_t u = i < 0 ? (uint64_t)0 - (uint64_t)i : (uint64_t)i;
	if (u >= 1000000000 && u % 1000000000 == 0) { /* a whole second in ns */
		s -= 9;
		memset(s, '0', 9);
		u /= 1000000000;
	}
	while (u >= 100) {
		unsigned r = (unsigned)(u % 100);
		u /= 100;
		*--s = pairs[2 * r + 1];
		*--s = pairs[2 * r];
	}
	if (u >= 10) {
		*--s = pairs[2 * u + 1];
		*--s = pairs[2 * u];
	} else
		*--s = (char)('0' + u);
	if (i < 0)
		*--s = '-';
	jbuf_put(b, s, (size_t)(e - s));
}
