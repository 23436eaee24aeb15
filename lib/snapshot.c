/*
 * snapshot.c -- taking and reading snapshots of filling tablets.
 *
 * The only lock taken is the table's short schema lock, to copy the
 * pointers of its schema versions (which are immutable and live as long
 * as the table); the writer's mutex is never touched, so a snapshot is
 * taken and read while a batch is being inserted.
 */
#include <stdlib.h>
#include <string.h>

#include "avl.h"
#include "error.h"
#include "row.h"
#include "snapshot.h"

static int capture_schemas(ts_table *t, ts__snapshot *s)
{
	int rc = 0;
	pthread_mutex_lock(&t->schema_mu);
	const ts__descriptor *d = t->desc;
	s->versions = malloc((size_t)d->nschemas * sizeof *s->versions);
	if (s->versions) {
		memcpy(s->versions, d->schemas, (size_t)d->nschemas * sizeof *s->versions);
		s->nversions = d->nschemas;
		s->schema = d->schemas[d->nschemas - 1];
	} else {
		rc = ts__fail(TS_ENOMEM, "out of memory");
	}
	pthread_mutex_unlock(&t->schema_mu);
	return rc;
}

int ts__snapshot_take(ts_table *t, ts__snapshot *s)
{
	ts__commit c;
	memset(s, 0, sizeof *s);
	s->table = t;
	int rc = 0;
	if (ts__db_readonly(t->db)) { /* pick up schema changes of the writer */
		if ((rc = ts__table_lock(t)) < 0)
			return rc;
		ts__table_unlock(t);
	} else if (t->dropped) {
		return ts__fail(TS_ECLOSED, "table \"%s\" was dropped", t->name);
	}
	rc = capture_schemas(t, s);
	s->commit = rc == 0 ? ts__log_head(t->log) : 0;
	if (rc < 0 || s->commit == 0)
		return rc;
	if ((rc = ts__log_read_commit(t->log, s->commit, &c)) < 0 ||
	    !(s->roots = malloc((c.nroots ? c.nroots : 1) * sizeof *s->roots))) {
		ts__snapshot_release(s);
		return rc < 0 ? rc : ts__fail(TS_ENOMEM, "out of memory");
	}
	s->seq = c.seq;
	s->nroots = c.nroots;
	for (uint32_t i = 0; i < c.nroots; i++)
		ts__commit_root(&c, i, &s->roots[i]);
	return 0;
}

void ts__snapshot_release(ts__snapshot *s)
{
	free(s->roots);
	free(s->versions);
	memset(s, 0, sizeof *s);
}

int ts__snapshot_row(const ts__snapshot *s, uint64_t lsn, ts_value *vals, ts_buf *scratch)
{
	size_t len;
	uint32_t version;
	const unsigned char *row = ts__rowrec_row(s->table->log, lsn, &len, &version);
	if (version < 1 || (int)version > s->nversions)
		return ts__fail(TS_ECORRUPT, "table \"%s\": row at %llu has unknown schema version %u",
		                s->table->name, (unsigned long long)lsn, version);
	return ts__row_decode(s->versions[version - 1], s->schema, row, len, vals, scratch);
}

int ts__snapshot_scan(const ts__snapshot *s, uint32_t i, ts__row_fn fn, void *arg)
{
	ts_value vals[TS_COLUMNS_MAX];
	ts__avl_iter it;
	ts_buf scratch;
	uint64_t lsn;
	int rc = 0;
	ts__buf_init(&scratch);
	ts__avl_iter_init(&it, s->table->log, s->roots[i].root, 0);
	while (rc == 0 && (lsn = ts__avl_iter_next(&it)) != 0)
		if ((rc = ts__snapshot_row(s, lsn, vals, &scratch)) == 0)
			rc = fn(vals, s->schema->ncols, arg);
	ts__buf_free(&scratch);
	return rc;
}
