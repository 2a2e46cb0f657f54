"""Human-readable lines for check reports (render.py prints them; JSON goes out as is)."""

TYPE_CHECKING = False
if TYPE_CHECKING:
    from cudaswitch.verify.checkregistry import CheckResult

MARKS = {"ok": "ok  ", "info": "info", "warning": "WARN", "error": "FAIL"}


def check_lines(checks: "list[CheckResult]", group_key: "str | None" = None) -> list:
    """One line per check (`ok   message`), its hint indented below; optional group headers."""
    lines, group = [], None
    for item in checks:
        if group_key and item.get(group_key) != group:
            group = item.get(group_key)
            lines.append("%s:" % group)
        lines.append("  %s  %s" % (MARKS.get(item["level"], item["level"]), item["message"]))
        if item.get("hint") and item["level"] != "ok":
            lines.append("          -> %s" % item["hint"])
    return lines


def toolkit_line(public: "dict | None") -> str:
    if not public:
        return "toolkit: none"
    return "toolkit: CUDA %s at %s (%s)" % (public.get("version") or "?", public["root"], public["status"])


def summary_line(checks: "list[CheckResult]") -> str:
    """"summary: 2 errors, 1 warning, 3 info, 5 ok": info and ok read as labels, not nouns."""
    from cudaswitch.render import counted

    counts = [(level, sum(item["level"] == level for item in checks)) for level in ("error", "warning", "info", "ok")]
    return "summary: " + ", ".join(counted(n, level) if level in ("error", "warning") else "%d %s" % (n, level)
                                   for level, n in counts if n)


def explain_lines(result: dict) -> list:
    if not result["matches"]:
        return [result["message"]]
    lines = []
    for match in result["matches"]:
        lines.append("%s  (matched: %r)" % (match["id"], match["matched"]))
        lines.append("  cause: " + match["cause"])
        lines.append("  do:    " + match["todo"])
        lines.append("  on this host:")
        lines += ["  " + line for line in check_lines(match["checks"])]
    return lines
