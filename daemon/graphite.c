/*
 * graphite.c -- Graphite plaintext ("carbon") lines into tsstore tables,
 * the mapping of tsstore-http(7) and docs/ingest-mapping.md:
 *
 *   servers.web1.cpu.idle 97.5 1700000000
 *     -> table "servers" (the first component, by the ingest's name
 *        rule), key columns p1 = "web1", p2 = "cpu", p3 = "idle" (string),
 *        then ts = 1700000000 s; double column "value" = 97.5.
 *   servers.web1.load;dc=east 1.5 1700000000.25
 *     -> tags of tagged Graphite are key columns as well (dc = "east").
 *
 * Each line is parsed by wire/graphite.c (the Graphite syntax, the
 * timestamp in seconds -- integer or decimal, "-1" or none meaning now)
 * and mapped by its rule (gr_map); here the number of key columns the
 * path gives is checked against its table's key and the line rewritten
 * as a line protocol line ("servers,p1=web1,p2=cpu,p3=idle
 * value=97.5 1700000000000000000"); the lines of one call then go to
 * tsd_ingest_lines at once, which owns the tables, their creation
 * (duplicate policy ignore: a resent line is idempotent), the name rule
 * and the once-per-table log.  Nothing of the ingest is copied.
 *
 * Carbon cannot answer a client, so a refused line is only counted (by
 * reason) and its cause logged the first time it is met.
 */
#include <stdatomic.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graphite.h"

/* Buckets of the per-call table map. */
#define NBUCKETS 64
/* Bytes of a bad line quoted in the log. */
#define QUOTE_MAX 120

/* Causes logged once (bits of tsd_graphite.logged). */
enum cause {
	C_FIELDS,     /* not "path value [timestamp]" */
	C_PATH,       /* an empty component, or a tag not name=value */
	C_VALUE,      /* not a finite number */
	C_TIME,       /* not seconds */
	C_COMPONENTS, /* does not fit the table's key */
	C_STORE,      /* the ingest failed */
	C_SHORT,      /* too few components for its template's table name */
	C_LONG,       /* longer than line-max */
};

struct tsd_graphite {
	struct tsd_ingest *in;
	struct gr_templates *templates; /* NULL: the default rule */
	_Atomic uint64_t lines, stored, ignored, dropped, nan;
	_Atomic uint64_t rejected[TSD_GRAPHITE_NREASONS];
	_Atomic unsigned logged;
};

/* A table met in one call: how many key columns (besides ts) a line must
 * give.  Chained in a small hash map. */
struct tmap {
	struct tmap *next;
	int nkeys;
	char name[TS_NAME_MAX + 1];
};

struct call {
	struct tsd_graphite *g;
	struct tmap *bucket[NBUCKETS];
	struct jbuf lp;               /* the line protocol built */
	char *scratch;                /* gr_map's, scratch_cap bytes */
	size_t scratch_cap;
	int64_t now;
	uint64_t nan;                 /* lines of value nan, skipped */
	uint64_t rejected;
	uint64_t by_reason[TSD_GRAPHITE_NREASONS];
};

const char *tsd_graphite_reason_name(int reason)
{
	if (reason == TSD_GRAPHITE_COMPONENTS)
		return "components";
	return tsd_ingest_reason_name((enum tsd_ingest_reason)reason);
}

int tsd_graphite_open(struct tsd_ingest *in, const char *const *templates, int ntemplates,
                      struct tsd_graphite **out)
{
	struct tsd_graphite *g = calloc(1, sizeof *g);
	char err[256], msg[300];
	int rc;
	*out = NULL;
	if (!g)
		return TS_ENOMEM;
	g->in = in;
	if ((rc = gr_templates_parse(templates, ntemplates, &g->templates, err, sizeof err)) < 0) {
		snprintf(msg, sizeof msg, "graphite-template: %s", rc == -1 ? err : "out of memory");
		tsd_ingest_log(in, msg);
		free(g);
		return rc == -1 ? TS_EINVAL : TS_ENOMEM;
	}
	*out = g;
	return 0;
}

void tsd_graphite_close(struct tsd_graphite *g)
{
	if (g)
		gr_templates_free(g->templates);
	free(g);
}

/* Refuse line p[0..n) for reason, logging cause the first time. */
static void refuse(struct call *c, const char *p, size_t n, int reason, enum cause cause,
                   const char *why)
{
	unsigned bit = 1u << cause;
	c->rejected++;
	c->by_reason[reason]++;
	if (!(atomic_fetch_or(&c->g->logged, bit) & bit)) {
		char msg[QUOTE_MAX + 256];
		snprintf(msg, sizeof msg,
		         "graphite: refused line '%.*s'%s: %s (counted as %s; logged once)",
		         (int)(n > QUOTE_MAX ? QUOTE_MAX : n), p, n > QUOTE_MAX ? "..." : "", why,
		         tsd_graphite_reason_name(reason));
		tsd_ingest_log(c->g->in, msg);
	}
}

/* The number of key columns besides ts that lines of table name must
 * give: the table's, or (a table not made yet) the first line's. */
