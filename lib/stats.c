/*
 * stats.c -- a table's counters as name/value pairs, the one shape that
 * the daemon (JSON), the mount (the stats file) and the admin command all
 * print.  Counters are added here as the engines that move them land:
 * the descriptor's, the on-disk tablets', the filling tablets' and the
 * writer's (since this process opened the table).
 */
#include "api.h"
#include "descriptor_format.h"
#include "error.h"
#include "handle.h"
#include "merge.h"
#include "tabledesc.h"

int ts__table_version(ts_table *t, uint64_t *version)
{
	*version = t->log ? ts__log_head(t->log) : 0;
	return 0;
}

static void put(ts_stat *out, int room, int *n, const char *name, int64_t v)
{
	if (*n < room) {
		out[*n].name = name;
		out[*n].value = v;
	}
	(*n)++;
}

/* The filling tablets as the newest commit names them (so read-only
 * handles see the writer's), that commit's number, its LSN (the table's
 * version, docs/corrections.md section 1) and wall-clock time
 * (ns since the epoch; both 0 when the log holds none: every insert and
 * flush moves them, and the mounted view keys its cache and its files'
 * mtimes on them), and the writer's counters since it opened. */
static void put_filling(ts_table *t, ts_stat *out, int room, int *count)
{
	ts__commit c;
	ts__root r;
	uint64_t rows = 0, bytes = 0, head = t->log ? ts__log_head(t->log) : 0;
	uint32_t nroots = 0;
	int64_t seq = 0, when = 0;
	if (head && ts__log_read_commit(t->log, head, &c) == 0) {
		nroots = c.nroots;
		seq = (int64_t)c.seq;
		when = c.time;
		for (uint32_t i = 0; i < c.nroots; i++) {
			ts__commit_root(&c, i, &r);
			rows += r.rows;
			bytes += r.bytes;
		}
	}
	put(out, room, count, "filling_tablets", nroots);
	put(out, room, count, "filling_rows", (int64_t)rows);
	put(out, room, count, "table_incarnation", (int64_t)t->incarnation);
	put(out, room, count, "commit_seq", seq);
	put(out, room, count, "version", (int64_t)head);
	put(out, room, count, "commit_time_ns", when);
	put(out, room, count, "filling_bytes", (int64_t)bytes);
	put(out, room, count, "rows_inserted", (int64_t)t->fill.rows);
	put(out, room, count, "batches_committed", (int64_t)t->fill.batches);
	put(out, room, count, "rows_rejected", (int64_t)t->rows_rejected);
	put(out, room, count, "rows_ignored_duplicates", (int64_t)t->rows_ignored_duplicates);
	put(out, room, count, "rows_replaced", (int64_t)t->rows_replaced);
	put(out, room, count, "log_nodes_written", (int64_t)t->fill.nodes_written);
	put(out, room, count, "log_tail_lsn", t->log ? (int64_t)ts__log_tail(t->log) : 0);
	put(out, room, count, "log_recovered_commits",
	    t->log ? (int64_t)ts__log_recovered_commits(t->log) : 0);
	put(out, room, count, "log_opened_clean", t->log ? ts__log_was_clean(t->log) : 1);
	/* committed batches the writer's recovery found damaged and gave up */
	uint64_t cut_commits = 0, cut_lsn = t->log ? ts__log_quarantined(t->log, &cut_commits) : 0;
	put(out, room, count, "log_quarantined_commits", (int64_t)cut_commits);
	put(out, room, count, "log_quarantined_lsn", (int64_t)cut_lsn);
	int64_t seg_wait_max = 0, seg_wait = t->log ? ts__log_segment_wait(t->log, &seg_wait_max) : 0;
	put(out, room, count, "log_segment_wait_ns", seg_wait);
	put(out, room, count, "log_segment_wait_max_ns", seg_wait_max);
	put(out, room, count, "flushes", (int64_t)t->flushes);
	put(out, room, count, "flushed_rows", (int64_t)t->flushed_rows);
	put(out, room, count, "flushed_bytes", (int64_t)t->flushed_bytes);
	put(out, room, count, "merges", (int64_t)t->merges);
	put(out, room, count, "merged_in_bytes", (int64_t)t->merged_in_bytes);
	put(out, room, count, "merged_out_bytes", (int64_t)t->merged_out_bytes);
	put(out, room, count, "merged_rows_expired", (int64_t)t->merged_rows_expired);
	put(out, room, count, "merge_throttled_ns",
	    __atomic_load_n(&t->merge_throttled_ns, __ATOMIC_RELAXED));
	put(out, room, count, "flush_wait_ns", __atomic_load_n(&t->flush_wait_ns, __ATOMIC_RELAXED));
	put(out, room, count, "flush_wait_max_ns",
	    __atomic_load_n(&t->flush_wait_max_ns, __ATOMIC_RELAXED));
	put(out, room, count, "flush_failures", (int64_t)t->flush_retry.total);
	put(out, room, count, "flush_last_error", t->flush_retry.last_rc);
	put(out, room, count, "merge_failures", (int64_t)t->merge_retry.total);
	put(out, room, count, "merge_last_error", t->merge_retry.last_rc);
	put(out, room, count, "expiry_failures", (int64_t)t->expire_retry.total);
	put(out, room, count, "log_bytes", t->log && !ts__db_readonly(t->db) ?
	    (int64_t)(ts__log_tail(t->log) - t->desc->flushed_lsn) : 0);
	put(out, room, count, "log_cap_refusals", (int64_t)t->log_cap_refusals);
	put(out, room, count, "log_stalls", (int64_t)t->log_stalls);
	put(out, room, count, "log_stall_ns", __atomic_load_n(&t->log_stall_ns, __ATOMIC_RELAXED));
	put(out, room, count, "log_paced_ns", __atomic_load_n(&t->log_paced_ns, __ATOMIC_RELAXED));
	put(out, room, count, "tablets_expired",
	    (int64_t)__atomic_load_n(&t->expired_tablets, __ATOMIC_RELAXED));
	put(out, room, count, "tablets_quarantined",
	    (int64_t)__atomic_load_n(&t->quarantined, __ATOMIC_RELAXED));
	put(out, room, count, "rows_scanned",
	    (int64_t)__atomic_load_n(&t->rows_scanned, __ATOMIC_RELAXED));
	put(out, room, count, "rows_returned",
	    (int64_t)__atomic_load_n(&t->rows_returned, __ATOMIC_RELAXED));
	put(out, room, count, "aggregate_rows_scanned",
	    (int64_t)__atomic_load_n(&t->agg_rows_scanned, __ATOMIC_RELAXED));
	put(out, room, count, "aggregate_rows_summarised",
	    (int64_t)__atomic_load_n(&t->agg_rows_summarised, __ATOMIC_RELAXED));
	ts__bcache *bc = &t->db->bcache; /* the database's, shared by its tables */
	pthread_mutex_lock(&bc->mu);
	put(out, room, count, "block_cache_hits", (int64_t)bc->hits);
	put(out, room, count, "block_cache_misses", (int64_t)bc->misses);
	put(out, room, count, "block_cache_bytes", (int64_t)bc->used);
	pthread_mutex_unlock(&bc->mu);
	ts__rapool *ra = &t->db->rapool; /* the database's too (readahead.h) */
	put(out, room, count, "blocks_read_ahead",
	    (int64_t)__atomic_load_n(&ra->issued, __ATOMIC_RELAXED));
	put(out, room, count, "blocks_read_ahead_by_helpers",
	    (int64_t)__atomic_load_n(&ra->by_helper, __ATOMIC_RELAXED));
	pthread_mutex_lock(&t->tablets_mu);
	put(out, room, count, "tablets_damaged_reports", (int64_t)t->damage_reports);
	pthread_mutex_unlock(&t->tablets_mu);
	/* bytes written to tablets per byte flushed, in thousandths */
	put(out, room, count, "write_amplification_milli",
	    t->flushed_bytes ? (int64_t)((t->flushed_bytes + t->merged_out_bytes) * 1000 /
	                                 t->flushed_bytes) : 0);
}

