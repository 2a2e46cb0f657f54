"""The driver layer under CUDA: the kernel module loaded, module and user-space libraries of one
release, may this process use the GPUs (compute mode, MIG, CUDA_VISIBLE_DEVICES). Each check says
when it cannot tell."""

import itertools
import os
import re

from cudaswitch.verify.compat import check
from cudaswitch.verify.identity import LIBCUDA_DIRS
from cudaswitch.verify.checkregistry import Ask, registered
from cudaswitch.pathsearch import which
from cudaswitch.verify.runner import run_bounded

TYPE_CHECKING = False  # typing is not imported at run time
if TYPE_CHECKING:
    from cudaswitch.paths import Paths
    from cudaswitch.verify.host import Host
    from cudaswitch.verify.checkregistry import CheckResult

# libcuda.so.550.54.15 / libnvidia-ml.so.550.54.15: the driver release is in the file name.
USERSPACE_LIB = re.compile(r"^lib(?:cuda|nvidia-ml)\.so\.(\d+\.\d+(?:\.\d+)?)$")


@registered("driver.kernel_module", layer="driver", shown_by=("doctor", "explain"))
def kernel_module(host: "Host", ask: Ask) -> "list[CheckResult]":
    """driver.kernel_module: what "NVIDIA-SMI has failed because it couldn't communicate with the
    NVIDIA driver" means on this host: no module loaded (nouveau holds the GPU, or none at all)."""
    drv, paths = host.driver, host.paths
    if drv.get("proc_line"):
        return [check("driver.kernel_module", "ok", "the NVIDIA kernel module %s is loaded" % (drv["release"] or "")
                      .rstrip(), None, proc=drv["proc_line"])]
    if drv.get("wsl"):
        return [check("driver.kernel_module", "info", "WSL: no Linux kernel module; the Windows driver serves "
                      "/usr/lib/wsl/lib/libcuda.so.1", None)]
    loaded = _proc_modules(paths)
    pci = host.pci
    if loaded is None:
        return [check("driver.kernel_module", "info", "cannot check the kernel module: /proc/modules is not "
                      "readable here", None)]
    if "nouveau" in loaded:
        return [check("driver.kernel_module", "error", "the open-source nouveau driver is loaded, the NVIDIA kernel "
                      "module is not: CUDA cannot use the GPU", "blacklist nouveau, install the NVIDIA driver and "
                      "reboot", modules=sorted(loaded & {"nouveau", "nvidia"}), pci=pci)]
    if "nvidia" in loaded:  # its /proc/driver/nvidia/version did not say which release
        return [check("driver.kernel_module", "ok", "the NVIDIA kernel module is loaded (/proc/modules)", None,
                      modules=["nvidia"], pci=pci)]
    if pci:
        return [check("driver.kernel_module", "error", "no NVIDIA kernel module is loaded, though the PCI bus has "
                      "NVIDIA GPU(s) %s" % ", ".join(pci), "`sudo modprobe nvidia` (after a driver install or kernel "
                      "update: reinstall the driver or its DKMS module, then reboot)", pci=pci)]
    return [check("driver.kernel_module", "info", "no NVIDIA kernel module and no NVIDIA GPU on the PCI bus (a VM or "
                  "container without the GPU passed through?)", None, pci=pci)]


def _proc_modules(paths: "Paths") -> "set[str] | None":
    from cudaswitch.safeio import read_or_none

    data = read_or_none(paths.host("/proc/modules"), 1 << 20)
    if data is None:
        return None
    return {line.split(" ", 1)[0] for line in data.decode("utf-8", "replace").splitlines() if line}


def userspace_releases(host: "Host") -> dict:
    """{release: [library files]} of the driver's user-space libraries the loader may pick."""
    dirs = [d for d in (host.env.get("LD_LIBRARY_PATH") or "").split(os.pathsep) if os.path.isabs(d)]
    found: dict = {}
    for directory in dirs + [host.paths.host(d) for d in LIBCUDA_DIRS]:
        try:
            names = os.listdir(directory)
        except OSError:
            continue
        for name in names:
            match = USERSPACE_LIB.match(name)
            if match:
                found.setdefault(match.group(1), []).append(os.path.join(directory, name))
    if host.driver.get("nvml_release"):
        found.setdefault(host.driver["nvml_release"], []).append("NVML")
    return found


@registered("driver.release_match", layer="driver", shown_by=("doctor", "explain"))
def release_match(host: "Host", ask: Ask) -> "list[CheckResult]":
    """driver.release_match: the kernel module and the user-space libraries of one release, or
    "Failed to initialize NVML: Driver/library version mismatch" (an upgrade without a reboot)."""
    module = host.driver.get("release") if host.driver.get("release_source") == "proc" else None
    libraries = userspace_releases(host)
    if not module or not libraries:
        return [check("driver.release_match", "info", "cannot compare the driver's kernel module with its libraries: "
                      "%s" % ("no kernel module version in /proc" if not module else "no libcuda/libnvidia-ml found"),
                      None, module=module, libraries=libraries)]
    other = sorted(r for r in libraries if r != module)
    if not other:
        return [check("driver.release_match", "ok", "kernel module and user-space libraries are both %s" % module,
                      module=module, libraries=libraries)]
    return [check("driver.release_match", "error", "the kernel module is %s but the user-space libraries are %s (%s): "
                  "the driver was upgraded without a reboot, or a container brings other libraries"
                  % (module, ", ".join(other), ", ".join(libraries[other[0]])),
                  "reboot (or unload and reload the nvidia modules) so module and libraries agree",
                  module=module, libraries=libraries)]


