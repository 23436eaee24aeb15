/*
 * test_ingest.c -- the line protocol mapping (daemon/ingest.c) on a real
 * database directory: tsd_ingest_lines, then the tables' schemas and rows
 * read back through the library, with exact expectations.
 *
 * Schemas are rendered "name:type[=default] ... key=a,b,ts ttl=N" and rows
 * "v|v|..." (strings as they are, integers and timestamps in decimal,
 * doubles with %.17g), so each case states the whole table it expects.
 * The clock is fixed at NOW, so lines without a timestamp take NOW.
 */
#include <math.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "ingest.h"
#include "../wire/test_text.h" /* put */

#define NOW 1795219200000000000LL /* 2026-11-20T00:00:00Z */
#define DAY 86400000000000LL

static int64_t fixed_clock(void *arg) { return NOW; }

struct fixture {
	char dir[64];
	ts_db *db;
	struct tsd_ingest *in;
	char log[4096]; /* what the mapping logged, one message a line */
};

static void collect_log(void *arg, const char *msg)
{
	struct fixture *f = arg;
	size_t n = strlen(f->log);
	snprintf(f->log + n, sizeof f->log - n, "%s\n", msg);
}

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof *f);
	ts_options o;
	struct tsd_ingest_options io = {.default_ttl = 0, .max_future = DAY, .log = collect_log};
	snprintf(f->dir, sizeof f->dir, "/tmp/test_ingest.XXXXXX");
	assert_non_null(mkdtemp(f->dir));
	ts_options_init(&o);
	o.clock = fixed_clock;
	o.sync = TS_SYNC_NONE;
	o.flags |= TS_OPEN_NOMERGE;
	o.log_segment_size = 1 << 20;
	assert_int_equal(ts_open(f->dir, &o, &f->db), 0);
	io.log_arg = f;
	assert_int_equal(tsd_ingest_open(f->db, &io, &f->in), 0);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	char cmd[128];
	tsd_ingest_close(f->in);
	assert_int_equal(ts_close(f->db), 0);
	snprintf(cmd, sizeof cmd, "rm -rf %s", f->dir);
	assert_int_equal(system(cmd), 0);
	free(f);
	return 0;
}

/* ---- Rendering ---- */

static void put_value(char *out, size_t size, const ts_value *v)
{
	switch (v->type) {
	case TS_INT32:
	case TS_INT64:
	case TS_TIMESTAMP: put(out, size, "%lld", (long long)v->v.i); break;
	case TS_DOUBLE: put(out, size, "%.17g", v->v.d); break;
	case TS_STRING: put(out, size, "%.*s", (int)v->v.s.len, (const char *)v->v.s.ptr); break;
	case TS_NONE: put(out, size, "(none)"); break;
	default: put(out, size, "?"); break;
	}
}

/* "name:type[=default] ... key=a,b,ts ttl=N", defaults shown when they
 * are not the type's zero. */
static void schema_of(struct fixture *f, const char *table, char *out, size_t size)
{
	ts_table *t;
	ts_schema *s;
	out[0] = '\0';
	if (ts_table_open(f->db, table, &t) < 0) {
		put(out, size, "(no table: %s)", ts_errmsg(NULL));
		return;
	}
	assert_int_equal(ts_table_schema(t, &s), 0);
	for (int i = 0; i < s->ncolumns; i++) {
		put(out, size, "%s:%s", s->columns[i].name, ts_type_name(s->columns[i].type));
		const ts_value *d = &s->columns[i].dflt;
		int zero = d->type == TS_NONE || ((d->type == TS_STRING || d->type == TS_BLOB) ?
		           d->v.s.len == 0 : d->type == TS_DOUBLE ? (d->v.d == 0 && !signbit(d->v.d)) :
		           d->v.i == 0);
		if (!zero) {
			put(out, size, "=");
			put_value(out, size, &s->columns[i].dflt);
		}
		put(out, size, " ");
	}
	put(out, size, "key=");
	for (int k = 0; k < s->nkey; k++)
		put(out, size, "%s%s", k ? "," : "", s->columns[s->key[k]].name);
	put(out, size, " ttl=%lld", (long long)s->ttl);
	ts_schema_free(s);
	ts_table_close(t);
}

