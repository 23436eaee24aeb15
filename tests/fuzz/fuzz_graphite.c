/*
 * fuzz_graphite.c -- libFuzzer target for the Graphite plaintext parser
 * and its mapping (wire/graphite.c).
 * Input: a Graphite body, lines split by gr_next; a line "T SPEC" is a
 * template instead (gr_templates_parse), used for the lines after it.
 * Oracle: no crash, leak or undefined behaviour; gr_next gives the
 * non-empty lines in order, none holding '\n', each followed by '\n',
 * "\r\n" or the end (one '\r' dropped), and covers the body.  Each line
 * gr_parse accepts has 1 to GR_COMPONENTS_MAX non-empty components
 * without '.', ';' or blanks, tags with a name and a value, a finite
 * value or NAN ("nan"); written out again in canonical form ("a.b;t=v %.17g
 * seconds.nanoseconds", or no timestamp) it parses back to the same line;
 * gr_map names a table, a value column and key columns, none empty,
 * using no more scratch than the path's length (ASan: the scratch is
 * exactly that), or GR_ESHORT under a template.  A refused line or
 * template has a message.
 * Seed corpus: tests/fuzz/graphite/.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wire/graphite.h"

static int same_text(struct gr_text a, struct gr_text b)
{
	return a.len == b.len && memcmp(a.p, b.p, a.len) == 0;
}

static int no_blank(struct gr_text t, const char *also)
{
	for (size_t i = 0; i < t.len; i++)
		if (t.p[i] == ' ' || t.p[i] == '\t' || t.p[i] == '\n' ||
		    memchr(also, t.p[i], strlen(also)))
			return 0;
	return 1;
}

/* l written out again into out (malloc'ed); returns its length. */
static size_t canonical(const struct gr_line *l, char **out)
{
	size_t cap = l->path.len + 128, n;
	char *p = malloc(cap);
	if (!p)
		abort();
	memcpy(p, l->path.p, l->path.len);
	n = l->path.len;
	n += (size_t)snprintf(p + n, cap - n, " %.17g", l->value);
	if (l->has_time)
		n += (size_t)snprintf(p + n, cap - n, " %" PRId64 ".%09" PRId64, l->ns / 1000000000,
		                      l->ns % 1000000000);
	*out = p;
	return n;
}

/* Every byte of t, touched (ASan checks it is readable). */
static unsigned touch(struct gr_text t)
{
	unsigned h = 0;
	if (t.len == 0)
		abort();
	for (size_t i = 0; i < t.len; i++)
		h = h * 31 + (unsigned char)t.p[i];
	return h;
}

static void check_map(const struct gr_templates *t, const struct gr_line *l)
{
	struct gr_mapped m;
	char *scratch = malloc(l->path.len);
	unsigned h = 0;
	if (!scratch)
		abort();
	int rc = gr_map(t, l, scratch, &m);
	if (rc == GR_ESHORT && t) {
		free(scratch);
		return;
	}
	if (rc != 0 || m.nkeys < 0 || m.nkeys > GR_KEYS_MAX)
		abort();
	h += touch(m.table) + touch(m.field);
	for (int k = 0; k < m.nkeys; k++)
		h += touch(m.keys[k].name) + touch(m.keys[k].value);
	free(scratch);
	if (h == 1) /* keeps the reads */
		fprintf(stderr, " ");
}

static void check_line(const struct gr_templates *t, const char *line, size_t n)
{
	struct gr_line l, again;
	const char *why = NULL;
	char *text;
	if (gr_parse(line, n, &l, &why) < 0) {
		if (!why || !*why)
			abort();
		return;
	}
	check_map(t, &l);
	if (l.ncomp < 1 || l.ncomp > GR_COMPONENTS_MAX || l.ntags > GR_TAGS_MAX ||
	    (!isfinite(l.value) && !isnan(l.value)) || (l.has_time && l.ns < 0))
		abort();
	for (int k = 0; k < l.ncomp; k++)
		if (l.comp[k].len == 0 || !no_blank(l.comp[k], ".;"))
			abort();
	for (int k = 0; k < l.ntags; k++)
		if (!l.tags[k].name.len || !l.tags[k].value.len || !no_blank(l.tags[k].name, ";=") ||
		    !no_blank(l.tags[k].value, ";"))
			abort();
	size_t cn = canonical(&l, &text);
	if (gr_parse(text, cn, &again, &why) < 0 || !same_text(again.path, l.path) ||
	    again.ncomp != l.ncomp || again.ntags != l.ntags ||
	    memcmp(&again.value, &l.value, sizeof l.value) != 0 || again.has_time != l.has_time ||
	    (l.has_time && again.ns != l.ns)) {
		fprintf(stderr, "'%.*s' -> '%.*s' parses back otherwise\n", (int)n, line, (int)cn,
		        text);
		abort();
	}
	for (int k = 0; k < l.ncomp; k++)
		if (!same_text(again.comp[k], (struct gr_text){text + (l.comp[k].p - l.path.p),
		                                               l.comp[k].len}))
			abort();
	free(text);
}

/* *t replaced by the template p[0..n), when it parses. */
static void templates(struct gr_templates **t, const char *p, size_t n)
{
	char *spec = strndup(p, n), err[256] = "";
	struct gr_templates *next;
	if (!spec)
		abort();
	int rc = gr_templates_parse((const char *const *)&spec, 1, &next, err, sizeof err);
	if ((rc < 0) != (next == NULL) || (rc < 0 && !err[0]) || rc < -1)
		abort();
	if (rc == 0) {
		gr_templates_free(*t);
		*t = next;
	}
	free(spec);
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);
int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
	const char *buf = (const char *)data, *line;
	struct gr_templates *t = NULL;
	size_t pos = 0, n, seen = 0;
	while (gr_next(buf, size, &pos, &line, &n)) {
		size_t after = (size_t)(line - buf) + n;
		if (n == 0 || memchr(line, '\n', n) || line < buf + seen || after > size ||
		    !(after == size || buf[after] == '\n' ||
		      (buf[after] == '\r' && (after + 1 == size || buf[after + 1] == '\n'))))
			abort();
		seen = (size_t)(line - buf) + n;
		if (n >= 2 && line[0] == 'T' && line[1] == ' ')
			templates(&t, line + 2, n - 2);
		else
			check_line(t, line, n);
	}
	if (pos != size)
		abort();
	gr_templates_free(t);
	return 0;
}
