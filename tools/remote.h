/*
 * remote.h -- the daemon mode of the admin command: requests to tsstored
 * at -s ADDRESS (a unix socket, or tcp:HOST:PORT with a token), in the
 * protocol of DESIGN.md section 5, through common/client.h (see
 * remote.c).
 */
#ifndef TSSTORE_TOOLS_REMOTE_H
#define TSSTORE_TOOLS_REMOTE_H

#include <jansson.h>

#include "cli.h"
#include "json.h"
#include "request.h"

struct cli_remote;

/* Connect to cli->socket (client_connect, with cli->token_file).  Returns CLI_OK, or CLI_FAILURE after the
 * message. */
int cli_remote_open(const struct cli *cli, struct cli_remote **out);

/* Connect to the tsstored at addr, as cli_remote_open does but with no
 * message: returns 0, or -1 with why set. */
int cli_remote_connect(const struct cli *cli, const char *addr, struct cli_remote **out,
                       char *why, size_t whysz);

/* The pid of the daemon at the other end of rem's unix socket, or -1
 * (jconn_peer_pid). */
long cli_remote_peer_pid(const struct cli_remote *rem);

/* Close the connection.  NULL allowed. */
void cli_remote_close(struct cli_remote *rem);

/*
 * cli_remote_call -- send the request line req (one JSON object, no
 * newline) and read its response (jconn_call).  Each "rows" line's array
 * goes to on_rows (may be NULL: such lines are dropped); a nonzero
 * return from it stops reading and makes the call return 1.
 * reply: receives the last line (with "ok": true), to json_decref; may be
 * NULL.
 * Returns 0; 1 when on_rows stopped; or the negative TS_E* code of the
 * daemon's error line (TS_EIO for a lost connection or a malformed
 * response), with the message in msg.
 */
typedef int cli_remote_rows_fn(void *arg, json_t *rows);
int cli_remote_call(struct cli_remote *rem, const struct jbuf *req, cli_remote_rows_fn *on_rows,
                    void *arg, json_t **reply, char *msg, size_t msgsz);

/* cli_remote_call that reports a failure as the command's message.
 * Returns CLI_OK or CLI_FAILURE. */
int cli_remote_run(const struct cli *cli, struct cli_remote *rem, const struct jbuf *req,
                   cli_remote_rows_fn *on_rows, void *arg, json_t **reply);

/* The schema of table (cli_store_schema's contract). */
int cli_remote_schema(const struct cli *cli, struct cli_remote *rem, const char *table,
                      ts_schema **s);

/* The rows of r (cli_store_rows's contract). */
int cli_remote_rows(const struct cli *cli, struct cli_remote *rem, const struct cli_req *r,
                    const ts_schema *s, cli_row_fn *fn, void *arg, struct cli_more *more);

/* The calls of store.h that leave their message, through the daemon:
 * the same contracts, with the message written to msg. */
int cli_remote_tables(struct cli_remote *rem, char ***names, char *msg, size_t msgsz);
int cli_remote_create(struct cli_remote *rem, const char *table, const ts_column *columns,
                      int ncolumns, const char *const *key, int nkey, int64_t ttl,
                      ts_on_duplicate on_duplicate, char *msg, size_t msgsz);
int cli_remote_alter(struct cli_remote *rem, const char *table, const ts_column *column,
                     const char *widen, int64_t ttl, char *msg, size_t msgsz);
int cli_remote_alter_on_duplicate(struct cli_remote *rem, const char *table,
                                  ts_on_duplicate policy, char *msg, size_t msgsz);
int cli_remote_drop(struct cli_remote *rem, const char *table, char *msg, size_t msgsz);
int cli_remote_create_rollup(struct cli_remote *rem, const char *name, const ts_rollup_spec *spec,
                             const ts_schema *src, char *msg, size_t msgsz);
int cli_remote_rollups(struct cli_remote *rem, const char *table, char ***names, char *msg,
                       size_t msgsz);
int cli_remote_rollup_def(struct cli_remote *rem, const char *table, struct cli_rollup_def *def,
                          char *msg, size_t msgsz);
int cli_remote_insert(struct cli_remote *rem, const char *table, const ts_value *rows, size_t n,
                      int ncolumns, int policy, size_t *ignored, char *msg, size_t msgsz);
int cli_remote_delete(struct cli_remote *rem, const struct cli_req *r, uint64_t *deleted,
                      uint64_t *version, char *msg, size_t msgsz);
int cli_remote_purge(struct cli_remote *rem, const struct cli_req *r, uint64_t *version,
                     char *msg, size_t msgsz);
int cli_remote_flush(struct cli_remote *rem, const char *table, int64_t before, char *msg,
                     size_t msgsz);
int cli_remote_stats(struct cli_remote *rem, const char *table, cli_stat_fn *fn, void *arg,
                     char *msg, size_t msgsz);

/* The daemon's role and, for a standby, its link (the "stats" op's
 * "role" and "standby"; tsstore(1), status): fn gets "role" (text),
 * "epoch" (once the database has one), "fenced_by" (a fenced primary:
 * the newer epoch), "promoted_from" (text: a promoted standby's old
 * primary), then for a standby "primary", "connected" (text), "lag_lsn",
 * "lag_seconds" (text), "connects", "frames", "tablet_bytes",
 * "log_bytes". */
int cli_remote_status(struct cli_remote *rem, cli_stat_fn *fn, void *arg, char *msg,
                      size_t msgsz);

/* "promote" (the standby becomes a primary of the next epoch; with
 * force, "force":true: a stale primary becomes the primary of the epoch
 * after the one that fenced it): fn gets "role" (text, "primary"),
 * "epoch", "lineage" (text, hex). */
int cli_remote_promote(struct cli_remote *rem, int force, cli_stat_fn *fn, void *arg, char *msg,
                       size_t msgsz);

int cli_remote_check(struct cli_remote *rem, const char *table,
                     const struct cli_check_report *rep, uint64_t *count, char *msg, size_t msgsz);
int cli_remote_snapshot(struct cli_remote *rem, const char *dest, int incremental, char *msg,
                        size_t msgsz);

#endif /* TSSTORE_TOOLS_REMOTE_H */
