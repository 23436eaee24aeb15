/*
 * promwrite.h -- Prometheus remote write 1.0 bodies decoded (promwrite.c):
 * the snappy block format undone, then the protobuf WriteRequest of
 * wire/remote.proto unpacked into plain C structs -- series, each with its
 * labels and samples.  Bytes in, series out: no table, socket or event
 * loop, so the daemon, the command, the tests and the benchmarks can all
 * use it.  The mapping of series to tables is the daemon's
 * (daemon/promwrite.c).
 */
#ifndef TSSTORE_WIRE_PROMWRITE_H
#define TSSTORE_WIRE_PROMWRITE_H

#include <stddef.h>
#include <stdint.h>

/* Memory the unpacked message may take, at most, per byte of the decoded
 * body (plus PW_UNPACK_SLACK): the worst a well-formed body can ask (an
 * empty label is 2 bytes on the wire and 96 unpacked, 48 times more;
 * chunks may waste a quarter more) stays under it, so no well-formed body
 * is refused, and no body makes the decoder take more. */
#define PW_UNPACK_FACTOR 128
#define PW_UNPACK_SLACK ((size_t)1 << 20)
/* Room for an error message (pw_decode's err), NUL included. */
#define PW_ERR_MAX 256

/* What pw_decode can fail with. */
enum pw_error {
	PW_ENOTSNAPPY = -1, /* not snappy block format (its length prefix is bad) */
	PW_EDAMAGED = -2,   /* snappy, but the compressed data is damaged */
	PW_ETOOBIG = -3,    /* longer than max_decoded once decoded */
	PW_EPROTO = -4,     /* the decoded bytes are not a WriteRequest */
	PW_EUNPACK = -5,    /* unpacking would take more than the bound above */
	PW_ENOMEM = -6,     /* out of memory */
};

/* A label: name and value, bytes as sent (not NUL-terminated; they may
 * hold any byte, UTF-8 is the caller's check). */
struct pw_label {
	const char *name;
	size_t name_len;
	const char *value;
	size_t value_len;
};

/* A sample: the value and its time in milliseconds since the epoch. */
struct pw_sample {
	double value;
	int64_t timestamp_ms;
};

/* A series: its labels and samples in the order sent. */
struct pw_series {
	const struct pw_label *labels;
	size_t nlabels;
	const struct pw_sample *samples;
	size_t nsamples;
};

/* A decoded WriteRequest.  Everything it points to is owned by it and
 * freed by pw_request_free. */
struct pw_request {
	const struct pw_series *series;
	size_t nseries;
	size_t decoded_len;         /* the body's length once decoded from snappy */
	size_t samples;             /* all series' samples */
	void *mem_;                 /* private: the memory of the above */
};

/*
 * pw_decode -- decode one remote write body.
 * body[0..len): snappy block format, at most max_decoded bytes once
 * decoded, then a WriteRequest.
 * out: filled on success (free it with pw_request_free); on failure it
 * holds nothing to free, but decoded_len is set when the snappy header
 * could be read (PW_ETOOBIG, PW_EDAMAGED, PW_EPROTO, PW_EUNPACK).
 * err: when not NULL, errsize bytes for a message saying what was wrong
 * (set on failure only).
 * Returns 0, or a negative pw_error.
 */
int pw_decode(const void *body, size_t len, size_t max_decoded, struct pw_request *out,
              char *err, size_t errsize);

/* pw_request_free -- release what pw_decode made; r may be zeroed (then
 * nothing happens).  The struct itself is the caller's. */
void pw_request_free(struct pw_request *r);

/* pw_strerror -- a short name for a pw_error ("unknown error" for any
 * other value). */
const char *pw_strerror(int code);

#endif /* TSSTORE_WIRE_PROMWRITE_H */
