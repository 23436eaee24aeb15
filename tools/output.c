/*
 * output.c -- rows on standard output (or the file of --output), in the
 * forms of common/rowfmt.c.
 *
 * Rows are formatted into a buffer and written with fwrite in pieces of
 * OUTPUT_CHUNK bytes or more, so a large result streams in bounded
 * memory; a write error (EPIPE from `| head`, ENOSPC) is seen at the next
 * piece and ends the command instead of formatting rows nobody reads.
 */
#include <stdio.h>
#include <unistd.h>

#include "output.h"

/* Bytes of formatted rows gathered before they are written. */
#define OUTPUT_CHUNK (64 * 1024)

static int drain(struct cli_output *out)
{
	int rc = 0;
	if (out->buf.failed)
		rc = -1;
	else if (out->buf.len && fwrite(out->buf.p, 1, out->buf.len, out->f) != out->buf.len)
		rc = -1;
	out->buf.len = 0;
	return rc;
}

void cli_output_begin(struct cli_output *out, const struct cli *cli, FILE *f,
                      enum rowfmt format, const char *const *names, int ncolumns, int header,
                      int progress)
{
	*out = (struct cli_output){.f = f, .format = format, .names = names, .ncolumns = ncolumns};
	cli_progress_init(&out->progress, cli->cmd->name, 0, progress && isatty(STDERR_FILENO));
	if (header)
		rowfmt_header(&out->buf, format, names, ncolumns);
}

int cli_output_row(struct cli_output *out, const ts_value *row)
{
	rowfmt_row(&out->buf, out->format, out->names, row, out->ncolumns);
	out->rows++;
	if (out->buf.len < OUTPUT_CHUNK && !out->buf.failed)
		return 0;
	cli_progress_update(&out->progress, out->rows, 0);
	return drain(out);
}

int cli_output_end(struct cli_output *out)
{
	int rc = drain(out);
	cli_progress_clear(&out->progress);
	jbuf_free(&out->buf);
	return rc;
}
