"""The checks only `explain` runs: each reads what the error message names (a library, an arch, a gcc
ceiling, an assert) or a fact only that message makes worth gathering. Host directories are read
under the root prefix."""

import os
import re

from cudaswitch.switch import plan
from cudaswitch.toolkit import short_version, version_tuple
# pythonlayer registers its checks here, before these
from cudaswitch.verify import facttables, loaderdirs, pythonlayer
from cudaswitch.verify.checks import compat_libcuda_dirs
from cudaswitch.verify.compat import check, torch_home
from cudaswitch.verify.checkregistry import Ask, registered
from cudaswitch.pathsearch import which
from cudaswitch.verify.runner import run_bounded

TYPE_CHECKING = False  # typing is not imported at run time
if TYPE_CHECKING:
    from cudaswitch.verify.host import Host

CUDNN_SONAME = re.compile(r"^(libcudnn(?:_\w+)?)\.so\.\d+$")  # libcudnn_graph.so.9: what a loader asks for


@registered("explain.arch_table", layer="toolkit", shown_by=("explain",))
def arch_table(host: "Host", ask: Ask) -> list:
    """The CUDA releases that target each sm_XY the message names (compat.toml's arch table)."""
    rows = [(sm, facttables.arch_row(sm)) for sm in sorted(set(re.findall(r"sm_(\d+a?)", ask.text)))]
    return [check("explain.arch_table", "info", "sm_%s needs CUDA %s or newer%s" % (sm, row["first"], (
        ", and was dropped after %s" % row["last"]) if row["last"] else ""), None, sm=sm, source=row["source"])
            for sm, row in rows if row]


@registered("env.cuda_home_major", layer="env", shown_by=("explain",))
def cuda_home_major(host: "Host", ask: Ask) -> list:
    """The nvcc under the CUDA_HOME torch would take: the same CUDA major as torch's build?"""
    home, how = torch_home(host.env)
    if not home:
        return [check("env.cuda_home_major", "info", "cannot compare CUDA majors: torch would find no CUDA_HOME "
                      "here", None)]
    nvcc = os.path.join(home, "bin", "nvcc")
    from cudaswitch.registry.nvcc_probe import run_nvcc

    result = run_nvcc(nvcc, host.probe_timeout) if os.path.exists(nvcc) else {"error": "no bin/nvcc"}
    found = result.get("version")
    torch_cuda = host.torch.get("cuda")
    same = found and torch_cuda and version_tuple(found)[0] == version_tuple(torch_cuda)[0]
    level = "ok" if same else ("error" if found and torch_cuda else "info")
    probe = host.torch
    built = ("torch %s was built with CUDA %s" % (probe["torch"], torch_cuda) if torch_cuda else
             "torch %s is a CPU build" % probe["torch"] if probe.get("torch") else "this Python has no torch")
    return [check("env.cuda_home_major", level, "torch would take CUDA_HOME=%s (%s); its nvcc is %s; %s"
                  % (home, how, found or result.get("error"), built),
                  None if same else "`cudaswitch use %s`" % (short_version(torch_cuda) if torch_cuda else "VERSION"),
                  cuda_home=home, nvcc_version=found, torch_cuda=torch_cuda)]


@registered("env.loader_path", layer="env", shown_by=("explain",))
def loader_path(host: "Host", ask: Ask) -> list:
    """The library the message names (else libcudart.so): on the loader path, in its cache, a toolkit, a wheel?"""
    name = named_library(ask.text) or "libcudart.so"
    dirs = [d for d in (host.env.get("LD_LIBRARY_PATH") or "").split(":") if d]
    on_path = [d for d in dirs if os.path.exists(os.path.join(d, name))]
    cached = loaderdirs.ldconfig_has(name, host.env) if host.paths.root == "/" else None
    kits = [r["version"] for r in host.registry["records"]
            if any(os.path.exists(os.path.join(d, name)) for d in r.get("lib_dirs") or [])]
    wheels = _wheel_copies(host, name)
    found = bool(on_path or cached)
    return [check("env.loader_path", "ok" if found else "warning", "%s is %s (LD_LIBRARY_PATH: %s; ldconfig: %s); "
                  "toolkits that have it: %s; Python wheels that have it: %s" % (
                      name, "on the loader path" if found else "NOT on the loader path", ", ".join(on_path) or "no",
                      {True: "yes", False: "no", None: "not asked"}[cached], ", ".join(kits) or "none found",
                      ", ".join(wheels) or "none found"), None if found else (
                  "`cudaswitch use %s`" % short_version(kits[0]) if kits else
                  "put %s on LD_LIBRARY_PATH" % os.path.dirname(wheels[0]) if wheels else
                  "install the library (that CUDA major's runtime, or cuDNN of that major)"),
                  library=name, on_path=on_path, ldconfig=cached, toolkits=kits, wheels=wheels)]


def named_library(text: str) -> "str | None":
    """The library a message says could not be opened (the last: a traceback's real error), else the first
    it names: `/x/libtorch_cuda.so: libnccl.so.2: cannot open` is about libnccl.so.2."""
    missing = re.findall(r"(lib[A-Za-z0-9_-]+\.so(?:\.[\d.]*\d)?)'?: cannot open shared object file", text)
    if missing:
        return missing[-1]
    wanted = re.search(r"(lib[A-Za-z0-9_-]+\.so(?:\.[\d.]*\d)?)", text)
    return wanted.group(1) if wanted else None


