# Makefile -- tsstore's hand-written GNU Makefile.
#
#   make            build the library and the programs ./configure chose
#   make check      install missing build dependencies, build, run every test
#   make check SANITIZE=1   the same under AddressSanitizer + UBSan
#   make run        build, create ./tsstore-data with a demo table, serve it
#   make install    PREFIX=/usr/local DESTDIR=
#   make uninstall  the same PREFIX and DESTDIR: removes what install put
#   make clean / make distclean
#
# ./configure (made from configure.ac by autoconf) finds the libraries and
# writes config.mk; both happen automatically on the first build, with the
# options of the last ./configure run by hand (--without-daemon,
# --without-fuse, --without-tools, --without-sqlite: see configure.ac).
# Only `make check` and `make run` (and `make bench`, `make fuzz`) install
# missing Debian packages first, with scripts/deps.sh; a plain `make` on a
# machine missing a library stops in configure, naming the package.

.DEFAULT_GOAL := all
SHELL := /bin/sh

PREFIX ?= /usr/local
DESTDIR ?=
BINDIR = $(PREFIX)/bin
LIBDIR = $(PREFIX)/lib
INCDIR = $(PREFIX)/include
MANDIR = $(PREFIX)/share/man
# tsstore's bash completion (tools/completion.bash), where bash-completion
# looks for it by the command's name.
COMPDIR = $(PREFIX)/share/bash-completion/completions
# tsstored's systemd unit and example configuration (tsstored(8),
# "Running as a service"), installed with the daemon.
UNITDIR = $(PREFIX)/lib/systemd/system
DOCDIR = $(PREFIX)/share/doc/tsstore

# Two versions, as with most libraries: the release (TS_VERSION_* in
# include/tsstore.h, what ts_version(), --version and libtsstore.pc say)
# and the interface version of the shared library below, whose SONAME
# major follows the libtool rule (interfaces removed or changed: bump
# MAJOR; added: MINOR).
VERSION := $(shell sed -n 's/^\#define TS_VERSION_STRING "\(.*\)"/\1/p' include/tsstore.h)
LIB_MAJOR = 1
LIB_MINOR = 1
LIB_PATCH = 0
LIB_VERSION = $(LIB_MAJOR).$(LIB_MINOR).$(LIB_PATCH)
SONAME = libtsstore.so.$(LIB_MAJOR)

NOCONFIG_GOALS = clean distclean deps uninstall
ifeq ($(filter-out $(NOCONFIG_GOALS),$(or $(MAKECMDGOALS),all)),)
else
-include config.mk
endif

ifeq ($(SANITIZE),1)
B = build-san
SANFLAGS = -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
else ifeq ($(TSAN),1)
# make check TSAN=1: ThreadSanitizer (scripts/tsan.supp lists what it
# must not report, each entry with its reason).
B = build-tsan
SANFLAGS = -fsanitize=thread -fno-omit-frame-pointer
else
B = build
SANFLAGS =
endif

# V=1 shows every command.
ifeq ($(V),1)
Q =
say = @true
else
Q = @
say = @printf '  %-6s %s\n'
endif

OPT ?= -O2 -g
# Each object's prerequisites are the headers the compiler read (-MMD
# writes them to a .d file beside the object, included below).
DEPFLAGS = -MMD -MP
WARN = -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Wno-unused-parameter
CFLAGS_ALL = -std=c11 -D_GNU_SOURCE $(OPT) $(WARN) $(SANFLAGS) -pthread -Iinclude -iquote lib
LIB_CFLAGS = $(CFLAGS_ALL) -fPIC -fvisibility=hidden -DTS_BUILDING_LIBRARY $(LZO_CFLAGS)
LIB_LIBS = $(LZO_LIBS) -pthread -lm

