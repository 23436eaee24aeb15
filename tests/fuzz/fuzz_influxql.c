/*
 * fuzz_influxql.c -- libFuzzer target for the InfluxQL parser and printer
 * (wire/influxql.c).
 * Input: a q, given to iql_parse whole.
 * Oracle: no crash, leak or undefined behaviour; a refusal has one of the
 * codes of iql_error and a message ("error parsing query: ..." unless it
 * is IQL_EINVALID, which has InfluxDB's statement-error words alone); a
 * parse gives at least one statement unless the q is only blanks, comments
 * and ';'.  Each statement printed (iql_format) parses back to exactly one
 * statement with the same tree (iql_dump, which names every node and
 * member) and prints the same text; all of them printed joined by "; "
 * parse back to as many statements.  iql_format's and iql_dump's lengths
 * are those snprintf would give (checked with a buffer one byte short).
 * Seed corpus: tests/fuzz/influxql/ (the TSBS cpu-only queries and the
 * inputs of tests/wire/test_influxql.c).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wire/influxql.h"

/* The text fn writes for st, malloc'ed, its length checked against what a
 * buffer one byte short gets. */
static char *render(size_t (*fn)(const struct iql_stmt *, char *, size_t), const struct iql_stmt *st)
{
	size_t n = fn(st, NULL, 0);
	char *buf = malloc(n + 1), *shorter = malloc(n + 1);
	if (!buf || !shorter)
		abort();
	if (fn(st, buf, n + 1) != n || strlen(buf) != n)
		abort();
	if (n > 0 && (fn(st, shorter, n) != n || strlen(shorter) != n - 1 || memcmp(buf, shorter, n - 1)))
		abort();
	free(shorter);
	return buf;
}

static void check_refusal(int rc, const char *err)
{
	if (rc != IQL_ESYNTAX && rc != IQL_ETOOBIG && rc != IQL_EDEPTH && rc != IQL_ENOMEM &&
	    rc != IQL_EINVALID)
		abort();
	if (err[0] == '\0')
		abort();
	if (rc != IQL_EINVALID && strncmp(err, "error parsing query: ", 21) != 0)
		abort();
}

/* st printed parses back to one statement with the same tree and text. */
static void check_round_trip(const struct iql_stmt *st)
{
	char *text = render(iql_format, st), *dump = render(iql_dump, st), err[IQL_ERR_MAX];
	struct iql_query again;
	int rc = iql_parse(text, strlen(text), &again, err, sizeof err);
	if (rc != 0) {
		fprintf(stderr, "printed text refused: %s\n  text: %s\n", err, text);
		abort();
	}
	if (again.nstmts != 1)
		abort();
	char *text2 = render(iql_format, &again.stmts[0]), *dump2 = render(iql_dump, &again.stmts[0]);
	if (strcmp(dump, dump2) != 0 || strcmp(text, text2) != 0) {
		fprintf(stderr, "round trip differs:\n  %s\n  %s\n  %s\n  %s\n", text, text2, dump, dump2);
		abort();
	}
	free(text2);
	free(dump2);
	iql_query_free(&again);
	free(text);
	free(dump);
}

/* All statements printed, joined by "; ", parse back to as many. */
static void check_joined(const struct iql_query *q)
{
	size_t len = 0, n;
	char *all = NULL, err[IQL_ERR_MAX];
	struct iql_query again;
	for (size_t k = 0; k < q->nstmts; k++) {
		char *text = render(iql_format, &q->stmts[k]);
		n = strlen(text);
		if (!(all = realloc(all, len + n + 3)))
			abort();
		if (k)
			memcpy(all + len, "; ", 2), len += 2;
		memcpy(all + len, text, n);
		len += n;
		free(text);
	}
	int rc = iql_parse(all ? all : "", len, &again, err, sizeof err);
	if (rc == IQL_ETOOBIG) { /* printed longer than the input: may pass the bound */
		free(all);
		return;
	}
	if (rc != 0 || again.nstmts != q->nstmts)
		abort();
	iql_query_free(&again);
	free(all);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct iql_query q;
	char err[IQL_ERR_MAX];
	err[0] = '\0';
	int rc = iql_parse((const char *)data, size, &q, err, sizeof err);
	if (rc < 0) {
		check_refusal(rc, err);
		return 0;
	}
	if (rc != 0)
		abort();
	for (size_t k = 0; k < q.nstmts; k++)
		check_round_trip(&q.stmts[k]);
	check_joined(&q);
	iql_query_free(&q);
	return 0;
}
