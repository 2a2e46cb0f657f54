"""use, off, exec, current, hook-env, init and system: the switching commands."""

import os
import sys

from cudaswitch import render
from cudaswitch.errors import CudaSwitchError, UsageError
from cudaswitch.paths import Paths

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable


def _rerun_with_path(request: str, shell: "str | None", no_verify: bool, strict: bool) -> "str | None":
    """bash and zsh started without PATH (`env -u PATH bash`) keep a default PATH they do not export,
    which this process cannot see: for a plain `eval "$(cudaswitch use X)"` there, code that runs this
    `use` again with it exported and named (the hook's function does the same), else None."""
    from cudaswitch.switch import envdiff, shells

    if "PATH" in os.environ or envdiff.UNEXPORTED_VAR in os.environ:
        return None
    fmt = shell or shells.parent_shell()
    rerun, program = shells.rerunner(fmt), _own_program()
    if not rerun or not program:
        return None
    flags = ["--no-verify"] * bool(no_verify) + ["--strict"] * bool(strict)
    return rerun([program, "use", request, "--shell", fmt] + flags, ["PATH"])


def _renderer(shell: "str | None") -> "Callable[[dict], str]":
    """The output format's render function, checked before any work is done."""
    from cudaswitch.switch import shells

    return shells.renderer(shell or shells.parent_shell())


def use(request: str, shell: "str | None" = None, no_verify: bool = False, strict: bool = False) -> int:
    from cudaswitch.switch import decide

    render_diff = _renderer(shell)
    paths, env = Paths(), dict(os.environ)  # as it is: a missing or empty PATH is what `off` gives back
    reg = decide.load(paths, env)
    switch = decide.use(reg, env, request, driver_runs=_driver_runs(paths, env, reg))
    again = _rerun_with_path(request, shell, no_verify, strict)
    if again:  # the request is known good; the run that sees the shell's PATH reports the verdict
        render.emit_text(again)
        return 0
    text = render_diff(switch.diff)
    report_switch(paths, switch.record, switch.env, no_verify, strict)
    for note in decide.notes(switch):
        render.message("cudaswitch: " + note)
    _emit_switch(text, "use", request)
    return 0


def _emit_switch(text: str, command: str, request: str = "") -> None:
    """The code on stdout; on a terminal (nothing evals it) also a line on stderr on how to apply it."""
    render.emit_text(text)
    if render.stdout_is_terminal():
        import shlex

        from cudaswitch.switch.shells.hints import apply_hint

        args = command + " " + shlex.quote(request) if request else command
        render.message("cudaswitch: " + apply_hint(os.environ, args))


def _driver_runs(paths: "Paths", env: dict, reg: "dict | Callable[[], dict]") -> "Callable[[dict], tuple[bool, str]]":
    """record -> (runs here?, why), from verify/runs_here, asked only when a partial request has a
    choice to make (a warm answer is one cache file read; `reg` may be the registry or its loader)."""
    verdicts: "dict[str, dict]" = {}

    def driver_runs(record: dict) -> "tuple[bool, str]":
        if not verdicts:
            from cudaswitch.verify import runs_here

            records = (reg() if callable(reg) else reg)["records"]
            verdicts.update(runs_here.verdicts(paths, env, records))
        verdict = verdicts.get(record["root"]) or {"runs": "cannot tell", "why": "not asked"}
        return verdict["runs"] != "no", verdict["why"]

    return driver_runs


def report_switch(paths: "Paths", record: dict, new_env: dict, no_verify: bool = False, strict: bool = False) -> None:
    """One short line on stderr: the cached verdict of nvcc, driver and torch for this switch.
    With --strict an error verdict refuses the switch (raised before anything reaches stdout)."""
    if no_verify:
        line, level = "CUDA %s (%s): not verified (--no-verify)" % (record["version"], record["root"]), "info"
    else:  # config `verdict` picks which lines show
        from cudaswitch.verify.quick import verdict_to_show

        level, line = verdict_to_show(paths, record, new_env, strict=strict)
    if level == "error" and strict:
        raise CudaSwitchError("refusing to switch (--strict): " + line)
    if line:
        render.message("cudaswitch: " + line)


