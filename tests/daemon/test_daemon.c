/*
 * test_daemon.c -- tsstored end to end: a real daemon on a temporary
 * directory, spoken to over its unix socket and over TCP, checked against
 * the protocol of DESIGN.md section 5.
 *
 * Every test starts its own daemon (support_client.c), so counters,
 * tables and failures never leak from one test to the next; the teardown
 * kills whatever still runs and removes the directory.  The op, framing
 * and bad-input tests run twice, once per transport (the list in main()
 * names them ..._unix and ..._tcp; over TCP the daemon then has
 * --loopback-access admin, so that drop and alter run there too); the
 * load tests (many connections, a client that stops reading, SIGTERM
 * under load), the token tests and the access-level tests
 * (daemon_access_*: what each loopback-access, the token and a listener
 * outside the loopback allow, with the exact EAUTH messages) run once.
 *
 * Responses are compared as golden text, byte for byte.  To keep the
 * JSON in C strings readable, requests and expected responses given to
 * expect() are written with single quotes, which it turns into double
 * quotes ({'op':'ping'}); none of the data used has a quote of its own.
 * Errors are checked by expect_error(), which takes the code and message
 * as plain strings and then checks that a ping on the same connection
 * still succeeds.
 *
 * The data: table "q" (host string, ts timestamp, n int32, v double; key
 * host, ts) holds twelve rows named a0..c3: host h in a, b, c (index
 * 0..2), i in 0..3, ts = T0 + i hours + h seconds, n = i,
 * v = 10 h + i + 0.5.  expect_rows() renders such names as rows.
 *
 * Timestamps are fixed in 2025 for tables without TTL; the TTL and
 * max_future tests use times relative to the wall clock.
 *
 * TSD_TEST_FILTER=PATTERN runs only the tests whose names match (cmocka
 * wildcards, e.g. "daemon_auth_*"); TSD_TEST_VERBOSE=1 sends the
 * daemons' logs to stderr instead of their directories.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include <jansson.h>
#include <tsstore.h>

#include "support_client.h"

#define SEC INT64_C(1000000000)
#define HOUR (3600 * SEC)
#define T0 INT64_C(1735689600000000000) /* 2025-01-01T00:00:00Z */

/* Read timeout for one response, ms. */
#define WAIT TSD_TEST_TIMEOUT_MS

struct fixture {
	struct tsd_test_daemon *d;
	struct tsd_test_conn *c;          /* over the test's transport */
	enum tsd_test_transport transport;
	char token[TSD_TEST_PATH_MAX];    /* the --token file, when used */
};

/* ---- Small helpers ---- */

/* s with every ' turned into " (malloc'ed). */
static char *dq(const char *s)
{
	char *p = strdup(s);
	assert_non_null(p);
	for (char *q = p; *q; q++)
		if (*q == '\'')
			*q = '"';
	return p;
}

static int64_t wall_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * SEC + ts.tv_nsec;
}

