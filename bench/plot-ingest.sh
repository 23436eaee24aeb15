#!/bin/sh
# plot-ingest.sh -- draw the daemon ingest workloads' rows/s, one bar per
# engine and protocol, from tsstore-bench's JSON lines into a PNG with
# bench/plot-ingest.gp: ingest (tsstored, JSON lines over TCP),
# ingest_http (line protocol over HTTP: tsstored, VictoriaMetrics,
# InfluxDB 1.x) and remote_write (Prometheus remote write: tsstored,
# VictoriaMetrics; samples/s divided by the 10 fields of a TSBS row, so
# that every bar counts the same rows).  Bars are the medians of
# ingest_http's and remote_write's runs, with their min and max as error
# bars (ingest reports its best run alone).  Does nothing (and says so)
# when the results hold none of these or gnuplot is not installed
# (scripts/deps.sh bench).
#
# Usage: bench/plot-ingest.sh RESULTS.jsonl OUT.png
set -eu
[ $# -eq 2 ] || { echo "usage: $0 RESULTS.jsonl OUT.png" >&2; exit 2; }
in=$1 out=$2
. "$(dirname "$0")/plot-common.sh"
plot_ready plot-ingest "$in" '^{"workload":"\(ingest\|ingest_http\|remote_write\)","engine":' "ingest results"
data=$(mktemp)
trap 'rm -f "$data"' EXIT
# "engine|protocol|rows/s|min|max|divisor": one line per (workload,
# engine) of the metric that counts what it sent
bars() { # workload metric protocol divisor
	grep "^{\"workload\":\"$1\",\"engine\":\"[a-z]*\",\"metric\":\"$2\"," "$in" |
		while read -r line; do
			engine=$(printf '%s\n' "$line" | sed -E 's/.*"engine":"([a-z]+)".*/\1/')
			value=$(printf '%s\n' "$line" | sed -E 's/.*"value":([^,]+),.*/\1/')
			min=$(printf '%s\n' "$line" | sed -nE 's/.*"min":([^,}]+).*/\1/p')
			max=$(printf '%s\n' "$line" | sed -nE 's/.*"max":([^,}]+).*/\1/p')
			echo "$engine|$3|$value|${min:-$value}|${max:-$value}|$4"
		done
}
# the data: bar, "engine", "protocol", rows/s, min, max
{
	# ingest prints every run and reports its best: the largest
	bars ingest rows_per_s "JSON lines, TCP" 1 | grep '^tsstored' | sort -t'|' -k3,3g |
		tail -1 || true
	bars ingest_http rows_per_s "line protocol, HTTP" 1
	bars remote_write samples_per_s "remote write" 10
} | awk -F'|' '{ printf "%d \"%s\" \"%s\" %.0f %.0f %.0f\n", NR - 1, $1, $2, $3 / $6, $4 / $6, $5 / $6 }' \
	>"$data"
gnuplot -e "data='$data'; out='$out'" "$(dirname "$0")/plot-ingest.gp"
echo "plot-ingest: wrote $out"
