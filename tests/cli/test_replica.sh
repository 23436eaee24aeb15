#!/bin/sh
# test_replica.sh -- sync=replica (issue 33, docs/standby.md section 4):
#   1. a primary under --sync replica with no standby: an insert fails
#      after replica-timeout with EREPLICA, saying the rows are committed
#      here but on no standby;
#   2. failovers: TSSTORE_FAILOVERS rounds (default 10; `make
#      failover-test` runs more), each with a fresh primary A (--sync
#      replica) and standby B; a writer inserts one row per insert into A
#      and records each acknowledged; A is killed (-9) at a random moment
#      (0.2 to 1.2 s after the first row was acknowledged); B is promoted: every acknowledged row is on B
#      (0 lost), B passes check once stopped.
# Prints "failovers F, rows acknowledged N, rows lost L" at the end.
#
# Usage: tests/cli/test_replica.sh TSSTORE-or-BUILDDIR (see lib.sh).
set -u
here=$(cd "$(dirname "$0")" && pwd) # lib.sh changes directory
. "$here/lib.sh"
. "$here/daemons.sh" # start, port_of, await_log; the token; daemons stopped on exit
rounds=${TSSTORE_FAILOVERS:-10}


# ---- 1. no standby: EREPLICA after the timeout ----

start a0.log "$tmp/a0.sock" -d "$tmp/a0" --sync replica --replica-timeout 500ms
a_pid=$pid
check create_alone 0 '' '' "$bin" -s "$tmp/a0.sock" create m --column v:int64 --key ts --ttl 0
printf 'ts\tv\n1795000000\t1\n' >one.tsv
check alone 1 '' 'tsstore: insert: sync=replica: no standby is following, so none acknowledged commit 96 of table "m" within replica-timeout; the rows are committed here, but not known to be on a standby\ninsert: 0 rows stored, 0 rejected, stopped at line 2\n' \
	"$bin" -s "$tmp/a0.sock" --time-unit s insert m one.tsv
check alone_committed 0 'v\n1\n' '' "$bin" -s "$tmp/a0.sock" query m --columns v
kill -TERM "$a_pid"
wait "$a_pid"

# ---- 2. failovers ----

# writer SOCK FILE: one row per insert into SOCK, each acknowledged one's
# number appended to FILE, until an insert fails.
writer() {
	i=0
	while :; do
		i=$((i + 1))
		printf 'ts\tv\n%d\t%d\n' $((1795000000 + i)) $i |
			"$bin" -s "$1" --time-unit s insert m - >/dev/null 2>&1 || break
		echo $i >>"$2"
	done
}

acked_total=0 lost_total=0 failovers=0
r=0
while [ $r -lt "$rounds" ]; do
	r=$((r + 1))
	d=$tmp/r$r
	mkdir "$d"
	start a$r.log "$d/a.sock" -d "$d/a" --listen tcp:127.0.0.1:0 --token "$tmp/token" \
		--sync replica --replica-timeout 5s
	a_pid=$pid
	a_port=$(port_of a$r.log tcp)
	"$bin" -s "$d/a.sock" create m --column v:int64 --key ts --ttl 0
	start b$r.log "$d/b.sock" -d "$d/b" --follow "tcp:127.0.0.1:$a_port" --token "$tmp/token"
	b_pid=$pid
	await_log following b$r.log '^tsstored: following '
	: >"$d/acked"
	writer "$d/a.sock" "$d/acked" &
	w_pid=$!
	# a random moment, 0.2 to 1.2 s after the first row was acknowledged
	i=0
	while [ ! -s "$d/acked" ] && [ $i -lt 300 ]; do
		sleep 0.05
		i=$((i + 1))
	done
	ms=$(( $(od -An -N2 -tu2 /dev/urandom | tr -d ' ') % 1000 + 200 ))
	sleep "$(printf '%d.%03d' $((ms / 1000)) $((ms % 1000)))"
	kill -KILL "$a_pid"
	wait "$a_pid" 2>/dev/null
	wait "$w_pid"
	"$bin" -s "$d/b.sock" promote >"$d/promote" 2>&1 || { cat "$d/promote"; }
	"$bin" -s "$d/b.sock" query m --columns v --no-header | sort -n >"$d/have"
	sort -n "$d/acked" >"$d/want"
	acked=$(wc -l <"$d/want")
	lost=$(comm -23 "$d/want" "$d/have" | wc -l)
	acked_total=$((acked_total + acked))
	lost_total=$((lost_total + lost))
	failovers=$((failovers + 1))
	expect "round${r}_acked" "$acked" -gt 0
	expect "round${r}_lost" "$lost" -eq 0
	check "round${r}_epoch" 0 'role: primary\nepoch: 2\n' '' sed -n '/^role: /p; /^epoch: /p' "$d/promote"
	kill -TERM "$b_pid"
	wait "$b_pid"
	check "round${r}_check" 0 '' '' "$bin" -d "$d/b" check
	rm -rf "$d"
done
echo "failovers $failovers, rows acknowledged $acked_total, rows lost $lost_total"

finish
