/*
 * test_graphite.c -- Graphite plaintext into tsstored (the graphite: and
 * graphite-udp: listeners, daemon/graphite.c, tsstore-http(7)), end to
 * end: a real daemon listening for Graphite on free loopback ports (TCP
 * and UDP), sent lines as carbon clients send them; what was stored is
 * read back through the JSON protocol (schema, query, stats) and
 * compared exactly.
 *
 * Graphite has no answer, so each test waits until the stats op has
 * accounted for every line it sent (stored, ignored or refused) before
 * reading back.  Each test starts its own daemon; the teardown kills it
 * and removes its directory.  TSD_TEST_FILTER=PATTERN runs only the tests
 * whose names match; TSD_TEST_VERBOSE=1 sends the daemon's log to stderr.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include <jansson.h>

#include "support_client.h"

#define WAIT TSD_TEST_TIMEOUT_MS

struct fixture {
	struct tsd_test_daemon *d;
	struct tsd_test_conn *json;     /* the JSON-lines protocol, over TCP */
	int gport, uport;               /* the graphite: and graphite-udp: ports */
	char *args[11];                 /* the --listen options for them, and more */
};

/* A port on 127.0.0.1 of socket type type that was free a moment ago. */
static int free_port(int type)
{
	struct sockaddr_in sa = {.sin_family = AF_INET};
	socklen_t len = sizeof sa;
	int fd = socket(AF_INET, type, 0), port = -1;
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd >= 0 && bind(fd, (struct sockaddr *)&sa, sizeof sa) == 0 &&
	    getsockname(fd, (struct sockaddr *)&sa, &len) == 0)
		port = ntohs(sa.sin_port);
	if (fd >= 0)
		close(fd);
	return port;
}

/* A connection to the graphite: listener. */
static int graphite_connect(const struct fixture *f)
{
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)f->gport)};
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_true(fd >= 0);
	assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof sa), 0);
	return fd;
}

static void send_all(int fd, const char *s)
{
	size_t n = strlen(s);
	while (n) {
		ssize_t w = send(fd, s, n, MSG_NOSIGNAL);
		assert_true(w > 0);
		s += w;
		n -= (size_t)w;
	}
}

/* One UDP datagram s to the graphite-udp: listener. */
static void send_udp(const struct fixture *f, const char *s)
{
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)f->uport)};
	int fd = socket(AF_INET, SOCK_DGRAM, 0);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_true(fd >= 0);
	assert_int_equal(sendto(fd, s, strlen(s), 0, (struct sockaddr *)&sa, sizeof sa),
	                 (ssize_t)strlen(s));
	close(fd);
}

static char *call(struct fixture *f, const char *request)
{
	char *text = tsd_test_call(f->json, request);
	assert_non_null(text);
	return text;
}

static void expect_call(struct fixture *f, const char *request, const char *want)
{
	char *text = call(f, request);
	assert_string_equal(text, want);
	free(text);
}

/* The stats op's "graphite" object (the caller decrefs it). */
static json_t *graphite_stats(struct fixture *f)
{
	char *text = call(f, "{\"op\":\"stats\"}");
	json_t *st = json_loads(text, 0, NULL), *g;
	free(text);
	assert_non_null(st);
	g = json_incref(json_object_get(st, "graphite"));
	json_decref(st);
	assert_non_null(g);
	return g;
}

static json_int_t member(json_t *o, const char *name)
{
	json_t *v = json_object_get(o, name);
	assert_true(json_is_integer(v));
	return json_integer_value(v);
}

/* Lines accounted for: stored, ignored or refused. */
static json_int_t settled(json_t *g)
{
	json_int_t n = member(g, "rows_stored") + member(g, "duplicates_ignored") +
	               member(g, "nan_skipped");
	const char *k;
	json_t *v;
	json_object_foreach(json_object_get(g, "rejected"), k, v)
		n += json_integer_value(v);
	return n;
}

/* Wait until lines lines were received and every one accounted for. */
static void wait_settled(struct fixture *f, json_int_t lines)
{
	for (int ms = 0;; ms += 20) {
		json_t *g = graphite_stats(f);
		json_int_t got = member(g, "lines"), done = settled(g);
		json_decref(g);
		if (got == lines && done == lines)
			return;
		assert_true(got <= lines && ms < WAIT);
		tsd_test_sleep_ms(20);
	}
}

