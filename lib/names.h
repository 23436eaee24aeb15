/*
 * names.h -- the library's vocabulary that is not API (names.c).
 */
#ifndef TS_NAMES_H
#define TS_NAMES_H

/* Whether name, a valid table name, is the name of an entry the database
 * keeps in its directory (docs/layout.md: LOCK); then *kind says what it
 * is ("a file").  Hidden entries (".tmp-*", ".dropped-*") and the
 * daemon's socket (tsstored.sock) are no valid table names, so LOCK is
 * the one name this must refuse.  Returns 1 or 0. */
int ts__name_reserved(const char *name, const char **kind);

#endif
