/*
 * rollacc.c -- rollups' accumulators at insert: the windows of a rollup
 * folded from the rows as the writer stores them, so that a run writes a
 * window whose rows all arrived in order from its accumulator instead of
 * reading them again from the source (docs/rollups.md section 2,
 * "Accumulated at insert"; issue 29's cost).
 *
 * A source table with rollups holds, in memory only (t->acc, under the
 * writer's mutex t->mu), one set per rollup that registered (at its
 * creation, or at a look of its maintenance):
 * per group (the rollup's group key values) the greatest ts folded since
 * (hi), the open window (hi's) and an entry for every other window a
 * commit touched since the last harvest took it -- closed windows, and
 * windows late rows fell into -- each with the commits of its first and
 * last rows and, when clean, its accumulators (aggacc.h: the aggregate's
 * own fold; one per column the rollup's functions read, shared by them).
 * At registration, `bound` is the greatest ts the table holds (its
 * tablets' and filling trees'): no row committed before can lie in a
 * window starting after it; and `known` is the table's head: every
 * commit after it is folded.
 *
 * A row of a group whose ts is above hi is in order: it is folded into
 * the open window, or closes it and opens its own -- clean when the
 * window starts after bound.  Any other row (late, a duplicate, a
 * replacement: all have ts <= hi) makes its window dirty, or gives it a
 * dirty entry: a dirty window is read from the source.  A delete forgets
 * every window and group held, the sets starting again from the table's
 * greatest ts, and not known until the next fold (_reset).  So a clean
 * window holds exactly the rows of its window at every version from its
 * last row's commit until a later commit touches it -- and that commit
 * dirties it first.  The folding is done under t->mu in the batch's
 * critical section, right after its commit: a run that took its
 * snapshot S and then takes t->mu sees every batch through S folded.
 *
 * A run from watermark W harvests at S (_take): the rows of the clean
 * windows whose last row came by S (an entry taken out, the open window
 * copied), and the windows touched in (W, S].  When the set is known
 * since W or earlier, that list is every window a commit in (W, S]
 * touched, and the run reads no changes (ts__rollacc_exact); else
 * changes decides, as before, which windows are recomputed, the
 * accumulators only saving the read.  A run that took a harvest and did
 * not move W (failed) makes the set known only after S (_untake): what
 * it took out is not listed again.  A paced run may harvest at a version
 * below S instead, leaving the clock's open windows for the next run
 * (_take's defer): W becomes that version, and every entry touched after
 * it is kept.
 *
 * Only rollups of tables are accumulated (a rollup's writes replace its
 * rows).  A sum of doubles is folded row by row in ts order, as the
 * aggregate folds the filling trees' rows; over flushed blocks it adds
 * their summaries, and the two may differ in the last bits (aggregate.c's
 * definitions).  A window's accumulators are compact (struct racc: a
 * numeric column's state in one cache line, its values' type the
 * column's) and live in the group's entry array from the window's first
 * row on, the open window in the slot after the closed ones: closing a
 * window moves nothing.  Memory: a set holding more than
 * ACC_CLOSED_MAX closed windows or ACC_GROUPS_MAX groups (a rollup not
 * harvested: its maintenance failing) is forgotten, to register again.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aggacc.h"
#include "buf.h"
#include "error.h"
#include "handle.h"
#include "period.h"
#include "rollacc.h"
#include "schema.h"
#include "tabledesc.h"

int ts__rollacc_enabled = 1;
size_t ts__rollacc_run_closed = TS_ROLLACC_RUN_CLOSED;

#define ACC_CLOSED_MAX (1u << 20)
#define ACC_GROUPS_MAX (1u << 20)

/* A fold waits for memory: rows come a row of every group in turn (1000
 * in the bench), and a group's block and open window do not stay in the
 * cache until its next row -- 120 ns a row.  Each group learns the
 * groups that came AHEAD and AHEAD / 2 rows after it, and when it comes
 * again the first's block and the second's open window (whose block the
 * same came AHEAD / 2 rows before) are fetched (group_of). */
#define AHEAD 16

/* One numeric column's state over one clean window (rollups read only
 * numeric columns: rollup.c): ts__agg_acc's fields a harvest's results
 * read, the values as their bits, their type the column's; 64 bytes
 * where ts__agg_acc takes 160, so that a window of a column is one cache
 * line.  A clean window receives rows in ts order only (a row at or
 * below the group's hi makes it dirty), so first is its first row's
 * value and last its last row's, and it has a row from its opening on;
 * first_ts and last_ts are not needed (to_agg_acc). */
typedef struct racc {
	union {
		__int128 i;
		double d;
	} sum;
	uint64_t count;            /* the values that are not NaN */
	int64_t min, max, first, last; /* bits of the column's type */
	int overflow;              /* sum left __int128 (ts__agg_acc's) */
} racc;

/* A window that received rows since the last harvest took it: closed
 * windows, clean or dirty, and windows a late row fell into that the
 * group no longer held (dirty); sorted by start.  A clean one's
 * accumulators are the group's accs[i * nacc ..].  A window at or below
 * the bound may have two, both dirty: a late row's, then the group's
 * first rows in order (the run joins them into one span). */
struct closed {
	int64_t start;
	uint64_t first, last;  /* the commits of its first and last rows
	                        * folded (late ones too) */
	int clean;
	int first_kept;        /* its accumulators as of `first` are kept
	                        * beside its own (the open window's
	                        * first_accs: whole_cut) */
};

/* Entry i's accumulators: nacc of its own, then nacc as of its first
 * commit (first_kept).  The open window's are at the slot after the
 * closed entries (cap > nclosed while a window is open). */
#define ENTRY_ACCS(s, gr, i) ((gr)->accs + (i) * 2 * (size_t)(s)->nacc)
#define OPEN_ACCS(s, gr) ENTRY_ACCS(s, gr, (gr)->nclosed)
#define FIRST_ACCS(s, gr) (OPEN_ACCS(s, gr) + (s)->nacc)