/* The stats op's graphite counter name (rejected.REASON for a reason). */
static json_int_t gstat(struct fixture *f, const char *name)
{
	json_t *g = graphite_stats(f);
	json_int_t v = strncmp(name, "rejected.", 9) == 0
	               ? member(json_object_get(g, "rejected"), name + 9) : member(g, name);
	json_decref(g);
	return v;
}

/* ---- Fixtures ---- */

static int teardown(void **state)
{
	struct fixture *f = *state;
	if (!f)
		return 0;
	tsd_test_close(f->json);
	tsd_test_daemon_free(f->d);
	for (int i = 0; i < 10; i++)
		free(f->args[i]);
	free(f);
	*state = NULL;
	return 0;
}

/* Whether the graphite: listener accepts within WAIT ms.  The daemon
 * opens its listeners one after another, and the kernel accepts on the
 * first ones (which tsd_test_daemon_start waits for) before the later
 * ones listen: a connect at once could be refused. */
static int graphite_listens(const struct fixture *f)
{
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)f->gport)};
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	for (int waited = 0; waited < WAIT; waited += 5) {
		int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		int ok = fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0;
		if (fd >= 0)
			close(fd);
		if (ok)
			return 1;
		tsd_test_sleep_ms(5);
	}
	return 0;
}

/* Start a daemon listening for Graphite too, with extra (at most six
 * words, NULL-terminated; NULL: none). */
static int setup_with(void **state, const char *const *extra)
{
	struct fixture *f = calloc(1, sizeof *f);
	if (!f)
		return -1;
	*state = f;
	if (!(f->d = tsd_test_daemon_new()))
		goto fail;
	f->d->http = 1;
	for (int attempt = 0; attempt < 5; attempt++) {
		f->gport = free_port(SOCK_STREAM);
		f->uport = free_port(SOCK_DGRAM);
		for (int i = 0; i < 4; i++)
			free(f->args[i]);
		f->args[0] = tsd_test_fmt("--listen");
		f->args[1] = tsd_test_fmt("graphite:127.0.0.1:%d", f->gport);
		f->args[2] = tsd_test_fmt("--listen");
		f->args[3] = tsd_test_fmt("graphite-udp:127.0.0.1:%d", f->uport);
		for (int i = 0; i < 6; i++) {
			free(f->args[4 + i]);
			f->args[4 + i] = extra && extra[i] ? tsd_test_fmt("%s", extra[i]) : NULL;
			if (!f->args[4 + i])
				break;
		}
		if (tsd_test_daemon_start(f->d, (const char *const *)f->args) == 0)
			break;
	}
	if (f->d->pid < 0 || !graphite_listens(f) ||
	    !(f->json = tsd_test_connect(f->d, TSD_TEST_TCP)))
		goto fail;
	return 0;
fail:
	if (f->d)
		tsd_test_daemon_dump_log(f->d);
	teardown(state);
	return -1;
}

static int setup(void **state) { return setup_with(state, NULL); }

static int setup_line_max(void **state)
{
	static const char *const extra[] = {"--line-max", "1k", NULL};
	return setup_with(state, extra);
}

static int setup_idle(void **state)
{
	static const char *const extra[] = {"--idle-timeout", "300ms", NULL};
	return setup_with(state, extra);
}

/* Three templates: a filter with a skipped part, measurement* and a
 * TAG=VALUE; a filter with a field part; one without a filter. */
static int setup_templates(void **state)
{
	static const char *const extra[] = {
		"--graphite-template", "servers.* .host.measurement* region=us",
		"--graphite-template", "cpu.*.* measurement.host.field",
		"--graphite-template", "measurement.metric", NULL};
	return setup_with(state, extra);
}

/* ---- The tests ---- */

/* 2026-11-22T00:00:00Z in s. */
#define T0 "1795305600"

