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
 * Contents.  A file's text is taken from one snapshot: the one a query
 * cursor opened at open() sees, or the same text rendered a moment before
 * from the same table state (below).  A file opened before an insert
 * never shows it and one opened after does.
 *
 * Sizes and times (docs/fuse.md).  cp, tar, rsync and shutil.copy trust
 * stat: tar reads st_size bytes, rsync skips a file whose size and mtime
 * are unchanged, sendfile stops at the size the kernel knows.  So
 * getattr of a file renders it whole from a snapshot, reports its exact
 * length, and keeps the result in the view's cache (struct entry) under
 * the path and the table's state (struct tkey, read before the snapshot:
 * the table's incarnation -- a table dropped and created again is
 * another --, the newest commit, the descriptor generation, the row
 * counts, the schema version).  While the state reads the same, the entry answers
 * getattr at once and open serves its bytes: stat + open + read renders
 * once, as a plain read did before.  A commit that added no row to a
 * window of a table that never took a delete or a replacing write leaves
 * its text as it was:
 * a stale entry whose window still counts its rows is made the new
 * state's (same_rows), so an insert into one day costs the others a
 * count, not a render.  The text is kept when at most half
 * the cache (TSFS_CACHE_BYTES, or tsfs_view_cache's), the least recently
 * used dropped first; a larger file keeps only its length and hash, and
 * its open streams from a cursor as below.  An open that finds no text
 * kept generates from a cursor and hands its text to the cache at the
 * end (the tee).  A process's stat of a file it holds open describes
 * that open's text (own_open).
 *
 * mtime is the time of the table's newest commit (a batch or a flush)
 * when the file's text was first seen, or seen to change (its length or
 * hash differ: then at least a second past the previous mtime, so that
 * rsync sees the change); a text that did not change keeps its mtime
 * across commits to other windows.  recent/, stats and range/ names
 * relative to now (now-15m, -1h) move with the clock: their entries
 * serve for TSFS_MOVING_NS only, their mtime is the time of the render.  So do windows reaching below the table's TTL,
 * whose rows leave as the clock moves (mtime, when the text changed, at
 * least the time of the render).  Directories carry the time of their
 * table's newest commit; the root, the time the view started.
 *
 * Every file is opened with direct_io (the kernel asks us for every read,
 * like procfs): the same path holds new text after any commit, which the
 * page cache would not know; and the kernel keeps no attributes
 * (attr_timeout 0), so every stat reaches the cache.
 *
 * Memory per open file is bounded: text is generated in steps of
 * TSFS_CHUNK bytes and dropped once the reader is past it -- unless the
 * file tees (tee_check), keeping its text for the cache while the tees
 * of all open files together fit in it.  A read at an
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
#include <time.h>
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
	int relative;       /* N_WINDOW of range/: a bound named relative to now
	                     * (now-15m, -1h): the window moves with the clock */
	enum rowfmt format; /* N_WINDOW */
};

/*
 * The state of a table that a file's text follows: read before a
 * snapshot is taken, so that text rendered under a key is that of the
 * key's state or newer, never older; two renders under equal keys are
 * the same bytes.
 */
struct tkey {
	int64_t incarnation, seq, generation, schema, tablet_rows, filling_rows, filling_bytes;
	int64_t corrected; /* the table took a delete or a replacing write */
};

/* Rendered text, shared by the cache and the files reading it. */
struct blob {
	int refs; /* under the view's cache_mu */
	size_t len;
	char *data;
};

/* What the view knows of one file (by path): its length, the hash of its
 * text, its mtime, and the text itself while it fits in the cache. */
struct entry {
	struct entry *prev, *next; /* most recently used first */
	char *path;
	struct tkey key;
	int moving;                /* recent/, stats, a relative range/, a window
	                            * reaching below the TTL: good for
	                            * TSFS_MOVING_NS */
	int64_t made;              /* CLOCK_MONOTONIC ns of the render */
	uint64_t size, hash;
	int64_t mtime;             /* ns */
	struct blob *text;         /* NULL: not kept */
	int countable;             /* a window whose rows can be counted (below) */
	int64_t nrows;             /*   the rows of its text */
};