/* A group's state, in one allocation: the group, its key's values and
 * bytes.  The fold at insert reads, per row, the group's fields, its key
 * and its open window's accumulators, and rows come a row of every group
 * in turn (1000 of them in test_rollup's measure): one block for the
 * first two (2026-11-27, h-rollup5), and the coming groups' blocks and
 * accumulators prefetched (group_of). */
struct group {
	struct group *succ;    /* the group of the row that came after one of
	                        * this group's last time: batches repeat their
	                        * order, so it is tried before the hash (whose
	                        * byte-wise FNV took 20 ns a row) */
	/* the groups whose rows came AHEAD and AHEAD / 2 rows after one of
	 * this group's last time: fetched when it comes again (group_of) */
	struct group *ahead, *half;
	ts_value *key;         /* g values, strings after them: in the block */
	int64_t hi;            /* the greatest ts folded */
	int open, open_clean;
	int64_t open_start;
	uint64_t open_first;    /* the commit of its first row */
	uint64_t open_version;  /* the commit of its last row (a late one too) */
	/* the open window's accumulators: OPEN_ACCS, and FIRST_ACCS, its
	 * state at open_first, kept once a later commit folded a row into
	 * it (first_kept): a harvest cut at open_first writes the window as
	 * it was then (whole_cut) */
	int first_kept;
	uint64_t hash;
	struct closed *closed;
	racc *accs;             /* 2 * nacc an entry (ENTRY_ACCS) */
	size_t nclosed, cap;
};

struct set {
	char name[TS_NAME_MAX + 1];   /* the rollup's */
	int64_t every;
	int g, nspecs;
	int gcols[TS_KEY_COLUMNS_MAX];
	ts_aggspec *specs;
	/* one accumulator per column the specs name, not per spec: an
	 * accumulator holds every function's state of its column (aggacc.h),
	 * so the specs of one column (v's sum, count and max) share it and a
	 * row folds each column once.  acc_of[k]: spec k's, acc_col[j]:
	 * accumulator j's column. */
	int nacc;
	int *acc_of, *acc_col;
	ts_type *acc_type;       /* accumulator j's column's type */
	int64_t bound;
	/* every commit after version `known` is folded (a window it touched
	 * has an entry: the open one, or one of closed); UINT64_MAX: not
	 * known since a reset, until the next fold (rollacc.h, _take) */
	uint64_t known;
	struct group **slots;
	size_t nslots, ngroups, nclosed;
	struct group *last;      /* the last row's group */
	struct group *ring[AHEAD]; /* the last AHEAD rows' groups */
	size_t rpos;
	struct set *next;
};

struct ts__rollacc {
	struct set *sets;
	int ncols;
	ts_value *staged;      /* ncols a row, strings the caller's */
	size_t nstaged, cap;
};

/* ---- groups ---- */

static int is_bytes(const ts_value *v)
{
	return v->type == TS_STRING || v->type == TS_BLOB;
}

/* The hash of the group values of a row (at columns cols, or the first g
 * of v when cols is NULL). */
static uint64_t hash_group(const ts_value *v, const int *cols, int g)
{
	uint64_t h = 0xCBF29CE484222325u;
	for (int k = 0; k < g; k++) {
		const ts_value *x = &v[cols ? cols[k] : k];
		h = ts__fnv1a(h, &x->type, sizeof x->type);
		h = is_bytes(x) ? ts__fnv1a(h, x->v.s.ptr, x->v.s.len) : ts__fnv1a(h, &x->v.i, 8);
	}
	return h;
}

/* Whether group values key[0..g) equal those of v (at columns cols, or
 * its first g when cols is NULL). */
static int same_key(const ts_value *key, const ts_value *v, const int *cols, int g)
{
	for (int k = 0; k < g; k++) {
		const ts_value *a = &key[k], *b = &v[cols ? cols[k] : k];
		if (a->type != b->type)
			return 0;
		if (is_bytes(b) ? a->v.s.len != b->v.s.len ||
		                  (b->v.s.len && memcmp(a->v.s.ptr, b->v.s.ptr, b->v.s.len) != 0)
		                : a->v.i != b->v.i)
			return 0;
	}
	return 1;
}

static int same_group(const struct group *gr, const ts_value *v, const int *cols, int g)
{
	return same_key(gr->key, v, cols, g);
}

/* The bytes of the strings and blobs among the g group values of v (at
 * columns cols, or the first g when cols is NULL). */
static size_t key_bytes(const ts_value *v, const int *cols, int g)
{
	size_t bytes = 0;
	for (int k = 0; k < g; k++)
		if (is_bytes(&v[cols ? cols[k] : k]))
			bytes += v[cols ? cols[k] : k].v.s.len;
	return bytes;
}

/* Copy the g group values of v (as key_bytes) to key[0..g), their
 * strings' bytes to mem (key_bytes of them); returns mem past them. */
static unsigned char *put_key(ts_value *key, unsigned char *mem, const ts_value *v,
                              const int *cols, int g)
{
	for (int k = 0; k < g; k++) {
		key[k] = v[cols ? cols[k] : k];
		if (is_bytes(&key[k])) {
			if (key[k].v.s.len) /* (an empty value's pointer may be NULL) */
				memcpy(mem, key[k].v.s.ptr, key[k].v.s.len);
			key[k].v.s.ptr = mem;
			mem += key[k].v.s.len;
		}
	}
	return mem;
}

static void group_free(struct group *gr)
{
	if (!gr)
		return;
	free(gr->closed);
	free(gr->accs);
	free(gr);
}

