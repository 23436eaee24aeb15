/*
 * server.c -- tsstored's event loop: listeners, connections, framing,
 * ordering and flow control (DESIGN.md section 5).
 *
 * One libuv loop thread owns every handle.  A connection reads bytes into
 * its input buffer and cuts them into lines; each complete line becomes a
 * request (request.c) in the connection's FIFO.  A connection runs one
 * request at a time, in arrival order, so responses come in request order
 * whatever the client pipelines; different connections run in parallel.
 * A request runs on libuv's worker pool (uv_queue_work) in steps: each
 * step produces some output, which the loop thread hands to uv_write.
 *
 * Flow control keeps each connection's memory bounded whatever the client
 * does:
 *   - output: no step starts while TSD_WRITE_HIGH_WATER bytes are queued
 *     for the client; a query whose client reads slowly simply waits,
 *     holding its cursor (and its snapshot), until writes drain;
 *   - input: reading stops while TSD_PIPELINE_MAX requests or
 *     TSD_PIPELINE_BYTES of them wait, and an incomplete line longer than
 *     line-max is answered with ETOOBIG and the connection closed;
 * so a connection holds at most one line, the waiting requests, one
 * request's state and the queued output.
 *
 * Memory for requests is also bounded for all connections together
 * (max-request-memory): account() counts each connection's input buffer
 * and request lines into server.mem_used; alloc_cb grows a buffer only
 * when fits() says so, else libuv reports UV_ENOBUFS and the connection
 * pauses (pause_for_memory) until regulate() finds its growth fits
 * again; paused connections are listed (server.paused, oldest first),
 * so regulate() costs nothing while none waits and looks only at them.  regulate() also favours one paused connection, the one with
 * the longest partial line, which may read past the budget until its
 * line is cut and has run (favour_done): so whatever every connection
 * holds, one always progresses.  A favoured client that stops sending
 * would stall the paused ones for ever, so while any is paused the
 * favoured one is closed with an EBUSY line once it has been silent
 * for line-stall-timeout (favour_stalled, end_stalled_favour, from
 * sweep_cb, which runs every second whatever idle-timeout is); favour
 * then passes on.  Reads of a connection holding no input
 * go into the loop's slab, and only a partial line is kept (keep_rest),
 * so idle connections hold nothing.  With idle-timeout, a partial line
 * must be finished within it from its first byte (sweep_cb).
 *
 * The budget is not a hard cap (tsstored(8) gives the bound): a
 * connection holding nothing reads its 64 KiB chunk whatever the
 * budget, which may become up to 64 KiB of queued lines plus a 64 KiB
 * buffer for the rest (keep_rest); the favoured connection's buffer
 * grows to about twice line-max, and the lines cut from it count as
 * much again.  Not counted: write_pending (up to TSD_WRITE_HIGH_WATER
 * plus one step's output per connection), the struct tsd_request of
 * each waiting request, and what a running request builds from its
 * line (the JSON tree, several times the line, on each worker).
 *
 * SIGHUP: reload() builds the configuration afresh (cfg->load) and
 * applies what can change while serving; see tsstored(8).
 *
 * A connection's life: reading -> (EOF, over-long line, refused token, or
 * shutdown) draining: no more reading, the requests already received run
 * and their responses are written -> closing: uv_close -> freed, once the
 * handle is closed and no step is running on a worker (a step cannot be
 * cancelled, so whichever of close_cb and after_step comes last frees).
 *
 * HTTP connections (an http: listener) go the same way, with http.c in
 * place of the line framing: take_lines feeds their bytes to its parser
 * (tsd_http_feed), which queues each request received whole, and keeps
 * the body of the one being received, counted in the budget
 * (tsd_http_held) as a partial line is.  Their requests run in steps on
 * the workers like the others, and are answered in order; a request not
 * received whole within idle-timeout, or stalled while favoured, is
 * answered 408 and the connection closed.
 *
 * Graphite connections (a graphite: listener) go the same way too, with
 * take_graphite in place of the line framing: the complete lines of each
 * read become one request (TSD_LINE_GRAPHITE) that graphite.c stores on
 * a worker and that answers nothing; a line longer than line-max is
 * counted and skipped to its '\n'.  A graphite-udp: listener has no
 * connections: each datagram is copied and stored on a worker
 * (udp_recv), at most UDP_WAITING_MAX waiting, the rest dropped and
 * counted.
 *
 * Shutdown (SIGTERM or SIGINT): the listeners close, every connection
 * drains, and when the last one is closed the loop has nothing left and
 * tsd_serve syncs and closes the database.  Connections that have not
 * drained after shutdown-timeout (a client that never reads) are closed;
 * a second signal closes them at once.
 */
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <uv.h>

#include "graphite.h"
#include "influxq.h"
#include "ingest.h"
#include "tsd.h"

union stream {
	uv_handle_t handle;
	uv_stream_t stream;
	uv_tcp_t tcp;
	uv_pipe_t pipe;
	uv_udp_t udp;
};

struct server;

struct listener {
	union stream h;
	struct server *srv;
	const char *addr;      /* as configured */
	const char *unix_path; /* to unlink at exit, or NULL */
	int is_tcp;
	int http;              /* an http: listener */
	int graphite;          /* a graphite: (TCP) or graphite-udp: listener */
	int udp;               /* a graphite-udp: listener */
	int udp_waiting;       /* its datagrams queued on the workers */
	enum tsd_peer peer;    /* what its clients may do without the token */
	int open;
	char name[TSD_CLIENT_NAME_MAX / 2]; /* the address it has ("tcp:127.0.0.1:40123"
	                                     * for port 0), for the log */
};

/* A Graphite UDP datagram on its way to a worker. */
struct datagram {
	uv_work_t work;
	struct listener *l;
	size_t len;
	char p[];
};

struct conn {
	union stream h;
	struct server *srv;
	struct conn *prev, *next;
	enum tsd_peer peer;          /* its listener's (access.c) */
	int authed;                  /* it sent the token ("auth") */
	char client[TSD_CLIENT_NAME_MAX]; /* "LISTENER from HOST:PORT", for the log */
	struct tsd_http_conn *http;  /* an HTTP connection's parser, or NULL */
	int graphite;                /* Graphite lines, not requests: nothing is answered */
	int skipping;                /* Graphite: dropping a line longer than line-max */
	char *in;                    /* received bytes not yet cut into lines */
	size_t inlen, incap, scanned;
	struct tsd_request *queue[TSD_PIPELINE_MAX];
	int qhead, nqueued;
	size_t queued_bytes;
	struct tsd_request *active;  /* the request running or paused */
	int64_t active_start;        /* uv_hrtime of its start */
	uv_work_t work;
	int working;                 /* a step is on a worker thread */
	size_t write_pending;        /* bytes handed to uv_write, not yet done */
	int reading, draining, closing, closed;
	int eof;                     /* the client ended its stream */
	uint64_t last_active;        /* uv_now, ms */
	uint64_t line_start;         /* uv_now when the partial line in `in` began */
	uint64_t nlines;             /* lines cut from the input so far */
	size_t mem;                  /* bytes counted in server.mem_used */
	size_t want;                 /* input growth refused by the budget */
	int grow_refused;            /* alloc_cb refused to grow the input */
	int mem_paused;              /* not reading until memory is released */
	struct conn *pprev, *pnext;  /* in server.paused while mem_paused */
};

struct write_req {
	uv_write_t req;
	struct conn *conn;
	char *p;
	size_t len;
};

struct server {
	uv_loop_t *loop;
	struct tsd_config *cfg;
	struct tsd_context ctx;
	struct listener listeners[TSD_LISTEN_MAX];
	int nlisteners;
	struct conn *conns;
	int nconns;
	uv_signal_t sigterm, sigint, sighup;
	uv_timer_t sweep;
	int stopping;
	uint64_t deadline;           /* uv_now by which draining must end */
	char slab[TSD_INPUT_CHUNK];  /* reads of connections holding no input */
	size_t mem_used;             /* request memory of every connection */
	int npaused;                 /* connections with mem_paused */
	struct conn *paused;         /* they, in the order they paused */
	struct conn *paused_tail;
	struct conn *favoured;       /* may read past the budget to end its line */
	uint64_t favoured_lines;     /* its nlines when favoured */
	uint64_t favoured_at;        /* uv_now when favoured */
	uv_work_t adopt;             /* opening every table once, at start */
};

