"""`audit` (one host or root) and `audit merge` (many hosts' reports): parse, call the core, render."""

import os
import sys
from typing import List, Optional

import typer

from cudaswitch import render
from cudaswitch.errors import CudaSwitchError, UsageError

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
                                                  help="Progress bar on stderr (default: when stderr is a terminal)."),
          wide: bool = typer.Option(False, "--wide", help="Every value whole: no shortened roots, whatever the width.")):
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
        audit_render.audit_report(report, wide=wide)


@audit_app.command("merge")
def merge(files: Optional[List[str]] = typer.Argument(None, metavar="[FILE]...",
                                                     help="Reports (`audit --json`); none or '-': JSON lines on stdin."),
          as_json: bool = typer.Option(False, "--json", help="The matrix as JSON."),
          strict: bool = typer.Option(False, "--strict", help="Exit 1 when any report is refused."),
          wide: bool = typer.Option(False, "--wide", help="Every value whole, whatever the width.")):
    """Merge many hosts' reports into one matrix of toolkit versions x hosts.

    A report that cannot be read is named on stderr and the rest still merge; the exit status is
    0 when at least one report merged (1 with --strict and any refused), 1 when none did."""
    from cudaswitch import audit_merge, audit_render

    if not files and sys.stdin.isatty():
        raise UsageError("give report FILEs, or pipe JSON lines to stdin", "see `cudaswitch audit merge --help`")
    reports, errors = [], []
    for label, text, unreadable in _inputs(files or ["-"]):
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
    if strict and errors:
        raise typer.Exit(1)


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


def register(app):
    app.add_typer(audit_app, name="audit")
