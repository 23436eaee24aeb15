/*
 * cmd_query.c -- the commands that print rows: query, latest, aggregate,
 * dump and changes.
 *
 *     tsstore query TABLE [--prefix V,...] [--from T] [--to T] [--desc]
 *                         [--limit N] [--after KEY] [--columns COL,...]
 *                         [--no-header] [--format tsv|jsonl|csv]
 *     tsstore latest TABLE --prefix V,... [--columns ...] [--no-header]
 *                         [--format ...]
 *     tsstore aggregate TABLE --every DUR [--group N] --column COL:FN,...
 *                         [--prefix V,...] [--from T] [--to T] [--explain]
 *                         [--raw] [--columns NAME,...] [--no-header]
 *                         [--format ...]
 *     tsstore dump TABLE
 *     tsstore changes TABLE --since V [--until W] [--resolution DUR]
 *                         [--depth N] [--columns ...] [--no-header]
 *                         [--format ...]
 *
 * Each runs in the same steps: parse the arguments into a struct cli_req
 * (usage errors, exit 2, before anything is opened); open the store and
 * the table's schema; turn the texts that need the schema (prefix and
 * after values, aggregate columns) into values (a bad one is a usage
 * error too); name the output's columns and pick those of --columns (an
 * unknown one is a usage error); run the request on the store (store.c:
 * the library with -d, tsstored with -s) and print each row it yields
 * through output.c.  The output is the same in both modes because the
 * rows are the same values either way.
 *
 * Output: a header line (tsv, csv; not with --no-header) naming the
 * columns, then one line per row (rowfmt.c).  aggregate names its
 * columns: the group's key columns, "ts" (the window's start), then
 * "COL_FN" for each function asked for -- valid column names, so that
 * the output can be inserted into a rollup table (the protocol's answer
 * has no names; only the command's header changed from "COL:FN").
 * aggregate answers from a rollup of the table where one fits and pays
 * (ts_aggregate_open; the direct mode opens the table's rollups so that
 * the read-only handle sees them, as tsstored does); --explain says on
 * stderr which: "aggregate: source: r1m, a rollup of m (...)" or
 * "aggregate: source: m (its own rows)"; --raw reads the table's own
 * rows only (TS_AGG_NO_ROLLUP).
 * query with --limit says on stderr when the limit cut the result, with
 * the option that continues it, pastable into a shell (key_text):
 *     query: limit of N rows reached; more: --after web1,2026-11-21T10:00:00Z
 * latest prints the header and the row; when no row has the prefix it
 * prints nothing and fails: "tsstore: latest: no row with prefix (...)".
 * dump is query in jsonl, every column, with a progress line on a
 * terminal; its output is load's input.  changes prints the windows that
 * commits with versions in (V, W] touched (ts_changes_open), one row per
 * key prefix and window: the depth leading key columns, then "from" and
 * "to" (timestamps, to exclusive).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "cli.h"
#include "clitime.h"
#include "output.h"
#include "store.h"
#include "value.h"

/* ---- arguments ---- */

struct query_args {
	const char *table;
	const char *prefix;  /* the --prefix text, split once the schema is known */
	const char *after;   /* the --after text, likewise */
	const char *columns; /* the --columns text, read against the output's names */
	int no_header;       /* --no-header */
	const char *output;  /* --output FILE, else NULL (stdout) */
	struct cli_req req;
	enum rowfmt format;
	int has_format;
	char **specs;        /* aggregate: the --column texts */
	int nspecs;
	int has_since;       /* changes: --since given */
	int explain;         /* aggregate: --explain */
};

static void query_args_free(struct query_args *a)
{
	free(a->specs);
	cli_req_free(&a->req);
}

static int time_option(const struct cli *cli, const char *option, const char *text,
                       int64_t *ns)
{
	return cli_time_option(cli, option, text, ns);
}

