#!/bin/sh
# include-graph.sh -- fail when the modules of a source directory include
# each other in a circle.
#
# A module is a file pair X.c + X.h (or either alone) of one directory;
# module A depends on module B when A.c or A.h has `#include "B.h"` (or
# "B.c") and that file is in the same directory.  Includes of other
# directories' headers, of system headers (<...>) and of a module's own
# header are not edges.  For each directory, every strongly connected
# component of more than one module -- a set of modules each of which
# reaches every other through includes -- is printed on one line,
#
#   DIR: cycle: A B C
#
# its modules in alphabetical order.  lib/README.md says how lib/'s
# modules are layered so that none is; tests/cli/test_include_graph.sh
# runs this on the tree under make check.  POSIX sh and awk only.
#
# Usage: scripts/include-graph.sh DIR...
# Exit status: 0 when no directory has a cycle, 1 when one has, 2 on a
# usage error.
set -u

if [ $# -eq 0 ]; then
	echo "usage: include-graph.sh DIR..." >&2
	exit 2
fi
status=0
for dir in "$@"; do
	if [ ! -d "$dir" ]; then
		echo "include-graph.sh: $dir: not a directory" >&2
		exit 2
	fi
	files=$(cd "$dir" && ls | grep '\.[ch]$')
	[ -n "$files" ] || continue
	# Tarjan's algorithm: one depth-first search numbers each module
	# (idx) and keeps the lowest number it reaches back to (low); a
	# module whose low is its own number closes a component, which is
	# then on the stack above it.
	out=$(cd "$dir" && awk -v dir="$dir" -v files="$files" '
		function node(v) {
			if (!(v in seen)) {
				seen[v] = 1
				order[++nnodes] = v
			}
		}
		function visit(v,    i, w, c, j, k, t, line) {
			idx[v] = low[v] = counter++
			stack[++sp] = v
			on[v] = 1
			for (i = 1; i <= nadj[v]; i++) {
				w = adj[v, i]
				if (!(w in idx)) {
					visit(w)
					if (low[w] < low[v])
						low[v] = low[w]
				} else if (on[w] && idx[w] < low[v]) {
					low[v] = idx[w]
				}
			}
			if (low[v] != idx[v])
				return
			c = 0
			do {
				w = stack[sp--]
				on[w] = 0
				member[++c] = w
			} while (w != v)
			if (c < 2)
				return
			for (j = 2; j <= c; j++)
				for (k = j; k > 1 && member[k - 1] > member[k]; k--) {
					t = member[k]
					member[k] = member[k - 1]
					member[k - 1] = t
				}
			line = dir ": cycle:"
			for (j = 1; j <= c; j++)
				line = line " " member[j]
			print line
		}
		BEGIN {
			n = split(files, f, "\n")
			for (i = 1; i <= n; i++)
				have[f[i]] = 1
		}
		FNR == 1 {
			m = FILENAME
			sub(/\.[ch]$/, "", m)
			node(m)
		}
		/^[ \t]*#[ \t]*include[ \t]*"/ {
			s = $0
			sub(/^[^"]*"/, "", s)
			sub(/".*/, "", s)
			if (!(s in have))
				next
			t = s
			sub(/\.[ch]$/, "", t)
			if (t == m || ((m, t) in edge))
				next
			edge[m, t] = 1
			node(t)
			adj[m, ++nadj[m]] = t
		}
		END {
			for (i = 1; i <= nnodes; i++)
				if (!(order[i] in idx))
					visit(order[i])
		}' $files)
	if [ -n "$out" ]; then
		echo "$out"
		status=1
	fi
done
exit $status