/* Every row of table, "v|v|...\n" each, in key order. */
static void rows_of(struct fixture *f, const char *table, char *out, size_t size)
{
	ts_table *t;
	ts_cursor *c;
	ts_query q;
	const ts_value *row;
	int n;
	memset(&q, 0, sizeof q);
	out[0] = '\0';
	assert_int_equal(ts_table_open(f->db, table, &t), 0);
	assert_int_equal(ts_query_open(t, &q, &c), 0);
	while (ts_cursor_next(c, &row, &n) == 0 && row) {
		for (int i = 0; i < n; i++) {
			if (i)
				put(out, size, "|");
			put_value(out, size, &row[i]);
		}
		put(out, size, "\n");
	}
	ts_cursor_close(c);
	ts_table_close(t);
}

static int ingest(struct fixture *f, const char *body, enum lp_precision p,
                  struct tsd_ingest_result *res)
{
	return tsd_ingest_lines(f->in, body, strlen(body), p, res);
}

#define SCHEMA(f, table, want) do { \
	char got_[4096]; \
	schema_of(f, table, got_, sizeof got_); \
	assert_string_equal(got_, want); \
} while (0)

#define ROWS(f, table, want) do { \
	char got_[8192]; \
	rows_of(f, table, got_, sizeof got_); \
	assert_string_equal(got_, want); \
} while (0)

/* ---- Cases ---- */

static void ingest_creates_table(void **state)
{
	struct fixture *f = *state;
	struct tsd_ingest_result res;
	assert_int_equal(ingest(f, "cpu,region=eu,host=a usage=0.5,count=3i,ok=true,name=\"x y\","
	                        "big=7u 1795132800000000000\n", LP_NS, &res), 0);
	assert_int_equal(res.points, 1);
	assert_int_equal(res.stored, 1);
	assert_int_equal(res.rejected, 0);
	assert_int_equal(res.first_bad_line, 0);
	assert_string_equal(res.error, "");
	/* Tags sorted by name, then ts, then the fields in the order met;
	 * floats default to NaN (no value), the others to their zero. */
	SCHEMA(f, "cpu", "host:string region:string ts:timestamp usage:double=nan count:int64 "
	       "ok:int32 name:string big:int64 key=host,region,ts ttl=0");
	ROWS(f, "cpu", "a|eu|1795132800000000000|0.5|3|1|x y|7\n");
	struct tsd_ingest_stats st;
	tsd_ingest_stats_get(f->in, &st);
	assert_int_equal(st.requests, 1);
	assert_int_equal(st.rows_stored, 1);
	assert_int_equal(st.tables_created, 1);
	assert_int_equal(st.columns_added, 0);
}

/* The first request's lines together decide the key: the union of their
 * tags. */
static void ingest_key_is_union_of_first_request(void **state)
{
	struct fixture *f = *state;
	struct tsd_ingest_result res;
	assert_int_equal(ingest(f, "m,zone=z v=1 10\nm,app=a v=2 20\nm,zone=y,app=b v=3 30", LP_NS,
	                        &res), 0);
	SCHEMA(f, "m", "app:string zone:string ts:timestamp v:double=nan key=app,zone,ts ttl=0");
	ROWS(f, "m", "|z|10|1\na||20|2\nb|y|30|3\n");
	struct tsd_ingest_stats st;
	tsd_ingest_stats_get(f->in, &st);
	assert_int_equal(st.rows_missing_tags, 2);
	assert_string_equal(f->log, "table \"m\": lines without some of its tags are stored with \"\" "
	                    "in those key columns (logged once per table)\n");
}

static void ingest_new_field_adds_column(void **state)
{
	struct fixture *f = *state;
	struct tsd_ingest_result res;
	assert_int_equal(ingest(f, "cpu,host=a usage=0.5 100", LP_NS, &res), 0);
	assert_int_equal(ingest(f, "cpu,host=a usage=0.6,temp=20.5,up=t 200\n"
	                        "cpu,host=b msg=\"hi\" 300", LP_NS, &res), 0);
	assert_int_equal(res.stored, 2);
	SCHEMA(f, "cpu", "host:string ts:timestamp usage:double=nan temp:double=nan up:int32 "
	       "msg:string key=host,ts ttl=0");
	ROWS(f, "cpu", "a|100|0.5|nan|0|\n"
	               "a|200|0.59999999999999998|20.5|1|\n"
	               "b|300|nan|nan|0|hi\n");
	struct tsd_ingest_stats st;
	tsd_ingest_stats_get(f->in, &st);
	assert_int_equal(st.columns_added, 3);
}

