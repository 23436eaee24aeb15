/*
 * merge.c -- what happens to on-disk tablets after their flush: merging
 * the tablets of one period (LittleTable's rule, SIGMOD 2017 appendix) as
 * a single-pass k-way merge, and deleting tablets past the TTL.
 *
 * Periods are taken as they are now, not as they were at flush time:
 * yesterday's 4-hour tablets all fall in yesterday's day period today, so
 * the roll-over of periods is simply that they start merging together.
 * Such a roll-over merge waits a pseudo-random delay (a hash of the table
 * and the period, below the merge_rollover_spread setting) after the
 * moment the period grew, so that the periods of many tables do not all
 * merge at midnight.  A freshly flushed tablet waits merge_delay before it merges:
 * the next flush of its period will likely merge with it -- unless its
 * period is behind, holding more tablets than LittleTable's rule leaves
 * (ts__merge_bound: about log2 of the period's bytes over its smallest
 * tablet, plus the tablets too large to merge): then the rule merges at
 * once, so that under a sustained load the tablets a read visits stay
 * logarithmic in the data rather than growing with the flushes of the
 * last merge_delay.
 *
 * A period's tablets are merged in version order (by the hi of their
 * version intervals, docs/corrections.md section 1), the order they were
 * flushed in, which is LittleTable's rule as the paper states it: a
 * merge takes tablets consecutive in that order, and its output's
 * interval, the union of its inputs', then holds no other tablet's.  Were
 * they taken in min_ts order, as before versions, late rows flushed last
 * (a newer tablet with an older min_ts) would sit between two older
 * tablets, a merge could join the oldest and the newest around a middle
 * one, and the output would claim versions both older and newer than
 * the middle tablet's rows: "which source is newer" -- what replacing
 * writes and tombstones resolve by -- would have no answer.  Keeping the
 * intervals of tablets that may share a key disjoint (invariant V) is
 * what ts_check verifies.  Version order alone does not keep it across a
 * roll-over: tablets of 4-hour periods that filled side by side
 * interleave in versions, and tomorrow they share the day period; so a
 * group whose output would overlap another tablet it shares time with
 * grows to take that tablet in, or is passed over (keeps_v).  The sizes
 * rule (ts__merge_pick) and the delays are as they were.
 *
 * A merge: (1) under the table mutex, pick a group and reserve a tablet
 * id; (2) without it, merge the inputs' rows in key order into the new
 * tablet (temporary name, fsync, rename, fsync of the directory),
 * dropping rows past the TTL; (3) under desc_mu (tabledesc.h: inserts go on),
 * install a DESCRIPTOR naming the output instead of the inputs (if all
 * are still named), then unlink and retire the inputs.  A crash before (3) leaves an output no
 * descriptor names; a crash after it, inputs no descriptor names: the
 * next writer's open removes either (table.c).  Readers that opened an
 * input keep reading it through its open descriptor; readers that had
 * not retry (snapshot.c).  Step (2) takes an input block from the block
 * cache when it is there (no read, no decompression) and caches each
 * output block that received a row of such a block, under the serial
 * the output will be opened with (ts__table_tablet_serial): readers'
 * warm blocks stay warm across the swap.  When the table was queried
 * lately (asked again between slices), as for a flush, the other
 * output blocks go into the cache's spare room too: a merge yields to reads and may take minutes, and
 * blocks readers cache in the inputs after the merge passed them would
 * otherwise be cold in its output; and blocks it cut before the table
 * was first read are read back into spare room before the publish
 * (warm_output).
 *
 * When merges run is the maintenance scheduler's business (maint.c): it
 * asks ts__merge_next for the size of each table's next merge, makes the
 * smallest first, and hands in a yield callback that step (2) calls
 * between slices of merge_slice_rows rows -- there the scheduler runs
 * any flush that fell due and keeps a background merge within its budget
 * (SILK, USENIX ATC 2019: clients first).  This file knows nothing of
 * other tables or of time.  merge_mu makes merges of one table one at a
 * time; the background takes it only if free.
 *
 * In a table that may hold replaced rows (TS_DESC_REPLACED) the inputs
 * may share keys: of each key only the row of the newest input -- the
 * greatest lo, the inputs being consecutive in version order; ts__newer --
 * is
 * written, and the others are dropped (resolve).  Rows of the key in
 * tablets older than the run stay shadowed by the output, whose lo is
 * still newer than theirs.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "backoff.h"
#include "buf.h"
#include "descriptor_format.h"
#include "error.h"
#include "fsutil.h"
#include "handle.h"
#include "held.h"
#include "key.h"
#include "merge.h"
#include "period.h"
#include "row.h"
#include "tabledesc.h"
#include "tablet.h"
#include "tablet_format.h"
#include "tablets.h"

int ts__merge_pick(const uint64_t *sizes, int n, uint64_t max, int *first)
{
	for (int i = 0; i + 1 < n; i++) {
		uint64_t total = sizes[i] + sizes[i + 1];
		if (sizes[i] > 2 * sizes[i + 1] || total > max)
			continue;
		int k = 2;
		while (i + k < n && total + sizes[i + k] <= max)
			total += sizes[i + k++];
		*first = i;
		return k;
	}
	return 0;
}

/* ---- when a tablet may merge ---- */

void ts__merge_note_flush(ts_table *t, uint64_t id, int64_t now)
{
	TS_ASSERT_HELD(&t->mu);
	if (t->nrecent == TS_MERGE_RECENT_MAX) /* forget the oldest early */
		memmove(t->recent, t->recent + 1, (TS_MERGE_RECENT_MAX - 1) * sizeof *t->recent);
	else
		t->nrecent++;
	t->recent[t->nrecent - 1].id = id;
	t->recent[t->nrecent - 1].at = now;
}

