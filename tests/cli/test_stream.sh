#!/bin/sh
# test_stream.sh -- `tsstore insert` fed over time, as `tail -F app.log |
# ... | tsstore insert t` feeds it: rows are stored as they arrive (a
# batch is sent once the input has been idle for --flush-idle, or once its
# first row has waited 1 s), before the writer closes the pipe; a line that
# arrives in pieces, across an idle flush, is put together whole; rows
# without ts take the time they were read, row by row; and loading the
# same rows again into a table whose duplicate policy is ignore stores
# nothing and says so; SIGTERM stores the rows read whole before the
# command ends by it.  Each case runs on the files (-d: a read-only query
# runs beside the insert that holds the database) and again through a
# tsstored (-s), for tsv, csv and jsonl.  Last, a tsstored with
# --idle-timeout closes the connection of an insert during a silence: the
# insert connects again for its next batch.
#
# A writer is a shell function that prints rows with pauses and waits at
# gates: files the test creates once it has seen what it expects, so that
# "visible before the pipe closed" is checked exactly.  Each wait is
# bounded (WAIT_STEPS polls of 0.05 s, 5 s), so a broken insert fails the
# test instead of hanging it.
#
# Usage: tests/cli/test_stream.sh TSSTORE-or-BUILDDIR (see lib.sh).
set -u
. "$(dirname "$0")/lib.sh"
unset TSSTORE_NOW
WAIT_STEPS=100

# gate NAME: wait until the file $tmp/NAME exists (at most 10 s).
gate() {
	i=0
	while [ ! -e "$tmp/$1" ] && [ $i -lt 200 ]; do
		sleep 0.05
		i=$((i + 1))
	done
}

# count TABLE: the number of rows a query of TABLE prints.
count() {
	ts query "$1" --format jsonl | wc -l | tr -d ' '
}

# wait_rows NAME TABLE N: within 5 s, TABLE holds N rows.
wait_rows() {
	i=0
	while [ "$(count "$2")" != "$3" ] && [ $i -lt $WAIT_STEPS ]; do
		sleep 0.05
		i=$((i + 1))
	done
	: >"$tmp/out"
	: >"$tmp/err"
	got=$(count "$2")
	if [ "$got" = "$3" ]; then pass; else fail "$1" "$2 holds $got rows, want $3 (5 s waited)"; fi
}

# pieces FORMAT: the header, two rows 0.2 s apart, the first part of a
# third row; at gate "$g.1", the rest of it; at gate "$g.2", the end.
pieces() {
	case $1 in
	tsv)
		printf 'host\tts\tv\n'
		printf 'a\t2026-11-21T10:00:01Z\t1\n'
		sleep 0.2
		printf 'a\t2026-11-21T10:00:02Z\t2\n'
		printf 'a\t2026-11-21T10:00:0'
		gate "$g.1"
		printf '3Z\t3\n' ;;
	csv)
		printf 'host,ts,v\r\n'
		printf 'a,2026-11-21T10:00:01Z,1\r\n'
		sleep 0.2
		printf 'a,2026-11-21T10:00:02Z,2\r\n'
		printf '"a\r\n' # inside a quoted field
		gate "$g.1"
		printf 'b",2026-11-21T10:00:03Z,3\r\n' ;;
	jsonl)
		printf '{"host":"a","ts":"2026-11-21T10:00:01Z","v":1}\n'
		sleep 0.2
		printf '{"host":"a","ts":"2026-11-21T10:00:02Z","v":2}\n'
		printf '{"host":"a","ts":"2026-11-21T10:00:0'
		gate "$g.1"
		printf '3Z","v":3}\n' ;;
	esac
	gate "$g.2"
}

