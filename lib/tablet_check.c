/*
 * tablet_check.c -- verifying an on-disk tablet file for ts_check
 * (docs/check-and-backup.md): every block read and checked, and what the
 * blocks hold compared with what the footer says of them -- key order
 * across blocks, timespans, row counts, per-block statistics recomputed
 * from the rows, the Bloom filter rebuilt from the keys.
 *
 * It reads through the reader (tablet.c: ts__tablet_read_block,
 * ts__tablet_block_next) and recomputes with the writer's arithmetic
 * (tablet_int.h), so that a tablet the writer made and the reader reads
 * is exactly one the check passes.  Each problem found goes to the
 * caller's verifier, which says whether to go on (ts__tablet_check stops
 * at the first); what the blocks said so far is kept in struct seen for
 * the tablet-wide checks at the end (check_totals).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "crc32c.h"
#include "error.h"
#include "key.h"
#include "tslimits.h"
#include "row.h"
#include "tablet.h"
#include "tablet_format.h"
#include "tablet_int.h"

static int stat_equal(const ts__colstat *a, const ts__colstat *b, int type)
{
	if (a->count != b->count || (type == TS_DOUBLE ? memcmp(&a->dsum, &b->dsum, 8) != 0
	                                                : a->isum != b->isum))
		return 0;
	return !a->count || (value_bits(&a->min) == value_bits(&b->min) &&
	                     value_bits(&a->max) == value_bits(&b->max));
}

/* What the blocks said so far, for the tablet-wide checks at the end.
 * A damaged block contributes what its index entry says. */
struct seen {
	ts_buf prev;          /* the last key so far, across blocks */
	ts_buf first;         /* the tablet's first key */
	int first_seen;       /* block 0 was looked at (first may stay empty
	                       * when it is damaged in a format-1 tablet) */
	uint64_t rows;
	int64_t lo, hi;       /* timespan */
	int stats;            /* whether the footer's statistics columns fit s */
	unsigned char *bloom; /* the Bloom filter of the keys seen */
	int partial;          /* some block could not be read: bloom is partial */
};

/* Add the stem of key to w->bloom unless the previous key (w->prev, not
 * yet replaced) has the same: distinct stems arrive one after the other,
 * as the writer counts them. */
static void seen_stem(const ts__tablet *t, struct seen *w, const unsigned char *key, size_t klen)
{
	if (w->prev.len == klen && memcmp(w->prev.data, key, klen - 8) == 0)
		return;
	bloom_walk bw = bloom_start(stem_hash(key, klen - 8), t->bloom_bits);
	for (unsigned k = 0; k < t->bloom_k; k++) {
		uint32_t bit = bloom_next(&bw);
		w->bloom[bit / 8] |= (unsigned char)(1u << (bit % 8));
	}
}

static void seen_key(struct seen *w, const void *key, size_t klen)
{
	if (!w->first_seen) {
		ts__put(&w->first, key, klen);
		w->first_seen = 1;
	}
	w->prev.len = 0;
	ts__put(&w->prev, key, klen);
}

static void seen_span(struct seen *w, int64_t lo, int64_t hi)
{
	w->lo = lo < w->lo ? lo : w->lo;
	w->hi = hi > w->hi ? hi : w->hi;
}

/* Pass a failure to the verifier; returns non-zero when it must stop
 * (TS_ENOMEM always stops). */
static int report(const ts__tablet_verifier *v, int rc)
{
	return rc == TS_ENOMEM || v->problem(v->arg, rc);
}

/* Whether the footer's statistics columns are columns of s of their type:
 * without that they cannot be recomputed (nor indexed safely). */
static int stats_fit(const ts__tablet *t, const ts__schema *s)
{
	for (uint32_t j = 0; j < t->nstat; j++)
		if (t->stat_cols[j] >= s->ncols || (int)s->cols[t->stat_cols[j]].type != t->stat_types[j])
			return 0;
	return 1;
}

/* Check the rows of block i (in raw) against its index entry.  Rows are
 * decoded with s when it is not NULL.  Returns 0 or the first failure. */
static int check_block(const ts__tablet *t, const ts__schema *s, uint32_t i, const ts_buf *raw,
                       struct seen *w, ts_buf *scratch)
{
	const ts__tablet_block *b = &t->blocks[i];
	ts__colstat st[TS_COLUMNS_MAX], want;
	ts_value vals[TS_COLUMNS_MAX];
	ts_reader r;
	const void *row, *key;
	size_t len, klen;
	uint32_t n = 0;
	int64_t lo = INT64_MAX, hi = INT64_MIN;
	char part[48];
	int rc;
	snprintf(part, sizeof part, "block %u", i);
	for (uint32_t j = 0; j < t->nstat; j++)
		stat_reset(&st[j]);
	ts__reader_init(&r, raw->data, raw->len);
	while ((rc = ts__tablet_block_next(&r, &row, &len)) == 1) {
		if ((rc = ts__row_key(row, len, &key, &klen)) < 0 || klen < 8 ||
		    (w->prev.len && ts__key_cmp(w->prev.data, w->prev.len, key, klen) >= 0))
			return ts__tablet_damaged(t, part, "rows out of key order");
		if (s && (rc = ts__row_decode(s, s, row, len, vals, scratch)) < 0)
			return rc == TS_ECORRUPT ? ts__tablet_damaged(t, part, "a row does not decode") : rc;
		for (uint32_t j = 0; s && w->stats && j < t->nstat; j++)
			stat_add(&st[j], &vals[t->stat_cols[j]]);
		int64_t ts = ts__key_ts(key, klen);
		lo = ts < lo ? ts : lo;
		hi = ts > hi ? ts : hi;
		if (n == 0 && b->first_key &&
		    (klen != b->first_klen || memcmp(key, b->first_key, klen) != 0))
			return ts__tablet_damaged(t, part, "first key differs from the index");
		seen_stem(t, w, key, klen);
		seen_key(w, key, klen);
		n++;
	}
	if (rc < 0)
		return ts__tablet_damaged(t, part, "malformed row");
	if (n != b->rows || lo != b->min_ts || hi != b->max_ts)
		return ts__tablet_damaged(t, part, "rows or timespan differ from the index");
	if (w->prev.len != b->last_klen || memcmp(w->prev.data, b->last_key, w->prev.len) != 0)
		return ts__tablet_damaged(t, part, "last key differs from the index");
	for (uint32_t j = 0; s && w->stats && j < t->nstat; j++) {
		ts__tablet_stat(t, i, j, &want);
		if (!stat_equal(&st[j], &want, t->stat_types[j]))
			return ts__tablet_damaged(t, part, "statistics differ from the index");
	}
	return 0;
}

