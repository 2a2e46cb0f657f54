"""The checks only `explain` runs: each reads what the error message names (a library, an
architecture, a gcc ceiling) or a fact only that message makes worth gathering (GPU memory, NCCL's
/dev/shm). Registered (verify/checkregistry.py) like every check; compat.toml's rules name their ids."""

import os
import re

from cudaswitch.switch import plan
from cudaswitch.toolkit import short_version, version_tuple
from cudaswitch.verify import facttables, loaderdirs
# The checks of the layers a message names (NCCL, cuDNN's sub-libraries, libcuda, the Python,
# CMake) live in their own modules; importing them here registers them wherever explain's are.
from cudaswitch.verify import layerchecks, ncclchecks  # noqa: F401 (registers)
from cudaswitch.verify.checks import compat_libcuda_dirs
from cudaswitch.verify.compat import check, torch_home
from cudaswitch.verify.checkregistry import Ask, registered
from cudaswitch.pathsearch import which
from cudaswitch.verify.runner import run_bounded

TYPE_CHECKING = False  # typing is not imported at run time
if TYPE_CHECKING:
    from cudaswitch.verify.host import Host

PLAIN = Ask("explain")


@registered("explain.arch_table", layer="toolkit", shown_by=("explain",))
def arch_table(host: "Host", ask: Ask = PLAIN) -> list:
    """The CUDA releases that target each sm_XY the message names (compat.toml's arch table)."""
    out = []
    for sm in sorted(set(re.findall(r"sm_(\d+a?)", ask.text))):
        row = facttables.arch_row(sm)
        if row:
            out.append(check("explain.arch_table", "info", "sm_%s needs CUDA %s or newer%s" % (
                sm, row["first"], (", and was dropped after %s" % row["last"]) if row["last"] else ""), None,
                sm=sm, source=row["source"]))
    return out


@registered("env.cuda_home_major", layer="env", shown_by=("explain",))
def cuda_home_major(host: "Host", ask: Ask = PLAIN) -> list:
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
def loader_path(host: "Host", ask: Ask = PLAIN) -> list:
    """The library the message names (else libcudart.so): on the loader path, in the loader cache,
    in a toolkit or in the Python's NVIDIA wheels?"""
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
    """The library a message says could not be opened (the last such in a traceback: the real
    error), else the first library it names: `/x/libtorch_cuda.so: libnccl.so.2: cannot open`
    is about libnccl.so.2."""
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
def gcc_in_message(host: "Host", ask: Ask = PLAIN) -> list:
    """The gcc ceiling an "unsupported GNU version" message states, against the host gcc and the
    toolkits here with that ceiling."""
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
def libcuda_loaded(host: "Host", ask: Ask = PLAIN) -> list:
    """Which libcuda was loaded, and a cuda-compat one on LD_LIBRARY_PATH (errors 803/804)."""
    drv = host.driver
    compat = compat_libcuda_dirs(host.env)
    loaded = ", ".join(drv["loaded"]) or "none"
    return [check("driver.libcuda", "warning" if compat else "info", "libcuda loaded: %s; kernel module: %s; "
                  "cuda-compat dirs on LD_LIBRARY_PATH: %s" % (loaded, drv["release"] or "none",
                  ", ".join(compat) or "none"), "remove the compat dir from LD_LIBRARY_PATH" if compat else None,
                  loaded=drv["loaded"], compat=compat)]


@registered("toolkit.cudart_link", layer="toolkit", shown_by=("explain",))
def cudart_link(host: "Host", ask: Ask = PLAIN) -> list:
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
def gpu_memory(host: "Host", ask: Ask = PLAIN) -> list:
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
