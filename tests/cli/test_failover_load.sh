#!/bin/sh
# test_failover_load.sh -- failovers of a primary under every kind of
# load (issue 33, docs/standby.md; RELIABILITY.md "Failover").
# TSSTORE_FAILOVERS rounds (default 3; `make failover-test` runs more),
# each with a fresh primary A (--sync replica, --merge-delay 200ms) and a
# standby B following it through tests/cli/linkproxy.py, which cuts and
# stalls the link at random (its seed printed).  In each round:
#   1. load: a writer inserts one row per insert into table m and
#      records each acknowledged one; an operator, 0.05-0.25 s apart,
#      flushes (A may merge tablets 200 ms after), appends a column to
#      m (alter --add), deletes a range of m's acknowledged rows
#      (recorded before it is sent), inserts a row into e (TTL 1 s: its
#      tablets are dropped as they expire) and flushes e; meanwhile B is
#      killed (-9) once at a random moment and started again;
#   2. quiesced (writer and operator stopped): B catches up and holds
#      exactly A's tables -- their list, m's schema and rows, e's rows
#      (compared once quiesced; that the standby is a prefix at every
#      moment in between is tests/unit/test_ship.c's to show);
#   3. load again, and A killed (-9) at a random moment; B promoted: every
#      acknowledged row of m that no delete covered is on B (0 lost), its
#      epoch is 2, and stopped, B passes check.
# Prints "failovers F, rows acknowledged N, inserts not acknowledged R,
# rows lost L; operations: ..., link: C cuts, S stalls, standby killed
# K times" at the end.
#
# Usage: tests/cli/test_failover_load.sh TSSTORE-or-BUILDDIR (see lib.sh).
set -u
here=$(cd "$(dirname "$0")" && pwd) # lib.sh changes directory
. "$here/lib.sh"
. "$here/daemons.sh" # start, port_of, await_equal, await_log, writer, proxy_*; the token
rounds=${TSSTORE_FAILOVERS:-3}

command -v python3 >/dev/null 2>&1 ||
	{ echo "$0: python3 is missing (scripts/deps.sh installs it): the link proxy needs it" >&2; exit 2; }

T0=1795000000 # the writer's (daemons.sh) row N is at T0 + N s

# random N: a random integer in [0, N).
random() {
	echo $(( $(od -An -N2 -tu2 /dev/urandom | tr -d ' ') % $1 ))
}

# nap MS: sleep MS milliseconds.
nap() {
	sleep "$(printf '%d.%03d' $(($1 / 1000)) $(($1 % 1000)))"
}

# op DIR NAME COMMAND...: run COMMAND, NAME appended to DIR/ops when it
# succeeded, to DIR/ops.failed when not.
op() {
	dir=$1 name=$2
	shift 2
	if "$@" >/dev/null 2>&1; then
		echo "$name" >>"$dir/ops"
	else
		echo "$name" >>"$dir/ops.failed"
	fi
}

# operator SOCK DIR: the other operations, at random, 0.05 to 0.25 s
# apart, until DIR/ops.stop exists; the ranges of m deleted (or tried),
# "FROM TO" (TO excluded) in row numbers, appended to DIR/deleted before
# each delete is sent.
operator() {
	s=$1
	while [ ! -e "$2/ops.stop" ]; do
		case $(random 6) in
		0) op "$2" flush "$bin" -s "$s" flush ;;
		1)
			k=$(($(cat "$2/columns" 2>/dev/null || echo 0) + 1))
			echo $k >"$2/columns"
			op "$2" alter "$bin" -s "$s" alter m --add "c$k:int64=$k"
			;;
		2)
			last=$(tail -n 1 "$2/acked")
			if [ -n "$last" ] && [ "$last" -gt 4 ]; then
				from=$(($(random "$last") + 1))
				echo "$from $((from + 3))" >>"$2/deleted"
				op "$2" delete "$bin" -s "$s" --time-unit s delete m \
					--from $((T0 + from)) --to $((T0 + from + 3))
			fi
			;;
		3 | 4)
			printf 'ts\tv\n%s\t1\n' "$(date +%s%N)" >"$2/e.tsv"
			op "$2" ttl_insert "$bin" -s "$s" insert e "$2/e.tsv"
			;;
		5) op "$2" flush_e "$bin" -s "$s" flush e ;;
		esac
		nap $((50 + $(random 200)))
	done
}

# load_start SOCK DIR / load_stop DIR: the writer and the operator.
load_start() {
	rm -f "$2/acked.stop" "$2/ops.stop"
	writer "$1" "$2/acked" &
	w_pid=$!
	operator "$1" "$2" &
	o_pid=$!
}
load_stop() {
	: >"$1/acked.stop"
	: >"$1/ops.stop"
	wait "$w_pid" "$o_pid"
}

