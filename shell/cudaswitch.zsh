# cudaswitch hook for zsh. Load it from ~/.zshrc with:  eval "$(cudaswitch init zsh)"
#
# precmd computes, in pure zsh (no process started), a fingerprint of the nearest project file:
# its path and content. Only when it differs from the last one applied does it run
# `cudaswitch hook-env`. precmd hooks do not change $? as the prompt sees it; we return it anyway.

# The program itself: the absolute path `cudaswitch init` wrote above (as direnv and mise do, so a
# launcher shim such as pyenv's cannot rewrite PATH before we read it), else the one on PATH.
__cudaswitch_found() {
    if [[ -n ${__cudaswitch_bin-} ]]; then
        [[ -x $__cudaswitch_bin ]]
    else
        (( $+commands[cudaswitch] ))
    fi
}

cudaswitch() {
    case "${1-}" in
        use|off)
            local __cudaswitch_out __cudaswitch_arg
            # An explicit --shell asks for the program's output (to save or read it), not a switch.
            for __cudaswitch_arg in "$@"; do
                case $__cudaswitch_arg in
                    --shell|--shell=*) CUDASWITCH_HOOK=zsh command "${__cudaswitch_bin:-cudaswitch}" "$@"; return ;;
                esac
            done
            __cudaswitch_out=$(CUDASWITCH_HOOK=zsh command "${__cudaswitch_bin:-cudaswitch}" "$@" --shell zsh) || return $?
            eval "$__cudaswitch_out"
            # After `off` the project file (if any) applies again at the next prompt.
            [[ $1 == off ]] && __cudaswitch_fp=$'\x1d'
            return 0
            ;;
        *) CUDASWITCH_HOOK=zsh command "${__cudaswitch_bin:-cudaswitch}" "$@" ;;
    esac
}

__cudaswitch_fingerprint() {
    emulate -L zsh
    local dir=$PWD fp="" f content
    while :; do
        for f in "$dir/.cudaversion" "$dir/.tool-versions" "$dir/pyproject.toml"; do
            [[ -e $f || -L $f ]] || continue
            content=""
            if [[ -f $f && -r $f ]]; then
                # read fails at end of file: `|| :` keeps a user's ERR_EXIT or ZERR trap quiet.
                IFS= read -r -d '' content <"$f" || :
            fi
            case $f in
                */.cudaversion) __cudaswitch_fp_now="$fp$f"$'\x1f'"$content"; return 0 ;;
                */.tool-versions) [[ $content == *cuda* ]] || continue ;;
                *) [[ $content == *cudaswitch* ]] || continue ;;
            esac
            fp+="$f"$'\x1f'"$content"$'\x1e'
        done
        [[ -z $dir || $dir == / ]] && break
        dir=${dir%/*}
    done
    __cudaswitch_fp_now=$fp
}

__cudaswitch_hook() {
    local __cudaswitch_status=$?
    __cudaswitch_fingerprint
    if [[ $__cudaswitch_fp_now != "${__cudaswitch_fp-}" ]]; then
        __cudaswitch_fp=$__cudaswitch_fp_now
        if ! __cudaswitch_found; then
            print -u2 "cudaswitch: ${__cudaswitch_bin:-cudaswitch} not found; project CUDA versions are not applied"
        else
            local __cudaswitch_out
            if __cudaswitch_out=$(command "${__cudaswitch_bin:-cudaswitch}" hook-env --shell zsh); then
                eval "$__cudaswitch_out"
            fi
        fi
    fi
    return $__cudaswitch_status
}

typeset -g __cudaswitch_fp=$'\x1d'
autoload -Uz add-zsh-hook
add-zsh-hook precmd __cudaswitch_hook
