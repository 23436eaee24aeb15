#!/bin/sh
# plot-latency.sh -- draw the latency workload's per-second p99 timelines
# (merges off and on) from tsstore-bench's JSON lines into a PNG, with
# bench/plot-latency.gp.  Does nothing (and says so) when the results hold
# no latency timeline or gnuplot is not installed (scripts/deps.sh bench).
#
# Usage: bench/plot-latency.sh RESULTS.jsonl OUT.png
set -eu
[ $# -eq 2 ] || { echo "usage: $0 RESULTS.jsonl OUT.png" >&2; exit 2; }
in=$1 out=$2
. "$(dirname "$0")/plot-common.sh"
plot_ready plot-latency "$in" '"workload":"latency".*"second":' "latency timeline"
gnuplot -e "in='$in'; out='$out'" "$(dirname "$0")/plot-latency.gp"
echo "plot-latency: wrote $out"
