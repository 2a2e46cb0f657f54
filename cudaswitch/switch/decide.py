"""What `use`, `off`, `hook-env` and `current` decide, as data for the switch commands to render.
Import-light: it runs on every `use` and on entering a project."""

from cudaswitch.switch import envdiff
from cudaswitch.registry import discover
from cudaswitch.switch.plan import SwitchPlan, none_foreign, plan
from cudaswitch.switch.toolkitdirs import known_roots
from cudaswitch.errors import CudaSwitchError, inert
from cudaswitch.paths import Paths
from cudaswitch.request import ToolkitRequest, choose
from cudaswitch.toolkit import short_version
from cudaswitch import envstate, render

TYPE_CHECKING = False  # typing's own costs an import on every `use`; mypy reads this name the same
if TYPE_CHECKING:
    from typing import Callable, Optional, Tuple

    DriverRuns = Optional[Callable[[dict], Tuple[bool, str]]]


def load(paths: "Paths", env: dict) -> dict:
    return discover.load(paths, env)


def find_record(reg: dict, request: ToolkitRequest, driver_runs: "DriverRuns" = None, say: bool = True) -> dict:
    """The record a switch goes to; each newer match passed over (it cannot compile, or
    `driver_runs(record)` -> (runs, why) says this driver does not run it) is named on stderr."""
    runs = (lambda r: driver_runs(r)[0]) if driver_runs else None
    found, passed_over = choose(request, reg["records"], reg["source_order"], reg["system_real"], runs)
    if found is None:
        from cudaswitch.registry.resolve import not_found

        raise not_found(reg, request)
    for record in passed_over if say else ():  # inert: versions and roots are read from the host's files
        render.message(inert("cudaswitch: %s is newer but %s; chose %s (`use %s` selects it anyway)"
                              % (record["version"], _why_passed_over(record, driver_runs), found["version"],
                                 record["root"])))
    return found


def _why_passed_over(record: dict, driver_runs: "DriverRuns") -> str:
    """Why a newer match was passed over: it cannot compile, or this host's driver does not run it."""
    if record["status"] != "ok" or driver_runs is None:
        return "; ".join(record.get("problems") or ()) or "it is %s" % record["status"]
    return "this driver does not run it (%s)" % driver_runs(record)[1]


def use(reg: dict, env: dict, request_text: str, origin: str = "shell", source_file: "str | None" = None,
        driver_runs: "DriverRuns" = None) -> SwitchPlan:
    """The switch of `env` to the toolkit the request selects."""
    request = ToolkitRequest.parse(request_text, allow_path=(origin == "shell"))
    record = find_record(reg, request, driver_runs)
    return switch_plan(reg, env, record, origin, source_file, module_to_load(record, request, origin))


def module_to_load(record: dict, request: ToolkitRequest, origin: str) -> "str | None":
    """The module `use module:X` typed by the user loads; a project file's only selects the toolkit."""
    if request.source == "module" and origin == "shell":
        return (record.get("origins") or {}).get("module")
    return None


def switch_plan(reg: dict, env: dict, record: dict, origin: str, source_file: "str | None" = None,
                load_module: "str | None" = None, paths: "Paths | None" = None) -> SwitchPlan:
    """The switch plan of `env` to `record`, with every root the registry knows."""
    return plan(env, record, origin, known_roots(reg), source_file, paths, load_module)


def notes(switch: SwitchPlan) -> "list[str]":
    """A line for each thing a switch did beyond PATH-like entries: stand-ins, modules swapped out,
    toolkit flags taken out of a conda env's (or a guide's) flag variables."""
    state = switch.state
    out = []
    if switch.stand_ins:
        version, short = switch.record["version"], short_version(switch.record["version"]) or "?"
        out.append("CUDA %s has no %s: another toolkit's copies on PATH stay unused (a stand-in says so); a "
                   "complete %s: `cudaswitch install %s`" % (version, ", ".join(switch.stand_ins), short, short))
    if state.get("modules"):
        from cudaswitch.switch import modswitch

        out.append(modswitch.swap_note(state["modules"]))
    # the flag variables the switch took words out of (not only put a -ccbin word in front of)
    flags = [n for n, (before, value) in state["scalars"].items() if n in envstate.FLAG_VARS
             and (envstate.without_added_ccbin(before, value, value) or "") != (before or "")]
    if flags:
        out.append("took other toolkits' -I/-L dirs out of %s (`off` puts them back)" % ", ".join(flags))
    return out


