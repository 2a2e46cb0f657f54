"""NVIDIA's CUDA wheels as data: the `cuda-toolkit` metapackage's pins, and component wheels
unpacked into the classic toolkit tree. CUDA 13 wheels share `nvidia/cu13/{bin,include,lib,nvvm}`,
11/12 wheels each have `nvidia/<component>/...`: the part after `nvidia/<dir>/` is the classic
tree, except that `lib/` becomes `lib64/` (with `lib -> lib64`).
"""

import email.parser
import json
import os
import re
import zipfile
import zlib
from collections.abc import Callable, Iterable
from zipfile import ZipInfo

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name as canonical

from cudaswitch.errors import CudaSwitchError
from cudaswitch.install import untar
from cudaswitch.install.untar import Parts

META_PACKAGE = "cuda-toolkit"
DEFAULT_COMPONENTS = ("nvcc", "cudart", "cccl")
WHEEL_NAME = re.compile(r"^(?P<name>[^-]+)-(?P<version>[^-]+)-")
SONAME = re.compile(r"^(lib[\w+.-]*?\.so)\.(\d+)$")

# version.json keys NVIDIA uses for the wheels' packages (redistrib JSON names); the rest map
# by rule: nvidia-cuda-X -> cuda_X, nvidia-X -> libX.
VERSION_JSON_KEYS = {"cuda-runtime": "cuda_cudart", "nvvm": "libnvvm", "nvtx": "cuda_nvtx",
                     "nvml-dev": "cuda_nvml_dev"}
VERSION_JSON_NAMES = {"cuda_cudart": "CUDA Runtime (cudart)", "cuda_nvcc": "CUDA NVCC",
                      "cuda_cccl": "CUDA C++ Core Compute Libraries", "cuda_crt": "CUDA CRT headers",
                      "libnvvm": "CUDA NVVM"}


# what zipfile raises for a damaged or hostile member: a bad header or CRC, a broken deflate
# stream, a stream cut short, an encrypted member (RuntimeError)
UNREADABLE = (zipfile.BadZipFile, zlib.error, EOFError, RuntimeError)


class WheelError(Exception):
    """A wheel that is not what its name says (corrupt zip, unsafe path, missing metadata)."""


def wheel_identity(path: str) -> "tuple[str, str]":
    """(canonical project name, version) from a wheel file name."""
    match = WHEEL_NAME.match(os.path.basename(path))
    if not match:
        raise WheelError("not a wheel file name: %s" % os.path.basename(path))
    return canonical(match.group("name")), match.group("version")


def component_pins(meta_wheel: str) -> "dict[str, list[str]]":
    """{extra: [requirement string, ...]} of the cuda-toolkit metapackage, for this platform."""
    try:
        with zipfile.ZipFile(meta_wheel) as archive:
            name = next((n for n in archive.namelist()
                         if n.count("/") == 1 and n.endswith(".dist-info/METADATA")), None)
            if name is None:
                raise WheelError("%s has no METADATA" % os.path.basename(meta_wheel))
            message = email.parser.HeaderParser().parsestr(archive.read(name).decode("utf-8", "replace"))
    except (zipfile.BadZipFile, OSError) as exc:
        raise WheelError("%s is not a readable wheel (%s)" % (os.path.basename(meta_wheel), exc)) from None
    extras: "dict[str, list[str]]" = {extra: [] for extra in message.get_all("Provides-Extra") or []}
    for text in message.get_all("Requires-Dist") or []:
        try:
            requirement = Requirement(text)
        except InvalidRequirement:
            continue
        for extra in extras:
            if requirement.marker is None or requirement.marker.evaluate({"extra": extra}):
                extras[extra].append("%s%s" % (requirement.name, requirement.specifier))
    return {extra: pins for extra, pins in extras.items() if pins}


def requirements_for(pins: "dict[str, list[str]]", components: "Iterable[str]") -> "list[str]":
    """Unique requirement strings for the chosen extras (each a key of `pins`), in a stable order."""
    chosen: "dict[str, str]" = {}
    for component in components:
        for requirement in pins[component]:
            chosen.setdefault(canonical(re.split(r"[<>=!~ ]", requirement, maxsplit=1)[0]), requirement)
    return [chosen[name] for name in sorted(chosen)]


def unpack(wheel: str, dest: str, pause: "Callable[[], object] | None" = None) -> int:
    """Extract one component wheel into the classic tree at `dest`; returns the file count. A
    redist archive's budget (untar.Budget) is charged with what the central directory declares
    before anything is written (a zip bomb is refused at once), then with the bytes written.
    `pause` runs after the first file: the test hook (CUDASWITCH_TEST_PAUSE_UNPACK)."""
    shown = os.path.basename(wheel)
    try:
        with open(wheel, "rb") as handle, zipfile.ZipFile(handle) as archive:
            size = os.fstat(handle.fileno()).st_size
            plan, dirs = _plan(archive.infolist())
            declared = untar.Budget(size)
            for _ in dirs:
                declared.member()
            for info, _ in plan:
                declared.member()
                declared.write(info.file_size)
            written = untar.Budget(size)
            for count, (info, parts) in enumerate(plan, 1):
                _extract(archive, info, os.path.join(dest, *parts), written)
                if pause and count == 1:
                    pause()
    except untar.Refused as exc:
        raise WheelError("%s: %s" % (shown, exc.message)) from None
    except UNREADABLE as exc:
        raise WheelError("%s is not a readable wheel (%s)" % (shown, exc)) from None
    return len(plan)


