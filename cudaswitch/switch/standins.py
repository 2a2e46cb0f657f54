"""A switch never leaves another toolkit's tools reachable: stand-ins for the ones the toolkit lacks.

NVIDIA's 12.x wheels ship no nvcc; `use` of such a toolkit used to leave the next nvcc on PATH
running, often another toolkit's through a link in a general bin dir that no switch can take off
PATH (`nvcc --version` said 13.0, CUDA_HOME 12.4, CMake built with the wrong one). So a dir of
stand-ins goes first: for each CUDA tool it lacks that would resolve into another toolkit, a script
that says what is missing and exits 127. They live in the private cache dir and hold no path or
version (they read CUDA_HOME), so nothing from a toolkit's files is written into shell code."""

import os

from cudaswitch import cache
from cudaswitch.pathsearch import which
from cudaswitch.switch.toolkitdirs import Owner
from cudaswitch.toolkit import CUDA_TOOLS

TYPE_CHECKING = False
if TYPE_CHECKING:
    from cudaswitch.toolkit import AnyRecord, Env

SCRIPT = """#!/bin/sh
echo "cudaswitch: ${0##*/} is not part of the CUDA toolkit in use (${CUDA_HOME:-unknown}); another toolkit's \
is not run in its place. \\`cudaswitch install VERSION\\` gives a complete toolkit." >&2
exit 127
"""


def foreign_tools(record: "AnyRecord", env: "Env", owner: Owner) -> "list[str]":
    """The CUDA tools `record` lacks that `env`'s PATH finds in another toolkit."""
    own: "set[str]" = set()
    for directory in record.get("env_bin") or record["bin_dirs"]:
        try:
            own.update(os.listdir(directory))
        except OSError:
            pass
    found = []
    for tool in CUDA_TOOLS:
        path = None if tool in own else which(tool, env)
        if path and owner(os.path.dirname(os.path.realpath(path))) not in (None, record["root"], record.get("real")):
            found.append(tool)
    return found


def is_stand_in(path: "str | None") -> bool:
    """Whether `path` (a tool found on PATH) is one of these stand-ins: it stands for "none"."""
    return path is not None and os.path.basename(os.path.dirname(os.path.dirname(path))) == "stand-ins"


def stand_in_dir(cache_dir: str, tools: "list[str]") -> str:
    """The dir holding a stand-in for each of `tools` (written once; rewritten when damaged)."""
    import hashlib

    digest = hashlib.sha256(" ".join(sorted(tools)).encode()).hexdigest()[:16]
    directory = os.path.join(cache_dir, "stand-ins", digest)
    text = SCRIPT.encode()
    for tool in tools:
        path = os.path.join(directory, tool)
        if cache.read_private(path, len(text)) != text or not os.access(path, os.X_OK):
            cache.write_file(path, text, mode=0o700)
    return directory
