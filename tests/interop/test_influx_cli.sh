#!/bin/sh
# test_influx_cli.sh -- Debian's `influx` (package influxdb-client, the
# InfluxDB 1.x shell) writing to tsstored's HTTP listener: `influx
# -import` of a file in the format it reads (a "# DDL" section, then
# "# DML" with "# CONTEXT-DATABASE:"), holding 300 TSBS cpu-only lines and
# tests/interop/typed.lp (every field type and escape), then points
# through the shell's INSERT (in ns, with -precision s, and without a
# timestamp).  tsstored runs with --token; influx sends it as
# -password (HTTP Basic), and a wrong one is refused.
# Every point is read back with `tsstore query --format jsonl` and
# compared exactly (tests/interop/canon.c's canonical form): the TSBS
# lines with the rows an awk script derives from the lines themselves,
# typed.lp with tests/interop/typed.canon.
#
# Usage: sh tests/interop/test_influx_cli.sh BUILDDIR (make check-interop)
set -u
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
. "$here/lib.sh"

need influx influxdb-client
need curl curl
# with a token, which influx sends as its password (Basic authentication)
echo 'to ken' >"$tmp/token"
tsd_start --token "$tmp/token"
influx() { command influx -host 127.0.0.1 -port "$http_port" -username interop -password 'to ken' "$@"; }

# the file `influx -import` reads; the DDL statement goes to /query,
# where CREATE DATABASE is done (a no-op: tsstored serves one database)
gzip -dc "$repo/tests/data/tsbs-cpu-only-10k.influx.gz" | head -n 300 >"$tmp/tsbs.lp"
{
	printf '# DDL\nCREATE DATABASE interop\n# DML\n# CONTEXT-DATABASE: interop\n'
	cat "$tmp/tsbs.lp" "$here/typed.lp"
} >"$tmp/import.txt"
# influx prints its report with a date in front: keep what follows
import() { influx -import -path "$tmp/import.txt" -precision ns 2>&1 | sed 's/^[0-9/]* [0-9:]* //'; }
check import 0 'Processed 1 commands\nProcessed 331 inserts\nFailed 0 inserts\n' '' \
	import

# a wrong password is refused, and nothing is stored
check insert_wrong_password 0 'ERR: {"error":"wrong token"}\n\n' '' \
	influx -password 'to_ken' -database interop -execute 'INSERT refused,host=x f=1 1795132800000000000'

# the shell: INSERT sends one point to /write (precision as set)
check insert_ns 0 '' '' influx -database interop \
	-execute 'INSERT shell,host=x f=0.5,i=7i,u=8u,b=true,s="from the \"shell\"" 1795132800000000000'
check insert_s 0 '' '' influx -database interop -precision s \
	-execute 'INSERT shell,host=y f=-1,i=-7i,u=9u,b=false,s="seconds" 1795132801'
before=$(date +%s)
check insert_now 0 '' '' influx -database interop -execute 'INSERT shell,host=now f=2'
after=$(date +%s)

check tables 0 '__dge\ncpu\nedge\nesc_m_x\nshell\nsparse\ntypes\n' '' tsq tables
check schema_cpu 0 'arch\tstring\t\t1\ndatacenter\tstring\t\t2\nhostname\tstring\t\t3\nos\tstring\t\t4\nrack\tstring\t\t5\nregion\tstring\t\t6\nservice\tstring\t\t7\nservice_environment\tstring\t\t8\nservice_version\tstring\t\t9\nteam\tstring\t\t10\nts\ttimestamp\tnow\t11\nusage_user\tint64\t0\t-\nusage_system\tint64\t0\t-\nusage_idle\tint64\t0\t-\nusage_nice\tint64\t0\t-\nusage_iowait\tint64\t0\t-\nusage_irq\tint64\t0\t-\nusage_softirq\tint64\t0\t-\nusage_steal\tint64\t0\t-\nusage_guest\tint64\t0\t-\nusage_guest_nice\tint64\t0\t-\n' '' \
	tsq schema cpu
