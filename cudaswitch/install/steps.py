"""The steps both install sources (installer.py, redist_install.py) share, so their rules are one:
a lock per release, a build dir renamed into place only when complete, signals as one-line
interruptions, the check that nvcc runs, and what an installed tree holds."""

import contextlib
import fcntl
import os
import re
import shutil
import signal
import stat
import time

from packaging.version import InvalidVersion, Version

from cudaswitch.audit.toolkitfiles import tree_size
from cudaswitch.errors import BadRequest, CudaSwitchError, UsageError
from cudaswitch.install import wheels
from cudaswitch.registry import nvcc_probe
from cudaswitch.request import ToolkitRequest
from cudaswitch.safeio import read_or_none
from cudaswitch.toolkit import list_components, version_tuple

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Iterator, Mapping
    from typing import BinaryIO

    from cudaswitch.toolkit import Env

    Progress = Callable[[str], None]


SCRATCH_MARKER = ".cudaswitch-scratch"  # inside each build and trash dir cudaswitch makes
SCRATCH_TEXT = b"made by cudaswitch install; removed by the next install when its owner is gone\n"


# an exact pre-release of NVIDIA's wheels (13.4.0rc1): a request only `install` understands
PRE_RELEASE = re.compile(r"^\d+(?:\.\d+)*(?:a|b|rc)\d+$")


class InstallInterrupted(CudaSwitchError):
    exit_code = 130


def quiet(text: str) -> None:
    pass


def index_requirement(text: str) -> str:
    """The pip requirement for the metapackage a request means: '13.1' -> 'cuda-toolkit==13.1.*'."""
    if PRE_RELEASE.match(text):
        return "%s==%s" % (wheels.META_PACKAGE, text)
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


