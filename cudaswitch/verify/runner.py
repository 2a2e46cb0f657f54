"""Run a helper script in another interpreter (the user's Python, or ours for ctypes probes): with a
timeout and its own process group, so a hung import is killed with all it started; output framed by
a random marker, so whatever else the process prints is ignored."""

import os

from cudaswitch.pathsearch import which

TYPE_CHECKING = False
if TYPE_CHECKING:
    from cudaswitch.toolkit import Env

PROBE_LOG = "CUDASWITCH_PROBE_LOG"  # tests: probe scripts append one line per run to this file


def find_python(env: "Env", explicit: "str | None" = None, configured: "str | None" = None) -> "str | None":
    """The Python whose torch matters: --python, else config `python`, else python3 on PATH."""
    for choice in (explicit, configured):
        if choice:
            return choice if "/" in choice else (which(choice, env) or choice)
    return which("python3", env) or which("python", env)


def run_bounded(argv: "list[str]", env: "Env", timeout: float, cwd: "str | None" = None) -> tuple:
    """(returncode, stdout bytes, stderr bytes), or (None, b"", why: str) when it could not run or
    did not finish in `timeout` s. cudaswitch.run gives it a private cwd, a safe PATH, its own session."""
    from cudaswitch.run import run

    result = run(argv, env=env, timeout=timeout, cwd=cwd)
    if result.returncode is None:
        return None, b"", result.error
    return result.returncode, result.stdout, result.stderr


def run_framed(argv: "list[str]", env: "Env", timeout: float, cwd: "str | None" = None) -> tuple:
    """(payload dict | None, error str | None) from a script printing MARKER<json>MARKER."""
    marker = "@@cudaswitch-%s@@" % os.urandom(6).hex()
    code, out, err = run_bounded(argv + [marker], env, timeout, cwd)
    if code is None:
        return None, err
    program, text = argv[0], out.decode("utf-8", "replace")
    end = text.rfind(marker)
    start = text.rfind(marker, 0, end) if end > 0 else -1
    if start < 0:
        tail = [l for l in err.decode("utf-8", "replace").splitlines() if l.strip()]
        reason = tail[-1].strip() if tail else "no output"
        return None, "%s exited with %s before reporting: %s" % (program, code, reason[:300])
    import json  # ~7 ms (re, enum): only for a child's report, not for a cached one

    try:
        return json.loads(text[start + len(marker):end]), None
    except ValueError:
        return None, "%s printed a report that is not JSON" % program


def run_script(python: str, script: str, args: "list[str]", env: "Env", timeout: float) -> tuple:
    """run_framed of a verify/ script as `-c` source: the user's interpreter has no cudaswitch to import it from."""
    with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), script), encoding="utf-8") as handle:
        return run_framed([python, "-c", handle.read(), *args], env, timeout)

