#!/bin/sh
# test_fuse.sh -- the mounted view (tsstore-fuse) with the real tools: cat
# of every format equals `tsstore query` for the same window; grep, head,
# tail -n, wc -l, awk, sort, cut, cp and diff; ls of tables, days and
# hours; cp, rsync, tar and shutil.copy, which trust stat's size and
# mtime (also with no text cached, and from tsstored --mount); a file opened before an insert keeps its snapshot while a new
# open sees the new rows, and rows deleted or replaced through the daemon; writes fail; bad names are ENOENT; and the
# unmount (SIGTERM) is clean with a reader in the middle of a file.
#
# Usage: tests/cli/test_fuse.sh TSSTORE-or-BUILDDIR (see lib.sh).
# Needs /dev/fuse and fusermount3 (root, as in CI); without them it says
# SKIP and checks nothing.
set -u
. "$(dirname "$0")/lib.sh"
fuse=$(dirname "$bin")/tsstore-fuse

if ! (exec 3<>/dev/fuse) 2>/dev/null || ! command -v fusermount3 >/dev/null; then
	skip "/dev/fuse cannot be opened or fusermount3 is missing: the mount is not tested"
	finish
fi

TSSTORE_NOW=2026-11-22T12:00:00Z
export TSSTORE_NOW
db=$tmp/db
mnt=$tmp/mnt
mkdir "$mnt"
ts() { "$bin" -d "$db" "$@"; }

# 2 days x 24 hours x 60 minutes x 3 hosts of cpu rows, and a small table.
ts create cpu --column host:string --column usage:double --column note:string \
	--key host,ts >/dev/null
awk 'BEGIN { print "host\tts\tusage\tnote"
	for (d = 20; d <= 21; d++) for (h = 0; h < 24; h++) for (m = 0; m < 60; m++)
		for (k = 1; k <= 3; k++)
			printf "web%d\t2026-11-%02dT%02d:%02d:00Z\t%d.%d\t%s\n", k, d, h, m, (h * 60 + m) % 100,
			       k, (m % 7 == 0) ? "spike, \"big\"" : "ok" }' >rows.tsv
ts insert cpu rows.tsv 2>/dev/null
ts create mem --column host:string --column free:int64 --key host,ts >/dev/null
printf 'host\tts\tfree\nweb1\t2026-11-22T11:30:00Z\t512\n' | ts insert mem 2>/dev/null
ts flush cpu --before 2026-11-21T00:00:00Z
# Rows at the edges of the int64 ns range: its first day, 1677-09-21, and
# its last, 2262-04-11, are partial (the range starts at 00:12:43.145224192
# and ends at 23:47:16.854775807), and "top" holds only a row at its very
# last instant, which no half-open window reaches.
ts create edge --column k:string --column v:int64 --key k,ts >/dev/null
# (--time-unit ns: a bare integer before 1990 is otherwise refused.)
printf 'k\tts\tv\nmin\t-9223372036854775808\t1\nmin1\t-9223372036854775807\t2\n' | ts --time-unit ns insert edge 2>/dev/null
printf 'k\tts\tv\nmax\t9223372036854775807\t3\nmax1\t9223372036854775806\t4\n' |
	TSSTORE_NOW=2262-04-11T23:00:00Z ts insert edge 2>/dev/null
ts create top --column k:string --key k,ts >/dev/null
printf 'k\tts\nmax\t9223372036854775807\n' | TSSTORE_NOW=2262-04-11T23:00:00Z ts insert top 2>/dev/null
# A table whose descriptor is damaged: the library cannot open it, so
# the view must not list it (it would then be ENOENT).
ts create broken --column k:string --key k,ts >/dev/null
printf 'garbage' >"$db/broken/DESCRIPTOR"
ts create hard --column k:string --column d:double --column s:string --key k,ts >/dev/null
printf 'k\tts\td\ts\na\t2026-11-21T10:00:00Z\tnan\t\nb\t2026-11-21T10:00:00Z\tinf\t\nc\t2026-11-21T10:00:00Z\t-inf\t\nd\t2026-11-21T10:00:00Z\t-0\t\ne\t2026-11-21T10:00:00Z\t0\t\000\001\002\003\004\005\006\007\010\\t\\n\013\014\015\016\017\020\021\022\023\024\025\026\027\030\031\032\033\034\035\036\037\177\\\\,"end\n' |
	ts insert hard 2>/dev/null