/* Whether tablet id was flushed at least merge_delay ago; t->mu held. */
static int settled(const ts_table *t, uint64_t id, int64_t now)
{
	TS_ASSERT_HELD(&t->mu);
	for (int i = 0; i < t->nrecent; i++)
		if (t->recent[i].id == id && now - t->recent[i].at < t->db->opts.merge_delay)
			return 0;
	return 1;
}

/* When the period of a tablet written for a shorter one grew to len: a
 * day's 4-hour periods join the day when the next day begins; days join
 * their week when they leave the last TS_PERIOD_RECENT_DAYS (period.h). */
static int64_t rolled_at(const ts__tablet_meta *m, int64_t len)
{
	int64_t day = ts__floor_div(m->min_ts, TS_PERIOD_DAY);
	return (day + (len == TS_PERIOD_DAY ? 1 : TS_PERIOD_RECENT_DAYS)) * TS_PERIOD_DAY;
}

/* The roll-over delay of the period starting at start: FNV-1a of the
 * table name and start, below the merge_rollover_spread setting. */
static int64_t jitter(const ts_table *t, int64_t start)
{
	unsigned char le[8];
	ts__store_u64(le, (uint64_t)start);
	uint64_t h = ts__fnv1a(ts__fnv1a(TS_FNV1A_BASIS, t->name, strlen(t->name)), le, sizeof le);
	return (int64_t)(h % (uint64_t)t->db->opts.merge_rollover_spread);
}

/* One tablet with the period it belongs to now. */
struct placed {
	ts__tablet_meta m;
	int64_t start, len;
};

/* Period, then version order: by hi, the tablets written before
 * versions existed ([0, 0]) first, by id (their flush order, and they
 * share no key among them). */
static int by_period_then_version(const void *a, const void *b)
{
	const struct placed *x = a, *y = b;
	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	if (x->m.hi != y->m.hi)
		return x->m.hi < y->m.hi ? -1 : 1;
	return x->m.id < y->m.id ? -1 : x->m.id > y->m.id;
}

/* Whether p may merge now; strict: honour the delays; behind: its
 * period holds more tablets than LittleTable's rule leaves (behind()),
 * so merge_delay is not waited for (the roll-over delay still is). */
static int ready(const ts_table *t, const struct placed *p, int64_t now, int strict, int behind)
{
	if (!strict)
		return 1;
	if (!behind && !settled(t, p->m.id, now))
		return 0;
	if (p->m.period_end - p->m.period_start == p->len)
		return 1;
	return now >= rolled_at(&p->m, p->len) + jitter(t, p->start);
}

int ts__merge_bound(const uint64_t *sizes, int n, uint64_t max)
{
	uint64_t bytes = 0, least = 0;
	int small = 0, bound = 1;
	for (int i = 0; i < n; i++)
		if (sizes[i] <= max / 2) {
			small++;
			bytes += sizes[i];
			least = !least || sizes[i] < least ? sizes[i] : least;
		}
	if (!small)
		return n;
	while (bound < 64 && (least << bound) <= bytes) /* floor(log2(bytes / least)) + 1 */
		bound++;
	return n - small + bound + 1;
}

/* Whether the period of all[0..n) (one period's tablets, version order)
 * is behind: it holds more tablets than ts__merge_bound allows, as it
 * does when tablets are flushed faster than merge_delay lets them merge
 * -- a sustained load flushes every second or so, and a 90 s delay would
 * leave a read ninety tablets to visit.  Then its merges are made at
 * once, by the same sizes rule: the delay only spares a quiet period a
 * merge its next flush would make again. */
static int behind(const ts_table *t, const struct placed *all, int n)
{
	uint64_t sizes[n];
	for (int i = 0; i < n; i++)
		sizes[i] = all[i].m.bytes;
	return n > ts__merge_bound(sizes, n, (uint64_t)t->db->opts.merge_max_size);
}

/* ---- choosing ---- */

struct plan {
	int n;
	ts__tablet_meta *in;        /* oldest version first */
	int64_t period_start, period_len;
	uint64_t id;
	const ts__schema **versions;
	int nversions;
	uint64_t bytes;             /* of the inputs */
	int64_t expiry;             /* rows with ts below it are dropped */
	int replaced;               /* inputs may share keys (TS_DESC_REPLACED) */
	int background;             /* chosen by the scheduler: honours the delays */
	const ts__merge_yield *yield; /* between slices; NULL: never */
	/* The tombstones in force when the merge was planned (copies): an
	 * input's rows that one newer than the input's hi hides are dropped
	 * (docs/corrections.md section 3), so that the output, whose hi may
	 * be newer than such a tombstone, holds none it should hide. */
	ts__tomb *tombs;
	int ntombs;
};

/* Whether the timespans [a0, a1] and [b0, b1] meet: then the sources
 * they describe may hold a common key. */
static int spans_meet(int64_t a0, int64_t a1, int64_t b0, int64_t b1)
{
	return a0 <= b1 && b0 <= a1;
}

/* The index in all[0..n) of the tablet named id, or -1. */
static int index_of(const struct placed *all, int n, uint64_t id)
{
	for (int i = 0; i < n; i++)
		if (all[i].m.id == id)
			return i;
	return -1;
}

/*
 * Make the group all[*first .. *first + *k) keep invariant V once merged:
 * its output takes the union of the inputs' intervals and of their
 * timespans, which may meet a tablet outside the group whose interval it
 * then overlaps -- consecutive in version order is not enough when a
 * period's tablets come from periods that were finer when they filled
 * (today's 4-hour trees fill side by side, so their intervals interleave,
 * and tomorrow they share the day period).  The group grows to take such
 * tablets in, with those between them in version order, while it stays
 * within the run and merge_max_size; and no tree (filling or frozen)
 * whose timespan meets the output's may be born before its hi: the tree
 * holds newer rows of those keys than some input.  Returns 1 when the
 * group is fit to merge, 0 when not.  t->mu is held.
 */
