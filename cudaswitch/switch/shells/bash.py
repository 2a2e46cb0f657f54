"""bash (and POSIX sh): single quotes keep every byte literal; a ' is written as '\\''.
Newlines, $, backticks, double quotes and non-ASCII need nothing else inside single quotes.
Names are checked, not quoted: a shell has no quoting for a name, so a name that is not an
identifier is refused (the state it came from is read as data, see statecodec).
Also the posix format: everything here but `export -n` is POSIX sh, and that line is silenced."""

from cudaswitch.switch.shells import Shell
from cudaswitch.statecodec import is_name


def quote(value: str) -> str:
    if "\0" in value:  # a shell variable cannot hold one; it would cut the value short
        refuse("a value holds a NUL byte")
    return "'" + value.replace("'", "'\\''") + "'"


def name(text: str) -> str:
    """`text`, checked to be a variable name; otherwise a one-line error, nothing printed."""
    if not is_name(text):
        refuse("%r is not a variable name" % (text[:40],))
    return text


def refuse(why: str) -> None:
    from cudaswitch.errors import CudaSwitchError

    raise CudaSwitchError("refusing to write shell code: " + why)


def render(diff: dict) -> str:
    lines = ["export %s=%s" % (name(n), quote(value)) for n, value in diff["set"].items()]
    lines += ["unset %s" % name(n) for n in diff["unset"]]
    # After `off`: a variable the shell had without exporting it (PATH in `env -u PATH bash`) keeps its
    # value and loses the export flag cudaswitch gave it. `export -n` is bash's; sh has no such thing.
    lines += ["export -n %s 2>/dev/null || :" % name(n) for n in diff.get("unexport", ())]
    return "\n".join(lines) + ("\n" if lines else "")


def rerun(argv: list, names: list) -> str:
    """Code that runs `argv` again with `names` exported for it and listed in CUDASWITCH_UNEXPORTED:
    what a shell has but does not export (PATH in a shell started without one) cannot be seen from
    here. The command's status is kept (`(exit N)` when it fails; it prints nothing then)."""
    exported = " ".join(name(n) for n in names)
    command = " ".join(quote(word) for word in argv)
    return 'eval "$(export %s; CUDASWITCH_UNEXPORTED=%s command %s || echo "(exit $?)")"\n' % (
        exported, quote(exported), command)


class Bash(Shell):
    name = "bash"
    hook_functions = "cudaswitch.wrapper.sh"  # the `cudaswitch` function and the prompt hook, shared with zsh
    rule_ends_walk = '__cudaswitch_fp_now="$fp$f"$\'\\x1f\'"$meta$content"; return 0'
    rule_needs_word = "[[ $content == *%(word)s* || ${#content} -ge %(full)s ]] || continue"
    quote = staticmethod(quote)
    render = staticmethod(render)
    rerun = staticmethod(rerun)


SHELL = Bash()
