"""Verdicts about the user's torch and the loader path (facts from torch_probe.py and env), and
the registered checks (verify/checkregistry.py) that read them from a Host."""

import glob
import os
import re

from cudaswitch.toolkit import version_tuple
from cudaswitch.verify import facttables
from cudaswitch.verify.compat import check, driver_supports, looks_like_toolkit, nvcc_target, torch_home
from cudaswitch.verify.checkregistry import Ask, registered

TYPE_CHECKING = False  # typing is not imported at run time
if TYPE_CHECKING:
    from cudaswitch.verify.host import Host
    from cudaswitch.verify.checkregistry import CheckResult

PLAIN = Ask("verify")
TORCH_IDS = ("torch.probe", "torch.installed", "torch.cuda_build", "torch.toolkit_major", "torch.toolkit_minor",
             "torch.driver", "torch.available", "torch.gpu_arch", "torch.matmul")


def _silent_for_use(host: "Host", ask: Ask) -> bool:
    """`use` says nothing about torch, or the loader path torch sees, for a Python without torch."""
    return ask.command == "use" and "No module named 'torch'" in (host.torch.get("torch_error") or "")


@registered(*TORCH_IDS, layer="framework", shown_by=("use", "verify", "doctor", "explain"))
def torch_framework(host: "Host", ask: Ask = PLAIN) -> "list[CheckResult]":
    """torch.* checks (explain without a GPU: a line saying the arch list cannot be compared here)."""
    if _silent_for_use(host, ask):
        return []
    out = torch_checks(host.torch, host.toolkit_cuda, host.driver, gpus=host.gpus)
    if ask.unchecked and not host.gpus and not any(c["id"] == "torch.gpu_arch" for c in out):
        out.append(check("torch.gpu_arch", "info", "no GPU visible on this host: cannot compare its architecture "
                         "with torch's arch list here", "run `cudaswitch explain` on the GPU machine"))
    return out


@registered("env.one_toolkit", layer="env", shown_by=("use", "verify", "doctor"))
def one_toolkit(host: "Host", ask: Ask = PLAIN) -> "list[CheckResult]":
    return [] if _silent_for_use(host, ask) else [three_toolkits(host.env, host.torch)]


@registered("env.cudnn_copies", layer="env", shown_by=("use", "verify", "doctor", "explain"))
def cudnn_copies_on_path(host: "Host", ask: Ask = PLAIN) -> "list[CheckResult]":
    return [] if _silent_for_use(host, ask) else [cudnn_copies(host.env, host.torch)]


@registered("env.library_shadowing", layer="env", shown_by=("use", "verify", "doctor", "explain"))
def shadowed_libraries(host: "Host", ask: Ask = PLAIN) -> "list[CheckResult]":
    """env.library_shadowing on the switched loader path (explain: a line where torch ships none to compare)."""
    if _silent_for_use(host, ask):
        return []
    from cudaswitch.verify import libprovenance  # ELF reading: not on `torch`'s planning path

    found = library_shadowing(host.env, host.torch, libprovenance.taken(host.env, host.paths, host.torch))
    if found or not ask.unchecked:
        return found
    return [check("env.library_shadowing", "info", "cannot check for shadowed libraries: torch in %s ships no NVIDIA "
                  "wheel libraries here (%s)" % (host.python or "no python3", host.torch.get("torch") or "no torch"))]

TORCH_MISMATCH = ("The detected CUDA version ({nvcc}) mismatches the version that was used to compile "
                  "PyTorch ({torch}). Please make sure to use the same CUDA versions.")


