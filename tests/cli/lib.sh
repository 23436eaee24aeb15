# lib.sh -- what the golden tests of the admin command share; sourced by
# tests/cli/test_*.sh after `set -u`.
#
# The test is run as `sh tests/cli/test_X.sh TSSTORE`, TSSTORE being the
# tsstore binary or a build directory holding bin/tsstore (and
# bin/tsstored, for the tests through the daemon).  This file sets:
#   bin       the tsstore binary (absolute)
#   tsstored  the tsstored binary beside it
#   tmp       a temporary directory, the working directory, removed on exit
#   sqlite_ext  where the SQLite module is (build tree or install prefix)
#   sqlite_preload  the sanitizer runtime sqlite3 must preload for it, or ""
# and gives the checks below.  Every check compares the exact exit status,
# stdout and stderr; the script ends with `finish`, which prints
# "N passed, M failed" (", K skipped" after it when a test was skipped:
# `skip`) and exits 1 when anything failed.  scripts/run-tests.sh counts
# the skips, and under CI=true fails the run on any.

bin=${1:?usage: $0 TSSTORE-BINARY-or-BUILDDIR}
[ -d "$bin" ] && bin=$bin/bin/tsstore
case $bin in /*) ;; *) bin=$(pwd)/$bin ;; esac
if [ ! -x "$bin" ]; then
	echo "$0: $bin: not an executable" >&2
	exit 2
fi
tsstored=$(dirname "$bin")/tsstored
# the SQLite module: beside the build's bin/ (BUILDDIR/libtsstore_sqlite.so)
# or in an installed PREFIX/lib (tests/cli/test_installed.sh)
sqlite_ext=$(cd "$(dirname "$bin")/.." && pwd)/libtsstore_sqlite.so
[ -f "$sqlite_ext" ] || sqlite_ext=$(cd "$(dirname "$bin")/.." && pwd)/lib/libtsstore_sqlite.so
# a module built with AddressSanitizer or ThreadSanitizer (SANITIZE=1,
# TSAN=1) loads into the uninstrumented sqlite3 only with that runtime
# preloaded: LD_PRELOAD=$sqlite_preload sqlite3 ... (empty otherwise)
sqlite_preload=$(ldd "$sqlite_ext" 2>/dev/null | awk '$1 ~ /^lib[at]san\.so/ { print $3; exit }')
unset TSSTORE_SOCKET TSSTORE_TIMEOUT

tmp=$(mktemp -d) || exit 2
daemon_pid=
trap 'daemon_stop; rm -rf "$tmp"' EXIT
trap 'exit 130' HUP INT TERM
cd "$tmp" || exit 2
passed=0
failed=0
skipped=0
mode=       # set by a test running its cases in several modes: named in failures

pass() { passed=$((passed + 1)); }

# skip WHY: a test that cannot run here (a tool or device missing): one
# skipped test, and a "SKIP: WHY" line.
skip() {
	skipped=$((skipped + 1))
	echo "SKIP: $1"
}

# fail NAME WHY: report a failed check, with the outputs it saw.
fail() {
	failed=$((failed + 1))
	echo "FAIL: ${mode:+$mode/}$1: $2"
	sed -e 's/^/    stdout| /' -e 20q "$tmp/out"
	sed -e 's/^/    stderr| /' -e 20q "$tmp/err"
}

# check NAME STATUS STDOUT STDERR COMMAND...: run COMMAND (standard input
# /dev/null unless it redirects its own); its exit status must be STATUS
# and its stdout and stderr exactly the printf formats STDOUT and STDERR.
check() {
	name=$1 want_status=$2
	printf "$3" >"$tmp/want_out"
	want_err=$4
	shift 4
	check_file "$name" "$want_status" "$tmp/want_out" "$want_err" "$@"
}

# check_file NAME STATUS FILE STDERR COMMAND...: check, with the expected
# stdout the contents of FILE.
check_file() {
	name=$1 want_status=$2 file=$3
	printf "$4" >"$tmp/want_err"
	shift 4
	"$@" >"$tmp/out" 2>"$tmp/err" </dev/null
	status=$?
	if [ "$status" -ne "$want_status" ]; then
		fail "$name" "exit status $status, want $want_status"
	elif ! cmp -s "$tmp/out" "$file"; then
		fail "$name" "stdout differs: $(diff "$file" "$tmp/out" | head -20 | tr '\n' '|')"
	elif ! cmp -s "$tmp/err" "$tmp/want_err"; then
		fail "$name" "stderr differs: $(diff "$tmp/want_err" "$tmp/err" | tr '\n' '|')"
	else
		pass
	fi
}

# from FILE COMMAND...: COMMAND with FILE as its standard input.
from() {
	f=$1
	shift
	"$@" <"$f"
}

# expect NAME CONDITION...: a plain test(1) condition.
expect() {
	name=$1
	shift
	: >"$tmp/out"
	: >"$tmp/err"
	if test "$@"; then pass; else fail "$name" "not true: $*"; fi
}

# daemon_start DATADIR SOCKET [ARG...]: run tsstored on DATADIR listening
# on the unix socket SOCKET (and what the ARGs add: more --listen, a
# --token), and wait (10 s at most) until it accepts.
daemon_start() {
	d=$1 s=$2
	shift 2
	"$tsstored" -d "$d" --listen "unix:$s" "$@" 2>"$tmp/tsstored.log" &
	daemon_pid=$!
	# the socket file appears at bind(), before listen(): wait for the
	# daemon to say it listens (a connect in between is refused)
	i=0
	while ! { [ -S "$s" ] && grep -qF "listening on unix:$s" "$tmp/tsstored.log"; } &&
		[ $i -lt 200 ]; do
		sleep 0.05
		i=$((i + 1))
	done
	if [ ! -S "$s" ] || ! grep -qF "listening on unix:$s" "$tmp/tsstored.log"; then
		echo "$0: tsstored did not start:" >&2
		cat "$tmp/tsstored.log" >&2
		exit 2
	fi
}

# daemon_addr KIND: the KIND:127.0.0.1:PORT (KIND tcp or http) a daemon
# started with --listen KIND:127.0.0.1:0 listens on (the port the kernel
# chose), from its log (10 s at most), into $addr.
daemon_addr() {
	i=0
	while ! grep -q "listening on $1:" "$tmp/tsstored.log" && [ $i -lt 200 ]; do
		sleep 0.05
		i=$((i + 1))
	done
	addr=$(sed -n "s/^tsstored: listening on \\($1:127\\.0\\.0\\.1:[0-9]*\\)\$/\\1/p" "$tmp/tsstored.log")
	if [ -z "$addr" ]; then
		echo "$0: tsstored did not listen on $1:" >&2
		cat "$tmp/tsstored.log" >&2
		exit 2
	fi
}

# daemon_stop: SIGTERM the daemon, if one runs, and wait for it (a
# daemon a test stopped with SIGSTOP is continued to take it).
daemon_stop() {
	[ -n "$daemon_pid" ] || return 0
	# CONT first (a test may have stopped it): a CONT after the TERM can
	# reach a daemon already exiting, while LeakSanitizer ptrace-stops its
	# threads, and hang it there (SANITIZE=1)
	kill -CONT "$daemon_pid" 2>/dev/null
	kill -TERM "$daemon_pid" 2>/dev/null
	wait "$daemon_pid" 2>/dev/null
	daemon_pid=
}

# sqlite_vtab TABLE SOURCE STATEMENTS: run STATEMENTS with sqlite3 on the
# virtual table temp.TABLE over table TABLE of SOURCE (path='DIR' or
# socket='ADDRESS'), the SQLite module loaded; its status, and stderr
# with the "Runtime error near line N: " of sqlite3 left out.  Writes
# $tmp/s.sql and $tmp/s.err.
sqlite_vtab() {
	printf '.load %s\nCREATE VIRTUAL TABLE temp.%s USING tsstore(%s, table=%s);\n%s\n' \
		"$sqlite_ext" "$1" "$2" "'$1'" "$3" >"$tmp/s.sql"
	LD_PRELOAD=$sqlite_preload sqlite3 -batch :memory: <"$tmp/s.sql" 2>"$tmp/s.err"
	st=$?
	sed 's/^\(Runtime error\|Parse error\|Error\)[^:]*: //' "$tmp/s.err" >&2
	return $st
}

finish() {
	if [ "$skipped" -gt 0 ]; then
		echo "$passed passed, $failed failed, $skipped skipped"
	else
		echo "$passed passed, $failed failed"
	fi
	[ "$failed" -eq 0 ]
	exit
}
