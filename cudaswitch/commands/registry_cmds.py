"""list, which, local, global and config path: the registry commands a script calls; no typer."""

import os

from cudaswitch import render
from cudaswitch.errors import UsageError


def _context(refresh=False):
    from cudaswitch.registry import discover as registry
    from cudaswitch.paths import Paths

    paths = Paths()
    return paths, registry.load(paths, dict(os.environ), refresh=refresh)


def list_(as_json=False, refresh=False, wide=False):
    from cudaswitch import core

    _, reg = _context(refresh)
    if as_json and not render.stdout_is_terminal():  # a script reading it: the pre-rendered text
        render.emit_json_text(core.list_json_text(reg, os.environ))
        return 0
    items = core.list_items(reg, os.environ)
    if as_json:
        render.emit_json(items)
    elif items:
        render.toolkit_table(items, wide=wide)
    else:
        from cudaswitch.registry.sources import searched  # only when nothing was found: it imports every source

        render.toolkit_table(items, searched(reg["source_order"]))
    return 0


def which(request=None, tool=None):
    from cudaswitch import core

    _, reg = _context()
    render.emit_lines([core.which(reg, os.environ, request, tool)])
    return 0


def _request_or_unset(request, unset):
    if unset == (request is not None):
        raise UsageError("give a REQUEST or --unset")


def local(request=None, unset=False):
    from cudaswitch.switch import local as project_cmds

    _request_or_unset(request, unset)
    render.message(project_cmds.set_local(request, unset))
    return 0


def global_(request=None, unset=False):
    from cudaswitch import core

    _request_or_unset(request, unset)
    paths, reg = _context()
    render.message(core.set_global(paths, reg, request))
    return 0


def config_path():
    from cudaswitch.paths import Paths

    render.emit_lines([Paths().config_file])
    return 0


def config_show(as_json=False):
    """Effective settings; as TOML (what the file would say) for people, or JSON."""
    from cudaswitch import config
    from cudaswitch.paths import Paths

    paths = Paths()
    settings = config.load(paths)
    if as_json:
        render.emit_json({"file": paths.config_file, "settings": settings})
        return 0
    import tomli_w

    render.message("# %s, with defaults filled in" % paths.config_file)
    render.emit_text(tomli_w.dumps(settings))
    return 0
