"""Entry point. `use`, `off`, `hook-env`, `current`, `exec` and `list` run here without importing
typer, rich, packaging, or json but for --json output (DESIGN.md budgets: `use` has ~13 ms beyond
interpreter start); every other command, and any `--help`, goes to the typer app in cli.py."""

import os
import sys

from cudaswitch import render
from cudaswitch.errors import CudaSwitchError, UsageError

FLAGS = {"--no-verify", "--strict", "--json", "--verbose", "-v"}
VALUED = {"--shell", "--python"}


def parse(args, flags=FLAGS):
    """(positionals, options) for the fast commands: flags, `--opt value`, `--opt=value`."""
    positionals, options = [], {}
    args = list(args)
    while args:
        arg = args.pop(0)
        name, eq, value = arg.partition("=")
        if name in VALUED:
            if not eq:
                if not args:
                    raise UsageError("%s needs a value" % name)
                value = args.pop(0)
            options[name] = value
        elif arg in flags:
            options[arg] = True
        elif arg.startswith("-") and arg != "-":
            raise UsageError("unknown option %s" % arg)  # main() adds which command's --help
        else:
            positionals.append(arg)
    return positionals, options


def _paths():
    from cudaswitch.paths import Paths

    return Paths()


def _renderer(options):
    """The output format's render function, checked before any work is done."""
    from cudaswitch import shells

    return shells.renderer(options.get("--shell") or shells.parent_shell())


def _no_positionals(positionals, command):
    if positionals:
        raise UsageError("%s takes no arguments, got %r" % (command, positionals[0]))


def cmd_use(args):
    from cudaswitch import switch

    positionals, options = parse(args)
    if len(positionals) != 1:
        raise UsageError("use takes one REQUEST, e.g. `cudaswitch use 12.4`")
    render_diff = _renderer(options)
    paths, env = _paths(), dict(os.environ)
    reg = switch.load(paths, env)
    record, diff = switch.use(reg, env, positionals[0])
    text = render_diff(diff)
    _report_switch(paths, record, applied(env, diff), options)
    render.emit_text(text)
    return 0


def applied(env, diff):
    new = dict(env)
    new.update(diff["set"])
    for name in diff["unset"]:
        new.pop(name, None)
    return new


def _report_switch(paths, record, new_env, options):
    """One short line on stderr: the cached verdict of nvcc, driver and torch for this switch.
    With --strict an error verdict refuses the switch (raised before anything reaches stdout)."""
    if options.get("--no-verify"):
        line, level = "CUDA %s (%s): not verified (--no-verify)" % (record["version"], record["root"]), "info"
    else:
        from cudaswitch.verify.quick import verdict_for_use

        level, line = verdict_for_use(paths, record, new_env, timeout=None)
    if level == "error" and options.get("--strict"):
        raise CudaSwitchError("refusing to switch (--strict): " + line)
    render.message("cudaswitch: " + line)


def cmd_off(args):
    from cudaswitch import switch

    positionals, options = parse(args)
    _no_positionals(positionals, "off")
    render_diff = _renderer(options)
    diff = switch.off(dict(os.environ))
    if diff is None:
        render.message("cudaswitch: no toolkit was switched in this shell; nothing to undo")
        return 0
    render.emit_text(render_diff(diff))
    return 0


def cmd_hook_env(args):
    from cudaswitch import switch

    positionals, options = parse(args)
    _no_positionals(positionals, "hook-env")
    render_diff = _renderer(options)
    paths, env = _paths(), dict(os.environ)
    record, diff = switch.hook_env(lambda: switch.load(paths, env), env, os.getcwd())
    if diff:
        text = render_diff(diff)
        if record:  # entering a project is a switch too: the same cached verdict line as `use`
            _report_switch(paths, record, applied(env, diff), options)
        render.emit_text(text)
    return 0


def cmd_current(args):
    from cudaswitch import switch

    positionals, options = parse(args)
    _no_positionals(positionals, "current")
    paths, env = _paths(), dict(os.environ)
    info = switch.current(lambda: switch.load(paths, env), env, os.getcwd())
    if options.get("--json"):
        render.emit_json(info, compact=True)
    elif info["root"] is None:
        render.emit_lines(["none (no toolkit active, no project file, no default)"])
    else:
        why = info["reason"] + (" " + info["file"] if info.get("file") else "")
        if info.get("applied") is False:
            from cudaswitch.hints import not_applied_note

            why += " (%s)" % not_applied_note(env)
        render.emit_lines(["%s %s (%s)" % (info["version"], info["root"], why)])
    return 0


