/*
 * view.c -- the mounted view: the paths of DESIGN.md section 6 as FUSE
 * operations over a ts_db.
 *
 *     /                                    the tables
 *     /T/schema, /T/stats                  as `tsstore schema T` / `stats T`
 *     /T/recent/{1h,6h,24h,7d}.FMT         rows with ts in [now - d, now)
 *     /T/days/                             the days (UTC) that hold rows
 *     /T/days/YYYY-MM-DD/all.FMT           the day
 *     /T/days/YYYY-MM-DD/HH.FMT            one hour of it (listed when it
 *                                          holds rows; any hour opens)
 *     /T/range/FROM_TO.FMT                 not listed; FROM and TO are
 *                                          timestamps (RFC 3339 or ns)
 * FMT is tsv, csv or jsonl, in the forms of common/rowfmt.c, so a file
 * reads exactly as `tsstore query T --from ... --to ... --format FMT`.
 * Any other name is ENOENT (a reversed or empty range too, as the query
 * refuses --from >= --to); the view is read-only (the mount is "ro",
 * and opening for writing is EROFS).
 *
 * Listing and lookup agree: every name readdir gives, parse accepts and
 * open opens.  The one place they could part is the edges of time: the
 * int64 ns range starts and ends inside a day (1677-09-21, 2262-04-11),
 * whose midnight or end is no timestamp; day_window clamps every window
 * of a day to the range (the end inclusive at INT64_MAX), and the
 * listing, whose aggregate is half open, looks for a row at INT64_MAX
 * apart.
 *
 * Contents.  A file's text is generated when it is read, from a query
 * cursor opened at open(): one snapshot per open file, so a file opened
 * before an insert never shows it and one opened after does.  Nothing is
 * cached between opens and no window is final: late rows may land in any
 * day, which is why every file is opened with direct_io (the kernel asks
 * us for every read, like procfs) and reports st_size 0.  Tools that
 * read to end of file (cat, grep, awk, sort, cut, head, tail, wc, cp)
 * work; a tool that trusts st_size to decide how much to read sees an
 * empty file (docs/fuse.md).
 *
 * Memory per open file is bounded: text is generated in steps of
 * TSFS_CHUNK bytes and dropped once the reader is past it.  A read at an
 * offset already dropped rewinds the cursor (ts_cursor_rewind: the same
 * snapshot, so the same bytes) and generates up to it again.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "json.h"
#include "rowfmt.h"
#include "view.h"

#define NS_HOUR (INT64_C(3600) * 1000000000)
#define NS_DAY (24 * NS_HOUR)

/* The windows of recent/, by name. */
static const struct {
	const char *name;
	int64_t ns;
} recents[] = {
	{"1h", NS_HOUR},
	{"6h", 6 * NS_HOUR},
	{"24h", 24 * NS_HOUR},
	{"7d", 7 * NS_DAY},
};
#define NRECENTS (sizeof recents / sizeof recents[0])

static const char *const formats[] = {"tsv", "csv", "jsonl"};


/* ---- paths ---- */

enum node_kind {
	N_ROOT,
	N_TABLE,
	N_SCHEMA,
	N_STATS,
	N_RECENT,
	N_DAYS,
	N_DAY,
	N_RANGE,
	N_WINDOW, /* a file of rows */
};

struct node {
	enum node_kind kind;
	char table[TS_NAME_MAX + 1];
	int64_t day;        /* N_DAY, N_WINDOW of a day: days since 1970-01-01 */
	int64_t from, to;   /* N_DAY, N_WINDOW: [from, to), or [from, to] when */
	int to_inclusive;   /*   the window reaches past INT64_MAX */
	int64_t recent;     /* N_WINDOW of recent/: its length (from, to at open) */
	enum rowfmt format; /* N_WINDOW */
};

