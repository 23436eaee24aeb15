/*
 * promwrite.c -- Prometheus remote write 1.0 bodies into plain structs.
 *
 * Nothing of the wire format is written by hand: pbmem.c snappy-decodes
 * the body and has protobuf-c unpack it into an arena bounded by
 * PW_UNPACK_FACTOR times the decoded body (plus PW_UNPACK_SLACK); this
 * module then lays the message out, in the same arena, as the arrays of
 * promwrite.h, whose labels point into unpacked Label messages.  The
 * arena is freed whole by pw_request_free.
 *
 * The body is unpacked by the code protoc-c generates from
 * wire/remote_view.proto: remote.proto's WriteRequest with each series'
 * labels declared bytes, which protobuf writes alike (docs/http.md, "The
 * decoding view").  protobuf-c hands back each label's bytes unparsed;
 * lay_out has them unpacked by protobuf-c's unpacker of remote.proto's
 * Label -- the very call protobuf-c makes for an embedded message -- once
 * per distinct label: a label whose bytes equal those at the same
 * position of the previous series, or those of one in the label cache
 * (struct label_cache), takes that one's decoding.  Equal bytes decode
 * equally, so the series come out as the full decoding would give them;
 * bytes that are no Label refuse the body (PW_EPROTO) as the full
 * decoding would.  What it saves: in a TSBS load, 11 labels a sample,
 * each a message protobuf-c allocated and initialised, became one bytes
 * field copied and compared (BENCHMARKS.md, issue 26).
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "pbmem.h"
#include "promwrite.h"
#include "remote.pb-c.h"
#include "remote_view.pb-c.h"

typedef Tsstore__RemoteView__WriteRequest WriteRequest;
typedef Tsstore__RemoteView__TimeSeries TimeSeries;
typedef Tsstore__Remote__Label Label;

/* Slots of the label cache (a power of two): more than the distinct
 * labels that series of one target, or a TSBS host's metrics, repeat
 * out of position (their metric names). */
#define LABEL_CACHE 64

/* A label unpacked before, by its bytes (in the arena). */
struct label_seen {
	const uint8_t *raw;          /* NULL: the slot is empty */
	size_t len;
	struct pw_label label;
};

/* Labels unpacked in this request, direct-mapped by a hash of their
 * bytes; a slot holds the last label that hashed to it. */
struct label_cache {
	struct label_seen slot[LABEL_CACHE];
};

/* Whether a's bytes are b's. */
static int same_bytes(const ProtobufCBinaryData *a, const ProtobufCBinaryData *b)
{
	return a->len == b->len && (a->len == 0 || memcmp(a->data, b->data, a->len) == 0);
}

/* The slot of bytes b: its length and last (up to) 8 bytes, where a
 * label's value ends, mixed.  A collision costs an unpack, never a wrong
 * label: a slot is taken only when its bytes are equal. */
static struct label_seen *cache_slot(struct label_cache *c, const ProtobufCBinaryData *b)
{
	uint64_t tail = 0;
	size_t n = b->len < 8 ? b->len : 8;
	if (n)
		memcpy(&tail, b->data + b->len - n, n);
	uint64_t h = (tail ^ (uint64_t)b->len << 56) * UINT64_C(0x9e3779b97f4a7c15);
	return &c->slot[h >> 58 & (LABEL_CACHE - 1)];
}

/* Label k of series ts as *out: from the previous series (prev, its
 * labels prev_out) or the cache when its bytes were met, else unpacked.
 * Returns 0; -1 when the arena refused (a->arena.over) or memory ran out;
 * -2 when the bytes are not a Label. */
static int label_of(struct pbmem *a, struct label_cache *c, const TimeSeries *ts, size_t k,
                    const TimeSeries *prev, const struct pw_label *prev_out,
                    struct pw_label *out)
{
	const ProtobufCBinaryData *b = &ts->labels[k];
	if (prev && k < prev->n_labels && same_bytes(b, &prev->labels[k])) {
		*out = prev_out[k];
		return 0;
	}
	struct label_seen *seen = cache_slot(c, b);
	ProtobufCBinaryData had = {seen->len, (uint8_t *)seen->raw};
	if (seen->raw && same_bytes(b, &had)) {
		*out = seen->label;
		return 0;
	}
	const Label *l = (const Label *)pbmem_unpack_in(a, &tsstore__remote__label__descriptor,
	                                                b->len, b->data);
	if (!l)
		return a->arena.over ? -1 : -2;
	*out = (struct pw_label){(const char *)l->name.data, l->name.len,
	                         (const char *)l->value.data, l->value.len};
	/* an empty label's bytes are NULL: the slot would read empty, and
	 * its unpacking is the cheapest there is */
	if (b->data)
		*seen = (struct label_seen){b->data, b->len, *out};
	return 0;
}

/* Lay wr out as r's arrays (in the arena).  Returns 0; -1 when the arena
 * refuses; -2 when a label's bytes are not a Label. */
static int lay_out(struct pbmem *a, const WriteRequest *wr, struct pw_request *r)
{
	struct pw_series *series = NULL;
	struct label_cache *cache = NULL;
	int rc;
	if (wr->n_timeseries &&
	    (!(series = pbmem_alloc(a, wr->n_timeseries * sizeof *series)) ||
	     !(cache = pbmem_alloc(a, sizeof *cache))))
		return -1;
	if (cache)
		memset(cache, 0, sizeof *cache);
	for (size_t i = 0; i < wr->n_timeseries; i++) {
		const TimeSeries *ts = wr->timeseries[i];
		const TimeSeries *prev = i ? wr->timeseries[i - 1] : NULL;
		struct pw_label *labels = NULL;
		struct pw_sample *samples = NULL;
		if (ts->n_labels && !(labels = pbmem_alloc(a, ts->n_labels * sizeof *labels)))
			return -1;
		if (ts->n_samples && !(samples = pbmem_alloc(a, ts->n_samples * sizeof *samples)))
			return -1;
		for (size_t k = 0; k < ts->n_labels; k++)
			if ((rc = label_of(a, cache, ts, k, prev, i ? series[i - 1].labels : NULL,
			                   &labels[k])) < 0)
				return rc;
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
	struct pbmem *a = NULL;
	ProtobufCMessage *msg;
	int rc;
	memset(out, 0, sizeof *out);
	rc = pbmem_unpack(body, len, max_decoded, PW_UNPACK_FACTOR, PW_UNPACK_SLACK,
	                  &tsstore__remote_view__write_request__descriptor,
	                  "a remote write WriteRequest", &msg, &a, &out->decoded_len, err, errsize);
	if (rc == 0 && (rc = lay_out(a, (const WriteRequest *)msg, out)) < 0) {
		if (rc == -2)
			rc = pbmem_fail(err, errsize, PW_EPROTO, "protobuf: the %zu bytes decoded from "
			                "snappy are not a remote write WriteRequest (a label is no Label "
			                "message)", out->decoded_len);
		else if (a->arena.over)
			rc = pbmem_fail(err, errsize, PW_EUNPACK, "protobuf: the message (%zu bytes) would "
			                "take more than %zu bytes unpacked", out->decoded_len,
			                a->arena.limit);
		else
			rc = pbmem_fail(err, errsize, PW_ENOMEM, "out of memory unpacking the message");
		pbmem_free(a);
	}
	if (rc < 0) {
		size_t keep = out->decoded_len;
		memset(out, 0, sizeof *out);
		out->decoded_len = keep;
		return rc;
	}
	out->mem_ = a;
	return 0;
}

void pw_request_free(struct pw_request *r)
{
	pbmem_free(r->mem_);
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