static void test_tcp_lines(void **state)
{
	struct fixture *f = *state;
	int fd = graphite_connect(f);
	/* several lines in one packet, "\r\n" and blank lines allowed */
	send_all(fd, "servers.web1.cpu 97.5 " T0 "\r\n\nservers.web2.cpu 0.1 " T0 "\n"
	             "servers.web1.load 1e300 1795305610\n");
	wait_settled(f, 3);
	expect_call(f, "{\"op\":\"schema\",\"table\":\"servers\"}",
	            "{\"ok\":true,\"columns\":[{\"name\":\"p1\",\"type\":\"string\",\"default\":\"\"},"
	            "{\"name\":\"p2\",\"type\":\"string\",\"default\":\"\"},"
	            "{\"name\":\"ts\",\"type\":\"timestamp\"},"
	            "{\"name\":\"value\",\"type\":\"double\",\"default\":\"NaN\"}],"
	            "\"key\":[\"p1\",\"p2\",\"ts\"],\"ttl\":\"0s\",\"version\":1,"
	            "\"on_duplicate\":\"ignore\"}\n");
	expect_call(f, "{\"op\":\"query\",\"table\":\"servers\"}",
	            "{\"rows\":[[\"web1\",\"cpu\",1795305600000000000,97.5],"
	            "[\"web1\",\"load\",1795305610000000000,1e+300],"
	            "[\"web2\",\"cpu\",1795305600000000000,0.1]]}\n"
	            "{\"ok\":true,\"count\":3,\"more\":false}\n");
	/* lines cut anywhere across writes */
	send_all(fd, "servers.web3.c");
	tsd_test_sleep_ms(50);
	send_all(fd, "pu 7 " T0);
	tsd_test_sleep_ms(50);
	send_all(fd, "\nservers.web3.load -2.5 17953056");
	tsd_test_sleep_ms(50);
	send_all(fd, "00\n");
	wait_settled(f, 5);
	expect_call(f, "{\"op\":\"query\",\"table\":\"servers\",\"prefix\":[\"web3\"]}",
	            "{\"rows\":[[\"web3\",\"cpu\",1795305600000000000,7],"
	            "[\"web3\",\"load\",1795305600000000000,-2.5]]}\n"
	            "{\"ok\":true,\"count\":2,\"more\":false}\n");
	/* a last line without '\n' is stored when the client ends its stream */
	send_all(fd, "servers.web4.cpu 4 " T0);
	close(fd);
	wait_settled(f, 6);
	assert_int_equal(gstat(f, "rows_stored"), 6);
	expect_call(f, "{\"op\":\"query\",\"table\":\"servers\",\"prefix\":[\"web4\"]}",
	            "{\"rows\":[[\"web4\",\"cpu\",1795305600000000000,4]]}\n"
	            "{\"ok\":true,\"count\":1,\"more\":false}\n");
}

static void test_udp(void **state)
{
	struct fixture *f = *state;
	send_udp(f, "udp.a.b 1.5 " T0 "\nudp.a.c 2.5 1795305601\n");
	send_udp(f, "udp.x.y 3 1795305602");
	wait_settled(f, 3);
	expect_call(f, "{\"op\":\"query\",\"table\":\"udp\"}",
	            "{\"rows\":[[\"a\",\"b\",1795305600000000000,1.5],"
	            "[\"a\",\"c\",1795305601000000000,2.5],"
	            "[\"x\",\"y\",1795305602000000000,3]]}\n"
	            "{\"ok\":true,\"count\":3,\"more\":false}\n");
	assert_int_equal(gstat(f, "datagrams_dropped"), 0);
}

/* Bad lines are counted by reason; the good ones around them are stored,
 * and the connection stays open. */
static void test_bad_lines(void **state)
{
	struct fixture *f = *state;
	int fd = graphite_connect(f);
	send_all(fd, "m.a 1 " T0 "\n"            /* good: makes m with key p1, ts */
	             "onlypath\n"                 /* syntax: no value */
	             "m.b notanumber " T0 "\n"    /* syntax: value */
	             "m.b inf " T0 "\n"           /* syntax: not finite */
	             "m.b nan " T0 "\n"           /* no reading: skipped */
	             "m.b 1 yesterday\n"          /* syntax: timestamp */
	             "m..b 1 " T0 "\n"            /* syntax: empty component */
	             "m.b 1 " T0 " extra\n"       /* syntax: four fields */
	             "m.b;novalue 1 " T0 "\n"     /* syntax: tag */
	             "m.b.c 1 " T0 "\n"           /* components: 2 keys, m has 1 */
	             "m 1 " T0 "\n"               /* components: 0 keys */
	             "m.c 2 1795305601\n");       /* good */
	wait_settled(f, 12);
	assert_int_equal(gstat(f, "rows_stored"), 2);
	assert_int_equal(gstat(f, "rejected.syntax"), 7);
	assert_int_equal(gstat(f, "rejected.components"), 2);
	assert_int_equal(gstat(f, "nan_skipped"), 1);
	send_all(fd, "m.d 3 1795305602\n");
	wait_settled(f, 13);
	close(fd);
	expect_call(f, "{\"op\":\"query\",\"table\":\"m\"}",
	            "{\"rows\":[[\"a\",1795305600000000000,1],"
	            "[\"c\",1795305601000000000,2],"
	            "[\"d\",1795305602000000000,3]]}\n"
	            "{\"ok\":true,\"count\":3,\"more\":false}\n");
	/* each cause logged once */
	send_all(fd = graphite_connect(f), "onlypath\n");
	close(fd);
	wait_settled(f, 14);
	FILE *log = fopen(f->d->log, "r");
	char line[1024];
	int fields = 0;
	assert_non_null(log);
	while (fgets(line, sizeof line, log))
		fields += strstr(line, "want \\\"path value [timestamp]\\\"") != NULL ||
		          strstr(line, "want \"path value [timestamp]\"") != NULL;
	fclose(log);
	assert_int_equal(fields, 1);
}

