"""What a verdict or a build depends on, read with stat alone (no process, os only): the same
files and variables unchanged means the cached answer still holds."""

import os

from cudaswitch.pathsearch import which


def _identity(path):
    """(path, real path, mtime, size) of a file, or None: a rebuilt or replaced binary changes it."""
    if not path:
        return None
    try:
        real = os.path.realpath(path)
        st = os.stat(real)
    except OSError:
        return (path, None)
    return (path, real, st.st_mtime_ns, st.st_size)


COMPILE_TOOLS = ("nvcc", "ptxas", "fatbinary", "nvlink", "cudafe++")
BUILD_ENV = ("NVCC_CCBIN", "CUDAHOSTCXX", "NVCC_PREPEND_FLAGS", "NVCC_APPEND_FLAGS")


def toolkit_identity(record, env):
    """What a real build with this toolkit depends on, read with stat alone: the compile tools,
    cicc, host_config.h, libcudart, the host compiler and the variables nvcc reads."""
    root = record["root"]
    files = [os.path.join(b, tool) for b in record.get("bin_dirs") or [] for tool in COMPILE_TOOLS]
    files += [os.path.join(root, "nvvm", "bin", "cicc"), os.path.join(root, "include", "crt", "host_config.h")]
    for lib in record.get("lib_dirs") or []:
        files.append(os.path.join(lib, "libcudart.so"))
        files.append(os.path.join(os.path.dirname(lib), "include", "crt", "host_config.h"))
    return (tuple(_identity(f) for f in files), _identity(env.get("NVCC_CCBIN") or which("gcc", env)),
            tuple(env.get(k) for k in BUILD_ENV))
