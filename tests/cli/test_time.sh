#!/bin/sh
# test_time.sh -- time as the operator types it, end to end:
#   - relative times (now, now-15m, -1h), a date alone and epoch counts
#     with a unit (1732550000s, ms) in inserted rows and in --from, --to
#     and --before, with -d and through tsstored (-s), each returning
#     exactly the rows expected;
#   - a bare integer before 1990 refused with the likely unit (a row:
#     exit 1, the row rejected; a flag: exit 2, usage), --time-unit
#     s|ms|us|ns taking bare integers in that unit, load keeping dump's
#     nanoseconds;
#   - durations in the text output of stats (ttl, settings);
#   - the SQLite helpers tsstore_time() and tsstore_time_text(), when a
#     sqlite3 shell is installed;
#   - the mount's range/ with relative names, when /dev/fuse can be used;
#   - the same with the real clock (no TSSTORE_NOW): rows minutes and
#     hours apart, so the seconds a run takes never matter; and, on the
#     mount, a relative range/ name that takes in a row once its time
#     has come, with no commit between (a row 6 s ahead).
#
# Usage: tests/cli/test_time.sh TSSTORE-or-BUILDDIR (see lib.sh).  The
# clock is frozen by TSSTORE_NOW (the daemon's and the mount's too) but
# in the last part.
set -u
. "$(dirname "$0")/lib.sh"

TSSTORE_NOW=2026-11-25T12:00:00Z
export TSSTORE_NOW
usage_query='usage: tsstore query TABLE [--prefix V,...] [--from T] [--to T] [--desc] [--limit N] [--after KEY] [--columns COL,...] [--no-header] [--format tsv|jsonl|csv] [--output FILE]\n'
usage_global='usage: tsstore [-d DATADIR | -s SOCKET] COMMAND [ARGS]\n'
hint='timestamp 1732550000 would be 1970-01-01T00:00:01.73255Z, before 1990; did you mean 1732550000s? (or --time-unit s)'

# The rows, as typed: now is 2026-11-25T12:00:00Z.
#   a 09:00 (RFC 3339)  b 10:30 (now-90m)  c 11:50 (-10m)  d 00:00 (a date)
#   e 2024-11-25T15:53:20Z (1732550000s)   f 2025-11-24T16:00:00Z (ms)
printf 'host\tts\tv\na\t2026-11-25T09:00:00Z\t1\nb\tnow-90m\t2\nc\t-10m\t3\nd\t2026-11-25\t4\ne\t1732550000s\t5\nf\t1764000000000ms\t6\n' >rows.tsv
printf 'host\tts\tv\ng\t1732550000\t7\n' >bare.tsv
printf '{"host":"h","ts":1732550000,"v":8}\n{"host":"i","ts":"1732550000","v":9}\n' >bare.jsonl
printf '{"host":"h","ts":1732550000000,"v":8}\n' >ms.jsonl
printf 'host\tts\tv\nold\t5\t0\n' >epoch.tsv

