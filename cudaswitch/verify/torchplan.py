"""Which PyTorch CUDA builds run on a host: by the driver (minor-version compatibility included), by
every GPU's compute capability against each build's architecture list, and by the toolkit that
would build extensions. Facts in, a plan (data) out; the caller gathers the facts.

The build rows live in cudaswitch/data/torch_builds.toml with their sources. Where the host can
answer, it wins: an installed torch's own `torch._C._cuda_getArchFlags()` replaces its row's list.
A build whose arch list lacks a GPU (and has no PTX it can JIT) is never a fit; a fact that cannot
be checked (no driver, no GPU visible) leaves `fits` at None, never True.
"""

import functools
import re
import sys
import tempfile
from importlib import resources
from typing import Dict, List, Optional

from cudaswitch.errors import UsageError
from cudaswitch.toolkit import version_tuple
from cudaswitch.verify import facts as table
from cudaswitch.verify.checks import arch_in_build
from cudaswitch.verify.compat import check, driver_supports

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

GPU_SM = re.compile(r"^(?:sm_)?(\d+)(\d)$")
GPU_DOTTED = re.compile(r"^(\d+)\.(\d+)$")
RELEASE = re.compile(r"^\d{3,}(\.\d+){0,2}$")
CUDA = re.compile(r"^\d{1,2}\.\d$")

# Runs in the user's Python (any 3.x, stdlib only): what its torch says about itself.
_PROBE = r'''
import json, os, sys
out = {"python": sys.executable, "site_dirs": [p for p in sys.path if p and os.path.isdir(p)]}
try:
    import torch
    out["torch"] = str(torch.__version__)
    out["torch_dir"] = os.path.dirname(getattr(torch, "__file__", None) or "") or None
    out["cuda"] = getattr(getattr(torch, "version", None), "cuda", None)
    flags = torch._C._cuda_getArchFlags() if out["cuda"] else None
    out["arch_flags"] = flags.split() if isinstance(flags, str) else (list(flags) if flags else [])
except ImportError as exc:
    out["torch"] = None
    out["torch_error"] = "ImportError: %s" % exc
except Exception as exc:
    out["torch_error"] = "%s: %s" % (type(exc).__name__, exc)
sys.stdout.write("\n" + sys.argv[1] + json.dumps(out) + sys.argv[1] + "\n")
'''


@functools.lru_cache(maxsize=1)
def load() -> dict:
    text = resources.files("cudaswitch.data").joinpath("torch_builds.toml").read_text("utf-8")
    return tomllib.loads(text)


def variant(cuda: str) -> str:
    """'12.6' -> 'cu126': the name of the wheel index and of UV_TORCH_BACKEND."""
    major, minor = version_tuple(cuda)[:2]
    return "cu%d%d" % (major, minor)


def parse_gpu(text: str) -> dict:
    """`--gpu sm_61` / `61` / `6.1` -> a device like the driver reports one."""
    value = text.strip().lower()
    match = GPU_SM.match(value) or GPU_DOTTED.match(value)
    if not match:
        raise UsageError("--gpu %r is not a compute capability" % text[:40], "give e.g. sm_61, sm_120 or 8.6")
    capability = "%d.%d" % (int(match.group(1)), int(match.group(2)))
    return {"name": "sm_%d%d" % (int(match.group(1)), int(match.group(2))), "capability": capability,
            "source": "--gpu"}


def parse_driver(text: str) -> dict:
    """`--driver 550.54.14` (a driver release) or `--driver 12.4` (the CUDA version it supports) ->
    driver facts like driver.driver_facts' for another machine."""
    value = text.strip()
    if CUDA.match(value):
        return {"present": True, "cuda": value, "release": None, "cuda_source": "--driver"}
    if RELEASE.match(value):
        return {"present": True, "cuda": cuda_for_release(value), "release": value,
                "cuda_source": "--driver release, compat.toml driver_minimum"}
    raise UsageError("--driver %r is neither a driver release nor a CUDA version" % text[:40],
                     "give e.g. 550.54.14 or 12.4")


def cuda_for_release(release: str) -> Optional[str]:
    """Newest CUDA whose GA minimum driver the release meets. A release given with fewer parts
    (550.54) stands for every 550.54.x, so it is compared on the parts it has."""
    have = table.release_tuple(release)
    fits = [r["cuda"] for r in table.load()["driver_minimum"]
            if table.release_tuple(r["driver"])[:len(have)] <= have]
    return max(fits, key=version_tuple) if fits else None


