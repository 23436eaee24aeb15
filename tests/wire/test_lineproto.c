/*
 * test_lineproto.c -- the line protocol parser (wire/lineproto.c):
 * every case of the grammar, with the exact point (or reason) expected.
 *
 * Each case is one line and the expected rendering of what the parser
 * made of it: "m=<measurement>" then " t:<key>=<value>" per tag and
 * " f:<key>=<type>:<value>" per field (names and strings unescaped,
 * floats with %.17g), then " ts=<ns>" when there is a timestamp; or
 * "ERR:<reason>" for a bad line, "SKIP" for a blank line or a comment.
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
#include "wire/lineproto.h"

static void put_text(char *out, size_t size, const struct lp_text *t)
{
	char buf[512];
	size_t n = lp_unescape(t, buf);
	put(out, size, "%.*s", (int)n, buf);
}

/* The rendering of a point. */
static void render(const struct lp_point *pt, char *out, size_t size)
{
	out[0] = '\0';
	put(out, size, "m=");
	put_text(out, size, &pt->measurement);
	for (int i = 0; i < pt->ntags; i++) {
		put(out, size, " t:");
		put_text(out, size, &pt->tags[i].key);
		put(out, size, "=");
		put_text(out, size, &pt->tags[i].value);
	}
	for (int i = 0; i < pt->nfields; i++) {
		const struct lp_field *f = &pt->fields[i];
		double d;
		put(out, size, " f:");
		put_text(out, size, &f->key);
		switch (f->type) {
		case LP_FLOAT:
			if (lp_field_float(f, &d) < 0)
				put(out, size, "=float:RANGE");
			else
				put(out, size, "=float:%.17g", d);
			break;
		case LP_INT: put(out, size, "=int:%lld", (long long)f->v.i); break;
		case LP_UINT: put(out, size, "=uint:%llu", (unsigned long long)f->v.u); break;
		case LP_BOOL: put(out, size, "=bool:%d", f->v.b); break;
		case LP_STRING:
			put(out, size, "=string:");
			put_text(out, size, &f->raw);
			break;
		}
	}
	if (pt->has_time)
		put(out, size, " ts=%lld", (long long)pt->time);
}

static void check_prec(const char *line, enum lp_precision prec, const char *want)
{
	struct lp_tag tags[8];
	struct lp_field fields[8];
	struct lp_point pt;
	char why[LP_WHY_MAX], got[2048];
	int rc = lp_parse_line(line, strlen(line), prec, &pt, tags, 8, fields, 8, why, sizeof why);
	if (rc == 1)
		render(&pt, got, sizeof got);
	else if (rc == 0)
		snprintf(got, sizeof got, "SKIP");
	else
		snprintf(got, sizeof got, "ERR:%s", why);
	if (strcmp(got, want) != 0)
		fail_msg("line [%s]\n  got  [%s]\n  want [%s]", line, got, want);
}

static void check(const char *line, const char *want)
{
	check_prec(line, LP_NS, want);
}

static void lineproto_basic(void **state)
{
	check("cpu value=1", "m=cpu f:value=float:1");
	check("cpu,host=a value=1.5 1700000000000000000",
	      "m=cpu t:host=a f:value=float:1.5 ts=1700000000000000000");
	check("cpu,host=a,region=eu usage=0.25,count=3i,ok=t,name=\"x y\" 17",
	      "m=cpu t:host=a t:region=eu f:usage=float:0.25 f:count=int:3 f:ok=bool:1 "
	      "f:name=string:x y ts=17");
	/* Tags keep the order of the line (sorting is the mapping's job). */
	check("m,b=2,a=1 f=1i", "m=m t:b=2 t:a=1 f:f=int:1");
}

static void lineproto_whitespace_and_comments(void **state)
{
	check("", "SKIP");
	check("   \t ", "SKIP");
	check("\r", "SKIP");
	check("# a comment", "SKIP");
	check("  # indented comment", "SKIP");
	check("  cpu value=1", "m=cpu f:value=float:1");
	check("cpu value=1 5\r", "m=cpu f:value=float:1 ts=5");
	check("cpu value=1 5   \t", "m=cpu f:value=float:1 ts=5");
	check("cpu    value=1     5", "m=cpu f:value=float:1 ts=5");
	check("cpu,t=a   value=1", "m=cpu t:t=a f:value=float:1");
	check("cpu value=1 ", "m=cpu f:value=float:1");
	/* '#' later in a line is an ordinary character. */
	check("c#u v#=1", "m=c#u f:v#=float:1");
}

