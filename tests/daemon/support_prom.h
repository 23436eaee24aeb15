/*
 * support_prom.h -- what the remote write and read tests (test_promwrite,
 * test_promread) share: a series as they write it, its WriteRequest
 * packed by the code protoc-c generates from wire/remote.proto and
 * snappy-compressed as Prometheus sends it, and the POST of such a body
 * with Prometheus's headers, its response read back whole
 * (support_http.h).
 *
 * A header of static functions, not a support_*.c: those are linked into
 * every daemon test, and only these two link protobuf-c and snappy.  It
 * asserts with cmocka, as the tests do.
 */
#ifndef TSSTORE_TESTS_DAEMON_SUPPORT_PROM_H
#define TSSTORE_TESTS_DAEMON_SUPPORT_PROM_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <protobuf-c/protobuf-c.h>
#include <snappy-c.h>

#include "remote.pb-c.h"
#include "support_http.h"

/* The headers Prometheus sends with a remote write body (and with a
 * remote read one: READ_HEADERS). */
#define PROM_WRITE_HEADERS "Content-Encoding: snappy\r\nContent-Type: application/x-protobuf\r\n" \
	"X-Prometheus-Remote-Write-Version: 0.1.0\r\n"
#define PROM_READ_HEADERS "Content-Encoding: snappy\r\nContent-Type: application/x-protobuf\r\n" \
	"X-Prometheus-Remote-Read-Version: 0.1.0\r\n"

/* A series as the tests write it: labels as "name", "value" pairs
 * (NULL-terminated), samples as (ms, value) pairs. */
struct tseries {
	const char *const *labels;
	int nsamples;
	const int64_t *ms;
	const double *values;
};

/* p[0..n) snappy-compressed (malloc'ed, *len bytes). */
static inline char *snappy(const void *p, size_t n, size_t *len)
{
	*len = snappy_max_compressed_length(n);
	char *out = malloc(*len);
	assert_non_null(out);
	assert_int_equal(snappy_compress(p, n, out, len), SNAPPY_OK);
	return out;
}

/* The message m packed, then snappy-compressed (malloc'ed, *len bytes). */
static inline char *packed_snappy(const ProtobufCMessage *m, size_t *len)
{
	size_t plen = protobuf_c_message_get_packed_size(m);
	uint8_t *packed = malloc(plen ? plen : 1);
	assert_non_null(packed);
	assert_int_equal(protobuf_c_message_pack(m, packed), plen);
	char *body = snappy(packed, plen, len);
	free(packed);
	return body;
}

/* The body Prometheus would send for series[0..n) (malloc'ed, *len
 * bytes). */
static inline char *write_body(const struct tseries *series, int n, size_t *len)
{
	Tsstore__Remote__WriteRequest wr = TSSTORE__REMOTE__WRITE_REQUEST__INIT;
	Tsstore__Remote__TimeSeries *ts = calloc((size_t)n + 1, sizeof *ts);
	Tsstore__Remote__TimeSeries **tsp = calloc((size_t)n + 1, sizeof *tsp);
	assert_non_null(ts);
	assert_non_null(tsp);
	wr.n_timeseries = (size_t)n;
	wr.timeseries = tsp;
	for (int i = 0; i < n; i++) {
		int nl = 0;
		while (series[i].labels[2 * nl])
			nl++;
		Tsstore__Remote__TimeSeries init = TSSTORE__REMOTE__TIME_SERIES__INIT;
		ts[i] = init;
		tsp[i] = &ts[i];
		ts[i].n_labels = (size_t)nl;
		ts[i].labels = calloc((size_t)nl + 1, sizeof *ts[i].labels);
		for (int k = 0; k < nl; k++) {
			Tsstore__Remote__Label *l = malloc(sizeof *l);
			Tsstore__Remote__Label linit = TSSTORE__REMOTE__LABEL__INIT;
			*l = linit;
			l->name.data = (uint8_t *)series[i].labels[2 * k];
			l->name.len = strlen(series[i].labels[2 * k]);
			l->value.data = (uint8_t *)series[i].labels[2 * k + 1];
			l->value.len = strlen(series[i].labels[2 * k + 1]);
			ts[i].labels[k] = l;
		}
		ts[i].n_samples = (size_t)series[i].nsamples;
		ts[i].samples = calloc((size_t)series[i].nsamples + 1, sizeof *ts[i].samples);
		for (int k = 0; k < series[i].nsamples; k++) {
			Tsstore__Remote__Sample *s = malloc(sizeof *s);
			Tsstore__Remote__Sample sinit = TSSTORE__REMOTE__SAMPLE__INIT;
			*s = sinit;
			s->timestamp = series[i].ms[k];
			s->value = series[i].values[k];
			ts[i].samples[k] = s;
		}
	}
	char *body = packed_snappy(&wr.base, len);
	for (int i = 0; i < n; i++) {
		for (size_t k = 0; k < ts[i].n_labels; k++)
			free(ts[i].labels[k]);
		for (size_t k = 0; k < ts[i].n_samples; k++)
			free(ts[i].samples[k]);
		free(ts[i].labels);
		free(ts[i].samples);
	}
	free(ts);
	free(tsp);
	return body;
}

/* POST body[0..n) to path with the headers extra (PROM_WRITE_HEADERS,
 * PROM_READ_HEADERS) and read the response into *r (the caller frees
 * it); returns its status. */
static inline int prom_post(struct tsd_test_conn *c, const char *path, const char *extra,
                            const void *body, size_t n, struct tsd_test_response *r)
{
	assert_int_equal(tsd_test_post(c, path, extra, body, n), 0);
	assert_int_equal(tsd_test_read_http(c, TSD_TEST_TIMEOUT_MS, 0, r), TSD_TEST_LINE);
	return r->status;
}

#endif /* TSSTORE_TESTS_DAEMON_SUPPORT_PROM_H */