def cmd_exec(args):
    """exec REQUEST -- CMD ...: replace this process with CMD in the switched environment."""
    from cudaswitch import switch

    if "--" not in args:
        raise UsageError("usage: cudaswitch exec REQUEST -- CMD [ARGS...]")
    split = args.index("--")
    positionals, _ = parse(args[:split])
    command = args[split + 1:]
    if len(positionals) != 1 or not command:
        raise UsageError("usage: cudaswitch exec REQUEST -- CMD [ARGS...]")
    paths, env = _paths(), dict(os.environ)
    reg = switch.load(paths, env)
    record, diff = switch.use(reg, env, positionals[0])
    new = applied(env, diff)
    sys.stdout.flush()
    try:
        os.execvpe(command[0], command, new)
    except OSError as exc:
        raise CudaSwitchError("cannot run %s: %s" % (command[0], exc.strerror)) from None


def cmd_list(args):
    """list [--json] [--refresh] [--wide]: same output as the typer command in cli.py, which serves --help."""
    from cudaswitch import core, registry

    positionals, options = parse(args, flags={"--json", "--refresh", "--wide", "--verbose", "-v"})
    _no_positionals(positionals, "list")
    paths, env = _paths(), dict(os.environ)
    reg = registry.load(paths, env, refresh=bool(options.get("--refresh")))
    items = core.list_items(reg, env)
    if options.get("--json"):
        render.emit_json(items)
    elif items:
        render.toolkit_table(items, wide=bool(options.get("--wide")))
    else:
        from cudaswitch.sources import searched  # only when nothing was found: it imports every source

        render.toolkit_table(items, searched(reg["source_order"]))
    return 0


HOOK_SHELLS = ("bash", "zsh", "fish")


def cmd_init(args):
    """Print the hook for SHELL: a real file under shell/, shipped in the package, after a line that
    names this very program by absolute path (a launcher shim on PATH, e.g. pyenv's, rewrites PATH
    before cudaswitch reads it, and that would leak into every `use`)."""
    positionals, _ = parse(args)
    if len(positionals) != 1 or positionals[0] not in HOOK_SHELLS:
        raise UsageError("usage: cudaswitch init bash|zsh|fish")
    from importlib.resources import files

    shell = positionals[0]
    program = _own_program()
    if program:
        from cudaswitch.shells import bash, fish, zsh

        quote = {"bash": bash.quote, "zsh": zsh.quote, "fish": fish.quote}[shell]
        assign = "set -g __cudaswitch_bin %s\n" if shell == "fish" else "__cudaswitch_bin=%s\n"
        render.emit_text(assign % quote(program))
    render.emit_text(files("cudaswitch.shell").joinpath("cudaswitch." + shell).read_text())
    return 0


def _own_program():
    """Absolute path of the `cudaswitch` script running now; None under `python -m cudaswitch`."""
    path = os.path.abspath(sys.argv[0]) if sys.argv and sys.argv[0] else ""
    if os.path.basename(path) == "cudaswitch" and os.access(path, os.X_OK):
        return path
    return None


FAST = {"use": cmd_use, "off": cmd_off, "hook-env": cmd_hook_env, "current": cmd_current, "exec": cmd_exec,
        "init": cmd_init, "list": cmd_list}


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    own_args = argv[1:argv.index("--")] if "--" in argv else argv[1:]  # exec's CMD may take --help
    if argv and argv[0] in FAST and "--help" not in own_args and "-h" not in own_args:
        try:
            return FAST[argv[0]](argv[1:])
        except CudaSwitchError as exc:
            if isinstance(exc, UsageError) and exc.hint is None:
                exc.hint = "see `cudaswitch %s --help`" % argv[0]
            if "--verbose" in own_args or "-v" in own_args:  # as cli.run; exec's CMD keeps its own -v
                raise
            render.message(exc.render())
            return exc.exit_code
    from cudaswitch.cli import run

    return run(argv)
