#!/bin/sh
# test_query.sh -- golden tests of the commands that print rows (query,
# latest, aggregate, dump), of load and flush, and of the daemon mode:
# every case runs twice, once on the files (-d DATADIR) and once through
# a tsstored on another directory (-s SOCKET), with the same expected
# output -- the contract is that the two modes print the same.
#
# Usage: tests/cli/test_query.sh TSSTORE-or-BUILDDIR (see lib.sh).
set -u
. "$(dirname "$0")/lib.sh"

# The rows are from 2026-11-21; the daemon and the command both read the
# real clock, and rows two days old are neither expired nor future.
usage_query='usage: tsstore query TABLE [--prefix V,...] [--from T] [--to T] [--desc] [--limit N] [--after KEY] [--columns COL,...] [--no-header] [--format tsv|jsonl|csv] [--output FILE]\n'
usage_latest='usage: tsstore latest TABLE --prefix V,... [--columns COL,...] [--no-header] [--format tsv|jsonl|csv] [--output FILE]\n'
usage_aggregate='usage: tsstore aggregate TABLE --every DUR [--group N] --column COL:FN,... [--prefix V,...] [--from T] [--to T] [--explain] [--raw] [--columns NAME,...] [--no-header] [--format tsv|jsonl|csv] [--output FILE]\n'
usage_load='usage: tsstore load TABLE [--on-duplicate reject|ignore|replace] [--flush-idle DUR] [FILE]\n'
usage_flush='usage: tsstore flush [TABLE] [--before T]\n'

cat >"$tmp/cpu.tsv" <<'EOF'
host	ts	usage	n
h1	2026-11-21T10:00:00Z	1.5	1
h1	2026-11-21T10:30:00Z	2.5	2
h2	2026-11-21T10:10:00Z	3	3
h1	2026-11-21T11:05:00Z	4	4
h2	2026-11-21T11:50:00Z	-0.25	5
EOF
all_tsv='host\tts\tusage\tn
h1\t2026-11-21T10:00:00Z\t1.5\t1
h1\t2026-11-21T10:30:00Z\t2.5\t2
h1\t2026-11-21T11:05:00Z\t4\t4
h2\t2026-11-21T10:10:00Z\t3\t3
h2\t2026-11-21T11:50:00Z\t-0.25\t5
'
all_jsonl='{"host":"h1","ts":1795255200000000000,"usage":1.5,"n":1}
{"host":"h1","ts":1795257000000000000,"usage":2.5,"n":2}
{"host":"h1","ts":1795259100000000000,"usage":4,"n":4}
{"host":"h2","ts":1795255800000000000,"usage":3,"n":3}
{"host":"h2","ts":1795261800000000000,"usage":-0.25,"n":5}
'

# Text that needs escapes (tsv) and quotes (csv), and a blob.
printf '{"k":"a","ts":1795255200000000000,"msg":"tab\\there, \\"quoted\\"","data":"AAEC/w=="}\n{"k":"b","ts":1795255200000000000,"msg":"line\\nbreak\\\\","data":""}\n' >"$tmp/notes.jsonl"

# The load input: line 3 is a duplicate of line 1, line 4 is not JSON.
printf '{"host":"h9","ts":1}\n{"host":"h9","ts":2,"usage":7}\n{"host":"h9","ts":1}\nnot json\n{"host":"h9","ts":3}\n' >"$tmp/bad.jsonl"

