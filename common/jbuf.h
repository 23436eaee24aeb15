/*
 * jbuf.h -- a growing byte buffer that text is appended to (jbuf.c):
 * request and response lines, values in their text and JSON forms.
 */
#ifndef TSSTORE_COMMON_JBUF_H
#define TSSTORE_COMMON_JBUF_H

#include <stddef.h>
#include <stdint.h>

/*
 * A growing byte buffer that JSON text is appended to.  A failed
 * allocation sets `failed` and makes every later append a no-op, so a
 * writer appends freely and checks once at the end.  Zero-filled is empty.
 */
struct jbuf {
	char *p;
	size_t len, cap;
	int failed;
};

/* Release the buffer's memory and make it empty. */
void jbuf_free(struct jbuf *b);

/* Make room for n more bytes; 0, or TS_ENOMEM (and `failed` set). */
int jbuf_reserve(struct jbuf *b, size_t n);

/* Append n bytes / a NUL-terminated string / one byte. */
void jbuf_put(struct jbuf *b, const void *p, size_t n);
void jbuf_puts(struct jbuf *b, const char *s);
void jbuf_putc(struct jbuf *b, char c);

/* Append printf-style text. */
void jbuf_printf(struct jbuf *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Append i in decimal. */
void jbuf_int(struct jbuf *b, int64_t i);

#endif /* TSSTORE_COMMON_JBUF_H */
