#!/bin/sh
# test_remote.sh -- the one client (common/client.c) end to end through a
# real tsstored listening on a unix socket and on TCP with a token:
#   1. tsstore -s tcp:HOST:PORT with the token of $TSSTORE_TOKEN,
#      --token-file and $TSSTORE_TOKEN_FILE: create, insert, query, the
#      same rows as through the unix socket (a bare path and unix:PATH,
#      which need no token);
#   2. a missing token, a wrong one, an unreadable token file, one that
#      others may read, a bad address: exit 1 and one clear line (never
#      the token);
#   3. the SQLite module's socket='tcp:...' with token_file=, and a wrong
#      token (skipped, with a SKIP line, without the sqlite3 shell).
#
# Usage: tests/cli/test_remote.sh TSSTORE-or-BUILDDIR (see lib.sh).
set -u
. "$(dirname "$0")/lib.sh"
TSSTORE_NOW=2026-11-22T12:00:00Z
export TSSTORE_NOW
unset TSSTORE_TOKEN TSSTORE_TOKEN_FILE
ts() { "$bin" "$@"; }

echo s3cret >"$tmp/token"
echo wrong >"$tmp/badtoken"
# tsstore refuses a token file others may read (section 2); the owner and
# a group may.
chmod 600 "$tmp/token"
chmod 640 "$tmp/badtoken"
daemon_start "$tmp/db" "$tmp/sock" --listen tcp:127.0.0.1:0 --token "$tmp/token"
daemon_addr tcp

# ---- 1. through TCP with a token, and through the unix socket ----

printf 'host\tts\tv\nh1\t2026-11-22T10:00:00Z\t1\nh2\t2026-11-22T10:00:01Z\t2\n' >rows.tsv
rows='host\tts\tv\nh1\t2026-11-22T10:00:00Z\t1\nh2\t2026-11-22T10:00:01Z\t2\n'
check tcp_create 0 '' '' env TSSTORE_TOKEN=s3cret "$bin" -s "$addr" create m \
	--column host:string --column v:int64 --key host,ts
check tcp_insert 0 '' 'insert: 2 rows stored, 0 rejected\n' \
	ts -s "$addr" --token-file "$tmp/token" insert m rows.tsv
check tcp_query_token_file_env 0 "$rows" '' env TSSTORE_TOKEN_FILE="$tmp/token" "$bin" -s "$addr" query m
check tcp_query_env_socket 0 "$rows" '' env TSSTORE_SOCKET="$addr" TSSTORE_TOKEN=s3cret "$bin" query m
# --token-file wins over the environment
check tcp_token_file_first 0 'm\n' '' env TSSTORE_TOKEN=wrong "$bin" -s "$addr" --token-file "$tmp/token" tables
check unix_bare_path 0 "$rows" '' ts -s "$tmp/sock" query m
check unix_prefix 0 "$rows" '' ts -s "unix:$tmp/sock" query m
# a unix socket needs no token, and a wrong one in the environment is not sent
check unix_ignores_token 0 'm\n' '' env TSSTORE_TOKEN=wrong "$bin" -s "$tmp/sock" tables

# ---- 2. what fails, and says so ----

check tcp_no_token 1 '' "tsstore: tables: $addr: \"tables\" is a read operation: send the token ({\"op\":\"auth\",\"token\":…}) or use the unix socket; loopback-access is none (no token was sent: give it in \$TSSTORE_TOKEN or in a file named by \$TSSTORE_TOKEN_FILE)\n" \
	ts -s "$addr" tables
check tcp_wrong_token 1 '' "tsstore: tables: tsstored refused the token of \$TSSTORE_TOKEN: $addr: wrong token; closing the connection\n" \
	env TSSTORE_TOKEN=wrong "$bin" -s "$addr" tables
check tcp_wrong_token_file 1 '' "tsstore: tables: tsstored refused the token of the file $tmp/badtoken: $addr: wrong token; closing the connection\n" \
	ts -s "$addr" --token-file "$tmp/badtoken" tables
