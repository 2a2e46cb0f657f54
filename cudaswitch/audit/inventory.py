"""`audit`: an inventory of the toolkits on this host or under a root (an unpacked image, a node's
mounted root), as the stable `audit --json` shape. Under a root nothing is run without `--exec`:
its binaries may be built for another host; nvcc's version is read from its binary instead.
"""

import os
from typing import TYPE_CHECKING, Callable, Dict, Iterable, List, Optional, Tuple, cast

from cudaswitch import __version__
from cudaswitch.audit import toolkitfiles
from cudaswitch.audit.hostfacts import (build_as_use, driver_verdict, host_driver, host_name, interfaces, nccl_copies,
                                        read_gpus)
from cudaswitch.errors import UsageError
from cudaswitch.paths import Paths
from cudaswitch.render import iec_size
from cudaswitch.toolkit import COMPONENTS, version_tuple
from cudaswitch.verify.checkregistry import registered  # a leaf: `audit merge` reads this module's constants
from cudaswitch.verify.compat import check

if TYPE_CHECKING:
    from cudaswitch.toolkit import ToolkitRecord
    from cudaswitch.verify.checkregistry import CheckResult

    Progress = Callable[[str, int, Optional[int]], None]

REPORT_KIND = "cudaswitch-audit"
REPORT_FORMAT = 1
# A node's root has no meaningful environment of its own: search it with a stock PATH.
STOCK_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
ROOT_VARS = ("PATH", "HOME", "CUDA_HOME", "CUDA_PATH", "VIRTUAL_ENV", "CONDA_PREFIX")
# What the auditing host keeps: cudaswitch's own dirs and its Lmod, which reads the root's modules.
HOST_VARS = ("CUDASWITCH_CACHE_DIR", "CUDASWITCH_CONFIG_DIR", "CUDASWITCH_DATA_DIR", "XDG_CACHE_HOME",
             "XDG_CONFIG_HOME", "XDG_DATA_HOME", "LMOD_CMD", "LMOD_DIR")


def run_audit(env: dict, root: Optional[str] = None, compile_: bool = False, allow_exec: bool = False,
              progress: "Optional[Progress]" = None, root_vars: Optional[Dict[str, str]] = None) -> dict:
    """The audit report of `root` (None: this host); progress total None is 'not known yet'.
    `root_vars`: the root's own environment (an image's PATH, CUDA_HOME, ...)."""
    progress = progress or (lambda label, done, total: None)
    if root is not None and not os.path.isdir(root):
        raise UsageError("--root %s is not a directory" % root)
    executes = root is None or allow_exec
    if compile_ and not executes:
        raise UsageError("--compile runs nvcc from the audited root", "add --exec to allow it")
    progress("discovering toolkits", 0, None)
    paths, registry, used_env = _discover(env, root, executes, root_vars)
    records = registry["records"]
    toolkits: List[dict] = []
    for done, record in enumerate(records, 1):
        toolkits.append(_toolkit_entry(record, registry, used_env, executes))
        progress("reading toolkits", done, len(records))
    driver = host_driver(paths, used_env)
    duplicate_checks = _duplicates(toolkits)
    for entry in toolkits:
        entry["driver_supported"], entry["driver_check"] = driver_verdict(driver, entry)
    if compile_:
        _compile_all(paths, records, used_env, toolkits, progress)
    return {
        "kind": REPORT_KIND, "format": REPORT_FORMAT, "cudaswitch": __version__,
        "host": host_name(paths, root), "root": paths.root, "executed": executes,
        "driver": driver if driver["present"] else None, "gpus": driver["gpus"] or read_gpus(paths),
        "system_default": next((t["root"] for t in toolkits if t["system_default"]), None),
        "toolkits": toolkits, "checks": _checks(paths, registry, toolkits, driver, executes) + duplicate_checks,
        "nccl": nccl_copies(paths, used_env), "interfaces": interfaces(paths),
    }


