#!/bin/sh
# test_basic.sh -- golden tests of the tsstore admin command: tables,
# create, schema, stats, alter, drop (on the files with -d, and through
# tsstored with -s), the scheduler's settings given to tsstored as its
# stats show them (and the values it refuses), the usage errors and the
# default database (insert, the commands that print rows, check and
# snapshot have their own test_insert.sh, test_query.sh, test_check.sh).
#
# Usage: tests/cli/test_basic.sh TSSTORE
#   TSSTORE is the tsstore binary, or a build directory holding
#   bin/tsstore (scripts/run-tests.sh passes the build directory).
# Works in its own temporary directory, removed on exit.  Every check
# compares the exact exit status, stdout and stderr (stats: the exact
# lines expected, in order, among the counters).  The last line is
# "N passed, M failed"; the exit status is 1 when anything failed.
set -u
. "$(dirname "$0")/lib.sh"
unset TSSTORE_NOW
db=$tmp/db

usage_create='usage: tsstore create TABLE --column NAME:TYPE[=DEFAULT]... --key COL,...,ts [--ttl DUR] [--on-duplicate reject|ignore|replace]\n'
usage_alter='usage: tsstore alter TABLE [--add NAME:TYPE[=DEFAULT]]... [--widen COL]... [--ttl DUR] [--on-duplicate reject|ignore|replace]\n'
usage_global='usage: tsstore [-d DATADIR | -s SOCKET] COMMAND [ARGS]\n'

ts() { "$bin" -d "$db" "$@"; }

# check_lines NAME LINES COMMAND...: COMMAND succeeds, says nothing on
# stderr, and the lines of the printf format LINES appear exactly, in that
# order, among the lines of its stdout (counters may be added over time).
check_lines() {
	name=$1
	printf "$2" >"$tmp/want_out"
	shift 2
	"$@" >"$tmp/out" 2>"$tmp/err"
	status=$?
	if [ "$status" -ne 0 ] || [ -s "$tmp/err" ]; then
		fail "$name" "exit status $status, want 0 and no stderr"
	elif ! awk 'BEGIN { n = 0; i = 0 }
	            NR == FNR { want[n++] = $0; next }
	            i < n && $0 == want[i] { i++ }
	            END { exit (i < n) }' "$tmp/want_out" "$tmp/out"; then
		fail "$name" "missing or misordered lines: $(tr '\n' '|' <"$tmp/want_out")"
	else
		pass
	fi
}

# ---- help, version, usage errors of the command line ----

check_help() {
	"$bin" --help >"$tmp/out" 2>"$tmp/err" || return 1
	[ -s "$tmp/err" ] && return 1
	for c in tables create schema stats alter drop insert query latest \
	         aggregate flush check snapshot dump load; do
		grep -Eq "^  $c( |$)" "$tmp/out" || return 1
	done
	for o in '-d DATADIR' '-s SOCKET' '--help' '--version' '--column NAME:TYPE' \
	         '--key COL' '--ttl DUR' '--on-duplicate' '--add NAME:TYPE' '--widen COL' '--format' \
	         '--prefix' '--from' '--to' '--desc' '--limit' '--every' '--group' '--before'; do
		grep -q -e "$o" "$tmp/out" || return 1
	done
}
if check_help; then pass; else fail help "--help does not list every command and option"; fi

"$bin" --version >"$tmp/out" 2>"$tmp/err"
if [ $? -eq 0 ] && grep -Eqx 'tsstore [0-9]+\.[0-9]+\.[0-9]+.*' "$tmp/out" && [ ! -s "$tmp/err" ]
then pass; else fail version "want \"tsstore X.Y.Z\""; fi

# One release version: the command's, the library's and libtsstore.pc's.
pcver=$(PKG_CONFIG_PATH="${bin%/bin/tsstore}" pkg-config --modversion libtsstore 2>&1)
if [ "tsstore $pcver" = "$(cat "$tmp/out")" ]; then pass
else fail version_matches_pc "libtsstore.pc says $pcver, the command says $(cat "$tmp/out")"; fi

