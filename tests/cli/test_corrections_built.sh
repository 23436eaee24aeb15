#!/bin/sh
# test_corrections_built.sh -- issue 28's interfaces end to end over
# the library's corrections (ts_delete, ts_purge, ts_insert_policy with
# the policy replace, ts_changes_open): the commands delete, purge, changes
# and --on-duplicate on the files (-d) and through tsstored (-s), the
# levels of a replacing insert over TCP, the protocol's answers, and the
# SQLite module's DELETE, INSERT OR REPLACE and INSERT OR IGNORE over
# path= and socket=.  Exact outputs throughout, but for two things the
# contract leaves open: a delete's count may be "not counted", and
# changes may report more windows than changed (so its tests look for
# the windows that must be there, and for none after the newest
# version).
#
# Usage: tests/cli/test_corrections_built.sh TSSTORE-or-BUILDDIR (see
# lib.sh).
set -u
. "$(dirname "$0")/lib.sh"

T10=2026-11-21T10:00:00Z
T11=2026-11-21T11:00:00Z
T12=2026-11-21T12:00:00Z
NS10=1795255200000000000
printf 'host\tts\tv\na\t%s\t1\na\t%s\t2\na\t%s\t3\nb\t%s\t4\nb\t%s\t5\nc\t%s\t6\n' \
	$T10 $T11 $T12 $T10 $T11 $T10 >"$tmp/rows.tsv"
printf 'host\tts\tv\na\t%s\t30\n' $T12 >"$tmp/a12.tsv"
printf 'host\tts\tv\na\t%s\t50\n' $T10 >"$tmp/a10_50.tsv"
printf 'host\tts\tv\na\t%s\t77\n' $T10 >"$tmp/a10_77.tsv"
printf 'host\tts\tv\nb\t2026-11-21T15:30:00Z\t9\n' >"$tmp/b15.tsv"
printf 'host\tts\tv\nZZSECRETZZ\t%s\t424242\n' $T10 >"$tmp/secret.tsv"
head='host\tts\tv\n'
all6="${head}a\t$T10\t1\na\t$T11\t2\na\t$T12\t3\nb\t$T10\t4\nb\t$T11\t5\nc\t$T10\t6\n"

# deleted NAME N COMMAND...: COMMAND (a delete) succeeds and prints
# "N rows deleted, version V" (or "rows deleted (not counted), version
# V": the library may not count), nothing on stderr.
deleted() {
	name=$1 n=$2
	shift 2
	"$@" >"$tmp/out" 2>"$tmp/err" </dev/null
	st=$?
	if [ $st -ne 0 ]; then
		fail "$name" "exit status $st, want 0"
	elif [ -s "$tmp/err" ]; then
		fail "$name" "stderr is not empty"
	elif ! grep -qxE "($n rows? deleted|rows deleted \\(not counted\\)), version [1-9][0-9]*" "$tmp/out"; then
		fail "$name" "stdout is not \"$n rows deleted, version V\""
	else
		pass
	fi
}

# version: the table m's version now (stats).
version() {
	ts stats m | sed -n 's/^version: //p'
}

