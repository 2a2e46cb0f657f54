"""The one place that prints: JSON to stdout, tables to stdout, messages to stderr."""

import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable


def emit_text(text: str) -> None:
    """Text on stdout exactly as rendered, as the bytes the environment holds: a PATH entry that is not
    UTF-8 arrives as a lone surrogate, which a strict UTF-8 stdout refuses with a traceback."""
    buffer = getattr(sys.stdout, "buffer", None)
    if buffer is None:  # a replaced stdout (a test's capture) takes text
        sys.stdout.write(text)
        return
    sys.stdout.flush()
    buffer.write(os.fsencode(text))
    buffer.flush()


def escape_surrogates(text: str) -> str:
    """JSON text with lone surrogates written as \\udcXX escapes: valid UTF-8 JSON, and
    json.loads + os.fsencode give back the original bytes."""
    if text.isascii():
        return text
    return "".join("\\u%04x" % ord(c) if "\ud800" <= c <= "\udfff" else c for c in text)


def emit_json(data: object, compact: bool = False) -> None:
    """Indented on a terminal; one line into a pipe or a file, as gh does (json's C encoder cannot
    indent, the pure-Python one is 4x slower). compact = no spaces, for JSON-lines collectors."""
    import json  # here, not at the top: `list` without --json runs on the fast path (~7 ms for json)

    if compact:
        text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    elif stdout_is_terminal():
        text = json.dumps(data, indent=2, ensure_ascii=False)
    else:
        text = json.dumps(data, ensure_ascii=False)
    emit_json_text(text)


def emit_json_text(text: str) -> None:
    """JSON already rendered (one line, non-ASCII as is), written the way emit_json writes."""
    emit_text(escape_surrogates(text) + "\n")


def stdout_is_terminal() -> bool:
    try:
        return sys.stdout.isatty()
    except (AttributeError, ValueError):  # a replaced or closed stdout
        return False


def emit_lines(lines: "Iterable[str]") -> None:
    emit_text("".join(line + "\n" for line in lines))


# Words that open a line as its label ("FAIL  ", "-> ", "cause: "): continuation lines start under
# the text after them, so a wrapped check or hint still reads as one item of the list.
LABEL_MARKS = frozenset({"ok", "info", "WARN", "FAIL", "->", "-", "*"})
MAX_LABEL = 16  # a first word longer than this is prose, not a label
PROSE_INDENT = 4


def emit_prose(lines: "Iterable[str]") -> None:
    """Lines for people wrapped at the terminal's width (COLUMNS when set) when stdout is a terminal,
    written whole into a pipe or a file (one line per item for grep and logs)."""
    from cudaswitch.tables import terminal_width

    width = terminal_width(minimum=1) if stdout_is_terminal() else None
    if width is None:
        emit_lines(lines)
        return
    emit_lines([part for line in lines for part in wrap_prose(line, width)])


def wrap_prose(line: str, width: int) -> "list[str]":
    """`line` in lines of at most `width` columns, broken at spaces only (a word wider than the line is
    cut); continuation lines hang under the text after the line's label."""
    if len(line) <= width:
        return [line]
    import textwrap

    label, hang = _hanging(line, width)
    wrapper = textwrap.TextWrapper(width=width, initial_indent=label, subsequent_indent=hang,
                                   break_long_words=False, break_on_hyphens=False)
    parts = wrapper.wrap(line[len(label):])
    if any(len(part) > width for part in parts):
        wrapper.break_long_words = True
        parts = wrapper.wrap(line[len(label):])
    return parts or [line]


def _hanging(line: str, width: int) -> "tuple[str, str]":
    """(the indentation with the label and the blanks after it, the continuation indent); PROSE_INDENT
    further in when there is no label or hanging would leave less than half the line."""
    text = line.lstrip(" ")
    indent = line[:len(line) - len(text)]
    word, _, rest = text.partition(" ")
    if rest and len(word) <= MAX_LABEL and (word in LABEL_MARKS or word.endswith(":")):
        label = indent + word + " " + rest[:len(rest) - len(rest.lstrip(" "))]
        if len(label) <= width // 2:
            return label, " " * len(label)
        return label, indent + " " * PROSE_INDENT
    return indent, indent + " " * PROSE_INDENT


