/*
 * test_config.c -- tsstored's option parsing (daemon/config.c) on its
 * own, linked with the daemon's config.o: what a value given on the
 * command line (tsd_config_set with the origin "--NAME", as main.c calls
 * it) or in a config file (tsd_config_file) leaves in cfg->lib, the
 * ts_options the daemon opens the database with, and the exact message a
 * refused value prints.
 *
 * It covers the maintenance scheduler's settings (merge-slice-rows,
 * merge-rollover-spread, maint-busy-window, maint-busy-share): 0 would
 * mean the library's default there, so the daemon refuses it, and the
 * share is a percentage, 1 to 100; and flush-threads, 1 to 8.  That the values reach the engine
 * and its stats through a real tsstored is test_daemon.c's
 * (daemon_scheduler_settings) and tests/cli/test_basic.sh's.
 *
 * It also covers the listeners (the defaults: the unix socket, TCP and
 * HTTP; http:HOST:PORT; a non-loopback address needs a token) and the
 * HTTP listener's limits (http-max-body, http-max-header), remote-read-max-samples, and
 * loopback-access: its values, its default (write, or none when a token
 * is configured), and the one table of the levels each op and HTTP
 * route needs (daemon/access.c, linked too), and the bound on the log
 * of refusals (tsd_access_log: ten lines of a kind a window, then one
 * that says how many were left out).
 *
 * Messages go to stderr: each call's is captured into a temporary file
 * (fd 2 redirected around the call) and compared whole.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ftw.h>
#include <time.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "tsd.h"

#define MS INT64_C(1000000)
#define SEC (1000 * MS)
#define MIN (60 * SEC)

/* What the fixture holds: a configuration with the defaults, and a
 * temporary directory for a config file and a database. */
struct fixture {
	struct tsd_config cfg;
	char dir[64];
	char path[128];
};

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof *f);
	if (!f)
		return -1;
	snprintf(f->dir, sizeof f->dir, "/tmp/tsd-config-XXXXXX");
	if (!mkdtemp(f->dir)) {
		free(f);
		return -1;
	}
	snprintf(f->path, sizeof f->path, "%s/tsstore.conf", f->dir);
	tsd_config_init(&f->cfg);
	*state = f;
	return 0;
}

static int remove_entry(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	(void)st;
	(void)type;
	(void)ftw;
	return remove(path);
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	tsd_config_free(&f->cfg);
	nftw(f->dir, remove_entry, 8, FTW_DEPTH | FTW_PHYS);
	free(f);
	return 0;
}

/* ---- stderr of one call ---- */

static char err_text[4096];
static int saved_fd = -1;
static FILE *err_file;

/* Send stderr to a fresh temporary file until err_end. */
static void err_begin(void)
{
	fflush(stderr);
	assert_non_null(err_file = tmpfile());
	assert_true((saved_fd = dup(2)) >= 0);
	assert_int_equal(dup2(fileno(err_file), 2), 2);
}

/* Put stderr back; what was written meanwhile goes to err_text. */
static const char *err_end(void)
{
	size_t n;
	fflush(stderr);
	assert_int_equal(dup2(saved_fd, 2), 2);
	close(saved_fd);
	saved_fd = -1;
	rewind(err_file);
	n = fread(err_text, 1, sizeof err_text - 1, err_file);
	err_text[n] = '\0';
	fclose(err_file);
	err_file = NULL;
	return err_text;
}

/* Set option name to value as the command line does (origin "--name");
 * returns tsd_config_set's result, the message in err_text. */
static int set_flag(struct tsd_config *cfg, const char *name, const char *value)
{
	char origin[80];
	snprintf(origin, sizeof origin, "--%s", name);
	err_begin();
	int rc = tsd_config_set(cfg, name, value, origin);
	err_end();
	return rc;
}

/* Write text as f's config file and read it; returns tsd_config_file's
 * result, the message in err_text. */
static int read_file(struct fixture *f, const char *text)
{
	FILE *fp = fopen(f->path, "w");
	assert_non_null(fp);
	assert_int_equal(fputs(text, fp) >= 0, 1);
	assert_int_equal(fclose(fp), 0);
	err_begin();
	int rc = tsd_config_file(&f->cfg, f->path);
	err_end();
	return rc;
}

/* set_flag must refuse value with exactly the message want (after
 * "tsstored: --name: "), and leave the scheduler's settings as they were. */
static void refused_flag(struct tsd_config *cfg, const char *name, const char *value,
                         const char *want)
{
	ts_options before = cfg->lib;
	char line[256];
	assert_int_equal(set_flag(cfg, name, value), -1);
	snprintf(line, sizeof line, "tsstored: --%s: %s\n", name, want);
	assert_string_equal(err_text, line);
	assert_int_equal(cfg->lib.merge_slice_rows, before.merge_slice_rows);
	assert_int_equal(cfg->lib.merge_rollover_spread, before.merge_rollover_spread);
	assert_int_equal(cfg->lib.maint_busy_window, before.maint_busy_window);
	assert_int_equal(cfg->lib.maint_busy_share, before.maint_busy_share);
}

/* ---- the tests ---- */

/* Without the options, cfg->lib holds the library's defaults (not 0),
 * and each of the four takes a value. */
static void test_defaults(void **state)
{
	struct fixture *f = *state;
	assert_int_equal(f->cfg.lib.merge_slice_rows, 4096);
	assert_int_equal(f->cfg.lib.merge_rollover_spread, 30 * MIN);
	assert_int_equal(f->cfg.lib.maint_busy_window, 100 * MS);
	assert_int_equal(f->cfg.lib.maint_busy_share, 50);
	assert_int_equal(tsd_config_has_arg("merge-slice-rows"), 1);
	assert_int_equal(tsd_config_has_arg("merge-rollover-spread"), 1);
	assert_int_equal(tsd_config_has_arg("maint-busy-window"), 1);
	assert_int_equal(tsd_config_has_arg("maint-busy-share"), 1);
}

