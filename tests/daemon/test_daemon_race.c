/*
 * test_daemon_race.c -- tsstored under requests that race each other on
 * one table across connections (issue 24): inserts racing alters (item 1:
 * one schema per batch, alter_race.h), and inserts, queries, alters and
 * flushes racing a drop (item 9: ENOENT-style errors only, no files
 * left).
 *
 * Every test starts its own daemon on a fresh directory (as test_daemon.c)
 * and synchronises its clients on acknowledged requests, never on time, so
 * the outcome does not depend on how the machine schedules them; the
 * daemon must also still be alive and exit 0 on SIGTERM at the end.
 */
#include <dirent.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <jansson.h>
#include <tsstore.h>

#include "alter_race.h"
#include "support_client.h"

/* A daemon whose loopback TCP clients may alter, flush and drop too
 * (--loopback-access admin): the races run over TCP and the unix
 * socket alike. */
static int setup(void **state)
{
	static const char *const args[] = {"--loopback-access", "admin", NULL};
	return (*state = tsd_test_daemon_up(0, args)) ? 0 : -1;
}

static int teardown(void **state)
{
	tsd_test_daemon_free(*state);
	return 0;
}

static void stop_cleanly(struct tsd_test_daemon *d)
{
	assert_true(tsd_test_daemon_alive(d));
	assert_int_equal(tsd_test_daemon_stop(d, AR_WAIT_MS), 0);
}

/* Four connections insert self-describing rows while a fifth makes the
 * model's 24 alters; every value read back is the writer's or the
 * column's default.  (Before the daemon passed its parse version to
 * ts_insert_at, rows parsed by one schema were read by the next: values
 * under the wrong columns, and the daemon reading past its array.) */
static void daemon_race_insert_alter(void **state)
{
	static struct ar_run r;
	memset(&r, 0, sizeof r);
	r.d = *state;
	r.writers = 4;
	r.rounds = 8;
	snprintf(r.table, sizeof r.table, "%s", AM_TABLE);
	if (ar_run(&r) < 0) {
		tsd_test_daemon_dump_log(r.d);
		fail_msg("%s", r.error);
	}
	print_message("insert/alter race: %ld rows checked, %ld stale array batches refused\n",
	              r.rows, r.refused);
	assert_true(r.rows >= 4L * 8 * AR_BATCH);
	stop_cleanly(*state);
}

/* ---- drop ---- */

enum { DROP_ROUNDS = 6, DROP_KINDS = 4 };

static const char *const drop_kinds[DROP_KINDS] = {"insert", "query", "alter", "flush"};

struct drop_round {
	struct tsd_test_daemon *d;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int started;
	long ok[DROP_KINDS];
	char code[DROP_KINDS][32];
	char message[DROP_KINDS][300];
};

struct drop_client {
	struct drop_round *r;
	int kind;
	pthread_t th;
};

static void drop_started(struct drop_round *r)
{
	pthread_mutex_lock(&r->mu);
	r->started++;
	pthread_cond_broadcast(&r->cv);
	pthread_mutex_unlock(&r->mu);
}

static const char *drop_request(int kind, long i, char *buf, size_t size)
{
	switch (kind) {
	case 0:
		snprintf(buf, size, "{\"op\":\"insert\",\"table\":\"dr\",\"rows\":[{\"k\":%ld,"
		         "\"ts\":%ld}]}", i, 1735689600000000000L + i);
		break;
	case 1: snprintf(buf, size, "{\"op\":\"query\",\"table\":\"dr\"}"); break;
	case 2: snprintf(buf, size, "{\"op\":\"alter\",\"table\":\"dr\",\"ttl\":\"%s\"}",
	                 i % 2 ? "0" : "1000d"); break;
	default: snprintf(buf, size, "{\"op\":\"flush\",\"table\":\"dr\"}");
	}
	return buf;
}

/* Requests of one kind until the first error, which the drop brings. */
static void *drop_client_main(void *arg)
{
	struct drop_client *x = arg;
	struct drop_round *r = x->r;
	struct tsd_test_conn *c = tsd_test_connect(r->d, x->kind % 2 ? TSD_TEST_TCP : TSD_TEST_UNIX);
	char req[256];
	for (long i = 0; c; i++) {
		json_t *resp = ar_call(c, drop_request(x->kind, i, req, sizeof req), NULL);
		if (!ar_ok(resp)) {
			const json_t *e = json_object_get(resp, "error");
			const char *code = json_string_value(json_object_get(e, "code"));
			snprintf(r->code[x->kind], sizeof r->code[x->kind], "%s", code ? code : "none");
			snprintf(r->message[x->kind], sizeof r->message[x->kind], "%s", ar_errtext(resp));
			json_decref(resp);
			break;
		}
		json_decref(resp);
		if (r->ok[x->kind]++ == 0)
			drop_started(r);
	}
	if (r->ok[x->kind] == 0)
		drop_started(r);
	tsd_test_close(c);
	return NULL;
}

