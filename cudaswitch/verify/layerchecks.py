"""explain's checks of the layers around torch that a message names: the cuDNN sub-libraries a
process would resolve, the driver's libcuda.so.1, the Python that was asked for torch, the nvcc
CMake would find, and a kernel's own assert. Registered (verify/checkregistry.py) like every check;
compat.toml's rules name their ids. Host directories are read under the root prefix."""

import os
import re

from cudaswitch.toolkit import short_version
from cudaswitch.verify import loaderdirs, pythonlayer
from cudaswitch.verify.compat import check
from cudaswitch.verify.checkregistry import Ask, registered
from cudaswitch.verify.runner import which

TYPE_CHECKING = False  # typing is not imported at run time
if TYPE_CHECKING:
    from cudaswitch.verify.host import Host

PLAIN = Ask("explain")
CUDNN_SONAME = re.compile(r"^(libcudnn(?:_\w+)?)\.so\.\d+$")  # libcudnn_graph.so.9: what a loader asks for


@registered("cudnn.sublibraries", layer="env", shown_by=("explain",))
def cudnn_sublibraries(host: "Host", ask: Ask = PLAIN) -> list:
    """The first copy of each cuDNN library in the order a process without DT_RPATH finds them
    (LD_LIBRARY_PATH, torch's nvidia/cudnn/lib, the loader's directories), and the versions those
    files' names carry: more than one version is the sub-library mismatch."""
    first: dict = {}
    for directory in _cudnn_dirs(host):
        for path in loaderdirs.files_named(directory, "libcudnn*.so.*"):
            name = CUDNN_SONAME.match(os.path.basename(path))
            if name and name.group(0) not in first:
                first[name.group(0)] = (path, loaderdirs.file_version(path, name.group(1)))
    if not first:
        return [check("cudnn.sublibraries", "info", "cannot check cuDNN sub-libraries because no libcudnn*.so.N is "
                      "on LD_LIBRARY_PATH, in torch's wheel or in the loader's directories here", None)]
    versions = sorted({v for _, v in first.values() if v})
    listing = "; ".join("%s %s (%s)" % (soname, v or "?", os.path.dirname(p))
                        for soname, (p, v) in sorted(first.items()))
    facts = {"resolved": {k: {"path": p, "version": v} for k, (p, v) in first.items()}, "versions": versions}
    if len(versions) > 1:
        return [check("cudnn.sublibraries", "error", "cuDNN libraries of %d versions would be loaded together: %s"
                      % (len(versions), listing), "keep one cuDNN: drop the other copy's directory from "
                      "LD_LIBRARY_PATH (torch's nvidia-cudnn wheel brings a whole set), or remove the system cuDNN",
                      **facts)]
    if not versions:
        return [check("cudnn.sublibraries", "info", "cannot check cuDNN sub-library versions because their file "
                      "names carry none: " + listing, None, **facts)]
    return [check("cudnn.sublibraries", "ok", "every cuDNN library found resolves to %s: %s" % (versions[0], listing),
                  None, **facts)]


def _cudnn_dirs(host: "Host") -> "list[str]":
    dirs = list(loaderdirs.library_path(host.env, host.paths))
    torch_dir = host.torch.get("torch_dir")
    if torch_dir:
        dirs.append(os.path.join(os.path.dirname(torch_dir), "nvidia", "cudnn", "lib"))
    return dirs + loaderdirs.system_dirs(host.paths)


@registered("driver.libcuda_found", layer="driver", shown_by=("explain",))
def libcuda_found(host: "Host", ask: Ask = PLAIN) -> list:
    """Where the loader would find the driver's libcuda.so.1 (LD_LIBRARY_PATH, ld.so.conf's and the
    default directories, WSL's /usr/lib/wsl/lib): the driver ships it, never the toolkit."""
    dirs = loaderdirs.library_path(host.env, host.paths) + loaderdirs.system_dirs(host.paths)
    dirs.append(host.paths.host("/usr/lib/wsl/lib"))
    found = [os.path.join(d, "libcuda.so.1") for d in dirs if os.path.exists(os.path.join(d, "libcuda.so.1"))]
    cached = loaderdirs.ldconfig_has("libcuda.so.1", host.env) if host.paths.root == "/" else None
    stubs = [d for d in loaderdirs.library_path(host.env, host.paths) if os.path.basename(d.rstrip("/")) == "stubs"]
    facts = {"found": found, "ldconfig": cached, "stubs_on_path": stubs}
    if found or cached:
        return [check("driver.libcuda_found", "ok", "the loader finds libcuda.so.1 here: %s: the failing process "
                      "ran elsewhere (a container started without --gpus, another node) or with another "
                      "LD_LIBRARY_PATH" % (found[0] if found else "in the ld.so cache"), None, **facts)]
    return [check("driver.libcuda_found", "error", "no libcuda.so.1 on LD_LIBRARY_PATH, in ld.so.conf's or the "
                  "default library directories here: no NVIDIA driver's user-space library%s" % (
                      " (the toolkit's stubs/ on LD_LIBRARY_PATH has only a link-time libcuda.so: %s)"
                      % ", ".join(stubs) if stubs else ""),
                  "install the NVIDIA driver (a toolkit does not bring libcuda); in a container run with --gpus "
                  "and the NVIDIA container toolkit", **facts)]


