#!/bin/sh
# test_bench.sh -- keep the benchmark harness working: run
# `tsstore-bench --quick --compare` once (every workload, whatever peers
# this build has) and check what it printed, not how fast anything was
# (figures are judged in BENCHMARKS.md, never by a test):
#   - exit status 0, and no "error" line (a tsstore call that failed);
#   - every line of stdout is one JSON object naming its workload;
#   - every workload that needs nothing from outside the repository
#     printed a positive tsstore figure for each metric listed below;
#   - --compare printed the tsstore/hash and tsstore/sqlite ratios and,
#     for every Done-when target, a line saying whether it is met;
#   - flush and cold_scan printed their CPU ceilings (tree walk, LZO1X-1
#     on one thread and on every core) and --compare a positive ceiling
#     line for each, saying whether the target is reachable;
#   - corrections printed its baseline and 0 % figures, and for each
#     figure that needs issue 28's calls its result or "not built";
#   - rollups printed each way's time for each of its three requests
#     (the raw scan for the first) and both ingest figures;
#   - `--in-service` (a second, short run of scan, range and latest)
#     printed tsstore's lines saying the state and the tablets visited,
#     and a target line for each when LMDB is built;
#   - absorb_sweep printed tsstore's and the hash table's line at each of
#     its points, and --compare one ratio per point (never across points);
#   - the workloads that need the machine's help (fuse_cat: /dev/fuse;
#     ingest's peer: VictoriaMetrics; ingest_http's InfluxDB;
#     tsbs_queries' InfluxDB and VictoriaMetrics, and tsstored's figures
#     or its "not yet" while it has no /query; the LMDB and RocksDB
#     peers) either
#     printed their lines or said on stderr why not.
#
# The workloads that read TSBS data (ingest, ingest_http, remote_write,
# standby, tsbs, tsbs_queries) get a 20-minute slice
# that scripts/tsbs-slice.sh writes (100 hosts, 12,000 rows), not the
# shared file: the test needs nothing from outside the repository.
#
# Usage: tests/cli/test_bench.sh BUILDDIR (see lib.sh); the bench is
# BUILDDIR/bin/tsstore-bench and runs from the repository's root.
set -u
root=$(pwd)
. "$root/tests/cli/lib.sh"
bench=$(dirname "$bin")/tsstore-bench
if [ ! -x "$bench" ]; then
	echo "$0: $bench: not built" >&2
	exit 2
fi

if ! sh "$root/scripts/tsbs-slice.sh" "$tmp/tsbs.influx.gz"; then
	echo "$0: scripts/tsbs-slice.sh failed" >&2
	exit 2
fi
start=$(date +%s)
(cd "$root" && "$bench" --quick --compare --tsbs "$tmp/tsbs.influx.gz") >"$tmp/bench.jsonl" 2>"$tmp/bench.err"
status=$?
echo "tsstore-bench --quick --compare: exit $status, $(($(date +%s) - start)) s," \
	"$(wc -l <"$tmp/bench.jsonl") lines"
cp "$tmp/bench.jsonl" "$tmp/out"
cp "$tmp/bench.err" "$tmp/err"
expect "exit status 0" "$status" -eq 0

# json_lines: lines that are not one JSON object with a workload first
bad=$(grep -cv '^{"workload":"[a-z_]*",.*}$' "$tmp/bench.jsonl")
expect "every line a JSON object naming its workload" "$bad" -eq 0
errors=$(grep -c '"error"' "$tmp/bench.jsonl")
expect "no error lines" "$errors" -eq 0
dropped=$(grep -c 'left out of --compare' "$tmp/bench.err")
expect "every result and target kept for --compare" "$dropped" -eq 0