static int limit_option(const struct cli *cli, const char *text, uint64_t *limit)
{
	char *end;
	errno = 0;
	unsigned long long n = strtoull(text, &end, 10);
	if (text[0] < '0' || text[0] > '9' || *end || errno || n == 0)
		return cli_usage(cli, "--limit \"%s\": want a positive integer", text);
	*limit = n;
	return CLI_OK;
}

/* A table version (--since, --until): a decimal integer >= 0, as the
 * insert answers and the stat "version" give it. */
static int version_option(const struct cli *cli, const char *option, const char *text,
                          uint64_t *version)
{
	char *end;
	errno = 0;
	unsigned long long n = strtoull(text, &end, 10);
	if (text[0] < '0' || text[0] > '9' || *end || errno)
		return cli_usage(cli, "%s \"%s\": want a table version (a decimal integer, as "
		                 "stats prints \"version\")", option, text);
	*version = n;
	return CLI_OK;
}

static int group_option(const struct cli *cli, const char *text, int *group)
{
	char *end;
	errno = 0;
	long n = strtol(text, &end, 10);
	if (text[0] < '0' || text[0] > '9' || *end || errno || n > TS_KEY_COLUMNS_MAX)
		return cli_usage(cli, "--group \"%s\": want a number of key columns", text);
	*group = (int)n;
	return CLI_OK;
}

/* changes' --depth: key columns before ts naming a prefix. */
static int depth_option(const struct cli *cli, const char *text, int *depth)
{
	char *end;
	errno = 0;
	long n = strtol(text, &end, 10);
	if (text[0] < '0' || text[0] > '9' || *end || errno || n >= TS_KEY_COLUMNS_MAX)
		return cli_usage(cli, "--depth \"%s\": want a number of key columns", text);
	*depth = (int)n;
	return CLI_OK;
}

static int add_spec(const struct cli *cli, struct query_args *a, char *text)
{
	char **more = realloc(a->specs, (size_t)(a->nspecs + 1) * sizeof *more);
	if (!more)
		return cli_fail(cli, "out of memory");
	a->specs = more;
	a->specs[a->nspecs++] = text;
	return CLI_OK;
}

/* One option of the query commands; CLI_OK or the status to stop with. */
static int query_option(const struct cli *cli, int c, struct query_args *a)
{
	struct cli_req *r = &a->req;
	switch (c) {
	case 'p':
		a->prefix = optarg;
		return CLI_OK;
	case 'a':
		a->after = optarg;
		return CLI_OK;
	case 'C':
		a->columns = optarg;
		return CLI_OK;
	case 'H':
		a->no_header = 1;
		return CLI_OK;
	case 'o':
		a->output = optarg;
		return CLI_OK;
	case 'F':
		r->has_from = 1;
		return time_option(cli, "--from", optarg, &r->from);
	case 'T':
		r->has_to = 1;
		return time_option(cli, "--to", optarg, &r->to);
	case 'D':
		r->desc = 1;
		return CLI_OK;
	case 'l':
		return limit_option(cli, optarg, &r->limit);
	case 'f':
		a->has_format = 1;
		if (rowfmt_parse(optarg, &a->format) < 0)
			return cli_usage(cli, "--format \"%s\": want tsv, jsonl or csv", optarg);
		return CLI_OK;
	case 'e':
		return cli_duration_option(cli, "--every", optarg, &r->every);
	case 'g':
		return group_option(cli, optarg, &r->group);
	case 'c':
		return add_spec(cli, a, optarg);
	case 'S':
		a->has_since = 1;
		return version_option(cli, "--since", optarg, &r->changes.since);
	case 'U':
		return version_option(cli, "--until", optarg, &r->changes.until);
	case 'R':
		return cli_duration_option(cli, "--resolution", optarg, &r->changes.resolution);
	case 'N':
		return depth_option(cli, optarg, &r->changes.depth);
	case 'X':
		a->explain = 1;
		return CLI_OK;
	case 'W':
		r->raw = 1;
		return CLI_OK;
	default:
		return CLI_USAGE;
	}
}

