#!/bin/sh
# plot-sustained.sh -- draw the sustained workload's rows per second over
# time (tsstore, LMDB, RocksDB) from tsstore-bench's JSON lines into a
# PNG, with bench/plot-sustained.gp.  Does nothing (and says so) when the
# results hold no sustained timeline or gnuplot is not installed
# (scripts/deps.sh bench).
#
# Usage: bench/plot-sustained.sh RESULTS.jsonl OUT.png
set -eu
[ $# -eq 2 ] || { echo "usage: $0 RESULTS.jsonl OUT.png" >&2; exit 2; }
in=$1 out=$2
. "$(dirname "$0")/plot-common.sh"
plot_ready plot-sustained "$in" '"workload":"sustained".*"second":' "sustained timeline"
gnuplot -e "in='$in'; out='$out'" "$(dirname "$0")/plot-sustained.gp"
echo "plot-sustained: wrote $out"