/* The standard error the daemon was started with, once a log file
 * has replaced it. */
static int first_stderr = -1;

int tsd_log_open(const char *path)
{
	int fd;
	if (!path) {
		if (first_stderr >= 0 && dup2(first_stderr, STDERR_FILENO) < 0)
			tsd_log("standard error: %s", strerror(errno));
		return 0;
	}
	if ((fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0640)) < 0) {
		tsd_log("log-file: %s: %s", path, strerror(errno));
		return -1;
	}
	if (first_stderr < 0)
		first_stderr = fcntl(STDERR_FILENO, F_DUPFD_CLOEXEC, 3);
	/* dup2 replaces the descriptor in one step: a line written by
	 * another thread meanwhile goes to the old file or the new. */
	if (dup2(fd, STDERR_FILENO) < 0) {
		tsd_log("log-file: %s: %s", path, strerror(errno));
		close(fd);
		return -1;
	}
	close(fd);
	return 0;
}

void tsd_log(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	flockfile(stderr); /* one line, whole, whatever other threads log */
	fputs(TSD_PROGRAM ": ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	funlockfile(stderr);
	va_end(ap);
}

static void pump(struct conn *c);
static void take_lines(struct conn *c);
static void close_conn(struct conn *c);
static void close_handles(struct server *srv);

/* ---- The request memory budget ---- */

/* Count what c holds for requests now: its input buffer, the lines
 * waiting in its queue, and the line of its active request (for HTTP,
 * the request being received, and the bodies). */
static void account(struct conn *c)
{
	struct server *srv = c->srv;
	size_t held = c->closed ? 0 : c->incap + c->queued_bytes +
	              (c->active ? tsd_request_size(c->active) : 0) +
	              (c->http ? tsd_http_held(c->http) : 0);
	assert(srv->mem_used >= c->mem);
	srv->mem_used = srv->mem_used - c->mem + held;
	c->mem = held;
	tsd_stats_memory(srv->mem_used, srv->npaused);
}

/* Whether c may grow its input by `more` bytes: within the budget; or
 * past it when c is favoured; or, for a connection that holds nothing,
 * by its first chunk, so that short requests (a ping, a stats) are
 * always read one at a time whatever long lines others hold. */
static int fits(const struct conn *c, size_t more)
{
	const struct server *srv = c->srv;
	return (c == srv->favoured && c->nlines == srv->favoured_lines) ||
	       srv->mem_used + more <= srv->cfg->request_memory ||
	       (c->mem == 0 && more <= TSD_INPUT_CHUNK);
}

/* The bytes of c's request not yet received whole: its partial line,
 * or for HTTP the request being received (0 when none is). */
static size_t partial(const struct conn *c)
{
	if (c->http)
		return tsd_http_partial(c->http) ? tsd_http_held(c->http) + c->inlen + 1 : 0;
	return c->inlen;
}

/* c waits for memory: it joins the end of the paused list, so that
 * regulate() looks only at paused connections, oldest first. */
static void paused_add(struct conn *c)
{
	struct server *srv = c->srv;
	assert(!c->mem_paused);
	c->mem_paused = 1;
	c->pnext = NULL;
	c->pprev = srv->paused_tail;
	if (srv->paused_tail)
		srv->paused_tail->pnext = c;
	else
		srv->paused = c;
	srv->paused_tail = c;
	srv->npaused++;
}

/* c no longer waits for memory (it resumes, or it closed). */
static void paused_remove(struct conn *c)
{
	struct server *srv = c->srv;
	assert(c->mem_paused && srv->npaused > 0);
	if (c->pprev)
		c->pprev->pnext = c->pnext;
	else
		srv->paused = c->pnext;
	if (c->pnext)
		c->pnext->pprev = c->pprev;
	else
		srv->paused_tail = c->pprev;
	c->pprev = c->pnext = NULL;
	c->mem_paused = 0;
	srv->npaused--;
	assert((srv->npaused == 0) == (srv->paused == NULL));
}

/* Let c read again (its growth fits, or it is favoured). */
static void resume(struct conn *c)
{
	struct server *srv = c->srv;
	paused_remove(c);
	c->line_start = uv_now(srv->loop); /* the wait was the daemon's */
	pump(c);
}

/* Whether the favoured connection is done: it has cut its line and the
 * request has run -- or waits on its client to read, which could be
 * forever -- or it is going away.  Until then no other is favoured, so
 * at most one line at a time is held past the budget. */
static int favour_done(const struct server *srv, const struct conn *f)
{
	return f->closing || f->draining ||
	       (f->nlines != srv->favoured_lines &&
	        ((!f->active && !f->nqueued) || f->write_pending >= TSD_WRITE_HIGH_WATER));
}

/* Move the budget on after memory was taken or released: the favoured
 * connection stays favoured until favour_done;
 * paused connections whose growth now fits read again; and when some
 * are still paused and none is favoured, the one with the longest
 * partial line is favoured, so that whatever the others hold, one
 * connection always makes progress (no deadlock when every connection
 * is in the middle of a line, nor for a line longer than the budget). */
static void regulate(struct server *srv)
{
	struct conn *best = NULL, *f = srv->favoured;
	if (f && favour_done(srv, f))
		srv->favoured = NULL;
	for (struct conn *c = srv->paused, *next; c; c = next) {
		next = c->pnext; /* resume takes c out of the list */
		assert(c->mem_paused);
		if (fits(c, c->want))
			resume(c);
		else if (partial(c) && (!best || partial(c) > partial(best)))
			best = c; /* only a partial line needs favour: the
			           * requests of the others end on their own */
	}
	if (!srv->favoured && best && best->mem_paused && !best->closing) {
		srv->favoured = best;
		srv->favoured_lines = best->nlines;
		srv->favoured_at = uv_now(srv->loop);
		resume(best);
	}
	tsd_stats_memory(srv->mem_used, srv->npaused);
}

/* The input of c cannot grow within the budget: stop reading from it
 * until memory is released (or it is favoured). */
static void pause_for_memory(struct conn *c)
{
	if (c->reading)
		uv_read_stop(&c->h.stream);
	c->reading = 0;
	if (!c->mem_paused) {
		paused_add(c);
		tsd_stats_pause();
	}
	regulate(c->srv);
}

/* ---- Output ---- */

static void write_cb(uv_write_t *req, int status)
{
	struct write_req *w = (struct write_req *)req;
	struct conn *c = w->conn;
	c->write_pending -= w->len;
	free(w->p);
	free(w);
	if (c->closing)
		return;
	if (status < 0) {
		close_conn(c); /* the client went away: nothing more to say */
		return;
	}
	c->last_active = uv_now(c->srv->loop);
	pump(c);
}

/* Queue p[0..len) (taken over) for the client. */
static void send_bytes(struct conn *c, char *p, size_t len)
{
	struct write_req *w;
	uv_buf_t buf;
	if (!len || c->closing) {
		free(p);
		return;
	}
	if (!(w = malloc(sizeof *w))) {
		free(p);
		close_conn(c); /* a response cannot be lost silently */
		return;
	}
	w->conn = c;
	w->p = p;
	w->len = len;
	buf = uv_buf_init(p, (unsigned)len);
	c->write_pending += len;
	tsd_stats_bytes(0, len);
	if (uv_write(&w->req, &c->h.stream, &buf, 1, write_cb) < 0) {
		c->write_pending -= len;
		free(p);
		free(w);
		close_conn(c);
	}
}

/* ---- Running requests ---- */

static void step_work(uv_work_t *work)
{
	struct conn *c = work->data;
	tsd_request_step(c->active, &c->srv->ctx, &c->authed, c->peer);
}

static void free_conn(struct conn *c)
{
	tsd_request_free(c->active);
	while (c->nqueued) {
		tsd_request_free(c->queue[c->qhead]);
		c->qhead = (c->qhead + 1) % TSD_PIPELINE_MAX;
		c->nqueued--;
	}
	tsd_http_conn_free(c->http);
	free(c->in);
	free(c);
}

/* The active request has sent its last line: count it and free it; after
 * one that closes the connection, drop the requests queued behind it
 * (the stream was cut there, they cannot be answered in order). */
static void finish_request(struct conn *c)
{
	struct tsd_request *r = c->active;
	tsd_request_count(r, (int64_t)(uv_hrtime() - (uint64_t)c->active_start));
	if (tsd_request_closes(r)) {
		c->draining = 1;
		while (c->nqueued) {
			c->queued_bytes -= tsd_request_size(c->queue[c->qhead]);
			tsd_request_free(c->queue[c->qhead]);
			c->qhead = (c->qhead + 1) % TSD_PIPELINE_MAX;
			c->nqueued--;
		}
		c->inlen = c->scanned = 0;
	}
	tsd_request_free(r);
	c->active = NULL;
}

static void after_step(uv_work_t *work, int status)
{
	struct conn *c = work->data;
	char *p;
	size_t len;
	c->working = 0;
	if (c->closed) { /* the handle closed meanwhile; we free last */
		free_conn(c);
		return;
	}
	tsd_request_output(c->active, &p, &len);
	send_bytes(c, p, len);
	if (tsd_request_done(c->active))
		finish_request(c);
	if (!c->closing)
		pump(c);
	account(c);
	regulate(c->srv);
}

static void start_step(struct conn *c)
{
	c->work.data = c;
	if (uv_queue_work(c->srv->loop, &c->work, step_work, after_step) < 0) {
		tsd_log("cannot queue a request; closing a connection");
		close_conn(c);
		return;
	}
	c->working = 1;
}

static void start_reading(struct conn *c);

/* Move the connection on: start or continue a request when the output
 * has room, resume reading when the queue has, close when drained. */
static void pump(struct conn *c)
{
	if (c->closing)
		return;
	if (c->nqueued < TSD_PIPELINE_MAX && (c->scanned < c->inlen || (c->draining && c->inlen)))
		take_lines(c);
	if (c->working)
		return;
	if (!c->active && c->nqueued && c->write_pending < TSD_WRITE_HIGH_WATER) {
		c->active = c->queue[c->qhead];
		c->qhead = (c->qhead + 1) % TSD_PIPELINE_MAX;
		c->nqueued--;
		c->queued_bytes -= tsd_request_size(c->active);
		c->active_start = (int64_t)uv_hrtime();
	}
	if (c->active && c->write_pending < TSD_WRITE_HIGH_WATER) {
		account(c); /* before the step: a stats request counts itself */
		start_step(c);
		return;
	}
	if (!c->reading && !c->draining && !c->mem_paused && c->nqueued < TSD_PIPELINE_MAX &&
	    c->queued_bytes < TSD_PIPELINE_BYTES)
		start_reading(c);
	if (c->draining && !c->active && !c->nqueued && !c->write_pending && !c->inlen)
		close_conn(c);
	account(c);
}

/* ---- Input ---- */

static void stop_reading(struct conn *c)
{
	if (c->reading)
		uv_read_stop(&c->h.stream);
	c->reading = 0;
}

/* Stop taking requests: what was received runs, then the connection
 * closes. */
static void drain(struct conn *c)
{
	stop_reading(c);
	c->draining = 1;
}

/* Queue r (taken over; NULL: out of memory, and c closes).  Returns 0
 * or -1. */
static int enqueue_request(struct conn *c, struct tsd_request *r)
{
	if (!r) {
		tsd_log("out of memory for a request; closing a connection");
		close_conn(c);
		return -1;
	}
	if (c->closing) {
		tsd_request_free(r);
		return -1;
	}
	assert(c->nqueued < TSD_PIPELINE_MAX);
	tsd_request_set_client(r, c->client);
	c->queue[(c->qhead + c->nqueued) % TSD_PIPELINE_MAX] = r;
	c->nqueued++;
	c->queued_bytes += tsd_request_size(r);
	return 0;
}

static int enqueue(struct conn *c, const char *line, size_t len, int cut)
{
	return enqueue_request(c, tsd_request_new(line, len, cut));
}

/* ---- HTTP connections: http.c's sink ---- */

static void http_begin(void *arg)
{
	struct conn *c = arg;
	c->line_start = uv_now(c->srv->loop);
}

static int http_request(void *arg, struct tsd_request *r)
{
	struct conn *c = arg;
	c->nlines++;
	c->line_start = uv_now(c->srv->loop);
	return enqueue_request(c, r);
}

static int http_room(void *arg)
{
	const struct conn *c = arg;
	return c->nqueued < TSD_PIPELINE_MAX && !c->closing;
}

static void shrink_input(struct conn *c);
static void take_graphite(struct conn *c);

static void http_interim(void *arg, const char *p, size_t len)
{
	struct conn *c = arg;
	char *copy;
	if (c->active || c->nqueued || c->working || !(copy = malloc(len)))
		return; /* a response is due first: the client sends after its wait */
	memcpy(copy, p, len);
	send_bytes(c, copy, len);
}

/* Feed c's input to its HTTP parser: each request received whole joins
 * the queue; the bytes a full queue left wait in the input.  After a
 * request that ends the connection (an error, "Connection: close"),
 * nothing more is read. */
static void take_http(struct conn *c)
{
	const struct tsd_http_sink sink = {c, http_begin, http_request, http_room, http_interim};
	size_t used = c->inlen;
	int stop = 0;
	if (!c->draining && c->inlen)
		used = tsd_http_feed(c->http, c->in, c->inlen, &sink, &stop);
	if (c->closing)
		return;
	memmove(c->in, c->in + used, c->inlen - used);
	c->inlen -= used;
	c->scanned = 0;
	if (stop) {
		drain(c);
		c->inlen = 0;
	}
	if (c->in != c->srv->slab)
		shrink_input(c);
	if (c->nqueued >= TSD_PIPELINE_MAX || c->queued_bytes >= TSD_PIPELINE_BYTES)
		stop_reading(c);
}

/* ---- Graphite connections ---- */

/* Take every complete Graphite line of c's input (all of it once the
 * client ended its stream) as one request: one ingest call per read.  A
 * line longer than line-max is counted and skipped up to its '\n' (the
 * stream resynchronises at the next line: carbon cannot answer); an
 * incomplete line at shutdown is dropped. */
static void take_graphite(struct conn *c)
{
	size_t start = 0, end, max = c->srv->cfg->line_max;
	const char *last;
	if (c->nqueued >= TSD_PIPELINE_MAX) {
		c->scanned = 0; /* taken when the queue has room (pump) */
		return;
	}
	if (c->skipping) {
		const char *nl = memchr(c->in, '\n', c->inlen);
		start = nl ? (size_t)(nl - c->in) + 1 : c->inlen;
		c->skipping = !nl;
	}
	last = c->inlen > start ? memrchr(c->in + start, '\n', c->inlen - start) : NULL;
	end = last ? (size_t)(last - c->in) + 1 : start;
	if (c->draining && c->eof && !c->skipping)
		end = c->inlen;
	if (end > start) {
		c->nlines++;
		c->line_start = uv_now(c->srv->loop);
		if (enqueue(c, c->in + start, end - start, TSD_LINE_GRAPHITE) < 0)
			return;
	}
	memmove(c->in, c->in + end, c->inlen - end);
	c->inlen -= end;
	if (c->inlen > max) {
		if (c->srv->ctx.graphite)
			tsd_graphite_too_long(c->srv->ctx.graphite);
		c->skipping = 1;
		c->inlen = 0;
	}
	if (c->draining)
		c->inlen = 0;
	c->scanned = c->inlen;
	if (c->in != c->srv->slab)
		shrink_input(c);
	if (c->nqueued >= TSD_PIPELINE_MAX || c->queued_bytes >= TSD_PIPELINE_BYTES)
		stop_reading(c);
}

/* Give back input memory the partial line no longer needs: all of it
 * when the input is empty (an idle connection holds nothing), and most
 * when a long line has been cut and a short rest remains. */
static void shrink_input(struct conn *c)
{
	size_t cap;
	char *p;
	assert(c->in != c->srv->slab);
	if (!c->inlen) {
		free(c->in);
		c->in = NULL;
		c->incap = c->scanned = 0;
		return;
	}
	if (c->incap <= TSD_INPUT_CHUNK || c->inlen > c->incap / 4)
		return;
	cap = c->inlen * 2 > TSD_INPUT_CHUNK ? c->inlen * 2 : TSD_INPUT_CHUNK;
	if ((p = realloc(c->in, cap))) {
		c->in = p;
		c->incap = cap;
	}
}

/* Cut the complete lines out of the input into requests, as many as the
 * queue takes.  Once the connection drains, what remains after the last
 * '\n' is a last request if the client ended the stream (eof), and is
 * dropped if the daemon is stopping. */
static void take_lines(struct conn *c)
{
	size_t start = 0, max = c->srv->cfg->line_max;
	char *nl;
	if (c->http) {
		take_http(c);
		return;
	}
	if (c->graphite) {
		take_graphite(c);
		return;
	}
	while (c->nqueued < TSD_PIPELINE_MAX &&
	       (nl = memchr(c->in + c->scanned, '\n', c->inlen - c->scanned))) {
		size_t line = start, end = (size_t)(nl - c->in), len = end - line;
		if (len && c->in[end - 1] == '\r')
			len--;
		start = c->scanned = end + 1;
		c->nlines++;
		c->line_start = uv_now(c->srv->loop);
		if (len > max) {
			/* Answered, then the connection closes. */
			enqueue(c, "", 0, TSD_LINE_TOO_LONG);
			drain(c);
			c->inlen = c->scanned = 0;
			return;
		}
		/* a standby's acks, on its follow stream (replica.c) */
		if (len && tsd_request_takes_acks(c->active)) {
			if (tsd_replica_line(c->in + line, len) < 0)
				tsd_log("%s: a line on a follow stream that is no ack: ignored",
				        c->client);
			continue;
		}
		if (len && enqueue(c, c->in + line, len, TSD_LINE_WHOLE) < 0)
			return;
	}
	/* A full queue may have left whole lines: look again from the start
	 * when it has room. */
	int full = c->nqueued >= TSD_PIPELINE_MAX;
	memmove(c->in, c->in + start, c->inlen - start);
	c->inlen -= start;
	c->scanned = full ? 0 : c->inlen;
	if (!full && c->inlen > max) {
		/* The line is already too long: answer it without reading the
		 * rest, and close, since the stream cannot be resynchronised. */
		enqueue(c, "", 0, TSD_LINE_TOO_LONG);
		drain(c);
		c->inlen = c->scanned = 0;
	}
	if (!full && c->draining) {
		if (c->eof && c->inlen && c->inlen <= max)
			enqueue(c, c->in, c->inlen, TSD_LINE_WHOLE);
		c->inlen = c->scanned = 0;
	}
	if (c->in != c->srv->slab)
		shrink_input(c);
	if (c->nqueued >= TSD_PIPELINE_MAX || c->queued_bytes >= TSD_PIPELINE_BYTES)
		stop_reading(c);
}

/* After a read into the slab: the rest of the input (a partial line, or
 * lines a full queue left) moves to a buffer of the connection's own. */
static void keep_rest(struct conn *c)
{
	char *p = NULL;
	assert(c->in == c->srv->slab);
	if (c->inlen && !(p = malloc(TSD_INPUT_CHUNK))) {
		tsd_log("out of memory for input; closing a connection");
		c->inlen = c->scanned = 0;
		close_conn(c);
	}
	if (p)
		memcpy(p, c->in, c->inlen);
	c->in = p;
	c->incap = p ? TSD_INPUT_CHUNK : 0;
}

/* Room for the next read: the input grows by doubling while the budget
 * allows (or c is favoured); when it may not and it is full, an empty
 * buffer makes libuv report UV_ENOBUFS, and read_cb pauses c. */
static void alloc_cb(uv_handle_t *h, size_t hint, uv_buf_t *buf)
{
	struct conn *c = h->data;
	size_t want = TSD_INPUT_CHUNK;
	(void)hint;
	account(c);
	if (!c->incap && fits(c, want)) {
		/* No partial line: read into the loop's slab, and keep only
		 * what is left after the complete lines (read_cb). */
		c->grow_refused = 0;
		*buf = uv_buf_init(c->srv->slab, sizeof c->srv->slab);
		return;
	}
	if (c->incap - c->inlen < want / 2) {
		size_t cap = c->incap ? c->incap * 2 : want;
		char *p = NULL;
		if (!fits(c, cap - c->incap)) {
			c->grow_refused = 1;
			c->want = cap - c->incap;
		} else if (cap >= c->inlen + want / 2 && (p = realloc(c->in, cap))) {
			c->in = p;
			c->incap = cap;
			account(c);
		}
	}
	if (c->incap == c->inlen) {
		*buf = uv_buf_init(NULL, 0);
		return;
	}
	c->grow_refused = 0;
	*buf = uv_buf_init(c->in + c->inlen, (unsigned)(c->incap - c->inlen));
}

static void read_cb(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
	struct conn *c = s->data;
	if (c->closing)
		return;
	if (nread == 0) {
		/* Nothing to read after all (EAGAIN): an empty input buffer
		 * is given back at once, so an idle connection holds none. */
		if (!c->inlen) {
			shrink_input(c);
			account(c);
		}
		return;
	}
	if (nread == UV_ENOBUFS && c->grow_refused) {
		c->grow_refused = 0;
		pause_for_memory(c);
		return;
	}
	c->last_active = uv_now(c->srv->loop);
	if (nread > 0)
		tsd_stats_bytes((uint64_t)nread, 0);
	if (nread == UV_ENOBUFS) {
		tsd_log("out of memory for input; closing a connection");
		close_conn(c);
		return;
	}
	if (nread < 0) {
		if (nread != UV_EOF) {
			close_conn(c);
			return;
		}
		/* The lines received are answered, a last one without '\n'
		 * too (take_lines, from pump); then the connection closes. */
		c->eof = 1;
		drain(c);
		c->scanned = 0;
		pump(c);
		return;
	}
	if (!c->inlen && !c->http) /* HTTP: from the request's first byte (http_begin) */
		c->line_start = c->last_active;
	if (buf->base == c->srv->slab) {
		assert(!c->in && !c->inlen);
		c->in = c->srv->slab;
		c->incap = sizeof c->srv->slab;
	}
	c->inlen += (size_t)nread;
	take_lines(c);
	if (c->in == c->srv->slab)
		keep_rest(c);
	pump(c);
	regulate(c->srv);
}

static void start_reading(struct conn *c)
{
	if (uv_read_start(&c->h.stream, alloc_cb, read_cb) == 0)
		c->reading = 1;
	else
		close_conn(c);
}

/* ---- Connections ---- */

static void close_cb(uv_handle_t *h)
{
	struct conn *c = h->data;
	struct server *srv = c->srv;
	c->closed = 1;
	if (c->prev)
		c->prev->next = c->next;
	else
		srv->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	srv->nconns--;
	tsd_stats_connection(0);
	account(c); /* closed: it counts for nothing */
	if (c->mem_paused)
		paused_remove(c);
	if (srv->favoured == c)
		srv->favoured = NULL;
	if (!c->working)
		free_conn(c);
	regulate(srv);
	if (srv->stopping && srv->nconns == 0) {
		close_handles(srv);
	}
}

static void close_conn(struct conn *c)
{
	if (c->closing)
		return;
	c->closing = 1;
	stop_reading(c);
	uv_close(&c->h.handle, close_cb);
}

/* Refuse a connection beyond max-connections: one error line (an HTTP
 * 503 on an HTTP listener), then close. */
static void refuse(struct conn *c)
{
	static const char busy[] =
		"{\"ok\":false,\"error\":{\"code\":\"EBUSY\",\"message\":\"too many connections\"}}\n";
	size_t len = sizeof busy - 1;
	char *p = c->http ? tsd_http_refusal(&len) : malloc(len);
	c->draining = 1;
	if (p && !c->http)
		memcpy(p, busy, len);
	if (p)
		send_bytes(c, p, len);
	pump(c);
}

/* "HOST:PORT" ("[HOST]:PORT" for IPv6) of sa into buf. */
static void sockaddr_name(const struct sockaddr_storage *sa, char *buf, size_t size)
{
	char host[64] = "?";
	int port = 0;
	if (sa->ss_family == AF_INET6) {
		uv_ip6_name((const struct sockaddr_in6 *)sa, host, sizeof host);
		port = ntohs(((const struct sockaddr_in6 *)sa)->sin6_port);
		snprintf(buf, size, "[%s]:%d", host, port);
		return;
	}
	if (sa->ss_family == AF_INET) {
		uv_ip4_name((const struct sockaddr_in *)sa, host, sizeof host);
		port = ntohs(((const struct sockaddr_in *)sa)->sin_port);
	}
	snprintf(buf, size, "%s:%d", host, port);
}

/* Describe c, accepted on l, for the log: "LISTENER from HOST:PORT",
 * or the listener alone for a unix socket. */
static void name_client(struct conn *c, const struct listener *l)
{
	struct sockaddr_storage sa;
	int len = sizeof sa;
	char peer[80] = "?";
	const char *lname = l->name[0] ? l->name : l->addr;
	if (l->is_tcp && uv_tcp_getpeername(&c->h.tcp, (struct sockaddr *)&sa, &len) == 0)
		sockaddr_name(&sa, peer, sizeof peer);
	if (l->is_tcp)
		snprintf(c->client, sizeof c->client, "%s from %s", lname, peer);
	else
		snprintf(c->client, sizeof c->client, "%s", lname);
	if (c->http)
		tsd_http_conn_set_client(c->http, c->client);
}

static void on_connection(uv_stream_t *server, int status)
{
	struct listener *l = server->data;
	struct server *srv = l->srv;
	struct conn *c;
	int rc;
	if (status < 0 || srv->stopping) {
		if (status < 0)
			tsd_log("%s: accept: %s", l->addr, uv_strerror(status));
		return;
	}
	if (!(c = calloc(1, sizeof *c))) {
		tsd_log("%s: out of memory for a connection", l->addr);
		return;
	}
	c->srv = srv;
	c->h.handle.data = c;
	c->peer = l->peer;
	c->graphite = l->graphite;
	if (l->http && !(c->http = tsd_http_conn_new(srv->cfg, c->peer))) {
		free(c);
		tsd_log("%s: out of memory for a connection", l->addr);
		return;
	}
	rc = l->is_tcp ? uv_tcp_init(srv->loop, &c->h.tcp) : uv_pipe_init(srv->loop, &c->h.pipe, 0);
	if (rc < 0) {
		tsd_http_conn_free(c->http);
		free(c);
		return;
	}
	c->next = srv->conns;
	if (srv->conns)
		srv->conns->prev = c;
	srv->conns = c;
	srv->nconns++;
	tsd_stats_connection(1);
	c->last_active = uv_now(srv->loop);
	if (uv_accept(server, &c->h.stream) < 0) {
		close_conn(c);
		return;
	}
	if (l->is_tcp)
		uv_tcp_nodelay(&c->h.tcp, 1);
	name_client(c, l);
	if (srv->nconns > srv->cfg->max_connections) {
		tsd_stats_refused();
		tsd_access_log(TSD_LOG_REFUSED, "%s: connection refused: max-connections (%d) are open",
		               c->client, srv->cfg->max_connections);
		refuse(c);
	}
	else
		start_reading(c);
}

/* ---- Listeners ---- */

/* Whether something listens at the unix socket path.  Only a refused
 * connection proves the socket stale (its daemon died): a listener
 * whose backlog is full (EAGAIN), or any other doubt, counts as alive,
 * so that a live daemon's socket is never removed. */
static int socket_alive(const char *path)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0), alive;
	if (fd < 0)
		return 1;
	snprintf(sa.sun_path, sizeof sa.sun_path, "%s", path);
	alive = connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0 ||
	        (errno != ECONNREFUSED && errno != ENOENT);
	close(fd);
	return alive;
}

