/*
 * promwrite.h -- Prometheus remote write 1.0 into tsstore tables
 * (promwrite.c), for POST /api/v1/write: a snappy-compressed protobuf
 * WriteRequest (wire/remote.proto), each series mapped as
 * tsstore-http(7) says -- its metric name a table, its other labels the
 * string key columns before ts, its samples rows with a double column
 * "value".  The body is decoded by wire/promwrite.h; tables, handles, the
 * name rule and the counters are the line protocol's (ingest.h).
 */
#ifndef TSSTORE_DAEMON_PROMWRITE_H
#define TSSTORE_DAEMON_PROMWRITE_H

#include <stddef.h>

#include "ingest.h"
#include "wire/promwrite.h"

/* The column that holds a sample's value. */
#define TSD_PROM_VALUE "value"

/*
 * tsd_prom_write -- decode and store one remote write body
 * body[0..len): snappy block format (at most max_decoded bytes once
 * decoded), then a WriteRequest.  Every series whose labels fit its
 * table is stored (tables created on first write with the duplicate
 * policy ignore, so a resent batch is idempotent); a series that does
 * not fit is refused alone and counted, the others are stored anyway.
 * Any worker thread; calls may run at once.
 * res: what was done (always filled): points are the request's samples,
 * each of them stored, ignored (a key the table holds) or rejected
 * (refused, by_reason saying why) unless storing failed; first_bad_line
 * is the number (from 1) of the first refused series, error the message
 * of the response.
 * Returns the HTTP status to answer: 204 (all stored, or ignored as
 * duplicates); 400 for a body that is not snappy or not a WriteRequest
 * (nothing stored), or when some series were refused (the others are
 * stored); 413 when the decoded body would pass max_decoded (or its
 * unpacked message PW_UNPACK_FACTOR times its size); 500 when
 * storing failed (res->code says why: http.c answers 503 for what is
 * expected to pass, as for the line protocol; Prometheus retries 5xx).
 */
int tsd_prom_write(struct tsd_ingest *in, const char *body, size_t len, size_t max_decoded,
                   struct tsd_ingest_result *res);

#endif /* TSSTORE_DAEMON_PROMWRITE_H */
