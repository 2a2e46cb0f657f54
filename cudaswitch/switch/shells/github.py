"""GitHub Actions: lines to append to $GITHUB_ENV (`cudaswitch use 13 --shell github >> "$GITHUB_ENV"`).
The runner takes NAME=VALUE up to the end of the line, or NAME<<DELIMITER and then the lines up to
one equal to the delimiter: a value with a newline uses the second form, with a random delimiter
(as @actions/core's exportVariable does) that occurs nowhere in the value, so no line of a value
can end it early and start lines of its own. A value with a CR is refused: a reader that takes
CRLF line ends (as the runner on Windows does) would drop it. $GITHUB_ENV cannot unset, so unset names become
empty values."""

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
