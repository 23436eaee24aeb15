/*
 * test_descriptor.c -- the DESCRIPTOR file: encode/decode round trips,
 * rejection of every damaged form (flipped bytes, truncations, appended
 * garbage, bodies that are well checksummed but malformed, schema versions
 * that could not follow each other), future format versions, the size
 * limit on encoding, and the atomicity of its replacement: a crash between
 * staging DESCRIPTOR.tmp and renaming it leaves the old descriptor, both
 * below the API and through ts_open / ts_table_open.
 *
 * Every test runs in its own mkdtemp directory (the cmocka state), removed
 * by the teardown.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "crc32c.h"
#include "descriptor.h"
#include "descriptor_format.h"
#include "error.h"
#include "fsutil.h"
#include "tslimits.h"
#include "support.h"

#define NONE {TS_NONE, {0}}

/* A string default with a NUL byte inside, and a blob default. */
static const char NUL_DEFAULT[] = {'a', '\0', 'b', 'c'};
static const unsigned char BLOB_DEFAULT[] = {0x00, 0xff, 0x80, 0x01};
#define T0 INT64_C(1795255200000000000) /* 2026-11-21T10:00:00Z */

/* ---- fixtures ---- */

static int setup_dir(void **state)
{
	*state = ts_test_tmpdir();
	return 0;
}

static int teardown_dir(void **state)
{
	char *dir = *state;
	struct stat st;
	ts_test_rmdir(strdup(dir));
	assert_int_equal(stat(dir, &st), -1);
	free(dir);
	return 0;
}

/* Write p[0..n) to dir/name (plain, not atomic: a test's own damage). */
static void write_file(const char *dir, const char *name, const void *p, size_t n)
{
	char *path = ts_test_path(dir, name);
	FILE *f = fopen(path, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(p, 1, n, f), n);
	assert_int_equal(fclose(f), 0);
	free(path);
}

static void read_whole(const char *dir, const char *name, ts_buf *b)
{
	char *path = ts_test_path(dir, name);
	void *data;
	size_t n;
	assert_int_equal(ts__read_file(path, 1u << 20, &data, &n), 0);
	ts__buf_init(b);
	ts__put(b, data, n);
	assert_false(b->oom);
	free(data);
	free(path);
}

/*
 * Version 1: host string (key), ts, n int32 = -7, note string = "a\0bc",
 * ratio double = 0.25, raw blob = 00 ff 80 01, at timestamp = T0.
 * Version 2 appends big int64 = -1; version 3 widens n to int64.
 */
static ts__descriptor *sample_descriptor(void)
{
	ts_column cols[] = {
		{"host", TS_STRING, NONE},
		{"ts", TS_TIMESTAMP, NONE},
		{"n", TS_INT32, ts_int32(-7)},
		{"note", TS_STRING, ts_stringn(NUL_DEFAULT, sizeof NUL_DEFAULT)},
		{"ratio", TS_DOUBLE, ts_double(0.25)},
		{"raw", TS_BLOB, ts_blob(BLOB_DEFAULT, sizeof BLOB_DEFAULT)},
		{"at", TS_TIMESTAMP, ts_timestamp(T0)},
	};
	const char *key[] = {"host", "ts"};
	ts_column big = {"big", TS_INT64, ts_int64(-1)};
	ts__descriptor *d = calloc(1, sizeof *d);
	assert_non_null(d);
	d->schemas = calloc(3, sizeof *d->schemas);
	d->tablets = calloc(2, sizeof *d->tablets);
	assert_non_null(d->schemas);
	assert_non_null(d->tablets);
	assert_int_equal(ts__schema_build(cols, 7, key, 2, &d->schemas[0]), 0);
	assert_int_equal(ts__schema_add(d->schemas[0], &big, &d->schemas[1]), 0);
	assert_int_equal(ts__schema_widen(d->schemas[1], "n", &d->schemas[2]), 0);
	d->nschemas = 3;
	d->generation = 7;
	d->ttl = 3 * 24 * INT64_C(3600000000000);
	d->flushed_lsn = UINT64_C(0x123456789abc);
	d->next_tablet_id = 3;
	d->tablets[0] = (ts__tablet_meta){.id = 1, .schema_version = 1,
		.period_start = -4 * INT64_C(3600000000000), .period_end = 0,
		.min_ts = -5, .max_ts = -1, .rows = 10, .bytes = 4096};
	d->tablets[1] = (ts__tablet_meta){.id = 2, .schema_version = 3,
		.period_start = T0, .period_end = INT64_MAX,
		.min_ts = T0 + 1, .max_ts = INT64_MAX - 1, .rows = UINT64_MAX, .bytes = 1,
		.source = UINT64_C(0x1234560)};
	d->ntablets = 2;
	return d;
}

static void encode(const ts__descriptor *d, ts_buf *b)
{
	ts__buf_init(b);
	assert_int_equal(ts__descriptor_encode(d, b), 0);
}

static void assert_value_equal(const ts_value *a, const ts_value *b)
{
	assert_int_equal(a->type, b->type);
	if (ts__type_is_var(a->type)) {
		assert_int_equal(a->v.s.len, b->v.s.len);
		assert_memory_equal(a->v.s.ptr, b->v.s.ptr, a->v.s.len);
	} else {
		assert_int_equal(a->v.i, b->v.i); /* doubles: their bits */
	}
}

static void assert_schema_equal(const ts__schema *a, const ts__schema *b)
{
	assert_int_equal(a->version, b->version);
	assert_int_equal(a->ncols, b->ncols);
	for (int i = 0; i < a->ncols; i++) {
		assert_string_equal(a->cols[i].name, b->cols[i].name);
		assert_int_equal(a->cols[i].type, b->cols[i].type);
		assert_value_equal(&a->cols[i].dflt, &b->cols[i].dflt);
		assert_int_equal(a->cols[i].key_pos, b->cols[i].key_pos);
		assert_int_equal(a->cols[i].fixed_off, b->cols[i].fixed_off);
		assert_int_equal(a->cols[i].var_idx, b->cols[i].var_idx);
	}
	assert_int_equal(a->nkey, b->nkey);
	for (int k = 0; k < a->nkey; k++)
		assert_int_equal(a->key[k], b->key[k]);
	assert_int_equal(a->ts_col, b->ts_col);
	assert_int_equal(a->fixed_size, b->fixed_size);
	assert_int_equal(a->nvar, b->nvar);
	for (int k = 0; k < a->nvar; k++)
		assert_int_equal(a->var_cols[k], b->var_cols[k]);
}

static void assert_descriptor_equal(const ts__descriptor *a, const ts__descriptor *b)
{
	assert_int_equal(a->generation, b->generation);
	assert_int_equal(a->ttl, b->ttl);
	assert_int_equal(a->flushed_lsn, b->flushed_lsn);
	assert_int_equal(a->next_tablet_id, b->next_tablet_id);
	assert_int_equal(a->nschemas, b->nschemas);
	for (int i = 0; i < a->nschemas; i++)
		assert_schema_equal(a->schemas[i], b->schemas[i]);
	assert_int_equal(a->ntablets, b->ntablets);
	for (int i = 0; i < a->ntablets; i++) {
		const ts__tablet_meta *x = &a->tablets[i], *y = &b->tablets[i];
		assert_int_equal(x->id, y->id);
		assert_int_equal(x->schema_version, y->schema_version);
		assert_int_equal(x->period_start, y->period_start);
		assert_int_equal(x->period_end, y->period_end);
		assert_int_equal(x->min_ts, y->min_ts);
		assert_int_equal(x->max_ts, y->max_ts);
		assert_int_equal(x->rows, y->rows);
		assert_int_equal(x->bytes, y->bytes);
		assert_int_equal(x->source, y->source);
		assert_int_equal(x->lo, y->lo);
		assert_int_equal(x->hi, y->hi);
	}
	assert_int_equal(a->ch_horizon, b->ch_horizon);
	assert_int_equal(a->nchrecs, b->nchrecs);
	for (int i = 0; i < a->nchrecs; i++) {
		const ts__tomb *x = &a->chrecs[i], *y = &b->chrecs[i];
		assert_int_equal(x->version, y->version);
		assert_int_equal(x->tmin, y->tmin);
		assert_int_equal(x->tmax, y->tmax);
		assert_int_equal(x->flags, y->flags);
		assert_int_equal(x->lolen, y->lolen);
		assert_int_equal(x->hilen, y->hilen);
		if (x->lolen)
			assert_memory_equal(x->lo, y->lo, x->lolen);
		if (x->hilen)
			assert_memory_equal(x->hi, y->hi, x->hilen);
	}
}

/* Decode p[0..n), expecting failure with code (or either of ECORRUPT /
 * EVERSION when code is 0), a NULL result and a non-empty message. */
