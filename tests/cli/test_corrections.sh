#!/bin/sh
# test_corrections.sh -- golden tests of issue 28's interfaces that do
# not depend on what the library does yet (docs/corrections.md,
# "Interfaces"): the usage errors of delete, purge, changes and
# --on-duplicate, delete's refusal without a range, the levels through
# tsstored (delete and purge are admin), and the SQLite module refusing
# an UPDATE, and a DELETE whose WHERE is more than key and ts bounds,
# without changing anything.  Every command case runs twice, on the
# files (-d DATADIR) and through a tsstored (-s SOCKET).
#
# What the commands do is in tests/cli/test_corrections_built.sh.
#
# Usage: tests/cli/test_corrections.sh TSSTORE-or-BUILDDIR (see lib.sh).
set -u
. "$(dirname "$0")/lib.sh"

usage_delete='usage: tsstore delete TABLE [--prefix V,...] [--from T] [--to T] [--all]\n'
usage_purge='usage: tsstore purge TABLE [--prefix V,...] [--from T] [--to T]\n'
usage_changes='usage: tsstore changes TABLE --since V [--until W] [--resolution DUR] [--depth N] [--columns COL,...] [--no-header] [--format tsv|jsonl|csv] [--output FILE]\n'
usage_insert='usage: tsstore insert TABLE [--format tsv|jsonl|csv] [--on-duplicate reject|ignore|replace] [--flush-idle DUR] [FILE]\n'

printf 'host\tts\tv\na\t2026-11-21T10:00:00Z\t1\na\t2026-11-21T11:00:00Z\t7\nb\t2026-11-21T10:00:00Z\t3\n' \
	>"$tmp/rows.tsv"
rows='host\tts\tv\na\t2026-11-21T10:00:00Z\t1\na\t2026-11-21T11:00:00Z\t7\nb\t2026-11-21T10:00:00Z\t3\n'

suite() {
	m=$1
	check "$m/create" 0 '' '' ts create m --column host:string --column v:int64 --key host,ts
	check "$m/insert" 0 '' 'insert: 3 rows stored, 0 rejected\n' ts insert m rows.tsv
	# delete: no range is refused unless --all says so
	check "$m/delete_no_range" 2 '' "tsstore: delete: no range given: that would delete every row of \"m\"; give --prefix, --from or --to, or --all to mean it\n$usage_delete" \
		ts delete m
	check "$m/delete_all_and_range" 2 '' "tsstore: delete: --all deletes every row: it takes no --prefix, --from or --to\n$usage_delete" \
		ts delete m --all --prefix a
	check "$m/delete_all_and_from" 2 '' "tsstore: delete: --all deletes every row: it takes no --prefix, --from or --to\n$usage_delete" \
		ts delete m --from 2026-11-21 --all
	check "$m/delete_from_after_to" 2 '' "tsstore: delete: --from must be before --to\n$usage_delete" \
		ts delete m --from 2026-11-22 --to 2026-11-21
	check "$m/delete_bad_time" 2 '' "tsstore: delete: --from: timestamp \"yesterday\": expected RFC 3339 (2026-11-21T10:00:00Z), a date (2026-11-21), integer nanoseconds, an epoch count (1732550000s), now or a time relative to it (now-15m, -1h)\n$usage_delete" \
		ts delete m --from yesterday
	check "$m/delete_no_table_operand" 2 '' "tsstore: delete: missing TABLE\n$usage_delete" \
		ts delete --all
	check "$m/delete_long_prefix" 2 '' "tsstore: delete: --prefix: more values than the 2 key columns\n$usage_delete" \
		ts delete m --prefix a,2026-11-21,x
	check "$m/delete_bad_prefix_value" 2 '' "tsstore: delete: --prefix: column \"ts\": timestamp \"soon\": expected RFC 3339 (2026-11-21T10:00:00Z), a date (2026-11-21), integer nanoseconds, an epoch count (1732550000s), now or a time relative to it (now-15m, -1h)\n$usage_delete" \
		ts delete m --prefix a,soon
	check "$m/delete_no_table" 1 '' 'tsstore: delete: no such table "nope"\n' \
		ts delete nope --from 2026-11-21
	check "$m/delete_help" 0 "${usage_delete}delete the rows of a key prefix and time range (--all: every row)\n" '' \
		ts delete --help
	# purge takes no --all: it never deletes anything not deleted already
	check "$m/purge_all" 2 '' "tsstore: purge: unknown option --all\n$usage_purge" \
		ts purge m --all
	check "$m/purge_from_after_to" 2 '' "tsstore: purge: --from must be before --to\n$usage_purge" \
		ts purge m --from 2026-11-22 --to 2026-11-21
	check "$m/purge_no_table" 1 '' 'tsstore: purge: no such table "nope"\n' ts purge nope
	# changes
	check "$m/changes_no_since" 2 '' "tsstore: changes: missing --since\n$usage_changes" \
		ts changes m
	check "$m/changes_bad_since" 2 '' "tsstore: changes: --since \"-1\": want a table version (a decimal integer, as stats prints \"version\")\n$usage_changes" \
		ts changes m --since -1
	check "$m/changes_until_below" 2 '' "tsstore: changes: --until must not be below --since\n$usage_changes" \
		ts changes m --since 10 --until 9
	check "$m/changes_depth_ts" 2 '' "tsstore: changes: --depth 2: the table has 1 key columns before ts\n$usage_changes" \
		ts changes m --since 0 --depth 2
	check "$m/changes_bad_depth" 2 '' "tsstore: changes: --depth \"x\": want a number of key columns\n$usage_changes" \
		ts changes m --since 0 --depth x
	check "$m/changes_bad_resolution" 2 '' "tsstore: changes: --resolution: duration \"1y\": expected a unit (ns us ms s m h d w) at offset 1\n$usage_changes" \
		ts changes m --since 0 --resolution 1y
	check "$m/changes_bad_column" 2 '' "tsstore: changes: --columns: no column \"v\" (the columns: host, from, to)\n$usage_changes" \
		ts changes m --since 0 --depth 1 --columns v
	check "$m/changes_no_table" 1 '' 'tsstore: changes: no such table "nope"\n' \
		ts changes nope --since 0
	check "$m/insert_policy_missing" 2 '' "tsstore: insert: option --on-duplicate needs an argument\n$usage_insert" \
		ts insert m --on-duplicate
	# none of it changed a row
	check "$m/rows_unchanged" 0 "$rows" '' ts query m
}

