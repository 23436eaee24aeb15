#!/bin/sh
# test_prometheus.sh -- Debian's Prometheus 2.42 (`prometheus`) scraping
# tsstored's /metrics and its own every second and sending every sample to
# tsstored's /api/v1/write (remote_write, short queue deadlines and
# backoffs so that its retries happen within the test).  tsstored is
# stopped (SIGTERM) in the middle for 3 s and started again on the same
# port; Prometheus retries what it could not send.  Then:
#   - the table `up` has the key Prometheus's labels give (instance, job,
#     ts) and holds, for each job, exactly the samples Prometheus's own
#     storage answers (/api/v1/query of up[2m]), timestamp and value,
#     from the first sample remote write sent to the last Prometheus has:
#     across the restart no sample is lost (no hole: consecutive samples
#     less than 3 s apart, the time tsstored was down) and none is twice;
#   - up{job="prometheus"} is 1; up{job="tsstored"} is 1 before the stop
#     and after the restart, and 0 for every scrape while it was down;
#   - a counter of tsstored's /metrics (5 requests to /ping after the
#     restart) arrives as the row Prometheus scraped, equal to what
#     /metrics says;
#   - tsstored refused no sample, and Prometheus failed none but retried
#     some.
# Prometheus keeps its TSDB in the temporary directory and listens on a
# free loopback port; tsstored runs with --log-segment-size 1M (each
# metric is a table: tsstore-http(7), PROMETHEUS REMOTE WRITE).
#
# Usage: sh tests/interop/test_prometheus.sh BUILDDIR (make check-interop)
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"

need prometheus prometheus
need curl curl
tsd_start --log-segment-size 1M
pport=$(free_port)
prom=http://127.0.0.1:$pport
prometheus_writer_yml "$pport" >"$tmp/prometheus.yml"
prometheus_start prometheus "$pport" "$tmp/prometheus.yml"

# rows of up in tsstore with ts >= $1 (ns), per job: "N_prometheus
# N_tsstored", those of tsstored counted when 1 (its scrapes answered)
up_since() {
	tsq query up --from "${1}ns" --format jsonl 2>/dev/null |
		awk '/"job":"prometheus"/ { p++ } /"job":"tsstored".*"value":1}$/ { t++ }
		     END { print p + 0, t + 0 }'
}
# up_since_at_least T N: both jobs have N rows from T on
up_since_at_least() {
	set -- $(up_since "$1") "$2"
	[ "$1" -ge "$3" ] && [ "$2" -ge "$3" ]
}
now_ns() { echo "$(date +%s%N)"; }

# Prometheus's remote write begins once it has read its WAL (about 5 s)
wait_until 40 up_since_at_least 0 3 ||
	abort "no 3 samples of up per job reached tsstored in 40 s" "$tmp/prometheus.log"

# the restart: down for 3 s, up again on the same port
down=$(now_ns)
daemon_stop
sleep 3
tsd_start --log-segment-size 1M
up=$(now_ns)
i=0
while [ $i -lt 5 ]; do
	curl -sf -o /dev/null "$url/ping"
	i=$((i + 1))
done
# 4 more scrapes of each job stored after the restart, those of tsstored
# answered (the first may time out: it opens every table)
wait_until 40 up_since_at_least $((up + 1000000000)) 4 ||
	abort "no 4 samples of up per job (tsstored's 1) reached tsstored after its restart" \
		"$tmp/prometheus.log"

check up_schema 0 'instance\tstring\t\t1\njob\tstring\t\t2\nts\ttimestamp\tnow\t3\nvalue\tdouble\tNaN\t-\n' '' \
	tsq schema up

# Prometheus's own samples of up; tsstore's rows from the first remote
# write stored to the last sample Prometheus had
curl -sS -G "$prom/api/v1/query" --data-urlencode 'query=up[2m]' | "$canon" prom |
	LC_ALL=C sort >"$tmp/up.prom"
# the rows of tsstore in the window: from each series' first row to the
# last sample of up.prom (remote write sends behind the scrapes)
up_window() {
	tsq query up --format jsonl | "$canon" tsstore up | LC_ALL=C sort >"$tmp/up.tsstore"
	: >"$tmp/up.want"
	: >"$tmp/up.got"
	awk -F'\t' '
	FNR == 1 { file++ }
	{ key = $3 "\t" $4 }
	file == 1 { if (!(key in first)) first[key] = $2; next }
	file == 2 { if ($2 > last) last = $2; next }
	file == 3 && $2 >= first[key] && $2 <= last { print > "'"$tmp"'/up.want" }
	file == 4 && $2 <= last { print > "'"$tmp"'/up.got" }
	' "$tmp/up.tsstore" "$tmp/up.prom" "$tmp/up.prom" "$tmp/up.tsstore"
	cmp -s "$tmp/up.want" "$tmp/up.got"
}
wait_until 20 up_window
same up_samples "$tmp/up.want" "$tmp/up.got"

