/*
 * access.c -- who may do what: the one table of the level each request
 * needs, for both of the daemon's request paths (the JSON-lines ops of
 * request.c and the HTTP routes of http.c), the level each client has,
 * and the message that refuses a request.
 *
 * The levels are ordered, each allowing what those below it do:
 *   read   everything that only looks: the queries, changes, schema,
 *          tables, rollups, stats, ping, GET /metrics, POST /api/v1/read (remote
 *          read);
 *   write  what adds rows or tables: insert, create, and the ingest
 *          endpoints (POST /write, /api/v2/write, /api/v1/write), which
 *          create the tables they write to;
 *   admin  what changes or removes what exists, or acts on the daemon's
 *          machine: alter, drop, delete, purge, flush, check, snapshot;
 *          and create_rollup, which adds a table but also work the
 *          store does for as long as it lives, and a table its source
 *          cannot be dropped without dropping first;
 *          and an insert whose "on_duplicate" is "replace" into a table
 *          whose own policy is not (it overwrites stored rows): request.c
 *          checks that one once the table is open (tsd_access_granted).
 * "create" is write: it only adds a table, never changes or removes
 * one (an existing name is refused with EEXIST), and a collector may
 * create tables through the ingest endpoints at that level anyway.
 * auth, GET /ping and GET /health need nothing.
 *
 * What a client has depends on where it is connected (enum tsd_peer)
 * and on whether it sent the token: a unix socket gives admin (its file
 * mode decides who connects); the token gives admin on any listener; a
 * loopback TCP or HTTP listener gives loopback-access without it (write
 * by default, none when a token is configured and loopback-access is
 * not given: config.c decides); any other listener gives nothing
 * without it.  loopback-access changes on SIGHUP while workers read it,
 * so it is read with an atomic load.
 *
 * What clients are refused is also logged (tsd_access_log): connections
 * refused at max-connections, failed authentications and requests
 * refused for their level, each line naming the listener and the
 * client's address.  Clients can cause these as often as they like, so
 * each kind is logged at most TSD_CLIENT_LOG_BURST times a
 * TSD_CLIENT_LOG_WINDOW; the lines left out are counted and one line
 * says how many once the window is over (tsd_access_log_flush, from
 * the server's sweep each second).  The stats count every one.
 *
 * The daemon's role decides what writes it takes, whatever the
 * client's level (docs/standby.md sections 2.1 and 3):
 *   primary   every write;
 *   standby   (--follow, link.c) none: its directory is the primary's,
 *             written only by the link, until "promote" (tsd_role_promoted)
 *             makes it a primary;
 *   fenced    a primary that learned of a newer epoch of its lineage (a
 *             follower of that epoch asked it to follow, follow.c:
 *             tsd_role_fence, which EPOCH then records, so a restart
 *             starts fenced: server.c): none -- an old primary that
 *             returns must not take writes into a lineage that went on
 *             without it.
 * The role moves standby -> primary (promote), primary -> fenced
 * (tsd_role_fence) and fenced -> primary (promote with force, the epoch
 * raised past the fence: tsd_role_unfence); it is read by the workers
 * and set by them, hence atomics.  tsd_write_refusal says whether a
 * request is refused.
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "tsd.h"

static const char *const level_names[] = {
	[TSD_ACCESS_NONE] = "none",
	[TSD_ACCESS_READ] = "read",
	[TSD_ACCESS_WRITE] = "write",
	[TSD_ACCESS_ADMIN] = "admin",
};

/* The level each op needs: the table tsstored(8), tsstore-protocol(7)
 * and docs/protocol.md give. */