def _plan(infos: "list[ZipInfo]") -> "tuple[list[tuple[ZipInfo, Parts]], set[Parts]]":
    """The members that go into the tree, as (info, path parts), and the dirs they need."""
    plan: "list[tuple[ZipInfo, Parts]]" = []
    dirs: "set[Parts]" = set()
    for info in infos:
        relative = classic_path(info.filename)
        if relative is None or info.is_dir():
            continue
        parts = tuple(relative.split(os.sep))
        untar.check_parts(parts, info.filename)
        if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
            # zipfile inflates bzip2 and lzma members without an output bound (all of a read
            # at once, in memory); NVIDIA's wheels use deflate
            raise untar.Refused("member %s uses zip compression method %d; refused" % (
                untar.shown(info.filename), info.compress_type))
        plan.append((info, parts))
        dirs.update(parts[:depth] for depth in range(1, len(parts)))
    return plan, dirs


def classic_path(name: str) -> "str | None":
    """Where a wheel member goes in the classic tree, or None for packaging-only files."""
    parts = name.split("/")
    if any(p in ("", ".", "..") for p in parts) or name.startswith("/") or "\\" in name:
        if not name.endswith("/"):
            raise WheelError("unsafe path in wheel: %r" % name)
        return None
    if len(parts) < 3 or parts[0] != "nvidia":
        return None  # dist-info, nvidia/__init__.py
    rest = parts[2:]
    if rest[-1] == "__init__.py" or "__pycache__" in rest or rest[0] == ".metadata":
        return None
    if rest[0] == "lib":
        rest[0] = "lib64"
    return os.path.join(*rest)


def _extract(archive: "zipfile.ZipFile", info: "ZipInfo", target: str, budget: "untar.Budget") -> None:
    os.makedirs(os.path.dirname(target), exist_ok=True)
    with archive.open(info) as source, open(target, "wb") as sink:
        while chunk := source.read(untar.CHUNK):
            # zipfile stops a member at its declared size today; what is written is charged
            # anyway, so a reader that trusts the compressed stream cannot fill the disk
            budget.write(len(chunk))
            sink.write(chunk)
    executable = (info.external_attr >> 16) & 0o111
    os.chmod(target, 0o755 if executable else 0o644)


def finish_tree(root: str, document: "dict[str, dict[str, str]]", cudart_version: "str | None" = None) -> None:
    """Make the unpacked tree look like NVIDIA's installer made it: lib -> lib64, versioned
    libcudart with its soname links, `libX.so` development links, and `document` as version.json."""
    lib64 = os.path.join(root, "lib64")
    if os.path.isdir(lib64):
        if not os.path.lexists(os.path.join(root, "lib")):
            os.symlink("lib64", os.path.join(root, "lib"))
        _link_libraries(lib64, cudart_version)
    try:  # an archive may have put a dir or a link at that name: never written through
        fd = os.open(os.path.join(root, "version.json"), untar.CREATE_FILE, 0o644)
    except OSError as exc:
        raise CudaSwitchError("cannot write version.json into the unpacked tree: %s" % (exc.strerror or exc),
                              "an archive holds a version.json of its own; nothing was installed") from None
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        json.dump(document, handle, indent=3, sort_keys=True)
        handle.write("\n")


def _link_libraries(lib64: str, cudart_version: "str | None") -> None:
    """libcudart.so.13 -> libcudart.so.13.0.96 (as the installer ships it: the runtime's exact
    version), then libX.so -> libX.so.N for linking with -lX."""
    for name in sorted(os.listdir(lib64)):
        match = SONAME.match(name)
        path = os.path.join(lib64, name)
        if not match or os.path.islink(path):
            continue
        stem, major = match.groups()
        if stem == "libcudart.so" and cudart_version and cudart_version.split(".")[0] == major:
            full = "%s.%s" % (stem, ".".join(plain_version(cudart_version).split(".")[:3]))
            os.rename(path, os.path.join(lib64, full))
            os.symlink(full, path)
        if not os.path.lexists(os.path.join(lib64, stem)):
            os.symlink(name, os.path.join(lib64, stem))


def plain_version(version: str) -> str:
    """12.4.127.post1 -> 12.4.127: a repackaging suffix is no part of the component's version."""
    return re.sub(r"(\.post\d+|\+.*)$", "", version)


def version_json(versions: "dict[str, str]", release: str) -> "dict[str, dict[str, str]]":
    """NVIDIA's version.json shape from {canonical wheel name: version}: {"cuda": {"name",
    "version"}, "cuda_nvcc": {...}, ...}."""
    document = {"cuda": {"name": "CUDA SDK", "version": release}}
    for name, version in sorted(versions.items()):
        key = version_json_key(name)
        document[key] = {"name": VERSION_JSON_NAMES.get(key, name), "version": plain_version(version)}
    return document


def version_json_key(wheel_name: str) -> str:
    """nvidia-cuda-nvcc-cu12 -> cuda_nvcc; nvidia-cuda-runtime -> cuda_cudart; nvidia-cublas -> libcublas."""
    base = re.sub(r"-cu\d+$", "", canonical(wheel_name))
    base = base[len("nvidia-"):] if base.startswith("nvidia-") else base
    if base in VERSION_JSON_KEYS:
        return VERSION_JSON_KEYS[base]
    if base.startswith("cuda-"):
        return base.replace("-", "_")
    return "lib" + base.replace("-", "_")
