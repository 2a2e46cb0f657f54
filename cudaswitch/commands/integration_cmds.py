"""torch / kernel / direnv-use: thin typer commands over verify/torchplan.py and integrations/."""

import os
from typing import List, Optional

import typer

from cudaswitch import render

kernel_app = typer.Typer(help="Jupyter kernels that run with a toolkit switched in.", no_args_is_help=True)


def _paths_and_loader():
    from cudaswitch import registry
    from cudaswitch.paths import Paths

    paths = Paths()
    return paths, lambda: registry.load(paths, dict(os.environ))


def torch(request: Optional[str] = typer.Argument(None, help="Toolkit for building extensions "
                                                 "(default: the active one)."),
          driver: Optional[str] = typer.Option(None, "--driver", help="Plan for a driver: its release (550.54.14) "
                                               "or the CUDA version it supports (12.4)."),
          gpu: Optional[List[str]] = typer.Option(None, "--gpu", help="Plan for a GPU by compute capability "
                                                  "(sm_61, 8.6); repeat for several."),
          python: Optional[str] = typer.Option(None, "--python", help="The Python whose installed torch to read."),
          as_json: bool = typer.Option(False, "--json")):
    """Which PyTorch CUDA builds run here (driver, every GPU's arch, the toolkit), newest first, and
    the pip / uv / conda line for the one to install. Exit 1 when the facts are known and none fits."""
    from cudaswitch.commands.verify_cmds import _check_options
    from cudaswitch.verify import torchplan

    _check_options(python)
    paths, load_registry = _paths_and_loader()
    result = torchplan.gather(paths, load_registry, dict(os.environ), request, driver, gpu, python)
    if as_json:
        render.emit_json(result)
    else:
        render.emit_lines(torchplan.plan_lines(result))
    if result["recommended"] is None and all(b["fits"] is False for b in result["builds"]):
        raise typer.Exit(1)


@kernel_app.command("install")
def kernel_install(request: str = typer.Argument(..., help="Toolkit the kernel runs with, e.g. 13.0."),
                   python: Optional[str] = typer.Option(None, "--python", help="Python with ipykernel "
                                                        "(default: python3 on the switched PATH)."),
                   name: Optional[str] = typer.Option(None, "--name", help="Kernel name (default: cuda-X.Y).")):
    """Write a kernelspec whose env is the switched environment of REQUEST."""
    from cudaswitch.commands.verify_cmds import _check_options
    from cudaswitch.integrations import kernels

    _check_options(python)
    paths, load_registry = _paths_and_loader()
    record, spec, level, line = _kernel_spec(paths, load_registry(), request, python)
    target = kernels.install(dict(os.environ), kernels.check_name(name or "cuda-" + _short(record)), spec)
    render.message("cudaswitch: " + line)
    render.emit_lines([target])


def _kernel_spec(paths, reg, request, python):
    from cudaswitch import envdiff
    from cudaswitch.integrations import kernels
    from cudaswitch.resolve import resolve
    from cudaswitch.verify.quick import verdict_for_use
    from cudaswitch.verify.runner import find_python

    env = dict(os.environ)
    record = resolve(reg, request)
    new_env = envdiff.switched(env, record, "kernel")
    chosen = find_python(new_env, python)
    if not chosen:
        from cudaswitch.errors import CudaSwitchError

        raise CudaSwitchError("no python3 on the switched PATH", "give --python")
    chosen = os.path.abspath(chosen)
    kernels.check_python(chosen, new_env)
    level, line = verdict_for_use(paths, record, new_env)
    return record, kernels.spec_for(record, request, chosen, env, new_env, line), level, line


def _short(record):
    return ".".join(record["version"].split(".")[:2])


@kernel_app.command("list")
def kernel_list(as_json: bool = typer.Option(False, "--json")):
    """The kernels cudaswitch installed."""
    from cudaswitch.integrations import kernels

    items = kernels.listing(dict(os.environ))
    if as_json:
        render.emit_json(items)
    elif items:
        render.table([[k["name"], k["version"] or "?", k["root"] or "?", k["python"] or "?"] for k in items],
                     ["NAME", "CUDA", "ROOT", "PYTHON"])
    else:
        render.message("cudaswitch: no kernels installed by cudaswitch in %s" % kernels.kernels_dir(dict(os.environ)))


@kernel_app.command("remove")
def kernel_remove(name: str = typer.Argument(..., help="The kernel's name (see `kernel list`).")):
    """Remove a kernel cudaswitch installed (others are left alone)."""
    from cudaswitch.integrations import kernels

    render.message("cudaswitch: removed %s" % kernels.remove(dict(os.environ), name))


def direnv_use(request: List[str] = typer.Argument(..., help="-- REQUEST, as `use cuda REQUEST` passes it.")):
    """What `use cuda REQUEST` in an .envrc runs (see `cudaswitch init direnv`); prints bash code."""
    from cudaswitch import fastpath

    raise typer.Exit(fastpath.FAST["direnv-use"](["--"] + [r for r in request if r != "--"]))


def register(app):
    app.command("torch")(torch)
    app.add_typer(kernel_app, name="kernel")
    app.command("direnv-use", hidden=True)(direnv_use)
