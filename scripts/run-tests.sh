#!/bin/sh
# run-tests.sh -- run every test binary given, keep going after a failure,
# and end with one summary line in the plain "N passed, N failed" form.
#
# Usage: scripts/run-tests.sh BUILDDIR TEST...
# Each unit test is a cmocka program; its own summary lines are printed as
# they come.  Exit status 1 if any test program failed.
set -u
builddir=$1; shift
passed=0; failed=0; failed_names=""
for t in "$@"; do
	echo "== $t"
	if "$t"; then
		passed=$((passed + 1))
	else
		failed=$((failed + 1)); failed_names="$failed_names $(basename "$t")"
	fi
done
[ -n "$failed_names" ] && echo "failed programs:$failed_names"
echo "test programs: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
