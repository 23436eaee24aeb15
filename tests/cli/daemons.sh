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
# SOCK_WANT; then check it.
await_equal() {
	name=$1 want_sock=$2 have_sock=$3
	shift 3
	"$bin" -s "$want_sock" "$@" >"$tmp/want" 2>&1
	i=0
	while ! { "$bin" -s "$have_sock" "$@" 2>&1 | cmp -s - "$tmp/want"; } && [ $i -lt 300 ]; do
		sleep 0.05
		i=$((i + 1))
	done
	check_file "$name" 0 "$tmp/want" '' "$bin" -s "$have_sock" "$@"
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