check tcp_missing_token_file 1 '' "tsstore: tables: token file $tmp/none: No such file or directory\n" \
	env TSSTORE_TOKEN_FILE="$tmp/none" "$bin" -s "$addr" tables
: >"$tmp/empty"
chmod 600 "$tmp/empty"
check tcp_empty_token_file 1 '' "tsstore: tables: token file $tmp/empty: the first line must hold the token (1 to 4096 bytes)\n" \
	ts -s "$addr" --token-file "$tmp/empty" tables
# a token file others may read: refused before it is read, the token
# never printed, whichever way the file is named
echo s3cret >"$tmp/open"
chmod 644 "$tmp/open"
check tcp_token_file_readable_by_others 1 '' "tsstore: tables: token file $tmp/open: others may read it (mode 0644): refused; chmod o-r $tmp/open\n" \
	ts -s "$addr" --token-file "$tmp/open" tables
check tcp_token_file_env_readable_by_others 1 '' "tsstore: tables: token file $tmp/open: others may read it (mode 0644): refused; chmod o-r $tmp/open\n" \
	env TSSTORE_TOKEN_FILE="$tmp/open" "$bin" -s "$addr" tables
check tcp_bad_address 1 '' 'tsstore: tables: tcp:localhost: want tcp:HOST:PORT\n' \
	ts -s tcp:localhost tables
check token_file_needs_arg 2 '' "tsstore: option --token-file needs an argument\nusage: tsstore [-d DATADIR | -s SOCKET] COMMAND [ARGS]\n" \
	ts -s "$addr" --token-file

# ---- 3. the SQLite module over TCP ----

ext=$(cd "$(dirname "$bin")/.." && pwd)/libtsstore_sqlite.so
if ! command -v sqlite3 >/dev/null 2>&1 || [ ! -f "$ext" ]; then
	skip "the sqlite3 shell or $ext is missing: socket='tcp:...' is not tested"
	finish
fi
asan=$(ldd "$ext" 2>/dev/null | awk '$1 ~ /^lib[at]san\.so/ { print $3; exit }')
sq() {
	if [ -n "$asan" ]; then
		LD_PRELOAD=$asan sqlite3 -batch :memory:
	else
		sqlite3 -batch :memory:
	fi
}
printf ".load %s\nCREATE VIRTUAL TABLE temp.m USING tsstore(socket='%s', table='m', token_file='%s');\nSELECT host, v FROM m ORDER BY host;\nINSERT INTO m VALUES('h3', 1795340000000000000, 3);\nSELECT count(*), sum(v) FROM m;\n" \
	"$ext" "$addr" "$tmp/token" >tcp.sql
check sql_tcp_token_file 0 'h1|1\nh2|2\n3|6\n' '' from tcp.sql sq
printf ".load %s\nCREATE VIRTUAL TABLE temp.m USING tsstore(socket='%s', table='m');\nSELECT count(*) FROM m;\n" \
	"$ext" "$addr" >env.sql
export TSSTORE_TOKEN=s3cret
check sql_tcp_token_env 0 '3\n' '' from env.sql sq
# The shell's words around the module's message differ between sqlite3
# versions ("Parse error", "Runtime error"): the message itself must be
# on the first line.
TSSTORE_TOKEN=wrong
sq <env.sql >"$tmp/out" 2>"$tmp/err"
status=$?
unset TSSTORE_TOKEN
want="tsstore: tsstored refused the token of \$TSSTORE_TOKEN: $addr: wrong token; closing the connection"
if [ "$status" -ne 1 ]; then
	fail sql_tcp_wrong_token "exit status $status, want 1"
elif ! head -1 "$tmp/err" | grep -qF -- "$want"; then
	fail sql_tcp_wrong_token "the error does not say \"$want\""
else
	pass
fi
finish
