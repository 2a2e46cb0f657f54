"""Which PyTorch CUDA builds run on a host: by the driver (minor-version compatibility included), each
GPU's capability against each build's arch list (torch_builds.toml, every row with its evidence),
and the toolkit that would build extensions. Facts in, a plan out. The host's own answer wins (an
installed torch's `_cuda_getArchFlags()` replaces its row); a fact that cannot be checked leaves
`fits` None, never True, and such a build is never recommended."""

import os
from typing import Callable, Dict, List, Optional, Sequence

from cudaswitch.toolkit import short_version, version_tuple
from cudaswitch.verify import facttables
from cudaswitch.verify import target
from cudaswitch.verify.checks import arch_in_build
from cudaswitch.verify.compat import check, driver_supports
from cudaswitch.verify.checkregistry import registered
from cudaswitch.verify.target import from_report, parse_driver, parse_gpu

TYPE_CHECKING = False
if TYPE_CHECKING:
    from cudaswitch.paths import Paths
    from cudaswitch.verify.checkregistry import CheckResult

PROBES_FILE = "torch-arch.marshal"
DRIVER_KEYS = ("present", "release", "release_assumed", "branch", "cuda", "cuda_at_least", "cuda_source", "older_than",
               "libcuda_choice", "problems")  # what the plan says of the driver

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


def host_platform() -> str:
    """The wheel platform of this machine, as the table names it."""
    return "linux-aarch64" if os.uname().machine.lower() in ("aarch64", "arm64") else "linux-x86_64"


def variant(cuda: str) -> str:
    """'12.6' -> 'cu126': the name of the wheel index and of UV_TORCH_BACKEND."""
    major, minor = version_tuple(cuda)[:2]
    return "cu%d%d" % (major, minor)


def probe_installed(paths: "Paths", python: str, env: dict, timeout: float) -> dict:
    """{"torch", "cuda", "arch_flags", "python"} from the user's Python, or {"error"}. Run in a private empty
    directory (no project's torch/ imported by accident); cached until its site dirs change."""
    from cudaswitch import cache
    from cudaswitch.verify.runner import run_framed

    entries = cache.table(paths.cache_dir, PROBES_FILE)
    key = "%s|%s|%s" % (python, env.get("PYTHONPATH", ""), cache.identities([python])[python])
    hit = entries.get(key)
    if hit is not None and cache.watched_entry(hit, ()) and isinstance(hit["payload"], dict) \
            and cache.unchanged(hit["watch"]):
        return dict(hit["payload"], cached=True)
    import tempfile  # ~7 ms (shutil, random): only when the Python is probed

    with tempfile.TemporaryDirectory(prefix="cudaswitch-torch-") as private:
        payload, error = run_framed([python, "-c", _PROBE], env, timeout, cwd=private)
    if payload is None:
        return {"error": error, "python": python}
    watch = list(payload.get("site_dirs") or []) + ([payload["torch_dir"]] if payload.get("torch_dir") else [])
    entries.pop(key, None)
    entries[key] = {"payload": payload, "watch": cache.identities(watch)}
    cache.store_table(paths.cache_dir, PROBES_FILE, entries, 32)
    return payload


def builds(installed: Optional[dict] = None) -> List[dict]:
    """Every known build, newest first; an installed torch's own arch flags replace its row's list (or add a row)."""
    # a row without evidence has no list: [] here, so every caller finds no code in it
    rows = [dict(row, arch=list(row.get("arch") or []), verified=row["evidence"] != "none")
            for row in facttables.torch_rows(host_platform())]
    own = _installed_build(installed)
    if own:
        same = [r for r in rows if (r["torch"], r["cuda"]) == (own["torch"], own["cuda"])]
        rows = [r for r in rows if r not in same] + [dict(same[0] if same else {"published": False}, **own)]
    return sorted(rows, key=lambda r: (version_tuple(r["torch"]), version_tuple(r["cuda"])), reverse=True)


def _installed_build(installed: "dict | None") -> "dict | None":
    if not installed or not installed.get("torch") or not installed.get("cuda") or not installed.get("arch_flags"):
        return None
    return {"torch": short_version(installed["torch"].split("+")[0]), "cuda": short_version(installed["cuda"]),
            "arch": list(installed["arch_flags"]), "verified": True, "source": "installed", "evidence": "installed",
            "installed": installed["torch"], "python": installed.get("python")}