static void expect_rejected(const void *p, size_t n, int code, const char *msg_part)
{
	ts__descriptor *out = (ts__descriptor *)&out; /* must be reset to NULL */
	ts__clear_error();
	int rc = ts__descriptor_decode(p, n, &out);
	if (code)
		assert_int_equal(rc, code);
	else if (rc != TS_ECORRUPT && rc != TS_EVERSION)
		fail_msg("decode of %zu bytes: %d (%s), want ECORRUPT or EVERSION", n, rc,
		         ts_errname(rc));
	assert_null(out);
	assert_true(strlen(ts_errmsg(NULL)) > 0);
	if (msg_part && !strstr(ts_errmsg(NULL), msg_part))
		fail_msg("message \"%s\" lacks \"%s\"", ts_errmsg(NULL), msg_part);
}

/* ---- the format, rebuilt by hand ---- */

/* The body as the format describes it; tablet records are resized by
 * tablet_delta bytes (negative: cut short; positive: zeros appended, as a
 * later version's extra fields would be). */
static void encode_body(const ts__descriptor *d, long tablet_delta, ts_buf *b)
{
	ts__buf_init(b);
	ts__put_u64(b, d->generation);
	ts__put_u64(b, (uint64_t)d->ttl);
	ts__put_u64(b, d->flushed_lsn);
	ts__put_u64(b, d->next_tablet_id);
	ts__put_u32(b, (uint32_t)d->nschemas);
	for (int i = 0; i < d->nschemas; i++)
		ts__schema_encode(d->schemas[i], b);
	ts__put_u32(b, (uint32_t)d->ntablets);
	for (int i = 0; i < d->ntablets; i++) {
		const ts__tablet_meta *t = &d->tablets[i];
		ts_buf rec;
		ts__buf_init(&rec);
		ts__put_u64(&rec, t->id);
		ts__put_u32(&rec, t->schema_version);
		ts__put_u64(&rec, (uint64_t)t->period_start);
		ts__put_u64(&rec, (uint64_t)t->period_end);
		ts__put_u64(&rec, (uint64_t)t->min_ts);
		ts__put_u64(&rec, (uint64_t)t->max_ts);
		ts__put_u64(&rec, t->rows);
		ts__put_u64(&rec, t->bytes);
		ts__put_u64(&rec, t->source);
		for (long k = 0; k < tablet_delta; k++)
			ts__put_u8(&rec, 0);
		size_t len = tablet_delta < 0 ? rec.len - (size_t)-tablet_delta : rec.len;
		ts__put_bytes(b, rec.data, len);
		ts__buf_free(&rec);
	}
	assert_false(b->oom);
}

/* Header (magic, version, length, body CRC, header CRC) + body. */
static void seal(const ts_buf *body, uint32_t version, ts_buf *out)
{
	unsigned char h[TS_DESC_HEADER_SIZE];
	memcpy(h + TS_DESC_OFF_MAGIC, TS_DESC_MAGIC, TS_DESC_MAGIC_SIZE);
	ts__store_u32(h + TS_DESC_OFF_VERSION, version);
	ts__store_u32(h + TS_DESC_OFF_BODY_LEN, (uint32_t)body->len);
	ts__store_u32(h + TS_DESC_OFF_BODY_CRC, ts__crc32c(0, body->data, body->len));
	ts__store_u32(h + TS_DESC_OFF_HEADER_CRC, ts__crc32c(0, h, TS_DESC_OFF_HEADER_CRC));
	ts__buf_init(out);
	ts__put(out, h, sizeof h);
	ts__put(out, body->data, body->len);
	assert_false(out->oom);
}

/* ---- tests ---- */

static void descriptor_roundtrip(void **state)
{
	(void)state;
	ts__descriptor *d = sample_descriptor(), *back;
	ts_buf b, again;
	encode(d, &b);
	assert_int_equal(ts__load_u32(b.data + TS_DESC_OFF_BODY_LEN), b.len - TS_DESC_HEADER_SIZE);
	assert_int_equal(ts__descriptor_decode(b.data, b.len, &back), 0);
	assert_descriptor_equal(d, back);
	/* the values themselves, not only equality with the input */
	const ts__schema *s1 = back->schemas[0], *s3 = back->schemas[2];
	assert_int_equal(s1->ncols, 7);
	assert_int_equal(s3->ncols, 8);
	assert_string_equal(s3->cols[7].name, "big");
	assert_int_equal(s1->cols[2].type, TS_INT32);
	assert_int_equal(s3->cols[2].type, TS_INT64);
	assert_int_equal(s3->cols[2].dflt.type, TS_INT64);
	assert_int_equal(s3->cols[2].dflt.v.i, -7);
	assert_int_equal(s3->cols[3].dflt.v.s.len, 4);
	assert_memory_equal(s3->cols[3].dflt.v.s.ptr, "a\0bc", 4);
	assert_true(s3->cols[4].dflt.v.d == 0.25);
	assert_memory_equal(s3->cols[5].dflt.v.s.ptr, BLOB_DEFAULT, 4);
	assert_int_equal(s3->cols[6].dflt.v.i, T0);
	assert_int_equal(s3->cols[7].dflt.v.i, -1);
	assert_int_equal(s3->nkey, 2);
	assert_int_equal(s3->key[0], 0);
	assert_int_equal(s3->key[1], 1);
	assert_int_equal(back->tablets[1].rows, UINT64_MAX);
	assert_int_equal(back->tablets[0].period_start, -4 * INT64_C(3600000000000));
	/* decoding loses nothing: the re-encoding is byte-identical */
	encode(back, &again);
	assert_int_equal(again.len, b.len);
	assert_memory_equal(again.data, b.data, b.len);
	ts__buf_free(&again);
	ts__buf_free(&b);
	ts__descriptor_free(back, 1);
	ts__descriptor_free(d, 1);
}

/* The encoder writes exactly the layout that encode_body + seal spell out
 * from the format's tables. */
static void descriptor_layout_matches_format(void **state)
{
	(void)state;
	ts__descriptor *d = sample_descriptor();
	ts_buf enc, body, sealed;
	encode(d, &enc);
	encode_body(d, 0, &body);
	seal(&body, TS_DESC_VERSION_MIN, &sealed);
	assert_memory_equal(enc.data, TS_DESC_MAGIC, 8);
	assert_int_equal(ts__load_u32(enc.data + TS_DESC_OFF_VERSION), 1);
	assert_int_equal(sealed.len, enc.len);
	assert_memory_equal(sealed.data, enc.data, enc.len);
	assert_int_equal(ts__load_u64(enc.data + TS_DESC_HEADER_SIZE), 7); /* generation */
	ts__buf_free(&sealed);
	ts__buf_free(&body);
	ts__buf_free(&enc);
	ts__descriptor_free(d, 1);
}

/* Version 2 appends the expiry horizon (i64) to the body of version 1;
 * a descriptor without one is still written as version 1, unchanged. */
static void descriptor_horizon_roundtrip(void **state)
{
	(void)state;
	ts__descriptor *d = sample_descriptor(), *back;
	ts_buf enc, body, sealed;
	d->horizon = -12345;
	d->horizon_set = 1;
	encode(d, &enc);
	assert_int_equal(ts__load_u32(enc.data + TS_DESC_OFF_VERSION), 2);
	encode_body(d, 0, &body);
	size_t v1 = body.len;
	ts__put_u64(&body, (uint64_t)INT64_C(-12345));
	seal(&body, 2, &sealed);
	assert_int_equal(sealed.len, enc.len);
	assert_memory_equal(sealed.data, enc.data, enc.len);
	assert_int_equal(ts__descriptor_decode(enc.data, enc.len, &back), 0);
	assert_int_equal(back->horizon_set, 1);
	assert_int_equal(back->horizon, -12345);
	ts__descriptor_free(back, 1);
	ts__buf_free(&sealed);
	body.len = v1 + 4; /* half a horizon */
	seal(&body, 2, &sealed);
	expect_rejected(sealed.data, sealed.len, TS_ECORRUPT, "expiry horizon is truncated");
	ts__buf_free(&sealed);
	body.len = v1;     /* a version 1 body under version 2 */
	seal(&body, 2, &sealed);
	expect_rejected(sealed.data, sealed.len, TS_ECORRUPT, "expiry horizon is truncated");
	ts__buf_free(&sealed);
	seal(&body, 1, &sealed); /* version 1: no horizon */
	assert_int_equal(ts__descriptor_decode(sealed.data, sealed.len, &back), 0);
	assert_int_equal(back->horizon_set, 0);
	ts__descriptor_free(back, 1);
	ts__buf_free(&sealed);
	ts__buf_free(&body);
	ts__buf_free(&enc);
	ts__descriptor_free(d, 1);
}

/* Version 3 appends the horizon (INT64_MIN: none) and the duplicate
 * policy (u8); it is written only when the policy is not reject, which
 * versions 1 and 2 mean. */