/* Parse the arguments of cmd (the options it takes are opts). */
static int parse_query(const struct cli *cli, int argc, char **argv, const struct option *opts,
                       struct query_args *a)
{
	static const char *const names[] = {"TABLE"};
	int c, status = CLI_CONTINUE;
	while ((c = cli_getopt(cli, argc, argv, opts, &status)) >= 0)
		if ((status = query_option(cli, c, a)) != CLI_OK)
			return status;
	if (c == CLI_STOP)
		return status;
	if ((status = cli_operands(cli, argc, argv, names, 1, 1, &a->table)) != CLI_CONTINUE)
		return status;
	if (a->req.has_from && a->req.has_to && a->req.from >= a->req.to)
		return cli_usage(cli, "--from must be before --to");
	return CLI_CONTINUE;
}

/* ---- what needs the schema ---- */

/* The key columns of s as "a,b,ts" in b, for messages. */
static void key_names(struct jbuf *b, const ts_schema *s)
{
	for (int i = 0; i < s->nkey; i++) {
		if (i)
			jbuf_putc(b, ',');
		jbuf_puts(b, s->columns[s->key[i]].name);
	}
}

/* The --after text: a value for every key column (the full key of a
 * row, as the hint of a cut query prints it). */
static int parse_after(const struct cli *cli, const ts_schema *s, const char *text,
                       struct cli_req *r)
{
	struct jbuf b = {0};
	int status = cli_key_values(cli, s, "--after", text, r->after, &r->nafter);
	if (status != CLI_CONTINUE || r->nafter == s->nkey)
		return status;
	key_names(&b, s);
	jbuf_putc(&b, '\0');
	status = b.failed ? cli_fail(cli, "out of memory")
	                  : cli_usage(cli, "--after \"%s\": want a value for each key column: %s",
	                              text, b.p);
	jbuf_free(&b);
	return status;
}

/* One --column text "COL:FN,COL:FN..." into aggregate specs. */
static int parse_specs(const struct cli *cli, const ts_schema *s, char *text, struct cli_req *r)
{
	for (char *save = NULL, *item = strtok_r(text, ",", &save); item;
	     item = strtok_r(NULL, ",", &save)) {
		char *colon = strrchr(item, ':');
		ts_aggfn fn;
		int col;
		if (!colon)
			return cli_usage(cli, "--column \"%s\": want COL:FN", item);
		*colon = '\0';
		if ((col = val_column(s, item, strlen(item), 0)) < 0)
			return cli_usage(cli, "--column: no column \"%s\"", item);
		if (ts_aggfn_parse(colon + 1, &fn) < 0)
			return cli_usage(cli, "--column \"%s:%s\": want count, sum, min, max, mean, "
			                      "first or last", item, colon + 1);
		*colon = ':';
		if (r->nspecs == CLI_AGG_SPECS_MAX)
			return cli_usage(cli, "--column: more than %d functions", CLI_AGG_SPECS_MAX);
		r->specs[r->nspecs++] = (ts_aggspec){.column = col, .fn = fn};
	}
	return CLI_CONTINUE;
}

/* ---- running ---- */

/* run()'s status when latest found no row. */
#define CLI_NO_ROW (-3)

/* What is printed: the columns (all of a row's, or those of --columns)
 * and how. */
struct shape {
	FILE *f;                  /* stdout, or the file of --output */
	const char *path;         /* that file's name, for messages */
	enum rowfmt format;
	const char *const *names; /* of the printed columns */
	int ncolumns;
	const int *pick;          /* printed column i is value pick[i] of a row; NULL: all */
	int header;               /* the header line (tsv, csv) */
	int progress;             /* a progress line on a terminal (dump) */
	int explain;              /* aggregate: say the source on stderr */
};

struct printer {
	const struct cli *cli;
	struct cli_output out;
	const int *pick;   /* as struct shape's */
	ts_value *picked;  /* the printed values of a row, when pick */
	int ncolumns;
	int failed;        /* the output failed */
	int err;           /* its errno */
	ts_value *starred; /* changes in tsv and csv: the row with "*" for the
	                    * wildcard's values (TS_NONE: every prefix), or NULL */
};