static void lineproto_escapes(void **state)
{
	check("c\\,p\\ u value=1", "m=c,p u f:value=float:1");
	/* '=' needs no escape in a measurement; a backslash before it stays. */
	check("a=b value=1", "m=a=b f:value=float:1");
	check("a\\=b value=1", "m=a\\=b f:value=float:1");
	check("m,k\\,1\\=\\ x=v\\,2\\=\\ y f\\,\\=\\ z=1", "m=m t:k,1= x=v,2= y f:f,= z=float:1");
	/* Two backslashes are one; a backslash before an ordinary character
	 * is itself. */
	check("m,p=C:\\\\dir f=1", "m=m t:p=C:\\dir f:f=float:1");
	check("m,p=a\\b f=1", "m=m t:p=a\\b f:f=float:1");
	check("m\\\\ f=1", "m=m\\ f:f=float:1");
	/* An escaped backslash before a space: the space separates. */
	check("m,t=a\\\\ f=1", "m=m t:t=a\\ f:f=float:1");
	/* An escaped space does not separate; a backslash at the end of the
	 * line is literal. */
	check("m,t=a\\ f=1", "ERR:tag \"t\": unescaped '=' in its value");
	check("m,t=a\\ f", "ERR:no fields");
	check("m,t=a\\", "ERR:no fields");
	check("m\\ f=1", "ERR:no fields");
	/* Strings: \" and \\ are escapes, others literal; commas, spaces and
	 * '=' need none. */
	check("m s=\"a\\\"b\\\\c\\nd, e=f\"", "m=m f:s=string:a\"b\\c\\nd, e=f");
	check("m s=\"\"", "m=m f:s=string:");
	check("m s=\"a\\\\\",t=1i", "m=m f:s=string:a\\ f:t=int:1");
	check("m s=\"a\\\"", "ERR:field \"s\": unterminated string");
	check("m s=\"abc", "ERR:field \"s\": unterminated string");
	check("m s=\"abc\"x", "ERR:field \"s\": text after the closing quote");
	/* UTF-8 passes through untouched. */
	check("temp\xc3\xa9,lieu=Z\xc3\xbcrich v=1", "m=temp\xc3\xa9 t:lieu=Z\xc3\xbcrich f:v=float:1");
}

static void lineproto_floats(void **state)
{
	check("m f=1", "m=m f:f=float:1");
	check("m f=-1.5", "m=m f:f=float:-1.5");
	check("m f=0.1", "m=m f:f=float:0.10000000000000001");
	check("m f=.5", "m=m f:f=float:0.5");
	check("m f=5.", "m=m f:f=float:5");
	check("m f=-0.0", "m=m f:f=float:-0");
	check("m f=1e3", "m=m f:f=float:1000");
	check("m f=1.5E-3", "m=m f:f=float:0.0015");
	check("m f=2e+2", "m=m f:f=float:200");
	check("m f=007.250", "m=m f:f=float:7.25");
	check("m f=123456789012345678901234", "m=m f:f=float:1.2345678901234569e+23");
	check("m f=0.000000000000000000000000001", "m=m f:f=float:1e-27");
	check("m f=1e999", "m=m f:f=float:RANGE");
	check("m f=1e-999", "m=m f:f=float:0");
	check("m f=+1", "ERR:field \"f\": invalid value \"+1\"");
	check("m f=1.2.3", "ERR:field \"f\": invalid value \"1.2.3\"");
	check("m f=.", "ERR:field \"f\": invalid value \".\"");
	check("m f=-", "ERR:field \"f\": invalid value \"-\"");
	check("m f=1e", "ERR:field \"f\": invalid value \"1e\"");
	check("m f=e5", "ERR:field \"f\": invalid value \"e5\"");
	check("m f=NaN", "ERR:field \"f\": invalid value \"NaN\"");
	check("m f=inf", "ERR:field \"f\": invalid value \"inf\"");
	check("m f=0x10", "ERR:field \"f\": invalid value \"0x10\"");
	check("m f=abc", "ERR:field \"f\": invalid value \"abc\"");
}

static void lineproto_integers(void **state)
{
	check("m f=1i", "m=m f:f=int:1");
	check("m f=-42i", "m=m f:f=int:-42");
	check("m f=9223372036854775807i", "m=m f:f=int:9223372036854775807");
	check("m f=-9223372036854775808i", "m=m f:f=int:-9223372036854775808");
	check("m f=9223372036854775808i", "ERR:field \"f\": integer 9223372036854775808i out of range");
	check("m f=-9223372036854775809i",
	      "ERR:field \"f\": integer -9223372036854775809i out of range");
	check("m f=i", "ERR:field \"f\": invalid integer \"i\"");
	check("m f=1.5i", "ERR:field \"f\": invalid integer \"1.5i\"");
	check("m f=+1i", "ERR:field \"f\": invalid integer \"+1i\"");
	check("m f=1e3i", "ERR:field \"f\": invalid integer \"1e3i\"");
	check("m f=0u", "m=m f:f=uint:0");
	check("m f=18446744073709551615u", "m=m f:f=uint:18446744073709551615");
	check("m f=18446744073709551616u",
	      "ERR:field \"f\": unsigned integer 18446744073709551616u out of range");
	check("m f=-1u", "ERR:field \"f\": invalid unsigned integer \"-1u\"");
	check("m f=u", "ERR:field \"f\": invalid unsigned integer \"u\"");
}

