/*
 * input.c -- rows from text: the tsv, csv and jsonl that insert reads.
 *
 * The formats (DESIGN.md sections 5 to 7; the same forms that the mount
 * and, later, query print):
 *
 *   tsv    The first line names the columns, separated by tabs: any of the
 *          table's columns, in any order, each at most once.  Every other
 *          line is a row with exactly as many tab-separated fields.  There
 *          is no quoting: in a field, tab, newline and backslash are
 *          written \t, \n and \\ (any other backslash sequence is an
 *          error), the escapes that val_print writes.  Lines end
 *          with \n alone; a \r before it is data.
 *   csv    RFC 4180: the same header and rows, fields separated by commas;
 *          a field that holds a comma, a quote, \r or \n is quoted in
 *          double quotes, with a quote inside written "".  A quoted field
 *          may span lines; a record ends with \r\n or \n.  No backslash
 *          escapes.
 *   jsonl  One JSON object per line, keys are column names; no header.
 *
 * Values in tsv and csv are the text forms of value.c: decimal integers,
 * numbers as strtod reads them, timestamps as RFC 3339 or integer
 * nanoseconds, strings as they are, blobs as hex.  An empty field of an
 * int32, int64, double or timestamp column takes the column's default (a
 * number is never empty, so printed rows read back the same); an empty
 * string or blob field is the empty value.  In jsonl, integer columns
 * take JSON integers, double columns JSON numbers, timestamp columns
 * integer nanoseconds or a string as in tsv, string columns JSON strings,
 * blob columns base64 strings (DESIGN.md section 5); null takes the
 * default.  In every format a column the input does not give takes its
 * default, and ts the current time.
 *
 * Empty lines (outside a quoted csv field) are skipped everywhere, and a
 * UTF-8 byte order mark before the first line is ignored.  Line numbers
 * count every line read, the skipped ones too, from 1; a row is numbered
 * by the line where it starts.
 *
 * Reading: the bytes come from the file descriptor with read(2) into a
 * buffer of our own, never through stdio, so that a line that arrives in
 * pieces (a pipe fed by `tail -F`) is assembled here and a wait can be
 * bounded: on anything but a regular file each read is preceded by a
 * poll(2) with the caller's wait, and a wait that passes with no byte
 * returns CLI_INPUT_IDLE, keeping the part of the line (or of the
 * multi-line csv record) read so far for the next call.  A regular file
 * is read without poll and ends at its end, as before.
 *
 * Stopping: after cli_input_catch_signals, SIGINT, SIGTERM and SIGHUP
 * only set `caught`; the next wait (or read of a regular file) then
 * returns CLI_INPUT_IDLE at once, leaving any part of a record unread,
 * and the caller, which sees cli_input_caught(), stores the rows it holds
 * and ends by the same signal (cli_input_reraise).  So Ctrl-C on
 * `tail -F app.log | tsstore insert t` loses no row already read whole.
 *
 * State: a reader starts without a header (tsv, csv), takes the first
 * record as the header (read_header fills `map`, field i -> column), then
 * converts each record to a row.  A bad header, a read error or a failed
 * allocation stops it (`stopped`): every later call returns
 * CLI_INPUT_STOP.  A bad record is skipped; the reader goes on.
 */
#include <assert.h>
#include <errno.h>
#include <jansson.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "clitime.h"
#include "input.h"
#include "json.h"
#include "value.h"

#define UTF8_BOM "\xef\xbb\xbf"

/* Longest piece of input quoted in a message. */
#define QUOTE_MAX 80

struct field {
	char *p;    /* NUL-terminated in place */
	size_t len; /* may hold NUL bytes before p[len] */
};

struct cli_input {
	int fd;
	int regular;        /* a regular file: read without poll */
	const char *name;
	enum rowfmt format;
	const ts_schema *schema;
	char *buf;          /* bytes read, [pos, len) not yet taken */
	size_t pos, len, cap;
	size_t scanned;     /* bytes after pos known to hold no newline */
	int eof;            /* read returned 0 */
	char *rec;          /* the record: one line, or more for csv */
	size_t reclen, reccap;
	int rec_open;       /* a record is partly read (an IDLE came inside it) */
	int quoted;         /* csv: the open record is inside a quoted field */
	uint64_t rec_line;  /* the line the record starts on */
	uint64_t lines;     /* lines read */
	uint64_t offset;    /* bytes read */
	int *map;           /* tsv, csv: field i is column map[i]; NULL before the header */
	int nmap;
	struct field *fields;
	int nfields, fieldcap;
	int done;           /* CLI_INPUT_END or CLI_INPUT_STOP once reached, else 1 */
	const struct cli *times; /* timestamps read by clitime.c's rule, or NULL */
};

