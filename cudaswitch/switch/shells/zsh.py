"""zsh: single quotes are literal as in POSIX sh; ' is closed, escaped and reopened ('\\''),
which also holds with RC_QUOTES set. `typeset -gx` so the hook's function scope exports globally.
Its hook's syntax is bash's (the same `[[ ]]` tests and case arms, the same shared functions)."""

from cudaswitch.switch.shells.bash import Bash, name, quote, rerun  # the same rules

__all__ = ("name", "quote", "render", "rerun", "SHELL")


def render(diff: dict) -> str:
    lines = ["typeset -gx %s=%s" % (name(n), quote(value)) for n, value in diff["set"].items()]
    lines += ["unset %s" % name(n) for n in diff["unset"]]
    lines += ["typeset -g +x %s" % name(n) for n in diff.get("unexport", ())]  # back unexported, as it was
    return "\n".join(lines) + ("\n" if lines else "")


class Zsh(Bash):
    name = "zsh"
    render = staticmethod(render)


SHELL = Zsh()
