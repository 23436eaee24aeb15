/*
 * promread.h -- Prometheus remote read over tsstore tables (promread.c),
 * for POST /api/v1/read: each query of a snappy-compressed ReadRequest
 * (decoded by wire/promread.h) answered from the tables remote write
 * makes -- its metric name a table, its other labels the string key
 * columns before ts, the double column "value" -- as one ReadResponse
 * of type SAMPLES (tsstore-http(7), PROMETHEUS REMOTE READ).
 */
#ifndef TSSTORE_DAEMON_PROMREAD_H
#define TSSTORE_DAEMON_PROMREAD_H

#include <stddef.h>

#include <tsstore.h>

#include "wire/promread.h"

/* The default of remote-read-max-samples: the samples one request may
 * return, all its queries together.  A tenth of Prometheus's own
 * (--storage.remote.read-sample-limit, 5e7): a request takes about 65
 * bytes per sample at its peak (the samples gathered, the message, its
 * snappy copy and the response's), so 5,000,000 samples stay near
 * 330 MB. */
#define TSD_PROM_READ_MAX_SAMPLES_DEFAULT 5000000
/* The largest response before snappy, whatever the samples: labels are
 * the rest of it (a long label value repeated in many series). */
#define TSD_PROM_READ_MAX_RESPONSE ((size_t)1 << 30)

/* What a read did (always filled by tsd_prom_read). */
struct tsd_prom_read_result {
	int code;                    /* 0, or the TS_E* code of a storage failure */
	char error[512];             /* the message of a failed request */
	size_t queries, series, samples; /* what the response holds */
};

/*
 * tsd_prom_read -- answer one remote read body.
 * body[0..len): snappy block format (at most max_decoded bytes once
 * decoded), then a ReadRequest.  max_samples: the most samples the
 * response may hold (remote-read-max-samples).  Any worker thread; calls
 * may run at once.
 * out, outlen: on 200, the response body (snappy-compressed
 * ReadResponse, malloc'ed: the caller frees it); NULL otherwise.
 * Returns the HTTP status: 200; 400 for a body that is not snappy or not
 * a ReadRequest, a bad matcher (a regular expression POSIX does not
 * take, a type unknown), a client that takes no SAMPLES answer, or an
 * answer over max_samples samples ("exceeded sample limit (N)", as
 * Prometheus's own server says) or TSD_PROM_READ_MAX_RESPONSE bytes;
 * 413 when the decoded body would pass max_decoded; 500 when reading a
 * table failed or memory ran out (res->code says why, res->error what).
 */
int tsd_prom_read(ts_db *db, const char *body, size_t len, size_t max_decoded,
                  size_t max_samples, char **out, size_t *outlen,
                  struct tsd_prom_read_result *res);

#endif /* TSSTORE_DAEMON_PROMREAD_H */