@registered("gpu.compute_mode", layer="driver", shown_by=("doctor", "explain"))
def compute_mode(host: "Host", ask: Ask) -> "list[CheckResult]":
    """"CUDA-capable device(s) is/are busy or unavailable": a GPU in Exclusive_Process mode held by another
    process, Prohibited, or split by MIG. Without a GPU only explain asks (nvidia-smi has nothing to say)."""
    if not host.driver["gpus"] and not ask.unchecked:
        return []
    smi = which("nvidia-smi", host.env)
    if not smi:
        return [check("gpu.compute_mode", "info", "cannot check compute mode or MIG: no nvidia-smi here", None)]
    code, out, why = run_bounded([smi, "--query-gpu=index,compute_mode,mig.mode.current", "--format=csv,noheader"],
                                 host.env, 15.0)
    rows = [[c.strip() for c in line.split(",")] for line in out.decode("utf-8", "replace").splitlines()
            if line.count(",") == 2] if code == 0 else []
    if not rows:
        return [check("gpu.compute_mode", "info", "cannot check compute mode: nvidia-smi gave no answer (%s)"
                      % (why or "exit %s" % code), None)]
    return [_mode_check(index, mode, mig) for index, mode, mig in rows]


def _mode_check(index: str, mode: str, mig: "str | None") -> "CheckResult":
    facts: dict = {"gpu": index, "compute_mode": mode, "mig": mig}
    if mode == "Prohibited":
        return check("gpu.compute_mode", "error", "GPU %s is in Prohibited compute mode: no process may use it"
                     % index, "`sudo nvidia-smi -i %s -c DEFAULT`" % index, **facts)
    if mig == "Enabled":
        return check("gpu.compute_mode", "warning", "GPU %s has MIG enabled: CUDA sees only the MIG instances "
                     "given to it" % index, "`nvidia-smi -L` lists them; set CUDA_VISIBLE_DEVICES=MIG-<uuid>", **facts)
    if mode.startswith("Exclusive"):
        return check("gpu.compute_mode", "warning", "GPU %s is in %s mode: one process at a time; another one "
                     "holding it makes it busy" % (index, mode), "`nvidia-smi` lists the process holding it; "
                     "`sudo nvidia-smi -i %s -c DEFAULT` shares it" % index, **facts)
    return check("gpu.compute_mode", "ok", "GPU %s is in %s compute mode, MIG %s" % (index, mode, mig), **facts)


@registered("env.visible_devices", layer="env", shown_by=("doctor", "explain"))
def visible_devices(host: "Host", ask: Ask) -> "list[CheckResult]":
    """env.visible_devices: "no CUDA-capable device is detected" with CUDA_VISIBLE_DEVICES hiding
    them. CUDA reads the list up to its first invalid entry; the driver was asked without it."""
    value = host.env.get("CUDA_VISIBLE_DEVICES")
    count = len(host.driver.get("gpus") or [])
    if value is None:
        seen = "every GPU is visible (%d found)" % count if count else "it hides no GPU (the driver reports none here)"
        return [check("env.visible_devices", "ok", "CUDA_VISIBLE_DEVICES is unset: " + seen, value=None, gpus=count)]
    entries = [e.strip() for e in value.split(",")]
    usable = [int(entry) for entry in itertools.takewhile(str.isdigit, entries)]
    if any(e.startswith(("GPU-", "MIG-")) for e in entries):
        return [check("env.visible_devices", "info", "CUDA_VISIBLE_DEVICES=%r names devices by UUID: cannot check "
                      "them against the driver here" % value, "`nvidia-smi -L` lists the UUIDs", value=value)]
    if not usable:
        return [check("env.visible_devices", "error", "CUDA_VISIBLE_DEVICES=%r hides every GPU" % value,
                      "unset CUDA_VISIBLE_DEVICES, or set it to GPU indices (0,1,...)", value=value, gpus=count)]
    if count and max(usable) >= count:
        return [check("env.visible_devices", "error", "CUDA_VISIBLE_DEVICES=%r names GPU %d, but the driver has "
                      "%d (0-%d)" % (value, max(usable), count, count - 1), "use indices below %d" % count,
                      value=value, gpus=count)]
    level = "ok" if count else "info"
    return [check("env.visible_devices", level, "CUDA_VISIBLE_DEVICES=%r shows GPU(s) %s%s" % (
         value, ",".join(map(str, usable)), "" if count else "; cannot check them: the driver reports no GPU here"),
         None, value=value, gpus=count)]