static int print_row(void *arg, const ts_value *row, int n)
{
	struct printer *p = arg;
	(void)n;
	for (int i = 0; p->pick && i < p->ncolumns; i++)
		p->picked[i] = row[p->pick[i]]; /* a shallow copy, valid during the call */
	const ts_value *out = p->pick ? p->picked : row;
	if (p->starred) {
		for (int i = 0; i < p->ncolumns; i++)
			p->starred[i] = out[i].type == TS_NONE ? ts_string("*") : out[i];
		out = p->starred;
	}
	if (cli_output_row(&p->out, out) < 0) {
		p->failed = 1;
		p->err = errno;
		return -1;
	}
	return 0;
}

/* Whether the n bytes at t stay one word, as they are, in a shell (sh,
 * bash, zsh): letters, digits and a few marks no shell gives a meaning
 * inside a word. */
static int shell_safe(const char *t, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!(t[i] >= 'a' && t[i] <= 'z') && !(t[i] >= 'A' && t[i] <= 'Z') &&
		    !(t[i] >= '0' && t[i] <= '9') && (!t[i] || !strchr("_.,:+-/@%", t[i])))
			return 0;
	return n > 0;
}

/*
 * The key as --after reads it, as one shell word in b: each value's text
 * (val_text, unescaped) with "," and "\\" escaped by a backslash, joined
 * by commas; in single quotes unless every byte is one a shell leaves
 * alone, so that the line can be pasted.  Out of memory: b->failed.
 */
static void key_text(struct jbuf *b, const ts_value *key, int n)
{
	struct jbuf raw = {0};
	for (int i = 0; i < n; i++) {
		struct jbuf v = {0};
		if (i)
			jbuf_putc(&raw, ',');
		val_text(&v, &key[i], 0);
		for (size_t k = 0; k < v.len; k++) {
			if (v.p[k] == ',' || v.p[k] == '\\')
				jbuf_putc(&raw, '\\');
			jbuf_putc(&raw, v.p[k]);
		}
		raw.failed |= v.failed;
		jbuf_free(&v);
	}
	if (raw.failed) {
		jbuf_fail(b); /* out of memory: no key rather than a wrong one */
	} else if (shell_safe(raw.p, raw.len)) {
		jbuf_put(b, raw.p, raw.len);
	} else {
		jbuf_putc(b, '\'');
		for (size_t k = 0; k < raw.len; k++)
			if (raw.p[k] == '\'')
				jbuf_puts(b, "'\\''");
			else
				jbuf_putc(b, raw.p[k]);
		jbuf_putc(b, '\'');
	}
	jbuf_free(&raw);
}

/* The line saying that the limit cut the result, with the option that
 * continues it when the key is known. */
static void say_more(const struct cli *cli, const struct cli_req *r, const struct cli_more *m)
{
	struct jbuf b = {0};
	fprintf(stderr, "%s: limit of %" PRIu64 " row%s reached; ", cli->cmd->name, r->limit,
	        r->limit == 1 ? "" : "s");
	if (m->nkey)
		key_text(&b, m->key, m->nkey);
	if (m->nkey && !b.failed)
		fprintf(stderr, "more: --after %.*s\n", (int)b.len, b.p);
	else
		fputs("more rows follow\n", stderr);
	jbuf_free(&b);
}

/* aggregate --explain: which table's rows answered (stderr, after the
 * rows): a rollup of the table, whose windows it holds answered, the
 * table's own rows answering the others; or the table alone. */
static void say_source(const struct cli *cli, const struct cli_req *r, const struct cli_more *m)
{
	if (strcmp(m->source, r->table) == 0)
		fprintf(stderr, "%s: source: %s (its own rows)\n", cli->cmd->name, r->table);
	else
		fprintf(stderr, "%s: source: %s, a rollup of %s (%s's own rows for the windows it "
		        "does not answer)\n", cli->cmd->name, m->source, r->table, r->table);
}

