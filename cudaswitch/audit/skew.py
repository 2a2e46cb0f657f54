"""The skew between nodes that breaks multi-node jobs (drivers, toolkits and libraries on some
nodes only, GPUs a toolkit cannot target, missing reports), node types, and `--require` / `--same`
rules, from `audit merge`'s (host, summary) pairs: each fact is computed once per summary.
"""

import collections
import functools
import re
from typing import Any, Callable, Dict, Hashable, List, Optional, Sequence, Set, cast

from cudaswitch.audit.hosts import fold
from cudaswitch.audit.inventory import job_mtus
from cudaswitch.audit.validate import TRACKED, VERSION
from cudaswitch.errors import UsageError
from cudaswitch.render import counted
from cudaswitch.toolkit import STATUSES, version_tuple

REQUIRE_KEYS = ("cuda",) + TRACKED + ("driver",)
SAME_KEYS = ("driver", "branch", "gpus", "toolkits") + TRACKED
DIGITS = re.compile(r"(\d+)")
STATUS_RANK: Dict[Optional[str], int] = {status: rank for rank, status in enumerate(STATUSES)}  # ok best, broken worst

# Nodes share a handful of versions: sort keys and GPU checks are computed once per value.
version_key = functools.lru_cache(maxsize=8192)(version_tuple)
# A fact of a node's summary; `...`: its lambdas bind loop values as default arguments
ValueOf = Callable[..., Any]


def node_summary(report: dict) -> dict:
    """What the skew report compares of a valid report: made once per shape, shared by its nodes."""
    driver = report.get("driver") or {}
    release = driver.get("release")
    toolkits: Dict[str, str] = {}
    versions: Dict[str, str] = {}
    unsupported: Set[str] = set()
    components: Dict[str, Set[str]] = {key: set() for key in TRACKED}
    for entry in report["toolkits"]:
        version, status = entry.get("version"), entry["status"]
        if version:
            short = cast(str, _short(version))  # a version has a major.minor
            _keep_best(toolkits, short, status)
            _keep_best(versions, version, status)
            if entry.get("driver_supported") is False:
                unsupported.add(short)
        found = entry.get("components") or {}
        for key in TRACKED:
            if found.get(key):
                components[key].add(found[key])
    gpus = collections.Counter((gpu.get("name") or gpu.get("model") or "unknown GPU", gpu.get("capability"))
                               for gpu in report.get("gpus") or ())
    return {"driver": release, "branch": release.split(".")[0] if release else None,
            "driver_cuda": driver.get("cuda"), "toolkits": toolkits, "unsupported": sorted(unsupported),
            "versions": {v: versions[v] for v in sorted(versions, key=version_key)},
            "components": {key: sorted(components[key], key=version_key) for key in TRACKED},
            "gpus": sorted((model, capability, count) for (model, capability), count in gpus.items()),
            # None for a report from before audit read them: such reports merge byte for byte as they did
            "nccl": sorted({c["version"] or "unknown" for c in report["nccl"]},
                           key=lambda v: version_key(v) if v[:1].isdigit() else (-1,))
            if isinstance(report.get("nccl"), list) else None,
            "mtus": job_mtus(report["interfaces"]) if isinstance(report.get("interfaces"), list) else None}


def _keep_best(best: Dict[str, str], version: str, status: str) -> None:
    """best[version] = the best status seen for it (ok over incomplete over broken)."""
    if version and STATUS_RANK[status] < STATUS_RANK.get(best.get(version), len(STATUSES)):
        best[version] = status


@functools.lru_cache(maxsize=8192)
def _short(version: Optional[str]) -> Optional[str]:
    return ".".join(version.split(".")[:2]) if version else None


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


def _shown(text: str, limit: int = 40) -> str:
    """A short, printable prefix of what the user typed: an error stays one line."""
    text = text if text.isprintable() else repr(text)
    return text if len(text) <= limit else text[:limit] + "..."


class Nodes:
    """The merged nodes in name order (node2 before node10), each as its host and its summary's index."""

    def __init__(self, pairs: List[tuple]) -> None:
        ordered = sorted(pairs, key=_name_order)
        distinct = {id(summary): summary for _, summary in ordered}  # alive with `pairs`: no id is reused
        index = {key: number for number, key in enumerate(distinct)}
        self.hosts: List[str] = [host for host, _ in ordered]
        self.sids: List[int] = [index[id(summary)] for _, summary in ordered]
        self.summaries: List[dict] = list(distinct.values())

    def __len__(self) -> int:
        return len(self.hosts)

    def group(self, value_of: ValueOf) -> dict:
        """{value_of(summary): [hosts]}, values in the order first seen."""
        values = [value_of(summary) for summary in self.summaries]
        lists: dict = {value: [] for value in values}
        if len(lists) == 1:
            return {values[0]: list(self.hosts)}
        per_summary = [lists[value] for value in values]
        for host, number in zip(self.hosts, self.sids):
            per_summary[number].append(host)
        return lists

    def where(self, test: ValueOf) -> List[str]:
        """[hosts] whose summary passes test."""
        passes = [bool(test(summary)) for summary in self.summaries]
        if all(passes):
            return list(self.hosts)
        return [host for host, number in zip(self.hosts, self.sids) if passes[number]] if any(passes) else []


