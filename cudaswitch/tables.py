"""Plain-text tables that fit the terminal (no rich: `list` runs on the fast path). Base layer.

Laid out in this order until it fits: every column on one line; the `shorten` columns shortened
in the middle, down to MIN_SHORTENED; the `spill` columns moved onto indented lines under their
row. Other columns are never cut; no width (a pipe, `--wide`) means every value whole. Control
characters and undecodable bytes are escaped, so a root holding a newline cannot break the table."""

import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import TextIO

MIN_SHORTENED = 24
MIN_WIDTH = 40  # narrower than this, values shortened to fit would say nothing: let the terminal wrap
GAP = "  "
INDENT = "    "
COLOURS = {"green": "32", "yellow": "33", "red": "31", "bold red": "1;31", "dim": "2", "bold": "1"}
_ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t", "\x1b": "\\e"}


def printable(text: str) -> str:
    """`text` with control characters, and bytes that were not valid UTF-8, written as escapes."""
    text = str(text)
    if text.isprintable():
        return text
    out = []
    for char in text:
        if char in _ESCAPES:
            out.append(_ESCAPES[char])
        elif "\udc80" <= char <= "\udcff":  # a byte that was not UTF-8 (surrogateescape)
            out.append("\\x%02x" % (ord(char) - 0xDC00))
        elif not char.isprintable() and char != " ":
            out.append("\\x%02x" % ord(char) if ord(char) < 0x100 else "\\u%04x" % ord(char))
        else:
            out.append(char)
    return "".join(out)


def terminal_width(wide: bool = False, stream: "TextIO | None" = None, minimum: int = MIN_WIDTH) -> "int | None":
    """Columns to fit: None with --wide or off a terminal without COLUMNS; else COLUMNS, else the
    terminal's width; never below `minimum`."""
    if wide:
        return None
    columns = os.environ.get("COLUMNS", "")
    if columns.isdigit() and int(columns) > 0:
        return max(int(columns), minimum)
    stream = stream or sys.stdout
    try:
        if stream.isatty():
            size = os.get_terminal_size(stream.fileno()).columns
            # 0: a pty that never had a size set (script, some CI runners): no limit known
            return max(size, minimum) if size > 0 else None
    except (OSError, ValueError, AttributeError):
        pass
    return None


def colour_enabled(stream: "TextIO | None" = None) -> bool:
    """Colour on a terminal only, never with NO_COLOR set (no-color.org) or TERM=dumb."""
    stream = stream or sys.stdout
    if os.environ.get("NO_COLOR") or os.environ.get("TERM") == "dumb":
        return False
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def shorten_middle(text: str, width: int) -> str:
    """'/very/long/…/cuda-13.1': keeps both ends, where paths differ most."""
    if len(text) <= width:
        return text
    if width <= 1:
        return text[:width]
    head = (width - 1) // 2
    return text[:head] + "…" + text[len(text) - (width - 1 - head):]


def layout(headers: "list[str]", rows: "list[list[str]]", width: "int | None" = None, shorten: "tuple[int, ...]" = (),
           spill: "tuple[int, ...]" = (), styles: "list[list[str | None]] | None" = None,
           colour: bool = False) -> "list[str]":
    """The table's lines. `rows` hold strings; `styles[r][c]` names a colour from COLOURS; `spill`
    is in the order columns leave the line when it does not fit."""
    headers = [printable(h) for h in headers]
    rows = [[printable(c) for c in row] for row in rows]
    inline = list(range(len(headers)))
    widths = _fit(headers, rows, inline, width, shorten)
    for column in spill:
        if widths is not None:
            break
        inline.remove(column)
        widths = _fit(headers, rows, inline, width, shorten)
    widths = widths or _natural(headers, rows, inline)
    spilled = [i for i in range(len(headers)) if i not in inline]
    lines = [_line([headers[i] for i in inline], widths, None, colour)]
    for r, row in enumerate(rows):
        style = [(styles[r][i] if styles else None) for i in inline]
        lines.append(_line([row[i] for i in inline], widths, style, colour))
        for i in spilled:
            if row[i] not in ("", "-"):  # nothing to say on a line of its own
                lines += wrap(row[i], width, INDENT, headers[i].lower() + ": ")
    return lines


def wrap(text: str, width: "int | None", indent: str = "", label: str = "") -> "list[str]":
    """`text` in lines of at most `width` columns, broken at spaces (a word wider than a line is
    shortened in the middle); continuation lines indented further."""
    if width is None:
        return [indent + label + text]
    lines, prefix, current = [], indent + label, ""
    for word in text.split(" "):
        if current and len(prefix) + len(current) + 1 + len(word) > width:
            lines.append(prefix + current)
            prefix, current = indent + INDENT, ""
        if current:
            current += " " + word
        else:
            current = shorten_middle(word, max(width - len(prefix), 1))
    lines.append(prefix + current)
    return lines


def _natural(headers: "list[str]", rows: "list[list[str]]", columns: "list[int]") -> "list[int]":
    return [max(len(x) for x in [headers[i]] + [row[i] for row in rows]) for i in columns]


def _fit(headers: "list[str]", rows: "list[list[str]]", columns: "list[int]", width: "int | None",
         shorten: "tuple[int, ...]") -> "list[int] | None":
    """Column widths that fit `width`, shortening only `shorten` columns; None when they cannot."""
    widths = _natural(headers, rows, columns)
    if width is None:
        return widths
    excess = sum(widths) + len(GAP) * (len(columns) - 1) - width
    for k, i in sorted(enumerate(columns), key=lambda p: -widths[p[0]]):
        if excess <= 0:
            break
        if i in shorten and widths[k] > MIN_SHORTENED:
            cut = min(excess, widths[k] - max(MIN_SHORTENED, len(headers[i])))
            widths[k] -= cut
            excess -= cut
    return widths if excess <= 0 else None


def _line(cells: "list[str]", widths: "list[int]", style: "list[str | None] | None", colour: bool) -> str:
    parts = []
    for k, (cell, w) in enumerate(zip(cells, widths)):
        text = shorten_middle(cell, w).ljust(w)
        name = style[k] if style else None
        if colour and name in COLOURS:
            text = "\x1b[%sm%s\x1b[0m" % (COLOURS[name], text)
        parts.append(text)
    return GAP.join(parts).rstrip()