/* An open file. */
struct tsfs_file {
	pthread_mutex_t mu;
	struct tsfs_file *prev, *next;  /* in the view's list of open files */
	int holds;                     /* own_open's, under the view's mu: a */
	int released;                  /*   release then leaves the free to the
	                                *   last of them */
	ts_table *table;
	ts_cursor *cur;                /* NULL: all the text is in buf */
	ts_schema *schema;
	const char **names;
	enum rowfmt format;
	struct jbuf buf;               /* text [off, off + buf.len) */
	uint64_t off;
	int eof;
	int64_t nrows;                 /* rows generated so far */
	struct blob *text;             /* or the whole text, from the cache */
	int64_t size;                  /* the text's length, -1 until known */
	int64_t mtime;                 /* ns */
	char *path;                    /* as opened, by the thread */
	pid_t pid;                     /*   pid (fuse_get_context) */
	struct node node;              /* what was opened */
	/* Tee: generated from a cursor, the text is kept from offset 0 (not
	 * dropped) while it fits in the cache, and goes to the cache when the
	 * rows end, with the table state read before the cursor's snapshot
	 * (not for recent/, stats, relative range/ names and windows below
	 * the TTL, whose text moves with the clock while the file is read). */
	int tee;
	size_t teed;                   /* bytes of it counted in v->teeing */
	struct tkey key;
	int64_t commit;
	int expiring;
};

struct tsfs_view {
	ts_db *db;
	char *datadir;                 /* tsfs_view_open: opened by init, closed by destroy */
	pthread_mutex_t mu;            /* the list of open files */
	struct tsfs_file *files;
	int64_t started;               /* ns: the root's mtime */
	pthread_mutex_t cache_mu;      /* the entries, the blobs' refs */
	struct entry *lru, *lru_last;
	size_t nentries, cached;       /* entries, bytes of text kept */
	size_t cache_max;              /* bytes of text to keep at most */
	size_t teeing;                 /* bytes of open files' tees (cache_mu) */
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

/* One bound of a range/ name, "now" being now (the database's clock, as
 * everywhere in the view); *relative is set when the bound names a time
 * relative to now: read at two different nows, it differs.  Returns 0 or
 * -1. */
static int range_bound(const char *text, int64_t now, int64_t *out, int *relative)
{
	int64_t other;
	if (ts_time_parse_at(text, now, out) < 0 || ts_time_parse_at(text, now ^ 1, &other) < 0)
		return -1;
	if (*out != other)
		*relative = 1;
	return 0;
}

/* "FROM_TO" of range/ into n.  Returns 0 or -1. */
static int parse_range(struct tsfs_view *v, char *text, struct node *n)
{
	char *sep = strchr(text, '_');
	if (!sep || strchr(sep + 1, '_'))
		return -1;
	*sep = '\0';
	int64_t now = ts_now(v->db);
	int rc = range_bound(text, now, &n->from, &n->relative) < 0 ||
	         range_bound(sep + 1, now, &n->to, &n->relative) < 0 || n->from >= n->to;
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
static int parse_window(struct tsfs_view *v, enum node_kind dir, const char *name, struct node *n)
{
	char base[256];
	if (split_format(name, base, sizeof base, &n->format) < 0)
		return -1;
	n->kind = N_WINDOW;
	if (dir == N_DAY)
		return parse_in_day(base, n);
	if (dir == N_RANGE)
		return parse_range(v, base, n);
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
		return depth == 4 && parse_window(v, N_DAY, part[3], n) == 0 ? 0 : -ENOENT;
	}
	return depth == 3 && parse_window(v, n->kind, part[2], n) == 0 ? 0 : -ENOENT;
}

/* ---- attributes and listings ---- */

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

/* Drop a reference to b (cache_mu held).  NULL allowed. */
static void blob_unref_locked(struct blob *b)
{
	if (b && --b->refs == 0) {
		free(b->data);
		free(b);
	}
}

static void file_free(struct tsfs_view *v, struct tsfs_file *f)
{
	pthread_mutex_lock(&v->cache_mu);
	blob_unref_locked(f->text);
	v->teeing -= f->teed;
	pthread_mutex_unlock(&v->cache_mu);
	ts_cursor_close(f->cur);
	ts_table_close(f->table);
	free(f->names);
	free(f->path);
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
			f->nrows++;
		}
		if (f->buf.failed)
			return -ENOMEM;
	}
	return 0;
}

/* Drop the text before offset at (rows files only). */
static void drop_before(struct tsfs_file *f, uint64_t at)
{
	if (!f->cur || at <= f->off || f->tee)
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
	f->nrows = 0;
	rowfmt_header(&f->buf, f->format, f->names, f->schema->ncolumns);
	return 0;
}

/* ---- sizes and times: the cache ---- */

#define NS_SEC INT64_C(1000000000)

static int64_t clock_ns(clockid_t which)
{
	struct timespec t;
	clock_gettime(which, &t);
	return (int64_t)t.tv_sec * NS_SEC + t.tv_nsec;
}