@contextlib.contextmanager
def _signals(handler: "Callable[[int, object], None] | signal.Handlers", *numbers: int) -> "Iterator[None]":
    old = {number: signal.signal(number, handler) for number in numbers}
    try:
        yield
    finally:
        for number, previous in old.items():
            signal.signal(number, previous)


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def signals_ignored() -> "contextlib.AbstractContextManager[None]":
    """A second Ctrl-C must not cut the cleanup short."""
    return _signals(signal.SIG_IGN, signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


@contextlib.contextmanager
def interruptible(request: str) -> "Iterator[None]":
    """Signals become one-line interruptions (SIGTERM and SIGHUP as Ctrl-C, so the cleanup in
    `finally` runs for them too); OS errors on the data or temp dir one-line failures."""
    try:
        with _signals(_interrupt, signal.SIGTERM, signal.SIGHUP):
            yield
    except KeyboardInterrupt:
        raise InstallInterrupted("install of CUDA %s interrupted; nothing was installed" % request) from None
    except OSError as exc:  # the data dir or the temp dir is not writable, or full
        raise CudaSwitchError("install of CUDA %s failed: %s (%s)" % (request, exc.strerror or exc, exc.filename),
                              "nothing was installed") from None


def install_once(target: str, fill: "Callable[[str, str], None]", progress: "Progress") -> bool:
    """Build `target` unless it is there; True when this call built it. The lock beside it makes
    a concurrent install wait, then find it done. `fill(build, tree)` makes the tree in the scratch
    dir `.tmp-<name>-<pid>/` beside the target, renamed into place; signals are KeyboardInterrupt
    (interruptible), so `finally` removes the build dir for them too."""
    if os.path.isdir(target):
        return False
    parent, name = os.path.split(target)
    os.makedirs(parent, exist_ok=True)
    with version_lock(parent, name, progress):
        clean_stale(parent, name)
        if os.path.isdir(target):
            return False
        build = os.path.join(parent, ".tmp-%s-%d" % (name, os.getpid()))
        made = False
        try:
            make_scratch(build)  # refuses a dir of that name that is already there: it is not ours
            made = True
            fill(build, os.path.join(build, "tree"))
            os.rename(os.path.join(build, "tree"), target)
        except wheels.WheelError as exc:
            raise CudaSwitchError("install of CUDA %s failed: %s" % (name, exc), "nothing was installed") from None
        except OSError as exc:
            raise CudaSwitchError("install of CUDA %s failed: %s (%s)" % (
                name, exc.strerror or exc, exc.filename or parent), "nothing was installed") from None
        finally:
            if made:
                with signals_ignored():
                    shutil.rmtree(build, ignore_errors=True)
    return True


def pep440(version: str) -> "Version | None":
    try:
        return Version(version)
    except InvalidVersion:
        return None


def is_pre_release(version: str) -> bool:
    """13.4.0rc1, 13.4.0.0b2, 13.4.0.dev1: not a release, whatever pip would pick."""
    parsed = pep440(version)
    return parsed is not None and parsed.is_prerelease


def minor_ranges(versions: "Iterable[str]") -> str:
    """['11.8.0', '12.0.1', ..., '12.9.2.0', '13.0.0'] -> '11.8, 12.0-12.9, 13.0'."""
    minors = sorted({version_tuple(v)[:2] for v in versions if len(version_tuple(v)) >= 2})
    runs: "list[list[int]]" = []
    for major, minor in minors:
        if runs and runs[-1][0] == major and runs[-1][2] == minor - 1:
            runs[-1][2] = minor
        else:
            runs.append([major, minor, minor])
    return ", ".join("%d.%d" % (a, b) if b == c else "%d.%d-%d.%d" % (a, b, a, c) for a, b, c in runs)


@contextlib.contextmanager
def version_lock(managed_dir: str, name: str, progress: "Progress" = quiet) -> "Iterator[None]":
    """An exclusive fcntl lock on `.lock-<name>` (saying so when it waits), removed while still
    held when the work ends, so lock files do not pile up."""
    path = os.path.join(managed_dir, ".lock-" + name)
    handle = _lock_file(path, name, progress)
    try:
        yield
    finally:
        with contextlib.suppress(OSError):
            os.unlink(path)
        handle.close()


def _lock_file(path: str, name: str, progress: "Progress") -> "BinaryIO":
    """The lock file at `path`, locked; one its holder removed while we waited is no lock any more
    (a third process may have made a new one): take the file at `path` again."""
    while True:
        handle = open(path, "a+b")
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            progress("waiting for another cudaswitch working on %s (lock %s)" % (name, path))
            fcntl.flock(handle, fcntl.LOCK_EX)
        with contextlib.suppress(FileNotFoundError):
            if os.stat(path).st_ino == os.fstat(handle.fileno()).st_ino:
                return handle
        handle.close()


def clean_stale(managed_dir: str, held: str) -> None:
    """Remove builds and trash no live process owns (ours: we hold `held`'s lock; others' with a
    free lock), only dirs carrying SCRATCH_MARKER: a site prefix's parent may hold its own `.tmp-*`."""
    for entry in os.listdir(managed_dir):
        path = os.path.join(managed_dir, entry)
        if not entry.startswith((".trash-", ".tmp-")) or not is_scratch(path):
            continue
        name = entry[len(".tmp-"):].rpartition("-")[0]
        if entry.startswith(".trash-") or name == held or _lock_is_free(managed_dir, name):
            shutil.rmtree(path, ignore_errors=True)


def make_scratch(path: str) -> None:
    """Create the dir `path` (not there before) with the marker that lets clean_stale remove it."""
    os.mkdir(path, 0o700)
    try:
        with open(os.path.join(path, SCRATCH_MARKER), "xb", opener=lambda p, flags: os.open(p, flags, 0o600)) as f:
            f.write(SCRATCH_TEXT)
    except BaseException:
        shutil.rmtree(path, ignore_errors=True)
        raise


def is_scratch(path: str) -> bool:
    """A real dir (not a link to one) holding cudaswitch's scratch marker as a regular file."""
    marker = os.path.join(path, SCRATCH_MARKER)
    try:
        if not stat.S_ISDIR(os.lstat(path).st_mode) or not stat.S_ISREG(os.lstat(marker).st_mode):
            return False
    except OSError:
        return False
    return read_or_none(marker, len(SCRATCH_TEXT)) == SCRATCH_TEXT


def _lock_is_free(managed_dir: str, name: str) -> bool:
    """No lock file (its holder ended and removed it) or one nobody holds; never makes one."""
    try:
        with open(os.path.join(managed_dir, ".lock-" + name), "rb") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
    except OSError:
        return not os.path.lexists(os.path.join(managed_dir, ".lock-" + name))


def test_pause(env: "Env", progress: "Progress") -> "Callable[..., None] | None":
    seconds = env.get("CUDASWITCH_TEST_PAUSE_UNPACK")
    if not seconds:
        return None

    def pause(sleep: "Callable[[float], object]" = time.sleep) -> None:
        progress("test hook: unpack paused for %s s" % seconds)
        sleep(float(seconds))

    return pause


def check_nvcc(tree: str, release: str) -> None:
    """A tree whose nvcc does not run is not installed (a bad or foreign-platform wheel)."""
    nvcc = os.path.join(tree, "bin", "nvcc")
    answer = nvcc_probe.run_nvcc(nvcc, 60.0) if os.path.exists(nvcc) else {}
    if "error" in answer:
        raise CudaSwitchError("the nvcc of CUDA %s does not work: %s" % (release, answer["error"]),
                              "nothing was installed")


def finished(result: dict, root: str, installed: bool) -> dict:
    """`result` with "installed" when this call built the tree, and the tree's nvcc, components, size."""
    if installed:
        result["installed"] = True
    _, components, _ = nvcc_probe.read_version_json(root)
    nvcc = os.path.join(root, "bin", "nvcc")
    has_nvcc = os.access(nvcc, os.X_OK)
    shown, version_json = list_components(components, has_nvcc)  # the one `components` shape of every JSON output
    result.update(nvcc=nvcc if has_nvcc else None, components=shown, version_json=version_json,
                  status="ok" if has_nvcc else "incomplete", size_bytes=tree_size(root),
                  notes=[] if has_nvcc else [no_nvcc_note(root, components)])
    return result


def no_nvcc_note(root: str, components: "Mapping[str, str]") -> str:
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
