#!/bin/sh
# test_include_graph.sh -- no source directory's modules include each
# other in a circle (scripts/include-graph.sh on lib/, tools/, common/,
# wire/, daemon/, sqlite/ and fuse/), and the checker finds the circles it
# should: two modules including each other, three headers in a ring
# (an include indented and commented), and nothing in a tree whose
# modules depend one way or include only files of other directories.
#
# Usage: tests/cli/test_include_graph.sh TSSTORE-or-BUILDDIR (see lib.sh;
# the binary is not used).
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
graph=$root/scripts/include-graph.sh
. "$here/lib.sh"

check "include-graph/tree" 0 "" "" \
	sh "$graph" "$root/lib" "$root/tools" "$root/common" "$root/wire" "$root/daemon" \
	"$root/sqlite" "$root/fuse"

# a.c includes b.h and b.c includes a.h: one cycle of two modules.
mkdir two
printf '#include "a.h"\n#include "b.h"\n' >two/a.c
printf '#include "a.h"\n' >two/b.c
: >two/a.h
: >two/b.h
check "include-graph/two-modules" 1 "two: cycle: a b\n" "" sh "$graph" two

# x.h -> y.h -> z.h -> x.h, headers only; w.c includes x.h from outside
# the ring and is not part of it.
mkdir ring
printf '#include "y.h"\n' >ring/x.h
printf '#include <stdio.h>\n#include "z.h"\n' >ring/y.h
printf '  #  include "x.h" /* back to the start */\n' >ring/z.h
printf '#include "x.h"\n' >ring/w.c
check "include-graph/header-ring" 1 "ring: cycle: x y z\n" "" sh "$graph" ring

# One way: top -> mid -> low, top -> low; a module's own header, system
# headers and headers of other directories ("tsstore.h", "../two/a.h")
# are not edges.
mkdir dag
printf '#include "top.h"\n#include "mid.h"\n#include "low.h"\n#include "tsstore.h"\n' >dag/top.c
printf '#include "mid.h"\n#include "low.h"\n#include "../two/a.h"\n' >dag/mid.c
printf '#include <stdio.h>\n#include "low.h"\n' >dag/low.c
: >dag/top.h
printf '#include "low.h"\n' >dag/mid.h
: >dag/low.h
check "include-graph/one-way" 0 "" "" sh "$graph" dag

# Several directories: each is its own graph, and one cycle fails all.
check "include-graph/dirs" 1 "two: cycle: a b\n" "" sh "$graph" dag two dag
check "include-graph/usage" 2 "" "usage: include-graph.sh DIR...\n" sh "$graph"
check "include-graph/not-a-dir" 2 "" "include-graph.sh: nowhere: not a directory\n" \
	sh "$graph" nowhere
finish