static struct group *find_group(const struct set *s, const ts_value *v, const int *cols,
                                uint64_t h)
{
	if (!s->nslots)
		return NULL;
	for (size_t j = h & (s->nslots - 1); s->slots[j]; j = (j + 1) & (s->nslots - 1))
		if (s->slots[j]->hash == h && same_group(s->slots[j], v, cols, s->g))
			return s->slots[j];
	return NULL;
}

static int place(struct group **slots, size_t n, struct group *gr)
{
	size_t j = gr->hash & (n - 1);
	while (slots[j])
		j = (j + 1) & (n - 1);
	slots[j] = gr;
	return 0;
}

/* A new group of the row's values, its hi the set's bound.  NULL: out of
 * memory. */
static struct group *add_group(struct set *s, const ts_value *v, uint64_t h)
{
	if ((s->ngroups + 1) * 2 > s->nslots) {
		size_t n = s->nslots ? 2 * s->nslots : 256;
		struct group **x = calloc(n, sizeof *x);
		if (!x)
			return NULL;
		for (size_t i = 0; i < s->nslots; i++)
			if (s->slots[i])
				place(x, n, s->slots[i]);
		free(s->slots);
		s->slots = x;
		s->nslots = n;
	}
	/* the block: the group, its key's g values and their bytes */
	size_t key_at = sizeof(struct group), bytes_at = key_at + (size_t)s->g * sizeof(ts_value);
	struct group *gr = calloc(1, bytes_at + key_bytes(v, s->gcols, s->g));
	if (!gr)
		return NULL;
	gr->key = (ts_value *)((unsigned char *)gr + key_at);
	put_key(gr->key, (unsigned char *)gr + bytes_at, v, s->gcols, s->g);
	gr->hash = h;
	gr->hi = s->bound;
	place(s->slots, s->nslots, gr);
	s->ngroups++;
	return gr;
}

/* ---- sets ---- */

static void set_free(struct set *s)
{
	for (size_t i = 0; i < s->nslots; i++)
		group_free(s->slots[i]);
	free(s->slots);
	free(s->specs);
	free(s->acc_of);
	free(s->acc_col);
	free(s->acc_type);
	free(s);
}

/* Forget every window and group of s (it starts again from a new bound
 * at the next registration): the set is unlinked and freed. */
static void set_drop(ts__rollacc *a, struct set *s)
{
	for (struct set **p = &a->sets; *p; p = &(*p)->next)
		if (*p == s) {
			*p = s->next;
			break;
		}
	set_free(s);
}

void ts__rollacc_free(ts__rollacc *a)
{
	if (!a)
		return;
	while (a->sets)
		set_drop(a, a->sets);
	free(a->staged);
	free(a);
}

static int64_t table_max_ts(const struct ts_table *t);

void ts__rollacc_reset(struct ts_table *t)
{
	ts__rollacc *a = t->acc;
	if (!a)
		return;
	int64_t bound = table_max_ts(t);
	for (struct set *s = a->sets; s; s = s->next) {
		for (size_t i = 0; i < s->nslots; i++)
			group_free(s->slots[i]);
		if (s->nslots)
			memset(s->slots, 0, s->nslots * sizeof *s->slots);
		s->ngroups = s->nclosed = 0;
		s->last = NULL;
		memset(s->ring, 0, sizeof s->ring);
		s->bound = bound;
		s->known = UINT64_MAX; /* until the next fold: this change is not */
	}
	a->nstaged = 0;
}

/* ---- the writer ---- */

void ts__rollacc_stage(struct ts_table *t, const ts_value *vals)
{
	ts__rollacc *a = t->acc;
	if (!a->sets)
		return;
	if (a->nstaged == a->cap) {
		size_t cap = a->cap ? 2 * a->cap : 512;
		ts_value *x = realloc(a->staged, cap * (size_t)a->ncols * sizeof *x);
		if (!x) { /* every set forgotten: its windows are read again */
			ts__rollacc_reset(t);
			return;
		}
		a->staged = x;
		a->cap = cap;
	}
	memcpy(a->staged + a->nstaged++ * (size_t)a->ncols, vals, (size_t)a->ncols * sizeof *vals);
}

void ts__rollacc_unstage(struct ts_table *t)
{
	t->acc->nstaged = 0;
}

/* Room in gr for n window entries (the open window's slot counted).
 * Returns 0 or -1 (out of memory). */
static int closed_room(struct set *s, struct group *gr, size_t n)
{
	if (n > gr->cap) {
		/* from 2: a group may hold no more than its open window
		 * (2^20 groups of a set at most) */
		size_t cap = gr->cap ? 2 * gr->cap : 2;
		while (cap < n)
			cap *= 2;
		struct closed *c = realloc(gr->closed, cap * sizeof *c);
		if (c)
			gr->closed = c;
		racc *x = realloc(gr->accs, cap * 2 * (size_t)s->nacc * sizeof *x);
		if (x)
			gr->accs = x;
		if (!c || !x)
			return -1;
		gr->cap = cap;
	}
	return 0;
}

/* Close gr's open window: an entry, its accumulators (when clean; dirty
 * ones are read from the source) already in its slot. */
static void close_open(struct set *s, struct group *gr)
{
	if (!gr->open)
		return;
	gr->open = 0;
	gr->closed[gr->nclosed] = (struct closed){gr->open_start, gr->open_first,
	                                          gr->open_version, gr->open_clean,
	                                          gr->open_clean && gr->first_kept};
	gr->nclosed++;
	s->nclosed++;
}

/* A row at or below gr's hi, committed at version: its window is dirty,
 * an entry of its own when not held (a window touched since the last
 * harvest always has one: _take lists them).  Returns 0 or -1 (out of
 * memory). */
