/*
 * ship.c -- the primary's side of following (docs/standby.md section 2):
 * one table's files turned into the frames a standby applies, read from
 * the files alone, as ts_backup reads them, so that it works beside the
 * writer in this process or another.
 *
 * A ship holds a table handle (counted as a cursor: ts_close is
 * TS_EBUSY while one is open), the ids of the tablets the standby holds
 * (given at open, then every tablet sent), and the log position up to
 * which the standby holds the log.  ts_ship_next moves through:
 *
 *   HELLO    pin the descriptor; a heartbeat frame (H) says the log's
 *            segment size, the head, the clock;
 *   TABLETS  each tablet of the pinned descriptor the standby lacks, in
 *            chunks (T) of at most TS_FRAME_PAYLOAD_MAX, the last one
 *            flagged TS_FRAME_LAST;
 *   DESC     the descriptor's bytes (D), with the LSN at which the
 *            standby may put it in place: the end of the commit the
 *            writer had recorded when it was pinned;
 *   LOG      the committed log bytes from the standby's position to the
 *            end of the newest commit (L), at their LSNs, a segment at a
 *            time -- preceded by one more heartbeat when the last gave
 *            no segment size (the table had no log yet) -- and when the
 *            descriptor changes, back to TABLETS with the new one;
 *   ENDED    the table was dropped: one E frame, then nothing.
 *
 * Pinning is ts_backup's step 1-3 (backup.c): read DESCRIPTOR, read the
 * head from log/HEAD, read DESCRIPTOR again and start over unless it is
 * the same bytes.  The descriptor D and the commits through that head H
 * are then what a copy of the table holds (backup.c says why), so a
 * standby that puts D in place once its log holds H's commit holds a
 * prefix of the primary's commits.  A tablet or segment found missing
 * means D is stale (a merge, an expiry or a flush replaced it): pin
 * again.  A segment released below the new descriptor's flushed
 * position is skipped: the log is shipped from that position, and the
 * standby's recovery, which starts there once it has D, never reads the
 * gap.
 *
 * Committed log bytes never change, so reading them from the segment
 * files needs no lock; bytes past the newest commit are never shipped.
 *
 * A ship asks for the newest commit at every step, so what that costs is
 * paid per shipped commit (and per step that finds none): log/HEAD stays
 * mapped (the writer changes it in place and never replaces it while the
 * table exists), the segment file of the head commit stays open, and the
 * end of the head commit is remembered until HEAD names another.  They
 * never outlive the table they were found in: a pin that finds the table
 * dropped, or its directory another table's (dropped and created again
 * under the name), ends the ship (table_gone), and nothing is read from
 * them after that.
 * A segment's data area past its last batch is zeros, which the
 * standby's fresh, sparse segment holds already: trailing zeros of a
 * range that reaches the end of a segment are not shipped.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "api.h"
#include "buf.h"
#include "descriptor.h"
#include "descriptor_format.h"
#include "error.h"
#include "fsutil.h"
#include "handle.h"
#include "lifetime.h"
#include "log.h"
#include "tabledesc.h"
#include "tablet.h"
#include "tslimits.h"

/* Pins of a descriptor, before one that keeps changing is TS_EBUSY. */
#define PIN_ATTEMPTS 16

enum ship_state { HELLO, TABLETS, DESC, LOG, ENDED, DONE };

struct ts_ship {
	ts_table *t;
	char logdir[TS_PATH_MAX];
	enum ship_state state;
	unsigned shift;            /* the log's segment size, 0 while it has none */
	unsigned told_shift;       /* the segment size the last heartbeat gave */
	uint64_t pos;              /* the standby holds the log up to here */
	uint64_t *have;            /* tablet ids the standby holds, sorted */
	int nhave, caphave;
	void *desc;                /* the pinned DESCRIPTOR's bytes */
	size_t desc_n;
	struct stat desc_st;       /* its file when pinned (a change hint) */
	ts__descriptor *d;         /* decoded */
	uint64_t apply_at;         /* the end of the head commit when pinned */
	int repins;                /* pins since the last frame */
	int ti;                    /* TABLETS: the next tablet of d to look at */
	int tfd;                   /* the tablet being sent, or -1 */
	uint64_t toff, tsize;
	int segfd;                 /* the segment file of seg, or -1 */
	uint64_t seg;
	/* kept while the ship lives (see the top of the file): */
	const unsigned char *headpage; /* log/HEAD mapped, NULL until found */
	int headfd;                /* the segment file of headseg, or -1 */
	uint64_t headseg;
	uint64_t last_head, last_end; /* the commit HEAD named last (0: none
	                            * looked at yet) and the end of its record */
	unsigned char *buf;        /* TS_FRAME_PAYLOAD_MAX bytes */
};

