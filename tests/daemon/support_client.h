/*
 * support_client.h -- what the daemon tests need to drive a real
 * tsstored: start one on a fresh temporary directory, stop or kill it,
 * connect over its unix socket or TCP, send request lines and read
 * response lines back with a timeout.
 *
 * Nothing here calls cmocka: every function reports failure by its
 * return value, so the helpers can be used from any thread.  A daemon is
 * started and stopped from the main thread only (its parent-death signal
 * is tied to the thread that forked it).
 */
#ifndef TSSTORE_TESTS_DAEMON_SUPPORT_CLIENT_H
#define TSSTORE_TESTS_DAEMON_SUPPORT_CLIENT_H

#include <stddef.h>
#include <sys/types.h>

#include <jansson.h>

/* How long a test waits for anything the daemon should do promptly. */
#define TSD_TEST_TIMEOUT_MS 10000
/* The backstop on a connect or send the daemon never lets finish
 * (support_client.c): a test that waits this long has failed. */
#define TSD_TEST_STALL_MS 60000
/* Longest path the helpers build (the socket path must also fit
 * sockaddr_un, so the temporary directory is short). */
#define TSD_TEST_PATH_MAX 256
/* Longest temporary directory name ("/tmp/tsd-test-XXXXXX"). */
#define TSD_TEST_DIR_MAX 64
/* Extra command-line arguments tsd_test_daemon_start accepts. */
#define TSD_TEST_ARGS_MAX 16

/* One tsstored and its temporary directory DIR: the database in
 * DIR/data, the unix socket DIR/sock, its stderr in DIR/log (or the
 * test's stderr when TSD_TEST_VERBOSE is set). */
struct tsd_test_daemon {
	pid_t pid;                  /* -1 when not running */
	int port;                   /* its TCP port on 127.0.0.1 */
	int http;                   /* set before a start: listen on HTTP too */
	int http_port;              /* then its HTTP port on 127.0.0.1 */
	char dir[TSD_TEST_DIR_MAX];
	char data[TSD_TEST_PATH_MAX];
	char sock[TSD_TEST_DIR_MAX + 8];  /* fits sockaddr_un */
	char log[TSD_TEST_PATH_MAX];
};

/* printf into a malloc'ed string (the process aborts if it cannot). */
char *tsd_test_fmt(const char *f, ...) __attribute__((format(printf, 1, 2)));

/* Sleep ms milliseconds, through signals. */
void tsd_test_sleep_ms(int ms);

/*
 * tsd_test_daemon_new -- a new temporary directory (mkdtemp under /tmp)
 * and a daemon record for it, not yet started.  Returns NULL on failure.
 */
struct tsd_test_daemon *tsd_test_daemon_new(void);

/*
 * tsd_test_daemon_start -- start TSSTORED_PATH on d's directory with
 * --listen unix:DIR/sock --listen tcp:127.0.0.1:PORT (a port found free
 * just before; on a lost race for it the start is retried on another),
 * and when d->http is set --listen http:127.0.0.1:HTTP_PORT likewise,
 * and the NULL-terminated extra arguments args (may be NULL); wait until
 * every listener accepts.  May be called again after a stop, on the same
 * database.  Returns 0, or -1 when the daemon did not come up (its log
 * says why; it is not left running).
 */
int tsd_test_daemon_start(struct tsd_test_daemon *d, const char *const *args);

/*
 * tsd_test_daemon_up -- a daemon made (tsd_test_daemon_new) and started
 * (tsd_test_daemon_start with args), with its HTTP listener when http is
 * set: what a test's setup does.  Returns it running, or NULL when it did
 * not come up (its log dumped to stderr, its directory removed).
 */
struct tsd_test_daemon *tsd_test_daemon_up(int http, const char *const *args);

/*
 * tsd_test_daemon_stop -- SIGTERM, then wait up to timeout_ms for the
 * exit.  Returns the exit status (0-255); -1 when the daemon died of a
 * signal or did not exit in time (it is then killed).  Not running: -1.
 */
int tsd_test_daemon_stop(struct tsd_test_daemon *d, int timeout_ms);

/* SIGKILL the daemon, if running, and reap it. */
void tsd_test_daemon_kill(struct tsd_test_daemon *d);

/* Kill the daemon if running, remove the directory tree, free d.
 * Accepts NULL. */
void tsd_test_daemon_free(struct tsd_test_daemon *d);

/* Whether the daemon's process is still alive (not exited). */
int tsd_test_daemon_alive(struct tsd_test_daemon *d);