def _discover(env: dict, root: Optional[str], executes: bool,
              root_vars: Optional[Dict[str, str]] = None) -> Tuple[Paths, dict, dict]:
    from cudaswitch import config as configmod
    from cudaswitch.registry import discover

    if root is None:
        paths = Paths(env)
        return paths, discover.load(paths, env, refresh=True), env
    used_env = root_env(env, os.path.abspath(root), root_vars)
    paths = Paths(used_env)
    host_config = configmod.load(paths)
    # The user's registered toolkits and default describe their host, not the audited root.
    config: dict = {key: host_config[key] for key in ("source_order", "probe_timeout") if key in host_config}
    config["probe_exec"] = executes
    # discover.discover, not load: an audit of a root must not replace this host's registry cache.
    return paths, discover.discover(paths, used_env, config, {}), used_env


def root_env(env: dict, root: str, root_vars: Optional[Dict[str, str]] = None) -> Dict[str, str]:
    """The environment discovery sees for a root: a stock PATH, the caller's HOME and MODULEPATH
    dirs under the root (read by this host's Lmod), replaced by what the root's own names."""
    out = {"CUDASWITCH_ROOT": root, "PATH": STOCK_PATH, "HOME": env.get("HOME", "/root")}
    out.update({k: v for k, v in (root_vars or {}).items() if k in ROOT_VARS and v.startswith("/")})
    out.update({key: env[key] for key in HOST_VARS if env.get(key)})
    hosted = [d for d in env.get("MODULEPATH", "").split(":") if d and os.path.isdir(root + d)]
    if hosted:
        out["MODULEPATH"] = ":".join(root + d for d in hosted)
    return out


def _toolkit_entry(record: "ToolkitRecord", registry: dict, env: dict, executes: bool) -> dict:
    from cudaswitch.switch.lookup import Lookup

    entry = Lookup(registry, env).public(record)
    entry["problems"] = list(entry["problems"])  # the audit adds its own; the record stays as found
    entry["system_default"] = record["real"] == registry["system_real"]
    entry["layout"] = record.get("layout")
    entry["real"] = record["real"] if not record["real"].startswith("dangling:") else None
    nvcc_ran = _nvcc_probe(registry, record) if executes else None
    if record.get("outside_root") or record["real"].startswith("dangling:"):  # nothing of it is the image's
        entry["components"], entry["component_sources"] = dict.fromkeys(COMPONENTS), {}
    else:
        entry["components"], entry["component_sources"] = toolkitfiles.components(record, nvcc_ran)
    entry["version_json"] = {k: v for k, v in record.get("components", {}).items() if k != "cudart_soname"}
    _check_nvcc_agrees(entry, nvcc_ran)
    entry["size_bytes"] = toolkitfiles.tree_size(entry["real"] or record["root"])
    entry["compiles"] = None
    return entry


def _nvcc_probe(registry: dict, record: "ToolkitRecord") -> Optional[str]:
    """The version nvcc printed during discovery (registry's probe cache), if it ran."""
    from cudaswitch.registry import nvcc_probe as probe

    if not record.get("nvcc"):
        return None
    try:
        result = registry.get("nvcc_probes", {}).get(probe.nvcc_key(cast(str, record["nvcc"])))  # set: checked above
    except OSError:
        return None
    return (result or {}).get("version")


def _check_nvcc_agrees(entry: dict, nvcc_ran: Optional[str]) -> None:
    """Without running nvcc only the banner in its binary can disagree with the files."""
    own, files = entry["components"]["nvcc"], entry["version"]
    if nvcc_ran or not own or not files or not entry["nvcc"]:
        return
    if version_tuple(own)[:2] != version_tuple(files)[:2]:
        entry["problems"].append("nvcc's binary says %s but the toolkit's files say %s" % (own, files))
        entry["status"] = "broken"


