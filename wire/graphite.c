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
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

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

/* The value s: a finite number, or "nan" in any case (NAN: what
 * collectd sends for a rate's first reading).  Returns 0 or -1. */
static int parse_value(struct gr_text s, double *v)
{
	char num[NUMBER_MAX + 1], *end;
	if (s.len == 3 && strncasecmp(s.p, "nan", 3) == 0) {
		*v = NAN;
		return 0;
	}
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

/* ---- Templates ---- */

enum part_kind { P_SKIP, P_MEASUREMENT, P_FIELD, P_TAG };

/* One part of a template: what its component is. */
struct part {
	enum part_kind kind;
	int rest;                    /* "measurement*", "field*": every component from here */
	int tag;                     /* P_TAG: its name, an index into tmpl.names */
};

/* One template.  text is the spec's copy, cut into NUL-terminated words:
 * the filter's globs and the TAG=VALUE values point into it. */
struct tmpl {
	char *text;
	const char *filter[GR_COMPONENTS_MAX];
	int nfilter;                 /* 0: no filter */
	struct part parts[GR_COMPONENTS_MAX];
	int nparts;
	char names[GR_COMPONENTS_MAX][GR_NAME_MAX + 1]; /* the tag parts' names, first seen first */
	int nnames;
	char dname[GR_COMPONENTS_MAX][GR_NAME_MAX + 1]; /* TAG=VALUE */
	const char *dvalue[GR_COMPONENTS_MAX];
	int ndefaults;
};

struct gr_templates {
	struct tmpl *t;
	int n;
	int dflt;                    /* the template without a filter; -1: none */
};

/* A template error: "template \"SPEC\": WHAT". */
static int bad(char *err, size_t errsize, const char *spec, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static int bad(char *err, size_t errsize, const char *spec, const char *fmt, ...)
{
	va_list ap;
	if (err && errsize) {
		int k = snprintf(err, errsize, "template \"%s\": ", spec);
		if (k >= 0 && (size_t)k < errsize) {
			va_start(ap, fmt);
			vsnprintf(err + k, errsize - (size_t)k, fmt, ap);
			va_end(ap);
		}
	}
	return -1;
}

/* Whether s is a name: [A-Za-z_][A-Za-z0-9_]*, 1 to GR_NAME_MAX bytes. */
static int is_name(const char *s)
{
	size_t n = strlen(s);
	if (n == 0 || n > GR_NAME_MAX || (s[0] >= '0' && s[0] <= '9'))
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!(s[i] == '_' || (s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
		      (s[i] >= '0' && s[i] <= '9')))
			return 0;
	return 1;
}

/* Cut w at each sep into at most max pieces (NUL-terminated in place).
 * Returns how many, or -1 for more than max. */
static int cut(char *w, char sep, char **piece, int max)
{
	int n = 0;
	for (;;) {
		if (n == max)
			return -1;
		piece[n++] = w;
		if (!(w = strchr(w, sep)))
			return n;
		*w++ = '\0';
	}
}

/* The template's parts from word w. */
static int parse_parts(struct tmpl *t, char *w, const char *spec, char *err, size_t errsize)
{
	char *part[GR_COMPONENTS_MAX];
	int has_measurement = 0, has_field = 0;
	if ((t->nparts = cut(w, '.', part, GR_COMPONENTS_MAX)) < 0)
		return bad(err, errsize, spec, "more than %d parts", GR_COMPONENTS_MAX);
	for (int i = 0; i < t->nparts; i++) {
		struct part *p = &t->parts[i];
		char *s = part[i];
		size_t n = strlen(s);
		if ((p->rest = n > 0 && s[n - 1] == '*'))
			s[--n] = '\0';
		if (p->rest && i != t->nparts - 1)
			return bad(err, errsize, spec, "\"%s*\" is not the last part", s);
		if (n == 0 && !p->rest) {
			p->kind = P_SKIP;
		} else if (strcmp(s, "measurement") == 0) {
			p->kind = P_MEASUREMENT;
			has_measurement = 1;
		} else if (strcmp(s, "field") == 0) {
			p->kind = P_FIELD;
			has_field = 1;
		} else if (p->rest) {
			return bad(err, errsize, spec, "\"%s*\": only measurement* and field* take the "
			           "remaining components", s);
		} else if (!is_name(s) || strcmp(s, "ts") == 0) {
			return bad(err, errsize, spec, "\"%s\" is not a tag name ([A-Za-z_][A-Za-z0-9_]*, "
			           "at most %d bytes, not ts)", s, GR_NAME_MAX);
		} else {
			p->kind = P_TAG;
			for (p->tag = 0; p->tag < t->nnames && strcmp(t->names[p->tag], s) != 0; p->tag++)
				;
			if (p->tag == t->nnames)
				memcpy(t->names[t->nnames++], s, n + 1);
		}
	}
	if (!has_measurement)
		return bad(err, errsize, spec, "no part is measurement or measurement*");
	for (int k = 0; !has_field && k < t->nnames; k++)
		if (strcmp(t->names[k], GR_VALUE_COLUMN) == 0)
			return bad(err, errsize, spec, "tag \"%s\" is the value column's name (the "
			           "template has no field part)", GR_VALUE_COLUMN);
	return 0;
}

/* The template's TAG=VALUE key columns from word w. */
static int parse_defaults(struct tmpl *t, char *w, const char *spec, char *err, size_t errsize)
{
	char *tag[GR_COMPONENTS_MAX];
	if ((t->ndefaults = cut(w, ',', tag, GR_COMPONENTS_MAX)) < 0)
		return bad(err, errsize, spec, "more than %d TAG=VALUE", GR_COMPONENTS_MAX);
	for (int i = 0; i < t->ndefaults; i++) {
		char *eq = strchr(tag[i], '=');
		if (!eq || eq[1] == '\0')
			return bad(err, errsize, spec, "\"%s\" is not TAG=VALUE", tag[i]);
		*eq = '\0';
		if (!is_name(tag[i]) || strcmp(tag[i], "ts") == 0)
			return bad(err, errsize, spec, "\"%s\" is not a tag name ([A-Za-z_][A-Za-z0-9_]*, "
			           "at most %d bytes, not ts)", tag[i], GR_NAME_MAX);
		for (int k = 0; k < i; k++)
			if (strcmp(t->dname[k], tag[i]) == 0)
				return bad(err, errsize, spec, "tag \"%s\" is given twice", tag[i]);
		memcpy(t->dname[i], tag[i], strlen(tag[i]) + 1);
		t->dvalue[i] = eq + 1;
	}
	return 0;
}

/* One template from spec into *t (t->text already NULL). */
static int parse_one(struct tmpl *t, const char *spec, char *err, size_t errsize)
{
	char *word[3];
	int nw = 0;
	if (!(t->text = strdup(spec)))
		return -2;
	/* words, at spaces and tabs */
	for (char *q = t->text; *q;) {
		while (*q == ' ' || *q == '\t')
			*q++ = '\0';
		if (!*q)
			break;
		if (nw == 3)
			return bad(err, errsize, spec, "more than three words (FILTER TEMPLATE TAGS)");
		word[nw++] = q;
		while (*q && *q != ' ' && *q != '\t')
			q++;
	}
	if (nw == 0)
		return bad(err, errsize, spec, "empty");
	int has_tags = nw == 3 || (nw == 2 && strchr(word[1], '='));
	int has_filter = nw == 3 || (nw == 2 && !has_tags);
	char *filter = has_filter ? word[0] : NULL;
	char *tmpl = word[has_filter];
	if (filter) {
		char *glob[GR_COMPONENTS_MAX];
		if ((t->nfilter = cut(filter, '.', glob, GR_COMPONENTS_MAX)) < 0)
			return bad(err, errsize, spec, "the filter has more than %d components",
			           GR_COMPONENTS_MAX);
		for (int i = 0; i < t->nfilter; i++) {
			if (!*glob[i])
				return bad(err, errsize, spec, "the filter has an empty component");
			t->filter[i] = glob[i];
		}
	}
	if (strchr(tmpl, '='))
		return bad(err, errsize, spec, "no template before the TAG=VALUEs");
	if (parse_parts(t, tmpl, spec, err, errsize) < 0)
		return -1;
	return has_tags ? parse_defaults(t, word[nw - 1], spec, err, errsize) : 0;
}

void gr_templates_free(struct gr_templates *t)
{
	if (!t)
		return;
	for (int i = 0; i < t->n; i++)
		free(t->t[i].text);
	free(t->t);
	free(t);
}

int gr_templates_parse(const char *const *specs, int n, struct gr_templates **out, char *err,
                       size_t errsize)
{
	struct gr_templates *t = NULL;
	int rc = 0;
	*out = NULL;
	if (n <= 0)
		return 0;
	if (!(t = calloc(1, sizeof *t)) || !(t->t = calloc((size_t)n, sizeof *t->t))) {
		rc = -2;
		goto out;
	}
	t->dflt = -1;
	for (; t->n < n; t->n++) {
		if ((rc = parse_one(&t->t[t->n], specs[t->n], err, errsize)) < 0) {
			t->n++; /* its text is freed with the others */
			goto out;
		}
		if (t->t[t->n].nfilter == 0 && t->dflt >= 0) {
			t->n++;
			rc = bad(err, errsize, specs[t->n - 1], "a second template without a filter "
			         "(the first: \"%s\")", specs[t->dflt]);
			goto out;
		}
		if (t->t[t->n].nfilter == 0)
			t->dflt = t->n;
	}
	*out = t;
	t = NULL;
out:
	if (rc == -2 && err && errsize)
		snprintf(err, errsize, "out of memory for the templates");
	gr_templates_free(t);
	return rc;
}

/* Whether component c matches glob g ('*': any text, none included). */
static int glob_match(const char *g, struct gr_text c)
{
	size_t i = 0, star_i = 0;
	const char *star = NULL;
	while (i < c.len) {
		if (*g == '*') {
			star = ++g;
			star_i = i;
		} else if (*g && *g == c.p[i]) {
			g++;
			i++;
		} else if (star) {
			g = star;
			i = ++star_i;
		} else {
			return 0;
		}
	}
	while (*g == '*')
		g++;
	return *g == '\0';
}

static int filter_match(const struct tmpl *t, const struct gr_line *l)
{
	if (t->nfilter == 0 || t->nfilter > l->ncomp)
		return 0;
	for (int i = 0; i < t->nfilter; i++)
		if (!glob_match(t->filter[i], l->comp[i]))
			return 0;
	return 1;
}

/* The components of l that t's parts of kind (and tag) name, joined with
 * '_' in *w when more than one (*w moves past them). */
static struct gr_text gather(const struct tmpl *t, const struct gr_line *l, enum part_kind kind,
                             int tag, char **w)
{
	struct gr_text out = {NULL, 0};
	char *start = *w;
	int count = 0;
	for (int i = 0; i < t->nparts && i < l->ncomp; i++) {
		const struct part *p = &t->parts[i];
		if (p->kind != kind || (kind == P_TAG && p->tag != tag))
			continue;
		for (int j = i; j < (p->rest ? l->ncomp : i + 1); j++, count++) {
			if (count == 0) {
				out = l->comp[j];
				continue;
			}
			if (count == 1) {
				memcpy(*w, out.p, out.len);
				*w += out.len;
			}
			*(*w)++ = '_';
			memcpy(*w, l->comp[j].p, l->comp[j].len);
			*w += l->comp[j].len;
			out = (struct gr_text){start, (size_t)(*w - start)};
		}
	}
	return out;
}

static struct gr_text text_of(const char *s)
{
	return (struct gr_text){s, strlen(s)};
}

static int same(struct gr_text a, struct gr_text b)
{
	return a.len == b.len && memcmp(a.p, b.p, a.len) == 0;
}

/* Map l by template t; *ndefaults: how many keys (the last) are its
 * TAG=VALUEs. */
static int map_template(const struct tmpl *t, const struct gr_line *l, char *w,
                        struct gr_mapped *out, int *ndefaults)
{
	out->nkeys = 0;
	out->table = gather(t, l, P_MEASUREMENT, 0, &w);
	if (out->table.len == 0)
		return GR_ESHORT;
	out->field = gather(t, l, P_FIELD, 0, &w);
	if (out->field.len == 0)
		out->field = text_of(GR_VALUE_COLUMN);
	for (int k = 0; k < t->nnames; k++) {
		struct gr_text v = gather(t, l, P_TAG, k, &w);
		if (v.len)
			out->keys[out->nkeys++] = (struct gr_key){text_of(t->names[k]), v};
	}
	for (int d = 0; d < t->ndefaults; d++) {
		int named = 0;
		for (int k = 0; k < out->nkeys && !named; k++)
			named = strcmp(out->keys[k].name.p, t->dname[d]) == 0;
		if (!named) {
			out->keys[out->nkeys++] = (struct gr_key){text_of(t->dname[d]),
			                                          text_of(t->dvalue[d])};
			(*ndefaults)++;
		}
	}
	return 0;
}

/* The names of the default rule's key columns. */
static const char *const pname[GR_COMPONENTS_MAX] = {
	"p0", "p1", "p2", "p3", "p4", "p5", "p6", "p7", "p8", "p9", "p10", "p11", "p12", "p13",
	"p14", "p15",
};

int gr_map(const struct gr_templates *t, const struct gr_line *line, char *scratch,
           struct gr_mapped *out)
{
	const struct tmpl *use = NULL;
	for (int i = 0; t && i < t->n && !use; i++)
		if (filter_match(&t->t[i], line))
			use = &t->t[i];
	if (!use && t && t->dflt >= 0)
		use = &t->t[t->dflt];
	int ndefaults = 0;           /* TAG=VALUE keys: the last of out->keys so far */
	if (use) {
		int rc = map_template(use, line, scratch, out, &ndefaults);
		if (rc < 0)
			return rc;
	} else {
		out->table = line->comp[0];
		out->nkeys = 0;
		for (int k = 1; k < line->ncomp; k++)
			out->keys[out->nkeys++] = (struct gr_key){text_of(pname[k]), line->comp[k]};
		out->field = text_of(GR_VALUE_COLUMN);
	}
	int first_default = out->nkeys - ndefaults;
	for (int k = 0; k < line->ntags; k++) {
		const struct gr_tag *tag = &line->tags[k];
		int d = first_default;
		while (d < first_default + ndefaults && !same(out->keys[d].name, tag->name))
			d++;
		if (d < first_default + ndefaults) /* the path's tag wins over TAG=VALUE */
			out->keys[d].value = tag->value;
		else
			out->keys[out->nkeys++] = (struct gr_key){tag->name, tag->value};
	}
	return 0;
}
