#!/bin/sh
# test_bench_queries.sh -- the TSBS cpu-only query generator of
# tsstore-bench (bench/tsbsgen.c): `--print-queries TYPE|all N SEED` and
# `--print-promql` over the 10,000-line prefix of the TSBS file in
# tests/data (100 hosts, 2026-11-20T00:00:00Z to 00:16:40Z).  The
# golden texts below are TSBS's InfluxQL forms (its influx devops
# generator) with this seed's hosts and windows: a change of the
# generator's text or of its draws shows here.  Windows longer than this
# data must cover all of it; hosts must be distinct and in the data; a
# seed must give the same queries again and another seed others; an
# unknown type and a missing file are refused.
#
# Usage: tests/cli/test_bench_queries.sh BUILDDIR
set -u
root=$(pwd)
. "$root/tests/cli/lib.sh"
bench=$(dirname "$bin")/tsstore-bench
data=$root/tests/data/tsbs-cpu-only-10k.influx.gz
[ -x "$bench" ] || { echo "$0: $bench: not built" >&2; exit 2; }
q() { "$bench" --tsbs "$data" "$@"; }

cat >"$tmp/all.golden" <<'GOLDEN'
single-groupby-1-1-1	SELECT max(usage_user) from cpu where (hostname = 'host_86') and time >= '2026-11-19T23:22:35Z' and time < '2026-11-20T00:22:35Z' group by time(1m)
single-groupby-1-1-12	SELECT max(usage_user) from cpu where (hostname = 'host_93') and time >= '2026-11-19T19:04:29Z' and time < '2026-11-20T07:04:29Z' group by time(1m)
single-groupby-1-8-1	SELECT max(usage_user) from cpu where (hostname = 'host_6' or hostname = 'host_20' or hostname = 'host_76' or hostname = 'host_92' or hostname = 'host_81' or hostname = 'host_66' or hostname = 'host_43' or hostname = 'host_69') and time >= '2026-11-19T23:57:14Z' and time < '2026-11-20T00:57:14Z' group by time(1m)
single-groupby-5-1-1	SELECT max(usage_user), max(usage_system), max(usage_idle), max(usage_nice), max(usage_iowait) from cpu where (hostname = 'host_49') and time >= '2026-11-19T23:49:40Z' and time < '2026-11-20T00:49:40Z' group by time(1m)
single-groupby-5-1-12	SELECT max(usage_user), max(usage_system), max(usage_idle), max(usage_nice), max(usage_iowait) from cpu where (hostname = 'host_67') and time >= '2026-11-19T19:56:53Z' and time < '2026-11-20T07:56:53Z' group by time(1m)
single-groupby-5-8-1	SELECT max(usage_user), max(usage_system), max(usage_idle), max(usage_nice), max(usage_iowait) from cpu where (hostname = 'host_41' or hostname = 'host_85' or hostname = 'host_16' or hostname = 'host_46' or hostname = 'host_64' or hostname = 'host_24' or hostname = 'host_33' or hostname = 'host_75') and time >= '2026-11-19T23:52:23Z' and time < '2026-11-20T00:52:23Z' group by time(1m)
cpu-max-all-1	SELECT max(usage_user),max(usage_system),max(usage_idle),max(usage_nice),max(usage_iowait),max(usage_irq),max(usage_softirq),max(usage_steal),max(usage_guest),max(usage_guest_nice) from cpu where (hostname = 'host_0') and time >= '2026-11-19T20:54:28Z' and time < '2026-11-20T04:54:28Z' group by time(1h)
cpu-max-all-8	SELECT max(usage_user),max(usage_system),max(usage_idle),max(usage_nice),max(usage_iowait),max(usage_irq),max(usage_softirq),max(usage_steal),max(usage_guest),max(usage_guest_nice) from cpu where (hostname = 'host_80' or hostname = 'host_21' or hostname = 'host_92' or hostname = 'host_67' or hostname = 'host_55' or hostname = 'host_74' or hostname = 'host_56' or hostname = 'host_32') and time >= '2026-11-19T23:07:54Z' and time < '2026-11-20T07:07:54Z' group by time(1h)
double-groupby-1	SELECT mean(usage_user) from cpu where time >= '2026-11-19T15:20:38Z' and time < '2026-11-20T03:20:38Z' group by time(1h),hostname
double-groupby-5	SELECT mean(usage_user), mean(usage_system), mean(usage_idle), mean(usage_nice), mean(usage_iowait) from cpu where time >= '2026-11-19T17:17:40Z' and time < '2026-11-20T05:17:40Z' group by time(1h),hostname
double-groupby-all	SELECT mean(usage_user), mean(usage_system), mean(usage_idle), mean(usage_nice), mean(usage_iowait), mean(usage_irq), mean(usage_softirq), mean(usage_steal), mean(usage_guest), mean(usage_guest_nice) from cpu where time >= '2026-11-19T19:13:07Z' and time < '2026-11-20T07:13:07Z' group by time(1h),hostname
high-cpu-1	SELECT * from cpu where usage_user > 90.0 and (hostname = 'host_7') and time >= '2026-11-19T20:23:56Z' and time < '2026-11-20T08:23:56Z'
high-cpu-all	SELECT * from cpu where usage_user > 90.0  and time >= '2026-11-19T18:57:47Z' and time < '2026-11-20T06:57:47Z'
lastpoint	SELECT * from cpu group by "hostname" order by time desc limit 1
groupby-orderby-limit	SELECT max(usage_user) from cpu WHERE time < '2026-11-20T00:36:54Z' group by time(1m) limit 5
GOLDEN
check_file all_types 0 "$tmp/all.golden" '' q --print-queries all 1 1