/*
 * The hash of a text that comes in pieces: the same whatever the pieces
 * (a render hashes each chunk as it is generated, a tee the whole text),
 * 8 bytes at a time, little-endian.  It only tells a changed text from
 * the same one, with its length.
 */
struct hasher {
	uint64_t h, word;
	unsigned n; /* bytes in word */
};

#define HASH_MUL UINT64_C(0x9e3779b97f4a7c15)

static void hash_init(struct hasher *x)
{
	x->h = UINT64_C(0xcbf29ce484222325);
	x->word = 0;
	x->n = 0;
}

static void hash_word(struct hasher *x, uint64_t w)
{
	x->h = (x->h ^ w) * HASH_MUL;
	x->h ^= x->h >> 32;
}

static void hash_more(struct hasher *x, const char *p, size_t len)
{
	const unsigned char *u = (const unsigned char *)p;
	size_t i = 0;
	for (; x->n && i < len; i++) {
		x->word |= (uint64_t)u[i] << (8 * x->n);
		if (++x->n == 8) {
			hash_word(x, x->word);
			x->word = 0;
			x->n = 0;
		}
	}
	for (; i + 8 <= len; i += 8)
		hash_word(x, (uint64_t)u[i] | (uint64_t)u[i + 1] << 8 | (uint64_t)u[i + 2] << 16 |
		                 (uint64_t)u[i + 3] << 24 | (uint64_t)u[i + 4] << 32 |
		                 (uint64_t)u[i + 5] << 40 | (uint64_t)u[i + 6] << 48 |
		                 (uint64_t)u[i + 7] << 56);
	for (; i < len; i++)
		x->word |= (uint64_t)u[i] << (8 * x->n++);
}

static uint64_t hash_end(struct hasher *x)
{
	hash_word(x, x->word ^ (uint64_t)x->n << 59);
	return x->h;
}

/* The counter called name in st[0..n), 0 when absent. */
static int64_t stat_of(const ts_stat *st, int n, const char *name)
{
	for (int i = 0; i < n; i++)
		if (strcmp(st[i].name, name) == 0)
			return st[i].value;
	return 0;
}

/* Whether the text of n moves with the clock (recent/, stats, a range/
 * name relative to now: the same path names a later window each second). */
static int moving(const struct node *n)
{
	return n->kind == N_STATS || (n->kind == N_WINDOW && (n->recent || n->relative));
}

/* The state of t that the file of n follows, in *k, the wall-clock time
 * of t's newest commit in *commit (ns; 0 when the log holds none), and
 * whether n's window reaches below the edge of t's TTL in *expiring (may
 * be NULL): rows leave such a window as the clock moves, without a
 * commit.  Returns 0 or -EIO. */
static int table_key(struct tsfs_view *v, ts_table *t, const struct node *n, struct tkey *k,
                     int64_t *commit, int *expiring)
{
	ts_stat st[TS_STATS_MAX];
	int cnt;
	if (ts_table_stats(t, st, TS_STATS_MAX, &cnt) < 0)
		return -EIO;
	if (cnt > TS_STATS_MAX)
		cnt = TS_STATS_MAX;
	memset(k, 0, sizeof *k);
	k->incarnation = stat_of(st, cnt, "table_incarnation");
	k->seq = stat_of(st, cnt, "commit_seq");
	k->generation = stat_of(st, cnt, "descriptor_generation");
	k->schema = stat_of(st, cnt, "schema_version");
	k->tablet_rows = stat_of(st, cnt, "tablet_rows");
	k->filling_rows = stat_of(st, cnt, "filling_rows");
	k->filling_bytes = stat_of(st, cnt, "filling_bytes");
	k->corrected = stat_of(st, cnt, "corrected");
	*commit = stat_of(st, cnt, "commit_time_ns");
	int64_t ttl = stat_of(st, cnt, "ttl_ns");
	if (expiring) {
		int64_t now = ts_now(v->db);
		*expiring = ttl > 0 && n->kind == N_WINDOW && !n->recent &&
		            n->from < (now < INT64_MIN + ttl ? INT64_MIN : now - ttl);
	}
	return 0;
}

/* Whether e answers for the state k now (cache_mu held). */
static int fresh(const struct entry *e, const struct tkey *k)
{
	return memcmp(&e->key, k, sizeof *k) == 0 &&
	       (!e->moving || clock_ns(CLOCK_MONOTONIC) - e->made < TSFS_MOVING_NS);
}

