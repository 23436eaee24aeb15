#!/bin/sh
# test_installed.sh -- the operator's end-to-end tests again, on the
# programs as `make install` lays them out: BUILDDIR's build installed
# into a temporary PREFIX, then the suites of issue 31 (time input,
# streaming insert, the command's flags, the daemon's life, -d beside a
# running tsstored, the mount) run against PREFIX/bin/tsstore, with
# tsstored and tsstore-fuse beside it and the SQLite module in
# PREFIX/lib, as a user's PATH would find them.  The README's own test
# (test_readme.sh) is the build-tree half: README starts from build/bin.
#
# Usage: sh tests/cli/test_installed.sh BUILDDIR
# Prints "N passed, M failed[, K skipped]": the sums of the suites'.
set -u
src=$(cd "$(dirname "$0")/../.." && pwd)
b=${1:?usage: $0 BUILDDIR}
b=$(cd "$b" && pwd)
tmp=$(mktemp -d) || exit 2
trap 'rm -rf "$tmp"' EXIT
trap 'exit 130' HUP INT TERM

# make install of this very build (B names it; the variables of the make
# that runs us, SANITIZE=1 and the like, reach this one through MAKEFLAGS).
# install notes in BUILDDIR/install-dirs the directories it creates, for
# a later make uninstall of the user's PREFIX: ours are put back as they were.
had_dirs=0
[ -f "$b/install-dirs" ] && had_dirs=1 && cp "$b/install-dirs" "$tmp/install-dirs"
make -s -C "$src" install PREFIX="$tmp/prefix" B="${b#"$src"/}" >"$tmp/log" 2>&1
rc=$?
if [ "$had_dirs" = 1 ]; then cp "$tmp/install-dirs" "$b/install-dirs"; else rm -f "$b/install-dirs"; fi
if [ "$rc" -ne 0 ]; then
	echo "FAIL: make install PREFIX=$tmp/prefix:"
	sed -e 's/^/    | /' -e 30q "$tmp/log"
	echo "0 passed, 1 failed"
	exit 1
fi

passed=0 failed=0 skipped=0
for t in test_time test_stream test_command test_daemon_life test_daemon_lock test_fuse; do
	sh "$src/tests/cli/$t.sh" "$tmp/prefix/bin/tsstore" >"$tmp/out" 2>&1
	rc=$?
	counts=$(tail -n 1 "$tmp/out")
	p=$(printf '%s\n' "$counts" | sed -n 's/^\([0-9]*\) passed.*/\1/p')
	f=$(printf '%s\n' "$counts" | sed -n 's/.* \([0-9]*\) failed.*/\1/p')
	s=$(printf '%s\n' "$counts" | sed -n 's/.* \([0-9]*\) skipped.*/\1/p')
	if [ -z "$p" ] || [ -z "$f" ] || { [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; }; then
		echo "FAIL: installed/$t: exit $rc, last line: $counts"
		failed=$((failed + 1))
		continue
	fi
	[ "$f" -eq 0 ] || { echo "FAIL: installed/$t:"; grep -A3 '^FAIL' "$tmp/out" | sed 's/^/    | /'; }
	grep '^SKIP' "$tmp/out" | sed "s|^|installed/$t: |"
	passed=$((passed + p)) failed=$((failed + f)) skipped=$((skipped + ${s:-0}))
done
if [ "$skipped" -gt 0 ]; then
	echo "$passed passed, $failed failed, $skipped skipped"
else
	echo "$passed passed, $failed failed"
fi
[ "$failed" -eq 0 ]