/* Valid values on the command line reach cfg->lib, silently. */
static void test_flags_valid(void **state)
{
	struct fixture *f = *state;
	assert_int_equal(set_flag(&f->cfg, "merge-slice-rows", "128"), 0);
	assert_string_equal(err_text, "");
	assert_int_equal(set_flag(&f->cfg, "merge-rollover-spread", "5m"), 0);
	assert_string_equal(err_text, "");
	assert_int_equal(set_flag(&f->cfg, "maint-busy-window", "250ms"), 0);
	assert_string_equal(err_text, "");
	assert_int_equal(set_flag(&f->cfg, "maint-busy-share", "20"), 0);
	assert_string_equal(err_text, "");
	assert_int_equal(f->cfg.lib.merge_slice_rows, 128);
	assert_int_equal(f->cfg.lib.merge_rollover_spread, 5 * MIN);
	assert_int_equal(f->cfg.lib.maint_busy_window, 250 * MS);
	assert_int_equal(f->cfg.lib.maint_busy_share, 20);
	/* the share's bounds are both allowed; one row per slice too */
	assert_int_equal(set_flag(&f->cfg, "maint-busy-share", "1"), 0);
	assert_int_equal(f->cfg.lib.maint_busy_share, 1);
	assert_int_equal(set_flag(&f->cfg, "maint-busy-share", "100"), 0);
	assert_int_equal(f->cfg.lib.maint_busy_share, 100);
	assert_int_equal(set_flag(&f->cfg, "merge-slice-rows", "1"), 0);
	assert_int_equal(f->cfg.lib.merge_slice_rows, 1);
	assert_int_equal(set_flag(&f->cfg, "maint-busy-window", "1ns"), 0);
	assert_int_equal(f->cfg.lib.maint_busy_window, 1);
	/* a later value wins */
	assert_int_equal(set_flag(&f->cfg, "maint-busy-share", "75"), 0);
	assert_int_equal(f->cfg.lib.maint_busy_share, 75);
	/* the TTL of tables line protocol creates: 0 (forever) by default */
	assert_int_equal(f->cfg.ingest_default_ttl, 0);
	assert_int_equal(set_flag(&f->cfg, "ingest-default-ttl", "30d"), 0);
	assert_int_equal(f->cfg.ingest_default_ttl, 30LL * 86400 * 1000000000);
	assert_int_equal(set_flag(&f->cfg, "ingest-default-ttl", "0"), 0);
	assert_int_equal(f->cfg.ingest_default_ttl, 0);
}

/* Out-of-range and malformed values are refused with a message naming
 * the option, and change nothing. */
static void test_flags_refused(void **state)
{
	struct fixture *f = *state;
	assert_int_equal(set_flag(&f->cfg, "maint-busy-share", "20"), 0);
	refused_flag(&f->cfg, "maint-busy-share", "0",
	             "maint-busy-share: \"0\" is not a positive integer");
	refused_flag(&f->cfg, "maint-busy-share", "101", "maint-busy-share: \"101\" is out of range");
	refused_flag(&f->cfg, "maint-busy-share", "-1",
	             "maint-busy-share: \"-1\" is not a positive integer");
	refused_flag(&f->cfg, "maint-busy-share", "50%",
	             "maint-busy-share: \"50%\" is not a positive integer");
	refused_flag(&f->cfg, "merge-slice-rows", "0",
	             "merge-slice-rows: \"0\" is not a positive integer");
	refused_flag(&f->cfg, "merge-slice-rows", "4k",
	             "merge-slice-rows: \"4k\" is not a positive integer");
	/* a duration of 0 parses, but would mean the default: refused */
	refused_flag(&f->cfg, "merge-rollover-spread", "0",
	             "merge-rollover-spread: \"0\" is out of range");
	refused_flag(&f->cfg, "maint-busy-window", "0s", "maint-busy-window: \"0s\" is out of range");
	refused_flag(&f->cfg, "maint-busy-window", "100",
	             "maint-busy-window: \"100\" is not a duration (<n><unit>, unit ns us ms s m h d w)");
	assert_int_equal(f->cfg.lib.maint_busy_share, 20);
	/* a value is needed */
	refused_flag(&f->cfg, "maint-busy-share", NULL, "maint-busy-share needs a value");
}

/* The same keys in a config file reach cfg->lib; a bad line is reported
 * with the file and the line. */
static void test_file(void **state)
{
	struct fixture *f = *state;
	char want[256];
	assert_int_equal(read_file(f, "# the scheduler\n"
	                              "merge-slice-rows = 256\n"
	                              "merge-rollover-spread = 1h\n"
	                              "maint-busy-window = 2s\n"
	                              "maint-busy-share = 25\n"), 0);
	assert_string_equal(err_text, "");
	assert_int_equal(f->cfg.lib.merge_slice_rows, 256);
	assert_int_equal(f->cfg.lib.merge_rollover_spread, 60 * MIN);
	assert_int_equal(f->cfg.lib.maint_busy_window, 2 * SEC);
	assert_int_equal(f->cfg.lib.maint_busy_share, 25);

	assert_int_equal(read_file(f, "maint-busy-share = 30\nmaint-busy-share = 101\n"), -1);
	snprintf(want, sizeof want, "tsstored: %s:2: maint-busy-share: \"101\" is out of range\n",
	         f->path);
	assert_string_equal(err_text, want);
	assert_int_equal(read_file(f, "maint-busy-share = 0\n"), -1);
	snprintf(want, sizeof want,
	         "tsstored: %s:1: maint-busy-share: \"0\" is not a positive integer\n", f->path);
	assert_string_equal(err_text, want);
	assert_int_equal(read_file(f, "merge-slice-rows = 0\n"), -1);
	snprintf(want, sizeof want,
	         "tsstored: %s:1: merge-slice-rows: \"0\" is not a positive integer\n", f->path);
	assert_string_equal(err_text, want);
	assert_int_equal(read_file(f, "maint-busy-window = 0\n"), -1);
	snprintf(want, sizeof want, "tsstored: %s:1: maint-busy-window: \"0\" is out of range\n",
	         f->path);
	assert_string_equal(err_text, want);
}

