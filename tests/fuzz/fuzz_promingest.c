/*
 * fuzz_promingest.c -- libFuzzer target for Prometheus remote write into
 * tables (daemon/promwrite.c) on a real database: the decoder
 * (wire/promwrite.c: snappy, then the protobuf-c code generated from
 * wire/remote.proto) and the mapping of series to tables.  fuzz_promwrite
 * fuzzes the decoder alone, much faster.
 * Input: a flag byte, then the rest.  Bit 0 clear: the rest is the body
 * as sent (snappy block format).  Bit 0 set: the rest is the WriteRequest
 * itself, which the target snappy-compresses first, so that mutations
 * reach the protobuf decoder and the mapping rather than dying in snappy.
 * Oracle: no crash, leak or undefined behaviour; the status is 204, 400
 * or 413, never 500 (no storage failure on a healthy database); 204 when
 * and only when nothing was refused; a body that does not decode stores
 * nothing; one that does accounts for every sample (points is the number
 * of samples the target's own unpacking counts, each stored, ignored or
 * rejected); and the tables hold exactly `stored` more rows afterwards.
 * The database (frozen clock, 1 MiB log segments) lives across inputs, so
 * later inputs meet the tables earlier ones made; it starts afresh every
 * 200 inputs.  Seed corpus: tests/fuzz/promingest/ (as tests/fuzz/promwrite/).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <snappy-c.h>

#include "fuzz_ingestdb.h"
#include "fuzz_prom.h"
#include "ingest.h"
#include "promwrite.h"
#include "remote.pb-c.h"

/* http-max-body of the target: decoded bodies past it are a 413. */
#define MAX_DECODED (1 << 20)

/* The samples of the WriteRequest in's body decodes to, or -1 when it
 * does not decode (the target's own unpacking, the oracle's count). */
static int64_t samples_of(const struct prom_input *in)
{
	ProtobufCMessage *msg;
	size_t n;
	int64_t samples = -1;
	if (prom_expected(in, &tsstore__remote__write_request__descriptor, &msg, &n) == 0) {
		const Tsstore__Remote__WriteRequest *wr = (const Tsstore__Remote__WriteRequest *)msg;
		samples = 0;
		for (size_t i = 0; i < wr->n_timeseries; i++)
			samples += (int64_t)wr->timeseries[i]->n_samples;
		protobuf_c_message_free_unpacked(msg, NULL);
	}
	return samples;
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);
int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
	struct tsd_ingest_result res;
	struct prom_input input;
	uint64_t before;
	if (!prom_input(data, size, &input))
		return 0;
	input.max = MAX_DECODED; /* bit 1 is not read here */
	fuzz_ingest_db("promingest");
	int64_t samples = samples_of(&input);
	before = fuzz_ingest_rows();
	int status = tsd_prom_write(in, input.body, input.len, MAX_DECODED, &res);
	uint64_t after = fuzz_ingest_rows();
	free(input.packed);
	if (status != 204 && status != 400 && status != 413) {
		fprintf(stderr, "status %d: %s\n", status, res.error);
		abort();
	}
	if ((status == 204) != (samples >= 0 && res.rejected == 0) ||
	    (status != 204 && !res.error[0]) ||
	    (samples < 0 && (res.points || res.stored || after != before)) ||
	    (samples >= 0 && (res.points != (uint64_t)samples ||
	                      res.stored + res.ignored + res.rejected != res.points)) ||
	    after != before + res.stored) {
		fprintf(stderr, "accounts differ: status %d, samples %lld; points %llu stored %llu "
		        "ignored %llu rejected %llu; rows %llu -> %llu: %s\n", status,
		        (long long)samples, (unsigned long long)res.points,
		        (unsigned long long)res.stored, (unsigned long long)res.ignored,
		        (unsigned long long)res.rejected, (unsigned long long)before,
		        (unsigned long long)after, res.error);
		abort();
	}
	return 0;
}