static int late_row(struct set *s, struct group *gr, int64_t start, uint64_t version)
{
	if (gr->open && start == gr->open_start) {
		gr->open_clean = 0;
		gr->open_version = version;
		return 0;
	}
	size_t lo = 0, hi = gr->nclosed;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (gr->closed[mid].start < start)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < gr->nclosed && gr->closed[lo].start == start) {
		gr->closed[lo].clean = 0;
		gr->closed[lo].last = version;
		return 0;
	}
	if (closed_room(s, gr, gr->nclosed + 1 + (size_t)gr->open) < 0)
		return -1;
	memmove(gr->closed + lo + 1, gr->closed + lo, (gr->nclosed - lo) * sizeof *gr->closed);
	/* the open window's slot moves with them */
	memmove(ENTRY_ACCS(s, gr, lo + 1), ENTRY_ACCS(s, gr, lo),
	        (gr->nclosed - lo + (size_t)gr->open) * 2 * (size_t)s->nacc * sizeof *gr->accs);
	gr->closed[lo] = (struct closed){start, version, version, 0, 0};
	gr->nclosed++;
	s->nclosed++;
	return 0;
}

/* Fold value v into a clean window's a, a row later than its others
 * (ts__agg_acc_add's fold, for a row in ts order: NaN is no value). */
static inline void racc_add(racc *a, const ts_value *v, int isdouble)
{
	a->last = v->v.i;
	if (isdouble) {
		double d = v->v.d, min, max;
		if (isnan(d))
			return;
		memcpy(&min, &a->min, sizeof min);
		memcpy(&max, &a->max, sizeof max);
		if (a->count == 0 || d < min)
			a->min = v->v.i;
		if (a->count == 0 || d > max)
			a->max = v->v.i;
		a->sum.d += d;
	} else {
		if (a->count == 0 || v->v.i < a->min)
			a->min = v->v.i;
		if (a->count == 0 || v->v.i > a->max)
			a->max = v->v.i;
		a->overflow |= __builtin_add_overflow(a->sum.i, v->v.i, &a->sum.i);
	}
	a->count++;
}

/* Open a clean window's a with its first row's value v. */
static inline void racc_open(racc *a, const ts_value *v, int isdouble)
{
	*a = (racc){.first = v->v.i}; /* (a sum of 0 bits: 0.0 too) */
	racc_add(a, v, isdouble);
}

/* a as the aggregate's accumulator (ts__agg_acc_result's input), its
 * values of type type. */
static ts__agg_acc to_agg_acc(const racc *a, ts_type type)
{
	ts__agg_acc x = {.count = a->count, .has_first = 1, .overflow = a->overflow};
	if (type == TS_DOUBLE)
		x.dsum = a->sum.d;
	else
		x.isum = a->sum.i;
	x.min = (ts_value){.type = type, .v.i = a->min};
	x.max = (ts_value){.type = type, .v.i = a->max};
	x.first = (ts_value){.type = type, .v.i = a->first};
	x.last = (ts_value){.type = type, .v.i = a->last};
	return x;
}

/* The group of row v in s, added when new; NULL: out of memory, or more
 * groups than the set may hold (forget it).  Rows of every group in turn
 * (a row of each series per batch): the last row's group's successor,
 * as it was last time, first; rows of one group after each other: that
 * group then; the hash last. */
static struct group *group_of(struct set *s, const ts_value *v)
{
	struct group *gr = s->last;
	if (gr && gr->succ && same_group(gr->succ, v, s->gcols, s->g)) {
		gr = gr->succ;
	} else if (!gr || !same_group(gr, v, s->gcols, s->g)) {
		uint64_t h = hash_group(v, s->gcols, s->g);
		struct group *found = find_group(s, v, s->gcols, h);
		if (!found && (s->ngroups >= ACC_GROUPS_MAX || !(found = add_group(s, v, h))))
			return NULL;
		if (gr)
			gr->succ = found;
		gr = found;
	}
	struct group *back = s->ring[s->rpos], *mid = s->ring[(s->rpos + AHEAD / 2) % AHEAD];
	if (back)
		back->ahead = gr;
	if (mid)
		mid->half = gr;
	s->ring[s->rpos] = gr;
	s->rpos = (s->rpos + 1) % AHEAD;
	if (gr->ahead) {
		__builtin_prefetch(gr->ahead);
		__builtin_prefetch((const char *)gr->ahead + 64);
		__builtin_prefetch((const char *)gr->ahead + 128);
	}
	if (gr->half && gr->half->accs) {
		__builtin_prefetch(OPEN_ACCS(s, gr->half), 1);
		__builtin_prefetch(gr->half->closed + gr->half->nclosed, 1);
	}
	return s->last = gr;
}

/* Fold row v of the batch committed at version into its group gr of s.
 * Returns 0 or -1 (out of memory, or more than the set may hold: forget
 * it). */
static int fold(struct set *s, struct group *gr, const ts_value *v, int ts_col,
                uint64_t version)
{
	int64_t ts = v[ts_col].v.i;
	if (ts <= gr->hi)
		return late_row(s, gr, ts__floor_multiple(ts, s->every), version) < 0 ||
		       s->nclosed > ACC_CLOSED_MAX ? -1 : 0;
	gr->hi = ts;
	/* most rows are of the open window (which starts below ts): no
	 * division for them */
	int64_t start = gr->open && (uint64_t)ts - (uint64_t)gr->open_start < (uint64_t)s->every
	                ? gr->open_start : ts__floor_multiple(ts, s->every);
	if (!gr->open || start != gr->open_start) {
		close_open(s, gr);
		if (s->nclosed > ACC_CLOSED_MAX || closed_room(s, gr, gr->nclosed + 1) < 0)
			return -1;
		gr->open = 1;
		gr->open_start = start;
		gr->open_first = gr->open_version = version;
		gr->open_clean = start > s->bound;
		gr->first_kept = 0;
		if (gr->open_clean)
			for (int j = 0; j < s->nacc; j++)
				racc_open(&OPEN_ACCS(s, gr)[j], &v[s->acc_col[j]],
				          s->acc_type[j] == TS_DOUBLE);
		return 0;
	}
	if (!gr->first_kept && version != gr->open_first) {
		if (gr->open_clean)
			memcpy(FIRST_ACCS(s, gr), OPEN_ACCS(s, gr), (size_t)s->nacc * sizeof *gr->accs);
		gr->first_kept = 1;
	}
	gr->open_version = version;
	if (gr->open_clean)
		for (int j = 0; j < s->nacc; j++)
			racc_add(&OPEN_ACCS(s, gr)[j], &v[s->acc_col[j]], s->acc_type[j] == TS_DOUBLE);
	return 0;
}

