#!/bin/sh
# test_collectd.sh -- Debian's collectd (package collectd-core) sending
# its cpu, memory, load and interface (lo) readings every second through
# write_graphite to tsstored's Graphite listener, with its own config file
# (`collectd -f -C`, pid file and base dir in the temporary directory,
# Hostname "interop.test"), three write_graphite nodes:
#   - "recommended": Prefix "collectd." and AlwaysAppendDS true, what
#     docs/ingest-mapping.md section 6 advises: every path is
#     collectd.HOST.PLUGIN[-INSTANCE].TYPE[-INSTANCE].DS, so one table
#     `collectd` keyed p1 (host), p2 (plugin), p3 (type), p4 (data
#     source), ts; checked row by row: the host, each plugin's types and
#     data sources, whole-second timestamps of the run, values that make
#     sense (load and rates >= 0, memory used > 0 and below MemTotal);
#   - "udp": the same over UDP to tsstored's graphite-udp: listener,
#     Prefix "collectdudp.": the same series in table `collectdudp`;
#   - "default": collectd's defaults (no prefix, no AlwaysAppendDS), what
#     a user gets without that advice: one table named after the host
#     (`interop_test`, collectd writes the host's dots as _) holding the
#     paths of one depth -- 3 components (cpu, memory) or 4 (load,
#     interface), whichever came first -- and the others refused
#     (reason components).
# collectd sends "nan" for a rate's first reading; those lines are
# skipped (tsstore_graphite_lines_nan_total, as carbon drops them), and
# nothing is refused besides the above.
#
# Usage: sh tests/interop/test_collectd.sh BUILDDIR (make check-interop)
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"

need collectd collectd-core
need curl curl
plugins=/usr/lib/collectd
[ -f "$plugins/write_graphite.so" ] ||
	abort "$plugins/write_graphite.so is missing (Debian package collectd-core): run scripts/deps.sh interop"
tsd_start --listen graphite-udp:127.0.0.1:0
udp_port=$(sed -n 's/^tsstored: listening on graphite-udp:127\.0\.0\.1:\([0-9]*\)$/\1/p' "$tmp/tsstored.log")
[ -n "$udp_port" ] || abort "tsstored did not listen on graphite-udp" "$tmp/tsstored.log"
mkdir "$tmp/collectd"
cat >"$tmp/collectd.conf" <<EOF
Hostname "interop.test"
FQDNLookup false
BaseDir "$tmp/collectd"
PIDFile "$tmp/collectd/collectd.pid"
PluginDir "$plugins"
TypesDB "/usr/share/collectd/types.db"
Interval 1
AutoLoadPlugin false
LoadPlugin logfile
<Plugin logfile>
  LogLevel info
  File STDERR
</Plugin>
LoadPlugin cpu
LoadPlugin memory
LoadPlugin load
LoadPlugin interface
<Plugin interface>
  Interface "lo"
</Plugin>
LoadPlugin write_graphite
<Plugin write_graphite>
  <Node "recommended">
    Host "127.0.0.1"
    Port "$graphite_port"
    Protocol "tcp"
    Prefix "collectd."
    AlwaysAppendDS true
  </Node>
  <Node "udp">
    Host "127.0.0.1"
    Port "$udp_port"
    Protocol "udp"
    Prefix "collectdudp."
    AlwaysAppendDS true
  </Node>
  <Node "default">
    Host "127.0.0.1"
    Port "$graphite_port"
    Protocol "tcp"
  </Node>
</Plugin>
EOF
start=$(date +%s)
peer_start collectd collectd -f -C "$tmp/collectd.conf"

# rows of table collectd, canonical: collectd TS p1=.. p2=.. p3=.. p4=.. value=..
rows() { tsq query collectd --format jsonl 2>/dev/null | "$canon" tsstore collectd; }
# every plugin has readings of 2 seconds, the rates included, over TCP
# and over UDP
all_plugins() {
	rows >"$tmp/rows"
	tsq query collectdudp --format jsonl 2>/dev/null | "$canon" tsstore collectd >"$tmp/rows.udp"
	for p in 'p2="cpu-0"	p3="cpu-idle"' 'p2="memory"' 'p2="load"' 'p2="interface-lo"	p3="if_octets"'; do
		[ "$(grep -F "	$p	" "$tmp/rows" | cut -f2 | sort -u | wc -l)" -ge 2 ] || return 1
		[ "$(grep -F "	$p	" "$tmp/rows.udp" | cut -f2 | sort -u | wc -l)" -ge 2 ] || return 1
	done
}
wait_until 30 all_plugins || abort "collectd's readings did not all reach tsstored in 30 s" "$tmp/collectd.log"
peer_stop "$collectd_pid"
end=$(date +%s)
rows >"$tmp/rows"
tsq query collectdudp --format jsonl | "$canon" tsstore collectd >"$tmp/rows.udp"

check schema 0 'p1\tstring\t\t1\np2\tstring\t\t2\np3\tstring\t\t3\np4\tstring\t\t4\nts\ttimestamp\tnow\t5\nvalue\tdouble\tNaN\t-\n' '' \
	tsq schema collectd
