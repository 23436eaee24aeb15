#!/bin/sh
# test_check.sh -- golden tests of `tsstore check` and `tsstore snapshot`:
# check finds a flipped byte in a tablet, a damaged DESCRIPTOR and a
# truncated log segment (the exact lines and exit status), on the files
# and through tsstored; a snapshot opens and passes check and holds the
# same rows; and a snapshot taken while a daemon ingests -- both from the
# files beside the daemon (-d) and through it (-s) -- passes check and
# holds a prefix of the ingested batches, every batch whole or absent.
#
# Usage: tests/cli/test_check.sh TSSTORE-or-BUILDDIR (see lib.sh).
set -u
. "$(dirname "$0")/lib.sh"

usage_check='usage: tsstore check [TABLE]\n'
usage_snapshot='usage: tsstore snapshot [--incremental] DEST\n'

printf 'host\tts\tv\nh1\t2026-11-21T10:00:00Z\t1\nh2\t2026-11-21T10:00:00Z\t2\n' >first.tsv
printf 'host\tts\tv\nh3\t2026-11-21T11:00:00Z\t3\n' >second.tsv
rows='host\tts\tv\nh1\t2026-11-21T10:00:00Z\t1\nh2\t2026-11-21T10:00:00Z\t2\nh3\t2026-11-21T11:00:00Z\t3\n'
tablet=cpu/tablets/0000000000000001.tab

# setup: the table cpu with a tablet (first.tsv, flushed) and rows in
# the log (second.tsv).
setup() {
	ts create cpu --column host:string --column v:int64 --key host,ts &&
	ts insert cpu first.tsv 2>/dev/null && ts flush && ts insert cpu second.tsv 2>/dev/null
}

# flip FILE OFFSET: replace the byte at OFFSET of FILE by 0xff (keeping
# FILE.orig to put back).
flip() {
	cp "$1" "$1.orig"
	printf '\377' | dd of="$1" bs=1 seek="$2" conv=notrunc 2>/dev/null
}
unflip() { mv "$1.orig" "$1"; }

# damage_checks: check finds a flipped byte in a tablet's block and a
# damaged DESCRIPTOR, and is content again once they are put back.
damage_checks() {
	flip "$db/$tablet" 55 # block 0: after the 32-byte header and its 16-byte block header
	check tablet_flipped 1 "$tablet: damaged block 0: checksum mismatch\n" \
		'tsstore: check: 1 problem found\n' ts check
	unflip "$db/$tablet"
	flip "$db/cpu/DESCRIPTOR" 20
	check descriptor_damaged 1 'cpu/DESCRIPTOR: header checksum mismatch\n' \
		'tsstore: check: 1 problem found\n' ts check cpu
	unflip "$db/cpu/DESCRIPTOR"
	check sound_again 0 '' '' ts check
}

# ---- on the files ----

db=$tmp/db
ts() { "$bin" -d "$db" "$@"; }
setup || { echo "setup failed"; exit 1; }
check sound 0 '' '' ts check
check sound_one_table 0 '' '' ts check cpu
check unknown_table 1 '' 'tsstore: check: no such table "nope"\n' ts check nope
check extra_operand 2 '' "tsstore: check: unexpected argument \"x\"\n$usage_check" ts check cpu x

damage_checks

# ---- snapshot of a quiet database ----

check snapshot 0 '' '' ts snapshot "$tmp/copy"
check snapshot_checks 0 '' '' "$bin" -d "$tmp/copy" check
check snapshot_rows 0 "$rows" '' "$bin" -d "$tmp/copy" query cpu
check snapshot_exists 1 '' "tsstore: snapshot: backup: $tmp/copy already exists\n" ts snapshot "$tmp/copy"
check snapshot_missing_dest 2 '' "tsstore: snapshot: missing DEST\n$usage_snapshot" ts snapshot
check snapshot_inside 1 '' "tsstore: snapshot: backup: $db/copy is inside the database directory $db; choose a destination outside it\n" \
	ts snapshot "$db/copy"
ln -s "$db/cpu" "$tmp/link"
check snapshot_inside_by_link 1 '' "tsstore: snapshot: backup: $tmp/link/copy is inside the database directory $db; choose a destination outside it\n" \
	ts snapshot "$tmp/link/copy"
expect snapshot_inside_made_nothing ! -e "$db/copy"


# A truncated segment last: the writer would cut the log back to its
# valid prefix on its next open, as after a crash.
seg=$db/cpu/log/0000000000000000.seg
truncate -s 100000 "$seg"
check log_truncated 1 'cpu/log/0000000000000000.seg: 100000 bytes, not 67112960 (truncated)
cpu/log/0000000000000000.seg: batch at log position 464 is damaged (its segment file is missing or unreadable), before the newest commit at 632 (log/HEAD)\n' \
	'tsstore: check: 2 problems found\n' ts check