def torch_checks(probe: dict, toolkit_cuda: "str | None", driver: dict,
                 gpus: "list | None" = None) -> "list[CheckResult]":
    """torch.* checks for one Python; `gpus` (the driver's, else torch's) are checked even where CUDA cannot start."""
    python = probe.get("python_requested") or probe.get("python")
    if "error" in probe or "fatal" in probe:
        why = probe.get("error") or probe.get("fatal")
        name = os.path.basename(python or "python")
        return [check("torch.probe", "warning", "could not ask %s about torch: %s" % (python, why),
                      "run `%s -c \"import torch\"` to see why" % python, python=python,
                      line="cannot ask %s about torch: %s" % (name, str(why).replace(python or "\0", name)))]
    if not probe.get("torch"):
        return [_no_torch(probe, python)]
    base = {"python": python, "torch": probe["torch"], "torch_cuda": probe.get("cuda"), "toolkit": toolkit_cuda}
    if not probe.get("cuda"):
        return [_cpu_only(probe, driver, base)]
    out = [_cuda_major(probe, toolkit_cuda, base)]
    out.append(driver_supports(driver, probe["cuda"], "torch.driver", "torch %s (CUDA %s)"
                               % (probe["torch"], probe["cuda"])))
    out += _runtime(probe, driver, base, gpus)
    return [c for c in out if c]


def _no_torch(probe: dict, python: "str | None") -> "CheckResult":
    """No torch is a normal answer; a torch that is there but fails to import is a finding."""
    error = probe.get("torch_error") or "no report"
    if "No module named 'torch'" in error:
        return check("torch.installed", "info", "no torch in %s (%s)" % (python, error),
                     "pip install torch in that Python, or pass --python", python=python)
    return check("torch.installed", "warning", "torch in %s does not import: %s" % (python, error),
                 "`cudaswitch explain` with that message names the usual causes", python=python, error=error)


def _cpu_only(probe: dict, driver: dict, base: dict) -> "CheckResult":
    level = "warning" if driver.get("present") else "info"
    hip = " (a ROCm build, HIP %s)" % probe["hip"] if probe.get("hip") else ""
    return check("torch.cuda_build", level, "torch %s in %s is a CPU-only build%s: it will not use the GPU "
                 "or this toolkit" % (probe["torch"], base["python"], hip), _cuda_build_hint(probe["torch"], base),
                 cpu_only=True, **base)


def _cuda_build_hint(torch_version: str, base: dict) -> str:
    """Name the CUDA builds of this torch release (torch_builds.toml), the toolkit's major first."""
    variants, single_copy = facttables.torch_variants(torch_version)
    if not variants:
        return "install a CUDA build of torch (the cu12x/cu13x indexes of download.pytorch.org)"
    toolkit = version_tuple(base.get("toolkit") or "")[:2]
    # the toolkit's major first (extension builds need it), then not newer than the toolkit, newest
    builds = sorted(variants, key=lambda c: (version_tuple(c)[:1] != toolkit[:1],
                                             version_tuple(c)[:2] > toolkit, [-n for n in version_tuple(c)]))
    index = "https://download.pytorch.org/whl/cu%s" % builds[0].replace(".", "")
    release = ".".join(str(n) for n in version_tuple(torch_version.split("+")[0])[:2])
    return "torch %s has CUDA builds %s%s: pip install \"torch==%s.*\" --index-url %s" % (
        release, ", ".join(variants), " (from one unverified source)" if single_copy else "", release, index)


def _cuda_major(probe: dict, toolkit_cuda: "str | None", base: dict) -> "CheckResult | None":
    if not toolkit_cuda:
        return None
    torch_v, kit_v = version_tuple(probe["cuda"])[:2], version_tuple(toolkit_cuda)[:2]
    if torch_v[:1] != kit_v[:1]:
        words = TORCH_MISMATCH.format(nvcc="%d.%d" % kit_v, torch=probe["cuda"])
        return check("torch.toolkit_major", "error", "torch %s was built with CUDA %s but the toolkit is %s: "
                     "extension builds (torch.utils.cpp_extension) refuse with \"%s\"" % (probe["torch"],
                     probe["cuda"], toolkit_cuda, words), "use a CUDA %d.x toolkit for this torch" % torch_v[0],
                     torch_message=words, **base)
    if torch_v != kit_v:
        return check("torch.toolkit_minor", "warning", "torch %s was built with CUDA %s, the toolkit is %s: "
                     "same major, so extensions build, with a warning" % (probe["torch"], probe["cuda"], toolkit_cuda),
                     "prefer the %s toolkit when building extensions" % probe["cuda"], **base)
    return check("torch.toolkit_major", "ok", "torch %s was built with CUDA %s, matching the toolkit"
                 % (probe["torch"], probe["cuda"]), **base)


