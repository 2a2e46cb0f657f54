"""`audit merge --html FILE`: the merged report as one self-contained page (no network: its CSS
and script are inline). Columns are node types (identical nodes grouped), not nodes, so 10,000
nodes stay a few columns wide; a cell that differs from what most nodes have is highlighted.
"""

import html
from typing import Dict, List, Optional

from cudaswitch.audit.hosts import fold_short
from cudaswitch.errors import CudaSwitchError
from cudaswitch.toolkit import version_tuple

STYLE = """
body { font: 14px/1.4 system-ui, sans-serif; margin: 1.5em; color: #222; }
h1 { font-size: 1.3em; } table { border-collapse: collapse; margin-top: 1em; }
th, td { border: 1px solid #ccc; padding: 4px 8px; text-align: left; vertical-align: top; }
thead th { background: #f3f3f3; } th.group small { display: block; font-weight: normal; color: #555; }
td.skew { background: #ffd54f; font-weight: bold; } td.absent { color: #999; }
td.skew.absent { color: #7a4d00; } li.problem { color: #b00020; } .hidden { display: none; }
th.group small.count { color: #222; } th.group small.matches { color: #0b5394; }
#controls { margin-top: 1em; } #filter { width: 24em; padding: 3px; }
"""

SCRIPT = """
(function () {
  var filter = document.getElementById('filter');
  var onlySkew = document.getElementById('only-skew');
  var groups = Array.prototype.slice.call(document.querySelectorAll('th.group'));
  var rows = Array.prototype.slice.call(document.querySelectorAll('#matrix tbody tr'));
  // split and lower-cased once: a type of 60,000 nodes is not re-split on every key stroke
  var names = groups.map(function (th) { return th.getAttribute('data-nodes').toLowerCase().split('\\n'); });
  var labels = groups.map(function (th) { return th.textContent.toLowerCase(); });
  function apply() {
    var text = filter.value.trim().toLowerCase();
    groups.forEach(function (th, index) {
      var matching = text ? names[index].filter(function (n) { return n.indexOf(text) >= 0; }).length : 0;
      var shown = !text || labels[index].indexOf(text) >= 0 || matching > 0;
      // how many of the type's nodes the filter names: "3 of 59,880 nodes match"
      th.querySelector('.matches').textContent = text && matching ?
        matching.toLocaleString('en-US') + ' of ' + names[index].length.toLocaleString('en-US') +
        (names[index].length === 1 ? ' node matches' : ' nodes match') : '';
      th.classList.toggle('hidden', !shown);
      rows.forEach(function (tr) { tr.children[index + 1].classList.toggle('hidden', !shown); });
    });
    rows.forEach(function (tr) {
      tr.classList.toggle('hidden', onlySkew.checked && !tr.classList.contains('skewed'));
    });
  }
  // a link can carry a filter: report.html#filter=node07
  // (a malformed escape such as %E0%A4%A is shown as typed: decodeURIComponent throws on it)
  var hash = /^#filter=(.*)$/.exec(location.hash);
  if (hash) {
    try { filter.value = decodeURIComponent(hash[1]); } catch (e) { filter.value = hash[1]; }
  }
  filter.addEventListener('input', apply);
  onlySkew.addEventListener('change', apply);
  apply();
  document.body.setAttribute('data-ready', '1');
  document.body.setAttribute('data-ready-ms', String(Math.round(performance.now())));
})();
"""


def write_page(path: str, merged: dict) -> None:
    """Write the page atomically, replacing only a regular file (a FIFO or directory is refused)."""
    from cudaswitch.safeio import NotReplaceable, replace_regular

    try:
        replace_regular(path, page(merged).encode("utf-8"), through_links=True, mode=0o644)
    except NotReplaceable as exc:
        raise CudaSwitchError(str(exc), "give --html the path of a regular file (it is created or replaced)") from None
    except OSError as exc:
        raise CudaSwitchError("cannot write %s (%s)" % (path, exc.strerror or exc)) from None