static void descriptor_policy_roundtrip(void **state)
{
	(void)state;
	ts__descriptor *d = sample_descriptor(), *back;
	ts_buf enc, body, sealed;
	d->on_duplicate = TS_ON_DUPLICATE_IGNORE;
	encode(d, &enc);
	assert_int_equal(ts__load_u32(enc.data + TS_DESC_OFF_VERSION), 3);
	encode_body(d, 0, &body);
	size_t v1 = body.len;
	ts__put_u64(&body, (uint64_t)INT64_MIN);
	ts__put_u8(&body, 1);
	seal(&body, 3, &sealed);
	assert_int_equal(sealed.len, enc.len);
	assert_memory_equal(sealed.data, enc.data, enc.len);
	assert_int_equal(ts__descriptor_decode(enc.data, enc.len, &back), 0);
	assert_int_equal(back->on_duplicate, TS_ON_DUPLICATE_IGNORE);
	assert_int_equal(back->horizon_set, 0);
	ts__descriptor_free(back, 1);
	ts__buf_free(&sealed);
	ts__buf_free(&enc);
	/* with a horizon */
	d->horizon = -5;
	d->horizon_set = 1;
	encode(d, &enc);
	assert_int_equal(ts__load_u32(enc.data + TS_DESC_OFF_VERSION), 3);
	assert_int_equal(ts__descriptor_decode(enc.data, enc.len, &back), 0);
	assert_int_equal(back->on_duplicate, TS_ON_DUPLICATE_IGNORE);
	assert_int_equal(back->horizon_set, 1);
	assert_int_equal(back->horizon, -5);
	ts__descriptor_free(back, 1);
	ts__buf_free(&enc);
	/* reject again: version 2, as before policies */
	d->on_duplicate = TS_ON_DUPLICATE_REJECT;
	encode(d, &enc);
	assert_int_equal(ts__load_u32(enc.data + TS_DESC_OFF_VERSION), 2);
	assert_int_equal(ts__descriptor_decode(enc.data, enc.len, &back), 0);
	assert_int_equal(back->on_duplicate, TS_ON_DUPLICATE_REJECT);
	ts__descriptor_free(back, 1);
	ts__buf_free(&enc);
	/* damage: no policy byte, an unknown policy, a byte too many */
	body.len = v1 + 8;
	seal(&body, 3, &sealed);
	expect_rejected(sealed.data, sealed.len, TS_ECORRUPT, "duplicate policy is truncated");
	ts__buf_free(&sealed);
	ts__put_u8(&body, 2);
	seal(&body, 3, &sealed);
	expect_rejected(sealed.data, sealed.len, TS_ECORRUPT, "unknown duplicate policy 2");
	ts__buf_free(&sealed);
	body.len = v1 + 8;
	ts__put_u8(&body, 0); /* reject, spelt out: read as reject */
	seal(&body, 3, &sealed);
	assert_int_equal(ts__descriptor_decode(sealed.data, sealed.len, &back), 0);
	assert_int_equal(back->on_duplicate, TS_ON_DUPLICATE_REJECT);
	ts__descriptor_free(back, 1);
	ts__buf_free(&sealed);
	ts__put_u8(&body, 0);
	seal(&body, 3, &sealed);
	expect_rejected(sealed.data, sealed.len, TS_ECORRUPT, "1 bytes of trailing garbage");
	ts__buf_free(&sealed);
	body.len = v1; /* versions 1 and 2 read as reject */
	seal(&body, 1, &sealed);
	assert_int_equal(ts__descriptor_decode(sealed.data, sealed.len, &back), 0);
	assert_int_equal(back->on_duplicate, TS_ON_DUPLICATE_REJECT);
	ts__descriptor_free(back, 1);
	ts__buf_free(&sealed);
	ts__buf_free(&body);
	ts__descriptor_free(d, 1);
}

/* Version 4: a tablet with a version interval makes every record carry
 * one, [lo, hi] after the source (84 bytes); the body is version 3's
 * otherwise.  Without intervals, the descriptor is written as before
 * (version 1 here), byte for byte. */
static void descriptor_versions_roundtrip(void **state)
{
	(void)state;
	ts__descriptor *d = sample_descriptor(), *back;
	ts_buf enc, body, sealed;
	encode(d, &enc);
	assert_int_equal(ts__load_u32(enc.data + TS_DESC_OFF_VERSION), 1);
	ts__buf_free(&enc);
	d->tablets[1].lo = 100;
	d->tablets[1].hi = UINT64_C(0xfedcba9876543210);
	encode(d, &enc);
	assert_int_equal(ts__load_u32(enc.data + TS_DESC_OFF_VERSION), 4);
	/* the format by hand: records of 84 bytes, horizon (none), policy */
	encode_body(d, 16, &body); /* 16 zero bytes where lo, hi go */
	size_t tail = body.len;
	ts__put_u64(&body, (uint64_t)INT64_MIN);
	ts__put_u8(&body, 0);
	unsigned char *rec1 = body.data + tail - 84; /* the last record's fields */
	assert_int_equal(body.data[tail - 85], 84);  /* its rec_len */
	ts__store_u64(rec1 + 68, 100);
	ts__store_u64(rec1 + 76, UINT64_C(0xfedcba9876543210));
	seal(&body, 4, &sealed);
	assert_int_equal(sealed.len, enc.len);
	assert_memory_equal(sealed.data, enc.data, enc.len);
	assert_int_equal(ts__descriptor_decode(enc.data, enc.len, &back), 0);
	assert_descriptor_equal(d, back);
	assert_int_equal(back->tablets[0].lo, 0);
	assert_int_equal(back->tablets[0].hi, 0);
	assert_int_equal(back->tablets[1].lo, 100);
	assert_int_equal(back->tablets[1].hi, UINT64_C(0xfedcba9876543210));
	assert_int_equal(back->on_duplicate, TS_ON_DUPLICATE_REJECT);
	assert_int_equal(back->horizon_set, 0);
	ts__descriptor_free(back, 1);
	ts__buf_free(&enc);
	ts__buf_free(&sealed);
	/* with a policy and a horizon, still version 4 */
	d->on_duplicate = TS_ON_DUPLICATE_IGNORE;
	d->horizon = -5;
	d->horizon_set = 1;
	encode(d, &enc);
	assert_int_equal(ts__load_u32(enc.data + TS_DESC_OFF_VERSION), 4);
	assert_int_equal(ts__descriptor_decode(enc.data, enc.len, &back), 0);
	assert_descriptor_equal(d, back);
	assert_int_equal(back->on_duplicate, TS_ON_DUPLICATE_IGNORE);
	assert_int_equal(back->horizon, -5);
	ts__descriptor_free(back, 1);
	ts__buf_free(&enc);
	/* damage: lo above hi; a version-4 record without its interval */
	ts__store_u64(rec1 + 68, UINT64_C(0xfedcba9876543211));
	seal(&body, 4, &sealed);
	expect_rejected(sealed.data, sealed.len, TS_ECORRUPT,
	                "tablet record 1: version interval [18364758544493064721, "
	                "18364758544493064720] ends before it begins");
	ts__buf_free(&sealed);
	ts__buf_free(&body);
	d->on_duplicate = TS_ON_DUPLICATE_REJECT;
	d->horizon_set = 0;
	encode_body(d, 0, &body); /* 68-byte records */
	ts__put_u64(&body, (uint64_t)INT64_MIN);
	ts__put_u8(&body, 0);
	seal(&body, 4, &sealed);
	expect_rejected(sealed.data, sealed.len, TS_ECORRUPT, "tablet record 0 is malformed");
	ts__buf_free(&sealed);
	ts__buf_free(&body);
	/* intervals back to [0, 0]: version 1 again */
	d->tablets[1].lo = d->tablets[1].hi = 0;
	encode(d, &enc);
	assert_int_equal(ts__load_u32(enc.data + TS_DESC_OFF_VERSION), 1);
	ts__buf_free(&enc);
	ts__descriptor_free(d, 1);
}

static void descriptor_rejects_flipped_byte(void **state)
{
	(void)state;
	ts__descriptor *d = sample_descriptor(), *ok;
	ts_buf b;
	static const unsigned char masks[] = {0x01, 0x80, 0xff};
	encode(d, &b);
	assert_true(b.len > 200);
	assert_int_equal(ts__descriptor_decode(b.data, b.len, &ok), 0);
	ts__descriptor_free(ok, 1);
	unsigned char *copy = malloc(b.len);
	assert_non_null(copy);
	for (size_t m = 0; m < sizeof masks; m++) {
		for (size_t i = 0; i < b.len; i++) {
			memcpy(copy, b.data, b.len);
			copy[i] ^= masks[m];
			expect_rejected(copy, b.len, 0, NULL);
		}
	}
	/* where the damage is says which check fails */
	memcpy(copy, b.data, b.len);
	copy[0] ^= 1;
	expect_rejected(copy, b.len, TS_ECORRUPT, "bad magic");
	memcpy(copy, b.data, b.len);
	copy[TS_DESC_OFF_VERSION] ^= 1;
	expect_rejected(copy, b.len, TS_ECORRUPT, "header checksum mismatch");
	memcpy(copy, b.data, b.len);
	copy[b.len - 1] ^= 1;
	expect_rejected(copy, b.len, TS_ECORRUPT, "body checksum mismatch");
	free(copy);
	ts__buf_free(&b);
	ts__descriptor_free(d, 1);
}