static int keeps_v(const ts_table *t, const struct placed *all, int n, int *first, int *k)
{
	TS_ASSERT_HELD(&t->mu);
	const ts__descriptor *d = t->desc;
	uint64_t max = (uint64_t)t->db->opts.merge_max_size;
	for (int grown = 1; grown;) {
		uint64_t lo = UINT64_MAX, hi = 0, bytes = 0;
		int64_t min_ts = INT64_MAX, max_ts = INT64_MIN;
		for (int i = *first; i < *first + *k; i++) {
			lo = all[i].m.lo < lo ? all[i].m.lo : lo;
			hi = all[i].m.hi > hi ? all[i].m.hi : hi;
			min_ts = all[i].m.min_ts < min_ts ? all[i].m.min_ts : min_ts;
			max_ts = all[i].m.max_ts > max_ts ? all[i].m.max_ts : max_ts;
			bytes += all[i].m.bytes;
		}
		if (bytes > max)
			return 0;
		grown = 0;
		for (int i = 0; i < d->ntablets && !grown; i++) {
			const ts__tablet_meta *z = &d->tablets[i];
			if (!z->hi || z->lo > hi || z->hi < lo ||
			    !spans_meet(z->min_ts, z->max_ts, min_ts, max_ts) ||
			    index_of(all + *first, *k, z->id) >= 0) /* one of the group */
				continue;
			int at = index_of(all, n, z->id);
			if (at < 0)
				return 0; /* not ready, or of the run beyond a tablet not ready */
			if (at < *first) {
				*k += *first - at;
				*first = at;
			} else {
				*k = at - *first + 1;
			}
			grown = 1;
		}
		for (int i = 0; i < t->fill.n && !grown && hi; i++) {
			const ts__root *r = &t->fill.work[i];
			if (r->rows && r->born <= hi && spans_meet(r->min_ts, r->max_ts, min_ts, max_ts))
				return 0;
		}
	}
	return 1;
}

/* The group to merge in the run all[0..n) of one period's ready tablets
 * (version order): the first group ts__merge_pick finds that keeps
 * invariant V (keeps_v, which may grow it).  Returns its size (0: none)
 * and sets *first.  t->mu is held. */
static int pick_run(const ts_table *t, const struct placed *all, int n, int *first)
{
	uint64_t sizes[n];
	for (int i = 0; i < n; i++)
		sizes[i] = all[i].m.bytes;
	for (int from = 0; from + 1 < n;) {
		int f, k = ts__merge_pick(sizes + from, n - from,
		                          (uint64_t)t->db->opts.merge_max_size, &f);
		if (k < 2)
			return 0;
		f += from;
		from = f + 1;
		if (keeps_v(t, all, n, &f, &k)) {
			*first = f;
			return k;
		}
	}
	return 0;
}

/* The group to merge in a run, into *p if p holds none yet or a larger
 * one: small merges before large (they cut the tablets a read visits
 * soonest).  Returns 0 (go on to the next run) or an error. */
static int pick_in_run(ts_table *t, const struct placed *all, int n, void *arg)
{
	struct plan *p = arg;
	int first, k = pick_run(t, all, n, &first);
	uint64_t bytes = 0;
	if (k < 2)
		return 0;
	for (int i = 0; i < k; i++)
		bytes += all[first + i].m.bytes;
	if (p->n && bytes >= p->bytes)
		return 0;
	ts__tablet_meta *in = realloc(p->in, (size_t)k * sizeof *in);
	if (!in)
		return ts__fail(TS_ENOMEM, "out of memory");
	for (int i = 0; i < k; i++)
		in[i] = all[first + i].m;
	p->in = in;
	p->n = k;
	p->bytes = bytes;
	p->period_start = all[first].start;
	p->period_len = all[first].len;
	return 0;
}

/* Call fn for each run of ready tablets (strict: honouring the delays)
 * of each period, oldest period first, until it returns non-zero; t->mu
 * is held.  A period's tablets are cut into runs at tablets not yet
 * ready, so a merge never reaches over one.  Returns what fn returned. */
static int for_each_run(ts_table *t, int64_t now, int strict,
                        int (*fn)(ts_table *, const struct placed *, int, void *), void *arg)
{
	TS_ASSERT_HELD(&t->mu);
	const ts__descriptor *d = t->desc;
	int n = d->ntablets, rc = 0;
	struct placed *all = malloc((size_t)(n ? n : 1) * sizeof *all);
	if (!all)
		return ts__fail(TS_ENOMEM, "out of memory");
	for (int i = 0; i < n; i++) {
		all[i].m = d->tablets[i];
		ts__period_of(all[i].m.min_ts, now, &all[i].start, &all[i].len);
	}
	qsort(all, (size_t)n, sizeof *all, by_period_then_version);
	for (int i = 0, end = 0, late = 0; i < n && rc == 0;) {
		if (i >= end) { /* a new period: all[i .. end) */
			for (end = i; end < n && all[end].start == all[i].start; end++)
				;
			late = strict && behind(t, all + i, end - i);
		}
		int j = i;
		while (j < end && ready(t, &all[j], now, strict, late))
			j++;
		if (j - i >= 2)
			rc = fn(t, all + i, j - i, arg);
		i = j > i ? j : i + 1;
	}
	free(all);
	return rc;
}

/* Count the tablets of the group a run would merge first. */
static int count_in_run(ts_table *t, const struct placed *all, int n, void *arg)
{
	int first;
	*(int64_t *)arg += pick_run(t, all, n, &first);
	return 0;
}

