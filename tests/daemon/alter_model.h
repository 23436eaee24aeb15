/*
 * alter_model.h -- self-describing rows for the alter-race stress tests
 * (tests/unit/test_alter_race.c through the library, test_daemon_alter.c
 * through tsstored, and the soak's alter racer).
 *
 * A table "ar" starts at schema version 1 with the columns
 *   host int64, ts timestamp, w int64, c3 int32, c4 double, c5 string,
 *   c6 int32                                   key (host, ts)
 * and goes through AM_ALTERS alters, alter k making version k + 1: every
 * third alter widens the oldest int32 column not yet widened, the others
 * append column c<n> (n its index) of type int32, double or string in
 * turn.  am_init computes every version's columns, so a checker knows the
 * schema any version had.
 *
 * A writer puts in w the version of the schema it built the row for, and
 * in column i the value am_value(host, ts, i, type of i in that version),
 * which no other column of the row has.  So once the alters are done,
 * every stored row can be checked exactly (am_check_row): column i holds
 * am_value of w's type when version w had it, else its default -- never
 * another column's value, never a value of a version the writer did not
 * use.  Defaults: int32 -(i+1) (the same number once widened), double
 * i + 0.5, string "d<i>".  Widened columns get values beyond int32 from
 * writers who saw them widened, so a row read under the wrong version
 * cannot pass.
 */
#ifndef TS_TEST_ALTER_MODEL_H
#define TS_TEST_ALTER_MODEL_H

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include <tsstore.h>

#define AM_TABLE "ar"
#define AM_FIXED 3                     /* host, ts, w */
#define AM_ALTERS 24                   /* versions 1 .. AM_ALTERS + 1 */
#define AM_VERSIONS (AM_ALTERS + 1)
#define AM_COLS_MAX (7 + AM_ALTERS)
#define AM_STR_MAX 24                  /* room for a string value or default */

struct am_model {
	int ncols[AM_VERSIONS + 1];            /* [v]: columns of version v */
	ts_type type[AM_VERSIONS + 1][AM_COLS_MAX];
	char name[AM_COLS_MAX][8];
	int widen[AM_ALTERS + 1];             /* [k]: column alter k widens, or -1 */
};

static inline void am_init(struct am_model *m)
{
	static const ts_type v1[] = {TS_INT64, TS_TIMESTAMP, TS_INT64, TS_INT32,
	                             TS_DOUBLE, TS_STRING, TS_INT32};
	static const ts_type added[] = {TS_INT32, TS_DOUBLE, TS_STRING};
	int nadded = 0;
	memset(m, 0, sizeof *m);
	m->ncols[1] = 7;
	for (int i = 0; i < 7; i++)
		m->type[1][i] = v1[i];
	for (int i = 0; i < AM_COLS_MAX; i++)
		snprintf(m->name[i], sizeof m->name[i], "c%d", i);
	strcpy(m->name[0], "host");
	strcpy(m->name[1], "ts");
	strcpy(m->name[2], "w");
	for (int k = 1; k <= AM_ALTERS; k++) {
		int v = k + 1, n = m->ncols[k];
		memcpy(m->type[v], m->type[k], sizeof m->type[v]);
		m->ncols[v] = n;
		m->widen[k] = -1;
		if (k % 3 == 0) {
			for (int i = AM_FIXED; i < n && m->widen[k] < 0; i++)
				if (m->type[k][i] == TS_INT32)
					m->widen[k] = i;
			if (m->widen[k] >= 0) {
				m->type[v][m->widen[k]] = TS_INT64;
				continue;
			}
		}
		m->type[v][n] = added[nadded++ % 3];
		m->ncols[v] = n + 1;
	}
}

/* The column alter k appends (its index, type and default), for the
 * library (ts_alter_add); buf holds a string default. */
static inline ts_column am_added(const struct am_model *m, int k, char *buf)
{
	int i = m->ncols[k];
	ts_column c = {m->name[i], m->type[k + 1][i], ts_none()};
	switch (c.type) {
	case TS_INT32: c.dflt = ts_int32(-(i + 1)); break;
	case TS_DOUBLE: c.dflt = ts_double(i + 0.5); break;
	default:
		snprintf(buf, AM_STR_MAX, "d%d", i);
		c.dflt = ts_string(buf);
	}
	return c;
}

