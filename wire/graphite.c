/*
 * graphite.c -- Graphite plaintext lines, parsed in place.
 *
 * A line is "path value [timestamp]" (fields separated by spaces or
 * tabs); the path is components separated by '.', then, in tagged
 * Graphite, ";name=value" tags:
 *
 *   servers.web1.cpu.idle 97.5 1700000000
 *   servers.web1.load;dc=east 1.5 1700000000.25
 *
 * This module owns that syntax and its limits (GR_*, graphite.h): a
 * component is never empty, a path has at most GR_COMPONENTS_MAX of them
 * and GR_TAGS_MAX tags, a tag has a name and a value (the value may hold
 * '='), the value is a finite number (strtod's syntax), the timestamp is
 * seconds since 1970, integer or decimal (to the nanosecond), "-1" or
 * none meaning now.  Nothing is copied: the parsed line points into the
 * text.  It also owns the default mapping of a line to a table (gr_map);
 * what the daemon does with it is daemon/graphite.c's.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graphite.h"

/* The longest value text strtod is given. */
#define NUMBER_MAX 63

int gr_next(const char *buf, size_t len, size_t *pos, const char **line, size_t *n)
{
	while (*pos < len) {
		size_t i = *pos;
		const char *nl = memchr(buf + i, '\n', len - i);
		size_t e = nl ? (size_t)(nl - buf) : len, k = e - i;
		*pos = nl ? e + 1 : len;
		if (k && buf[i + k - 1] == '\r')
			k--;
		if (k) {
			*line = buf + i;
			*n = k;
			return 1;
		}
	}
	return 0;
}

static int fail(const char **why, int code, const char *msg)
{
	if (why)
		*why = msg;
	return code;
}

/* Split p[0..n) at spaces and tabs into at most 3 fields; returns how
 * many there are (4 for more than 3). */
static int split_fields(const char *p, size_t n, struct gr_text f[3])
{
	int nf = 0;
	size_t i = 0;
	while (i < n) {
		while (i < n && (p[i] == ' ' || p[i] == '\t'))
			i++;
		if (i == n)
			break;
		if (nf == 3)
			return 4;
		f[nf].p = p + i;
		while (i < n && p[i] != ' ' && p[i] != '\t')
			i++;
		f[nf].len = (size_t)(p + i - f[nf].p);
		nf++;
	}
	return nf;
}

/* The value s: a finite number.  Returns 0 or -1. */
static int parse_value(struct gr_text s, double *v)
{
	char num[NUMBER_MAX + 1], *end;
	if (s.len > NUMBER_MAX)
		return -1;
	memcpy(num, s.p, s.len);
	num[s.len] = '\0';
	*v = strtod(num, &end);
	return *end || end == num || !isfinite(*v) ? -1 : 0;
}

/* Seconds s ("1700000000", "1700000000.25", "-1") into the line's time.
 * Returns 0 or -1. */
static int parse_time(struct gr_text s, struct gr_line *out)
{
	int64_t sec = 0, frac = 0;
	size_t i = 0, n = s.len;
	int digits = 0, fdigits = 0;
	if (n == 2 && s.p[0] == '-' && s.p[1] == '1')
		return 0; /* now */
	for (; i < n && s.p[i] >= '0' && s.p[i] <= '9'; i++, digits++) {
		if (sec > INT64_MAX / 1000000000 / 10)
			return -1;
		sec = sec * 10 + (s.p[i] - '0');
	}
	if (i < n && s.p[i] == '.')
		for (i++; i < n && s.p[i] >= '0' && s.p[i] <= '9'; i++, fdigits++)
			if (fdigits < 9)
				frac = frac * 10 + (s.p[i] - '0');
	if (i != n || (!digits && !fdigits) || sec > INT64_MAX / 1000000000 - 1)
		return -1;
	for (int k = fdigits; k < 9; k++)
		frac *= 10;
	out->has_time = 1;
	out->ns = sec * 1000000000 + frac;
	return 0;
}

/* The path: components, then tags.  Returns 0 or a gr_error. */
static int parse_path(struct gr_text path, struct gr_line *out, const char **why)
{
	const char *pend = path.p + path.len;
	const char *semi = memchr(path.p, ';', path.len);
	const char *name_end = semi ? semi : pend;
	for (const char *q = path.p; q <= name_end;) {
		const char *dot = memchr(q, '.', (size_t)(name_end - q));
		const char *e = dot ? dot : name_end;
		if (e == q)
			return fail(why, GR_EPATH, "the path has an empty component");
		if (out->ncomp == GR_COMPONENTS_MAX)
			return fail(why, GR_EPATH, "the path has more than 16 components");
		out->comp[out->ncomp++] = (struct gr_text){q, (size_t)(e - q)};
		q = e + 1;
	}
	for (const char *q = semi; q && q < pend;) {
		const char *t = q + 1, *e = memchr(t, ';', (size_t)(pend - t));
		const char *eq;
		if (!e)
			e = pend;
		eq = memchr(t, '=', (size_t)(e - t));
		if (!eq || eq == t || eq + 1 == e)
			return fail(why, GR_EPATH, "a tag is not name=value");
		if (out->ntags == GR_TAGS_MAX)
			return fail(why, GR_EPATH, "the path has more than 64 tags");
		out->tags[out->ntags++] = (struct gr_tag){{t, (size_t)(eq - t)},
		                                          {eq + 1, (size_t)(e - eq - 1)}};
		q = e;
	}
	return 0;
}

int gr_parse(const char *p, size_t n, struct gr_line *out, const char **why)
{
	struct gr_text f[3];
	int nf = split_fields(p, n, f);
	out->ncomp = out->ntags = 0;
	out->has_time = 0;
	out->ns = 0;
	if (nf < 2 || nf > 3)
		return fail(why, GR_EFIELDS, "want \"path value [timestamp]\"");
	if (parse_value(f[1], &out->value) < 0)
		return fail(why, GR_EVALUE, "the value is not a finite number");
	if (nf == 3 && parse_time(f[2], out) < 0)
		return fail(why, GR_ETIME,
		            "the timestamp is not seconds since 1970 (integer or decimal, or -1)");
	out->path = f[0];
	return parse_path(f[0], out, why);
}

/* The names of the default rule's key columns. */
static const char *const pname[GR_COMPONENTS_MAX] = {
	"p0", "p1", "p2", "p3", "p4", "p5", "p6", "p7", "p8", "p9", "p10", "p11", "p12", "p13",
	"p14", "p15",
};

int gr_map(const struct gr_line *line, struct gr_mapped *out)
{
	out->table = line->comp[0];
	out->nkeys = 0;
	for (int k = 1; k < line->ncomp; k++)
		out->keys[out->nkeys++] = (struct gr_key){{pname[k], strlen(pname[k])}, line->comp[k]};
	for (int k = 0; k < line->ntags; k++)
		out->keys[out->nkeys++] = (struct gr_key){line->tags[k].name, line->tags[k].value};
	out->field = (struct gr_text){GR_VALUE_COLUMN, strlen(GR_VALUE_COLUMN)};
	return 0;
}