static int listen_unix(struct server *srv, struct listener *l, const char *path)
{
	struct stat st;
	int rc;
	if (strlen(path) >= sizeof ((struct sockaddr_un *)0)->sun_path) {
		tsd_log("%s: the socket path is too long", l->addr);
		return -1;
	}
	/* A socket left by a daemon that died is removed; a live one is
	 * another daemon's, and a file that is no socket is not ours. */
	if (lstat(path, &st) == 0) {
		if (!S_ISSOCK(st.st_mode) || socket_alive(path)) {
			tsd_log("%s: %s", l->addr, S_ISSOCK(st.st_mode)
			        ? "another daemon is listening there (stop it first, or listen elsewhere)"
			        : "exists and is not a socket");
			return -1;
		}
		tsd_log("%s: removing the stale socket of a daemon that is gone", l->addr);
		unlink(path);
	}
	if ((rc = uv_pipe_init(srv->loop, &l->h.pipe, 0)) < 0)
		goto fail;
	l->open = 1;
	if ((rc = uv_pipe_bind(&l->h.pipe, path)) < 0)
		goto fail;
	l->unix_path = path;
	if (chmod(path, 0660) < 0) {
		tsd_log("%s: chmod: %s", l->addr, strerror(errno));
		return -1;
	}
	return 0;
fail:
	tsd_log("%s: %s", l->addr, uv_strerror(rc));
	return -1;
}