static const enum tsd_access op_levels[TSD_NOPS] = {
	[TSD_OP_NONE] = TSD_ACCESS_NONE,
	[TSD_OP_PING] = TSD_ACCESS_READ,
	[TSD_OP_TABLES] = TSD_ACCESS_READ,
	[TSD_OP_CREATE] = TSD_ACCESS_WRITE,
	[TSD_OP_SCHEMA] = TSD_ACCESS_READ,
	[TSD_OP_ALTER] = TSD_ACCESS_ADMIN,
	[TSD_OP_DROP] = TSD_ACCESS_ADMIN,
	[TSD_OP_INSERT] = TSD_ACCESS_WRITE,
	[TSD_OP_QUERY] = TSD_ACCESS_READ,
	[TSD_OP_LATEST] = TSD_ACCESS_READ,
	[TSD_OP_AGGREGATE] = TSD_ACCESS_READ,
	[TSD_OP_FLUSH] = TSD_ACCESS_ADMIN,
	[TSD_OP_STATS] = TSD_ACCESS_READ,
	[TSD_OP_CHECK] = TSD_ACCESS_ADMIN,
	[TSD_OP_SNAPSHOT] = TSD_ACCESS_ADMIN,
	[TSD_OP_AUTH] = TSD_ACCESS_NONE,
	[TSD_OP_DELETE] = TSD_ACCESS_ADMIN,
	[TSD_OP_PURGE] = TSD_ACCESS_ADMIN,
	[TSD_OP_CHANGES] = TSD_ACCESS_READ,
	[TSD_OP_CREATE_ROLLUP] = TSD_ACCESS_ADMIN,
	[TSD_OP_ROLLUPS] = TSD_ACCESS_READ,
	[TSD_OP_FOLLOW] = TSD_ACCESS_ADMIN,
	[TSD_OP_PROMOTE] = TSD_ACCESS_ADMIN,
};

/* The level each HTTP route needs (tsstore-http(7)).  Read endpoints
 * (/api/v1/read, and /query to come) take read; one that changes or
 * removes tables, admin. */
static const enum tsd_access route_levels[TSD_HTTP_NROUTES] = {
	[TSD_HTTP_NOROUTE] = TSD_ACCESS_NONE,
	[TSD_HTTP_PING] = TSD_ACCESS_NONE,
	[TSD_HTTP_HEALTH] = TSD_ACCESS_NONE,
	[TSD_HTTP_METRICS] = TSD_ACCESS_READ,
	[TSD_HTTP_WRITE] = TSD_ACCESS_WRITE,
	[TSD_HTTP_WRITE_V2] = TSD_ACCESS_WRITE,
	[TSD_HTTP_PROM_WRITE] = TSD_ACCESS_WRITE,
	[TSD_HTTP_PROM_READ] = TSD_ACCESS_READ,
	[TSD_HTTP_QUERY] = TSD_ACCESS_READ,
};

/* The ops that change the database: a standby refuses them
 * (tsstored(8), "STANDBY").  check, snapshot and follow only read. */
static const unsigned char op_changes[TSD_NOPS] = {
	[TSD_OP_CREATE] = 1, [TSD_OP_ALTER] = 1, [TSD_OP_DROP] = 1, [TSD_OP_INSERT] = 1,
	[TSD_OP_FLUSH] = 1, [TSD_OP_DELETE] = 1, [TSD_OP_PURGE] = 1, [TSD_OP_CREATE_ROLLUP] = 1,
};

int tsd_standby_changes(enum tsd_op op, enum tsd_http_route route)
{
	if (op > TSD_OP_NONE && op < TSD_NOPS)
		return op_changes[op];
	/* the routes of write level are the ingest endpoints */
	return tsd_access_route(route) == TSD_ACCESS_WRITE;
}

/* The role (see the top): the standby's primary while it follows, and
 * the newest epoch heard of (0: none newer than ours). */
static struct {
	const char *primary;    /* set once, before the listeners open */
	int promoted;           /* atomic */
	uint64_t fenced_by;     /* atomic: the newer epoch, 0 while none */
	uint64_t own;           /* atomic: this database's epoch then */
} role;

void tsd_role_start(const char *primary)
{
	role.primary = primary;
	__atomic_store_n(&role.promoted, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&role.fenced_by, 0, __ATOMIC_RELAXED);
}