# incremental (a database of its own): an earlier copy is brought up to
# date, its tablet kept
db=$tmp/incdb
setup || { echo "setup of incdb failed"; exit 1; }
# (the same inode: linked from the earlier copy, not copied again)
rows3='host\tts\tv\nh1\t2026-11-21T10:00:00Z\t1\nh2\t2026-11-21T10:00:00Z\t2\nh3\t2026-11-21T11:00:00Z\t3\nh4\t2026-11-21T12:00:00Z\t4\n'
printf 'host\tts\tv\nh4\t2026-11-21T12:00:00Z\t4\n' >third.tsv
check incremental_first 0 '' '' ts snapshot --incremental "$tmp/inc"
check incremental_first_rows 0 "$rows" '' "$bin" -d "$tmp/inc" query cpu
ino_before=$(stat -c %i "$tmp/inc/$tablet")
ts insert cpu third.tsv 2>/dev/null && ts flush
check incremental_again 0 '' '' ts snapshot --incremental "$tmp/inc"
check incremental_checks 0 '' '' "$bin" -d "$tmp/inc" check
check incremental_rows 0 "$rows3" '' "$bin" -d "$tmp/inc" query cpu
expect incremental_kept_tablet "$(stat -c %i "$tmp/inc/$tablet")" -eq "$ino_before"
expect incremental_two_tablets "$(ls "$tmp/inc/cpu/tablets" | wc -l)" -eq 2
expect incremental_no_leftover "$(ls -d "$tmp"/inc.* 2>/dev/null | wc -l)" -eq 0
mkdir "$tmp/notacopy" && echo mine >"$tmp/notacopy/keep"
check incremental_not_a_copy 1 '' "tsstore: snapshot: backup: $tmp/notacopy is not a copy of a database (keep is not a table); an incremental backup replaces only a copy\n" \
	ts snapshot --incremental "$tmp/notacopy"
check incremental_not_a_copy_kept 0 'mine\n' '' cat "$tmp/notacopy/keep"

# ---- through tsstored ----

mode=socket
db=$tmp/sockdb
daemon_start "$db" "$tmp/sock"
ts() { "$bin" -s "$tmp/sock" "$@"; }
setup || { echo "setup through tsstored failed"; exit 1; }
check sound 0 '' '' ts check
check unknown_table 1 '' 'tsstore: check: no such table "nope"\n' ts check nope
damage_checks
check snapshot_relative 0 '' '' ts snapshot scopy
check snapshot_relative_checks 0 '' '' "$bin" -d "$tmp/scopy" check
check snapshot_relative_rows 0 "$rows" '' "$bin" -d "$tmp/scopy" query cpu
check snapshot_exists 1 '' "tsstore: snapshot: backup: $tmp/scopy already exists\n" ts snapshot scopy
check snapshot_incremental 0 '' '' ts snapshot --incremental scopy
check snapshot_incremental_rows 0 "$rows" '' "$bin" -d "$tmp/scopy" query cpu
check snapshot_incremental_checks 0 '' '' "$bin" -d "$tmp/scopy" check
check snapshot_inside 1 '' "tsstore: snapshot: backup: $db/copy is inside the database directory $db; choose a destination outside it\n" \
	ts snapshot "$db/copy"

# ---- a snapshot while the daemon ingests ----

# Batch b holds keys k = b*1000 .. b*1000+999 (one insert call is one
# batch of 1000 rows); every fifth batch is followed by a flush.
ts create seq --column k:int64 --key k,ts
batches=100
i=0
while [ $i -lt $batches ]; do
	# ts is 2026-11-21T10:00:00Z + k ns, written in RFC 3339: awk's
	# numbers are doubles (and mawk's %d stops at 2^31 - 1), so an
	# integer of nanoseconds would not come out exact.
	awk -v b=$i 'BEGIN { print "k\tts"; for (k = b * 1000; k < b * 1000 + 1000; k++)
	                     printf "%d\t2026-11-21T10:00:00.%09dZ\n", k, k }' >"batch$i.tsv"
	i=$((i + 1))
done
(
	i=0
	while [ $i -lt $batches ]; do
		"$bin" -s "$tmp/sock" insert seq "batch$i.tsv" 2>/dev/null || exit 1
		[ $((i % 5)) -eq 4 ] && { "$bin" -s "$tmp/sock" flush seq || exit 1; }
		i=$((i + 1))
	done
) &
writer=$!
# Snapshots, from the files beside the daemon and through it by turns,
# until the writer is done.
n=0
while kill -0 $writer 2>/dev/null; do
	if [ $((n % 2)) -eq 0 ]; then
		check "live_snapshot_$n" 0 '' '' "$bin" -d "$db" snapshot "$tmp/live$n"
	else
		check "live_snapshot_$n" 0 '' '' ts snapshot "$tmp/live$n"
	fi
	n=$((n + 1))
	sleep 0.05
done
wait $writer
expect writer_done $? -eq 0

# prefix COPY: seq in COPY holds k = 0 .. N-1, N a multiple of 1000;
# prints N.
prefix() {
	"$bin" -d "$1" query seq >"$tmp/out" 2>"$tmp/err" || return 1
	awk -F'\t' 'NR == 1 { next } $1 != NR - 2 { bad = 1 }
	            END { n = NR - 1; print n; exit (bad || n % 1000) }' "$tmp/out"
}
partial=0
i=0
while [ $i -lt $n ]; do
	check "live${i}_checks" 0 '' '' "$bin" -d "$tmp/live$i" check
	if got=$(prefix "$tmp/live$i"); then pass; else fail "live${i}_prefix" "not a prefix of whole batches"; fi
	[ "${got:-0}" -gt 0 ] && [ "${got:-0}" -lt $((batches * 1000)) ] && partial=$((partial + 1))
	i=$((i + 1))
done
# At least one copy was taken in the middle of the ingest.
expect snapshots_during_ingest "$partial" -gt 0
check all_rows_in_daemon 0 "$((batches * 1000 + 1))\n" '' sh -c "\"$bin\" -s \"$tmp/sock\" query seq | wc -l"
daemon_stop

finish
