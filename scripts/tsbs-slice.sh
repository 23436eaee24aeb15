#!/bin/sh
# tsbs-slice.sh -- write a small TSBS cpu-only data set in InfluxDB line
# protocol, gzipped, shaped like ../shared/data's file: HOSTS hosts
# (host_0 ...) with the ten TSBS tags each, reporting every 10 s for
# MINUTES minutes, timestamp-major (every host at one ts, then the next),
# the ten usage_* fields as integers in 0..100, starting at the same
# instant as the shared file (2026-11-20T00:00:00Z).
#
# It is what the tests give the workloads that read TSBS data
# (tsstore-bench's ingest and tsbs), so that `make check` needs nothing
# from outside the repository: the values are pseudo-random from a fixed
# seed, which is all those workloads need (their answers are checked
# against a peer on the same rows, never against fixed figures).  The
# real file, for `make bench`, comes from TSBS's generator
# (bench/README.md says how).
#
# Usage: scripts/tsbs-slice.sh OUT.influx.gz [HOSTS [MINUTES]]
set -eu
out=${1:?usage: $0 OUT.influx.gz [HOSTS [MINUTES]]}
hosts=${2:-100}
minutes=${3:-20}
awk -v hosts="$hosts" -v steps="$((minutes * 6))" 'BEGIN {
	srand(20261120)
	nreg = split("us-east-1 us-west-1 us-west-2 eu-west-1 eu-central-1 ap-southeast-1 ap-southeast-2 ap-northeast-1 sa-east-1", region, " ")
	nos = split("Ubuntu16.10 Ubuntu16.04LTS Ubuntu15.10", os, " ")
	nteam = split("SF NYC LON CHI", team, " ")
	nenv = split("production staging test", env, " ")
	nf = split("usage_user usage_system usage_idle usage_nice usage_iowait usage_irq usage_softirq usage_steal usage_guest usage_guest_nice", field, " ")
	for (h = 0; h < hosts; h++) {
		r = region[int(rand() * nreg) + 1]
		tags[h] = sprintf("hostname=host_%d,region=%s,datacenter=%s%s,rack=%d,os=%s,arch=%s,team=%s,service=%d,service_version=%d,service_environment=%s",
			h, r, r, substr("abc", int(rand() * 3) + 1, 1), int(rand() * 100),
			os[int(rand() * nos) + 1], (rand() < 0.5 ? "x64" : "x86"),
			team[int(rand() * nteam) + 1], int(rand() * 20), int(rand() * 2),
			env[int(rand() * nenv) + 1])
	}
	for (s = 0; s < steps; s++) {
		# 1795132800 s, in ns, as text: awk doubles cannot hold it exactly
		ts = sprintf("%d%09d", 1795132800 + s * 10, 0)
		for (h = 0; h < hosts; h++) {
			line = "cpu," tags[h] " "
			for (f = 1; f <= nf; f++)
				line = line (f > 1 ? "," : "") field[f] "=" int(rand() * 101) "i"
			print line " " ts
		}
	}
}' | gzip -c >"$out"
