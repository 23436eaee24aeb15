/*
 * tsd.h -- what the modules of tsstored share: its limits, its
 * configuration, its counters, and the request interface between the
 * event loop (server.c) and the worker threads (request.c).
 *
 * The shape of the daemon (DESIGN.md section 5):
 *   main.c     options and config file, then tsd_serve
 *   config.c   every option, from the command line or the config file
 *   server.c   the libuv loop: listeners, connections, line framing,
 *              ordering of responses, flow control, idle and shutdown
 *   request.c  one request: parse it, run it against the database, and
 *              produce its response lines -- on a worker thread
 *   http.c     the HTTP listener's side: parsing requests (http_parser),
 *              their routes, authentication and responses (GET /metrics
 *              among them); its steps run on the worker threads like
 *              request.c's
 *   stats.c    the daemon's counters and latency histograms, as JSON
 *              (the stats op) and Prometheus text (GET /metrics)
 *   follow.c   the "follow" op: a standby's stream of frames (ts_ship)
 *   link.c     --follow: this daemon as a standby, its link to the
 *              primary on a thread of its own (ts_standby)
 *   access.c   who may do what: the level each op and HTTP route needs
 *              (read, write, admin), the level each client has, and the
 *              message of a refusal
 *   ingest.c   line protocol points into tables (ingest.h), for HTTP writes
 *   promwrite.c  Prometheus remote write into the same tables (promwrite.h)
 *   graphite.c   Graphite plaintext lines into the same tables (graphite.h),
 *                from the graphite: and graphite-udp: listeners
 * The wire formats themselves (line protocol, remote write, Graphite) are
 * parsed by the pure modules of wire/; these files map what they give to
 * tables.  Only include/tsstore.h is used from the library, never lib/
 * internals.
 */
#ifndef TSSTORE_DAEMON_TSD_H
#define TSSTORE_DAEMON_TSD_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>
#include <tsstore.h>

#include "json.h"

#define TSD_PROGRAM "tsstored"

/* ---- Limits and defaults, named once --------------------------------- */

#define TSD_DEFAULT_DATADIR "./tsstore-data"
#define TSD_SOCKET_NAME "tsstored.sock"          /* in DATADIR */
#define TSD_DEFAULT_TCP "tcp:127.0.0.1:7400"
#define TSD_DEFAULT_HTTP "http:127.0.0.1:7401"
#define TSD_LISTEN_MAX 16                        /* --listen options */
#define TSD_GRAPHITE_TEMPLATES_MAX 64            /* --graphite-template options */
#define TSD_LINE_MAX_DEFAULT ((size_t)64 << 20)  /* longest request line */
#define TSD_CONNECTIONS_MAX_DEFAULT 1024         /* open connections */
#define TSD_CHUNK_ROWS_DEFAULT 1000              /* rows per "rows" line */
#define TSD_IDLE_TIMEOUT_DEFAULT 0               /* ns; 0: never */
#define TSD_WORKERS_DEFAULT 4                    /* worker threads */
#define TSD_WORKERS_MAX 128
#define TSD_SHUTDOWN_TIMEOUT_DEFAULT (30 * 1000000000LL) /* ns */
#define TSD_REPLICA_TIMEOUT_DEFAULT (10 * 1000000000LL) /* ns: sync=replica's wait */
#define TSD_REPLICA_WAIT (2 * 1000000LL)  /* ns a waiting insert's step waits for an ack */
#define TSD_BACKLOG 128                          /* listen(2) backlog */
#define TSD_PATH_MAX 4096                        /* longest path the daemon builds */

/* Bytes of response a connection may have queued for the client before
 * its request pauses (a client that reads slowly holds at most this much
 * of the daemon's memory, plus one step of output). */
#define TSD_WRITE_HIGH_WATER ((size_t)1 << 20)
/* A "rows" line is also cut once it holds this many bytes. */
#define TSD_CHUNK_BYTES ((size_t)256 << 10)
/* Complete request lines a connection may have waiting: beyond this
 * many, or TSD_PIPELINE_BYTES of them, the daemon stops reading from it
 * until they have run. */
#define TSD_PIPELINE_MAX 1024
#define TSD_PIPELINE_BYTES ((size_t)1 << 20)
/* A follow stream (follow.c): with nothing to send, heartbeats this
 * often; while a table's frames flow, one of it at least this often
 * (the standby's lag under load is measured against them); between
 * looks at the tables, a step sleeps TSD_FOLLOW_POLL. */
#define TSD_FOLLOW_HEARTBEAT (1000 * 1000000LL) /* ns */
#define TSD_FOLLOW_BUSY_HEARTBEAT (100 * 1000000LL) /* ns */
#define TSD_FOLLOW_POLL (10 * 1000000L)         /* ns, < 1 s */
/* Longest message text in an error line, bytes. */
#define TSD_MESSAGE_MAX 1024
/* Problems a check response lists at most (its "count" has them all). */
#define TSD_CHECK_PROBLEMS_MAX 1000
/* Longest token (the first line of --token FILE), bytes. */
#define TSD_TOKEN_MAX 4096
/* Memory held for requests by all connections together (input buffers
 * and request lines): past it the daemon stops reading (backpressure).
 * 256 MiB holds four lines of the default line-max at once, and stays a
 * small share of a server's memory; set it lower on a small machine. */
