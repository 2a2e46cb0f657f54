"""Output formats for a switch. Each module has `render(diff) -> str` with its own quoting, where
diff is envdiff.diff()'s {"set": {name: value}, "unset": [names]}. Kept import-light: the fast path
imports exactly one of them."""

import os

FORMATS = ("bash", "zsh", "fish", "posix", "json", "dotenv", "github")
SHELL_NAMES = {"bash": "bash", "zsh": "zsh", "fish": "fish", "sh": "posix", "dash": "posix", "ksh": "posix"}


def renderer(name):
    if name not in FORMATS:
        from cudaswitch.errors import UsageError

        raise UsageError("unknown --shell %r" % name, "one of " + ", ".join(FORMATS))
    module = {"posix": "bash", "json": "json_format"}.get(name, name)
    return __import__("cudaswitch.switch.shells." + module, fromlist=["render"]).render


def parent_shell():
    """The shell that runs us (its /proc comm), else posix. One file read, no shellingham import:
    the hook always passes --shell, this only serves a bare `eval "$(cudaswitch use X)"`."""
    try:
        with open("/proc/%d/comm" % os.getppid()) as handle:
            comm = handle.read().strip().lstrip("-")
    except OSError:
        return "posix"
    return SHELL_NAMES.get(comm, "posix")
