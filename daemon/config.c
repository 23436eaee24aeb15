/*
 * config.c -- tsstored's options, one table for both of their sources.
 *
 * Every option has a long name ("sync-interval"); on the command line it
 * is "--sync-interval 1s", in the config file (tsstore.conf(5)) the line
 * "sync-interval = 1s".  main.c reads the config file first and the
 * command line over it, so the command line wins; "listen" and
 * "graphite-template" are the options that repeat, and those given on
 * the command line replace those of the file rather than add to them.
 *
 * Values are checked when set, so a bad value is reported with where it
 * came from ("tsstored: tsstored.conf:3: sync: ..."); the checks that need
 * every option (a token for a non-loopback TCP address; the default of
 * loopback-access, which depends on the token) wait for
 * tsd_config_finish.
 *
 * On SIGHUP the daemon builds a second configuration the same way
 * (tsd_config.load) and takes from it what can change while serving
 * (server.c, reload).  The token and loopback-access are the values
 * worker threads read while the loop may replace them: the token under
 * a lock (tsd_token_check, tsd_token_set, tsd_token_replace),
 * loopback-access with atomic loads (access.c).  Everything read from a file is refused when it holds a
 * NUL byte, which a C string would silently end at.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <sys/stat.h>

#include "influxq.h"
#include "promread.h"
#include "tsd.h"
#include "tslimits.h" /* TS_FLUSH_THREADS_MAX */
#include "wire/graphite.h"

enum kind {
	K_PATH,     /* a string kept as is */
	K_LISTEN,   /* unix:PATH, tcp:HOST:PORT or http:HOST:PORT, repeatable */
	K_TEMPLATE, /* a Graphite template (wire/graphite.h), repeatable */
	K_SYNC,     /* none | interval | commit | replica */
	K_DURATION, /* <n><unit> */
	K_SIZE,     /* bytes, with an optional k M G suffix (powers of 1024) */
	K_COUNT,    /* a positive integer */
	K_FLAG,     /* no value */
	K_ACCESS,   /* none | read | write | admin (access.c) */
	K_FOLLOW,   /* tcp:HOST:PORT: the primary a standby follows (link.c) */
};

enum field {
	F_DATADIR, F_LISTEN, F_MOUNT, F_SYNC, F_CONFIG, F_TOKEN, F_LOG_FILE,
	F_SYNC_INTERVAL, F_MAX_FUTURE, F_FLUSH_SIZE, F_FLUSH_AGE,
	F_MERGE_MAX_SIZE, F_MERGE_DELAY, F_BLOCK_CACHE_SIZE, F_NO_MERGE, F_LOG_CAP,
	F_LOG_SEGMENT_SIZE, F_MERGE_SLICE_ROWS, F_MERGE_ROLLOVER_SPREAD, F_MAINT_BUSY_WINDOW,
	F_MAINT_BUSY_SHARE, F_FLUSH_THREADS,
	F_LINE_MAX, F_MAX_CONNECTIONS, F_CHUNK_ROWS, F_IDLE_TIMEOUT, F_LINE_STALL_TIMEOUT,
	F_WORKERS, F_SHUTDOWN_TIMEOUT, F_REQUEST_MEMORY, F_INGEST_DEFAULT_TTL, F_HTTP_MAX_BODY,
	F_HTTP_MAX_HEADER, F_LOOPBACK_ACCESS, F_GRAPHITE_TEMPLATE,
	F_REMOTE_READ_MAX_SAMPLES, F_QUERY_CACHE_SIZE, F_FOLLOW, F_REPLICA_TIMEOUT,
};

struct option_def {
	const char *name;
	enum kind kind;
	enum field field;
};