LIB_SRCS = $(sort $(wildcard lib/*.c))
LIB_OBJS = $(LIB_SRCS:%.c=$(B)/%.o)
STATIC_LIB = $(B)/libtsstore.a
SHARED_LIB = $(B)/libtsstore.so.$(LIB_VERSION)

# Code the programs share (value text and JSON forms), never the library.
COMMON_SRCS = $(sort $(wildcard common/*.c))
COMMON_LIB = $(B)/libcommon.a

# The wire formats (wire/): pure modules, bytes in and rows out, with no
# event loop or socket, so that the daemon, the command, the tests and
# the benchmarks can all use them.
# Remote write (promwrite.c) needs protoc-c, protobuf-c and snappy, which
# ./configure only looks for with the daemon.
WIRE_SRCS = $(filter-out $(if $(filter 1,$(WITH_DAEMON)),,wire/promwrite.c), \
	$(sort $(wildcard wire/*.c)))
# Remote read (promread.c) needs them too.
WIRE_SRCS := $(filter-out $(if $(filter 1,$(WITH_DAEMON)),,wire/promread.c),$(WIRE_SRCS))
WIRE_SRCS := $(filter-out $(if $(filter 1,$(WITH_DAEMON)),,wire/pbmem.c),$(WIRE_SRCS))
WIRE_PROTO_OBJS = $(if $(filter 1,$(WITH_DAEMON)),$(PROTO_OBJS))
WIRE_LIB = $(B)/libwire.a
WIRE_PROTO_GEN = $(if $(filter 1,$(WITH_DAEMON)),$(PROTO_GEN))
# What a program that uses promwrite.c links besides (the daemon's
# DAEMON_LIBS have them).
WIRE_LIBS = $(if $(filter 1,$(WITH_DAEMON)),$(PROTOBUF_C_LIBS) $(SNAPPY_LIBS))

TOOL_SRCS = $(sort $(wildcard tools/*.c))
TOOL_OBJS = $(TOOL_SRCS:%.c=$(B)/%.o)

# tsstored serves the FUSE view itself with --mount (daemon/mount.c over
# fuse/view.c); built without FUSE, daemon/mount_none.c answers --mount
# with an error instead.
DAEMON_SRCS = $(filter-out daemon/$(if $(filter 1,$(WITH_FUSE)),mount_none,mount).c, \
	$(sort $(wildcard daemon/*.c)))
DAEMON_OBJS = $(DAEMON_SRCS:%.c=$(B)/%.o) $(if $(filter 1,$(WITH_FUSE)),$(B)/fuse/view.o)
# Prometheus remote write's and read's messages (wire/remote.proto, and
# remote_answer.proto for read's answer; remote_view.proto, write's
# decoding view of its labels), made into C by protoc-c at build
# time: $(B)/gen/*.pb-c.[ch], never committed; the objects go into
# libwire.a.
PROTO_C = $(B)/gen/remote.pb-c.c $(B)/gen/remote_answer.pb-c.c $(B)/gen/remote_view.pb-c.c
PROTO_GEN = $(PROTO_C) $(PROTO_C:.c=.h)
PROTO_OBJS = $(PROTO_C:.c=.o)
DAEMON_LIBS = $(UV_LIBS) $(HTTP_PARSER_LIBS) $(ZLIB_LIBS) $(PROTOBUF_C_LIBS) $(SNAPPY_LIBS)
FUSE_SRCS = $(sort $(wildcard fuse/*.c))
FUSE_OBJS = $(FUSE_SRCS:%.c=$(B)/%.o)
# What ./configure chose to build (config.mk: WITH_*).
PROGRAMS = $(strip $(if $(filter 1,$(WITH_TOOLS)),$(B)/bin/tsstore) \
	$(if $(filter 1,$(WITH_DAEMON)),$(B)/bin/tsstored) \
	$(if $(filter 1,$(WITH_FUSE)),$(B)/bin/tsstore-fuse))
# The SQLite extension (sqlite/).
SQLITE_EXT = $(if $(filter 1,$(WITH_SQLITE)),$(B)/libtsstore_sqlite.so)
# Headers of wire/ are named with their folder ("wire/promwrite.h"): the
# daemon's mapping modules share the protocols' names.
PROG_CFLAGS = $(CFLAGS_ALL) -iquote common -iquote . $(JANSSON_CFLAGS)
PROG_LIBS = $(WIRE_LIB) $(COMMON_LIB) $(STATIC_LIB) $(LIB_LIBS) $(JANSSON_LIBS)

UNIT_SRCS = $(sort $(wildcard tests/unit/test_*.c))
UNIT_TESTS = $(UNIT_SRCS:tests/unit/%.c=$(B)/tests/%)
TEST_SUPPORT = $(sort $(wildcard tests/unit/support_*.c))

# The wire formats' tests call wire/ alone (tests/wire/).
WIRE_TEST_SRCS = $(sort $(wildcard tests/wire/test_*.c))
WIRE_TESTS = $(WIRE_TEST_SRCS:tests/wire/%.c=$(B)/tests/%)

# Daemon tests start the real tsstored and talk to it (tests/daemon/).
DAEMON_TEST_SRCS = $(sort $(wildcard tests/daemon/test_*.c))
DAEMON_TESTS = $(DAEMON_TEST_SRCS:tests/daemon/%.c=$(B)/tests/%)
DAEMON_TEST_SUPPORT = $(sort $(wildcard tests/daemon/support_*.c))

BENCH_SRCS = $(sort $(wildcard bench/*.c))
BENCH_OBJS = $(BENCH_SRCS:%.c=$(B)/%.o)
# The remote write workload (bench/wire.c) packs its requests with the
# daemon's generated protobuf-c code and snappy, so it needs the daemon's
# build (WITH_DAEMON); without it wire.c is left out.
BENCH_SRCS := $(if $(filter 1,$(WITH_DAEMON)),$(BENCH_SRCS),$(filter-out bench/wire.c,$(BENCH_SRCS)))
BENCH_OBJS += $(if $(filter 1,$(WITH_DAEMON)),$(PROTO_OBJS))
BENCH_CFLAGS = $(if $(filter 1,$(HAVE_LMDB)),-DHAVE_LMDB $(LMDB_CFLAGS)) \
	$(if $(filter 1,$(WITH_DAEMON)),-DHAVE_WIRE -iquote $(B)/gen $(PROTOBUF_C_CFLAGS) $(SNAPPY_CFLAGS)) \
	$(if $(filter 1,$(HAVE_ROCKSDB)),-DHAVE_ROCKSDB $(ROCKSDB_CFLAGS)) \
	$(if $(filter 1,$(HAVE_SQLITE)),-DHAVE_SQLITE $(SQLITE_CFLAGS))
BENCH_LIBS = $(if $(filter 1,$(HAVE_LMDB)),$(LMDB_LIBS)) \
	$(if $(filter 1,$(WITH_DAEMON)),$(PROTOBUF_C_LIBS) $(SNAPPY_LIBS)) \
	$(if $(filter 1,$(HAVE_ROCKSDB)),$(ROCKSDB_LIBS)) \
	$(if $(filter 1,$(HAVE_SQLITE)),$(SQLITE_LIBS))

CLI_TESTS = $(sort $(wildcard tests/cli/test_*.sh))

MANPAGES = $(sort $(wildcard man/*.[1-8]))
# The pages installed: the library's, and those of what was built.
INSTALL_MANPAGES = man/libtsstore.3 man/tsstore-format.5 \
	$(if $(filter 1,$(WITH_TOOLS)),man/tsstore.1) \
	$(if $(filter 1,$(WITH_DAEMON)),man/tsstored.8 man/tsstore.conf.5 man/tsstore-protocol.7 \
		man/tsstore-http.7) \
	$(if $(filter 1,$(WITH_FUSE)),man/tsstore-fuse.8) \
	$(if $(filter 1,$(WITH_SQLITE)),man/tsstore-sqlite.3)

.PHONY: all check run install uninstall clean distclean deps bench bench-quick crash-test powercut-test failover-test fuzz fuzz-seeds soak \
	corrections-diff rollup-diff
all: $(STATIC_LIB) $(SHARED_LIB) $(PROGRAMS) $(SQLITE_EXT) $(B)/libtsstore.pc

# --- set-up -------------------------------------------------------------
deps:
	@scripts/deps.sh build

build/.deps-stamp: scripts/deps.sh
	@mkdir -p build
	@scripts/deps.sh build
	@touch $@

# make check and make run install what is missing before configuring;
# nothing else does.
ifneq ($(filter check check-interop run,$(MAKECMDGOALS)),)
configure: build/.deps-stamp
endif

configure: configure.ac
	@command -v autoconf >/dev/null && command -v aclocal >/dev/null && \
		command -v pkg-config >/dev/null || { echo "making ./configure needs autoconf, \
	automake (aclocal) and pkg-config: install the Debian packages autoconf automake \
	pkg-config (scripts/deps.sh installs every build dependency)" >&2; exit 1; }
	aclocal && autoconf
	@touch $@

# build/.bench-deps-stamp appears when `make bench` first installs the
# peers; configure then runs again to find them.  A configure already
# run (by hand, with its options) runs again with the same options.
config.mk: configure config.mk.in $(wildcard build/.bench-deps-stamp)
	@if [ -f config.status ]; then ./config.status --recheck >/dev/null && \
		./config.status --quiet; \
	else ./configure --quiet CC="$(or $(CC_OVERRIDE),gcc)"; fi

# --- library ------------------------------------------------------------
$(B)/lib/%.o: lib/%.c config.mk
	@mkdir -p $(dir $@)
	$(say) CC $@
	$(Q)$(CC) $(LIB_CFLAGS) $(DEPFLAGS) -c $< -o $@

$(STATIC_LIB): $(LIB_OBJS)
	@rm -f $@
	$(say) AR $@
	$(Q)ar rcs $@ $^

$(SHARED_LIB): $(LIB_OBJS) lib/libtsstore.map
	$(say) LD $@
	$(Q)$(CC) -shared $(SANFLAGS) -Wl,-soname,$(SONAME) \
		-Wl,--version-script=lib/libtsstore.map -o $@ $(LIB_OBJS) $(LIB_LIBS)
	$(Q)ln -sf libtsstore.so.$(LIB_VERSION) $(B)/$(SONAME)
	$(Q)ln -sf $(SONAME) $(B)/libtsstore.so

# libtsstore.pc for PREFIX, LIBDIR and INCDIR (install writes its own,
# for the PREFIX it is given); $(B)/libtsstore.pc is the build's, for
# the tests.
PC_SED = sed -e 's|@PREFIX@|$(PREFIX)|' \
	-e 's|@LIBDIR@|$(patsubst $(PREFIX)/%,$${prefix}/%,$(LIBDIR))|' \
	-e 's|@INCDIR@|$(patsubst $(PREFIX)/%,$${prefix}/%,$(INCDIR))|' \
	-e 's|@VERSION@|$(VERSION)|' -e 's|@LIBS@|$(LIB_LIBS)|' libtsstore.pc.in
$(B)/libtsstore.pc: libtsstore.pc.in Makefile config.mk
	@mkdir -p $(B)
	$(Q)$(PC_SED) > $@

# --- programs -----------------------------------------------------------
$(B)/common/%.o: common/%.c config.mk
	@mkdir -p $(dir $@)
	$(say) CC $@
	$(Q)$(CC) $(PROG_CFLAGS) $(DEPFLAGS) -c $< -o $@

$(COMMON_LIB): $(COMMON_SRCS:%.c=$(B)/%.o)
	@rm -f $@
	$(say) AR $@
	$(Q)ar rcs $@ $^

$(B)/wire/%.o: wire/%.c config.mk
	@mkdir -p $(dir $@)
	$(say) CC $@
	$(Q)$(CC) $(CFLAGS_ALL) -iquote $(B)/gen $(PROTOBUF_C_CFLAGS) $(SNAPPY_CFLAGS) $(DEPFLAGS) \
		-c $< -o $@

# promwrite.c includes the generated header (made before it is compiled).
$(B)/wire/promwrite.o: $(B)/gen/remote.pb-c.h $(B)/gen/remote_view.pb-c.h
$(B)/wire/promread.o: $(B)/gen/remote.pb-c.h $(B)/gen/remote_answer.pb-c.h

$(WIRE_LIB): $(WIRE_SRCS:%.c=$(B)/%.o) $(WIRE_PROTO_OBJS)
	@rm -f $@
	$(say) AR $@
	$(Q)ar rcs $@ $^

$(B)/tools/%.o: tools/%.c config.mk
	@mkdir -p $(dir $@)
	$(say) CC $@
	$(Q)$(CC) $(PROG_CFLAGS) $(DEPFLAGS) -c $< -o $@

$(B)/bin/tsstore: $(TOOL_OBJS) $(WIRE_LIB) $(COMMON_LIB) $(STATIC_LIB)
	@mkdir -p $(dir $@)
	$(say) LD $@
	$(Q)$(CC) $(SANFLAGS) -o $@ $(TOOL_OBJS) $(PROG_LIBS)

$(B)/daemon/%.o: daemon/%.c config.mk
	@mkdir -p $(dir $@)
	$(say) CC $@
	$(Q)$(CC) $(PROG_CFLAGS) -iquote fuse -iquote $(B)/gen $(UV_CFLAGS) $(ZLIB_CFLAGS) \
		$(PROTOBUF_C_CFLAGS) $(SNAPPY_CFLAGS) $(FUSE_CFLAGS) $(DEPFLAGS) -c $< -o $@

# the bench's wire.c includes the generated header (made before it is
# compiled), as wire/promwrite.c does
$(B)/bench/wire.o: $(B)/gen/remote.pb-c.h

$(PROTO_GEN) &: wire/remote.proto wire/remote_answer.proto wire/remote_view.proto config.mk
	@mkdir -p $(B)/gen
	$(say) PROTOC $(PROTO_C)
	$(Q)$(PROTOC_C) --proto_path=wire --c_out=$(B)/gen remote.proto remote_answer.proto \
		remote_view.proto

$(B)/gen/%.pb-c.o: $(B)/gen/%.pb-c.c $(PROTO_GEN)
	$(say) CC $@
	$(Q)$(CC) $(CFLAGS_ALL) $(PROTOBUF_C_CFLAGS) -c $< -o $@

$(B)/bin/tsstored: $(DAEMON_OBJS) $(WIRE_LIB) $(COMMON_LIB) $(STATIC_LIB)
	@mkdir -p $(dir $@)
	$(say) LD $@
	$(Q)$(CC) $(SANFLAGS) -o $@ $(DAEMON_OBJS) $(PROG_LIBS) $(DAEMON_LIBS) $(FUSE_LIBS)

$(B)/fuse/%.o: fuse/%.c config.mk
	@mkdir -p $(dir $@)
	$(say) CC $@
	$(Q)$(CC) $(PROG_CFLAGS) $(FUSE_CFLAGS) $(DEPFLAGS) -c $< -o $@

$(B)/bin/tsstore-fuse: $(FUSE_OBJS) $(WIRE_LIB) $(COMMON_LIB) $(STATIC_LIB)
	@mkdir -p $(dir $@)
	$(say) LD $@
	$(Q)$(CC) $(SANFLAGS) -o $@ $(FUSE_OBJS) $(PROG_LIBS) $(FUSE_LIBS)

# common/ is compiled into it again, position-independent (libcommon.a
# is built for programs).
$(B)/libtsstore_sqlite.so: $(wildcard sqlite/*.c) $(COMMON_SRCS) $(wildcard common/*.h) \
		$(STATIC_LIB) include/tsstore.h config.mk
	@mkdir -p $(dir $@)
	$(say) LD $@
	$(Q)$(CC) $(CFLAGS_ALL) -fPIC -fvisibility=hidden -iquote common \
		$(SQLITE_CFLAGS) $(JANSSON_CFLAGS) -shared -o $@ $(wildcard sqlite/*.c) $(COMMON_SRCS) \
		-Wl,--exclude-libs,ALL $(STATIC_LIB) $(LIB_LIBS) $(JANSSON_LIBS)

# --- tests --------------------------------------------------------------
$(B)/tests/%: tests/unit/%.c $(TEST_SUPPORT) $(wildcard tests/unit/*.h) $(STATIC_LIB)
	@mkdir -p $(dir $@)
	$(say) TEST $@
	$(Q)$(CC) $(CFLAGS_ALL) $(CMOCKA_CFLAGS) $(SQLITE_CFLAGS) -Itests/unit -o $@ $< $(TEST_SUPPORT) \
		$(STATIC_LIB) $(LIB_LIBS) $(CMOCKA_LIBS) $(SQLITE_LIBS)

# test_fault: the library's file-system calls are redirected (GNU ld
# --wrap) to tests/unit/fault.c, which fails the n-th of them on command;
# linked with the library of small log segments (SMALLSEG, below) so
# that its workloads cross segments.  The link stops if the library
# calls one of FAULT_FS_CALLS that FAULT_WRAP leaves out, so no new call
# escapes the sweep.
FAULT_WRAP = open read pread write pwrite fsync fdatasync msync rename renameat2 link \
	unlink rmdir mkdir ftruncate fallocate mmap sync_file_range stat lstat fstat statx access \
	opendir statvfs
FAULT_FS_CALLS = $(FAULT_WRAP) open64 openat openat64 creat creat64 pread64 readv preadv \
	preadv2 pwrite64 writev pwritev pwritev2 syncfs sync renameat linkat symlink symlinkat \
	unlinkat mkdirat ftruncate64 truncate truncate64 fallocate64 posix_fallocate \
	posix_fallocate64 mmap64 stat64 lstat64 fstat64 fstatat fstatat64 statx faccessat \
	fdopendir fopen fopen64 freopen copy_file_range sendfile
$(B)/tests/test_fault: tests/unit/test_fault.c tests/unit/fault.c $(TEST_SUPPORT) \
		$(wildcard tests/unit/*.h) $(B)/smallseg/libtsstore.a # SMALLSEG_LIB, defined below
	@mkdir -p $(dir $@)
	$(Q)for s in $$(nm -u $(SMALLSEG_LIB) | awk '{print $$NF}' | sort -u); do \
		case " $(FAULT_FS_CALLS) " in *" $$s "*) case " $(FAULT_WRAP) " in *" $$s "*) ;; \
		*) echo "$@: libtsstore calls $$s; add it to FAULT_WRAP and fault.c" >&2; exit 1;; \
		esac;; esac; done
	$(say) TEST $@
	$(Q)$(CC) $(CFLAGS_ALL) $(SMALLSEG) $(CMOCKA_CFLAGS) -Itests/unit -o $@ $< tests/unit/fault.c \
		$(TEST_SUPPORT) $(SMALLSEG_LIB) $(LIB_LIBS) $(CMOCKA_LIBS) $(FAULT_WRAP:%=-Wl,--wrap=%)

# The TSBS cpu-only lines that test_ingest and test_http read: the first
# 10,000 of ../shared/data's file, kept in the tree (tests/data/README.md)
# so that make check needs nothing from outside the repository.
TSBS_DATA_FILE = $(CURDIR)/tests/data/tsbs-cpu-only-10k.influx.gz

$(B)/tests/%: tests/wire/%.c $(wildcard tests/wire/*.h wire/*.h) $(WIRE_LIB) $(WIRE_PROTO_GEN)
	@mkdir -p $(dir $@)
	$(say) TEST $@
	$(Q)$(CC) $(CFLAGS_ALL) -iquote . -iquote $(B)/gen $(CMOCKA_CFLAGS) $(PROTOBUF_C_CFLAGS) \
		$(SNAPPY_CFLAGS) -Itests/wire -o $@ $< $(WIRE_LIB) $(WIRE_LIBS) -lm $(CMOCKA_LIBS)

$(B)/tests/%: tests/daemon/%.c $(DAEMON_TEST_SUPPORT) $(wildcard tests/daemon/*.h) $(WIRE_LIB) \
		$(COMMON_LIB) $(STATIC_LIB)
	@mkdir -p $(dir $@)
	$(say) TEST $@
	$(Q)$(CC) $(PROG_CFLAGS) $(CMOCKA_CFLAGS) $(ZLIB_CFLAGS) -Itests/daemon \
		-DTSSTORED_PATH='"$(B)/bin/tsstored"' -DTSBS_DATA='"$(TSBS_DATA_FILE)"' \
		-o $@ $< $(DAEMON_TEST_SUPPORT) \
		$(PROG_LIBS) $(CMOCKA_LIBS) $(ZLIB_LIBS)

# test_promwrite makes remote write requests itself: the generated
# messages, protobuf-c and snappy.
$(B)/tests/test_promwrite: tests/daemon/test_promwrite.c $(DAEMON_TEST_SUPPORT) \
		$(wildcard tests/daemon/*.h) $(PROTO_OBJS) $(WIRE_LIB) $(COMMON_LIB) $(STATIC_LIB)
	@mkdir -p $(dir $@)
	$(say) TEST $@
	$(Q)$(CC) $(PROG_CFLAGS) $(CMOCKA_CFLAGS) $(PROTOBUF_C_CFLAGS) $(SNAPPY_CFLAGS) -Itests/daemon \
		-iquote $(B)/gen -DTSSTORED_PATH='"$(B)/bin/tsstored"' -o $@ $< $(DAEMON_TEST_SUPPORT) \
		$(PROTO_OBJS) $(PROG_LIBS) $(CMOCKA_LIBS) $(PROTOBUF_C_LIBS) $(SNAPPY_LIBS)

# test_promread writes and reads with the generated messages, as
# test_promwrite does.
$(B)/tests/test_promread: tests/daemon/test_promread.c $(DAEMON_TEST_SUPPORT) \
		$(wildcard tests/daemon/*.h) $(PROTO_OBJS) $(WIRE_LIB) $(COMMON_LIB) $(STATIC_LIB)
	@mkdir -p $(dir $@)
	$(say) TEST $@
	$(Q)$(CC) $(PROG_CFLAGS) $(CMOCKA_CFLAGS) $(PROTOBUF_C_CFLAGS) $(SNAPPY_CFLAGS) -Itests/daemon \
		-iquote $(B)/gen -DTSSTORED_PATH='"$(B)/bin/tsstored"' -o $@ $< $(DAEMON_TEST_SUPPORT) \
		$(PROTO_OBJS) $(PROG_LIBS) $(CMOCKA_LIBS) $(PROTOBUF_C_LIBS) $(SNAPPY_LIBS) -lm

# test_config checks the daemon's option parsing itself (daemon/config.c):
# it links the daemon's object rather than starting tsstored.
$(B)/tests/test_config: tests/daemon/test_config.c $(B)/daemon/config.o $(B)/daemon/access.o \
		daemon/tsd.h $(WIRE_LIB) $(COMMON_LIB) $(STATIC_LIB)
	@mkdir -p $(dir $@)
	$(say) TEST $@
	$(Q)$(CC) $(PROG_CFLAGS) $(CMOCKA_CFLAGS) -iquote daemon -o $@ $< $(B)/daemon/config.o \
		$(B)/daemon/access.o \
		$(PROG_LIBS) $(CMOCKA_LIBS)

# test_ingest calls the line protocol mapping (daemon/ingest.c) on a real
# database directory: it links the daemon's object, as test_config does.
$(B)/tests/test_ingest: tests/daemon/test_ingest.c $(B)/daemon/ingest.o daemon/ingest.h \
		$(WIRE_LIB) $(COMMON_LIB) $(STATIC_LIB)
	@mkdir -p $(dir $@)
	$(say) TEST $@
	$(Q)$(CC) $(PROG_CFLAGS) $(CMOCKA_CFLAGS) -iquote daemon \
		-DTSBS_DATA='"$(TSBS_DATA_FILE)"' \
		-o $@ $< $(B)/daemon/ingest.o $(PROG_LIBS) $(CMOCKA_LIBS)

# test_crash again, over a library of 1 MiB log segments, so that the
# kills land in segment rollovers too (tests/unit/test_crash.c).
SMALLSEG = -DTS_SEG_DATA_SHIFT=20
SMALLSEG_LIB = $(B)/smallseg/libtsstore.a
$(B)/smallseg/lib/%.o: lib/%.c config.mk
	@mkdir -p $(dir $@)
	$(say) CC $@
	$(Q)$(CC) $(LIB_CFLAGS) $(SMALLSEG) $(DEPFLAGS) -c $< -o $@

$(SMALLSEG_LIB): $(LIB_SRCS:%.c=$(B)/smallseg/%.o)
	@rm -f $@
	$(say) AR $@
	$(Q)ar rcs $@ $^

$(B)/tests/test_crash_segments: tests/unit/test_crash.c $(TEST_SUPPORT) $(wildcard tests/unit/*.h) \
		$(SMALLSEG_LIB)
	@mkdir -p $(dir $@)
	$(say) TEST $@
	$(Q)$(CC) $(CFLAGS_ALL) $(SMALLSEG) $(CMOCKA_CFLAGS) -Itests/unit -o $@ $< $(TEST_SUPPORT) \
		$(SMALLSEG_LIB) $(LIB_LIBS) $(CMOCKA_LIBS)

CRASH_TESTS = $(B)/tests/test_crash $(B)/tests/test_crash_segments $(B)/tests/test_daemon_crash

# The power-cut rig (tests/powercut/, docs/powercut.md): pcfs, a FUSE
# pass-through file system that keeps apart what fsync, fdatasync and
# msync made durable, and test_powercut, which cuts the power under a
# writer in every durability mode.  Over the library of 1 MiB segments,
# so that cuts land in log rollovers too.
$(B)/tests/pcfs: tests/powercut/pcfs.c config.mk
	@mkdir -p $(dir $@)
	$(say) CC $@
	$(Q)$(CC) $(CFLAGS_ALL) -Wno-format-truncation $(FUSE_CFLAGS) -o $@ $< $(FUSE_LIBS)

$(B)/tests/test_powercut: tests/powercut/test_powercut.c $(TEST_SUPPORT) $(DAEMON_TEST_SUPPORT) \
		$(wildcard tests/unit/*.h tests/daemon/*.h) $(SMALLSEG_LIB) $(COMMON_LIB) $(B)/tests/pcfs \
		$(B)/bin/tsstore $(B)/bin/tsstored
	@mkdir -p $(dir $@)
	$(say) TEST $@
	$(Q)$(CC) $(PROG_CFLAGS) $(SMALLSEG) $(CMOCKA_CFLAGS) -Itests/unit -Itests/daemon \
		-DPCFS_PATH='"$(B)/tests/pcfs"' -DTSSTORE_PATH='"$(B)/bin/tsstore"' \
		-DTSSTORED_PATH='"$(B)/bin/tsstored"' -o $@ $< $(TEST_SUPPORT) $(DAEMON_TEST_SUPPORT) \
		$(COMMON_LIB) $(SMALLSEG_LIB) $(LIB_LIBS) $(JANSSON_LIBS) $(CMOCKA_LIBS) -Wl,--wrap=msync

# Under TSAN=1 every process the tests start (daemons, the command)
# writes its reports into $(B)/tsan/, and any report fails the check.
ifeq ($(TSAN),1)
check: export TSAN_OPTIONS = suppressions=$(CURDIR)/scripts/tsan.supp log_path=$(CURDIR)/$(B)/tsan/report
endif
# tests/cli/test_bench.sh runs `tsstore-bench --quick --compare` once, to
# keep the harness working; not under TSAN=1, whose slowdown would turn
# its fixed-length runs into minutes of nothing new.
ifeq ($(TSAN),1)
CHECK_CLI_TESTS = $(filter-out tests/cli/test_bench.sh,$(CLI_TESTS))
else
CHECK_CLI_TESTS = $(CLI_TESTS)
endif
check: check-config all $(UNIT_TESTS) $(WIRE_TESTS) $(DAEMON_TESTS) $(CRASH_TESTS) $(B)/tests/test_powercut $(B)/tests/soak \
		$(B)/bin/tsstore-bench
	@rm -rf $(B)/tsan && mkdir -p $(B)/tsan
	@scripts/run-tests.sh $(B) $(UNIT_TESTS) $(B)/tests/test_crash_segments $(B)/tests/test_powercut \
		$(WIRE_TESTS) $(DAEMON_TESTS) \
		$(CHECK_CLI_TESTS); \
	rc=$$?; if ls $(B)/tsan/report.* >/dev/null 2>&1; then cat $(B)/tsan/report.*; \
		echo "ThreadSanitizer: $$(ls $(B)/tsan/report.* | wc -l) report(s), in $(B)/tsan/"; exit 1; fi; \
	exit $$rc

# The tests need every piece and cmocka: a build configured with
# --without-X cannot run them (reconfigure with plain ./configure).
.PHONY: check-config
check-config:
	@test "$(WITH_TOOLS)$(WITH_DAEMON)$(WITH_FUSE)$(HAVE_CMOCKA)" = 1111 || { \
		echo "make check needs the command, tsstored, the FUSE view and cmocka; this build has" \
			"tools=$(WITH_TOOLS) daemon=$(WITH_DAEMON) fuse=$(WITH_FUSE) cmocka=$(HAVE_CMOCKA):" \
			"run ./configure without --without-* options" >&2; exit 1; }

# make check-interop: the real programs of Debian's packages against a
# started tsstored (tests/interop/README.md): InfluxDB's `influx` client,
# collectd's write_graphite, Prometheus's scrapes and remote write, and
# InfluxDB 1.x itself as an oracle for the line protocol.  Installs the
# peers first (scripts/deps.sh interop); .ci/run runs it after make check.
INTEROP_TESTS = $(sort $(wildcard tests/interop/test_*.sh))
$(B)/tests/interop-canon: tests/interop/canon.c config.mk
	@mkdir -p $(dir $@)
	$(say) CC $@
	$(Q)$(CC) $(CFLAGS_ALL) $(JANSSON_CFLAGS) -o $@ $< $(JANSSON_LIBS) -lm

.PHONY: check-interop
check-interop:
	@scripts/deps.sh interop
	@$(MAKE) --no-print-directory $(B)/bin/tsstore $(B)/bin/tsstored $(B)/tests/interop-canon
	@$(MAKE) --no-print-directory $(B)/bin/tsstore-bench
	@scripts/run-tests.sh $(B) $(INTEROP_TESTS)

# make tsbs-diff N=10000: the long differential of the TSBS cpu-only
# query suite (tests/interop/test_tsbs_queries.sh; check-interop runs its
# short version): N random queries, spread over the 15 types, on the
# shared 12-hour TSBS file, InfluxDB 1.6 against tsstored's /query, or
# with AGAINST=influxdb against a second InfluxDB 1.6; SEED= another draw.
.PHONY: tsbs-diff
tsbs-diff:
	@scripts/deps.sh interop
	@$(MAKE) --no-print-directory $(B)/bin/tsstore $(B)/bin/tsstored $(B)/tests/interop-canon
	@$(MAKE) --no-print-directory $(B)/bin/tsstore-bench
	TSBS_DIFF_FILE=$(CURDIR)/../shared/data/tsbs-cpu-only-100hosts-12h.influx.gz \
		TSBS_DIFF_QUERIES=$(N) TSBS_DIFF_AGAINST=$(or $(AGAINST),tsstored) \
		TSBS_DIFF_SEED=$(or $(SEED),1) scripts/run-tests.sh $(B) tests/interop/test_tsbs_queries.sh

# make soak SOAK_SECONDS=600: tsstored under many connections inserting
# and querying (tests/soak/soak.c); a JSON line every 10 s, a summary at
# the end; fails on any row lost, error or crash.  Not run by make check,
# which only builds it.
SOAK_SECONDS ?= 600
$(B)/tests/soak: tests/soak/soak.c $(DAEMON_TEST_SUPPORT) $(wildcard tests/daemon/*.h) \
		$(WIRE_LIB) $(COMMON_LIB) $(STATIC_LIB)
	@mkdir -p $(dir $@)
	$(say) TEST $@
	$(Q)$(CC) $(PROG_CFLAGS) -Itests/daemon -DTSSTORED_PATH='"$(B)/bin/tsstored"' -o $@ $< \
		$(DAEMON_TEST_SUPPORT) $(PROG_LIBS)

soak: $(B)/tests/soak $(B)/bin/tsstored
	$(B)/tests/soak --seconds $(SOAK_SECONDS)

# make corrections-diff: the long mode of the corrections' differential
# test against SQLite (tests/unit/test_corrections_diff.c; make check runs
# its quick size): SCALE times as many steps, SEED= another base seed,
# MODE=today only the API built before issue 28, MODE=replace or
# MODE=delete that and one part of the corrections.
CORRECTIONS_DIFF_SCALE ?= 10
corrections-diff: $(B)/tests/test_corrections_diff
	TSSTORE_DIFF_SCALE=$(or $(SCALE),$(CORRECTIONS_DIFF_SCALE)) \
		$(if $(SEED),TSSTORE_DIFF_SEED=$(SEED)) $(if $(MODE),TSSTORE_DIFF_MODE=$(MODE)) \
		$(B)/tests/test_corrections_diff

# make rollup-diff: the rollups' random differential (test_rollup's
# random_differential: inserts late and out of order across periods,
# deletes, replacements, flushes, merges, reopens, passes; checked against
# the raw aggregates and SQLite's GROUP BY) with STEPS steps (default
# 2000) for SEEDS seeds (default 10: 1 .. SEEDS).
rollup-diff: $(B)/tests/test_rollup
	@n=0; for s in $$(seq 1 $(or $(SEEDS),10)); do \
		TSSTORE_ROLLUP_DIFF_STEPS=$(or $(STEPS),2000) TSSTORE_ROLLUP_DIFF_SEED=$$s \
		TS_TEST_FILTER=random_differential $(B)/tests/test_rollup >/dev/null 2>&1 || \
		{ echo "rollup-diff: seed $$s failed (TSSTORE_ROLLUP_DIFF_SEED=$$s)"; n=$$((n+1)); }; \
	done; echo "rollup-diff: $$n of $(or $(SEEDS),10) seeds failed"; test $$n -eq 0

# --- benchmarks ---------------------------------------------------------
$(B)/bench/%.o: bench/%.c config.mk
	@mkdir -p $(dir $@)
	$(say) CC $@
	$(Q)$(CC) $(CFLAGS_ALL) -iquote common -iquote . $(JANSSON_CFLAGS) $(BENCH_CFLAGS) $(DEPFLAGS) -c $< -o $@

$(B)/bin/tsstore-bench: $(BENCH_OBJS) $(WIRE_LIB) $(COMMON_LIB) $(STATIC_LIB)
	@mkdir -p $(dir $@)
	$(say) LD $@
	$(Q)$(CC) $(SANFLAGS) -o $@ $(BENCH_OBJS) $(WIRE_LIB) $(COMMON_LIB) $(STATIC_LIB) $(LIB_LIBS) \
		$(BENCH_LIBS) $(JANSSON_LIBS)

# make bench: every workload with its peers (installs the peers first);
# the results are kept in $(B)/bench.jsonl, the latency workload's
# timeline drawn into $(B)/latency-p99.png, absorb_sweep's curves into
# $(B)/absorb-batch.png and $(B)/absorb-rowsize.png, and the daemon ingest
# workloads' rows/s per engine and protocol into $(B)/ingest-rows.png.
bench:
	@scripts/deps.sh bench
	@test -f build/.bench-deps-stamp || { mkdir -p build && touch build/.bench-deps-stamp; }
	@$(MAKE) --no-print-directory $(B)/bin/tsstore-bench $(B)/bin/tsstored
	@{ $(B)/bin/tsstore-bench --compare $(BENCH_ARGS); echo $$? > $(B)/bench.status; } | \
		tee $(B)/bench.jsonl
	@test "$$(cat $(B)/bench.status)" = 0
	@bench/plot-latency.sh $(B)/bench.jsonl $(B)/latency-p99.png
	@bench/plot-sweep.sh $(B)/bench.jsonl $(B)/absorb-batch.png $(B)/absorb-rowsize.png
	@bench/plot-ingest.sh $(B)/bench.jsonl $(B)/ingest-rows.png
	@bench/plot-queries.sh $(B)/bench.jsonl $(B)/tsbs-queries.png
	@bench/plot-sustained.sh $(B)/bench.jsonl $(B)/sustained.png

bench-quick: $(B)/bin/tsstore-bench $(B)/bin/tsstored
	$(B)/bin/tsstore-bench --quick --compare

# make crash-test N=1000: the SIGKILL crash loops, long.
N ?= 1000
crash-test: $(CRASH_TESTS) $(B)/bin/tsstored $(B)/bin/tsstore
	TSSTORE_CRASH_ITERATIONS=$(N) scripts/run-tests.sh $(B) $(CRASH_TESTS)

# make powercut-test N=200: N power cuts per durability mode and rig mode
# (tests/powercut/test_powercut.c; make check runs 4 of each).
powercut-test: $(B)/tests/test_powercut
	TSSTORE_POWERCUT_CUTS=$(N) POWERCUT_SLACK_MS=$(or $(POWERCUT_SLACK_MS),2000) \
		scripts/run-tests.sh $(B) $(B)/tests/test_powercut

# make failover-test FAILOVERS=100: sync=replica failovers, a primary
# killed (-9) at a random moment and its standby promoted, each checked
# to hold every acknowledged row, every second one with the link going
# through tests/cli/linkproxy.py, which cuts and stalls it
# (tests/cli/test_replica.sh; make check runs 10); then as many under
# every kind of load -- flushes, merges, alters, TTL drops, deletes --
# with the standby killed and restarted and the link cut and stalled
# in each, the standby compared with the quiesced primary between
# (tests/cli/test_failover_load.sh; make check runs 3).
FAILOVERS ?= 100
failover-test: all
	TSSTORE_FAILOVERS=$(FAILOVERS) scripts/run-tests.sh $(B) tests/cli/test_replica.sh \
		tests/cli/test_failover_load.sh

# make fuzz: the libFuzzer targets of tests/fuzz/, each for FUZZ_SECONDS
# (default 600) with ASan and UBSan (undefined behaviour aborts, so it is
# a finding), from the seed corpora in tests/fuzz/NAME/; what they find
# new is kept in $(B)/fuzz/corpus-NAME, a failing input in $(B)/fuzz/NAME-*.
FUZZ_SECONDS ?= 600
FUZZ_TARGETS = request http jrows tablet log time lineproto ingest promwrite promingest graphite influxql
FUZZ_TARGETS += promread
FUZZ_CFLAGS = -std=c11 -D_GNU_SOURCE -g -O1 -fsanitize=fuzzer,address,undefined \
	-fno-sanitize-recover=undefined \
	-Iinclude -iquote lib -iquote common -iquote . -iquote daemon -iquote $(B)/gen \
	-DTS_BUILDING_LIBRARY \
	$(LZO_CFLAGS) $(JANSSON_CFLAGS) $(ZLIB_CFLAGS) $(PROTOBUF_C_CFLAGS) $(SNAPPY_CFLAGS)
FUZZ_LIBS = $(LZO_LIBS) $(JANSSON_LIBS) $(HTTP_PARSER_LIBS) $(ZLIB_LIBS) $(PROTOBUF_C_LIBS) \
	$(SNAPPY_LIBS) -pthread -lm
# the daemon's request path: request.c runs HTTP requests through http.c
FUZZ_DAEMON_SRCS = daemon/request.c daemon/http.c daemon/stats.c daemon/config.c daemon/ingest.c \
	daemon/promwrite.c daemon/graphite.c daemon/influxq.c
# who may do what (request.c and http.c ask it)
FUZZ_DAEMON_SRCS += daemon/access.c
# remote read (http.c answers /api/v1/read with it)
FUZZ_DAEMON_SRCS += daemon/promread.c
# the follow op (request.c streams it)
FUZZ_DAEMON_SRCS += daemon/follow.c
# a standby's link and a primary's replicas (request.c asks them: follow,
# promote, sync=replica)
FUZZ_DAEMON_SRCS += daemon/link.c daemon/replica.c
# server.c's log, discarded (server.c itself is the daemon's main loop)
FUZZ_DAEMON_SRCS += tests/fuzz/tsd_log_stub.c

$(B)/fuzz/fuzz_%: tests/fuzz/fuzz_%.c $(FUZZ_DAEMON_SRCS) $(PROTO_GEN) $(WIRE_SRCS) \
		$(COMMON_SRCS) $(LIB_SRCS) $(wildcard lib/*.h common/*.h wire/*.h daemon/*.h tests/fuzz/*.h) \
		config.mk
	@mkdir -p $(dir $@)
	$(say) FUZZ $@
	$(Q)clang $(FUZZ_CFLAGS) -o $@ $< $(FUZZ_DAEMON_SRCS) \
		$(WIRE_SRCS) $(PROTO_C) $(COMMON_SRCS) $(LIB_SRCS) $(FUZZ_LIBS)

# The wire formats' targets need wire/ alone (and protobuf-c, snappy).
FUZZ_WIRE_TARGETS = lineproto promwrite graphite influxql
FUZZ_WIRE_TARGETS += promread
# their shared header (fuzz_prom.h)
$(FUZZ_WIRE_TARGETS:%=$(B)/fuzz/fuzz_%): $(wildcard tests/fuzz/*.h)
$(FUZZ_WIRE_TARGETS:%=$(B)/fuzz/fuzz_%): $(B)/fuzz/fuzz_%: tests/fuzz/fuzz_%.c $(WIRE_SRCS) \
		$(PROTO_GEN) $(wildcard wire/*.h) config.mk
	@mkdir -p $(dir $@)
	$(say) FUZZ $@
	$(Q)clang $(FUZZ_CFLAGS) -o $@ $< $(WIRE_SRCS) $(PROTO_C) $(PROTOBUF_C_LIBS) \
		$(SNAPPY_LIBS) -lm

fuzz:
	@scripts/deps.sh fuzz
	@$(MAKE) --no-print-directory $(FUZZ_TARGETS:%=$(B)/fuzz/fuzz_%)
	@for t in $(FUZZ_TARGETS); do mkdir -p $(B)/fuzz/corpus-$$t; \
		echo "fuzz: $$t for $(FUZZ_SECONDS) s"; \
		$(B)/fuzz/fuzz_$$t -max_total_time=$(FUZZ_SECONDS) -max_len=65536 \
			-print_final_stats=1 -artifact_prefix=$(B)/fuzz/$$t- \
			$(B)/fuzz/corpus-$$t tests/fuzz/$$t || exit 1; done

# make fuzz-seeds: rewrite the seed-* files of tests/fuzz/tablet and
# tests/fuzz/log from tablets and logs the library writes (tests/fuzz/mkseeds.c).
$(B)/fuzz/mkseeds: tests/fuzz/mkseeds.c tests/fuzz/fuzz_db.h $(STATIC_LIB)
	@mkdir -p $(dir $@)
	$(say) CC $@
	$(Q)$(CC) $(CFLAGS_ALL) -o $@ $< $(STATIC_LIB) $(LIB_LIBS)

fuzz-seeds: $(B)/fuzz/mkseeds
	$(B)/fuzz/mkseeds tests/fuzz

# --- run ----------------------------------------------------------------
# make run RUN_ARGS='--listen ...': options for tsstored (scripts/run.sh).
run: all
	@scripts/run.sh $(B) $(RUN_ARGS)

# --- install ------------------------------------------------------------
# install writes libtsstore.pc for its own PREFIX (and LIBDIR, INCDIR),
# whatever PREFIX the build had.  It records in $(B)/install-dirs the
# directories it had to create, so that uninstall (same PREFIX and
# DESTDIR) removes those again when they are left empty, and no other:
# the prefix is left as it was.
INSTALL_DIRS = $(if $(PROGRAMS),$(BINDIR)) $(LIBDIR) $(LIBDIR)/pkgconfig $(INCDIR) $(MANDIR) \
	$(if $(filter 1,$(WITH_TOOLS)),$(COMPDIR)) $(sort $(foreach m,$(INSTALL_MANPAGES),$(MANDIR)/man$(subst .,,$(suffix $(m))))) \
	$(if $(filter 1,$(WITH_DAEMON)),$(UNITDIR) $(DOCDIR))
install: all
	@mkdir -p $(B) && touch $(B)/install-dirs
	@for d in $(INSTALL_DIRS:%=$(DESTDIR)%); do \
		while [ ! -d "$$d" ]; do grep -qxF "$$d" $(B)/install-dirs || \
			echo "$$d" >> $(B)/install-dirs; d=$$(dirname "$$d"); done; done
	install -d $(INSTALL_DIRS:%=$(DESTDIR)%)
	$(if $(PROGRAMS),install -m 0755 $(PROGRAMS) $(DESTDIR)$(BINDIR)/)
	$(if $(filter 1,$(WITH_TOOLS)),install -m 0644 tools/completion.bash $(DESTDIR)$(COMPDIR)/tsstore)
	install -m 0644 $(STATIC_LIB) $(DESTDIR)$(LIBDIR)/
	install -m 0755 $(SHARED_LIB) $(DESTDIR)$(LIBDIR)/
	$(if $(SQLITE_EXT),install -m 0755 $(SQLITE_EXT) $(DESTDIR)$(LIBDIR)/)
	ln -sf libtsstore.so.$(LIB_VERSION) $(DESTDIR)$(LIBDIR)/$(SONAME)
	ln -sf $(SONAME) $(DESTDIR)$(LIBDIR)/libtsstore.so
	install -m 0644 include/tsstore.h $(DESTDIR)$(INCDIR)/
	$(PC_SED) > $(DESTDIR)$(LIBDIR)/pkgconfig/libtsstore.pc
	@for m in $(INSTALL_MANPAGES); do \
		s=$${m##*.}; echo install -m 0644 $$m $(DESTDIR)$(MANDIR)/man$$s/; \
		install -m 0644 $$m $(DESTDIR)$(MANDIR)/man$$s/ || exit 1; done
ifeq ($(WITH_DAEMON),1)
	sed -e 's|@BINDIR@|$(BINDIR)|g' daemon/tsstored.service.in > $(DESTDIR)$(UNITDIR)/tsstored.service
	chmod 0644 $(DESTDIR)$(UNITDIR)/tsstored.service
	install -m 0644 daemon/tsstore.conf.example $(DESTDIR)$(DOCDIR)/
endif

# Every file install can put there, whatever this build was configured
# with; then the directories install created, deepest first, if empty.
UNINSTALL_FILES = $(BINDIR)/tsstore $(BINDIR)/tsstored $(BINDIR)/tsstore-fuse \
	$(LIBDIR)/libtsstore.a $(LIBDIR)/libtsstore.so.$(LIB_VERSION) $(LIBDIR)/$(SONAME) \
	$(LIBDIR)/libtsstore.so $(LIBDIR)/libtsstore_sqlite.so $(LIBDIR)/pkgconfig/libtsstore.pc \
	$(INCDIR)/tsstore.h $(COMPDIR)/tsstore $(foreach m,$(MANPAGES),$(MANDIR)/man$(subst .,,$(suffix $(m)))/$(notdir $(m))) \
	$(UNITDIR)/tsstored.service $(DOCDIR)/tsstore.conf.example
uninstall:
	rm -f $(UNINSTALL_FILES:%=$(DESTDIR)%)
	@if [ -f $(B)/install-dirs ]; then \
		for d in $$(sort -r $(B)/install-dirs); do \
			rmdir "$$d" 2>/dev/null && echo "rmdir $$d"; done; \
		for d in $$(cat $(B)/install-dirs); do [ -d "$$d" ] && echo "$$d"; done \
			> $(B)/install-dirs.new; mv $(B)/install-dirs.new $(B)/install-dirs; \
	fi; true

-include $(wildcard $(addsuffix /*.d,$(addprefix $(B)/,lib smallseg/lib common wire tools daemon fuse bench)))

clean:
	rm -rf build build-san build-tsan

distclean: clean
	rm -rf config.mk config.log config.status configure configure~ autom4te.cache aclocal.m4
