/*
 * tsbsgen.c -- the TSBS cpu-only query set (issue 27), written as TSBS's
 * own query generator writes it for InfluxDB (its influx "devops"
 * generator), with the random parameters drawn here from a seed, and,
 * for the types that have one, a PromQL equivalent for
 * VictoriaMetrics' /api/v1/query_range.
 *
 * The types and their parameters (TSBS's names):
 *
 *   single-groupby-M-H-h  max of the first M fields per minute, H random
 *                         hosts, a random window of h hours
 *   cpu-max-all-H         max of all 10 fields per hour, H hosts, 8 hours
 *   double-groupby-M      mean of the first M fields (all: 10) per hour
 *                         and hostname, every host, 12 hours
 *   high-cpu-1, -all      every column of the rows with usage_user > 90,
 *                         1 host or all, 12 hours
 *   lastpoint             the newest row of every host
 *   groupby-orderby-limit max(usage_user) per minute before the end of a
 *                         random 1-hour window, limit 5
 *
 * The text is TSBS's, byte for byte in its form: "SELECT max(usage_user),
 * max(usage_system) from cpu where (hostname = 'host_3' or hostname =
 * 'host_7') and time >= '2026-11-20T03:12:45Z' and time < '...' group by
 * time(1m)"; cpu-max-all joins its ten max() with "," alone; high-cpu-all
 * keeps the double space where TSBS leaves out the host clause; times in
 * RFC 3339, whole seconds, UTC.
 *
 * The scope (bench_tsbsq_scope) is what TSBS is told on its command line,
 * read here from the data instead: the hosts, in the order they first
 * appear (TSBS names host_0 .. host_{scale-1}, which is that order in
 * its files), and the time range [first ts, last ts + the reporting
 * interval).  Hosts are drawn as TSBS draws them: distinct, in the order
 * drawn.  A window is drawn as TSBS draws it, its start uniform in
 * [first, end - window), then cut to the second below (TSBS prints
 * RFC 3339 without fractions; both ends lose the same fraction).  Where
 * the window is as long as the data or longer (a 12-hour window over the
 * 12-hour file, any over the 10k-line prefix of tests/data), TSBS would
 * refuse; here the window is placed at random so that it covers all the
 * data instead: its start uniform in [end - window, first].
 *
 * Randomness: one xorshift64 sequence per type, seeded from the seed and
 * the type's name (splitmix64 of the seed xor the name's FNV-1a hash), so
 * that the queries of a type depend only on the seed, the scope and
 * their number, never on which other types were drawn.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"

#define NS_PER_SEC INT64_C(1000000000)
#define HOUR_NS (3600 * NS_PER_SEC)
#define TSBSQ_HOSTS_MAX 8 /* the most hosts a type names */

enum kind { SINGLE_GROUPBY, MAX_ALL, DOUBLE_GROUPBY, HIGH_CPU, LASTPOINT, GROUPBY_ORDERBY_LIMIT };

/* One type of the set. */
struct qtype {
	const char *name;
	enum kind kind;
	int metrics; /* fields aggregated, the first ones of bench_tsbs_fields */
	int hosts;   /* hosts named in the WHERE clause; 0: every host */
	int hours;   /* the window */
};

static const struct qtype types[BENCH_TSBSQ_TYPES] = {
	{"single-groupby-1-1-1", SINGLE_GROUPBY, 1, 1, 1},
	{"single-groupby-1-1-12", SINGLE_GROUPBY, 1, 1, 12},
	{"single-groupby-1-8-1", SINGLE_GROUPBY, 1, 8, 1},
	{"single-groupby-5-1-1", SINGLE_GROUPBY, 5, 1, 1},
	{"single-groupby-5-1-12", SINGLE_GROUPBY, 5, 1, 12},
	{"single-groupby-5-8-1", SINGLE_GROUPBY, 5, 8, 1},
	{"cpu-max-all-1", MAX_ALL, BENCH_TSBS_FIELDS, 1, 8},
	{"cpu-max-all-8", MAX_ALL, BENCH_TSBS_FIELDS, 8, 8},
	{"double-groupby-1", DOUBLE_GROUPBY, 1, 0, 12},
	{"double-groupby-5", DOUBLE_GROUPBY, 5, 0, 12},
	{"double-groupby-all", DOUBLE_GROUPBY, BENCH_TSBS_FIELDS, 0, 12},
	{"high-cpu-1", HIGH_CPU, 0, 1, 12},
	{"high-cpu-all", HIGH_CPU, 0, 0, 12},
	{"lastpoint", LASTPOINT, 0, 0, 0},
	{"groupby-orderby-limit", GROUPBY_ORDERBY_LIMIT, 1, 0, 1},
};

