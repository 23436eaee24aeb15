#!/bin/sh
# test_replica.sh -- sync=replica (issue 33, docs/standby.md section 4):
#   1. a primary under --sync replica with no standby: an insert fails
#      after replica-timeout with EREPLICA, saying the rows are committed
#      here but on no standby; a delete likewise, its deletion committed;
#      a POST /write likewise (503), its points committed, and at once
#      when it wrote to more tables than it can follow;
#   2. failovers: TSSTORE_FAILOVERS rounds (default 10; `make
#      failover-test` runs more), each with a fresh primary A (--sync
#      replica) and standby B; a writer inserts one row per insert into A
#      and records each acknowledged (an insert refused, EREPLICA while
#      the link is down, is not); in the first round, a POST /write to A
#      is answered 204 only once B holds its points (read from B at
#      once); A is killed (-9) at a random moment
#      (0.2 to 1.2 s after the first row was acknowledged); B is
#      promoted: every acknowledged row is on B (0 lost), B passes check
#      once stopped.  Every second round B follows A through
#      tests/cli/linkproxy.py, which cuts and stalls the link at random
#      (its seed printed), and A dies 0.5 to 3 s in.  In the other
#      rounds A then returns at its address: promoted B fences it,
#      and killed (-9) and started again it is still fenced: status
#      says so, an insert is refused.
# Prints "failovers F (P through the proxy: C cuts, S stalls), rows
# acknowledged N, inserts not acknowledged R (refused, or failed once A
# was killed), rows lost L, old primaries fenced on return O" at the
# end.
#
# Usage: tests/cli/test_replica.sh TSSTORE-or-BUILDDIR (see lib.sh).
set -u
here=$(cd "$(dirname "$0")" && pwd) # lib.sh changes directory
. "$here/lib.sh"
. "$here/daemons.sh" # start, port_of, await_log, writer, proxy_*; the token; daemons stopped on exit
rounds=${TSSTORE_FAILOVERS:-10}


# ---- 1. no standby: EREPLICA after the timeout ----

start a0.log "$tmp/a0.sock" -d "$tmp/a0" --sync replica --replica-timeout 500ms \
	--listen http:127.0.0.1:0
a_pid=$pid
a_http=$(port_of a0.log http)
check create_alone 0 '' '' "$bin" -s "$tmp/a0.sock" create m --column v:int64 --key ts --ttl 0
printf 'ts\tv\n1795000000\t1\n' >one.tsv
check alone 1 '' 'tsstore: insert: sync=replica: no standby is following, so none acknowledged commit 96 of table "m" within replica-timeout; the rows are committed here, but not known to be on a standby\ninsert: 0 rows stored, 0 rejected, stopped at line 2\n' \
	"$bin" -s "$tmp/a0.sock" --time-unit s insert m one.tsv
check alone_committed 0 'v\n1\n' '' "$bin" -s "$tmp/a0.sock" query m --columns v
# a delete waits as an insert does, and is committed all the same
check alone_delete 1 '' 'tsstore: delete: sync=replica: no standby is following, so none acknowledged commit 320 of table "m" within replica-timeout; the deletion is committed here, but not known to be on a standby\n' \
	"$bin" -s "$tmp/a0.sock" --time-unit s delete m --from 1795000000 --to 1795000001
check alone_deleted 0 'v\n' '' "$bin" -s "$tmp/a0.sock" query m --columns v
# a POST /write waits as an insert does: 503, its points committed
if command -v curl >/dev/null 2>&1; then
	check alone_http 0 '{"error":"sync=replica: no standby is following, so none acknowledged commit 96 of table \"hm\" within replica-timeout; the points are committed here, but not known to be on a standby"}\n 503' '' \
		curl -sS --max-time 10 -w ' %{http_code}' --data-binary 'hm,h=a v=7i 1795000000000000000' \
		"http://127.0.0.1:$a_http/write?precision=ns"
	check alone_http_committed 0 'v\n7\n' '' "$bin" -s "$tmp/a0.sock" query hm --columns v
	# a write to more tables than it can follow (64): 503 at once, stored
	i=0
	: >many.lp
	while [ $i -lt 65 ]; do
		printf 'many%d v=%di 1795000000000000000\n' $i $i >>many.lp
		i=$((i + 1))
	done
	check alone_http_many 0 '{"error":"sync=replica: the write committed to more than 64 tables, which cannot be followed to a standby; the points are committed here, but not known to be on a standby"}\n 503' '' \
		curl -sS --max-time 60 -w ' %{http_code}' --data-binary @many.lp \
		"http://127.0.0.1:$a_http/write?precision=ns"
	check alone_http_many_committed 0 'v\n64\n' '' "$bin" -s "$tmp/a0.sock" query many64 --columns v
else
	skip "curl is not installed (scripts/deps.sh installs it): POST /write under sync=replica is not tried"