/* An open file. */
struct tsfs_file {
	pthread_mutex_t mu;
	struct tsfs_file *prev, *next;  /* in the view's list of open files */
	ts_table *table;
	ts_cursor *cur;                /* NULL: all the text is in buf */
	ts_schema *schema;
	const char **names;
	enum rowfmt format;
	struct jbuf buf;               /* text [off, off + buf.len) */
	uint64_t off;
	int eof;
};

struct tsfs_view {
	ts_db *db;
	char *datadir;                 /* tsfs_view_open: opened by init, closed by destroy */
	pthread_mutex_t mu;            /* the list of open files */
	struct tsfs_file *files;
};

static struct tsfs_view *view(void)
{
	return fuse_get_context()->private_data;
}

/* Whether table name exists in v's database. */
static int table_exists(struct tsfs_view *v, const char *name)
{
	ts_table *t;
	if (!v->db || !ts_name_valid(name) || ts_table_open(v->db, name, &t) < 0)
		return 0;
	ts_table_close(t);
	return 1;
}

/* name without its ".tsv" / ".csv" / ".jsonl" in base (of room bytes),
 * and the format.  Returns 0, or -1 when it has none of them. */
static int split_format(const char *name, char *base, size_t room, enum rowfmt *f)
{
	const char *dot = strrchr(name, '.');
	size_t n = dot ? (size_t)(dot - name) : 0;
	if (!dot || n == 0 || n >= room || rowfmt_parse(dot + 1, f) < 0)
		return -1;
	memcpy(base, name, n);
	base[n] = '\0';
	return 0;
}

/*
 * The window [start + off, start + off + len) of day `day` (days since the
 * epoch) in n->from, n->to, clamped to the timestamps there are: the
 * first and last days of the int64 ns range are partial (it runs from
 * 1677-09-21T00:12:43.145224192Z to 2262-04-11T23:47:16.854775807Z), so
 * the first day's windows start at INT64_MIN, and a window past INT64_MAX
 * ends there, inclusive, so that a row at INT64_MAX is in its day.
 * Returns 0, or -1 when no timestamp lies in the window.
 */
static int day_window(int64_t day, int64_t off, int64_t len, struct node *n)
{
	__int128 start = (__int128)day * NS_DAY + off, end = start + len;
	if (end <= INT64_MIN || start > INT64_MAX)
		return -1;
	n->from = start < INT64_MIN ? INT64_MIN : (int64_t)start;
	n->to_inclusive = end > INT64_MAX;
	n->to = n->to_inclusive ? INT64_MAX : (int64_t)end;
	return 0;
}

/* floor(a / b), b > 0. */
static int64_t floor_div(int64_t a, int64_t b)
{
	return a / b - (a % b < 0);
}

/* "YYYY-MM-DD" as its number of days since 1970-01-01 (UTC), and its
 * window.  Returns 0, or -1 when it is no date or no timestamp lies in
 * it.  Noon is parsed, not midnight: noon of each edge day of the int64
 * range is a timestamp, its midnight (1677-09-21) or end (2262-04-11)
 * is not. */
static int parse_day(const char *text, struct node *n)
{
	char full[32], back[TS_TIME_BUFSZ];
	int64_t noon;
	if (strlen(text) != 10)
		return -1;
	for (int i = 0; i < 10; i++)
		if (i == 4 || i == 7 ? text[i] != '-' : text[i] < '0' || text[i] > '9')
			return -1;
	snprintf(full, sizeof full, "%sT12:00:00Z", text);
	if (ts_time_parse(full, &noon) < 0 || ts_time_format(noon, back, sizeof back) < 0 ||
	    strncmp(back, text, 10) != 0)
		return -1;
	n->day = floor_div(noon, NS_DAY);
	return day_window(n->day, 0, NS_DAY, n);
}

