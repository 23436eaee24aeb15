/*
 * main.c -- tsstored's command line (DESIGN.md section 5):
 *
 *     tsstored -d DATADIR [--listen KIND:ADDRESS]...
 *              [--mount MOUNTPOINT] [--sync none|interval|commit|replica]
 *              [--follow tcp:HOST:PORT]
 *              [--config FILE] [--OPTION VALUE]...
 *
 * Every option of config.c is accepted as "--name VALUE" or
 * "--name=VALUE"; -d is short for --data.  The command line is read
 * twice: first only to find --config, whose file is applied, then whole,
 * so that what the command line says wins over the file.
 * --check-config loads the configuration as a start would (the file,
 * the command line, the token file, the checks that need every option)
 * and exits without opening the database or a listener: 0 when it
 * would start, 2 after the message when not.
 * Exit status: 0 after a clean stop, 1 when serving failed, 2 for a
 * usage error.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tsd.h"
#include "wire/pbmem.h"

static const char usage[] =
	"usage: " TSD_PROGRAM " [-d DATADIR] [--listen KIND:ADDRESS]...\n"
	"                [--mount MOUNTPOINT] [--sync none|interval|commit|replica]\n"
	"                [--config FILE] [--token FILE] [--follow tcp:HOST:PORT]\n"
	"                [--check-config]\n"
	"                [--OPTION VALUE]...\n";

static const char help[] =
	"Serve a tsstore database over JSON lines and HTTP (see tsstored(8),\n"
	"tsstore-protocol(7), tsstore-http(7)).\n"
	"\n"
	"  -d, --data DIR          the database directory (default " TSD_DEFAULT_DATADIR ")\n"
	"  --listen ADDR           unix:PATH, tcp:HOST:PORT (JSON lines),\n"
	"                          http:HOST:PORT, graphite:HOST:PORT (Graphite\n"
	"                          plaintext over TCP) or graphite-udp:HOST:PORT;\n"
	"                          repeatable (default unix:DATADIR/\n"
	"                          " TSD_SOCKET_NAME ", " TSD_DEFAULT_TCP " and " TSD_DEFAULT_HTTP ")\n"
	"  --sync MODE             none, interval (default), commit or replica (commit,\n"
	"                          and an insert waits for a standby's ack)\n"
	"  --replica-timeout DUR   how long it waits, then EREPLICA (default 10s)\n"
	"  --config FILE           read options from FILE (tsstore.conf(5))\n"
	"  --check-config          check the configuration and exit (0: it would start)\n"
	"  --token FILE            the first line of FILE gives admin: TCP clients send\n"
	"                          {\"op\":\"auth\",\"token\":...}, HTTP clients Authorization:\n"
	"                          Token ...; needed for non-loopback TCP and HTTP\n"
	"  --loopback-access LEVEL what loopback TCP and HTTP clients may do without the\n"
	"                          token: none, read, write or admin (default write;\n"
	"                          none with --token)\n"
	"  --log-file FILE         log to FILE instead of stderr (reopened on SIGHUP)\n"
	"  --follow tcp:HOST:PORT  be a read-only standby of the tsstored listening\n"
	"                          there (docs/standby.md); the token of --token\n"
	"                          authenticates it\n"
	"  --sync-interval DUR     most inserts a power loss may take (default 1s)\n"
	"  --max-future DUR        how far ahead of now a ts may be (default 1d)\n"
	"  --flush-size SIZE       flush a filling tablet at this size (default 16M)\n"
	"  --flush-age DUR         ... or at this age (default 10m)\n"
	"  --merge-max-size SIZE   largest merged tablet (default 128M)\n"
	"  --merge-delay DUR       wait after a flush before merging (default 90s)\n"
	"  --no-merge              never merge in the background\n"
	"  --merge-slice-rows N    rows a merge writes between looks at flushes and\n"
	"                          the foreground (default 4096)\n"
	"  --merge-rollover-spread DUR  spread of roll-over merges (default 30m)\n"
	"  --maint-busy-window DUR  merges yield for DUR after an insert or read\n"
	"                          (default 100ms)\n"
	"  --maint-busy-share N    percent of the time merges may take then (default 50)\n"
	"  --flush-threads N       threads that compress a flush's blocks, 1 to 8\n"
	"                          (default the online CPUs, at most 8)\n"
	"  --block-cache-size SIZE decompressed blocks kept for reads (default a\n"
	"                          sixteenth of the memory, 64M to 4G)\n"
	"  --log-segment-size SIZE  each log segment of new tables, 1M to 64M (default 64M)\n"
	"  --log-cap SIZE          refuse inserts once a table's unflushed log is this big\n"
	"                          (default 8G)\n"
	"  --line-max SIZE         longest request line (default 64M)\n"
	"  --max-request-memory SIZE  memory for requests, all connections (default 256M)\n"
	"  --max-connections N     open connections (default 1024)\n"
	"  --chunk-rows N          rows per \"rows\" line of a response (default 1000)\n"
	"  --idle-timeout DUR      close idle connections, and lines unfinished, after\n"
	"                          DUR (default 0: never)\n"
	"  --line-stall-timeout DUR  close the connection let past max-request-memory\n"
	"                          when it sends nothing for DUR while others wait\n"
	"                          (default 10s)\n"
	"  --http-max-body SIZE    largest HTTP request body, after gzip decoding\n"
	"                          (default 64M)\n"
	"  --http-max-header SIZE  largest HTTP request line and headers (default 64k)\n"
	"  --remote-read-max-samples N  most samples one Prometheus remote read may\n"
	"                          answer (default 5000000)\n"
	"  --query-cache-size SIZE  /query's cache of aggregate windows (default 32M;\n"
	"                          0: off)\n"
	"  --workers N             worker threads running requests (default 4)\n"
	"  --shutdown-timeout DUR  on SIGTERM, wait this long for clients (default 30s)\n"
	"  --ingest-default-ttl DUR  TTL of tables line protocol writes create\n"
	"                          (default 0: forever)\n"
	"  --graphite-template T   map Graphite paths by template T, \"[FILTER]\n"
	"                          TEMPLATE [TAG=VALUE,...]\" (tsstored(8));\n"
	"                          repeatable, the first whose filter matches applies\n"
	"  -h, --help              show this help;  --version  show the version\n"
	"SIZE is bytes or <n>k, <n>M, <n>G; DUR is <n><unit>, unit ns us ms s m h d w.\n";

/* --check-config was given: check, do not serve. */
static int check_only;

