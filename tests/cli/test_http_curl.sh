#!/bin/sh
# test_http_curl.sh -- tsstored's HTTP listener (tsstore-http(7)) through
# curl, the client an operator tries first: ping and health, /metrics
# with the token each way curl sends it, line protocol written to /write
# and /api/v2/write (plain, gzip, chunked, a partial write, precision) and
# read back with tsstore, a body large enough for curl to send "Expect:
# 100-continue", and the errors.
# Every check compares curl's exact output.  Skipped (one SKIP line) when
# curl is not installed; scripts/deps.sh installs it.
#
# Usage: sh tests/cli/test_http_curl.sh TSSTORE (or a build directory)
set -u
. "$(dirname "$0")/lib.sh"

if ! command -v curl >/dev/null 2>&1; then
	skip "curl is not installed (scripts/deps.sh installs it): the HTTP listener was not tried with curl"
	finish
fi

echo s3cret >"$tmp/token"
daemon_start "$tmp/db" "$tmp/sock" --listen http:127.0.0.1:0 --token "$tmp/token"
daemon_addr http
url="http://${addr#http:}"
version=$("$tsstored" --version | sed 's/^tsstored //')
c() { curl -sS --max-time 10 "$@"; }
auth="Authorization: Token s3cret"

check ping 0 "204 $version\n" '' c -o /dev/null -w '%{http_code} %header{x-tsstore-version}\n' "$url/ping"
check ping_head 0 "204\n" '' c -I -o /dev/null -w '%{http_code}\n' "$url/ping"
check health 0 '{"status":"pass"}\n' '' c "$url/health"

# a table with two rows, through the unix socket
check create 0 '' '' "$bin" -s "$tmp/sock" create m --column host:string --column ts:timestamp \
	--column v:double --key host,ts
printf 'host\tts\tv\na\t2025-01-01T00:00:00Z\t1\nb\t2025-01-01T00:00:00Z\t2\n' >"$tmp/rows.tsv"
check insert 0 '' 'insert: 2 rows stored, 0 rejected\n' from "$tmp/rows.tsv" "$bin" -s "$tmp/sock" insert m

# curl -w: the status after the body (which ends with a newline)
check metrics_no_token 0 '{"error":"GET /metrics is a read operation: send the token (\\"Authorization: Token <token>\\", or Bearer, or the query parameter p); loopback-access is none"}\n401\n' '' \
	c -w '%{http_code}\n' "$url/metrics"
check metrics_wrong_token 0 '{"error":"wrong token"}\n401\n' '' \
	c -w '%{http_code}\n' -H "Authorization: Token nope" "$url/metrics"
metrics_rows() { c "$@" | grep -E '^tsstore_table_rows[{]|^# TYPE tsstore_table_rows '; }
want='# TYPE tsstore_table_rows gauge\ntsstore_table_rows{table="m"} 2\n'
check metrics_token 0 "$want" '' metrics_rows -H "$auth" "$url/metrics"
check metrics_bearer 0 "$want" '' metrics_rows --oauth2-bearer s3cret "$url/metrics"
check metrics_query 0 "$want" '' metrics_rows "$url/metrics?u=me&p=s3cret"
check metrics_type 0 'text/plain; version=0.0.4; charset=utf-8\n' '' \
	c -o /dev/null -w '%{content_type}\n' -H "$auth" "$url/metrics"

# line protocol: 204, and the rows read back through the unix socket
printf 'cpu,host=a usage=0.5 1735689600000000000\n' >"$tmp/one.lp"
i=0
while [ $i -lt 2000 ]; do
	printf 'cpu,host=b usage=%d %d\n' $((i % 7)) $((1735689600000000000 + i * 1000000000))
	i=$((i + 1))
done >"$tmp/many.lp"
check write_plain 0 '204\n' '' \
	c -w '%{http_code}\n' -H "$auth" --data-binary @"$tmp/one.lp" "$url/write?db=x&precision=ns"
gzip -c "$tmp/many.lp" >"$tmp/many.lp.gz"
check write_gzip 0 '204\n' '' \
	c -w '%{http_code}\n' -H "$auth" -H 'Content-Encoding: gzip' --data-binary @"$tmp/many.lp.gz" \
	"$url/api/v2/write?bucket=b&org=o"
# the same lines again, chunked: ignored (a retried batch changes nothing)
check write_chunked 0 '204\n' '' \
	c -w '%{http_code}\n' -H "$auth" -H 'Transfer-Encoding: chunked' --data-binary @"$tmp/many.lp" \
	"$url/write?db=x"
