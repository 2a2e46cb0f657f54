"""`install` and `uninstall`: parse, call cudaswitch.install, render. Progress goes to stderr."""

import os

from cudaswitch import render


def _split(values):
    return [part.strip() for value in values or [] for part in value.split(",") if part.strip()]


def _size(num):
    return "%.0f MiB" % (num / 1048576.0)


def install(request, components=(), as_json=False):
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
        render.message("use it with: eval \"$(cudaswitch use managed:%s)\"" % _short(result["version"]))
    return 0


def _short(version):
    return ".".join(version.split(".")[:2])


def uninstall(request, force=False):
    """Remove a toolkit that `cudaswitch install` made (never any other)."""
    from cudaswitch import install, registry
    from cudaswitch.paths import Paths

    paths = Paths()
    reg = registry.load(paths, dict(os.environ))
    result = install.uninstall(paths, os.environ, reg, request, force)
    render.message("removed CUDA %s from %s" % (os.path.basename(result["root"]), result["root"]))
    if result["was_active"]:
        render.message("it was active in this shell: run `eval \"$(cudaswitch off)\"` or `use` another")
    return 0
