/*
 * fuzz_promwrite.c -- libFuzzer target for the remote write decoder
 * (wire/promwrite.c) alone: snappy, then the WriteRequest unpacked into
 * plain series.
 * Input: a flag byte, then the rest.  Bit 0 clear: the rest is the body
 * as sent (snappy block format).  Bit 0 set: the rest is the WriteRequest
 * itself, which the target snappy-compresses first, so that mutations
 * reach the protobuf decoder rather than dying in snappy.  Bit 1: a
 * max_decoded of 64 bytes instead of 1 MiB.
 * Oracle: no crash, leak or undefined behaviour; pw_decode succeeds
 * exactly when the target's own decoding (libsnappy, then protobuf-c with
 * its default allocator) does and the size fits, failing with the code
 * that says why and a message; what it gives is that decoding's message,
 * series by series, label by label (bytes), sample by sample (bits).
 * Seed corpus: tests/fuzz/promwrite/.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <snappy-c.h>

#include "fuzz_prom.h"
#include "remote.pb-c.h"
#include "wire/promwrite.h"

typedef Tsstore__Remote__WriteRequest WriteRequest;

/* Whether r is exactly wr. */
static int same_request(const struct pw_request *r, const WriteRequest *wr)
{
	size_t samples = 0;
	if (r->nseries != wr->n_timeseries)
		return 0;
	for (size_t i = 0; i < r->nseries; i++) {
		const struct pw_series *s = &r->series[i];
		const Tsstore__Remote__TimeSeries *t = wr->timeseries[i];
		if (s->nlabels != t->n_labels || s->nsamples != t->n_samples)
			return 0;
		for (size_t k = 0; k < s->nlabels; k++)
			if (!same_bytes(s->labels[k].name, s->labels[k].name_len, &t->labels[k]->name) ||
			    !same_bytes(s->labels[k].value, s->labels[k].value_len, &t->labels[k]->value))
				return 0;
		for (size_t k = 0; k < s->nsamples; k++)
			if (memcmp(&s->samples[k].value, &t->samples[k]->value, sizeof(double)) != 0 ||
			    s->samples[k].timestamp_ms != t->samples[k]->timestamp)
				return 0;
		samples += s->nsamples;
	}
	return samples == r->samples;
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);
int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
	struct prom_input in;
	struct pw_request r;
	ProtobufCMessage *msg;
	char err[PW_ERR_MAX] = "";
	size_t n = 0;
	if (!prom_input(data, size, &in))
		return 0;
	int want = prom_expected(&in, &tsstore__remote__write_request__descriptor, &msg, &n);
	const WriteRequest *wr = (const WriteRequest *)msg;
	int rc = pw_decode(in.body, in.len, in.max, &r, err, sizeof err);
	if (rc != want || (rc < 0 && !err[0]) || (rc == 0 && !same_request(&r, wr)) ||
	    (want != PW_ENOTSNAPPY && r.decoded_len != n)) {
		fprintf(stderr, "pw_decode: %d (%s), expected %d; decoded_len %zu, expected %zu\n",
		        rc, err, want, r.decoded_len, n);
		abort();
	}
	pw_request_free(&r);
	if (msg)
		protobuf_c_message_free_unpacked(msg, NULL);
	free(in.packed);
	return 0;
}
