#!/bin/sh
# test_command.sh -- the admin command as an operator uses it, on the
# files (-d) and through tsstored (-s) with the same expectations:
#   - paging: a query cut by --limit says "more: --after KEY" on stderr,
#     and that text pasted into the same command continues right after
#     the last row: the pages put together are the whole result, no row
#     twice and none missing (ascending, --desc, --prefix, --from/--to;
#     a key with a comma and a space, quoted for the shell);
#   - --columns and --no-header (query, latest, aggregate);
#   - aggregate's columns are named COL_FN, so its output is insert's
#     input: a rollup table filled by `aggregate | insert`;
#   - the format taken from the file's extension: of the input (insert,
#     load) and of --output (query, latest, aggregate, dump);
#   - -V / --version;
#   - the bash completion (tools/completion.bash, which make install
#     installs): sourced into bash, its function called with COMP_WORDS
#     and COMP_CWORD set, COMPREPLY compared.
#
# Usage: tests/cli/test_command.sh TSSTORE-or-BUILDDIR (see lib.sh).
set -u
top=$(cd "$(dirname "$0")/../.." && pwd) || exit 2
. "$(dirname "$0")/lib.sh"

usage_query='usage: tsstore query TABLE [--prefix V,...] [--from T] [--to T] [--desc] [--limit N] [--after KEY] [--columns COL,...] [--no-header] [--format tsv|jsonl|csv] [--output FILE]\n'
usage_aggregate='usage: tsstore aggregate TABLE --every DUR [--group N] --column COL:FN,... [--prefix V,...] [--from T] [--to T] [--explain] [--raw] [--columns NAME,...] [--no-header] [--format tsv|jsonl|csv] [--output FILE]\n'

# The rows: three hosts, one named "we,b 3" (a comma for the key's
# escape, a space for the shell's quotes), ten times each on
# 2026-11-21 from 10:00 every 20 minutes, the first one a nanosecond
# past the hour (the hint keeps every digit).
{
	printf 'host\tts\tusage\tn\n'
	for h in web1 web2 'we,b 3'; do
		for i in 0 1 2 3 4 5 6 7 8 9; do
			m=$((i * 20))
			t=$(printf '2026-11-21T%02d:%02d:00' $((10 + m / 60)) $((m % 60)))
			[ "$i" -eq 0 ] && t=$t.000000001
			printf '%s\t%sZ\t%s.5\t%s\n' "$h" "$t" "$i" "$((i * 10))"
		done
	done
} >"$tmp/web.tsv"

# paged LIMIT ARGS: `ts query ARGS --limit LIMIT`, then again with the
# "more: --after KEY" that each page's stderr ends with, pasted as a user
# would (the shell reads KEY's quotes), until a page says nothing more.
# Every page's rows, after the first page's header (tsv, csv), go to
# $tmp/paged;
# prints the number of pages.  Fails on a failed page or past 10 pages.
paged() {
	limit=$1 args=$2 more= pages=0 header=1
	case $args in *jsonl*) header=0 ;; esac
	: >"$tmp/paged"
	while :; do
		eval "ts query $args --limit $limit $more" >"$tmp/page" 2>"$tmp/page.err" || return 1
		pages=$((pages + 1))
		if [ "$pages" -gt 1 ] && [ "$header" -eq 1 ]; then sed 1d "$tmp/page"; else cat "$tmp/page"; fi >>"$tmp/paged"
		more=$(sed -n 's/^query: limit of [0-9]* rows\{0,1\} reached; more: //p' "$tmp/page.err")
		[ -n "$more" ] || break
		[ "$pages" -lt 10 ] || return 1
	done
	echo "$pages"
}

# check_paged NAME LIMIT PAGES ARGS: paging ARGS by LIMIT takes PAGES
# pages, and they hold exactly what the query without a limit prints.
check_paged() {
	check "$1_pages" 0 "$3\n" '' paged "$2" "$4"
	eval "ts query $4" >"$tmp/whole"
	check_file "$1_same" 0 "$tmp/whole" '' cat "$tmp/paged"
}

