#!/bin/sh
# run.sh -- what `make run` does after building: on first start, create
# ./tsstore-data with the demo table `cpu` of synthetic host metrics for
# the last 24 hours, then serve it with tsstored in the foreground.
# Parts that are not built yet are reported, never faked.
# Usage: scripts/run.sh BUILDDIR
set -eu
b=$1
data=./tsstore-data
tsstore="$b/bin/tsstore"

if [ ! -d "$data" ]; then
	echo "run: creating $data with the demo table cpu"
	"$tsstore" -d "$data" create cpu --column host:string --column ts:timestamp \
		--column cpu_user:double --column cpu_system:double \
		--column mem_used:int64 --column net_rx_bytes:int64 \
		--key host,ts --ttl 7d
	if scripts/demo-data.sh | "$tsstore" -d "$data" insert cpu --format tsv; then
		echo "run: loaded 24 hours of demo rows into cpu"
	else
		echo "run: the demo table is empty: inserts are not built yet (see 'issues')"
	fi
fi

if [ -x "$b/bin/tsstored" ]; then
	exec "$b/bin/tsstored" -d "$data"
fi
echo "run: tsstored (the daemon) is not built yet; here is what exists:"
echo "\$ tsstore -d $data tables"
"$tsstore" -d "$data" tables
for t in $("$tsstore" -d "$data" tables); do
	echo "\$ tsstore -d $data schema $t"
	"$tsstore" -d "$data" schema "$t"
done
