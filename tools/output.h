/*
 * output.h -- rows printed on standard output in tsv, csv or jsonl (see
 * output.c): what query, latest, aggregate and dump print.
 */
#ifndef TSSTORE_TOOLS_OUTPUT_H
#define TSSTORE_TOOLS_OUTPUT_H

#include <stdint.h>

#include "cli.h"
#include "json.h"
#include "progress.h"
#include "rowfmt.h"

struct cli_output {
	FILE *f;                  /* where the rows go: stdout, or --output's file */
	enum rowfmt format;
	const char *const *names; /* the columns printed */
	int ncolumns;
	struct jbuf buf;          /* text not yet written */
	uint64_t rows;            /* rows printed */
	struct cli_progress progress;
};

/*
 * cli_output_begin -- start printing rows of the ncolumns columns named by
 * names (which must outlive out) in format, on f (stdout, or a file the
 * caller opened and closes).  header: write the header line first (tsv,
 * csv; jsonl has none either way).  progress: draw a progress line on a
 * terminal (the caller's command name labels it).
 */
void cli_output_begin(struct cli_output *out, const struct cli *cli, FILE *f,
                      enum rowfmt format, const char *const *names, int ncolumns, int header,
                      int progress);

/* cli_output_row -- one row of ncolumns values.  Returns 0, or -1 when
 * the output failed (a closed pipe, a full disk; errno says why): stop
 * then. */
int cli_output_row(struct cli_output *out, const ts_value *row);

/* cli_output_end -- write what is left and release out.  Returns 0, or -1
 * when the output failed. */
int cli_output_end(struct cli_output *out);

#endif /* TSSTORE_TOOLS_OUTPUT_H */