check no_command 2 '' "tsstore: missing command\n$usage_global" "$bin"
check unknown_command 2 '' "tsstore: frob: unknown command\n$usage_global" ts frob
check unknown_global_option 2 '' "tsstore: unknown option --bogus\n$usage_global" "$bin" --bogus
check d_needs_argument 2 '' "tsstore: option -d needs an argument\n$usage_global" "$bin" -d
check d_and_s 2 '' "tsstore: -d and -s cannot be used together\n$usage_global" \
	"$bin" -d "$db" -s "$tmp/sock" tables
check command_help 0 'usage: tsstore schema TABLE\nshow the columns: name TAB type TAB default TAB key position (or -)\n' '' \
	ts schema --help

# ---- a missing database is an error, and is not created ----

for c in tables 'schema cpu' 'stats' 'alter cpu --ttl 1d' 'drop cpu'; do
	# shellcheck disable=SC2086
	check "missing_db_$c" 1 '' "tsstore: ${c%% *}: database $db: No such file or directory\n" ts $c
done
expect missing_db_not_created ! -e "$db"

# The table commands run on the files and again through tsstored, with
# the same expected output (cases unindented: some hold multi-line text).
suite_ddl() {
# ---- create ----

check create 0 '' '' ts create cpu --column host:string --column usage:double=0.5 \
	--column n:int32=-7 --key host,ts --ttl 7d
check create_duplicate 1 '' 'tsstore: create: table "cpu" already exists\n' \
	ts create cpu --column host:string --key host,ts
check create_reserved 1 '' 'tsstore: create: LOCK is reserved: the database keeps a file of that name\n' \
	ts create LOCK --column v:int64 --key ts
check create_bad_type 2 '' "tsstore: create: --column \"x:float\": unknown type \"float\" (want int32, int64, double, timestamp, string or blob)\n$usage_create" \
	ts create x --column x:float --key ts
check create_missing_key 2 '' "tsstore: create: missing --key\n$usage_create" \
	ts create x --column a:int32
check create_missing_table 2 '' "tsstore: create: missing TABLE\n$usage_create" \
	ts create --key ts
check create_extra_operand 2 '' "tsstore: create: unexpected argument \"y\"\n$usage_create" \
	ts create x y --key ts
check create_spec_no_type 2 '' "tsstore: create: --column \"host\": want NAME:TYPE[=DEFAULT]\n$usage_create" \
	ts create x --column host --key ts
check create_bad_column_name 2 '' "tsstore: create: --column \"9a:int32\": invalid column name \"9a\" (want [A-Za-z_][A-Za-z0-9_]{0,63})\n$usage_create" \
	ts create x --column 9a:int32 --key ts
check create_int32_range 2 '' "tsstore: create: --column \"n:int32=2147483648\": bad default: 2147483648 is out of range for int32\n$usage_create" \
	ts create x --column n:int32=2147483648 --key ts
check create_int_garbage 2 '' "tsstore: create: --column \"n:int64=12abc\": bad default: \"12abc\" is not a decimal integer\n$usage_create" \
	ts create x --column n:int64=12abc --key ts
check create_double_garbage 2 '' "tsstore: create: --column \"d:double=1.5x\": bad default: \"1.5x\" is not a number\n$usage_create" \
	ts create x --column d:double=1.5x --key ts
check create_blob_odd 2 '' "tsstore: create: --column \"b:blob=abc\": bad default: \"abc\" is not hex: odd number of digits\n$usage_create" \
	ts create x --column b:blob=abc --key ts
check create_bad_time 2 '' "tsstore: create: --column \"t:timestamp=2026-13-01T00:00:00Z\": bad default: timestamp \"2026-13-01T00:00:00Z\": month 13 is out of range 01-12\n$usage_create" \
	ts create x --column t:timestamp=2026-13-01T00:00:00Z --key ts
check create_bad_ttl 2 '' "tsstore: create: --ttl: duration \"7x\": expected a unit (ns us ms s m h d w) at offset 1\n$usage_create" \
	ts create x --key ts --ttl 7x
check create_empty_key_name 2 '' "tsstore: create: --key \"host,,ts\": empty column name\n$usage_create" \
	ts create x --column host:string --key host,,ts
check create_unknown_option 2 '' "tsstore: create: unknown option --colum=a\n$usage_create" \
	ts create x --colum=a --key ts
check create_option_needs_argument 2 '' "tsstore: create: option --ttl needs an argument\n$usage_create" \
	ts create x --key ts --ttl
check create_key_not_ts 1 '' 'tsstore: create: table "x": key: the last key column must be ts, not "host"\n' \
	ts create x --column host:string --key host
check create_ts_default 1 '' 'tsstore: create: table "x": column "ts": cannot have a default (a missing ts is the current time)\n' \
	ts create x --column ts:timestamp=0 --key ts
check create_bad_table_name 1 '' 'tsstore: create: invalid table name "1x" (want [A-Za-z_][A-Za-z0-9_]{0,63})\n' \
	ts create 1x --key ts

# Every type, its default in text, and what the schema prints back.
note=$(printf 'a\tb\\c')
check create_every_type 0 '' '' ts create ev --column src:string \
	--column "note:string=$note" --column raw:blob=00FF \
	--column at:timestamp=2026-11-21T10:00:00.5+02:00 \
	--column big:int64=-9223372036854775808 --column d:double=1e300 \
	--column z:int32 --column e:string --column b:blob --column t0:timestamp \
	--key src,ts
check create_explicit_ts 0 '' '' ts create m --column ts:timestamp --column v:double --key ts

# ---- tables, schema, stats ----

check tables 0 'cpu\nev\nm\n' '' ts tables
check schema_implicit_ts 0 'host\tstring\t\t1\nts\ttimestamp\tnow\t2\nusage\tdouble\t0.5\t-\nn\tint32\t-7\t-\n' '' \
	ts schema cpu
check schema_every_type 0 'src\tstring\t\t1
ts\ttimestamp\tnow\t2
note\tstring\ta\\tb\\\\c\t-
raw\tblob\t00ff\t-
at\ttimestamp\t2026-11-21T08:00:00.5Z\t-
big\tint64\t-9223372036854775808\t-
d\tdouble\t1e+300\t-
z\tint32\t0\t-
e\tstring\t\t-
b\tblob\t\t-
t0\ttimestamp\t1970-01-01T00:00:00Z\t-
' '' ts schema ev
check schema_explicit_ts 0 'ts\ttimestamp\tnow\t1\nv\tdouble\t0\t-\n' '' ts schema m
check schema_no_table 1 '' 'tsstore: schema: no such table "nope"\n' ts schema nope
check schema_missing_operand 2 '' 'tsstore: schema: missing TABLE\nusage: tsstore schema TABLE\n' ts schema
check schema_unknown_option 2 '' 'tsstore: schema: unknown option --foo\nusage: tsstore schema TABLE\n' \
	ts schema --foo cpu
check_lines stats 'schema_version: 1\ncolumns: 4\nttl_ns: 604800000000000\nttl: 1w\ntablets: 0\ntablet_rows: 0\n' \
	ts stats cpu
check_lines stats_ttl_forever 'ttl_ns: 0\nttl: 0s\n' ts stats m
check stats_no_table 1 '' 'tsstore: stats: no such table "nope"\n' ts stats nope

# ---- alter ----

check alter 0 '' '' ts alter cpu --add extra:int64=5 --widen n --ttl 1d
check schema_after_alter 0 'host\tstring\t\t1\nts\ttimestamp\tnow\t2\nusage\tdouble\t0.5\t-\nn\tint64\t-7\t-\nextra\tint64\t5\t-\n' '' \
	ts schema cpu
check_lines stats_after_alter 'schema_version: 3\ncolumns: 5\nttl_ns: 86400000000000\nttl: 1d\n' \
	ts stats cpu
check alter_widen_double 1 '' 'tsstore: alter: table "cpu": column "usage": only int32 can be widened, it is double\n' \
	ts alter cpu --widen usage
check alter_widen_unknown 1 '' 'tsstore: alter: table "cpu": column "nope": no such column\n' \
	ts alter cpu --widen nope
check alter_stops_at_failure 1 '' 'tsstore: alter: table "cpu": column "host": already exists (the 1 change before it was made)\n' \
	ts alter cpu --add flag:int32=1 --add host:string
check schema_after_partial_alter 0 'host\tstring\t\t1\nts\ttimestamp\tnow\t2\nusage\tdouble\t0.5\t-\nn\tint64\t-7\t-\nextra\tint64\t5\t-\nflag\tint32\t1\t-\n' '' \
	ts schema cpu
check alter_nothing 2 '' "tsstore: alter: nothing to change (want --add, --widen, --ttl or --on-duplicate)\n$usage_alter" \
	ts alter cpu
check alter_bad_spec 2 '' "tsstore: alter: --add \"q:int32=x\": bad default: \"x\" is not a decimal integer\n$usage_alter" \
	ts alter cpu --ttl 2d --add q:int32=x
check_lines alter_bad_spec_changes_nothing 'ttl: 1d\n' ts stats cpu
check alter_no_table 1 '' 'tsstore: alter: no such table "nope"\n' ts alter nope --ttl 1d
check_lines stats_every_table 'cpu:\n  schema_version: 4\n  columns: 6\n  ttl_ns: 86400000000000\n  ttl: 1d\nev:\n  columns: 11\nm:\n  columns: 2\n  ttl: 0s\n' \
	ts stats
}