/* "FROM_TO" of range/.  Returns 0 or -1. */
static int parse_range(char *text, int64_t *from, int64_t *to)
{
	char *sep = strchr(text, '_');
	if (!sep || strchr(sep + 1, '_'))
		return -1;
	*sep = '\0';
	int rc = ts_time_parse(text, from) < 0 || ts_time_parse(sep + 1, to) < 0 || *from >= *to;
	*sep = '_';
	return rc ? -1 : 0;
}

/* The file name under day n->day: "all" or "HH". */
static int parse_in_day(const char *base, struct node *n)
{
	if (strcmp(base, "all") == 0)
		return day_window(n->day, 0, NS_DAY, n);
	if (strlen(base) != 2 || base[0] < '0' || base[0] > '2' || base[1] < '0' || base[1] > '9')
		return -1;
	int hour = (base[0] - '0') * 10 + base[1] - '0';
	if (hour > 23)
		return -1;
	return day_window(n->day, hour * NS_HOUR, NS_HOUR, n);
}

/* A file of rows in directory kind dir (recent, a day, range). */
static int parse_window(enum node_kind dir, const char *name, struct node *n)
{
	char base[256];
	if (split_format(name, base, sizeof base, &n->format) < 0)
		return -1;
	n->kind = N_WINDOW;
	if (dir == N_DAY)
		return parse_in_day(base, n);
	if (dir == N_RANGE)
		return parse_range(base, &n->from, &n->to);
	for (size_t i = 0; i < NRECENTS; i++)
		if (strcmp(base, recents[i].name) == 0) {
			n->recent = recents[i].ns;
			return 0;
		}
	return -1;
}

/* The node at path.  Returns 0 or -ENOENT. */
static int parse(struct tsfs_view *v, const char *path, struct node *n)
{
	char copy[1024], *save = NULL, *part[5];
	int depth = 0;
	memset(n, 0, sizeof *n);
	if (strlen(path) >= sizeof copy)
		return -ENOENT;
	strcpy(copy, path);
	for (char *p = strtok_r(copy, "/", &save); p; p = strtok_r(NULL, "/", &save)) {
		if (depth == 5)
			return -ENOENT;
		part[depth++] = p;
	}
	if (depth == 0)
		return 0; /* N_ROOT */
	if (strlen(part[0]) > TS_NAME_MAX || !table_exists(v, part[0]))
		return -ENOENT;
	strcpy(n->table, part[0]);
	n->kind = N_TABLE;
	if (depth == 1)
		return 0;
	if (strcmp(part[1], "schema") == 0 || strcmp(part[1], "stats") == 0) {
		n->kind = part[1][1] == 'c' ? N_SCHEMA : N_STATS;
		return depth == 2 ? 0 : -ENOENT;
	}
	if (strcmp(part[1], "recent") == 0)
		n->kind = N_RECENT;
	else if (strcmp(part[1], "days") == 0)
		n->kind = N_DAYS;
	else if (strcmp(part[1], "range") == 0)
		n->kind = N_RANGE;
	else
		return -ENOENT;
	if (depth == 2)
		return 0;
	if (n->kind == N_DAYS) {
		if (parse_day(part[2], n) < 0)
			return -ENOENT;
		n->kind = N_DAY;
		if (depth == 3)
			return 0;
		return depth == 4 && parse_window(N_DAY, part[3], n) == 0 ? 0 : -ENOENT;
	}
	return depth == 3 && parse_window(n->kind, part[2], n) == 0 ? 0 : -ENOENT;
}

/* ---- attributes and listings ---- */

static int tsfs_getattr(const char *path, struct stat *st, struct fuse_file_info *fi)
{
	struct node n;
	int rc = parse(view(), path, &n);
	(void)fi;
	if (rc < 0)
		return rc;
	memset(st, 0, sizeof *st);
	st->st_uid = getuid();
	st->st_gid = getgid();
	if (n.kind == N_SCHEMA || n.kind == N_STATS || n.kind == N_WINDOW) {
		st->st_mode = S_IFREG | 0444;
		st->st_nlink = 1;
		st->st_size = 0; /* generated at open: see the top of this file */
	} else {
		st->st_mode = S_IFDIR | 0555;
		st->st_nlink = 2;
	}
	return 0;
}

