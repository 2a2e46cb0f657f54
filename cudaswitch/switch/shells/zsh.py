"""zsh: single quotes are literal as in POSIX sh; ' is closed, escaped and reopened ('\\''),
which also holds with RC_QUOTES set. `typeset -gx` so the hook's function scope exports globally.
Its hook's syntax is bash's (the same `[[ ]]` tests and case arms, the same shared functions)."""

from cudaswitch.switch.shells.bash import Bash, code, name, quote, rerun  # the same rules

__all__ = ("name", "quote", "render", "rerun", "SHELL")


def render(diff: dict) -> str:
    return code(diff, "typeset -gx %s=%s", "unset %s", "typeset -g +x %s")  # +x: back unexported, as it was


class Zsh(Bash):
    name = "zsh"
    render = staticmethod(render)


SHELL = Zsh()
