"""`install` / `uninstall`: managed toolkits built from NVIDIA's PyPI wheels, without root.

The newest `cuda-toolkit` metapackage matching the request names the component wheels; pip (as the
user configured it, with a private TMPDIR) downloads them; wheels.py unpacks them into a classic
tree. The managed dir changes atomically, one version at a time (steps.py): a build dir renamed
into place, a `.lock-<version>`, uninstall through a `.trash-...` dir, and stale dirs removed
only when they carry cudaswitch's scratch marker (never someone's `.tmp-*` beside a site prefix).
CUDASWITCH_TEST_PAUSE_UNPACK=SECONDS sleeps after the first file is unpacked, so a test can
interrupt an install at a known point; CUDASWITCH_PIP_TIMEOUT (seconds) bounds the download.
"""

import datetime
import os
import shutil
import tempfile
import time

from packaging.requirements import Requirement
from packaging.version import Version

from cudaswitch import cache, envstate
from cudaswitch.cache import make_dir
from cudaswitch.errors import CudaSwitchError, ToolkitNotFound, UsageError
from cudaswitch.install import pipindex, redist_install, redist_site, wheels
from cudaswitch.install.redist_install import release_name
from cudaswitch.install.steps import (
    check_nvcc, finished, index_requirement, install_once, interruptible, is_pre_release, make_scratch,
    minor_ranges, pep440, quiet, signals_ignored, test_pause, version_lock)
from cudaswitch.request import ToolkitRequest, select
from cudaswitch.switch.lookup import Lookup
from cudaswitch.switch.shells import hints
from cudaswitch.toolkit import version_tuple
from cudaswitch.verify.driver import driver_facts

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable

    from cudaswitch.install.steps import Progress
    from cudaswitch.paths import Paths
    from cudaswitch.toolkit import Env

RUNTIME_ONLY = "runtime only, no nvcc"
RUNTIME_ONLY_NOTE = ("NVIDIA's CUDA %(release)s wheels are " + RUNTIME_ONLY + ": the toolkit made from them cannot "
                     "compile .cu files; for a complete %(short)s: cudaswitch install %(short)s (NVIDIA's redist "
                     "archives, the default for 12.x)")
NO_RELEASES_HINT = "offline, or another index? see `pip config list`"
PYPI_LISTING_CACHE = "pypi_releases.marshal"
PYPI_LISTINGS_KEPT = 16


def install(paths: "Paths", env: "Env", request: str, components: "Iterable[str] | None" = None,
            progress: "Progress" = quiet, source: "str | None" = None, mirror: "str | None" = None,
            extras: "Iterable[str]" = (), prefix: "str | None" = None, modulefile: "str | None" = None,
            pre: bool = False) -> dict:
    """Install the newest release matching `request`. `source` None picks redist when a mirror is
    given or configured or the request is older than 13, else the wheels (complete from 13.0 on).
    A pre-release of the wheels only with `pre` (or named exactly), even where pip would take it."""
    if source is None and (extras or prefix or modulefile):
        source = "redist"  # only the redist source has cuDNN, site prefixes and modulefiles
    chosen = redist_install.choose_source(paths, request, source, mirror)
    if chosen != "pypi" and pre:
        raise UsageError("--pre takes pre-releases of NVIDIA's wheels; it needs --from pypi")
    if chosen != "pypi":
        return redist_install.install(paths, env, request, components, progress, chosen, extras, prefix, modulefile)
    if extras or prefix or modulefile:
        raise UsageError("--with, --prefix and --modulefile need the redist source", "drop --from pypi")
    requirement = index_requirement(request)
    pre = pre or is_pre_release(request)
    components = list(components or wheels.DEFAULT_COMPONENTS)
    download_timeout = _download_timeout(env)
    started = time.monotonic()
    with interruptible(request):
        release, requirements = _resolve(requirement, components, env, request, pre)
        progress("CUDA %s: %s" % (release, " ".join(requirements)))
        if runtime_only(release):  # said before the download, not only after it
            progress("note: " + RUNTIME_ONLY_NOTE % {"release": release, "short": ".".join(release.split(".")[:2])})
        target = os.path.join(paths.managed_dir, release)
        make_dir(paths.managed_dir)  # 0700 whatever the umask: the managed source refuses a dir others may write
        installed = install_once(target, lambda build, tree: _fill_from_wheels(
            build, tree, release, requirements, env, download_timeout, progress), progress)
    result = finished({"version": release, "root": target, "requirements": requirements, "source": "pypi"},
                      target, installed)
    result["name"] = release_name(release, result["components"].get("nvcc")) + (
        " (pre-release)" if is_pre_release(release) else "")
    result["pre_release"] = is_pre_release(release)
    result["seconds"] = round(time.monotonic() - started, 2)
    return result


