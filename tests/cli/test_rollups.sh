#!/bin/sh
# test_rollups.sh -- rollups (issue 29, docs/rollups.md) through every
# interface but the library's own tests: tsstore create-rollup, rollups,
# tables --long, aggregate --explain and --raw, on the files (-d) and
# through tsstored (-s); the protocol's create_rollup, rollups, the
# schema's "rollup" and the aggregate's "source"; the maintenance of a
# running tsstored (a rollup of 1 minute and a rollup of it of 1 hour,
# filled, then late and out-of-order rows) checked row for row against
# the aggregate over the source's own rows; the refusals (writes into a
# rollup, a source dropped under its rollups, a rollup of a rollup whose
# window does not combine); the levels (create_rollup is admin); the
# rollup's stats and /metrics; InfluxQL's GROUP BY time answered from a
# rollup; the SQL module reading a rollup and
# refusing an insert; the mount (tsstored --mount) showing a rollup's
# day.
#
# The maintenance runs in tsstored's scheduler (a pass a second): the
# test waits until each rollup's watermark reaches its source's version
# (stats), 20 s at most.
#
# Usage: tests/cli/test_rollups.sh TSSTORE-or-BUILDDIR (see lib.sh).
set -u
. "$(dirname "$0")/lib.sh"

usage_cr='usage: tsstore create-rollup NAME --from SOURCE --every DUR [--group N] --column COL:FN,... [--ttl DUR]\n'
usage_rollups='usage: tsstore rollups TABLE\n'

# 2 hosts x 3 hours of rows every 20 s: cpu a multiple of 1/4 (sums of
# doubles exact in any order), n an integer.
awk 'BEGIN { print "host\tts\tcpu\tn"
	for (h = 10; h <= 12; h++) for (m = 0; m < 60; m++) for (s = 0; s < 60; s += 20)
		for (k = 1; k <= 2; k++)
			printf "web%d\t2026-11-21T%02d:%02d:%02dZ\t%d.%02d\t%d\n", k, h, m, s,
			       (h * 7 + m * 3 + s + k) % 50, ((m + s + k) % 4) * 25, (m * s + k) % 9 }' >rows.tsv
# Late and out-of-order rows: inside windows already rolled up (10:00:05,
# 11:59:50), before every row (09:59), and a new host.
printf 'host\tts\tcpu_max\nweb1\t2026-11-21T10:00:00Z\t1\n' >r1h.tsv
printf 'host\tts\tcpu\tn\nweb2\t2026-11-21T11:59:50Z\t99.5\t4\nweb1\t2026-11-21T10:00:05Z\t-3.25\t7\nweb3\t2026-11-21T12:30:10Z\t1.5\t1\nweb1\t2026-11-21T09:59:00Z\t0.75\t2\n' >late.tsv

# The aggregate the rollup r1m holds, over m's own rows, and r1h's.
cols_1m='cpu:min,cpu:max,cpu:sum,cpu:count,cpu:first,cpu:last,n:sum,n:count'
cols_1h='cpu:max,cpu:sum,cpu:count'

# wait_rollup ROLLUP SOURCE: until ROLLUP's watermark is SOURCE's
# version (20 s at most); 0 when it is.
wait_rollup() {
	i=0
	while [ $i -lt 200 ]; do
		v=$(ts stats "$2" | sed -n 's/^version: //p')
		w=$(ts stats "$1" | sed -n 's/^rollup_watermark: //p')
		[ -n "$v" ] && [ "$v" = "$w" ] && return 0
		sleep 0.1
		i=$((i + 1))
	done
	return 1
}

