# lib.sh -- what the interop tests share (tests/interop/README.md);
# sourced by tests/interop/test_*.sh after `set -u`.
#
# It sources tests/cli/lib.sh (bin, tsstored, tmp, check, expect, fail,
# finish, daemon_start, daemon_stop) and adds:
#   canon       the JSON reader of tests/interop/canon.c (built by make
#               check-interop into BUILDDIR/tests/interop-canon)
#   need PROG PACKAGE: fail the whole test, naming scripts/deps.sh
#               interop, when a peer's program is missing (never a skip:
#               a compatibility test that did not run must not pass)
#   tsd_start [ARG...]: tsstored on $tmp/db, unix socket $tmp/sock, HTTP
#               and Graphite on loopback ports the kernel picks (or the
#               ports of $http_port / $graphite_port when set: a
#               restart); sets http_port, graphite_port and url
#   free_port   a loopback TCP port nothing uses, for a peer's listener
#   peer_start NAME COMMAND...: a peer in the background, its output in
#               $tmp/NAME.log; stopped by PID (SIGTERM, then SIGKILL
#               after 10 s) when the test ends
#   wait_until SECONDS COMMAND...: poll COMMAND every 0.1 s until it
#               succeeds (status 0); status 1 after SECONDS without
#   tsq ARG...  the tsstore command through the daemon's unix socket
#   influxd_start NAME: an InfluxDB 1.x peer, its URL in ${NAME}_url
#   prometheus_writer_yml PORT: the configuration of a Prometheus on
#               PORT that scrapes itself and tsstored and remote-writes
#               every sample to tsstored
#   prometheus_start NAME PORT CONFIG [ARG...]: a Prometheus peer, ready
# The daemon and every peer run on 127.0.0.1 with their files in $tmp.

. "$(dirname "$0")/../cli/lib.sh"

canon=$(dirname "$bin")/../tests/interop-canon
peer_pids=
# INTEROP_KEEP=1 keeps the temporary directory (logs, configs, data) and
# names it at the end
if [ -n "${INTEROP_KEEP:-}" ]; then
	trap 'peers_stop; daemon_stop; echo "kept $tmp" >&2' EXIT
else
	trap 'peers_stop; daemon_stop; rm -rf "$tmp"' EXIT
fi

# need PROG PACKAGE: PROG must be on PATH (Debian's PACKAGE has it).
need() {
	if ! command -v "$1" >/dev/null 2>&1; then
		echo "FAIL: $1 is not installed (Debian package $2): run scripts/deps.sh interop" \
		     "(make check-interop does), as root"
		failed=$((failed + 1))
		finish
	fi
}
[ -x "$canon" ] || { echo "$0: $canon is missing: run make check-interop" >&2; exit 2; }

# abort WHY [LOG]: the test cannot go on (a server did not start): one
# failure, LOG's tail shown, and the end.
abort() {
	echo "FAIL: $1"
	[ -n "${2:-}" ] && [ -f "$2" ] && tail -n 20 "$2" | sed 's/^/    log| /'
	failed=$((failed + 1))
	finish
}

# wait_until SECONDS COMMAND...
wait_until() {
	limit=$(($1 * 10)) i=0
	shift
	until "$@" >/dev/null 2>&1; do
		i=$((i + 1))
		[ $i -ge $limit ] && return 1
		sleep 0.1
	done
	return 0
}

# free_port: a port below Linux's ephemeral range (32768-60999) that no
# socket of this machine uses (/proc/net/tcp and tcp6, any state).
free_port() {
	while :; do
		p=$((20000 + $(od -An -N2 -tu2 /dev/urandom) % 12000))
		hex=$(printf ':%04X ' "$p")
		if ! cat /proc/net/tcp /proc/net/tcp6 2>/dev/null | awk '{print $2, $3}' |
		        grep -q -- "$hex"; then
			echo "$p"
			return
		fi
	done
}

tsq() { "$bin" -s "$tmp/sock" "$@"; }

http_port=
graphite_port=
# tsd_start [ARG...]
tsd_start() {
	daemon_start "$tmp/db" "$tmp/sock" --listen "http:127.0.0.1:${http_port:-0}" \
		--listen "graphite:127.0.0.1:${graphite_port:-0}" "$@"
	wait_until 10 grep -q '^tsstored: serving' "$tmp/tsstored.log" ||
		abort "tsstored did not start" "$tmp/tsstored.log"
	http_port=$(sed -n 's/^tsstored: listening on http:127\.0\.0\.1:\([0-9]*\)$/\1/p' "$tmp/tsstored.log")
	graphite_port=$(sed -n 's/^tsstored: listening on graphite:127\.0\.0\.1:\([0-9]*\)$/\1/p' \
		"$tmp/tsstored.log")
	url=http://127.0.0.1:$http_port
	wait_until 10 curl -sf "$url/health" ||
		abort "tsstored does not answer $url/health" "$tmp/tsstored.log"
}

