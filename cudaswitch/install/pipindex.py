"""Ask pip, as the user has configured it (pip.conf, PIP_* variables, indexes, certificates), for
wheels: cudaswitch never talks to an index itself. `CUDASWITCH_PIP` names a pip executable to use
instead of `python -m pip` (e.g. when cudaswitch lives in a pipx venv without pip).
"""

import importlib.util
import os
import re
import shlex
import sys
import tempfile

from cudaswitch.pathsearch import which
from cudaswitch.run import run

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

    from cudaswitch.toolkit import Env

    OnLine = Callable[[str], None] | None

FROM_VERSIONS = re.compile(r"\(from versions: ([^)]*)\)")
RESOLVE_TIMEOUT = 300.0
DOWNLOAD_TIMEOUT = 3600.0
SHOWN_PREFIXES = ("Collecting", "Downloading", "Processing", "File was already downloaded")
LOOKED_IN = ("Looking in indexes:", "Looking in links:")
DEFAULT_INDEX = "PyPI (https://pypi.org/simple)"
UNREACHABLE_SIGNS = ("Failed to establish a new connection", "Could not fetch URL", "connection broken by",
                     "Name or service not known", "timed out")
# A requirement no release satisfies: pip reads the project's page, downloads nothing, and its error
# names every version there ("from versions: ..."), on every pip (`pip index` is experimental).
NO_RELEASE_PIN = "<0"


class PipError(Exception):
    """pip failed: `lines` is what it printed, `versions` what the index offered (if it said)."""

    def __init__(self, message: str, lines: "Iterable[str]" = (), versions: "list[str] | None" = None) -> None:
        super().__init__(message)
        self.message, self.lines, self.versions = message, list(lines), versions

    @property
    def looked_in(self) -> str:
        """Where pip looked, as it said ("http://mirror/simple, /opt/wheels"). pip names an index
        only when it is not PyPI, and says nothing of --no-index: with links named alone PyPI may
        or may not have been asked, and the message says so rather than guess."""
        indexes, links = ([line.split(":", 1)[1].strip() for line in self.lines if line.startswith(prefix)]
                          for prefix in LOOKED_IN)
        if indexes:
            return ", ".join(indexes + links)
        if links:
            return "%s (and %s unless pip's no-index is set)" % (", ".join(links), DEFAULT_INDEX)
        return DEFAULT_INDEX

    @property
    def unreachable(self) -> bool:
        return any(sign in line for line in self.lines for sign in UNREACHABLE_SIGNS)


def pip_command(env: "Env") -> "list[str]":
    override = env.get("CUDASWITCH_PIP")
    if override:
        return shlex.split(override)
    if importlib.util.find_spec("pip") is not None:
        return [sys.executable, "-m", "pip"]
    found = which("pip3", env) or which("pip", env)  # never a relative PATH entry's pip (a repo's bin/)
    if found:
        return [found]
    raise PipError("pip is not available to download NVIDIA's wheels; install pip, or set "
                   "CUDASWITCH_PIP to a pip executable")


def download(requirements: "list[str]", dest: str, env: "Env", timeout: float, on_line: "OnLine" = None,
             pre: bool = False) -> "list[str]":
    """`pip download --no-deps` the requirements into dest; returns the wheel paths pip saved.
    on_line(text) receives pip's progress lines (Collecting / Downloading / Processing)."""
    lines = _download(list(requirements), dest, env, timeout, on_line, pre)
    wheels = sorted(os.path.join(dest, n) for n in os.listdir(dest) if n.endswith(".whl"))
    if not wheels:
        raise PipError("pip saved no wheel for %s" % " ".join(requirements), lines)
    return wheels


def offered_versions(package: str, env: "Env", timeout: float) -> PipError:
    """The PipError that says which versions of `package` the index pip uses offers (`versions`,
    lowest first; [] when none or unreachable), where pip looked and whether it could reach it.
    Raises PipError when pip fails another way (not installed, timed out, a broken pip.conf)."""
    with tempfile.TemporaryDirectory(prefix="cudaswitch-list-") as scratch:
        try:
            lines = _download([package + NO_RELEASE_PIN], scratch, env, timeout, None)
        except PipError as exc:
            if exc.versions is None:
                raise
            return exc
    raise PipError("pip did not say which versions of %s there are" % package, lines)


def _download(requirements: "list[str]", dest: str, env: "Env", timeout: float, on_line: "OnLine",
              pre: bool = False) -> "list[str]":
    """`pip download --no-deps` into dest, streamed, killed at the deadline; pip's output lines.
    pip runs in its own session (cudaswitch.run), so killing it takes any helper it started (a
    CUDASWITCH_PIP wrapper, a keyring helper) along, and with a private TMPDIR removed whatever
    happens: pip killed midway leaves its pip-unpack-* and pip-build-tracker-* dirs behind."""
    command = pip_command(env) + ["download", "--no-deps", "--only-binary=:all:", "--progress-bar", "off",
                                  "--disable-pip-version-check", "--no-input", "-d", dest]
    command += (["--pre"] if pre else []) + requirements
    lines: "list[str]" = []

    def take(line: str) -> None:
        lines.append(line)
        if on_line and line.strip().startswith(SHOWN_PREFIXES):
            on_line(line.strip())

    with tempfile.TemporaryDirectory(prefix="cudaswitch-pip-", ignore_cleanup_errors=True) as private:
        result = run(command, env=dict(env, TMPDIR=private, PYTHONUNBUFFERED="1"), timeout=timeout,
                     merge_stderr=True, on_line=take)
    if result.timed_out:
        raise PipError("pip did not finish within %g s" % timeout, lines)
    if result.returncode is None:  # e.g. CUDASWITCH_PIP names a file that is not there
        raise PipError(result.error)
    if result.returncode != 0:
        match = FROM_VERSIONS.search("\n".join(lines))
        versions = None
        if match:
            versions = [v.strip() for v in match.group(1).split(",") if v.strip() and v.strip() != "none"]
        errors = [line.strip() for line in lines if line.strip().startswith("ERROR:")]
        reason = errors[-1][len("ERROR:"):].strip() if errors else "pip exited with %d" % result.returncode
        raise PipError(reason, lines, versions)
    return lines
