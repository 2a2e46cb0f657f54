"""The checks `doctor` adds to a toolkit's: hardware, the driver's presence, which toolkit is judged,
the project's dependencies and the shell's environment."""

import os
import re

from cudaswitch.switch.standins import is_stand_in
from cudaswitch.switch.toolkitdirs import Owner, known_roots
from cudaswitch.render import counted
from cudaswitch.switch.lookup import Lookup
from cudaswitch.toolkit import short_version
from cudaswitch.verify.checks import compat_libcuda_dirs
from cudaswitch.verify.compat import check, cuda_words, looks_like_toolkit, nvcc_target, torch_home
from cudaswitch.verify.checkregistry import Ask, registered
from cudaswitch.pathsearch import which

TYPE_CHECKING = False  # typing is not imported at run time
if TYPE_CHECKING:
    from cudaswitch.verify.host import Host
    from cudaswitch.verify.checkregistry import CheckResult

WHEEL_MAJOR = re.compile(r"^nvidia-.+-cu(\d+)$")


@registered("hardware.gpus", layer="hardware", shown_by=("doctor",))
def hardware(host: "Host", ask: Ask) -> "list[CheckResult]":
    drv = host.driver
    if drv["gpus"]:
        names = ", ".join("%s (sm_%s)" % (g["name"], g["capability"].replace(".", "")) for g in drv["gpus"])
        return [check("hardware.gpus", "ok", "%d NVIDIA GPU(s): %s" % (len(drv["gpus"]), names), gpus=drv["gpus"])]
    pci = host.pci
    if pci and not drv["present"]:
        return [check("hardware.gpus", "warning", "NVIDIA GPU(s) at PCI %s but no driver is loaded" % ", ".join(pci),
                      "install the NVIDIA driver (or load its kernel module)", pci=pci)]
    if pci:
        return [check("hardware.gpus", "info", "NVIDIA device(s) at PCI %s; the driver lists no usable GPU"
                      % ", ".join(pci), None, pci=pci)]
    return [check("hardware.gpus", "info", "no NVIDIA GPU found on this host", None, pci=[])]


def no_driver(where: "str | None" = None, **facts: object) -> "CheckResult":
    """driver.present when there is none: on this host, or under a root prefix (an audited root,
    a CUDASWITCH_ROOT host): doctor and audit of the same root say the same."""
    if where and where != "/":
        return check("driver.present", "info", "no NVIDIA driver found under %s" % where,
                     "driver support of each toolkit is unknown", **facts)
    return check("driver.present", "info", "no NVIDIA driver on this host", None, **facts)


@registered("driver.present", "driver.problem", layer="driver", shown_by=("doctor", "explain", "audit"))
def driver_present(host: "Host", ask: Ask) -> "list[CheckResult]":
    drv = host.driver
    facts = {k: drv[k] for k in ("release", "release_source", "cuda", "cuda_source", "libcuda", "loaded", "wsl")}
    out = []
    if not drv["present"]:
        out.append(no_driver(host.paths.root, **facts))
    else:
        said = cuda_words(drv) if drv["cuda"] else "?"
        out.append(check("driver.present", "ok", "driver %s supports CUDA %s (%s)%s" % (
            drv["release"] or ("Windows " + drv["windows_release"] if drv.get("windows_release") else
                               "(release unknown)"), said, drv["cuda_source"] or "no libcuda",
            " under WSL %s" % drv["wsl"] if drv["wsl"] else ""), **facts))
    for problem in drv["problems"]:
        level = "info" if problem.startswith("cuInit") and not drv["gpus"] else "warning"
        out.append(check("driver.problem", level, problem, None, **facts))
    return out


@registered("toolkit.found", "toolkit.active", layer="toolkit", shown_by=("doctor",))
def toolkit_layer(host: "Host", ask: Ask) -> "list[CheckResult]":
    """Which toolkit the checks below judge: the active one, else the default."""
    registry, record = host.registry, host.record
    if not registry["records"]:
        return [check("toolkit.found", "info", "no CUDA toolkits found", "`cudaswitch install VERSION`")]
    if record is None:
        return [check("toolkit.active", "info", "%s found, none active and no default"
                      % counted(len(registry["records"]), "toolkit"),
                      "`cudaswitch use VERSION` or `cudaswitch global VERSION`")]
    how = "active in this shell" if Lookup(registry, host.env).is_active(record) else "the default"
    return [check("toolkit.active", "ok", "CUDA %s at %s is %s" % (record["version"], record["root"], how),
                  root=record["root"])]


