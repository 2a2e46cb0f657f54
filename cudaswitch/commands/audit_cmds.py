"""`audit` (one host or root) and `audit merge` (many hosts' reports): parse, call the core, render."""

import os
import sys
from typing import List, Optional

import typer

from cudaswitch import render
from cudaswitch.errors import CudaSwitchError, UsageError

COMPACT_ABOVE = 1000  # hosts; a merge of more prints --json on one line

audit_app = typer.Typer(invoke_without_command=True, no_args_is_help=False,
                        help="Inventory of the CUDA toolkits on this host, or under --root.")


@audit_app.callback()
def audit(ctx: typer.Context,
          as_json: bool = typer.Option(False, "--json", help="The report as JSON (DESIGN.md's shape)."),
          compact: bool = typer.Option(False, "--compact", help="JSON on one line (for JSON lines from many nodes)."),
          root: Optional[str] = typer.Option(None, "--root", metavar="DIR",
                                             help="Audit an unpacked image or a mounted node root."),
          compile_: bool = typer.Option(False, "--compile", help="Compile a one-kernel program with each toolkit."),
          allow_exec: bool = typer.Option(False, "--exec", help="With --root: allow running binaries found there."),
          progress: Optional[bool] = typer.Option(None, "--progress/--no-progress",
                                                  help="Progress bar on stderr (default: when stderr is a terminal).")):
    """Which toolkits this host (or image) has, which work, and which the driver supports."""
    if ctx.invoked_subcommand is not None:
        return
    from cudaswitch import audit_render
    from cudaswitch.audit import run_audit

    show = sys.stderr.isatty() if progress is None else progress
    with audit_render.progress_bar(show) as tick:
        report = run_audit(dict(os.environ), root=root, compile_=compile_, allow_exec=allow_exec, progress=tick)
    if as_json or compact:
        render.emit_json(report, compact=compact)
    else:
        audit_render.audit_report(report)


@audit_app.command("merge")
def merge(files: Optional[List[str]] = typer.Argument(None, metavar="[FILE]...",
                                                     help="Reports (`audit --json`); none or '-': JSON lines on stdin."),
          as_json: bool = typer.Option(False, "--json", help="The matrix and the skew report as JSON (one line above 1,000 hosts)."),
          strict: bool = typer.Option(False, "--strict",
                                      help="Exit 1 when any report is refused or missing, or a --require/--same rule is broken."),
          nodes: Optional[str] = typer.Option(None, "--nodes", metavar="HOSTLIST",
                                              help="The nodes that should have reported (node[01-64]); the others are named missing."),
          require: Optional[List[str]] = typer.Option(None, "--require", metavar="KEY=VERSION",
                                                      help="Every node must have it: cuda, cudnn, nccl, cupti or driver (cuda=12.4). Repeatable."),
          same: Optional[List[str]] = typer.Option(None, "--same", metavar="KEY",
                                                   help="Every node must agree on it: driver, branch, gpus, toolkits, cudnn, nccl or cupti. Repeatable."),
          html: Optional[str] = typer.Option(None, "--html", metavar="FILE",
                                             help="Also write the report as one self-contained HTML page.")):
    """Merge many hosts' reports into one matrix of toolkit versions x hosts, and the skew between them.

    A report that cannot be read is named on stderr and the rest still merge; the exit status is
    0 when at least one report merged (1 with --strict and anything refused, missing or against
    a rule), 1 when none did."""
    from cudaswitch import audit_merge, audit_render, cluster_hosts, cluster_skew

    if not files and sys.stdin.isatty():
        raise UsageError("give report FILEs, or pipe JSON lines to stdin", "see `cudaswitch audit merge --help`")
    rules = cluster_skew.parse_require(require or []), cluster_skew.parse_same(same or [])
    expected = cluster_hosts.expand(nodes) if nodes is not None else None
    merger = audit_merge.merge_inputs(files or ["-"], sys.stdin,
                                      lambda label, error: render.message("cudaswitch: error: %s: %s" % (label, error)))
    if not merger.hosts:
        raise CudaSwitchError("no audit report could be read", "make them with `cudaswitch audit --json`")
    merged = cluster_skew.add_skew(merger.result(), merger.nodes, expected, *rules)
    if html:
        from cudaswitch import cluster_html

        cluster_html.write_page(html, merged)
    if as_json:
        # indented JSON goes through Python's slow encoder: 10,000 nodes' is 8 MB and takes seconds
        render.emit_json(merged, compact=len(merger.hosts) > COMPACT_ABOVE)
    else:
        audit_render.merge_report(merged)
    failures = cluster_skew.strict_failures(merged)
    if strict and failures:
        for line in failures:
            render.message("cudaswitch: error: " + line)
        raise typer.Exit(1)


def register(app):
    app.add_typer(audit_app, name="audit")
