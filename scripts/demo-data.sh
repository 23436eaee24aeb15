#!/bin/sh
# demo-data.sh -- the synthetic rows of `make run`'s demo tables, as TSV
# with a header line, over the DAYS days (default 3) before NOW_SECONDS
# (default: now), timestamp-major as collectors send them.
# scripts/run.sh creates the tables (their schemas are there) and pipes
# this into `tsstore insert`.
#
# Usage: scripts/demo-data.sh TABLE [NOW_SECONDS [DAYS]]
#   cpu       10 hosts every 10 s: cpu_user, cpu_system (percent),
#             mem_used (bytes, of 16 to 64 GiB hosts), net_rx_bytes (bytes
#             received in the 10 s)
#   disk      the same hosts' file systems every minute: used_bytes,
#             size_bytes (/var fills up and is cleaned at midnight UTC)
#   requests  an HTTP access log of three services (web, api, auth), about
#             one request a second at the daily peak, each at its own
#             nanosecond: host, method, path, status, bytes, duration_ms
#
# Every table follows one day-shaped load (low at 03:00 UTC, high at
# 15:00) and shares one incident: yesterday (the UTC day before NOW's)
# from 14:10 to 14:30, api answers 5xx to a third of its requests,
# slowly, while api01 and api02 run at 90% cpu -- something for README's
# queries to find.  Values are deterministic for a given NOW (srand(42)).
#
# awk's numbers are doubles: byte counts up to 2^53 are exact, and are
# printed with %.0f (mawk's %d stops at 2^31 - 1); a timestamp is printed
# as its seconds (%.0f) followed by nine digits of nanoseconds.
set -eu
table=${1:?usage: demo-data.sh cpu|disk|requests [NOW_SECONDS [DAYS]]}
now=${2:-$(date +%s)}
days=${3:-3}
case $table in
cpu | disk | requests) ;;
*) echo "demo-data.sh: $table: no such demo table (cpu, disk, requests)" >&2; exit 2 ;;
esac