static int listen_tcp(struct server *srv, struct listener *l, const char *hostport)
{
	char host[256];
	int port, rc;
	struct sockaddr_storage sa;
	if (tsd_tcp_split(hostport, host, sizeof host, &port) < 0) {
		tsd_log("%s: the host name is too long", l->addr);
		return -1;
	}
	if (uv_ip4_addr(host, port, (struct sockaddr_in *)&sa) < 0 &&
	    uv_ip6_addr(host, port, (struct sockaddr_in6 *)&sa) < 0) {
		tsd_log("%s: \"%s\" is not an IPv4 or IPv6 address", l->addr, host);
		return -1;
	}
	if ((rc = l->udp ? uv_udp_init(srv->loop, &l->h.udp) : uv_tcp_init(srv->loop, &l->h.tcp)) < 0)
		goto fail;
	l->open = 1;
	l->is_tcp = 1;
	if ((rc = l->udp ? uv_udp_bind(&l->h.udp, (struct sockaddr *)&sa, 0)
	                 : uv_tcp_bind(&l->h.tcp, (struct sockaddr *)&sa, 0)) < 0)
		goto fail;
	return 0;
fail:
	tsd_log("%s: %s", l->addr, uv_strerror(rc));
	return -1;
}

/* A listener's kind, as its address begins. */
static const char *kind(const struct listener *l)
{
	return l->udp ? "graphite-udp" : l->graphite ? "graphite" : l->http ? "http" : "tcp";
}