/* a's set of rollup name, or NULL (t->mu held). */
static struct set *set_named(const ts__rollacc *a, const char *name)
{
	struct set *s = a->sets;
	while (s && strcmp(s->name, name) != 0)
		s = s->next;
	return s;
}

/* The closed windows that make s's rollup due at once: at least
 * ts__rollacc_run_closed, and twice its groups -- a window's turn on the
 * clock closes one window a group, which the paced run takes (keeping
 * its defer), where a bulk load closes many -- but at most half of what
 * the set may hold, so that the run comes before the set is dropped;
 * and at least 1 (it divides). */
static size_t run_closed(const struct set *s)
{
	size_t n = 2 * s->ngroups > ts__rollacc_run_closed ? 2 * s->ngroups : ts__rollacc_run_closed;
	return n < 1 ? 1 : n < ACC_CLOSED_MAX / 2 ? n : ACC_CLOSED_MAX / 2;
}

int ts__rollacc_apply(struct ts_table *t, uint64_t version)
{
	ts__rollacc *a = t->acc;
	int full = 0;
	int ts_col = ts__desc_schema(t->desc)->ts_col;
	for (struct set *s = a->sets, *next; s; s = next) {
		next = s->next;
		size_t i = 0, before = s->nclosed, due = run_closed(s);
		for (; i < a->nstaged; i++) {
			const ts_value *v = a->staged + i * (size_t)a->ncols;
			struct group *gr = group_of(s, v);
			if (!gr || fold(s, gr, v, ts_col, version) < 0)
				break;
		}
		if (i < a->nstaged) {
			set_drop(a, s);
			continue;
		}
		if (s->known == UINT64_MAX) /* after a reset: known from here on */
			s->known = version;
		/* the batch that fills the set wakes the scheduler, and each
		 * that adds as many closed windows again: a run that took
		 * only some (its cut at the durable version) or could not
		 * take them (waiting for them to be durable) is tried again
		 * then -- not at every batch, and not only at the next pass,
		 * which a merge of minutes delays (its slices run only the
		 * rollups asked for) */
		if (s->nclosed / due > before / due)
			full = 1;
	}
	a->nstaged = 0;
	return full;
}

int ts__rollacc_full(struct ts_table *src, const char *name)
{
	if (ts__table_lock(src) < 0) {
		ts__clear_error(); /* (closing) */
		return 0;
	}
	const struct set *s = src->acc ? set_named(src->acc, name) : NULL;
	int full = s && s->nclosed >= run_closed(s);
	ts__table_unlock(src);
	return full;
}

/* ---- the maintenance ---- */

/* The greatest ts t holds (t->mu held): its tablets' and filling trees'. */
static int64_t table_max_ts(const struct ts_table *t)
{
	int64_t max = INT64_MIN;
	const ts__descriptor *d = t->desc;
	for (int i = 0; i < d->ntablets; i++)
		if (d->tablets[i].max_ts > max)
			max = d->tablets[i].max_ts;
	for (int i = 0; i < t->fill.n; i++)
		if (t->fill.work[i].max_ts > max)
			max = t->fill.work[i].max_ts;
	for (int i = 0; i < t->fill.ncommitted; i++)
		if (t->fill.committed[i].max_ts > max)
			max = t->fill.committed[i].max_ts;
	return max;
}

/* Whether rollup d with specs may be accumulated over schema s. */
static int accumulable(const ts__rollup_def *d, const ts__schema *s, const ts_aggspec *specs,
                       int nspecs)
{
	if (d->flags & TS_ROLLUP_FROM_ROLLUP)
		return 0;
	for (int k = 0; k < nspecs; k++)
		if (specs[k].column < 0 || specs[k].column >= s->ncols)
			return 0;
	return 1;
}

/* Rollup name's set in t, registered when t has none (or one of another
 * definition); t->mu held.  NULL: not accumulated (or out of memory). */
static struct set *registered(struct ts_table *t, const char *name, const ts__rollup_def *d,
                              const ts_aggspec *specs, int nspecs)
{
	const ts__schema *sc = ts__desc_schema(t->desc);
	if (!ts__rollacc_enabled || !accumulable(d, sc, specs, nspecs))
		return NULL;
	if (!t->acc && !(t->acc = calloc(1, sizeof *t->acc)))
		return NULL;
	ts__rollacc *a = t->acc;
	struct set *held = set_named(a, name);
	if (held) {
		if (held->every == d->every && held->g == d->group && held->nspecs == nspecs &&
		    memcmp(held->specs, specs, (size_t)nspecs * sizeof *specs) == 0)
			return held;
		set_drop(a, held); /* its definition changed: starts again */
	}
	if (a->ncols != sc->ncols) { /* an alter appended columns */
		a->nstaged = 0;
		a->ncols = sc->ncols;
	}
	struct set *s = calloc(1, sizeof *s);
	if (!s || !(s->specs = malloc((size_t)nspecs * sizeof *s->specs)) ||
	    !(s->acc_of = malloc((size_t)nspecs * sizeof *s->acc_of)) ||
	    !(s->acc_col = malloc((size_t)nspecs * sizeof *s->acc_col)) ||
	    !(s->acc_type = malloc((size_t)nspecs * sizeof *s->acc_type))) {
		if (s)
			set_free(s);
		return NULL;
	}
	for (int k = 0; k < nspecs; k++) {
		int j = 0;
		while (j < s->nacc && s->acc_col[j] != specs[k].column)
			j++;
		if (j == s->nacc) {
			s->acc_type[j] = sc->cols[specs[k].column].type;
			s->acc_col[s->nacc++] = specs[k].column;
		}
		s->acc_of[k] = j;
	}
	snprintf(s->name, sizeof s->name, "%s", name);
	s->every = d->every;
	s->g = d->group;
	s->nspecs = nspecs;
	memcpy(s->specs, specs, (size_t)nspecs * sizeof *specs);
	for (int k = 0; k < s->g; k++)
		s->gcols[k] = sc->key[k];
	s->bound = table_max_ts(t);
	s->known = ts__log_head(t->log);
	s->next = a->sets;
	a->sets = s;
	return s;
}

