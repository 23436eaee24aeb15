#!/bin/sh
# demo-data.sh -- synthetic host metrics for `make run`: TSV with a header
# line, 10 hosts reporting every 10 s over the 24 hours before now,
# timestamp-major (the order a real collector would send them).
# Usage: scripts/demo-data.sh [NOW_SECONDS]
set -eu
now=${1:-$(date +%s)}
awk -v now="$now" 'BEGIN {
	srand(42);
	print "host\tts\tcpu_user\tcpu_system\tmem_used\tnet_rx_bytes";
	start = now - 86400; start -= start % 10;
	for (t = start; t < now; t += 10)
		for (h = 0; h < 10; h++) {
			phase = (t % 86400) / 86400 * 6.2831853;
			user = 20 + 15 * sin(phase + h) + rand() * 5;
			printf "host_%02d\t%d000000000\t%.2f\t%.2f\t%d\t%d\n", h, t, user,
			       user / 4 + rand(), 2000000000 + h * 100000000 + int(rand() * 1e7),
			       int(1e6 + rand() * 1e5);
		}
}'