/* The entry of path, made the most recently used (cache_mu held), or NULL. */
static struct entry *entry_find(struct tsfs_view *v, const char *path)
{
	struct entry *e = v->lru;
	while (e && strcmp(e->path, path) != 0)
		e = e->next;
	if (!e || e == v->lru)
		return e;
	/* to the front */
	e->prev->next = e->next;
	if (e->next)
		e->next->prev = e->prev;
	else
		v->lru_last = e->prev;
	e->prev = NULL;
	e->next = v->lru;
	v->lru->prev = e;
	v->lru = e;
	return e;
}

/* Drop e's text (cache_mu held). */
static void entry_drop_text(struct tsfs_view *v, struct entry *e)
{
	if (e->text) {
		v->cached -= e->text->len;
		blob_unref_locked(e->text);
		e->text = NULL;
	}
}

/* Forget e (cache_mu held). */
static void entry_free(struct tsfs_view *v, struct entry *e)
{
	entry_drop_text(v, e);
	if (e->prev)
		e->prev->next = e->next;
	else
		v->lru = e->next;
	if (e->next)
		e->next->prev = e->prev;
	else
		v->lru_last = e->prev;
	v->nentries--;
	free(e->path);
	free(e);
}

/* Keep the cache within its bounds, the least recently used first
 * (cache_mu held). */
static void cache_trim(struct tsfs_view *v)
{
	while (v->nentries > TSFS_CACHE_ENTRIES)
		entry_free(v, v->lru_last);
	for (struct entry *e = v->lru_last; e && v->cached > v->cache_max; e = e->prev)
		entry_drop_text(v, e);
}

/*
 * Render the file of n whole, from a new snapshot: its length in *size,
 * the hash of its text in *hash, its rows in *nrows, and the text in *text when it is at most
 * half the cache's bytes (else NULL; one reference).  Generated a
 * chunk at a time as a reader would, so a file too large to keep takes
 * no more memory than one being read.  hint: the length it had (0:
 * unknown), to size the buffer once.  Returns 0 or a negative errno.
 */
static int render(struct tsfs_view *v, const struct node *n, size_t hint, uint64_t *size,
                  uint64_t *hash, int64_t *nrows, struct blob **text)
{
	struct tsfs_file *f = calloc(1, sizeof *f);
	struct hasher h;
	size_t hashed = 0;
	int keep = 1, rc;
	*text = NULL;
	if (!f)
		return -ENOMEM;
	hash_init(&h);
	pthread_mutex_init(&f->mu, NULL);
	if (hint && hint <= v->cache_max / 2)
		jbuf_reserve(&f->buf, hint + 2 * TSFS_CHUNK); /* no doubling copies */
	if (ts_table_open(v->db, n->table, &f->table) < 0)
		rc = -ENOENT;
	else
		rc = n->kind == N_WINDOW ? start_rows(v, f, n) : static_text(f, n->kind);
	while (rc == 0) {
		hash_more(&h, f->buf.p + hashed, f->buf.len - hashed);
		hashed = f->buf.len;
		if (f->buf.len > v->cache_max / 2)
			keep = 0;
		if (!keep) {
			f->off += f->buf.len;
			f->buf.len = 0;
			hashed = 0;
		}
		if (f->eof)
			break;
		rc = generate(f, f->off + f->buf.len + 1);
	}
	if (rc == 0) {
		*size = f->off + f->buf.len;
		*hash = hash_end(&h);
		*nrows = f->nrows;
		struct blob *b = keep ? malloc(sizeof *b) : NULL;
		if (b) {
			/* the buffer itself, trimmed to the text, so that the
			 * cache's count is the memory it holds */
			char *p = f->buf.len ? realloc(f->buf.p, f->buf.len) : NULL;
			b->refs = 1;
			b->len = f->buf.len;
			b->data = p ? p : f->buf.p;
			memset(&f->buf, 0, sizeof f->buf);
			*text = b;
		}
	}
	file_free(v, f);
	return rc;
}

/*
 * Whether the rows of n's window can be counted to tell that its text did
 * not change: rows are never updated or deleted (a duplicate key is
 * refused or ignored), so while the schema is the same, a window's text
 * changes only when rows are added to it, which its count shows -- or
 * when they leave it past the TTL, which is why an expiring window does
 * not count (nor the text of recent/, stats and schema, nor a window
 * reaching INT64_MAX, which the aggregate's half-open range cannot).
 */
static int countable(const struct node *n, int expiring)
{
	return n->kind == N_WINDOW && !moving(n) && !expiring && !n->to_inclusive;
}

/* The rows of t with ts in n's window, counted by an aggregate (the ts
 * column, by day: a range may span days).  Returns 0 or -1. */