static void descriptor_rejects_truncation(void **state)
{
	(void)state;
	ts__descriptor *d = sample_descriptor();
	ts_buf b;
	encode(d, &b);
	for (size_t n = 0; n < b.len; n++) {
		/* a copy of exactly n bytes, so ASan sees any read past it */
		unsigned char *p = malloc(n ? n : 1);
		assert_non_null(p);
		memcpy(p, b.data, n);
		expect_rejected(p, n, TS_ECORRUPT, n < TS_DESC_HEADER_SIZE ? "truncated" : NULL);
		free(p);
	}
	ts__buf_free(&b);
	ts__descriptor_free(d, 1);
}

static void descriptor_rejects_appended_garbage(void **state)
{
	(void)state;
	ts__descriptor *d = sample_descriptor();
	ts_buf b;
	encode(d, &b);
	size_t n = b.len;
	ts__put_u8(&b, 0);
	expect_rejected(b.data, b.len, TS_ECORRUPT, "body length");
	ts__put(&b, "garbage!", 8);
	expect_rejected(b.data, b.len, TS_ECORRUPT, "body length");
	/* a second copy of the whole file appended */
	b.len = n;
	unsigned char *copy = malloc(n);
	assert_non_null(copy);
	memcpy(copy, b.data, n);
	ts__put(&b, copy, n);
	assert_false(b.oom);
	free(copy);
	expect_rejected(b.data, b.len, TS_ECORRUPT, NULL);
	ts__buf_free(&b);
	ts__descriptor_free(d, 1);
}

static void descriptor_future_version(void **state)
{
	(void)state;
	ts__descriptor *d = sample_descriptor();
	ts_buf body, b;
	encode_body(d, 0, &body);
	seal(&body, TS_DESC_VERSION_MAX + 1, &b);
	expect_rejected(b.data, b.len, TS_EVERSION, "format version 7");
	ts__buf_free(&b);
	seal(&body, UINT32_MAX, &b);
	expect_rejected(b.data, b.len, TS_EVERSION, "format version 4294967295");
	ts__buf_free(&b);
	seal(&body, 0, &b);
	expect_rejected(b.data, b.len, TS_EVERSION, "format version 0");
	ts__buf_free(&b);
	ts__buf_free(&body);
	ts__descriptor_free(d, 1);
}

/* Format 5 (docs/corrections.md): flags and tombstones round-trip, byte
 * for byte as the format says; unknown flags are refused with
 * TS_EVERSION; tombstones out of version order with TS_ECORRUPT. */
static void descriptor_tombstones_roundtrip(void **state)
{
	(void)state;
	ts__descriptor *d = sample_descriptor(), *back;
	ts_buf enc, body, sealed;
	const unsigned char lo[3] = {1, 2, 3}, hi[9] = {4, 5, 6, 7, 8, 9, 10, 11, 12};
	ts__tomb t = {.version = 77, .tmin = -5, .tmax = 900, .flags = TS_TOMB_LO | TS_TOMB_HI |
	              TS_TOMB_HI_STRICT, .lolen = 3, .hilen = 9, .lo = lo, .hi = hi};
	assert_int_equal(ts__descriptor_add_tomb(d, &t), 0);
	t.version = 70;
	t.flags = 0;
	t.lolen = t.hilen = 0;
	assert_int_equal(ts__descriptor_add_tomb(d, &t), 0);
	assert_int_equal(ts__descriptor_add_tomb(d, &t), 0); /* the same version: once */
	assert_int_equal(d->ntombs, 2);
	assert_int_equal(d->tombs[0].version, 70);
	d->flags = TS_DESC_TOMBSTONES_LOGGED;
	encode(d, &enc);
	assert_int_equal(ts__load_u32(enc.data + TS_DESC_OFF_VERSION), 5);
	/* by hand: version 4's body, horizon, policy, flags, count, records */
	encode_body(d, 16, &body);
	ts__put_u64(&body, (uint64_t)INT64_MIN);
	ts__put_u8(&body, 0);
	ts__put_u8(&body, TS_DESC_TOMBSTONES_LOGGED);
	ts__put_u32(&body, 2);
	ts__put_u8(&body, 36); /* rec_len: 8 + 8 + 8 + 4 + 4 + 4 */
	ts__put_u64(&body, 70);
	ts__put_u64(&body, (uint64_t)-5);
	ts__put_u64(&body, 900);
	ts__put_u32(&body, 0);
	ts__put_u32(&body, 0);
	ts__put_u32(&body, 0);
	ts__put_u8(&body, 48);
	ts__put_u64(&body, 77);
	ts__put_u64(&body, (uint64_t)-5);
	ts__put_u64(&body, 900);
	ts__put_u32(&body, TS_TOMB_LO | TS_TOMB_HI | TS_TOMB_HI_STRICT);
	ts__put_u32(&body, 3);
	ts__put_u32(&body, 9);
	ts__put(&body, lo, 3);
	ts__put(&body, hi, 9);
	seal(&body, 5, &sealed);
	assert_int_equal(sealed.len, enc.len);
	assert_memory_equal(sealed.data, enc.data, enc.len);
	assert_int_equal(ts__descriptor_decode(enc.data, enc.len, &back), 0);
	assert_descriptor_equal(d, back);
	assert_int_equal(back->flags, TS_DESC_TOMBSTONES_LOGGED);
	assert_int_equal(back->ntombs, 2);
	assert_int_equal(back->tombs[1].version, 77);
	assert_int_equal(back->tombs[1].tmin, -5);
	assert_int_equal(back->tombs[1].flags, TS_TOMB_LO | TS_TOMB_HI | TS_TOMB_HI_STRICT);
	assert_memory_equal(back->tombs[1].hi, hi, 9);
	ts__descriptor_free(back, 1);
	ts__buf_free(&sealed);
	/* an unknown flag: a later build's table */
	ts__buf_free(&body);
	ts__buf_free(&enc);
	d->flags = 0x80;
	encode(d, &enc);
	expect_rejected(enc.data, enc.len, TS_EVERSION, "unknown descriptor flags");
	ts__buf_free(&enc);
	/* out of order */
	d->flags = 0;
	ts__tomb x = d->tombs[0];
	d->tombs[0] = d->tombs[1];
	d->tombs[1] = x;
	encode(d, &enc);
	expect_rejected(enc.data, enc.len, TS_ECORRUPT, "is not newer than the one before");
	ts__buf_free(&enc);
	/* none left: the older format again */
	ts__descriptor_drop_tomb(d, 1);
	ts__descriptor_drop_tomb(d, 0);
	encode(d, &enc);
	assert_int_equal(ts__load_u32(enc.data + TS_DESC_OFF_VERSION), 1);
	ts__buf_free(&enc);
	ts__descriptor_free(d, 1);
}

/* Format 6 (docs/corrections.md section 4): a tombstone that leaves
 * keeps its change record (its key box unless erased), byte for byte as
 * the format says; past ts__chrecs_max records the oldest go into the
 * changes horizon; records out of order, or not after the horizon, are
 * refused. */
