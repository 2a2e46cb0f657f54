"""The skew between nodes that breaks multi-node jobs, from `audit merge`'s node summaries:
driver releases and branches, toolkits and libraries (cuDNN, NCCL, CUPTI) present on some nodes
only, GPU models and the toolkits that cannot target them, nodes that sent no readable report;
node types (identical nodes grouped); and the user's `--require` / `--same` rules.
"""

import re
from typing import Dict, List, Optional, Sequence

from cudaswitch.audit.merge import TRACKED, version_key
from cudaswitch.audit.validate import VERSION
from cudaswitch.errors import UsageError
from cudaswitch.render import counted

REQUIRE_KEYS = ("cuda",) + TRACKED + ("driver",)
SAME_KEYS = ("driver", "branch", "gpus", "toolkits") + TRACKED


def parse_require(texts: Sequence[str]) -> List[tuple]:
    """['cuda=12.4'] -> [('cuda', '12.4')]; a one-line UsageError for anything else."""
    out = []
    for text in texts:
        key, sep, version = text.partition("=")
        if not sep or key not in REQUIRE_KEYS or not VERSION.fullmatch(version):
            raise UsageError("--require %s: expected KEY=VERSION with KEY one of %s (cuda=12.4)"
                             % (_shown(text), ", ".join(REQUIRE_KEYS)))
        out.append((key, version))
    return out


def parse_same(texts: Sequence[str]) -> List[str]:
    for key in texts:
        if key not in SAME_KEYS:
            raise UsageError("--same %s: expected one of %s" % (_shown(key), ", ".join(SAME_KEYS)))
    return list(texts)


def _shown(text, limit=40):
    """A short, printable prefix of what the user typed: an error stays one line."""
    text = text if text.isprintable() else repr(text)
    return text if len(text) <= limit else text[:limit] + "..."


def _by_value(nodes, value_of):
    """{value: [hosts]} in the order first seen."""
    out = {}
    for node in nodes:
        out.setdefault(value_of(node), []).append(node["host"])
    return out


def _gpu_text(node):
    return ", ".join("%dx %s%s" % (count, model, " (sm_%s)" % cap.replace(".", "") if cap else "")
                     for model, cap, count in node["gpus"]) or "none found"


def _component_text(key):
    return lambda node: " ".join(node["components"][key]) or "none"


def _driver_text(node):
    """The release where the report has it, else the CUDA version the driver supports (a libcuda-only
    read: WSL, some containers), so two such nodes of different drivers are not "the same"."""
    if node["driver"]:
        return node["driver"]
    return "CUDA %s (release unknown)" % node["driver_cuda"] if node["driver_cuda"] else "none found"


def _driver_compared_by(nodes):
    """What the driver skew could compare: "release", "cuda" (no release known), "release or cuda"."""
    kinds = {"release" if n["driver"] else "cuda" for n in nodes if n["driver"] or n["driver_cuda"]}
    return " or ".join(sorted(kinds, reverse=True)) or "none"


# What `--same KEY` compares, as the text shown for each node's value.
VALUE_OF = {
    "driver": _driver_text,
    "branch": lambda n: n["branch"] or "none found",
    "gpus": _gpu_text,
    "toolkits": lambda n: " ".join(sorted(n["toolkits"], key=version_key)) or "none",
    **{key: _component_text(key) for key in TRACKED},
}


def skew(nodes: List[dict], expected: Optional[List[str]], errors: List[dict]) -> dict:
    """Every fact of the skew report as data (what `--json` prints under "skew")."""
    hosts = [n["host"] for n in nodes]
    reported = set(hosts) | {_bare(h) for h in hosts}
    return {
        "driver": {"releases": _by_value(nodes, VALUE_OF["driver"]), "branches": _by_value(nodes, VALUE_OF["branch"]),
                   "cuda": _by_value(nodes, lambda n: n["driver_cuda"] or "none found"),
                   "compared_by": _driver_compared_by(nodes)},
        "toolkits": _partial(nodes, lambda n: n["toolkits"]),
        "components": {key: _partial(nodes, lambda n, key=key: n["components"][key]) for key in TRACKED},
        "gpus": {"models": _by_value(nodes, _gpu_text), "cannot_target": cannot_target(nodes)},
        "driver_cannot_run": _unsupported(nodes),
        "missing": [name for name in expected or [] if name not in reported],
        "refused": [e["file"] for e in errors],
    }


def _bare(host):
    """'node01 (file)' (a duplicate renamed by merge) -> 'node01'."""
    return host.split(" (", 1)[0]


def _partial(nodes, versions_of):
    """[{version, on, missing_on}] for each version present on some nodes but not all."""
    present = {}
    for node in nodes:
        for version in versions_of(node):
            present.setdefault(version, []).append(node["host"])
    out = []
    for version in sorted(present, key=version_key, reverse=True):
        if len(present[version]) < len(nodes):
            have = set(present[version])
            out.append({"version": version, "on": len(have),
                        "missing_on": [n["host"] for n in nodes if n["host"] not in have]})
    return out


def _unsupported(nodes):
    """[{toolkit, nodes}]: the node's driver is too old for a toolkit it has (the audit's verdict,
    minor-version compatibility included): what builds on one node and fails on another."""
    out = {}
    for node in nodes:
        for short in node["unsupported"]:
            out.setdefault(short, []).append(node["host"])
    return [{"toolkit": short, "nodes": out[short]} for short in sorted(out, key=version_key)]