/* The entry of the window starting at w: a day "YYYY-MM-DD" (every is a
 * day) or an hour's "HH.FMT" in each format.  w is a window start as
 * ts_aggregate_open gives it, which for the first window of the int64
 * range is INT64_MIN, inside the day 1677-09-21 and its hour 00. */
static void fill_window(void *buf, fuse_fill_dir_t filler, int64_t w, int64_t every)
{
	char text[TS_TIME_BUFSZ], name[32];
	if (ts_time_format(w, text, sizeof text) < 0)
		return;
	if (every == NS_DAY) {
		snprintf(name, sizeof name, "%.10s", text);
		filler(buf, name, NULL, 0, 0);
		return;
	}
	for (size_t f = 0; f < sizeof formats / sizeof formats[0]; f++) {
		snprintf(name, sizeof name, "%.2s.%s", text + 11, formats[f]);
		filler(buf, name, NULL, 0, 0);
	}
}

/* Whether t holds a row whose ts is INT64_MAX: 1, 0 or -1. */
static int has_last_instant(ts_table *t)
{
	ts_query q = {.from = INT64_MAX, .has_from = 1, .limit = 1};
	ts_cursor *cur = NULL;
	const ts_value *row = NULL;
	int rc = ts_query_open(t, &q, &cur);
	if (rc == 0)
		rc = ts_cursor_next(cur, &row, NULL);
	ts_cursor_close(cur);
	return rc < 0 ? -1 : row != NULL;
}

/*
 * The windows of `every` (a day or an hour) holding rows in the window of
 * n (a day's, or every day's), each listed by fill_window, exactly as
 * parse accepts them back.  The aggregate's range is half open, so a row
 * at INT64_MAX, which n's window holds when it is to_inclusive, is looked
 * for apart, and its window listed unless the aggregate's last was it.
 */
static int list_windows(struct tsfs_view *v, const struct node *n, int64_t every, void *buf,
                        fuse_fill_dir_t filler)
{
	ts_table *t;
	ts_cursor *cur = NULL;
	const ts_value *row;
	int64_t last = INT64_MIN, max_window = floor_div(INT64_MAX, every) * every;
	int any = 0, rc = ts_table_open(v->db, n->table, &t);
	if (rc < 0)
		return -ENOENT;
	ts_aggregate a = {.from = n->from, .to = n->to, .every = every};
	if (a.from < a.to && (rc = ts_aggregate_open(t, &a, &cur)) == 0)
		while ((rc = ts_cursor_next(cur, &row, NULL)) == 0 && row) {
			fill_window(buf, filler, row[0].v.i, every);
			last = row[0].v.i;
			any = 1;
		}
	ts_cursor_close(cur);
	if (rc == 0 && n->to_inclusive && !(any && last == max_window) &&
	    (rc = has_last_instant(t)) == 1)
		fill_window(buf, filler, max_window, every);
	ts_table_close(t);
	return rc < 0 ? -EIO : 0;
}

/* Every format of the file named base. */
static void fill_formats(void *buf, fuse_fill_dir_t filler, const char *base)
{
	for (size_t f = 0; f < sizeof formats / sizeof formats[0]; f++) {
		char name[64];
		snprintf(name, sizeof name, "%s.%s", base, formats[f]);
		filler(buf, name, NULL, 0, 0);
	}
}

/* The tables that open: one the library cannot open (a damaged
 * descriptor) would be listed and then ENOENT at its lookup, which is
 * table_exists; `tsstore check` is where it is reported. */
static int list_tables(struct tsfs_view *v, void *buf, fuse_fill_dir_t filler)
{
	char **names = NULL;
	if (!v->db || ts_tables(v->db, &names, NULL) < 0)
		return -EIO;
	for (int i = 0; names[i]; i++)
		if (table_exists(v, names[i]))
			filler(buf, names[i], NULL, 0, 0);
	ts_free_names(names);
	return 0;
}

