/*
 * descriptor.c -- encoding, decoding, reading and writing DESCRIPTOR files
 * (docs/descriptor-format.md).
 *
 * Decoding checks, in order: the size, the magic, the header CRC, the
 * format version, the body length and CRC, then every record, and that
 * each schema version may follow the one before it (same key, columns
 * only appended, only int32 widened to int64); anything wrong is
 * TS_ECORRUPT with a message saying which check failed, so the caller
 * never sees a half-read descriptor.  Tablet records carry their own
 * length so that later versions may append fields that older readers skip.
 *
 * Encoding refuses a descriptor larger than TS_DESCRIPTOR_MAX, the most a
 * reader accepts, so that a table is never left with a descriptor it
 * cannot read back.
 *
 * Version 2 appends the expiry horizon to the body of version 1; a
 * descriptor without a horizon is still written as version 1, byte for
 * byte as before, so older builds read every table whose TTL was never
 * lengthened (ts__alter_ttl is what sets a horizon).  Version 3 appends
 * the horizon (TS_DESC_NO_HORIZON when there is none) and the duplicate
 * policy; it is written only for a policy other than reject, so tables
 * that keep the default stay readable by builds that predate policies.
 * Version 4 has version 3's body, each tablet record carrying its version
 * interval [lo, hi] after its source (84 bytes); it is written only when
 * some tablet has an interval other than [0, 0], so tables that hold
 * only tablets written before versions existed stay readable by older
 * builds (docs/corrections.md section 1).  Version 5 has version 4's body
 * then a byte of flags (TS_DESC_REPLACED: the table may hold replaced
 * rows; TS_DESC_TOMBSTONES_LOGGED: the log may hold tombstones) and the
 * tombstones a flush moved here from the log (tombstone.h), oldest
 * first; it is written only when a flag is set or a tombstone is listed,
 * and only it may hold the policy replace.  Version 6 has version 5's
 * body then the changes horizon (its version and ts range) and the change
 * records of the deletes whose tombstones left (laid out as tombstone
 * records; docs/corrections.md section 4), oldest first; it is written
 * only when a record is kept or the horizon is set (a table that has
 * retired a delete), so builds that would not report those deletes in
 * ts_changes_open refuse the table instead.
 */
#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "crc32c.h"
#include "descriptor.h"
#include "descriptor_format.h"
#include "error.h"
#include "fsutil.h"
#include "tslimits.h"

void ts__descriptor_free(ts__descriptor *d, int owns_schemas)
{
	if (!d)
		return;
	for (int i = 0; owns_schemas && i < d->nschemas; i++)
		ts__schema_free(d->schemas[i]);
	free(d->schemas);
	free(d->tablets);
	ts__tombs_free(d->tombs, d->ntombs);
	ts__tombs_free(d->chrecs, d->nchrecs);
	free(d);
}

int ts__descriptor_add_tomb(ts__descriptor *d, const ts__tomb *tomb)
{
	if (ts__tombs_have(d->tombs, d->ntombs, tomb->version))
		return 0;
	ts__tomb *g = realloc(d->tombs, (size_t)(d->ntombs + 1) * sizeof *g);
	if (!g)
		return ts__fail(TS_ENOMEM, "out of memory");
	d->tombs = g;
	int at = d->ntombs;
	while (at > 0 && g[at - 1].version > tomb->version)
		at--;
	ts__tomb c;
	int rc = ts__tomb_copy(&c, tomb);
	if (rc < 0)
		return rc;
	c.lsn = 0;
	memmove(&g[at + 1], &g[at], (size_t)(d->ntombs - at) * sizeof *g);
	g[at] = c;
	d->ntombs++;
	return 0;
}

void ts__descriptor_drop_tomb(ts__descriptor *d, int i)
{
	ts__tomb_free(&d->tombs[i]);
	memmove(&d->tombs[i], &d->tombs[i + 1], (size_t)(d->ntombs - i - 1) * sizeof *d->tombs);
	d->ntombs--;
}

int ts__chrecs_max = TS_CHANGE_RECORDS_MAX;

/* Add a copy of rec to d's change records (version order) unless d has
 * one of its version; without its key box when erase_keys.  Then drop
 * the oldest past ts__chrecs_max into the horizon. */