# ---- what needs no maintenance, in both modes ----
suite() {
	m=$1
	check "$m/create" 0 '' '' ts create m --column host:string --column cpu:double \
		--column n:int64 --column note:string --key host,ts
	check "$m/no_from" 2 '' "tsstore: create-rollup: missing --from\n$usage_cr" \
		ts create-rollup r --every 1m --column cpu:max
	check "$m/no_every" 2 '' "tsstore: create-rollup: missing --every\n$usage_cr" \
		ts create-rollup r --from m --column cpu:max
	check "$m/no_column" 2 '' "tsstore: create-rollup: missing --column\n$usage_cr" \
		ts create-rollup r --from m --every 1m
	check "$m/no_name" 2 '' "tsstore: create-rollup: missing NAME\n$usage_cr" \
		ts create-rollup --from m --every 1m --column cpu:max
	check "$m/bad_every" 2 '' "tsstore: create-rollup: --every: duration \"1y\": expected a unit (ns us ms s m h d w) at offset 1\n$usage_cr" \
		ts create-rollup r --from m --every 1y --column cpu:max
	check "$m/bad_group" 2 '' "tsstore: create-rollup: --group \"x\": want a number of key columns\n$usage_cr" \
		ts create-rollup r --from m --every 1m --group x --column cpu:max
	check "$m/bad_fn" 2 '' "tsstore: create-rollup: --column \"cpu:median\": want count, sum, min, max, mean, first or last\n$usage_cr" \
		ts create-rollup r --from m --every 1m --column cpu:median
	check "$m/no_colon" 2 '' "tsstore: create-rollup: --column \"cpu\": want COL:FN\n$usage_cr" \
		ts create-rollup r --from m --every 1m --column cpu
	check "$m/unknown_column" 2 '' "tsstore: create-rollup: --column: no column \"mem\" in table \"m\"\n$usage_cr" \
		ts create-rollup r --from m --every 1m --column cpu:max,mem:max
	check "$m/unknown_source" 1 '' 'tsstore: create-rollup: no such table "nope"\n' \
		ts create-rollup r --from nope --every 1m --column cpu:max
	check "$m/string_column" 1 '' 'tsstore: create-rollup: rollup "r": column "note" is a string: rollups aggregate numbers\n' \
		ts create-rollup r --from m --every 1m --column note:max
	check "$m/group_too_big" 1 '' 'tsstore: create-rollup: rollup "r": group 2: table "m" has 1 key columns before ts (0 to 1 allowed)\n' \
		ts create-rollup r --from m --every 1m --group 2 --column cpu:max
	check "$m/help" 0 "${usage_cr}create a rollup: a table of SOURCE's rows per window and group (its first N key columns), kept by the store; columns COL_FN\n" '' \
		ts create-rollup --help
	check "$m/create_r1m" 0 '' '' ts create-rollup r1m --from m --every 1m --group 1 \
		--column cpu:min,cpu:max,cpu:mean,cpu:first,cpu:last --column n:sum,n:count --ttl 730d
	check "$m/create_r1h" 0 '' '' ts create-rollup r1h --from r1m --every 1h --group 1 \
		--column cpu_max:max,cpu_sum:mean
	check "$m/exists" 1 '' 'tsstore: create-rollup: table "r1m" already exists\n' \
		ts create-rollup r1m --from m --every 1m --column cpu:max
	check "$m/every_not_multiple" 1 '' 'tsstore: create-rollup: rollup "r": every 90000000000 ns is not a multiple of the every of rollup "r1m" (60000000000 ns)\n' \
		ts create-rollup r --from r1m --every 90s --group 1 --column cpu_max:max
	check "$m/fn_not_held" 1 '' 'tsstore: create-rollup: rollup "r": column "cpu_max" holds the max of "cpu": a rollup of a rollup combines it by max only (or mean, from sum and count)\n' \
		ts create-rollup r --from r1m --every 1h --group 1 --column cpu_max:min
	check "$m/tables_long" 0 'm\ttable\nr1h\trollup of r1m every 1h group 1: cpu:max,cpu:mean\nr1m\trollup of m every 1m group 1: cpu:min,cpu:max,cpu:mean,cpu:first,cpu:last,n:sum,n:count\n' '' \
		ts tables --long
	check "$m/tables" 0 'm\nr1h\nr1m\n' '' ts tables
	check "$m/rollups" 0 'r1m\n' '' ts rollups m
	check "$m/rollups_of_rollup" 0 'r1h\n' '' ts rollups r1m
	check "$m/rollups_none" 0 '' '' ts rollups r1h
	check "$m/rollups_nope" 1 '' 'tsstore: rollups: no such table "nope"\n' ts rollups nope
	check "$m/rollups_no_table" 2 '' "tsstore: rollups: missing TABLE\n$usage_rollups" ts rollups
	check "$m/schema_r1m" 0 'host\tstring\t\t1\nts\ttimestamp\tnow\t2\ncpu_min\tdouble\t0\t-\ncpu_max\tdouble\t0\t-\ncpu_sum\tdouble\t0\t-\ncpu_count\tint64\t0\t-\ncpu_first\tdouble\t0\t-\ncpu_last\tdouble\t0\t-\nn_sum\tint64\t0\t-\nn_count\tint64\t0\t-\n' '' \
		ts schema r1m
	check "$m/schema_r1h" 0 'host\tstring\t\t1\nts\ttimestamp\tnow\t2\ncpu_max\tdouble\t0\t-\ncpu_sum\tdouble\t0\t-\ncpu_count\tint64\t0\t-\n' '' \
		ts schema r1h
	# clients never write a rollup
	check "$m/insert_refused" 1 '' 'tsstore: insert: table "r1h" is a rollup of "r1m": only its maintenance writes it\ninsert: 0 rows stored, 0 rejected, stopped at line 2\n' \
		from r1h.tsv ts insert r1h
	check "$m/delete_refused" 1 '' 'tsstore: delete: table "r1m" is a rollup of "m": only its maintenance writes it\n' \
		ts delete r1m --prefix web1
	check "$m/alter_refused" 1 '' 'tsstore: alter: table "r1m" is a rollup of "m": its schema is fixed by its definition (drop it and create it again)\n' \
		ts alter r1m --add x:int64
	check "$m/ttl_alter" 0 '' '' ts alter r1h --ttl 1000d
	# the source is not dropped under its rollups
	check "$m/drop_source" 1 '' 'tsstore: drop: table "m" is the source of 1 rollup ("r1m"): drop it first\n' \
		ts drop m
	check "$m/drop_middle" 1 '' 'tsstore: drop: table "r1m" is the source of 1 rollup ("r1h"): drop it first\n' \
		ts drop r1m
	# an aggregate with nothing rolled up yet answers from m's rows
	check "$m/explain_empty" 0 'host\tts\tcpu_first\n' 'aggregate: source: m (its own rows)\n' \
		ts aggregate m --every 1h --group 1 --column cpu:first --explain
}