int cli_input_new(FILE *f, const char *name, enum rowfmt format,
                  const ts_schema *s, struct cli_input **out)
{
	struct cli_input *in = calloc(1, sizeof *in);
	*out = NULL;
	if (!in)
		return TS_ENOMEM;
	struct stat st;
	in->fd = fileno(f);
	in->regular = fstat(in->fd, &st) == 0 && S_ISREG(st.st_mode);
	in->name = name;
	in->format = format;
	in->schema = s;
	in->done = 1;
	*out = in;
	return 0;
}

void cli_input_check_times(struct cli_input *in, const struct cli *cli)
{
	in->times = cli;
}

void cli_input_free(struct cli_input *in)
{
	if (!in)
		return;
	free(in->buf);
	free(in->rec);
	free(in->map);
	free(in->fields);
	free(in);
}

uint64_t cli_input_lines(const struct cli_input *in)
{
	return in->lines;
}

uint64_t cli_input_offset(const struct cli_input *in)
{
	return in->offset;
}

/* ---- records ---- */

static int out_of_memory(char *why, size_t whysz)
{
	snprintf(why, whysz, "out of memory");
	return CLI_INPUT_STOP;
}

/* Make room in buf for more bytes: move the bytes not taken to its
 * start, and grow it when they fill it.  Returns 0 or TS_ENOMEM. */
static int make_room(struct cli_input *in)
{
	if (in->pos > 0) {
		memmove(in->buf, in->buf + in->pos, in->len - in->pos);
		in->len -= in->pos;
		in->pos = 0;
	}
	if (in->len == in->cap) {
		size_t cap = in->cap ? in->cap * 2 : CLI_INPUT_READ_SIZE;
		char *more = realloc(in->buf, cap);
		if (!more)
			return TS_ENOMEM;
		in->buf = more;
		in->cap = cap;
	}
	return 0;
}

/* The stop signal caught (see the top), or 0. */
static volatile sig_atomic_t caught;

static void on_stop_signal(int sig)
{
	caught = sig;
}

void cli_input_catch_signals(void)
{
	static const int sigs[] = {SIGINT, SIGTERM, SIGHUP};
	struct sigaction sa, old;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_stop_signal;
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_RESTART | SA_RESETHAND; /* a second signal ends the run at once */
	for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
		if (sigaction(sigs[i], NULL, &old) == 0 && old.sa_handler != SIG_IGN)
			sigaction(sigs[i], &sa, NULL); /* an ignored one (nohup, &) stays so */
}

int cli_input_caught(void)
{
	return caught;
}

void cli_input_reraise(void)
{
	int sig = caught;
	if (!sig)
		return;
	signal(sig, SIG_DFL);
	raise(sig);
}

/* Wait up to wait_ms (-1: forever) for the descriptor to be readable.
 * Returns 1 when it is (or may be: a regular file, an error to find by
 * reading), 0 when the wait passed or a stop signal was caught. */
static int wait_readable(const struct cli_input *in, int wait_ms)
{
	struct pollfd p = {.fd = in->fd, .events = POLLIN};
	int n;
	if (caught)
		return 0;
	if (in->regular)
		return 1;
	while ((n = poll(&p, 1, wait_ms)) < 0 && errno == EINTR && !caught)
		;
	return caught ? 0 : n != 0;
}

/* Read more bytes into buf.  Returns 1, 0 at the end of the input,
 * CLI_INPUT_IDLE when wait_ms passed with nothing to read, or
 * CLI_INPUT_STOP. */
static int fill(struct cli_input *in, int wait_ms, char *why, size_t whysz)
{
	ssize_t n;
	if (make_room(in) < 0)
		return out_of_memory(why, whysz);
	for (;;) {
		if (!wait_readable(in, wait_ms))
			return CLI_INPUT_IDLE;
		n = read(in->fd, in->buf + in->len, in->cap - in->len);
		if (n > 0) {
			in->len += (size_t)n;
			return 1;
		}
		if (n == 0) {
			in->eof = 1;
			return 0;
		}
		if (errno == EAGAIN && !in->regular) /* a non-blocking descriptor: wait again */
			continue;
		if (errno != EINTR) {
			snprintf(why, whysz, "%s: %s", in->name, strerror(errno));
			return CLI_INPUT_STOP;
		}
	}
}