static const struct option_def options[] = {
	{"data", K_PATH, F_DATADIR},
	{"listen", K_LISTEN, F_LISTEN},
	{"mount", K_PATH, F_MOUNT},
	{"sync", K_SYNC, F_SYNC},
	{"config", K_PATH, F_CONFIG},
	{"token", K_PATH, F_TOKEN},
	{"log-file", K_PATH, F_LOG_FILE},
	{"sync-interval", K_DURATION, F_SYNC_INTERVAL},
	{"max-future", K_DURATION, F_MAX_FUTURE},
	{"flush-size", K_SIZE, F_FLUSH_SIZE},
	{"flush-age", K_DURATION, F_FLUSH_AGE},
	{"merge-max-size", K_SIZE, F_MERGE_MAX_SIZE},
	{"merge-delay", K_DURATION, F_MERGE_DELAY},
	{"block-cache-size", K_SIZE, F_BLOCK_CACHE_SIZE},
	{"no-merge", K_FLAG, F_NO_MERGE},
	{"log-cap", K_SIZE, F_LOG_CAP},
	{"log-segment-size", K_SIZE, F_LOG_SEGMENT_SIZE},
	{"merge-slice-rows", K_COUNT, F_MERGE_SLICE_ROWS},
	{"merge-rollover-spread", K_DURATION, F_MERGE_ROLLOVER_SPREAD},
	{"maint-busy-window", K_DURATION, F_MAINT_BUSY_WINDOW},
	{"maint-busy-share", K_COUNT, F_MAINT_BUSY_SHARE},
	{"flush-threads", K_COUNT, F_FLUSH_THREADS},
	{"line-max", K_SIZE, F_LINE_MAX},
	{"max-connections", K_COUNT, F_MAX_CONNECTIONS},
	{"chunk-rows", K_COUNT, F_CHUNK_ROWS},
	{"idle-timeout", K_DURATION, F_IDLE_TIMEOUT},
	{"line-stall-timeout", K_DURATION, F_LINE_STALL_TIMEOUT},
	{"workers", K_COUNT, F_WORKERS},
	{"shutdown-timeout", K_DURATION, F_SHUTDOWN_TIMEOUT},
	{"replica-timeout", K_DURATION, F_REPLICA_TIMEOUT},
	{"max-request-memory", K_SIZE, F_REQUEST_MEMORY},
	{"ingest-default-ttl", K_DURATION, F_INGEST_DEFAULT_TTL},
	{"http-max-body", K_SIZE, F_HTTP_MAX_BODY},
	{"http-max-header", K_SIZE, F_HTTP_MAX_HEADER},
	{"loopback-access", K_ACCESS, F_LOOPBACK_ACCESS},
	{"graphite-template", K_TEMPLATE, F_GRAPHITE_TEMPLATE},
	{"remote-read-max-samples", K_COUNT, F_REMOTE_READ_MAX_SAMPLES},
	{"query-cache-size", K_SIZE, F_QUERY_CACHE_SIZE},
	{"follow", K_FOLLOW, F_FOLLOW},
};

#define NOPTIONS (sizeof options / sizeof options[0])

void tsd_config_init(struct tsd_config *cfg)
{
	memset(cfg, 0, sizeof *cfg);
	cfg->datadir = TSD_DEFAULT_DATADIR;
	ts_options_init(&cfg->lib);
	cfg->line_max = TSD_LINE_MAX_DEFAULT;
	cfg->request_memory = TSD_REQUEST_MEMORY_DEFAULT;
	cfg->max_connections = TSD_CONNECTIONS_MAX_DEFAULT;
	cfg->chunk_rows = TSD_CHUNK_ROWS_DEFAULT;
	cfg->idle_timeout = TSD_IDLE_TIMEOUT_DEFAULT;
	cfg->line_stall_timeout = TSD_LINE_STALL_TIMEOUT_DEFAULT;
	cfg->workers = TSD_WORKERS_DEFAULT;
	cfg->shutdown_timeout = TSD_SHUTDOWN_TIMEOUT_DEFAULT;
	cfg->replica_timeout = TSD_REPLICA_TIMEOUT_DEFAULT;
	cfg->http_max_body = TSD_HTTP_MAX_BODY_DEFAULT;
	cfg->http_max_header = TSD_HTTP_MAX_HEADER_DEFAULT;
	cfg->remote_read_max_samples = TSD_PROM_READ_MAX_SAMPLES_DEFAULT;
	cfg->query_cache_size = TSD_IQL_CACHE_DEFAULT;
	cfg->loopback_access = TSD_ACCESS_UNSET; /* tsd_config_finish decides */
}

void tsd_config_free(struct tsd_config *cfg)
{
	for (int i = 0; i < cfg->nowned; i++)
		free(cfg->owned[i]);
	free(cfg->owned);
	free(cfg->token);
	cfg->owned = NULL;
	cfg->nowned = 0;
	cfg->token = NULL;
}

