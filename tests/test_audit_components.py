"""audit reports cuDNN, NCCL, CUPTI and cuBLAS where present, read from headers, sonames
and version.json (the image test has none of them, so every one was null there).

A real 13.1 toolkit (tests/kits.py) with the extras added the way admins add them: cuDNN from
NVIDIA's tarball copied into include/ and lib64/ (its install guide's steps), NCCL's runtime
library alone (Debian's libnccl2 without -dev: no header, only the soname), cuBLAS's header, and
CUPTI named in version.json as NVIDIA's installer writes it."""

import json
import os

from tests import kits
from tests.audit_support import set_version_json, wheel_versions

CUDNN_VERSION_H = """/* cudnn_version.h as cuDNN 9 ships it (abridged) */
#ifndef CUDNN_VERSION_H_
#define CUDNN_VERSION_H_
#define CUDNN_MAJOR 9
#define CUDNN_MINOR 1
#define CUDNN_PATCHLEVEL 0
#define CUDNN_VERSION (CUDNN_MAJOR * 10000 + CUDNN_MINOR * 100 + CUDNN_PATCHLEVEL)
#endif
"""
CUBLAS_API_H = """/* cublas_api.h (abridged) */
#define CUBLAS_VER_MAJOR 13
#define CUBLAS_VER_MINOR 1
#define CUBLAS_VER_PATCH 0
#define CUBLAS_VER_BUILD 3
"""


def add_library(libdir, name, version):
    """lib.so.X.Y.Z plus the lib.so.X soname link, as the packages install them."""
    (libdir / ("%s.so.%s" % (name, version))).write_bytes(b"\x7fELF")
    os.symlink("%s.so.%s" % (name, version), libdir / ("%s.so.%s" % (name, version.split(".")[0])))


def test_components_present_are_read_not_guessed(host):
    root = kits.install_classic(kits.cuda13("13.1"), host.path("/usr/local/cuda-13.1"), "13.1")
    nvcc, cudart = wheel_versions("13.1")
    set_version_json(root, sdk="13.1.0", cuda_nvcc=nvcc, cuda_cudart=cudart, cuda_cupti="13.1.75")
    include, lib64 = root / "include", root / "lib64"
    (include / "cudnn_version.h").write_text(CUDNN_VERSION_H)
    (include / "cublas_api.h").unlink(missing_ok=True)  # a fresh file, never through a kit hardlink
    (include / "cublas_api.h").write_text(CUBLAS_API_H)
    add_library(lib64, "libcudnn", "9.1.0")
    add_library(lib64, "libnccl", "2.21.5")

    proc = host.run("audit", "--json", "--root", str(host.root), timeout=300)
    assert proc.returncode == 0, proc.stderr
    [entry] = json.loads(proc.stdout)["toolkits"]
    assert entry["status"] == "ok", entry["problems"]
    assert entry["components"] == {"cudart": cudart, "nvcc": nvcc, "cudnn": "9.1.0", "nccl": "2.21.5",
                                   "cupti": "13.1.75", "cublas": "13.1.0"}
    table = host.run("audit", "--root", str(host.root), timeout=300).stdout
    row = next(line for line in table.splitlines() if str(root) in line)
    for shown in ("cudnn 9.1.0", "nccl 2.21.5", "cupti 13.1.75", "cublas 13.1.0"):
        assert shown in row, row