def _runtime(probe: dict, driver: dict, base: dict, gpus: "list | None" = None) -> "list[CheckResult]":
    out = []
    errors = probe.get("errors") or {}
    if probe.get("available") is False and driver.get("present"):
        out.append(check("torch.available", "warning", "torch.cuda.is_available() is False%s"
                         % (": " + errors["available"] if "available" in errors else ""),
                         "see the driver checks above", **base))
    # get_arch_list() is empty when CUDA cannot start; the build's own flags are readable without a GPU
    arch_list = probe.get("arch_list") or (probe.get("arch_flags") or "").split()
    devices = gpus if gpus is not None else probe.get("devices") or []
    if devices and not arch_list:
        out.append(check("torch.gpu_arch", "info", "cannot check torch's architectures against the GPUs: torch "
                         "%s reports no compiled architecture list" % probe["torch"], None, **base))
    for device in devices if arch_list else []:
        out.append(arch_in_build(device, arch_list, base))
    if probe.get("matmul") is not None or "matmul" in errors:
        ok = (probe.get("matmul") or {}).get("ok")
        out.append(check("torch.matmul", "ok" if ok else "error", "a 16x16 matmul on the GPU %s"
                         % ("works" if ok else "failed: " + errors.get("matmul", "wrong result")), **base))
    return out


def arch_in_build(device: dict, arch_list: list, base: dict) -> "CheckResult":
    """GPU capability vs torch's arch list (a missing sm_XY means 'no kernel image'). SASS sm_Xy runs on
    any X.z with z >= y (not arch-specific sm_XYa), as torch's _check_cubins accepts; PTX compute_XY is
    JIT-compiled for any capability >= XY."""
    major, minor = (int(p) for p in device["capability"].split(".")[:2])
    sm = "sm_%d%d" % (major, minor)
    facts = dict(base, gpu=device["name"], capability=device["capability"], arch_list=arch_list)
    if sm in arch_list or sm + "a" in arch_list:
        return check("torch.gpu_arch", "ok", "%s (%s) is in torch's arch list" % (device["name"], sm), **facts)
    sass = [a for a in arch_list if not a.endswith("a") and (split := _split_arch(a, "sm_"))
            and split[0] == major and split[1] <= minor]
    if sass:
        return check("torch.gpu_arch", "ok", "%s (%s) runs torch's %s code (same major, binary compatible)"
                     % (device["name"], sm, sass[-1]), **facts)
    ptx = [a for a in arch_list if (split := _split_arch(a, "compute_")) and split <= (major, minor)]
    if ptx:
        return check("torch.gpu_arch", "info", "%s (%s) runs through PTX JIT from %s (slow first start)"
                     % (device["name"], sm, ptx[-1]), None, **facts)
    builds = facttables.torch_builds_for(device["capability"])  # the table `cudaswitch torch` reads
    hint = "install a torch build whose arch list has %s" % sm
    if builds:
        release, cuda = builds[0]
        hint = "torch %s's CUDA %s build has %s: pip install \"torch==%s.*\" --index-url " \
               "https://download.pytorch.org/whl/cu%s (`cudaswitch torch --gpu %s` weighs the driver too)" % (
                   release, cuda, sm, release, cuda.replace(".", ""), sm)
    return check("torch.gpu_arch", "error", "%s (%s) is not in torch %s's arch list (%s): kernels fail with \"no "
                 "kernel image is available for execution on the device\"" % (device["name"], sm,
                 base.get("torch") or "", " ".join(arch_list) or "empty"), hint, builds_with_arch=builds, **facts)


