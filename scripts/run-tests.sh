#!/bin/sh
# run-tests.sh -- run every test program given, keep going after a
# failure, and end with cmocka's summary lines for the whole run:
#   [==========] N test(s) run.
#   [  PASSED  ] N test(s).
#   [  FAILED  ] N test(s).        (only when some failed)
#
# Usage: scripts/run-tests.sh BUILDDIR TEST...
# A TEST is a cmocka program (its "[  PASSED  ] N test(s)" and
# "[  FAILED  ] N test(s)" lines are counted) or a shell script (*.sh),
# which gets BUILDDIR as its argument and ends with "N passed, N failed".
# A program that crashes or exits non-zero without reporting a failure
# counts as one failed test.  Exit status 1 if anything failed.
set -u
builddir=$1; shift
passed=0; failed=0; failed_names=""
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
	p=${p:-0}; f=${f:-0}
	if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then f=1; fi
	passed=$((passed + p)); failed=$((failed + f))
	[ "$rc" -ne 0 ] && failed_names="$failed_names $(basename "$t")"
done
[ -n "$failed_names" ] && echo "failed programs:$failed_names"
echo "== all tests"
echo "[==========] $((passed + failed)) test(s) run."
echo "[  PASSED  ] $passed test(s)."
[ "$failed" -gt 0 ] && echo "[  FAILED  ] $failed test(s)."
[ "$failed" -eq 0 ] && [ -z "$failed_names" ]