/* The address the listener actually has ("tcp:127.0.0.1:40123" for
 * port 0) into l->name, and log it. */
static void log_listening(struct listener *l)
{
	struct sockaddr_storage sa;
	int len = sizeof sa;
	char host[80];
	if (!l->is_tcp || (l->udp ? uv_udp_getsockname(&l->h.udp, (struct sockaddr *)&sa, &len)
	                          : uv_tcp_getsockname(&l->h.tcp, (struct sockaddr *)&sa, &len)) < 0)
		snprintf(l->name, sizeof l->name, "%s", l->addr);
	else {
		sockaddr_name(&sa, host, sizeof host);
		snprintf(l->name, sizeof l->name, "%s:%s", kind(l), host);
	}
	tsd_log("listening on %s", l->name);
}

/* ---- Graphite over UDP ---- */

/* Datagrams of one graphite-udp: listener that may wait for a worker at
 * once; past them a datagram is dropped and counted (UDP has no
 * backpressure: the loop must not queue without bound).  At most
 * 64 KiB each: 16 MiB. */
#define UDP_WAITING_MAX 256

static void udp_alloc(uv_handle_t *h, size_t hint, uv_buf_t *buf)
{
	struct listener *l = h->data;
	(void)hint;
	*buf = uv_buf_init(l->srv->slab, sizeof l->srv->slab);
}