suite() {
	m=$1 data=$2
	check "$m/create" 0 '' '' ts create m --column host:string --column v:int64 --key host,ts
	check "$m/insert" 0 '' 'insert: 6 rows stored, 0 rejected\n' ts insert m rows.tsv
	# delete a key prefix x a time range: exactly the rows query selects
	check "$m/query_range" 0 "${head}a\t$T11\t2\n" '' ts query m --prefix a --from $T11 --to $T12
	deleted "$m/delete_prefix_time" 1 ts delete m --prefix a --from $T11 --to $T12
	check "$m/after_prefix_time" 0 "${head}a\t$T10\t1\na\t$T12\t3\nb\t$T10\t4\nb\t$T11\t5\nc\t$T10\t6\n" '' \
		ts query m
	deleted "$m/delete_time" 2 ts delete m --from $T11
	check "$m/after_time" 0 "${head}a\t$T10\t1\nb\t$T10\t4\nc\t$T10\t6\n" '' ts query m
	check "$m/latest_after_delete" 0 "${head}a\t$T10\t1\n" '' ts latest m --prefix a
	check "$m/aggregate_after_delete" 0 "ts\tv_count\tv_sum\n2026-11-21T00:00:00Z\t3\t11\n" '' \
		ts aggregate m --every 1d --column v:count,v:sum
	# a key deleted may be inserted again, and rows inserted after a
	# delete into its range stay
	check "$m/insert_after_delete" 0 '' 'insert: 1 row stored, 0 rejected\n' ts insert m a12.tsv
	check "$m/after_reinsert" 0 "${head}a\t$T10\t1\na\t$T12\t30\nb\t$T10\t4\nc\t$T10\t6\n" '' \
		ts query m
	deleted "$m/delete_all" 4 ts delete m --all
	check "$m/after_all" 0 "$head" '' ts query m
	check "$m/insert_again" 0 '' 'insert: 6 rows stored, 0 rejected\n' ts insert m rows.tsv
	check "$m/after_insert_again" 0 "$all6" '' ts query m
	deleted "$m/delete_empty_range" 0 ts delete m --prefix zz
	# a flushed table: the delete applies to on-disk tablets too
	check "$m/flush" 0 '' '' ts flush m
	deleted "$m/delete_flushed" 2 ts delete m --prefix b
	check "$m/after_flushed" 0 "${head}a\t$T10\t1\na\t$T11\t2\na\t$T12\t3\nc\t$T10\t6\n" '' ts query m

	# --on-duplicate for one run; the table's policy stays reject
	check "$m/insert_replace" 0 '' 'insert: 1 row stored, 0 rejected\n' \
		ts insert m --on-duplicate replace a10_50.tsv
	check "$m/after_replace" 0 "${head}a\t$T10\t50\n" '' ts query m --prefix a --to $T11
	check "$m/insert_ignore" 0 '' 'insert: 0 rows stored, 0 rejected, 1 duplicate ignored\n' \
		ts insert m --on-duplicate ignore a10_77.tsv
	check "$m/insert_reject" 1 '' "tsstore: insert: line 2: duplicate key (\"a\", $T10)\ninsert: 0 rows stored, 1 rejected\n" \
		ts insert m --on-duplicate reject a10_77.tsv
	check "$m/after_ignore" 0 "${head}a\t$T10\t50\n" '' ts query m --prefix a --to $T11
	check "$m/policy_unchanged" 0 'on_duplicate: reject\n' '' \
		sh -c "'$bin' $where stats m | grep '^on_duplicate:'"
	# a table of policy replace
	check "$m/create_replace" 0 '' '' \
		ts create r --column host:string --column v:int64 --key host,ts --on-duplicate replace
	check "$m/stats_replace" 0 'on_duplicate: replace\n' '' \
		sh -c "'$bin' $where stats r | grep '^on_duplicate:'"
	check "$m/r_insert" 0 '' 'insert: 6 rows stored, 0 rejected\n' ts insert r rows.tsv
	check "$m/r_replace" 0 '' 'insert: 1 row stored, 0 rejected\n' ts insert r a10_77.tsv
	check "$m/r_after" 0 "${head}a\t$T10\t77\na\t$T11\t2\n" '' ts query r --prefix a --to $T12
	check "$m/alter_replace_reject" 0 '' '' ts alter r --on-duplicate reject
	check "$m/r_reject_now" 1 '' "tsstore: insert: line 2: duplicate key (\"a\", $T10)\ninsert: 0 rows stored, 1 rejected\n" \
		ts insert r a10_50.tsv

	# changes: a window for what was inserted since, none after the newest
	v0=$(version)
	check "$m/insert_b15" 0 '' 'insert: 1 row stored, 0 rejected\n' ts insert m b15.tsv
	ts changes m --since "$v0" --depth 1 --resolution 1h >"$tmp/changes" 2>"$tmp/err"
	expect "$m/changes_status" $? -eq 0
	expect "$m/changes_header" "$(head -n 1 "$tmp/changes")" = "$(printf 'host\tfrom\tto')"
	expect "$m/changes_window" -n "$(grep -x "$(printf 'b\t2026-11-21T15:00:00Z\t2026-11-21T16:00:00Z')" "$tmp/changes")"
	check "$m/changes_none_after" 0 'host\tfrom\tto\n' '' ts changes m --since "$(version)" --depth 1
	check "$m/changes_none_depth0" 0 'from\tto\n' '' ts changes m --since "$(version)"
	check "$m/changes_jsonl_none" 0 '' '' ts changes m --since "$(version)" --format jsonl
	v1=$(version)
	deleted "$m/delete_c" 1 ts delete m --prefix c
	ts changes m --since "$v1" --depth 1 --no-header >"$tmp/changes" 2>"$tmp/err"
	expect "$m/changes_delete_status" $? -eq 0
	expect "$m/changes_delete_prefix" -n "$(grep "^c	" "$tmp/changes")"
	check "$m/changes_until" 0 'from\tto\n' '' ts changes m --since "$v1" --until "$v1"
	# a delete of several hosts: the wildcard row, every host ("*"; null
	# in jsonl), over the time it deleted
	v2=$(version)
	deleted "$m/delete_hour" 1 ts delete m --from $T12 --to 2026-11-21T13:00:00Z
	check "$m/changes_wildcard" 0 "host\tfrom\tto\n*\t$T12\t2026-11-21T13:00:00Z\n" '' \
		ts changes m --since "$v2" --depth 1 --resolution 1h
	check "$m/changes_wildcard_csv" 0 "host,from,to\n*,$T12,2026-11-21T13:00:00Z\n" '' \
		ts changes m --since "$v2" --depth 1 --resolution 1h --format csv
	check "$m/changes_wildcard_jsonl" 0 "{\"host\":null,\"from\":1795262400000000000,\"to\":1795266000000000000}\n" '' \
		ts changes m --since "$v2" --depth 1 --resolution 1h --format jsonl

	# purge: the deleted row's bytes are in no live file afterwards
	check "$m/insert_secret" 0 '' 'insert: 1 row stored, 0 rejected\n' ts insert m secret.tsv
	expect "$m/secret_in_files" -n "$(grep -rl ZZSECRETZZ "$data")"
	deleted "$m/delete_secret" 1 ts delete m --prefix ZZSECRETZZ
	check "$m/purge_range" 0 '' '' ts purge m --prefix ZZSECRETZZ
	expect "$m/secret_gone" -z "$(grep -rl ZZSECRETZZ "$data")"
	check "$m/purge_all" 0 '' '' ts purge m
	check "$m/after_purge" 0 "${head}a\t$T10\t50\na\t$T11\t2\nb\t2026-11-21T15:30:00Z\t9\n" '' \
		ts query m
	check "$m/check" 0 '' '' ts check
}

