/*
 * link.c -- a standby's side of following (tsstored --follow
 * tcp:HOST:PORT; docs/standby.md section 2): the thread that keeps this
 * daemon's directory its primary's, byte for byte.
 *
 * The link owns the directory's writing: it opens it as a ts_standby
 * (holding its LOCK) before the daemon opens it read-only to serve
 * reads, and is the only writer for as long as the daemon runs.  Its
 * thread, off the event loop, goes round one session after another:
 *
 *   connect to the primary's TCP listener (JSON lines);
 *   {"op":"auth","token":...} when this tsstored has a token (follow is
 *   an admin op on the primary);
 *   {"op":"follow","lineage":...,"epoch":...,"tables":{...}}: what
 *   ts_standby_state says the directory holds, so the primary sends only
 *   the difference (a resume, never a copy from scratch);
 *   the answer's lineage and epoch into EPOCH (ts_standby_adopt);
 *   then each frame ts_frame_decode cuts from the stream to
 *   ts_standby_apply, until an error, a cut, a silence of
 *   LINK_SILENCE (the primary sends heartbeats each second), or the
 *   daemon stopping.
 *
 * After a session ends it waits (LINK_BACKOFF_MIN, doubling to
 * LINK_BACKOFF_MAX; back to the minimum after a stream that ran for
 * LINK_BACKOFF_MAX, a working link that was cut, not one failing again
 * at every try, such as a frame the standby refuses) and begins another.  Everything it does to the directory is
 * the library's: a session cut anywhere leaves a prefix of the
 * primary's database, and the next resumes from the files.
 *
 * Promotion (the "promote" op, tsd_link_promote; docs/standby.md
 * section 3) ends all of it: the thread stops (joined), the standby is
 * synced and closed (its LOCK released), the directory is opened for
 * writing -- recovery ends each table's log at the last whole commit,
 * as after a primary's crash -- and its epoch raised (ts_epoch_raise,
 * durable before the op answers).  That handle, the writer, is then
 * the daemon's database (tsd_link_db); the read-only handle stays open
 * until the daemon stops, for the readers that hold it (the mount,
 * requests in flight), which see the writer's commits as readers of any
 * directory do.  State: following -> (promote) promoted; a promote that
 * fails after the thread stopped leaves a daemon that neither follows
 * nor writes, and a second promote tries the open again.  A promoted
 * link starts one more thread, fence_old, which tells the old primary
 * of the new epoch whenever it answers at the address followed, so a
 * returning old primary is fenced (docs/standby.md section 3.2).
 *
 * Readers see what is applied as readers of any directory a writer
 * changes: the daemon's read-only handle re-reads a table's DESCRIPTOR
 * when its inode changes and maps log/HEAD, which the standby writes in
 * place.
 *
 * Lag (stats.c: the "stats" op, /metrics): per table, the end of the
 * newest commit the standby holds (from the L frames that end a commit,
 * the D frames' LSN, and at the start ts_standby_state's) against the
 * end of the primary's newest commit its last heartbeat gave.  The LSN
 * lag is the sum of the differences; the seconds, for the table behind
 * the longest, how long (on this machine's monotonic clock) since it
 * last held everything a heartbeat announced.  Heartbeats come when
 * the primary has nothing else to send, so under a steady stream the
 * LSN lag is that of the last quiet moment.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netdb.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "tsd.h"

#define LINK_BACKOFF_MIN (1000 * 1000000LL)   /* ns, after a failed session */
#define LINK_BACKOFF_MAX (10000 * 1000000LL)  /* ns, the cap of its doubling */
#define LINK_SILENCE (5000 * 1000000LL)       /* ns without a byte: the link is cut */
#define LINK_CONNECT_TIMEOUT (5000 * 1000000LL)
#define LINK_POLL_MS 100                      /* how often the stop flag is looked at */
#define LINK_FENCE_RETRY (200 * 1000000LL)    /* ns between tries to fence the old primary */
#define LINK_LINE_MAX ((size_t)1 << 20)       /* the longest answer line read */
#define LINK_READ ((size_t)256 << 10)         /* bytes asked of one read */

