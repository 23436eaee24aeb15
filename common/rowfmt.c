/*
 * rowfmt.c -- rows as tsv, csv and jsonl lines.
 *
 * Each form reads back through the admin command's input (tools/input.c)
 * to the same row: tsv and csv start with a header line of column names,
 * timestamps are RFC 3339 UTC and blobs hex (value.c's text forms); jsonl
 * lines are objects keyed by column name with values in the protocol's
 * JSON forms (json.c: timestamps as integer ns, blobs base64).  So
 * `tsstore dump` output is `tsstore load` input, and a query's tsv is an
 * insert's.
 *
 * Output is appended to a struct jbuf, not a FILE, so that a caller that
 * streams (the FUSE view filling a read buffer) can take it in pieces.
 */
#include <stdio.h>
#include <string.h>

#include "rowfmt.h"
#include "value.h"

int rowfmt_parse(const char *name, enum rowfmt *out)
{
	static const struct {
		const char *name;
		enum rowfmt f;
	} forms[] = {{"tsv", ROWFMT_TSV}, {"csv", ROWFMT_CSV}, {"jsonl", ROWFMT_JSONL}};
	for (size_t i = 0; i < sizeof forms / sizeof forms[0]; i++)
		if (strcmp(name, forms[i].name) == 0) {
			*out = forms[i].f;
			return 0;
		}
	return TS_EINVAL;
}

int rowfmt_from_path(const char *path, enum rowfmt *out)
{
	const char *slash = strrchr(path, '/'), *base = slash ? slash + 1 : path;
	const char *dot = strrchr(base, '.');
	return dot && dot != base ? rowfmt_parse(dot + 1, out) : TS_EINVAL;
}

/* A csv field: as is when it needs no quotes, else quoted with every
 * quote doubled.  A leading or trailing space is quoted too, as some
 * readers trim unquoted fields. */
static void csv_field(struct jbuf *b, const char *p, size_t n)
{
	int quote = n > 0 && (p[0] == ' ' || p[n - 1] == ' ');
	for (size_t i = 0; i < n && !quote; i++)
		quote = p[i] == ',' || p[i] == '"' || p[i] == '\n' || p[i] == '\r';
	if (!quote) {
		jbuf_put(b, p, n);
		return;
	}
	jbuf_putc(b, '"');
	size_t run = 0;
	for (size_t i = 0; i < n; i++)
		if (p[i] == '"') {
			jbuf_put(b, p + run, i + 1 - run);
			jbuf_putc(b, '"');
			run = i + 1;
		}
	jbuf_put(b, p + run, n - run);
	jbuf_putc(b, '"');
}

/* A csv value: strings go through csv_field, other forms never need
 * quotes (numbers, RFC 3339, hex). */
static void csv_value(struct jbuf *b, const ts_value *v)
{
	if (v->type == TS_STRING)
		csv_field(b, v->v.s.ptr, v->v.s.len);
	else
		val_text(b, v, 0);
}

void rowfmt_header(struct jbuf *b, enum rowfmt f, const char *const *names, int n)
{
	if (f == ROWFMT_JSONL)
		return;
	for (int i = 0; i < n; i++) {
		if (i > 0)
			jbuf_putc(b, f == ROWFMT_TSV ? '\t' : ',');
		jbuf_puts(b, names[i]); /* names need no quotes or escapes */
	}
	jbuf_putc(b, '\n');
}

void rowfmt_row(struct jbuf *b, enum rowfmt f, const char *const *names, const ts_value *row,
                int n)
{
	switch (f) {
	case ROWFMT_TSV:
		for (int i = 0; i < n; i++) {
			if (i > 0)
				jbuf_putc(b, '\t');
			val_text(b, &row[i], 1);
		}
		break;
	case ROWFMT_CSV:
		for (int i = 0; i < n; i++) {
			if (i > 0)
				jbuf_putc(b, ',');
			csv_value(b, &row[i]);
		}
		break;
	case ROWFMT_JSONL:
		jbuf_putc(b, '{');
		for (int i = 0; i < n; i++) {
			if (i > 0)
				jbuf_putc(b, ',');
			jbuf_string(b, names[i], strlen(names[i]));
			jbuf_putc(b, ':');
			jbuf_value(b, &row[i]);
		}
		jbuf_putc(b, '}');
		break;
	}
	jbuf_putc(b, '\n');
}