const char *bench_tsbsq_name(int type)
{
	return type >= 0 && type < BENCH_TSBSQ_TYPES ? types[type].name : NULL;
}

int bench_tsbsq_type(const char *name)
{
	for (int i = 0; i < BENCH_TSBSQ_TYPES; i++)
		if (strcmp(types[i].name, name) == 0)
			return i;
	return -1;
}

/* ---- the scope ---- */

/* A set of host names, open addressing on FNV-1a; the names also kept in
 * the order they came. */
struct hostset {
	char **slot;
	size_t cap;
	bench_tsbsq_scope *s;
};

static uint64_t fnv1a(const char *p, size_t n)
{
	uint64_t h = UINT64_C(0xcbf29ce484222325);
	for (size_t i = 0; i < n; i++)
		h = (h ^ (unsigned char)p[i]) * UINT64_C(0x100000001b3);
	return h;
}

/* Add name[0..n) unless it is in; 0, or -1 when out of memory. */
static int hostset_add(struct hostset *hs, const char *name, size_t n)
{
	if (hs->s->nhosts * 2 >= hs->cap) {
		struct hostset grown = {.cap = hs->cap ? hs->cap * 2 : 256, .s = hs->s};
		if (!(grown.slot = calloc(grown.cap, sizeof *grown.slot)))
			return -1;
		for (size_t i = 0; i < hs->cap; i++)
			if (hs->slot[i]) {
				size_t k = fnv1a(hs->slot[i], strlen(hs->slot[i])) & (grown.cap - 1);
				while (grown.slot[k])
					k = (k + 1) & (grown.cap - 1);
				grown.slot[k] = hs->slot[i];
			}
		free(hs->slot);
		*hs = grown;
	}
	size_t k = fnv1a(name, n) & (hs->cap - 1);
	for (; hs->slot[k]; k = (k + 1) & (hs->cap - 1))
		if (strlen(hs->slot[k]) == n && memcmp(hs->slot[k], name, n) == 0)
			return 0;
	char **grown = realloc(hs->s->host, (hs->s->nhosts + 1) * sizeof *grown);
	if (!grown || !(hs->slot[k] = strndup(name, n)))
		return -1;
	hs->s->host = grown;
	hs->s->host[hs->s->nhosts++] = hs->slot[k];
	return 0;
}

/* Take one point (its host and ts) into s: first/last ts, the second
 * largest distinct ts (in s->end_ns until bench_tsbsq_scope_end). */
static void scope_ts(bench_tsbsq_scope *s, int64_t ts)
{
	if (!s->npoints++) {
		s->start_ns = s->last_ns = ts;
		s->end_ns = INT64_MIN;
		return;
	}
	if (ts < s->start_ns)
		s->start_ns = ts;
	if (ts > s->last_ns) {
		s->end_ns = s->last_ns;
		s->last_ns = ts;
	} else if (ts < s->last_ns && ts > s->end_ns) {
		s->end_ns = ts;
	}
}

/* The data's end: its last ts plus the reporting interval (the last ts
 * less the one before it; 1 s when there is one ts). */
static void scope_end(bench_tsbsq_scope *s)
{
	int64_t step = s->end_ns == INT64_MIN ? NS_PER_SEC : s->last_ns - s->end_ns;
	s->end_ns = s->last_ns + step;
}

/* The hostname tag and the ts of one influx line; 0, or -1 when the line
 * has neither. */
