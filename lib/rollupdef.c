/*
 * rollupdef.c -- the file ROLLUP: a rollup's definition and watermark
 * (rollupdef.h; the format is docs/rollup-format.md).
 *
 * The file is small (a name, a few numbers, the functions) and replaced
 * whole each time the watermark moves, written as the DESCRIPTOR is:
 * staged, synced, renamed over, directory synced (fsutil.c), so that a
 * crash leaves the old watermark or the new one, never a torn file.  A
 * CRC-32C over the whole file catches the damage a crash cannot make.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "crc32c.h"
#include "error.h"
#include "fsutil.h"
#include "rollupdef.h"

_Thread_local int ts__rollup_writing;

/* ---- value columns ---- */

static int has_col(const ts__rollup_col *c, int n, const char *column, ts_aggfn fn)
{
	for (int i = 0; i < n; i++)
		if (c[i].fn == fn && strcmp(c[i].column, column) == 0)
			return 1;
	return 0;
}

static void add_col(ts__rollup_col *c, int *n, const char *column, ts_aggfn fn)
{
	if (has_col(c, *n, column, fn))
		return;
	snprintf(c[*n].column, sizeof c[*n].column, "%s", column);
	c[*n].fn = fn;
	(*n)++;
}

int ts__rollup_columns(const ts__rollup_def *d, ts__rollup_col **out, int *n)
{
	ts__rollup_col *c = malloc((size_t)(2 * d->nfns + 1) * sizeof *c);
	*out = NULL;
	*n = 0;
	if (!c)
		return ts__fail(TS_ENOMEM, "out of memory");
	for (int i = 0; i < d->nfns; i++) {
		if (d->fns[i].fn == TS_AGG_MEAN) {
			add_col(c, n, d->fns[i].column, TS_AGG_SUM);
			add_col(c, n, d->fns[i].column, TS_AGG_COUNT);
		} else {
			add_col(c, n, d->fns[i].column, d->fns[i].fn);
		}
	}
	*out = c;
	return 0;
}

int ts__rollup_col_name(const ts__rollup_col *c, char *out, size_t size)
{
	int len = snprintf(out, size, "%s_%s", c->column, ts_aggfn_name(c->fn));
	if (len < 0 || (size_t)len >= size || len > TS_NAME_MAX)
		return ts__fail(TS_ESCHEMA, "column \"%s_%s\": longer than %d bytes", c->column,
		                ts_aggfn_name(c->fn), TS_NAME_MAX);
	return 0;
}

/* ---- the file ---- */

/*
 * Layout (little-endian; docs/rollup-format.md):
 *   magic "TSROLLUP" | u32 format | u32 body length N | body | u32 crc
 *   body: u32 flags | u8 len + source | i64 every | u32 group |
 *         u64 watermark | u32 nfns | nfns x (u8 fn | u8 len + column)
 * crc: CRC-32C of everything before it.
 */
int ts__rollup_encode(const ts__rollup_def *d, unsigned char **b, size_t *n)
{
	ts_buf body, all;
	ts__buf_init(&body);
	ts__buf_init(&all);
	ts__put_u32(&body, d->flags);
	ts__put_u8(&body, (uint8_t)strlen(d->source));
	ts__put(&body, d->source, strlen(d->source));
	ts__put_u64(&body, (uint64_t)d->every);
	ts__put_u32(&body, (uint32_t)d->group);
	ts__put_u64(&body, d->watermark);
	ts__put_u32(&body, (uint32_t)d->nfns);
	for (int i = 0; i < d->nfns; i++) {
		ts__put_u8(&body, (uint8_t)d->fns[i].fn);
		ts__put_u8(&body, (uint8_t)strlen(d->fns[i].column));
		ts__put(&body, d->fns[i].column, strlen(d->fns[i].column));
	}
	ts__put(&all, TS_ROLLUP_MAGIC, 8);
	ts__put_u32(&all, TS_ROLLUP_FORMAT);
	ts__put_u32(&all, (uint32_t)body.len);
	ts__put(&all, body.data, body.len);
	ts__put_u32(&all, ts__crc32c(0, all.data, all.len));
	int oom = body.oom || all.oom;
	ts__buf_free(&body);
	if (oom) {
		ts__buf_free(&all);
		return ts__fail(TS_ENOMEM, "out of memory");
	}
	*b = all.data;
	*n = all.len;
	return 0;
}

