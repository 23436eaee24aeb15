#!/bin/sh
# corrections_enotsup.sh -- issue 28's interfaces on a library that does
# not do the corrections yet (lib/api.c's stubs answer TS_ENOTSUP): each
# command, op and SQL statement reports the library's message cleanly
# and changes nothing.  Valid only until the library's delete, purge,
# replace and changes land: then remove it (corrections_built.sh takes
# over).  Not in `make check` (its name is not test_*.sh); run it by
# hand:
#     sh tests/cli/corrections_enotsup.sh build
set -u
. "$(dirname "$0")/lib.sh"

printf 'host\tts\tv\na\t2026-11-21T10:00:00Z\t1\nb\t2026-11-21T10:00:00Z\t3\n' >"$tmp/rows.tsv"
printf 'host\tts\tv\na\t2026-11-21T10:00:00Z\t9\n' >"$tmp/again.tsv"
rows='host\tts\tv\na\t2026-11-21T10:00:00Z\t1\nb\t2026-11-21T10:00:00Z\t3\n'

suite() {
	m=$1
	check "$m/create" 0 '' '' ts create m --column host:string --column v:int64 --key host,ts
	check "$m/insert" 0 '' 'insert: 2 rows stored, 0 rejected\n' ts insert m rows.tsv
	check "$m/delete" 1 '' 'tsstore: delete: ts_delete: not built yet (issue 28)\n' \
		ts delete m --prefix a
	check "$m/delete_all" 1 '' 'tsstore: delete: ts_delete: not built yet (issue 28)\n' \
		ts delete m --all
	check "$m/purge" 1 '' 'tsstore: purge: ts_purge: not built yet (issue 28)\n' ts purge m
	check "$m/changes" 1 '' 'tsstore: changes: ts_changes_open: not built yet (issue 28)\n' \
		ts changes m --since 0 --depth 1 --resolution 1h
	check "$m/insert_ignore" 1 '' 'tsstore: insert: ts_insert_policy: not built yet (issue 28)
insert: 0 rows stored, 0 rejected, stopped at line 2
' ts insert m --on-duplicate ignore again.tsv
	check "$m/rows_unchanged" 0 "$rows" '' ts query m
}

ts() { "$bin" -d "$tmp/direct" "$@"; }
suite direct
daemon_start "$tmp/daemon" "$tmp/sock"
ts() { "$bin" -s "$tmp/sock" "$@"; }
suite socket

if command -v sqlite3 >/dev/null 2>&1; then
	sql() {
		printf '.load %s\nCREATE VIRTUAL TABLE temp.m USING tsstore(%s, table=%s);\n%s\n' \
			"$sqlite_ext" "$1" "'m'" "$2" >"$tmp/s.sql"
		LD_PRELOAD=$sqlite_preload sqlite3 -batch :memory: <"$tmp/s.sql" 2>"$tmp/s.err"
		st=$?
		sed 's/^\(Runtime error\|Parse error\|Error\)[^:]*: //' "$tmp/s.err" >&2
		return $st
	}
	for src in "path='$tmp/direct'" "socket='$tmp/sock'"; do
		case $src in path*) mode=sql_path ;; *) mode=sql_socket ;; esac
		check delete 1 '' 'tsstore: ts_delete: not built yet (issue 28)\n' \
			sql "$src" "DELETE FROM m WHERE host = 'a';"
		check insert_ignore 1 '' 'tsstore: ts_insert_policy: not built yet (issue 28)\n' \
			sql "$src" "INSERT OR IGNORE INTO m VALUES ('a', 1795255200000000000, 5);"
	done
	mode=
	# replace is no policy of this library: its parse refuses the word
	check sql_path_replace 1 '' 'tsstore: ts_insert_policy: not built yet (issue 28)\n' \
		sql "path='$tmp/direct'" "INSERT OR REPLACE INTO m VALUES ('a', 1795255200000000000, 5);"
	check sql_socket_replace 1 '' 'tsstore: field "on_duplicate": unknown duplicate policy "replace" (want reject or ignore)\n' \
		sql "socket='$tmp/sock'" "INSERT OR REPLACE INTO m VALUES ('a', 1795255200000000000, 5);"
	check sql_rows_unchanged 0 'a|1795255200000000000|1\nb|1795255200000000000|3\n' '' \
		sql "path='$tmp/direct'" "SELECT * FROM m;"
else
	skip "sqlite3 is missing: SQL is not checked"
fi
daemon_stop

finish
