"""Entry point and the one error boundary. A fast command (the table says which) runs here without
importing typer; help, completion and the rest go to the typer app made from the same table."""

import os
import sys

from cudaswitch import render
from cudaswitch.cli import table
from cudaswitch.cli.parse import did_you_mean, parse
from cudaswitch.errors import CudaSwitchError, UsageError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from typing import Any

HELP = ("-h", "--help")
TYPER_ONLY = "CUDASWITCH_NO_FAST"  # set: every command goes through typer (tests compare both paths)
COMPLETION = "_CUDASWITCH_COMPLETE"  # click's completion protocol: only typer answers it


def main(argv: "Sequence[str] | None" = None) -> int:
    try:
        return _dispatch(sys.argv[1:] if argv is None else list(argv))
    except KeyboardInterrupt:  # Ctrl-C before the boundary is in place (while importing)
        render.message("cudaswitch: interrupted")
        return 130


run_program = main  # what the console script, init's launcher and `python -m cudaswitch` run


def _dispatch(argv: "list[str]") -> int:
    leading = 0  # -v before the command
    while leading < len(argv) and argv[leading] in table.VERBOSE.names:
        leading += 1
    found = table.find(argv[leading:])
    verbose = bool(leading) or (found is not None and any(w in table.VERBOSE.names for w in _own_words(*found)))
    if found and found[0].fast and not (os.environ.get(TYPER_ONLY) or os.environ.get(COMPLETION)
                                        or any(word in HELP for word in _own_words(*found))):
        return boundary(lambda: _run_fast(found[0], found[1], bool(leading)), verbose)
    return boundary(lambda: _run_typer(argv), verbose)


def _own_words(command: table.Command, args: "list[str]") -> "list[str]":
    """The words that are cudaswitch's: exec's command line may hold --help or -v of its own."""
    if not any(a.nargs == "rest" for a in command.args):
        return args[:args.index("--")] if "--" in args else args
    try:
        rest = parse(command, args)[command.args[-1].dest]
    except UsageError:
        return args
    return args[:len(args) - len(rest)]


def _run_fast(command: table.Command, args: "list[str]", verbose: bool) -> int:
    try:
        values = parse(command, args)
        values["verbose"] = values["verbose"] or verbose
        return call(command, values)
    except UsageError as exc:
        exc.hint = exc.hint or "see `cudaswitch %s --help`" % command.name
        raise


def call(command: table.Command, values: "dict[str, Any]") -> int:
    """Both parsers end here: the handler's return value is the exit status."""
    for arg in command.args:
        if arg.choices and values.get(arg.dest) not in arg.choices:
            raise UsageError("Invalid value for '%s': %r is not one of %s." % (
                arg.name, values.get(arg.dest), ", ".join(repr(c) for c in arg.choices)),
                "see `cudaswitch %s --help`" % command.name)
    return run_handler(command, values)


def run_handler(command: table.Command, values: "dict[str, Any]") -> int:
    module, _, function = command.handler.partition(":")
    handler = getattr(__import__(module, fromlist=[function]), function)
    result = handler(**{name: value for name, value in values.items() if name != "verbose"})
    return result if isinstance(result, int) else 0


def _run_typer(argv: "list[str]") -> int:
    from cudaswitch.cli import app

    try:
        result = app.build(call)(args=argv, prog_name="cudaswitch", standalone_mode=False)
    except SystemExit as exc:
        if exc.code == 1 and type(sys.stdout).__name__ == "PacifyFlushWrapper":
            return 141  # click's answer to a closed pipe (exit 1): what a tool killed by SIGPIPE says
        raise
    except Exception as exc:
        # click's UsageError family and Abort, whether typer uses click or a vendored copy
        names = {cls.__name__ for cls in type(exc).__mro__}
        if "Abort" not in names and not ("UsageError" in names and hasattr(exc, "format_message")):
            raise
        return _usage_line(exc)
    return result if isinstance(result, int) else 0


def boundary(run: "Callable[[], int]", verbose: bool) -> int:
    """The one error boundary: every path's errors become one line and an exit status."""
    try:
        return run()
    except CudaSwitchError as exc:
        if verbose and not isinstance(exc, UsageError):  # a usage error has no traceback worth showing
            raise
        render.message(exc.render())
        return exc.exit_code
    except KeyboardInterrupt:
        render.message("cudaswitch: interrupted")
        return 130
    except BrokenPipeError:  # the reader went away (`| head`, `| true`): nothing is left to say to it
        try:  # stdout to /dev/null: the last flush at exit of what is still buffered for the closed
            null = os.open(os.devnull, os.O_WRONLY)  # pipe then prints no BrokenPipeError of its own
            os.dup2(null, sys.stdout.fileno())
            os.close(null)
        except (OSError, ValueError, AttributeError):
            pass
        return 141  # what a shell tool killed by SIGPIPE reports


def _usage_line(exc: "Any") -> int:
    if type(exc).__name__ == "Abort":
        render.message("cudaswitch: aborted")
        return 130
    ctx = getattr(exc, "ctx", None)
    if ctx is not None and type(exc).__name__ == "NoArgsIsHelpError":
        render.emit_lines([ctx.get_help()])
        return 0
    where = ctx.command_path if ctx is not None else "cudaswitch"
    message, sep, options = exc.format_message().partition(" (Possible options: ")  # click's suggestion
    if sep:
        message += did_you_mean(options.rstrip(")").split(", "))
    error = UsageError(message, "see `%s --help`" % where)
    render.message(error.render())
    return error.exit_code
