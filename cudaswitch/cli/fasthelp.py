"""Help pages rendered from the command table without importing typer (~66 ms of a 20 ms
command). The text is the one the typer app prints for the same table: click's own layout rules
(usage line, paragraphs re-wrapped to the terminal width capped at 80, definition lists with a
first column of at most 30, the "Examples" block kept as written) are followed here, and
tests/test_help_pages.py compares both for every page. Only a plain `cudaswitch [PATH] --help`
comes here; any other command line with --help in it is typer's to answer.

The strings both paths share (the app's own help, --version's, the epilog) live here, and
cli/app.py takes them from this module."""

import os
import sys

from cudaswitch.cli import table

HELP_WORDS = ("-h", "--help")
APP_HELP = "Find, switch and verify CUDA toolkits. " + table.DOCS
VERSION_HELP = "Print cudaswitch's version and exit."
HELP_HELP = "Show this message and exit."
MAX_WIDTH, MIN_WIDTH, COLUMN_MAX, COLUMN_GAP = 80, 50, 30, 2


def epilog(command):
    """Examples as written (click's \\b keeps a paragraph from being re-wrapped)."""
    examples = "\b\nExamples:\n" + "\n".join("  " + e for e in command.examples)
    return examples + "\n\n" + table.COMMAND_DOCS


def page(words):
    """The help page `cudaswitch WORDS` prints, or None where typer must answer: WORDS is empty,
    a help option alone, or a command's or group's path followed by one help option."""
    if not words:
        return _app_page()
    if words[-1] not in HELP_WORDS:
        return None
    path = tuple(words[:-1])
    if not path:
        return _app_page()
    command = next((c for c in table.COMMANDS if c.path == path), None)
    if path[0] in table.GROUPS and len(path) == 1:
        return _group_page(path[0], command)
    return _command_page(command) if command is not None else None


def _app_page():
    options = [("-v, --verbose", table.VERBOSE.help), ("--version", VERSION_HELP), ("-h, --help", HELP_HELP)]
    return _render("cudaswitch", "[OPTIONS] COMMAND [ARGS]...", APP_HELP, [], options, _top_rows(), None)


def _group_page(name, command):
    """`audit` is a command with subcommands (its options on the group); `config` and `kernel`
    only group theirs."""
    rows = [(c.path[1], c.help) for c in table.COMMANDS if len(c.path) == 2 and c.path[0] == name and not c.hidden]
    if command is None:
        return _render("cudaswitch " + name, "[OPTIONS] COMMAND [ARGS]...", table.GROUPS[name], [],
                       [("-h, --help", HELP_HELP)], rows, None)
    return _render("cudaswitch " + name, "[OPTIONS] COMMAND [ARGS]...", command.help, _argument_rows(command),
                   _option_rows(command), rows, epilog(command))


def _command_page(command):
    pieces = ["[OPTIONS]"] + [_usage_name(arg) for arg in command.args]
    return _render("cudaswitch " + command.name, " ".join(pieces), command.help, _argument_rows(command),
                   _option_rows(command), [], epilog(command))


def _top_rows():
    """The commands in the order the typer app registers them: single commands as the table lists
    them, then the groups (those that are commands themselves first)."""
    singles = [(c.name, c.help) for c in table.COMMANDS
               if len(c.path) == 1 and c.path[0] not in table.GROUPS and not c.hidden]
    own = [c.name for c in table.COMMANDS if len(c.path) == 1 and c.path[0] in table.GROUPS]
    groups = list(own)
    for command in table.COMMANDS:
        if len(command.path) == 2 and command.path[0] not in groups:
            groups.append(command.path[0])
    helps = {c.name: c.help for c in table.COMMANDS}
    return singles + [(name, helps[name] if name in own else table.GROUPS[name]) for name in groups]


def _usage_name(arg):
    name = arg.name if arg.nargs in (1, "rest") else "[%s]" % arg.name
    return name + ("..." if arg.nargs in ("*", "rest") else "")


def _argument_rows(command):
    return [(arg.name, arg.help + ("  [required]" if arg.nargs in (1, "rest") else "")) for arg in command.args]


