#!/bin/sh
# test_daemon_life.sh -- tsstored as an operator runs it (issue 31, "the
# daemon's life"):
#   1. --check-config: the example configuration installed for the
#      systemd unit passes, a wrong file fails with the line that is
#      wrong, nothing is created; a token file others may read is warned
#      about;
#   2. the log: a wrong token over TCP and over HTTP, and a request above
#      the client's level, each one line naming the listener and the
#      client's address; a connection refused at max-connections; at most
#      10 lines a kind however many a client causes;
#   3. a damaged tablet: its quarantine logged with table, file and
#      reason, and tablets_quarantined still 1 after a restart (it counts
#      the files of quarantine/), 0 once they are removed;
#   4. a failed flush: logged with table, file and reason;
#   5. a failed merge: the same (the database on a small tmpfs, filled up
#      before the merge: root only, as the mount tests);
#   6. a table no client touches after a restart is maintained all the
#      same: its due flush runs and its rows past the TTL are expired.
#
# Usage: tests/cli/test_daemon_life.sh TSSTORE-or-BUILDDIR (see lib.sh).
set -u
src=$(cd "$(dirname "$0")/../.." && pwd) # before lib.sh moves to $tmp
. "$(dirname "$0")/lib.sh"
unset TSSTORE_TOKEN TSSTORE_TOKEN_FILE

# log_lines PATTERN: the daemon's log lines matching PATTERN, the
# clients' ports replaced by PORT (the kernel chooses them) and the id of
# a temporary tablet by ID.
log_lines() {
	grep -e "$1" "$tmp/tsstored.log" |
		sed -e 's/ from 127\.0\.0\.1:[0-9]*/ from 127.0.0.1:PORT/' -e 's/\.tmp-[0-9a-f]*\.tab/.tmp-ID.tab/'
}

# await_log PATTERN: wait (10 s at most) until the log has a line
# matching PATTERN.
await_log() {
	i=0
	while ! grep -q -e "$1" "$tmp/tsstored.log" && [ $i -lt 200 ]; do
		sleep 0.05
		i=$((i + 1))
	done
}

# ---- 1. --check-config ----

check example_conf_checks 0 '' '' "$tsstored" --config "$src/daemon/tsstore.conf.example" --check-config
printf 'data = %s/nodb\nworkers = many\n' "$tmp" >bad.conf
check bad_conf_line 2 '' 'tsstored: bad.conf:2: workers: "many" is not a positive integer\n' \
	"$tsstored" --config bad.conf --check-config
expect check_config_creates_nothing ! -e "$tmp/nodb"
check check_config_needs_token 2 '' 'tsstored: --listen: tcp:0.0.0.0:7400 is not a loopback address: it needs --token FILE\n' \
	"$tsstored" --listen tcp:0.0.0.0:7400 --check-config
echo s3cret >open.tok
chmod 644 open.tok
check token_readable_by_others_warned 0 '' 'tsstored: warning: --token: open.tok: others may read the token (mode 0644); chmod o-r open.tok\n' \
	"$tsstored" --token open.tok --check-config
echo s3cret >token
chmod 600 token
check token_private_quiet 0 '' '' "$tsstored" --token token --check-config

# ---- 2. refusals in the log ----

daemon_start "$tmp/db" "$tmp/sock" --listen tcp:127.0.0.1:0 --listen http:127.0.0.1:0 \
	--token "$tmp/token" --max-connections 2
