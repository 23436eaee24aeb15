#!/bin/sh
# plot-sweep.sh -- draw the absorb_sweep workload's results from
# tsstore-bench's JSON lines into two PNGs with bench/plot-sweep.gp:
# rows/s against batch size (absorb_batch) and MB/s against row size
# (absorb_rowsize), one line per engine that ran.  Does nothing (and says
# so) when the results hold no sweep or gnuplot is not installed
# (scripts/deps.sh bench).
#
# Usage: bench/plot-sweep.sh RESULTS.jsonl BATCH.png ROWSIZE.png
set -eu
[ $# -eq 3 ] || { echo "usage: $0 RESULTS.jsonl BATCH.png ROWSIZE.png" >&2; exit 2; }
in=$1 out_batch=$2 out_rowsize=$3
. "$(dirname "$0")/plot-common.sh"
plot_ready plot-sweep "$in" '^{"workload":"absorb_\(batch\|rowsize\)","engine":' "absorb_sweep results"
# the engines of each sweep, in the order they first appear
engines() {
	grep "^{\"workload\":\"$1\",\"engine\":" "$in" |
		sed 's/^{"workload":"[a-z_]*","engine":"\([a-z_0-9]*\)".*/\1/' | awk '!seen[$0]++' |
		tr '\n' ' '
}
gnuplot -e "in='$in'; out_batch='$out_batch'; out_rowsize='$out_rowsize';
	engines_batch='$(engines absorb_batch)'; engines_rowsize='$(engines absorb_rowsize)'" \
	"$(dirname "$0")/plot-sweep.gp"
echo "plot-sweep: wrote $out_batch and $out_rowsize"
