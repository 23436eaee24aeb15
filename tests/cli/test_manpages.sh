#!/bin/sh
# test_manpages.sh -- the man pages against the programs and the header:
#   1. every man/*.[1-8] page renders with no warning at all:
#      `groff -t -man -ww -z PAGE` prints nothing and exits 0 (skipped,
#      with a SKIP line, only when groff is not installed; scripts/deps.sh
#      installs it with groff-base);
#   2. every option, long (--name) and short (-x), that `tsstore --help`
#      prints appears in man/tsstore.1; every command that it lists has a
#      subsection (.SS COMMAND) of its own there, and every option that
#      `tsstore COMMAND --help` prints appears in that subsection; every
#      option that `tsstored --help` and `tsstore-fuse --help` print
#      appears in man/tsstored.8 and man/tsstore-fuse.8;
#   3. every function declared TS_EXTERN in include/tsstore.h is named in
#      man/libtsstore.3.
# A page "has" an option when its source, with the font escapes, \& and
# \% removed and \- read as -, holds the option between characters that
# cannot be part of an option name.
#
# Usage: tests/cli/test_manpages.sh TSSTORE
#   TSSTORE is the tsstore binary, or a build directory holding
#   bin/tsstore (scripts/run-tests.sh passes the build directory);
#   tsstored must be beside it.  The pages and the header are taken from
#   the source tree this script is in.  The last line is "N passed, M
#   failed"; the exit status is 1 when anything failed.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd) || exit 2
. "$(dirname "$0")/lib.sh"
mandir=$top/man
header=$top/include/tsstore.h

# miss NAME WHY: a failed check whose outputs are of no interest.
miss() {
	: >"$tmp/out"
	: >"$tmp/err"
	fail "$1" "$2"
}

# plain PAGE: the page's source as text to search for options.
plain() {
	sed -e 's/\\f\[[^]]*\]//g' -e 's/\\f([A-Za-z][A-Za-z]//g' -e 's/\\f[A-Za-z1-4]//g' \
	    -e 's/\\-/-/g' -e 's/\\(hy/-/g' -e 's/\\&//g' -e 's/\\%//g' "$1"
}

# long_options, short_options: the options named in the text on stdin,
# one per line, sorted.  A short option is a dash and one letter that no
# letter, digit or dash precedes or follows (not the "-a" of "non-a").
long_options() {
	grep -oE -- '--[a-z][a-z0-9-]*' | sed 's/-*$//' | sort -u
}
short_options() {
	grep -oE -- '(^|[^A-Za-z0-9_-])-[A-Za-z]([^A-Za-z0-9_-]|$)' |
		sed 's/^.*\(-[A-Za-z]\).*$/\1/' | sort -u
}

# has_option FILE OPTION: FILE (plain text) names OPTION.
has_option() {
	grep -qE -- "(^|[^A-Za-z0-9_-])$2([^A-Za-z0-9_-]|$)" "$1"
}

# check_options NAME HELP TEXT WHERE: every option in the file HELP is in
# the file TEXT; one check per option; WHERE names TEXT in failures.
# An empty HELP is not checked here (the caller knows whether it may be).
check_options() {
	for o in $( (long_options <"$2"; short_options <"$2") | sort -u); do
		if has_option "$3" "$o"; then
			pass
		else
			miss "$1" "$o is not in $4"
		fi
	done
}

# ---- 1. every page renders without a warning ----

