/*
 * test_wire_graphite.c -- Graphite plaintext lines parsed and mapped
 * (wire/graphite.c), by the default rule and by templates: each case is
 * one line and the exact rendering of what was made of it -- "t=<table> k:<name>=<value>... f=<field>
 * v=<value %.17g> ts=<ns>|now" -- or "ERR<code>:<why>".
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "test_text.h"
#include "wire/graphite.h"

/* The rendering of line, mapped by templates t (NULL: the default rule). */
static void render_with(const struct gr_templates *t, const char *line, char *out, size_t size)
{
	struct gr_line l;
	struct gr_mapped m;
	const char *why = NULL;
	char scratch[256];
	int rc = gr_parse(line, strlen(line), &l, &why);
	out[0] = '\0';
	if (rc < 0) {
		put(out, size, "ERR%d:%s", rc, why);
		return;
	}
	assert_null(why);
	assert_true(l.path.len <= sizeof scratch);
	if ((rc = gr_map(t, &l, scratch, &m)) < 0) {
		put(out, size, "ERR%d", rc);
		return;
	}
	put(out, size, "t=%.*s", (int)m.table.len, m.table.p);
	for (int k = 0; k < m.nkeys; k++)
		put(out, size, " k:%.*s=%.*s", (int)m.keys[k].name.len, m.keys[k].name.p,
		    (int)m.keys[k].value.len, m.keys[k].value.p);
	put(out, size, " f=%.*s v=%.17g", (int)m.field.len, m.field.p, l.value);
	if (l.has_time)
		put(out, size, " ts=%lld", (long long)l.ns);
	else
		put(out, size, " ts=now");
}

static void render(const char *line, char *out, size_t size)
{
	render_with(NULL, line, out, size);
}

struct tcase {
	const char *line, *want;
};

static void run_cases(const struct tcase *c, size_t n)
{
	char got[1024];
	for (size_t i = 0; i < n; i++) {
		render(c[i].line, got, sizeof got);
		if (strcmp(got, c[i].want) != 0)
			fail_msg("line '%s':\n  got  %s\n  want %s", c[i].line, got, c[i].want);
	}
}

static void wire_graphite_parse_lines(void **state)
{
	static const struct tcase c[] = {
		{"servers.web1.cpu.idle 97.5 1700000000",
		 "t=servers k:p1=web1 k:p2=cpu k:p3=idle f=value v=97.5 ts=1700000000000000000"},
		{"m 1", "t=m f=value v=1 ts=now"},
		{"m nan 1", "t=m f=value v=nan ts=1000000000"}, /* collectd's first rate */
		{"m NaN", "t=m f=value v=nan ts=now"},
		{"m 1 -1", "t=m f=value v=1 ts=now"},
		{"  m\t-2.5e3 \t 12  ", "t=m f=value v=-2500 ts=12000000000"},
		{"m 0x10 1.25", "t=m f=value v=16 ts=1250000000"},
		{"m 1 .5", "t=m f=value v=1 ts=500000000"},
		{"m 1 7.", "t=m f=value v=1 ts=7000000000"},
		{"m 1 0.1234567891", "t=m f=value v=1 ts=123456789"},
		{"servers.web1.load;dc=east;rack=r=1 1.5 1700000000.25",
		 "t=servers k:p1=web1 k:p2=load k:dc=east k:rack=r=1 f=value v=1.5 "
		 "ts=1700000000250000000"},
		{"a.b.c.d.e.f.g.h.i.j.k.l.m.n.o.p 1 1",
		 "t=a k:p1=b k:p2=c k:p3=d k:p4=e k:p5=f k:p6=g k:p7=h k:p8=i k:p9=j k:p10=k "
		 "k:p11=l k:p12=m k:p13=n k:p14=o k:p15=p f=value v=1 ts=1000000000"},
	};
	run_cases(c, sizeof c / sizeof c[0]);
}

