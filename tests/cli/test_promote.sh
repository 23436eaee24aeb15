#!/bin/sh
# test_promote.sh -- promote and epoch fencing (issue 33, docs/standby.md
# section 3): real daemons A (the primary), B (its standby), C (a later
# standby):
#   1. promote on a primary is refused, naming its epoch;
#   2. rows written to A reach B; A is killed (-9); B is promoted: it
#      answers role primary and epoch 2, its status says so, it takes
#      writes (JSON lines and POST /write), and holds every row A
#      acknowledged plus the new ones;
#      a second promote is refused; stopped, B passes check;
#   3. A restarts (its epoch 1): B, promoted, tells it of epoch 2 (it
#      tries A's address every 200 ms), and A refuses writes naming
#      epoch 2 from then on, over JSON lines and HTTP; its status says
#      fenced; C follows B (epoch 2), then is restarted following A: A
#      refuses it, naming both epochs;
#   3b. A, restarted (TERM, then KILL), is fenced from its start (its
#      EPOCH, format version 2, says so), refuses writes and logs what to
#      do; promote without --force is refused, with it A is the primary
#      of epoch 3 and takes writes, and a restart keeps it so;
#   4. B, restarted without --follow, is a primary of epoch 2 with every
#      row.
#
# Usage: tests/cli/test_promote.sh TSSTORE-or-BUILDDIR (see lib.sh).
set -u
here=$(cd "$(dirname "$0")" && pwd) # lib.sh changes directory
. "$here/lib.sh"
. "$here/daemons.sh" # start, port_of, await_equal; the token; daemons stopped on exit
TSSTORE_NOW=2026-11-22T12:00:00Z
export TSSTORE_NOW

A=$tmp/a.sock
B=$tmp/b.sock
C=$tmp/c.sock

start_a() {
	start "${1:-a.log}" "$A" -d "$tmp/a" --listen "tcp:127.0.0.1:${a_port:-0}" \
		--listen "http:127.0.0.1:${a_http:-0}" --token "$tmp/token"
	a_pid=$pid
	a_port=$(port_of "${1:-a.log}" tcp)
	a_http=$(port_of "${1:-a.log}" http)
}

rows() { printf 'host\tts\tv\n'; for r in "$@"; do printf '%s\n' "$r"; done; }

# ---- 1. promote on a primary: refused ----

start_a
check promote_primary 1 '' 'tsstore: promote: this tsstored is a primary (epoch 1); promote is for a standby (tsstored --follow)\n' \
	"$bin" -s "$A" promote
check promote_direct 1 '' 'tsstore: promote: promote is a tsstored'"'"'s: give its socket with -s SOCKET\n' \
	"$bin" -d "$tmp/a" promote

# ---- 2. A's rows reach B; A killed; B promoted ----

check create 0 '' '' "$bin" -s "$A" create m --column host:string --column v:int64 --key host,ts \
	--ttl 0
rows 'h1	2026-11-22T10:00:00Z	1' 'h2	2026-11-22T10:00:01Z	2' >r1.tsv
check insert_a 0 '' 'insert: 2 rows stored, 0 rejected\n' "$bin" -s "$A" insert m r1.tsv
start b.log "$B" -d "$tmp/b" --listen tcp:127.0.0.1:0 --listen http:127.0.0.1:0 --follow "tcp:127.0.0.1:$a_port" \
	--token "$tmp/token"
b_pid=$pid
b_port=$(port_of b.log tcp)
b_http=$(port_of b.log http)
await_equal followed "$A" "$B" query m
rows 'h3	2026-11-22T10:00:03Z	3' >r3.tsv
check insert_a_more 0 '' 'insert: 1 row stored, 0 rejected\n' "$bin" -s "$A" insert m r3.tsv
await_equal followed_more "$A" "$B" query m
"$bin" -s "$A" query m >"$tmp/acked"
kill -KILL "$a_pid"
wait "$a_pid" 2>/dev/null
check refused_before 1 '' "tsstore: insert: read-only standby of tcp:127.0.0.1:$a_port: \"insert\" would change the database; send it to the primary\ninsert: 0 rows stored, 0 rejected, stopped at line 2\n" \
	"$bin" -s "$B" insert m r1.tsv
"$bin" -s "$B" promote >"$tmp/promoted" 2>&1
check promote 0 'role: primary\nepoch: 2\nlineage: L\n' '' \
	sed 's/^lineage: [0-9a-f]\{32\}$/lineage: L/' "$tmp/promoted"
check promoted_status 0 "role: primary\nepoch: 2\npromoted_from: tcp:127.0.0.1:$a_port\n" '' \
	"$bin" -s "$B" status
check promoted_logged 0 "tsstored: promoted: no longer following tcp:127.0.0.1:$a_port; a primary at epoch 2\n" '' \
	grep 'promoted:' "$tmp/b.log"