static int line_host_ts(const char *line, size_t len, const char **host, size_t *hlen,
                        int64_t *ts)
{
	const char *sp = memchr(line, ' ', len), *h, *end, *last;
	if (!sp || !(h = memmem(line, (size_t)(sp - line), ",hostname=", 10)))
		return -1;
	h += 10;
	end = memchr(h, ',', (size_t)(sp - h));
	*host = h;
	*hlen = (size_t)((end ? end : sp) - h);
	if (!(last = memrchr(line, ' ', len)) || last == sp)
		return -1;
	last++;
	*ts = strtoll(last, NULL, 10);
	return 0;
}

int bench_tsbsq_scope_file(const char *path, bench_tsbsq_scope *s)
{
	char cmd[4200], *line = NULL;
	size_t cap = 0;
	ssize_t len;
	struct hostset hs = {.s = s};
	int rc = -1;
	memset(s, 0, sizeof *s);
	snprintf(cmd, sizeof cmd, "zcat '%s' 2>/dev/null", path);
	FILE *f = popen(cmd, "r");
	while (f && (len = getline(&line, &cap, f)) > 0) {
		const char *h;
		size_t hlen;
		int64_t ts;
		if (line_host_ts(line, (size_t)len - (line[len - 1] == '\n'), &h, &hlen, &ts) < 0)
			continue;
		if (hostset_add(&hs, h, hlen) < 0)
			goto out;
		scope_ts(s, ts);
	}
	if (f && pclose(f) == 0 && s->npoints > 0)
		rc = 0;
	f = NULL;
	if (rc == 0)
		scope_end(s);
	else if (access(path, R_OK) != 0)
		fprintf(stderr, "tsstore-bench: %s: %s\n", path, strerror(errno));
	else
		fprintf(stderr, "tsstore-bench: %s: no TSBS cpu-only lines in it\n", path);
out:
	if (f)
		pclose(f);
	free(line);
	free(hs.slot);
	if (rc < 0)
		bench_tsbsq_scope_free(s);
	return rc;
}

int bench_tsbsq_scope_rows(const bench_tsbs_row *rows, size_t n, bench_tsbsq_scope *s)
{
	struct hostset hs = {.s = s};
	int rc = 0;
	memset(s, 0, sizeof *s);
	for (size_t i = 0; i < n && rc == 0; i++) {
		rc = hostset_add(&hs, rows[i].tag[0], rows[i].taglen[0]);
		scope_ts(s, rows[i].ts);
	}
	free(hs.slot);
	if (rc < 0 || n == 0) {
		bench_tsbsq_scope_free(s);
		return -1;
	}
	scope_end(s);
	return 0;
}

void bench_tsbsq_scope_free(bench_tsbsq_scope *s)
{
	for (size_t i = 0; i < s->nhosts; i++)
		free(s->host[i]);
	free(s->host);
	memset(s, 0, sizeof *s);
}

/* ---- drawing ---- */

void bench_tsbsq_seed(uint64_t *state, int type, uint64_t seed)
{
	/* splitmix64's finaliser: seeds that differ in a bit differ all over */
	uint64_t z = seed ^ fnv1a(types[type].name, strlen(types[type].name));
	z += UINT64_C(0x9e3779b97f4a7c15);
	z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
	z ^= z >> 31;
	*state = z ? z : 1;
}

/* A number uniform in [0, n) (n > 0; the modulo's bias is below 2^-40
 * for the ranges here). */
static uint64_t draw(uint64_t *state, uint64_t n)
{
	return bench_xorshift(state) % n;
}

/* A window of window_ns: [*from, *to) in whole seconds (see the head
 * comment). */
static void draw_window(const bench_tsbsq_scope *s, uint64_t *state, int64_t window_ns,
                        int64_t *from, int64_t *to)
{
	int64_t lower = s->start_ns, upper = s->end_ns - window_ns, start;
	if (upper > lower)
		start = lower + (int64_t)draw(state, (uint64_t)(upper - lower));
	else
		start = upper + (int64_t)draw(state, (uint64_t)(lower - upper) + 1);
	start -= ((start % NS_PER_SEC) + NS_PER_SEC) % NS_PER_SEC;
	*from = start / NS_PER_SEC;
	*to = (start + window_ns) / NS_PER_SEC;
}

