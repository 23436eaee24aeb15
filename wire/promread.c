/*
 * promread.c -- Prometheus remote read bodies: a ReadRequest into plain
 * structs, a ReadResponse (type SAMPLES) out of them.
 *
 * Decoding writes nothing of the wire format by hand: pbmem.c
 * snappy-decodes the body and has protobuf-c unpack it, by the code
 * protoc-c generates from wire/remote.proto, into an arena that refuses
 * to grow past PR_UNPACK_FACTOR times the decoded body (plus
 * PR_UNPACK_SLACK), so no body costs more than that.  The queries and
 * matchers of promread.h are then laid out in two arrays that point into
 * the unpacked message, which lives until pr_request_free.
 *
 * Encoding writes nothing by hand either: the response is laid out as
 * protoc-c's message structs (of remote_answer.proto, in proto2 so that a
 * sample of -0.0 is written) (one allocation holds them all: per sample
 * a Sample struct and a pointer, about 48 bytes, where the encoded sample
 * takes 11 to 20), packed by protobuf-c, then snappy-compressed.
 * pr_series_bound bounds a series' encoded size from its labels' lengths
 * and sample count alone, so that a caller can cap a response before it
 * has it; it writes no byte.
 */
#include <assert.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <protobuf-c/protobuf-c.h>
#include <snappy-c.h>

#include "pbmem.h"
#include "promread.h"
#include "remote.pb-c.h"
#include "remote_answer.pb-c.h"

typedef Tsstore__Remote__ReadRequest ReadRequest;

/* ---- Decoding ---- */

/* The unpacked request's memory: the message in its arena (pbmem.h),
 * and the arrays of promread.h. */
struct mem {
	struct pbmem *pb;
	ReadRequest *rr;
	struct pr_query *queries;
	struct pr_matcher *matchers;
};

static void mem_release(struct mem *m)
{
	if (!m)
		return;
	pbmem_free(m->pb);
	free(m->queries);
	free(m->matchers);
	free(m);
}

/* Whether the client takes SAMPLES: it named no type, or that one. */
static int takes_samples(const ReadRequest *rr)
{
	if (rr->n_accepted_response_types == 0)
		return 1;
	for (size_t i = 0; i < rr->n_accepted_response_types; i++)
		if (rr->accepted_response_types[i] == TSSTORE__REMOTE__READ_REQUEST__RESPONSE_TYPE__SAMPLES)
			return 1;
	return 0;
}

/* Lay rr out as r's arrays.  Returns 0, PR_ENOMEM or PR_EMATCHER (with
 * the message). */
static int lay_out(struct mem *m, struct pr_request *r, char *err, size_t errsize)
{
	const ReadRequest *rr = m->rr;
	size_t nm = 0, k = 0;
	for (size_t i = 0; i < rr->n_queries; i++)
		nm += rr->queries[i]->n_matchers;
	if ((rr->n_queries && !(m->queries = calloc(rr->n_queries, sizeof *m->queries))) ||
	    (nm && !(m->matchers = calloc(nm, sizeof *m->matchers))))
		return pbmem_fail(err, errsize, PR_ENOMEM, "out of memory for the queries");
	for (size_t i = 0; i < rr->n_queries; i++) {
		const Tsstore__Remote__Query *q = rr->queries[i];
		/* no matcher in the request: matchers is NULL, and NULL + 0 is
		 * undefined (fuzz_promread found it) */
		m->queries[i] = (struct pr_query){q->start_timestamp_ms, q->end_timestamp_ms,
		                                  m->matchers ? m->matchers + k : NULL, q->n_matchers};
		for (size_t j = 0; j < q->n_matchers; j++, k++) {
			const Tsstore__Remote__LabelMatcher *lm = q->matchers[j];
			if ((int)lm->type < PR_EQ || (int)lm->type > PR_NRE)
				return pbmem_fail(err, errsize, PR_EMATCHER, "query %zu: matcher %zu has type %d, "
				                  "not one of EQ (0), NEQ (1), RE (2), NRE (3)", i + 1, j + 1,
				                  (int)lm->type);
			m->matchers[k] = (struct pr_matcher){
				(enum pr_match)lm->type, (const char *)lm->name.data, lm->name.len,
				(const char *)lm->value.data, lm->value.len};
		}
	}
	r->queries = m->queries;
	r->nqueries = rr->n_queries;
	return 0;
}

