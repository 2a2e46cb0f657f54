"""`install` and `uninstall`: parse, call cudaswitch.install.installer, render. Progress goes to stderr."""

import os

from cudaswitch import envstate, render
from cudaswitch.commands import load_registry
from cudaswitch.errors import UsageError
from cudaswitch.paths import Paths
from cudaswitch.toolkit import short_version

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence


def _split(values: "Sequence[str] | None") -> "list[str]":
    return [part.strip() for value in values or [] for part in value.split(",") if part.strip()]


def install(request: "str | None" = None, components: "Sequence[str]" = (), source: "str | None" = None,
            mirror: "str | None" = None, extras: "Sequence[str]" = (), prefix: "str | None" = None,
            modulefile: "str | None" = None, list_releases: bool = False, as_json: bool = False,
            pre: bool = False) -> int:
    from cudaswitch.install import installer

    if list_releases:
        return _list_command(source, mirror, as_json, pre)
    if not request:
        raise UsageError("install needs a CUDA release (or --list)", "e.g. cudaswitch install 12.4")
    result = installer.install(Paths(), dict(os.environ), request, _split(components), render.message,
                             source, mirror, _split(extras), prefix, modulefile, pre)
    if as_json:
        render.emit_json(result)
    name = result.get("name") or result["version"]
    if result.get("installed"):
        render.message("installed CUDA %s at %s (%s, %.1f s)" % (
            name, result["root"], render.iec_size(result["size_bytes"]), result["seconds"]))
    else:
        render.message("CUDA %s is already installed at %s" % (name, result["root"]))
    for note in result["notes"]:
        render.message("note: " + note)
    for path in result.get("modulefiles") or []:
        render.message("wrote modulefile %s" % path)
    if result["nvcc"]:
        from cudaswitch.switch.shells.hints import switch_command

        render.message("use it with: " + switch_command(os.environ, "use managed:" + short_version(result["version"])))
    return 0


def _list_command(source: "str | None", mirror: "str | None", as_json: bool, pre: bool) -> int:
    from cudaswitch.install import installer, redist_install

    paths, env = Paths(), dict(os.environ)
    # --from pypi: what the index pip uses offers, asked through pip (NVIDIA's server is not asked)
    pypi = redist_install.choose_source(paths, "latest", source or "redist", mirror) == "pypi"
    result = installer.pypi_releases(paths, env, pre) if pypi else redist_install.available(paths, env, mirror)
    if as_json:
        render.emit_json(result)
    elif pypi:
        _show_wheels(result)
    else:
        if result["offline"]:
            render.message("note: %s cannot be reached; releases from the cache of %s"
                           % (result["base"], result["cached_at"]))
        rows = [[r["release"], r["date"] or "", r["components"].get("cuda_nvcc") or "-", r["size"], r["driver"]]
                for r in result["releases"]]
        render.table(rows, ["RELEASE", "DATE", "NVCC", "DOWNLOAD", "DRIVER"])
    return 0


def _show_wheels(result: dict) -> None:
    from cudaswitch.install import installer

    render.message("cudaswitch: NVIDIA's cuda-toolkit wheels on %s (through pip)" % result["base"])
    if result["offline"]:
        render.message("note: %s offers no release now (offline?); releases from the cached listing of %s"
                       % (result["base"], result["cached_at"]))
    render.table([[r["release"], r["package"] + (" (pre-release)" if r["pre_release"] else ""),
                   "toolkit with nvcc" if r["nvcc"] else installer.RUNTIME_ONLY, r["driver"]]
                  for r in result["releases"]], ["RELEASE", "PACKAGE", "CONTENTS", "DRIVER"])
    if not all(r["nvcc"] for r in result["releases"]):
        render.message("note: NVIDIA's 12.x wheels are %s; `cudaswitch install 12.4` (NVIDIA's redist archives, "
                       "the default for 12.x) makes a complete one" % installer.RUNTIME_ONLY)
    if result["hidden_pre_releases"]:
        render.message("note: pre-releases not shown: %s (--pre lists them)" % ", ".join(result["hidden_pre_releases"]))


def uninstall(request: str, force: bool = False) -> int:
    from cudaswitch.install import installer

    paths, reg = load_registry()
    result = installer.uninstall(paths, os.environ, reg, request, force)
    render.message("removed CUDA %s from %s" % (result["name"], result["root"]))
    if result["was_active"]:
        from cudaswitch.switch.shells import hints

        render.message(hints.after_removing_active(os.environ, envstate.read_state(os.environ), os.getcwd()))
    return 0


def facts(as_json: bool = False) -> int:
    from cudaswitch.install import knownfacts

    return _show_facts(knownfacts.view(Paths()), as_json)


def facts_refresh(mirror: "str | None" = None, as_json: bool = False) -> int:
    from cudaswitch.install import knownfacts, redist
    from cudaswitch.install.redist_install import configured_base

    paths = Paths()
    base = configured_base(paths, mirror) or redist.NVIDIA_CUDA
    found, problem = knownfacts.refresh(paths, base)
    if problem:
        render.message("cudaswitch: %s; showing the facts cudaswitch already has" % problem)
    return _show_facts(found, as_json)


def _show_facts(found: dict, as_json: bool) -> int:
    from cudaswitch.install import knownfacts

    if as_json:
        render.emit_json(found)
    else:
        render.emit_lines(knownfacts.lines(found))
    return 0