def _option_rows(command):
    rows = []
    for opt in command.options:
        names = ", ".join(sorted(opt.names, key=lambda name: 1 if name.startswith("--") else 0))
        if opt.kind == "tristate":
            names = "%s / --no-%s" % (names, opt.names[0][2:])
        elif opt.takes_value:
            names += " " + (opt.metavar or ("FLOAT" if opt.kind == "float" else "TEXT"))
        rows.append((names, opt.help))
    return rows + [("-h, --help", HELP_HELP)]


def _render(prog, usage, help_text, arguments, options, commands, epilog_text):
    """click's Command.format_help: usage, help text, Arguments and Options, Commands, epilog."""
    out = _Page(_width())
    out.usage(prog, usage)
    out.text(help_text)
    out.section("Arguments", arguments)
    out.section("Options", options)
    if commands:
        limit = out.width - 6 - max(len(name) for name, _ in commands)
        out.section("Commands", [(name, short_help(text, limit)) for name, text in commands])
    if epilog_text:
        out.text(epilog_text)
    return "".join(out.parts).rstrip("\n") + "\n"


def _width():
    """click's HelpFormatter width: the terminal's columns (COLUMNS first, as shutil reads them),
    at most 80, less 2, at least 50."""
    try:
        columns = int(os.environ.get("COLUMNS", ""))
    except ValueError:
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns
        except (AttributeError, ValueError, OSError):
            columns = 80
    return max(min(columns or 80, MAX_WIDTH) - 2, MIN_WIDTH)


class _Page:
    """The parts of click's HelpFormatter these pages use."""

    def __init__(self, width):
        self.width, self.parts = width, []

    def usage(self, prog, args):
        prefix = "Usage: %s " % prog
        if self.width >= len(prefix) + 20:
            self.parts.append(wrap(args, self.width, prefix, " " * len(prefix)) + "\n")
        else:
            self.parts.append(prefix + "\n" + wrap(args, self.width, " " * 11, " " * 11) + "\n")

    def text(self, text):
        self.parts.append("\n" + wrap_paragraphs(text, self.width, "  ") + "\n")

    def section(self, heading, rows):
        if not rows:
            return
        self.parts.append("\n%s:\n" % heading)
        first = min(max(len(name) for name, _ in rows), COLUMN_MAX) + COLUMN_GAP
        text_width = max(self.width - first - 2, 10)
        for name, text in rows:
            self.parts.append("  " + name)
            if not text:
                self.parts.append("\n")
                continue
            self.parts.append(" " * (first - len(name)) if len(name) <= first - COLUMN_GAP
                              else "\n" + " " * (first + 2))
            lines = wrap_paragraphs(text, text_width, "").splitlines() or [""]
            self.parts.append(lines[0] + "\n" + "".join(" " * (first + 2) + line + "\n" for line in lines[1:]))


def wrap(text, width, first_indent="", later_indent=""):
    import textwrap  # only here: it imports re (~5 ms), which the other fast commands never need

    return textwrap.TextWrapper(width, initial_indent=first_indent, subsequent_indent=later_indent,
                                replace_whitespace=False).fill(text.expandtabs())


def wrap_paragraphs(text, width, indent):
    """click's wrap_text(preserve_paragraphs=True): paragraphs split at blank lines, each keeping
    its own indent; one that starts with a \\b line is kept as written."""
    paragraphs, lines, own = [], [], None
    for line in text.expandtabs().splitlines() + [""]:
        if line:
            if own is None:
                own = len(line) - len(line.lstrip())
                line = line.lstrip()
            lines.append(line)
            continue
        if lines and lines[0].strip() == "\b":
            paragraphs.append(indent + (" " * own) + ("\n" + indent + " " * own).join(lines[1:]))
        elif lines:
            paragraphs.append(wrap(" ".join(lines), width, indent + " " * own, indent + " " * own))
        lines, own = [], None
    return "\n\n".join(paragraphs)


def short_help(text, limit):
    """click's make_default_short_help: the first sentence when it fits in `limit`, else as many
    words as fit followed by '...'."""
    words = text.split("\n\n")[0].split()
    total = 0
    for index, word in enumerate(words):
        total += len(word) + (index > 0)
        if total > limit:
            break
        if word.endswith("."):
            return " ".join(words[:index + 1])
        if total == limit and index != len(words) - 1:
            break
    else:
        return " ".join(words)
    total += 3
    while index > 0:
        total -= len(words[index]) + (index > 0)
        if total <= limit:
            break
        index -= 1
    return " ".join(words[:index]) + "..."
