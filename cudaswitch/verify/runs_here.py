"""Does this host's driver run each toolkit? (`list`'s DRIVER column, a partial request's preference),
by the check verify runs. Answers are sealed in one file keyed by the driver's identity, the
toolkits and cudaswitch's release, so a warm `list` starts no process and imports only os and marshal."""

import os

from cudaswitch.verify.identity import driver_identity, path_identity

TYPE_CHECKING = False
if TYPE_CHECKING:
    from cudaswitch.paths import Paths
    from cudaswitch.toolkit import AnyRecord, Env

CACHE_FILE = "runs_here.marshal"
FORMAT = 1
# What the column says: ok, through minor-version compatibility, through the toolkit's own
# compat/ libcuda (forward compatibility, data-center GPUs), not at all, or cannot tell.
WORDS = ("ok", "minor-compat", "compat", "no", "cannot tell")
RUNS = WORDS[:3]  # what `list --runnable` keeps
NO_DRIVER = "no NVIDIA driver readable on this host"


def driver_unknown(found: "dict[str, dict]") -> bool:
    """No driver was readable: `list --runnable` then cannot tell what runs, which is not "none runs"."""
    return bool(found) and all(v["why"] == NO_DRIVER for v in found.values())


def verdicts(paths: "Paths", env: "Env", records: "list[dict]") -> "dict[str, dict]":
    """{root: {"runs": one of WORDS, "why": text, "json": the `"runs_here": {...}` JSON fragment}}."""
    from cudaswitch import cache

    key = repr((FORMAT, driver_identity(paths, env),
                tuple((r["root"], r.get("version"), r.get("status"), path_identity(os.path.join(r["root"], "compat")))
                      for r in records)))
    cached = cache.load(paths.cache_dir, CACHE_FILE)
    if isinstance(cached, dict) and cached.get("key") == key and isinstance(cached.get("verdicts"), dict):
        return cached["verdicts"]
    found = _compute(paths, env, records)
    cache.store(paths.cache_dir, CACHE_FILE, {"key": key, "verdicts": found})
    return found


def _compute(paths: "Paths", env: "Env", records: "list[dict]") -> dict:
    import json

    from cudaswitch.verify.driver import driver_facts

    driver = driver_facts(paths, env)
    out = {}
    for record in records:
        runs, why = verdict(driver, record)
        out[record["root"]] = {"runs": runs, "why": why,
                               "json": '"runs_here": %s' % json.dumps({"runs": runs, "why": why})}
    return out


def verdict(driver: dict, record: "AnyRecord") -> "tuple[str, str]":
    """(word, why) for one toolkit: verify's driver.supports_toolkit, then its forward compatibility."""
    from cudaswitch.verify.compat import cuda_words
    from cudaswitch.verify.pipeline import driver_runs_toolkit

    version = record.get("version")
    if not version:
        return "cannot tell", "the toolkit's CUDA version is unknown"
    if not driver.get("present"):
        return "cannot tell", NO_DRIVER
    result = driver_runs_toolkit(driver, version, record["root"])
    facts = result["facts"]
    if result["level"] == "info":
        return "cannot tell", result["message"]
    if result["level"] == "ok":
        if facts.get("minor_version_compatibility"):
            return "minor-compat", ("driver supports CUDA %s: runs through minor-version compatibility (PTX built "
                                    "by it does not JIT on this driver)" % cuda_words(driver))
        return "ok", "driver supports CUDA %s" % cuda_words(driver)
    if _forward_compatible(driver, record):
        return "compat", "through its own compat/ libcuda (forward compatibility on data-center GPUs)"
    needs = facts.get("needs_driver")
    return "no", "driver supports CUDA %s only; needs driver %s or newer" % (driver["cuda"], needs or "a newer")


def _forward_compatible(driver: dict, record: "AnyRecord") -> bool:
    """The toolkit's compat/ libcuda is newer than the driver and every GPU is a data-center one."""
    from cudaswitch.verify import facttables
    from cudaswitch.verify.pipeline import compat_libcuda, gpu_kind

    _, version = compat_libcuda(record["root"])
    gpus = driver.get("gpus") or []
    release = driver.get("release")
    if not version or not gpus or (release and facttables.release_tuple(version) < facttables.release_tuple(release)):
        return False
    return all(gpu_kind(g.get("name") or "") == "datacenter" for g in gpus)