# stream_case FORMAT: the rows of `pieces FORMAT` are visible while the
# writer holds the pipe open; the piece of a line is not taken for a row;
# the insert ends when the pipe closes, with its summary.
stream_case() {
	f=$1 g=$mode.$1
	third=a
	[ "$f" = csv ] && third='a\\u000d\\nb'
	check "$f/create" 0 '' '' ts create "s_$f" --column host:string --column v:int64 --key host,ts
	pieces "$f" | ts insert "s_$f" --format "$f" >"$tmp/ins.out" 2>"$tmp/ins.err" &
	ins=$!
	wait_rows "$f/visible_before_close" "s_$f" 2
	sleep 0.5 # more than --flush-idle: the piece of the third row must wait
	check "$f/piece_waits" 0 "2\n" '' count "s_$f"
	expect "$f/piece_not_rejected" ! -s "$tmp/ins.err"
	: >"$tmp/$g.1"
	wait_rows "$f/whole_line_visible" "s_$f" 3
	running=0
	kill -0 "$ins" 2>/dev/null && running=1
	expect "$f/still_running" "$running" -eq 1
	: >"$tmp/$g.2"
	wait "$ins"
	status=$?
	check "$f/summary" 0 'insert: 3 rows stored, 0 rejected\n' '' cat "$tmp/ins.err"
	expect "$f/status" "$status" -eq 0
	check "$f/rows" 0 "{\"host\":\"a\",\"ts\":1795255201000000000,\"v\":1}
{\"host\":\"a\",\"ts\":1795255202000000000,\"v\":2}
{\"host\":\"$third\",\"ts\":1795255203000000000,\"v\":3}\n" '' \
		ts query "s_$f" --format jsonl
}

# trickle: a row every 0.1 s for 4 s is never idle for --flush-idle
# (200 ms), yet rows are stored before it ends, once the first row of the
# batch has waited 1 s.
trickle() {
	printf 'host\tv\n'
	i=0
	while [ $i -lt 40 ]; do
		printf 't\t%d\n' $i
		sleep 0.1
		i=$((i + 1))
	done
	: >"$tmp/$mode.trickled"
	gate "$mode.trickle_end"
}

# slow: two rows without ts, of the same key; the second 0.3 s after
# the first was stored (so after it was read, however late the insert
# started).
slow() {
	printf 'host\nz\n'
	i=0
	while [ "$(count now)" = 0 ] && [ $i -lt $WAIT_STEPS ]; do
		sleep 0.05
		i=$((i + 1))
	done
	sleep 0.3
	printf 'z\n'
}

# piped_idem: idem.jsonl again, through a pipe.
piped_idem() {
	cat idem.jsonl | ts insert idem --format jsonl
}

suite() {
	for f in tsv csv jsonl; do
		stream_case "$f"
	done

	# ---- a row waits at most 1 s ----
	check trickle_create 0 '' '' ts create tr --column host:string --column v:int64 --key host,ts
	trickle | ts insert tr >"$tmp/ins.out" 2>"$tmp/ins.err" &
	ins=$!
	i=0 n=0
	while [ "$n" = 0 ] && [ $i -lt $WAIT_STEPS ]; do
		sleep 0.05
		i=$((i + 1))
		n=$(count tr)
	done
	trickling=1
	[ -e "$tmp/$mode.trickled" ] && trickling=0
	expect trickle_stored_while_running "$n" -gt 0 -a "$trickling" -eq 1
	: >"$tmp/$mode.trickle_end"
	wait "$ins"
	check trickle_summary 0 'insert: 40 rows stored, 0 rejected\n' '' cat "$tmp/ins.err"

	# ---- --flush-idle: a longer idle time holds the rows ----
	check hold_create 0 '' '' ts create hold --column host:string --key host,ts
	{ printf 'host\nh\n'; gate "$mode.hold"; } |
		ts insert hold --flush-idle 10s >"$tmp/ins.out" 2>"$tmp/ins.err" &
	ins=$!
	sleep 1.5
	check hold_not_yet 0 '0\n' '' count hold
	: >"$tmp/$mode.hold"
	wait "$ins"
	check hold_at_close 0 '1\n' '' count hold
	check hold_summary 0 'insert: 1 row stored, 0 rejected\n' '' cat "$tmp/ins.err"

	# ---- a stop signal: the rows read whole are stored, then the
	# command ends by it (SIGTERM: a background job of sh ignores SIGINT,
	# and insert leaves an ignored signal ignored) ----
	if command -v python3 >/dev/null 2>&1; then
		check sig_create 0 '' '' ts create sig --column host:string --key host,ts
		{ printf 'host\ns1\ns2\ns'; : >"$tmp/$mode.sig_written"; gate "$mode.sig_end"; } |
			exec "$bin" $tsopt insert sig --flush-idle 10s >"$tmp/ins.out" 2>"$tmp/ins.err" &
		ins=$!
		gate "$mode.sig_written"
		# until the insert has taken every byte from the pipe
		check sig_read 0 '' '' python3 -c '
import fcntl, struct, sys, termios, time
fd = open(sys.argv[1], "rb", buffering=0)
for _ in range(200):
    if struct.unpack("i", fcntl.ioctl(fd, termios.FIONREAD, b"\0\0\0\0"))[0] == 0:
        sys.exit(0)
    time.sleep(0.05)
sys.exit(1)' "/proc/$ins/fd/0"
		kill -TERM "$ins"
		wait "$ins" 2>/dev/null
		status=$?
		: >"$tmp/$mode.sig_end"
		expect sig_status "$status" -eq 143
		check sig_summary 0 'insert: 2 rows stored, 0 rejected\n' '' cat "$tmp/ins.err"
		check sig_rows 0 's1\ns2\n' '' sh -c "\"$bin\" $tsopt query sig --no-header | cut -f1"
	else
		skip "python3 is missing: insert stopped by a signal is not checked"
	fi

	# ---- rows without ts: the time each was read ----
	check now_create 0 '' '' ts create now --column host:string --key host,ts
	before=$(date +%s%N)
	slow | ts insert now >"$tmp/ins.out" 2>"$tmp/ins.err"
	check now_insert 0 'insert: 2 rows stored, 0 rejected\n' '' cat "$tmp/ins.err"
	after=$(date +%s%N)
	ts query now --format jsonl | sed 's/.*"ts":\([0-9]*\).*/\1/' >"$tmp/times"
	t1=$(sed -n 1p "$tmp/times") t2=$(sed -n 2p "$tmp/times")
	expect now_two_rows "$(wc -l <"$tmp/times")" -eq 2
	expect now_first_read_time "$t1" -ge "$before" -a "$t1" -le "$after"
	expect now_second_later "$t2" -ge $((t1 + 300000000)) -a "$t2" -le "$after"
	# a whole batch of the same key at once: every row stored, in order
	printf 'host\ny\ny\ny\ny\n' >same.tsv
	check now_same_batch 0 '' 'insert: 4 rows stored, 0 rejected\n' ts insert now same.tsv
	ts query now --prefix y --format jsonl | sed 's/.*"ts":\([0-9]*\).*/\1/' >"$tmp/times"
	expect now_same_batch_distinct "$(sort -u "$tmp/times" | wc -l)" -eq 4

	# ---- the same load again into an ignore table changes nothing ----
	check idem_create 0 '' '' ts create idem --column host:string --column v:int64 \
		--key host,ts --on-duplicate ignore
	awk 'BEGIN { for (i = 0; i < 2500; i++)
		printf "{\"host\":\"h%d\",\"ts\":%s,\"v\":%d}\n", i % 7, (1795255200 + i) "000000000", i }' \
		>idem.jsonl
	check idem_first 0 '' 'load: 2500 rows stored, 0 rejected\n' ts load idem idem.jsonl
	ts dump idem >"$tmp/dump1"
	check idem_again 0 '' 'load: 0 rows stored, 0 rejected, 2500 duplicates ignored\n' \
		ts load idem idem.jsonl
	check idem_again_piped 0 '' 'insert: 0 rows stored, 0 rejected, 2500 duplicates ignored\n' \
		piped_idem
	check_file idem_unchanged 0 "$tmp/dump1" '' ts dump idem
}

mkdir direct socket
cd "$tmp/direct" || exit 2
mode=direct
tsopt="-d $tmp/direct/db"
ts() { "$bin" -d "$tmp/direct/db" "$@"; }
suite

cd "$tmp/socket" || exit 2
mode=socket
daemon_start "$tmp/socket/db" "$tmp/socket/sock"
tsopt="-s $tmp/socket/sock"
ts() { "$bin" -s "$tmp/socket/sock" "$@"; }
suite
daemon_stop

# ---- a daemon that closes idle connections: the insert connects again ----
mode=idle
daemon_start "$tmp/socket/db" "$tmp/socket/sock" --idle-timeout 1s
check create 0 '' '' ts create quiet --column host:string --key host,ts
# quiet: a row, 3 s of silence (the daemon closes the connection), a row.
quiet() {
	{ printf 'host\na\n'; sleep 3; printf 'b\n'; } | ts insert quiet
}
check reconnect_after_idle 0 '' 'insert: 2 rows stored, 0 rejected\n' quiet
check reconnect_rows 0 '2\n' '' count quiet
daemon_stop

finish