awk -v table="$table" -v now="$now" -v days="$days" '
function load(t) {     # 0.1 at 03:00 UTC .. 1.0 at 15:00 UTC
	return 0.55 - 0.45 * cos(((t % 86400) / 86400 - 0.125) * 6.2831853);
}
function incident(t) { return t >= inc && t < inc + 1200; }
function ts(t, ns) { return sprintf("%.0f%09d", t, ns); }
BEGIN {
	srand(42);
	GiB = 1073741824;
	start = now - days * 86400; start -= start % 60;
	inc = now - now % 86400 - 86400 + 14 * 3600 + 600;   # yesterday 14:10
	# host, its memory, its share of the load
	nh = split("web01 web02 web03 web04 api01 api02 db01 db02 cache01 batch01", host, " ");
	split("16 16 16 16 32 32 64 64 64 32", memgib, " ");
	split("0.6 0.6 0.6 0.6 0.8 0.8 0.5 0.5 0.3 0.2", busy, " ");

	if (table == "cpu") {
		print "host\tts\tcpu_user\tcpu_system\tmem_used\tnet_rx_bytes";
		for (t = start; t < now; t += 10)
			for (h = 1; h <= nh; h++) {
				l = load(t);
				if (host[h] == "batch01")   # the nightly batch, 01:00-04:00 UTC
					l = (t % 86400) >= 3600 && (t % 86400) < 14400 ? 4.5 : 0.2;
				user = 100 * busy[h] * l * (0.8 + 0.4 * rand());
				if (host[h] ~ /^api/ && incident(t))
					user = 88 + 4 * rand();
				if (user > 97) user = 97 - rand();
				mem = memgib[h] * GiB * (0.45 + 0.25 * l + 0.05 * rand());
				rx = (host[h] ~ /^(web|api)/ ? 6e7 : 1.5e7) * l * (0.7 + 0.6 * rand());
				printf "%s\t%s\t%.2f\t%.2f\t%.0f\t%.0f\n", host[h], ts(t, 0), user,
				       user / 4 + 2 * rand(), mem, rx;
			}
	} else if (table == "disk") {
		print "host\tmount\tts\tused_bytes\tsize_bytes";
		for (t = start; t < now; t += 60)
			for (h = 1; h <= nh; h++) {
				# /: the system, nearly constant
				root = 50 * GiB;
				printf "%s\t/\t%s\t%.0f\t%.0f\n", host[h], ts(t, 0),
				       root * (0.3 + 0.01 * h / nh) + int(rand() * 4096) * 4096, root;
				# /var: logs (and the databases of db01, db02) grow through
				# the day with the load; the logs are cleaned at midnight
				size = (host[h] ~ /^db/ ? 2048 : 200) * GiB;
				base = host[h] ~ /^db/ ? 0.55 * size + (t - start) * 2e4 : 0.2 * size;
				logs = (t % 86400) * 1.5e5 * busy[h];
				printf "%s\t/var\t%s\t%.0f\t%.0f\n", host[h], ts(t, 0),
				       base + logs + int(rand() * 256) * 4096, size;
			}
	} else {
		print "service\tts\thost\tmethod\tpath\tstatus\tbytes\tduration_ms";
		ns = split("web api auth", svc, " ");
		split("0.6 0.45 0.1", rate, " ");    # requests a second at the peak
		for (t = start; t < now; t++)
			for (s = 1; s <= ns; s++) {
				# requests in this second: the rate, rounded at random
				r = rate[s] * load(t);
				n = int(r) + (rand() < r - int(r));
				for (i = 0; i < n; i++) {
					# each at its own nanosecond, in order, inside the second
					frac = int((i + rand()) * 1e9 / n);
					p = rand();
					if (svc[s] == "web") {
						hst = "web0" (1 + int(rand() * 4));
						if (p < 0.35) { m = "GET"; path = "/static/app.js"; by = 183211; }
						else if (p < 0.6) { m = "GET"; path = "/"; by = 24000 + int(rand() * 800); }
						else if (p < 0.85) { m = "GET"; path = "/products/" int(1000 + rand() * 9000); by = 9000 + int(rand() * 6000); }
						else if (p < 0.95) { m = "POST"; path = "/cart"; by = 512 + int(rand() * 256); }
						else { m = "POST"; path = "/checkout"; by = 2048 + int(rand() * 512); }
						st = path == "/static/app.js" && rand() < 0.6 ? 304 : 200;
						if (st == 304) by = 0;
						dur = 2 + 30 * -log(1 - rand());
					} else if (svc[s] == "api") {
						hst = "api0" (1 + int(rand() * 2));
						if (p < 0.5) { m = "GET"; path = "/v1/orders/" int(100000 + rand() * 900000); by = 1200 + int(rand() * 600); }
						else if (p < 0.75) { m = "GET"; path = "/v1/search"; by = 8000 + int(rand() * 24000); }
						else if (p < 0.9) { m = "POST"; path = "/v1/orders"; by = 900 + int(rand() * 200); }
						else { m = "GET"; path = "/v1/users/" int(1000 + rand() * 50000); by = 700 + int(rand() * 300); }
						st = 200;
						dur = 5 + 60 * -log(1 - rand());
						if (incident(t) && rand() < 0.35) {
							st = rand() < 0.7 ? 503 : 500; by = 95; dur = 2000 + 3000 * rand();
						}
					} else {
						hst = "api0" (1 + int(rand() * 2));
						if (p < 0.7) { m = "POST"; path = "/v1/token"; by = 412; }
						else { m = "POST"; path = "/login"; by = 230; }
						st = rand() < 0.04 ? 401 : 200;
						dur = 20 + 40 * -log(1 - rand());   # password hashing
					}
					if (st == 200 && rand() < 0.01) { st = 404; by = 153; }
					printf "%s\t%s\t%s\t%s\t%s\t%d\t%.0f\t%.1f\n", svc[s], ts(t, frac), hst,
					       m, path, st, by, dur;
				}
			}
	}
}'
