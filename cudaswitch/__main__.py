"""`python -m cudaswitch`. -m puts the working directory first on sys.path, and an empty or relative
PYTHONPATH entry becomes a path under it: both go before anything else is imported, so a
repository's json.py is not imported. What ran before (a sitecustomize.py there) cannot be undone:
the hook runs the script with -E, and `python -P -E -m cudaswitch` is the isolated way by hand."""

import os
import sys


def repaired_path(path: "list[str]", pythonpath: str, cwd: str, safe_path: bool) -> "list[str]":
    """sys.path less what -m put first and what relative PYTHONPATH entries became (stdlib, our own dirs stay)."""
    kept = list(path)
    if kept and not safe_path and kept[0] in ("", cwd):
        kept.pop(0)
    relative = {os.path.normpath(os.path.join(cwd, entry)) for entry in pythonpath.split(os.pathsep)
                if pythonpath and not os.path.isabs(entry)}
    needed = {os.path.dirname(os.__file__), os.path.dirname(os.path.dirname(os.path.abspath(__file__)))}
    return [entry for entry in kept if entry and (entry not in relative or entry in needed)]


try:
    sys.path[:] = repaired_path(sys.path, "" if sys.flags.ignore_environment else os.environ.get("PYTHONPATH", ""),
                                os.getcwd(), getattr(sys.flags, "safe_path", False))
except OSError:  # a working directory removed under us: nothing on sys.path can name it
    pass

from cudaswitch.cli.main import run_program  # noqa: E402  (after the sys.path repair, on purpose)

raise SystemExit(run_program())
