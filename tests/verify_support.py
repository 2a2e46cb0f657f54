"""Helpers for the verify/doctor/explain tests: a real torch venv, a fake-but-real libcuda, a host."""

import shutil
import subprocess
import sys
from pathlib import Path

from tests import kits

TORCH_PIN = "torch==2.13.0"  # the CPU build; pip finds it in the machine's wheel dir or on PyPI
# The CUDA 13.0 build (arch list sm_75 ... sm_120) with its nvidia-* wheels: what `pip install torch`
# gives a Linux x86_64 user today. ~5.5 GB, so it is built once into the kits cache.
TORCH_CUDA_PIN = "torch==2.14.1"
LIBCUDA_C = r"""
/* A stand-in libcuda: the entry points cudaswitch's driver probe calls, answering like a driver of
   one era with the GPUs given (name, compute capability), as cuDeviceGet* do on a real host. */
#include <string.h>
static const char *names[] = {%(names)s};
static const int majors[] = {%(majors)s}, minors[] = {%(minors)s};
static const int count = %(count)d;
int cuInit(unsigned int flags) { (void)flags; return %(init_rc)d; }
int cuDriverGetVersion(int *v) { *v = %(version)d; return 0; }
int cuDeviceGetCount(int *n) { *n = count; return 0; }
int cuDeviceGet(int *dev, int ordinal) { if (ordinal < 0 || ordinal >= count) return 101; *dev = ordinal; return 0; }
int cuDeviceGetName(char *name, int len, int dev) {
    if (dev < 0 || dev >= count || len < 1) return 101;
    strncpy(name, names[dev], len - 1); name[len - 1] = 0; return 0; }
int cuDeviceGetAttribute(int *value, int attribute, int dev) {
    if (dev < 0 || dev >= count) return 101;
    if (attribute == 75) { *value = majors[dev]; return 0; }  /* COMPUTE_CAPABILITY_MAJOR */
    if (attribute == 76) { *value = minors[dev]; return 0; }  /* COMPUTE_CAPABILITY_MINOR */
    *value = 0; return 0; }
int cuDeviceComputeCapability(int *major, int *minor, int dev) {
    if (dev < 0 || dev >= count) return 101;
    *major = majors[dev]; *minor = minors[dev]; return 0; }
"""
# Real GPUs by compute capability, for stand-ins: (name as the driver reports it, major, minor).
GPUS = {
    "sm_61": ("NVIDIA GeForce GTX 1080 Ti", 6, 1),
    "sm_70": ("Tesla V100-SXM2-32GB", 7, 0),
    "sm_75": ("Tesla T4", 7, 5),
    "sm_80": ("NVIDIA A100-SXM4-80GB", 8, 0),
    "sm_86": ("NVIDIA GeForce RTX 3090", 8, 6),
    "sm_89": ("NVIDIA L4", 8, 9),
    "sm_90": ("NVIDIA H100 80GB HBM3", 9, 0),
    "sm_120": ("NVIDIA GeForce RTX 5090", 12, 0),
}


def torch_venv() -> Path:
    """A venv with the real torch 2.13 CPU build, cached in the kits cache (python -m venv + pip)."""
    return _pip_venv("torch-venv", TORCH_PIN, timeout=1800)


def _pip_venv(name: str, pin: str, timeout: int) -> Path:
    """kits cache/NAME: a venv with `pin` installed by its own pip, built once under an fcntl lock
    (parallel test runs wait for one build instead of deleting each other's)."""
    import fcntl

    final = kits.cache_dir() / name
    with open(kits.cache_dir() / (".lock-" + name), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (final / ".ok").exists():
            return final
        shutil.rmtree(final, ignore_errors=True)
        subprocess.run([sys.executable, "-m", "venv", str(final)], check=True, timeout=300)
        proc = subprocess.run([str(final / "bin" / "python"), "-m", "pip", "install", "-q", pin],
                              capture_output=True, text=True, timeout=timeout)
        if proc.returncode:
            shutil.rmtree(final, ignore_errors=True)
            kits._give_up("cannot install %s: %s" % (pin, (proc.stderr or proc.stdout)[-800:]))
        (final / ".ok").write_text(pin + "\n")
    return final


# A torch 2.4.1+cu124 package as its import shows it where CUDA cannot start (text of a hand-made
# `torch/__init__.py`, for venv_with_torch_package).
CU124_TORCH = '''
__version__ = "2.4.1+cu124"
class version:
    cuda = "12.4"
    hip = None
class cuda:
    get_arch_list = staticmethod(lambda: ["sm_80", "sm_90"])
    is_available = staticmethod(lambda: False)
    device_count = staticmethod(lambda: 0)
'''


def venv_with_torch_package(tmp_path: Path, name: str, files: dict) -> str:
    """A bare venv whose site-packages holds a hand-made `torch` package ({relpath: text}); its python."""
    venv = tmp_path / name
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    for rel, text in files.items():
        target = kits.site_packages(venv) / "torch" / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
    return str(venv / "bin" / "python")


def torch_cuda_venv() -> Path:
    """A venv with the real torch 2.14.1+cu130 and its NVIDIA wheels, cached in the kits cache."""
    return _pip_venv("torch-cuda-venv", TORCH_CUDA_PIN, timeout=3600)


def build_libcuda(dest_dir: Path, version: int, init_rc: int = 100, gpus=()) -> Path:
    """Compile a real shared library exporting the driver entry points cudaswitch calls (version
    e.g. 12020). `gpus`: keys of GPUS or (name, major, minor) tuples; they are reported only when
    init_rc is 0, as a real driver reports devices only after a successful cuInit."""
    gcc = kits.require("gcc")
    dest_dir.mkdir(parents=True, exist_ok=True)
    devices = [GPUS[g] if isinstance(g, str) else tuple(g) for g in gpus]
    tag = "%d_%d_%s" % (version, init_rc, "_".join("%d%d" % (d[1], d[2]) for d in devices) or "none")
    src = dest_dir / ("libcuda_%s.c" % tag)
    src.write_text(LIBCUDA_C % {
        "version": version, "init_rc": init_rc, "count": len(devices),
        "names": ", ".join('"%s"' % d[0] for d in devices) or '""',
        "majors": ", ".join(str(d[1]) for d in devices) or "0",
        "minors": ", ".join(str(d[2]) for d in devices) or "0"})
    lib = dest_dir / ("libcuda_%s.so.1" % tag)
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
        raise AssertionError("no JSON report (exit %d): %s %s"
                             % (proc.returncode, proc.stdout[-500:], proc.stderr[-2000:])) from None
