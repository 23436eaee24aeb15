#!/bin/sh
# test_promread.sh -- PromQL over tsstore: Debian's Prometheus 2.42
# evaluating queries on data it reads from tsstored's /api/v1/read
# (remote read) gives what the same queries give on a Prometheus that
# holds the data itself.
#
#   Prometheus A scrapes itself and tsstored's /metrics every second and
#   sends every sample to tsstored's /api/v1/write (remote write), for
#   about 15 s.  Remote write only sends what is scraped once it has
#   started (a few seconds after Prometheus), so the samples A holds from
#   before the first one tsstored got are deleted in A (its admin API,
#   delete_series): from then on A and tsstore hold the same samples.
#   Prometheus B has no scrape configs and reads tsstored (remote_read,
#   read_recent: true).  At an instant T all of whose samples tsstored
#   has, the same PromQL -- rate, sum by, avg_over_time, max_over_time,
#   topk, histogram_quantile, and selectors with =, !=, =~ (RE2's \d and
#   (?:...) among them), !~ and a regular expression on __name__ -- goes to A and B through their HTTP
#   API, /api/v1/query at T and /api/v1/query_range over the 15 s before
#   T, step 1 s; the answers (canon promql) must have the same series and
#   timestamps and values equal within 1e-9 relative (NaN equal to NaN),
#   and none may be empty.
#
# Usage: sh tests/interop/test_promread.sh BUILDDIR (make check-interop)
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"

need prometheus prometheus
need curl curl
tsd_start --log-segment-size 1M
aport=$(free_port)
bport=$(free_port)
while [ "$bport" = "$aport" ]; do bport=$(free_port); done
proma=http://127.0.0.1:$aport
promb=http://127.0.0.1:$bport
prometheus_writer_yml "$aport" >"$tmp/a.yml"
cat >"$tmp/b.yml" <<EOF
remote_read:
  - url: $url/api/v1/read
    read_recent: true
EOF
prometheus_start prometheus_a "$aport" "$tmp/a.yml" --web.enable-admin-api
prometheus_start prometheus_b "$bport" "$tmp/b.yml"

# the rows of up in tsstore: "FIRST_MS LAST_MS COUNT", the first row of
# either job, the last row of the job whose last is older, the rows of
# the job with fewer (awk's numbers are doubles: ms are exact, ns not)
up_rows() {
	tsq query up --format jsonl 2>/dev/null | awk '
		{ job = $0; sub(/.*"job":"/, "", job); sub(/".*/, "", job)
		  ts = $0; sub(/.*"ts":/, "", ts); sub(/[,}].*/, "", ts)
		  n[job]++; if (!(job in first) || ts < first[job]) first[job] = ts
		  if (ts > last[job]) last[job] = ts }
		END { lo = -1; jobs = 0
		      for (j in n) { jobs++; if (lo < 0 || n[j] < lo) lo = n[j]
		                     if (!f || first[j] < f) f = first[j]
		                     if (!l || last[j] < l) l = last[j] }
		      if (jobs < 2) lo = 0
		      printf "%.0f %.0f %d\n", f / 1e6, l / 1e6, lo }'
}
up_at_least() { set -- $(up_rows) "$1"; [ "$3" -ge "$4" ]; }
up_after() { set -- $(up_rows) "$1"; [ "$2" -gt "$4" ]; }

# about 15 s of samples of both jobs in tsstore
wait_until 45 up_at_least 15 || abort "no 15 samples of up per job reached tsstored in 45 s" \
	"$tmp/prometheus_a.log"
set -- $(up_rows)
first_ms=$1
# T: 2 s ago, once tsstored has samples of both jobs after it (remote
# write sends in order; 0.5 s more for the last batch's other series)
t_ms=$(($(date +%s%3N) - 2000))
wait_until 20 up_after "$t_ms" || abort "remote write did not catch up with T" \
	"$tmp/prometheus_a.log"
sleep 0.5
secs() { printf '%d.%03d' $(($1 / 1000)) $(($1 % 1000)); }
t=$(secs "$t_ms")
start=$(secs $((t_ms - 15000)))

# A forgets what it scraped before remote write began
check delete_before_first 0 '' '' curl -sf -X POST -g \
	"$proma/api/v1/admin/tsdb/delete_series?match[]={__name__=~\".%2B\"}&end=$(secs $((first_ms - 1)))"

