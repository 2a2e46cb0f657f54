"""Hints that match the shell they are read in (is the hook loaded, which shell, what made the
toolkit active): a hint naming a command the shell cannot run, or one that does nothing there,
misleads. The hook's function runs the program with CUDASWITCH_HOOK set to the shell's name."""

import os

from cudaswitch.switch import shells

TYPE_CHECKING = False  # typing's own costs an import on the hot path; mypy reads this name the same
if TYPE_CHECKING:
    from collections.abc import Mapping

HOOK_VAR = "CUDASWITCH_HOOK"


def hook_shell(env: "Mapping[str, str]") -> str | None:
    """The shell whose cudaswitch function ran this command, or None (no hook loaded)."""
    value = env.get(HOOK_VAR)
    return value if value in shells.SHELLS else None


def _parent() -> "shells.Shell":
    """The Shell this command's output is read in (sh and ksh evaluate code as bash does)."""
    name = shells.parent_shell()
    return shells.shell(name if name in shells.SHELLS else "bash")


def switch_command(env: "Mapping[str, str]", args: str) -> str:
    """How to run `cudaswitch use ARGS` / `off` so that it changes this shell."""
    if hook_shell(env):
        return "cudaswitch %s" % args
    return _parent().eval_hint(args)


def not_applied_note(env: "Mapping[str, str]") -> str:
    """Why a project file's toolkit is not in this shell's environment."""
    if hook_shell(env):
        return "not applied yet: the hook applies it at the next prompt"
    shell = _parent()
    return "not applied in this shell: the hook is not loaded (`%s`)" % shell.eval_hint("init " + shell.name)


def apply_hint(env: "Mapping[str, str]", args: str) -> str:
    """`use`/`off` printed to a terminal change nothing: how to make them change this shell."""
    shell = _parent()
    return "this only printed the code; to apply it: `%s`, or load the hook (`%s` in your rc file)" % (
        shell.eval_hint(args), shell.eval_hint("init " + shell.name))


def leave_active(env: "Mapping[str, str]", state: dict | None, cwd: str) -> str:
    """What stops this shell using its toolkit, by what made it active: `off` undoes an explicit
    `use`, but a project file or the default applies again at the next prompt."""
    state = state or {}
    origin = state.get("origin")
    if origin == "project":
        where = os.path.dirname(state.get("file") or "") or cwd
        return "name another version in %s (`cudaswitch local VERSION` in %s) or leave that directory" % (
            state.get("file"), where)
    if origin == "global":
        return "pick another default with `cudaswitch global VERSION` (or `cudaswitch global --unset`)"
    from cudaswitch.switch import projectfile

    text = "run `%s`" % switch_command(env, "off")
    try:
        found = projectfile.find(cwd)
    except OSError:
        found = None
    return text + (" (%s applies here after `off`)" % found[0] if found else "")


def after_removing_active(env: "Mapping[str, str]", state: dict | None, cwd: str) -> str:
    text = "it was active in this shell: " + leave_active(env, state, cwd)
    if (state or {}).get("origin") not in ("project", "global"):
        text += ", or `%s`" % switch_command(env, "use VERSION")
    return text

