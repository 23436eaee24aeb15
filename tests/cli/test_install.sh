#!/bin/sh
# test_install.sh -- the build a packager sees: ./configure asks for a
# library only when the parts built on it are wanted, a plain make never
# installs packages, make install PREFIX=... writes a libtsstore.pc for that
# prefix (DESTDIR respected), installs tsstored's systemd unit (verified by
# systemd-analyze when present) and example configuration (which passes
# tsstored --check-config) with the daemon, and make uninstall leaves the
# prefix as it was.
#
# Usage: sh tests/cli/test_install.sh BUILDDIR (the argument is not used:
# everything is built again in a copy of the sources in a temporary
# directory, without optimisation, so that it takes seconds).
#
# A machine without FUSE, libuv, jansson, cmocka and SQLite is simulated
# for the library-only build: pkg-config sees only lzo2.pc (in a directory
# of its own, PKG_CONFIG_LIBDIR), and CPATH puts first a directory whose
# uv.h, jansson.h, fuse.h, cmocka.h, sqlite3.h, http_parser.h, zlib.h,
# protobuf-c/protobuf-c.h and snappy-c.h
# stop the compiler, so a
# source that includes one of them fails the build.  apt-get and
# dpkg-query are replaced on PATH by scripts that leave a mark.
set -u
src=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d) || exit 2
trap 'rm -rf "$tmp"' EXIT
trap 'exit 130' HUP INT TERM
# The builds here are plain ones, whatever the make that runs the test
# was given: its command-line variables (SANITIZE=1, TSAN=1, ...) reach
# us in the environment as well as in MAKEFLAGS.
unset MAKEFLAGS MFLAGS MAKELEVEL PKG_CONFIG_PATH CPATH C_INCLUDE_PATH SANITIZE TSAN B OPT V \
	CC_OVERRIDE TSAN_OPTIONS
passed=0
failed=0
pass() { passed=$((passed + 1)); }
fail() { failed=$((failed + 1)); echo "FAIL: $1: $2"; [ -f "$tmp/log" ] && sed -e 's/^/    | /' -e 30q "$tmp/log"; }
# same NAME WANT GOT
same() { if [ "$2" = "$3" ]; then pass; else fail "$1" "want [$2], got [$3]"; fi; }

# The library's file version, as the Makefile names it (it moves with
# every minor release; the test checks the names follow it).
libver=$(sed -n 's/^LIB_\(MAJOR\|MINOR\|PATCH\) = \([0-9]*\)$/\2/p' "$src/Makefile" | paste -sd.)
case $libver in [0-9]*.[0-9]*.[0-9]*) ;; *) echo "cannot read LIB_MAJOR/MINOR/PATCH from the Makefile" >&2; exit 2 ;; esac
libmajor=${libver%%.*}

# --- the simulated machine ---------------------------------------------
mkdir -p "$tmp/pc" "$tmp/poison/fuse3" "$tmp/poison/protobuf-c" "$tmp/fakebin"
cp "$(pkg-config --variable=pcfiledir lzo2)/lzo2.pc" "$tmp/pc/" || exit 2
for h in uv.h jansson.h fuse.h fuse3/fuse.h cmocka.h sqlite3.h http_parser.h zlib.h \
	protobuf-c/protobuf-c.h snappy-c.h; do
	echo "#error \"a library-only build included <$h>\"" > "$tmp/poison/$h"
done
for p in apt-get dpkg-query; do
	printf '#!/bin/sh\necho "%s $*" >> %s/ran\nexit 1\n' "$p" "$tmp" > "$tmp/fakebin/$p"
	chmod +x "$tmp/fakebin/$p"
done
# copy: the sources (timestamps kept, so ./configure is not remade)
copy() {
	mkdir -p "$1"
	(cd "$src" && cp -pR Makefile configure.ac config.mk.in libtsstore.pc.in include lib \
		common wire daemon fuse tools sqlite man scripts "$1/") || exit 2
	if [ -f "$src/configure" ]; then cp -p "$src/configure" "$src/aclocal.m4" "$1/"; fi
}
bare() { PATH="$tmp/fakebin:$PATH" PKG_CONFIG_LIBDIR="$tmp/pc" CPATH="$tmp/poison" "$@"; }

