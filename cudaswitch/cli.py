"""The typer app. Commands are thin: parse, call the core, render. One error boundary in run()."""

import os
import sys
from typing import List, Optional

import typer

from cudaswitch import render
from cudaswitch.errors import CudaSwitchError, UsageError

app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                  help="Find, switch and verify CUDA toolkits.")
config_app = typer.Typer(help="The config file.", no_args_is_help=True)
app.add_typer(config_app, name="config")
VERBOSE = {"on": False}


@app.callback()
def _options(verbose: bool = typer.Option(False, "--verbose", "-v", help="Tracebacks on errors.")):
    VERBOSE["on"] = verbose


def _context(refresh=False):
    from cudaswitch import registry
    from cudaswitch.paths import Paths

    paths = Paths()
    return paths, registry.load(paths, dict(os.environ), refresh=refresh)


@app.command("list")
def list_(as_json: bool = typer.Option(False, "--json"), refresh: bool = typer.Option(False, "--refresh"),
          wide: bool = typer.Option(False, "--wide", help="Every value whole: no shortened roots, whatever the width.")):
    """Every toolkit found: version, sources, root, status, active and default."""
    from cudaswitch import fastpath  # runs there without typer; this entry gives it --help

    raise typer.Exit(fastpath.cmd_list((["--json"] if as_json else []) + (["--refresh"] if refresh else [])
                                       + (["--wide"] if wide else [])))


@app.command()
def which(request: Optional[str] = typer.Argument(None), tool: Optional[str] = typer.Argument(None)):
    """Path of a toolkit's root, or of a tool in it (nvcc, ptxas, ...)."""
    from cudaswitch import core

    _, reg = _context()
    render.emit_lines([core.which(reg, os.environ, request, tool)])


@app.command("global")
def global_(request: Optional[str] = typer.Argument(None), unset: bool = typer.Option(False, "--unset")):
    """Set or remove the default toolkit in config.toml."""
    from cudaswitch import core

    paths, reg = _context()
    if unset == (request is not None):
        raise UsageError("give a REQUEST or --unset")
    render.message(core.set_global(paths, reg, request))


@config_app.command("path")
def config_path():
    """Where config.toml lives."""
    from cudaswitch.paths import Paths

    render.emit_lines([Paths().config_file])


def _register_command_groups():
    from cudaswitch.commands import audit_cmds, install_cmds, switch_cmds, verify_cmds

    for module in (switch_cmds, verify_cmds, audit_cmds, install_cmds):
        module.register(app)


_register_command_groups()


def _is_usage_error(exc):
    """click's UsageError family, whether typer uses click or its own vendored copy of it."""
    return any(cls.__name__ == "UsageError" for cls in type(exc).__mro__) and hasattr(exc, "format_message")


def _usage_line(exc):
    ctx = getattr(exc, "ctx", None)
    if ctx is not None and type(exc).__name__ == "NoArgsIsHelpError":
        print(ctx.get_help())
        return 0
    where = ctx.command_path if ctx is not None else "cudaswitch"
    render.message("cudaswitch: error: %s (see `%s --help`)" % (exc.format_message(), where))
    return UsageError.exit_code


def run(argv: Optional[List[str]] = None):
    """The error boundary: CudaSwitchError and usage errors -> one line on stderr and an exit code
    (typer's boxed multi-line errors are not what a script's log should show)."""
    argv = sys.argv[1:] if argv is None else argv
    try:
        result = app(args=argv, prog_name="cudaswitch", standalone_mode=False)
    except typer.Abort:
        render.message("cudaswitch: aborted")
        return 130
    except CudaSwitchError as exc:
        if VERBOSE["on"] or "--verbose" in argv or "-v" in argv:
            raise
        render.message(exc.render())
        return exc.exit_code
    except Exception as exc:
        if not _is_usage_error(exc):
            raise
        return _usage_line(exc)
    return result if isinstance(result, int) else 0
