"""The host side of an audit: its name, the NVIDIA driver and GPUs, and whether that driver
supports a toolkit. All read from files (through the root prefix); nothing is run.

Stop-gap until verify/driver.py and verify/compat.py (issue 7) land: the driver release comes from
/proc/driver/nvidia/version only (no libcuda query), and support is decided from the rows of
data/compat.toml (driver minimums, minor-version compatibility). Audit should call issue 7's API
then, so both commands give one verdict.
"""

import glob
import os
import socket
import sys

from cudaswitch.toolkit import version_tuple

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

COMPAT = os.path.join(os.path.dirname(__file__), "data", "compat.toml")


def host_name(paths, root):
    """This host's name; for a root its /etc/hostname, else the root's path (still unique)."""
    if root is None:
        return socket.gethostname()
    try:
        with open(paths.host("/etc/hostname"), encoding="utf-8", errors="replace") as handle:
            name = handle.readline().strip()
    except OSError:
        name = ""
    return name or paths.root


def read_driver(paths):
    """{"release": "580.65.06", ...} from the first line of /proc/driver/nvidia/version, or None.
    The line reads `NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.65.06  <date>`."""
    try:
        with open(paths.host("/proc/driver/nvidia/version"), encoding="utf-8", errors="replace") as handle:
            first = handle.readline().strip()
    except OSError:
        return None
    release = next((w for w in first.split() if "." in w and w.replace(".", "").isdigit()), None)
    return {"release": release, "source": "/proc/driver/nvidia/version", "line": first}


def read_gpus(paths):
    """GPUs the driver lists in /proc/driver/nvidia/gpus/*/information: model and bus id."""
    gpus = []
    for info in sorted(glob.glob(paths.host("/proc/driver/nvidia/gpus/*/information"))):
        fields = {}
        try:
            with open(info, encoding="utf-8", errors="replace") as handle:
                for line in handle:
                    key, _, value = line.partition(":")
                    fields[key.strip()] = value.strip()
        except OSError:
            continue
        gpus.append({"model": fields.get("Model"),
                     "bus": fields.get("Bus Location") or os.path.basename(os.path.dirname(info))})
    return gpus


def _compat():
    try:
        with open(COMPAT, "rb") as handle:
            return tomllib.load(handle)
    except (OSError, tomllib.TOMLDecodeError):
        return {}


def driver_support(driver, version, compat=None):
    """(True | False | None, why): does this driver run toolkit `version`? None when unknown."""
    if not driver or not driver.get("release") or not version_tuple(version):
        return None, "no driver release known" if not driver else "no toolkit version known"
    compat = _compat() if compat is None else compat
    release, short = version_tuple(driver["release"]), version_tuple(version)[:2]
    minimum = next((r for r in compat.get("driver_minimum", []) if version_tuple(r["cuda"]) == short), None)
    if minimum and release >= version_tuple(minimum["driver"]):
        return True, "driver %s >= %s, the minimum for CUDA %s" % (driver["release"], minimum["driver"], minimum["cuda"])
    minor = next((r for r in compat.get("minor_compat", []) if r["major"] == short[0]), None)
    if minor and short[1] >= minor["first_minor"] and release >= version_tuple(minor["driver"]):
        caveat = compat.get("minor_compat_caveat", {}).get("text", "")
        return True, "minor-version compatibility: driver %s >= %s for CUDA %d.x (%s)" % (
            driver["release"], minor["driver"], short[0], caveat)
    if minimum is None and minor is None:
        return None, "no driver facts for CUDA %s in compat.toml" % ".".join(map(str, short))
    if minor and short[1] >= minor["first_minor"]:
        return False, "driver %s is older than %s, the minor-version-compatibility floor for CUDA %d.x%s" % (
            driver["release"], minor["driver"], short[0], " (%s is CUDA %s's own minimum)" % (minimum["driver"], minimum["cuda"]) if minimum else "")
    return False, "driver %s is older than %s, the minimum for CUDA %s" % (driver["release"], minimum["driver"], minimum["cuda"])