/* Run the request and print its rows as sh says. */
static int run(struct cli *cli, struct cli_store *st, struct cli_req *r, const ts_schema *s,
               const struct shape *sh)
{
	struct printer p = {.cli = cli, .pick = sh->pick, .ncolumns = sh->ncolumns};
	struct cli_more more = {0};
	int status;
	if (sh->pick && !(p.picked = calloc((size_t)sh->ncolumns, sizeof *p.picked)))
		return cli_fail(cli, "out of memory");
	if (r->kind == CLI_REQ_CHANGES && sh->format != ROWFMT_JSONL &&
	    !(p.starred = calloc((size_t)sh->ncolumns, sizeof *p.starred))) {
		free(p.picked);
		return cli_fail(cli, "out of memory");
	}
	cli_output_begin(&p.out, cli, sh->f, sh->format, sh->names, sh->ncolumns, sh->header,
	                 sh->progress);
	status = cli_store_rows(cli, st, r, s, print_row, &p, &more);
	free(p.picked);
	free(p.starred);
	if (p.out.rows == 0 && (status != CLI_OK || r->kind == CLI_REQ_LATEST))
		p.out.buf.len = 0; /* no header for a failure, or for latest without its row */
	if (cli_output_end(&p.out) < 0 && !p.failed) {
		p.failed = 1;
		p.err = errno;
	}
	if (p.failed && sh->f != stdout)
		status = cli_fail(cli, "%s: %s", sh->path, strerror(p.err));
	else if (p.failed)
		status = CLI_FAILURE; /* tsstore.c says what happened to stdout */
	else if (status == CLI_OK && more.more)
		say_more(cli, r, &more);
	else if (status == CLI_OK && r->kind == CLI_REQ_LATEST && p.out.rows == 0)
		status = CLI_NO_ROW;
	if (status == CLI_OK && sh->explain && more.source[0])
		say_source(cli, r, &more);
	cli_more_free(&more);
	return status;
}

/* The column names of an aggregate's rows: the group's key columns, "ts",
 * then "COL_FN" per spec (a valid column name, so that the output is
 * insert's input for a table of those columns: COL cut to fit
 * TS_NAME_MAX); the strings are in *text, one allocation. */
static int aggregate_names(const ts_schema *s, const struct cli_req *r, const char ***names,
                           char **text)
{
	size_t size = 0, at = 0;
	int n = r->group + 1 + r->nspecs;
	for (int i = 0; i < r->nspecs; i++)
		size += TS_NAME_MAX + 1;
	if (!(*names = calloc((size_t)n, sizeof **names)) || !(*text = malloc(size + 1)))
		return -1;
	for (int i = 0; i < r->group; i++)
		(*names)[i] = s->columns[s->key[i]].name;
	(*names)[r->group] = "ts";
	for (int i = 0; i < r->nspecs; i++) {
		(*names)[r->group + 1 + i] = *text + at;
		const char *fn = ts_aggfn_name(r->specs[i].fn);
		int room = TS_NAME_MAX - 1 - (int)strlen(fn);
		at += (size_t)sprintf(*text + at, "%.*s_%s", room, s->columns[r->specs[i].column].name,
		                      fn) + 1;
	}
	return n;
}

/* Running a command, step 1: the options each kind requires (latest:
 * --prefix; aggregate: --every and --column).  Returns CLI_CONTINUE, or
 * CLI_USAGE after the message. */
static int check_required(struct cli *cli, const struct query_args *a, enum cli_req_kind kind)
{
	if (kind == CLI_REQ_LATEST && !a->prefix)
		return cli_usage(cli, "missing --prefix");
	if (kind == CLI_REQ_AGGREGATE && !a->req.every)
		return cli_usage(cli, "missing --every");
	if (kind == CLI_REQ_AGGREGATE && a->nspecs == 0)
		return cli_usage(cli, "missing --column");
	if (kind == CLI_REQ_CHANGES && !a->has_since)
		return cli_usage(cli, "missing --since");
	if (kind == CLI_REQ_CHANGES && a->req.changes.until &&
	    a->req.changes.until < a->req.changes.since)
		return cli_usage(cli, "--until must not be below --since");
	return CLI_CONTINUE;
}

