"""Helpers for the verify/doctor/explain tests: a real torch venv, a fake-but-real libcuda, a host."""

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import kits

TORCH_PIN = "torch==2.13.0"  # the CPU build on this machine's disk (/opt/wheels); see tests/README
LIBCUDA_C = r"""
/* A stand-in libcuda: the two entry points cudaswitch calls, answering like a driver of one era. */
int cuInit(unsigned int flags) { (void)flags; return %(init_rc)d; }
int cuDriverGetVersion(int *v) { *v = %(version)d; return 0; }
"""


def torch_venv() -> Path:
    """A venv with the real torch 2.13 CPU build, cached in the kits cache (python -m venv + pip)."""
    final = kits.cache_dir() / "torch-venv"
    if (final / ".ok").exists():
        return final
    kits.require("gcc")  # nothing to do with torch: just fail early on a broken box under CI
    shutil.rmtree(final, ignore_errors=True)
    subprocess.run([sys.executable, "-m", "venv", str(final)], check=True, timeout=300)
    proc = subprocess.run([str(final / "bin" / "python"), "-m", "pip", "install", "-q", TORCH_PIN],
                          capture_output=True, text=True, timeout=1800)
    if proc.returncode:
        shutil.rmtree(final, ignore_errors=True)
        kits._give_up("cannot install %s: %s" % (TORCH_PIN, (proc.stderr or proc.stdout)[-800:]))
    (final / ".ok").write_text(TORCH_PIN + "\n")
    return final


def build_libcuda(dest_dir: Path, version: int, init_rc: int = 100) -> Path:
    """Compile a real shared library exporting cuInit/cuDriverGetVersion (version e.g. 12020)."""
    gcc = kits.require("gcc")
    dest_dir.mkdir(parents=True, exist_ok=True)
    src = dest_dir / ("libcuda_%d.c" % version)
    src.write_text(LIBCUDA_C % {"version": version, "init_rc": init_rc})
    lib = dest_dir / ("libcuda_%d.so.1" % version)
    subprocess.run([gcc, "-shared", "-fPIC", "-o", str(lib), str(src)], check=True, timeout=60)
    return lib


def write_proc_version(root: Path, release: str):
    """ROOT/proc/driver/nvidia/version as a real driver writes it."""
    path = root / "proc/driver/nvidia/version"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("NVRM version: NVIDIA UNIX x86_64 Kernel Module  %s  Thu Oct  5 21:02:42 UTC 2023\n"
                    "GCC version:  gcc version 12.2.0 (Debian 12.2.0-14)\n" % release)


def cli_env(tmp: Path, root: Path, **extra) -> dict:
    """The real CLI's environment with every cudaswitch dir in tmp and the host under `root`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("CUDASWITCH_")}
    for k in ("CUDA_HOME", "CUDA_PATH", "CONDA_PREFIX", "VIRTUAL_ENV", "LD_LIBRARY_PATH"):
        env.pop(k, None)
    env.update(CUDASWITCH_ROOT=str(root), CUDASWITCH_CACHE_DIR=str(tmp / "cache"),
               CUDASWITCH_CONFIG_DIR=str(tmp / "config"), CUDASWITCH_DATA_DIR=str(tmp / "data"))
    env.update({k: str(v) for k, v in extra.items()})
    return env


def cudaswitch(args, env, timeout=300):
    exe = shutil.which("cudaswitch") or sys.exit("cudaswitch is not installed (pip install -e .)")
    return subprocess.run([exe, *args], env=env, capture_output=True, text=True, timeout=timeout)


def by_id(report, check_id):
    return [c for c in report["checks"] if c["id"] == check_id]
