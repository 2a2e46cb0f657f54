"""Toolkits installed by `cudaswitch install` under the data dir."""

import os

from cudaswitch.sources import Candidate

NAME = "managed"
DESCRIPTION = "toolkits installed by `cudaswitch install`"


def find(scan):
    base = scan.paths.managed_dir
    for name in scan.listdir(base):
        path = os.path.join(base, name)
        if not name.startswith(".") and os.path.isdir(path):
            scan.watch(os.path.join(path, "bin"))
            yield Candidate(path, NAME, path)
