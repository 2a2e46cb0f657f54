# cudaswitch hook for zsh. Load it from ~/.zshrc with:  eval "$(cudaswitch init zsh)"
#
# precmd computes, in pure zsh (no process started), a fingerprint of the nearest project file:
# its path, size, mtime and inode (zsh/stat), and its first @READ_BYTES@ bytes, read only when that
# metadata changed or the file changed within the current second (zstat's mtime has whole seconds).
# Only when the fingerprint differs from the last one applied does it run `cudaswitch hook-env`.
# precmd hooks do not change $? as the prompt sees it; we return it anyway.

# The program itself: the absolute path `cudaswitch init` wrote above (as direnv and mise do, so a
# launcher shim such as pyenv's cannot rewrite PATH before we read it), else the one on PATH.
__cudaswitch_found() {
    if [[ -n ${__cudaswitch_bin-} ]]; then
        [[ -x $__cudaswitch_bin ]]
    else
        (( $+commands[cudaswitch] ))
    fi
}

@WRAPPER@

# Run inside the $(...) of a cudaswitch call: a variable the shell has but does not export (PATH
# in a shell started without one keeps a default) must reach cudaswitch, or `off` would unset it;
# CUDASWITCH_UNEXPORTED names them, so `off` gives them back unexported.
__cudaswitch_export() {
    local __cudaswitch_v __cudaswitch_local=
    for __cudaswitch_v in @VARIABLES@; do
        [[ -n ${(P)__cudaswitch_v+x} ]] || continue
        [[ ${(tP)__cudaswitch_v} == *-export* ]] || __cudaswitch_local+=" $__cudaswitch_v"
        export "$__cudaswitch_v"
    done
    export CUDASWITCH_UNEXPORTED="${__cudaswitch_local# }"
    return 0
}

zmodload -F zsh/stat b:zstat 2>/dev/null
zmodload zsh/datetime 2>/dev/null  # EPOCHSECONDS
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
                # The metadata is trusted only for a file last changed before this second (zstat's
                # mtime is whole seconds): an edit of the same size within it is read, not missed.
                if [[ -n $meta && ${__cudaswitch_seen[$f]%%$'\x1f'*} == $meta ]] && (( st[mtime] < ${EPOCHSECONDS:-0} )); then
                    content=${__cudaswitch_seen[$f]#*$'\x1f'}
                else
                    # read fails at end of file: `|| :` keeps a user's ERR_EXIT or ZERR trap quiet.
                    IFS= read -r -u 0 -k @READ_BYTES@ content <$f || :
                    __cudaswitch_seen[$f]=$meta$'\x1f'$content
                fi
            fi
@FINGERPRINT_END@


typeset -g __cudaswitch_fp=$'\x1d'
autoload -Uz add-zsh-hook
add-zsh-hook precmd __cudaswitch_hook
