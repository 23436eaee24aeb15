#!/bin/sh
# run-tests.sh -- run every test program given, keep going after a
# failure, and end with cmocka's summary lines for the whole run:
#   [==========] N test(s) run.
#   [  PASSED  ] N test(s).
#   [  SKIPPED ] N test(s).       (only when some were skipped)
#   [  FAILED  ] N test(s).       (only when some failed)
#   N passed, N failed, N skipped
#
# Usage: scripts/run-tests.sh BUILDDIR TEST...
# A TEST is a cmocka program (its "[  PASSED  ] N test(s)", "[  FAILED  ]
# N test(s)" and "[  SKIPPED ] N test(s)" lines are counted) or a shell
# script (*.sh), which gets BUILDDIR as its argument and ends with
# "N passed, N failed" or "N passed, N failed, N skipped" (tests/cli/
# lib.sh's finish).  A "SKIP: ..." line from a test whose counts name no
# skip counts as one skipped test, so a skip is never lost.  A program
# that crashes or exits non-zero without reporting a failure counts as
# one failed test.
#
# Under CI=true (CI sets it) a skipped test is a failure: a CI machine
# without /dev/fuse, sqlite3 or groff must not pass silently.  Each such
# skip is named, and the run exits 1.
#
# Exit status 1 if anything failed (or, under CI=true, was skipped).
set -u
builddir=$1; shift
passed=0; failed=0; skipped=0; failed_names=""; skipped_names=""
log=$(mktemp); trap 'rm -f "$log"' EXIT
for t in "$@"; do
	echo "== $t"
	case "$t" in
	*.sh) sh "$t" "$builddir" >"$log" 2>&1; rc=$? ;;
	*) "$t" >"$log" 2>&1; rc=$? ;;
	esac
	cat "$log"
	p=$(sed -n 's/^\[  PASSED  \] \([0-9]*\) test.*/\1/p; s/^\([0-9]*\) passed, [0-9]* failed.*/\1/p' "$log" | tail -1)
	f=$(sed -n 's/^\[  FAILED  \] \([0-9]*\) test.*/\1/p; s/^[0-9]* passed, \([0-9]*\) failed.*/\1/p' "$log" | tail -1)
	s=$(sed -n 's/^\[  SKIPPED \] \([0-9]*\) test.*/\1/p; s/^[0-9]* passed, [0-9]* failed, \([0-9]*\) skipped.*/\1/p' "$log" | tail -1)
	p=${p:-0}; f=${f:-0}; s=${s:-0}
	if [ "$s" -eq 0 ]; then s=$(grep -c '^SKIP:' "$log"); fi
	if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then f=1; fi
	passed=$((passed + p)); failed=$((failed + f)); skipped=$((skipped + s))
	[ "$rc" -ne 0 ] && failed_names="$failed_names $(basename "$t")"
	[ "$s" -gt 0 ] && skipped_names="$skipped_names $(basename "$t")"
done
ci_skip=0
if [ "${CI:-}" = true ] && [ "$skipped" -gt 0 ]; then
	ci_skip=1
	echo "CI=true: $skipped skipped test(s) count as failures; a CI machine must run every test" \
	     "(scripts/deps.sh installs what they need; the FUSE test needs /dev/fuse):$skipped_names"
fi
[ -n "$failed_names" ] && echo "failed programs:$failed_names"
[ -n "$skipped_names" ] && echo "programs with skipped tests:$skipped_names"
echo "== all tests"
echo "[==========] $((passed + failed + skipped)) test(s) run."
echo "[  PASSED  ] $passed test(s)."
[ "$skipped" -gt 0 ] && echo "[  SKIPPED ] $skipped test(s)."
[ "$failed" -gt 0 ] && echo "[  FAILED  ] $failed test(s)."
if [ "$skipped" -gt 0 ]; then
	echo "$passed passed, $failed failed, $skipped skipped"
else
	echo "$passed passed, $failed failed"
fi
[ "$failed" -eq 0 ] && [ -z "$failed_names" ] && [ "$ci_skip" -eq 0 ]