/* Take block i's index entry for what the block would have said. */
static void seen_index(const ts__tablet *t, uint32_t i, struct seen *w)
{
	const ts__tablet_block *b = &t->blocks[i];
	if (!w->first_seen && b->first_key)
		ts__put(&w->first, b->first_key, b->first_klen);
	w->first_seen = 1;
	w->prev.len = 0;
	ts__put(&w->prev, b->last_key, b->last_klen);
}

/* The tablet-wide checks, once every block was seen. */
static int check_totals(const ts__tablet *t, const struct seen *w, const ts__tablet_verifier *v)
{
	int rc;
	if (w->rows != t->rows &&
	    report(v, rc = ts__tablet_damaged(t, "footer", "row count differs from the blocks")))
		return rc;
	if (w->lo != t->min_ts || w->hi != t->max_ts) {
		if (report(v, rc = ts__tablet_damaged(t, "footer", "timespan differs from the blocks")))
			return rc;
	}
	if (w->first.len && (w->first.len != t->first_klen ||
	                     memcmp(w->first.data, t->first_key, t->first_klen) != 0) &&
	    report(v, rc = ts__tablet_damaged(t, "footer", "first key differs from the blocks")))
		return rc;
	if ((w->prev.len != t->last_klen || memcmp(w->prev.data, t->last_key, w->prev.len) != 0) &&
	    report(v, rc = ts__tablet_damaged(t, "footer", "last key differs from the blocks")))
		return rc;
	if (!w->partial && memcmp(w->bloom, t->bloom, t->bloom_bits / 8) != 0 &&
	    report(v, rc = ts__tablet_damaged(t, "footer", "Bloom filter differs from the keys")))
		return rc;
	return 0;
}

int ts__tablet_verify(const ts__tablet *t, const ts__schema *s, const ts__tablet_verifier *v)
{
	struct seen w = {.lo = INT64_MAX, .hi = INT64_MIN, .stats = 1};
	ts_buf raw, scratch;
	int rc = 0;
	if (s && s->version != t->schema_version)
		return ts__fail(TS_EINVAL, "tablet %s: checked with schema version %u, written with %u",
		                t->path, s->version, t->schema_version);
	ts__buf_init(&raw);
	ts__buf_init(&scratch);
	ts__buf_init(&w.prev);
	ts__buf_init(&w.first);
	if (!(w.bloom = calloc(t->bloom_bits / 8, 1))) {
		rc = ts__fail(TS_ENOMEM, "out of memory");
		goto out;
	}
	if (s && !(w.stats = stats_fit(t, s)) &&
	    report(v, rc = ts__tablet_damaged(t, "footer", "statistics columns do not match the schema")))
		goto out;
	rc = 0;
	for (uint32_t i = 0; i < t->nblocks; i++) {
		const ts__tablet_block *b = &t->blocks[i];
		if ((rc = ts__tablet_read_block(t, i, &raw)) == 0)
			rc = check_block(t, s, i, &raw, &w, &scratch);
		if (v->progress)
			v->progress(v->arg, TS_BLKH_SIZE + (uint64_t)b->stored);
		if (rc < 0 && report(v, rc))
			goto out;
		if (rc < 0) { /* go on as if the block held what its index says */
			seen_index(t, i, &w);
			w.partial = 1;
		}
		w.rows += b->rows;
		seen_span(&w, b->min_ts, b->max_ts);
		rc = 0;
	}
	if (w.prev.oom || w.first.oom)
		rc = ts__fail(TS_ENOMEM, "out of memory");
	else
		rc = check_totals(t, &w, v);
out:
	ts__buf_free(&raw);
	ts__buf_free(&scratch);
	ts__buf_free(&w.prev);
	ts__buf_free(&w.first);
	free(w.bloom);
	return rc;
}

/* ts__tablet_check's verifier: stop at the first problem. */
static int stop_at_first(void *arg, int code)
{
	(void)arg;
	(void)code;
	return 1;
}

int ts__tablet_check(const ts__tablet *t, const ts__schema *s)
{
	ts__tablet_verifier v = {.problem = stop_at_first};
	return ts__tablet_verify(t, s, &v);
}