/* What the lag needs of a table. */
struct link_table {
	char name[TS_NAME_MAX + 1];
	uint64_t have;          /* the end of the newest commit held */
	uint64_t primary_end;   /* the end of the primary's, by its last heartbeat */
	int64_t caught;         /* monotonic ns have last reached primary_end */
	uint64_t commit;        /* the newest commit record applied (an L frame's id) */
	uint64_t acked;         /* the commit last acknowledged (sync=replica) */
};

struct tsd_link {
	struct tsd_config *cfg;
	const char *primary;    /* cfg->follow */
	ts_standby *sb;
	ts_db *db;              /* the daemon's read-only handle (its EPOCH) */
	pthread_t thread;
	int started, stop;      /* stop: atomic */
	int fd;                 /* the session's socket, or -1 */
	unsigned char *buf;     /* bytes received and not yet used: [0, len) */
	size_t len, cap;
	struct link_table *tables;
	int ntables, captables;
	char msg[TSD_MESSAGE_MAX]; /* why the session ended, or promote failed */
	int acks;               /* the primary runs sync=replica: ack commits */
	pthread_mutex_t promote_mu; /* one promote (or stop) at a time */
	int promoted;           /* atomic: the writer below is open */
	ts_db *writer;          /* atomic: after promote, the read-write handle */
};

static int stopping(struct tsd_link *l)
{
	return __atomic_load_n(&l->stop, __ATOMIC_RELAXED);
}

/* End the session with a message: returns -1. */
static int why(struct tsd_link *l, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int why(struct tsd_link *l, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(l->msg, sizeof l->msg, fmt, ap);
	va_end(ap);
	return -1;
}

/* ---- lag ---- */

static struct link_table *table_of(struct tsd_link *l, const char *name, int add)
{
	for (int i = 0; i < l->ntables; i++)
		if (strcmp(l->tables[i].name, name) == 0)
			return &l->tables[i];
	if (!add)
		return NULL;
	if (l->ntables == l->captables) {
		int cap = l->captables ? 2 * l->captables : 16;
		struct link_table *p = realloc(l->tables, (size_t)cap * sizeof *p);
		if (!p)
			return NULL;
		l->tables = p;
		l->captables = cap;
	}
	struct link_table *t = &l->tables[l->ntables++];
	memset(t, 0, sizeof *t);
	snprintf(t->name, sizeof t->name, "%s", name);
	t->caught = tsd_mono_ns();
	return t;
}

/* What frame f of table tells of the lag (after it was applied). */
static void lag_frame(struct tsd_link *l, const char *table, const ts_frame *f)
{
	struct link_table *t = table_of(l, table, f->type != TS_FRAME_END);
	const unsigned char *p = f->payload;
	if (!t)
		return;
	switch (f->type) {
	case TS_FRAME_HEARTBEAT:
		if (f->length >= 8) {
			uint64_t end = 0;
			for (int i = 7; i >= 0; i--)
				end = end << 8 | p[i];
			t->primary_end = end;
		}
		break;
	case TS_FRAME_LOG:
		if (f->id && f->offset + f->length > t->have)
			t->have = f->offset + f->length;
		if (f->id)
			t->commit = f->id;
		break;
	case TS_FRAME_DESCRIPTOR:
		if (f->id > t->have)
			t->have = f->id;
		break;
	case TS_FRAME_END:
		*t = l->tables[--l->ntables];
		return;
	default:
		break;
	}
	if (t->have >= t->primary_end)
		t->caught = tsd_mono_ns();
}

/* The lag now, into the stats. */
static void lag_report(struct tsd_link *l)
{
	uint64_t lsn = 0;
	int64_t ns = 0, now = tsd_mono_ns();
	for (int i = 0; i < l->ntables; i++) {
		const struct link_table *t = &l->tables[i];
		if (t->have >= t->primary_end)
			continue;
		lsn += t->primary_end - t->have;
		if (now - t->caught > ns)
			ns = now - t->caught;
	}
	tsd_stats_standby_lag(lsn, ns);
}

/* ---- the connection ---- */

/* Connect to the primary, within LINK_CONNECT_TIMEOUT. */
static int dial(struct tsd_link *l)
{
	char host[256], port[16];
	struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *ai = NULL;
	int p, rc, err = 0;
	if (tsd_tcp_split(l->primary + 4, host, sizeof host, &p) < 0)
		return why(l, "want tcp:HOST:PORT");
	snprintf(port, sizeof port, "%d", p);
	if ((rc = getaddrinfo(host, port, &hints, &ai)) != 0)
		return why(l, "%s: %s", host, gai_strerror(rc));
	for (struct addrinfo *a = ai; a && l->fd < 0; a = a->ai_next) {
		int fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
		if (fd < 0) {
			err = errno;
			continue;
		}
		if (connect(fd, a->ai_addr, a->ai_addrlen) < 0 && errno != EINPROGRESS) {
			err = errno;
			close(fd);
			continue;
		}
		int64_t deadline = tsd_mono_ns() + LINK_CONNECT_TIMEOUT;
		struct pollfd pf = {.fd = fd, .events = POLLOUT};
		socklen_t len = sizeof err;
		while (!stopping(l) && tsd_mono_ns() < deadline && (rc = poll(&pf, 1, LINK_POLL_MS)) == 0)
			;
		err = rc > 0 && getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) == 0 ? err
		    : rc < 0 ? errno : ETIMEDOUT;
		if (err) {
			close(fd);
			continue;
		}
		l->fd = fd;
	}
	freeaddrinfo(ai);
	return l->fd >= 0 ? 0 : why(l, "connect: %s", strerror(err ? err : ECONNREFUSED));
}

