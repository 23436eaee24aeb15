#!/bin/sh
# test_readme.sh -- README.md's quick start, run as a newcomer runs it:
# `make run` in one shell (here: scripts/run.sh, what make run runs once
# it has built, in the background), every ```sh block of README.md in
# order in another, in a fresh directory.
#
# The convention (also at the top of README.md, in a comment):
#   - ```sh blocks run; ```shell, ```c and plain ``` blocks do not (make
#     targets, C, other machines);
#   - a command goes on to the next line after a trailing \, |, && or ||;
#     a line that starts with `#` is output: the comment lines right under
#     a command are what it prints, standard output then standard error
#     ("# " taken off), and it must print exactly that, but that runs of
#     blanks and tabs compare equal, a line `...` stands for any number of
#     lines and `...` within a line for any text; a command without such
#     lines is only checked to exit 0 (every command must);
#   - tsstored listens on ports the kernel chooses, not on 7400 and 7401
#     (which may be in use here): 127.0.0.1:7400 and 127.0.0.1:7401 in the
#     commands are rewritten to them;
#   - without FUSE here, the commands that read ./tsstore-mnt are skipped
#     (one SKIP).
# Each command runs with standard input /dev/null, in one sh, so that
# what a command exports holds for the next ones.  The daemon is stopped
# by its pid at the end (lib.sh's daemon_stop: run.sh execs tsstored).
#
# Usage: tests/cli/test_readme.sh TSSTORE-or-BUILDDIR (see lib.sh).
# TSSTORE_README=FILE runs FILE's blocks instead of README.md's (to see
# the test fail on a README broken on purpose).
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
. "$(dirname "$0")/lib.sh"
readme=${TSSTORE_README:-$top/README.md}
build=$(dirname "$(dirname "$bin")")

for tool in curl socat; do
	if ! command -v "$tool" >/dev/null 2>&1; then
		skip "no $tool here (scripts/deps.sh installs it): README's quick start needs it"
		finish
	fi
done

# ---- make run, in the background ----

ln -s "$build" build
: >run.log
"$top/scripts/run.sh" "$build" --listen unix:./tsstore-data/tsstored.sock \
	--listen tcp:127.0.0.1:0 --listen http:127.0.0.1:0 >run.log 2>&1 &
daemon_pid=$!
# (a few seconds; the bound is for the sanitizer builds, which load the
# demo tables many times slower)
i=0
while ! grep -q '^tsstored: serving ./tsstore-data' run.log && [ $i -lt 12000 ] &&
	kill -0 "$daemon_pid" 2>/dev/null; do
	sleep 0.05
	i=$((i + 1))
done
if ! grep -q '^tsstored: serving ./tsstore-data' run.log; then
	echo "$0: make run (scripts/run.sh) did not start serving within 10 minutes:" >&2
	cat run.log >&2
	exit 2
fi
tcp=$(sed -n 's/^tsstored: listening on tcp:127\.0\.0\.1:\([0-9]*\)$/\1/p' run.log)
http=$(sed -n 's/^tsstored: listening on http:127\.0\.0\.1:\([0-9]*\)$/\1/p' run.log)
fuse=0
grep -q '^tsstored: serving the FUSE view' run.log && fuse=1
# the three demo tables, every row stored
expect run_demo_tables "$(grep -c '^run: [a-z]*: insert: [0-9]* rows stored, 0 rejected$' run.log)" -eq 3

# ---- the commands of the ```sh blocks ----

mkdir readme
n=$(awk -v dir=readme '
	/^```/ {
		if (fence) { fence = 0; run = 0; cont = 0; next }
		fence = 1; run = $0 == "```sh"; next
	}
	!run { next }
	/^#( |$)/ {
		line = $0; sub(/^# ?/, "", line)
		print line >> (dir "/exp." n); close(dir "/exp." n)
		cont = 0
		next
	}
	/^[ \t]*$/ { next }
	{
		if (!cont) n++
		print >> (dir "/cmd." n); close(dir "/cmd." n)
		cont = $0 ~ /(\\|\||&&|\|\|)[ \t]*$/
	}
	END { print n + 0 }' "$readme")