#define TSD_REQUEST_MEMORY_DEFAULT ((size_t)256 << 20)
/* A connection's input buffer starts at this size and grows by doubling. */
#define TSD_INPUT_CHUNK ((size_t)64 << 10)
/* The connection let past the budget to finish its line (the favoured
 * one) while others wait for memory is closed when it sends nothing for
 * this long (line-stall-timeout), so a client that stops mid-line cannot
 * stall the others' long lines even without idle-timeout.  10 s is far
 * longer than any gap of a client that is sending, and short enough
 * that the waiting clients see a delay, not a hang. */
#define TSD_LINE_STALL_TIMEOUT_DEFAULT (10 * 1000000000LL) /* ns */
/* The largest HTTP request body (http-max-body), after gzip decoding
 * too: beyond it a request is answered 413 and the connection closed.
 * As line-max, so that a body holds what a request line may. */
#define TSD_HTTP_MAX_BODY_DEFAULT ((size_t)64 << 20)
/* The largest HTTP request line and headers together (http-max-header):
 * beyond it, 431 and the connection closed.  64 KiB is 8 times what
 * common servers allow (8 KiB), far above what any collector sends. */
#define TSD_HTTP_MAX_HEADER_DEFAULT ((size_t)64 << 10)
#define TSD_HTTP_MAX_HEADER_MIN ((size_t)1 << 10)
#define TSD_HTTP_MAX_HEADER_MAX ((size_t)16 << 20)

/* ---- Configuration (config.c) ----------------------------------------- */

struct tsd_config {
	const char *datadir;
	const char *listen[TSD_LISTEN_MAX]; /* "unix:PATH" / "tcp:HOST:PORT" / "http:HOST:PORT" /
	                                     * "graphite:HOST:PORT" / "graphite-udp:HOST:PORT" */
	int nlisten;
	const char *graphite_template[TSD_GRAPHITE_TEMPLATES_MAX]; /* wire/graphite.h's templates,
	                                     * in the order given */
	int ngraphite_templates;
	const char *mount;
	const char *config_file;
	const char *token_file;
	char *token;                        /* read from token_file; see tsd_token_check */
	const char *log_file;               /* log here instead of stderr */
	const char *follow;                 /* "tcp:HOST:PORT": this tsstored is a
	                                     * read-only standby of that primary
	                                     * (link.c); NULL: a primary */
	ts_options lib;                     /* passed to ts_open */
	int sync_replica;                   /* --sync replica: lib.sync is
	                                     * TS_SYNC_COMMIT and an insert waits
	                                     * for a standby's ack (replica.c) */
	int64_t replica_timeout;            /* ns an insert waits for it */
	size_t line_max;
	size_t request_memory;              /* the budget, bytes */
	int max_connections;
	int chunk_rows;
	int64_t idle_timeout;               /* ns, 0: never */
	int64_t line_stall_timeout;         /* ns, > 0 */
	int workers;
	int64_t shutdown_timeout;           /* ns */
	int64_t ingest_default_ttl;         /* ns: TTL of the tables the line
	                                     * protocol creates (ingest.c); 0 = forever */
	size_t http_max_body;               /* bytes, after decoding */
	size_t http_max_header;             /* bytes of request line and headers */
	size_t query_cache_size;            /* the /query window cache's budget,
	                                     * bytes, 0: off (influxq.h) */
	int remote_read_max_samples;        /* samples one remote read may answer
	                                     * (promread.h); workers read it: atomic */
	int loopback_access;                /* enum tsd_access: what a loopback TCP or
	                                     * HTTP client may do without the token;
	                                     * TSD_ACCESS_UNSET until tsd_config_finish.
	                                     * Workers read it: atomic loads. */
	char **owned;                       /* copies of option values, freed at exit */
	int nowned;
	/* Build the configuration afresh, as at the start (config file,
	 * then command line, then tsd_config_finish), for SIGHUP; returns
	 * 0 or -1 after the messages.  NULL: no reload. */
	int (*load)(struct tsd_config *fresh);
};

/* Fill cfg with the defaults.  */
void tsd_config_init(struct tsd_config *cfg);

/* Release the copies cfg owns. */
void tsd_config_free(struct tsd_config *cfg);

/*
 * tsd_config_set -- set option name (the long option without "--", e.g.
 * "sync-interval") to value (NULL for flags).  origin names where it came
 * from for messages ("--listen", "tsstored.conf:12").
 * Returns 0, or -1 after printing "tsstored: ORIGIN: why" on stderr.
 */