/* A bad line is refused alone; the good ones around it are stored. */
static void ingest_partial_write(void **state)
{
	struct fixture *f = *state;
	struct tsd_ingest_result res;
	int rc = ingest(f, "m,h=a v=1 1\n"
	                   "m,h=a v= 2\n"
	                   "# comment\n"
	                   "m,h=a v=3 3\n"
	                   "m,h=a v=4i 4\n", LP_NS, &res);
	assert_int_equal(rc, TS_EINVAL);
	assert_int_equal(res.code, TS_EINVAL);
	assert_int_equal(res.points, 3);
	assert_int_equal(res.stored, 2);
	assert_int_equal(res.rejected, 2);
	assert_int_equal(res.by_reason[TSD_REJECT_SYNTAX], 1);
	assert_int_equal(res.by_reason[TSD_REJECT_TYPE], 1);
	assert_int_equal(res.first_bad_line, 2);
	assert_string_equal(res.error, "line 2: unable to parse 'm,h=a v= 2': field \"v\" has no value");
	ROWS(f, "m", "a|1|1\na|3|3\n");
	struct tsd_ingest_stats st;
	tsd_ingest_stats_get(f->in, &st);
	assert_int_equal(st.lines_rejected[TSD_REJECT_SYNTAX], 1);
	assert_int_equal(st.lines_rejected[TSD_REJECT_TYPE], 1);
	assert_string_equal(tsd_ingest_reason_name(TSD_REJECT_TYPE), "type");
}

/* A field whose type is not its column's is refused, as InfluxDB does;
 * the same type mix inside the first request: the first line wins. */
static void ingest_type_conflicts(void **state)
{
	struct fixture *f = *state;
	struct tsd_ingest_result res;
	assert_int_equal(ingest(f, "m a=1i,b=1,c=t,d=\"s\" 1\nm a=2 2\n", LP_NS, &res), TS_EINVAL);
	assert_string_equal(res.error, "line 2: table \"m\": field \"a\" is float, but column \"a\" "
	                    "is int64");
	static const char *const lines[] = {"m a=1 5", "m a=1u 5", "m b=1i 5", "m c=1i 5",
	                                    "m d=1i 5", "m d=t 5", "m a=\"x\" 5"};
	static const char *const errors[] = {
		"line 1: table \"m\": field \"a\" is float, but column \"a\" is int64",
		NULL, /* unsigned goes into int64 */
		"line 1: table \"m\": field \"b\" is integer, but column \"b\" is double",
		"line 1: table \"m\": field \"c\" is integer, but column \"c\" is int32",
		"line 1: table \"m\": field \"d\" is integer, but column \"d\" is string",
		"line 1: table \"m\": field \"d\" is boolean, but column \"d\" is string",
		"line 1: table \"m\": field \"a\" is string, but column \"a\" is int64",
	};
	for (int i = 0; i < 7; i++) {
		int rc = ingest(f, lines[i], LP_NS, &res);
		if (!errors[i]) {
			assert_int_equal(rc, 0);
			continue;
		}
		assert_int_equal(rc, TS_EINVAL);
		assert_int_equal(res.by_reason[TSD_REJECT_TYPE], 1);
		assert_string_equal(res.error, errors[i]);
	}
	ROWS(f, "m", "1|1|1|1|s\n5|1|nan|0|\n");
	SCHEMA(f, "m", "ts:timestamp a:int64 b:double=nan c:int32 d:string key=ts ttl=0");
	/* Logged once for the table, whatever the number of conflicts. */
	assert_non_null(strstr(f->log, "table \"m\": refusing lines whose field \"a\" is float: the "
	                       "column is int64 (logged once per table)\n"));
	assert_null(strstr(f->log, "field \"b\""));
}

