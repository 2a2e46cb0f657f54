# cudaswitch hook for bash. Load it from ~/.bashrc with:  eval "$(cudaswitch init bash)"
#
# On every prompt the hook computes, in pure bash (no process started), a fingerprint of the
# nearest project file: its path and content. Only when that differs from the last one applied
# does it run `cudaswitch hook-env`. It keeps $? for the prompt and other PROMPT_COMMAND parts.

# The program itself: the absolute path `cudaswitch init` wrote above (as direnv and mise do, so a
# launcher shim such as pyenv's cannot rewrite PATH before we read it), else the one on PATH.
__cudaswitch_found() {
    if [[ -n ${__cudaswitch_bin-} ]]; then
        [[ -x $__cudaswitch_bin ]]
    else
        type -P cudaswitch >/dev/null  # -P: the program, not our function
    fi
}

# `cudaswitch use ...` / `cudaswitch off` change this shell, like `conda activate`. CUDASWITCH_HOOK
# (set for the program only) tells it the hook is loaded, so its hints name commands that work here.
cudaswitch() {
    case "${1-}" in
        use|off)
            local __cudaswitch_out __cudaswitch_arg
            # An explicit --shell asks for the program's output (to save or read it), not a switch.
            for __cudaswitch_arg in "$@"; do
                case $__cudaswitch_arg in
                    --shell|--shell=*) CUDASWITCH_HOOK=bash command "${__cudaswitch_bin:-cudaswitch}" "$@"; return ;;
                esac
            done
            __cudaswitch_out=$(CUDASWITCH_HOOK=bash command "${__cudaswitch_bin:-cudaswitch}" "$@" --shell bash) || return $?
            eval "$__cudaswitch_out"
            # After `off` the project file (if any) applies again at the next prompt.
            [[ $1 == off ]] && __cudaswitch_fp=$'\x1d'
            return 0
            ;;
        *) CUDASWITCH_HOOK=bash command "${__cudaswitch_bin:-cudaswitch}" "$@" ;;
    esac
}

# Sets __cudaswitch_fp_now to "path<US>content" of each candidate project file from $PWD up to the
# nearest .cudaversion. .tool-versions / pyproject.toml count only when they mention cuda.
__cudaswitch_fingerprint() {
    local dir=$PWD fp="" f content
    while :; do
        for f in "$dir/.cudaversion" "$dir/.tool-versions" "$dir/pyproject.toml"; do
            [[ -e $f || -L $f ]] || continue
            content=""
            if [[ -f $f && -r $f ]]; then
                # read fails at end of file: `|| :` keeps a user's `set -e` or ERR trap quiet.
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
        # Record first: a failing hook-env reports once, not at every prompt.
        __cudaswitch_fp=$__cudaswitch_fp_now
        if ! __cudaswitch_found; then
            printf 'cudaswitch: %s not found; project CUDA versions are not applied\n' "${__cudaswitch_bin:-cudaswitch}" >&2
        else
            local __cudaswitch_out
            if __cudaswitch_out=$(command "${__cudaswitch_bin:-cudaswitch}" hook-env --shell bash); then
                eval "$__cudaswitch_out"
            fi
        fi
    fi
    return $__cudaswitch_status
}

# A new shell starts with a fingerprint that matches nothing, so its first prompt applies the
# project file or the global default once.
__cudaswitch_fp=$'\x1d'
if [[ ";${PROMPT_COMMAND[*]-};" != *";__cudaswitch_hook;"* ]]; then
    PROMPT_COMMAND="__cudaswitch_hook${PROMPT_COMMAND:+;$PROMPT_COMMAND}"
fi