cat >"$tmp/promql.golden" <<'GOLDEN'
single-groupby-1-1-1	1795130555 1795134155 60	max by (__name__) (max_over_time(cpu_usage_user{hostname="host_86"}[1m]))
single-groupby-1-1-12	1795115069 1795158269 60	max by (__name__) (max_over_time(cpu_usage_user{hostname="host_93"}[1m]))
single-groupby-1-8-1	1795132634 1795136234 60	max by (__name__) (max_over_time(cpu_usage_user{hostname=~"host_6|host_20|host_76|host_92|host_81|host_66|host_43|host_69"}[1m]))
single-groupby-5-1-1	1795132180 1795135780 60	max by (__name__) (max_over_time({__name__=~"cpu_usage_user|cpu_usage_system|cpu_usage_idle|cpu_usage_nice|cpu_usage_iowait",hostname="host_49"}[1m]))
single-groupby-5-1-12	1795118213 1795161413 60	max by (__name__) (max_over_time({__name__=~"cpu_usage_user|cpu_usage_system|cpu_usage_idle|cpu_usage_nice|cpu_usage_iowait",hostname="host_67"}[1m]))
single-groupby-5-8-1	1795132343 1795135943 60	max by (__name__) (max_over_time({__name__=~"cpu_usage_user|cpu_usage_system|cpu_usage_idle|cpu_usage_nice|cpu_usage_iowait",hostname=~"host_41|host_85|host_16|host_46|host_64|host_24|host_33|host_75"}[1m]))
cpu-max-all-1	1795121668 1795150468 3600	max by (__name__) (max_over_time({__name__=~"cpu_usage_user|cpu_usage_system|cpu_usage_idle|cpu_usage_nice|cpu_usage_iowait|cpu_usage_irq|cpu_usage_softirq|cpu_usage_steal|cpu_usage_guest|cpu_usage_guest_nice",hostname="host_0"}[1h]))
cpu-max-all-8	1795129674 1795158474 3600	max by (__name__) (max_over_time({__name__=~"cpu_usage_user|cpu_usage_system|cpu_usage_idle|cpu_usage_nice|cpu_usage_iowait|cpu_usage_irq|cpu_usage_softirq|cpu_usage_steal|cpu_usage_guest|cpu_usage_guest_nice",hostname=~"host_80|host_21|host_92|host_67|host_55|host_74|host_56|host_32"}[1h]))
double-groupby-1	1795101638 1795144838 3600	avg by (__name__, hostname) (avg_over_time(cpu_usage_user[1h]))
double-groupby-5	1795108660 1795151860 3600	avg by (__name__, hostname) (avg_over_time({__name__=~"cpu_usage_user|cpu_usage_system|cpu_usage_idle|cpu_usage_nice|cpu_usage_iowait"}[1h]))
double-groupby-all	1795115587 1795158787 3600	avg by (__name__, hostname) (avg_over_time({__name__=~"cpu_usage_user|cpu_usage_system|cpu_usage_idle|cpu_usage_nice|cpu_usage_iowait|cpu_usage_irq|cpu_usage_softirq|cpu_usage_steal|cpu_usage_guest|cpu_usage_guest_nice"}[1h]))
GOLDEN
check_file promql 0 "$tmp/promql.golden" '' q --print-promql all 1 1

# one type alone: its lines of all, without the name
grep '^single-groupby-5-8-1	' "$tmp/all.golden" | cut -f2 >"$tmp/one.golden"
check_file one_type 0 "$tmp/one.golden" '' q --print-queries single-groupby-5-8-1 1 1
# the same again, and another seed gives other queries
q --print-queries single-groupby-1-8-1 200 1 >"$tmp/s1"
q --print-queries single-groupby-1-8-1 200 1 >"$tmp/s1again"
q --print-queries single-groupby-1-8-1 200 2 >"$tmp/s2"
expect same_seed_same_queries "$(cmp -s "$tmp/s1" "$tmp/s1again" && echo same)" = same
expect other_seed_other_queries "$(sort -u "$tmp/s1" "$tmp/s2" | wc -l)" -eq 400
expect count "$(wc -l <"$tmp/s1")" -eq 200
# 8 distinct hosts of host_0..host_99 in each, and a 1-hour window that
# covers the 1000 s of data (RFC 3339 strings of one form sort as times)
bad=$(awk -F"'" '{
	delete seen; n = 0
	for (i = 2; i <= 16; i += 2) {
		if ($i !~ /^host_([0-9]|[1-9][0-9])$/ || ($i in seen)) { print "hosts: " $0; next }
		seen[$i] = 1; n++
	}
	if (n != 8 || $18 > "2026-11-20T00:00:00Z" || $20 < "2026-11-20T00:16:40Z") print "window: " $0
}' "$tmp/s1" | head -3)
expect hosts_and_windows "$bad" = ""
# the windows differ: they start anywhere in the hour before the data
expect windows_vary "$(cut -d"'" -f18 "$tmp/s1" | sort -u | wc -l)" -gt 150

check unknown_type 1 '' 'tsstore-bench: nope: not a TSBS cpu-only query type; the types: single-groupby-1-1-1 single-groupby-1-1-12 single-groupby-1-8-1 single-groupby-5-1-1 single-groupby-5-1-12 single-groupby-5-8-1 cpu-max-all-1 cpu-max-all-8 double-groupby-1 double-groupby-5 double-groupby-all high-cpu-1 high-cpu-all lastpoint groupby-orderby-limit (or all)\n' \
	q --print-queries nope 1 1
check missing_file 1 '' "tsstore-bench: $tmp/none.gz: No such file or directory\\n" \
	"$bench" --tsbs "$tmp/none.gz" --print-queries lastpoint 1 1
finish
