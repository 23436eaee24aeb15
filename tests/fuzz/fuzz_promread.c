/*
 * fuzz_promread.c -- libFuzzer target for the remote read codec
 * (wire/promread.c) alone: a ReadRequest decoded, and a ReadResponse
 * encoded from what was decoded.
 * Input: a flag byte, then the rest.  Bit 0 clear: the rest is the body
 * as sent (snappy block format).  Bit 0 set: the rest is the ReadRequest
 * itself, which the target snappy-compresses first, so that mutations
 * reach the protobuf decoder rather than dying in snappy.  Bit 1: a
 * max_decoded of 64 bytes instead of 1 MiB.
 * Oracle: no crash, leak or undefined behaviour; pr_decode succeeds
 * exactly when the target's own decoding (libsnappy, then protobuf-c with
 * its default allocator) does, the size fits, the accepted types are
 * none or hold SAMPLES and every matcher's type is 0 to 3 -- failing
 * otherwise with the code that says why and a message; what it gives is
 * that decoding's queries, matcher by matcher (bytes).  Then a response
 * made of the request (per query one series whose labels are its
 * matchers' names and values, whose samples are its start and end with
 * values the bits of both) is encoded by pr_encode, and protobuf-c reads
 * it back as exactly that, within what pr_series_bound allows.  Every matcher's
 * value goes to pr_regex_posix: a pattern ^(...)$ that regcomp may take
 * (and then runs), or a refusal with a message.
 * Seed corpus: tests/fuzz/promread/.
 */
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <snappy-c.h>

#include "fuzz_prom.h"
#include "remote.pb-c.h"
#include "wire/promread.h"

typedef Tsstore__Remote__ReadRequest ReadRequest;

/* Whether r is exactly rr. */
static int same_request(const struct pr_request *r, const ReadRequest *rr)
{
	if (r->nqueries != rr->n_queries)
		return 0;
	for (size_t i = 0; i < r->nqueries; i++) {
		const struct pr_query *q = &r->queries[i];
		const Tsstore__Remote__Query *t = rr->queries[i];
		if (q->start_ms != t->start_timestamp_ms || q->end_ms != t->end_timestamp_ms ||
		    q->nmatchers != t->n_matchers)
			return 0;
		for (size_t k = 0; k < q->nmatchers; k++)
			if ((int)q->matchers[k].type != (int)t->matchers[k]->type ||
			    !same_bytes(q->matchers[k].name, q->matchers[k].name_len, &t->matchers[k]->name) ||
			    !same_bytes(q->matchers[k].value, q->matchers[k].value_len,
			                &t->matchers[k]->value))
				return 0;
	}
	return 1;
}

/* The code pr_decode must give in's body, and the reference decoding
 * (*rr, when it decodes). */
static int expected(const struct prom_input *in, ReadRequest **rr, size_t *n)
{
	ProtobufCMessage *msg;
	int rc = prom_expected(in, &tsstore__remote__read_request__descriptor, &msg, n);
	*rr = (ReadRequest *)msg;
	if (rc < 0)
		return rc;
	int samples = (*rr)->n_accepted_response_types == 0;
	for (size_t i = 0; i < (*rr)->n_accepted_response_types; i++)
		samples |= (*rr)->accepted_response_types[i] == 0;
	if (!samples)
		return PR_ETYPES;
	for (size_t i = 0; i < (*rr)->n_queries; i++)
		for (size_t k = 0; k < (*rr)->queries[i]->n_matchers; k++)
			if ((int)(*rr)->queries[i]->matchers[k]->type < 0 ||
			    (int)(*rr)->queries[i]->matchers[k]->type > 3)
				return PR_EMATCHER;
	return 0;
}