# suite: every case through ts(), on a fresh table t.
suite() {
	check create 0 '' '' ts create t --column host:string --column v:int64 --key host,ts
	check insert 0 '' 'insert: 6 rows stored, 0 rejected\n' ts insert t rows.tsv
	check from_minus_1h 0 'host\tts\tv\nc\t2026-11-25T11:50:00Z\t3\n' '' ts query t --from -1h
	check from_now_15m 0 'host\tts\tv\nc\t2026-11-25T11:50:00Z\t3\n' '' ts query t --from now-15m
	check from_to_relative 0 'host\tts\tv\nb\t2026-11-25T10:30:00Z\t2\n' '' \
		ts query t --from now-2h --to now-1h
	check to_future 0 'host\tts\tv\nb\t2026-11-25T10:30:00Z\t2\nc\t2026-11-25T11:50:00Z\t3\n' '' \
		ts query t --from now-2h --to now+5m
	check date_alone 0 'host\tts\tv\na\t2026-11-25T09:00:00Z\t1\nd\t2026-11-25T00:00:00Z\t4\n' '' \
		ts query t --from 2026-11-25 --to 2026-11-25T10:00:00Z
	check date_to 0 'host\tts\tv\nf\t2025-11-24T16:00:00Z\t6\n' '' \
		ts query t --from 2025-01-01 --to 2026-11-25
	check epoch_seconds 0 'host\tts\tv\ne\t2024-11-25T15:53:20Z\t5\n' '' ts query t --prefix e
	check epoch_seconds_flag 0 'host\tts\tv\ne\t2024-11-25T15:53:20Z\t5\n' '' \
		ts query t --from 1732550000s --to 1732550001s
	# a bare integer before 1990: a row is rejected (exit 1), a flag is a usage error (exit 2)
	check bare_row_refused 1 '' "tsstore: insert: line 2: column \"ts\": $hint\ninsert: 0 rows stored, 1 rejected\n" \
		ts insert t bare.tsv
	check bare_jsonl_refused 1 '' "tsstore: insert: line 1: column \"ts\": $hint\ntsstore: insert: line 2: column \"ts\": $hint\ninsert: 0 rows stored, 2 rejected\n" \
		ts insert t --format jsonl bare.jsonl
	check bare_flag_refused 2 '' "tsstore: query: --from: $hint\n$usage_query" \
		ts query t --from 1732550000
	check bare_negative_refused 2 '' "tsstore: query: --to: timestamp -5 would be 1969-12-31T23:59:59.999999995Z, before 1990; write it in RFC 3339, or give --time-unit ns to take it as nanoseconds\n$usage_query" \
		ts query t --to -5
	check hours_are_no_epoch 2 '' "tsstore: query: --from: timestamp \"5h\": an epoch count takes the unit s, ms, us or ns; for 5h before now write -5h or now-5h\n$usage_query" \
		ts query t --from 5h
	check bad_relative 2 '' "tsstore: query: --from: timestamp \"now-1x\": expected a duration after '-' (<n><unit>, unit one of ns us ms s m h d w: now-15m, -1h)\n$usage_query" \
		ts query t --from now-1x
	check bare_ns_kept 0 'host\tts\tv\nc\t2026-11-25T11:50:00Z\t3\n' '' \
		ts query t --from 1795606200000000000
	# --time-unit: bare integers in that unit, rows and flags
	check time_unit_s_insert 0 '' 'insert: 1 row stored, 0 rejected\n' ts --time-unit s insert t bare.tsv
	check time_unit_s_query 0 'host\tts\tv\ne\t2024-11-25T15:53:20Z\t5\ng\t2024-11-25T15:53:20Z\t7\n' '' \
		ts --time-unit s query t --from 1732550000 --to 1732550001
	check time_unit_ms_jsonl 0 '' 'insert: 1 row stored, 0 rejected\n' \
		ts --time-unit ms insert t --format jsonl ms.jsonl
	check time_unit_ms_row 0 'host\tts\tv\nh\t2024-11-25T15:53:20Z\t8\n' '' ts query t --prefix h
	check time_unit_bad 2 '' "tsstore: --time-unit \"x\": want s, ms, us or ns\n$usage_global" \
		ts --time-unit x tables
	check flush_before_relative 0 '' '' ts flush t --before now-1h
	# load reads dump's integers as nanoseconds, whatever their date
	check create_epoch 0 '' '' ts create ep --column host:string --column v:int64 --key host,ts
	check insert_epoch_ns 0 '' 'insert: 1 row stored, 0 rejected\n' ts --time-unit ns insert ep epoch.tsv
	ts dump ep >ep.jsonl 2>/dev/null
	check create_copy 0 '' '' ts create ep2 --column host:string --column v:int64 --key host,ts
	check load_keeps_ns 0 '' 'load: 1 row stored, 0 rejected\n' ts load ep2 ep.jsonl
	check load_row 0 'host\tts\tv\nold\t1970-01-01T00:00:00.000000005Z\t0\n' '' ts query ep2
	# durations in stats read as people write them
	check create_ttl 0 '' '' ts create s --column host:string --key host,ts --ttl 7d
	printf 'host\nweb1\n' | ts insert s >/dev/null 2>&1 # a commit, for commit_time
	ts stats s >stats.out 2>&1
	expect stats_ttl "$(grep -cx 'ttl: 1w' stats.out)" -eq 1
	expect stats_flush_age "$(grep -cx 'setting_flush_age: 10m' stats.out)" -eq 1
	expect stats_merge_delay "$(grep -cx 'setting_merge_delay: 90s' stats.out)" -eq 1
	expect stats_flush_wait "$(grep -c '^flush_wait: ' stats.out)" -eq 1
	expect stats_raw_kept "$(grep -cx 'setting_flush_age_ns: 600000000000' stats.out)" -eq 1
	# the one instant among the counters reads as a time, not a duration
	expect stats_commit_time "$(grep -cx 'commit_time: 20[0-9][0-9]-[01][0-9]-[0-3][0-9]T[0-9:.]*Z' stats.out)" -eq 1
}

