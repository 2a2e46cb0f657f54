"""`install` / `uninstall`: managed toolkits built from NVIDIA's PyPI wheels, without root.

The newest `cuda-toolkit` metapackage matching the request says which component wheels belong to
that release; pip (as the user configured it) downloads them; wheels.py unpacks them into a classic
tree. Every change to the managed dir is atomic and serialised per version:

- a build happens in `.tmp-<version>-<pid>/` beside the target and becomes the target by one
  rename; an error, Ctrl-C or SIGTERM removes it, and a SIGKILLed one is removed by the next
  install (the managed source skips dot-names, so a leftover is never listed);
- `.lock-<version>` (fcntl) makes a second install of the same version wait, then find it done;
- uninstall renames the tree to `.trash-...` before deleting it, so no half tree is ever listed.

Test hook: CUDASWITCH_TEST_PAUSE_UNPACK=SECONDS sleeps after the first file is unpacked (and says
so on stderr), so a test can interrupt an install at a known point. CUDASWITCH_PIP_TIMEOUT (seconds)
bounds the download.
"""

import contextlib
import fcntl
import os
import shutil
import signal
import tempfile
import time

from cudaswitch import pipindex, wheels
from cudaswitch.errors import BadRequest, CudaSwitchError, ToolkitNotFound, UsageError
from cudaswitch.toolkit import version_tuple


class InstallInterrupted(CudaSwitchError):
    exit_code = 130


def _quiet(text):
    pass


def index_requirement(text):
    """The pip requirement for the metapackage a request means: '13.1' -> 'cuda-toolkit==13.1.*'."""
    from cudaswitch.request import ToolkitRequest

    request = ToolkitRequest.parse(text)
    if request.source not in (None, "managed"):
        raise UsageError("install makes managed toolkits; %r names the %s source" % (text, request.source),
                         "give a CUDA version such as 13.0 or 12.4")
    if request.kind == "version":
        return "%s==%s.*" % (wheels.META_PACKAGE, ".".join(map(str, request.value)))
    if request.kind == "specifier":
        return "%s%s" % (wheels.META_PACKAGE, request.value)
    if request.kind == "latest":
        return wheels.META_PACKAGE
    raise BadRequest("install takes a CUDA version, not %r" % text, "try 13.0, 12.4, '>=12.1,<13' or latest")


def install(paths, env, request, components=None, progress=_quiet):
    """Install the newest release matching `request`; returns what was installed (a dict).

    SIGTERM and SIGHUP interrupt like Ctrl-C throughout, so every scratch and build dir is
    removed on the way out and the interruption is one line, whichever step it hit."""
    requirement = index_requirement(request)
    components = list(components or wheels.DEFAULT_COMPONENTS)
    download_timeout = _download_timeout(env)
    started = time.monotonic()
    try:
        with _signals_raise():
            release, requirements = _resolve(requirement, components, env, request)
            progress("CUDA %s: %s" % (release, " ".join(requirements)))
            target = os.path.join(paths.managed_dir, release)
            installed = _install_once(paths.managed_dir, release, requirements, env, download_timeout, progress)
    except KeyboardInterrupt:
        raise InstallInterrupted("install of CUDA %s interrupted; nothing was installed" % request) from None
    except OSError as exc:  # the data dir or the temp dir is not writable, or full
        raise CudaSwitchError("install of CUDA %s failed: %s (%s)" % (request, exc.strerror or exc, exc.filename),
                              "nothing was installed") from None
    result = {"version": release, "root": target, "requirements": requirements}
    if installed:
        result["installed"] = True
    result.update(describe_tree(target))
    result["seconds"] = round(time.monotonic() - started, 2)
    return result


