"""list, which, local, global and config path: the registry commands a script calls; no typer."""

import os

from cudaswitch import render
from cudaswitch.commands import load_registry
from cudaswitch.errors import CudaSwitchError, UsageError
from cudaswitch.paths import Paths

TYPE_CHECKING = False
if TYPE_CHECKING:
    from types import ModuleType
    from typing import Any


def list_(as_json: bool = False, refresh: bool = False, wide: bool = False, runnable: bool = False) -> int:
    from cudaswitch.switch.lookup import Lookup, list_items, list_json_text
    from cudaswitch.verify import runs_here

    paths, reg = load_registry(refresh)
    runs = runs_here.verdicts(paths, os.environ, reg["records"])
    if runnable:  # what this driver runs: ok, through minor-version or forward compatibility
        if runs_here.driver_unknown(runs):  # an empty answer would read as "none runs here"
            raise CudaSwitchError("no NVIDIA driver is readable on this host: cannot tell which of the %d "
                                  "toolkits found runs here" % len(reg["records"]), "`cudaswitch list` lists them all")
        keep = [i for i, r in enumerate(reg["records"]) if runs[r["root"]]["runs"] in runs_here.RUNS]
        if reg["records"] and not keep and not as_json:
            render.message("cudaswitch: none of the %d toolkits found runs on this host's driver (`cudaswitch list` "
                           "says why)" % len(reg["records"]))
            return 0
        reg = dict(reg, records=[reg["records"][i] for i in keep], list_json=[reg["list_json"][i] for i in keep])
    picks = _partial_picks(reg, runs)
    if as_json and not render.stdout_is_terminal():  # a script reading it: the pre-rendered text
        render.emit_json_text(list_json_text(Lookup(reg, os.environ), runs, picks))
        return 0
    items = list_items(Lookup(reg, os.environ), runs, picks)
    if as_json:
        render.emit_json(items)
    elif items:
        render.toolkit_table(items, wide=wide)
    else:
        from cudaswitch.registry.sources import searched  # only when nothing was found: it imports every source

        render.toolkit_table(items, searched(reg["source_order"]))
    return 0


def _partial_picks(reg: dict, runs: dict) -> dict:
    """{root: ["12", "latest"]}: the partial requests (each major, latest) that would pick a toolkit,
    by the rule `use` follows (request.choose, preferring what compiles and what this driver runs)."""
    from cudaswitch.request import ToolkitRequest, choose

    firsts = {str(r.get("version") or "").split(".")[0] for r in reg["records"]}
    majors = sorted((m for m in firsts if m.isascii() and m.isdigit() and len(m) <= 6), key=int)
    picks: "dict[str, list[str]]" = {}
    for text in majors + ["latest"]:
        found, _ = choose(ToolkitRequest.parse(text), reg["records"], reg["source_order"], reg["system_real"],
                          lambda r: runs[r["root"]]["runs"] != "no")
        if found:
            picks.setdefault(found["root"], []).append(text)
    return picks


def which(request: "str | None" = None, tool: "str | None" = None) -> int:
    from cudaswitch.switch.lookup import Lookup, which as which_path

    _, reg = load_registry()
    render.emit_lines([which_path(Lookup(reg, os.environ), request, tool)])
    return 0


def _request_or_unset(request: "str | None", unset: bool) -> None:
    if unset and request is not None:
        raise UsageError("give a REQUEST or --unset, not both")


def _shown(value: "str | None", origin: str, none: str) -> int:
    """`local`/`global` without a value: the one in effect on stdout, where it comes from on stderr."""
    if value is None:
        render.message("cudaswitch: " + none)
        return 1
    render.emit_lines([value])
    render.message("cudaswitch: from " + origin)
    return 0


