/*
 * fuse.c -- the fuse_cat workload of tsstore-bench: reading a day of rows
 * through the mounted view (tsstore-fuse) against the admin command
 * printing the same day (tsstore query --format tsv), in the same run.
 *
 * One UTC day of the reference rows (c->hosts hosts every 10 s; quick:
 * two hours of it) is loaded into a fresh table, flushed to on-disk
 * tablets and merged, and the database closed.  Then, c->repeat times
 * each, by turns, with a warm page cache (an untimed pass of each first):
 *
 *   tsstore-fuse   `tsstore-fuse DIR MNT -f` runs beside; the file
 *                  MNT/cpu/days/D/all.tsv is read to its end with read(2)
 *                  in 128 KiB pieces, as cat does, counting lines;
 *   tsstore_query  `tsstore -d DIR query cpu --from D --to D+1d --format
 *                  tsv` runs with its standard output into a pipe read
 *                  here the same way.
 *
 * Both print the same text (the header and one line per row), which the
 * line counts check; rows/s of the best pass of each are reported, with
 * the targets of the FUSE issue: at least 1 M rows/s through the mount,
 * and at least half the rate of tsstore query.  The programs are taken
 * from beside tsstore-bench (bin/ of the build).  Needs /dev/fuse: where
 * the mount fails, the workload says so and reports nothing.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"

#define DAY_NS (INT64_C(86400) * 1000000000)
#define READ_PIECE (128 * 1024)
#define BENCH_PATH_MAX 4096

/* The directory of this program (where tsstore and tsstore-fuse are). */
static void bin_dir(char *out, size_t size)
{
	ssize_t n = readlink("/proc/self/exe", out, size - 1);
	if (n <= 0) {
		snprintf(out, size, ".");
		return;
	}
	out[n] = '\0';
	char *slash = strrchr(out, '/');
	if (slash)
		*slash = '\0';
}

/* Lines read from fd to its end.  Returns -1 on a read error. */
static long count_lines(int fd)
{
	static char buf[READ_PIECE];
	long lines = 0;
	for (;;) {
		ssize_t n = read(fd, buf, sizeof buf);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		if (n == 0)
			return lines;
		for (char *p = buf, *end = buf + n; (p = memchr(p, '\n', (size_t)(end - p))); p++)
			lines++;
	}
}

/* Whether path is a mount point other than its parent's file system. */
static int mounted(const char *path)
{
	char parent[BENCH_PATH_MAX];
	struct stat a, b;
	snprintf(parent, sizeof parent, "%s/..", path);
	return stat(path, &a) == 0 && stat(parent, &b) == 0 && a.st_dev != b.st_dev;
}

static pid_t spawn(char *const argv[], int out_fd)
{
	pid_t pid = fork();
	if (pid == 0) {
		if (out_fd >= 0 && dup2(out_fd, STDOUT_FILENO) < 0)
			_exit(127);
		execv(argv[0], argv);
		_exit(127);
	}
	return pid;
}

/* One pass through the mount: lines of the day's file, seconds. */
static long pass_fuse(const char *file, double *secs)
{
	double t0 = bench_seconds();
	int fd = open(file, O_RDONLY);
	long lines = fd < 0 ? -1 : count_lines(fd);
	if (fd >= 0)
		close(fd);
	*secs = bench_seconds() - t0;
	return lines;
}

/* One pass of tsstore query: lines it printed, seconds. */
static long pass_query(const char *tsstore, const char *dir, const char *from, const char *to,
                       double *secs)
{
	char *argv[] = {(char *)tsstore, "-d", (char *)dir, "query", BENCH_TABLE, "--from",
	                (char *)from, "--to", (char *)to, "--format", "tsv", NULL};
	int p[2], status;
	double t0 = bench_seconds();
	if (pipe(p) < 0)
		return -1;
	pid_t pid = spawn(argv, p[1]);
	close(p[1]);
	long lines = pid < 0 ? -1 : count_lines(p[0]);
	close(p[0]);
	if (pid < 0 || waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) ||
	    WEXITSTATUS(status) != 0)
		lines = -1;
	*secs = bench_seconds() - t0;
	return lines;
}

