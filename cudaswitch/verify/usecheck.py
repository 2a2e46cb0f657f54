"""The checks behind `use`'s one-line verdict (the slow path of quick.verdict_for_use)."""

import os

from cudaswitch.toolkit import short_version
from cudaswitch.verify import driver
from cudaswitch.verify.checks import cudnn_copies, three_toolkits, torch_checks
from cudaswitch.verify.compat import LEVELS, driver_supports, worst
from cudaswitch.verify.report import gcc_check, status_check
from cudaswitch.verify.runner import find_python, probe_torch


USE_TIMEOUT = 15.0  # a cache miss may import torch (seconds when cold); a hung Python is cut here


def use_verdict(paths, record, new_env, timeout):
    """(level, line, paths to watch): the verdict and what would make it stale. timeout None: the
    configured torch_timeout, capped at USE_TIMEOUT unless config.toml sets one explicitly."""
    conf = _settings(paths)
    timeout = timeout or conf.get("torch_timeout_set") or USE_TIMEOUT
    drv = driver.driver_facts(paths, new_env, timeout=timeout)
    checks = [status_check(record)]
    if record.get("version") and record["status"] != "broken":
        cuda = short_version(record["version"])
        checks.append(driver_supports(drv, cuda, "driver.supports_toolkit", "CUDA %s" % cuda))
        checks.append(gcc_check(record, new_env, conf["probe_timeout"]))
    python = find_python(new_env, None, conf.get("python"))
    probe = probe_torch(python, new_env, timeout) if python else {"error": "no python3 on PATH"}
    if "No module named 'torch'" not in (probe.get("torch_error") or ""):  # no torch: nothing to say
        checks += torch_checks(probe, short_version(record.get("version") or "") or None, drv)
        checks += [three_toolkits(new_env, probe), cudnn_copies(new_env, probe)]
    level, line = summarize(record, checks, drv, probe)
    return level, line, _watch(probe, python)


def summarize(record, checks, drv, probe):
    level = worst(checks)
    head = "CUDA %s" % (record.get("version") or "?")
    bad = sorted((c for c in checks if c["level"] in ("warning", "error")), key=lambda c: -LEVELS.index(c["level"]))
    if bad:
        more = " (+%d more)" % (len(bad) - 1) if len(bad) > 1 else ""
        return level, "%s: %s: %s%s; `cudaswitch verify` for the report" % (head, level, bad[0]["message"], more)
    parts = ["driver CUDA %s" % drv["cuda"] if drv.get("cuda") else "no NVIDIA driver here"]
    if probe.get("torch"):
        parts.append("torch %s" % probe["torch"])
    return level, "%s: ok (%s)" % (head, ", ".join(parts))


def _watch(probe, python):
    """sys.path dirs and torch's dir: installing or removing a package changes their mtime."""
    watch = list(probe.get("site_dirs") or [])
    if probe.get("torch_dir"):
        watch.append(probe["torch_dir"])
    if probe.get("python"):
        watch.append(os.path.realpath(probe["python"]))
    return watch


def _settings(paths):
    from cudaswitch.errors import CudaSwitchError
    from cudaswitch.verify.report import settings

    from cudaswitch import config

    try:
        conf = settings(paths)
        conf["torch_timeout_set"] = config.load(paths).get("torch_timeout")  # None: not in the file
    except CudaSwitchError:  # a broken config.toml must not break `use`; `list` reports it
        return {"probe_timeout": 5.0, "python": None}
    return conf