def probe_installed(paths, python: str, env: dict, timeout: float) -> dict:
    """{"torch", "cuda", "arch_flags", "python"} from the user's Python, or {"error": why}. It runs
    from a private empty directory, so no project's torch/ or json.py is imported by accident.
    Importing torch takes seconds: the answer is cached until the Python's site dirs change."""
    import os

    from cudaswitch.verify import cache
    from cudaswitch.verify.runner import run_framed

    where = os.path.join(paths.cache_dir, "torch-arch.marshal")
    entries = cache.load(where)
    key = "%s|%s|%s" % (python, env.get("PYTHONPATH", ""), cache.mtimes([python]).get(python))
    hit = entries.get(key)
    if hit is not None and cache.unchanged(hit["watch"]):
        return dict(hit["payload"], cached=True)
    with tempfile.TemporaryDirectory(prefix="cudaswitch-torch-") as private:
        payload, error = run_framed([python, "-c", _PROBE], env, timeout, cwd=private)
    if payload is None:
        return {"error": error, "python": python}
    watch = list(payload.get("site_dirs") or []) + ([payload["torch_dir"]] if payload.get("torch_dir") else [])
    cache.store(where, entries, key, {"payload": payload, "watch": cache.mtimes(watch)})
    return payload


def builds(installed: Optional[dict] = None) -> List[dict]:
    """Every known build, newest torch first then newest CUDA, with the installed torch's own arch
    flags in place of its row's list (and a row of its own when the data does not know it)."""
    rows = [dict(row, verified=row.get("verified", True)) for row in load()["build"]]
    own = _installed_build(installed)
    if own:
        same = [r for r in rows if (r["torch"], r["cuda"]) == (own["torch"], own["cuda"])]
        rows = [r for r in rows if r not in same] + [dict(same[0] if same else {"published": False}, **own)]
    return sorted(rows, key=lambda r: (version_tuple(r["torch"]), version_tuple(r["cuda"])), reverse=True)


def _installed_build(installed):
    if not installed or not installed.get("torch") or not installed.get("cuda") or not installed.get("arch_flags"):
        return None
    release = ".".join(str(n) for n in version_tuple(installed["torch"].split("+")[0])[:2])
    cuda = ".".join(str(n) for n in version_tuple(installed["cuda"])[:2])
    return {"torch": release, "cuda": cuda, "arch": list(installed["arch_flags"]), "verified": True,
            "source": "installed", "installed": installed["torch"], "python": installed.get("python")}


def install_lines(build: dict) -> Dict[str, str]:
    """The exact lines that get this build: pip with the index URL, uv's backend, conda's pin."""
    name = variant(build["cuda"])
    pin = "torch==%s" % build["installed"].split("+")[0] if build.get("installed") else "torch==%s.*" % build["torch"]
    index = load()["index"]
    if version_tuple(build["torch"]) <= version_tuple(index["conda_channel_last"]):
        conda = "conda install pytorch==%s.* pytorch-cuda=%s -c pytorch -c nvidia" % (build["torch"], build["cuda"])
    else:
        conda = "conda install -c conda-forge pytorch=%s cuda-version=%s" % (build["torch"], build["cuda"])
    return {"pip": "pip install %s --index-url %s" % (pin, index["pip"].format(variant=name)),
            "uv": "UV_TORCH_BACKEND=%s uv pip install %s" % (name, pin), "uv_backend": name, "conda": conda}


def assess(build: dict, driver: dict, gpus: List[dict], toolkit: Optional[dict]) -> dict:
    """One build against the host: its checks, and fits True / False / None (cannot tell)."""
    subject = "torch %s+%s" % (build["torch"], variant(build["cuda"]))
    checks = [driver_supports(driver, build["cuda"], "torch_build.driver", subject)]
    base = {"torch": subject, "arch_source": build["source"]}
    checks += [arch_in_build(gpu, build["arch"], base) for gpu in gpus]
    if not gpus:
        checks.append(check("torch_build.gpu_arch", "info", "no GPU visible: cannot compare a GPU with %s's "
                            "arch list (%s)" % (subject, " ".join(build["arch"])), "give --gpu sm_XY for the "
                            "target machine", arch_list=build["arch"]))
    extension = extension_check(build, toolkit, gpus)
    levels = [c["level"] for c in checks]
    if "error" in levels:
        fits = False
    elif not driver.get("present") or not driver.get("cuda") or not gpus:
        fits = None
    else:
        fits = True
    published = build.get("published", True)  # a self-built torch has no index to install it from
    return dict(build, variant=variant(build["cuda"]), fits=fits, checks=checks + [extension], published=published,
                extensions=extension["level"], install=install_lines(build) if published else None)


