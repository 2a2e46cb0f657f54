"""Roots the user registered in config.toml (`toolkits = [...]`) and extra search roots."""

import os

from cudaswitch.registry.sources import Candidate, Scan

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator

NAME = "user"
DESCRIPTION = "toolkits and search roots registered in config.toml"


def find(scan: Scan) -> "Iterator[Candidate]":
    for path in scan.config.get("toolkits", []):
        root = scan.env_path(os.path.expanduser(path))
        scan.watch(root)
        dangling = None if os.path.isdir(root) else "registered in config.toml but missing"
        yield Candidate(root, NAME, "config.toml", dangling=dangling)
    for base in scan.config.get("search_roots", []):
        base = scan.env_path(os.path.expanduser(base))
        for name in scan.listdir(base):
            if name.startswith("cuda"):
                path = os.path.join(base, name)
                scan.watch(os.path.join(path, "bin"))
                yield Candidate(path, NAME, base)
