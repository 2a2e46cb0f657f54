"""What the NVIDIA driver supports: release, CUDA version, GPUs. From libcuda's `cuDriverGetVersion`
after `cuInit(0)` (in a child with a timeout and without CUDA_VISIBLE_DEVICES, whose invalid value
fails cuInit), /proc/driver/nvidia/version under the root prefix, NVML, nvidia-smi and WSL's libcuda.
CUDASWITCH_LIBCUDA replaces the host's libcuda (NVML and nvidia-smi are then not asked). No driver
is a normal answer: {"present": False, ...}."""

import os
import re
import sys

from cudaswitch.safeio import read_or_none
from cudaswitch.settings import DRIVER_TIMEOUT

from cudaswitch.pathsearch import which
from cudaswitch.verify.runner import PROBE_LOG, run_bounded, run_framed

TYPE_CHECKING = False
if TYPE_CHECKING:
    from cudaswitch.paths import Paths
    from cudaswitch.toolkit import Env

LIBCUDA_OVERRIDE = "CUDASWITCH_LIBCUDA"
WSL_LIB = "/usr/lib/wsl/lib"  # where Windows mounts its driver's libraries into WSL 2
WSL_LIBCUDA = WSL_LIB + "/libcuda.so.1"
# WSL 2 kernels say "microsoft-standard" (4.19: "-microsoft-standard", 5.x: "-microsoft-standard-WSL2");
# WSL 1 answers with the Windows build: "4.4.0-19041-Microsoft".
WSL2_KERNEL = re.compile(r"microsoft-standard|WSL2", re.IGNORECASE)
WSL_MENTION = re.compile(r"microsoft|WSL", re.IGNORECASE)
PROC_VERSION = "/proc/driver/nvidia/version"
RELEASE = re.compile(r"Kernel Module(?: for \S+)?\s+(\d+\.\d+(?:\.\d+)?)")

# Runs in a child Python (ours): loading libcuda may hang or crash; neither may take us along.
_SCRIPT = r'''
import ctypes, json, os, sys
libpath, nvmlpath, marker = sys.argv[1], sys.argv[2], sys.argv[3]
if os.environ.get("%(log)s"):
    with open(os.environ["%(log)s"], "a") as h:
        h.write("driver_probe %%d\n" %% os.getpid())
out = {}
try:
    cuda = ctypes.CDLL(libpath)
except OSError as exc:
    out["load_error"] = str(exc)
else:
    v = ctypes.c_int(0)
    out["version_rc"] = cuda.cuDriverGetVersion(ctypes.byref(v))
    out["version"] = v.value
    out["init_rc"] = cuda.cuInit(0)
    gpus = []
    try:
        if out["init_rc"] == 0:
            n = ctypes.c_int(0)
            cuda.cuDeviceGetCount(ctypes.byref(n))
            for i in range(n.value):
                name = ctypes.create_string_buffer(256)
                cuda.cuDeviceGetName(name, 256, i)
                major, minor = ctypes.c_int(0), ctypes.c_int(0)
                cuda.cuDeviceGetAttribute(ctypes.byref(major), 75, i)
                cuda.cuDeviceGetAttribute(ctypes.byref(minor), 76, i)
                gpus.append({"index": i, "name": name.value.decode("utf-8", "replace"),
                             "capability": "%%d.%%d" %% (major.value, minor.value)})
    except AttributeError as exc:
        out["device_error"] = str(exc)
    out["gpus"] = gpus
    with open("/proc/self/maps") as h:
        out["loaded"] = sorted({l.split()[-1] for l in h if "libcuda.so" in l and "/" in l})
if nvmlpath:
    try:
        nvml = ctypes.CDLL(nvmlpath)
        if nvml.nvmlInit_v2() == 0:
            buf = ctypes.create_string_buffer(96)
            if nvml.nvmlSystemGetDriverVersion(buf, 96) == 0:
                out["nvml_release"] = buf.value.decode()
    except (OSError, AttributeError) as exc:
        out["nvml_error"] = str(exc)
sys.stdout.write(marker + json.dumps(out) + marker + "\n")
''' % {"log": PROBE_LOG}


def read_proc_release(paths: "Paths") -> "tuple[str | None, str | None]":
    """(release, first line) from /proc/driver/nvidia/version under the root prefix, or (None, None)."""
    data = read_or_none(paths.host(PROC_VERSION), 4096)  # an image's /proc may hold a FIFO
    if data is None:
        return None, None
    first = (data.decode("utf-8", "replace").splitlines() or [""])[0].strip()
    match = RELEASE.search(first)
    return (match.group(1) if match else None), first


def wsl_version(paths: "Paths") -> "int | None":
    """2 or 1 on WSL, None elsewhere, from the files the root prefix holds."""
    text = (read_or_none(paths.host("/proc/version"), 4096) or b"").decode("utf-8", "replace")
    dxg, lib = os.path.exists(paths.host("/dev/dxg")), os.path.isdir(paths.host(WSL_LIB))
    if dxg or lib or WSL2_KERNEL.search(text):
        return 2
    return 1 if WSL_MENTION.search(text) else None