def local(request: "str | None" = None, unset: bool = False) -> int:
    from cudaswitch.switch.local import set_local

    _request_or_unset(request, unset)
    if request is None and not unset:
        from cudaswitch.switch import projectfile

        found = projectfile.find(os.getcwd())
        return _shown(found and found[1], found[0] if found else "",
                      "no project file (.cudaversion, .tool-versions, pyproject.toml) here or above")
    render.message(set_local(request or "", unset))
    return 0


def global_(request: "str | None" = None, unset: bool = False) -> int:
    from cudaswitch.switch.lookup import Lookup, set_global

    _request_or_unset(request, unset)
    if request is None and not unset:
        from cudaswitch import config

        path = Paths().config_file
        return _shown(config.get(Paths(), "default")[0], path, "no default toolkit is set in " + path)
    paths, reg = load_registry()
    render.message(set_global(paths, Lookup(reg, os.environ), request))
    return 0


def config_path() -> int:
    render.emit_lines([Paths().config_file])
    return 0


def config_get(key: str) -> int:
    from cudaswitch import config

    value, origin = config.get(Paths(), key)
    if value is None:
        render.message("cudaswitch: %s is not set: %s" % (key, config.UNSET.get(key, "no value")))
        return 1
    render.emit_lines([_plain(value)])
    render.message("cudaswitch: %s comes from %s" % (key, Paths().config_file if origin == "config.toml" else origin))
    return 0


def _plain(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return ",".join(str(item) for item in value)
    return "%g" % value if isinstance(value, float) else str(value)


def config_set(key: str, value: str) -> int:
    from cudaswitch import config

    paths = Paths()
    typed = config.typed_value(key, value)
    config.update(paths, **{key: typed})
    render.message("cudaswitch: %s = %s in %s" % (key, _plain(typed), paths.config_file))
    return 0


def config_unset(key: str) -> int:
    from cudaswitch import config

    paths = Paths()
    if config.unset(paths, key):
        render.message("cudaswitch: %s removed from %s" % (key, paths.config_file))
    else:
        render.message("cudaswitch: %s was not set in %s; nothing changed" % (key, paths.config_file))
    return 0


def config_show(as_json: bool = False) -> int:
    from cudaswitch import config

    paths = Paths()
    rows = config.effective(paths)
    settings = {key: value for key, value, _ in rows if value is not None}
    if as_json:
        render.emit_json({"file": paths.config_file, "settings": settings,
                          "origins": {key: origin for key, _, origin in rows},
                          "unset": {key: config.UNSET.get(key) for key, value, _ in rows if value is None},
                          "unknown": config.unknown_keys(settings)})
        return 0
    render.message("# %s: every setting, from that file or its default" % paths.config_file)
    render.emit_lines(_setting_lines(config, rows))
    return 0


def _setting_lines(config: "ModuleType", rows: "list[tuple[str, Any, str]]") -> "list[str]":
    import tomli_w

    lines, tables = [], []
    for key, value, origin in rows:
        if value is None:
            lines.append("# %s is not set: %s" % (key, config.UNSET.get(key, "no value")))
            continue
        note = origin if key in config.CHECKS else "%s: unknown key, ignored (%s)" % (
            origin, config.unknown_key_note(key))
        if isinstance(value, dict) or (isinstance(value, list) and any(isinstance(v, (dict, list)) for v in value)):
            # a [table] takes every key after it: last, its note above it
            tables += ["# %s" % note] + tomli_w.dumps({key: value}).strip().splitlines()
        else:
            lines.append("%-40s # %s" % (_toml_line(tomli_w, key, value), note))
    return lines + tables


def _toml_line(tomli_w: "ModuleType", key: str, value: object) -> str:
    """One line of TOML for a key (tomli_w spreads a list over lines, which buries its comment)."""
    text = tomli_w.dumps({key: value}).strip()
    if isinstance(value, list):
        items = [tomli_w.dumps({"x": item}).strip()[len("x = "):] for item in value]
        text = "%s = [%s]" % (text.split(" = ", 1)[0], ", ".join(items))
    return text