suite_drop() {
# ---- drop ----

check drop 0 '' '' ts drop ev
check tables_after_drop 0 'cpu\nm\n' '' ts tables
check drop_again 1 '' 'tsstore: drop: no such table "ev"\n' ts drop ev
check drop_missing_operand 2 '' 'tsstore: drop: missing TABLE\nusage: tsstore drop TABLE\n' ts drop
}

mode=direct
suite_ddl
# ---- the read-only commands run beside a writer; writers are refused ----

# (flock(1) holds the lock as a writer would; the LOCK file is emptied so
# that the message names no stale pid.)
if command -v flock >/dev/null 2>&1 && [ -d "$db" ]; then
	cp /dev/null "$db/LOCK"
	check readonly_beside_writer 0 'cpu\nev\nm\n' '' flock -o "$db/LOCK" "$bin" -d "$db" tables
	check writer_refused 1 '' "tsstore: drop: database $db is locked by another writer\n" \
		flock -o "$db/LOCK" "$bin" -d "$db" drop m
fi

mode=direct
suite_drop

mode=socket
daemon_start "$tmp/sockdb" "$tmp/daemon.sock"
ts() { "$bin" -s "$tmp/daemon.sock" "$@"; }
suite_ddl
suite_drop
daemon_stop
ts() { "$bin" -d "$db" "$@"; }
mode=