/* The next line, with its \n (the last one may have none), taken from
 * buf: *p, *n.  Returns 1, 0 at the end of the input, CLI_INPUT_IDLE (the
 * part read so far stays in buf) or CLI_INPUT_STOP. */
static int next_line(struct cli_input *in, int wait_ms, const char **p, size_t *n,
                     char *why, size_t whysz)
{
	for (;;) {
		char *start = in->buf + in->pos;
		char *nl = in->len > in->pos + in->scanned
		               ? memchr(start + in->scanned, '\n', in->len - in->pos - in->scanned)
		               : NULL;
		int rc;
		if (nl || (in->eof && in->len > in->pos)) {
			*p = start;
			*n = nl ? (size_t)(nl + 1 - start) : in->len - in->pos;
			in->pos += *n;
			in->scanned = 0;
			return 1;
		}
		if (in->eof)
			return 0;
		in->scanned = in->len - in->pos;
		if ((rc = fill(in, wait_ms, why, whysz)) < 0 || rc == CLI_INPUT_IDLE)
			return rc;
	}
}

/* Append the next line to rec.  Returns 1, 0 at the end of the input,
 * CLI_INPUT_IDLE or CLI_INPUT_STOP. */
static int append_line(struct cli_input *in, int wait_ms, char *why, size_t whysz)
{
	const char *p;
	size_t n;
	int rc = next_line(in, wait_ms, &p, &n, why, whysz);
	if (rc != 1)
		return rc;
	in->offset += (uint64_t)n;
	if (in->lines++ == 0 && n >= 3 && memcmp(p, UTF8_BOM, 3) == 0) {
		p += 3;
		n -= 3;
	}
	if (in->reclen + n + 1 > in->reccap) {
		size_t cap = (in->reclen + n + 1) * 2;
		char *more = realloc(in->rec, cap);
		if (!more)
			return out_of_memory(why, whysz);
		in->rec = more;
		in->reccap = cap;
	}
	memcpy(in->rec + in->reclen, p, n);
	in->reclen += n;
	in->rec[in->reclen] = '\0';
	return 1;
}

/*
 * Whether a csv record is still inside a quoted field after the n bytes
 * at p, given whether it was before them.  A quote opens a quoted field
 * only at the start of a field; a stray quote elsewhere is left for
 * split_csv to report, so that it never swallows the lines after it.
 */
static int csv_still_quoted(const char *p, size_t n, int quoted)
{
	int field_start = !quoted; /* an unquoted line start starts a record */
	for (size_t i = 0; i < n; i++) {
		if (quoted) {
			if (p[i] == '"' && i + 1 < n && p[i + 1] == '"')
				i++;
			else if (p[i] == '"')
				quoted = 0;
		} else if (p[i] == '"' && field_start) {
			quoted = 1;
			field_start = 0;
		} else {
			field_start = p[i] == ',';
		}
	}
	return quoted;
}

/* One record's lines into rec, without the line end.  Returns
 * CLI_INPUT_ROW, CLI_INPUT_END, CLI_INPUT_BAD (the input ends inside a
 * quoted csv field), CLI_INPUT_IDLE (the record stays open: the next
 * call goes on with it) or CLI_INPUT_STOP. */
static int read_lines(struct cli_input *in, int wait_ms, char *why, size_t whysz)
{
	int rc;
	if (!in->rec_open) {
		in->reclen = 0;
		in->quoted = 0;
		in->rec_line = in->lines + 1;
		in->rec_open = 1;
	}
	do {
		size_t from = in->reclen;
		if ((rc = append_line(in, wait_ms, why, whysz)) == CLI_INPUT_IDLE)
			return rc;
		if (rc <= 0)
			in->rec_open = 0;
		if (rc < 0)
			return rc;
		if (rc == 0 && from == 0)
			return CLI_INPUT_END;
		if (rc == 0) {
			snprintf(why, whysz, "the input ends inside a quoted field");
			return CLI_INPUT_BAD;
		}
		if (in->format == ROWFMT_CSV)
			in->quoted = csv_still_quoted(in->rec + from, in->reclen - from, in->quoted);
	} while (in->quoted);
	in->rec_open = 0;
	if (in->reclen > 0 && in->rec[in->reclen - 1] == '\n')
		in->reclen--;
	if (in->format == ROWFMT_CSV && in->reclen > 0 && in->rec[in->reclen - 1] == '\r')
		in->reclen--;
	in->rec[in->reclen] = '\0';
	return CLI_INPUT_ROW;
}

