/*
 * main.c -- tsstore-fuse, the mounted view of a database (DESIGN.md
 * section 6):
 *
 *     tsstore-fuse DATADIR MOUNTPOINT [-f] [-o OPTIONS]
 *
 * The first operand is the database, which is opened read-only, so the
 * view works whether or not tsstored runs on it (and sees the daemon's
 * rows as they are committed); everything else goes to libfuse, with
 * "ro" added: the mount is always read-only.  Before handing over, the
 * database is opened once here so that a wrong DATADIR is a one-line
 * error and exit 1 rather than an empty mount; the view then opens it
 * again when mounted (after libfuse may have forked into the
 * background, which a process holding threads must not do).
 *
 * One option is the view's own, taken out before libfuse sees the rest:
 * -o cache_size=SIZE, the bytes of rendered files the view keeps
 * (fuse/view.c: sizes and times; 256M by default, 0 keeps none).
 *
 * Exit status: 0 after an unmount or SIGTERM/SIGINT/SIGHUP; 1 when the
 * database cannot be opened, libfuse refuses an option or the mount
 * fails; 2 when an operand is missing or libfuse cannot parse the
 * command line (a MOUNTPOINT that does not exist, among others).
 */
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "view.h" /* FUSE_USE_VERSION, fuse.h */

#include <fuse_lowlevel.h>

struct args {
	const char *datadir;
	int operands;
	int help, version;
	char *cache_size;  /* -o cache_size=SIZE */
};

static const struct fuse_opt specs[] = {
	{"-h", offsetof(struct args, help), 1},
	{"--help", offsetof(struct args, help), 1},
	{"-V", offsetof(struct args, version), 1},
	{"--version", offsetof(struct args, version), 1},
	{"cache_size=%s", offsetof(struct args, cache_size), 0},
	FUSE_OPT_END,
};

static const char usage[] = "usage: tsstore-fuse DATADIR MOUNTPOINT [-f] [-o OPTIONS]\n";

static const char help[] =
	"Mount the database DATADIR read-only at MOUNTPOINT: tables and time\n"
	"windows as files, for cat, grep and awk (see tsstore-fuse(8)).\n"
	"\n"
	"Options:\n"
	"  -f            stay in the foreground\n"
	"  -d            stay in the foreground and print FUSE's debug output\n"
	"  -s            serve requests in one thread\n"
	"  -o OPTIONS    mount options (comma-separated), e.g. allow_other, and\n"
	"                cache_size=SIZE: rendered files kept in memory, in bytes\n"
	"                or with K, M or G (default 256M; 0 keeps none)\n"
	"  -h, --help    show this help and exit\n"
	"  -V, --version show the version and exit\n";

/* SIZE of cache_size=SIZE: bytes, or K, M or G of them (1024-based).
 * Returns 0, or -1 when it is no size. */
static int parse_size(const char *text, size_t *out)
{
	char *end;
	unsigned shift = 0;
	if (*text < '0' || *text > '9')
		return -1;
	errno = 0;
	unsigned long long n = strtoull(text, &end, 10);
	if (*end && end[1] == '\0')
		shift = *end == 'K' || *end == 'k' ? 10 : *end == 'M' || *end == 'm' ? 20 : *end == 'G' || *end == 'g' ? 30 : 99;
	else if (*end)
		shift = 99;
	if (errno || shift == 99 || n > (SIZE_MAX >> shift))
		return -1;
	*out = (size_t)n << shift;
	return 0;
}

/* The first operand is DATADIR (taken out); the second, MOUNTPOINT, and
 * every option stay for libfuse. */
static int take_operand(void *data, const char *arg, int key, struct fuse_args *outargs)
{
	struct args *a = data;
	(void)outargs;
	if (key != FUSE_OPT_KEY_NONOPT)
		return 1;
	if (a->operands++ == 0) {
		a->datadir = arg;
		return 0;
	}
	return 1;
}