static const struct option_def *find_option(const char *name)
{
	for (size_t i = 0; i < NOPTIONS; i++)
		if (strcmp(options[i].name, name) == 0)
			return &options[i];
	return NULL;
}

int tsd_config_has_arg(const char *name)
{
	const struct option_def *o = find_option(name);
	return o ? o->kind != K_FLAG : -1;
}

static int fail(const char *origin, const char *fmt, const char *a, const char *b)
{
	fprintf(stderr, TSD_PROGRAM ": %s: ", origin);
	fprintf(stderr, fmt, a, b);
	fputc('\n', stderr);
	return -1;
}

/* A copy of s that lives as long as cfg. */
static const char *keep(struct tsd_config *cfg, const char *s)
{
	char **owned = realloc(cfg->owned, (size_t)(cfg->nowned + 1) * sizeof *owned);
	char *copy = strdup(s);
	if (!owned || !copy) {
		free(copy);
		if (owned)
			cfg->owned = owned;
		return NULL;
	}
	cfg->owned = owned;
	cfg->owned[cfg->nowned++] = copy;
	return copy;
}

const char *tsd_config_keep(struct tsd_config *cfg, const char *s)
{
	return keep(cfg, s);
}

/* "64M" and friends; powers of 1024. */
static int parse_size(const char *text, int64_t *out)
{
	char *end;
	errno = 0;
	if (*text < '0' || *text > '9')
		return -1;
	unsigned long long v = strtoull(text, &end, 10);
	int shift = 0;
	switch (*end) {
	case 'k': case 'K': shift = 10; end++; break;
	case 'm': case 'M': shift = 20; end++; break;
	case 'g': case 'G': shift = 30; end++; break;
	default: break;
	}
	if (*end == 'B' || *end == 'b')
		end++;
	if (errno || *end || v > (unsigned long long)(INT64_MAX >> shift))
		return -1;
	*out = (int64_t)(v << shift);
	return 0;
}

static int parse_count(const char *text, int64_t *out)
{
	char *end;
	errno = 0;
	if (*text < '0' || *text > '9')
		return -1;
	long long v = strtoll(text, &end, 10);
	if (errno || *end || v <= 0 || v > INT_MAX)
		return -1;
	*out = v;
	return 0;
}

/* The "HOST:PORT" of a TCP listener ("tcp:..." or "http:..."), or NULL
 * for a unix socket. */
const char *tsd_listen_hostport(const char *addr)
{
	if (strncmp(addr, "tcp:", 4) == 0)
		return addr + 4;
	if (strncmp(addr, "http:", 5) == 0)
		return addr + 5;
	if (strncmp(addr, "graphite:", 9) == 0)
		return addr + 9;
	if (strncmp(addr, "graphite-udp:", 13) == 0)
		return addr + 13;
	return NULL;
}

/* Check a listener address: "unix:PATH", "tcp:HOST:PORT" or
 * "http:HOST:PORT". */
static int check_listen(const char *addr, const char *origin)
{
	if (strncmp(addr, "unix:", 5) == 0) {
		if (!addr[5])
			return fail(origin, "\"%s\": empty socket path%s", addr, "");
		return 0;
	}
	const char *hostport = tsd_listen_hostport(addr);
	if (!hostport)
		return fail(origin, "\"%s\": want unix:PATH, tcp:HOST:PORT, http:HOST:PORT, "
		            "graphite:HOST:PORT or graphite-udp:HOST:PORT%s", addr, "");
	const char *colon = strrchr(hostport, ':');
	int64_t port;
	if (!colon || colon == hostport ||
	    (strcmp(colon + 1, "0") != 0 && (parse_count(colon + 1, &port) < 0 || port > 65535))) {
		char kind[16];
		snprintf(kind, sizeof kind, "%.*s", (int)(hostport - addr - 1), addr);
		return fail(origin, "\"%s\": want %s:HOST:PORT with a port 0-65535", addr, kind);
	}
	return 0;
}