/* Step 2: what needs the schema, into a->req: the --prefix and --after
 * values, the aggregate's --column specs, --group checked against the
 * key.  Returns
 * CLI_CONTINUE, or CLI_USAGE after the message. */
static int apply_schema(struct cli *cli, const ts_schema *s, struct query_args *a,
                        enum cli_req_kind kind)
{
	int status = CLI_CONTINUE;
	if (a->prefix)
		status = cli_key_values(cli, s, "--prefix", a->prefix, a->req.prefix, &a->req.nprefix);
	if (a->after && status == CLI_CONTINUE)
		status = parse_after(cli, s, a->after, &a->req);
	for (int i = 0; i < a->nspecs && status == CLI_CONTINUE; i++)
		status = parse_specs(cli, s, a->specs[i], &a->req);
	if (status == CLI_CONTINUE && kind == CLI_REQ_AGGREGATE && a->req.group >= s->nkey)
		status = cli_usage(cli, "--group %d: the table has %d key columns before ts",
		                   a->req.group, s->nkey - 1);
	if (status == CLI_CONTINUE && kind == CLI_REQ_CHANGES && a->req.changes.depth >= s->nkey)
		status = cli_usage(cli, "--depth %d: the table has %d key columns before ts",
		                   a->req.changes.depth, s->nkey - 1);
	return status;
}

/* Step 3: the names of the printed columns: an aggregate's
 * (aggregate_names, strings in *text), else the table's.  Returns their
 * number, or -1 when out of memory. */
static int output_names(const ts_schema *s, const struct cli_req *r, const char ***names,
                        char **text)
{
	int n;
	*text = NULL;
	if (r->kind == CLI_REQ_AGGREGATE)
		return aggregate_names(s, r, names, text);
	if (r->kind == CLI_REQ_CHANGES) {
		/* the prefix's key columns, then the window */
		n = r->changes.depth + 2;
		if (!(*names = calloc((size_t)n, sizeof **names)))
			return -1;
		for (int i = 0; i < r->changes.depth; i++)
			(*names)[i] = s->columns[s->key[i]].name;
		(*names)[n - 2] = "from";
		(*names)[n - 1] = "to";
		return n;
	}
	if (!(*names = calloc((size_t)s->ncolumns, sizeof **names)))
		return -1;
	for (n = 0; n < s->ncolumns; n++)
		(*names)[n] = s->columns[n].name;
	return n;
}

/* The index of name among names[0..n), or -1. */
static int find_name(const char *const *names, int n, const char *name)
{
	for (int i = 0; i < n; i++)
		if (strcmp(names[i], name) == 0)
			return i;
	return -1;
}

/* "a, b, c": the n names, for messages; NULL when out of memory. */
static char *name_list(const char *const *names, int n)
{
	struct jbuf b = {0};
	for (int i = 0; i < n; i++) {
		if (i)
			jbuf_puts(&b, ", ");
		jbuf_puts(&b, names[i]);
	}
	jbuf_putc(&b, '\0');
	if (b.failed)
		jbuf_free(&b);
	return b.p;
}

/* A --columns name that is not among the output's names[0..n). */
static int no_such_column(const struct cli *cli, const char *name, const char *const *names,
                          int n)
{
	char *list = name_list(names, n);
	int status = list ? cli_usage(cli, "--columns: no column \"%s\" (the columns: %s)", name,
	                              list)
	                  : cli_fail(cli, "out of memory");
	free(list);
	return status;
}