/* With no listener given, tsd_config_finish opens three: the unix
 * socket in the data directory, TCP on 7400 and HTTP on 7401. */
static void test_listen_defaults(void **state)
{
	struct fixture *f = *state;
	char want[128];
	assert_int_equal(set_flag(&f->cfg, "data", f->dir), 0);
	err_begin();
	assert_int_equal(tsd_config_finish(&f->cfg), 0);
	err_end();
	assert_string_equal(err_text, "");
	assert_int_equal(f->cfg.nlisten, 3);
	snprintf(want, sizeof want, "unix:%s/tsstored.sock", f->dir);
	assert_string_equal(f->cfg.listen[0], want);
	assert_string_equal(f->cfg.listen[1], "tcp:127.0.0.1:7400");
	assert_string_equal(f->cfg.listen[2], "http:127.0.0.1:7401");
	assert_int_equal(f->cfg.http_max_body, 64 << 20);
	assert_int_equal(f->cfg.http_max_header, 64 << 10);
}

/* http:HOST:PORT is a listener like tcp:, with the same rules. */
static void test_listen_http(void **state)
{
	struct fixture *f = *state;
	assert_int_equal(set_flag(&f->cfg, "listen", "http:127.0.0.1:0"), 0);
	assert_int_equal(set_flag(&f->cfg, "listen", "http:[::1]:8086"), 0);
	assert_int_equal(set_flag(&f->cfg, "listen", "http:localhost:65535"), 0);
	assert_string_equal(err_text, "");
	assert_int_equal(set_flag(&f->cfg, "listen", "http:127.0.0.1"), -1);
	assert_string_equal(err_text, "tsstored: --listen: \"http:127.0.0.1\": want "
	                              "http:HOST:PORT with a port 0-65535\n");
	assert_int_equal(set_flag(&f->cfg, "listen", "http:127.0.0.1:65536"), -1);
	assert_string_equal(err_text, "tsstored: --listen: \"http:127.0.0.1:65536\": want "
	                              "http:HOST:PORT with a port 0-65535\n");
	assert_int_equal(set_flag(&f->cfg, "listen", "https:127.0.0.1:1"), -1);
	assert_string_equal(err_text, "tsstored: --listen: \"https:127.0.0.1:1\": want unix:PATH, "
	                              "tcp:HOST:PORT, http:HOST:PORT, graphite:HOST:PORT or "
	                              "graphite-udp:HOST:PORT\n");
	assert_int_equal(set_flag(&f->cfg, "listen", "graphite-udp:127.0.0.1"), -1);
	assert_string_equal(err_text, "tsstored: --listen: \"graphite-udp:127.0.0.1\": want "
	                              "graphite-udp:HOST:PORT with a port 0-65535\n");
	err_begin();
	assert_int_equal(tsd_config_finish(&f->cfg), 0);
	err_end();
	assert_int_equal(f->cfg.nlisten, 3); /* as given: no defaults added */
	/* a non-loopback HTTP address needs a token */
	assert_int_equal(set_flag(&f->cfg, "listen", "http:0.0.0.0:8086"), 0);
	err_begin();
	assert_int_equal(tsd_config_finish(&f->cfg), -1);
	err_end();
	assert_string_equal(err_text, "tsstored: --listen: http:0.0.0.0:8086 is not a loopback "
	                              "address: it needs --token FILE\n");
}

/* The Graphite listeners, also from a file; a non-loopback one needs a
 * token as every TCP address does. */
static void test_listen_graphite(void **state)
{
	struct fixture *f = *state;
	assert_int_equal(read_file(f, "listen = graphite:127.0.0.1:2003\n"
	                              "listen = graphite-udp:[::1]:2003\n"), 0);
	assert_string_equal(err_text, "");
	assert_int_equal(f->cfg.nlisten, 2);
	assert_string_equal(f->cfg.listen[0], "graphite:127.0.0.1:2003");
	assert_string_equal(f->cfg.listen[1], "graphite-udp:[::1]:2003");
	assert_string_equal(tsd_listen_hostport(f->cfg.listen[1]), "[::1]:2003");
	err_begin();
	assert_int_equal(tsd_config_finish(&f->cfg), 0);
	err_end();
	assert_int_equal(f->cfg.nlisten, 2); /* as given: no defaults added */
	assert_int_equal(set_flag(&f->cfg, "listen", "graphite-udp:0.0.0.0:2003"), 0);
	err_begin();
	assert_int_equal(tsd_config_finish(&f->cfg), -1);
	err_end();
	assert_string_equal(err_text, "tsstored: --listen: graphite-udp:0.0.0.0:2003 is not a "
	                              "loopback address: it needs --token FILE\n");
}

/* graphite-template: repeatable, in order; each checked when set, the
 * one-without-a-filter rule when the configuration is finished; the
 * command line's replace the file's (main.c). */
