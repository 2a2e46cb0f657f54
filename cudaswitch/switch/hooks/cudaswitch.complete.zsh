
# Tab completion for cudaswitch in zsh. It asks for the program's bash answer (one candidate a line):
# typer's zsh answer is code to eval, whose quoting lets a `$(...)` in a value run; compadd inserts
# each word quoted for the line. compdef exists once compinit ran; a zshrc that runs compinit after
# this hook gets it at the first prompt.
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