@registered("env.python_torch", layer="framework", shown_by=("explain",))
def python_torch(host: "Host", ask: Ask = PLAIN) -> list:
    """Which interpreter `python3` is here, whether it has torch, and which known environments
    (the active venv or conda env, conda's environments.txt, envs the registry found) have it."""
    python, probe = host.python, host.torch
    others = [p for p in pythonlayer.envs_with_module(host, "torch")
              if not python or not python.startswith(p.rstrip("/") + "/")]
    plain = which("python", host.env)
    named = "python3 on PATH is %s" % python if python else "no python3 on PATH"
    if plain and python and os.path.realpath(plain) != os.path.realpath(python):
        named += " (`python` is %s)" % plain
    where = "; environments with torch: %s" % (", ".join(others) or "none found")
    facts = {"python": python, "python_plain": plain, "torch": probe.get("torch"), "envs_with_torch": others}
    if probe.get("torch"):
        return [check("env.python_torch", "ok", "%s and has torch %s: the failing command ran another interpreter "
                      "(`python` vs `python3`, a script's #! line, sudo, another venv)%s"
                      % (named, probe["torch"], where), None, **facts)]
    why = probe.get("torch_error") or probe.get("error") or "no torch"
    return [check("env.python_torch", "error", "%s, which cannot import torch (%s)%s" % (named, why, where),
                  "activate an environment that has torch (%s), or install it into this one: `%s -m pip install "
                  "torch`" % (others[0] if others else "none known here", python or "python3"), **facts)]


@registered("env.cmake_cuda", layer="env", shown_by=("explain",))
def cmake_cuda(host: "Host", ask: Ask = PLAIN) -> list:
    """The nvcc CMake would take in this shell: $CUDACXX, else nvcc on PATH (FindCUDAToolkit also
    reads CUDAToolkit_ROOT); and the toolkits cudaswitch knows, to name one."""
    cudacxx, root = host.env.get("CUDACXX"), host.env.get("CUDAToolkit_ROOT")
    kits = [r["version"] for r in host.registry.get("records") or [] if r.get("nvcc") and r.get("version")]
    hint = "`cudaswitch use %s` (sets CUDACXX, CUDAToolkit_ROOT and PATH), then configure a fresh build dir " \
           "(CMakeCache.txt keeps the old CMAKE_CUDA_COMPILER)" % (short_version(kits[0]) if kits else "VERSION")
    facts = {"cudacxx": cudacxx, "cudatoolkit_root": root, "toolkits": kits}
    if cudacxx and not (os.path.isfile(cudacxx) and os.access(cudacxx, os.X_OK)):
        return [check("env.cmake_cuda", "error", "CUDACXX=%s is not an executable: CMake stops there" % cudacxx,
                      hint, **facts)]
    nvcc = cudacxx or which("nvcc", host.env)
    if not nvcc:
        return [check("env.cmake_cuda", "error", "CMake finds no nvcc here: CUDACXX unset, no nvcc on PATH%s; "
                      "toolkits cudaswitch knows: %s" % ("" if root else ", CUDAToolkit_ROOT unset",
                                                           ", ".join(kits) or "none"), hint, **facts)]
    return [check("env.cmake_cuda", "ok", "CMake here would take %s (%s): the failing build ran with another "
                  "environment, or its CMakeCache.txt remembers an old CMAKE_CUDA_COMPILER" % (
                      nvcc, "CUDACXX" if cudacxx else "first nvcc on PATH"), hint, nvcc=nvcc, **facts)]


@registered("env.launch_blocking", layer="env", shown_by=("explain",))
def launch_blocking(host: "Host", ask: Ask = PLAIN) -> list:
    """A device-side assert is the program's own check failing in a kernel, not the setup: say
    whether the traceback can be trusted (CUDA_LAUNCH_BLOCKING) and which assertion the message shows."""
    blocking = host.env.get("CUDA_LAUNCH_BLOCKING") == "1"
    said = re.search(r"([\w./-]+\.cu):\d+:.{0,200}?Assertion `(.{1,200}?)` failed", " ".join(ask.text.split()))
    what = ("; the kernel's assertion: `%s` in %s%s" % (said.group(2), os.path.basename(said.group(1)),
            " (an index out of range: a class label >= the number of classes, a token id >= the embedding size)"
            if "index" in said.group(2) else "")) if said else ""
    text = ("CUDA_LAUNCH_BLOCKING=1: the traceback points at the failing kernel" if blocking else
            "CUDA_LAUNCH_BLOCKING is not 1: kernels run asynchronously, so the traceback may name a later call")
    return [check("env.launch_blocking", "info", "not a setup problem; " + text + what,
                  None if blocking else "rerun with CUDA_LAUNCH_BLOCKING=1 (or on the CPU) to see the line that "
                  "indexes out of range", launch_blocking=blocking, assertion=said.group(2) if said else None)]
