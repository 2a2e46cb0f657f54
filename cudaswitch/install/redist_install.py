"""`install` from NVIDIA's redistributable archives (or a site mirror of them), and `install --list`.

The steps, all inside the build dir that install.install_once makes beside the target: read the
manifest, download each archive the toolkit needs and check its size and sha256, unpack them into
one classic tree, refuse a tree without a working nvcc, build a one-kernel program with it, then
rename it into place. Same lock, same signal rules and same cleanup as the wheel source.
"""

import os
import time

from cudaswitch import config
from cudaswitch.cache import make_dir
from cudaswitch.errors import CudaSwitchError, ToolkitNotFound, UsageError, inert
from cudaswitch.install import redist, redist_site, redist_tree, steps, wheels
from cudaswitch.render import iec_size
from cudaswitch.request import ToolkitRequest
from cudaswitch.switch.plan import gcc_ceiling
from cudaswitch.toolkit import version_tuple

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable

    from cudaswitch.install.steps import Progress
    from cudaswitch.paths import Paths
    from cudaswitch.toolkit import Env

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
    cudnn = redist.cudnn_base(base)
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
    compile_env, picked = redist_tree.compile_env(tree, env, cache_dir)
    progress("first compile: building a one-kernel program with CUDA %s%s" % (
        release, " and %s (the default gcc is above its limit)" % picked if picked else ""))
    error = redist_tree.first_compile(tree, compile_env)
    if error:
        raise CudaSwitchError("CUDA %s was unpacked but cannot build a kernel: %s" % (release, error),
                              _compile_hint(tree, error))


def _compile_hint(tree: str, error: str) -> str:
    """What to do: a missing supported gcc is named; anything else is the toolkit's own fault."""
    ceiling = gcc_ceiling({"root": tree, "lib_dirs": []})[0]
    if ceiling is not None and "unsupported GNU version" in error:
        return "nothing was installed; install gcc-%d and g++-%d (or older), which this CUDA accepts" % (
            ceiling, ceiling)
    return "nothing was installed"