# peer_start NAME COMMAND...
peer_start() {
	name=$1
	shift
	"$@" >"$tmp/$name.log" 2>&1 &
	peer_pids="$peer_pids $!"
	eval "${name}_pid=$!"
}

# peer_stop PID: SIGTERM, wait up to 10 s, then SIGKILL.
peer_stop() {
	kill -TERM "$1" 2>/dev/null || return 0
	i=0
	while kill -0 "$1" 2>/dev/null && [ $i -lt 100 ]; do
		sleep 0.1
		i=$((i + 1))
	done
	kill -KILL "$1" 2>/dev/null
	wait "$1" 2>/dev/null
}

peers_stop() {
	for p in $peer_pids; do peer_stop "$p"; done
	peer_pids=
}

# same NAME WANTFILE GOTFILE: the two files are equal (else their diff).
same() {
	if cmp -s "$2" "$3"; then
		pass
	else
		diff "$2" "$3" | head -40 >"$tmp/out"
		: >"$tmp/err"
		fail "$1" "differs (< want, > got)"
	fi
}

# influxd_start NAME: a peer NAME, Debian's InfluxDB 1.x (`influxd`),
# with its files in $tmp/NAME, its HTTP API on a free loopback port (its
# URL in ${NAME}_url), no reporting, monitoring, continuous queries,
# subscriptions or retention enforcement; waited for until it answers
# /ping (30 s)
influxd_start() {
	hp=$(free_port)
	rp=$(free_port)
	while [ "$rp" = "$hp" ]; do rp=$(free_port); done
	mkdir -p "$tmp/$1"
	cat >"$tmp/$1/influxdb.conf" <<EOF
reporting-disabled = true
bind-address = "127.0.0.1:$rp"
[meta]
  dir = "$tmp/$1/meta"
[data]
  dir = "$tmp/$1/data"
  wal-dir = "$tmp/$1/wal"
  query-log-enabled = false
[http]
  bind-address = "127.0.0.1:$hp"
  log-enabled = false
[monitor]
  store-enabled = false
[continuous_queries]
  enabled = false
[subscriber]
  enabled = false
[retention]
  enabled = false
EOF
	peer_start "$1" influxd -config "$tmp/$1/influxdb.conf"
	eval "${1}_url=http://127.0.0.1:$hp"
	wait_until 30 curl -sf "http://127.0.0.1:$hp/ping" ||
		abort "$1 did not answer http://127.0.0.1:$hp/ping" "$tmp/$1.log"
}

# prometheus_writer_yml PORT: the configuration of a Prometheus (2.42)
# listening on PORT that scrapes itself and tsstored's /metrics every
# second and sends every sample to tsstored's /api/v1/write, with short
# queue deadlines and backoffs so that its retries happen within a test.
prometheus_writer_yml() {
	cat <<EOF
global:
  scrape_interval: 1s
  scrape_timeout: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: prometheus
    static_configs:
      - targets: ['127.0.0.1:$1']
  - job_name: tsstored
    static_configs:
      - targets: ['127.0.0.1:$http_port']
remote_write:
  - url: $url/api/v1/write
    queue_config:
      batch_send_deadline: 200ms
      min_backoff: 100ms
      max_backoff: 500ms
EOF
}

# prometheus_start NAME PORT CONFIG [ARG...]: a peer NAME, Debian's
# Prometheus (`prometheus`) with the configuration file CONFIG and ARGs,
# its TSDB in $tmp/NAME, listening on 127.0.0.1:PORT; waited for until
# ready (30 s).
prometheus_start() {
	pname=$1 pport_=$2 pconfig=$3
	shift 3
	peer_start "$pname" prometheus --config.file="$pconfig" --storage.tsdb.path="$tmp/$pname" \
		--web.listen-address="127.0.0.1:$pport_" "$@"
	wait_until 30 curl -sf "http://127.0.0.1:$pport_/-/ready" ||
		abort "$pname is not ready at http://127.0.0.1:$pport_" "$tmp/$pname.log"
}