# suite MODE: every case, through ts() of MODE.
suite() {
	m=$1
	check "$m/create" 0 '' '' ts create cpu --column host:string --column ts:timestamp \
		--column usage:double --column n:int64 --key host,ts
	check "$m/insert" 0 '' 'insert: 5 rows stored, 0 rejected\n' from "$tmp/cpu.tsv" ts insert cpu

	# ---- query ----
	check "$m/query_tsv" 0 "$all_tsv" '' ts query cpu
	check "$m/query_jsonl" 0 "$all_jsonl" '' ts query cpu --format jsonl
	check "$m/query_csv_desc" 0 'host,ts,usage,n\nh2,2026-11-21T11:50:00Z,-0.25,5\nh2,2026-11-21T10:10:00Z,3,3\nh1,2026-11-21T11:05:00Z,4,4\nh1,2026-11-21T10:30:00Z,2.5,2\nh1,2026-11-21T10:00:00Z,1.5,1\n' '' \
		ts query cpu --format csv --desc
	check "$m/query_prefix" 0 'host\tts\tusage\tn\nh2\t2026-11-21T10:10:00Z\t3\t3\nh2\t2026-11-21T11:50:00Z\t-0.25\t5\n' '' \
		ts query cpu --prefix h2
	check "$m/query_prefix_ts" 0 'host\tts\tusage\tn\nh1\t2026-11-21T10:30:00Z\t2.5\t2\n' '' \
		ts query cpu --prefix h1,2026-11-21T10:30:00Z
	check "$m/query_window" 0 'host\tts\tusage\tn\nh1\t2026-11-21T10:30:00Z\t2.5\t2\nh2\t2026-11-21T10:10:00Z\t3\t3\n' '' \
		ts query cpu --from 2026-11-21T10:10:00Z --to 2026-11-21T11:05:00Z
	check "$m/query_limit" 0 'host\tts\tusage\tn\nh1\t2026-11-21T10:00:00Z\t1.5\t1\nh1\t2026-11-21T10:30:00Z\t2.5\t2\n' \
		'query: limit of 2 rows reached; more: --after h1,2026-11-21T10:30:00Z\n' ts query cpu --limit 2
	check "$m/query_limit_exact" 0 "$all_tsv" '' ts query cpu --limit 5
	check "$m/query_empty" 0 'host\tts\tusage\tn\n' '' ts query cpu --prefix h3

	# ---- latest ----
	check "$m/latest" 0 'host\tts\tusage\tn\nh1\t2026-11-21T11:05:00Z\t4\t4\n' '' ts latest cpu --prefix h1
	check "$m/latest_jsonl" 0 '{"host":"h2","ts":1795261800000000000,"usage":-0.25,"n":5}\n' '' \
		ts latest cpu --prefix h2 --format jsonl
	check "$m/latest_none" 1 '' 'tsstore: latest: no row with prefix "h3"\n' ts latest cpu --prefix h3

	# ---- aggregate ----
	check "$m/aggregate_hosts" 0 'host\tts\tusage_min\tn_sum\tusage_max\tn_count\nh1\t2026-11-21T10:00:00Z\t1.5\t3\t2.5\t2\nh1\t2026-11-21T11:00:00Z\t4\t4\t4\t1\nh2\t2026-11-21T10:00:00Z\t3\t3\t3\t1\nh2\t2026-11-21T11:00:00Z\t-0.25\t5\t-0.25\t1\n' '' \
		ts aggregate cpu --every 1h --group 1 --column usage:min,n:sum --column usage:max,n:count
	check "$m/aggregate_all" 0 'ts,usage_mean,usage_first,usage_last\n2026-11-21T00:00:00Z,2.15,1.5,-0.25\n' '' \
		ts aggregate cpu --every 1d --column usage:mean,usage:first,usage:last --format csv
	check "$m/aggregate_window_prefix" 0 'ts\tn_sum\n2026-11-21T10:00:00Z\t3\n' '' \
		ts aggregate cpu --every 2h --prefix h1 --from 2026-11-21T10:00:00Z --to 2026-11-21T11:00:00Z --column n:sum

	# ---- formats of text and blobs ----
	check "$m/create_notes" 0 '' '' ts create notes --column k:string --column ts:timestamp \
		--column msg:string --column data:blob --key k,ts
	check "$m/load_notes" 0 '' 'load: 2 rows stored, 0 rejected\n' ts load notes "$tmp/notes.jsonl"
	check "$m/notes_tsv" 0 'k\tts\tmsg\tdata\na\t2026-11-21T10:00:00Z\ttab\\there, "quoted"\t000102ff\nb\t2026-11-21T10:00:00Z\tline\\nbreak\\\\\t\n' '' \
		ts query notes
	check "$m/notes_csv" 0 'k,ts,msg,data\na,2026-11-21T10:00:00Z,"tab\there, ""quoted""",000102ff\nb,2026-11-21T10:00:00Z,"line\nbreak\\",\n' '' \
		ts query notes --format csv
	check_file "$m/notes_dump" 0 "$tmp/notes.jsonl" '' ts dump notes

	# ---- dump, load: a round trip ----
	ts dump cpu >"$tmp/cpu.jsonl"
	check "$m/dump" 0 "$all_jsonl" '' ts dump cpu
	check "$m/create_copy" 0 '' '' ts create copy --column host:string --column ts:timestamp \
		--column usage:double --column n:int64 --key host,ts
	check "$m/load_copy" 0 '' 'load: 5 rows stored, 0 rejected\n' from "$tmp/cpu.jsonl" ts load copy
	check "$m/copy_equal" 0 "$all_tsv" '' ts query copy
	check "$m/load_bad_rows" 1 '' \
		"tsstore: load: line 3: duplicate key (\"h9\", 1970-01-01T00:00:00.000000001Z)\ntsstore: load: line 4: invalid JSON: '[' or '{' expected near 'not'\nload: 3 rows stored, 2 rejected\n" \
		ts load copy "$tmp/bad.jsonl"
	check "$m/load_bad_rows_kept" 0 'host\tts\tusage\tn\nh9\t1970-01-01T00:00:00.000000001Z\t0\t0\nh9\t1970-01-01T00:00:00.000000002Z\t7\t0\nh9\t1970-01-01T00:00:00.000000003Z\t0\t0\n' '' \
		ts query copy --prefix h9

	# ---- flush: the rows move to tablets and read the same ----
	check "$m/flush_before" 0 '' '' ts flush cpu --before 2026-11-21T11:00:00Z
	check "$m/flush_all" 0 '' '' ts flush
	check "$m/query_after_flush" 0 "$all_tsv" '' ts query cpu
	check "$m/aggregate_after_flush" 0 'ts,usage_mean,usage_first,usage_last\n2026-11-21T00:00:00Z,2.15,1.5,-0.25\n' '' \
		ts aggregate cpu --every 1d --column usage:mean,usage:first,usage:last --format csv

	# ---- errors ----
	check "$m/query_unknown_table" 1 '' 'tsstore: query: no such table "nope"\n' ts query nope
	check "$m/latest_unknown_table" 1 '' 'tsstore: latest: no such table "nope"\n' ts latest nope --prefix a
	check "$m/aggregate_unknown_table" 1 '' 'tsstore: aggregate: no such table "nope"\n' \
		ts aggregate nope --every 1h --column n:sum
	check "$m/dump_unknown_table" 1 '' 'tsstore: dump: no such table "nope"\n' ts dump nope
	check "$m/load_unknown_table" 1 '' 'tsstore: load: no such table "nope"\n' ts load nope "$tmp/cpu.jsonl"
	check "$m/flush_unknown_table" 1 '' 'tsstore: flush: no such table "nope"\n' ts flush nope
	check "$m/query_missing_table" 2 '' "tsstore: query: missing TABLE\n$usage_query" ts query
	check "$m/query_bad_from" 2 '' "tsstore: query: --from: timestamp \"yesterday\": expected RFC 3339 (2026-11-21T10:00:00Z), a date (2026-11-21), integer nanoseconds, an epoch count (1732550000s), now or a time relative to it (now-15m, -1h)\n$usage_query" \
		ts query cpu --from yesterday
	check "$m/query_from_after_to" 2 '' "tsstore: query: --from must be before --to\n$usage_query" \
		ts query cpu --from 2026-11-21T11:00:00Z --to 2026-11-21T10:00:00Z
	check "$m/query_bad_limit" 2 '' "tsstore: query: --limit \"0\": want a positive integer\n$usage_query" \
		ts query cpu --limit 0
	check "$m/query_bad_format" 2 '' "tsstore: query: --format \"xml\": want tsv, jsonl or csv\n$usage_query" \
		ts query cpu --format xml
	check "$m/query_prefix_too_long" 2 '' "tsstore: query: --prefix: more values than the 2 key columns\n$usage_query" \
		ts query cpu --prefix h1,1,2
	check "$m/query_prefix_bad_ts" 2 '' "tsstore: query: --prefix: column \"ts\": timestamp \"noon\": expected RFC 3339 (2026-11-21T10:00:00Z), a date (2026-11-21), integer nanoseconds, an epoch count (1732550000s), now or a time relative to it (now-15m, -1h)\n$usage_query" \
		ts query cpu --prefix h1,noon
	check "$m/latest_missing_prefix" 2 '' "tsstore: latest: missing --prefix\n$usage_latest" ts latest cpu
	check "$m/aggregate_missing_every" 2 '' "tsstore: aggregate: missing --every\n$usage_aggregate" \
		ts aggregate cpu --column n:sum
	check "$m/aggregate_missing_column" 2 '' "tsstore: aggregate: missing --column\n$usage_aggregate" \
		ts aggregate cpu --every 1h
	check "$m/aggregate_bad_fn" 2 '' "tsstore: aggregate: --column \"usage:median\": want count, sum, min, max, mean, first or last\n$usage_aggregate" \
		ts aggregate cpu --every 1h --column usage:median
	check "$m/aggregate_bad_spec" 2 '' "tsstore: aggregate: --column \"usage\": want COL:FN\n$usage_aggregate" \
		ts aggregate cpu --every 1h --column usage
	check "$m/aggregate_unknown_column" 2 '' "tsstore: aggregate: --column: no column \"cpu\"\n$usage_aggregate" \
		ts aggregate cpu --every 1h --column cpu:max
	check "$m/aggregate_bad_group" 2 '' "tsstore: aggregate: --group 2: the table has 1 key columns before ts\n$usage_aggregate" \
		ts aggregate cpu --every 1h --group 2 --column n:sum
	check "$m/aggregate_string_column" 1 '' 'tsstore: aggregate: column "host" is a string: aggregates need numbers\n' \
		ts aggregate cpu --every 1h --column host:min
	check "$m/load_no_format" 2 '' "tsstore: load: unknown option --format\n$usage_load" \
		ts load cpu --format tsv
	check "$m/flush_bad_before" 2 '' "tsstore: flush: --before: timestamp \"x\": expected RFC 3339 (2026-11-21T10:00:00Z), a date (2026-11-21), integer nanoseconds, an epoch count (1732550000s), now or a time relative to it (now-15m, -1h)\n$usage_flush" \
		ts flush --before x
}

# ---- on the files ----
ts() { "$bin" -d "$tmp/direct" "$@"; }
suite direct

# ---- through tsstored ----
daemon_start "$tmp/daemon" "$tmp/sock"
ts() { "$bin" -s "$tmp/sock" "$@"; }
suite socket
check socket/env 0 'copy\ncpu\nnotes\n' '' env TSSTORE_SOCKET="$tmp/sock" "$bin" tables
check socket/tables 0 'copy\ncpu\nnotes\n' '' ts tables
check socket/schema 0 'host\tstring\t\t1\nts\ttimestamp\tnow\t2\nusage\tdouble\t0\t-\nn\tint64\t0\t-\n' '' \
	ts schema cpu
check socket/drop 0 '' '' ts drop copy
check socket/drop_again 1 '' 'tsstore: drop: no such table "copy"\n' ts drop copy
daemon_stop
check socket/no_daemon 1 '' "tsstore: tables: $tmp/sock: No such file or directory\n" ts tables

finish