/* Check Graphite template spec alone and keep it. */
static int add_template(struct tsd_config *cfg, const char *spec, const char *origin)
{
	struct gr_templates *t;
	char err[256];
	int rc = gr_templates_parse(&spec, 1, &t, err, sizeof err);
	gr_templates_free(t);
	if (rc < 0)
		return fail(origin, "graphite-template: %s%s", rc == -1 ? err : "out of memory", "");
	if (cfg->ngraphite_templates == TSD_GRAPHITE_TEMPLATES_MAX)
		return fail(origin, "graphite-template: more than %s templates%s", "64", "");
	if (!(cfg->graphite_template[cfg->ngraphite_templates] = keep(cfg, spec)))
		return fail(origin, "graphite-template: out of memory%s%s", "", "");
	cfg->ngraphite_templates++;
	return 0;
}

static int set_number(struct tsd_config *cfg, enum field f, int64_t v)
{
	switch (f) {
	case F_SYNC_INTERVAL: cfg->lib.sync_interval = v; break;
	case F_MAX_FUTURE: cfg->lib.max_future = v; break;
	case F_FLUSH_SIZE: cfg->lib.flush_size = v; break;
	case F_FLUSH_AGE: cfg->lib.flush_age = v; break;
	case F_MERGE_MAX_SIZE: cfg->lib.merge_max_size = v; break;
	case F_MERGE_DELAY: cfg->lib.merge_delay = v; break;
	case F_BLOCK_CACHE_SIZE: cfg->lib.block_cache_size = v; break;
	case F_LOG_CAP: cfg->lib.log_cap = v; break;
	case F_LOG_SEGMENT_SIZE: cfg->lib.log_segment_size = v; break;
	/* the scheduler's: 0 would mean the library's default, not 0 */
	case F_MERGE_SLICE_ROWS:
	case F_MERGE_ROLLOVER_SPREAD:
	case F_MAINT_BUSY_WINDOW:
		if (v <= 0)
			return -1;
		if (f == F_MERGE_SLICE_ROWS)
			cfg->lib.merge_slice_rows = v;
		else if (f == F_MERGE_ROLLOVER_SPREAD)
			cfg->lib.merge_rollover_spread = v;
		else
			cfg->lib.maint_busy_window = v;
		break;
	case F_MAINT_BUSY_SHARE:
		if (v < 1 || v > 100)
			return -1;
		cfg->lib.maint_busy_share = v;
		break;
	case F_FLUSH_THREADS: /* the library's bound; its default when not given */
		if (v > TS_FLUSH_THREADS_MAX)
			return -1;
		cfg->lib.flush_threads = v;
		break;
	case F_LINE_MAX: cfg->line_max = (size_t)v; break;
	case F_MAX_CONNECTIONS: cfg->max_connections = (int)v; break;
	case F_CHUNK_ROWS: cfg->chunk_rows = (int)v; break;
	case F_IDLE_TIMEOUT: cfg->idle_timeout = v; break;
	case F_LINE_STALL_TIMEOUT:
		/* 0 would let one stalled client stall the others forever. */
		if (v <= 0)
			return -1;
		cfg->line_stall_timeout = v;
		break;
	case F_WORKERS:
		if (v > TSD_WORKERS_MAX)
			return -1;
		cfg->workers = (int)v;
		break;
	case F_SHUTDOWN_TIMEOUT: cfg->shutdown_timeout = v; break;
	case F_REPLICA_TIMEOUT:
		if (v <= 0) /* 0 would fail every insert under sync=replica */
			return -1;
		cfg->replica_timeout = v;
		break;
	case F_INGEST_DEFAULT_TTL: cfg->ingest_default_ttl = v; break;
	case F_REQUEST_MEMORY:
		if (v <= 0)
			return -1;
		cfg->request_memory = (size_t)v;
		break;
	case F_HTTP_MAX_BODY:
		if (v <= 0)
			return -1;
		cfg->http_max_body = (size_t)v;
		break;
	case F_REMOTE_READ_MAX_SAMPLES:
		if (v > INT_MAX)
			return -1;
		cfg->remote_read_max_samples = (int)v;
		break;
	case F_QUERY_CACHE_SIZE: cfg->query_cache_size = (size_t)v; break; /* 0: off */
	case F_HTTP_MAX_HEADER:
		/* http_parser counts it in a uint32_t */
		if (v < (int64_t)TSD_HTTP_MAX_HEADER_MIN || v > (int64_t)TSD_HTTP_MAX_HEADER_MAX)
			return -1;
		cfg->http_max_header = (size_t)v;
		break;
	default: return -1;
	}
	return 0;
}