def runtime_only(release: str) -> bool:
    """NVIDIA ships nvcc in its cuda-toolkit wheels from CUDA 13 on; the 11.x/12.x ones have none."""
    major = version_tuple(release)[:1]
    return bool(major) and major[0] < 13


def _resolve(requirement: str, components: "list[str]", env: "Env", request: str,
             pre: bool) -> "tuple[str, list[str]]":
    """(release, component requirements) from the newest metapackage pip finds for `requirement`."""
    with tempfile.TemporaryDirectory(prefix="cudaswitch-resolve-") as scratch:
        # quiet: a failed lookup is then exactly one line (the error); it takes about a second
        meta = _fetch(pipindex.RESOLVE_TIMEOUT, [requirement], scratch, env, request, quiet, pre)[0]
        version = wheels.wheel_identity(meta)[1]
        if is_pre_release(version) and not pre:  # a pip that takes a pre-release when nothing else matches
            raise _pre_release_refused(request, [version])
        try:
            pins = wheels.component_pins(meta)
        except wheels.WheelError as exc:
            raise CudaSwitchError("the %s package pip found is unusable: %s" % (wheels.META_PACKAGE, exc),
                                  "nothing was installed") from None
    release = release_label(version)  # 13.0.3.0 -> 13.0.3: the 4th piece is packaging
    unknown = [c for c in components if c not in pins]
    if unknown:
        raise UsageError("CUDA %s has no component %s" % (release, ", ".join(unknown)),
                         "components: " + ", ".join(sorted(pins)))
    return release, wheels.requirements_for(pins, components)


def _download_timeout(env: "Env") -> float:
    text = env.get("CUDASWITCH_PIP_TIMEOUT")
    try:
        seconds = float(text) if text else pipindex.DOWNLOAD_TIMEOUT
    except ValueError:
        seconds = -1.0
    if not seconds > 0:
        raise UsageError("CUDASWITCH_PIP_TIMEOUT=%r is not a positive number of seconds" % text)
    return seconds


def release_label(version: str) -> str:
    """'13.0.3.0' -> '13.0.3', '13.4.0.0rc1' -> '13.4.0rc1'."""
    parsed = pep440(version)
    if parsed is None:
        return ".".join(str(n) for n in version_tuple(version)[:3])
    label = ".".join(str(n) for n in parsed.release[:3])
    if parsed.pre:
        label += "%s%d" % parsed.pre
    return label + (".dev%d" % parsed.dev if parsed.dev is not None else "")


def _fetch(timeout: float, requirements: "list[str]", dest: str, env: "Env", request: str,
           progress: "Progress", pre: bool = False) -> "list[str]":
    """pip download, turning pip's failures into one-line user errors."""
    try:
        return pipindex.download(requirements, dest, env, timeout, lambda line: progress("  pip: " + line), pre)
    except pipindex.PipError as exc:
        raise _index_error(exc, requirements, request) from None


def _index_error(exc: pipindex.PipError, requirements: "list[str]", request: str) -> CudaSwitchError:
    if exc.versions is not None and requirements[0].startswith(wheels.META_PACKAGE):
        if not exc.versions:
            return _no_releases(exc)
        specifier = Requirement(requirements[0]).specifier
        candidates = [v for v in exc.versions if is_pre_release(v) and specifier.contains(v, prereleases=True)]
        if candidates:
            return _pre_release_refused(request, candidates)
        finals = [v for v in exc.versions if not is_pre_release(v)]
        return ToolkitNotFound("no CUDA release matches %r on the package index pip uses, %s"
                               % (request, exc.looked_in), "releases there: " + (minor_ranges(finals) or "none"))
    return CudaSwitchError("pip could not download %s from %s: %s" % (" ".join(requirements), exc.looked_in,
                                                                      exc.message),
                           "see `pip config list`; nothing was installed")


def _pre_release_refused(request: str, versions: "list[str]") -> ToolkitNotFound:
    """A request for a release met only by a pre-release: never installed as if it were one."""
    labels = sorted({release_label(v) for v in versions}, key=version_tuple)
    return ToolkitNotFound("no CUDA release matches %r: %s %s a pre-release" % (
        request, ", ".join(labels), "is" if len(labels) == 1 else "are"),
        "add --pre to install it anyway")


