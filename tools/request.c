/*
 * request.c -- the request and schema values both modes of a store call
 * share (request.h): releasing a request's key values, keeping the key
 * a cut result resumes from (struct cli_more), and a schema in
 * one allocation (names and default bytes copied into it), which is what
 * the direct mode copies from the library and the daemon mode builds
 * from a "schema" reply.
 */
#include <stdlib.h>
#include <string.h>

#include "request.h"
#include "value.h"

void cli_req_free(struct cli_req *r)
{
	for (int i = 0; i < r->nprefix; i++)
		val_free(&r->prefix[i]);
	r->nprefix = 0;
	for (int i = 0; i < r->nafter; i++)
		val_free(&r->after[i]);
	r->nafter = 0;
}

void cli_more_free(struct cli_more *m)
{
	for (int i = 0; i < m->nkey; i++)
		val_free(&m->key[i]);
	m->nkey = 0;
}

/* A copy of v whose string or blob bytes are its own (val_free). */
static int copy_value(const ts_value *v, ts_value *out)
{
	char *p;
	*out = *v;
	if (v->type != TS_STRING && v->type != TS_BLOB)
		return 0;
	if (!(p = malloc(v->v.s.len + 1)))
		return TS_ENOMEM;
	if (v->v.s.len)
		memcpy(p, v->v.s.ptr, v->v.s.len);
	p[v->v.s.len] = '\0';
	out->v.s.ptr = p;
	return 0;
}

int cli_more_set_key(struct cli_more *m, const ts_value *key, int n)
{
	cli_more_free(m);
	for (; m->nkey < n && m->nkey < TS_KEY_COLUMNS_MAX; m->nkey++)
		if (copy_value(&key[m->nkey], &m->key[m->nkey]) < 0) {
			cli_more_free(m);
			return TS_ENOMEM;
		}
	return 0;
}

ts_schema *cli_schema_new(const ts_column *columns, int ncolumns, const int *key, int nkey,
                          int64_t ttl, uint32_t version)
{
	size_t size = sizeof(ts_schema) + (size_t)ncolumns * sizeof(ts_column) +
	              (size_t)nkey * sizeof(int);
	for (int i = 0; i < ncolumns; i++) {
		size += strlen(columns[i].name) + 1;
		if (columns[i].dflt.type == TS_STRING || columns[i].dflt.type == TS_BLOB)
			size += columns[i].dflt.v.s.len + 1;
	}
	ts_schema *s = malloc(size);
	if (!s)
		return NULL;
	ts_column *cols = (ts_column *)(s + 1);
	int *keys = (int *)(cols + ncolumns);
	char *text = (char *)(keys + nkey);
	for (int i = 0; i < ncolumns; i++) {
		size_t n = strlen(columns[i].name) + 1;
		cols[i] = columns[i];
		cols[i].name = memcpy(text, columns[i].name, n);
		text += n;
		if (columns[i].dflt.type == TS_STRING || columns[i].dflt.type == TS_BLOB) {
			n = columns[i].dflt.v.s.len;
			if (n)
				memcpy(text, columns[i].dflt.v.s.ptr, n);
			text[n] = '\0';
			cols[i].dflt.v.s.ptr = text;
			text += n + 1;
		}
	}
	memcpy(keys, key, (size_t)nkey * sizeof *keys);
	*s = (ts_schema){.ncolumns = ncolumns, .columns = cols, .nkey = nkey, .key = keys,
	                 .ttl = ttl, .version = version};
	return s;
}

void cli_schema_free(ts_schema *s)
{
	free(s);
}