@registered("deps.cuda_wheels", "deps.torch_owners", "deps.consistent", layer="deps", shown_by=("doctor",))
def deps(host: "Host", ask: Ask) -> "list[CheckResult]":
    """nvidia-*-cuNN wheels of another CUDA major than torch's; torch owned by both pip and conda."""
    probe = host.torch
    dists = probe.get("distributions") or []
    out = []
    torch_major = (probe.get("cuda") or "").split(".")[0]
    if torch_major:
        majors = {d["name"]: m.group(1) for d in dists for m in [WHEEL_MAJOR.match(d["name"])] if m}
        strays = ["%s %s" % (d["name"], d["version"]) for d in dists
                  if majors.get(d["name"], torch_major) != torch_major]
        if strays:
            out.append(check("deps.cuda_wheels", "warning", "NVIDIA wheels for another CUDA major than torch's "
                             "(CUDA %s): %s" % (probe["cuda"], ", ".join(strays)),
                             "pip uninstall them unless another package needs them", wheels=strays))
    torch_dists = [d for d in dists if d["name"] in ("torch", "pytorch")]
    if probe.get("conda_torch") and any((d.get("installer") or "") != "conda" for d in torch_dists):
        out.append(check("deps.torch_owners", "warning", "torch is installed by both conda (%s) and pip"
                         % ", ".join(probe["conda_torch"]), "remove one: `pip uninstall torch` or "
                         "`conda remove pytorch`", conda=probe["conda_torch"], pip=torch_dists))
    if not out and not torch_major:  # no torch CUDA build to compare the wheels with: not an "ok"
        why = probe.get("error") or ("torch %s is not a CUDA build" % probe["torch"] if probe.get("torch")
                                     else "no torch was found")
        out.append(check("deps.consistent", "info", "cannot check the NVIDIA wheels against torch's CUDA: %s"
                         % why, dists=dists))
    if not out:
        out.append(check("deps.consistent", "ok", "no conflicting CUDA wheels or torch owners", dists=dists))
    return out


@registered("env.in_use", layer="env", shown_by=("doctor",))
def shell_in_use(host: "Host", ask: Ask) -> "list[CheckResult]":
    """The facts `current` reports, stated (info: the verdict on them is env.one_toolkit's)."""
    from cudaswitch.switch.active import describe, lines

    facts = describe(host.registry, host.env)
    return [check("env.in_use", "info", "this shell uses " + "; ".join(line.strip() for line in lines(facts)),
                  None, **{k: facts[k] for k in ("version", "root", "reason", "detail", "nvcc", "cuda_home")})]


@registered("env.stale_entries", layer="env", shown_by=("doctor",))
def stale(host: "Host", ask: Ask) -> "list[CheckResult]":
    """CUDA entries on PATH / LD_LIBRARY_PATH whose directory no longer exists."""
    out = []
    for name in ("PATH", "LD_LIBRARY_PATH"):
        stale = [d for d in (host.env.get(name) or "").split(":") if d and "cuda" in d.lower() and not os.path.isdir(d)]
        if stale:
            out.append(check("env.stale_entries", "warning", "%s has CUDA entries that no longer exist: %s"
                             % (name, ", ".join(stale)), "remove them from your shell rc files", variable=name,
                             entries=stale))
    if not out:
        out.append(check("env.stale_entries", "ok", "no CUDA entry on PATH or LD_LIBRARY_PATH names a "
                         "missing directory"))
    return out


@registered("env.several_nvcc", layer="env", shown_by=("doctor",))
def nvcc_on_path(host: "Host", ask: Ask) -> "list[CheckResult]":
    entries = [d for d in (host.env.get("PATH") or "").split(":") if d and os.access(os.path.join(d, "nvcc"), os.X_OK)]
    if entries and is_stand_in(os.path.join(entries[0], "nvcc")):  # the switched toolkit has none; it hides the rest
        return [check("env.several_nvcc", "ok", "no nvcc in use: the toolkit switched to has none, and a stand-in "
                      "keeps the %d other one(s) on PATH from running in its place" % (len(entries) - 1))]
    places = {d: nvcc_target(os.path.join(d, "nvcc")) for d in dict.fromkeys(entries)}
    roots = sorted({os.path.dirname(os.path.dirname(t)) for t in places.values()})
    if len(roots) > 1:
        return [check("env.several_nvcc", "warning", "PATH has nvcc from %d toolkits: %s (the first wins)" % (
            len(roots), ", ".join("%s -> %s" % kv for kv in places.items())), _several_hint(places), nvcc=places)]
    return [check("env.several_nvcc", "ok", "one toolkit's nvcc on PATH" if places else "no nvcc on PATH",
                  nvcc=places)]


def _several_hint(places: "dict[str, str]") -> str:
    """Only a toolkit's own bin dir is one to drop from rc files: a dir whose nvcc links or wraps
    one elsewhere (the system's /usr/local/bin/nvcc) holds the host's other tools too."""
    wrappers = [d for d, target in places.items() if os.path.realpath(d) != os.path.dirname(target)]
    drop = [d for d in list(places)[1:] if d not in wrappers]
    hint = "`cudaswitch use` one toolkit" + (", and drop %s from your shell rc files" % ", ".join(drop) if drop else "")
    if wrappers:
        hint += "; keep %s on PATH (its nvcc only leads to a toolkit; the first nvcc wins)" % ", ".join(wrappers)
    return hint


