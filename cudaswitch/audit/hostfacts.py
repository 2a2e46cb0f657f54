"""The host side of an audit: its name, the NVIDIA driver and GPUs, and whether that driver
supports a toolkit. Under a root all is read from files there; nothing is run.
The driver facts and the support verdict are verify's (verify/driver.py, verify/compat.py), so
`audit`, `verify` and `doctor` give one answer.
"""

import glob
import os
import socket

from cudaswitch.safeio import read_or_none

TYPE_CHECKING = False
if TYPE_CHECKING:
    from cudaswitch.paths import Paths


def switched_env(paths: "Paths", records: "list[dict]", env: dict, record: dict) -> dict:
    """The environment a build of `record` runs in: the switch plan's, as `use` would give it (the
    host compiler it picks included), so a toolkit audit says compiles is one `use` gives working.
    `records`: every toolkit the audit found, whose entries the switch takes off the paths."""
    from cudaswitch.switch.decide import switch_plan

    return switch_plan({"records": records}, env, record, "audit", paths=paths).env


def host_name(paths: "Paths", root: "str | None") -> str:
    """This host's name; under a root (`--root`, or a CUDASWITCH_ROOT host such as a node's
    mounted root) its /etc/hostname, else the root's path (still unique)."""
    if paths.root == "/":
        return socket.gethostname()
    text = (read_or_none(paths.host("/etc/hostname"), 4096) or b"").decode("utf-8", "replace")
    name = (text.splitlines() or [""])[0].strip()
    return name or paths.root


def host_driver(paths: "Paths", env: dict) -> dict:
    """verify/driver.py's facts. Under a root prefix it reads /proc/driver/nvidia/version
    there and loads no libcuda (an image's driver is not this kernel's); the audit's env for a root
    carries no CUDASWITCH_LIBCUDA, so nothing is run. CUDASWITCH_DRIVER / CUDASWITCH_GPUS (a plan for
another machine) are not this node's facts and are not read."""
    from cudaswitch.settings import DRIVER_TIMEOUT
    from cudaswitch.verify.host import Host, settings
    from cudaswitch.verify.target import VARIABLES

    env = {k: v for k, v in env.items() if k not in VARIABLES}  # a report describes its own node
    return Host(paths, None, env, record=None, timeout=DRIVER_TIMEOUT, conf=settings(paths, tolerant=True)).driver


def driver_verdict(driver: dict, entry: dict) -> "tuple[bool | None, dict | None]":
    """(True | False | None, the check) from verify/compat.py's rule, minor-version compat included;
    None when there is no driver or no version to judge."""
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