int64_t ts__merge_backlog(ts_table *t)
{
	int64_t n = 0;
	return for_each_run(t, ts_now(t->db), 1, count_in_run, &n) < 0 ? -1 : n;
}

/* ---- merging ---- */

/* One input's position: its current row. */
struct source {
	ts__tablet *tab;
	uint64_t hi;       /* the input's newest version (its DESCRIPTOR hi) */
	uint32_t block;
	ts_buf raw;
	ts__cblock *cb;    /* the current block when the cache had it, else NULL */
	int used;          /* cb was used by readers (bcache.h ts__bcache_peek) */
	ts_reader r;
	const void *row, *key;
	size_t len, klen;
	int done;
};

/* Make block s->block the input's current one: the cache's copy when it
 * has one (no read, no decompression, and the rows taken from it keep
 * their output blocks cached), else read. */
static int load(ts_table *t, struct source *s)
{
	ts__bcache *bc = &t->db->bcache;
	ts__cblock_put(bc, s->cb);
	if ((s->cb = ts__bcache_peek(bc, s->tab->serial, s->block, &s->used))) {
		s->block++;
		ts__reader_init(&s->r, s->cb->raw.data, s->cb->raw.len);
		return 0;
	}
	int rc = ts__tablet_read_block(s->tab, s->block++, &s->raw);
	if (rc == 0)
		ts__reader_init(&s->r, s->raw.data, s->raw.len);
	return rc;
}

static int advance(ts_table *t, struct source *s)
{
	for (;;) {
		int rc = ts__tablet_block_next(&s->r, &s->row, &s->len);
		if (rc == 1)
			rc = ts__row_key(s->row, s->len, &s->key, &s->klen);
		else if (rc == 0 && s->block == s->tab->nblocks)
			s->done = 1;
		else if (rc == 0 && (rc = load(t, s)) == 0)
			continue;
		return rc < 0 ? ts__table_damaged(t, s->tab->id, rc) : 0;
	}
}

/* The newest version of src's current row as the output's block index
 * records it (docs/tablet-format.md 4.1): its block's hi when the input
 * has one (format 3; 0 there: rows from before versions), else the
 * input's hi.  The output block's hi is the greatest of its rows'. */
static uint64_t row_hi(const struct source *src)
{
	const ts__tablet *tab = src->tab;
	if (tab->format >= TS_TABLET_VERSION_BLOCK_HI && src->block > 0)
		return tab->blocks[src->block - 1].hi;
	return src->hi;
}

/* Add src's current row to w in the newest schema (translated if need be). */
static int add(const struct plan *p, struct source *src, ts__tablet_writer *w, ts_buf *scratch,
               ts_buf *enc)
{
	const ts__schema *s = p->versions[p->nversions - 1];
	uint32_t v = src->tab->schema_version;
	ts_value vals[TS_COLUMNS_MAX];
	if (v == s->version)
		return ts__tablet_writer_add_hi(w, src->row, src->len, row_hi(src));
	if (v < 1 || (int)v > p->nversions)
		return ts__fail(TS_ECORRUPT, "tablet %s has unknown schema version %u", src->tab->path, v);
	int rc = ts__row_decode(p->versions[v - 1], s, src->row, src->len, vals, scratch);
	enc->len = 0;
	if (rc == 0)
		rc = ts__row_encode(s, vals, enc);
	return rc < 0 ? rc : ts__tablet_writer_add_hi(w, enc->data, enc->len, row_hi(src));
}

/* Between slices: give up if the table is being dropped, else ask the
 * caller's yield callback (the scheduler's: due flushes, the budget). */
static int between_slices(ts_table *t, const struct plan *p)
{
	if (__atomic_load_n(&t->dropping, __ATOMIC_SEQ_CST))
		return ts__fail(TS_ECLOSED, "table \"%s\" is being dropped", t->name);
	return p->yield ? p->yield->fn(p->yield->arg, t) : 0;
}

/* The inputs' current rows of src[*best]'s key: keep the newest input's
 * (the greatest lo, ts__newer) in *best, and move the others past theirs.  Returns 0
 * or an error of advance. */
static int resolve(ts_table *t, const struct plan *p, struct source *src, int *best)
{
	int w = *best, rc = 0;
	for (int i = 0; i < p->n; i++)
		if (i != w && !src[i].done &&
		    ts__newer(p->in[i].lo, p->in[i].hi, p->in[w].lo, p->in[w].hi) &&
		    ts__key_cmp(src[i].key, src[i].klen, src[w].key, src[w].klen) == 0)
			w = i;
	for (int i = 0; rc == 0 && i < p->n; i++)
		if (i != w && !src[i].done &&
		    ts__key_cmp(src[i].key, src[i].klen, src[w].key, src[w].klen) == 0)
			rc = advance(t, &src[i]);
	*best = w;
	return rc;
}

/* Merge the sources into w, dropping expired rows, the rows a newer
 * input's row of their key shadows (replaced) and those the plan's
 * tombstones hide: *written rows. */