static void test_graphite_template(void **state)
{
	struct fixture *f = *state;
	char want[256];
	assert_int_equal(read_file(f, "graphite-template = servers.* .host.measurement* dc=east\n"
	                              "graphite-template = measurement.host\n"), 0);
	assert_string_equal(err_text, "");
	assert_int_equal(f->cfg.ngraphite_templates, 2);
	assert_string_equal(f->cfg.graphite_template[0], "servers.* .host.measurement* dc=east");
	assert_string_equal(f->cfg.graphite_template[1], "measurement.host");
	assert_int_equal(read_file(f, "graphite-template = host.field\n"), -1);
	snprintf(want, sizeof want, "tsstored: %s:1: graphite-template: template \"host.field\": "
	         "no part is measurement or measurement*\n", f->path);
	assert_string_equal(err_text, want);
	refused_flag(&f->cfg, "graphite-template", "measurement.ts",
	             "graphite-template: template \"measurement.ts\": \"ts\" is not a tag name "
	             "([A-Za-z_][A-Za-z0-9_]*, at most 64 bytes, not ts)");
	assert_int_equal(f->cfg.ngraphite_templates, 2);
	assert_int_equal(set_flag(&f->cfg, "graphite-template", "measurement.field"), 0);
	err_begin();
	assert_int_equal(tsd_config_finish(&f->cfg), -1);
	err_end();
	assert_string_equal(err_text, "tsstored: --graphite-template: template "
	                    "\"measurement.field\": a second template without a filter (the first: "
	                    "\"measurement.host\")\n");
}

/* The HTTP limits: sizes; the header limit within 1k..16M. */
static void test_http_limits(void **state)
{
	struct fixture *f = *state;
	assert_int_equal(set_flag(&f->cfg, "http-max-body", "1G"), 0);
	assert_int_equal(f->cfg.http_max_body, 1 << 30);
	assert_int_equal(set_flag(&f->cfg, "http-max-header", "8k"), 0);
	assert_int_equal(f->cfg.http_max_header, 8 << 10);
	assert_int_equal(set_flag(&f->cfg, "http-max-body", "0"), -1);
	assert_string_equal(err_text, "tsstored: --http-max-body: http-max-body: \"0\" is out of range\n");
	assert_int_equal(set_flag(&f->cfg, "http-max-header", "1023"), -1);
	assert_string_equal(err_text,
	                    "tsstored: --http-max-header: http-max-header: \"1023\" is out of range\n");
	assert_int_equal(set_flag(&f->cfg, "http-max-header", "17M"), -1);
	assert_string_equal(err_text,
	                    "tsstored: --http-max-header: http-max-header: \"17M\" is out of range\n");
	assert_int_equal(read_file(f, "http-max-body = 2M\nhttp-max-header = 4k\n"), 0);
	assert_int_equal(f->cfg.http_max_body, 2 << 20);
	assert_int_equal(f->cfg.http_max_header, 4 << 10);
}

/* remote-read-max-samples: a positive count up to INT_MAX, 5000000 by
 * default. */
static void test_remote_read_limit(void **state)
{
	struct fixture *f = *state;
	assert_int_equal(f->cfg.remote_read_max_samples, 5000000);
	assert_int_equal(set_flag(&f->cfg, "remote-read-max-samples", "50000000"), 0);
	assert_int_equal(f->cfg.remote_read_max_samples, 50000000);
	assert_int_equal(set_flag(&f->cfg, "remote-read-max-samples", "0"), -1);
	assert_string_equal(err_text, "tsstored: --remote-read-max-samples: remote-read-max-samples: "
	                    "\"0\" is not a positive integer\n");
	assert_int_equal(set_flag(&f->cfg, "remote-read-max-samples", "2147483648"), -1);
	assert_string_equal(err_text, "tsstored: --remote-read-max-samples: remote-read-max-samples: "
	                    "\"2147483648\" is not a positive integer\n");
	assert_int_equal(read_file(f, "remote-read-max-samples = 7\n"), 0);
	assert_int_equal(f->cfg.remote_read_max_samples, 7);
}

/* query-cache-size: a size, 32M by default, 0 (the cache off) allowed. */
static void test_query_cache_size(void **state)
{
	struct fixture *f = *state;
	assert_int_equal(f->cfg.query_cache_size, (size_t)32 << 20);
	assert_int_equal(set_flag(&f->cfg, "query-cache-size", "0"), 0);
	assert_int_equal(f->cfg.query_cache_size, 0);
	assert_int_equal(set_flag(&f->cfg, "query-cache-size", "1G"), 0);
	assert_int_equal(f->cfg.query_cache_size, (size_t)1 << 30);
	assert_int_equal(set_flag(&f->cfg, "query-cache-size", "lots"), -1);
	assert_string_equal(err_text, "tsstored: --query-cache-size: query-cache-size: \"lots\" is "
	                    "not a size (bytes, or <n>k, <n>M, <n>G)\n");
	assert_int_equal(read_file(f, "query-cache-size = 4M\n"), 0);
	assert_int_equal(f->cfg.query_cache_size, (size_t)4 << 20);
}

