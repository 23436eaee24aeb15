/*
 * ingest.c -- line protocol points into tsstore tables, by the mapping of
 * docs/ingest-mapping.md: a measurement is a table, its tags the string
 * key columns (sorted by name) before ts, its fields the other columns.
 *
 * State.  struct tsd_ingest is shared by the worker threads: a hash of
 * table handles by table name (opened once, closed by tsd_ingest_close;
 * in->mu guards the hash and the "logged once" marks), the counters
 * (atomics), and a free list of scratch areas, so a request allocates
 * nothing once the daemon has warmed up.  A scratch holds one request's
 * state: the line reader, one struct rtable per measurement met (its
 * table, a copy of its schema taken for this request, its rows), and an
 * arena for the names and strings that had escapes to undo.
 *
 * A request moves through passes over its body:
 *   build    every line parsed and laid out as a row of its table's
 *            schema (string values point into the body); a line that
 *            does not fit is refused alone.  When the build meets a
 *            measurement without a table or a field without a column, it
 *            stores the rows built so far (insert, below) and
 *   collect  walks the rest of the body for what every measurement needs
 *            (its tags and fields), creates the missing tables and adds
 *            the missing columns (ts_create_keyed, ts_alter_add), takes
 *            the schemas again, and the build goes on from the line that
 *            stopped it; what still does not fit then is refused line by
 *            line.  So a line is built once, and stored once.
 *   insert   one ts_insert_versioned per table, for the schema version the rows
 *            were built for, so concurrent alters cannot shift them; at
 *            the end of the body, or sooner when the rows held reach
 *            FLUSH_VALUES values, which bounds a request's memory.
 *            A row the library refuses (a duplicate key, ...) fails the
 *            whole batch; its index (ts_errmsg "row N: ...") splits it:
 *            the rows before go in, its line is refused, the rest is
 *            tried again.
 * Steady state (tables and columns all known) is a single build pass; a
 * per-table cache of the last line's layout (its tag and field keys as
 * they stand in the body, and the columns they went to) makes resolving
 * names a memcmp per key when lines repeat their shape, as collectors'
 * lines do.
 */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <math.h>

#include "ingest.h"
#include "json.h"

/* ---- Limits ---- */

#define NBUCKETS 256          /* hash of table handles */
#define LAYOUT_TAGS 16        /* a layout is cached for lines with at most */
#define LAYOUT_FIELDS 64      /* this many tags and fields */
#define ARENA_CHUNK ((size_t)64 << 10)
/* Values a request holds before it inserts what it has (bounds its
 * memory whatever the body: 24 MiB of ts_value, some 50,000 rows of
 * TSBS's 21 columns, past the usual batch). */
#define FLUSH_VALUES ((size_t)1 << 20)

/* What is logged once per table (struct entry.logged bits). */
enum cause {
	CAUSE_TAG = 1 << 0,     /* a tag that is no key column */
	CAUSE_MISSING = 1 << 1, /* a key column left "" */
	CAUSE_TYPE = 1 << 2,    /* a field type conflict */
	CAUSE_SCHEMA = 1 << 3,  /* creating the table or a column failed */
	CAUSE_STORE = 1 << 4,   /* rows refused by the library */
};

/* A table handle, cached for the life of the state. */
struct entry {
	char name[TS_NAME_MAX + 1];
	ts_table *t;
	unsigned logged;        /* enum cause bits; set under in->mu, read atomically */
	struct entry *next;
};

/* ---- Per request ---- */

struct chunk {
	struct chunk *next;
	size_t used, cap;
	char data[];
};

/* A field or tag a collect pass found a measurement needs. */
struct want {
	char name[TS_NAME_MAX + 1];
	ts_type type;
	int tag;
	int order;              /* when it was first met */
};

/* The cached layout of a line: its keys as they stand in the body and
 * the columns they went to. */
struct layout {
	int valid, ntags, nfields;
	struct lp_text tkey[LAYOUT_TAGS], fkey[LAYOUT_FIELDS];
	int tcol[LAYOUT_TAGS], fcol[LAYOUT_FIELDS];
};

/* One measurement of the request. */
struct rtable {
	struct lp_text raw;         /* the measurement as it stands in the body */
	char name[TS_NAME_MAX + 1]; /* its table */
	struct entry *e;            /* NULL: no such table (yet) */
	ts_schema *schema;          /* this request's copy */
	int nkey_tags;              /* key columns before ts */
	char problem[256];          /* why the table or a column could not be made */
	struct layout lay;
	ts_value *rows;             /* nrows * schema->ncolumns, room for capvals */
	uint64_t *lines;            /* each row's line number, room for caplines */
	size_t nrows, capvals, caplines;
	struct want *wants;         /* collect pass */
	int nwants, capwants;
};

struct scratch {
	struct lp_reader reader;
	struct rtable *tables;
	int ntables, captables;
	int last;                   /* index of the table of the previous line */
	size_t buffered;            /* values in the rows of all tables */
	struct chunk *arena;
	struct scratch *next;
};

struct tsd_ingest {
	ts_db *db;
	struct tsd_ingest_options o;
	pthread_mutex_t mu;
	struct entry *buckets[NBUCKETS];
	struct entry *retired;       /* dropped tables' entries (entry_retire) */
	struct scratch *free;
	struct tsd_ingest_stats st;  /* updated with atomic adds */
};

/* The database: a promoted standby's replaces the read-only one
 * (tsd_ingest_set_db) while requests run. */
static ts_db *db_of(struct tsd_ingest *in)
{
	return __atomic_load_n(&in->db, __ATOMIC_ACQUIRE);
}

const char *tsd_ingest_reason_name(enum tsd_ingest_reason r)
{
	static const char *const names[] = {"syntax", "type", "range", "tag", "duplicate",
	                                    "time", "schema", "store"};
	return (unsigned)r < TSD_REJECT_NREASONS ? names[r] : "?";
}

/* ---- Names ---- */

static uint32_t fnv1a(const char *p, size_t n)
{
	uint32_t h = 2166136261u;
	for (size_t i = 0; i < n; i++) {
		h ^= (unsigned char)p[i];
		h *= 16777619u;
	}
	return h;
}

static int name_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '_';
}

