"""A candidate root as a record: tools, libraries, version, status. Layouts: classic (`bin/`, `lib64/`:
installers, distros, managed, `nvidia/cu13` wheels), conda (`targets/<triple>/`, shared with the
env's python) and pip-split (CUDA 11/12 wheels, `nvidia/<component>/`)."""

import glob
import os

from cudaswitch.registry import nvcc_probe as probe
from cudaswitch.safeio import read_or_none
from cudaswitch.toolkit import new_record, version_tuple

TYPE_CHECKING = False
if TYPE_CHECKING:
    from cudaswitch.toolkit import ToolkitRecord

# Layouts whose bin/ and lib/ also hold non-CUDA things (python, pip, libstdc++, libssl):
# switching to them goes through a view directory of CUDA-only links.
ISOLATED_LAYOUTS = ("conda",)


def tool_dirs(root: str, layout: str) -> "tuple[list[str], list[str]]":
    """(bin_dirs, lib_dirs) of a root in its layout; a lib dir reached twice (lib -> lib64) counts once."""
    if layout == "pip-split":
        bins = [d for d in (os.path.join(root, "cuda_nvcc", "bin"),) if os.path.isdir(d)]
        return bins, [d for d in sorted(glob.glob(os.path.join(root, "*", "lib"))) if glob.glob(d + "/lib*.so*")]
    libs: "dict[str, str]" = {}  # real path: the first dir found there
    for pattern in ("lib64", "lib", "targets/*/lib"):
        for directory in sorted(glob.glob(os.path.join(root, pattern))):
            if glob.glob(os.path.join(directory, "libcudart.so*")):
                libs.setdefault(os.path.realpath(directory), directory)
    bins = [os.path.join(root, "bin")] if os.path.isdir(os.path.join(root, "bin")) else []
    return bins, list(libs.values())


def describe(root: str, real: str, layout: str, timeout: float, nvcc_cache: dict, hint_version: "str | None" = None,
             run_nvcc: bool = True) -> "ToolkitRecord":
    """The record of one root. `nvcc_cache`: probe.nvcc_key -> run_nvcc result (updated here); with
    run_nvcc False nothing under `root` is executed."""
    problems: "list[str]" = []
    bins, libs = tool_dirs(root, layout)
    nvcc = next((os.path.join(b, "nvcc") for b in bins if _runnable(os.path.join(b, "nvcc"))), None)
    file_version, components = _file_version(root, layout, problems)
    cudart = probe.cudart_version(libs)
    if cudart:
        components.setdefault("cudart_soname", cudart)
    nvcc_version = _nvcc_version(nvcc, timeout, nvcc_cache, problems) if run_nvcc else None
    version = file_version or nvcc_version or hint_version or cudart
    if nvcc_version and file_version and version_tuple(nvcc_version)[:2] != version_tuple(file_version)[:2]:
        problems.append("nvcc reports %s but the toolkit's files say %s" % (nvcc_version, file_version))
    if not version:
        problems.append("no version found (no version.json, version.txt, nvcc or libcudart)")
    if nvcc is None:
        problems.append(_no_nvcc_problem(root, bins))
    missing = missing_compile_parts(root, bins, libs) if nvcc else []
    if missing:
        problems.append(MISSING_PREFIX + ", ".join(missing))
    elif nvcc:
        problems += _link_problem(os.path.dirname(nvcc), libs)
    return new_record(root, real, _status(problems, nvcc), problems, version=version, nvcc=nvcc, bin_dirs=bins,
                      lib_dirs=libs, isolated=layout in ISOLATED_LAYOUTS, components=components, layout=layout,
                      missing=missing)


# What nvcc runs or reads for `nvcc x.cu -o x`: cudafe++ and the front end's headers come with
# nvcc itself; these are the parts copies and partial installs lose (a wheel set without
# nvidia-cuda-nvvm has no cicc; a runtime package has no crt/ headers).
MISSING_PREFIX = "cannot compile, missing: "
BIN_PARTS = ("ptxas", "fatbinary", "nvlink")
HEADER_PARTS = ("crt/host_config.h", "cuda_runtime.h")
LINK_PREFIX = "cannot link: "
LINKED = ("libcudadevrt.a", "libcudart_static.a")
# NVIDIA's own nvcc.profile (installers, redist archives, wheels) links `nvcc x.cu -o x` from
# targets/<triple>/lib, else lib64/ (nvcc sets _TARGET_DIR_ when bin/../targets/<triple> exists).
STOCK_LINK = b'"-L$(TOP)/$(_TARGET_DIR_)/lib$(_TARGET_SIZE_)"'


