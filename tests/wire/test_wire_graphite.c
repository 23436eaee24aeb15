/*
 * test_wire_graphite.c -- Graphite plaintext lines parsed and mapped
 * (wire/graphite.c): each case is one line and the exact rendering of
 * what was made of it -- "t=<table> k:<name>=<value>... f=<field>
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

#include "wire/graphite.h"

static void put(char *out, size_t size, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void put(char *out, size_t size, const char *fmt, ...)
{
	size_t n = strlen(out);
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(out + n, size - n, fmt, ap);
	va_end(ap);
}

/* The rendering of line, mapped by the default rule. */
static void render(const char *line, char *out, size_t size)
{
	struct gr_line l;
	struct gr_mapped m;
	const char *why = NULL;
	int rc = gr_parse(line, strlen(line), &l, &why);
	out[0] = '\0';
	if (rc < 0) {
		put(out, size, "ERR%d:%s", rc, why);
		return;
	}
	assert_null(why);
	assert_int_equal(gr_map(&l, &m), 0);
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
		{"m nan", "ERR-3:the value is not a finite number"},
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(wire_graphite_parse_lines),
		cmocka_unit_test(wire_graphite_parse_errors),
		cmocka_unit_test(wire_graphite_tag_limit),
		cmocka_unit_test(wire_graphite_next_lines),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