# ---- on the files ----
ts() { "$bin" -d "$tmp/direct" "$@"; }
suite direct

# ---- through tsstored ----
if command -v curl >/dev/null 2>&1; then http=--listen; httpaddr=http:127.0.0.1:0; else http=; httpaddr=; fi
fuse_ok=
if (exec 3<>/dev/fuse) 2>/dev/null && command -v fusermount3 >/dev/null; then
	fuse_ok=1
	mkdir "$tmp/mnt"
	trap 'fusermount3 -u -z "$tmp/mnt" 2>/dev/null; daemon_stop; rm -rf "$tmp"' EXIT
	daemon_start "$tmp/daemon" "$tmp/sock" --listen tcp:127.0.0.1:0 ${http:+$http $httpaddr} \
		--mount "$tmp/mnt"
else
	daemon_start "$tmp/daemon" "$tmp/sock" --listen tcp:127.0.0.1:0 ${http:+$http $httpaddr}
fi
daemon_addr tcp
tcpaddr=$addr
ts() { "$bin" -s "$tmp/sock" "$@"; }
suite socket

mode=maintained
check insert 0 '' 'insert: 1080 rows stored, 0 rejected\n' ts insert m rows.tsv
if wait_rollup r1m m && wait_rollup r1h r1m; then pass; else fail caught_up "no watermark reached its source's version"; fi
ts aggregate m --every 1m --group 1 --column "$cols_1m" --raw >want_1m
ts aggregate m --every 1h --group 1 --column "$cols_1h" --raw >want_1h
expect rows_1m "$(wc -l <want_1m)" -eq 361
check_file r1m_rows 0 want_1m '' ts query r1m
check_file r1h_rows 0 want_1h '' ts query r1h
check insert_late 0 '' 'insert: 4 rows stored, 0 rejected\n' ts insert m late.tsv
if wait_rollup r1m m && wait_rollup r1h r1m; then pass; else fail caught_up_late "no watermark reached its source's version"; fi
ts aggregate m --every 1m --group 1 --column "$cols_1m" --raw >want_1m
ts aggregate m --every 1h --group 1 --column "$cols_1h" --raw >want_1h
expect rows_1m_late "$(wc -l <want_1m)" -eq 363
check_file r1m_rows_late 0 want_1m '' ts query r1m
check_file r1h_rows_late 0 want_1h '' ts query r1h
# One window, by hand: web1's 10:00 minute holds 3 rows and the late one.
check r1m_window 0 'host\tts\tcpu_min\tcpu_max\tcpu_sum\tcpu_count\tcpu_first\tcpu_last\tn_sum\tn_count\nweb1\t2026-11-21T10:00:00Z\t-3.25\t41.25\t70.5\t4\t21.25\t11.25\t10\t4\n' '' \
	ts query r1m --prefix web1,2026-11-21T10:00:00Z