def page(merged: dict) -> str:
    types = merged["node_types"]
    nodes = sum(len(t["nodes"]) for t in types)
    return "".join(["<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">",
             "<title>cudaswitch audit: %s</title><style>%s</style></head>"
             "<body data-ready=\"0\">" % (_counted(nodes, "node"), STYLE),
             "<h1>CUDA audit of %s: %s</h1>" % (_counted(nodes, "node"), _counted(len(types), "node type")),
             _problems(merged),
             "<div id=\"controls\"><input id=\"filter\" type=\"search\" "
             "placeholder=\"filter node types by node name or fact\">"
             " <label><input id=\"only-skew\" type=\"checkbox\"> only rows that differ between nodes</label></div>",
             _matrix(types), "<script>%s</script></body></html>" % SCRIPT])


def _problems(merged: dict) -> str:
    from cudaswitch.audit.console import skew_lines

    items = ["<li class=\"%s\">%s</li>" % ("problem" if line.startswith(("skew", "rule")) else "fact", _e(line))
             for line in skew_lines(merged)]
    items += ["<li class=\"problem refused\">refused %s: %s</li>" % (_e(e["file"]), _e(e["error"]))
              for e in merged["errors"][:200]]
    if len(merged["errors"]) > 200:
        items.append("<li class=\"problem refused\">and %d more refused</li>" % (len(merged["errors"]) - 200))
    return "<ul id=\"skew\">%s</ul>" % "".join(items)


def _matrix(types: List[dict]) -> str:
    """Facts x node types (100,000 nodes of 6 types are 6 columns). A type's nodes are one per line
    in data-nodes: a renamed duplicate ("node01 (b.json)") holds spaces, no name a line break."""
    total = sum(len(t["nodes"]) for t in types)
    head = "".join("<th class=\"group\" data-type=\"%s\" data-nodes=\"%s\">%s<small>%s</small>"
                   "<small class=\"count\">%s, %.1f%%</small><small class=\"matches\"></small></th>" % (
                       _e(t["name"]), _e("\n".join(t["nodes"])), _e(t["name"]), _e(fold_short(t["nodes"], 120)),
                       _counted(len(t["nodes"]), "node"), 100.0 * len(t["nodes"]) / total) for t in types)
    body = "".join(_row(label, values, [len(t["nodes"]) for t in types]) for label, values in _rows(types))
    return "<table id=\"matrix\"><thead><tr><th>fact</th>%s</tr></thead><tbody>%s</tbody></table>" % (head, body)


def _rows(types: List[dict]) -> List[tuple]:
    """(label, [value per type]) per fact; None is 'absent on these nodes'."""
    facts = [t["facts"] for t in types]
    rows = [("driver release", [f["driver"] or "none found" for f in facts]),
            ("driver CUDA", [f["driver_cuda"] or "none found" for f in facts]),
            ("GPUs", [f["gpus"] for f in facts])]
    versions = sorted({v for f in facts for v in f["versions"]}, key=version_tuple, reverse=True)
    rows += [("CUDA %s" % v, [_status(f, v) for f in facts]) for v in versions]
    for key in sorted({k for f in facts for k in f["components"]}):
        rows.append((key, [" ".join(f["components"][key]) or None for f in facts]))
    return rows


def _status(facts: dict, version: str) -> Optional[str]:
    status = facts["versions"].get(version)
    if status and ".".join(version.split(".")[:2]) in facts.get("driver_cannot_run", ()):
        return status + ", driver too old"
    return status


def _row(label: str, values: List[Optional[str]], weights: List[int]) -> str:
    counts: Dict[Optional[str], int] = {}
    for value, weight in zip(values, weights):
        counts[value] = counts.get(value, 0) + weight
    common = max(counts, key=counts.__getitem__)
    skewed = len(counts) > 1
    cells = "".join("<td class=\"%s\">%s</td>" % (" ".join(
        c for c in ("cell", "skew" if skewed and value != common else "", "absent" if value is None else "") if c),
        _e(value if value is not None else "absent")) for value in values)
    return "<tr class=\"%s\" data-fact=\"%s\"><th>%s</th>%s</tr>" % (
        "skewed" if skewed else "same", _e(label), _e(label), cells)


def _counted(count: int, noun: str) -> str:
    return "{:,} {}".format(count, noun if count == 1 else noun + "s")


def _e(text: object) -> str:
    return html.escape(str(text), quote=True)
