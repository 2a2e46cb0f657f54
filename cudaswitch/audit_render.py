"""How `audit` and `audit merge` look to a person: rich tables on stdout, a progress bar on stderr.

Only the commands import this (rich costs ~11 ms). Piped output gets no colour and a wide fixed
width, so a table pasted into a ticket is not wrapped at 80 columns.
"""

import contextlib
import sys

from cudaswitch.toolkit import version_tuple

STATUS_STYLE = {"ok": "green", "incomplete": "yellow", "broken": "bold red", "missing": "dim"}
LEVEL_STYLE = {"error": "bold red", "warning": "yellow", "info": "dim", "ok": "green"}
SHOWN_COMPONENTS = ("cudart", "nvcc", "cudnn", "nccl", "cupti", "cublas")
WIDE = 400


def _console(stderr=False):
    from rich.console import Console

    stream = sys.stderr if stderr else sys.stdout
    return Console(file=stream, width=None if stream.isatty() else WIDE, highlight=False)


@contextlib.contextmanager
def progress_bar(enabled):
    """A callback progress(label, done, total) drawing on stderr (transient), or a no-op one."""
    if not enabled:
        yield lambda label, done, total: None
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    tasks = {}
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=_console(stderr=True), transient=True) as bar:
        def progress(label, done, total):
            if label not in tasks:
                tasks[label] = bar.add_task(label, total=total)
            bar.update(tasks[label], completed=done, total=total)
        yield progress


def human_size(size):
    for unit in ("B", "KB", "MB", "GB"):
        if size < 1000 or unit == "GB":
            return ("%d %s" if unit == "B" else "%.1f %s") % (size, unit)
        size /= 1000.0


def _yes_no(value, unknown="?"):
    return {True: "yes", False: "[bold red]no[/]", None: unknown}[value]


def _components(entry):
    found = entry["components"]
    return " ".join("%s %s" % (name, found[name]) for name in SHOWN_COMPONENTS if found.get(name))


def audit_report(report):
    """The report of one host: a header line, the toolkits table, then problems and checks."""
    from rich.markup import escape
    from rich.table import Table

    console = _console()
    driver = report["driver"]
    gpus = ", ".join(g.get("name") or g.get("model") or g.get("bus") or "?" for g in report["gpus"]) or "none found"
    driver_text = "%s (CUDA %s)" % (driver.get("release") or "?", driver.get("cuda") or "?") if driver else "none found"
    console.print("host [bold]%s[/]  root %s  driver %s  GPUs: %s" % (
        escape(report["host"]), escape(report["root"]), escape(driver_text), escape(gpus)))
    table = Table(show_edge=False, pad_edge=False, header_style="bold")
    for column in ("VERSION", "STATUS", "SIZE", "COMPONENTS", "DRIVER", "COMPILES", "SOURCES", "ROOT"):
        table.add_column(column, no_wrap=column in ("VERSION", "ROOT"))
    for entry in sorted(report["toolkits"], key=lambda t: version_tuple(t["version"]), reverse=True):
        style = STATUS_STYLE.get(entry["status"], "")
        version = (entry["version"] or "?") + (" (system)" if entry.get("system_default") else "")
        table.add_row(escape(version), "[%s]%s[/]" % (style, entry["status"]), human_size(entry["size_bytes"]),
                      escape(_components(entry)), _yes_no(entry.get("driver_supported")), _yes_no(entry["compiles"], "-"),
                      escape(_origins(entry)), escape(entry["root"]), style="red" if entry["status"] == "broken" else None)
    console.print(table)
    if not report["toolkits"]:
        console.print("no CUDA toolkits found")
    for check in report["checks"]:
        if check["level"] != "ok":
            console.print("[%s]%s[/]: %s" % (LEVEL_STYLE[check["level"]], check["level"], escape(check["message"])))


def _origins(entry):
    """sources, with the module name that points at the toolkit (other origins are its root)."""
    parts = []
    for source in entry["sources"]:
        where = entry.get("origins", {}).get(source)
        parts.append("%s %s" % (source, where) if source == "module" and where else source)
    return ", ".join(parts)


