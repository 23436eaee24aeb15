# completion.bash -- bash completion for tsstore(1), installed by
# `make install` as $(PREFIX)/share/bash-completion/completions/tsstore
# (bash-completion loads it the first time `tsstore` is completed; or
# source it).
#
# What it completes, and where it learns it, so that a command or option
# added to the program needs no change here:
#   - the global options (-d, -s, ...) and the commands: from
#     `tsstore --help` (the "Commands:" list);
#   - a command's options, which of them take a value, and the values of
#     those whose usage spells a list ("--format tsv|jsonl|csv"): from the
#     usage line of `tsstore COMMAND --help`;
#   - table names for a command's first operand, and for an option whose
#     value the usage calls SOURCE (create-rollup --from): `tsstore [-d|-s ...]
#     tables`, quietly (nothing on a failure; through tsstored, at most
#     2 s), with the -d/-s/--token-file given before the command;
#   - files for FILE (insert, load; --output), directories for DEST
#     (snapshot) and -d, files for -s and --token-file.
# Only plain bash is used (compgen, COMPREPLY), not bash-completion's
# helpers, so it works wherever bash does.

# _tsstore_usage PROG COMMAND: the usage line of COMMAND.
_tsstore_usage()
{
	"$1" "$2" --help 2>/dev/null | sed -n '1s/^usage: [^ ]* //p'
}

# _tsstore_commands PROG: the command names, one per line.
_tsstore_commands()
{
	"$1" --help 2>/dev/null | sed -n '/^Commands:/,/^$/s/^  \([a-z][a-z-]*\).*/\1/p'
}

# _tsstore_option_arg USAGE OPTION: what follows OPTION in USAGE when it
# takes a value ("N", "tsv|jsonl|csv"); nothing (status 1) when it takes
# none.
_tsstore_option_arg()
{
	local word
	word=$(printf '%s\n' "$1" | grep -o -- "$2 [^][ ]*" | head -n 1)
	[ -n "$word" ] || return 1
	printf '%s\n' "${word#"$2 "}"
}

# _tsstore_files -f|-d: the files (-f) or directories (-d) whose names
# start with $cur, marked as names so that bash quotes them and ends a
# directory with a slash.
_tsstore_files()
{
	local IFS=$'\n'
	compopt -o filenames 2>/dev/null
	COMPREPLY=($(compgen "$1" -- "$cur"))
}

_tsstore()
{
	local prog=${COMP_WORDS[0]} cur=${COMP_WORDS[COMP_CWORD]}
	local prev= i cmd= cmdi=0 usage arg operands=0
	local -a global=()
	[ "$COMP_CWORD" -gt 0 ] && prev=${COMP_WORDS[COMP_CWORD - 1]}
	COMPREPLY=()

	# The global options before the command, and the command.
	for ((i = 1; i < COMP_CWORD; i++)); do
		case ${COMP_WORDS[i]} in
		-d | -s | --token-file)
			global+=("${COMP_WORDS[i]}" "${COMP_WORDS[i + 1]}")
			i=$((i + 1)) ;;
		--timeout) i=$((i + 1)) ;;
		-*) ;;
		*) cmd=${COMP_WORDS[i]} cmdi=$i; break ;;
		esac
	done

	if [ -z "$cmd" ]; then
		case $prev in
		-d) _tsstore_files -d; return ;;
		-s | --token-file) _tsstore_files -f; return ;;
		--timeout) return ;;
		esac
		if [[ $cur == -* ]]; then
			COMPREPLY=($(compgen -W '-d -s --timeout --token-file -h --help -V --version' -- "$cur"))
		else
			COMPREPLY=($(compgen -W "$(_tsstore_commands "$prog")" -- "$cur"))
		fi
		return
	fi

	usage=$(_tsstore_usage "$prog" "$cmd")
	# The value of an option: a list's words, a file, or nothing to offer.
	if [[ $prev == --* ]] && arg=$(_tsstore_option_arg "$usage" "$prev"); then
		case $arg in
		*'|'*) COMPREPLY=($(compgen -W "${arg//|/ }" -- "$cur")) ;;
		FILE) _tsstore_files -f ;;
		SOURCE) # create-rollup --from: a table
			COMPREPLY=($(compgen -W "$("$prog" --timeout 2s "${global[@]}" tables 2>/dev/null)" -- "$cur")) ;;
		esac
		return
	fi
	if [[ $cur == -* ]]; then
		COMPREPLY=($(compgen -W "$(printf '%s\n' "$usage" | grep -o -- '--[a-z][a-z-]*' | sort -u) --help" -- "$cur"))
		return
	fi

	# Which operand this is: the words after the command that are neither
	# options nor their values.
	for ((i = cmdi + 1; i < COMP_CWORD; i++)); do
		case ${COMP_WORDS[i]} in
		--*) _tsstore_option_arg "$usage" "${COMP_WORDS[i]}" >/dev/null && i=$((i + 1)) ;;
		*) operands=$((operands + 1)) ;;
		esac
	done
	case $operands:$usage in
	0:*' TABLE'* | 0:*' [TABLE]'*)
		[[ $usage == create* ]] && return # a new name
		COMPREPLY=($(compgen -W "$("$prog" --timeout 2s "${global[@]}" tables 2>/dev/null)" -- "$cur")) ;;
	0:*' DEST'*) _tsstore_files -d ;;
	1:*'[FILE]'*) _tsstore_files -f ;;
	esac
}

complete -F _tsstore tsstore
