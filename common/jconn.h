/*
 * jconn.h -- a client connection to tsstored: JSON-lines requests out,
 * parsed response lines in (DESIGN.md section 5; jconn.c).  The admin
 * command's -s mode and the SQLite module's socket= share it.
 */
#ifndef TSSTORE_COMMON_JCONN_H
#define TSSTORE_COMMON_JCONN_H

#include <stddef.h>

#include <jansson.h>

#include "json.h"

struct jconn;

/* Connect to the unix socket at path ("unix:" before it allowed).
 * Returns 0, or -1 with why (of whysz bytes) set. */
int jconn_connect(const char *path, struct jconn **out, char *why, size_t whysz);

/* Close the connection.  NULL allowed. */
void jconn_close(struct jconn *c);

/* Send the request line req (a JSON object, no newline).  Returns 0 or -1
 * with why set. */
int jconn_send(struct jconn *c, const struct jbuf *req, char *why, size_t whysz);

/*
 * jconn_next -- the next line of the response, parsed.  Returns 1 for a
 * "rows" line (*line holds it), 0 for the last line when it says ok
 * (*line holds it), or a negative TS_E* code with why set: the code and
 * message of the daemon's error line, or TS_EIO for a lost connection or
 * a malformed line (*line NULL).  json_decref *line.
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
