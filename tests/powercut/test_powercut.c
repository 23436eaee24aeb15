/*
 * test_powercut.c -- the durability modes under power loss, on the rig of
 * pcfs.c (docs/powercut.md).
 *
 * The database lives on a pcfs mount.  Each round a child process opens
 * it through the library and runs random operations: batches of numbered
 * rows into tables m0 and m1 (each batch reported through a pipe once
 * ts_insert returns, with the time), flushes, merges, TTL changes, added
 * columns, table d created, filled and dropped over and over, and batches
 * into table e, whose TTL expires them: the database's clock moves
 * forward (at each round and during it), so that expiry deletes e's
 * tablets and readers hide its older rows.  After a
 * random number of operations the parent kills it with SIGKILL, wherever
 * it is, and cuts the power on the rig (mode A: every write not yet made
 * durable is lost; mode B: a random subset of them survives), unmounts,
 * and mounts a new rig over what survived.  Then, with no manual step:
 *
 *   - `tsstore -d DB check` on the files as the cut left them passes;
 *   - the database opens (recovery), and so does every table it lists;
 *   - m0 and m1 hold exactly batches 1..k (a prefix, each batch whole),
 *     with k >= the last batch acknowledged in sync mode commit; in mode
 *     interval every lost batch was acknowledged less than the interval
 *     (plus POWERCUT_SLACK_MS, default 2000, for a loaded machine: the
 *     window is measured and printed, and only checked in the long run)
 *     before the cut; in mode none anything past a prefix may go;
 *   - d, if it exists, holds a prefix of the batches of one of its
 *     incarnations; in commit mode it exists iff the last acknowledged
 *     create or drop says so, and holds what was acknowledged;
 *   - e holds exactly batches lo..k, each whole: k as for m0 and m1, lo
 *     the first batch not expired at the clock the check runs at (every
 *     batch has one timestamp, reported before its insert, and batches
 *     1..lo-1 are those below the expiry instant, clock - E_TTL);
 *   - ts_check on the reopened database passes.
 *
 * The database carries over from cut to cut.  The same loop runs with
 * tsstored as the writer (its database on the rig, its clock set by
 * TSSTORE_NOW, moved forward at each round; a client process doing the
 * same over its socket -- batches into m0, m1 and e, flushes, alters
 * adding columns and changing TTLs, d created, filled and dropped; the
 * daemon is the one killed).  Two self-tests keep the rig
 * honest: the exact survivors of a small program's writes, and the
 * writer with msync made a no-op, whose losses in sync mode commit must
 * be seen.
 *
 * TSSTORE_POWERCUT_CUTS sets the cuts per sync mode and cut mode
 * (default 4; `make powercut-test N=200`); POWERCUT_FILTER picks tests
 * (a cmocka pattern), POWERCUT_KEEP keeps a failed run's directory.
 * Without /dev/fuse every test skips.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "maint.h" /* ts__maint_pass: a maintenance pass now, as tests do */
#include "support.h"
#include "support_client.h"

#ifndef PCFS_PATH
#error "PCFS_PATH must name the rig"
#endif
#ifndef TSSTORE_PATH
#error "TSSTORE_PATH must name the admin command"
#endif

#define NOW INT64_C(1795262400000000000)
#define SEC INT64_C(1000000000)
#define BASE (NOW - 86400 * SEC)
#define ROWS 16
#define NT 2            /* the tables of numbered batches, m0 and m1 */
#define TE NT           /* table e's index among the numbered tables */
#define NN (NT + 1)     /* the numbered tables: m0, m1, e */
#define TD (NT + 1)     /* table d in the events */
#define INTERVAL_MS 100 /* sync_interval in mode interval */
#define STEP (60 * SEC) /* a move of the database's clock */
#define E_TTL (10 * STEP) /* table e's TTL, never altered */

static uint64_t rng = 0x2545F4914F6CDD1Du;
static uint64_t rnd(void) { return ts_test_xorshift(&rng); }

/* The database's clock: NOW at first, moved forward by the writer (a
 * report first, then the move) and by the parent between rounds; never
 * back.  The maintenance thread reads it too. */
static int64_t clock_now = NOW;
static int64_t test_clock(void *arg) { (void)arg; return __atomic_load_n(&clock_now, __ATOMIC_RELAXED); }

static int64_t mono_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)t.tv_sec * SEC + t.tv_nsec;
}

static int cuts(void)
{
	const char *s = getenv("TSSTORE_POWERCUT_CUTS");
	int n = s ? atoi(s) : 0;
	return n > 0 ? n : 4;
}

/* What the child reports through the pipe: EV_E_BEGIN (before e's batch
 * is inserted) gives its timestamp in gen, EV_CLOCK (before the clock
 * moves) the new time, EV_EXPIRED e's counter of tablets expired. */
enum { EV_BATCH, EV_D_CREATE, EV_D_DROP, EV_TARGET, EV_D_BEGIN, EV_E_BEGIN, EV_CLOCK, EV_EXPIRED };
struct event {
	int kind, table;
	int64_t batch, gen, at;
};

/* The rig: its directory, mount point, process. */
struct rig {
	char root[64], mnt[96], backing[96], store[96], out[96], db[128];
	pid_t pid;
};

static void rig_start(struct rig *r)
{
	char ctl[160];
	struct stat st;
	assert_int_equal(mkdir(r->store, 0755), 0);
	r->pid = fork();
	assert_true(r->pid >= 0);
	if (r->pid == 0) {
		execl(PCFS_PATH, PCFS_PATH, r->backing, r->mnt, r->store, r->out, NULL);
		_exit(127);
	}
	snprintf(ctl, sizeof ctl, "%s/.powercut", r->mnt);
	/* wait for the mount (a backstop of 60 s, not a pace) */
	for (int i = 0; stat(ctl, &st) < 0; i++) {
		int status;
		if (waitpid(r->pid, &status, WNOHANG) == r->pid)
			fail_msg("pcfs ended before mounting: status %d", status);
		if (i > 6000)
			fail_msg("pcfs did not mount in 60 s");
		nanosleep(&(struct timespec){0, 10000000}, NULL);
	}
}

/* Cut the power (mode 'A' or 'B'), unmount, and mount a new rig over
 * what survived. */
