#!/bin/sh
# test_values.sh -- the values that text and JSON find hard, through
# every interface of the admin command, byte for byte: the doubles that
# no number spells (NaN, +Infinity, -Infinity) and -0.0, and a string
# holding NUL, every other control character (0x01-0x1f, 0x7f), a
# backslash, a comma and a quote.  Each case runs once on the files
# (-d DATADIR) and once through a tsstored (-s SOCKET), with the same
# expected output: insert in tsv, csv and jsonl; query in the three
# formats; the printed forms inserted again; dump and load.
#
# Usage: tests/cli/test_values.sh TSSTORE-or-BUILDDIR (see lib.sh).
set -u
. "$(dirname "$0")/lib.sh"

# The hard string, S: NUL, 0x01-0x1f (tab and newline among them), 0x7f,
# a backslash, a comma, a quote, then "end".  Its forms:
#   tsv    tab, newline and backslash escaped, every other byte raw
#   csv    quoted (it holds a comma, a quote, CR and LF), the quote doubled
#   json   \uXXXX for the controls but \t and \n, 0x7f raw, \\ and \"
S_TSV='\000\001\002\003\004\005\006\007\010\\t\\n\013\014\015\016\017\020\021\022\023\024\025\026\027\030\031\032\033\034\035\036\037\177\\\\,"end'
S_CSV='"\000\001\002\003\004\005\006\007\010\t\n\013\014\015\016\017\020\021\022\023\024\025\026\027\030\031\032\033\034\035\036\037\177\\,""end"'
S_JSON='"\\u0000\\u0001\\u0002\\u0003\\u0004\\u0005\\u0006\\u0007\\u0008\\t\\n\\u000b\\u000c\\u000d\\u000e\\u000f\\u0010\\u0011\\u0012\\u0013\\u0014\\u0015\\u0016\\u0017\\u0018\\u0019\\u001a\\u001b\\u001c\\u001d\\u001e\\u001f\177\\\\,\\"end"'

# The rows as they print.  Row a's NaN, b's and c's infinities, d's -0.0
# and e's +0.0 must come back as they went in, and f's string.
printf "k\tts\td\ts\na\t1970-01-01T00:00:00.000000001Z\tNaN\tx\nb\t1970-01-01T00:00:00.000000002Z\tInfinity\t\nc\t1970-01-01T00:00:00.000000003Z\t-Infinity\t\nd\t1970-01-01T00:00:00.000000004Z\t-0\t\ne\t1970-01-01T00:00:00.000000005Z\t0\t\nf\t1970-01-01T00:00:00.000000006Z\t1.5\t$S_TSV\n" >"$tmp/want.tsv"
printf "k,ts,d,s\na,1970-01-01T00:00:00.000000001Z,NaN,x\nb,1970-01-01T00:00:00.000000002Z,Infinity,\nc,1970-01-01T00:00:00.000000003Z,-Infinity,\nd,1970-01-01T00:00:00.000000004Z,-0,\ne,1970-01-01T00:00:00.000000005Z,0,\nf,1970-01-01T00:00:00.000000006Z,1.5,$S_CSV\n" >"$tmp/want.csv"
printf "{\"k\":\"a\",\"ts\":1,\"d\":\"NaN\",\"s\":\"x\"}\n{\"k\":\"b\",\"ts\":2,\"d\":\"Infinity\",\"s\":\"\"}\n{\"k\":\"c\",\"ts\":3,\"d\":\"-Infinity\",\"s\":\"\"}\n{\"k\":\"d\",\"ts\":4,\"d\":-0.0,\"s\":\"\"}\n{\"k\":\"e\",\"ts\":5,\"d\":0,\"s\":\"\"}\n{\"k\":\"f\",\"ts\":6,\"d\":1.5,\"s\":$S_JSON}\n" >"$tmp/want.jsonl"

# The same rows as typed: every spelling the formats accept for the
# special doubles (strtod's in text, any case; the words in JSON).
printf "ts\tk\ts\td\n1\ta\tx\tnan\n2\tb\t\tINF\n3\tc\t\t-infinity\n4\td\t\t-0.0\n5\te\t\t0\n6\tf\t$S_TSV\t1.5\n" >"$tmp/in.tsv"
printf "k,ts,d,s\na,1,NAN,x\nb,2,+Infinity,\nc,3,-Inf,\nd,4,-0,\ne,5,0.0,\nf,6,15e-1,$S_CSV\n" >"$tmp/in.csv"
printf "{\"k\":\"a\",\"ts\":1,\"d\":\"nan\",\"s\":\"x\"}\n{\"k\":\"b\",\"ts\":2,\"d\":\"inf\"}\n{\"k\":\"c\",\"ts\":3,\"d\":\"-Infinity\"}\n{\"k\":\"d\",\"ts\":4,\"d\":-0e0}\n{\"k\":\"e\",\"ts\":5,\"d\":0}\n{\"k\":\"f\",\"ts\":6,\"d\":1.5,\"s\":$S_JSON}\n" >"$tmp/in.jsonl"

# Values that are not valid for a double column: errors, never the default.
printf 'k\tts\td\nx\t1\tnanx\ny\t2\t1e999\nz\t3\t0x\n' >"$tmp/bad.tsv"
printf '{"k":"x","ts":1,"d":"1.5"}\n{"k":"y","ts":2,"d":"Inf "}\n{"k":"z","ts":3,"d":true}\n' >"$tmp/bad.jsonl"


