/*
 * fuzz_ingest.c -- libFuzzer target for the line protocol mapping
 * (daemon/ingest.c) on a real database: the input's first byte picks the
 * precision, the rest is a request body given to tsd_ingest_lines.
 * Oracle: no crash, leak or undefined behaviour; the call never fails as
 * a whole (no storage failure on a healthy database); it accounts for
 * every line -- the points it parsed are those lp_next gives, its syntax
 * refusals the lines lp_next refuses, and each point is stored, ignored
 * (a duplicate key) or refused -- and the tables hold exactly `stored`
 * more rows afterwards.
 * The database (frozen clock, 1 MiB log segments) lives across inputs, so
 * later inputs meet the tables and columns earlier ones made; it starts
 * afresh every 200 inputs.  Seed corpus: tests/fuzz/ingest/.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_ingestdb.h"
#include "ingest.h"

static struct lp_reader reader;

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);
int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
	struct tsd_ingest_result res;
	struct lp_point pt;
	uint64_t good = 0, bad = 0, before;
	int rc;
	if (size == 0)
		return 0;
	fuzz_ingest_db("ingest");
	enum lp_precision prec = (enum lp_precision)(data[0] % 6);
	const char *body = (const char *)data + 1;
	lp_reader_init(&reader, body, size - 1, prec);
	while ((rc = lp_next(&reader, &pt)) != 0)
		rc > 0 ? good++ : bad++;
	before = fuzz_ingest_rows();
	rc = tsd_ingest_lines(in, body, size - 1, prec, &res);
	if (rc != 0 && rc != TS_EINVAL) {
		fprintf(stderr, "storage failure %s: %s\n", ts_errname(rc), res.error);
		abort();
	}
	if (res.points != good || res.by_reason[TSD_REJECT_SYNTAX] != bad ||
	    res.stored + res.ignored + res.rejected - bad != res.points ||
	    (rc == 0) != (res.rejected == 0) ||
	    (res.rejected && (!res.first_bad_line || !res.error[0]))) {
		fprintf(stderr, "accounts differ: good %llu bad %llu; points %llu stored %llu rejected "
		        "%llu syntax %llu: %s\n", (unsigned long long)good, (unsigned long long)bad,
		        (unsigned long long)res.points, (unsigned long long)res.stored,
		        (unsigned long long)res.rejected,
		        (unsigned long long)res.by_reason[TSD_REJECT_SYNTAX], res.error);
		abort();
	}
	if (fuzz_ingest_rows() != before + res.stored) {
		fprintf(stderr, "stored %llu rows but the tables grew by %llu\n",
		        (unsigned long long)res.stored, (unsigned long long)(fuzz_ingest_rows() - before));
		abort();
	}
	return 0;
}