static int window_count(ts_table *t, const struct node *n, int64_t *out)
{
	ts_schema *s;
	ts_cursor *cur;
	const ts_value *row;
	int cnt, rc;
	if (ts_table_schema(t, &s) < 0)
		return -1;
	ts_aggspec spec = {s->key[s->nkey - 1], TS_AGG_COUNT}; /* ts ends the key */
	ts_schema_free(s);
	ts_aggregate a = {.from = n->from, .to = n->to, .every = NS_DAY, .specs = &spec, .nspecs = 1};
	*out = 0;
	if (ts_aggregate_open(t, &a, &cur) < 0)
		return -1;
	while ((rc = ts_cursor_next(cur, &row, &cnt)) == 0 && row)
		*out += row[cnt - 1].v.i;
	ts_cursor_close(cur);
	return rc < 0 ? -1 : 0;
}

/*
 * When the entry of path (a countable window, also now: expiring as
 * table_key says) is stale by the table's state k only -- the same table
 * and schema, a later commit -- and its window still
 * holds the rows of its text (their count, read after k: rows committed
 * after k would have moved the state), the entry is made k's: its text is
 * what a snapshot would give now.  So a commit to one day does not make
 * every other day render again, only count.  Not in a table that took a
 * delete or a replacing write (the stat "corrected", which never goes
 * back to 0): there a delete and an insert, or a replacement, leave the
 * count as it was with other rows.  cache_mu is not held.
 */
static void same_rows(struct tsfs_view *v, ts_table *t, const char *path, const struct node *n,
                      const struct tkey *k, int expiring)
{
	struct tkey was;
	int64_t nrows, now_rows;
	pthread_mutex_lock(&v->cache_mu);
	struct entry *e = entry_find(v, path);
	int stale = e && e->countable && countable(n, expiring) && !fresh(e, k) && !k->corrected &&
	            e->key.incarnation == k->incarnation && e->key.schema == k->schema &&
	            e->key.seq <= k->seq && e->key.generation <= k->generation;
	if (stale) {
		was = e->key;
		nrows = e->nrows;
	}
	pthread_mutex_unlock(&v->cache_mu);
	if (!stale || window_count(t, n, &now_rows) < 0 || now_rows != nrows)
		return;
	pthread_mutex_lock(&v->cache_mu);
	if ((e = entry_find(v, path)) && memcmp(&e->key, &was, sizeof was) == 0 &&
	    e->nrows == nrows)
		e->key = *k;
	pthread_mutex_unlock(&v->cache_mu);
}

/*
 * Keep what a render of the file n at path found -- its length, the hash
 * of its text, its rows and the text (a reference the cache takes; NULL: not kept)
 * -- as of the table state k read before its snapshot (with commit and
 * expiring as table_key gave them).  Returns the file's mtime (see the top
 * of this file).
 */
static int64_t entry_store(struct tsfs_view *v, const char *path, const struct node *n,
                           const struct tkey *k, int64_t commit, int expiring, uint64_t size,
                           uint64_t hash, int64_t nrows, struct blob *text)
{
	int64_t mtime;
	pthread_mutex_lock(&v->cache_mu);
	struct entry *e = entry_find(v, path);
	if (moving(n))
		mtime = ts_now(v->db);
	else if (e && e->size == size && e->hash == hash)
		mtime = e->mtime; /* the same text: the same time */
	else {
		mtime = commit ? commit : v->started;
		if (expiring && mtime < ts_now(v->db))
			mtime = ts_now(v->db); /* rows expired since the commit */
		if (e && mtime < e->mtime + NS_SEC)
			mtime = e->mtime + NS_SEC;
	}
	if (!e) {
		if ((e = calloc(1, sizeof *e)) && !(e->path = strdup(path))) {
			free(e);
			e = NULL;
		}
		if (!e) {
			/* out of memory: the answer stands, unremembered */
			blob_unref_locked(text);
			pthread_mutex_unlock(&v->cache_mu);
			return mtime;
		}
		/* a new entry, the most recently used */
		e->next = v->lru;
		if (v->lru)
			v->lru->prev = e;
		else
			v->lru_last = e;
		v->lru = e;
		v->nentries++;
	}
	entry_drop_text(v, e);
	e->key = *k;
	e->moving = moving(n) || expiring;
	e->made = clock_ns(CLOCK_MONOTONIC);
	e->size = size;
	e->hash = hash;
	e->mtime = mtime;
	e->countable = countable(n, expiring);
	e->nrows = nrows;
	if ((e->text = text))
		v->cached += text->len;
	cache_trim(v);
	pthread_mutex_unlock(&v->cache_mu);
	return mtime;
}

