"""bash (and POSIX sh, for which the `export -n` line is silenced): single quotes keep every byte
literal; a ' is written as '\\''. A shell has no quoting for a name, so one that is not an
identifier is refused."""

from cudaswitch.switch.shells import Shell
from cudaswitch.statecodec import is_name

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable


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


def code(diff: dict, set_form: str, unset_form: str, unexport_form: str = "",
         value: "Callable[[str, str], str]" = lambda var, text: quote(text)) -> str:
    """A line per variable of `diff` in a format's own forms: names checked, values written by
    `value(name, text)` (quoted for the shell); without an unexport form, unexports are not said."""
    lines = [set_form % (name(var), value(var, text)) for var, text in diff["set"].items()]
    lines += [unset_form % name(var) for var in diff["unset"]]
    lines += [unexport_form % name(var) for var in diff.get("unexport", ())] if unexport_form else []
    return "".join(line + "\n" for line in lines)


def render(diff: dict) -> str:
    # After `off`: a variable the shell had without exporting it (PATH in `env -u PATH bash`) keeps its
    # value and loses the export flag cudaswitch gave it. `export -n` is bash's; sh has no such thing.
    return code(diff, "export %s=%s", "unset %s", "export -n %s 2>/dev/null || :")


def rerun(argv: list, names: list) -> str:
    """Code that runs `argv` again with `names` exported for it and listed in CUDASWITCH_UNEXPORTED (what
    the shell does not export cannot be seen from here); its status is kept (`(exit N)` on failure)."""
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