int tsd_config_set(struct tsd_config *cfg, const char *name, const char *value,
                   const char *origin);

/*
 * tsd_config_file -- read "name = value" lines (# comments, blank lines)
 * from path and tsd_config_set each.  Returns 0 or -1 after the message.
 */
int tsd_config_file(struct tsd_config *cfg, const char *path);

/*
 * tsd_config_finish -- the checks that need every option: the default
 * listeners, the token (read from its file; required for a non-loopback
 * TCP address), and loopback-access when not given (none with a token,
 * write without).  Returns 0 or -1 after the message.
 */
int tsd_config_finish(struct tsd_config *cfg);

/*
 * tsd_tcp_split -- "HOST:PORT" (after "tcp:") into host (brackets of an
 * IPv6 address removed, "localhost" as 127.0.0.1; size bytes of room)
 * and port.  Returns 0, or -1 when there is no ':' or the host is too
 * long.
 */
int tsd_tcp_split(const char *hostport, char *host, size_t size, int *port);

/* The "HOST:PORT" of a "tcp:", "http:", "graphite:" or "graphite-udp:"
 * listener address, or NULL for any other (a unix socket). */
const char *tsd_listen_hostport(const char *addr);

/* Whether the host of a listener address with a HOST:PORT is a loopback
 * address (127.0.0.0/8, ::1, localhost); 0 for a unix socket. */
int tsd_listen_loopback(const char *addr);

/* A copy of s that lives as long as cfg, or NULL when out of memory. */
const char *tsd_config_keep(struct tsd_config *cfg, const char *s);

/* Whether an option takes a value: 1, 0 (a flag), or -1 (unknown). */
int tsd_config_has_arg(const char *name);

/*
 * tsd_token_check -- whether token[0..len) (the client's, compared whole
 * even if it holds NUL bytes, in time independent of where it differs)
 * is cfg's token; 0 when there is none (nothing authenticates then, so
 * a reload that removes the token cannot let a client in).  Any thread.
 */
int tsd_token_check(struct tsd_config *cfg, const char *token, size_t len);

/* Whether cfg has a token now (a reload sets or removes it).  Any
 * thread. */
int tsd_token_set(struct tsd_config *cfg);

/* A copy of cfg's token now (malloc'ed: the caller frees it), or NULL
 * when there is none or no memory: what a standby's link sends its
 * primary (link.c).  Any thread. */
char *tsd_token_copy(struct tsd_config *cfg);

/* Replace cfg's token by token (taken over; NULL for none) and free the
 * old, under the lock tsd_token_check takes (a reload on the loop
 * thread while workers check). */
void tsd_token_replace(struct tsd_config *cfg, char *token);

/* ---- Following: the primary's side (follow.c) ------------------------- */

struct tsd_follow;

/*
 * tsd_follow_open -- a follow stream for the "follow" request req (its
 * "lineage", "epoch" and "tables", docs/protocol.md): every table of db
 * shipped from what the standby says it has, and an end for each table
 * it named that db lacks.  Returns 0 with *out, or a TS_E* code with
 * msg[0..size) saying why (another lineage, a newer epoch: EINVAL; a
 * malformed field: EPROTO).
 */
int tsd_follow_open(ts_db *db, const json_t *req, struct tsd_follow **out, char *msg,
                    size_t size);

/*
 * tsd_follow_step -- append the frames the tables have now to out (up to
 * about TSD_CHUNK_BYTES; a table's heartbeat after its frames when it
 * had none for TSD_FOLLOW_BUSY_HEARTBEAT), or heartbeats when nothing was sent for
 * TSD_FOLLOW_HEARTBEAT, or else wait up to TSD_FOLLOW_POLL (ended by an
 * insert under sync=replica: tsd_replica_idle) and append nothing.  Returns 0, or a TS_E* code with msg saying why (the stream
 * must then end: the standby resumes with a new follow).
 */
int tsd_follow_step(struct tsd_follow *f, struct jbuf *out, char *msg, size_t size);

/* Free a follow stream (NULL: nothing). */
void tsd_follow_free(struct tsd_follow *f);

/* The lineage of e as 32 lowercase hex digits. */
void tsd_lineage_hex(const ts_epoch *e, char out[2 * TS_LINEAGE_SIZE + 1]);

/* ---- sync=replica: the standbys' acks (replica.c) --------------------- */

/* A follow stream that sends acks began (+1) or ended (-1). */
void tsd_replica_attach(int delta);

/*
 * tsd_replica_line -- a line a standby sent on its follow connection,
 * line[0..len): {"ack":{"TABLE":LSN,...}}, the newest commit of each
 * table it applied and synced.  Returns 0, or -1 when the line is no
 * such object (ignored).  The event loop's thread.
 */
int tsd_replica_line(const char *line, size_t len);

/* table was dropped: its acks are forgotten (a new table of that name
 * starts its log anew). */
void tsd_replica_forget(const char *table);