# suite MODE: every case, through ts() of MODE.
suite() {
	m=$1
	check "$m/create" 0 '' '' ts create web --column host:string --column ts:timestamp \
		--column usage:double --column n:int64 --key host,ts
	check "$m/insert" 0 '' 'insert: 30 rows stored, 0 rejected\n' ts insert web "$tmp/web.tsv"

	# ---- paging with --after ----
	check "$m/more_hint" 0 'host\tts\tusage\tn\nwe,b 3\t2026-11-21T10:00:00.000000001Z\t0.5\t0\n' \
		"query: limit of 1 row reached; more: --after 'we\\\\,b 3,2026-11-21T10:00:00.000000001Z'\n" \
		ts query web --limit 1
	check "$m/more_hint_plain" 0 'host\tts\tusage\tn\nweb2\t2026-11-21T13:00:00Z\t9.5\t90\n' \
		'query: limit of 1 row reached; more: --after web2,2026-11-21T13:00:00Z\n' \
		ts query web --desc --limit 1
	check "$m/after_pasted" 0 'host\tts\tusage\tn\nwe,b 3\t2026-11-21T10:20:00Z\t1.5\t10\n' \
		"query: limit of 1 row reached; more: --after 'we\\\\,b 3,2026-11-21T10:20:00Z'\n" \
		ts query web --limit 1 --after 'we\,b 3,2026-11-21T10:00:00.000000001Z'
	check "$m/after_last_row" 0 'host\tts\tusage\tn\n' '' \
		ts query web --after web2,2026-11-21T13:00:00Z
	check_paged "$m/paged_asc" 12 3 'web'
	check_paged "$m/paged_exact" 15 2 'web'
	check_paged "$m/paged_desc" 12 3 'web --desc'
	check_paged "$m/paged_prefix" 4 3 'web --prefix web2'
	check_paged "$m/paged_prefix_desc" 4 3 "web --prefix 'we\\,b 3' --desc"
	check_paged "$m/paged_window" 7 3 'web --from 2026-11-21T10:30:00Z --to 2026-11-21T12:30:00Z --format csv'
	check_paged "$m/paged_window_desc_jsonl" 7 3 'web --from 2026-11-21T10:30:00Z --to 2026-11-21T12:30:00Z --desc --format jsonl'
	check "$m/after_not_full" 2 '' "tsstore: query: --after \"web1\": want a value for each key column: host,ts\n$usage_query" \
		ts query web --after web1
	check "$m/after_bad_ts" 2 '' "tsstore: query: --after: column \"ts\": timestamp \"x\": expected RFC 3339 (2026-11-21T10:00:00Z), a date (2026-11-21), integer nanoseconds, an epoch count (1732550000s), now or a time relative to it (now-15m, -1h)\n$usage_query" \
		ts query web --after web1,x

	# ---- --columns, --no-header ----
	check "$m/columns" 0 'n\thost\n0\tweb1\n10\tweb1\n' \
		'query: limit of 2 rows reached; more: --after web1,2026-11-21T10:20:00Z\n' \
		ts query web --prefix web1 --columns n,host --limit 2
	check "$m/columns_csv_no_header" 0 '2026-11-21T13:00:00Z,9.5\n' '' \
		ts query web --prefix web1 --from 2026-11-21T13:00:00Z --columns ts,usage --format csv --no-header
	check "$m/columns_jsonl" 0 '{"usage":9.5,"host":"web1"}\n' '' \
		ts query web --prefix web1 --from 2026-11-21T13:00:00Z --columns usage,host --format jsonl
	check "$m/no_header_tsv" 0 'web1\t2026-11-21T13:00:00Z\t9.5\t90\n' '' \
		ts query web --prefix web1 --from 2026-11-21T13:00:00Z --no-header
	check "$m/latest_columns" 0 'n\n90\n' '' ts latest web --prefix web2 --columns n
	check "$m/latest_no_header" 0 'web2\t2026-11-21T13:00:00Z\t9.5\t90\n' '' \
		ts latest web --prefix web2 --no-header
	check "$m/columns_unknown" 2 '' "tsstore: query: --columns: no column \"cpu\" (the columns: host, ts, usage, n)\n$usage_query" \
		ts query web --columns host,cpu
	check "$m/columns_twice" 2 '' "tsstore: query: --columns: column \"host\" given twice\n$usage_query" \
		ts query web --columns host,n,host
	check "$m/columns_empty" 2 '' "tsstore: query: --columns \"host,\": empty column name\n$usage_query" \
		ts query web --columns host,

	# ---- aggregate | insert ----
	check "$m/aggregate_names" 0 'host\tts\tusage_mean\tn_sum\nweb1\t2026-11-21T10:00:00Z\t1.5\t30\n' '' \
		ts aggregate web --every 1h --group 1 --prefix web1 --to 2026-11-21T11:00:00Z --column usage:mean,n:sum
	check "$m/aggregate_columns" 0 'n_sum,host\n30,web1\n' '' \
		ts aggregate web --every 1h --group 1 --prefix web1 --to 2026-11-21T11:00:00Z \
		--column usage:mean,n:sum --columns n_sum,host --format csv
	check "$m/aggregate_columns_unknown" 2 '' "tsstore: aggregate: --columns: no column \"usage:mean\" (the columns: host, ts, usage_mean, n_sum)\n$usage_aggregate" \
		ts aggregate web --every 1h --group 1 --column usage:mean,n:sum --columns usage:mean
	check "$m/create_rollup" 0 '' '' ts create rollup --column host:string --column ts:timestamp \
		--column usage_mean:double --column usage_max:double --column n_sum:int64 --key host,ts
	ts aggregate web --every 1h --group 1 --column usage:mean,usage:max,n:sum >"$tmp/rollup.want"
	check "$m/rollup_insert" 0 '' 'insert: 12 rows stored, 0 rejected\n' \
		sh -c '"$@" aggregate web --every 1h --group 1 --column usage:mean,usage:max,n:sum | "$@" insert rollup' \
		sh "$bin" $where
	check_file "$m/rollup_query" 0 "$tmp/rollup.want" '' ts query rollup

	# ---- the format by the file's extension ----
	ts query web --prefix web1 --format csv >"$tmp/web1.csv"
	ts query web --prefix web1 --format jsonl | sed 's/web1/web4/' >"$tmp/web4.jsonl"
	ts query web --prefix web1 | sed 's/web1/web5/' >"$tmp/web5.tsv"
	ts query web --prefix web1 --format jsonl | sed 's/web1/web6/' >"$tmp/web6.jsonl"
	ts query web --prefix web1 --format csv | sed 's/web1/web7/' >"$tmp/web7.csv"
	check "$m/create_copy" 0 '' '' ts create copy --column host:string --column ts:timestamp \
		--column usage:double --column n:int64 --key host,ts
	check "$m/insert_csv_by_name" 0 '' 'insert: 10 rows stored, 0 rejected\n' ts insert copy "$tmp/web1.csv"
	check "$m/insert_jsonl_by_name" 0 '' 'insert: 10 rows stored, 0 rejected\n' ts insert copy "$tmp/web4.jsonl"
	check "$m/load_tsv_by_name" 0 '' 'load: 10 rows stored, 0 rejected\n' ts load copy "$tmp/web5.tsv"
	check "$m/load_jsonl" 0 '' 'load: 10 rows stored, 0 rejected\n' ts load copy "$tmp/web6.jsonl"
	check "$m/insert_format_wins" 1 '' 'tsstore: insert: line 1: unknown column "host,ts,usage,n"\ninsert: 0 rows stored, 0 rejected, stopped at line 1\n' \
		ts insert copy --format tsv "$tmp/web7.csv"
	check "$m/copy_rows" 0 '40\n' '' sh -c '"$@" query copy --no-header | wc -l' sh "$bin" $where
	ts query web --prefix web1 --format csv >"$tmp/web1.again"
	check_file "$m/copy_web1" 0 "$tmp/web1.again" '' ts query copy --prefix web1 --format csv

	# ---- --output FILE, in the format its extension names ----
	check "$m/output_csv" 0 '' 'query: limit of 2 rows reached; more: --after web1,2026-11-21T10:20:00Z\n' \
		ts query web --prefix web1 --limit 2 --output "$tmp/$m.out.csv"
	ts query web --prefix web1 --limit 2 --format csv 2>/dev/null >"$tmp/want.csv"
	check_file "$m/output_csv_file" 0 "$tmp/want.csv" '' cat "$tmp/$m.out.csv"
	check "$m/output_format_wins" 0 '' '' \
		ts latest web --prefix web1 --format jsonl --columns n --output "$tmp/$m.out.csv"
	check "$m/output_format_wins_file" 0 '{"n":90}\n' '' cat "$tmp/$m.out.csv"
	check "$m/output_aggregate_tsv" 0 '' '' ts aggregate web --every 1d --column n:count \
		--no-header --output "$tmp/$m.agg.tsv"
	check "$m/output_aggregate_tsv_file" 0 '2026-11-21T00:00:00Z\t30\n' '' cat "$tmp/$m.agg.tsv"
	check "$m/dump_output_csv" 0 '' '' ts dump web --output "$tmp/$m.dump.csv"
	check "$m/dump_output_csv_head" 0 'host,ts,usage,n\n' '' sed -n 1p "$tmp/$m.dump.csv"
	check "$m/create_again" 0 '' '' ts create again --column host:string --column ts:timestamp \
		--column usage:double --column n:int64 --key host,ts
	check "$m/load_dump_csv" 0 '' 'load: 30 rows stored, 0 rejected\n' ts load again "$tmp/$m.dump.csv"
	ts dump web >"$tmp/web.dump"
	check_file "$m/again_same" 0 "$tmp/web.dump" '' ts dump again
	echo keep >"$tmp/$m.keep.tsv"
	check "$m/output_usage_error_keeps_file" 2 '' "tsstore: query: --columns: no column \"nope\" (the columns: host, ts, usage, n)\n$usage_query" \
		ts query web --columns nope --output "$tmp/$m.keep.tsv"
	check "$m/output_kept" 0 'keep\n' '' cat "$tmp/$m.keep.tsv"
	check "$m/output_no_dir" 1 '' "tsstore: query: $tmp/none/x.tsv: No such file or directory\n" \
		ts query web --output "$tmp/none/x.tsv"
	if [ -w /dev/full ]; then
		check "$m/output_full" 1 '' 'tsstore: dump: /dev/full: No space left on device\n' \
			ts dump web --output /dev/full
	fi
}