/* Load the day into a fresh database in dir; the day's start in *day. */
static void load_day(const bench_config *c, const char *dir, int64_t *day)
{
	int64_t now = bench_wall_ns();
	int64_t span = c->quick ? DAY_NS / 12 : DAY_NS;
	size_t n = c->hosts * (size_t)(span / BENCH_STEP_NS);
	bench_rows r;
	ts_options o;
	ts_db *db;
	*day = (now / DAY_NS - 1) * DAY_NS; /* yesterday, whole */
	bench_rows_make(&r, n, c->hosts, c->batch, *day + span);
	ts_options_init(&o);
	o.flags = TS_OPEN_CREATE | TS_OPEN_NOMERGE;
	o.sync = TS_SYNC_NONE;
	ts_table *t = bench_table_open(dir, &o, &db);
	bench_table_load(t, &r);
	int merged;
	if (ts_flush(t, INT64_MAX) < 0 || ts_merge(t, &merged) < 0)
		fprintf(stderr, "tsstore-bench: fuse_cat: flush: %s\n", ts_errmsg(NULL));
	ts_table_close(t);
	ts_close(db);
	bench_rows_free(&r);
}

void bench_workload_fuse(const bench_config *c)
{
	char bin[BENCH_PATH_MAX], fuse[BENCH_PATH_MAX + 32], tsstore[BENCH_PATH_MAX + 32];
	char mnt[BENCH_PATH_MAX], file[BENCH_PATH_MAX + 64];
	char from[TS_TIME_BUFSZ], to[TS_TIME_BUFSZ], params[160];
	char *dir = bench_tmpdir(), *mdir = bench_tmpdir();
	int64_t day;
	bin_dir(bin, sizeof bin);
	snprintf(fuse, sizeof fuse, "%s/tsstore-fuse", bin);
	snprintf(tsstore, sizeof tsstore, "%s/tsstore", bin);
	snprintf(mnt, sizeof mnt, "%s", mdir);
	load_day(c, dir, &day);
	ts_time_format(day, from, sizeof from);
	ts_time_format(day + DAY_NS, to, sizeof to);
	snprintf(file, sizeof file, "%s/%s/days/%.10s/all.tsv", mnt, BENCH_TABLE, from);

	char *argv[] = {fuse, dir, mnt, "-f", NULL};
	pid_t pid = spawn(argv, -1);
	for (int i = 0; i < 400 && pid > 0 && !mounted(mnt); i++)
		usleep(25000);
	if (pid <= 0 || !mounted(mnt)) {
		fprintf(stderr, "tsstore-bench: fuse_cat: %s could not mount the view (is /dev/fuse "
		                "usable?); no figures\n", fuse);
		if (pid > 0) {
			kill(pid, SIGTERM);
			waitpid(pid, NULL, 0);
		}
		bench_rmdir(dir);
		bench_rmdir(mdir);
		return;
	}
	double best_fuse = 1e30, best_query = 1e30, secs;
	long want = -1, got;
	for (int run = 0; run <= c->repeat; run++) { /* run 0 warms the cache */
		got = pass_fuse(file, &secs);
		if (got < 0 || (want >= 0 && got != want))
			fprintf(stderr, "tsstore-bench: fuse_cat: the mount gave %ld lines, want %ld\n",
			        got, want);
		want = want < 0 ? got : want;
		if (run > 0 && secs < best_fuse)
			best_fuse = secs;
		got = pass_query(tsstore, dir, from, to, &secs);
		if (got != want)
			fprintf(stderr, "tsstore-bench: fuse_cat: tsstore query gave %ld lines, want %ld\n",
			        got, want);
		if (run > 0 && secs < best_query)
			best_query = secs;
	}
	kill(pid, SIGTERM);
	waitpid(pid, NULL, 0);
	double rows = (double)(want - 1); /* the header is no row */
	snprintf(params, sizeof params, "\"rows\":%.0f,\"hosts\":%zu,\"day\":\"%.10s\"", rows,
	         c->hosts, from);
	bench_result("fuse_cat", "tsstore-fuse", "rows_per_s", rows / best_fuse, "rows/s", params);
	bench_result("fuse_cat", "tsstore_query", "rows_per_s", rows / best_query, "rows/s", params);
	bench_target("fuse_cat", "cat of a day through the mount, rows/s", rows / best_fuse, ">=",
	             1e6);
	bench_target("fuse_cat", "mount / tsstore query --format tsv", best_query / best_fuse, ">=",
	             0.5);
	bench_rmdir(dir);
	bench_rmdir(mdir);
}
