/*
 * fuzz_lineproto.c -- libFuzzer target for the line protocol parser
 * (wire/lineproto.c).  The input's first byte picks the precision, the
 * rest is a request body.  Oracle: no crash, leak or undefined behaviour;
 * the reader counts every line of the body; and every point it gives,
 * written out again with the escapes of the grammar (numbers in their
 * canonical text, the timestamp in ns), parses back to the same point.
 * Seed corpus: tests/fuzz/lineproto/.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wire/lineproto.h"

struct out {
	char *p;
	size_t len, cap;
};

static void add(struct out *o, const char *p, size_t n)
{
	if (o->len + n + 1 > o->cap) {
		o->cap = (o->len + n + 1) * 2;
		o->p = realloc(o->p, o->cap);
		if (!o->p)
			abort();
	}
	memcpy(o->p + o->len, p, n);
	o->len += n;
	o->p[o->len] = '\0';
}

/* t unescaped, then escaped again with the characters of class esc. */
static void add_text(struct out *o, const struct lp_text *t, const char *special)
{
	char *buf = malloc(t->len + 1);
	size_t n = lp_unescape(t, buf);
	for (size_t i = 0; i < n; i++) {
		if (buf[i] == '\\' || (buf[i] && strchr(special, buf[i])))
			add(o, "\\", 1);
		add(o, buf + i, 1);
	}
	free(buf);
}

/* A point written out in canonical form: one line, no '\n'.  Returns 0,
 * or -1 when it holds a float out of range (nothing to compare). */
static int write_point(struct out *o, const struct lp_point *pt)
{
	char num[64];
	add_text(o, &pt->measurement, ", ");
	for (int i = 0; i < pt->ntags; i++) {
		add(o, ",", 1);
		add_text(o, &pt->tags[i].key, ",= ");
		add(o, "=", 1);
		add_text(o, &pt->tags[i].value, ",= ");
	}
	for (int i = 0; i < pt->nfields; i++) {
		const struct lp_field *f = &pt->fields[i];
		double d;
		add(o, i ? "," : " ", 1);
		add_text(o, &f->key, ",= ");
		add(o, "=", 1);
		switch (f->type) {
		case LP_FLOAT:
			if (lp_field_float(f, &d) < 0)
				return -1;
			snprintf(num, sizeof num, "%.17g", d);
			break;
		case LP_INT: snprintf(num, sizeof num, "%lldi", (long long)f->v.i); break;
		case LP_UINT: snprintf(num, sizeof num, "%lluu", (unsigned long long)f->v.u); break;
		case LP_BOOL: snprintf(num, sizeof num, "%s", f->v.b ? "true" : "false"); break;
		case LP_STRING:
			add(o, "\"", 1);
			add_text(o, &f->raw, "\"");
			add(o, "\"", 1);
			continue;
		}
		add(o, num, strlen(num));
	}
	if (pt->has_time) {
		snprintf(num, sizeof num, " %lld", (long long)pt->time);
		add(o, num, strlen(num));
	}
	return 0;
}

static struct lp_reader r1, r2;

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);
int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
	struct lp_point pt, back;
	uint64_t lines = 0;
	int rc;
	if (size == 0)
		return 0;
	enum lp_precision prec = (enum lp_precision)(data[0] % 6);
	const char *body = (const char *)data + 1;
	size_t len = size - 1;
	for (size_t i = 0; i < len; i++)
		lines += body[i] == '\n';
	lines += len && body[len - 1] != '\n';
	lp_reader_init(&r1, body, len, prec);
	while ((rc = lp_next(&r1, &pt)) != 0) {
		struct out a = {0}, b = {0};
		if (rc < 0) {
			if (!r1.why[0])
				abort(); /* a bad line always says why */
			continue;
		}
		if (write_point(&a, &pt) == 0) {
			lp_reader_init(&r2, a.p, a.len, LP_NS);
			if (lp_next(&r2, &back) != 1) {
				fprintf(stderr, "rewritten line refused: [%s]: %s\n", a.p, r2.why);
				abort();
			}
			if (write_point(&b, &back) != 0 || a.len != b.len || memcmp(a.p, b.p, a.len) != 0 ||
			    back.has_time != pt.has_time || (pt.has_time && back.time != pt.time)) {
				fprintf(stderr, "round trip differs:\n[%s]\n[%s]\n", a.p, b.p ? b.p : "");
				abort();
			}
		}
		free(a.p);
		free(b.p);
	}
	if (r1.line != lines) {
		fprintf(stderr, "counted %llu lines, the reader %llu\n", (unsigned long long)lines,
		        (unsigned long long)r1.line);
		abort();
	}
	return 0;
}