def _no_releases(exc: pipindex.PipError) -> ToolkitNotFound:
    """The index pip uses (as pip names it) has no cuda-toolkit release, or cannot be reached."""
    return ToolkitNotFound("the package index pip uses offers no %s release: %s%s" % (
        wheels.META_PACKAGE, exc.looked_in, " cannot be reached" if exc.unreachable else ""), NO_RELEASES_HINT)


def pypi_releases(paths: "Paths", env: "Env", pre: bool = False) -> dict:
    """`install --list --from pypi`: the cuda-toolkit wheels' releases on the index pip uses (never
    NVIDIA's redist server), newest first; pre-releases only with `pre`, else named as hidden."""
    try:
        offered = pipindex.offered_versions(wheels.META_PACKAGE, env, pipindex.RESOLVE_TIMEOUT)
    except pipindex.PipError as exc:
        raise CudaSwitchError("pip could not list %s from %s: %s" % (wheels.META_PACKAGE, exc.looked_in,
                                                                    exc.message), "see `pip config list`") from None
    where, versions, cached_at = offered.looked_in, offered.versions or [], None
    listings = cache.table(paths.cache_dir, PYPI_LISTING_CACHE)
    if versions:
        listings.pop(where, None)  # re-inserted last: the newest are the ones kept
        listings[where] = {"versions": list(versions), "at": time.time()}
        cache.store_table(paths.cache_dir, PYPI_LISTING_CACHE, listings, PYPI_LISTINGS_KEPT)
    else:  # offline (pip does not always say so): the last listing of this index, labelled with its age
        versions, cached_at = _remembered_listing(listings.get(where))
    if not versions:
        raise _no_releases(offered)
    hidden = sorted({release_label(v) for v in versions if is_pre_release(v)} if not pre else set())
    newest: "dict[str, str]" = {}  # release label -> the newest packaging of it (13.0.2.1 over 13.0.2.0)
    for version in versions:
        if pre or not is_pre_release(version):
            label = release_label(version)
            if label not in newest or _release_order(version) > _release_order(newest[label]):
                newest[label] = version
    driver = driver_facts(paths, env)
    rows = [_pypi_row(release, newest[release], driver) for release in
            sorted(newest, key=_release_order, reverse=True)]
    return {"source": "pypi", "base": where, "offline": cached_at is not None, "cached_at": cached_at,
            "driver": {k: driver.get(k) for k in ("present", "release", "cuda")}, "releases": rows,
            "hidden_pre_releases": hidden}


