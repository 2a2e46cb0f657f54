"""Redist archives -> the classic toolkit tree the wheel source also makes (`bin/`, `include/`,
`lib64/` with `lib -> lib64`, `nvvm/`, `version.json`): the union of the components' trees, each
archive holding one top dir `<name>-<platform>-<version>-archive/`. Members are written by
install/untar.py's checks, never by tarfile's extraction filters; a member outside the top dir
refuses the archive, and so does a merge where one archive's directory meets another's link.
"""

import concurrent.futures
import lzma
import os
import shutil
import stat
import tarfile
import threading
import zlib

from cudaswitch.errors import CudaSwitchError
from cudaswitch.install import untar

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

    from cudaswitch.install.untar import Parts

    Pause = Callable[[threading.Event], None]


def top_dir(entry: dict) -> str:
    """cuda_nvcc/linux-x86_64/cuda_nvcc-linux-x86_64-13.1.115-archive.tar.xz -> its top dir name."""
    name = os.path.basename(entry["relative_path"])
    for suffix in (".tar.xz", ".tar.gz", ".tgz", ".tar"):
        if name.endswith(suffix):
            return name[: -len(suffix)]
    raise CudaSwitchError("%s is not a tar archive name" % name)


class Stopped(Exception):
    """An unpack was told to stop (the install is being interrupted)."""


def unpack_all(fetched: "list[tuple[dict, str]]", tree: str, staging: str, pause: "Pause | None",
               progress: "Callable[[str], None]") -> None:
    """Unpack (entry, archive path) pairs into `tree`, in parallel: lzma lets other threads run while
    it decompresses, so two cores unpack two archives at once. Each goes to its own dir under
    `staging`, then they are merged in the order given (a later component's file wins, as when
    unpacked one after another). An interruption stops every worker within one member before it
    propagates, so nothing writes into the build dir while it is being removed."""
    stop = threading.Event()
    workers = min(len(fetched), os.cpu_count() or 1) or 1
    with concurrent.futures.ThreadPoolExecutor(max_workers=workers) as pool:
        largest_first = sorted(fetched, key=lambda pair: -pair[0]["size"])  # the longest jobs start first
        jobs = {}
        try:  # submitting is inside: a Ctrl-C while the first jobs already run must stop them too
            for index, (entry, path) in enumerate(largest_first):
                jobs[pool.submit(_unpack_one, path, entry, os.path.join(staging, entry["component"]), stop,
                                 pause if index == 0 else None)] = entry
            for job in concurrent.futures.as_completed(jobs):
                progress("unpacked %s %s (%d files)" % (jobs[job]["component"], jobs[job]["version"], job.result()))
        except BaseException:
            stop.set()
            raise
    for entry, _ in fetched:
        _merge(os.path.join(staging, entry["component"]), tree)
    untar.check_tree_links(tree)  # each archive's links were checked alone; together they could leave


def _unpack_one(archive: str, entry: dict, dest: str, stop: threading.Event, pause: "Pause | None") -> int:
    count = unpack(archive, entry, dest, pause, stop)
    os.unlink(archive)  # not needed once unpacked: keeps the peak disk use near the tree's size
    return count


def unpack(archive: str, entry: dict, tree: str, pause: "Callable[..., None] | None" = None,
           stop: "threading.Event | None" = None) -> int:
    """Extract one component archive into `tree`; returns the number of files written. `pause(stop)`
    runs after the first file (the test hook that holds an install midway)."""
    top, count, name = top_dir(entry), 0, os.path.basename(archive)
    try:
        with open(archive, "rb") as handle:
            budget = untar.Budget(os.fstat(handle.fileno()).st_size)
            # stream mode: members are extracted in archive order, so the xz stream is decompressed
            # once (random access would rewind and decompress it again for each member)
            with tarfile.open(fileobj=untar.open_stream(handle, budget), mode="r|",
                              tarinfo=untar.BoundedInfo) as source, untar.TreeWriter(tree, budget) as writer:
                for member in source:
                    if stop is not None and stop.is_set():
                        raise Stopped
                    source.members.clear()  # type: ignore[attr-defined]  # tarfile keeps every member; we keep ours
                    placed = _placed(member, top, entry["component"])
                    if placed is None:
                        continue
                    count += writer.add(member, *placed, source)
                    if pause and count == 1:
                        pause(stop)
                        pause = None
                untar.check_all_links(writer.links, "archive link %s -> %s leaves the tree through the archive's "
                                      "other links; refused", writer.steps)
    except untar.Refused as exc:
        raise untar.Refused("%s: %s" % (name, exc.message)) from None
    except (tarfile.TarError, EOFError, lzma.LZMAError, zlib.error, OSError) as exc:
        raise CudaSwitchError("%s cannot be unpacked: %s" % (name, getattr(exc, "strerror", None) or exc),
                              "nothing was installed") from None
    return count


def _merge(source: str, tree: str) -> None:
    """Move everything under `source` into `tree` (renames, no copies); files replace files. A dir
    meets only a dir: never a link an earlier component made, which would carry the move away."""
    for directory, dirs, files in os.walk(source):
        relative = os.path.relpath(directory, source)
        target = os.path.normpath(os.path.join(tree, relative))
        if not os.path.lexists(target):
            os.mkdir(target, 0o755)
        elif not stat.S_ISDIR(os.lstat(target).st_mode):
            raise untar.Refused("%s/ of one archive meets a link or file of another; refused" % untar.shown(relative))
        for name in files + [d for d in dirs if os.path.islink(os.path.join(directory, d))]:
            there = os.path.join(target, name)
            if os.path.lexists(there) and stat.S_ISDIR(os.lstat(there).st_mode):
                raise untar.Refused("%s of one archive meets a directory of another; refused" % untar.shown(
                    os.path.join(relative, name)))
            os.replace(os.path.join(directory, name), there)
    shutil.rmtree(source, ignore_errors=True)


def _placed(member: "tarfile.TarInfo", top: str, component: str) -> "tuple[Parts, Parts | None] | None":
    """(names in the classic tree, names of a hard link's target) for a member (top dir stripped,
    lib/ -> lib64/, each component's LICENSE under share/licenses/), or None for the top dir."""
    rest = _placed_parts(member.name, top, component, member.isdir())
    if not rest:
        if not member.isdir():
            raise untar.Refused("archive member %s is not a directory; refused" % untar.shown(member.name))
        return None
    # a hard link names another member by its archive path
    return rest, _placed_parts(member.linkname, top, component, False) if member.islnk() else None


def _placed_parts(name: str, top: str, component: str, isdir: bool) -> "Parts":
    parts = name.rstrip("/").split("/")
    if parts[0] != top or any(p in ("", ".", "..") for p in parts):
        raise CudaSwitchError("archive member %s is outside %s/" % (untar.shown(name), top),
                              "the archive is not NVIDIA's layout; nothing was installed")
    rest = parts[1:]
    if len(rest) == 1 and not isdir:
        rest = ["share", "licenses", component, rest[0]]  # LICENSE of each component side by side
    if rest and rest[0] == "lib":
        rest[0] = "lib64"
    return tuple(rest)