static void rig_cut(struct rig *r, char mode, char *stats, size_t size)
{
	char ctl[160], cmd[64];
	int status;
	snprintf(ctl, sizeof ctl, "%s/.powercut", r->mnt);
	int fd = open(ctl, O_RDWR);
	assert_true(fd >= 0);
	int n = snprintf(cmd, sizeof cmd, "%c %" PRIu64, mode, rnd() | 1);
	if (write(fd, cmd, (size_t)n) != n)
		fail_msg("cut: %s", strerror(errno));
	ssize_t got = pread(fd, stats, size - 1, 0);
	stats[got > 0 ? got : 0] = '\0';
	close(fd);
	while (umount2(r->mnt, 0) < 0) {
		if (errno != EBUSY)
			fail_msg("umount %s: %s", r->mnt, strerror(errno));
		nanosleep(&(struct timespec){0, 10000000}, NULL);
	}
	assert_int_equal(waitpid(r->pid, &status, 0), r->pid);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		fail_msg("pcfs ended with status %d", status);
	char *old = strdup(r->backing), *store = strdup(r->store);
	ts_test_rmdir(old);
	ts_test_rmdir(store);
	assert_int_equal(rename(r->out, r->backing), 0);
	rig_start(r);
}

static int fuse_available(void)
{
	int fd = open("/dev/fuse", O_RDWR);
	if (fd < 0)
		return 0;
	close(fd);
	return 1;
}

static void rig_init(struct rig *r)
{
	snprintf(r->root, sizeof r->root, "/tmp/tsstore-powercut-XXXXXX");
	assert_non_null(mkdtemp(r->root));
	snprintf(r->mnt, sizeof r->mnt, "%s/mnt", r->root);
	snprintf(r->backing, sizeof r->backing, "%s/backing", r->root);
	snprintf(r->store, sizeof r->store, "%s/store", r->root);
	snprintf(r->out, sizeof r->out, "%s/out", r->root);
	snprintf(r->db, sizeof r->db, "%s/db", r->mnt);
	assert_int_equal(mkdir(r->mnt, 0755), 0);
	assert_int_equal(mkdir(r->backing, 0755), 0);
	rig_start(r);
}

static void rig_stop(struct rig *r)
{
	int status;
	while (umount2(r->mnt, 0) < 0 && errno == EBUSY)
		nanosleep(&(struct timespec){0, 10000000}, NULL);
	waitpid(r->pid, &status, 0);
	ts_test_rmdir(strdup(r->root));
}

/* ---- the writer --------------------------------------------------------- */

static ts_sync_mode sync_mode;

/* The rig's self-test: with skip_msync set, the writer's msync calls
 * return at once without syncing anything (the program is linked with
 * -Wl,--wrap=msync), and the rig must notice. */
static int skip_msync;
int __real_msync(void *addr, size_t len, int flags);
int __wrap_msync(void *addr, size_t len, int flags);
int __wrap_msync(void *addr, size_t len, int flags)
{
	return skip_msync ? 0 : __real_msync(addr, len, flags);
}

static int open_db(const char *dir, unsigned flags, ts_db **db)
{
	ts_options o;
	ts_options_init(&o);
	o.flags = flags;
	o.sync = sync_mode;
	o.sync_interval = INTERVAL_MS * 1000000;
	o.clock = test_clock;
	return ts_open(dir, &o, db);
}

static void report(int fd, int kind, int table, int64_t batch, int64_t gen)
{
	struct event e = {kind, table, batch, gen, mono_ns()};
	if (write(fd, &e, sizeof e) != sizeof e)
		_exit(30);
}

static void die(const char *what)
{
	fprintf(stderr, "writer: %s: %s\n", what, ts_errmsg(NULL));
	_exit(31);
}

/* ts_test_insert_m for a table that may have columns appended: those
 * take their defaults. */
static int insert_wide(ts_table *t, const test_row *r, int n)
{
	ts_schema *sc;
	if (ts_table_schema(t, &sc) < 0)
		die("schema");
	int w = sc->ncolumns;
	ts_schema_free(sc);
	if (w == 4)
		return ts_test_insert_m(t, r, (size_t)n);
	ts_value *v = calloc((size_t)(n * w), sizeof *v);
	if (!v)
		_exit(32);
	for (int i = 0; i < n; i++) {
		v[i * w] = ts_string(r[i].host);
		v[i * w + 1] = ts_timestamp(r[i].ts);
		v[i * w + 2] = ts_int64(r[i].batch);
		v[i * w + 3] = ts_int64(r[i].v);
	}
	int rc = ts_insert(t, v, (size_t)n);
	free(v);
	return rc;
}

/* Table d's rows carry its incarnation in v: batch rows of v + gen * 1e9. */
static int insert_d(ts_table *t, int64_t gen, int64_t b)
{
	test_row r[ROWS];
	ts_test_batch_rows(r, ROWS, BASE, b);
	for (int i = 0; i < ROWS; i++)
		r[i].v += gen * 1000000000;
	return ts_test_insert_m(t, r, ROWS);
}

/* Table e's batch b: ROWS rows, host h00.., all at ts, batch b, v = b *
 * 1000 + i (one timestamp, so a batch is expired whole or not at all). */
static void e_rows(test_row *r, int64_t b, int64_t ts)
{
	ts_test_batch_rows(r, ROWS, 0, b);
	for (int i = 0; i < ROWS; i++)
		r[i].ts = ts;
}

/* Table e's counter of expired tablets, reported. */
static void report_expired(int fd, ts_table *e)
{
	ts_stat st[TS_STATS_MAX];
	int n;
	if (ts_table_stats(e, st, TS_STATS_MAX, &n) < 0)
		die("stats");
	for (int j = 0; j < n; j++)
		if (strcmp(st[j].name, "tablets_expired") == 0)
			report(fd, EV_EXPIRED, TE, 0, st[j].value);
}

/* Open what the previous rounds left (the parent has checked it) and go
 * on: ops operations, then EV_TARGET, then on until killed.  next[]: the
 * next batch of m0, m1 and e. */