/* A resent line is idempotent (tables made with the ignore policy). */
static void test_resent(void **state)
{
	struct fixture *f = *state;
	const char *batch = "r.a 1 " T0 "\nr.b 2 " T0 "\n";
	int fd = graphite_connect(f);
	send_all(fd, batch);
	wait_settled(f, 2);
	send_all(fd, batch);
	wait_settled(f, 4);
	close(fd);
	send_udp(f, batch);
	wait_settled(f, 6);
	assert_int_equal(gstat(f, "rows_stored"), 2);
	assert_int_equal(gstat(f, "duplicates_ignored"), 4);
	expect_call(f, "{\"op\":\"query\",\"table\":\"r\"}",
	            "{\"rows\":[[\"a\",1795305600000000000,1],[\"b\",1795305600000000000,2]]}\n"
	            "{\"ok\":true,\"count\":2,\"more\":false}\n");
}

/* Timestamps: decimal seconds to the ns, -1 or none for now; tags of
 * tagged Graphite become key columns (sorted with p1...). */
static void test_time_and_tags(void **state)
{
	struct fixture *f = *state;
	int fd = graphite_connect(f);
	int64_t before = (int64_t)time(NULL) * 1000000000;
	send_all(fd, "f.x 1 1795305600.25\nf.x 2 1795305600.000000001\nf.x 3 1795305601.\n"
	             "now.x 4 -1\nnow.y 5\n"
	             "t.cpu;host=h1;dc=east 6 " T0 "\n");
	wait_settled(f, 6);
	close(fd);
	int64_t after = ((int64_t)time(NULL) + 1) * 1000000000;
	expect_call(f, "{\"op\":\"query\",\"table\":\"f\"}",
	            "{\"rows\":[[\"x\",1795305600000000001,2],"
	            "[\"x\",1795305600250000000,1],"
	            "[\"x\",1795305601000000000,3]]}\n"
	            "{\"ok\":true,\"count\":3,\"more\":false}\n");
	char *text = call(f, "{\"op\":\"query\",\"table\":\"now\"}");
	json_t *o = json_loads(text, JSON_DISABLE_EOF_CHECK, NULL), *rows = json_object_get(o, "rows");
	assert_int_equal(json_array_size(rows), 2);
	for (size_t i = 0; i < 2; i++) {
		json_int_t ts = json_integer_value(json_array_get(json_array_get(rows, i), 1));
		assert_true(ts >= before && ts <= after);
	}
	json_decref(o);
	free(text);
	expect_call(f, "{\"op\":\"query\",\"table\":\"t\"}",
	            "{\"rows\":[[\"east\",\"h1\",\"cpu\",1795305600000000000,6]]}\n"
	            "{\"ok\":true,\"count\":1,\"more\":false}\n");
}