# result WORKLOAD ENGINE METRIC: a line of that result with a positive value
result() {
	grep "^{\"workload\":\"$1\",\"engine\":\"$2\",\"metric\":\"$3\",\"value\":" \
		"$tmp/bench.jsonl" | sed -n 's/.*"value":\([0-9.e+-]*\).*/\1/p' | head -1
}
for r in \
	"absorb tsstore rows_per_sec" "absorb tsstore_in_memory rows_per_sec" \
	"absorb hash rows_per_sec" "absorb rbtree rows_per_sec" "absorb sqlite rows_per_sec" \
	"absorb_readers tsstore_2readers rows_per_sec" \
	"absorb_readers tsstore_2readers rows_per_writer_cpu_sec" \
	"device device seq_write_mb_per_sec" "device memory memcpy_mb_per_sec" \
	"flush tsstore flush_mb_per_sec" "flush tsstore flush_over_device" \
	"flush tsstore tree_walk_seconds" "flush lzo1x_1 compress_1_thread_mb_per_sec" \
	"flush lzo1x_1 compress_all_cores_mb_per_sec" \
	"flush ceiling flush_cpu_bound_mb_per_sec" "flush ceiling flush_cpu_bound_over_device" \
	"bytes_per_row tsstore bytes_per_row" "bytes_per_row tsstore_merged bytes_per_row" \
	"bytes_per_row raw bytes_per_row" \
	"scan tsstore rows_per_sec" "range tsstore queries_per_sec" \
	"latest tsstore lookups_per_sec" "aggregate tsstore rows_per_sec" \
	"aggregate tsstore_scan rows_per_sec" "cold_scan tsstore tablet_mb_per_sec" \
	"cold_scan lzo1x_1 decompress_1_thread_mb_per_sec" \
	"cold_scan lzo1x_1 decompress_all_cores_mb_per_sec" \
	"cold_scan ceiling decompress_over_device" \
	"latency tsstore_merge_off p99_all_ns" "latency tsstore_merge_on p99_all_ns" \
	"ingest tsstored rows_per_s" "ingest_http tsstored rows_per_s" \
	"ingest_http tsstored peak_rss_mb" "remote_write tsstored samples_per_s" \
	"remote_write tsstored tables" "sql tsstore_c scan_rows_per_s" \
	"sql tsstore_sql scan_rows_per_s" \
	"first_row tsstore first_row_mean_us" "first_row tsstore first_row_p99_us" \
	"tsbs tsstore lastpoint_mean_us" "tsbs tsstore double_groupby_1_mean_us" \
	"tsbs sqlite double_groupby_1_mean_us" \
	"corrections tsstore scan_rows_per_sec" "corrections tsstore range_queries_per_sec" \
	"corrections tsstore latest_lookups_per_sec" \
	"corrections deletes_0pct scan_rows_per_sec" \
	"corrections deletes_0pct range_queries_per_sec" \
	"corrections deletes_0pct latest_lookups_per_sec" \
	"standby tsstored rows_per_s" "standby tsstored_with_standby rows_per_s" \
	"sustained tsstore rows_per_sec" "sustained tsstore rows_per_thread_cpu_sec" \
	"sustained tsstore min_second_rows_per_sec" "sustained hash rows_per_thread_cpu_sec"; do
	set -- $r
	v=$(result "$1" "$2" "$3")
	cp /dev/null "$tmp/out"
	if [ -z "$v" ]; then
		fail "$1/$2/$3" "no result line"
	elif awk -v v="$v" 'BEGIN { exit !(v > 0) }'; then
		pass
	else
		fail "$1/$2/$3" "value $v is not positive"
	fi
done

# The per-second latency timeline: one p99 line per second of each run.
seconds=$(grep -c '"workload":"latency","engine":"tsstore_merge_on","metric":"p99_ns"' \
	"$tmp/bench.jsonl")
expect "latency timeline has a line per second" "$seconds" -ge 10

# --compare: ratios, and a met line for every target the run could judge.
expect "ratio tsstore/hash" "$(grep -c '"ratio":"tsstore/hash"' "$tmp/bench.jsonl")" -ge 1
expect "ratio tsstore/sqlite" "$(grep -c '"ratio":"tsstore/sqlite"' "$tmp/bench.jsonl")" -ge 1
# scan, range and latest are judged against LMDB, bytes_per_row against
# RocksDB: only when this build has them.
targets="absorb absorb_readers flush aggregate cold_scan latency ingest ingest_http sql corrections rollups standby sustained"
grep -q '"engine":"lmdb"' "$tmp/bench.jsonl" && targets="$targets scan range latest"
grep -q '"engine":"rocksdb"' "$tmp/bench.jsonl" && targets="$targets bytes_per_row"
# remote_write is judged against VictoriaMetrics alone
grep -q '"workload":"remote_write","engine":"victoriametrics"' "$tmp/bench.jsonl" &&
	targets="$targets remote_write"
for w in $targets; do
	n=$(grep "^{\"workload\":\"$w\",\"target\":" "$tmp/bench.jsonl" |
		grep -c '"met":\(true\|false\)}$')
	expect "target line of $w" "$n" -ge 1
done

# The ceilings of the flush and cold-scan targets: a positive value and
# whether the goal is reachable on this machine.
for w in flush cold_scan; do
	v=$(grep "^{\"workload\":\"$w\",\"ceiling\":" "$tmp/bench.jsonl" |
		grep '"reachable":\(true\|false\)}$' | sed -n 's/.*"value":\([0-9.e+-]*\).*/\1/p' |
		head -1)
	if [ -z "$v" ]; then
		fail "ceiling line of $w" "missing"
	elif awk -v v="$v" 'BEGIN { exit !(v > 0) }'; then
		pass
	else
		fail "ceiling line of $w" "value $v is not positive"
	fi
done

# absorb_sweep: each engine's line at every point (8 batch sizes, 6 row
# sizes, two metrics there), and --compare's ratios point by point.
sweep() { grep -c "^{\"workload\":\"$1\",$2" "$tmp/bench.jsonl"; }
expect "absorb_batch tsstore points" "$(sweep absorb_batch '"engine":"tsstore","metric":"rows_per_sec"')" -eq 8
expect "absorb_batch hash points" "$(sweep absorb_batch '"engine":"hash","metric":"rows_per_sec"')" -eq 8
expect "absorb_rowsize tsstore points" "$(sweep absorb_rowsize '"engine":"tsstore","metric":"MB_per_sec"')" -eq 6
expect "absorb_rowsize hash points" "$(sweep absorb_rowsize '"engine":"hash","metric":"rows_per_sec"')" -eq 6
expect "absorb_batch ratios per point" "$(sweep absorb_batch '"batch":[0-9]*,"metric":"rows_per_sec","ratio":"tsstore/hash"')" -eq 8
expect "absorb_rowsize ratios per point" "$(sweep absorb_rowsize '"row_size":[0-9]*,"metric":"[a-zA-Z_]*","ratio":"tsstore/hash"')" -eq 12

