/*
 * test_avl.c -- the versioned AVL trees against a model: random keys of
 * every shape the comparison shortcuts of avl.c distinguish (ts-only keys,
 * keys of 16 and 24 bytes decided inside the nodes, long keys sharing long
 * prefixes that need the row or the bounds, label sets of three strings
 * whose keys differ first in their first 8 bytes, the next 8 or later), inserted in random and in
 * ts-major order with duplicates.  After every commit the tree is checked
 * (order, balance, node fields), scanned against the model, searched for
 * present and absent keys, and an old root must still name the old tree.
 * With replace (the policy replace), equal keys take the new row while
 * every older root keeps naming its rows.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "avl.h"
#include "key.h"
#include "support.h"

#define KEY_MAX 64

typedef struct tkey {
	unsigned char b[KEY_MAX];
	size_t n;
} tkey;

enum shape { TS_ONLY, INT_TS, SHORT_STR_TS, LONG_STR_TS, LABELS_TS };

static uint64_t seed = 88172645463325252u;
static uint64_t rnd(void) { return ts_test_xorshift(&seed); }

static int tkey_cmp(const void *a, const void *b)
{
	const tkey *x = a, *y = b;
	return ts__key_cmp(x->b, x->n, y->b, y->n);
}

/* The stem (key columns before ts) number i of a shape. */
static void put_stem(ts_buf *b, enum shape sh, unsigned i)
{
	char s[48];
	size_t n;
	switch (sh) {
	case TS_ONLY:
		break;
	case INT_TS: {
		ts_value v = ts_int64((int64_t)i - 20);
		ts__key_put(b, &v);
		break;
	}
	case SHORT_STR_TS: /* "h0".."h39", "" and embedded NULs: 2..14 bytes */
		n = (size_t)snprintf(s, sizeof s, "h%u", i);
		if (i % 7 == 0)
			s[1] = '\0';
		if (i % 11 == 0)
			n = 0;
		ts_value v = ts_stringn(s, n);
		ts__key_put(b, &v);
		break;
	case LONG_STR_TS: /* long shared prefixes, lengths on both sides of 16 */
		n = 6 + i % 25;
		memset(s, 'a', n);
		s[n - 1] = (char)('0' + i % 10);
		ts_value w = ts_stringn(s, n);
		ts__key_put(b, &w);
		break;
	case LABELS_TS: /* label sets as remote write makes them: three
	                 * strings, keys of 30 to 40 bytes, differing in
	                 * bytes 0..8, 8..16 (decided by the node's kpfx2)
	                 * or only past 16 (the row read) */
		for (int c = 0; c < 3; c++) {
			static const char *const first[] = {"x86", "x64", "arm64"};
			if (c == 0)
				n = (size_t)snprintf(s, sizeof s, "%s", first[i % 3]);
			else if (c == 1)
				n = (size_t)snprintf(s, sizeof s, "us-east-%u", i / 3 % 3);
			else
				n = (size_t)snprintf(s, sizeof s, "host_%u", i);
			ts_value l = ts_stringn(s, n);
			ts__key_put(b, &l);
		}
		break;
	}
}

static void make_key(tkey *k, enum shape sh, unsigned stem, int64_t ts)
{
	ts_buf b;
	ts__buf_init(&b);
	put_stem(&b, sh, stem);
	ts_value v = ts_timestamp(ts);
	ts__key_put(&b, &v);
	assert_false(b.oom);
	assert_true(b.len <= KEY_MAX);
	memcpy(k->b, b.data, b.len);
	k->n = b.len;
	ts__buf_free(&b);
}

/* Append a row record holding just the key (all ts__rowrec_key reads). */
static uint64_t append_key(ts__log *log, const tkey *k, const unsigned char **logged)
{
	ts_buf b;
	ts__buf_init(&b);
	ts__put_bytes(&b, k->b, k->n);
	uint64_t lsn;
	unsigned char *p;
	assert_int_equal(ts__log_alloc(log, TS_ROWREC_HEADER + b.len, &lsn, (void **)&p), 0);
	ts__store_u32(p, (uint32_t)b.len);
	memset(p + 4, 0, 4);
	memcpy(p + TS_ROWREC_HEADER, b.data, b.len);
	*logged = p + TS_ROWREC_HEADER + (b.len - k->n);
	ts__buf_free(&b);
	return lsn;
}

struct model {
	tkey *k;
	size_t n, cap;
};

static int model_has(const struct model *m, const tkey *k)
{
	/* an empty model has no array yet, and bsearch's base must not be NULL */
	return m->n && bsearch(k, m->k, m->n, sizeof *k, tkey_cmp) != NULL;
}

