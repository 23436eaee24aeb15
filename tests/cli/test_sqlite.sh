#!/bin/sh
# test_sqlite.sh -- the SQLite virtual-table module "tsstore"
# (libtsstore_sqlite.so, tsstore-sqlite(3)) through the real sqlite3 shell,
# on a tsstore database made with the tsstore command:
#   1. the columns of the virtual table and their declared types, and the
#      values of every type (extremes, empty blob) as SQLite sees them;
#   2. a differential test: a seeded generator writes several hundred
#      SELECTs (=, <, <=, >, >=, BETWEEN, IN, OR, ORDER BY the key both
#      ways and otherwise, LIMIT/OFFSET, GROUP BY time buckets with
#      count/sum/min/max/avg, DISTINCT, joins, subqueries, window
#      functions), then each "odd" constraint (another type than the
#      column's, NULL, a collation, out-of-range numbers, contradictory
#      bounds) alone and after a prefix; each runs once through the
#      virtual table and once on a plain SQLite table holding the same
#      rows, one sqlite3 process per side, and the outputs (.mode quote,
#      so types count) must be identical; the plans of those queries must
#      between them push down every kind of constraint;
#   3. `tsstore aggregate` and the same GROUP BY in SQL agree;
#   4. EXPLAIN QUERY PLAN shows the pushed-down constraints: the line
#      "SCAN usage VIRTUAL TABLE INDEX <idxNum>:<idxStr>", idxStr the
#      comma-separated list of prefix=N, lower, upper, from, to,
#      order=asc|desc (empty, and idxNum 0, for a full scan);
#   5. INSERT round-trips (single statements, INSERT ... SELECT, a
#      transaction as one batch, NULL as the column default), a failing
#      transaction stores none of its rows, a session that only reads
#      does not hold the writer lock, and inserting beside a tsstored is
#      refused ("locked by another writer") while reading works;
#   6. UPDATE is refused ("UPDATE is not supported"), and so is a DELETE
#      whose WHERE is more than key and ts bounds ("DELETE removes whole
#      ranges"), and neither changes anything (DELETE of ranges:
#      tests/cli/test_corrections.sh);
#   7. errors: a missing table, no path=, path= with socket=, an unknown
#      argument, no table=, no daemon at socket=, a missing directory;
#      a repeated argument's last value wins.
#   8. through tsstored (socket=): the differential queries equal the
#      plain table's, inserts in one batch per transaction, UPDATE refused.
#
# Usage: tests/cli/test_sqlite.sh TSSTORE-or-BUILDDIR (see lib.sh).  The
# extension is lib.sh's sqlite_ext (BUILDDIR/libtsstore_sqlite.so, or
# PREFIX/lib/libtsstore_sqlite.so when installed).  Without a sqlite3 shell the test only
# prints a SKIP line (scripts/deps.sh installs sqlite3).  The clock is
# frozen by TSSTORE_NOW.  TSSTORE_SQL_SEED (default 20261122) and
# TSSTORE_SQL_QUERIES (default 600 random ones) change the rows and queries;
# a failure names the seed.  The generator has its own random numbers
# (Park-Miller), so a seed means the same rows and queries under any awk.
set -u
. "$(dirname "$0")/lib.sh"
TSSTORE_NOW=2026-11-22T12:00:00Z
export TSSTORE_NOW
seed=${TSSTORE_SQL_SEED:-20261122}
nq=${TSSTORE_SQL_QUERIES:-600}

if ! command -v sqlite3 >/dev/null 2>&1; then
	skip "the sqlite3 shell is not installed (scripts/deps.sh installs it): nothing tested"
	finish
fi
ext=$sqlite_ext
if [ ! -f "$ext" ]; then
	: >"$tmp/out"
	: >"$tmp/err"
	fail extension "$ext: not built (make builds it when libsqlite3 is found)"
	finish
fi
# An extension built with AddressSanitizer (make SANITIZE=1) or
# ThreadSanitizer (make TSAN=1) loads into the uninstrumented sqlite3
# only with that runtime preloaded (lib.sh).
asan=$sqlite_preload

# ---- helpers ----

# sq: the sqlite3 shell on the database of this test, reading stdin.
sq() {
	if [ -n "$asan" ]; then
		LD_PRELOAD=$asan sqlite3 -batch "$tmp/sql.db"
	else
		sqlite3 -batch "$tmp/sql.db"
	fi
}

# script NAME: the sqlite3 script $tmp/NAME.sql: loading the extension,
# then stdin.
script() {
	{
		printf ".load '%s'\n" "$ext"
		cat
	} >"$tmp/$1.sql"
}

# ts ARGS...: the tsstore command on the database of this test.
ts() { "$bin" -d "$tmp/DB" "$@"; }

# check_error NAME WANT SCRIPT: sqlite3 running $tmp/SCRIPT.sql exits 1,
# prints nothing on stdout, and its stderr holds the text WANT (any error
# when WANT is empty).
check_error() {
	sq <"$tmp/$3.sql" >"$tmp/out" 2>"$tmp/err"
	status=$?
	if [ "$status" -ne 1 ]; then
		fail "$1" "exit status $status, want 1"
	elif [ -s "$tmp/out" ]; then
		fail "$1" "stdout is not empty"
	elif [ ! -s "$tmp/err" ]; then
		fail "$1" "no error message"
	elif [ -n "$2" ] && ! grep -qF -- "$2" "$tmp/err"; then
		fail "$1" "the error does not say \"$2\""
	else
		pass
	fi
}

# eqp: sq, with the tree drawing of EXPLAIN QUERY PLAN removed and an
# idxNum other than 0 shown as n ("INDEX n:prefix=1").
eqp() {
	sq | sed -e 's/^[|` ]*--//' -e 's/INDEX [1-9][0-9]*:/INDEX n:/'
}

# plan NAME SELECT LINES: EXPLAIN QUERY PLAN SELECT prints "QUERY PLAN"
# and then exactly LINES (a printf format; see eqp).
plan() {
	printf 'EXPLAIN QUERY PLAN %s;\n' "$2" | script "plan_$1"
	check "plan/$1" 0 "QUERY PLAN\n$3" '' from "$tmp/plan_$1.sql" eqp
}