/* A name of len bytes from r into out: a valid table or column name. */
static int get_name(ts_reader *r, char *out)
{
	size_t len = ts__get_u8(r);
	const void *p = ts__get_raw(r, len);
	if (r->bad || len == 0 || len > TS_NAME_MAX)
		return -1;
	memcpy(out, p, len);
	out[len] = 0;
	return ts_name_valid(out) ? 0 : -1;
}

int ts__rollup_decode(const void *p, size_t n, ts__rollup_def *d)
{
	const unsigned char *b = p;
	memset(d, 0, sizeof *d);
	if (n < 20 || memcmp(b, TS_ROLLUP_MAGIC, 8) != 0)
		return ts__fail(TS_ECORRUPT, "ROLLUP: not a rollup definition (bad magic or size)");
	uint32_t format = ts__load_u32(b + 8), len = ts__load_u32(b + 12);
	if (format != TS_ROLLUP_FORMAT)
		return ts__fail(TS_EVERSION, "ROLLUP: format version %u, this build reads %u", format,
		                TS_ROLLUP_FORMAT);
	if ((size_t)len != n - 20)
		return ts__fail(TS_ECORRUPT, "ROLLUP: body of %u bytes in a file of %zu", len, n);
	if (ts__crc32c(0, b, n - 4) != ts__load_u32(b + n - 4))
		return ts__fail(TS_ECORRUPT, "ROLLUP: checksum mismatch");
	ts_reader r;
	ts__reader_init(&r, b + 16, len);
	d->flags = ts__get_u32(&r);
	int bad = get_name(&r, d->source) < 0;
	d->every = (int64_t)ts__get_u64(&r);
	uint32_t group = ts__get_u32(&r);
	d->watermark = ts__get_u64(&r);
	uint32_t nfns = ts__get_u32(&r);
	if (bad || r.bad || (d->flags & ~TS_ROLLUP_FROM_ROLLUP) || d->every <= 0 ||
	    group >= TS_KEY_COLUMNS_MAX || nfns == 0 || nfns > 2 * TS_COLUMNS_MAX)
		return ts__fail(TS_ECORRUPT, "ROLLUP: a bad field (flags, source, every, group or "
		                "function count)");
	d->group = (int)group;
	if (!(d->fns = calloc(nfns, sizeof *d->fns)))
		return ts__fail(TS_ENOMEM, "out of memory");
	d->nfns = (int)nfns;
	for (uint32_t i = 0; i < nfns; i++) {
		uint8_t fn = ts__get_u8(&r);
		d->fns[i].fn = (ts_aggfn)fn;
		if (get_name(&r, d->fns[i].column) < 0 || fn < TS_AGG_COUNT || fn > TS_AGG_LAST) {
			ts__rollup_def_free(d);
			return ts__fail(TS_ECORRUPT, "ROLLUP: function %u: a bad function or column", i);
		}
	}
	if (ts__reader_left(&r) != 0) {
		ts__rollup_def_free(d);
		return ts__fail(TS_ECORRUPT, "ROLLUP: %zu bytes after the functions",
		                ts__reader_left(&r));
	}
	return 0;
}

void ts__rollup_def_free(ts__rollup_def *d)
{
	free(d->fns);
	d->fns = NULL;
	d->nfns = 0;
}