fi
kill -TERM "$a_pid"
wait "$a_pid"

# ---- 2. failovers ----

have_python=0
command -v python3 >/dev/null 2>&1 && have_python=1
[ $have_python = 1 ] ||
	skip "python3 is missing (scripts/deps.sh installs it): no failover goes through the link proxy"

acked_total=0 lost_total=0 failovers=0 refused_total=0 proxied=0 cuts=0 stalls=0 fenced=0
r=0
while [ $r -lt "$rounds" ]; do
	r=$((r + 1))
	d=$tmp/r$r
	mkdir "$d"
	start a$r.log "$d/a.sock" -d "$d/a" --listen tcp:127.0.0.1:0 --token "$tmp/token" \
		--sync replica --replica-timeout 2s --listen http:127.0.0.1:0
	a_pid=$pid
	a_port=$(port_of a$r.log tcp)
	a_http=$(port_of a$r.log http)
	"$bin" -s "$d/a.sock" create m --column v:int64 --key ts --ttl 0
	follow=$a_port proxy_pid= span=1000 from=200
	if [ $((r % 2)) = 0 ] && [ $have_python = 1 ]; then
		proxy_start "$d" "$a_port"
		follow=$proxy_port
		span=2500 from=500
		proxied=$((proxied + 1))
	fi
	start b$r.log "$d/b.sock" -d "$d/b" --follow "tcp:127.0.0.1:$follow" --token "$tmp/token"
	b_pid=$pid
	await_log following b$r.log '^tsstored: following '
	if [ $r = 1 ] && command -v curl >/dev/null 2>&1; then
		# POST /write answered only once the standby holds the points:
		# read from it at once, they are there
		check http_replica 0 '204' '' curl -sS --max-time 10 -o /dev/null -w '%{http_code}' \
			-H 'Authorization: Token s3cret' --data-binary 'hm,h=a v=5i 1795000000000000000' \
			"http://127.0.0.1:$a_http/write?precision=ns"
		check http_replica_on_standby 0 'v\n5\n' '' "$bin" -s "$d/b.sock" query hm --columns v
	fi
	: >"$d/acked"
	writer "$d/a.sock" "$d/acked" &
	w_pid=$!
	# a random moment, 0.2 to 1.2 s after the first row was acknowledged
	i=0
	while [ ! -s "$d/acked" ] && [ $i -lt 300 ]; do
		sleep 0.05
		i=$((i + 1))
	done
	ms=$(( $(od -An -N2 -tu2 /dev/urandom | tr -d ' ') % span + from ))
	sleep "$(printf '%d.%03d' $((ms / 1000)) $((ms % 1000)))"
	kill -KILL "$a_pid"
	wait "$a_pid" 2>/dev/null
	: >"$d/acked.stop"
	wait "$w_pid"
	[ -z "$proxy_pid" ] || proxy_stop "$d"
	"$bin" -s "$d/b.sock" promote >"$d/promote" 2>&1 || { cat "$d/promote"; }
	"$bin" -s "$d/b.sock" query m --columns v --no-header | sort >"$d/have"
	sort "$d/acked" >"$d/want"
	acked=$(wc -l <"$d/want")
	if [ "$follow" = "$a_port" ]; then
		# the old primary returns at its address: the promoted standby
		# fences it (link.c fence_old), and it stays fenced when it is
		# killed and started again
		start a${r}back.log "$d/a.sock" -d "$d/a" --listen "tcp:127.0.0.1:$a_port" \
			--token "$tmp/token" --sync replica --replica-timeout 2s
		a_pid=$pid
		await_log "round${r}_fenced" a${r}back.log 'stale primary'
		kill -KILL "$a_pid"
		wait "$a_pid" 2>/dev/null
		start a${r}again.log "$d/a.sock" -d "$d/a" --token "$tmp/token"
		a_pid=$pid
		check "round${r}_old_fenced" 0 'role: fenced\nepoch: 1\nfenced_by: 2\n' '' \
			"$bin" -s "$d/a.sock" status
		check "round${r}_old_refuses" 1 '' 'tsstore: insert: stale primary: a member of this lineage at epoch 2 exists, this database is at epoch 1: "insert" is refused; send it to the primary of epoch 2 (this one may only become its standby)\ninsert: 0 rows stored, 0 rejected, stopped at line 2\n' \
			"$bin" -s "$d/a.sock" --time-unit s insert m one.tsv
		kill -TERM "$a_pid"
		wait "$a_pid"
		fenced=$((fenced + 1))
	fi
	failover_tally "$d" "$acked"
done
echo "failovers $failovers ($proxied through the proxy: $cuts cuts, $stalls stalls)," \
	"rows acknowledged $acked_total, inserts not acknowledged $refused_total, rows lost $lost_total," \
	"old primaries fenced on return $fenced"

finish