static void writer(const char *dir, int fd, long ops, int64_t next[NN], int d_exists, int64_t d_gen,
                   int64_t d_next)
{
	ts_db *db;
	ts_table *t[NN], *d = NULL;
	test_row r[ROWS];
	char name[8];
	int ncols = 0;
	if (open_db(dir, TS_OPEN_CREATE, &db) < 0)
		die("open");
	for (int i = 0; i < NN; i++) {
		snprintf(name, sizeof name, i == TE ? "e" : "m%d", i);
		if (ts_table_open(db, name, &t[i]) < 0) {
			if (ts_test_create_like_m(db, name, i == TE ? E_TTL : 0) < 0 ||
			    ts_table_open(db, name, &t[i]) < 0)
				die("create");
		}
	}
	if (d_exists && ts_table_open(db, "d", &d) < 0)
		die("open d");
	for (long op = 0;; op++) {
		if (op == ops)
			report(fd, EV_TARGET, 0, 0, 0);
		unsigned x = (unsigned)(rnd() % 100);
		int i = (int)(rnd() % NT), j = (int)(rnd() % NN);
		if (x < 56) {
			ts_test_batch_rows(r, ROWS, BASE, next[i]);
			if (insert_wide(t[i], r, ROWS) < 0)
				die("insert");
			report(fd, EV_BATCH, i, next[i]++, 0);
		} else if (x < 66) {
			/* e's rows are at the clock (+ b, so that every batch has
			 * its own time): never expired when inserted */
			int64_t ts = test_clock(NULL) + next[TE];
			report(fd, EV_E_BEGIN, TE, next[TE], ts);
			e_rows(r, next[TE], ts);
			if (ts_test_insert_m(t[TE], r, ROWS) < 0)
				die("insert e");
			report(fd, EV_BATCH, TE, next[TE]++, 0);
		} else if (x < 74) {
			if (ts_flush(t[x < 72 ? j : TE], INT64_MAX) < 0) /* e more often: more tablets */
				die("flush");
		} else if (x < 77) {
			if (ts_merge(t[j], NULL) < 0)
				die("merge");
		} else if (x < 79) {
			/* a TTL that keeps every row (they are a day old) */
			if (ts_alter_ttl(t[i], (int64_t)(rnd() % 3) * 86400 * 365 * SEC) < 0)
				die("ttl");
		} else if (x < 80 && ncols < 4) {
			char cname[32];
			snprintf(cname, sizeof cname, "x%d_%" PRIu64, ncols++, rnd() % 100000);
			ts_column c = {cname, TS_INT64, {TS_INT64, {.i = 7}}};
			int rc = ts_alter_add(t[i], &c);
			if (rc < 0 && rc != TS_EEXIST && rc != TS_ETOOBIG)
				die("alter");
		} else if (x < 84) {
			/* time passes: e's older batches expire */
			int64_t now = test_clock(NULL) + STEP;
			report(fd, EV_CLOCK, TE, 0, now);
			__atomic_store_n(&clock_now, now, __ATOMIC_RELAXED);
		} else if (x < 86) {
			/* what the maintenance thread does every second, now:
			 * among it the expiry that deletes e's tablets */
			if (ts__maint_pass(db) < 0)
				die("maintain");
			report_expired(fd, t[TE]);
		} else if (x < 94) {
			if (!d) {
				report(fd, EV_D_BEGIN, 0, 0, d_gen + 1);
				if (ts_test_create_like_m(db, "d", 0) < 0 || ts_table_open(db, "d", &d) < 0)
					die("create d");
				d_gen++;
				d_next = 1;
				report(fd, EV_D_CREATE, 0, 0, d_gen);
			} else {
				if (insert_d(d, d_gen, d_next) < 0)
					die("insert d");
				report(fd, EV_BATCH, TD, d_next++, d_gen);
				if (d_next % 3 == 0 && ts_flush(d, INT64_MAX) < 0)
					die("flush d");
			}
		} else if (d) {
			ts_table_close(d);
			d = NULL;
			report(fd, EV_D_BEGIN, 0, 0, d_gen);
			if (ts_drop(db, "d") < 0)
				die("drop d");
			report(fd, EV_D_DROP, 0, 0, d_gen);
		}
	}
}

/* ---- the daemon writer ---------------------------------------------------- */

/* The daemon of the daemon runs (NULL: the library writer). */
static struct tsd_test_daemon *daemon_under_test;

/* A response to insert or flush; returns 0, 1 when the daemon is gone, or
 * exits with a message. */
static int daemon_answer(struct tsd_test_conn *c, const char *want)
{
	char *got = NULL;
	int rc = tsd_test_read_response(c, TSD_TEST_STALL_MS, NULL, &got);
	if (rc == TSD_TEST_EOF || (rc == TSD_TEST_ERROR && !got))
		return 1;
	if (rc != 0 || strcmp(tsd_test_drop_version(got), want) != 0) {
		fprintf(stderr, "daemon writer: want %s, got %s (%d)\n", want, got ? got : "nothing", rc);
		_exit(33);
	}
	free(got);
	return 0;
}

/* A request whose answer is {"ok":true} or, when may_fail names it, an
 * error of that code (e.g. "EEXIST"): 0, or 1 when the daemon is gone. */
static int daemon_do(struct tsd_test_conn *c, const char *req, const char *may_fail)
{
	char *got = tsd_test_call(c, req);
	if (!got)
		return 1;
	if (strcmp(got, "{\"ok\":true}\n") != 0 && !(may_fail && strstr(got, may_fail))) {
		fprintf(stderr, "daemon writer: %s: got %s\n", req, got);
		_exit(33);
	}
	free(got);
	return 0;
}

/* Insert rows[0..ROWS) into table name as objects (so that columns
 * added meanwhile take their defaults): 0, or 1 when the daemon is gone. */
static int daemon_insert(struct tsd_test_conn *c, const char *name, const test_row *r)
{
	char req[4096], want[64];
	size_t len = (size_t)snprintf(req, sizeof req, "{\"op\":\"insert\",\"table\":\"%s\",\"rows\":[", name);
	for (int j = 0; j < ROWS; j++)
		len += (size_t)snprintf(req + len, sizeof req - len,
		                        "%s{\"host\":\"%s\",\"ts\":%" PRId64 ",\"batch\":%" PRId64 ",\"v\":%" PRId64 "}",
		                        j ? "," : "", r[j].host, r[j].ts, r[j].batch, r[j].v);
	snprintf(req + len, sizeof req - len, "]}");
	snprintf(want, sizeof want, "{\"ok\":true,\"inserted\":%d}\n", ROWS);
	return tsd_test_send_line(c, req) < 0 || daemon_answer(c, want) == 1;
}

/* The create request of a table of m's schema. */
static void create_request(char *req, size_t size, const char *name, int64_t ttl)
{
	snprintf(req, size,
	         "{\"op\":\"create\",\"table\":\"%s\",\"columns\":["
	         "{\"name\":\"host\",\"type\":\"string\"},{\"name\":\"ts\",\"type\":\"timestamp\"},"
	         "{\"name\":\"batch\",\"type\":\"int64\"},{\"name\":\"v\",\"type\":\"int64\"}],"
	         "\"key\":[\"host\",\"ts\"],\"ttl\":%" PRId64 "}", name, ttl);
}