# each row: the host; a plugin, type and data source collectd has; a
# timestamp of the run in whole seconds; a plausible value
memtotal=$(awk '/^MemTotal:/ { print $2 * 1024 }' /proc/meminfo)
awk -F'\t' -v start="$start" -v end="$end" -v memtotal="$memtotal" '
function val(s) { sub(/^value=/, "", s); return s + 0 }
{
	ok = $1 == "collectd" && $3 == "p1=\"interop_test\""
	sec = substr($2, 1, length($2) - 9); frac = substr($2, length($2) - 8)
	ok = ok && frac == "000000000" && sec >= start - 1 && sec <= end + 1
	v = val($7)
	if ($4 ~ /^p2="cpu-[0-9]+"$/)
		ok = ok && $5 ~ /^p3="cpu-(user|system|nice|idle|wait|interrupt|softirq|steal)"$/ &&
		     $6 == "p4=\"value\"" && v >= 0
	else if ($4 == "p2=\"memory\"")
		ok = ok && $5 ~ /^p3="memory-(used|free|buffered|cached|slab_recl|slab_unrecl)"$/ &&
		     $6 == "p4=\"value\"" && v >= 0 && v <= memtotal
	else if ($4 == "p2=\"load\"")
		ok = ok && $5 == "p3=\"load\"" && $6 ~ /^p4="(shortterm|midterm|longterm)"$/ && v >= 0 && v < 1000
	else if ($4 == "p2=\"interface-lo\"")
		ok = ok && $5 ~ /^p3="if_(octets|packets|errors|dropped)"$/ && $6 ~ /^p4="(rx|tx)"$/ && v >= 0
	else
		ok = 0
	if (!ok) { print "unexpected row: " $0; bad++ }
	if ($4 == "p2=\"memory\"" && $5 == "p3=\"memory-used\"" && v > 0) used++
	if ($4 == "p2=\"load\"") load[$6]++
	if ($4 ~ /^p2="cpu-/) cpu[$4]++
	if ($4 == "p2=\"interface-lo\"") ifc[$5 "/" $6]++
}
END {
	print "bad", bad + 0
	print "memory_used_positive", (used > 0)
	print "load_sources", length(load)
	n = 0; for (k in cpu) n++; print "cpus", n
	n = 0; for (k in ifc) n++; print "interface_series", n
}' "$tmp/rows" >"$tmp/summary"
check schema_udp 0 'p1\tstring\t\t1\np2\tstring\t\t2\np3\tstring\t\t3\np4\tstring\t\t4\nts\ttimestamp\tnow\t5\nvalue\tdouble\tNaN\t-\n' '' \
	tsq schema collectdudp
# the UDP rows are the same series, of the same plugins (read as table
# collectd, the names of their first column only differ)
cut -f3-6 "$tmp/rows" | LC_ALL=C sort -u >"$tmp/series.tcp"
cut -f3-6 "$tmp/rows.udp" | LC_ALL=C sort -u >"$tmp/series.udp"
same udp_series "$tmp/series.tcp" "$tmp/series.udp"
grep '^unexpected row' "$tmp/summary" | head -5
expect rows_plausible "$(sed -n 's/^bad //p' "$tmp/summary")" -eq 0
expect memory_used_positive "$(sed -n 's/^memory_used_positive //p' "$tmp/summary")" -eq 1
expect load_three_sources "$(sed -n 's/^load_sources //p' "$tmp/summary")" -eq 3
expect cpu_every_cpu "$(sed -n 's/^cpus //p' "$tmp/summary")" -eq "$(grep -c '^cpu[0-9]' /proc/stat)"
expect interface_eight_series "$(sed -n 's/^interface_series //p' "$tmp/summary")" -eq 8

# collectd's defaults: a table named after the host, one path depth
check default_tables 0 'collectd\ncollectdudp\ninterop_test\n' '' tsq tables
tsq schema interop_test | cut -f1 | tr '\n' ' ' >"$tmp/default.key"
tsq query interop_test --format jsonl | "$canon" tsstore interop_test | cut -f3 | sed 's/-.*//' |
	LC_ALL=C sort -u | tr '\n' ' ' >"$tmp/default.plugins"
case "$(cat "$tmp/default.key")" in
"p1 p2 ts value ") want='p1="cpu p1="memory" ' ;;
"p1 p2 p3 ts value ") want='p1="interface p1="load" ' ;;
*) want="a key p1 p2 ts or p1 p2 p3 ts" ;;
esac
expect default_one_depth "$(cat "$tmp/default.plugins")" = "$want"
metrics() { curl -sS "$url/metrics"; }
components=$(metrics | sed -n 's/^tsstore_graphite_lines_rejected_total{reason="components"} //p')
expect default_other_depth_refused "${components:-0}" -gt 0
# besides those, nothing is refused; the "nan" of first readings is
# skipped, counted and not logged
other=$(metrics | awk '/^tsstore_graphite_lines_rejected_total/ && !/"components"/ { n += $2 } END { print n + 0 }')
expect refused_nothing_else "$other" -eq 0
nan=$(metrics | sed -n 's/^tsstore_graphite_lines_nan_total //p')
expect nan_skipped "${nan:-0}" -gt 0
expect nan_not_logged "$(grep -c "graphite: refused line '.* nan " "$tmp/tsstored.log")" -eq 0

daemon_stop
finish