# ---- the data ----
#
# usage (region, host, ts) usage n note: 2 days (2026-11-20 and -21) of
# 2-minute slots, each (region, host) present in a slot with probability
# 0.09 (about 3100 rows); half the rows on the slot's second (so many
# rows share a ts), the others anywhere in the slot with nanoseconds.
# Regions where one is a prefix of another, hosts with quotes and an empty
# one; usage multiples of 1/8 (every sum is exact, whatever the order)
# with repeated values and negatives; n up to +-(2^53+1); notes with
# quotes, commas, % and UTF-8.  Written as rows.tsv (for the query
# generator), day1.csv and day2.csv (tsstore insert) and plain.sql.

cat >"$tmp/data.awk" <<'EOF'
function rnd() { seed = (seed * 16807) % 2147483647; return seed / 2147483647 }
function pick(n) { return int(rnd() * n) }
function one(list,   a, k) { k = split(list, a, ";"); return a[pick(k) + 1] }
function csv(s) { gsub(/"/, "\"\"", s); return "\"" s "\"" }
function sql(s) { gsub(/'/, "''", s); return "'" s "'" }
BEGIN {
	seed = seed % 2147483646 + 1
	nreg = split("ap;eu;us;us-east", REG, ";")
	nhost = split("h1;h2;h10;h'5;db \"x\";", HOST, ";")
	base = 1795132800   # 2026-11-20T00:00:00Z
	hdr = "region,host,ts,usage,n,note"
	print hdr >(out "/day1.csv")
	print hdr >(out "/day2.csv")
	print "BEGIN;" >(out "/plain.sql")
	for (slot = 0; slot < 1440; slot++) {
		f = out (slot < 720 ? "/day1.csv" : "/day2.csv")
		for (r = 1; r <= nreg; r++)
			for (h = 1; h <= nhost; h++) {
				if (rnd() >= 0.09)
					continue
				if (rnd() < 0.5)
					t = sprintf("%d000000000", base + 120 * slot)
				else
					t = sprintf("%d%09d", base + 120 * slot + pick(120), pick(1000000000))
				if (rnd() < 0.2)
					u = one("0;12.5;-2.25;100")
				else
					u = sprintf("%.3f", (pick(16001) - 8000) / 8)
				if (rnd() < 0.05)
					n = one("9007199254740993;-9007199254740993;0;-1;7")
				else
					n = sprintf("%d", pick(2000001) - 1000000)
				note = one(";ok;ok;it's;say \"hi\";a,b;100%;caf\303\251;x' OR '1")
				print REG[r], HOST[h], t, u, n, note >(out "/rows.tsv")
				print csv(REG[r]) "," csv(HOST[h]) "," t "," u "," n "," csv(note) >f
				print "INSERT INTO plain VALUES(" sql(REG[r]) ", " sql(HOST[h]) ", " t ", " u ", " n ", " sql(note) ");" >(out "/plain.sql")
			}
	}
	print "COMMIT;" >(out "/plain.sql")
}
EOF
awk -v seed="$seed" -v out="$tmp" -v OFS='\t' -f "$tmp/data.awk"
nrows=$(wc -l <"$tmp/rows.tsv")
n1=$(($(wc -l <"$tmp/day1.csv") - 1))
n2=$(($(wc -l <"$tmp/day2.csv") - 1))
expect data_size "$nrows" -gt 2000

check create 0 '' '' ts create usage --column region:string --column host:string \
	--column ts:timestamp --column usage:double=-1.5 --column n:int64=42 \
	--column note:string=none --key region,host,ts
# the first day in on-disk tablets, the second in the filling ones
check insert_day1 0 '' "insert: $n1 rows stored, 0 rejected\n" ts insert usage --format csv day1.csv
check flush 0 '' '' ts flush usage
check insert_day2 0 '' "insert: $n2 rows stored, 0 rejected\n" ts insert usage --format csv day2.csv

# every type, its extremes, an empty blob
check create_kinds 0 '' '' ts create kinds --column k:string --column i:int32 --column j:int64 \
	--column d:double --column b:blob --column ts:timestamp --key k,ts
printf 'k\tts\ti\tj\td\tb
max\t2026-11-21T00:00:00Z\t2147483647\t9223372036854775807\t1e308\t00ff
min\t2026-11-21T00:00:00.000000001Z\t-2147483648\t-9223372036854775808\t-0.5\t
mid\t1795219200123456789\t0\t-1\t0.1\tDEADbeef
' >kinds.tsv
check insert_kinds 0 '' 'insert: 3 rows stored, 0 rejected\n' ts insert kinds kinds.tsv

# The SQLite database: the plain table and the virtual tables.
script setup <<EOF
CREATE TABLE plain(region TEXT, host TEXT, ts INTEGER, usage REAL, n INTEGER, note TEXT);
.read '$tmp/plain.sql'
CREATE VIRTUAL TABLE usage USING tsstore(path='$tmp/DB', table='usage');
CREATE VIRTUAL TABLE kinds USING tsstore(path='$tmp/DB', table='kinds');
SELECT count(*) FROM plain;
SELECT count(*) FROM usage;
EOF
check setup 0 "$nrows\n$nrows\n" '' from "$tmp/setup.sql" sq

# ---- 1. columns, types, values ----

script columns <<'EOF'
SELECT name, type FROM pragma_table_info('usage');
SELECT name, type FROM pragma_table_info('kinds');
EOF
check columns 0 'region|TEXT
host|TEXT
ts|INTEGER
usage|REAL
n|INTEGER
note|TEXT
k|TEXT
i|INTEGER
j|INTEGER
d|REAL
b|BLOB
ts|INTEGER
' '' from "$tmp/columns.sql" sq

script kinds <<'EOF'
.mode quote
SELECT k, ts, i, j, d, b, typeof(ts), typeof(i), typeof(j), typeof(d), typeof(b), length(b) FROM kinds ORDER BY k;
EOF
check kinds 0 "'max',1795219200000000000,2147483647,9223372036854775807,9.9999999999999996322e+307,X'00ff','integer','integer','integer','real','blob',2
'mid',1795219200123456789,0,-1,0.10000000000000000555,X'deadbeef','integer','integer','integer','real','blob',4
'min',1795219200000000001,-2147483648,-9223372036854775808,-0.5,X'','integer','integer','integer','real','blob',0
" '' from "$tmp/kinds.sql" sq

# The values SQLite finds hard: NaN (SQLite has none: it reads as NULL),
# the infinities, -0.0 (kept, though printed 0.0: atan2 shows the sign),
# and a string of NUL, every control character and 0x7f (hex shows every
# byte).  Inserted back through SQL, each keeps its bits but NaN, which
# arrives as NULL and takes the default; the text 'NaN' stores a NaN.
check create_hard 0 '' '' ts create hard --column k:string --column d:double=7 \
	--column s:string --key k,ts
check create_hard2 0 '' '' ts create hard2 --column k:string --column d:double=7 \
	--column s:string --key k,ts
hard_s='\\u0000\\u0001\\u0002\\u0003\\u0004\\u0005\\u0006\\u0007\\u0008\\t\\n\\u000b\\u000c\\u000d\\u000e\\u000f\\u0010\\u0011\\u0012\\u0013\\u0014\\u0015\\u0016\\u0017\\u0018\\u0019\\u001a\\u001b\\u001c\\u001d\\u001e\\u001f\177\\\\\\"end'
printf '{"k":"a","ts":1,"d":"NaN"}\n{"k":"b","ts":1,"d":"Infinity"}\n{"k":"c","ts":1,"d":"-Infinity"}\n{"k":"d","ts":1,"d":-0.0}\n{"k":"e","ts":1,"d":0,"s":"'"$hard_s"'"}\n' >hard.jsonl
check load_hard 0 '' 'load: 5 rows stored, 0 rejected\n' ts load hard hard.jsonl
hard_select="'a',NULL,'null',''
'b',Inf,'real',''
'c',-Inf,'real',''
'd',-3.1415926535897931159,'real',''
'e',3.1415926535897931159,'real','000102030405060708090A0B0C0D0E0F101112131415161718191A1B1C1D1E1F7F5C22656E64'
"
script hard <<EOF
CREATE VIRTUAL TABLE hard USING tsstore(path='$tmp/DB', table='hard');
CREATE VIRTUAL TABLE hard2 USING tsstore(path='$tmp/DB', table='hard2');
.mode quote
SELECT k, CASE WHEN d = 0 THEN atan2(d, -1) ELSE d END, typeof(d), hex(s) FROM hard ORDER BY k;
INSERT INTO hard2 SELECT * FROM hard;
INSERT INTO hard2 VALUES ('f', 1, 'NaN', ''), ('g', 1, '-inf', ''), ('h', 1, 1e999, '');
EOF
check sql_hard 0 "$hard_select" '' from "$tmp/hard.sql" sq
printf '{"k":"a","ts":1,"d":7,"s":""}\n{"k":"b","ts":1,"d":"Infinity","s":""}\n{"k":"c","ts":1,"d":"-Infinity","s":""}\n{"k":"d","ts":1,"d":-0.0,"s":""}\n{"k":"e","ts":1,"d":0,"s":"'"$hard_s"'"}\n{"k":"f","ts":1,"d":"NaN","s":""}\n{"k":"g","ts":1,"d":"-Infinity","s":""}\n{"k":"h","ts":1,"d":"Infinity","s":""}\n' >hard2.want
check_file sql_hard_inserted 0 hard2.want '' ts dump hard2
script hard_bad <<EOF
CREATE VIRTUAL TABLE hard2 USING tsstore(path='$tmp/DB', table='hard2');
INSERT INTO hard2 VALUES ('i', 1, 'nanx', '');
EOF
check_error sql_hard_bad 'column "d": a text value cannot be stored in it' hard_bad

# ---- 2. the differential test ----
#
# One query a line, the table written @T.  Every query's output order is
# defined: ORDER BY a unique key, or ORDER BY every column selected.
# Sums and averages are of usage (multiples of 1/8: exact in any order)
# or sums of n (integers), never a floating sum of n.

cat >"$tmp/queries.awk" <<'EOF'
function rnd() { seed = (seed * 16807) % 2147483647; return seed / 2147483647 }
function pick(n) { return int(rnd() * n) }
function one(list,   a, k) { k = split(list, a, ";"); return a[pick(k) + 1] }
function q(s) { gsub(/'/, "''", s); return "'" s "'" }
function lit(v, t) { return t == "s" ? q(v) : v }

# a ts literal: a row's, an hour boundary (a little beyond the data too),
# or anywhere with nanoseconds
function tsval(   r) {
	r = rnd()
	if (r < 0.6)
		return TS[pick(nrow) + 1]
	if (r < 0.8)
		return sprintf("%d000000000", 1795132800 + 3600 * (pick(52) - 2))
	return sprintf("%d%09d", 1795132800 - 7200 + pick(187200), pick(1000000000))
}

# val COL: a value for COL, mostly one of the data's; T is its type
# (s string, n number, t ts: 19 digits, compared as text)
function val(col) {
	if (col == "region") {
		T = "s"
		return rnd() < 0.85 ? REGS[pick(nreg) + 1] : one("a;us-;zz;eu ;EU")
	}
	if (col == "host") {
		T = "s"
		return rnd() < 0.85 ? HOSTS[pick(nhost) + 1] : one("h;h3;zzz;db;H1")
	}
	if (col == "ts") {
		T = "t"
		return tsval()
	}
	if (col == "usage") {
		T = "n"
		return rnd() < 0.6 ? U[pick(nrow) + 1] : sprintf("%.3f", (pick(16001) - 8000) / 8)
	}
	if (col == "n") {
		T = "n"
		return rnd() < 0.6 ? N[pick(nrow) + 1] : sprintf("%d", pick(2000001) - 1000000)
	}
	T = "s"
	return NOTES[pick(nnote) + 1]
}

# cond COL: a condition on COL (bounds mostly in order; ts windows
# mostly a few hours wide)
function cond(col,   a, b, t, x, r) {
	a = val(col)
	t = T
	if (t == "t" && rnd() < 0.5)
		b = sprintf("%d%s", substr(a, 1, 10) + 1 + 3600 * pick(7), substr(a, 11))
	else
		b = val(col)
	if (rnd() < 0.9 && (t == "n" ? a + 0 > b + 0 : a > b)) {
		x = a; a = b; b = x
	}
	a = lit(a, t)
	b = lit(b, t)
	r = pick(8)
	if (r == 0)
		return col " = " a
	if (r == 1)
		return col " " one(">;>=") " " a
	if (r == 2)
		return col " " one("<;<=") " " b
	if (r == 3)
		return col " BETWEEN " a " AND " b
	if (r == 4)
		return col " IN (" a ", " b ")"
	return col " " one(">;>=") " " a " AND " col " " one("<;<=") " " b
}

# odd: constraints of another type, collation or shape than the column's
# plain ones, which SQLite may still hand to xBestIndex/xFilter; ODD is
# their list, <t> and <t2> standing for two ts of the data
function odd(   k, a) {
	k = split(ODD, a, ";")
	return oddfill(a[pick(k) + 1])
}
function oddfill(s,   t, t2) {
	t = TS[pick(nrow) + 1]
	t2 = TS[pick(nrow) + 1]
	gsub(/<t2>/, t2, s)
	gsub(/<t>/, t, s)
	return s
}

function anycol() { return one("region;host;ts;usage;n;note") }

# where: " WHERE ..." or nothing; biased to what can be pushed down (a
# region, then a host, fixed; a range on the next key column; a ts range)
function where(   k, i, r, s) {
	k = 0
	r = rnd()
	if (r < 0.55) {
		C[++k] = "region = " q(val("region"))
		r = rnd()
		if (r < 0.45)
			C[++k] = "host = " q(val("host"))
		else if (r < 0.75)
			C[++k] = cond("host")
	} else if (r < 0.75)
		C[++k] = cond("region")
	else if (r < 0.8)
		C[++k] = "region IN (" q(val("region")) ", " q(val("region")) ")"
	if (rnd() < 0.5)
		C[++k] = cond("ts")
	if (rnd() < 0.15)
		C[++k] = cond("usage")
	if (rnd() < 0.15)
		C[++k] = cond("n")
	if (rnd() < 0.08)
		C[++k] = cond("note")
	if (rnd() < 0.08)
		C[++k] = cond("host")
	if (rnd() < 0.1)
		C[++k] = odd()
	if (rnd() < 0.05)
		C[++k] = "((" cond(anycol()) ") OR (" cond(anycol()) "))"
	s = ""
	for (i = 1; i <= k; i++)
		s = s (i > 1 ? " AND " : "") C[i]
	return k ? " WHERE " s : ""
}

# order: a total order (every one ends with the whole key)
function order(   r) {
	r = pick(10)
	if (r < 4)
		return "region, host, ts"
	if (r < 7)
		return "region DESC, host DESC, ts DESC"
	if (r == 7)
		return "region, host DESC, ts"
	if (r == 8)
		return "ts DESC, region, host"
	return "region ASC, host ASC, ts ASC"
}

function limit(   r) {
	r = rnd()
	if (r < 0.45)
		return ""
	if (r < 0.8)
		return " LIMIT " one("0;1;5;37;200")
	if (r < 0.95)
		return " LIMIT " one("1;10;100") " OFFSET " one("0;3;50")
	return " LIMIT -1 OFFSET " one("10;1000")
}

function query(   r, c, w, h, t) {
	r = pick(100)
	if (r < 30)
		return "SELECT * FROM @T" where() " ORDER BY " order() limit()
	if (r < 40) {
		c = one("region, host, ts;host, usage;note, n;ts, usage, n;region;usage;host, ts;n;ts")
		return "SELECT " c " FROM @T" where() " ORDER BY " c
	}
	if (r < 48)
		return "SELECT count(*), sum(n), total(usage), min(usage), max(usage), avg(usage), " \
			"min(ts), max(ts), count(DISTINCT host), min(note), max(note) FROM @T" where()
	if (r < 60)
		return "SELECT region, host, ts / 3600000000000 AS hour, count(*), sum(usage), " \
			"min(n), max(n), sum(n), avg(usage) FROM @T" where() " GROUP BY region, host, hour" \
			(rnd() < 0.3 ? " HAVING count(*) > 1" : "") " ORDER BY region, host, hour"
	if (r < 65)
		return "SELECT strftime('%Y-%m-%dT%H:00:00Z', ts / 1000000000, 'unixepoch') AS hour, host, " \
			"count(*), total(usage), max(ts) FROM @T" where() " GROUP BY hour, host ORDER BY hour, host"
	if (r < 69)
		return "SELECT ts / 86400000000000 AS day, region, min(usage), max(usage), avg(usage), " \
			"count(*) FROM @T" where() " GROUP BY day, region ORDER BY day DESC, region"
	if (r < 72)
		return "SELECT ts / 900000000000 * 900 AS quarter, count(*), sum(n) FROM @T" where() \
			" GROUP BY quarter ORDER BY quarter"
	if (r < 76)
		return "SELECT DISTINCT region, host FROM @T" where() " ORDER BY region, host"
	if (r < 80)
		return "SELECT region, host, max(ts), count(*) FROM @T" where() \
			" GROUP BY region, host ORDER BY region, host"
	if (r < 84) {
		t = TS[pick(nrow) + 1]
		return "SELECT a.region, a.host, a.ts, b.host, b.n FROM @T AS a JOIN @T AS b " \
			"ON b.region = a.region AND b.ts = a.ts WHERE a.region = " q(val("region")) \
			" AND a.host = " q(val("host")) " AND a.ts BETWEEN " t " AND " \
			sprintf("%d%s", substr(t, 1, 10) + 6 * 3600, substr(t, 11)) " ORDER BY 1, 2, 3, 4"
	}
	if (r < 87)
		return "SELECT a.host, count(*), sum(b.n) FROM @T AS a JOIN @T AS b ON b.region = a.region " \
			"AND b.host = a.host AND b.ts > a.ts AND b.ts <= a.ts + 600000000000 WHERE a.region = " \
			q(val("region")) " AND a.note = " q(val("note")) " GROUP BY a.host ORDER BY a.host"
	if (r < 90)
		return "SELECT * FROM @T WHERE region = " q(val("region")) " AND host IN (SELECT host FROM @T" \
			" WHERE note = " q(val("note")) ") ORDER BY " order() " LIMIT 30"
	if (r < 94)
		return "SELECT count(*), sum(n), min(ts), max(ts) FROM (SELECT * FROM @T" where() \
			" ORDER BY " order() (rnd() < 0.8 ? " LIMIT " one("1;10;100;1000") : "") ")"
	if (r < 97)
		return "SELECT region, host, ts, n - lag(n) OVER (PARTITION BY region, host ORDER BY ts), " \
			"row_number() OVER (ORDER BY ts DESC, region, host) FROM @T" where() \
			" ORDER BY region, host, ts" limit()
	return "SELECT max(ts), min(ts), count(*) FROM @T WHERE region = " q(val("region")) \
		" AND host = " q(val("host"))
}

BEGIN {
	FS = "\t"
	ODD = "region = 'EU' COLLATE NOCASE;host = 'H1' COLLATE NOCASE;" \
		"region > 'EU' COLLATE NOCASE;region BETWEEN 'EU' AND 'US' COLLATE NOCASE;" \
		"region = 'eu' COLLATE RTRIM;region = 'eu ' COLLATE RTRIM;" \
		"ts > NULL;region = NULL;region IS NULL;region IS NOT NULL;ts IS NULL;" \
		"region < 5;region = 1;host >= 0;ts < 'abc';ts >= 'abc';ts = '<t>';ts >= '<t>';ts < '<t>';" \
		"ts >= <t>.5;ts < <t>.0;ts <= <t>e0;ts > 1795219200e9;ts = <t>.0;ts < 1795219200000000000.5;" \
		"region LIKE 'E%';host GLOB 'h*';region <> 'eu';ts != <t>;+region = 'eu';" \
		"region = ('e' || 'u');region IN (SELECT 'eu' UNION SELECT 'ap');" \
		"region = x'6575';ts > x'00';host < x'68';" \
		"ts > 9223372036854775807;ts <= -9223372036854775808;ts < 1e19;ts > -1e19;ts >= -1;" \
		"ts < 9223372036854775807;ts >= -9223372036854775808;ts > 1e300;ts < -1e300;" \
		"region = 'eu' AND region = 'us';region >= 'eu' AND region >= 'us';" \
		"host < 'h2' AND host < 'h10';ts >= <t> AND ts >= <t2>;ts < <t> AND ts <= <t2>;ts BETWEEN <t> AND <t>;" \
		"ts > <t> AND ts < <t>;region = 'us' AND host = '' AND ts > 0;host = '';region = 'us' AND host < 'h';" \
		"region BETWEEN 'us' AND 'us-east';region > 'us' AND region < 'us-east';region >= '';region > ''"
}
{
	TS[++nrow] = $3
	U[nrow] = $4
	N[nrow] = $5
	if (!($1 in seenr)) { seenr[$1] = 1; REGS[++nreg] = $1 }
	if (!($2 in seenh)) { seenh[$2] = 1; HOSTS[++nhost] = $2 }
	if (!($6 in seenn)) { seenn[$6] = 1; NOTES[++nnote] = $6 }
}
END {
	seed = (seed + 7919) % 2147483646 + 1
	for (i = 1; i <= nq; i++)
		print query() ";"
	# and each odd constraint alone and after a prefix, whatever nq
	k = split(ODD, a, ";")
	for (i = 1; i <= k; i++) {
		print "SELECT count(*), sum(n), min(ts), max(ts), min(region), max(host) FROM @T WHERE " oddfill(a[i]) ";"
		print "SELECT * FROM @T WHERE region = 'eu' AND " oddfill(a[i]) " ORDER BY region DESC, host DESC, ts DESC LIMIT 40;"
	}
}
EOF
awk -v seed="$seed" -v nq="$nq" -f "$tmp/queries.awk" "$tmp/rows.tsv" >"$tmp/queries.sql"
nq=$(wc -l <"$tmp/queries.sql")

# each side: ".print #N" before query N
for side in usage plain; do
	awk -v t="$side" '{ gsub(/@T/, t); print ".print #" NR; print }' "$tmp/queries.sql" |
		{ echo ".mode quote"; cat; } | script "diff_$side"
	sq <"$tmp/diff_$side.sql" >"$tmp/diff_$side.out" 2>"$tmp/diff_$side.err"
	echo $? >"$tmp/diff_$side.status"
done

: >"$tmp/out"
for side in usage plain; do
	if [ "$(cat "$tmp/diff_$side.status")" -ne 0 ] || [ -s "$tmp/diff_$side.err" ]; then
		cp "$tmp/diff_$side.err" "$tmp/err"
		fail "differential/$side" "sqlite3 exited with status $(cat "$tmp/diff_$side.status") (seed $seed)"
	else
		pass
	fi
done

# Compare query by query: the numbers of the queries whose outputs
# differ, then how many agreed and how many printed at least a row.
awk -v nq="$nq" -v res="$tmp/diff.res" '
	FNR == 1 { side = FILENAME == ARGV[1] ? 1 : 2 }
	/^#[0-9]+$/ { id = substr($0, 2); out[side, id] = ""; seen[side, id] = 1; next }
	{ out[side, id] = out[side, id] $0 "\n" }
	END {
		for (i = 1; i <= nq; i++)
			if (!((1, i) in seen) || !((2, i) in seen) || out[1, i] != out[2, i])
				print i
			else {
				same++
				if (out[2, i] != "")
					rows++
			}
		print same + 0, rows + 0 >res
	}' "$tmp/diff_usage.out" "$tmp/diff_plain.out" >"$tmp/diff.bad"
read same nonempty <"$tmp/diff.res"
passed=$((passed + same))
shown=0
for i in $(cat "$tmp/diff.bad"); do
	failed=$((failed + 1))
	shown=$((shown + 1))
	if [ "$shown" -gt 10 ]; then
		continue
	fi
	sed -n "${i}p" "$tmp/queries.sql" >"$tmp/err"
	for side in usage plain; do
		awk -v id="#$i" '/^#[0-9]+$/ { inside = ($0 == id); next } inside' \
			"$tmp/diff_$side.out" >"$tmp/diff_$side.q"
	done
	diff "$tmp/diff_plain.q" "$tmp/diff_usage.q" >"$tmp/out"
	echo "FAIL: differential/$i: the virtual table (>) and the plain table (<) differ (seed $seed):"
	sed -e 's/^/    query| /' "$tmp/err"
	sed -e 's/^/    diff| /' -e 20q "$tmp/out"
done
[ "$shown" -gt 10 ] && echo "FAIL: ... and $((shown - 10)) more differential queries differ (seed $seed)"
# the harness itself: most queries must return something
expect differential_rows "$nonempty" -ge $((nq / 2))

# Between them the plans of the generated queries push down every kind of
# constraint.
awk '{ print "EXPLAIN QUERY PLAN " $0 }' "$tmp/queries.sql" | sed 's/@T/usage/g' | script plans
sq <"$tmp/plans.sql" >"$tmp/plans.out" 2>"$tmp/plans.err"
for kind in prefix=1 prefix=2 lower upper from to order=asc order=desc; do
	n=$(awk -v k="$kind" '
		match($0, /VIRTUAL TABLE INDEX [0-9]+:/) {
			m = split(substr($0, RSTART + RLENGTH), a, ",")
			for (i = 1; i <= m; i++)
				if (a[i] == k) { c++; break }
		}
		END { print c + 0 }' "$tmp/plans.out")
	: >"$tmp/out"
	cp "$tmp/plans.err" "$tmp/err"
	if [ "$n" -ge 5 ]; then
		pass
	else
		fail "differential_plans/$kind" "only $n of the generated queries pushed down $kind (seed $seed)"
	fi
done

# ---- 3. tsstore aggregate and GROUP BY agree ----

script aggregate <<'EOF'
.mode tabs
SELECT region, host, strftime('%Y-%m-%dT%H:%M:%SZ', ts / 3600000000000 * 3600, 'unixepoch'),
       count(*), printf('%.15g', sum(usage)), printf('%.15g', min(usage)), printf('%.15g', max(usage))
FROM usage GROUP BY region, host, ts / 3600000000000;
EOF
ts aggregate usage --every 1h --group 2 --column usage:count,usage:sum,usage:min,usage:max |
	sed 1d | LC_ALL=C sort >"$tmp/aggregate.want"
aggregate_sql() { sq | LC_ALL=C sort; }
expect aggregate_rows "$(wc -l <"$tmp/aggregate.want")" -gt 1000
check_file aggregate 0 "$tmp/aggregate.want" '' from "$tmp/aggregate.sql" aggregate_sql

# ---- 4. EXPLAIN QUERY PLAN ----

T1=1795190400000000000 # 2026-11-20T16:00:00Z
T2=1795212000000000000 # 2026-11-20T22:00:00Z
scan='SCAN usage VIRTUAL TABLE INDEX'
plan prefix1 "SELECT * FROM usage WHERE region = 'eu'" "$scan n:prefix=1\n"
plan prefix2 "SELECT * FROM usage WHERE region = 'eu' AND host = 'h1'" "$scan n:prefix=2\n"
plan key_range "SELECT * FROM usage WHERE region = 'eu' AND host >= 'h1' AND host < 'h2'" \
	"$scan n:prefix=1,lower,upper\n"
plan first_key_range "SELECT * FROM usage WHERE region > 'ap' AND region <= 'us'" "$scan n:lower,upper\n"
plan upper_only "SELECT * FROM usage WHERE region = 'us' AND host < 'h2'" "$scan n:prefix=1,upper\n"
plan time_range "SELECT * FROM usage WHERE ts >= $T1 AND ts < $T2" "$scan n:from,to\n"
plan time_between "SELECT * FROM usage WHERE region = 'eu' AND host = 'h1' AND ts BETWEEN $T1 AND $T2" \
	"$scan n:prefix=2,from,to\n"
plan order_desc "SELECT * FROM usage ORDER BY region DESC, host DESC, ts DESC" "$scan n:order=desc\n"
plan order_asc "SELECT * FROM usage ORDER BY region, host, ts" "$scan n:order=asc\n"
plan all "SELECT * FROM usage WHERE region = 'eu' AND host BETWEEN 'h1' AND 'h2' AND ts >= $T1 AND ts < $T2 ORDER BY region DESC, host DESC, ts DESC" \
	"$scan n:prefix=1,lower,upper,from,to,order=desc\n"
plan limit "SELECT * FROM usage WHERE region = 'eu' AND host = 'h1' AND ts > $T1 ORDER BY region, host, ts LIMIT 5" \
	"$scan n:prefix=2,from,order=asc\n"
plan newest_first "SELECT * FROM usage WHERE region = 'eu' AND host = 'h1' ORDER BY ts DESC LIMIT 1" \
	"$scan n:prefix=2,order=desc\n"
plan fixed_left_out "SELECT * FROM usage WHERE region = 'eu' ORDER BY host, ts" "$scan n:prefix=1,order=asc\n"
plan full_scan "SELECT * FROM usage" "$scan 0:\n"
plan not_leading "SELECT * FROM usage WHERE host = 'h1'" "$scan 0:\n"
plan not_key "SELECT * FROM usage WHERE usage > 1 AND n = 7 AND note = 'ok'" "$scan 0:\n"
plan mixed_order "SELECT * FROM usage ORDER BY region, host, ts DESC" \
	"$scan 0:\nUSE TEMP B-TREE FOR ORDER BY\n"
# the costs make SQLite look rows up by prefix in the inner loop of a join
plan join "SELECT count(*) FROM plain AS p JOIN usage AS u ON u.region = p.region AND u.host = p.host AND u.ts > p.ts WHERE p.n = 7" \
	"SCAN p\nSCAN u VIRTUAL TABLE INDEX n:prefix=2,from\n"

# ---- 5. INSERT ----

script insert <<'EOF'
INSERT INTO usage VALUES('zz', 'i1', 1795300000000000000, 2.5, 7, 'one');
INSERT INTO usage(region, host, ts, n) VALUES('zz', 'i2', 1795300000000000001, -5);
INSERT INTO usage VALUES('zz', 'i3', NULL, NULL, NULL, NULL);
EOF
check insert 0 '' '' from "$tmp/insert.sql" sq
zz_rows='zz\ti1\t2026-11-21T22:26:40Z\t2.5\t7\tone
zz\ti2\t2026-11-21T22:26:40.000000001Z\t-1.5\t-5\tnone
zz\ti3\t2026-11-22T12:00:00Z\t-1.5\t42\tnone\n'
check insert_query 0 "region\thost\tts\tusage\tn\tnote\n$zz_rows" '' ts query usage --prefix zz

script insert_select <<'EOF'
.mode quote
SELECT * FROM usage WHERE region = 'zz' ORDER BY region, host, ts;
EOF
check insert_select 0 "'zz','i1',1795300000000000000,2.5,7,'one'
'zz','i2',1795300000000000001,-1.5,-5,'none'
'zz','i3',1795348800000000000,-1.5,42,'none'
" '' from "$tmp/insert_select.sql" sq

# a transaction: several statements, a multi-row VALUES, INSERT ... SELECT
# from the virtual table itself
script transaction <<'EOF'
BEGIN;
INSERT INTO usage VALUES('zz', 't1', 1795300000000000000, 1, 1, 'a');
INSERT INTO usage VALUES('zz', 't2', 1795300000000000000, 2, 2, 'b'), ('zz', 't2', 1795300001000000000, 3, 3, 'c');
INSERT INTO usage SELECT 'copy', host, ts, usage, n, note FROM usage WHERE region = 'eu';
COMMIT;
EOF
check transaction 0 '' '' from "$tmp/transaction.sql" sq
script copy_want <<'EOF'
.mode quote
SELECT count(*), sum(n), total(usage), min(ts), max(ts), count(DISTINCT note) FROM plain WHERE region = 'eu';
EOF
sq <"$tmp/copy_want.sql" >"$tmp/copy.want" 2>&1
script copy <<'EOF'
.mode quote
SELECT count(*), sum(n), total(usage), min(ts), max(ts), count(DISTINCT note) FROM usage WHERE region = 'copy';
EOF
check_file transaction_copy 0 "$tmp/copy.want" '' from "$tmp/copy.sql" sq
n_copy=$(ts query usage --prefix copy | sed 1d | wc -l)
expect transaction_copy_query "$n_copy" -eq "$(cat "$tmp/day1.csv" "$tmp/day2.csv" | grep -c '^"eu",')"

# A transaction whose commit fails (a key already stored, a key twice in
# the transaction, a multi-row statement in autocommit) stores nothing of
# it; the virtual table still inserts afterwards.
script dup_stored <<'EOF'
BEGIN;
INSERT INTO usage VALUES('zz', 'f1', 1795300000000000000, 1, 1, 'f');
INSERT INTO usage VALUES('zz', 'i1', 1795300000000000000, 1, 1, 'duplicate');
COMMIT;
EOF
check_error dup_stored '' dup_stored
script dup_batch <<'EOF'
BEGIN;
INSERT INTO usage VALUES('zz', 'f2', 1795300000000000000, 1, 1, 'f');
INSERT INTO usage VALUES('zz', 'f2', 1795300000000000000, 2, 2, 'duplicate');
COMMIT;
EOF
check_error dup_batch '' dup_batch
script dup_statement <<'EOF'
INSERT INTO usage VALUES('zz', 'f3', 1795300000000000000, 1, 1, 'f'), ('zz', 'i1', 1795300000000000000, 1, 1, 'duplicate');
INSERT INTO usage VALUES('zz', 'ok', 1795300000000000000, 1, 1, 'after the failure');
EOF
check_error dup_statement '' dup_statement
check transaction_query 0 "region\thost\tts\tusage\tn\tnote\n${zz_rows}zz\tok\t2026-11-21T22:26:40Z\t1\t1\tafter the failure
zz\tt1\t2026-11-21T22:26:40Z\t1\t1\ta
zz\tt2\t2026-11-21T22:26:40Z\t2\t2\tb
zz\tt2\t2026-11-21T22:26:41Z\t3\t3\tc
" '' ts query usage --prefix zz

# A session that has only read holds no writer lock: tsstore insert runs
# beside it.
printf 'region\thost\tts\nzz\tcli\t2026-11-21T00:00:00Z\n' >cli.tsv
script reader <<EOF
SELECT count(*) FROM usage WHERE region = 'zz';
.shell '$bin' -d '$tmp/DB' insert usage '$tmp/cli.tsv'
SELECT 'done';
EOF
# Under ThreadSanitizer the shell that .shell starts inherits the
# preloaded runtime and dash crashes on it, so the insert runs after.
case $asan in
*libtsan*) check reader 0 '7\ndone\n' 'insert: 1 row stored, 0 rejected\n' \
	sh -c "sed '/^\\.shell/d' '$tmp/reader.sql' | { LD_PRELOAD=$asan sqlite3 -batch '$tmp/sql.db'; \
	'$bin' -d '$tmp/DB' insert usage '$tmp/cli.tsv'; }" ;;
*) check reader 0 '7\ndone\n' 'insert: 1 row stored, 0 rejected\n' from "$tmp/reader.sql" sq ;;
esac
check reader_query 0 'region\thost\tts\tusage\tn\tnote\nzz\tcli\t2026-11-21T00:00:00Z\t-1.5\t42\tnone\n' '' \
	ts query usage --prefix zz,cli

# ---- 6. UPDATE, and DELETE by more than key and ts bounds, are refused ----

script unchanged_want <<'EOF'
SELECT count(*), sum(n), total(usage) FROM plain WHERE region = 'eu';
EOF
sq <"$tmp/unchanged_want.sql" >"$tmp/unchanged.want" 2>&1
script unchanged <<'EOF'
SELECT count(*), sum(n), total(usage) FROM usage WHERE region = 'eu';
EOF
script update <<'EOF'
UPDATE usage SET n = 0 WHERE region = 'eu' AND host = 'h1';
EOF
check_error update 'UPDATE is not supported' update
script update_all <<'EOF'
UPDATE usage SET note = 'x';
EOF
check_error update_all 'UPDATE is not supported' update_all
script delete <<'EOF'
DELETE FROM usage WHERE region = 'eu' AND host = 'h1'
	AND usage > (SELECT min(usage) FROM plain WHERE region = 'eu' AND host = 'h1');
EOF
check_error delete 'DELETE removes whole ranges' delete
script delete_all <<'EOF'
DELETE FROM usage WHERE n <> (SELECT min(n) FROM plain);
EOF
check_error delete_all 'DELETE removes whole ranges' delete_all
check_file unchanged 0 "$tmp/unchanged.want" '' from "$tmp/unchanged.sql" sq

# ---- 7. errors ----

script missing_table <<EOF
CREATE VIRTUAL TABLE temp.e USING tsstore(path='$tmp/DB', table='nosuch');
EOF
check_error missing_table nosuch missing_table
script missing_path <<'EOF'
CREATE VIRTUAL TABLE temp.e USING tsstore(table='usage');
EOF
check_error missing_path path missing_path
script socket <<EOF
CREATE VIRTUAL TABLE temp.e USING tsstore(socket='$tmp/nosock', table='usage');
EOF
check_error no_daemon "$tmp/nosock: " socket
script path_and_socket <<EOF
CREATE VIRTUAL TABLE temp.e USING tsstore(path='$tmp/DB', socket='$tmp/sock', table='usage');
EOF
check_error path_and_socket 'path= and socket= together' path_and_socket
script unknown_arg <<EOF
CREATE VIRTUAL TABLE temp.e USING tsstore(path='$tmp/DB', table='usage', colour='red');
EOF
check_error unknown_argument "unknown argument colour='red' (want path=" unknown_arg
script no_table_arg <<EOF
CREATE VIRTUAL TABLE temp.e USING tsstore(path='$tmp/DB');
EOF
check_error missing_table_argument 'missing table= (want' no_table_arg
# A repeated argument's last value is the one used.
script repeated_arg <<EOF
CREATE VIRTUAL TABLE temp.e USING tsstore(path='$tmp/nodir', table='nosuch', path='$tmp/DB', table='usage');
SELECT (SELECT count(*) FROM temp.e) = (SELECT count(*) FROM usage), count(*) > 0 FROM usage;
EOF
check repeated_argument 0 '1|1\n' '' from "$tmp/repeated_arg.sql" sq
script missing_dir <<EOF
CREATE VIRTUAL TABLE temp.e USING tsstore(path='$tmp/nodir', table='usage');
EOF
check_error missing_dir nodir missing_dir

# ---- beside tsstored: reading works, inserting is refused ----

daemon_start "$tmp/DB" "$tmp/sock"
check_file daemon_read 0 "$tmp/unchanged.want" '' from "$tmp/unchanged.sql" sq
script daemon_insert <<'EOF'
INSERT INTO usage VALUES('zz', 'daemon', 1795300000000000000, 1, 1, 'x');
EOF
check_error daemon_insert 'is locked by another writer' daemon_insert
check daemon_insert_query 0 'region\thost\tts\tusage\tn\tnote\n' '' ts query usage --prefix zz,daemon

# ---- through tsstored (socket=): the differential queries again ----

# The inserts above changed the tsstore table since the plain table was
# compared, so the daemon's answers are compared with path='s now: the
# two roads to the same rows must agree query by query.
mode=socket
for side in sock usage; do
	{
		printf "CREATE VIRTUAL TABLE temp.sock USING tsstore(socket='%s', table='usage');\n" "$tmp/sock"
		echo ".mode quote"
		awk -v t="$side" '{ gsub(/@T/, t); print ".print #" NR; print }' "$tmp/queries.sql"
	} | script "now_$side"
	sq <"$tmp/now_$side.sql" >"$tmp/now_$side.out" 2>"$tmp/err"
	status=$?
	: >"$tmp/out"
	if [ "$status" -ne 0 ] || [ -s "$tmp/err" ]; then
		fail "differential_$side" "sqlite3 exited with status $status"
	else
		pass
	fi
done
if ! cmp -s "$tmp/now_sock.out" "$tmp/now_usage.out"; then
	diff "$tmp/now_usage.out" "$tmp/now_sock.out" | head -20 >"$tmp/out"
	fail differential "through tsstored (>) and path= (<) differ (seed $seed)"
else
	pass
fi
# inserts through tsstored: one transaction is one batch
script sock_insert <<EOF
CREATE VIRTUAL TABLE temp.sock USING tsstore(socket='$tmp/sock', table='usage');
BEGIN;
INSERT INTO sock VALUES('zz', 'sock', 1795300000000000000, 1.5, 1, 'a');
INSERT INTO sock VALUES('zz', 'sock', 1795300000000000001, 2.5, 2, 'b');
COMMIT;
SELECT host, ts, usage, n, note FROM sock WHERE region = 'zz' AND host = 'sock' ORDER BY ts DESC;
EOF
check sock_insert 0 "sock|1795300000000000001|2.5|2|b\nsock|1795300000000000000|1.5|1|a\n" '' \
	from "$tmp/sock_insert.sql" sq
script sock_duplicate <<EOF
CREATE VIRTUAL TABLE temp.sock USING tsstore(socket='$tmp/sock', table='usage');
BEGIN;
INSERT INTO sock VALUES('zz', 'sock', 1795300000000000002, 3, 3, 'c');
INSERT INTO sock VALUES('zz', 'sock', 1795300000000000000, 4, 4, 'd');
COMMIT;
EOF
check_error sock_duplicate 'duplicate key' sock_duplicate
check sock_duplicate_stored_nothing 0 "2\n" '' \
	sh -c "'$bin' -s '$tmp/sock' query usage --prefix zz,sock | tail -n +2 | wc -l"
script sock_update <<EOF
CREATE VIRTUAL TABLE temp.sock USING tsstore(socket='$tmp/sock', table='usage');
UPDATE sock SET n = 0 WHERE region = 'zz';
EOF
check_error sock_update 'UPDATE is not supported' sock_update
# the hard values through tsstored: the same as through path=
check sock_create_hard3 0 '' '' "$bin" -s "$tmp/sock" create hard3 --column k:string \
	--column d:double=7 --column s:string --key k,ts
script sock_hard <<EOF
CREATE VIRTUAL TABLE temp.hard USING tsstore(socket='$tmp/sock', table='hard');
CREATE VIRTUAL TABLE temp.hard3 USING tsstore(socket='$tmp/sock', table='hard3');
.mode quote
SELECT k, CASE WHEN d = 0 THEN atan2(d, -1) ELSE d END, typeof(d), hex(s) FROM hard ORDER BY k;
INSERT INTO hard3 SELECT * FROM hard;
INSERT INTO hard3 VALUES ('f', 1, 'NaN', ''), ('g', 1, '-inf', ''), ('h', 1, 1e999, '');
EOF
check sock_hard 0 "$hard_select" '' from "$tmp/sock_hard.sql" sq
check_file sock_hard_inserted 0 hard2.want '' "$bin" -s "$tmp/sock" dump hard3
# a daemon that never answers (stopped: connects still queue): the
# statement fails after timeout=, with the message
script sock_hung <<EOF
CREATE VIRTUAL TABLE temp.sock USING tsstore(socket='$tmp/sock', table='usage', timeout='300ms');
EOF
kill -STOP "$daemon_pid"
check_error sock_hung "no answer from $tmp/sock within 300ms" sock_hung
kill -CONT "$daemon_pid"
script sock_bad_timeout <<EOF
CREATE VIRTUAL TABLE temp.sock USING tsstore(socket='$tmp/sock', table='usage', timeout='soon');
EOF
check_error sock_bad_timeout 'timeout= "soon": want a duration' sock_bad_timeout
mode=
daemon_stop

finish