/* The writer through tsstored: tables m0, m1 and (after the first
 * round, first == 0) e created if missing, then batches (acknowledged once answered), flushes, alters (a column
 * added, a TTL that keeps every row) of m0 and m1, e's counter of
 * expired tablets read, and d created, filled and dropped, until the
 * daemon dies.  The daemon's clock is clock_now (TSSTORE_NOW). */
static void daemon_writer(const struct tsd_test_daemon *dm, int fd, long ops, int64_t next[NN],
                          int d_exists, int64_t d_gen, int64_t d_next, int first)
{
	struct tsd_test_conn *c = tsd_test_connect(dm, TSD_TEST_UNIX);
	char req[4096], name[8];
	test_row r[ROWS];
	if (!c)
		_exit(34);
	for (int i = 0; i < (first ? NT : NN); i++) {
		snprintf(name, sizeof name, i == TE ? "e" : "m%d", i);
		create_request(req, sizeof req, name, i == TE ? E_TTL : 0);
		if (daemon_do(c, req, "EEXIST"))
			_exit(0); /* the daemon is gone already */
	}
	for (long op = 0;; op++) {
		int i = (int)(rnd() % NT), j = (int)(rnd() % (first ? NT : NN));
		unsigned x = (unsigned)(rnd() % 100);
		if (op == ops)
			report(fd, EV_TARGET, 0, 0, 0);
		snprintf(name, sizeof name, "m%d", i);
		if (x < 60 || (first && (x < 70 || (x >= 82 && x < 84)))) { /* no e yet */
			ts_test_batch_rows(r, ROWS, BASE, next[i]);
			if (daemon_insert(c, name, r))
				_exit(0);
			report(fd, EV_BATCH, i, next[i]++, 0);
		} else if (x < 70) {
			int64_t ts = clock_now + next[TE];
			report(fd, EV_E_BEGIN, TE, next[TE], ts);
			e_rows(r, next[TE], ts);
			if (daemon_insert(c, "e", r))
				_exit(0);
			report(fd, EV_BATCH, TE, next[TE]++, 0);
		} else if (x < 78) {
			snprintf(req, sizeof req, "{\"op\":\"flush\",\"table\":\"%s\"}", j == TE ? "e" : j ? "m1" : "m0");
			if (tsd_test_send_line(c, req) < 0 || daemon_answer(c, "{\"ok\":true}\n") == 1)
				_exit(0);
		} else if (x < 81) {
			/* a TTL that keeps every row (they are a day old) */
			snprintf(req, sizeof req, "{\"op\":\"alter\",\"table\":\"%s\",\"ttl\":\"%dd\"}", name,
			         (int)(rnd() % 3) * 365);
			if (daemon_do(c, req, NULL))
				_exit(0);
		} else if (x < 82) {
			snprintf(req, sizeof req, "{\"op\":\"alter\",\"table\":\"%s\",\"add\":[{\"name\":"
			         "\"y%" PRIu64 "\",\"type\":\"int64\",\"default\":7}]}", name, rnd() % 100000);
			if (daemon_do(c, req, "\"code\":\"E")) /* EEXIST, ETOOBIG */
				_exit(0);
		} else if (x < 84) {
			char *got = tsd_test_call(c, "{\"op\":\"stats\",\"table\":\"e\"}");
			const char *p = got ? strstr(got, "\"tablets_expired\":") : NULL;
			if (!got)
				_exit(0);
			if (!p) {
				fprintf(stderr, "daemon writer: stats of e: %s\n", got);
				_exit(33);
			}
			report(fd, EV_EXPIRED, TE, 0, atoll(p + strlen("\"tablets_expired\":")));
			free(got);
		} else if (x < 94) {
			if (!d_exists) {
				report(fd, EV_D_BEGIN, 0, 0, d_gen + 1);
				create_request(req, sizeof req, "d", 0);
				if (daemon_do(c, req, NULL))
					_exit(0);
				d_exists = 1;
				d_gen++;
				d_next = 1;
				report(fd, EV_D_CREATE, 0, 0, d_gen);
			} else {
				ts_test_batch_rows(r, ROWS, BASE, d_next);
				for (int k = 0; k < ROWS; k++)
					r[k].v += d_gen * 1000000000;
				if (daemon_insert(c, "d", r))
					_exit(0);
				report(fd, EV_BATCH, TD, d_next++, d_gen);
				if (d_next % 3 == 0 && daemon_do(c, "{\"op\":\"flush\",\"table\":\"d\"}", NULL))
					_exit(0);
			}
		} else if (d_exists) {
			report(fd, EV_D_BEGIN, 0, 0, d_gen);
			if (daemon_do(c, "{\"op\":\"drop\",\"table\":\"d\"}", NULL))
				_exit(0);
			d_exists = 0;
			report(fd, EV_D_DROP, 0, 0, d_gen);
		}
	}
}

/* ---- the parent ---------------------------------------------------------- */

/* What the parent knows of the tables across the rounds. */
struct model {
	int64_t stored[NN];        /* batches held after the last cut (e: or expired) */
	int64_t acked[NN], *acked_at[NN]; /* acked_at[i][b]: when b was acknowledged */
	size_t cap[NN];
	int64_t clock;             /* the latest time the database's clock may have reached */
	int64_t *e_ts;             /* e_ts[b]: the timestamp of e's batch b */
	size_t e_cap;
	int64_t e_begun;           /* e's last batch whose insert began */
	int64_t e_lo;              /* e's first batch not expired at the last check */
	int64_t round_expired;     /* e's tablets expired this round, as reported */
	int64_t d_gen, d_stored;   /* d's incarnation and batches held (d_gen 0: none yet) */
	int d_exists;
	int64_t d_acked_gen, d_acked; /* commit mode: what was acknowledged for d */
	int d_acked_exists;
	int d_pending;             /* a create or drop of d begun, not acknowledged */
	/* the tally */
	long cuts, batches_acked, batches_lost, rounds_lost;
	long tablets_expired;      /* e's, as the writers reported them */
	long violations;           /* acknowledged commit-mode batches lost (self-test only) */
	int64_t worst_window;
};

