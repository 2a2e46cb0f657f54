"""`audit` (one host or root) and `audit merge` (many hosts' reports): parse, call the core, render."""

import os
import sys

from cudaswitch import render
from cudaswitch.errors import CudaSwitchError, UsageError


def audit(as_json=False, compact=False, root=None, compile_=False, allow_exec=False, progress=None, wide=False):
    """Which toolkits this host (or image) has, which work, and which the driver supports."""
    from cudaswitch import audit_render
    from cudaswitch.audit import run_audit

    show = sys.stderr.isatty() if progress is None else progress
    with audit_render.progress_bar(show) as tick:
        report = run_audit(dict(os.environ), root=root, compile_=compile_, allow_exec=allow_exec, progress=tick)
    if as_json or compact:
        render.emit_json(report, compact=compact)
    else:
        audit_render.audit_report(report, wide=wide)
    return 0


def merge(file, as_json=False, strict=False, wide=False):
    """Merge many hosts' reports; a report that cannot be read is named on stderr."""
    from cudaswitch import audit_merge, audit_render

    if not file and sys.stdin.isatty():
        raise UsageError("give report FILEs, or pipe JSON lines to stdin", "see `cudaswitch audit merge --help`")
    reports, errors = [], []
    for label, text, unreadable in _inputs(file or ["-"]):
        found, failed = audit_merge.parse_documents(label, text) if unreadable is None else ([], [(label, unreadable)])
        reports += found
        errors += failed
    for label, error in errors:
        render.message("cudaswitch: error: %s: %s" % (label, error))
    if not reports:
        raise CudaSwitchError("no audit report could be read", "make them with `cudaswitch audit --json`")
    merged = audit_merge.merge(reports, errors)
    if as_json:
        render.emit_json(merged)
    else:
        audit_render.merge_report(merged, wide=wide)
    return 1 if strict and errors else 0


def _inputs(files):
    """(label, text, None) per input, or (label, None, why) for a file that cannot be read."""
    for name in files:
        if name == "-":
            yield "<stdin>", sys.stdin.read(), None
            continue
        try:
            with open(name, "rb") as handle:
                yield name, handle.read().decode("utf-8", "replace"), None
        except OSError as exc:
            yield name, None, "cannot read (%s)" % (exc.strerror or exc)
