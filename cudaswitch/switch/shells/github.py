"""GitHub Actions: lines to append to $GITHUB_ENV. A value with a newline uses NAME<<DELIMITER with a
random delimiter found nowhere in it (as @actions/core does), so no line of a value can start
lines of its own. A CR is refused: a reader taking CRLF line ends would drop it. $GITHUB_ENV cannot
unset, so unset names become empty values."""

import os

from cudaswitch.switch.shells.bash import name


def _checked(var: str, value: str) -> str:
    if "\r" in value or "\0" in value:
        from cudaswitch.errors import CudaSwitchError

        raise CudaSwitchError("cannot write %s to $GITHUB_ENV: its value holds a %s"
                              % (var, "CR" if "\r" in value else "NUL byte"))
    return value


def render(diff: dict) -> str:
    lines = []
    for var, value in diff["set"].items():
        value = _checked(name(var), value)
        if "\n" in value:
            tag = "ghadelimiter_" + os.urandom(16).hex()
            while tag in value:
                tag = "ghadelimiter_" + os.urandom(16).hex()
            lines += ["%s<<%s" % (var, tag), value, tag]
        else:
            lines.append("%s=%s" % (var, value))
    lines += ["%s=" % name(var) for var in diff["unset"]]
    return "\n".join(lines) + ("\n" if lines else "")
