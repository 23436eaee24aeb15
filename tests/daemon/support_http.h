/*
 * support_http.h -- HTTP/1.1 over a test connection (support_client.h):
 * a POST sent, and one response read back whole -- its status, its head
 * as sent (but the Date header) and its body -- for the daemon tests that
 * talk to tsstored's HTTP listener (test_http, test_promwrite,
 * test_promread); and their fixture, a daemon with HTTP connections.
 *
 * As support_client.h, nothing here calls cmocka: failures are return
 * values, and what a test asserts of a response is the test's.
 */
#ifndef TSSTORE_TESTS_DAEMON_SUPPORT_HTTP_H
#define TSSTORE_TESTS_DAEMON_SUPPORT_HTTP_H

#include <stddef.h>

#include "support_client.h"

/* One response. */
struct tsd_test_response {
	int status;
	char *head;       /* "HTTP/1.1 204 No Content\r\n...\r\n\r\n", without Date */
	char *body;       /* NUL-terminated; "" when none */
	size_t len;       /* the body's length */
	int dated;        /* a Date header was sent (it is left out of head) */
	int bare_lf;      /* a line of the head ended in '\n' alone, not CRLF */
};

/*
 * tsd_test_post -- send "POST path HTTP/1.1", Host, the header lines
 * extra (each ending "\r\n"; "" for none), Content-Length n, then
 * body[0..n).  Returns 0, or -1 as tsd_test_send.
 */
int tsd_test_post(struct tsd_test_conn *c, const char *path, const char *extra,
                  const void *body, size_t n);

/*
 * tsd_test_read_http -- read one response from c, waiting at most
 * timeout_ms for each part: the head up to the blank line, then
 * Content-Length bytes of body (none when no_body is set, as for a
 * HEAD).  r: filled on success (free it with tsd_test_response_free).
 * Returns TSD_TEST_LINE; TSD_TEST_EOF / TSD_TEST_TIMEOUT / TSD_TEST_ERROR
 * as tsd_test_read_line (TSD_TEST_ERROR also for a first line that is no
 * HTTP/1.1 status line); r then holds nothing.
 */
int tsd_test_read_http(struct tsd_test_conn *c, int timeout_ms, int no_body,
                       struct tsd_test_response *r);

/* tsd_test_response_header -- the value of r's header name (any case),
 * malloc'ed; "" when r has none. */
char *tsd_test_response_header(const struct tsd_test_response *r, const char *name);

/* Free what r holds and zero it. */
void tsd_test_response_free(struct tsd_test_response *r);

/* ---- A daemon spoken to over HTTP ---- */

/* The fixture of the tests that speak HTTP: a daemon with its HTTP
 * listener, a connection to it, and one over TCP for the JSON-lines
 * protocol when asked. */
struct tsd_test_http {
	struct tsd_test_daemon *d;
	struct tsd_test_conn *http;
	struct tsd_test_conn *json;     /* NULL unless asked for */
};

/*
 * tsd_test_http_up -- a daemon started with the NULL-terminated args
 * (may be NULL) and its HTTP listener (tsd_test_daemon_up), connected to
 * over HTTP and, when json is set, over TCP.  Returns it (free it with
 * tsd_test_http_down), or NULL when it did not come up or a connection
 * failed (the daemon's log is then dumped to stderr).
 */
struct tsd_test_http *tsd_test_http_up(const char *const *args, int json);

/* Close t's connections, kill its daemon and remove its directory, free
 * t.  Accepts NULL. */
void tsd_test_http_down(struct tsd_test_http *t);

#endif /* TSSTORE_TESTS_DAEMON_SUPPORT_HTTP_H */