def cannot_target(nodes: List[dict]) -> List[dict]:
    """[{toolkit, gpu, model, nodes}]: a toolkit on a node that cannot build for a GPU of that
    node (compat.toml's arch table: first and last CUDA per architecture)."""
    from cudaswitch.verify import facttables

    verdicts: dict = {}
    out: dict = {}
    for node in nodes:
        for model, capability, _ in node["gpus"]:
            if not capability:
                continue  # /proc names the model only: the architecture is not known
            for short in node["toolkits"]:
                key = (short, capability)
                if key not in verdicts:
                    verdicts[key] = _targets(facttables.arch_row(capability), short)
                if verdicts[key] is False:
                    entry = out.setdefault((short, capability, model), {
                        "toolkit": short, "gpu": "sm_" + capability.replace(".", ""), "model": model, "nodes": []})
                    entry["nodes"].append(node["host"])
    return [out[key] for key in sorted(out, key=lambda k: (version_key(k[0]), k[1:]))]


def _targets(row, short):
    """True / False from a table-6 row, None when the table has no row for the GPU."""
    if row is None:
        return None
    have = version_key(short)[:2]
    if have < version_key(row["first"])[:2]:
        return False
    return not (row.get("last") and have > version_key(row["last"])[:2])


def node_types(nodes: List[dict]) -> List[dict]:
    """Identical nodes grouped (driver, GPUs, toolkits with status, libraries), largest first."""
    groups: Dict[tuple, dict] = {}
    for node in nodes:
        key = (node["driver"], node["driver_cuda"], tuple(node["gpus"]), tuple(sorted(node["toolkits"].items())),
               tuple(node["versions"].items()), tuple((k, tuple(v)) for k, v in sorted(node["components"].items())),
               tuple(node["unsupported"]))
        group = groups.get(key)
        if group is None:
            facts = {"driver": node["driver"], "driver_cuda": node["driver_cuda"], "gpus": _gpu_text(node),
                     "toolkits": dict(sorted(node["toolkits"].items(), key=lambda kv: version_key(kv[0]))),
                     "versions": node["versions"], "components": node["components"],
                     "driver_cannot_run": node["unsupported"]}
            group = groups[key] = {"facts": facts, "nodes": []}
        group["nodes"].append(node["host"])
    ordered = sorted(groups.values(), key=lambda g: -len(g["nodes"]))
    return [{"name": "type %d" % number, **group} for number, group in enumerate(ordered, 1)]


def check_rules(nodes: List[dict], require: List[tuple], same: List[str]) -> List[dict]:
    """[{rule, nodes, message}], one per broken rule, naming the nodes that break it."""
    broken = []
    for key, version in require:
        failing = [n["host"] for n in nodes if not _has(n, key, version)]
        if failing:
            broken.append({"rule": "require %s=%s" % (key, version), "nodes": failing,
                           "message": "%s %s is not on %s" % (key, version, counted(len(failing), "node"))})
    for key in same:
        values = _by_value(nodes, VALUE_OF[key])
        if len(values) > 1:
            common = max(values, key=lambda v: len(values[v]))
            failing = [h for value, hosts in values.items() if value != common for h in hosts]
            broken.append({"rule": "same %s" % key, "nodes": failing, "common": common,
                           "message": "%s in %s from %s (on %d)"
                                      % (counted(len(failing), "node differs", "nodes differ"), key, common,
                                         len(values[common]))})
    return broken


def _has(node, key, version):
    """Whether the node has `version` (a prefix at a dot: 12.4 matches 12.4.131) of `key`; a
    toolkit counts unless it is broken."""
    if key == "cuda":
        have = [v for v, status in list(node["toolkits"].items()) + list(node["versions"].items())
                if status != "broken"]
    elif key == "driver":
        have = [node["driver"]] if node["driver"] else []
    else:
        have = node["components"][key]
    return any(v == version or v.startswith(version + ".") for v in have)


def add_skew(merged: dict, nodes: List[dict], expected: Optional[List[str]], require: List[tuple],
             same: List[str]) -> dict:
    """`merged` (audit_merge's matrix) with "skew", "node_types" and "rules" added. Nodes are taken
    in name order (node2 before node10), so the report does not depend on the order pdsh, clush or
    srun delivered them in."""
    nodes = sorted(nodes, key=_name_order)
    merged["skew"] = skew(nodes, expected, merged["errors"])
    merged["node_types"] = node_types(nodes)
    merged["rules"] = check_rules(nodes, require, same)
    return merged


def _name_order(node):
    return [(0, int(part), "") if part.isdigit() else (1, 0, part) for part in re.split(r"(\d+)", node["host"])]


def strict_failures(merged: dict) -> List[str]:
    """One line per reason `--strict` fails: refused reports, missing nodes, broken rules."""
    from cudaswitch.audit.hosts import fold

    skewed = merged["skew"]
    lines = (["%s refused: %s" % (counted(len(skewed["refused"]), "report"), ", ".join(skewed["refused"][:20]))]
             if skewed["refused"] else [])
    if skewed["missing"]:
        lines.append("no report from %s" % fold(skewed["missing"]))
    for rule in merged["rules"]:
        lines.append("%s: %s: %s" % (rule["rule"], rule["message"], fold(rule["nodes"])))
    return lines
