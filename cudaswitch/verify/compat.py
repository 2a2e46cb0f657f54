"""Verdict rules: facts in, checks ({"id", "level" (ok|info|warning|error), "message", "hint",
"facts"}) out. Rules never run anything; the registered check functions gather the facts."""

import os
import re

from cudaswitch.toolkit import version_tuple
from cudaswitch.verify import facttables

TYPE_CHECKING = False
if TYPE_CHECKING:
    from cudaswitch.verify.checkregistry import CheckResult

LEVELS = ("ok", "info", "warning", "error")


def check(check_id: str, level: str, message: str, hint: "str | None" = None, **facts: object) -> "CheckResult":
    return {"id": check_id, "level": level, "message": message, "hint": hint, "facts": facts}


def worst(checks: "list[CheckResult]") -> str:
    return max((c["level"] for c in checks), key=LEVELS.index, default="ok")


def driver_supports(driver: dict, cuda: str, check_id: str, subject: str, builds: bool = True) -> "CheckResult":
    """Can this driver run code built with CUDA `cuda` ('12.4')? Minor-version compat included.
    builds: False for a toolkit that cannot compile either (no driver must not read as "it builds")."""
    facts = {"driver_cuda": driver.get("cuda"), "driver_release": driver.get("release"), "cuda": cuda}
    if not driver.get("present"):
        can = "can build code but not run it" if builds else "can neither build code (it is incomplete) nor run it"
        return check(check_id, "info", "no NVIDIA driver on this host: %s %s" % (subject, can),
                     "install the NVIDIA driver on a machine with a GPU to run", **facts)
    oldest = driver.get("older_than")
    if not driver.get("cuda") and oldest:
        return check(check_id, "error", "driver %s is older than every CUDA release cudaswitch knows (CUDA %s needs "
                     "%s): it cannot run %s" % (driver.get("release"), oldest["cuda"], oldest["driver"], subject),
                     "update the NVIDIA driver", **facts)
    if not driver.get("cuda"):
        return check(check_id, "info", "driver %s found, but the CUDA version it supports is unknown"
                     % driver.get("release"), None, **facts)
    have, want = version_tuple(driver["cuda"])[:2], version_tuple(cuda)[:2]
    if have >= want:
        return check(check_id, "ok", "driver supports CUDA %s, enough for %s" % (cuda_words(driver), subject),
                     **facts)
    if driver.get("cuda_at_least") and not _minor_version_compatible(driver, have, want):
        return check(check_id, "info", "cannot tell whether driver %s runs %s: it supports CUDA %s"
                     % (driver.get("release"), subject, cuda_words(driver)), None, cannot_tell=True, **facts)
    return _older_driver(driver, have, want, check_id, subject, facts)


def cuda_words(driver: dict) -> str:
    """The CUDA version a driver supports as a user should read it: a driver on a branch newer than
    the table supports that CUDA or a newer one, never exactly an older one."""
    if driver.get("cuda_at_least"):
        return "at least %s (newer than the facts cudaswitch has)" % driver["cuda"]
    return str(driver.get("cuda"))


def _older_driver(driver: dict, have: "tuple[int, ...]", want: "tuple[int, ...]", check_id: str, subject: str,
                  facts: dict) -> "CheckResult":
    # Under WSL the driver is Windows': Linux release minimums name no driver one could install there.
    minimum = None if driver.get("wsl") else facttables.driver_minimum("%d.%d" % want)
    facts["needs_driver"] = minimum["driver"] if minimum else None
    upgrade = ("update the NVIDIA driver to %s or newer" % facts["needs_driver"] if minimum else
               "update the NVIDIA driver on Windows (WSL uses it)" if driver.get("wsl") else "update the NVIDIA driver")
    if _minor_version_compatible(driver, have, want):
        caveat = facttables.load()["minor_compat_caveat"]["text"]
        facts.update(minor_version_compatibility=True, source="NV-mvc")
        return check(check_id, "ok", "driver supports CUDA %s; %s (CUDA %d.%d) runs through minor-version "
                     "compatibility, but %s" % (cuda_words(driver), subject, want[0], want[1], caveat),
                     upgrade + " for full support", **facts)
    facts["source"] = "NV-rn"
    facts["line"] = "driver supports CUDA %s only; CUDA %d.%d needs a newer one" % (driver["cuda"], want[0], want[1])
    return check(check_id, "error", "driver supports CUDA %s only, older than %s needs (CUDA %d.%d)"
                 % (driver["cuda"], subject, want[0], want[1]), upgrade + ", or use an older CUDA " +
                 "%d.x" % have[0], **facts)


def _minor_version_compatible(driver: dict, have: "tuple[int, ...]", want: "tuple[int, ...]") -> bool:
    """Same major, a major with minor-version compatibility (none before 11.1), and a driver release
    at or above its floor (an unknown release is given the benefit: its CUDA major already matches)."""
    mvc = facttables.minor_compat(want[0])
    if have[0] != want[0] or not mvc or want[1] < mvc["first_minor"]:
        return False
    release = driver.get("release")
    return not release or facttables.release_tuple(release) >= facttables.release_tuple(mvc["driver"])


def torch_home(env: dict, fallback: str = "/usr/local/cuda") -> tuple:
    """(CUDA_HOME torch's cpp_extension would take, how): $CUDA_HOME, $CUDA_PATH, which nvcc's parent
    (symlinks NOT resolved), then /usr/local/cuda (`fallback`: that path under a root prefix)."""
    from cudaswitch.pathsearch import which

    for name in ("CUDA_HOME", "CUDA_PATH"):
        if env.get(name):
            return env[name], name
    nvcc = which("nvcc", env)
    if nvcc:
        return os.path.dirname(os.path.dirname(nvcc)), "the parent of the first nvcc on PATH, %s" % nvcc
    return (fallback, "the /usr/local/cuda fallback") if os.path.exists(fallback) else (None, "nothing")


def looks_like_toolkit(root: str) -> bool:
    return any(os.path.exists(os.path.join(root, p)) for p in
               ("version.json", "version.txt", "include/cuda_runtime.h", "include/cuda.h"))


def nvcc_target(path: str) -> str:
    """Where an nvcc on PATH really leads: a symlink's target, or the nvcc a small wrapper script execs."""
    real = os.path.realpath(path)
    from cudaswitch.safeio import read_or_none

    head = read_or_none(real, 4096)
    if head is None:
        return real
    if head.startswith(b"#!"):
        found = re.findall(rb"(/[^\s\"']+/nvcc)\b", head)
        if found:
            return os.path.realpath(found[0].decode("utf-8", "replace"))
    return real
