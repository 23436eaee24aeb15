#!/bin/sh
# test_daemon_lock.sh -- `tsstore -d DATADIR` while tsstored serves
# DATADIR (tools/store.c, through_daemon; tsstore(1), -d):
#   1. the daemon listens on DATADIR/tsstored.sock (what it does with no
#      --listen): the commands that write go through it, with the output
#      of -s, and the reads stay direct;
#   2. it listens elsewhere: exit 1 and one line naming tsstored, its pid,
#      the socket looked for and -s; with -s the same command works;
#   3. DATADIR/tsstored.sock that is another daemon's, a dead socket, a
#      file: never gone through; the line says which.
# (Another writer than tsstored keeps the library's message:
# test_basic.sh, writer_refused.)
#
# Usage: tests/cli/test_daemon_lock.sh TSSTORE-or-BUILDDIR (see lib.sh).
set -u
. "$(dirname "$0")/lib.sh"
TSSTORE_NOW=2026-11-22T12:00:00Z
export TSSTORE_NOW
ts() { "$bin" -d "$tmp/db" "$@"; }

# ---- 1. through the daemon's socket in DATADIR ----

daemon_start "$tmp/db" "$tmp/db/tsstored.sock"
check create 0 '' '' ts create m --column host:string --column v:int64 --key host,ts --ttl 0
printf 'host\tts\tv\nh1\t2026-11-22T10:00:00Z\t1\nh2\t2026-11-22T10:00:01Z\t2\n' >rows.tsv
check insert 0 '' 'insert: 2 rows stored, 0 rejected\n' ts insert m rows.tsv
rows='host\tts\tv\nh1\t2026-11-22T10:00:00Z\t1\nh2\t2026-11-22T10:00:01Z\t2\n'
check query_direct 0 "$rows" '' ts query m
check query_socket 0 "$rows" '' "$bin" -s "$tmp/db/tsstored.sock" query m
check duplicate 1 '' 'tsstore: insert: line 2: duplicate key ("h1", 2026-11-22T10:00:00Z)\ntsstore: insert: line 3: duplicate key ("h2", 2026-11-22T10:00:01Z)\ninsert: 0 rows stored, 2 rejected\n' \
	ts insert m rows.tsv
check alter 0 '' '' ts alter m --add dc:string=eu
check schema 0 'host\tstring\t\t1\nts\ttimestamp\tnow\t2\nv\tint64\t0\t-\ndc\tstring\teu\t-\n' '' \
	ts schema m
check flush 0 '' '' ts flush m
check drop 0 '' '' ts drop m
check tables 0 '' '' ts tables
# the default directory, ./tsstore-data, as make run serves it
daemon_stop
mkdir -p here && cd here || exit 2
daemon_start ./tsstore-data ./tsstore-data/tsstored.sock
check default_datadir 0 '' '' "$bin" create n --column k:string --key k,ts
check default_datadir_tables 0 'n\n' '' "$bin" tables
daemon_stop
cd "$tmp" || exit 2

# ---- 2. a daemon listening elsewhere ----

daemon_start "$tmp/db" "$tmp/sock"
pid=$daemon_pid
check elsewhere 1 '' "tsstore: create: database $tmp/db is locked by another writer (pid $pid): tsstored serves it, not on $tmp/db/tsstored.sock (No such file or directory); go through it with -s SOCKET, SOCKET one of its unix sockets (its --listen unix:PATH)\n" \
	ts create m --column host:string --key host,ts
check elsewhere_with_s 0 '' '' "$bin" -s "$tmp/sock" create m --column host:string --key host,ts
check elsewhere_reads 0 'm\n' '' ts tables

# ---- 3. DATADIR/tsstored.sock that is not the daemon's ----

# another tsstored's socket: never taken for the one serving DATADIR
"$tsstored" -d "$tmp/other" --listen "unix:$tmp/db/tsstored.sock" 2>"$tmp/other.log" &
other=$!
i=0
while [ ! -S "$tmp/db/tsstored.sock" ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i + 1)); done
check another_daemons_socket 1 '' "tsstore: drop: database $tmp/db is locked by another writer (pid $pid): tsstored serves it, but $tmp/db/tsstored.sock is the socket of another process (pid $other); go through it with -s SOCKET, SOCKET one of its unix sockets\n" \
	ts drop m
check another_daemon_untouched 0 '' '' "$bin" -s "$tmp/db/tsstored.sock" tables
# the same socket once that daemon died without removing it: no one answers
kill -KILL "$other"
wait "$other" 2>/dev/null
check dead_socket 1 '' "tsstore: drop: database $tmp/db is locked by another writer (pid $pid): tsstored serves it, but $tmp/db/tsstored.sock: Connection refused; go through it with -s SOCKET, SOCKET one of its unix sockets\n" \
	ts drop m
# a file that is no socket
rm -f "$tmp/db/tsstored.sock"
: >"$tmp/db/tsstored.sock"
check not_a_socket 1 '' "tsstore: drop: database $tmp/db is locked by another writer (pid $pid): tsstored serves it, not on $tmp/db/tsstored.sock (Socket operation on non-socket); go through it with -s SOCKET, SOCKET one of its unix sockets (its --listen unix:PATH)\n" \
	ts drop m
check still_there 0 'm\n' '' ts tables
daemon_stop
finish