static void udp_work(uv_work_t *work)
{
	struct datagram *d = work->data;
	tsd_graphite_lines(d->l->srv->ctx.graphite, d->p, d->len);
}

static void udp_done(uv_work_t *work, int status)
{
	struct datagram *d = work->data;
	(void)status;
	d->l->udp_waiting--;
	free(d);
}

/* A datagram: its lines go to a worker, one ingest call for them. */
static void udp_recv(uv_udp_t *h, ssize_t nread, const uv_buf_t *buf, const struct sockaddr *from,
                     unsigned flags)
{
	struct listener *l = h->data;
	struct datagram *d;
	(void)from;
	if (nread <= 0 || !l->srv->ctx.graphite)
		return;
	tsd_stats_bytes((uint64_t)nread, 0);
	if ((flags & UV_UDP_PARTIAL) || l->udp_waiting >= UDP_WAITING_MAX || l->srv->stopping ||
	    !(d = malloc(sizeof *d + (size_t)nread))) {
		tsd_graphite_dropped(l->srv->ctx.graphite);
		return;
	}
	d->work.data = d;
	d->l = l;
	d->len = (size_t)nread;
	memcpy(d->p, buf->base, d->len);
	if (uv_queue_work(l->srv->loop, &d->work, udp_work, udp_done) < 0) {
		tsd_graphite_dropped(l->srv->ctx.graphite);
		free(d);
		return;
	}
	l->udp_waiting++;
}

static int open_listeners(struct server *srv)
{
	for (int i = 0; i < srv->cfg->nlisten; i++) {
		struct listener *l = &srv->listeners[srv->nlisteners++];
		const char *addr = srv->cfg->listen[i];
		int rc;
		l->srv = srv;
		l->addr = addr;
		l->h.handle.data = l;
		l->http = strncmp(addr, "http:", 5) == 0;
		l->udp = strncmp(addr, "graphite-udp:", 13) == 0;
		l->graphite = l->udp || strncmp(addr, "graphite:", 9) == 0;
		l->peer = strncmp(addr, "unix:", 5) == 0 ? TSD_PEER_UNIX
		        : tsd_listen_loopback(addr) ? TSD_PEER_LOOPBACK : TSD_PEER_REMOTE;
		rc = strncmp(addr, "unix:", 5) == 0 ? listen_unix(srv, l, addr + 5)
		                                     : listen_tcp(srv, l, tsd_listen_hostport(addr));
		if (rc < 0)
			return -1;
		if (l->udp) {
			if ((rc = uv_udp_recv_start(&l->h.udp, udp_alloc, udp_recv)) < 0) {
				tsd_log("%s: %s", addr, uv_strerror(rc));
				return -1;
			}
			log_listening(l);
			continue;
		}
		if ((rc = uv_listen(&l->h.stream, TSD_BACKLOG, on_connection)) < 0) {
			tsd_log("%s: listen: %s", addr, uv_strerror(rc));
			return -1;
		}
		log_listening(l);
	}
	return 0;
}

static void close_listeners(struct server *srv)
{
	for (int i = 0; i < srv->nlisteners; i++) {
		struct listener *l = &srv->listeners[i];
		if (l->open && !uv_is_closing(&l->h.handle))
			uv_close(&l->h.handle, NULL);
		if (l->unix_path) {
			unlink(l->unix_path);
			l->unix_path = NULL;
		}
	}
}

/* ---- Timers and signals ---- */

/* Whether the favoured connection stalls the others: they wait for
 * memory, and it has not finished its line, nor sent or read anything,
 * for line-stall-timeout (counted from when it was favoured at the
 * earliest: the wait before was the daemon's).  A step running on a
 * worker is the daemon's work, not a stall. */
static int favour_stalled(const struct server *srv, uint64_t now)
{
	const struct conn *f = srv->favoured;
	uint64_t since, limit_ms = (uint64_t)(srv->cfg->line_stall_timeout / 1000000);
	if (!f || !srv->npaused || f->closing || f->draining || f->working ||
	    f->nlines != srv->favoured_lines)
		return 0;
	since = f->last_active > srv->favoured_at ? f->last_active : srv->favoured_at;
	return now - since >= limit_ms;
}

/* Close the favoured connection, which stalls the others: its partial
 * line is dropped, and an EBUSY error is answered after the requests
 * received before it (the stream was cut, so the connection closes);
 * favour passes on to a waiting connection. */
static void end_stalled_favour(struct server *srv)
{
	struct conn *c = srv->favoured;
	char msg[TSD_MESSAGE_MAX];
	int len;
	tsd_stats_timeout(); /* counted, not logged: clients could fill the log */
	len = snprintf(msg, sizeof msg, "line not finished: nothing received for %lld ms while "
	               "other connections wait for request memory (line-stall-timeout); "
	               "closing the connection",
	               (long long)(srv->cfg->line_stall_timeout / 1000000));
	assert(len > 0 && (size_t)len < sizeof msg);
	drain(c);
	c->inlen = c->scanned = 0;
	shrink_input(c);
	if (c->graphite) {
		pump(c); /* nothing to answer: the batches received run, then it closes */
	} else if (c->nqueued >= TSD_PIPELINE_MAX ||
	    (c->http ? enqueue_request(c, tsd_http_error(408, msg))
	             : enqueue(c, msg, (size_t)len, TSD_LINE_STALLED)) < 0) {
		close_conn(c); /* no room to answer in order: just close */
	} else {
		pump(c);
	}
	regulate(srv); /* draining: favour passes on */
}

/* An HTTP request not received whole within idle-timeout: answered
 * 408 after the requests before it, and the connection closes. */
static void http_timeout(struct conn *c)
{
	char msg[TSD_MESSAGE_MAX];
	snprintf(msg, sizeof msg, "the request was not received whole within idle-timeout "
	         "(%lld ms); closing the connection",
	         (long long)(c->srv->cfg->idle_timeout / 1000000));
	drain(c);
	c->inlen = c->scanned = 0;
	shrink_input(c);
	if (c->nqueued >= TSD_PIPELINE_MAX || enqueue_request(c, tsd_http_error(408, msg)) < 0)
		close_conn(c);
	else
		pump(c);
}

/* A Graphite line not finished within idle-timeout: it is dropped, the
 * batches received before it are stored, and the connection closes
 * (there is nothing to answer). */
static void graphite_timeout(struct conn *c)
{
	drain(c);
	c->inlen = c->scanned = 0;
	shrink_input(c);
	pump(c);
}

static void sweep_cb(uv_timer_t *t)
{
	struct server *srv = t->data;
	uint64_t now = uv_now(srv->loop);
	uint64_t idle_ms = (uint64_t)(srv->cfg->idle_timeout / 1000000);
	if (!srv->stopping && favour_stalled(srv, now))
		end_stalled_favour(srv);
	tsd_access_log_flush();
	for (struct conn *c = srv->conns, *next; c; c = next) {
		next = c->next;
		int idle = !c->active && !c->nqueued && !c->write_pending && !c->working;
		/* A partial line the client is to finish: its clock started
		 * with its first byte, so a client sending a byte at a time
		 * cannot hold the connection (and its memory) forever. */
		int unfinished = partial(c) && c->reading && !c->mem_paused && !c->draining;
		if (srv->stopping && now >= srv->deadline) {
			close_conn(c);
		} else if (idle_ms && unfinished && now - c->line_start >= idle_ms) {
			/* Counted, not logged: clients could fill the log. */
			tsd_stats_timeout();
			if (c->http)
				http_timeout(c);
			else if (c->graphite)
				graphite_timeout(c);
			else
				close_conn(c);
		} else if (idle_ms && idle && !partial(c) && now - c->last_active >= idle_ms) {
			tsd_stats_timeout();
			close_conn(c);
		}
	}
}

