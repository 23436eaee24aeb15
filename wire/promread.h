/*
 * promread.h -- Prometheus remote read bodies (promread.c): a
 * snappy-compressed ReadRequest of wire/remote.proto decoded into plain C
 * structs -- queries, each a time range and label matchers -- and the
 * answer of type SAMPLES, a ReadResponse of series with their labels and
 * samples, encoded from plain structs and snappy-compressed.  Bytes in,
 * bytes out: no table, socket or event loop.  What a query selects is
 * the daemon's (daemon/promread.c).
 */
#ifndef TSSTORE_WIRE_PROMREAD_H
#define TSSTORE_WIRE_PROMREAD_H

#include <stddef.h>
#include <stdint.h>

/* Memory the unpacked request may take, at most, per byte of the decoded
 * body (plus PR_UNPACK_SLACK): an empty matcher is 2 bytes on the wire
 * and about 100 unpacked, as promwrite.h's labels. */
#define PR_UNPACK_FACTOR 128
#define PR_UNPACK_SLACK ((size_t)1 << 20)
/* Room for an error message (pr_decode's err), NUL included. */
#define PR_ERR_MAX 256

/* What pr_decode and pr_encode can fail with. */
enum pr_error {
	PR_ENOTSNAPPY = -1, /* not snappy block format (its length prefix is bad) */
	PR_EDAMAGED = -2,   /* snappy, but the compressed data is damaged */
	PR_ETOOBIG = -3,    /* longer than max_decoded once decoded */
	PR_EPROTO = -4,     /* the decoded bytes are not a ReadRequest */
	PR_EUNPACK = -5,    /* unpacking would take more than the bound above */
	PR_ENOMEM = -6,     /* out of memory */
	PR_EMATCHER = -7,   /* a matcher of a type other than =, !=, =~, !~ */
	PR_ETYPES = -8,     /* the client takes no response type of ours (SAMPLES) */
	PR_EREGEX = -9,     /* a regular expression pr_regex_posix cannot translate */
};

/* A matcher's type: the values of LabelMatcher.Type. */
enum pr_match {
	PR_EQ = 0,  /* =  */
	PR_NEQ = 1, /* != */
	PR_RE = 2,  /* =~ */
	PR_NRE = 3, /* !~ */
};

/* One matcher: its type, the label's name and the value (bytes as sent,
 * not NUL-terminated). */
struct pr_matcher {
	enum pr_match type;
	const char *name;
	size_t name_len;
	const char *value;
	size_t value_len;
};

/* One query: the samples with start_ms <= timestamp <= end_ms of the
 * series every matcher matches. */
struct pr_query {
	int64_t start_ms, end_ms;
	const struct pr_matcher *matchers;
	size_t nmatchers;
};

/* A decoded ReadRequest; everything it points to is owned by it and
 * freed by pr_request_free. */
struct pr_request {
	const struct pr_query *queries;
	size_t nqueries;
	size_t decoded_len;         /* the body's length once decoded from snappy */
	void *mem_;                 /* private: the memory of the above */
};

/*
 * pr_decode -- decode one remote read body.
 * body[0..len): snappy block format, at most max_decoded bytes once
 * decoded, then a ReadRequest.  Its accepted_response_types must be empty
 * or hold SAMPLES (PR_ETYPES otherwise); every matcher's type must be one
 * of enum pr_match (PR_EMATCHER).
 * out: filled on success (free it with pr_request_free); on failure it
 * holds nothing to free, but decoded_len is set when the snappy header
 * could be read.
 * err: when not NULL, errsize bytes for a message saying what was wrong
 * (set on failure only).
 * Returns 0, or a negative pr_error.
 */
int pr_decode(const void *body, size_t len, size_t max_decoded, struct pr_request *out,
              char *err, size_t errsize);

/* pr_request_free -- release what pr_decode made; r may be zeroed (then
 * nothing happens).  The struct itself is the caller's. */
void pr_request_free(struct pr_request *r);

/* ---- The response (type SAMPLES) ---- */

/* A label of a series in the response (name and value: valid UTF-8, not
 * NUL-terminated). */
struct pr_label {
	const char *name;
	size_t name_len;
	const char *value;
	size_t value_len;
};

/* A sample: its time in milliseconds since the epoch, and the value. */
struct pr_sample {
	int64_t timestamp_ms;
	double value;
};

/* A series: its labels (sorted by name, __name__ among them, as
 * Prometheus keeps them) and its samples, oldest first. */
struct pr_series {
	const struct pr_label *labels;
	size_t nlabels;
	const struct pr_sample *samples;
	size_t nsamples;
};

/* The series of one query. */
struct pr_result {
	const struct pr_series *series;
	size_t nseries;
};

/* pr_series_bound -- at most the bytes series s takes in the
 * ReadResponse, its field's tag and length included, from its labels'
 * lengths and its sample count: what a caller adds up to cap a response
 * before it has it encoded (a response is at most the sum of its series'
 * plus 11 bytes per result). */
size_t pr_series_bound(const struct pr_series *s);

/*
 * pr_encode -- the body of a SAMPLES answer: the ReadResponse of
 * results[0..n) (one QueryResult per query, in order), snappy-compressed.
 * *out: receives it (malloc'ed; the caller frees it), *len its length.
 * The response is laid out as protobuf-c's message structs (about 48
 * bytes a sample), packed whole, then compressed: the call takes about
 * that plus twice the packed size at its peak.
 * Returns 0, or PR_ENOMEM (*out NULL).
 */
int pr_encode(const struct pr_result *results, size_t n, char **out, size_t *len);

/* ---- Regular expressions ---- */

/*
 * pr_regex_posix -- the POSIX extended regular expression (regcomp(3)
 * with REG_EXTENDED, under a UTF-8 LC_CTYPE) that matches a whole value
 * exactly when the RE2 expression re[0..n) of a Prometheus matcher
 * matches it whole, as Prometheus anchors it (^(?:re)$).  What the two
 * dialects share is copied; RE2's \d \D \w \W \s \S (outside and, but
 * for the negated ones, inside [...]) become bracket expressions, \n \t
 * \r \f \v the character, an escaped punctuation character that
 * character (escaped again where POSIX needs it), (?:...) a group, . a
 * character other than newline ([^\n], as RE2's . without the s flag),
 * and { that begins no repetition a literal {.  Anything else RE2 has
 * and POSIX has not -- flags (?i), named groups, \b \A \z \pL \x41
 * \Q...\E, collating elements [.a.] [=a=], an escaped ] ^ - [ inside
 * [...] -- is refused, never translated to something that matches
 * otherwise.  Non-greedy operators are copied: a whole-value match does
 * not depend on them.
 * out: receives the pattern, NUL-terminated, "^(" ... ")$" around it
 * (malloc'ed; the caller frees it).
 * Returns 0, PR_EREGEX (err says what, when not NULL) or PR_ENOMEM.
 */
int pr_regex_posix(const char *re, size_t n, char **out, char *err, size_t errsize);

/* pr_strerror -- a short name for a pr_error ("unknown error" for any
 * other value). */
const char *pr_strerror(int code);

#endif /* TSSTORE_WIRE_PROMREAD_H */
