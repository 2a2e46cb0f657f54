"""The host side of an audit: its name, driver and GPUs (verify's facts and verdicts, so `audit`,
`verify` and `doctor` give one answer), and what a multi-node job needs the same on every node:
the NCCL copies a process would load and each interface's MTU. Under a root nothing is run.
"""

import glob
import os
import socket

from cudaswitch.safeio import read_or_none
from cudaswitch.verify import loaderdirs

TYPE_CHECKING = False
if TYPE_CHECKING:
    from cudaswitch.paths import Paths

MAX_INTERFACES = 256
# Interfaces NCCL does not bootstrap over by default, and the host-local bridges of containers/VMs:
# their MTU differing between nodes breaks no job.
LOCAL_PREFIXES = ("lo", "docker", "veth", "virbr", "br-", "cni", "flannel", "cali")


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
    """verify/driver.py's facts (under a root: its /proc files, no libcuda loaded). CUDASWITCH_DRIVER
    and CUDASWITCH_GPUS describe another machine and are not read."""
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