static int merge_rows(ts_table *t, const struct plan *p, struct source *src, ts__tablet_writer *w,
                      uint64_t *written, uint64_t *expired)
{
	ts_buf scratch, enc;
	int rc = 0;
	uint64_t rows = 0, slice = (uint64_t)t->db->opts.merge_slice_rows;
	const ts__tomb **sel = NULL;
	int nsel[p->n];
	if (p->ntombs) { /* per input, the tombstones newer than it */
		if (!(sel = malloc((size_t)p->n * (size_t)p->ntombs * sizeof *sel)))
			return ts__fail(TS_ENOMEM, "out of memory");
		for (int i = 0; i < p->n; i++)
			nsel[i] = ts__tombs_select(p->tombs, p->ntombs, p->in[i].hi, NULL, 0, NULL, 0,
			                           p->in[i].min_ts, p->in[i].max_ts,
			                           sel + (size_t)i * (size_t)p->ntombs);
	}
	ts__buf_init(&scratch);
	ts__buf_init(&enc);
	for (int i = 0; rc == 0 && i < p->n; i++)
		rc = advance(t, &src[i]);
	while (rc == 0) {
		int best = -1;
		for (int i = 0; i < p->n; i++)
			if (!src[i].done && (best < 0 || ts__key_cmp(src[i].key, src[i].klen, src[best].key,
			                                            src[best].klen) < 0))
				best = i;
		if (best < 0)
			break;
		if (p->replaced && (rc = resolve(t, p, src, &best)) < 0)
			break;
		if (ts__key_ts(src[best].key, src[best].klen) < p->expiry)
			++*expired;
		else if (sel && nsel[best] &&
		         ts__tombs_hide(sel + (size_t)best * (size_t)p->ntombs, nsel[best],
		                        src[best].key, src[best].klen, 0))
			; /* deleted */
		else if ((rc = add(p, &src[best], w, &scratch, &enc)) == 0) {
			++*written;
			if (src[best].cb)
				ts__tablet_writer_keep(w, src[best].used);
		}
		if (rc == 0)
			rc = advance(t, &src[best]);
		if (rc == 0 && ++rows % slice == 0) {
			ts__tablet_writer_fill(w, ts__table_read_within(t, TS_FLUSH_CACHE_READ_WINDOW));
			rc = between_slices(t, p);
		}
	}
	ts__buf_free(&scratch);
	ts__buf_free(&enc);
	free(sel);
	return rc;
}

/* ---- publishing ---- */

/* Unlink, then retire, tablets no descriptor names any more: a reader
 * that finds one still open keeps it; one that must open it finds it
 * gone and retries with the new descriptor. */
static void delete_tablets(ts_table *t, const uint64_t *ids, int n)
{
	char name[64], path[TS_PATH_MAX], dir[TS_PATH_MAX];
	for (int i = 0; i < n; i++) {
		if (ts__tablet_name(ids[i], name, sizeof name) == 0 &&
		    ts__path(path, "%s/tablets/%s", t->dir, name) == 0)
			unlink(path); /* a leftover is removed at the next open */
		ts__table_tablet_retire(t, ids[i]);
	}
	if (n && ts__path(dir, "%s/tablets", t->dir) == 0)
		ts__fsync_dir(dir);
}

/* Whether dir/DESCRIPTOR names tablet id; 1 when it cannot be read.  A
 * descriptor write whose last step (the sync of the directory) failed
 * has already put the new file in place, although the handle keeps the
 * old one (tabledesc.c): the file then names the merged tablet. */
static int file_names(const char *dir, uint64_t id)
{
	ts__descriptor *d;
	int named = 0;
	if (ts__descriptor_read(dir, &d) < 0)
		return 1;
	for (int i = 0; i < d->ntablets && !named; i++)
		named = d->tablets[i].id == id;
	ts__descriptor_free(d, 1);
	return named;
}

/* Name out (NULL: every row expired) instead of the inputs, then delete
 * them; on failure, delete out instead -- unless the DESCRIPTOR file
 * names it after all (the next open deletes whichever of out and the
 * inputs the file in place does not name). */
static int publish(ts_table *t, const struct plan *p, const ts__tablet_meta *out,
                   uint64_t expired)
{
	uint64_t gone[p->n];
	for (int i = 0; i < p->n; i++)
		gone[i] = p->in[i].id;
	int rc = ts__table_desc_begin(t);
	if (rc == 0) {
		rc = ts__table_replace_tablets(t, gone, p->n, out);
		ts__table_desc_end(t);
	}
	if (rc == 0 && (rc = ts__table_lock(t)) == 0) { /* the counters */
		t->merges++;
		t->merged_out_bytes += out ? out->bytes : 0;
		t->merged_rows_expired += expired;
		for (int i = 0; i < p->n; i++)
			t->merged_in_bytes += p->in[i].bytes;
		ts__table_unlock(t);
	}
	if (rc == 0) {
		delete_tablets(t, gone, p->n);
	} else if (out) {
		char msg[TS_ERRMSG_MAX];
		snprintf(msg, sizeof msg, "%s", ts_errmsg(NULL)); /* the read may fail */
		if (!file_names(t->dir, out->id))
			delete_tablets(t, &out->id, 1);
		ts__fail(rc, "%s", msg);
	}
	return rc;
}

struct warm_arg {
	ts_table *t;
	const struct plan *p;
};

static int warm_between(void *arg)
{
	const struct warm_arg *a = arg;
	return between_slices(a->t, a->p);
}

/* For a table being read, make the finished output (tablet p->id)
 * ready for the readers the publish sends to it: its blocks that
 * are not cached -- those cut before the table was first read, while
 * ts__tablet_writer_fill said no -- are read back (the page cache holds
 * the file just written) into the cache's spare room, else the publish
 * would turn every block readers had warmed in the inputs cold at once;
 * and the tablet, opened for that, is handed to the table's open
 * tablets (ts__table_tablet_adopt), so that the first reader does not
 * open it.  Yields as between slices; best effort: a failure (or the
 * database closing) only leaves blocks cold, or the tablet to open. */
static void warm_output(ts_table *t, const struct plan *p, uint64_t serial)
{
	ts__tablet *tab;
	struct warm_arg a = {t, p};
	if (ts__table_tablet_open_file(t, p->id, &tab) == 0) {
		ts__tablet_warm(tab, &t->db->bcache, serial, warm_between, &a);
		ts__table_tablet_adopt(t, p->id, tab);
	}
	ts__clear_error();
}