def install_lines(build: dict) -> Dict[str, str]:
    """The exact lines that get this build: pip with the index URL, uv's backend, conda's pin."""
    name = variant(build["cuda"])
    pin = "torch==%s" % build["installed"].split("+")[0] if build.get("installed") else "torch==%s.*" % build["torch"]
    index = facttables.torch_table()["index"]
    if version_tuple(build["torch"]) <= version_tuple(index["conda_channel_last"]):
        conda = "conda install pytorch==%s.* pytorch-cuda=%s -c pytorch -c nvidia" % (build["torch"], build["cuda"])
    else:
        # a CUDA build pinned: without it a solver on a GPU-less build host may pick the CPU build
        conda = "conda install -c conda-forge \"pytorch=%s=cuda*\" cuda-version=%s" % (build["torch"], build["cuda"])
    return {"pip": "pip install \"%s\" --index-url %s" % (pin, index["pip"].format(variant=name)),
            "uv": "UV_TORCH_BACKEND=%s uv pip install \"%s\"" % (name, pin), "uv_backend": name, "conda": conda}


@registered("torch_build.driver", "torch_build.evidence", "torch_build.gpu_arch", layer="framework",
            shown_by=("torch",))
def assess(build: dict, driver: dict, gpus: List[dict], toolkit: Optional[dict],
           drives: "Sequence[CheckResult]" = ()) -> dict:
    """One build against the host: its checks, and fits True / False / None (cannot tell).
    `drives`: whether the driver's branch drives each GPU (the same for every build)."""
    subject = "torch %s+%s" % (build["torch"], variant(build["cuda"]))
    checks = [driver_supports(driver, build["cuda"], "torch_build.driver", subject)] + list(drives)
    base = {"torch": subject, "arch_source": build["source"], "evidence": build["evidence"]}
    if not build["verified"]:
        checks.append(check("torch_build.evidence", "info", "no evidence for %s's arch list (the build exists: %s): "
                            "cannot tell which GPUs it has code for" % (subject, build["source"]), None, **base))
        checks += [check("torch_build.gpu_arch", "error", "CUDA %s cannot emit code for sm_%s: its nvcc targets "
                         "only newer GPUs" % (build["cuda"], g["capability"].replace(".", "")), None, arch_list=[],
                         gpu=g["name"], capability=g["capability"], **base)
                   for g in gpus if not facttables.can_target(build["cuda"], g["capability"])]
    else:
        checks += [arch_in_build(gpu, build["arch"], base) for gpu in gpus]
    if not gpus:
        checks.append(check("torch_build.gpu_arch", "info", "no GPU visible: cannot compare a GPU with %s's "
                            "arch list (%s)" % (subject, " ".join(build.get("arch") or [])), "give --gpu sm_XY for the "
                            "target machine", arch_list=build.get("arch") or []))
    extension = extension_check(build, toolkit, gpus)
    unknown = not driver.get("present") or not driver.get("cuda") or not gpus or not build["verified"] \
        or checks[0]["facts"].get("cannot_tell")
    fits = False if any(c["level"] == "error" for c in checks) else None if unknown else True
    published = build.get("published", True)  # a self-built torch has no index to install it from
    return dict(build, variant=variant(build["cuda"]), fits=fits, checks=checks + [extension], published=published,
                extensions=extension["level"], extension_check=extension,
                install=install_lines(build) if published else None)


@registered("torch_build.extensions", layer="toolkit", shown_by=("torch",))
def extension_check(build: dict, toolkit: Optional[dict], gpus: Sequence[dict] = ()) -> "CheckResult":
    """cpp_extension refuses another CUDA major, warns on another minor; an untargeted GPU gets no extension code."""
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
    driver = target.complete(driver)
    drives = [target.driver_drives(driver, gpu) for gpu in gpus] if driver.get("present") else []
    assessed = [assess(b, driver, gpus, toolkit, drives) for b in builds(installed)]
    summary = {k: driver.get(k) for k in DRIVER_KEYS if k in driver}
    result: dict = {"driver": summary, "gpus": gpus, "toolkit": toolkit, "installed": installed,
              "builds": assessed, "recommended": None, "reason": None, "keep": False,
              "table": _table_note(installed)}
    result["recommended"], result["reason"] = recommend(assessed, toolkit)
    undriven = [c for c in drives if c["level"] == "error"]
    if result["recommended"] is None and undriven:
        result["reason"] = "; ".join(c["message"] for c in undriven)
    elif result["recommended"] is None and (not driver.get("present") or not driver.get("cuda") or not gpus):
        result["reason"] = _missing_facts(driver, gpus)
    elif result["recommended"] is None and not facttables.torch_rows(host_platform()):
        result["reason"] = "cannot tell: the table has no %s builds yet" % host_platform()
    own = [b for b in assessed if b.get("source") == "installed"]
    result["installed_fits"] = own[0]["fits"] if own else None
    result["keep"] = bool(own and result["recommended"] is own[0])
    return result