static int tsfs_readdir(const char *path, void *buf, fuse_fill_dir_t filler, off_t off,
                      struct fuse_file_info *fi, enum fuse_readdir_flags flags)
{
	struct tsfs_view *v = view();
	struct node n;
	int rc = parse(v, path, &n);
	(void)off;
	(void)fi;
	(void)flags;
	if (rc < 0)
		return rc;
	filler(buf, ".", NULL, 0, 0);
	filler(buf, "..", NULL, 0, 0);
	switch (n.kind) {
	case N_ROOT:
		return list_tables(v, buf, filler);
	case N_TABLE:
		for (size_t i = 0; i < 5; i++)
			filler(buf, (const char *[]){"schema", "stats", "recent", "days", "range"}[i], NULL,
			       0, 0);
		return 0;
	case N_RECENT:
		for (size_t i = 0; i < NRECENTS; i++)
			fill_formats(buf, filler, recents[i].name);
		return 0;
	case N_DAYS:
		n.from = INT64_MIN;
		n.to = INT64_MAX;
		n.to_inclusive = 1;
		return list_windows(v, &n, NS_DAY, buf, filler);
	case N_DAY:
		fill_formats(buf, filler, "all");
		return list_windows(v, &n, NS_HOUR, buf, filler);
	case N_RANGE:
		return 0; /* opened by name only */
	default:
		return -ENOTDIR;
	}
}

/* ---- open files ---- */

static void file_free(struct tsfs_file *f)
{
	ts_cursor_close(f->cur);
	ts_table_close(f->table);
	free(f->names);
	ts_schema_free(f->schema);
	jbuf_free(&f->buf);
	pthread_mutex_destroy(&f->mu);
	free(f);
}

/* The text of schema or stats, whole. */
static int static_text(struct tsfs_file *f, enum node_kind kind)
{
	if (kind == N_SCHEMA) {
		ts_schema *s;
		if (ts_table_schema(f->table, &s) < 0)
			return -EIO;
		rowfmt_schema(&f->buf, s);
		ts_schema_free(s);
	} else {
		ts_stat st[TS_STATS_MAX];
		int n;
		if (ts_table_stats(f->table, st, TS_STATS_MAX, &n) < 0)
			return -EIO;
		for (int i = 0; i < n; i++) {
			char text[ROWFMT_STAT_TEXT_MAX];
			const char *name;
			char base[TS_NAME_MAX + 8];
			rowfmt_stat(&f->buf, "", st[i].name, st[i].value, NULL);
			if (rowfmt_stat_text(&st[i], &name, text, sizeof text))
				rowfmt_stat(&f->buf, "", name, 0, text);
			if (rowfmt_stat_duration(st[i].name, st[i].value, base, sizeof base, text,
			                         sizeof text))
				rowfmt_stat(&f->buf, "", base, 0, text);
		}
	}
	f->eof = 1;
	return f->buf.failed ? -ENOMEM : 0;
}

