#!/bin/sh
# test_insert.sh -- golden tests of `tsstore insert`: the tsv, csv and
# jsonl formats, headers naming a subset of the columns, defaults, bad rows
# (each reported with its line number, the others stored), duplicate keys,
# bad headers, bad timestamps, batches of more than CLI_INSERT_BATCH_ROWS
# rows, usage errors and empty input -- each case on the files (-d) and
# again through a tsstored (-s), with the same expected output.
#
# Usage: tests/cli/test_insert.sh TSSTORE-or-BUILDDIR (see lib.sh).
# The clock is frozen by TSSTORE_NOW (the daemon's too).  What was stored
# is counted with `stats` (filling_rows + tablet_rows), and a default is
# shown by the key of a duplicate-key message.
set -u
. "$(dirname "$0")/lib.sh"
TSSTORE_NOW=2026-11-21T12:00:00Z
export TSSTORE_NOW

usage_insert='usage: tsstore insert TABLE [--format tsv|jsonl|csv] [--on-duplicate reject|ignore|replace] [--flush-idle DUR] [FILE]\n'

# check_rows NAME TABLE N: `stats TABLE` says the table holds N rows, in
# filling tablets or on-disk ones (filling_rows + tablet_rows).
check_rows() {
	ts stats "$2" >"$tmp/out" 2>"$tmp/err"
	status=$?
	got=$(awk -F': ' '$1 == "filling_rows" || $1 == "tablet_rows" { n += $2; seen++ }
	                  END { if (seen == 2) print n }' "$tmp/out")
	if [ "$status" -ne 0 ] || [ -s "$tmp/err" ]; then
		fail "$1" "stats: exit status $status, want 0 and no stderr"
	elif [ "$got" != "$3" ]; then
		fail "$1" "filling_rows + tablet_rows: $got, want $3"
	else
		pass
	fi
}

# suite: every case, through ts() (and in the current directory, which
# holds the input files).
suite() {
# (the cases are not indented: several hold multi-line strings)

# ---- the tables ----

check create_cpu 0 '' '' ts create cpu --column host:string --column ts:timestamp \
	--column u:double=0.5 --column n:int32=-7 --column note:string --column raw:blob \
	--key host,ts --ttl 7d
check create_site 0 '' '' ts create site --column site:string=main --column v:int64=3 \
	--key site,ts

# ---- each format ----

printf 'host\tts\tu\tn\tnote\traw
h1\t2026-11-21T10:00:00Z\t0.25\t1\ta\\tb\t00ff
h1\t2026-11-21T10:00:10Z\t0.5\t2\tline\\none\t
h2\t2026-11-21T10:00:00.5+02:00\t1e3\t-3\tback\\\\slash\tDEADbeef
' >ok.tsv
check tsv 0 '' 'insert: 3 rows stored, 0 rejected\n' ts insert cpu ok.tsv
check_rows tsv_rows cpu 3

# Columns in another order; quoted commas, quotes and a line break; CRLF
# and LF line ends; integer nanoseconds for ts.
printf 'ts,host,note,u\r
2026-11-21T10:00:20Z,h1,"comma, ""quoted""",1.5\r
2026-11-21T10:00:30Z,h1,"two\r
lines",2\r
1795255230000000000,"h3",plain,3
' >ok.csv
check csv 0 '' 'insert: 3 rows stored, 0 rejected\n' ts insert cpu --format csv ok.csv
check_rows csv_rows cpu 6

# Base64 blobs, a NUL in a string, null for the default, a blank line.
printf '%s\n' '{"host":"h4","ts":"2026-11-21T10:00:00Z","u":2,"n":5,"note":"caf\u00e9\u0000","raw":"AP8="}' \
	'{"ts":1795255260000000000,"host":"h4","u":0.125}' \
	'' \
	'{"host":"h4","ts":"2026-11-21T10:01:10Z","n":null,"note":"","raw":""}' >ok.jsonl
check jsonl 0 '' 'insert: 3 rows stored, 0 rejected\n' ts insert cpu --format=jsonl ok.jsonl
check_rows jsonl_rows cpu 9

# Standard input: no FILE, or "-".
printf 'host\tts\ns1\t2026-11-21T10:00:00Z\n' >stdin.tsv
check stdin 0 '' 'insert: 1 row stored, 0 rejected\n' from stdin.tsv ts insert cpu
printf 'host,ts\ns1,2026-11-21T10:00:01Z\n' >stdin.csv
check stdin_dash 0 '' 'insert: 1 row stored, 0 rejected\n' from stdin.csv ts insert cpu - --format csv
check_rows stdin_rows cpu 11

# ---- a header naming a subset: the others take their defaults ----

# A missing ts is now (TSSTORE_NOW), as the duplicate key shows.
printf 'host\nnow1\n' >no_ts.tsv
check subset_no_ts 0 '' 'insert: 1 row stored, 0 rejected\n' ts insert cpu no_ts.tsv
printf 'host\tts\nnow1\t2026-11-21T12:00:00Z\n' >now1.tsv
check subset_ts_was_now 1 '' 'tsstore: insert: line 2: duplicate key ("now1", 2026-11-21T12:00:00Z)
insert: 0 rows stored, 1 rejected\n' ts insert cpu now1.tsv
# Each row without ts takes the time it was read, one nanosecond after the
# time of the row before when the clock has not moved (here it is frozen):
# two rows of the same key in one batch are both stored.
printf 'site\nnow2\nnow2\n' >no_ts2.tsv
check subset_now_per_row 0 '' 'insert: 2 rows stored, 0 rejected\n' ts insert site no_ts2.tsv
check subset_now_per_row_times 0 'site\tts\tv
now2\t2026-11-21T12:00:00Z\t3
now2\t2026-11-21T12:00:00.000000001Z\t3\n' '' ts query site --prefix now2
# A key column left out takes its default ("main"); so does an empty
# number field.
printf 'ts\tv\n2026-11-21T10:00:00Z\t\n' >no_site.tsv
check subset_default_key 0 '' 'insert: 1 row stored, 0 rejected\n' ts insert site no_site.tsv
printf '{"site":"main","ts":"2026-11-21T10:00:00Z"}\n' >main.jsonl
check subset_key_was_default 1 '' 'tsstore: insert: line 1: duplicate key ("main", 2026-11-21T10:00:00Z)
insert: 0 rows stored, 1 rejected\n' ts insert site --format jsonl main.jsonl
check_rows subset_rows cpu 12
check_rows subset_site_rows site 3

# ---- bad rows in the middle: reported by line, the others stored ----

printf 'host\tts\tu
m1\t2026-11-21T11:00:00Z\t1
m1\t2026-11-21T11:00:01Z\tx
m1\t2026-11-21T11:00:02Z\t3

m1\t2026-11-21T11:00:03Z
m1\t2026-11-21T11:00:04Z\t5
m1\t2026-11-21T11:00:05Z\t6\t7
m1\\q\t2026-11-21T11:00:06Z\t8
m1\t2026-11-21T11:00:07Z\t9
' >middle.tsv
check bad_rows_middle 1 '' 'tsstore: insert: line 3: column "u": "x" is not a number
tsstore: insert: line 6: 2 fields, the header has 3
tsstore: insert: line 8: 4 fields, the header has 3
tsstore: insert: line 9: column "host": unknown escape \\q (want \\t, \\n or \\\\)
insert: 4 rows stored, 4 rejected\n' ts insert cpu middle.tsv
check_rows bad_rows_middle_rows cpu 16

# Line numbers count the lines of a quoted csv field.
printf 'host,ts,n
q1,2026-11-21T10:00:00Z,1
q1,2026-11-21T10:00:01Z,"2
"
q1,2026-11-21T10:00:02Z,3000000000
q1,2026-11-21T10:00:03Z,4"
"q1"x,2026-11-21T10:00:04Z,5
q1,2026-11-21T10:00:05Z,"6
' >middle.csv
check bad_rows_csv 1 '' 'tsstore: insert: line 3: column "n": "2\\n" is not a decimal integer
tsstore: insert: line 5: column "n": 3000000000 is out of range for int32
tsstore: insert: line 6: column "n": a quote inside an unquoted field
tsstore: insert: line 7: column "host": text after the closing quote
tsstore: insert: line 8: the input ends inside a quoted field
insert: 1 row stored, 5 rejected\n' ts insert cpu --format csv middle.csv

printf '%s\n' '{"host":"j1","ts":"2026-11-21T10:00:00Z"}' \
	'{"host":"j1","ts":1.5}' \
	'{"host":"j1","bogus":1}' \
	'["j1"]' \
	'{"host":"j1",' \
	'{"host":"j1","ts":"2026-11-21T10:00:01Z","raw":"AP8"}' \
	'{"host":"j1","ts":"2026-11-21T10:00:02Z","host":"x"}' \
	'{"host":"j1","ts":"2026-11-21T10:00:03Z","note":7}' \
	'{"host":"j1","ts":"2026-11-21T10:00:04Z"}' >middle.jsonl
check bad_rows_jsonl 1 '' 'tsstore: insert: line 2: column "ts": expected timestamp, got a JSON real
tsstore: insert: line 3: unknown column "bogus"
tsstore: insert: line 4: expected a JSON object, got a JSON array
tsstore: insert: line 5: invalid JSON: string or \047}\047 expected near end of file
tsstore: insert: line 6: column "raw": "AP8" is not base64: 3 characters, not a multiple of 4
tsstore: insert: line 7: invalid JSON: duplicate object key near \047"host"\047
tsstore: insert: line 8: column "note": expected string, got a JSON integer
insert: 2 rows stored, 7 rejected\n' ts insert cpu --format jsonl middle.jsonl
check_rows bad_rows_all_rows cpu 19

# ---- duplicate keys: with a stored row, and inside one batch ----

printf 'host\tts
h1\t2026-11-21T10:00:00Z
d1\t2026-11-21T10:00:00Z
d1\t2026-11-21T10:00:00.000000000Z
d1\t2026-11-21T10:00:01Z
' >dup.tsv
check duplicate_key 1 '' 'tsstore: insert: line 2: duplicate key ("h1", 2026-11-21T10:00:00Z)
tsstore: insert: line 4: duplicate key ("d1", 2026-11-21T10:00:00Z)
insert: 2 rows stored, 2 rejected\n' ts insert cpu dup.tsv
check duplicate_again 1 '' 'tsstore: insert: line 2: duplicate key ("h1", 2026-11-21T10:00:00Z)
tsstore: insert: line 3: duplicate key ("d1", 2026-11-21T10:00:00Z)
tsstore: insert: line 4: duplicate key ("d1", 2026-11-21T10:00:00Z)
tsstore: insert: line 5: duplicate key ("d1", 2026-11-21T10:00:01Z)
insert: 0 rows stored, 4 rejected\n' ts insert cpu dup.tsv
check_rows duplicate_rows cpu 21

# ---- timestamps: malformed, too far ahead, older than the TTL ----

printf 'host\tts
t1\t2026-13-01T00:00:00Z
t1\tyesterday
t1\t2026-11-21T10:00:00
t1\t2026-11-22T12:00:00.000000001Z
t1\t2026-11-14T11:59:59Z
t1\t2026-11-22T12:00:00Z
' >times.tsv
check bad_timestamps 1 '' 'tsstore: insert: line 2: column "ts": timestamp "2026-13-01T00:00:00Z": month 13 is out of range 01-12
tsstore: insert: line 3: column "ts": timestamp "yesterday": expected RFC 3339 (2026-11-21T10:00:00Z), a date (2026-11-21), integer nanoseconds, an epoch count (1732550000s), now or a time relative to it (now-15m, -1h)
tsstore: insert: line 4: column "ts": timestamp "2026-11-21T10:00:00": expected a zone (\047Z\047 or an offset such as +02:00) at offset 19, found the end of the text
tsstore: insert: line 5: ts 2026-11-22T12:00:00.000000001Z is more than max_future ahead of now (2026-11-21T12:00:00Z)
tsstore: insert: line 6: ts 2026-11-14T11:59:59Z is older than the table\047s TTL
insert: 1 row stored, 5 rejected\n' ts insert cpu times.tsv
check_rows bad_timestamps_rows cpu 22

# ---- more rows than a batch: bad rows at the edges of batches ----

# Rows 1..2500 on lines 2..2501, ts 10:00:00 + i s, except that rows 500,
# 1000, 1001 and 2500 repeat the key of the row before them (of 999 for
# 1001): the first, last and first rows of batches, and the last row.
awk 'BEGIN {
	print "ts\thost";
	for (i = 1; i <= 2500; i++) {
		k = i;
		if (i == 500 || i == 1000 || i == 2500) k = i - 1;
		if (i == 1001) k = 999;
		print (1795255200 + k) "000000000\tb";
	}
}' >batches.tsv
check batches 1 '' 'tsstore: insert: line 501: duplicate key ("b", 2026-11-21T10:08:19Z)
tsstore: insert: line 1001: duplicate key ("b", 2026-11-21T10:16:39Z)
tsstore: insert: line 1002: duplicate key ("b", 2026-11-21T10:16:39Z)
tsstore: insert: line 2501: duplicate key ("b", 2026-11-21T10:41:39Z)
insert: 2496 rows stored, 4 rejected\n' ts insert cpu batches.tsv
check_rows batches_rows cpu 2518

