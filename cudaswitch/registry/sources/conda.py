"""Conda envs: CONDA_PREFIX, ~/.conda/environments.txt, envs/ of known conda installations. The
version is the env's own package records' (conda-meta/*.json names), what conda itself trusts."""

import os
import re

from cudaswitch.registry.sources import Candidate, Scan
from cudaswitch.safeio import read_or_none

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator

NAME = "conda"
DESCRIPTION = "$CONDA_PREFIX, ~/.conda/environments.txt, envs/ of conda installs"
RECORD = re.compile(r"^(cuda-nvcc|cuda-version|cudatoolkit|cuda-cudart)-(\d+(?:\.\d+){0,2})[-_].*\.json$")
TRUST = ("cuda-nvcc", "cudatoolkit", "cuda-cudart", "cuda-version")
INSTALL_NAMES = ("miniconda3", "anaconda3", "miniforge3", "mambaforge", "micromamba", ".conda")


def find(scan: Scan) -> "Iterator[Candidate]":
    seen = set()
    for prefix in _env_prefixes(scan):
        real = os.path.realpath(prefix)
        if real in seen:
            continue
        seen.add(real)
        version = _recorded_version(scan, prefix)
        if version:
            yield Candidate(prefix, NAME, prefix, layout="conda", hint_version=version)


def _env_prefixes(scan: Scan) -> "Iterator[str]":
    if scan.env.get("CONDA_PREFIX"):
        yield scan.env_path(scan.env["CONDA_PREFIX"])
    home = scan.paths.host(os.path.expanduser("~"))
    environments = os.path.join(home, ".conda", "environments.txt")
    scan.watch(environments)
    text = (read_or_none(environments, 1 << 20) or b"").decode("utf-8", "replace")
    yield from (scan.env_path(line.strip()) for line in text.splitlines() if line.strip())
    for base in _install_roots(scan, home):
        yield base
        envs = os.path.join(base, "envs")
        for name in scan.listdir(envs):
            yield os.path.join(envs, name)


def _install_roots(scan: Scan, home: str) -> "list[str]":
    roots = [os.path.join(home, name) for name in INSTALL_NAMES]
    roots += [scan.paths.host("/opt/conda"), scan.paths.host("/opt/miniconda3"), scan.paths.host("/opt/miniforge3")]
    conda_exe = scan.env.get("CONDA_EXE")
    if conda_exe:
        roots.insert(0, os.path.dirname(os.path.dirname(scan.env_path(conda_exe))))
    for root in roots:
        scan.watch(root)  # a conda installed after the cache was made must be seen
    return [r for r in roots if os.path.isdir(r)]


def _recorded_version(scan: Scan, prefix: str) -> "str | None":
    """Version of the most trusted CUDA package record in conda-meta, e.g. cuda-nvcc 12.4.131."""
    found: "dict[str, str]" = {}
    for name in scan.listdir(os.path.join(prefix, "conda-meta")):
        match = RECORD.match(name)
        if match:
            found.setdefault(match.group(1), match.group(2))
    return next((found[p] for p in TRUST if p in found), None)