start_standby() { # DIR ROUND PORT
	start b$2.log "$1/b.sock" -d "$1/b" --follow "tcp:127.0.0.1:$3" --token "$tmp/token"
	b_pid=$pid
}

acked_total=0 lost_total=0 refused_total=0 failovers=0 cuts=0 stalls=0 kills=0
: >"$tmp/ops_all"
: >"$tmp/ops_failed_all"
: >"$tmp/stats_all"
r=0
while [ $r -lt "$rounds" ]; do
	r=$((r + 1))
	d=$tmp/r$r
	mkdir "$d"
	: >"$d/acked"
	start a$r.log "$d/a.sock" -d "$d/a" --listen tcp:127.0.0.1:0 --token "$tmp/token" \
		--sync replica --replica-timeout 2s --merge-delay 200ms
	a_pid=$pid
	a_port=$(port_of a$r.log tcp)
	"$bin" -s "$d/a.sock" create m --column v:int64 --key ts --ttl 0
	"$bin" -s "$d/a.sock" create e --column v:int64 --key ts --ttl 1s
	proxy_start "$d" "$a_port"
	start_standby "$d" "$r" "$proxy_port"
	await_log following b$r.log '^tsstored: following '

	# 1. load, the standby killed and started again at a random moment
	load_start "$d/a.sock" "$d"
	nap $((300 + $(random 1500)))
	kill -KILL "$b_pid"
	wait "$b_pid" 2>/dev/null
	kills=$((kills + 1))
	nap $(random 500)
	start_standby "$d" "$r" "$proxy_port"
	nap $((500 + $(random 1500)))
	load_stop "$d"

	# 2. quiesced: the standby holds exactly the primary's tables
	await_equal "round${r}_tables" "$d/a.sock" "$d/b.sock" tables
	await_equal "round${r}_schema" "$d/a.sock" "$d/b.sock" schema m
	await_equal "round${r}_m" "$d/a.sock" "$d/b.sock" query m
	await_equal "round${r}_e" "$d/a.sock" "$d/b.sock" query e
	"$bin" -s "$d/a.sock" stats m | grep -e '^flushes:' -e '^merges:' >>"$d/stats"
	"$bin" -s "$d/a.sock" stats e | grep -e '^tablets_expired:' -e '^merged_rows_expired:' \
		>>"$d/stats"

	# 3. load again; the primary killed at a random moment; promotion
	load_start "$d/a.sock" "$d"
	nap $((200 + $(random 1500)))
	kill -KILL "$a_pid"
	wait "$a_pid" 2>/dev/null
	load_stop "$d"
	proxy_stop "$d"
	"$bin" -s "$d/b.sock" promote >"$d/promote" 2>&1 || cat "$d/promote"
	"$bin" -s "$d/b.sock" query m --columns v --no-header | sort >"$d/have"
	# what was acknowledged, but the rows a delete covered (or may have)
	: >"$d/gone"
	if [ -f "$d/deleted" ]; then
		while read -r from to; do
			i=$from
			while [ "$i" -lt "$to" ]; do
				echo "$i"
				i=$((i + 1))
			done
		done <"$d/deleted" >"$d/gone"
	fi
	sort -u "$d/gone" >"$d/gone.sorted"
	sort "$d/acked" | comm -23 - "$d/gone.sorted" >"$d/want"
	acked=$(wc -l <"$d/acked")
	cat "$d/ops" >>"$tmp/ops_all" 2>/dev/null
	cat "$d/ops.failed" >>"$tmp/ops_failed_all" 2>/dev/null
	sed 's/: / /' "$d/stats" >>"$tmp/stats_all"
	failover_tally "$d" "$acked"
done
ops=$(sort "$tmp/ops_all" | uniq -c | awk '{printf "%s%s %d", n++ ? ", " : "", $2, $1}')
not_done=$(sort "$tmp/ops_failed_all" | uniq -c | awk '{printf "%s%s %d", n++ ? ", " : "", $2, $1}')
sum() { awk -v k="$1" '$1 == k {n += $2} END {print n + 0}' "$tmp/stats_all"; }
merges=$(sum merges) expired=$(sum tablets_expired) rows_expired=$(sum merged_rows_expired)
echo "failovers $failovers, rows acknowledged $acked_total, inserts not acknowledged" \
	"$refused_total, rows lost $lost_total; operations: $ops (failed: ${not_done:-none});" \
	"by the quiesced primaries: $merges merges, $expired tablets expired, $rows_expired rows" \
	"expired in merges; link: $cuts cuts, $stalls stalls," \
	"standby killed $kills times"
# merges and expiry come at random (0.4 merges and 1 tablet expired a
# round in the 100-round runs): required of the long runs only
if [ "$rounds" -ge 20 ]; then
	expect "merges" "$merges" -gt 0
	expect "expiry" "$((expired + rows_expired))" -gt 0
fi

finish