"$fuse" "$db" "$mnt" -f 2>"$tmp/fuse.log" &
fuse_pid=$!
i=0
while ! mountpoint -q "$mnt" && [ $i -lt 200 ]; do sleep 0.05; i=$((i + 1)); done
if ! mountpoint -q "$mnt"; then
	echo "FAIL: mount: not mounted"; cat "$tmp/fuse.log"; exit 1
fi
trap 'fusermount3 -u -z "$mnt" 2>/dev/null; daemon_stop; rm -rf "$tmp"' EXIT
day=$mnt/cpu/days/2026-11-21

# ---- listings ----
check ls_tables 0 'cpu\nedge\nhard\nmem\ntop\n' '' ls "$mnt"
if ls "$mnt/broken" >/dev/null 2>"$tmp/err" || ! grep -q 'No such file or directory' "$tmp/err"; then
	fail ls_broken_enoent "want ENOENT: $(cat "$tmp/err")"
else
	pass
fi
check ls_table 0 'days\nrange\nrecent\nschema\nstats\n' '' ls "$mnt/cpu"
check ls_days 0 '2026-11-20\n2026-11-21\n' '' ls "$mnt/cpu/days"
check ls_days_mem 0 '2026-11-22\n' '' ls "$mnt/mem/days"
check ls_hours_mem 0 'all.csv\nall.jsonl\nall.tsv\n11.csv\n11.jsonl\n11.tsv\n' '' \
	sh -c "ls '$mnt/mem/days/2026-11-22' | sort -t. -k1,1r -k2"
expect ls_hours "$(ls "$day" | wc -l)" -eq 75
check ls_recent 0 '1h.csv\n1h.jsonl\n1h.tsv\n24h.csv\n24h.jsonl\n24h.tsv\n6h.csv\n6h.jsonl\n6h.tsv\n7d.csv\n7d.jsonl\n7d.tsv\n' '' \
	ls "$mnt/cpu/recent"
check ls_range_empty 0 '' '' ls "$mnt/cpu/range"

# ---- every format equals tsstore query for the same window ----
for f in tsv csv jsonl; do
	ts query cpu --from 2026-11-21T00:00:00Z --to 2026-11-22T00:00:00Z --format $f >"want_all.$f"
	check_file "cat_all_$f" 0 "want_all.$f" '' cat "$day/all.$f"
	ts query cpu --from 2026-11-20T13:00:00Z --to 2026-11-20T14:00:00Z --format $f >"want_13.$f"
	check_file "cat_hour_$f" 0 "want_13.$f" '' cat "$mnt/cpu/days/2026-11-20/13.$f"
	ts query cpu --from 2026-11-20T23:30:00Z --to 2026-11-21T00:30:00Z --format $f >"want_range.$f"
	check_file "cat_range_$f" 0 "want_range.$f" '' \
		cat "$mnt/cpu/range/2026-11-20T23:30:00Z_2026-11-21T00:30:00Z.$f"
	ts query cpu --from 2026-11-21T12:00:00Z --to 2026-11-22T12:00:00Z --format $f >"want_24h.$f"
	check_file "cat_recent_$f" 0 "want_24h.$f" '' cat "$mnt/cpu/recent/24h.$f"
done
# The hard values: NaN, the infinities and -0.0, and a string of NUL,
# every control character and 0x7f, in every format, byte for byte as
# tsstore query prints them (tests/cli/test_values.sh checks those bytes).
for f in tsv csv jsonl; do
	ts query hard --format $f >"want_hard.$f"
	check_file "cat_hard_$f" 0 "want_hard.$f" '' cat "$mnt/hard/days/2026-11-21/all.$f"