/* follow: a tcp:HOST:PORT with a port, nothing else; from the file too. */
static void test_follow(void **state)
{
	struct fixture *f = *state;
	assert_null(f->cfg.follow);
	assert_int_equal(set_flag(&f->cfg, "follow", "tcp:127.0.0.1:7400"), 0);
	assert_string_equal(f->cfg.follow, "tcp:127.0.0.1:7400");
	assert_int_equal(set_flag(&f->cfg, "follow", "http:127.0.0.1:7401"), -1);
	assert_string_equal(err_text, "tsstored: --follow: follow: \"http:127.0.0.1:7401\": want "
	                    "tcp:HOST:PORT, the primary's TCP listener\n");
	assert_int_equal(set_flag(&f->cfg, "follow", "tcp:127.0.0.1:0"), -1);
	assert_string_equal(err_text, "tsstored: --follow: follow: \"tcp:127.0.0.1:0\": port 0 "
	                    "names no primary\n");
	assert_int_equal(set_flag(&f->cfg, "follow", "tcp:nohost"), -1);
	assert_string_equal(err_text, "tsstored: --follow: \"tcp:nohost\": want tcp:HOST:PORT with "
	                    "a port 0-65535\n");
	assert_string_equal(f->cfg.follow, "tcp:127.0.0.1:7400"); /* the refused left it */
	assert_int_equal(read_file(f, "follow = tcp:10.0.0.1:7400\n"), 0);
	assert_string_equal(f->cfg.follow, "tcp:10.0.0.1:7400");
}

/* sync: replica is commit, and the inserts wait (replica.c); its
 * timeout is positive; from the file too. */
static void test_sync_replica(void **state)
{
	struct fixture *f = *state;
	assert_int_equal(f->cfg.sync_replica, 0);
	assert_int_equal(f->cfg.replica_timeout, TSD_REPLICA_TIMEOUT_DEFAULT);
	assert_int_equal(set_flag(&f->cfg, "sync", "replica"), 0);
	assert_int_equal(f->cfg.sync_replica, 1);
	assert_int_equal(f->cfg.lib.sync, TS_SYNC_COMMIT);
	assert_int_equal(set_flag(&f->cfg, "sync", "commit"), 0);
	assert_int_equal(f->cfg.sync_replica, 0);
	assert_int_equal(f->cfg.lib.sync, TS_SYNC_COMMIT);
	assert_int_equal(set_flag(&f->cfg, "sync", "replicas"), -1);
	assert_string_equal(err_text, "tsstored: --sync: sync: \"replicas\": want none, interval, "
	                    "commit or replica\n");
	assert_int_equal(set_flag(&f->cfg, "replica-timeout", "250ms"), 0);
	assert_int_equal(f->cfg.replica_timeout, 250000000);
	assert_int_equal(set_flag(&f->cfg, "replica-timeout", "0s"), -1);
	assert_int_equal(f->cfg.replica_timeout, 250000000);
	assert_int_equal(read_file(f, "sync = replica\nreplica-timeout = 2s\n"), 0);
	assert_int_equal(f->cfg.sync_replica, 1);
	assert_int_equal(f->cfg.replica_timeout, 2000000000);
}

/* What a standby refuses: the ops and routes that change the database,
 * and the message naming its primary. */
static void test_standby_changes(void **state)
{
	struct fixture *f = *state;
	char msg[256];
	int changes = 0;
	for (int op = TSD_OP_NONE + 1; op < TSD_NOPS; op++)
		changes += tsd_standby_changes((enum tsd_op)op, TSD_HTTP_NOROUTE);
	assert_int_equal(changes, 8);
	assert_true(tsd_standby_changes(TSD_OP_INSERT, TSD_HTTP_NOROUTE));
	assert_true(tsd_standby_changes(TSD_OP_CREATE_ROLLUP, TSD_HTTP_NOROUTE));
	assert_false(tsd_standby_changes(TSD_OP_SNAPSHOT, TSD_HTTP_NOROUTE));
	assert_false(tsd_standby_changes(TSD_OP_CHECK, TSD_HTTP_NOROUTE));
	assert_false(tsd_standby_changes(TSD_OP_FOLLOW, TSD_HTTP_NOROUTE));
	assert_true(tsd_standby_changes(TSD_OP_NONE, TSD_HTTP_WRITE));
	assert_true(tsd_standby_changes(TSD_OP_NONE, TSD_HTTP_WRITE_V2));
	assert_true(tsd_standby_changes(TSD_OP_NONE, TSD_HTTP_PROM_WRITE));
	assert_false(tsd_standby_changes(TSD_OP_NONE, TSD_HTTP_PROM_READ));
	assert_false(tsd_standby_changes(TSD_OP_NONE, TSD_HTTP_QUERY));
	assert_false(tsd_standby_changes(TSD_OP_NONE, TSD_HTTP_METRICS));
	(void)f;
	/* the role: a standby refuses, a promoted one does not, a fenced
	 * primary refuses naming the epochs */
	tsd_role_start("tcp:10.0.0.1:7400");
	assert_int_equal(tsd_role_now(NULL), TSD_ROLE_STANDBY);
	assert_int_equal(tsd_write_refusal(TSD_OP_DROP, TSD_HTTP_NOROUTE, "\"drop\"", msg,
	                                   sizeof msg), 1);
	assert_string_equal(msg, "read-only standby of tcp:10.0.0.1:7400: \"drop\" would change "
	                    "the database; send it to the primary");
	assert_int_equal(tsd_write_refusal(TSD_OP_QUERY, TSD_HTTP_NOROUTE, "\"query\"", msg,
	                                   sizeof msg), 0);
	assert_int_equal(tsd_write_refusal(TSD_OP_PROMOTE, TSD_HTTP_NOROUTE, "\"promote\"", msg,
	                                   sizeof msg), 0);
	tsd_role_promoted();
	assert_int_equal(tsd_role_now(NULL), TSD_ROLE_PRIMARY);
	assert_int_equal(tsd_write_refusal(TSD_OP_DROP, TSD_HTTP_NOROUTE, "\"drop\"", msg,
	                                   sizeof msg), 0);
	uint64_t newer = 0;
	tsd_role_fence(3, 2);
	tsd_role_fence(2, 2); /* an older news changes nothing */
	assert_int_equal(tsd_role_now(&newer), TSD_ROLE_FENCED);
	assert_int_equal(newer, 3);
	assert_int_equal(tsd_write_refusal(TSD_OP_NONE, TSD_HTTP_WRITE, "POST /write", msg,
	                                   sizeof msg), 1);
	assert_string_equal(msg, "stale primary: a member of this lineage at epoch 3 exists, this "
	                    "database is at epoch 2: POST /write is refused; send it to the "
	                    "primary of epoch 3 (this one may only become its standby)");
	tsd_role_start(NULL);
	assert_int_equal(tsd_role_now(&newer), TSD_ROLE_PRIMARY);
	assert_int_equal(newer, 0);
}