static inline uint64_t am_hash(int64_t host, int64_t ts, int i)
{
	uint64_t h = (uint64_t)host * 0x9E3779B97F4A7C15u ^ (uint64_t)ts * 0xC2B2AE3D27D4EB4Fu ^
	             (uint64_t)(i + 1) * 0x165667B19E3779F9u;
	h ^= h >> 29;
	h *= 0xBF58476D1CE4E5B9u;
	return h ^ h >> 32;
}

/* The value a writer puts in column i (i >= AM_FIXED) of type type; buf
 * holds a string. */
static inline ts_value am_value(int64_t host, int64_t ts, int i, ts_type type, char *buf)
{
	uint64_t h = am_hash(host, ts, i);
	switch (type) {
	case TS_INT32: return ts_int32((int32_t)(h % 2000000000u) - 1000000000);
	case TS_INT64: return ts_int64((int64_t)(h >> 24) + (INT64_C(1) << 40));
	case TS_DOUBLE: return ts_double((double)(h % 1000000u) + 0.25);
	default:
		snprintf(buf, AM_STR_MAX, "v%" PRIx64, h >> 8);
		return ts_string(buf);
	}
}

/* The default of column i (i >= AM_FIXED) as of version v. */
static inline ts_value am_default(const struct am_model *m, int v, int i, char *buf)
{
	switch (m->type[v][i]) {
	case TS_INT32: return ts_int32(-(i + 1));
	case TS_INT64: return ts_int64(-(i + 1));
	case TS_DOUBLE: return ts_double(i + 0.5);
	default:
		snprintf(buf, AM_STR_MAX, "d%d", i);
		return ts_string(buf);
	}
}

/* Fill row[0..ncols[v]) for (host, ts) as a writer at version v does. */
static inline void am_row(const struct am_model *m, int v, int64_t host, int64_t ts,
                          ts_value *row, char (*bufs)[AM_STR_MAX])
{
	row[0] = ts_int64(host);
	row[1] = ts_timestamp(ts);
	row[2] = ts_int64(v);
	for (int i = AM_FIXED; i < m->ncols[v]; i++)
		row[i] = am_value(host, ts, i, m->type[v][i], bufs[i]);
}

static inline int am_same(const ts_value *a, const ts_value *b)
{
	if (a->type != b->type)
		return 0;
	switch (a->type) {
	case TS_DOUBLE: return a->v.d == b->v.d;
	case TS_STRING:
	case TS_BLOB:
		return a->v.s.len == b->v.s.len && memcmp(a->v.s.ptr, b->v.s.ptr, a->v.s.len) == 0;
	default: return a->v.i == b->v.i;
	}
}

/*
 * Check a stored row row[0..n) read under version cur: 0, or -1 with why
 * saying which column holds what.
 */
static inline int am_check_row(const struct am_model *m, int cur, const ts_value *row, int n,
                               char *why, size_t whysz)
{
	char buf[AM_STR_MAX];
	if (n != m->ncols[cur]) {
		snprintf(why, whysz, "%d values, want %d", n, m->ncols[cur]);
		return -1;
	}
	int64_t host = row[0].v.i, ts = row[1].v.i, w = row[2].v.i;
	if (w < 1 || w > cur) {
		snprintf(why, whysz, "host %" PRId64 " ts %" PRId64 ": w = %" PRId64, host, ts, w);
		return -1;
	}
	for (int i = AM_FIXED; i < n; i++) {
		ts_value want = i < m->ncols[w] ? am_value(host, ts, i, m->type[w][i], buf)
		                                : am_default(m, cur, i, buf);
		if (want.type == TS_INT32 && m->type[cur][i] == TS_INT64)
			want.type = TS_INT64; /* widened since */
		if (!am_same(&row[i], &want)) {
			snprintf(why, whysz, "host %" PRId64 " ts %" PRId64 " w %" PRId64
			         ": column %s (%d) is not the value of version %" PRId64,
			         host, ts, w, m->name[i], i, w);
			return -1;
		}
	}
	return 0;
}

#endif /* TS_TEST_ALTER_MODEL_H */