static void model_add(struct model *m, const tkey *k)
{
	if (m->n == m->cap) {
		m->cap = m->cap ? m->cap * 2 : 256;
		m->k = realloc(m->k, m->cap * sizeof *m->k);
		assert_non_null(m->k);
	}
	size_t i = m->n;
	while (i > 0 && tkey_cmp(&m->k[i - 1], k) > 0) {
		m->k[i] = m->k[i - 1];
		i--;
	}
	m->k[i] = *k;
	m->n++;
}

/* The tree at root holds exactly the model's keys, in order. */
static void expect_tree(ts__log *log, uint64_t root, const struct model *m)
{
	assert_int_equal(ts__avl_check(log, root), (long)m->n);
	ts__avl_iter it;
	ts__avl_iter_init(&it, log, root, 0);
	for (size_t i = 0; i < m->n; i++) {
		uint64_t row = ts__avl_iter_next(&it);
		const unsigned char *k;
		size_t n;
		assert_true(row != 0);
		ts__rowrec_key(log, row, &k, &n);
		assert_int_equal(n, m->k[i].n);
		assert_memory_equal(k, m->k[i].b, n);
	}
	assert_true(ts__avl_iter_next(&it) == 0);
}

static void run(enum shape sh, int ts_major)
{
	char *dir = ts_test_tmpdir();
	ts__log *log;
	assert_int_equal(ts__log_open(dir, 0, 0, 0, &log), 0);
	struct model m = {0}, old = {0};
	uint64_t root = 0, old_root = 0;
	unsigned stems = sh == TS_ONLY ? 1 : 40;
	int64_t next_ts = 0;
	unsigned next_stem = 0;
	for (int batch = 0; batch < 60; batch++) {
		uint64_t batch_lsn;
		assert_int_equal(ts__log_begin(log, &batch_lsn), 0);
		struct model added = {0};
		int nrows = 1 + (int)(rnd() % 200);
		for (int r = 0; r < nrows; r++) {
			tkey k;
			if (ts_major) { /* every stem at one ts, then the next ts */
				if (rnd() % 50 == 0) /* now and then an old one */
					make_key(&k, sh, (unsigned)(rnd() % stems), (int64_t)(rnd() % (uint64_t)(next_ts + 1)));
				else
					make_key(&k, sh, next_stem, next_ts);
				if (++next_stem == stems) {
					next_stem = 0;
					next_ts++;
				}
			} else { /* random, small ts range: many duplicates */
				make_key(&k, sh, (unsigned)(rnd() % stems), (int64_t)(rnd() % 300) - 150);
			}
			const unsigned char *logged;
			uint64_t row = append_key(log, &k, &logged);
			ts__avl_ins ins = {.log = log, .batch = batch_lsn, .key = logged, .klen = k.n,
			                   .row = row};
			int rc = ts__avl_insert(&ins, &root);
			int dup = model_has(&m, &k) || model_has(&added, &k);
			assert_int_equal(rc, dup ? TS_EDUPKEY : 0);
			if (dup) {
				const unsigned char *fk;
				size_t fn;
				ts__rowrec_key(log, ins.found, &fk, &fn);
				assert_int_equal(fn, k.n);
				assert_memory_equal(fk, k.b, fn);
			} else {
				model_add(&added, &k);
			}
		}
		ts__root rt = {.period_start = 0, .period_len = 1, .root = root};
		assert_int_equal(ts__log_commit(log, &rt, 1, (uint64_t)nrows, 0), 0);
		for (size_t i = 0; i < added.n; i++)
			model_add(&m, &added.k[i]);
		free(added.k);
		expect_tree(log, root, &m);
		if (batch == 10) { /* keep this version */
			old_root = root;
			old.n = old.cap = m.n;
			old.k = malloc(m.n * sizeof *m.k);
			memcpy(old.k, m.k, m.n * sizeof *m.k);
		}
	}
	expect_tree(log, old_root, &old); /* untouched by 49 later commits */
	for (int i = 0; i < 2000; i++) { /* find: present and absent keys */
		tkey k;
		make_key(&k, sh, (unsigned)(rnd() % (stems + 2)), (int64_t)(rnd() % 400) - 200);
		uint64_t row = 0;
		assert_int_equal(ts__avl_find(log, root, k.b, k.n, &row), model_has(&m, &k));
	}
	print_message("avl: %zu keys\n", m.n);
	free(m.k);
	free(old.k);
	ts__log_close(log, 1);
	ts_test_rmdir(dir);
}

/* Keys with the row LSN each names, sorted by key. */
struct rmodel {
	tkey k[512];
	uint64_t row[512];
	size_t n;
};

static void rmodel_put(struct rmodel *m, const tkey *k, uint64_t row)
{
	size_t i = 0;
	while (i < m->n && tkey_cmp(&m->k[i], k) < 0)
		i++;
	if (i < m->n && tkey_cmp(&m->k[i], k) == 0) {
		m->row[i] = row;
		return;
	}
	assert_true(m->n < 512);
	memmove(&m->k[i + 1], &m->k[i], (m->n - i) * sizeof *m->k);
	memmove(&m->row[i + 1], &m->row[i], (m->n - i) * sizeof *m->row);
	m->k[i] = *k;
	m->row[i] = row;
	m->n++;
}