/* Write "s3cret\n" to DIR/token and name it as the token file. */
static void use_token(struct fixture *f)
{
	char path[96];
	FILE *fp;
	snprintf(path, sizeof path, "%s/token", f->dir);
	assert_non_null(fp = fopen(path, "w"));
	assert_true(fputs("s3cret\n", fp) >= 0);
	assert_int_equal(fclose(fp), 0);
	assert_int_equal(chmod(path, 0600), 0); /* else tsd_config_finish warns */
	assert_int_equal(set_flag(&f->cfg, "token", path), 0);
}

/* tsd_config_finish, which must succeed silently. */
static void finish_ok(struct fixture *f)
{
	err_begin();
	assert_int_equal(tsd_config_finish(&f->cfg), 0);
	err_end();
	assert_string_equal(err_text, "");
}

/* loopback-access: unset until tsd_config_finish, which makes it write
 * without a token. */
static void test_loopback_access_default(void **state)
{
	struct fixture *f = *state;
	assert_int_equal(tsd_config_has_arg("loopback-access"), 1);
	assert_int_equal(f->cfg.loopback_access, TSD_ACCESS_UNSET);
	finish_ok(f);
	assert_int_equal(f->cfg.loopback_access, TSD_ACCESS_WRITE);
}

/* With a token and no loopback-access, every loopback request needs the
 * token, as before loopback-access existed: none. */
static void test_loopback_access_token_default(void **state)
{
	struct fixture *f = *state;
	use_token(f);
	finish_ok(f);
	assert_int_equal(f->cfg.loopback_access, TSD_ACCESS_NONE);
}

/* Each value, on the command line and in a file; given, it holds with
 * a token too; a later one wins. */
static void test_loopback_access_values(void **state)
{
	struct fixture *f = *state;
	static const char *const names[] = {"none", "read", "write", "admin"};
	for (int i = 0; i < 4; i++) {
		assert_int_equal(set_flag(&f->cfg, "loopback-access", names[i]), 0);
		assert_string_equal(err_text, "");
		assert_int_equal(f->cfg.loopback_access, i);
	}
	assert_int_equal(read_file(f, "loopback-access = read\n"), 0);
	assert_string_equal(err_text, "");
	assert_int_equal(f->cfg.loopback_access, TSD_ACCESS_READ);
	use_token(f);
	assert_int_equal(set_flag(&f->cfg, "loopback-access", "write"), 0);
	finish_ok(f);
	assert_int_equal(f->cfg.loopback_access, TSD_ACCESS_WRITE);
}

/* A bad value is refused with the values allowed, and changes nothing. */
static void test_loopback_access_refused(void **state)
{
	struct fixture *f = *state;
	char want[256];
	assert_int_equal(set_flag(&f->cfg, "loopback-access", "read"), 0);
	assert_int_equal(set_flag(&f->cfg, "loopback-access", "all"), -1);
	assert_string_equal(err_text, "tsstored: --loopback-access: loopback-access: \"all\": want "
	                              "none, read, write or admin\n");
	assert_int_equal(set_flag(&f->cfg, "loopback-access", "Admin"), -1);
	assert_string_equal(err_text, "tsstored: --loopback-access: loopback-access: \"Admin\": want "
	                              "none, read, write or admin\n");
	assert_int_equal(set_flag(&f->cfg, "loopback-access", ""), -1);
	assert_string_equal(err_text, "tsstored: --loopback-access: loopback-access: \"\": want "
	                              "none, read, write or admin\n");
	assert_int_equal(set_flag(&f->cfg, "loopback-access", NULL), -1);
	assert_string_equal(err_text, "tsstored: --loopback-access: loopback-access needs a value\n");
	assert_int_equal(f->cfg.loopback_access, TSD_ACCESS_READ);
	assert_int_equal(read_file(f, "loopback-access = writ\n"), -1);
	snprintf(want, sizeof want, "tsstored: %s:1: loopback-access: \"writ\": want none, read, "
	         "write or admin\n", f->path);
	assert_string_equal(err_text, want);
}