def _resolve(requirement, components, env, request):
    """(release, component requirements) from the newest metapackage pip finds for `requirement`."""
    with tempfile.TemporaryDirectory(prefix="cudaswitch-resolve-") as scratch:
        # quiet: a failed lookup is then exactly one line (the error); it takes about a second
        meta = _fetch(pipindex.RESOLVE_TIMEOUT, [requirement], scratch, env, request, _quiet)[0]
        try:
            release, pins = release_of(meta), wheels.component_pins(meta)
        except wheels.WheelError as exc:
            raise CudaSwitchError("the %s package pip found is unusable: %s" % (wheels.META_PACKAGE, exc),
                                  "nothing was installed") from None
    unknown = [c for c in components if c not in pins]
    if unknown:
        raise UsageError("CUDA %s has no component %s" % (release, ", ".join(unknown)),
                         "components: " + ", ".join(sorted(pins)))
    return release, wheels.requirements_for(pins, components)


def _install_once(managed_dir, release, requirements, env, timeout, progress):
    """Build `release` unless it is there; True when this call built it. The version lock makes
    a concurrent install of the same release wait, then find it done."""
    target = os.path.join(managed_dir, release)
    if os.path.isdir(target):
        return False
    os.makedirs(managed_dir, exist_ok=True)
    with version_lock(managed_dir, release, progress):
        clean_stale(managed_dir, release)
        if os.path.isdir(target):
            return False
        _build(managed_dir, release, requirements, env, timeout, progress)
    return True


def _download_timeout(env):
    text = env.get("CUDASWITCH_PIP_TIMEOUT")
    try:
        seconds = float(text) if text else pipindex.DOWNLOAD_TIMEOUT
    except ValueError:
        seconds = -1.0
    if not seconds > 0:
        raise UsageError("CUDASWITCH_PIP_TIMEOUT=%r is not a positive number of seconds" % text)
    return seconds


def release_of(meta_wheel):
    """cuda_toolkit-13.0.3.0-...whl -> '13.0.3' (the CUDA release; the 4th piece is packaging)."""
    _, version = wheels.wheel_identity(meta_wheel)
    return ".".join(str(n) for n in version_tuple(version)[:3])


def _fetch(timeout, requirements, dest, env, request, progress):
    """pip download, turning pip's failures into one-line user errors."""
    try:
        found = pipindex.download(requirements, dest, env, timeout, lambda line: progress("  pip: " + line))
    except pipindex.PipError as exc:
        raise _index_error(exc, requirements, request) from None
    return found


def _index_error(exc, requirements, request):
    if exc.versions is not None and requirements[0].startswith(wheels.META_PACKAGE):
        if not exc.versions:
            return ToolkitNotFound("the package index pip uses offers no %s release" % wheels.META_PACKAGE,
                                   "offline, or another index? see `pip config list`")
        return ToolkitNotFound("no CUDA release matches %r on the package index pip uses" % request,
                               "releases there: " + minor_ranges(exc.versions))
    return CudaSwitchError("pip could not download %s: %s" % (" ".join(requirements), exc.message),
                           "see `pip config list`; nothing was installed")


def minor_ranges(versions):
    """['11.8.0', '12.0.1', ..., '12.9.2.0', '13.0.0'] -> '11.8, 12.0-12.9, 13.0'."""
    minors = sorted({version_tuple(v)[:2] for v in versions if len(version_tuple(v)) >= 2})
    runs = []
    for major, minor in minors:
        if runs and runs[-1][0] == major and runs[-1][2] == minor - 1:
            runs[-1][2] = minor
        else:
            runs.append([major, minor, minor])
    return ", ".join("%d.%d" % (a, b) if b == c else "%d.%d-%d.%d" % (a, b, a, c) for a, b, c in runs)


@contextlib.contextmanager
def version_lock(managed_dir, name, progress=_quiet):
    """An exclusive fcntl lock on `.lock-<name>`; says so when it has to wait for another process."""
    path = os.path.join(managed_dir, ".lock-" + name)
    handle = open(path, "a+b")
    try:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            progress("waiting for another cudaswitch working on %s (lock %s)" % (name, path))
            fcntl.flock(handle, fcntl.LOCK_EX)
        yield
    finally:
        handle.close()