def off_notes(env: dict) -> "list[str]":
    """What `off` does with the modules `use` swapped out."""
    modules = (envstate.read_state(env) or {}).get("modules")
    if not modules:
        return []
    from cudaswitch.switch import modswitch

    return [modswitch.off_note(modules, env)]


class Restore:
    """What `off` (or leaving a project) gives: `env` from before cudaswitch, and its `diff`."""

    __slots__ = ("env", "diff")

    def __init__(self, start: dict, env: dict) -> None:
        self.env, self.diff = env, envdiff.diff(start, env)


def off(env: dict) -> "Restore | None":
    """The way back to the environment from before cudaswitch (None when nothing is active), the
    modules it swapped out loaded again unless the user unloaded, purged or replaced them meanwhile."""
    state = envstate.read_state(env)
    if state is None:
        return None
    base = envstate.pristine(env, state)
    if state.get("modules"):
        from cudaswitch.switch import modswitch

        base = modswitch.back(base, state["modules"])
    return Restore(env, none_foreign(env, base, state, lambda: known_roots(load(Paths(env), env))))


def hook_env(reg_loader: "Callable[[], dict]", env: dict, cwd: str,
             driver_runs: "DriverRuns" = None) -> "tuple[dict | None, SwitchPlan | Restore | None]":
    """What the hook applies: (record or None, the change or None). An explicit `use` wins until `off`;
    else the nearest project file, else the global default, else nothing (leaving a project restores)."""
    from cudaswitch.switch import projectfile

    state = envstate.read_state(env)
    if state and state["origin"] == "shell":
        return None, None
    found = projectfile.find(cwd)
    if found:
        path, text = found
        request = projectfile.parse_request(path, text)
        reg = reg_loader()
        try:
            record = find_record(reg, request, driver_runs)
        except CudaSwitchError as exc:  # the hook prints it on `cd`: say which file asked
            exc.message = "%s: %s" % (path, exc.message)
            raise
        if state and state["root"] == record["root"] and state.get("file") == path:
            return record, None
        return record, switch_plan(reg, env, record, "project", path)
    reg = reg_loader()
    if reg.get("default_request"):
        default = next((r for r in reg["records"] if r["real"] == reg["default_real"]), None)
        if default:
            same = state and state["origin"] == "global" and state["root"] == default["root"]
            return default, None if same else switch_plan(reg, env, default, "global")
    return None, off(env)


def current(reg_loader: "Callable[[], dict]", env: dict, cwd: str) -> dict:
    """What this shell really uses and why, plus the pins that would apply but are not applied here."""
    from cudaswitch.switch import active

    reg = reg_loader()
    info = active.describe(reg, env)
    state = envstate.read_state(env)
    # An explicit `use` wins over project files and the default until `off`: nothing is pending.
    pin = None if state and state["origin"] == "shell" else _pin(reg, cwd)
    applied = pin and state and state["origin"] == pin["kind"] and state.get("file") == pin["file"]
    info["pending"] = [pin] if pin and not applied else []
    return info


def _pin(reg: dict, cwd: str) -> "dict | None":
    """The nearest project file's request, else the global default, resolved; None without either."""
    from cudaswitch.switch import projectfile

    found = projectfile.find(cwd)
    if found:
        request = projectfile.parse_request(*found)
        pin: dict = {"kind": "project", "file": found[0], "request": request.text}
    elif reg.get("default_request"):
        request = ToolkitRequest.parse(reg["default_request"])
        pin = {"kind": "global", "file": None, "request": request.text}
    else:
        return None
    try:
        record = find_record(reg, request, say=False)
        pin.update(version=record["version"], root=record["root"], error=None)
    except CudaSwitchError as exc:
        pin.update(version=None, root=None, error=exc.message)
    return pin