static int add_chrec(ts__descriptor *d, const ts__tomb *rec, int erase_keys)
{
	if (ts__tombs_have(d->chrecs, d->nchrecs, rec->version) || rec->version <= d->ch_horizon)
		return 0;
	ts__tomb *g = realloc(d->chrecs, (size_t)(d->nchrecs + 1) * sizeof *g);
	if (!g)
		return ts__fail(TS_ENOMEM, "out of memory");
	d->chrecs = g;
	ts__tomb c;
	int rc = ts__tomb_copy(&c, rec);
	if (rc < 0)
		return rc;
	c.lsn = 0;
	if (erase_keys) {
		c.flags = 0;
		c.lolen = c.hilen = 0;
		c.lo = c.hi = c.mem;
	}
	int at = d->nchrecs;
	while (at > 0 && g[at - 1].version > rec->version)
		at--;
	memmove(&g[at + 1], &g[at], (size_t)(d->nchrecs - at) * sizeof *g);
	g[at] = c;
	d->nchrecs++;
	/* past the count, or past the key bytes (so that the descriptor
	 * stays small whatever the keys: TS_KEY_MAX is 4 KiB a bound) */
	size_t bytes = 0;
	for (int i = 0; i < d->nchrecs; i++)
		bytes += (size_t)d->chrecs[i].lolen + d->chrecs[i].hilen;
	int drop = d->nchrecs - (ts__chrecs_max > 0 ? ts__chrecs_max : 0);
	drop = drop > 0 ? drop : 0;
	for (int i = 0; i < drop; i++)
		bytes -= (size_t)d->chrecs[i].lolen + d->chrecs[i].hilen;
	while (drop < d->nchrecs && bytes > TS_CHANGE_RECORDS_KEY_BYTES) {
		bytes -= (size_t)d->chrecs[drop].lolen + d->chrecs[drop].hilen;
		drop++;
	}
	for (int i = 0; i < drop; i++) {
		const ts__tomb *o = &d->chrecs[i];
		if (!d->ch_horizon) {
			d->ch_tmin = o->tmin;
			d->ch_tmax = o->tmax;
		} else {
			d->ch_tmin = o->tmin < d->ch_tmin ? o->tmin : d->ch_tmin;
			d->ch_tmax = o->tmax > d->ch_tmax ? o->tmax : d->ch_tmax;
		}
		d->ch_horizon = o->version > d->ch_horizon ? o->version : d->ch_horizon;
		ts__tomb_free(&d->chrecs[i]);
	}
	if (drop > 0) {
		memmove(d->chrecs, d->chrecs + drop, (size_t)(d->nchrecs - drop) * sizeof *g);
		d->nchrecs -= drop;
	}
	return 0;
}

int ts__descriptor_retire_tomb(ts__descriptor *d, int i, int erase_keys)
{
	int rc = add_chrec(d, &d->tombs[i], erase_keys);
	ts__descriptor_drop_tomb(d, i);
	return rc;
}

void ts__descriptor_erase_chrec_keys(ts__descriptor *d, const ts__tomb *box)
{
	if (!box)
		return;
	ts__tomb keys = *box; /* the key range alone, whatever its times */
	keys.tmin = INT64_MIN;
	keys.tmax = INT64_MAX;
	for (int i = 0; i < d->nchrecs; i++) {
		ts__tomb *x = &d->chrecs[i];
		if (ts__tomb_meets(&keys, x->flags & TS_TOMB_LO ? x->lo : NULL, x->lolen,
		                   x->flags & TS_TOMB_HI ? x->hi : NULL, x->hilen, x->tmin, x->tmax)) {
			x->flags = 0;
			x->lolen = x->hilen = 0; /* the bytes stay in memory only */
		}
	}
}