done
check cat_hard_nul 0 '1\n' '' sh -c "tr -cd '\\000' <'$mnt/hard/days/2026-11-21/10.tsv' | wc -c"
check cat_hard_doubles 0 'NaN\nInfinity\n-Infinity\n-0\n' '' \
	sh -c "cut -f3 '$mnt/hard/days/2026-11-21/10.tsv' | head -5 | tail -4"
check cat_range_ns 0 'host\tusage\tnote\tts\n' '' sh -c \
	"head -1 '$mnt/cpu/range/1795305600000000000_1795305660000000000.tsv' | awk -F'\t' '{ print \$1 \"\t\" \$3 \"\t\" \$4 \"\t\" \$2 }'"
ts schema cpu >want_schema
check_file cat_schema 0 want_schema '' cat "$mnt/cpu/schema"
expect stats_lines "$(grep -c '^tablet_rows: ' "$mnt/cpu/stats")" -eq 1

# ---- the edges of time: every entry listed opens ----
check ls_days_edge 0 '1677-09-21\n2262-04-11\n' '' ls "$mnt/edge/days"
check ls_first_day 0 '00.csv\n00.jsonl\n00.tsv\nall.csv\nall.jsonl\nall.tsv\n' '' \
	ls "$mnt/edge/days/1677-09-21"
check ls_last_day 0 '23.csv\n23.jsonl\n23.tsv\nall.csv\nall.jsonl\nall.tsv\n' '' \
	ls "$mnt/edge/days/2262-04-11"
check cat_first_day 0 'k\tts\tv\nmin\t1677-09-21T00:12:43.145224192Z\t1\nmin1\t1677-09-21T00:12:43.145224193Z\t2\n' '' \
	cat "$mnt/edge/days/1677-09-21/00.tsv"
check cat_last_day 0 '{"k":"max","ts":9223372036854775807,"v":3}\n{"k":"max1","ts":9223372036854775806,"v":4}\n' '' \
	cat "$mnt/edge/days/2262-04-11/all.jsonl"
check ls_days_top 0 '2262-04-11\n' '' ls "$mnt/top/days"
check ls_last_day_top 0 '23.csv\n23.jsonl\n23.tsv\nall.csv\nall.jsonl\nall.tsv\n' '' \
	ls "$mnt/top/days/2262-04-11"
check cat_last_instant 0 'k,ts\nmax,2262-04-11T23:47:16.854775807Z\n' '' \
	cat "$mnt/top/days/2262-04-11/23.csv"
# Every entry that any listing shows, at every level, opens and reads:
# directories list, files read to the end.
find -L "$mnt" -noleaf >"$tmp/entries" 2>"$tmp/find.err"
expect find_walks "$(wc -l <"$tmp/entries")" -gt 250
expect find_no_error ! -s "$tmp/find.err"
bad=0
while IFS= read -r e; do
	if [ -d "$e" ]; then ls "$e" >/dev/null 2>&1 || { bad=$((bad + 1)); echo "cannot list $e"; }
	else cat "$e" >/dev/null 2>&1 || { bad=$((bad + 1)); echo "cannot read $e"; }; fi
done <"$tmp/entries" >"$tmp/walk.log"
: >"$tmp/out"
cp "$tmp/walk.log" "$tmp/err"
if [ "$bad" -eq 0 ]; then pass; else fail every_listed_entry_opens "$bad entries"; fi
# Beyond the edges, days are refused like any date that is not one.
for name in edge/days/1677-09-20/all.tsv edge/days/2262-04-12/all.tsv edge/days/1677-09-20 \
            edge/days/2262-04-12; do
	if cat "$mnt/$name" >/dev/null 2>"$tmp/err" || ! grep -q 'No such file or directory' "$tmp/err"; then
		fail "enoent $name" "want ENOENT: $(cat "$tmp/err")"
	else
		pass
	fi