expect readme_has_commands "$n" -ge 20

skipped_fuse=0
: >driver.sh
k=1
while [ "$k" -le "$n" ]; do
	if [ "$fuse" = 0 ] && grep -q 'tsstore-mnt' "readme/cmd.$k"; then
		skipped_fuse=$((skipped_fuse + 1))
		echo 0 >"readme/status.$k"
		: >"readme/out.$k"
		: >"readme/err.$k"
		rm -f "readme/exp.$k"
	else
		{
			echo "{"
			sed -e "s/127\\.0\\.0\\.1:7400/127.0.0.1:$tcp/g" \
				-e "s/127\\.0\\.0\\.1:7401/127.0.0.1:$http/g" "readme/cmd.$k"
			echo "} >readme/out.$k 2>readme/err.$k </dev/null"
			echo "echo \$? >readme/status.$k"
		} >>driver.sh
	fi
	k=$((k + 1))
done
[ "$skipped_fuse" = 0 ] || skip "no FUSE here: $skipped_fuse README commands on ./tsstore-mnt not run"
# As on a fresh machine, no tsstore on PATH but what README puts there.
path=$(printf '%s\n' "$PATH" | tr ':' '\n' | while read -r d; do
	[ -n "$d" ] && [ ! -x "$d/tsstore" ] && printf '%s:' "$d"; done)
PATH=${path%:} timeout 600 sh driver.sh >driver.log 2>&1

# matches EXPECTED ACTUAL: ACTUAL's lines match EXPECTED's (the
# convention above).
matches() {
	awk '
	function norm(s) { gsub(/\r/, "", s); gsub(/[ \t]+/, " ", s); sub(/ $/, "", s); sub(/^ /, "", s); return s }
	# whether s matches t, in which "..." stands for any text
	function glob(s, t,   parts, np, i, k, rest, last) {
		np = split(t, parts, /\.\.\./)
		if (np <= 1) return s == t
		if (substr(s, 1, length(parts[1])) != parts[1]) return 0
		rest = substr(s, length(parts[1]) + 1)
		for (i = 2; i < np; i++) {
			if (!(k = index(rest, parts[i]))) return 0
			rest = substr(rest, k + length(parts[i]))
		}
		last = parts[np]
		return length(rest) >= length(last) && substr(rest, length(rest) - length(last) + 1) == last
	}
	# whether the expected lines from i match the actual ones from j
	function m(i, j,   k) {
		if (i > ne) return j > na
		if (e[i] == "...") {
			for (k = j; k <= na + 1; k++) if (m(i + 1, k)) return 1
			return 0
		}
		return j <= na && glob(a[j], e[i]) && m(i + 1, j + 1)
	}
	FILENAME == ARGV[1] { e[++ne] = norm($0); next }
	{ a[++na] = norm($0) }
	END { exit !m(1, 1) }' "$1" "$2"
}

# (lib.sh's fail echoes, and sh's echo reads backslashes: double them)
esc() { sed 's/\\/\\\\/g'; }

k=1
while [ "$k" -le "$n" ]; do
	name="readme[$k] $(head -n 1 "readme/cmd.$k" | cut -c 1-60 | esc)"
	cp "readme/out.$k" "$tmp/out" 2>/dev/null || : >"$tmp/out"
	cp "readme/err.$k" "$tmp/err" 2>/dev/null || : >"$tmp/err"
	status=$(cat "readme/status.$k" 2>/dev/null || echo "none (the run stopped: $(tail -n 3 driver.log | tr '\n' ' '))")
	cat "$tmp/out" "$tmp/err" >"readme/all.$k"
	if [ "$status" != 0 ]; then
		fail "$name" "exit status $status, want 0"
	elif [ -s "readme/exp.$k" ] && ! matches "readme/exp.$k" "readme/all.$k"; then
		fail "$name" "output differs from README's: $(tr '\n' '|' <"readme/exp.$k" | cut -c 1-300 | esc)"
	else
		pass
	fi
	k=$((k + 1))
done

daemon_stop
finish