int ts__descriptor_clone(const ts__descriptor *d, ts__descriptor **out)
{
	ts__descriptor *c = calloc(1, sizeof *c);
	*out = NULL;
	if (!c)
		return ts__fail(TS_ENOMEM, "out of memory");
	*c = *d;
	c->tombs = NULL; /* copied below */
	c->ntombs = 0;
	c->chrecs = NULL;
	c->nchrecs = 0;
	c->schemas = calloc((size_t)d->nschemas + 1, sizeof *c->schemas);
	c->tablets = calloc((size_t)d->ntablets + 1, sizeof *c->tablets);
	if (!c->schemas || !c->tablets) {
		ts__descriptor_free(c, 0);
		return ts__fail(TS_ENOMEM, "out of memory");
	}
	memcpy(c->schemas, d->schemas, (size_t)d->nschemas * sizeof *c->schemas);
	for (int i = 0; i < d->ntombs; i++)
		if (ts__descriptor_add_tomb(c, &d->tombs[i]) < 0) {
			ts__descriptor_free(c, 0);
			return TS_ENOMEM;
		}
	if (d->nchrecs && !(c->chrecs = calloc((size_t)d->nchrecs, sizeof *c->chrecs))) {
		ts__descriptor_free(c, 0);
		return ts__fail(TS_ENOMEM, "out of memory");
	}
	for (int i = 0; i < d->nchrecs; i++, c->nchrecs++)
		if (ts__tomb_copy(&c->chrecs[i], &d->chrecs[i]) < 0) {
			ts__descriptor_free(c, 0);
			return TS_ENOMEM;
		}
	if (d->ntablets)
		memcpy(c->tablets, d->tablets, (size_t)d->ntablets * sizeof *c->tablets);
	*out = c;
	return 0;
}

static void encode_tablet(ts_buf *b, const ts__tablet_meta *t, uint32_t version)
{
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
	if (version >= TS_DESC_VERSION_INTERVALS) {
		ts__put_u64(&rec, t->lo);
		ts__put_u64(&rec, t->hi);
	}
	b->oom |= rec.oom;
	ts__put_bytes(b, rec.data, rec.len);
	ts__buf_free(&rec);
}

/* The oldest format version that holds d (descriptor_format.h). */
static uint32_t desc_version(const ts__descriptor *d)
{
	if (d->nchrecs || d->ch_horizon)
		return TS_DESC_VERSION_CHANGES;
	if (d->flags || d->ntombs)
		return TS_DESC_VERSION_CORRECTIONS;
	for (int i = 0; i < d->ntablets; i++)
		if (d->tablets[i].lo || d->tablets[i].hi)
			return TS_DESC_VERSION_INTERVALS;
	if (d->on_duplicate != TS_ON_DUPLICATE_REJECT)
		return TS_DESC_VERSION_POLICY;
	return d->horizon_set ? TS_DESC_VERSION_HORIZON : TS_DESC_VERSION_MIN;
}

int ts__descriptor_encode(const ts__descriptor *d, ts_buf *b)
{
	unsigned char header[TS_DESC_HEADER_SIZE] = {0};
	size_t start = b->len;
	ts__put(b, header, sizeof header); /* filled in below */
	ts__put_u64(b, d->generation);
	ts__put_u64(b, (uint64_t)d->ttl);
	ts__put_u64(b, d->flushed_lsn);
	ts__put_u64(b, d->next_tablet_id);
	ts__put_u32(b, (uint32_t)d->nschemas);
	for (int i = 0; i < d->nschemas; i++)
		ts__schema_encode(d->schemas[i], b);
	uint32_t version = desc_version(d);
	ts__put_u32(b, (uint32_t)d->ntablets);
	for (int i = 0; i < d->ntablets; i++)
		encode_tablet(b, &d->tablets[i], version);
	if (version >= TS_DESC_VERSION_HORIZON)
		ts__put_u64(b, (uint64_t)(d->horizon_set ? d->horizon : TS_DESC_NO_HORIZON));
	if (version >= TS_DESC_VERSION_POLICY)
		ts__put_u8(b, (uint8_t)d->on_duplicate);
	if (version >= TS_DESC_VERSION_CORRECTIONS) {
		ts__put_u8(b, (uint8_t)d->flags);
		ts__put_u32(b, (uint32_t)d->ntombs);
		for (int i = 0; i < d->ntombs; i++)
			ts__tomb_encode(b, &d->tombs[i]);
	}
	if (version >= TS_DESC_VERSION_CHANGES) {
		ts__put_u64(b, d->ch_horizon);
		ts__put_u64(b, (uint64_t)d->ch_tmin);
		ts__put_u64(b, (uint64_t)d->ch_tmax);
		ts__put_u32(b, (uint32_t)d->nchrecs);
		for (int i = 0; i < d->nchrecs; i++)
			ts__tomb_encode(b, &d->chrecs[i]);
	}
	if (b->oom)
		return ts__fail(TS_ENOMEM, "out of memory encoding a descriptor");
	if (b->len - start > TS_DESCRIPTOR_MAX) {
		size_t n = b->len - start;
		b->len = start;
		return ts__fail(TS_ETOOBIG, "descriptor of %zu bytes (%d schema versions, %d tablets) exceeds the limit of %u bytes",
		                n, d->nschemas, d->ntablets, TS_DESCRIPTOR_MAX);
	}
	unsigned char *h = b->data + start, *body = h + TS_DESC_HEADER_SIZE;
	size_t body_len = b->len - start - TS_DESC_HEADER_SIZE;
	assert(body_len <= UINT32_MAX); /* TS_DESCRIPTOR_MAX keeps it in a u32 */
	memcpy(h + TS_DESC_OFF_MAGIC, TS_DESC_MAGIC, TS_DESC_MAGIC_SIZE);
	ts__store_u32(h + TS_DESC_OFF_VERSION, version);
	ts__store_u32(h + TS_DESC_OFF_BODY_LEN, (uint32_t)body_len);
	ts__store_u32(h + TS_DESC_OFF_BODY_CRC, ts__crc32c(0, body, body_len));
	ts__store_u32(h + TS_DESC_OFF_HEADER_CRC, ts__crc32c(0, h, TS_DESC_OFF_HEADER_CRC));
	return 0;
}