# Queries use it: first and last asked, the rollup answers (--explain),
# the same rows as m's own; --raw never reads it.  (Whether a rollup
# answers a request without first or last depends on the route's
# estimate of what reading it saves: docs/rollups.md section 3.)
ts aggregate m --every 1h --group 1 --column cpu:first,cpu:last,cpu:mean --raw >want_fl
check_file explain_rollup 0 want_fl 'aggregate: source: r1m, a rollup of m (m'"'"'s own rows for the windows it does not answer)\n' \
	ts aggregate m --every 1h --group 1 --column cpu:first,cpu:last,cpu:mean --explain
ts aggregate m --every 1h --group 1 --column cpu:first,cpu:last,cpu:mean --raw \
	--from 2026-11-21T09:59:30Z --to 2026-11-21T13:00:00Z >want_fl_cut
check_file explain_rollup_cut 0 want_fl_cut 'aggregate: source: r1m, a rollup of m (m'"'"'s own rows for the windows it does not answer)\n' \
	ts aggregate m --every 1h --group 1 --column cpu:first,cpu:last,cpu:mean --explain \
	--from 2026-11-21T09:59:30Z --to 2026-11-21T13:00:00Z
check explain_raw 0 'host\tts\tcpu_first\tcpu_max\nweb1\t2026-11-21T09:00:00Z\t0.75\t0.75\n' 'aggregate: source: m (its own rows)\n' \
	ts aggregate m --every 1h --group 1 --column cpu:first,cpu:max --prefix web1 --to 2026-11-21T10:00:00Z --explain --raw
# The rollup's stats: its definition and its lag, caught up.
check stats 0 'rollup_every_ns: 60000000000\nrollup_every: 1m\nrollup_group: 1\nrollup_from_rollup: 0\nrollup_lag_versions: 0\nrollup_lag_ns: 0\nrollup_lag: 0s\nrollup_windows_deleted: 0\nrollup_windows_skipped: 0\nrollup_resets: 0\nrollup_failures: 0\nrollup_last_error: 0\n' '' \
	sh -c "'$bin' -s '$tmp/sock' stats r1m | grep '^rollup_' | grep -v -e '^rollup_watermark' -e '^rollup_source_version' -e '^rollup_runs' -e '^rollup_windows_recomputed'"
check stats_r1h 0 'rollup_every: 1h\nrollup_from_rollup: 1\n' '' \
	sh -c "'$bin' -s '$tmp/sock' stats r1h | grep -e '^rollup_every:' -e '^rollup_from_rollup'"
check stats_plain 0 '' '' sh -c "'$bin' -s '$tmp/sock' stats m | awk '/^rollup_/'"
# The levels: create-rollup is admin; rollups is read.
admin='an admin operation: use the unix socket, or start tsstored with a token (--token FILE) and send it ({"op":"auth","token":…}); loopback-access is write (no token was sent: give it in $TSSTORE_TOKEN or in a file named by $TSSTORE_TOKEN_FILE)'
check create_needs_admin 1 '' "tsstore: create-rollup: $tcpaddr: \"create_rollup\" is $admin\n" \
	"$bin" -s "$tcpaddr" create-rollup r2 --from m --every 1m --column cpu:max