/* The one table (access.c): the level of every op and HTTP route. */
static void test_access_table(void **state)
{
	static const struct { enum tsd_op op; enum tsd_access need; } ops[] = {
		{TSD_OP_AUTH, TSD_ACCESS_NONE},
		{TSD_OP_PING, TSD_ACCESS_READ}, {TSD_OP_TABLES, TSD_ACCESS_READ},
		{TSD_OP_SCHEMA, TSD_ACCESS_READ}, {TSD_OP_QUERY, TSD_ACCESS_READ},
		{TSD_OP_LATEST, TSD_ACCESS_READ}, {TSD_OP_AGGREGATE, TSD_ACCESS_READ},
		{TSD_OP_STATS, TSD_ACCESS_READ},
		{TSD_OP_INSERT, TSD_ACCESS_WRITE}, {TSD_OP_CREATE, TSD_ACCESS_WRITE},
		{TSD_OP_ALTER, TSD_ACCESS_ADMIN}, {TSD_OP_DROP, TSD_ACCESS_ADMIN},
		{TSD_OP_FLUSH, TSD_ACCESS_ADMIN}, {TSD_OP_CHECK, TSD_ACCESS_ADMIN},
		{TSD_OP_SNAPSHOT, TSD_ACCESS_ADMIN},
		{TSD_OP_DELETE, TSD_ACCESS_ADMIN}, {TSD_OP_PURGE, TSD_ACCESS_ADMIN},
		{TSD_OP_CHANGES, TSD_ACCESS_READ},
		{TSD_OP_CREATE_ROLLUP, TSD_ACCESS_ADMIN}, {TSD_OP_ROLLUPS, TSD_ACCESS_READ},
		{TSD_OP_FOLLOW, TSD_ACCESS_ADMIN}, {TSD_OP_PROMOTE, TSD_ACCESS_ADMIN},
	};
	static const struct { enum tsd_http_route route; enum tsd_access need; } routes[] = {
		{TSD_HTTP_PING, TSD_ACCESS_NONE}, {TSD_HTTP_HEALTH, TSD_ACCESS_NONE},
		{TSD_HTTP_METRICS, TSD_ACCESS_READ}, {TSD_HTTP_WRITE, TSD_ACCESS_WRITE},
		{TSD_HTTP_WRITE_V2, TSD_ACCESS_WRITE}, {TSD_HTTP_PROM_WRITE, TSD_ACCESS_WRITE},
		{TSD_HTTP_PROM_READ, TSD_ACCESS_READ},
		{TSD_HTTP_QUERY, TSD_ACCESS_READ},
	};
	(void)state;
	assert_int_equal(sizeof ops / sizeof ops[0], TSD_NOPS - 1); /* every op */
	for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
		assert_int_equal(tsd_access_op(ops[i].op), ops[i].need);
	assert_int_equal(sizeof routes / sizeof routes[0], TSD_HTTP_NROUTES - 1);
	for (size_t i = 0; i < sizeof routes / sizeof routes[0]; i++)
		assert_int_equal(tsd_access_route(routes[i].route), routes[i].need);
	assert_string_equal(tsd_access_name(TSD_ACCESS_NONE), "none");
	assert_string_equal(tsd_access_name(TSD_ACCESS_ADMIN), "admin");
}

/* What a client has: admin on a unix socket or with the token,
 * loopback-access on a loopback listener, nothing elsewhere. */
/* The log of refusals: ten lines of a kind a window, the rest counted
 * and said in one line once the window is over; each kind on its own. */
static void test_access_log_bounded(void **state)
{
	struct timespec pause = {0, 80 * 1000000};
	char want[4096] = "";
	(void)state;
	tsd_access_log_window(50 * MS);
	err_begin();
	for (int i = 0; i < 13; i++)
		tsd_access_log(TSD_LOG_AUTH, "tcp:127.0.0.1:7400 from 127.0.0.1:%d: authentication "
		               "failed: wrong token; connection closed", 40000 + i);
	tsd_access_log(TSD_LOG_REFUSED, "unix:/s: connection refused: max-connections (1) are open");
	tsd_access_log_flush(); /* the window is not over: nothing yet */
	nanosleep(&pause, NULL);
	tsd_access_log_flush();
	tsd_access_log_flush(); /* said once */
	err_end();
	tsd_access_log_window(0);
	for (int i = 0; i < 10; i++)
		snprintf(want + strlen(want), sizeof want - strlen(want),
		         "tsstored: tcp:127.0.0.1:7400 from 127.0.0.1:%d: authentication failed: wrong "
		         "token; connection closed\n", 40000 + i);
	snprintf(want + strlen(want), sizeof want - strlen(want),
	         "tsstored: unix:/s: connection refused: max-connections (1) are open\n"
	         "tsstored: 3 more failed authentications were not logged (at most 10 of a kind "
	         "are, a minute; the stats count them all)\n");
	assert_string_equal(err_text, want);
}

static void test_access_granted(void **state)
{
	struct fixture *f = *state;
	char msg[512];
	assert_int_equal(set_flag(&f->cfg, "loopback-access", "read"), 0);
	finish_ok(f);
	assert_int_equal(tsd_access_granted(&f->cfg, TSD_PEER_UNIX, 0), TSD_ACCESS_ADMIN);
	assert_int_equal(tsd_access_granted(&f->cfg, TSD_PEER_LOOPBACK, 0), TSD_ACCESS_READ);
	assert_int_equal(tsd_access_granted(&f->cfg, TSD_PEER_LOOPBACK, 1), TSD_ACCESS_ADMIN);
	assert_int_equal(tsd_access_granted(&f->cfg, TSD_PEER_REMOTE, 0), TSD_ACCESS_NONE);
	assert_int_equal(tsd_access_granted(&f->cfg, TSD_PEER_REMOTE, 1), TSD_ACCESS_ADMIN);
	assert_int_equal(tsd_listen_loopback("tcp:127.0.0.2:1"), 1);
	assert_int_equal(tsd_listen_loopback("http:[::1]:1"), 1);
	assert_int_equal(tsd_listen_loopback("tcp:localhost:1"), 1);
	assert_int_equal(tsd_listen_loopback("tcp:0.0.0.0:1"), 0);
	assert_int_equal(tsd_listen_loopback("unix:/tmp/s"), 0);
	tsd_access_refusal(&f->cfg, TSD_PEER_LOOPBACK, 0, "\"insert\"", TSD_ACCESS_WRITE, msg,
	                   sizeof msg);
	assert_string_equal(msg, "\"insert\" is a write operation: use the unix socket, or start "
	                         "tsstored with a token (--token FILE) and send it "
	                         "({\"op\":\"auth\",\"token\":…}); loopback-access is read");
}

