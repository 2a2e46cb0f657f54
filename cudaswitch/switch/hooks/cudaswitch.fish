# cudaswitch hook for fish. Load it from ~/.config/fish/config.fish with:
#     cudaswitch init fish | source
#
# Before each prompt the hook computes, with fish builtins only (no process started), a
# fingerprint of the nearest project file: its path, mtime (`path mtime`) and first @READ_BYTES@
# bytes. Only when it differs from the last one applied does it run `cudaswitch hook-env`.
# Event handlers leave $status alone.

# The program itself: the absolute path `cudaswitch init` wrote above (as direnv and mise do, so a
# launcher shim such as pyenv's cannot rewrite PATH before we read it), else the one on PATH.
set -q __cudaswitch_bin; or set -g __cudaswitch_bin cudaswitch

function __cudaswitch_found
    if string match -q '/*' -- $__cudaswitch_bin
        test -x $__cudaswitch_bin
    else
        command -q $__cudaswitch_bin
    end
end

function cudaswitch --description 'switch CUDA toolkits'
    switch "$argv[1]"
        case use off
            # An explicit --shell asks for the program's output (to save or read it), not a switch.
            if contains -- --shell $argv; or string match -q -- '--shell=*' $argv
                CUDASWITCH_HOOK=fish command $__cudaswitch_bin $argv
                return
            end
            set -l out (CUDASWITCH_HOOK=fish command $__cudaswitch_bin $argv --shell fish | string collect)
            # The program's status, not string collect's (1 on no output: `off` with nothing to undo).
            set -l code $pipestatus[1]
            test $code -eq 0; or return $code
            eval $out
            # After `off` the project file (if any) applies again at the next prompt.
            test "$argv[1]" = off; and set -g __cudaswitch_fp \x1d
            return 0
        case '*'
            CUDASWITCH_HOOK=fish command $__cudaswitch_bin $argv
    end
end

function __cudaswitch_fingerprint
    set -l dir $PWD
    set -l fp ''
    while true
        for f in @FILES@
            test -e $f; or test -L $f; or continue
            set -l content ''
            set -l meta ''
            # A regular, non-empty file only, and only its start: a FIFO or a link to /dev/tty or
            # /proc/kmsg (size 0) would block the read, a 50 MiB file would cost every prompt.
            if test -f $f -a -s $f -a -r $f
                set meta (path mtime -- $f 2>/dev/null)\x1d
                read -z -n @READ_BYTES@ content <$f
            end
            switch $f
                @RULES@
            end
            set fp "$fp$f"\x1f"$meta$content"\x1e
        end
        test -z "$dir" -o "$dir" = /; and break
        set dir (string replace -r '/[^/]*$' '' -- $dir)
    end
    set -g __cudaswitch_fp_now $fp
end

function __cudaswitch_hook --on-event fish_prompt
    __cudaswitch_fingerprint
    if test "$__cudaswitch_fp_now" != "$__cudaswitch_fp"
        set -g __cudaswitch_fp $__cudaswitch_fp_now
        if not __cudaswitch_found
            echo "cudaswitch: $__cudaswitch_bin not found; project CUDA versions are not applied" >&2
        else
            set -l out (command $__cudaswitch_bin hook-env --shell fish | string collect)
            and eval $out
        end
    end
end

set -g __cudaswitch_fp \x1d
