"""What `audit` reads from a toolkit's files without running anything: component versions (read,
never inferred, each with where it came from, so a report can be checked by hand), the version in
nvcc's own binary, and size on disk.
"""

import glob
import os
import re
import stat
from typing import IO, TYPE_CHECKING, Dict, List, Optional, Sequence, Tuple, cast

from cudaswitch.safeio import Unreadable, open_regular, read_or_none
from cudaswitch.toolkit import COMPONENTS, VERSION_JSON_KEYS

if TYPE_CHECKING:
    from cudaswitch.toolkit import AnyRecord

    Found = Tuple[Optional[str], Optional[str]]  # (version, where it was read), or (None, None)

# the component each wheel (dist-info name) holds
WHEELS = {"nvidia_cuda_runtime": "cudart", "nvidia_cuda_nvcc": "nvcc", "nvidia_cuda_cupti": "cupti",
          "nvidia_cublas": "cublas", "nvidia_cudnn": "cudnn", "nvidia_nccl": "nccl"}
# header, and the macros that make up major.minor.patch
HEADERS = {
    "cudnn": (("cudnn_version.h", "cudnn.h"), ("CUDNN_MAJOR", "CUDNN_MINOR", "CUDNN_PATCHLEVEL")),
    "nccl": (("nccl.h",), ("NCCL_MAJOR", "NCCL_MINOR", "NCCL_PATCH")),
    "cublas": (("cublas_api.h",), ("CUBLAS_VER_MAJOR", "CUBLAS_VER_MINOR", "CUBLAS_VER_PATCH")),
}
LIBRARIES = {"cudart": "libcudart", "cudnn": "libcudnn", "nccl": "libnccl", "cupti": "libcupti",
             "cublas": "libcublas"}
WHEEL_DIST = re.compile(r"^(nvidia_[a-z_]+?)(?:_cu\d+)?-(\d+(?:\.\d+)+)[^/]*\.dist-info$")
NVCC_BANNER = re.compile(rb"Cuda compilation tools, release (\d+\.\d+), V(\d+\.\d+\.\d+)")
SCRIPT_LIMIT = 64 << 10  # a wrapper nvcc (#!/bin/sh exec .../nvcc) is kept as it is
BANNER_OVERLAP = 256


def search_dirs(record: "AnyRecord") -> Tuple[List[str], List[str]]:
    """(include dirs, library dirs) of a record, in every layout (classic, conda, pip-split)."""
    root = record["root"]
    if record.get("layout") == "pip-split":
        return sorted(glob.glob(os.path.join(root, "*", "include"))), sorted(glob.glob(os.path.join(root, "*", "lib")))
    includes = [os.path.join(root, "include")] + sorted(glob.glob(os.path.join(root, "targets", "*", "include")))
    libs = [os.path.join(root, d) for d in ("lib64", "lib", "extras/CUPTI/lib64")]
    libs += sorted(glob.glob(os.path.join(root, "targets", "*", "lib")))
    return [d for d in includes if os.path.isdir(d)], [d for d in libs if os.path.isdir(d)]


def header_version(include_dirs: Sequence[str], names: Sequence[str], macros: Sequence[str]) -> "Found":
    """'9.1.0' from #define MAJOR/MINOR/PATCH in the first of `names` found; (version, path)."""
    for directory in include_dirs:
        for name in names:
            path = os.path.join(directory, name)
            data = read_or_none(path, 1 << 20)  # a FIFO or device in an image must not hang the audit
            if data is None:
                continue
            text = data.decode("latin-1")
            values = [re.search(r"^\s*#\s*define\s+%s\s+(\d+)" % m, text, re.M) for m in macros]
            if all(values):
                return ".".join(v.group(1) for v in values if v), path  # `if v`: all are, as checked
    return None, None


def soname_version(lib_dirs: Sequence[str], stem: Optional[str]) -> "Found":
    """libcudnn.so.9.1.0 -> '9.1.0', the newest; only a full x.y.z (libcudart.so.11.0 is every 11.x)."""
    best: Optional[str] = None
    where: Optional[str] = None
    if not stem:
        return None, None
    pattern = re.compile(re.escape(stem) + r"\.so\.(\d+(?:\.\d+)*)$")
    for directory in lib_dirs:
        for path in glob.glob(os.path.join(directory, stem + ".so.*")):
            match = pattern.search(path)
            if match and (best is None or _numbers(match.group(1)) > _numbers(best)):
                best, where = match.group(1), path
    return (best, where) if best and best.count(".") >= 2 else (None, None)