# same_promql NAME QUERY: A's and B's answers, instant at T and ranged
# over the 15 s before it, the same within 1e-9 relative, and not empty
n=0
same_promql() {
	name=$1 query=$2
	for kind in instant range; do
		n=$((n + 1))
		if [ $kind = instant ]; then
			args="--data-urlencode time=$t"
			api=query
		else
			args="--data-urlencode start=$start --data-urlencode end=$t --data-urlencode step=1"
			api=query_range
		fi
		for p in a b; do
			eval "base=\$prom$p"
			# shellcheck disable=SC2086
			curl -sS -G "$base/api/v1/$api" --data-urlencode "query=$query" $args \
				>"$tmp/q$n.$p.json"
			"$canon" promql <"$tmp/q$n.$p.json" 2>"$tmp/q$n.$p.err" | LC_ALL=C sort \
				>"$tmp/q$n.$p"
		done
		if [ ! -s "$tmp/q$n.a" ] || [ ! -s "$tmp/q$n.b" ]; then
			{ echo "A: $(head -c 300 "$tmp/q$n.a.json")"; echo "B: $(head -c 300 "$tmp/q$n.b.json")"; } \
				>"$tmp/out"
			: >"$tmp/err"
			fail "${name}_$kind" "an empty answer: $query"
			continue
		fi
		# labels and times equal; values equal, or within 1e-9 relative
		awk -F'\t' 'FNR == NR { a[FNR] = $0; na = FNR; next }
			{ nb = FNR; split(a[FNR], x, "\t")
			  if (x[1] != $1 || x[2] != $2) { print "A: " a[FNR]; print "B: " $0; bad++; next }
			  if (x[3] == $3) next
			  va = x[3] + 0; vb = $3 + 0; d = va - vb; if (d < 0) d = -d
			  m = va < 0 ? -va : va; if ((vb < 0 ? -vb : vb) > m) m = vb < 0 ? -vb : vb
			  if (x[3] ~ /[a-zA-Z]/ || $3 ~ /[a-zA-Z]/ || d > 1e-9 * m) {
			      print "A: " a[FNR]; print "B: " $0; bad++ } }
			END { if (na != nb) { print "A has " na " samples, B " nb; bad++ }
			      exit bad > 0 }' "$tmp/q$n.a" "$tmp/q$n.b" >"$tmp/out" 2>&1
		if [ $? -eq 0 ]; then
			pass
		else
			: >"$tmp/err"
			fail "${name}_$kind" "A and B differ on $query"
		fi
	done
}

same_promql rate 'rate(prometheus_http_requests_total[1m])'
same_promql sum_by_job 'sum by (job) (rate({__name__=~"tsstore_http_requests_total|prometheus_http_requests_total"}[1m]))'
same_promql avg_over_time 'avg_over_time(scrape_duration_seconds[1m])'
same_promql max_over_time 'max_over_time(scrape_samples_scraped[1m])'
same_promql topk 'topk(3, rate(prometheus_http_response_size_bytes_sum[1m]))'
same_promql histogram_quantile 'histogram_quantile(0.9, rate(prometheus_http_request_duration_seconds_bucket[1m]))'
same_promql histogram_quantile_tsstored 'histogram_quantile(0.9, sum by (le) (rate(tsstore_http_request_duration_seconds_bucket[1m])))'
same_promql matchers_neq_re 'up{job!="prometheus",instance=~"127\\.0\\.0\\.1:\\d+"}'
same_promql matchers_group 'scrape_duration_seconds{job=~"(?:tsst|prom).*"}'
same_promql matchers_nre 'scrape_duration_seconds{job!~"prom.*"}'
same_promql name_regex 'count by (__name__) ({__name__=~"tsstore_table_(rows|bytes)", job="tsstored"})'

# B read through tsstored's /api/v1/read, and tsstored refused nothing
reads=$(curl -sS "$url/metrics" | awk '/^tsstore_http_requests_total\{path="\/api\/v1\/read",code="200"\}/ { n += $2 } END { print n + 0 }')
expect remote_reads_answered "$reads" -ge 20
check remote_read_errors_none 0 '0\n' '' sh -c "curl -sS '$url/metrics' | awk '/^tsstore_http_requests_total\\{path=\"\\/api\\/v1\\/read\",code=\"[45]/ { n += \$2 } END { print n + 0 }'"

peers_stop
daemon_stop
finish