int ts__rollup_read(const char *dir, ts__rollup_def *d)
{
	char path[TS_PATH_MAX];
	void *p = NULL;
	size_t n = 0;
	int rc = ts__path(path, "%s/%s", dir, TS_ROLLUP_FILE);
	memset(d, 0, sizeof *d);
	if (rc < 0 || (rc = ts__read_file(path, TS_ROLLUP_FILE_MAX, &p, &n)) < 0)
		return rc == TS_ETOOBIG ? ts__fail(TS_ECORRUPT, "%s: larger than %u bytes", path,
		                                   TS_ROLLUP_FILE_MAX) : rc;
	rc = ts__rollup_decode(p, n, d);
	free(p);
	return rc < 0 ? ts__context(rc, "%s", dir) : 0;
}

int ts__rollup_write(const char *dir, const ts__rollup_def *d)
{
	unsigned char *b;
	size_t n;
	int rc = ts__rollup_encode(d, &b, &n);
	if (rc < 0)
		return rc;
	rc = ts__file_write_atomic(dir, TS_ROLLUP_FILE, b, n);
	free(b);
	return rc;
}

int ts__rollup_load(const char *dir, ts__rollup **out)
{
	ts__rollup *r = calloc(1, sizeof *r);
	*out = NULL;
	if (!r)
		return ts__fail(TS_ENOMEM, "out of memory");
	int rc = ts__rollup_read(dir, &r->def);
	if (rc < 0) {
		free(r);
		if (rc == TS_ENOENT)
			ts__clear_error();
		return rc == TS_ENOENT ? 0 : rc;
	}
	pthread_mutex_init(&r->mu, NULL);
	*out = r;
	return 0;
}

void ts__rollup_reload_watermark(const char *dir, ts__rollup *r)
{
	ts__rollup_def d;
	if (ts__rollup_read(dir, &d) < 0) {
		ts__clear_error(); /* kept as it was; ts_check reports a damaged file */
		return;
	}
	pthread_mutex_lock(&r->mu);
	r->def.watermark = d.watermark;
	pthread_mutex_unlock(&r->mu);
	ts__rollup_def_free(&d);
}

void ts__rollup_free(ts__rollup *r)
{
	if (!r)
		return;
	ts__rollup_def_free(&r->def);
	pthread_mutex_destroy(&r->mu);
	free(r);
}

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int ts__rollups_of(const char *dbdir, const char *source, char ***names, int *n)
{
	char dir[TS_PATH_MAX];
	DIR *dp = opendir(dbdir);
	struct dirent *e;
	char **v = NULL;
	int count = 0, cap = 0, rc = 0;
	*names = NULL;
	*n = 0;
	if (!dp)
		return ts__fail_errno(errno, "open %s", dbdir);
	while (rc == 0 && (e = readdir(dp))) {
		ts__rollup_def d;
		if (e->d_name[0] == '.' || !ts_name_valid(e->d_name) ||
		    ts__path(dir, "%s/%s", dbdir, e->d_name) < 0)
			continue;
		int r = ts__rollup_read(dir, &d);
		if (r == TS_EIO || r == TS_ENOMEM) {
			rc = r; /* the file may name source: not known */
			break;
		}
		if (r < 0)
			continue; /* no rollup; or a damaged definition, ts_check's to report */
		int match = strcmp(d.source, source) == 0;
		ts__rollup_def_free(&d);
		if (!match)
			continue;
		if (count + 1 >= cap) {
			char **w = realloc(v, (size_t)(cap = cap ? 2 * cap : 8) * sizeof *v);
			if (!w) {
				rc = ts__fail(TS_ENOMEM, "out of memory");
				break;
			}
			v = w;
		}
		if (!(v[count] = strdup(e->d_name)))
			rc = ts__fail(TS_ENOMEM, "out of memory");
		else
			v[++count] = NULL;
	}
	closedir(dp);
	if (rc < 0) {
		for (int i = 0; i < count; i++)
			free(v[i]);
		free(v);
		return rc;
	}
	if (!v && !(v = calloc(1, sizeof *v)))
		return ts__fail(TS_ENOMEM, "out of memory");
	qsort(v, (size_t)count, sizeof *v, cmp_names);
	ts__clear_error(); /* the tables that are no rollups said so */
	*names = v;
	*n = count;
	return 0;
}
