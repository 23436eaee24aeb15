/*
 * graphite.h -- Graphite plaintext lines into tsstore tables
 * (graphite.c), for tsstored's graphite: (TCP) and graphite-udp:
 * listeners: "path value timestamp" lines, the path's first component a
 * table, its other components string key columns p1, p2, ..., the value
 * a double column "value" -- or as the graphite-template settings say
 * (tsstore-http(7), docs/ingest-mapping.md).
 *
 * The rows go through the line protocol ingest (ingest.h): its tables,
 * name rule, creation rule (duplicate policy ignore) and once-per-table
 * log are shared, never copied.  The Graphite syntax and the mapping of
 * a path to table and key columns are wire/graphite.h's; graphite.c owns
 * the rule that a path fits its table's key, and its own counters.
 */
#ifndef TSSTORE_DAEMON_GRAPHITE_H
#define TSSTORE_DAEMON_GRAPHITE_H

#include <stddef.h>
#include <stdint.h>

#include "ingest.h"
#include "jbuf.h"
#include "wire/graphite.h"

/* The column that holds a line's value. */
#define TSD_GRAPHITE_VALUE "value"

/* Why a line was refused: the ingest's reasons (enum tsd_ingest_reason,
 * "syntax" being Graphite's syntax here), then this one. */
#define TSD_GRAPHITE_COMPONENTS TSD_REJECT_NREASONS /* path does not fit the table's key */
#define TSD_GRAPHITE_NREASONS (TSD_REJECT_NREASONS + 1)

/* The name of a reason: tsd_ingest_reason_name, or "components". */
const char *tsd_graphite_reason_name(int reason);

/* The counters since tsd_graphite_open. */
struct tsd_graphite_stats {
	uint64_t lines;                  /* lines received (not empty) */
	uint64_t rows_stored;
	uint64_t duplicates_ignored;     /* a key the table held already */
	uint64_t rejected[TSD_GRAPHITE_NREASONS];
	uint64_t datagrams_dropped;      /* UDP datagrams dropped while busy */
	uint64_t nan_skipped;            /* lines whose value was "nan", not stored */
};

struct tsd_graphite;

/* The Graphite state over the ingest in (which must outlive it), paths
 * mapped by templates[0..ntemplates) (wire/graphite.h; none: the default
 * rule).  Returns 0 with *out set, TS_EINVAL for a bad template (logged
 * through the ingest; tsd_config_finish has checked them), or TS_ENOMEM. */
int tsd_graphite_open(struct tsd_ingest *in, const char *const *templates, int ntemplates,
                      struct tsd_graphite **out);

/* Free it (no call running).  NULL allowed. */
void tsd_graphite_close(struct tsd_graphite *g);

/*
 * tsd_graphite_lines -- store the Graphite lines of buf[0..len) ('\n'
 * separated, a last line without one too; "\r\n" and empty lines
 * allowed) with one call of the ingest.  A bad line is refused alone:
 * counted by reason, its cause logged the first time it is met; the
 * good ones are stored.  Any worker thread; calls may run at once.
 * Returns the lines refused (0: all stored or ignored as duplicates).
 */
uint64_t tsd_graphite_lines(struct tsd_graphite *g, const char *buf, size_t len);

/* Count a line longer than line-max, skipped by a graphite: connection
 * (refused as syntax; logged the first time). */
void tsd_graphite_too_long(struct tsd_graphite *g);

/* Count a UDP datagram dropped because too many were waiting. */
void tsd_graphite_dropped(struct tsd_graphite *g);

/* A copy of the counters (each read atomically). */
void tsd_graphite_stats_get(struct tsd_graphite *g, struct tsd_graphite_stats *out);

/* Append ,"graphite":{"lines":N,"rows_stored":N,"duplicates_ignored":N,
 * "rejected":{"syntax":N,...,"components":N},"datagrams_dropped":N} to
 * the JSON object being written in b (the stats op). */
void tsd_graphite_stats_json(struct tsd_graphite *g, struct jbuf *b);

/* Append the tsstore_graphite_* families in Prometheus text format. */
void tsd_graphite_prometheus(struct tsd_graphite *g, struct jbuf *b);

#endif /* TSSTORE_DAEMON_GRAPHITE_H */