done
# The whole int64 range as a range/ file: [FROM, TO) as tsstore query.
ts --time-unit ns query edge --from -9223372036854775808 --to 9223372036854775807 >want_edge_range
check_file cat_range_whole 0 want_edge_range '' \
	cat "$mnt/edge/range/-9223372036854775808_9223372036854775807.tsv"
# A reversed or empty range is no file (ENOENT for stat, open and ls),
# as tsstore query refuses --from >= --to; a range without rows is the
# header alone.
for name in 2026-11-21T00:00:00Z_2026-11-20T00:00:00Z.tsv 2026-11-21T00:00:00Z_2026-11-21T00:00:00Z.csv \
            2026-11-21T00:00:00Z_1795219200000000000.jsonl; do
	if stat "$mnt/cpu/range/$name" >/dev/null 2>"$tmp/err" || ! grep -q 'No such file or directory' "$tmp/err" ||
	   cat "$mnt/cpu/range/$name" >/dev/null 2>"$tmp/err" || ! grep -q 'No such file or directory' "$tmp/err"; then
		fail "range_enoent $name" "want ENOENT: $(cat "$tmp/err")"
	else
		pass
	fi
done
check range_no_rows 0 'host\tts\tusage\tnote\n' '' cat "$mnt/cpu/range/2020-01-01T00:00:00Z_2020-01-02T00:00:00Z.tsv"
check range_no_rows_jsonl 0 '' '' cat "$mnt/cpu/range/2020-01-01T00:00:00Z_2020-01-02T00:00:00Z.jsonl"

# ---- the tools ----
grep 'spike' want_all.tsv >want_grep
check_file grep 0 want_grep '' grep spike "$day/all.tsv"
head -n 5 want_all.tsv >want_head
check_file head 0 want_head '' head -n 5 "$day/all.tsv"
tail -n 7 want_all.tsv >want_tail
check_file tail 0 want_tail '' tail -n 7 "$day/all.tsv"
check wc 0 "4321 $day/all.tsv\n" '' wc -l "$day/all.tsv"
awk -F'\t' 'NR > 1 { s[$1] += $3 } END { for (h in s) printf "%s %.1f\n", h, s[h] }' want_all.tsv |
	sort >want_awk
check_file awk 0 want_awk '' sh -c \
	"awk -F'\t' 'NR > 1 { s[\$1] += \$3 } END { for (h in s) printf \"%s %.1f\n\", h, s[h] }' '$day/all.tsv' | sort"
sort -t'	' -k3,3n -k1,1 -k2,2 want_all.tsv >want_sort
check_file sort 0 want_sort '' sort -t'	' -k3,3n -k1,1 -k2,2 "$day/all.tsv"
cut -f1,3 want_all.tsv >want_cut
check_file cut 0 want_cut '' cut -f1,3 "$day/all.tsv"
check cp 0 '' '' cp "$day/all.csv" copied.csv
check diff 0 '' '' diff want_all.csv copied.csv
check dd_small_blocks 0 '' '' sh -c "dd if='$day/all.jsonl' bs=777 2>/dev/null | cmp - want_all.jsonl"

# ---- snapshots: an open file keeps its own ----
exec 3<"$day/all.tsv"
printf 'host\tts\tusage\nweb9\t2026-11-21T06:00:30Z\t1\n' | ts insert cpu 2>/dev/null
check_file open_before_insert 0 want_all.tsv '' sh -c 'cat <&3'
exec 3<&-
expect open_after_insert "$(grep -c web9 "$day/all.tsv")" -eq 1
expect hour_after_insert "$(grep -c web9 "$day/06.tsv")" -eq 1