/* Walk argv; only_config: apply just --config (the first pass).
 * Returns 0, 1 when --help or --version was answered, 2 on a usage error. */
static int parse_args(struct tsd_config *cfg, int argc, char **argv, int only_config)
{
	for (int i = 1; i < argc; i++) {
		char *arg = argv[i], name[64];
		const char *value = NULL, *eq;
		int has_arg;
		if (strcmp(arg, "--check-config") == 0) { /* the command line's alone */
			check_only = 1;
			continue;
		}
		if (only_config && (strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0 ||
		                    strcmp(arg, "--version") == 0))
			continue;
		if (strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0) {
			fputs(usage, stdout);
			fputs(help, stdout);
			return 1;
		}
		if (strcmp(arg, "--version") == 0) {
			printf(TSD_PROGRAM " %s\n", ts_version());
			return 1;
		}
		if (strcmp(arg, "-d") == 0)
			arg = "--data";
		if (strncmp(arg, "--", 2) != 0) {
			fprintf(stderr, TSD_PROGRAM ": unexpected argument \"%s\"\n%s", arg, usage);
			return 2;
		}
		eq = strchr(arg + 2, '=');
		snprintf(name, sizeof name, "%.*s", eq ? (int)(eq - arg - 2) : (int)strlen(arg + 2),
		         arg + 2);
		if ((has_arg = tsd_config_has_arg(name)) < 0) {
			fprintf(stderr, TSD_PROGRAM ": unknown option \"--%s\"\n%s", name, usage);
			return 2;
		}
		if (!has_arg && eq) {
			fprintf(stderr, TSD_PROGRAM ": --%s takes no value\n%s", name, usage);
			return 2;
		}
		if (has_arg && eq)
			value = eq + 1;
		else if (has_arg && i + 1 < argc)
			value = argv[++i];
		else if (has_arg) {
			fprintf(stderr, TSD_PROGRAM ": --%s needs a value\n%s", name, usage);
			return 2;
		}
		if (only_config != (strcmp(name, "config") == 0))
			continue;
		char origin[80];
		snprintf(origin, sizeof origin, "--%s", name);
		if (tsd_config_set(cfg, name, value, origin) < 0)
			return 2;
		if (only_config && tsd_config_file(cfg, cfg->config_file) < 0)
			return 2;
	}
	return 0;
}

/* The command line, for a reload. */
static int saved_argc;
static char **saved_argv;

static int reload_config(struct tsd_config *fresh);

/* The whole configuration into cfg (initialised here): the config file
 * first, then the command line over it, then the checks that need every
 * option.  Returns 0, 1 when --help or --version was answered, 2 on a
 * usage error (after the message). */
static int load_config(struct tsd_config *cfg)
{
	int rc;
	tsd_config_init(cfg);
	cfg->load = reload_config;
	if ((rc = parse_args(cfg, saved_argc, saved_argv, 1)) == 0) {
		/* Listeners (and Graphite templates) on the command line
		 * replace those of the file. */
		for (int i = 1; i < saved_argc; i++) {
			if (strncmp(saved_argv[i], "--listen", 8) == 0)
				cfg->nlisten = 0;
			if (strncmp(saved_argv[i], "--graphite-template", 19) == 0)
				cfg->ngraphite_templates = 0;
		}
		rc = parse_args(cfg, saved_argc, saved_argv, 0);
	}
	if (rc == 0)
		rc = tsd_config_finish(cfg) < 0 ? 2 : 0;
	if (rc == 0 && cfg->mount && !tsd_mount_available) {
		fprintf(stderr, TSD_PROGRAM ": --mount: " TSD_NO_FUSE "\n");
		rc = 2;
	}
	return rc;
}

/* On SIGHUP (server.c): the same, again. */
static int reload_config(struct tsd_config *fresh)
{
	return load_config(fresh) == 0 ? 0 : -1;
}

int main(int argc, char **argv)
{
	struct tsd_config cfg;
	int rc;
	signal(SIGPIPE, SIG_IGN); /* a client that went away is an EPIPE */
	/* Until the event loop handles it (a reload), SIGHUP must not kill
	 * a daemon that is still opening its database. */
	signal(SIGHUP, SIG_IGN);
	/* Keep the memory of one request for the next: with glibc's defaults
	 * blocks of megabytes -- remote write's decoding arena, the ingest's
	 * rows, a /query statement's accumulators -- are mmapped, or a
	 * worker's heap is trimmed back to the kernel, at every request, and
	 * the next one faults every page in again (15-20 % of tsstored's CPU
	 * under remote write; half of a double-groupby-all answered from the
	 * window cache: perf, 2026-11-26). */
	pbmem_keep_memory();
	saved_argc = argc;
	saved_argv = argv;
	if ((rc = load_config(&cfg)) == 0 && !check_only)
		rc = tsd_serve(&cfg);
	else if (rc == 1)
		rc = 0;
	tsd_config_free(&cfg);
	return rc;
}
