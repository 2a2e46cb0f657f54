# cudaswitch hook for bash. Load it from ~/.bashrc with:  eval "$(cudaswitch init bash)"
#
# On every prompt the hook computes, in pure bash (no process started), a fingerprint of the
# nearest project file: its path and its first @READ_BYTES@ bytes (bash has no stat builtin; that is
# all hook-env reads of .cudaversion and .tool-versions, while a pyproject.toml edited only past its
# first 4 KiB is seen at the next cd). Only when that differs from the last one applied does it run
# `cudaswitch hook-env`. It keeps $? for the prompt and other PROMPT_COMMAND parts.

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
@WRAPPER@

# Run inside the $(...) of a cudaswitch call: a variable the shell has but does not export (PATH
# in a shell started without one keeps a default) must reach cudaswitch, or `off` would unset it;
# CUDASWITCH_UNEXPORTED names them, so `off` gives them back unexported. (bash before 5 cannot
# tell without a process per variable: there they come back exported.)
__cudaswitch_export() {
    local __cudaswitch_v __cudaswitch_local=
    for __cudaswitch_v in @VARIABLES@; do
        [[ -n ${!__cudaswitch_v+x} ]] || continue
        if (( BASH_VERSINFO[0] >= 5 )) && [[ ${!__cudaswitch_v@a} != *x* ]]; then
            __cudaswitch_local+=" $__cudaswitch_v"
        fi
        export "$__cudaswitch_v"
    done
    export CUDASWITCH_UNEXPORTED="${__cudaswitch_local# }"
    return 0
}

# Sets __cudaswitch_fp_now to "path<US>content" of each candidate project file from $PWD up to the
# nearest .cudaversion. .tool-versions / pyproject.toml count only when they mention cuda.
__cudaswitch_fingerprint() {
    local dir=$PWD fp="" f content meta LC_ALL=C  # C: read -n counts bytes, not characters
    while :; do
        for f in @FILES@; do
            [[ -e $f || -L $f ]] || continue
            content="" meta=""
            # A regular, non-empty file only, and only its start: a FIFO or a link to /dev/tty or
            # /proc/kmsg (size 0) would block the read, a 50 MiB file would cost every prompt.
            if [[ -f $f && -s $f && -r $f ]]; then
                # Up to the first NUL (read -N would skip NULs and go on through a file of zeros);
                # whether it stopped there is part of the fingerprint. `||` keeps `set -e` quiet.
                meta=0
                IFS= read -r -d '' -n @READ_BYTES@ content <"$f" || meta=1
            fi
@FINGERPRINT_END@


# A new shell starts with a fingerprint that matches nothing, so its first prompt applies the
# project file or the global default once.
__cudaswitch_fp=$'\x1d'
if [[ ";${PROMPT_COMMAND[*]-};" != *";__cudaswitch_hook;"* ]]; then
    PROMPT_COMMAND="__cudaswitch_hook${PROMPT_COMMAND:+;$PROMPT_COMMAND}"
fi