def _table_note(installed: "dict | None") -> dict:
    """Says so when the installed torch is newer than every release the table knows."""
    newest = facttables.newest_torch_known(host_platform())
    have = version_tuple(((installed or {}).get("torch") or "").split("+")[0])[:2]
    known = not have or not newest or have <= version_tuple(newest)[:2]
    return {"newest": newest, "note": None if known else "the table does not know torch %s.%s yet (it knows releases "
            "up to %s): its other builds cannot be judged" % (have + (newest,))}


def recommend(assessed: List[dict], toolkit: Optional[dict]) -> "tuple[Optional[dict], str]":
    """(build, why) or (None, why): an installed torch that fits (keep it); else the newest fitting build
    with evidence, preferring one the toolkit can build extensions for."""
    own = [b for b in assessed if b.get("source") == "installed" and b["fits"] is True]
    if own:
        return own[0], "the installed torch fits this host: keep it"
    fitting = [b for b in assessed if b["fits"] is True and b["published"] and b["verified"]]
    if not fitting:
        unknown = any(b["fits"] is None for b in assessed)
        return None, ("no build with evidence for its arch list fits; the builds marked unknown have none"
                      if unknown
                      else "no known build (torch %s and newer) has code for every GPU and runs on this driver"
                      % min((b["torch"] for b in assessed), key=version_tuple, default="?"))
    preferred = [b for b in fitting if toolkit and b["extensions"] != "warning"]
    if preferred:
        return preferred[0], "newest fitting build that the toolkit can build extensions for"
    return fitting[0], "newest fitting build"


def _missing_facts(driver: dict, gpus: list) -> "str | None":
    """Why the plan cannot tell, and what to give instead."""
    if driver.get("older_than"):
        return "driver %s is older than every CUDA release cudaswitch knows (CUDA %s needs %s)" % (
            driver["release"], driver["older_than"]["cuda"], driver["older_than"]["driver"])
    if not driver.get("present") or not driver.get("cuda"):
        what = "no NVIDIA driver visible" if not driver.get("present") else "the driver's CUDA version is unknown"
        return "cannot tell: %s; give --driver and --gpu for the target machine" % what
    return ("cannot tell: the driver supports CUDA %s but reports no GPU (%s); give --gpu for the target"
            % (driver["cuda"], "; ".join(driver.get("problems") or []) or "none found"))


def toolkit_of(record: Optional[dict], env: dict) -> Optional[dict]:
    """The toolkit's version, root and what its nvcc can target (None where it cannot say)."""
    if not record:
        return None
    archs = None
    if record.get("nvcc"):
        from cudaswitch.paths import Paths
        from cudaswitch.verify import nvcc

        archs = nvcc.cached_gpu_archs(Paths(env).cache_dir, record["nvcc"], env, 15.0)
    return {"version": record["version"], "root": record["root"], "gpu_archs": archs}


def gather(paths: "Paths", load_registry: Callable[[], dict], env: dict, request: Optional[str] = None,
           driver: Optional[str] = None, gpus: Optional[Sequence[str]] = None, python: Optional[str] = None,
           timeout: float = 60.0, node: Optional[str] = None) -> dict:
    """The plan for this host, or another machine's (--driver / --gpu, --node, CUDASWITCH_DRIVER/GPUS). The
    registry is read first: it makes the cache dir the tables are kept parsed in."""
    from cudaswitch.registry.resolve import resolve
    from cudaswitch.switch.lookup import current_or_none
    from cudaswitch.verify.runner import find_python

    reg = load_registry()  # a REQUEST must name a toolkit; else the active or default one, else None
    record = resolve(reg, request) if request else current_or_none(reg, env)
    node_driver, node_gpus = from_report(node) if node else (None, [])
    given_driver = parse_driver(driver) if driver else node_driver
    given_gpus = [parse_gpu(g) for g in gpus or []] or node_gpus
    toolkit = toolkit_of(record, env)
    if given_driver is None or not given_gpus:
        from cudaswitch.verify.driver import driver_facts

        host = driver_facts(paths, env)
    drv = given_driver or host
    devices = given_gpus or host["gpus"]
    chosen = find_python(env, python)
    installed = probe_installed(paths, chosen, env, timeout) if chosen else None
    return plan(drv, devices, toolkit, installed)