mode=direct
ts() { "$bin" -d "$tmp/db" "$@"; }
suite

mode=socket
daemon_start "$tmp/sockdb" "$tmp/sock"
ts() { "$bin" -s "$tmp/sock" "$@"; }
suite
daemon_stop
mode=
ts() { "$bin" -d "$tmp/db" "$@"; }

# ---- the SQLite helpers ----
ext=$sqlite_ext
if command -v sqlite3 >/dev/null 2>&1 && [ -f "$ext" ]; then
	{
		printf ".load '%s'\n" "$ext"
		printf "CREATE VIRTUAL TABLE t USING tsstore(path='%s', table='t');\n" "$tmp/db"
		printf "SELECT host, tsstore_time_text(ts) FROM t WHERE ts >= tsstore_time('-1h');\n"
		printf "SELECT host FROM t WHERE ts >= tsstore_time('now-2h') AND ts < tsstore_time('now-1h');\n"
		printf "SELECT tsstore_time('1732550000s'), tsstore_time('2026-11-25'), tsstore_time(5), tsstore_time(NULL) IS NULL;\n"
		printf "EXPLAIN QUERY PLAN SELECT * FROM t WHERE ts >= tsstore_time('now-15m');\n"
	} >sql.sql
	check sqlite_helpers 0 'c|2026-11-25T11:50:00Z\nb\n1732550000000000000|1795564800000000000|5|1\nQUERY PLAN\n`--SCAN t VIRTUAL TABLE INDEX 1024:from\n' '' \
		sh -c "LD_PRELOAD='$sqlite_preload' sqlite3 -batch <sql.sql"
	printf ".load '%s'\nSELECT tsstore_time('yesterday');\n" "$ext" >sqlbad.sql
	check sqlite_helper_error 1 '' 'Runtime error near line 2: timestamp "yesterday": expected RFC 3339 (2026-11-21T10:00:00Z), a date (2026-11-21), integer nanoseconds, an epoch count (1732550000s), now or a time relative to it (now-15m, -1h)\n' \
		sh -c "LD_PRELOAD='$sqlite_preload' sqlite3 -batch <sqlbad.sql"
else
	skip "the sqlite3 shell or libtsstore_sqlite.so is missing: the SQL helpers are not tested"
fi