# ---- tools that trust stat: cp, rsync, tar, shutil.copy ----
# Every file says its exact length and an mtime from its table's commits
# (made at TSSTORE_NOW here; a text seen to change moves at least a second
# past its last mtime; recent/ has the time it was rendered), never 1970,
# so tar, which reads st_size bytes, and rsync, which skips files of equal
# size and mtime, copy whole files.
now_s=1795348800 # TSSTORE_NOW
# rsync and python3 come with scripts/deps.sh; without them their checks
# are skipped, not failed.
have_rsync=$(command -v rsync)
have_python=$(command -v python3)
[ -n "$have_rsync" ] || skip "rsync is missing: copies by rsync are not checked"
[ -n "$have_python" ] || skip "python3 is missing: copies by shutil.copy are not checked"
copy_files="cpu/days/2026-11-21/all.tsv cpu/days/2026-11-20/13.csv
cpu/range/2026-11-20T23:30:00Z_2026-11-21T00:30:00Z.jsonl cpu/recent/24h.jsonl mem/recent/1h.tsv
cpu/recent/1h.tsv cpu/schema"
# copied MOUNT NAME FILE...: cp, shutil.copy, rsync -a and tar cf + xf copy
# each FILE of MOUNT byte for byte as cat reads it, and stat says its
# length and an mtime within a minute of TSSTORE_NOW.
copied() {
	cmnt=$1 tag=$2
	shift 2
	chmod -R u+w "$tmp/cp" 2>/dev/null # the copies keep the mount's 0555 and 0444
	rm -rf "$tmp/cp"
	mkdir -p "$tmp/cp/tar"
	for f in "$@"; do
		flat=$(printf %s "$f" | tr '/:' '__')
		cat "$cmnt/$f" >"$tmp/cp/cat.$flat"
		size=$(stat -c %s "$cmnt/$f") mtime=$(stat -c %Y "$cmnt/$f")
		expect "${tag}_size $f" "$size" -eq "$(wc -c <"$tmp/cp/cat.$flat")" -a "$size" -gt 0
		expect "${tag}_mtime $f" "$mtime" -ge $now_s -a "$mtime" -le $((now_s + 60))
		check "${tag}_cp $f" 0 '' '' cp "$cmnt/$f" "$tmp/cp/cp.$flat"
		hows=cp
		if [ -n "$have_python" ]; then
			check "${tag}_shutil $f" 0 '' '' python3 -c \
				'import shutil, sys; shutil.copy(sys.argv[1], sys.argv[2])' "$cmnt/$f" "$tmp/cp/py.$flat"
			hows="$hows py"
		fi
		if [ -n "$have_rsync" ]; then
			check "${tag}_rsync $f" 0 '' '' rsync -a "$cmnt/$f" "$tmp/cp/rs.$flat"
			hows="$hows rs"
		fi
		for how in $hows; do
			check "${tag}_same_$how $f" 0 '' '' cmp "$tmp/cp/cat.$flat" "$tmp/cp/$how.$flat"
		done
	done
	check "${tag}_tar_c" 0 '' '' tar cf "$tmp/cp/t.tar" -C "$cmnt" "$@"
	check "${tag}_tar_x" 0 '' '' tar xmf "$tmp/cp/t.tar" -C "$tmp/cp/tar"
	for f in "$@"; do
		flat=$(printf %s "$f" | tr '/:' '__')
		check "${tag}_same_tar $f" 0 '' '' cmp "$tmp/cp/cat.$flat" "$tmp/cp/tar/$f"
	done
}
# synced NAME MOUNT DAY INSERT: rsync -a of DAY's directory copies nothing
# the second time, nor after an insert into another day, and after an
# insert into DAY (INSERT, a shell command reading rows: one at 07:00:30)
# copies that hour's files and all.*, and the copy equals the mount.
synced() {
	tag=$1 cmnt=$2 dday=$3
	[ -n "$have_rsync" ] || return 0
	chmod -R u+w "$tmp/rs" 2>/dev/null
	rm -rf "$tmp/rs"
	mkdir "$tmp/rs"
	check "${tag}_rsync_first" 0 '' '' rsync -a "$cmnt/cpu/days/$dday/" "$tmp/rs/"
	check "${tag}_rsync_again" 0 '' '' rsync -ai "$cmnt/cpu/days/$dday/" "$tmp/rs/"
	printf 'host\tts\tusage\nweb7\t2026-11-19T03:00:30Z\t1\n' | sh -c "$4" 2>/dev/null
	check "${tag}_rsync_other_day" 0 '' '' rsync -ai "$cmnt/cpu/days/$dday/" "$tmp/rs/"
	printf 'host\tts\tusage\nweb8\t%sT07:00:30Z\t1\n' "$dday" | sh -c "$4" 2>/dev/null
	check "${tag}_rsync_changed" 0 '07.csv\n07.jsonl\n07.tsv\nall.csv\nall.jsonl\nall.tsv\n' '' \
		sh -c "rsync -ai '$cmnt/cpu/days/$dday/' '$tmp/rs/' | sed -n 's/^>f[^ ]* //p' | sort"
	check "${tag}_rsync_copy_equal" 0 '' '' diff -r "$cmnt/cpu/days/$dday" "$tmp/rs"
	check "${tag}_rsync_has_row" 0 '1\n' '' grep -c web8 "$tmp/rs/all.tsv"
	expect "${tag}_size_after_insert" "$(stat -c %s "$cmnt/cpu/days/$dday/all.tsv")" -eq \
		"$(cat "$cmnt/cpu/days/$dday/all.tsv" | wc -c)"
}
# own_snapshot NAME MOUNT INSERT HOST: a process reading a day file
# keeps its snapshot through an insert into that day (INSERT, a shell
# command reading rows; the row's host is HOST), and its fstat says the
# length of that snapshot's text (tar checks it), while a stat by
# another process sees the new row.
own_snapshot() {
	[ -n "$have_python" ] || return 0
	f=$2/cpu/days/2026-11-21/all.csv
	before=$(stat -c %s "$f")
	check "${1}_fstat_own_snapshot" 0 "True $before\n" '' python3 -c '
import os, subprocess, sys
fd = os.open(sys.argv[1], os.O_RDONLY)
n = len(os.read(fd, 100))
subprocess.run(sys.argv[2], shell=True, check=True, stderr=subprocess.DEVNULL,
               input=("host\tts\tusage\n%s\t2026-11-21T08:00:30Z\t1\n" % sys.argv[3]).encode())
size = os.fstat(fd).st_size
while True:
    b = os.read(fd, 1 << 16)
    if not b:
        break
    n += len(b)
print(size == n, size)' "$f" "$3" "$4"
	expect "${1}_stat_after" "$(stat -c %s "$f")" -eq "$(cat "$f" | wc -c)" -a \
		"$(stat -c %s "$f")" -gt "$before"
}
copied "$mnt" stat $copy_files
synced stat "$mnt" 2026-11-21 "'$bin' -d '$db' insert cpu"
own_snapshot stat "$mnt" "'$bin' -d '$db' insert cpu" web6
# An alter changes every window's text (a column more, in the header and
# every row): a file stat'ed and read before reads its new text after,
# with its new size, though no row was added.
f=$mnt/cpu/days/2026-11-20/05.tsv
before=$(stat -c %s "$f")
cat "$f" >/dev/null
ts alter cpu --add rack:string=r1 >/dev/null
check alter_header 0 'host\tts\tusage\tnote\track\n' '' head -1 "$f"
check alter_size 0 "$(cat "$f" | wc -c)\n" '' stat -c %s "$f"
expect alter_size_grew "$(stat -c %s "$f")" -gt "$before"
# A table with a TTL of 36 h: a window reaching below its edge (now - 36 h,
# 2026-11-21T00:00:00Z) is rendered again as the clock moves; stat and
# cat agree on both sides of the edge.
ts create old --column k:string --key k,ts --ttl 36h >/dev/null
printf 'k\tts\nb\t2026-11-21T01:00:00Z\n' | ts insert old 2>/dev/null
for d in 2026-11-20:5 2026-11-21:28; do
	f=$mnt/old/days/${d%:*}/all.tsv
	check "ttl_size ${d%:*}" 0 "${d#*:} ${d#*:}\n" '' sh -c "echo \$(stat -c %s '$f') \$(cat '$f' | wc -c)"
