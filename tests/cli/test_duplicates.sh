#!/bin/sh
# test_duplicates.sh -- golden tests of a table's duplicate policy on the
# command line: create --on-duplicate, alter --on-duplicate, the policy
# in stats ("on_duplicate: ignore"), insert's summary counting the
# duplicates skipped, and the usage errors.  Every case runs twice, on
# the files (-d DATADIR) and through a tsstored (-s SOCKET), with the
# same expected output.
#
# Usage: tests/cli/test_duplicates.sh TSSTORE-or-BUILDDIR (see lib.sh).
set -u
. "$(dirname "$0")/lib.sh"

usage_create='usage: tsstore create TABLE --column NAME:TYPE[=DEFAULT]... --key COL,...,ts [--ttl DUR] [--on-duplicate reject|ignore|replace]\n'
usage_alter='usage: tsstore alter TABLE [--add NAME:TYPE[=DEFAULT]]... [--widen COL]... [--ttl DUR] [--on-duplicate reject|ignore|replace]\n'

# Three rows, the third a duplicate of the first; then a retry of them
# with one new row.
printf 'host\tts\tv\na\t2026-11-21T10:00:00Z\t1\nb\t2026-11-21T10:00:00Z\t2\na\t2026-11-21T10:00:00Z\t3\n' \
	>"$tmp/first.tsv"
printf 'host\tts\tv\nb\t2026-11-21T10:00:00Z\t20\nc\t2026-11-21T10:00:00Z\t4\na\t2026-11-21T10:00:00Z\t10\n' \
	>"$tmp/retry.tsv"
rows='host\tts\tv\na\t2026-11-21T10:00:00Z\t1\nb\t2026-11-21T10:00:00Z\t2\nc\t2026-11-21T10:00:00Z\t4\n'

# policy TABLE: the stats lines of the duplicate policy.
policy() {
	ts stats "$1" | grep '^on_duplicate'
}

suite() {
	m=$1
	check "$m/create_ignore" 0 '' '' \
		ts create d --column host:string --column v:int64 --key host,ts --on-duplicate ignore
	check "$m/stats_ignore" 0 'on_duplicate_policy: 1\non_duplicate: ignore\n' '' policy d
	check "$m/insert_ignore" 0 '' 'insert: 2 rows stored, 0 rejected, 1 duplicate ignored\n' \
		ts insert d first.tsv
	check "$m/insert_retry" 0 '' 'insert: 1 row stored, 0 rejected, 2 duplicates ignored\n' \
		ts insert d retry.tsv
	check "$m/query_ignore" 0 "$rows" '' ts query d
	check "$m/alter_reject" 0 '' '' ts alter d --on-duplicate reject
	check "$m/stats_reject" 0 'on_duplicate_policy: 0\non_duplicate: reject\n' '' policy d
	check "$m/insert_reject" 1 '' 'tsstore: insert: line 2: duplicate key ("a", 2026-11-21T10:00:00Z)
tsstore: insert: line 3: duplicate key ("b", 2026-11-21T10:00:00Z)
tsstore: insert: line 4: duplicate key ("a", 2026-11-21T10:00:00Z)
insert: 0 rows stored, 3 rejected
' ts insert d first.tsv
	check "$m/alter_ignore_and_ttl" 0 '' '' ts alter d --ttl 30d --on-duplicate ignore
	check "$m/stats_ignore_again" 0 'on_duplicate_policy: 1\non_duplicate: ignore\n' '' policy d
	check "$m/insert_ignore_again" 0 '' 'insert: 0 rows stored, 0 rejected, 3 duplicates ignored\n' \
		ts insert d first.tsv
	check "$m/query_unchanged" 0 "$rows" '' ts query d
	# the default, and reject said out loud
	check "$m/create_default" 0 '' '' ts create r --column v:int64 --key ts
	check "$m/stats_default" 0 'on_duplicate_policy: 0\non_duplicate: reject\n' '' policy r
	check "$m/create_reject" 0 '' '' ts create r2 --column v:int64 --key ts --on-duplicate reject
	check "$m/stats_reject_given" 0 'on_duplicate_policy: 0\non_duplicate: reject\n' '' policy r2
	# usage errors change nothing
	check "$m/create_bad_policy" 2 '' "tsstore: create: --on-duplicate: unknown duplicate policy \"keep\" (want reject, ignore or replace)\n$usage_create" \
		ts create x --column v:int64 --key ts --on-duplicate keep
	check "$m/create_bad_policy_nothing" 0 'd\nr\nr2\n' '' ts tables
	check "$m/alter_bad_policy" 2 '' "tsstore: alter: --on-duplicate: unknown duplicate policy \"IGNORE\" (want reject, ignore or replace)\n$usage_alter" \
		ts alter r --on-duplicate IGNORE
	check "$m/alter_bad_policy_nothing" 0 'on_duplicate_policy: 0\non_duplicate: reject\n' '' policy r
	check "$m/alter_missing_policy" 2 '' "tsstore: alter: option --on-duplicate needs an argument\n$usage_alter" \
		ts alter r --on-duplicate
	check "$m/alter_no_table" 1 '' 'tsstore: alter: no such table "nope"\n' \
		ts alter nope --on-duplicate ignore
}

# ---- on the files ----
ts() { "$bin" -d "$tmp/direct" "$@"; }
suite direct

# ---- through tsstored ----
daemon_start "$tmp/daemon" "$tmp/sock"
ts() { "$bin" -s "$tmp/sock" "$@"; }
suite socket
daemon_stop

finish
