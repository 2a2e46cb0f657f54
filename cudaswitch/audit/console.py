"""How `audit`, `audit --image` and `audit merge` look to a person: tables on stdout, a progress
bar on stderr. Only the commands import this (rich, for the bar, costs ~11 ms).
"""

import contextlib
import json
import sys
import textwrap
from typing import TYPE_CHECKING, Any, Callable, Dict, Iterator, List, Optional, Tuple

from cudaswitch import render, tables
from cudaswitch.audit.hosts import fold, fold_short
from cudaswitch.toolkit import version_tuple
from cudaswitch.verify.compat import cuda_words

if TYPE_CHECKING:
    from cudaswitch.audit.inventory import Progress

STATUS_STYLE = {"ok": "green", "incomplete": "yellow", "broken": "bold red", "missing": "dim"}
LEVEL_STYLE = {"error": "bold red", "warning": "yellow", "info": "dim", "ok": "green"}
SHOWN_COMPONENTS = ("cudart", "nvcc", "cudnn", "nccl", "cupti", "cublas")
YES_NO = {True: "yes", False: "no"}
SHOWN_ENV = ("CUDA_VERSION", "NVIDIA_REQUIRE_CUDA", "NVIDIA_DISABLE_REQUIRE", "PATH", "LD_LIBRARY_PATH")


@contextlib.contextmanager
def progress_bar(enabled: bool) -> "Iterator[Progress]":
    """A callback progress(label, done, total) drawing on stderr (transient), or a no-op one."""
    if not enabled:
        yield lambda label, done, total: None
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    tasks: Dict[str, Any] = {}
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=Console(file=sys.stderr, highlight=False), transient=True) as bar:
        def progress(label: str, done: int, total: Optional[int]) -> None:
            if label not in tasks:
                tasks[label] = bar.add_task(label, total=total)
            bar.update(tasks[label], completed=done, total=total)
        yield progress


human_size = render.iec_size  # IEC, as install and list say it


AUDIT_HEADERS = ("VERSION", "STATUS", "SIZE", "COMPONENTS", "DRIVER", "COMPILES", "SOURCES", "ROOT")
# Long columns: roots shortened in the middle first; then components, roots and sources move to
# lines of their own under the row. Version, status, size, driver and compiles are never cut.
AUDIT_SHORTEN = (6, 7)
AUDIT_SPILL = (3, 7, 6)


def audit_report(report: dict, wide: bool = False) -> None:
    """The report of one host: a header line, the toolkits table, then problems and checks."""
    width, colour = tables.terminal_width(wide), tables.colour_enabled()
    driver = report["driver"]
    gpus = ", ".join(g.get("name") or g.get("model") or g.get("bus") or "?" for g in report["gpus"]) or "none found"
    driver_text = "%s (CUDA %s)" % (driver.get("release") or "?", cuda_words(driver) if driver.get("cuda") else "?") \
        if driver else "none found"
    lines = tables.wrap("host %s  root %s  driver %s  GPUs: %s" % (
        tables.printable(report["host"]), tables.printable(report["root"]), driver_text, tables.printable(gpus)), width)
    rows: List[List[str]] = []
    styles: List[List[Optional[str]]] = []
    for entry in sorted(report["toolkits"], key=lambda t: version_tuple(t["version"]), reverse=True):
        version = (entry["version"] or "?") + (" (system)" if entry.get("system_default") else "")
        found = entry["components"]
        rows.append([version, entry["status"], human_size(entry["size_bytes"]),
                     " ".join("%s %s" % (name, found[name]) for name in SHOWN_COMPONENTS if found.get(name)),
                     YES_NO.get(entry.get("driver_supported"), "?"), YES_NO.get(entry["compiles"], "-"),
                     _origins(entry), entry["root"]])
        styles.append([None, STATUS_STYLE.get(entry["status"]), None, None,
                       "bold red" if entry.get("driver_supported") is False else None,
                       "bold red" if entry["compiles"] is False else None, None, None])
    if rows:
        lines += tables.layout(list(AUDIT_HEADERS), rows, width, AUDIT_SHORTEN, AUDIT_SPILL, styles, colour)
    else:
        lines.append("no CUDA toolkits found")
    for check in report["checks"]:
        if check["level"] != "ok":
            level = check["level"]
            text = tables.wrap(tables.printable(check["message"]), width, label=level + ": ")
            if colour and LEVEL_STYLE[level] in tables.COLOURS:
                text[0] = "\x1b[%sm%s\x1b[0m" % (tables.COLOURS[LEVEL_STYLE[level]], level) + text[0][len(level):]
            lines += text
    render.emit_lines(lines)


def _origins(entry: dict) -> str:
    """sources, with the module name that points at the toolkit (other origins are its root)."""
    where = entry.get("origins", {})
    return ", ".join("%s %s" % (s, where[s]) if s == "module" and where.get(s) else s for s in entry["sources"])