static void descriptor_change_records(void **state)
{
	(void)state;
	ts__descriptor *d = sample_descriptor(), *back;
	ts_buf enc, body, sealed;
	const unsigned char lo[3] = {1, 2, 3}, hi[2] = {4, 5};
	ts__tomb t = {.version = 77, .tmin = -5, .tmax = 900, .flags = TS_TOMB_LO | TS_TOMB_HI,
	              .lolen = 3, .hilen = 2, .lo = lo, .hi = hi};
	assert_int_equal(ts__descriptor_add_tomb(d, &t), 0);
	t.version = 80;
	t.tmin = 1000;
	t.tmax = 2000;
	assert_int_equal(ts__descriptor_add_tomb(d, &t), 0);
	d->flags = TS_DESC_DELETED;
	/* 77 leaves with its box, 80 without (a purge's) */
	assert_int_equal(ts__descriptor_retire_tomb(d, 0, 0), 0);
	assert_int_equal(ts__descriptor_retire_tomb(d, 0, 1), 0);
	assert_int_equal(d->ntombs, 0);
	assert_int_equal(d->nchrecs, 2);
	encode(d, &enc);
	assert_int_equal(ts__load_u32(enc.data + TS_DESC_OFF_VERSION), 6);
	/* by hand: version 5's body, then horizon, its range, count, records */
	encode_body(d, 16, &body);
	ts__put_u64(&body, (uint64_t)INT64_MIN);
	ts__put_u8(&body, 0);
	ts__put_u8(&body, TS_DESC_DELETED);
	ts__put_u32(&body, 0);
	ts__put_u64(&body, 0);
	ts__put_u64(&body, 0);
	ts__put_u64(&body, 0);
	ts__put_u32(&body, 2);
	ts__put_u8(&body, 41);
	ts__put_u64(&body, 77);
	ts__put_u64(&body, (uint64_t)-5);
	ts__put_u64(&body, 900);
	ts__put_u32(&body, TS_TOMB_LO | TS_TOMB_HI);
	ts__put_u32(&body, 3);
	ts__put_u32(&body, 2);
	ts__put(&body, lo, 3);
	ts__put(&body, hi, 2);
	ts__put_u8(&body, 36);
	ts__put_u64(&body, 80);
	ts__put_u64(&body, 1000);
	ts__put_u64(&body, 2000);
	ts__put_u32(&body, 0);
	ts__put_u32(&body, 0);
	ts__put_u32(&body, 0);
	seal(&body, 6, &sealed);
	assert_int_equal(sealed.len, enc.len);
	assert_memory_equal(sealed.data, enc.data, enc.len);
	assert_int_equal(ts__descriptor_decode(enc.data, enc.len, &back), 0);
	assert_descriptor_equal(d, back);
	ts__descriptor_free(back, 1);
	ts__buf_free(&sealed);
	ts__buf_free(&body);
	ts__buf_free(&enc);
	/* a purge whose range meets 77's box erases its keys */
	ts__tomb box = {.tmin = 0, .tmax = 10, .flags = TS_TOMB_LO, .lolen = 1, .lo = lo};
	ts__descriptor_erase_chrec_keys(d, &box);
	assert_int_equal(d->chrecs[0].flags, 0);
	assert_int_equal(d->chrecs[0].lolen, 0);
	assert_int_equal(d->chrecs[0].tmin, -5);
	/* the bound: the oldest go into the horizon */
	int saved = ts__chrecs_max;
	ts__chrecs_max = 2;
	t.version = 90;
	t.tmin = 3000;
	t.tmax = 4000;
	assert_int_equal(ts__descriptor_add_tomb(d, &t), 0);
	assert_int_equal(ts__descriptor_retire_tomb(d, 0, 0), 0);
	ts__chrecs_max = saved;
	assert_int_equal(d->nchrecs, 2);
	assert_int_equal(d->chrecs[0].version, 80);
	assert_int_equal(d->ch_horizon, 77);
	assert_int_equal(d->ch_tmin, -5);
	assert_int_equal(d->ch_tmax, 900);
	/* a retired version, or one under the horizon, is kept once */
	t.version = 77;
	assert_int_equal(ts__descriptor_add_tomb(d, &t), 0);
	assert_int_equal(ts__descriptor_retire_tomb(d, 0, 0), 0);
	assert_int_equal(d->nchrecs, 2);
	encode(d, &enc);
	assert_int_equal(ts__descriptor_decode(enc.data, enc.len, &back), 0);
	assert_descriptor_equal(d, back);
	assert_int_equal(back->ch_tmax, 900);
	ts__descriptor_free(back, 1);
	ts__buf_free(&enc);
	/* the bound on key bytes: 8 KiB a record, 1 MiB kept */
	static unsigned char big[4096];
	memset(big, 7, sizeof big);
	ts__tomb w = {.tmin = 5000, .tmax = 6000, .flags = TS_TOMB_LO | TS_TOMB_HI,
	              .lolen = 4096, .hilen = 4096, .lo = big, .hi = big};
	ts__descriptor *k = sample_descriptor();
	for (int i = 1; i <= 130; i++) {
		w.version = (uint64_t)i * 10;
		assert_int_equal(ts__descriptor_add_tomb(k, &w), 0);
		assert_int_equal(ts__descriptor_retire_tomb(k, 0, 0), 0);
	}
	assert_int_equal(k->nchrecs, 128);
	assert_int_equal(k->chrecs[0].version, 30);
	assert_int_equal(k->ch_horizon, 20);
	assert_int_equal(k->ch_tmin, 5000);
	encode(k, &enc);
	assert_int_equal(ts__descriptor_decode(enc.data, enc.len, &back), 0);
	assert_descriptor_equal(k, back);
	ts__descriptor_free(back, 1);
	ts__buf_free(&enc);
	ts__descriptor_free(k, 1);
	/* out of order; not after the horizon */
	ts__tomb x = d->chrecs[0];
	d->chrecs[0] = d->chrecs[1];
	d->chrecs[1] = x;
	encode(d, &enc);
	expect_rejected(enc.data, enc.len, TS_ECORRUPT, "change record 1 is not newer");
	ts__buf_free(&enc);
	d->chrecs[1] = d->chrecs[0];
	d->chrecs[0] = x;
	d->ch_horizon = 80;
	encode(d, &enc);
	expect_rejected(enc.data, enc.len, TS_ECORRUPT, "not newer than the changes horizon");
	ts__buf_free(&enc);
	ts__descriptor_free(d, 1);
}

/* Bodies with valid checksums whose contents break the format's rules. */
static void descriptor_rejects_bad_body_with_valid_crc(void **state)
{
	(void)state;
	ts__descriptor *d = sample_descriptor(), *back;
	ts_buf body, b;

	/* a tablet record with fields from a later version is read */
	encode_body(d, 16, &body);
	seal(&body, TS_DESC_VERSION_MIN, &b);
	assert_int_equal(ts__descriptor_decode(b.data, b.len, &back), 0);
	assert_descriptor_equal(d, back);
	ts__descriptor_free(back, 1);
	ts__buf_free(&b);
	ts__buf_free(&body);

	/* a record of the first format (60 bytes, no source) is read */
	encode_body(d, -8, &body);
	seal(&body, TS_DESC_VERSION_MIN, &b);
	assert_int_equal(ts__descriptor_decode(b.data, b.len, &back), 0);
	assert_int_equal(back->tablets[1].source, 0);
	assert_int_equal(back->tablets[1].bytes, 1);
	ts__descriptor_free(back, 1);
	ts__buf_free(&b);
	ts__buf_free(&body);

	/* a tablet record cut short is not */
	encode_body(d, -1, &body);
	seal(&body, TS_DESC_VERSION_MIN, &b);
	expect_rejected(b.data, b.len, TS_ECORRUPT, "tablet record 0 is malformed");
	ts__buf_free(&b);
	ts__buf_free(&body);

	/* a tablet naming a schema version the descriptor lacks */
	d->tablets[1].schema_version = 4;
	encode_body(d, 0, &body);
	seal(&body, TS_DESC_VERSION_MIN, &b);
	expect_rejected(b.data, b.len, TS_ECORRUPT, "tablet record 1 is malformed");
	ts__buf_free(&b);
	ts__buf_free(&body);
	d->tablets[1].schema_version = 0;
	encode_body(d, 0, &body);
	seal(&body, TS_DESC_VERSION_MIN, &b);
	expect_rejected(b.data, b.len, TS_ECORRUPT, "tablet record 1 is malformed");
	ts__buf_free(&b);
	ts__buf_free(&body);
	d->tablets[1].schema_version = 3;

	/* a negative TTL */
	d->ttl = -1;
	encode_body(d, 0, &body);
	seal(&body, TS_DESC_VERSION_MIN, &b);
	expect_rejected(b.data, b.len, TS_ECORRUPT, "bad body header");
	ts__buf_free(&b);
	ts__buf_free(&body);
	d->ttl = 0;

	/* schema versions out of order */
	ts__schema *s = d->schemas[0];
	d->schemas[0] = d->schemas[1];
	d->schemas[1] = s;
	encode_body(d, 0, &body);
	seal(&body, TS_DESC_VERSION_MIN, &b);
	expect_rejected(b.data, b.len, TS_ECORRUPT, "schema 1 has version 2");
	ts__buf_free(&b);
	ts__buf_free(&body);
	d->schemas[1] = d->schemas[0];
	d->schemas[0] = s;

	/* no schema at all */
	d->nschemas = 0;
	d->ntablets = 0;
	encode_body(d, 0, &body);
	seal(&body, TS_DESC_VERSION_MIN, &b);
	expect_rejected(b.data, b.len, TS_ECORRUPT, "bad schema count 0");
	ts__buf_free(&b);
	ts__buf_free(&body);
	d->nschemas = 3;
	d->ntablets = 2;

	/* more tablets than the body could hold */
	encode_body(d, 0, &body);
	ts__store_u32(body.data + body.len - 4 - 2 * (1 + 68), 1000000);
	seal(&body, TS_DESC_VERSION_MIN, &b);
	expect_rejected(b.data, b.len, TS_ECORRUPT, "bad tablet count 1000000");
	ts__buf_free(&b);
	ts__buf_free(&body);

	/* bytes after the last record, inside the checksummed body */
	encode_body(d, 0, &body);
	ts__put(&body, "xyz", 3);
	seal(&body, TS_DESC_VERSION_MIN, &b);
	expect_rejected(b.data, b.len, TS_ECORRUPT, "3 bytes of trailing garbage");
	ts__buf_free(&b);
	ts__buf_free(&body);

	/* an empty body */
	ts__buf_init(&body);
	seal(&body, TS_DESC_VERSION_MIN, &b);
	expect_rejected(b.data, b.len, TS_ECORRUPT, "bad body header");
	ts__buf_free(&b);
	ts__buf_free(&body);
	ts__descriptor_free(d, 1);
}