check_file promoted_rows 0 "$tmp/acked" '' "$bin" -s "$B" query m
rows 'h4	2026-11-22T10:00:04Z	4' 'h5	2026-11-22T10:00:05Z	5' >r4.tsv
check insert_b 0 '' 'insert: 2 rows stored, 0 rejected\n' "$bin" -s "$B" insert m r4.tsv
all_rows='host\tts\tv\nh1\t2026-11-22T10:00:00Z\t1\nh2\t2026-11-22T10:00:01Z\t2\nh3\t2026-11-22T10:00:03Z\t3\nh4\t2026-11-22T10:00:04Z\t4\nh5\t2026-11-22T10:00:05Z\t5\n'
check rows_b 0 "$all_rows" '' "$bin" -s "$B" query m
if command -v curl >/dev/null 2>&1; then # the ingest endpoints write to B's new handle too
	check http_write_b 0 '204' '' curl -sS --max-time 10 -o /dev/null -w '%{http_code}' \
		-H 'Authorization: Token s3cret' --data-binary 'cpu,host=a usage=1.5 1795000000000000000' \
		"http://127.0.0.1:$b_http/write?precision=ns"
	check http_rows_b 0 'host\tts\tusage\na\t2026-11-18T11:06:40Z\t1.5\n' '' "$bin" -s "$B" query cpu
else
	skip "curl is not installed (scripts/deps.sh installs it): POST /write to a promoted standby is not tried"
fi
check create_b 0 '' '' "$bin" -s "$B" create n --column k:string --key k,ts --ttl 0
check flush_b 0 '' '' "$bin" -s "$B" flush m
check promote_again 1 '' 'tsstore: promote: this tsstored is a primary (epoch 2); promote is for a standby (tsstored --follow)\n' \
	"$bin" -s "$B" promote
check check_b_live 0 '' '' "$bin" -s "$B" check

# ---- 3. A returns: B, promoted, fences it; a follower of epoch 2 is refused ----

start_a
# B tries A's address every 200 ms since its promotion (link.c fence_old)
await_log a_fenced_by_b a.log 'stale primary'
check b_fenced_a 0 "tsstored: the old primary tcp:127.0.0.1:$a_port is fenced: it knows of epoch 2 and takes no more writes\n" '' \
	grep 'old primary' "$tmp/b.log"
rows 'h9	2026-11-22T10:00:09Z	9' >r9.tsv
start c.log "$C" -d "$tmp/c" --follow "tcp:127.0.0.1:$b_port" --token "$tmp/token"
c_pid=$pid
await_equal c_follows_b "$B" "$C" query m
kill -TERM "$c_pid"
wait "$c_pid"
start c2.log "$C" -d "$tmp/c" --follow "tcp:127.0.0.1:$a_port" --token "$tmp/token"
c_pid=$pid
await_log c_refused c2.log 'the primary answers EINVAL'
check c_refused 0 'follow: the primary answers EINVAL: the standby is at epoch 2, newer than this database'"'"'s 1: this database is a stale member of its lineage and takes no more writes\n' '' \
	sed -n "s/^tsstored: follow tcp:127\\.0\\.0\\.1:$a_port: \\(.*\\); again in [0-9]* s\$/\\1/p" "$tmp/c2.log" |
	sed -n 1p
stale="stale primary: a member of this lineage at epoch 2 exists, this database is at epoch 1"
check a_fenced 1 '' "tsstore: insert: $stale: \"insert\" is refused; send it to the primary of epoch 2 (this one may only become its standby)\ninsert: 0 rows stored, 0 rejected, stopped at line 2\n" \
	"$bin" -s "$A" insert m r9.tsv
check a_fenced_drop 1 '' "tsstore: drop: $stale: \"drop\" is refused; send it to the primary of epoch 2 (this one may only become its standby)\n" \
	"$bin" -s "$A" drop m
check a_fenced_status 0 'role: fenced\nepoch: 1\nfenced_by: 2\n' '' "$bin" -s "$A" status
stale_promote='tsstore: promote: this tsstored is a stale primary (epoch 1, a member of epoch 2 exists); promote is for a standby (tsstored --follow); if the member of epoch 2 is lost for good, promote --force makes this one the primary of epoch 3\n'
check a_fenced_promote 1 '' "$stale_promote" "$bin" -s "$A" promote
check a_fenced_logged 0 'tsstored: a follower at epoch 2 of this lineage asked to follow: this database (epoch 1) is a stale primary and takes no more writes\n' '' \
	grep 'stale primary' "$tmp/a.log"
