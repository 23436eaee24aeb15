#!/bin/sh
# test_runner.sh -- scripts/run-tests.sh counts what it runs, skips
# included: a fake shell test that passes one check and skips one (lib.sh's
# skip), an old-style script that only prints "SKIP:", and a fake cmocka
# program with "[  SKIPPED ]" lines.  Without CI the run passes and its
# closing lines count 2 passed and 3 skipped; under CI=true the same run
# fails, naming the programs that skipped; a run without skips passes
# under CI=true.
#
# Usage: tests/cli/test_runner.sh TSSTORE-or-BUILDDIR (see lib.sh).
set -u
here=$(cd "$(dirname "$0")" && pwd)
runner=$here/../../scripts/run-tests.sh
lib=$here/lib.sh
. "$lib"

mkdir fake
cat >fake/t_skip.sh <<EOT
set -u
. "$lib"
expect one 1 -eq 1
skip "nothing here to test"
finish
EOT
printf 'echo "SKIP: an old-style skip"\necho "0 passed, 0 failed"\n' >fake/t_oldskip.sh
printf '#!/bin/sh\necho "[==========] 2 test(s) run."\necho "[  PASSED  ] 1 test(s)."\necho "[  SKIPPED ] 1 test(s), listed below:"\necho "[  SKIPPED ] x_y"\n' >fake/cmocka_skip
printf '#!/bin/sh\necho "[==========] 1 test(s) run."\necho "[  PASSED  ] 1 test(s)."\n' >fake/cmocka_pass
chmod +x fake/cmocka_skip fake/cmocka_pass
all="fake/t_skip.sh fake/t_oldskip.sh fake/cmocka_skip"

summary='== all tests
[==========] 5 test(s) run.
[  PASSED  ] 2 test(s).
[  SKIPPED ] 3 test(s).
2 passed, 0 failed, 3 skipped\n'

# run CI TEST...: the closing lines, and the exit status, of run-tests.sh
# on the TESTs with $CI set to CI ("": unset).
run() {
	ci=$1
	shift
	if [ -n "$ci" ]; then
		CI=$ci sh "$runner" "$bin" "$@" >"$tmp/run.out" 2>&1
	else
		(unset CI; sh "$runner" "$bin" "$@") >"$tmp/run.out" 2>&1
	fi
	status=$?
	sed -n '/^== all tests$/,$p' "$tmp/run.out"
	return $status
}

check "runner/skips-counted" 0 "$summary" "" run "" $all
check "runner/ci-skips-fail" 1 "$summary" "" run true $all
CI=true sh "$runner" "$bin" $all >"$tmp/ci.out" 2>&1
expect "runner/ci-message" "$(grep -c '^CI=true: 3 skipped test(s) count as failures.*: t_skip.sh t_oldskip.sh cmocka_skip$' "$tmp/ci.out")" -eq 1
check "runner/ci-no-skip-passes" 0 '== all tests\n[==========] 1 test(s) run.\n[  PASSED  ] 1 test(s).\n1 passed, 0 failed\n' "" \
	run true fake/cmocka_pass
finish