check rollups_is_read 0 'r1m\n' '' "$bin" -s "$tcpaddr" rollups m
mode=

# ---- the protocol's answers ----
if command -v python3 >/dev/null 2>&1; then
	check proto 0 'schema {"ok":true,"columns":[{"name":"host","type":"string","default":""},{"name":"ts","type":"timestamp"},{"name":"cpu_max","type":"double","default":0},{"name":"cpu_sum","type":"double","default":0},{"name":"cpu_count","type":"int64","default":0}],"key":["host","ts"],"ttl":"1000d","version":1,"on_duplicate":"replace","rollup":{"source":"r1m","every":"1h","group":1,"columns":["cpu:max","cpu:mean"]}}
schema_plain_has_rollup False
rollups {"ok":true,"rollups":["r1m"]}
source {"ok":true,"count":8,"source":"r1m"}
source_raw {"ok":true,"count":8}
create_rollup {"ok":true}
no_from {"ok":false,"error":{"code":"EPROTO","message":"missing field \"from\""}}
no_every {"ok":false,"error":{"code":"EPROTO","message":"missing field \"every\""}}
no_columns {"ok":false,"error":{"code":"EPROTO","message":"missing field \"columns\""}}
bad_spec {"ok":false,"error":{"code":"EINVAL","message":"columns[0] \"cpu:median\": want count, sum, min, max, mean, first or last after the colon"}}
spec_not_string {"ok":false,"error":{"code":"EPROTO","message":"columns[0]: expected \"COL:FN\", got a JSON integer"}}
unknown_column {"ok":false,"error":{"code":"ENOENT","message":"columns[1]: no column \"mem\" in table \"m\""}}
unknown_source {"ok":false,"error":{"code":"ENOENT","message":"no such table \"nope\""}}
group_too_big {"ok":false,"error":{"code":"EINVAL","message":"rollup \"r3\": group 2: table \"m\" has 1 key columns before ts (0 to 1 allowed)"}}
not_multiple {"ok":false,"error":{"code":"EINVAL","message":"rollup \"r3\": every 90000000000 ns is not a multiple of the every of rollup \"r1m\" (60000000000 ns)"}}
unknown_field {"ok":false,"error":{"code":"EPROTO","message":"unknown field \"source\" for op \"create_rollup\""}}
insert_refused {"ok":false,"error":{"code":"EREADONLY","message":"table \"r1m\" is a rollup of \"m\": only its maintenance writes it"}}
drop_busy {"ok":false,"error":{"code":"EBUSY","message":"table \"m\" is the source of 2 rollups (\"r1m\", \"r2\"): drop them first"}}
drop_r2 {"ok":true}
' '' python3 -c '
import json, socket, sys
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
f = s.makefile("rw")
def call(req):
    f.write(json.dumps(req) + "\n"); f.flush()
    while True:
        line = f.readline().strip()
        if "\"ok\"" in line:
            return line
print("schema", call({"op":"schema","table":"r1h"}))
print("schema_plain_has_rollup", "rollup" in json.loads(call({"op":"schema","table":"m"})))
print("rollups", call({"op":"rollups","table":"m"}))
agg = {"op":"aggregate","table":"m","from":0,"to":"2026-11-22T00:00:00Z","every":"1h","group":1,"columns":{"cpu":["first","max"]}}
print("source", call(agg))
agg["raw"] = True
print("source_raw", call(agg))
cr = {"op":"create_rollup","table":"r2","from":"m","every":"10m","group":0,"columns":["cpu:max","n:mean"],"ttl":"30d"}
print("create_rollup", call(cr))
def bad(name, **kw):
    req = {"op":"create_rollup","table":"r3","from":"m","every":"1m","columns":["cpu:max"]}
    for k, v in kw.items():
        if v is None: del req[k]
        else: req[k] = v
    print(name, call(req))