/* A rollup's definition and maintenance (rollup.c; docs/rollups.md):
 * only in the stats of a rollup.  t->mu is held (the retry state). */
static void put_rollup(ts_table *t, ts_stat *out, int room, int *count)
{
	ts__rollup *r = t->rollup;
	int64_t now = ts_now(t->db);
	if (ts__db_readonly(t->db)) /* the writer's newest */
		ts__rollup_reload_watermark(t->dir, r);
	pthread_mutex_lock(&r->mu);
	uint64_t w = r->def.watermark, v = r->source_version;
	put(out, room, count, "rollup_every_ns", r->def.every);
	put(out, room, count, "rollup_group", r->def.group);
	put(out, room, count, "rollup_from_rollup", (r->def.flags & TS_ROLLUP_FROM_ROLLUP) != 0);
	put(out, room, count, "rollup_watermark", (int64_t)w);
	put(out, room, count, "rollup_source_version", (int64_t)v);
	put(out, room, count, "rollup_lag_versions", v > w ? (int64_t)(v - w) : 0);
	put(out, room, count, "rollup_lag_ns",
	    r->behind_since && now > r->behind_since ? now - r->behind_since : 0);
	put(out, room, count, "rollup_runs", (int64_t)r->passes);
	put(out, room, count, "rollup_windows_recomputed", (int64_t)r->windows_recomputed);
	put(out, room, count, "rollup_windows_deleted", (int64_t)r->windows_deleted);
	put(out, room, count, "rollup_windows_skipped", (int64_t)r->windows_skipped);
	put(out, room, count, "rollup_resets", (int64_t)r->resets);
	pthread_mutex_unlock(&r->mu);
	put(out, room, count, "rollup_failures", (int64_t)r->retry.total);
	put(out, room, count, "rollup_last_error", r->retry.last_rc);
}