/*
 * A harvest: per group, its windows' rows in start order, and the starts
 * of the windows commits in (W, S] touched.  Its memory is four blocks
 * sized before anything is taken (a run harvests about every group at
 * every run: allocations per group were a tenth of a live run's CPU):
 * the slots, every group's rows and starts (room for each group's
 * entries and its open window), and the groups' key values with their
 * strings' bytes.
 */
struct hgroup {
	const ts_value *key;   /* g values into keys; NULL = a free slot */
	uint64_t hash;
	ts_value *rows;        /* width values a window, into rows */
	size_t n;
	int64_t *touched;      /* ascending, into starts */
	size_t ntouched;
};

struct ts__rollacc_harvest {
	int g, width;
	int exact;             /* touched lists every window of (W, S] */
	int whole;             /* every touched window has its row here */
	struct hgroup *slots;  /* by hash */
	size_t nslots;
	const struct hgroup **order; /* the groups with touched windows */
	size_t norder;
	ts_value *rows, *keys; /* the rows; ngroups * g key values */
	size_t nrows, nkeys;   /* used */
	int64_t *starts;
	size_t nstarts;        /* used */
	unsigned char *bytes;  /* the keys' strings and blobs */
	size_t nbytes;         /* used */
};

int ts__rollacc_skip_changes = 1;

void ts__rollacc_harvest_free(ts__rollacc_harvest *h)
{
	if (!h)
		return;
	free(h->slots);
	free(h->order);
	free(h->rows);
	free(h->starts);
	free(h->keys);
	free(h->bytes);
	free(h);
}

/* Copy gr's key into h's keys and bytes (sized for it by take). */
static const ts_value *hold_key(ts__rollacc_harvest *h, const struct group *gr)
{
	ts_value *key = h->keys + h->nkeys;
	unsigned char *end = put_key(key, h->bytes + h->nbytes, gr->key, NULL, h->g);
	h->nbytes = (size_t)(end - h->bytes);
	h->nkeys += (size_t)h->g;
	return key;
}

/* Whether a window whose rows were committed from first to last was
 * touched by a commit in (w, v]: a window still receiving rows after v
 * (last > v) is counted when its first came by v. */
static int touched(uint64_t first, uint64_t last, uint64_t w, uint64_t v)
{
	return last > w && first <= v;
}

/* Whether group gr has a window to harvest at v, watermark w. */
static int harvested(const struct group *gr, uint64_t w, uint64_t v)
{
	return gr->nclosed || (gr->open && touched(gr->open_first, gr->open_version, w, v)) ||
	       (gr->open && gr->open_clean && gr->open_version <= v);
}

/* gr's open window's accumulators as of version v, or NULL when not
 * known: all of them when its last row came by v, its first commit's
 * when v is that commit and later rows were folded since (first_kept). */
static const racc *open_row(const struct set *s, const struct group *gr, uint64_t v)
{
	if (gr->open_version <= v)
		return OPEN_ACCS(s, gr);
	return gr->first_kept && gr->open_first == v ? FIRST_ACCS(s, gr) : NULL;
}

/* Whether every window of gr that commits in (w, v] touched is clean
 * and had its last row by v: a harvest at v has its row (whole). */
static int group_whole(const struct set *s, const struct group *gr, uint64_t w, uint64_t v)
{
	for (size_t i = 0; i < gr->nclosed; i++) {
		const struct closed *e = &gr->closed[i];
		if (touched(e->first, e->last, w, v) &&
		    !(e->clean && (e->last <= v || (e->first_kept && e->first == v))))
			return 0;
	}
	return !(gr->open && touched(gr->open_first, gr->open_version, w, v) &&
	         !(gr->open_clean && open_row(s, gr, v)));
}

/* Write the rollup row of gr's window start from accumulators acc into
 * hg's next row; 0, or -1 when a function has no exact value here (an
 * int64 sum overflowing: the source's read gives its error). */
static int put_row(struct set *s, const ts__schema *sc, struct hgroup *hg, int width,
                   int64_t start, const racc *acc)
{
	ts_value *row = hg->rows + hg->n * (size_t)width;
	memcpy(row, hg->key, (size_t)s->g * sizeof *row);
	row[s->g] = ts_timestamp(start);
	for (int k = 0; k < s->nspecs; k++) {
		const ts__col *c = &sc->cols[s->specs[k].column];
		/* the column's type now (an int32 widened since) */
		ts__agg_acc a = to_agg_acc(&acc[s->acc_of[k]], c->type);
		if (ts__agg_acc_result(s->specs[k].fn, c->type == TS_DOUBLE, c->name, &a,
		                       &row[s->g + 1 + k]) < 0) {
			ts__clear_error();
			return -1;
		}
	}
	hg->n++;
	return 0;
}

