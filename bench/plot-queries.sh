#!/bin/sh
# plot-queries.sh -- draw the tsbs_queries workload's latencies from
# tsstore-bench's JSON lines into a PNG with bench/plot-queries.gp: one
# group of bars per TSBS query type, one bar per engine that answered it
# (influxdb: InfluxQL through /query; victoriametrics: its PromQL
# equivalent through /api/v1/query_range, for the types that have one;
# tsstored: /query, once it answers it), the bar the median latency and
# its error bar up to the p99, on a logarithmic axis.  Does nothing (and
# says so) when the results hold no tsbs_queries results or gnuplot is
# not installed (scripts/deps.sh bench).
#
# Usage: bench/plot-queries.sh RESULTS.jsonl OUT.png
set -eu
[ $# -eq 2 ] || { echo "usage: $0 RESULTS.jsonl OUT.png" >&2; exit 2; }
in=$1 out=$2
. "$(dirname "$0")/plot-common.sh"
plot_ready plot-queries "$in" '^{"workload":"tsbs_queries","engine":"[a-z]*","metric":"median_us"' "tsbs_queries results"
data=$(mktemp)
trap 'rm -f "$data"' EXIT
# "type engine median p99 rows": one line per (type, engine), the types
# in the order the workload ran them
grep '^{"workload":"tsbs_queries","engine":"[a-z]*","metric":"\(median\|p99\)_us"' "$in" |
	sed -E 's/.*"engine":"([a-z]+)","metric":"([a-z0-9]+)_us","value":([^,]+),.*"query":"([^"]+)".*"rows":([0-9]+).*/\4 \1 \2 \3 \5/' |
	awk '{ k = $1 " " $2
	       if (!(k in seen)) { seen[k] = 1; order[++n] = k; rows[k] = $5 }
	       v[k, $3] = $4 }
	     END { for (i = 1; i <= n; i++) { k = order[i]
	           printf "%s %.1f %.1f %s\n", k, v[k, "median"], v[k, "p99"], rows[k] } }' |
	awk 'BEGIN { x["influxdb"] = -0.27; x["victoriametrics"] = 0; x["tsstored"] = 0.27 }
	     { if (!($1 in t)) { t[$1] = nt++ }
	       printf "%.2f %s %s %s %s \"%s\"\n", t[$1] + x[$2], $2, $3, $4, $5, $1 }' >"$data"
# each type's tic under the middle of its group
tics=$(awk '{ gsub(/"/, "", $6); if (!($6 in seen)) { seen[$6] = 1; printf "%s\"%s\" %d", n++ ? ", " : "", $6, $1 + 0.5 } }' "$data")
gnuplot -e "data='$data'; out='$out'; tics='$tics'" "$(dirname "$0")/plot-queries.gp"
echo "plot-queries: wrote $out"