# ---- on the files ----
ts() { "$bin" -d "$tmp/direct" "$@"; }
suite direct

# ---- through tsstored ----
daemon_start "$tmp/daemon" "$tmp/sock" --listen tcp:127.0.0.1:0
daemon_addr tcp
ts() { "$bin" -s "$tmp/sock" "$@"; }
suite socket

# ---- the levels: a loopback TCP client has write, not admin ----
mode=tcp
tcp() { "$bin" -s "$addr" "$@"; }
admin='an admin operation: use the unix socket, or start tsstored with a token (--token FILE) and send it ({"op":"auth","token":…}); loopback-access is write (no token was sent: give it in $TSSTORE_TOKEN or in a file named by $TSSTORE_TOKEN_FILE)'
check delete_needs_admin 1 '' "tsstore: delete: $addr: \"delete\" is $admin\n" tcp delete m --prefix a
check delete_all_needs_admin 1 '' "tsstore: delete: $addr: \"delete\" is $admin\n" tcp delete m --all
check purge_needs_admin 1 '' "tsstore: purge: $addr: \"purge\" is $admin\n" tcp purge m
check changes_is_read 2 '' "tsstore: changes: --depth 2: the table has 1 key columns before ts\n$usage_changes" \
	tcp changes m --since 0 --depth 2
check tcp_rows_unchanged 0 "$rows" '' tcp query m
mode=

# ---- SQL: UPDATE, and a DELETE by more than key and ts bounds ----
if ! command -v sqlite3 >/dev/null 2>&1; then
	skip "sqlite3 is missing: the SQL refusals are not checked"
else
	# sql SOURCE STATEMENTS: run STATEMENTS on the virtual table m over
	# SOURCE (path='DIR' or socket='ADDRESS'): sqlite_vtab, lib.sh.
	sql() { sqlite_vtab m "$1" "$2"; }
	kept='tsstore: m: DELETE removes whole ranges of the key and ts: its WHERE kept 1 of the 2 rows its key and ts bounds select (a condition on a value column, an expression, or a bound not pushed down); nothing was deleted -- delete by = on leading key columns, a range on the next one and a range on ts\n'
	update='tsstore: m: UPDATE is not supported (a row'"'"'s key cannot change): INSERT OR REPLACE the row with its new values, or DELETE it\n'
	sqlrows='a|1795255200000000000|1\na|1795258800000000000|7\nb|1795255200000000000|3\n'
	for src in "path='$tmp/direct'" "socket='$tmp/sock'"; do
		case $src in path*) mode=sql_path ;; *) mode=sql_socket ;; esac
		check delete_value_column 1 '' "$kept" sql "$src" "DELETE FROM m WHERE host = 'a' AND v > 5;"
		check delete_expression 1 '' "$kept" sql "$src" "DELETE FROM m WHERE host = 'a' AND v + 0 < 5;"
		check delete_whole_scan 1 '' 'tsstore: m: DELETE removes whole ranges of the key and ts: its WHERE kept 2 of the 3 rows its key and ts bounds select (a condition on a value column, an expression, or a bound not pushed down); nothing was deleted -- delete by = on leading key columns, a range on the next one and a range on ts\n' \
			sql "$src" "DELETE FROM m WHERE v = 7;"
		check delete_nothing_selected 0 '' '' sql "$src" "DELETE FROM m WHERE host = 'zz';"
		check update 1 '' "$update" sql "$src" "UPDATE m SET v = 0 WHERE host = 'a';"
		check sql_rows_unchanged 0 "$sqlrows" '' sql "$src" "SELECT * FROM m;"
	done
	mode=
fi
daemon_stop

finish