# suite: every case, through ts().
suite() {
	for f in tsv csv jsonl; do
		check "create_$f" 0 '' '' ts create "v_$f" --column k:string --column d:double \
			--column s:string --key k,ts
		check "insert_$f" 0 '' 'insert: 6 rows stored, 0 rejected\n' \
			ts insert "v_$f" --format $f "$tmp/in.$f"
		for g in tsv csv jsonl; do
			check_file "query_${f}_as_$g" 0 "$tmp/want.$g" '' ts query "v_$f" --format $g
		done
	done

	# What query prints, insert reads back to the same rows.
	for g in tsv csv jsonl; do
		check "create_again_$g" 0 '' '' ts create "w_$g" --column k:string --column d:double \
			--column s:string --key k,ts
		check "insert_printed_$g" 0 '' 'insert: 6 rows stored, 0 rejected\n' \
			ts insert "w_$g" --format $g "$tmp/want.$g"
		check_file "query_printed_$g" 0 "$tmp/want.tsv" '' ts query "w_$g"
	done

	# dump and load
	check_file dump 0 "$tmp/want.jsonl" '' ts dump v_tsv
	check create_load 0 '' '' ts create v_load --column k:string --column d:double \
		--column s:string --key k,ts
	check load 0 '' 'load: 6 rows stored, 0 rejected\n' ts load v_load "$tmp/want.jsonl"
	check_file dump_loaded 0 "$tmp/want.jsonl" '' ts dump v_load
	check latest_nan 0 '{"k":"a","ts":1,"d":"NaN","s":"x"}\n' '' \
		ts latest v_load --prefix a --format jsonl
	check latest_nzero 0 'k\tts\td\ts\nd\t1970-01-01T00:00:00.000000004Z\t-0\t\n' '' \
		ts latest v_load --prefix d

	# Bad values are errors, never the column's default.
	check create_bad 0 '' '' ts create bad --column k:string --column d:double=7 --key k,ts
	check insert_bad_tsv 1 '' 'tsstore: insert: line 2: column "d": "nanx" is not a number\ntsstore: insert: line 3: column "d": 1e999 is out of range for double\ntsstore: insert: line 4: column "d": "0x" is not a number\ninsert: 0 rows stored, 3 rejected\n' \
		ts insert bad "$tmp/bad.tsv"
	check insert_bad_jsonl 1 '' 'tsstore: insert: line 1: column "d": expected double, got a JSON string other than "NaN", "Infinity" or "-Infinity"\ntsstore: insert: line 2: column "d": expected double, got a JSON string other than "NaN", "Infinity" or "-Infinity"\ntsstore: insert: line 3: column "d": expected double, got true\ninsert: 0 rows stored, 3 rejected\n' \
		ts insert bad --format jsonl "$tmp/bad.jsonl"
	check bad_nothing_stored 0 'k\tts\td\n' '' ts query bad

	# The special doubles in a key column: canonical there (-0.0 is 0, one
	# NaN, sorting last), and usable as --prefix values in both modes.
	check create_dkey 0 '' '' ts create dkey --column d:double --column v:int64 --key d,ts
	check insert_dkey 0 '' 'insert: 4 rows stored, 0 rejected\n' from "$tmp/dkey.tsv" ts insert dkey
	check query_dkey 0 'd\tts\tv\n-Infinity\t1970-01-01T00:00:00.000000004Z\t4\n0\t1970-01-01T00:00:00.000000002Z\t2\n0\t1970-01-01T00:00:00.000000003Z\t3\nNaN\t1970-01-01T00:00:00.000000001Z\t1\n' '' \
		ts query dkey
	check query_dkey_nan 0 'd\tts\tv\nNaN\t1970-01-01T00:00:00.000000001Z\t1\n' '' \
		ts query dkey --prefix nan
	check latest_dkey_inf 0 '{"d":"-Infinity","ts":4,"v":4}\n' '' \
		ts latest dkey --prefix -Infinity --format jsonl

	# The special doubles as defaults.
	check create_defaults 0 '' '' ts create dflt --column k:string --column n:double=nan \
		--column i:double=-inf --column z:double=-0 --key k,ts
	check schema_defaults 0 'k\tstring\t\t1\nts\ttimestamp\tnow\t2\nn\tdouble\tNaN\t-\ni\tdouble\t-Infinity\t-\nz\tdouble\t-0\t-\n' '' \
		ts schema dflt
	check insert_defaults 0 '' 'insert: 1 row stored, 0 rejected\n' \
		from "$tmp/one.tsv" ts insert dflt
	check query_defaults 0 '{"k":"a","ts":1,"n":"NaN","i":"-Infinity","z":-0.0}\n' '' \
		ts query dflt --format jsonl
}
printf 'k\tts\na\t1\n' >"$tmp/one.tsv"
printf 'd\tts\tv\nnan\t1\t1\n-0\t2\t2\n0\t3\t3\n-inf\t4\t4\n' >"$tmp/dkey.tsv"

# The rows' ts are a few ns after the epoch: --time-unit ns says so, as
# a bare integer before 1990 is otherwise refused as a likely mistake.
mode=direct
ts() { "$bin" -d "$tmp/db" --time-unit ns "$@"; }
suite

mode=socket
daemon_start "$tmp/sockdb" "$tmp/sock"
ts() { "$bin" -s "$tmp/sock" --time-unit ns "$@"; }
suite
daemon_stop

finish