def _gpu_text(node: dict) -> str:
    return ", ".join("%dx %s%s" % (count, model, " (sm_%s)" % cap.replace(".", "") if cap else "")
                     for model, cap, count in node["gpus"]) or "none found"


def _driver_text(node: dict) -> str:
    """The release, else the CUDA version the driver supports (libcuda-only reads: WSL, containers),
    so two such nodes of different drivers are not "the same"."""
    if node["driver"]:
        return node["driver"]
    return "CUDA %s (release unknown)" % node["driver_cuda"] if node["driver_cuda"] else "none found"


def _driver_compared_by(nodes: Nodes) -> str:
    """What the driver skew could compare: "release", "cuda" (no release known), "release or cuda"."""
    kinds = {"release" if n["driver"] else "cuda" for n in nodes.summaries if n["driver"] or n["driver_cuda"]}
    return " or ".join(sorted(kinds, reverse=True)) or "none"


# What `--same KEY` compares, as the text shown for each node's value.
VALUE_OF: Dict[str, ValueOf] = {
    "driver": _driver_text,
    "branch": lambda n: n["branch"] or "none found",
    "gpus": _gpu_text,
    "toolkits": lambda n: " ".join(sorted(n["toolkits"], key=version_key)) or "none",
    **{key: lambda n, key=key: " ".join(n["components"][key]) or "none" for key in TRACKED},
}


def skew(nodes: Nodes, expected: Optional[List[str]], errors: List[dict]) -> dict:
    """Every fact of the skew report as data (what `--json` prints under "skew")."""
    reported = set(nodes.hosts) | {h.split(" (", 1)[0] for h in nodes.hosts}  # 'node01 (file)': a renamed duplicate
    return {
        "driver": {"releases": nodes.group(VALUE_OF["driver"]), "branches": nodes.group(VALUE_OF["branch"]),
                   "cuda": nodes.group(lambda n: n["driver_cuda"] or "none found"),
                   "compared_by": _driver_compared_by(nodes)},
        "toolkits": _partial(nodes, lambda n: n["toolkits"]),
        "components": {key: _partial(nodes, lambda n, key=key: n["components"][key]) for key in TRACKED},
        "gpus": {"models": nodes.group(_gpu_text), "cannot_target": cannot_target(nodes)},
        "driver_cannot_run": _unsupported(nodes),
        "missing": [name for name in expected or [] if name not in reported],
        "refused": [e["file"] for e in errors],
        **_net_skew(nodes),
    }


def _net_skew(nodes: Nodes) -> dict:
    """NCCL versions and MTUs, where some report has them."""
    if all(summary["nccl"] is None and summary["mtus"] is None for summary in nodes.summaries):
        return {}
    return {"nccl": nodes.group(lambda n: " ".join(n["nccl"] or ()) or "none found"), "mtu": mtu_skew(nodes)}


def mtu_skew(nodes: Nodes) -> dict:
    """{interface: {mtu: [hosts]}} where MTUs differ between nodes (NCCL's connections then hang)."""
    names = {name for summary in nodes.summaries for name, _ in summary["mtus"] or ()}
    out = {}
    for name in sorted(names):
        grouped = nodes.group(lambda n, name=name: str(dict(n["mtus"] or ()).get(name, "down or absent")))
        if len([mtu for mtu in grouped if mtu != "down or absent"]) > 1:
            out[name] = grouped
    return out


def _partial(nodes: Nodes, versions_of: ValueOf) -> List[dict]:
    """[{version, on, missing_on}] for each version present on some nodes but not all."""
    versions = {version for summary in nodes.summaries for version in versions_of(summary)}
    out = []
    for version in sorted(versions, key=version_key, reverse=True):
        missing = nodes.where(lambda n, version=version: version not in versions_of(n))
        if missing:
            out.append({"version": version, "on": len(nodes) - len(missing), "missing_on": missing})
    return out


def _unsupported(nodes: Nodes) -> List[dict]:
    """[{toolkit, nodes}] where the node's driver is too old for a toolkit it has (the audit's verdict)."""
    shorts = {short for summary in nodes.summaries for short in summary["unsupported"]}
    return [{"toolkit": short, "nodes": nodes.where(lambda n, short=short: short in n["unsupported"])}
            for short in sorted(shorts, key=version_key)]


def cannot_target(nodes: Nodes) -> List[dict]:
    """[{toolkit, gpu, model, nodes}]: a toolkit that cannot build for a GPU of its node
    (compat.toml's arch table); a GPU without a capability (/proc's model only) is not judged."""
    failing = {id(n): {(short, capability, model) for model, capability, _ in n["gpus"] if capability
                       for short in n["toolkits"] if _cannot_build(short, capability)} for n in nodes.summaries}
    keys = {key for found in failing.values() for key in found}
    return [{"toolkit": short, "gpu": "sm_" + capability.replace(".", ""), "model": model,
             "nodes": nodes.where(lambda n, key=(short, capability, model): key in failing[id(n)])}
            for short, capability, model in sorted(keys, key=lambda k: (version_key(k[0]), k[1:]))]


