"""How `audit --image` and `audit merge --image` look to a person: the image's own facts and the
verdict, as lines (the toolkit table is audit/console.py's)."""

from typing import Dict, List, Tuple

from cudaswitch import render
from cudaswitch.audit import console
from cudaswitch.audit.hosts import fold

SHOWN_ENV = ("CUDA_VERSION", "NVIDIA_REQUIRE_CUDA", "NVIDIA_DISABLE_REQUIRE", "PATH", "LD_LIBRARY_PATH")


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
    console.audit_report(report, wide=wide)
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