# ---- the scheduler's settings: tsstored's flags in the stats ----
# Through -s the stats show the daemon's settings (the two given, the
# defaults of the others); with -d, the command's own read-only handle
# shows the defaults and counters of 0.  Values the daemon refuses stop
# it with status 2 and a message naming the option.

sched_lines='setting_merge_slice_rows: %s\nsetting_merge_rollover_spread_ns: 1800000000000\nsetting_maint_busy_window_ns: 100000000\nsetting_maint_busy_share_percent: %s\nsetting_merges_enabled: 1\n'
daemon_start "$tmp/scheddb" "$tmp/sched.sock" --maint-busy-share 20 --merge-slice-rows 128
check sched_create 0 '' '' "$bin" -s "$tmp/sched.sock" create cpu --column host:string --key host,ts
check_lines stats_sched_socket "$(printf "$sched_lines" 128 20)" "$bin" -s "$tmp/sched.sock" stats cpu
check_lines stats_sched_socket_all "$(printf "$sched_lines" 128 20 | sed 's/^/  /')" \
	"$bin" -s "$tmp/sched.sock" stats
daemon_stop
check_lines stats_sched_direct "$(printf "$sched_lines" 4096 50)\nmaint_merges: 0\nmaint_throttled_ns: 0\n" \
	"$bin" -d "$tmp/scheddb" stats cpu