static void wire_graphite_parse_errors(void **state)
{
	static const struct tcase c[] = {
		{"m", "ERR-1:want \"path value [timestamp]\""},
		{"m 1 2 3", "ERR-1:want \"path value [timestamp]\""},
		{"   ", "ERR-1:want \"path value [timestamp]\""},
		{"m x 1", "ERR-3:the value is not a finite number"},
		{"m inf 1", "ERR-3:the value is not a finite number"},
		{"m -nan", "ERR-3:the value is not a finite number"},
		{"m nan1", "ERR-3:the value is not a finite number"},
		{"m 1e999", "ERR-3:the value is not a finite number"},
		{"m 1.0.0", "ERR-3:the value is not a finite number"},
		{"m 0000000000000000000000000000000000000000000000000000000000000001",
		 "ERR-3:the value is not a finite number"},
		{"m 1 -2", "ERR-4:the timestamp is not seconds since 1970 (integer or decimal, or -1)"},
		{"m 1 .", "ERR-4:the timestamp is not seconds since 1970 (integer or decimal, or -1)"},
		{"m 1 1e9", "ERR-4:the timestamp is not seconds since 1970 (integer or decimal, or -1)"},
		{"m 1 9223372037", "ERR-4:the timestamp is not seconds since 1970 (integer or decimal, "
		 "or -1)"},
		{"a..b 1", "ERR-2:the path has an empty component"},
		{"a. 1", "ERR-2:the path has an empty component"},
		{".a 1", "ERR-2:the path has an empty component"},
		{";a=b 1", "ERR-2:the path has an empty component"},
		{"a.b.c.d.e.f.g.h.i.j.k.l.m.n.o.p.q 1", "ERR-2:the path has more than 16 components"},
		{"a;b 1", "ERR-2:a tag is not name=value"},
		{"a;=b 1", "ERR-2:a tag is not name=value"},
		{"a;b= 1", "ERR-2:a tag is not name=value"},
		{"a;b=c; 1", "ERR-2:a tag is not name=value"},
	};
	run_cases(c, sizeof c / sizeof c[0]);
	/* the largest timestamp: INT64_MAX / 1e9 - 1 seconds, and 0.999999999 */
	char got[256];
	render("m 1 9223372035.999999999", got, sizeof got);
	assert_string_equal(got, "t=m f=value v=1 ts=9223372035999999999");
}

/* GR_TAGS_MAX tags, and one more. */
static void wire_graphite_tag_limit(void **state)
{
	char line[GR_TAGS_MAX * 8 + 32], got[4096];
	struct gr_line l;
	strcpy(line, "m");
	for (int i = 0; i < GR_TAGS_MAX; i++)
		put(line, sizeof line, ";t%d=v", i);
	put(line, sizeof line, " 1");
	assert_int_equal(gr_parse(line, strlen(line), &l, NULL), 0);
	assert_int_equal(l.ntags, GR_TAGS_MAX);
	assert_int_equal(l.tags[63].name.len, 3);
	assert_memory_equal(l.tags[63].name.p, "t63", 3);
	line[strlen(line) - 2] = '\0';
	put(line, sizeof line, ";x=y 1");
	render(line, got, sizeof got);
	assert_string_equal(got, "ERR-2:the path has more than 64 tags");
}

/* gr_next: '\n' and "\r\n" ends, empty lines skipped, a last line
 * without '\n'. */
static void wire_graphite_next_lines(void **state)
{
	static const char buf[] = "\na 1\r\n\r\n\nb 2\nc 3";
	const char *line;
	size_t pos = 0, n;
	char got[256] = "";
	while (gr_next(buf, sizeof buf - 1, &pos, &line, &n))
		put(got, sizeof got, "[%.*s]", (int)n, line);
	assert_string_equal(got, "[a 1][b 2][c 3]");
	assert_int_equal(pos, sizeof buf - 1);
	pos = 0;
	assert_int_equal(gr_next("\n\r\n", 3, &pos, &line, &n), 0);
	assert_int_equal(pos, 3);
}