/*
 * Mount and serve until unmounted or signalled (libfuse's own steps, as
 * fuse_main takes them, so that the end of the loop can be told apart:
 * SIGTERM, SIGINT and SIGHUP end it cleanly, like fusermount3 -u).
 * Returns the exit status.
 */
static int serve(struct fuse_args *fargs, struct tsfs_view *v)
{
	struct fuse_cmdline_opts o;
	struct fuse *f = NULL;
	int rc = 1, mounted = 0, handlers = 0;
	if (fuse_parse_cmdline(fargs, &o) < 0)
		return 2;
	if ((f = fuse_new(fargs, tsfs_operations(), sizeof(struct fuse_operations), v)) &&
	    (mounted = fuse_mount(f, o.mountpoint) == 0) && fuse_daemonize(o.foreground) == 0 &&
	    (handlers = fuse_set_signal_handlers(fuse_get_session(f)) == 0)) {
		rc = o.singlethread ? fuse_loop(f) : fuse_loop_mt(f, o.clone_fd);
		/* the signal that ended the loop, as a number (libfuse 3.14
		 * returns it positive; other versions negative) */
		int sig = rc < 0 ? -rc : rc;
		rc = rc == 0 || sig == SIGTERM || sig == SIGINT || sig == SIGHUP ? 0 : 1;
	}
	if (handlers)
		fuse_remove_signal_handlers(fuse_get_session(f));
	if (mounted)
		fuse_unmount(f);
	if (f)
		fuse_destroy(f);
	free(o.mountpoint);
	return rc;
}

int main(int argc, char **argv)
{
	struct fuse_args fargs = FUSE_ARGS_INIT(argc, argv);
	struct args a = {0};
	ts_options opts;
	ts_db *db;
	int rc;
	if (fuse_opt_parse(&fargs, &a, specs, take_operand) < 0) {
		fputs(usage, stderr);
		return 2;
	}
	if (a.help || a.version) {
		if (a.help)
			printf("%s\n%s", usage, help);
		else
			printf("tsstore-fuse %s (libfuse %s)\n", ts_version(), fuse_pkgversion());
		free(a.cache_size);
		fuse_opt_free_args(&fargs);
		return 0;
	}
	size_t cache = TSFS_CACHE_BYTES;
	if (a.cache_size && parse_size(a.cache_size, &cache) < 0) {
		fprintf(stderr, "tsstore-fuse: cache_size=%s: want a number of bytes, or of K, M or G\n",
		        a.cache_size);
		free(a.cache_size);
		fuse_opt_free_args(&fargs);
		return 2;
	}
	free(a.cache_size);
	if (a.operands != 2) {
		fprintf(stderr, "tsstore-fuse: %s\n%s",
		        a.operands < 2 ? (a.operands ? "missing MOUNTPOINT" : "missing DATADIR")
		                       : "too many operands",
		        usage);
		fuse_opt_free_args(&fargs);
		return 2;
	}
	ts_options_init(&opts);
	opts.flags = TS_OPEN_READONLY;
	if ((rc = ts_open(a.datadir, &opts, &db)) < 0) {
		fprintf(stderr, "tsstore-fuse: %s\n", *ts_errmsg(NULL) ? ts_errmsg(NULL) : ts_strerror(rc));
		fuse_opt_free_args(&fargs);
		return 1;
	}
	ts_close(db);

	/* libfuse moves to / (fuse_daemonize, also with -f) before the view
	 * opens the database: the path must not be relative to here */
	char *datadir = realpath(a.datadir, NULL);
	struct tsfs_view *v = datadir ? tsfs_view_open(datadir) : NULL;
	free(datadir);
	if (v)
		tsfs_view_cache(v, cache);
	if (!v || fuse_opt_add_arg(&fargs, "-oro,fsname=tsstore,subtype=tsstore") < 0) {
		fputs("tsstore-fuse: out of memory\n", stderr);
		fuse_opt_free_args(&fargs);
		return 1;
	}
	rc = serve(&fargs, v);
	tsfs_view_free(v);
	fuse_opt_free_args(&fargs);
	return rc;
}