static void stop(struct server *srv)
{
	if (srv->stopping) {
		tsd_log("second signal: closing every connection now");
		srv->deadline = uv_now(srv->loop);
		sweep_cb(&srv->sweep);
		return;
	}
	tsd_log("stopping: finishing the requests received");
	srv->stopping = 1;
	__atomic_store_n(&srv->ctx.stopping, 1, __ATOMIC_RELAXED); /* follow streams end */
	srv->deadline = uv_now(srv->loop) + (uint64_t)(srv->cfg->shutdown_timeout / 1000000);
	close_listeners(srv);
	for (struct conn *c = srv->conns, *next; c; c = next) {
		next = c->next;
		drain(c); /* lines received run; an incomplete one is dropped */
		pump(c);
	}
	if (srv->nconns == 0) {
		close_handles(srv);
	}
}

static void signal_cb(uv_signal_t *s, int signum)
{
	(void)signum;
	stop(s->data);
}

/* ---- SIGHUP: reload ---- */

static int differ(const char *a, const char *b)
{
	return (a == NULL) != (b == NULL) || (a && strcmp(a, b) != 0);
}

/* A value reloaded: set it and say so. */
static void reload_size(const char *name, size_t *cur, size_t fresh)
{
	if (*cur != fresh)
		tsd_log("reload: %s: %zu -> %zu", name, *cur, fresh);
	*cur = fresh;
}

static void reload_ns(const char *name, int64_t *cur, int64_t fresh)
{
	char a[TS_DURATION_BUFSZ], b[TS_DURATION_BUFSZ];
	if (*cur != fresh) {
		ts_duration_format(*cur, a, sizeof a);
		ts_duration_format(fresh, b, sizeof b);
		tsd_log("reload: %s: %s -> %s", name, a, b);
	}
	*cur = fresh;
}

static void reload_int(const char *name, int *cur, int fresh)
{
	if (*cur != fresh)
		tsd_log("reload: %s: %d -> %d", name, *cur, fresh);
	/* chunk-rows is read by the workers */
	__atomic_store_n(cur, fresh, __ATOMIC_RELAXED);
}

/* What only a restart can change: say that it changed, and that it
 * waits for the next start. */
static void report_fixed(const struct tsd_config *cfg, struct tsd_config *fresh)
{
	int listen = cfg->nlisten != fresh->nlisten;
	for (int i = 0; !listen && i < cfg->nlisten; i++)
		listen = strcmp(cfg->listen[i], fresh->listen[i]) != 0;
	fresh->lib.flags |= fresh->follow ? TS_OPEN_READONLY : TS_OPEN_CREATE; /* as tsd_serve */
	fresh->lib.log = cfg->lib.log;
	const char *what[] = {
		differ(cfg->datadir, fresh->datadir) ? "data" : NULL,
		listen ? "listen" : NULL,
		differ(cfg->mount, fresh->mount) ? "mount" : NULL,
		differ(cfg->follow, fresh->follow) ? "follow" : NULL,
		cfg->sync_replica != fresh->sync_replica ? "sync (replica)" : NULL,
		cfg->replica_timeout != fresh->replica_timeout ? "replica-timeout" : NULL,
		cfg->workers != fresh->workers ? "workers" : NULL,
		memcmp(&cfg->lib, &fresh->lib, sizeof cfg->lib) != 0
		? "the storage engine's options (sync, sync-interval, max-future, flush-size, "
		  "flush-age, merge-max-size, merge-delay, block-cache-size, no-merge, log-cap, "
		  "log-segment-size, merge-slice-rows, merge-rollover-spread, maint-busy-window, "
		  "maint-busy-share, flush-threads)" : NULL,
	};
	for (size_t i = 0; i < sizeof what / sizeof what[0]; i++)
		if (what[i])
			tsd_log("reload: %s changed: it takes effect only at the next start", what[i]);
}

/* The token and the log file. */
static void reload_files(struct tsd_config *cfg, struct tsd_config *fresh)
{
	if (differ(cfg->token, fresh->token)) {
		tsd_log("reload: token: %s (new TCP connections and HTTP requests; TCP connections "
		        "authenticated stay so)",
		        !fresh->token ? "removed" : !cfg->token ? "set" : "changed");
		tsd_token_replace(cfg, fresh->token);
		fresh->token = NULL;
	}
	if (differ(cfg->log_file, fresh->log_file)) {
		tsd_log("reload: log-file: %s -> %s", cfg->log_file ? cfg->log_file : "stderr",
		        fresh->log_file ? fresh->log_file : "stderr");
		cfg->log_file = fresh->log_file ? tsd_config_keep(cfg, fresh->log_file) : NULL;
	}
}

/* loopback-access, for the requests that follow (the workers read it). */
static void reload_access(struct tsd_config *cfg, const struct tsd_config *fresh)
{
	if (cfg->loopback_access != fresh->loopback_access)
		tsd_log("reload: loopback-access: %s -> %s",
		        tsd_access_name((enum tsd_access)cfg->loopback_access),
		        tsd_access_name((enum tsd_access)fresh->loopback_access));
	__atomic_store_n(&cfg->loopback_access, fresh->loopback_access, __ATOMIC_RELAXED);
}

/* Read the configuration again (config file, then command line, as at
 * the start): apply the limits, timeouts, token and loopback-access, reopen the log
 * file, and log what changed and what would need a restart.  A
 * configuration that does not load changes nothing. */
static void reload(struct server *srv)
{
	struct tsd_config fresh, *cfg = srv->cfg;
	/* First the log: the messages below go to the file reopened. */
	if (cfg->log_file)
		tsd_log_open(cfg->log_file);
	tsd_log("SIGHUP: reloading the configuration%s%s", cfg->config_file ? " from " : "",
	        cfg->config_file ? cfg->config_file : "");
	if (!cfg->load || cfg->load(&fresh) < 0) {
		if (cfg->load)
			tsd_config_free(&fresh);
		tsd_log("reload failed: still serving with the configuration as it was");
		return;
	}
	if (differ(cfg->log_file, fresh.log_file) && tsd_log_open(fresh.log_file) < 0)
		fresh.log_file = cfg->log_file; /* keep logging where it was */
	reload_files(cfg, &fresh);
	reload_access(cfg, &fresh);
	reload_size("line-max", &cfg->line_max, fresh.line_max);
	reload_size("max-request-memory", &cfg->request_memory, fresh.request_memory);
	reload_int("max-connections", &cfg->max_connections, fresh.max_connections);
	reload_int("chunk-rows", &cfg->chunk_rows, fresh.chunk_rows);
	reload_ns("idle-timeout", &cfg->idle_timeout, fresh.idle_timeout);
	reload_ns("line-stall-timeout", &cfg->line_stall_timeout, fresh.line_stall_timeout);
	reload_ns("shutdown-timeout", &cfg->shutdown_timeout, fresh.shutdown_timeout);
	reload_size("http-max-body", &cfg->http_max_body, fresh.http_max_body);
	reload_size("http-max-header", &cfg->http_max_header, fresh.http_max_header);
	reload_int("remote-read-max-samples", &cfg->remote_read_max_samples,
	           fresh.remote_read_max_samples);
	reload_size("query-cache-size", &cfg->query_cache_size, fresh.query_cache_size);
	tsd_influxq_cache_size(cfg->query_cache_size);
	tsd_http_configure(cfg);
	report_fixed(cfg, &fresh);
	tsd_config_free(&fresh);
	regulate(srv); /* a larger budget lets paused connections read */
	tsd_log("reloaded");
}