def off(shell: "str | None" = None) -> int:
    from cudaswitch.switch import decide

    render_diff = _renderer(shell)
    back = decide.off(dict(os.environ))
    if back is None:
        render.message("cudaswitch: no toolkit was switched in this shell; nothing to undo")
        return 0
    for note in decide.off_notes(dict(os.environ)):
        render.message("cudaswitch: " + note)
    _emit_switch(render_diff(back.diff), "off")
    return 0


def hook_env(shell: "str | None" = None) -> int:
    from cudaswitch.switch import decide

    render_diff = _renderer(shell)
    paths, env = Paths(), dict(os.environ)
    loaded: "list[dict]" = []

    def load() -> dict:  # the registry once: the driver's verdicts below are over the same records
        loaded[:] = loaded or [decide.load(paths, env)]
        return loaded[0]

    record, change = decide.hook_env(load, env, os.getcwd(), driver_runs=_driver_runs(paths, env, load))
    if change:
        text = render_diff(change.diff)
        if record:  # entering a project is a switch too: the same cached verdict line as `use`
            report_switch(paths, record, change.env)
        render.emit_text(text)
    return 0


def current(as_json: bool = False) -> int:
    from cudaswitch.switch import decide

    paths, env = Paths(), dict(os.environ)
    info = decide.current(lambda: decide.load(paths, env), env, os.getcwd())
    if as_json:
        render.emit_json(info, compact=True)
        return 0
    from cudaswitch.switch.active import lines

    if info.get("pending"):  # a pin this shell has not applied: the hints say why (imported only then)
        from cudaswitch.switch.shells.hints import not_applied_note

        render.emit_lines(lines(info, not_applied_note(env)))
    else:
        render.emit_lines(lines(info))
    return 0


def exec_(request: str, cmd: "list[str]") -> int:
    from cudaswitch.switch import decide

    command = cmd[1:] if cmd[:1] == ["--"] else cmd
    if not command:
        raise UsageError("give the command to run: cudaswitch exec REQUEST -- CMD [ARGS...]")
    paths, env = Paths(), dict(os.environ)
    new = decide.use(decide.load(paths, env), env, request).env
    sys.stdout.flush()
    try:
        os.execvpe(command[0], command, new)
    except OSError as exc:  # a shell's statuses: 127 not found, 126 found but not runnable
        error = CudaSwitchError("cannot run %s: %s" % (command[0], exc.strerror))
        error.exit_code = 127 if isinstance(exc, FileNotFoundError) else 126
        raise error from None


def init(shell: str) -> int:
    """The hook for SHELL, naming this very program by absolute path (a launcher shim on PATH, e.g.
    pyenv's, rewrites PATH before cudaswitch reads it), started with Python's -E (it runs in repositories)."""
    from cudaswitch.launcher import isolated_program

    program = isolated_program(_own_program(), Paths())
    if shell == "direnv":  # not a shell hook: the `use_cuda` function for direnvrc
        from cudaswitch.integrations import direnv
        from cudaswitch.switch.shells import bash

        render.emit_text(direnv.direnvrc(bash.quote(program or "cudaswitch")))
        return 0
    from cudaswitch.switch import shells

    hooked = shells.shell(shell)  # a usage error for a name the registry does not have
    render.emit_text(hooked.hook(program) + hooked.completion())
    return 0


def _own_program() -> "str | None":
    """Absolute path of the `cudaswitch` script running now; None under `python -m cudaswitch`."""
    path = os.path.abspath(sys.argv[0]) if sys.argv and sys.argv[0] else ""
    if os.path.basename(path) == "cudaswitch" and os.access(path, os.X_OK):
        return path
    return None


def system(request: str, dry_run: bool = False) -> int:
    from cudaswitch.switch import systemlink

    render.message(systemlink.repoint(request, dry_run))
    return 0
