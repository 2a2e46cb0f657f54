"""`audit` (one host or root) and `audit merge` (many hosts' reports): parse, call the core, render."""

import os
import sys

from cudaswitch import render
from cudaswitch.errors import CudaSwitchError, UsageError, inert

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence

COMPACT_ABOVE = 1000  # hosts; a merge of more prints --json on one line


def audit(as_json: bool = False, compact: bool = False, root: "str | None" = None, compile_: bool = False,
          allow_exec: bool = False, progress: "bool | None" = None, wide: bool = False, image: "str | None" = None,
          driver: "str | None" = None, gpu: "Sequence[str]" = (), expect: "str | None" = None,
          html: "str | None" = None) -> int:
    if expect is not None:
        if image or root or driver or gpu:
            raise UsageError("--expect checks this node's policy", "drop --image, --root, --driver and --gpu")
        return _expect(expect, as_json or compact, compact)
    from cudaswitch.audit import console
    from cudaswitch.audit.inventory import run_audit

    show = sys.stderr.isatty() if progress is None else progress
    if image is not None and html is not None:
        raise UsageError("--html writes a host's page, not an image's", "audit the image without --html")
    if image is not None:
        return _audit_image(image, driver, gpu, as_json, compact, show, wide, root, compile_ or allow_exec)
    if driver or gpu or html == "":
        raise UsageError("--driver and --gpu judge an image" if html != "" else "--html needs a FILE",
                         "add --image REF" if html != "" else None)
    with console.progress_bar(show) as tick:
        report = run_audit(dict(os.environ), root=root, compile_=compile_, allow_exec=allow_exec, progress=tick)
    if html:
        _html_of_one(report, html)
    if as_json or compact:
        render.emit_json(report, compact=compact)
    else:
        console.audit_report(report, wide=wide)
    return 0


def _expect(policy_file: str, as_json: bool, compact: bool) -> int:
    """Exit 1 when a requirement is unmet: its one line is the node's drain reason."""
    from cudaswitch.audit import policy

    checks = policy.check_node(dict(os.environ), policy.load(policy_file))
    unmet = [c for c in checks if c["level"] != "ok"]
    if as_json:
        render.emit_json({"policy": policy_file, "met": not unmet, "checks": checks}, compact=compact)
    else:
        print(inert("policy unmet: " + unmet[0]["message"] if unmet else "policy met: " + "; ".join(
            c["message"] for c in checks)))
    return 1 if unmet else 0


def _html_of_one(report: dict, path: str) -> None:
    """The page `audit merge --html` writes, of this one report (read back as merge reads a file)."""
    import json

    from cudaswitch.audit import html as cluster_html
    from cudaswitch.audit import merge as audit_merge
    from cudaswitch.audit import skew as cluster_skew

    merger = audit_merge.Merger()
    error = merger.add(report.get("host") or "this host", json.loads(json.dumps(report)))
    if error is not None:
        raise CudaSwitchError("the report cannot be shown as a page: " + error)
    cluster_html.write_page(path, cluster_skew.add_skew(merger.result(), merger.nodes, None, [], []))


def _audit_image(image: str, driver: "str | None", gpu: "Sequence[str]", as_json: bool, compact: bool, show: bool,
                 wide: bool, root: "str | None", runs_something: bool) -> int:
    """`audit --image`: exit 1 when the image cannot start with the driver and GPUs judged."""
    from cudaswitch.audit import console, imageaudit

    if root is not None:
        raise UsageError("--image and --root audit different things", "give one of them")
    if runs_something:
        raise UsageError("--compile and --exec run binaries; nothing from an image is run")
    with console.progress_bar(show) as tick:
        report = imageaudit.audit_image(dict(os.environ), image, driver, gpu, progress=tick)
    if as_json or compact:
        render.emit_json(report, compact=compact)
    else:
        console.print_image_report(report, wide=wide)
    return 1 if report["image"]["runs"] is False else 0


def merge(file: "list[str] | None", as_json: bool = False, strict: bool = False, wide: bool = False,
          nodes: "str | None" = None, require: "Sequence[str]" = (), same: "Sequence[str]" = (),
          html: "str | None" = None, image: "str | None" = None) -> int:
    from cudaswitch.audit import merge as audit_merge
    from cudaswitch.audit import skew as cluster_skew

    if not file and sys.stdin.isatty():
        raise UsageError("give report FILEs or a directory of them, or pipe JSON lines to stdin",
                         "see `cudaswitch audit merge --help`")
    with audit_merge.without_cycle_collector():
        merged, pairs = _merged(file, nodes, require, same)
    if image is not None:  # not without the collector: reading an image is not a merge's plain JSON
        from cudaswitch.audit import imageaudit

        merged["image"] = imageaudit.on_nodes(image, ({"host": host, **node} for host, node in pairs))
    with audit_merge.without_cycle_collector():
        _show_merged(merged, len(pairs), as_json, wide, html)
    failures = cluster_skew.strict_failures(merged)
    if image is not None:
        failures += _image_lines(merged["image"], as_json)
    if strict and failures:
        for line in failures:
            render.message("cudaswitch: error: " + line)
        return 1
    return 0


def _merged(file: "list[str] | None", nodes: "str | None", require: "Sequence[str]",
            same: "Sequence[str]") -> "tuple[dict, list]":
    """(the merged matrix with its skew, [(host, summary)] in the order the reports came)."""
    from cudaswitch.audit import hosts as cluster_hosts
    from cudaswitch.audit import merge as audit_merge
    from cudaswitch.audit import skew as cluster_skew

    rules = cluster_skew.parse_require(require or []), cluster_skew.parse_same(same or [])
    expected = cluster_hosts.expand(nodes) if nodes is not None else None
    merger = audit_merge.merge_inputs(file or ["-"], sys.stdin,
                                      lambda label, error: render.message("cudaswitch: error: %s: %s" % (label, error)),
                                      _skipped)
    if not merger.names:
        raise CudaSwitchError("no audit report could be read", "make them with `cudaswitch audit --json`")
    pairs = merger.nodes
    return cluster_skew.add_skew(merger.result(), pairs, expected, *rules), pairs


def _show_merged(merged: dict, count: int, as_json: bool, wide: bool, html: "str | None") -> None:
    from cudaswitch.audit import console

    if html:
        from cudaswitch.audit import html as cluster_html

        cluster_html.write_page(html, merged)
    if as_json:
        # indented JSON goes through Python's slow encoder: 10,000 nodes' is 8 MB and takes seconds
        console.emit_merged_json(merged, compact=count > COMPACT_ABOVE)
    else:
        console.merge_report(merged, wide=wide)


def _skipped(directory: str, names: "list[str]") -> None:
    """One line for what a directory held besides reports: named, so a misplaced report is seen."""
    shown = ", ".join(name if name.isprintable() else repr(name) for name in names[:10])
    render.message("cudaswitch: %s: skipped %s (not *.json files): %s%s" % (
        directory, render.counted(len(names), "entry", "entries"), shown, ", ..." if len(names) > 10 else ""))


def _image_lines(result: dict, as_json: bool) -> "list[str]":
    """Print which nodes start the image (not with --json: it is in the JSON); the --strict failures."""
    from cudaswitch.audit import console

    if not as_json:
        render.emit_lines(console.node_lines(result))
    if result["cannot_run"]:
        return ["the image cannot start on %s" % result["cannot_run_hosts"]]
    return []
