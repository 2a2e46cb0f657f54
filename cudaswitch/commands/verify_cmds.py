"""verify / doctor / explain: thin commands over cudaswitch.verify (core returns data)."""

import os

from cudaswitch import render
from cudaswitch.commands import load_registry


def _module_to_load(record: dict, request: "str | None") -> "str | None":
    """The module `use REQUEST` would load (`module:X`), so verify judges that environment too."""
    if request in (None, "current"):
        return None
    from cudaswitch.request import ToolkitRequest
    from cudaswitch.switch.decide import module_to_load

    return module_to_load(record, ToolkitRequest.parse(request, allow_path=True), "shell")


def check_options(python: "str | None" = None, timeout: "float | None" = None) -> None:
    """Bad options are one line and exit 2, before anything runs."""
    from cudaswitch.errors import UsageError

    if timeout is not None and not timeout > 0:
        raise UsageError("--timeout must be a number of seconds above 0, not %g" % timeout)
    if python and not _executable(python):
        raise UsageError("--python %s: no such executable" % python, "give the path of a Python interpreter")


def _executable(program: str) -> bool:
    """A path that can be executed, or a bare name found on PATH (as the probe will run it)."""
    if "/" in program:
        return os.path.isfile(program) and os.access(program, os.X_OK)
    from cudaswitch.pathsearch import which

    return which(program, os.environ) is not None


def _emit(report: dict, as_json: bool, group_key: "str | None" = None) -> None:
    from cudaswitch.verify import present

    if as_json:
        render.emit_json(report)
        return
    render.emit_prose([present.toolkit_line(report.get("toolkit"))]
                      + present.check_lines(report["checks"], group_key)
                      + [present.summary_line(report["checks"])])


def verify(request: "str | None" = None, python: "str | None" = None, compile_: bool = False,
           timeout: "float | None" = None, as_json: bool = False) -> int:
    """Judge the environment `use REQUEST` would give this shell: the same switch plan, origin
    included, so the report's "environment" is what `use --shell json` prints."""
    from cudaswitch.switch.decide import switch_plan
    from cudaswitch.switch.lookup import Lookup
    from cudaswitch.verify.toolkitreport import verify_toolkit

    check_options(python, timeout)
    paths, reg = load_registry()
    record = Lookup(reg, os.environ).current(request)
    env = dict(os.environ)
    switch = switch_plan(reg, env, record, "shell", load_module=_module_to_load(record, request), paths=paths)
    report = verify_toolkit(paths, reg, record, switch.env, python=python, smoke_compile=compile_, timeout=timeout,
                            current_env=env)
    report["environment"] = switch.public()
    _emit(report, as_json)
    return _exit_code(report)


def doctor(as_json: bool = False, python: "str | None" = None, timeout: "float | None" = None,
           collective: bool = False) -> int:
    from cudaswitch.verify.toolkitreport import doctor as run_doctor

    check_options(python, timeout)
    paths, reg = load_registry()
    report = run_doctor(paths, reg, dict(os.environ), python=python, timeout=timeout, collective=collective)
    _emit(report, as_json, group_key="layer")
    return _exit_code(report)


def _exit_code(report: dict) -> int:
    """1 when an error was printed (a CI step or a health check stops); warnings and infos pass."""
    return 1 if any(c["level"] == "error" for c in report["checks"]) else 0


def explain(text: "str | None" = None, as_json: bool = False, python: "str | None" = None,
            timeout: "float | None" = None) -> int:
    """TEXT, or with `-` or no TEXT the error text piped to stdin (its last MiB: a traceback's end)."""
    import sys

    from cudaswitch.verify import present
    from cudaswitch.verify.explain import explain as run_explain, text_to_explain, version_notes

    check_options(python, timeout)
    text = text_to_explain(text, sys.stdin, render.message)
    paths, reg = load_registry()
    result = run_explain(text, paths, reg, dict(os.environ), python=python, timeout=timeout)
    if as_json:
        render.emit_json(result)
    else:
        render.emit_prose(present.explain_lines(result) + version_notes(result))
    return 0 if result["matches"] else 1