/* The next record that is not empty; *line: the line it starts on. */
static int read_record(struct cli_input *in, int wait_ms, uint64_t *line, char *why,
                       size_t whysz)
{
	int rc;
	do {
		rc = read_lines(in, wait_ms, why, whysz);
		*line = in->rec_line;
	} while (rc == CLI_INPUT_ROW && in->reclen == 0);
	return rc;
}

/* ---- fields ---- */

/* "column \"NAME\"" for field i of a row, "field N" in a header or past
 * the header's fields. */
static const char *field_label(const struct cli_input *in, int i, char *buf, size_t size)
{
	if (in->map && i < in->nmap)
		snprintf(buf, size, "column \"%s\"", in->schema->columns[in->map[i]].name);
	else
		snprintf(buf, size, "field %d", i + 1);
	return buf;
}

static int add_field(struct cli_input *in, char *p, size_t len)
{
	if (in->nfields == in->fieldcap) {
		int cap = in->fieldcap ? in->fieldcap * 2 : 16;
		struct field *more = realloc(in->fields, (size_t)cap * sizeof *more);
		if (!more)
			return TS_ENOMEM;
		in->fields = more;
		in->fieldcap = cap;
	}
	p[len] = '\0';
	in->fields[in->nfields].p = p;
	in->fields[in->nfields++].len = len;
	return 0;
}

/* Split a tsv record at its tabs, in place (escapes are decoded later,
 * field by field). */
static int split_tsv(struct cli_input *in, char *why, size_t whysz)
{
	char *p = in->rec, *end = in->rec + in->reclen, *tab;
	in->nfields = 0;
	for (;; p = tab + 1) {
		if (!(tab = memchr(p, '\t', (size_t)(end - p))))
			tab = end;
		if (add_field(in, p, (size_t)(tab - p)) < 0)
			return out_of_memory(why, whysz);
		if (tab == end)
			return CLI_INPUT_ROW;
	}
}

/* The quoted csv field at *pp (at its opening quote), unquoted in place
 * to start at dst; *pp moves past the closing quote.  Returns its length.
 * read_lines has seen the closing quote; end only guards against a
 * disagreement with csv_still_quoted. */
static size_t unquote_csv(char **pp, const char *end, char *dst)
{
	char *p = *pp + 1, *w = dst;
	for (; p < end; p++) {
		if (*p == '"' && p + 1 < end && p[1] == '"')
			p++;
		else if (*p == '"')
			break;
		*w++ = *p;
	}
	assert(p < end);
	*pp = p < end ? p + 1 : p;
	return (size_t)(w - dst);
}

/* Split a csv record at its commas, unquoting in place. */
static int split_csv(struct cli_input *in, char *why, size_t whysz)
{
	char *p = in->rec, *end = in->rec + in->reclen, label[TS_NAME_MAX + 16];
	in->nfields = 0;
	for (;;) {
		char *start = p;
		size_t len;
		int more;
		if (*p == '"') {
			len = unquote_csv(&p, end, start);
			if (p < end && *p != ',') {
				snprintf(why, whysz, "%s: text after the closing quote",
				         field_label(in, in->nfields, label, sizeof label));
				return CLI_INPUT_BAD;
			}
		} else {
			while (p < end && *p != ',' && *p != '"')
				p++;
			if (p < end && *p == '"') {
				snprintf(why, whysz, "%s: a quote inside an unquoted field",
				         field_label(in, in->nfields, label, sizeof label));
				return CLI_INPUT_BAD;
			}
			len = (size_t)(p - start);
		}
		more = p < end;
		if (add_field(in, start, len) < 0)
			return out_of_memory(why, whysz);
		if (!more)
			return CLI_INPUT_ROW;
		p++;
	}
}

static int split_record(struct cli_input *in, char *why, size_t whysz)
{
	return in->format == ROWFMT_TSV ? split_tsv(in, why, whysz)
	                                    : split_csv(in, why, whysz);
}

