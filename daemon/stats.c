/*
 * stats.c -- the daemon's own counters, reported by the "stats" op.
 *
 * Connections, requests and errors are counted where they happen: on the
 * loop thread (connections, finished requests) and on worker threads
 * (rows), so every counter is updated with relaxed atomic adds and read
 * the same way; a report is a set of counters each exact, not one instant.
 *
 * Latency per op is kept as a log-linear histogram: 4 buckets per power
 * of two of nanoseconds, so a percentile is known within 19%, in 256
 * counters per op whatever the number of requests.  The engine's own
 * counters (flush and merge backlog, stall time, write amplification)
 * come from ts_table_stats, per table (request.c).
 */
#include <stdio.h>
#include <string.h>

#include "tsd.h"

#define SUB_BITS 2
#define NBUCKETS (64 << SUB_BITS)
#define NCODES 32 /* -TS_E* codes are 1..21; one slot more for EAUTH */
#define CODE_AUTH (NCODES - 1)

static const char *const op_names[TSD_NOPS] = {
	[TSD_OP_PING] = "ping",
	[TSD_OP_TABLES] = "tables",
	[TSD_OP_CREATE] = "create",
	[TSD_OP_SCHEMA] = "schema",
	[TSD_OP_ALTER] = "alter",
	[TSD_OP_DROP] = "drop",
	[TSD_OP_INSERT] = "insert",
	[TSD_OP_QUERY] = "query",
	[TSD_OP_LATEST] = "latest",
	[TSD_OP_AGGREGATE] = "aggregate",
	[TSD_OP_FLUSH] = "flush",
	[TSD_OP_STATS] = "stats",
	[TSD_OP_CHECK] = "check",
	[TSD_OP_SNAPSHOT] = "snapshot",
	[TSD_OP_AUTH] = "auth",
};

static struct {
	uint64_t connections_accepted;
	uint64_t connections_open;
	uint64_t rows_in, rows_out;
	uint64_t request_memory, request_memory_peak, reads_paused_now, read_pauses;
	uint64_t connections_refused, connections_timed_out;
	uint64_t requests[TSD_NOPS];
	uint64_t errors[NCODES];
	uint64_t latency[TSD_NOPS][NBUCKETS];
} counters;

const char *tsd_op_name(enum tsd_op op)
{
	return op > TSD_OP_NONE && op < TSD_NOPS ? op_names[op] : NULL;
}

enum tsd_op tsd_op_parse(const char *name)
{
	for (int op = TSD_OP_NONE + 1; op < TSD_NOPS; op++)
		if (strcmp(op_names[op], name) == 0)
			return (enum tsd_op)op;
	return TSD_OP_NONE;
}

const char *tsd_errname(int code)
{
	return code == TSD_EAUTH ? "EAUTH" : ts_errname(code);
}

static void add(uint64_t *counter, uint64_t n)
{
	__atomic_fetch_add(counter, n, __ATOMIC_RELAXED);
}

static uint64_t get(const uint64_t *counter)
{
	return __atomic_load_n(counter, __ATOMIC_RELAXED);
}

void tsd_stats_connection(int opened)
{
	if (opened) {
		add(&counters.connections_accepted, 1);
		add(&counters.connections_open, 1);
	} else {
		__atomic_fetch_sub(&counters.connections_open, 1, __ATOMIC_RELAXED);
	}
}

/* The histogram bucket of ns: the power of two, then SUB_BITS bits
 * below the leading one. */
static int bucket_of(int64_t ns)
{
	uint64_t v = ns > 0 ? (uint64_t)ns : 1;
	int log = 63 - __builtin_clzll(v);
	if (log < SUB_BITS)
		return (int)v;
	return (log - SUB_BITS + 1) << SUB_BITS | (int)((v >> (log - SUB_BITS)) & ((1 << SUB_BITS) - 1));
}

/* The middle of bucket b, in ns. */
static double bucket_mid(int b)
{
	if (b < (1 << SUB_BITS))
		return b;
	int log = (b >> SUB_BITS) + SUB_BITS - 1;
	double lo = (double)((1ull << log) | ((uint64_t)(b & ((1 << SUB_BITS) - 1)) << (log - SUB_BITS)));
	return lo + (double)(1ull << (log - SUB_BITS)) / 2;
}

static int code_slot(int code)
{
	if (code == TSD_EAUTH)
		return CODE_AUTH;
	return -code > 0 && -code < CODE_AUTH ? -code : 0;
}

