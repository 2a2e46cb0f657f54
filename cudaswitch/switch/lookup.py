"""The registry as one command sees it from one environment: active, default, what a request
resolves to, current, answered the same way for every command; and the registry commands'
operations (list, which, global), which return data for cudaswitch/commands/ to render."""

import os

from cudaswitch.errors import CudaSwitchError, UsageError
from cudaswitch.registry.resolve import resolve
from cudaswitch.toolkit import Toolkit

TYPE_CHECKING = False
if TYPE_CHECKING:
    from cudaswitch.paths import Paths
    from cudaswitch.toolkit import AnyRecord, Env


class Lookup:
    """Answers about the records of `data` for the shell whose environment is `env` (plain dicts: most
    callers annotate a record as `dict`, which a TypedDict cannot pass for)."""

    __slots__ = ("data", "env", "_active", "_known")

    def __init__(self, data: dict, env: "Env") -> None:
        self.data, self.env = data, env
        self._active: "dict | None" = None
        self._known = False  # whether _active has been computed (None is an answer too)

    @property
    def records(self) -> "list[dict]":
        return self.data["records"]

    def active(self) -> "dict | None":
        """The toolkit this shell really uses (switch/active.active_record), or None."""
        if not self._known:
            from cudaswitch.switch.active import active_record  # `which 12.4` and `global` never ask

            self._active, self._known = active_record(self.data, self.env), True
        return self._active

    def is_active(self, record: "AnyRecord") -> bool:
        active = self.active()
        return active is not None and active["real"] == record["real"]

    def default(self) -> "dict | None":
        """The global default (config `default`, else the system default), or None."""
        return next((r for r in self.records if self.is_default(r)), None)

    def is_default(self, record: "AnyRecord") -> bool:
        default = self.data.get("default_real")
        return default is not None and record.get("real") == default

    def resolve(self, request: str) -> dict:
        """The record a request selects; ToolkitNotFound naming every source searched."""
        return resolve(self.data, request)

    def current(self, request: "str | None" = None) -> dict:
        """The toolkit `request` selects; without one (or `current`), the active one, else the default."""
        if request not in (None, "current"):
            return self.resolve(request)
        found = self.active() or self.default()
        if found:
            return found
        raise CudaSwitchError("no toolkit is active and there is no default",
                              "give a request, or set one with `cudaswitch global VERSION`")

    def public(self, record: "AnyRecord") -> dict:
        """The record's `list --json` object, marked as this registry marks it."""
        return Toolkit(record).public(default=self.is_default(record), active=self.is_active(record))


def current_or_none(registry: dict, env: "Env") -> "dict | None":
    """The active (else default) toolkit's record, or None: no error for doctor or torch (an everyday command)."""
    try:
        return Lookup(registry, env).current()
    except CudaSwitchError:
        return None


def list_items(registry: Lookup, runs: "dict | None" = None, picks: "dict | None" = None) -> "list[dict]":
    """`list`'s objects; `runs`: {root: verify/runs_here verdict}; `picks`: {root: partial requests}."""
    items = [registry.public(r) for r in registry.records]
    for item in items:
        if runs:
            verdict = runs.get(item["root"])
            item["runs_here"] = {"runs": verdict["runs"], "why": verdict["why"]} if verdict else None
        if picks is not None:
            item["picked_by"] = picks.get(item["root"], [])
    return items


def list_json_text(registry: Lookup, runs: "dict | None" = None, picks: "dict | None" = None) -> str:
    """`list --json` as one line: list_items' objects, from the fragments discovery rendered and runs_here
    cached, closed with "default" and "active"."""
    runs, picks = runs or {}, picks or {}
    return "[%s]" % ", ".join('%s, %s"picked_by": [%s], "default": %s, "active": %s}' % (
        text, runs[record["root"]]["json"] + ", " if record["root"] in runs else "",
        ", ".join('"%s"' % p for p in picks.get(record["root"], ())),  # digits or "latest": nothing to escape
        str(registry.is_default(record)).lower(), str(registry.is_active(record)).lower())
        for text, record in zip(registry.data["list_json"], registry.records))


def which(registry: Lookup, request: "str | None" = None, tool: "str | None" = None) -> str:
    """The root of the requested (else the current) toolkit, or the path of `tool` in it."""
    record = registry.current(request)
    if tool is None:
        return record["root"]
    if "/" in tool or tool in (".", ".."):
        raise UsageError("a tool is a plain name such as nvcc or ptxas, not %r" % tool)
    for directory in record["bin_dirs"] + record["lib_dirs"]:
        path = os.path.join(directory, tool)
        if os.path.exists(path):
            return path
    problems = "; ".join(record["problems"])
    raise CudaSwitchError("%s has no %s" % (record["root"], tool),
                          "its status is %s: %s" % (record["status"], problems) if problems else None)


def set_global(paths: "Paths", registry: Lookup, request: "str | None") -> str:
    from cudaswitch import config

    if request is None:
        if not config.unset(paths, "default"):
            return "no default toolkit was set in %s; nothing removed" % paths.config_file
        return "default toolkit removed from %s" % paths.config_file
    if request.strip().startswith(("/", ".", "~")):  # before resolving: a path is refused, found or not
        raise UsageError("the default is a version request, not a path", "register paths under `toolkits`")
    record = registry.resolve(request)
    config.update(paths, default=request)
    return "default toolkit: %s (%s at %s)" % (request, record["version"], record["root"])