@functools.lru_cache(maxsize=1024)
def _cannot_build(short: str, capability: str) -> bool:
    """CUDA `short` is outside the first and last CUDA of the GPU's table-6 row (no row: not known)."""
    from cudaswitch.verify import facttables

    row, have = facttables.arch_row(capability), version_key(short)[:2]
    return row is not None and (have < version_key(row["first"])[:2]
                                or bool(row.get("last")) and have > version_key(row["last"])[:2])


def node_types(nodes: Nodes) -> List[dict]:
    """Identical nodes grouped (driver, GPUs, toolkits with status, libraries), largest first."""
    first: dict = {}
    for summary in nodes.summaries:
        first.setdefault(_type_key(summary), summary)
    groups = [{"facts": _type_facts(first[key]), "nodes": hosts} for key, hosts in nodes.group(_type_key).items()]
    ordered = sorted(groups, key=lambda g: -len(g["nodes"]))
    return [{"name": "type %d" % number, **group} for number, group in enumerate(ordered, 1)]


def _type_key(node: dict) -> Hashable:
    return (node["driver"], node["driver_cuda"], tuple(node["gpus"]), tuple(sorted(node["toolkits"].items())),
            tuple(node["versions"].items()), tuple((k, tuple(v)) for k, v in sorted(node["components"].items())),
            tuple(node["unsupported"]), tuple(node["nccl"] or ()), node["mtus"])


def _type_facts(node: dict) -> dict:
    return {"driver": node["driver"], "driver_cuda": node["driver_cuda"], "gpus": _gpu_text(node),
            "toolkits": dict(sorted(node["toolkits"].items(), key=lambda kv: version_key(kv[0]))),
            "versions": node["versions"], "components": node["components"], "driver_cannot_run": node["unsupported"],
            **({} if node["nccl"] is None else {"nccl": node["nccl"], "mtus": dict(node["mtus"] or ())})}


def check_rules(nodes: Nodes, require: List[tuple], same: List[str]) -> List[dict]:
    """[{rule, nodes, message}], one per broken rule, naming the nodes that break it."""
    broken = []
    for key, version in require:
        failing = nodes.where(lambda n, key=key, version=version: not _has(n, key, version))
        if failing:
            broken.append({"rule": "require %s=%s" % (key, version), "nodes": failing,
                           "message": "%s %s is not on %s" % (key, version, counted(len(failing), "node"))})
    for key in same:
        values = nodes.group(VALUE_OF[key])
        if len(values) > 1:
            common = max(values, key=lambda v: len(values[v]))
            failing = [h for value, hosts in values.items() if value != common for h in hosts]
            broken.append({"rule": "same %s" % key, "nodes": failing, "common": common,
                           "message": "%s in %s from %s (on %d)"
                                      % (counted(len(failing), "node differs", "nodes differ"), key, common,
                                         len(values[common]))})
    return broken


def _has(node: dict, key: str, version: str) -> bool:
    """Whether the node has `version` of `key` (12.4 matches 12.4.131); a broken toolkit does not count."""
    if key == "cuda":
        have = [v for v, status in list(node["toolkits"].items()) + list(node["versions"].items())
                if status != "broken"]
    elif key == "driver":
        have = [node["driver"]] if node["driver"] else []
    else:
        have = node["components"][key]
    return any(v == version or v.startswith(version + ".") for v in have)


def add_skew(merged: dict, nodes: List[tuple], expected: Optional[List[str]], require: List[tuple],
             same: List[str]) -> dict:
    """`merged` with "skew", "node_types" and "rules" added."""
    index = Nodes(nodes)
    merged["skew"] = skew(index, expected, merged["errors"])
    merged["node_types"] = node_types(index)
    merged["rules"] = check_rules(index, require, same)
    return merged


def _name_order(pair: tuple) -> List[Any]:
    """node2 before node10: digit runs (the split's odd places) compare as numbers."""
    parts = DIGITS.split(pair[0])
    parts[1::2] = map(int, parts[1::2])
    return parts


def strict_failures(merged: dict) -> List[str]:
    """One line per reason `--strict` fails: refused reports, missing nodes, broken rules."""
    skewed = merged["skew"]
    lines = (["%s refused: %s" % (counted(len(skewed["refused"]), "report"), ", ".join(skewed["refused"][:20]))]
             if skewed["refused"] else [])
    if skewed["missing"]:
        lines.append("no report from %s" % fold(skewed["missing"]))
    for rule in merged["rules"]:
        lines.append("%s: %s: %s" % (rule["rule"], rule["message"], fold(rule["nodes"])))
    return lines