static void note_ack(struct model *m, int i, int64_t b, int64_t at)
{
	if ((size_t)b >= m->cap[i]) {
		m->cap[i] = 2 * (size_t)b + 64;
		m->acked_at[i] = realloc(m->acked_at[i], m->cap[i] * sizeof *m->acked_at[i]);
		assert_non_null(m->acked_at[i]);
	}
	m->acked_at[i][b] = at;
	assert_int_equal(b, m->acked[i] + 1);
	m->acked[i] = b;
	m->batches_acked++;
}

/* Take in what the writer reported; returns 1 for EV_TARGET. */
static int note_event(struct model *m, const struct event *e)
{
	switch (e->kind) {
	case EV_TARGET:
		return 1;
	case EV_BATCH:
		if (e->table < NN)
			note_ack(m, e->table, e->batch, e->at);
		else
			m->d_acked = e->batch;
		break;
	case EV_E_BEGIN:
		if ((size_t)e->batch >= m->e_cap) {
			m->e_cap = 2 * (size_t)e->batch + 64;
			m->e_ts = realloc(m->e_ts, m->e_cap * sizeof *m->e_ts);
			assert_non_null(m->e_ts);
		}
		m->e_ts[e->batch] = e->gen;
		m->e_begun = e->batch;
		break;
	case EV_CLOCK:
		assert_true(e->gen >= m->clock);
		m->clock = e->gen;
		break;
	case EV_EXPIRED:
		if (e->gen > m->round_expired)
			m->round_expired = e->gen;
		break;
	case EV_D_BEGIN:
		m->d_pending = 1;
		break;
	default:
		m->d_pending = 0;
		m->d_acked_gen = e->gen;
		m->d_acked_exists = e->kind == EV_D_CREATE;
		m->d_acked = 0;
	}
	return 0;
}

/* TSSTORE_NOW for the daemon and the admin command: the clock at now. */
static void set_now_env(int64_t now)
{
	char text[32];
	snprintf(text, sizeof text, "%" PRId64, now);
	setenv("TSSTORE_NOW", text, 1);
}

/* One round: the writer until the target, then the kill; returns the time
 * of the kill. */
static int64_t run_writer(const char *dir, struct model *m, long ops)
{
	int p[2];
	struct event e;
	int64_t next[NN], killed = 0;
	int reached = 0;
	for (int i = 0; i < NN; i++)
		next[i] = m->stored[i] + 1;
	/* time passed since the last round (the daemon's clock does not
	 * move within a round: more at once) */
	m->clock += daemon_under_test ? 8 * STEP : STEP;
	clock_now = m->clock;
	set_now_env(m->clock);
	/* close-on-exec: the daemon must not hold the writer's end, or an
	 * early end of the writer would never be seen */
	assert_int_equal(pipe2(p, O_CLOEXEC), 0);
	if (daemon_under_test) {
		char mode[16], interval[32];
		snprintf(mode, sizeof mode, "%s", sync_mode == TS_SYNC_NONE ? "none" :
		         sync_mode == TS_SYNC_INTERVAL ? "interval" : "commit");
		snprintf(interval, sizeof interval, "%dms", INTERVAL_MS);
		/* m0 and m1, made in the first round, have the default 64 MiB
		 * log segments; e and d's incarnations, made later, 1 MiB
		 * ones: cheaper to make on the rig, and cuts land in their
		 * rollovers */
		const char *args[] = {"--sync", mode, "--sync-interval", interval,
		                      m->cuts ? "--log-segment-size" : NULL, "1M", NULL};
		if (tsd_test_daemon_start(daemon_under_test, args) < 0) {
			tsd_test_daemon_dump_log(daemon_under_test);
			fail_msg("tsstored did not start on the rig");
		}
	}
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(p[0]);
		rng ^= (uint64_t)getpid() << 20;
		if (daemon_under_test)
			daemon_writer(daemon_under_test, p[1], ops, next, m->d_exists, m->d_gen, m->d_stored + 1,
			              m->cuts == 0);
		else
			writer(dir, p[1], ops, next, m->d_exists, m->d_gen, m->d_stored + 1);
	}
	close(p[1]);
	for (int i = 0; i < NN; i++)
		m->acked[i] = m->stored[i];
	m->e_begun = m->stored[TE];
	m->round_expired = 0;
	m->d_acked_gen = m->d_gen;
	m->d_acked_exists = m->d_exists;
	m->d_acked = m->d_stored;
	m->d_pending = 0;
	while (!reached && read(p[0], &e, sizeof e) == sizeof e)
		reached = note_event(m, &e);
	if (!reached) {
		int status;
		waitpid(pid, &status, 0);
		fail_msg("the writer ended before its target: status %d", status);
	}
	/* somewhere in whatever it does next: up to a few hundred
	 * microseconds of it, or nothing */
	long spin = (long)(rnd() % 400000);
	for (volatile long s = 0; s < spin; s++)
		;
	int status;
	if (daemon_under_test) { /* the daemon dies; its client sees it and exits */
		tsd_test_daemon_kill(daemon_under_test);
		killed = mono_ns();
		assert_int_equal(waitpid(pid, &status, 0), pid);
		if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
			fail_msg("the daemon's client failed: status %d", status);
	} else {
		kill(pid, SIGKILL);
		killed = mono_ns();
		assert_int_equal(waitpid(pid, &status, 0), pid);
		if (!(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL))
			fail_msg("the writer ended on its own: status %d", status);
	}
	/* what it acknowledged before the kill */
	while (read(p[0], &e, sizeof e) == sizeof e)
		note_event(m, &e);
	close(p[0]);
	m->tablets_expired += m->round_expired;
	return killed;
}

/* `tsstore -d DIR check` passes. */
static void check_cli(const char *dir)
{
	int status;
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		dup2(2, 1);
		execl(TSSTORE_PATH, TSSTORE_PATH, "-d", dir, "check", NULL);
		_exit(127);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		fail_msg("tsstore -d %s check after the cut: status %d", dir, status);
}

static void report_problem(void *arg, const char *table, const char *file, const char *what)
{
	(void)arg;
	print_error("check: %s: %s: %s\n", table, file, what);
}

/* The numbered batches of one table: returns k (batches 1..k). */
static long read_batches(ts_db *db, const char *name, int64_t gen)
{
	ts_table *t;
	test_row *rows = NULL;
	if (ts_table_open(db, name, &t) < 0)
		fail_msg("open %s after the cut: %s", name, ts_errmsg(db));
	long n = ts_test_read_m_wide(t, &rows);
	if (n < 0)
		fail_msg("read %s after the cut: %s", name, ts_strerror((int)n));
	for (long i = 0; i < n; i++)
		rows[i].v -= gen * 1000000000;
	long k = ts_test_check_batches(rows, n, ROWS, BASE);
	if (k < 0)
		fail_msg("%s: not a prefix of its batches (%ld rows)", name, n);
	free(rows);
	ts_table_close(t);
	return k;
}

