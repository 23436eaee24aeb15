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
 * Each line is checked here (the Graphite syntax, the timestamp in
 * seconds -- integer or decimal, "-1" or none meaning now -- and the
 * number of key columns the path gives against its table's key) and
 * rewritten as a line protocol line ("servers,p1=web1,p2=cpu,p3=idle
 * value=97.5 1700000000000000000"); the lines of one call then go to
 * tsd_ingest_lines at once, which owns the tables, their creation
 * (duplicate policy ignore: a resent line is idempotent), the name rule
 * and the once-per-table log.  Nothing of the ingest is copied.
 *
 * Carbon cannot answer a client, so a refused line is only counted (by
 * reason) and its cause logged the first time it is met.
 */
#include <errno.h>
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graphite.h"

/* Key columns a path may give besides ts. */
#define KEY_MAX (TS_KEY_COLUMNS_MAX - 1)
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
	C_LONG,       /* longer than line-max */
};

struct tsd_graphite {
	struct tsd_ingest *in;
	_Atomic uint64_t lines, stored, ignored, dropped;
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
	int64_t now;
	uint64_t rejected;
	uint64_t by_reason[TSD_GRAPHITE_NREASONS];
};

const char *tsd_graphite_reason_name(int reason)
{
	if (reason == TSD_GRAPHITE_COMPONENTS)
		return "components";
	return tsd_ingest_reason_name((enum tsd_ingest_reason)reason);
}

int tsd_graphite_open(struct tsd_ingest *in, struct tsd_graphite **out)
{
	struct tsd_graphite *g = calloc(1, sizeof *g);
	*out = g;
	if (!g)
		return TS_ENOMEM;
	g->in = in;
	return 0;
}

void tsd_graphite_close(struct tsd_graphite *g)
{
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

/* Seconds s[0..n) ("1700000000", "1700000000.25", "-1") as ns into
 * *ns (now for -1).  Returns 0 or -1. */
static int parse_time(struct call *c, const char *s, size_t n, int64_t *ns)
{
	int64_t sec = 0, frac = 0;
	size_t i = 0;
	int digits = 0, fdigits = 0;
	if (n == 2 && s[0] == '-' && s[1] == '1') {
		*ns = c->now;
		return 0;
	}
	for (; i < n && s[i] >= '0' && s[i] <= '9'; i++, digits++) {
		if (sec > INT64_MAX / 1000000000 / 10)
			return -1;
		sec = sec * 10 + (s[i] - '0');
	}
	if (i < n && s[i] == '.') {
		for (i++; i < n && s[i] >= '0' && s[i] <= '9'; i++, fdigits++)
			if (fdigits < 9)
				frac = frac * 10 + (s[i] - '0');
	}
	if (i != n || (!digits && !fdigits) || sec > INT64_MAX / 1000000000 - 1)
		return -1;
	for (int k = fdigits; k < 9; k++)
		frac *= 10;
	*ns = sec * 1000000000 + frac;
	return 0;
}

/* Check and rewrite one line p[0..n) (no '\n', not empty). */
static void one_line(struct call *c, const char *p, size_t n)
{
	const char *f[4];
	size_t fl[4];
	int nf = 0;
	size_t i = 0;
	char table[TS_NAME_MAX + 1];
	int64_t ns;
	double v;
	char num[64];
	while (i < n) {
		while (i < n && (p[i] == ' ' || p[i] == '\t'))
			i++;
		if (i == n)
			break;
		if (nf == 4) {
			nf++;
			break;
		}
		f[nf] = p + i;
		while (i < n && p[i] != ' ' && p[i] != '\t')
			i++;
		fl[nf] = (size_t)(p + i - f[nf]);
		nf++;
	}
	if (nf < 2 || nf > 3) {
		refuse(c, p, n, TSD_REJECT_SYNTAX, C_FIELDS, "want \"path value [timestamp]\"");
		return;
	}
	/* The value: a finite number. */
	if (fl[1] >= sizeof num) {
		refuse(c, p, n, TSD_REJECT_SYNTAX, C_VALUE, "the value is not a finite number");
		return;
	}
	memcpy(num, f[1], fl[1]);
	num[fl[1]] = '\0';
	char *end;
	errno = 0;
	v = strtod(num, &end);
	if (*end || end == num || !isfinite(v)) {
		refuse(c, p, n, TSD_REJECT_SYNTAX, C_VALUE, "the value is not a finite number");
		return;
	}
	if (nf == 2)
		ns = c->now;
	else if (parse_time(c, f[2], fl[2], &ns) < 0) {
		refuse(c, p, n, TSD_REJECT_SYNTAX, C_TIME,
		       "the timestamp is not seconds since 1970 (integer or decimal, or -1)");
		return;
	}
	/* The path: components split at '.', then ";tag=value"s. */
	const char *path = f[0], *pend = f[0] + fl[0];
	const char *semi = memchr(path, ';', fl[0]);
	const char *name_end = semi ? semi : pend;
	const char *comp[KEY_MAX + 2];
	size_t cl[KEY_MAX + 2];
	int nc = 0, ntags = 0;
	for (const char *q = path; q <= name_end;) {
		const char *dot = memchr(q, '.', (size_t)(name_end - q));
		const char *e = dot ? dot : name_end;
		if (e == q || nc == KEY_MAX + 1) {
			refuse(c, p, n, TSD_REJECT_SYNTAX, C_PATH,
			       e == q ? "the path has an empty component"
			              : "the path has more than 16 components");
			return;
		}
		comp[nc] = q;
		cl[nc++] = (size_t)(e - q);
		q = e + 1;
	}
	for (const char *q = semi; q && q < pend;) {
		const char *t = q + 1, *e = memchr(t, ';', (size_t)(pend - t));
		const char *eq;
		if (!e)
			e = pend;
		eq = memchr(t, '=', (size_t)(e - t));
		if (!eq || eq == t || eq + 1 == e) {
			refuse(c, p, n, TSD_REJECT_SYNTAX, C_PATH, "a tag is not name=value");
			return;
		}
		ntags++;
		q = e;
	}
	tsd_ingest_name(comp[0], cl[0], 0, table);
	if (expected_keys(c, table, nc - 1 + ntags) != nc - 1 + ntags) {
		refuse(c, p, n, TSD_GRAPHITE_COMPONENTS, C_COMPONENTS,
		       "its components and tags are not as many as its table's key columns");
		return;
	}
	struct jbuf *b = &c->lp;
	jbuf_puts(b, table);
	for (int k = 1; k < nc; k++) {
		jbuf_printf(b, ",p%d=", k);
		put_escaped(b, comp[k], cl[k]);
	}
	for (const char *q = semi; q && q < pend;) {
		const char *t = q + 1, *e = memchr(t, ';', (size_t)(pend - t));
		const char *eq;
		if (!e)
			e = pend;
		eq = memchr(t, '=', (size_t)(e - t));
		jbuf_putc(b, ',');
		put_escaped(b, t, (size_t)(eq - t));
		jbuf_putc(b, '=');
		put_escaped(b, eq + 1, (size_t)(e - eq - 1));
		q = e;
	}
	jbuf_printf(b, " " TSD_GRAPHITE_VALUE "=%.17g %lld\n", v, (long long)ns);
}

uint64_t tsd_graphite_lines(struct tsd_graphite *g, const char *buf, size_t len)
{
	struct call c;
	struct tsd_ingest_result res;
	uint64_t lines = 0;
	size_t i = 0;
	memset(&c, 0, sizeof c);
	c.g = g;
	c.now = tsd_ingest_now(g->in);
	while (i < len) {
		const char *nl = memchr(buf + i, '\n', len - i);
		size_t e = nl ? (size_t)(nl - buf) : len, n = e - i;
		if (n && buf[i + n - 1] == '\r')
			n--;
		if (n) {
			lines++;
			one_line(&c, buf + i, n);
		}
		i = e + 1;
	}
	for (int k = 0; k < NBUCKETS; k++)
		while (c.bucket[k]) {
			struct tmap *m = c.bucket[k];
			c.bucket[k] = m->next;
			free(m);
		}
	atomic_fetch_add(&g->lines, lines);
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
	jbuf_printf(b, "},\"datagrams_dropped\":%llu}", (unsigned long long)st.datagrams_dropped);
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
}