daemon_addr tcp
tcp=$addr
daemon_addr http
http=${addr#http:}
ts() { "$bin" -s "$tmp/sock" "$@"; }

env TSSTORE_TOKEN=n0tTh3T0ken "$bin" -s "$tcp" tables >/dev/null 2>&1
"$bin" -s "$tcp" tables >/dev/null 2>&1
if command -v curl >/dev/null 2>&1; then
	curl -s -o /dev/null -H 'Authorization: Token n0tTh3T0ken' --data-binary 'm v=1' "http://$http/write?db=x"
	curl -s -o /dev/null "http://$http/metrics"
	await_log 'GET /metrics'
	check http_auth_failure_logged 0 "tsstored: $addr from 127.0.0.1:PORT: POST /write: authentication failed: wrong token (401)\n" '' \
		log_lines 'POST /write'
	check http_refusal_logged 0 "tsstored: $addr from 127.0.0.1:PORT: refused (401): GET /metrics is a read operation: send the token (\"Authorization: Token <token>\", or Bearer, or the query parameter p); loopback-access is none\n" '' \
		log_lines 'GET /metrics'
else
	skip "curl is missing: the HTTP listener's log lines are not tested"
fi
check tcp_auth_failure_logged 0 "tsstored: $tcp from 127.0.0.1:PORT: authentication failed: wrong token; connection closed\n" '' \
	log_lines 'authentication failed: wrong token; connection'
check tcp_refusal_logged 0 "tsstored: $tcp from 127.0.0.1:PORT: refused: \"tables\" is a read operation: send the token ({\"op\":\"auth\",\"token\":…}) or use the unix socket; loopback-access is none\n" '' \
	log_lines 'refused: "tables"'
check tokens_never_logged 1 '' '' grep -e n0tTh3T0ken -e s3cret "$tmp/tsstored.log"

# Eleven more wrong tokens: ten lines of a kind a minute at most.
for i in 1 2 3 4 5 6 7 8 9 10 11; do
	env TSSTORE_TOKEN=wrong "$bin" -s "$tcp" tables >/dev/null 2>&1
done
check auth_failures_bounded 0 '10\n' '' sh -c "grep -c 'authentication failed' '$tmp/tsstored.log'"

# max-connections 2: two clients held open (inserts reading a pipe that
# stays open), the third refused.
ts create m --column host:string --column v:int64 --key host,ts
(sleep 4 | ts insert m - >/dev/null 2>&1) &
held1=$!
(sleep 4 | ts insert m - >/dev/null 2>&1) &
held2=$!
# a third client, until both are connected and it is refused (a holder
# may be refused too, if it comes while a probe is still counted: the
# same line, as a unix socket's clients are named by the listener)
sleep 0.5
i=0
while ts tables >/dev/null 2>&1 && [ $i -lt 30 ]; do
	sleep 0.1
	i=$((i + 1))
done
wait $held1 $held2
check max_connections_refusal_logged 0 "tsstored: unix:$tmp/sock: connection refused: max-connections (2) are open\n" '' \
	sh -c "grep -e 'connection refused' '$tmp/tsstored.log' | sort -u"

# ---- 3. a damaged tablet: quarantined, logged, counted across restarts ----

printf 'host\tts\tv\nh1\t2026-11-21T10:00:00Z\t1\nh2\t2026-11-21T10:00:00Z\t2\n' >rows.tsv
ts create cpu --column host:string --column v:int64 --key host,ts
ts insert cpu rows.tsv 2>/dev/null
ts flush
tablet=$tmp/db/cpu/tablets/0000000000000001.tab
# a byte of block 0 (after the 32-byte header and the block's 16-byte header)
printf '\377' | dd of="$tablet" bs=1 seek=55 conv=notrunc 2>/dev/null
check damaged_query 1 '' "tsstore: query: tablet $tablet: damaged block 0: checksum mismatch\n" \
	sh -c "'$bin' -s '$tmp/sock' query cpu >/dev/null"
await_log 'quarantined'
check quarantine_logged 0 "tsstored: table \"cpu\": tablet $tablet quarantined (moved into $tmp/db/cpu/quarantine/; its rows are no longer read): tablet $tablet: damaged block 0: checksum mismatch\n" '' \
	log_lines 'quarantined'
quarantined() { ts stats cpu | grep '^tablets_quarantined:'; }
check quarantined_counted 0 'tablets_quarantined: 1\n' '' quarantined
daemon_stop
daemon_start "$tmp/db" "$tmp/sock"
check quarantined_after_restart 0 'tablets_quarantined: 1\n' '' quarantined
daemon_stop
rm "$tmp/db/cpu/quarantine/0000000000000001.tab"
daemon_start "$tmp/db" "$tmp/sock"
check quarantined_files_removed 0 'tablets_quarantined: 0\n' '' quarantined

# ---- 4. a failed flush ----

printf 'host\tts\tv\nh3\t2026-11-21T11:00:00Z\t3\n' >more.tsv
ts insert cpu more.tsv 2>/dev/null
# tablets/ is a file now: no tablet can be written there, whoever runs
# the test (root too)
rm -r "$tmp/db/cpu/tablets"
: >"$tmp/db/cpu/tablets"
ts flush >/dev/null 2>&1
await_log 'flush failed'
check flush_failure_logged 0 "tsstored: table \"cpu\": flush failed, retrying with backoff: flush of table \"cpu\": create $tmp/db/cpu/tablets/.tmp-ID.tab: Not a directory\n" '' \
	log_lines 'flush failed'
daemon_stop

# ---- 5. a failed merge ----
# Two tablets of one period flushed with merges off, each about 1 MiB of
# random text; the 24 MiB file system then filled but for 512 KiB, and the
# daemon started again with merges on: the merge cannot write its output.
if [ "$(id -u)" != 0 ]; then
	skip "not root: no tmpfs can be mounted, the failed merge is not tested"
elif ! mkdir "$tmp/small" || ! mount -t tmpfs -o size=24m tsstore-test "$tmp/small"; then
	skip "tmpfs cannot be mounted: the failed merge is not tested"
else
	trap 'umount -l "$tmp/small" 2>/dev/null; daemon_stop; rm -rf "$tmp"' EXIT
	sdb=$tmp/small/db
	daemon_start "$sdb" "$tmp/sock" --no-merge --log-segment-size 1M
	ts create m --column k:string --column s:string --key k,ts
	for part in 1 2; do
		# 700 rows of 1.5 KB of random letters: a tablet LZO cannot shrink
		head -c 1200000 /dev/urandom | base64 -w 1500 |
			awk -v p=$part 'BEGIN { print "k\ts" } { print p "-" NR "\t" $0 }' >big.tsv
		ts insert m big.tsv >/dev/null 2>&1
		ts flush m
	done
	tablets=$(ls "$sdb/m/tablets" | wc -l)
	daemon_stop
	dd if=/dev/zero of="$tmp/small/fill" bs=64k 2>/dev/null
	truncate -s -512K "$tmp/small/fill"
	daemon_start "$sdb" "$tmp/sock" --merge-delay 0 --log-segment-size 1M
	await_log 'merge failed'
	check merge_failure_logged 0 "tsstored: table \"m\": merge failed, retrying with backoff: merge in table \"m\": write $sdb/m/tablets/.tmp-ID.tab: No space left on device\n" '' \
		sh -c "log_lines() { grep -e \"\$1\" '$tmp/tsstored.log' | sed -e 's/\\.tmp-[0-9a-f]*\\.tab/.tmp-ID.tab/' | sort -u; }; log_lines 'merge failed'"
	expect two_tablets_before "$tablets" -eq 2
	daemon_stop
	umount -l "$tmp/small"
fi

# ---- 6. an untouched table is maintained after a restart ----
# Rows of 11:30 in a table with a TTL of 1 h, left in its log by the
# command; the daemon started at 15:00 must flush them (their 4-hour
# period ended) and expire the tablet without any client asking for the
# table: its DESCRIPTOR changes, and then it holds no row.
export TSSTORE_NOW=2026-11-21T12:00:00Z
adb=$tmp/adb
"$bin" -d "$adb" create e --column host:string --column v:int64 --key host,ts --ttl 1h
printf 'host\tts\tv\nh1\t2026-11-21T11:30:00Z\t1\nh2\t2026-11-21T11:30:00Z\t2\n' >e.tsv
"$bin" -d "$adb" insert e e.tsv >/dev/null 2>&1
cp "$adb/e/DESCRIPTOR" desc.before
export TSSTORE_NOW=2026-11-21T15:00:00Z
daemon_start "$adb" "$tmp/sock"
i=0
while cmp -s desc.before "$adb/e/DESCRIPTOR" && [ $i -lt 200 ]; do
	sleep 0.05
	i=$((i + 1))
done
daemon_stop
check untouched_table_maintained 0 'tablets: 0\nfilling_rows: 0\n' '' \
	sh -c "'$bin' -d '$adb' stats e | grep -e '^filling_rows:' -e '^tablets:'"
unset TSSTORE_NOW

finish