def _wheel_copies(host: "Host", name: str) -> "list[str]":
    """Copies in the user's Python's NVIDIA wheels (site-packages/nvidia/*/lib), where torch's live."""
    import glob

    return sorted(p for d in host.torch.get("site_dirs") or [] if isinstance(d, str) and os.path.isabs(d)
                  for p in glob.glob(os.path.join(glob.escape(d), "nvidia", "*", "lib", glob.escape(name))))


@registered("gcc.message", layer="compiler", shown_by=("explain",))
def gcc_in_message(host: "Host", ask: Ask) -> list:
    """An "unsupported GNU version" message's gcc ceiling against the host gcc and the toolkits here."""
    out = []
    said = re.search(r"later than (\d+)|maximum required version by CUDA \S+ \((\d+)", " ".join(ask.text.split()))
    version = host.compiler_version
    if said and version:
        ceiling = int(said.group(1) or said.group(2))
        above = version_tuple(version)[0] > ceiling
        refusing = [r["version"] for r in host.registry["records"] if r.get("version")
                    and plan.gcc_ceiling(r)[0] == ceiling]
        out.append(check("gcc.message", "warning" if above else "info", "the message's toolkit accepts gcc %d at most; "
                         "the host gcc is %s%s; toolkits here with that ceiling: %s" % (ceiling, version,
                         " (above it)" if above else "", ", ".join(refusing) or "none"),
                         "pass `-ccbin g++-%d` (in NVCC_PREPEND_FLAGS, which 11.8 and 13.x read; 11.8 ignores "
                         "NVCC_CCBIN), or use a newer toolkit" % ceiling if above else None,
                         gcc=version, ceiling=ceiling, toolkits=refusing))
    return out


@registered("driver.libcuda", layer="driver", shown_by=("explain",))
def libcuda_loaded(host: "Host", ask: Ask) -> list:
    """Which libcuda was loaded, and a cuda-compat one on LD_LIBRARY_PATH (errors 803/804)."""
    drv = host.driver
    compat = compat_libcuda_dirs(host.env)
    loaded = ", ".join(drv["loaded"]) or "none"
    return [check("driver.libcuda", "warning" if compat else "info", "libcuda loaded: %s; kernel module: %s; "
                  "cuda-compat dirs on LD_LIBRARY_PATH: %s" % (loaded, drv["release"] or "none",
                  ", ".join(compat) or "none"), "remove the compat dir from LD_LIBRARY_PATH" if compat else None,
                  loaded=drv["loaded"], compat=compat)]


@registered("toolkit.cudart_link", layer="toolkit", shown_by=("explain",))
def cudart_link(host: "Host", ask: Ask) -> list:
    """Does the active toolkit have the unversioned libcudart.so (or the static one) a link needs?"""
    record = host.record
    if not record:
        return [check("toolkit.cudart_link", "info", "cannot check: no toolkit active", "`cudaswitch use VERSION`")]
    libs = [os.path.join(d, name) for d in record.get("lib_dirs") or []
            for name in ("libcudart.so", "libcudart_static.a")]
    have = [p for p in libs if os.path.exists(p)]
    level = "ok" if have else "error"
    return [check("toolkit.cudart_link", level, "CUDA %s at %s %s" % (record.get("version"), record["root"],
                  "has %s: link with -L%s" % (", ".join(os.path.basename(p) for p in have), os.path.dirname(have[0]))
                  if have else "has no libcudart.so or libcudart_static.a: a runtime-only install cannot link"),
                  None if have else "use a complete toolkit (`cudaswitch list` shows their status)", found=have)]


@registered("gpu.memory", layer="hardware", shown_by=("explain",))
def gpu_memory(host: "Host", ask: Ask) -> list:
    """GPU memory in use, from nvidia-smi where there is one; otherwise say it cannot be checked."""
    gpus = host.driver.get("gpus") or []
    smi = which("nvidia-smi", host.env)
    if not gpus:
        return [check("gpu.memory", "info", "cannot check GPU memory: no GPU visible on this host",
                      "run `nvidia-smi` on the machine that printed the message")]
    if not smi:
        return [check("gpu.memory", "info", "cannot check GPU memory: no nvidia-smi here (GPUs: %s)"
                      % ", ".join(g["name"] for g in gpus), None)]
    code, out, why = run_bounded([smi, "--query-gpu=index,name,memory.used,memory.total", "--format=csv,noheader"],
                                 host.env, 15.0)
    rows = out.decode("utf-8", "replace").strip().splitlines() if code == 0 else []
    return [check("gpu.memory", "info", "GPU memory now: %s" % ("; ".join(rows) if rows else why or "no answer"),
                  "nvidia-smi lists the processes holding it", rows=rows)]


@registered("cudnn.sublibraries", layer="env", shown_by=("explain",))
def cudnn_sublibraries(host: "Host", ask: Ask) -> list:
    """The first copy of each cuDNN library in the order a process without DT_RPATH finds them, and the
    versions their names carry: more than one version is the sub-library mismatch."""
    torch_dir = host.torch.get("torch_dir")
    wheel = [os.path.join(os.path.dirname(torch_dir), "nvidia", "cudnn", "lib")] if torch_dir else []
    first: dict = {}
    for directory in loaderdirs.library_path(host.env, host.paths) + wheel + loaderdirs.system_dirs(host.paths):
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


@registered("driver.libcuda_found", layer="driver", shown_by=("explain",))
def libcuda_found(host: "Host", ask: Ask) -> list:
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
def python_torch(host: "Host", ask: Ask) -> list:
    """Which interpreter `python3` is here, whether it has torch, and which known environments have it."""
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
def cmake_cuda(host: "Host", ask: Ask) -> list:
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
def launch_blocking(host: "Host", ask: Ask) -> list:
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
