"""`install --list`: the releases the redist source offers, their component versions, the size of
a default install, and whether this host's driver can run what they build.

Manifests come from the cache once read; the index is read live and cached, so with the source
unreachable a warm cache still answers (and says it is the cache's answer)."""

import datetime
import os

from cudaswitch.errors import CudaSwitchError
from cudaswitch.install import redist
from cudaswitch.install.redist_install import DEFAULT_BASE_NOTE, configured_base, release_name
from cudaswitch.render import iec_size
from cudaswitch.toolkit import version_tuple
from cudaswitch.verify.compat import driver_supports
from cudaswitch.verify.driver import driver_facts

TYPE_CHECKING = False
if TYPE_CHECKING:
    from cudaswitch.paths import Paths
    from cudaswitch.toolkit import Env


def available(paths: "Paths", env: "Env", mirror: "str | None" = None) -> dict:
    """{"base", "offline", "cached_at", "driver", "releases": [{release, date, name, components,
    size_bytes, size, driver, driver_level}]}, newest first."""
    base = configured_base(paths, mirror) or redist.NVIDIA_CUDA
    cache = redist.ManifestCache(paths.cache_dir, base, "no cached index for it either; %s; `cudaswitch install "
                                 "--list --from pypi` lists NVIDIA's wheels through pip" % DEFAULT_BASE_NOTE)
    releases, offline = cache.releases()
    driver = driver_facts(paths, env)
    rows = []
    for label in sorted(releases, key=version_tuple, reverse=True):
        try:
            manifest = cache.manifest(label)
        except redist.Unreachable:
            continue  # offline and never read: nothing true to say about it
        versions, size = redist.components(manifest), _default_size(manifest)
        rows.append({"release": label, "date": manifest.get("release_date"),
                     "name": release_name(label, versions.get("cuda_nvcc")), "components": versions,
                     "size_bytes": size, "size": iec_size(size) if size else "?", **driver_verdict(driver, label)})
    return {"base": base, "offline": offline, "cached_at": _cached_at(cache) if offline else None,
            "driver": {k: driver.get(k) for k in ("present", "release", "cuda")}, "releases": rows}


def _default_size(manifest: dict) -> "int | None":
    """Download size of what a default install fetches, for this platform (None if not offered)."""
    plat = redist.platform_key()
    try:
        keys = redist.toolkit_components(manifest)
        return sum(redist.archive_entry(manifest, key, plat)["size"] for key in keys)
    except CudaSwitchError:  # a release without nvcc or this platform: listed, but not sized
        return None


def driver_verdict(driver: dict, label: str) -> "dict[str, str]":
    """{"driver": what the row says, "driver_level"}: whether this host's driver runs CUDA `label`."""
    short = "%d.%d" % version_tuple(label)[:2]
    check = driver_supports(driver, short, "install.driver", "CUDA %s" % label)
    if check["level"] == "ok":
        return {"driver": "runs (driver %s)" % (driver.get("cuda") or driver.get("release")), "driver_level": "ok"}
    if not driver.get("present"):
        return {"driver": "no driver here (builds, cannot run)", "driver_level": "info"}
    if check["level"] == "info":
        return {"driver": "cannot check: driver's CUDA version unknown", "driver_level": "info"}
    return {"driver": "needs a newer driver (%s)" % (check["facts"].get("needs_driver") or "?"),
            "driver_level": check["level"]}


def _cached_at(cache: "redist.ManifestCache") -> "str | None":
    try:
        stamp = os.stat(os.path.join(cache.dir, "index.json")).st_mtime
    except OSError:
        return None
    return datetime.datetime.fromtimestamp(stamp, datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