def missing_compile_parts(root: str, bins: "list[str]", libs: "list[str]") -> "list[str]":
    """The compile-pipeline parts a toolkit with nvcc lacks, by name ([] when it can compile)."""
    missing = []
    homes = [root] + [os.path.dirname(b) for b in bins]
    if not any(os.access(os.path.join(h, "nvvm", "bin", "cicc"), os.X_OK) for h in homes):
        missing.append("nvvm/bin/cicc")
    for tool in BIN_PARTS:
        if not any(os.access(os.path.join(b, tool), os.X_OK) for b in bins):
            missing.append("bin/" + tool)
    includes = [os.path.join(root, "include")] + glob.glob(os.path.join(root, "targets", "*", "include"))
    includes += [os.path.join(os.path.dirname(lib), "include") for lib in libs]
    for header in HEADER_PARTS:
        if not any(os.path.isfile(os.path.join(d, header)) for d in includes):
            missing.append("include/" + header)
    if not any(glob.glob(os.path.join(d, "libcudart.so*")) for d in libs):
        missing.append("libcudart")
    return missing


def _link_problem(bin_dir: str, libs: "list[str]") -> "list[str]":
    """Why `nvcc x.cu -o x` cannot link (NVIDIA's 13.x wheels keep libcudart_static.a in lib/), read
    off the stock nvcc.profile; another profile (conda's, a distribution's) is left to the real build."""
    top = os.path.dirname(bin_dir)
    link = glob.glob(os.path.join(top, "targets", "*", "lib")) or [os.path.join(top, "lib64")]
    lacking = [n for n in LINKED if not any(os.path.isfile(os.path.join(d, n)) for d in link)]
    if not lacking or STOCK_LINK not in (read_or_none(os.path.join(bin_dir, "nvcc.profile"), 65536) or b""):
        return []
    return [LINK_PREFIX + "nvcc links from %s/, which has no %s; %s" % (
        os.path.relpath(link[0], top), " or ".join(lacking), link_remedy(libs, lacking))]


def link_remedy(lib_dirs: "list[str]", names: "list[str]") -> str:
    """How to link when nvcc's link lacked `names` (libcudart_static.a ...): they may be elsewhere in the toolkit."""
    there = next((d for d in lib_dirs if all(os.path.isfile(os.path.join(d, n)) for n in names)), None)
    return "they are in %s: link with -L%s (or export LIBRARY_PATH=%s)" % (there, there, there) if there else (
        "this toolkit has none: use a complete one (`cudaswitch install VERSION` takes NVIDIA's redist toolkit)")


def _file_version(root: str, layout: str, problems: "list[str]") -> "tuple[str | None, dict]":
    """(version, components) from the files, most trusted first: version.json, version.txt, the
    wheels' dist-info beside a wheel root. Not beside a conda env: its parent is `envs/`, holding every
    env of the install, no wheel metadata lives there, and globbing it once per env is quadratic."""
    version, components, problem = probe.read_version_json(root)
    if problem:
        problems.append(problem)
    return version or probe.read_version_txt(root) or (
        None if layout == "conda" else probe.read_dist_info(root)), components


def _runnable(path: str) -> bool:
    """An executable regular file: a FIFO or device named nvcc is not a compiler."""
    return os.path.isfile(path) and os.access(path, os.X_OK)


def broken(root: str, real: str, reason: str, outside_root: bool = False) -> "ToolkitRecord":
    """The record of a root that cannot be read at all (dangling link, permission, empty)."""
    return new_record(root, real, "broken", [reason], outside_root=outside_root)


def _nvcc_version(nvcc: "str | None", timeout: float, cache: dict, problems: "list[str]") -> "str | None":
    if nvcc is None:
        return None
    try:
        key = probe.nvcc_key(nvcc)
    except OSError as exc:
        problems.append("nvcc cannot be read: %s" % exc.strerror)
        return None
    result = cache.get(key)
    if result is None:
        result = cache[key] = probe.run_nvcc(nvcc, timeout)
    if "error" in result:
        problems.append(result["error"])
        return None
    return result["version"]


def _no_nvcc_problem(root: str, bins: "list[str]") -> str:
    ptxas = any(os.path.exists(os.path.join(b, "ptxas")) for b in bins)
    what = "ptxas, headers and libraries" if ptxas else "libraries and headers"
    return "no nvcc in %s: a runtime-only toolkit (%s), it cannot compile .cu files" % (
        os.path.join(root, "bin") if bins == [] else bins[0], what)


def _status(problems: "list[str]", nvcc: "str | None") -> str:
    if any(not p.startswith(("no nvcc in ", MISSING_PREFIX, LINK_PREFIX)) for p in problems):
        return "broken"
    return "ok" if nvcc and not problems else "incomplete"
