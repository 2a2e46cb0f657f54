"""Toolkits installed by `cudaswitch install` under the data dir."""

import os

from cudaswitch.cache import private_problem, warn
from cudaswitch.registry.sources import Candidate, Scan

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator

NAME = "managed"
DESCRIPTION = "toolkits installed by `cudaswitch install`"


def find(scan: Scan) -> "Iterator[Candidate]":
    base = scan.paths.managed_dir
    scan.watch(base)  # made private later (chmod changes its identity): listed again
    problem = private_problem(base)
    if problem:  # another user could have put a toolkit there, whose nvcc `use` would put first
        warn("the managed toolkits dir %s is %s: its toolkits are not used" % (base, problem))
        return
    for name in scan.listdir(base):
        path = os.path.join(base, name)
        if not name.startswith(".") and os.path.isdir(path):
            scan.watch(os.path.join(path, "bin"))
            # a link is a site install in its own prefix (install --prefix): name it by that path,
            # the one its modulefile names too
            root = os.path.realpath(path) if os.path.islink(path) else path
            yield Candidate(root, NAME, path)
