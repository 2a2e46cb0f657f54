"""`audit` (one host or root) and `audit merge` (many hosts' reports): parse, call the core, render."""

import os
import sys

from cudaswitch import render
from cudaswitch.errors import CudaSwitchError, UsageError

COMPACT_ABOVE = 1000  # hosts; a merge of more prints --json on one line


def audit(as_json=False, compact=False, root=None, compile_=False, allow_exec=False, progress=None, wide=False):
    """Which toolkits this host (or image) has, which work, and which the driver supports."""
    from cudaswitch.audit import render as audit_render
    from cudaswitch.audit.report import run_audit

    show = sys.stderr.isatty() if progress is None else progress
    with audit_render.progress_bar(show) as tick:
        report = run_audit(dict(os.environ), root=root, compile_=compile_, allow_exec=allow_exec, progress=tick)
    if as_json or compact:
        render.emit_json(report, compact=compact)
    else:
        audit_render.audit_report(report, wide=wide)
    return 0


def merge(file, as_json=False, strict=False, wide=False, nodes=None, require=(), same=(), html=None):
    """Merge many hosts' reports and the skew between them; a report that cannot be read is named
    on stderr and the rest still merge."""
    from cudaswitch.audit import merge as audit_merge
    from cudaswitch.audit import render as audit_render
    from cudaswitch.audit import hosts as cluster_hosts
    from cudaswitch.audit import skew as cluster_skew

    if not file and sys.stdin.isatty():
        raise UsageError("give report FILEs, or pipe JSON lines to stdin", "see `cudaswitch audit merge --help`")
    rules = cluster_skew.parse_require(require or []), cluster_skew.parse_same(same or [])
    expected = cluster_hosts.expand(nodes) if nodes is not None else None
    merger = audit_merge.merge_inputs(file or ["-"], sys.stdin,
                                      lambda label, error: render.message("cudaswitch: error: %s: %s" % (label, error)))
    if not merger.hosts:
        raise CudaSwitchError("no audit report could be read", "make them with `cudaswitch audit --json`")
    merged = cluster_skew.add_skew(merger.result(), merger.nodes, expected, *rules)
    if html:
        from cudaswitch.audit import html as cluster_html

        cluster_html.write_page(html, merged)
    if as_json:
        # indented JSON goes through Python's slow encoder: 10,000 nodes' is 8 MB and takes seconds
        render.emit_json(merged, compact=len(merger.hosts) > COMPACT_ABOVE)
    else:
        audit_render.merge_report(merged, wide=wide)
    failures = cluster_skew.strict_failures(merged)
    if strict and failures:
        for line in failures:
            render.message("cudaswitch: error: " + line)
        return 1
    return 0