def _split_arch(arch: str, prefix: str) -> "tuple[int, int] | None":
    """'sm_86' -> (8, 6), 'sm_90a' -> (9, 0), 'sm_120' -> (12, 0); None for another prefix."""
    digits = re.match(re.escape(prefix) + r"(\d+)(\d)[a-z]?$", arch)
    return (int(digits.group(1)), int(digits.group(2))) if digits else None


def toolkit_root_of(path: str) -> str:
    """The toolkit root a bin/ or lib/ file lives in: strip /bin, /lib64, /targets/<t>/lib."""
    directory = os.path.dirname(os.path.realpath(path))
    match = re.match(r"(.*?)/targets/[^/]+/lib(64)?$", directory)
    if match:
        return match.group(1)
    return os.path.dirname(directory) if os.path.basename(directory) in ("bin", "lib", "lib64") else directory


def three_toolkits(env: dict, probe: dict) -> "CheckResult":
    """nvcc on PATH, the CUDA_HOME torch would take and the libcudart torch mapped: one toolkit?"""
    from cudaswitch.switch.active import first_nvcc

    places = {}
    nvcc = first_nvcc(env)
    if nvcc:
        places["nvcc on PATH"] = toolkit_root_of(nvcc_target(nvcc))
    home, how = torch_home(env)
    if home and looks_like_toolkit(home):  # a non-toolkit CUDA_HOME is env.torch_cuda_home's finding
        places["CUDA_HOME"] = os.path.realpath(home)
    wheel_dir = os.path.dirname(probe.get("torch_dir") or "/nonexistent")
    for path in ((probe.get("maps") or {}).get("libcudart") or [])[:1]:
        if not path.startswith(wheel_dir + "/"):  # torch's own wheel runtime is expected to differ
            places["libcudart loaded by torch"] = toolkit_root_of(path)
    distinct = sorted(set(places.values()))
    if len(distinct) <= 1 or len(places) < 2:
        text = "; ".join("%s -> %s" % kv for kv in places.items()) or "no nvcc, CUDA_HOME or libcudart in use"
        return check("env.one_toolkit", "ok", "one toolkit in use: " + text, places=places)
    return check("env.one_toolkit", "warning", "%d different toolkits are in use: %s" % (len(distinct),
                 "; ".join("%s -> %s" % kv for kv in places.items())),
                 "`cudaswitch use` one toolkit so PATH, CUDA_HOME and LD_LIBRARY_PATH agree", places=places)


def cudnn_copies(env: dict, probe: dict) -> "CheckResult":
    """Several libcudnn copies on the loader path: the first found shadows the one torch ships."""
    dirs = [d for d in (env.get("LD_LIBRARY_PATH") or "").split(os.pathsep) if d]
    if probe.get("torch_dir"):
        dirs.append(os.path.join(os.path.dirname(probe["torch_dir"]), "nvidia", "cudnn", "lib"))
    copies: dict = {}
    for directory in dirs:
        libs = sorted(glob.glob(os.path.join(directory, "libcudnn.so*")))
        if libs:
            copies.setdefault(os.path.realpath(directory), _soname_version(libs))
    mapped = (probe.get("maps") or {}).get("libcudnn") or []
    torch_cudnn = facttables.cudnn_version_string(probe.get("cudnn"))
    facts: dict = {"copies": copies, "mapped": mapped, "torch_cudnn": torch_cudnn}
    if len(copies) > 1:
        return check("env.cudnn_copies", "warning", "%d cuDNN copies on the loader path: %s%s" % (len(copies),
                     ", ".join("%s (%s)" % kv for kv in copies.items()),
                     "; torch reports cuDNN %s" % torch_cudnn if torch_cudnn else ""), "keep one: remove the "
                     "others' directories from LD_LIBRARY_PATH (torch wheels bring their own)", **facts)
    return check("env.cudnn_copies", "ok", "at most one cuDNN on the loader path", **facts)