/*
 * The length and mtime of the file n (at path): from the cache while the
 * table's state reads the same, else rendered now and kept (see the top
 * of this file for the mtime).  Returns 0 or a negative errno.
 */
static int file_attr(struct tsfs_view *v, const char *path, const struct node *n, uint64_t *size,
                     int64_t *mtime)
{
	ts_table *t;
	struct tkey k;
	struct blob *text;
	int64_t commit, nrows = 0;
	uint64_t hash = 0;
	int expiring;
	if (ts_table_open(v->db, n->table, &t) < 0)
		return -ENOENT;
	int rc = table_key(v, t, n, &k, &commit, &expiring);
	if (rc == 0)
		same_rows(v, t, path, n, &k, expiring);
	ts_table_close(t);
	if (rc < 0)
		return rc;
	pthread_mutex_lock(&v->cache_mu);
	struct entry *e = entry_find(v, path);
	if (e && fresh(e, &k)) {
		*size = e->size;
		*mtime = e->mtime;
		pthread_mutex_unlock(&v->cache_mu);
		return 0;
	}
	size_t hint = e ? (size_t)e->size : 0;
	pthread_mutex_unlock(&v->cache_mu);

	if ((rc = render(v, n, hint, size, &hash, &nrows, &text)) < 0)
		return rc;
	*mtime = entry_store(v, path, n, &k, commit, expiring, *size, hash, nrows, text);
	return 0;
}

/*
 * For the open of n (at path) on f->table: the cached text of the file
 * when the table's state still reads as when it was rendered (then the
 * open reads it: returns 1), else 0 with f->mtime and the state (f->key,
 * f->commit, f->expiring) set, and the file is generated from a cursor,
 * teeing (f->tee) unless its text moves with the clock or is known to be
 * too large to keep.  Returns -EIO when the state cannot be read.
 */
static int cached_text(struct tsfs_view *v, const char *path, const struct node *n,
                       struct tsfs_file *f)
{
	struct tkey k;
	int64_t commit;
	int rc = table_key(v, f->table, n, &k, &commit, &f->expiring);
	if (rc < 0)
		return rc;
	f->key = k;
	f->commit = commit;
	same_rows(v, f->table, path, n, &k, f->expiring);
	pthread_mutex_lock(&v->cache_mu);
	struct entry *e = entry_find(v, path);
	f->mtime = moving(n) ? ts_now(v->db) : e ? e->mtime : commit ? commit : v->started;
	if (e && e->text && fresh(e, &k)) {
		f->text = e->text;
		f->text->refs++;
		f->size = (int64_t)f->text->len;
		f->eof = 1;
		rc = 1;
	} else {
		f->tee = v->cache_max > 0 && !moving(n) && !f->expiring &&
		         !(e && fresh(e, &k) && e->size > v->cache_max / 2);
		if (f->tee && e && e->size <= v->cache_max / 2)
			jbuf_reserve(&f->buf, (size_t)e->size + 2 * TSFS_CHUNK); /* its last length */
	}
	pthread_mutex_unlock(&v->cache_mu);
	return rc;
}

/*
 * After text was generated for f (f->mu held): while f tees, count its
 * text in v->teeing, stop the tee when the text outgrows half the cache
 * or the tees together the cache (the file is then read as a stream),
 * and at the end of the rows hand the text to the cache, which the file
 * then reads from, as an open that found it there would.
 */
static void tee_check(struct tsfs_view *v, struct tsfs_file *f)
{
	if (!f->tee)
		return;
	pthread_mutex_lock(&v->cache_mu);
	v->teeing -= f->teed;
	f->teed = 0;
	if (f->buf.len > v->cache_max / 2 || v->teeing + f->buf.len > v->cache_max)
		f->tee = 0;
	else if (!f->eof)
		v->teeing += f->teed = f->buf.len;
	pthread_mutex_unlock(&v->cache_mu);
	if (!f->tee || !f->eof)
		return;
	f->tee = 0;
	struct blob *b = malloc(sizeof *b);
	if (!b)
		return;
	char *p = f->buf.len ? realloc(f->buf.p, f->buf.len) : NULL;
	b->refs = 2; /* the cache's and the file's */
	b->len = f->buf.len;
	b->data = p ? p : f->buf.p;
	memset(&f->buf, 0, sizeof f->buf);
	ts_cursor_close(f->cur);
	f->cur = NULL;
	f->text = b;
	f->size = (int64_t)b->len;
	struct hasher h;
	hash_init(&h);
	hash_more(&h, b->data, b->len);
	f->mtime = entry_store(v, f->path, &f->node, &f->key, f->commit, f->expiring, b->len,
	                       hash_end(&h), f->nrows, b);
}

