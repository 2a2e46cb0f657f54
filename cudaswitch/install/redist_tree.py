"""Redist archives -> the classic toolkit tree the wheel source also makes (`bin/`, `include/`,
`lib64/` with `lib -> lib64`, `nvvm/`, `version.json`), and the first compile that proves it.

Each archive holds one top directory `<name>-<platform>-<version>-archive/`; a toolkit is the union
of the components' trees. Members are extracted with tarfile's `data` filter (no absolute paths,
no links leaving the tree, no device files); a member outside the expected top directory refuses
the archive.
"""

import concurrent.futures
import json
import os
import shutil
import tarfile
import tempfile
import threading

from cudaswitch.install import wheels
from cudaswitch.errors import CudaSwitchError

COMPILE_TIMEOUT = 300.0
KERNEL = r"""
__global__ void add_one(int *x) { x[threadIdx.x] += 1; }
int main() { int *d = nullptr; cudaMalloc(&d, 4); add_one<<<1, 1>>>(d); return cudaDeviceSynchronize(); }
"""


def top_dir(entry):
    """cuda_nvcc/linux-x86_64/cuda_nvcc-linux-x86_64-13.1.115-archive.tar.xz -> its top dir name."""
    name = os.path.basename(entry["relative_path"])
    for suffix in (".tar.xz", ".tar.gz", ".tgz", ".tar"):
        if name.endswith(suffix):
            return name[: -len(suffix)]
    raise CudaSwitchError("%s is not a tar archive name" % name)


class Stopped(Exception):
    """An unpack was told to stop (the install is being interrupted)."""


def unpack_all(fetched, tree, staging, pause=None, progress=None):
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
                count = job.result()
                if progress:
                    progress("unpacked %s %s (%d files)" % (jobs[job]["component"], jobs[job]["version"], count))
        except BaseException:
            stop.set()
            raise
    for entry, _ in fetched:
        _merge(os.path.join(staging, entry["component"]), tree)


def _unpack_one(archive, entry, dest, stop, pause):
    count = unpack(archive, entry, dest, pause, stop)
    os.unlink(archive)  # not needed once unpacked: keeps the peak disk use near the tree's size
    return count


def unpack(archive, entry, tree, pause=None, stop=None):
    """Extract one component archive into `tree`; returns the number of files written.

    `pause(stop)` runs after the first file (the test hook that holds an install midway)."""
    top, count = top_dir(entry), 0
    if not hasattr(tarfile, "data_filter"):
        raise CudaSwitchError("this Python's tarfile has no safe extraction filter; use Python 3.10.12+ or 3.11.4+")
    try:
        # stream mode: members are extracted in archive order, so the xz stream is decompressed
        # once (random access would rewind and decompress it again for each member)
        with tarfile.open(archive, "r|*") as source:
            for member in source:
                if stop is not None and stop.is_set():
                    raise Stopped
                placed = _placed(member, top, entry["component"])
                if placed is None:
                    continue
                source.extract(placed, tree, filter="data")
                count += not placed.isdir()
                if pause and count == 1:
                    pause(stop)
                    pause = None
    except (tarfile.TarError, EOFError) as exc:
        raise CudaSwitchError("%s cannot be unpacked: %s" % (os.path.basename(archive), exc),
                              "nothing was installed") from None
    return count


def _merge(source, tree):
    """Move everything under `source` into `tree` (renames, no copies); files replace files."""
    for directory, dirs, files in os.walk(source):
        relative = os.path.relpath(directory, source)
        target = os.path.normpath(os.path.join(tree, relative))
        os.makedirs(target, exist_ok=True)
        for name in files + [d for d in dirs if os.path.islink(os.path.join(directory, d))]:
            os.replace(os.path.join(directory, name), os.path.join(target, name))
    shutil.rmtree(source, ignore_errors=True)


def _placed(member, top, component):
    """The member renamed into the classic tree (top dir stripped, lib/ -> lib64/), or None."""
    parts = member.name.rstrip("/").split("/")
    if parts[0] != top or any(p in ("", ".", "..") for p in parts):
        raise CudaSwitchError("archive member %r is outside %s/" % (member.name, top),
                              "the archive is not NVIDIA's layout; nothing was installed")
    rest = parts[1:]
    if not rest:
        return None
    if len(rest) == 1 and not member.isdir():
        rest = ["share", "licenses", component, rest[0]]  # LICENSE of each component side by side
    if rest[0] == "lib":
        rest[0] = "lib64"
    placed = member.replace(name="/".join(rest), deep=False)
    if member.islnk():  # a hard link names another member by its archive path
        placed = placed.replace(linkname=_placed_name(member.linkname, top), deep=False)
    return placed


def _placed_name(name, top):
    parts = name.split("/")
    rest = parts[1:] if parts and parts[0] == top else parts
    if rest and rest[0] == "lib":
        rest[0] = "lib64"
    return "/".join(rest)


def finish(tree, release, entries):
    """lib -> lib64, development links where an archive lacks them, and version.json."""
    lib64 = os.path.join(tree, "lib64")
    if os.path.isdir(lib64):
        if not os.path.lexists(os.path.join(tree, "lib")):
            os.symlink("lib64", os.path.join(tree, "lib"))
        wheels._link_libraries(lib64, None)
    document = {"cuda": {"name": "CUDA SDK", "version": release}}
    for entry in entries:
        document[entry["component"]] = {"name": entry["name"], "version": entry["version"]}
    with open(os.path.join(tree, "version.json"), "w", encoding="utf-8") as handle:
        json.dump(document, handle, indent=3, sort_keys=True)
        handle.write("\n")
    return document


def compile_env(tree, env, cache_dir):
    """(the environment the first compile runs in, the host compiler picked for it or None): PATH
    only absolute entries (nothing in the temp dir can stand in for gcc), and the supported g++-N
    `use` would pick when the default gcc is above the tree's ceiling (11.8 takes gcc 11 at most)."""
    from cudaswitch.switch.envdiff import pristine
    from cudaswitch.verify import hostcc

    env = pristine(env)  # not the compilers an active switch chose for another toolkit
    env = dict(env, PATH=os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep) if os.path.isabs(p)))
    record = {"root": tree, "nvcc": os.path.join(tree, "bin", "nvcc"), "lib_dirs": [os.path.join(tree, "lib64")]}
    chosen = hostcc.choose(cache_dir, record, env)
    return hostcc.with_compilers(env, chosen), chosen.get("CUDAHOSTCXX")


def first_compile(tree, env, timeout=COMPILE_TIMEOUT):
    """Build a one-kernel program with the tree's nvcc (compile, then link against its cudart):
    None when it builds, else the first error line. No GPU is needed; nothing is run. `env`: from
    compile_env."""
    from cudaswitch.verify.nvcc import first_error_line
    from cudaswitch.verify.runner import run_bounded

    nvcc = os.path.join(tree, "bin", "nvcc")
    with tempfile.TemporaryDirectory(prefix="cudaswitch-first-compile-") as tmp:
        with open(os.path.join(tmp, "k.cu"), "w") as handle:
            handle.write(KERNEL)
        # one nvcc run compiles (cicc, ptxas, fatbinary, host gcc) and links (nvlink, cudart)
        code, out, err = run_bounded([nvcc, "k.cu", "-o", "k"], env, timeout, tmp)
        if code != 0:
            text = err if code is None else (out + err).decode("utf-8", "replace")
            return "`nvcc k.cu -o k` failed: %s" % (first_error_line(text) or text.strip())
        if not os.path.isfile(os.path.join(tmp, "k")):
            return "`nvcc k.cu -o k` wrote no program"
    return None