# ---- bad headers stop before any row ----

printf 'host\tts\tbogus\nx1\t2026-11-21T10:00:00Z\t1\n' >unknown.tsv
check unknown_column 1 '' 'tsstore: insert: line 1: unknown column "bogus"
insert: 0 rows stored, 0 rejected, stopped at line 1\n' ts insert cpu unknown.tsv
printf '\nhost,ts,host\nx1,2026-11-21T10:00:00Z,x1\n' >twice.csv
check column_twice 1 '' 'tsstore: insert: line 2: column "host" appears twice in the header
insert: 0 rows stored, 0 rejected, stopped at line 2\n' ts insert cpu --format csv twice.csv
printf '"host"x,ts\n' >badhead.csv
check header_bad_quote 1 '' 'tsstore: insert: line 1: field 1: text after the closing quote
insert: 0 rows stored, 0 rejected, stopped at line 1\n' ts insert cpu --format csv badhead.csv
check_rows bad_header_rows cpu 2518

# ---- empty input ----

: >empty
check empty_input 0 '' 'insert: 0 rows stored, 0 rejected\n' ts insert cpu empty
check empty_input_jsonl 0 '' 'insert: 0 rows stored, 0 rejected\n' ts insert cpu --format jsonl empty
printf 'host\tts\n\n' >header_only.tsv
check header_only 0 '' 'insert: 0 rows stored, 0 rejected\n' ts insert cpu header_only.tsv