/*
 * The length of a file just opened on a cursor, from its entry when that
 * is fresh for the state read before the cursor's snapshot and the state
 * still reads so after it (no commit between: the snapshot's text is the
 * entry's), so that the reader's stat need not generate it all to count
 * it (file_size).  Not for texts that move with the clock.
 */
static void known_size(struct tsfs_view *v, struct tsfs_file *f)
{
	struct tkey after;
	int64_t commit, size = -1;
	if (moving(&f->node) || f->expiring)
		return;
	pthread_mutex_lock(&v->cache_mu);
	struct entry *e = entry_find(v, f->path);
	if (e && fresh(e, &f->key))
		size = (int64_t)e->size;
	pthread_mutex_unlock(&v->cache_mu);
	if (size >= 0 && table_key(v, f->table, &f->node, &after, &commit, NULL) == 0 &&
	    memcmp(&after, &f->key, sizeof after) == 0)
		f->size = size;
}

/* The length of f's text (f->mu held): generated to its end once, and
 * rewound, when not yet known (a stat by the reader of a file read from
 * a cursor).  Returns 0 or a negative errno. */
static int file_size(struct tsfs_view *v, struct tsfs_file *f)
{
	int rc = 0;
	if (f->size >= 0)
		return 0;
	while (rc == 0 && !f->eof) {
		drop_before(f, f->off + f->buf.len);
		if ((rc = generate(f, f->off + f->buf.len + 1)) == 0)
			tee_check(v, f);
	}
	if (rc == 0 && f->size < 0) {
		f->size = (int64_t)(f->off + f->buf.len);
		rc = rewind_rows(f);
	}
	return rc;
}

/* The length and mtime of the open file f.  Returns 0 or a negative errno. */
static int open_attr(struct tsfs_view *v, struct tsfs_file *f, uint64_t *size, int64_t *mtime)
{
	pthread_mutex_lock(&f->mu);
	int rc = file_size(v, f);
	*size = (uint64_t)f->size;
	*mtime = f->mtime;
	pthread_mutex_unlock(&f->mu);
	return rc;
}

/*
 * The length and mtime of the newest file the asking thread holds open at
 * path: so that a process's stat or fstat of a file it is reading (tar
 * checks that the file did not change under it) describes the snapshot
 * it reads, whatever was committed since its open.  (The kernel sends an
 * fstat as a stat of the path, without the file.)  Returns 0 with *rc
 * set, or -1 when the thread holds no such file.
 */
static int own_open(struct tsfs_view *v, const char *path, uint64_t *size, int64_t *mtime,
                    int *rc)
{
	pid_t pid = fuse_get_context()->pid;
	struct tsfs_file *f;
	int gone;
	pthread_mutex_lock(&v->mu);
	for (f = v->files; f; f = f->next)
		if (f->pid == pid && strcmp(f->path, path) == 0)
			break;
	if (f)
		f->holds++; /* a release meanwhile leaves the file to us */
	pthread_mutex_unlock(&v->mu);
	if (!f)
		return -1;
	/* not under the list's lock: open_attr may generate the whole file,
	 * and every other open and release would wait for it */
	*rc = open_attr(v, f, size, mtime);
	pthread_mutex_lock(&v->mu);
	gone = --f->holds == 0 && f->released;
	pthread_mutex_unlock(&v->mu);
	if (gone)
		file_free(v, f);
	return 0;
}

/* The newest commit's time of the table of n, for its directories. */
static int64_t dir_mtime(struct tsfs_view *v, const struct node *n)
{
	ts_table *t;
	struct tkey k;
	int64_t commit = 0;
	if (n->kind != N_ROOT && ts_table_open(v->db, n->table, &t) == 0) {
		if (table_key(v, t, n, &k, &commit, NULL) < 0)
			commit = 0;
		ts_table_close(t);
	}
	return commit ? commit : v->started;
}