static int expected_keys(struct call *c, const char *name, int nkeys)
{
	unsigned h = 2166136261u;
	struct tmap *m;
	ts_table *t;
	ts_schema *s;
	for (const char *q = name; *q; q++)
		h = (h ^ (unsigned char)*q) * 16777619u;
	for (m = c->bucket[h % NBUCKETS]; m; m = m->next)
		if (strcmp(m->name, name) == 0)
			return m->nkeys;
	if (!(m = malloc(sizeof *m)))
		return nkeys; /* unchecked here; the ingest still checks tags */
	snprintf(m->name, sizeof m->name, "%s", name);
	m->nkeys = nkeys;
	if (tsd_ingest_table(c->g->in, name, &t) == 0 && ts_table_schema(t, &s) == 0) {
		m->nkeys = s->nkey - 1;
		ts_schema_free(s);
	}
	m->next = c->bucket[h % NBUCKETS];
	c->bucket[h % NBUCKETS] = m;
	return m->nkeys;
}

/* Append p[0..n) escaped as a line protocol tag key or value. */
static void put_escaped(struct jbuf *b, const char *p, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (p[i] == ',' || p[i] == '=' || p[i] == ' ' || p[i] == '\\')
			jbuf_putc(b, '\\');
		jbuf_putc(b, p[i]);
	}
}

/* The cause logged for a line gr_parse refused with code. */
static enum cause cause_of(int code)
{
	switch (code) {
	case GR_EFIELDS: return C_FIELDS;
	case GR_EVALUE: return C_VALUE;
	case GR_ETIME: return C_TIME;
	}
	return C_PATH;
}

/* Check and rewrite one line p[0..n) (no '\n', not empty). */
static void one_line(struct call *c, const char *p, size_t n)
{
	struct gr_line line;
	struct gr_mapped m;
	const char *why;
	char table[TS_NAME_MAX + 1];
	int rc;
	if ((rc = gr_parse(p, n, &line, &why)) < 0) {
		refuse(c, p, n, TSD_REJECT_SYNTAX, cause_of(rc), why);
		return;
	}
	if (isnan(line.value)) { /* no reading (carbon stores none either) */
		c->nan++;
		return;
	}
	if (line.path.len > c->scratch_cap) {
		char *s = realloc(c->scratch, line.path.len);
		if (!s) {
			refuse(c, p, n, TSD_REJECT_STORE, C_STORE, "out of memory");
			return;
		}
		c->scratch = s;
		c->scratch_cap = line.path.len;
	}
	if (gr_map(c->g->templates, &line, c->scratch, &m) == GR_ESHORT) {
		refuse(c, p, n, TSD_GRAPHITE_COMPONENTS, C_SHORT,
		       "the path has fewer components than its template needs for a table name");
		return;
	}
	tsd_ingest_name(m.table.p, m.table.len, 0, table);
	if (expected_keys(c, table, m.nkeys) != m.nkeys) {
		refuse(c, p, n, TSD_GRAPHITE_COMPONENTS, C_COMPONENTS,
		       "its components and tags are not as many as its table's key columns");
		return;
	}
	struct jbuf *b = &c->lp;
	jbuf_puts(b, table);
	for (int k = 0; k < m.nkeys; k++) {
		jbuf_putc(b, ',');
		put_escaped(b, m.keys[k].name.p, m.keys[k].name.len);
		jbuf_putc(b, '=');
		put_escaped(b, m.keys[k].value.p, m.keys[k].value.len);
	}
	jbuf_putc(b, ' ');
	put_escaped(b, m.field.p, m.field.len);
	jbuf_printf(b, "=%.17g %lld\n", line.value, (long long)(line.has_time ? line.ns : c->now));
}

uint64_t tsd_graphite_lines(struct tsd_graphite *g, const char *buf, size_t len)
{
	struct call c;
	struct tsd_ingest_result res;
	uint64_t lines = 0;
	size_t i = 0, n;
	const char *line;
	memset(&c, 0, sizeof c);
	c.g = g;
	c.now = tsd_ingest_now(g->in);
	while (gr_next(buf, len, &i, &line, &n)) {
		lines++;
		one_line(&c, line, n);
	}
	for (int k = 0; k < NBUCKETS; k++)
		while (c.bucket[k]) {
			struct tmap *m = c.bucket[k];
			c.bucket[k] = m->next;
			free(m);
		}
	atomic_fetch_add(&g->lines, lines);
	atomic_fetch_add(&g->nan, c.nan);
	if (c.lp.failed) {
		/* Out of memory for the rewritten lines: none is stored. */
		c.by_reason[TSD_REJECT_STORE] += lines - c.rejected;
		c.rejected = lines;
		tsd_ingest_log(g->in, "graphite: out of memory for a batch of lines");
	} else if (c.lp.len) {
		int rc = tsd_ingest_lines(g->in, c.lp.p, c.lp.len, LP_NS, &res);
		uint64_t lost;
		atomic_fetch_add(&g->stored, res.stored);
		atomic_fetch_add(&g->ignored, res.ignored);
		for (int r = 0; r < TSD_REJECT_NREASONS; r++)
			c.by_reason[r] += res.by_reason[r];
		c.rejected += res.rejected;
		/* Points the ingest neither stored nor refused: a storage failure. */
		lost = res.points - res.stored - res.ignored - res.rejected;
		if (res.points < res.stored + res.ignored + res.rejected)
			lost = 0;
		c.by_reason[TSD_REJECT_STORE] += lost;
		c.rejected += lost;
		if (rc < 0 && rc != TS_EINVAL &&
		    !(atomic_fetch_or(&g->logged, 1u << C_STORE) & (1u << C_STORE))) {
			char msg[TSD_INGEST_MESSAGE_MAX + 64];
			snprintf(msg, sizeof msg, "graphite: lines not stored: %s (logged once)",
			         res.error);
			tsd_ingest_log(g->in, msg);
		}
	}
	jbuf_free(&c.lp);
	free(c.scratch);
	for (int r = 0; r < TSD_GRAPHITE_NREASONS; r++)
		if (c.by_reason[r])
			atomic_fetch_add(&g->rejected[r], c.by_reason[r]);
	return c.rejected;
}