def clean_stale(managed_dir, held):
    """Remove builds and trash that no live process owns: ours (we hold `held`'s lock), and any
    other version's whose lock is free."""
    for entry in os.listdir(managed_dir):
        path = os.path.join(managed_dir, entry)
        if entry.startswith(".trash-"):
            shutil.rmtree(path, ignore_errors=True)
        elif entry.startswith(".tmp-"):
            name = entry[len(".tmp-"):].rpartition("-")[0]
            if name == held or _lock_is_free(managed_dir, name):
                shutil.rmtree(path, ignore_errors=True)


def _lock_is_free(managed_dir, name):
    try:
        with open(os.path.join(managed_dir, ".lock-" + name), "a+b") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
    except OSError:
        return False


def _build(managed_dir, release, requirements, env, timeout, progress):
    """Download, unpack and check in `.tmp-<release>-<pid>/`, then rename into place. The caller
    turns signals into KeyboardInterrupt, so `finally` removes the build dir for them too."""
    build = os.path.join(managed_dir, ".tmp-%s-%d" % (release, os.getpid()))
    tree = os.path.join(build, "tree")
    try:
        os.makedirs(os.path.join(build, "wheels"))
        found = _fetch(timeout, requirements, os.path.join(build, "wheels"), env, release, progress)
        _unpack_all(found, tree, release, env, progress)
        _check_nvcc(tree, release)
        os.rename(tree, os.path.join(managed_dir, release))
    except wheels.WheelError as exc:
        raise CudaSwitchError("install of CUDA %s failed: %s" % (release, exc), "nothing was installed") from None
    except OSError as exc:
        raise CudaSwitchError("install of CUDA %s failed: %s (%s)" % (
            release, exc.strerror or exc, exc.filename or managed_dir), "nothing was installed") from None
    finally:
        with _signals_ignored():
            shutil.rmtree(build, ignore_errors=True)


def _unpack_all(found, tree, release, env, progress):
    pause = _test_pause(env, progress)
    versions = {}
    for wheel in found:
        name, version = wheels.wheel_identity(wheel)
        versions[name] = version
        count = wheels.unpack(wheel, tree, pause)
        pause = None
        progress("unpacked %s %s (%d files)" % (name, version, count))
    wheels.finish_tree(tree, versions, release)


def _test_pause(env, progress):
    seconds = env.get("CUDASWITCH_TEST_PAUSE_UNPACK")
    if not seconds:
        return None

    def pause():
        progress("test hook: unpack paused for %s s" % seconds)
        time.sleep(float(seconds))

    return pause


def _check_nvcc(tree, release):
    """A tree whose nvcc does not run is not installed (a bad or foreign-platform wheel)."""
    from cudaswitch import probe

    nvcc = os.path.join(tree, "bin", "nvcc")
    if os.path.exists(nvcc):
        answer = probe.run_nvcc(nvcc, 60.0)
        if "error" in answer:
            raise CudaSwitchError("the nvcc of CUDA %s does not work: %s" % (release, answer["error"]),
                                  "nothing was installed")


@contextlib.contextmanager
def _signals_raise():
    """SIGTERM and SIGHUP interrupt like Ctrl-C, so the cleanup in `finally` runs for them too."""
    def interrupt(signum, frame):
        raise KeyboardInterrupt

    old = {s: signal.signal(s, interrupt) for s in (signal.SIGTERM, signal.SIGHUP)}
    try:
        yield
    finally:
        for number, handler in old.items():
            signal.signal(number, handler)


