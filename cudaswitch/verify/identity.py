"""What a verdict or a build depends on, read with stat alone (no process, os only): the same
files and variables unchanged means the cached answer still holds."""

import os

from cudaswitch import __version__
from cudaswitch.pathsearch import which
from cudaswitch.safeio import file_identity

TYPE_CHECKING = False
if TYPE_CHECKING:
    from cudaswitch.paths import Paths
    from cudaswitch.toolkit import AnyRecord, Env

# Where a distribution's driver package puts the user-space libcuda: a driver upgrade replaces it.
LIBCUDA_DIRS = ("/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib64", "/usr/lib", "/lib64")


def path_identity(path: "str | None") -> "tuple | None":
    """(path, *file_identity) of a file, (path, None) when absent, None for no path: a replaced binary changes it."""
    if not path:
        return None
    try:
        return (path, *file_identity(path))
    except OSError:
        return (path, None)


COMPILE_TOOLS = ("nvcc", "nvcc.profile", "ptxas", "fatbinary", "nvlink", "cudafe++")
LINKED = ("libcudart.so", "libcudart_static.a", "libcudadevrt.a", "../include/crt/host_config.h")
BUILD_ENV = ("NVCC_CCBIN", "CUDAHOSTCXX", "NVCC_PREPEND_FLAGS", "NVCC_APPEND_FLAGS", "LIBRARY_PATH")


def toolkit_identity(record: "AnyRecord", env: "Env") -> tuple:
    """What a real build with this toolkit depends on, read with stat alone: the compile tools, nvcc.profile,
    cicc, host_config.h, the libraries `nvcc x.cu -o x` links, the host compiler, the variables nvcc and ld read."""
    root = record["root"]
    files = [os.path.join(b, tool) for b in record.get("bin_dirs") or [] for tool in COMPILE_TOOLS]
    files += [os.path.join(root, "nvvm", "bin", "cicc"), os.path.join(root, "include", "crt", "host_config.h")]
    files += [os.path.join(lib, name) for lib in dict.fromkeys((record.get("lib_dirs") or []) + [os.path.join(
        root, "lib64")]) for name in LINKED]
    return (tuple(path_identity(f) for f in files), path_identity(env.get("NVCC_CCBIN") or which("gcc", env)),
            tuple(env.get(k) for k in BUILD_ENV))


def driver_identity(paths: "Paths", env: "Env") -> tuple:
    """The override libcuda, else /proc's version text, the loader cache, each libcuda.so.1 the loader may
    pick (an upgrade without reboot changes them before /proc) and WSL's libcuda."""
    planned = (env.get("CUDASWITCH_DRIVER"), env.get("CUDASWITCH_GPUS"))
    if any(planned):
        return ("planned", planned, driver_identity(paths, {k: v for k, v in env.items() if k not in
                                                             ("CUDASWITCH_DRIVER", "CUDASWITCH_GPUS")}))
    override = env.get("CUDASWITCH_LIBCUDA")
    if override:
        return ("override", path_identity(override))
    from cudaswitch.safeio import read_or_none

    text = read_or_none(paths.host("/proc/driver/nvidia/version"), 4096)
    dirs = [d for d in env.get("LD_LIBRARY_PATH", "").split(os.pathsep) if os.path.isabs(d)]
    libs = tuple(path_identity(os.path.join(d, "libcuda.so.1")) for d in dirs + [paths.host(d) for d in LIBCUDA_DIRS])
    return ("proc", text, path_identity(paths.host("/etc/ld.so.cache")), libs,
            path_identity(paths.host("/usr/lib/wsl/lib/libcuda.so.1")))


def cudaswitch_version() -> str:
    """Part of every cache key: a new release may check more, so its answers are new ones."""
    return __version__
