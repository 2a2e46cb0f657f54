"""Tab completion for the hooked shells, in typer's completion protocol (the program answers when
_CUDASWITCH_COMPLETE names the shell). Appended to `init`'s hook so a user who loads the hook gets
completion with no second rc line. REQUEST values come from the cached registry only
(cli/complete.py): a TAB never starts discovery. The program is $__cudaswitch_bin, the absolute
path `init` wrote, so the completion runs the same program as the hook, never a shell function."""

BASH = r'''
_cudaswitch_complete() {
    local IFS=$'\n'
    COMPREPLY=( $(env COMP_WORDS="${COMP_WORDS[*]}" COMP_CWORD="$COMP_CWORD" _CUDASWITCH_COMPLETE=complete_bash \
                  "${__cudaswitch_bin:-cudaswitch}" 2>/dev/null) )
    return 0
}
complete -o default -F _cudaswitch_complete cudaswitch
'''

# compdef exists once compinit ran; a zshrc that runs compinit after this hook gets it at the first prompt.
ZSH = r'''
_cudaswitch_complete() {
    eval "$(env _TYPER_COMPLETE_ARGS="${words[1,$CURRENT]}" _CUDASWITCH_COMPLETE=complete_zsh \
            "${__cudaswitch_bin:-cudaswitch}" 2>/dev/null)"
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