/* Send p[0..n) whole. */
static int send_all(struct tsd_link *l, const char *p, size_t n)
{
	int64_t last = tsd_mono_ns();
	while (n && !stopping(l)) {
		ssize_t w = send(l->fd, p, n, MSG_NOSIGNAL);
		if (w > 0) {
			p += w;
			n -= (size_t)w;
			last = tsd_mono_ns();
			continue;
		}
		if (w < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
			return why(l, "send: %s", strerror(errno));
		if (tsd_mono_ns() - last > LINK_SILENCE)
			return why(l, "send: the primary takes nothing for %d s",
			           (int)(LINK_SILENCE / 1000000000));
		struct pollfd pf = {.fd = l->fd, .events = POLLOUT};
		poll(&pf, 1, LINK_POLL_MS);
	}
	return n ? -1 : 0;
}

/* Read more bytes into buf, waiting at most LINK_POLL_MS.  Returns the
 * bytes read (0: none yet), or -1 at the end of the stream, an error,
 * or a silence since *last longer than LINK_SILENCE. */
static int receive(struct tsd_link *l, int64_t *last)
{
	if (l->cap - l->len < LINK_READ) {
		size_t cap = l->len + LINK_READ;
		unsigned char *p = realloc(l->buf, cap);
		if (!p)
			return why(l, "out of memory");
		l->buf = p;
		l->cap = cap;
	}
	struct pollfd pf = {.fd = l->fd, .events = POLLIN};
	if (poll(&pf, 1, LINK_POLL_MS) <= 0) {
		if (tsd_mono_ns() - *last > LINK_SILENCE)
			return why(l, "nothing from the primary for %d s",
			           (int)(LINK_SILENCE / 1000000000));
		return 0;
	}
	ssize_t r = recv(l->fd, l->buf + l->len, l->cap - l->len, 0);
	if (r == 0)
		return why(l, "the primary closed the connection");
	if (r < 0)
		return errno == EAGAIN || errno == EINTR ? 0 : why(l, "recv: %s", strerror(errno));
	l->len += (size_t)r;
	*last = tsd_mono_ns();
	return (int)r;
}

/* Drop the first n bytes of buf. */
static void consume(struct tsd_link *l, size_t n)
{
	if (!n)
		return;
	memmove(l->buf, l->buf + n, l->len - n);
	l->len -= n;
}

/* Send request req (a JSON object, taken) as a line and read the one
 * answer line into *answer (the caller decrefs it).  An answer that is
 * not ok ends the session with the primary's message. */
static int call(struct tsd_link *l, json_t *req, const char *op, json_t **answer)
{
	char *line = req ? json_dumps(req, JSON_COMPACT) : NULL;
	int64_t last = tsd_mono_ns();
	unsigned char *nl = NULL;
	json_error_t err;
	json_decref(req);
	*answer = NULL;
	if (!line)
		return why(l, "out of memory");
	size_t n = strlen(line);
	line[n] = '\n'; /* over its NUL: sent as n + 1 bytes */
	int rc = send_all(l, line, n + 1);
	free(line);
	while (rc == 0 && !stopping(l) && !(l->len && (nl = memchr(l->buf, '\n', l->len)))) {
		if (l->len > LINK_LINE_MAX)
			return why(l, "%s: an answer line longer than %zu bytes", op, LINK_LINE_MAX);
		if (receive(l, &last) < 0)
			return -1;
	}
	if (!nl)
		return -1;
	json_t *a = json_loadb((const char *)l->buf, (size_t)(nl - l->buf), 0, &err);
	consume(l, (size_t)(nl - l->buf) + 1);
	if (!json_is_object(a)) {
		json_decref(a);
		return why(l, "%s: the answer is no JSON object", op);
	}
	if (!json_is_true(json_object_get(a, "ok"))) {
		const json_t *error = json_object_get(a, "error");
		const char *e = json_string_value(json_object_get(error, "message"));
		const char *c = json_string_value(json_object_get(error, "code"));
		why(l, "%s: the primary answers %s: %s", op, c ? c : "an error", e ? e : "?");
		json_decref(a);
		return -1;
	}
	*answer = a;
	return 0;
}

/* {"op":"auth"} with this daemon's token, when it has one. */
static int authenticate(struct tsd_link *l)
{
	char *token = tsd_token_copy(l->cfg);
	json_t *a;
	if (!token)
		return 0; /* the primary may let a loopback client follow */
	int rc = call(l, json_pack("{s:s,s:s}", "op", "auth", "token", token), "auth", &a);
	free(token);
	json_decref(a);
	return rc;
}

/* The follow request: what the standby holds (ts_standby_state), its
 * lineage and epoch when it has them.  Resets the lag's tables to it. */
static json_t *follow_request(struct tsd_link *l)
{
	ts_standby_table *st = NULL;
	ts_epoch e;
	char hex[2 * TS_LINEAGE_SIZE + 1];
	int n = 0, rc;
	if ((rc = ts_standby_state(l->sb, &st, &n)) < 0) {
		why(l, "the standby's state: %s", ts_errmsg(NULL));
		return NULL;
	}
	json_t *req = json_pack("{s:s}", "op", "follow"), *tables = json_object();
	if ((rc = ts_epoch_get(l->db, &e)) == 0) {
		tsd_lineage_hex(&e, hex);
		json_object_set_new(req, "lineage", json_string(hex));
		json_object_set_new(req, "epoch", json_integer((json_int_t)e.epoch));
	} else if (rc != TS_ENOENT) { /* ENOENT: a new standby, no lineage yet */
		why(l, "the standby's EPOCH: %s", ts_errmsg(NULL));
		json_decref(req);
		req = NULL;
	}
	l->ntables = 0;
	for (int i = 0; req && i < n; i++) {
		json_t *ids = json_array();
		for (int k = 0; k < st[i].ntablets; k++)
			json_array_append_new(ids, json_integer((json_int_t)st[i].tablets[k]));
		json_object_set_new(tables, st[i].name,
		                    json_pack("{s:I,s:o}", "lsn", (json_int_t)st[i].lsn, "tablets", ids));
		struct link_table *t = table_of(l, st[i].name, 1);
		if (t)
			t->have = st[i].lsn;
	}
	ts_standby_state_free(st, n);
	if (req)
		json_object_set_new(req, "tables", tables);
	else
		json_decref(tables);
	return req;
}

/* The answer's lineage and epoch into the standby's EPOCH. */
static int adopt(struct tsd_link *l, const json_t *answer)
{
	const char *hex = json_string_value(json_object_get(answer, "lineage"));
	const json_t *epoch = json_object_get(answer, "epoch");
	ts_epoch e;
	memset(&e, 0, sizeof e);
	if (!hex || strlen(hex) != 2 * TS_LINEAGE_SIZE || !json_is_integer(epoch) ||
	    json_integer_value(epoch) < 1)
		return why(l, "follow: the answer has no valid \"lineage\" and \"epoch\"");
	for (int i = 0; i < TS_LINEAGE_SIZE; i++) {
		unsigned v;
		if (sscanf(hex + 2 * i, "%2x", &v) != 1)
			return why(l, "follow: \"lineage\" is not hex");
		e.lineage[i] = (unsigned char)v;
	}
	e.epoch = (uint64_t)json_integer_value(epoch);
	if (ts_standby_adopt(l->sb, &e) < 0)
		return why(l, "the primary's lineage and epoch: %s", ts_errmsg(NULL));
	return 0;
}

/* Apply the whole frames buf holds.  Returns the number applied, or -1. */
static int apply_frames(struct tsd_link *l)
{
	size_t off = 0, used;
	char table[TS_NAME_MAX + 1];
	ts_frame f;
	int n = 0, rc;
	if (!l->len)
		return 0;
	while ((rc = ts_frame_decode(l->buf + off, l->len - off, &f, table, &used)) == 1) {
		if (ts_standby_apply(l->sb, table, &f) < 0) {
			consume(l, off);
			return why(l, "table \"%s\": frame '%c': %s", table, f.type, ts_errmsg(NULL));
		}
		tsd_stats_standby_frame(f.type, f.length);
		lag_frame(l, table, &f);
		off += used;
		n++;
	}
	consume(l, off);
	if (rc < 0)
		return why(l, "a damaged frame: %s", ts_errmsg(NULL));
	return n;
}

/* Under sync=replica: once the commits applied are synced, the line
 * {"ack":{"TABLE":LSN,...}} naming each table's newest commit not yet
 * acknowledged (docs/standby.md section 4).  Returns 0 or -1. */
static int acknowledge(struct tsd_link *l)
{
	json_t *acks = NULL;
	int rc = 0;
	for (int i = 0; i < l->ntables; i++) {
		struct link_table *t = &l->tables[i];
		if (t->commit == t->acked)
			continue;
		if (!acks && !(acks = json_object()))
			return why(l, "out of memory");
		json_object_set_new(acks, t->name, json_integer((json_int_t)t->commit));
	}
	if (!acks)
		return 0;
	if (ts_standby_sync(l->sb) < 0)
		rc = why(l, "sync: %s", ts_errmsg(NULL));
	json_t *line = json_pack("{s:o}", "ack", acks);
	char *text = rc == 0 && line ? json_dumps(line, JSON_COMPACT) : NULL;
	json_decref(line);
	if (rc == 0 && !text)
		rc = why(l, "out of memory");
	if (rc == 0) {
		size_t n = strlen(text);
		text[n] = '\n'; /* over its NUL: sent as n + 1 bytes */
		rc = send_all(l, text, n + 1);
	}
	free(text);
	for (int i = 0; rc == 0 && i < l->ntables; i++)
		l->tables[i].acked = l->tables[i].commit;
	return rc;
}

/* One session: connect, auth, follow, frames until it ends.  *lasted
 * is set when the stream ran for LINK_BACKOFF_MAX or more. */
static int session(struct tsd_link *l, int *lasted)
{
	json_t *answer = NULL;
	int64_t last;
	int rc;
	l->len = 0;
	if (dial(l) < 0 || authenticate(l) < 0)
		return -1;
	json_t *req = follow_request(l);
	if (!req || call(l, req, "follow", &answer) < 0)
		return -1;
	rc = adopt(l, answer);
	l->acks = json_is_true(json_object_get(answer, "acks"));
	json_decref(answer);
	if (rc < 0)
		return -1;
	tsd_log("following %s", l->primary);
	tsd_stats_standby_connected(1);
	int64_t began = last = tsd_mono_ns();
	while (!stopping(l)) {
		if ((rc = apply_frames(l)) < 0 || (rc > 0 && l->acks && (rc = acknowledge(l)) < 0))
			break;
		lag_report(l);
		if (receive(l, &last) < 0) {
			rc = -1;
			break;
		}
	}
	tsd_stats_standby_connected(0);
	*lasted = tsd_mono_ns() - began >= LINK_BACKOFF_MAX;
	lag_report(l);
	if (ts_standby_sync(l->sb) < 0 && rc == 0)
		rc = why(l, "sync: %s", ts_errmsg(NULL));
	return rc;
}

static void *run(void *arg)
{
	struct tsd_link *l = arg;
	int64_t backoff = LINK_BACKOFF_MIN;
	while (!stopping(l)) {
		int lasted = 0;
		l->msg[0] = '\0';
		int rc = session(l, &lasted);
		if (l->fd >= 0) {
			close(l->fd);
			l->fd = -1;
		}
		if (stopping(l))
			break;
		if (lasted)
			backoff = LINK_BACKOFF_MIN;
		tsd_log("follow %s: %s; again in %d s", l->primary,
		        rc < 0 && l->msg[0] ? l->msg : "the stream ended",
		        (int)(backoff / 1000000000));
		for (int64_t end = tsd_mono_ns() + backoff; !stopping(l) && tsd_mono_ns() < end;) {
			struct timespec nap = {0, LINK_POLL_MS * 1000000L};
			nanosleep(&nap, NULL);
		}
		backoff = backoff * 2 > LINK_BACKOFF_MAX ? LINK_BACKOFF_MAX : backoff * 2;
	}
	return NULL;
}

/* ---- fencing the old primary, after promotion ---- */

/* One try at telling the old primary of this epoch: a follow request
 * of this lineage at epoch e (no tables), which a member of an older
 * epoch refuses, fencing itself durably (follow.c).  Returns 1 when it
 * refused for that reason, 0 when it is not older (it answered ok: this
 * daemon is not the newest, and leaves it alone), -1 when nothing
 * answers at its address, -2 when something else answers there (another
 * error: l->msg says which). */
static int fence_once(struct tsd_link *l, const ts_epoch *e)
{
	char hex[2 * TS_LINEAGE_SIZE + 1];
	json_t *answer = NULL;
	l->len = 0;
	if (dial(l) < 0)
		return -1;
	if (authenticate(l) < 0)
		return -2;
	tsd_lineage_hex(e, hex);
	int rc = call(l, json_pack("{s:s,s:s,s:I,s:{}}", "op", "follow", "lineage", hex, "epoch",
	                           (json_int_t)e->epoch, "tables"),
	              "follow", &answer);
	json_decref(answer);
	if (rc == 0)
		return 0;
	return strstr(l->msg, "takes no more writes") ? 1 : -2;
}

/* The thread of a promoted standby: its old primary (the address it
 * followed) may come back and take writes as a primary of the older
 * epoch until a member of this one tells it otherwise
 * (docs/standby.md section 3.2).  So the promoted daemon tells it: it
 * tries every LINK_FENCE_RETRY while nothing answers at that address --
 * a returning old primary is fenced within that -- and every
 * LINK_BACKOFF_MAX once something answers (the old primary fenced, in
 * case its directory is put back from an older copy; or another daemon
 * there, which refuses the request), until the daemon stops or the old
 * primary turns out not to be older. */
static void *fence_old(void *arg)
{
	struct tsd_link *l = arg;
	ts_epoch e;
	int said = 0;
	if (ts_epoch_get(l->writer, &e) < 0) {
		tsd_log("the old primary %s is not fenced: this database's epoch: %s", l->primary,
		        ts_errmsg(NULL));
		return NULL;
	}
	while (!stopping(l)) {
		l->msg[0] = '\0';
		int rc = fence_once(l, &e);
		if (l->fd >= 0) {
			close(l->fd);
			l->fd = -1;
		}
		if (rc == 1 && !said)
			tsd_log("the old primary %s is fenced: it knows of epoch %" PRIu64 " and takes no "
			        "more writes", l->primary, e.epoch);
		if (rc == 0) {
			tsd_log("the old primary %s took a follow request of epoch %" PRIu64 ": it is not "
			        "an older member of this lineage; it is not fenced", l->primary, e.epoch);
			break;
		}
		said = said || rc == 1;
		for (int64_t end = tsd_mono_ns() + (rc == -1 ? LINK_FENCE_RETRY : LINK_BACKOFF_MAX);
		     !stopping(l) && tsd_mono_ns() < end;) {
			struct timespec nap = {0, LINK_POLL_MS * 1000000L};
			nanosleep(&nap, NULL);
		}
	}
	return NULL;
}

/* ---- promotion ---- */

/* Stop the thread and close the standby (its LOCK released), once. */
static int stop_link(struct tsd_link *l)
{
	int rc = 0;
	__atomic_store_n(&l->stop, 1, __ATOMIC_RELAXED);
	if (l->started)
		pthread_join(l->thread, NULL);
	l->started = 0;
	if (l->sb && (rc = ts_standby_close(l->sb)) < 0)
		why(l, "the standby's last sync: %s", ts_errmsg(NULL));
	l->sb = NULL;
	return rc;
}

/* A table of the directory with a descriptor that waits for log bytes
 * the primary never sent (DESCRIPTOR.next, docs/standby.md section 1.1):
 * its name into l->msg and -1, else 0. */
static int descriptor_waits(struct tsd_link *l)
{
	char **names = NULL, path[TSD_PATH_MAX];
	int n = 0, rc = 0;
	if (ts_tables(l->db, &names, &n) < 0)
		return why(l, "the tables: %s", ts_errmsg(NULL));
	for (int i = 0; rc == 0 && i < n; i++) {
		snprintf(path, sizeof path, "%s/%s/DESCRIPTOR.next", l->cfg->datadir, names[i]);
		if (access(path, F_OK) == 0)
			rc = why(l, "table \"%s\" holds a descriptor waiting for log bytes the primary "
			         "did not send (%s): promoting would lose what it names; let the link "
			         "finish, or copy the primary's files", names[i], path);
	}
	ts_free_names(names);
	return rc;
}

int tsd_link_promote(struct tsd_link *l, ts_epoch *e, char *msg, size_t size)
{
	ts_options opts = l->cfg->lib;
	ts_db *db = NULL;
	int rc = 0;
	pthread_mutex_lock(&l->promote_mu);
	l->msg[0] = '\0';
	if (__atomic_load_n(&l->promoted, __ATOMIC_ACQUIRE))
		rc = why(l, "this tsstored was promoted already: it is a primary");
	else if (!l->db)
		rc = why(l, "tsstored is still starting; try again");
	if (rc == 0 && l->sb && (rc = descriptor_waits(l)) == 0)
		rc = stop_link(l);
	/* the writer's open: its recovery ends the log at the last commit
	 * the standby holds whole, as after a crash of a primary */
	opts.flags &= ~(unsigned)TS_OPEN_READONLY;
	if (rc == 0 && ts_open(l->cfg->datadir, &opts, &db) < 0)
		rc = why(l, "open %s for writing: %s", l->cfg->datadir, ts_errmsg(NULL));
	if (rc == 0 && ts_epoch_raise(db, e) < 0)
		rc = why(l, "%s", ts_errmsg(NULL));
	if (rc == 0) {
		__atomic_store_n(&l->writer, db, __ATOMIC_RELEASE);
		__atomic_store_n(&l->promoted, 1, __ATOMIC_RELEASE);
		tsd_role_promoted();
		tsd_stats_standby_connected(0);
		tsd_log("promoted: no longer following %s; a primary at epoch %" PRIu64, l->primary,
		        e->epoch);
		__atomic_store_n(&l->stop, 0, __ATOMIC_RELAXED);
		int err = pthread_create(&l->thread, NULL, fence_old, l);
		if (err)
			tsd_log("the old primary %s is not fenced: %s", l->primary, strerror(err));
		l->started = !err;
	} else {
		ts_close(db);
		snprintf(msg, size, "%s", l->msg);
		tsd_log("promote: %s", msg);
	}
	pthread_mutex_unlock(&l->promote_mu);
	return rc < 0 ? TS_EINVAL : 0;
}

ts_db *tsd_link_db(struct tsd_link *l, ts_db *db)
{
	ts_db *writer = l ? __atomic_load_n(&l->writer, __ATOMIC_ACQUIRE) : NULL;
	return writer ? writer : db;
}

int tsd_link_open(struct tsd_config *cfg, struct tsd_link **out)
{
	struct tsd_link *l = calloc(1, sizeof *l);
	int rc;
	*out = NULL;
	if (!l) {
		tsd_log("out of memory");
		return -1;
	}
	l->cfg = cfg;
	l->primary = cfg->follow;
	l->fd = -1;
	pthread_mutex_init(&l->promote_mu, NULL);
	if ((rc = ts_standby_open(cfg->datadir, &l->sb)) < 0) {
		tsd_log("%s: %s", cfg->datadir, *ts_errmsg(NULL) ? ts_errmsg(NULL) : ts_strerror(rc));
		pthread_mutex_destroy(&l->promote_mu);
		free(l);
		return -1;
	}
	tsd_stats_standby_start(l->primary);
	*out = l;
	return 0;
}

int tsd_link_start(struct tsd_link *l, ts_db *db)
{
	int rc = 0;
	pthread_mutex_lock(&l->promote_mu);
	l->db = db;
	if (l->sb && (rc = pthread_create(&l->thread, NULL, run, l)) != 0)
		tsd_log("cannot start the link to %s: %s", l->primary, strerror(rc));
	else
		l->started = l->sb != NULL;
	pthread_mutex_unlock(&l->promote_mu);
	return rc ? -1 : 0;
}

void tsd_link_stop(struct tsd_link *l)
{
	if (!l)
		return;
	pthread_mutex_lock(&l->promote_mu);
	if (stop_link(l) < 0)
		tsd_log("closing the standby %s: %s", l->cfg->datadir, l->msg);
	pthread_mutex_unlock(&l->promote_mu);
}

int tsd_link_close(struct tsd_link *l)
{
	int rc = 0;
	if (!l)
		return 0;
	tsd_link_stop(l);
	if (l->writer && (rc = ts_close(l->writer)) < 0)
		tsd_log("closing %s: %s", l->cfg->datadir, ts_strerror(rc));
	pthread_mutex_destroy(&l->promote_mu);
	free(l->buf);
	free(l->tables);
	free(l);
	return rc;
}