def extension_check(build: dict, toolkit: Optional[dict], gpus: List[dict] = ()) -> dict:
    """cpp_extension refuses a toolkit whose CUDA major differs from torch's; another minor warns; a
    GPU the toolkit's nvcc cannot target gets no extension code whatever torch build it is."""
    if not toolkit:
        return check("torch_build.extensions", "info", "no toolkit active or given: cannot check building "
                     "extensions", "give a REQUEST, e.g. `cudaswitch torch 12.6`")
    have, want = version_tuple(toolkit["version"])[:2], version_tuple(build["cuda"])[:2]
    facts = {"toolkit": toolkit["version"], "torch_cuda": build["cuda"], "nvcc_archs": toolkit.get("gpu_archs")}
    untargeted = [g for g in gpus if toolkit.get("gpu_archs") is not None
                  and "compute_" + g["capability"].replace(".", "") not in toolkit["gpu_archs"]]
    if untargeted:
        names = ", ".join("sm_" + g["capability"].replace(".", "") for g in untargeted)
        return check("torch_build.extensions", "warning", "nvcc %s cannot target %s (`nvcc --list-gpu-arch`): "
                     "no extension code for it" % (toolkit["version"], names),
                     "use a toolkit whose nvcc lists %s" % names, **facts)
    if have[0] != want[0]:
        return check("torch_build.extensions", "warning", "toolkit %s cannot build extensions for CUDA %s "
                     "(cpp_extension refuses another major)" % (toolkit["version"], build["cuda"]),
                     "switch to a CUDA %d.x toolkit to build extensions" % want[0], **facts)
    if have != want:
        return check("torch_build.extensions", "info", "toolkit %s builds extensions for CUDA %s with a warning "
                     "(another minor)" % (toolkit["version"], build["cuda"]), None, **facts)
    return check("torch_build.extensions", "ok", "toolkit %s matches CUDA %s for extensions"
                 % (toolkit["version"], build["cuda"]), **facts)


def plan(driver: dict, gpus: List[dict], toolkit: Optional[dict], installed: Optional[dict] = None) -> dict:
    """The whole answer: every build assessed, newest first, and the one to install."""
    assessed = [assess(b, driver, gpus, toolkit) for b in builds(installed)]
    result = {"driver": _driver_summary(driver), "gpus": gpus, "toolkit": toolkit, "installed": installed,
              "builds": assessed, "recommended": None, "reason": None}
    result["recommended"], result["reason"] = recommend(assessed, toolkit)
    if result["recommended"] is None and any(b["fits"] is None for b in assessed):
        result["reason"] = _missing_facts(driver, gpus)
    own = [b for b in assessed if b.get("source") == "installed"]
    result["installed_fits"] = own[0]["fits"] if own else None
    return result


def recommend(assessed: List[dict], toolkit: Optional[dict]):
    """(build, why) or (None, why): the newest fitting build with a sourced arch list, preferring one
    the toolkit can build extensions for; an unverified row is never preferred over a sourced one."""
    fitting = [b for b in assessed if b["fits"] is True and b["published"]]
    if not fitting:
        unknown = any(b["fits"] is None for b in assessed)
        return None, ("cannot tell without the driver and the GPUs: give --driver and --gpu for the target"
                      if unknown
                      else "no known build (torch 2.6 and newer) has code for every GPU and runs on this driver")
    for group, why in ((lambda b: toolkit and b["verified"] and b["extensions"] != "warning",
                        "newest fitting build with a sourced arch list that the toolkit can build extensions for"),
                       (lambda b: b["verified"], "newest fitting build with a sourced arch list"),
                       (lambda b: True,
                        "newest fitting build; no source confirms its arch list for that exact release")):
        chosen = [b for b in fitting if group(b)]
        if chosen:
            return chosen[0], why
    return None, None  # pragma: no cover - the last group takes every fitting build


def _missing_facts(driver, gpus):
    """Why the plan cannot tell, and what to give instead."""
    if not driver.get("present") or not driver.get("cuda"):
        what = "no NVIDIA driver visible" if not driver.get("present") else "the driver's CUDA version is unknown"
        return "cannot tell: %s; give --driver and --gpu for the target machine" % what
    return ("cannot tell: the driver supports CUDA %s but reports no GPU (%s); give --gpu for the target"
            % (driver["cuda"], "; ".join(driver.get("problems") or []) or "none found"))


def _driver_summary(driver):
    keys = ("present", "release", "cuda", "cuda_source", "libcuda_choice", "problems")
    return {k: driver.get(k) for k in keys if k in driver}


def toolkit_of(record: Optional[dict], env: dict) -> Optional[dict]:
    """The toolkit's version and root, and what its nvcc can target (the host answers; None when
    it cannot say, e.g. no nvcc or one older than --list-gpu-arch)."""
    if not record:
        return None
    archs = None
    if record.get("nvcc"):
        from cudaswitch.verify import nvcc

        archs = nvcc.gpu_archs(record["nvcc"], env, 15.0)
    return {"version": record["version"], "root": record["root"], "gpu_archs": archs}


FIT_WORD = {True: "fits", False: "no", None: "unknown"}


