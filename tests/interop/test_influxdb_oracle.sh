#!/bin/sh
# test_influxdb_oracle.sh -- InfluxDB 1.6 itself (`influxd`, Debian's
# package influxdb) as the oracle of the line protocol: the same body (300
# TSBS cpu-only lines and tests/interop/typed.lp) is POSTed to /write of
# both InfluxDB and tsstored, twice (a retried batch), and what each then
# holds is compared per measurement: the measurements, each field's type,
# the number of points and every point's tags, fields and timestamp --
# exactly, after mapping only what docs/ingest-mapping.md documents as
# different (canon.c: names by the name rule, booleans as int32 1/0,
# absent fields as the column default, unsigned as int64; InfluxDB 1.6
# refuses unsigned fields, so its copy of the body writes them as
# integers).
#
# influxd runs with a config file in the temporary directory (meta, data
# and wal there; HTTP and its RPC port on free loopback ports; reporting,
# monitoring and continuous queries off).
#
# Usage: sh tests/interop/test_influxdb_oracle.sh BUILDDIR (make check-interop)
set -u
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
. "$here/lib.sh"

need influxd influxdb
need curl curl
tsd_start

influxd_start influxd
influx=$influxd_url
c() { curl -sS --max-time 30 "$@"; }
check create_db 0 '{"results":[{"statement_id":0}]}\n' '' c -XPOST "$influx/query" --data-urlencode 'q=CREATE DATABASE interop'

gzip -dc "$repo/tests/data/tsbs-cpu-only-10k.influx.gz" | head -n 300 >"$tmp/body.lp"
cat "$here/typed.lp" >>"$tmp/body.lp"
# unsigned fields as integers (the same int64), for InfluxDB 1.6
sed -E 's/=([0-9]+)u([, ])/=\1i\2/g' "$tmp/body.lp" >"$tmp/body-influx.lp"
expect unsigned_lines "$(grep -c '[0-9]u[, ]' "$tmp/body.lp")" -eq 10
expect unsigned_rewritten "$(grep -c '[0-9]u[, ]' "$tmp/body-influx.lp")" -eq 0
for attempt in 1 2; do
	check write_influxdb_$attempt 0 '204\n' '' c -o /dev/null -w '%{http_code}\n' \
		--data-binary @"$tmp/body-influx.lp" "$influx/write?db=interop&precision=ns"
	check write_tsstored_$attempt 0 '204\n' '' c -o /dev/null -w '%{http_code}\n' \
		--data-binary @"$tmp/body.lp" "$url/write?db=interop&precision=ns"
done

# the measurements and the types of their fields
mkdir "$tmp/schema"
for t in $(tsq tables); do tsq schema "$t" >"$tmp/schema/$t"; done
c -G "$influx/query" --data-urlencode db=interop --data-urlencode 'q=SHOW FIELD KEYS' |
	"$canon" fieldkeys | LC_ALL=C sort >"$tmp/fields.influx"
for t in $(tsq tables); do
	awk -F'\t' -v t="$t" '$4 == "-" { print t "\t" $1 "\t" $2 }' "$tmp/schema/$t"
done | LC_ALL=C sort >"$tmp/fields.tsstore"
check tables 0 '__dge\ncpu\nedge\nesc_m_x\nsparse\ntypes\n' '' tsq tables
cut -f1 "$tmp/fields.influx" | uniq >"$tmp/tables.influx"
tsq tables >"$tmp/tables.tsstore"
same measurements "$tmp/tables.influx" "$tmp/tables.tsstore"
expect field_count "$(wc -l <"$tmp/fields.influx")" -eq 27
same field_types "$tmp/fields.influx" "$tmp/fields.tsstore"

# every point
q='SELECT * FROM "édge"; SELECT * FROM cpu; SELECT * FROM edge; SELECT * FROM "esc m,x"; SELECT * FROM sparse; SELECT * FROM types'
c -G "$influx/query" --data-urlencode db=interop --data-urlencode epoch=ns --data-urlencode "q=$q" |
	"$canon" influx "$tmp/schema" | LC_ALL=C sort >"$tmp/points.influx"
for t in $(tsq tables); do
	tsq query "$t" --format jsonl | "$canon" tsstore "$t"
done | LC_ALL=C sort >"$tmp/points.tsstore"
for t in __dge:1 cpu:300 edge:13 esc_m_x:2 sparse:4 types:10; do
	expect "count_influx_${t%:*}" "$(grep -c "^${t%:*}	" "$tmp/points.influx")" -eq "${t#*:}"
	expect "count_tsstore_${t%:*}" "$(grep -c "^${t%:*}	" "$tmp/points.tsstore")" -eq "${t#*:}"
done
same points "$tmp/points.influx" "$tmp/points.tsstore"

peers_stop
daemon_stop
finish