/*
 * tsd_replica_acked -- 1 when a standby acknowledged table's commit lsn
 * (or a later one), else 0 after waiting up to wait_ns for an ack (any
 * table's).  *streams: the follow streams attached now.  Any thread.
 */
int tsd_replica_acked(const char *table, uint64_t lsn, int64_t wait_ns, int *streams);

/*
 * tsd_replica_timed_out -- the message of a write under sync=replica
 * that no standby acknowledged within replica-timeout, into buf (size
 * bytes): "sync=replica: no standby acknowledged commit LSN of table
 * "TABLE" within replica-timeout; WHAT committed here, but not known to
 * be on a standby" ("no standby is following, so none acknowledged"
 * when streams is 0).  what: "the rows are", "the deletion is", "the
 * points are".
 */
void tsd_replica_timed_out(char *buf, size_t size, int streams, const char *table, uint64_t lsn,
                           const char *what);

/* An insert under sync=replica committed: a follow step waiting in
 * tsd_replica_idle looks at once.  Any thread. */
void tsd_replica_committed(void);

/* How many tsd_replica_committed so far (for tsd_replica_idle). */
uint64_t tsd_replica_commits(void);

/* Wait up to ns, or until tsd_replica_commits() is no longer seen: what
 * a caught-up follow step does instead of sleeping.  Any thread. */
void tsd_replica_idle(uint64_t seen, int64_t ns);

/* ---- Following: the standby's side (link.c) -------------------------- */

struct tsd_link;

/*
 * tsd_link_open -- open cfg->datadir as the standby of cfg->follow
 * (ts_standby_open: created when missing, its LOCK taken), before the
 * daemon opens it read-only.  Returns 0 with *out, or -1 after logging
 * why (another writer holds it).
 */
int tsd_link_open(struct tsd_config *cfg, struct tsd_link **out);

/* Start following, on a thread of its own, db being the daemon's
 * read-only handle on the directory.  Returns 0, or -1 after logging. */
int tsd_link_start(struct tsd_link *l, ts_db *db);

/*
 * tsd_link_promote -- make this standby a primary ("promote",
 * docs/standby.md section 3): stop the thread and wait for it, sync and
 * close the standby, open the directory read-write (cfg->lib without
 * TS_OPEN_READONLY) and raise its epoch (durable on return), then the
 * role is primary and tsd_link_db gives the new handle.  Returns 0 with
 * *e the new lineage and epoch, or TS_EINVAL with msg[0..size) saying
 * why: promoted already, a table whose descriptor waits for log bytes
 * (DESCRIPTOR.next: the primary's log was released before the standby
 * had it), the open or the raise failed (logged too).  Any thread.
 */
int tsd_link_promote(struct tsd_link *l, ts_epoch *e, char *msg, size_t size);

/* The database requests should use: after a promote, the writer's
 * handle; else db (l NULL: db).  Any thread. */
ts_db *tsd_link_db(struct tsd_link *l, ts_db *db);

/* Stop the thread (its session ends within 100 ms), sync and close the
 * standby (nothing after a promote).  NULL allowed. */
void tsd_link_stop(struct tsd_link *l);

/* tsd_link_stop, then close the writer of a promote, free the link.
 * Returns 0, or the writer's ts_close error (logged).  NULL allowed. */
int tsd_link_close(struct tsd_link *l);

/* ---- The FUSE view (mount.c; mount_none.c when built without FUSE) ----- */

struct tsd_mount;

/* 1 when this tsstored can serve the view (built with FUSE), else 0. */
extern const int tsd_mount_available;

/* Why --mount is refused by a tsstored built without FUSE. */
#define TSD_NO_FUSE "this tsstored was built without FUSE (./configure --without-fuse): it cannot serve the view"

/* Mount the read-only view of db at mountpoint and serve it on a thread
 * of its own.  Returns 0 with *out set, or -1 after logging why. */
int tsd_mount_start(ts_db *db, const char *mountpoint, struct tsd_mount **out);

/* Unmount and stop serving (open files are closed); before db is
 * closed.  NULL allowed. */
void tsd_mount_stop(struct tsd_mount *m);

/* ---- Counters (stats.c) ----------------------------------------------- */

/* Every op of the protocol, in the order of DESIGN.md section 5. */
enum tsd_op {
	TSD_OP_NONE = 0, /* a line that names no valid op */
	TSD_OP_PING,
	TSD_OP_TABLES,
	TSD_OP_CREATE,
	TSD_OP_SCHEMA,
	TSD_OP_ALTER,
	TSD_OP_DROP,
	TSD_OP_INSERT,
	TSD_OP_QUERY,
	TSD_OP_LATEST,
	TSD_OP_AGGREGATE,
	TSD_OP_FLUSH,
	TSD_OP_STATS,
	TSD_OP_CHECK,    /* extensions beyond section 5, for tsstore -s */
	TSD_OP_SNAPSHOT,
	TSD_OP_AUTH,
	TSD_OP_DELETE,   /* corrections (issue 28, docs/corrections.md) */
	TSD_OP_PURGE,
	TSD_OP_CHANGES,
	TSD_OP_CREATE_ROLLUP, /* rollups (issue 29, docs/rollups.md) */
	TSD_OP_ROLLUPS,
	TSD_OP_FOLLOW,   /* a standby (issue 33, docs/standby.md; follow.c) */
	TSD_OP_PROMOTE,  /* the standby becomes a primary (link.c) */
	TSD_NOPS
};

