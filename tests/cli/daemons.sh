# daemons.sh -- helpers for tests that run real tsstored daemons side by
# side (test_standby.sh, test_promote.sh, test_replica.sh); sourced after
# lib.sh.  It writes the token file $tmp/token ("s3cret") and sets the
# EXIT trap: every daemon started (in $pids) is stopped, whatever
# stopped the test, and $tmp removed.
pids=
unset TSSTORE_TOKEN TSSTORE_TOKEN_FILE
printf 's3cret\n' >"$tmp/token"
chmod 600 "$tmp/token"
trap 'kill -CONT $pids 2>/dev/null; kill -TERM $pids 2>/dev/null; wait; rm -rf "$tmp"' EXIT

# start LOG SOCKET ARG...: tsstored with ARGs, its log in $tmp/LOG,
# waiting (10 s at most) until it listens on unix:SOCKET; its pid in $pid.
start() {
	log=$tmp/$1 sock=$2
	shift 2
	: >"$log" # before the daemon opens it: the loop below reads it at once
	"$tsstored" --listen "unix:$sock" "$@" 2>>"$log" &
	pid=$!
	pids="$pids $pid"
	i=0
	while ! grep -qF "listening on unix:$sock" "$log" && [ $i -lt 200 ]; do
		sleep 0.05
		i=$((i + 1))
	done
	if ! grep -qF "listening on unix:$sock" "$log"; then
		echo "$0: tsstored did not start:" >&2
		cat "$log" >&2
		exit 2
	fi
}

# port_of LOG KIND: the port the daemon logging to LOG listens on for KIND.
port_of() {
	sed -n "s/^tsstored: listening on $2:127\\.0\\.0\\.1:\\([0-9]*\\)\$/\\1/p" "$tmp/$1"
}

# await_equal NAME SOCK_WANT SOCK_HAVE COMMAND...: wait (15 s at most)
# until COMMAND's output through SOCK_HAVE equals its output through
# SOCK_WANT, both read again at each try (what a TTL hides changes with
# the clock); then check it.
await_equal() {
	name=$1 want_sock=$2 have_sock=$3
	shift 3
	"$bin" -s "$want_sock" "$@" >"$tmp/want" 2>&1
	i=0
	while ! { "$bin" -s "$have_sock" "$@" >"$tmp/have" 2>&1 && cmp -s "$tmp/have" "$tmp/want"; } &&
		[ $i -lt 300 ]; do
		sleep 0.05
		i=$((i + 1))
		"$bin" -s "$want_sock" "$@" >"$tmp/want" 2>&1
	done
	# the outputs compared last, not a new read: a table of a short TTL
	# may lose a row between two reads
	check_file "$name" 0 "$tmp/want" '' cat "$tmp/have"
}

# writer SOCK FILE: one row per insert into table m (columns ts, v; ts
# 1795000000 + N s, v N), each acknowledged one's N appended to FILE,
# each refused one's to FILE.refused, until FILE.stop exists; N goes on
# from FILE.next when it exists (test_replica.sh, test_failover_load.sh).
writer() {
	i=$(cat "$2.next" 2>/dev/null || echo 0)
	while [ ! -e "$2.stop" ]; do
		i=$((i + 1))
		echo $i >"$2.next"
		if printf 'ts\tv\n%d\t%d\n' $((1795000000 + i)) $i |
			"$bin" -s "$1" --time-unit s insert m - >/dev/null 2>&1; then
			echo $i >>"$2"
		else
			echo $i >>"$2.refused"
		fi
	done
}

# proxy_start DIR PORT: $here/linkproxy.py (the sourcing test's $here:
# tests/cli) in front of 127.0.0.1:PORT,
# with a random seed (printed); its pid in $proxy_pid, its port in
# $proxy_port, its log in DIR/proxy.log.
proxy_start() {
	seed=$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')
	echo "round $r: through linkproxy.py, seed $seed"
	python3 "$here/linkproxy.py" "$2" "$seed" >"$1/proxy.port" 2>"$1/proxy.log" &
	proxy_pid=$!
	pids="$pids $proxy_pid"
	i=0
	while [ ! -s "$1/proxy.port" ] && [ $i -lt 200 ]; do
		sleep 0.05
		i=$((i + 1))
	done
	proxy_port=$(cat "$1/proxy.port")
}

# proxy_stop DIR: stop it; its cuts and stalls added to $cuts and
# $stalls, a failed check round<r>_proxy when it did not end well (its
# log shown).
proxy_stop() {
	kill -TERM "$proxy_pid"
	wait "$proxy_pid"
	n=$(grep -c '^cuts [0-9]* stalls [0-9]*$' "$1/proxy.log")
	expect "round${r}_proxy" "$n" -eq 1
	[ "$n" = 1 ] || sed 's/^/    proxy| /' "$1/proxy.log"
	set -- $(grep '^cuts [0-9]* stalls [0-9]*$' "$1/proxy.log") 0 0 0 0
	cuts=$((cuts + $2)) stalls=$((stalls + $4))
}

# await_log NAME LOG PATTERN: wait (15 s at most) until $tmp/LOG has a
# line matching the grep PATTERN.
await_log() {
	i=0
	while ! grep -q -e "$3" "$tmp/$2" && [ $i -lt 300 ]; do
		sleep 0.05
		i=$((i + 1))
	done
}

# failover_tally DIR ACKED: after round $r's failover to the standby of
# DIR (its pid $b_pid, promoted: its answer in DIR/promote): the rows of
# DIR/want missing from DIR/have are lost; ACKED, the inserts refused
# (DIR/acked.refused) and the rows lost added to $acked_total,
# $refused_total and $lost_total, $failovers counted; the round's checks
# (rows acknowledged, none lost, epoch 2; stopped, the standby passes
# check); DIR removed.
failover_tally() {
	lost=$(comm -23 "$1/want" "$1/have" | wc -l)
	acked_total=$((acked_total + $2))
	[ -f "$1/acked.refused" ] && refused_total=$((refused_total + $(wc -l <"$1/acked.refused")))
	lost_total=$((lost_total + lost))
	failovers=$((failovers + 1))
	expect "round${r}_acked" "$2" -gt 0
	expect "round${r}_lost" "$lost" -eq 0
	check "round${r}_epoch" 0 'role: primary\nepoch: 2\n' '' sed -n '/^role: /p; /^epoch: /p' "$1/promote"
	kill -TERM "$b_pid"
	wait "$b_pid"
	check "round${r}_check" 0 '' '' "$bin" -d "$1/b" check
	rm -rf "$1"
}