@registered("env.torch_cuda_home", layer="env", shown_by=("doctor", "explain"))
def torch_cuda_home(host: "Host", ask: Ask) -> "list[CheckResult]":
    """The CUDA_HOME torch's cpp_extension would take here: is it a toolkit root? (doctor, and explain
    for "CUDA_HOME environment variable is not set": one check, one answer.)"""
    env = host.env
    home, how = torch_home(env, host.paths.host("/usr/local/cuda"))
    if home is None:
        kits = [r["version"] for r in host.registry["records"] if r.get("nvcc")]
        hint = ("`cudaswitch use %s` before building extensions" % short_version(kits[0]) if kits
                else "install a toolkit (`cudaswitch install VERSION`)")
        return [check("env.torch_cuda_home", "info", "torch would find no CUDA_HOME (no CUDA_HOME, CUDA_PATH, nvcc "
                      "on PATH or /usr/local/cuda): an extension build finds no toolkit; toolkits with nvcc found: %s"
                      % (", ".join(kits) or "none"), hint, cuda_home=None, toolkits=kits)]
    if looks_like_toolkit(home):
        return [check("env.torch_cuda_home", "ok", "torch would take CUDA_HOME=%s (%s)" % (home, how),
                      cuda_home=home, how=how)]
    nvcc = which("nvcc", env)
    target = nvcc_target(nvcc) if nvcc and "nvcc on PATH" in how else None
    wrapper = target and nvcc and target != os.path.realpath(nvcc)
    detail = "%s, a wrapper for %s" % (how, target) if wrapper else how
    fix = os.path.dirname(os.path.dirname(target)) if target else None
    return [check("env.torch_cuda_home", "warning", "torch would take CUDA_HOME=%s (%s), which is not a "
                  "toolkit root: extension builds will not find CUDA headers or libraries" % (home, detail),
                  "export CUDA_HOME=%s or `cudaswitch use`" % (fix or "<toolkit root>"), cuda_home=home, how=how,
                  nvcc_target=target)]


@registered("env.compat_libcuda", layer="env", shown_by=("doctor",))
def compat_on_loader_path(host: "Host", ask: Ask) -> "list[CheckResult]":
    """A cuda-compat libcuda on LD_LIBRARY_PATH, whatever toolkit it comes from."""
    compat = compat_libcuda_dirs(host.env)
    if not compat:
        return []
    return [check("env.compat_libcuda", "warning", "a cuda-compat libcuda is on LD_LIBRARY_PATH: %s"
                  % ", ".join(compat), "only for forward compatibility on data-center GPUs; it causes "
                  "CUDA error 803/804 elsewhere", dirs=compat)]


ENTRY_VARS = ("PATH", "LD_LIBRARY_PATH", "LD_PRELOAD")
DIR_VARS = ("CUDA_HOME", "CUDA_PATH", "CUDACXX")


@registered("env.other_toolkit_entries", layer="env", shown_by=("verify", "doctor"))
def other_toolkit_entries(host: "Host", ask: Ask) -> list:
    """Entries of PATH, LD_LIBRARY_PATH, LD_PRELOAD, CUDA_HOME/CUDA_PATH/CUDACXX of another toolkit: a stale
    LD_LIBRARY_PATH from an rc file loads another toolkit's libraries while nvcc and CUDA_HOME agree."""
    record = host.record
    if not record:
        return [check("env.other_toolkit_entries", "info", "cannot tell which entries belong to another toolkit: "
                      "no toolkit is in use")]
    own = {record["root"], record.get("real")} | set(record.get("env_bin") or ()) | set(record.get("env_lib") or ())
    owner = Owner(known_roots(host.registry), host.env)
    versions = {r[key]: r.get("version") for r in host.registry["records"] for key in ("root", "real") if r.get(key)}
    found = []
    for name, entry in _cuda_entries(host.env):
        root = owner(entry)
        if root and root not in own and os.path.realpath(root) not in own:
            found.append("%s %s (CUDA %s)" % (name, entry, versions.get(root) or versions.get(os.path.realpath(root))
                                               or "?"))
    version = record.get("version") or "?"
    if not found:
        return [check("env.other_toolkit_entries", "ok", "every CUDA entry on PATH, LD_LIBRARY_PATH, LD_PRELOAD "
                      "and in CUDA_HOME, CUDA_PATH, CUDACXX is CUDA %s's or no toolkit's" % version)]
    return [check("env.other_toolkit_entries", "warning", "CUDA %s is in use, but %s" % (version, "; ".join(found)),
                  "`cudaswitch use %s` takes them off; drop them from your shell rc files" % short_version(version),
                  entries=found)]


def _cuda_entries(env: dict) -> "list[tuple[str, str]]":
    """(variable, dir) of each entry a toolkit could own (for LD_PRELOAD and CUDACXX: the file's directory)."""
    out = []
    for name in ENTRY_VARS:
        separators = r"[: ]" if name == "LD_PRELOAD" else ":"  # ld.so takes either in LD_PRELOAD
        for entry in re.split(separators, env.get(name) or ""):
            if entry.startswith("/"):
                out.append((name, os.path.dirname(entry) if name == "LD_PRELOAD" else entry))
    for name in DIR_VARS:
        value = env.get(name) or ""
        if value.startswith("/"):
            out.append((name, os.path.dirname(value) if name == "CUDACXX" else value))
    return out