/* Templates specs[0..n) parsed, or the test fails. */
static struct gr_templates *templates(const char *const *specs, int n)
{
	struct gr_templates *t;
	char err[256] = "";
	if (gr_templates_parse(specs, n, &t, err, sizeof err) != 0)
		fail_msg("templates refused: %s", err);
	assert_non_null(t);
	return t;
}

/* Each line through templates specs, with the rendering expected. */
static void map_cases(const char *const *specs, int n, const struct tcase *c, size_t nc)
{
	struct gr_templates *t = templates(specs, n);
	char got[1024];
	for (size_t i = 0; i < nc; i++) {
		render_with(t, c[i].line, got, sizeof got);
		if (strcmp(got, c[i].want) != 0)
			fail_msg("line '%s':\n  got  %s\n  want %s", c[i].line, got, c[i].want);
	}
	gr_templates_free(t);
}

/* Filters, first match in the order given, the template without a filter
 * for the rest; a skipped part, measurement*, tags from the path and
 * TAG=VALUE, field. */
static void wire_graphite_templates_match(void **state)
{
	static const char *const specs[] = {
		"servers.* .host.measurement* region=us,dc=east",
		"cpu.*.* measurement.host.field",
		"*.web?.* measurement.measurement.x",
		"stats.*.count measurement.kind.measurement",
		"measurement.host.host",
	};
	static const struct tcase c[] = {
		/* the first: component 1 skipped, 2 the host, the rest the table */
		{"servers.web1.cpu.idle 97.5 1",
		 "t=cpu_idle k:host=web1 k:region=us k:dc=east f=value v=97.5 ts=1000000000"},
		/* a tag of the path replaces the template's TAG=VALUE */
		{"servers.web1.load;dc=west;x=1 1 1",
		 "t=load k:host=web1 k:region=us k:dc=west k:x=1 f=value v=1 ts=1000000000"},
		/* the second: field names the value column */
		{"cpu.h1.user 12 1", "t=cpu k:host=h1 f=user v=12 ts=1000000000"},
		/* cpu.h1 has 2 components: the second's filter wants 3, so the
		 * template without a filter applies */
		{"cpu.h1 5 1", "t=cpu k:host=h1 f=value v=5 ts=1000000000"},
		/* globs are whole-component: "web?" is literal text with '?' */
		{"a.web?.b 1 1", "t=a_web? k:x=b f=value v=1 ts=1000000000"},
		{"a.web1.b 1 1", "t=a k:host=web1_b f=value v=1 ts=1000000000"},
		/* a tag named twice in a template joins its components */
		{"disk.sda.used.more 1 1", "t=disk k:host=sda_used f=value v=1 ts=1000000000"},
		/* a measurement named twice joins them */
		{"stats.http.count 3 1", "t=stats_count k:kind=http f=value v=3 ts=1000000000"},
		/* components past the template are dropped */
		{"stats.http.count.x.y 3 1", "t=stats_count k:kind=http f=value v=3 ts=1000000000"},
		/* too short for a table name: servers' measurement* starts at 3 */
		{"servers.web1 1 1", "ERR-5"},
		/* a path no filter matches, under the template without one */
		{"one 1 1", "t=one f=value v=1 ts=1000000000"},
	};
	map_cases(specs, 5, c, sizeof c / sizeof c[0]);
}

/* Without a template lacking a filter, paths no filter matches keep the
 * default rule; a filter's globs: '*' any text, several per component. */
