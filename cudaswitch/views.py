"""View directories: CUDA-only links into a toolkit that lives inside a conda or Python env.

Putting a conda env's bin/ on PATH would also put its python, pip and libstdc++ first. The view
holds links to the CUDA tools and CUDA libraries only; nvcc follows /proc/self/exe to its real
directory, so it still finds its own nvcc.profile, include/ and nvvm/ through the link.
"""

import hashlib
import os
import shutil

CUDA_TOOLS = (
    "nvcc", "ptxas", "nvlink", "fatbinary", "cudafe++", "bin2c", "cuobjdump", "nvdisasm", "nvprune",
    "cu++filt", "cuda-gdb", "compute-sanitizer", "nvprof", "ncu", "nsys", "__nvcc_device_query",
)
CUDA_LIB_PREFIXES = (
    "libcudart", "libcublas", "libcufft", "libcurand", "libcusolver", "libcusparse", "libcupti",
    "libcudnn", "libcufile", "libnpp", "libnvrtc", "libnvJitLink", "libnvjitlink", "libnvvm",
    "libnvToolsExt", "libnvtx", "libnvjpeg", "libnvblas", "libnccl", "libnvperf", "libcudadevrt",
)


def view_dir(cache_dir, real_root):
    digest = hashlib.sha256(real_root.encode("utf-8", "surrogateescape")).hexdigest()[:16]
    return os.path.join(cache_dir, "views", digest)


def build(cache_dir, record):
    """Create (or refresh) the view of an isolated record; returns (bin_dir, lib_dir)."""
    target = view_dir(cache_dir, record["real"])
    tmp = target + ".%d.tmp" % os.getpid()
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(os.path.join(tmp, "bin"))
    os.makedirs(os.path.join(tmp, "lib"))
    _link_matching(record["bin_dirs"], os.path.join(tmp, "bin"), lambda n: n in CUDA_TOOLS)
    _link_matching(record["lib_dirs"], os.path.join(tmp, "lib"), lambda n: n.startswith(CUDA_LIB_PREFIXES))
    old = target + ".%d.old" % os.getpid()
    if os.path.isdir(target):
        os.rename(target, old)
    os.rename(tmp, target)
    shutil.rmtree(old, ignore_errors=True)
    return os.path.join(target, "bin"), os.path.join(target, "lib")


def _link_matching(sources, dest, wanted):
    for directory in sources:
        try:
            names = os.listdir(directory)
        except OSError:
            continue
        for name in names:
            link = os.path.join(dest, name)
            if wanted(name) and not os.path.lexists(link):
                os.symlink(os.path.join(directory, name), link)