@registered("toolkit.duplicate", layer="toolkit", shown_by=("audit", "image"))
def _duplicates(toolkits: List[dict]) -> "List[CheckResult]":
    """One check per version installed more than once: copies in one layout are waste (warning); a
    conda env beside a system install is usually meant (info)."""
    by_version: Dict[str, List[dict]] = {}
    for entry in toolkits:
        if entry["version"]:
            by_version.setdefault(entry["version"], []).append(entry)
    for entry in toolkits:
        entry["duplicates"] = [o["root"] for o in by_version.get(entry["version"], []) if o is not entry]
    return [check("toolkit.duplicate", "warning" if len({e["layout"] for e in same}) < len(same) else "info",
                  "%s is installed %d times: %s" % (version, len(same), _some(e["root"] for e in same)),
                  "%s in all" % iec_size(sum(e["size_bytes"] for e in same)),
                  version=version, roots=[e["root"] for e in same])
            for version, same in by_version.items() if len(same) > 1]


def _some(items: Iterable[str], shown: int = 4) -> str:
    """'a, b, c, d and 34 more': a check message stays readable; its facts keep them all."""
    items = list(items)
    if len(items) <= shown + 1:  # "and 1 more" would be longer than the one it hides
        return ", ".join(items)
    return "%s and %d more" % (", ".join(items[:shown]), len(items) - shown)


def _compile_all(paths: Paths, records: List[dict], env: dict, toolkits: List[dict],
                 progress: "Progress") -> None:
    """Whether each toolkit compiles in the environment `use` gives (hostfacts.build_as_use)."""
    by_root = {r["root"]: r for r in records}
    for done, entry in enumerate(toolkits, 1):
        progress("compiling a kernel", done - 1, len(toolkits))
        record = by_root.get(entry["root"])
        if entry["nvcc"] is None or record is None:
            entry["compiles"], entry["compile_error"] = False, "no nvcc"
            continue
        result = build_as_use(paths, records, env, record)
        entry["compiles"], entry["compile_error"] = result["built"], None if result["built"] else result["error"]
    progress("compiling a kernel", len(toolkits), len(toolkits))


@registered("audit.no_exec", "system.default_link", layer="toolkit", shown_by=("audit",))
def _checks(paths: Paths, registry: dict, toolkits: List[dict], driver: dict, executes: bool) -> "List[CheckResult]":
    checks = []
    if not driver["present"]:
        from cudaswitch.verify.hostchecks import no_driver

        checks.append(no_driver(paths.root, problems=driver["problems"]))
    if not executes:
        checks.append(check("audit.no_exec", "info",
                             "nothing under %s was run; nvcc versions read from the binaries" % paths.root,
                             "add --exec to run nvcc --version (binaries must suit this host)"))
    default_link = paths.host("/usr/local/cuda")
    if os.path.islink(default_link) and registry["system_real"] is None:
        checks.append(check("system.default_link", "error",
                             "/usr/local/cuda is a dangling link (-> %s)" % os.readlink(default_link),
                             "point it at an installed toolkit: cudaswitch system VERSION"))
    for entry in toolkits:
        checks.extend(_toolkit_checks(entry))
    return checks


@registered("toolkit.broken", "toolkit.incomplete", "toolkit.compiles", layer="toolkit", shown_by=("audit", "image"))
def _toolkit_checks(entry: dict) -> "List[CheckResult]":
    label = "%s at %s" % (entry["version"] or "a toolkit without a version", entry["root"])
    facts = {"root": entry["root"], "version": entry["version"]}
    out = []
    if entry["status"] == "broken":
        out.append(check("toolkit.broken", "error", "%s: %s" % (label, "; ".join(entry["problems"])), None, **facts))
    elif entry["status"] == "incomplete":
        out.append(check("toolkit.incomplete", "info", "%s: %s" % (label, "; ".join(entry["problems"])), None,
                          **facts))
    if entry["compiles"] is False and entry["nvcc"]:  # without nvcc the status check says it
        out.append(check("toolkit.compiles", "error",
                          "%s does not compile a one-kernel program: %s" % (label, entry["compile_error"]),
                          None, **facts))
    if entry["driver_check"] and entry["driver_check"]["level"] in ("warning", "error"):
        out.append(entry["driver_check"])
    return out