char *tsd_ingest_name(const char *p, size_t n, int column, char *out)
{
	size_t o = 0;
	int prefix = n == 0 || (p[0] >= '0' && p[0] <= '9') ||
	             (column && n == 2 && strncasecmp(p, "ts", 2) == 0) ||
	             (!column && n == 4 && memcmp(p, "LOCK", 4) == 0);
	if (n + (size_t)prefix > TS_NAME_MAX) {
		/* 55 bytes, '_', 8 hex digits: 64. */
		if (prefix)
			out[o++] = '_';
		for (size_t i = 0; o < TS_NAME_MAX - 9; i++)
			out[o++] = name_char(p[i]) ? p[i] : '_';
		snprintf(out + o, TS_NAME_MAX + 1 - o, "_%08x", fnv1a(p, n));
		return out;
	}
	if (prefix)
		out[o++] = '_';
	for (size_t i = 0; i < n; i++)
		out[o++] = name_char(p[i]) ? p[i] : '_';
	out[o] = '\0';
	return out;
}

/* ---- Small helpers ---- */

static void log_msg(struct tsd_ingest *in, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void log_msg(struct tsd_ingest *in, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	if (in->o.log)
		in->o.log(in->o.log_arg, msg);
	else
		fprintf(stderr, "tsstored: %s\n", msg);
}

/* Whether cause was not yet logged for table e (and mark it). */
static int first_time(struct tsd_ingest *in, struct entry *e, unsigned cause)
{
	int first;
	if (!e)
		return 1;
	if (__atomic_load_n(&e->logged, __ATOMIC_RELAXED) & cause)
		return 0; /* the common case: said already, no lock */
	pthread_mutex_lock(&in->mu);
	first = !(e->logged & cause);
	__atomic_or_fetch(&e->logged, cause, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&in->mu);
	return first;
}

static void count(uint64_t *c, uint64_t n)
{
	__atomic_add_fetch(c, n, __ATOMIC_RELAXED);
}

/* Whether p[0..n) is valid UTF-8 (the library refuses strings that are
 * not, failing the whole batch: better refuse the one line). */
int tsd_ingest_utf8_ok(const void *p, size_t n)
{
	if (n == 0)
		return 1; /* p may be NULL */
	const unsigned char *s = p, *end = s + n;
	while (s < end) {
		if (*s < 0x80) {
			s++;
			continue;
		}
		int k = json_utf8_len(s, end);
		if (k == 0)
			return 0;
		s += k;
	}
	return 1;
}

static void *arena_alloc(struct scratch *sc, size_t n)
{
	struct chunk *c = sc->arena;
	if (!c || c->cap - c->used < n) {
		size_t cap = n > ARENA_CHUNK ? n : ARENA_CHUNK;
		if (!(c = malloc(sizeof *c + cap)))
			return NULL;
		c->cap = cap;
		c->used = 0;
		c->next = sc->arena;
		sc->arena = c;
	}
	c->used += n;
	return c->data + c->used - n;
}

/* Free every arena chunk but one. */
static void arena_reset(struct scratch *sc)
{
	struct chunk *c = sc->arena;
	while (c && c->next) {
		struct chunk *n = c->next;
		free(c);
		c = n;
	}
	sc->arena = c;
	if (c)
		c->used = 0;
}

/* The text t unescaped: its own bytes when it has no escape, else a copy
 * in the arena.  NULL when out of memory. */
static const char *text_of(struct scratch *sc, const struct lp_text *t, size_t *n)
{
	char *buf;
	if (t->esc == LP_ESC_NONE) {
		*n = t->len;
		return t->p;
	}
	if (!(buf = arena_alloc(sc, t->len ? t->len : 1)))
		return NULL;
	*n = lp_unescape(t, buf);
	return buf;
}

/* ---- Table handles ---- */

static unsigned bucket_of(const char *name)
{
	return fnv1a(name, strlen(name)) % NBUCKETS;
}

/*
 * The cached handle of table name, opened if need be.  Returns 0 with
 * *out set; TS_ENOENT when there is no such table (*out NULL); another
 * error of ts_table_open.
 */
static int entry_get(struct tsd_ingest *in, const char *name, struct entry **out)
{
	unsigned b = bucket_of(name);
	struct entry *e;
	int rc = 0;
	*out = NULL;
	pthread_mutex_lock(&in->mu);
	for (e = in->buckets[b]; e && strcmp(e->name, name) != 0; e = e->next)
		;
	if (!e) {
		ts_table *t = NULL;
		if ((rc = ts_table_open(in->db, name, &t)) == 0) {
			if (!(e = calloc(1, sizeof *e))) {
				ts_table_close(t);
				rc = TS_ENOMEM;
			} else {
				snprintf(e->name, sizeof e->name, "%s", name);
				e->t = t;
				e->next = in->buckets[b];
				in->buckets[b] = e;
			}
		}
	}
	pthread_mutex_unlock(&in->mu);
	*out = e;
	return rc;
}

/* Forget the handle of a table that was dropped under us (ECLOSED), so
 * that a later request opens or creates it again.  The entry leaves the
 * hash but is neither closed nor freed before tsd_ingest_close: other
 * requests may still hold it. */
static void entry_retire(struct tsd_ingest *in, struct entry *e)
{
	pthread_mutex_lock(&in->mu);
	for (struct entry **pp = &in->buckets[bucket_of(e->name)]; *pp; pp = &(*pp)->next)
		if (*pp == e) {
			*pp = e->next;
			e->next = in->retired;
			in->retired = e;
			break;
		}
	pthread_mutex_unlock(&in->mu);
}

void tsd_ingest_set_db(struct tsd_ingest *in, ts_db *db)
{
	pthread_mutex_lock(&in->mu);
	for (unsigned b = 0; b < NBUCKETS; b++)
		while (in->buckets[b]) {
			struct entry *e = in->buckets[b];
			in->buckets[b] = e->next;
			e->next = in->retired;
			in->retired = e;
		}
	__atomic_store_n(&in->db, db, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&in->mu);
}

int tsd_ingest_open(ts_db *db, const struct tsd_ingest_options *opts, struct tsd_ingest **out)
{
	struct tsd_ingest *in = calloc(1, sizeof *in);
	*out = NULL;
	if (!in)
		return TS_ENOMEM;
	in->db = db;
	if (opts)
		in->o = *opts;
	pthread_mutex_init(&in->mu, NULL);
	*out = in;
	return 0;
}

static void rtable_free(struct rtable *rt)
{
	ts_schema_free(rt->schema);
	free(rt->rows);
	free(rt->lines);
	free(rt->wants);
}

static void scratch_free(struct scratch *sc)
{
	for (int i = 0; i < sc->captables; i++)
		rtable_free(&sc->tables[i]);
	free(sc->tables);
	arena_reset(sc);
	free(sc->arena);
	free(sc);
}

void tsd_ingest_close(struct tsd_ingest *in)
{
	if (!in)
		return;
	for (int b = 0; b <= NBUCKETS; b++)
		for (struct entry *e = b < NBUCKETS ? in->buckets[b] : in->retired, *n; e; e = n) {
			n = e->next;
			ts_table_close(e->t);
			free(e);
		}
	for (struct scratch *sc = in->free, *n; sc; sc = n) {
		n = sc->next;
		scratch_free(sc);
	}
	pthread_mutex_destroy(&in->mu);
	free(in);
}

void tsd_ingest_stats_get(struct tsd_ingest *in, struct tsd_ingest_stats *out)
{
	const uint64_t *src = (const uint64_t *)&in->st;
	uint64_t *dst = (uint64_t *)out;
	for (size_t i = 0; i < sizeof *out / sizeof(uint64_t); i++)
		dst[i] = __atomic_load_n(&src[i], __ATOMIC_RELAXED);
}

void tsd_ingest_stats_json(struct tsd_ingest *in, struct jbuf *b)
{
	struct tsd_ingest_stats st;
	tsd_ingest_stats_get(in, &st);
	jbuf_printf(b, ",\"ingest\":{\"requests\":%llu,\"rows_stored\":%llu,"
	            "\"duplicates_ignored\":%llu,\"rejected\":{", (unsigned long long)st.requests,
	            (unsigned long long)st.rows_stored, (unsigned long long)st.duplicates_ignored);
	for (int r = 0; r < TSD_REJECT_NREASONS; r++)
		jbuf_printf(b, "%s\"%s\":%llu", r ? "," : "", tsd_ingest_reason_name(r),
		            (unsigned long long)st.lines_rejected[r]);
	jbuf_printf(b, "},\"rows_missing_tags\":%llu,\"tables_created\":%llu,"
	            "\"columns_added\":%llu}", (unsigned long long)st.rows_missing_tags,
	            (unsigned long long)st.tables_created, (unsigned long long)st.columns_added);
}

static struct scratch *scratch_get(struct tsd_ingest *in)
{
	struct scratch *sc;
	pthread_mutex_lock(&in->mu);
	if ((sc = in->free))
		in->free = sc->next;
	pthread_mutex_unlock(&in->mu);
	if (!sc)
		sc = calloc(1, sizeof *sc);
	return sc;
}

static void scratch_put(struct tsd_ingest *in, struct scratch *sc)
{
	for (int i = 0; i < sc->ntables; i++) {
		ts_schema_free(sc->tables[i].schema);
		sc->tables[i].schema = NULL;
	}
	sc->ntables = 0;
	arena_reset(sc);
	pthread_mutex_lock(&in->mu);
	sc->next = in->free;
	in->free = sc;
	pthread_mutex_unlock(&in->mu);
}

/* ---- Results ---- */

static void reject(struct tsd_ingest_result *res, uint64_t line, enum tsd_ingest_reason why,
                   const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static void reject(struct tsd_ingest_result *res, uint64_t line, enum tsd_ingest_reason why,
                   const char *fmt, ...)
{
	va_list ap;
	res->rejected++;
	res->by_reason[why]++;
	if ((res->first_bad_line && res->first_bad_line <= line) || res->code < 0)
		return; /* an earlier line, or a storage failure, has the message */
	res->first_bad_line = line;
	int n = snprintf(res->error, sizeof res->error, "line %llu: ", (unsigned long long)line);
	va_start(ap, fmt);
	vsnprintf(res->error + n, sizeof res->error - (size_t)n, fmt, ap);
	va_end(ap);
}

/* ---- Schemas ---- */

int tsd_ingest_find_column(const ts_schema *s, const char *name)
{
	for (int i = 0; s && i < s->ncolumns; i++)
		if (strcasecmp(s->columns[i].name, name) == 0)
			return i;
	return -1;
}

int tsd_ingest_key_position(const ts_schema *s, int c)
{
	for (int k = 0; k < s->nkey; k++)
		if (s->key[k] == c)
			return k;
	return -1;
}

/* The column type a field type maps to. */
static ts_type column_type(enum lp_type t)
{
	switch (t) {
	case LP_FLOAT: return TS_DOUBLE;
	case LP_INT:
	case LP_UINT: return TS_INT64;
	case LP_BOOL: return TS_INT32;
	default: return TS_STRING;
	}
}

static const char *lp_type_name(enum lp_type t)
{
	static const char *const names[] = {"float", "integer", "unsigned", "boolean", "string"};
	return names[t];
}

/* Take rt's schema (again) from its table. */
static int rtable_schema(struct rtable *rt)
{
	ts_schema_free(rt->schema);
	rt->schema = NULL;
	rt->lay.valid = 0;
	rt->nrows = 0;
	if (!rt->e)
		return 0;
	int rc = ts_table_schema(rt->e->t, &rt->schema);
	if (rc < 0)
		return rc;
	rt->nkey_tags = rt->schema->nkey - 1;
	return 0;
}

/* The rtable of measurement m, made on first sight (its table opened if
 * it exists).  NULL when out of memory; *rc receives a failure to open
 * the table other than its absence. */
static struct rtable *rtable_for(struct tsd_ingest *in, struct scratch *sc,
                                 const struct lp_text *m, int *rc)
{
	struct rtable *rt;
	*rc = 0;
	if (sc->last < sc->ntables) {
		rt = &sc->tables[sc->last];
		if (rt->raw.len == m->len && memcmp(rt->raw.p, m->p, m->len) == 0)
			return rt;
	}
	for (int i = 0; i < sc->ntables; i++) {
		rt = &sc->tables[i];
		if (rt->raw.len == m->len && memcmp(rt->raw.p, m->p, m->len) == 0) {
			sc->last = i;
			return rt;
		}
	}
	if (sc->ntables == sc->captables) {
		int cap = sc->captables ? sc->captables * 2 : 8;
		struct rtable *t = realloc(sc->tables, (size_t)cap * sizeof *t);
		if (!t)
			return NULL;
		memset(t + sc->captables, 0, (size_t)(cap - sc->captables) * sizeof *t);
		sc->tables = t;
		sc->captables = cap;
	}
	rt = &sc->tables[sc->ntables];
	size_t n;
	const char *name = text_of(sc, m, &n);
	if (!name)
		return NULL;
	rt->raw = *m;
	tsd_ingest_name(name, n, 0, rt->name);
	rt->e = NULL;
	rt->problem[0] = '\0';
	rt->nwants = 0;
	*rc = entry_get(in, rt->name, &rt->e);
	if (*rc == TS_ENOENT)
		*rc = 0;
	if (*rc == 0)
		*rc = rtable_schema(rt);
	sc->last = sc->ntables++;
	return rt;
}

/* ---- The build pass ---- */

/* What resolving a name gave: a column, or why not. */
enum { RESOLVED = 0, UNKNOWN = 1, REFUSED = 2 }; /* errors are negative */

/* The column of tag key k in rt: RESOLVED with *col; REFUSED after
 * refusing the line. */
static int resolve_tag(struct tsd_ingest *in, struct scratch *sc, struct rtable *rt,
                       const struct lp_text *k, int *col, struct tsd_ingest_result *res)
{
	char name[TS_NAME_MAX + 1];
	size_t n;
	const char *p = text_of(sc, k, &n);
	if (!p)
		return TS_ENOMEM;
	tsd_ingest_name(p, n, 1, name);
	int c = tsd_ingest_find_column(rt->schema, name);
	int kp = c < 0 ? -1 : tsd_ingest_key_position(rt->schema, c);
	if (kp < 0 || kp == rt->schema->nkey - 1 || rt->schema->columns[c].type != TS_STRING) {
		if (first_time(in, rt->e, CAUSE_TAG))
			log_msg(in, "table \"%s\": refusing lines with tag \"%s\", which is no string key "
			        "column of the table (its key is fixed when it is created)", rt->name, name);
		reject(res, sc->reader.line, TSD_REJECT_TAG,
		       "table \"%s\": tag \"%s\" is not a string key column of the table", rt->name, name);
		return REFUSED;
	}
	*col = c;
	return RESOLVED;
}

/* The column of field f in rt: RESOLVED with *col; UNKNOWN when the table
 * has no such column; REFUSED after refusing the line. */
static int resolve_field(struct tsd_ingest *in, struct scratch *sc, struct rtable *rt,
                         const struct lp_field *f, int final, int *col,
                         struct tsd_ingest_result *res)
{
	char name[TS_NAME_MAX + 1];
	size_t n;
	const char *p = text_of(sc, &f->key, &n);
	if (!p)
		return TS_ENOMEM;
	tsd_ingest_name(p, n, 1, name);
	int c = tsd_ingest_find_column(rt->schema, name);
	if (c < 0) {
		if (!final)
			return UNKNOWN;
		reject(res, sc->reader.line, TSD_REJECT_SCHEMA, "table \"%s\": no column for field \"%s\"%s%s",
		       rt->name, name, rt->problem[0] ? ": " : "", rt->problem);
		return REFUSED;
	}
	if (tsd_ingest_key_position(rt->schema, c) >= 0) {
		reject(res, sc->reader.line, TSD_REJECT_TYPE,
		       "table \"%s\": field \"%s\" has the name of a key column", rt->name, name);
		return REFUSED;
	}
	*col = c;
	return RESOLVED;
}

/* Resolve the columns of every tag and field of pt into tcol and fcol,
 * from rt's cached layout when the line repeats it. */
static int resolve(struct tsd_ingest *in, struct scratch *sc, struct rtable *rt,
                   const struct lp_point *pt, int final, int *tcol, int *fcol,
                   struct tsd_ingest_result *res)
{
	struct layout *l = &rt->lay;
	int rc;
	if (l->valid && l->ntags == pt->ntags && l->nfields == pt->nfields) {
		int same = 1;
		for (int i = 0; same && i < pt->ntags; i++)
			same = l->tkey[i].len == pt->tags[i].key.len &&
			       memcmp(l->tkey[i].p, pt->tags[i].key.p, l->tkey[i].len) == 0;
		for (int i = 0; same && i < pt->nfields; i++)
			same = l->fkey[i].len == pt->fields[i].key.len &&
			       memcmp(l->fkey[i].p, pt->fields[i].key.p, l->fkey[i].len) == 0;
		if (same) {
			memcpy(tcol, l->tcol, (size_t)pt->ntags * sizeof *tcol);
			memcpy(fcol, l->fcol, (size_t)pt->nfields * sizeof *fcol);
			return RESOLVED;
		}
	}
	for (int i = 0; i < pt->ntags; i++)
		if ((rc = resolve_tag(in, sc, rt, &pt->tags[i].key, &tcol[i], res)) != RESOLVED)
			return rc;
	for (int i = 0; i < pt->nfields; i++)
		if ((rc = resolve_field(in, sc, rt, &pt->fields[i], final, &fcol[i], res)) != RESOLVED)
			return rc;
	if (pt->ntags <= LAYOUT_TAGS && pt->nfields <= LAYOUT_FIELDS) {
		l->valid = 1;
		l->ntags = pt->ntags;
		l->nfields = pt->nfields;
		for (int i = 0; i < pt->ntags; i++)
			l->tkey[i] = pt->tags[i].key, l->tcol[i] = tcol[i];
		for (int i = 0; i < pt->nfields; i++)
			l->fkey[i] = pt->fields[i].key, l->fcol[i] = fcol[i];
	}
	return RESOLVED;
}

/* Room for one more row in rt, all of its values TS_NONE. */
static ts_value *row_alloc(struct rtable *rt)
{
	size_t nc = (size_t)rt->schema->ncolumns;
	if ((rt->nrows + 1) * nc > rt->capvals) {
		size_t cap = rt->capvals * 2 > 256 * nc ? rt->capvals * 2 : 256 * nc;
		ts_value *rows = realloc(rt->rows, cap * sizeof *rows);
		if (!rows)
			return NULL;
		rt->rows = rows;
		rt->capvals = cap;
	}
	if (rt->nrows == rt->caplines) {
		size_t cap = rt->caplines ? rt->caplines * 2 : 256;
		uint64_t *lines = realloc(rt->lines, cap * sizeof *lines);
		if (!lines)
			return NULL;
		rt->lines = lines;
		rt->caplines = cap;
	}
	ts_value *row = rt->rows + rt->nrows * nc;
	for (size_t i = 0; i < nc; i++)
		row[i].type = TS_NONE;
	return row;
}

/* A string value of row column c from text t; REFUSED after refusing the
 * line when it is not UTF-8. */
static int put_string(struct scratch *sc, struct rtable *rt, ts_value *v, const struct lp_text *t,
                      const char *what, struct tsd_ingest_result *res)
{
	size_t n;
	const char *p = text_of(sc, t, &n);
	if (!p)
		return TS_ENOMEM;
	if (!tsd_ingest_utf8_ok(p, n)) {
		reject(res, sc->reader.line, TSD_REJECT_STORE, "table \"%s\": %s is not valid UTF-8",
		       rt->name, what);
		return REFUSED;
	}
	*v = ts_stringn(p, n);
	return RESOLVED;
}

/* The value of field f into v, for a column of type ct. */
static int put_field(struct tsd_ingest *in, struct scratch *sc, struct rtable *rt,
                     const struct lp_field *f, int c, ts_value *v, struct tsd_ingest_result *res)
{
	const ts_column *col = &rt->schema->columns[c];
	uint64_t line = sc->reader.line;
	double d;
	if (column_type(f->type) != col->type) {
		if (first_time(in, rt->e, CAUSE_TYPE))
			log_msg(in, "table \"%s\": refusing lines whose field \"%s\" is %s: the column is %s "
			        "(logged once per table)", rt->name, col->name, lp_type_name(f->type),
			        ts_type_name(col->type));
		reject(res, line, TSD_REJECT_TYPE, "table \"%s\": field \"%s\" is %s, but column \"%s\" is %s",
		       rt->name, col->name, lp_type_name(f->type), col->name, ts_type_name(col->type));
		return REFUSED;
	}
	switch (f->type) {
	case LP_FLOAT:
		if (lp_field_float(f, &d) < 0) {
			reject(res, line, TSD_REJECT_RANGE, "table \"%s\": field \"%s\": %.*s is out of the "
			       "range of a double", rt->name, col->name, (int)(f->raw.len > 40 ? 40 : f->raw.len),
			       f->raw.p);
			return REFUSED;
		}
		*v = ts_double(d);
		return RESOLVED;
	case LP_INT: *v = ts_int64(f->v.i); return RESOLVED;
	case LP_UINT:
		if (f->v.u > (uint64_t)INT64_MAX) {
			reject(res, line, TSD_REJECT_RANGE, "table \"%s\": field \"%s\": unsigned %llu does "
			       "not fit int64", rt->name, col->name, (unsigned long long)f->v.u);
			return REFUSED;
		}
		*v = ts_int64((int64_t)f->v.u);
		return RESOLVED;
	case LP_BOOL: *v = ts_int32(f->v.b); return RESOLVED;
	default: return put_string(sc, rt, v, &f->raw, "a string field", res);
	}
}

/* Lay out point pt as a row of rt.  RESOLVED when the row was added;
 * REFUSED when the line was refused; UNKNOWN when it needs a column the
 * table lacks (only when !final); TS_ENOMEM. */
static int build_row(struct tsd_ingest *in, struct scratch *sc, struct rtable *rt,
                     const struct lp_point *pt, int64_t now, int final,
                     struct tsd_ingest_result *res)
{
	int tcol[LP_TAGS_MAX], fcol[LP_FIELDS_MAX];
	uint64_t line = sc->reader.line;
	ts_value *row;
	int rc = resolve(in, sc, rt, pt, final, tcol, fcol, res);
	if (rc != RESOLVED)
		return rc;
	if (!(row = row_alloc(rt)))
		return TS_ENOMEM;
	for (int i = 0; i < pt->ntags; i++) {
		if (row[tcol[i]].type != TS_NONE) {
			reject(res, line, TSD_REJECT_DUPLICATE, "table \"%s\": tag \"%s\" given twice",
			       rt->name, rt->schema->columns[tcol[i]].name);
			return REFUSED;
		}
		if ((rc = put_string(sc, rt, &row[tcol[i]], &pt->tags[i].value, "a tag value", res)))
			return rc;
	}
	for (int i = 0; i < pt->nfields; i++) {
		if (row[fcol[i]].type != TS_NONE) {
			reject(res, line, TSD_REJECT_DUPLICATE, "table \"%s\": field \"%s\" given twice",
			       rt->name, rt->schema->columns[fcol[i]].name);
			return REFUSED;
		}
		if ((rc = put_field(in, sc, rt, &pt->fields[i], fcol[i], &row[fcol[i]], res)))
			return rc;
	}
	int64_t ts = pt->has_time ? pt->time : now;
	if (in->o.max_future > 0 && ts > now && ts - now > in->o.max_future) {
		reject(res, line, TSD_REJECT_TIME, "table \"%s\": timestamp %lld is more than max-future "
		       "ahead of now", rt->name, (long long)ts);
		return REFUSED;
	}
	if (rt->schema->ttl > 0 && now - rt->schema->ttl > ts) {
		reject(res, line, TSD_REJECT_TIME, "table \"%s\": timestamp %lld is older than the "
		       "table's TTL", rt->name, (long long)ts);
		return REFUSED;
	}
	row[rt->schema->key[rt->schema->nkey - 1]] = ts_timestamp(ts);
	if (pt->ntags < rt->nkey_tags) {
		res->rows_missing_tags++;
		if (first_time(in, rt->e, CAUSE_MISSING))
			log_msg(in, "table \"%s\": lines without some of its tags are stored with \"\" in "
			        "those key columns (logged once per table)", rt->name);
	}
	rt->lines[rt->nrows++] = line;
	sc->buffered += (size_t)rt->schema->ncolumns;
	return RESOLVED;
}

static void flush_all(struct tsd_ingest *in, struct scratch *sc, struct tsd_ingest_result *res);

/* The build pass over what is left of the body (sc->reader).  Returns 0;
 * UNKNOWN when a table or column is missing and !final: the pass stopped
 * at that line (sc->reader.line_p), which is not counted yet; TS_ENOMEM. */
static int build_pass(struct tsd_ingest *in, struct scratch *sc, int64_t now, int final,
                      struct tsd_ingest_result *res)
{
	struct lp_point pt;
	int rc;
	while ((rc = lp_next(&sc->reader, &pt)) != 0) {
		struct lp_reader *r = &sc->reader;
		struct rtable *rt;
		if (rc < 0) {
			reject(res, r->line, TSD_REJECT_SYNTAX, "unable to parse '%.*s%s': %s",
			       (int)(r->line_len > TSD_INGEST_QUOTE_MAX ? TSD_INGEST_QUOTE_MAX : r->line_len),
			       r->line_p, r->line_len > TSD_INGEST_QUOTE_MAX ? "..." : "", r->why);
			continue;
		}
		res->points++;
		if (!(rt = rtable_for(in, sc, &pt.measurement, &rc)))
			return TS_ENOMEM;
		if (rc < 0 && !rt->problem[0])
			snprintf(rt->problem, sizeof rt->problem, "%s", ts_errmsg(NULL));
		if (!rt->schema) {
			if (!final) {
				res->points--;
				return UNKNOWN;
			}
			reject(res, r->line, TSD_REJECT_SCHEMA, "table \"%s\" is not available: %s", rt->name,
			       rt->problem[0] ? rt->problem : "unknown error");
			continue;
		}
		rc = build_row(in, sc, rt, &pt, now, final, res);
		if (rc == UNKNOWN)
			res->points--;
		if (rc == UNKNOWN || rc == TS_ENOMEM)
			return rc;
		if (sc->buffered >= FLUSH_VALUES)
			flush_all(in, sc, res);
	}
	return 0;
}

/* ---- The collect pass ---- */

/* Note that rt needs column name of type (a tag when tag). */
static int want(struct rtable *rt, const char *name, ts_type type, int tag)
{
	for (int i = 0; i < rt->nwants; i++)
		if (strcasecmp(rt->wants[i].name, name) == 0)
			return 0; /* the first type seen wins */
	if (rt->nwants == rt->capwants) {
		int cap = rt->capwants ? rt->capwants * 2 : 16;
		struct want *w = realloc(rt->wants, (size_t)cap * sizeof *w);
		if (!w)
			return TS_ENOMEM;
		rt->wants = w;
		rt->capwants = cap;
	}
	struct want *w = &rt->wants[rt->nwants++];
	snprintf(w->name, sizeof w->name, "%s", name);
	w->type = type;
	w->tag = tag;
	w->order = rt->nwants - 1;
	return 0;
}

/* What point pt needs of its table. */
static int collect_point(struct scratch *sc, struct rtable *rt, const struct lp_point *pt)
{
	char name[TS_NAME_MAX + 1];
	size_t n;
	const char *p;
	int rc;
	for (int i = 0; !rt->schema && i < pt->ntags; i++) {
		if (!(p = text_of(sc, &pt->tags[i].key, &n)))
			return TS_ENOMEM;
		if ((rc = want(rt, tsd_ingest_name(p, n, 1, name), TS_STRING, 1)) < 0)
			return rc;
	}
	for (int i = 0; i < pt->nfields; i++) {
		if (!(p = text_of(sc, &pt->fields[i].key, &n)))
			return TS_ENOMEM;
		tsd_ingest_name(p, n, 1, name);
		if (tsd_ingest_find_column(rt->schema, name) >= 0)
			continue;
		if ((rc = want(rt, name, column_type(pt->fields[i].type), 0)) < 0)
			return rc;
	}
	return 0;
}

static int cmp_want(const void *a, const void *b)
{
	const struct want *x = a, *y = b;
	if (x->tag != y->tag)
		return y->tag - x->tag; /* tags first */
	return x->tag ? strcmp(x->name, y->name) : x->order - y->order;
}

/* Create rt's table from what the collect pass found: the tags (at most
 * TS_KEY_COLUMNS_MAX - 1 of them, the first met), sorted by name, then
 * ts, then the fields in the order met. */
static int create_table(struct tsd_ingest *in, struct rtable *rt)
{
	ts_column cols[TS_COLUMNS_MAX];
	const char *keys[TS_KEY_COLUMNS_MAX];
	int ntags = 0, ncols = 0, kept = 0;
	/* Tags beyond the key's room are dropped from the wants: lines with
	 * them are refused as tags the key lacks. */
	for (int i = 0; i < rt->nwants; i++) {
		if (rt->wants[i].tag && ntags == TS_KEY_COLUMNS_MAX - 1)
			continue;
		ntags += rt->wants[i].tag;
		rt->wants[kept++] = rt->wants[i];
	}
	rt->nwants = kept;
	qsort(rt->wants, (size_t)rt->nwants, sizeof *rt->wants, cmp_want);
	for (int i = 0; i < rt->nwants && ncols < TS_COLUMNS_MAX - 1; i++) {
		struct want *w = &rt->wants[i];
		if (i == ntags)
			cols[ncols++] = (ts_column){.name = "ts", .type = TS_TIMESTAMP};
		cols[ncols] = (ts_column){.name = w->name, .type = w->type};
		if (w->type == TS_DOUBLE)
			cols[ncols].dflt = ts_double(NAN); /* an absent float reads as NaN */
		ncols++;
	}
	if (ntags == rt->nwants)
		cols[ncols++] = (ts_column){.name = "ts", .type = TS_TIMESTAMP};
	for (int i = 0; i < ntags; i++)
		keys[i] = rt->wants[i].name;
	keys[ntags] = "ts";
	/* Collectors retry whole batches: the tables made here ignore a key
	 * they hold already, so a retried batch is idempotent (issue 26).  A
	 * table made otherwise keeps its own policy; under `reject` its
	 * duplicates are refused line by line (insert_rows). */
	return tsd_ingest_create(in, rt->name, cols, ncols, keys, ntags + 1);
}

int tsd_ingest_create(struct tsd_ingest *in, const char *name, const ts_column *cols, int ncols,
                      const char *const *keys, int nkeys)
{
	int rc = ts_create_keyed_v2(db_of(in), name, cols, ncols, keys, nkeys, in->o.default_ttl,
	                            TS_ON_DUPLICATE_IGNORE);
	if (rc == 0)
		count(&in->st.tables_created, 1);
	return rc == TS_EEXIST ? 0 : rc;
}

/* Add the columns rt's fields need and the table lacks. */
static void add_columns(struct tsd_ingest *in, struct rtable *rt)
{
	for (int i = 0; i < rt->nwants; i++) {
		struct want *w = &rt->wants[i];
		ts_column c = {.name = w->name, .type = w->type};
		int rc;
		if (w->tag || tsd_ingest_find_column(rt->schema, w->name) >= 0)
			continue;
		if (c.type == TS_DOUBLE)
			c.dflt = ts_double(NAN);
		rc = ts_alter_add(rt->e->t, &c);
		if (rc == 0)
			count(&in->st.columns_added, 1);
		else if (rc != TS_EEXIST && !rt->problem[0]) {
			snprintf(rt->problem, sizeof rt->problem, "adding it failed: %s", ts_errmsg(NULL));
			if (first_time(in, rt->e, CAUSE_SCHEMA))
				log_msg(in, "table \"%s\": cannot add column \"%s\": %s", rt->name, w->name,
				        ts_errmsg(NULL));
		}
	}
}

/* The collect pass: what each measurement needs, then the tables made
 * and the columns added.  Returns 0 or TS_ENOMEM. */
static int collect_pass(struct tsd_ingest *in, struct scratch *sc, const char *body, size_t len,
                        enum lp_precision prec)
{
	struct lp_point pt;
	int rc;
	lp_reader_init(&sc->reader, body, len, prec);
	while ((rc = lp_next(&sc->reader, &pt)) != 0) {
		struct rtable *rt;
		if (rc < 0)
			continue;
		if (!(rt = rtable_for(in, sc, &pt.measurement, &rc)))
			return TS_ENOMEM;
		if (rc < 0)
			continue;
		if ((rc = collect_point(sc, rt, &pt)) < 0)
			return rc;
	}
	for (int i = 0; i < sc->ntables; i++) {
		struct rtable *rt = &sc->tables[i];
		if (!rt->e && rt->nwants) {
			if ((rc = create_table(in, rt)) < 0) {
				snprintf(rt->problem, sizeof rt->problem, "%s", ts_errmsg(NULL));
				log_msg(in, "table \"%s\" could not be created: %s", rt->name, rt->problem);
				continue;
			}
			if ((rc = entry_get(in, rt->name, &rt->e)) < 0) {
				snprintf(rt->problem, sizeof rt->problem, "%s", ts_errmsg(NULL));
				continue;
			}
			if ((rc = rtable_schema(rt)) < 0)
				continue;
		}
		if (rt->e && rt->schema) {
			add_columns(in, rt);
			rtable_schema(rt);
		}
	}
	return 0;
}

/* ---- Inserting ---- */

static int row_error(int code)
{
	return code == TS_EDUPKEY || code == TS_EFUTURE || code == TS_EEXPIRED ||
	       code == TS_ETYPE || code == TS_ERANGE || code == TS_ETOOBIG || code == TS_EINVAL;
}

enum tsd_ingest_reason tsd_ingest_reason_of(int code)
{
	switch (code) {
	case TS_EDUPKEY: return TSD_REJECT_DUPLICATE;
	case TS_EFUTURE:
	case TS_EEXPIRED: return TSD_REJECT_TIME;
	case TS_ERANGE: return TSD_REJECT_RANGE;
	default: return TSD_REJECT_STORE;
	}
}

/* Whether t is a rollup (docs/rollups.md), which only its maintenance
 * writes: its counters have rollup_every_ns.  (ts_table_stats leaves
 * the message of the failure before it alone, which ts_rollup_info
 * would replace for a table that is no rollup.) */
static int is_rollup(ts_table *t)
{
	ts_stat st[TS_STATS_MAX];
	int n = 0;
	if (ts_table_stats(t, st, TS_STATS_MAX, &n) < 0)
		return 0;
	for (int i = 0; i < n; i++)
		if (strcmp(st[i].name, "rollup_every_ns") == 0)
			return 1;
	return 0;
}

/* Note that table t's version is tv after a commit of the call's. */
static void note_commit(struct tsd_ingest_result *res, ts_table *t, uint64_t tv)
{
	const char *name = ts_table_name(t);
	if (!tv)
		return;
	for (int i = 0; i < res->ncommits; i++)
		if (strcmp(res->commits[i].table, name) == 0) {
			if (tv > res->commits[i].version)
				res->commits[i].version = tv;
			return;
		}
	if (res->ncommits == TSD_INGEST_COMMITS_MAX) {
		res->commits_over = 1;
		return;
	}
	snprintf(res->commits[res->ncommits].table, sizeof res->commits[0].table, "%s", name);
	res->commits[res->ncommits++].version = tv;
}

int tsd_ingest_insert(ts_table *t, uint32_t version, const ts_value *rows, size_t n, size_t ncols,
                      struct tsd_ingest_result *res, tsd_ingest_refused_fn refused, void *arg,
                      size_t *unstored)
{
	size_t start = 0;
	while (start < n) {
		size_t left = n - start, bad, ignored = 0;
		uint64_t tv = 0;
		int rc = ts_insert_versioned(t, version, rows + start * ncols, left, &ignored, &tv);
		if (rc == 0) {
			res->stored += left - ignored;
			res->ignored += ignored;
			note_commit(res, t, tv);
			return 0;
		}
		const char *msg = ts_errmsg(NULL);
		*unstored = left;
		if (rc == TS_EREADONLY && is_rollup(t)) {
			/* no row of a rollup is the client's to write: each is
			 * refused (never a storage failure, which a client
			 * retries) */
			char copy[512];
			snprintf(copy, sizeof copy, "%s", msg);
			for (size_t i = start; i < n; i++)
				refused(arg, i, rc, copy);
			*unstored = 0;
			return 0;
		}
		if (!row_error(rc) || sscanf(msg, "row %zu", &bad) != 1 || bad >= left)
			return rc;
		const char *why = strstr(msg, ": ");
		char copy[512];
		snprintf(copy, sizeof copy, "%s", why ? why + 2 : msg);
		refused(arg, start + bad, rc, copy);
		/* The rows before the refused one, alone: if they fail now, it
		 * is as a storage failure. */
		if (bad > 0 && (rc = ts_insert_versioned(t, version, rows + start * ncols, bad,
		                                         &ignored, &tv)) < 0)
			return rc;
		if (bad > 0)
			note_commit(res, t, tv);
		res->stored += bad - ignored;
		res->ignored += ignored;
		start += bad + 1;
	}
	return 0;
}

/* What insert_rows's refused rows need. */
struct refusal {
	struct tsd_ingest *in;
	struct rtable *rt;
	struct tsd_ingest_result *res;
};

static void refuse_line(void *arg, size_t row, int rc, const char *why)
{
	struct refusal *f = arg;
	if (rc != TS_EDUPKEY && first_time(f->in, f->rt->e, CAUSE_STORE))
		log_msg(f->in, "table \"%s\": a row was refused: %s (logged once per table)",
		        f->rt->name, why);
	reject(f->res, f->rt->lines[row], tsd_ingest_reason_of(rc), "table \"%s\": %s", f->rt->name, why);
}

/* Insert rt's rows, refusing the lines of the rows the library refuses.
 * Returns 0, or the storage failure (res->error set when it is the first). */
static int insert_rows(struct tsd_ingest *in, struct rtable *rt, struct tsd_ingest_result *res)
{
	struct refusal f = {in, rt, res};
	size_t unstored = 0;
	int rc = tsd_ingest_insert(rt->e->t, rt->schema->version, rt->rows, rt->nrows,
	                           (size_t)rt->schema->ncolumns, res, refuse_line, &f, &unstored);
	if (rc == 0)
		return 0;
	if (rc == TS_ECLOSED)
		entry_retire(in, rt->e);
	if (!res->code || res->code == TS_EINVAL) {
		res->code = rc;
		snprintf(res->error, sizeof res->error, "table \"%s\": %s (%zu rows not stored)",
		         rt->name, ts_errmsg(NULL), unstored);
	}
	return rc;
}

/* Insert the rows every table holds, and forget them. */
static void flush_all(struct tsd_ingest *in, struct scratch *sc, struct tsd_ingest_result *res)
{
	for (int i = 0; i < sc->ntables; i++) {
		if (sc->tables[i].nrows)
			(void)insert_rows(in, &sc->tables[i], res);
		sc->tables[i].nrows = 0;
	}
	sc->buffered = 0;
	arena_reset(sc); /* the strings of those rows */
}

/* ---- The request ---- */

int tsd_ingest_lines(struct tsd_ingest *in, const char *body, size_t len,
                     enum lp_precision prec, struct tsd_ingest_result *res)
{
	struct scratch *sc = scratch_get(in);
	int64_t now = ts_now(db_of(in));
	int rc;
	memset(res, 0, sizeof *res);
	if (!sc) {
		res->code = TS_ENOMEM;
		snprintf(res->error, sizeof res->error, "out of memory");
		return res->code;
	}
	sc->last = 0;
	sc->buffered = 0;
	lp_reader_init(&sc->reader, body, len, prec);
	rc = build_pass(in, sc, now, 0, res);
	if (rc == UNKNOWN) {
		/* Store what was built, make what the rest of the body needs,
		 * and go on from the line that needed it. */
		const char *from = sc->reader.line_p;
		uint64_t line = sc->reader.line - 1;
		size_t rest = (size_t)(body + len - from);
		flush_all(in, sc, res);
		if ((rc = collect_pass(in, sc, from, rest, prec)) == 0) {
			lp_reader_init(&sc->reader, from, rest, prec);
			sc->reader.line = line;
			rc = build_pass(in, sc, now, 1, res);
		}
	}
	if (rc == TS_ENOMEM && !res->code) {
		res->code = TS_ENOMEM;
		snprintf(res->error, sizeof res->error, "out of memory");
	}
	if (rc == 0)
		flush_all(in, sc, res);
	if (!res->code && res->rejected)
		res->code = TS_EINVAL;
	tsd_ingest_account(in, res);
	scratch_put(in, sc);
	return res->code;
}

void tsd_ingest_account(struct tsd_ingest *in, const struct tsd_ingest_result *res)
{
	count(&in->st.requests, 1);
	count(&in->st.rows_stored, res->stored);
	count(&in->st.rows_missing_tags, res->rows_missing_tags);
	count(&in->st.duplicates_ignored, res->ignored);
	for (int r = 0; r < TSD_REJECT_NREASONS; r++)
		if (res->by_reason[r])
			count(&in->st.lines_rejected[r], res->by_reason[r]);
}

/* ---- For the other protocols (promwrite.c) ---- */

int tsd_ingest_table(struct tsd_ingest *in, const char *name, ts_table **out)
{
	struct entry *e;
	int rc = entry_get(in, name, &e);
	*out = rc == 0 ? e->t : NULL;
	return rc;
}

/* The cached entry of table name, or NULL (in->mu held by the caller). */
static struct entry *entry_find(struct tsd_ingest *in, const char *name)
{
	struct entry *e = in->buckets[bucket_of(name)];
	while (e && strcmp(e->name, name) != 0)
		e = e->next;
	return e;
}

void tsd_ingest_forget(struct tsd_ingest *in, const char *name)
{
	pthread_mutex_lock(&in->mu);
	struct entry *e = entry_find(in, name);
	pthread_mutex_unlock(&in->mu);
	if (e)
		entry_retire(in, e);
}

int tsd_ingest_once(struct tsd_ingest *in, const char *name, unsigned cause)
{
	pthread_mutex_lock(&in->mu);
	struct entry *e = entry_find(in, name);
	pthread_mutex_unlock(&in->mu);
	return first_time(in, e, cause);
}

void tsd_ingest_log(struct tsd_ingest *in, const char *msg)
{
	log_msg(in, "%s", msg);
}

int64_t tsd_ingest_now(struct tsd_ingest *in)
{
	return ts_now(db_of(in));
}

int64_t tsd_ingest_max_future(const struct tsd_ingest *in)
{
	return in->o.max_future;
}