/* The op's protocol name ("ping"), or NULL for TSD_OP_NONE. */
const char *tsd_op_name(enum tsd_op op);

/* The op called name, or TSD_OP_NONE. */
enum tsd_op tsd_op_parse(const char *name);

/* Error codes the daemon adds to the library's (ts_errname): */
#define TSD_EAUTH (-1000) /* "EAUTH": authentication required or refused */
#define TSD_EREPLICA (-1001) /* "EREPLICA": sync=replica: no standby acked in time */

/* The protocol name of an error code: ts_errname, "EAUTH" or "EREPLICA". */
const char *tsd_errname(int code);

/* Count a new connection / a closed one. */
void tsd_stats_connection(int opened);
/* Count a finished request: op, error code (0 for success), latency. */
void tsd_stats_request(enum tsd_op op, int code, int64_t ns);
/* Count rows received by insert / sent by query, latest and aggregate. */
void tsd_stats_rows(uint64_t in, uint64_t out);
/* The request memory held now and the connections paused for it (the
 * peak is kept); a pause; a connection refused at max-connections; one
 * closed by idle-timeout. */
void tsd_stats_memory(size_t used, int paused);
void tsd_stats_pause(void);
void tsd_stats_refused(void);
void tsd_stats_timeout(void);

/* A standby's link (link.c): the primary it follows (once, before the
 * link starts; the reports then say "standby"), a follow stream begun
 * or ended, a frame applied (its type and payload bytes), and the lag
 * (log bytes, ns; docs/standby.md "Lag").  Any thread. */
void tsd_stats_standby_start(const char *primary);
void tsd_stats_standby_connected(int yes);
void tsd_stats_standby_frame(int type, uint64_t bytes);
void tsd_stats_standby_lag(uint64_t lsn, int64_t ns);

/* Count bytes received from clients / sent to them (every listener). */
void tsd_stats_bytes(uint64_t in, uint64_t out);

/* The routes of the HTTP listener (http.c), for its counters. */
enum tsd_http_route {
	TSD_HTTP_NOROUTE = 0, /* an unknown path, or a request not parsed */
	TSD_HTTP_PING,        /* GET /ping */
	TSD_HTTP_HEALTH,      /* GET /health */
	TSD_HTTP_METRICS,     /* GET /metrics */
	TSD_HTTP_WRITE,       /* POST /write (InfluxDB 1.x) */
	TSD_HTTP_WRITE_V2,    /* POST /api/v2/write (InfluxDB 2.x) */
	TSD_HTTP_PROM_WRITE,  /* POST /api/v1/write (Prometheus remote write) */
	TSD_HTTP_PROM_READ,   /* POST /api/v1/read (Prometheus remote read) */
	TSD_HTTP_QUERY,       /* GET|POST /query (InfluxQL, influxq.c) */
	TSD_HTTP_NROUTES
};

/* The path of a route ("/ping"; "" for TSD_HTTP_NOROUTE). */
const char *tsd_http_route_path(enum tsd_http_route route);

/* Count a finished HTTP request: its route, status and latency. */
void tsd_stats_http(enum tsd_http_route route, int status, int64_t ns);

/* Append the daemon's counters to the JSON object being written in b
 * (",\"name\":value" members). */
void tsd_stats_json(struct jbuf *b);

/* Append the daemon's counters in Prometheus text exposition format
 * 0.0.4 (each family with its HELP and TYPE lines, names tsstore_*). */
void tsd_stats_prometheus(struct jbuf *b);

/* ---- Access levels (access.c) ------------------------------------------ */

/*
 * What a request needs, and what a client may do, ordered: each level
 * allows what those below it do.  As a need, TSD_ACCESS_NONE is "nothing"
 * (auth; GET /ping and /health); as what a client has, it allows only
 * those.  tsstored(8) has the table of every op and route.
 */
enum tsd_access {
	TSD_ACCESS_NONE,
	TSD_ACCESS_READ,  /* queries, changes, schema, tables, stats, ping, /metrics */
	TSD_ACCESS_WRITE, /* insert, create, the HTTP and Graphite writes */
	TSD_ACCESS_ADMIN, /* alter, drop, delete, purge, flush, check, snapshot;
	                   * an insert with "on_duplicate":"replace" into a
	                   * table whose own policy is not replace */
};
/* cfg->loopback_access before tsd_config_finish when none was given. */
#define TSD_ACCESS_UNSET (-1)