def libcuda_choice(paths: "Paths", env: "Env") -> "tuple[str | None, str]":
    """(library to load or None, how it was chosen). Only the live host's libcuda can be loaded."""
    override = env.get(LIBCUDA_OVERRIDE)
    if override:
        return override, "override"
    if paths.root != "/":
        return None, "root prefix"  # an image's libcuda is not this kernel's driver
    if os.path.exists(WSL_LIBCUDA):
        return WSL_LIBCUDA, "wsl"  # the Windows driver's, whatever a Linux driver inside WSL installed
    return "libcuda.so.1", "loader"


def driver_facts(paths: "Paths", env: "Env", timeout: float = DRIVER_TIMEOUT) -> dict:
    """{"present", "release", "cuda", "gpus", "wsl", "problems", ...}, or the machine CUDASWITCH_DRIVER/GPUS name."""
    from cudaswitch.verify import target

    if target.planned(env):
        return target.override(env, None if env.get("CUDASWITCH_DRIVER") else _probed(paths, env, timeout))
    return _probed(paths, env, timeout)


def _probed(paths: "Paths", env: "Env", timeout: float) -> dict:
    release, proc_line = read_proc_release(paths)
    lib, how = libcuda_choice(paths, env)
    facts: dict = {"present": False, "release": release, "release_source": "proc" if release else None,
                   "proc_line": proc_line, "cuda": None, "cuda_int": None, "cuda_source": None,
                   "libcuda": lib, "libcuda_choice": how, "loaded": [], "gpus": [], "problems": [],
                   "wsl": wsl_version(paths)}
    if lib:
        _ask_libcuda(facts, lib, how, env, timeout)
    if how == "loader" and not facts["gpus"]:
        _ask_nvidia_smi(facts, env, timeout)
    if facts["wsl"]:  # NVML and nvidia-smi report the Windows driver's number: no Linux table applies
        facts["windows_release"], facts["release"] = facts["release"], None
    elif facts["cuda"] is None and facts["release"]:
        from cudaswitch.verify import facttables
        derived = facttables.driver_cuda(facts["release"])
        facts.update(derived, cuda_source="derived from the driver release (compat.toml driver_minimum)")
    facts["present"] = bool(facts["cuda"] or facts["release"] or facts.get("windows_release"))
    return facts


def _ask_libcuda(facts: dict, lib: str, how: str, env: "Env", timeout: float) -> None:
    child_env = {k: v for k, v in env.items() if k != "CUDA_VISIBLE_DEVICES"}
    nvml = "" if how == "override" else "libnvidia-ml.so.1"
    payload, error = run_framed([sys.executable, "-c", _SCRIPT, lib, nvml], child_env, timeout)
    if payload is None:
        facts["problems"].append("libcuda probe: " + error)
        return
    if "load_error" in payload:
        if how != "loader":  # the plain loader missing libcuda just means: no driver here
            facts["problems"].append("cannot load %s: %s" % (lib, payload["load_error"]))
        return
    if payload.get("version_rc") == 0 and payload.get("version"):  # 12040: 1000 * major + 10 * minor
        facts["cuda_int"] = version = payload["version"]
        facts["cuda"], facts["cuda_source"] = "%d.%d" % (version // 1000, version % 1000 // 10), "cuDriverGetVersion"
    if payload.get("init_rc"):
        facts["problems"].append("cuInit(0) returned %s (100 = no CUDA-capable device)" % payload["init_rc"])
    facts["gpus"] = payload.get("gpus") or []
    facts["loaded"] = payload.get("loaded") or []
    facts["nvml_release"] = payload.get("nvml_release")  # the user-space side, kept apart from /proc's
    if payload.get("nvml_release") and not facts["release"]:
        facts["release"], facts["release_source"] = payload["nvml_release"], "nvml"


def _ask_nvidia_smi(facts: dict, env: "Env", timeout: float) -> None:
    smi = which("nvidia-smi", env)
    if not smi:
        return
    query = ["--query-gpu=index,name,compute_cap,driver_version", "--format=csv,noheader"]
    code, out, why = run_bounded([smi] + query, env, timeout)
    if code is None:
        facts["problems"].append("nvidia-smi: " + why)
        return
    for line in out.decode("utf-8", "replace").splitlines():
        cells = [c.strip() for c in line.split(",")]
        if len(cells) == 4 and cells[0].isascii() and cells[0].isdigit() and len(cells[0]) < 6:
            facts["gpus"].append({"index": int(cells[0]), "name": cells[1], "capability": cells[2]})
            if not facts["release"]:
                facts["release"], facts["release_source"] = cells[3], "nvidia-smi"


def nvidia_pci_devices(paths: "Paths") -> "list[str]":
    """NVIDIA display/3D controllers in sysfs (vendor 0x10de, class 0x03xxxx), even with no driver."""
    base = paths.host("/sys/bus/pci/devices")
    try:
        names = sorted(os.listdir(base))
    except OSError:
        return []
    return [name for name in names if _read(os.path.join(base, name, "vendor")) == "0x10de"
            and _read(os.path.join(base, name, "class")).startswith("0x03")]


def _read(path: str) -> str:
    return (read_or_none(path, 4096) or b"").decode("utf-8", "replace").strip()