/* ---- the tablets the standby holds ---- */

static int cmp_id(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static int has_tablet(const ts_ship *s, uint64_t id)
{
	return s->nhave > 0 && /* (bsearch of a NULL array is undefined, even of 0 items) */
	       bsearch(&id, s->have, (size_t)s->nhave, sizeof id, cmp_id) != NULL;
}

static int add_tablet(ts_ship *s, uint64_t id)
{
	if (s->nhave == s->caphave) {
		int cap = s->caphave ? 2 * s->caphave : 64;
		uint64_t *p = realloc(s->have, (size_t)cap * sizeof *p);
		if (!p)
			return ts__fail(TS_ENOMEM, "out of memory");
		s->have = p;
		s->caphave = cap;
	}
	int i = s->nhave++;
	for (; i > 0 && s->have[i - 1] > id; i--)
		s->have[i] = s->have[i - 1];
	s->have[i] = id;
	return 0;
}

/* ---- pinning a descriptor ---- */

static int read_desc(ts_ship *s, void **data, size_t *n, struct stat *st)
{
	char path[TS_PATH_MAX];
	int rc = ts__path(path, "%s/%s", s->t->dir, TS_DESC_FILE);
	if (rc == 0 && st && stat(path, st) < 0)
		rc = errno == ENOENT ? TS_ENOENT : ts__fail_errno(errno, "stat %s", path);
	if (rc == 0)
		rc = ts__read_file(path, TS_DESCRIPTOR_MAX, data, n);
	return rc;
}

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

/* Let go of what head_end and log_bytes keep of the table's log files. */
static void forget_log_files(ts_ship *s)
{
	ts__log_head_unmap(s->headpage);
	s->headpage = NULL;
	close_fd(&s->headfd);
	close_fd(&s->segfd);
	s->last_head = s->last_end = 0;
}

/* The end of the newest commit log/HEAD names, or 0 when it names none
 * (or there is no HEAD: no writer has opened the table); *commit (may
 * be NULL) its record's LSN.  HEAD is read from the page kept mapped,
 * the record's end from the segment file kept open, and only when HEAD
 * names a commit other than the last one looked at. */
static int head_end(ts_ship *s, uint64_t *end, uint64_t *commit)
{
	uint64_t head = 0;
	int rc;
	*end = 0;
	if (commit)
		*commit = 0;
	if (!s->headpage && !ts__log_head_map(s->logdir, &s->headpage))
		return 0; /* looked for again at the next call */
	if (!ts__log_head_page_commit(s->headpage, &head) || head == 0)
		return 0;
	if (commit)
		*commit = head;
	if (!s->shift && (rc = ts__log_shift_of(s->logdir, &s->shift)) < 0)
		return rc;
	if (head == s->last_head) {
		*end = s->last_end;
		return 0;
	}
	uint64_t seg = head >> s->shift;
	if (s->headfd < 0 || s->headseg != seg) { /* a new segment (or the first) */
		close_fd(&s->headfd);
		if ((rc = ts__log_segment_open(s->logdir, seg, s->shift, &s->headfd)) < 0)
			return rc;
		s->headseg = seg;
	}
	if ((rc = ts__log_commit_end_in(s->headfd, s->logdir, s->shift, head, end)) < 0)
		return rc;
	s->last_head = head;
	s->last_end = *end;
	return 0;
}

/* Whether the ship's table is no longer the one at its directory: dropped
 * by this process (t->dropped, set under db->mu before a table of the
 * same name can be created), or the directory is another one's (dropped
 * and created again by a writer in another process, or by a handle other
 * than the ship's: ts__table_incarnation).  Asked after the files were
 * read, so that a table created again meanwhile is never pinned. */
static int table_gone(const ts_ship *s)
{
	uint64_t now = 0;
	if (__atomic_load_n(&s->t->dropped, __ATOMIC_SEQ_CST))
		return 1;
	return s->t->incarnation && ts__table_incarnation(s->t->dir, &now) == 0 &&
	       now != s->t->incarnation;
}

/* Read the descriptor, the head, the descriptor again, until the two
 * reads agree; decode it.  Returns 0, TS_ENOENT (the table was
 * dropped), TS_EBUSY, or a reading error. */
static int pin(ts_ship *s)
{
	for (int attempt = 0; attempt < PIN_ATTEMPTS; attempt++) {
		void *a = NULL, *b = NULL;
		size_t na = 0, nb = 0;
		struct stat st;
		uint64_t end = 0;
		int rc = read_desc(s, &a, &na, &st);
		if (rc == 0)
			rc = head_end(s, &end, NULL);
		if (rc == 0)
			rc = read_desc(s, &b, &nb, NULL);
		int same = rc == 0 && na == nb && memcmp(a, b, na) == 0;
		free(b);
		if (rc == TS_ENOENT || (rc < 0 && rc != TS_ECORRUPT)) {
			free(a);
			return rc;
		}
		if (!same) { /* changed between the reads, or a head torn by a new segment */
			free(a);
			ts__clear_error();
			continue;
		}
		if (table_gone(s)) { /* its successor is shipped by a ship of its own */
			free(a);
			return TS_ENOENT;
		}
		ts__descriptor *d = NULL;
		if ((rc = ts__descriptor_decode(a, na, &d)) < 0) {
			free(a);
			return ts__context(rc, "%s/%s", s->t->dir, TS_DESC_FILE);
		}
		free(s->desc);
		ts__descriptor_free(s->d, 1);
		s->desc = a;
		s->desc_n = na;
		s->desc_st = st;
		s->d = d;
		s->apply_at = end > d->flushed_lsn ? end : d->flushed_lsn;
		s->ti = 0;
		return 0;
	}
	return ts__fail(TS_EBUSY, "table \"%s\": the descriptor changed under %d reads",
	                s->t->name, PIN_ATTEMPTS);
}

/* Whether the descriptor file is no longer the pinned one. */
static int desc_changed(const ts_ship *s)
{
	char path[TS_PATH_MAX];
	struct stat st;
	if (ts__path(path, "%s/%s", s->t->dir, TS_DESC_FILE) < 0 || stat(path, &st) < 0)
		return 1;
	return st.st_ino != s->desc_st.st_ino || st.st_size != s->desc_st.st_size ||
	       st.st_mtim.tv_sec != s->desc_st.st_mtim.tv_sec ||
	       st.st_mtim.tv_nsec != s->desc_st.st_mtim.tv_nsec;
}

/* ---- frames ---- */

static void frame(ts_frame *f, int type, uint64_t id, uint64_t offset, const void *p, size_t n)
{
	memset(f, 0, sizeof *f);
	f->type = type;
	f->id = id;
	f->offset = offset;
	f->payload = p;
	f->length = (uint32_t)n;
}

/* H: u64 end of the newest commit, i64 the clock, u32 the segment shift
 * (0: the log has no segment yet). */
static int heartbeat(ts_ship *s, ts_frame *f)
{
	uint64_t end = 0;
	int rc = head_end(s, &end, NULL);
	if (rc < 0)
		return rc;
	if (!s->shift && (rc = ts__log_shift_of(s->logdir, &s->shift)) < 0)
		return rc;
	ts__store_u64(s->buf, end);
	ts__store_u64(s->buf + 8, (uint64_t)ts_now(s->t->db));
	ts__store_u32(s->buf + 16, s->shift);
	s->told_shift = s->shift;
	frame(f, TS_FRAME_HEARTBEAT, 0, 0, s->buf, TS_FRAME_HEARTBEAT_SIZE);
	return 1;
}

static void close_tablet(ts_ship *s)
{
	close_fd(&s->tfd);
}

/* Open the tablet d->tablets[s->ti].  TS_ENOENT: d is stale. */
static int open_tablet(ts_ship *s)
{
	char name[64], path[TS_PATH_MAX];
	struct stat st;
	uint64_t id = s->d->tablets[s->ti].id;
	int rc = ts__tablet_name(id, name, sizeof name);
	if (rc == 0)
		rc = ts__path(path, "%s/tablets/%s", s->t->dir, name);
	if (rc < 0)
		return rc;
	if ((s->tfd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return errno == ENOENT ? TS_ENOENT : ts__fail_errno(errno, "open %s", path);
	if (fstat(s->tfd, &st) < 0) {
		rc = ts__fail_errno(errno, "stat %s", path);
		close_tablet(s);
		return rc;
	}
	s->toff = 0;
	s->tsize = (uint64_t)st.st_size;
	return 0;
}

/* The next chunk of a tablet the standby lacks: 1 with f, or 0 when it
 * lacks none (left). */
static int tablet_chunk(ts_ship *s, ts_frame *f)
{
	int rc;
	while (s->tfd < 0) {
		if (s->ti >= s->d->ntablets)
			return 0;
		if (has_tablet(s, s->d->tablets[s->ti].id)) {
			s->ti++;
			continue;
		}
		if ((rc = open_tablet(s)) < 0)
			return rc;
	}
	uint64_t id = s->d->tablets[s->ti].id, left = s->tsize - s->toff;
	size_t n = left < TS_FRAME_PAYLOAD_MAX ? (size_t)left : TS_FRAME_PAYLOAD_MAX;
	ssize_t got = n ? pread(s->tfd, s->buf, n, (off_t)s->toff) : 0;
	if (got != (ssize_t)n)
		return ts__fail_errno(got < 0 ? errno : EIO, "read tablet %" PRIu64 " of \"%s\"", id,
		                      s->t->name);
	frame(f, TS_FRAME_TABLET, id, s->toff, s->buf, n);
	s->toff += n;
	if (s->toff == s->tsize) {
		f->flags |= TS_FRAME_LAST;
		close_tablet(s);
		s->ti++;
		if ((rc = add_tablet(s, id)) < 0)
			return rc;
	}
	return 1;
}

/* Open the segment file of lsn (cached).  TS_ENOENT: released. */
static int open_segment(ts_ship *s, uint64_t lsn)
{
	char name[64], path[TS_PATH_MAX];
	uint64_t seg = lsn >> s->shift;
	if (s->segfd >= 0 && s->seg == seg)
		return 0;
	close_fd(&s->segfd);
	int rc = ts__log_segment_name(seg, name, sizeof name);
	if (rc == 0)
		rc = ts__path(path, "%s/%s", s->logdir, name);
	if (rc < 0)
		return rc;
	if ((s->segfd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return errno == ENOENT ? TS_ENOENT : ts__fail_errno(errno, "open %s", path);
	s->seg = seg;
	return 0;
}

/* The committed log bytes from s->pos: 1 with f, 0 when the standby has
 * them all. */
static int log_bytes(ts_ship *s, ts_frame *f)
{
	uint64_t end = 0, commit = 0;
	int rc = head_end(s, &end, &commit);
	while (rc == 0 && s->pos < end) {
		uint64_t seg_end = ((s->pos >> s->shift) + 1) << s->shift;
		uint64_t to = end < seg_end ? end : seg_end;
		size_t n = to - s->pos < TS_FRAME_PAYLOAD_MAX ? (size_t)(to - s->pos)
		                                              : TS_FRAME_PAYLOAD_MAX;
		if ((rc = open_segment(s, s->pos)) < 0)
			break;
		off_t off = (off_t)ts__off_bytes(ts__off_of(s->shift, s->pos));
		ssize_t got = pread(s->segfd, s->buf, n, off);
		if (got != (ssize_t)n) {
			rc = ts__fail_errno(got < 0 ? errno : EIO, "read the log of \"%s\" at %" PRIu64,
			                    s->t->name, s->pos);
			break;
		}
		uint64_t first = s->pos;
		s->pos += n;
		if (s->pos == seg_end) /* the segment's tail: its zeros are the standby's */
			while (n > 0 && s->buf[n - 1] == 0)
				n--;
		if (n > 0) {
			/* id: the commit record that ends the frame, when one does */
			frame(f, TS_FRAME_LOG, s->pos == end ? commit : 0, first, s->buf, n);
			return 1;
		}
	}
	return rc;
}

/* ---- the states ---- */

/* Pin again after a stale descriptor, and send what the new one needs. */
static int repin(ts_ship *s)
{
	close_tablet(s);
	if (++s->repins > PIN_ATTEMPTS) /* the same descriptor each time */
		return ts__fail(TS_ECORRUPT, "table \"%s\": a file its DESCRIPTOR names is "
		                "missing (tablet or log segment; ts_check says which)", s->t->name);
	int rc = pin(s);
	if (rc == 0)
		s->state = TABLETS;
	return rc;
}

static int step(ts_ship *s, ts_frame *f)
{
	int rc;
	switch (s->state) {
	case HELLO:
		if ((rc = pin(s)) < 0)
			return rc;
		if (s->pos > s->apply_at)
			return ts__fail(TS_EINVAL, "table \"%s\": the standby has the log through %" PRIu64
			                ", past the primary's newest commit (which ends at %" PRIu64
			                "): it follows another history", s->t->name, s->pos, s->apply_at);
		s->state = TABLETS;
		return heartbeat(s, f);
	case TABLETS:
		rc = tablet_chunk(s, f);
		if (rc == TS_ENOENT)
			return repin(s);
		if (rc == 0)
			s->state = DESC;
		return rc;
	case DESC:
		frame(f, TS_FRAME_DESCRIPTOR, s->apply_at, 0, s->desc, s->desc_n);
		if (s->pos < s->d->flushed_lsn)
			s->pos = s->d->flushed_lsn;
		s->state = LOG;
		return 1;
	case LOG:
		if (desc_changed(s))
			return repin(s);
		if (!s->told_shift) {
			/* the standby takes the segment size from a heartbeat, and
			 * the table had no segment at the last: one more, once the
			 * log has a commit, before its bytes */
			uint64_t end;
			if ((rc = head_end(s, &end, NULL)) < 0)
				return rc;
			if (s->shift)
				return heartbeat(s, f);
			/* no commit when head_end looked: nothing to send yet.
			 * log_bytes must not look again -- a commit landing in
			 * between would go out before the heartbeat that gives
			 * the standby its segment size */
			return 0;
		}
		rc = log_bytes(s, f);
		if (rc == TS_ENOENT) /* a segment released: a newer descriptor */
			return repin(s);
		return rc;
	case ENDED:
		frame(f, TS_FRAME_END, 0, 0, NULL, 0);
		s->state = DONE;
		return 1;
	case DONE:
		return 0;
	}
	return 0;
}

/* ---- public calls (api.c checks the arguments) ---- */

int ts__ship_open(ts_table *t, uint64_t lsn, const uint64_t *tablets, int ntablets,
                  ts_ship **out)
{
	ts_ship *s = calloc(1, sizeof *s);
	int rc = 0;
	if (!s || !(s->buf = malloc(TS_FRAME_PAYLOAD_MAX))) {
		free(s);
		return ts__fail(TS_ENOMEM, "out of memory");
	}
	s->t = t;
	s->tfd = s->segfd = s->headfd = -1;
	s->pos = lsn;
	if (ntablets < 0)
		rc = ts__fail(TS_EINVAL, "ts_ship_open: %d tablets", ntablets);
	for (int i = 0; rc == 0 && i < ntablets; i++)
		rc = add_tablet(s, tablets[i]);
	if (rc == 0)
		rc = ts__path(s->logdir, "%s/log", t->dir);
	if (rc < 0) {
		free(s->have);
		free(s->buf);
		free(s);
		return rc;
	}
	ts__table_hold(t, 1);
	*out = s;
	return 0;
}

int ts__ship_next(ts_ship *s, ts_frame *f)
{
	for (;;) {
		enum ship_state before = s->state;
		int repins = s->repins, rc = step(s, f);
		if (rc == TS_ENOENT && s->state != ENDED && s->state != DONE) {
			ts__clear_error(); /* DESCRIPTOR gone: dropped */
			s->state = ENDED;
			continue;
		}
		if (rc == 1 && (f->type == TS_FRAME_TABLET || f->type == TS_FRAME_LOG))
			s->repins = 0; /* progress: a missing file is no longer suspected */
		if (rc != 0 || s->state == DONE || (s->state == before && s->repins == repins))
			return rc;
	}
}

ts_db *ts__ship_db(const ts_ship *s)
{
	return s->t->db;
}

int ts__ship_heartbeat(ts_ship *s, ts_frame *f)
{
	int rc = heartbeat(s, f);
	return rc < 0 ? rc : 0;
}

void ts__ship_close(ts_ship *s)
{
	close_tablet(s);
	forget_log_files(s);
	ts__table_unhold(s->t, 1);
	ts__descriptor_free(s->d, 1);
	free(s->desc);
	free(s->have);
	free(s->buf);
	free(s);
}