/* Where a client is connected: what it may do without the token. */
enum tsd_peer {
	TSD_PEER_UNIX,     /* a unix socket: admin (the file mode decides who) */
	TSD_PEER_LOOPBACK, /* a TCP or HTTP listener on a loopback address */
	TSD_PEER_REMOTE,   /* any other TCP or HTTP listener: none */
};

/* "none", "read", "write" or "admin". */
const char *tsd_access_name(enum tsd_access level);

/* The level called name into *out.  Returns 0, or -1 for another name. */
int tsd_access_parse(const char *name, enum tsd_access *out);

/* The level op needs (TSD_OP_NONE: TSD_ACCESS_NONE, it is refused
 * before). */
enum tsd_access tsd_access_op(enum tsd_op op);

/* The level an HTTP route needs (TSD_HTTP_NOROUTE: TSD_ACCESS_NONE, it
 * is answered 404). */
enum tsd_access tsd_access_route(enum tsd_http_route route);

/* The level of a client at peer that has authenticated (authed: the
 * token it sent matched) or not: admin when authenticated or on a unix
 * socket, loopback-access on a loopback listener, else none.  Any
 * thread. */
enum tsd_access tsd_access_granted(struct tsd_config *cfg, enum tsd_peer peer, int authed);

/*
 * tsd_access_refusal -- the message for a request refused because its
 * client at peer has less than need: what it is (what: "\"drop\"",
 * "POST /write"), the level it needs, how to get it (the token, the
 * unix socket; as the JSON-lines protocol or HTTP sends it: http) and
 * loopback-access, into buf (size bytes).
 */
void tsd_access_refusal(struct tsd_config *cfg, enum tsd_peer peer, int http, const char *what,
                        enum tsd_access need, char *buf, size_t size);

/* Whether a request changes the database, so that a standby refuses it:
 * op (TSD_OP_NONE for an HTTP request), else route. */
int tsd_standby_changes(enum tsd_op op, enum tsd_http_route route);

/* The daemon's role (access.c; docs/standby.md): what writes it takes. */
enum tsd_role {
	TSD_ROLE_PRIMARY,   /* every write */
	TSD_ROLE_STANDBY,   /* --follow, not promoted: none */
	TSD_ROLE_FENCED,    /* a primary that heard of a newer epoch: none */
};

/* The role at the daemon's start: a standby of primary (cfg->follow)
 * until promoted, or (NULL) a primary; not fenced.  Once, before the
 * listeners open. */
void tsd_role_start(const char *primary);

/* The standby was promoted (link.c): a primary from now on. */
void tsd_role_promoted(void);

/* A follower at epoch newer of this database's lineage asked to follow,
 * or the database's EPOCH records that one did (at the start); own is
 * this database's epoch: fenced from now on.  Returns 1 the first time
 * (the caller logs it), else 0. */
int tsd_role_fence(uint64_t newer, uint64_t own);

/* A stale primary took over again (promote with force, its epoch raised
 * past newer's): a primary, not fenced, from now on. */
void tsd_role_unfence(void);

/* The role now; *fenced_by (NULL allowed): the newer epoch heard of, or 0. */
enum tsd_role tsd_role_now(uint64_t *fenced_by);

/*
 * tsd_write_refusal -- whether the role refuses what ("\"insert\"",
 * "POST /write"; op, or TSD_OP_NONE and route): 0 when not; 1 with the
 * message in buf (size bytes): on a standby "read-only standby of
 * tcp:HOST:PORT: ... would change the database; send it to the
 * primary", on a fenced primary "stale primary: a member of this lineage
 * at epoch N exists, ...".  Answered with code EREADONLY (JSON lines) or
 * 503 (HTTP).
 */
int tsd_write_refusal(enum tsd_op op, enum tsd_http_route route, const char *what, char *buf,
                      size_t size);

/* The monotonic clock, ns (what the daemon's intervals are measured on). */
int64_t tsd_mono_ns(void);

/* What clients are refused, logged (tsd_access_log) with the client:
 * connections at max-connections, failed authentications (a wrong
 * token, or one sent to a tsstored without one), requests above the
 * client's level. */
enum tsd_log_kind {
	TSD_LOG_REFUSED,
	TSD_LOG_AUTH,
	TSD_LOG_ACCESS,
	TSD_LOG_NKINDS
};
/* Lines of one kind logged at most in a window, and the window (ns):
 * a client that fails a thousand times a second adds one line a second
 * at worst. */
#define TSD_CLIENT_LOG_BURST 10
#define TSD_CLIENT_LOG_WINDOW (60 * 1000000000LL)
/* Longest description of a client: "LISTENER from HOST:PORT". */
#define TSD_CLIENT_NAME_MAX 320

/*
 * tsd_access_log -- log the line fmt (printf) of kind as tsd_log does,
 * unless TSD_CLIENT_LOG_BURST lines of that kind were logged in the
 * current window: then it is only counted, and the number left out is
 * logged once the window is over.  Any thread.
 */