/* Table e after the cut, read at the model's clock: exactly batches
 * lo..k, each whole, where lo is the first batch whose time is not below
 * the expiry instant (clock - E_TTL; e's TTL never changes, so it has no
 * horizon) -- expiry deleted tablets of older batches, readers hide the
 * rest -- and k at most the last batch begun.  Returns k, or lo - 1 when
 * nothing is left (then batches 1..lo-1 are all expired, stored or not:
 * the same to every later check, whose expiry instant is not lower). */
static long read_e(ts_db *db, struct model *m)
{
	ts_table *t;
	test_row *rows = NULL;
	long n = 0;
	int64_t expiry = m->clock - E_TTL, lo = 1;
	while (lo <= m->e_begun && m->e_ts[lo] < expiry)
		lo++;
	m->e_lo = lo;
	if (ts_table_open(db, "e", &t) == 0) { /* its create may be lost */
		n = ts_test_read_m_wide(t, &rows);
		if (n < 0)
			fail_msg("read e after the cut: %s", ts_strerror((int)n));
		ts_table_close(t);
	} else if (m->stored[TE] >= lo) {
		fail_msg("e is gone after the cut, with batch %lld stored and not expired",
		         (long long)m->stored[TE]);
	}
	long cnt = n / ROWS;
	if (n % ROWS || lo + cnt - 1 > m->e_begun)
		fail_msg("e: %ld rows, not whole batches from %lld to at most %lld", n, (long long)lo,
		         (long long)m->e_begun);
	for (long i = 0; i < n; i++) {
		/* sorted by (host, ts): host h%02d, then batches lo..k */
		const test_row *r = &rows[i];
		int64_t b = lo + i % cnt;
		char host[16];
		snprintf(host, sizeof host, "h%02d", (int)(i / cnt));
		if (strcmp(r->host, host) || r->ts != m->e_ts[b] || r->batch != b || r->v != b * 1000 + i / cnt)
			fail_msg("e: row %ld (%s, %lld, batch %lld, v %lld) is not batch %lld's row %s (ts %lld); "
			         "expected batches %lld..%lld at clock %lld", i, r->host, (long long)r->ts,
			         (long long)r->batch, (long long)r->v, (long long)b, host, (long long)m->e_ts[b],
			         (long long)lo, (long long)(lo + cnt - 1), (long long)m->clock);
	}
	free(rows);
	return lo + cnt - 1;
}

/* Numbered table i holds batches 1..k (or lo..k): check k against what
 * was acknowledged, count the losses, and go on from k. */
static void settle(struct model *m, int i, const char *name, long k, int64_t killed)
{
	/* the batch in flight at the kill may have been stored */
	if (k > m->acked[i] + 1)
		fail_msg("%s holds %ld batches, only %lld sent", name, k, (long long)m->acked[i] + 1);
	if (k < m->acked[i]) {
		int64_t window = killed - m->acked_at[i][k + 1];
		m->batches_lost += m->acked[i] - k;
		if (sync_mode == TS_SYNC_COMMIT && skip_msync)
			m->violations++;
		else if (sync_mode == TS_SYNC_COMMIT)
			fail_msg("%s lost acknowledged batches %ld..%lld in sync mode commit", name, k + 1,
			         (long long)m->acked[i]);
		if (sync_mode == TS_SYNC_INTERVAL && window > m->worst_window)
			m->worst_window = window;
	}
	m->stored[i] = k;
	m->acked[i] = k;
}

/* After the cut: check, recover, verify against what was acknowledged,
 * all at the latest time the writer's clock may have reached. */
static void verify(const char *dir, struct model *m, int64_t killed)
{
	ts_db *db;
	clock_now = m->clock;
	set_now_env(m->clock);
	check_cli(dir);
	if (open_db(dir, 0, &db) < 0)
		fail_msg("reopen after the cut: %s", ts_errmsg(NULL));
	/* every table it lists opens, and is one the writer made */
	char **names;
	int ntables;
	if (ts_tables(db, &names, &ntables) < 0)
		fail_msg("list the tables after the cut: %s", ts_errmsg(db));
	for (int i = 0; i < ntables; i++) {
		ts_table *any;
		if (strcmp(names[i], "m0") && strcmp(names[i], "m1") && strcmp(names[i], "d") && strcmp(names[i], "e"))
			fail_msg("table %s after the cut", names[i]);
		if (ts_table_open(db, names[i], &any) < 0)
			fail_msg("open %s after the cut: %s", names[i], ts_errmsg(db));
		ts_table_close(any);
	}
	ts_free_names(names);
	for (int i = 0; i < NT; i++) {
		char name[8];
		snprintf(name, sizeof name, "m%d", i);
		settle(m, i, name, read_batches(db, name, 0), killed);
	}
	settle(m, TE, "e", read_e(db, m), killed);
	/* d: absent, or a prefix of the batches of one incarnation */
	ts_table *t;
	int exists = ts_table_open(db, "d", &t) == 0;
	if (exists) {
		ts_table_close(t);
		/* which incarnation: the v of its first row says */
		long k = -1;
		for (int64_t g = m->d_acked_gen + m->d_pending; g >= 1 && k < 0 && g >= m->d_gen; g--) {
			ts_table *dt;
			test_row *rows = NULL;
			assert_int_equal(ts_table_open(db, "d", &dt), 0);
			long n = ts_test_read_m_wide(dt, &rows);
			ts_table_close(dt);
			assert_true(n >= 0);
			for (long j = 0; j < n; j++)
				rows[j].v -= g * 1000000000;
			k = ts_test_check_batches(rows, n, ROWS, BASE);
			free(rows);
			if (k >= 0) {
				m->d_gen = g;
				m->d_stored = k;
			}
		}
		if (k < 0)
			fail_msg("d: not a prefix of the batches of any incarnation");
	}
	if (sync_mode == TS_SYNC_COMMIT && !m->d_pending && exists != m->d_acked_exists)
		fail_msg("d %s after the cut, but its last acknowledged %s said otherwise",
		         exists ? "exists" : "is gone", m->d_acked_exists ? "create" : "drop");
	if (sync_mode == TS_SYNC_COMMIT && exists && m->d_gen == m->d_acked_gen && m->d_stored < m->d_acked) {
		if (!skip_msync)
			fail_msg("d (incarnation %lld) holds %lld batches, %lld acknowledged in sync mode commit",
			         (long long)m->d_gen, (long long)m->d_stored, (long long)m->d_acked);
		m->violations++;
	}
	if (!exists)
		m->d_stored = 0, m->d_gen = m->d_acked_gen;
	m->d_exists = exists;
	ts_close(db);
	/* ts_check after recovery, on a read-only handle: with no merge of
	 * its own beside it (on this rig a tablet a merge removed meanwhile
	 * reads as ESTALE, not ENOENT: docs/powercut.md) */
	ts_check_opts opts = {.problem = report_problem};
	if (open_db(dir, TS_OPEN_READONLY, &db) < 0)
		fail_msg("read-only open after recovery: %s", ts_errmsg(NULL));
	if (ts_check(db, NULL, &opts) < 0)
		fail_msg("check after recovery: %s", ts_errmsg(db));
	ts_close(db);
}