void tsd_role_promoted(void)
{
	__atomic_store_n(&role.promoted, 1, __ATOMIC_RELEASE);
}

int tsd_role_fence(uint64_t newer, uint64_t own)
{
	uint64_t was = __atomic_load_n(&role.fenced_by, __ATOMIC_ACQUIRE);
	__atomic_store_n(&role.own, own, __ATOMIC_RELAXED);
	while (newer > was &&
	       !__atomic_compare_exchange_n(&role.fenced_by, &was, newer, 0, __ATOMIC_RELEASE,
	                                    __ATOMIC_ACQUIRE))
		;
	return !was;
}

void tsd_role_unfence(void)
{
	__atomic_store_n(&role.fenced_by, 0, __ATOMIC_RELEASE);
}

enum tsd_role tsd_role_now(uint64_t *fenced_by)
{
	uint64_t newer = __atomic_load_n(&role.fenced_by, __ATOMIC_ACQUIRE);
	if (fenced_by)
		*fenced_by = newer;
	if (role.primary && !__atomic_load_n(&role.promoted, __ATOMIC_ACQUIRE))
		return TSD_ROLE_STANDBY;
	return newer ? TSD_ROLE_FENCED : TSD_ROLE_PRIMARY;
}

int tsd_write_refusal(enum tsd_op op, enum tsd_http_route route, const char *what, char *buf,
                      size_t size)
{
	uint64_t newer;
	enum tsd_role now = tsd_role_now(&newer);
	if (now == TSD_ROLE_PRIMARY || !tsd_standby_changes(op, route))
		return 0;
	if (now == TSD_ROLE_STANDBY)
		snprintf(buf, size, "read-only standby of %s: %s would change the database; send it "
		         "to the primary", role.primary, what);
	else
		snprintf(buf, size, "stale primary: a member of this lineage at epoch %" PRIu64
		         " exists, this database is at epoch %" PRIu64 ": %s is refused; send it to "
		         "the primary of epoch %" PRIu64 " (this one may only become its standby)",
		         newer, __atomic_load_n(&role.own, __ATOMIC_RELAXED), what, newer);
	return 1;
}

const char *tsd_access_name(enum tsd_access level)
{
	return level >= TSD_ACCESS_NONE && level <= TSD_ACCESS_ADMIN ? level_names[level] : "?";
}

int tsd_access_parse(const char *name, enum tsd_access *out)
{
	for (int a = TSD_ACCESS_NONE; a <= TSD_ACCESS_ADMIN; a++)
		if (strcmp(level_names[a], name) == 0) {
			*out = (enum tsd_access)a;
			return 0;
		}
	return -1;
}

enum tsd_access tsd_access_op(enum tsd_op op)
{
	return op > TSD_OP_NONE && op < TSD_NOPS ? op_levels[op] : TSD_ACCESS_NONE;
}

enum tsd_access tsd_access_route(enum tsd_http_route route)
{
	return route > TSD_HTTP_NOROUTE && route < TSD_HTTP_NROUTES ? route_levels[route]
	                                                            : TSD_ACCESS_NONE;
}

/* loopback-access as it is now (a reload may change it). */
static enum tsd_access loopback_level(struct tsd_config *cfg)
{
	int level = __atomic_load_n(&cfg->loopback_access, __ATOMIC_RELAXED);
	/* Unset only before tsd_config_finish; fail closed all the same. */
	return level < TSD_ACCESS_NONE || level > TSD_ACCESS_ADMIN ? TSD_ACCESS_NONE
	                                                           : (enum tsd_access)level;
}

enum tsd_access tsd_access_granted(struct tsd_config *cfg, enum tsd_peer peer, int authed)
{
	if (authed || peer == TSD_PEER_UNIX)
		return TSD_ACCESS_ADMIN;
	return peer == TSD_PEER_LOOPBACK ? loopback_level(cfg) : TSD_ACCESS_NONE;
}

