# cudaswitch hook for zsh. Load it from ~/.zshrc with:  eval "$(cudaswitch init zsh)"
#
# precmd computes, in pure zsh (no process started), a fingerprint of the nearest project file:
# its path, size, mtime and inode (zsh/stat), and its first @READ_BYTES@ bytes, read only when that
# metadata changed (zstat's mtime has whole seconds: an edit that keeps the size and the inode within
# the second of the last read waits for the next change). Only when the fingerprint differs from the
# last one applied does it run
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
            __cudaswitch_out=$(__cudaswitch_export; CUDASWITCH_HOOK=zsh command "${__cudaswitch_bin:-cudaswitch}" "$@" --shell zsh) || return $?
            eval "$__cudaswitch_out"
            # After `off` the project file (if any) applies again at the next prompt.
            [[ $1 == off ]] && __cudaswitch_fp=$'\x1d'
            return 0
            ;;
        *) CUDASWITCH_HOOK=zsh command "${__cudaswitch_bin:-cudaswitch}" "$@" ;;
    esac
}

# Run inside the $(...) of a cudaswitch call: a variable the shell has but does not export (PATH
# in a shell started without one keeps a default) must reach cudaswitch, or `off` would unset it.
__cudaswitch_export() {
    local __cudaswitch_v
    for __cudaswitch_v in @VARIABLES@; do
        [[ -n ${(P)__cudaswitch_v+x} ]] && export "$__cudaswitch_v"
    done
    return 0
}

zmodload -F zsh/stat b:zstat 2>/dev/null
typeset -gA __cudaswitch_seen  # file -> "metadata<US>start of content" at the last read

__cudaswitch_fingerprint() {
    emulate -L zsh
    unsetopt multibyte  # read -k counts bytes, not characters
    local dir=$PWD fp="" f content meta
    local -A st
    while :; do
        for f in @FILES@; do
            [[ -e $f || -L $f ]] || continue
            content="" meta=""
            # A regular, non-empty file only, and only its start: a FIFO or a link to /dev/tty or
            # /proc/kmsg (size 0) would block the read, a 50 MiB file would cost every prompt.
            if [[ -f $f && -s $f && -r $f ]]; then
                if zstat -H st -- $f 2>/dev/null; then
                    meta="$st[size]:$st[mtime]:$st[inode]:$st[device]"$'\x1d'
                fi
                if [[ -n $meta && ${__cudaswitch_seen[$f]%%$'\x1f'*} == $meta ]]; then
                    content=${__cudaswitch_seen[$f]#*$'\x1f'}
                else
                    # read fails at end of file: `|| :` keeps a user's ERR_EXIT or ZERR trap quiet.
                    IFS= read -r -u 0 -k @READ_BYTES@ content <$f || :
                    __cudaswitch_seen[$f]=$meta$'\x1f'$content
                fi
            fi
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

__cudaswitch_hook() {
    local __cudaswitch_status=$?
    __cudaswitch_fingerprint
    if [[ $__cudaswitch_fp_now != "${__cudaswitch_fp-}" ]]; then
        __cudaswitch_fp=$__cudaswitch_fp_now
        if ! __cudaswitch_found; then
            print -u2 "cudaswitch: ${__cudaswitch_bin:-cudaswitch} not found; project CUDA versions are not applied"
        else
            local __cudaswitch_out
            if __cudaswitch_out=$(__cudaswitch_export; command "${__cudaswitch_bin:-cudaswitch}" hook-env --shell zsh); then
                eval "$__cudaswitch_out"
            fi
        fi
    fi
    return $__cudaswitch_status
}

typeset -g __cudaswitch_fp=$'\x1d'
autoload -Uz add-zsh-hook
add-zsh-hook precmd __cudaswitch_hook