/* The rig of the test running, for the teardown after a failure. */
static struct rig *running;

static int teardown(void **state)
{
	(void)state;
	skip_msync = 0; /* a failed self-test leaves it set */
	if (daemon_under_test) {
		tsd_test_daemon_free(daemon_under_test);
		daemon_under_test = NULL;
	}
	if (running) {
		umount2(running->mnt, MNT_DETACH);
		kill(running->pid, SIGKILL);
		waitpid(running->pid, NULL, 0);
		if (getenv("POWERCUT_KEEP")) /* to look at what failed */
			print_message("powercut: kept %s\n", running->root);
		else
			ts_test_rmdir(strdup(running->root));
		running = NULL;
	}
	return 0;
}

static long powercut_loop(ts_sync_mode mode, char cut_mode)
{
	static struct rig r;
	struct model m;
	char stats[512] = "";
	memset(&m, 0, sizeof m);
	m.clock = NOW;
	sync_mode = mode;
	setenv("TSSTORE_BOOT_ID", "powercut-0", 1);
	rig_init(&r);
	running = &r;
	if (daemon_under_test) { /* its database is the rig's db */
		char link[TSD_TEST_PATH_MAX + 8];
		assert_int_equal(mkdir(r.db, 0755), 0);
		int fd = open(r.mnt, O_RDONLY | O_DIRECTORY);
		assert_true(fd >= 0 && fsync(fd) == 0);
		close(fd);
		snprintf(link, sizeof link, "%s", daemon_under_test->data);
		assert_int_equal(symlink(r.db, link), 0);
	}
	int n = cuts();
	if (skip_msync && n > 4)
		n = 4;
	for (int c = 0; c < n; c++) {
		long ops = 1 + (long)(rnd() % 300);
		int64_t killed = run_writer(r.db, &m, ops);
		rig_cut(&r, cut_mode, stats, sizeof stats);
		/* a power loss is a reboot: what HEAD says of the page cache
		 * no longer holds (lib/log.c, head_commit) */
		char boot[40];
		snprintf(boot, sizeof boot, "powercut-%d-%d-%c-%d", (int)getpid(), (int)mode, cut_mode, c + 1);
		setenv("TSSTORE_BOOT_ID", boot, 1);
		verify(r.db, &m, killed);
		m.cuts++;
	}
	const char *names[] = {"none", "interval", "commit"};
	print_message("powercut: %ssync %s, mode %c: %ld cuts, %ld batches (%ld rows) acknowledged, "
	              "%ld lost (%ld rows); worst loss window %.3f s; m0 %lld, m1 %lld batches; "
	              "e batches %lld..%lld (1..%lld expired), %ld tablets expired; rig %s",
	              daemon_under_test ? "tsstored, " : "", names[mode], cut_mode, m.cuts, m.batches_acked, m.batches_acked * ROWS,
	              m.batches_lost, m.batches_lost * ROWS, (double)m.worst_window / 1e9,
	              (long long)m.stored[0], (long long)m.stored[1], (long long)m.e_lo,
	              (long long)m.stored[TE], (long long)m.e_lo - 1, m.tablets_expired, stats);
	const char *slack = getenv("POWERCUT_SLACK_MS");
	if (mode == TS_SYNC_INTERVAL && slack &&
	    m.worst_window > (INTERVAL_MS + atoll(slack)) * 1000000)
		fail_msg("interval: lost batches acknowledged %.3f s before the cut", (double)m.worst_window / 1e9);
	for (int i = 0; i < NN; i++)
		free(m.acked_at[i]);
	free(m.e_ts);
	rig_stop(&r);
	running = NULL;
	return m.violations;
}

#define NEED_FUSE() do { if (!fuse_available()) { print_message("powercut: /dev/fuse unavailable: skipped\n"); skip(); } } while (0)

static void powercut_none_drop_all(void **state) { (void)state; NEED_FUSE(); powercut_loop(TS_SYNC_NONE, 'A'); }
static void powercut_interval_drop_all(void **state) { (void)state; NEED_FUSE(); powercut_loop(TS_SYNC_INTERVAL, 'A'); }
static void powercut_commit_drop_all(void **state) { (void)state; NEED_FUSE(); powercut_loop(TS_SYNC_COMMIT, 'A'); }
static void powercut_none_keep_some(void **state) { (void)state; NEED_FUSE(); powercut_loop(TS_SYNC_NONE, 'B'); }
static void powercut_interval_keep_some(void **state) { (void)state; NEED_FUSE(); powercut_loop(TS_SYNC_INTERVAL, 'B'); }
static void powercut_commit_keep_some(void **state) { (void)state; NEED_FUSE(); powercut_loop(TS_SYNC_COMMIT, 'B'); }

/* The same through tsstored (its database on the rig): inserts and
 * flushes over its socket, the daemon killed and the power cut. */
static void daemon_loop(ts_sync_mode mode, char cut_mode)
{
	daemon_under_test = tsd_test_daemon_new();
	assert_non_null(daemon_under_test);
	powercut_loop(mode, cut_mode);
	tsd_test_daemon_free(daemon_under_test);
	daemon_under_test = NULL;
}