bad("no_from", **{"from": None})
bad("no_every", every=None)
bad("no_columns", columns=None)
bad("bad_spec", columns=["cpu:median"])
bad("spec_not_string", columns=[1])
bad("unknown_column", columns=["cpu:max","mem:max"])
bad("unknown_source", **{"from": "nope"})
bad("group_too_big", group=2)
bad("not_multiple", **{"from": "r1m", "every": "90s", "group": 1, "columns": ["cpu_max:max"]})
bad("unknown_field", source="m")
print("insert_refused", call({"op":"insert","table":"r1m","rows":[["web1","2026-11-21T10:00:00Z",1,1,1,1,1,1,1,1]]}))
print("drop_busy", call({"op":"drop","table":"m"}))
print("drop_r2", call({"op":"drop","table":"r2"}))
' "$tmp/sock"
else
	skip "python3 is missing: the protocol's answers are not checked"
fi

# ---- /metrics: the lag of each rollup ----
if [ -n "$http" ]; then
	daemon_addr http
	check metrics 0 'tsstore_rollup_lag_seconds{table="r1h",source="r1m"} 0\ntsstore_rollup_lag_seconds{table="r1m",source="m"} 0\ntsstore_rollup_lag_versions{table="r1h",source="r1m"} 0\ntsstore_rollup_lag_versions{table="r1m",source="m"} 0\ntsstore_rollup_failures_total{table="r1h",source="r1m"} 0\ntsstore_rollup_failures_total{table="r1m",source="m"} 0\n' '' \
		sh -c "curl -s http://${addr#http:}/metrics | grep -e '^tsstore_rollup_lag' -e '^tsstore_rollup_failures'"
	w=$(ts stats r1m | sed -n 's/^rollup_watermark: //p')
	check metrics_watermark 0 "tsstore_rollup_watermark{table=\"r1m\",source=\"m\"} $w\n" '' \
		sh -c "curl -s http://${addr#http:}/metrics | grep '^tsstore_rollup_watermark{table=\"r1m\"'"
	# InfluxQL's GROUP BY time goes through ts_aggregate_open
	# (daemon/influxq.c, agg_series), so a rollup answers it where one
	# pays: here once m may hold replaced rows (a replacing insert of a
	# row as it was), when the raw blocks' statistics no longer answer.
	# The same answer, and r1m's rows read (its aggregate_rows_scanned).
	iq() {
		curl -s -G "http://${addr#http:}/query" --data-urlencode db=x --data-urlencode \
			"q=SELECT max(cpu), mean(cpu), count(n) FROM m WHERE time >= '2026-11-21T09:00:00Z' AND time < '2026-11-21T13:00:00Z' GROUP BY time(1h), host"
	}
	scanned() { ts stats r1m | sed -n 's/^aggregate_rows_scanned: //p'; }
	iq >want_iq
	expect iq_answers "$(grep -o '"values"' want_iq | wc -l)" -eq 3
	s0=$(scanned)
	check replace_as_was 0 '' 'insert: 1 row stored, 0 rejected\n' sh -c \
		"printf 'host\\tts\\tcpu\\tn\\nweb1\\t2026-11-21T10:00:05Z\\t-3.25\\t7\\n' | '$bin' -s '$tmp/sock' insert m --on-duplicate replace"
	if wait_rollup r1m m && wait_rollup r1h r1m; then pass; else fail caught_up_replace "no watermark reached its source's version"; fi
	check_file iq_from_rollup 0 want_iq '' iq
	expect iq_rollup_read "$(scanned)" -gt "$s0"
	# line protocol into a rollup: refused line by line (400: a client
	# must not retry it), not a storage failure (503)
	check write_refused 0 '{"error":"line 1: table \\"r1m\\": table \\"r1m\\" is a rollup of \\"m\\": only its maintenance writes it"}\n\n400\n' '' curl -s -w '\n%{http_code}\n' -XPOST \
		"http://${addr#http:}/write?db=x" --data-binary 'r1m,host=web1 cpu_max=1 1795255200000000000'
else
	skip "curl is missing: /metrics and InfluxQL are not checked"
fi