# --- 1. a plain make on that machine stops in configure, naming the package
copy "$tmp/a"
cd "$tmp/a" || exit 2
bare make -j2 OPT=-O0 >"$tmp/log" 2>&1
rc=$?
if [ "$rc" -ne 0 ] && grep -q 'tsstored needs libuv >= 1.40, not found: install the Debian package libuv1-dev (scripts/deps.sh installs every build dependency), or configure --without-daemon' "$tmp/log"
then pass; else fail make_names_missing_package "make exited $rc"; fi
same make_never_installs "" "$(cat "$tmp/ran" 2>/dev/null)"

# --- 2. the library alone ------------------------------------------------
bare ./configure --without-fuse --without-daemon >"$tmp/log" 2>&1
same lib_configure 0 $?
same lib_configure_chose "WITH_DAEMON = 0 WITH_FUSE = 0 WITH_TOOLS = 0 WITH_SQLITE = 0 HAVE_CMOCKA = 0" \
	"$(grep -E '^(WITH_[A-Z]+|HAVE_CMOCKA) =' config.mk | tr '\n' ' ' | sed 's/ $//')"
bare make -j2 OPT=-O0 >"$tmp/log" 2>&1
same lib_make 0 $?
same lib_make_built_only_the_library "" "$(find build -name '*.o' | grep -v '^build/lib/')"
same lib_make_no_programs "" "$(ls build/bin 2>/dev/null)"
mkdir -p "$tmp/x/lib" "$tmp/x/include"      # a prefix in use: a file, an empty dir
echo other > "$tmp/x/lib/other.txt"
before=$(cd "$tmp/x" && find . | sort)
bare make install PREFIX="$tmp/x" >"$tmp/log" 2>&1
same lib_install 0 $?
same lib_installed "./include/tsstore.h ./lib/libtsstore.a ./lib/libtsstore.so ./lib/libtsstore.so.$libmajor ./lib/libtsstore.so.$libver ./lib/pkgconfig/libtsstore.pc ./share/man/man3/libtsstore.3 ./share/man/man5/tsstore-format.5" \
	"$(cd "$tmp/x" && find . -type f -o -type l | grep -v other.txt | sort | tr '\n' ' ' | sed 's/ $//')"
flags=$(PKG_CONFIG_LIBDIR="$tmp/pc" PKG_CONFIG_PATH="$tmp/x/lib/pkgconfig" pkg-config --cflags --libs libtsstore | sed "s/ *$//")
same lib_pkg_config "-I$tmp/x/include -L$tmp/x/lib -ltsstore" "$flags"
cat > "$tmp/prog.c" <<'EOF'
#include <stdio.h>
#include <tsstore.h>
int main(void) { puts(ts_version()); return 0; }
EOF
# shellcheck disable=SC2086
cc -o "$tmp/prog" "$tmp/prog.c" $flags >"$tmp/log" 2>&1 &&
	out=$(LD_LIBRARY_PATH="$tmp/x/lib" "$tmp/prog")
same lib_program_links "$(sed -n 's/^#define TS_VERSION_STRING "\(.*\)"/\1/p' include/tsstore.h)" "${out:-}"
bare make uninstall PREFIX="$tmp/x" >"$tmp/log" 2>&1
same lib_uninstall 0 $?
same lib_uninstall_leaves_prefix_as_it_was "$before" "$(cd "$tmp/x" && find . | sort)"

# DESTDIR: the files under it, the .pc naming the PREFIX alone
mkdir -p "$tmp/stage"
bare make install PREFIX=/opt/tss DESTDIR="$tmp/stage" >"$tmp/log" 2>&1
same destdir_install 0 $?
same destdir_pc_prefix "prefix=/opt/tss libdir=\${prefix}/lib includedir=\${prefix}/include" \
	"$(head -3 "$tmp/stage/opt/tss/lib/pkgconfig/libtsstore.pc" | tr '\n' ' ' | sed 's/ $//')"
bare make uninstall PREFIX=/opt/tss DESTDIR="$tmp/stage" >"$tmp/log" 2>&1
same destdir_uninstall "0 ." "$? $(cd "$tmp/stage" && find .)"
same lib_never_installs "" "$(cat "$tmp/ran" 2>/dev/null)"

# --- 3. tsstored without FUSE: builds without its headers, refuses --mount
poison_fuse() { PATH="$tmp/fakebin:$PATH" CPATH="$tmp/poison/fuse3" "$@"; }
rm "$tmp/poison/jansson.h" "$tmp/poison/uv.h" "$tmp/poison/cmocka.h" "$tmp/poison/sqlite3.h" \
	"$tmp/poison/http_parser.h" "$tmp/poison/zlib.h" "$tmp/poison/protobuf-c/protobuf-c.h" \
	"$tmp/poison/snappy-c.h"