check sched_share_0 2 '' 'tsstored: --maint-busy-share: maint-busy-share: "0" is not a positive integer\n' \
	"$tsstored" -d "$tmp/nodb" --maint-busy-share 0
check sched_share_101 2 '' 'tsstored: --maint-busy-share: maint-busy-share: "101" is out of range\n' \
	"$tsstored" -d "$tmp/nodb" --maint-busy-share=101
check sched_slice_rows_0 2 '' 'tsstored: --merge-slice-rows: merge-slice-rows: "0" is not a positive integer\n' \
	"$tsstored" -d "$tmp/nodb" --merge-slice-rows 0
printf 'merge-rollover-spread = 0\n' >"$tmp/sched.conf"
check sched_conf_spread_0 2 '' "tsstored: $tmp/sched.conf:1: merge-rollover-spread: \"0\" is out of range\n" \
	"$tsstored" -d "$tmp/nodb" --config "$tmp/sched.conf"
expect sched_refused_no_db ! -e "$tmp/nodb"

# ---- -s with no daemon ----

check socket_missing 1 '' "tsstore: tables: $tmp/sock: No such file or directory\n" \
	"$bin" -s "$tmp/sock" tables
check socket_env_missing 1 '' "tsstore: tables: $tmp/sock: No such file or directory\n" \
	env TSSTORE_SOCKET="$tmp/sock" "$bin" tables
check d_overrides_socket_env 0 'cpu\nm\n' '' env TSSTORE_SOCKET="$tmp/sock" "$bin" -d "$db" tables

# ---- -s with a daemon that never answers ----
# A stopped tsstored is the daemon that accepts and never answers: the
# kernel still completes connects into its listener's backlog, so the
# request goes out and nothing comes back.  Each command must give up
# after its timeout, with the message; the elapsed time is only checked
# against the 30 s default (a backstop: the flag, not the default, ended
# the wait).
daemon_start "$tmp/hungdb" "$tmp/hung.sock"
kill -STOP "$daemon_pid"
started=$(date +%s)
check timeout_flag 1 '' "tsstore: tables: no answer from $tmp/hung.sock within 1s\n" \
	"$bin" -s "$tmp/hung.sock" --timeout 1s tables
expect timeout_flag_elapsed $(($(date +%s) - started)) -lt 30
check timeout_env 1 '' "tsstore: query: no answer from $tmp/hung.sock within 300ms\n" \
	env TSSTORE_TIMEOUT=300ms "$bin" -s "$tmp/hung.sock" query cpu
check timeout_flag_over_env 1 '' "tsstore: insert: no answer from $tmp/hung.sock within 200ms\n" \
	env TSSTORE_TIMEOUT=1h "$bin" --timeout 200ms -s "unix:$tmp/hung.sock" insert cpu /dev/null
check timeout_long_command 1 '' "tsstore: check: no answer from $tmp/hung.sock within 100ms\n" \
	"$bin" -s "$tmp/hung.sock" --timeout 100ms check
kill -CONT "$daemon_pid"
daemon_stop
check timeout_bad 2 '' "tsstore: --timeout \"soon\": want a duration (30s, 2m; 0: no limit)\n$usage_global" \
	"$bin" --timeout soon tables
check timeout_env_bad 2 '' "tsstore: \$TSSTORE_TIMEOUT \"-1s\": want a duration (30s, 2m; 0: no limit)\n$usage_global" \
	env TSSTORE_TIMEOUT=-1s "$bin" -s "$tmp/hung.sock" tables

# ---- the default database is ./tsstore-data ----

mkdir "$tmp/wd" && cd "$tmp/wd" || exit 2
check default_datadir_create 0 '' '' "$bin" create here --key ts
expect default_datadir_is_cwd -f "$tmp/wd/tsstore-data/here/DESCRIPTOR"
check default_datadir_tables 0 'here\n' '' "$bin" tables
cd "$tmp" || exit 2

finish