static int set_path(struct tsd_config *cfg, enum field f, const char *value)
{
	const char *copy = keep(cfg, value);
	if (!copy)
		return -1;
	switch (f) {
	case F_DATADIR: cfg->datadir = copy; break;
	case F_MOUNT: cfg->mount = copy; break;
	case F_CONFIG: cfg->config_file = copy; break;
	case F_TOKEN: cfg->token_file = copy; break;
	case F_LOG_FILE: cfg->log_file = copy; break;
	default: return -1;
	}
	return 0;
}

int tsd_config_set(struct tsd_config *cfg, const char *name, const char *value,
                   const char *origin)
{
	const struct option_def *o = find_option(name);
	int64_t v = 0;
	ts_sync_mode mode;
	enum tsd_access level;
	if (!o)
		return fail(origin, "unknown option \"%s\"%s", name, "");
	if ((o->kind == K_FLAG) != (value == NULL))
		return fail(origin, o->kind == K_FLAG ? "%s takes no value%s" : "%s needs a value%s",
		            name, "");
	switch (o->kind) {
	case K_FLAG:
		cfg->lib.flags |= TS_OPEN_NOMERGE;
		return 0;
	case K_PATH:
		if (!*value)
			return fail(origin, "%s: empty value%s", name, "");
		return set_path(cfg, o->field, value) < 0
		     ? fail(origin, "%s: out of memory%s", name, "") : 0;
	case K_LISTEN:
		if (check_listen(value, origin) < 0)
			return -1;
		if (cfg->nlisten == TSD_LISTEN_MAX)
			return fail(origin, "listen: more than %s listeners%s", "16", "");
		if (!(cfg->listen[cfg->nlisten] = keep(cfg, value)))
			return fail(origin, "%s: out of memory%s", name, "");
		cfg->nlisten++;
		return 0;
	case K_TEMPLATE:
		return add_template(cfg, value, origin);
	case K_FOLLOW:
		/* the primary's TCP listener (JSON lines), as --listen checks one */
		if (strncmp(value, "tcp:", 4) != 0)
			return fail(origin, "follow: \"%s\": want tcp:HOST:PORT, the primary's TCP "
			            "listener%s", value, "");
		if (check_listen(value, origin) < 0)
			return -1;
		if (strcmp(strrchr(value, ':'), ":0") == 0)
			return fail(origin, "follow: \"%s\": port 0 names no primary%s", value, "");
		if (!(cfg->follow = keep(cfg, value)))
			return fail(origin, "%s: out of memory%s", name, "");
		return 0;
	case K_SYNC:
		/* replica: commit, and the insert waits for a standby (replica.c) */
		cfg->sync_replica = strcmp(value, "replica") == 0;
		if (cfg->sync_replica)
			mode = TS_SYNC_COMMIT;
		else if (ts_sync_mode_parse(value, &mode) < 0)
			return fail(origin, "sync: \"%s\": want none, interval, commit or replica%s",
			            value, "");
		cfg->lib.sync = mode;
		return 0;
	case K_ACCESS:
		if (tsd_access_parse(value, &level) < 0)
			return fail(origin, "%s: \"%s\": want none, read, write or admin", name, value);
		cfg->loopback_access = (int)level;
		return 0;
	case K_DURATION:
		if (ts_duration_parse(value, &v) < 0)
			return fail(origin, "%s: \"%s\" is not a duration (<n><unit>, unit ns us ms s m h d w)",
			            name, value);
		break;
	case K_SIZE:
		if (parse_size(value, &v) < 0)
			return fail(origin, "%s: \"%s\" is not a size (bytes, or <n>k, <n>M, <n>G)",
			            name, value);
		break;
	case K_COUNT:
		if (parse_count(value, &v) < 0)
			return fail(origin, "%s: \"%s\" is not a positive integer", name, value);
		break;
	}
	if (set_number(cfg, o->field, v) < 0)
		return fail(origin, "%s: \"%s\" is out of range", name, value);
	return 0;
}

