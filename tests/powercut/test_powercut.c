/*
 * test_powercut.c -- the durability modes under power loss, on the rig of
 * pcfs.c (docs/powercut.md).
 *
 * The database lives on a pcfs mount.  Each round a child process opens
 * it through the library and runs random operations: batches of numbered
 * rows into tables m0 and m1 (each batch reported through a pipe once
 * ts_insert returns, with the time), flushes, merges, TTL changes, added
 * columns, and table d created, filled and dropped over and over.  After a
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
 *   - ts_check on the reopened database passes.
 *
 * The database carries over from cut to cut.  The same loop runs with
 * tsstored as the writer (its database on the rig, a client process
 * inserting numbered batches into m0 and m1 and flushing over its
 * socket; the daemon is the one killed).  Two self-tests keep the rig
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
#define INTERVAL_MS 100 /* sync_interval in mode interval */

static uint64_t rng = 0x2545F4914F6CDD1Du;
static uint64_t rnd(void) { return ts_test_xorshift(&rng); }
static int64_t fixed_clock(void *arg) { (void)arg; return NOW; }

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

/* What the child reports through the pipe. */
enum { EV_BATCH, EV_D_CREATE, EV_D_DROP, EV_TARGET, EV_D_BEGIN };
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
	o.clock = fixed_clock;
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

/* Open what the previous rounds left (the parent has checked it) and go
 * on: ops operations, then EV_TARGET, then on until killed. */