/* Open the query of a window file, and write its header. */
static int start_rows(struct tsfs_view *v, struct tsfs_file *f, const struct node *n)
{
	ts_query q;
	memset(&q, 0, sizeof q);
	q.has_from = q.has_to = 1;
	q.from = n->from;
	q.to = n->to;
	q.to_inclusive = n->to_inclusive;
	if (n->recent) {
		q.to = ts_now(v->db);
		/* [now - d, now), from the first timestamp when that is later */
		q.from = q.to < INT64_MIN + n->recent ? INT64_MIN : q.to - n->recent;
	}
	/* The cursor's rows are in the schema of its snapshot: a schema read
	 * before and after the open with the same version is that one (an
	 * alter between them is rare: open again). */
	for (int tries = 0;; tries++) {
		ts_schema *after = NULL;
		if (ts_table_schema(f->table, &f->schema) < 0)
			return -ENOMEM;
		if (ts_query_open(f->table, &q, &f->cur) < 0)
			return -EIO;
		if (ts_table_schema(f->table, &after) < 0)
			return -ENOMEM;
		int same = after->version == f->schema->version;
		ts_schema_free(after);
		if (same)
			break;
		if (tries == 10)
			return -EAGAIN;
		ts_cursor_close(f->cur);
		ts_schema_free(f->schema);
		f->cur = NULL;
		f->schema = NULL;
	}
	if (!(f->names = calloc((size_t)f->schema->ncolumns, sizeof *f->names)))
		return -ENOMEM;
	for (int i = 0; i < f->schema->ncolumns; i++)
		f->names[i] = f->schema->columns[i].name;
	f->format = n->format;
	rowfmt_header(&f->buf, f->format, f->names, f->schema->ncolumns);
	return 0;
}

static int tsfs_open(const char *path, struct fuse_file_info *fi)
{
	struct tsfs_view *v = view();
	struct tsfs_file *f;
	struct node n;
	int rc = parse(v, path, &n);
	if (rc < 0)
		return rc;
	if (n.kind != N_SCHEMA && n.kind != N_STATS && n.kind != N_WINDOW)
		return -EISDIR;
	if ((fi->flags & O_ACCMODE) != O_RDONLY)
		return -EROFS;
	if (!(f = calloc(1, sizeof *f)))
		return -ENOMEM;
	pthread_mutex_init(&f->mu, NULL);
	if (ts_table_open(v->db, n.table, &f->table) < 0)
		rc = -ENOENT;
	else
		rc = n.kind == N_WINDOW ? start_rows(v, f, &n) : static_text(f, n.kind);
	if (rc < 0) {
		file_free(f);
		return rc;
	}
	pthread_mutex_lock(&v->mu);
	f->next = v->files;
	if (v->files)
		v->files->prev = f;
	v->files = f;
	pthread_mutex_unlock(&v->mu);
	fi->fh = (uint64_t)(uintptr_t)f;
	fi->direct_io = 1;
	fi->keep_cache = 0;
	return 0;
}

/* Generate rows until the text reaches end (an offset) or the rows end.
 * Returns 0 or -EIO / -ENOMEM. */
static int generate(struct tsfs_file *f, uint64_t end)
{
	const ts_value *row;
	int n;
	while (!f->eof && f->off + f->buf.len < end) {
		size_t target = f->buf.len + TSFS_CHUNK;
		while (f->buf.len < target) {
			int rc = ts_cursor_next(f->cur, &row, &n);
			if (rc < 0)
				return -EIO;
			if (!row) {
				f->eof = 1;
				break;
			}
			rowfmt_row(&f->buf, f->format, f->names, row, n);
		}
		if (f->buf.failed)
			return -ENOMEM;
	}
	return 0;
}

/* Drop the text before offset at (rows files only). */
static void drop_before(struct tsfs_file *f, uint64_t at)
{
	if (!f->cur || at <= f->off)
		return;
	size_t k = at - f->off < f->buf.len ? (size_t)(at - f->off) : f->buf.len;
	memmove(f->buf.p, f->buf.p + k, f->buf.len - k);
	f->buf.len -= k;
	f->off += k;
}

/* Back to offset 0 of the same snapshot. */
static int rewind_rows(struct tsfs_file *f)
{
	if (ts_cursor_rewind(f->cur) < 0)
		return -EIO;
	f->buf.len = 0;
	f->off = 0;
	f->eof = 0;
	rowfmt_header(&f->buf, f->format, f->names, f->schema->ncolumns);
	return 0;
}