/* Decode the tsv escapes \t \n \\ of f in place. */
static int tsv_unescape(struct field *f, char *why, size_t whysz)
{
	char *w = f->p;
	if (!memchr(f->p, '\\', f->len))
		return 0;
	for (size_t i = 0; i < f->len; i++) {
		char c = f->p[i];
		if (c == '\\' && i + 1 == f->len) {
			snprintf(why, whysz, "a backslash ends the field (want \\t, \\n or \\\\)");
			return TS_EINVAL;
		}
		if (c == '\\') {
			c = f->p[++i];
			if (c != 't' && c != 'n' && c != '\\') {
				snprintf(why, whysz, "unknown escape \\%c (want \\t, \\n or \\\\)", c);
				return TS_EINVAL;
			}
			c = c == 't' ? '\t' : c == 'n' ? '\n' : '\\';
		}
		*w++ = c;
	}
	*w = '\0';
	f->len = (size_t)(w - f->p);
	return 0;
}

/* ---- the header ---- */

/* The record in fields is the header: map each field to its column. */
static int read_header(struct cli_input *in, char *why, size_t whysz)
{
	const ts_schema *s = in->schema;
	if (!(in->map = malloc((size_t)in->nfields * sizeof *in->map)))
		return out_of_memory(why, whysz);
	for (int i = 0; i < in->nfields; i++) {
		const struct field *f = &in->fields[i];
		int col = val_column(s, f->p, f->len, 0);
		if (col < 0) {
			snprintf(why, whysz, "unknown column \"%.*s\"", f->len > QUOTE_MAX ? QUOTE_MAX : (int)f->len,
			         f->p);
			return CLI_INPUT_STOP;
		}
		for (int j = 0; j < i; j++)
			if (in->map[j] == col) {
				snprintf(why, whysz, "column \"%s\" appears twice in the header",
				         s->columns[col].name);
				return CLI_INPUT_STOP;
			}
		in->map[in->nmap++] = col;
	}
	return CLI_INPUT_ROW;
}

/* ---- rows ---- */

static int is_bytes(ts_type type)
{
	return type == TS_STRING || type == TS_BLOB;
}

/* A value's failure as CLI_INPUT_BAD (or STOP when out of memory), with
 * the column in why. */
static int bad_value(const ts_column *c, int rc, const char *reason, char *why, size_t whysz)
{
	if (rc == TS_ENOMEM)
		return out_of_memory(why, whysz);
	snprintf(why, whysz, "column \"%s\": %s", c->name, reason);
	return CLI_INPUT_BAD;
}

/* A timestamp typed by the user (in->times set): clitime.c's rule. */
static int user_time(struct cli_input *in, const char *text, ts_value *out, char *why,
                     size_t whysz)
{
	int64_t ns = 0;
	int rc = cli_time_read(in->times, text, &ns, why, whysz);
	if (rc == 0)
		*out = ts_timestamp(ns);
	return rc;
}

/* A JSON timestamp typed by the user: an integer or a string (one with
 * a NUL byte is left to val_from_json, which refuses it). */
static int user_json_time(struct cli_input *in, json_t *v, ts_value *out, char *why,
                          size_t whysz, int *done)
{
	int64_t ns = 0;
	int rc;
	*done = 1;
	if (json_is_integer(v)) {
		if ((rc = cli_time_integer(in->times, json_integer_value(v), &ns, why, whysz)) == 0)
			*out = ts_timestamp(ns);
		return rc;
	}
	if (json_is_string(v) && strlen(json_string_value(v)) == json_string_length(v))
		return user_time(in, json_string_value(v), out, why, whysz);
	*done = 0;
	return 0;
}

/* Field i of a tsv or csv row into its column's value in row. */
static int field_value(struct cli_input *in, int i, ts_value *row, char *why, size_t whysz)
{
	const ts_column *c = &in->schema->columns[in->map[i]];
	struct field *f = &in->fields[i];
	char reason[CLI_MESSAGE_MAX / 2];
	int rc;
	if (in->format == ROWFMT_TSV && (rc = tsv_unescape(f, reason, sizeof reason)) < 0)
		return bad_value(c, rc, reason, why, whysz);
	if (f->len == 0 && !is_bytes(c->type))
		return CLI_INPUT_ROW; /* the default */
	if (c->type == TS_TIMESTAMP && in->times && strlen(f->p) == f->len)
		rc = user_time(in, f->p, &row[in->map[i]], reason, sizeof reason);
	else
		rc = val_parsen(c->type, f->p, f->len, &row[in->map[i]], reason, sizeof reason);
	return rc < 0 ? bad_value(c, rc, reason, why, whysz) : CLI_INPUT_ROW;
}