@contextlib.contextmanager
def _signals_ignored():
    """A second Ctrl-C must not cut the cleanup short."""
    old = {s: signal.signal(s, signal.SIG_IGN) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    try:
        yield
    finally:
        for number, handler in old.items():
            signal.signal(number, handler)


def describe_tree(root):
    """What a user wants to know about an installed tree: nvcc, components, size, and notes."""
    from cudaswitch import probe
    from cudaswitch.audit_probe import tree_size
    from cudaswitch.toolkit import list_components

    _, components, _ = probe.read_version_json(root)
    nvcc = os.path.join(root, "bin", "nvcc")
    has_nvcc = os.access(nvcc, os.X_OK)
    shown, version_json = list_components(components, has_nvcc)  # the one `components` shape of every JSON output
    result = {"nvcc": nvcc if has_nvcc else None, "components": shown, "version_json": version_json,
              "status": "ok" if has_nvcc else "incomplete", "size_bytes": tree_size(root), "notes": []}
    if not has_nvcc:
        result["notes"].append(no_nvcc_note(root, components))
    return result


def no_nvcc_note(root, components):
    has_ptxas = os.path.exists(os.path.join(root, "bin", "ptxas"))
    parts = (["ptxas"] if has_ptxas else []) + ["the headers"]
    if components.get("cuda_cudart"):
        parts.append("libcudart %s" % components["cuda_cudart"])
    major = (components.get("cuda") or "0").split(".")[0]
    has = "this toolkit has %s, so programs can link against it and run with it, but it cannot " \
          "compile .cu files (status incomplete)" % ", ".join(parts)
    if major.isdigit() and int(major) >= 13:
        return "nvcc was not among the components installed: %s. Add nvcc to --components for a " \
               "compiler." % has
    return ("NVIDIA publishes no nvcc in its CUDA %s wheels: %s. To compile, use an nvcc from "
            "NVIDIA's installer or conda's cuda-nvcc, or install CUDA 13 or newer." % (major, has))


def uninstall(paths, env, registry, request, force=False):
    """Remove one managed toolkit; refuses others, and the active one unless `force`."""
    from cudaswitch.core import active_root
    from cudaswitch.request import ToolkitRequest

    record = _managed_record(paths, registry, ToolkitRequest.parse(request, allow_path=True))
    root = record["root"]
    was_active = active_root(env) == root
    if was_active and not force:
        from cudaswitch import envdiff, hints

        raise CudaSwitchError("CUDA %s at %s is active in this shell" % (record["version"], root),
                              "%s first, or pass --force" % hints.leave_active(env, envdiff.read_state(env), os.getcwd()))
    name = os.path.basename(root)
    with version_lock(paths.managed_dir, name):
        trash = os.path.join(paths.managed_dir, ".trash-%s-%d" % (name, os.getpid()))
        try:
            os.rename(root, trash)
        except OSError as exc:
            raise CudaSwitchError("cannot remove %s: %s" % (root, exc.strerror or exc),
                                  "nothing was removed") from None
        with _signals_ignored():
            shutil.rmtree(trash, ignore_errors=True)
    return {"version": record["version"], "root": root, "was_active": was_active}


def _managed_record(paths, registry, request):
    if request.source not in (None, "managed"):
        raise UsageError("uninstall removes only toolkits made by `cudaswitch install`, not %s ones"
                         % request.source)
    records = registry["records"]
    managed = [r for r in records if "managed" in r["sources"] and _inside(r["root"], paths.managed_dir)]
    # broken trees must stay removable, so the registry's "usable" guard is left out; the release
    # a user installed (the directory name, 13.0.3) matches as well as the nvcc version (13.0.88)
    guards = [check for name, check in request.guards(registry["system_real"]) if name != "usable"]
    matches = [r for r in managed if all(check(r) for check in guards) or _names_release(r, request)]
    if matches:
        return max(matches, key=lambda r: version_tuple(r["version"]))
    from cudaswitch.request import select

    other = select(request, records, registry["source_order"], registry["system_real"])
    if other is not None:
        raise CudaSwitchError("CUDA %s at %s is not managed by cudaswitch (source: %s)" % (
            other["version"], other["root"], ", ".join(other["sources"])),
            "uninstall removes only toolkits made by `cudaswitch install`")
    installed = sorted({os.path.basename(r["root"]) for r in managed}, key=version_tuple)
    raise ToolkitNotFound("no managed toolkit matches %r" % request.text,
                          "installed: " + ", ".join(installed) if installed else "none is installed")


def _names_release(record, request):
    wanted = request.value if request.kind == "version" else None
    return bool(wanted) and version_tuple(os.path.basename(record["root"]))[:len(wanted)] == wanted


def _inside(path, directory):
    real, base = os.path.realpath(path), os.path.realpath(directory)
    return real.startswith(base + os.sep)
