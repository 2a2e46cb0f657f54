"""Typer entries of the switching commands. `use`, `off`, `exec`, `current`, `hook-env` and `init`
normally run in fastpath.py without typer; these definitions give them `--help` and the same
behaviour when reached through the typer app. `local` and `system` live here."""

from typing import List, Optional

import typer

from cudaswitch import render

SHELL_HELP = "bash, zsh, fish, posix, json, dotenv or github (default: the parent shell)"


def _fast(name, args):
    from cudaswitch import fastpath

    raise typer.Exit(fastpath.FAST[name](args))


def use(request: str, shell: Optional[str] = typer.Option(None, help=SHELL_HELP),
        no_verify: bool = typer.Option(False, "--no-verify", help="Skip the verification."),
        strict: bool = typer.Option(False, "--strict", help="Refuse on an error verdict.")):
    """Print the shell code that switches this shell to REQUEST: eval "$(cudaswitch use 12.4)"."""
    _fast("use", [request] + (["--shell", shell] if shell else [])
          + (["--no-verify"] if no_verify else []) + (["--strict"] if strict else []))


def off(shell: Optional[str] = typer.Option(None, help=SHELL_HELP)):
    """Print the code that restores the environment from before cudaswitch."""
    _fast("off", ["--shell", shell] if shell else [])


def exec_(request: str, command: List[str] = typer.Argument(..., help="-- CMD [ARGS...]")):
    """Run CMD with the toolkit (the process is replaced; its exit status is yours)."""
    _fast("exec", [request, "--"] + command)


def current(as_json: bool = typer.Option(False, "--json")):
    """The active toolkit and why: shell, project file, global default or system."""
    _fast("current", ["--json"] if as_json else [])


def hook_env(shell: str = typer.Option(..., help=SHELL_HELP)):
    """Called by the shell hook when the project file changed; prints code or nothing."""
    _fast("hook-env", ["--shell", shell])


def init(shell: str = typer.Argument(..., help="bash, zsh, fish, or direnv (the `use cuda` function for direnvrc)")):
    """Print the hook to load from the shell's rc file."""
    _fast("init", [shell])


def local(request: Optional[str] = typer.Argument(None), unset: bool = typer.Option(False, "--unset")):
    """Write (or remove) .cudaversion in the current directory."""
    from cudaswitch import project_cmds

    render.message(project_cmds.set_local(request, unset))


def system(request: str, dry_run: bool = typer.Option(False, "--dry-run")):
    """Repoint /usr/local/cuda at REQUEST (through update-alternatives where it manages the link)."""
    from cudaswitch import systemlink

    render.message(systemlink.repoint(request, dry_run))


# (function, typer.command arguments): --help text and options come from each function.
COMMANDS = [
    (use, {}),
    (off, {}),
    (exec_, {"name": "exec", "context_settings": {"allow_extra_args": True, "ignore_unknown_options": True}}),
    (current, {}),
    (hook_env, {"name": "hook-env"}),
    (init, {}),
    (local, {}),
    (system, {}),
]



def register(app):
    for function, options in COMMANDS:
        app.command(**options)(function)