/* Paths mapped by templates (setup_templates): exact tables and rows. */
static void test_templates(void **state)
{
	struct fixture *f = *state;
	int fd = graphite_connect(f);
	send_all(fd, "servers.web1.cpu.idle 97.5 " T0 "\n"
	             "servers.web2.cpu.idle 3 " T0 "\n"
	             "servers.web1.load;region=eu 0.5 " T0 "\n"
	             "cpu.h1.user 12 " T0 "\n"
	             "cpu.h1.system 2 1795305610\n"
	             "disk.sda.used 5 " T0 "\n"
	             "servers.web1 1 " T0 "\n");
	wait_settled(f, 7);
	close(fd);
	assert_int_equal(gstat(f, "rows_stored"), 6);
	assert_int_equal(gstat(f, "rejected.components"), 1);
	/* servers.*: component 1 skipped, 2 the host, the rest the table;
	 * region from the template unless the path's tag says otherwise */
	/* servers.*: component 1 skipped, 2 the host, the rest the table;
	 * region from the template unless the path's tag says otherwise */
	expect_call(f, "{\"op\":\"schema\",\"table\":\"cpu_idle\"}",
	            "{\"ok\":true,\"columns\":[{\"name\":\"host\",\"type\":\"string\","
	            "\"default\":\"\"},{\"name\":\"region\",\"type\":\"string\",\"default\":\"\"},"
	            "{\"name\":\"ts\",\"type\":\"timestamp\"},"
	            "{\"name\":\"value\",\"type\":\"double\",\"default\":\"NaN\"}],"
	            "\"key\":[\"host\",\"region\",\"ts\"],\"ttl\":\"0s\",\"version\":1,"
	            "\"on_duplicate\":\"ignore\"}\n");
	expect_call(f, "{\"op\":\"query\",\"table\":\"cpu_idle\"}",
	            "{\"rows\":[[\"web1\",\"us\",1795305600000000000,97.5],"
	            "[\"web2\",\"us\",1795305600000000000,3]]}\n"
	            "{\"ok\":true,\"count\":2,\"more\":false}\n");
	expect_call(f, "{\"op\":\"query\",\"table\":\"load\"}",
	            "{\"rows\":[[\"web1\",\"eu\",1795305600000000000,0.5]]}\n"
	            "{\"ok\":true,\"count\":1,\"more\":false}\n");
	/* cpu.*.*: the third component names the value column */
	expect_call(f, "{\"op\":\"schema\",\"table\":\"cpu\"}",
	            "{\"ok\":true,\"columns\":[{\"name\":\"host\",\"type\":\"string\","
	            "\"default\":\"\"},{\"name\":\"ts\",\"type\":\"timestamp\"},"
	            "{\"name\":\"user\",\"type\":\"double\",\"default\":\"NaN\"},"
	            "{\"name\":\"system\",\"type\":\"double\",\"default\":\"NaN\"}],"
	            "\"key\":[\"host\",\"ts\"],\"ttl\":\"0s\",\"version\":1,"
	            "\"on_duplicate\":\"ignore\"}\n");
	expect_call(f, "{\"op\":\"query\",\"table\":\"cpu\"}",
	            "{\"rows\":[[\"h1\",1795305600000000000,12,\"NaN\"],"
	            "[\"h1\",1795305610000000000,\"NaN\",2]]}\n"
	            "{\"ok\":true,\"count\":2,\"more\":false}\n");
	/* no filter matches disk.sda.used: the template without one; its
	 * third component is past the template's parts, dropped */
	expect_call(f, "{\"op\":\"query\",\"table\":\"disk\"}",
	            "{\"rows\":[[\"sda\",1795305600000000000,5]]}\n"
	            "{\"ok\":true,\"count\":1,\"more\":false}\n");
	/* servers.web1 is too short for servers.*'s table name: refused */
	expect_call(f, "{\"op\":\"tables\"}",
	            "{\"ok\":true,\"tables\":[\"cpu\",\"cpu_idle\",\"disk\",\"load\"]}\n");
}

/* SIGTERM with a graphite connection open (a partial line held): the
 * daemon stops at once and cleanly; the complete lines are stored. */
static void test_shutdown(void **state)
{
	struct fixture *f = *state;
	int fd = graphite_connect(f);
	send_all(fd, "s.a 1 " T0 "\n");
	wait_settled(f, 1);
	send_all(fd, "s.b 2 " T0 "\ns.c 3");
	tsd_test_close(f->json);
	f->json = NULL;
	assert_int_equal(tsd_test_daemon_stop(f->d, WAIT), 0);
	close(fd);
	assert_int_equal(tsd_test_daemon_start(f->d, (const char *const *)f->args), 0);
	assert_non_null(f->json = tsd_test_connect(f->d, TSD_TEST_TCP));
	expect_call(f, "{\"op\":\"query\",\"table\":\"s\"}",
	            "{\"rows\":[[\"a\",1795305600000000000,1],[\"b\",1795305600000000000,2]]}\n"
	            "{\"ok\":true,\"count\":2,\"more\":false}\n");
}

/* A line longer than line-max is refused (syntax) and skipped up to its
 * '\n', in one read or many; the connection goes on. */
