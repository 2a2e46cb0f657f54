"""Hints that match the shell they are read in: whether the hook (and its `cudaswitch` shell
function) is loaded, which shell it is, and what made the current toolkit active (an explicit
`use`, a project file, the global default). A hint that names a command the shell cannot run as
written, or one that does nothing there (`off` where a project file re-applies), misleads.

The hook's shell function tells the program it is there: it runs the program with
CUDASWITCH_HOOK set to the shell's name (only for that one command; nothing is exported)."""

import os

HOOK_VAR = "CUDASWITCH_HOOK"
HOOK_SHELLS = ("bash", "zsh", "fish")


def hook_shell(env) -> str | None:
    """The shell whose cudaswitch function ran this command, or None (no hook loaded)."""
    value = env.get(HOOK_VAR)
    return value if value in HOOK_SHELLS else None


def switch_command(env, args: str) -> str:
    """How to run `cudaswitch use ARGS` / `off` so that it changes this shell."""
    if hook_shell(env):
        return "cudaswitch %s" % args
    from cudaswitch.switch import shells

    if shells.parent_shell() == "fish":
        return "cudaswitch %s | source" % args
    return 'eval "$(cudaswitch %s)"' % args


def not_applied_note(env) -> str:
    """Why a project file's toolkit is not in this shell's environment."""
    if hook_shell(env):
        return "not applied yet: the hook applies it at the next prompt"
    from cudaswitch.switch import shells

    shell = shells.parent_shell()
    init = "cudaswitch init fish | source" if shell == "fish" else 'eval "$(cudaswitch init %s)"' % (
        shell if shell in HOOK_SHELLS else "bash")
    return "not applied in this shell: the hook is not loaded (`%s`)" % init


def use_hint(env, request: str) -> str:
    return "use it with: %s" % switch_command(env, "use " + request)


def leave_active(env, state, cwd: str) -> str:
    """What stops this shell using its toolkit, by what made it active: `off` undoes an explicit
    `use`, but a project file or the default applies again at the next prompt."""
    origin = (state or {}).get("origin")
    if origin == "project":
        where = os.path.dirname(state.get("file") or "") or cwd
        return "name another version in %s (`cudaswitch local VERSION` in %s) or leave that directory" % (
            state.get("file"), where)
    if origin == "global":
        return "pick another default with `cudaswitch global VERSION` (or `cudaswitch global --unset`)"
    text = "run `%s`" % switch_command(env, "off")
    project = _project_file(cwd)
    if project:
        text += " (%s applies here after `off`)" % project
    return text


def after_removing_active(env, state, cwd: str) -> str:
    text = "it was active in this shell: " + leave_active(env, state, cwd)
    if (state or {}).get("origin") not in ("project", "global"):
        text += ", or `%s`" % switch_command(env, "use VERSION")
    return text


def _project_file(cwd):
    from cudaswitch.switch import projectfile

    try:
        found = projectfile.find(cwd)
    except OSError:
        return None
    return found[0] if found else None
