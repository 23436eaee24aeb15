#!/bin/sh
# test_http_curl.sh -- tsstored's HTTP listener (tsstore-http(7)) through
# curl, the client an operator tries first: ping and health, /metrics
# with the token each way curl sends it, gzip and chunked bodies, a body
# large enough for curl to send "Expect: 100-continue", and the errors.
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
# the port the kernel chose, from the daemon's log (10 s at most)
i=0
while ! grep -q 'listening on http:' "$tmp/tsstored.log" && [ $i -lt 200 ]; do
	sleep 0.05
	i=$((i + 1))
done
url=$(sed -n 's/^tsstored: listening on http:\(127\.0\.0\.1:[0-9]*\)$/http:\/\/\1/p' "$tmp/tsstored.log")
if [ -z "$url" ]; then
	echo "$0: tsstored did not listen on HTTP:" >&2
	cat "$tmp/tsstored.log" >&2
	exit 2
fi
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
check metrics_no_token 0 '{"error":"authentication required: send \\"Authorization: Token <token>\\" (or Bearer, or the query parameter p)"}\n401\n' '' \
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

# bodies: 501 until the ingest is built, with the size decoded
printf 'cpu,host=a usage=0.5 1735689600000000000\n' >"$tmp/one.lp"
i=0
while [ $i -lt 2000 ]; do cat "$tmp/one.lp"; i=$((i + 1)); done >"$tmp/many.lp"  # 82000 bytes
notbuilt() {
	printf '{"error":"POST %s: ingest of %s is not built yet; the body (%s bytes decoded) was read and nothing was stored"}\n501\n' "$1" "$2" "$3"
}
check write_plain 0 "$(notbuilt /write 'InfluxDB line protocol' 41)\n" '' \
	c -w '%{http_code}\n' -H "$auth" --data-binary @"$tmp/one.lp" "$url/write?db=x"
gzip -c "$tmp/many.lp" >"$tmp/many.lp.gz"
check write_gzip 0 "$(notbuilt /api/v2/write 'InfluxDB line protocol' 82000)\n" '' \
	c -w '%{http_code}\n' -H "$auth" -H 'Content-Encoding: gzip' --data-binary @"$tmp/many.lp.gz" \
	"$url/api/v2/write?bucket=b&org=o"
check write_chunked 0 "$(notbuilt /write 'InfluxDB line protocol' 82000)\n" '' \
	c -w '%{http_code}\n' -H "$auth" -H 'Transfer-Encoding: chunked' --data-binary @"$tmp/many.lp" \
	"$url/write"
# 2 MB: curl asks "Expect: 100-continue" and is answered at once (a
# client left without an answer waits 1 s before it sends the body)
i=0
while [ $i -lt 25 ]; do cat "$tmp/many.lp"; i=$((i + 1)); done >"$tmp/big.lp"
# (to remote write, which takes snappy: text is refused, 400)
check write_expect 0 '{"error":"snappy: the compressed body is damaged; nothing was stored"}\n400\n' '' \
	c -w '%{http_code}\n' -H "$auth" --data-binary @"$tmp/big.lp" "$url/api/v1/write"
took=$(c -o /dev/null -w '%{time_total}' -H "$auth" --data-binary @"$tmp/big.lp" "$url/api/v1/write")
expect write_expect_no_wait "$(echo "$took" | awk '{print ($1 < 0.9)}')" = 1
# refused (no token): answered before the body, without curl's wait
check write_expect_refused 0 '{"error":"authentication required: send \\"Authorization: Token <token>\\" (or Bearer, or the query parameter p)"}\n401\n' '' \
	c -w '%{http_code}\n' --data-binary @"$tmp/big.lp" "$url/api/v1/write"
took=$(c -o /dev/null -w '%{time_total}' --data-binary @"$tmp/big.lp" "$url/api/v1/write")
expect write_expect_refused_no_wait "$(echo "$took" | awk '{print ($1 < 0.9)}')" = 1

check not_found 0 '{"error":"no such path: /query (tsstore-http(7) lists the endpoints)"}\n404\n' '' \
	c -w '%{http_code}\n' -H "$auth" "$url/query?q=show+databases"
check wrong_method 0 '{"error":"GET /write: the method is not allowed (POST)"}\n405\n' '' \
	c -w '%{http_code}\n' -H "$auth" "$url/write"

daemon_stop
finish
