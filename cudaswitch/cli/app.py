"""The typer app, generated from the command table: `--help`, completion and the commands that need
no fast path; each calls the same handler with the keyword arguments the fast parser gives."""

import inspect
from typing import Any, Callable, List, Optional

import typer

from cudaswitch import __version__
from cudaswitch.cli import table

APP_HELP = "Find, switch and verify CUDA toolkits. " + table.DOCS
VERSION_HELP = "Print cudaswitch's version and exit."
CONTEXT = {"help_option_names": ["-h", "--help"]}
REST_CONTEXT = dict(CONTEXT, allow_interspersed_args=False)
Dispatch = Callable[[table.Command, "dict[str, Any]"], int]


def epilog(command: table.Command) -> str:
    """Examples as written (click's \\b keeps a paragraph from being re-wrapped)."""
    examples = "\b\nExamples:\n" + "\n".join("  " + e for e in command.examples)
    return examples + "\n\n" + table.COMMAND_DOCS


def _completer(arg: "table.Arg | table.Opt") -> Optional[Callable[..., List[str]]]:
    """What TAB offers: the fixed choices, --shell's formats (the shell registry's), a function of
    cli/complete.py (`tools` reads the REQUEST typed before), else nothing (no file names)."""
    choices, name = getattr(arg, "choices", None), arg.complete
    if not (choices or name or arg.dest == "shell"):
        return None

    def complete(ctx: typer.Context, incomplete: str) -> List[str]:
        from cudaswitch.cli import complete as values
        from cudaswitch.switch.shells import FORMATS

        if choices or not name:  # fixed choices, or --shell's formats
            found = choices or FORMATS
        else:
            found = values.tools(ctx.params.get("request")) if name == "tools" else getattr(values, name)()
        return [value for value in found if value.startswith(incomplete)]

    return complete


def _option_parameter(opt: table.Opt) -> inspect.Parameter:
    names = list(opt.names)
    if opt.kind == "tristate":
        names = ["%s/--no-%s" % (opt.names[0], opt.names[0][2:])]
        annotation, default = Optional[bool], None
    elif opt.kind == "flag":
        annotation, default = bool, False  # type: ignore[assignment]
    else:
        base = float if opt.kind == "float" else str
        annotation, default = (Optional[List[base]], None) if opt.many else (Optional[base], None)  # type: ignore[valid-type]
    info = typer.Option(default, *names, help=opt.help, metavar=opt.metavar, show_default=False,
                        autocompletion=_completer(opt))
    return inspect.Parameter(opt.dest, inspect.Parameter.KEYWORD_ONLY, default=info, annotation=annotation)


def _argument_parameter(arg: table.Arg) -> inspect.Parameter:
    annotation: Any = {1: str, "?": Optional[str], "*": Optional[List[str]], "rest": List[str]}[arg.nargs]
    info = typer.Argument(... if arg.nargs in (1, "rest") else None, help=arg.help, metavar=arg.name,
                          show_default=False, autocompletion=_completer(arg))
    return inspect.Parameter(arg.dest, inspect.Parameter.KEYWORD_ONLY, default=info, annotation=annotation)


def _callback(command: table.Command, dispatch: "Dispatch") -> Callable[..., Any]:
    def run(**values: Any) -> Any:
        for opt in command.options:  # typer gives None for an absent repeatable option
            if opt.many and values.get(opt.dest) is None:
                values[opt.dest] = []
        return dispatch(command, values)

    params = [_argument_parameter(a) for a in command.args] + [_option_parameter(o) for o in command.options]
    run.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    run.__name__ = command.path[-1].replace("-", "_")
    run.__doc__ = command.help
    return run


def _add(target: typer.Typer, command: table.Command, dispatch: "Dispatch") -> None:
    context = REST_CONTEXT if any(a.nargs == "rest" for a in command.args) else CONTEXT
    target.command(command.path[-1], help=command.help, epilog=epilog(command), hidden=command.hidden,
                   context_settings=context)(_callback(command, dispatch))


def _version(value: bool) -> None:
    if value:
        from cudaswitch import render

        render.emit_lines(["cudaswitch " + __version__])
        raise typer.Exit(0)


def _no_type_tags() -> None:
    """Arguments' help shows `REQUEST <str>`; the name and its help say more than the type. And
    typer's usage line writes a required argument as `{REQUEST}`, which reads like shell syntax:
    click's own convention (REQUEST required, [REQUEST] optional) is what users know."""
    from typer import core

    if hasattr(core.TyperArgument, "display_type_rich"):
        core.TyperArgument.display_type_rich = lambda self, ctx: None  # type: ignore[method-assign]
    if hasattr(core.TyperArgument, "_usage_display_name"):
        core.TyperArgument._usage_display_name = lambda self: (  # type: ignore[method-assign]
            (self.display_name_raw if self.required else "[%s]" % self.display_name_raw)
            + ("..." if self.nargs != 1 else ""))


def build(dispatch: "Dispatch") -> typer.Typer:
    """The app; each command calls dispatch(command, values) with what the fast parser would give."""
    from typer._completion_classes import completion_init

    _no_type_tags()
    # typer registers its shells' completion answers (the ones the hook's completion functions speak)
    # only when it adds its own --install-completion option, which we leave out: the hook already
    # carries completion that knows REQUESTs, and a second, weaker one would shadow it.
    completion_init()
    app = typer.Typer(no_args_is_help=True, pretty_exceptions_enable=False, context_settings=CONTEXT,
                      rich_markup_mode=None, add_completion=False, help=APP_HELP)

    @app.callback()
    def _global(verbose: bool = typer.Option(False, "--verbose", "-v", help=table.VERBOSE.help),
                version: bool = typer.Option(False, "--version", callback=_version, is_eager=True,
                                             help=VERSION_HELP)) -> None:
        """Find, switch and verify CUDA toolkits."""

    groups = {c.path[0]: _group(app, c, dispatch) for c in table.COMMANDS
              if len(c.path) == 1 and c.path[0] in table.GROUPS}
    for command in table.COMMANDS:
        name = command.path[0]
        if len(command.path) == 2 and name not in groups:  # a group of subcommands only
            groups[name] = typer.Typer(no_args_is_help=True, help=table.GROUPS[name], context_settings=CONTEXT)
            app.add_typer(groups[name], name=name)
        if len(command.path) == 2 or name not in table.GROUPS:
            _add(groups[name] if len(command.path) == 2 else app, command, dispatch)
    return app


def _group(app: typer.Typer, command: table.Command, dispatch: "Dispatch") -> typer.Typer:
    """A command that also has subcommands (`audit`, `audit merge`): its own options on the group."""
    group = typer.Typer(invoke_without_command=True, no_args_is_help=False, context_settings=CONTEXT)
    run = _callback(command, dispatch)

    def callback(ctx: typer.Context, **values: Any) -> Any:
        if ctx.invoked_subcommand is None:
            return run(**values)
        return None

    params = [inspect.Parameter("ctx", inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=typer.Context)]
    callback.__signature__ = inspect.Signature(params + list(inspect.signature(run).parameters.values()))  # type: ignore[attr-defined]
    group.callback(help=command.help, epilog=epilog(command))(callback)
    app.add_typer(group, name=command.path[0])
    return group
