"""Verdict rules: facts about the host in, checks out.

A check is {"id", "level" (ok|info|warning|error), "message", "hint", "facts"}. Rules never run
anything; the callers (report.py, doctor.py, explain.py, quick.py) gather the facts.
"""

import os
import re

from cudaswitch.toolkit import short_version, version_tuple
from cudaswitch.verify import facts as table

LEVELS = ("ok", "info", "warning", "error")


def check(check_id, level, message, hint=None, **facts):
    return {"id": check_id, "level": level, "message": message, "hint": hint, "facts": facts}


def worst(checks):
    return max((c["level"] for c in checks), key=LEVELS.index, default="ok")


def nvcc_runs(record, result):
    """`nvcc --version` runs and says the version the registry recorded."""
    if not record.get("nvcc"):
        return check("nvcc.runs", "warning", "%s has no nvcc: it can run programs but not build CUDA code"
                     % record["root"], "use a toolkit with nvcc to build extensions", nvcc=None)
    if "error" in result:
        return check("nvcc.runs", "error", result["error"], "reinstall the toolkit or fix its permissions",
                     nvcc=record["nvcc"])
    if short_version(result["version"]) != short_version(record["version"]):
        return check("nvcc.runs", "warning", "nvcc reports %s but the toolkit says %s"
                     % (result["version"], record["version"]), "a mixed install: reinstall the toolkit",
                     nvcc=record["nvcc"], nvcc_version=result["version"])
    return check("nvcc.runs", "ok", "nvcc %s runs" % result["version"], nvcc=record["nvcc"],
                 nvcc_version=result["version"])


def driver_supports(driver, cuda, check_id, subject):
    """Can this driver run code built with CUDA `cuda` ('12.4')? Minor-version compat included."""
    facts = {"driver_cuda": driver.get("cuda"), "driver_release": driver.get("release"), "cuda": cuda}
    if not driver.get("present"):
        return check(check_id, "info", "no NVIDIA driver on this host: %s can build code but not run it"
                     % subject, "install the NVIDIA driver on a machine with a GPU to run", **facts)
    if not driver.get("cuda"):
        return check(check_id, "info", "driver %s found, but the CUDA version it supports is unknown"
                     % driver.get("release"), None, **facts)
    have, want = version_tuple(driver["cuda"])[:2], version_tuple(cuda)[:2]
    if have >= want:
        return check(check_id, "ok", "driver supports CUDA %s, enough for %s" % (driver["cuda"], subject), **facts)
    return _older_driver(driver, have, want, check_id, subject, facts)


def _older_driver(driver, have, want, check_id, subject, facts):
    minimum = table.driver_minimum("%d.%d" % want)
    facts["needs_driver"] = minimum["driver"] if minimum else None
    upgrade = ("update the NVIDIA driver to %s or newer" % facts["needs_driver"] if minimum
               else "update the NVIDIA driver")
    if _minor_version_compatible(driver, have, want):
        caveat = table.load()["minor_compat_caveat"]["text"]
        facts.update(minor_version_compatibility=True, source="NV-mvc")
        return check(check_id, "ok", "driver supports CUDA %s; %s (CUDA %d.%d) runs through minor-version "
                     "compatibility, but %s" % (driver["cuda"], subject, want[0], want[1], caveat),
                     upgrade + " for full support", **facts)
    facts["source"] = "NV-rn"
    facts["line"] = "driver supports CUDA %s only; CUDA %d.%d needs a newer one" % (driver["cuda"], want[0], want[1])
    return check(check_id, "error", "driver supports CUDA %s only, older than %s needs (CUDA %d.%d)"
                 % (driver["cuda"], subject, want[0], want[1]), upgrade + ", or use an older CUDA " +
                 "%d.x" % have[0], **facts)


def _minor_version_compatible(driver, have, want):
    """Same major, a major with minor-version compatibility (none before 11.1), and a driver release
    at or above its floor (an unknown release is given the benefit: its CUDA major already matches)."""
    mvc = table.minor_compat(want[0])
    if have[0] != want[0] or not mvc or want[1] < mvc["first_minor"]:
        return False
    release = driver.get("release")
    return not release or table.release_tuple(release) >= table.release_tuple(mvc["driver"])


def gcc_verdict(ceiling, ceiling_from, compiler, version, cuda, chosen=None, ignored=None):
    """Host gcc above the toolkit's ceiling -> nvcc refuses with `#error -- unsupported GNU version!`,
    so every compile fails: an error. `chosen`: the compilers the switch picked (NVCC_CCBIN...);
    `ignored`: an NVCC_CCBIN this nvcc does not read (11.x), which the user may think applies."""
    facts = {"gcc": version, "compiler": compiler, "ceiling": ceiling, "ceiling_from": ceiling_from, "cuda": cuda,
             "chosen": chosen or {}, "ignored_nvcc_ccbin": ignored}
    if not compiler:
        return check("gcc.supported", "warning", "no host gcc found: nvcc needs one to compile",
                     "install gcc (and g++) or set NVCC_CCBIN", **facts)
    if not version:
        return check("gcc.supported", "info", "cannot check the host compiler %s: it did not report a version"
                     % compiler, "run `%s --version` to see why" % compiler, **facts)
    if ceiling is None:
        return check("gcc.supported", "info", "cannot check host gcc %s against CUDA %s: its gcc ceiling is "
                     "not known" % (version, cuda), None, **facts)
    major = version_tuple(version)[0]
    if major > ceiling and ignored:
        return check("gcc.supported", "error", "host gcc %s is newer than CUDA %s accepts (gcc %d at most), and this "
                     "nvcc ignores NVCC_CCBIN=%s" % (version, cuda, ceiling, ignored),
                     "export NVCC_PREPEND_FLAGS='-ccbin %s' (nvcc %s reads that)" % (ignored, cuda), **facts)
    if major > ceiling:
        return check("gcc.supported", "error", "host gcc %s is newer than CUDA %s accepts (gcc %d at most): nvcc "
                     "stops with \"#error -- unsupported GNU version!\"" % (version, cuda, ceiling),
                     "install gcc-%d and g++-%d (or older; `cudaswitch use` then points nvcc at them), or use a "
                     "newer CUDA" % (ceiling, ceiling), **facts)
    if chosen:
        return check("gcc.supported", "ok", "host compiler %s (gcc %s), chosen because the default gcc is above "
                     "CUDA %s's limit (gcc %d)" % (os.path.basename(compiler), version, cuda, ceiling), **facts)
    return check("gcc.supported", "ok", "host gcc %s is within CUDA %s's limit (gcc %d)" % (version, cuda, ceiling),
                 **facts)


def torch_home(env, fallback="/usr/local/cuda"):
    """(CUDA_HOME torch's cpp_extension would take, how): $CUDA_HOME, $CUDA_PATH, which nvcc's parent
    (symlinks NOT resolved), then /usr/local/cuda (`fallback`: that path under a root prefix)."""
    from cudaswitch.verify.runner import which

    for name in ("CUDA_HOME", "CUDA_PATH"):
        if env.get(name):
            return env[name], name
    nvcc = which("nvcc", env)
    if nvcc:
        return os.path.dirname(os.path.dirname(nvcc)), "the parent of the first nvcc on PATH, %s" % nvcc
    if os.path.exists(fallback):
        return fallback, "the /usr/local/cuda fallback"
    return None, "nothing"


def looks_like_toolkit(root):
    return any(os.path.exists(os.path.join(root, p)) for p in
               ("version.json", "version.txt", "include/cuda_runtime.h", "include/cuda.h"))


def nvcc_target(path):
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
