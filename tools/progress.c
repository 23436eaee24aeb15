/*
 * progress.c -- the progress line that long commands (insert, load, dump,
 * check) draw on a terminal: rows done (bytes, for check), the rate, and,
 * when the size of the work is known, the share done and an estimate of
 * the time left.
 *
 * The line is redrawn in place with a carriage return, at most every
 * CLI_PROGRESS_INTERVAL_MS, and padded with blanks to cover a longer
 * previous one.  It lives on stderr beside the command's messages, so a
 * command erases it (cli_progress_clear) before writing anything else
 * there; the next update draws it afresh.  When the caller said the
 * output is no terminal, every function returns at once, so that logs and
 * pipes never receive carriage returns.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "progress.h"

static double seconds_between(const struct timespec *a, const struct timespec *b)
{
	return (double)(b->tv_sec - a->tv_sec) + (double)(b->tv_nsec - a->tv_nsec) / 1e9;
}

void cli_progress_init(struct cli_progress *p, const char *what, uint64_t total, int on)
{
	memset(p, 0, sizeof *p);
	p->on = on;
	p->what = what;
	p->total = total;
	clock_gettime(CLOCK_MONOTONIC, &p->start);
	p->last = p->start;
}

/* Append ", 37%, 5s left" to buf when the input size is known. */
static void add_estimate(const struct cli_progress *p, uint64_t bytes, double elapsed,
                         char *buf, size_t size)
{
	size_t at = strlen(buf);
	if (p->total == 0 || bytes == 0 || bytes > p->total || at >= size)
		return;
	uint64_t left = (uint64_t)(elapsed * (double)(p->total - bytes) / (double)bytes + 0.5);
	int pct = (int)(bytes * 100 / p->total);
	if (left < 60)
		snprintf(buf + at, size - at, ", %d%%, %" PRIu64 "s left", pct, left);
	else if (left < 3600)
		snprintf(buf + at, size - at, ", %d%%, %" PRIu64 "m%02" PRIu64 "s left", pct,
		         left / 60, left % 60);
	else
		snprintf(buf + at, size - at, ", %d%%, %" PRIu64 "h%02" PRIu64 "m left", pct,
		         left / 3600, left / 60 % 60);
}

void cli_progress_update(struct cli_progress *p, uint64_t rows, uint64_t bytes)
{
	struct timespec now;
	char line[128];
	double elapsed;
	int n;
	if (!p->on)
		return;
	clock_gettime(CLOCK_MONOTONIC, &now);
	if (seconds_between(&p->last, &now) * 1000 < CLI_PROGRESS_INTERVAL_MS)
		return;
	p->last = now;
	elapsed = seconds_between(&p->start, &now);
	if (rows == CLI_PROGRESS_BYTES)
		snprintf(line, sizeof line, "%s: %.0f MiB, %.0f MiB/s", p->what,
		         (double)bytes / (1 << 20), (double)bytes / (1 << 20) / elapsed);
	else
		snprintf(line, sizeof line, "%s: %" PRIu64 " rows, %.0f rows/s", p->what, rows,
		         (double)rows / elapsed);
	add_estimate(p, bytes, elapsed, line, sizeof line);
	n = (int)strlen(line);
	fprintf(stderr, "\r%-*s", p->shown > n ? p->shown : n, line);
	fflush(stderr);
	p->shown = n;
}

void cli_progress_clear(struct cli_progress *p)
{
	if (!p->on || p->shown == 0)
		return;
	fprintf(stderr, "\r%*s\r", p->shown, "");
	fflush(stderr);
	p->shown = 0;
}
