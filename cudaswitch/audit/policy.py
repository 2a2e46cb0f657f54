"""`audit --expect POLICY.toml`: a site's policy for a node, checked on this host; each requirement
is one registered check, and the first unmet one is the node's one-line drain reason.

    toolkits = ["12.4", "module:13.1"]   # each resolves and compiles a one-kernel program
    driver = "550.54.15"                 # a release, or the CUDA version the driver supports ("12.4")
    gpus = 8                             # at least this many GPUs
    nccl = "2.21"                        # some libnccl on the loader path or in a toolkit, this or newer
"""

import re

from cudaswitch.errors import UsageError
from cudaswitch.toolkit import version_tuple
from cudaswitch.verify.checkregistry import registered
from cudaswitch.verify.compat import check

TYPE_CHECKING = False
if TYPE_CHECKING:
    from cudaswitch.paths import Paths
    from cudaswitch.verify.checkregistry import CheckResult

MAX_BYTES = 64 * 1024
VERSION = re.compile(r"\d+(\.\d+){0,3}")
RELEASE_FROM = 100  # a driver minimum whose major is this or more is a release (550.54), else a CUDA version


def load(path: str) -> dict:
    """The policy's keys, checked; a one-line UsageError (exit 2) for anything else."""
    from cudaswitch.safeio import Unreadable, parse_toml, read_regular

    try:
        data = parse_toml(read_regular(path, MAX_BYTES + 1))
    except (OSError, Unreadable) as exc:
        raise UsageError("--expect %s: cannot read a TOML policy: %s" % (path, exc)) from None
    unknown = sorted(set(data) - {"toolkits", "driver", "gpus", "nccl"})
    bad = unknown[:1] or [key for key, ok in (
        ("toolkits", _strings(data.get("toolkits", []))), ("gpus", _count(data.get("gpus", 0))),
        ("driver", VERSION.fullmatch(str(data.get("driver", "0")))),
        ("nccl", VERSION.fullmatch(str(data.get("nccl", "0"))))) if not ok or key in data and data[key] == ""]
    if bad or not data:
        raise UsageError("--expect %s: %s" % (path, "unknown or malformed key %r" % bad[0] if bad else "empty"),
                         'keys: toolkits = ["12.4"], driver = "550.54.15", gpus = 8, nccl = "2.21"')
    return data


def _strings(value: object) -> bool:
    return isinstance(value, list) and all(isinstance(item, str) and item for item in value)


def _count(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def check_node(env: dict, policy: dict) -> "list[CheckResult]":
    """Every requirement's check, in the policy's order of cost: driver, GPUs, NCCL, toolkits."""
    from cudaswitch.audit.inventory import host_driver, read_gpus
    from cudaswitch.paths import Paths

    paths = Paths(env)
    driver = host_driver(paths, env)
    out = []
    if "driver" in policy:
        out.append(driver_rule(driver, str(policy["driver"])))
    if "gpus" in policy:
        out.append(gpu_rule(driver["gpus"] or read_gpus(paths), policy["gpus"]))
    if "nccl" in policy:
        out.append(nccl_rule(paths, env, str(policy["nccl"])))
    return out + toolkit_rules(paths, env, policy.get("toolkits", []))


@registered("policy.driver", layer="driver", shown_by=("audit",))
def driver_rule(driver: dict, minimum: str) -> "CheckResult":
    is_release = version_tuple(minimum)[0] >= RELEASE_FROM
    have = driver.get("release" if is_release else "cuda")
    need = "driver %s%s" % ("" if is_release else "CUDA ", minimum)
    if not driver.get("present") or have is None:
        what = "no NVIDIA driver" if not driver.get("present") else "driver %s unknown" % (
            "release" if is_release else "CUDA version")
        return check("policy.driver", "error", "%s (policy: %s+)" % (what, need), None, need=minimum, have=None)
    level = "ok" if version_tuple(have) >= version_tuple(minimum) else "error"
    return check("policy.driver", level, "driver %s%s (policy: %s+)" % ("" if is_release else "CUDA ", have, need),
                 None, need=minimum, have=have)


@registered("policy.gpus", layer="hardware", shown_by=("audit",))
def gpu_rule(gpus: list, minimum: int) -> "CheckResult":
    level = "ok" if len(gpus) >= minimum else "error"
    return check("policy.gpus", level, "%d GPUs (policy: %d+)" % (len(gpus), minimum), None,
                 need=minimum, have=len(gpus))


@registered("policy.nccl", layer="deps", shown_by=("audit",))
def nccl_rule(paths: "Paths", env: dict, minimum: str) -> "CheckResult":
    """The newest libnccl on LD_LIBRARY_PATH, in the loader's system dirs or in a toolkit's libs."""
    from cudaswitch.registry import discover
    from cudaswitch.audit.toolkitfiles import search_dirs
    from cudaswitch.verify import loaderdirs

    dirs = loaderdirs.library_path(env, paths) + loaderdirs.system_dirs(paths)
    for record in discover.load(paths, env)["records"]:
        dirs += search_dirs(record)[1]
    found = {path: loaderdirs.file_version(path, "libnccl")
             for directory in dirs for path in loaderdirs.files_named(directory, "libnccl.so*")}
    best = max((v for v in found.values() if v), key=version_tuple, default=None)
    level = "ok" if best and version_tuple(best) >= version_tuple(minimum) else "error"
    return check("policy.nccl", level, "NCCL %s (policy: %s+)" % (best or "not found", minimum), None,
                 need=minimum, have=best, where=sorted(p for p, v in found.items() if v == best))


@registered("policy.toolkit", layer="toolkit", shown_by=("audit",))
def toolkit_rules(paths: "Paths", env: dict, requests: "list[str]") -> "list[CheckResult]":
    """Each request resolves as `use` resolves it and compiles in the environment `use` gives."""
    from cudaswitch.audit.inventory import build_as_use
    from cudaswitch.errors import CudaSwitchError
    from cudaswitch.registry import discover
    from cudaswitch.registry.resolve import resolve

    registry = discover.load(paths, env) if requests else {"records": []}
    out = []
    for request in requests:
        try:
            record = resolve(registry, request)
        except CudaSwitchError as exc:
            out.append(check("policy.toolkit", "error", "toolkit %s: %s" % (request, exc.message), None,
                             request=request, root=None))
            continue
        built = build_as_use(paths, registry["records"], env, record)
        what = "compiles" if built["built"] else "does not compile: %s" % str(built["error"]).splitlines()[0][:80]
        out.append(check("policy.toolkit", "ok" if built["built"] else "error", "toolkit %s (%s) %s"
                         % (request, record["root"], what), None, request=request, root=record["root"]))
    return out
