# The shell functions the bash and zsh hooks share (one text; hook.py fills in the shell's name).
cudaswitch() {
    case "${1-}" in
        use|off)
            local __cudaswitch_out __cudaswitch_arg
            # An explicit --shell asks for the program's output (to save or read it), not a switch.
            for __cudaswitch_arg in "$@"; do
                case $__cudaswitch_arg in
                    --shell|--shell=*) CUDASWITCH_HOOK=@SHELL@ command "${__cudaswitch_bin:-cudaswitch}" "$@"; return ;;
                esac
            done
            __cudaswitch_out=$(__cudaswitch_export; CUDASWITCH_HOOK=@SHELL@ command "${__cudaswitch_bin:-cudaswitch}" "$@" --shell @SHELL@) || return $?
            eval "$__cudaswitch_out"
            # After `off` the project file (if any) applies again at the next prompt.
            [[ $1 == off ]] && __cudaswitch_fp=$'\x1d'
            return 0
            ;;
        *) CUDASWITCH_HOOK=@SHELL@ command "${__cudaswitch_bin:-cudaswitch}" "$@" ;;
    esac
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
            if __cudaswitch_out=$(__cudaswitch_export; command "${__cudaswitch_bin:-cudaswitch}" hook-env --shell @SHELL@); then
                eval "$__cudaswitch_out"
            fi
        fi
    fi
    return $__cudaswitch_status
}

# @FINGERPRINT_END@: how the fingerprint function of both hooks ends.
            case $f in
                @RULES@
            esac
            fp+="$f"$'\x1f'"$meta$content"$'\x1e'
        done
        [[ -z $dir || $dir == / ]] && break
        dir=${dir%/*}
    done
    __cudaswitch_fp_now=$fp
}