static void wire_graphite_templates_default_rule(void **state)
{
	static const char *const specs[] = {"app*.*-prod.* measurement.env.field*"};
	static const struct tcase c[] = {
		{"app1.eu-prod.req.ok 1 1", "t=app1 k:env=eu-prod f=req_ok v=1 ts=1000000000"},
		{"app.-prod.x 1 1", "t=app k:env=-prod f=x v=1 ts=1000000000"},
		{"app1.eu-test.req 1 1",
		 "t=app1 k:p1=eu-test k:p2=req f=value v=1 ts=1000000000"},
		{"xapp.eu-prod.req 1 1",
		 "t=xapp k:p1=eu-prod k:p2=req f=value v=1 ts=1000000000"},
		{"app1.eu-prod 1 1", "t=app1 k:p1=eu-prod f=value v=1 ts=1000000000"},
	};
	map_cases(specs, 1, c, sizeof c / sizeof c[0]);
}

/* Every refusal names the template and what is wrong. */
static void wire_graphite_templates_errors(void **state)
{
	static const struct {
		const char *spec, *want;
	} c[] = {
		{"", "template \"\": empty"},
		{"  ", "template \"  \": empty"},
		{"host.field", "template \"host.field\": no part is measurement or measurement*"},
		{"a.b c.measurement d=1 e", "template \"a.b c.measurement d=1 e\": more than three "
		 "words (FILTER TEMPLATE TAGS)"},
		{"measurement*.host", "template \"measurement*.host\": \"measurement*\" is not the "
		 "last part"},
		{"measurement.host*", "template \"measurement.host*\": \"host*\": only measurement* "
		 "and field* take the remaining components"},
		{"measurement.1host", "template \"measurement.1host\": \"1host\" is not a tag name "
		 "([A-Za-z_][A-Za-z0-9_]*, at most 64 bytes, not ts)"},
		{"measurement.ts", "template \"measurement.ts\": \"ts\" is not a tag name "
		 "([A-Za-z_][A-Za-z0-9_]*, at most 64 bytes, not ts)"},
		{"measurement.value", "template \"measurement.value\": tag \"value\" is the value "
		 "column's name (the template has no field part)"},
		{"a..b measurement", "template \"a..b measurement\": the filter has an empty "
		 "component"},
		{"measurement a=1,b", "template \"measurement a=1,b\": \"b\" is not TAG=VALUE"},
		{"measurement a=", "template \"measurement a=\": \"a=\" is not TAG=VALUE"},
		{"measurement a=1,a=2", "template \"measurement a=1,a=2\": tag \"a\" is given twice"},
		{"x.* a=1 b=2", "template \"x.* a=1 b=2\": no template before the TAG=VALUEs"},
		{"a.b.c.d.e.f.g.h.i.j.k.l.m.n.o.p.measurement", "template \"a.b.c.d.e.f.g.h.i.j.k.l.m."
		 "n.o.p.measurement\": more than 16 parts"},
	};
	char err[256];
	struct gr_templates *t;
	for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
		err[0] = '\0';
		assert_int_equal(gr_templates_parse(&c[i].spec, 1, &t, err, sizeof err), -1);
		assert_null(t);
		if (strcmp(err, c[i].want) != 0)
			fail_msg("spec '%s':\n  got  %s\n  want %s", c[i].spec, err, c[i].want);
	}
	static const char *const two[] = {"measurement", "x.* measurement", "host.measurement"};
	assert_int_equal(gr_templates_parse(two, 3, &t, err, sizeof err), -1);
	assert_string_equal(err, "template \"host.measurement\": a second template without a "
	                    "filter (the first: \"measurement\")");
	assert_int_equal(gr_templates_parse(two, 0, &t, err, sizeof err), 0);
	assert_null(t);
	gr_templates_free(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(wire_graphite_parse_lines),
		cmocka_unit_test(wire_graphite_parse_errors),
		cmocka_unit_test(wire_graphite_tag_limit),
		cmocka_unit_test(wire_graphite_next_lines),
		cmocka_unit_test(wire_graphite_templates_match),
		cmocka_unit_test(wire_graphite_templates_default_rule),
		cmocka_unit_test(wire_graphite_templates_errors),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
