/*
 * store.h -- where a command's table lives: the database files (-d,
 * through libtsstore) or a running tsstored (-s, through its socket).
 *
 * Every command that reads or changes a table goes through these calls,
 * never through the library or the socket directly, so that the two
 * modes give the same output: both yield the same ts_schema and the same
 * rows as ts_value arrays, and both report failures with the library's
 * error code and message (the daemon sends both in its error lines).
 * store.c holds the direct mode and the dispatch; remote.c the daemon's;
 * request.h the types both share (so remote.c needs nothing of store.h:
 * the modules depend one way, store -> remote -> request).
 */
#ifndef TSSTORE_TOOLS_STORE_H
#define TSSTORE_TOOLS_STORE_H

#include <stdint.h>

#include "cli.h"
#include "request.h"

struct cli_store;

/*
 * cli_store_open -- open the store of the run: the database at
 * cli->datadir with TS_OPEN_* flags, or a connection to cli->socket.
 * Returns CLI_OK, or CLI_FAILURE after the message.
 */
int cli_store_open(const struct cli *cli, unsigned flags, struct cli_store **st);

/* cli_store_close -- close st (NULL allowed) and return status, or
 * CLI_FAILURE when status was CLI_OK and closing failed. */
int cli_store_close(const struct cli *cli, struct cli_store *st, int status);

/* The direct mode's database, or NULL through the daemon. */
ts_db *cli_store_db(struct cli_store *st);

/* The time now, in ns: the database's clock (ts_now) in the direct mode;
 * through the daemon, this machine's clock, or TSSTORE_NOW when it holds
 * a timestamp (the clock the tests freeze, as the library does). */
int64_t cli_store_now(struct cli_store *st);

/*
 * cli_store_schema -- the current schema of table (to be released with
 * cli_schema_free).  Returns CLI_OK or CLI_FAILURE after the message.
 */
int cli_store_schema(const struct cli *cli, struct cli_store *st, const char *table,
                     ts_schema **s);

/*
 * cli_store_rows -- run r on the table whose schema (cli_store_schema)
 * is s, and hand each row to fn.  more: zero-filled by the caller;
 * receives whether the limit cut the result and, when it did, the key to
 * resume from (the caller releases it with cli_more_free).  Returns
 * CLI_OK, or CLI_FAILURE after the message (also when fn stopped the
 * run: nothing is said then, the caller knows why).
 */
int cli_store_rows(const struct cli *cli, struct cli_store *st, const struct cli_req *r,
                   const ts_schema *s, cli_row_fn *fn, void *arg, struct cli_more *more);

/*
 * The calls below return 0 or a negative TS_E* code, and leave the
 * message to report (the library's, or the daemon's, which is the same
 * text) for cli_store_errmsg: the caller decides how to say it (insert
 * turns "row K" into a line number, alter counts the changes made).
 */

/* The message of the last failed call on st (rc: its code). */
const char *cli_store_errmsg(struct cli_store *st, int rc);

/* The table names, sorted, NULL-terminated; free with cli_names_free. */
int cli_store_tables(struct cli_store *st, char ***names);
void cli_names_free(char **names);

/* ts_create_keyed_v2. */
int cli_store_create(struct cli_store *st, const char *table, const ts_column *columns,
                     int ncolumns, const char *const *key, int nkey, int64_t ttl,
                     ts_on_duplicate on_duplicate);

/* One schema change: add (column != NULL), widen (widen != NULL), else
 * set the TTL. */
int cli_store_alter(struct cli_store *st, const char *table, const ts_column *column,
                    const char *widen, int64_t ttl);

/* ts_alter_on_duplicate. */
int cli_store_alter_on_duplicate(struct cli_store *st, const char *table,
                                 ts_on_duplicate policy);

int cli_store_drop(struct cli_store *st, const char *table);

/* ts_create_rollup of name from spec, whose column indexes are into src,
 * the source's schema (through tsstored the columns go by name). */
int cli_store_create_rollup(struct cli_store *st, const char *name, const ts_rollup_spec *spec,
                            const ts_schema *src);

/* ts_rollups of table: the names, sorted; free with cli_names_free. */
int cli_store_rollups(struct cli_store *st, const char *table, char ***names);

/* The rollup definition of table (def->is_rollup 0 when it is none). */
int cli_store_rollup_def(struct cli_store *st, const char *table, struct cli_rollup_def *def);

/* ts_insert_counted of n rows of schema s (s->ncolumns each), s as
 * cli_store_schema gave it: an alter meanwhile never shifts the rows
 * (through tsstored, rows of the wrong width are refused).  policy:
 * TS_ON_DUPLICATE_TABLE (the table's own), else a ts_on_duplicate for
 * this batch (ts_insert_policy; the insert's "on_duplicate" through
 * tsstored).  *ignored receives the rows the policy skipped. */
int cli_store_insert(struct cli_store *st, const char *table, const ts_value *rows, size_t n,
                     const ts_schema *s, int policy, size_t *ignored);

/* ts_delete of the rows r selects (its table, prefix, from and to: the
 * rows the same query would print).  *deleted receives how many, or
 * TS_COUNT_UNKNOWN; *version the delete's version. */
int cli_store_delete(struct cli_store *st, const struct cli_req *r, uint64_t *deleted,
                     uint64_t *version);

/* ts_purge of the range r selects (none given: the whole table);
 * *version receives the purge's version. */
int cli_store_purge(struct cli_store *st, const struct cli_req *r, uint64_t *version);

/* ts_flush of table, or of every table when NULL. */
int cli_store_flush(struct cli_store *st, const char *table, int64_t before);

/* The counters of table, in ts_table_stats order with "ttl" (its text)
 * right after "ttl_ns". */
int cli_store_stats(struct cli_store *st, const char *table, cli_stat_fn *fn, void *arg);

/* The daemon's role and link (cli_remote_status); through a daemon
 * only: TS_EINVAL in direct mode. */
int cli_store_status(struct cli_store *st, cli_stat_fn *fn, void *arg);

/* Promote the standby tsstored, or with force a stale primary
 * (cli_remote_promote): its new role, epoch and lineage to fn.  Through
 * a daemon only: TS_EINVAL in direct mode. */
int cli_store_promote(struct cli_store *st, int force, cli_stat_fn *fn, void *arg);

/* ts_check of table (NULL: every table).  count: receives the number of
 * problems found (more than were reported through the daemon, when it
 * lists only the first TSD_CHECK_PROBLEMS_MAX).  Returns 0 when the check
 * ran, whatever it found, or the code of why it could not. */
int cli_store_check(struct cli_store *st, const char *table, const struct cli_check_report *rep,
                    uint64_t *count);

/* ts_backup to the new directory dest, or with incremental
 * ts_backup_incremental to dest (through the daemon: a path on its
 * machine, made absolute here). */
int cli_store_snapshot(struct cli_store *st, const char *dest, int incremental);

#endif /* TSSTORE_TOOLS_STORE_H */