/* Check the header; on success *body and *len describe the body. */
static int check_header(const unsigned char *p, size_t n,
                        const unsigned char **body, size_t *len, uint32_t *version)
{
	if (n < TS_DESC_HEADER_SIZE)
		return ts__fail(TS_ECORRUPT, "truncated: %zu bytes, shorter than the header", n);
	if (memcmp(p + TS_DESC_OFF_MAGIC, TS_DESC_MAGIC, TS_DESC_MAGIC_SIZE) != 0)
		return ts__fail(TS_ECORRUPT, "bad magic: not a tsstore descriptor");
	if (ts__load_u32(p + TS_DESC_OFF_HEADER_CRC) != ts__crc32c(0, p, TS_DESC_OFF_HEADER_CRC))
		return ts__fail(TS_ECORRUPT, "header checksum mismatch");
	*version = ts__load_u32(p + TS_DESC_OFF_VERSION);
	if (*version < TS_DESC_VERSION_MIN || *version > TS_DESC_VERSION_MAX)
		return ts__fail(TS_EVERSION, "format version %u; this build reads versions %d to %d",
		                *version, TS_DESC_VERSION_MIN, TS_DESC_VERSION_MAX);
	*len = ts__load_u32(p + TS_DESC_OFF_BODY_LEN);
	if (*len != n - TS_DESC_HEADER_SIZE)
		return ts__fail(TS_ECORRUPT, "body length %zu does not match the file (%zu bytes)",
		                *len, n - TS_DESC_HEADER_SIZE);
	*body = p + TS_DESC_HEADER_SIZE;
	if (ts__load_u32(p + TS_DESC_OFF_BODY_CRC) != ts__crc32c(0, *body, *len))
		return ts__fail(TS_ECORRUPT, "body checksum mismatch");
	return 0;
}

static int decode_schemas(ts_reader *r, ts__descriptor *d)
{
	uint32_t n = ts__get_u32(r);
	if (r->bad || n < 1 || n > TS_SCHEMA_VERSIONS_MAX)
		return ts__fail(TS_ECORRUPT, "bad schema count %u", n);
	if (!(d->schemas = calloc(n, sizeof *d->schemas)))
		return ts__fail(TS_ENOMEM, "out of memory");
	for (uint32_t i = 0; i < n; i++) {
		int rc = ts__schema_decode(r, &d->schemas[i]);
		if (rc < 0)
			return rc;
		d->nschemas++;
		if (d->schemas[i]->version != i + 1)
			return ts__fail(TS_ECORRUPT, "schema %u has version %u", i + 1,
			                d->schemas[i]->version);
		if (i > 0 && (rc = ts__schema_check_successor(d->schemas[i - 1], d->schemas[i])) < 0)
			return rc;
	}
	return 0;
}