check write_read_back 0 'host\tts\tusage\na\t2025-01-01T00:00:00Z\t0.5\n' '' \
	"$bin" -s "$tmp/sock" query cpu --prefix a
check write_read_back_last 0 'host\tts\tusage\nb\t2025-01-01T00:33:19Z\t4\n' 'query: limit of 1 row reached; more: --after b,2025-01-01T00:33:19Z\n' \
	"$bin" -s "$tmp/sock" query cpu --prefix b --desc --limit 1
check write_count 0 '2001\n' '' sh -c "\"$bin\" -s \"$tmp/sock\" query cpu | tail -n +2 | wc -l"
# partial write: 400 naming the first bad line, the good ones stored
printf 'cpu,host=c usage=1 1735689600000000000\ncpu,host=c usage=oops 1735689601000000000\ncpu,host=c usage=3 1735689602000000000\n' >"$tmp/partial.lp"
check write_partial 0 '{"error":"line 2: unable to parse '"'"'cpu,host=c usage=oops 1735689601000000000'"'"': field \\"usage\\": invalid value \\"oops\\""}\n400\n' '' \
	c -w '%{http_code}\n' -H "$auth" --data-binary @"$tmp/partial.lp" "$url/write?db=x"
check write_precision_s 0 '204\n' '' \
	c -w '%{http_code}\n' -H "$auth" --data-binary 'cpu,host=d usage=2 1735689600' "$url/write?db=x&precision=s"
check write_precision_bad 0 '{"error":"precision \\"d\\" is not valid (ns, n, us, u, ms, s, m or h)"}\n400\n' '' \
	c -w '%{http_code}\n' -H "$auth" --data-binary 'cpu,host=d usage=2 1' "$url/write?db=x&precision=d"
rows_cd() { "$bin" -s "$tmp/sock" query cpu | awk '$1 == "host" || $1 == "c" || $1 == "d"'; }
check write_rows_cd 0 'host\tts\tusage\nc\t2025-01-01T00:00:00Z\t1\nc\t2025-01-01T00:00:02Z\t3\nd\t2025-01-01T00:00:00Z\t2\n' '' \
	rows_cd
# 2 MB: curl asks "Expect: 100-continue" and is answered at once (a
# client left without an answer waits 1 s before it sends the body)
i=0
while [ $i -lt 25 ]; do cat "$tmp/many.lp"; i=$((i + 1)); done >"$tmp/big.lp"
# (to remote write, which takes snappy: text is refused, 400)
check write_expect 0 '{"error":"snappy: the compressed body is damaged; nothing was stored"}\n400\n' '' \
	c -w '%{http_code}\n' -H "$auth" --data-binary @"$tmp/big.lp" "$url/api/v1/write"
took=$(c -o /dev/null -w '%{time_total}' -H "$auth" --data-binary @"$tmp/big.lp" "$url/write?db=x")
expect write_expect_no_wait "$(echo "$took" | awk '{print ($1 < 0.9)}')" = 1
# refused (no token): answered before the body, without curl's wait
check write_expect_refused 0 '{"error":"POST /write is a write operation: send the token (\\"Authorization: Token <token>\\", or Bearer, or the query parameter p); loopback-access is none"}\n401\n' '' \
	c -w '%{http_code}\n' --data-binary @"$tmp/big.lp" "$url/write?db=x"
took=$(c -o /dev/null -w '%{time_total}' --data-binary @"$tmp/big.lp" "$url/write?db=x")
expect write_expect_refused_no_wait "$(echo "$took" | awk '{print ($1 < 0.9)}')" = 1

check not_found 0 '{"error":"no such path: /api/v2/query (tsstore-http(7) lists the endpoints)"}\n404\n' '' \
	c -w '%{http_code}\n' -H "$auth" "$url/api/v2/query?q=show+databases"
check query_measurements 0 '{"results":[{"statement_id":0,"series":[{"name":"measurements","columns":["name"],"values":[["cpu"],["m"]]}]}]}\n200\n' '' \
	c -w '%{http_code}\n' -H "$auth" "$url/query?db=x&q=show+measurements"
check wrong_method 0 '{"error":"GET /write: the method is not allowed (POST)"}\n405\n' '' \
	c -w '%{http_code}\n' -H "$auth" "$url/write"

daemon_stop
finish