/*
 * Step 4, with --columns: the printed columns, in the order given, among
 * the output's names[0..n) (a table's columns, or an aggregate's names):
 * sh->pick and sh->names (allocations of at most n entries each, the
 * names pointing into names) and sh->ncolumns.  Returns CLI_CONTINUE, or
 * CLI_USAGE (an empty, unknown or repeated name) or CLI_FAILURE after
 * the message.
 */
static int pick_columns(const struct cli *cli, const char *text, const char *const *names, int n,
                        struct shape *sh, int **pick, const char ***picked)
{
	char *copy = strdup(text), *save = NULL, *item;
	int status = CLI_CONTINUE, k = 0, len = (int)strlen(text);
	*pick = calloc((size_t)len + 1, sizeof **pick); /* at most a name per comma, and one */
	*picked = calloc((size_t)len + 1, sizeof **picked);
	if (!copy || !*pick || !*picked) {
		free(copy);
		return cli_fail(cli, "out of memory");
	}
	if (len == 0 || text[0] == ',' || text[len - 1] == ',' || strstr(text, ",,"))
		status = cli_usage(cli, "--columns \"%s\": empty column name", text);
	for (item = strtok_r(copy, ",", &save); item && status == CLI_CONTINUE;
	     item = strtok_r(NULL, ",", &save)) {
		int i = find_name(names, n, item);
		if (i < 0)
			status = no_such_column(cli, item, names, n);
		else if (find_name(*picked, k, item) >= 0)
			status = cli_usage(cli, "--columns: column \"%s\" given twice", item);
		else {
			(*pick)[k] = i;
			(*picked)[k++] = names[i];
		}
	}
	free(copy);
	sh->pick = *pick;
	sh->names = *picked;
	sh->ncolumns = k;
	return status;
}

/* Step 5, with --output FILE: the file the rows go to, made or
 * truncated ("-": stdout).  Opened last, so that a usage error leaves an
 * existing file as it was.  Returns CLI_CONTINUE, or CLI_FAILURE after
 * the message. */
static int open_output(const struct cli *cli, const char *path, FILE **f)
{
	*f = stdout;
	if (!path || strcmp(path, "-") == 0)
		return CLI_CONTINUE;
	if (!(*f = fopen(path, "w"))) {
		*f = stdout;
		return cli_fail(cli, "%s: %s", path, strerror(errno));
	}
	return CLI_CONTINUE;
}

/* Close the file of --output (not stdout): bytes it could not write fail
 * a run that had succeeded. */
static int close_output(const struct cli *cli, const struct shape *sh, int status)
{
	if (!sh->f || sh->f == stdout)
		return status;
	if (fclose(sh->f) != 0 && status == CLI_OK)
		return cli_fail(cli, "%s: %s", sh->path, strerror(errno));
	return status;
}

/* The format of the rows: --format, else what --output's extension
 * names, else jsonl for dump and tsv for the others. */
static enum rowfmt output_format(const struct query_args *a, enum cli_req_kind kind)
{
	enum rowfmt f = kind == CLI_REQ_DUMP ? ROWFMT_JSONL : ROWFMT_TSV;
	if (a->has_format)
		return a->format;
	if (a->output)
		rowfmt_from_path(a->output, &f); /* else the default stays */
	return f;
}

/* query, latest, aggregate and dump: the options, then steps 1 to 5 with
 * the store open, then run. */
