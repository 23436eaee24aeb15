#!/bin/sh
# test_access.sh -- what tsstore -s tcp:... may do on a loopback listener
# (tsstored's loopback-access, daemon/access.c), end to end:
#   1. the default configuration (no token): create, insert, query work
#      over TCP; drop and alter fail with exit 1 and the daemon's message
#      naming the level they need; through the unix socket they work;
#      a token sent to it is refused;
#   2. a token and --loopback-access write: insert works without the
#      token, drop needs it and works with --token-file.
#
# Usage: tests/cli/test_access.sh TSSTORE-or-BUILDDIR (see lib.sh).
set -u
. "$(dirname "$0")/lib.sh"
TSSTORE_NOW=2026-11-22T12:00:00Z
export TSSTORE_NOW
unset TSSTORE_TOKEN TSSTORE_TOKEN_FILE
ts() { "$bin" "$@"; }

printf 'host\tts\tv\nh1\t2026-11-22T10:00:00Z\t1\nh2\t2026-11-22T10:00:01Z\t2\n' >rows.tsv
rows='host\tts\tv\nh1\t2026-11-22T10:00:00Z\t1\nh2\t2026-11-22T10:00:01Z\t2\n'
no_token="use the unix socket, or start tsstored with a token (--token FILE) and send it ({\"op\":\"auth\",\"token\":…})"
hint="(no token was sent: give it in \$TSSTORE_TOKEN or in a file named by \$TSSTORE_TOKEN_FILE)"

# ---- 1. the default: loopback-access write ----

daemon_start "$tmp/db" "$tmp/sock" --listen tcp:127.0.0.1:0
daemon_addr tcp
check default_create 0 '' '' ts -s "$addr" create m --column host:string --column v:int64 --key host,ts
check default_insert 0 '' 'insert: 2 rows stored, 0 rejected\n' ts -s "$addr" insert m rows.tsv
check default_query 0 "$rows" '' ts -s "$addr" query m
check default_drop_refused 1 '' "tsstore: drop: $addr: \"drop\" is an admin operation: $no_token; loopback-access is write $hint\n" \
	ts -s "$addr" drop m
check default_alter_refused 1 '' "tsstore: alter: $addr: \"alter\" is an admin operation: $no_token; loopback-access is write $hint\n" \
	ts -s "$addr" alter m --ttl 30d
check default_still_there 0 'm\n' '' ts -s "$addr" tables
# a token sent to a daemon that has none: refused, so that it is known
check default_token_sent 1 '' "tsstore: tables: tsstored refused the token of \$TSSTORE_TOKEN: $addr: this tsstored has no token (--token FILE): there is nothing to authenticate with\n" \
	env TSSTORE_TOKEN=s3cret "$bin" -s "$addr" tables
check default_drop_unix 0 '' '' ts -s "$tmp/sock" drop m
check default_dropped 0 '' '' ts -s "$addr" tables
daemon_stop

# ---- 2. a token, and --loopback-access write ----

echo s3cret >"$tmp/token"
chmod 600 "$tmp/token" # tsstore refuses a token file others may read
rm -rf "$tmp/db"
daemon_start "$tmp/db" "$tmp/sock" --listen tcp:127.0.0.1:0 --token "$tmp/token" --loopback-access write
daemon_addr tcp
check token_create 0 '' '' ts -s "$addr" create m --column host:string --column v:int64 --key host,ts
check token_insert 0 '' 'insert: 2 rows stored, 0 rejected\n' ts -s "$addr" insert m rows.tsv
check token_drop_refused 1 '' "tsstore: drop: $addr: \"drop\" is an admin operation: send the token ({\"op\":\"auth\",\"token\":…}) or use the unix socket; loopback-access is write $hint\n" \
	ts -s "$addr" drop m
check token_query 0 "$rows" '' ts -s "$addr" query m
check token_drop 0 '' '' ts -s "$addr" --token-file "$tmp/token" drop m
check token_dropped 0 '' '' ts -s "$addr" tables
finish