check schema_types 0 'host\tstring\t\t1\nts\ttimestamp\tnow\t2\nf\tdouble\tNaN\t-\ni\tint64\t0\t-\nu\tint64\t0\t-\nb\tint32\t0\t-\ns\tstring\t\t-\n' '' \
	tsq schema types

# every TSBS point, exactly: the rows the lines give (tags quoted, the
# integer fields as numbers, columns sorted by name; awk of Debian's
# mawk, no gawk extensions)
awk '{
	n = split($1, tag, ","); m = split($2, field, ",")
	c = 0
	for (i = 2; i <= n; i++) { split(tag[i], kv, "="); cell[++c] = kv[1] "=\"" kv[2] "\"" }
	for (i = 1; i <= m; i++) { split(field[i], kv, "="); sub(/i$/, "", kv[2]); cell[++c] = kv[1] "=" kv[2] }
	for (i = 2; i <= c; i++)
		for (j = i; j > 1; j--) {
			split(cell[j - 1], a, "="); split(cell[j], b, "=")
			if (a[1] <= b[1]) break
			t = cell[j]; cell[j] = cell[j - 1]; cell[j - 1] = t
		}
	line = tag[1] "\t" $3
	for (i = 1; i <= c; i++) line = line "\t" cell[i]
	print line
}' "$tmp/tsbs.lp" | LC_ALL=C sort >"$tmp/tsbs.want"
tsq query cpu --format jsonl | "$canon" tsstore cpu | LC_ALL=C sort >"$tmp/tsbs.got"
expect tsbs_rows "$(wc -l <"$tmp/tsbs.got")" -eq 300
same tsbs_values "$tmp/tsbs.want" "$tmp/tsbs.got"

# typed.lp, exactly
grep -v '^#' "$here/typed.canon" >"$tmp/typed.want"
for t in __dge edge esc_m_x sparse types; do
	tsq query "$t" --format jsonl | "$canon" tsstore "$t"
done | LC_ALL=C sort >"$tmp/typed.got"
same typed_values "$tmp/typed.want" "$tmp/typed.got"

# the shell's points; the one without a timestamp took tsstored's now
printf 'shell\t1795132800000000000\tb=1\tf=0.5\thost="x"\ti=7\ts="from the \\"shell\\""\tu=8\n' >"$tmp/shell.want"
printf 'shell\t1795132801000000000\tb=0\tf=-1\thost="y"\ti=-7\ts="seconds"\tu=9\n' >>"$tmp/shell.want"
tsq query shell --format jsonl | "$canon" tsstore shell >"$tmp/shell.all"
grep -v 'host="now"' "$tmp/shell.all" >"$tmp/shell.got"
same shell_values "$tmp/shell.want" "$tmp/shell.got"
now_ts=$(awk -F'\t' '$0 ~ /\thost="now"\t/ && $4 == "f=2" { print substr($2, 1, 10) }' "$tmp/shell.all")
expect shell_now_present -n "$now_ts"
expect shell_now_after "${now_ts:-0}" -ge "$before"
expect shell_now_before "${now_ts:-0}" -le "$after"

# reading back through the shell: /query (daemon/influxq.c)
check show_measurements 0 'name: measurements\nname\n----\n__dge\ncpu\nedge\nesc_m_x\nshell\nsparse\ntypes\n' '' \
	influx -database interop -execute 'SHOW MEASUREMENTS'
check select_shell 0 'name: shell\ntime                f   host i\n----                -   ---- -\n1795132800000000000 0.5 x    7\n1795132801000000000 -1  y    -7\n' '' \
	influx -database interop -execute "SELECT f, host, i FROM shell WHERE host != 'now'"
check select_max 0 'name: cpu\ntags: hostname=host_0\ntime                 max\n----                 ---\n2026-11-20T00:00:00Z 99\n' '' \
	influx -database interop -precision rfc3339 -execute "SELECT max(usage_user) FROM cpu WHERE hostname = 'host_0' GROUP BY hostname"
check select_wrong_password 1 'ERR: wrong token\n' 'wrong token\n' \
	influx -password 'to_ken' -database interop -execute 'SHOW MEASUREMENTS'

daemon_stop
finish