static void ingest_unsigned_range(void **state)
{
	struct fixture *f = *state;
	struct tsd_ingest_result res;
	assert_int_equal(ingest(f, "m v=9223372036854775807u 1\nm v=18446744073709551615u 2\n"
	                        "m v=1e999 3", LP_NS, &res), TS_EINVAL);
	assert_int_equal(res.stored, 1);
	assert_int_equal(res.by_reason[TSD_REJECT_RANGE], 1);
	assert_string_equal(res.error, "line 2: table \"m\": field \"v\": unsigned "
	                    "18446744073709551615 does not fit int64");
	/* v is int64, so the float is a type conflict before its range. */
	assert_int_equal(res.by_reason[TSD_REJECT_TYPE], 1);
	ROWS(f, "m", "1|9223372036854775807\n");
	assert_int_equal(ingest(f, "f v=1e999 1\nf v=2 2", LP_NS, &res), TS_EINVAL);
	assert_string_equal(res.error, "line 1: table \"f\": field \"v\": 1e999 is out of the range "
	                    "of a double");
	ROWS(f, "f", "2|2\n");
}

static void ingest_precision_and_now(void **state)
{
	struct fixture *f = *state;
	struct tsd_ingest_result res;
	assert_int_equal(ingest(f, "m,p=s v=1 1795132800", LP_S, &res), 0);
	assert_int_equal(ingest(f, "m,p=ms v=1 1795132800001", LP_MS, &res), 0);
	assert_int_equal(ingest(f, "m,p=us v=1 1795132800000002", LP_US, &res), 0);
	assert_int_equal(ingest(f, "m,p=h v=1 498648", LP_H, &res), 0);
	/* Lines without a timestamp take the same now. */
	assert_int_equal(ingest(f, "m,p=now v=1\nm,p=now2 v=2", LP_NS, &res), 0);
	ROWS(f, "m", "h|1795132800000000000|1\n"
	             "ms|1795132800001000000|1\n"
	             "now|1795219200000000000|1\n"
	             "now2|1795219200000000000|2\n"
	             "s|1795132800000000000|1\n"
	             "us|1795132800000002000|1\n");
	/* More than max-future ahead: refused before the library sees it. */
	assert_int_equal(ingest(f, "m,p=late v=1 1795305600000000001\nm,p=ok v=1 1795305600000000000",
	                        LP_NS, &res), TS_EINVAL);
	assert_int_equal(res.by_reason[TSD_REJECT_TIME], 1);
	assert_int_equal(res.stored, 1);
	assert_string_equal(res.error, "line 1: table \"m\": timestamp 1795305600000000001 is more "
	                    "than max-future ahead of now");
}

