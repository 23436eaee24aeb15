# plot-common.sh -- what every bench/plot-*.sh checks before it draws,
# sourced by them (not run): the results hold what the plot needs, and
# gnuplot is installed.  Either missing is not an error -- `make bench`
# draws whatever its workloads produced -- so the plot says why it drew
# nothing and the script exits 0.
#
# plot_ready NAME RESULTS PATTERN WHAT
#   NAME     the plot, for the messages (plot-ingest)
#   RESULTS  tsstore-bench's JSON lines
#   PATTERN  a grep basic regular expression a line of them must match
#   WHAT     what is missing when none does ("ingest results")
plot_ready() {
	if ! grep -q "$3" "$2"; then
		echo "$1: no $4 in $2" >&2
		exit 0
	fi
	if ! command -v gnuplot >/dev/null 2>&1; then
		echo "$1: gnuplot is not installed (scripts/deps.sh bench)" >&2
		exit 0
	fi
}