/* Move gr's entries whose last row was committed <= v into h: the rows
 * of the clean ones touched in (w, v] into the room take made (the dirty
 * ones are read from the source; an untouched one the rollup holds as it
 * is), and the starts of the windows touched in (w, v] -- entries of
 * later commits too, kept for the next run, and the open window -- into
 * hg->touched.  A copy of the open window when it is clean and its last
 * row came by v (it goes on accumulating: the run that finds it closed
 * writes it again if touched). */
static void take_group(struct set *s, struct group *gr, uint64_t w, uint64_t v,
                       const ts__schema *sc, ts__rollacc_harvest *h)
{
	if (!harvested(gr, w, v))
		return;
	size_t j = gr->hash & (h->nslots - 1);
	while (h->slots[j].key)
		j = (j + 1) & (h->nslots - 1);
	struct hgroup *hg = &h->slots[j];
	hg->key = hold_key(h, gr);
	hg->hash = gr->hash;
	hg->rows = h->rows + h->nrows * (size_t)h->width;
	hg->touched = h->starts + h->nstarts;
	size_t kept = 0;
	for (size_t i = 0; i < gr->nclosed; i++) {
		const struct closed *e = &gr->closed[i];
		if (touched(e->first, e->last, w, v))
			hg->touched[hg->ntouched++] = e->start;
		if (e->last > v) { /* kept; its row as of v when that is its first commit */
			if (e->clean && e->first_kept && e->first == v &&
			    put_row(s, sc, hg, h->width, e->start, ENTRY_ACCS(s, gr, i) + s->nacc) < 0)
				h->whole = 0;
			if (kept != i) {
				gr->closed[kept] = *e;
				memcpy(ENTRY_ACCS(s, gr, kept), ENTRY_ACCS(s, gr, i),
				       2 * (size_t)s->nacc * sizeof *gr->accs);
			}
			kept++;
		} else if (e->clean && touched(e->first, e->last, w, v) &&
		           put_row(s, sc, hg, h->width, e->start, ENTRY_ACCS(s, gr, i)) < 0) {
			h->whole = 0;
		}
	}
	if (gr->open && kept != gr->nclosed) /* the open window's slot moves down */
		memcpy(ENTRY_ACCS(s, gr, kept), ENTRY_ACCS(s, gr, gr->nclosed),
		       2 * (size_t)s->nacc * sizeof *gr->accs);
	s->nclosed -= gr->nclosed - kept;
	gr->nclosed = kept;
	if (gr->open && touched(gr->open_first, gr->open_version, w, v))
		hg->touched[hg->ntouched++] = gr->open_start;
	if (gr->open && gr->open_clean && open_row(s, gr, v) &&
	    touched(gr->open_first, gr->open_version, w, v) &&
	    put_row(s, sc, hg, h->width, gr->open_start, open_row(s, gr, v)) < 0)
		h->whole = 0;
	h->nrows += hg->n;
	h->nstarts += hg->ntouched;
	if (hg->ntouched)
		h->order[h->norder++] = hg;
}

/* The version a run at v from w takes its harvest at when it leaves the
 * open windows starting at `start` (the clock's) opened since w for the
 * next run: the commit before the first row of the earliest of them --
 * when no window received rows both before and after it (which the run
 * would read from the source, and the next read again: series whose
 * windows turn at different commits), else v. */
static uint64_t deferred(const struct set *s, uint64_t w, uint64_t v, int64_t start)
{
	uint64_t cut = v;
	for (size_t i = 0; i < s->nslots; i++) {
		const struct group *gr = s->slots[i];
		if (gr && gr->open && gr->open_start == start && gr->open_first > w &&
		    gr->open_first <= cut)
			cut = gr->open_first - 1;
	}
	for (size_t i = 0; cut < v && i < s->nslots; i++) {
		const struct group *gr = s->slots[i];
		if (!gr)
			continue;
		if (gr->open && gr->open_first <= cut && gr->open_version > cut)
			return v;
		for (size_t k = 0; k < gr->nclosed; k++)
			if (gr->closed[k].first <= cut && gr->closed[k].last > cut)
				return v;
	}
	return cut;
}

/* The newest version c <= v (from w) at which a harvest can be whole:
 * every window with rows both at or before c and after it began at c
 * and is clean, so that its state at c is kept (an open window's
 * FIRST_ACCS, an entry's second accumulators: open_row, take_group).  A
 * window whose rows began before c and go on after it moves c to its
 * first commit when that state is kept, else to the commit before;
 * repeated until nothing straddles, at most CUT_ROUNDS times (then
 * group_whole finds what is left, and the run waits as before).  Rows
 * arriving faster than their windows close -- a bulk load, whose commits
 * each hold rows of windows closing and of windows opening -- leave no
 * version between two windows, so a durable version inside a window was
 * never whole before the cut; each window's state at its first commit
 * makes that commit a cut. */
#define CUT_ROUNDS 8
static uint64_t straddled(uint64_t c, uint64_t first, uint64_t last, int at_first);

static uint64_t whole_cut(const struct set *s, uint64_t w, uint64_t v)
{
	uint64_t c = v;
	for (int round = 0; round < CUT_ROUNDS && c > w; round++) {
		uint64_t before = c;
		for (size_t i = 0; i < s->nslots && c > w; i++) {
			const struct group *gr = s->slots[i];
			if (!gr)
				continue;
			for (size_t k = 0; k < gr->nclosed; k++) {
				const struct closed *e = &gr->closed[k];
				c = straddled(c, e->first, e->last, e->clean && e->first_kept);
			}
			if (gr->open)
				c = straddled(c, gr->open_first, gr->open_version,
				              gr->open_clean && gr->first_kept);
		}
		if (c == before)
			break;
	}
	return c;
}

/* c, or the version a window whose rows were committed from first to
 * last moves it to when it straddles c: its first commit when its state
 * there is kept (at_first), else the commit before. */