/* The entries of the database directory that belong to table dr. */
static int drop_leftovers(const char *dir, char *first, size_t size)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;
	assert_non_null(d);
	while ((e = readdir(d)))
		if (strcmp(e->d_name, "dr") == 0 || strncmp(e->d_name, ".dropped-dr-", 12) == 0 ||
		    strncmp(e->d_name, ".tmp-dr-", 8) == 0)
			if (n++ == 0)
				snprintf(first, size, "%s", e->d_name);
	closedir(d);
	return n;
}

/* Per round: table dr; an inserter, a querier, an alterer and a flusher,
 * each on its own connection; once each has had a success, drop on
 * another.  Every request racing the drop gets ECLOSED ("table \"dr\"
 * was dropped", or "is being dropped") or, opened after it, ENOENT --
 * never EIO -- and no file of dr is left. */
static void daemon_race_drop(void **state)
{
	struct tsd_test_daemon *d = *state;
	struct tsd_test_conn *c = tsd_test_connect(d, TSD_TEST_UNIX);
	char left[256];
	assert_non_null(c);
	for (int round = 0; round < DROP_ROUNDS; round++) {
		static struct drop_round r;
		struct drop_client x[DROP_KINDS];
		memset(&r, 0, sizeof r);
		r.d = d;
		pthread_mutex_init(&r.mu, NULL);
		pthread_cond_init(&r.cv, NULL);
		json_t *resp = ar_call(c, "{\"op\":\"create\",\"table\":\"dr\",\"columns\":"
		                          "[{\"name\":\"k\",\"type\":\"int64\"},{\"name\":\"ts\","
		                          "\"type\":\"timestamp\"}],\"key\":[\"k\",\"ts\"]}", NULL);
		assert_true(ar_ok(resp));
		json_decref(resp);
		for (int k = 0; k < DROP_KINDS; k++) {
			x[k] = (struct drop_client){.r = &r, .kind = k};
			assert_int_equal(pthread_create(&x[k].th, NULL, drop_client_main, &x[k]), 0);
		}
		pthread_mutex_lock(&r.mu);
		while (r.started < DROP_KINDS)
			pthread_cond_wait(&r.cv, &r.mu);
		pthread_mutex_unlock(&r.mu);
		resp = ar_call(c, "{\"op\":\"drop\",\"table\":\"dr\"}", NULL);
		int dropped = ar_ok(resp);
		char why[300];
		snprintf(why, sizeof why, "%s", ar_errtext(resp));
		json_decref(resp);
		for (int k = 0; k < DROP_KINDS; k++)
			pthread_join(x[k].th, NULL);
		if (!dropped)
			fail_msg("round %d: drop: %s", round, why);
		for (int k = 0; k < DROP_KINDS; k++) {
			int closed = strcmp(r.code[k], "ECLOSED") == 0 &&
			             (strstr(r.message[k], "table \"dr\" was dropped") ||
			              strstr(r.message[k], "table \"dr\" is being dropped"));
			int gone = strcmp(r.code[k], "ENOENT") == 0 &&
			           strstr(r.message[k], "no such table \"dr\"");
			if (r.ok[k] == 0 || !(closed || gone))
				fail_msg("round %d: %s (%ld ok) racing the drop: %s %s", round, drop_kinds[k],
				         r.ok[k], r.code[k], r.message[k]);
		}
		if (drop_leftovers(d->data, left, sizeof left))
			fail_msg("round %d: %s left in %s", round, left, d->data);
		pthread_cond_destroy(&r.cv);
		pthread_mutex_destroy(&r.mu);
	}
	tsd_test_close(c);
	stop_cleanly(d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(daemon_race_insert_alter, setup, teardown),
		cmocka_unit_test_setup_teardown(daemon_race_drop, setup, teardown),
	};
	return cmocka_run_group_tests_name("daemon_race", tests, NULL, NULL);
}