# ---- failures before reading, usage errors ----

check unknown_table 1 '' 'tsstore: insert: no such table "nope"\n' ts insert nope ok.tsv
check missing_file 1 '' 'tsstore: insert: nofile.tsv: No such file or directory\n' \
	ts insert cpu nofile.tsv
mkdir adir
check read_error 1 '' 'tsstore: insert: adir: Is a directory
insert: 0 rows stored, 0 rejected, stopped at line 1\n' ts insert cpu adir
check missing_table 2 '' "tsstore: insert: missing TABLE\n$usage_insert" ts insert
check bad_format 2 '' "tsstore: insert: --format \"xml\": want tsv, jsonl or csv\n$usage_insert" \
	ts insert cpu --format xml ok.tsv
check format_needs_argument 2 '' "tsstore: insert: option --format needs an argument\n$usage_insert" \
	ts insert cpu --format
check extra_operand 2 '' "tsstore: insert: unexpected argument \"c\"\n$usage_insert" \
	ts insert cpu a c
check unknown_option 2 '' "tsstore: insert: unknown option --form\n$usage_insert" \
	ts insert cpu --form tsv ok.tsv
check bad_flush_idle 2 '' "tsstore: insert: --flush-idle: duration \"-5ms\": expected a non-negative integer and a unit (ns us ms s m h d w), e.g. 90m\n$usage_insert" \
	ts insert cpu --flush-idle -5ms ok.tsv
check load_no_format 2 '' 'tsstore: load: unknown option --format
usage: tsstore load TABLE [--on-duplicate reject|ignore|replace] [--flush-idle DUR] [FILE]\n' ts load cpu --format tsv ok.tsv
check insert_help 0 "${usage_insert}insert rows from FILE or stdin (no FILE, or -), batched; report bad rows by line\n" '' \
	ts insert --help
}

mkdir direct socket
cd "$tmp/direct" || exit 2
mode=direct
ts() { "$bin" -d "$tmp/direct/db" "$@"; }
suite
check missing_db 1 '' "tsstore: insert: database $tmp/nodb: No such file or directory\n" \
	"$bin" -d "$tmp/nodb" insert cpu ok.tsv

cd "$tmp/socket" || exit 2
mode=socket
daemon_start "$tmp/socket/db" "$tmp/socket/sock"
ts() { "$bin" -s "$tmp/socket/sock" "$@"; }
suite

finish