/* flush-threads: 1 to 8 (the library's TS_FLUSH_THREADS_MAX) reach
 * cfg->lib.flush_threads; without it the library's default (the online
 * CPUs, at most 8, never 0); 0, 9 and malformed values are refused with
 * the message naming the option (or the file and line), changing
 * nothing. */
static void test_flush_threads(void **state)
{
	struct fixture *f = *state;
	char want[256];
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	assert_int_equal(f->cfg.lib.flush_threads, cpus < 1 ? 1 : cpus > 8 ? 8 : cpus);
	assert_int_equal(tsd_config_has_arg("flush-threads"), 1);
	assert_int_equal(set_flag(&f->cfg, "flush-threads", "1"), 0);
	assert_string_equal(err_text, "");
	assert_int_equal(f->cfg.lib.flush_threads, 1);
	assert_int_equal(set_flag(&f->cfg, "flush-threads", "8"), 0);
	assert_int_equal(f->cfg.lib.flush_threads, 8);
	assert_int_equal(set_flag(&f->cfg, "flush-threads", "3"), 0);
	assert_int_equal(f->cfg.lib.flush_threads, 3);
	assert_int_equal(set_flag(&f->cfg, "flush-threads", "9"), -1);
	assert_string_equal(err_text, "tsstored: --flush-threads: flush-threads: \"9\" is out of range\n");
	assert_int_equal(set_flag(&f->cfg, "flush-threads", "0"), -1);
	assert_string_equal(err_text,
	                    "tsstored: --flush-threads: flush-threads: \"0\" is not a positive integer\n");
	assert_int_equal(set_flag(&f->cfg, "flush-threads", "two"), -1);
	assert_string_equal(err_text,
	                    "tsstored: --flush-threads: flush-threads: \"two\" is not a positive integer\n");
	assert_int_equal(set_flag(&f->cfg, "flush-threads", NULL), -1);
	assert_string_equal(err_text, "tsstored: --flush-threads: flush-threads needs a value\n");
	assert_int_equal(f->cfg.lib.flush_threads, 3);
	assert_int_equal(read_file(f, "flush-threads = 2\n"), 0);
	assert_int_equal(f->cfg.lib.flush_threads, 2);
	assert_int_equal(read_file(f, "# compress on one thread\nflush-threads = 9\n"), -1);
	snprintf(want, sizeof want, "tsstored: %s:2: flush-threads: \"9\" is out of range\n",
	         f->path);
	assert_string_equal(err_text, want);
	assert_int_equal(f->cfg.lib.flush_threads, 2);
}

/* What cfg->lib holds after the options is what ts_open accepts. */
static void test_engine_accepts(void **state)
{
	struct fixture *f = *state;
	ts_db *db = NULL;
	char path[96];
	snprintf(path, sizeof path, "%s/db", f->dir);
	assert_int_equal(set_flag(&f->cfg, "merge-slice-rows", "128"), 0);
	assert_int_equal(set_flag(&f->cfg, "maint-busy-share", "100"), 0);
	assert_int_equal(set_flag(&f->cfg, "maint-busy-window", "1ns"), 0);
	assert_int_equal(set_flag(&f->cfg, "merge-rollover-spread", "1ns"), 0);
	assert_int_equal(set_flag(&f->cfg, "flush-threads", "8"), 0);
	f->cfg.lib.flags |= TS_OPEN_CREATE;
	assert_int_equal(ts_open(path, &f->cfg.lib, &db), 0);
	assert_int_equal(ts_close(db), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_defaults, setup, teardown),
		cmocka_unit_test_setup_teardown(test_follow, setup, teardown),
		cmocka_unit_test_setup_teardown(test_sync_replica, setup, teardown),
		cmocka_unit_test_setup_teardown(test_standby_changes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_flags_valid, setup, teardown),
		cmocka_unit_test_setup_teardown(test_flags_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_file, setup, teardown),
		cmocka_unit_test_setup_teardown(test_listen_defaults, setup, teardown),
		cmocka_unit_test_setup_teardown(test_listen_http, setup, teardown),
		cmocka_unit_test_setup_teardown(test_listen_graphite, setup, teardown),
		cmocka_unit_test_setup_teardown(test_graphite_template, setup, teardown),
		cmocka_unit_test_setup_teardown(test_http_limits, setup, teardown),
		cmocka_unit_test_setup_teardown(test_remote_read_limit, setup, teardown),
		cmocka_unit_test_setup_teardown(test_query_cache_size, setup, teardown),
		cmocka_unit_test_setup_teardown(test_flush_threads, setup, teardown),
		cmocka_unit_test_setup_teardown(test_engine_accepts, setup, teardown),
		cmocka_unit_test_setup_teardown(test_loopback_access_default, setup, teardown),
		cmocka_unit_test_setup_teardown(test_loopback_access_token_default, setup, teardown),
		cmocka_unit_test_setup_teardown(test_loopback_access_values, setup, teardown),
		cmocka_unit_test_setup_teardown(test_loopback_access_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_access_table, setup, teardown),
		cmocka_unit_test_setup_teardown(test_access_granted, setup, teardown),
		cmocka_unit_test(test_access_log_bounded),
	};
	return cmocka_run_group_tests_name("config", tests, NULL, NULL);
}