def merge_report(merged: dict, max_matrix_hosts: int = 12, wide: bool = False) -> None:
    """The versions x hosts matrix when it fits, else one line per version naming the hosts where it
    is missing or broken (a 64-column table helps nobody); then the skew report."""
    width, colour = tables.terminal_width(wide), tables.colour_enabled()
    hosts = [h["host"] for h in merged["hosts"]]
    matrix = len(hosts) <= max_matrix_hosts
    if matrix:
        headers = ["VERSION"] + hosts
        rows = [[row["version"] or "? (no version)"] + [_cell(row["hosts"].get(h)) for h in hosts]
                for row in merged["toolkits"]]
        styles = [[None, *[_cell_style(row["hosts"].get(h)) for h in hosts]] for row in merged["toolkits"]]
        lines = tables.layout(headers, rows, width, styles=styles, colour=colour)
        matrix = width is None or max(len(line) for line in tables.layout(headers, rows, width)) <= width
    if not matrix:
        headers = ["VERSION", "OK", "INCOMPLETE", "BROKEN ON", "MISSING ON"]
        rows = [[row["version"] or "? (no version)", render.counted(len(row["ok_on"]), "host"),
                 render.counted(len(row["incomplete_on"]), "host"),
                 fold(row["broken_on"]) or "-", fold(row["missing_on"]) or "-"] for row in merged["toolkits"]]
        lines = tables.layout(headers, rows, width, (), (4, 3))
    lines.append("%s merged" % render.counted(len(hosts), "host")
                 + (", %s refused" % render.counted(len(merged["errors"]), "report") if merged["errors"] else ""))
    if "skew" in merged:
        lines += [part for line in skew_lines(merged) for part in (textwrap.wrap(
            line, width, subsequent_indent="    ", break_on_hyphens=False) if width is not None else [line]) or [""]]
    render.emit_lines(lines)


def emit_merged_json(merged: dict, compact: bool) -> None:
    """`audit merge --json` as render.emit_json writes it, a compact one in pieces: 100,000 nodes'
    JSON is 40 MiB, and one string, its escaped copy and its bytes would hold three times that."""
    if not compact:
        render.emit_json(merged)
        return
    batch: List[str] = []
    size = 0
    for piece in _json_pieces(merged, 3):
        batch.append(piece)
        size += len(piece)
        if size >= 1 << 20:  # a write per MiB, not one per piece
            render.emit_text(render.escape_surrogates("".join(batch)))
            batch, size = [], 0
    render.emit_text(render.escape_surrogates("".join(batch)) + "\n")


def _json_pieces(value: Any, depth: int, chunk: int = 5000) -> Iterator[str]:
    """Compact json.dumps(value, ensure_ascii=False) in pieces: `depth` levels opened, long lists in chunks."""
    def dumps(item: Any) -> str:
        return json.dumps(item, ensure_ascii=False, separators=(",", ":"))
    if isinstance(value, dict) and len(value) > chunk and all(type(key) is str for key in value) and \
            len({id(item) for item in value.values()}) * 4 < len(value):
        yield _shared_values_dict(value, dumps)
    elif not depth or not value or not isinstance(value, (dict, list)):
        yield dumps(value)
    elif isinstance(value, dict):
        for number, (key, item) in enumerate(value.items()):
            yield ("," if number else "{") + dumps(key) + ":"
            yield from _json_pieces(item, depth - 1, chunk)
        yield "}"
    elif len(value) <= 100:
        for number, item in enumerate(value):
            yield "," if number else "["
            yield from _json_pieces(item, depth - 1, chunk)
        yield "]"
    else:
        for start in range(0, len(value), chunk):
            yield ("," if start else "[") + dumps(value[start:start + chunk])[1:-1]
        yield "]"


def _shared_values_dict(value: dict, dumps: Callable[[Any], str]) -> str:
    """dumps(value) for many keys sharing a few value objects (a row's 100,000 hosts): each encoded once."""
    from json.encoder import encode_basestring  # the C encoder's own quoting for ensure_ascii=False

    texts: Dict[int, str] = {}
    parts: List[str] = []
    for key, item in value.items():
        text = texts.get(id(item))
        if text is None:
            text = texts[id(item)] = dumps(item)
        parts.append(encode_basestring(key) + ":" + text)
    return "{" + ",".join(parts) + "}"


def _spread(values: Dict[str, List[str]]) -> str:
    """'570.195.03 on node[07,33] (2); 580.95.05 on the other 61': naming 9,990 nodes hides the 10 that matter."""
    ordered = sorted(values.items(), key=lambda item: len(item[1]))
    parts = ["%s on %s (%d)" % (value, fold(hosts), len(hosts)) for value, hosts in ordered[:-1]]
    return "; ".join(parts + ["%s on the other %d" % (ordered[-1][0], len(ordered[-1][1]))])