/* A checksummed body that ends inside the tablet section: the reader must
 * stop at the missing record, not read a record of no bytes at NULL. */
static void descriptor_rejects_truncated_tablet_section(void **state)
{
	(void)state;
	ts__descriptor *d = sample_descriptor();
	ts_buf body, b;
	size_t full;
	encode_body(d, 0, &body);
	full = body.len;

	/* ntablets = 2, but the body ends after record 0 */
	body.len = full - (1 + 68);
	seal(&body, TS_DESC_VERSION_MIN, &b);
	expect_rejected(b.data, b.len, TS_ECORRUPT, "tablet record 1 is truncated");
	ts__buf_free(&b);

	/* record 1's length (68) is there, its bytes are not */
	body.len = full - 68;
	seal(&body, TS_DESC_VERSION_MIN, &b);
	expect_rejected(b.data, b.len, TS_ECORRUPT, "tablet record 1 is truncated");
	ts__buf_free(&b);

	/* one tablet announced, and only an unfinished length varint */
	body.len = full - 4 - 2 * (1 + 68);
	ts__put_u32(&body, 1);
	ts__put_u8(&body, 0x80);
	seal(&body, TS_DESC_VERSION_MIN, &b);
	expect_rejected(b.data, b.len, TS_ECORRUPT, "tablet record 0 is truncated");
	ts__buf_free(&b);

	/* an empty tablet section that is well formed still decodes */
	body.len = full - 4 - 2 * (1 + 68);
	ts__put_u32(&body, 0);
	seal(&body, TS_DESC_VERSION_MIN, &b);
	ts__descriptor *back;
	assert_int_equal(ts__descriptor_decode(b.data, b.len, &back), 0);
	assert_int_equal(back->ntablets, 0);
	assert_int_equal(back->nschemas, 3);
	ts__descriptor_free(back, 1);
	ts__buf_free(&b);
	ts__buf_free(&body);
	ts__descriptor_free(d, 1);
}

/* A schema of columns cols[0..n) (types given, defaults none) with key
 * key[0..nkey), stamped with version v. */
static ts__schema *schema_v(uint32_t v, const ts_column *cols, int n,
                            const char *const *key, int nkey)
{
	ts__schema *s;
	if (ts__schema_build(cols, n, key, nkey, &s) < 0)
		fail_msg("build: %s", ts_errmsg(NULL));
	s->version = v;
	return s;
}

/* Seal a descriptor of versions[0..n) (no tablets) and expect decode to
 * fail with TS_ECORRUPT and exactly message want (after the prefix the
 * decoder adds nothing).  Frees the versions. */
static void expect_versions_rejected(ts__schema **versions, int n, const char *want)
{
	ts__descriptor d = {.generation = 1, .next_tablet_id = 1, .nschemas = n,
	                    .schemas = versions};
	ts_buf body, b;
	encode_body(&d, 0, &body);
	seal(&body, TS_DESC_VERSION_MIN, &b);
	expect_rejected(b.data, b.len, TS_ECORRUPT, NULL);
	if (strcmp(ts_errmsg(NULL), want) != 0)
		fail_msg("message \"%s\", want \"%s\"", ts_errmsg(NULL), want);
	ts__buf_free(&b);
	ts__buf_free(&body);
	for (int i = 0; i < n; i++)
		ts__schema_free(versions[i]);
}

#define COLS(...) ((const ts_column[]){__VA_ARGS__}), \
	(int)(sizeof((const ts_column[]){__VA_ARGS__}) / sizeof(ts_column))

/* Every version may only follow the one before it by appending columns
 * or widening int32 to int64, with the key unchanged. */
static void descriptor_rejects_incompatible_versions(void **state)
{
	(void)state;
	const char *k_host[] = {"host", "ts"}, *k_n[] = {"n", "ts"};
	const char *k_host_n[] = {"host", "n", "ts"};
	ts__schema *v[3];
#define BASE {"host", TS_STRING, NONE}, {"ts", TS_TIMESTAMP, NONE}
#define V(ver, key, ...) schema_v(ver, COLS(__VA_ARGS__), key, (int)(sizeof key / sizeof *key))

	/* the key columns changed */
	v[0] = V(1, k_host, BASE, {"n", TS_INT32, NONE});
	v[1] = V(2, k_n, BASE, {"n", TS_INT32, NONE});
	expect_versions_rejected(v, 2,
		"schema version 2: key column 0 is \"n\", was \"host\" in version 1");
	/* a key column added */
	v[0] = V(1, k_host, BASE, {"n", TS_INT32, NONE});
	v[1] = V(2, k_host_n, BASE, {"n", TS_INT32, NONE});
	expect_versions_rejected(v, 2, "schema version 2: 3 key columns, version 1 has 2");
	/* a column dropped */
	v[0] = V(1, k_host, BASE, {"n", TS_INT32, NONE}, {"v", TS_DOUBLE, NONE});
	v[1] = V(2, k_host, BASE, {"n", TS_INT32, NONE});
	expect_versions_rejected(v, 2,
		"schema version 2: 3 columns, fewer than the 4 of version 1 (column \"v\" is missing)");
	/* a column renamed */
	v[0] = V(1, k_host, BASE, {"n", TS_INT32, NONE}, {"v", TS_DOUBLE, NONE});
	v[1] = V(2, k_host, BASE, {"n", TS_INT32, NONE}, {"w", TS_DOUBLE, NONE});
	expect_versions_rejected(v, 2, "schema version 2: column 3 is \"w\", was \"v\" in version 1");
	/* a column inserted rather than appended */
	v[0] = V(1, k_host, BASE, {"v", TS_DOUBLE, NONE});
	v[1] = V(2, k_host, BASE, {"n", TS_INT32, NONE}, {"v", TS_DOUBLE, NONE});
	expect_versions_rejected(v, 2, "schema version 2: column 2 is \"n\", was \"v\" in version 1");
	/* int64 narrowed to int32 */
	v[0] = V(1, k_host, BASE, {"n", TS_INT64, NONE});
	v[1] = V(2, k_host, BASE, {"n", TS_INT32, NONE});
	expect_versions_rejected(v, 2,
		"schema version 2: column \"n\" changed type from int64 to int32 (only int32 to int64 is allowed)");
	/* int32 to double */
	v[0] = V(1, k_host, BASE, {"n", TS_INT32, NONE});
	v[1] = V(2, k_host, BASE, {"n", TS_DOUBLE, NONE});
	expect_versions_rejected(v, 2,
		"schema version 2: column \"n\" changed type from int32 to double (only int32 to int64 is allowed)");
	/* string to blob */
	v[0] = V(1, k_host, BASE, {"s", TS_STRING, NONE});
	v[1] = V(2, k_host, BASE, {"s", TS_BLOB, NONE});
	expect_versions_rejected(v, 2,
		"schema version 2: column \"s\" changed type from string to blob (only int32 to int64 is allowed)");
	/* widen, append, then narrow back: each pair is checked */
	v[0] = V(1, k_host, BASE, {"n", TS_INT32, NONE});
	v[1] = V(2, k_host, BASE, {"n", TS_INT64, NONE}, {"m", TS_INT32, NONE});
	v[2] = V(3, k_host, BASE, {"n", TS_INT32, NONE}, {"m", TS_INT32, NONE});
	expect_versions_rejected(v, 3,
		"schema version 3: column \"n\" changed type from int64 to int32 (only int32 to int64 is allowed)");

	/* the same three with the last one legal decode */
	v[0] = V(1, k_host, BASE, {"n", TS_INT32, NONE});
	v[1] = V(2, k_host, BASE, {"n", TS_INT64, NONE}, {"m", TS_INT32, NONE});
	v[2] = V(3, k_host, BASE, {"n", TS_INT64, NONE}, {"m", TS_INT64, NONE}, {"x", TS_BLOB, NONE});
	ts__descriptor d = {.generation = 1, .next_tablet_id = 1, .nschemas = 3, .schemas = v}, *back;
	ts_buf b;
	encode(&d, &b);
	assert_int_equal(ts__descriptor_decode(b.data, b.len, &back), 0);
	assert_descriptor_equal(&d, back);
	ts__descriptor_free(back, 1);
	ts__buf_free(&b);
	for (int i = 0; i < 3; i++)
		ts__schema_free(v[i]);
#undef V
#undef BASE
}