/* Open the inputs and the output; merge; finish. */
static int write_merged(ts_table *t, const struct plan *p, struct source *src,
                        ts__tablet_meta *out, uint64_t *expired)
{
	const ts__schema *s = p->versions[p->nversions - 1];
	char dir[TS_PATH_MAX];
	ts__tablet_writer *w = NULL;
	int rc = ts__path(dir, "%s/tablets", t->dir);
	for (int i = 0; rc == 0 && i < p->n; i++) {
		src[i].hi = p->in[i].hi;
		rc = ts__table_tablet(t, &p->in[i], &src[i].tab);
	}
	if (rc == 0)
		rc = ts__tablet_writer_open(dir, p->id, s, p->period_start,
		                            ts__period_end(p->period_start, p->period_len), &w);
	uint64_t serial = rc == 0 ? ts__table_tablet_serial(t, p->id) : 0;
	if (rc == 0 && t->rollup)
		ts__tablet_writer_hourly(w);
	if (rc == 0) /* a table being read: every block in spare room, as a flush's */
		ts__tablet_writer_warm(w, &t->db->bcache, serial,
		                       ts__table_read_within(t, TS_FLUSH_CACHE_READ_WINDOW));
	if (rc == 0)
		rc = merge_rows(t, p, src, w, &out->rows, expired);
	if (rc < 0 || out->rows == 0)
		ts__tablet_writer_abort(w);
	else
		rc = ts__tablet_writer_finish(w, &out->rows, &out->bytes, &out->min_ts, &out->max_ts);
	if (rc < 0 || out->rows == 0) /* no tablet to open under the serial */
		ts__table_tablet_unreserve(t, p->id);
	else if (serial && ts__table_read_within(t, TS_FLUSH_CACHE_READ_WINDOW))
		warm_output(t, p, serial);
	return rc;
}

static int run(ts_table *t, const struct plan *p)
{
	struct source *src = calloc((size_t)p->n, sizeof *src);
	ts__tablet_meta out = {.id = p->id, .period_start = p->period_start,
	                       .period_end = ts__period_end(p->period_start, p->period_len),
	                       .schema_version = p->versions[p->nversions - 1]->version};
	uint64_t expired = 0;
	out.lo = p->in[0].lo;
	for (int i = 0; i < p->n; i++) { /* the union of the inputs' versions */
		out.lo = p->in[i].lo < out.lo ? p->in[i].lo : out.lo;
		out.hi = p->in[i].hi > out.hi ? p->in[i].hi : out.hi;
	}
	int rc = src ? write_merged(t, p, src, &out, &expired) : ts__fail(TS_ENOMEM, "out of memory");
	for (int i = 0; src && i < p->n; i++) {
		ts__cblock_put(&t->db->bcache, src[i].cb);
		ts__table_tablet_put(t, src[i].tab);
		ts__buf_free(&src[i].raw);
	}
	free(src);
	return rc < 0 ? rc : publish(t, p, out.rows ? &out : NULL, expired);
}

/* Choose (strict: honouring the delays) t's smallest due merge into *p
 * and reserve its tablet id; merge_mu is held, t->mu is not.  Returns 0
 * (p->n == 0: none is due) or an error. */
static int plan_one(ts_table *t, int strict, struct plan *p)
{
	int64_t now = ts_now(t->db);
	int rc = ts__table_lock(t);
	if (rc < 0)
		return rc;
	p->background = strict;
	p->expiry = ts__table_expiry(t, now);
	p->replaced = (t->desc->flags & TS_DESC_REPLACED) != 0;
	rc = for_each_run(t, now, strict, pick_in_run, p);
	if (rc == 0 && p->n) {
		p->id = ts__table_reserve_id(t);
		p->nversions = t->desc->nschemas;
		if (!(p->versions = malloc((size_t)p->nversions * sizeof *p->versions)))
			rc = ts__fail(TS_ENOMEM, "out of memory");
		else
			memcpy(p->versions, t->desc->schemas, (size_t)p->nversions * sizeof *p->versions);
		if (rc == 0)
			rc = ts__table_tombs(t, &p->tombs, &p->ntombs);
	}
	ts__table_unlock(t);
	return rc;
}

/* Choose (strict: honouring the delays) and make one merge; merge_mu is
 * held.  Returns 1 if a merge was made, 0 if none was due, or an error. */
static int merge_one(ts_table *t, int strict, const ts__merge_yield *y)
{
	TS_ASSERT_HELD(&t->merge_mu);
	struct plan p;
	memset(&p, 0, sizeof p);
	p.yield = y;
	int rc = plan_one(t, strict, &p);
	if (rc == 0 && p.n)
		rc = run(t, &p);
	int merged = rc == 0 && p.n;
	free(p.in);
	free(p.versions);
	ts__tombs_free(p.tombs, p.ntombs);
	if (rc == TS_ECLOSED && strict && !__atomic_load_n(&t->dropped, __ATOMIC_RELAXED))
		return 0; /* the database is closing; the merge waits for next time */
	return rc < 0 ? ts__context(rc, "merge in table \"%s\"", t->name) : merged;
}

int64_t ts__merge_next(ts_table *t)
{
	struct plan p;
	int64_t bytes = 0;
	if (pthread_mutex_trylock(&t->merge_mu) != 0)
		return 0; /* ts_merge is merging */
	if (ts__table_retry_due(t, &t->merge_retry)) { /* else: failed lately, in backoff */
		int rc = ts__table_lock(t);
		if (rc == 0) {
			memset(&p, 0, sizeof p);
			rc = for_each_run(t, ts_now(t->db), 1, pick_in_run, &p);
			ts__table_unlock(t);
			bytes = rc < 0 ? rc : p.n ? (int64_t)p.bytes : 0;
			free(p.in);
		} else {
			bytes = rc == TS_ECLOSED ? 0 : rc;
		}
	}
	pthread_mutex_unlock(&t->merge_mu);
	return bytes;
}

