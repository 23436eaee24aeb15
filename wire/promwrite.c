/*
 * promwrite.c -- Prometheus remote write 1.0 bodies into plain structs.
 *
 * Nothing of the wire format is written by hand: pbmem.c snappy-decodes
 * the body and has protobuf-c unpack it, by the code protoc-c generates
 * from wire/remote.proto, into an arena bounded by PW_UNPACK_FACTOR
 * times the decoded body (plus PW_UNPACK_SLACK); this module then lays
 * the message out, in the same arena, as the arrays of promwrite.h,
 * whose labels point into the unpacked message's bytes.  The arena is
 * freed whole by pw_request_free.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "pbmem.h"
#include "promwrite.h"
#include "remote.pb-c.h"

typedef Tsstore__Remote__WriteRequest WriteRequest;

/* Lay wr out as r's arrays (in the arena).  Returns 0, or -1 when the
 * arena refuses. */
static int lay_out(struct pbmem *a, const WriteRequest *wr, struct pw_request *r)
{
	struct pw_series *series = NULL;
	if (wr->n_timeseries &&
	    !(series = pbmem_alloc(a, wr->n_timeseries * sizeof *series)))
		return -1;
	for (size_t i = 0; i < wr->n_timeseries; i++) {
		const Tsstore__Remote__TimeSeries *ts = wr->timeseries[i];
		struct pw_label *labels = NULL;
		struct pw_sample *samples = NULL;
		if (ts->n_labels && !(labels = pbmem_alloc(a, ts->n_labels * sizeof *labels)))
			return -1;
		if (ts->n_samples && !(samples = pbmem_alloc(a, ts->n_samples * sizeof *samples)))
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
	struct pbmem *a = NULL;
	ProtobufCMessage *msg;
	int rc;
	memset(out, 0, sizeof *out);
	rc = pbmem_unpack(body, len, max_decoded, PW_UNPACK_FACTOR, PW_UNPACK_SLACK,
	                  &tsstore__remote__write_request__descriptor, "a remote write WriteRequest",
	                  &msg, &a, &out->decoded_len, err, errsize);
	if (rc == 0 && lay_out(a, (const WriteRequest *)msg, out) < 0) {
		if (a->arena.over)
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