# ---- the mount's range/ with relative names ----
fuse=$(dirname "$bin")/tsstore-fuse
if (exec 3<>/dev/fuse) 2>/dev/null && command -v fusermount3 >/dev/null && [ -x "$fuse" ]; then
	mkdir mnt
	"$fuse" "$tmp/db" "$tmp/mnt" -f 2>"$tmp/fuse.log" &
	fuse_pid=$!
	i=0
	while ! mountpoint -q "$tmp/mnt" && [ $i -lt 200 ]; do sleep 0.05; i=$((i + 1)); done
	trap 'fusermount3 -u -z "$tmp/mnt" 2>/dev/null; daemon_stop; rm -rf "$tmp"' EXIT
	check range_relative 0 'host\tts\tv\nc\t2026-11-25T11:50:00Z\t3\n' '' cat mnt/t/range/now-1h_now.tsv
	check range_sign 0 'host\tts\tv\nb\t2026-11-25T10:30:00Z\t2\n' '' cat mnt/t/range/-2h_-1h.tsv
	check range_date 0 'host\tts\tv\na\t2026-11-25T09:00:00Z\t1\nd\t2026-11-25T00:00:00Z\t4\n' '' \
		cat mnt/t/range/2026-11-25_now-2h.tsv
	check range_epoch_units 0 '{"host":"e","ts":1732550000000000000,"v":5}\n{"host":"g","ts":1732550000000000000,"v":7}\n{"host":"h","ts":1732550000000000000,"v":8}\n' '' \
		cat mnt/t/range/1732550000s_1732550001s.jsonl
	check range_bad_relative 1 '' "cat: mnt/t/range/now-1x_now.tsv: No such file or directory\n" \
		cat mnt/t/range/now-1x_now.tsv
	expect mount_stats_duration "$(grep -cx 'setting_flush_age: 10m' mnt/t/stats)" -eq 1
	fusermount3 -u "$tmp/mnt"
	wait "$fuse_pid"
else
	skip "/dev/fuse cannot be opened or fusermount3 is missing: range/ is not tested"
fi

# ---- the real clock ----
unset TSSTORE_NOW
ts() { "$bin" -d "$tmp/db" "$@"; }
check real_create 0 '' '' ts create r --column host:string --key host,ts
printf 'host\tts\nold\tnow-3h\nmid\t-90m\nnew\tnow-5m\nnow\tnow\n' >real.tsv
check real_insert 0 '' 'insert: 4 rows stored, 0 rejected\n' ts insert r real.tsv
check real_from_1h 0 'host\nnew\nnow\n' '' sh -c "\"$bin\" -d \"$tmp/db\" query r --from -1h | cut -f1"
check real_window 0 'host\nmid\n' '' sh -c "\"$bin\" -d \"$tmp/db\" query r --from now-2h --to now-1h | cut -f1"
check real_future_empty 0 'host\n' '' sh -c "\"$bin\" -d \"$tmp/db\" query r --from now+1h | cut -f1"

# The mount's range/ names relative to now move with the clock, though
# no commit comes: a row 6 s ahead is not in -1h_now at first, and is
# once its time has passed (the view must not keep the first text).
if (exec 3<>/dev/fuse) 2>/dev/null && command -v fusermount3 >/dev/null && [ -x "$fuse" ]; then
	"$fuse" "$tmp/db" "$tmp/mnt" -f 2>"$tmp/fuse.log" &
	fuse_pid=$!
	i=0
	while ! mountpoint -q "$tmp/mnt" && [ $i -lt 200 ]; do sleep 0.05; i=$((i + 1)); done
	trap 'fusermount3 -u -z "$tmp/mnt" 2>/dev/null; daemon_stop; rm -rf "$tmp"' EXIT
	printf 'host\tts\nsoon\tnow+6s\n' >soon.tsv
	check real_soon_insert 0 '' 'insert: 1 row stored, 0 rejected\n' ts insert r soon.tsv
	check range_moves_before 0 'host\nnew\nnow\n' '' sh -c 'cut -f1 mnt/r/range/-1h_now.tsv'
	# until the row's second has passed (about 6 s)
	soon=$(ts query r --prefix soon --format jsonl | sed 's/.*"ts":\([0-9]*\)[0-9]\{9\}.*/\1/')
	i=0
	while [ "$(date +%s)" -le "$soon" ] && [ $i -lt 200 ]; do sleep 0.1; i=$((i + 1)); done
	check range_moves_after 0 'host\nnew\nnow\nsoon\n' '' sh -c 'cut -f1 mnt/r/range/-1h_now.tsv'
	fusermount3 -u "$tmp/mnt"
	wait "$fuse_pid"
else
	skip "/dev/fuse cannot be opened or fusermount3 is missing: relative range/ names are not tested"
fi

finish
