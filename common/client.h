/*
 * client.h -- the one client of tsstored that the programs share: the
 * admin command's -s, the SQLite module's socket= and the bench's ingest
 * workload (client.c).  It connects to any address tsstored listens on
 * (unix:PATH, a bare PATH, tcp:HOST:PORT), sends the token on TCP, and
 * hands back a connection of jconn.h, whose jconn_call and jconn_next
 * carry the requests and their streamed responses.
 */
#ifndef TSSTORE_COMMON_CLIENT_H
#define TSSTORE_COMMON_CLIENT_H

#include <stddef.h>
#include <stdint.h>

#include "jconn.h"

/* The environment of every client: the token itself, or a file whose
 * first line is the token (as tsstored's --token FILE). */
#define CLIENT_TOKEN_ENV "TSSTORE_TOKEN"
#define CLIENT_TOKEN_FILE_ENV "TSSTORE_TOKEN_FILE"

/* The longest token (tsstored's TSD_TOKEN_MAX). */
#define CLIENT_TOKEN_MAX 4096

/*
 * client_connect -- connect to tsstored at addr (jconn_connect's forms)
 * and, over TCP when a token is known, authenticate: send
 * {"op":"auth","token":…} and wait for its ok.  The token is the first
 * line of token_file when that is not NULL, else $TSSTORE_TOKEN when set
 * and not empty, else the first line of the file $TSSTORE_TOKEN_FILE
 * when set; with none, nothing is sent (a daemon then answers EAUTH to
 * each request above the connection's access level, naming the level).
 * Unix sockets never need a
 * token, and none is sent on them.
 * timeout: as jconn_connect's (ns; 0: none).
 * Returns 0 with *out set (jconn_close it), or -1 with why set, e.g.
 * "tcp:127.0.0.1:7400: tsstored refused the token of $TSSTORE_TOKEN:
 * wrong token; closing the connection".
 */
int client_connect(const char *addr, const char *token_file, int64_t timeout,
                   struct jconn **out, char *why, size_t whysz);

#endif /* TSSTORE_COMMON_CLIENT_H */
