"""System toolkits: NVIDIA installers, distro packages, HPC SDK, CUDA_HOME, nvcc on PATH."""

import os
import re

from cudaswitch.paths import resolve_in_root
from cudaswitch.safeio import read_or_none
from cudaswitch.registry.sources import Candidate, Scan

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator

NAME = "system"
DESCRIPTION = "/usr/local/cuda*, /opt/cuda*, /usr/lib/cuda, HPC SDK, CUDA_HOME/CUDA_PATH, nvcc on PATH"
GLOBS = (("/usr/local", "cuda-"), ("/opt", "cuda"))
HPC_SDK = "/opt/nvidia/hpc_sdk"
WRAPPER_TARGET = re.compile(rb"(/[^\s'\"]+)/bin/nvcc\b")


def find(scan: Scan) -> "Iterator[Candidate]":
    for parent, prefix in GLOBS:
        directory = scan.paths.host(parent)
        for name in scan.listdir(directory):
            if name.startswith(prefix):
                yield from _toolkit_or_children(scan, os.path.join(directory, name), parent + "/" + name)
    default = scan.paths.host("/usr/local/cuda")
    if os.path.isdir(default) and not os.path.islink(default):
        yield _candidate(scan, default, "/usr/local/cuda")
    yield from _hpc_sdk(scan)
    for path in ("/usr/lib/cuda", "/usr/lib/nvidia-cuda-toolkit"):
        scan.watch(scan.paths.host(path) + "/bin")  # absent now: `apt install nvidia-cuda-toolkit` later
        if os.path.isdir(scan.paths.host(path) + "/bin"):
            yield _candidate(scan, scan.paths.host(path), path)
    for var in ("CUDA_HOME", "CUDA_PATH"):
        value = scan.env.get(var)
        if value and os.path.isdir(scan.env_path(value)):
            yield _candidate(scan, scan.env_path(value), "$" + var)
    yield from _nvcc_on_path(scan)


MARKERS = ("bin", "lib64", "lib", "include", "version.json", "version.txt")


def _toolkit_or_children(scan: Scan, path: str, origin: str) -> "Iterator[Candidate]":
    """The toolkit at path; or, where path holds none of a toolkit's parts but version-named
    directories (a site's /opt/cuda/12.4 and /opt/cuda/12.6, as `install --prefix` makes), those."""
    if os.path.islink(path) or any(os.path.lexists(os.path.join(path, m)) for m in MARKERS):
        yield _candidate(scan, path, origin)
        return
    children = [n for n in scan.listdir(path) if n[:1].isdigit() and os.path.isdir(os.path.join(path, n))]
    if not children:
        yield _candidate(scan, path, origin)  # an empty or stripped install: broken, and said so
    for name in children:
        yield _candidate(scan, os.path.join(path, name), origin + "/" + name)


def system_default(scan: Scan) -> "str | None":
    """Real path of what /usr/local/cuda points at (symlink or alternatives chain), or None."""
    link = scan.paths.host("/usr/local/cuda")
    scan.watch_links("/usr/local/cuda")
    if not os.path.lexists(link):
        return None
    real, error = resolve_in_root(scan.paths, "/usr/local/cuda")
    return None if error else real


def _candidate(scan: Scan, path: str, origin: str) -> Candidate:
    real, error = resolve_in_root(scan.paths, scan.paths.unhost(path))
    scan.watch(path)
    scan.watch_links(scan.paths.unhost(path))
    scan.watch(os.path.join(real, "bin"))
    return Candidate(path, NAME, origin, dangling=("dangling link: " + error) if error else None)


def _hpc_sdk(scan: Scan) -> "Iterator[Candidate]":
    base = scan.paths.host(HPC_SDK)
    for arch in scan.listdir(base):
        for release in scan.listdir(os.path.join(base, arch)):
            cuda = os.path.join(base, arch, release, "cuda")
            for version in scan.listdir(cuda):
                if version[:1].isdigit():
                    yield _candidate(scan, os.path.join(cuda, version), "HPC SDK " + release)


def _nvcc_on_path(scan: Scan) -> "Iterator[Candidate]":
    """Each nvcc on the user's PATH; a wrapper script is followed to the toolkit it execs."""
    for directory in scan.env.get("PATH", "").split(os.pathsep):
        if not directory:
            continue
        nvcc = os.path.join(scan.env_path(directory), "nvcc")
        scan.watch(nvcc)  # also where there is none yet
        if not os.access(nvcc, os.X_OK):
            continue
        wrapped = _wrapped_root(nvcc)
        root = scan.env_path(wrapped) if wrapped else os.path.dirname(os.path.dirname(os.path.realpath(nvcc)))
        if os.path.isfile(os.path.join(root, "bin", "nvcc")):
            yield _candidate(scan, root, nvcc)


def _wrapped_root(nvcc: str) -> "str | None":
    """`#!/bin/sh\\nexec /usr/local/cuda-13.0/bin/nvcc "$@"` -> /usr/local/cuda-13.0."""
    head = read_or_none(nvcc, 4096) or b""  # a FIFO named nvcc must not hang discovery
    if not head.startswith(b"#!"):
        return None
    match = WRAPPER_TARGET.search(head)
    return os.fsdecode(match.group(1)) if match else None