/* One line of a config file: "name = value", "name" (a flag), blank or
 * a comment.  Returns 0 or -1 after the message. */
static int config_line(struct tsd_config *cfg, char *line, const char *origin)
{
	char *p = line, *eq, *end;
	while (*p == ' ' || *p == '\t')
		p++;
	if (*p == '#' || *p == '\0')
		return 0;
	end = p + strlen(p);
	while (end > p && (end[-1] == ' ' || end[-1] == '\t' || end[-1] == '\r'))
		*--end = '\0';
	if (!(eq = strchr(p, '=')))
		return tsd_config_set(cfg, p, NULL, origin);
	char *value = eq + 1, *name_end = eq;
	while (name_end > p && (name_end[-1] == ' ' || name_end[-1] == '\t'))
		name_end--;
	*name_end = '\0';
	while (*value == ' ' || *value == '\t')
		value++;
	if (strcmp(p, "config") == 0)
		return fail(origin, "config: a config file cannot include another%s%s", "", "");
	return tsd_config_set(cfg, p, value, origin);
}

int tsd_config_file(struct tsd_config *cfg, const char *path)
{
	FILE *f = fopen(path, "r");
	char *line = NULL, origin[TSD_PATH_MAX + 32];
	size_t cap = 0;
	ssize_t n;
	int rc = 0, lineno = 0;
	if (!f)
		return fail("--config", "%s: %s", path, strerror(errno));
	while (rc == 0 && (n = getline(&line, &cap, f)) >= 0) {
		lineno++;
		snprintf(origin, sizeof origin, "%s:%d", path, lineno);
		/* The line is read as a C string: a NUL byte would silently
		 * cut a value ("token = /etc/tok\0junk"), so it is an error. */
		if (memchr(line, '\0', (size_t)n)) {
			rc = fail(origin, "a NUL byte in the line%s%s", "", "");
			break;
		}
		line[strcspn(line, "\n")] = '\0';
		rc = config_line(cfg, line, origin);
	}
	if (rc == 0 && ferror(f))
		rc = fail("--config", "%s: %s", path, strerror(errno));
	free(line);
	fclose(f);
	return rc;
}

int tsd_tcp_split(const char *hostport, char *host, size_t size, int *port)
{
	const char *colon = strrchr(hostport, ':');
	size_t n;
	if (!colon || (n = (size_t)(colon - hostport)) >= size)
		return -1;
	memcpy(host, hostport, n);
	host[n] = '\0';
	if (host[0] == '[' && n > 2 && host[n - 1] == ']') {
		memmove(host, host + 1, n - 2);
		host[n - 2] = '\0';
	}
	if (strcmp(host, "localhost") == 0)
		snprintf(host, size, "127.0.0.1");
	*port = atoi(colon + 1);
	return 0;
}

int tsd_listen_loopback(const char *addr)
{
	char host[256];
	unsigned char a[16];
	int port;
	if (!tsd_listen_hostport(addr) ||
	    tsd_tcp_split(tsd_listen_hostport(addr), host, sizeof host, &port) < 0)
		return 0;
	if (inet_pton(AF_INET, host, a) == 1)
		return a[0] == 127;
	if (inet_pton(AF_INET6, host, a) == 1) {
		static const unsigned char one[16] = {[15] = 1};
		return memcmp(a, one, 16) == 0;
	}
	return 0;
}

/* Read the token: the first line of the file, which must not be empty. */
static int read_token(struct tsd_config *cfg)
{
	FILE *f = fopen(cfg->token_file, "r");
	struct stat st;
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;
	if (!f)
		return fail("--token", "%s: %s", cfg->token_file, strerror(errno));
	/* Said, not refused: a daemon that served with it yesterday still
	 * starts (tsstore, the client, refuses such a file). */
	if (fstat(fileno(f), &st) == 0 && (st.st_mode & S_IROTH))
		fprintf(stderr, TSD_PROGRAM ": warning: --token: %s: others may read the token "
		        "(mode %04o); chmod o-r %s\n", cfg->token_file,
		        (unsigned)(st.st_mode & 07777), cfg->token_file);
	n = getline(&line, &cap, f);
	fclose(f);
	if (n > 0 && memchr(line, '\0', (size_t)n)) {
		/* Compared as a C string, the token would end at the NUL. */
		free(line);
		return fail("--token", "%s: the token holds a NUL byte", cfg->token_file, "");
	}
	if (n > 0)
		line[strcspn(line, "\r\n")] = '\0';
	if (n <= 0 || !line[0] || strlen(line) > TSD_TOKEN_MAX) {
		free(line);
		return fail("--token", "%s: the first line must hold the token (1 to 4096 bytes)",
		            cfg->token_file, "");
	}
	cfg->token = line;
	return 0;
}

