
# Tab completion for cudaswitch in bash (typer's protocol; REQUEST values from the cached registry).
# read, not COMPREPLY=( $(...) ): an unquoted substitution would also glob each candidate; and
# bash inserts a COMPREPLY word as it is, so each is quoted for the line (%q leaves plain words as they are).
_cudaswitch_complete() {
    local __cudaswitch_word __cudaswitch_quoted
    COMPREPLY=()
    while IFS= read -r __cudaswitch_word; do
        [[ -n $__cudaswitch_word ]] || continue
        printf -v __cudaswitch_quoted %q "$__cudaswitch_word"
        COMPREPLY+=("$__cudaswitch_quoted")
    done < <(env COMP_WORDS="${COMP_WORDS[*]}" COMP_CWORD="$COMP_CWORD" _CUDASWITCH_COMPLETE=complete_bash \
                 "${__cudaswitch_bin:-cudaswitch}" 2>/dev/null)
    return 0
}
complete -o default -F _cudaswitch_complete cudaswitch