static int tsfs_getattr(const char *path, struct stat *st, struct fuse_file_info *fi)
{
	struct tsfs_view *v = view();
	struct node n;
	uint64_t size = 0;
	int64_t mtime;
	int rc = parse(v, path, &n);
	if (rc < 0)
		return rc;
	memset(st, 0, sizeof *st);
	st->st_uid = getuid();
	st->st_gid = getgid();
	if (n.kind == N_SCHEMA || n.kind == N_STATS || n.kind == N_WINDOW) {
		if (fi && fi->fh) /* an fstat the kernel names the file of */
			rc = open_attr(v, (struct tsfs_file *)(uintptr_t)fi->fh, &size, &mtime);
		else if (own_open(v, path, &size, &mtime, &rc) < 0)
			rc = file_attr(v, path, &n, &size, &mtime);
		if (rc < 0)
			return rc;
		st->st_mode = S_IFREG | 0444;
		st->st_nlink = 1;
		st->st_size = (off_t)size;
		st->st_blocks = (blkcnt_t)((size + 511) / 512); /* not sparse: cp reads it all */
	} else {
		st->st_mode = S_IFDIR | 0555;
		st->st_nlink = 2;
		mtime = dir_mtime(v, &n);
	}
	st->st_blksize = TSFS_CHUNK;
	st->st_mtim.tv_sec = (time_t)floor_div(mtime, NS_SEC);
	st->st_mtim.tv_nsec = (long)(mtime - floor_div(mtime, NS_SEC) * NS_SEC);
	st->st_ctim = st->st_atim = st->st_mtim;
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
	f->size = -1;
	f->node = n;
	if (!(f->path = strdup(path)))
		rc = -ENOMEM;
	else if (ts_table_open(v->db, n.table, &f->table) < 0)
		rc = -ENOENT;
	else if ((rc = cached_text(v, path, &n, f)) == 0) {
		rc = n.kind == N_WINDOW ? start_rows(v, f, &n) : static_text(f, n.kind);
		if (rc == 0 && n.kind == N_WINDOW)
			known_size(v, f);
		if (rc == 0)
			tee_check(v, f); /* schema: to the cache at once (stats moves: no tee) */
		if (rc == 0 && f->eof && f->size < 0)
			f->size = (int64_t)f->buf.len; /* schema, stats: all there */
	}
	if (rc > 0)
		rc = 0;
	if (rc < 0) {
		file_free(v, f);
		return rc;
	}
	f->pid = fuse_get_context()->pid;
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

static int tsfs_read(const char *path, char *out, size_t size, off_t off, struct fuse_file_info *fi)
{
	struct tsfs_view *v = view();
	struct tsfs_file *f = (struct tsfs_file *)(uintptr_t)fi->fh;
	uint64_t at = (uint64_t)off;
	int rc = 0;
	(void)path;
	pthread_mutex_lock(&f->mu);
	if (!f->text) {
		if (at < f->off)
			rc = rewind_rows(f);
		/* generate up to the offset a chunk at a time, dropping as we go */
		while (rc == 0 && !f->eof && f->off + f->buf.len < at) {
			drop_before(f, at);
			if ((rc = generate(f, f->off + f->buf.len + 1)) == 0)
				tee_check(v, f);
		}
		if (rc == 0) {
			drop_before(f, at);
			if ((rc = generate(f, at + size)) == 0)
				tee_check(v, f);
		}
	}
	if (rc == 0 && f->text) {
		/* the whole text, from the cache or the tee */
		size_t n = at < f->text->len ? f->text->len - (size_t)at : 0;
		n = n < size ? n : size;
		if (n)
			memcpy(out, f->text->data + at, n);
		rc = (int)n;
	} else if (rc == 0) {
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
	f->released = 1;
	int held = f->holds > 0; /* own_open frees it when done */
	pthread_mutex_unlock(&v->mu);
	if (!held)
		file_free(v, f);
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
	/* no attributes kept in the kernel: a size or mtime a second old
	 * would let tar and rsync copy a file cut at the old length, and
	 * sendfile (shutil.copy) reads a file only up to the size the kernel
	 * last heard; every stat asks the view, whose cache answers it */
	cfg->attr_timeout = 0;
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
		file_free(v, f);
	}
	pthread_mutex_unlock(&v->mu);
	pthread_mutex_lock(&v->cache_mu);
	while (v->lru)
		entry_free(v, v->lru);
	pthread_mutex_unlock(&v->cache_mu);
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
	v->started = clock_ns(CLOCK_REALTIME);
	v->cache_max = TSFS_CACHE_BYTES;
	pthread_mutex_init(&v->mu, NULL);
	pthread_mutex_init(&v->cache_mu, NULL);
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

void tsfs_view_cache(struct tsfs_view *v, size_t bytes)
{
	v->cache_max = bytes;
}

void tsfs_view_free(struct tsfs_view *v)
{
	if (!v)
		return;
	tsfs_destroy(v);
	pthread_mutex_destroy(&v->mu);
	pthread_mutex_destroy(&v->cache_mu);
	free(v->datadir);
	free(v);
}
