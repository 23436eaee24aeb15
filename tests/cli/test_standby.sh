#!/bin/sh
# test_standby.sh -- tsstored --follow (issue 33, docs/standby.md): two
# real daemons, a primary and its standby:
#   1. rows written to the primary (the JSON-lines insert, and POST
#      /write when curl is installed) are read from the standby, exactly;
#      a table created after the standby began following is shipped too,
#      and one whose first rows come after (no connection lost for it);
#   2. a write to the standby is refused naming the primary: EREADONLY
#      over JSON lines, 503 over HTTP;
#   3. status (the stats op): role, primary, connected, lag 0 once the
#      primary is quiet; /metrics' tsstore_standby_* gauges;
#   4. kill -9 of the standby: its directory (stopped) passes check and
#      holds the primary's rows; restarted, it resumes -- no tablet byte
#      is sent again -- and catches up;
#   5. kill -9 of the primary, restarted on its port: the standby says it
#      is not connected, reconnects and catches up; another database (of
#      another lineage) on that port is refused, the standby's rows kept;
#   6. both stopped: check passes on the standby's directory and every
#      table's rows are the primary's.
#
# Usage: tests/cli/test_standby.sh TSSTORE-or-BUILDDIR (see lib.sh).
set -u
here=$(cd "$(dirname "$0")" && pwd) # lib.sh changes directory
. "$here/lib.sh"
. "$here/daemons.sh" # start, port_of, await_equal; the token; daemons stopped on exit
TSSTORE_NOW=2026-11-22T12:00:00Z
export TSSTORE_NOW

P=$tmp/p.sock
S=$tmp/s.sock
primary_pid=
standby_pid=

start_primary() {
	start p.log "$P" -d "$tmp/p" --listen "tcp:127.0.0.1:${tcp_port:-0}" \
		--listen "http:127.0.0.1:${http_port:-0}" --token "$tmp/token"
	primary_pid=$pid
}

start_standby() {
	start s.log "$S" -d "$tmp/s" --listen http:127.0.0.1:0 --follow "tcp:127.0.0.1:$tcp_port" \
		--token "$tmp/token"
	standby_pid=$pid
	standby_http=$(port_of s.log http)
}

# await NAME COMMAND...: wait (15 s at most) until COMMAND's stdout on
# the standby equals the same COMMAND's on the primary; then check it.
await() {
	name=$1
	shift
	await_equal "$name" "$P" "$S" "$@"
}

# status_is NAME WANT: wait (15 s at most) until the standby's status,
# without its frame and byte counters, is WANT (a printf format).
status_is() {
	printf "$2" >"$tmp/want_status"
	i=0
	while ! { "$bin" -s "$S" status | grep -v -e '^frames:' -e '_bytes:' |
			cmp -s - "$tmp/want_status"; } && [ $i -lt 300 ]; do
		sleep 0.05
		i=$((i + 1))
	done
	"$bin" -s "$S" status | grep -v -e '^frames:' -e '_bytes:' >"$tmp/status_now"
	check_file "$1" 0 "$tmp/want_status" '' cat "$tmp/status_now"
}

# stat_of NAME: one counter of the standby's status.
stat_of() {
	"$bin" -s "$S" status | sed -n "s/^$1: //p"
}

rows() { printf 'host\tts\tv\n'; for r in "$@"; do printf '%s\n' "$r"; done; }

# ---- 1. rows written to the primary, read from the standby ----

start_primary
tcp_port=$(port_of p.log tcp)
http_port=$(port_of p.log http)
check create 0 '' '' "$bin" -s "$P" create m --column host:string --column v:int64 --key host,ts \
	--ttl 0
