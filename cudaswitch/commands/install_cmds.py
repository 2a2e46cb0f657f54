"""`install` and `uninstall`: parse, call cudaswitch.install, render. Progress goes to stderr."""

import os
from typing import List, Optional

import typer

from cudaswitch import render
from cudaswitch.errors import UsageError


def _split(values):
    return [part.strip() for value in values or [] for part in value.split(",") if part.strip()]


def _size(num):
    return render.iec_size(num)


def install_command(
    request: Optional[str] = typer.Argument(None, help="CUDA release: 13.1, 12.4.1, 13, '>=12.1,<13' or latest."),
    components: Optional[List[str]] = typer.Option(
        None, "--components", "-c",
        help="More components, comma-separated: redist names (cublas, nvrtc, cuda_cupti) or, with "
             "--from pypi, extras of NVIDIA's cuda-toolkit package (default nvcc,cudart,cccl)."),
    source: Optional[str] = typer.Option(
        None, "--from", help="Where from: redist (NVIDIA's archives or --mirror) or pypi (NVIDIA's wheels "
                             "through pip). Default: redist, except 13+ without a mirror, which the wheels serve."),
    mirror: Optional[str] = typer.Option(
        None, "--mirror", help="Base URL of a mirror of NVIDIA's redist archives (http(s)://, file://DIR); "
                               "default: config redist_url, else NVIDIA's."),
    extras: Optional[List[str]] = typer.Option(
        None, "--with", help="Libraries from their own redist beside the toolkit: cudnn (the build for its CUDA major)."),
    prefix: Optional[str] = typer.Option(
        None, "--prefix", help="Install into this new directory (e.g. /opt/cuda/12.4, shared by a site) "
                               "instead of cudaswitch's data dir."),
    modulefile: Optional[str] = typer.Option(
        None, "--modulefile", help="Write an Lmod (Lua) and an Environment Modules (Tcl) modulefile, "
                                   "DIR/cuda/<x.y>.lua and DIR/cuda/<x.y>, for the installed toolkit."),
    list_releases: bool = typer.Option(False, "--list", help="List the releases the redist source offers instead."),
    as_json: bool = typer.Option(False, "--json", help="Print the result as JSON on stdout."),
):
    """Install a CUDA toolkit, nvcc included, into cudaswitch's data dir (no root)."""
    from cudaswitch import install
    from cudaswitch.paths import Paths

    if list_releases:
        return _list_command(mirror, as_json)
    if not request:
        raise UsageError("install needs a CUDA release (or --list)", "e.g. cudaswitch install 12.4")
    result = install.install(Paths(), dict(os.environ), request, _split(components), render.message,
                             source, mirror, _split(extras), prefix, modulefile)
    if as_json:
        render.emit_json(result)
    name = result.get("name") or result["version"]
    if result.get("installed"):
        render.message("installed CUDA %s at %s (%s, %.1f s)" % (
            name, result["root"], _size(result["size_bytes"]), result["seconds"]))
    else:
        render.message("CUDA %s is already installed at %s" % (name, result["root"]))
    for note in result["notes"]:
        render.message("note: " + note)
    for path in result.get("modulefiles") or []:
        render.message("wrote modulefile %s" % path)
    if result["nvcc"]:
        render.message("use it with: eval \"$(cudaswitch use managed:%s)\"" % _short(result["version"]))


def _list_command(mirror, as_json):
    from cudaswitch import redist_list
    from cudaswitch.paths import Paths

    result = redist_list.available(Paths(), dict(os.environ), mirror)
    if as_json:
        return render.emit_json(result)
    if result["offline"]:
        render.message("note: %s cannot be reached; releases from the cache of %s" % (result["base"], result["cached_at"]))
    rows = [[r["release"], r["date"] or "", r["components"].get("cuda_nvcc") or "-", r["size"], r["driver"]]
            for r in result["releases"]]
    render.table(rows, ["RELEASE", "DATE", "NVCC", "DOWNLOAD", "DRIVER"])


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
    render.message("removed CUDA %s from %s" % (result["name"], result["root"]))
    if result["was_active"]:
        render.message("it was active in this shell: run `eval \"$(cudaswitch off)\"` or `use` another")


def register(app):
    app.command("install")(install_command)
    app.command("uninstall")(uninstall_command)
