"""`install` and `uninstall`: parse, call cudaswitch.install, render. Progress goes to stderr."""

import os
from typing import List, Optional

import typer

from cudaswitch import render


def _split(values):
    return [part.strip() for value in values or [] for part in value.split(",") if part.strip()]


def _size(num):
    return "%.0f MiB" % (num / 1048576.0)


def install_command(
    request: str = typer.Argument(..., help="CUDA release: 13.1, 12.4, 13, '>=12.1,<13' or latest."),
    components: Optional[List[str]] = typer.Option(
        None, "--components", "-c",
        help="Extras of NVIDIA's cuda-toolkit package, comma-separated (default nvcc,cudart,cccl; "
             "e.g. nvrtc, cupti, cublas, all)."),
    as_json: bool = typer.Option(False, "--json", help="Print the result as JSON on stdout."),
):
    """Install a CUDA toolkit from NVIDIA's PyPI wheels into cudaswitch's data dir (no root)."""
    from cudaswitch import install
    from cudaswitch.paths import Paths

    result = install.install(Paths(), dict(os.environ), request, _split(components), render.message)
    if as_json:
        render.emit_json(result)
    if result.get("installed"):
        render.message("installed CUDA %s at %s (%s, %.1f s)" % (
            result["version"], result["root"], _size(result["size_bytes"]), result["seconds"]))
    else:
        render.message("CUDA %s is already installed at %s" % (result["version"], result["root"]))
    for note in result["notes"]:
        render.message("note: " + note)
    if result["nvcc"]:
        from cudaswitch import hints

        render.message(hints.use_hint(os.environ, "managed:" + _short(result["version"])))


def _short(version):
    return ".".join(version.split(".")[:2])


def uninstall_command(
    request: str = typer.Argument(..., help="A managed toolkit: 13.0, 13.0.3, managed:12.4 or its path."),
    force: bool = typer.Option(False, "--force", help="Remove it even if it is active in this shell."),
):
    """Remove a toolkit that `cudaswitch install` made (never any other)."""
    from cudaswitch import install, registry
    from cudaswitch.paths import Paths

    paths = Paths()
    reg = registry.load(paths, dict(os.environ))
    result = install.uninstall(paths, os.environ, reg, request, force)
    render.message("removed CUDA %s from %s" % (os.path.basename(result["root"]), result["root"]))
    if result["was_active"]:
        from cudaswitch import envdiff, hints

        render.message(hints.after_removing_active(os.environ, envdiff.read_state(os.environ), os.getcwd()))


def register(app):
    app.command("install")(install_command)
    app.command("uninstall")(uninstall_command)