# ---- on the files ----
where="-d $tmp/direct"
ts() { "$bin" -d "$tmp/direct" "$@"; }
suite direct

# ---- through tsstored ----
daemon_start "$tmp/daemon" "$tmp/sock"
where="-s $tmp/sock"
ts() { "$bin" -s "$tmp/sock" "$@"; }
suite socket
daemon_stop

# ---- the version ----
version=$(sed -n 's/^#define TS_VERSION_STRING "\(.*\)"/\1/p' "$top/include/tsstore.h")
check version_short 0 "tsstore $version\n" '' "$bin" -V
check version_long 0 "tsstore $version\n" '' "$bin" --version
check version_daemon_alike 0 "tsstored $version\n" '' "$tsstored" --version

# ---- bash completion ----
# completions WORD...: what the completion offers for the last WORD of
# the command line WORD..., one per line (the words as bash splits them).
completions() {
	bash -c '. "$1" || exit 2; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); COMPREPLY=()
		_tsstore; [ ${#COMPREPLY[@]} -eq 0 ] || printf "%s\n" "${COMPREPLY[@]}"' \
		sh "$top/tools/completion.bash" "$@"
}
# lines WORD...: the WORDs, one per line, in $tmp/lines.
lines() { printf '%s\n' "$@" >"$tmp/lines"; }
if ! command -v bash >/dev/null 2>&1; then
	skip "bash is not installed: the completion was not tried"
else
	"$bin" -d "$tmp/direct" drop copy
	check complete_commands 0 'query\n' '' completions "$bin" qu
	check complete_all_commands 0 'tables\ncreate\nschema\nstats\nstatus\npromote\nalter\ndrop\ncreate-rollup\nrollups\ninsert\nquery\nlatest\naggregate\ndelete\npurge\nchanges\nflush\ncheck\nsnapshot\ndump\nload\n' '' \
		completions "$bin" ''
	# (check's printf would take a leading "-" for an option: lines() writes them)
	lines --timeout --token-file
	check_file complete_global_options 0 "$tmp/lines" '' completions "$bin" --t
	lines -V
	check_file complete_version 0 "$tmp/lines" '' completions "$bin" -V
	check complete_tables 0 'again\nrollup\nweb\n' '' completions "$bin" -d "$tmp/direct" query ''
	check complete_tables_prefix 0 'web\n' '' completions "$bin" -d "$tmp/direct" stats w
	check complete_tables_after_option 0 'again\nrollup\nweb\n' '' completions "$bin" -d "$tmp/direct" query --limit 3 ''
	check complete_tables_none 0 '' '' completions "$bin" -d "$tmp/nothing" query ''
	check complete_no_new_name 0 '' '' completions "$bin" -d "$tmp/direct" create ''
	lines --columns
	check_file complete_query_options 0 "$tmp/lines" '' completions "$bin" -d "$tmp/direct" query web --a --c
	lines --desc
	check_file complete_options 0 "$tmp/lines" '' completions "$bin" query web --de
	lines --no-header
	check_file complete_no_header 0 "$tmp/lines" '' completions "$bin" latest web --no
	check complete_format 0 'csv\n' '' completions "$bin" query web --format c
	check complete_format_all 0 'tsv\njsonl\ncsv\n' '' completions "$bin" insert web --format ''
	check complete_on_duplicate 0 'ignore\n' '' completions "$bin" alter web --on-duplicate i
	check complete_value_free 0 '' '' completions "$bin" query web --limit ''
	# issue 28's commands and policy, from their usage lines like the others
	check complete_on_duplicate_insert 0 'reject\nignore\nreplace\n' '' \
		completions "$bin" insert web --on-duplicate ''
	lines --all
	check_file complete_delete_all 0 "$tmp/lines" '' completions "$bin" delete web --a
	check complete_delete_table 0 'web\n' '' completions "$bin" -d "$tmp/direct" delete w
	lines --since
	check_file complete_changes_since 0 "$tmp/lines" '' completions "$bin" changes web --si
	check complete_changes_format 0 'jsonl\n' '' completions "$bin" changes web --format j
	# issue 29's: create-rollup --from completes a table; aggregate's --explain
	check complete_rollup_from 0 'web\n' '' completions "$bin" -d "$tmp/direct" create-rollup r --from w
	check complete_rollup_name 0 '' '' completions "$bin" -d "$tmp/direct" create-rollup ''
	lines --explain
	check_file complete_explain 0 "$tmp/lines" '' completions "$bin" aggregate web --ex
	check complete_rollups_table 0 'web\n' '' completions "$bin" -d "$tmp/direct" rollups w
	mkdir -p "$tmp/files"
	: >"$tmp/files/rows.csv"
	check complete_file 0 "$tmp/files/rows.csv\n" '' completions "$bin" insert web "$tmp/files/ro"
	check complete_datadir 0 "$tmp/files\n" '' completions "$bin" -d "$tmp/fil"
	check complete_output 0 "$tmp/files/rows.csv\n" '' completions "$bin" dump web --output "$tmp/files/r"
fi

finish
