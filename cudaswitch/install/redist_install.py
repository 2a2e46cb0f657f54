"""`install` from NVIDIA's redistributable archives (or a site mirror of them), and `install --list`.

In the build dir steps.install_once makes beside the target: each archive downloaded and checked
against its size and sha256, all unpacked into one classic tree, a tree whose nvcc cannot build a
one-kernel program refused, then renamed into place (the wheel source's lock and signal rules)."""

import datetime
import os
import time
import urllib.parse

from cudaswitch import config
from cudaswitch.cache import make_dir
from cudaswitch.envstate import pristine
from cudaswitch.errors import CudaSwitchError, ToolkitNotFound, UsageError, inert
from cudaswitch.install import redist, redist_site, redist_tree, steps, wheels
from cudaswitch.render import iec_size
from cudaswitch.request import ToolkitRequest
from cudaswitch.switch.plan import choose_compilers, gcc_ceiling, with_compilers
from cudaswitch.toolkit import version_tuple
from cudaswitch.verify.compat import driver_supports
from cudaswitch.verify.nvcc import compile_smoke
from cudaswitch.verify.driver import driver_facts

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable

    from cudaswitch.install.steps import Progress
    from cudaswitch.paths import Paths
    from cudaswitch.toolkit import Env

COMPILE_TIMEOUT = 300.0
DOWNLOAD_TIMEOUT = 120.0  # per network read, not per archive: a slow link still finishes
DEFAULT_BASE_NOTE = "a site mirror goes in --mirror URL or config redist_url"
UNREACHABLE_HINT = ("a site mirror goes in --mirror URL or config redist_url; --from pypi installs "
                    "CUDA 13 or newer from NVIDIA's wheels through pip instead")


def release_name(release: str, nvcc_version: "str | None") -> str:
    """One name for a release everywhere: '12.4.1 (nvcc 12.4.131)'."""
    return "%s (nvcc %s)" % (release, nvcc_version) if nvcc_version else release


def configured_base(paths: "Paths", mirror: "str | None") -> "str | None":
    """The redist base URL: --mirror, else config redist_url, else None."""
    if mirror:
        return redist.normalize_base(mirror, "--mirror")
    configured = config.load(paths).get("redist_url")
    return redist.normalize_base(configured, "config redist_url") if configured else None


def choose_source(paths: "Paths", request: str, source: "str | None", mirror: "str | None") -> str:
    """'pypi', or the redist base URL to install from."""
    if source not in (None, "redist", "pypi"):
        raise UsageError("unknown install source %r" % source, "sources: redist, pypi")
    if source == "pypi":
        if mirror:
            raise UsageError("--mirror names a redist mirror; it does not go with --from pypi")
        return "pypi"
    base = configured_base(paths, mirror)
    if base or source == "redist":
        return base or redist.NVIDIA_CUDA
    # no mirror: the wheels are complete from 13.0 on, and pip honours the user's index settings
    return "pypi" if _thirteen_or_newer(request) else redist.NVIDIA_CUDA


def _thirteen_or_newer(text: str) -> bool:
    try:
        request = ToolkitRequest.parse(text)
    except CudaSwitchError:
        return True  # the wheel path reports the bad request in its own words
    if request.kind == "version":
        return request.value[0] >= 13
    return request.kind == "latest"


def plan(paths: "Paths", request_text: str, base: str, components: "Iterable[str]" = (),
         extras: "Iterable[str]" = ()) -> "tuple[str, dict, list[dict]]":
    """(release, manifest, entries): what an install of `request_text` from `base` fetches."""
    steps.index_requirement(request_text)  # the same refusals as the wheel source (conda:12.4, system, ...)
    request = ToolkitRequest.parse(request_text)
    cache = redist.ManifestCache(paths.cache_dir, base, UNREACHABLE_HINT)
    releases, _ = cache.releases()
    release = redist.resolve(request, releases)
    if release is None and request.kind == "version" and len(request.value) == 3:
        release = ".".join(map(str, request.value))  # a mirror without a listing: ask for the manifest
    if release is None:
        hint = "releases there: " + steps.minor_ranges(releases) if releases else "the index lists no redistrib_*.json"
        raise ToolkitNotFound("no CUDA release matches %r at %s" % (request.text, base), hint)
    manifest = cache.manifest(release)
    plat = redist.platform_key()
    entries = [dict(redist.archive_entry(manifest, key, plat), base=base)
               for key in redist.toolkit_components(manifest, components)]
    for extra in extras:
        if extra != "cudnn":
            raise UsageError("--with %s is not known" % extra, "--with takes cudnn")
        entries.append(cudnn_entry(paths, base, release, plat))
    return release, manifest, entries  # the manifest's own release_label is checked to be this one


def cudnn_entry(paths: "Paths", base: str, release: str, plat: str) -> dict:
    """The newest cuDNN archive built for this CUDA major (its cuda_variant, e.g. cuda13)."""
    # NVIDIA puts cuDNN beside CUDA: .../compute/cuda/redist/ -> .../compute/cudnn/redist/
    cudnn = (base[: -len("cuda/redist/")] + "cudnn/redist/" if base.endswith("/cuda/redist/")
             else urllib.parse.urljoin(base, "cudnn/"))
    cache = redist.ManifestCache(paths.cache_dir, cudnn, "--with cudnn reads %s" % cudnn)
    variant = "cuda%d" % version_tuple(release)[0]
    for label in sorted(cache.releases()[0], key=version_tuple, reverse=True):
        manifest = cache.manifest(label)
        item = manifest.get("cudnn")
        where = item.get(plat) if isinstance(item, dict) else None
        if isinstance(where, dict) and variant in where:
            return dict(redist.archive_entry(manifest, "cudnn", plat, variant), base=cudnn)
    raise CudaSwitchError("no cuDNN release at %s has a %s build for %s" % (cudnn, variant, plat))