/* A "Name:  N kB" line of /proc/PID/status ("VmRSS", "RssAnon"), in kB;
 * -1 when it cannot be read. */
long tsd_test_daemon_status_kb(const struct tsd_test_daemon *d, const char *name);

/* Print the daemon's log to stderr (for a failing test). */
void tsd_test_daemon_dump_log(const struct tsd_test_daemon *d);

/*
 * tsd_test_admin -- run the admin command `tsstore` built beside
 * TSSTORED_PATH with the NULL-terminated arguments args (at most
 * TSD_TEST_ARGS_MAX), e.g. {"-d", d->data, "check", NULL}; its standard
 * output and error are appended to the file out (created if missing).
 * Returns its exit status (0-255), or -1 when it could not be run or died
 * of a signal.
 */
int tsd_test_admin(const char *const *args, const char *out);

/* ---- Connections ---- */

enum tsd_test_transport { TSD_TEST_UNIX, TSD_TEST_TCP, TSD_TEST_HTTP };

/* A client connection: a blocking socket and the bytes read from it
 * that are not yet returned as lines. */
struct tsd_test_conn {
	int fd;
	char *buf;
	size_t start, len, cap; /* unread bytes are buf[start..len) */
};

/* Connect to d over transport.  Returns the connection, or NULL. */
struct tsd_test_conn *tsd_test_connect(const struct tsd_test_daemon *d,
                                       enum tsd_test_transport transport);

/* Close the socket and free c.  Accepts NULL. */
void tsd_test_close(struct tsd_test_conn *c);

/* Write all of p[0..n).  Returns 0, or -1 (the peer is gone: EPIPE is
 * returned, never raised as SIGPIPE). */
int tsd_test_send(struct tsd_test_conn *c, const void *p, size_t n);

/* Write line and a '\n'.  Returns 0 or -1. */
int tsd_test_send_line(struct tsd_test_conn *c, const char *line);

/* Return values of tsd_test_read_line. */
enum { TSD_TEST_LINE = 1, TSD_TEST_EOF = -1, TSD_TEST_TIMEOUT = -2, TSD_TEST_ERROR = -3 };

/*
 * tsd_test_read_line -- the next '\n'-terminated line, waiting at most
 * timeout_ms for it.  line: receives a malloc'ed copy without the '\n'
 * (NULL unless TSD_TEST_LINE); len (may be NULL): its length.
 * Returns TSD_TEST_LINE; TSD_TEST_EOF when the daemon closed the
 * connection (bytes of an unterminated last line are dropped);
 * TSD_TEST_TIMEOUT; TSD_TEST_ERROR (a socket error, out of memory).
 */
int tsd_test_read_line(struct tsd_test_conn *c, int timeout_ms, char **line, size_t *len);

/*
 * tsd_test_read_bytes -- the next n bytes, waiting at most timeout_ms
 * for them.  out: receives a malloc'ed copy, NUL-terminated (NULL
 * unless TSD_TEST_LINE).  Returns TSD_TEST_LINE, or TSD_TEST_EOF /
 * TSD_TEST_TIMEOUT / TSD_TEST_ERROR as tsd_test_read_line.
 */
int tsd_test_read_bytes(struct tsd_test_conn *c, size_t n, int timeout_ms, char **out);

/*
 * tsd_test_read_response -- the lines of one response: up to and
 * including the first that is an object with "ok".  lines (may be
 * NULL): receives a JSON array of the parsed lines; text (may be NULL):
 * receives the lines as sent, each with its '\n'.
 * Returns 0, or TSD_TEST_EOF / TSD_TEST_TIMEOUT / TSD_TEST_ERROR as
 * tsd_test_read_line (TSD_TEST_ERROR also for a line that is not a JSON
 * object); nothing is returned through lines or text on failure.
 */
int tsd_test_read_response(struct tsd_test_conn *c, int timeout_ms, json_t **lines,
                           char **text);

/*
 * tsd_test_call -- send request (a line, without '\n') and read its whole
 * response.  Returns the response text, every line with its '\n'
 * (malloc'ed), or NULL when sending or reading failed.
 */
char *tsd_test_call(struct tsd_test_conn *c, const char *request);

/*
 * tsd_test_drop_version -- remove, in place, the ,"version":N member of
 * every insert answer (a line with "inserted") in text; returns text
 * (NULL stays NULL).  N is the table's log position, which depends on
 * the log's layout: tests that are not about it compare the rest
 * exactly, and test_daemon's insert_answers_version checks N itself.
 */
char *tsd_test_drop_version(char *text);

#endif /* TSSTORE_TESTS_DAEMON_SUPPORT_CLIENT_H */