/* The tree at root names exactly the model's rows, in key order. */
static void expect_rows(ts__log *log, uint64_t root, const struct rmodel *m)
{
	assert_int_equal(ts__avl_check(log, root), (long)m->n);
	ts__avl_iter it;
	ts__avl_iter_init(&it, log, root, 0);
	for (size_t i = 0; i < m->n; i++)
		assert_int_equal(ts__avl_iter_next(&it), m->row[i]);
	assert_true(ts__avl_iter_next(&it) == 0);
	for (size_t i = 0; i < m->n; i++) {
		uint64_t row = 0;
		assert_int_equal(ts__avl_find(log, root, m->k[i].b, m->k[i].n, &row), 1);
		assert_int_equal(row, m->row[i]);
	}
}

/* Inserts with replace (the policy replace): an equal key's node names
 * the new row -- in a node of the batch (in place) or a published one
 * (copied) -- the node count stays, found names the row replaced, and
 * every older root still names its own rows. */
static void replace_run(enum shape sh)
{
	char *dir = ts_test_tmpdir();
	ts__log *log;
	assert_int_equal(ts__log_open(dir, 0, 0, 0, &log), 0);
	static struct rmodel m, saved[8];
	uint64_t root = 0, roots[8];
	memset(&m, 0, sizeof m);
	for (int batch = 0; batch < 8; batch++) {
		uint64_t batch_lsn;
		assert_int_equal(ts__log_begin(log, &batch_lsn), 0);
		int nrows = 1 + (int)(rnd() % 60);
		for (int r = 0; r < nrows; r++) {
			tkey k;
			make_key(&k, sh, (unsigned)(rnd() % 8), (int64_t)(rnd() % 40));
			const unsigned char *logged;
			uint64_t row = append_key(log, &k, &logged), had = 0;
			for (size_t i = 0; i < m.n; i++)
				if (tkey_cmp(&m.k[i], &k) == 0)
					had = m.row[i];
			ts__avl_ins ins = {.log = log, .batch = batch_lsn, .key = logged, .klen = k.n,
			                   .row = row, .replace = 1};
			assert_int_equal(ts__avl_insert(&ins, &root), 0);
			assert_int_equal(ins.found, had);
			rmodel_put(&m, &k, row);
		}
		ts__root rt = {.period_start = 0, .period_len = 1, .root = root};
		assert_int_equal(ts__log_commit(log, &rt, 1, (uint64_t)nrows, 0), 0);
		expect_rows(log, root, &m);
		roots[batch] = root;
		saved[batch] = m;
	}
	for (int batch = 0; batch < 8; batch++) /* older versions untouched */
		expect_rows(log, roots[batch], &saved[batch]);
	ts__log_close(log, 1);
	ts_test_rmdir(dir);
}

static void avl_replace_short(void **s) { (void)s; replace_run(SHORT_STR_TS); }
static void avl_replace_long(void **s) { (void)s; replace_run(LONG_STR_TS); }

static void avl_ts_only_random(void **s) { (void)s; run(TS_ONLY, 0); }
static void avl_ts_only_major(void **s) { (void)s; run(TS_ONLY, 1); }
static void avl_int_random(void **s) { (void)s; run(INT_TS, 0); }
static void avl_int_major(void **s) { (void)s; run(INT_TS, 1); }
static void avl_short_string_random(void **s) { (void)s; run(SHORT_STR_TS, 0); }
static void avl_short_string_major(void **s) { (void)s; run(SHORT_STR_TS, 1); }
static void avl_long_string_random(void **s) { (void)s; run(LONG_STR_TS, 0); }
static void avl_long_string_major(void **s) { (void)s; run(LONG_STR_TS, 1); }
static void avl_labels_random(void **s) { (void)s; run(LABELS_TS, 0); }
static void avl_labels_major(void **s) { (void)s; run(LABELS_TS, 1); }

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(avl_ts_only_random),
		cmocka_unit_test(avl_ts_only_major),
		cmocka_unit_test(avl_int_random),
		cmocka_unit_test(avl_int_major),
		cmocka_unit_test(avl_short_string_random),
		cmocka_unit_test(avl_short_string_major),
		cmocka_unit_test(avl_long_string_random),
		cmocka_unit_test(avl_long_string_major),
		cmocka_unit_test(avl_labels_random),
		cmocka_unit_test(avl_labels_major),
		cmocka_unit_test(avl_replace_short),
		cmocka_unit_test(avl_replace_long),
	};
	return cmocka_run_group_tests_name("avl", tests, NULL, NULL);
}