static void ingest_names(void **state)
{
	char out[TS_NAME_MAX + 1];
	static const struct {
		const char *in;
		int column;
		const char *want;
	} cases[] = {
		{"cpu", 0, "cpu"},
		{"http.requests-total", 0, "http_requests_total"},
		{"1min", 0, "_1min"},
		{"caf\xc3\xa9", 1, "caf__"},
		{"ts", 1, "_ts"},
		{"TS", 1, "_TS"},
		{"ts", 0, "ts"},
		{"LOCK", 0, "_LOCK"},
		{"LOCK", 1, "LOCK"},
		{"_x", 1, "_x"},
		{"a b,c=d", 1, "a_b_c_d"},
		{"abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyzabcdefghijkl", 1,
		 "abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyzabcdefghijkl"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		tsd_ingest_name(cases[i].in, strlen(cases[i].in), cases[i].column, out);
		assert_string_equal(out, cases[i].want);
		assert_true(ts_name_valid(out));
	}
	/* Too long: 55 bytes, '_', 8 hex digits of the hash; deterministic,
	 * and two names differing past the cut differ. */
	char a[TS_NAME_MAX + 1], b[TS_NAME_MAX + 1];
	const char *l1 = "a_very_long_measurement_name_that_goes_on_and_on_and_on_past_64_x";
	const char *l2 = "a_very_long_measurement_name_that_goes_on_and_on_and_on_past_64_y";
	tsd_ingest_name(l1, strlen(l1), 0, a);
	tsd_ingest_name(l2, strlen(l2), 0, b);
	assert_int_equal(strlen(a), 64);
	assert_memory_equal(a, l1, 55);
	assert_int_equal(a[55], '_');
	assert_string_not_equal(a, b);
	assert_true(ts_name_valid(a));
	tsd_ingest_name(l1, strlen(l1), 0, b);
	assert_string_equal(a, b);
	tsd_ingest_name("9abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyzabcdefghijk", 64, 0, a);
	assert_int_equal(strlen(a), 64);
	assert_memory_equal(a, "_9abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyza_", 56);
}

/* Names mapped in lines: tables and columns, and escapes undone first. */
static void ingest_name_mapping(void **state)
{
	struct fixture *f = *state;
	struct tsd_ingest_result res;
	assert_int_equal(ingest(f, "http.req\\ total,1st\\=tag=v\\,x ts=1,my-field=\"a\\\"b\" 7\n",
	                        LP_NS, &res), 0);
	SCHEMA(f, "http_req_total", "_1st_tag:string ts:timestamp _ts:double=nan my_field:string "
	       "key=_1st_tag,ts ttl=0");
	ROWS(f, "http_req_total", "v,x|7|1|a\"b\n");
	/* Names that map to the same column are that column: a line with
	 * both is refused as a duplicate. */
	assert_int_equal(ingest(f, "http.req\\ total,1st\\=tag=w my.field=\"c\" 8\n"
	                        "http.req\\ total,1st\\=tag=w my.field=\"c\",my-field=\"d\" 9", LP_NS,
	                        &res), TS_EINVAL);
	assert_int_equal(res.stored, 1);
	assert_string_equal(res.error, "line 2: table \"http_req_total\": field \"my_field\" given twice");
	/* Column names compare without regard to case, as the library's do. */
	assert_int_equal(ingest(f, "http.req\\ total,1ST\\=TAG=z MY_FIELD=\"e\" 10", LP_NS, &res), 0);
	ROWS(f, "http_req_total", "v,x|7|1|a\"b\nw|8|nan|c\nz|10|nan|e\n");
}

/* A tag the key lacks refuses its line (logged once); a missing one is "". */
static void ingest_tags_not_in_key(void **state)
{
	struct fixture *f = *state;
	struct tsd_ingest_result res;
	assert_int_equal(ingest(f, "m,host=a,dc=x v=1 1", LP_NS, &res), 0);
	assert_int_equal(ingest(f, "m,host=a,dc=x,rack=9 v=2 2\n"
	                        "m,host=b v=3 3\n"
	                        "m,host=c,rack=1 v=4 4\n"
	                        "m,host=c,host=d v=5 5\n", LP_NS, &res), TS_EINVAL);
	assert_int_equal(res.stored, 1);
	assert_int_equal(res.by_reason[TSD_REJECT_TAG], 2);
	assert_int_equal(res.by_reason[TSD_REJECT_DUPLICATE], 1);
	assert_string_equal(res.error, "line 1: table \"m\": tag \"rack\" is not a string key column "
	                    "of the table");
	ROWS(f, "m", "|b|3|3\nx|a|1|1\n");
	/* A field named as a key column is refused too. */
	assert_int_equal(ingest(f, "m,host=e dc=1 6", LP_NS, &res), TS_EINVAL);
	assert_string_equal(res.error, "line 1: table \"m\": field \"dc\" has the name of a key column");
	const char *log = "table \"m\": refusing lines with tag \"rack\", which is no string key "
	                  "column of the table (its key is fixed when it is created)\n";
	assert_non_null(strstr(f->log, log));
	if (strstr(strstr(f->log, log) + strlen(log), "refusing lines with tag"))
		fail_msg("logged twice:\n%s", f->log);
}

/* The tables the mapping creates ignore a key they hold already: a
 * retried batch is idempotent, and within a batch the first line of a
 * key wins.  The duplicates are counted, not refused. */
static void ingest_duplicate_keys_ignored(void **state)
{
	struct fixture *f = *state;
	struct tsd_ingest_result res;
	const char *batch = "m,h=a v=1 1\nm,h=b v=2 1\nm,h=c v=3 1\n";
	assert_int_equal(ingest(f, batch, LP_NS, &res), 0);
	assert_int_equal(res.stored, 3);
	assert_int_equal(ingest(f, batch, LP_NS, &res), 0);
	assert_int_equal(res.points, 3);
	assert_int_equal(res.stored, 0);
	assert_int_equal(res.ignored, 3);
	assert_int_equal(res.rejected, 0);
	assert_string_equal(res.error, "");
	assert_int_equal(ingest(f, "m,h=d v=4 1\nm,h=a v=9 1\nm,h=e v=5 1\nm,h=e v=6 1\nm,h=f v=7 1",
	                        LP_NS, &res), 0);
	assert_int_equal(res.stored, 3);
	assert_int_equal(res.ignored, 2);
	ROWS(f, "m", "a|1|1\nb|1|2\nc|1|3\nd|1|4\ne|1|5\nf|1|7\n");
	ts_table *t;
	ts_schema *sc;
	assert_int_equal(ts_table_open(f->db, "m", &t), 0);
	assert_int_equal(ts_table_schema(t, &sc), 0);
	assert_int_equal(sc->on_duplicate, TS_ON_DUPLICATE_IGNORE);
	ts_schema_free(sc);
	ts_table_close(t);
	struct tsd_ingest_stats st;
	tsd_ingest_stats_get(f->in, &st);
	assert_int_equal(st.duplicates_ignored, 5);
	assert_int_equal(st.rows_stored, 6);
}

/* A table made otherwise keeps its policy: under `reject` a key already
 * stored refuses its line alone, and every other line still goes in. */
static void ingest_duplicate_keys_rejected(void **state)
{
	struct fixture *f = *state;
	struct tsd_ingest_result res;
	static const ts_column cols[] = {{.name = "h", .type = TS_STRING},
	                                 {.name = "ts", .type = TS_TIMESTAMP},
	                                 {.name = "v", .type = TS_DOUBLE}};
	static const char *const key[] = {"h", "ts"};
	assert_int_equal(ts_create_keyed(f->db, "m", cols, 3, key, 2, 0), 0);
	const char *batch = "m,h=a v=1 1\nm,h=b v=2 1\nm,h=c v=3 1\n";
	assert_int_equal(ingest(f, batch, LP_NS, &res), 0);
	assert_int_equal(ingest(f, batch, LP_NS, &res), TS_EINVAL);
	assert_int_equal(res.stored, 0);
	assert_int_equal(res.ignored, 0);
	assert_int_equal(res.rejected, 3);
	assert_int_equal(res.by_reason[TSD_REJECT_DUPLICATE], 3);
	assert_int_equal(res.first_bad_line, 1);
	assert_string_equal(res.error, "line 1: table \"m\": duplicate key (\"a\", "
	                    "1970-01-01T00:00:00.000000001Z)");
	assert_int_equal(ingest(f, "m,h=d v=4 1\nm,h=a v=9 1\nm,h=e v=5 1\nm,h=e v=6 1\nm,h=f v=7 1",
	                        LP_NS, &res), TS_EINVAL);
	assert_int_equal(res.stored, 3);
	assert_int_equal(res.rejected, 2);
	assert_int_equal(res.first_bad_line, 2);
	ROWS(f, "m", "a|1|1\nb|1|2\nc|1|3\nd|1|4\ne|1|5\nf|1|7\n");
}

/* Several measurements in one body: a table each, all in one request. */
static void ingest_several_tables(void **state)
{
	struct fixture *f = *state;
	struct tsd_ingest_result res;
	assert_int_equal(ingest(f, "cpu,h=a u=1 1\nmem,h=a free=2i 1\ncpu,h=b u=3 1\n"
	                        "disk,h=a,dev=sda used=0.5 1\nmem,h=b free=4i 1", LP_NS, &res), 0);
	assert_int_equal(res.stored, 5);
	ROWS(f, "cpu", "a|1|1\nb|1|3\n");
	ROWS(f, "mem", "a|1|2\nb|1|4\n");
	ROWS(f, "disk", "sda|a|1|0.5\n");
	/* Invalid UTF-8 in a value refuses its line only. */
	assert_int_equal(ingest(f, "cpu,h=\xff u=1 2\ncpu,h=c u=1 2\ncpu,h=d s=\"\xc3\" 2", LP_NS, &res),
	                 TS_EINVAL);
	assert_int_equal(res.stored, 1);
	assert_string_equal(res.error, "line 1: table \"cpu\": a tag value is not valid UTF-8");
}

/* The TSBS cpu-only file: its first 10,000 lines in requests of 5,000. */
static void ingest_tsbs_prefix(void **state)
{
	struct fixture *f = *state;
	struct tsd_ingest_result res;
	char cmd[512], *line = NULL, *body = NULL;
	size_t cap = 0, len = 0, n = 0;
	ssize_t got;
	if (access(TSBS_DATA, R_OK) != 0) {
		print_message("skipped: no %s\n", TSBS_DATA);
		skip();
	}
	snprintf(cmd, sizeof cmd, "gzip -dc %s", TSBS_DATA);
	FILE *p = popen(cmd, "r");
	assert_non_null(p);
	body = malloc(8 << 20);
	for (int req = 0; req < 2; req++) {
		len = 0;
		for (n = 0; n < 5000 && (got = getline(&line, &cap, p)) > 0; n++) {
			memcpy(body + len, line, (size_t)got);
			len += (size_t)got;
		}
		assert_int_equal(n, 5000);
		assert_int_equal(tsd_ingest_lines(f->in, body, len, LP_NS, &res), 0);
		assert_int_equal(res.stored, 5000);
	}
	free(line);
	free(body);
	pclose(p);
	SCHEMA(f, "cpu", "arch:string datacenter:string hostname:string os:string rack:string "
	       "region:string service:string service_environment:string service_version:string "
	       "team:string ts:timestamp usage_user:int64 usage_system:int64 usage_idle:int64 "
	       "usage_nice:int64 usage_iowait:int64 usage_irq:int64 usage_softirq:int64 "
	       "usage_steal:int64 usage_guest:int64 usage_guest_nice:int64 key=arch,datacenter,"
	       "hostname,os,rack,region,service,service_environment,service_version,team,ts ttl=0");
	/* Every row back, 100 hosts x 100 instants 10 s apart; host_0's first
	 * row is the file's first line. */
	ts_table *t;
	ts_cursor *c;
	ts_query q;
	const ts_value *row;
	int nv;
	uint64_t rows = 0, host0 = 0;
	memset(&q, 0, sizeof q);
	assert_int_equal(ts_table_open(f->db, "cpu", &t), 0);
	assert_int_equal(ts_query_open(t, &q, &c), 0);
	while (ts_cursor_next(c, &row, &nv) == 0 && row) {
		rows++;
		assert_int_equal(nv, 21);
		assert_true(row[10].v.i >= 1795132800000000000LL &&
		            row[10].v.i <= 1795132800000000000LL + 99 * 10000000000LL);
		if (row[2].v.s.len == 6 && memcmp(row[2].v.s.ptr, "host_0", 6) == 0) {
			if (host0++ == 0) {
				char got_[512] = "";
				for (int i = 0; i < nv; i++) {
					put(got_, sizeof got_, "%s", i ? "|" : "");
					put_value(got_, sizeof got_, &row[i]);
				}
				assert_string_equal(got_, "x64|us-west-2b|host_0|Ubuntu16.10|17|us-west-2|17|"
				                    "test|0|CHI|1795132800000000000|99|52|58|94|82|14|46|0|50|38");
			}
		}
	}
	ts_cursor_close(c);
	ts_table_close(t);
	assert_int_equal(rows, 10000);
	assert_int_equal(host0, 100);
}

/* A body larger than a request holds at once: its rows go in as they
 * fill FLUSH_VALUES, a new field past that point still adds its column,
 * and a key stored by the first part is ignored in the second. */
static void ingest_large_body(void **state)
{
	struct fixture *f = *state;
	struct tsd_ingest_result res;
	size_t cap = 16 << 20, len = 0;
	char *body = malloc(cap);
	for (int i = 1; i <= 55000; i++) {
		len += (size_t)snprintf(body + len, cap - len, "big,h=a ");
		for (int k = 0; k < 20; k++)
			len += (size_t)snprintf(body + len, cap - len, "%sf%d=%di", k ? "," : "", k, i);
		len += (size_t)snprintf(body + len, cap - len, " %d\n", i);
	}
	len += (size_t)snprintf(body + len, cap - len, "big,h=a f0=0i,new=1 1\nbig,h=b new=2 1\n");
	assert_int_equal(tsd_ingest_lines(f->in, body, len, LP_NS, &res), 0);
	free(body);
	assert_int_equal(res.points, 55002);
	assert_int_equal(res.stored, 55001);
	assert_int_equal(res.ignored, 1);
	assert_int_equal(res.rejected, 0);
	ts_table *t;
	ts_cursor *c;
	ts_query q;
	const ts_value *row;
	int n;
	uint64_t rows = 0;
	memset(&q, 0, sizeof q);
	assert_int_equal(ts_table_open(f->db, "big", &t), 0);
	assert_int_equal(ts_query_open(t, &q, &c), 0);
	while (ts_cursor_next(c, &row, &n) == 0 && row) {
		assert_int_equal(n, 23);
		if (rows == 54999) { /* the last row of "a" */
			assert_int_equal(row[1].v.i, 55000);
			assert_int_equal(row[21].v.i, 55000);
			assert_true(isnan(row[22].v.d));
		}
		if (rows == 55000) { /* "b" */
			assert_int_equal(row[2].v.i, 0);
			assert_int_equal(row[22].v.d, 2.0);
		}
		rows++;
	}
	ts_cursor_close(c);
	ts_table_close(t);
	assert_int_equal(rows, 55001);
}

/* Threads writing one new measurement at once: they race to create the
 * table and to add their columns; every line is stored, every column is
 * there once. */
struct writer {
	struct fixture *f;
	int id;
	int failures;
};

static void *write_many(void *arg)
{
	struct writer *w = arg;
	char body[4096];
	struct tsd_ingest_result res;
	for (int req = 0; req < 40; req++) {
		size_t len = 0;
		for (int i = 0; i < 10; i++) {
			char extra[16] = ""; /* from request 10 on, a field of its own */
			if (req >= 10)
				snprintf(extra, sizeof extra, ",f%d=%di", w->id, i);
			len += (size_t)snprintf(body + len, sizeof body - len, "race,host=t%d v=%d%s %d\n",
			                        w->id, i, extra, req * 10 + i + 1);
		}
		if (tsd_ingest_lines(w->f->in, body, len, LP_NS, &res) != 0 || res.stored != 10)
			w->failures++;
	}
	return NULL;
}

static void ingest_concurrent_writers(void **state)
{
	struct fixture *f = *state;
	pthread_t th[4];
	struct writer w[4];
	for (int i = 0; i < 4; i++) {
		w[i] = (struct writer){f, i, 0};
		assert_int_equal(pthread_create(&th[i], NULL, write_many, &w[i]), 0);
	}
	for (int i = 0; i < 4; i++) {
		pthread_join(th[i], NULL);
		assert_int_equal(w[i].failures, 0);
	}
	ts_table *t;
	ts_schema *s;
	ts_cursor *c;
	ts_query q;
	const ts_value *row;
	int n, rows = 0;
	assert_int_equal(ts_table_open(f->db, "race", &t), 0);
	assert_int_equal(ts_table_schema(t, &s), 0);
	assert_int_equal(s->ncolumns, 7); /* host ts v f0 f1 f2 f3 */
	for (int i = 0; i < 4; i++) {
		char name[8];
		snprintf(name, sizeof name, "f%d", i);
		int found = 0;
		for (int k = 3; k < 7; k++)
			found += strcmp(s->columns[k].name, name) == 0;
		assert_int_equal(found, 1);
	}
	ts_schema_free(s);
	memset(&q, 0, sizeof q);
	assert_int_equal(ts_query_open(t, &q, &c), 0);
	while (ts_cursor_next(c, &row, &n) == 0 && row)
		rows++;
	ts_cursor_close(c);
	ts_table_close(t);
	assert_int_equal(rows, 4 * 40 * 10);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(ingest_creates_table, setup, teardown),
		cmocka_unit_test_setup_teardown(ingest_key_is_union_of_first_request, setup, teardown),
		cmocka_unit_test_setup_teardown(ingest_new_field_adds_column, setup, teardown),
		cmocka_unit_test_setup_teardown(ingest_partial_write, setup, teardown),
		cmocka_unit_test_setup_teardown(ingest_type_conflicts, setup, teardown),
		cmocka_unit_test_setup_teardown(ingest_unsigned_range, setup, teardown),
		cmocka_unit_test_setup_teardown(ingest_precision_and_now, setup, teardown),
		cmocka_unit_test(ingest_names),
		cmocka_unit_test_setup_teardown(ingest_name_mapping, setup, teardown),
		cmocka_unit_test_setup_teardown(ingest_tags_not_in_key, setup, teardown),
		cmocka_unit_test_setup_teardown(ingest_duplicate_keys_ignored, setup, teardown),
		cmocka_unit_test_setup_teardown(ingest_duplicate_keys_rejected, setup, teardown),
		cmocka_unit_test_setup_teardown(ingest_several_tables, setup, teardown),
		cmocka_unit_test_setup_teardown(ingest_large_body, setup, teardown),
		cmocka_unit_test_setup_teardown(ingest_concurrent_writers, setup, teardown),
		cmocka_unit_test_setup_teardown(ingest_tsbs_prefix, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