static int run_command(struct cli *cli, int argc, char **argv, const struct option *opts,
                       enum cli_req_kind kind)
{
	struct query_args a = {.req = {.kind = kind}};
	struct cli_store *st = NULL;
	struct shape sh = {0};
	ts_schema *s = NULL;
	const char **names = NULL, **picked = NULL;
	int *pick = NULL;
	char *text = NULL;
	int n, status = parse_query(cli, argc, argv, opts, &a);
	if (status != CLI_CONTINUE || (status = check_required(cli, &a, kind)) != CLI_CONTINUE)
		goto out;
	a.req.table = a.table;
	if ((status = cli_store_open(cli, TS_OPEN_READONLY, &st)) != CLI_OK ||
	    (status = cli_store_schema(cli, st, a.table, &s)) != CLI_OK ||
	    (status = apply_schema(cli, s, &a, kind)) != CLI_CONTINUE)
		goto out;
	if ((n = output_names(s, &a.req, &names, &text)) < 0) {
		status = cli_fail(cli, "out of memory");
		goto out;
	}
	sh = (struct shape){
		.path = a.output, .format = output_format(&a, kind),
		.names = names, .ncolumns = n, .header = !a.no_header,
		.progress = kind == CLI_REQ_DUMP, .explain = a.explain,
	};
	if ((a.columns &&
	     (status = pick_columns(cli, a.columns, names, n, &sh, &pick, &picked)) != CLI_CONTINUE) ||
	    (status = open_output(cli, a.output, &sh.f)) != CLI_CONTINUE)
		goto out;
	status = run(cli, st, &a.req, s, &sh);
	if (status == CLI_NO_ROW)
		status = cli_fail(cli, "no row with prefix \"%s\"", a.prefix);
out:
	status = close_output(cli, &sh, status);
	free(names);
	free(picked);
	free(pick);
	free(text);
	cli_schema_free(s);
	query_args_free(&a);
	return cli_store_close(cli, st, status);
}

/* The options every reading command ends with: how its rows are
 * written, and --help; then the end of the table. */
#define OUTPUT_OPTIONS                             \
	{"format", required_argument, NULL, 'f'},  \
	{"columns", required_argument, NULL, 'C'}, \
	{"no-header", no_argument, NULL, 'H'},     \
	{"output", required_argument, NULL, 'o'},  \
	{"help", no_argument, NULL, 'h'},          \
	{NULL, 0, NULL, 0}

int cli_cmd_query(struct cli *cli, int argc, char **argv)
{
	static const struct option opts[] = {
		{"prefix", required_argument, NULL, 'p'},
		{"from", required_argument, NULL, 'F'},
		{"to", required_argument, NULL, 'T'},
		{"desc", no_argument, NULL, 'D'},
		{"limit", required_argument, NULL, 'l'},
		{"after", required_argument, NULL, 'a'},
		OUTPUT_OPTIONS,
	};
	return run_command(cli, argc, argv, opts, CLI_REQ_QUERY);
}

int cli_cmd_latest(struct cli *cli, int argc, char **argv)
{
	static const struct option opts[] = {
		{"prefix", required_argument, NULL, 'p'},
		OUTPUT_OPTIONS,
	};
	return run_command(cli, argc, argv, opts, CLI_REQ_LATEST);
}

int cli_cmd_aggregate(struct cli *cli, int argc, char **argv)
{
	static const struct option opts[] = {
		{"every", required_argument, NULL, 'e'},
		{"group", required_argument, NULL, 'g'},
		{"column", required_argument, NULL, 'c'},
		{"prefix", required_argument, NULL, 'p'},
		{"from", required_argument, NULL, 'F'},
		{"to", required_argument, NULL, 'T'},
		{"explain", no_argument, NULL, 'X'},
		{"raw", no_argument, NULL, 'W'},
		OUTPUT_OPTIONS,
	};
	return run_command(cli, argc, argv, opts, CLI_REQ_AGGREGATE);
}

int cli_cmd_changes(struct cli *cli, int argc, char **argv)
{
	static const struct option opts[] = {
		{"since", required_argument, NULL, 'S'},
		{"until", required_argument, NULL, 'U'},
		{"resolution", required_argument, NULL, 'R'},
		{"depth", required_argument, NULL, 'N'},
		OUTPUT_OPTIONS,
	};
	return run_command(cli, argc, argv, opts, CLI_REQ_CHANGES);
}

int cli_cmd_dump(struct cli *cli, int argc, char **argv)
{
	static const struct option opts[] = {
		{"output", required_argument, NULL, 'o'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	return run_command(cli, argc, argv, opts, CLI_REQ_DUMP);
}