def skew_lines(merged: dict) -> List[str]:
    """The skew report as lines: one per fact that differs between nodes, then node types and rules."""
    skew = merged["skew"]
    lines: List[str] = []
    for title, values in (("driver release", skew["driver"]["releases"]), ("driver branch", skew["driver"]["branches"]),
                          ("GPUs", skew["gpus"]["models"]), ("NCCL", skew.get("nccl") or {})):
        if len(values) > 1:
            lines.append("skew: %s: %s" % (title, _spread(values)))
    for key, entries in [("CUDA", skew["toolkits"]), *skew["components"].items()]:
        for entry in entries:
            lines.append("skew: %s %s is missing on %s (on %d)"
                         % (key, entry["version"], fold(entry["missing_on"]), entry["on"]))
    for name, values in (skew.get("mtu") or {}).items():
        lines.append("skew: MTU of %s: %s" % (name, _spread(values)))
    for entry in skew.get("driver_cannot_run", []):
        lines.append("skew: the driver cannot run CUDA %s on %s" % (entry["toolkit"], fold(entry["nodes"])))
    for entry in skew["gpus"]["cannot_target"]:
        lines.append("skew: CUDA %s cannot target %s (%s) on %s"
                     % (entry["toolkit"], entry["gpu"], entry["model"], fold(entry["nodes"])))
    if skew["missing"]:
        lines.append("skew: no report from %s" % fold(skew["missing"]))
    if skew["refused"]:
        lines.append("skew: %s refused (named above)" % render.counted(len(skew["refused"]), "report"))
    types = merged["node_types"]
    lines.append("%s: %s" % (render.counted(len(types), "node type"), "; ".join(
        "%s %s (%d)" % (t["name"], fold_short(t["nodes"]), len(t["nodes"])) for t in types[:8])
        + ("; ..." if len(types) > 8 else "")))
    for rule in merged["rules"]:
        lines.append("rule %s: %s: %s" % (rule["rule"], rule["message"], fold(rule["nodes"])))
    return lines


def _cell(cell: Optional[dict]) -> str:
    if cell is None:
        return "-"
    text = "+".join(cell["statuses"])
    return text + (" x%d" % cell["copies"] if cell["copies"] > 1 else "")


def _cell_style(cell: Optional[dict]) -> Optional[str]:
    """The colour of a cell's worst status (broken over incomplete over ok)."""
    if cell is None:
        return "dim"
    return next((STATUS_STYLE[s] for s in ("broken", "incomplete", "ok") if s in cell["statuses"]), None)


def image_lines(facts: dict) -> List[str]:
    """The header of an image report: reference, digest, platform, OS, Env, torch."""
    platform = "/".join(p for p in (facts["os"], facts["architecture"], facts["variant"]) if p) or "?"
    digest = facts["manifest_digest"] or facts["config_digest"]
    system = (facts.get("os_release") or {}).get("PRETTY_NAME") or "unknown OS"
    lines = ["image %s  %s  %s  %s  %d layers" % (_printable(facts["reference"]), digest[:19], platform,
                                                 _printable(system), facts["layers"])]
    env = facts["env"]
    for key in SHOWN_ENV:
        if key in env:
            lines.append("  %s=%s" % (key, _printable(env[key])))
    for torch in facts["torch"]:
        arch = " ".join(torch["arch"]) if torch["arch"] else "arch list not known"
        lines.append("  torch %s (CUDA %s) in %s: %s" % (_printable(torch["version"]), torch["cuda"] or "none",
                                                        _printable(torch["site"]), arch))
    return lines


def print_image_report(report: dict, wide: bool = False) -> None:
    render.emit_lines(image_lines(report["image"]))
    audit_report(report, wide=wide)
    requirement = report["image"]["requirement"]
    if requirement["verdict"] == "ok":  # any other verdict is among the checks above
        render.emit_lines(["ok: " + requirement["message"]])


def node_lines(result: dict) -> List[str]:
    """Which nodes start the image, which cannot and why, which cannot be told."""
    total = sum(len(result[k]) for k in ("can_run", "cannot_run", "cannot_tell"))
    lines = ["image %s starts on %d of %d nodes: %s" % (
        _printable(result["image"]["reference"]), len(result["can_run"]), total, result["can_run_hosts"] or "none")]
    for key, label in (("cannot_run", "cannot start on"), ("cannot_tell", "cannot tell for")):
        for reason, hosts in _by_reason(result[key]):
            lines.append("  %s %s: %s" % (label, hosts, _printable(reason)))
    return lines


def _printable(text: object) -> str:
    """Control characters escaped: an image's Env value or tag cannot break or restyle a line."""
    return "".join(c if " " <= c != "\x7f" else repr(c)[1:-1] for c in str(text))


def _by_reason(items: List[dict]) -> List[Tuple[str, str]]:
    """Nodes with the same reasons folded into one hostlist."""
    grouped: Dict[str, List[str]] = {}
    for item in items:
        grouped.setdefault("; ".join(item["reasons"]) or "no reason recorded", []).append(item["host"])
    return [(reason, fold(hosts)) for reason, hosts in sorted(grouped.items())]