static int fields_row(struct cli_input *in, ts_value *row, char *why, size_t whysz)
{
	int rc = split_record(in, why, whysz);
	if (rc != CLI_INPUT_ROW)
		return rc;
	if (in->nfields != in->nmap) {
		snprintf(why, whysz, "%d field%s, the header has %d", in->nfields,
		         in->nfields == 1 ? "" : "s", in->nmap);
		return CLI_INPUT_BAD;
	}
	for (int i = 0; i < in->nfields && rc == CLI_INPUT_ROW; i++)
		rc = field_value(in, i, row, why, whysz);
	return rc;
}

static int object_row(struct cli_input *in, json_t *obj, ts_value *row, char *why, size_t whysz)
{
	char reason[CLI_MESSAGE_MAX / 2];
	const char *key;
	json_t *v;
	if (!json_is_object(obj)) {
		snprintf(why, whysz, "expected a JSON object, got %s", val_json_kind(obj));
		return CLI_INPUT_BAD;
	}
	json_object_foreach(obj, key, v) {
		const ts_column *c;
		int col = val_column(in->schema, key, strlen(key), 0), rc;
		if (col < 0) {
			snprintf(why, whysz, "unknown column \"%.*s\"", QUOTE_MAX, key);
			return CLI_INPUT_BAD;
		}
		c = &in->schema->columns[col];
		int done = 0;
		if (c->type == TS_TIMESTAMP && in->times &&
		    (rc = user_json_time(in, v, &row[col], reason, sizeof reason, &done)) < 0)
			return bad_value(c, rc, reason, why, whysz);
		if (!done && (rc = val_from_json(c->type, v, &row[col], reason, sizeof reason)) < 0)
			return bad_value(c, rc, reason, why, whysz);
	}
	return CLI_INPUT_ROW;
}

static int json_row(struct cli_input *in, ts_value *row, char *why, size_t whysz)
{
	json_error_t err;
	json_t *obj = json_loadb(in->rec, in->reclen, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &err);
	int rc;
	if (!obj) {
		snprintf(why, whysz, "invalid JSON: %s", err.text);
		return CLI_INPUT_BAD;
	}
	rc = object_row(in, obj, row, why, whysz);
	json_decref(obj);
	return rc;
}

/* The record just read: the header, or a row. */
static int take_record(struct cli_input *in, ts_value *row, int *header,
                       char *why, size_t whysz)
{
	int rc;
	*header = 0;
	if (in->format == ROWFMT_JSONL)
		return json_row(in, row, why, whysz);
	if (in->map)
		return fields_row(in, row, why, whysz);
	*header = 1;
	if ((rc = split_record(in, why, whysz)) == CLI_INPUT_BAD)
		rc = CLI_INPUT_STOP; /* a header that cannot be split stops all */
	return rc == CLI_INPUT_ROW ? read_header(in, why, whysz) : rc;
}

static void clear_row(ts_value *row, int n)
{
	for (int i = 0; i < n; i++)
		val_free(&row[i]);
}

int cli_input_next(struct cli_input *in, ts_value *row, uint64_t *line, int wait_ms,
                   char *why, size_t whysz)
{
	int rc = CLI_INPUT_END, header = 1;
	for (int i = 0; i < in->schema->ncolumns; i++)
		row[i] = ts_none();
	*line = 0;
	if (in->done <= 0) {
		if (in->done == CLI_INPUT_STOP)
			snprintf(why, whysz, "stopped");
		return in->done;
	}
	while (header) {
		if ((rc = read_record(in, wait_ms, line, why, whysz)) == CLI_INPUT_ROW)
			rc = take_record(in, row, &header, why, whysz);
		if (rc != CLI_INPUT_ROW)
			break;
	}
	if (rc == CLI_INPUT_END || rc == CLI_INPUT_STOP)
		in->done = rc;
	if (rc == CLI_INPUT_STOP && in->lines < *line)
		*line = 0; /* a read error: about no line */
	if (rc == CLI_INPUT_IDLE)
		*line = 0;
	if (rc != CLI_INPUT_ROW)
		clear_row(row, in->schema->ncolumns);
	return rc;
}
