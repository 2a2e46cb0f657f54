"""`python -m cudaswitch`. Python puts the working directory first on sys.path for -m (unless -P or
PYTHONSAFEPATH), and turns an empty or relative PYTHONPATH entry into a path under it: both are
taken off here, before anything else is imported, so a repository's json.py is not what
cudaswitch imports. What ran before this line cannot be undone (a sitecustomize.py there, or a
cudaswitch/ package of the repository itself): the hook runs the installed `cudaswitch` script,
which starts Python with -E, and `python -P -E -m cudaswitch` is the isolated way to run the
module by hand."""

import os
import sys


def repaired_path(path: "list[str]", pythonpath: str, cwd: str, safe_path: bool) -> "list[str]":
    """sys.path less the entry -m put first and the entries PYTHONPATH's relative ones became.
    The directories holding the standard library and cudaswitch itself stay whatever the working
    directory is (someone may run it from there)."""
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