def _soname_version(libs: "list[str]") -> str:
    versions = [os.path.basename(p)[len("libcudnn.so."):] for p in libs if os.path.basename(p) != "libcudnn.so"]
    return max(versions, key=lambda v: version_tuple(v)) if versions else "?"


def compat_libcuda_dirs(env: dict) -> list:
    """LD_LIBRARY_PATH entries of a cuda-compat package (/usr/local/cuda-X/compat): their libcuda
    overrides the driver's, which is error 803/804 on a GPU or kernel module it does not fit."""
    return [d for d in (env.get("LD_LIBRARY_PATH") or "").split(os.pathsep) if d.rstrip("/").endswith("/compat")]


def library_shadowing(env: dict, probe: dict, taken: "dict | None" = None) -> "list[CheckResult]":
    """Toolkit libraries on LD_LIBRARY_PATH older than torch's wheel copy (same soname). `taken`: {soname:
    file} the loader gives torch where known; a copy it does not take (DT_RPATH wins) shadows nothing."""
    from cudaswitch.verify.libprovenance import torch_location

    site = os.path.dirname(torch_location(probe) or "")
    wheel = _wheel_libraries(site, probe.get("distributions") or []) if site else {}
    if not wheel:
        return []
    found = []
    for directory in [d for d in (env.get("LD_LIBRARY_PATH") or "").split(os.pathsep) if d]:
        for soname, (wheel_path, wheel_version) in sorted(wheel.items()):
            other = os.path.join(directory, soname)
            if not os.path.exists(other) or os.path.realpath(other) == os.path.realpath(wheel_path):
                continue
            if taken is not None and os.path.realpath(taken.get(soname) or "") != os.path.realpath(other):
                continue
            mine = _file_version(other, soname)
            if mine and wheel_version and version_tuple(mine) < version_tuple(wheel_version):
                found.append({"soname": soname, "shadowing": os.path.realpath(other), "version": mine,
                              "wheel": wheel_path, "wheel_version": wheel_version})
    if not found:
        return [check("env.library_shadowing", "ok", "no toolkit library on the loader path is older than torch's "
                      "own copy", None, checked=sorted(wheel))]
    text = "; ".join("%s %s (%s) comes before torch's %s %s" % (f["soname"], f["version"], f["shadowing"],
                                                                  f["wheel_version"], f["wheel"]) for f in found)
    dirs = sorted({os.path.dirname(f["shadowing"]) for f in found})
    return [check("env.library_shadowing", "error", "an older library shadows torch's: " + text,
                  "set `loader_path = false` in cudaswitch's config.toml (switches then leave LD_LIBRARY_PATH "
                  "alone; torch finds its own copies through its RUNPATH), or drop %s from LD_LIBRARY_PATH"
                  % ", ".join(dirs), shadowed=found)]


def _wheel_libraries(site: str, distributions: list) -> dict:
    """{soname: (path, version)} under site-packages/nvidia/*/lib that a toolkit's lib64 also holds
    (LD_LIBRARY_PATH comes before torch's RUNPATH, so the toolkit's copy wins)."""
    wheel_libraries = facttables.load()["wheel_libraries"]["library"]
    versions: "dict[str, str]" = {}
    for dist in distributions:
        name = re.sub(r"-cu\d+$", "", dist["name"])
        versions.setdefault(name, dist["version"])
    out = {}
    for path in sorted(glob.glob(os.path.join(site, "nvidia", "*", "lib", "lib*.so.*"))):
        soname = os.path.basename(path)
        stem = soname.split(".so", 1)[0]
        if stem in wheel_libraries:
            out[soname] = (path, versions.get("nvidia-" + wheel_libraries[stem]))
    return out


def _file_version(path: str, soname: str) -> "str | None":
    """'12.1.105' from the real file a soname link leads to (libnvJitLink.so.12.1.105), or None."""
    real = os.path.basename(os.path.realpath(path))
    tail = real[len(soname.split(".so", 1)[0]) + len(".so."):] if ".so." in real else ""
    return tail if tail.count(".") >= 1 and all(p.isdigit() for p in tail.split(".")) else None
