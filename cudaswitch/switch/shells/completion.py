r"""Tab completion for the hooked shells, in typer's completion protocol (the program answers when
_CUDASWITCH_COMPLETE names the shell). Appended to `init`'s hook so a user who loads the hook gets
completion with no second rc line. REQUEST values come from the cached registry only
(cli/complete.py): a TAB never starts discovery. The program is $__cudaswitch_bin, the absolute
path `init` wrote, so the completion runs the same program as the hook, never a shell function.

Candidates are data and reach each shell as data: one per line, read into an array, never through
eval. zsh uses the program's bash protocol for that (typer's zsh answer is code to eval, whose
quoting lets a `\$(...)` in a value run), and compadd inserts each word quoted for the line."""

# read, not COMPREPLY=( $(...) ): an unquoted substitution would also glob each candidate; and
# bash inserts a COMPREPLY word as it is, so each is quoted for the line (%q leaves plain words as they are).
BASH = r'''
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
'''

# compdef exists once compinit ran; a zshrc that runs compinit after this hook gets it at the first prompt.
ZSH = r'''
_cudaswitch_complete() {
    local -a __cudaswitch_words
    __cudaswitch_words=("${(@f)$(env COMP_WORDS="${words[1,$CURRENT]}" COMP_CWORD=$((CURRENT - 1)) \
            _CUDASWITCH_COMPLETE=complete_bash "${__cudaswitch_bin:-cudaswitch}" 2>/dev/null)}")
    __cudaswitch_words=(${__cudaswitch_words:#})
    if (( ${#__cudaswitch_words} )); then
        compadd -- "${__cudaswitch_words[@]}"
    else
        _files
    fi
}
_cudaswitch_compdef() {
    (( $+functions[compdef] )) || return 0
    compdef _cudaswitch_complete cudaswitch
    precmd_functions=(${precmd_functions:#_cudaswitch_compdef})
}
_cudaswitch_compdef
(( $+functions[compdef] )) || precmd_functions+=(_cudaswitch_compdef)
'''

# The `complete` line is one line of fish; it is split here only across adjacent string literals.
FISH = (r'''
function __cudaswitch_complete_program
    if set -q __cudaswitch_bin; echo $__cudaswitch_bin; else; echo cudaswitch; end
end
complete --command cudaswitch --no-files '''
        r'--arguments "(env _CUDASWITCH_COMPLETE=complete_fish _TYPER_COMPLETE_FISH_ACTION=get-args '
        r'_TYPER_COMPLETE_ARGS=(commandline -cp) (__cudaswitch_complete_program))" '
        r'--condition "env _CUDASWITCH_COMPLETE=complete_fish _TYPER_COMPLETE_FISH_ACTION=is-args '
        r'''_TYPER_COMPLETE_ARGS=(commandline -cp) (__cudaswitch_complete_program)"
''')

SCRIPTS = {"bash": BASH, "zsh": ZSH, "fish": FISH}


def script(shell: str) -> str:
    return SCRIPTS[shell]
