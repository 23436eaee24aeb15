/*
 * jconn.h -- a client connection to tsstored: JSON-lines requests out,
 * parsed response lines in (DESIGN.md section 5; jconn.c).  The admin
 * command's -s mode and the SQLite module's socket= share it.
 */
#ifndef TSSTORE_COMMON_JCONN_H
#define TSSTORE_COMMON_JCONN_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>
#include <tsstore.h>

#include "json.h"

struct jconn;

/* The default of the clients' timeout (tsstore --timeout, the SQLite
 * module's timeout=): long enough for a busy daemon's next line, short
 * enough that a dead one is reported while someone still waits. */
#define JCONN_TIMEOUT_DEFAULT INT64_C(30000000000) /* 30 s */

/* The longest address jconn_connect takes. */
#define JCONN_ADDRESS_MAX 300

/*
 * jconn_connect -- connect to tsstored at addr: "unix:PATH", a bare PATH
 * (a unix socket), or "tcp:HOST:PORT" (HOST a name, IPv4 address or
 * [IPv6] address).  No authentication: client_connect (client.h) adds
 * the token.  timeout (ns, >= 0; 0: none) bounds the connect, each send
 * and the wait for each next byte of a response on this connection (not
 * the whole response: a stream of rows may take as long as it goes on
 * arriving); past it, the call fails with "no answer from ADDR within
 * DUR".  Returns 0, or -1 with why (of whysz bytes) set.
 */
int jconn_connect(const char *addr, int64_t timeout, struct jconn **out, char *why,
                  size_t whysz);

/* Whether c is a TCP connection (1) or a unix socket's (0). */
int jconn_is_tcp(const struct jconn *c);

/* The pid of the process at the other end of c's unix socket (its
 * SO_PEERCRED, as of the connect), or -1 over TCP or when unknown. */
long jconn_peer_pid(const struct jconn *c);

/* The address c was opened with (the path alone for a unix socket). */
const char *jconn_address(const struct jconn *c);

/* What to add, in parentheses, to the message of an EAUTH error line
 * (the daemon wants a token): hint, a string that outlives c, or NULL.
 * Such a message always begins with the address. */
void jconn_set_auth_hint(struct jconn *c, const char *hint);

/* Close the connection.  NULL allowed. */
void jconn_close(struct jconn *c);

/*
 * jconn_closed -- whether the daemon has closed c while no request was
 * pending (its --idle-timeout, a restart): between requests, a readable
 * socket can only say that, since the daemon never speaks unasked.
 * Call it only between requests (no answer left unread).  Does not wait.
 * Returns 1 (close c: it is of no more use) or 0.
 */
int jconn_closed(const struct jconn *c);

/* Send the request line req (a JSON object, no newline).  Returns 0 or -1
 * with why set. */
int jconn_send(struct jconn *c, const struct jbuf *req, char *why, size_t whysz);

/*
 * jconn_next -- the next line of the response, parsed.  Returns 1 for a
 * "rows" line (*line holds it), 0 for the last line when it says ok
 * (*line holds it), or a negative TS_E* code with why set: the code and
 * message of the daemon's error line, or TS_EIO for a lost connection,
 * the timeout passed or a malformed line (*line NULL; after TS_EIO the
 * connection is of no more use: close it).  json_decref *line.
 */
int jconn_next(struct jconn *c, json_t **line, char *why, size_t whysz);

/*
 * jconn_call -- jconn_send, then the whole response: the array of each
 * rows line goes to on_rows (NULL: rows lines are dropped), which stops
 * the reading by returning nonzero; the last line goes to *reply (reply
 * may be NULL: dropped; json_decref it).  Returns 0; 1 when on_rows
 * stopped (the rest of the response is unread: close the connection);
 * or a negative TS_E* code with why set.
 */
int jconn_call(struct jconn *c, const struct jbuf *req, int (*on_rows)(void *arg, json_t *rows),
               void *arg, json_t **reply, char *why, size_t whysz);

#endif /* TSSTORE_COMMON_JCONN_H */