void tsd_stats_request(enum tsd_op op, int code, int64_t ns)
{
	add(&counters.requests[op], 1);
	if (code)
		add(&counters.errors[code_slot(code)], 1);
	add(&counters.latency[op][bucket_of(ns)], 1);
}

void tsd_stats_rows(uint64_t in, uint64_t out)
{
	if (in)
		add(&counters.rows_in, in);
	if (out)
		add(&counters.rows_out, out);
}

void tsd_stats_memory(size_t used, int paused)
{
	__atomic_store_n(&counters.request_memory, (uint64_t)used, __ATOMIC_RELAXED);
	__atomic_store_n(&counters.reads_paused_now, (uint64_t)paused, __ATOMIC_RELAXED);
	/* Only the loop thread writes these: a plain max is enough. */
	if (used > get(&counters.request_memory_peak))
		__atomic_store_n(&counters.request_memory_peak, (uint64_t)used, __ATOMIC_RELAXED);
}

void tsd_stats_pause(void) { add(&counters.read_pauses, 1); }
void tsd_stats_refused(void) { add(&counters.connections_refused, 1); }
void tsd_stats_timeout(void) { add(&counters.connections_timed_out, 1); }

/* The p-th percentile (0 < p < 1) of op's latency in µs, or -1 when no
 * request was timed. */
static double percentile(enum tsd_op op, double p)
{
	uint64_t total = 0, seen = 0;
	for (int b = 0; b < NBUCKETS; b++)
		total += get(&counters.latency[op][b]);
	if (total == 0)
		return -1;
	uint64_t rank = (uint64_t)(p * (double)total);
	for (int b = 0; b < NBUCKETS; b++) {
		seen += get(&counters.latency[op][b]);
		if (seen > rank)
			return bucket_mid(b) / 1000.0;
	}
	return bucket_mid(NBUCKETS - 1) / 1000.0;
}

static void put_object_start(struct jbuf *b, const char *name)
{
	jbuf_printf(b, ",\"%s\":{", name);
}

void tsd_stats_json(struct jbuf *b)
{
	int first;
	jbuf_printf(b, ",\"connections\":%llu,\"connections_accepted\":%llu",
	            (unsigned long long)get(&counters.connections_open),
	            (unsigned long long)get(&counters.connections_accepted));
	jbuf_printf(b, ",\"connections_refused\":%llu,\"connections_timed_out\":%llu",
	            (unsigned long long)get(&counters.connections_refused),
	            (unsigned long long)get(&counters.connections_timed_out));
	jbuf_printf(b, ",\"request_memory\":%llu,\"request_memory_peak\":%llu"
	            ",\"connections_paused\":%llu,\"read_pauses\":%llu",
	            (unsigned long long)get(&counters.request_memory),
	            (unsigned long long)get(&counters.request_memory_peak),
	            (unsigned long long)get(&counters.reads_paused_now),
	            (unsigned long long)get(&counters.read_pauses));
	jbuf_printf(b, ",\"rows_in\":%llu,\"rows_out\":%llu",
	            (unsigned long long)get(&counters.rows_in),
	            (unsigned long long)get(&counters.rows_out));
	put_object_start(b, "requests");
	first = 1;
	for (int op = 0; op < TSD_NOPS; op++) {
		uint64_t n = get(&counters.requests[op]);
		if (n == 0)
			continue;
		jbuf_printf(b, "%s\"%s\":%llu", first ? "" : ",",
		            op ? op_names[op] : "invalid", (unsigned long long)n);
		first = 0;
	}
	jbuf_putc(b, '}');
	put_object_start(b, "errors");
	first = 1;
	for (int slot = 1; slot < NCODES; slot++) {
		uint64_t n = get(&counters.errors[slot]);
		if (n == 0)
			continue;
		jbuf_printf(b, "%s\"%s\":%llu", first ? "" : ",",
		            tsd_errname(slot == CODE_AUTH ? TSD_EAUTH : -slot), (unsigned long long)n);
		first = 0;
	}
	jbuf_putc(b, '}');
	put_object_start(b, "latency_us");
	first = 1;
	for (int op = 1; op < TSD_NOPS; op++) {
		double p50 = percentile((enum tsd_op)op, 0.50);
		if (p50 < 0)
			continue;
		jbuf_printf(b, "%s\"%s\":{\"p50\":%.1f,\"p99\":%.1f}", first ? "" : ",",
		            op_names[op], p50, percentile((enum tsd_op)op, 0.99));
		first = 0;
	}
	jbuf_putc(b, '}');
}