int ts__merge_due(ts_table *t, const ts__merge_yield *y)
{
	if (pthread_mutex_trylock(&t->merge_mu) != 0)
		return 0; /* ts_merge is merging */
	if (!ts__table_retry_due(t, &t->merge_retry)) {
		pthread_mutex_unlock(&t->merge_mu);
		return 0; /* failed lately: waits for its backoff */
	}
	int rc = merge_one(t, 1, y);
	pthread_mutex_unlock(&t->merge_mu);
	return ts__table_retry_done(t, &t->merge_retry, "merge", rc);
}

int ts__merge(ts_table *t, int *merged, const ts__merge_yield *y)
{
	int rc = 0, n = 0;
	if (merged)
		*merged = 0;
	if (ts__db_readonly(t->db))
		return ts__fail(TS_EREADONLY, "database %s is open read-only", t->db->path);
	pthread_mutex_lock(&t->merge_mu);
	while ((rc = merge_one(t, 0, y)) == 1)
		n++;
	pthread_mutex_unlock(&t->merge_mu);
	if (merged)
		*merged = n;
	if (rc == 0)
		ts__table_retry_done(t, &t->merge_retry, "merge", 0);
	return rc < 0 ? rc : 0;
}

/* ---- ts_purge ---- */

/*
 * Rewrite, each alone, the tablets that one of gone[0..ngone) applies to
 * (its hi older than the tombstone's version) and may hold rows of (its
 * keys and times meet the tombstone's): a merge of one input, whose
 * output keeps the input's version interval (invariant V holds as
 * before) and leaves out every row a tombstone in force hides.  merge_mu
 * keeps the background's merges out meanwhile, so no merge planned
 * before the tombstones were read can publish an output that still holds
 * their rows.  *rewritten counts the tablets.  Returns 0 or an error.
 */
/* qsort of tablet metas by min_ts. */
static int by_min_ts(const void *a, const void *b)
{
	const ts__tablet_meta *x = a, *y = b;
	return x->min_ts < y->min_ts ? -1 : x->min_ts > y->min_ts;
}

/* qsort of tablet metas by version (lo, then hi): oldest first. */
static int by_version(const void *a, const void *b)
{
	const ts__tablet_meta *x = a, *y = b;
	if (x->lo != y->lo)
		return x->lo < y->lo ? -1 : 1;
	return x->hi < y->hi ? -1 : x->hi > y->hi;
}

/*
 * ts_purge's step for replaced rows (a table marked TS_DESC_REPLACED):
 * a row shadowed by a newer source's row of its key lies in another
 * tablet than the shadowing row, which a one-input rewrite cannot see.
 * So the tablets are grouped by timespan (tablets whose timespans meet,
 * transitively: two tablets that share a key share its ts), and each
 * group of two tablets or more whose timespan meets box (the purge's
 * range) is merged whole into one tablet, which keeps the newest row of
 * each key (resolve) and drops those the tombstones hide.  A group is
 * closed under "may share a key", so no tablet outside it meets the
 * output in time: invariant V holds (the trees were all flushed before,
 * and any tree begun since is newer than every tablet).  The output
 * takes the longest period of its inputs, which holds the others (periods
 * nest); a group that fits in no input's period is left alone.  merge_mu
 * is held.  *merged counts the groups merged.
 */
static int purge_replaced(ts_table *t, const ts__tomb *box, int *merged)
{
	ts__tablet_meta *m = NULL;
	int n = 0, rc = ts__table_lock(t);
	if (rc < 0)
		return rc;
	const ts__descriptor *d = t->desc;
	int replaced = (d->flags & TS_DESC_REPLACED) != 0;
	if (replaced && d->ntablets > 1) {
		if (!(m = malloc((size_t)d->ntablets * sizeof *m)))
			rc = ts__fail(TS_ENOMEM, "out of memory");
		else
			memcpy(m, d->tablets, (size_t)(n = d->ntablets) * sizeof *m);
	}
	ts__table_unlock(t);
	if (rc < 0 || n < 2) {
		free(m);
		return rc;
	}
	qsort(m, (size_t)n, sizeof *m, by_min_ts);
	for (int i = 0; rc == 0 && i < n;) {
		int j = i + 1;
		int64_t end = m[i].max_ts, start = m[i].min_ts;
		while (j < n && m[j].min_ts <= end) {
			end = m[j].max_ts > end ? m[j].max_ts : end;
			j++;
		}
		int k = j - i, longest = i;
		for (int x = i; x < j; x++)
			if (m[x].period_end - m[x].period_start >
			    m[longest].period_end - m[longest].period_start)
				longest = x;
		int fits = start >= m[longest].period_start && end < m[longest].period_end;
		if (k >= 2 && fits && ts__tomb_meets(box, NULL, 0, NULL, 0, start, end)) {
			struct plan p;
			memset(&p, 0, sizeof p);
			p.n = k;
			p.replaced = 1;
			p.period_start = m[longest].period_start;
			p.period_len = m[longest].period_end - m[longest].period_start;
			if (!(p.in = malloc((size_t)k * sizeof *p.in))) {
				rc = ts__fail(TS_ENOMEM, "out of memory");
				break;
			}
			memcpy(p.in, m + i, (size_t)k * sizeof *p.in);
			qsort(p.in, (size_t)k, sizeof *p.in, by_version);
			for (int x = 0; x < k; x++)
				p.bytes += p.in[x].bytes;
			if ((rc = ts__table_lock(t)) == 0) {
				p.expiry = ts__table_expiry(t, ts_now(t->db));
				p.nversions = t->desc->nschemas;
				if (!(p.versions = malloc((size_t)p.nversions * sizeof *p.versions)))
					rc = ts__fail(TS_ENOMEM, "out of memory");
				else
					memcpy(p.versions, t->desc->schemas,
					       (size_t)p.nversions * sizeof *p.versions);
				p.id = ts__table_reserve_id(t);
				if (rc == 0)
					rc = ts__table_tombs(t, &p.tombs, &p.ntombs);
				ts__table_unlock(t);
			}
			if (rc == 0 && (rc = run(t, &p)) == 0)
				(*merged)++;
			free(p.in);
			free(p.versions);
			ts__tombs_free(p.tombs, p.ntombs);
		}
		i = j;
	}
	free(m);
	return rc;
}

