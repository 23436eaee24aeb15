/*
 * test_daemon_race.c -- tsstored under requests that race each other on
 * one table across connections (issue 24): inserts racing alters (item 1:
 * one schema per batch, alter_race.h).
 *
 * Every test starts its own daemon on a fresh directory (as test_daemon.c)
 * and synchronises its clients on acknowledged requests, never on time, so
 * the outcome does not depend on how the machine schedules them; the
 * daemon must also still be alive and exit 0 on SIGTERM at the end.
 */
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

static int setup(void **state)
{
	struct tsd_test_daemon *d = tsd_test_daemon_new();
	if (!d)
		return -1;
	if (tsd_test_daemon_start(d, NULL) < 0) {
		tsd_test_daemon_dump_log(d);
		tsd_test_daemon_free(d);
		return -1;
	}
	*state = d;
	return 0;
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(daemon_race_insert_alter, setup, teardown),
	};
	return cmocka_run_group_tests_name("daemon_race", tests, NULL, NULL);
}
