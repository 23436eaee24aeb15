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
if ! grep -q '"workload":"latency".*"second":' "$in"; then
	echo "plot-latency: no latency timeline in $in" >&2
	exit 0
fi
if ! command -v gnuplot >/dev/null 2>&1; then
	echo "plot-latency: gnuplot is not installed (scripts/deps.sh bench)" >&2
	exit 0
fi
gnuplot -e "in='$in'; out='$out'" "$(dirname "$0")/plot-latency.gp"
echo "plot-latency: wrote $out"