static void test_long_line(void **state)
{
	struct fixture *f = *state;
	char *big = malloc(3000);
	int fd = graphite_connect(f);
	assert_non_null(big);
	memset(big, 'x', 2999);
	big[2999] = '\0';
	send_all(fd, "ll.a 1 " T0 "\nll.");
	send_all(fd, big); /* more than 1k: cut when it passes line-max */
	tsd_test_sleep_ms(100);
	send_all(fd, big);
	send_all(fd, " 1 " T0 "\nll.b 2 " T0 "\n");
	wait_settled(f, 3);
	assert_int_equal(gstat(f, "rejected.syntax"), 1);
	send_all(fd, "ll.c 3 " T0 "\n");
	wait_settled(f, 4);
	close(fd);
	free(big);
	expect_call(f, "{\"op\":\"query\",\"table\":\"ll\"}",
	            "{\"rows\":[[\"a\",1795305600000000000,1],[\"b\",1795305600000000000,2],"
	            "[\"c\",1795305600000000000,3]]}\n"
	            "{\"ok\":true,\"count\":3,\"more\":false}\n");
}

/* idle-timeout: a line left unfinished is dropped and the connection
 * closed; the lines before it are stored. */
static void test_idle_timeout(void **state)
{
	struct fixture *f = *state;
	int fd = graphite_connect(f);
	char byte;
	struct timeval tv = {.tv_sec = WAIT / 1000};
	send_all(fd, "it.a 1 " T0 "\nit.b 2");
	assert_int_equal(setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv), 0);
	assert_int_equal(recv(fd, &byte, 1, 0), 0); /* closed by the daemon, nothing said */
	close(fd);
	tsd_test_close(f->json); /* idle meanwhile: closed as well */
	assert_non_null(f->json = tsd_test_connect(f->d, TSD_TEST_TCP));
	wait_settled(f, 1);
	expect_call(f, "{\"op\":\"query\",\"table\":\"it\"}",
	            "{\"rows\":[[\"a\",1795305600000000000,1]]}\n"
	            "{\"ok\":true,\"count\":1,\"more\":false}\n");
}

/* GET /metrics has the tsstore_graphite_* families. */
static void test_metrics(void **state)
{
	struct fixture *f = *state;
	int fd = graphite_connect(f);
	send_all(fd, "mm.a 1 " T0 "\nbad\nmm.b nan " T0 "\n");
	wait_settled(f, 3);
	close(fd);
	struct tsd_test_conn *h = tsd_test_connect(f->d, TSD_TEST_HTTP);
	assert_non_null(h);
	static const char get[] = "GET /metrics HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n";
	assert_int_equal(tsd_test_send(h, get, sizeof get - 1), 0);
	char *line;
	int seen = 0;
	while (tsd_test_read_line(h, WAIT, &line, NULL) == TSD_TEST_LINE) {
		seen += strcmp(line, "tsstore_graphite_lines_total 3") == 0;
		seen += strcmp(line, "tsstore_graphite_lines_nan_total 1") == 0;
		seen += strcmp(line, "tsstore_graphite_rows_stored_total 1") == 0;
		seen += strcmp(line, "tsstore_graphite_lines_rejected_total{reason=\"syntax\"} 1") == 0;
		seen += strcmp(line, "tsstore_graphite_lines_rejected_total{reason=\"components\"} 0") == 0;
		free(line);
	}
	tsd_test_close(h);
	assert_int_equal(seen, 5);
}

#define T(name, fn) {"graphite_" name, fn, setup, teardown, NULL}
#define TS(name, fn, setup) {"graphite_" name, fn, setup, teardown, NULL}

int main(void)
{
	const struct CMUnitTest tests[] = {
		T("tcp_lines", test_tcp_lines),
		T("udp", test_udp),
		T("bad_lines", test_bad_lines),
		T("resent", test_resent),
		T("time_and_tags", test_time_and_tags),
		T("shutdown", test_shutdown),
		T("metrics", test_metrics),
		TS("idle_timeout", test_idle_timeout, setup_idle),
		TS("long_line", test_long_line, setup_line_max),
		TS("templates", test_templates, setup_templates),
	};
	const char *filter = getenv("TSD_TEST_FILTER");
	if (filter)
		cmocka_set_test_filter(filter);
	return cmocka_run_group_tests_name("graphite", tests, NULL, NULL);
}