/* The scheduler's settings in effect (ts_options; tsstored's flags and
 * tsstore.conf) and its database-wide counters, so that an operator
 * sees what the background work runs under without reading the config. */
static void put_scheduler(const ts_db *db, ts_stat *out, int room, int *count)
{
	const ts_options *o = &db->opts;
	put(out, room, count, "setting_flush_size", o->flush_size);
	put(out, room, count, "setting_flush_age_ns", o->flush_age);
	put(out, room, count, "setting_merge_max_size", o->merge_max_size);
	put(out, room, count, "setting_merge_delay_ns", o->merge_delay);
	put(out, room, count, "setting_merge_slice_rows", o->merge_slice_rows);
	put(out, room, count, "setting_merge_rollover_spread_ns", o->merge_rollover_spread);
	put(out, room, count, "setting_maint_busy_window_ns", o->maint_busy_window);
	put(out, room, count, "setting_maint_busy_share_percent", o->maint_busy_share);
	put(out, room, count, "setting_flush_threads", o->flush_threads);
	put(out, room, count, "setting_merges_enabled", !(o->flags & TS_OPEN_NOMERGE));
	put(out, room, count, "maint_passes",
	    (int64_t)__atomic_load_n(&db->maint.passes, __ATOMIC_RELAXED));
	put(out, room, count, "maint_merges",
	    (int64_t)__atomic_load_n(&db->maint.merges, __ATOMIC_RELAXED));
	put(out, room, count, "maint_throttled_ns",
	    __atomic_load_n(&db->maint.throttled_ns, __ATOMIC_RELAXED));
}

int ts__table_stats(ts_table *t, ts_stat *out, int room, int *n)
{
	int count = 0, rc = ts__table_lock(t);
	*n = 0;
	if (rc < 0)
		return rc;
	const ts__descriptor *d = t->desc;
	uint64_t rows = 0, bytes = 0;
	for (int i = 0; i < d->ntablets; i++) {
		rows += d->tablets[i].rows;
		bytes += d->tablets[i].bytes;
	}
	put(out, room, &count, "schema_version", (int64_t)ts__desc_schema(d)->version);
	put(out, room, &count, "columns", ts__desc_schema(d)->ncols);
	put(out, room, &count, "ttl_ns", d->ttl);
	put(out, room, &count, "on_duplicate_policy", d->on_duplicate); /* a ts_on_duplicate */
	put(out, room, &count, "descriptor_generation", (int64_t)d->generation);
	/* 1 once the table took a delete or a replacing write (never 0
	 * again): rows seen may since have gone or changed with no change in
	 * their count (the mount's cache keys on it) */
	put(out, room, &count, "corrected",
	    (d->flags & (TS_DESC_REPLACED | TS_DESC_DELETED)) != 0);
	/* deletes retired from tombstones that ts_changes_open still reports
	 * by their change records, and the changes horizon: a since below it
	 * gets the wildcard over the dropped records' time range
	 * (docs/corrections.md section 4) */
	put(out, room, &count, "changes_records", d->nchrecs);
	put(out, room, &count, "changes_horizon", (int64_t)d->ch_horizon);
	put(out, room, &count, "tablets", d->ntablets);
	put(out, room, &count, "tablet_rows", (int64_t)rows);
	put(out, room, &count, "tablet_bytes", (int64_t)bytes);
	put(out, room, &count, "merge_backlog_tablets", ts__merge_backlog(t));
	put_filling(t, out, room, &count);
	if (t->rollup)
		put_rollup(t, out, room, &count);
	put_scheduler(t->db, out, room, &count);
	ts__table_unlock(t);
	*n = count < room ? count : room;
	return 0;
}
