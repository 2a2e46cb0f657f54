"""Helpers shared by the audit tests: an image root like acceptance 1's, made from real toolkits
(tests/kits.py), a driver as /proc shows it, and the oracles an admin would use (du -sb, the
wheels' own versions)."""

import json
import os
import subprocess
from pathlib import Path

from tests import kits

# What /proc/driver/nvidia/version says on a node with the 575 (CUDA 12.9-era) driver.
DRIVER_575 = "NVRM version: NVIDIA UNIX x86_64 Kernel Module  575.51.03  Wed Apr 16 23:08:44 UTC 2025\n"


def write_driver(root: Path, line: str, gpus=("NVIDIA H200",)):
    proc = root / "proc/driver/nvidia"
    proc.mkdir(parents=True, exist_ok=True)
    (proc / "version").write_text(line)
    for index, model in enumerate(gpus):
        info = proc / "gpus" / ("0000:%02x:00.0" % (index + 1)) / "information"
        info.parent.mkdir(parents=True)
        info.write_text("Model: \t\t %s\nIRQ:   \t\t 42\nBus Location: \t 0000:%02x:00.0\n" % (model, index + 1))


def set_version_json(root: Path, **versions):
    """Rewrite version.json (a fresh file: never write through a hardlink into the kit cache)."""
    data = {"cuda": {"name": "CUDA SDK", "version": versions.pop("sdk")}}
    data.update({key: {"name": key, "version": value} for key, value in versions.items()})
    (root / "version.json").unlink(missing_ok=True)
    (root / "version.json").write_text(json.dumps(data))


def build_image(root: Path, hostname: str):
    """Acceptance 1's image: real 13.0 and 13.1 (plus a second copy of 13.1), a runtime-only
    12.4, a conda env with cuda-nvcc 13.0, a dangling cuda-12.9 link, an empty cuda-11.0 dir."""
    kits.install_classic(kits.cuda13("13.0"), root / "usr/local/cuda-13.0", "13.0")
    kits.install_classic(kits.cuda13("13.1"), root / "usr/local/cuda-13.1", "13.1")
    kits.install_classic(kits.cuda13("13.1"), root / "opt/cuda-13.1-copy", "13.1")
    kits.install_classic_runtime12(root / "usr/local/cuda-12.4")
    kits.conda_env(root / "opt/conda/envs/cu13", "cuda-nvcc-13")
    os.symlink("/usr/local/cuda-12.9.28", root / "usr/local/cuda-12.9")  # uninstalled, link left
    (root / "usr/local/cuda-11.0").mkdir()
    os.symlink("/usr/local/cuda-13.1", root / "usr/local/cuda")
    (root / "etc").mkdir()
    (root / "etc/hostname").write_text(hostname + "\n")
    write_driver(root, DRIVER_575)


def du_sb(path: Path) -> int:
    out = subprocess.run(["du", "-sb", str(path)], capture_output=True, text=True, timeout=120, check=True)
    return int(out.stdout.split()[0])


def wheel_versions(minor):
    versions = kits.dist_versions(kits.cuda13(minor).parent.parent)
    return versions["nvidia-cuda-nvcc"], versions["nvidia-cuda-runtime"]
