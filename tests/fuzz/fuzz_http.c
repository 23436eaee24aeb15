/*
 * fuzz_http.c -- libFuzzer target for tsstored's HTTP listener: each
 * input is the bytes a client sends on one connection, fed to the
 * parser (tsd_http_feed) in pieces whose size the first byte chooses, as
 * the event loop would; each request it queues is run by tsd_http_step
 * (through tsd_request_step, as a worker runs it) against a real
 * database with one table and the line protocol ingest (ingest.c), so
 * /metrics and the write endpoints run too, storing what parses.
 *
 * What it finds: crashes, leaks (ASan), undefined behaviour (UBSan), and
 * responses that are not well-formed: each must start with "HTTP/1.1 ",
 * end its head with an empty line, and hold as many body bytes as its
 * Content-Length says (none for 204 and HEAD).  Limits are small
 * (http-max-body 4k, http-max-header 1k) so that the 413 and 431 paths
 * are reached.  Built and run by `make fuzz` (tests/fuzz/README.md); the
 * seed corpus is tests/fuzz/http/.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ingest.h"
#include "tsd.h"

#define QUEUE_MAX 64

static ts_db *db;
static struct tsd_ingest *ingest;
static struct tsd_config cfg;
static struct tsd_request *queue[QUEUE_MAX];
static int nqueued;

/* The ingest's once-per-table messages: dropped. */
static void ingest_log(void *arg, const char *msg)
{
	(void)arg;
	(void)msg;
}

static void setup(void)
{
	static const char create[] =
		"{\"op\":\"create\",\"table\":\"t\",\"key\":[\"host\",\"ts\"],\"columns\":["
		"{\"name\":\"host\",\"type\":\"string\"},{\"name\":\"ts\",\"type\":\"timestamp\"},"
		"{\"name\":\"d\",\"type\":\"double\"}]}";
	char dir[] = "/tmp/tsstore-fuzz-XXXXXX";
	struct tsd_context ctx = {0};
	struct tsd_ingest_options io = {.log = ingest_log};
	int authed = 0;
	if (!mkdtemp(dir) || ts_open(dir, NULL, &db) < 0 || tsd_ingest_open(db, &io, &ingest) < 0)
		abort();
	tsd_config_init(&cfg);
	cfg.http_max_body = 4096;
	cfg.http_max_header = 1024;
	cfg.loopback_access = TSD_ACCESS_WRITE; /* as tsd_config_finish leaves it */
	tsd_http_configure(&cfg);
	ctx.db = db;
	ctx.cfg = &cfg;
	struct tsd_request *r = tsd_request_new(create, strlen(create), 0);
	tsd_request_step(r, &ctx, &authed, TSD_PEER_UNIX);
	tsd_request_free(r);
}

static void sink_begin(void *arg) { (void)arg; }

static int sink_request(void *arg, struct tsd_request *r)
{
	(void)arg;
	if (nqueued == QUEUE_MAX)
		abort(); /* the parser must pause when there is no room */
	queue[nqueued++] = r;
	return 0;
}

static int sink_room(void *arg)
{
	(void)arg;
	return nqueued < QUEUE_MAX;
}

static void sink_interim(void *arg, const char *p, size_t len)
{
	(void)arg;
	if (len != 25 || memcmp(p, "HTTP/1.1 100 Continue\r\n\r\n", len) != 0)
		abort();
}

/* One response, whole: status line, head, body of Content-Length. */
static void check_response(const char *p, size_t len)
{
	const char *end = memmem(p, len, "\r\n\r\n", 4), *cl;
	size_t head, body = 0;
	if (len < 9 || memcmp(p, "HTTP/1.1 ", 9) != 0 || !end)
		abort();
	head = (size_t)(end - p) + 4;
	if ((cl = memmem(p, head, "\r\nContent-Length: ", 18)))
		body = strtoul(cl + 18, NULL, 10);
	if (head + body != len && !(head == len && body > 0)) /* HEAD: no body */
		abort();
}

/* The tables the writes made, beyond TABLES_MAX, dropped (with the
 * ingest's handles), so that the database, whose every open table maps
 * a log, does not grow with the run: the state an input meets stays
 * small, and RSS bounded. */
#define TABLES_MAX 8
static void prune_tables(void)
{
	struct tsd_ingest_options io = {.log = ingest_log};
	char **names = NULL;
	int n = 0;
	if (ts_tables(db, &names, &n) < 0 || n <= TABLES_MAX) {
		ts_free_names(names);
		return;
	}
	tsd_ingest_close(ingest);
	for (int i = 0; i < n; i++)
		if (strcmp(names[i], "t") != 0)
			ts_drop(db, names[i]);
	ts_free_names(names);
	if (tsd_ingest_open(db, &io, &ingest) < 0)
		abort();
}

/* Run the queued requests in order. */
static int run_queue(int *closed)
{
	struct tsd_context ctx = {db, &cfg, ingest};
	int authed = 0;
	for (int i = 0; i < nqueued; i++) {
		char *out;
		size_t len;
		struct tsd_request *r = queue[i];
		tsd_request_step(r, &ctx, &authed, TSD_PEER_LOOPBACK);
		if (!tsd_request_done(r))
			abort(); /* every HTTP response is one step */
		tsd_request_output(r, &out, &len);
		check_response(out, len);
		*closed |= tsd_request_closes(r);
		free(out);
		tsd_request_free(r);
	}
	nqueued = 0;
	return 0;
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);
int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
	const struct tsd_http_sink sink = {NULL, sink_begin, sink_request, sink_room, sink_interim};
	struct tsd_http_conn *c;
	size_t piece, off = 0;
	int stop = 0, closed = 0, stalls = 0;
	if (!db)
		setup();
	if (size == 0)
		return 0;
	piece = data[0] ? data[0] : 1;
	data++;
	size--;
	if (!(c = tsd_http_conn_new(&cfg, TSD_PEER_LOOPBACK)))
		return 0;
	while (off < size && !stop) {
		size_t n = size - off < piece ? size - off : piece;
		size_t used = tsd_http_feed(c, (const char *)data + off, n, &sink, &stop);
		if (used > n)
			abort();
		off += used;
		if (used < n && nqueued < QUEUE_MAX && !stop && ++stalls > 1000)
			abort(); /* paused with room: it must go on when fed again */
		if (tsd_http_held(c) > cfg.http_max_body * 2 + cfg.http_max_header * 4 + 4096)
			abort(); /* what a request holds is bounded */
		run_queue(&closed);
	}
	run_queue(&closed);
	prune_tables();
	if (stop && !closed)
		abort(); /* a connection that stops reading closes after a response */
	tsd_http_conn_free(c);
	return 0;
}