rows 'h1	2026-11-22T10:00:00Z	1' 'h2	2026-11-22T10:00:01Z	2' >r1.tsv
check insert 0 '' 'insert: 2 rows stored, 0 rejected\n' "$bin" -s "$P" insert m r1.tsv
# a table with no log yet when the standby begins: its first rows later
check create_empty 0 '' '' "$bin" -s "$P" create e --column k:string --key k,ts --ttl 0
start_standby
await empty_table query e
printf 'k\tts\ny\t2026-11-22T11:30:00Z\n' >e.tsv
check insert_empty 0 '' 'insert: 1 row stored, 0 rejected\n' "$bin" -s "$P" insert e e.tsv
await empty_table_rows query e
m_rows='host\tts\tv\nh1\t2026-11-22T10:00:00Z\t1\nh2\t2026-11-22T10:00:01Z\t2\n'
await query query m
check query_exact 0 "$m_rows" '' "$bin" -s "$S" query m
status_is status "role: standby\nepoch: 1\nprimary: tcp:127.0.0.1:$tcp_port\nconnected: yes\nlag_lsn: 0\nlag_seconds: 0.000\nconnects: 1\n"
check status_primary 0 'role: primary\nepoch: 1\n' '' "$bin" -s "$P" status
# a table created after the standby began
check create_later 0 '' '' "$bin" -s "$P" create n --column k:string --key k,ts --ttl 0
printf 'k\tts\nx\t2026-11-22T11:00:00Z\n' >n.tsv
check insert_later 0 '' 'insert: 1 row stored, 0 rejected\n' "$bin" -s "$P" insert n n.tsv
await created_later query n
have_curl=0
if command -v curl >/dev/null 2>&1; then
	have_curl=1
	check http_write 0 '204' '' curl -sS --max-time 10 -o /dev/null -w '%{http_code}' \
		-H 'Authorization: Token s3cret' --data-binary 'cpu,host=a usage=1.5 1795000000000000000' \
		"http://127.0.0.1:$http_port/write?precision=ns"
	await http_rows query cpu
	check http_rows_exact 0 'host\tts\tusage\na\t2026-11-18T11:06:40Z\t1.5\n' '' \
		"$bin" -s "$S" query cpu
else
	skip "curl is not installed (scripts/deps.sh installs it): POST /write on either side is not tried"
fi

# ---- 2. writes to the standby are refused, naming the primary ----

refusal="read-only standby of tcp:127.0.0.1:$tcp_port"
check refused_insert 1 '' "tsstore: insert: $refusal: \"insert\" would change the database; send it to the primary\ninsert: 0 rows stored, 0 rejected, stopped at line 2\n" \
	"$bin" -s "$S" insert m r1.tsv
check refused_create 1 '' "tsstore: create: $refusal: \"create\" would change the database; send it to the primary\n" \
	"$bin" -s "$S" create z --column k:string --key k,ts
check refused_drop 1 '' "tsstore: drop: $refusal: \"drop\" would change the database; send it to the primary\n" \
	"$bin" -s "$S" drop m
check refused_flush 1 '' "tsstore: flush: $refusal: \"flush\" would change the database; send it to the primary\n" \
	"$bin" -s "$S" flush m
check reads_allowed 0 'cpu\ne\nm\nn\n' '' "$bin" -s "$S" tables
if [ $have_curl = 1 ]; then
	check http_refused 0 '503' '' curl -sS --max-time 10 -w '%{http_code}' -o "$tmp/body" \
		-H 'Authorization: Token s3cret' --data-binary 'cpu,host=b usage=2 1795000000000000000' \
		"http://127.0.0.1:$standby_http/write?precision=ns"
	check http_refused_body 0 "{\"error\":\"$refusal: POST /write would change the database; send it to the primary\"}\n" '' \
		cat "$tmp/body"
	curl -sS --max-time 10 -H 'Authorization: Token s3cret' "http://127.0.0.1:$standby_http/metrics" |
		grep -e '^tsstore_standby_connected ' -e '^tsstore_standby_lag' \
		-e '^tsstore_standby_connects_total ' >"$tmp/metrics"
	check metrics 0 'tsstore_standby_connected 1\ntsstore_standby_lag_bytes 0\ntsstore_standby_lag_seconds 0.000\ntsstore_standby_connects_total 1\n' '' \
		cat "$tmp/metrics"
fi

# ---- 4. kill -9 the standby; restart it: it resumes ----