/* Read dir/DESCRIPTOR and check it is exactly d, byte for byte. */
static void assert_on_disk(const char *dir, const ts__descriptor *d)
{
	ts__descriptor *got;
	ts_buf want, file;
	assert_int_equal(ts__descriptor_read(dir, &got), 0);
	assert_descriptor_equal(d, got);
	ts__descriptor_free(got, 1);
	encode(d, &want);
	read_whole(dir, TS_DESC_FILE, &file);
	assert_int_equal(file.len, want.len);
	assert_memory_equal(file.data, want.data, want.len);
	ts__buf_free(&file);
	ts__buf_free(&want);
}

static void descriptor_write_read(void **state)
{
	const char *dir = *state;
	ts__descriptor *d = sample_descriptor(), *got = (ts__descriptor *)&got;
	assert_int_equal(ts__descriptor_read(dir, &got), TS_ENOENT);
	assert_null(got);
	assert_int_equal(ts__descriptor_write(dir, d), 0);
	assert_on_disk(dir, d);
	char *tmp = ts_test_path(dir, "DESCRIPTOR.tmp");
	struct stat st;
	assert_int_equal(stat(tmp, &st), -1); /* renamed away */
	free(tmp);
	d->generation = 8;
	d->ntablets = 1;
	assert_int_equal(ts__descriptor_write(dir, d), 0);
	assert_on_disk(dir, d);
	ts__descriptor_free(d, 1);
}

/* A crash after staging the new file and before renaming it. */
static void descriptor_crash_between_stage_and_rename(void **state)
{
	const char *dir = *state;
	ts__descriptor *a = sample_descriptor(), *b = sample_descriptor();
	ts_buf nb;
	assert_int_equal(ts__descriptor_write(dir, a), 0);
	b->generation = a->generation + 1;
	b->ttl = 0;
	b->ntablets = 0;
	encode(b, &nb);
	assert_int_equal(ts__file_stage(dir, TS_DESC_FILE, nb.data, nb.len), 0);
	assert_on_disk(dir, a);
	/* the staged file is complete: committing it would have given b */
	assert_int_equal(ts__file_commit(dir, TS_DESC_FILE), 0);
	assert_on_disk(dir, b);
	ts__buf_free(&nb);
	ts__descriptor_free(b, 1);
	ts__descriptor_free(a, 1);
}

/* The same crash in another process: the child stages and dies. */
static void descriptor_crash_in_child_keeps_old(void **state)
{
	const char *dir = *state;
	ts__descriptor *a = sample_descriptor(), *b = sample_descriptor();
	ts_buf nb;
	int status;
	assert_int_equal(ts__descriptor_write(dir, a), 0);
	b->generation = 99;
	encode(b, &nb);
	fflush(NULL);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		_exit(ts__file_stage(dir, TS_DESC_FILE, nb.data, nb.len) == 0 ? 0 : 1);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	ts_buf staged;
	read_whole(dir, "DESCRIPTOR.tmp", &staged); /* the child did stage it */
	assert_int_equal(staged.len, nb.len);
	ts__buf_free(&staged);
	assert_on_disk(dir, a);
	/* the next write replaces the stale file whole */
	a->generation = 8;
	assert_int_equal(ts__descriptor_write(dir, a), 0);
	assert_on_disk(dir, a);
	ts__buf_free(&nb);
	ts__descriptor_free(b, 1);
	ts__descriptor_free(a, 1);
}

static void descriptor_garbage_tmp_ignored(void **state)
{
	const char *dir = *state;
	ts__descriptor *a = sample_descriptor();
	unsigned char junk[8192];
	for (size_t i = 0; i < sizeof junk; i++)
		junk[i] = (unsigned char)(i * 131 + 7);
	assert_int_equal(ts__descriptor_write(dir, a), 0);
	write_file(dir, "DESCRIPTOR.tmp", junk, sizeof junk);
	assert_on_disk(dir, a);
	/* a later write is not polluted by the longer stale file (O_TRUNC) */
	a->generation = 9;
	a->ntablets = 0;
	assert_int_equal(ts__descriptor_write(dir, a), 0);
	assert_on_disk(dir, a);
	ts__descriptor_free(a, 1);
}

static void descriptor_read_damaged_file(void **state)
{
	const char *dir = *state;
	ts__descriptor *a = sample_descriptor(), *got = (ts__descriptor *)&got;
	ts_buf b;
	encode(a, &b);
	b.data[b.len / 2] ^= 0x10;
	write_file(dir, TS_DESC_FILE, b.data, b.len);
	assert_int_equal(ts__descriptor_read(dir, &got), TS_ECORRUPT);
	assert_null(got);
	assert_non_null(strstr(ts_errmsg(NULL), "/DESCRIPTOR: body checksum mismatch"));
	assert_non_null(strstr(ts_errmsg(NULL), dir));
	write_file(dir, TS_DESC_FILE, "", 0);
	assert_int_equal(ts__descriptor_read(dir, &got), TS_ECORRUPT);
	assert_non_null(strstr(ts_errmsg(NULL), "truncated: 0 bytes"));
	ts__buf_free(&b);
	ts__descriptor_free(a, 1);
}

/* Room for more versions than fit in TS_DESCRIPTOR_MAX at ~64 KiB each. */
#define HEAVY_VERSIONS 1100

/* A descriptor of HEAVY_VERSIONS versions, all the same schema *s (the
 * encoder does not look at versions): one column with a default of the
 * largest size, so that each version takes a little over 64 KiB.  Free
 * with free_heavy. */
static ts__descriptor *heavy_descriptor(ts__schema **s)
{
	char *bytes = malloc(TS_COLUMN_DEFAULT_MAX);
	assert_non_null(bytes);
	memset(bytes, 'x', TS_COLUMN_DEFAULT_MAX);
	ts_column cols[] = {{"host", TS_STRING, NONE},
	                    {"note", TS_STRING, ts_stringn(bytes, TS_COLUMN_DEFAULT_MAX)}};
	const char *key[] = {"host", "ts"};
	assert_int_equal(ts__schema_build(cols, 2, key, 2, s), 0);
	free(bytes);
	ts__descriptor *d = calloc(1, sizeof *d);
	assert_non_null(d);
	assert_non_null(d->schemas = calloc(HEAVY_VERSIONS, sizeof *d->schemas));
	for (int i = 0; i < HEAVY_VERSIONS; i++)
		d->schemas[i] = *s;
	d->nschemas = HEAVY_VERSIONS;
	d->generation = 1;
	d->next_tablet_id = 1;
	return d;
}

static void free_heavy(ts__descriptor *d, ts__schema *s)
{
	ts__descriptor_free(d, 0);
	ts__schema_free(s);
}

/* Encoded size of d with n versions. */
static size_t encoded_size(ts__descriptor *d, int n)
{
	ts_buf b;
	d->nschemas = n;
	encode(d, &b);
	size_t len = b.len;
	ts__buf_free(&b);
	return len;
}

/* The most versions of d that fit in TS_DESCRIPTOR_MAX; *per_version and
 * *fixed give the encoded size of n versions as fixed + n * per_version. */
static int versions_that_fit(ts__descriptor *d, size_t *per_version, size_t *fixed)
{
	size_t one = encoded_size(d, 1), two = encoded_size(d, 2);
	*per_version = two - one;
	*fixed = one - *per_version;
	assert_true(*per_version > TS_COLUMN_DEFAULT_MAX);
	int fit = (int)((TS_DESCRIPTOR_MAX - *fixed) / *per_version);
	assert_true(fit > 1000 && fit < HEAVY_VERSIONS);
	return fit;
}

/* The encoder never makes a file the reader would refuse as too big. */
static void descriptor_encode_refuses_oversized(void **state)
{
	(void)state;
	ts__schema *s;
	ts__descriptor *d = heavy_descriptor(&s);
	size_t per, fixed;
	int fit = versions_that_fit(d, &per, &fixed);
	ts_buf b;
	char want[200];

	/* the most that fits is encoded; decoding gets past the size checks
	 * (and stops at the versions, all numbered 1 here) */
	d->nschemas = fit;
	encode(d, &b);
	assert_int_equal(b.len, fixed + (size_t)fit * per);
	assert_true(b.len <= TS_DESCRIPTOR_MAX);
	expect_rejected(b.data, b.len, TS_ECORRUPT, "schema 2 has version 1");
	ts__buf_free(&b);

	/* one version more is refused, and the buffer is left as it was */
	d->nschemas = fit + 1;
	ts__buf_init(&b);
	ts__put(&b, "abc", 3);
	ts__clear_error();
	assert_int_equal(ts__descriptor_encode(d, &b), TS_ETOOBIG);
	assert_int_equal(b.len, 3);
	assert_memory_equal(b.data, "abc", 3);
	snprintf(want, sizeof want,
	         "descriptor of %zu bytes (%d schema versions, 0 tablets) exceeds the limit of 67108864 bytes",
	         fixed + (size_t)(fit + 1) * per, fit + 1);
	assert_string_equal(ts_errmsg(NULL), want);
	ts__buf_free(&b);
	free_heavy(d, s);
}

