"""NVIDIA's CUDA wheels in the site-packages of $VIRTUAL_ENV, $CONDA_PREFIX, the first python3 on
PATH (found without running it: a process per `list` would break the budgets) and the user site.
CUDA 13 wheels share `nvidia/cu13/` (with nvcc); 11/12 use one dir per component (no nvcc)."""

import glob
import os
import re

from cudaswitch.registry.sources import Candidate, Scan

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator

NAME = "pip"
DESCRIPTION = "NVIDIA CUDA wheels in the active Python's site-packages"
SPLIT_DIST = re.compile(r"^nvidia_cuda_(?:runtime|nvcc)_cu(\d+)-(\d+\.\d+\.\d+)")


def find(scan: Scan) -> "Iterator[Candidate]":
    seen = set()
    for site in _site_dirs(scan):
        nvidia = os.path.join(site, "nvidia")
        names = scan.listdir(nvidia)
        for name in names:
            if name.startswith("cu") and name[2:].isdigit():
                root = os.path.join(nvidia, name)
                if os.path.realpath(root) not in seen:
                    seen.add(os.path.realpath(root))
                    scan.watch(os.path.join(root, "bin"))
                    yield Candidate(root, NAME, site, layout="classic")
        if "cuda_runtime" in names and os.path.realpath(nvidia) not in seen:
            seen.add(os.path.realpath(nvidia))
            yield Candidate(nvidia, NAME, site, layout="pip-split", hint_version=_split_version(scan, site))


def _split_version(scan: Scan, site: str) -> "str | None":
    for name in scan.listdir(site):
        match = SPLIT_DIST.match(name)
        if match and name.startswith("nvidia_cuda_runtime"):
            return match.group(2)
    return None


def _prefixes(scan: Scan) -> "Iterator[str]":
    for var in ("VIRTUAL_ENV", "CONDA_PREFIX"):
        if scan.env.get(var):
            yield scan.env_path(scan.env[var])
    for directory in filter(None, scan.env.get("PATH", "").split(os.pathsep)):
        python = os.path.join(scan.env_path(directory), "python3")
        scan.watch(python)  # also where there is none: one installed earlier on PATH becomes the active one
        if os.access(python, os.X_OK):
            # A venv's bin/python3 links out of the venv; its pyvenv.cfg marks the prefix.
            prefix = os.path.dirname(os.path.dirname(python))
            if os.path.exists(os.path.join(prefix, "pyvenv.cfg")):
                yield prefix
            else:
                yield os.path.dirname(os.path.dirname(os.path.realpath(python)))
            break
    yield scan.paths.host(os.path.expanduser("~/.local"))


def _site_dirs(scan: Scan) -> "list[str]":
    seen = []
    for prefix in _prefixes(scan):
        # `pip install --user` creates ~/.local/lib/python3.X/site-packages on first use
        scan.watch(os.path.join(prefix, "lib"))
        for version_dir in glob.glob(os.path.join(prefix, "lib", "python3*")):
            scan.watch(version_dir)
        for site in sorted(glob.glob(os.path.join(prefix, "lib", "python3*", "site-packages"))):
            if site not in seen:
                seen.append(site)
                scan.watch(site)
    return seen
