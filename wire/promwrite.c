/*
 * promwrite.c -- Prometheus remote write 1.0 bodies into plain structs.
 *
 * Nothing of the wire format is written by hand: the body is
 * snappy-decoded with libsnappy's C API and unpacked by the code protoc-c
 * generates from wire/remote.proto; this module then lays the message out
 * as the arrays of promwrite.h, whose labels point into the unpacked
 * message's bytes (protobuf-c copies them out of the decoded body, which
 * is freed once unpacked).
 *
 * Memory: the decoded body (at most max_decoded bytes, until unpacked)
 * and one arena that holds the unpacked message and the arrays, freed
 * whole by pw_request_free.  protobuf-c allocates each label and sample apart, so
 * the arena gets them instead of malloc; it refuses to grow past
 * PW_UNPACK_FACTOR times the decoded body (plus PW_UNPACK_SLACK), which
 * bounds what any body can cost.  Requests that are large in one array
 * get a chunk of their own, behind the one being filled, so a big array
 * never wastes the rest of a chunk.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <protobuf-c/protobuf-c.h>
#include <snappy-c.h>

#include "promwrite.h"
#include "remote.pb-c.h"

typedef Tsstore__Remote__WriteRequest WriteRequest;

#define ARENA_CHUNK ((size_t)256 << 10)

struct achunk {
	struct achunk *next;
	size_t used, cap;
	max_align_t data[];
};

/* The memory of a request: its chunks, what they hold in all, and the
 * bound; over is set when the bound refused an allocation. */
struct arena {
	struct achunk *head;
	size_t total, limit;
	int over;
	char *decoded;               /* the decoded body */
};

static void *arena_alloc(void *arg, size_t n)
{
	struct arena *a = arg;
	struct achunk *c = a->head;
	if (n > SIZE_MAX / 2)
		return NULL; /* rounding up below would wrap */
	n = (n + sizeof(max_align_t) - 1) / sizeof(max_align_t) * sizeof(max_align_t);
	if (c && c->cap - c->used >= n) {
		c->used += n;
		return (char *)c->data + c->used - n;
	}
	size_t cap = n > ARENA_CHUNK / 4 ? n : ARENA_CHUNK;
	if (cap > a->limit - a->total) {
		a->over = 1;
		return NULL;
	}
	if (!(c = malloc(sizeof *c + cap)))
		return NULL;
	a->total += cap;
	c->cap = cap;
	c->used = n;
	if (cap == n && a->head) { /* a big one: behind the chunk being filled */
		c->next = a->head->next;
		a->head->next = c;
	} else {
		c->next = a->head;
		a->head = c;
	}
	return c->data;
}

static void arena_free(void *arena, void *p)
{
	(void)arena;
	(void)p; /* freed whole by arena_release */
}

static void arena_release(struct arena *a)
{
	struct achunk *c = a->head;
	while (c) {
		struct achunk *next = c->next;
		free(c);
		c = next;
	}
	free(a->decoded);
	free(a);
}