static void lineproto_booleans(void **state)
{
	check("m a=t,b=T,c=true,d=True,e=TRUE",
	      "m=m f:a=bool:1 f:b=bool:1 f:c=bool:1 f:d=bool:1 f:e=bool:1");
	check("m a=f,b=F,c=false,d=False,e=FALSE",
	      "m=m f:a=bool:0 f:b=bool:0 f:c=bool:0 f:d=bool:0 f:e=bool:0");
	check("m a=FALSE", "m=m f:a=bool:0");
	check("m a=tRUE", "ERR:field \"a\": invalid value \"tRUE\"");
	check("m a=yes", "ERR:field \"a\": invalid value \"yes\"");
}

static void lineproto_timestamps(void **state)
{
	check("m f=1 0", "m=m f:f=float:1 ts=0");
	check("m f=1 -1", "m=m f:f=float:1 ts=-1");
	check("m f=1 9223372036854775807", "m=m f:f=float:1 ts=9223372036854775807");
	check("m f=1 9223372036854775808", "ERR:timestamp 9223372036854775808 out of range");
	check("m f=1 12x", "ERR:invalid timestamp \"12x\"");
	check("m f=1 1.5", "ERR:invalid timestamp \"1.5\"");
	check("m f=1 2026-11-21T10:00:00Z", "ERR:invalid timestamp \"2026-11-21T10:00:00Z\"");
	check("m f=1 1 2", "ERR:text after the timestamp");
	check_prec("m f=1 5", LP_US, "m=m f:f=float:1 ts=5000");
	check_prec("m f=1 5", LP_MS, "m=m f:f=float:1 ts=5000000");
	check_prec("m f=1 1700000000", LP_S, "m=m f:f=float:1 ts=1700000000000000000");
	check_prec("m f=1 -2", LP_M, "m=m f:f=float:1 ts=-120000000000");
	check_prec("m f=1 3", LP_H, "m=m f:f=float:1 ts=10800000000000");
	check_prec("m f=1 9223372037", LP_S, "ERR:timestamp 9223372037 out of range");
	check_prec("m f=1", LP_S, "m=m f:f=float:1");
}

static void lineproto_structure_errors(void **state)
{
	check("cpu", "ERR:no fields");
	check("cpu ", "ERR:no fields");
	check("cpu,host=a", "ERR:no fields");
	check(",host=a f=1", "ERR:empty measurement");
	check(" f=1", "ERR:no fields");
	check("cpu,=a f=1", "ERR:empty tag key");
	check("cpu,host f=1", "ERR:tag \"host\" has no value");
	check("cpu,host= f=1", "ERR:tag \"host\" has an empty value");
	check("cpu,host=a=b f=1", "ERR:tag \"host\": unescaped '=' in its value");
	check("cpu,host=a, f=1", "ERR:empty tag key");
	check("cpu, f=1", "ERR:empty tag key");
	check("cpu f", "ERR:field \"f\" has no value");
	check("cpu f=", "ERR:field \"f\" has no value");
	check("cpu f=1,", "ERR:empty field key");
	check("cpu f=1,g", "ERR:field \"g\" has no value");
	check("cpu =1", "ERR:empty field key");
	check("cpu f=1,,g=2", "ERR:empty field key");
	check("cpu,a=1,b=2,c=3,d=4,e=5,f=6,g=7,h=8 f=1", "m=cpu t:a=1 t:b=2 t:c=3 t:d=4 t:e=5 t:f=6 "
	      "t:g=7 t:h=8 f:f=float:1");
	check("cpu,a=1,b=2,c=3,d=4,e=5,f=6,g=7,h=8,i=9 f=1", "ERR:more than 8 tags");
	check("cpu a=1,b=2,c=3,d=4,e=5,f=6,g=7,h=8,i=9", "ERR:more than 8 fields");
}

