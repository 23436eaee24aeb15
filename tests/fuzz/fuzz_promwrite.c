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

#include "remote.pb-c.h"
#include "wire/promwrite.h"

typedef Tsstore__Remote__WriteRequest WriteRequest;

static int same_bytes(const char *p, size_t n, const ProtobufCBinaryData *b)
{
	return n == b->len && (n == 0 || memcmp(p, b->data, n) == 0);
}

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

/* The code pw_decode must give body[0..len), the reference decoding
 * (*wr, when it decodes) made by libsnappy and protobuf-c directly. */
static int expected(const char *body, size_t len, size_t max, WriteRequest **wr, size_t *n)
{
	char *buf;
	*wr = NULL;
	if (snappy_uncompressed_length(body, len, n) != SNAPPY_OK)
		return PW_ENOTSNAPPY;
	if (*n > max)
		return PW_ETOOBIG;
	if (!(buf = malloc(*n ? *n : 1)))
		abort();
	int rc = PW_EDAMAGED;
	if (snappy_uncompress(body, len, buf, n) == SNAPPY_OK) {
		*wr = tsstore__remote__write_request__unpack(NULL, *n, (const uint8_t *)buf);
		rc = *wr ? 0 : PW_EPROTO;
	}
	free(buf); /* protobuf-c's default unpack copies the bytes it keeps */
	return rc;
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);
int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
	struct pw_request r;
	WriteRequest *wr;
	char err[PW_ERR_MAX] = "", *packed = NULL;
	const char *body;
	size_t len, n = 0, max;
	if (size == 0)
		return 0;
	body = (const char *)data + 1;
	len = size - 1;
	max = data[0] & 2 ? 64 : (size_t)1 << 20;
	if (data[0] & 1) {
		size_t cap = snappy_max_compressed_length(len);
		if (!(packed = malloc(cap)) || snappy_compress(body, len, packed, &cap) != SNAPPY_OK)
			abort();
		body = packed;
		len = cap;
	}
	int want = expected(body, len, max, &wr, &n);
	int rc = pw_decode(body, len, max, &r, err, sizeof err);
	if (rc != want || (rc < 0 && !err[0]) || (rc == 0 && !same_request(&r, wr)) ||
	    (want != PW_ENOTSNAPPY && r.decoded_len != n)) {
		fprintf(stderr, "pw_decode: %d (%s), expected %d; decoded_len %zu, expected %zu\n",
		        rc, err, want, r.decoded_len, n);
		abort();
	}
	pw_request_free(&r);
	if (wr)
		tsstore__remote__write_request__free_unpacked(wr, NULL);
	free(packed);
	return 0;
}