static int decode_tablets(ts_reader *r, uint32_t version, ts__descriptor *d)
{
	uint32_t n = ts__get_u32(r);
	if (r->bad || n > ts__reader_left(r))
		return ts__fail(TS_ECORRUPT, "bad tablet count %u", n);
	if (!(d->tablets = calloc((size_t)n + 1, sizeof *d->tablets)))
		return ts__fail(TS_ENOMEM, "out of memory");
	for (uint32_t i = 0; i < n; i++) {
		const void *p;
		size_t len;
		ts_reader rec;
		ts__tablet_meta *t = &d->tablets[i];
		ts__get_bytes(r, &p, &len);
		if (r->bad) /* p is NULL: not even an empty record to read */
			return ts__fail(TS_ECORRUPT, "tablet record %u is truncated", i);
		ts__reader_init(&rec, p, len);
		t->id = ts__get_u64(&rec);
		t->schema_version = ts__get_u32(&rec);
		t->period_start = (int64_t)ts__get_u64(&rec);
		t->period_end = (int64_t)ts__get_u64(&rec);
		t->min_ts = (int64_t)ts__get_u64(&rec);
		t->max_ts = (int64_t)ts__get_u64(&rec);
		t->rows = ts__get_u64(&rec);
		t->bytes = ts__get_u64(&rec);
		if (ts__reader_left(&rec) > 0) /* absent in the first, 60-byte records */
			t->source = ts__get_u64(&rec);
		if (version >= TS_DESC_VERSION_INTERVALS) { /* every record of 4 and 5 has them */
			t->lo = ts__get_u64(&rec);
			t->hi = ts__get_u64(&rec);
		}
		if (rec.bad || t->schema_version < 1 ||
		    t->schema_version > (uint32_t)d->nschemas)
			return ts__fail(TS_ECORRUPT, "tablet record %u is malformed", i);
		if (t->lo > t->hi)
			return ts__fail(TS_ECORRUPT, "tablet record %u: version interval [%llu, %llu] ends "
			                "before it begins", i, (unsigned long long)t->lo,
			                (unsigned long long)t->hi);
		d->ntablets++;
	}
	return 0;
}

/* Version 6's changes horizon and change records (laid out as
 * tombstone records), oldest version first, all newer than the horizon. */
static int decode_chrecs(ts_reader *r, ts__descriptor *d)
{
	d->ch_horizon = ts__get_u64(r);
	d->ch_tmin = (int64_t)ts__get_u64(r);
	d->ch_tmax = (int64_t)ts__get_u64(r);
	uint32_t n = ts__get_u32(r);
	if (r->bad)
		return ts__fail(TS_ECORRUPT, "the changes horizon or the change record count is "
		                "truncated");
	if (d->ch_horizon && d->ch_tmin > d->ch_tmax)
		return ts__fail(TS_ECORRUPT, "the changes horizon's time range ends before it begins");
	if (n > ts__reader_left(r))
		return ts__fail(TS_ECORRUPT, "bad change record count %u", n);
	if (n && !(d->chrecs = calloc(n, sizeof *d->chrecs)))
		return ts__fail(TS_ENOMEM, "out of memory");
	for (uint32_t i = 0; i < n; i++) {
		int rc = ts__tomb_decode(r, (int)i, &d->chrecs[i]);
		if (rc < 0)
			return ts__context(rc, "change records");
		d->nchrecs++;
		if (d->chrecs[i].version <= (i ? d->chrecs[i - 1].version : d->ch_horizon))
			return ts__fail(TS_ECORRUPT, "change record %u is not newer than the %s", i,
			                i ? "one before" : "changes horizon");
	}
	return 0;
}

/* What versions 2 to 5 append to the tablet records: the horizon (in
 * versions 3 to 5, TS_DESC_NO_HORIZON for none), then the policy of
 * versions 3 to 5, then version 5's flags and tombstones. */