def dist_info_versions(record: "AnyRecord") -> "Dict[str, Found]":
    """{component: (version, dist-info path)} from the wheels' metadata beside the toolkit."""
    root = record["root"]
    dirs = [os.path.join(root, "dist-info")]
    if os.path.basename(root) == "nvidia":  # pip-split: ROOT is site-packages/nvidia
        dirs.append(os.path.dirname(root))
    elif os.path.basename(os.path.dirname(root)) == "nvidia":  # site-packages/nvidia/cu13
        dirs.append(os.path.dirname(os.path.dirname(root)))
    found: "Dict[str, Found]" = {}
    for directory in dirs:
        for path in sorted(glob.glob(os.path.join(directory, "nvidia_*.dist-info"))):
            match = WHEEL_DIST.match(os.path.basename(path))
            if match and match.group(1) in WHEELS:
                found.setdefault(WHEELS[match.group(1)], (match.group(2), path))
    return found


def nvcc_binary_version(nvcc: str) -> Optional[str]:
    """The version nvcc prints for --version, read from the binary's bytes (nothing is run)."""
    try:
        with os.fdopen(open_regular(nvcc), "rb") as handle:  # a FIFO named nvcc would block a plain open forever
            match = NVCC_BANNER.search(find_banner(handle, os.fstat(handle.fileno()).st_size))
    except (OSError, Unreadable):
        return None
    return match.group(2).decode() if match else None


def find_banner(stream: IO[bytes], size: int) -> bytes:
    """nvcc's `Cuda compilation tools, release X, VX.Y.Z` line, or b""; a wrapper script whole."""
    head = stream.read(min(size, SCRIPT_LIMIT))
    if head.startswith(b"#!") and size <= SCRIPT_LIMIT:
        return head
    window = head
    while True:
        match = NVCC_BANNER.search(window)
        if match:
            return match.group(0) + b"\n"
        chunk = stream.read(1 << 20)
        if not chunk:
            return b""
        window = window[-BANNER_OVERLAP:] + chunk


def components(record: "AnyRecord", nvcc_version: Optional[str] = None
               ) -> Tuple[Dict[str, Optional[str]], Dict[str, Optional[str]]]:
    """({component: version | None}, {component: where it was read}). Trust order: version.json,
    dist-info, headers, sonames; nvcc's own word first for nvcc; cudart last from CUDART_VERSION."""
    includes, libs = search_dirs(record)
    version_json = {k: v for k, v in record.get("components", {}).items() if k != "cudart_soname"}
    wheels = dist_info_versions(record)
    found: "Dict[str, Found]" = {}
    for name in COMPONENTS:
        candidates = (
            (version_json.get(VERSION_JSON_KEYS.get(name, "")), os.path.join(record["root"], "version.json")),
            wheels.get(name, (None, None)),
            header_version(includes, *HEADERS[name]) if name in HEADERS else (None, None),
            soname_version(libs, LIBRARIES.get(name)),
        )
        found[name] = next((pair for pair in candidates if pair[0]), (None, None))
    if record.get("nvcc"):
        own = nvcc_version or nvcc_binary_version(cast(str, record["nvcc"]))
        if own:
            found["nvcc"] = (own, record["nvcc"])
    else:  # version.json lists cuda_nvcc for a runtime-only tree too (ptxas is in that package)
        found["nvcc"] = (None, None)
    if found["cudart"][0] is None:  # CUDART_VERSION 13000 -> '13.0' (major*1000 + minor*10)
        value, where = header_version(includes, ("cuda_runtime_api.h",), ("CUDART_VERSION",))
        found["cudart"] = ("%d.%d" % (int(value) // 1000, int(value) % 1000 // 10), where) if value else (None, None)
    return {k: v[0] for k, v in found.items()}, {k: v[1] for k, v in found.items() if v[0]}


def tree_size(path: str) -> int:
    """Bytes as `du -sb` counts them: apparent sizes, each inode once (hardlinked copies), no links followed."""
    try:
        st = os.lstat(path)
    except OSError:
        return 0
    seen, total = {(st.st_dev, st.st_ino)}, st.st_size
    for top, dirs, files in os.walk(path) if stat.S_ISDIR(st.st_mode) else ():
        for name in dirs + files:
            try:
                st = os.lstat(os.path.join(top, name))
            except OSError:
                continue
            if (st.st_dev, st.st_ino) not in seen:
                seen.add((st.st_dev, st.st_ino))
                total += st.st_size
    return total


def _numbers(text: str) -> Tuple[int, ...]:
    return tuple(int(p[:9]) for p in text.split(".") if p.isascii() and p.isdigit())