/* A descriptor too big to encode is not written: the old one stays and
 * no DESCRIPTOR.tmp is left. */
static void descriptor_write_refuses_oversized(void **state)
{
	const char *dir = *state;
	ts__descriptor *old = sample_descriptor();
	ts__schema *s;
	ts__descriptor *d = heavy_descriptor(&s);
	size_t per, fixed;
	int fit = versions_that_fit(d, &per, &fixed);
	assert_int_equal(ts__descriptor_write(dir, old), 0);
	d->nschemas = fit + 1;
	assert_int_equal(ts__descriptor_write(dir, d), TS_ETOOBIG);
	assert_non_null(strstr(ts_errmsg(NULL), "exceeds the limit of 67108864 bytes"));
	assert_on_disk(dir, old);
	char *tmp = ts_test_path(dir, "DESCRIPTOR.tmp");
	struct stat st;
	assert_int_equal(stat(tmp, &st), -1);
	free(tmp);
	free_heavy(d, s);
	ts__descriptor_free(old, 1);
}

/* ---- through the public API ---- */

static void create_t(ts_db *db)
{
	ts_column cols[] = {{"host", TS_STRING, NONE}, {"v", TS_INT64, ts_int64(5)}};
	const char *key[] = {"host", "ts"};
	if (ts_create_keyed(db, "t", cols, 2, key, 2, 0) < 0)
		fail_msg("create t: %s", ts_errmsg(NULL));
}

/* Open db at path, open table t, check its schema is version 1 with the
 * columns host, ts, v; close both. */
static void assert_public_schema_v1(const char *path, unsigned flags)
{
	ts_options o;
	ts_db *db;
	ts_table *t;
	ts_schema *s;
	ts_options_init(&o);
	o.flags = flags;
	assert_int_equal(ts_open(path, &o, &db), 0);
	assert_int_equal(ts_table_open(db, "t", &t), 0);
	assert_int_equal(ts_table_schema(t, &s), 0);
	assert_int_equal(s->version, 1);
	assert_int_equal(s->ncolumns, 3);
	assert_string_equal(s->columns[0].name, "host");
	assert_string_equal(s->columns[1].name, "ts");
	assert_string_equal(s->columns[2].name, "v");
	assert_int_equal(s->columns[2].dflt.v.i, 5);
	assert_int_equal(s->ttl, 0);
	ts_schema_free(s);
	ts_table_close(t);
	assert_int_equal(ts_close(db), 0);
}

static void descriptor_public_stale_tmp_ignored(void **state)
{
	const char *path = *state;
	ts_db *db;
	ts_table *t;
	ts_schema *s;
	assert_int_equal(ts_open(path, NULL, &db), 0);
	create_t(db);
	assert_int_equal(ts_close(db), 0);

	/* a newer, complete descriptor staged but never renamed */
	char *tdir = ts_test_path(path, "t");
	ts__descriptor *d, *newer;
	ts__schema *s2;
	ts_column extra = {"staged", TS_INT64, NONE};
	ts_buf nb;
	assert_int_equal(ts__descriptor_read(tdir, &d), 0);
	assert_int_equal(d->generation, 1);
	assert_int_equal(ts__descriptor_clone(d, &newer), 0);
	assert_int_equal(ts__schema_add(ts__desc_schema(d), &extra, &s2), 0);
	newer->schemas[newer->nschemas++] = s2;
	newer->generation = 2;
	newer->ttl = 3600;
	encode(newer, &nb);
	assert_int_equal(ts__file_stage(tdir, TS_DESC_FILE, nb.data, nb.len), 0);
	assert_public_schema_v1(path, 0);
	assert_public_schema_v1(path, TS_OPEN_READONLY);

	/* a damaged one: the newer file with a byte flipped */
	nb.data[nb.len - 3] ^= 0x40;
	write_file(tdir, "DESCRIPTOR.tmp", nb.data, nb.len);
	assert_public_schema_v1(path, 0);
	/* and a truncated one */
	write_file(tdir, "DESCRIPTOR.tmp", nb.data, nb.len / 2);
	assert_public_schema_v1(path, 0);

	/* a real change afterwards is the one that lands */
	ts_column added = {"real", TS_DOUBLE, ts_double(1.5)};
	assert_int_equal(ts_open(path, NULL, &db), 0);
	assert_int_equal(ts_table_open(db, "t", &t), 0);
	assert_int_equal(ts_alter_add(t, &added), 0);
	ts_table_close(t);
	assert_int_equal(ts_close(db), 0);
	assert_int_equal(ts_open(path, NULL, &db), 0);
	assert_int_equal(ts_table_open(db, "t", &t), 0);
	assert_int_equal(ts_table_schema(t, &s), 0);
	assert_int_equal(s->version, 2);
	assert_int_equal(s->ncolumns, 4);
	assert_string_equal(s->columns[3].name, "real");
	assert_int_equal(s->ttl, 0);
	ts_schema_free(s);
	ts_table_close(t);
	assert_int_equal(ts_close(db), 0);
	char *tmp = ts_test_path(tdir, "DESCRIPTOR.tmp");
	struct stat st;
	assert_int_equal(stat(tmp, &st), -1);
	free(tmp);

	ts__buf_free(&nb);
	ts__descriptor_free(newer, 0);
	ts__descriptor_free(d, 1);
	ts__schema_free(s2);
	free(tdir);
}

static void descriptor_public_damaged_descriptor(void **state)
{
	const char *path = *state;
	ts_db *db;
	ts_table *t = (ts_table *)&t;
	ts_buf b;
	assert_int_equal(ts_open(path, NULL, &db), 0);
	create_t(db);
	assert_int_equal(ts_close(db), 0);
	char *tdir = ts_test_path(path, "t");
	read_whole(tdir, TS_DESC_FILE, &b);
	b.data[TS_DESC_HEADER_SIZE + 2] ^= 1;
	write_file(tdir, TS_DESC_FILE, b.data, b.len);
	assert_int_equal(ts_open(path, NULL, &db), 0);
	assert_int_equal(ts_table_open(db, "t", &t), TS_ECORRUPT);
	assert_null(t);
	assert_non_null(strstr(ts_errmsg(NULL), "t/DESCRIPTOR: body checksum mismatch"));
	assert_int_equal(ts_close(db), 0);
	ts__buf_free(&b);
	free(tdir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(descriptor_roundtrip),
		cmocka_unit_test(descriptor_layout_matches_format),
		cmocka_unit_test(descriptor_rejects_flipped_byte),
		cmocka_unit_test(descriptor_rejects_truncation),
		cmocka_unit_test(descriptor_rejects_appended_garbage),
		cmocka_unit_test(descriptor_future_version),
		cmocka_unit_test(descriptor_horizon_roundtrip),
		cmocka_unit_test(descriptor_policy_roundtrip),
		cmocka_unit_test(descriptor_versions_roundtrip),
		cmocka_unit_test(descriptor_tombstones_roundtrip),
		cmocka_unit_test(descriptor_change_records),
		cmocka_unit_test(descriptor_rejects_bad_body_with_valid_crc),
		cmocka_unit_test(descriptor_rejects_truncated_tablet_section),
		cmocka_unit_test(descriptor_rejects_incompatible_versions),
		cmocka_unit_test(descriptor_encode_refuses_oversized),
		cmocka_unit_test_setup_teardown(descriptor_write_read, setup_dir, teardown_dir),
		cmocka_unit_test_setup_teardown(descriptor_crash_between_stage_and_rename,
		                                setup_dir, teardown_dir),
		cmocka_unit_test_setup_teardown(descriptor_crash_in_child_keeps_old,
		                                setup_dir, teardown_dir),
		cmocka_unit_test_setup_teardown(descriptor_garbage_tmp_ignored, setup_dir, teardown_dir),
		cmocka_unit_test_setup_teardown(descriptor_read_damaged_file, setup_dir, teardown_dir),
		cmocka_unit_test_setup_teardown(descriptor_write_refuses_oversized,
		                                setup_dir, teardown_dir),
		cmocka_unit_test_setup_teardown(descriptor_public_stale_tmp_ignored,
		                                setup_dir, teardown_dir),
		cmocka_unit_test_setup_teardown(descriptor_public_damaged_descriptor,
		                                setup_dir, teardown_dir),
	};
	return cmocka_run_group_tests_name("descriptor", tests, NULL, NULL);
}