# corrections: each figure that needs issue 28's calls printed its results
# or said that they are not built yet (the baseline and 0 % are above).
for f in "tombstone_empty range_queries_per_sec" "deleted_1pct scan_rows_per_sec" \
	"replaced_1pct latest_lookups_per_sec" "changes_day tsstore changes_day_median_ms" \
	"delete_host_day tsstore delete_host_day_median_ms"; do
	set -- $f
	if [ $# -eq 2 ]; then line="\"engine\":\"$1\",\"metric\":\"$2\",\"value\":"; else
		line="\"engine\":\"$2\",\"metric\":\"$3\",\"value\":"; fi
	if grep -q "^{\"workload\":\"corrections\",$line" "$tmp/bench.jsonl" ||
		grep -q "^{\"workload\":\"corrections\",\"engine\":\"tsstore\",\"figure\":\"$1\",\"status\":\"not built\"" \
			"$tmp/bench.jsonl"; then
		pass
	else
		fail "corrections $1" "neither its result nor \"not built\""
	fi
done

# rollups: raw, forced through the rollup, as chosen, for each request;
# the raw scan for the 1-hour one; ingest without and with the rollup.
rl() { grep -c "^{\"workload\":\"rollups\",\"engine\":\"$1\",\"metric\":\"$2\",\"value\":" "$tmp/bench.jsonl"; }
for e in raw rollup tsstore; do
	expect "rollups $e aggregate_seconds" "$(rl $e aggregate_seconds)" -eq 3
done
expect "rollups raw_scan aggregate_seconds" "$(rl raw_scan aggregate_seconds)" -eq 1
expect "rollups no_rollup ingest" "$(rl no_rollup ingest_rows_per_sec)" -eq 1
expect "rollups tsstore ingest" "$(rl tsstore ingest_rows_per_sec)" -eq 1

# --in-service (issue 32): the query workloads right after a load with
# the library's defaults; each tsstore result says so, with the tablets
# the read visited, and is judged against LMDB when this build has it.
(cd "$root" && "$bench" --quick --compare --in-service --workload scan --workload range \
	--workload latest) >"$tmp/service.jsonl" 2>"$tmp/service.err"
status=$?
cp "$tmp/service.err" "$tmp/err"
expect "in service: exit status 0" "$status" -eq 0
for w in "scan rows_per_sec" "range queries_per_sec" "latest lookups_per_sec"; do
	set -- $w
	n=$(grep "^{\"workload\":\"$1\",\"engine\":\"tsstore\",\"metric\":\"$2\",\"value\":" \
		"$tmp/service.jsonl" | grep -c '"state":"in_service","filling_tablets":[0-9]*,"tablets_visited":[1-9]')
	expect "in service: $1 tsstore line with the tablets visited" "$n" -eq 1
	if grep -q '"engine":"lmdb"' "$tmp/service.jsonl"; then
		n=$(grep -c "^{\"workload\":\"$1\",\"target\":.*\"met\":\(true\|false\)}$" "$tmp/service.jsonl")
		expect "in service: target line of $1" "$n" -eq 1
	fi
done

# Optional parts: present, or a reason on stderr.
optional() {
	name=$1 line=$2 reason=$3
	if grep -q "$line" "$tmp/bench.jsonl" || grep -q "$reason" "$tmp/bench.err"; then
		pass
	else
		fail "$name" "neither its result nor why it is missing"
	fi
}
optional "fuse_cat" '"workload":"fuse_cat","engine":"tsstore-fuse"' 'fuse_cat'
# A peer is missing, or (on a loaded machine: seen under SANITIZE=1 with
# other builds running) did not start or failed, and the bench said so.
optional "ingest peer" '"engine":"victoriametrics"' 'victoria-metrics is not installed\|victoriametrics did not start\|victoriametrics failed'
optional "ingest_http InfluxDB" '"workload":"ingest_http","engine":"influxdb"' 'influxd is not installed\|influxdb did not start\|influxdb failed\|influxd did not create'
optional "tsbs_queries InfluxDB" '"workload":"tsbs_queries","engine":"influxdb","metric":"median_us"' 'influxd is not installed\|tsbs_queries: influxdb did not start\|tsbs_queries: influxdb failed'
optional "tsbs_queries VictoriaMetrics" '"workload":"tsbs_queries","engine":"victoriametrics","metric":"median_us"' 'victoria-metrics is not installed\|tsbs_queries: victoriametrics did not start\|tsbs_queries: victoriametrics failed'
# tsstored: its figures once it answers /query, until then "not yet"
optional "tsbs_queries tsstored" '"workload":"tsbs_queries","engine":"tsstored","\(metric":"median_us\|status":"not yet\)' 'tsbs_queries: tsstored'
finish