static void lineproto_precision_names(void **state)
{
	static const struct {
		const char *text;
		int rc;
		enum lp_precision p;
	} cases[] = {{NULL, 0, LP_NS}, {"", 0, LP_NS}, {"ns", 0, LP_NS}, {"n", 0, LP_NS},
	             {"us", 0, LP_US}, {"u", 0, LP_US}, {"ms", 0, LP_MS}, {"s", 0, LP_S},
	             {"m", 0, LP_M},   {"h", 0, LP_H},  {"S", -1, LP_H},  {"sec", -1, LP_H},
	             {"d", -1, LP_H}};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		enum lp_precision p = LP_H;
		assert_int_equal(lp_precision_parse(cases[i].text, &p), cases[i].rc);
		assert_int_equal(p, cases[i].p);
	}
	assert_int_equal(lp_precision_ns(LP_NS), 1);
	assert_int_equal(lp_precision_ns(LP_H), 3600000000000LL);
}

/* The reader: line numbers counted over blank lines and comments, a bad
 * line reported and the next one read, the last line without '\n'. */
static void lineproto_reader_goes_on_after_bad_lines(void **state)
{
	static const char body[] = "# header\n"
	                           "cpu,host=a v=1 10\n"
	                           "\n"
	                           "cpu,host=b v= 11\r\n"
	                           "mem free=5i 12\n"
	                           "bad\n"
	                           "disk used=0.5";
	struct lp_reader *r = malloc(sizeof *r);
	struct lp_point pt;
	char got[256];
	assert_non_null(r);
	lp_reader_init(r, body, strlen(body), LP_NS);
	assert_int_equal(lp_next(r, &pt), 1);
	assert_int_equal(r->line, 2);
	render(&pt, got, sizeof got);
	assert_string_equal(got, "m=cpu t:host=a f:v=float:1 ts=10");
	assert_int_equal(lp_next(r, &pt), -1);
	assert_int_equal(r->line, 4);
	assert_string_equal(r->why, "field \"v\" has no value");
	assert_int_equal(r->line_len, strlen("cpu,host=b v= 11\r"));
	assert_memory_equal(r->line_p, "cpu,host=b v= 11\r", r->line_len);
	assert_int_equal(lp_next(r, &pt), 1);
	assert_int_equal(r->line, 5);
	render(&pt, got, sizeof got);
	assert_string_equal(got, "m=mem f:free=int:5 ts=12");
	assert_int_equal(lp_next(r, &pt), -1);
	assert_int_equal(r->line, 6);
	assert_string_equal(r->why, "no fields");
	assert_int_equal(lp_next(r, &pt), 1);
	assert_int_equal(r->line, 7);
	render(&pt, got, sizeof got);
	assert_string_equal(got, "m=disk f:used=float:0.5");
	assert_int_equal(lp_next(r, &pt), 0);
	assert_int_equal(lp_next(r, &pt), 0);
	/* An empty body and a lone newline. */
	lp_reader_init(r, "", 0, LP_NS);
	assert_int_equal(lp_next(r, &pt), 0);
	assert_int_equal(r->line, 0);
	lp_reader_init(r, "\n\n", 2, LP_NS);
	assert_int_equal(lp_next(r, &pt), 0);
	assert_int_equal(r->line, 2);
	free(r);
}

/* A NUL byte is an ordinary byte of a name or string; the parser never
 * reads past the length it is given. */
static void lineproto_nul_bytes_and_bounds(void **state)
{
	static const char line[] = "m,t=a\0b s=\"x\0y\" 7";
	struct lp_tag tags[2];
	struct lp_field fields[2];
	struct lp_point pt;
	char why[LP_WHY_MAX];
	assert_int_equal(lp_parse_line(line, sizeof line - 1, LP_NS, &pt, tags, 2, fields, 2, why,
	                               sizeof why), 1);
	assert_int_equal(pt.tags[0].value.len, 3);
	assert_memory_equal(pt.tags[0].value.p, "a\0b", 3);
	assert_int_equal(pt.fields[0].raw.len, 3);
	assert_int_equal(pt.time, 7);
	/* Cut short at every length: never a crash, never a point past it. */
	static const char full[] = "cpu,host=a\\ b v=1.5,s=\"q\\\"\",n=3i 99";
	char *copy;
	for (size_t n = 0; n <= sizeof full - 1; n++) {
		copy = malloc(n ? n : 1);
		memcpy(copy, full, n);
		(void)lp_parse_line(copy, n, LP_NS, &pt, tags, 2, fields, 2, why, sizeof why);
		free(copy);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(lineproto_basic),
		cmocka_unit_test(lineproto_whitespace_and_comments),
		cmocka_unit_test(lineproto_escapes),
		cmocka_unit_test(lineproto_floats),
		cmocka_unit_test(lineproto_integers),
		cmocka_unit_test(lineproto_booleans),
		cmocka_unit_test(lineproto_timestamps),
		cmocka_unit_test(lineproto_structure_errors),
		cmocka_unit_test(lineproto_precision_names),
		cmocka_unit_test(lineproto_reader_goes_on_after_bad_lines),
		cmocka_unit_test(lineproto_nul_bytes_and_bounds),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
