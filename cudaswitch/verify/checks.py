"""Verdicts about the user's torch and the loader path (facts from torch_probe.py and env)."""

import glob
import os
import re

from cudaswitch.toolkit import version_tuple
from cudaswitch.verify.compat import check, driver_supports, looks_like_toolkit, nvcc_target, torch_home

TORCH_MISMATCH = ("The detected CUDA version ({nvcc}) mismatches the version that was used to compile "
                  "PyTorch ({torch}). Please make sure to use the same CUDA versions.")


def torch_checks(probe, toolkit_cuda, driver):
    """torch.* checks for one Python: installed? CUDA build? fits the toolkit, the driver, the GPUs?"""
    python = probe.get("python_requested") or probe.get("python")
    if "error" in probe or "fatal" in probe:
        return [check("torch.probe", "warning", "could not ask %s about torch: %s"
                      % (python, probe.get("error") or probe.get("fatal")),
                      "run `%s -c \"import torch\"` to see why" % python, python=python)]
    if not probe.get("torch"):
        return [check("torch.installed", "info", "no torch in %s (%s)" % (python, probe.get("torch_error")),
                      "pip install torch in that Python, or pass --python", python=python)]
    base = {"python": python, "torch": probe["torch"], "torch_cuda": probe.get("cuda"), "toolkit": toolkit_cuda}
    if not probe.get("cuda"):
        return [_cpu_only(probe, driver, base)]
    out = [_cuda_major(probe, toolkit_cuda, base)]
    out.append(driver_supports(driver, probe["cuda"], "torch.driver", "torch %s (CUDA %s)"
                               % (probe["torch"], probe["cuda"])))
    out += _runtime(probe, driver, base)
    return [c for c in out if c]


def _cpu_only(probe, driver, base):
    level = "warning" if driver.get("present") else "info"
    hip = " (a ROCm build, HIP %s)" % probe["hip"] if probe.get("hip") else ""
    return check("torch.cuda_build", level, "torch %s in %s is a CPU-only build%s: it will not use the GPU "
                 "or this toolkit" % (probe["torch"], base["python"], hip),
                 "install a CUDA build (e.g. the cu12x/cu13x index of download.pytorch.org)", cpu_only=True, **base)


def _cuda_major(probe, toolkit_cuda, base):
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


def _runtime(probe, driver, base):
    out = []
    errors = probe.get("errors") or {}
    if probe.get("available") is False and driver.get("present"):
        out.append(check("torch.available", "warning", "torch.cuda.is_available() is False%s"
                         % (": " + errors["available"] if "available" in errors else ""),
                         "see the driver checks above", **base))
    arch_list = probe.get("arch_list") or []
    for device in probe.get("devices") or []:
        out.append(arch_in_build(device, arch_list, base))
    if probe.get("matmul") is not None or "matmul" in errors:
        ok = (probe.get("matmul") or {}).get("ok")
        out.append(check("torch.matmul", "ok" if ok else "error", "a 16x16 matmul on the GPU %s"
                         % ("works" if ok else "failed: " + errors.get("matmul", "wrong result")), **base))
    return out


def arch_in_build(device, arch_list, base):
    """GPU capability vs torch.cuda.get_arch_list(): a missing sm_XY means 'no kernel image'."""
    cap = device["capability"].replace(".", "")
    sm = "sm_" + cap
    facts = dict(base, gpu=device["name"], capability=device["capability"], arch_list=arch_list)
    if sm in arch_list or sm + "a" in arch_list:
        return check("torch.gpu_arch", "ok", "%s (%s) is in torch's arch list" % (device["name"], sm), **facts)
    ptx = [a for a in arch_list if a.startswith("compute_") and _num(a) <= _num(cap)]
    if ptx:
        return check("torch.gpu_arch", "info", "%s (%s) runs through PTX JIT from %s (slow first start)"
                     % (device["name"], sm, ptx[-1]), None, **facts)
    return check("torch.gpu_arch", "error", "%s (%s) is not in torch's arch list (%s): kernels fail with \"no "
                 "kernel image is available for execution on the device\"" % (device["name"], sm,
                 " ".join(arch_list) or "empty"), "install a torch build that lists %s" % sm, **facts)


def _num(arch):
    digits = re.sub(r"\D", "", arch)
    return int(digits) if digits else 0


def toolkit_root_of(path):
    """The toolkit root a bin/ or lib/ file lives in: strip /bin, /lib64, /targets/<t>/lib."""
    directory = os.path.dirname(os.path.realpath(path))
    match = re.match(r"(.*?)/targets/[^/]+/lib(64)?$", directory)
    if match:
        return match.group(1)
    if os.path.basename(directory) in ("bin", "lib", "lib64"):
        return os.path.dirname(directory)
    return directory


def three_toolkits(env, probe):
    """nvcc on PATH, the CUDA_HOME torch would take and the libcudart torch mapped: one toolkit?"""
    from cudaswitch.verify.runner import which

    places = {}
    nvcc = which("nvcc", env)
    if nvcc:
        places["nvcc on PATH"] = toolkit_root_of(nvcc_target(nvcc))
    home, how = torch_home(env)
    if home and looks_like_toolkit(home):  # a non-toolkit CUDA_HOME is env.torch_cuda_home's finding
        places["CUDA_HOME"] = os.path.realpath(home)
    wheel_dir = os.path.dirname(probe.get("torch_file") or "/nonexistent")
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


def cudnn_copies(env, probe):
    """Several libcudnn copies on the loader path: the first found shadows the one torch ships."""
    dirs = [d for d in (env.get("LD_LIBRARY_PATH") or "").split(os.pathsep) if d]
    if probe.get("torch_file"):
        dirs.append(os.path.join(os.path.dirname(probe["torch_file"]), "nvidia", "cudnn", "lib"))
    copies = {}
    for directory in dirs:
        libs = sorted(glob.glob(os.path.join(directory, "libcudnn.so*")))
        if libs:
            copies.setdefault(os.path.realpath(directory), _soname_version(libs))
    mapped = (probe.get("maps") or {}).get("libcudnn") or []
    facts = {"copies": copies, "mapped": mapped}
    if len(copies) > 1:
        return check("env.cudnn_copies", "warning", "%d cuDNN copies on the loader path: %s" % (len(copies),
                     ", ".join("%s (%s)" % kv for kv in copies.items())), "keep one: remove the others' "
                     "directories from LD_LIBRARY_PATH (torch wheels bring their own)", **facts)
    return check("env.cudnn_copies", "ok", "at most one cuDNN on the loader path", **facts)


def _soname_version(libs):
    versions = [os.path.basename(p)[len("libcudnn.so."):] for p in libs if os.path.basename(p) != "libcudnn.so"]
    return max(versions, key=lambda v: version_tuple(v)) if versions else "?"