int pr_decode(const void *body, size_t len, size_t max_decoded, struct pr_request *out,
              char *err, size_t errsize)
{
	struct mem *m = NULL;
	ProtobufCMessage *msg = NULL;
	struct pbmem *pb = NULL;
	int rc = 0;
	memset(out, 0, sizeof *out);
	if ((rc = pbmem_unpack(body, len, max_decoded, PR_UNPACK_FACTOR, PR_UNPACK_SLACK,
	                       &tsstore__remote__read_request__descriptor,
	                       "a remote read ReadRequest", &msg, &pb, &out->decoded_len, err,
	                       errsize)) < 0)
		goto out;
	if (!(m = calloc(1, sizeof *m))) {
		pbmem_free(pb);
		rc = pbmem_fail(err, errsize, PR_ENOMEM, "out of memory for the decoded body");
		goto out;
	}
	m->pb = pb;
	m->rr = (ReadRequest *)msg;
	if (!takes_samples(m->rr)) {
		rc = pbmem_fail(err, errsize, PR_ETYPES, "the request accepts none of the response types "
		                "served (SAMPLES)");
		goto out;
	}
	if ((rc = lay_out(m, out, err, errsize)) < 0)
		goto out;
	out->mem_ = m;
	m = NULL;
out:
	/* on failure out holds decoded_len alone: lay_out sets the queries
	 * last, once nothing can fail */
	mem_release(m);
	return rc;
}

void pr_request_free(struct pr_request *r)
{
	mem_release(r->mem_);
	memset(r, 0, sizeof *r);
}

/* ---- Encoding ---- */

/* The most a length-delimited field of n bytes takes, tag and length
 * included (a tag of one byte: field numbers below 16). */
static size_t field_bound(size_t n)
{
	return 1 + 10 + n;
}

size_t pr_series_bound(const struct pr_series *s)
{
	size_t n = 0;
	for (size_t i = 0; i < s->nlabels; i++)
		n += field_bound(field_bound(s->labels[i].name_len) + field_bound(s->labels[i].value_len));
	/* a Sample: a double (tag and 8 bytes), an int64 (tag and at most 10) */
	n += s->nsamples * field_bound(1 + 8 + 1 + 10);
	return field_bound(n);
}

/* The answer's messages (remote_answer.proto: proto2, so that a -0.0 is
 * written). */
typedef Tsstore__Remote__Answer__ReadResponse ReadResponse;
typedef Tsstore__Remote__Answer__QueryResult QueryResult;
typedef Tsstore__Remote__Answer__TimeSeries TimeSeries;
typedef Tsstore__Remote__Answer__Label Label;
typedef Tsstore__Remote__Answer__Sample Sample;

/* Bump allocation out of one block sized beforehand. */
struct block {
	char *p;
	size_t used, cap;
};

/* n rounded up to what any struct may need as its alignment. */
static size_t rounded(size_t n)
{
	return (n + _Alignof(max_align_t) - 1) / _Alignof(max_align_t) * _Alignof(max_align_t);
}

static void *take(struct block *b, size_t n)
{
	void *q = b->p + b->used;
	b->used += rounded(n);
	assert(b->used <= b->cap);
	return q;
}

/* The bytes the structs of results[0..n) take in a block; 0 when the
 * count overflows. */