void tsd_access_log(enum tsd_log_kind kind, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Log how many lines each kind left out in a window now over (the
 * server's sweep calls it each second).  Any thread. */
void tsd_access_log_flush(void);

/* For tests: the window, ns (0: TSD_CLIENT_LOG_WINDOW). */
void tsd_access_log_window(int64_t ns);

/* ---- Requests (request.c) --------------------------------------------- */

/*
 * What a worker thread needs besides the request: the database, the
 * limits, and whether the connection has authenticated (auth changes it).
 */
struct tsd_ingest;
struct tsd_context {
	ts_db *db;              /* read through tsd_db: a promote replaces it */
	struct tsd_config *cfg; /* chunk_rows and token change on SIGHUP */
	struct tsd_ingest *ingest; /* line protocol into tables (ingest.h); NULL: none */
	struct tsd_graphite *graphite; /* Graphite lines into tables (graphite.h); NULL: none */
	int stopping;           /* atomic: the daemon is stopping (server.c sets
	                         * it; a follow stream ends at its next step) */
	struct tsd_link *link;  /* a standby's link (link.c); NULL: none */
};

/* The database a request uses: ctx->db, or a promoted standby's writer
 * (tsd_link_db). */
static inline ts_db *tsd_db(const struct tsd_context *ctx)
{
	return tsd_link_db(ctx->link, ctx->db);
}

struct tsd_request;

/*
 * tsd_request_new -- a request for the line at line[0..len) (copied; no
 * '\n').  cut: TSD_LINE_WHOLE for a line received; TSD_LINE_TOO_LONG
 * when the line exceeded the limit and was cut (it is answered with an
 * ETOOBIG error and nothing else); TSD_LINE_STALLED when the client
 * stalled in the middle of its line while others waited for memory:
 * line[0..len) is then the message of the EBUSY error it is answered
 * with.  Both errors close the connection.  TSD_LINE_GRAPHITE: line[0..len)
 * holds Graphite plaintext lines, stored by tsd_graphite_lines and
 * answered with nothing (a graphite: connection).
 * Returns the request, or NULL when out of memory.
 */
enum { TSD_LINE_WHOLE, TSD_LINE_TOO_LONG, TSD_LINE_STALLED, TSD_LINE_GRAPHITE };
struct tsd_request *tsd_request_new(const char *line, size_t len, int cut);

/*
 * tsd_request_step -- run the request on until it has produced about a
 * chunk of output or has finished; the step that finishes it also
 * releases its cursor and table.  Called on a worker thread, never on
 * two threads at once for one request.  peer: where the connection is
 * (what it may do without the token, tsd_access_granted); *authed is
 * its state, read and (by "auth") set.
 */
void tsd_request_step(struct tsd_request *r, const struct tsd_context *ctx,
                      int *authed, enum tsd_peer peer);

/* Name the client r came from in what it logs (a failed "auth", a
 * refused op): "LISTENER from HOST:PORT", kept as a pointer (it must
 * outlive r: the connection's).  Unset: "a client". */
void tsd_request_set_client(struct tsd_request *r, const char *client);

/*
 * tsd_request_output -- the output produced by the last step: the caller
 * takes the buffer (and must free it), and the request's is emptied.
 */
void tsd_request_output(struct tsd_request *r, char **p, size_t *len);

/* Whether the request has written its last line. */
int tsd_request_done(const struct tsd_request *r);

/* Whether r (NULL allowed) is a follow stream whose standby sends acks
 * (sync=replica): the lines its connection sends are then acks for
 * tsd_replica_line, not requests.  The loop's thread, while a worker may
 * run r. */
int tsd_request_takes_acks(const struct tsd_request *r);

/* Whether the connection must be closed once the response is sent (an
 * over-long line, a refused token). */
int tsd_request_closes(const struct tsd_request *r);

/* The request's op and its result code (0, or the error), for stats. */
enum tsd_op tsd_request_op(const struct tsd_request *r);
int tsd_request_code(const struct tsd_request *r);

/* Bytes of the line the request holds (for the pipeline bound). */
size_t tsd_request_size(const struct tsd_request *r);

/* Release a request: its buffers, and its cursor and table if it did not
 * finish (a connection closed in the middle of a response). */
void tsd_request_free(struct tsd_request *r);

/* Count the finished request r that took ns: its op and code (a
 * JSON-lines request) or its route and status (an HTTP one). */
void tsd_request_count(const struct tsd_request *r, int64_t ns);

/* ---- HTTP (http.c) ------------------------------------------------------ */

struct tsd_http_conn; /* the parser of one HTTP connection */
struct tsd_http_req;  /* one HTTP request, received whole */

/*
 * What http.c needs of the connection it parses for (server.c): each
 * function gets arg.
 *   begin     a request began (its first byte): idle-timeout runs from
 *             here until it is received whole;
 *   request   a request received whole (or the error response to one
 *             that could not be), in order: queue it; 0, or -1 when the
 *             connection is closing and r was freed;
 *   room      whether the queue takes another request now (when not,
 *             parsing pauses, and the bytes left are fed again later);
 *   interim   send p[0..len) (a "100 Continue") now, if no response is
 *             due before it; else drop it.
 */
struct tsd_http_sink {
	void *arg;
	void (*begin)(void *arg);
	int (*request)(void *arg, struct tsd_request *r);
	int (*room)(void *arg);
	void (*interim)(void *arg, const char *p, size_t len);
};

/* Set what http_parser reads from cfg process-wide (http-max-header);
 * at the start and after each reload, on the loop thread. */
void tsd_http_configure(const struct tsd_config *cfg);

/* A parser for a new HTTP connection on a listener at peer (what its
 * requests may do without the token), or NULL when out of memory. */
struct tsd_http_conn *tsd_http_conn_new(struct tsd_config *cfg, enum tsd_peer peer);

/* Name the client of h in what it logs (a wrong token, a refused
 * request), as tsd_request_set_client. */
void tsd_http_conn_set_client(struct tsd_http_conn *h, const char *client);

/* Free a connection's parser and the request it was receiving.  NULL
 * allowed. */
void tsd_http_conn_free(struct tsd_http_conn *h);

/*
 * tsd_http_feed -- parse p[0..n) received on the connection, handing
 * each request received whole to sink->request.  Returns the bytes
 * consumed: fewer than n when the queue had no room (feed the rest
 * again later).  *stop is set when nothing more may be read from the
 * connection: a malformed, oversized or final ("Connection: close")
 * request was queued, and the connection closes after its response.
 * On the loop thread.
 */
size_t tsd_http_feed(struct tsd_http_conn *h, const char *p, size_t n,
                     const struct tsd_http_sink *sink, int *stop);

/* Bytes the parser holds for the request being received (its body so
 * far, its URL and headers kept), for max-request-memory. */
size_t tsd_http_held(const struct tsd_http_conn *h);

/* Whether a request has begun and is not yet received whole. */
int tsd_http_partial(const struct tsd_http_conn *h);

/*
 * tsd_http_error -- a request answering status (408, 503, ...) with
 * {"error": msg} and then closing the connection, for what the server
 * decides itself (timeouts).  NULL when out of memory.
 */
struct tsd_request *tsd_http_error(int status, const char *msg);

/* The response to a connection refused at max-connections (503, then
 * the connection closes): *len bytes, malloc'ed (the caller frees it);
 * NULL when out of memory. */
char *tsd_http_refusal(size_t *len);

/* The request.c side of an HTTP request (request.c wraps it in a
 * struct tsd_request for server.c's queue): */

/* Wrap h (taken over) as a request for the connection's queue; NULL
 * (and h freed) when out of memory. */
struct tsd_request *tsd_request_http(struct tsd_http_req *h);

/* Run h and write its whole response into out.  One step, but for a
 * write under sync=replica, whose steps after the first wait up to
 * TSD_REPLICA_WAIT each for a standby to acknowledge its commits and
 * write nothing until it has, or until replica-timeout (tsd_http_waits
 * says whether another step is due).  On a worker thread. */
void tsd_http_step(struct tsd_http_req *h, const struct tsd_context *ctx, struct jbuf *out);

/* Whether h waits for a standby's acknowledgement: its response is not
 * written yet, and request.c steps it again. */
int tsd_http_waits(const struct tsd_http_req *h);

/* Whether the connection closes after h's response. */
int tsd_http_closes(const struct tsd_http_req *h);

/* Bytes h holds (its body), for the pipeline and memory bounds. */
size_t tsd_http_size(const struct tsd_http_req *h);

/* Count h, finished after ns, in the HTTP counters. */
void tsd_http_count(const struct tsd_http_req *h, int64_t ns);

/* Free h.  NULL allowed. */
void tsd_http_free(struct tsd_http_req *h);

/* ---- The server (server.c) -------------------------------------------- */

/*
 * tsd_serve -- open the database, listen, and serve until SIGTERM or
 * SIGINT; then stop accepting, finish the requests received, sync, close.
 * Returns the process exit status: 0 after a clean stop, 1 when the
 * database or a listener could not be opened (after the message).
 */
int tsd_serve(struct tsd_config *cfg);

/* Log a line "tsstored: ..." to stderr. */
void tsd_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/*
 * tsd_log_open -- make path (appended to, created mode 0640) the
 * daemon's standard error, so that its log and any message of the
 * library go there; opened again on each SIGHUP, for log rotation.
 * NULL: back to the standard error the daemon was started with.
 * Returns 0, or -1 after logging why (the log stays where it was).
 */
int tsd_log_open(const char *path);

#endif /* TSSTORE_DAEMON_TSD_H */