static void sighup_cb(uv_signal_t *s, int signum)
{
	(void)signum;
	reload(s->data);
}

/* ---- Serving ---- */

static void close_handles(struct server *srv)
{
	uv_close((uv_handle_t *)&srv->sweep, NULL);
	uv_close((uv_handle_t *)&srv->sigterm, NULL);
	uv_close((uv_handle_t *)&srv->sigint, NULL);
	uv_close((uv_handle_t *)&srv->sighup, NULL);
}

static int start_handles(struct server *srv)
{
	srv->sweep.data = srv->sigterm.data = srv->sigint.data = srv->sighup.data = srv;
	if (uv_timer_init(srv->loop, &srv->sweep) < 0 ||
	    uv_signal_init(srv->loop, &srv->sigterm) < 0 ||
	    uv_signal_init(srv->loop, &srv->sigint) < 0 ||
	    uv_signal_init(srv->loop, &srv->sighup) < 0 ||
	    uv_timer_start(&srv->sweep, sweep_cb, 1000, 1000) < 0 ||
	    uv_signal_start(&srv->sigterm, signal_cb, SIGTERM) < 0 ||
	    uv_signal_start(&srv->sigint, signal_cb, SIGINT) < 0 ||
	    uv_signal_start(&srv->sighup, sighup_cb, SIGHUP) < 0) {
		tsd_log("cannot set up the event loop");
		return -1;
	}
	return 0;
}

/*
 * Every table of the database, opened once on a worker as the daemon
 * starts, so that the library's maintenance serves them all from the
 * start: it serves the tables loaded in the handle (a table stays loaded
 * after its last close), and a table no client touched since a restart
 * would otherwise keep its unflushed log and its rows past the TTL until
 * someone asked for it.  A table that cannot be opened is logged and
 * left; a request for it reports the same error.
 */
static void adopt_work(uv_work_t *w)
{
	struct server *srv = w->data;
	char **names = NULL;
	int n = 0;
	if (ts_tables(srv->ctx.db, &names, &n) < 0) {
		tsd_log("listing the tables to maintain: %s", ts_errmsg(NULL));
		return;
	}
	for (int i = 0; i < n; i++) {
		ts_table *t;
		int rc = ts_table_open(srv->ctx.db, names[i], &t);
		if (rc == TS_ECLOSED)
			break; /* stopping */
		if (rc < 0) {
			tsd_log("table \"%s\" cannot be opened, so it is not maintained: %s", names[i],
			        *ts_errmsg(NULL) ? ts_errmsg(NULL) : ts_strerror(rc));
			continue;
		}
		ts_table_close(t);
	}
	ts_free_names(names);
}

static void adopt_done(uv_work_t *w, int status)
{
	(void)w, (void)status;
}

/* The mapping's once-per-table messages go to the daemon's log, and so
 * do the library's (ts_options.log: quarantined tablets, failed flushes,
 * merges and expiries, each naming its table). */
static void ingest_log(void *arg, const char *msg)
{
	(void)arg;
	tsd_log("%s", msg);
}

/* A primary whose EPOCH records a newer epoch of its lineage (a standby
 * of that epoch asked it to follow before it stopped: follow.c) starts
 * fenced, and says why and what to do. */
static void start_fenced(ts_db *db)
{
	ts_epoch e;
	uint64_t newer = 0;
	if (ts_epoch_fenced_by(db, &newer) < 0 || !newer || ts_epoch_get(db, &e) < 0)
		return;
	tsd_role_fence(newer, e.epoch);
	tsd_log("EPOCH records a member of this lineage at epoch %" PRIu64 ": this database "
	        "(epoch %" PRIu64 ") is a stale primary and takes no writes; follow the primary "
	        "of epoch %" PRIu64 " (--follow), or, if it is lost for good, 'tsstore promote "
	        "--force' makes this one the primary of epoch %" PRIu64, newer, e.epoch, newer,
	        newer + 1);
}

int tsd_serve(struct tsd_config *cfg)
{
	struct server srv;
	struct tsd_mount *mount = NULL;
	struct tsd_link *link = NULL;
	char workers[16];
	int status = 1, rc;
	memset(&srv, 0, sizeof srv);
	srv.cfg = cfg;
	srv.ctx.cfg = cfg;
	if (cfg->log_file && tsd_log_open(cfg->log_file) < 0)
		return 1;
	snprintf(workers, sizeof workers, "%d", cfg->workers);
	setenv("UV_THREADPOOL_SIZE", workers, 1); /* read at the first uv_queue_work */
	cfg->lib.log = ingest_log;
	tsd_role_start(cfg->follow);
	/* A standby: the link writes the directory, the daemon reads it */
	if (cfg->follow && tsd_link_open(cfg, &link) < 0)
		return 1;
	cfg->lib.flags |= cfg->follow ? TS_OPEN_READONLY : TS_OPEN_CREATE;
	if ((rc = ts_open(cfg->datadir, &cfg->lib, &srv.ctx.db)) < 0) {
		tsd_log("%s: %s", cfg->datadir, *ts_errmsg(NULL) ? ts_errmsg(NULL) : ts_strerror(rc));
		tsd_link_close(link);
		return 1;
	}
	if (!cfg->follow)
		start_fenced(srv.ctx.db);
	tsd_influxq_cache_size(cfg->query_cache_size);
	struct tsd_ingest_options io = {.default_ttl = cfg->ingest_default_ttl,
	                                .max_future = cfg->lib.max_future, .log = ingest_log};
	if (tsd_ingest_open(srv.ctx.db, &io, &srv.ctx.ingest) < 0 ||
	    tsd_graphite_open(srv.ctx.ingest, cfg->graphite_template, cfg->ngraphite_templates,
	                      &srv.ctx.graphite) < 0 ||
	    (cfg->mount && tsd_mount_start(srv.ctx.db, cfg->mount, &mount) < 0)) {
		tsd_graphite_close(srv.ctx.graphite);
		tsd_ingest_close(srv.ctx.ingest);
		ts_close(srv.ctx.db);
		tsd_link_close(link);
		return 1;
	}
	srv.loop = uv_default_loop();
	tsd_http_configure(cfg);
	if (start_handles(&srv) < 0) {
		tsd_mount_stop(mount);
		tsd_graphite_close(srv.ctx.graphite);
		tsd_ingest_close(srv.ctx.ingest);
		ts_close(srv.ctx.db);
		tsd_link_close(link);
		return 1;
	}
	int listening = open_listeners(&srv) == 0;
	if (listening && link)
		tsd_log("serving %s read-only, the standby of %s (version %s)", cfg->datadir,
		        cfg->follow, ts_version());
	else if (listening)
		tsd_log("serving %s (version %s)", cfg->datadir, ts_version());
	srv.ctx.link = link;
	if (listening && (!link || tsd_link_start(link, srv.ctx.db) == 0)) {
		status = 0;
		srv.adopt.data = &srv;
		if (uv_queue_work(srv.loop, &srv.adopt, adopt_work, adopt_done) < 0)
			tsd_log("cannot open the tables to maintain them: they are maintained once used");
	} else {
		close_listeners(&srv);
		close_handles(&srv);
	}
	uv_run(srv.loop, UV_RUN_DEFAULT);
	tsd_link_stop(link); /* before the handle reading what it writes */
	tsd_mount_stop(mount);
	tsd_graphite_close(srv.ctx.graphite);
	tsd_ingest_close(srv.ctx.ingest);
	if (tsd_link_close(link) < 0) /* a promoted standby's writer */
		status = 1;
	if ((rc = ts_close(srv.ctx.db)) < 0) {
		tsd_log("closing %s: %s", cfg->datadir, ts_strerror(rc));
		status = 1;
	}
	if (uv_loop_close(srv.loop) < 0)
		tsd_log("event loop closed with handles still open");
	if (status == 0)
		tsd_log("stopped");
	return status;
}