# the window holds the restart, each job has no hole and no duplicate
for job in prometheus tsstored; do
	grep "	job=\"$job\"	" "$tmp/up.got" | cut -f2 >"$tmp/ts.$job"
	first=$(head -n 1 "$tmp/ts.$job")
	last=$(tail -n 1 "$tmp/ts.$job")
	expect "window_before_$job" "${first:-0}" -lt $((down - 2000000000))
	expect "window_after_$job" "${last:-0}" -gt $((up + 3000000000))
	expect "no_duplicate_$job" "$(uniq -d "$tmp/ts.$job" | wc -l)" -eq 0
	# one row per scrape, no hole: consecutive rows 0.2 s to 3 s apart
	# (tsstored was down 3 s: had the samples of that time been lost, 4 s
	# would lie between two rows; an overloaded Prometheus may scrape
	# 2.5 s apart, which up_samples already compared)
	awk 'NR > 1 && ($1 - prev >= 3000000000 || $1 - prev < 200000000) { print prev, $1 } { prev = $1 }' \
		"$tmp/ts.$job" >"$tmp/gaps.$job"
	if [ -s "$tmp/gaps.$job" ]; then
		cp "$tmp/gaps.$job" "$tmp/out"
		: >"$tmp/err"
		fail "one_row_per_scrape_$job" "rows less than 0.2 s or 3 s or more apart (ns)"
	else
		pass
	fi
done
# up{job="prometheus"} is always 1; up{job="tsstored"} is 1 before the
# stop and after the restart, and 0 for every scrape while it was down.
# (A scrape of tsstored may also time out, 0, on an overloaded machine:
# the timeout is the 1 s interval.  Those are counted, not failed.)
expect up_prometheus_1 "$(grep '	job="prometheus"	' "$tmp/up.got" | grep -vc '	value=1$')" -eq 0
awk -F'\t' -v down="$down" -v up="$up" '$4 != "job=\"tsstored\"" { next }
	$2 > down + 1000000000 && $2 < up - 1000000000 { if ($5 == "value=0") zero++; else one++ }
	$2 < down && $5 == "value=1" { before++ }
	$2 > up && $5 == "value=1" { after++ }
	($2 < down || $2 > up) && $5 == "value=0" { timeout++ }
	END { print zero + 0, one + 0, before + 0, after + 0, timeout + 0 }' "$tmp/up.got" >"$tmp/zeros"
read -r zero one before after timeout <"$tmp/zeros"
expect up_tsstored_0_while_down "$zero" -ge 1
expect up_tsstored_never_1_while_down "$one" -eq 0
expect up_tsstored_1_before "$before" -ge 1
expect up_tsstored_1_after "$after" -ge 3
[ "$timeout" -gt 0 ] && echo "note: $timeout scrape(s) of tsstored timed out (0) outside the restart"

# a counter of tsstored's /metrics, scraped and written back: 5 pings
ping_row() {
	tsq latest tsstore_http_requests_total --prefix "204,127.0.0.1:$http_port,tsstored,/ping" \
		--format jsonl | grep -q '"value":5}$'
}
wait_until 20 ping_row
check ping_counter_metrics 0 'tsstore_http_requests_total{path="/ping",code="204"} 5\n' '' \
	sh -c "curl -sS '$url/metrics' | grep '^tsstore_http_requests_total{path=\"/ping\"'"
check ping_counter_row 0 "{\"code\":\"204\",\"instance\":\"127.0.0.1:$http_port\",\"job\":\"tsstored\",\"path\":\"/ping\",\"value\":5}\n" '' \
	sh -c "'$bin' -s '$tmp/sock' latest tsstore_http_requests_total --prefix '204,127.0.0.1:$http_port,tsstored,/ping' --format jsonl | sed 's/,\"ts\":[0-9]*//'"

# nothing refused by tsstored (since the restart), nothing failed in Prometheus
check tsstored_refused_none 0 '0\n' '' sh -c \
	"curl -sS '$url/metrics' | awk '/^tsstore_ingest_lines_rejected_total/ { n += \$2 } END { print n + 0 }'"
curl -sS "$prom/metrics" >"$tmp/prom.metrics"
failed_samples=$(awk '/^prometheus_remote_storage_samples_failed_total/ { n += $2 } END { print n + 0 }' "$tmp/prom.metrics")
retried_samples=$(awk '/^prometheus_remote_storage_samples_retried_total/ { n += $2 } END { print n + 0 }' "$tmp/prom.metrics")
expect prometheus_failed_none "$failed_samples" = 0
expect prometheus_retried_some "$retried_samples" != 0

peers_stop
daemon_stop
finish