static uint64_t straddled(uint64_t c, uint64_t first, uint64_t last, int at_first)
{
	if (last <= c || first > c || (first == c && at_first))
		return c;
	return at_first ? first : first - 1;
}

/* ts__rollacc_take with src->mu held. */
static int take_locked(struct ts_table *src, const char *name, const ts__rollup_def *d,
                       const ts_aggspec *specs, int nspecs, uint64_t w, uint64_t v, int defer,
                       int64_t start, int whole_only, ts__rollacc_harvest **out,
                       uint64_t *upto)
{
	int rc = 0;
	struct set *s = registered(src, name, d, specs, nspecs);
	ts__rollacc_harvest *h = NULL;
	if (v == 0) /* registering only */
		s = NULL;
	if (s && defer && ts__rollacc_skip_changes && s->known <= w)
		v = *upto = deferred(s, w, v, start);
	if (s && whole_only && ts__rollacc_skip_changes && s->known <= w) {
		v = *upto = whole_cut(s, w, v);
		if (v <= w) {
			return 1; /* nothing whole to take */
		}
	}
	int whole = s && ts__rollacc_skip_changes && s->known <= w;
	size_t ngroups = 0, nrows = 0, nbytes = 0;
	for (size_t i = 0; s && i < s->nslots; i++) {
		const struct group *gr = s->slots[i];
		if (!gr || !harvested(gr, w, v))
			continue;
		if (whole && !group_whole(s, gr, w, v))
			whole = 0;
		ngroups++;
		nrows += gr->nclosed + 1; /* at most: the entries and the open window */
		nbytes += key_bytes(gr->key, NULL, s->g);
	}
	if (whole_only && !whole) {
		return 1; /* nothing taken */
	}
	if (s) {
		size_t n = 16;
		while (n < 2 * ngroups)
			n *= 2;
		int width = s->g + 1 + s->nspecs;
		if (!(h = calloc(1, sizeof *h)) || !(h->slots = calloc(n, sizeof *h->slots)) ||
		    !(h->order = malloc((ngroups + 1) * sizeof *h->order)) ||
		    !(h->rows = malloc((nrows + 1) * (size_t)width * sizeof *h->rows)) ||
		    !(h->starts = malloc((nrows + 1) * sizeof *h->starts)) ||
		    !(h->keys = malloc((ngroups * (size_t)s->g + 1) * sizeof *h->keys)) ||
		    !(h->bytes = malloc(nbytes + 1))) {
			ts__rollacc_harvest_free(h);
			h = NULL;
			rc = ts__fail(TS_ENOMEM, "out of memory");
		} else {
			h->nslots = n;
			h->g = s->g;
			h->width = width;
			/* every commit in (w, v] folded: its windows are those
			 * listed (else changes finds them) */
			h->exact = ts__rollacc_skip_changes && s->known <= w;
			h->whole = whole; /* unless a row fails (take_group) */
		}
	}
	const ts__schema *sc = ts__desc_schema(src->desc);
	for (size_t i = 0; h && i < s->nslots; i++)
		if (s->slots[i])
			take_group(s, s->slots[i], w, v, sc, h);
	if (rc < 0) {
		ts__rollacc_harvest_free(h);
		return rc;
	}
	*out = h;
	return 0;
}

int ts__rollacc_take(struct ts_table *src, const char *name, const ts__rollup_def *d,
                     const ts_aggspec *specs, int nspecs, uint64_t w, uint64_t v, int defer,
                     int64_t start, int whole_only, ts__rollacc_harvest **out, uint64_t *upto)
{
	*out = NULL;
	int rc = ts__table_lock(src);
	if (rc < 0)
		return rc;
	rc = take_locked(src, name, d, specs, nspecs, w, v, defer, start, whole_only, out, upto);
	ts__table_unlock(src);
	return rc;
}

void ts__rollacc_untake(struct ts_table *src, const char *name, uint64_t v)
{
	if (ts__table_lock(src) < 0) {
		ts__clear_error(); /* (closing: the sets go with the table) */
		return;
	}
	struct set *s = src->acc ? set_named(src->acc, name) : NULL;
	if (s && s->known != UINT64_MAX && s->known < v)
		s->known = v;
	ts__table_unlock(src);
}

int ts__rollacc_exact(const ts__rollacc_harvest *h)
{
	return h && h->exact;
}

int ts__rollacc_whole(const ts__rollacc_harvest *h)
{
	return h && h->exact && h->whole;
}

size_t ts__rollacc_groups(const ts__rollacc_harvest *h)
{
	return h ? h->norder : 0;
}

const ts_value *ts__rollacc_group(const ts__rollacc_harvest *h, size_t i,
                                  const int64_t **starts, size_t *n)
{
	*starts = h->order[i]->touched;
	*n = h->order[i]->ntouched;
	return h->order[i]->key;
}

const ts_value *ts__rollacc_rows(const ts__rollacc_harvest *h, size_t *n)
{
	*n = h ? h->nrows : 0;
	return h ? h->rows : NULL;
}

const ts_value *ts__rollacc_next(const ts__rollacc_harvest *h, const ts_value *prefix,
                                 int64_t from)
{
	if (!h)
		return NULL;
	uint64_t hash = hash_group(prefix, NULL, h->g);
	const struct hgroup *hg = NULL;
	for (size_t j = hash & (h->nslots - 1); h->slots[j].key; j = (j + 1) & (h->nslots - 1))
		if (h->slots[j].hash == hash && same_key(h->slots[j].key, prefix, NULL, h->g)) {
			hg = &h->slots[j];
			break;
		}
	if (!hg)
		return NULL;
	size_t lo = 0, hi = hg->n, w = (size_t)h->width;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (hg->rows[mid * w + (size_t)h->g].v.i < from)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < hg->n ? &hg->rows[lo * w] : NULL;
}
