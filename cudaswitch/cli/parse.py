"""The fast parser: argv -> the handler's keyword arguments, by click's rules (what the typer app does
with the same table), so both paths accept and refuse the same command lines."""

from cudaswitch.errors import UsageError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import Any
    from cudaswitch.cli.table import Command


def parse(command: "Command", argv: "Iterable[str]") -> "dict[str, Any]":
    """{dest: value} for every argument and option of `command` (defaults filled in)."""
    values = {opt.dest: opt.default() for opt in command.options}
    positionals = []
    has_rest = any(arg.nargs == "rest" for arg in command.args)
    words = list(argv)
    while words:
        word = words.pop(0)
        if word.startswith("-") and word not in ("-", "--"):
            _option(command, word, words, values)
            continue
        if word != "--":
            positionals.append(word)
        if word == "--" or has_rest:  # as click without interspersed args: the first positional ends the options
            positionals.extend(words)
            words = []
    values.update(_assign(command, positionals))
    return values


def _option(command: "Command", word: str, words: "list[str]", values: "dict[str, Any]") -> None:
    name, eq, inline = word.partition("=") if word.startswith("--") else (word, "", "")
    negated = name.startswith("--no-") and command.option("--" + name[5:])
    opt = command.option(name) or (negated if negated and negated.kind == "tristate" else None)
    if opt is None:
        import difflib

        names = [n for o in command.options for n in o.names if n.startswith("--")]
        raise UsageError("No such option: %s" % name + did_you_mean(difflib.get_close_matches(name, names)))
    if opt.kind not in ("str", "float"):  # a flag
        if eq:
            raise UsageError("Option '%s' does not take a value." % name)
        values[opt.dest] = not (opt.kind == "tristate" and name.startswith("--no-"))
        return
    if not eq:
        if not words:
            raise UsageError("Option '%s' requires an argument." % name)
        inline = words.pop(0)
    try:
        value: "str | float" = float(inline) if opt.kind == "float" else inline
    except ValueError:
        raise UsageError("Invalid value for '%s': %r is not a valid float." % (name, inline)) from None
    if opt.many:
        values[opt.dest].append(value)
    else:
        values[opt.dest] = value


def _assign(command: "Command", positionals: "list[str]") -> "dict[str, Any]":
    """Positionals onto the arguments in order; too few or too many is a UsageError."""
    values: "dict[str, Any]" = {}
    words = list(positionals)
    for arg in command.args:
        if arg.nargs == "rest":
            values[arg.dest], words = words, []
        elif arg.nargs == "*":  # none given is None, as typer hands it over
            values[arg.dest], words = words or None, []
        elif words:
            values[arg.dest] = words.pop(0)
        elif arg.nargs == 1:
            raise UsageError("Missing argument '%s'." % arg.name)
        else:
            values[arg.dest] = None
    if words:
        raise UsageError("Got unexpected extra argument (%s)" % words[0])
    return values


def did_you_mean(options: "list[str]") -> str:
    """'; did you mean --list?' for the near option names (both parsers say it alike); --help is
    never one: the error already points at it."""
    options = [o for o in options if o != "--help"]
    return "; did you mean %s?" % " or ".join(options) if options else ""
