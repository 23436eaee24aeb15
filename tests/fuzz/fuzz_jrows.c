/*
 * fuzz_jrows.c -- libFuzzer target for the fast path of insert rows
 * (common/jrows.c): each input is the text of a "rows" array, parsed by
 * jrows_parse and by the slow path (jansson, then jrows_from_json); any
 * disagreement in the code, the values, or the message of a value error
 * aborts, as does any crash, leak or undefined behaviour.  The same
 * oracle as tests/daemon/test_jrows.c, fed by the fuzzer instead of a
 * generator.  Seed corpus: tests/fuzz/jrows/.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jrows.h"
#include "json.h"
#include "value.h"

static const ts_column columns[] = {
	{.name = "host", .type = TS_STRING}, {.name = "ts", .type = TS_TIMESTAMP},
	{.name = "i", .type = TS_INT32},     {.name = "l", .type = TS_INT64},
	{.name = "d", .type = TS_DOUBLE},    {.name = "b", .type = TS_BLOB},
};
#define NCOLS 6
static const int key[] = {0, 1};
static const ts_schema schema = {.ncolumns = NCOLS, .columns = columns, .nkey = 2, .key = key};

static int same(const ts_value *a, const ts_value *b)
{
	if (a->type != b->type)
		return 0;
	if (a->type == TS_STRING || a->type == TS_BLOB)
		return a->v.s.len == b->v.s.len && memcmp(a->v.s.ptr, b->v.s.ptr, a->v.s.len) == 0;
	if (a->type == TS_DOUBLE)
		return memcmp(&a->v.d, &b->v.d, sizeof a->v.d) == 0;
	return a->type == TS_NONE || a->v.i == b->v.i;
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);
int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
	char fwhy[1024], swhy[1024], *copy = malloc(size + 1);
	ts_value *fast = NULL, *slow = NULL;
	size_t nf = 0, ns = 0;
	json_error_t err;
	size_t nests = 0;
	int src;
	/* Past ~2000 levels jansson refuses the nesting a little earlier or
	 * later than jrows (their depths count from different roots): there
	 * only crashes count. */
	for (size_t i = 0; i < size; i++)
		nests += data[i] == '[' || data[i] == '{';
	memcpy(copy, data, size);
	copy[size] = '\0';
	int frc = jrows_parse(copy, size, &schema, &fast, &nf, fwhy, sizeof fwhy);
	/* A raw NUL is malformed JSON (jansson takes it for an end of input;
	 * the daemon refuses such lines before either parser sees them). */
	json_t *j = memchr(data, '\0', size) ? NULL : json_loadb((const char *)data, size, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &err);
	src = !j || !json_is_array(j) ? TS_EPROTO : jrows_from_json(j, &schema, &slow, &ns, swhy, sizeof swhy);
	if (nests > 1000) {
		/* nothing to compare */
	} else if (frc != src || (frc < 0 && frc != TS_EPROTO && strcmp(fwhy, swhy) != 0) ||
	           (frc == 0 && nf != ns)) {
		fprintf(stderr, "fast: %s (%s)\nslow: %s (%s)\n", ts_errname(frc), frc ? fwhy : "",
		        ts_errname(src), src ? swhy : j ? "" : err.text);
		abort();
	}
	for (size_t i = 0; nests <= 1000 && frc == 0 && i < nf * NCOLS; i++)
		if (!same(&fast[i], &slow[i]))
			abort();
	for (size_t i = 0; i < ns * NCOLS; i++)
		val_free(&slow[i]);
	free(slow);
	free(fast);
	free(copy);
	json_decref(j);
	return 0;
}