done
# A table dropped and created again under its name is another table: the
# mount, which read the first (its handle, its log, its rendered day),
# shows the second's rows -- whose day has as many rows and bytes.
ts create again --column k:string --column v:int64 --key k,ts >/dev/null
printf 'k\tv\tts\na\t1\t2026-11-21T01:00:00Z\n' | ts insert again 2>/dev/null
check again_first 0 'k\tts\tv\na\t2026-11-21T01:00:00Z\t1\n' '' cat "$mnt/again/days/2026-11-21/all.tsv"
ts drop again >/dev/null
ts create again --column k:string --column v:int64 --key k,ts >/dev/null
printf 'k\tv\tts\na\t7\t2026-11-21T01:00:00Z\n' | ts insert again 2>/dev/null
check again_second 0 'k\tts\tv\na\t2026-11-21T01:00:00Z\t7\n' '' cat "$mnt/again/days/2026-11-21/all.tsv"

# The same with no text kept (-o cache_size=0): every open generates its
# file from a cursor, and the reader's fstat counts its open's own text.
mkdir "$tmp/mnt0"
"$fuse" "$db" "$tmp/mnt0" -f -o cache_size=0 2>"$tmp/fuse0.log" &
fuse0_pid=$!
i=0
while ! mountpoint -q "$tmp/mnt0" && [ $i -lt 200 ]; do sleep 0.05; i=$((i + 1)); done
copied "$tmp/mnt0" nocache $copy_files
own_snapshot nocache "$tmp/mnt0" "'$bin' -d '$db' insert cpu" web5
kill -TERM "$fuse0_pid"
wait "$fuse0_pid"
expect nocache_unmount_status $? -eq 0
check cache_size_bad 2 '' 'tsstore-fuse: cache_size=12X: want a number of bytes, or of K, M or G\n' \
	"$fuse" "$db" "$tmp/mnt0" -o cache_size=12X