static void writer(const char *dir, int fd, long ops, int64_t next[NT], int d_exists, int64_t d_gen,
                   int64_t d_next)
{
	ts_db *db;
	ts_table *t[NT], *d = NULL;
	test_row r[ROWS];
	char name[8];
	int ncols = 0;
	if (open_db(dir, TS_OPEN_CREATE, &db) < 0)
		die("open");
	for (int i = 0; i < NT; i++) {
		snprintf(name, sizeof name, "m%d", i);
		if (ts_table_open(db, name, &t[i]) < 0) {
			if (ts_test_create_like_m(db, name, 0) < 0 || ts_table_open(db, name, &t[i]) < 0)
				die("create");
		}
	}
	if (d_exists && ts_table_open(db, "d", &d) < 0)
		die("open d");
	for (long op = 0;; op++) {
		if (op == ops)
			report(fd, EV_TARGET, 0, 0, 0);
		unsigned x = (unsigned)(rnd() % 100);
		int i = (int)(rnd() % NT);
		if (x < 70) {
			ts_test_batch_rows(r, ROWS, BASE, next[i]);
			if (insert_wide(t[i], r, ROWS) < 0)
				die("insert");
			report(fd, EV_BATCH, i, next[i]++, 0);
		} else if (x < 78) {
			if (ts_flush(t[i], INT64_MAX) < 0)
				die("flush");
		} else if (x < 81) {
			if (ts_merge(t[i], NULL) < 0)
				die("merge");
		} else if (x < 84) {
			/* a TTL that keeps every row (they are a day old) */
			if (ts_alter_ttl(t[i], (int64_t)(rnd() % 3) * 86400 * 365 * SEC) < 0)
				die("ttl");
		} else if (x < 85 && ncols < 4) {
			char cname[32];
			snprintf(cname, sizeof cname, "x%d_%" PRIu64, ncols++, rnd() % 100000);
			ts_column c = {cname, TS_INT64, {TS_INT64, {.i = 7}}};
			int rc = ts_alter_add(t[i], &c);
			if (rc < 0 && rc != TS_EEXIST && rc != TS_ETOOBIG)
				die("alter");
		} else if (x < 95) {
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
				report(fd, EV_BATCH, NT, d_next++, d_gen);
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
	if (rc != 0 || strcmp(got, want) != 0) {
		fprintf(stderr, "daemon writer: want %s, got %s (%d)\n", want, got ? got : "nothing", rc);
		_exit(33);
	}
	free(got);
	return 0;
}

/* The writer through tsstored: tables m0 and m1 created if missing,
 * then batches (acknowledged once answered) and now and then a flush,
 * until the daemon dies. */
static void daemon_writer(const struct tsd_test_daemon *d, int fd, long ops, int64_t next[NT])
{
	struct tsd_test_conn *c = tsd_test_connect(d, TSD_TEST_UNIX);
	char req[4096];
	if (!c)
		_exit(34);
	for (int i = 0; i < NT; i++) {
		snprintf(req, sizeof req,
		         "{\"op\":\"create\",\"table\":\"m%d\",\"columns\":["
		         "{\"name\":\"host\",\"type\":\"string\"},{\"name\":\"ts\",\"type\":\"timestamp\"},"
		         "{\"name\":\"batch\",\"type\":\"int64\"},{\"name\":\"v\",\"type\":\"int64\"}],"
		         "\"key\":[\"host\",\"ts\"]}", i);
		char *got = tsd_test_call(c, req);
		if (!got)
			_exit(0); /* the daemon is gone already */
		free(got); /* ok, or the table exists */
	}
	for (long op = 0;; op++) {
		int i = (int)(rnd() % NT), rc;
		if (op == ops)
			report(fd, EV_TARGET, 0, 0, 0);
		if (rnd() % 10 == 0) {
			snprintf(req, sizeof req, "{\"op\":\"flush\",\"table\":\"m%d\"}", i);
			if (tsd_test_send_line(c, req) < 0 || (rc = daemon_answer(c, "{\"ok\":true}\n")) == 1)
				_exit(0);
			continue;
		}
		test_row r[ROWS];
		ts_test_batch_rows(r, ROWS, BASE, next[i]);
		size_t len = (size_t)snprintf(req, sizeof req, "{\"op\":\"insert\",\"table\":\"m%d\",\"rows\":[", i);
		for (int j = 0; j < ROWS; j++)
			len += (size_t)snprintf(req + len, sizeof req - len, "%s[\"%s\",%" PRId64 ",%" PRId64 ",%" PRId64 "]",
			                        j ? "," : "", r[j].host, r[j].ts, r[j].batch, r[j].v);
		snprintf(req + len, sizeof req - len, "]}");
		char want[64];
		snprintf(want, sizeof want, "{\"ok\":true,\"inserted\":%d}\n", ROWS);
		if (tsd_test_send_line(c, req) < 0 || daemon_answer(c, want) == 1)
			_exit(0);
		report(fd, EV_BATCH, i, next[i]++, 0);
	}
}

/* ---- the parent ---------------------------------------------------------- */

/* What the parent knows of the tables across the rounds. */
struct model {
	int64_t stored[NT];        /* batches held after the last cut */
	int64_t acked[NT], *acked_at[NT]; /* acked_at[i][b]: when b was acknowledged */
	size_t cap[NT];
	int64_t d_gen, d_stored;   /* d's incarnation and batches held (d_gen 0: none yet) */
	int d_exists;
	int64_t d_acked_gen, d_acked; /* commit mode: what was acknowledged for d */
	int d_acked_exists;
	int d_pending;             /* a create or drop of d begun, not acknowledged */
	/* the tally */
	long cuts, batches_acked, batches_lost, rounds_lost;
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
		if (e->table < NT)
			note_ack(m, e->table, e->batch, e->at);
		else
			m->d_acked = e->batch;
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

/* One round: the writer until the target, then the kill; returns the time
 * of the kill. */
static int64_t run_writer(const char *dir, struct model *m, long ops)
{
	int p[2];
	struct event e;
	int64_t next[NT], killed = 0;
	int reached = 0;
	for (int i = 0; i < NT; i++)
		next[i] = m->stored[i] + 1;
	assert_int_equal(pipe(p), 0);
	if (daemon_under_test) {
		char mode[16], interval[32];
		snprintf(mode, sizeof mode, "%s", sync_mode == TS_SYNC_NONE ? "none" :
		         sync_mode == TS_SYNC_INTERVAL ? "interval" : "commit");
		snprintf(interval, sizeof interval, "%dms", INTERVAL_MS);
		const char *args[] = {"--sync", mode, "--sync-interval", interval, NULL};
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
			daemon_writer(daemon_under_test, p[1], ops, next);
		else
			writer(dir, p[1], ops, next, m->d_exists, m->d_gen, m->d_stored + 1);
	}
	close(p[1]);
	for (int i = 0; i < NT; i++)
		m->acked[i] = m->stored[i];
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

/* After the cut: check, recover, verify against what was acknowledged. */
static void verify(const char *dir, struct model *m, int64_t killed)
{
	ts_db *db;
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
		if (strcmp(names[i], "m0") && strcmp(names[i], "m1") && strcmp(names[i], "d"))
			fail_msg("table %s after the cut", names[i]);
		if (ts_table_open(db, names[i], &any) < 0)
			fail_msg("open %s after the cut: %s", names[i], ts_errmsg(db));
		ts_table_close(any);
	}
	ts_free_names(names);
	for (int i = 0; i < NT; i++) {
		char name[8];
		snprintf(name, sizeof name, "m%d", i);
		long k = read_batches(db, name, 0);
		/* the batch in flight at the kill may have been stored */
		if (k > m->acked[i] + 1)
			fail_msg("%s holds %ld batches, only %lld sent", name, k, (long long)m->acked[i] + 1);
		if (k < m->acked[i]) {
			int64_t window = killed - m->acked_at[i][k + 1];
			m->batches_lost += m->acked[i] - k;
			if (sync_mode == TS_SYNC_COMMIT && skip_msync)
				m->violations++;
			else if (sync_mode == TS_SYNC_COMMIT)
				fail_msg("%s lost acknowledged batches %ld..%lld in sync mode commit", name,
				         k + 1, (long long)m->acked[i]);
			if (sync_mode == TS_SYNC_INTERVAL && window > m->worst_window)
				m->worst_window = window;
		}
		m->stored[i] = k;
		m->acked[i] = k;
	}
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
	              "%ld lost (%ld rows); worst loss window %.3f s; m0 %lld, m1 %lld batches; rig %s",
	              daemon_under_test ? "tsstored, " : "", names[mode], cut_mode, m.cuts, m.batches_acked, m.batches_acked * ROWS,
	              m.batches_lost, m.batches_lost * ROWS, (double)m.worst_window / 1e9,
	              (long long)m.stored[0], (long long)m.stored[1], stats);
	const char *slack = getenv("POWERCUT_SLACK_MS");
	if (mode == TS_SYNC_INTERVAL && slack &&
	    m.worst_window > (INTERVAL_MS + atoll(slack)) * 1000000)
		fail_msg("interval: lost batches acknowledged %.3f s before the cut", (double)m.worst_window / 1e9);
	for (int i = 0; i < NT; i++)
		free(m.acked_at[i]);
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