pages=$(ls "$mandir"/*.[1-8] 2>/dev/null)
if [ -z "$pages" ]; then
	miss groff "no man pages in $mandir"
elif ! command -v groff >/dev/null 2>&1; then
	skip "groff is not installed (scripts/deps.sh installs groff-base): the pages were not rendered"
else
	for page in $pages; do
		groff -t -man -ww -z "$page" >"$tmp/groff.out" 2>&1
		status=$?
		if [ "$status" -ne 0 ] || [ -s "$tmp/groff.out" ]; then
			: >"$tmp/err"
			cp "$tmp/groff.out" "$tmp/out"
			fail "groff/$(basename "$page")" "groff -t -man -ww -z: exit status $status, output:"
		else
			pass
		fi
	done
fi

# ---- 2. the options of the programs are in their pages ----

page1=$tmp/tsstore.1.txt
plain "$mandir/tsstore.1" >"$page1" 2>/dev/null || miss tsstore.1 "no $mandir/tsstore.1"

# tsstore --help: every option anywhere in the page.
"$bin" --help >"$tmp/help" 2>"$tmp/help.err"
status=$?
if [ "$status" -ne 0 ] || [ -s "$tmp/help.err" ]; then
	cp "$tmp/help" "$tmp/out"
	cp "$tmp/help.err" "$tmp/err"
	fail help "tsstore --help: exit status $status, want 0 and nothing on stderr"
fi
# a help that names no option or command means the extraction broke
if [ -z "$(long_options <"$tmp/help")" ] || [ -z "$(short_options <"$tmp/help")" ]; then
	miss help "found no long or no short option in tsstore --help"
else
	check_options help "$tmp/help" "$page1" "man/tsstore.1"
fi

# The commands: the lines "  NAME ..." of the Commands section.
commands=$(sed -n '/^Commands:/,/^$/s/^  \([a-z][a-z]*\)\( .*\)\{0,1\}$/\1/p' "$tmp/help")
[ -n "$commands" ] || miss commands "found no command in tsstore --help"

for c in $commands; do
	# the subsection .SS c, up to the next .SS or .SH
	awk -v c="$c" '/^\.S[HS]([ \t]|$)/ { n = $2; gsub(/"/, "", n); inside = ($1 == ".SS" && n == c); next }
	               inside' "$page1" >"$tmp/section"
	if [ -s "$tmp/section" ]; then
		pass
	else
		miss "section/$c" "man/tsstore.1 has no subsection \".SS $c\" under COMMANDS"
	fi
	"$bin" "$c" --help >"$tmp/out" 2>"$tmp/err"
	status=$?
	if [ "$status" -ne 0 ] || ! head -1 "$tmp/out" | grep -q "^usage: tsstore $c\( \|$\)"; then
		fail "help/$c" "tsstore $c --help: exit status $status, want 0 and \"usage: tsstore $c ...\""
		continue
	fi
	pass
	check_options "options/$c" "$tmp/out" "$tmp/section" "the subsection \"$c\" of man/tsstore.1"
done

# tsstored --help and tsstore-fuse --help: every option anywhere in their
# pages, tsstored(8) and tsstore-fuse(8).
for prog in tsstored tsstore-fuse; do
	exe=$(dirname "$bin")/$prog
	if [ ! -x "$exe" ]; then
		miss "$prog" "$exe: not an executable"
		continue
	fi
	plain "$mandir/$prog.8" >"$tmp/$prog.8.txt" 2>/dev/null ||
		miss "$prog.8" "no $mandir/$prog.8"
	"$exe" --help >"$tmp/help" 2>"$tmp/help.err"
	status=$?
	if [ "$status" -ne 0 ] || [ -z "$(long_options <"$tmp/help")" ]; then
		cp "$tmp/help" "$tmp/out"
		cp "$tmp/help.err" "$tmp/err"
		fail "${prog}_help" "$prog --help: exit status $status, want 0 and its options"
	else
		check_options "$prog" "$tmp/help" "$tmp/$prog.8.txt" "man/$prog.8"
	fi
done

# ---- 3. the public functions are in libtsstore(3) ----

# "TS_EXTERN <type> name(": the word before the first parenthesis.
grep '^[[:space:]]*TS_EXTERN[[:space:]]' "$header" >"$tmp/extern"
sed -n 's/^[[:space:]]*TS_EXTERN[^(]*[^A-Za-z0-9_]\([A-Za-z_][A-Za-z0-9_]*\)[[:space:]]*(.*/\1/p' \
	"$tmp/extern" >"$tmp/functions"
if [ ! -s "$tmp/functions" ] || [ "$(wc -l <"$tmp/functions")" -ne "$(wc -l <"$tmp/extern")" ]; then
	cp "$tmp/extern" "$tmp/out"
	: >"$tmp/err"
	fail functions "could not find the name of every TS_EXTERN declaration of $header"
fi
plain "$mandir/libtsstore.3" >"$tmp/libtsstore.3.txt" 2>/dev/null ||
	miss libtsstore.3 "no $mandir/libtsstore.3"
for f in $(cat "$tmp/functions"); do
	if grep -qw -- "$f" "$tmp/libtsstore.3.txt"; then
		pass
	else
		miss "function/$f" "$f (include/tsstore.h) is not in man/libtsstore.3"
	fi
done

finish