static int tsfs_read(const char *path, char *out, size_t size, off_t off, struct fuse_file_info *fi)
{
	struct tsfs_file *f = (struct tsfs_file *)(uintptr_t)fi->fh;
	uint64_t at = (uint64_t)off;
	int rc = 0;
	(void)path;
	pthread_mutex_lock(&f->mu);
	if (at < f->off)
		rc = rewind_rows(f);
	/* generate up to the offset a chunk at a time, dropping as we go */
	while (rc == 0 && !f->eof && f->off + f->buf.len < at) {
		drop_before(f, at);
		rc = generate(f, f->off + f->buf.len + 1);
	}
	if (rc == 0) {
		drop_before(f, at);
		rc = generate(f, at + size);
	}
	if (rc == 0) {
		uint64_t have = f->off + f->buf.len > at ? f->off + f->buf.len - at : 0;
		size_t n = have < size ? (size_t)have : size;
		if (n)
			memcpy(out, f->buf.p + (at - f->off), n);
		rc = (int)n;
	}
	pthread_mutex_unlock(&f->mu);
	return rc;
}

static int tsfs_release(const char *path, struct fuse_file_info *fi)
{
	struct tsfs_view *v = view();
	struct tsfs_file *f = (struct tsfs_file *)(uintptr_t)fi->fh;
	(void)path;
	pthread_mutex_lock(&v->mu);
	if (f->prev)
		f->prev->next = f->next;
	else
		v->files = f->next;
	if (f->next)
		f->next->prev = f->prev;
	pthread_mutex_unlock(&v->mu);
	file_free(f);
	return 0;
}

/* ---- the view ---- */

static void *tsfs_init(struct fuse_conn_info *conn, struct fuse_config *cfg)
{
	struct tsfs_view *v = fuse_get_context()->private_data;
	(void)conn;
	if (v->datadir && !v->db) {
		/* here, not before fuse_main: it may have forked into the background */
		ts_options opts;
		ts_options_init(&opts);
		opts.flags = TS_OPEN_READONLY;
		if (ts_open(v->datadir, &opts, &v->db) < 0) {
			fprintf(stderr, "tsstore-fuse: %s: %s\n", v->datadir, ts_errmsg(NULL));
			v->db = NULL; /* the mount is empty: every lookup fails */
		}
	}
	cfg->direct_io = 1;
	cfg->kernel_cache = 0;
	cfg->entry_timeout = 1;    /* tables come and go */
	cfg->attr_timeout = 1;
	cfg->negative_timeout = 0;
	return fuse_get_context()->private_data;
}

/* Unmounting: close what readers left open, and an own database. */
static void tsfs_destroy(void *private_data)
{
	struct tsfs_view *v = private_data;
	pthread_mutex_lock(&v->mu);
	while (v->files) {
		struct tsfs_file *f = v->files;
		v->files = f->next;
		file_free(f);
	}
	pthread_mutex_unlock(&v->mu);
	if (v->datadir) {
		ts_close(v->db);
		v->db = NULL;
	}
}

static const struct fuse_operations operations = {
	.init = tsfs_init,
	.destroy = tsfs_destroy,
	.getattr = tsfs_getattr,
	.readdir = tsfs_readdir,
	.open = tsfs_open,
	.read = tsfs_read,
	.release = tsfs_release,
};

const struct fuse_operations *tsfs_operations(void)
{
	return &operations;
}

struct tsfs_view *tsfs_view_new(ts_db *db)
{
	struct tsfs_view *v = calloc(1, sizeof *v);
	if (!v)
		return NULL;
	v->db = db;
	pthread_mutex_init(&v->mu, NULL);
	return v;
}

struct tsfs_view *tsfs_view_open(const char *datadir)
{
	struct tsfs_view *v = tsfs_view_new(NULL);
	if (v && !(v->datadir = strdup(datadir))) {
		tsfs_view_free(v);
		return NULL;
	}
	return v;
}

void tsfs_view_free(struct tsfs_view *v)
{
	if (!v)
		return;
	tsfs_destroy(v);
	pthread_mutex_destroy(&v->mu);
	free(v->datadir);
	free(v);
}