# ---- the mount: a rollup is a table directory like any ----
if [ -n "$fuse_ok" ]; then
	ts query r1m --from 2026-11-21 --to 2026-11-22 >want_day
	check_file mount_day 0 want_day '' cat "$tmp/mnt/r1m/days/2026-11-21/all.tsv"
	check mount_hours 0 '09.tsv\n10.tsv\n11.tsv\n12.tsv\n' '' \
		sh -c "ls '$tmp/mnt/r1h/days/2026-11-21' | grep '^[0-9].*tsv'"
else
	skip "/dev/fuse cannot be opened or fusermount3 is missing: the mount is not tested"
fi

# ---- SQL: reading a rollup like any table; inserts refused ----
if command -v sqlite3 >/dev/null 2>&1; then
	sql() { sqlite_vtab r1h "$1" "$2"; }
	# r1h's rows (r1h_rows_late: the aggregate over m's own rows), as
	# sqlite3 prints them
	printf 'web1|0.75|0.75|1\nweb1|49.75|4524.25|181\nweb1|49.5|4537.5|180\nweb1|49.75|4497.5|180\nweb2|49.75|4557.5|180\nweb2|99.5|4617.0|181\nweb2|49.75|4477.5|180\nweb3|1.5|1.5|1\n' >want_sql
	check r1h_as_sql 0 'web1\t0.75\t0.75\t1\nweb1\t49.75\t4524.25\t181\nweb1\t49.5\t4537.5\t180\nweb1\t49.75\t4497.5\t180\nweb2\t49.75\t4557.5\t180\nweb2\t99.5\t4617\t181\nweb2\t49.75\t4477.5\t180\nweb3\t1.5\t1.5\t1\n' '' \
		ts query r1h --no-header --columns host,cpu_max,cpu_sum,cpu_count
	check_file sql_socket 0 want_sql '' sql "socket='$tmp/sock'" 'SELECT host, cpu_max, cpu_sum, cpu_count FROM r1h;'
	check sql_insert_socket 1 '' 'tsstore: table "r1h" is a rollup of "r1m": only its maintenance writes it\n' \
		sql "socket='$tmp/sock'" "INSERT INTO r1h VALUES ('web1', 0, 1, 1, 1);"
	check sql_delete_socket 1 '' 'tsstore: table "r1h" is a rollup of "r1m": only its maintenance writes it\n' \
		sql "socket='$tmp/sock'" "DELETE FROM r1h WHERE host = 'web3';"
	check sql_mean 0 'web3|1.5\n' '' sql "socket='$tmp/sock'" \
		"SELECT host, cpu_sum / cpu_count FROM r1h WHERE host = 'web3';"
else
	skip "sqlite3 is missing: the SQL module is not checked"
fi

daemon_stop

# ---- on the files, after tsstored: the same rows, the same route ----
mode=files
ts() { "$bin" -d "$tmp/daemon" "$@"; }
check_file r1m_rows 0 want_1m '' ts query r1m
check_file explain_rollup 0 want_fl 'aggregate: source: r1m, a rollup of m (m'"'"'s own rows for the windows it does not answer)\n' \
	ts aggregate m --every 1h --group 1 --column cpu:first,cpu:last,cpu:mean --explain
if command -v sqlite3 >/dev/null 2>&1; then
	check_file sql_path 0 want_sql '' sqlite_vtab r1h "path='$tmp/daemon'" 'SELECT host, cpu_max, cpu_sum, cpu_count FROM r1h;'
	check sql_insert_path 1 '' 'tsstore: table "r1h" is a rollup of "r1m": only its maintenance writes it\n' \
		sqlite_vtab r1h "path='$tmp/daemon'" "INSERT INTO r1h VALUES ('web1', 0, 1, 1, 1);"
	check sql_delete_path 1 '' 'tsstore: table "r1h" is a rollup of "r1m": only its maintenance writes it\n' \
		sqlite_vtab r1h "path='$tmp/daemon'" "DELETE FROM r1h WHERE host = 'web3';"
fi
check drop_r1h 0 '' '' ts drop r1h
check drop_r1m 0 '' '' ts drop r1m
check drop_m 0 '' '' ts drop m
mode=

finish