static size_t structs_size(const struct pr_result *results, size_t n)
{
	size_t total = rounded(n * sizeof(QueryResult)) + rounded(n * sizeof(QueryResult *));
	for (size_t i = 0; i < n; i++) {
		const struct pr_result *r = &results[i];
		total += rounded(r->nseries * sizeof(TimeSeries)) + rounded(r->nseries * sizeof(TimeSeries *));
		for (size_t k = 0; k < r->nseries; k++) {
			const struct pr_series *s = &r->series[k];
			if (s->nsamples > SIZE_MAX / 64 || s->nlabels > SIZE_MAX / 64)
				return 0;
			total += rounded(s->nlabels * sizeof(Label)) + rounded(s->nlabels * sizeof(Label *)) +
			         rounded(s->nsamples * sizeof(Sample)) + rounded(s->nsamples * sizeof(Sample *));
		}
	}
	return total;
}

/* Lay series s out in the block as a TimeSeries (its bytes pointing into
 * s's, which outlive the packing). */
static void lay_series(struct block *b, const struct pr_series *s, TimeSeries *ts)
{
	Label *labels = take(b, s->nlabels * sizeof *labels);
	Label **lp = take(b, s->nlabels * sizeof *lp);
	Sample *samples = take(b, s->nsamples * sizeof *samples);
	Sample **sp = take(b, s->nsamples * sizeof *sp);
	tsstore__remote__answer__time_series__init(ts);
	for (size_t i = 0; i < s->nlabels; i++) {
		tsstore__remote__answer__label__init(&labels[i]);
		labels[i].has_name = labels[i].has_value = 1;
		labels[i].name.data = (uint8_t *)s->labels[i].name;
		labels[i].name.len = s->labels[i].name_len;
		labels[i].value.data = (uint8_t *)s->labels[i].value;
		labels[i].value.len = s->labels[i].value_len;
		lp[i] = &labels[i];
	}
	for (size_t i = 0; i < s->nsamples; i++) {
		tsstore__remote__answer__sample__init(&samples[i]);
		samples[i].has_value = 1; /* -0.0 too */
		samples[i].value = s->samples[i].value;
		samples[i].has_timestamp = s->samples[i].timestamp_ms != 0;
		samples[i].timestamp = s->samples[i].timestamp_ms;
		sp[i] = &samples[i];
	}
	ts->labels = lp;
	ts->n_labels = s->nlabels;
	ts->samples = sp;
	ts->n_samples = s->nsamples;
}

int pr_encode(const struct pr_result *results, size_t n, char **out, size_t *len)
{
	ReadResponse resp = TSSTORE__REMOTE__ANSWER__READ_RESPONSE__INIT;
	size_t need = structs_size(results, n), size, clen;
	struct block b = {NULL, 0, need};
	uint8_t *msg = NULL;
	char *z = NULL;
	*out = NULL;
	*len = 0;
	if ((need == 0 && n) || !(b.p = malloc(need ? need : 1)))
		return PR_ENOMEM;
	QueryResult *qr = take(&b, n * sizeof *qr);
	QueryResult **qp = take(&b, n * sizeof *qp);
	for (size_t i = 0; i < n; i++) {
		TimeSeries *ts = take(&b, results[i].nseries * sizeof *ts);
		TimeSeries **tp = take(&b, results[i].nseries * sizeof *tp);
		tsstore__remote__answer__query_result__init(&qr[i]);
		for (size_t k = 0; k < results[i].nseries; k++) {
			lay_series(&b, &results[i].series[k], &ts[k]);
			tp[k] = &ts[k];
		}
		qr[i].timeseries = tp;
		qr[i].n_timeseries = results[i].nseries;
		qp[i] = &qr[i];
	}
	resp.results = qp;
	resp.n_results = n;
	size = tsstore__remote__answer__read_response__get_packed_size(&resp);
	if (!(msg = malloc(size ? size : 1))) {
		free(b.p);
		return PR_ENOMEM;
	}
	tsstore__remote__answer__read_response__pack(&resp, msg);
	free(b.p);
	clen = snappy_max_compressed_length(size);
	if (!(z = malloc(clen)) || snappy_compress((const char *)msg, size, z, &clen) != SNAPPY_OK) {
		free(z);
		free(msg);
		return PR_ENOMEM;
	}
	free(msg);
	*out = z;
	*len = clen;
	return 0;
}

/* ---- Regular expressions ---- */