int tsd_config_finish(struct tsd_config *cfg)
{
	char socket_addr[TSD_PATH_MAX + 8];
	if (cfg->nlisten == 0) {
		/* A copy of cfg's own: a reload builds a second config, and the
		 * running listeners must keep their path. */
		snprintf(socket_addr, sizeof socket_addr, "unix:%s/%s", cfg->datadir, TSD_SOCKET_NAME);
		if (!(cfg->listen[cfg->nlisten++] = keep(cfg, socket_addr)))
			return fail("--listen", "out of memory%s%s", "", "");
		cfg->listen[cfg->nlisten++] = TSD_DEFAULT_TCP;
		cfg->listen[cfg->nlisten++] = TSD_DEFAULT_HTTP;
	}
	if (cfg->token_file && read_token(cfg) < 0)
		return -1;
	if (cfg->ngraphite_templates) {
		/* Each was checked alone; together, at most one has no filter. */
		struct gr_templates *t;
		char err[256];
		int rc = gr_templates_parse(cfg->graphite_template, cfg->ngraphite_templates, &t, err,
		                            sizeof err);
		gr_templates_free(t);
		if (rc < 0)
			return fail("--graphite-template", "%s%s", rc == -1 ? err : "out of memory", "");
	}
	for (int i = 0; i < cfg->nlisten; i++)
		if (tsd_listen_hostport(cfg->listen[i]) && !tsd_listen_loopback(cfg->listen[i]) && !cfg->token)
			return fail("--listen", "%s is not a loopback address: it needs --token FILE",
			            cfg->listen[i], "");
	/* Not given: with a token every loopback request needs it, as on
	 * any other listener; without one, loopback clients may read and
	 * write, and the admin ops need the unix socket. */
	if (cfg->loopback_access == TSD_ACCESS_UNSET)
		cfg->loopback_access = cfg->token ? TSD_ACCESS_NONE : TSD_ACCESS_WRITE;
	return 0;
}

/* ---- The token, replaced by a reload while workers compare with it ---- */

static pthread_mutex_t token_lock = PTHREAD_MUTEX_INITIALIZER;

/* Compare a[0..na) with the C string b in time independent of where
 * they differ.  a is the client's, and may hold NUL bytes: it is
 * compared whole, so "s3cret\u0000junk" is not "s3cret". */
static int token_equal(const char *a, size_t na, const char *b)
{
	size_t nb = strlen(b);
	unsigned char diff = na != nb;
	for (size_t i = 0; i < nb; i++)
		diff |= (unsigned char)(a[i < na ? i : 0] ^ b[i]);
	return diff == 0;
}

int tsd_token_check(struct tsd_config *cfg, const char *token, size_t len)
{
	int ok;
	pthread_mutex_lock(&token_lock);
	ok = cfg->token && token_equal(token, len, cfg->token);
	pthread_mutex_unlock(&token_lock);
	return ok;
}

int tsd_token_set(struct tsd_config *cfg)
{
	int set;
	pthread_mutex_lock(&token_lock);
	set = cfg->token != NULL;
	pthread_mutex_unlock(&token_lock);
	return set;
}

char *tsd_token_copy(struct tsd_config *cfg)
{
	char *copy;
	pthread_mutex_lock(&token_lock);
	copy = cfg->token ? strdup(cfg->token) : NULL;
	pthread_mutex_unlock(&token_lock);
	return copy;
}

void tsd_token_replace(struct tsd_config *cfg, char *token)
{
	char *old;
	pthread_mutex_lock(&token_lock);
	old = cfg->token;
	cfg->token = token;
	pthread_mutex_unlock(&token_lock);
	free(old);
}
