/*
 * jbuf.h -- a growing byte buffer that text is appended to (jbuf.c):
 * request and response lines, values in their text and JSON forms.
 */
#ifndef TSSTORE_COMMON_JBUF_H
#define TSSTORE_COMMON_JBUF_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/*
 * A growing byte buffer that JSON text is appended to.  A failed
 * allocation sets `failed` and makes every later append a no-op, so a
 * writer appends freely and checks once at the end (a failed buffer's
 * cap is its len: the inline appends below then always take the slow
 * path, which refuses).  Zero-filled is empty.
 */
struct jbuf {
	char *p;
	size_t len, cap;
	int failed;
};

/* Release the buffer's memory and make it empty. */
void jbuf_free(struct jbuf *b);

/* Mark the buffer failed (a writer's own allocation failed): every
 * later append is a no-op. */
static inline void jbuf_fail(struct jbuf *b)
{
	b->failed = 1;
	b->cap = b->len;
}

/* Make room for n more bytes; 0, or TS_ENOMEM (and `failed` set). */
int jbuf_reserve(struct jbuf *b, size_t n);

/* Append n bytes / a NUL-terminated string / one byte.  jbuf_put and
 * jbuf_putc are inline: a response of many rows makes millions of
 * them, and the room is nearly always there already. */
static inline void jbuf_put(struct jbuf *b, const void *p, size_t n)
{
	if (b->cap - b->len >= n || jbuf_reserve(b, n) == 0) {
		memcpy(b->p + b->len, p, n);
		b->len += n;
	}
}
void jbuf_puts(struct jbuf *b, const char *s);
static inline void jbuf_putc(struct jbuf *b, char c)
{
	if (b->cap > b->len || jbuf_reserve(b, 1) == 0)
		b->p[b->len++] = c;
}

/* Append printf-style text. */
void jbuf_printf(struct jbuf *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Append i in decimal. */
void jbuf_int(struct jbuf *b, int64_t i);

#endif /* TSSTORE_COMMON_JBUF_H */