/* A growing string. */
struct text {
	char *p;
	size_t n, cap;
	int oom;
};

static void emit(struct text *t, const char *s, size_t n)
{
	if (t->oom)
		return;
	if (t->n + n + 1 > t->cap) {
		size_t cap = (t->n + n + 1) * 2;
		char *p = realloc(t->p, cap);
		if (!p) {
			t->oom = 1;
			return;
		}
		t->p = p;
		t->cap = cap;
	}
	memcpy(t->p + t->n, s, n);
	t->n += n;
	t->p[t->n] = '\0';
}

static void emits(struct text *t, const char *s)
{
	emit(t, s, strlen(s));
}

static int is_punct(char c)
{
	return (c >= '!' && c <= '/') || (c >= ':' && c <= '@') || (c >= '[' && c <= '`') ||
	       (c >= '{' && c <= '~');
}

/* The character of a control escape (\n \t \r \f \v), or 0. */
static char control(char d)
{
	switch (d) {
	case 'n': return '\n';
	case 't': return '\t';
	case 'r': return '\r';
	case 'f': return '\f';
	case 'v': return '\v';
	}
	return 0;
}

/* The members of a Perl class inside [...] (\d \w \s), or NULL. */
static const char *class_members(char d)
{
	switch (d) {
	case 'd': return "0-9";
	case 'w': return "0-9A-Za-z_";
	case 's': return "\t\n\f\r ";
	}
	return NULL;
}

/* The bracket expression of a Perl class (\d \D \w \W \s \S), or
 * NULL. */
static const char *class_bracket(char d)
{
	switch (d) {
	case 'd': return "[0-9]";
	case 'D': return "[^0-9]";
	case 'w': return "[0-9A-Za-z_]";
	case 'W': return "[^0-9A-Za-z_]";
	case 's': return "[\t\n\f\r ]";
	case 'S': return "[^\t\n\f\r ]";
	}
	return NULL;
}

/* The length of a repetition {n}, {n,}, {n,m} at re[i..n), or 0. */
static size_t repetition(const char *re, size_t n, size_t i)
{
	size_t j = i + 1, digits = 0;
	while (j < n && re[j] >= '0' && re[j] <= '9')
		j++, digits++;
	if (!digits)
		return 0;
	if (j < n && re[j] == ',') {
		j++;
		while (j < n && re[j] >= '0' && re[j] <= '9')
			j++;
	}
	return j < n && re[j] == '}' ? j + 1 - i : 0;
}

/* Translate the bracket expression at re[*i] ('[') onto t.  Returns 0,
 * or PR_EREGEX with the message. */
static int bracket(const char *re, size_t n, size_t *i, struct text *t, char *err, size_t errsize)
{
	size_t k = *i + 1;
	emits(t, "[");
	if (k < n && re[k] == '^')
		emits(t, "^"), k++;
	if (k < n && re[k] == ']') /* a ] first is a member, in both */
		emits(t, "]"), k++;
	while (k < n && re[k] != ']') {
		char c = re[k];
		if (c == '[' && k + 1 < n && re[k + 1] == ':') { /* [:alpha:], in both */
			const char *end = NULL;
			for (size_t j = k + 2; j + 1 < n && !end; j++)
				if (re[j] == ':' && re[j + 1] == ']')
					end = re + j + 2;
			if (!end)
				return pbmem_fail(err, errsize, PR_EREGEX, "a [: without its :]");
			emit(t, re + k, (size_t)(end - (re + k)));
			k = (size_t)(end - re);
			continue;
		}
		if (c == '[' && k + 1 < n && (re[k + 1] == '.' || re[k + 1] == '='))
			return pbmem_fail(err, errsize, PR_EREGEX, "[.x.] and [=x=] inside [...] are not RE2");
		if (c != '\\') {
			emit(t, &c, 1);
			k++;
			continue;
		}
		if (k + 1 == n)
			return pbmem_fail(err, errsize, PR_EREGEX, "a \\ at the end");
		char d = re[k + 1], ctl = control(d);
		k += 2;
		if (class_members(d))
			emits(t, class_members(d));
		else if (ctl)
			emit(t, &ctl, 1);
		else if (d == '\\') /* a backslash is itself inside POSIX's [...] */
			emits(t, "\\");
		else if (is_punct(d) && d != ']' && d != '^' && d != '-' && d != '[')
			emit(t, &d, 1);
		else
			return pbmem_fail(err, errsize, PR_EREGEX, "\\%c inside [...] is not taken", d);
	}
	if (k == n)
		return pbmem_fail(err, errsize, PR_EREGEX, "a [ without its ]");
	emits(t, "]");
	*i = k + 1;
	return 0;
}

