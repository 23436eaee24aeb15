#!/bin/sh
# deps.sh -- install what tsstore needs from Debian's packages, once.
#
# Usage: scripts/deps.sh [build|bench|fuzz|interop]
#   build    what `make check` and `make run` need (the default); they run
#            this first.  A plain `make` never does: it stops in ./configure,
#            which names the missing package (README, "Building and installing").
#            (socat is for README's quick start, which speaks to tsstored's
#            unix socket with it, and which tests/cli/test_readme.sh runs;
#            systemd for systemd-analyze, with which tests/cli/test_install.sh
#            verifies tsstored's unit -- installing it starts nothing.)
#   bench    that plus the peers and tools of `make bench`
#   fuzz     that plus clang, for `make fuzz` (libFuzzer)
#   interop  that plus the real clients and servers `make check-interop`
#            runs against tsstored (tests/interop/README.md).  Their
#            packages come with services (influxdb, collectd, prometheus)
#            that must not start: the tests start their own, on loopback
#            ports, and must not meet a system instance.  So when one is
#            to be installed, /usr/sbin/policy-rc.d answers 101 ("action
#            forbidden") to invoke-rc.d during the install -- written if
#            absent, and removed afterwards only if written here.
#
# This is the one list of packages of the project.  A package already
# installed is left alone; when something is missing and we are root, we
# run apt-get update and apt-get install; otherwise we print the command.
set -eu

BUILD_PACKAGES="gcc make autoconf automake pkg-config fuse3 libfuse3-dev liblzo2-dev
libuv1-dev libjansson-dev libhttp-parser-dev zlib1g-dev libprotobuf-c-dev protobuf-c-compiler
libsnappy-dev libcmocka-dev libsqlite3-dev sqlite3
groff-base curl socat systemd rsync python3"
BENCH_PACKAGES="liblmdb-dev librocksdb-dev gnuplot-nox victoria-metrics influxdb"
FUZZ_PACKAGES="clang"
INTEROP_PACKAGES="influxdb influxdb-client collectd-core prometheus"

want="$BUILD_PACKAGES"
case "${1:-build}" in
build) ;;
bench) want="$want $BENCH_PACKAGES" ;;
fuzz) want="$want $FUZZ_PACKAGES" ;;
interop) want="$want $INTEROP_PACKAGES" ;;
*) echo "usage: $0 [build|bench|fuzz|interop]" >&2; exit 2 ;;
esac

missing=""
for p in $want; do
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed"; then
		missing="$missing $p"
	fi
done
[ -z "$missing" ] && exit 0

echo "deps.sh: installing:$missing"
if [ "$(id -u)" != 0 ]; then
	echo "deps.sh: not root; run: sudo apt-get install$missing" >&2
	exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
# No service ever starts from a package (influxdb's and prometheus' would;
# the bench and the interop tests start their own): a policy-rc.d refusing
# every start while we install, removed afterwards if we wrote it.
policy=/usr/sbin/policy-rc.d
if [ ! -e "$policy" ]; then
	trap 'rm -f "$policy"' EXIT
	trap 'exit 130' HUP INT TERM
	printf '#!/bin/sh\n# written by tsstore scripts/deps.sh: no service starts\nexit 101\n' >"$policy"
	chmod 755 "$policy"
fi
# shellcheck disable=SC2086
apt-get install -y -q --no-install-recommends $missing
