/*
 * influxq.h -- the InfluxQL executor behind GET|POST /query (influxq.c):
 * a q parsed by wire/influxql.c, run against the daemon's tables as the
 * line protocol ingest made them (docs/ingest-mapping.md), answered in
 * InfluxDB 1.x's JSON.  Only include/tsstore.h is used from the library.
 */
#ifndef TSSTORE_DAEMON_INFLUXQ_H
#define TSSTORE_DAEMON_INFLUXQ_H

#include <stddef.h>
#include <stdint.h>

#include <tsstore.h>

#include "jbuf.h"

/* The most accumulators (windows x columns, over all the output series)
 * one aggregate SELECT may hold: each is a few hundred bytes, so this
 * bounds a statement's memory near 600 MiB.  Beyond it the statement is
 * refused with InfluxDB's max-select-buckets words (unlimited there by
 * default, where InfluxDB streams). */
#define TSD_IQL_BUCKETS_MAX ((int64_t)2 * 1000 * 1000)
/* The most rows a raw SELECT collects before sorting them (each row a
 * few dozen bytes per column): past it, refused with InfluxDB's
 * max-select-point words. */
#define TSD_IQL_ROWS_MAX ((size_t)10 * 1000 * 1000)
/* The shortest GROUP BY time() interval answered from ts_aggregate
 * whatever the calls; shorter windows are answered from it only when
 * their answer cannot depend on where blocks are cut (no sum or mean of
 * floats: influxq.c, blocks_fit).  Measured on the TSBS 12-hour file
 * (10 s points), 1 h windows read 2.5x faster from block statistics for
 * one field of one host and 11x for 100 hosts. */
#define TSD_IQL_BLOCKS_MIN_INTERVAL ((int64_t)3600 * 1000000000)
/* The window cache's budget by default (query-cache-size): the bytes
 * its entries may take, all together (influxq.c, "The window cache"). */
#define TSD_IQL_CACHE_DEFAULT ((size_t)32 << 20)
/* chunk_size when chunked=true does not say (InfluxDB's). */
#define TSD_IQL_CHUNK_DEFAULT 10000

/*
 * tsd_influxq -- answer one /query request.
 * url_query: the URL's query string (NUL-terminated) or NULL; body[0..len):
 * a POST's application/x-www-form-urlencoded body (may be NULL, 0).  The
 * parameters q, db, epoch, chunked, chunk_size and pretty are read from
 * both (the body's win).  get: the request is a GET (a CREATE DATABASE
 * then carries InfluxDB's warning).  now: the request's arrival, ns
 * (now()).
 * out: receives the JSON body (always, also for errors).
 * Returns the HTTP status: 200 (statement errors are inside), 400 for a
 * missing q or a parse error ({"error":"error parsing query: ..."}), 500
 * when out of memory.
 */
int tsd_influxq(ts_db *db, const char *url_query, const char *body, size_t len, int get,
                int64_t now, struct jbuf *out);

/* The window cache's counters since the start (GET /metrics). */
struct tsd_iql_cache_stats {
	uint64_t hits;          /* lookups that served windows from an entry */
	uint64_t misses;        /* lookups that found none to serve */
	uint64_t invalidations; /* entries dropped: their table had moved on */
	uint64_t evictions;     /* entries dropped for room (least recently used) */
	uint64_t stores;        /* entries made (a query's windows, joined to its
	                         * shape's entry when they meet) */
	uint64_t bytes;         /* held now */
	uint64_t entries;       /* held now */
	uint64_t budget;        /* query-cache-size: the most bytes held */
};

/* tsd_influxq_cache_size -- set the window cache's budget in bytes (0:
 * off; entries beyond it are evicted now).  Any thread. */
void tsd_influxq_cache_size(size_t bytes);

/* tsd_influxq_cache_stats -- the window cache's counters into out.  Any
 * thread. */
void tsd_influxq_cache_stats(struct tsd_iql_cache_stats *out);

#endif /* TSSTORE_DAEMON_INFLUXQ_H */
