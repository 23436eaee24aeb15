/*
 * remote.h -- the virtual table through tsstored (socket='PATH'): one
 * connection speaking the JSON-lines protocol of DESIGN.md section 5
 * (remote.c).
 */
#ifndef TSSTORE_SQLITE_REMOTE_H
#define TSSTORE_SQLITE_REMOTE_H

#include <stddef.h>

#include <jansson.h>

#include "json.h"

struct tsr_conn;

/* Connect to the unix socket at path ("unix:" before it allowed).
 * Returns 0, or -1 with why (of whysz bytes) set. */
int tsr_connect(const char *path, struct tsr_conn **out, char *why, size_t whysz);

/* Close the connection.  NULL allowed. */
void tsr_close(struct tsr_conn *c);

/* Send the request line req (a JSON object, no newline).  Returns 0 or -1
 * with why set. */
int tsr_send(struct tsr_conn *c, const struct jbuf *req, char *why, size_t whysz);

/*
 * tsr_next -- the next line of the response, parsed.  Returns 1 for a
 * "rows" line (*line holds it), 0 for the last line when it says ok
 * (*line holds it), or -1 with why set: the daemon's error message, a
 * lost connection or a malformed line (*line NULL).  json_decref *line.
 */
int tsr_next(struct tsr_conn *c, json_t **line, char *why, size_t whysz);

/* tsr_send, then the last line of a response that has no rows lines.
 * Returns 0 with *reply (may be NULL: dropped), or -1 with why set. */
int tsr_call(struct tsr_conn *c, const struct jbuf *req, json_t **reply, char *why, size_t whysz);

#endif /* TSSTORE_SQLITE_REMOTE_H */