# ---- read-only ----
# refused NAME COMMAND...: COMMAND fails with EROFS or EACCES.
refused() {
	name=$1
	shift
	if "$@" 2>"$tmp/err" || ! grep -q 'Read-only file system\|Permission denied' "$tmp/err"; then
		fail "$name" "want EROFS or EACCES: $(cat "$tmp/err")"
	else
		pass
	fi
}
refused write sh -c "echo x >'$day/all.tsv'"
refused append sh -c "echo x >>'$mnt/cpu/schema'"
refused create sh -c "echo x >'$mnt/cpu/new.tsv'"
refused mkdir mkdir "$mnt/cpu/dir"
refused rm rm -f "$mnt/cpu/schema"
refused mv mv "$mnt/cpu/schema" "$mnt/cpu/schema2"
refused chmod chmod 666 "$mnt/cpu/schema"
refused touch touch "$day/all.tsv"
refused truncate truncate -s 0 "$mnt/cpu/stats"

# ---- bad names ----
for name in cpu/range/garbage.tsv cpu/range/2026-11-21T00:00:00Z_2026-11-20T00:00:00Z.tsv \
            cpu/range/2026-11-21T00:00:00Z_2026-11-22T00:00:00Z.xml cpu/range/x_y_z.tsv \
            cpu/days/2026-13-01/all.tsv cpu/days/2026-02-30 cpu/days/2026-11-21/24.tsv \
            cpu/days/2026-11-21/7.tsv cpu/recent/2h.tsv cpu/nothing nope/schema cpu/schema/x \
            '.hidden' 'cpu/days/2026-11-21/all.tsv/x'; do
	if cat "$mnt/$name" >/dev/null 2>"$tmp/err" || ! grep -q 'No such file or directory\|Not a directory' "$tmp/err"; then
		fail "enoent $name" "want ENOENT: $(cat "$tmp/err")"
	else
		pass
	fi
done

# ---- unmount with a reader in the middle of a file ----
exec 4<"$day/all.jsonl"
head -c 100 <&4 >/dev/null
kill -TERM "$fuse_pid"
wait "$fuse_pid"
expect unmount_status $? -eq 0
expect unmounted ! -n "$(mountpoint -q "$mnt" && echo mounted)"
exec 4<&-