/* Translate the escape at re[*i] ('\\') onto t.  Returns 0, or
 * PR_EREGEX with the message. */
static int escape(const char *re, size_t n, size_t *i, struct text *t, char *err, size_t errsize)
{
	char d, ctl;
	if (*i + 1 == n)
		return pbmem_fail(err, errsize, PR_EREGEX, "a \\ at the end");
	d = re[*i + 1];
	ctl = control(d);
	*i += 2;
	if (class_bracket(d))
		emits(t, class_bracket(d));
	else if (ctl)
		emit(t, &ctl, 1);
	else if (d && strchr(".[]()*+?{}|^$\\", d)) { /* special in POSIX: escaped there too */
		char esc[2] = {'\\', d};
		emit(t, esc, 2);
	} else if (is_punct(d))
		emit(t, &d, 1);
	else
		return pbmem_fail(err, errsize, PR_EREGEX, "\\%c is not taken (RE2 has it, POSIX "
		                  "regular expressions have not)", d);
	return 0;
}

int pr_regex_posix(const char *re, size_t n, char **out, char *err, size_t errsize)
{
	struct text t = {0};
	size_t i = 0, rep;
	int rc = 0;
	*out = NULL;
	/* anywhere, brackets too: regcomp would end the pattern there
	 * (fuzz_promread found one inside [...]) */
	if (n && memchr(re, '\0', n))
		return pbmem_fail(err, errsize, PR_EREGEX, "a NUL byte");
	emits(&t, "^(");
	while (i < n && rc == 0) {
		char c = re[i];
		if (c == '\\')
			rc = escape(re, n, &i, &t, err, errsize);
		else if (c == '[')
			rc = bracket(re, n, &i, &t, err, errsize);
		else if (c == '(' && i + 1 < n && re[i + 1] == '?') {
			if (i + 2 < n && re[i + 2] == ':') {
				emits(&t, "(");
				i += 3;
			} else
				rc = pbmem_fail(err, errsize, PR_EREGEX, "(?...) flags and named groups are not "
				                "taken");
		} else if (c == '.') {
			emits(&t, "[^\n]");
			i++;
		} else if (c == '{') {
			if ((rep = repetition(re, n, i))) {
				emit(&t, re + i, rep);
				i += rep;
			} else {
				emits(&t, "\\{"); /* RE2: a { that begins no repetition is itself */
				i++;
			}
		} else if (c == '}') {
			emits(&t, "\\}");
			i++;
		} else {
			emit(&t, &c, 1);
			i++;
		}
	}
	emits(&t, ")$");
	if (rc == 0 && t.oom)
		rc = pbmem_fail(err, errsize, PR_ENOMEM, "out of memory");
	if (rc < 0)
		free(t.p);
	else
		*out = t.p;
	return rc;
}

const char *pr_strerror(int code)
{
	switch (code) {
	case 0: return "ok";
	case PR_ENOTSNAPPY: return "not snappy";
	case PR_EDAMAGED: return "damaged snappy";
	case PR_ETOOBIG: return "too big once decoded";
	case PR_EPROTO: return "not a ReadRequest";
	case PR_EUNPACK: return "too big once unpacked";
	case PR_ENOMEM: return "out of memory";
	case PR_EMATCHER: return "unknown matcher type";
	case PR_ETYPES: return "no response type served";
	case PR_EREGEX: return "regular expression not taken";
	}
	return "unknown error";
}