def merge_report(merged, max_matrix_hosts=12):
    """The versions x hosts matrix (few hosts), or one line per version naming the hosts where it
    is missing or broken (many hosts: a 64-column table helps nobody); then the skew report."""
    from rich.markup import escape
    from rich.table import Table

    from cudaswitch.cluster_hosts import fold

    console = _console()
    hosts = [h["host"] for h in merged["hosts"]]
    table = Table(show_edge=False, pad_edge=False, header_style="bold")
    table.add_column("VERSION", no_wrap=True)
    matrix = len(hosts) <= max_matrix_hosts
    for name in (hosts if matrix else ("OK", "INCOMPLETE", "BROKEN ON", "MISSING ON")):
        table.add_column(escape(name))
    for row in merged["toolkits"]:
        cells = [_cell(row["hosts"].get(h)) for h in hosts] if matrix else [
            "%d hosts" % len(row["ok_on"]), "%d hosts" % len(row["incomplete_on"]),
            escape(fold(row["broken_on"]) or "-"), escape(fold(row["missing_on"]) or "-")]
        table.add_row(escape(row["version"] or "? (no version)"), *cells)
    console.print(table)
    console.print("%d hosts merged" % len(hosts) + (", %d reports refused" % len(merged["errors"]) if merged["errors"] else ""))
    if "skew" in merged:
        for line in skew_lines(merged):
            console.print(escape(line), style="yellow" if line.startswith("skew") else None)


def _spread(values):
    """'570.195.03 on node[07,33] (2); 580.95.05 on the other 61': the exceptions by name, the
    most common value by count (naming 9,990 nodes hides the 10 that matter)."""
    from cudaswitch.cluster_hosts import fold

    ordered = sorted(values.items(), key=lambda item: len(item[1]))
    parts = ["%s on %s (%d)" % (value, fold(hosts), len(hosts)) for value, hosts in ordered[:-1]]
    return "; ".join(parts + ["%s on the other %d" % (ordered[-1][0], len(ordered[-1][1]))])


def skew_lines(merged):
    """The skew report as lines: one per fact that differs between nodes, then node types and rules."""
    from cudaswitch.cluster_hosts import fold, fold_short

    skew, lines = merged["skew"], []
    for title, values in (("driver release", skew["driver"]["releases"]), ("driver branch", skew["driver"]["branches"]),
                          ("GPUs", skew["gpus"]["models"])):
        if len(values) > 1:
            lines.append("skew: %s: %s" % (title, _spread(values)))
    for entry in skew["toolkits"]:
        lines.append("skew: CUDA %s is missing on %s (on %d)" % (entry["version"], fold(entry["missing_on"]), entry["on"]))
    for key, entries in skew["components"].items():
        for entry in entries:
            lines.append("skew: %s %s is missing on %s (on %d)" % (key, entry["version"], fold(entry["missing_on"]), entry["on"]))
    for entry in skew.get("driver_cannot_run", []):
        lines.append("skew: the driver cannot run CUDA %s on %s" % (entry["toolkit"], fold(entry["nodes"])))
    for entry in skew["gpus"]["cannot_target"]:
        lines.append("skew: CUDA %s cannot target %s (%s) on %s" % (entry["toolkit"], entry["gpu"], entry["model"], fold(entry["nodes"])))
    if skew["missing"]:
        lines.append("skew: no report from %s" % fold(skew["missing"]))
    if skew["refused"]:
        lines.append("skew: %d report(s) refused (named above)" % len(skew["refused"]))
    types = merged["node_types"]
    lines.append("%d node type(s): %s" % (len(types), "; ".join("%s %s (%d)" % (t["name"], fold_short(t["nodes"]), len(t["nodes"])) for t in types[:8])
                                         + ("; ..." if len(types) > 8 else "")))
    for rule in merged["rules"]:
        lines.append("rule %s: %s: %s" % (rule["rule"], rule["message"], fold(rule["nodes"])))
    return lines


def _cell(cell):
    if cell is None:
        return "[dim]-[/]"
    text = "+".join("[%s]%s[/]" % (STATUS_STYLE[s], s) for s in cell["statuses"])
    return text + (" x%d" % cell["copies"] if cell["copies"] > 1 else "")
