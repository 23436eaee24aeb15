/*
 * tsbsfile.c -- the TSBS cpu-only file of ../shared/data, read for the
 * workloads that replay it (ingest.c: tsstored against VictoriaMetrics;
 * tsbs.c: the TSBS query set against SQLite).
 *
 * The file is influx line protocol, gzip'd, one row per line:
 *
 *   cpu,hostname=host_0,region=...,service_environment=test \
 *       usage_user=99i,...,usage_guest_nice=38i 1795132800000000000
 *
 * ten tags (always present, in the order of bench_tsbs_tags), ten int64
 * fields (in the order of bench_tsbs_fields) and a ts in ns; rows come
 * ts-major (every host at one ts, then the next ts).  bench_tsbs_load
 * reads the whole file into one buffer through zcat and parses it in
 * place: the rows point into that buffer, which the caller frees after
 * them.  When the file cannot be read it says so on stderr once, with
 * where the file comes from: a clone of the repository alone has no
 * ../shared beside it (the tests use scripts/tsbs-slice.sh instead).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"

const char *const bench_tsbs_tags[BENCH_TSBS_TAGS] = {
	"hostname", "region", "datacenter", "rack", "os", "arch", "team", "service",
	"service_version", "service_environment"};
const char *const bench_tsbs_fields[BENCH_TSBS_FIELDS] = {
	"usage_user", "usage_system", "usage_idle", "usage_nice", "usage_iowait", "usage_irq",
	"usage_softirq", "usage_steal", "usage_guest", "usage_guest_nice"};

/* Split "cpu,t=v,... f=1i,... ts" in place into r; 0 or -1. */
static int parse_line(char *line, size_t len, bench_tsbs_row *r)
{
	char *sp1 = memchr(line, ' ', len), *sp2, *p;
	if (!sp1 || !(sp2 = memchr(sp1 + 1, ' ', len - (size_t)(sp1 + 1 - line))))
		return -1;
	r->line = line;
	r->len = len;
	p = memchr(line, ',', (size_t)(sp1 - line));
	for (int i = 0; i < BENCH_TSBS_TAGS; i++) {
		char *eq = p ? memchr(p, '=', (size_t)(sp1 - p)) : NULL, *end;
		if (!eq)
			return -1;
		end = memchr(eq, ',', (size_t)(sp1 - eq));
		end = end ? end : sp1;
		r->tag[i] = eq + 1;
		r->taglen[i] = (size_t)(end - eq - 1);
		p = end;
	}
	p = sp1 + 1;
	for (int i = 0; i < BENCH_TSBS_FIELDS; i++) {
		char *eq = memchr(p, '=', (size_t)(sp2 - p));
		if (!eq)
			return -1;
		r->field[i] = strtoll(eq + 1, &p, 10);
		p += *p == 'i';
		p += *p == ',';
	}
	r->ts = strtoll(sp2 + 1, NULL, 10);
	return 0;
}

/* Say why path gave no rows, and where the real file comes from. */
static void explain_missing(const char *path)
{
	if (access(path, R_OK) != 0)
		fprintf(stderr, "tsstore-bench: %s: %s\n", path, strerror(errno));
	else
		fprintf(stderr, "tsstore-bench: %s: no TSBS cpu-only rows in it\n", path);
	fprintf(stderr, "tsstore-bench: the ingest and tsbs workloads read TSBS cpu-only data "
	                "(influx lines, gzip'd): %s is the project's shared file, made by TSBS's "
	                "generator (bench/README.md); give another with --tsbs FILE, e.g. one "
	                "written by scripts/tsbs-slice.sh\n", TSBS_DEFAULT_PATH);
}

bench_tsbs_row *bench_tsbs_load(const char *path, size_t max, size_t *n, char **text)
{
	char cmd[4096];
	size_t cap = 1 << 16, len = 0, nrows = 0;
	FILE *f;
	*n = 0;
	*text = NULL;
	snprintf(cmd, sizeof cmd, "zcat '%s' 2>/dev/null", path);
	if (!(f = popen(cmd, "r")))
		return NULL;
	*text = malloc(cap);
	for (size_t got; *text && (got = fread(*text + len, 1, cap - len, f)) > 0;) {
		len += got;
		if (len == cap)
			*text = realloc(*text, cap *= 2);
	}
	if (pclose(f) != 0 || !*text || len == 0) {
		explain_missing(path);
		return NULL;
	}
	bench_tsbs_row *rows = malloc((len / 100 + 1) * sizeof *rows);
	for (char *p = *text, *end = *text + len, *nl; rows && p < end && nrows < max; p = nl + 1) {
		nl = memchr(p, '\n', (size_t)(end - p));
		nl = nl ? nl : end;
		if (nl > p && parse_line(p, (size_t)(nl - p), &rows[nrows]) == 0)
			nrows++;
	}
	*n = nrows;
	return rows;
}
