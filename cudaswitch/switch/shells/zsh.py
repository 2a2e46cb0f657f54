"""zsh: single quotes are literal as in POSIX sh; ' is closed, escaped and reopened ('\\''),
which also holds with RC_QUOTES set. `typeset -gx` so the hook's function scope exports globally."""

from cudaswitch.switch.shells.bash import quote  # the same single-quote rule; re-exported for `init`


def render(diff):
    lines = ["typeset -gx %s=%s" % (name, quote(value)) for name, value in diff["set"].items()]
    lines += ["unset %s" % name for name in diff["unset"]]
    return "\n".join(lines) + ("\n" if lines else "")