# ---- on the files ----
where="-d $tmp/direct"
ts() { "$bin" -d "$tmp/direct" "$@"; }
suite direct "$tmp/direct"

# ---- through tsstored ----
daemon_start "$tmp/daemon" "$tmp/sock" --listen tcp:127.0.0.1:0
daemon_addr tcp
where="-s $tmp/sock"
ts() { "$bin" -s "$tmp/sock" "$@"; }
suite socket "$tmp/daemon"

# ---- a replacing insert over TCP (write): only into a replace table ----
mode=tcp
tcp() { "$bin" -s "$addr" "$@"; }
check create_rr 0 '' '' tcp create rr --column host:string --column v:int64 --key host,ts \
	--on-duplicate replace
check rr_insert 0 '' 'insert: 6 rows stored, 0 rejected\n' tcp insert rr rows.tsv
check rr_replace_write 0 '' 'insert: 1 row stored, 0 rejected\n' \
	tcp insert rr --on-duplicate replace a10_50.tsv
check rr_plain_replaces 0 '' 'insert: 1 row stored, 0 rejected\n' tcp insert rr a10_77.tsv
check rr_after 0 "${head}a\t$T10\t77\n" '' tcp query rr --prefix a --to $T11
check m_replace_needs_admin 1 '' "tsstore: insert: $addr: an insert with \"on_duplicate\":\"replace\" into a table whose policy is not replace is an admin operation: use the unix socket, or start tsstored with a token (--token FILE) and send it ({\"op\":\"auth\",\"token\":…}); loopback-access is write (no token was sent: give it in \$TSSTORE_TOKEN or in a file named by \$TSSTORE_TOKEN_FILE)
insert: 0 rows stored, 0 rejected, stopped at line 2
" tcp insert m --on-duplicate replace a10_77.tsv
check m_ignore_write 0 '' 'insert: 0 rows stored, 0 rejected, 1 duplicate ignored\n' \
	tcp insert m --on-duplicate ignore a10_77.tsv
check tcp_changes_read 0 'from\tto\n' '' tcp changes rr --since "$(ts stats rr | sed -n 's/^version: //p')"
mode=

# ---- the protocol's answers ----
if command -v python3 >/dev/null 2>&1; then
	check proto_answers 0 'delete {"ok":true,"deleted":N,"version":V}
delete_none {"ok":true,"deleted":N,"version":V}
purge {"ok":true,"version":V}
changes_rows [["a",F,T]]
changes_end {"ok":true,"count":N}
' '' python3 -c '
import json, re, socket, sys
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
f = s.makefile("rw")
def call(req):
    f.write(json.dumps(req) + "\n"); f.flush()
    lines = []
    while True:
        line = f.readline()
        lines.append(line.strip())
        if "\"ok\"" in line:
            return lines
def shape(line):
    line = re.sub(r"\"deleted\":(\d+|null)", "\"deleted\":N", line)
    line = re.sub(r"\"(version|count)\":\d+", lambda m: "\"%s\":%s" % (m.group(1), "V" if m.group(1) == "version" else "N"), line)
    return line