# ---- tsstored --mount: the same view from the daemon's process ----
mode=daemon
mkdir "$tmp/dmnt"
"$tsstored" -d "$tmp/ddb" --listen "unix:$tmp/dsock" --mount "$tmp/dmnt" 2>"$tmp/tsstored.log" &
daemon_pid=$!
i=0
while { [ ! -S "$tmp/dsock" ] || ! mountpoint -q "$tmp/dmnt"; } && [ $i -lt 200 ]; do
	sleep 0.05
	i=$((i + 1))
done
trap 'fusermount3 -u -z "$mnt" 2>/dev/null; fusermount3 -u -z "$tmp/dmnt" 2>/dev/null; daemon_stop; rm -rf "$tmp"' EXIT
ds() { "$bin" -s "$tmp/dsock" "$@"; }
ds create cpu --column host:string --column usage:double --column note:string --key host,ts
ds insert cpu rows.tsv 2>/dev/null
check_file daemon_cat_all 0 want_all.tsv '' cat "$tmp/dmnt/cpu/days/2026-11-21/all.tsv"
check_file daemon_cat_jsonl 0 want_13.jsonl '' cat "$tmp/dmnt/cpu/days/2026-11-20/13.jsonl"
exec 3<"$tmp/dmnt/cpu/days/2026-11-21/all.tsv"
printf 'host\tts\tusage\nweb9\t2026-11-21T06:00:30Z\t1\n' | ds insert cpu 2>/dev/null
expect daemon_sees_insert "$(grep -c web9 "$tmp/dmnt/cpu/days/2026-11-21/all.tsv")" -eq 1
check_file daemon_open_before_insert 0 want_all.tsv '' sh -c 'cat <&3'
copied "$tmp/dmnt" daemon cpu/days/2026-11-21/all.tsv cpu/days/2026-11-20/13.csv \
	cpu/range/2026-11-20T23:30:00Z_2026-11-21T00:30:00Z.jsonl cpu/recent/24h.jsonl cpu/schema
synced daemon "$tmp/dmnt" 2026-11-21 "'$bin' -s '$tmp/dsock' insert cpu"
own_snapshot daemon "$tmp/dmnt" "'$bin' -s '$tmp/dsock' insert cpu" web6
# Corrections reach the view: after a delete of a host and a replacing
# insert, a new open shows the rows gone and the new value.
ds delete cpu --prefix web9 >/dev/null
expect daemon_sees_delete "$(grep -c web9 "$tmp/dmnt/cpu/days/2026-11-21/all.tsv")" -eq 0
cat "$tmp/dmnt/cpu/days/2026-11-21/06.tsv" >/dev/null # its text cached: the count stays
printf 'host\tts\tusage\tnote\nweb1\t2026-11-21T06:00:00Z\t99.5\tfixed\n' |
	ds insert cpu --on-duplicate replace 2>/dev/null
check daemon_sees_replace 0 'web1\t2026-11-21T06:00:00Z\t99.5\tfixed\n' '' \
	grep -e '^web1.2026-11-21T06:00:00Z' "$tmp/dmnt/cpu/days/2026-11-21/06.tsv"
exec 3<"$tmp/dmnt/cpu/days/2026-11-21/all.jsonl"
head -c 100 <&3 >/dev/null
kill -TERM "$daemon_pid"
wait "$daemon_pid"
expect daemon_stop_status $? -eq 0
daemon_pid=
expect daemon_unmounted ! -n "$(mountpoint -q "$tmp/dmnt" && echo mounted)"
exec 3<&-
check daemon_mount_missing 1 '' \
	"fuse: failed to access mountpoint $tmp/nowhere: No such file or directory\ntsstored: --mount: cannot mount the view at $tmp/nowhere (see libfuse's message above)\n" \
	"$tsstored" -d "$tmp/ddb2" --listen "unix:$tmp/dsock2" --mount "$tmp/nowhere"

finish