check flush_primary 0 '' '' "$bin" -s "$P" flush m
i=0
while [ "$(stat_of tablet_bytes)" = 0 ] && [ $i -lt 300 ]; do sleep 0.05; i=$((i + 1)); done
expect tablet_shipped "$(stat_of tablet_bytes)" -gt 0
status_is status_after_flush "role: standby\nepoch: 1\nprimary: tcp:127.0.0.1:$tcp_port\nconnected: yes\nlag_lsn: 0\nlag_seconds: 0.000\nconnects: 1\n"
kill -KILL "$standby_pid"
wait "$standby_pid" 2>/dev/null
standby_pid=
check killed_check 0 '' '' "$bin" -d "$tmp/s" check
check killed_rows 0 "$m_rows" '' "$bin" -d "$tmp/s" query m
rows 'h3	2026-11-22T10:00:03Z	3' >r3.tsv
check insert_while_down 0 '' 'insert: 1 row stored, 0 rejected\n' "$bin" -s "$P" insert m r3.tsv
start_standby
await resumed query m
status_is status_resumed "role: standby\nepoch: 1\nprimary: tcp:127.0.0.1:$tcp_port\nconnected: yes\nlag_lsn: 0\nlag_seconds: 0.000\nconnects: 1\n"
# the tablet it had is not sent again: only the new commit's log bytes
check resumed_no_tablet 0 '0\n' '' stat_of tablet_bytes
expect resumed_log_bytes "$(stat_of log_bytes)" -gt 0

# ---- 5. kill -9 the primary; restart it on its port ----

kill -KILL "$primary_pid"
wait "$primary_pid" 2>/dev/null
primary_pid=
status_is status_cut "role: standby\nepoch: 1\nprimary: tcp:127.0.0.1:$tcp_port\nconnected: no\nlag_lsn: 0\nlag_seconds: 0.000\nconnects: 1\n"
start_primary
rows 'h4	2026-11-22T10:00:04Z	4' >r4.tsv
check insert_after_restart 0 '' 'insert: 1 row stored, 0 rejected\n' "$bin" -s "$P" insert m r4.tsv
await reconnected query m
status_is status_reconnected "role: standby\nepoch: 1\nprimary: tcp:127.0.0.1:$tcp_port\nconnected: yes\nlag_lsn: 0\nlag_seconds: 0.000\nconnects: 2\n"
grep -c 'follow tcp:127.0.0.1:[0-9]*: .*; again in [0-9]* s' "$tmp/s.log" >"$tmp/cuts"
expect cut_logged "$(cat "$tmp/cuts")" -ge 1

# ---- 5b. another database on the primary's port: refused, nothing lost ----

"$bin" -s "$S" query m >"$tmp/m_before"
kill -TERM "$primary_pid"
wait "$primary_pid"
start p2.log "$tmp/p2.sock" -d "$tmp/p2" --listen "tcp:127.0.0.1:$tcp_port" --token "$tmp/token"
other_pid=$pid
i=0
while ! grep -q 'follow: the primary answers EINVAL: field "lineage"' "$tmp/s.log" && [ $i -lt 300 ]; do
	sleep 0.05
	i=$((i + 1))
done
sed -n 's/^tsstored: follow tcp:127\.0\.0\.1:[0-9]*: \(follow: the primary answers EINVAL: field "lineage"\).*/\1/p' \
	"$tmp/s.log" | sed -n 1p >"$tmp/lineage_line"
check other_lineage_refused 0 'follow: the primary answers EINVAL: field "lineage"\n' '' \
	cat "$tmp/lineage_line"
check_file other_lineage_rows_kept 0 "$tmp/m_before" '' "$bin" -s "$S" query m
kill -TERM "$other_pid"
wait "$other_pid"
start_primary
status_is status_back "role: standby\nepoch: 1\nprimary: tcp:127.0.0.1:$tcp_port\nconnected: yes\nlag_lsn: 0\nlag_seconds: 0.000\nconnects: 3\n"

# ---- 6. both stopped: the standby's directory is the primary's ----

kill -TERM "$standby_pid" "$primary_pid"
wait "$standby_pid" "$primary_pid"
standby_pid= primary_pid=
expect standby_stopped_log "$(tail -1 "$tmp/s.log")" = 'tsstored: stopped'
check final_check 0 '' '' "$bin" -d "$tmp/s" check
for t in e m n cpu; do
	[ $t = cpu ] && [ $have_curl = 0 ] && continue
	"$bin" -d "$tmp/p" query $t >"$tmp/want_$t"
	check_file "final_rows_$t" 0 "$tmp/want_$t" '' "$bin" -d "$tmp/s" query $t
done
tables_want='e\nm\nn\n'
[ $have_curl = 1 ] && tables_want="cpu\\n$tables_want"
check final_tables 0 "$tables_want" '' "$bin" -d "$tmp/s" tables

finish