/* n distinct hosts of s, in the order drawn, into pick[]. */
static void draw_hosts(const bench_tsbsq_scope *s, uint64_t *state, int n, size_t *pick)
{
	for (int i = 0; i < n; i++) {
		int seen;
		do {
			pick[i] = (size_t)draw(state, s->nhosts);
			seen = 0;
			for (int k = 0; k < i; k++)
				seen |= pick[k] == pick[i];
		} while (seen);
	}
}

/* ---- writing ---- */

/* Append to q->influxql (or promql) as printf would. */
static void add(char *buf, size_t *len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void add(char *buf, size_t *len, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(buf + *len, BENCH_TSBSQ_MAX - *len, fmt, ap);
	va_end(ap);
	if (n > 0)
		*len += (size_t)n < BENCH_TSBSQ_MAX - *len ? (size_t)n : BENCH_TSBSQ_MAX - 1 - *len;
}

/* RFC 3339 of the epoch second t, UTC, in buf (21 bytes). */
static const char *rfc3339(int64_t t, char *buf, size_t size)
{
	time_t tt = (time_t)t;
	struct tm tm;
	gmtime_r(&tt, &tm);
	strftime(buf, size, "%Y-%m-%dT%H:%M:%SZ", &tm);
	return buf;
}

/* agg(f1)SEP agg(f2)... of the first m fields. */
static void add_aggs(char *buf, size_t *len, const char *agg, int m, const char *sep)
{
	for (int i = 0; i < m; i++)
		add(buf, len, "%s%s(%s)", i ? sep : "", agg, bench_tsbs_fields[i]);
}

/* "(hostname = 'a' or hostname = 'b')" */
static void add_hosts(char *buf, size_t *len, const bench_tsbsq_scope *s, const size_t *pick,
                      int n)
{
	add(buf, len, "(");
	for (int i = 0; i < n; i++)
		add(buf, len, "%shostname = '%s'", i ? " or " : "", s->host[pick[i]]);
	add(buf, len, ")");
}

/* The PromQL selector of the first m fields' metrics (cpu_FIELD) and,
 * when n > 0, of the hosts pick[0..n). */
static void add_selector(char *buf, size_t *len, int m, const bench_tsbsq_scope *s,
                         const size_t *pick, int n)
{
	if (m == 1) {
		add(buf, len, "cpu_%s", bench_tsbs_fields[0]);
		if (!n)
			return;
		add(buf, len, "{");
	} else {
		add(buf, len, "{__name__=~\"");
		for (int i = 0; i < m; i++)
			add(buf, len, "%scpu_%s", i ? "|" : "", bench_tsbs_fields[i]);
		add(buf, len, "\"%s", n ? "," : "");
	}
	if (n)
		add(buf, len, "hostname%s\"", n == 1 ? "=" : "=~");
	for (int i = 0; i < n; i++)
		add(buf, len, "%s%s", i ? "|" : "", s->host[pick[i]]);
	add(buf, len, "%s}", n ? "\"" : "");
}

/* The PromQL equivalent of a grouping type: the aggregate over the
 * window's steps of step_s seconds, per metric (and per host). */
static void promql(bench_tsbsq *q, const struct qtype *t, const bench_tsbsq_scope *s,
                   const size_t *pick, int64_t step_s)
{
	size_t len = 0;
	int by_host = t->kind == DOUBLE_GROUPBY;
	const char *fn = by_host ? "avg" : "max";
	add(q->promql, &len, "%s by (__name__%s) (%s_over_time(", fn, by_host ? ", hostname" : "", fn);
	add_selector(q->promql, &len, t->metrics, s, pick, t->hosts);
	add(q->promql, &len, "[%s]))", step_s == 60 ? "1m" : "1h");
	q->step_s = step_s;
	q->has_promql = 1;
}

void bench_tsbsq_make(const bench_tsbsq_scope *s, int type, uint64_t *state, bench_tsbsq *q)
{
	const struct qtype *t = &types[type];
	size_t pick[TSBSQ_HOSTS_MAX], len = 0;
	char a[32], b[32];
	int64_t from = 0, to = 0;
	memset(q, 0, sizeof *q);
	if (t->kind != LASTPOINT)
		draw_window(s, state, t->hours * HOUR_NS, &from, &to);
	if (t->hosts && t->kind != GROUPBY_ORDERBY_LIMIT)
		draw_hosts(s, state, t->hosts, pick);
	q->start_s = from;
	q->end_s = to;
	rfc3339(from, a, sizeof a);
	rfc3339(to, b, sizeof b);
	switch (t->kind) {
	case SINGLE_GROUPBY:
	case MAX_ALL:
		add(q->influxql, &len, "SELECT ");
		add_aggs(q->influxql, &len, "max", t->metrics, t->kind == MAX_ALL ? "," : ", ");
		add(q->influxql, &len, " from cpu where ");
		add_hosts(q->influxql, &len, s, pick, t->hosts);
		add(q->influxql, &len, " and time >= '%s' and time < '%s' group by time(%s)", a, b,
		    t->kind == MAX_ALL ? "1h" : "1m");
		promql(q, t, s, pick, t->kind == MAX_ALL ? 3600 : 60);
		break;
	case DOUBLE_GROUPBY:
		add(q->influxql, &len, "SELECT ");
		add_aggs(q->influxql, &len, "mean", t->metrics, ", ");
		add(q->influxql, &len,
		    " from cpu where time >= '%s' and time < '%s' group by time(1h),hostname", a, b);
		promql(q, t, s, pick, 3600);
		break;
	case HIGH_CPU:
		add(q->influxql, &len, "SELECT * from cpu where usage_user > 90.0 ");
		if (t->hosts) {
			add(q->influxql, &len, "and ");
			add_hosts(q->influxql, &len, s, pick, t->hosts);
		}
		add(q->influxql, &len, " and time >= '%s' and time < '%s'", a, b);
		break;
	case LASTPOINT:
		add(q->influxql, &len, "SELECT * from cpu group by \"hostname\" order by time desc limit 1");
		break;
	case GROUPBY_ORDERBY_LIMIT:
		add(q->influxql, &len,
		    "SELECT max(usage_user) from cpu WHERE time < '%s' group by time(1m) limit 5", b);
		break;
	}
}

int bench_tsbsq_has_promql(int type)
{
	enum kind k = types[type].kind;
	return k == SINGLE_GROUPBY || k == MAX_ALL || k == DOUBLE_GROUPBY;
}

/* Print n queries of type with seed: the InfluxQL alone (all: "TYPE
 * <TAB> " before it), or with promql "START END STEP <TAB> PROMQL" (the
 * types without an equivalent print nothing). */
static void print_type(const bench_tsbsq_scope *s, int type, size_t n, uint64_t seed,
                       int promql_too, int named)
{
	uint64_t state;
	bench_tsbsq q;
	bench_tsbsq_seed(&state, type, seed);
	for (size_t i = 0; i < n; i++) {
		bench_tsbsq_make(s, type, &state, &q);
		if (promql_too && !q.has_promql)
			continue;
		if (named)
			printf("%s\t", types[type].name);
		if (!promql_too)
			printf("%s\n", q.influxql);
		else
			printf("%lld %lld %lld\t%s\n", (long long)q.start_s, (long long)q.end_s,
			       (long long)q.step_s, q.promql);
	}
}

int bench_tsbsq_print(const char *path, const char *type, size_t n, uint64_t seed, int promql_too)
{
	bench_tsbsq_scope s;
	int t = bench_tsbsq_type(type);
	if (t < 0 && strcmp(type, "all") != 0) {
		fprintf(stderr, "tsstore-bench: %s: not a TSBS cpu-only query type; the types:", type);
		for (int i = 0; i < BENCH_TSBSQ_TYPES; i++)
			fprintf(stderr, " %s", types[i].name);
		fprintf(stderr, " (or all)\n");
		return -1;
	}
	if (bench_tsbsq_scope_file(path, &s) < 0)
		return -1;
	for (int i = 0; i < BENCH_TSBSQ_TYPES; i++)
		if (t < 0 || i == t)
			print_type(&s, i, n, seed, promql_too, t < 0);
	bench_tsbsq_scope_free(&s);
	return fflush(stdout) == 0 ? 0 : -1;
}
