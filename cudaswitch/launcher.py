"""The program `init` names to the hook: one that starts Python with -E.

The hook starts cudaswitch inside whatever repository the shell is in, and for an empty or
relative PYTHONPATH entry `site` imports a `sitecustomize.py` found there before the script runs:
only -E keeps that code out. pip (and pipx) rewrites the script's `#!python -E` line without its
options, so where it lacks -E, `init` writes a launcher in cudaswitch's data dir (0700) that starts
this interpreter with -E and runs the entry point. When the script is gone it says so in one line."""

import binascii
import os
import stat
import sys

from cudaswitch.cache import make_dir, unsafe_ancestor
from cudaswitch.safeio import read_or_none, replace_regular

TYPE_CHECKING = False
if TYPE_CHECKING:
    from cudaswitch.paths import Paths

SCRIPT_MAX_BYTES = 64 << 10
SHEBANG_MAX = 127  # what Linux before 5.1 reads of a #! line


MARK = b"# written by `cudaswitch init` for "
BODY = """import os
import sys

PROGRAM = %s

if not os.path.isfile(PROGRAM):
    sys.stderr.write("cudaswitch: %%s not found; nothing done (it was run through %%s)\\n" %% (PROGRAM, __file__))
    sys.exit(127)
try:
    from cudaswitch.cli.main import run_program
except ModuleNotFoundError as exc:  # installed where only PYTHONPATH finds it: its absolute entries
    if exc.name != "cudaswitch":
        raise
    sys.path[1:1] = [entry for entry in os.environ.get("PYTHONPATH", "").split(os.pathsep) if os.path.isabs(entry)]
    from cudaswitch.cli.main import run_program
sys.exit(run_program())
"""


def isolated_program(program: "str | None", paths: "Paths") -> "str | None":
    """`program` where its first line starts Python with -E (or it is a launcher), else its -E launcher
    (written when missing or stale); `program` when none can be written. Judged by the file."""
    text = read_or_none(program, SCRIPT_MAX_BYTES) if program else None
    if not text or not text.startswith(b"#!") or len(text) > SCRIPT_MAX_BYTES:
        return program
    first = text.split(b"\n", 1)[0]
    start = _shebang(sys.executable)
    # -E (or -I, which implies it) among the #! line's options
    isolating = any(o.startswith(b"-") and not o.startswith(b"--") and (b"E" in o or b"I" in o)
                    for o in first[2:].split()[1:])
    if isolating or MARK in text[:1024] or start is None:
        return program
    named = ascii(program).encode()
    wanted = start + MARK + named + b" (with -E; see launcher.py)\n" + BODY.encode() % named
    key = binascii.crc32(("%s\0%s" % (sys.executable, program)).encode("utf-8", "surrogateescape"))
    path = os.path.join(paths.data_dir, "launchers", "%08x" % key, "cudaswitch")
    try:
        _private_directory(paths.data_dir, os.path.dirname(path))
    except OSError:
        return program  # no launcher another user could swap: the script itself, as pip wrote it
    if _own_file(path) and read_or_none(path, len(wanted)) == wanted and os.access(path, os.X_OK):
        return path
    try:
        replace_regular(path, wanted, mode=0o700, own_file=True)
    except (OSError, ValueError):
        return program
    return path


def _private_directory(data_dir: str, directory: str) -> None:
    """The launcher's dir, made 0700 with the dirs above it cudaswitch makes, the way down safe from other
    users: whoever may write there could replace what the hook runs. OSError where that cannot be."""
    make_dir(directory)
    for step in (data_dir, os.path.dirname(directory), directory):
        st = os.lstat(step)
        if st.st_uid == os.geteuid() and stat.S_ISDIR(st.st_mode) and st.st_mode & 0o022:
            os.chmod(step, stat.S_IMODE(st.st_mode) & ~0o022)
    st = os.lstat(directory)
    if unsafe_ancestor(os.path.join(directory, "cudaswitch")) or st.st_uid != os.geteuid():
        raise OSError("the launcher's dir is not private")


def _own_file(path: str) -> bool:
    """A regular file of ours nobody else may write (not a link someone left there)."""
    try:
        st = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISREG(st.st_mode) and st.st_uid == os.geteuid() and not st.st_mode & 0o022


def _shebang(python: str) -> "bytes | None":
    """The first line(s) that start `python -E` on this script: a #! line when the kernel takes it whole,
    else /bin/sh exec'ing it (as pip's own scripts do for long paths). None when neither can carry it."""
    raw = python.encode("utf-8", "surrogateescape")
    if not os.path.isabs(python) or any(c in raw for c in b"\n\r\0'"):
        return None
    if len(raw) + 6 <= SHEBANG_MAX and not any(c in raw for c in b" \t"):
        return b"#!" + raw + b" -E\n"
    return b"#!/bin/sh\n'''exec' '" + raw + b"' -E \"$0\" \"$@\"\n' '''\n"
