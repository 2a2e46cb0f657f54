"""Which files of an image the audit's view holds: the few it reads with their content, those whose
name is the fact (sonames, compile tools, python3) empty, nvcc as its version banner; nothing else.
"""

import re
from typing import Sequence

KiB, MiB = 1 << 10, 1 << 20
# name -> the most a real one holds; a larger one is refused (a 1 GiB version.json is an attack)
VERSION_FILES = {"version.json": MiB, "version.txt": 64 * KiB, "os-release": 64 * KiB, "pyvenv.cfg": 64 * KiB,
                 "nvcc.profile": 64 * KiB, "environments.txt": MiB}
HEADERS = {"cuda_runtime_api.h", "cuda_runtime.h", "cuda.h", "cudnn_version.h", "cudnn.h", "nccl.h",
           "cublas_api.h"}
HEADER_LIMIT = 8 * MiB  # CUDA 12's cuda.h is 1 MiB
METADATA_LIMIT = 4 * MiB
NVCC_LIMIT = 512 * MiB  # nvcc is ~30 MB; its banner is searched for, nothing else kept
TOOLS = {"ptxas", "fatbinary", "nvlink", "cicc", "cudafe++", "nvdisasm", "cuobjdump", "nvprune", "bin2c"}
LIBRARY = re.compile(r"^lib(?:cu|nv|nccl)[A-Za-z0-9_+-]*\.(?:so(?:\.[0-9]+)*|a)$")
PYTHON = re.compile(r"^python3(?:\.[0-9]+)?$")
WHEEL_INFO = re.compile(r"^(?:nvidia[_-]|torch-)[^/]*\.dist-info$")
CONDA_RECORD = re.compile(r"^(?:cuda|cudatoolkit|cudnn|nccl|pytorch|libcu)[^/]*\.json$")


def kind_of(parts: Sequence[str]) -> "tuple | None":
    """How a regular file at image path `parts` is kept: ("content", limit, refuse_larger),
    ("banner", limit), ("placeholder",) or None (not at all)."""
    name, parent = parts[-1], parts[-2] if len(parts) > 1 else ""
    if name in VERSION_FILES:
        return "content", VERSION_FILES[name], True
    if name in HEADERS and "include" in parts:
        return "content", HEADER_LIMIT, True
    if name == "host_config.h" and parent == "crt":
        return "content", HEADER_LIMIT, True
    if name == "METADATA" and WHEEL_INFO.match(parent):
        return "content", METADATA_LIMIT, True
    if name == "version.py" and parent == "torch":
        return "content", 64 * KiB, True
    if parent == "conda-meta" and CONDA_RECORD.match(name):
        return "content", METADATA_LIMIT, False
    if name == "nvcc" and parent == "bin":
        return "banner", NVCC_LIMIT
    if LIBRARY.match(name) or (parent in ("bin", "sbin") and (name in TOOLS or PYTHON.match(name))):
        return ("placeholder",)
    if parent == "bin" and len(parts) > 2 and parts[-3] == "nvvm" and name == "cicc":
        return ("placeholder",)
    if parent == "libdevice" and name.endswith(".bc"):
        return ("placeholder",)
    return None


def keeps_link(parts: Sequence[str]) -> bool:
    """A symlink kept even where no kept file is beside it: toolkit roots and sonames."""
    name = parts[-1]
    return name.startswith("cuda") or LIBRARY.match(name) is not None or PYTHON.match(name) is not None


def keeps_dir(parts: Sequence[str]) -> bool:
    """Directories kept even when empty: where toolkits are looked for (an empty one is reported)."""
    if len(parts) == 3 and parts[:2] == ["usr", "local"]:
        return True
    if parts[:1] != ["opt"]:
        return False
    return len(parts) == 2 or (len(parts) == 3 and parts[1].startswith("cuda"))
