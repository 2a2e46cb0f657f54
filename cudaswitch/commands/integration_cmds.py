"""torch / kernel / direnv-use: thin commands over verify/torchplan.py and integrations/."""

import os

from cudaswitch import render
from cudaswitch.commands import load_registry
from cudaswitch.paths import Paths
from cudaswitch.toolkit import short_version

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence


def torch(request: "str | None" = None, driver: "str | None" = None, gpu: "Sequence[str]" = (),
          python: "str | None" = None, as_json: bool = False, node: "str | None" = None) -> int:
    from cudaswitch.commands.verify_cmds import check_options
    from cudaswitch.registry import discover
    from cudaswitch.verify import torchplan

    check_options(python)
    paths = Paths()  # the registry is loaded only when the plan needs a toolkit
    result = torchplan.gather(paths, lambda: discover.load(paths, dict(os.environ)), dict(os.environ), request,
                              driver, gpu, python, node=node)
    if as_json:
        render.emit_json(result)
    else:
        from cudaswitch.verify.present import plan_lines

        render.emit_prose(plan_lines(result))
    nothing_fits = result["recommended"] is None and all(b["fits"] is False for b in result["builds"])
    return 1 if nothing_fits else 0


def kernel_install(request: str, python: "str | None" = None, name: "str | None" = None) -> int:
    from cudaswitch.commands.verify_cmds import check_options
    from cudaswitch.errors import CudaSwitchError
    from cudaswitch.integrations import kernels
    from cudaswitch.registry.resolve import resolve
    from cudaswitch.switch.decide import switch_plan
    from cudaswitch.verify.quick import verdict_for_use
    from cudaswitch.verify.runner import find_python

    check_options(python)
    if name is not None:  # refused before any toolkit or Python is asked
        kernels.check_name(name)
    paths, reg = load_registry()
    env = dict(os.environ)
    record = resolve(reg, request)
    new_env = switch_plan(reg, env, record, "kernel", paths=paths).env  # what `use` would give
    chosen = find_python(new_env, python)
    if not chosen:
        raise CudaSwitchError("no python3 on the switched PATH", "give --python")
    chosen = os.path.abspath(chosen)
    new_env["PATH"] = kernels.kernel_path(new_env.get("PATH", ""), chosen)
    kernels.check_python(chosen, new_env)
    line = verdict_for_use(paths, record, new_env)[1]
    spec = kernels.spec_for(record, request, chosen, env, new_env, line)
    target = kernels.install(env, kernels.check_name(name or "cuda-" + short_version(record["version"])), spec)
    render.message("cudaswitch: " + line)
    render.emit_lines([target])
    return 0


def kernel_list(as_json: bool = False) -> int:
    from cudaswitch.integrations import kernels

    items = kernels.listing(dict(os.environ))
    if as_json:
        render.emit_json(items)
    elif items:
        render.table([[k["name"], k["version"] or "?", k["root"] or "?", k["python"] or "?"] for k in items],
                     ["NAME", "CUDA", "ROOT", "PYTHON"])
    else:
        render.message("cudaswitch: no kernels installed by cudaswitch in %s" % kernels.kernels_dir(dict(os.environ)))
    return 0


def kernel_remove(name: str) -> int:
    from cudaswitch.integrations import kernels

    render.message("cudaswitch: removed %s" % kernels.remove(dict(os.environ), name))
    return 0


def direnv_use(words: "list[str]") -> int:
    """What `use cuda REQUEST` in an .envrc runs: bash code on stdout, the verdict on stderr."""
    from cudaswitch.commands.switch_cmds import report_switch
    from cudaswitch.integrations import direnv
    from cudaswitch.switch.shells import bash

    paths, env = Paths(), dict(os.environ)
    switch = direnv.switch_for_envrc(paths, env, words)
    text = bash.render(switch.diff)
    report_switch(paths, switch.record, switch.env)
    render.emit_text(text)
    return 0
