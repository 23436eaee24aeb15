/*
 * progress.h -- the progress line of long commands on a terminal (see
 * progress.c).
 */
#ifndef TSSTORE_TOOLS_PROGRESS_H
#define TSSTORE_TOOLS_PROGRESS_H

#include <stdint.h>
#include <time.h>

struct cli_progress {
	int on;                  /* 0: every call does nothing */
	const char *what;        /* the command, the line's first word */
	uint64_t total;          /* bytes of input, 0 when unknown */
	struct timespec start;   /* when cli_progress_init ran */
	struct timespec last;    /* when the line was last drawn */
	int shown;               /* characters of the line on screen, 0: none */
};

/*
 * cli_progress_init -- start the clock of p.  what names the command
 * ("insert"); total is the size of the input in bytes when known (for the
 * percentage and the estimate), else 0; on says whether to draw at all
 * (the caller decides: stderr is a terminal, and nobody types the input).
 */
void cli_progress_init(struct cli_progress *p, const char *what, uint64_t total, int on);

/*
 * cli_progress_update -- redraw the line with rows done and bytes read,
 * at most once per CLI_PROGRESS_INTERVAL_MS (the first time one interval
 * after the start, so that short runs draw nothing):
 *     insert: 120000 rows, 41000 rows/s, 37%, 5s left
 */
void cli_progress_update(struct cli_progress *p, uint64_t rows, uint64_t bytes);

/* rows for cli_progress_update when only bytes count (check):
 *     check: 410 MiB, 320 MiB/s, 37%, 2s left */
#define CLI_PROGRESS_BYTES UINT64_MAX

/* cli_progress_clear -- erase the line, before any other message on
 * stderr and at the end; the next update draws it again. */
void cli_progress_clear(struct cli_progress *p);

#endif /* TSSTORE_TOOLS_PROGRESS_H */