def iec_size(num: float) -> str:
    """Bytes in IEC units, the one unit cudaswitch shows sizes in: 1.2 GiB, 288 MiB, 12 KiB."""
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if num >= scale:
            value = num / scale
            return ("%.1f %s" if value < 10 else "%.0f %s") % (value, unit)
    return "%d B" % num


def counted(count: int, noun: str, plural: "str | None" = None) -> str:
    """"1 report", "2 reports": a count with its noun in the number it takes (no "report(s)")."""
    return "%d %s" % (count, noun if count == 1 else (plural or noun + "s"))


def message(text: str) -> None:
    sys.stderr.write(text + "\n")


def table(rows: "list[list[str]]", headers: "list[str]", wide: bool = False, shorten: "tuple[int, ...]" = (),
          spill: "tuple[int, ...]" = (), styles: "list[list[str | None]] | None" = None) -> None:
    """An aligned table fitted to the terminal (cudaswitch.tables); colour only on a terminal."""
    from cudaswitch import tables

    emit_lines(tables.layout(headers, rows, tables.terminal_width(wide), shorten, spill, styles,
                             tables.colour_enabled()))


LIST_STATUS_STYLE = {"ok": "green", "incomplete": "yellow", "broken": "bold red"}
# The DRIVER cell: one word, so a script splitting on blanks keeps its columns ("cannot tell" in JSON).
TABLE_RUNS = {"ok": "ok", "minor-compat": "minor-compat", "compat": "compat", "no": "no"}
LIST_RUNS_STYLE = {"ok": "green", "minor-compat": "yellow", "compat": "yellow", "no": "bold red"}


def version_name(item: dict) -> str:
    """A toolkit's version as install names it: the release NVIDIA's version.json gives (13.1.2),
    then nvcc's own (13.1.115), so one toolkit does not go by two unrelated names."""
    version = item["version"] or "?"
    release = (item.get("version_json") or {}).get("cuda") or ""
    if release.count(".") != 2 or release == version or not release.startswith(version.rsplit(".", 1)[0] + "."):
        return version
    return "%s (%s%s)" % (release, "nvcc " if (item.get("components") or {}).get("nvcc") else "", version)


def toolkit_table(items: "list[dict]", searched: str = "", wide: bool = False) -> None:
    """`list` as a human reads it: one line per toolkit, problems indented below; when there is
    none, where cudaswitch looked (`searched`, from the registry's source order)."""
    from cudaswitch import tables

    rows = []
    for item in items:
        mark = ("*" if item["active"] else " ") + ("d" if item["default"] else " ")
        runs = TABLE_RUNS.get((item.get("runs_here") or {}).get("runs") or "", "unknown")
        rows.append([mark, version_name(item), item["status"], runs, ",".join(item["sources"]), item["root"]])
    if not rows:
        message("cudaswitch: no CUDA toolkits found; searched " + searched)
        return
    styles = [[None, None, LIST_STATUS_STYLE.get(item["status"]), LIST_RUNS_STYLE.get(row[3]), None, None]
              for item, row in zip(items, rows)]
    table(rows, ["", "VERSION", "STATUS", "DRIVER", "SOURCES", "ROOT"], wide, shorten=(4, 5), spill=(5, 4),
          styles=styles)
    width = tables.terminal_width(wide, sys.stderr)
    for item in items:
        here = item.get("runs_here") or {}
        for problem in item["problems"] + ([here["why"]] if here.get("runs") == "no" else []):
            message("\n".join(tables.wrap(tables.printable("%s: %s" % (item["root"], problem)), width)))
    legend = (["* active in this shell"] if any(i["active"] for i in items) else []) + \
        (["d default"] if any(i["default"] for i in items) else [])
    if legend and stdout_is_terminal():  # it explains the marks a person sees; a pipe or a file reads none
        message(", ".join(legend))
