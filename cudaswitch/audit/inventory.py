"""`audit`: an inventory of the toolkits on this host or under a root (an unpacked image, a node's
mounted root), as the stable `audit --json` shape. Under a root nothing is run without `--exec`:
its binaries may be built for another host; nvcc's version is read from its binary instead.

The host's side: its name, driver and GPUs (verify's facts and verdicts, so `audit`, `verify` and
`doctor` give one answer), and what a multi-node job needs the same on every node: the NCCL copies
a process would load and each interface's MTU.
"""

import glob
import os
import socket
from typing import TYPE_CHECKING, Callable, Dict, Iterable, List, Optional, Tuple, cast

from cudaswitch import __version__
from cudaswitch.audit import toolkitfiles
from cudaswitch.errors import UsageError
from cudaswitch.paths import Paths
from cudaswitch.render import iec_size
from cudaswitch.safeio import read_or_none
from cudaswitch.toolkit import COMPONENTS, version_tuple
from cudaswitch.verify.checkregistry import registered  # a leaf: `audit merge` reads this module's constants
from cudaswitch.verify import loaderdirs
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
MAX_INTERFACES = 256
# Interfaces NCCL does not bootstrap over by default, and the host-local bridges of containers/VMs:
# their MTU differing between nodes breaks no job.
LOCAL_PREFIXES = ("lo", "docker", "veth", "virbr", "br-", "cni", "flannel", "cali")


def run_audit(env: dict, root: Optional[str] = None, compile_: bool = False, allow_exec: bool = False,
              progress: "Optional[Progress]" = None, root_vars: Optional[Dict[str, str]] = None) -> dict:
    """The audit report of `root` (None: this host); `root_vars`: the root's own environment (its PATH, ...)."""
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
    """One check per version installed twice: copies in one layout are waste, a conda env beside is meant."""
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
    """Whether each toolkit compiles in the environment `use` gives (build_as_use)."""
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


def build_as_use(paths: "Paths", records: "list[dict]", env: dict, record: dict) -> dict:
    """verify/nvcc.py's cached one-kernel build of `record` in the environment `use` gives (its
    host compiler included): a toolkit the audit says compiles is one `use` gives working."""
    from cudaswitch.switch.decide import switch_plan
    from cudaswitch.verify.nvcc import cached_build

    return cached_build(paths, record, switch_plan({"records": records}, env, record, "audit", paths=paths).env,
                        run=False)


def host_name(paths: "Paths", root: "str | None") -> str:
    """This host's name; under a root its /etc/hostname, else the root's path (still unique)."""
    if paths.root == "/":
        return socket.gethostname()
    text = (read_or_none(paths.host("/etc/hostname"), 4096) or b"").decode("utf-8", "replace")
    name = (text.splitlines() or [""])[0].strip()
    return name or paths.root


def host_driver(paths: "Paths", env: dict) -> dict:
    """verify/driver.py's facts (no libcuda under a root); CUDASWITCH_DRIVER/_GPUS are another machine's."""
    from cudaswitch.settings import DRIVER_TIMEOUT
    from cudaswitch.verify.host import Host, settings
    from cudaswitch.verify.target import VARIABLES

    env = {k: v for k, v in env.items() if k not in VARIABLES}  # a report describes its own node
    return Host(paths, None, env, record=None, timeout=DRIVER_TIMEOUT, conf=settings(paths, tolerant=True)).driver


def driver_verdict(driver: dict, entry: dict) -> "tuple[bool | None, dict | None]":
    """(True | False | None, the check) from verify/compat.py's rule; None without a driver or version."""
    from cudaswitch.verify.pipeline import driver_runs_toolkit

    if not driver["present"] or not entry["short"]:
        return None, None
    verdict = driver_runs_toolkit(driver, entry["version"], entry["root"])
    verdict["facts"]["root"] = entry["root"]
    return {"ok": True, "error": False}.get(verdict["level"]), verdict


def read_gpus(paths: "Paths") -> "list[dict]":
    """GPUs the driver lists in /proc/driver/nvidia/gpus/*/information: model and bus id."""
    gpus = []
    for info in sorted(glob.glob(paths.host("/proc/driver/nvidia/gpus/*/information"))):
        fields = {}
        data = read_or_none(info, 1 << 16)
        if data is None:
            continue
        for line in data.decode("utf-8", "replace").splitlines():
            key, _, value = line.partition(":")
            fields[key.strip()] = value.strip()
        gpus.append({"model": fields.get("Model"),
                     "bus": fields.get("Bus Location") or os.path.basename(os.path.dirname(info))})
    return gpus


def nccl_copies(paths: "Paths", env: dict) -> list:
    """[{"path", "version"}] of each distinct libnccl on the loader path and in the active env's wheel."""
    dirs = loaderdirs.library_path(env, paths) + loaderdirs.system_dirs(paths)
    for var in ("VIRTUAL_ENV", "CONDA_PREFIX"):
        if env.get(var, "").startswith("/"):
            prefix = loaderdirs.env_path(paths, env[var])
            dirs += loaderdirs.files_named(os.path.join(prefix, "lib"), "python3*/site-packages/nvidia/nccl/lib")
    out, seen = [], set()
    for directory in dirs:
        for path in loaderdirs.files_named(directory, "libnccl.so*"):
            real = os.path.realpath(path)
            if real not in seen and os.path.isfile(real):
                seen.add(real)
                out.append({"path": paths.unhost(path), "version": loaderdirs.file_version(path, "libnccl")})
    return out


def interfaces(paths: "Paths") -> list:
    """[{"name", "mtu", "state"}] from /sys/class/net; [] where it cannot be read (an image)."""
    net = paths.host("/sys/class/net")
    try:
        names = sorted(os.listdir(net))[:MAX_INTERFACES]
    except OSError:
        return []
    return [{"name": name, "mtu": _number(os.path.join(net, name, "mtu")),
             "state": _text(os.path.join(net, name, "operstate"))} for name in names]


def job_mtus(found: list) -> tuple:
    """((name, mtu), ...) of the interfaces that are up and may carry a job's traffic."""
    return tuple(sorted((i["name"], i["mtu"]) for i in found if isinstance(i, dict) and i.get("state") == "up"
                        and isinstance(i.get("name"), str) and not i["name"].startswith(LOCAL_PREFIXES)))


def _text(path: str) -> "str | None":
    text = (read_or_none(path, 256) or b"").decode("utf-8", "replace").strip()
    return text if text and text.isprintable() else None


def _number(path: str) -> "int | None":
    text = _text(path)
    return int(text) if text and text.isdigit() and len(text) < 8 else None