if command -v curl >/dev/null 2>&1; then
	check a_fenced_http 0 '503' '' curl -sS --max-time 10 -w '%{http_code}' -o "$tmp/body" \
		-H 'Authorization: Token s3cret' --data-binary 'cpu,host=b usage=2 1795000000000000000' \
		"http://127.0.0.1:$a_http/write?precision=ns"
	check a_fenced_http_body 0 "{\"error\":\"$stale: POST /write is refused; send it to the primary of epoch 2 (this one may only become its standby)\"}\n" '' \
		cat "$tmp/body"
else
	skip "curl is not installed (scripts/deps.sh installs it): POST /write to a fenced primary is not tried"
fi
check a_reads 0 'host\tts\tv\nh1\t2026-11-22T10:00:00Z\t1\nh2\t2026-11-22T10:00:01Z\t2\nh3\t2026-11-22T10:00:03Z\t3\n' '' \
	"$bin" -s "$A" query m

# ---- 3b. the fence outlives A's restarts; promote --force ends it ----

kill -TERM "$c_pid" "$a_pid" # C would follow A again once A takes over
wait "$c_pid" "$a_pid"
# the format version byte of EPOCH: 2 while fenced (docs/epoch-format.md)
version_of() { od -An -tu1 -j8 -N1 "$1" | tr -d ' '; }
check epoch_file_fenced 0 '2\n' '' version_of "$tmp/a/EPOCH"
for how in TERM KILL; do
	start_a "a-$how.log"
	check "a_fenced_after_$how" 0 'role: fenced\nepoch: 1\nfenced_by: 2\n' '' "$bin" -s "$A" status
	check "a_refuses_after_$how" 1 '' "tsstore: insert: $stale: \"insert\" is refused; send it to the primary of epoch 2 (this one may only become its standby)\ninsert: 0 rows stored, 0 rejected, stopped at line 2\n" \
		"$bin" -s "$A" insert m r9.tsv
	check "a_start_logged_$how" 0 "tsstored: EPOCH records a member of this lineage at epoch 2: this database (epoch 1) is a stale primary and takes no writes; follow the primary of epoch 2 (--follow), or, if it is lost for good, 'tsstore promote --force' makes this one the primary of epoch 3\n" '' \
		grep 'EPOCH records' "$tmp/a-$how.log"
	kill "-$how" "$a_pid"
	wait "$a_pid" 2>/dev/null
done
start_a a-force.log
check a_promote_unforced 1 '' "$stale_promote" "$bin" -s "$A" promote
"$bin" -s "$A" promote --force >"$tmp/forced" 2>&1
check a_promote_force 0 'role: primary\nepoch: 3\nlineage: L\n' '' \
	sed 's/^lineage: [0-9a-f]\{32\}$/lineage: L/' "$tmp/forced"
check a_forced_status 0 'role: primary\nepoch: 3\n' '' "$bin" -s "$A" status
rows 'h8	2026-11-22T10:00:08Z	8' >r8.tsv
check a_forced_insert 0 '' 'insert: 1 row stored, 0 rejected\n' "$bin" -s "$A" insert m r8.tsv
check a_forced_logged 0 'tsstored: promote --force: this stale primary is the primary of epoch 3 (it had heard of epoch 2)\n' '' \
	grep 'promote --force:' "$tmp/a-force.log"
check promote_force_primary 1 '' 'tsstore: promote: this tsstored is a primary (epoch 3); promote is for a standby (tsstored --follow)\n' \
	"$bin" -s "$A" promote --force
kill -TERM "$a_pid"
wait "$a_pid"
check epoch_file_unfenced 0 '1\n' '' version_of "$tmp/a/EPOCH"
start_a a-after.log
check a_after_force_status 0 'role: primary\nepoch: 3\n' '' "$bin" -s "$A" status
check a_after_force_rows 0 'host\tts\tv\nh1\t2026-11-22T10:00:00Z\t1\nh2\t2026-11-22T10:00:01Z\t2\nh3\t2026-11-22T10:00:03Z\t3\nh8\t2026-11-22T10:00:08Z\t8\n' '' \
	"$bin" -s "$A" query m

# ---- 4. B restarted as a plain primary: epoch 2, every row ----

kill -TERM "$a_pid" "$b_pid"
wait "$a_pid" "$b_pid"
check check_b 0 '' '' "$bin" -d "$tmp/b" check
check check_a 0 '' '' "$bin" -d "$tmp/a" check
start b2.log "$B" -d "$tmp/b"
b_pid=$pid
check b_restarted_status 0 'role: primary\nepoch: 2\n' '' "$bin" -s "$B" status
check b_restarted_rows 0 "$all_rows" '' "$bin" -s "$B" query m
tables_b='m\nn\n'
command -v curl >/dev/null 2>&1 && tables_b='cpu\nm\nn\n'
check b_restarted_tables 0 "$tables_b" '' "$bin" -s "$B" tables
kill -TERM "$b_pid"
wait "$b_pid"

finish
