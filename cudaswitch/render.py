"""The one place that prints: JSON to stdout, tables to stdout, messages to stderr."""

import sys


def emit_json(data, compact=False):
    """Indented for people; compact = one line, for JSON-lines collectors (pdsh, clush, srun)."""
    import json  # here, not at the top: `list` without --json runs on the fast path (~7 ms for json)

    if compact:
        text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    else:
        text = json.dumps(data, indent=2, ensure_ascii=False)
    sys.stdout.write(text + "\n")


def emit_text(text):
    """Shell code for `eval`, exactly as rendered (stdout carries nothing else)."""
    sys.stdout.write(text)


def emit_lines(lines):
    for line in lines:
        sys.stdout.write(line + "\n")


def message(text):
    sys.stderr.write(text + "\n")


def table(rows, headers):
    """A plain aligned table (no colour: it is often piped or pasted into tickets)."""
    widths = [max(len(str(x)) for x in column) for column in zip(headers, *rows)]
    lines = ["  ".join(str(h).ljust(w) for h, w in zip(headers, widths)).rstrip()]
    for row in rows:
        lines.append("  ".join(str(c).ljust(w) for c, w in zip(row, widths)).rstrip())
    emit_lines(lines)


def toolkit_table(items):
    """`list` as a human reads it: one line per toolkit, problems indented below."""
    rows = []
    for item in items:
        mark = ("*" if item["active"] else " ") + ("d" if item["default"] else " ")
        rows.append([mark, item["version"] or "?", item["status"], ",".join(item["sources"]), item["root"]])
    if not rows:
        message("no CUDA toolkits found (see `cudaswitch list --help` for where cudaswitch looks)")
        return
    table(rows, ["", "VERSION", "STATUS", "SOURCES", "ROOT"])
    for item in items:
        for problem in item["problems"]:
            message("%s: %s" % (item["root"], problem))
    message("* active in this shell, d default")