void tsd_access_refusal(struct tsd_config *cfg, enum tsd_peer peer, int http, const char *what,
                        enum tsd_access need, char *buf, size_t size)
{
	const char *how;
	char where[64];
	if (tsd_token_set(cfg))
		how = http ? "send the token (\"Authorization: Token <token>\", or Bearer, or the "
		             "query parameter p)"
		           : "send the token ({\"op\":\"auth\",\"token\":…}) or use the unix socket";
	else
		how = http ? "start tsstored with a token (--token FILE) and send it "
		             "(\"Authorization: Token <token>\")"
		           : "use the unix socket, or start tsstored with a token (--token FILE) "
		             "and send it ({\"op\":\"auth\",\"token\":…})";
	if (peer == TSD_PEER_LOOPBACK)
		snprintf(where, sizeof where, "loopback-access is %s", tsd_access_name(loopback_level(cfg)));
	else
		snprintf(where, sizeof where, "this listener is not on the loopback");
	snprintf(buf, size, "%s is %s %s operation: %s; %s", what,
	         need == TSD_ACCESS_ADMIN ? "an" : "a", tsd_access_name(need), how, where);
}

/* ---- The log of refusals, bounded ---- */

static const char *const log_kinds[TSD_LOG_NKINDS] = {
	[TSD_LOG_REFUSED] = "refused connections",
	[TSD_LOG_AUTH] = "failed authentications",
	[TSD_LOG_ACCESS] = "refused requests",
};

static struct {
	pthread_mutex_t mu;
	int64_t window;                  /* ns; 0: TSD_CLIENT_LOG_WINDOW */
	int64_t start[TSD_LOG_NKINDS];   /* monotonic ns the window began */
	int logged[TSD_LOG_NKINDS];      /* lines logged in the window */
	uint64_t left[TSD_LOG_NKINDS];   /* lines left out in the window */
} bound = {.mu = PTHREAD_MUTEX_INITIALIZER};

int64_t tsd_mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* End kind's window when it is over at now, saying how many lines it
 * left out; bound.mu is held.  stderr is the daemon's log (tsd_log). */
static void end_window(enum tsd_log_kind kind, int64_t now)
{
	if (now - bound.start[kind] < (bound.window ? bound.window : TSD_CLIENT_LOG_WINDOW))
		return;
	if (bound.left[kind])
		fprintf(stderr, TSD_PROGRAM ": %llu more %s were not logged (at most %d of a kind "
		        "are, a minute; the stats count them all)\n",
		        (unsigned long long)bound.left[kind], log_kinds[kind], TSD_CLIENT_LOG_BURST);
	bound.start[kind] = now;
	bound.logged[kind] = 0;
	bound.left[kind] = 0;
}

void tsd_access_log(enum tsd_log_kind kind, const char *fmt, ...)
{
	va_list ap;
	int64_t now = tsd_mono_ns();
	pthread_mutex_lock(&bound.mu);
	end_window(kind, now);
	if (bound.logged[kind] < TSD_CLIENT_LOG_BURST) {
		bound.logged[kind]++;
		/* one line, whole: other threads' lines do not cut into it */
		flockfile(stderr);
		fputs(TSD_PROGRAM ": ", stderr);
		va_start(ap, fmt);
		vfprintf(stderr, fmt, ap);
		va_end(ap);
		fputc('\n', stderr);
		funlockfile(stderr);
	} else {
		bound.left[kind]++;
	}
	pthread_mutex_unlock(&bound.mu);
}

void tsd_access_log_flush(void)
{
	int64_t now = tsd_mono_ns();
	pthread_mutex_lock(&bound.mu);
	for (int k = 0; k < TSD_LOG_NKINDS; k++)
		if (bound.left[k])
			end_window((enum tsd_log_kind)k, now);
	pthread_mutex_unlock(&bound.mu);
}

void tsd_access_log_window(int64_t ns)
{
	pthread_mutex_lock(&bound.mu);
	bound.window = ns;
	pthread_mutex_unlock(&bound.mu);
}