poison_fuse ./configure --without-fuse >"$tmp/log" 2>&1
same nofuse_configure 0 $?
poison_fuse make -j2 OPT=-O0 >"$tmp/log" 2>&1
same nofuse_make 0 $?
same nofuse_programs "tsstore tsstored" "$(ls build/bin | tr '\n' ' ' | sed 's/ $//')"
same nofuse_not_linked "" "$(ldd build/bin/tsstored | grep fuse)"
# The SQL module exports its entry point alone: its own copy of the
# library must not interpose on (or be interposed by) a libtsstore.so in
# the same process.
same sqlite_module_exports "sqlite3_tsstoresqlite_init" \
	"$(nm -D --defined-only build/libtsstore_sqlite.so | awk '$2 == "T" {print $3}')"
build/bin/tsstored -d "$tmp/db" --mount "$tmp/m" >"$tmp/out" 2>"$tmp/err"
same nofuse_mount_refused "2|tsstored: --mount: this tsstored was built without FUSE (./configure --without-fuse): it cannot serve the view|no db" \
	"$?|$(cat "$tmp/err")|$(if [ -e "$tmp/db" ]; then echo db; else echo no db; fi)"
mkdir -p "$tmp/y"
before=$(cd "$tmp/y" && find . | sort)
poison_fuse make install PREFIX="$tmp/y" >"$tmp/log" 2>&1
same nofuse_install 0 $?
same nofuse_installed "./bin/tsstore ./bin/tsstored ./include/tsstore.h ./lib/libtsstore.a ./lib/libtsstore.so ./lib/libtsstore.so.$libmajor ./lib/libtsstore.so.$libver ./lib/libtsstore_sqlite.so ./lib/pkgconfig/libtsstore.pc ./lib/systemd/system/tsstored.service ./share/bash-completion/completions/tsstore ./share/doc/tsstore/tsstore.conf.example ./share/man/man1/tsstore.1 ./share/man/man3/libtsstore.3 ./share/man/man3/tsstore-sqlite.3 ./share/man/man5/tsstore-format.5 ./share/man/man5/tsstore.conf.5 ./share/man/man7/tsstore-http.7 ./share/man/man7/tsstore-protocol.7 ./share/man/man8/tsstored.8" \
	"$(cd "$tmp/y" && find . -type f -o -type l | sort | tr '\n' ' ' | sed 's/ $//')"
# the completion installed is the source's, and bash takes it: it
# registers _tsstore for tsstore
same completion_installed_as_is "" "$(cmp "$tmp/y/share/bash-completion/completions/tsstore" tools/completion.bash 2>&1)"
same completion_registers "complete -F _tsstore tsstore" \
	"$(bash -c '. "$1" && complete -p tsstore' sh "$tmp/y/share/bash-completion/completions/tsstore" 2>&1)"
# The daemon's systemd unit names the installed tsstored and its config;
# systemd-analyze finds nothing wrong in it (when systemd is there); the
# example configuration passes tsstored's own check.
unit=$tmp/y/lib/systemd/system/tsstored.service
same unit_exec "ExecStart=$tmp/y/bin/tsstored --config /etc/tsstore/tsstore.conf|ExecReload=$tmp/y/bin/tsstored --config /etc/tsstore/tsstore.conf --check-config|ExecReload=/bin/kill -HUP \$MAINPID" \
	"$(grep '^Exec' "$unit" | tr '\n' '|' | sed 's/|$//')"
if command -v systemd-analyze >/dev/null 2>&1; then
	systemd-analyze verify --man=no "$unit" >"$tmp/log" 2>&1
	same unit_verifies "0|" "$?|$(cat "$tmp/log")"
elif [ "${CI:-}" = true ]; then
	fail unit_verifies "systemd-analyze is missing (scripts/deps.sh installs systemd)"
else
	echo "SKIP: systemd-analyze is missing: the unit is not verified"
fi
"$tmp/y/bin/tsstored" --config "$tmp/y/share/doc/tsstore/tsstore.conf.example" --check-config \
	>"$tmp/log" 2>&1
same example_conf_checks "0|" "$?|$(cat "$tmp/log")"
poison_fuse make uninstall PREFIX="$tmp/y" >"$tmp/log" 2>&1
same nofuse_uninstall "0|$before" "$?|$(cd "$tmp/y" && find . | sort)"
same nofuse_never_installs "" "$(cat "$tmp/ran" 2>/dev/null)"

rm -f "$tmp/log"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
