/*
 * rowfmt.h -- rows as text lines in the three output formats: tsv, csv
 * and jsonl (see rowfmt.c).  The admin command prints query results with
 * it, and the mounted view (DESIGN.md section 6) will serve its files
 * with it, so that the two agree byte for byte.
 */
#ifndef TSSTORE_COMMON_ROWFMT_H
#define TSSTORE_COMMON_ROWFMT_H

#include <tsstore.h>

#include "json.h"

enum rowfmt {
	ROWFMT_TSV,
	ROWFMT_CSV,
	ROWFMT_JSONL,
};

/* "tsv", "csv" or "jsonl" to a format.  Returns 0, or TS_EINVAL. */
int rowfmt_parse(const char *name, enum rowfmt *out);

/* The format a file's name says by its extension: ".tsv", ".csv" or
 * ".jsonl" (as spelled, lower case), e.g. "rows.csv" or "dir/x.jsonl".
 * Returns 0, or TS_EINVAL when the name ends in none of them. */
int rowfmt_from_path(const char *path, enum rowfmt *out);

/* The header line naming the n columns (tsv and csv); nothing for jsonl,
 * whose lines name their columns themselves. */
void rowfmt_header(struct jbuf *b, enum rowfmt f, const char *const *names, int n);

/*
 * rowfmt_row -- one row of n values as one line, ended by "\n":
 *   tsv    values as val_text with escapes, separated by tabs;
 *   csv    values as val_text without escapes, RFC 4180 quoted when they
 *          hold a comma, a quote, CR or LF (or would start with a space
 *          another tool might trim), separated by commas;
 *   jsonl  {"name":value,...} with values in their JSON forms (json.h).
 * names names the n values (jsonl).
 */
void rowfmt_row(struct jbuf *b, enum rowfmt f, const char *const *names, const ts_value *row,
                int n);

/*
 * rowfmt_schema -- s as text, one line per column:
 *     name TAB type TAB default TAB key position
 * (DESIGN.md section 6's schema file, and `tsstore schema`): the default
 * in val_text's form, the type's zero when none was set ("" for strings
 * and blobs), "now" for ts; the 1-based position in the key, or "-".
 */
void rowfmt_schema(struct jbuf *b, const ts_schema *s);

/* rowfmt_stat_text -- the text form of the settings among the counters,
 * which every listing of counters shows right after them: for ttl_ns,
 * its value as a duration ("7d"), named "ttl"; for on_duplicate_policy,
 * its ts_on_duplicate_name ("ignore"), named "on_duplicate".  Returns 1
 * with *name and the text in buf, else 0. */
int rowfmt_stat_text(const ts_stat *st, const char **name, char *buf, size_t size);

/* rowfmt_stat_duration -- for a counter of nanoseconds other than ttl_ns
 * (its name ends in "_ns": waits, settings), the line the text listings
 * (`tsstore stats`, the mount's stats file) show right after it: the name
 * without "_ns" in name (namesz bytes) and the value as people write a
 * duration in text: ts_duration_format's exact form when its count has at
 * most 4 digits ("10m", "90s", "1500ms", "0s"), else 4 significant digits
 * in the largest unit reached ("123.5ms", "2.504h", "12.5d").  The one
 * instant, commit_time_ns, reads as its RFC 3339 time instead (size at
 * least TS_TIME_BUFSZ).  The JSON protocol keeps the numbers alone.
 * Returns 1 with name and text set, else 0. */
int rowfmt_stat_duration(const char *stat, int64_t value, char *name, size_t namesz,
                         char *text, size_t size);

/* Room for any text of rowfmt_stat_text and rowfmt_stat_duration. */
#define ROWFMT_STAT_TEXT_MAX (TS_TIME_BUFSZ > TS_DURATION_BUFSZ ? TS_TIME_BUFSZ : TS_DURATION_BUFSZ)

/* rowfmt_stat -- one counter line "INDENTname: value" (the stats file,
 * `tsstore stats`); text, when not NULL, is the value (the TTL, the
 * duplicate policy). */
void rowfmt_stat(struct jbuf *b, const char *indent, const char *name, int64_t value,
                 const char *text);

#endif /* TSSTORE_COMMON_ROWFMT_H */