void tsd_graphite_too_long(struct tsd_graphite *g)
{
	struct call c;
	memset(&c, 0, sizeof c);
	c.g = g;
	atomic_fetch_add(&g->lines, 1);
	refuse(&c, "", 0, TSD_REJECT_SYNTAX, C_LONG, "a line longer than line-max, skipped");
	atomic_fetch_add(&g->rejected[TSD_REJECT_SYNTAX], 1);
}

void tsd_graphite_dropped(struct tsd_graphite *g)
{
	atomic_fetch_add(&g->dropped, 1);
}

void tsd_graphite_stats_get(struct tsd_graphite *g, struct tsd_graphite_stats *out)
{
	out->lines = atomic_load(&g->lines);
	out->rows_stored = atomic_load(&g->stored);
	out->duplicates_ignored = atomic_load(&g->ignored);
	out->datagrams_dropped = atomic_load(&g->dropped);
	out->nan_skipped = atomic_load(&g->nan);
	for (int r = 0; r < TSD_GRAPHITE_NREASONS; r++)
		out->rejected[r] = atomic_load(&g->rejected[r]);
}

void tsd_graphite_stats_json(struct tsd_graphite *g, struct jbuf *b)
{
	struct tsd_graphite_stats st;
	tsd_graphite_stats_get(g, &st);
	jbuf_printf(b, ",\"graphite\":{\"lines\":%llu,\"rows_stored\":%llu,"
	            "\"duplicates_ignored\":%llu,\"rejected\":{",
	            (unsigned long long)st.lines, (unsigned long long)st.rows_stored,
	            (unsigned long long)st.duplicates_ignored);
	for (int r = 0; r < TSD_GRAPHITE_NREASONS; r++)
		jbuf_printf(b, "%s\"%s\":%llu", r ? "," : "", tsd_graphite_reason_name(r),
		            (unsigned long long)st.rejected[r]);
	jbuf_printf(b, "},\"datagrams_dropped\":%llu,\"nan_skipped\":%llu}",
	            (unsigned long long)st.datagrams_dropped, (unsigned long long)st.nan_skipped);
}

/* One counter family of one sample. */
static void counter(struct jbuf *b, const char *name, const char *help, uint64_t v)
{
	jbuf_printf(b, "# HELP %s %s\n# TYPE %s counter\n%s %llu\n", name, help, name, name,
	            (unsigned long long)v);
}

void tsd_graphite_prometheus(struct tsd_graphite *g, struct jbuf *b)
{
	struct tsd_graphite_stats st;
	static const char rej[] = "tsstore_graphite_lines_rejected_total";
	tsd_graphite_stats_get(g, &st);
	counter(b, "tsstore_graphite_lines_total", "Graphite plaintext lines received.", st.lines);
	counter(b, "tsstore_graphite_rows_stored_total", "Rows stored from Graphite lines.",
	        st.rows_stored);
	counter(b, "tsstore_graphite_duplicates_ignored_total",
	        "Graphite lines whose key the table held already, ignored (duplicate policy ignore).",
	        st.duplicates_ignored);
	jbuf_printf(b, "# HELP %s Graphite lines refused, by reason.\n# TYPE %s counter\n", rej, rej);
	for (int r = 0; r < TSD_GRAPHITE_NREASONS; r++)
		jbuf_printf(b, "%s{reason=\"%s\"} %llu\n", rej, tsd_graphite_reason_name(r),
		            (unsigned long long)st.rejected[r]);
	counter(b, "tsstore_graphite_datagrams_dropped_total",
	        "Graphite UDP datagrams dropped because too many were waiting.",
	        st.datagrams_dropped);
	counter(b, "tsstore_graphite_lines_nan_total",
	        "Graphite lines whose value was nan (no reading), not stored.", st.nan_skipped);
}