call({"op":"create","table":"p","columns":[{"name":"host","type":"string"},{"name":"v","type":"int64"}],"key":["host","ts"]})
v0 = json.loads(call({"op":"insert","table":"p","rows":[["a","2026-11-21T10:30:00Z",1]]})[-1])["version"]
v1 = json.loads(call({"op":"insert","table":"p","rows":[["a","2026-11-21T11:30:00Z",2]]})[-1])["version"]
print("delete", shape(call({"op":"delete","table":"p","prefix":["a"],"from":"2026-11-21T10:00:00Z","to":"2026-11-21T11:00:00Z"})[-1]))
print("delete_none", shape(call({"op":"delete","table":"p","prefix":["zz"]})[-1]))
print("purge", shape(call({"op":"purge","table":"p"})[-1]))
ch = call({"op":"changes","table":"p","since":v0,"until":v1,"resolution":"1h","depth":1})
rows = [r for l in ch[:-1] for r in json.loads(l)["rows"]]
ok = ["a", 1795258800000000000, 1795262400000000000] in rows
print("changes_rows", "[[\"a\",F,T]]" if ok else json.dumps(rows))
print("changes_end", shape(ch[-1]))
' "$tmp/sock"
else
	skip "python3 is missing: the protocol's answers are not checked"
fi

# ---- SQL ----
if ! command -v sqlite3 >/dev/null 2>&1; then
	skip "sqlite3 is missing: SQL is not checked"
else
	sql() { sqlite_vtab s "$1" "$2"; }
	for src in "socket='$tmp/sock'" "path='$tmp/direct'"; do
		case $src in
		path*) mode=sql_path cli="-d $tmp/direct" ;;
		*) mode=sql_socket cli="-s $tmp/sock" ;;
		esac
		# path= takes the writer lock (of another directory than the
		# daemon's, but one tsstored at a time is simpler to reason on)
		[ "$mode" = sql_path ] && daemon_stop
		check create 0 '' '' "$bin" $cli create s --column host:string --column v:int64 --key host,ts
		check insert 0 '' 'insert: 6 rows stored, 0 rejected\n' "$bin" $cli insert s rows.tsv
		check delete_prefix 0 '' '' sql "$src" "DELETE FROM s WHERE host = 'b';"
		check delete_range 0 '' '' sql "$src" \
			"DELETE FROM s WHERE host = 'a' AND ts >= tsstore_time('$T11') AND ts < tsstore_time('$T12');"
		check after_deletes 0 "a|$NS10|1\na|1795262400000000000|3\nc|$NS10|6\n" '' sql "$src" "SELECT * FROM s;"
		check strict_bounds 0 '' '' sql "$src" "DELETE FROM s WHERE host > 'a' AND host < 'd';"
		check after_strict 0 "a|$NS10|1\na|1795262400000000000|3\n" '' sql "$src" "SELECT * FROM s;"
		check or_replace 0 '' '' sql "$src" "INSERT OR REPLACE INTO s VALUES ('a', $NS10, 500);"
		check or_ignore 0 '' '' sql "$src" "INSERT OR IGNORE INTO s VALUES ('a', $NS10, 600), ('e', $NS10, 7);"
		check plain_duplicate 1 '' "tsstore: row 0: duplicate key (\"a\", $T10)\n" \
			sql "$src" "INSERT INTO s VALUES ('a', $NS10, 700);"
		check after_policies 0 "a|$NS10|500\na|1795262400000000000|3\ne|$NS10|7\n" '' sql "$src" "SELECT * FROM s;"
		# no read of a transaction sees its own inserts before the commit,
		# a DELETE's scan included (tsstore-sqlite(3)): 'd' stays
		check insert_then_delete 0 '' '' sql "$src" \
			"BEGIN; INSERT INTO s VALUES ('d', $NS10, 1); DELETE FROM s WHERE host = 'd'; COMMIT;"
		check delete_then_insert 0 '' '' sql "$src" \
			"BEGIN; DELETE FROM s WHERE host = 'e'; INSERT INTO s VALUES ('e', $NS10, 8); COMMIT;"
		check after_order 0 "a|$NS10|500\na|1795262400000000000|3\nd|$NS10|1\ne|$NS10|8\n" '' \
			sql "$src" "SELECT * FROM s;"
		check delete_in 0 '' '' sql "$src" "DELETE FROM s WHERE host IN ('a', 'd', 'e');"
		check after_in 0 '' '' sql "$src" "SELECT * FROM s;"
		check cli_agrees 0 "$head" '' "$bin" $cli query s
	done
	mode=
fi
daemon_stop

finish
