"""Helpers for the verify/doctor/explain tests: a real torch venv, a fake-but-real libcuda, a host."""

import shutil
import subprocess
import sys
from pathlib import Path

from tests import kits

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
    shutil.rmtree(final, ignore_errors=True)
    subprocess.run([sys.executable, "-m", "venv", str(final)], check=True, timeout=300)
    proc = subprocess.run([str(final / "bin" / "python"), "-m", "pip", "install", "-q", TORCH_PIN],
                          capture_output=True, text=True, timeout=1800)
    if proc.returncode:
        shutil.rmtree(final, ignore_errors=True)
        kits._give_up("cannot install %s: %s" % (TORCH_PIN, (proc.stderr or proc.stdout)[-800:]))
    (final / ".ok").write_text(TORCH_PIN + "\n")
    return final


def venv_with_torch_package(tmp_path: Path, name: str, files: dict) -> str:
    """A bare venv whose site-packages holds a hand-made `torch` package ({relpath: text}); its python."""
    venv = tmp_path / name
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    for rel, text in files.items():
        target = kits.site_packages(venv) / "torch" / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
    return str(venv / "bin" / "python")


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


def by_id(report, check_id):
    return [c for c in report["checks"] if c["id"] == check_id]


def report(proc):
    """The JSON report of a `--json` run; its stderr in the failure message when it is not JSON."""
    import json

    try:
        return json.loads(proc.stdout)
    except ValueError:
        raise AssertionError("no JSON report (exit %d): %s %s" % (proc.returncode, proc.stdout[-500:], proc.stderr[-2000:]))