static int fail(char *err, size_t errsize, int code, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static int fail(char *err, size_t errsize, int code, const char *fmt, ...)
{
	va_list ap;
	if (err && errsize) {
		va_start(ap, fmt);
		vsnprintf(err, errsize, fmt, ap);
		va_end(ap);
	}
	return code;
}

/* Lay wr out as r's arrays (in the arena).  Returns 0, or -1 when the
 * arena refuses. */
static int lay_out(struct arena *a, const WriteRequest *wr, struct pw_request *r)
{
	struct pw_series *series = NULL;
	if (wr->n_timeseries &&
	    !(series = arena_alloc(a, wr->n_timeseries * sizeof *series)))
		return -1;
	for (size_t i = 0; i < wr->n_timeseries; i++) {
		const Tsstore__Remote__TimeSeries *ts = wr->timeseries[i];
		struct pw_label *labels = NULL;
		struct pw_sample *samples = NULL;
		if (ts->n_labels && !(labels = arena_alloc(a, ts->n_labels * sizeof *labels)))
			return -1;
		if (ts->n_samples && !(samples = arena_alloc(a, ts->n_samples * sizeof *samples)))
			return -1;
		for (size_t k = 0; k < ts->n_labels; k++)
			labels[k] = (struct pw_label){
				(const char *)ts->labels[k]->name.data, ts->labels[k]->name.len,
				(const char *)ts->labels[k]->value.data, ts->labels[k]->value.len};
		for (size_t k = 0; k < ts->n_samples; k++)
			samples[k] = (struct pw_sample){ts->samples[k]->value, ts->samples[k]->timestamp};
		series[i] = (struct pw_series){labels, ts->n_labels, samples, ts->n_samples};
		r->samples += ts->n_samples;
	}
	r->series = series;
	r->nseries = wr->n_timeseries;
	return 0;
}

int pw_decode(const void *body, size_t len, size_t max_decoded, struct pw_request *out,
              char *err, size_t errsize)
{
	struct arena *a = NULL;
	ProtobufCAllocator alloc = {.alloc = arena_alloc, .free = arena_free};
	WriteRequest *wr;
	size_t n;
	int rc = 0;
	memset(out, 0, sizeof *out);
	if (snappy_uncompressed_length(body, len, &n) != SNAPPY_OK)
		return fail(err, errsize, PW_ENOTSNAPPY, "snappy: not snappy-compressed data (block "
		            "format): its length prefix is bad");
	out->decoded_len = n;
	if (n > max_decoded)
		return fail(err, errsize, PW_ETOOBIG, "%zu bytes once decoded from snappy, more than "
		            "the %zu allowed", n, max_decoded);
	if (!(a = calloc(1, sizeof *a)) || !(a->decoded = malloc(n ? n : 1))) {
		rc = fail(err, errsize, PW_ENOMEM, "out of memory for the decoded body");
		goto out;
	}
	a->limit = n > (SIZE_MAX - PW_UNPACK_SLACK) / PW_UNPACK_FACTOR ? SIZE_MAX
	           : n * PW_UNPACK_FACTOR + PW_UNPACK_SLACK;
	if (snappy_uncompress(body, len, a->decoded, &n) != SNAPPY_OK) {
		rc = fail(err, errsize, PW_EDAMAGED, "snappy: the compressed data is damaged");
		goto out;
	}
	alloc.allocator_data = a;
	if (!(wr = tsstore__remote__write_request__unpack(&alloc, n, (const uint8_t *)a->decoded)) ||
	    lay_out(a, wr, out) < 0) {
		if (a->over)
			rc = fail(err, errsize, PW_EUNPACK, "protobuf: the message (%zu bytes) would take "
			          "more than %zu bytes unpacked", n, a->limit);
		else if (wr)
			rc = fail(err, errsize, PW_ENOMEM, "out of memory unpacking the message");
		else
			rc = fail(err, errsize, PW_EPROTO, "protobuf: the %zu bytes decoded from snappy "
			          "are not a remote write WriteRequest", n);
		goto out;
	}
	free(a->decoded); /* protobuf-c copied the bytes it keeps */
	a->decoded = NULL;
	out->mem_ = a;
	a = NULL;
out:
	if (a)
		arena_release(a);
	if (rc < 0) {
		size_t keep = out->decoded_len;
		memset(out, 0, sizeof *out);
		out->decoded_len = keep;
	}
	return rc;
}

void pw_request_free(struct pw_request *r)
{
	if (r->mem_)
		arena_release(r->mem_);
	memset(r, 0, sizeof *r);
}

const char *pw_strerror(int code)
{
	switch (code) {
	case 0: return "ok";
	case PW_ENOTSNAPPY: return "not snappy";
	case PW_EDAMAGED: return "damaged snappy";
	case PW_ETOOBIG: return "too big once decoded";
	case PW_EPROTO: return "not a WriteRequest";
	case PW_EUNPACK: return "too big once unpacked";
	case PW_ENOMEM: return "out of memory";
	}
	return "unknown error";
}