def plan_lines(result: dict) -> List[str]:
    """The human answer: the host facts, the recommended build with its install lines, every build."""
    driver = result["driver"]
    gpus = ", ".join(g["name"] + ("" if g.get("source") == "--gpu" else " (sm_%s)" % g["capability"].replace(".", ""))
                     for g in result["gpus"])
    lines = ["driver: %s" % ("CUDA %s (%s)" % (driver["cuda"], driver.get("cuda_source")) if driver.get("cuda")
                            else "none visible"),
             "GPUs: %s" % (gpus or "none visible"),
             "toolkit: %s" % ("%s (%s)" % (result["toolkit"]["version"], result["toolkit"]["root"])
                             if result["toolkit"] else "none")]
    lines += _installed_lines(result)
    best = result["recommended"]
    if best:
        lines.append("recommended: torch %s+%s (%s)" % (best["torch"], best["variant"], result["reason"]))
        lines += ["  " + best["install"][k] for k in ("pip", "uv", "conda")]
        newer = next(b for b in result["builds"] if b["fits"] is True and b["published"])
        if newer is not best:
            why = ("by its arch list, which no source confirms for it" if not newer["verified"]
                   else "but the toolkit cannot build extensions for it")
            lines.append("  (torch %s+%s is newer and fits, %s)" % (newer["torch"], newer["variant"], why))
    else:
        lines.append("recommended: none (%s)" % result["reason"])
    lines.append("builds, newest first:")
    for build in result["builds"]:
        lines.append("  %-7s torch %-5s %-6s %s%s" % (FIT_WORD[build["fits"]], build["torch"], build["variant"],
                                                   _why(build), "" if build["verified"] else " [arch list unverified]"))
    return lines


def _short_reason(item):
    """One failed check in a few words: which CUDA the driver lacks, which GPU has no code."""
    facts = item["facts"]
    if item["id"] == "torch_build.driver":
        return "the driver (CUDA %s) is too old for CUDA %s" % (facts.get("driver_cuda"), facts.get("cuda"))
    sm = "sm_" + facts.get("capability", "").replace(".", "")
    return "no code for %s" % (sm if facts.get("gpu") == sm else "%s (%s)" % (facts.get("gpu"), sm))


def _installed_lines(result):
    installed = result["installed"]
    if not installed:
        return []
    if installed.get("error") or installed.get("torch_error"):
        return ["installed: cannot ask %s about torch: %s" % (installed.get("python"),
                                                               installed.get("error") or installed.get("torch_error"))]
    if not installed.get("cuda"):
        return ["installed: torch %s in %s is a CPU-only build" % (installed["torch"], installed.get("python"))]
    verdict = {True: "fits this host", False: "does NOT fit this host",
               None: "cannot tell whether it fits"}[result["installed_fits"]]
    return ["installed: torch %s in %s %s (its own arch flags: %s)" % (
        installed["torch"], installed.get("python"), verdict,
        " ".join(installed.get("arch_flags") or []) or "none")]


def _why(build):
    bad = [c for c in build["checks"] if c["level"] in ("error", "warning")]
    if build["fits"] is False:
        return "; ".join(_short_reason(c) for c in bad if c["level"] == "error")
    notes = ["extensions: " + c["message"] for c in bad if c["id"] == "torch_build.extensions"]
    return "; ".join(["arch " + " ".join(build["arch"])] + notes)


def gather(paths, load_registry, env: dict, request: Optional[str] = None, driver: Optional[str] = None,
           gpus: Optional[List[str]] = None, python: Optional[str] = None, timeout: float = 60.0) -> dict:
    """The plan for this host, or for another machine where --driver / --gpu replace its facts. Bad
    options are refused before anything runs."""
    from cudaswitch.verify.runner import find_python

    given_driver = parse_driver(driver) if driver else None
    given_gpus = [parse_gpu(g) for g in gpus or []]
    toolkit = toolkit_of(_toolkit_record(load_registry, env, request), env)
    if given_driver is None or not given_gpus:
        from cudaswitch.verify.driver import driver_facts

        host = driver_facts(paths, env)
    drv = given_driver or host
    devices = given_gpus or host["gpus"]
    chosen = find_python(env, python)
    installed = probe_installed(paths, chosen, env, timeout) if chosen else None
    return plan(drv, devices, toolkit, installed)


def _toolkit_record(load_registry, env, request):
    """The toolkit a REQUEST names (it must exist), else the active or default one, else None."""
    from cudaswitch import core
    from cudaswitch.errors import CudaSwitchError
    from cudaswitch.registry.resolve import resolve

    reg = load_registry()
    if request:
        return resolve(reg, request)
    try:
        return core.current_record(reg, env)
    except CudaSwitchError:
        return None