def install(paths: "Paths", env: "Env", request_text: str, components: "Iterable[str] | None", progress: "Progress",
            base: str, extras: "Iterable[str]" = (), prefix: "str | None" = None,
            modulefile: "str | None" = None) -> dict:
    """Install from the redist base; returns the same result shape as the wheel source. `prefix`:
    a shared directory instead of the data dir; `modulefile`: a dir for Lua and Tcl modulefiles."""
    started = time.monotonic()
    progress = _escaped_progress(progress)
    with steps.interruptible(request_text):
        release, manifest, entries = plan(paths, request_text, base, components or (), extras)
        name = release_name(release, redist.components(manifest).get("cuda_nvcc"))
        progress("CUDA %s from %s: %s" % (name, base, ", ".join(
            "%s %s (%s)" % (e["component"], e["version"], iec_size(e["size"])) for e in entries)))
        target = redist_site.prefix_target(prefix, release) if prefix else os.path.join(paths.managed_dir, release)
        make_dir(paths.managed_dir)  # 0700 whatever the umask: the managed source refuses a dir others may write
        modulefiles = list(redist_site.modulefile_paths(modulefile, release)) if modulefile else []

        def build_tree(build: str, tree: str) -> None:
            fill(build, tree, release, entries, env, progress, paths.cache_dir)
            if prefix:
                redist_site.write_marker(tree, release, "redist", modulefiles)

        installed = steps.install_once(target, build_tree, progress)
        if prefix:
            redist_site.link_into_managed(paths.managed_dir, release, target)
        if modulefile:
            redist_site.write_modulefiles(modulefile, release, name, target)
    result = steps.finished({"version": release, "root": target, "source": "redist", "base": base, "name": name,
                             "archives": {e["component"]: e["version"] for e in entries},
                             "modulefiles": modulefiles}, target, installed)
    result["seconds"] = round(time.monotonic() - started, 2)
    return result


def _escaped_progress(progress: "Progress") -> "Progress":
    """Progress lines name manifest values and mirror paths: shown with control characters escaped
    (the error boundary does the same for errors), so a mirror cannot write terminal escapes."""
    return lambda text: progress(inert(text))


def fill(build: str, tree: str, release: str, entries: "list[dict]", env: "Env", progress: "Progress",
         cache_dir: str) -> None:
    """Download, check, unpack and prove one toolkit inside the build dir."""
    archives = os.path.join(build, "archives")
    os.makedirs(archives)
    fetched = []
    for entry in entries:
        dest = os.path.join(archives, os.path.basename(entry["relative_path"]))
        progress("downloading %s (%s)" % (os.path.basename(dest), iec_size(entry["size"])))
        redist.download(entry["base"] + entry["relative_path"], dest, entry, DOWNLOAD_TIMEOUT)
        fetched.append((entry, dest))
    pause = steps.test_pause(env, progress)
    redist_tree.unpack_all(fetched, tree, os.path.join(build, "unpacked"),
                           pause and (lambda stop: pause(stop.wait)), progress)
    wheels.finish_tree(tree, {"cuda": {"name": "CUDA SDK", "version": release},
                              **{e["component"]: {"name": e["name"], "version": e["version"]} for e in entries}})
    # a tree without nvcc, or whose nvcc cannot build a kernel, is never installed
    if not os.access(os.path.join(tree, "bin", "nvcc"), os.X_OK):
        raise CudaSwitchError("the cuda_nvcc archive of CUDA %s holds no bin/nvcc, so the toolkit could "
                              "not compile" % release, "nothing was installed")
    steps.check_nvcc(tree, release)
    _first_compile(tree, release, env, cache_dir, progress)


def _first_compile(tree: str, release: str, env: "Env", cache_dir: str, progress: "Progress") -> None:
    """Build verify's one-kernel program with the tree's nvcc (compiled and linked as a plain
    `nvcc x.cu -o x` does; no GPU needed, nothing run). It runs with the supported g++-N `use`
    would pick when the default gcc is above the tree's ceiling (11.8 takes gcc 11 at most), and
    only PATH's absolute entries count (pathsearch.which, cudaswitch.run): nothing in the temp dir
    can stand in for gcc."""
    env = pristine(env)  # not the compilers an active switch chose for another toolkit
    nvcc = os.path.join(tree, "bin", "nvcc")
    chosen = choose_compilers(cache_dir, {"root": tree, "nvcc": nvcc, "lib_dirs": [os.path.join(tree, "lib64")]}, env)
    picked = chosen.get("CUDAHOSTCXX")
    progress("first compile: building a one-kernel program with CUDA %s%s" % (
        release, " and %s (the default gcc is above its limit)" % picked if picked else ""))
    result = compile_smoke({"nvcc": nvcc}, with_compilers(env, chosen), False, COMPILE_TIMEOUT)
    if not result["built"]:
        error = "`%s` failed: %s" % (result["command"], result["error"])
        raise CudaSwitchError("CUDA %s was unpacked but cannot build a kernel: %s" % (release, error),
                              _compile_hint(tree, error))


def _compile_hint(tree: str, error: str) -> str:
    """What to do: a missing supported gcc is named; anything else is the toolkit's own fault."""
    ceiling = gcc_ceiling({"root": tree, "lib_dirs": []})[0]
    if ceiling is not None and "unsupported GNU version" in error:
        return "nothing was installed; install gcc-%d and g++-%d (or older), which this CUDA accepts" % (
            ceiling, ceiling)
    return "nothing was installed"


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