/* Encode a response made of r, and check what protobuf-c reads of it. */
static void encode_check(const struct pr_request *r)
{
	struct pr_series *series = calloc(r->nqueries + 1, sizeof *series);
	struct pr_result *results = calloc(r->nqueries + 1, sizeof *results);
	struct pr_label *labels;
	struct pr_sample *samples = calloc(2 * r->nqueries + 1, sizeof *samples);
	size_t nl = 0, zlen, n;
	char *z, *raw;
	for (size_t i = 0; i < r->nqueries; i++)
		nl += r->queries[i].nmatchers;
	labels = calloc(nl + 1, sizeof *labels);
	if (!series || !results || !labels || !samples)
		abort();
	nl = 0;
	for (size_t i = 0; i < r->nqueries; i++) {
		const struct pr_query *q = &r->queries[i];
		for (size_t k = 0; k < q->nmatchers; k++)
			labels[nl + k] = (struct pr_label){q->matchers[k].name, q->matchers[k].name_len,
			                                   q->matchers[k].value, q->matchers[k].value_len};
		samples[2 * i].timestamp_ms = q->start_ms;
		memcpy(&samples[2 * i].value, &q->end_ms, sizeof(double));
		samples[2 * i + 1].timestamp_ms = q->end_ms;
		memcpy(&samples[2 * i + 1].value, &q->start_ms, sizeof(double));
		series[i] = (struct pr_series){labels + nl, q->nmatchers, samples + 2 * i, 2};
		results[i] = (struct pr_result){series + i, 1};
		nl += q->nmatchers;
	}
	size_t bound = 11 * r->nqueries;
	for (size_t i = 0; i < r->nqueries; i++)
		bound += pr_series_bound(&series[i]);
	if (pr_encode(results, r->nqueries, &z, &zlen) < 0 ||
	    snappy_uncompressed_length(z, zlen, &n) != SNAPPY_OK || n > bound ||
	    !(raw = malloc(n ? n : 1)) ||
	    snappy_uncompress(z, zlen, raw, &n) != SNAPPY_OK)
		abort();
	Tsstore__Remote__ReadResponse *rr =
		tsstore__remote__read_response__unpack(NULL, n, (const uint8_t *)raw);
	if (!rr || rr->n_results != r->nqueries)
		abort();
	for (size_t i = 0; i < r->nqueries; i++) {
		const Tsstore__Remote__QueryResult *qr = rr->results[i];
		if (qr->n_timeseries != 1 || qr->timeseries[0]->n_labels != series[i].nlabels ||
		    qr->timeseries[0]->n_samples != 2)
			abort();
		for (size_t k = 0; k < series[i].nlabels; k++)
			if (!same_bytes(series[i].labels[k].name, series[i].labels[k].name_len,
			                &qr->timeseries[0]->labels[k]->name) ||
			    !same_bytes(series[i].labels[k].value, series[i].labels[k].value_len,
			                &qr->timeseries[0]->labels[k]->value))
				abort();
		for (size_t k = 0; k < 2; k++)
			if (qr->timeseries[0]->samples[k]->timestamp != series[i].samples[k].timestamp_ms ||
			    memcmp(&qr->timeseries[0]->samples[k]->value, &series[i].samples[k].value,
			           sizeof(double)) != 0)
				abort();
	}
	tsstore__remote__read_response__free_unpacked(rr, NULL);
	free(raw);
	free(z);
	free(series);
	free(results);
	free(labels);
	free(samples);
}

/* Every matcher value as a regular expression: pr_regex_posix gives a
 * pattern "^(...)$" that regcomp compiles and runs, or refuses it with a
 * message. */
static void regex_check(const struct pr_request *r)
{
	for (size_t i = 0; i < r->nqueries; i++)
		for (size_t k = 0; k < r->queries[i].nmatchers; k++) {
			const struct pr_matcher *m = &r->queries[i].matchers[k];
			char *pat = NULL, err[PR_ERR_MAX] = "";
			regex_t re;
			int rc = pr_regex_posix(m->value_len ? m->value : "", m->value_len, &pat, err,
			                        sizeof err);
			if (rc < 0) {
				if (rc != PR_EREGEX || !err[0] || pat)
					abort();
				continue;
			}
			size_t n = strlen(pat);
			if (n < 4 || memcmp(pat, "^(", 2) != 0 || memcmp(pat + n - 2, ")$", 2) != 0)
				abort();
			if (regcomp(&re, pat, REG_EXTENDED | REG_NOSUB) == 0) {
				regexec(&re, "", 0, NULL, 0);
				regexec(&re, "a:9090\xc3\xa9", 0, NULL, 0);
				regfree(&re);
			}
			free(pat);
		}
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);
int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
	struct prom_input in;
	struct pr_request r;
	ReadRequest *rr;
	char err[PR_ERR_MAX] = "";
	size_t n = 0;
	if (!prom_input(data, size, &in))
		return 0;
	int want = expected(&in, &rr, &n);
	int rc = pr_decode(in.body, in.len, in.max, &r, err, sizeof err);
	if (rc != want || (rc < 0 && !err[0]) || (rc == 0 && !same_request(&r, rr)) ||
	    (want != PR_ENOTSNAPPY && r.decoded_len != n)) {
		fprintf(stderr, "pr_decode: %d (%s), expected %d; decoded_len %zu, expected %zu\n",
		        rc, err, want, r.decoded_len, n);
		abort();
	}
	if (rc == 0) {
		encode_check(&r);
		regex_check(&r);
	}
	pr_request_free(&r);
	if (rr)
		tsstore__remote__read_request__free_unpacked(rr, NULL);
	free(in.packed);
	return 0;
}