static void powercut_daemon_none_drop_all(void **state) { (void)state; NEED_FUSE(); daemon_loop(TS_SYNC_NONE, 'A'); }
static void powercut_daemon_interval_drop_all(void **state) { (void)state; NEED_FUSE(); daemon_loop(TS_SYNC_INTERVAL, 'A'); }
static void powercut_daemon_commit_drop_all(void **state) { (void)state; NEED_FUSE(); daemon_loop(TS_SYNC_COMMIT, 'A'); }
static void powercut_daemon_none_keep_some(void **state) { (void)state; NEED_FUSE(); daemon_loop(TS_SYNC_NONE, 'B'); }
static void powercut_daemon_interval_keep_some(void **state) { (void)state; NEED_FUSE(); daemon_loop(TS_SYNC_INTERVAL, 'B'); }
static void powercut_daemon_commit_keep_some(void **state) { (void)state; NEED_FUSE(); daemon_loop(TS_SYNC_COMMIT, 'B'); }

/* The rig finds a missing durability step: sync mode commit without its
 * msync loses acknowledged batches at the cuts. */
static void powercut_rig_catches_skipped_msync(void **state)
{
	(void)state;
	NEED_FUSE();
	skip_msync = 1;
	long v = powercut_loop(TS_SYNC_COMMIT, 'A');
	skip_msync = 0;
	print_message("powercut: without msync, %ld losses of acknowledged batches found\n", v);
	assert_true(v > 0);
}

/* Write a whole file at path. */
static void put(const char *path, const char *text, int sync)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	if (sync)
		assert_int_equal(fsync(fd), 0);
	close(fd);
}

static void sync_dir(const char *path)
{
	int fd = open(path, O_RDONLY | O_DIRECTORY);
	assert_true(fd >= 0);
	assert_int_equal(fsync(fd), 0);
	close(fd);
}

/* The file at path holds exactly want (NULL: there is no file). */
static void expect_file(const char *path, const char *want, size_t len)
{
	char got[16384];
	int fd = open(path, O_RDONLY);
	if (!want) {
		if (fd >= 0)
			fail_msg("%s survived the cut", path);
		return;
	}
	if (fd < 0)
		fail_msg("%s: lost in the cut", path);
	ssize_t n = read(fd, got, sizeof got);
	close(fd);
	assert_int_equal(n, (ssize_t)len);
	assert_memory_equal(got, want, len);
}

/* The rig's model on a small program (docs/powercut.md): what survives a
 * cut in mode A is exactly what fsync, fdatasync, msync and a directory
 * fsync made durable. */
static void powercut_rig_model(void **state)
{
	static struct rig r;
	char p[256], q[256], stats[512], page2[8192];
	(void)state;
	NEED_FUSE();
	rig_init(&r);
	running = &r;
	snprintf(p, sizeof p, "%s/kept", r.mnt);
	put(p, "synced", 1);
	snprintf(p, sizeof p, "%s/old", r.mnt);
	put(p, "renamed", 1);
	sync_dir(r.mnt);
	snprintf(p, sizeof p, "%s/kept", r.mnt); /* unsynced overwrite: lost */
	int fd = open(p, O_WRONLY);
	assert_int_equal(pwrite(fd, "XX", 2, 0), 2);
	close(fd);
	snprintf(p, sizeof p, "%s/mapped", r.mnt); /* page 0 msynced, page 1 not */
	fd = open(p, O_RDWR | O_CREAT, 0644);
	assert_int_equal(ftruncate(fd, 8192), 0);
	assert_int_equal(fsync(fd), 0);
	snprintf(q, sizeof q, "%s/sub", r.mnt); /* a directory and its file, all synced */
	assert_int_equal(mkdir(q, 0755), 0);
	sync_dir(r.mnt);
	char *m = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	assert_true(m != MAP_FAILED);
	memcpy(m, "page0", 5);
	assert_int_equal(msync(m, 4096, MS_SYNC), 0);
	memcpy(m + 4096, "page1", 5);
	munmap(m, 8192);
	close(fd);
	snprintf(p, sizeof p, "%s/sub/f", r.mnt);
	put(p, "in sub", 1);
	sync_dir(q);
	snprintf(p, sizeof p, "%s/nameless", r.mnt); /* data synced, name not */
	put(p, "data", 1);
	snprintf(p, sizeof p, "%s/old", r.mnt); /* rename not synced: lost */
	snprintf(q, sizeof q, "%s/new", r.mnt);
	assert_int_equal(rename(p, q), 0);
	rig_cut(&r, 'A', stats, sizeof stats);
	snprintf(p, sizeof p, "%s/kept", r.mnt);
	expect_file(p, "synced", 6);
	snprintf(p, sizeof p, "%s/nameless", r.mnt);
	expect_file(p, NULL, 0);
	snprintf(p, sizeof p, "%s/old", r.mnt);
	expect_file(p, "renamed", 7);
	snprintf(p, sizeof p, "%s/new", r.mnt);
	expect_file(p, NULL, 0);
	memset(page2, 0, sizeof page2);
	memcpy(page2, "page0", 5);
	snprintf(p, sizeof p, "%s/mapped", r.mnt);
	expect_file(p, page2, sizeof page2);
	snprintf(p, sizeof p, "%s/sub/f", r.mnt);
	expect_file(p, "in sub", 6);
	rig_stop(&r);
	running = NULL;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(powercut_rig_model, teardown),
		cmocka_unit_test_teardown(powercut_rig_catches_skipped_msync, teardown),
		cmocka_unit_test_teardown(powercut_none_drop_all, teardown),
		cmocka_unit_test_teardown(powercut_interval_drop_all, teardown),
		cmocka_unit_test_teardown(powercut_commit_drop_all, teardown),
		cmocka_unit_test_teardown(powercut_none_keep_some, teardown),
		cmocka_unit_test_teardown(powercut_interval_keep_some, teardown),
		cmocka_unit_test_teardown(powercut_commit_keep_some, teardown),
		cmocka_unit_test_teardown(powercut_daemon_none_drop_all, teardown),
		cmocka_unit_test_teardown(powercut_daemon_interval_drop_all, teardown),
		cmocka_unit_test_teardown(powercut_daemon_commit_drop_all, teardown),
		cmocka_unit_test_teardown(powercut_daemon_none_keep_some, teardown),
		cmocka_unit_test_teardown(powercut_daemon_interval_keep_some, teardown),
		cmocka_unit_test_teardown(powercut_daemon_commit_keep_some, teardown),
	};
	if (getenv("POWERCUT_FILTER")) /* e.g. "*commit_keep*" */
		cmocka_set_test_filter(getenv("POWERCUT_FILTER"));
	return cmocka_run_group_tests_name("powercut", tests, NULL, NULL);
}