def _remembered_listing(entry: object) -> "tuple[list[str], str | None]":
    """(versions, "2026-12-01 10:00 UTC, 3 days old") of a remembered listing, or ([], None)."""
    if not (isinstance(entry, dict) and isinstance(entry.get("at"), float) and isinstance(entry.get("versions"), list)):
        return [], None
    stamp = datetime.datetime.fromtimestamp(entry["at"], datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    return [v for v in entry["versions"] if isinstance(v, str)], "%s, %s old" % (stamp, _age(time.time() - entry["at"]))


def _age(seconds: float) -> str:
    for unit, size in (("day", 86400), ("hour", 3600), ("minute", 60)):
        if seconds >= size:
            count = int(seconds // size)
            return "%d %s%s" % (count, unit, "" if count == 1 else "s")
    return "less than a minute"


def _release_order(label: str) -> "Version":
    """PEP 440 order (13.4.0rc1 before 13.4.0); an unparsable label sorts lowest."""
    return pep440(label) or Version("0")


def _pypi_row(release: str, version: str, driver: dict) -> dict:
    return {"release": release, "package": "%s==%s" % (wheels.META_PACKAGE, version), "date": None,
            "pre_release": is_pre_release(version), "nvcc": not runtime_only(release),
            "name": release, "components": {}, "size_bytes": None, "size": "?",
            **redist_install.driver_verdict(driver, release)}


def _fill_from_wheels(build: str, tree: str, release: str, requirements: "list[str]", env: "Env", timeout: float,
                      progress: "Progress") -> None:
    os.makedirs(os.path.join(build, "wheels"))
    found = _fetch(timeout, requirements, os.path.join(build, "wheels"), env, release, progress)
    pause = test_pause(env, progress)
    versions = {}
    for wheel in found:
        name, version = wheels.wheel_identity(wheel)
        versions[name] = version
        count = wheels.unpack(wheel, tree, pause)
        pause = None
        progress("unpacked %s %s (%d files)" % (name, version, count))
    cudart = next((v for n, v in versions.items() if n.startswith("nvidia-cuda-runtime")), None)
    wheels.finish_tree(tree, wheels.version_json(versions, release), cudart)
    check_nvcc(tree, release)


def uninstall(paths: "Paths", env: "Env", registry: dict, request: str, force: bool = False) -> dict:
    """Remove one managed toolkit; refuses others, and the active one unless `force`."""
    record = _managed_record(paths, registry, ToolkitRequest.parse(request, allow_path=True))
    root = record["root"]
    was_active = Lookup(registry, env).is_active(record)
    if was_active and not force:
        raise CudaSwitchError("CUDA %s at %s is active in this shell" % (record["version"], root),
                              "%s first, or pass --force"
                              % hints.leave_active(env, envstate.read_state(env), os.getcwd()))
    if _inside(root, paths.managed_dir):
        name = release_name(os.path.basename(root), record["version"])
        _remove_tree(root)
    else:  # a site install in its own prefix
        name = release_name((redist_site.read_marker(root) or {}).get("release") or root, record["version"])
        redist_site.uninstall_prefix(paths.managed_dir, root, _remove_tree)
    return {"version": record["version"], "root": root, "name": name, "was_active": was_active}


def _remove_tree(root: str) -> None:
    """Move into a marked `.trash-...` dir under the lock, then delete: no half tree is ever
    listed, and the next install finishes a delete cut short."""
    parent, name = os.path.split(root)
    with version_lock(parent, name):
        trash = os.path.join(parent, ".trash-%s-%d-%s" % (name, os.getpid(), os.urandom(4).hex()))
        try:
            make_scratch(trash)
            try:
                os.rename(root, os.path.join(trash, "tree"))
            except OSError:
                shutil.rmtree(trash, ignore_errors=True)
                raise
        except OSError as exc:
            raise CudaSwitchError("cannot remove %s: %s" % (root, exc.strerror or exc),
                                  "nothing was removed") from None
        with signals_ignored():
            shutil.rmtree(trash, ignore_errors=True)


def _managed_record(paths: "Paths", registry: dict, request: "ToolkitRequest") -> dict:
    if request.source not in (None, "managed"):
        raise UsageError("uninstall removes only toolkits made by `cudaswitch install`, not %s ones"
                         % request.source)
    records = registry["records"]
    # a prefix install: the managed dir links to it (the marker is checked before removal)
    managed = [r for r in records if "managed" in r["sources"] and (
        _inside(r["root"], paths.managed_dir) or redist_site.links_to(paths.managed_dir, r["root"]))]
    # broken trees must stay removable, so the registry's "usable" guard is left out; the release
    # a user installed (the directory name, 13.0.3) matches as well as the nvcc version (13.0.88)
    guards = [check for name, check in request.guards(registry["system_real"]) if name != "usable"]
    wanted = request.value if request.kind == "version" else ()
    matches = [r for r in managed if all(check(r) for check in guards)
               or (wanted and version_tuple(os.path.basename(r["root"]))[:len(wanted)] == wanted)]
    if len({r["root"] for r in matches}) > 1:
        # deleting is not the place to guess which one was meant (as pyenv, it removes none)
        names = sorted({os.path.basename(r["root"]) for r in matches}, key=version_tuple)
        raise UsageError("%r matches %d managed toolkits: %s; nothing was removed" % (
            request.text, len(names), ", ".join(names)), "name one, e.g. cudaswitch uninstall %s" % names[-1])
    if matches:
        return matches[0]
    other = select(request, records, registry["source_order"], registry["system_real"])
    if other is not None:
        raise CudaSwitchError("CUDA %s at %s is not managed by cudaswitch (source: %s)" % (
            other["version"], other["root"], ", ".join(other["sources"])),
            "uninstall removes only toolkits made by `cudaswitch install`")
    installed = sorted({os.path.basename(r["root"]) for r in managed}, key=version_tuple)
    raise ToolkitNotFound("no managed toolkit matches %r" % request.text,
                          "installed: " + ", ".join(installed) if installed else "none is installed")


def _inside(path: str, directory: str) -> bool:
    return os.path.realpath(path).startswith(os.path.realpath(directory) + os.sep)
