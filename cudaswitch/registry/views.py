"""View directories: CUDA-only links into a toolkit inside a conda env, whose bin/ on PATH would put
its python and libstdc++ first. nvcc follows /proc/self/exe, so it still finds its own nvvm/."""

import hashlib
import os
import shutil
import tempfile
import time

from cudaswitch.toolkit import CUDA_TOOLS

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from cudaswitch.toolkit import AnyRecord

CUDA_LIB_PREFIXES = (
    "libcudart", "libcublas", "libcufft", "libcurand", "libcusolver", "libcusparse", "libcupti",
    "libcudnn", "libcufile", "libnpp", "libnvrtc", "libnvJitLink", "libnvjitlink", "libnvvm",
    "libnvToolsExt", "libnvtx", "libnvjpeg", "libnvblas", "libnccl", "libnvperf", "libcudadevrt",
)


def view_dir(cache_dir: str, real_root: str) -> str:
    digest = hashlib.sha256(real_root.encode("utf-8", "surrogateescape")).hexdigest()[:16]
    return os.path.join(cache_dir, "views", digest)


def build(cache_dir: str, record: "AnyRecord") -> "tuple[str, str]":
    """(bin_dir, lib_dir) of the view of an isolated record, left alone when its links are already the
    wanted ones (`list --refresh` with hundreds of conda envs would relink every view)."""
    target = view_dir(cache_dir, record["real"])
    wanted = {
        "bin": _matching(record["bin_dirs"], lambda n: n in CUDA_TOOLS),
        "lib": _matching(record["lib_dirs"], lambda n: n.startswith(CUDA_LIB_PREFIXES)),
    }
    if _links_in(target) != wanted:
        _replace(target, wanted)
    return os.path.join(target, "bin"), os.path.join(target, "lib")


SUPERSEDED_GRACE_S = 60  # a process may be resolving target -> old dir -> bin/nvcc right now


def _replace(target: str, wanted: "dict[str, dict[str, str]]") -> None:
    """Build the view in a fresh dir, then os.replace a link to it into place (atomic for links, not
    for a dir over a non-empty one): a reader sees a whole view, and racing refreshes both succeed."""
    os.makedirs(os.path.dirname(target), exist_ok=True)
    fresh = tempfile.mkdtemp(prefix=os.path.basename(target) + ".", dir=os.path.dirname(target))
    for sub, links in wanted.items():
        os.mkdir(os.path.join(fresh, sub))
        for name, source in links.items():
            os.symlink(source, os.path.join(fresh, sub, name))
    if os.path.isdir(target) and not os.path.islink(target):
        # a view from before views were links: a link cannot replace a directory
        aside = tempfile.mkdtemp(prefix=os.path.basename(target) + ".old.", dir=os.path.dirname(target))
        os.rename(target, os.path.join(aside, "view"))
    link = fresh + ".link"
    os.symlink(os.path.basename(fresh), link)
    os.replace(link, target)
    _sweep_superseded(target)


def _sweep_superseded(target: str) -> None:
    """Remove this view's old directories (not the one the link names) past the grace period."""
    parent, stem = os.path.split(target)
    try:
        current = os.readlink(target)
        names = os.listdir(parent)
    except OSError:
        return
    now = time.time()
    for name in names:
        path = os.path.join(parent, name)
        if not name.startswith(stem + ".") or name == current or os.path.islink(path):
            continue
        try:
            if now - os.lstat(path).st_mtime > SUPERSEDED_GRACE_S:
                shutil.rmtree(path, ignore_errors=True)
        except OSError:
            pass


def _matching(sources: "list[str]", wanted: "Callable[[str], bool]") -> "dict[str, str]":
    """{name: path} of the wanted entries of `sources`; the first directory holding a name wins."""
    links = {}
    for directory in sources:
        try:
            names = os.listdir(directory)
        except OSError:
            continue
        for name in names:
            if wanted(name) and name not in links:
                links[name] = os.path.join(directory, name)
    return links


def _links_in(target: str) -> "dict[str, dict[str, str]] | None":
    """{"bin": {name: link target}, "lib": {...}} of an existing view; None if absent or not a view."""
    try:
        current = {sub: {name: os.readlink(os.path.join(target, sub, name))
                         for name in os.listdir(os.path.join(target, sub))} for sub in ("bin", "lib")}
        return current if set(os.listdir(target)) == {"bin", "lib"} else None
    except OSError:  # missing, or an entry that is not a link
        return None
