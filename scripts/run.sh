#!/bin/sh
# run.sh -- what `make run` does after building: fill ./tsstore-data with
# the demo tables on its first start, then serve it with tsstored in the
# foreground (Ctrl-C stops it) -- the start of README's quick start.
#
# Usage: scripts/run.sh BUILDDIR [TSSTORED-OPTION...]
#   (make run RUN_ARGS='...' passes them).  With no option tsstored
#   listens where it does by default: ./tsstore-data/tsstored.sock,
#   tcp:127.0.0.1:7400 and http:127.0.0.1:7401; any --listen replaces
#   those (tests/cli/test_readme.sh asks for ports the kernel chooses).
#
# The demo tables, each created and loaded when ./tsstore-data lacks it
# (rows from scripts/demo-data.sh, three days up to now; the first start
# takes a few seconds):
#   cpu       host metrics of 10 hosts every 10 s          key host,ts
#   disk      their file systems every minute              key host,mount,ts
#   requests  the HTTP access log of three services        key service,ts
# and, once cpu is loaded, its rollup (docs/rollups.md), kept by tsstored:
#   cpu_1h    cpu per host and hour, kept 2 years while cpu keeps 7 days
# When this tsstored has FUSE (tsstore-fuse is built) and the machine
# lets us mount (/dev/fuse; tried once with tsstore-fuse), the view is
# mounted on ./tsstore-mnt too (tsstored --mount).  The last lines before
# tsstored's own say how to reach it from another shell.
#
# The script ends by exec'ing tsstored, so its pid is the daemon's.
set -eu
b=$(cd "${1:?usage: run.sh BUILDDIR [TSSTORED-OPTION...]}" && pwd)
shift
scripts=$(cd "$(dirname "$0")" && pwd)
data=./tsstore-data
mnt=./tsstore-mnt
tsstore="$b/bin/tsstore"
now=$(date +%s)

# create TABLE: the demo table's schema.
create() {
	case $1 in
	cpu)
		"$tsstore" -d "$data" create cpu --column host:string --column ts:timestamp \
			--column cpu_user:double --column cpu_system:double \
			--column mem_used:int64 --column net_rx_bytes:int64 \
			--key host,ts --ttl 7d ;;
	disk)
		"$tsstore" -d "$data" create disk --column host:string --column mount:string \
			--column ts:timestamp --column used_bytes:int64 --column size_bytes:int64 \
			--key host,mount,ts --ttl 30d ;;
	requests)
		"$tsstore" -d "$data" create requests --column service:string \
			--column ts:timestamp --column host:string --column method:string \
			--column path:string --column status:int64 --column bytes:int64 \
			--column duration_ms:double --key service,ts --ttl 7d ;;
	esac
}

have=$("$tsstore" -d "$data" tables 2>/dev/null || true)
for t in cpu disk requests; do
	if ! printf '%s\n' "$have" | grep -qx "$t"; then
		create "$t"
		# (in $(...), the status is insert's: sh has no pipefail)
		out=$("$scripts/demo-data.sh" "$t" "$now" | "$tsstore" -d "$data" insert "$t" 2>&1) || {
			printf 'run: %s: %s\n' "$t" "$out" >&2
			exit 1
		}
		echo "run: $t: $out"
		loaded=1
	fi
done
# the rows of past days into compressed tablet files, as the daemon would
# have written them over those days (tsstore stats TABLE shows them)
[ -z "${loaded:-}" ] || "$tsstore" -d "$data" flush
# The rollup, made after the rows: tsstored's maintenance rolls up the
# three days in its first second, rather than this load doing it as it
# inserts.
if ! printf '%s\n' "$have" | grep -qx cpu_1h; then
	"$tsstore" -d "$data" create-rollup cpu_1h --from cpu --every 1h --group 1 \
		--column cpu_user:mean,cpu_user:max,cpu_user:last,mem_used:max --ttl 730d
	echo "run: cpu_1h: a rollup of cpu per host and hour, kept 2 years (cpu: 7 days)"
fi

if [ ! -x "$b/bin/tsstored" ]; then
	echo "run: tsstored is not built (./configure --without-daemon?): nothing to serve" >&2
	exit 1
fi

# The mount: only where it can work, so that make run never fails for it.
mount_opt=
if [ -x "$b/bin/tsstore-fuse" ] && [ -c /dev/fuse ] && [ -r /dev/fuse ] && [ -w /dev/fuse ]; then
	# a mount left by a daemon that was killed answers ENOTCONN: unmount
	# it (when $mnt is merely missing, the unmount fails, and that is all)
	if ! ls "$mnt" >/dev/null 2>&1; then
		fusermount3 -u "$mnt" 2>/dev/null || umount "$mnt" 2>/dev/null || true
	fi
	mkdir -p "$mnt"
	if "$b/bin/tsstore-fuse" "$data" "$mnt" 2>/dev/null; then
		fusermount3 -u "$mnt" 2>/dev/null || umount "$mnt"
		mount_opt="--mount $mnt"
	fi
fi

echo "run: serving $data with tsstored until Ctrl-C${mount_opt:+; the files are under $mnt}"
echo "run: in another shell:  cd $(pwd) && export PATH=$b/bin:\$PATH && tsstore tables"
# shellcheck disable=SC2086
exec "$b/bin/tsstored" -d "$data" $mount_opt "$@"
