"""Toolkits installed by `cudaswitch install` under the data dir. Under a root prefix (`audit --root`,
`--image`) the default data dir is the invoking user's, not the root's, so it is not read; one named
by CUDASWITCH_DATA_DIR is, as the caller said it belongs to that host."""

import os

from cudaswitch.cache import private_problem, warn
from cudaswitch.registry.sources import Candidate, Scan

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator

NAME = "managed"
DESCRIPTION = "toolkits installed by `cudaswitch install`"


def find(scan: Scan) -> "Iterator[Candidate]":
    base = managed_dir(scan)
    if base is None:
        return
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


def managed_dir(scan: Scan) -> "str | None":
    """The managed toolkits dir this scan may read, or None (a root prefix with the default data dir)."""
    if scan.paths.root != "/" and not scan.env.get("CUDASWITCH_DATA_DIR"):
        return None
    return scan.paths.managed_dir
