/*
 * request.c -- the request and schema values both modes of a store call
 * share (request.h): releasing a request's key values, and a schema in
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