/* ---- schema and counters ---- */

/* The 1-based position of column i in the primary key, or 0. */
static int key_position(const ts_schema *s, int i)
{
	for (int k = 0; k < s->nkey; k++)
		if (s->key[k] == i)
			return k + 1;
	return 0;
}

/* A TS_NONE default is the type's zero value: 0, 0.0 or the epoch; ""
 * and the empty blob, which print as nothing; "now" for ts. */
static void put_default(struct jbuf *b, const ts_column *c)
{
	ts_value zero = ts_none();
	if (c->dflt.type != TS_NONE) {
		val_text(b, &c->dflt, 1);
	} else if (c->type == TS_TIMESTAMP && strcmp(c->name, "ts") == 0) {
		jbuf_puts(b, "now");
	} else if (c->type != TS_STRING && c->type != TS_BLOB) {
		zero.type = c->type;
		val_text(b, &zero, 1);
	}
}

void rowfmt_schema(struct jbuf *b, const ts_schema *s)
{
	for (int i = 0; i < s->ncolumns; i++) {
		const ts_column *c = &s->columns[i];
		int pos = key_position(s, i);
		jbuf_printf(b, "%s\t%s\t", c->name, ts_type_name(c->type));
		put_default(b, c);
		if (pos > 0)
			jbuf_printf(b, "\t%d\n", pos);
		else
			jbuf_puts(b, "\t-\n");
	}
}

int rowfmt_stat_text(const ts_stat *st, const char **name, char *buf, size_t size)
{
	if (strcmp(st->name, "ttl_ns") == 0 && st->value >= 0 &&
	    ts_duration_format(st->value, buf, size) == 0) {
		*name = "ttl";
		return 1;
	}
	if (strcmp(st->name, "on_duplicate_policy") == 0 &&
	    snprintf(buf, size, "%s", ts_on_duplicate_name((ts_on_duplicate)st->value)) <
	        (int)size) {
		*name = "on_duplicate";
		return 1;
	}
	return 0;
}

int rowfmt_stat_duration(const char *stat, int64_t value, char *name, size_t namesz,
                         char *text, size_t size)
{
	static const struct {
		const char *name;
		double ns;
	} units[] = {{"d", 86400e9}, {"h", 3600e9}, {"m", 60e9}, {"s", 1e9}, {"ms", 1e6}, {"us", 1e3}};
	size_t len = strlen(stat), i = 0;
	const char *unit;
	/* the one instant among the counters: a time, not a duration */
	if (strcmp(stat, "commit_time_ns") == 0) {
		if (value <= 0 || size < TS_TIME_BUFSZ || len - 3 >= namesz ||
		    ts_time_format(value, text, size) < 0)
			return 0;
		memcpy(name, stat, len - 3);
		name[len - 3] = '\0';
		return 1;
	}
	if (len <= 3 || strcmp(stat + len - 3, "_ns") != 0 || strcmp(stat, "ttl_ns") == 0 ||
	    value < 0 || size < TS_DURATION_BUFSZ || len - 3 >= namesz)
		return 0;
	memcpy(name, stat, len - 3);
	name[len - 3] = '\0';
	if (ts_duration_format(value, text, size) < 0)
		return 0;
	unit = text + strspn(text, "0123456789");
	if (unit - text <= 4)
		return 1;
	while (i + 1 < sizeof units / sizeof units[0] && (double)value < units[i].ns)
		i++;
	snprintf(text, size, "%.4g%s", (double)value / units[i].ns, units[i].name);
	return 1;
}

void rowfmt_stat(struct jbuf *b, const char *indent, const char *name, int64_t value,
                 const char *text)
{
	jbuf_printf(b, "%s%s: ", indent, name);
	if (text)
		jbuf_puts(b, text);
	else
		jbuf_int(b, value);
	jbuf_putc(b, '\n');
}