/* RFC 3339 text of whole second s since the epoch, UTC. */
static void rfc3339(int64_t s, char *buf, size_t size)
{
	time_t t = (time_t)s;
	struct tm tm;
	gmtime_r(&t, &tm);
	strftime(buf, size, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* Send request (exact text) and return the response text, failing the
 * test when there is none. */
static char *call_raw(struct tsd_test_conn *c, const char *request)
{
	char *got = tsd_test_call(c, request);
	if (!got)
		fail_msg("no complete response to %s", request);
	return got;
}

/* Send request and assert the whole response is want (both in the
 * single-quote form), insert answers without their "version" (an LSN:
 * insert_answers_version checks it). */
static void expect(struct tsd_test_conn *c, const char *request, const char *want)
{
	char *req = dq(request), *w = dq(want), *got = tsd_test_drop_version(call_raw(c, req));
	assert_string_equal(got, w);
	free(got);
	free(w);
	free(req);
}

/* The same, with want already in its exact form. */
static void expect_exact(struct tsd_test_conn *c, const char *request, const char *want)
{
	char *req = dq(request), *got = tsd_test_drop_version(call_raw(c, req));
	assert_string_equal(got, want);
	free(got);
	free(req);
}

/* A ping on c is answered with ok. */
static void ping_ok(struct tsd_test_conn *c)
{
	expect(c, "{'op':'ping','id':'after'}",
	       "{'id':'after','ok':true,'version':'" TS_VERSION_STRING "'}\n");
}

/* The error line a request with id (compact JSON, or NULL) gets. */
static char *error_line(const char *id, const char *code, const char *message)
{
	json_t *m = json_string(message);
	char *msg = json_dumps(m, JSON_ENCODE_ANY), *line;
	assert_non_null(msg);
	line = tsd_test_fmt("{%s%s%s\"ok\":false,\"error\":{\"code\":\"%s\",\"message\":%s}}\n",
	           id ? "\"id\":" : "", id ? id : "", id ? "," : "", code, msg);
	free(msg);
	json_decref(m);
	return line;
}

/* The request's "id" as compact JSON, or NULL (also when unparsable). */
static char *request_id(const char *request)
{
	json_t *r = json_loads(request, 0, NULL), *id = json_object_get(r, "id");
	char *s = id ? json_dumps(id, JSON_ENCODE_ANY | JSON_COMPACT) : NULL;
	json_decref(r);
	return s;
}

/* Send the exact bytes of request and a '\n'; assert the response is
 * one error line with code and message (the id echoed when the request
 * has one); then a ping on the same connection must succeed. */
static void expect_error_raw(struct tsd_test_conn *c, const char *request, const char *code,
                             const char *message)
{
	char *id = request_id(request), *want = error_line(id, code, message);
	char *got = call_raw(c, request);
	assert_string_equal(got, want);
	free(got);
	free(want);
	free(id);
	ping_ok(c);
}

/* expect_error_raw for a request in the single-quote form. */
static void expect_error(struct tsd_test_conn *c, const char *request, const char *code,
                         const char *message)
{
	char *req = dq(request);
	expect_error_raw(c, req, code, message);
	free(req);
}

/* ---- The twelve rows of "q" ---- */

static int64_t q_ts(int h, int i) { return T0 + i * HOUR + h * SEC; }

/* Row "b2" as JSON text. */
static char *q_row(const char *name)
{
	int h = name[0] - 'a', i = name[1] - '0';
	assert_true(h >= 0 && h < 3 && i >= 0 && i < 4);
	return tsd_test_fmt("[\"%c\",%" PRId64 ",%d,%d.5]", name[0], q_ts(h, i), i, 10 * h + i);
}

/* "a0 b2" as "[...],[...]". */
static char *q_rows(const char *spec)
{
	char *out = strdup(""), name[3] = {0};
	assert_non_null(out);
	for (const char *p = spec; *p; p += p[2] ? 3 : 2) {
		char *row, *joined;
		name[0] = p[0];
		name[1] = p[1];
		row = q_row(name);
		joined = tsd_test_fmt("%s%s%s", out, *out ? "," : "", row);
		free(row);
		free(out);
		out = joined;
	}
	return out;
}

/* The response to a query on "q": a rows line with the rows of spec
 * (none when empty), then {"ok":true,tail} (tail single-quoted). */
static void expect_rows(struct tsd_test_conn *c, const char *request, const char *spec,
                        const char *tail)
{
	char *rows = q_rows(spec), *t = dq(tail), *want;
	want = *spec ? tsd_test_fmt("{\"rows\":[%s]}\n{\"ok\":true,%s}\n", rows, t)
	             : tsd_test_fmt("{\"ok\":true,%s}\n", t);
	expect_exact(c, request, want);
	free(want);
	free(t);
	free(rows);
}

static void create_q(struct tsd_test_conn *c)
{
	expect(c, "{'op':'create','table':'q','columns':[{'name':'host','type':'string'},"
	          "{'name':'ts','type':'timestamp'},{'name':'n','type':'int32'},"
	          "{'name':'v','type':'double'}],'key':['host','ts']}",
	       "{'ok':true}\n");
}

/* Create "q" and insert its twelve rows in one batch. */
static void fill_q(struct tsd_test_conn *c)
{
	char *rows = q_rows("a0 a1 a2 a3 b0 b1 b2 b3 c0 c1 c2 c3");
	char *req = tsd_test_fmt("{\"op\":\"insert\",\"table\":\"q\",\"rows\":[%s]}", rows);
	create_q(c);
	expect(c, req, "{'ok':true,'inserted':12}\n");
	free(req);
	free(rows);
}

/* Table "r": one column of every type, with defaults. */
static void create_r(struct tsd_test_conn *c)
{
	expect(c, "{'op':'create','table':'r','columns':[{'name':'host','type':'string'},"
	          "{'name':'ts','type':'timestamp'},{'name':'n','type':'int32','default':7},"
	          "{'name':'v','type':'double'},{'name':'b','type':'blob','default':'AAE='},"
	          "{'name':'l','type':'int64','default':-1}],'key':['host','ts']}",
	       "{'ok':true}\n");
}

/* ---- Fixtures ---- */

/* Write "s3cret\n" to f->token (DIR/token).  Returns 0 or -1. */
static int write_token(struct fixture *f)
{
	FILE *fp;
	snprintf(f->token, sizeof f->token, "%s/token", f->d->dir);
	if (!(fp = fopen(f->token, "w")))
		return -1;
	if (fputs("s3cret\n", fp) < 0) {
		fclose(fp);
		return -1;
	}
	return fclose(fp) == 0 ? 0 : -1;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	if (!f)
		return 0;
	tsd_test_close(f->c);
	tsd_test_daemon_free(f->d);
	free(f);
	*state = NULL;
	return 0;
}

/* A daemon started with args (and --token DIR/token when token), and a
 * connection over the transport in *state (unix when none).  Over TCP
 * without a token the daemon gets --loopback-access admin: the tests
 * run every op over both transports, drop and alter too (what each
 * level allows is the daemon_access_* tests').  On failure everything
 * is undone here: cmocka runs no teardown after a failed setup. */
static int start_fixture(void **state, const char *const *args, int token)
{
	const char *argv[TSD_TEST_ARGS_MAX + 1] = {NULL};
	struct fixture *f = calloc(1, sizeof *f);
	int n = 0, rc = -1;
	if (!f)
		return -1;
	f->transport = *state ? *(const enum tsd_test_transport *)*state : TSD_TEST_UNIX;
	*state = f;
	if (!(f->d = tsd_test_daemon_new()) || (token && write_token(f) < 0))
		goto out;
	for (; args && args[n] && n < TSD_TEST_ARGS_MAX - 2; n++)
		argv[n] = args[n];
	if (token) {
		argv[n++] = "--token";
		argv[n++] = f->token;
	} else if (f->transport == TSD_TEST_TCP) {
		argv[n++] = "--loopback-access";
		argv[n++] = "admin";
	}
	if (tsd_test_daemon_start(f->d, argv) < 0) {
		tsd_test_daemon_dump_log(f->d);
		goto out;
	}
	if ((f->c = tsd_test_connect(f->d, f->transport)))
		rc = 0;
out:
	if (rc < 0)
		teardown(state);
	return rc;
}

static int setup(void **state) { return start_fixture(state, NULL, 0); }

/* The daemon with --line-max 1024. */
static int setup_line_max(void **state)
{
	static const char *const args[] = {"--line-max", "1024", NULL};
	return start_fixture(state, args, 0);
}

/* The daemon with --token DIR/token holding "s3cret"; the fixture's
 * connection is over the unix socket. */
static int setup_token(void **state) { return start_fixture(state, NULL, 1); }

/* The daemon with --loopback-access LEVEL (and a token for
 * setup_token_write); the fixture's connection over the unix socket. */
static int setup_loopback_admin(void **state)
{
	static const char *const args[] = {"--loopback-access", "admin", NULL};
	return start_fixture(state, args, 0);
}

static int setup_loopback_read(void **state)
{
	static const char *const args[] = {"--loopback-access", "read", NULL};
	return start_fixture(state, args, 0);
}

static int setup_loopback_none(void **state)
{
	static const char *const args[] = {"--loopback-access", "none", NULL};
	return start_fixture(state, args, 0);
}

static int setup_token_write(void **state)
{
	static const char *const args[] = {"--loopback-access", "write", NULL};
	return start_fixture(state, args, 1);
}

/* A token, listeners on 0.0.0.0 too, and loopback-access admin. */
static int setup_remote(void **state)
{
	static const char *const args[] = {"--listen", "tcp:0.0.0.0:0", "--listen", "http:0.0.0.0:0",
	                                   "--loopback-access", "admin", NULL};
	return start_fixture(state, args, 1);
}

/* ---- Ops ---- */

static void test_ping(void **state)
{
	struct fixture *f = *state;
	expect(f->c, "{'op':'ping'}", "{'ok':true,'version':'" TS_VERSION_STRING "'}\n");
	expect(f->c, "{'op':'ping','id':7}",
	       "{'id':7,'ok':true,'version':'" TS_VERSION_STRING "'}\n");
	/* The id is echoed as given, whatever its JSON type. */
	expect(f->c, "{'id':{'a':[1,'x',null]},'op':'ping'}",
	       "{'id':{'a':[1,'x',null]},'ok':true,'version':'" TS_VERSION_STRING "'}\n");
	expect(f->c, "{'op':'ping','id':null}",
	       "{'id':null,'ok':true,'version':'" TS_VERSION_STRING "'}\n");
	expect_exact(f->c, "{'op':'ping','id':'\\u00e9\\u0001'}",
	             "{\"id\":\"\xc3\xa9\\u0001\",\"ok\":true,\"version\":\"" TS_VERSION_STRING "\"}\n");
}

static void test_tables(void **state)
{
	struct fixture *f = *state;
	expect(f->c, "{'op':'tables','id':1}", "{'id':1,'ok':true,'tables':[]}\n");
	create_r(f->c);
	create_q(f->c);
	expect(f->c, "{'op':'tables','id':2}", "{'id':2,'ok':true,'tables':['q','r']}\n");
}

static void test_create_schema(void **state)
{
	struct fixture *f = *state;
	expect(f->c, "{'op':'create','id':1,'table':'m','columns':[{'name':'host','type':'string',"
	             "'default':'none'},{'name':'ts','type':'timestamp'},{'name':'n','type':'int32',"
	             "'default':7},{'name':'v','type':'double','default':0.25},{'name':'b',"
	             "'type':'blob','default':'AAE='},{'name':'l','type':'int64'},{'name':'t',"
	             "'type':'timestamp','default':'2025-01-01T00:00:01Z'}],'key':['host','ts'],"
	             "'ttl':'30d'}",
	       "{'id':1,'ok':true}\n");
	expect(f->c, "{'op':'schema','id':2,'table':'m'}",
	       "{'id':2,'ok':true,'columns':[{'name':'host','type':'string','default':'none'},"
	       "{'name':'ts','type':'timestamp'},{'name':'n','type':'int32','default':7},"
	       "{'name':'v','type':'double','default':0.25},{'name':'b','type':'blob',"
	       "'default':'AAE='},{'name':'l','type':'int64','default':0},{'name':'t',"
	       "'type':'timestamp','default':1735689601000000000}],'key':['host','ts'],"
	       "'ttl':'30d','version':1,'on_duplicate':'reject'}\n");
	/* Three key columns, the TTL given in ns, no defaults. */
	expect(f->c, "{'op':'create','table':'k','columns':[{'name':'region','type':'string'},"
	             "{'name':'host','type':'int64'},{'name':'ts','type':'timestamp'}],"
	             "'key':['region','host','ts'],'ttl':5400000000000}",
	       "{'ok':true}\n");
	expect(f->c, "{'op':'schema','table':'k'}",
	       "{'ok':true,'columns':[{'name':'region','type':'string','default':''},"
	       "{'name':'host','type':'int64','default':0},{'name':'ts','type':'timestamp'}],"
	       "'key':['region','host','ts'],'ttl':'90m','version':1,'on_duplicate':'reject'}\n");
	expect(f->c, "{'op':'tables'}", "{'ok':true,'tables':['k','m']}\n");
}

static void test_alter(void **state)
{
	struct fixture *f = *state;
	expect(f->c, "{'op':'create','table':'a','columns':[{'name':'host','type':'string'},"
	             "{'name':'ts','type':'timestamp'},{'name':'n','type':'int32'}],"
	             "'key':['host','ts']}", "{'ok':true}\n");
	expect(f->c, "{'op':'insert','table':'a','rows':[['x',1735689600000000000,5]]}",
	       "{'ok':true,'inserted':1}\n");
	/* add: old rows read with the new column's default. */
	expect(f->c, "{'op':'alter','id':1,'table':'a','add':[{'name':'z','type':'string',"
	             "'default':'none'},{'name':'d','type':'double'}]}", "{'id':1,'ok':true}\n");
	expect(f->c, "{'op':'insert','table':'a','rows':[['x',1735689601000000000,6,'zz',0.5]]}",
	       "{'ok':true,'inserted':1}\n");
	expect(f->c, "{'op':'query','table':'a'}",
	       "{'rows':[['x',1735689600000000000,5,'none',0],"
	       "['x',1735689601000000000,6,'zz',0.5]]}\n{'ok':true,'count':2,'more':false}\n");
	/* widen: int32 becomes int64, and takes values beyond int32. */
	expect(f->c, "{'op':'alter','table':'a','widen':['n']}", "{'ok':true}\n");
	expect(f->c, "{'op':'insert','table':'a','rows':[['x',1735689602000000000,5000000000,'',1]]}",
	       "{'ok':true,'inserted':1}\n");
	expect(f->c, "{'op':'query','table':'a','columns':['n']}",
	       "{'rows':[[5],[6],[5000000000]]}\n{'ok':true,'count':3,'more':false}\n");
	expect(f->c, "{'op':'schema','table':'a'}",
	       "{'ok':true,'columns':[{'name':'host','type':'string','default':''},"
	       "{'name':'ts','type':'timestamp'},{'name':'n','type':'int64','default':0},"
	       "{'name':'z','type':'string','default':'none'},{'name':'d','type':'double',"
	       "'default':0}],'key':['host','ts'],'ttl':'0s','version':4,'on_duplicate':'reject'}\n");
	/* ttl: the rows of 2025 are older than now - 1h, so never returned. */
	expect(f->c, "{'op':'alter','table':'a','ttl':'1h'}", "{'ok':true}\n");
	expect(f->c, "{'op':'query','table':'a'}", "{'ok':true,'count':0,'more':false}\n");
	expect(f->c, "{'op':'schema','table':'a'}",
	       "{'ok':true,'columns':[{'name':'host','type':'string','default':''},"
	       "{'name':'ts','type':'timestamp'},{'name':'n','type':'int64','default':0},"
	       "{'name':'z','type':'string','default':'none'},{'name':'d','type':'double',"
	       "'default':0}],'key':['host','ts'],'ttl':'1h','version':4,'on_duplicate':'reject'}\n");
}

static void test_drop(void **state)
{
	struct fixture *f = *state;
	fill_q(f->c);
	expect(f->c, "{'op':'drop','id':'d','table':'q'}", "{'id':'d','ok':true}\n");
	expect(f->c, "{'op':'tables'}", "{'ok':true,'tables':[]}\n");
	expect_error(f->c, "{'op':'query','table':'q'}", "ENOENT", "no such table \"q\"");
	expect_error(f->c, "{'op':'drop','table':'q'}", "ENOENT", "no such table \"q\"");
	/* A table created again under the name starts empty. */
	create_q(f->c);
	expect(f->c, "{'op':'query','table':'q'}", "{'ok':true,'count':0,'more':false}\n");
}

/* ts as ns, as RFC 3339 with a fraction and an offset, as an integer
 * string; the limits of each integer type; null takes the default. */
static const char *const array_rows[] = {
	"['a','2025-01-01T00:00:00Z',1,0.25,'AAE=',5000000000]",
	"['a','2025-01-01T01:00:00.5+01:00',2,-1.5,'',-5]",
	"['b',1735689600000000001,-2147483648,1e300,'/w==',9223372036854775807]",
	"['b','1735689600000000002',2147483647,3,'AAECAwQF',-9223372036854775808]",
	"['c',1735689600000000000,null,null,null,null]",
};

static void expect_array_rows(struct tsd_test_conn *c)
{
	expect(c, "{'op':'query','id':2,'table':'r'}",
	       "{'id':2,'rows':[['a',1735689600000000000,1,0.25,'AAE=',5000000000],"
	       "['a',1735689600500000000,2,-1.5,'',-5],"
	       "['b',1735689600000000001,-2147483648,1e+300,'/w==',9223372036854775807],"
	       "['b',1735689600000000002,2147483647,3,'AAECAwQF',-9223372036854775808],"
	       "['c',1735689600000000000,7,0,'AAE=',-1]]}\n"
	       "{'id':2,'ok':true,'count':5,'more':false}\n");
}

/* Rows as arrays: in one batch (a request long enough for the daemon's
 * fast rows parser), then again one row a request (short: jansson). */
static void test_insert_arrays(void **state)
{
	struct fixture *f = *state;
	char *req;
	create_r(f->c);
	req = tsd_test_fmt("{'op':'insert','id':1,'table':'r','rows':[%s,%s,%s,%s,%s]}", array_rows[0],
	          array_rows[1], array_rows[2], array_rows[3], array_rows[4]);
	assert_true(strlen(req) >= 256);
	expect(f->c, req, "{'id':1,'ok':true,'inserted':5}\n");
	free(req);
	expect_array_rows(f->c);
	expect(f->c, "{'op':'drop','table':'r'}", "{'ok':true}\n");
	create_r(f->c);
	for (int i = 0; i < 5; i++) {
		req = tsd_test_fmt("{'op':'insert','table':'r','rows':[%s]}", array_rows[i]);
		assert_true(strlen(req) < 256);
		expect(f->c, req, "{'ok':true,'inserted':1}\n");
		free(req);
	}
	expect_array_rows(f->c);
}

/* The ts of the one row with host "now", in ns. */
static int64_t ts_of_now_row(struct tsd_test_conn *c)
{
	json_t *lines = NULL;
	int64_t ts;
	assert_int_equal(tsd_test_send_line(c, "{\"op\":\"query\",\"table\":\"r\",\"prefix\":[\"now\"]}"), 0);
	assert_int_equal(tsd_test_read_response(c, WAIT, &lines, NULL), 0);
	assert_int_equal(json_array_size(lines), 2);
	json_t *row = json_array_get(json_object_get(json_array_get(lines, 0), "rows"), 0);
	assert_int_equal(json_array_size(row), 6);
	ts = json_integer_value(json_array_get(row, 1));
	json_decref(lines);
	return ts;
}

static void test_insert_objects(void **state)
{
	struct fixture *f = *state;
	int64_t before, after, ts;
	create_r(f->c);
	/* Columns by name in any order; the missing ones take their
	 * defaults; arrays and objects mix in one batch. */
	expect(f->c, "{'op':'insert','table':'r','rows':["
	             "{'v':1.5,'ts':'2025-01-01T00:00:00Z','host':'a'},"
	             "['a',1735689601000000000,1,2,'',3],"
	             "{'host':'b','ts':1735689600000000000,'n':-1,'b':'','l':9}]}",
	       "{'ok':true,'inserted':3}\n");
	expect(f->c, "{'op':'query','table':'r'}",
	       "{'rows':[['a',1735689600000000000,7,1.5,'AAE=',-1],"
	       "['a',1735689601000000000,1,2,'',3],"
	       "['b',1735689600000000000,-1,0,'',9]]}\n{'ok':true,'count':3,'more':false}\n");
	/* A row without ts gets the current time. */
	before = wall_ns();
	expect(f->c, "{'op':'insert','table':'r','rows':[{'host':'now'}]}",
	       "{'ok':true,'inserted':1}\n");
	after = wall_ns();
	ts = ts_of_now_row(f->c);
	assert_in_range(ts, before, after);
}

static void test_query_prefix(void **state)
{
	struct fixture *f = *state;
	fill_q(f->c);
	expect_rows(f->c, "{'op':'query','table':'q'}", "a0 a1 a2 a3 b0 b1 b2 b3 c0 c1 c2 c3",
	            "'count':12,'more':false");
	expect_rows(f->c, "{'op':'query','table':'q','prefix':[]}",
	            "a0 a1 a2 a3 b0 b1 b2 b3 c0 c1 c2 c3", "'count':12,'more':false");
	expect_rows(f->c, "{'op':'query','table':'q','prefix':['b']}", "b0 b1 b2 b3",
	            "'count':4,'more':false");
	expect_rows(f->c, "{'op':'query','table':'q','prefix':['b','2025-01-01T01:00:01Z']}", "b1",
	            "'count':1,'more':false");
	expect_rows(f->c, "{'op':'query','table':'q','prefix':['b',1735693200000000000]}", "",
	            "'count':0,'more':false");
	expect_rows(f->c, "{'op':'query','table':'q','prefix':['x']}", "", "'count':0,'more':false");
}

static void test_query_bounds(void **state)
{
	struct fixture *f = *state;
	fill_q(f->c);
	/* A bound shorter than the key compares on its leading columns. */
	expect_rows(f->c, "{'op':'query','table':'q','ge':['b']}", "b0 b1 b2 b3 c0 c1 c2 c3",
	            "'count':8,'more':false");
	expect_rows(f->c, "{'op':'query','table':'q','gt':['b']}", "c0 c1 c2 c3",
	            "'count':4,'more':false");
	expect_rows(f->c, "{'op':'query','table':'q','le':['b']}", "a0 a1 a2 a3 b0 b1 b2 b3",
	            "'count':8,'more':false");
	expect_rows(f->c, "{'op':'query','table':'q','lt':['b']}", "a0 a1 a2 a3",
	            "'count':4,'more':false");
	expect_rows(f->c, "{'op':'query','table':'q','ge':['b'],'le':['b']}", "b0 b1 b2 b3",
	            "'count':4,'more':false");
	/* Full keys: each end inclusive or exclusive. */
	expect_rows(f->c, "{'op':'query','table':'q','gt':['a','2025-01-01T02:00:00Z'],"
	                  "'le':['b','2025-01-01T01:00:01Z']}", "a3 b0 b1", "'count':3,'more':false");
	expect_rows(f->c, "{'op':'query','table':'q','ge':['a','2025-01-01T02:00:00Z'],"
	                  "'lt':['b','2025-01-01T01:00:01Z']}", "a2 a3 b0", "'count':3,'more':false");
	expect_rows(f->c, "{'op':'query','table':'q','gt':['c'],'lt':['a']}", "",
	            "'count':0,'more':false");
}

static void test_query_time(void **state)
{
	struct fixture *f = *state;
	fill_q(f->c);
	/* from inclusive, to exclusive. */
	expect_rows(f->c, "{'op':'query','table':'q','from':'2025-01-01T01:00:00Z',"
	                  "'to':'2025-01-01T03:00:00Z'}", "a1 a2 b1 b2 c1 c2",
	            "'count':6,'more':false");
	expect_rows(f->c, "{'op':'query','table':'q','from':1735693201000000000,"
	                  "'to':'2025-01-01T03:00:00Z'}", "a2 b1 b2 c1 c2", "'count':5,'more':false");
	expect_rows(f->c, "{'op':'query','table':'q','from':'2025-01-01T03:00:00Z'}", "a3 b3 c3",
	            "'count':3,'more':false");
	expect_rows(f->c, "{'op':'query','table':'q','to':'2025-01-01T01:00:01+01:00'}", "a0",
	            "'count':1,'more':false");
	expect_rows(f->c, "{'op':'query','table':'q','prefix':['c'],'from':'2025-01-01T01:00:02Z',"
	                  "'to':'2025-01-01T03:00:02.000000001Z'}", "c1 c2 c3",
	            "'count':3,'more':false");
}

static void test_query_desc(void **state)
{
	struct fixture *f = *state;
	fill_q(f->c);
	expect_rows(f->c, "{'op':'query','table':'q','desc':true}",
	            "c3 c2 c1 c0 b3 b2 b1 b0 a3 a2 a1 a0", "'count':12,'more':false");
	expect_rows(f->c, "{'op':'query','table':'q','desc':true,'prefix':['a']}", "a3 a2 a1 a0",
	            "'count':4,'more':false");
	expect_rows(f->c, "{'op':'query','table':'q','desc':true,'ge':['b']}",
	            "c3 c2 c1 c0 b3 b2 b1 b0", "'count':8,'more':false");
	expect_rows(f->c, "{'op':'query','table':'q','desc':false,'prefix':['a']}", "a0 a1 a2 a3",
	            "'count':4,'more':false");
}

static void test_query_limit(void **state)
{
	struct fixture *f = *state;
	fill_q(f->c);
	expect_rows(f->c, "{'op':'query','table':'q','limit':5}", "a0 a1 a2 a3 b0",
	            "'count':5,'more':true,'next':['b',1735689601000000000]");
	expect_rows(f->c, "{'op':'query','table':'q','limit':5,'after':['b',1735689601000000000]}",
	            "b1 b2 b3 c0 c1", "'count':5,'more':true,'next':['c',1735693202000000000]");
	expect_rows(f->c, "{'op':'query','table':'q','limit':5,'after':['c',1735693202000000000]}",
	            "c2 c3", "'count':2,'more':false");
	/* A limit that ends exactly at the last row: no more. */
	expect_rows(f->c, "{'op':'query','table':'q','limit':4,'after':['b',1735700401000000000]}",
	            "c0 c1 c2 c3", "'count':4,'more':false");
	expect_rows(f->c, "{'op':'query','table':'q','prefix':['b'],'limit':2}", "b0 b1",
	            "'count':2,'more':true,'next':['b',1735693201000000000]");
	expect_rows(f->c, "{'op':'query','table':'q','prefix':['b'],'limit':2,"
	                  "'after':['b',1735693201000000000]}", "b2 b3", "'count':2,'more':false");
	/* Descending pages. */
	expect_rows(f->c, "{'op':'query','table':'q','desc':true,'limit':5}", "c3 c2 c1 c0 b3",
	            "'count':5,'more':true,'next':['b',1735700401000000000]");
	expect_rows(f->c, "{'op':'query','table':'q','desc':true,'limit':5,"
	                  "'after':['b',1735700401000000000]}", "b2 b1 b0 a3 a2",
	            "'count':5,'more':true,'next':['a',1735696800000000000]");
	expect_rows(f->c, "{'op':'query','table':'q','desc':true,'limit':5,"
	                  "'after':['a',1735696800000000000]}", "a1 a0", "'count':2,'more':false");
}

static void test_query_columns(void **state)
{
	struct fixture *f = *state;
	fill_q(f->c);
	expect(f->c, "{'op':'query','table':'q','prefix':['a'],'columns':['v','host']}",
	       "{'rows':[[0.5,'a'],[1.5,'a'],[2.5,'a'],[3.5,'a']]}\n"
	       "{'ok':true,'count':4,'more':false}\n");
	/* next is still the key, whatever the projection. */
	expect(f->c, "{'op':'query','table':'q','desc':true,'limit':2,'columns':['ts']}",
	       "{'rows':[[1735700402000000000],[1735696802000000000]]}\n"
	       "{'ok':true,'count':2,'more':true,'next':['c',1735696802000000000]}\n");
	expect(f->c, "{'op':'query','table':'q','prefix':['b'],'from':'2025-01-01T03:00:00Z',"
	             "'columns':['n','n']}",
	       "{'rows':[[3,3]]}\n{'ok':true,'count':1,'more':false}\n");
}

static void test_latest(void **state)
{
	struct fixture *f = *state;
	char *b3 = q_row("b3"), *b0 = q_row("b0"), *c3 = q_row("c3"), *want;
	fill_q(f->c);
	want = tsd_test_fmt("{\"id\":4,\"ok\":true,\"row\":%s}\n", b3);
	expect_exact(f->c, "{'op':'latest','id':4,'table':'q','prefix':['b']}", want);
	free(want);
	want = tsd_test_fmt("{\"ok\":true,\"row\":%s}\n", b0);
	expect_exact(f->c, "{'op':'latest','table':'q','prefix':['b','2025-01-01T00:00:01Z']}", want);
	free(want);
	want = tsd_test_fmt("{\"ok\":true,\"row\":%s}\n", c3);
	expect_exact(f->c, "{'op':'latest','table':'q'}", want);
	free(want);
	expect(f->c, "{'op':'latest','table':'q','prefix':['x']}", "{'ok':true,'row':null}\n");
	free(c3);
	free(b0);
	free(b3);
}

static void test_aggregate(void **state)
{
	struct fixture *f = *state;
	fill_q(f->c);
	expect(f->c, "{'op':'aggregate','id':3,'table':'q','from':'2025-01-01T00:00:00Z',"
	             "'to':'2025-01-01T04:00:00Z','every':'2h','group':1,"
	             "'columns':{'v':['count','sum','min','max','mean','first','last']}}",
	       "{'id':3,'rows':[['a',1735689600000000000,2,2,0.5,1.5,1,0.5,1.5],"
	       "['a',1735696800000000000,2,6,2.5,3.5,3,2.5,3.5],"
	       "['b',1735689600000000000,2,22,10.5,11.5,11,10.5,11.5],"
	       "['b',1735696800000000000,2,26,12.5,13.5,13,12.5,13.5],"
	       "['c',1735689600000000000,2,42,20.5,21.5,21,20.5,21.5],"
	       "['c',1735696800000000000,2,46,22.5,23.5,23,22.5,23.5]]}\n"
	       "{'id':3,'ok':true,'count':6}\n");
	/* group 0: across hosts; first and last by ts. */
	expect(f->c, "{'op':'aggregate','table':'q','from':1735689600000000000,"
	             "'to':1735704000000000000,'every':'2h','group':0,"
	             "'columns':{'v':['count','sum','min','max','mean','first','last']}}",
	       "{'rows':[[1735689600000000000,6,66,0.5,21.5,11,0.5,21.5],"
	       "[1735696800000000000,6,78,2.5,23.5,13,2.5,23.5]]}\n{'ok':true,'count':2}\n");
	expect(f->c, "{'op':'aggregate','table':'q','prefix':['b'],'from':'2025-01-01T01:00:00Z',"
	             "'to':'2025-01-01T03:00:00Z','every':'1h','group':1,"
	             "'columns':{'v':['count','max']}}",
	       "{'rows':[['b',1735693200000000000,1,11.5],['b',1735696800000000000,1,12.5]]}\n"
	       "{'ok':true,'count':2}\n");
	/* Windows start at multiples of every, not at from. */
	expect(f->c, "{'op':'aggregate','table':'q','from':'2025-01-01T00:00:01Z',"
	             "'to':'2025-01-01T01:00:02Z','every':'1h','group':0,'columns':{'n':['count']}}",
	       "{'rows':[[1735689600000000000,2],[1735693200000000000,2]]}\n{'ok':true,'count':2}\n");
	expect(f->c, "{'op':'aggregate','table':'q','prefix':['x'],'from':0,"
	             "'to':'2025-01-02T00:00:00Z','every':'1d','group':1,'columns':{'v':['sum']}}",
	       "{'ok':true,'count':0}\n");
}

/* The stats of one table, parsed (the whole ok line). */
static json_t *table_stats(struct tsd_test_conn *c, const char *table)
{
	char *req = tsd_test_fmt("{\"op\":\"stats\",\"table\":\"%s\"}", table);
	json_t *lines = NULL, *st;
	assert_int_equal(tsd_test_send_line(c, req), 0);
	assert_int_equal(tsd_test_read_response(c, WAIT, &lines, NULL), 0);
	assert_int_equal(json_array_size(lines), 1);
	st = json_incref(json_array_get(lines, 0));
	assert_true(json_is_true(json_object_get(st, "ok")));
	json_decref(lines);
	free(req);
	return st;
}

static json_int_t stat_int(json_t *st, const char *name)
{
	json_t *v = json_object_get(st, name);
	if (!json_is_integer(v))
		fail_msg("no integer counter \"%s\"", name);
	return json_integer_value(v);
}

static void test_flush(void **state)
{
	struct fixture *f = *state;
	json_t *st;
	fill_q(f->c);
	st = table_stats(f->c, "q");
	assert_int_equal(stat_int(st, "filling_rows"), 12);
	assert_int_equal(stat_int(st, "tablet_rows"), 0);
	json_decref(st);
	/* Everything older than before is in on-disk tablets. */
	expect(f->c, "{'op':'flush','id':1,'table':'q','before':'2025-01-01T02:00:00Z'}",
	       "{'id':1,'ok':true}\n");
	st = table_stats(f->c, "q");
	assert_in_range(stat_int(st, "tablet_rows"), 6, 12);
	assert_int_equal(stat_int(st, "tablet_rows") + stat_int(st, "filling_rows"), 12);
	json_decref(st);
	/* Every table, everything. */
	expect(f->c, "{'op':'flush'}", "{'ok':true}\n");
	st = table_stats(f->c, "q");
	assert_int_equal(stat_int(st, "filling_rows"), 0);
	assert_int_equal(stat_int(st, "tablet_rows"), 12);
	json_decref(st);
	expect_rows(f->c, "{'op':'query','table':'q'}", "a0 a1 a2 a3 b0 b1 b2 b3 c0 c1 c2 c3",
	            "'count':12,'more':false");
}

/* Assert that member name of obj is the JSON text want (compact). */
static void assert_member(json_t *obj, const char *name, const char *want)
{
	char *got = json_dumps(json_object_get(obj, name), JSON_ENCODE_ANY | JSON_COMPACT);
	char *w = dq(want);
	if (!got)
		fail_msg("no member \"%s\"", name);
	assert_string_equal(got, w);
	free(w);
	free(got);
}

static void test_stats(void **state)
{
	struct fixture *f = *state;
	json_t *lines = NULL, *st, *t;
	fill_q(f->c);
	expect_rows(f->c, "{'op':'query','table':'q','prefix':['a']}", "a0 a1 a2 a3",
	            "'count':4,'more':false");
	expect_error(f->c, "{'op':'schema','table':'nope'}", "ENOENT", "no such table \"nope\"");
	assert_int_equal(tsd_test_send_line(f->c, "{\"op\":\"stats\",\"id\":9}"), 0);
	assert_int_equal(tsd_test_read_response(f->c, WAIT, &lines, NULL), 0);
	assert_int_equal(json_array_size(lines), 1);
	st = json_array_get(lines, 0);
	assert_member(st, "id", "9");
	assert_member(st, "ok", "true");
	assert_member(st, "connections", "1");
	assert_member(st, "rows_in", "12");
	assert_member(st, "rows_out", "4");
	assert_member(st, "requests", "{'ping':1,'create':1,'schema':1,'insert':1,'query':1}");
	assert_member(st, "errors", "{'ENOENT':1}");
	/* The line protocol mapping's counters (daemon/ingest.c): none yet. */
	assert_member(st, "ingest", "{'requests':0,'rows_stored':0,'duplicates_ignored':0,'rejected':{'syntax':0,'type':0,"
	              "'range':0,'tag':0,'duplicate':0,'time':0,'schema':0,'store':0},"
	              "'rows_missing_tags':0,'tables_created':0,'columns_added':0}");
	t = json_object_get(json_object_get(st, "tables"), "q");
	assert_int_equal(json_object_size(json_object_get(st, "tables")), 1);
	assert_int_equal(stat_int(t, "rows_inserted"), 12);
	assert_int_equal(stat_int(t, "columns"), 4);
	assert_member(t, "ttl", "'0s'");
	json_decref(lines);
	/* With a table: its own counters only. */
	st = table_stats(f->c, "q");
	assert_null(json_object_get(st, "requests"));
	assert_int_equal(stat_int(st, "rows_inserted"), 12);
	assert_int_equal(stat_int(st, "schema_version"), 1);
	assert_int_equal(stat_int(st, "columns"), 4);
	assert_int_equal(stat_int(st, "ttl_ns"), 0);
	assert_int_equal(stat_int(st, "rows_returned"), 4);
	assert_member(st, "ttl", "'0s'");
	/* the scheduler's settings: the defaults, no option being given */
	assert_int_equal(stat_int(st, "setting_merge_slice_rows"), 4096);
	assert_int_equal(stat_int(st, "setting_maint_busy_share_percent"), 50);
	long cpus = sysconf(_SC_NPROCESSORS_ONLN); /* the default flush_threads */
	assert_int_equal(stat_int(st, "setting_flush_threads"), cpus < 1 ? 1 : cpus > 8 ? 8 : cpus);
	json_decref(st);
}

/* The daemon with two of the scheduler's settings given. */
static int setup_scheduler(void **state)
{
	static const char *const args[] = {"--maint-busy-share", "20", "--merge-slice-rows", "128",
	                                   "--flush-threads", "3", NULL};
	return start_fixture(state, args, 0);
}

/* --maint-busy-share and --merge-slice-rows reach the engine: a table's
 * stats show them, and the defaults of the settings not given (the stats
 * show what the database runs under, never 0).  No tablet was flushed,
 * so the scheduler has made no merge and slept for none. */
static void test_scheduler_settings(void **state)
{
	struct fixture *f = *state;
	json_t *lines = NULL, *st;
	fill_q(f->c);
	st = table_stats(f->c, "q");
	assert_int_equal(stat_int(st, "setting_maint_busy_share_percent"), 20);
	assert_int_equal(stat_int(st, "setting_merge_slice_rows"), 128);
	assert_int_equal(stat_int(st, "setting_flush_threads"), 3);
	assert_int_equal(stat_int(st, "setting_maint_busy_window_ns"), 100000000);
	assert_int_equal(stat_int(st, "setting_merge_rollover_spread_ns"), INT64_C(1800000000000));
	assert_int_equal(stat_int(st, "setting_flush_size"), 16 << 20);
	assert_int_equal(stat_int(st, "setting_flush_age_ns"), 600 * SEC);
	assert_int_equal(stat_int(st, "setting_merge_max_size"), 128 << 20);
	assert_int_equal(stat_int(st, "setting_merge_delay_ns"), 90 * SEC);
	assert_int_equal(stat_int(st, "setting_merges_enabled"), 1);
	assert_in_range(stat_int(st, "maint_passes"), 0, INT32_MAX);
	assert_int_equal(stat_int(st, "maint_merges"), 0);
	assert_int_equal(stat_int(st, "maint_throttled_ns"), 0);
	json_decref(st);
	/* the same in the daemon's stats, under "tables" */
	assert_int_equal(tsd_test_send_line(f->c, "{\"op\":\"stats\"}"), 0);
	assert_int_equal(tsd_test_read_response(f->c, WAIT, &lines, NULL), 0);
	assert_int_equal(json_array_size(lines), 1);
	st = json_object_get(json_object_get(json_array_get(lines, 0), "tables"), "q");
	assert_int_equal(stat_int(st, "setting_maint_busy_share_percent"), 20);
	assert_int_equal(stat_int(st, "setting_merge_slice_rows"), 128);
	json_decref(lines);
}

/* Insert rows [k, T0] for k in [from, to) into table "p" (k int64, ts). */
static void insert_p(struct tsd_test_conn *c, int from, int to)
{
	size_t cap = (size_t)(to - from) * 32 + 64, n;
	char *req = malloc(cap), *want;
	assert_non_null(req);
	n = (size_t)snprintf(req, cap, "{\"op\":\"insert\",\"table\":\"p\",\"rows\":[");
	for (int k = from; k < to; k++)
		n += (size_t)snprintf(req + n, cap - n, "%s[%d,%" PRId64 "]", k > from ? "," : "", k, T0);
	snprintf(req + n, cap - n, "]}");
	want = tsd_test_fmt("{\"ok\":true,\"inserted\":%d}\n", to - from);
	expect_exact(c, req, want);
	free(want);
	free(req);
}

static void create_p(struct tsd_test_conn *c)
{
	expect(c, "{'op':'create','table':'p','columns':[{'name':'k','type':'int64'},"
	          "{'name':'ts','type':'timestamp'}],'key':['k','ts']}", "{'ok':true}\n");
}

/* The rows of every "rows" line in lines must be [k, T0] for k = *next,
 * *next + 1, ...; advances *next.  Returns the rows counted. */
static size_t check_p_rows(json_t *line, int *next)
{
	json_t *rows = json_object_get(line, "rows"), *row;
	size_t i;
	json_array_foreach(rows, i, row) {
		assert_int_equal(json_integer_value(json_array_get(row, 0)), *next);
		assert_int_equal(json_integer_value(json_array_get(row, 1)), T0);
		(*next)++;
	}
	return json_array_size(rows);
}

static void test_ids_every_line(void **state)
{
	struct fixture *f = *state;
	json_t *lines = NULL, *line;
	size_t i;
	int next = 0;
	static const size_t chunk[] = {1000, 1000, 500};
	create_p(f->c);
	insert_p(f->c, 0, 2500);
	assert_int_equal(tsd_test_send_line(f->c, "{\"op\":\"query\",\"table\":\"p\",\"id\":\"page\"}"), 0);
	assert_int_equal(tsd_test_read_response(f->c, WAIT, &lines, NULL), 0);
	assert_int_equal(json_array_size(lines), 4);
	json_array_foreach(lines, i, line) {
		assert_member(line, "id", "'page'");
		if (i < 3)
			assert_int_equal(check_p_rows(line, &next), chunk[i]);
	}
	assert_int_equal(next, 2500);
	assert_member(json_array_get(lines, 3), "count", "2500");
	json_decref(lines);
}

/* The four rows of the strings test: NUL, escapes, UTF-8 from \u escapes
 * (a surrogate pair too), blobs of every kind of base64 digit. */
#define STRING_ROWS "['a\\u0000b\\t\\n\\u0022\\\\\\u00e9\\ud83d\\ude00\\u001f',1,'AP8A/w=='],"  \
                    "['a',1,'AAE='],['a\\u0000a',1,''],['\xc3\xa9',1,'+/+/']"

/* Create table (s string, ts, b blob; key s, ts) and insert STRING_ROWS,
 * and, when pad, a fifth row "---…" (sorting first) long enough to make the request take
 * the daemon's fast rows parser rather than jansson. */
static void insert_strings(struct tsd_test_conn *c, const char *table, int pad)
{
	char *create = tsd_test_fmt("{'op':'create','table':'%s','columns':[{'name':'s','type':'string'},"
	                   "{'name':'ts','type':'timestamp'},{'name':'b','type':'blob'}],"
	                   "'key':['s','ts']}", table);
	char *insert = tsd_test_fmt("{'op':'insert','table':'%s','rows':[" STRING_ROWS "%s]}", table,
	                   pad ? ",['------------------------------------------------------------------"
	                         "----------------------------------------------------------',1,'']" : "");
	assert_true(pad ? strlen(insert) >= 256 : strlen(insert) < 256);
	expect(c, create, "{'ok':true}\n");
	expect(c, insert, pad ? "{'ok':true,'inserted':5}\n" : "{'ok':true,'inserted':4}\n");
	free(insert);
	free(create);
}

/* Strings and blobs go through byte for byte, whichever parser reads
 * the insert; string keys sort by bytes. */
static void test_insert_strings(void **state)
{
	struct fixture *f = *state;
	static const char rows[] =
		"{\"rows\":[[\"a\",1,\"AAE=\"],[\"a\\u0000a\",1,\"\"],"
		"[\"a\\u0000b\\t\\n\\\"\\\\\xc3\xa9\xf0\x9f\x98\x80\\u001f\",1,\"AP8A/w==\"],"
		"[\"\xc3\xa9\",1,\"+/+/\"]]}\n{\"ok\":true,\"count\":4,\"more\":false}\n";
	insert_strings(f->c, "u", 0);
	insert_strings(f->c, "w", 1);
	expect_exact(f->c, "{'op':'query','table':'u'}", rows);
	expect_exact(f->c, "{'op':'query','table':'w','ge':['a']}", rows);
	expect_exact(f->c, "{'op':'latest','table':'w','prefix':['a\\u0000b\\t\\n\\u0022\\\\\\u00e9"
	                   "\\ud83d\\ude00\\u001f']}",
	             "{\"ok\":true,\"row\":[\"a\\u0000b\\t\\n\\\"\\\\\xc3\xa9\xf0\x9f\x98\x80\\u001f\","
	             "1,\"AP8A/w==\"]}\n");
	expect(f->c, "{'op':'query','table':'u','prefix':['a']}",
	       "{'rows':[['a',1,'AAE=']]}\n{'ok':true,'count':1,'more':false}\n");
}

/* NaN, the infinities and -0.0 go through exactly, whichever parser
 * reads the insert (the padded request takes the fast one), as the
 * strings "NaN", "Infinity", "-Infinity" and the number -0.0; also as
 * defaults.  A string that names no double is an error, not the
 * default. */
static void test_insert_special_doubles(void **state)
{
	struct fixture *f = *state;
	static const char pad[] = ",['~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~"
	                          "~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~',1,2.5]";
	for (int fast = 0; fast < 2; fast++) {
		const char *table = fast ? "dw" : "dn";
		char *create = tsd_test_fmt("{'op':'create','table':'%s','columns':[{'name':'k','type':'string'},"
		                   "{'name':'ts','type':'timestamp'},{'name':'d','type':'double',"
		                   "'default':'-Infinity'}],'key':['k','ts']}", table);
		char *insert = tsd_test_fmt("{'op':'insert','table':'%s','rows':[['a',1,'NaN'],['b',1,'Infinity'],"
		                   "['c',1,'-Infinity'],['d',1,-0.0],['e',1,0],['f',1,'nan'],"
		                   "{'k':'g','ts':1}%s]}", table, fast ? pad : "");
		char *query = tsd_test_fmt("{'op':'query','table':'%s','lt':['~']}", table);
		char *bad = tsd_test_fmt("{'op':'insert','table':'%s','rows':[['h',1,'1.5']%s]}", table,
		                fast ? pad : "");
		assert_true(fast ? strlen(insert) >= 256 : strlen(insert) < 256);
		expect(f->c, create, "{'ok':true}\n");
		expect(f->c, insert, fast ? "{'ok':true,'inserted':8}\n" : "{'ok':true,'inserted':7}\n");
		expect(f->c, query, "{'rows':[['a',1,'NaN'],['b',1,'Infinity'],['c',1,'-Infinity'],"
		                    "['d',1,-0.0],['e',1,0],['f',1,'NaN'],['g',1,'-Infinity']]}\n"
		                    "{'ok':true,'count':7,'more':false}\n");
		expect_error(f->c, bad, "ETYPE", "row 0, column \"d\": expected double, got a JSON "
		                                 "string other than \"NaN\", \"Infinity\" or \"-Infinity\"");
		free(bad);
		free(query);
		free(insert);
		free(create);
	}
	expect(f->c, "{'op':'schema','table':'dn'}",
	       "{'ok':true,'columns':[{'name':'k','type':'string','default':''},"
	       "{'name':'ts','type':'timestamp'},{'name':'d','type':'double','default':'-Infinity'}],"
	       "'key':['k','ts'],'ttl':'0s','version':1,'on_duplicate':'reject'}\n");
}

/* A request answered with an error has changed nothing: an alter whose
 * second change fails must not have made its first. */
static void test_alter_failed_changes_nothing(void **state)
{
	struct fixture *f = *state;
	static const char schema[] =
		"{'ok':true,'columns':[{'name':'host','type':'string','default':''},"
		"{'name':'ts','type':'timestamp'},{'name':'n','type':'int32','default':0},"
		"{'name':'v','type':'double','default':0}],'key':['host','ts'],'ttl':'0s','version':1,"
		"'on_duplicate':'reject'}\n";
	fill_q(f->c);
	expect_error(f->c, "{'op':'alter','table':'q','add':[{'name':'z','type':'int32'}],"
	                   "'widen':['host']}", "ESCHEMA",
	             "table \"q\": column \"host\": only int32 can be widened, it is string");
	expect(f->c, "{'op':'schema','table':'q'}", schema);
	expect_error(f->c, "{'op':'alter','table':'q','add':[{'name':'y','type':'int32'},"
	                   "{'name':'y','type':'int32'}]}", "EEXIST",
	             "table \"q\": column \"y\": already exists");
	expect(f->c, "{'op':'schema','table':'q'}", schema);
	expect_error(f->c, "{'op':'alter','table':'q','widen':['n'],'ttl':'forever'}", "EINVAL",
	             "field \"ttl\": expected a duration such as \"1h\" (<n><unit>, unit ns us ms s "
	             "m h d w) or integer ns");
	expect(f->c, "{'op':'schema','table':'q'}", schema);
}

/* ---- Bad input: each error, then the connection still serves ---- */

/* Assert that s starts with prefix. */
static void assert_prefix(const char *s, const char *prefix)
{
	char *head;
	assert_non_null(s);
	head = strndup(s, strlen(prefix));
	assert_non_null(head);
	assert_string_equal(head, prefix);
	free(head);
}

/* The number of rows a query on table returns (the rows lines must
 * agree with the final count). */
static json_int_t count_rows(struct tsd_test_conn *c, const char *table)
{
	char *req = tsd_test_fmt("{\"op\":\"query\",\"table\":\"%s\"}", table);
	json_t *lines = NULL, *line;
	json_int_t rows = 0, count;
	size_t i;
	assert_int_equal(tsd_test_send_line(c, req), 0);
	assert_int_equal(tsd_test_read_response(c, WAIT, &lines, NULL), 0);
	json_array_foreach(lines, i, line)
		rows += (json_int_t)json_array_size(json_object_get(line, "rows"));
	line = json_array_get(lines, json_array_size(lines) - 1);
	assert_true(json_is_true(json_object_get(line, "ok")));
	count = stat_int(line, "count");
	assert_int_equal(count, rows);
	json_decref(lines);
	free(req);
	return count;
}

static void test_bad_malformed_json(void **state)
{
	struct fixture *f = *state;
	static const char nul[] = "{\"op\":\"ping\"}\0\n";
	char *got;
	expect_error_raw(f->c, "{\"op\":\"ping\"", "EPROTO",
	                 "malformed JSON at column 12: '}' expected near end of file");
	expect_error_raw(f->c, "{\"op\":\"ping\",}", "EPROTO",
	                 "malformed JSON at column 14: string or '}' expected near '}'");
	expect_error_raw(f->c, "{\"op\":\"ping\"} x", "EPROTO",
	                 "malformed JSON at column 15: end of file expected near 'x'");
	expect_error_raw(f->c, "nope", "EPROTO",
	                 "malformed JSON at column 4: '[' or '{' expected near 'nope'");
	expect_error_raw(f->c, "{\"op\":\"ping\",\"op\":\"tables\"}", "EPROTO",
	                 "malformed JSON at column 17: duplicate object key near '\"op\"'");
	expect_error_raw(f->c, "{\"op\":\"ping\",\"id\":\"\xff\"}", "EPROTO",
	                 "malformed JSON at column 19: unable to decode byte 0xff near '\"'");
	/* A NUL byte after the object. */
	assert_int_equal(tsd_test_send(f->c, nul, sizeof nul - 1), 0);
	assert_int_equal(tsd_test_read_response(f->c, WAIT, NULL, &got), 0);
	assert_string_equal(got, "{\"ok\":false,\"error\":{\"code\":\"EPROTO\",\"message\":"
	                         "\"malformed JSON: a NUL byte at column 14\"}}\n");
	free(got);
	ping_ok(f->c);
}

static void test_bad_not_object(void **state)
{
	struct fixture *f = *state;
	expect_error(f->c, "[1,2]", "EPROTO", "a request is a JSON object, got a JSON array");
	expect_error(f->c, "[{'op':'ping'}]", "EPROTO",
	             "a request is a JSON object, got a JSON array");
	expect_error(f->c, "42", "EPROTO",
	             "malformed JSON at column 2: '[' or '{' expected near '42'");
	expect_error(f->c, "'ping'", "EPROTO",
	             "malformed JSON at column 6: '[' or '{' expected near '\"ping\"'");
	expect_error(f->c, "null", "EPROTO",
	             "malformed JSON at column 4: '[' or '{' expected near 'null'");
}

static void test_bad_missing_op(void **state)
{
	struct fixture *f = *state;
	expect_error(f->c, "{}", "EPROTO", "missing field \"op\"");
	expect_error(f->c, "{'id':3}", "EPROTO", "missing field \"op\"");
	expect_error(f->c, "{'id':4,'table':'q','rows':[]}", "EPROTO", "missing field \"op\"");
}

static void test_bad_unknown_op(void **state)
{
	struct fixture *f = *state;
	expect_error(f->c, "{'op':'pong','id':1}", "EPROTO", "unknown op \"pong\"");
	expect_error(f->c, "{'op':''}", "EPROTO", "unknown op \"\"");
	expect_error(f->c, "{'op':'PING'}", "EPROTO", "unknown op \"PING\"");
	expect_error(f->c, "{'op':5}", "EPROTO", "field \"op\": expected a string, got a JSON integer");
	expect_error(f->c, "{'op':['ping']}", "EPROTO",
	             "field \"op\": expected a string, got a JSON array");
}

static void test_bad_unknown_table(void **state)
{
	struct fixture *f = *state;
	static const char *const requests[] = {
		"{'op':'schema','id':1,'table':'nope'}",
		"{'op':'alter','id':2,'table':'nope','ttl':'1h'}",
		"{'op':'drop','id':3,'table':'nope'}",
		"{'op':'insert','id':4,'table':'nope','rows':[]}",
		"{'op':'query','id':5,'table':'nope'}",
		"{'op':'latest','id':6,'table':'nope','prefix':['a']}",
		"{'op':'aggregate','id':7,'table':'nope','from':0,'to':1,'every':'1h','group':0}",
		"{'op':'flush','id':8,'table':'nope'}",
		"{'op':'stats','id':9,'table':'nope'}",
	};
	for (size_t i = 0; i < sizeof requests / sizeof requests[0]; i++)
		expect_error(f->c, requests[i], "ENOENT", "no such table \"nope\"");
	expect_error(f->c, "{'op':'query','table':'bad-name'}", "EINVAL",
	             "invalid table name \"bad-name\" (want [A-Za-z_][A-Za-z0-9_]{0,63})");
	expect_error(f->c, "{'op':'create','table':'9x','columns':[{'name':'ts','type':'timestamp'}],"
	                   "'key':['ts']}", "EINVAL",
	             "invalid table name \"9x\" (want [A-Za-z_][A-Za-z0-9_]{0,63})");
	expect(f->c, "{'op':'tables'}", "{'ok':true,'tables':[]}\n");
}

static void test_bad_missing_field(void **state)
{
	struct fixture *f = *state;
	fill_q(f->c);
	expect_error(f->c, "{'op':'create','table':'m','key':['ts']}", "EPROTO",
	             "missing field \"columns\"");
	expect_error(f->c, "{'op':'create','table':'m','columns':[]}", "EPROTO",
	             "missing field \"key\"");
	expect_error(f->c, "{'op':'create','columns':[],'key':[]}", "EPROTO",
	             "missing field \"table\"");
	expect_error(f->c, "{'op':'schema'}", "EPROTO", "missing field \"table\"");
	expect_error(f->c, "{'op':'alter','ttl':'1h'}", "EPROTO", "missing field \"table\"");
	expect_error(f->c, "{'op':'drop'}", "EPROTO", "missing field \"table\"");
	expect_error(f->c, "{'op':'insert','table':'q'}", "EPROTO", "missing field \"rows\"");
	expect_error(f->c, "{'op':'insert','rows':[]}", "EPROTO", "missing field \"table\"");
	expect_error(f->c, "{'op':'query'}", "EPROTO", "missing field \"table\"");
	expect_error(f->c, "{'op':'latest','prefix':['a']}", "EPROTO", "missing field \"table\"");
	expect_error(f->c, "{'op':'aggregate','table':'q','to':1,'every':'1h','group':0}", "EPROTO",
	             "missing field \"from\"");
	expect_error(f->c, "{'op':'aggregate','table':'q','from':0,'every':'1h','group':0}",
	             "EPROTO", "missing field \"to\"");
	expect_error(f->c, "{'op':'aggregate','table':'q','from':0,'to':1,'group':0}", "EPROTO",
	             "missing field \"every\"");
	expect_error(f->c, "{'op':'auth'}", "EPROTO", "missing field \"token\"");
	expect(f->c, "{'op':'tables'}", "{'ok':true,'tables':['q']}\n");
	assert_int_equal(count_rows(f->c, "q"), 12);
}

static void test_bad_field_type(void **state)
{
	struct fixture *f = *state;
	fill_q(f->c);
	expect_error(f->c, "{'op':'query','table':5}", "EPROTO",
	             "field \"table\": expected a string, got a JSON integer");
	expect_error(f->c, "{'op':'insert','table':'q','rows':{}}", "EPROTO",
	             "field \"rows\": expected an array, got a JSON object");
	expect_error(f->c, "{'op':'query','table':'q','limit':'10'}", "EPROTO",
	             "field \"limit\": expected a non-negative integer, got a JSON string");
	expect_error(f->c, "{'op':'query','table':'q','limit':-1}", "EPROTO",
	             "field \"limit\": expected a non-negative integer, got a JSON integer");
	expect_error(f->c, "{'op':'query','table':'q','desc':1}", "EPROTO",
	             "field \"desc\": expected true or false, got a JSON integer");
	expect_error(f->c, "{'op':'query','table':'q','prefix':'a'}", "EPROTO",
	             "field \"prefix\": expected an array, got a JSON string");
	expect_error(f->c, "{'op':'query','table':'q','prefix':['a',1,2]}", "EINVAL",
	             "field \"prefix\": 3 values, the key has 2 columns");
	expect_error(f->c, "{'op':'query','table':'q','ge':[5]}", "ETYPE",
	             "field \"ge\"[0] (column \"host\"): expected string, got a JSON integer");
	expect_error(f->c, "{'op':'query','table':'q','after':['a',null]}", "EINVAL",
	             "field \"after\"[1] (column \"ts\"): null is not a key value");
	expect_error(f->c, "{'op':'query','table':'q','ge':['a'],'gt':['b']}", "EPROTO",
	             "fields \"ge\" and \"gt\" exclude each other");
	expect_error(f->c, "{'op':'query','table':'q','columns':'v'}", "EPROTO",
	             "field \"columns\": expected an array, got a JSON string");
	expect_error(f->c, "{'op':'query','table':'q','columns':[1]}", "EPROTO",
	             "columns[0]: expected a column name, got a JSON integer");
	expect_error(f->c, "{'op':'query','table':'q','columns':['v','nope']}", "ENOENT",
	             "columns[1]: no column \"nope\" in table \"q\"");
	expect_error(f->c, "{'op':'query','table':'q','from':null}", "EINVAL",
	             "field \"from\": expected a timestamp, got null");
	expect_error(f->c, "{'op':'query','table':'q','to':'2025-13-01T00:00:00Z'}", "EINVAL",
	             "field \"to\": timestamp \"2025-13-01T00:00:00Z\": month 13 is out of range 01-12");
	expect_error(f->c, "{'op':'flush','table':'q','before':'2300-01-01T00:00:00Z'}", "ERANGE",
	             "field \"before\": timestamp \"2300-01-01T00:00:00Z\" is outside the range of "
	             "int64 nanoseconds (1677-09-21T00:12:43.145224192Z to "
	             "2262-04-11T23:47:16.854775807Z)");
	expect_error(f->c, "{'op':'aggregate','table':'q','from':0,'to':1,'every':'1x','group':0}",
	             "EINVAL", "field \"every\": expected a duration such as \"1h\" (<n><unit>, "
	             "unit ns us ms s m h d w) or integer ns");
	expect_error(f->c, "{'op':'aggregate','table':'q','from':0,'to':1,'every':'1h','group':2}",
	             "EINVAL", "field \"group\": 2 key columns, the key has 2 and the last (ts) "
	             "cannot be a group");
	expect_error(f->c, "{'op':'aggregate','table':'q','from':0,'to':1,'every':'1h','group':0,"
	                   "'columns':['v']}", "EPROTO",
	             "field \"columns\": expected an object such as {\"bytes\":[\"min\",\"max\"]}, "
	             "got a JSON array");
	expect_error(f->c, "{'op':'aggregate','table':'q','from':0,'to':1,'every':'1h','group':0,"
	                   "'columns':{'v':['median']}}", "EINVAL",
	             "columns.v[0]: want one of count, sum, min, max, mean, first, last");
	expect_error(f->c, "{'op':'create','table':'m','columns':[{'name':'ts','type':'str'}],"
	                   "'key':['ts']}", "ESCHEMA",
	             "columns[0] (column \"ts\"): unknown type \"str\" (want int32, int64, double, "
	             "timestamp, string or blob)");
	expect_error(f->c, "{'op':'create','table':'m','columns':[5],'key':['ts']}", "EPROTO",
	             "columns[0]: expected a column object, got a JSON integer");
	expect_error(f->c, "{'op':'create','table':'m','columns':[{'name':'ts','type':'timestamp',"
	                   "'size':8}],'key':['ts']}", "EPROTO",
	             "columns[0]: a column is {\"name\":…,\"type\":…,\"default\":…} with "
	             "\"default\" optional");
	expect_error(f->c, "{'op':'create','table':'m','columns':[{'name':'ts','type':'timestamp'}],"
	                   "'key':['ts'],'ttl':'forever'}", "EINVAL",
	             "field \"ttl\": expected a duration such as \"1h\" (<n><unit>, unit ns us ms s "
	             "m h d w) or integer ns");
	expect_error(f->c, "{'op':'alter','table':'q','widen':[1]}", "EPROTO",
	             "widen[0]: expected a column name, got a JSON integer");
	expect(f->c, "{'op':'tables'}", "{'ok':true,'tables':['q']}\n");
	expect(f->c, "{'op':'schema','table':'q'}",
	       "{'ok':true,'columns':[{'name':'host','type':'string','default':''},"
	       "{'name':'ts','type':'timestamp'},{'name':'n','type':'int32','default':0},"
	       "{'name':'v','type':'double','default':0}],'key':['host','ts'],'ttl':'0s',"
	       "'version':1,'on_duplicate':'reject'}\n");
}

static void test_bad_schema(void **state)
{
	struct fixture *f = *state;
	static const char cols[] = "'columns':[{'name':'s','type':'string'},"
	                           "{'name':'ts','type':'timestamp'}]";
	char *req;
	fill_q(f->c);
	expect_error(f->c, "{'op':'create','table':'q','columns':[{'name':'ts','type':'timestamp'}],"
	                   "'key':['ts']}", "EEXIST", "table \"q\" already exists");
	expect_error(f->c, "{'op':'create','table':'v','columns':[{'name':'s','type':'string'},"
	                   "{'name':'ts','type':'timestamp'},{'name':'s','type':'int32'}],"
	                   "'key':['s','ts']}", "ESCHEMA",
	             "table \"v\": column \"s\": duplicate column name");
	expect_error(f->c, "{'op':'create','table':'v','columns':[{'name':'s','type':'string'},"
	                   "{'name':'ts','type':'int64'}],'key':['s','ts']}", "ESCHEMA",
	             "table \"v\": column \"ts\": must have type timestamp, not int64");
	req = tsd_test_fmt("{'op':'create','table':'v',%s,'key':['s','ts','s']}", cols);
	expect_error(f->c, req, "ESCHEMA", "table \"v\": key column \"s\": listed twice");
	free(req);
	req = tsd_test_fmt("{'op':'create','table':'v',%s,'key':['x','ts']}", cols);
	expect_error(f->c, req, "ESCHEMA", "table \"v\": key column \"x\": no such column");
	free(req);
	req = tsd_test_fmt("{'op':'create','table':'v',%s,'key':[]}", cols);
	expect_error(f->c, req, "ESCHEMA", "table \"v\": key: 0 columns; want 1 to 16, ending with ts");
	free(req);
	req = tsd_test_fmt("{'op':'create','table':'v',%s,'key':['ts','s']}", cols);
	expect_error(f->c, req, "ESCHEMA", "table \"v\": key: the last key column must be ts, not \"s\"");
	free(req);
	expect_error(f->c, "{'op':'alter','table':'q','add':[{'name':'n','type':'int64'}]}", "EEXIST",
	             "table \"q\": column \"n\": already exists");
	expect_error(f->c, "{'op':'alter','table':'q','widen':['v']}", "ESCHEMA",
	             "table \"q\": column \"v\": only int32 can be widened, it is double");
	expect_error(f->c, "{'op':'alter','table':'q','widen':['nope']}", "ENOENT",
	             "table \"q\": column \"nope\": no such column");
	expect(f->c, "{'op':'tables'}", "{'ok':true,'tables':['q']}\n");
	assert_int_equal(count_rows(f->c, "q"), 12);
}

static void test_bad_unknown_field(void **state)
{
	struct fixture *f = *state;
	fill_q(f->c);
	/* A misspelt "from" must not turn into a scan of everything. */
	expect_error(f->c, "{'op':'query','id':1,'table':'q','form':'2025-01-01T03:00:00Z'}",
	             "EPROTO", "unknown field \"form\" for op \"query\"");
	expect_error(f->c, "{'op':'ping','table':'q'}", "EPROTO",
	             "unknown field \"table\" for op \"ping\"");
	expect_error(f->c, "{'op':'insert','table':'q','row':[]}", "EPROTO",
	             "unknown field \"row\" for op \"insert\"");
	expect_error(f->c, "{'op':'latest','table':'q','prefix':['a'],'limit':1}", "EPROTO",
	             "unknown field \"limit\" for op \"latest\"");
	assert_int_equal(count_rows(f->c, "q"), 12);
}

/* A name (table, column, op, type, function) with a NUL or a control
 * character in it is refused whole.  Before json_text, "x\u0000y"
 * created table x and a drop of "q\u0000junk" dropped q: the C string
 * the library was given ended at the NUL. */
static void test_bad_nul_in_names(void **state)
{
	struct fixture *f = *state;
	fill_q(f->c);
	expect_error(f->c, "{'op':'create','table':'x\\u0000y','columns':[{'name':'ts',"
	                   "'type':'timestamp'}],'key':['ts']}",
	             "EINVAL", "field \"table\": a NUL byte (\\u0000) at offset 1");
	expect_error(f->c, "{'op':'drop','table':'q\\u0000junk'}", "EINVAL",
	             "field \"table\": a NUL byte (\\u0000) at offset 1");
	expect_error(f->c, "{'op':'drop','table':'q\\u0001'}", "EINVAL",
	             "field \"table\": a control character (\\u0001) at offset 1");
	expect(f->c, "{'op':'tables'}", "{'ok':true,'tables':['q']}\n");
	assert_int_equal(count_rows(f->c, "q"), 12);
	expect_error(f->c, "{'op':'ping\\u0000junk'}", "EPROTO",
	             "field \"op\": a NUL byte (\\u0000) at offset 4");
	expect_error(f->c, "{'op':'schema','table':'q\\u0000'}", "EINVAL",
	             "field \"table\": a NUL byte (\\u0000) at offset 1");
	expect_error(f->c, "{'op':'insert','table':'q\\u0000','rows':[['z',1,1,1]]}", "EINVAL",
	             "field \"table\": a NUL byte (\\u0000) at offset 1");
	expect_error(f->c, "{'op':'flush','table':'q\\u0000x'}", "EINVAL",
	             "field \"table\": a NUL byte (\\u0000) at offset 1");
	/* Column names and types in create and alter. */
	expect_error(f->c, "{'op':'create','table':'y','columns':[{'name':'a\\u0000b','type':'int32'},"
	                   "{'name':'ts','type':'timestamp'}],'key':['ts']}",
	             "EINVAL", "columns[0]: \"name\": a NUL byte (\\u0000) at offset 1");
	expect_error(f->c, "{'op':'create','table':'y','columns':[{'name':'a','type':'int32\\u0000x'},"
	                   "{'name':'ts','type':'timestamp'}],'key':['ts']}",
	             "EINVAL", "columns[0] (column \"a\"): \"type\": a NUL byte (\\u0000) at offset 5");
	expect_error(f->c, "{'op':'create','table':'y','columns':[{'name':'ts','type':'timestamp'}],"
	                   "'key':['ts\\u0000x']}",
	             "EINVAL", "key[0]: a NUL byte (\\u0000) at offset 2");
	expect_error(f->c, "{'op':'alter','table':'q','add':[{'name':'w\\u0000x','type':'int32'}]}",
	             "EINVAL", "add[0]: \"name\": a NUL byte (\\u0000) at offset 1");
	expect_error(f->c, "{'op':'alter','table':'q','add':[{'name':'w\\u001fx','type':'int32'}]}",
	             "EINVAL", "add[0]: \"name\": a control character (\\u001f) at offset 1");
	expect_error(f->c, "{'op':'alter','table':'q','widen':['n\\u0000x']}",
	             "EINVAL", "widen[0]: a NUL byte (\\u0000) at offset 1");
	expect_error(f->c, "{'op':'alter','table':'q','ttl':'1h\\u0000x'}", "EINVAL",
	             "field \"ttl\": expected a duration such as \"1h\" (<n><unit>, unit ns us ms s "
	             "m h d w) or integer ns");
	expect(f->c, "{'op':'tables'}", "{'ok':true,'tables':['q']}\n");
	expect(f->c, "{'op':'schema','table':'q'}",
	       "{'ok':true,'columns':[{'name':'host','type':'string','default':''},"
	       "{'name':'ts','type':'timestamp'},{'name':'n','type':'int32','default':0},"
	       "{'name':'v','type':'double','default':0}],'key':['host','ts'],'ttl':'0s',"
	       "'version':1,'on_duplicate':'reject'}\n");
	/* Column names of a query, functions of an aggregate. */
	expect_error(f->c, "{'op':'query','table':'q','columns':['n\\u0000x']}", "EINVAL",
	             "columns[0]: a NUL byte (\\u0000) at offset 1");
	expect_error(f->c, "{'op':'aggregate','table':'q','from':0,'to':1,'every':'1h',"
	                   "'columns':{'v':['sum\\u0000x']}}",
	             "EINVAL", "columns.v[0]: want one of count, sum, min, max, mean, first, last");
	expect_error(f->c, "{'op':'aggregate','table':'q','from':0,'to':1,'every':'1h\\u0000',"
	                   "'columns':{'v':['sum']}}",
	             "EINVAL", "field \"every\": expected a duration such as \"1h\" (<n><unit>, "
	             "unit ns us ms s m h d w) or integer ns");
}

/* Insert into "r" a batch of a good row 0 and bad_row (single-quoted
 * JSON) as row 1; assert the error; nothing may be stored.  Twice: as a
 * short request, which the daemon parses with jansson, and with a long
 * host in row 0, which makes the request long enough for its fast rows
 * parser (daemon/request.c, FAST_ROWS_MIN): both must answer alike. */
static void bad_row(struct tsd_test_conn *c, const char *row, const char *code,
                    const char *message)
{
	static const char *const hosts[] = {
		"a",
		"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
		"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
		"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
	};
	for (int i = 0; i < 2; i++) {
		char *req = tsd_test_fmt("{'op':'insert','id':'bad','table':'r','rows':["
		                "['%s',1735689600000000000,1,0.5,'',1],%s]}", hosts[i], row);
		if (i == 1)
			assert_true(strlen(req) >= 256);
		expect_error(c, req, code, message);
		assert_int_equal(count_rows(c, "r"), 0);
		free(req);
	}
}

static void test_insert_bad_row_width(void **state)
{
	struct fixture *f = *state;
	create_r(f->c);
	bad_row(f->c, "['b',1735689600000000000,1,0.5,'',1,2]", "EINVAL",
	        "row 1: 7 values, the table has 6 columns");
	bad_row(f->c, "['b',1735689600000000000]", "EINVAL", "row 1: 2 values, the table has 6 columns");
	bad_row(f->c, "[]", "EINVAL", "row 1: 0 values, the table has 6 columns");
	expect(f->c, "{'op':'insert','table':'r','rows':[['a',1735689600000000000,1,0.5,'',1]]}",
	       "{'ok':true,'inserted':1}\n");
	assert_int_equal(count_rows(f->c, "r"), 1);
}

static void test_insert_bad_value_type(void **state)
{
	struct fixture *f = *state;
	create_r(f->c);
	bad_row(f->c, "['b',1735689600000000000,'x',0.5,'',1]", "ETYPE",
	        "row 1, column \"n\": expected int32, got a JSON string");
	bad_row(f->c, "['b',1735689600000000000,3000000000,0.5,'',1]", "ERANGE",
	        "row 1, column \"n\": 3000000000 is out of range for int32");
	bad_row(f->c, "['b',1735689600000000000,1.5,0.5,'',1]", "ETYPE",
	        "row 1, column \"n\": expected int32, got a JSON real");
	bad_row(f->c, "['b',1735689600000000000,1,0.5,'',1.5]", "ETYPE",
	        "row 1, column \"l\": expected int64, got a JSON real");
	bad_row(f->c, "[5,1735689600000000000,1,0.5,'',1]", "ETYPE",
	        "row 1, column \"host\": expected string, got a JSON integer");
	bad_row(f->c, "['b',1735689600000000000,1,'x','',1]", "ETYPE",
	        "row 1, column \"v\": expected double, got a JSON string other than \"NaN\", "
	        "\"Infinity\" or \"-Infinity\"");
	bad_row(f->c, "['b',1735689600000000000,1,0.5,'!!!',1]", "EINVAL",
	        "row 1, column \"b\": \"!!!\" is not base64: 3 characters, not a multiple of 4");
	bad_row(f->c, "['b','yesterday',1,0.5,'',1]", "EINVAL",
	        "row 1, column \"ts\": timestamp \"yesterday\": expected RFC 3339 "
	        "(2026-11-21T10:00:00Z), a date (2026-11-21), integer nanoseconds, an epoch count "
	        "(1732550000s), now or a time relative to it (now-15m, -1h)");
	bad_row(f->c, "['b','2300-01-01T00:00:00Z',1,0.5,'',1]", "ERANGE",
	        "row 1, column \"ts\": timestamp \"2300-01-01T00:00:00Z\" is outside the range of "
	        "int64 nanoseconds (1677-09-21T00:12:43.145224192Z to 2262-04-11T23:47:16.854775807Z)");
	bad_row(f->c, "['b',1.5,1,0.5,'',1]", "ETYPE",
	        "row 1, column \"ts\": expected timestamp, got a JSON real");
	bad_row(f->c, "{'host':'b','zz':1}", "EINVAL", "row 1: unknown column \"zz\"");
	bad_row(f->c, "{'host':'b','n':'x'}", "ETYPE",
	        "row 1, column \"n\": expected int32, got a JSON string");
	bad_row(f->c, "5", "EINVAL", "row 1: expected an array or an object, got a JSON integer");
	bad_row(f->c, "'b'", "EINVAL", "row 1: expected an array or an object, got a JSON string");
}

static void test_insert_duplicate_key(void **state)
{
	struct fixture *f = *state;
	create_r(f->c);
	expect(f->c, "{'op':'insert','table':'r','rows':[['a',1735689600000000000,1,0.5,'',1]]}",
	       "{'ok':true,'inserted':1}\n");
	/* Against a stored row: the new row 0 of the batch is not stored. */
	expect_error(f->c, "{'op':'insert','id':1,'table':'r','rows':["
	                   "['b',1735689600000000000,2,0.5,'',2],"
	                   "['a','2025-01-01T00:00:00Z',3,0.5,'',3]]}",
	             "EDUPKEY", "row 1: duplicate key (\"a\", 2025-01-01T00:00:00Z)");
	expect(f->c, "{'op':'query','table':'r'}",
	       "{'rows':[['a',1735689600000000000,1,0.5,'',1]]}\n{'ok':true,'count':1,'more':false}\n");
}

static void test_insert_duplicate_in_batch(void **state)
{
	struct fixture *f = *state;
	create_r(f->c);
	expect_error(f->c, "{'op':'insert','id':2,'table':'r','rows':["
	                   "['x',1735689600000000000,1,0.5,'',1],"
	                   "['y',1735689600000000000,2,0.5,'',2],"
	                   "['x','2025-01-01T01:00:00+01:00',3,0.5,'',3]]}",
	             "EDUPKEY", "row 2: duplicate key (\"x\", 2025-01-01T00:00:00Z)");
	assert_int_equal(count_rows(f->c, "r"), 0);
	/* A row differing in the last ns is no duplicate. */
	expect(f->c, "{'op':'insert','table':'r','rows':[['x',1735689600000000000,1,0.5,'',1],"
	             "['x',1735689600000000001,2,0.5,'',2]]}", "{'ok':true,'inserted':2}\n");
	assert_int_equal(count_rows(f->c, "r"), 2);
}

/* A table of policy ignore ("d": host, ts, n): create and schema. */
static void create_d(struct tsd_test_conn *c, const char *policy)
{
	char *req = tsd_test_fmt("{\"op\":\"create\",\"table\":\"d\",\"columns\":[{\"name\":\"host\","
	                "\"type\":\"string\"},{\"name\":\"ts\",\"type\":\"timestamp\"},"
	                "{\"name\":\"n\",\"type\":\"int64\"}],\"key\":[\"host\",\"ts\"]%s%s%s}",
	                policy ? ",\"on_duplicate\":\"" : "", policy ? policy : "",
	                policy ? "\"" : "");
	expect(c, req, "{'ok':true}\n");
	free(req);
}

static void expect_policy(struct tsd_test_conn *c, const char *policy)
{
	char *want = tsd_test_fmt("{\"ok\":true,\"columns\":[{\"name\":\"host\",\"type\":\"string\","
	                 "\"default\":\"\"},{\"name\":\"ts\",\"type\":\"timestamp\"},{\"name\":"
	                 "\"n\",\"type\":\"int64\",\"default\":0}],\"key\":[\"host\",\"ts\"],"
	                 "\"ttl\":\"0s\",\"version\":1,\"on_duplicate\":\"%s\"}\n", policy);
	expect_exact(c, "{'op':'schema','table':'d'}", want);
	free(want);
}

/* The "version" of an insert request's answer (which must have one). */
static json_int_t insert_version(struct tsd_test_conn *c, const char *request, int inserted)
{
	char *req = dq(request);
	json_t *lines = NULL, *a;
	assert_int_equal(tsd_test_send_line(c, req), 0);
	assert_int_equal(tsd_test_read_response(c, WAIT, &lines, NULL), 0);
	a = json_array_get(lines, 0);
	assert_true(json_is_true(json_object_get(a, "ok")));
	assert_int_equal(json_integer_value(json_object_get(a, "inserted")), inserted);
	assert_true(json_is_integer(json_object_get(a, "version")));
	json_int_t v = json_integer_value(json_object_get(a, "version"));
	json_decref(lines);
	free(req);
	return v;
}

/* An insert answers the table's version once its batch is in: the stat
 * "version" then, greater for every later batch, the same for a batch
 * whose rows were all skipped; a flush moves it too (its commits). */
static void test_insert_answers_version(void **state)
{
	struct fixture *f = *state;
	create_d(f->c, "ignore");
	json_int_t v1 = insert_version(f->c, "{'op':'insert','table':'d','rows':"
	                               "[['a',1735689600000000000,1]]}", 1);
	json_t *st = table_stats(f->c, "d");
	assert_true(v1 > 0);
	assert_int_equal(stat_int(st, "version"), v1);
	json_decref(st);
	json_int_t v2 = insert_version(f->c, "{'op':'insert','table':'d','rows':"
	                               "[['b',1735689600000000000,2]]}", 1);
	assert_true(v2 > v1);
	json_int_t v3 = insert_version(f->c, "{'op':'insert','table':'d','rows':"
	                               "[['b',1735689600000000000,2]]}", 0);
	assert_int_equal(v3, v2);
	expect(f->c, "{'op':'flush','table':'d'}", "{'ok':true}\n");
	st = table_stats(f->c, "d");
	assert_true(stat_int(st, "version") > v2);
	json_int_t flushed = stat_int(st, "version");
	json_decref(st);
	assert_true(insert_version(f->c, "{'op':'insert','table':'d','rows':"
	                           "[['c',1735689600000000000,3]]}", 1) > flushed);
}

/* create with "on_duplicate":"ignore": a batch's duplicates (of stored
 * rows and of its own earlier rows) are skipped, counted in the response
 * ("ignored", absent when none) and in the table's stats; a retried batch
 * stores nothing. */
static void test_insert_on_duplicate_ignore(void **state)
{
	struct fixture *f = *state;
	create_d(f->c, "ignore");
	expect_policy(f->c, "ignore");
	expect(f->c, "{'op':'insert','table':'d','rows':[['a',1735689600000000000,1],"
	             "['b',1735689600000000000,2],['a',1735689600000000000,3]]}",
	       "{'ok':true,'inserted':2,'ignored':1}\n");
	expect(f->c, "{'op':'insert','id':4,'table':'d','rows':[['a',1735689600000000000,1],"
	             "['b',1735689600000000000,2],['a',1735689600000000000,3]]}",
	       "{'id':4,'ok':true,'inserted':0,'ignored':3}\n");
	expect(f->c, "{'op':'insert','table':'d','rows':[{'host':'c','ts':1735689600000000000,"
	             "'n':4},{'host':'b','ts':'2025-01-01T00:00:00Z','n':5}]}",
	       "{'ok':true,'inserted':1,'ignored':1}\n");
	expect(f->c, "{'op':'insert','table':'d','rows':[['e',1735689600000000000,6]]}",
	       "{'ok':true,'inserted':1}\n");
	expect(f->c, "{'op':'query','table':'d'}",
	       "{'rows':[['a',1735689600000000000,1],['b',1735689600000000000,2],"
	       "['c',1735689600000000000,4],['e',1735689600000000000,6]]}\n"
	       "{'ok':true,'count':4,'more':false}\n");
	json_t *st = table_stats(f->c, "d");
	assert_int_equal(stat_int(st, "rows_ignored_duplicates"), 5);
	assert_int_equal(stat_int(st, "rows_inserted"), 4);
	assert_int_equal(stat_int(st, "on_duplicate_policy"), 1);
	assert_member(st, "on_duplicate", "'ignore'");
	json_decref(st);
	/* the daemon's rows_in counts the rows stored */
	assert_int_equal(tsd_test_send_line(f->c, "{\"op\":\"stats\"}"), 0);
	json_t *lines = NULL;
	assert_int_equal(tsd_test_read_response(f->c, WAIT, &lines, NULL), 0);
	assert_member(json_array_get(lines, 0), "rows_in", "4");
	json_decref(lines);
}

/* alter changes the policy both ways; schema reports it; a bad policy is
 * refused by create and alter alike, changing nothing. */
/* An "on_duplicate" of word refused with EINVAL and the library's
 * message (ts_on_duplicate_parse's, which names the policies this build
 * knows), as the daemon relays it. */
static void expect_policy_refused(struct tsd_test_conn *c, const char *request, const char *word)
{
	ts_on_duplicate p;
	char *msg;
	assert_int_equal(ts_on_duplicate_parse(word, &p), TS_EINVAL);
	msg = tsd_test_fmt("field \"on_duplicate\": %s", ts_errmsg(NULL));
	expect_error(c, request, "EINVAL", msg);
	free(msg);
}

static void test_alter_on_duplicate(void **state)
{
	struct fixture *f = *state;
	create_d(f->c, NULL);
	expect_policy(f->c, "reject");
	expect(f->c, "{'op':'insert','table':'d','rows':[['a',1735689600000000000,1]]}",
	       "{'ok':true,'inserted':1}\n");
	expect_error(f->c, "{'op':'insert','table':'d','rows':[['a',1735689600000000000,2]]}",
	             "EDUPKEY", "row 0: duplicate key (\"a\", 2025-01-01T00:00:00Z)");
	expect(f->c, "{'op':'alter','id':1,'table':'d','on_duplicate':'ignore'}",
	       "{'id':1,'ok':true}\n");
	expect_policy(f->c, "ignore");
	expect(f->c, "{'op':'insert','table':'d','rows':[['a',1735689600000000000,2]]}",
	       "{'ok':true,'inserted':0,'ignored':1}\n");
	/* with another change in the same alter */
	expect(f->c, "{'op':'alter','table':'d','ttl':'0s','on_duplicate':'reject'}",
	       "{'ok':true}\n");
	expect_policy(f->c, "reject");
	json_t *st = table_stats(f->c, "d");
	assert_int_equal(stat_int(st, "on_duplicate_policy"), 0);
	assert_member(st, "on_duplicate", "'reject'");
	json_decref(st);
	expect_error(f->c, "{'op':'insert','table':'d','rows':[['a',1735689600000000000,3]]}",
	             "EDUPKEY", "row 0: duplicate key (\"a\", 2025-01-01T00:00:00Z)");
	expect_policy_refused(f->c, "{'op':'alter','table':'d','on_duplicate':'overwrite'}",
	                      "overwrite");
	expect_policy_refused(f->c, "{'op':'alter','table':'d','add':[{'name':'z','type':'int32'}],"
	                            "'on_duplicate':'Ignore'}", "Ignore");
	expect_policy(f->c, "reject"); /* no column z either */
	expect_error(f->c, "{'op':'alter','table':'d','on_duplicate':1}", "EPROTO",
	             "field \"on_duplicate\": expected a string, got a JSON integer");
	expect_policy_refused(f->c, "{'op':'create','table':'e','columns':[{'name':'ts',"
	                            "'type':'timestamp'}],'key':['ts'],'on_duplicate':'keep'}", "keep");
	expect(f->c, "{'op':'tables'}", "{'ok':true,'tables':['d']}\n");
	expect(f->c, "{'op':'create','table':'e','columns':[{'name':'ts','type':'timestamp'}],"
	             "'key':['ts'],'on_duplicate':'reject'}", "{'ok':true}\n");
}

static void test_insert_expired(void **state)
{
	struct fixture *f = *state;
	int64_t now = wall_ns() / SEC;
	char fresh[40], old[40], *req, *msg;
	rfc3339(now - 600, fresh, sizeof fresh);
	rfc3339(now - 7200, old, sizeof old);
	expect(f->c, "{'op':'create','table':'e','columns':[{'name':'host','type':'string'},"
	             "{'name':'ts','type':'timestamp'}],'key':['host','ts'],'ttl':'1h'}",
	       "{'ok':true}\n");
	req = tsd_test_fmt("{'op':'insert','id':3,'table':'e','rows':[['a','%s'],['b','%s']]}", fresh, old);
	msg = tsd_test_fmt("row 1: ts %s is older than the table's TTL", old);
	expect_error(f->c, req, "EEXPIRED", msg);
	assert_int_equal(count_rows(f->c, "e"), 0);
	free(msg);
	free(req);
	req = tsd_test_fmt("{'op':'insert','table':'e','rows':[['a','%s']]}", fresh);
	expect(f->c, req, "{'ok':true,'inserted':1}\n");
	assert_int_equal(count_rows(f->c, "e"), 1);
	free(req);
}

/* Times relative to the daemon's clock (the wall clock here), dates
 * alone and epoch counts with a unit, as strings in rows and in from,
 * to and before.  The rows lie an hour or more from every bound, so the
 * moments between the requests never matter. */
static void test_query_relative(void **state)
{
	struct fixture *f = *state;
	expect(f->c, "{'op':'create','table':'e','columns':[{'name':'host','type':'string'},"
	             "{'name':'ts','type':'timestamp'}],'key':['host','ts']}", "{'ok':true}\n");
	expect(f->c, "{'op':'insert','table':'e','rows':[['a','now-3h'],['b','-90m'],"
	             "['c','now-10m'],['d','2025-01-01'],['e','1735689600s'],['f','1735689601000ms']]}",
	       "{'ok':true,'inserted':6}\n");
	expect(f->c, "{'op':'query','table':'e','from':'-1h','columns':['host']}",
	       "{'rows':[['c']]}\n{'ok':true,'count':1,'more':false}\n");
	expect(f->c, "{'op':'query','table':'e','from':'now-2h','to':'now-1h','columns':['host']}",
	       "{'rows':[['b']]}\n{'ok':true,'count':1,'more':false}\n");
	expect(f->c, "{'op':'query','table':'e','from':'now-4h','to':'now+1h','columns':['host']}",
	       "{'rows':[['a'],['b'],['c']]}\n{'ok':true,'count':3,'more':false}\n");
	expect(f->c, "{'op':'query','table':'e','from':'2025-01-01','to':'2025-01-02'}",
	       "{'rows':[['d',1735689600000000000],['e',1735689600000000000],"
	       "['f',1735689601000000000]]}\n{'ok':true,'count':3,'more':false}\n");
	expect_error(f->c, "{'op':'query','table':'e','from':'-1x'}", "EINVAL",
	             "field \"from\": timestamp \"-1x\": expected a duration after '-' "
	             "(<n><unit>, unit one of ns us ms s m h d w: now-15m, -1h)");
	expect_error(f->c, "{'op':'query','table':'e','to':'5h'}", "EINVAL",
	             "field \"to\": timestamp \"5h\": an epoch count takes the unit s, ms, us or ns; "
	             "for 5h before now write -5h or now-5h");
	expect(f->c, "{'op':'flush','table':'e','before':'now'}", "{'ok':true}\n");
	assert_int_equal(count_rows(f->c, "e"), 6);
}

static void test_insert_future(void **state)
{
	struct fixture *f = *state;
	int64_t now = wall_ns() / SEC;
	char later[40], ahead[40], *req, *got, *prefix;
	json_t *line, *err;
	rfc3339(now + 3600, later, sizeof later);
	rfc3339(now + 2 * 86400, ahead, sizeof ahead);
	create_r(f->c);
	req = tsd_test_fmt("{\"op\":\"insert\",\"id\":4,\"table\":\"r\",\"rows\":[[\"a\",\"%s\",1,0,\"\",1],"
	          "[\"a\",\"%s\",1,0,\"\",1]]}", later, ahead);
	got = call_raw(f->c, req);
	assert_non_null(line = json_loads(got, 0, NULL));
	assert_member(line, "id", "4");
	assert_member(line, "ok", "false");
	err = json_object_get(line, "error");
	assert_member(err, "code", "'EFUTURE'");
	/* The message ends with the daemon's now, which only it knows. */
	prefix = tsd_test_fmt("row 1: ts %s is more than max_future ahead of now (", ahead);
	assert_prefix(json_string_value(json_object_get(err, "message")), prefix);
	assert_int_equal(json_object_size(line), 3);
	json_decref(line);
	free(prefix);
	free(got);
	free(req);
	ping_ok(f->c);
	assert_int_equal(count_rows(f->c, "r"), 0);
	req = tsd_test_fmt("{'op':'insert','table':'r','rows':[['a','%s',1,0,'',1]]}", later);
	expect(f->c, req, "{'ok':true,'inserted':1}\n");
	assert_int_equal(count_rows(f->c, "r"), 1);
	free(req);
}

/* ---- Framing ---- */

static void test_frame_crlf_blank_lines(void **state)
{
	struct fixture *f = *state;
	static const char in[] = "\n\r\n{\"op\":\"ping\",\"id\":1}\r\n\n\n{\"op\":\"ping\",\"id\":2}\n";
	char *line = NULL;
	assert_int_equal(tsd_test_send(f->c, in, sizeof in - 1), 0);
	for (int id = 1; id <= 2; id++) {
		char *want = tsd_test_fmt("{\"id\":%d,\"ok\":true,\"version\":\"" TS_VERSION_STRING "\"}", id);
		assert_int_equal(tsd_test_read_line(f->c, WAIT, &line, NULL), TSD_TEST_LINE);
		assert_string_equal(line, want);
		free(line);
		free(want);
	}
	/* Blank lines got no response: the next line answers the next request. */
	ping_ok(f->c);
}

static void test_frame_byte_by_byte(void **state)
{
	struct fixture *f = *state;
	static const char in[] = "{\"op\":\"ping\",\"id\":\"slow\"}\n";
	char *got;
	for (size_t i = 0; i < sizeof in - 1; i++) {
		struct timespec ms = {0, 1000000};
		assert_int_equal(tsd_test_send(f->c, in + i, 1), 0);
		nanosleep(&ms, NULL);
	}
	assert_int_equal(tsd_test_read_response(f->c, WAIT, NULL, &got), 0);
	assert_string_equal(got, "{\"id\":\"slow\",\"ok\":true,\"version\":\"" TS_VERSION_STRING "\"}\n");
	free(got);
}

static void test_frame_last_line_at_eof(void **state)
{
	struct fixture *f = *state;
	static const char in[] = "{\"op\":\"ping\",\"id\":1}\n{\"op\":\"ping\",\"id\":2}";
	char *line = NULL;
	assert_int_equal(tsd_test_send(f->c, in, sizeof in - 1), 0);
	assert_int_equal(shutdown(f->c->fd, SHUT_WR), 0);
	for (int id = 1; id <= 2; id++) {
		char *want = tsd_test_fmt("{\"id\":%d,\"ok\":true,\"version\":\"" TS_VERSION_STRING "\"}", id);
		assert_int_equal(tsd_test_read_line(f->c, WAIT, &line, NULL), TSD_TEST_LINE);
		assert_string_equal(line, want);
		free(line);
		free(want);
	}
	assert_int_equal(tsd_test_read_line(f->c, WAIT, &line, NULL), TSD_TEST_EOF);
}

/* ---- Over-long lines (--line-max 1024) ---- */

static const char too_big[] = "{\"ok\":false,\"error\":{\"code\":\"ETOOBIG\",\"message\":"
                              "\"request line longer than the limit; closing the connection\"}}";

/* A ping request padded with spaces to exactly n bytes (malloc'ed). */
static char *padded_ping(size_t n)
{
	static const char head[] = "{\"op\":\"ping\",\"id\":\"pad\"";
	char *p = malloc(n + 1);
	assert_non_null(p);
	assert_true(n > sizeof head);
	memset(p, ' ', n);
	memcpy(p, head, sizeof head - 1);
	p[n - 1] = '}';
	p[n] = '\0';
	return p;
}

/* The next line is the ETOOBIG error, and then the connection closes. */
static void expect_too_big_then_eof(struct tsd_test_conn *c)
{
	char *line = NULL;
	assert_int_equal(tsd_test_read_line(c, WAIT, &line, NULL), TSD_TEST_LINE);
	assert_string_equal(line, too_big);
	free(line);
	assert_int_equal(tsd_test_read_line(c, WAIT, &line, NULL), TSD_TEST_EOF);
}

static void test_line_max_boundary(void **state)
{
	struct fixture *f = *state;
	char *ok = padded_ping(1024), *big = padded_ping(1025);
	expect(f->c, ok, "{'id':'pad','ok':true,'version':'" TS_VERSION_STRING "'}\n");
	assert_int_equal(tsd_test_send_line(f->c, big), 0);
	expect_too_big_then_eof(f->c);
	free(big);
	free(ok);
}

static void test_line_too_long_closes(void **state)
{
	struct fixture *f = *state;
	struct tsd_test_conn *c = NULL;
	char *big = padded_ping(4000), *in, *line = NULL;
	/* Requests before the long line are answered; after it, nothing. */
	in = tsd_test_fmt("{\"op\":\"ping\",\"id\":1}\n%s\n{\"op\":\"ping\",\"id\":2}\n", big);
	assert_int_equal(tsd_test_send(f->c, in, strlen(in)), 0);
	assert_int_equal(tsd_test_read_line(f->c, WAIT, &line, NULL), TSD_TEST_LINE);
	assert_string_equal(line, "{\"id\":1,\"ok\":true,\"version\":\"" TS_VERSION_STRING "\"}");
	free(line);
	expect_too_big_then_eof(f->c);
	/* A long line with no '\n' yet is refused without waiting for it. */
	assert_non_null(c = tsd_test_connect(f->d, f->transport));
	assert_int_equal(tsd_test_send(c, big, strlen(big)), 0);
	expect_too_big_then_eof(c);
	tsd_test_close(c);
	/* The daemon serves on. */
	assert_non_null(c = tsd_test_connect(f->d, f->transport));
	ping_ok(c);
	tsd_test_close(c);
	free(in);
	free(big);
}

/* ---- Pipelining ---- */

/* Request i of the pipeline, and its response (appended to want). */
static void pipeline_step(int i, char **req, char **resp)
{
	switch (i % 4) {
	case 0:
		*req = tsd_test_fmt("{\"op\":\"insert\",\"id\":%d,\"table\":\"p\",\"rows\":[[%d,%" PRId64 "]]}",
		           i, i, T0);
		*resp = tsd_test_fmt("{\"id\":%d,\"ok\":true,\"inserted\":1}\n", i);
		break;
	case 1:
		*req = tsd_test_fmt("{\"op\":\"ping\",\"id\":%d}", i);
		*resp = tsd_test_fmt("{\"id\":%d,\"ok\":true,\"version\":\"" TS_VERSION_STRING "\"}\n", i);
		break;
	case 2:
		*req = tsd_test_fmt("{\"op\":\"query\",\"id\":%d,\"table\":\"p\",\"prefix\":[%d]}", i, i - 2);
		*resp = tsd_test_fmt("{\"id\":%d,\"rows\":[[%d,%" PRId64 "]]}\n"
		            "{\"id\":%d,\"ok\":true,\"count\":1,\"more\":false}\n", i, i - 2, T0, i);
		break;
	default:
		*req = tsd_test_fmt("{\"op\":\"latest\",\"id\":%d,\"table\":\"p\",\"prefix\":[%d]}", i, i - 3);
		*resp = tsd_test_fmt("{\"id\":%d,\"ok\":true,\"row\":[%d,%" PRId64 "]}\n", i, i - 3, T0);
		break;
	}
}

/* The room of a buffer of n bytes (and a NUL) grown by append: a power
 * of two, so that appends cost linear time (under ASan every realloc
 * copies; growing by the piece made the big requests quadratic). */
static size_t append_room(size_t n)
{
	size_t room = 64;
	while (room < n + 1)
		room *= 2;
	return room;
}

/* Append s and free it. */
static void append(char **out, size_t *n, char *s)
{
	size_t k = strlen(s);
	if (!*out || append_room(*n + k) != append_room(*n)) {
		char *p = realloc(*out, append_room(*n + k));
		assert_non_null(p);
		*out = p;
	}
	memcpy(*out + *n, s, k + 1);
	*n += k;
	free(s);
}

static void test_pipeline_1000(void **state)
{
	struct fixture *f = *state;
	char *in = NULL, *want = NULL, *got = NULL, *text;
	size_t nin = 0, nwant = 0, ngot = 0;
	create_p(f->c);
	for (int i = 0; i < 1000; i++) {
		char *req, *resp;
		pipeline_step(i, &req, &resp);
		append(&in, &nin, tsd_test_fmt("%s\n", req));
		append(&want, &nwant, resp);
		free(req);
	}
	/* One write of all 1000; the responses, in order, are exactly want. */
	assert_int_equal(tsd_test_send(f->c, in, nin), 0);
	for (int i = 0; i < 1000; i++) {
		if (tsd_test_read_response(f->c, WAIT, NULL, &text) != 0)
			fail_msg("response %d of 1000 did not come", i);
		append(&got, &ngot, tsd_test_drop_version(text));
	}
	assert_string_equal(got, want);
	free(got);
	free(want);
	free(in);
}

struct sender {
	pthread_t thread;
	struct tsd_test_conn *c;
	const char *p;
	size_t n;
	int rc;
};

static void *sender_main(void *arg)
{
	struct sender *s = arg;
	s->rc = tsd_test_send(s->c, s->p, s->n);
	return NULL;
}

/* More requests in one go than the daemon queues per connection
 * (TSD_PIPELINE_MAX, 1024): it must stop reading and later resume, and
 * answer every one, in order. */
static void test_pipeline_beyond_queue(void **state)
{
	enum { N = 5000 };
	struct fixture *f = *state;
	struct sender s = {.c = f->c};
	char *in = NULL, *line = NULL, *want;
	size_t nin = 0;
	int i;
	for (i = 0; i < N; i++)
		append(&in, &nin, tsd_test_fmt("{\"op\":\"ping\",\"id\":%d}\n", i));
	s.p = in;
	s.n = nin;
	assert_int_equal(pthread_create(&s.thread, NULL, sender_main, &s), 0);
	for (i = 0; i < N; i++) {
		if (tsd_test_read_line(f->c, 3000, &line, NULL) != TSD_TEST_LINE)
			break;
		want = tsd_test_fmt("{\"id\":%d,\"ok\":true,\"version\":\"" TS_VERSION_STRING "\"}", i);
		if (strcmp(line, want) != 0) {
			print_error("response %d: got %s\n", i, line);
			free(want);
			break;
		}
		free(want);
		free(line);
		line = NULL;
	}
	free(line);
	shutdown(f->c->fd, SHUT_RDWR); /* unblocks the sender if the daemon stopped reading */
	pthread_join(s.thread, NULL);
	free(in);
	if (i < N)
		fail_msg("%d of %d pipelined pings answered in order", i, N);
}

/* ---- Many connections at once ---- */

/* WRITERS connections each create a table and insert into it while
 * READERS others query them round and round; every query must see whole
 * batches only.  (Each table preallocates its log, two 64 MiB segments:
 * this test briefly holds about 6.4 GB of /tmp.) */
enum { WRITERS = 50, READERS = 6, BATCHES = 20, BATCH_ROWS = 50 };

/* One thread's connection and what went wrong on it (empty: nothing). */
struct worker {
	pthread_t thread;
	struct tsd_test_daemon *d;
	int index;
	atomic_int *stop;
	long queries;
	char error[512];
};

/* Rows [k, T0] for k in [from, from + n) as an insert into table. */
static char *insert_request(const char *table, long from, int n)
{
	char *req = NULL, *p;
	size_t len = 0;
	append(&req, &len, tsd_test_fmt("{\"op\":\"insert\",\"table\":\"%s\",\"rows\":[", table));
	for (int j = 0; j < n; j++) {
		p = tsd_test_fmt("%s[%ld,%" PRId64 "]", j ? "," : "", from + j, T0);
		append(&req, &len, p);
	}
	append(&req, &len, strdup("]}"));
	return req;
}

/* Send req on c; the response must be exactly want.  0, or -1 with
 * w->error set. */
static int worker_call(struct worker *w, struct tsd_test_conn *c, const char *req,
                       const char *want)
{
	char *got = NULL;
	int rc = tsd_test_send_line(c, req) < 0 ? TSD_TEST_ERROR
	       : tsd_test_read_response(c, WAIT, NULL, &got);
	if (rc == 0 && strcmp(tsd_test_drop_version(got), want) != 0)
		rc = TSD_TEST_ERROR;
	if (rc < 0)
		snprintf(w->error, sizeof w->error, "%.100s...: got %.300s (%s)", req, got ? got : "nothing",
		         rc == TSD_TEST_EOF ? "EOF" : rc == TSD_TEST_TIMEOUT ? "timeout" : "error");
	free(got);
	return rc < 0 ? -1 : 0;
}

/* Writer i: create table t<i>, insert BATCHES batches of BATCH_ROWS. */
static void *writer_main(void *arg)
{
	struct worker *w = arg;
	struct tsd_test_conn *c = tsd_test_connect(w->d, w->index % 2 ? TSD_TEST_TCP : TSD_TEST_UNIX);
	char *req, *want = tsd_test_fmt("{\"ok\":true,\"inserted\":%d}\n", BATCH_ROWS), table[16];
	snprintf(table, sizeof table, "t%d", w->index);
	req = tsd_test_fmt("{\"op\":\"create\",\"table\":\"%s\",\"columns\":[{\"name\":\"k\",\"type\":\"int64\"},"
	          "{\"name\":\"ts\",\"type\":\"timestamp\"}],\"key\":[\"k\",\"ts\"]}", table);
	if (!c)
		snprintf(w->error, sizeof w->error, "cannot connect");
	else if (worker_call(w, c, req, "{\"ok\":true}\n") == 0)
		for (int b = 0; b < BATCHES; b++) {
			char *ins = insert_request(table, (long)b * BATCH_ROWS, BATCH_ROWS);
			int rc = worker_call(w, c, ins, want);
			free(ins);
			if (rc < 0)
				break;
		}
	free(req);
	free(want);
	tsd_test_close(c);
	return NULL;
}

/* Check a query response on a table t<i>: ENOENT (not created yet), or
 * rows k = 0, 1, ... of whole batches. */
static int check_snapshot(struct worker *w, json_t *lines)
{
	json_t *last = json_array_get(lines, json_array_size(lines) - 1), *line, *row;
	size_t i, j;
	long next = 0;
	if (json_is_false(json_object_get(last, "ok")))
		return strcmp(json_string_value(json_object_get(json_object_get(last, "error"), "code")),
		              "ENOENT") == 0 ? 0 : -1;
	json_array_foreach(lines, i, line)
		json_array_foreach(json_object_get(line, "rows"), j, row)
			if (json_integer_value(json_array_get(row, 0)) != next++)
				return -1;
	if (next % BATCH_ROWS || json_integer_value(json_object_get(last, "count")) != next)
		return -1;
	return 0;
}

/* Reader: query the tables round and round until told to stop. */
static void *reader_main(void *arg)
{
	struct worker *w = arg;
	struct tsd_test_conn *c = tsd_test_connect(w->d, w->index % 2 ? TSD_TEST_TCP : TSD_TEST_UNIX);
	if (!c)
		snprintf(w->error, sizeof w->error, "cannot connect");
	for (long n = w->index; c && !atomic_load(w->stop) && !w->error[0]; n += 7) {
		char *req = tsd_test_fmt("{\"op\":\"query\",\"table\":\"t%ld\"}", n % WRITERS);
		json_t *lines = NULL;
		if (tsd_test_send_line(c, req) < 0 || tsd_test_read_response(c, WAIT, &lines, NULL) < 0)
			snprintf(w->error, sizeof w->error, "%s: no response", req);
		else if (check_snapshot(w, lines) < 0)
			snprintf(w->error, sizeof w->error, "%s: not a prefix of whole batches", req);
		w->queries++;
		json_decref(lines);
		free(req);
	}
	tsd_test_close(c);
	return NULL;
}

/* Table t<i> holds exactly rows k = 0 .. BATCHES * BATCH_ROWS - 1. */
static void check_table_t(struct tsd_test_conn *c, int i)
{
	char *req = tsd_test_fmt("{\"op\":\"query\",\"table\":\"t%d\"}", i);
	json_t *lines = NULL, *line;
	size_t j;
	int next = 0;
	assert_int_equal(tsd_test_send_line(c, req), 0);
	assert_int_equal(tsd_test_read_response(c, WAIT, &lines, NULL), 0);
	json_array_foreach(lines, j, line)
		check_p_rows(line, &next);
	assert_int_equal(next, BATCHES * BATCH_ROWS);
	assert_member(json_array_get(lines, json_array_size(lines) - 1), "count", "1000");
	json_decref(lines);
	free(req);
}

static void test_concurrent_connections(void **state)
{
	struct fixture *f = *state;
	static struct worker writers[WRITERS], readers[READERS];
	static atomic_int stop;
	int i;
	atomic_store(&stop, 0);
	for (i = 0; i < WRITERS + READERS; i++) {
		struct worker *w = i < WRITERS ? &writers[i] : &readers[i - WRITERS];
		*w = (struct worker){.d = f->d, .index = i, .stop = &stop};
		assert_int_equal(pthread_create(&w->thread, NULL,
		                                i < WRITERS ? writer_main : reader_main, w), 0);
	}
	for (i = 0; i < WRITERS; i++)
		pthread_join(writers[i].thread, NULL);
	atomic_store(&stop, 1);
	for (i = 0; i < READERS; i++)
		pthread_join(readers[i].thread, NULL);
	for (i = 0; i < WRITERS + READERS; i++) {
		struct worker *w = i < WRITERS ? &writers[i] : &readers[i - WRITERS];
		if (w->error[0])
			fail_msg("%s %d: %s", i < WRITERS ? "writer" : "reader", w->index, w->error);
	}
	for (i = 0; i < READERS; i++)
		assert_true(readers[i].queries > 0);
	for (i = 0; i < WRITERS; i++)
		check_table_t(f->c, i);
}

/* ---- A client that stops reading ---- */

enum { BIG_ROWS = 200000, BIG_BATCH = 10000, BIG_PAD = 500 };
/* What the daemon may grow by while a client does not read: far less
 * than the response (BIG_ROWS * ~530 bytes, about 100 MB). */
#define RSS_BOUND_KB (64L << 10)

/* The daemon with a small block cache, so that reading the table cannot
 * itself move the daemon's memory by tens of MB.  (The bound does catch
 * a daemon that buffers: one built with TSD_WRITE_HIGH_WATER at 1 TB
 * grew by about 100 MB here and failed.) */
static int setup_small_cache(void **state)
{
	static const char *const args[] = {"--block-cache-size", "4M", "--no-merge", NULL};
	return start_fixture(state, args, 0);
}

/* Table "big": k int64, ts, s string; BIG_ROWS rows [k, T0, 'xxx…']. */
static void fill_big(struct tsd_test_conn *c)
{
	char *pad = malloc(BIG_PAD + 1), *want = tsd_test_fmt("{\"ok\":true,\"inserted\":%d}\n", BIG_BATCH);
	assert_non_null(pad);
	memset(pad, 'x', BIG_PAD);
	pad[BIG_PAD] = '\0';
	expect(c, "{'op':'create','table':'big','columns':[{'name':'k','type':'int64'},"
	          "{'name':'ts','type':'timestamp'},{'name':'s','type':'string'}],'key':['k','ts']}",
	       "{'ok':true}\n");
	for (int b = 0; b < BIG_ROWS / BIG_BATCH; b++) {
		char *req = NULL;
		size_t n = 0;
		append(&req, &n, strdup("{\"op\":\"insert\",\"table\":\"big\",\"rows\":["));
		for (int j = 0; j < BIG_BATCH; j++)
			append(&req, &n, tsd_test_fmt("%s[%d,%" PRId64 ",\"%s\"]", j ? "," : "", b * BIG_BATCH + j,
			                     T0, pad));
		append(&req, &n, strdup("]}"));
		expect_exact(c, req, want);
		free(req);
	}
	expect(c, "{'op':'flush'}", "{'ok':true}\n");
	free(want);
	free(pad);
}

/* Read the rest of the "big" query: every row, in order, then ok. */
static void read_big(struct tsd_test_conn *c)
{
	json_t *line = NULL, *row;
	char *text = NULL;
	size_t len, j;
	long next = 0;
	for (;;) {
		assert_int_equal(tsd_test_read_line(c, WAIT, &text, &len), TSD_TEST_LINE);
		assert_non_null(line = json_loadb(text, len, 0, NULL));
		free(text);
		if (json_object_get(line, "ok"))
			break;
		json_array_foreach(json_object_get(line, "rows"), j, row) {
			assert_int_equal(json_integer_value(json_array_get(row, 0)), next++);
			assert_int_equal(strlen(json_string_value(json_array_get(row, 2))), BIG_PAD);
		}
		json_decref(line);
	}
	assert_int_equal(next, BIG_ROWS);
	assert_member(line, "ok", "true");
	assert_member(line, "count", "200000");
	assert_member(line, "more", "false");
	json_decref(line);
}

static void test_slow_reader_memory(void **state)
{
	struct fixture *f = *state;
	struct tsd_test_conn *slow, *other;
	long before, peak = 0;
	fill_big(f->c);
	before = tsd_test_daemon_status_kb(f->d, "VmRSS");
	assert_true(before > 0);
	assert_non_null(slow = tsd_test_connect(f->d, f->transport));
	assert_int_equal(tsd_test_send_line(slow, "{\"op\":\"query\",\"table\":\"big\"}"), 0);
	/* The client reads nothing for 3 s: the daemon must not buffer the
	 * response for it. */
	for (int i = 0; i < 12; i++) {
		struct timespec t = {0, 250 * 1000000L};
		long rss;
		nanosleep(&t, NULL);
		rss = tsd_test_daemon_status_kb(f->d, "VmRSS");
		peak = rss > peak ? rss : peak;
	}
	if (peak > before + RSS_BOUND_KB)
		fail_msg("VmRSS grew from %ld kB to %ld kB while a client did not read", before, peak);
	assert_non_null(other = tsd_test_connect(f->d, f->transport));
	ping_ok(other);
	tsd_test_close(other);
	read_big(slow);
	ping_ok(slow);
	tsd_test_close(slow);
}

/* ---- SIGTERM under load ---- */

enum { LOADERS = 3, LOAD_ROWS = 100 };
#define LOADER_SPAN 1000000L /* keys of loader i: [i * span, (i + 1) * span) */

struct loader {
	pthread_t thread;
	struct tsd_test_daemon *d;
	int index;
	atomic_long acked;  /* batches acknowledged */
	int ended;          /* how it ended: 1 EOF (expected), -1 anything else */
	char error[512];
};

/* Insert batch after batch into "s" until the daemon closes. */
static void *loader_main(void *arg)
{
	struct loader *l = arg;
	struct tsd_test_conn *c = tsd_test_connect(l->d, l->index % 2 ? TSD_TEST_TCP : TSD_TEST_UNIX);
	char *want = tsd_test_fmt("{\"ok\":true,\"inserted\":%d}\n", LOAD_ROWS), *got = NULL;
	l->ended = -1;
	for (long b = 0; c; b++) {
		char *req = insert_request("s", l->index * LOADER_SPAN + b * LOAD_ROWS, LOAD_ROWS);
		int rc = tsd_test_send_line(c, req) < 0 ? TSD_TEST_EOF
		       : tsd_test_read_response(c, WAIT, NULL, &got);
		free(req);
		if (rc == TSD_TEST_EOF) {
			l->ended = 1;
			break;
		}
		if (rc < 0 || strcmp(tsd_test_drop_version(got), want) != 0) {
			snprintf(l->error, sizeof l->error, "batch %ld: %.300s", b, rc < 0 ? "no response" : got);
			break;
		}
		atomic_store(&l->acked, b + 1);
		free(got);
		got = NULL;
	}
	free(got);
	free(want);
	tsd_test_close(c);
	return NULL;
}

/* The rows of loader i in "s": exactly its acknowledged batches. */
static void check_loader_rows(struct tsd_test_conn *c, const struct loader *l)
{
	long base = l->index * LOADER_SPAN, next = base;
	char *req = tsd_test_fmt("{\"op\":\"query\",\"table\":\"s\",\"ge\":[%ld],\"lt\":[%ld]}", base,
	                base + LOADER_SPAN);
	json_t *lines = NULL, *line, *row;
	size_t i, j;
	assert_int_equal(tsd_test_send_line(c, req), 0);
	assert_int_equal(tsd_test_read_response(c, WAIT, &lines, NULL), 0);
	json_array_foreach(lines, i, line)
		json_array_foreach(json_object_get(line, "rows"), j, row)
			assert_int_equal(json_integer_value(json_array_get(row, 0)), next++);
	if (next - base != atomic_load(&l->acked) * LOAD_ROWS)
		fail_msg("loader %d: %ld batches acknowledged, %ld rows stored", l->index,
		         (long)atomic_load(&l->acked), next - base);
	json_decref(lines);
	free(req);
}

/* Whether every loader has had some batches acknowledged within 10 s. */
static int load_running(struct loader *loaders)
{
	for (int tries = 0; tries < 1000; tries++) {
		struct timespec t = {0, 10 * 1000000L};
		int all = 1;
		for (int i = 0; i < LOADERS; i++)
			all &= atomic_load(&loaders[i].acked) >= 20;
		if (all)
			return 1;
		nanosleep(&t, NULL);
	}
	return 0;
}

static void test_sigterm_under_load(void **state)
{
	struct fixture *f = *state;
	static struct loader loaders[LOADERS];
	int i, running, status;
	expect(f->c, "{'op':'create','table':'s','columns':[{'name':'k','type':'int64'},"
	             "{'name':'ts','type':'timestamp'}],'key':['k','ts']}", "{'ok':true}\n");
	for (i = 0; i < LOADERS; i++) {
		loaders[i] = (struct loader){.d = f->d, .index = i};
		assert_int_equal(pthread_create(&loaders[i].thread, NULL, loader_main, &loaders[i]), 0);
	}
	running = load_running(loaders);
	/* Stop: what was received is finished and synced; exit status 0.
	 * The loaders end at the EOF that follows. */
	status = running ? tsd_test_daemon_stop(f->d, WAIT) : -1;
	tsd_test_daemon_kill(f->d);
	for (i = 0; i < LOADERS; i++)
		pthread_join(loaders[i].thread, NULL);
	if (!running)
		fail_msg("the loaders did not get going");
	assert_int_equal(status, 0);
	tsd_test_close(f->c);
	f->c = NULL;
	for (i = 0; i < LOADERS; i++)
		if (loaders[i].ended != 1)
			fail_msg("loader %d: %s", i, loaders[i].error);
	/* Restarted on the same directory: every acknowledged row is there. */
	assert_int_equal(tsd_test_daemon_start(f->d, NULL), 0);
	assert_non_null(f->c = tsd_test_connect(f->d, f->transport));
	for (i = 0; i < LOADERS; i++)
		check_loader_rows(f->c, &loaders[i]);
}

/* ---- Access levels and the token (--token: "s3cret") ---- */

/* The EAUTH message refusing op, which needs level need, to a client on
 * a loopback TCP listener (daemon/access.c): token says whether the
 * daemon has one, loopback is loopback-access. */
static char *refusal(const char *op, const char *need, int token, const char *loopback)
{
	return tsd_test_fmt("\"%s\" is %s %s operation: %s; loopback-access is %s", op,
	                    strcmp(need, "admin") == 0 ? "an" : "a", need,
	                    token ? "send the token ({\"op\":\"auth\",\"token\":…}) or use the "
	                            "unix socket"
	                          : "use the unix socket, or start tsstored with a token "
	                            "(--token FILE) and send it ({\"op\":\"auth\",\"token\":…})",
	                    loopback);
}

/* Assert the response to request (single-quoted) is one EAUTH line. */
static void expect_eauth(struct tsd_test_conn *c, const char *request, const char *message)
{
	char *req = dq(request), *id = request_id(req), *want = error_line(id, "EAUTH", message);
	expect_exact(c, request, want);
	free(want);
	free(id);
	free(req);
}

/* expect_error with the message refusal() makes (freed here). */
static void expect_refusal(struct tsd_test_conn *c, const char *request, char *message)
{
	expect_error(c, request, "EAUTH", message);
	free(message);
}

/* ---- Corrections (issue 28): the fields of delete, purge, changes ----
 *
 * What the daemon checks itself, the same whether or not the library
 * does deletes yet: unknown fields (a delete takes query's range fields,
 * never desc, limit, columns or after), missing and malformed ones, and
 * the levels (delete and purge are admin, changes read).  What the ops
 * do is tests/cli/test_corrections_built.sh's. */

static void test_corrections_fields(void **state)
{
	struct fixture *f = *state;
	create_q(f->c);
	expect_error(f->c, "{'op':'delete','id':1,'table':'q','limit':1}", "EPROTO",
	             "unknown field \"limit\" for op \"delete\"");
	expect_error(f->c, "{'op':'delete','table':'q','after':['a']}", "EPROTO",
	             "unknown field \"after\" for op \"delete\"");
	expect_error(f->c, "{'op':'purge','table':'q','desc':true}", "EPROTO",
	             "unknown field \"desc\" for op \"purge\"");
	expect_error(f->c, "{'op':'delete','table':'q','ge':['a'],'gt':['b']}", "EPROTO",
	             "fields \"ge\" and \"gt\" exclude each other");
	expect_error(f->c, "{'op':'delete','table':'q','prefix':['a',1,2]}", "EINVAL",
	             "field \"prefix\": 3 values, the key has 2 columns");
	expect_error(f->c, "{'op':'delete','table':'q','prefix':[null]}", "EINVAL",
	             "field \"prefix\"[0] (column \"host\"): null is not a key value");
	expect_error(f->c, "{'op':'purge','table':'q','prefix':[7]}", "ETYPE",
	             "field \"prefix\"[0] (column \"host\"): expected string, got a JSON integer");
	expect_error(f->c, "{'op':'delete','table':'nosuch','prefix':['a']}", "ENOENT",
	             "no such table \"nosuch\"");
	expect_error(f->c, "{'op':'delete'}", "EPROTO", "missing field \"table\"");
	expect_error(f->c, "{'op':'changes','table':'q'}", "EPROTO", "missing field \"since\"");
	expect_error(f->c, "{'op':'changes','table':'q','since':-1}", "EPROTO",
	             "field \"since\": expected a non-negative integer, got a JSON integer");
	expect_error(f->c, "{'op':'changes','table':'q','since':'5'}", "EPROTO",
	             "field \"since\": expected a non-negative integer, got a JSON string");
	expect_error(f->c, "{'op':'changes','table':'q','since':0,'depth':2}", "EINVAL",
	             "field \"depth\": 2 key columns, the key has 2 and the last (ts) cannot name "
	             "a prefix");
	expect_error(f->c, "{'op':'changes','table':'q','since':0,'resolution':'fast'}", "EINVAL",
	             "field \"resolution\": expected a duration such as \"1h\" (<n><unit>, unit ns "
	             "us ms s m h d w) or integer ns");
	expect_error(f->c, "{'op':'changes','table':'q','since':0,'prefix':['a']}", "EPROTO",
	             "unknown field \"prefix\" for op \"changes\"");
	expect_error(f->c, "{'op':'insert','table':'q','rows':[],'on_duplicate':1}", "EPROTO",
	             "field \"on_duplicate\": expected a string, got a JSON integer");
	/* nothing of it touched the table */
	assert_int_equal(count_rows(f->c, "q"), 0);
}

/* delete and purge need admin: a loopback TCP client (write, by
 * default) is refused before any field is read; changes is a read. */
static void test_corrections_access(void **state)
{
	struct fixture *f = *state;
	struct tsd_test_conn *c = tsd_test_connect(f->d, TSD_TEST_TCP);
	assert_non_null(c);
	fill_q(c);
	expect_refusal(c, "{'op':'delete','table':'q','prefix':['a']}",
	               refusal("delete", "admin", 0, "write"));
	expect_refusal(c, "{'op':'purge','table':'q'}", refusal("purge", "admin", 0, "write"));
	expect_refusal(c, "{'op':'delete','tabel':'q'}", refusal("delete", "admin", 0, "write"));
	/* changes passes the level check and fails on its fields */
	expect_error(c, "{'op':'changes','table':'q'}", "EPROTO", "missing field \"since\"");
	assert_int_equal(count_rows(c, "q"), 12);
	tsd_test_close(c);
}



/* The default configuration (no token, no loopback-access): a loopback
 * TCP client may read and write, not change or remove what exists; the
 * unix socket may. */
static void test_access_default(void **state)
{
	struct fixture *f = *state;
	struct tsd_test_conn *c = tsd_test_connect(f->d, TSD_TEST_TCP);
	assert_non_null(c);
	fill_q(c); /* create and insert: write */
	expect_rows(c, "{'op':'query','table':'q','prefix':['a'],'lt':['a','2025-01-01T02:00:00Z']}",
	            "a0 a1", "'count':2,'more':false");
	expect(c, "{'op':'tables'}", "{'ok':true,'tables':['q']}\n");
	expect_error(c, "{'op':'drop','id':1,'table':'q'}", "EAUTH",
	             "\"drop\" is an admin operation: use the unix socket, or start tsstored with a "
	             "token (--token FILE) and send it ({\"op\":\"auth\",\"token\":…}); "
	             "loopback-access is write");
	expect_refusal(c, "{'op':'alter','table':'q','ttl':'1h'}", refusal("alter", "admin", 0, "write"));
	expect_refusal(c, "{'op':'flush'}", refusal("flush", "admin", 0, "write"));
	expect_refusal(c, "{'op':'check'}", refusal("check", "admin", 0, "write"));
	expect_refusal(c, "{'op':'snapshot','dest':'/tmp/nowhere'}", refusal("snapshot", "admin", 0, "write"));
	/* refused before its fields are looked at */
	expect_refusal(c, "{'op':'drop','tabel':'q'}", refusal("drop", "admin", 0, "write"));
	/* no token to authenticate with: refused, the connection kept */
	expect_error(c, "{'op':'auth','token':'s3cret'}", "EAUTH",
	             "this tsstored has no token (--token FILE): there is nothing to authenticate with");
	expect_refusal(c, "{'op':'drop','table':'q'}", refusal("drop", "admin", 0, "write"));
	assert_int_equal(count_rows(c, "q"), 12);
	/* the unix socket: admin */
	expect(f->c, "{'op':'alter','table':'q','ttl':'1h'}", "{'ok':true}\n");
	expect(f->c, "{'op':'drop','table':'q'}", "{'ok':true}\n");
	expect(c, "{'op':'tables'}", "{'ok':true,'tables':[]}\n");
	tsd_test_close(c);
}

/* --loopback-access admin: what the daemon did before the levels. */
static void test_access_loopback_admin(void **state)
{
	struct fixture *f = *state;
	struct tsd_test_conn *c = tsd_test_connect(f->d, TSD_TEST_TCP);
	assert_non_null(c);
	fill_q(c);
	expect(c, "{'op':'alter','table':'q','ttl':'1h'}", "{'ok':true}\n");
	expect(c, "{'op':'flush'}", "{'ok':true}\n");
	expect(c, "{'op':'check'}", "{'ok':true,'count':0,'problems':[]}\n");
	expect(c, "{'op':'drop','table':'q'}", "{'ok':true}\n");
	expect(c, "{'op':'tables'}", "{'ok':true,'tables':[]}\n");
	tsd_test_close(c);
}

/* --loopback-access read: queries, not inserts nor creates. */
static void test_access_loopback_read(void **state)
{
	struct fixture *f = *state;
	struct tsd_test_conn *c = tsd_test_connect(f->d, TSD_TEST_TCP);
	assert_non_null(c);
	fill_q(f->c); /* over the unix socket */
	assert_int_equal(count_rows(c, "q"), 12);
	expect(c, "{'op':'latest','table':'q','prefix':['c']}",
	       "{'ok':true,'row':['c',1735700402000000000,3,23.5]}\n");
	expect_error(c, "{'op':'insert','id':2,'table':'q','rows':[['d',1735689600000000000,1,1]]}",
	             "EAUTH", "\"insert\" is a write operation: use the unix socket, or start tsstored "
	             "with a token (--token FILE) and send it ({\"op\":\"auth\",\"token\":…}); "
	             "loopback-access is read");
	expect_refusal(c, "{'op':'create','table':'z','columns':[{'name':'ts','type':'timestamp'}],"
	                  "'key':['ts']}", refusal("create", "write", 0, "read"));
	expect_refusal(c, "{'op':'drop','table':'q'}", refusal("drop", "admin", 0, "read"));
	assert_int_equal(count_rows(c, "q"), 12);
	expect(c, "{'op':'tables'}", "{'ok':true,'tables':['q']}\n");
	tsd_test_close(c);
}

/* --loopback-access none: not even a ping (nor "auth", with no token). */
static void test_access_loopback_none(void **state)
{
	struct fixture *f = *state;
	struct tsd_test_conn *c = tsd_test_connect(f->d, TSD_TEST_TCP);
	char *m = refusal("ping", "read", 0, "none");
	assert_non_null(c);
	expect_eauth(c, "{'op':'ping','id':1}", m);
	free(m);
	expect_eauth(c, "{'op':'auth','token':'x'}",
	             "this tsstored has no token (--token FILE): there is nothing to authenticate with");
	m = refusal("query", "read", 0, "none");
	expect_eauth(c, "{'op':'query','table':'q'}", m);
	free(m);
	tsd_test_close(c);
	ping_ok(f->c);
}

/* A token and --loopback-access write: loopback clients insert without
 * it; drop needs it, and runs once it was sent. */
static void test_access_token_write(void **state)
{
	struct fixture *f = *state;
	struct tsd_test_conn *c = tsd_test_connect(f->d, TSD_TEST_TCP);
	assert_non_null(c);
	fill_q(c);
	expect_error(c, "{'op':'drop','table':'q'}", "EAUTH",
	             "\"drop\" is an admin operation: send the token ({\"op\":\"auth\",\"token\":…}) "
	             "or use the unix socket; loopback-access is write");
	expect(c, "{'op':'auth','token':'s3cret'}", "{'ok':true}\n");
	expect(c, "{'op':'drop','table':'q'}", "{'ok':true}\n");
	expect(c, "{'op':'tables'}", "{'ok':true,'tables':[]}\n");
	tsd_test_close(c);
}

/* The port the daemon's log says its listener kind ("tcp", "http") on
 * 0.0.0.0 got (it opens after the test's own listeners: waited for), or
 * -1. */
static int wildcard_port(const struct tsd_test_daemon *d, const char *kind)
{
	char line[1024], *prefix = tsd_test_fmt("tsstored: listening on %s:0.0.0.0:", kind);
	int port = -1;
	for (int tries = 0; port < 0 && tries < WAIT / 10; tries++) {
		FILE *fp = fopen(d->log, "r");
		while (fp && port < 0 && fgets(line, sizeof line, fp))
			if (strncmp(line, prefix, strlen(prefix)) == 0)
				port = atoi(line + strlen(prefix));
		if (fp)
			fclose(fp);
		if (port < 0)
			tsd_test_sleep_ms(10);
	}
	free(prefix);
	return port;
}

/* A listener outside the loopback range (0.0.0.0, reached here through
 * 127.0.0.1): nothing without the token, whatever loopback-access says;
 * everything with it.  HTTP alike. */
static void test_access_remote(void **state)
{
	struct fixture *f = *state;
	struct tsd_test_daemon view = *f->d;
	struct tsd_test_conn *c, *h;
	char *line = NULL;
	static const char metrics[] = "GET /metrics HTTP/1.1\r\nHost: t\r\n\r\n";
	view.port = wildcard_port(f->d, "tcp");
	view.http_port = wildcard_port(f->d, "http");
	assert_true(view.port > 0 && view.http_port > 0);
	assert_non_null(c = tsd_test_connect(&view, TSD_TEST_TCP));
	expect_eauth(c, "{'op':'ping','id':1}",
	             "\"ping\" is a read operation: send the token ({\"op\":\"auth\",\"token\":…}) "
	             "or use the unix socket; this listener is not on the loopback");
	expect(c, "{'op':'auth','token':'s3cret'}", "{'ok':true}\n");
	fill_q(c);
	expect(c, "{'op':'drop','table':'q'}", "{'ok':true}\n");
	tsd_test_close(c);
	/* the loopback listener of the same daemon: loopback-access */
	assert_non_null(c = tsd_test_connect(f->d, TSD_TEST_TCP));
	expect(c, "{'op':'tables'}", "{'ok':true,'tables':[]}\n");
	tsd_test_close(c);
	assert_non_null(h = tsd_test_connect(&view, TSD_TEST_HTTP));
	assert_int_equal(tsd_test_send(h, metrics, strlen(metrics)), 0);
	assert_int_equal(tsd_test_read_line(h, WAIT, &line, NULL), TSD_TEST_LINE);
	assert_string_equal(line, "HTTP/1.1 401 Unauthorized\r");
	free(line);
	tsd_test_close(h);
}

/* With a token and no loopback-access (none), every request on TCP but
 * auth needs the token, as before the levels. */
static void test_auth_tcp_required(void **state)
{
	struct fixture *f = *state;
	struct tsd_test_conn *c = tsd_test_connect(f->d, TSD_TEST_TCP);
	char *m;
	assert_non_null(c);
	/* Refused, but the connection stays usable. */
	expect_eauth(c, "{'op':'ping','id':1}",
	             "\"ping\" is a read operation: send the token ({\"op\":\"auth\",\"token\":…}) "
	             "or use the unix socket; loopback-access is none");
	m = refusal("tables", "read", 1, "none");
	expect_eauth(c, "{'op':'tables','id':2}", m);
	free(m);
	m = refusal("ping", "read", 1, "none");
	expect_eauth(c, "{'op':'ping','table':'x'}", m); /* before field checks */
	free(m);
	m = refusal("create", "write", 1, "none");
	expect_eauth(c, "{'op':'create','table':'q','columns':[{'name':'ts','type':'timestamp'}],"
	                "'key':['ts']}", m);
	free(m);
	expect(c, "{'op':'auth','id':3,'token':'s3cret'}", "{'id':3,'ok':true}\n");
	ping_ok(c);
	expect(c, "{'op':'tables'}", "{'ok':true,'tables':[]}\n");
	tsd_test_close(c);
}

/* A wrong token gets EAUTH and the connection closed; a request sent
 * behind it is not run. */
static void expect_refused(struct tsd_test_daemon *d, const char *token)
{
	struct tsd_test_conn *c = tsd_test_connect(d, TSD_TEST_TCP);
	char *in = tsd_test_fmt("{\"op\":\"auth\",\"id\":1,\"token\":\"%s\"}\n{\"op\":\"ping\",\"id\":2}\n", token);
	char *want = error_line("1", "EAUTH", "wrong token; closing the connection"), *got = NULL;
	assert_non_null(c);
	assert_int_equal(tsd_test_send(c, in, strlen(in)), 0);
	assert_int_equal(tsd_test_read_response(c, WAIT, NULL, &got), 0);
	assert_string_equal(got, want);
	free(got);
	assert_int_equal(tsd_test_read_line(c, WAIT, &got, NULL), TSD_TEST_EOF);
	tsd_test_close(c);
	free(want);
	free(in);
}

static void test_auth_wrong_token_closes(void **state)
{
	struct fixture *f = *state;
	struct tsd_test_conn *c;
	expect_refused(f->d, "wrong");
	expect_refused(f->d, "s3cre");
	expect_refused(f->d, "s3cret2");
	expect_refused(f->d, "S3cret");
	expect_refused(f->d, "");
	/* The token and junk after a NUL: the whole string is compared,
	 * never the C string that ends at the NUL. */
	expect_refused(f->d, "s3cret\\u0000junk");
	expect_refused(f->d, "s3cret\\u0000");
	/* The good token still opens a new connection. */
	assert_non_null(c = tsd_test_connect(f->d, TSD_TEST_TCP));
	expect(c, "{'op':'auth','token':'s3cret'}", "{'ok':true}\n");
	ping_ok(c);
	tsd_test_close(c);
}

static void test_auth_unix_free(void **state)
{
	struct fixture *f = *state;
	ping_ok(f->c);
	fill_q(f->c);
	assert_int_equal(count_rows(f->c, "q"), 12);
	expect(f->c, "{'op':'auth','token':'s3cret'}", "{'ok':true}\n");
}

/* Whether the daemon's log holds needle. */
static int log_has(const struct tsd_test_daemon *d, const char *needle)
{
	char line[1024];
	int found = 0;
	FILE *fp = fopen(d->log, "r");
	if (!fp)
		return 0;
	while (!found && fgets(line, sizeof line, fp))
		found = strstr(line, needle) != NULL;
	fclose(fp);
	return found;
}

/* Write n bytes to DIR/name; the path goes to path. */
static void write_file(const struct tsd_test_daemon *d, const char *name, const char *p,
                       size_t n, char *path, size_t size)
{
	FILE *fp;
	snprintf(path, size, "%s/%s", d->dir, name);
	assert_non_null(fp = fopen(path, "w"));
	assert_int_equal(fwrite(p, 1, n, fp), n);
	assert_int_equal(fclose(fp), 0);
}

/* A NUL in a config line or in the token file is refused at start: read
 * as a C string it would cut the value short ("s3cret\0junk" would let
 * "s3cret" in). */
static void test_config_nul_refused(void **state)
{
	static const char conf[] = "workers = 2\0junk\n";
	static const char token[] = "s3cret\0junk\n";
	struct tsd_test_daemon *d = tsd_test_daemon_new();
	char path[TSD_TEST_PATH_MAX], want[TSD_TEST_PATH_MAX + 64];
	(void)state;
	assert_non_null(d);
	write_file(d, "conf", conf, sizeof conf - 1, path, sizeof path);
	const char *args1[] = {"--config", path, NULL};
	assert_int_equal(tsd_test_daemon_start(d, args1), -1);
	snprintf(want, sizeof want, "%s:1: a NUL byte in the line", path);
	assert_true(log_has(d, want));
	write_file(d, "token", token, sizeof token - 1, path, sizeof path);
	const char *args2[] = {"--token", path, NULL};
	assert_int_equal(tsd_test_daemon_start(d, args2), -1);
	snprintf(want, sizeof want, "--token: %s: the token holds a NUL byte", path);
	assert_true(log_has(d, want));
	tsd_test_daemon_free(d);
}

/* The scheduler's settings out of range stop the daemon before it opens
 * the database, with the message naming the option (or the file and
 * line): 0 would mean the library's default, and the share is a
 * percentage. */
static void test_scheduler_settings_refused(void **state)
{
	struct tsd_test_daemon *d = tsd_test_daemon_new();
	char path[TSD_TEST_PATH_MAX], want[TSD_TEST_PATH_MAX + 64];
	static const char conf[] = "# scheduler\nmaint-busy-share = 101\n";
	static const char *const share0[] = {"--maint-busy-share", "0", NULL};
	static const char *const share101[] = {"--maint-busy-share", "101", NULL};
	static const char *const rows0[] = {"--merge-slice-rows", "0", NULL};
	static const char *const window0[] = {"--maint-busy-window", "0", NULL};
	static const char *const threads0[] = {"--flush-threads", "0", NULL};
	static const char *const threads9[] = {"--flush-threads", "9", NULL};
	(void)state;
	assert_non_null(d);
	assert_int_equal(tsd_test_daemon_start(d, share0), -1);
	assert_true(log_has(d, "tsstored: --maint-busy-share: maint-busy-share: \"0\" is not a "
	                       "positive integer"));
	assert_int_equal(tsd_test_daemon_start(d, share101), -1);
	assert_true(log_has(d, "tsstored: --maint-busy-share: maint-busy-share: \"101\" is out of "
	                       "range"));
	assert_int_equal(tsd_test_daemon_start(d, rows0), -1);
	assert_true(log_has(d, "tsstored: --merge-slice-rows: merge-slice-rows: \"0\" is not a "
	                       "positive integer"));
	assert_int_equal(tsd_test_daemon_start(d, window0), -1);
	assert_true(log_has(d, "tsstored: --maint-busy-window: maint-busy-window: \"0\" is out of "
	                       "range"));
	assert_int_equal(tsd_test_daemon_start(d, threads0), -1);
	assert_true(log_has(d, "tsstored: --flush-threads: flush-threads: \"0\" is not a "
	                       "positive integer"));
	assert_int_equal(tsd_test_daemon_start(d, threads9), -1);
	assert_true(log_has(d, "tsstored: --flush-threads: flush-threads: \"9\" is out of range"));
	write_file(d, "conf", conf, sizeof conf - 1, path, sizeof path);
	const char *args[] = {"--config", path, NULL};
	assert_int_equal(tsd_test_daemon_start(d, args), -1);
	snprintf(want, sizeof want, "tsstored: %s:2: maint-busy-share: \"101\" is out of range", path);
	assert_true(log_has(d, want));
	tsd_test_daemon_free(d);
}

/* ---- The request memory budget, idle lines, max-connections ---- */

#define MEM_CONNS 24
#define MEM_LINE (400 << 10)        /* bytes of each long request line */
#define MEM_BUDGET (1 << 20)        /* --max-request-memory */
#define MEM_LINE_MAX (512 << 10)    /* --line-max */
/* What the daemon may hold at most (daemon/server.c, fits): the budget;
 * one input chunk (64 KiB) for each connection that holds nothing else;
 * and the favoured connection's input buffer, at most twice its line. */
#define MEM_BOUND (MEM_BUDGET + (MEM_CONNS + 1) * (64 << 10) + 2 * MEM_LINE_MAX)

static int setup_memory(void **state)
{
	static const char *const args[] = {"--max-request-memory", "1M", "--line-max", "512k", NULL};
	return start_fixture(state, args, 0);
}

/* The daemon's own counters ({"op":"stats"}), one object. */
static json_t *daemon_stats(struct tsd_test_conn *c)
{
	json_t *lines = NULL, *st;
	assert_int_equal(tsd_test_send_line(c, "{\"op\":\"stats\"}"), 0);
	assert_int_equal(tsd_test_read_response(c, WAIT, &lines, NULL), 0);
	assert_int_equal(json_array_size(lines), 1);
	st = json_incref(json_array_get(lines, 0));
	json_decref(lines);
	return st;
}

static int64_t mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Wait until the daemon counts n open connections (it sees a client's
 * close a moment after the client made it). */
static void wait_connections(struct tsd_test_conn *c, json_int_t n)
{
	int64_t deadline = mono_ms() + 4 * WAIT;
	for (;;) {
		json_t *st = daemon_stats(c);
		json_int_t open = stat_int(st, "connections");
		json_decref(st);
		if (open == n)
			break;
		assert_true(mono_ms() < deadline);
		nanosleep(&(struct timespec){0, 5000000}, NULL);
	}
}

/* A client sending one long ping (its "id" and MEM_LINE bytes of blanks):
 * all but the last "}\n" at once, the rest once *go is set. */
struct long_line {
	pthread_t thread;
	struct tsd_test_conn *c;
	int id;
	atomic_int *go;
	int sent, answered;
};

static void *long_line_main(void *arg)
{
	struct long_line *l = arg;
	char *line = malloc(MEM_LINE), *got = NULL;
	int n;
	if (!line)
		return NULL;
	n = snprintf(line, MEM_LINE, "{\"op\":\"ping\",\"id\":%d", l->id);
	memset(line + n, ' ', MEM_LINE - (size_t)n);
	l->sent = tsd_test_send(l->c, line, MEM_LINE) == 0;
	while (l->sent && !atomic_load(l->go))
		nanosleep(&(struct timespec){0, 1000000}, NULL);
	char *want = tsd_test_fmt("{\"id\":%d,\"ok\":true,\"version\":\"" TS_VERSION_STRING "\"}\n", l->id);
	if (l->sent && tsd_test_send(l->c, "}\n", 2) == 0 &&
	    tsd_test_read_response(l->c, WAIT, NULL, &got) == 0)
		l->answered = strcmp(got, want) == 0;
	free(want);
	free(got);
	free(line);
	return NULL;
}

/* Many connections each in the middle of a long line: the daemon stops
 * reading past --max-request-memory (its accounting stays under the
 * bound), answers a short request meanwhile, and -- one
 * connection at a time being let past the budget to finish its line --
 * answers every long line once the clients finish them: no deadlock.
 * (Before the budget, the daemon read all 24 partial lines: RssAnon
 * grew by about 10 MB against a bound of 3.6 MB, and this test failed
 * with that message.) */
static void test_memory_budget(void **state)
{
	/* Static: a failed assertion leaves the threads running. */
	static struct long_line l[MEM_CONNS];
	static atomic_int go;
	struct fixture *f = *state;
	long rss0 = tsd_test_daemon_status_kb(f->d, "RssAnon"), rss = rss0;
	int64_t deadline = mono_ms() + 4 * WAIT;
	json_t *st;
	assert_true(rss0 > 0);
	atomic_store(&go, 0);
	for (int i = 0; i < MEM_CONNS; i++) {
		l[i] = (struct long_line){.id = i, .go = &go};
		assert_non_null(l[i].c = tsd_test_connect(f->d, TSD_TEST_UNIX));
		assert_int_equal(pthread_create(&l[i].thread, NULL, long_line_main, &l[i]), 0);
	}
	/* Wait until the daemon holds a reader paused (or, without a budget,
	 * until it has read far more than the bound).  Both counters of the
	 * same snapshot: a reader paused and already resumed when the stats
	 * were taken (read_pauses > 0, connections_paused 0) failed this test
	 * once on a loaded machine; with every long line held until go, one
	 * stays paused. */
	for (;;) {
		st = daemon_stats(f->c);
		rss = tsd_test_daemon_status_kb(f->d, "RssAnon");
		json_t *pauses = json_object_get(st, "read_pauses");
		if ((json_integer_value(pauses) > 0 &&
		     json_integer_value(json_object_get(st, "connections_paused")) > 0) ||
		    (!pauses && (rss - rss0) * 1024 > MEM_BOUND))
			break;
		json_decref(st);
		assert_true(mono_ms() < deadline);
		nanosleep(&(struct timespec){0, 5000000}, NULL);
	}
	if (!json_object_get(st, "read_pauses"))
		fail_msg("no backpressure: RssAnon grew by %ld kB, the bound is %d kB",
		         rss - rss0, MEM_BOUND >> 10);
	assert_true(stat_int(st, "read_pauses") > 0);
	assert_true(stat_int(st, "connections_paused") > 0);
	assert_true(stat_int(st, "request_memory") <= MEM_BOUND);
	json_decref(st);
	ping_ok(f->c); /* short requests are still read */
	atomic_store(&go, 1);
	for (int i = 0; i < MEM_CONNS; i++) {
		assert_int_equal(pthread_join(l[i].thread, NULL), 0);
		assert_true(l[i].sent);
		assert_true(l[i].answered);
		tsd_test_close(l[i].c);
	}
	/* Everything released: what is held is the stats line itself. */
	wait_connections(f->c, 1);
	st = daemon_stats(f->c);
	if (getenv("TSD_TEST_VERBOSE"))
		json_dumpf(st, stderr, 0);
	assert_int_equal(stat_int(st, "request_memory"), strlen("{\"op\":\"stats\"}"));
	assert_int_equal(stat_int(st, "connections_paused"), 0);
	assert_true(stat_int(st, "request_memory_peak") <= MEM_BOUND);
	assert_true(stat_int(st, "request_memory_peak") > MEM_BUDGET / 2);
	json_decref(st);
}

/* A client pipelining pings of random sizes (10 B to 300 KiB of
 * blanks), each sent in random pieces (1 byte to whole), on its own
 * thread, while another thread of it reads: every ping must be answered,
 * in order. */
#define RANDOM_CLIENTS 24
#define RANDOM_PINGS 12

struct random_client {
	pthread_t sender, reader;
	struct tsd_test_conn *c;
	uint64_t seed;
	int sent, answered;
};

static uint64_t next_rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static void *random_sender(void *arg)
{
	static const size_t sizes[] = {10, 100, 1000, 50 << 10, 200 << 10, 300 << 10};
	struct random_client *rc = arg;
	uint64_t s = rc->seed;
	for (int i = 0; i < RANDOM_PINGS; i++) {
		size_t pad = sizes[next_rnd(&s) % 6], n, at = 0;
		char head[40], *line;
		int h = snprintf(head, sizeof head, "{\"op\":\"ping\",\"id\":%d", i);
		n = (size_t)h + pad + 2;
		if (!(line = malloc(n)))
			return NULL;
		memcpy(line, head, (size_t)h);
		memset(line + h, ' ', pad);
		memcpy(line + n - 2, "}\n", 2);
		while (at < n) {
			static const size_t steps[] = {1, 100, 4096, 64 << 10, SIZE_MAX};
			size_t step = steps[next_rnd(&s) % 5];
			step = step > n - at ? n - at : step;
			if (tsd_test_send(rc->c, line + at, step) < 0)
				break;
			at += step;
		}
		free(line);
		if (at < n)
			return NULL;
		rc->sent++;
	}
	return NULL;
}

static void *random_reader(void *arg)
{
	struct random_client *rc = arg;
	for (int i = 0; i < RANDOM_PINGS; i++) {
		char *got = NULL, *want = malloc(80);
		if (!want)
			return NULL;
		snprintf(want, 80, "{\"id\":%d,\"ok\":true,\"version\":\"" TS_VERSION_STRING "\"}\n", i);
		int ok = tsd_test_read_response(rc->c, 4 * WAIT, NULL, &got) == 0 &&
		         strcmp(got, want) == 0;
		free(got);
		free(want);
		if (!ok)
			return NULL;
		rc->answered++;
	}
	return NULL;
}

/* Many clients, lines of every size in pieces of every size, a budget
 * (1M) far under what they send at once: no client is starved for ever
 * and no deadlock, and afterwards nothing is held. */
static void test_memory_budget_random_clients(void **state)
{
	static struct random_client rc[RANDOM_CLIENTS]; /* threads outlive a failure */
	struct fixture *f = *state;
	json_t *st;
	for (int i = 0; i < RANDOM_CLIENTS; i++) {
		rc[i] = (struct random_client){.seed = 0x9E3779B97F4A7C15u * (uint64_t)(i + 1)};
		assert_non_null(rc[i].c = tsd_test_connect(f->d, TSD_TEST_UNIX));
		assert_int_equal(pthread_create(&rc[i].sender, NULL, random_sender, &rc[i]), 0);
		assert_int_equal(pthread_create(&rc[i].reader, NULL, random_reader, &rc[i]), 0);
	}
	for (int i = 0; i < RANDOM_CLIENTS; i++) {
		assert_int_equal(pthread_join(rc[i].sender, NULL), 0);
		assert_int_equal(pthread_join(rc[i].reader, NULL), 0);
		assert_int_equal(rc[i].sent, RANDOM_PINGS);
		assert_int_equal(rc[i].answered, RANDOM_PINGS);
		tsd_test_close(rc[i].c);
	}
	wait_connections(f->c, 1);
	st = daemon_stats(f->c);
	assert_int_equal(stat_int(st, "request_memory"), strlen("{\"op\":\"stats\"}"));
	assert_int_equal(stat_int(st, "connections_paused"), 0);
	assert_true(stat_int(st, "read_pauses") > 0);
	json_decref(st);
}

/* A line longer than the budget completes, and one longer than both the
 * budget and line-max still gets its ETOOBIG (the connection is let
 * past the budget to reach the limit). */
static void test_memory_budget_line_too_long(void **state)
{
	struct fixture *f = *state;
	size_t n = (256 << 10) + 1;
	char *line = malloc(n), *ok = padded_ping(200 << 10);
	assert_non_null(line);
	/* Three times the budget, under line-max: served. */
	expect(f->c, ok, "{'id':'pad','ok':true,'version':'" TS_VERSION_STRING "'}\n");
	free(ok);
	memset(line, ' ', n);
	memcpy(line, "{\"op\":\"ping\"", 12);
	/* One byte past line-max (256k), four times the budget (64k):
	 * ETOOBIG, then EOF. */
	assert_int_equal(tsd_test_send(f->c, line, n), 0);
	expect_too_big_then_eof(f->c);
	free(line);
}

static int setup_memory_small(void **state)
{
	static const char *const args[] = {"--max-request-memory", "64k", "--line-max", "256k",
	                                   NULL};
	return start_fixture(state, args, 0);
}

static int setup_memory_stall(void **state)
{
	static const char *const args[] = {"--max-request-memory", "64k", "--line-stall-timeout",
	                                   "1s", NULL};
	return start_fixture(state, args, 0);
}

/* A client that is let past the budget to finish its line (the longest
 * partial line) and then stops sending, with no idle-timeout, is closed
 * with an EBUSY line once it has sent nothing for line-stall-timeout
 * while another connection waits for memory; the waiting connection's
 * long line is then read and answered.  (Before line-stall-timeout,
 * the waiting connection was never read again: this test failed with
 * its response timing out.) */
static void test_memory_budget_stalled_favour(void **state)
{
	static const char stalled[] =
		"{\"ok\":false,\"error\":{\"code\":\"EBUSY\",\"message\":\"line not finished: "
		"nothing received for 1000 ms while other connections wait for request memory "
		"(line-stall-timeout); closing the connection\"}}";
	struct fixture *f = *state;
	struct tsd_test_conn *a = tsd_test_connect(f->d, TSD_TEST_UNIX), *b = NULL;
	int64_t deadline = mono_ms() + 4 * WAIT;
	char *part = padded_ping(100 << 10), *whole = padded_ping(100 << 10), *line = NULL;
	json_t *st;
	assert_non_null(a);
	/* A: all of a long line but its "}", then nothing. */
	assert_int_equal(tsd_test_send(a, part, strlen(part) - 1), 0);
	/* It holds more than the budget only once favoured (its input
	 * doubled past 64 KiB to 128 KiB). */
	for (;;) {
		st = daemon_stats(f->c);
		json_int_t used = stat_int(st, "request_memory");
		json_decref(st);
		if (used >= (128 << 10))
			break;
		assert_true(mono_ms() < deadline);
		nanosleep(&(struct timespec){0, 5000000}, NULL);
	}
	/* B: a whole long line, which has to wait for memory. */
	assert_non_null(b = tsd_test_connect(f->d, TSD_TEST_UNIX));
	expect(b, whole, "{'id':'pad','ok':true,'version':'" TS_VERSION_STRING "'}\n");
	assert_int_equal(tsd_test_read_line(a, WAIT, &line, NULL), TSD_TEST_LINE);
	assert_string_equal(line, stalled);
	free(line);
	assert_int_equal(tsd_test_read_line(a, WAIT, &line, NULL), TSD_TEST_EOF);
	tsd_test_close(a);
	tsd_test_close(b);
	wait_connections(f->c, 1);
	st = daemon_stats(f->c);
	assert_int_equal(stat_int(st, "connections_timed_out"), 1);
	assert_int_equal(stat_int(st, "connections_paused"), 0);
	assert_int_equal(stat_int(st, "request_memory"), strlen("{\"op\":\"stats\"}"));
	json_decref(st);
	free(part);
	free(whole);
}

static int setup_idle(void **state)
{
	static const char *const args[] = {"--idle-timeout", "300ms", NULL};
	return start_fixture(state, args, 0);
}

/* A client that sends a line a byte at a time, each byte well within
 * idle-timeout of the last, is cut once the line has taken longer than
 * idle-timeout; a connection answering its requests is not. */
static void test_idle_partial_line(void **state)
{
	struct fixture *f = *state;
	struct tsd_test_conn *d = tsd_test_connect(f->d, TSD_TEST_UNIX);
	int64_t deadline = mono_ms() + 4 * WAIT;
	int rc = TSD_TEST_TIMEOUT;
	char *line = NULL;
	json_t *st;
	assert_non_null(d);
	assert_int_equal(tsd_test_send(d, "{", 1), 0);
	while (rc == TSD_TEST_TIMEOUT) {
		if (tsd_test_send(d, " ", 1) < 0)
			break; /* closed while sending */
		rc = tsd_test_read_line(d, 50, &line, NULL);
		assert_true(mono_ms() < deadline);
	}
	assert_true(rc == TSD_TEST_TIMEOUT || rc == TSD_TEST_EOF || rc == TSD_TEST_ERROR);
	assert_null(line);
	tsd_test_close(d);
	/* The fixture's connection, idle since before the line began, is
	 * closed too: by the same sweep at the latest. */
	assert_int_equal(tsd_test_read_line(f->c, WAIT, &line, NULL), TSD_TEST_EOF);
	assert_non_null(d = tsd_test_connect(f->d, TSD_TEST_UNIX));
	st = daemon_stats(d);
	assert_int_equal(stat_int(st, "connections_timed_out"), 2);
	json_decref(st);
	tsd_test_close(d);
}

static int setup_max_connections(void **state)
{
	static const char *const args[] = {"--max-connections", "3", NULL};
	return start_fixture(state, args, 0);
}

/* The connection past max-connections gets one EBUSY line, then EOF;
 * the others are served, and once one closes a new one is served. */
static void test_max_connections(void **state)
{
	struct fixture *f = *state;
	struct tsd_test_conn *c[3] = {NULL};
	char *got = NULL;
	json_t *st;
	/* The start's probes may not be closed yet: wait until only the
	 * fixture's connection is open. */
	wait_connections(f->c, 1);
	for (int i = 0; i < 2; i++) {
		assert_non_null(c[i] = tsd_test_connect(f->d, i ? TSD_TEST_TCP : TSD_TEST_UNIX));
		ping_ok(c[i]);
	}
	assert_non_null(c[2] = tsd_test_connect(f->d, TSD_TEST_UNIX));
	assert_int_equal(tsd_test_read_response(c[2], WAIT, NULL, &got), 0);
	assert_string_equal(got, "{\"ok\":false,\"error\":{\"code\":\"EBUSY\","
	                         "\"message\":\"too many connections\"}}\n");
	free(got);
	got = NULL;
	assert_int_equal(tsd_test_read_line(c[2], WAIT, &got, NULL), TSD_TEST_EOF);
	tsd_test_close(c[2]);
	st = daemon_stats(f->c);
	assert_int_equal(stat_int(st, "connections_refused"), 1);
	json_decref(st);
	/* One leaves: a new connection is served once the daemon has seen
	 * it go. */
	tsd_test_close(c[1]);
	wait_connections(f->c, 2);
	assert_non_null(c[1] = tsd_test_connect(f->d, TSD_TEST_TCP));
	ping_ok(c[1]);
	tsd_test_close(c[1]);
	tsd_test_close(c[0]);
}

/* ---- Signals and restarts ---- */

/* Wait until the daemon's log file `path` holds needle; fail if the
 * daemon dies first. */
static void wait_log(struct tsd_test_daemon *d, const char *path, const char *needle)
{
	int64_t deadline = mono_ms() + 4 * WAIT;
	struct tsd_test_daemon view = *d;
	snprintf(view.log, sizeof view.log, "%s", path);
	while (!log_has(&view, needle)) {
		if (!tsd_test_daemon_alive(d))
			fail_msg("the daemon died before logging \"%s\"", needle);
		assert_true(mono_ms() < deadline);
		nanosleep(&(struct timespec){0, 5000000}, NULL);
	}
}

/* SIGHUP reloads and the daemon serves on; SIGTERM then stops it with
 * status 0 and removes its socket.  (Before, SIGHUP killed it: status
 * 129, socket left behind.) */
static void test_sighup_serves_on(void **state)
{
	struct fixture *f = *state;
	struct stat st;
	fill_q(f->c);
	assert_int_equal(kill(f->d->pid, SIGHUP), 0);
	wait_log(f->d, f->d->log, "tsstored: reloaded");
	ping_ok(f->c);
	assert_int_equal(count_rows(f->c, "q"), 12);
	assert_int_equal(kill(f->d->pid, SIGHUP), 0); /* and again */
	ping_ok(f->c);
	assert_int_equal(tsd_test_daemon_stop(f->d, WAIT), 0);
	assert_int_equal(stat(f->d->sock, &st), -1);
	assert_int_equal(errno, ENOENT);
}

/* Write text to DIR/name. */
static void put_file(const struct tsd_test_daemon *d, const char *name, const char *text)
{
	char path[TSD_TEST_PATH_MAX];
	write_file(d, name, text, strlen(text), path, sizeof path);
}

/* Auth over a new TCP connection with token: ok, or refused. */
static void expect_auth(struct tsd_test_daemon *d, const char *token)
{
	struct tsd_test_conn *c = tsd_test_connect(d, TSD_TEST_TCP);
	char *req = tsd_test_fmt("{'op':'auth','token':'%s'}", token);
	assert_non_null(c);
	expect(c, req, "{'ok':true}\n");
	ping_ok(c);
	tsd_test_close(c);
	free(req);
}

/* SIGHUP with a changed config file: the new token holds for new
 * connections (one authenticated before stays so), the new line-max
 * applies, the log file is reopened (rotation), what needs a restart
 * is reported; a config that does not load changes nothing. */
static void test_sighup_reload(void **state)
{
	struct tsd_test_daemon *d = tsd_test_daemon_new();
	struct tsd_test_conn *a = NULL, *u = NULL;
	char conf[TSD_TEST_PATH_MAX], logf[TSD_TEST_PATH_MAX - 8], old[TSD_TEST_PATH_MAX];
	char *text, *big = padded_ping(2000);
	(void)state;
	assert_non_null(d);
	snprintf(conf, sizeof conf, "%s/conf", d->dir);
	snprintf(logf, sizeof logf, "%s/tsd.log", d->dir);
	snprintf(old, sizeof old, "%s.1", logf);
	put_file(d, "token", "s3cret\n");
	text = tsd_test_fmt("token = %s/token\nlog-file = %s\nline-max = 4k\n", d->dir, logf);
	put_file(d, "conf", text);
	free(text);
	const char *args[] = {"--config", conf, NULL};
	assert_int_equal(tsd_test_daemon_start(d, args), 0);
	assert_non_null(a = tsd_test_connect(d, TSD_TEST_TCP));
	expect(a, "{'op':'auth','token':'s3cret'}", "{'ok':true}\n");
	assert_non_null(u = tsd_test_connect(d, TSD_TEST_UNIX));
	expect(u, big, "{'id':'pad','ok':true,'version':'" TS_VERSION_STRING "'}\n");
	/* The new configuration; the log rotated away. */
	put_file(d, "token", "n3w\n");
	text = tsd_test_fmt("token = %s/token\nlog-file = %s\nline-max = 1k\nworkers = 2\n", d->dir, logf);
	put_file(d, "conf", text);
	free(text);
	assert_int_equal(rename(logf, old), 0);
	assert_int_equal(kill(d->pid, SIGHUP), 0);
	wait_log(d, logf, "tsstored: reloaded");
	expect_refused(d, "s3cret");
	expect_auth(d, "n3w");
	ping_ok(a); /* authenticated before the reload */
	assert_int_equal(tsd_test_send_line(u, big), 0);
	expect_too_big_then_eof(u);
	tsd_test_close(u);
	/* What the logs say. */
	struct tsd_test_daemon view = *d;
	snprintf(view.log, sizeof view.log, "%s", old);
	assert_true(log_has(&view, "tsstored: serving "));
	snprintf(view.log, sizeof view.log, "%s", logf);
	assert_true(log_has(&view, "tsstored: reload: token: changed"));
	assert_true(log_has(&view, "tsstored: reload: line-max: 4096 -> 1024"));
	assert_true(log_has(&view, "tsstored: reload: workers changed: it takes effect only at "
	                           "the next start"));
	/* A config that does not load: nothing changes. */
	put_file(d, "conf", "workers = many\n");
	assert_int_equal(kill(d->pid, SIGHUP), 0);
	wait_log(d, logf, "reload failed: still serving with the configuration as it was");
	expect_auth(d, "n3w");
	ping_ok(a);
	tsd_test_close(a);
	assert_int_equal(tsd_test_daemon_stop(d, WAIT), 0);
	tsd_test_daemon_free(d);
	free(big);
}

/* SIGHUP applies a new loopback-access to the requests that follow,
 * on connections already open too; a bad value changes nothing. */
static void test_access_reload(void **state)
{
	struct tsd_test_daemon *d = tsd_test_daemon_new();
	struct tsd_test_conn *c = NULL, *u = NULL;
	char conf[TSD_TEST_PATH_MAX], *m;
	(void)state;
	assert_non_null(d);
	snprintf(conf, sizeof conf, "%s/conf", d->dir);
	put_file(d, "conf", "loopback-access = read\n");
	const char *args[] = {"--config", conf, NULL};
	assert_int_equal(tsd_test_daemon_start(d, args), 0);
	assert_non_null(u = tsd_test_connect(d, TSD_TEST_UNIX));
	assert_non_null(c = tsd_test_connect(d, TSD_TEST_TCP));
	fill_q(u);
	m = refusal("drop", "admin", 0, "read");
	expect_error(c, "{'op':'drop','table':'q'}", "EAUTH", m);
	free(m);
	put_file(d, "conf", "loopback-access = admin\n");
	assert_int_equal(kill(d->pid, SIGHUP), 0);
	wait_log(d, d->log, "tsstored: reloaded");
	assert_true(log_has(d, "tsstored: reload: loopback-access: read -> admin"));
	expect(c, "{'op':'alter','table':'q','ttl':'1h'}", "{'ok':true}\n");
	/* a value that does not load: nothing changes */
	put_file(d, "conf", "loopback-access = everything\n");
	assert_int_equal(kill(d->pid, SIGHUP), 0);
	wait_log(d, d->log, "reload failed: still serving with the configuration as it was");
	expect(c, "{'op':'drop','table':'q'}", "{'ok':true}\n");
	tsd_test_close(c);
	tsd_test_close(u);
	assert_int_equal(tsd_test_daemon_stop(d, WAIT), 0);
	tsd_test_daemon_free(d);
}

/* A socket left by a daemon killed with SIGKILL is replaced at the next
 * start. */
static void test_stale_socket_replaced(void **state)
{
	struct fixture *f = *state;
	struct stat st;
	fill_q(f->c);
	tsd_test_close(f->c);
	f->c = NULL;
	tsd_test_daemon_kill(f->d);
	assert_int_equal(stat(f->d->sock, &st), 0);
	assert_true(S_ISSOCK(st.st_mode));
	assert_int_equal(tsd_test_daemon_start(f->d, NULL), 0);
	assert_true(log_has(f->d, "removing the stale socket of a daemon that is gone"));
	assert_non_null(f->c = tsd_test_connect(f->d, TSD_TEST_UNIX));
	assert_int_equal(count_rows(f->c, "q"), 12);
}

/* A second daemon (another database) asked to listen on a live daemon's
 * socket refuses to start, and the first is unharmed: its socket file
 * is still there and it serves old and new connections. */
static void test_live_socket_refused(void **state)
{
	struct fixture *f = *state;
	struct tsd_test_daemon *d2 = tsd_test_daemon_new();
	struct tsd_test_conn *c;
	struct stat st;
	assert_non_null(d2);
	fill_q(f->c);
	memcpy(d2->sock, f->d->sock, sizeof d2->sock);
	assert_int_equal(tsd_test_daemon_start(d2, NULL), -1);
	assert_true(log_has(d2, "another daemon is listening there"));
	assert_int_equal(stat(f->d->sock, &st), 0);
	ping_ok(f->c);
	assert_non_null(c = tsd_test_connect(f->d, TSD_TEST_UNIX));
	assert_int_equal(count_rows(c, "q"), 12);
	tsd_test_close(c);
	tsd_test_daemon_free(d2);
	assert_int_equal(stat(f->d->sock, &st), 0);
}

/* ---- Anything a client sends ---- */

static uint64_t rng_state = 0x9E3779B97F4A7C15u;

static uint64_t rnd(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

/* A valid request with a few random edits (never a '\n', never empty). */
static char *mutated_request(void)
{
	static const char *const base[] = {
		"{\"op\":\"query\",\"table\":\"q\",\"prefix\":[\"a\"],\"limit\":3,\"desc\":true}",
		"{\"op\":\"insert\",\"table\":\"q\",\"rows\":[[\"z\",1735689600000000000,1,0.5]]}",
		"{\"op\":\"aggregate\",\"table\":\"q\",\"from\":0,\"to\":\"2025-01-02T00:00:00Z\","
		"\"every\":\"1h\",\"group\":1,\"columns\":{\"v\":[\"sum\",\"max\"]}}",
		"{\"op\":\"latest\",\"table\":\"q\",\"prefix\":[\"b\"],\"id\":[1,{\"x\":null}]}",
		"{\"op\":\"query\",\"table\":\"q\",\"ge\":[\"a\",\"2025-01-01T01:00:00Z\"],\"lt\":[\"c\"]}",
		"{\"op\":\"schema\",\"table\":\"q\"}",
		"{\"op\":\"stats\",\"table\":\"q\"}",
	};
	const char *b = base[rnd() % (sizeof base / sizeof base[0])];
	size_t n = strlen(b), edits = 1 + rnd() % 4;
	char *p = malloc(n + edits + 1);
	assert_non_null(p);
	memcpy(p, b, n + 1);
	for (size_t e = 0; e < edits && n > 1; e++) {
		size_t at = rnd() % n;
		char ch = (char)(1 + rnd() % 255);
		if (ch == '\n')
			ch = '{';
		switch (rnd() % 4) {
		case 0: p[at] = ch; break;                                   /* replace */
		case 1: memmove(p + at, p + at + 1, n - at); n--; break;     /* delete */
		case 2: memmove(p + at + 1, p + at, n - at + 1); p[at] = ch; n++; break;
		default: p[at + 1 < n ? at + 1 : n] = '\0'; n = strlen(p); break; /* cut */
		}
	}
	if (strspn(p, "\r") == strlen(p)) /* an empty line gets no response */
		p[0] = '[';
	return p;
}

static void test_bad_random_lines(void **state)
{
	struct fixture *f = *state;
	fill_q(f->c);
	for (int i = 0; i < 1000; i++) {
		char *req = mutated_request(), *got = tsd_test_call(f->c, req);
		if (!got)
			fail_msg("request %d, %s: no response", i, req);
		free(got);
		free(req);
	}
	ping_ok(f->c);
	assert_true(tsd_test_daemon_alive(f->d));
}

/* ---- The list ---- */

static enum tsd_test_transport unix_state = TSD_TEST_UNIX, tcp_state = TSD_TEST_TCP;

/* A test run once over each transport. */
#define BOTH(name, fn, set) \
	{"daemon_" name "_unix", fn, set, teardown, &unix_state}, \
	{"daemon_" name "_tcp", fn, set, teardown, &tcp_state}
#define ONCE(name, fn, set) {"daemon_" name, fn, set, teardown, NULL}

int main(void)
{
	const struct CMUnitTest tests[] = {
		BOTH("ping", test_ping, setup),
		BOTH("tables", test_tables, setup),
		BOTH("create_schema", test_create_schema, setup),
		BOTH("alter", test_alter, setup),
		BOTH("alter_failed_changes_nothing", test_alter_failed_changes_nothing, setup),
		BOTH("drop", test_drop, setup),
		BOTH("insert_arrays", test_insert_arrays, setup),
		BOTH("insert_objects", test_insert_objects, setup),
		BOTH("insert_strings", test_insert_strings, setup),
		BOTH("insert_special_doubles", test_insert_special_doubles, setup),
		BOTH("query_prefix", test_query_prefix, setup),
		BOTH("query_bounds", test_query_bounds, setup),
		BOTH("query_time", test_query_time, setup),
		BOTH("query_desc", test_query_desc, setup),
		BOTH("query_limit_resume", test_query_limit, setup),
		BOTH("query_columns", test_query_columns, setup),
		BOTH("latest", test_latest, setup),
		BOTH("aggregate", test_aggregate, setup),
		BOTH("flush", test_flush, setup),
		BOTH("stats", test_stats, setup),
		ONCE("scheduler_settings", test_scheduler_settings, setup_scheduler),
		BOTH("id_on_every_line", test_ids_every_line, setup),
		BOTH("bad_malformed_json", test_bad_malformed_json, setup),
		BOTH("bad_not_object", test_bad_not_object, setup),
		BOTH("bad_missing_op", test_bad_missing_op, setup),
		BOTH("bad_unknown_op", test_bad_unknown_op, setup),
		BOTH("bad_unknown_table", test_bad_unknown_table, setup),
		BOTH("bad_missing_field", test_bad_missing_field, setup),
		BOTH("bad_field_type", test_bad_field_type, setup),
		BOTH("bad_unknown_field", test_bad_unknown_field, setup),
		BOTH("bad_schema", test_bad_schema, setup),
		BOTH("bad_random_lines", test_bad_random_lines, setup),
		BOTH("bad_nul_in_names", test_bad_nul_in_names, setup),
		BOTH("insert_bad_row_width", test_insert_bad_row_width, setup),
		BOTH("insert_bad_value_type", test_insert_bad_value_type, setup),
		BOTH("insert_duplicate_key", test_insert_duplicate_key, setup),
		BOTH("insert_duplicate_in_batch", test_insert_duplicate_in_batch, setup),
		BOTH("insert_on_duplicate_ignore", test_insert_on_duplicate_ignore, setup),
		BOTH("insert_answers_version", test_insert_answers_version, setup),
		BOTH("alter_on_duplicate", test_alter_on_duplicate, setup),
		BOTH("insert_expired", test_insert_expired, setup),
		BOTH("insert_future", test_insert_future, setup),
		BOTH("query_relative", test_query_relative, setup),
		BOTH("frame_crlf_blank_lines", test_frame_crlf_blank_lines, setup),
		BOTH("frame_byte_by_byte", test_frame_byte_by_byte, setup),
		BOTH("frame_last_line_at_eof", test_frame_last_line_at_eof, setup),
		BOTH("line_max_boundary", test_line_max_boundary, setup_line_max),
		BOTH("line_too_long_closes", test_line_too_long_closes, setup_line_max),
		BOTH("pipeline_1000", test_pipeline_1000, setup),
		BOTH("pipeline_beyond_queue", test_pipeline_beyond_queue, setup),
		ONCE("concurrent_50_connections", test_concurrent_connections, setup),
		ONCE("slow_reader_memory_bounded", test_slow_reader_memory, setup_small_cache),
		ONCE("sigterm_under_load", test_sigterm_under_load, setup),
		BOTH("corrections_fields", test_corrections_fields, setup),
		ONCE("corrections_access", test_corrections_access, setup),
		ONCE("access_default", test_access_default, setup),
		ONCE("access_loopback_admin", test_access_loopback_admin, setup_loopback_admin),
		ONCE("access_loopback_read", test_access_loopback_read, setup_loopback_read),
		ONCE("access_loopback_none", test_access_loopback_none, setup_loopback_none),
		ONCE("access_token_write", test_access_token_write, setup_token_write),
		ONCE("access_reload", test_access_reload, NULL),
		ONCE("access_remote", test_access_remote, setup_remote),
		ONCE("auth_tcp_required", test_auth_tcp_required, setup_token),
		ONCE("auth_wrong_token_closes", test_auth_wrong_token_closes, setup_token),
		ONCE("auth_unix_free", test_auth_unix_free, setup_token),
		ONCE("config_nul_refused", test_config_nul_refused, NULL),
		ONCE("scheduler_settings_refused", test_scheduler_settings_refused, NULL),
		ONCE("memory_budget_many_long_lines", test_memory_budget, setup_memory),
		ONCE("memory_budget_line_too_long", test_memory_budget_line_too_long, setup_memory_small),
		ONCE("memory_budget_random_clients", test_memory_budget_random_clients, setup_memory),
		ONCE("memory_budget_stalled_favour", test_memory_budget_stalled_favour,
		     setup_memory_stall),
		ONCE("idle_timeout_partial_line", test_idle_partial_line, setup_idle),
		ONCE("max_connections_refused", test_max_connections, setup_max_connections),
		ONCE("sighup_serves_on", test_sighup_serves_on, setup),
		ONCE("sighup_reload", test_sighup_reload, NULL),
		ONCE("stale_socket_replaced", test_stale_socket_replaced, setup),
		ONCE("live_socket_refused", test_live_socket_refused, setup),
	};
	signal(SIGPIPE, SIG_IGN);
	if (getenv("TSD_TEST_FILTER")) /* e.g. "daemon_auth_*" */
		cmocka_set_test_filter(getenv("TSD_TEST_FILTER"));
	return cmocka_run_group_tests_name("daemon", tests, NULL, NULL);
}