int ts__merge_purge(ts_table *t, const ts__tomb *box, const ts__tomb *gone, int ngone,
                    int *rewritten)
{
	int rc = 0, n = 0;
	uint64_t *ids = NULL;
	*rewritten = 0;
	pthread_mutex_lock(&t->merge_mu);
	if ((rc = purge_replaced(t, box, rewritten)) == 0 && (rc = ts__table_lock(t)) == 0) {
		const ts__descriptor *d = t->desc;
		if (d->ntablets && !(ids = malloc((size_t)d->ntablets * sizeof *ids)))
			rc = ts__fail(TS_ENOMEM, "out of memory");
		for (int i = 0; rc == 0 && i < d->ntablets; i++)
			for (int k = 0; k < ngone; k++)
				if (gone[k].version > d->tablets[i].hi &&
				    ts__tomb_meets(&gone[k], NULL, 0, NULL, 0, d->tablets[i].min_ts,
				                   d->tablets[i].max_ts)) {
					ids[n++] = d->tablets[i].id;
					break;
				}
		ts__table_unlock(t);
	}
	for (int i = 0; rc == 0 && i < n; i++) {
		struct plan p;
		ts__tablet *tab = NULL;
		memset(&p, 0, sizeof p);
		if ((rc = ts__table_lock(t)) < 0)
			break;
		const ts__descriptor *d = t->desc;
		int at = -1;
		for (int k = 0; k < d->ntablets; k++)
			if (d->tablets[k].id == ids[i])
				at = k;
		if (at >= 0 && (p.in = malloc(sizeof *p.in)) && (p.versions = malloc(
		                  (size_t)d->nschemas * sizeof *p.versions))) {
			p.n = 1;
			p.in[0] = d->tablets[at];
			p.period_start = d->tablets[at].period_start;
			p.period_len = d->tablets[at].period_end - d->tablets[at].period_start;
			p.bytes = d->tablets[at].bytes;
			p.expiry = ts__table_expiry(t, ts_now(t->db));
			p.nversions = d->nschemas;
			memcpy(p.versions, d->schemas, (size_t)p.nversions * sizeof *p.versions);
			p.id = ts__table_reserve_id(t);
			rc = ts__table_tombs(t, &p.tombs, &p.ntombs);
		} else if (at >= 0) {
			rc = ts__fail(TS_ENOMEM, "out of memory");
		}
		ts__table_unlock(t);
		/* the keys: a tablet whose key span misses every tombstone keeps
		 * its file */
		int meets = 0;
		if (rc == 0 && p.n && (rc = ts__table_tablet(t, &p.in[0], &tab)) == 0) {
			for (int k = 0; k < ngone && !meets; k++)
				meets = gone[k].version > p.in[0].hi &&
				        ts__tomb_meets(&gone[k], tab->first_key, tab->first_klen,
				                       tab->last_key, tab->last_klen, tab->min_ts,
				                       tab->max_ts);
			ts__table_tablet_put(t, tab);
		}
		if (rc == 0 && meets && (rc = run(t, &p)) == 0)
			(*rewritten)++;
		free(p.in);
		free(p.versions);
		ts__tombs_free(p.tombs, p.ntombs);
	}
	pthread_mutex_unlock(&t->merge_mu);
	free(ids);
	return rc;
}

/* ---- TTL ---- */

/* Delete the expired tablets; merge_mu is held. */
static int expire(ts_table *t)
{
	TS_ASSERT_HELD(&t->merge_mu);
	int rc = ts__table_desc_begin(t), n = 0;
	uint64_t *gone = NULL;
	if (rc < 0)
		goto out;
	int64_t expiry = ts__table_expiry(t, ts_now(t->db));
	const ts__descriptor *d = t->desc;
	if (expiry != INT64_MIN && d->ntablets && !(gone = malloc((size_t)d->ntablets * sizeof *gone)))
		rc = ts__fail(TS_ENOMEM, "out of memory");
	for (int i = 0; gone && i < d->ntablets; i++)
		if (d->tablets[i].max_ts < expiry)
			gone[n++] = d->tablets[i].id;
	if (rc == 0 && n && (rc = ts__table_replace_tablets(t, gone, n, NULL)) == 0)
		__atomic_add_fetch(&t->expired_tablets, (uint64_t)n, __ATOMIC_RELAXED);
	ts__table_desc_end(t);
	if (rc == 0)
		delete_tablets(t, gone, n);
out:
	free(gone);
	return rc < 0 ? ts__context(rc, "expiry in table \"%s\"", t->name) : n;
}

int ts__expire_due(ts_table *t)
{
	int rc = 0;
	if (pthread_mutex_trylock(&t->merge_mu) != 0)
		return 0; /* a merge may be reading them; next time */
	if (ts__table_retry_due(t, &t->expire_retry)) /* else: failed lately, in backoff */
		rc = ts__table_retry_done(t, &t->expire_retry, "expiry", expire(t));
	pthread_mutex_unlock(&t->merge_mu);
	return rc;
}