static int decode_tail(ts_reader *r, uint32_t version, ts__descriptor *d)
{
	d->horizon = (int64_t)ts__get_u64(r);
	d->horizon_set = version == TS_DESC_VERSION_HORIZON || d->horizon != TS_DESC_NO_HORIZON;
	if (r->bad)
		return ts__fail(TS_ECORRUPT, "the expiry horizon is truncated");
	if (version < TS_DESC_VERSION_POLICY)
		return 0;
	uint8_t policy = ts__get_u8(r);
	if (r->bad)
		return ts__fail(TS_ECORRUPT, "the duplicate policy is truncated");
	if (policy > (version >= TS_DESC_VERSION_CORRECTIONS ? TS_DESC_POLICY_MAX_V5
	                                                     : TS_DESC_POLICY_MAX))
		return ts__fail(TS_ECORRUPT, "unknown duplicate policy %u in format version %u",
		                policy, version);
	d->on_duplicate = (ts_on_duplicate)policy;
	if (version < TS_DESC_VERSION_CORRECTIONS)
		return 0;
	uint8_t flags = ts__get_u8(r);
	uint32_t n = ts__get_u32(r);
	if (r->bad)
		return ts__fail(TS_ECORRUPT, "the flags or the tombstone count is truncated");
	if (flags & ~TS_DESC_FLAGS_KNOWN)
		return ts__fail(TS_EVERSION, "unknown descriptor flags 0x%02x; this build knows 0x%02x",
		                flags, TS_DESC_FLAGS_KNOWN);
	if (policy == TS_ON_DUPLICATE_REPLACE && !(flags & TS_DESC_REPLACED))
		return ts__fail(TS_ECORRUPT, "the policy is replace but the table is not marked as "
		                "holding replaced rows");
	if (n > ts__reader_left(r))
		return ts__fail(TS_ECORRUPT, "bad tombstone count %u", n);
	d->flags = flags;
	if (n && !(d->tombs = calloc(n, sizeof *d->tombs)))
		return ts__fail(TS_ENOMEM, "out of memory");
	for (uint32_t i = 0; i < n; i++) {
		int rc = ts__tomb_decode(r, (int)i, &d->tombs[i]);
		if (rc < 0)
			return rc;
		d->ntombs++;
		if (i > 0 && d->tombs[i].version <= d->tombs[i - 1].version)
			return ts__fail(TS_ECORRUPT, "tombstone record %u is not newer than the one before",
			                i);
	}
	return version < TS_DESC_VERSION_CHANGES ? 0 : decode_chrecs(r, d);
}

int ts__descriptor_decode(const void *p, size_t n, ts__descriptor **out)
{
	const unsigned char *body = NULL;
	size_t len = 0;
	ts_reader r;
	ts__descriptor *d = NULL;
	uint32_t version = 0;
	int rc;
	*out = NULL;
	if ((rc = check_header(p, n, &body, &len, &version)) < 0)
		return rc;
	if (!(d = calloc(1, sizeof *d)))
		return ts__fail(TS_ENOMEM, "out of memory");
	ts__reader_init(&r, body, len);
	d->generation = ts__get_u64(&r);
	d->ttl = (int64_t)ts__get_u64(&r);
	d->flushed_lsn = ts__get_u64(&r);
	d->next_tablet_id = ts__get_u64(&r);
	if (r.bad || d->ttl < 0)
		rc = ts__fail(TS_ECORRUPT, "bad body header");
	if (rc == 0)
		rc = decode_schemas(&r, d);
	if (rc == 0)
		rc = decode_tablets(&r, version, d);
	if (rc == 0 && version >= TS_DESC_VERSION_HORIZON)
		rc = decode_tail(&r, version, d);
	if (rc == 0 && ts__reader_left(&r) != 0)
		rc = ts__fail(TS_ECORRUPT, "%zu bytes of trailing garbage", ts__reader_left(&r));
	if (rc < 0) {
		ts__descriptor_free(d, 1);
		return rc;
	}
	*out = d;
	return 0;
}

int ts__descriptor_read(const char *dir, ts__descriptor **out)
{
	char path[TS_PATH_MAX];
	void *data;
	size_t n;
	int rc;
	*out = NULL;
	if ((rc = ts__path(path, "%s/%s", dir, TS_DESC_FILE)) < 0)
		return rc;
	if ((rc = ts__read_file(path, TS_DESCRIPTOR_MAX, &data, &n)) < 0)
		return rc == TS_ETOOBIG ? ts__context(TS_ECORRUPT, "descriptor") : rc;
	rc = ts__descriptor_decode(data, n, out);
	free(data);
	return rc < 0 ? ts__context(rc, "%s", path) : 0;
}

int ts__descriptor_write(const char *dir, const ts__descriptor *d)
{
	ts_buf b;
	int rc;
	ts__buf_init(&b);
	rc = ts__descriptor_encode(d, &b);
	if (rc == 0)
		rc = ts__file_write_atomic(dir, TS_DESC_FILE, b.data, b.len);
	ts__buf_free(&b);
	return rc;
}
